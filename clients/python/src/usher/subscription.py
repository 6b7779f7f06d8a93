"""A blocking subscription: events as an iterator, on a connection of its own, subscribed again after a restart."""

from __future__ import annotations

import time
from types import TracebackType
from typing import Iterator, List, Optional, Sequence, Type

from . import _protocol
from ._connection import Connection, deadline_after
from .discovery import SocketLocation
from .errors import DaemonUnavailable, Disconnected, ProtocolError, ShuttingDown
from .types import Event

__all__ = ["Subscription", "RECONNECT_FIRST_DELAY", "RECONNECT_MAX_DELAY"]

#: The first wait before connecting again after the daemon went away, in seconds; it doubles up to the maximum.
RECONNECT_FIRST_DELAY = 0.05
RECONNECT_MAX_DELAY = 2.0


class Subscription:
    """Events from usherd, in generation order: ``for event in client.subscribe(): ...``.

    The subscription has its own connection, so the client that made it can go on sending requests. When the daemon
    goes away (it stops, restarts, or closes the connection), a subscription made with ``reconnect=True`` (the
    default) connects again (waiting 0.05 s, doubling to 2 s, between attempts), subscribes again with the same
    filters, and yields an :class:`usher.Event` named ``reconnected`` (``data``: ``generation``, the generation it
    subscribed at); changes made while it was away were not seen as events, so read the state again. Without
    ``reconnect``, the iteration ends when the connection does.

    Attributes:
        generation: the generation the daemon was at when the (latest) subscription was answered.
        subscribed: the event names subscribed to, as the daemon answered.
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
        self._connection: Optional[Connection] = None
        self._closed = False
        self._delay = RECONNECT_FIRST_DELAY
        # Events that came before the subscription's answer (a lease holder's): bounded, as a client's are.
        self._pending = _protocol.EventQueue()
        self.generation = 0
        self.subscribed: List[str] = []
        self._subscribe(deadline_after(timeout))

    def _subscribe(self, deadline: Optional[float]) -> None:
        connection = Connection(self.location, self._timeout)
        try:
            request_id = connection.next_id()
            connection.send(_protocol.encode_request(request_id, self._call.method, self._call.params))
            while True:
                message = connection.read(deadline)
                # A lease holder's events may come before the answer; none is lost.
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

    def next(self, timeout: Optional[float] = None) -> Event:
        """The next event; waits up to ``timeout`` seconds (None: for ever) and raises ``TimeoutError`` then.

        Raises :class:`usher.Disconnected` when the connection ended and ``reconnect`` is off (or the subscription
        was closed). A daemon that is back but refuses the subscription (``PermissionDenied`` after a reload) raises
        that error.
        """
        deadline = deadline_after(timeout)
        while True:
            if self._closed:
                raise Disconnected("the subscription is closed")
            if self._pending:
                return self._pending.popleft()
            if self._connection is None:
                if not self.reconnect:
                    raise Disconnected("usherd closed the subscription's connection")
                if self._reconnect(deadline):
                    return Event("reconnected", self.generation, {"generation": self.generation})
                continue
            try:
                message = self._connection.read(deadline)
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
                # The last line of a subscriber whose permission a reload took away: the daemon closes next.
                self._connection.close()
                self._connection = None
                raise message.error
            raise ProtocolError("an answer on a subscription's connection")

    def _reconnect(self, deadline: Optional[float]) -> bool:
        """Tries once to connect and subscribe, after the back-off delay; raises TimeoutError past the deadline."""
        delay = self._delay
        if deadline is not None:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError("usherd did not come back in time")
            delay = min(delay, remaining)
        # Waiting for the daemon to come back: there is nothing to be woken by but the socket accepting again.
        time.sleep(delay)
        self._delay = min(self._delay * 2, RECONNECT_MAX_DELAY)
        try:
            self._subscribe(deadline)
        except (DaemonUnavailable, Disconnected, ShuttingDown):
            return False
        return True

    def __iter__(self) -> Iterator[Event]:
        return self

    def __next__(self) -> Event:
        try:
            return self.next()
        except Disconnected:
            raise StopIteration from None

    def close(self) -> None:
        """Ends the subscription and closes its connection."""
        self._closed = True
        if self._connection is not None:
            self._connection.close()
            self._connection = None

    def __enter__(self) -> "Subscription":
        return self

    def __exit__(
        self, kind: Optional[Type[BaseException]], value: Optional[BaseException], trace: Optional[TracebackType]
    ) -> None:
        self.close()
