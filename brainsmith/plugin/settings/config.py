"""Plugin-system configuration: environment > project ``.brainsmith/config.yaml`` > defaults.

The project file is found by walking up from the working directory (or named by
``BRAINSMITH_CONFIG``). Its parsed form is memoised beside it (``__pycache__/config.bsm``),
keyed by the file's stat, so a warm start does not pay for importing ``yaml``.
"""

from __future__ import annotations

import os

from brainsmith.plugin.errors import ConfigError
from brainsmith.plugin.settings import memo
from brainsmith.plugin.settings.memo import default_cache_dir
from brainsmith.plugin.values import (
    INVALID,
    boolean,
    list_of,
    nonempty_string,
    pathname,
    seconds,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

    from brainsmith.plugin.values import Check


DEFAULT_PRIORITY = ("brainsmith", "user", "*", "finn", "qonnx")
KNOWN_FRAMEWORKS = ("brainsmith", "user", "qonnx", "finn")
CONFIG_KEYS = {
    "cache_ttl": "a number of seconds >= 0",
    "frameworks": "a list of framework names (brainsmith, user, qonnx, finn, or a distribution)",
    "framework_priority": "a list of framework names; '*' stands for external packages",
    "performance_tracking": "true or false",
    "plugin_dirs": "a list of folder paths (relative to the project root)",
    "cache_dir": "a folder path",
    "debug": "true or false",
    "load_timeout": "a number of seconds >= 0 (0: no limit)",
    "cache_backend": "file, or redis://HOST:PORT/DB (rediss:// with TLS) for an index shared by many machines",
    "cache_key_file": "a file path (yours alone, mode 0600) holding the key that signs the shared index",
}
ENV_VARS = {
    "BRAINSMITH_PLUGIN_CACHE_TTL": "cache_ttl",
    "BRAINSMITH_PLUGIN_DEBUG": "debug",
    "BRAINSMITH_PLUGIN_DIRS": "plugin_dirs",
    "BRAINSMITH_CACHE_DIR": "cache_dir",
    "BRAINSMITH_PLUGIN_LOAD_TIMEOUT": "load_timeout",
    "BRAINSMITH_CACHE_URL": "cache_backend",
    "BRAINSMITH_CACHE_KEY_FILE": "cache_key_file",
}
# Settings brainsmith no longer reads: key -> what to write instead (given one, it refuses).
REMOVED_KEYS = {
    "discovery_mode": (
        "discovery modes are gone (every discovery reads the one index and imports a plugin "
        "only when it is used); to narrow what is registered, set plugin_system.frameworks"
    ),
}
REMOVED_ENV_VARS = {"BRAINSMITH_PLUGIN_MODE": "discovery_mode"}


class PluginConfig:
    """Validated settings of the plugin system."""

    __slots__ = (
        "cache_backend",
        "cache_dir",
        "cache_key_file",
        "cache_ttl",
        "debug",
        "framework_priority",
        "frameworks",
        "load_timeout",
        "performance_tracking",
        "plugin_dirs",
        "project_file",
    )

    def __init__(self) -> None:
        self.cache_ttl: float = 300.0
        self.frameworks: tuple[str, ...] | None = None  # None: every framework
        self.framework_priority: tuple[str, ...] = DEFAULT_PRIORITY
        self.performance_tracking: bool = True
        self.plugin_dirs: tuple[str, ...] = ()
        self.cache_dir: str = default_cache_dir()
        self.cache_backend: str = "file"  # or a redis:// URL: the index shared by many machines
        self.cache_key_file: str | None = None  # the key signing the shared index; None: unsigned
        self.debug: bool = False
        self.load_timeout: float = 0.0  # seconds a plugin import may take; 0: no limit
        self.project_file: str | None = None

    def framework_enabled(self, framework: str) -> bool:
        return self.frameworks is None or framework in self.frameworks

    def as_dict(self) -> dict[str, object]:
        return {key: getattr(self, key) for key in self.__slots__}


def find_project_file(start: str | None = None) -> str | None:
    """The nearest ``.brainsmith/config.yaml`` at or above ``start`` (default: the cwd)."""
    explicit = os.environ.get("BRAINSMITH_CONFIG")
    if explicit:
        return _named_config(explicit)
    return _nearest_config(os.path.abspath(start or os.getcwd()))


def _named_config(explicit: str) -> str:
    """The file ``BRAINSMITH_CONFIG`` names, which must be one."""
    if not os.path.isfile(explicit):
        raise ConfigError(
            f"BRAINSMITH_CONFIG names {explicit!r}, which is not a file", "BRAINSMITH_CONFIG"
        )
    return os.path.abspath(explicit)


def _nearest_config(here: str) -> str | None:
    """The ``.brainsmith/config.yaml`` of ``here`` or of the nearest folder above it."""
    while True:
        candidate = os.path.join(here, ".brainsmith", "config.yaml")
        if os.path.isfile(candidate):
            return candidate
        parent = os.path.dirname(here)
        if parent == here:
            return None
        here = parent


def load_config(start: str | None = None) -> PluginConfig:
    """Build the effective configuration (raises ConfigError naming the bad key)."""
    config = PluginConfig()
    path = find_project_file(start)
    if path:
        config.project_file = path
        section = read_project_section(path)
        root = os.path.dirname(os.path.dirname(path))
        for key, value in section.items():
            _apply(config, key, value, f"{path}: plugin_system.{key}", root)
    _refuse_removed_env_vars()
    for var, key in ENV_VARS.items():
        raw = os.environ.get(var)
        if raw is not None and raw != "":
            _apply(config, key, _from_env(key, raw), f"environment variable {var}", os.getcwd())
    return config


def _refuse_removed_env_vars() -> None:
    """Refuse a set environment variable of REMOVED_ENV_VARS, naming it and what to do."""
    for var, key in REMOVED_ENV_VARS.items():
        if os.environ.get(var):
            raise ConfigError(
                f"environment variable {var} is no longer read: unset it; {REMOVED_KEYS[key]}",
                var,
                f"plugin_system.{key}",
            )


def read_project_section(path: str) -> dict[str, object]:
    """The ``plugin_system`` mapping of a project config file.

    Its parsed form is memoised beside the file, in ``.brainsmith/__pycache__/config.bsm``
    (as Python keeps bytecode beside sources), keyed by the file's size, mtime, inode and
    ctime. So only someone who could edit config.yaml can change what the memo says, and
    nothing is written to a cache directory before config.yaml had its say about
    ``cache_dir``. The memo is used only when that folder is the user's own (see ``memo``);
    otherwise the file is parsed each time."""

    try:
        st = os.stat(path)
    except OSError as exc:
        raise ConfigError(f"cannot read config file {path}: {exc.strerror}", path) from None
    stamp = [path, st.st_mtime_ns, st.st_size, st.st_ino, st.st_ctime_ns]
    folder = memo_folder(path)
    cached = memo.read("config", stamp, folder, quiet=True)
    if isinstance(cached, dict) and all(key in CONFIG_KEYS for key in cached):
        return cached
    section = _parse_project_file(path)
    memo.write("config", stamp, section, folder, quiet=True)
    return section


def memo_folder(path: str) -> str:
    """Where the parsed form of the project file ``path`` is kept: beside it."""
    return os.path.join(os.path.dirname(os.path.abspath(path)), "__pycache__")


def _parse_project_file(path: str) -> dict[str, object]:
    from brainsmith.safe_yaml import YAMLInputError, load_yaml_file

    try:
        document = load_yaml_file(path)
    except YAMLInputError as exc:
        raise ConfigError(str(exc), path) from None
    return _plugin_section(document, path)


def _plugin_section(document: object, path: str) -> dict[str, object]:
    """The ``plugin_system`` mapping of the parsed config file ``path`` ({} when absent)."""
    if document is None:
        return {}
    if not isinstance(document, dict):
        raise ConfigError(
            f"{path}: the config file must be a mapping with a 'plugin_system:' key", path
        )
    section = document.get("plugin_system", {})
    if section is None:
        return {}
    if not isinstance(section, dict):
        raise ConfigError(
            f"{path}: 'plugin_system' must be a mapping of {', '.join(CONFIG_KEYS)}",
            path,
            "plugin_system",
        )
    _check_keys(section, path)
    return section


def _check_keys(section: dict[object, object], path: str) -> None:
    """Refuse a key of ``plugin_system`` that is none of CONFIG_KEYS (a removed one with
    what to write instead)."""
    for key in section:
        if isinstance(key, str) and key in REMOVED_KEYS:
            raise ConfigError(
                f"{path}: plugin_system.{key} is no longer a setting: delete it; {REMOVED_KEYS[key]}",
                path,
                f"plugin_system.{key}",
            )
    unknown = [key for key in section if key not in CONFIG_KEYS]
    if unknown:
        raise ConfigError(
            f"{path}: unknown key plugin_system.{unknown[0]}; allowed keys: {', '.join(CONFIG_KEYS)}",
            path,
            f"plugin_system.{unknown[0]}",
        )


def _from_env(key: str, raw: str) -> object:
    """An environment variable's text as the value of ``key`` (checked like the file's)."""
    parse = ENV_PARSERS.get(key)
    return raw if parse is None else parse(raw)


def _env_boolean(raw: str) -> object:
    lowered = raw.strip().lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off"):
        return False
    return raw


def _env_number(raw: str) -> object:
    try:
        return float(raw)
    except ValueError:
        return raw


def _env_folders(raw: str) -> object:
    return [part for part in raw.split(os.pathsep) if part]


ENV_PARSERS: dict[str, Callable[[str], object]] = {  # the rest are taken as text
    "debug": _env_boolean,
    "cache_ttl": _env_number,
    "load_timeout": _env_number,
    "plugin_dirs": _env_folders,
}


def _cache_backend(value: object) -> object:
    return str(value) if value == "file" or _is_redis_url(value) else INVALID


CONFIG_CHECKS: dict[str, Check] = {  # what each key of CONFIG_KEYS accepts
    "cache_ttl": seconds,
    "frameworks": list_of(nonempty_string),
    "framework_priority": list_of(nonempty_string),
    "performance_tracking": boolean,
    "plugin_dirs": list_of(pathname),
    "cache_dir": pathname,
    "debug": boolean,
    "load_timeout": seconds,
    "cache_backend": _cache_backend,
    "cache_key_file": pathname,
}


def _apply(config: PluginConfig, key: str, value: object, where: str, root: str) -> None:
    checked = CONFIG_CHECKS[key](value)
    if checked is INVALID:
        source = where.rpartition(": plugin_system.")[0] or where.removeprefix(
            "environment variable "
        )
        raise ConfigError(
            f"{where}: invalid value {_shown_value(key, value)}; expected {CONFIG_KEYS[key]}",
            source,
            f"plugin_system.{key}",
        )
    setattr(config, key, _from_root(key, checked, root))


def _from_root(key: str, value: object, root: str) -> object:
    """A checked value with its relative paths taken from ``root`` (the project's folder,
    or the working directory for an environment variable)."""
    if key == "plugin_dirs" and isinstance(value, tuple):
        return tuple(os.path.normpath(os.path.join(root, folder)) for folder in value)
    if key in ("cache_dir", "cache_key_file"):
        return os.path.abspath(os.path.join(root, os.path.expanduser(str(value))))
    return value


def _shown_value(key: str, value: object) -> str:
    """``value`` for an error message: a URL's password masked, another value of
    ``cache_backend`` (which may hold one) named only by its type."""
    if key != "cache_backend":
        return repr(value)
    return repr(masked_url(value)) if isinstance(value, str) else f"of type {type(value).__name__}"


def masked_url(url: str) -> str:
    """``url`` without its password, for messages (also when it is no valid URL)."""
    scheme, separator, rest = url.partition("://")
    if not separator:
        return url
    end = min([i for i in (rest.find(c) for c in "/?#") if i >= 0] or [len(rest)])
    credentials, at, host = rest[:end].rpartition("@")
    if not at:
        return url
    user, colon, _ = credentials.partition(":")
    masked = f"{user}:***" if colon else "***"
    return f"{scheme}://{masked}@{host}{rest[end:]}"


def _is_redis_url(value: object) -> bool:
    """``redis://HOST[:PORT][/DB]`` or ``rediss://...`` (parsed again by the redis client)."""
    if not isinstance(value, str) or len(value) > 2000:
        return False
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(value)
        parts.port  # noqa: B018 (raises ValueError for a bad port)
    except ValueError:
        return False
    db = parts.path.strip("/")
    return (
        parts.scheme in ("redis", "rediss") and bool(parts.hostname) and (db == "" or db.isdigit())
    )
