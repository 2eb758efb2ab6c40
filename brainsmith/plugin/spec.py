"""PluginSpec: what the hub knows about a plugin before (and after) its module is imported."""

from __future__ import annotations

from brainsmith.plugin.metadata import is_plugin_name, record_metadata_problem

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from brainsmith.plugin.services.records import Problem


PLUGIN_TYPES = ("transform", "kernel", "backend", "step")
MAX_TARGET = 300  # characters of ``module:qualname``


class PluginSpec:
    """One registry entry: type, name, framework, import target ``module:qualname`` and metadata.

    The object behind the spec is imported on first use (see ``Registry.load``) and kept.
    """

    __slots__ = (
        "error",
        "framework",
        "metadata",
        "name",
        "obj",
        "record",
        "source",
        "target",
        "type",
    )

    def __init__(
        self,
        type: str,
        name: str,
        framework: str,
        target: str,
        metadata: dict[str, Any] | None = None,
        source: str = "",
    ) -> None:
        self.type = type
        self.name = name
        self.framework = framework
        self.target = target
        self.metadata = metadata or {}
        self.source = source
        self.obj: object | None = None
        self.error: str | None = None
        self.record: list[Any] | None = (
            None  # the index record it came from (None: made at runtime)
        )

    @property
    def qualified_name(self) -> str:
        return f"{self.framework}:{self.name}"

    @property
    def module(self) -> str:
        return self.target.partition(":")[0]

    @property
    def qualname(self) -> str:
        return self.target.partition(":")[2]

    @property
    def description(self) -> str:
        return str(self.metadata.get("description", ""))

    @property
    def loaded(self) -> bool:
        return self.obj is not None

    def to_record(self) -> list[Any]:
        """Compact JSON-safe form for the discovery index."""
        return [self.type, self.name, self.framework, self.target, self.metadata, self.source]

    @classmethod
    def from_record(cls, record: list[Any]) -> PluginSpec:
        """The spec of an index record; ValueError saying what is wrong with it otherwise."""
        if not isinstance(record, list) or len(record) != 6:
            raise ValueError("not a record of 6 fields")
        type, name, framework, target, metadata, source = record
        if type not in PLUGIN_TYPES:
            raise ValueError(f"unknown plugin type {str(type)[:40]!r}")
        if not is_plugin_name(name):
            raise ValueError(f"{str(name)[:40]!r} is not a plugin name")
        if not (isinstance(framework, str) and framework and isinstance(source, str)):
            raise ValueError("framework or source is not text")
        if not is_target(target):
            raise ValueError(f"target {str(target)[:80]!r} is not module:qualname")
        problem = record_metadata_problem(type, metadata)
        if problem:
            raise ValueError(problem)
        return cls.of_record(record)

    @classmethod
    def of_record(cls, record: list[Any]) -> PluginSpec:
        """The spec of a record already checked (by ``from_record`` or its source's check)."""
        type, name, framework, target, metadata, source = record
        spec = cls(type, name, framework, target, dict(metadata), source)
        spec.record = record
        return spec

    def as_dict(self) -> dict[str, Any]:
        """Everything a user may want to see about this plugin (CLI ``--json``, ``plugins info``)."""
        return {
            "type": self.type,
            "name": self.name,
            "framework": self.framework,
            "qualified_name": self.qualified_name,
            "target": self.target,
            "source": self.source,
            "loaded": self.loaded,
            "error": self.error,
            **{"metadata": dict(self.metadata)},
        }

    def __repr__(self) -> str:
        return f"<PluginSpec {self.type} {self.qualified_name} -> {self.target}>"


def is_target(target: object) -> bool:
    """``package.module:Class.attribute``: dotted ASCII identifiers on both sides of one ':'."""
    if not isinstance(target, str) or len(target) > MAX_TARGET or not target.isascii():
        return False
    module, colon, qualname = target.partition(":")
    return bool(colon) and all(map(str.isidentifier, [*module.split("."), *qualname.split(".")]))


class PluginProblem:
    """Something wrong with one plugin or source, kept for ``health_check()``."""

    __slots__ = ("plugin", "reason", "source")

    def __init__(self, source: str, plugin: str, reason: str) -> None:
        self.source = source
        self.plugin = plugin
        self.reason = reason

    def as_dict(self) -> Problem:
        return {"source": self.source, "plugin": self.plugin, "reason": self.reason}

    def to_record(self) -> list[Any]:
        return [self.source, self.plugin, self.reason]

    def __repr__(self) -> str:
        return f"<PluginProblem {self.plugin}: {self.reason}>"
