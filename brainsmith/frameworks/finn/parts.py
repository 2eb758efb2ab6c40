"""FINN's FPGA boards, parts and their resources, read from FINN's sources with ``ast``
(``finn/util/basic.py`` part maps, ``finn/util/platforms.py`` resource tables), so that
``brainsmith blueprint validate`` checks ``board``/``fpga_part`` without importing FINN.

- ``boards()``: board name -> FPGA part, as FINN's ``part_map``.
- ``is_part(part)``: FINN knows the part, or it is a well-formed AMD/Xilinx part number.
- ``part_resources(part)``: LUT/FF/BRAM_18K/URAM/DSP of the part's device, or None.
"""

from __future__ import annotations

import ast
import functools
import os
import re

from brainsmith.frameworks.finn.facts import PLATFORM_RESOURCES
from brainsmith.plugin.discovery.sources.adapters import locate_package

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from typing import TypeGuard


# Devices brainsmith builds for that FINN has no resource table for (same order), with
# where the numbers come from. VC1902: AMD DS950 (Versal AI Core); K26: AMD DS987 (Kria K26
# SOM); XCV80 (the Alveo V80's device): the "Available" column of Vivado's utilization report
# for xcv80-lsva4737-2MHP-e-S (3,741 block RAM tiles of 36 Kb, counted as BRAM_18K here).
EXTRA_RESOURCES: dict[str, tuple[tuple[int, ...], str]] = {
    "xcvc1902": ((899_840, 1_799_680, 2 * 967, 463, 1_968), "AMD data sheet"),
    "xck26": ((117_120, 234_240, 2 * 144, 64, 1_248), "AMD data sheet"),
    "xcv80": ((2_574_208, 5_148_416, 2 * 3_741, 1_925, 10_848), "Vivado utilization report"),
}

# AMD/Xilinx part numbers: device, package and pins, speed grade (and temperature grade).
PART_PATTERNS = tuple(
    re.compile(p, re.IGNORECASE)
    for p in (
        # 7 series: xc7z020clg400-1, xc7a35ticsg324-1L, xc7vx690tffg1761-2
        r"(?P<device>x[cqa]7(?:z\d{3}s?|[aks]\d{2,3}t?i?|v[xh]?\d{3,4}t))"
        r"[a-z]{2,4}\d{3,4}-[1-3][a-z]*",
        # UltraScale(+), Zynq MPSoC/RFSoC, Alveo, Kria: xczu7ev-ffvc1156-2-e, xcu250-figd2104-2L-e
        r"(?P<device>x[cqa](?:zu\d{1,2}(?:eg|ev|cg|dr)|ku\d{1,3}p?|vu\d{1,3}p?|au\d{1,2}p"
        r"|u\d{2,3}c?|k\d{2}))-[a-z]{4}\d{3,4}-[1-3][a-z]*-[eic]",
        # Versal: xcvc1902-vsva2197-2MP-e-S, xcv80-lsva4737-2MHP-e-S
        r"(?P<device>x[cqa]v(?:[cmpeh]\d{4}|\d{2}))-[a-z]{4}\d{3,4}-[1-3][a-z]*-[eic](?:-s)?",
    )
)


def device_of(part: str) -> str | None:
    """``xc7z020clg400-1`` -> ``xc7z020``; None for text that is no AMD/Xilinx part number."""
    for pattern in PART_PATTERNS:
        match = pattern.fullmatch(part.strip())
        if match:
            return match.group("device").lower()
    return None


def boards() -> dict[str, str]:
    """FINN's boards and their parts ({} when FINN is not installed)."""
    return dict(_tables()[0])


def known_parts() -> list[str]:
    """The parts of FINN's boards."""
    return sorted(set(boards().values()))


def is_part(part: str) -> bool:
    """True for a part of FINN's boards or a well-formed AMD/Xilinx part number."""
    return part in known_parts() or device_of(part) is not None


def part_resources(part: str) -> tuple[dict[str, int], str] | None:
    """(resources, source) of ``part``'s device: FINN's platform table, else EXTRA_RESOURCES."""
    device = device_of(part)
    if device is None:
        return None
    _, by_device = _tables()
    if device in by_device:
        return dict(
            zip(PLATFORM_RESOURCES, by_device[device], strict=True)
        ), "finn/util/platforms.py"
    if device in EXTRA_RESOURCES:
        amounts, source = EXTRA_RESOURCES[device]
        return dict(zip(PLATFORM_RESOURCES, amounts, strict=True)), source
    return None


@functools.cache
def _tables() -> tuple[dict[str, str], dict[str, tuple[int, ...]]]:
    """(board -> part, device -> resources) from FINN's sources."""
    folder = locate_package("finn")
    if folder is None:
        return {}, {}
    part_map = _part_map(_parse(os.path.join(folder, "util", "basic.py")))
    platforms = _platforms(_parse(os.path.join(folder, "util", "platforms.py")))
    by_device = {}
    for board, resources in platforms.items():
        device = device_of(part_map.get(board, ""))
        if device is not None:
            by_device[device] = resources
    return part_map, by_device


def _parse(path: str) -> ast.Module:
    try:
        with open(path, encoding="utf-8") as handle:
            return ast.parse(handle.read(), path)
    except (OSError, SyntaxError, ValueError):
        return ast.Module(body=[], type_ignores=[])


def _part_map(tree: ast.Module) -> dict[str, str]:
    """``*part_map["Board"] = "part"`` assignments, in file order."""
    found = {}
    for key, value, table in _subscript_assignments(tree):
        if table.endswith("part_map") and isinstance(value, ast.Constant):
            found[key] = str(value.value)
    return found


def _platforms(tree: ast.Module) -> dict[str, tuple[int, ...]]:
    """Board -> total LUT/FF/BRAM_18K/URAM/DSP over its SLRs (``platforms["B"] = Class``)."""
    per_class = {}
    for node in tree.body:
        rows = _resource_rows(node) if isinstance(node, ast.ClassDef) else None
        if isinstance(node, ast.ClassDef) and _is_table(rows):
            per_class[node.name] = tuple(sum(column) for column in zip(*rows, strict=True))
    return {
        key: per_class[value.id]
        for key, value, table in _subscript_assignments(tree)
        if table == "platforms" and isinstance(value, ast.Name) and value.id in per_class
    }


def _resource_rows(platform: ast.ClassDef) -> object:
    """What a platform class's last ``compute_resources`` returns, as a literal (None when
    it has none or returns something else)."""
    rows: object = None
    for item in platform.body:
        if isinstance(item, ast.FunctionDef) and item.name == "compute_resources":
            returned = [s.value for s in item.body if isinstance(s, ast.Return) and s.value]
            rows = _literal(returned[-1]) if returned else None
    return rows


def _subscript_assignments(tree: ast.Module) -> Iterator[tuple[str, ast.expr, str]]:
    for node in tree.body:
        if not isinstance(node, ast.Assign) or len(node.targets) != 1:
            continue
        target = node.targets[0]
        if (
            isinstance(target, ast.Subscript)
            and isinstance(target.value, ast.Name)
            and isinstance(target.slice, ast.Constant)
            and isinstance(target.slice.value, str)
        ):
            yield target.slice.value, node.value, target.value.id


def _literal(node: ast.expr) -> object:
    """Numbers, lists, ``a * b`` / ``a + b`` and ``[row for i in range(n)]``; None otherwise."""
    read = _LITERALS.get(type(node))
    return None if read is None else read(node)


def _number(node: ast.expr) -> object:
    assert isinstance(node, ast.Constant)
    return node.value if isinstance(node.value, int | float) else None


def _list(node: ast.expr) -> object:
    assert isinstance(node, ast.List)
    items = [_literal(e) for e in node.elts]
    return None if any(i is None for i in items) else items


def _arithmetic(node: ast.expr) -> object:
    """``a * b`` or ``a + b`` of two numbers."""
    assert isinstance(node, ast.BinOp)
    left, right = _literal(node.left), _literal(node.right)
    if not isinstance(left, int | float) or not isinstance(right, int | float):
        return None
    if isinstance(node.op, ast.Mult):
        return left * right
    return left + right if isinstance(node.op, ast.Add) else None


def _repeated_row(node: ast.expr) -> object:
    """``[row for i in range(n)]``: ``n`` copies of the row."""
    assert isinstance(node, ast.ListComp)
    count = _range_count(node.generators[0].iter) if len(node.generators) == 1 else None
    if count is None:
        return None
    row = _literal(node.elt)
    return None if row is None else [row] * count


def _range_count(loop: ast.expr) -> int | None:
    """``n`` of ``range(n)`` with a literal ``n``; None for any other loop."""
    if not (isinstance(loop, ast.Call) and isinstance(loop.func, ast.Name)):
        return None
    if loop.func.id != "range" or len(loop.args) != 1:
        return None
    count = _literal(loop.args[0])
    return count if isinstance(count, int) else None


_LITERALS: dict[type[ast.expr], Callable[[ast.expr], object]] = {
    ast.Constant: _number,
    ast.List: _list,
    ast.BinOp: _arithmetic,
    ast.ListComp: _repeated_row,
}


def _is_table(rows: object) -> TypeGuard[list[list[int]]]:
    return (
        isinstance(rows, list)
        and bool(rows)
        and all(isinstance(r, list) and len(r) == len(PLATFORM_RESOURCES) for r in rows)
    )
