"""Where the daemon's socket is: the same rules as the ``usher`` command (``SocketLocation`` in ``UsherClient``).

First match wins: an explicit path, ``$USHER_SOCKET``, for users other than root
``$XDG_RUNTIME_DIR/usher/usher.sock`` when that file exists (a per-user daemon), and the system daemon's
``/run/usher/usher.sock``. Empty values count as unset. Every path looked at is kept, so that an error can name them.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Callable, List, Mapping, Optional

__all__ = ["SYSTEM_SOCKET", "Candidate", "SocketLocation", "resolve_socket"]

#: The system daemon's socket.
SYSTEM_SOCKET = "/run/usher/usher.sock"


@dataclass(frozen=True)
class Candidate:
    """One path the resolution looked at."""

    path: str
    #: ``explicit``, ``environment`` (``USHER_SOCKET``), ``runtime_directory`` (``XDG_RUNTIME_DIR``) or ``system``.
    source: str
    #: Why this path was passed over; None for the chosen one.
    skip_reason: Optional[str] = None


@dataclass(frozen=True)
class SocketLocation:
    """The chosen socket path, where it came from, and every path looked at (the last one is :attr:`path`)."""

    path: str
    source: str
    considered: List[Candidate] = field(default_factory=list)

    def __str__(self) -> str:
        return self.path


def resolve_socket(
    explicit_path: Optional[str] = None,
    environ: Optional[Mapping[str, str]] = None,
    is_root: Optional[bool] = None,
    exists: Callable[[str], bool] = os.path.exists,
) -> SocketLocation:
    """Resolves the socket path as ``usher`` does.

    Args:
        explicit_path: a path the program was given; used as it is when not None or empty.
        environ: where to read ``USHER_SOCKET`` and ``XDG_RUNTIME_DIR``; the process's environment by default.
        is_root: whether to skip the per-user location; true for uid 0 by default.
        exists: tells whether a path exists (following symbolic links, as ``stat`` does).
    """
    if explicit_path:
        return SocketLocation(explicit_path, "explicit", [Candidate(explicit_path, "explicit")])
    env = os.environ if environ is None else environ
    from_env = env.get("USHER_SOCKET")
    if from_env:
        return SocketLocation(from_env, "environment", [Candidate(from_env, "environment")])
    considered: List[Candidate] = []
    if is_root is None:
        is_root = os.getuid() == 0
    runtime_directory = env.get("XDG_RUNTIME_DIR")
    if not is_root and runtime_directory:
        directory = runtime_directory[:-1] if runtime_directory.endswith("/") else runtime_directory
        path = directory + "/usher/usher.sock"
        if exists(path):
            considered.append(Candidate(path, "runtime_directory"))
            return SocketLocation(path, "runtime_directory", considered)
        considered.append(Candidate(path, "runtime_directory", "not found"))
    considered.append(Candidate(SYSTEM_SOCKET, "system"))
    return SocketLocation(SYSTEM_SOCKET, "system", considered)
