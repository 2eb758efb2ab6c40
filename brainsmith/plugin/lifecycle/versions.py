"""Semantic versions of brainsmith and what a plugin declares it works with.

A plugin may declare ``min_brainsmith_version``, ``max_brainsmith_version`` (both
``major.minor.patch``) and ``brainsmith_version`` (a PEP 440 specifier such as ``">=0.1,<2"``)
in its decorator, in a ``BundleInfo``, or in a module attribute
``BRAINSMITH_PLUGIN = {...}`` of a pip package's entry-point module or a loaded file.
A minimum alone means "this major version, from here on" (semantic versioning); add a
maximum or a specifier to allow more.
"""

from __future__ import annotations

from functools import total_ordering

from brainsmith.plugin.errors import PluginError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


VERSION_KEYS = ("min_brainsmith_version", "max_brainsmith_version", "brainsmith_version")
PACKAGE_KEYS = ("version", "description", "author", *VERSION_KEYS)
PACKAGE_ATTRIBUTE = "BRAINSMITH_PLUGIN"


class VersionError(PluginError, ValueError):
    """Text or parts that are no version (a ValueError too, as before it had its own class)."""


@total_ordering
class VersionInfo:
    """A ``major.minor.patch`` version; compatible means same major, and not older."""

    __slots__ = ("major", "minor", "patch")

    def __init__(self, major: int, minor: int = 0, patch: int = 0) -> None:
        for part in (major, minor, patch):
            if not isinstance(part, int) or isinstance(part, bool) or part < 0:
                raise VersionError(f"version parts must be non-negative ints, got {part!r}")
        self.major, self.minor, self.patch = major, minor, patch

    @classmethod
    def parse(cls, text: str) -> VersionInfo:
        """``"1.2"`` -> ``VersionInfo(1, 2, 0)``; pre-release and local parts are dropped."""
        from packaging.version import InvalidVersion, Version

        try:
            release = Version(str(text)).release
        except InvalidVersion:
            raise VersionError(f"not a version: {text!r} (expected e.g. '1.2.0')") from None
        parts = [*release, 0, 0][:3]
        return cls(*parts)

    @classmethod
    def coerce(cls, value: VersionInfo | str | tuple[int, ...]) -> VersionInfo:
        """A VersionInfo from a VersionInfo, ``"1.2.0"`` or ``(1, 2, 0)``."""
        if isinstance(value, VersionInfo):
            return value
        if isinstance(value, tuple):
            return cls(*value)
        if isinstance(value, str):
            return cls.parse(value)
        raise VersionError(f"not a version: {value!r} (expected '1.2.0' or VersionInfo(1, 2, 0))")

    @classmethod
    def current(cls) -> VersionInfo:
        """The running brainsmith's version."""
        from brainsmith.version import __version__

        return cls.parse(__version__)

    def _key(self) -> tuple[int, int, int]:
        return (self.major, self.minor, self.patch)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, VersionInfo) and self._key() == other._key()

    def __lt__(self, other: VersionInfo) -> bool:
        if not isinstance(other, VersionInfo):
            return NotImplemented
        return self._key() < other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __str__(self) -> str:
        return f"{self.major}.{self.minor}.{self.patch}"

    def __repr__(self) -> str:
        return f"VersionInfo({self.major}, {self.minor}, {self.patch})"

    def is_compatible_with(self, other: VersionInfo) -> bool:
        """True when code written for ``other`` runs on ``self`` (same major, self >= other)."""
        return self.major == other.major and self >= other


def check_version_text(key: str, text: str) -> str | None:
    """A problem message when ``text`` is not valid for ``key``; None when fine."""
    if key == "brainsmith_version":
        from packaging.specifiers import InvalidSpecifier, SpecifierSet

        try:
            SpecifierSet(text)
        except InvalidSpecifier:
            return (
                f"'brainsmith_version' must be a PEP 440 specifier such as '>=0.1,<2', got {text!r}"
            )
        return None
    try:
        VersionInfo.parse(text)
    except ValueError:
        return f"'{key}' must be a version such as '0.1.0', got {text!r}"
    return None


def incompatibility(metadata: dict[str, Any], version: str | None = None) -> str | None:
    """Why brainsmith ``version`` (default: this one) cannot run a plugin with ``metadata``;
    None when it can."""
    if not any(metadata.get(k) for k in VERSION_KEYS):
        return None
    if version is None:
        from brainsmith.version import __version__

        version = __version__
    current = VersionInfo.parse(version)
    try:
        low = _bound(metadata.get("min_brainsmith_version"))
        high = _bound(metadata.get("max_brainsmith_version"))
    except ValueError as exc:
        return str(exc)
    return _outside(current, version, low, high) or _unmatched(
        metadata.get("brainsmith_version"), version
    )


def _bound(value: VersionInfo | str | None) -> VersionInfo | None:
    return VersionInfo.coerce(value) if value else None


def _outside(
    current: VersionInfo, version: str, low: VersionInfo | None, high: VersionInfo | None
) -> str | None:
    """Why ``current`` is outside the declared bounds (``low`` alone: its major release)."""
    if low and current < low:
        return f"needs brainsmith >= {low}, this is {version}"
    if high and current > high:
        return f"needs brainsmith <= {high}, this is {version}"
    if low and not high and not current.is_compatible_with(low):
        return (
            f"needs brainsmith {low.major}.x (>= {low}), this is {version}; "
            "declare max_brainsmith_version if it also works here"
        )
    return None


def _unmatched(spec: str | None, version: str) -> str | None:
    """Why ``version`` does not satisfy the PEP 440 specifier ``spec`` (if one is declared)."""
    if not spec:
        return None
    from packaging.specifiers import InvalidSpecifier, SpecifierSet

    try:
        allowed = SpecifierSet(spec)
    except InvalidSpecifier:
        return f"invalid brainsmith_version specifier {spec!r}"
    if not allowed.contains(version, prereleases=True):
        return f"needs brainsmith {spec}, this is {version}"
    return None


def package_metadata(declared: object, where: str) -> tuple[dict[str, str], list[str]]:
    """Validate a ``BRAINSMITH_PLUGIN`` dict; return (metadata, problems naming ``where``)."""
    if not isinstance(declared, dict):
        return {}, [f"{where}: {PACKAGE_ATTRIBUTE} must be a dict of {', '.join(PACKAGE_KEYS)}"]
    metadata: dict[str, str] = {}
    problems: list[str] = []
    for key, value in declared.items():
        if key not in PACKAGE_KEYS:
            allowed = ", ".join(PACKAGE_KEYS)
            problems.append(f"{where}: unknown key {key!r} in {PACKAGE_ATTRIBUTE} ({allowed})")
        elif isinstance(value, VersionInfo):
            metadata[key] = str(value)
        elif not isinstance(value, str):
            problems.append(f"{where}: {PACKAGE_ATTRIBUTE}[{key!r}] must be a string: {value!r}")
        elif key in VERSION_KEYS and (error := check_version_text(key, value)):
            problems.append(f"{where}: {error}")
        else:
            metadata[key] = value
    return metadata, problems
