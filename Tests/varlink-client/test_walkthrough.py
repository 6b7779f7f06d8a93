"""The walk-throughs of docs/varlink.md, run as a reader would: the Python program with the varlink package, and the
varlinkctl commands where this machine's systemd has varlinkctl."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from conftest import HANG_GUARD, REPOSITORY, address

EXAMPLE = REPOSITORY / "varlink" / "examples" / "walkthrough.py"


def run_example(daemon: Any) -> str:
    # As a reader runs it: USHER_SOCKET names the daemon's main socket (as make run prints it), and the example finds
    # the Varlink socket next to it.
    environment = dict(os.environ, USHER_SOCKET=daemon.socket)
    result = subprocess.run(
        [sys.executable, str(EXAMPLE)], capture_output=True, text=True, env=environment, timeout=HANG_GUARD
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_the_python_walk_through_without_a_daemon_says_so_in_one_line(tmp_path: Path) -> None:
    socket_path = tmp_path / "usher.sock"
    environment = dict(os.environ, USHER_SOCKET=str(socket_path))
    result = subprocess.run(
        [sys.executable, str(EXAMPLE)], capture_output=True, text=True, env=environment, timeout=HANG_GUARD
    )
    assert result.returncode == 1 and result.stdout == ""
    assert "Traceback" not in result.stderr
    assert result.stderr.count("\n") == 1, result.stderr
    assert f"unix:{tmp_path}/io.usher.Session" in result.stderr and "No such file or directory" in result.stderr


def test_the_python_walk_through(daemon: Any) -> None:
    out = run_example(daemon)
    match = re.search(r"^logged in: (u_\S+) \(anonymous\) and (u_\S+) \(ann@example.com\)$", out, re.M)
    assert match, out
    guest, ann = match.groups()
    assert f"* {ann} ann@example.com logged_in" in out
    assert f"  {guest} anonymous logged_in" in out
    assert f"event active_user_changed: {ann} -> {guest}" in out
    assert re.search(rf"^token for {guest}: Bearer, valid for \d+ s$", out, re.M)
    assert re.search(r"^lease l_\S+ holds seat seat0$", out, re.M)
    assert "switch refused while the lease is held: io.usher.Session.Inhibited" in out
    assert out.rstrip().endswith("after the lease: ann@example.com is active")
    # Again on the same daemon: the account is reused, and the users are those of the first run.
    again = run_example(daemon)
    assert f"logged in: {guest} (anonymous) and {ann} (ann@example.com)" in again


def varlinkctl_block() -> str:
    page = (REPOSITORY / "docs" / "varlink.md").read_text()
    section = page.split("## The walk-through with varlinkctl", 1)[1]
    return section.split("```text\n", 1)[1].split("```", 1)[0]


def test_the_varlinkctl_walk_through(daemon: Any) -> None:
    block = varlinkctl_block()
    assert "varlinkctl call $S io.usher.Session.Login" in block
    varlinkctl = shutil.which("varlinkctl")
    if varlinkctl is None:
        pytest.skip("varlinkctl is not installed (systemd 255 and later have it; Debian 12's systemd 252 does not)")
    script = block.replace("S=unix:/run/usher/io.usher.Session", f"S={address(daemon)}", 1)
    result = subprocess.run(["/bin/sh", "-e", "-c", script], capture_output=True, text=True, timeout=HANG_GUARD)
    assert result.returncode == 0, result.stderr
    assert "io.usher.Session" in result.stdout and '"access_token"' in result.stdout, result.stdout
