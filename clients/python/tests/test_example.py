"""The walk-through example, run as a user would: the package installed with pip into a fresh virtual environment
(no network, no setuptools), and the script run with that environment's Python against the real daemon."""

from __future__ import annotations

import os
import re
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

import usher
from conftest import HANG_GUARD, REPOSITORY, Daemon

PACKAGE = Path(__file__).resolve().parents[1]


def read_line(process: "subprocess.Popen[bytes]") -> str:
    """The next line the process prints, waiting at most the hang guard."""
    assert process.stdout is not None
    ready, _, _ = select.select([process.stdout], [], [], HANG_GUARD)
    assert ready, "the example printed nothing within the hang guard"
    return process.stdout.readline().decode()


@pytest.fixture(scope="module")
def installed_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The Python of a throw-away virtual environment with ``pip install ./clients/python`` done in it."""
    venv = tmp_path_factory.mktemp("venv")
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=HANG_GUARD * 2)
    python = venv / "bin" / "python"
    subprocess.run(
        [str(python), "-m", "pip", "install", "--no-index", "--disable-pip-version-check", "--quiet", str(PACKAGE)],
        check=True,
        timeout=HANG_GUARD * 2,
    )
    return python


def test_pip_install_installs_the_typed_package(installed_python: Path) -> None:
    script = "import usher, os; print(usher.__version__, os.path.dirname(usher.__file__))"
    out = subprocess.run([str(installed_python), "-c", script], capture_output=True, text=True, check=True).stdout
    version, location = out.split()
    assert version == usher.__version__ == (REPOSITORY / "VERSION").read_text().strip()
    assert "site-packages" in location  # the installed copy, not the source tree
    assert os.path.exists(os.path.join(location, "py.typed"))


def test_the_walk_through_example(daemon: Daemon, installed_python: Path) -> None:
    environment = dict(os.environ, USHER_SOCKET=daemon.socket)
    environment.pop("PYTHONPATH", None)
    result = subprocess.run(
        [str(installed_python), str(PACKAGE / "examples" / "walkthrough.py")],
        capture_output=True,
        text=True,
        env=environment,
        timeout=HANG_GUARD,
    )
    assert result.returncode == 0, result.stderr
    out = result.stdout
    guest, ann = re.search(r"^logged in: (u_\S+) \(anonymous\) and (u_\S+) \(ann@example.com\)$", out, re.M).groups()
    assert f"* {ann} ann@example.com logged_in" in out
    assert f"  {guest} anonymous logged_in" in out
    assert f"event active_user_changed: {ann} -> {guest}" in out
    assert re.search(rf"^token for {guest}: Bearer, valid for \d+ s$", out, re.M)
    assert re.search(r"^lease l_\S+ holds seat seat0$", out, re.M)
    assert "switch refused while the lease is held: inhibited" in out
    assert out.rstrip().endswith("after the lease: ann@example.com is active")
    # Run again on the same daemon: the account is reused, and the state is as the first run left it.
    again = subprocess.run(
        [str(installed_python), str(PACKAGE / "examples" / "walkthrough.py")],
        capture_output=True,
        text=True,
        env=environment,
        timeout=HANG_GUARD,
    )
    assert again.returncode == 0, again.stderr
    assert f"logged in: {guest} (anonymous) and {ann} (ann@example.com)" in again.stdout
    with daemon.client() as client:
        assert [user.id for user in client.list_users()] == [guest, ann]


def documented_block(page: Path, name: str) -> str:
    """The fenced block that follows ``<!-- example: NAME -->`` on a page."""
    text = page.read_text()
    marker = f"<!-- example: {name} -->\n```"
    assert marker in text, f"{page.name} has no block {name}"
    return text.split(marker, 1)[1].split("\n", 1)[1].split("```", 1)[0]


def test_the_virtual_environment_of_the_docs(daemon: Daemon, tmp_path: Path) -> None:
    # Debian 12 refuses pip install into the system Python (PEP 668): docs/python.md shows a virtual environment.
    # Its commands run as written, in the checkout, with a HOME of the test's own (the environment goes to ~/.venvs)
    # and no package index (the package needs none).
    commands = documented_block(REPOSITORY / "docs" / "python.md", "python-venv.sh")
    assert "python3 -m venv ~/.venvs/usher" in commands
    environment = dict(os.environ, HOME=str(tmp_path), USHER_SOCKET=daemon.socket, PIP_NO_INDEX="1")
    environment.pop("PYTHONPATH", None)
    environment.pop("VIRTUAL_ENV", None)
    result = subprocess.run(
        ["/bin/sh", "-e", "-c", commands],
        cwd=REPOSITORY,
        capture_output=True,
        text=True,
        env=environment,
        timeout=HANG_GUARD * 3,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.rstrip().endswith("after the lease: ann@example.com is active"), result.stdout
    installed = list((tmp_path / ".venvs" / "usher" / "lib").glob("python3*/site-packages/usher/__init__.py"))
    assert installed, "the package is not in the virtual environment"


def test_the_kiosk_example_of_the_readme(daemon: Daemon, installed_python: Path, tmp_path: Path) -> None:
    readme = (PACKAGE / "README.md").read_text()
    code = readme.split("## The five lines a kiosk needs", 1)[1].split("```python\n", 1)[1].split("```", 1)[0]
    assert len([line for line in code.splitlines() if line.strip() and not line.startswith("import")]) == 5
    script = tmp_path / "kiosk.py"
    script.write_text(code)
    with daemon.client() as client:
        guest = client.login_anonymous().user
        client.register("ann@example.com", "correct horse")
        ann = client.login_email("ann@example.com", "correct horse").user
        environment = dict(os.environ, USHER_SOCKET=daemon.socket)
        kiosk = subprocess.Popen(
            [str(installed_python), str(script)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=environment
        )
        try:
            assert kiosk.stdout is not None
            # The kiosk sees the switches made once it has subscribed, which this test cannot observe from outside:
            # it switches until the kiosk reports one (each round waits a little for the line; a hang guard bounds
            # the whole).
            deadline = time.monotonic() + HANG_GUARD
            target = guest
            line = b""
            while not line:
                assert time.monotonic() < deadline, "the kiosk example reported no switch"
                assert kiosk.poll() is None, kiosk.stderr.read() if kiosk.stderr else ""
                client.switch_user(target.id)
                target = ann if target is guest else guest
                ready, _, _ = select.select([kiosk.stdout], [], [], 0.2)
                if ready:
                    line = kiosk.stdout.readline()
            match = re.match(rb"now serving (u_\S+) with a token valid for (\d+) s$", line.strip())
            assert match is not None, line
            assert match.group(1).decode() in (guest.id, ann.id) and int(match.group(2)) >= 300
        finally:
            kiosk.terminate()
            kiosk.wait(HANG_GUARD)


def test_the_python_blocks_of_the_docs_are_the_examples_run_here() -> None:
    # This package's examples, and the Varlink walk-through (varlink/examples, run by make test-varlink).
    examples = {path.read_text() for path in (PACKAGE / "examples").glob("*.py")}
    examples |= {path.read_text() for path in (REPOSITORY / "varlink" / "examples").glob("*.py")}
    pages = [REPOSITORY / "README.md", *sorted((REPOSITORY / "docs").glob("*.md"))]
    blocks = [
        (page.name, block)
        for page in pages
        for block in re.findall(r"^```python\n(.*?)^```$", page.read_text(), re.M | re.S)
    ]
    assert len(blocks) >= 2  # the walk-through and the asyncio kiosk in docs/python.md
    for page, block in blocks:
        assert block in examples, f"a python block of {page} is not one of the examples/*.py run by the tests"


def test_the_asyncio_kiosk_example(daemon: Daemon, installed_python: Path) -> None:
    with daemon.client() as client:
        guest = client.login_anonymous().user
        client.register("ann@example.com", "correct horse")
        ann = client.login_email("ann@example.com", "correct horse").user
        environment = dict(os.environ, USHER_SOCKET=daemon.socket)
        kiosk = subprocess.Popen(
            [str(installed_python), str(PACKAGE / "examples" / "kiosk_async.py")],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=environment,
        )
        try:
            assert read_line(kiosk) == "subscribed\n"
            client.switch_user(guest.id)
            assert read_line(kiosk).startswith(f"now serving {guest.id} with a token valid for")
            client.logout(guest.id)  # an anonymous user is removed: ann becomes active
            assert read_line(kiosk).startswith(f"now serving {ann.id} with a token valid for")
        finally:
            kiosk.terminate()
            kiosk.wait(HANG_GUARD)
