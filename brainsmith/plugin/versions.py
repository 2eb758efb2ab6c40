"""Semantic versions of brainsmith and what a plugin declares it works with."""

from __future__ import annotations

from functools import total_ordering


@total_ordering
class VersionInfo:
    """A ``major.minor.patch`` version; compatible means same major, and not older."""

    __slots__ = ("major", "minor", "patch")

    def __init__(self, major: int, minor: int = 0, patch: int = 0) -> None:
        for part in (major, minor, patch):
            if not isinstance(part, int) or isinstance(part, bool) or part < 0:
                raise ValueError(f"version parts must be non-negative ints, got {part!r}")
        self.major, self.minor, self.patch = major, minor, patch

    @classmethod
    def parse(cls, text: str) -> VersionInfo:
        from packaging.version import InvalidVersion, Version

        try:
            release = Version(text).release
        except InvalidVersion:
            raise ValueError(f"not a version: {text!r} (expected e.g. '1.2.0')") from None
        parts = [*release, 0, 0][:3]
        return cls(*parts)

    @classmethod
    def current(cls) -> VersionInfo:
        from brainsmith import __version__

        return cls.parse(__version__)

    def _key(self) -> tuple[int, int, int]:
        return (self.major, self.minor, self.patch)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, VersionInfo) and self._key() == other._key()

    def __lt__(self, other: VersionInfo) -> bool:
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
            return f"'brainsmith_version' must be a PEP 440 specifier such as '>=0.1,<2', got {text!r}"
        return None
    try:
        VersionInfo.parse(text)
    except ValueError:
        return f"'{key}' must be a version such as '0.1.0', got {text!r}"
    return None


def incompatibility(metadata: dict) -> str | None:
    """Why this brainsmith cannot run a plugin with ``metadata``; None when it can."""
    keys = ("min_brainsmith_version", "max_brainsmith_version", "brainsmith_version")
    if not any(k in metadata for k in keys):
        return None
    from brainsmith import __version__

    current = VersionInfo.current()
    low = metadata.get("min_brainsmith_version")
    if low and current < VersionInfo.parse(low):
        return f"needs brainsmith >= {low}, this is {__version__}"
    high = metadata.get("max_brainsmith_version")
    if high and current > VersionInfo.parse(high):
        return f"needs brainsmith <= {high}, this is {__version__}"
    spec = metadata.get("brainsmith_version")
    if spec:
        from packaging.specifiers import SpecifierSet

        if not SpecifierSet(spec).contains(__version__, prereleases=True):
            return f"needs brainsmith {spec}, this is {__version__}"
    return None
