"""Which tier runs a parametrized case: breadth (more seeds, sizes, fresh exports of a kind
``make test`` already checks) goes to ``make test-wide``."""

from __future__ import annotations

from collections.abc import Iterable

import pytest


def breadth(values: Iterable, keep: int = 1) -> list:
    """``values`` for ``parametrize``: the first ``keep`` run in ``make test``, the others in
    ``make test-wide`` (tuples are one value per argument)."""
    return [
        value
        if index < keep
        else pytest.param(
            *(value if isinstance(value, tuple) else (value,)), marks=pytest.mark.wide
        )
        for index, value in enumerate(values)
    ]


def wide(values: Iterable, chosen: Iterable) -> list:
    """``values`` for ``parametrize``, those in ``chosen`` in ``make test-wide``."""
    chosen = set(chosen)
    return [pytest.param(v, marks=pytest.mark.wide) if v in chosen else v for v in values]
