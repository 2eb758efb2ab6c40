"""``design_space:`` and ``search:``: alternatives a blueprint explores, and how its variants
are picked and judged (``brainsmith explore``, docs/explore.md).

    design_space:
      backends: {matmul: [rtl, hls]}                # per kernel, one choice per variant
      build: {target_fps: [10000, 1000000]}         # any build option but output_dir
      transforms_phased: {post_hw: [[], [finn:MinimizeAccumulatorWidth]]}
    search:
      strategy: exhaustive                          # or random, with max_variants and seed
      constraints: ["LUT <= 20000", "fps >= 100000"]
      objectives: {fps: max, LUT: min}

The variants are the product of the dimensions in the order written; variant ``i`` is the
same design whichever strategy picks it.
"""

from __future__ import annotations

import math
import operator
import random
import re
from dataclasses import dataclass, replace
from types import MappingProxyType

from brainsmith.blueprint.checks import Checker, label
from brainsmith.blueprint.document import Document, Path
from brainsmith.blueprint.errors import Diagnostics, describe, quote
from brainsmith.blueprint.options import BUILD_KEYS, BuildOptions, check_option
from brainsmith.blueprint.resolved import KernelChoice
from brainsmith.blueprint.schema import ELSEWHERE, PHASES, KernelRef, Ref
from brainsmith.plugin.names import suggest

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from brainsmith.blueprint.options import BuildOptions
    from brainsmith.blueprint.resolve import Resolver
    from brainsmith.blueprint.resolved import Blueprint
    from brainsmith.files import Json
    from brainsmith.plugin.spec import PluginSpec


SPACE_KEYS = {
    "backends": "a mapping of kernel names to lists of alternative backends",
    "build": "a mapping of build options to lists of alternative values",
    "transforms_phased": "a mapping of pre_hw/post_hw to lists of alternative transform lists",
}
SEARCH_KEYS = {
    "strategy": "exhaustive (every variant) or random",
    "max_variants": "how many variants strategy random picks, a whole number from 1 to 10,000",
    "seed": "the seed of strategy random, a whole number >= 0",
    "constraints": 'a list of conditions such as "LUT <= 20000"',
    "objectives": "a mapping of metrics to max or min, e.g. {fps: max, LUT: min}",
}
METRICS = {
    "fps": "estimated frames per second",
    "latency_ns": "estimated latency in nanoseconds",
    "LUT": "LUTs",
    "BRAM_18K": "18 Kbit block RAMs",
    "URAM": "UltraRAMs",
    "DSP": "DSP slices",
}
OPERATORS = {"<=": operator.le, ">=": operator.ge, "<": operator.lt, ">": operator.gt}
DEFAULT_OBJECTIVES = (("fps", "max"), ("LUT", "min"))
MAX_VARIANTS = 10_000  # the most variants one exploration builds, whatever the strategy
MAX_EXHAUSTIVE = MAX_VARIANTS
CONSTRAINT = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_]*)\s*(<=|>=|<|>)\s*(\S+)\s*\Z")


@dataclass(frozen=True)
class Dimension:
    """One choice each variant makes: ``section`` backends | build | transforms_phased,
    ``name`` the kernel, option or phase, ``values`` the resolved alternatives (backend
    specs, option values, transform specs) and ``shown`` each one as written."""

    section: str
    name: str
    values: tuple[Any, ...]
    shown: tuple[Any, ...]
    kernel: PluginSpec | None = None  # section backends: the kernel whose backends vary

    def written(self) -> list[object]:
        """The alternatives as plain data: option values (build.folding's as mappings), or
        qualified plugin names."""
        if self.section == "build":
            return [vars(v).copy() if hasattr(v, "__dataclass_fields__") else v
                    for v in self.values]  # fmt: skip
        return [[s.qualified_name for s in specs] for specs in self.values]

    @property
    def label(self) -> str:
        return f"{self.section}.{self.name.rpartition(':')[2]}"


@dataclass(frozen=True)
class Constraint:
    metric: str
    op: str
    bound: float

    def __str__(self) -> str:
        return f"{self.metric} {self.op} {self.bound:g}"

    def holds(self, metrics: Json) -> bool:
        value = metrics.get(self.metric)
        return value is not None and OPERATORS[self.op](value, self.bound)


@dataclass(frozen=True)
class Search:
    strategy: str = "exhaustive"
    max_variants: int | None = None
    seed: int = 0
    constraints: tuple[Constraint, ...] = ()
    objectives: tuple[tuple[str, str], ...] = DEFAULT_OBJECTIVES


@dataclass(frozen=True)
class DesignSpace:
    """The dimensions and the search; variant ``i`` picks alternative ``digits(i)[d]`` of
    dimension ``d`` (the first dimension varies slowest)."""

    dimensions: tuple[Dimension, ...]
    search: Search

    @property
    def size(self) -> int:
        return math.prod(len(d.values) for d in self.dimensions)

    @property
    def count(self) -> int:
        """How many variants the strategy picks (computed, not listed)."""
        if self.search.strategy == "random":
            return min(self.search.max_variants or self.size, self.size)
        return self.size

    def indices(self) -> list[int]:
        """The variants the strategy picks, in order; refuses more than ``MAX_VARIANTS``."""
        if self.count > MAX_VARIANTS:
            raise ValueError(
                f"the design space picks {self.count:,} variants, more than an exploration "
                f"builds ({MAX_VARIANTS:,})"
            )
        if self.search.strategy == "random":
            return sorted(random.Random(self.search.seed).sample(range(self.size), self.count))
        return list(range(self.size))

    def variant_id(self, index: int) -> str:
        return f"v{index:0{max(2, len(str(self.size - 1)))}d}"

    def digits(self, index: int) -> tuple[int, ...]:
        picks = []
        for dimension in reversed(self.dimensions):
            index, pick = divmod(index, len(dimension.values))
            picks.append(pick)
        return tuple(reversed(picks))

    def choices(self, index: int) -> dict[str, object]:
        """``{"backends.matmul": "hls", "build.target_fps": 10000, ...}`` for variant ``index``."""
        return {
            d.label: d.shown[pick]
            for d, pick in zip(self.dimensions, self.digits(index), strict=True)
        }

    def apply(self, blueprint: Blueprint, index: int) -> Blueprint:
        """The plain blueprint (no design space) of variant ``index``."""
        kernels = list(blueprint.kernels)
        phased = dict(blueprint.transforms_phased)
        options: Json = {}
        for dimension, pick in zip(self.dimensions, self.digits(index), strict=True):
            value = dimension.values[pick]
            if dimension.section == "backends":
                kernels = _with_backends(kernels, dimension, value)
            elif dimension.section == "build":
                options[dimension.name] = value
            else:
                phased[dimension.name] = value
        build = blueprint.build
        if options:
            build = replace(build or BuildOptions(), **options)
        return replace(
            blueprint,
            name=f"{blueprint.name}-{self.variant_id(index)}",
            kernels=tuple(kernels),
            transforms_phased=MappingProxyType(phased),
            build=build,
            design_space=None,
        )

    def to_dict(self) -> Json:
        """``design_space`` and ``search`` as plain data, names qualified."""
        space: Json = {}
        for d in self.dimensions:
            space.setdefault(d.section, {})[d.name] = d.written()
        search = self.search
        found: Json = {"strategy": search.strategy}
        if search.strategy == "random":
            found.update(max_variants=search.max_variants, seed=search.seed)
        found["constraints"] = [str(c) for c in search.constraints]
        found["objectives"] = dict(search.objectives)
        return {"design_space": space, "search": found}


def _with_backends(
    kernels: list[KernelChoice], dimension: Dimension, value: Any
) -> list[KernelChoice]:
    """``kernels`` with the dimension's kernel given the backends ``value``; an auto kernel
    not listed is pinned, added with them."""
    listed = any(k.kernel.qualified_name == dimension.name for k in kernels)
    chosen = [
        KernelChoice(k.kernel, value) if k.kernel.qualified_name == dimension.name else k
        for k in kernels
    ]
    if not listed and dimension.kernel is not None:  # an auto kernel, pinned
        chosen.append(KernelChoice(dimension.kernel, value))
    return chosen


def read_design_space(
    doc: Document,
    diag: Diagnostics,
    resolver: Resolver,
    kernels: tuple[KernelChoice, ...],
    build: BuildOptions | None,
    auto_kernels: bool = False,
) -> DesignSpace | None:
    """Validate and resolve ``design_space:`` and ``search:`` (None when there is none)."""
    elsewhere = {**ELSEWHERE, **{k: f"design_space.build.{k}" for k in BUILD_KEYS}}
    check = Checker(doc, diag, elsewhere)
    section, search = doc.data.get("design_space"), doc.data.get("search")
    if section is None:
        if search is not None:
            check.fail(
                ("search",),
                "search without design_space: there are no alternatives to search",
                "a design_space: mapping beside it",
                key=True,
            )
        return None
    return _space(check, resolver, section, search, kernels, build, auto_kernels)


def _space(
    check: Checker,
    resolver: Resolver,
    section: object,
    search: object,
    kernels: tuple[KernelChoice, ...],
    build: BuildOptions | None,
    auto_kernels: bool,
) -> DesignSpace:
    """The design space of ``design_space:`` (``section``) and ``search:``, over the
    blueprint's kernels and build options."""
    diag = check.diag
    given = check.mapping(("design_space",), section, SPACE_KEYS)
    before = len(diag.problems)
    dimensions = [
        *_backends(check, resolver, given.get("backends", {}), kernels, auto_kernels),
        *_options(check, given.get("build", {}), build),
        *_phases(check, resolver, given.get("transforms_phased", {})),
    ]
    if not dimensions and isinstance(section, dict) and len(diag.problems) == before:
        check.fail(
            ("design_space",),
            "design_space has no alternatives",
            "backends, build or transforms_phased with lists of alternatives",
            key=True,
        )
    found = _search(check, {} if search is None else search)
    space = DesignSpace(tuple(dimensions), found)
    _check_size(check, space)
    return space


def _check_size(check: Checker, space: DesignSpace) -> None:
    """An exhaustive search of more than ``MAX_EXHAUSTIVE`` variants is reported."""
    if space.search.strategy == "exhaustive" and space.dimensions and space.size > MAX_EXHAUSTIVE:
        check.fail(
            ("design_space",),
            f"design_space has {space.size:,} variants, more than exhaustive search runs "
            f"({MAX_EXHAUSTIVE:,})",
            "fewer alternatives, or search: {strategy: random, max_variants: N}",
            key=True,
        )


def _capped(check: Checker, value: int) -> int:
    """``search.max_variants`` up to ``MAX_VARIANTS`` (a larger one is reported)."""
    if value > MAX_VARIANTS:
        check.fail(
            ("search", "max_variants"),
            f"search.max_variants is {value:,}, more than the {MAX_VARIANTS:,} variants an "
            "exploration builds",
            f"at most {MAX_VARIANTS:,}",
            "; sample fewer, or split the space over several blueprints",
        )
        return MAX_VARIANTS
    return value


def _alternatives(check: Checker, path: Path, value: object, example: str) -> list[Any]:
    if not isinstance(value, list) or not value:
        check.wrong(path, value, f"a non-empty list of alternatives, e.g. {example}")
        return []
    return value


def _unique(check: Checker, path: Path, values: list[Any]) -> bool:
    """True when no alternative repeats an earlier one (each repeat is reported)."""
    ok = True
    for index, value in enumerate(values):
        if value is not None and value in values[:index]:
            first = values.index(value)
            check.fail(
                (*path, index),
                f"{label((*path, index))} repeats alternative [{first}]",
                "different alternatives (a repeat builds the same variant twice)",
            )
            ok = False
    return ok


def _backends(
    check: Checker,
    resolver: Resolver,
    section: object,
    kernels: tuple[KernelChoice, ...],
    auto_kernels: bool,
) -> list[Dimension]:
    path = ("design_space", "backends")
    if not isinstance(section, dict):
        check.wrong(path, section, SPACE_KEYS["backends"])
        return []
    chosen = {choice.kernel: choice for choice in kernels}
    dimensions = []
    for name, alternatives in section.items():
        at = (*path, name)
        kernel = _space_kernel(check, resolver, at, chosen if not auto_kernels else None)
        if kernel is None:
            continue
        values, shown = _backend_alternatives(check, resolver, at, alternatives)
        if values and len(values) == len(alternatives) and _unique(check, at, values):
            dimensions.append(
                Dimension("backends", kernel.qualified_name, tuple(values), tuple(shown), kernel)
            )
    return dimensions


def _space_kernel(
    check: Checker,
    resolver: Resolver,
    at: Path,
    chosen: dict[PluginSpec, KernelChoice] | None,
) -> PluginSpec | None:
    """The kernel a ``design_space.backends`` key names; it must be one of ``chosen`` (the
    blueprint's kernels) unless they are auto (None)."""
    name = at[-1]
    kernel = resolver.find("kernel", Ref(str(name), False, at)) if name else None
    if kernel is None or chosen is None or kernel in chosen:
        return kernel
    listed = ", ".join(k.qualified_name for k in chosen) or "none"
    check.fail(
        at,
        f"kernel {kernel.qualified_name} is not one of the blueprint's kernels ({listed})",
        "a kernel listed in hw_compiler.kernels",
        key=True,
    )
    return None


def _backend_alternatives(
    check: Checker, resolver: Resolver, at: Path, alternatives: object
) -> tuple[list[tuple[PluginSpec, ...]], list[Any]]:
    """Each alternative's backends, and the alternative as written (one that names no usable
    backend is left out, and reported)."""
    name = at[-1]
    values, shown = [], []
    for index, item in enumerate(_alternatives(check, at, alternatives, "[rtl, hls]")):
        refs = _names(check, (*at, index), item, "backend", allow_empty=False)
        if refs is None:
            continue
        choice = resolver.kernel(KernelRef(Ref(str(name), False, at), tuple(refs)))
        if choice is not None and choice.backends:
            values.append(choice.backends)
            shown.append(item if isinstance(item, str) else ",".join(item))
    return values, shown


def _options(check: Checker, section: object, build: BuildOptions | None) -> list[Dimension]:
    path = ("design_space", "build")
    given = check.mapping(path, section, BUILD_KEYS)
    dimensions = []
    for key, alternatives in given.items():
        at = (*path, key)
        if not _may_vary(check, key, given, build):
            continue
        example = "[10000, 1000000]" if key == "target_fps" else "[a, b]"
        items = _alternatives(check, at, alternatives, example)
        values = [check_option(check, (*at, i), key, item) for i, item in enumerate(items)]
        if items and None not in values and _unique(check, at, values):
            dimensions.append(Dimension("build", key, tuple(values), tuple(items)))
    return dimensions


def _may_vary(check: Checker, key: str, given: Json, build: BuildOptions | None) -> bool:
    """Whether the build option ``key`` may vary: not output_dir, nor the part or board
    while build sets the other (reported)."""
    at = ("design_space", "build", key)
    if key == "output_dir":
        check.fail(
            at,
            "design_space.build.output_dir cannot vary: each variant builds in its own "
            "folder of the exploration's output",
            "brainsmith explore -o OUT",
            key=True,
        )
        return False
    other = {"fpga_part": "board", "board": "fpga_part"}.get(key)
    if other and build is not None and getattr(build, other) and other not in given:
        check.fail(
            at,
            f"design_space.build.{key} varies while build sets {other}, so a variant would "
            "set both",
            f"vary {other} instead, or set build.{other}: null",
            key=True,
        )
        return False
    return True


def _phases(check: Checker, resolver: Resolver, section: object) -> list[Dimension]:
    path = ("design_space", "transforms_phased")
    given = check.mapping(path, section, PHASES)
    dimensions = []
    for phase, alternatives in given.items():
        at = (*path, phase)
        items = _alternatives(check, at, alternatives, "[[], [MinimizeAccumulatorWidth]]")
        values, shown = _transform_alternatives(check, resolver, at, items)
        if values and len(values) == len(items) and _unique(check, at, shown):
            dimensions.append(Dimension("transforms_phased", phase, tuple(values), tuple(shown)))
    return dimensions


def _transform_alternatives(
    check: Checker, resolver: Resolver, at: Path, items: list[Any]
) -> tuple[list[tuple[PluginSpec, ...]], list[list[Any]]]:
    """Each alternative's transforms (those not installed left out), and the alternative as
    written (one not a list of names is left out, and reported)."""
    values, shown = [], []
    for index, item in enumerate(items):
        refs = _names(check, (*at, index), item, "transform", allow_empty=True)
        if refs is None:
            continue
        specs = (resolver.find("transform", ref) for ref in refs)
        values.append(tuple(s for s in specs if s is not None))
        shown.append([item] if isinstance(item, str) else list(item))
    return values, shown


def _names(
    check: Checker, path: Path, value: object, kind: str, allow_empty: bool
) -> list[Ref] | None:
    """One alternative: a name or a list of names (``~`` optional for transforms)."""
    items = [value] if isinstance(value, str) else value
    expected = f"a {kind} name or a list of them"
    if not isinstance(items, list) or (not items and not allow_empty):
        check.wrong(path, value, expected)
        return None
    refs = []
    for index, item in enumerate(items):
        at = path if isinstance(value, str) else (*path, index)
        ref = _name(item, kind, at)
        if ref is None:
            check.wrong(at, item, expected)
            return None
        refs.append(ref)
    return refs


def _name(item: object, kind: str, at: Path) -> Ref | None:
    """One name of an alternative (``~NAME``: optional, for transforms); None when it is no
    printable name."""
    optional = kind == "transform" and isinstance(item, str) and item.startswith("~")
    text = item[1:] if optional and isinstance(item, str) else item
    if not isinstance(text, str) or not text.strip() or not text.isprintable():
        return None
    return Ref(text, optional, at)


def _search(check: Checker, section: object) -> Search:
    path = ("search",)
    given = check.mapping(path, section, SEARCH_KEYS)
    strategy = "exhaustive"
    if "strategy" in given:
        chosen = check.choice((*path, "strategy"), given["strategy"], ("exhaustive", "random"))
        strategy = chosen or "exhaustive"

    found: Json = {"strategy": strategy, **_sampling(check, given, strategy)}
    if strategy == "random" and "max_variants" not in given:
        check.fail(
            path, "search.strategy random needs max_variants", "e.g. max_variants: 20", key=True
        )
    found["constraints"] = _constraints(check, given.get("constraints", []))
    if "objectives" in given:
        found["objectives"] = _objectives(check, given["objectives"])
    return Search(**found)


def _sampling(check: Checker, given: Json, strategy: str) -> dict[str, int]:
    """``max_variants`` and ``seed``, which only a random search takes."""
    found: dict[str, int] = {}
    for key in ("max_variants", "seed"):
        if key not in given:
            continue
        at = ("search", key)
        if strategy != "random":
            check.fail(at, f"search.{key} applies to strategy: random", key=True)
            continue
        value = given[key]
        if key == "seed" and isinstance(value, int) and not isinstance(value, bool) and value >= 0:
            found[key] = value
        else:
            found[key] = _capped(check, check.whole(at, value, SEARCH_KEYS[key]) or 0)
    return found


def _constraints(check: Checker, value: object) -> tuple[Constraint, ...]:
    path = ("search", "constraints")
    if not isinstance(value, list):
        check.wrong(path, value, SEARCH_KEYS["constraints"])
        return ()
    found = []
    expected = f"METRIC OP NUMBER with a metric of {', '.join(METRICS)} and <=, <, >= or >"
    for index, item in enumerate(value):
        at = (*path, index)
        match = CONSTRAINT.match(item) if isinstance(item, str) else None
        if match is None:
            check.fail(at, f"{label(at)} is {describe(item)}", f'{expected}, e.g. "LUT <= 20000"')
            continue
        metric, op, number = match.groups()
        if metric not in METRICS:
            check.fail(
                at, f"{label(at)} names no metric {quote(metric)}", expected, _suggest(metric)
            )
            continue
        try:
            bound = float(number.replace("_", ""))
        except ValueError:
            bound = math.nan
        if not math.isfinite(bound):
            check.fail(at, f"{label(at)} compares with {quote(number)}, not a number", expected)
            continue
        found.append(Constraint(metric, op, bound))
    return tuple(found)


def _objectives(check: Checker, value: object) -> tuple[tuple[str, str], ...]:
    path = ("search", "objectives")
    if not isinstance(value, dict) or not value:
        check.wrong(path, value, SEARCH_KEYS["objectives"])
        return DEFAULT_OBJECTIVES
    found = []
    for metric, goal in value.items():
        at = (*path, metric)
        if metric not in METRICS:
            expected = f"one of {', '.join(METRICS)}"
            check.fail(at, f"no metric named {quote(metric)}", expected, _suggest(metric), key=True)
        elif check.choice(at, goal, ("max", "min")) is not None:
            found.append((metric, goal))
    return tuple(found) or DEFAULT_OBJECTIVES


def _suggest(name: str) -> str:
    return suggest(name, list(METRICS))
