"""``tfm.finn.X()`` behaves exactly like FINN's own ``X()`` on a real quantized model."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from brainsmith.frameworks.finn.env import prepare_finn, preserve_process_io
from brainsmith.plugins import transforms as tfm

MLP = Path(__file__).resolve().parents[1] / "examples" / "models" / "mlp_4bit.onnx"
PART = "xcvc1902-vsva2197-2MP-e-S"


def finn_flow():
    """(stage, transform name, FINN class imported directly, constructor args) in flow order."""
    prepare_finn()
    from finn.transformation.fpgadataflow.annotate_cycles import AnnotateCycles
    from finn.transformation.fpgadataflow.convert_to_hw.elementwise_binary_operation import (
        InferElementwiseBinaryOperation,
    )
    from finn.transformation.fpgadataflow.convert_to_hw.quantized_matrix_vector_activation import (
        InferQuantizedMatrixVectorActivation,
    )
    from finn.transformation.fpgadataflow.convert_to_hw.thresholding import InferThresholdingLayer
    from finn.transformation.fpgadataflow.minimize_accumulator_width import (
        MinimizeAccumulatorWidth,
    )
    from finn.transformation.fpgadataflow.minimize_weight_bit_width import MinimizeWeightBitWidth
    from finn.transformation.fpgadataflow.set_folding import SetFolding
    from finn.transformation.fpgadataflow.specialize_layers import SpecializeLayers
    from finn.transformation.qonnx.convert_qonnx_to_finn import ConvertQONNXtoFINN
    from finn.transformation.streamline import Streamline
    from finn.transformation.streamline.absorb import AbsorbAddIntoMultiThreshold
    from finn.transformation.streamline.reorder import MoveScalarLinearPastInvariants
    from finn.transformation.streamline.round_thresholds import RoundAndClipThresholds

    return [
        ("qonnx", ConvertQONNXtoFINN, ()),
        ("streamline", MoveScalarLinearPastInvariants, ()),
        ("streamline", Streamline, ()),
        ("streamline", AbsorbAddIntoMultiThreshold, ()),
        ("streamline", RoundAndClipThresholds, ()),
        ("convert_to_hw", InferQuantizedMatrixVectorActivation, ()),
        ("convert_to_hw", InferThresholdingLayer, ()),
        ("convert_to_hw", InferElementwiseBinaryOperation, ()),
        ("specialize", SpecializeLayers, (PART,)),
        ("folding", SetFolding, (2000,)),
        ("folding", MinimizeAccumulatorWidth, ()),
        ("folding", MinimizeWeightBitWidth, ()),
        ("folding", AnnotateCycles, ()),
    ]


@pytest.fixture(scope="module")
def start():
    from qonnx.core.modelwrapper import ModelWrapper
    from qonnx.util.cleanup import cleanup_model

    return cleanup_model(ModelWrapper(str(MLP)))


def test_hub_transforms_produce_the_same_onnx_as_finn(start):
    flow = finn_flow()
    assert len(flow) >= 10
    assert {stage for stage, _, _ in flow} >= {
        "streamline",
        "convert_to_hw",
        "specialize",
        "folding",
    }
    ours, theirs = start, start
    changed_steps = 0
    with preserve_process_io():
        for _stage, finn_cls, args in flow:
            hub_cls = getattr(tfm.finn, finn_cls.__name__)
            assert hub_cls is finn_cls
            before = theirs.model.SerializeToString()
            # QONNX names new tensors with random.choice: same seed, same names.
            random.seed(1234)
            ours = ours.transform(hub_cls(*args))
            random.seed(1234)
            theirs = theirs.transform(finn_cls(*args))
            assert ours.model.SerializeToString() == theirs.model.SerializeToString(), (
                finn_cls.__name__
            )
            changed_steps += before != theirs.model.SerializeToString()
    assert changed_steps >= 6  # the flow really transformed the model
    assert any(n.op_type.startswith("MVAU") for n in ours.graph.node)
