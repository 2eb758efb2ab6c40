"""The decorator contract: which keywords each plugin type accepts, and their validation.

Shared by the decorators (at import time) and the source scanner (before import), so a
plugin's metadata is judged the same way whichever sees it first.
"""

from __future__ import annotations

from brainsmith.plugin.values import (
    INVALID,
    MAX_NAME,
    any_string,
    list_of,
    nonempty_string,
    one_of,
    plugin_name,
    whole,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from brainsmith.plugin.values import Check


PLUGIN_ATTRIBUTE = "__brainsmith_plugin__"  # the decorator's mark on a plugin object

PRIORITY_LEVELS = {"HIGHEST": 100, "HIGH": 75, "NORMAL": 50, "LOW": 25, "LOWEST": 0}
BACKEND_TYPES = ("hls", "rtl")

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
_REWRITES = "a list of transform names (e.g. ['MoveScalarMulPastClip'])"
_INFER_ORDER = (
    "'first', 'last' or 'before:'/'after:' a FINN infer transform, "
    "e.g. 'before:InferThresholdingLayer'"
)
_FOLDING = (
    "a mapping of each folding attribute to the attribute it must divide, "
    "e.g. {'PE': 'NumChannels'}"
)
MAX_FOLDING = 4  # folding attributes of one kernel
TYPE_KEYS = {
    "transform": {"stage": _STAGE},
    "kernel": {
        "op_type": _STR,
        "domain": _STR,
        "infer_transform": _STR,
        "rewrites": _REWRITES,
        "infer_order": _INFER_ORDER,
        "folding": _FOLDING,
    },
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
        checked = METADATA_CHECKS[key](value)
        if checked is INVALID:
            problems.append(f"'{key}' must be {allowed[key]}, got {shown(value)}")
        else:
            metadata[key] = checked
    for key in REQUIRED_KEYS.get(plugin_type, ()):
        if key not in given:
            problems.append(f"'{key}' is required for @{plugin_type} ({allowed[key]})")
    for key in ("min_brainsmith_version", "max_brainsmith_version", "brainsmith_version"):
        if key in metadata:
            from brainsmith.plugin.lifecycle.versions import check_version_text

            error = check_version_text(key, metadata[key])
            if error:
                problems.append(error)
    return metadata, problems


def is_plugin_name(value: object) -> bool:
    """An ASCII identifier of at most MAX_NAME characters: usable as ``tfm.Name``, in a
    blueprint and on the command line, and never mistaken for ``framework:name``."""
    return plugin_name(value) is not INVALID


def shown(value: object, limit: int = 60) -> str:
    """``repr(value)``, cut to ``limit`` characters for messages."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


_percent = whole(0, 100)


def _priority(value: object) -> object:
    if isinstance(value, str) and value.upper() in PRIORITY_LEVELS:
        return PRIORITY_LEVELS[value.upper()]
    return _percent(value)


def _stage(value: object) -> object:
    if isinstance(value, str) and value.isascii() and value.isidentifier() and value.islower():
        return value if len(value) <= MAX_NAME else INVALID
    return INVALID


def _infer_order(value: object) -> object:
    """'first', 'last', or 'before:Name' / 'after:Name' (an identifier; whether it names one
    of FINN's infer transforms is checked when a build plans with the kernel)."""
    if value in ("first", "last"):
        return value
    if isinstance(value, str):
        where, _, name = value.partition(":")
        if where in ("before", "after") and name.isascii() and name.isidentifier():
            return value
    return INVALID


def _folding(value: object) -> object:
    pairs = list(value.items()) if isinstance(value, dict) else []
    if 0 < len(pairs) <= MAX_FOLDING and all(map(is_plugin_name, sum(pairs, ()))):
        return dict(pairs)
    return INVALID


METADATA_CHECKS: dict[str, Check] = {  # what each key of COMMON_KEYS and TYPE_KEYS accepts
    "name": plugin_name,
    "description": any_string,
    "priority": _priority,
    "requires": list_of(nonempty_string, tuples=True, into=list),
    "tools": list_of(nonempty_string, tuples=True, into=list),
    "author": nonempty_string,
    "version": nonempty_string,
    "min_brainsmith_version": nonempty_string,
    "max_brainsmith_version": nonempty_string,
    "brainsmith_version": nonempty_string,
    "stage": _stage,
    "op_type": nonempty_string,
    "domain": nonempty_string,
    "infer_transform": nonempty_string,
    "rewrites": list_of(nonempty_string, tuples=True, into=list),
    "infer_order": _infer_order,
    "folding": _folding,
    "kernel": plugin_name,
    "backend_type": one_of(BACKEND_TYPES),
}


# Keys an index record may hold besides the decorator's: where the plugin is, and what the
# QONNX/FINN adapters read from FINN's registries.
RECORD_KEYS = {
    "line": "a line number (an int >= 0)",
    "plugin_dir": "a folder path",
    "stage": _STR,
    "domain": _STR,
    "decomposes_into": "a list of kernel names",
}
RECORD_CHECKS: dict[str, Check] = {  # what each key of RECORD_KEYS accepts
    "line": whole(0),
    "plugin_dir": nonempty_string,
    "stage": nonempty_string,
    "domain": nonempty_string,
    "decomposes_into": list_of(plugin_name, into=list),
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
            if METADATA_CHECKS[key](value) is INVALID:
                return f"'{key}' must be {allowed[key]}, got {shown(value)}"
            if key in ("min_brainsmith_version", "max_brainsmith_version", "brainsmith_version"):
                from brainsmith.plugin.lifecycle.versions import check_version_text

                error = check_version_text(key, value)
                if error:
                    return error
        elif key in RECORD_KEYS:
            if RECORD_CHECKS[key](value) is INVALID:
                return f"'{key}' must be {RECORD_KEYS[key]}, got {shown(value)}"
        else:
            return f"unknown metadata key {shown(key)}"
    return None


def first_doc_line(doc: str | None) -> str:
    for line in (doc or "").strip().splitlines():
        if line.strip():
            return line.strip()
    return ""
