"""An asyncio subscription: events as an async iterator, subscribed again after a restart."""

from __future__ import annotations

import asyncio
import time
from types import TracebackType
from typing import List, Optional, Sequence, Type

from . import _protocol
from ._aconnection import AsyncConnection
from .discovery import SocketLocation
from .errors import DaemonUnavailable, Disconnected, ProtocolError, ShuttingDown
from .subscription import RECONNECT_FIRST_DELAY, RECONNECT_MAX_DELAY
from .types import Event

__all__ = ["AsyncSubscription"]


class AsyncSubscription:
    """Events from usherd as an async iterator: ``async for event in client.subscribe(): ...``.

    It connects and subscribes at the first ``__anext__`` (or at ``await subscription.start()``, or when an
    ``async with`` block starts), on a connection of its own. Reconnection works as for
    :class:`usher.Subscription`: a ``reconnected`` event after subscribing again, or the end of the iteration
    without ``reconnect``.
    """

    def __init__(
        self,
        location: SocketLocation,
        events: Optional[Sequence[str]],
        seats: Optional[Sequence[str]],
        *,
        reconnect: bool = True,
        timeout: Optional[float] = 60.0,
    ) -> None:
        self.location = location
        self.reconnect = reconnect
        self._call = _protocol.subscribe(events, seats)
        self._timeout = timeout
        self._connection: Optional[AsyncConnection] = None
        self._started = False
        self._closed = False
        self._delay = RECONNECT_FIRST_DELAY
        # Events that came before the subscription's answer (a lease holder's): bounded, as a client's are.
        self._pending = _protocol.EventQueue()
        #: The generation the daemon was at when the (latest) subscription was answered.
        self.generation = 0
        #: The event names subscribed to.
        self.subscribed: List[str] = []

    async def start(self) -> "AsyncSubscription":
        """Connects and subscribes, once; the events are those that happen from then on."""
        if not self._started:
            await self._subscribe(self._timeout)
            self._started = True
        return self

    async def _subscribe(self, timeout: Optional[float]) -> None:
        connection = await AsyncConnection.open(self.location, timeout)
        try:
            request_id = connection.next_id()
            await connection.send(_protocol.encode_request(request_id, self._call.method, self._call.params))
            while True:
                message = await connection.read(timeout)
                if isinstance(message, Event):
                    self._pending.append(message, connection.line_bytes)
                    continue
                self.generation, self.subscribed = _protocol.subscribed(_protocol.check_response(message, request_id))
                break
        except BaseException:
            connection.close()
            raise
        self._connection = connection
        self._delay = RECONNECT_FIRST_DELAY

    async def next(self, timeout: Optional[float] = None) -> Event:
        """The next event; ``TimeoutError`` after ``timeout`` seconds (None: for ever); :class:`usher.Disconnected`
        when the connection ended and ``reconnect`` is off."""
        await self.start()
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            if self._closed:
                raise Disconnected("the subscription is closed")
            if self._pending:
                return self._pending.popleft()
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                raise TimeoutError("no event in time")
            if self._connection is None:
                if not self.reconnect:
                    raise Disconnected("usherd closed the subscription's connection")
                if await self._reconnect(remaining):
                    return Event("reconnected", self.generation, {"generation": self.generation})
                continue
            try:
                message = await self._connection.read(remaining)
            except Disconnected:
                self._connection = None
                continue
            except ProtocolError:
                # A line that is not usherd's: the connection is closed rather than read further.
                self._connection.close()
                self._connection = None
                raise
            if isinstance(message, Event):
                return message
            if message.error is not None:
                self._connection.close()
                self._connection = None
                raise message.error
            raise ProtocolError("an answer on a subscription's connection")

    async def _reconnect(self, remaining: Optional[float]) -> bool:
        delay = self._delay if remaining is None else min(self._delay, remaining)
        # Waiting for the daemon to come back: nothing can wake us but the socket accepting again.
        await asyncio.sleep(delay)
        self._delay = min(self._delay * 2, RECONNECT_MAX_DELAY)
        try:
            await self._subscribe(self._timeout)
        except (DaemonUnavailable, Disconnected, ShuttingDown):
            return False
        return True

    def __aiter__(self) -> "AsyncSubscription":
        return self

    async def __anext__(self) -> Event:
        try:
            return await self.next()
        except Disconnected:
            raise StopAsyncIteration from None

    async def close(self) -> None:
        """Ends the subscription and closes its connection."""
        self._closed = True
        if self._connection is not None:
            self._connection.close()
            self._connection = None

    async def __aenter__(self) -> "AsyncSubscription":
        return await self.start()

    async def __aexit__(
        self, kind: Optional[Type[BaseException]], value: Optional[BaseException], trace: Optional[TracebackType]
    ) -> None:
        await self.close()
