"""Blueprint files: read with positions, follow ``extends``, merge, and locate every value.

Merging: the file named by ``extends`` is the base; mappings merge key by key, anything else
(lists, text, numbers) is replaced, and ``null`` drops an inherited value. ``name``,
``description`` and ``extends`` belong to each file and are not inherited. Every value keeps
the file it came from, so a problem is reported where it was written.
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass, field

from brainsmith.blueprint.errors import Diagnostics, quote
from brainsmith.blueprint.packaged import (
    PREFIX,
    is_packaged_reference,
    packaged_path,
    references,
)
from brainsmith.safe_yaml import (
    YAMLInputError,
    file_kind,
    load_yaml_with_marks,
    read_text,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from brainsmith.files import Json


PER_FILE_KEYS = ("name", "description", "extends")
MAX_EXTENDS = 16
Path = tuple[
    str | int | float | bool | None, ...
]  # a key path such as ("hw_compiler", "kernels", 0)
Where = tuple[str, int, int]  # (file as written, line, column), 1-based


@dataclass
class Source:
    """One blueprint file as parsed: ``display`` is the path as the user wrote it."""

    display: str
    path: str
    text: str
    data: Any  # the parsed YAML: a mapping, once the file passed read_document
    marks: dict[Path, tuple[int, int]]
    _line_starts: list[int] = field(default_factory=list, repr=False)

    def offset(self, line: int, column: int) -> int:
        if not self._line_starts:
            self._line_starts.extend([0, *(m.end() for m in re.finditer("\n", self.text))])
        return self._line_starts[min(line, len(self._line_starts)) - 1] + column - 1

    def position(self, offset: int) -> tuple[int, int]:
        line = self.text.count("\n", 0, offset) + 1
        return line, offset - (self.text.rfind("\n", 0, offset) + 1) + 1


class Document:
    """A blueprint and its bases merged into one mapping that remembers where values came from."""

    def __init__(self, sources: list[Source], complete: bool = True) -> None:
        self.sources = sources  # the file itself first, then what it extends, ...
        self.complete = complete  # False when a base could not be read
        self.top = sources[0]
        self.origin: dict[Path, Source] = {(): self.top}
        self.data: Json = {}
        for source in reversed(sources):
            body = {k: v for k, v in source.data.items() if k not in PER_FILE_KEYS}
            self.data = self._overlay(self.data, body, source, ())

    def _overlay(self, base: Json, child: Json, source: Source, path: Path) -> Json:
        merged = dict(base)
        for key, value in child.items():
            at = (*path, key)
            if isinstance(value, dict) and isinstance(merged.get(key), dict):
                merged[key] = self._overlay_mapping(merged[key], value, source, at)
                continue
            self._forget_below(at)
            self.origin[at] = source
            if value is None:
                merged.pop(key, None)
            else:
                merged[key] = value
        return merged

    def _overlay_mapping(self, base: Json, child: Json, source: Source, at: Path) -> Json:
        """A mapping the child file extends: merged key by key."""
        inherited = self.source_of(at)
        for kept in base:  # inherited keys stay located in the base
            self.origin.setdefault((*at, kept), inherited)
        merged = self._overlay(base, child, source, at)
        self.origin[at] = source
        return merged

    def _forget_below(self, at: Path) -> None:
        """The origins of what lay below ``at``, which the child replaces whole."""
        for stale in [p for p in self.origin if len(p) > len(at) and p[: len(at)] == at]:
            del self.origin[stale]

    def source_of(self, path: Path) -> Source:
        for size in range(len(path), -1, -1):
            source = self.origin.get(path[:size])
            if source is not None:
                return source
        return self.top

    def locate(self, path: Path, key: bool = False) -> Where:
        """Where the value at ``path`` was written (with ``key``: where its key was written)."""
        source = self.source_of(path)
        return locate_in(source, path, key)


def locate_in(source: Source, path: Path, key: bool = False) -> Where:
    mark = None
    for size in range(len(path), -1, -1):
        mark = source.marks.get(path[:size])
        if mark is not None:
            break
    line, column = mark or (1, 1)
    if key and path and path in source.marks and isinstance(path[-1], str):
        line, column = _key_position(source, path, line, column)
    return source.display, line, column


def _key_position(source: Source, path: Path, line: int, column: int) -> tuple[int, int]:
    """The marks give values' positions; a key is the last ``key:`` written before its value."""
    end = source.offset(line, column)
    parent = source.marks.get(path[:-1], (1, 1))
    start = min(source.offset(*parent), end)
    pattern = re.compile(r"(?<![\w-])['\"]?" + re.escape(str(path[-1])) + r"['\"]?[ \t]*:")

    starts = [m.start() for m in pattern.finditer(source.text, start, end)]
    return source.position(starts[-1]) if starts else (line, column)


def read_document(path: str, diag: Diagnostics) -> Document | None:
    """Read ``path`` and every file it extends; problems go to ``diag``."""
    sources: list[Source] = []
    seen: set[str] = set()  # real paths read so far
    before = len(diag.problems)
    display, requested_at = os.fspath(path), None
    while True:
        source = _read(display, requested_at, diag)
        if source is None:
            break
        sources.append(source)
        seen.add(os.path.realpath(source.path))
        extended = _extended(source, diag)
        if extended is None:
            break
        display, requested_at = extended
        if not _may_follow(display, requested_at, sources, seen, diag):
            break
    if not sources:
        return None
    return Document(sources, complete=len(diag.problems) == before)


def _extended(source: Source, diag: Diagnostics) -> tuple[str, Where] | None:
    """The file ``source`` extends and where it says so; None when it extends none, or names
    it wrongly (reported)."""
    extends = source.data.get("extends")
    if extends is None:
        return None
    requested_at = locate_in(source, ("extends",))
    if not isinstance(extends, str) or not extends.strip() or _bad_path(extends):
        diag.error(
            requested_at,
            f"'extends' is {quote(extends)}",
            "the path of another blueprint file, relative to this one, or brainsmith:NAME",
        )
        return None
    if not is_packaged_reference(extends):
        return os.path.normpath(
            os.path.join(os.path.dirname(source.display), extends)
        ), requested_at
    found = packaged_path(extends)
    if found is None:
        _unknown_packaged(extends, requested_at, diag)
        return None
    return found, requested_at


def _may_follow(
    display: str, requested_at: Where, sources: list[Source], seen: set[str], diag: Diagnostics
) -> bool:
    """Whether the chain may go on to ``display``: not a cycle, not too long (reported)."""
    if os.path.realpath(display) in seen:
        loop = " -> ".join([*(s.display for s in sources), display])
        diag.error(
            requested_at,
            f"'extends' cycle: {loop}",
            "a chain of blueprints that ends in one without 'extends'",
        )
        return False
    if len(sources) > MAX_EXTENDS:
        diag.error(
            requested_at,
            f"'extends' chain is longer than {MAX_EXTENDS} files",
            "a shorter chain of bases",
        )
        return False
    return True


def _read(display: str, requested_at: Where | None, diag: Diagnostics) -> Source | None:
    try:
        mode: int | None = os.stat(display).st_mode  # through symbolic links: what would be read
    except OSError:
        mode = None
    if mode is None or not stat.S_ISREG(mode):
        _not_a_file(display, requested_at, mode, diag)
        return None
    try:
        text = read_text(display)
        data, marks = load_yaml_with_marks(text, display)
    except YAMLInputError as exc:
        diag.error(*_yaml_problem(str(exc), display))
        return None
    source = Source(display, os.path.abspath(display), text, data, marks)
    if not isinstance(data, dict) or not data:
        got = "empty" if data is None or data == {} else "not a mapping"
        diag.error(
            locate_in(source, ()),
            f"the file is {got}",
            "a mapping of blueprint keys (name, extends, hw_compiler, steps, build)",
        )
        return None
    return source


def _not_a_file(
    display: str, requested_at: Where | None, mode: int | None, diag: Diagnostics
) -> None:
    """The error for a path that is missing (with the name it may mean) or not a file."""
    where = requested_at or (display, 0, 0)
    if mode is None:
        what = "file not found"
        hint = _missing_hint(display, requested_at[0]) if requested_at else ""
    else:  # it exists: suggesting another name would not help
        what, hint = f"{file_kind(mode)}, not a regular file", ""
    diag.error(where, f"cannot read {quote(display, 1000)}: {what}", "a blueprint YAML file", hint)


def _yaml_problem(message: str, display: str) -> tuple[Where, str]:
    rest = message[len(display) + 1 :] if message.startswith(display + ":") else message
    found = re.match(r"(\d+):(\d+): (.*)", rest, re.S)
    if found:
        return (display, int(found[1]), int(found[2])), found[3]
    return (display, 0, 0), rest.strip()


def _bad_path(text: str) -> bool:
    try:
        os.fsencode(text)
    except UnicodeError:
        return True
    return "\0" in text


def _unknown_packaged(extends: str, where: Where, diag: Diagnostics) -> None:
    names = references()
    close = _closest(_packaged_name(extends), names, _packaged_name)
    diag.error(
        where,
        f"no blueprint {quote(extends)} ships with brainsmith",
        "one of " + (", ".join(names) or "none (the package's blueprints folder is missing)"),
        _did_you_mean(close),
    )


def _missing_hint(display: str, requester: str) -> str:
    """Did-you-mean for a missing base: blueprint files beside it with a similar name (never
    the requester), else a packaged blueprint of a similar name (``brainsmith:base``)."""
    folder = os.path.dirname(display) or "."
    missing = os.path.basename(display)
    try:
        names = [
            name
            for name in os.listdir(folder)
            if name.endswith((".yaml", ".yml"))
            and name != missing
            and os.path.abspath(os.path.join(folder, name)) != os.path.abspath(requester)
        ]
    except OSError:
        names = []
    close = _closest(missing, names, _stem) or _closest(missing, references(), _packaged_name)
    return _did_you_mean(close)


def _stem(name: str) -> str:
    return os.path.splitext(name)[0]


def _packaged_name(reference: str) -> str:
    return reference[len(PREFIX) :]


def _closest(name: str, pool: list[str], key: Callable[[str], str]) -> list[str]:
    """The entries of ``pool`` whose ``key`` is like ``name``'s stem (ignoring case): file
    names are compared without their extension, which would make any two YAML files alike."""
    import difflib

    keyed = {key(entry).lower(): entry for entry in pool}
    found = difflib.get_close_matches(_stem(name).lower(), list(keyed), n=3, cutoff=0.6)
    return [keyed[k] for k in found]


def _did_you_mean(names: list[str]) -> str:
    return "; did you mean " + " or ".join(f"'{n}'" for n in names) + "?" if names else ""
