"""What the open families' synthesis shares: Yosys' cells counted as a family's resources
(``counts``, by each family's table of cells) and the memory mapping of a family without
distributed RAM (``memories_by_cost``)."""

from __future__ import annotations


def counts(
    cells: dict[str, int], table: dict[str, dict[str, int]]
) -> tuple[dict[str, int], dict[str, int]]:
    """(each resource of ``table`` as it counts Yosys' ``cells`` by type, a cell in each
    resource that lists it; the other cells by type)."""
    found = dict.fromkeys(table, 0)
    other: dict[str, int] = {}
    for kind, number in sorted(cells.items()):
        listed = [resource for resource, cells_of in table.items() if kind in cells_of]
        for resource in listed:
            found[resource] += number * table[resource][kind]
        if not listed:
            other[kind] = number
    return found, other


def memories_by_cost(synth: str, step: str, netlist: str = "") -> list[str]:
    """Yosys' commands: ``synth`` up to its memory-mapping ``step``, every memory's asked style
    cleared (FINN's ``ram_style``, often distributed RAM, which a family without it cannot map
    and Yosys then refuses), then the rest, writing the JSON ``netlist`` (none when empty):
    each memory goes to block RAM or flip-flops by its cost."""
    return [
        f"{synth} -run :{step}",
        "setattr -unset ram_style t:$mem_v2",
        f"{synth} -run {step}:" + (f" -json {netlist}" if netlist else ""),
    ]


__all__ = ["counts", "memories_by_cost"]
