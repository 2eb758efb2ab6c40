"""Type names shared across the hub, for annotations only.

``typing`` is not imported at run time (it costs milliseconds at start-up), so these aliases
name ``Any`` as a string; they work the same for type checkers.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

JSONDict = dict[str, "Any"]  # a mapping read from or written to JSON or YAML
SpecRecord = list["Any"]  # an index record: [type, name, framework, target, metadata, source]
ProblemRecord = list[str]  # [source, plugin or file, reason]
