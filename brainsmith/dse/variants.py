"""The variants of a design-space blueprint: one plain build plan per picked point."""

from __future__ import annotations

from dataclasses import dataclass, field

from brainsmith.blueprint.space import MAX_VARIANTS
from brainsmith.errors import BrainsmithError
from brainsmith.planning.plan import BuildPlan, plan_from_blueprint

TYPE_CHECKING = False
if TYPE_CHECKING:
    from brainsmith.blueprint.resolved import Blueprint


@dataclass
class Variant:
    """One point of the design space: its id (``v07``), its choices and its build plan."""

    index: int
    id: str
    choices: dict[str, object]
    plan: BuildPlan
    keys: list[str] = field(default_factory=list)  # per step: what it has computed so far

    @property
    def key(self) -> str:
        """Everything this variant's build depends on (its last step's key)."""
        return self.keys[-1] if self.keys else ""


class SpaceError(BrainsmithError, ValueError):
    """A blueprint that cannot be explored; the message says why."""


def expand(blueprint: Blueprint) -> list[Variant]:
    """The variants ``blueprint`` (a loaded ``Blueprint``) picks, in order; the count is
    checked against ``MAX_VARIANTS`` before any is made."""
    space = blueprint.design_space
    if space is None:
        raise SpaceError(
            f"blueprint {blueprint.name} has no design_space: section, so it describes one design"
        )
    if space.count > MAX_VARIANTS:
        key = "search.max_variants" if space.search.strategy == "random" else "design_space"
        raise SpaceError(
            f"blueprint {blueprint.name}: {key} picks {space.count:,} variants, more than "
            f"the {MAX_VARIANTS:,} an exploration builds"
        )
    variants = []
    for index in space.indices():
        plan = plan_from_blueprint(space.apply(blueprint, index))
        variants.append(Variant(index, space.variant_id(index), space.choices(index), plan))
    return variants
