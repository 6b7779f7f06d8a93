"""An asyncio connection: one Unix socket, lines in and out, with deadlines. The asyncio twin of ``_connection``."""

from __future__ import annotations

import asyncio
import time
from typing import Optional, Union

from . import _protocol
from ._connection import unavailable
from .discovery import SocketLocation
from .errors import Disconnected
from .types import Event


#: What the stream reads ahead of the lines taken: asyncio stops reading from the socket at twice this, so a daemon
#: that floods makes the client hold little more than the line being read (itself bounded by MAX_LINE_BYTES).
READ_AHEAD = 1 << 20


class AsyncConnection:
    """A connected stream, the lines read from it but not yet taken, and its request ids."""

    def __init__(self, location: SocketLocation, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.location = location
        self._reader = reader
        self._writer: Optional[asyncio.StreamWriter] = writer
        self._buffer = bytearray()
        self._next_id = 0
        #: The length of the line the last :meth:`read` returned (what an event costs the client's event queue).
        self.line_bytes = 0

    @classmethod
    async def open(cls, location: SocketLocation, timeout: Optional[float]) -> "AsyncConnection":
        """Connects; raises :class:`usher.DaemonUnavailable` when nothing answers."""
        try:
            reader, writer = await asyncio.wait_for(
                asyncio.open_unix_connection(location.path, limit=READ_AHEAD), timeout
            )
        except asyncio.TimeoutError:
            raise TimeoutError(f"usherd did not accept a connection at {location.path} in time") from None
        except OSError as error:
            raise unavailable(location, error) from None
        return cls(location, reader, writer)

    @property
    def closed(self) -> bool:
        """Whether the connection was closed, or the daemon closed its side and everything it sent was read."""
        return self._writer is None or (self._reader.at_eof() and not self._buffer)

    def close(self) -> None:
        """Closes the connection; leases held on it are released by the daemon."""
        writer, self._writer = self._writer, None
        if writer is not None:
            writer.close()

    def next_id(self) -> int:
        self._next_id += 1
        return self._next_id

    async def send(self, line: bytes) -> None:
        writer = self._writer
        if writer is None:
            raise Disconnected("the connection to usherd is closed")
        try:
            writer.write(line)
            await writer.drain()
        except (BrokenPipeError, ConnectionResetError):
            pass  # the daemon closed the connection: reading reports its last line, or the end
        except OSError as error:
            self.close()
            raise Disconnected(f"the connection to usherd was lost: {error.strerror or error}") from None

    async def read(self, timeout: Optional[float]) -> Union[_protocol.Response, Event]:
        """The next answer or event. Raises TimeoutError after ``timeout`` seconds (nothing read is lost: it stays
        buffered), :class:`usher.Disconnected` when the daemon closed the connection, and
        :class:`usher.ProtocolError` for a line longer than ``MAX_LINE_BYTES``."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            if self._writer is None:
                raise Disconnected("the connection to usherd is closed")
            taken = _protocol.take_message(self._buffer, self.close)
            if taken is not None:
                message, self.line_bytes = taken
                return message
            try:
                # read() gives what the stream holds, at most READ_AHEAD; cancelled by the timeout, it takes nothing.
                chunk = await asyncio.wait_for(
                    self._reader.read(READ_AHEAD), None if deadline is None else max(0.0, deadline - time.monotonic())
                )
            except asyncio.TimeoutError:
                raise TimeoutError("usherd did not answer in time") from None
            except OSError as error:
                self.close()
                raise Disconnected(f"the connection to usherd was lost: {error.strerror or error}") from None
            if not chunk:
                self.close()
                raise Disconnected("usherd closed the connection")
            self._buffer += chunk
