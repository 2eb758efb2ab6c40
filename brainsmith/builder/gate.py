"""Deprecated: the build-folder gate moved to ``brainsmith.intake.gate``; this name is that
module, with a DeprecationWarning, until brainsmith ``REMOVED_IN``."""

from __future__ import annotations

import sys
import warnings

from brainsmith.intake import gate as _moved
from brainsmith.version import REMOVED_IN

warnings.warn(
    f"brainsmith.builder.gate moved to brainsmith.intake.gate; the old name will be removed "
    f"in brainsmith {REMOVED_IN}",
    DeprecationWarning,
    stacklevel=2,  # the importing line
)
sys.modules[__name__] = _moved
