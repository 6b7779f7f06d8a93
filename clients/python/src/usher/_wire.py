"""Reading the daemon's JSON: typed field access that raises ProtocolError for a field of the wrong type."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any, List, Mapping, Optional

from .errors import ProtocolError


def _get(obj: Mapping[str, Any], key: str, kind: type, optional: bool = False) -> Any:
    value = obj.get(key)
    if value is None and optional:
        return None
    # bool is an int in Python; a number field must not accept true.
    if isinstance(value, kind) and not (kind is int and isinstance(value, bool)):
        return value
    raise ProtocolError(f"field {key!r} is not a {kind.__name__}: {value!r:.100}")


_VISIBLE_ASCII = re.compile("[!-~]+")


def _secret(obj: Mapping[str, Any], key: str) -> str:
    """A token, a proof or an API key: text that goes into an HTTP header, so visible ASCII only (``!`` to ``~``,
    as RFC 6750's tokens and JWTs are), and not empty. A NUL, a line break, a space or a non-ASCII character would
    cut the header short or add another one after it. The error never shows the value."""
    value = obj.get(key)
    if not isinstance(value, str) or not value:
        raise ProtocolError(f"field {key!r} is not a token (not a non-empty string)")
    if not _VISIBLE_ASCII.fullmatch(value):
        raise ProtocolError(f"field {key!r} is not a token: it has characters other than visible ASCII")
    return value


def _time(obj: Mapping[str, Any], key: str, optional: bool = True) -> Optional[datetime]:
    value = _get(obj, key, str, optional)
    if value is None:
        return None
    text: str = value
    # Python 3.9's fromisoformat takes "+00:00" but not "Z".
    if text.endswith("Z"):
        text = text[:-1] + "+00:00"
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        raise ProtocolError(f"field {key!r} is not an RFC 3339 time: {value!r:.100}") from None


def _object(obj: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    value: Mapping[str, Any] = _get(obj, key, dict)
    return value


def _objects(obj: Mapping[str, Any], key: str) -> List[Mapping[str, Any]]:
    items: List[Any] = _get(obj, key, list)
    if not all(isinstance(item, dict) for item in items):
        raise ProtocolError(f"field {key!r} is not a list of objects")
    return items


def _strings(obj: Mapping[str, Any], key: str) -> List[str]:
    items: List[Any] = _get(obj, key, list)
    if not all(isinstance(item, str) for item in items):
        raise ProtocolError(f"field {key!r} is not a list of strings")
    return items
