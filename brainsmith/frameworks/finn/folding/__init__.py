"""The folding search (``search``: per matrix layer the SIMD, PE and weight memory that meet
the target at the least estimated cost) and its typed record (``record``: the search or FINN's
SetFolding run, the record handed to the build and written to ``folding.json``).

``from brainsmith.frameworks.finn.folding.search import NAME`` still finds the search's public names
(deprecated: import them from ``brainsmith.frameworks.finn.folding.search``)."""

from __future__ import annotations

import warnings


def __getattr__(name: str) -> object:
    """The search's public names at their old path, with a deprecation warning."""
    if name.startswith("_") or name in ("search", "record"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from brainsmith.frameworks.finn.folding import search

    if not hasattr(search, name):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    warnings.warn(
        f"brainsmith.frameworks.finn.folding.{name} moved to brainsmith.frameworks.finn.folding.search",
        DeprecationWarning,
        stacklevel=2,
    )
    return getattr(search, name)
