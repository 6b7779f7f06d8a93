"""pam_usher against the real usherd: pamtester is the PAM application, libpam-wrapper gives it a PAM stack of the
test's own (PAM_WRAPPER_SERVICE_DIR) instead of /etc/pam.d.

The module under test is ``--module``; ``--preload`` adds a library to pamtester's LD_PRELOAD (the ASan runtime for
the sanitized module); ``--valgrind`` runs pamtester under valgrind (--leak-check=full), whose own exit code
(VALGRIND_ERROR) tells its findings apart from pamtester's 1 for a refused operation. usherd is the debug build in
USHER_BIN, started as the Python client's tests start it (clients/python/tests/conftest.py). Times are hang guards.
"""

from __future__ import annotations

import ctypes
import importlib.util
import os
import pty
import re
import select
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Optional, Protocol

import pytest

REPOSITORY = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPOSITORY / "clients" / "python" / "src"))
_spec = importlib.util.spec_from_file_location(
    "usher_python_conftest", REPOSITORY / "clients" / "python" / "tests" / "conftest.py"
)
assert _spec and _spec.loader
python_conftest = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(python_conftest)
HANG_GUARD: float = python_conftest.HANG_GUARD


class Daemon(Protocol):
    """What the tests use of the Python client tests' usherd (clients/python/tests/conftest.py, ``Daemon``)."""

    socket: str
    process: Optional[subprocess.Popen[bytes]]

    @property
    def log(self) -> str: ...

    def client(self) -> Any: ...

    def remove(self) -> None: ...


def start_daemon(config: str = "") -> Daemon:
    daemon: Daemon = python_conftest.start_daemon(config)
    return daemon

PAM_WRAPPER = "/usr/lib/x86_64-linux-gnu/libpam_wrapper.so"
PAM_WRAPPER_MODULES = Path("/usr/lib/x86_64-linux-gnu/pam_wrapper")
#: valgrind's exit code when it found an error or a leak (pamtester itself exits 1 for a refused operation).
VALGRIND_ERROR = 99
#: The ASan and UBSan runtimes' exit code (ASAN_OPTIONS exitcode=86 in the Makefile).
SANITIZER_ERROR = 86

_libpam = ctypes.CDLL("libpam.so.0")
_libpam.pam_strerror.restype = ctypes.c_char_p
_libpam.pam_strerror.argtypes = [ctypes.c_void_p, ctypes.c_int]
#: The PAM return codes the tests tell apart, by pamtester's message for each (pam_strerror's text).
CODES = {
    name: _libpam.pam_strerror(None, number).decode()
    for name, number in {
        "PAM_AUTH_ERR": 7,
        "PAM_AUTHINFO_UNAVAIL": 9,
        "PAM_USER_UNKNOWN": 10,
        "PAM_MAXTRIES": 11,
        "PAM_ACCT_EXPIRED": 13,
        "PAM_SESSION_ERR": 14,
        "PAM_AUTHTOK_ERR": 20,
    }.items()
}


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--module", required=True, help="the pam_usher.so under test")
    parser.addoption("--preload", default="", help="a library to preload into pamtester (the ASan runtime)")
    parser.addoption("--valgrind", default="", help="run pamtester under this valgrind")


@dataclass
class Outcome:
    """What one pamtester run did: its exit status, the PAM code it reported, its output, the module's syslog."""

    status: int
    stdout: str
    stderr: str
    seconds: float
    code: str = field(init=False)
    syslog: str = field(init=False)

    def __post_init__(self) -> None:
        # "SYSLOG(<priority>): <message>", one line per pam_syslog call.
        self.syslog = "\n".join(
            match[1] for match in (re.search(r"SYSLOG\(\d\): (.*)", line) for line in self.stderr.splitlines()) if match
        )
        self.code = "PAM_SUCCESS" if self.status == 0 else "?"
        for name, text in CODES.items():
            if f"pamtester: {text}" in self.stderr:
                self.code = name


class Pam:
    """Runs pamtester with a service of the test's own, against the module under test."""

    def __init__(self, config: pytest.Config, directory: Path) -> None:
        self.module = str(Path(config.getoption("--module")).resolve())
        self.preload = config.getoption("--preload")
        self.valgrind = config.getoption("--valgrind")
        self.directory = directory
        self.services = directory / "services"
        self.services.mkdir()

    def service(self, name: str, lines: list[str]) -> str:
        """Writes a service; ``pam_usher`` in a line stands for the module under test, ``wrapper:NAME`` for one of
        libpam-wrapper's test modules."""
        text = "\n".join(
            line.replace("pam_usher", self.module).replace("wrapper:", str(PAM_WRAPPER_MODULES) + "/")
            for line in lines
        )
        (self.services / name).write_text(text + "\n")
        return name

    def command(self, service: str, user: str, operations: list[str]) -> tuple[list[str], dict[str, str]]:
        preload = " ".join(p for p in (self.preload, PAM_WRAPPER) if p)
        environment = dict(
            os.environ,
            LD_PRELOAD=preload,
            PAM_WRAPPER="1",
            PAM_WRAPPER_SERVICE_DIR=str(self.services),
            # libpam-wrapper prints what modules give pam_syslog on stderr ("SYSLOG(3): ..."); at level 3 every
            # priority, LOG_DEBUG included (and its own traces, which are not the module's and are not read).
            PAM_WRAPPER_DEBUGLEVEL="3",
        )
        environment.pop("USHER_SOCKET", None)
        command = ["pamtester", "-v", service, user] + operations
        if self.valgrind:
            command = [
                self.valgrind,
                "-q",
                "--leak-check=full",
                "--errors-for-leak-kinds=definite",
                f"--error-exitcode={VALGRIND_ERROR}",
            ] + command
        return command, environment

    def run(
        self,
        service: str,
        user: str,
        operations: list[str],
        stdin: str = "",
        env: Optional[dict[str, str]] = None,
    ) -> Outcome:
        command, environment = self.command(service, user, operations)
        environment.update(env or {})
        started = time.monotonic()
        run = subprocess.run(
            command, input=stdin, capture_output=True, text=True, env=environment, timeout=HANG_GUARD * 4
        )
        outcome = Outcome(run.returncode, run.stdout, run.stderr, time.monotonic() - started)
        self.check_clean(outcome)
        return outcome

    def check_clean(self, outcome: Outcome) -> None:
        assert outcome.status not in (VALGRIND_ERROR, SANITIZER_ERROR), outcome.stderr
        assert "ERROR: AddressSanitizer" not in outcome.stderr, outcome.stderr
        assert "runtime error:" not in outcome.stderr, outcome.stderr

    def start(self, service: str, user: str, operations: list[str], stdin: str = "") -> "Running":
        """Starts pamtester with its output on a pseudo-terminal (line-buffered: the test reads PAM_TEXT_INFO as it
        comes)."""
        command, environment = self.command(service, user, operations)
        primary, secondary = pty.openpty()
        process = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=secondary, stderr=subprocess.PIPE, env=environment, text=True
        )
        os.close(secondary)
        assert process.stdin is not None
        process.stdin.write(stdin)
        process.stdin.close()
        return Running(self, process, primary)


class Running:
    """A pamtester under way."""

    def __init__(self, pam: Pam, process: subprocess.Popen[str], output: int) -> None:
        self.pam = pam
        self.process = process
        self.output = output
        self.text = ""

    def wait_for_output(self, needle: str) -> str:
        """Reads pamtester's output until it holds ``needle``."""
        deadline = time.monotonic() + HANG_GUARD
        while needle not in self.text:
            remaining = deadline - time.monotonic()
            assert remaining > 0, f"pamtester did not print {needle!r}: {self.text!r}"
            ready, _, _ = select.select([self.output], [], [], remaining)
            if ready:
                try:
                    chunk = os.read(self.output, 4096)
                except OSError:
                    chunk = b""
                assert chunk, f"pamtester ended before printing {needle!r}: {self.text!r}"
                self.text += chunk.decode(errors="replace")
        return self.text

    def finish(self) -> Outcome:
        started = time.monotonic()
        assert self.process.stderr is not None
        stderr = self.process.stderr.read()
        status = self.process.wait(HANG_GUARD * 4)
        while True:
            ready, _, _ = select.select([self.output], [], [], 0)
            if not ready:
                break
            try:
                chunk = os.read(self.output, 4096)
            except OSError:
                break
            if not chunk:
                break
            self.text += chunk.decode(errors="replace")
        os.close(self.output)
        outcome = Outcome(status, self.text, stderr, time.monotonic() - started)
        self.pam.check_clean(outcome)
        return outcome


@pytest.fixture
def pam(request: pytest.FixtureRequest) -> Iterator[Pam]:
    directory = Path(tempfile.mkdtemp(prefix="usher-pam-", dir="/tmp"))
    try:
        yield Pam(request.config, directory)
    finally:
        shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture
def daemon(request: pytest.FixtureRequest) -> Iterator[Daemon]:
    marker = request.node.get_closest_marker("usherd_config")
    config = python_conftest.LOCAL_PROVIDER + (marker.args[0] if marker else "")
    daemon = start_daemon(config)
    try:
        yield daemon
    finally:
        log = daemon.log
        daemon.remove()
        if request.node.rep_call.failed if hasattr(request.node, "rep_call") else False:
            print(f"usherd's log:\n{log}")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()  # type: ignore[attr-defined]
    setattr(item, "rep_" + report.when, report)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "usherd_config(toml): more of the daemon's configuration for this test")
