"""Whether an index record is one its source could have written.

The persisted index lives in the user's own cache directory, but it is data, and data is
checked: a record may only name a module of its own source (a file under that source's
folders, or a package an installed distribution declares), under that source's framework
name, with ``plugin_dir`` only for a configured plugin folder. What is then imported is
checked again before it is served (``loading.not_this_plugin``). These checks are string
comparisons, made for each record before it is first served (``SourceCheck``).
"""

from __future__ import annotations

import os

from brainsmith.plugin.metadata import COMMON_KEYS, RECORD_KEYS, TYPE_KEYS, record_metadata_problem
from brainsmith.plugin.settings.config import PluginConfig
from brainsmith.plugin.spec import MAX_TARGET, PLUGIN_TYPES, PluginProblem, PluginSpec
from brainsmith.plugin.values import MAX_NAME

TYPE_CHECKING = False
if TYPE_CHECKING:
    from brainsmith.plugin.discovery.sources import State


BUILTIN_FRAMEWORKS = ("brainsmith", "user", "qonnx", "finn")
OWN_PACKAGES = ("transforms", "kernels", "backends", "steps")  # brainsmith's plugin packages


def from_source(spec: PluginSpec, source: str, state: State, config: PluginConfig) -> bool:
    """True when ``source`` (whose index state is ``state``) could have written ``spec``;
    a plugin folder's source is ``user:<folder>``."""
    if source.startswith("user:"):
        return _in_plugin_folder(spec, source[5:], config)
    if "plugin_dir" in spec.metadata:
        return False  # only configured plugin folders are imported as folder packages
    if source == "entry_points":
        return _declared_by_a_distribution(spec, state)
    return spec.framework == source and _in_framework(spec, source, state)


def _in_framework(spec: PluginSpec, source: str, state: State) -> bool:
    """The record's module is a file of brainsmith's own plugin packages, or of the installed
    framework ``source`` (QONNX, FINN)."""
    if source == "brainsmith":
        return bool(spec.source) and _file_of_module(spec, brainsmith_roots())
    root = state.get("root")  # QONNX and FINN: the installed package folder
    if not isinstance(root, str) or not spec.module.startswith(source + "."):
        return False
    return not spec.source or _file_of_module(spec, [(root, source)])


def brainsmith_roots() -> list[tuple[str, str]]:
    """(folder, dotted package) of brainsmith's own plugin packages."""
    package = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    return [(os.path.join(package, sub), f"brainsmith.{sub}") for sub in OWN_PACKAGES]


def _file_of_module(spec: PluginSpec, roots: list[tuple[str, str]]) -> bool:
    """The record's source file is the file its module is read from, under one of ``roots``.

    (String operations only, like every check here.)"""
    module, source = spec.module, spec.source
    for folder, prefix in roots:
        if module == prefix:
            return source == f"{folder}{os.sep}__init__.py"
        if prefix and not module.startswith(prefix + "."):
            continue
        base = folder + os.sep + module[len(prefix) :].lstrip(".").replace(".", os.sep)
        if source in (base + ".py", f"{base}{os.sep}__init__.py"):
            return True
    return False


def _in_plugin_folder(spec: PluginSpec, folder: str, config: PluginConfig) -> bool:
    """A user plugin's module is a file of a configured plugin folder, named after its path
    inside the folder's package."""
    from brainsmith.plugin.discovery.folders import module_of

    if folder not in config.plugin_dirs or spec.framework != "user":
        return False
    if spec.metadata.get("plugin_dir") != folder:
        return False
    rel = _python_file_in(folder, spec.source)
    return rel is not None and module_of(folder, rel) == spec.module and os.path.isfile(spec.source)


def _python_file_in(folder: str, source: str) -> str | None:
    """The path of ``source`` inside ``folder`` when it is a ``.py`` file below it."""
    rel = os.path.relpath(source, folder) if source else os.pardir
    if rel.startswith(os.pardir) or os.path.isabs(rel) or not rel.endswith(".py"):
        return None
    return rel


def _declared_by_a_distribution(spec: PluginSpec, state: State) -> bool:
    """A pip package's module belongs to a package an entry point of the distribution whose
    name is the record's framework declares (a built-in framework's name is never one)."""
    if spec.framework in BUILTIN_FRAMEWORKS:
        return False
    top = spec.module.partition(".")[0]
    return any(_declares(row, top, spec.framework) for row in state.get("listing", []))


def _declares(row: object, top: str, framework: str) -> bool:
    """The entry-point row ``[distribution, version, name, value]`` of ``framework`` names a
    module of the top-level package ``top``."""
    from brainsmith.plugin.names import normalise

    if not (isinstance(row, list) and len(row) == 4 and all(isinstance(f, str) for f in row)):
        return False
    dist, _version, name, value = row
    declared = value.partition(":")[0].strip().partition(".")[0]
    return declared == top and normalise(dist or name) == framework


class SourceCheck:
    """Checks the index records of one source (its state in the index).

    ``check(record)`` gives the record's spec, the problem that refuses it, or None for a
    plugin of a framework the configuration turns off. The common case — a record of
    brainsmith's, QONNX's or FINN's own files, with plain metadata — is accepted on one path
    of string comparisons worked out once per source; anything else takes the full checks
    (``PluginSpec.from_record``, ``from_source``), which also say what is wrong. The quick
    path accepts nothing the full checks would refuse.
    """

    __slots__ = (
        "_depth",
        "_folder",
        "_prefix",
        "_sources_optional",
        "config",
        "enabled",
        "source",
        "state",
    )

    def __init__(self, source: str, state: State, config: PluginConfig) -> None:
        self.source = source
        self.state = state
        self.config = config
        self.enabled = source not in BUILTIN_FRAMEWORKS or config.framework_enabled(source)
        # The quick path: the package (its folder) this source's modules are in, and how many
        # names a module's dotted name has at least (brainsmith's: below a plugin package).
        self._prefix, self._folder, self._depth = "", "", 2
        self._sources_optional = source != "brainsmith"  # a framework's records may omit it
        root = state.get("root")
        if source == "brainsmith":
            package = os.path.dirname(brainsmith_roots()[0][0])
            self._prefix, self._folder, self._depth = "brainsmith", package + os.sep, 3
        elif source in BUILTIN_FRAMEWORKS and isinstance(root, str):
            self._prefix, self._folder = source, root + os.sep

    def check(self, record: object) -> PluginSpec | PluginProblem | None:
        spec = self._quick(record) if self._prefix else None
        if spec is None:
            try:
                spec = PluginSpec.from_record(record)  # type: ignore[arg-type]
            except (ValueError, TypeError) as exc:
                reason = f"malformed index record ({exc}); ignored"
                return PluginProblem(self.source, record_label(record), reason)
            if not from_source(spec, self.source, self.state, self.config):
                reason = f"index names {spec.target}, outside this source; ignored"
                return PluginProblem(self.source, spec.qualified_name, reason)
            if not VERSION_KEYS.isdisjoint(spec.metadata):
                from brainsmith.plugin.lifecycle.versions import incompatibility

                unfit = incompatibility(spec.metadata)
                if unfit:
                    spec.error = f"unavailable: {unfit}"
        if spec.framework in BUILTIN_FRAMEWORKS and not self.enabled:
            return None
        return spec

    def _quick(self, record: object) -> PluginSpec | None:
        """The spec of a plain record of this source's own files; None: check it in full.

        (What ``from_record`` and ``from_source`` check, written out for this case: a listing
        runs it for every record.)"""
        if type(record) is not list or len(record) != 6:
            return None
        kind, name, framework, target, metadata, source = record
        if framework != self.source or not _plain(kind, name, target, metadata, source):
            return None
        parts = self._own_module(target)
        if parts is None or not self._own_file(source, parts):
            return None
        if not PLAIN_KEYS.issuperset(metadata) or record_metadata_problem(kind, metadata):
            return None
        return PluginSpec.of_record(record)

    def _own_module(self, target: str) -> list[str] | None:
        """The dotted parts of ``target``'s module when it is one of this source's package;
        None otherwise (or for an unusual name)."""
        module, colon, qualname = target.partition(":")
        parts = module.split(".")
        if (
            not colon
            or parts[0] != self._prefix
            or len(parts) < self._depth
            or not all(map(str.isidentifier, parts))
            or not (qualname.isidentifier() or all(map(str.isidentifier, qualname.split("."))))
        ):
            return None
        if self._depth == 3 and parts[1] not in OWN_PACKAGES:  # brainsmith's plugin packages
            return None
        return parts

    def _own_file(self, source: str, parts: list[str]) -> bool:
        """``source`` is the file of the module ``parts`` name (or may be omitted)."""
        if not source and self._sources_optional:
            return True
        base = self._folder + os.sep.join(parts[1:])
        return source == base + ".py" or source == base + os.sep + "__init__.py"


def _plain(kind: object, name: object, target: object, metadata: object, source: object) -> bool:
    """A record's fields have the types and plain values the quick path takes."""
    return (
        kind in PLUGIN_TYPES
        and type(name) is str
        and type(target) is str
        and type(source) is str
        and type(metadata) is dict
        and 0 < len(name) <= MAX_NAME
        and len(target) <= MAX_TARGET
        and name.isascii()
        and target.isascii()
        and name.isidentifier()
    )


# Metadata keys the quick path takes: all but a version range (checked and compared with
# this brainsmith), the name (never in a record) and a plugin folder (user sources only).
VERSION_KEYS = frozenset(("min_brainsmith_version", "max_brainsmith_version", "brainsmith_version"))
PLAIN_KEYS = frozenset(
    [*COMMON_KEYS, *RECORD_KEYS, *(key for keys in TYPE_KEYS.values() for key in keys)]
).difference(["name", "plugin_dir", *VERSION_KEYS])


def record_label(record: object) -> str:
    """``transform qonnx:Name`` for a record that has those fields; else its text, cut."""
    if (
        isinstance(record, list)
        and len(record) >= 3
        and all(isinstance(f, str) for f in record[:3])
    ):
        return f"{record[0][:20]} {record[2][:40]}:{record[1][:100]}"
    return str(record)[:80]
