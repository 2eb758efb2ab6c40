"""Export small convolutional networks with Brevitas and write reference vectors.

    python -m examples.brevitas_models [FOLDER]       (needs brevitas: make models)

Each network has random weights (fixed seed), batch-norm statistics and activation scales
calibrated on seeded random inputs, and is exported with ``brevitas.export.export_qonnx``
exactly as a trained network would be. Beside each ``NAME.onnx`` go ``NAME_input.npy`` (a few
inputs) and ``NAME_expected.npy`` (the torch model's own outputs for them), the vectors
``brainsmith build --input/--expected`` checks the final design against.

- ``cnv``: 8-bit input quantizer, two 3x3 convolutions (4-bit weights) each with batch norm,
  4-bit ReLU and 2x2 max pooling, then a fully connected layer (the CNV pattern).
- ``conv_pad``: like ``cnv`` with zero padding in both convolutions (FMPadding layers) and
  2-bit weights in the second one.
- ``residual``: a convolution stem and a residual block (two convolutions, the skip path added
  back with a shared quantizer), global average pooling and a fully connected layer.
- ``residual_ties``: the same at 6 channels, 6x6, 3-bit weights and activations, with
  power-of-two scales on the block's input and add quantizers: the skip re-quantized by the
  shared add quantizer lands on rounding ties.
- ``bnn_ties``: a binarized MLP of the BNN-PYNQ kind (144-64-32-10, 1-bit weights, bipolar
  activations) whose batch-norm means lie on even accumulator values: sign ties at 0.

Brevitas is a development dependency only (requirements/models.txt); brainsmith never imports
it.
"""

from __future__ import annotations

import os
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

MODELS = Path(__file__).resolve().parent / "models"
SEED = 2024
VECTORS = 8


@dataclass(frozen=True)
class ConvNetSpec:
    """Shape of a CNV-like network: one entry per convolution in ``channels``/``weight_bits``."""

    channels: tuple[int, ...] = (8, 16)
    weight_bits: tuple[int, ...] = (4, 4)
    act_bits: int = 4
    padding: int = 0
    image: int = 16
    in_channels: int = 3
    classes: int = 10


def _torch():
    os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", tempfile.mkdtemp(prefix="inductor-"))
    import torch

    return torch


def conv_net(spec: ConvNetSpec):
    """A CNV-like Brevitas network: [QuantConv -> BN -> QuantReLU -> MaxPool] x N -> Linear."""
    torch = _torch()
    import brevitas.nn as qnn
    from torch import nn

    layers: list[nn.Module] = [qnn.QuantIdentity(bit_width=8, return_quant_tensor=True)]
    size, channels = spec.image, spec.in_channels
    for out, bits in zip(spec.channels, spec.weight_bits, strict=True):
        layers += [
            qnn.QuantConv2d(
                channels, out, 3, padding=spec.padding, bias=False, weight_bit_width=bits
            ),
            nn.BatchNorm2d(out),
            qnn.QuantReLU(bit_width=spec.act_bits, return_quant_tensor=True),
            nn.MaxPool2d(2),
        ]
        size, channels = (size + 2 * spec.padding - 2) // 2, out
    layers += [
        nn.Flatten(),
        qnn.QuantLinear(channels * size * size, spec.classes, bias=False, weight_bit_width=4),
    ]
    return torch.nn.Sequential(*layers), (1, spec.in_channels, spec.image, spec.image)


def residual_net(
    channels: int = 8,
    image: int = 8,
    classes: int = 10,
    weight_bits: int = 4,
    act_bits: int = 4,
    add_bits: int | None = None,
    in_channels: int = 3,
    fixed_point: bool = False,
):
    """A convolution stem, one residual block with a shared add quantizer, global pooling.

    The skip path re-adds the block's quantized input through the add quantizer (``add_bits``,
    default ``act_bits``), the same quantizer the body's output goes through. ``fixed_point``:
    the block's input and add quantizers have power-of-two scales (Brevitas's
    ``*ActPerTensorFixedPoint``), so a skip value re-quantized one power of two coarser lands
    exactly halfway between two steps (a rounding tie) whenever it is odd."""
    torch = _torch()
    import brevitas.nn as qnn
    from brevitas.quant import Int8ActPerTensorFixedPoint, Uint8ActPerTensorFixedPoint
    from torch import nn

    add_bits = act_bits if add_bits is None else add_bits
    unsigned = {"act_quant": Uint8ActPerTensorFixedPoint} if fixed_point else {}
    signed = {"act_quant": Int8ActPerTensorFixedPoint} if fixed_point else {}

    class Residual(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.quant_in = qnn.QuantIdentity(bit_width=8, return_quant_tensor=True)
            self.stem = nn.Sequential(
                qnn.QuantConv2d(
                    in_channels, channels, 3, padding=1, bias=False, weight_bit_width=weight_bits
                ),
                nn.BatchNorm2d(channels),
            )
            # One quantizer for both operands of the add, so they share a scale.
            self.shared = qnn.QuantReLU(bit_width=act_bits, return_quant_tensor=True, **unsigned)
            self.body = nn.Sequential(
                qnn.QuantConv2d(
                    channels, channels, 3, padding=1, bias=False, weight_bit_width=weight_bits
                ),
                nn.BatchNorm2d(channels),
                qnn.QuantReLU(bit_width=act_bits, return_quant_tensor=True),
                qnn.QuantConv2d(
                    channels, channels, 3, padding=1, bias=False, weight_bit_width=weight_bits
                ),
                nn.BatchNorm2d(channels),
            )
            self.add_quant = qnn.QuantIdentity(
                bit_width=add_bits, return_quant_tensor=True, **signed
            )
            self.relu = qnn.QuantReLU(bit_width=act_bits, return_quant_tensor=True)
            self.pool = nn.AdaptiveAvgPool2d(1)
            self.head = qnn.QuantLinear(channels, classes, bias=False, weight_bit_width=weight_bits)

        def forward(self, x):
            skip = self.shared(self.stem(self.quant_in(x)))
            y = self.add_quant(self.body(skip)) + self.add_quant(skip)
            y = self.pool(self.relu(y))
            return self.head(torch.flatten(y, 1))

    return Residual(), (1, in_channels, image, image)


def bnn_mlp(
    hidden: tuple[int, ...] = (64, 32), image: int = 12, classes: int = 10, mean_range: int = 3
):
    """A binarized MLP of the BNN-PYNQ kind (examples.zoo.tfc with bnn_pynq's input, 1-bit
    weights and bipolar activations) whose batch norms keep their initial scale and bias and
    have means on whole even numbers (-2 * ``mean_range`` to 2 * ``mean_range``): an even
    fan-in gives even accumulators, so a neuron whose accumulator equals its mean has a
    batch-norm output of exactly 0, where the bipolar sign is a tie."""
    torch = _torch()
    from torch import nn

    from examples.zoo import tfc

    net, shape = tfc(1, 1, hidden=hidden, image=image, classes=classes, bnn_pynq_input=True)
    generator = torch.Generator().manual_seed(3)
    for module in net.modules():
        if isinstance(module, nn.BatchNorm1d):
            module.momentum = 0.0  # calibration leaves the statistics as set here
            means = torch.randint(
                -mean_range, mean_range + 1, (module.num_features,), generator=generator
            )
            module.running_mean.data = 2.0 * means.float()
    return net, shape


NETWORKS = {
    "cnv": lambda: conv_net(ConvNetSpec()),
    "conv_pad": lambda: conv_net(ConvNetSpec(channels=(8, 8), weight_bits=(4, 2), padding=1)),
    "residual": residual_net,
    "residual_ties": lambda: residual_net(
        channels=6, image=6, weight_bits=3, act_bits=3, fixed_point=True
    ),
    "bnn_ties": bnn_mlp,
}


def calibrate(net, shape: tuple[int, ...], seed: int = SEED) -> None:
    """Batch-norm statistics and activation scales from seeded random inputs."""
    torch = _torch()
    from brevitas.graph.calibrate import calibration_mode
    from torch import nn

    torch.manual_seed(seed)
    for module in net.modules():
        if isinstance(module, nn.BatchNorm2d):
            module.momentum = None  # cumulative average over the calibration batches
            nn.init.uniform_(module.weight, 0.5, 1.5)
            nn.init.uniform_(module.bias, -0.2, 0.2)
    net.train()
    with torch.no_grad():
        for _ in range(4):
            net(sample_inputs(shape, 32, torch))
    net.eval()
    with torch.no_grad(), calibration_mode(net):
        for _ in range(4):
            net(sample_inputs(shape, 32, torch))


def sample_inputs(shape: tuple[int, ...], count: int, torch):
    """Image-like inputs in [-1, 1)."""
    return torch.rand(count, *shape[1:]) * 2 - 1


def export(
    name: str, folder: Path = MODELS, seed: int = SEED, make=None, bake: bool = True
) -> Path:
    """Export network ``name`` to ``folder/name.onnx`` with its reference vectors (the torch
    outputs taken first; ``bake``: then ``bake_decoupled_weights``, as a user should)."""
    torch = _torch()
    from brevitas.export import export_qonnx

    torch.manual_seed(seed)
    net, shape = (make or NETWORKS[name])()
    calibrate(net, shape, seed)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.onnx"
    generator = torch.Generator().manual_seed(seed + 1)
    inputs = torch.rand(VECTORS, *shape[1:], generator=generator) * 2 - 1
    with torch.no_grad():
        outputs = [net(inputs[i : i + 1]) for i in range(VECTORS)]
    if bake:
        bake_decoupled_weights(net, shape)  # after torch's outputs: it renormalises baked layers
    export_qonnx(net, input_t=torch.zeros(shape), export_path=str(path), dynamo=False)
    np.save(folder / f"{name}_input.npy", inputs.numpy().astype(np.float32))
    if isinstance(outputs[0], tuple):  # several outputs: one array each, in order
        each = [torch.cat([o[k] for o in outputs]).numpy() for k in range(len(outputs[0]))]
        np.savez(folder / f"{name}_expected.npz", *(e.astype(np.float32) for e in each))
    else:
        np.save(folder / f"{name}_expected.npy", torch.cat(outputs).numpy().astype(np.float32))
    return path


def bake_decoupled_weights(net, shape: tuple[int, ...]) -> int:
    """Make the QONNX export of decoupled weight quantizers (Brevitas's accumulator-aware
    ``Int8AccumulatorAwareWeightQuant`` (A2Q), A2Q+ and weight normalisation) compute what
    torch computes; the number of layers changed.

    Brevitas 0.13 exports such a layer's raw weight parameter with the post-clipping scale
    only, dropping the pre-clipping scale (the weight's norm), and as ``rounding_mode=ROUND``
    where it rounds toward zero, so the exported model computes other weights than torch
    (``brainsmith build`` then stops at its first step: "the exported model itself does not
    match"). Each such layer's weight is replaced by its quantized value (integers times the
    scale), which the exported ``Quant`` node reproduces exactly. Take torch's reference
    outputs first: torch renormalises the baked weight in its own forward pass.
    """
    torch = _torch()
    layers = [m for m in net.modules() if _decoupled(m)]
    inputs: dict[object, object] = {}

    def keep(module, args) -> None:  # the quantized input sets an A2Q layer's norm bound
        inputs.setdefault(module, args[0])

    hooks = [layer.register_forward_pre_hook(keep) for layer in layers]
    try:
        with torch.no_grad():
            net(torch.zeros(shape))
    finally:
        for hook in hooks:
            hook.remove()
    with torch.no_grad():
        for layer in layers:
            layer.weight.copy_(layer.quant_weight(quant_input=inputs[layer]).value)
    return len(layers)


def _decoupled(module) -> bool:
    """A layer whose weight quantizer has a pre-clipping scale apart from its scale."""
    quantizer = getattr(getattr(module, "weight_quant", None), "tensor_quant", None)
    return quantizer is not None and hasattr(quantizer, "pre_scaling_impl")


def main(folder: Path = MODELS) -> list[Path]:
    return [export(name, folder) for name in NETWORKS]


if __name__ == "__main__":
    for path in main(Path(sys.argv[1]) if len(sys.argv) > 1 else MODELS):
        print(f"{path} ({path.stat().st_size} bytes)")
