"""Blueprint diagnostics: one ``file:line:column: error: ...`` line per problem, all at once."""

from __future__ import annotations

from dataclasses import dataclass

from brainsmith.plugin.errors import PluginError

MAX_PROBLEMS = 50  # like a compiler's -fmax-errors: a garbage file stops early, and fast


@dataclass(frozen=True)
class Problem:
    """One problem in a blueprint file; ``line``/``column`` are 1-based, 0 when unknown."""

    file: str
    line: int
    column: int
    message: str
    severity: str = "error"  # "error" or "note"

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}:{self.column}" if self.line else self.file
        return f"{where}: {self.severity}: {self.message}"


class BlueprintError(PluginError, ValueError):
    """A blueprint that cannot be used; ``problems`` lists every problem found, in file order."""

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = list(problems)
        super().__init__("\n".join(str(p) for p in self.problems))


class Diagnostics:
    """Collects problems while a blueprint is read, validated and resolved."""

    def __init__(self) -> None:
        self.problems: list[Problem] = []

    def error(
        self, where: tuple[str, int, int], what: str, expected: str = "", hint: str = ""
    ) -> None:
        """Record ``what; expected <expected><hint>`` at ``where`` = (file, line, column)."""
        message = what + (f"; expected {expected}" if expected else "") + hint
        message = " ".join(part.strip() for part in message.splitlines())  # one line each
        self.problems.append(Problem(*where, message))
        if len(self.problems) >= MAX_PROBLEMS:
            self.problems.append(
                Problem(*where, f"too many problems; stopped after {MAX_PROBLEMS}")
            )
            self.raise_if_any()

    def raise_if_any(self) -> None:
        if self.problems:
            raise BlueprintError(self.problems)


def quote(value: object, limit: int = 60) -> str:
    """``'text'`` for a name or key as written; control characters escaped, long text cut."""
    text = value if isinstance(value, str) else repr(value)
    if len(text) > limit:
        text = text[: limit - 3] + "..."
    if not isinstance(value, str):
        return text
    return f"'{text}'" if text.isprintable() else ascii(text)


def describe(value: object) -> str:
    """What a YAML value is, for ``got ...`` in messages."""
    if value is None:
        return "nothing (null)"
    if isinstance(value, bool):
        return f"a boolean ({str(value).lower()})"
    if isinstance(value, int | float):
        return f"the number {quote(value)}"
    if isinstance(value, str):
        return f"the text {quote(value)}"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return type(value).__name__
