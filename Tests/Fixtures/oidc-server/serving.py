"""The test server run for a pytest fixture: set up in a state directory, serving on a free loopback port until the
fixture ends. Shared by the Python client's tests (clients/python/tests) and pam_usher's (clients/pam/tests)."""

from __future__ import annotations

import select
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

SERVER = Path(__file__).resolve().parent / "server.py"


@contextmanager
def running_issuer(state: Path, hang_guard: float) -> Iterator[str]:
    """Sets the server up in `state`, starts it, and gives its issuer URL; stops it on leaving. `hang_guard` bounds
    each wait (seconds): a guard against a server that never starts, not a measure of speed."""
    subprocess.run(
        [sys.executable, str(SERVER), "setup", str(state)], check=True, capture_output=True, timeout=hang_guard * 2
    )
    server = subprocess.Popen(
        [sys.executable, str(SERVER), "serve", str(state), "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        stdin=subprocess.DEVNULL,
    )
    try:
        assert server.stdout is not None
        ready, _, _ = select.select([server.stdout], [], [], hang_guard)
        line = server.stdout.readline().decode() if ready else ""
        assert line.startswith("listening on http://127.0.0.1:"), f"the test server did not start: {line!r}"
        yield line.split("listening on ", 1)[1].strip() + "/o"
    finally:
        server.terminate()
        server.wait(hang_guard)
