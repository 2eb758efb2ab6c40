"""The discovery index shared by many machines through Redis (``cache_backend: redis://...``).

The workers of a cluster that run one environment (a shared virtualenv, one container
image) then pay one cold scan between them: the first to scan publishes the index under the
key the file index is named by (interpreter and ``sys.prefix``), the others read it when their
own file index is missing. What Redis returns is untrusted input: it is JSON (never marshal or
pickle), at most ``MAX_BYTES``, plain lists, dicts and scalars, with the same stamp the file
index needs, and its records then go through the same checks as file records
(``PluginSpec.from_record``, ``trust.from_source``). Redis down or slow costs one warning and
the file index (or a scan), never a failed command.
"""

from __future__ import annotations

from brainsmith.plugin import log
from brainsmith.plugin.memo import MAX_BYTES, is_plain

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any


TIMEOUT = 0.5  # seconds for connecting and for each command
PREFIX = "brainsmith:index:"
EXPIRY = 30 * 24 * 3600  # seconds: an environment nobody starts any more leaves nothing behind

_broken: set[str] = set()  # URLs that failed in this process: not tried again


def read(url: str, name: str, stamp: object) -> object | None:
    """The index stored under ``name`` if its stamp equals ``stamp``; None otherwise."""
    # never more than MAX_BYTES + 1 downloaded, whatever the server holds
    raw = _call(url, "read", lambda client: client.getrange(PREFIX + name, 0, MAX_BYTES))
    if not raw:
        return None
    if len(raw) > MAX_BYTES:
        log.warning("shared index %s at %s: over %d bytes; ignored", name, shown(url), MAX_BYTES)
        return None
    import json

    try:
        record = json.loads(raw)
    except (ValueError, RecursionError):  # (RecursionError: nested beyond Python's limit)
        log.warning("shared index %s at %s is not JSON; ignored", name, shown(url))
        return None
    if not (isinstance(record, list) and len(record) == 2 and is_plain(record)):
        log.warning("shared index %s at %s holds unexpected data; ignored", name, shown(url))
        return None
    return record[1] if record[0] == stamp else None


def write(url: str, name: str, stamp: object, payload: object) -> bool:
    """Publish ``payload`` under ``name``; False (after a warning) when Redis cannot be used."""
    import json

    text = json.dumps([stamp, payload], separators=(",", ":"))
    if len(text) > MAX_BYTES:
        return False
    return (
        _call(url, "write", lambda client: client.set(PREFIX + name, text, ex=EXPIRY)) is not None
    )


def clear(url: str) -> int:
    """Delete every shared index at ``url``; returns how many."""
    keys = _call(url, "clear", lambda client: list(client.scan_iter(PREFIX + "*")))
    if not keys:
        return 0
    return int(_call(url, "clear", lambda client: client.delete(*keys)) or 0)


def _call(url: str, what: str, command: Callable[[Any], Any]) -> Any:
    """``command(client)``, or None after a warning when Redis is missing, down or slow."""
    if url in _broken:
        return None
    try:
        import redis
    except ImportError:
        return _give_up(url, what, "the redis package is not installed (pip install redis)")
    try:
        client = redis.Redis.from_url(
            url, socket_timeout=TIMEOUT, socket_connect_timeout=TIMEOUT, retry_on_timeout=False
        )
        try:
            return command(client)
        finally:
            client.close()
    except (redis.RedisError, OSError, ValueError) as exc:
        return _give_up(url, what, f"{type(exc).__name__}: {exc}")


def _give_up(url: str, what: str, reason: str) -> None:
    _broken.add(url)
    log.warning(
        "shared discovery index at %s unusable (%s: %s); using the local index only",
        shown(url),
        what,
        reason,
    )
    return None


def shown(url: str) -> str:
    """``url`` without its password, for messages."""
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    if parts.password is None:
        return url
    return parts._replace(
        netloc=f"{parts.username or ''}:***@{parts.hostname}:{parts.port}"
    ).geturl()


def forget_failures() -> None:
    """Try Redis again (after ``reset_plugin_system()``)."""
    _broken.clear()
