"""The build context: how a blueprint's selection reaches steps that FINN calls as
``step(model, cfg)``.

A brainsmith build runs its steps inside ``running(context)``; a step reads the running
build's ``BuildContext`` with ``context_of(cfg)`` — passed beside FINN's call, never stored on
FINN's config. Called from a plain FINN build, a step gets a default context (every kernel
FINN can infer, any backend, no extra transforms), kept with that build's config so its
steps share it.
"""

from __future__ import annotations

import contextlib
import contextvars
from dataclasses import dataclass, field

from brainsmith.planning.plan import BuildPlan

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator

    from qonnx.core.modelwrapper import ModelWrapper

    from brainsmith.frameworks.finn.folding.record import CostedPart
    from brainsmith.frameworks.finn.folding.search import FoldingRecord

PLAIN_FINN_ATTRIBUTE = "brainsmith"  # the default context of a plain FINN build


@dataclass
class BuildContext:
    """Per-build state shared by the steps."""

    plan: BuildPlan = field(default_factory=BuildPlan)
    dataflow_parent: ModelWrapper | None = None  # holds the StreamingDataflowPartition
    notes: list[str] = field(default_factory=list)  # things a step wants in the report
    folding: FoldingRecord | None = None  # what the folding step reached for target_fps
    costed_part: CostedPart | None = None  # a Lattice board's part, costed in its resources


_RUNNING: contextvars.ContextVar[BuildContext | None] = contextvars.ContextVar(
    "brainsmith_build_context", default=None
)


@contextlib.contextmanager
def running(context: BuildContext) -> Iterator[BuildContext]:
    """Within the block (this thread or task), steps see ``context``."""
    token = _RUNNING.set(context)
    try:
        yield context
    finally:
        _RUNNING.reset(token)


def context_of(cfg: object) -> BuildContext:
    """The running build's context; in a plain FINN build, the default one of ``cfg``."""
    context = _RUNNING.get()
    if context is not None:
        return context
    kept = getattr(cfg, PLAIN_FINN_ATTRIBUTE, None)
    if isinstance(kept, BuildContext):
        return kept
    context = BuildContext()
    attach(cfg, context)
    return context


def attach(cfg: object, context: BuildContext) -> None:
    """Give a plain FINN build's steps ``context`` (FINN calls them as ``step(model, cfg)``
    and knows no other way; brainsmith's own builds use ``running``)."""
    setattr(cfg, PLAIN_FINN_ATTRIBUTE, context)
