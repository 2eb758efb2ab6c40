"""Plugin and package names: ``framework:name`` splits, did-you-mean suggestions and
distribution-name normalisation."""

from __future__ import annotations


def split_name(name: str) -> tuple[str, str]:
    """``("finn", "Streamline")`` for ``"finn:Streamline"``; ``("", name)`` for a short name."""
    framework, _, short = name.rpartition(":")
    return framework, short


def short_name(name: str) -> str:
    """The name without its framework: ``Streamline`` for ``finn:Streamline``."""
    return name.rpartition(":")[2]


def suggest(name: str, pool: list[str]) -> str:
    """ "; did you mean 'X'?" for the closest names in ``pool`` (empty when none is close)."""
    if not pool:
        return ""
    lowered = {p.lower(): p for p in pool}
    if name.lower() in lowered:
        return f"; did you mean '{lowered[name.lower()]}'?"
    import difflib

    close = difflib.get_close_matches(name, pool, n=3, cutoff=0.6)
    if not close:
        close = [lowered[m] for m in difflib.get_close_matches(name.lower(), list(lowered), n=3)]
    if not close:
        return ""
    return "; did you mean " + " or ".join(f"'{c}'" for c in close) + "?"


def normalise(name: str) -> str:
    """A distribution name as pip compares them (``My_Pkg.x`` -> ``my-pkg-x``)."""
    return name.lower().replace("_", "-").replace(".", "-")
