"""Type names shared across the hub, for annotations only."""

from __future__ import annotations

from typing import Any

JSONDict = dict[str, Any]  # a mapping read from or written to JSON or YAML
SpecRecord = list[Any]  # an index record: [type, name, framework, target, metadata, source]
ProblemRecord = list[str]  # [source, plugin or file, reason]
