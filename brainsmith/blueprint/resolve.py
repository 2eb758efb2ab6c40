"""Plugin names as written -> registry specs. Reads the registry only; imports no plugin.

A name is short (``matmul``) or qualified (``finn:Streamline``); an exact match wins (short
names by framework priority), otherwise a case-insensitive match is used when it is unique.
"""

from __future__ import annotations

import logging
from typing import NamedTuple

from brainsmith.blueprint.document import Document, Where
from brainsmith.blueprint.errors import Diagnostics, quote
from brainsmith.blueprint.resolved import KernelChoice, SkippedPlugin
from brainsmith.blueprint.schema import LISTINGS, KernelRef, Ref
from brainsmith.plugin.adapters import install_hint
from brainsmith.plugin.metadata import BACKEND_TYPES
from brainsmith.plugin.names import split_name, suggest
from brainsmith.plugin.registry import Registry, located, taken_from_built_in
from brainsmith.plugin.spec import PLUGIN_TYPES, PluginSpec

TYPE_CHECKING = False
if TYPE_CHECKING:
    from brainsmith.plugin.services.views import RegistryView


# The logger docs/blueprints.md names.
LOGGER_NAME = "brainsmith.blueprint"
EXAMPLES = {
    "kernel": ("matmul", "finn:MVAU"),
    "transform": ("ExpandNorms", "finn:Streamline"),
    "step": ("streamline", "finn:step_tidy_up"),
    "backend": ("MatMulRTL", "finn:MVAU_rtl"),
}


class Miss(NamedTuple):
    """Why a name did not resolve, in the parts of a problem line."""

    what: str
    expected: str
    hint: str = ""


class Resolver:
    """Looks up one blueprint's names, reporting misses to ``diag`` and skipping optional ones."""

    def __init__(self, registry: Registry | RegistryView, doc: Document, diag: Diagnostics) -> None:

        self.registry = registry
        self.doc = doc
        self.diag = diag
        self.skipped: list[SkippedPlugin] = []
        self._backends: dict[tuple[str, str], list[PluginSpec]] | None = None

    def find(self, kind: str, ref: Ref, default: bool = False) -> PluginSpec | None:
        spec, ambiguous = self._lookup(kind, ref.text)
        if spec is not None and not _unavailable(spec):
            return spec
        where = self.doc.locate(ref.path)
        if ref.optional and ambiguous is None and not _looks_like_import_path(ref.text):
            reason = (spec.error if spec is not None else None) or "not installed"

            self.skipped.append(SkippedPlugin(kind, ref.text, reason, *where))
            logging.getLogger(LOGGER_NAME).info(
                "%s:%d:%d: optional %s '%s' skipped: %s", *where, kind, ref.text, reason
            )
            return None
        miss = self._miss(kind, ref.text, spec, ambiguous, default)
        self.diag.error(where, miss.what, miss.expected, miss.hint)
        return None

    def _miss(
        self, kind: str, text: str, spec: PluginSpec | None, ambiguous: Miss | None, default: bool
    ) -> Miss:
        """Why ``text`` names no plugin that can be used: unavailable, ambiguous, a default
        step not registered, or missing."""
        if spec is not None:
            return Miss(
                f"{kind} {spec.qualified_name} is {spec.error}", f"a {kind} that is available here"
            )
        if ambiguous is not None:
            return ambiguous
        if default:
            return Miss(
                f"the default step {quote(text)} is not registered",
                "brainsmith's standard steps to be installed, or an explicit 'steps:' list",
            )
        return self._missing(kind, text)

    def kernel(self, ref: KernelRef) -> KernelChoice | None:
        spec = self.find("kernel", ref.kernel)
        if spec is None:
            return None
        available = self.backends_of(spec)
        if ref.backends is None:
            return KernelChoice(spec, tuple(available))
        chosen: dict[PluginSpec, None] = {}
        for backend_ref in ref.backends:
            chosen.update(dict.fromkeys(self._pick(spec, available, backend_ref)))
        return KernelChoice(spec, tuple(chosen))

    def backends_of(self, kernel: PluginSpec) -> list[PluginSpec]:
        """Available backends whose metadata names ``kernel`` (same framework unless qualified)."""
        if self._backends is None:
            index: dict[tuple[str, str], list[PluginSpec]] = {}
            for spec in self.registry.specs("backend"):
                if _unavailable(spec):
                    continue
                framework, name = split_name(str(spec.metadata.get("kernel", "")))
                index.setdefault((framework or spec.framework, name), []).append(spec)
            for specs in index.values():
                specs.sort(key=lambda s: (str(s.metadata.get("backend_type", "")), s.name))
            self._backends = index
        return self._backends.get((kernel.framework, kernel.name), [])

    def _pick(self, kernel: PluginSpec, available: list[PluginSpec], ref: Ref) -> list[PluginSpec]:
        where = self.doc.locate(ref.path)
        names = ", ".join(b.name for b in available) or "none"
        expected = f"hls, rtl or one of {kernel.qualified_name}'s backends ({names})"
        wanted = ref.text.lower()
        if wanted in BACKEND_TYPES:
            return self._of_type(kernel, available, wanted, (where, expected))
        backend, ambiguous = self._lookup("backend", ref.text)
        if backend is None:
            miss = ambiguous or self._missing("backend", ref.text)
            pool = [*BACKEND_TYPES, *(b.name for b in available)]
            self.diag.error(where, miss.what, expected, suggest(ref.text, pool) or miss.hint)
            return []
        if backend not in available:
            implements = backend.metadata.get("kernel", "?")
            self.diag.error(
                where,
                f"backend {backend.qualified_name} implements kernel "
                f"'{implements}', not {kernel.qualified_name}",
                expected,
            )
            return []
        return [backend]

    def _of_type(
        self,
        kernel: PluginSpec,
        available: list[PluginSpec],
        wanted: str,
        error_at: tuple[Where, str],
    ) -> list[PluginSpec]:
        """The kernel's backends of type ``wanted`` (hls, rtl); an error when it has none."""
        found = [b for b in available if b.metadata.get("backend_type") == wanted]
        if not found:
            where, expected = error_at
            have = ", ".join(f"{b.name} ({b.metadata.get('backend_type')})" for b in available)
            self.diag.error(
                where,
                f"kernel {kernel.qualified_name} has no {wanted} backend (it has: {have or 'none'})",
                expected,
            )
        return found

    def _lookup(self, kind: str, text: str) -> tuple[PluginSpec | None, Miss | None]:
        """The spec ``text`` names, or None and (when ambiguous) why."""
        spec = self._exact(kind, text)
        if spec is not None:
            shadowing = None if ":" in text else self._shadowing(kind, text)
            return (None, shadowing) if shadowing else (spec, None)
        hits = self.registry.find_case_insensitive(kind, text)
        spellings = {s.qualified_name if ":" in text else s.name for s in hits}
        if len(spellings) == 1:
            return hits[0], None
        if hits:
            names = ", ".join(sorted(s.qualified_name for s in hits))
            what = f"{kind} name {quote(text)} is ambiguous: ignoring case it matches {names}"
            return None, Miss(what, "the exact name of one of them")
        return None, None

    def _shadowing(self, kind: str, text: str) -> Miss | None:
        """Why short name ``text`` is ambiguous: a user's or a package's plugin takes it from
        a built-in one (the build would silently run the other plugin); None if it is not."""
        candidates = self.registry.candidates(kind, text)
        hidden = taken_from_built_in(candidates)
        if not hidden:
            return None
        mine = candidates[0]
        others = ", ".join(f"{h.qualified_name} ({located(h)})" for h in hidden)
        what = (
            f"{kind} name {quote(text)} is ambiguous: {mine.qualified_name} "
            f"({located(mine)}) shadows {others}"
        )
        names = " or ".join(quote(s.qualified_name) for s in (mine, *hidden))
        return Miss(what, f"a qualified name: {names}")

    def _exact(self, kind: str, text: str) -> PluginSpec | None:
        """``Registry.find`` without building a not-found message for every miss."""
        framework, qualified, name = text.partition(":")
        if not qualified:
            name = text
        for spec in self.registry.candidates(kind, name):
            if not qualified or spec.framework == framework:
                return spec
        return None

    def _missing(self, kind: str, text: str) -> Miss:
        framework, name = split_name(text)
        listing = f"brainsmith plugins list --type {kind}"
        expected = f"a registered {kind} such as {' or '.join(map(quote, EXAMPLES[kind]))}"
        unknown = self._unknown(framework)
        miss = self._unknown_framework(kind, text, framework, expected) if unknown else None
        if miss is not None:
            return miss
        if unknown or _looks_like_import_path(text):
            what = (
                f"{quote(text)} is not a registered {kind}; a blueprint names registered "
                "plugins, never import paths"
            )
            expected += f" (register your own with @{kind} in a plugin folder; {listing})"
            return Miss(what, expected)
        where = f" in framework '{framework}'" if framework else ""
        pool = [s.name for s in self.registry.specs(kind, framework or None)]
        hint = suggest(name, pool) or self._other_type(kind, text)
        return Miss(f"no {kind} named {quote(name)}{where}", f"{expected} ({listing})", hint)

    def _unknown(self, framework: str) -> bool:
        """A framework named, and none of that name (in any case) registered."""
        known = {f.lower() for f in self.registry.frameworks()}
        return bool(framework) and framework.lower() not in known

    def _unknown_framework(
        self, kind: str, text: str, framework: str, expected: str
    ) -> Miss | None:
        """A framework not registered: how to install it, or the one it may mean."""
        frameworks = self.registry.frameworks()
        hint = self.registry.disabled.get(framework) or install_hint(framework)
        if hint:
            return Miss(f"no {kind} named {quote(text)}: {hint}", expected)
        hint = suggest(framework, frameworks) if ":" not in framework else ""
        if hint:
            return Miss(
                f"no framework named {quote(framework)} (in {quote(text)})",
                f"one of {', '.join(frameworks)}",
                hint,
            )
        return None

    def _other_type(self, kind: str, text: str) -> str:
        for other in PLUGIN_TYPES:
            if other != kind and (self._exists(other, text)):
                return f"; {quote(text)} is a {other}: list it under {LISTINGS[other].section}"
        return ""

    def _exists(self, kind: str, text: str) -> bool:
        return self._exact(kind, text) is not None or bool(
            self.registry.find_case_insensitive(kind, text)
        )


def _looks_like_import_path(text: str) -> bool:
    return any(c in text for c in "./\\") or text.count(":") > 1


def _unavailable(spec: PluginSpec) -> bool:
    return (spec.error or "").startswith("unavailable:")
