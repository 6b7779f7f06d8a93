"""An asyncio connection: one Unix socket, lines in and out, with deadlines. The asyncio twin of ``_connection``."""

from __future__ import annotations

import asyncio
from typing import Optional, Union

from . import _protocol
from ._connection import unavailable
from .discovery import SocketLocation
from .errors import Disconnected, ProtocolError
from .types import Event


class AsyncConnection:
    """A connected stream and its request ids."""

    def __init__(self, location: SocketLocation, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.location = location
        self._reader = reader
        self._writer: Optional[asyncio.StreamWriter] = writer
        self._next_id = 0

    @classmethod
    async def open(cls, location: SocketLocation, timeout: Optional[float]) -> "AsyncConnection":
        """Connects; raises :class:`usher.DaemonUnavailable` when nothing answers."""
        try:
            reader, writer = await asyncio.wait_for(
                asyncio.open_unix_connection(location.path, limit=_protocol.MAX_LINE_BYTES), timeout
            )
        except asyncio.TimeoutError:
            raise TimeoutError(f"usherd did not accept a connection at {location.path} in time") from None
        except OSError as error:
            raise unavailable(location, error) from None
        return cls(location, reader, writer)

    @property
    def closed(self) -> bool:
        """Whether the connection was closed, or the daemon closed its side and everything it sent was read."""
        return self._writer is None or self._reader.at_eof()

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
        """The next answer or event. Raises TimeoutError after ``timeout`` seconds (nothing read is lost: the line
        stays in the stream's buffer) and :class:`usher.Disconnected` when the daemon closed the connection."""
        while True:
            if self._writer is None:
                raise Disconnected("the connection to usherd is closed")
            try:
                line = await asyncio.wait_for(self._reader.readline(), timeout)
            except asyncio.TimeoutError:
                raise TimeoutError("usherd did not answer in time") from None
            except (ValueError, asyncio.LimitOverrunError):
                self.close()
                raise ProtocolError(f"a line from usherd longer than {_protocol.MAX_LINE_BYTES} bytes") from None
            except OSError as error:
                self.close()
                raise Disconnected(f"the connection to usherd was lost: {error.strerror or error}") from None
            if not line.endswith(b"\n"):
                self.close()
                raise Disconnected("usherd closed the connection")
            if line.strip():
                return _protocol.decode_line(line)
