"""PluginSpec: what the hub knows about a plugin before (and after) its module is imported."""

from __future__ import annotations

PLUGIN_TYPES = ("transform", "kernel", "backend", "step")


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
        metadata: dict | None = None,
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
        self.record: list | None = None  # the index record it came from (None: made at runtime)

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
        return self.metadata.get("description", "")

    @property
    def loaded(self) -> bool:
        return self.obj is not None

    def to_record(self) -> list:
        """Compact JSON-safe form for the discovery index."""
        return [self.type, self.name, self.framework, self.target, self.metadata, self.source]

    @classmethod
    def from_record(cls, record: list) -> PluginSpec:
        type, name, framework, target, metadata, source = record
        if type not in PLUGIN_TYPES or not isinstance(metadata, dict):
            raise ValueError(f"bad plugin record {record!r}")
        spec = cls(str(type), str(name), str(framework), str(target), dict(metadata), str(source))
        spec.record = record
        return spec

    def as_dict(self) -> dict:
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
