"""The build context: how a blueprint's selection reaches steps that FINN calls as
``step(model, cfg)``.

``brainsmith.build`` attaches a ``BuildContext`` to the ``DataflowBuildConfig`` as the
attribute ``brainsmith``; a step reads it with ``context_of(cfg)``. Called from a plain
FINN build, a step gets a default context: every kernel FINN can infer, any backend,
no extra transforms.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from brainsmith.steps.plan import BuildPlan

TYPE_CHECKING = False
if TYPE_CHECKING:
    from qonnx.core.modelwrapper import ModelWrapper

CONTEXT_ATTRIBUTE = "brainsmith"


@dataclass
class BuildContext:
    """Per-build state shared by the steps."""

    plan: BuildPlan = field(default_factory=BuildPlan)
    dataflow_parent: ModelWrapper | None = None  # holds the StreamingDataflowPartition
    notes: list[str] = field(default_factory=list)  # things a step wants in the report


def context_of(cfg: object) -> BuildContext:
    """The context attached to ``cfg``, attaching a default one if there is none."""
    context = getattr(cfg, CONTEXT_ATTRIBUTE, None)
    if context is None:
        context = BuildContext()
        attach(cfg, context)
    return context


def attach(cfg: object, context: BuildContext) -> None:
    setattr(cfg, CONTEXT_ATTRIBUTE, context)
