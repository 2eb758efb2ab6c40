"""Synthesise every RTL layer of a design, two at a time, each result cached by content.

The cache key is the digest of the run's ``Plan`` (``brainsmith.hardware.plan``):
everything that decides the counts, the Yosys version, the family, the script, the top module
and the text of every file Yosys reads (after the fixes) with the parameter files. A result is
a JSON file in the user's private cache directory (``<cache>/synthesis/<key>.json``, written
whole or not at all); the
same layer in another build, or the same build again, is not synthesised twice. What cannot
be synthesised (an HLS layer, a Versal part) has its reason; what Yosys rejects has the first
error line of its log, and the log stays in the run folder.

A cache entry is used only when it is a regular file of this user of at most
``MAX_ENTRY_BYTES`` holding counts that are whole numbers below ``MAX_COUNT``; any other
is removed, and its layer synthesised again. A disk that fills up while a run folder is
written, or under Yosys, raises ``DiskFull`` naming it; an interrupted synthesis
(``BuildInterrupted``, any exception) stops its Yosys processes before it ends.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field, replace

from brainsmith.files import FULL_DISKS, DiskFull, disk_full
from brainsmith.hardware.plan import Plan, entry_bytes, remove, stored
from brainsmith.hardware.processes import Processes
from brainsmith.hardware.synthesis.ecp5 import lattice_ready
from brainsmith.hardware.synthesis.families import NotSynthesisable, family_of
from brainsmith.hardware.synthesis.layer_sources import (
    DATA,
    PRIMITIVES,
    MissingSources,
    SynthesisDesign,
    primitive_library,
    synthesis_design,
)
from brainsmith.hardware.synthesis.yosys import (
    COUNTS,
    LUTRAM_LIBRARY,
    OPEN_FAMILIES,
    TIMEOUT,
    ULTRASCALE,
    Yosys,
    YosysMissing,
    count_keys,
    counts,
    failure,
    lutram_library,
)
from brainsmith.hardware.synthesis.yosys import run as run_yosys
from brainsmith.hardware.synthesis.yosys import script as yosys_script
from brainsmith.plugin.settings.memo import tool_cache

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import TypeGuard

    from qonnx.core.modelwrapper import ModelWrapper

FORMAT = "1"  # bump when what a cached result holds changes
SYNTHESISED, NOT_SYNTHESISED, FAILED = "synthesised", "not synthesised", "failed"
MAX_ENTRY_BYTES = 64 * 2**20  # a cache entry is a few hundred bytes
MAX_COUNT = 10**9  # more cells of a kind than any device has, by far


class CacheError(YosysMissing):
    """The cache directory is not a private folder of this user."""


@dataclass
class LayerSynthesis:
    """One layer's result: counts when synthesised, else the reason."""

    name: str
    op_type: str
    status: str
    reason: str = ""
    counts: dict[str, int] | None = None
    other: dict[str, int] = field(default_factory=dict)  # cells counted as no resource
    seconds: float | None = None
    cached: bool = False
    fixes: list[str] = field(default_factory=list)
    log: str = ""  # Yosys' log of a failed run


@dataclass
class DesignSynthesis:
    """Every layer of a design, the totals of those synthesised, and how."""

    part: str
    family: str
    tool: str
    layers: list[LayerSynthesis]
    seconds: float

    @property
    def totals(self) -> dict[str, int]:
        total = dict.fromkeys(COUNTS, 0)
        for layer in self.layers:
            for key, value in (layer.counts or {}).items():
                total[key] += value
        return total

    def as_dict(self) -> dict[str, object]:
        return {**asdict(self), "seconds": round(self.seconds, 2), "totals": self.totals}


SYNTHESIS_CACHE_VARIABLE = "BRAINSMITH_SYNTHESIS_CACHE"


def cache_root() -> str:
    """``BRAINSMITH_SYNTHESIS_CACHE`` if set (results shared by builds with other caches),
    else ``<brainsmith cache>/synthesis``; created private (0700); refuses a shared one."""
    root, problem = tool_cache("synthesis", SYNTHESIS_CACHE_VARIABLE, "synthesis cache")
    if root is None:
        hint = "set BRAINSMITH_CACHE_DIR to a folder of your own"
        if os.environ.get(SYNTHESIS_CACHE_VARIABLE):
            hint = f"point {SYNTHESIS_CACHE_VARIABLE} at a folder of your own, or unset it"
        raise CacheError(problem, hint)
    return root


def plan_of(design: SynthesisDesign, family: str, yosys: Yosys) -> Plan:
    """The run synthesising ``design`` for ``family``, its layer's name left out: the family
    and the script are its commands, the design's digest its input."""
    script = design.anonymous(_script(design, family))
    return Plan({"yosys": yosys.version}, [family, script], [design.digest()], format=FORMAT)


def _script(design: SynthesisDesign, family: str) -> str:
    return yosys_script(design.top, [n for n, _ in design.sources], design.primitives, family)


def synthesise_design(
    model: ModelWrapper,
    part: str,
    workdir: str,
    yosys: Yosys,
    *,
    jobs: int = 2,
    timeout: float = TIMEOUT,
    note: Callable[[str], None] | None = None,
) -> DesignSynthesis:
    """Every layer of ``model`` (a finished build's final model) synthesised for ``part``:
    up to ``jobs`` at once, each run in ``workdir``/<layer>/. Raises NotSynthesisable for a
    part of no family Yosys maps."""
    began = time.perf_counter()
    family = family_of(part)
    root = cache_root()
    processes = Processes()
    results: dict[str, LayerSynthesis] = {}
    pending: list[SynthesisDesign] = []
    for node in model.graph.node:
        try:
            pending.append(synthesis_design(model, node))
        except MissingSources as exc:
            results[node.name] = LayerSynthesis(node.name, node.op_type, FAILED, str(exc))
        except NotSynthesisable as exc:
            results[node.name] = LayerSynthesis(node.name, node.op_type, NOT_SYNTHESISED, str(exc))

    def one(design: SynthesisDesign) -> LayerSynthesis:
        folder = os.path.join(workdir, design.node)
        return synthesise_layer(design, family, yosys, root, folder, timeout, note, processes)

    alike: dict[str, list[SynthesisDesign]] = {}  # layers alike but for their names
    for design in pending:
        alike.setdefault(plan_of(design, family, yosys).digest(), []).append(design)
    pool = ThreadPoolExecutor(max_workers=max(1, jobs))
    try:
        for result, group in zip(
            pool.map(one, [g[0] for g in alike.values()]), alike.values(), strict=True
        ):
            results[result.name] = result
            for design in group[1:]:
                results[design.node] = _same_as(result, design)
    except BaseException:  # interrupted, a full disk: no Yosys outlives the synthesis
        processes.stop()
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
    layers = [results[node.name] for node in model.graph.node]
    return DesignSynthesis(part, family, yosys.version, layers, time.perf_counter() - began)


def _same_as(result: LayerSynthesis, design: SynthesisDesign) -> LayerSynthesis:
    """``design``'s result: that of ``result``'s layer, which it equals but for its name."""
    same = LayerSynthesis(design.node, design.op_type, result.status, result.reason)
    same.counts, same.other = result.counts, dict(result.other)
    same.cached, same.seconds, same.fixes, same.log = True, 0.0, design.fixes, result.log
    return same


def synthesise_layer(
    design: SynthesisDesign,
    family: str,
    yosys: Yosys,
    root: str,
    folder: str,
    timeout: float = TIMEOUT,
    note: Callable[[str], None] | None = None,
    processes: Processes | None = None,
) -> LayerSynthesis:
    """``design`` synthesised for ``family``: from the cache, or by Yosys in ``folder``
    (among ``processes``). DiskFull when the disk of ``folder`` fills up."""
    began = time.perf_counter()
    design = for_family(design, family)
    plan = plan_of(design, family, yosys)
    key, entry = plan.digest(), plan.entry(root)
    found = _read_cached(entry, key, family)
    result = LayerSynthesis(design.node, design.op_type, SYNTHESISED, fixes=design.fixes)
    if found is not None:
        result.counts, result.other = found
        result.cached = True
    else:
        if note is not None:
            note(f"synthesising {design.node} ({design.op_type})")
        code, log = _run_staged(design, family, folder, timeout, processes)
        try:
            result.counts, result.other = _counted(code, log, folder, timeout, family)
        except MissingSources as exc:
            result.status, result.log, result.reason = FAILED, log, str(exc)
        else:
            _write_cached(entry, key, result.counts, result.other)
    result.seconds = time.perf_counter() - began
    return result


def _run_staged(
    design: SynthesisDesign,
    family: str,
    folder: str,
    timeout: float,
    processes: Processes | None,
) -> tuple[int | None, str]:
    """Yosys run on ``design`` staged in ``folder``: (its exit code, its log). DiskFull
    when the disk of ``folder`` fills up."""
    workdir = os.path.dirname(os.path.abspath(folder))
    try:
        _stage(design, family, folder)
        code, log = run_yosys(folder, timeout, processes)
    except OSError as exc:
        if exc.errno in FULL_DISKS or disk_full(workdir):
            full = exc.errno if exc.errno in FULL_DISKS else errno.ENOSPC
            raise DiskFull(workdir, code=full) from exc
        raise
    if code != 0 and disk_full(workdir):  # Yosys could not write its output
        raise DiskFull(workdir)
    return code, log


def for_family(design: SynthesisDesign, family: str) -> SynthesisDesign:
    """``design`` as ``family`` reads it: for an open family with the fixes a Lattice part needs
    (FINN's behavioural datapath, no UltraRAM: ``brainsmith.hardware.synthesis.ecp5``)."""
    if family not in OPEN_FAMILIES:
        return design
    fixes = list(design.fixes)
    sources = [(name, lattice_ready(name, text, fixes)) for name, text in design.sources]
    return replace(design, sources=sources, fixes=fixes)


def _counted(
    code: int | None, log: str, folder: str, timeout: float, family: str
) -> tuple[dict[str, int], dict[str, int]]:
    """(resource counts, other cells) of a Yosys run in ``folder`` that exited with
    ``code``; MissingSources saying why there are none."""
    stat_json = os.path.join(folder, "stat.json")
    if code != 0 or not os.path.isfile(stat_json):
        raise MissingSources(failure(code, log, timeout))
    return counts(stat_json, family)


def _stage(design: SynthesisDesign, family: str, folder: str) -> None:
    """The run folder: sources, parameter files, primitives' models and the script."""
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(os.path.join(folder, "src"))
    os.makedirs(os.path.join(folder, DATA))
    for name, text in design.sources:
        with open(os.path.join(folder, "src", name), "w") as handle:
            handle.write(text)
    for name, content in design.data:
        with open(os.path.join(folder, DATA, name), "wb") as handle:
            handle.write(content)
    with open(os.path.join(folder, PRIMITIVES), "w") as handle:
        handle.write(primitive_library(design.primitives))
    with open(os.path.join(folder, "run.ys"), "w") as handle:
        handle.write(_script(design, family))
    fixed_library = lutram_library() if family in ULTRASCALE else None
    if fixed_library is not None:
        with open(os.path.join(folder, LUTRAM_LIBRARY), "w") as handle:
            handle.write(fixed_library)


def _read_cached(
    entry: str, key: str, family: str = ""
) -> tuple[dict[str, int], dict[str, int]] | None:
    """A cached result of ``key``; None when absent. An entry that is not a regular file of
    this user of at most ``MAX_ENTRY_BYTES`` holding counts this version wrote is removed
    (its layer is synthesised again)."""
    try:
        raw = entry_bytes(entry, MAX_ENTRY_BYTES)
    except FileNotFoundError:
        return None
    except OSError:
        raw = None
    data = None
    if raw is not None:
        try:
            data = json.loads(raw)
        except (ValueError, RecursionError):
            data = None
    found = other = None
    if isinstance(data, dict) and data.get("key") == key and data.get("format") == FORMAT:
        found, other = data.get("counts"), data.get("other")
    if not _is_counts(found, set(count_keys(family))) or not _is_counts(other, None):
        remove(entry)
        return None
    return dict(found), dict(other)


def _is_counts(value: object, keys: set[str] | None) -> TypeGuard[dict[str, int]]:
    if not isinstance(value, dict) or (keys is not None and set(value) != keys):
        return False
    return all(
        isinstance(k, str) and type(v) is int and 0 <= v < MAX_COUNT for k, v in value.items()
    )


def _write_cached(entry: str, key: str, found: dict[str, int], other: dict[str, int]) -> None:
    data = {"format": FORMAT, "key": key, "counts": found, "other": other}
    stored(entry, json.dumps(data).encode())
