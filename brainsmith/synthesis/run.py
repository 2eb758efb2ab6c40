"""Synthesise every RTL layer of a design, two at a time, each result cached by content.

The cache key is a SHA-256 of everything that decides the counts: the Yosys version, the
family, the script, the top module and the text of every file Yosys reads (after the fixes)
with the parameter files. A result is a JSON file in the user's private cache directory
(``<cache>/synthesis/<key>.json``, written to a temporary name and renamed into place); the
same layer in another build, or the same build again, is not synthesised twice. What cannot
be synthesised (an HLS layer, a Versal part) has its reason; what Yosys rejects has the first
error line of its log, and the log stays in the run folder.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field

from brainsmith.synthesis.families import NotSynthesisable, family_of
from brainsmith.synthesis.sources import (
    DATA,
    PRIMITIVES,
    MissingSources,
    SynthesisDesign,
    primitive_library,
    synthesis_design,
)
from brainsmith.synthesis.yosys import (
    COUNTS,
    LUTRAM_LIBRARY,
    TIMEOUT,
    ULTRASCALE,
    Yosys,
    YosysMissing,
    counts,
    first_error,
    lutram_library,
)
from brainsmith.synthesis.yosys import run as run_yosys
from brainsmith.synthesis.yosys import script as yosys_script

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import TypeGuard

    from qonnx.core.modelwrapper import ModelWrapper

FORMAT = "1"  # bump when what a cached result holds changes
SYNTHESISED, NOT_SYNTHESISED, FAILED = "synthesised", "not synthesised", "failed"


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
        return {
            "part": self.part,
            "family": self.family,
            "tool": self.tool,
            "seconds": round(self.seconds, 2),
            "layers": [asdict(layer) for layer in self.layers],
            "totals": self.totals,
        }


SYNTHESIS_CACHE_VARIABLE = "BRAINSMITH_SYNTHESIS_CACHE"


def cache_root() -> str:
    """``BRAINSMITH_SYNTHESIS_CACHE`` if set (results shared by builds with other caches),
    else ``<brainsmith cache>/synthesis``; created private (0700); refuses a shared one."""
    from brainsmith.plugin.memo import tool_cache

    root, problem = tool_cache("synthesis", SYNTHESIS_CACHE_VARIABLE, "synthesis cache")
    if root is None:
        raise CacheError(problem)
    return root


def cache_key(design: SynthesisDesign, family: str, yosys: Yosys) -> str:
    script = design.anonymous(_script(design, family))
    text = "\0".join([FORMAT, yosys.version, family, script, design.digest()])
    return hashlib.sha256(text.encode()).hexdigest()


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
        return synthesise_layer(design, family, yosys, root, folder, timeout, note)

    alike: dict[str, list[SynthesisDesign]] = {}  # layers alike but for their names
    for design in pending:
        alike.setdefault(cache_key(design, family, yosys), []).append(design)
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        for result, group in zip(
            pool.map(one, [g[0] for g in alike.values()]), alike.values(), strict=True
        ):
            results[result.name] = result
            for design in group[1:]:
                results[design.node] = _same_as(result, design)
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
) -> LayerSynthesis:
    """``design`` synthesised for ``family``: from the cache, or by Yosys in ``folder``."""
    began = time.perf_counter()
    key = cache_key(design, family, yosys)
    entry = os.path.join(root, f"{key[:40]}.json")
    found = _read_cached(entry, key)
    result = LayerSynthesis(design.node, design.op_type, SYNTHESISED, fixes=design.fixes)
    if found is not None:
        result.counts, result.other = found
        result.cached = True
    else:
        if note is not None:
            note(f"synthesising {design.node} ({design.op_type})")
        _stage(design, family, folder)
        code, log = run_yosys(folder, timeout)
        stat = os.path.join(folder, "stat.json")
        if code != 0 or not os.path.isfile(stat):
            result.status, result.log = FAILED, log
            result.reason = (
                f"Yosys took longer than {timeout:.0f} s and was stopped"
                if code == -1
                else first_error(log)
            )
        else:
            result.counts, result.other = counts(stat)
            _write_cached(root, entry, key, result.counts, result.other)
    result.seconds = time.perf_counter() - began
    return result


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


def _read_cached(entry: str, key: str) -> tuple[dict[str, int], dict[str, int]] | None:
    """A cached result of ``key``; None when absent or not one this version wrote."""
    try:
        with open(entry) as handle:
            data = json.load(handle)
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("key") != key or data.get("format") != FORMAT:
        return None
    found, other = data.get("counts"), data.get("other")
    if not _is_counts(found, set(COUNTS)) or not _is_counts(other, None):
        return None
    return dict(found), dict(other)


def _is_counts(value: object, keys: set[str] | None) -> TypeGuard[dict[str, int]]:
    if not isinstance(value, dict) or (keys is not None and set(value) != keys):
        return False
    return all(isinstance(k, str) and type(v) is int and v >= 0 for k, v in value.items())


def _write_cached(
    root: str, entry: str, key: str, found: dict[str, int], other: dict[str, int]
) -> None:
    data = {"format": FORMAT, "key": key, "counts": found, "other": other}
    handle, temporary = tempfile.mkstemp(prefix=".tmp-", suffix=".json", dir=root)
    try:
        with os.fdopen(handle, "w") as out:
            json.dump(data, out)
        os.replace(temporary, entry)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
