"""A daemon that is not usherd, or is usherd gone bad: a socket server of the test's own that answers with JSON nested
without end, floods events while a call waits for its answer, or hands out a token with a NUL in it. The client
bounds what it holds and says so with an error of its own (``ProtocolError``, ``TooManyEvents``), never with a
``RecursionError``, a ``MemoryError`` or a wait for the timeout (docs/python.md, "What the client holds")."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import socket
import tempfile
import threading
from typing import Any, Callable, Dict, Iterator, List

import pytest

import usher
from conftest import HANG_GUARD
from usher._connection import PEEK_BYTES, READ_BYTES

#: The documented bounds (docs/python.md): events kept while the program has not taken them.
QUEUED_EVENTS = 4096
QUEUED_EVENT_BYTES = 16 * 1024 * 1024

Script = Callable[["HostileDaemon", socket.socket, Dict[str, Any]], None]


class HostileDaemon:
    """A fake usherd: every request line it reads is answered by ``script(daemon, peer, request)``, which writes what
    it likes on ``peer``. It counts the connections it accepted and the bytes it sent, and notes the send buffer of the
    last connection (what the socket holds that the client has not read)."""

    def __init__(self, script: Script) -> None:
        self.directory = tempfile.mkdtemp(prefix="usher-py-", dir="/tmp")
        self.path = os.path.join(self.directory, "hostile.sock")
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(self.path)
        self.listener.listen(8)
        self.connections = 0
        self.sent = 0
        self.send_buffer = 0
        self._script = script
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                peer, _ = self.listener.accept()
            except OSError:
                return  # closed by close()
            self.connections += 1
            threading.Thread(target=self._converse, args=(peer,), daemon=True).start()

    def _converse(self, peer: socket.socket) -> None:
        self.send_buffer = peer.getsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF)
        with peer:
            buffer = b""
            try:
                while True:
                    chunk = peer.recv(65536)
                    if not chunk:
                        return
                    buffer += chunk
                    while b"\n" in buffer:
                        line, buffer = buffer.split(b"\n", 1)
                        self._script(self, peer, json.loads(line))
            except OSError:
                return  # the client closed the connection, as it should once it has had enough

    def send(self, peer: socket.socket, data: bytes) -> None:
        peer.sendall(data)
        self.sent += len(data)

    def close(self) -> None:
        # shutdown wakes the thread blocked in accept (close alone does not, on Linux).
        try:
            self.listener.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.listener.close()
        shutil.rmtree(self.directory, ignore_errors=True)


@pytest.fixture
def hostile() -> Iterator[Callable[[Script], HostileDaemon]]:
    started: List[HostileDaemon] = []

    def start(script: Script) -> HostileDaemon:
        daemon = HostileDaemon(script)
        started.append(daemon)
        return daemon

    yield start
    for daemon in started:
        daemon.close()


def answer(result: bytes) -> Script:
    """Answers every request with ``result`` (JSON text)."""

    def script(daemon: HostileDaemon, peer: socket.socket, request: Dict[str, Any]) -> None:
        daemon.send(peer, b'{"id":%d,"result":%s}\n' % (request["id"], result))

    return script


def event_line(data: bytes = b"{}") -> bytes:
    return b'{"event":"user_logged_in","generation":1,"data":%s}\n' % data


def flood(line: bytes, budget: int, answer_first: bool = False) -> Script:
    """Events without an answer, until ``budget`` bytes were sent; then silence, so that a client that bounds nothing
    waits for its timeout rather than the machine running out of memory. ``answer_first``: the first request is
    answered, and the flood comes after it, between two calls."""

    def script(daemon: HostileDaemon, peer: socket.socket, request: Dict[str, Any]) -> None:
        if answer_first and request["id"] == 1:
            daemon.send(peer, b'{"id":1,"result":{}}\n')
        chunk = line * max(1, 65536 // len(line))
        while daemon.sent < budget:
            daemon.send(peer, chunk)

    return script


def nested(depth: int) -> bytes:
    return b"[" * depth + b"]" * depth


SMALL_EVENTS_BUDGET = 32 * QUEUED_EVENTS * len(event_line())
BIG_EVENT = event_line(b'{"padding":"%s"}' % (b"x" * (1024 * 1024)))
BIG_EVENTS_BUDGET = 4 * QUEUED_EVENT_BYTES


# Nesting


@pytest.mark.parametrize("depth", [33, 1000, 100_000])
def test_an_answer_nested_too_deep_is_a_protocol_error(hostile: Callable[[Script], HostileDaemon], depth: int) -> None:
    daemon = hostile(answer(nested(depth)))
    with usher.Client(daemon.path, timeout=HANG_GUARD) as client:
        with pytest.raises(usher.ProtocolError, match="nested deeper than 32"):
            client.call("hello")


def test_an_answer_nested_32_deep_is_read(hostile: Callable[[Script], HostileDaemon]) -> None:
    daemon = hostile(answer(nested(31)))  # 32 levels with the answer object
    with usher.Client(daemon.path, timeout=HANG_GUARD) as client:
        result = client.call("hello")
    for _ in range(30):
        result = result[0]
    assert result == []


def test_an_event_nested_too_deep_is_a_protocol_error(hostile: Callable[[Script], HostileDaemon]) -> None:
    def script(daemon: HostileDaemon, peer: socket.socket, request: Dict[str, Any]) -> None:
        daemon.send(peer, event_line(b'{"x":%s}' % nested(100_000)))
        daemon.send(peer, b'{"id":%d,"result":{}}\n' % request["id"])

    daemon = hostile(script)
    with usher.Client(daemon.path, timeout=HANG_GUARD) as client:
        with pytest.raises(usher.ProtocolError, match="nested deeper than 32"):
            client.call("hello")
        # The connection is closed rather than left out of step: the next request opens another.
        with pytest.raises(usher.ProtocolError, match="nested deeper than 32"):
            client.call("hello")
    assert daemon.connections == 2


def test_the_async_client_refuses_deep_nesting(hostile: Callable[[Script], HostileDaemon]) -> None:
    daemon = hostile(answer(nested(100_000)))

    async def body() -> None:
        async with usher.AsyncClient(daemon.path, timeout=HANG_GUARD) as client:
            with pytest.raises(usher.ProtocolError, match="nested deeper than 32"):
                await client.call("hello")

    asyncio.run(asyncio.wait_for(body(), HANG_GUARD))


# Events while a call waits


@pytest.mark.parametrize(
    "line, budget", [(event_line(), SMALL_EVENTS_BUDGET), (BIG_EVENT, BIG_EVENTS_BUDGET)], ids=["many", "large"]
)
def test_a_flood_of_events_during_a_call_ends_it(
    hostile: Callable[[Script], HostileDaemon], line: bytes, budget: int
) -> None:
    daemon = hostile(flood(line, budget))
    with usher.Client(daemon.path, timeout=HANG_GUARD) as client:
        with pytest.raises(usher.TooManyEvents) as raised:
            client.call("hello")
        # The client's own error, one line, saying what to do.
        assert raised.value.code == "too_many_events" and "\n" not in str(raised.value)
        assert isinstance(raised.value, usher.UsherError)
    # The client stopped reading at the bound: the daemon could not make it take its whole budget.
    assert daemon.sent < budget


def test_a_flood_between_two_calls_ends_the_second(hostile: Callable[[Script], HostileDaemon]) -> None:
    daemon = hostile(flood(event_line(), SMALL_EVENTS_BUDGET, answer_first=True))
    with usher.Client(daemon.path, timeout=HANG_GUARD) as client:
        assert client.call("hello") == {}
        with pytest.raises(usher.TooManyEvents):
            client.call("hello")
    # The client reads past its bound by no more than this, however fast either side runs: the lines it took (the
    # answer, the events the second call queued and the one too many), and what it holds unread, which is at most one
    # read of a call made when no whole line was left, or what peer_closed read before the second call (until it held
    # more lines than the queue does) and its last read. The daemon got more out only into the socket: the send
    # buffer, and one message of up to half of it past it (Linux's AF_UNIX stream sockets).
    line = len(event_line())
    taken = len(b'{"id":1,"result":{}}\n') + (QUEUED_EVENTS + 1) * line
    unread = max(READ_BYTES + line, (QUEUED_EVENTS + 1) * line + PEEK_BYTES)
    in_socket = 2 * daemon.send_buffer
    assert daemon.sent <= taken + unread + in_socket < SMALL_EVENTS_BUDGET


def test_events_within_the_bound_are_all_kept(hostile: Callable[[Script], HostileDaemon]) -> None:
    def script(daemon: HostileDaemon, peer: socket.socket, request: Dict[str, Any]) -> None:
        daemon.send(peer, event_line() * QUEUED_EVENTS + b'{"id":%d,"result":{}}\n' % request["id"])

    daemon = hostile(script)
    with usher.Client(daemon.path, timeout=HANG_GUARD) as client:
        assert client.call("hello") == {}
        for _ in range(QUEUED_EVENTS):
            assert client.next_event(timeout=HANG_GUARD).name == "user_logged_in"
        # Taken, they make room again: the same number comes with the next answer.
        assert client.call("hello") == {}
        assert client.next_event(timeout=HANG_GUARD).name == "user_logged_in"
    assert daemon.connections == 1


def test_a_flood_before_a_subscription_is_answered(hostile: Callable[[Script], HostileDaemon]) -> None:
    daemon = hostile(flood(event_line(), SMALL_EVENTS_BUDGET))
    with pytest.raises(usher.TooManyEvents):
        usher.Client(daemon.path, timeout=HANG_GUARD).subscribe(reconnect=False)
    assert daemon.sent < SMALL_EVENTS_BUDGET


@pytest.mark.parametrize(
    "line, budget", [(event_line(), SMALL_EVENTS_BUDGET), (BIG_EVENT, BIG_EVENTS_BUDGET)], ids=["many", "large"]
)
def test_the_async_client_bounds_a_flood(hostile: Callable[[Script], HostileDaemon], line: bytes, budget: int) -> None:
    daemon, for_subscription = hostile(flood(line, budget)), hostile(flood(line, budget))

    async def body() -> None:
        async with usher.AsyncClient(daemon.path, timeout=HANG_GUARD) as client:
            with pytest.raises(usher.TooManyEvents):
                await client.call("hello")
        subscription = usher.AsyncClient(for_subscription.path, timeout=HANG_GUARD).subscribe(reconnect=False)
        with pytest.raises(usher.TooManyEvents):
            await subscription.start()

    asyncio.run(asyncio.wait_for(body(), HANG_GUARD))
    assert daemon.sent < budget and for_subscription.sent < budget


# Tokens

TOKEN_ANSWER = (
    b'{"user_id":"u_1","access_token":"%s","token_type":"Bearer","expires_at":"2030-01-01T00:00:00Z","expires_in":300}'
)


@pytest.mark.parametrize("bad", [b"\\u0000", b"\\r\\nX-Injected: 1", b" ", b"\\u00e9", b"\\t"])
def test_a_token_that_cannot_go_in_a_header_is_refused(
    hostile: Callable[[Script], HostileDaemon], bad: bytes
) -> None:
    daemon = hostile(answer(TOKEN_ANSWER % (b"secret-token-value" + bad + b"tail")))
    with usher.Client(daemon.path, timeout=HANG_GUARD) as client:
        with pytest.raises(usher.ProtocolError) as raised:
            client.access_token()
    assert "secret-token-value" not in str(raised.value)


def test_an_empty_token_is_refused(hostile: Callable[[Script], HostileDaemon]) -> None:
    daemon = hostile(answer(TOKEN_ANSWER % b""))
    with usher.Client(daemon.path, timeout=HANG_GUARD) as client:
        with pytest.raises(usher.ProtocolError):
            client.access_token()


def test_a_well_formed_token_is_taken(hostile: Callable[[Script], HostileDaemon]) -> None:
    daemon = hostile(answer(TOKEN_ANSWER % b"eyJ0eXAi.eyJzdWIi.c2ln-_~+/="))
    with usher.Client(daemon.path, timeout=HANG_GUARD) as client:
        assert client.access_token().authorization == "Bearer eyJ0eXAi.eyJzdWIi.c2ln-_~+/="


def test_proofs_and_api_keys_are_checked_as_tokens_are(hostile: Callable[[Script], HostileDaemon]) -> None:
    def script(daemon: HostileDaemon, peer: socket.socket, request: Dict[str, Any]) -> None:
        results = {
            "dpop_proof": b'{"user_id":"u_1","proof":"secret-proof\\u0000","access_token_expires_at":null}',
            "create_api_key": b'{"user_id":"u_1","name":"laptop","key":"secret-key\\u0000","created_at":null}',
        }
        daemon.send(peer, b'{"id":%d,"result":%s}\n' % (request["id"], results[request["method"]]))

    daemon = hostile(script)
    with usher.Client(daemon.path, timeout=HANG_GUARD) as client:
        with pytest.raises(usher.ProtocolError) as proof:
            client.dpop_proof("GET", "https://api.example.com/")
        with pytest.raises(usher.ProtocolError) as key:
            client.create_api_key("laptop")
    assert "secret-proof" not in str(proof.value) and "secret-key" not in str(key.value)


def test_a_nul_in_any_string_is_a_protocol_error(hostile: Callable[[Script], HostileDaemon]) -> None:
    daemon = hostile(answer(b'{"user":null,"note":["fine","not\\u0000fine"]}'))
    with usher.Client(daemon.path, timeout=HANG_GUARD) as client:
        with pytest.raises(usher.ProtocolError, match="NUL"):
            client.current_user()


def test_the_async_client_refuses_a_token_with_a_nul(hostile: Callable[[Script], HostileDaemon]) -> None:
    daemon = hostile(answer(TOKEN_ANSWER % b"secret-token-value\\u0000"))

    async def body() -> None:
        async with usher.AsyncClient(daemon.path, timeout=HANG_GUARD) as client:
            with pytest.raises(usher.ProtocolError) as raised:
                await client.access_token()
            assert "secret-token-value" not in str(raised.value)

    asyncio.run(asyncio.wait_for(body(), HANG_GUARD))
