"""The network zoo: Brevitas exports of networks users typically bring to a dataflow build.

    python -m examples.zoo [FOLDER] [NAME ...]       (needs brevitas: make models)

Exports the named networks (default: every small one) to ``FOLDER`` (default
examples/models/zoo/) with ``examples.brevitas_models.export``: random weights (fixed seed),
calibrated batch norms and activation scales, ``NAME.onnx`` beside ``NAME_input.npy`` and
``NAME_expected.npy`` (the torch model's outputs). Each export is then run with QONNX's
executor and its largest deviation from torch is printed.

Every network is a function of its sizes and bit widths, so tests can export fresh variants
(``export_network(name, folder, make=lambda: kws_conv1d(weight_bits=2))``); ``ZOO`` maps each
entry to its zero-argument factory, a description and whether it is small enough to ship.
At 1 bit, weights are binary and activations bipolar (Brevitas exports any 1-bit quantizer as
BipolarQuant, so a 1-bit ReLU would not match its export).

- ``cnv_w1a1``/``cnv_w2a2``: FINN's CNV for CIFAR-10 as brevitas_examples/bnn_pynq builds it
  (constant-scale quantizers, bipolar at 1 bit; without its final scalar TensorNorm).
- ``tfc_w1a1``: FINN's TFC for MNIST (bnn_pynq FC with three hidden layers of 64).
- ``tfc_w2a2``: the same with 2-bit weights, activations and input (finn-plus's TFC-w2a2).
- ``tfc_w1a1_bnn_pynq``: the same as bnn_pynq's ``forward`` writes it (a Reshape and ``2x - 1`` at the
  input), as FINN's own TFC test models are exported.
- ``mobilenet_block``: MobileNet-v1 stem and two depthwise-separable blocks as brevitas's
  quant_mobilenet_v1 4b (8-bit stem weights, per-channel scales, TruncAvgPool2d with floor).
- ``kws_conv1d``: keyword spotting on 10 MFCCs x 49 frames with Conv1d and MaxPool1d.
- ``jet_tagger``: hls4ml's and LogicNets' jet-substructure tagger, 16-64-32-32-5 (6-bit).
- ``ds_cnn``: MLPerf Tiny's keyword spotting DS-CNN (16 channels where it has 64): a 10x4
  stride-2 stem, four depthwise-separable blocks, a 25x5 TruncAvgPool2d rounding to nearest.
- ``ds_cnn_avg``: a smaller DS-CNN whose pool is ``nn.AvgPool2d`` over the map followed by a
  signed ``QuantIdentity`` (an ``AveragePool`` on floats in the export), and a biased classifier.
- ``mlp_mixer``: an MLP-Mixer block's channel MLP whose tokens are averaged with
  ``x.mean(dim=1)`` (a ``ReduceMean`` on floats), then quantized and classified.
- ``unet``: a 2-level U-Net for segmentation: Concat skips sharing their quantizers.
- ``tcn``: a temporal convolutional net: dilated Conv1d (1, 2, 4, 8), AdaptiveAvgPool1d(1).
- ``quartznet``: a QuartzNet-like speech encoder: 1D depthwise-separable blocks with residuals.
- ``resnet8``: ResNet stem and two basic blocks as bnn_pynq's ResNet-18 (shared add
  quantizers, a 1x1 stride-2 shortcut, TruncAvgPool2d).
- ``residual_identity``: a residual block adding its quantized input straight back.
- ``pooled_signed``: a global average pool quantized by a signed ``QuantIdentity``, as Brevitas
  users quantize a pooled feature: thresholds below 0 on the pool's unsigned sum.
- ``encoder_mlp``: a transformer encoder's MLP half (LayerNorm, two linear layers).
- ``concat_branches``: two convolution branches joined by ``torch.cat`` along the channels.
- ``upsample``: nearest-neighbour upsampling between two convolutions.
- ``espcn``: ESPCN super-resolution, a sub-pixel convolution ending in ``nn.PixelShuffle``.
- ``espcn_a2q``: the same with accumulator-aware (A2Q) 8-bit weights for 16-bit accumulators,
  as brevitas_examples trains it (exported with its weights baked: ``bake_decoupled_weights``).
- ``encoder_layer``: a whole encoder layer: multi-head self-attention (Brevitas's
  ``QuantMultiheadAttention``), residual adds from the layer's input, LayerNorm and an MLP
  (sequence 16, dimension 32, 2 heads, 4-bit weights, 8-bit activations).
"""

from __future__ import annotations

import itertools
import sys
import time
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from examples.brevitas_models import MODELS, SEED, _torch, export

if TYPE_CHECKING:
    from torch import nn

ZOO_DIR = MODELS / "zoo"
Network = tuple["nn.Module", tuple[int, ...]]


@cache
def bnn_quantizers() -> tuple[type, type]:
    """(weight, activation) quantizers of brevitas_examples/bnn_pynq/models/common.py:
    constant scale 1, binary (bipolar) at 1 bit, narrow-range signed integers above."""
    from brevitas.core.bit_width import BitWidthImplType
    from brevitas.core.quant import QuantType
    from brevitas.core.restrict_val import FloatToIntImplType, RestrictValueType
    from brevitas.core.scaling import ScalingImplType
    from brevitas.core.zero_point import ZeroZeroPoint
    from brevitas.inject import ExtendedInjector, value
    from brevitas.quant.solver import ActQuantSolver, WeightQuantSolver

    class CommonQuant(ExtendedInjector):
        bit_width_impl_type = BitWidthImplType.CONST
        scaling_impl_type = ScalingImplType.CONST
        restrict_scaling_type = RestrictValueType.FP
        zero_point_impl = ZeroZeroPoint
        float_to_int_impl_type = FloatToIntImplType.ROUND
        scaling_per_output_channel = False
        narrow_range = True
        signed = True

        @value
        def quant_type(bit_width):
            return QuantType.BINARY if bit_width == 1 else QuantType.INT

    class CommonWeightQuant(CommonQuant, WeightQuantSolver):
        scaling_const = 1.0

    class CommonActQuant(CommonQuant, ActQuantSolver):
        min_val = -1.0
        max_val = 1.0

    return CommonWeightQuant, CommonActQuant


def _bnn_weights(net: nn.Module) -> None:
    """bnn_pynq's initialisation: uniform weights in [-1, 1] (its weight scale is 1)."""
    torch = _torch()
    import brevitas.nn as qnn

    for module in net.modules():
        if isinstance(module, qnn.QuantConv2d | qnn.QuantLinear):
            torch.nn.init.uniform_(module.weight.data, -1, 1)


def cnv(
    weight_bits: int = 1,
    act_bits: int = 1,
    channels: tuple[int, ...] = (64, 64, 128, 128, 256, 256),
    pool_after: tuple[int, ...] = (1, 3),
    fc: tuple[int, ...] = (512, 512),
    padding: int = 0,
    image: int = 32,
    in_bits: int = 8,
    classes: int = 10,
) -> Network:
    """FINN's CNV: 3x3 convolutions (2x2 max pooling after those in ``pool_after``) and
    fully connected layers, each with batch norm and a bnn_pynq activation, then a classifier."""
    torch = _torch()
    import brevitas.nn as qnn
    from brevitas.core.restrict_val import RestrictValueType
    from torch import nn

    weight_quant, act_quant = bnn_quantizers()
    fixed_point = {  # a Q1.(in_bits - 1) input, as bnn_pynq's CNV (bipolar at 1 bit)
        "min_val": -1.0,
        "max_val": 1.0 - 2.0 ** (1 - in_bits),
        "narrow_range": False,
        "restrict_scaling_type": RestrictValueType.POWER_OF_TWO,
    }
    layers: list[nn.Module] = [
        qnn.QuantIdentity(
            act_quant=act_quant, bit_width=in_bits, **(fixed_point if in_bits > 1 else {})
        )
    ]
    size, features = image, 3
    for index, out in enumerate(channels):
        layers += [
            qnn.QuantConv2d(
                features,
                out,
                3,
                padding=padding,
                bias=False,
                weight_quant=weight_quant,
                weight_bit_width=weight_bits,
            ),
            nn.BatchNorm2d(out, eps=1e-4),
            qnn.QuantIdentity(act_quant=act_quant, bit_width=act_bits),
        ]
        size, features = size + 2 * padding - 2, out
        if index in pool_after:
            layers.append(nn.MaxPool2d(2))
            size //= 2
    layers.append(nn.Flatten())
    layers += _bnn_linear(features * size * size, fc, classes, weight_bits, act_bits, eps=1e-4)
    net = torch.nn.Sequential(*layers)
    _bnn_weights(net)
    return net, (1, 3, image, image)


def tfc(
    weight_bits: int = 1,
    act_bits: int = 1,
    in_bits: int = 1,
    hidden: tuple[int, ...] = (64, 64, 64),
    image: int = 28,
    classes: int = 10,
    bnn_pynq_input: bool = False,
) -> Network:
    """FINN's TFC (bnn_pynq FC): the flattened 1 x image x image input, linear layers each with
    batch norm and a bnn_pynq activation, then a classifier. ``bnn_pynq_input`` flattens as
    bnn_pynq's ``forward`` does (``x.view(batch, -1)``, exported as a Reshape) and maps the
    input to ``2x - 1`` before quantizing it, as FINN's own TFC test models do."""
    torch = _torch()
    import brevitas.nn as qnn
    from torch import nn

    _, act_quant = bnn_quantizers()
    layers: list[nn.Module] = [
        _bnn_pynq_input() if bnn_pynq_input else nn.Flatten(),
        qnn.QuantIdentity(act_quant=act_quant, bit_width=in_bits),
    ]
    layers += _bnn_linear(image * image, hidden, classes, weight_bits, act_bits)
    net = torch.nn.Sequential(*layers)
    _bnn_weights(net)
    return net, (1, 1, image, image)


def _bnn_pynq_input() -> nn.Module:
    """bnn_pynq FC's input: ``x.view(x.shape[0], -1)``, then ``2x - 1``."""
    torch = _torch()

    class BnnPynqInput(torch.nn.Module):
        def forward(self, x):
            x = x.view(x.shape[0], -1)
            return 2.0 * x - torch.tensor([1.0], device=x.device)

    return BnnPynqInput()


def _bnn_linear(
    features: int,
    hidden: tuple[int, ...],
    classes: int,
    weight_bits: int,
    act_bits: int,
    eps: float = 1e-5,
) -> list[nn.Module]:
    """bnn_pynq's fully connected part: [linear -> batch norm -> activation] per entry of
    ``hidden``, then the classifier."""
    import brevitas.nn as qnn
    from torch import nn

    weight_quant, act_quant = bnn_quantizers()
    weights = {"bias": False, "weight_quant": weight_quant, "weight_bit_width": weight_bits}
    layers: list[nn.Module] = []
    for out in hidden:
        layers += [
            qnn.QuantLinear(features, out, **weights),
            nn.BatchNorm1d(out, eps=eps),
            qnn.QuantIdentity(act_quant=act_quant, bit_width=act_bits),
        ]
        features = out
    return [*layers, qnn.QuantLinear(features, classes, **weights)]


def _weights(
    bits: int, per_channel: bool = False, accumulator_bits: int | None = None
) -> dict[str, object]:
    """Weight quantizer arguments: Brevitas's 8-bit float-scaled defaults at ``bits`` (binary
    with a constant scale at 1 bit, where a narrow signed integer would have no levels);
    with ``accumulator_bits``, accumulator-aware (A2Q: per channel, weights bounded so that
    no accumulator of that width overflows)."""
    from brevitas.quant import (
        Int8AccumulatorAwareWeightQuant,
        Int8WeightPerChannelFloat,
        Int8WeightPerTensorFloat,
        SignedBinaryWeightPerTensorConst,
    )

    if accumulator_bits is not None:
        return {
            "weight_quant": Int8AccumulatorAwareWeightQuant,
            "weight_bit_width": bits,
            "weight_accumulator_bit_width": accumulator_bits,
        }
    if bits == 1:
        return {"weight_quant": SignedBinaryWeightPerTensorConst}
    quant = Int8WeightPerChannelFloat if per_channel else Int8WeightPerTensorFloat
    return {"weight_quant": quant, "weight_bit_width": bits}


def _act(bits: int, signed: bool = False, quant_tensor: bool = True, **kwargs: object) -> nn.Module:
    """A quantized ReLU (``signed``: identity) with Brevitas's 8-bit float-scaled defaults at
    ``bits``; bipolar at 1 bit, since Brevitas exports every 1-bit quantizer as BipolarQuant."""
    import brevitas.nn as qnn
    from brevitas.quant import SignedBinaryActPerTensorConst

    if bits == 1:
        binary = SignedBinaryActPerTensorConst
        return qnn.QuantIdentity(act_quant=binary, return_quant_tensor=quant_tensor)
    layer = qnn.QuantIdentity if signed else qnn.QuantReLU
    return layer(bit_width=bits, return_quant_tensor=quant_tensor, **kwargs)


def _conv(
    cin: int,
    cout: int,
    kernel: int,
    weight_bits: int,
    stride: int = 1,
    groups: int = 1,
    per_channel: bool = False,
    accumulator_bits: int | None = None,
) -> nn.Module:
    """A quantized convolution without bias, padded to keep the size at stride 1."""
    import brevitas.nn as qnn

    return qnn.QuantConv2d(
        cin,
        cout,
        kernel,
        stride=stride,
        padding=kernel // 2,
        groups=groups,
        bias=False,
        **_weights(weight_bits, per_channel, accumulator_bits),
    )


def mobilenet_block(
    channels: tuple[int, ...] = (16, 32, 32),
    strides: tuple[int, ...] = (1, 2),
    weight_bits: int = 4,
    act_bits: int = 4,
    stem_weight_bits: int = 8,
    round_pool: bool = False,
    image: int = 16,
    classes: int = 10,
) -> Network:
    """MobileNet-v1's start as brevitas's quant_mobilenet_v1 (4b) builds it: a 3x3 stride-2
    stem to ``channels[0]`` (``stem_weight_bits``), depthwise-separable blocks (3x3 depthwise
    with ``strides``, then 1x1 to the next of ``channels``), each convolution with per-channel
    weights, batch norm and ReLU (per-channel scales after the stem and every pointwise but
    the last), TruncAvgPool2d global pooling (floor unless ``round_pool``) and a classifier
    with a 32-bit bias."""
    torch = _torch()
    import brevitas.nn as qnn
    from brevitas.quant import Int32Bias
    from torch import nn

    def unit(
        cin: int,
        cout: int,
        kernel: int,
        stride: int = 1,
        groups: int = 1,
        bits: int = weight_bits,
        channel_scales: bool = False,
    ) -> list[nn.Module]:
        conv = _conv(cin, cout, kernel, bits, stride, groups, per_channel=True)
        scales: dict[str, Any] = {}
        if channel_scales:  # one activation scale per channel
            scales = {
                "scaling_per_output_channel": True,
                "per_channel_broadcastable_shape": (1, cout, 1, 1),
                "scaling_stats_permute_dims": (1, 0, 2, 3),
            }
        return [conv, nn.BatchNorm2d(cout), _act(act_bits, **scales)]

    layers = [
        _act(8, signed=True),
        *unit(3, channels[0], 3, 2, bits=stem_weight_bits, channel_scales=True),
    ]
    size = (image - 1) // 2 + 1
    for index, (cin, cout, stride) in enumerate(
        zip(channels[:-1], channels[1:], strides, strict=True)
    ):
        last = index == len(strides) - 1
        layers += [
            *unit(cin, cin, 3, stride, groups=cin),
            *unit(cin, cout, 1, channel_scales=not last),
        ]
        size = (size - 1) // stride + 1
    rounding = "ROUND" if round_pool else "FLOOR"
    layers += [
        qnn.TruncAvgPool2d(
            kernel_size=size, stride=1, bit_width=act_bits, float_to_int_impl_type=rounding
        ),
        nn.Flatten(),
        qnn.QuantLinear(
            channels[-1],
            classes,
            bias=True,
            bias_quant=Int32Bias,
            **_weights(weight_bits),
        ),
    ]
    return torch.nn.Sequential(*layers), (1, 3, image, image)


def kws_conv1d(
    channels: tuple[int, ...] = (16, 16),
    weight_bits: int = 4,
    act_bits: int = 4,
    kernel: int = 3,
    padding: int = 0,
    coefficients: int = 10,
    frames: int = 49,
    classes: int = 12,
) -> Network:
    """Keyword spotting on ``coefficients`` MFCCs x ``frames``: [Conv1d -> batch norm -> ReLU ->
    MaxPool1d(2)] per entry of ``channels``, then a classifier."""
    torch = _torch()
    import brevitas.nn as qnn
    from torch import nn

    layers: list[nn.Module] = [_act(8, signed=True)]
    length, features = frames, coefficients
    for out in channels:
        layers += [
            qnn.QuantConv1d(
                features, out, kernel, padding=padding, bias=False, **_weights(weight_bits)
            ),
            nn.BatchNorm1d(out),
            _act(act_bits),
            nn.MaxPool1d(2),
        ]
        length, features = (length + 2 * padding - kernel + 1) // 2, out
    layers += [
        nn.Flatten(),
        qnn.QuantLinear(features * length, classes, bias=False, **_weights(weight_bits)),
    ]
    return torch.nn.Sequential(*layers), (1, coefficients, frames)


def jet_tagger(
    hidden: tuple[int, ...] = (64, 32, 32),
    weight_bits: int = 6,
    act_bits: int = 6,
    features: int = 16,
    classes: int = 5,
) -> Network:
    """The LHC jet-substructure tagger of hls4ml's and LogicNets' benchmark: ``features``
    high-level inputs, [linear (with bias) -> batch norm -> ReLU] per entry of ``hidden``,
    and a classifier with a bias (its softmax is left to the host), at ``weight_bits`` and
    ``act_bits`` with Brevitas's default float scales."""
    torch = _torch()
    import brevitas.nn as qnn
    from brevitas.quant import Int32Bias
    from torch import nn

    def linear(cin: int, cout: int) -> nn.Module:
        return qnn.QuantLinear(cin, cout, bias=True, bias_quant=Int32Bias, **_weights(weight_bits))

    layers: list[nn.Module] = [_act(act_bits, signed=True)]
    width = features
    for out in hidden:
        layers += [linear(width, out), nn.BatchNorm1d(out), _act(act_bits)]
        width = out
    layers.append(linear(width, classes))
    return torch.nn.Sequential(*layers), (1, features)


def ds_cnn(
    channels: int = 16,
    blocks: int = 4,
    weight_bits: int = 4,
    act_bits: int = 4,
    round_pool: bool = True,
    coefficients: int = 10,
    frames: int = 49,
    classes: int = 12,
    pool: str = "trunc",
    pool_bits: int = 4,
) -> Network:
    """MLPerf Tiny's keyword spotting DS-CNN on ``frames`` x ``coefficients`` MFCCs: a 10x4
    stride-2 stem convolution (padded to ceil(size / 2)), ``blocks`` depthwise-separable
    blocks (3x3 depthwise, 1x1 pointwise, each with batch norm and ReLU), an average pool
    over the whole (non-square) map and a classifier. MLPerf Tiny's reference has 64
    channels. ``pool``: ``"trunc"``, a TruncAvgPool2d rounding to nearest as Brevitas does by
    default (floor unless ``round_pool``); ``"avg"``, ``nn.AvgPool2d`` over the map (exported
    as ``AveragePool``, in float) then a signed ``QuantIdentity`` of ``pool_bits``, as
    Brevitas users quantize a pooled feature; ``"adaptive"``, ``nn.AdaptiveAvgPool2d(1)``
    (a ``GlobalAveragePool``) then that quantizer; the classifier has a bias for both."""
    torch = _torch()
    import brevitas.nn as qnn
    from torch import nn

    def unit(
        cin: int, cout: int, kernel: Any, stride: int = 1, padding: Any = 0, groups: int = 1,
        quant_tensor: bool = True,
    ):  # fmt: skip
        conv = qnn.QuantConv2d(
            cin, cout, kernel, stride=stride, padding=padding, groups=groups, bias=False,
            **_weights(weight_bits, per_channel=True),
        )  # fmt: skip
        return [conv, nn.BatchNorm2d(cout), _act(act_bits, quant_tensor=quant_tensor)]

    height, width = (frames - 1) // 2 + 1, (coefficients - 1) // 2 + 1
    pad = (((height - 1) * 2 + 10 - frames + 1) // 2, ((width - 1) * 2 + 4 - coefficients + 1) // 2)
    layers = [_act(8, signed=True), *unit(1, channels, (10, 4), 2, pad)]
    for block in range(blocks):
        layers += [
            *unit(channels, channels, 3, padding=1, groups=channels),
            *unit(channels, channels, 1, quant_tensor=pool == "trunc" or block < blocks - 1),
        ]
    if pool == "trunc":
        layers += [
            qnn.TruncAvgPool2d(
                kernel_size=(height, width),
                stride=1,
                bit_width=act_bits,
                float_to_int_impl_type="ROUND" if round_pool else "FLOOR",
            ),
            nn.Flatten(),
            qnn.QuantLinear(channels, classes, bias=False, **_weights(weight_bits)),
        ]
    else:
        layers += [
            nn.AvgPool2d((height, width)) if pool == "avg" else nn.AdaptiveAvgPool2d(1),
            _act(pool_bits, signed=True),
            nn.Flatten(),
            qnn.QuantLinear(channels, classes, bias=True, **_weights(weight_bits)),
        ]
    return torch.nn.Sequential(*layers), (1, 1, frames, coefficients)


def mlp_mixer(
    dim: int = 16,
    tokens: int = 8,
    hidden: int = 24,
    weight_bits: int = 4,
    act_bits: int = 4,
    pool_bits: int = 4,
    classes: int = 10,
    token_mixing: bool = False,
    mean_dim: int = 1,
) -> Network:
    """An MLP-Mixer block's channel mixing on ``tokens`` x ``dim`` (linear dim -> hidden
    (ReLU) -> dim), then the mean over the tokens (``x.mean(dim=1)``, exported as
    ``ReduceMean``, in float), a signed ``QuantIdentity`` of ``pool_bits`` and a classifier;
    no norms or residuals. ``token_mixing``: first the token MLP as timm writes it (linear
    layers on ``x.transpose(1, 2)``, quantized after). ``mean_dim=2``:
    the mean over each token's channels instead, the classifier reading ``tokens`` values."""
    torch = _torch()
    import brevitas.nn as qnn
    from torch import nn

    class Mixer(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.quant = _act(8, signed=True)
            self.tokens = nn.Sequential(
                qnn.QuantLinear(tokens, hidden, bias=True, **_weights(weight_bits)),
                _act(act_bits),
                qnn.QuantLinear(hidden, tokens, bias=True, **_weights(weight_bits)),
            )
            self.mixed = _act(act_bits, signed=True)
            self.channels = nn.Sequential(
                qnn.QuantLinear(dim, hidden, bias=True, **_weights(weight_bits)),
                _act(act_bits),
                qnn.QuantLinear(hidden, dim, bias=True, **_weights(weight_bits)),
                _act(act_bits, signed=True, quant_tensor=False),
            )
            self.pooled = _act(pool_bits, signed=True)
            pooled = dim if mean_dim == 1 else tokens
            self.head = qnn.QuantLinear(pooled, classes, bias=True, **_weights(weight_bits))

        def forward(self, x):
            x = self.quant(x)
            if token_mixing:
                x = self.mixed(torch.transpose(self.tokens(torch.transpose(x, 1, 2)), 1, 2))
            return self.head(self.pooled(self.channels(x).mean(dim=mean_dim)))

    return Mixer(), (1, tokens, dim)


def tcn(
    channels: int = 16,
    dilations: tuple[int, ...] = (1, 2, 4, 8),
    kernel: int = 3,
    weight_bits: int = 4,
    act_bits: int = 4,
    features: int = 8,
    frames: int = 64,
    classes: int = 6,
    pool_bits: int | None = None,
) -> Network:
    """A temporal convolutional net for audio or sensor streams on ``features`` x ``frames``:
    per entry of ``dilations`` a Conv1d with that dilation (padded to keep the length), batch
    norm and ReLU, then ``AdaptiveAvgPool1d(1)`` (exported as GlobalAveragePool, in float)
    and a classifier; ``pool_bits``: the pool quantized by a signed ``QuantIdentity``."""
    torch = _torch()
    import brevitas.nn as qnn
    from torch import nn

    layers: list[nn.Module] = [_act(8, signed=True)]
    width = features
    for dilation in dilations:
        layers += [
            qnn.QuantConv1d(
                width,
                channels,
                kernel,
                dilation=dilation,
                padding=dilation * (kernel // 2),
                bias=False,
                **_weights(weight_bits, per_channel=True),
            ),
            nn.BatchNorm1d(channels),
            _act(act_bits),
        ]
        width = channels
    layers += [
        nn.AdaptiveAvgPool1d(1),
        *([_act(pool_bits, signed=True)] if pool_bits else []),
        nn.Flatten(),
        qnn.QuantLinear(channels, classes, bias=False, **_weights(weight_bits)),
    ]
    return torch.nn.Sequential(*layers), (1, features, frames)


def quartznet(
    channels: tuple[int, ...] = (24, 24),
    kernels: tuple[int, ...] = (5, 7),
    dilation: int = 1,
    features: int = 16,
    frames: int = 48,
    weight_bits: int = 4,
    act_bits: int = 4,
    classes: int = 10,
    per_channel_depthwise: bool = False,
) -> Network:
    """A QuartzNet-like speech encoder on ``features`` x ``frames``: a 1D stem convolution
    (kernel 3, stride 2), then per entry of ``channels`` and ``kernels`` a block of two
    depthwise-separable 1D convolutions (depthwise with the block's kernel and ``dilation``,
    then pointwise), each with batch norm, and a residual (pointwise convolution and batch
    norm) added before the block's ReLU with one quantizer for both operands; per-frame
    logits from a pointwise convolution, as QuartzNet's CTC decoder reads them. Nothing is
    quantized between a depthwise convolution and its pointwise one, so depthwise weights
    have one scale per tensor (only a scalar moves past the pointwise product) unless
    ``per_channel_depthwise``."""
    _torch()
    import brevitas.nn as qnn
    from torch import nn

    def conv(cin: int, cout: int, kernel: int, stride: int = 1, groups: int = 1) -> nn.Module:
        return qnn.QuantConv1d(
            cin, cout, kernel, stride=stride, padding=dilation * (kernel // 2) if groups > 1
            else kernel // 2, dilation=dilation if groups > 1 else 1, groups=groups,
            bias=False, **_weights(weight_bits, per_channel=groups == 1 or per_channel_depthwise),
        )  # fmt: skip

    class Block(nn.Module):
        def __init__(self, cin: int, cout: int, kernel: int) -> None:
            super().__init__()
            self.body = nn.Sequential(
                conv(cin, cin, kernel, groups=cin),
                conv(cin, cout, 1),
                nn.BatchNorm1d(cout),
                _act(act_bits),
                conv(cout, cout, kernel, groups=cout),
                conv(cout, cout, 1),
                nn.BatchNorm1d(cout),
            )
            self.skip = nn.Sequential(conv(cin, cout, 1), nn.BatchNorm1d(cout))
            self.shared = _act(act_bits, signed=True)
            self.relu = _act(act_bits)

        def forward(self, x):
            return self.relu(self.shared(self.body(x)) + self.shared(self.skip(x)))

    class QuartzNet(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.stem = nn.Sequential(
                _act(8, signed=True),
                conv(features, channels[0], 3, stride=2),
                nn.BatchNorm1d(channels[0]),
                _act(act_bits),
            )
            widths = [channels[0], *channels]
            self.blocks = nn.Sequential(
                *(Block(a, b, k) for a, b, k in zip(widths[:-1], widths[1:], kernels, strict=True))
            )
            self.head = conv(channels[-1], classes, 1)

        def forward(self, x):
            return self.head(self.blocks(self.stem(x)))

    return QuartzNet(), (1, features, frames)


def resnet8(
    channels: tuple[int, ...] = (16, 32),
    weight_bits: int = 4,
    act_bits: int = 4,
    image: int = 16,
    classes: int = 10,
    repeats: int = 1,
    round_pool: bool = False,
) -> Network:
    """A stem and ``repeats`` basic blocks per entry of ``channels`` (the first of each stride
    2 from the second entry on, with a 1x1 convolution shortcut where the shape changes; a
    ResNet-18 for CIFAR: ``channels=(64, 128, 256, 512), repeats=2, image=32``), laid out as
    bnn_pynq's ResNet-18: the
    body's last quantizer is the one that quantized the skip operand (or the shortcut's), and
    TruncAvgPool2d (8-bit; floor, or to nearest with ``round_pool`` as MLPerf Tiny's Brevitas
    export does by default) pools globally before a classifier with a 32-bit bias."""
    _torch()  # before torch loads (the inductor cache)
    import brevitas.nn as qnn
    from brevitas.quant import Int32Bias, TruncTo8bit
    from torch import nn

    def conv(cin: int, cout: int, kernel: int, stride: int = 1) -> nn.Module:
        return _conv(cin, cout, kernel, weight_bits, stride, per_channel=True)

    def relu() -> nn.Module:
        return _act(act_bits)

    class BasicBlock(nn.Module):
        def __init__(self, cin: int, cout: int, stride: int, shared: nn.Module) -> None:
            super().__init__()
            self.body = nn.Sequential(
                conv(cin, cout, 3, stride),
                nn.BatchNorm2d(cout),
                relu(),
                conv(cout, cout, 3),
                nn.BatchNorm2d(cout),
            )
            self.shortcut: nn.Module = nn.Identity()
            if stride != 1 or cin != cout:
                self.shortcut = nn.Sequential(
                    conv(cin, cout, 1, stride), nn.BatchNorm2d(cout), relu()
                )
                shared = self.shortcut[-1]
            self.shared = shared  # both operands of the add on one scale
            self.relu_out = relu()

        def forward(self, x):
            return self.relu_out(self.shared(self.body(x)) + self.shortcut(x))

    class ResNet(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.quant_in = _act(8, signed=True)
            self.stem = nn.Sequential(conv(3, channels[0], 3), nn.BatchNorm2d(channels[0]))
            self.relu = relu()
            blocks, shared, cin, size = [], self.relu, channels[0], image
            for index, cout in enumerate(channels):
                for repeat in range(repeats):
                    stride = 2 if index and not repeat else 1
                    blocks.append(BasicBlock(cin, cout, stride, shared))
                    shared, cin = blocks[-1].relu_out, cout
                size = (size - 1) // 2 + 1 if index else size
            self.blocks = nn.Sequential(*blocks)
            self.pool = qnn.TruncAvgPool2d(
                kernel_size=size,
                trunc_quant=TruncTo8bit,
                float_to_int_impl_type="ROUND" if round_pool else "FLOOR",
            )
            self.flatten = nn.Flatten()
            self.head = qnn.QuantLinear(
                cin,
                classes,
                bias=True,
                bias_quant=Int32Bias,
                **_weights(weight_bits),
            )

        def forward(self, x):
            x = self.blocks(self.relu(self.stem(self.quant_in(x))))
            return self.head(self.flatten(self.pool(x)))

    return ResNet(), (1, 3, image, image)


def residual_identity(
    channels: int = 8,
    weight_bits: int = 4,
    act_bits: int = 4,
    image: int = 8,
    classes: int = 10,
) -> Network:
    """A residual block adding its quantized input straight back: ``q = shared(x)``,
    ``relu(shared(body(q)) + q)`` with one quantizer for both operands, global average
    pooling and a classifier."""
    torch = _torch()
    import brevitas.nn as qnn
    from torch import nn

    class ResidualIdentity(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.shared = _act(act_bits, signed=True)
            self.body = nn.Sequential(
                _conv(channels, channels, 3, weight_bits),
                nn.BatchNorm2d(channels),
                _act(act_bits),
                _conv(channels, channels, 3, weight_bits),
                nn.BatchNorm2d(channels),
            )
            self.relu = _act(act_bits)
            self.pool = nn.AdaptiveAvgPool2d(1)
            self.head = qnn.QuantLinear(channels, classes, bias=False, **_weights(weight_bits))

        def forward(self, x):
            skip = self.shared(x)
            y = self.pool(self.relu(self.shared(self.body(skip)) + skip))
            return self.head(torch.flatten(y, 1))

    return ResidualIdentity(), (1, channels, image, image)


def pooled_signed(
    channels: int = 8,
    weight_bits: int = 3,
    act_bits: int = 3,
    pool_bits: int = 3,
    image: int = 6,
    classes: int = 10,
    one_d: bool = False,
    window: int | None = None,
    padding: int = 0,
) -> Network:
    """A convolution, batch norm and ReLU, then global average pooling followed by a signed
    ``QuantIdentity`` of ``pool_bits`` (as Brevitas users quantize a pooled feature) and a
    classifier: the pool's input is unsigned, the quantizer's thresholds reach below 0.
    ``one_d``: the same on a 1-D signal (``AdaptiveAvgPool1d``), as a TCN's global pool;
    ``window``: an ``nn.AvgPool2d`` of that window instead (exported as ``AveragePool``), with
    ``padding`` averaging a border window over its values only (``count_include_pad=False``)."""
    torch = _torch()
    import brevitas.nn as qnn
    from torch import nn

    conv = qnn.QuantConv1d if one_d else qnn.QuantConv2d
    norm = nn.BatchNorm1d if one_d else nn.BatchNorm2d
    pool = nn.AdaptiveAvgPool1d(1) if one_d else nn.AdaptiveAvgPool2d(1)
    pooled = channels
    if window:
        pool = nn.AvgPool2d(window, padding=padding, count_include_pad=not padding)
        pooled = channels * ((image + 2 * padding) // window) ** 2

    class PooledSigned(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.layers = nn.Sequential(
                _act(8, signed=True),
                conv(3, channels, 3, padding=1, bias=False, **_weights(weight_bits)),
                norm(channels),
                _act(act_bits, quant_tensor=False),
                pool,
                _act(pool_bits, signed=True),
            )
            self.head = qnn.QuantLinear(pooled, classes, bias=False, **_weights(weight_bits))

        def forward(self, x):
            return self.head(torch.flatten(self.layers(x), 1))

    shape = (1, 3, image) if one_d else (1, 3, image, image)
    return PooledSigned(), shape


def encoder_mlp(
    dim: int = 32,
    hidden: int = 64,
    sequence: int = 16,
    weight_bits: int = 4,
    act_bits: int = 4,
    in_bits: int = 8,
) -> Network:
    """A transformer encoder's MLP half on a ``sequence`` x ``dim`` input: LayerNorm between
    two ``in_bits`` quantizers, then linear layers dim -> hidden (ReLU) -> dim with biases."""
    torch = _torch()
    import brevitas.nn as qnn
    from torch import nn

    net = torch.nn.Sequential(
        _act(in_bits, signed=True, quant_tensor=False),
        nn.LayerNorm(dim),
        _act(in_bits, signed=True),
        qnn.QuantLinear(dim, hidden, bias=True, **_weights(weight_bits)),
        _act(act_bits),
        qnn.QuantLinear(hidden, dim, bias=True, **_weights(weight_bits)),
    )
    return net, (1, sequence, dim)


def clamped_mlp(
    features: int = 16,
    hidden: int = 12,
    weight_bits: int = 4,
    act_bits: int = 4,
    steps: tuple[int, int] = (2, 11),
) -> Network:
    """A linear layer whose quantized ReLU output is clamped to ``steps`` of its scale
    (``torch.clamp``, a saturation on the activation's grid), exported as an ONNX ``Clip``
    behind the activation's scale: the clip sees floats until a rewrite moves the scale past
    it. Not in ``ZOO``: FINN has no layer for the clip."""
    torch = _torch()
    import brevitas.nn as qnn

    low, high = steps

    class Clamped(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.layers = torch.nn.Sequential(
                _act(8, signed=True),
                qnn.QuantLinear(features, hidden, bias=False, **_weights(weight_bits)),
                _act(act_bits),
            )

        def forward(self, x):
            y = self.layers(x)
            if not hasattr(y, "scale"):  # calibrating: quantization is off
                return y
            return torch.clamp(y.value, low * y.scale, high * y.scale)

    return Clamped(), (1, features)


def two_heads(
    channels: int = 8,
    weight_bits: int = 4,
    act_bits: int = 4,
    image: int = 8,
    classes: tuple[int, int] = (10, 4),
) -> Network:
    """One convolutional trunk (two convolutions, a max pool) forked into two classifier
    heads: a model with two outputs, as multi-task networks have."""
    torch = _torch()
    import brevitas.nn as qnn
    from torch import nn

    features = channels * (image // 2) ** 2

    class TwoHeads(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.trunk = nn.Sequential(
                _act(8, signed=True),
                _conv(3, channels, 3, weight_bits),
                nn.BatchNorm2d(channels),
                _act(act_bits),
                nn.MaxPool2d(2),
                _conv(channels, channels, 3, weight_bits),
                nn.BatchNorm2d(channels),
                _act(act_bits),
            )
            self.heads = nn.ModuleList(
                qnn.QuantLinear(features, n, bias=False, **_weights(weight_bits)) for n in classes
            )

        def forward(self, x):
            y = torch.flatten(self.trunk(x), 1)
            return tuple(head(y) for head in self.heads)

    return TwoHeads(), (1, 3, image, image)


def concat_branches(
    channels: tuple[int, int] = (8, 8),
    weight_bits: int = 4,
    act_bits: tuple[int, int] = (4, 4),
    image: int = 8,
    classes: int = 10,
    shared: bool = False,
) -> Network:
    """Two branches on one quantized input (a 3x3 and a 1x1 convolution with batch norm,
    ``channels`` each) joined by ``torch.cat`` along the channels, as Inception and DenseNet
    blocks join them; then a 1x1 convolution, global average pooling and a classifier.
    Without ``shared`` each branch has its own ReLU quantizer (``act_bits``, its own scale)
    and the join is quantized again; with ``shared`` one quantizer serves both branches, as
    Brevitas needs for a ``cat`` of quantized tensors, and the join is not requantized."""
    torch = _torch()
    import brevitas.nn as qnn
    from torch import nn

    joined = sum(channels)

    class Branches(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.quant = _act(8, signed=True)
            self.convs = nn.ModuleList(
                nn.Sequential(_conv(3, width, kernel, weight_bits), nn.BatchNorm2d(width))
                for width, kernel in zip(channels, (3, 1), strict=True)
            )
            acts = (
                [_act(act_bits[0])] * 2
                if shared
                else [_act(b, quant_tensor=False) for b in act_bits]
            )
            self.acts = nn.ModuleList(acts)
            self.join = nn.Identity() if shared else _act(max(act_bits))
            self.tail = nn.Sequential(
                _conv(joined, joined, 1, weight_bits),
                nn.BatchNorm2d(joined),
                _act(max(act_bits)),
                nn.AdaptiveAvgPool2d(1),
            )
            self.head = qnn.QuantLinear(joined, classes, bias=False, **_weights(weight_bits))

        def forward(self, x):
            q = self.quant(x)
            parts = [act(conv(q)) for conv, act in zip(self.convs, self.acts, strict=True)]
            y = self.tail(self.join(torch.cat(parts, dim=1)))
            return self.head(torch.flatten(y, 1))

    return Branches(), (1, 3, image, image)


def upsample(
    channels: int = 8,
    scale: int = 2,
    weight_bits: int = 4,
    act_bits: int = 4,
    image: int = 6,
    classes: int = 10,
) -> Network:
    """A convolution, nearest-neighbour upsampling by ``scale`` (``nn.Upsample``, exported as
    ``Resize``), another convolution, global average pooling and a classifier, as decoders
    and segmentation heads upsample feature maps."""
    torch = _torch()
    import brevitas.nn as qnn
    from torch import nn

    class Upsampled(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.layers = nn.Sequential(
                _act(8, signed=True),
                _conv(3, channels, 3, weight_bits),
                nn.BatchNorm2d(channels),
                _act(act_bits, quant_tensor=False),
                nn.Upsample(scale_factor=scale, mode="nearest"),
                _act(act_bits),
                _conv(channels, channels, 3, weight_bits),
                nn.BatchNorm2d(channels),
                _act(act_bits),
                nn.AdaptiveAvgPool2d(1),
            )
            self.head = qnn.QuantLinear(channels, classes, bias=False, **_weights(weight_bits))

        def forward(self, x):
            return self.head(torch.flatten(self.layers(x), 1))

    return Upsampled(), (1, 3, image, image)


def unet(
    channels: tuple[int, ...] = (8, 16),
    bottom: int = 32,
    weight_bits: int = 4,
    act_bits: int = 4,
    image: int = 32,
    classes: int = 2,
) -> Network:
    """A U-Net for segmentation, one level per entry of ``channels``: down, a 3x3
    convolution, batch norm and ReLU whose output is kept as the level's skip, then 2x2 max
    pooling; a ``bottom`` convolution; up, nearest-neighbour 2x upsampling, a 1x1 convolution
    to the level's width quantized by the skip's own quantizer (Brevitas's ``cat`` needs one
    scale), ``torch.cat`` with the skip and a 3x3 convolution; a 1x1 head to ``classes``
    maps."""
    torch = _torch()
    from torch import nn

    def unit(cin: int, cout: int, kernel: int) -> list[nn.Module]:
        return [_conv(cin, cout, kernel, weight_bits), nn.BatchNorm2d(cout)]

    widths = [3, *channels]

    class UNet(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.quant_in = _act(8, signed=True)
            self.down = nn.ModuleList(
                nn.Sequential(*unit(a, b, 3)) for a, b in itertools.pairwise(widths)
            )
            self.skips = nn.ModuleList(_act(act_bits) for _ in channels)  # shared with the up path
            self.pool = nn.MaxPool2d(2)
            self.bottom = nn.Sequential(
                *unit(channels[-1], bottom, 3), _act(act_bits, quant_tensor=False)
            )
            self.upsample = nn.Upsample(scale_factor=2, mode="nearest")
            ups = [bottom, *channels[:0:-1]]  # what each level's up path receives, deepest first
            self.reduce = nn.ModuleList(
                nn.Sequential(*unit(cin, width, 1))
                for cin, width in zip(ups, channels[::-1], strict=True)
            )
            self.merge = nn.ModuleList(
                nn.Sequential(*unit(2 * width, width, 3), _act(act_bits, quant_tensor=False))
                for width in channels[::-1]
            )
            self.head = _conv(channels[0], classes, 1, weight_bits)

        def forward(self, x):
            x, kept = self.quant_in(x), []
            for conv, skip in zip(self.down, self.skips, strict=True):
                x = skip(conv(x))
                kept.append(x)
                x = self.pool(x)
            x = self.bottom(x)
            for step, level in enumerate(reversed(range(len(channels)))):
                up = self.skips[level](self.reduce[step](self.upsample(x)))
                x = self.merge[step](torch.cat([up, kept[level]], dim=1))
            return self.head(x)

    return UNet(), (1, 3, image, image)


def espcn(
    channels: tuple[int, ...] = (16, 8),
    scale: int = 2,
    weight_bits: int = 4,
    act_bits: int = 4,
    colours: int = 1,
    image: int = 8,
    last_per_channel: bool = False,
    accumulator_bits: int | None = None,
) -> Network:
    """ESPCN super-resolution as brevitas_examples builds it (``QuantESPCN``): an 8-bit input
    quantizer, 5x5 and 3x3 convolutions with biases, batch norm and quantized ReLUs, a last
    3x3 convolution to ``colours * scale**2`` channels with 8-bit weights (one scale, as
    Brevitas's; ``last_per_channel``: one per channel), ``nn.PixelShuffle`` (exported as
    ``DepthToSpace``) and an 8-bit ReLU reading out the image. ``accumulator_bits``: every
    convolution's weights accumulator-aware (A2Q) for accumulators of that width, as
    brevitas_examples' A2Q ESPCN."""
    import brevitas.nn as qnn
    from torch import nn

    class ESPCN(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            layers: list[nn.Module] = [_act(8, signed=True)]
            widths = (colours, *channels)
            for i, (cin, cout) in enumerate(itertools.pairwise(widths)):
                bits = 8 if i == 0 else weight_bits
                layers += [
                    qnn.QuantConv2d(
                        cin,
                        cout,
                        5 if i == 0 else 3,
                        padding=2 if i == 0 else 1,
                        bias=True,
                        **_weights(bits, per_channel=True, accumulator_bits=accumulator_bits),
                    ),
                    nn.BatchNorm2d(cout),
                    _act(act_bits),
                ]
            layers.append(
                _conv(widths[-1], colours * scale**2, 3, 8, per_channel=last_per_channel,
                      accumulator_bits=accumulator_bits)
            )  # fmt: skip
            self.layers = nn.Sequential(*layers)
            self.shuffle = nn.PixelShuffle(scale)
            self.out = qnn.QuantReLU(bit_width=8)

        def forward(self, x):
            return self.out(self.shuffle(self.layers(x)))

    return ESPCN(), (1, colours, image, image)


def encoder(
    dim: int = 32,
    heads: int = 2,
    hidden: int = 64,
    sequence: int = 16,
    layers: int = 1,
    weight_bits: int = 4,
    act_bits: int = 8,
    quantized_scores: bool = True,
    packed_in_proj: bool = False,
) -> Network:
    """Transformer encoder layers (post-norm, as BERT) on a ``sequence`` x ``dim`` input:
    Brevitas multi-head self-attention (``heads``, separate q/k/v projections), a residual add
    from the layer's input and LayerNorm, then an MLP dim -> hidden (ReLU) -> dim, a residual
    add and LayerNorm; ``weight_bits`` weights, ``act_bits`` activations. Without
    ``quantized_scores`` the softmax output (the attention weights) stays floating point;
    with ``packed_in_proj`` (Brevitas's default) q, k and v come from one projection, sliced."""
    _torch()
    import brevitas.nn as qnn
    from torch import nn

    class EncoderLayer(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.quant = _act(act_bits, signed=True)
            self.attention = qnn.QuantMultiheadAttention(
                dim,
                heads,
                batch_first=True,
                packed_in_proj=packed_in_proj,
                in_proj_weight_bit_width=weight_bits,
                out_proj_weight_bit_width=weight_bits,
                return_quant_tensor=False,
                **({} if quantized_scores else {"attn_output_weights_quant": None}),
            )
            self.attention_sum = _act(act_bits, signed=True, quant_tensor=False)
            self.attention_norm = nn.LayerNorm(dim)
            self.mlp = nn.Sequential(
                _act(act_bits, signed=True),
                qnn.QuantLinear(dim, hidden, bias=True, **_weights(weight_bits)),
                _act(act_bits),
                qnn.QuantLinear(hidden, dim, bias=True, **_weights(weight_bits)),
            )
            self.mlp_sum = _act(act_bits, signed=True, quant_tensor=False)
            self.mlp_norm = nn.LayerNorm(dim)

        def forward(self, x):
            q = self.quant(x)
            attended, _ = self.attention(q, q, q, need_weights=False)
            x = self.attention_norm(self.attention_sum(x + attended))
            return self.mlp_norm(self.mlp_sum(x + self.mlp(x)))

    return nn.Sequential(*[EncoderLayer() for _ in range(layers)]), (1, sequence, dim)


def class_token(dim: int = 16, tokens: int = 8, weight_bits: int = 4, act_bits: int = 4) -> Network:
    """Tokens with a learned class token prepended (as a ViT's), quantized, then a linear
    layer: the export joins a constant to the stream with a ``Concat``."""
    torch = _torch()
    import brevitas.nn as qnn
    from torch import nn

    class ClassToken(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.quant = _act(act_bits, signed=True, quant_tensor=False)
            self.token = nn.Parameter(torch.rand(1, 1, dim) - 0.5)
            self.joined = _act(act_bits, signed=True)
            self.head = qnn.QuantLinear(dim, dim, bias=True, **_weights(weight_bits))

        def forward(self, x):
            token = self.token.expand(x.shape[0], -1, -1)
            joined = torch.cat([token, self.quant(x)], dim=1)
            return self.head(self.joined(joined))

    return ClassToken(), (1, tokens, dim)


def vit(
    image: int = 32,
    patch: int = 4,
    dim: int = 192,
    heads: int = 3,
    hidden: int = 768,
    layers: int = 4,
    weight_bits: int = 4,
    act_bits: int = 8,
    classes: int = 10,
) -> Network:
    """A ViT: a patch-embedding convolution (``patch`` x ``patch``, stride ``patch``) to
    ``(image / patch)²`` tokens of ``dim``, ``layers`` encoder layers as ``encoder`` builds
    them, mean pooling over the tokens and a classifier. Not in ``ZOO``: too big to ship."""
    torch = _torch()
    import brevitas.nn as qnn
    from torch import nn

    tokens = (image // patch) ** 2
    blocks, _ = encoder(dim, heads, hidden, tokens, layers, weight_bits, act_bits)

    class ViT(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.quant = _act(8, signed=True)
            self.embed = qnn.QuantConv2d(
                3, dim, patch, stride=patch, bias=False, **_weights(weight_bits)
            )
            self.blocks = blocks
            self.pooled = _act(act_bits, signed=True)
            self.head = qnn.QuantLinear(dim, classes, bias=False, **_weights(weight_bits))

        def forward(self, x):
            y = self.embed(self.quant(x))
            z = self.blocks(torch.flatten(y, 2).transpose(1, 2))
            return self.head(self.pooled(z.mean(dim=1)))

    return ViT(), (1, 3, image, image)


def bert_tiny() -> Network:
    """A BERT-tiny-like encoder: 2 layers, hidden 128, 2 heads, MLP 512, sequence 32."""
    return encoder(dim=128, heads=2, hidden=512, sequence=32, layers=2)


def bert_mini() -> Network:
    """A BERT-mini-like encoder: 4 layers, hidden 256, 4 heads, MLP 1024, sequence 128.
    Not in ``ZOO``: too big to ship."""
    return encoder(dim=256, heads=4, hidden=1024, sequence=128, layers=4)


def bert_demo() -> Network:
    """An encoder layer as microsoft/Brainsmith's BERT demo configures it: hidden 384,
    12 heads, FFN 1536, sequence 128, 8-bit weights and activations. Not in ``ZOO``."""
    return encoder(dim=384, heads=12, hidden=1536, sequence=128, weight_bits=8, act_bits=8)


Factory = Callable[[], Network]

# name -> (factory, description, small enough to ship in examples/models/zoo/)
ZOO: dict[str, tuple[Factory, str, bool]] = {
    "cnv_w1a1": (lambda: cnv(1, 1), "FINN's CNV (CIFAR-10), 1-bit weights and activations", False),
    "cnv_w2a2": (lambda: cnv(2, 2), "FINN's CNV (CIFAR-10), 2-bit weights and activations", False),
    "tfc_w1a1": (tfc, "FINN's TFC (MNIST), 3 x 64 neurons, 1-bit weights and activations", True),
    "tfc_w2a2": (
        lambda: tfc(2, 2, 2),
        "FINN's TFC (MNIST), 3 x 64 neurons, 2-bit weights, activations and input",
        True,
    ),
    "tfc_w1a1_bnn_pynq": (
        lambda: tfc(bnn_pynq_input=True),
        "FINN's TFC-w1a1 as bnn_pynq writes it: a Reshape and 2x - 1 at the input",
        True,
    ),
    "mobilenet_block": (
        mobilenet_block,
        "MobileNet-v1 stem + 2 depthwise-separable blocks, 4-bit",
        True,
    ),
    "kws_conv1d": (kws_conv1d, "keyword spotting, 2 x Conv1d + MaxPool1d, 4-bit", True),
    "quartznet": (
        quartznet,
        "QuartzNet-like: 1D depthwise-separable blocks (kernels 5, 7) with residuals, 4-bit",
        True,
    ),
    "resnet8": (resnet8, "ResNet stem + 2 basic blocks (1x1 stride-2 shortcut), 4-bit", True),
    "jet_tagger": (jet_tagger, "LHC jet tagger 16-64-32-32-5 with batch norm, 6-bit", True),
    "ds_cnn": (
        ds_cnn,
        "MLPerf Tiny's DS-CNN: 10x4 stride-2 stem, 4 depthwise-separable blocks, 25x5 round pool",
        True,
    ),
    "ds_cnn_avg": (
        lambda: ds_cnn(channels=8, blocks=2, frames=24, pool="avg"),
        "a DS-CNN ending in nn.AvgPool2d over the map, a signed QuantIdentity, FC 12, 4-bit",
        True,
    ),
    "mlp_mixer": (
        mlp_mixer,
        "an MLP-Mixer's channel MLP, mean over tokens, a signed QuantIdentity, FC 10, 4-bit",
        True,
    ),
    "unet": (unet, "2-level U-Net 32x32: max pool down, nearest upsampling up, Concat skips", True),
    "tcn": (tcn, "temporal conv net: Conv1d dilations 1/2/4/8, AdaptiveAvgPool1d(1), 4-bit", True),
    "residual_identity": (residual_identity, "residual block adding its quantized input", True),
    "pooled_signed": (
        pooled_signed,
        "conv, ReLU, global average pool quantized by a signed QuantIdentity, classifier, 3-bit",
        True,
    ),
    "encoder_mlp": (encoder_mlp, "transformer MLP: LayerNorm, 32-64-32 linear, 4-bit", True),
    "two_heads": (two_heads, "a conv trunk forked into two classifier heads (2 outputs)", True),
    "concat_branches": (
        concat_branches,
        "a 3x3 and a 1x1 conv branch joined by torch.cat, requantized, 4-bit",
        True,
    ),
    "upsample": (upsample, "conv, nearest-neighbour 2x upsampling, conv, 4-bit", True),
    "espcn": (
        espcn,
        "ESPCN super-resolution: convs to scale**2 channels, PixelShuffle (DepthToSpace), 8-bit out",
        True,
    ),
    "espcn_a2q": (
        lambda: espcn(weight_bits=8, act_bits=8, accumulator_bits=16),
        "ESPCN with 8-bit accumulator-aware (A2Q) weights for 16-bit accumulators",
        True,
    ),
    "encoder_layer": (
        encoder,
        "transformer encoder layer: 2-head attention, residuals, LayerNorm, MLP; 4-bit weights",
        True,
    ),
    "bert_tiny": (bert_tiny, "BERT-tiny-like encoder: 2 layers, hidden 128, 2 heads", True),
}


def _init_norms(network: Network) -> Network:
    """What ``calibrate`` does for BatchNorm2d, for every batch and layer norm: random affine
    parameters (and cumulative batch statistics)."""
    torch = _torch()
    from torch import nn

    for module in network[0].modules():
        if isinstance(module, nn.BatchNorm1d | nn.BatchNorm2d | nn.LayerNorm):
            if isinstance(module, nn.BatchNorm1d | nn.BatchNorm2d):
                module.momentum = None
            if module.weight is not None:
                torch.nn.init.uniform_(module.weight, 0.5, 1.5)
                torch.nn.init.uniform_(module.bias, -0.2, 0.2)
    return network


def export_network(
    name: str,
    folder: Path = ZOO_DIR,
    seed: int = SEED,
    make: Factory | None = None,
    bake: bool = True,
) -> Path:
    """Export zoo entry ``name`` (or ``make``'s network under that name) with its vectors
    (``bake``: accumulator-aware weights quantized in place first, see ``export``)."""
    factory = make or ZOO[name][0]
    return export(name, folder, seed, make=lambda: _init_norms(factory()), bake=bake)


def verify(path: Path) -> float:
    """Largest deviation of QONNX's execution of ``path`` from the torch outputs saved beside
    it, relative to the largest torch output (inputs run one at a time)."""
    from qonnx.core.modelwrapper import ModelWrapper
    from qonnx.core.onnx_exec import execute_onnx
    from qonnx.util.cleanup import cleanup_model

    model = cleanup_model(ModelWrapper(str(path)))
    inputs = np.load(path.with_name(f"{path.stem}_input.npy"))
    source = model.graph.input[0].name
    results = [execute_onnx(model, {source: x[None]}) for x in inputs]
    worst = 0.0
    for sink, expected in zip(model.graph.output, expected_outputs(path), strict=True):
        outputs = np.stack([result[sink.name][0] for result in results])
        scale = float(np.abs(expected).max()) or 1.0  # absolute when torch's are all 0
        worst = max(worst, float(np.abs(outputs - expected).max()) / scale)
    return worst


def expected_outputs(path: Path) -> list[np.ndarray]:
    """The torch outputs saved beside ``path``: ``_expected.npy``, or for a model with
    several outputs ``_expected.npz`` (one array per output, in order)."""
    archive = path.with_name(f"{path.stem}_expected.npz")
    if archive.exists():
        with np.load(archive) as arrays:
            return [arrays[f"arr_{i}"] for i in range(len(arrays.files))]
    return [np.load(path.with_name(f"{path.stem}_expected.npy"))]


def main(argv: list[str]) -> list[Path]:
    """Export (and verify) the named networks, or every small one, to an optional folder."""
    folder = ZOO_DIR
    if argv and argv[0] not in ZOO:
        folder, argv = Path(argv[0]), argv[1:]
    paths = []
    for name in argv or [name for name, (_, _, small) in ZOO.items() if small]:
        began = time.perf_counter()
        paths.append(export_network(name, folder))
        seconds = time.perf_counter() - began
        size = paths[-1].stat().st_size
        error = verify(paths[-1])
        print(f"{paths[-1]} ({size:,} bytes, {seconds:.1f} s): max error {error:.1e} vs torch")
    return paths


if __name__ == "__main__":
    main(sys.argv[1:])
