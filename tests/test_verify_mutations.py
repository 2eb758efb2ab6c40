"""Verification catches real errors in the zoo's networks, where ties are many: the
full-size CNV w2a2, ResNet-8 and BERT-tiny (floating-point LayerNorm and Softmax, hundreds
of quantizer inputs within float noise of a boundary per sample), each streamlined by FINN.
The streamlined model differs from the cleaned QONNX reference by ties at most; each mutation
of it is an error: a weight off by one step, a threshold moved by one step, the thresholds'
scale off by 1/256 (one-step differences, each near no tie) and two output channels
swapped."""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from qonnx.core.modelwrapper import ModelWrapper
from qonnx.util.cleanup import cleanup_model

import brainsmith
from brainsmith.planning.shaping import DEFAULT_BLUEPRINT
from brainsmith.verification.verifier import Verifier
from tests.conftest import once
from tests.support.models import export_zoo

ZOO = Path(__file__).resolve().parents[1] / "examples" / "models" / "zoo"
# every mutation on ResNet-8 in make test; the full-size CNV and BERT-tiny in make test-wide
NETWORKS = [pytest.param(name, marks=pytest.mark.wide) if name != "resnet8" else name
            for name in ("cnv_w2a2", "resnet8", "bert_tiny")]  # fmt: skip
SAMPLES = 4

pytestmark = [
    pytest.mark.slow,  # FINN builds
    pytest.mark.xdist_group("mutations"),
    # FINN's conversion annotates signed thresholds' counts INT before the Add of their bias
    pytest.mark.filterwarnings("ignore:The values of tensor MultiThreshold_:UserWarning"),
]


def streamlined(name: str, folder: Path) -> tuple[ModelWrapper, ModelWrapper]:
    """(cleaned reference, the model after FINN's streamlining) of zoo network ``name``."""
    model = ZOO / f"{name}.onnx"
    if not model.exists():  # the full-size CNVs are exported on demand
        model = export_zoo(name, folder)
    blueprint = folder / "streamline.yaml"
    blueprint.write_text(
        f"name: streamline\nextends: {DEFAULT_BLUEPRINT}\n"
        "steps: [cleanup, qonnx_to_finn, streamline]\n"
    )
    result = brainsmith.build(str(model), str(blueprint), str(folder / "out"), verify="none")
    saved = Path(result.output_dir, "intermediate_models")
    after = ModelWrapper(str(next(saved.glob("*_streamline.onnx"))))
    return cleanup_model(ModelWrapper(str(model))), after


@pytest.fixture(scope="module", params=NETWORKS)
def network(request, hub, tmp_path_factory) -> tuple[str, Verifier, ModelWrapper]:
    name = request.param

    def make():
        reference, after = streamlined(name, tmp_path_factory.mktemp(name))
        return Verifier(reference, SAMPLES), after

    verifier, after = once(f"mutations-{name}", make)
    return name, verifier, after


def _initializers(model: ModelWrapper, op_type: str, position: int) -> list[str]:
    return [
        node.input[position]
        for node in model.graph.node
        if node.op_type == op_type
        and len(node.input) > position
        and model.get_initializer(node.input[position]) is not None
    ]


def weight_off_by_one_step(model: ModelWrapper) -> None:
    """One weight of the last matrix product one step (of its own values) off."""
    name = _initializers(model, "MatMul", 1)[-1]
    values = model.get_initializer(name).copy()
    levels = np.unique(values)
    step = float(np.min(np.diff(levels))) if levels.size > 1 else 1.0
    values.flat[0] += step if values.flat[0] <= 0 else -step
    model.set_initializer(name, values)


def threshold_moved_by_one_step(model: ModelWrapper) -> None:
    """The middle threshold of the first thresholds' channel 0 moved up to the next one
    (inputs between the two now count one step less), or a single threshold up by one."""
    name = _initializers(model, "MultiThreshold", 1)[0]
    values = model.get_initializer(name).copy()
    row = values[0]
    if row.size > 1:
        middle = row.size // 2 - 1
        row[middle] = row[middle + 1]
    else:
        row[0] += 1.0
    model.set_initializer(name, values)


def scale_off(model: ModelWrapper) -> None:
    """The first thresholds' scale off by 1/256: every threshold 1/256 higher, which moves
    each input within that distance of its boundary one step (near no tie)."""
    name = _initializers(model, "MultiThreshold", 1)[0]
    model.set_initializer(name, model.get_initializer(name) * np.float32(1 + 2**-8))


def channels_swapped(model: ModelWrapper) -> None:
    """Output channels 0 and 1 of the first matrix product swapped."""
    name = _initializers(model, "MatMul", 1)[0]
    values = model.get_initializer(name).copy()
    values[..., [0, 1]] = values[..., [1, 0]]
    model.set_initializer(name, values)


MUTATIONS: dict[str, Callable[[ModelWrapper], None]] = {
    "weight off by one step": weight_off_by_one_step,
    "threshold moved by one step": threshold_moved_by_one_step,
    "scale off by 1/256": scale_off,
    "two channels swapped": channels_swapped,
}


def test_the_streamlined_network_differs_from_its_reference_by_ties_at_most(network):
    name, verifier, after = network
    (check,) = verifier.check(after)
    assert check.ok and check.errors == 0, (name, check)


@pytest.mark.parametrize("mutation", MUTATIONS)
def test_each_mutation_is_an_error(network, mutation):
    name, verifier, after = network
    mutated = copy.deepcopy(after)
    MUTATIONS[mutation](mutated)
    (check,) = verifier.check(mutated)
    assert not check.ok and check.errors > 0, (name, mutation, check)
