"""The build plan as a build runs it, shaped in one place for ``brainsmith build`` and
``brainsmith check``: the blueprint's plan (``planning.plan``) with the caller's verify mode,
``build:`` options, backend preference and excluded kernels (``shape_plan``); its steps
resolved to functions (``resolve_steps``); FINN's configuration (``finn_config``). Every
problem is a setup BuildError naming the option or blueprint and what to change."""

from __future__ import annotations

import copy
import os
import shutil
from dataclasses import dataclass, replace
from typing import cast

from brainsmith.blueprint.choices import PREFERENCES, VERIFY_MODES
from brainsmith.blueprint.options import GIVEN_KEYS, check_given
from brainsmith.blueprint.packaged import FOLDER as PACKAGED_BLUEPRINTS
from brainsmith.frameworks.finn.env import prepare_finn, vivado_available
from brainsmith.frameworks.finn.recipe.steps import LEAN_STEPS
from brainsmith.frameworks.finn.resolvers import fpga_part
from brainsmith.frameworks.finn.tables import STEP_OUTPUTS, TOOL_STEPS
from brainsmith.planning.errors import OPTIONS, BuildError, option
from brainsmith.planning.lattice import check_part_and_board, finn_target, lattice_plan
from brainsmith.planning.plan import BuildPlan, PlanError, load_plan, without_kernels
from brainsmith.plugin import get_registry
from brainsmith.plugin.errors import PluginError
from brainsmith.plugin.names import short_name

DEFAULT_BLUEPRINT = os.path.join(PACKAGED_BLUEPRINTS, "default.yaml")

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence
    from typing import Any

    from finn.builder.build_dataflow_config import DataflowBuildConfig
    from qonnx.core.modelwrapper import ModelWrapper

    from brainsmith.planning.plan import BlueprintSource
    from brainsmith.plugin.spec import PluginSpec

    # ``build:`` options given by name, checked before they replace the blueprint's
    BuildOverrides = dict[str, Any]
    # A step as FINN calls it: (model, cfg) -> model
    StepFunction = Callable[[ModelWrapper, DataflowBuildConfig], ModelWrapper]


def shape_plan(
    blueprint: BlueprintSource | None,
    verify: str | None = None,
    options: BuildOverrides | None = None,
    prefer: str | None = None,
    exclude: Sequence[str] = (),
) -> BuildPlan:
    """The plan of ``blueprint`` (None: ``DEFAULT_BLUEPRINT``) with the caller's ``verify``
    mode, ``build:`` ``options``, ``prefer`` and ``exclude``d kernels over the blueprint's."""
    plan = plan_for(DEFAULT_BLUEPRINT if blueprint is None else blueprint, verify)
    return excluding(with_overrides(plan, options or {}, prefer), exclude)


def plan_for(blueprint: BlueprintSource, verify: str | None) -> BuildPlan:
    try:
        plan = load_plan(blueprint)
    except (PlanError, PluginError, OSError) as exc:
        raise BuildError.setup(
            f"blueprint {blueprint}: {exc}",
            "fix the blueprint (brainsmith blueprint validate FILE)",
        ) from exc
    if plan.options is None:
        raise BuildError.setup(
            f"blueprint {plan.name} has no build: section",
            "add build: with fpga_part (or board) and target_fps",
        )
    if not plan.steps:
        raise BuildError.setup(
            f"blueprint {plan.name} leaves no step to run",
            "list at least one installed step, or drop steps: for the standard flow",
        )
    if verify is not None:
        if verify not in VERIFY_MODES:
            raise BuildError.setup(
                f"{option('verify')} must be one of {', '.join(VERIFY_MODES)}, not {verify!r}",
            )
        plan = replace(plan, options=replace(plan.build, verify=verify))
    return plan


def with_overrides(plan: BuildPlan, options: BuildOverrides, prefer: str | None) -> BuildPlan:
    """``plan`` with command-line choices over the blueprint's, checked as a blueprint's are; a
    part replaces a board."""
    if prefer is not None and prefer not in PREFERENCES:
        raise BuildError.setup(
            f"{option('prefer')} must be one of {', '.join(PREFERENCES)}, not {prefer!r}",
        )
    given = _checked_options(options, plan.build.board)
    recorded = copy.deepcopy(plan.blueprint)  # what report.json says was built
    if given:
        plan = replace(plan, options=replace(plan.build, **given))
        recorded["build"] = plan.build.to_dict()
    if prefer is not None:
        plan = replace(plan, prefer=prefer)
        recorded.setdefault("hw_compiler", {})["prefer"] = prefer
    return lattice_plan(replace(plan, blueprint=recorded))


def _checked_options(options: BuildOverrides, board: str | None) -> BuildOverrides:
    """The ``build:`` ``options`` given (None: not given), checked as a blueprint's are, with
    a part replacing the blueprint's ``board`` and a board its part."""
    given, problems = check_given(
        {key: value for key, value in options.items() if value is not None}
    )
    if problems:
        raise BuildError.setup(_problems(problems))
    check_part_and_board(given.get("fpga_part"), given.get("board", board))
    if given.get("fpga_part") and given.get("board"):
        raise BuildError.setup(
            f"{option('part')} and {option('board')} are both given", "give one of them"
        )
    _replace_target(given)
    return given


def _problems(problems: Mapping[str, Sequence[str]]) -> str:
    """Every problem with the options given, each named as the caller wrote the option."""
    return "; ".join(
        f"{_spelled(key)}: {message}" for key, found in problems.items() for message in found
    )


def _replace_target(given: BuildOverrides) -> None:
    """A part given replaces the blueprint's board; a board given, its part."""
    if "fpga_part" in given:
        given["board"] = None
    elif given.get("board"):
        given["fpga_part"] = None


def _spelled(key: str) -> str:
    """How the caller wrote build option ``key``: ``--target-fps`` or ``options['target_fps']``
    (an unknown key as it was given)."""
    if key not in GIVEN_KEYS:
        return f"options[{key!r}]"
    flag = {"fpga_part": "part"}.get(key, key.replace("_", "-"))
    return option(flag) if flag in OPTIONS else f"options[{key!r}]"


def excluding(plan: BuildPlan, names: Sequence[str]) -> BuildPlan:
    """``plan`` without the kernels ``names`` (``--exclude``), or a setup BuildError naming
    the one no installed kernel has."""
    if not names:
        return plan
    try:
        return without_kernels(plan, names)
    except PluginError as exc:
        raise BuildError.setup(
            f"{option('exclude')}: {exc}",
            "name an installed kernel (brainsmith plugins list --type kernel)",
        ) from exc


@dataclass
class Step:
    """A step of the plan, resolved: its function, or why it is skipped."""

    name: str
    plugin: str
    fn: StepFunction | None = None
    skip_reason: str = ""
    verifiable: bool = True  # False for FINN's hardware steps (Vivado products)
    deferred: PluginSpec | None = None  # loaded when it runs (see ``function``)

    def function(self) -> StepFunction | None:
        """The step's function; a deferred one (a FINN hardware step without its tool,
        which runs only for some models) is loaded now: loading one imports all of FINN's
        builder."""
        if self.fn is None and self.deferred is not None:
            self.fn = cast("StepFunction", get_registry().load(self.deferred))
        return self.fn


def resolve_steps(plan: BuildPlan) -> list[Step]:
    """The plan's steps, each with its function, deferred, or why it is skipped; a setup
    BuildError for a step the blueprint names that cannot be loaded."""
    get_registry()  # a configuration error is raised as it is, not blamed on the steps
    try:
        return [_resolved(plan.spec("step", name)) for name in plan.steps]
    except PluginError as exc:
        raise BuildError.setup(str(exc), "fix the blueprint's steps") from exc


def _resolved(spec: PluginSpec) -> Step:
    """Step ``spec``: skipped when a tool it needs is not on PATH; FINN's hardware steps run
    FINN's body where brainsmith has it, else are loaded when they run without Vivado."""
    tool_step = spec.framework == "finn" and spec.name in TOOL_STEPS
    missing = [t for t in spec.metadata.get("tools", []) if shutil.which(t) is None]
    step = Step(spec.name, spec.qualified_name, verifiable=not tool_step)
    if missing:
        step.skip_reason = f"needs {', '.join(missing)} on PATH"
    elif tool_step:
        _tool_step(step, spec)
    else:
        step.fn = cast("StepFunction", get_registry().load(spec))
    return step


def _tool_step(step: Step, spec: PluginSpec) -> None:
    """FINN's hardware ``step`` (``spec``): FINN's body where brainsmith has it (its builder
    not imported), else loaded now with Vivado or when it runs without (some models only)."""
    if spec.name in LEAN_STEPS:
        step.fn = cast("StepFunction", LEAN_STEPS[spec.name])
    elif not vivado_available():
        step.deferred = spec
    else:
        step.fn = cast("StepFunction", get_registry().load(spec))


def finn_config(plan: BuildPlan, finn_dir: str) -> DataflowBuildConfig:
    prepare_finn()
    import finn.custom_op.fpgadataflow  # noqa: F401 - FINN's layers load during setup, not a step
    from finn.builder.build_dataflow_config import DataflowBuildConfig, DataflowOutputType
    from finn.util.exception import FINNConfigurationError

    options = plan.build
    part, board = finn_target(options)
    wanted = ["estimate_reports"]
    for name in plan.steps:
        wanted += STEP_OUTPUTS.get(short_name(name), ())
    outputs = [DataflowOutputType(value) for value in dict.fromkeys(wanted)]
    cfg = DataflowBuildConfig(
        output_dir=finn_dir,
        synth_clk_period_ns=float(options.period_ns),
        fpga_part=part,
        board=board,
        target_fps=options.fold_fps,
        mvau_wwidth_max=options.folding.mvau_wwidth_max,
        folding_config_file=options.folding_config,
        specialize_layers_config_file=options.specialize_config,
        generate_outputs=outputs,
        # RTL-only matrix kernels need separate threshold layers; FINN's own steps then agree.
        standalone_thresholds=plan.needs_standalone_thresholds(),
    )
    try:
        fpga_part(cfg)
    except FINNConfigurationError as exc:
        raise BuildError.setup(
            str(exc),
            "set build.fpga_part, or a board FINN knows",
        ) from exc
    return cfg
