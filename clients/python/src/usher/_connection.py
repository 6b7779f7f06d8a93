"""A blocking connection: one Unix socket, lines in and out, with deadlines.

Used by :class:`usher.Client` and :class:`usher.Subscription`. Nothing here knows a method: see ``_protocol``.
"""

from __future__ import annotations

import errno
import socket
import time
from typing import Optional, Union

from . import _protocol
from .discovery import SocketLocation
from .errors import DaemonUnavailable, Disconnected
from .types import Event

#: The most one read takes from the socket while a request waits (only when no whole line is buffered).
READ_BYTES = 1 << 20
#: The most one read of :meth:`Connection.peer_closed` takes.
PEEK_BYTES = 65536


def describe(location: SocketLocation) -> str:
    """Every path looked at, for an error message: ``/a (USHER_SOCKET: ...), /b (...)``."""
    return ", ".join(
        f"{candidate.path} ({candidate.source}{': ' + candidate.skip_reason if candidate.skip_reason else ''})"
        for candidate in location.considered
    )


def unavailable(location: SocketLocation, error: OSError) -> DaemonUnavailable:
    """The error for a connection that failed, naming every path tried."""
    reason = error.strerror or str(error)
    return DaemonUnavailable(
        f"usherd does not answer at {location.path}: {reason} (tried {describe(location)})",
        [candidate.path for candidate in location.considered],
    )


class Connection:
    """A connected socket and what was read from it but not yet taken."""

    def __init__(self, location: SocketLocation, timeout: Optional[float]) -> None:
        # Python's sockets are close-on-exec by default: a program the caller starts does not inherit the
        # connection (nor, with it, a lease held on it).
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.settimeout(timeout)
            sock.connect(location.path)
        except OSError as error:
            sock.close()
            if isinstance(error, socket.timeout):
                raise TimeoutError(f"usherd did not accept a connection at {location.path} in time") from None
            raise unavailable(location, error) from None
        self.location = location
        self._socket: Optional[socket.socket] = sock
        self._buffer = bytearray()
        self._next_id = 0
        #: The length of the line the last :meth:`read` returned (what an event costs the client's event queue).
        self.line_bytes = 0

    @property
    def closed(self) -> bool:
        """Whether the connection was closed (by either side)."""
        return self._socket is None

    def close(self) -> None:
        """Closes the socket; leases held on it are released by the daemon."""
        sock, self._socket = self._socket, None
        if sock is not None:
            sock.close()

    def next_id(self) -> int:
        self._next_id += 1
        return self._next_id

    def send(self, line: bytes) -> None:
        sock = self._live()
        try:
            sock.settimeout(None)
            sock.sendall(line)
        except (BrokenPipeError, ConnectionResetError):
            # The daemon closed the connection, perhaps with a last line saying why (line_too_long after the limit,
            # too_many_connections): reading reports it, or that the connection ended.
            pass
        except OSError as error:
            self.close()
            raise Disconnected(f"the connection to usherd was lost: {error.strerror or error}") from None

    def peer_closed(self) -> bool:
        """Whether the daemon closed its side, looked at without waiting. What it sent first stays buffered, up to what
        the client's event queue holds (``MAX_QUEUED_EVENTS`` lines or ``MAX_QUEUED_EVENT_BYTES``) and one read more:
        a daemon still sending past that is not known to have closed, and the rest stays in the socket."""
        if self._socket is None:
            return True
        try:
            # Non-blocking: with a timeout set, Python would wait for data before even trying MSG_DONTWAIT.
            self._socket.settimeout(0.0)
            # Counted in lines as well as bytes: small events under the byte bound would be many times the queue's
            # count, all read between two calls however fast the daemon sends them.
            lines = self._buffer.count(b"\n")
            while lines <= _protocol.MAX_QUEUED_EVENTS and len(self._buffer) < _protocol.MAX_QUEUED_EVENT_BYTES:
                chunk = self._socket.recv(PEEK_BYTES)
                if not chunk:
                    self.close()
                    return True
                self._buffer += chunk
                lines += chunk.count(b"\n")
            return False
        except (BlockingIOError, InterruptedError):
            return False
        except OSError:
            self.close()
            return True

    def has_line(self) -> bool:
        """Whether a whole line is already buffered."""
        return b"\n" in self._buffer

    def read(self, deadline: Optional[float]) -> Union[_protocol.Response, Event]:
        """The next answer or event; waits until ``deadline`` (``time.monotonic()``; None: for ever).

        Raises TimeoutError at the deadline (what was read so far stays buffered) and :class:`Disconnected` when the
        daemon closed the connection.
        """
        while True:
            taken = _protocol.take_message(self._buffer, self.close)
            if taken is not None:
                message, self.line_bytes = taken
                return message
            sock = self._live()
            if deadline is None:
                sock.settimeout(None)
            else:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise TimeoutError("usherd did not answer in time")
                sock.settimeout(remaining)
            try:
                chunk = sock.recv(READ_BYTES)
            except socket.timeout:
                raise TimeoutError("usherd did not answer in time") from None
            except OSError as error:
                if error.errno == errno.EINTR:
                    continue
                self.close()
                raise Disconnected(f"the connection to usherd was lost: {error.strerror or error}") from None
            if not chunk:
                self.close()
                raise Disconnected("usherd closed the connection")
            self._buffer += chunk

    def _live(self) -> socket.socket:
        if self._socket is None:
            raise Disconnected("the connection to usherd is closed")
        return self._socket


def deadline_after(timeout: Optional[float]) -> Optional[float]:
    """The ``time.monotonic()`` value ``timeout`` seconds from now; None for no limit."""
    return None if timeout is None else time.monotonic() + timeout
