"""Rounding ties in deep networks: a tie rounded the other way early moves later values onto
other boundaries, so the ties of one input cascade through every layer after it.

``deep_ties`` (tests/support/models.py) is a chain of integer layers where about half of
every quantizer's inputs lie exactly halfway between two steps, and which ones depends on
how the layers before rounded theirs. FINN's own conversion rounds those half up where QONNX
rounds half to even: every layer after the first differs, by ties alone. Verification
follows the checked model's own tensors (before: thousands of elements unexplained at the
conversion; the search flipped the reference's ties one at a time or all at once, and
found neither). A weight or a threshold changed in such a model is still an error. The
user's expected outputs are explained the same way: torch's arithmetic may round a tie of
the exported model the other way (before: "the exported model itself does not match")."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import numpy as np
import pytest
from qonnx.core.modelwrapper import ModelWrapper
from qonnx.util.cleanup import cleanup_model

import brainsmith
from brainsmith.planning.shaping import DEFAULT_BLUEPRINT
from brainsmith.verification.verifier import Verifier, run
from tests.support.models import deep_ties

MODELS = Path(__file__).resolve().parents[1] / "examples" / "models"
# FINN's conversion annotates signed thresholds' counts INT before the Add of their bias
pytestmark = [
    pytest.mark.filterwarnings("ignore:The values of tensor MultiThreshold_:UserWarning"),
    pytest.mark.xdist_group("verify-cascades"),
]

SHAPES = {  # layers, channels, image (0: a matrix product), seed
    "mlp_8x32": (8, 32, 0, 0),
    "conv_5x24_4x4": (5, 24, 4, 1),
}


def finn_converted(path: Path, shape: tuple[int, int, int, int]):
    """(cleaned reference, FINN's own conversion of it: thresholds rounding half up)."""
    from finn.transformation.qonnx.convert_qonnx_to_finn import ConvertQONNXtoFINN

    layers, channels, image, seed = shape
    reference = cleanup_model(ModelWrapper(str(deep_ties(path, layers, channels, image, seed))))
    converted = cleanup_model(copy.deepcopy(reference).transform(ConvertQONNXtoFINN()))
    return reference, converted


@pytest.mark.parametrize("shape", SHAPES)
def test_a_cascade_of_ties_through_finn_s_conversion_is_explained(tmp_path, hub, shape):
    reference, converted = finn_converted(tmp_path / "deep.onnx", SHAPES[shape])
    (check,) = Verifier(reference, 16).check(converted)
    assert check.max_steps is not None and check.max_steps >= 2  # outputs really differ
    assert check.ok and check.errors == 0, check
    assert check.tie_samples == 16 and check.ties > 16 * SHAPES[shape][0]


def weight_changed(model: ModelWrapper) -> None:
    """One nonzero weight of the third product negated (its column moves by 2x its input)."""
    name = [n.input[1] for n in model.graph.node if n.op_type in ("MatMul", "Conv")][2]
    values = model.get_initializer(name).copy()
    values.flat[int(np.flatnonzero(values)[0])] *= -1
    model.set_initializer(name, values)


def threshold_moved(model: ModelWrapper) -> None:
    """The fourth thresholds: every threshold of channel 0 one step up."""
    name = [n.input[1] for n in model.graph.node if n.op_type == "MultiThreshold"][3]
    values = model.get_initializer(name).copy()
    values[0] += 1.0
    model.set_initializer(name, values)


@pytest.mark.parametrize("mutation", [weight_changed, threshold_moved])
def test_a_change_inside_the_cascade_is_still_an_error(tmp_path, hub, mutation):
    reference, converted = finn_converted(tmp_path / "deep.onnx", SHAPES["conv_5x24_4x4"])
    mutation(converted)
    (check,) = Verifier(reference, 16).check(converted)
    assert not check.ok and check.errors > 0, check


@pytest.mark.slow
def test_a_build_with_finn_s_rounding_verifies_every_step_through_the_partition(tmp_path, hub):
    """FINN's conversion step in a brainsmith build: each step, the dataflow partition's
    layers too (their tensors read from inside the partition), differs by ties alone."""
    model = deep_ties(tmp_path / "deep.onnx", layers=6, channels=16, image=4, seed=2)
    blueprint = tmp_path / "finn_rounding.yaml"
    blueprint.write_text(
        f"name: finn_rounding\nextends: {DEFAULT_BLUEPRINT}\nsteps: [cleanup, "
        "step_qonnx_to_finn, streamline, hardware_inference, specialize, folding]\n"
    )
    result = brainsmith.build(str(model), str(blueprint), str(tmp_path / "out"), verify="each")
    report = json.loads(Path(result.report_path).read_text())
    checks = {s["name"]: s["verification"] for s in report["steps"]}
    assert report["status"] == "ok" and all(c["ok"] for c in checks.values())
    assert checks["cleanup"]["ties"] == 0
    for step in ("step_qonnx_to_finn", "streamline", "hardware_inference"):
        assert checks[step]["errors"] == 0 and checks[step]["ties"] > 0, (step, checks[step])
        assert checks[step]["max_error"] >= 2.0  # by several steps, all ties


# --- the user's expected outputs ------------------------------------------------------


@pytest.fixture(scope="module")
def residual():
    """The shipped residual_ties export, its user inputs and, per input, the reference's own
    outputs and its ties (skip values re-quantized one power of two coarser: x.5 steps)."""
    from brainsmith.frameworks.finn.env import prepare_finn

    prepare_finn()
    reference = cleanup_model(ModelWrapper(str(MODELS / "residual_ties.onnx")))
    inputs = np.load(MODELS / "residual_ties_input.npy")
    samples = [(x[None],) for x in inputs]
    verifier = Verifier(reference, 1, user=(samples, run(reference, samples)))
    tracer = verifier._tracer
    feeds, ties = verifier._trace("user", samples)
    return reference, samples, tracer, feeds, ties


def test_torch_rounding_a_tie_the_other_way_is_a_tie_not_an_export_mismatch(residual):
    """Expected outputs as torch gives them when its arithmetic puts a tie of the export on
    the other side: the reference with one tie per input rounded the other way."""
    from brainsmith.verification.quantizer_steps import grouped

    reference, samples, tracer, feeds, ties = residual
    expected, flipped = [], 0
    for feed, tied in zip(feeds, ties, strict=True):
        own = tracer.run_sample(feed, {})[0]
        other = (tracer.run_sample(feed, grouped([tie]))[0] for tie in tied)
        changed = next((o for o in other if not np.allclose(o[0], own[0])), None)
        flipped += changed is not None
        expected.append(own if changed is None else changed)
    assert flipped >= 2  # torch's outputs really differ from the export's on some inputs
    verifier = Verifier(reference, 1, user=(samples, expected), generated=False)
    (check,) = verifier.check(reference)
    assert check.ok and check.errors == 0 and check.tie_samples == flipped, check


def test_an_expected_output_off_by_a_step_away_from_ties_is_an_error(residual):
    reference, samples, _, _, _ = residual
    expected = run(reference, samples)
    expected[0] = [expected[0][0].copy()]
    expected[0][0].flat[0] += 0.25  # a quarter of the largest logit's range, no tie
    verifier = Verifier(reference, 1, user=(samples, expected), generated=False)
    (check,) = verifier.check(reference)
    assert not check.ok and check.errors > 0, check


def test_a_torch_side_tie_is_found_among_weights_on_rounding_boundaries(residual):
    """Weights are rounded by the same arithmetic in torch, the export and every step (a
    constant's quantizer is folded by QONNX's own execution), so a weight on a boundary is
    no tie: with 48 weight elements moved onto half steps, torch's flip of an
    activation tie is still found (before: the closest-first search tried the weights
    first, gap 0, and the export was called a mismatch)."""
    from brainsmith.verification.quantizer_steps import grouped

    reference, samples, _, _, _ = residual
    halved = copy.deepcopy(reference)
    nodes = list(halved.graph.node)
    weights = [i for i, n in enumerate(nodes)
               if n.op_type == "Quant" and halved.get_initializer(n.input[0]) is not None]  # fmt: skip
    for node in (nodes[i] for i in weights[:2]):
        value = halved.get_initializer(node.input[0]).copy()
        scale = np.broadcast_to(halved.get_initializer(node.input[1]), value.shape)
        flat, steps = value.reshape(-1), scale.reshape(-1)
        flat[:24] = (np.floor(flat[:24] / steps[:24]) + 0.5) * steps[:24]
        halved.set_initializer(node.input[0], flat.reshape(value.shape).astype(np.float32))
    verifier = Verifier(halved, 1, user=(samples, run(halved, samples)))
    tracer = verifier._tracer
    feeds, ties = verifier._trace("user", samples)
    expected, flipped = [], 0
    for feed, tied in zip(feeds, ties, strict=True):
        own = tracer.run_sample(feed, {})[0]
        activations = [t for t in tied if t.node not in weights]
        other = (tracer.run_sample(feed, grouped([tie]))[0] for tie in activations)
        changed = next((o for o in other if not np.allclose(o[0], own[0])), None)
        flipped += changed is not None
        expected.append(own if changed is None else changed)
    assert flipped >= 2
    (check,) = Verifier(halved, 1, user=(samples, expected), generated=False).check(halved)
    assert check.ok and check.errors == 0 and check.tie_samples == flipped, check


def test_a_torch_side_tie_in_one_token_is_found_among_closer_ties_elsewhere(hub):
    """An encoder (float LayerNorm and Softmax) has hundreds of ties per input; torch's
    arithmetic rounds one of them the other way in a token's own layers, not the closest to
    its boundary: the search tries the ties of the tokens whose outputs differ first, as it
    does for a step's outputs (before: the 16 closest only, and the export was called a
    mismatch)."""
    from brainsmith.verification.quantizer_steps import grouped

    reference = cleanup_model(ModelWrapper(str(MODELS / "zoo" / "bert_tiny.onnx")))
    inputs = np.load(MODELS / "zoo" / "bert_tiny_input.npy")[:4]
    samples = [(x[None],) for x in inputs]
    verifier = Verifier(reference, 1, user=(samples, run(reference, samples)), generated=False)
    tracer = verifier._tracer
    feeds, ties = verifier._trace("user", samples)
    expected = []
    for feed, tied in zip(feeds, ties, strict=True):
        own = tracer.run_sample(feed, {})[0]
        far = [t for t in sorted(tied, key=lambda t: t.gap)[40:]  # behind 40 closer ones
               if token_major(reference, tracer.nodes[t.node])]  # fmt: skip
        other = (tracer.run_sample(feed, grouped([tie]))[0] for tie in far)
        changed = next(o for o in other if one_token(o[0], own[0]))
        expected.append(changed)
    (check,) = Verifier(reference, 1, user=(samples, expected), generated=False).check(reference)
    assert check.ok and check.errors == 0 and check.tie_samples == len(samples), check


def one_token(outputs: np.ndarray, own: np.ndarray) -> bool:
    """Whether ``outputs`` differ from ``own`` in one token (row) of the sequence only."""
    rows = np.any(outputs.reshape(own.shape) != own, axis=-1).reshape(-1)
    return int(np.count_nonzero(rows)) == 1


def token_major(model: ModelWrapper, node) -> bool:
    """Whether ``node``'s output is (1, tokens, features): a layer of each token's own."""
    shape = model.get_tensor_shape(node.output[0])
    return shape is not None and len(shape) == 3 and shape[0] == 1
