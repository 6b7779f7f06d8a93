#!/usr/bin/env python3
"""Writes usherd's link order (packaging/usherd.order): the code sections a running daemon executes, in two groups.

Why: the kernel maps a program's pages in blocks of 64 KB around each page it faults in (`fault_around_bytes`).
Scattered over usherd's 19 MB of code, the 2 MB an idle daemon has run kept 11 MB of the binary resident. The
release build gives every function a section of its own (-function-sections), and gold places the sections this
file names first, in its order (--section-ordering-file), so that the code a daemon runs fills the pages it maps
(docs/performance.md, "Footprint").

How: a release usherd (stripped: valgrind cannot read its debug information), linked with a map (-Map), runs twice
under callgrind with 10 users in its database. The first run starts, answers every read (and a Varlink call) and
stops; the second also registers and logs users in, switches and logs out. Every instruction executed is looked up
in the map: the sections of the first run come first (the code every daemon runs), those only the second ran follow
(the code of changes, mapped when a device makes one), each group by the instructions executed in it.

What cannot be placed: the plain .text of objects built without -function-sections (the Swift runtime's, Foundation's,
libdispatch's, assembly), one section for all of an object's functions; the script says how many 64 KB blocks their
executed code touched. A section that no longer exists (its function was renamed or changed) is placed as if
unlisted: the order goes stale gradually, never wrong. `make order-file` writes it again.

Run by `make order-file` with the test environment's Python (bench.py needs `cryptography`).
"""

import argparse
import bisect
import collections
import json
import os
import signal
import subprocess
import sys
import types

from bench import Bench


def varlink_call(path, method, parameters=None):
    """One Varlink call (UAPI.20: a JSON object ended by a NUL byte); returns its reply's parameters."""
    call = json.dumps({"method": method, "parameters": parameters or {}}).encode() + b"\0"
    reply = json.loads(Bench.exchange(path, call, b"\0"))
    if "error" in reply:
        raise SystemExit(f"{method} failed: {reply['error']}")
    return reply.get("parameters", {})


def reads(bench, sock):
    """What every daemon answers: every read, and one on the Varlink socket."""
    for method in ("hello", "status", "current_user", "access_token", "list_users", "list_seats"):
        bench.call(sock, {"method": method})
    bench.call(sock, {"method": "list_users", "params": {"limit": 5}})
    varlink_call(os.path.join(os.path.dirname(sock), "io.usher.Session"), "io.usher.Session.CurrentUser")


def changes(bench, sock):
    """What a device changes: registrations and logins, a switch, a logout."""
    first, second = bench.register_users(sock, 2)
    bench.call(sock, {"method": "switch_user", "params": {"user_id": first}})
    bench.call(sock, {"method": "access_token"})
    bench.call(sock, {"method": "logout", "params": {"user_id": second}})
    bench.call(sock, {"method": "current_user"})


def executed_instructions(profile, binary):
    """Instructions executed per instruction address of `binary` in a callgrind profile (--dump-instr=yes,
    --compress-pos=no, --compress-strings=no).

    Per instruction, not per function: valgrind knows no function boundaries in a stripped binary, and code reached
    by a tail call (a jump, as Swift's thunks and forwarders reach their targets) counts as its caller's there."""
    costs = collections.Counter()
    in_binary = False
    call_cost_next = False
    with open(profile) as file:
        for line in file:
            if line.startswith("ob="):
                in_binary = line[3:].strip() == binary
            elif line.startswith("calls="):
                # The line after `calls=` is the call's inclusive cost, at the calling instruction.
                call_cost_next = True
            elif line.startswith("0x"):
                if call_cost_next:
                    call_cost_next = False
                elif in_binary:
                    fields = line.split()
                    costs[int(fields[0], 16)] += int(fields[-1])
    return costs


def input_sections(link_map):
    """The input sections of .text in a gold link map, as (address, size, section name), by address. A section's
    name and its addresses are on one line, or on two when the name is long."""
    sections = []
    with open(link_map) as file:
        lines = file.read().split("\n")
    for index, line in enumerate(lines):
        if not line.startswith(" .text"):
            continue
        fields = line.split()
        rest = fields[1:] if len(fields) > 1 else (lines[index + 1].split() if index + 1 < len(lines) else [])
        if len(rest) >= 3 and rest[0].startswith("0x") and int(rest[1], 16) > 0:
            sections.append((int(rest[0], 16), int(rest[1], 16), fields[0]))
    return sorted(sections)


class Profiler:
    def __init__(self, bench, stripped, sections):
        self.bench = bench
        self.stripped = stripped
        self.sections = sections
        self.starts = [start for start, _, _ in sections]
        self.unplaced = set()

    def run(self, name, *workloads):
        """Runs the daemon under callgrind through `workloads`; returns the instructions executed per section name."""
        self.bench.seed(name, 10)
        state = os.path.join(self.bench.directory, name)
        sock = os.path.join(state, "usher.sock")
        profile = os.path.join(self.bench.directory, f"{name}.callgrind")
        daemon = self.bench.spawn([
            "valgrind", "--tool=callgrind", f"--callgrind-out-file={profile}", "--dump-instr=yes",
            "--compress-strings=no", "--compress-pos=no", self.stripped, "--config", os.path.join(state, "usherd.toml"),
            "--socket", sock, "--state-directory", os.path.join(state, "state"), "--log-level", "warning"])
        self.bench.wait_for_socket(sock, daemon, timeout=600)
        for workload in workloads:
            workload(self.bench, sock)
        daemon.send_signal(signal.SIGTERM)
        if daemon.wait(timeout=600) != 0:
            raise SystemExit(f"usherd under callgrind exited with {daemon.returncode}")
        self.bench.processes.remove(daemon)
        by_section = collections.Counter()
        for address, cost in executed_instructions(profile, self.stripped).items():
            index = bisect.bisect_right(self.starts, address) - 1
            if index < 0 or address >= self.sections[index][0] + self.sections[index][1]:
                continue
            section = self.sections[index][2]
            if section == ".text":
                self.unplaced.add(address >> 16)
            else:
                by_section[section] += cost
        return by_section


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--usherd", required=True, help="a release usherd, unstripped")
    parser.add_argument("--map", required=True, help="the map gold wrote when it linked that usherd (-Map)")
    parser.add_argument("--output", required=True)
    args = parser.parse_args()
    bench = Bench(types.SimpleNamespace(usherd=None, usher=None, rtload=None, lineecho=None))
    try:
        stripped = os.path.join(bench.directory, "usherd")
        subprocess.run(["strip", "-o", stripped, args.usherd], check=True)
        bench.args.usherd = stripped
        sections = input_sections(args.map)
        profiler = Profiler(bench, stripped, sections)
        every_daemon = profiler.run("reads", reads)
        with_changes = profiler.run("changes", reads, changes)
        groups = [every_daemon, {name: cost for name, cost in with_changes.items() if name not in every_daemon}]
        ordered = [name for group in groups for name, _ in sorted(group.items(), key=lambda item: (-item[1], item[0]))]
        with open(args.output, "w") as file:
            file.writelines(f"{name}\n" for name in ordered)
        sizes = [sum(size for _, size, name in sections if name in group) for group in groups]
        print(f"{args.output}: {len(groups[0])} sections ({sizes[0] / 1e6:.2f} MB) every daemon runs, then "
              f"{len(groups[1])} ({sizes[1] / 1e6:.2f} MB) of changes; the code no order can place (the plain .text "
              f"of objects without -function-sections) ran in {len(profiler.unplaced)} blocks of 64 KB")
    finally:
        bench.close()


if __name__ == "__main__":
    sys.exit(main())
