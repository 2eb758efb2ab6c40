"""The blueprint format: which keys exist, what their values must be, and the validated outline
(plugin names as written, with where they were written; not yet looked up)."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from brainsmith.blueprint.checks import Checker, label
from brainsmith.blueprint.choices import PREFERENCES
from brainsmith.blueprint.document import PER_FILE_KEYS, Document, Path, locate_in
from brainsmith.blueprint.errors import Diagnostics, describe
from brainsmith.blueprint.options import BUILD_KEYS, BuildOptions, check_build

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator

    from brainsmith.files import Json


TOP_KEYS = {
    "name": "a short name: letters, digits, '.', '_' or '-'",
    "description": "text",
    "extends": "the path of a base blueprint, relative to this file, or brainsmith:NAME",
    "hw_compiler": "a mapping of kernels, transforms, transforms_phased",
    "steps": "a list of step names, in order",
    "build": "a mapping of build options",
    "design_space": "a mapping of backends, build, transforms_phased to lists of alternatives",
    "search": "a mapping of strategy, max_variants, seed, constraints, objectives",
}
HW_KEYS = {
    "kernels": "auto (every installed kernel; the default), or a list of kernel names or "
    "{kernel: NAME, backends: [...]} mappings (an 'auto' entry adds every other kernel)",
    "prefer": "auto, rtl or hls: the backend type for layers that can have either",
    "exclude": "a list of kernel names never used (their layers stay on the host)",
    "transforms": "a list of transform names",
    "transforms_phased": "a mapping of pre_hw and post_hw to lists of transform names",
}
PHASES = {"pre_hw": "a list of transform names", "post_hw": "a list of transform names"}
AUTO = "auto"
KERNEL_KEYS = {"kernel": "a kernel name", "backends": "a list of hls, rtl or backend names"}
DEFAULT_STEPS = (
    "cleanup",
    "qonnx_to_finn",
    "streamline",
    "hardware_inference",
    "specialize",
    "folding",
    "estimates",
    "codegen",
    "fifo_depths",
)
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*\Z")
ELSEWHERE = {
    **{key: f"hw_compiler.{key}" for key in HW_KEYS},
    **{key: f"build.{key}" for key in BUILD_KEYS},
    **{key: f"hw_compiler.transforms_phased.{key}" for key in PHASES},
}


@dataclass(frozen=True)
class Ref:
    """A plugin name as written (without a leading ``~``) and where."""

    text: str
    optional: bool
    path: Path


@dataclass(frozen=True)
class KernelRef:
    kernel: Ref
    backends: tuple[Ref, ...] | None  # None: every backend of the kernel


@dataclass(frozen=True)
class Outline:
    name: str
    description: str
    kernels: tuple[KernelRef, ...]
    auto_kernels: bool  # every installed kernel besides those listed
    prefer: str  # one of PREFERENCES
    exclude: tuple[Ref, ...]
    transforms: tuple[Ref, ...]
    phased: dict[str, tuple[Ref, ...]]
    steps: tuple[Ref, ...] | None  # None: DEFAULT_STEPS
    build: BuildOptions | None


def outline(doc: Document, diag: Diagnostics) -> Outline:
    """Validate the merged document's shape; problems go to ``diag``."""
    check = Checker(doc, diag, ELSEWHERE)
    top = check.mapping((), {**_per_file(doc), **doc.data}, TOP_KEYS)
    hw = check.mapping(("hw_compiler",), top.get("hw_compiler", {}), HW_KEYS)
    phased_map = hw.get("transforms_phased", {})
    phases = check.mapping(("hw_compiler", "transforms_phased"), phased_map, PHASES)
    steps = top.get("steps")
    build = top.get("build")
    kernels = hw.get("kernels", AUTO)
    return Outline(
        name=_name(check, doc),
        description=_description(check, doc),
        kernels=tuple(_kernels(check, kernels)),
        auto_kernels=kernels == AUTO or (isinstance(kernels, list) and AUTO in kernels),
        prefer=_prefer(check, hw.get("prefer", AUTO)),
        exclude=_refs(check, ("hw_compiler", "exclude"), hw.get("exclude", []), "kernel"),
        transforms=_refs(
            check, ("hw_compiler", "transforms"), hw.get("transforms", []), "transform"
        ),
        phased={
            phase: _refs(
                check,
                ("hw_compiler", "transforms_phased", phase),
                phases.get(phase, []),
                "transform",
            )
            for phase in PHASES
        },
        steps=None if steps is None else _steps(check, steps),
        build=None if build is None else check_build(check, build, doc.complete),
    )


def _per_file(doc: Document) -> Json:
    return {k: v for k, v in doc.top.data.items() if k in PER_FILE_KEYS}


def _name(check: Checker, doc: Document) -> str:
    value = doc.top.data.get("name")
    if value is None:
        stem = os.path.splitext(os.path.basename(doc.top.path))[0]
        return stem if NAME.match(stem) else "blueprint"
    if isinstance(value, str) and NAME.match(value) and len(value) <= 100:
        return value
    check.diag.error(
        locate_in(doc.top, ("name",)),
        f"name is {describe(value)}",
        TOP_KEYS["name"] + ", at most 100 characters",
    )
    return "blueprint"


def _description(check: Checker, doc: Document) -> str:
    value = doc.top.data.get("description")
    if value is None or isinstance(value, str):
        return (value or "").strip()
    check.diag.error(
        locate_in(doc.top, ("description",)),
        f"description is {describe(value)}",
        TOP_KEYS["description"],
    )
    return ""


def _steps(check: Checker, value: object) -> tuple[Ref, ...]:
    if value == []:
        check.fail(
            ("steps",),
            "steps is an empty list: the build would do nothing",
            "at least one step name, e.g. [cleanup, qonnx_to_finn, streamline]",
            "; remove steps: to get brainsmith's standard flow",
        )
        return ()
    return _refs(check, ("steps",), value, "step")


def _refs(check: Checker, path: Path, value: object, kind: str) -> tuple[Ref, ...]:
    if not isinstance(value, list):
        check.wrong(path, value, f"a list of {kind} names, e.g. [{LISTINGS[kind].example}]")
        return ()
    found = (_ref(check, (*path, i), item, kind) for i, item in enumerate(value))
    return tuple(ref for ref in found if ref is not None)


def _ref(
    check: Checker, path: Path, value: object, kind: str, optional_ok: bool = True
) -> Ref | None:
    expected = _name_expected(kind, optional_ok)
    if not isinstance(value, str) or not value.strip() or not value.isprintable():
        check.wrong(path, value, expected)
        return None
    optional = value.startswith("~")
    text = value[1:] if optional else value
    if optional and not optional_ok:
        check.fail(path, f"{label(path)} is '{value}': backends cannot be optional", expected)
        return None
    if not text.strip():
        check.wrong(path, value, expected)
        return None
    return Ref(text, optional, path)


def _name_expected(kind: str, optional_ok: bool) -> str:
    """What a name of a ``kind`` plugin should look like."""
    expected = f"a {kind} name such as {LISTINGS[kind].example}"
    return expected + " (a leading ~ makes it optional)" if optional_ok else expected


def _prefer(check: Checker, value: object) -> str:
    if value in PREFERENCES:
        return str(value)
    check.wrong(("hw_compiler", "prefer"), value, HW_KEYS["prefer"])
    return AUTO


def _kernels(check: Checker, value: object) -> Iterator[KernelRef]:
    path = ("hw_compiler", "kernels")
    if value == AUTO:
        return
    if not isinstance(value, list):
        check.wrong(path, value, HW_KEYS["kernels"])
        return
    for index, item in enumerate(value):
        at = (*path, index)
        if item == AUTO:
            continue
        if not isinstance(item, dict):
            ref = _ref(check, at, item, "kernel")
            if ref is not None:
                yield KernelRef(ref, None)
            continue
        found = _kernel_entry(check, at, item)
        if found is not None:
            yield found


def _kernel_entry(check: Checker, at: Path, item: dict[object, object]) -> KernelRef | None:
    """``{kernel: NAME, backends: [...]}``; None when it has a problem (reported)."""
    entry = check.mapping(at, item, KERNEL_KEYS)
    if "kernel" not in entry:
        if len(entry) == len(item):  # not already reported as unknown keys
            check.fail(
                at,
                f"{label(at)} has no 'kernel' key",
                "{kernel: NAME, backends: [hls | rtl | BACKEND, ...]}",
            )
        return None
    ref = _ref(check, (*at, "kernel"), entry["kernel"], "kernel")
    backends = None
    if "backends" in entry:
        backends = _backends(check, (*at, "backends"), entry["backends"])
    if ref is not None and (backends is None or backends):
        return KernelRef(ref, backends)
    return None


def _backends(check: Checker, path: Path, value: object) -> tuple[Ref, ...]:
    if not isinstance(value, list) or not value:
        check.wrong(path, value, "a non-empty list of hls, rtl or backend names")
        return ()
    refs = [
        _ref(check, (*path, i), item, "backend", optional_ok=False) for i, item in enumerate(value)
    ]
    found = [ref for ref in refs if ref is not None]
    return tuple(found) if len(found) == len(refs) else ()


@dataclass(frozen=True)
class Listing:
    """Where a blueprint lists plugins of one type, and an example of their names."""

    section: str
    example: str


LISTINGS = {
    "kernel": Listing("hw_compiler.kernels", "matmul"),
    "transform": Listing("hw_compiler.transforms", "ExpandNorms"),
    "step": Listing("steps", "streamline"),
    "backend": Listing("a kernel's backends", "hls, rtl or MatMulRTL"),
}
