#!/usr/bin/env python3
"""Runs the Swift test command with a deadline, and names the tests still running if it passes.

A test that hangs without a hang guard of its own holds `swift test` until CI's own time limit, which then kills the
run without saying which test it was (it happened once: a pipe whose write end another program held). This runs the
command in a session of its own, passes its output through, and counts which tests started (`◇ Test X started.`) and
which ended (`✔`/`✘ Test X ... passed/failed`). Past the deadline (USHER_TEST_DEADLINE seconds, 1800 by default: the
suite takes a few minutes even on a busy 2-core machine) it prints the tests that started and did not end, kills the
whole session (the tests' daemons and servers with it) and exits with 124, as timeout(1) does.

Usage: tools/test-deadline.py COMMAND [ARGUMENT...]
"""

import collections
import os
import re
import signal
import subprocess
import sys
import threading

STARTED = re.compile(r"^◇ Test (.+) started\.$")
ENDED = re.compile(r"^[✔✘] Test (.+?) (?:with \d+ test cases? )?(?:passed|failed)")


def main() -> int:
    deadline = float(os.environ.get("USHER_TEST_DEADLINE", "1800"))
    process = subprocess.Popen(sys.argv[1:], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    running = collections.Counter()
    lock = threading.Lock()
    fired = threading.Event()

    def expire() -> None:
        fired.set()
        with lock:
            names = sorted(name for name, count in running.items() if count > 0)
        print(f"\ntest-deadline: the tests did not finish within {deadline:g} s; still running:", flush=True)
        for name in names:
            print(f"  {name}", flush=True)
        for sig in (signal.SIGTERM, signal.SIGKILL):
            # Everything in the session: swift test, the test binary, and the daemons and servers the tests started
            # (each in a process group of its own).
            subprocess.run(["pkill", f"-{sig.name[3:]}", "-s", str(process.pid)], check=False)
            try:
                process.wait(timeout=10)
                break
            except subprocess.TimeoutExpired:
                continue

    timer = threading.Timer(deadline, expire)
    timer.start()
    assert process.stdout is not None
    for raw in process.stdout:
        line = raw.decode("utf-8", errors="replace")
        sys.stdout.write(line)
        sys.stdout.flush()
        text = line.rstrip("\n")
        with lock:
            if (started := STARTED.match(text)) and started.group(1) != "run":
                running[started.group(1)] += 1
            elif ended := ENDED.match(text):
                running[ended.group(1)] -= 1
    status = process.wait()
    timer.cancel()
    if fired.is_set():
        return 124
    return status if status >= 0 else 128 - status


if __name__ == "__main__":
    sys.exit(main())
