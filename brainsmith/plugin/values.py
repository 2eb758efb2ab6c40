"""Checks of single values, shared by the tables that declare what each setting accepts.

A check takes a value and returns it, converted where its kind asks for it (seconds as a
float, a list as a tuple), or ``INVALID`` when the value is not of its kind. The caller's
table holds the check and the expected text of each key, and reports ``INVALID`` in its
own words (a ConfigError, a problem of a plugin's metadata, a blueprint diagnostic).
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

    Check = Callable[[object], object]  # the value converted, or INVALID


class _Invalid:
    __slots__ = ()

    def __repr__(self) -> str:
        return "INVALID"


INVALID: object = _Invalid()  # what a check returns for a value not of its kind

MAX_NAME = 100  # characters of a plugin name


def boolean(value: object) -> object:
    """``true`` or ``false`` (not 0 or 1)."""
    return value if isinstance(value, bool) else INVALID


def any_string(value: object) -> object:
    """Any string, also the empty one."""
    return value if isinstance(value, str) else INVALID


def nonempty_string(value: object) -> object:
    """A string that is not empty."""
    return value if isinstance(value, str) and value else INVALID


def pathname(value: object) -> object:
    """A non-empty string the OS accepts as a path (no NUL byte)."""
    return value if isinstance(value, str) and value and "\0" not in value else INVALID


def plugin_name(value: object) -> object:
    """An ASCII identifier of at most MAX_NAME characters: usable as ``tfm.Name``, in a
    blueprint and on the command line, and never mistaken for ``framework:name``."""
    if isinstance(value, str) and 0 < len(value) <= MAX_NAME and value.isascii():
        return value if value.isidentifier() else INVALID
    return INVALID


def seconds(value: object) -> object:
    """A number of seconds >= 0, as a float (an infinite or huge one as 1e300)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return INVALID
    number = float(max(min(value, 1e300), -1.0))  # huge ints would overflow float()
    return number if number >= 0 else INVALID  # not negative, not NaN


def whole(low: int, high: int | None = None) -> Check:
    """A check of a whole number (an int, not a bool) from ``low`` to ``high``."""

    def check(value: object) -> object:
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            return INVALID
        return value if high is None or value <= high else INVALID

    return check


def one_of(choices: tuple[str, ...]) -> Check:
    """A check of one of ``choices``; it returns the choice itself."""

    def check(value: object) -> object:
        return choices[choices.index(value)] if value in choices else INVALID

    return check


def list_of(
    item: Check, *, tuples: bool = False, into: Callable[[list[object]], object] = tuple
) -> Check:
    """A check of a list (or a tuple, with ``tuples``) whose every element passes ``item``;
    it returns the checked elements collected ``into`` (a tuple unless told)."""

    def check(value: object) -> object:
        if not (isinstance(value, list) or (tuples and isinstance(value, tuple))):
            return INVALID
        items = [item(element) for element in value]
        return INVALID if any(element is INVALID for element in items) else into(items)

    return check
