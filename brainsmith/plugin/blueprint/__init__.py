"""Deprecated: the blueprint package moved to ``brainsmith.blueprint``. This name and its
modules (``brainsmith.plugin.blueprint.options``...) are the new ones, with a
DeprecationWarning, until brainsmith ``REMOVED_IN``."""

from __future__ import annotations

import sys
import warnings

import brainsmith.blueprint as _moved
from brainsmith.blueprint import (
    checks,
    document,
    errors,
    loader,
    model,
    options,
    packaged,
    resolve,
    schema,
    selection,
    space,
)
from brainsmith.version import REMOVED_IN

warnings.warn(
    f"brainsmith.plugin.blueprint moved to brainsmith.blueprint; the old name will be removed "
    f"in brainsmith {REMOVED_IN}",
    DeprecationWarning,
    stacklevel=2,  # the importing line
)
_MODULES = (checks, document, errors, loader, model, options, packaged, resolve, schema, selection)
for _module in (*_MODULES, space):  # ``import brainsmith.plugin.blueprint.space`` finds these
    sys.modules[f"{__name__}.{_module.__name__.rpartition('.')[2]}"] = _module
__all__ = _moved.__all__


def __getattr__(name: str) -> object:
    return getattr(_moved, name)
