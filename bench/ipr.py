#!/usr/bin/env python3
"""User-space instructions per request of each workload, for one or more usherd binaries side by side.

A request rate on a shared or virtual machine says more about the neighbours than about the code, and this machine's
`perf stat` has no hardware counters. What this prints does not depend on either: each daemon runs under valgrind's
callgrind, its counters are zeroed (`callgrind_control -z`) before a few seconds of `rtload` and dumped
(`callgrind_control -d`) after, and the dump's instruction count (`Ir`) is divided by the number of requests answered.
Kernel time is not in the figure.

Each daemon is set up as `bench/compare.py` sets up its two: five registered, logged-in users and the jwt credential;
`switch_user` switches among the five, `login` logs a new user in with a JWT each. valgrind 3.19 cannot read DWARF 5,
so each binary is run as a copy stripped with `strip --strip-debug`, still named `usherd` (the daemon runs the CLI
under any other name), in a directory of its own named after it.

Run it from the repository (after `make programs`, and for another commit `make before-usherd BEFORE=COMMIT`):

    cc -O2 -o /tmp/rtload bench/rtload.c -lpthread
    .build/test-venv/bin/python bench/ipr.py --rtload /tmp/rtload \\
        before=.build/before/c219a4a/.build/release/usherd after=.build/programs/usherd

Output, one line a workload and binary: `hello@1  before  n=  4210  Ir/req   106000`. The callgrind dumps are kept
in `--out` (`NAME-WORKLOAD.out`) for `callgrind_annotate --inclusive=yes` and for comparing functions between two
binaries.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench import Bench  # noqa: E402
from compare import Comparison  # noqa: E402

READS = {
    "hello": '{"id":1,"method":"hello"}',
    "current_user": '{"id":1,"method":"current_user"}',
    "access_token": '{"id":1,"method":"access_token"}',
    "list_users/5": '{"id":1,"method":"list_users","params":{"limit":5}}',
}


def parse_arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rtload", required=True, help="bench/rtload.c, compiled")
    parser.add_argument("--seconds", type=float, default=2, help="of load per workload and binary (default 2)")
    parser.add_argument("--only", default="", help="comma-separated workloads, e.g. hello@1,login@16 (default all)")
    parser.add_argument("--logins", type=int, default=3000, help="JWTs made for each binary's login workload")
    parser.add_argument("--out", default="", help="where the callgrind dumps are kept (default: a new directory)")
    parser.add_argument("binaries", nargs="+", metavar="NAME=PATH", help="usherd binaries, each under a name")
    return parser.parse_args()


def stripped_copy(directory: str, name: str, path: str) -> str:
    """`path` stripped of its debug information (valgrind 3.19 cannot read DWARF 5), at DIRECTORY/NAME/usherd."""
    copy_directory = os.path.join(directory, name)
    os.makedirs(copy_directory, exist_ok=True)
    copy = os.path.join(copy_directory, "usherd")
    subprocess.run(["strip", "--strip-debug", "-o", copy, path], check=True)
    return copy


def instructions(dumps: list[str]) -> int:
    """The total `Ir` of callgrind dumps (`summary:` or `totals:` line)."""
    total = 0
    for dump in dumps:
        with open(dump) as file:
            for row in file:
                if row.startswith(("summary:", "totals:")):
                    total += int(row.split()[1])
                    break
    return total


def main() -> None:
    args = parse_arguments()
    only = set(args.only.split(",")) if args.only else None
    out = args.out or tempfile.mkdtemp(prefix="usher-ipr-", dir="/tmp")
    os.makedirs(out, exist_ok=True)
    bench = Bench(argparse.Namespace(usherd=None, rtload=args.rtload, seconds=args.seconds))
    dump_directory = os.path.join(bench.directory, "callgrind")
    os.makedirs(dump_directory)
    original_spawn = bench.spawn

    def spawn(argv: list[str], **kwargs: object) -> subprocess.Popen[bytes]:
        if os.path.basename(argv[0]) == "usherd":
            name = os.path.basename(os.path.dirname(argv[0]))
            argv = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={dump_directory}/{name}.%p",
                    "--dump-instr=no", *argv]
        return original_spawn(argv, **kwargs)

    bench.spawn = spawn  # type: ignore[method-assign]
    try:
        requests, jwt_config = bench.jwt_logins(args.logins * len(args.binaries))
        with open(requests) as file:
            logins = file.read().splitlines()
        daemons = []
        for index, spec in enumerate(args.binaries):
            name, path = spec.split("=", 1)
            comparison = Comparison(bench, path)
            sock, users = comparison.daemon(name, stripped_copy(bench.directory, name, path), jwt_config)
            switch = comparison.requests_file(f"switch-{name}", (
                json.dumps({"id": 1, "method": "switch_user", "params": {"user_id": users[i % 5]}})
                for i in range(1000)))
            login = comparison.requests_file(f"login-{name}", logins[index * args.logins:(index + 1) * args.logins])
            daemons.append((name, bench.processes[-1].pid, sock, {"switch_user": switch, "login": login}))
        work = [(f"{method}@{conns}", conns, "line", line) for method, line in READS.items() for conns in (1, 16)]
        work += [("switch_user@1", 1, "lines", "switch_user"), ("switch_user@16", 16, "lines", "switch_user"),
                 ("login@16", 16, "lines", "login")]
        for label, conns, mode, argument in work:
            if only and label not in only:
                continue
            for name, pid, sock, files in daemons:
                seconds = min(args.seconds, 1.5) if label.startswith("login") else args.seconds
                payload = files[argument] if mode == "lines" else argument
                subprocess.run(["callgrind_control", "-z", str(pid)], check=True, capture_output=True)
                load = subprocess.run([args.rtload, "-t", sock, str(conns), str(seconds), mode, payload],
                                      check=True, capture_output=True, text=True).stdout.split()
                known = set(os.listdir(dump_directory))
                subprocess.run(["callgrind_control", "-d", label, str(pid)], check=True, capture_output=True)
                dumps = [os.path.join(dump_directory, dump) for dump in sorted(set(os.listdir(dump_directory)) - known)]
                count = int(dict(zip(load[0::2], load[1::2]))["requests"])
                print(f"{label:<16} {name:<8} n={count:>6} Ir/req {instructions(dumps) / max(count, 1):>9.0f}",
                      flush=True)
                for dump in dumps:
                    shutil.move(dump, os.path.join(out, f"{name}-{label.replace('/', '_')}.out"))
    finally:
        bench.close()
    print(f"callgrind dumps: {out}")


if __name__ == "__main__":
    main()
