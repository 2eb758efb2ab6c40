"""Typed checks of blueprint values; each failure is reported where the value was written."""

from __future__ import annotations

import math
import os

from brainsmith.blueprint.document import Document, Path
from brainsmith.blueprint.errors import Diagnostics, describe, quote
from brainsmith.plugin.names import suggest
from brainsmith.plugin.values import INVALID, whole

TYPE_CHECKING = False
if TYPE_CHECKING:
    from brainsmith.files import Json


def label(path: Path) -> str:
    """``("hw_compiler", "kernels", 1)`` -> ``hw_compiler.kernels[1]``."""
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or "the blueprint"


class Checker:
    """Validates values of one merged blueprint document, collecting every problem."""

    def __init__(self, doc: Document, diag: Diagnostics, elsewhere: dict[str, str]) -> None:
        self.doc = doc
        self.diag = diag
        self.elsewhere = elsewhere  # key -> its full dotted place, for misplaced keys

    def fail(
        self, path: Path, what: str, expected: str = "", hint: str = "", key: bool = False
    ) -> None:
        self.diag.error(self.doc.locate(path, key), what, expected, hint)

    def wrong(self, path: Path, value: object, expected: str) -> None:
        self.fail(path, f"{label(path)} is {describe(value)}", expected)

    def mapping(self, path: Path, value: object, keys: dict[str, str]) -> Json:
        """The known keys of the mapping at ``path``; unknown keys are reported."""
        if not isinstance(value, dict):
            self.wrong(path, value, f"a mapping of {', '.join(keys)}")
            return {}
        known = {}
        for key, item in value.items():
            if key in keys:
                known[key] = item
                continue
            where = f"in {label(path)}" if path else "at the top level"
            self.fail(
                (*path, key),
                f"unknown key {quote(key)} {where}",
                f"one of {', '.join(keys)}",
                self._key_hint(key, list(keys)),
                key=True,
            )
        return known

    def _key_hint(self, key: object, keys: list[str]) -> str:
        if not isinstance(key, str):
            return ""
        hint = suggest(key, keys)
        if not hint and key in self.elsewhere:
            hint = f"; did you mean '{self.elsewhere[key]}'?"
        return hint

    def folder_of(self, path: Path) -> str:
        """The folder a relative path at ``path`` is taken from: its file's."""
        return os.path.dirname(self.doc.source_of(path).path)

    def text(self, path: Path, value: object, expected: str) -> str | None:
        if isinstance(value, str) and value.strip() and value.isprintable():
            return value
        self.wrong(path, value, expected)
        return None

    def flag(self, path: Path, value: object, expected: str) -> bool | None:
        """true or false (YAML's booleans), nothing else."""
        if isinstance(value, bool):
            return value
        self.wrong(path, value, expected)
        return None

    def number(self, path: Path, value: object, expected: str) -> float | None:
        """A finite number > 0."""
        if isinstance(value, int) and not isinstance(value, bool) and 0 < value < 1e300:
            return float(value)
        if isinstance(value, float) and math.isfinite(value) and value > 0:
            return value
        self._numeric(path, value, expected)
        return None

    def tolerance(self, path: Path, value: object, expected: str) -> float | None:
        """A finite number >= 0."""
        if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 1e300:
            return float(value)  # (a huge int would overflow float() and math.isfinite)
        if isinstance(value, float) and math.isfinite(value) and value >= 0:
            return value
        self._numeric(path, value, expected)
        return None

    def whole(
        self, path: Path, value: object, expected: str, high: int | None = None, minimum: int = 1
    ) -> int | None:
        """A whole number from ``minimum`` (1) to ``high``."""
        if isinstance(value, int) and whole(minimum, high)(value) is not INVALID:
            return value
        self._numeric(path, value, expected)
        return None

    def _numeric(self, path: Path, value: object, expected: str) -> None:
        hint = ""
        if isinstance(value, str):
            try:
                float(value)
                hint = " (YAML reads it as text; write the number in full, e.g. 1000000 or 5.0)"
            except ValueError:
                pass
        self.fail(path, f"{label(path)} is {describe(value)}", expected + hint)

    def choice(self, path: Path, value: object, choices: tuple[str, ...]) -> str | None:
        if isinstance(value, str) and value in choices:
            return value

        hint = suggest(value, list(choices)) if isinstance(value, str) else ""
        self.fail(path, f"{label(path)} is {describe(value)}", f"one of {', '.join(choices)}", hint)
        return None

    def file_path(self, path: Path, value: object, expected: str, must_exist: bool) -> str | None:
        """An absolute path; a relative one is taken from the folder of the file that set it."""
        text = self.text(path, value, expected)
        if text is None:
            return None
        try:
            os.fsencode(text)
        except UnicodeError:
            self.wrong(path, value, expected)
            return None
        base = self.folder_of(path)
        full = os.path.normpath(os.path.join(base, os.path.expanduser(text)))
        if must_exist and not os.path.isfile(full):
            what = "not a file" if os.path.exists(full) else "no such file"
            self.fail(path, f"{label(path)} names {quote(text, 1000)}: {what} ({full})", expected)
            return None
        return full
