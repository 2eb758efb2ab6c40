"""A graph whose nodes read tensors nothing produces is broken, whatever verification says:
checked after every step, so the step that broke it is named."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from qonnx.core.modelwrapper import ModelWrapper

LISTED = 5  # unproduced tensors named in a message


def unproduced(model: ModelWrapper) -> list[str]:
    """Each "node N reads T" (and "the graph's output T") where nothing produces T: no node,
    graph input or initializer."""
    graph = model.graph
    known = {t.name for t in graph.input} | {t.name for t in graph.initializer}
    known |= {name for node in graph.node for name in node.output}
    problems = [
        f"node {node.name} reads {name}"
        for node in graph.node
        for name in node.input
        if name and name not in known
    ]
    problems += [f"the graph's output {t.name}" for t in graph.output if t.name not in known]
    return problems


def wiring_error(step: str, model: ModelWrapper, parent: ModelWrapper | None) -> str:
    """Why ``step`` left the model (or the graph around the accelerator, ``parent``) broken
    ("" when it did not)."""
    around = unproduced(parent) if parent is not None else []
    problems = unproduced(model) + [f"{p} (around the accelerator)" for p in around]
    if not problems:
        return ""
    more = f" and {len(problems) - LISTED} more" if len(problems) > LISTED else ""
    return (
        f"step {step} left tensors that no node produces: {'; '.join(problems[:LISTED])}{more} "
        "(a transform removed their producer)"
    )
