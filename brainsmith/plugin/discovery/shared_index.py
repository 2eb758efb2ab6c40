"""The discovery index shared by many machines through Redis (``cache_backend: redis://...``).

The workers of a cluster that run one environment (a shared virtualenv, one container
image) then pay one cold scan between them: the first to scan publishes the index under the
key the file index is named by (interpreter and ``sys.prefix``), the others read it when their
own file index is missing. What Redis returns is untrusted input: it is JSON (never marshal or
pickle), at most ``MAX_BYTES``, plain lists, dicts and scalars, with the same stamp the file
index needs, and its records then go through the same checks as file records
(``PluginSpec.from_record``, ``trust.from_source``).

With a key (``plugin_system.cache_key_file``) every index is signed with HMAC-SHA256 over its
name, stamp and payload, and an index without that signature is refused. Redis is spoken to
through redis-py (RESP2, one attempt, the URL's TLS, password and database): connecting and the
command together have one deadline, however slowly the server sends, so a server that is down,
slow, dribbles bytes or is no Redis at all costs one warning and the local index (or a scan),
never a failed command or a hang.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import stat
import threading
from functools import partial

from brainsmith.plugin import log
from brainsmith.plugin.settings.config import masked_url
from brainsmith.plugin.settings.memo import MAX_BYTES, is_plain

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Protocol, TypeVar

    from redis import Redis

    Reply = TypeVar("Reply")

    class Connection(Protocol):
        """What the handshake uses of a redis-py connection."""

        def on_connect(self) -> None: ...
        def send_command(self, *args: object) -> None: ...
        def read_response(self) -> object: ...


TIMEOUT = 1.0  # seconds: deadline of connecting (lookup, TCP, TLS, AUTH, SELECT) and one command
PREFIX = "brainsmith:index:"
EXPIRY = 30 * 24 * 3600  # seconds: an environment nobody starts any more leaves nothing behind
SIGNATURE = "signature"  # the payload field holding the HMAC of a signed index
KEY_BYTES = 16  # a key file holds at least this much secret

_broken: set[str] = set()  # URLs that failed in this process: not tried again


class Fetched:
    """An index read from Redis: its payload, the SHA-256 of what Redis held, whether signed."""

    __slots__ = ("digest", "payload", "signed")

    def __init__(self, payload: dict[str, object], digest: str, signed: bool) -> None:
        self.payload = payload
        self.digest = digest
        self.signed = signed


class Refused(Exception):
    """Redis holds an index this machine will not use; the message says why (for health)."""


TOO_LARGE = object()  # what ``read`` gets for a value over MAX_BYTES (left on the server)


def read(url: str, name: str, stamp: object, key: bytes | None) -> Fetched | None:
    """The index stored under ``name`` if its stamp equals ``stamp`` (and, with ``key``, it
    is signed with it); None when there is none. Raises ``Refused`` for a forged one."""

    def fetch(redis: Redis) -> object:
        """The value, never more than MAX_BYTES + 1 of it; nothing when it is larger."""
        if redis.strlen(PREFIX + name) > MAX_BYTES:
            return TOO_LARGE
        return redis.getrange(PREFIX + name, 0, MAX_BYTES)

    raw = _call(url, "read", fetch)
    if raw is TOO_LARGE or (isinstance(raw, bytes) and len(raw) > MAX_BYTES):  # (or grew)
        log.warning(
            "shared index %s at %s: over %d bytes; ignored", name, masked_url(url), MAX_BYTES
        )
        return None
    if not (raw and isinstance(raw, bytes)):
        return None

    record = _decoded(raw, f"shared index {name} at {masked_url(url)}")
    if record is None or record[0] != stamp:
        return None  # (another brainsmith version or scanner: not an error)
    payload = record[1]
    signature = payload.pop(SIGNATURE, None)
    if key is not None:
        _check_signature(signature, key, name, stamp, payload)
    return Fetched(payload, hashlib.sha256(raw).hexdigest(), key is not None)


def _decoded(raw: bytes, what: str) -> tuple[object, dict[str, object]] | None:
    """``(stamp, payload)`` of a value read from Redis; None (after a warning) for one that
    is not JSON of that shape."""

    try:
        record = json.loads(raw)
    except (ValueError, RecursionError):  # (RecursionError: nested beyond Python's limit)
        log.warning("%s is not JSON; ignored", what)
        return None
    if not (
        isinstance(record, list)
        and len(record) == 2
        and isinstance(record[1], dict)
        and is_plain(record)
    ):
        log.warning("%s holds unexpected data; ignored", what)
        return None
    return record[0], record[1]


def _check_signature(
    signature: object, key: bytes, name: str, stamp: object, payload: dict[str, object]
) -> None:
    """Raises ``Refused`` unless ``signature`` is ``payload``'s with ``key``."""
    if not isinstance(signature, str):
        raise Refused("not signed with the key of plugin_system.cache_key_file; ignored")

    expected = sign(key, name, stamp, payload).encode()
    if not hmac.compare_digest(signature.encode("utf-8", "replace"), expected):
        raise Refused("signature does not match; ignored")


def write(
    url: str, name: str, stamp: object, payload: Mapping[str, object], key: bytes | None
) -> bool:
    """Publish ``payload`` under ``name`` (signed with ``key`` if given); False (after a
    warning) when Redis cannot be used."""

    if key is not None:
        payload = {**payload, SIGNATURE: sign(key, name, stamp, payload)}
    text = json.dumps([stamp, payload], separators=(",", ":"))
    if len(text) > MAX_BYTES:
        return False
    return _call(url, "write", lambda redis: redis.set(PREFIX + name, text, ex=EXPIRY)) is True


def sign(key: bytes, name: str, stamp: object, payload: object) -> str:
    """HMAC-SHA256 of the index's name, stamp and payload (canonical JSON), in hex."""

    try:
        body = json.dumps([name, stamp, payload], sort_keys=True, separators=(",", ":"))
    except ValueError:  # a number JSON cannot hold: matches no signature
        return ""
    return hmac.new(key, body.encode(), hashlib.sha256).hexdigest()


def clear(url: str) -> int:
    """Delete every shared index at ``url``; returns how many."""

    def delete_page(cursor: int, redis: Redis) -> tuple[int, int]:
        cursor, keys = redis.scan(cursor, match=PREFIX + "*", count=500)
        return int(cursor), int(redis.delete(*keys)) if keys else 0

    cursor, deleted = 0, 0
    while True:  # one page (SCAN and DEL) per deadline
        page: tuple[int, int] | None = _call(url, "clear", partial(delete_page, cursor))
        if page is None:
            return deleted
        cursor, deleted = page[0], deleted + page[1]
        if cursor == 0:
            return deleted


def load_key(path: str) -> bytes:
    """The secret in key file ``path`` (surrounding whitespace removed). Raises ``Refused``
    unless it is a regular file of this user's that nobody else may read, as cache files are
    checked."""

    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(path, flags | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        why = "is a symbolic link" if os.path.islink(path) else f"cannot be read ({exc.strerror})"
        raise Refused(f"key file {path} {why}; not used") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > 4096:
            raise Refused(f"key file {path} is not a regular file of at most 4 KiB; not used")
        if hasattr(os, "getuid") and st.st_uid != os.getuid():
            raise Refused(f"key file {path} belongs to another user; not used")
        if st.st_mode & 0o077:
            raise Refused(
                f"key file {path} may be read by other users (run: chmod 600 {path}); not used"
            )
        secret = os.read(fd, 4097).strip()
    finally:
        os.close(fd)
    if len(secret) < KEY_BYTES:
        raise Refused(f"key file {path} holds fewer than {KEY_BYTES} bytes; not used")
    return secret


def _call(url: str, what: str, command: Callable[[Redis], Reply]) -> Reply | None:
    """``command(client)`` on a redis-py client of ``url`` within ``TIMEOUT`` (connecting
    included), or None after a warning when Redis is missing, down, slow or no Redis. The
    command runs in a thread of its own; at the deadline its socket is shut down, which ends it."""
    if url in _broken:
        return None
    try:
        import redis
        from redis.backoff import NoBackoff
        from redis.retry import Retry
    except ImportError:
        reason = "the redis package is not installed (pip install 'brainsmith[cluster]')"
        _give_up(url, what, reason)
        return None
    late = threading.Event()
    clients: list[Redis] = []
    replies: list[Reply] = []
    failures: list[Exception] = []

    def run() -> None:
        try:
            client = redis.Redis.from_url(
                url,
                protocol=2,  # no HELLO
                socket_timeout=TIMEOUT,
                socket_connect_timeout=TIMEOUT,
                retry=Retry(NoBackoff(), 0),
                redis_connect_func=lambda connection: _handshake(connection, late),
            )
            clients.append(client)
            replies.append(command(client))
        except Exception as exc:  # whatever a peer that is no Redis makes redis-py raise
            failures.append(exc)

    worker = threading.Thread(target=run, name="brainsmith-redis", daemon=True)
    worker.start()
    worker.join(TIMEOUT)
    late.set()  # (before closing: a connection made after the close refuses to start)
    for client in clients:
        client.close()  # shuts down its sockets, which ends a worker still waiting on one
    if replies:
        return replies[0]
    if not failures:
        _give_up(url, what, f"TimeoutError: no complete reply within {TIMEOUT} s")
        return None
    value = failures[0]
    _give_up(url, what, f"{type(value).__name__}: {value or 'no reason given'}")
    return None


def _handshake(connection: Connection, late: threading.Event) -> None:
    """redis-py's start of a connection (AUTH, SELECT), then a PING that only a Redis server
    answers with PONG; refused once the deadline has passed."""
    import redis

    if late.is_set():
        raise redis.TimeoutError(f"connected after the deadline of {TIMEOUT} s")
    connection.on_connect()
    connection.send_command("PING")
    reply = connection.read_response()
    if reply != b"PONG":
        raise redis.ConnectionError(f"PING answered {reply!r:.40}: is it a Redis server?")


def _give_up(url: str, what: str, reason: str) -> None:
    _broken.add(url)
    log.warning(
        "shared discovery index at %s unusable (%s: %s); using the local index only",
        masked_url(url),
        what,
        reason,
    )
    return None


def forget_failures() -> None:
    """Try Redis again (after ``reset_plugin_system()``)."""
    _broken.clear()
