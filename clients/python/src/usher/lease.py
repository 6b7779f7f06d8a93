"""A lease held by the blocking client: :class:`Lease`."""

from __future__ import annotations

from types import TracebackType
from typing import Optional, Protocol, Type

__all__ = ["Lease"]


class LeaseHolder(Protocol):
    """What a lease needs of the connection that took it (:class:`usher.Client` is one).

    A protocol rather than the client's class, so that this module imports nothing of the client's: the client
    builds on leases, not the other way round.
    """

    def _lease_broken(self, lease_id: str) -> bool: ...

    def _release(self, lease: "Lease") -> None: ...


class Lease:
    """A lease held on a :class:`usher.Client`'s connection: the seat's active user stays in place while it is held.

    Use it as a context manager (``with client.inhibit(why="card payment"):``) or call :meth:`release`. It also ends
    when the client's connection closes, as the daemon ties a lease to the connection that took it.
    """

    def __init__(self, client: LeaseHolder, lease_id: str, seat: str, mode: str) -> None:
        self._client = client
        #: The daemon's name for the lease (``l_1``).
        self.id = lease_id
        #: The seat whose active user it holds.
        self.seat = seat
        #: ``block`` or ``delay``.
        self.mode = mode
        self.released = False

    @property
    def broken(self) -> bool:
        """Whether a forced change broke the lease (a ``lease_broken`` event came for it). Reads what has arrived
        without waiting."""
        return self._client._lease_broken(self.id)

    def release(self) -> None:
        """Releases the lease. Releasing twice, or after the connection closed (which released it), does nothing."""
        if self.released:
            return
        self.released = True
        self._client._release(self)

    def __enter__(self) -> "Lease":
        return self

    def __exit__(
        self, kind: Optional[Type[BaseException]], value: Optional[BaseException], trace: Optional[TracebackType]
    ) -> None:
        self.release()

    def __repr__(self) -> str:
        return f"Lease(id={self.id!r}, seat={self.seat!r}, mode={self.mode!r}, released={self.released})"
