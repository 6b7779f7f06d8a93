"""The real usherd for the tests: started on a short temporary socket with its own state, stopped afterwards.

The daemon binary is found through ``USHER_BIN`` (a directory holding ``usherd``): the Makefile passes the
repository's own build (``.build/debug``), and a developer may point it at other binaries. A test waits for what it
expects (the daemon's READY=1 notification, an answer, an event); times given here are hang guards only.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Iterator, Optional

import pytest

import usher

REPOSITORY = Path(__file__).resolve().parents[3]
#: The configuration of most tests: one local provider (anonymous users and registration allowed by default).
LOCAL_PROVIDER = '[providers.local]\ntype = "local"\n'
#: How long anything may take before a test counts as hung: generous, for a 2-core machine that is also building.
HANG_GUARD = 60.0


def usher_bin() -> Path:
    """The directory with the ``usherd`` and ``usher`` binaries under test."""
    return Path(os.environ.get("USHER_BIN") or REPOSITORY / ".build" / "debug")


class Daemon:
    """One usherd process: its socket, state directory and configuration in a temporary directory."""

    def __init__(self, config: str = "") -> None:
        # A short path: sun_path holds about 108 bytes.
        self.directory = Path(tempfile.mkdtemp(prefix="usher-py-", dir="/tmp"))
        self.socket = str(self.directory / "usher.sock")
        self.state = self.directory / "state"
        self.config_path = self.directory / "usherd.toml"
        self.log_path = self.directory / "usherd.log"
        # Cheap password hashes (scrypt N = 2^10): the real cost is for devices, not for tests.
        if "password_hash_cost" not in config:
            if "[daemon]" in config:
                config = config.replace("[daemon]\n", "[daemon]\npassword_hash_cost = 10\n", 1)
            else:
                config = "[daemon]\npassword_hash_cost = 10\n" + config
        self.config_path.write_text(config)
        self.process: Optional[subprocess.Popen[bytes]] = None

    @property
    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def start(self) -> None:
        """Starts usherd and returns once it notified READY=1 (it listens by then) and answers ``hello``."""
        usherd = usher_bin() / "usherd"
        if not usherd.exists():
            raise RuntimeError(f"no usherd at {usherd}: build it (swift build) or set USHER_BIN")
        notify_path = str(self.directory / "notify")
        if os.path.exists(notify_path):
            os.unlink(notify_path)
        notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        notify.bind(notify_path)
        try:
            environment = dict(os.environ, NOTIFY_SOCKET=notify_path)
            environment.pop("USHER_SOCKET", None)
            with open(self.log_path, "ab") as log:
                self.process = subprocess.Popen(
                    [
                        str(usherd),
                        "--config",
                        str(self.config_path),
                        "--socket",
                        self.socket,
                        "--state-directory",
                        str(self.state),
                        "--log-level",
                        "debug",
                    ],
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=log,
                    env=environment,
                )
            deadline = time.monotonic() + HANG_GUARD
            while True:
                # Wakes at once for the notification; the timeout only lets a daemon that exited be noticed.
                notify.settimeout(0.5)
                try:
                    if b"READY=1" in notify.recv(4096).split(b"\n"):
                        break
                except socket.timeout:
                    pass
                if self.process.poll() is not None:
                    raise RuntimeError(f"usherd exited with {self.process.returncode} at start:\n{self.log}")
                if time.monotonic() > deadline:
                    raise RuntimeError(f"usherd did not notify READY=1 within {HANG_GUARD} s:\n{self.log}")
        finally:
            notify.close()
        with usher.Client(self.socket, timeout=HANG_GUARD) as client:
            client.hello()

    def stop(self) -> None:
        """SIGTERM, and waits for the process to exit (SIGKILL past the hang guard)."""
        process, self.process = self.process, None
        if process is None:
            return
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(HANG_GUARD)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
                raise RuntimeError(f"usherd did not stop within {HANG_GUARD} s after SIGTERM")

    def restart(self) -> None:
        self.stop()
        self.start()

    def client(self) -> usher.Client:
        return usher.Client(self.socket, timeout=HANG_GUARD)

    def remove(self) -> None:
        self.stop()
        shutil.rmtree(self.directory, ignore_errors=True)


def start_daemon(config: str = "") -> Daemon:
    daemon = Daemon(config)
    try:
        daemon.start()
    except BaseException:
        daemon.remove()
        raise
    return daemon


@pytest.fixture
def daemon(request: pytest.FixtureRequest) -> Iterator[Daemon]:
    """A daemon with the default configuration (a local provider with anonymous users and registration), or with the
    TOML of ``@pytest.mark.usherd_config("...")``."""
    marker = request.node.get_closest_marker("usherd_config")
    started = start_daemon(marker.args[0] if marker else LOCAL_PROVIDER)
    try:
        yield started
    finally:
        log = started.log
        started.remove()
        if getattr(request.node, "rep_call_failed", False):
            print(f"usherd's log:\n{log}")


@pytest.fixture
def client(daemon: Daemon) -> Iterator[usher.Client]:
    with daemon.client() as connected:
        yield connected


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    report = yield
    if report.when == "call" and report.failed:
        item.rep_call_failed = True  # type: ignore[attr-defined]
    return report


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "usherd_config(toml): the daemon's configuration for this test")
