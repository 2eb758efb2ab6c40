"""``load_blueprint``: read, validate and resolve a blueprint file against the registry,
importing no plugin module (``selection.load_blueprint_plugins`` serves the collections it
selects)."""

from __future__ import annotations

import os
from types import MappingProxyType

from brainsmith.blueprint.document import Document, read_document
from brainsmith.blueprint.errors import Diagnostics
from brainsmith.blueprint.resolve import Resolver
from brainsmith.blueprint.resolved import Blueprint, KernelChoice
from brainsmith.blueprint.schema import DEFAULT_STEPS, PHASES, Ref, outline
from brainsmith.blueprint.space import read_design_space
from brainsmith.plugin.manager import get_plugin_manager
from brainsmith.plugin.spec import PluginSpec

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable

    from brainsmith.blueprint.schema import KernelRef


def load_blueprint(path: str | os.PathLike[str]) -> Blueprint:
    """The resolved blueprint at ``path``; BlueprintError lists every problem found."""
    diag = Diagnostics()
    doc = read_document(os.fspath(path), diag)
    if doc is None:  # read_document recorded why
        diag.raise_if_any()
        raise AssertionError(f"{path}: unreadable, and no problem recorded")
    shape = outline(doc, diag)

    registry = get_plugin_manager().registry()
    resolver = Resolver(registry, doc, diag)
    kernels = _kernels(resolver, shape.kernels)
    exclude = _specs(resolver, "kernel", shape.exclude)
    transforms = _specs(resolver, "transform", shape.transforms)
    phased = {phase: _specs(resolver, "transform", shape.phased[phase]) for phase in PHASES}
    steps = _steps(resolver, doc, diag, shape.steps)
    space = read_design_space(doc, diag, resolver, kernels, shape.build, shape.auto_kernels)
    _raise_sorted(diag, doc)
    return Blueprint(
        name=shape.name,
        description=shape.description,
        path=doc.top.path,
        chain=tuple(source.path for source in doc.sources),
        kernels=kernels,
        transforms=transforms,
        transforms_phased=MappingProxyType(phased),
        steps=steps,
        build=shape.build,
        skipped=tuple(resolver.skipped),
        design_space=space,
        auto_kernels=shape.auto_kernels,
        prefer=shape.prefer,
        exclude=exclude,
    )


def _kernels(resolver: Resolver, refs: Iterable[KernelRef]) -> tuple[KernelChoice, ...]:
    chosen: dict[PluginSpec, KernelChoice] = {}
    first: dict[PluginSpec, Ref] = {}
    for ref in refs:
        choice = resolver.kernel(ref)
        if choice is None:
            continue
        if choice.kernel in chosen:
            line = resolver.doc.locate(first[choice.kernel].path)[1]
            resolver.diag.error(
                resolver.doc.locate(ref.kernel.path),
                f"kernel {choice.kernel.qualified_name} is listed twice (first on line {line})",
                "each kernel once; list all its backends in one entry",
            )
            continue
        where = resolver.doc.locate(ref.kernel.path)
        decomposed = choice.kernel.metadata.get("decomposes_into")
        if not resolver.backends_of(choice.kernel) and not decomposed:
            resolver.diag.error(
                where,
                f"kernel {choice.kernel.qualified_name} has no HLS or RTL backend here, so its "
                "layers could not be built",
                "a kernel with at least one installed backend",
                " (brainsmith plugins list --type backend)",
            )
            continue
        clash = _same_layers(choice, chosen.values())
        if clash is not None:
            line = resolver.doc.locate(first[clash.kernel].path)[1]
            resolver.diag.error(
                where,
                f"kernels {clash.kernel.qualified_name} (line {line}) and "
                f"{choice.kernel.qualified_name} both build "
                f"{_op_type(choice.kernel)} layers but allow different backends "
                f"({_backend_names(clash)} vs {_backend_names(choice)})",
                "one entry per kind of layer",
                "; keep one of them and list every backend you allow there",
            )
            continue
        chosen[choice.kernel] = choice
        first[choice.kernel] = ref.kernel
    return tuple(chosen.values())


def _op_type(kernel: PluginSpec) -> str:
    return str(kernel.metadata.get("op_type") or kernel.name)


def _same_layers(choice: KernelChoice, chosen: Iterable[KernelChoice]) -> KernelChoice | None:
    """An earlier kernel building the same op type with other allowed backends."""
    for other in chosen:
        same = _op_type(other.kernel) == _op_type(choice.kernel)
        if same and {b.name for b in other.backends} != {b.name for b in choice.backends}:
            return other
    return None


def _backend_names(choice: KernelChoice) -> str:
    return ", ".join(b.name for b in choice.backends) or "none"


def _specs(
    resolver: Resolver, kind: str, refs: Iterable[Ref], default: bool = False
) -> tuple[PluginSpec, ...]:
    found = (resolver.find(kind, ref, default) for ref in refs)
    return tuple(spec for spec in found if spec is not None)


def _steps(
    resolver: Resolver, doc: Document, diag: Diagnostics, listed: tuple[Ref, ...] | None
) -> tuple[PluginSpec, ...]:
    """The steps ``listed``, or without a list brainsmith's standard flow."""
    if listed is not None:
        steps = _specs(resolver, "step", listed)
        if listed and not steps and not diag.problems:
            diag.error(
                doc.locate(("steps",)),
                "none of the steps is installed (all are optional and missing): the build "
                "would do nothing",
                "at least one installed step",
            )
        return steps
    if doc.complete:  # brainsmith's standard flow
        defaults = [Ref(name, False, ("steps",)) for name in DEFAULT_STEPS]
        return _specs(resolver, "step", defaults, default=True)
    return ()  # a base that could not be read may list them


def _raise_sorted(diag: Diagnostics, doc: Document) -> None:
    """Problems in file order: the blueprint first, then its bases; by line within a file."""
    order = {source.display: rank for rank, source in enumerate(doc.sources)}
    diag.problems.sort(key=lambda p: (order.get(p.file, len(order)), p.line, p.column))
    diag.raise_if_any()
