"""usher: the Python client of usherd, the daemon that knows who is using this device and holds their tokens.

A blocking :class:`Client` and an asyncio :class:`AsyncClient` speak usherd's protocol (newline-delimited JSON on a
Unix socket, ``docs/protocol.md``) with typed results, one exception class per error code, subscriptions that
reconnect, and leases held with ``with``::

    import usher

    with usher.Client() as client:
        token = client.access_token(min_valid=300)
        print(client.current_user(), token.expires_in)

The package has no dependencies besides the standard library (Python 3.9+).
"""

from .aio import AsyncClient, AsyncLease
from .aio_subscription import AsyncSubscription
from .client import Client, Lease
from .discovery import SYSTEM_SOCKET, Candidate, SocketLocation, resolve_socket
from .errors import *  # noqa: F401,F403 (every error class is part of the package's interface)
from .errors import __all__ as _error_names
from .subscription import Subscription
from .types import *  # noqa: F401,F403
from .types import __all__ as _type_names

__version__ = "0.1.0"

__all__ = [
    "AsyncClient",
    "AsyncLease",
    "AsyncSubscription",
    "Client",
    "Lease",
    "Subscription",
    "SYSTEM_SOCKET",
    "Candidate",
    "SocketLocation",
    "resolve_socket",
    *_error_names,
    *_type_names,
]
