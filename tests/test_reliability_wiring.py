"""A graph's wiring, whatever verification says: a loop (a node reading its own output, or a
longer one) is refused when the model is taken in and after every step, before FINN's passes
spin on it; a step that turns a hardware layer's output into a constant (a layer streaming
zeros) is refused under every ``--verify`` setting, naming the step, the tensor and the node."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from brainsmith.intake.model import InputError, check_model
from brainsmith.planning import wiring
from tests.support.processes import invoke

REPO = Path(__file__).resolve().parents[1]
MLP = str(REPO / "examples" / "models" / "mlp_4bit.onnx")
MLP_BLUEPRINT = REPO / "blueprints" / "mlp.yaml"
FRONT = "cleanup, qonnx_to_finn, streamline, hardware_inference"


def looped(path: Path, length: int = 1) -> Path:
    """A float model whose nodes loop0 .. loop{length-1} form a loop: loop0 adds the graph's
    input to what the last of them produces (with ``length`` 1: to its own output)."""
    last = f"t{length - 1}"
    nodes = [helper.make_node("Add", ["x", last], ["t0"], name="loop0")]
    nodes += [
        helper.make_node("Relu", [f"t{i - 1}"], [f"t{i}"], name=f"loop{i}")
        for i in range(1, length)
    ]
    nodes.append(helper.make_node("Relu", [last], ["y"], name="out"))
    graph = helper.make_graph(
        nodes,
        "looped",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8])],
    )
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path)
    return path


def cli(*args: str) -> tuple[int, str]:
    """``brainsmith ARGS`` in-process: exit code and stderr (a test's ``timeout`` mark bounds a
    loop that spins)."""
    ran = invoke(*args, env={"COLUMNS": "250"})
    return ran.returncode, ran.stderr


# -- loops, at the front door ---------------------------------------------------------------------


@pytest.mark.timeout(120)
def test_a_self_loop_is_refused_by_build_and_check_before_any_work(tmp_path):
    model = looped(tmp_path / "selfloop.onnx")
    for command in ("build", "check"):
        extra = ["-o", str(tmp_path / "out")] if command == "build" else []
        code, err = cli(command, str(model), *extra)
        assert code == 2, err
        assert "selfloop.onnx" in err and "node loop0 reads its own output t0" in err, err
        assert "Traceback" not in err
    assert not (tmp_path / "out").exists()


def test_a_longer_loop_is_refused_naming_its_nodes_and_a_tensor(tmp_path):
    with pytest.raises(InputError) as refused:
        check_model(looped(tmp_path / "ring.onnx", 3))
    assert "ring.onnx" in refused.value.reason
    assert "loop0 -> loop1 -> loop2 -> loop0" in refused.value.reason, refused.value.reason
    assert "loop0 reads t2" in refused.value.reason
    assert "cycle" in refused.value.hint or "loop" in refused.value.hint


def test_a_loop_of_four_thousand_nodes_is_found_without_recursion(tmp_path):
    """The check is iterative: a loop as long as the node limit allows is named, no
    RecursionError (Python's default recursion limit is 1,000)."""
    with pytest.raises(InputError) as refused:
        check_model(looped(tmp_path / "long.onnx", 4000))
    assert "loop0 -> loop1 -> loop2" in refused.value.reason and "loop3999" in refused.value.reason


def test_a_loop_downstream_of_a_clean_chain_is_named_not_the_chain(tmp_path):
    """Nodes only fed by a loop are not in it: the loop named is the loop itself."""
    model = onnx.load(looped(tmp_path / "ring.onnx", 2))
    graph = model.graph
    loop = graph.node[1]  # loop1 reads loop0 and feeds it
    after = [helper.make_node("Relu", ["y"], [f"a{i}"], name=f"after{i}") for i in range(3)]
    for i in range(1, 3):
        after[i].input[0] = f"a{i - 1}"
    graph.node.extend(after)
    graph.output[0].name = "a2"
    found = wiring.cycle(graph)
    assert found is not None and {n.name for n in found[0]} == {"loop0", loop.name}


def test_a_model_whose_node_overwrites_an_initializer_is_refused(tmp_path):
    model = onnx.load(looped(tmp_path / "clash.onnx", 2))
    model.graph.node[0].input[1] = "x"  # no loop: loop0 adds x to x, loop1 reads t0
    model.graph.initializer.append(numpy_helper.from_array(np.ones((1, 8), np.float32), "t1"))
    onnx.save(model, tmp_path / "clash.onnx")
    with pytest.raises(InputError) as refused:
        check_model(tmp_path / "clash.onnx")
    assert "clash.onnx: node loop1 produces t1, which is also the initializer t1" in str(
        refused.value.reason
    )


def test_a_graph_without_loops_passes(tmp_path):
    checked = check_model(MLP)
    assert wiring.cycle(checked.proto.graph) is None


# -- constants where a layer's stream was ---------------------------------------------------------


def hardware_graph(readers: bool) -> onnx.ModelProto:
    """Two hardware layers in a row (layer0 -> h -> layer1 -> y), as FINN's domain names them."""
    domain = "finn.custom_op.fpgadataflow"
    nodes = [
        helper.make_node("MVAU", ["x", "w0"], ["h"], name="layer0", domain=domain),
        helper.make_node("MVAU", ["h", "w1"], ["y"], name="layer1", domain=domain),
    ]
    weights = [numpy_helper.from_array(np.ones((8, 8), np.float32), n) for n in ("w0", "w1")]
    graph = helper.make_graph(
        nodes if readers else nodes[:1],
        "layers",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8])],
        [helper.make_tensor_value_info("y" if readers else "h", TensorProto.FLOAT, [1, 8])],
        initializer=weights,
    )
    return helper.make_model(graph)


def wrapped(proto: onnx.ModelProto):
    from qonnx.core.modelwrapper import ModelWrapper

    return ModelWrapper(proto)


def test_a_layer_output_replaced_by_a_zero_initializer_is_refused():
    before = wrapped(hardware_graph(readers=True))
    after = wrapped(hardware_graph(readers=True))
    graph = after.graph
    graph.node.remove(graph.node[0])
    graph.initializer.append(numpy_helper.from_array(np.zeros((1, 8), np.float32), "h"))
    problem = wiring.wiring_error("zero_step", after, None, wiring.streams(before, None))
    assert "step zero_step" in problem
    assert "h" in problem and "layer0" in problem and "layer1" in problem, problem
    assert wiring.wiring_error("zero_step", before, None, wiring.streams(before, None)) == ""


def test_a_renamed_constant_in_a_layers_place_is_refused():
    """The constant need not keep the tensor's name: the reader's input is what counts."""
    before = wrapped(hardware_graph(readers=True))
    after = wrapped(hardware_graph(readers=True))
    graph = after.graph
    graph.node.remove(graph.node[0])
    graph.node[0].input[0] = "zeros"
    graph.initializer.append(numpy_helper.from_array(np.zeros((1, 8), np.float32), "zeros"))
    problem = wiring.wiring_error("zero_step", after, None, wiring.streams(before, None))
    assert "zeros" in problem and "layer1" in problem and "layer0" in problem, problem


def test_a_graph_output_turned_into_a_constant_is_refused():
    before = wrapped(hardware_graph(readers=False))
    after = wrapped(hardware_graph(readers=False))
    graph = after.graph
    graph.node.remove(graph.node[0])
    graph.initializer.append(numpy_helper.from_array(np.zeros((1, 8), np.float32), "h"))
    problem = wiring.wiring_error("zero_step", after, None, wiring.streams(before, None))
    assert "graph's output h" in problem and "layer0" in problem, problem


def test_a_tensor_both_produced_and_an_initializer_is_refused():
    model = wrapped(hardware_graph(readers=True))
    model.graph.initializer.append(numpy_helper.from_array(np.zeros((1, 8), np.float32), "h"))
    problem = wiring.wiring_error("some_step", model, None)
    assert "step some_step" in problem and "layer0" in problem and "initializer h" in problem


def test_a_tensor_both_produced_and_a_graph_input_is_refused():
    model = wrapped(hardware_graph(readers=True))
    model.graph.input.append(helper.make_tensor_value_info("h", TensorProto.FLOAT, [1, 8]))
    problem = wiring.wiring_error("some_step", model, None)
    assert "layer0" in problem and "graph's input h" in problem, problem


def test_a_self_loop_made_by_a_step_is_named_in_its_wiring():
    model = wrapped(hardware_graph(readers=True))
    model.graph.node[0].input[0] = "h"
    problem = wiring.wiring_error("loop_step", model, None)
    assert "step loop_step" in problem and "node layer0 reads its own output h" in problem


# -- real plugin steps in real builds -------------------------------------------------------------

ZERO_STEP = """
import numpy as np
from onnx import numpy_helper
from brainsmith.plugin import step


def _replace(model, tensor):
    graph = model.graph
    producer = next(n for n in graph.node if tensor in n.output)
    shape = model.get_tensor_shape(tensor)
    graph.node.remove(producer)
    graph.initializer.append(numpy_helper.from_array(np.zeros(shape, np.float32), tensor))
    return model


@step(name="zero_layer")
def zero_layer(model, cfg):
    \"\"\"The first hardware layer's output becomes a zero initializer the next layer reads.\"\"\"
    first = next(n for n in model.graph.node if n.domain.startswith("finn.custom_op.fpgadataflow"))
    return _replace(model, first.output[0])


@step(name="zero_output")
def zero_output(model, cfg):
    \"\"\"The graph's output, a hardware layer's, becomes a zero initializer.\"\"\"
    return _replace(model, model.graph.output[0].name)


@step(name="loop_step")
def loop_step(model, cfg):
    \"\"\"The second node reads its own output.\"\"\"
    node = model.graph.node[1]
    node.input[0] = node.output[0]
    return model
"""


def plugin_build(plugin_folder, tmp_path, steps: str, *args: str) -> tuple[int, str, Path]:
    plugin_folder("wiring_steps.py", ZERO_STEP)
    blueprint = tmp_path / "wired.yaml"
    blueprint.write_text(f"name: wired\nextends: {MLP_BLUEPRINT}\nsteps: [{steps}]\n")
    out = tmp_path / "out"
    code, err = cli("build", MLP, str(blueprint), "-o", str(out), "--quiet", *args)
    return code, err, out


def statuses(out: Path) -> dict[str, str]:
    report = json.loads((out / "report.json").read_text())
    return {s["name"]: s["status"] for s in report["steps"]}


@pytest.mark.slow
@pytest.mark.parametrize(
    ("step", "verify"), [("zero_layer", "none"), ("zero_output", "final")], ids=["layer", "output"]
)
def test_a_plugin_step_streaming_a_constant_fails_the_build_naming_it(
    plugin_folder, tmp_path, step, verify
):
    code, err, out = plugin_build(plugin_folder, tmp_path, f"{FRONT}, {step}", "--verify", verify)
    assert code == 1, err
    assert f"step {step}" in err and "constant" in err, err
    assert "MVAU" in err, err  # the layer whose stream it was
    assert statuses(out)[step] == "failed"


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_a_plugin_step_making_a_loop_is_named_before_the_next_step_runs(plugin_folder, tmp_path):
    code, err, out = plugin_build(
        plugin_folder,
        tmp_path,
        "cleanup, loop_step, qonnx_to_finn, streamline",
        "--verify",
        "none",
    )  # before: qonnx_to_finn failed in SortGraph, the loop and its step unnamed
    assert code == 1, err
    assert "step loop_step" in err and "reads its own output" in err, err
    found = statuses(out)
    assert found["loop_step"] == "failed" and found["qonnx_to_finn"] != "ok", found


LOOP_TRANSFORM = """
from qonnx.transformation.base import Transformation
from brainsmith.plugin import transform


@transform(name="LoopSecondNode")
class LoopSecondNode(Transformation):
    \"\"\"The second node reads its own output.\"\"\"

    def apply(self, model):
        node = model.graph.node[1]
        node.input[0] = node.output[0]
        return model, False
"""


@pytest.mark.timeout(120)
@pytest.mark.parametrize("verify", ["none", "each"])
def test_a_blueprint_transform_making_a_loop_is_named_before_the_step_goes_on(
    plugin_folder, tmp_path, verify
):
    """A ``pre_hw`` transform runs inside the streamline step: its loop is refused as it
    returns, naming it, before FINN's passes in the same step spin on it (they did)."""
    plugin_folder("loop_transform.py", LOOP_TRANSFORM)
    blueprint = tmp_path / "looping.yaml"
    blueprint.write_text(
        f"name: looping\nextends: {MLP_BLUEPRINT}\n"
        "hw_compiler:\n  transforms_phased:\n    pre_hw: [LoopSecondNode]\n"
    )
    out = tmp_path / "out"
    code, err = cli("build", MLP, str(blueprint), "-o", str(out), "--quiet", "--verify", verify)
    assert code == 1, err
    assert "pre_hw transform user:LoopSecondNode left a loop" in err, err
    assert "reads its own output" in err, err
    assert statuses(out)["streamline"] == "failed"


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_check_names_a_plugin_step_making_a_loop(plugin_folder, tmp_path):
    plugin_folder("wiring_steps.py", ZERO_STEP)
    blueprint = tmp_path / "wired.yaml"
    blueprint.write_text(
        f"name: wired\nextends: {MLP_BLUEPRINT}\nsteps: [cleanup, loop_step, {FRONT.removeprefix('cleanup, ')}]\n"
    )
    ran = invoke("check", MLP, str(blueprint))
    code, out = ran.returncode, ran.stdout + ran.stderr
    assert code == 1, out
    assert "step loop_step" in out and "reads its own output" in out, out
