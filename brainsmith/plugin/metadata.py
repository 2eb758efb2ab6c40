"""The decorator contract: which keywords each plugin type accepts, and their validation.

Shared by the decorators (at import time) and the source scanner (before import), so a
plugin's metadata is judged the same way whichever sees it first.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


PLUGIN_ATTRIBUTE = "__brainsmith_plugin__"  # the decorator's mark on a plugin object

PRIORITY_LEVELS = {"HIGHEST": 100, "HIGH": 75, "NORMAL": 50, "LOW": 25, "LOWEST": 0}
BACKEND_TYPES = ("hls", "rtl")

MAX_NAME = 100
_STR = "a string"
_STR_LIST = "a list of strings"
_NAME = (
    f"a name such as 'FoldBias': ASCII letters, digits and '_', not starting with a digit, "
    f"at most {MAX_NAME} characters (no ':', which separates framework:name)"
)
COMMON_KEYS = {
    "name": _NAME,
    "description": _STR,
    "priority": "an int 0-100 or one of HIGHEST, HIGH, NORMAL, LOW, LOWEST",
    "requires": _STR_LIST,
    "tools": _STR_LIST,
    "author": _STR,
    "version": _STR,
    "min_brainsmith_version": _STR,
    "max_brainsmith_version": _STR,
    "brainsmith_version": "a PEP 440 specifier string such as '>=0.1,<2'",
}
_STAGE = (
    "a lowercase word naming where the transform belongs, e.g. 'cleanup', 'topology_opt', "
    "'streamline', 'kernel_opt' or 'dataflow_opt'"
)
_FOLDING = (
    "a mapping of each folding attribute to the attribute it must divide, "
    "e.g. {'PE': 'NumChannels'}"
)
MAX_FOLDING = 4  # folding attributes of one kernel
TYPE_KEYS = {
    "transform": {"stage": _STAGE},
    "kernel": {"op_type": _STR, "domain": _STR, "infer_transform": _STR, "folding": _FOLDING},
    "backend": {"kernel": _NAME.replace("'FoldBias'", "'MVAU'"), "backend_type": "'hls' or 'rtl'"},
    "step": {},
}
REQUIRED_KEYS = {"backend": ("kernel", "backend_type")}


_ALLOWED = {plugin_type: {**COMMON_KEYS, **keys} for plugin_type, keys in TYPE_KEYS.items()}


def allowed_keys(plugin_type: str) -> dict[str, str]:
    return dict(_ALLOWED[plugin_type])


def validate_metadata(plugin_type: str, given: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """Check decorator keywords; return (normalised metadata, problems with their fixes)."""
    allowed = allowed_keys(plugin_type)
    problems: list[str] = []
    metadata: dict[str, Any] = {}
    for key, value in given.items():
        if key not in allowed:
            from brainsmith.plugin.names import suggest

            problems.append(
                f"unknown keyword '{key}'{suggest(key, list(allowed))} "
                f"(@{plugin_type} accepts: {', '.join(allowed)})"
            )
            continue
        try:
            metadata[key] = _check(key, value)
        except ValueError:
            problems.append(f"'{key}' must be {allowed[key]}, got {shown(value)}")
    for key in REQUIRED_KEYS.get(plugin_type, ()):
        if key not in given:
            problems.append(f"'{key}' is required for @{plugin_type} ({allowed[key]})")
    for key in ("min_brainsmith_version", "max_brainsmith_version", "brainsmith_version"):
        if key in metadata:
            from brainsmith.plugin.versions import check_version_text

            error = check_version_text(key, metadata[key])
            if error:
                problems.append(error)
    return metadata, problems


def is_plugin_name(value: object) -> bool:
    """An ASCII identifier of at most MAX_NAME characters: usable as ``tfm.Name``, in a
    blueprint and on the command line, and never mistaken for ``framework:name``."""
    return (
        isinstance(value, str)
        and 0 < len(value) <= MAX_NAME
        and value.isascii()
        and value.isidentifier()
    )


def shown(value: object, limit: int = 60) -> str:
    """``repr(value)``, cut to ``limit`` characters for messages."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _check(key: str, value: object) -> object:
    if key in ("name", "kernel"):
        if is_plugin_name(value):
            return value
        raise ValueError
    if key == "priority":
        if isinstance(value, str) and value.upper() in PRIORITY_LEVELS:
            return PRIORITY_LEVELS[value.upper()]
        if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= 100:
            return value
        raise ValueError
    if key == "backend_type":
        if value in BACKEND_TYPES:
            return value
        raise ValueError
    if key == "stage":
        word = isinstance(value, str) and value.isidentifier() and value.islower()
        if word and isinstance(value, str) and value.isascii() and len(value) <= MAX_NAME:
            return value
        raise ValueError
    if key == "folding":
        pairs = list(value.items()) if isinstance(value, dict) else []
        if 0 < len(pairs) <= MAX_FOLDING and all(map(is_plugin_name, sum(pairs, ()))):
            return dict(pairs)
        raise ValueError
    if COMMON_KEYS.get(key) == _STR_LIST:
        if isinstance(value, list | tuple) and all(isinstance(v, str) and v for v in value):
            return list(value)
        raise ValueError
    if isinstance(value, str) and (value or key == "description"):
        return value
    raise ValueError


# Keys an index record may hold besides the decorator's: where the plugin is, and what the
# QONNX/FINN adapters read from FINN's registries.
RECORD_KEYS = {
    "line": "a line number (an int >= 0)",
    "plugin_dir": "a folder path",
    "stage": _STR,
    "domain": _STR,
    "decomposes_into": "a list of kernel names",
}


def record_metadata_problem(plugin_type: str, metadata: object) -> str | None:
    """Why ``metadata`` of a persisted record is not what discovery could have written; None
    when every key is known and every value has its type (checked per record, so one bad
    record never reaches the code that uses its values)."""
    if not isinstance(metadata, dict):
        return "metadata is not a mapping"
    allowed = _ALLOWED[plugin_type]
    for key, value in metadata.items():
        if allowed.get(key) is _STR and type(value) is str and (value or key == "description"):
            continue  # the common cases, decided without a call
        if key == "line" and type(value) is int and value >= 0:
            continue
        if key in allowed and key != "name":
            try:
                _check(key, value)
            except ValueError:
                return f"'{key}' must be {allowed[key]}, got {shown(value)}"
            if key in ("min_brainsmith_version", "max_brainsmith_version", "brainsmith_version"):
                from brainsmith.plugin.versions import check_version_text

                error = check_version_text(key, value)
                if error:
                    return error
        elif key in RECORD_KEYS:
            if not _record_value_ok(key, value):
                return f"'{key}' must be {RECORD_KEYS[key]}, got {shown(value)}"
        else:
            return f"unknown metadata key {shown(key)}"
    return None


def _record_value_ok(key: str, value: object) -> bool:
    if key == "line":
        return isinstance(value, int) and not isinstance(value, bool) and value >= 0
    if key == "decomposes_into":
        return isinstance(value, list) and all(is_plugin_name(v) for v in value)
    return isinstance(value, str) and bool(value)


def first_doc_line(doc: str | None) -> str:
    for line in (doc or "").strip().splitlines():
        if line.strip():
            return line.strip()
    return ""
