"""Kernel choices a build could not honour are refused by ``blueprint validate`` (with the
real QONNX/FINN registry): a kernel without any backend, and two kernels building the same
layers with different allowed backends."""

from __future__ import annotations

import pytest

from brainsmith.blueprint import BlueprintError, load_blueprint
from tests.test_blueprint_support import write

HEADER = "steps: [cleanup]\nbuild: {fpga_part: xcvc1902-vsva2197-2MP-e-S}\n"


def problems(path) -> list[str]:
    with pytest.raises(BlueprintError) as err:
        load_blueprint(path)
    return [str(problem) for problem in err.value.problems]


def test_kernel_without_any_backend_is_refused_at_its_line(tmp_path):
    path = write(
        tmp_path,
        "bp.yaml",
        HEADER + "hw_compiler:\n  kernels:\n    - matmul\n    - finn:StreamingDataflowPartition\n",
    )
    [problem] = problems(path)
    assert problem.startswith(f"{path}:6:7: error: kernel finn:StreamingDataflowPartition has no")
    assert "brainsmith plugins list --type backend" in problem


def test_same_layers_with_contradictory_backends_are_refused(tmp_path):
    path = write(
        tmp_path,
        "bp.yaml",
        HEADER
        + "hw_compiler:\n  kernels:\n"
        + "    - {kernel: matmul, backends: [rtl]}\n"
        + "    - {kernel: finn:MVAU, backends: [hls]}\n",
    )
    [problem] = problems(path)
    assert problem.startswith(
        f"{path}:6:16: error: kernels brainsmith:matmul (line 5) and finn:MVAU"
    )
    assert "both build MVAU layers" in problem and "MatMulRTL vs MVAU_hls" in problem


def test_shuffle_is_accepted_because_the_build_decomposes_it(tmp_path):
    path = write(tmp_path, "bp.yaml", HEADER + "hw_compiler:\n  kernels: [finn:Shuffle]\n")
    blueprint = load_blueprint(path)
    assert [choice.kernel.qualified_name for choice in blueprint.kernels] == ["finn:Shuffle"]


def test_kernels_default_to_auto_and_say_so_when_shown(tmp_path):
    blueprint = load_blueprint(write(tmp_path, "bp.yaml", HEADER))
    assert blueprint.auto_kernels and blueprint.kernels == () and blueprint.prefer == "auto"
    assert blueprint.to_dict()["hw_compiler"]["kernels"] == ["auto"]


def test_auto_entry_keeps_pins_prefer_and_exclude_round_trip(tmp_path):
    path = write(
        tmp_path,
        "bp.yaml",
        HEADER
        + "hw_compiler:\n  kernels: [auto, {kernel: finn:Thresholding, backends: [rtl]}]\n"
        + "  prefer: hls\n  exclude: [finn:LabelSelect]\n",
    )
    blueprint = load_blueprint(path)
    assert blueprint.auto_kernels and blueprint.prefer == "hls"
    assert [s.qualified_name for s in blueprint.exclude] == ["finn:LabelSelect"]
    shown = blueprint.to_dict()["hw_compiler"]
    assert shown["kernels"][0] == "auto" and shown["prefer"] == "hls"
    again = write(tmp_path, "again.yaml", HEADER + "hw_compiler: " + repr(shown) + "\n")
    assert load_blueprint(again).to_dict()["hw_compiler"] == shown


def test_explicit_list_without_auto_is_exactly_those_kernels(tmp_path):
    from brainsmith.planning.plan import load_plan

    path = write(tmp_path, "bp.yaml", HEADER + "hw_compiler:\n  kernels: [matmul]\n")
    assert not load_blueprint(path).auto_kernels
    assert [k.name for k in load_plan(path).kernels] == ["brainsmith:matmul"]


@pytest.mark.parametrize(
    ("section", "expected"),
    [
        ("  prefer: fpga\n", "hw_compiler.prefer is the text 'fpga'; expected auto, rtl or hls"),
        ("  exclude: [nosuchkernel]\n", "no kernel named 'nosuchkernel'"),
        ("  kernels: everything\n", "hw_compiler.kernels is the text 'everything'; expected auto"),
    ],
)
def test_bad_prefer_exclude_and_kernels_are_named(tmp_path, section, expected):
    path = write(tmp_path, "bp.yaml", HEADER + "hw_compiler:\n" + section)
    assert any(expected in p for p in problems(path)), problems(path)


def test_auto_plan_has_one_choice_per_layer_kind_with_finn_order(tmp_path):
    from brainsmith.planning.plan import load_plan

    plan = load_plan(write(tmp_path, "bp.yaml", HEADER))
    op_types = [k.op_type for k in plan.kernels]
    assert len(op_types) == len(set(op_types))
    assert {"MVAU", "VVAU", "Pool", "DuplicateStreams", "LayerNorm"} <= set(op_types)
    assert not {"Squeeze", "Unsqueeze", "StreamingDataflowPartition"} & set(op_types)
    transforms = plan.infer_transforms()
    assert (
        transforms.index("finn:InferBinaryMatrixVectorActivation")
        < transforms.index("finn:InferQuantizedMatrixVectorActivation")
        < transforms.index("finn:InferThresholdingLayer")
    )


def test_auto_includes_a_users_kernel_with_an_infer_transform_and_a_backend(
    plugin_folder, tmp_path
):
    from brainsmith.planning.plan import load_plan
    from brainsmith.plugin.manager import reset_plugin_system

    plugin_folder(
        "acme.py",
        """\
        from brainsmith.plugin.core import backend, kernel, transform

        @transform(name="InferAcmeClip")
        class InferAcmeClip:
            pass

        @kernel(name="AcmeClip", op_type="AcmeClip", infer_transform="user:InferAcmeClip")
        class AcmeClip:
            pass

        @kernel(name="AcmeOrphan", op_type="AcmeOrphan", infer_transform="user:InferAcmeClip")
        class AcmeOrphan:  # no backend: nothing could build its layers
            pass

        @backend(name="AcmeClip_rtl", kernel="AcmeClip", backend_type="rtl")
        class AcmeClipRTL:
            pass
        """,
    )
    reset_plugin_system()
    plan = load_plan(write(tmp_path, "bp.yaml", HEADER))
    acme = [k for k in plan.kernels if k.name.startswith("user:Acme")]
    assert [(k.name, k.infer_transforms, k.pinned) for k in acme] == [
        ("user:AcmeClip", ["user:InferAcmeClip"], False)
    ]
    excluded = write(tmp_path, "ex.yaml", HEADER + "hw_compiler:\n  exclude: [AcmeClip]\n")
    assert not [k for k in load_plan(excluded).kernels if k.name == "user:AcmeClip"]


ORDERED_KERNELS = """\
from brainsmith.plugin.core import backend, kernel, transform

@transform(name="InferFirst")
class InferFirst:
    pass

@transform(name="InferMiddle")
class InferMiddle:
    pass

@transform(name="InferLast")
class InferLast:
    pass

@transform(name="ExposeMiddle")
class ExposeMiddle:
    pass

@kernel(op_type="AcmeFirst", infer_transform="user:InferFirst", infer_order="first")
class AcmeFirst:
    pass

@kernel(op_type="AcmeMiddle", infer_transform="user:InferMiddle",
        infer_order="before:InferThresholdingLayer", rewrites=["user:ExposeMiddle"])
class AcmeMiddle:
    pass

@kernel(op_type="AcmeLast", infer_transform="user:InferLast")
class AcmeLast:
    pass
""" + "".join(
    f"""
@backend(kernel="{name}", backend_type="rtl")
class {name}RTL:
    pass
"""
    for name in ("AcmeFirst", "AcmeMiddle", "AcmeLast")
)


def test_a_kernel_says_where_its_infer_transform_runs_and_what_rewrites_come_first(
    plugin_folder, tmp_path
):
    from brainsmith.planning.plan import load_plan
    from brainsmith.plugin.manager import reset_plugin_system

    plugin_folder("ordered.py", ORDERED_KERNELS)
    reset_plugin_system()
    plan = load_plan(write(tmp_path, "bp.yaml", HEADER))
    order = plan.infer_transforms()
    assert order[0] == "user:InferFirst" and order[-1] == "user:InferLast"
    thresholds = order.index("finn:InferThresholdingLayer")
    assert order[thresholds - 1] == "user:InferMiddle"
    assert order.index("finn:InferQuantizedMatrixVectorActivation") < thresholds - 1
    assert plan.rewrites() == ["user:ExposeMiddle"]
    excluded = write(tmp_path, "ex.yaml", HEADER + "hw_compiler:\n  exclude: [AcmeMiddle]\n")
    assert load_plan(excluded).rewrites() == []  # an unused kernel's rewrites do not run


def test_an_infer_order_naming_no_finn_transform_fails_a_listed_kernel_and_skips_an_auto_one(
    plugin_folder, tmp_path
):
    from brainsmith.errors import SkippedKernelWarning
    from brainsmith.planning.plan import PlanError, load_plan
    from brainsmith.plugin.manager import reset_plugin_system

    plugin_folder(
        "typo.py",
        ORDERED_KERNELS.replace("before:InferThresholdingLayer", "before:InferThreshold"),
    )
    reset_plugin_system()
    listed = HEADER + "hw_compiler:\n  kernels: [AcmeMiddle, MVAU]\n"
    with pytest.raises(PlanError) as err:
        load_plan(write(tmp_path, "listed.yaml", listed))
    assert err.value.plugin == "user:AcmeMiddle"
    assert "did you mean 'InferThresholdingLayer'" in str(err.value)
    with pytest.warns(SkippedKernelWarning, match="auto leaves out kernel user:AcmeMiddle"):
        plan = load_plan(write(tmp_path, "auto.yaml", HEADER))  # the others still build
    assert {"user:AcmeFirst", "user:AcmeLast"} <= {k.name for k in plan.kernels}
    assert "user:AcmeMiddle" not in {k.name for k in plan.kernels}


@pytest.mark.parametrize("order", ["middle", "before:", "under:InferPool", 3])
def test_an_infer_order_of_another_form_is_a_metadata_problem(order):
    from brainsmith.plugin.metadata import validate_metadata

    _, problems = validate_metadata("kernel", {"infer_order": order})
    assert problems and "'first', 'last' or 'before:'/'after:'" in problems[0]
