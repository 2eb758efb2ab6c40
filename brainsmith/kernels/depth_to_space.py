"""The ``StreamingDepthToSpace`` kernel: ONNX's DepthToSpace on a channels-last stream.

Sub-pixel convolutions (ESPCN, super-resolution and segmentation decoders; torch's
``nn.PixelShuffle``) end in a DepthToSpace, which FINN has no layer for. On a channels-last
stream each input row of ``WI`` pixels of ``C * r * r`` channels becomes ``r`` output rows of
``WI * r`` pixels of ``C`` channels, so one input row is all a layer must hold: brainsmith's
RTL backend (``brainsmith/backends/depth_to_space.py``) buffers two, one written while the
other is read. ``InferDepthToSpace`` (``brainsmith/transforms/depth_to_space.py``) makes the
layer from a DepthToSpace reading a channels-last tensor through a transpose.
"""

from __future__ import annotations

import numpy as np
from finn.custom_op.fpgadataflow.hwcustomop import HWCustomOp
from qonnx.core.datatype import DataType

from brainsmith.plugin import kernel

TYPE_CHECKING = False
if TYPE_CHECKING:
    import onnx
    from qonnx.core.modelwrapper import ModelWrapper

MODES = ("CRD", "DCR")


def depth_to_space(x: np.ndarray, block: int, mode: str) -> np.ndarray:
    """ONNX's DepthToSpace of a channels-last ``x`` (N, H, W, C * block**2) in ``mode``:
    output pixel (h*r + i, w*r + j) channel c is input pixel (h, w) channel ``c*r*r + i*r + j``
    (CRD, torch's PixelShuffle) or ``(i*r + j)*C + c`` (DCR)."""
    n, h, w, depth = x.shape
    c, r = depth // (block * block), block
    if mode == "CRD":
        blocks = x.reshape(n, h, w, c, r, r).transpose(0, 1, 4, 2, 5, 3)
    else:
        blocks = x.reshape(n, h, w, r, r, c).transpose(0, 1, 3, 2, 4, 5)
    return blocks.reshape(n, h * r, w * r, c)


@kernel(
    op_type="StreamingDepthToSpace",
    domain="finn.custom_op.fpgadataflow",
    infer_transform="brainsmith:InferDepthToSpace",
    infer_order="before:InferShuffle",  # the layout transpose it reads is its own
    folding={"SIMD": "NumChannels"},
)
class StreamingDepthToSpace(HWCustomOp):  # type: ignore[misc]
    """DepthToSpace (PixelShuffle) on a channels-last stream, two input rows buffered.

    ``(N, HI, WI, C*r*r)`` to ``(N, HI*r, WI*r, C)``, SIMD of the ``C`` output channels per beat.
    """

    def get_nodeattr_types(self) -> dict[str, tuple[object, ...]]:
        return {
            "HI": ("i", True, 0),  # input rows
            "WI": ("i", True, 0),  # input pixels per row
            "NumChannels": ("i", True, 0),  # output channels C
            "BlockSize": ("i", True, 0),  # r
            "Mode": ("s", False, "CRD", set(MODES)),
            "SIMD": ("i", False, 1),  # output channels per beat; divides C
            "inputDataType": ("s", True, ""),
            "batchSize": ("i", False, 1),
            **super().get_nodeattr_types(),
        }

    @property
    def block(self) -> int:
        block: int = self.get_nodeattr("BlockSize")
        return block

    def get_normal_input_shape(self, ind: int = 0) -> tuple[int, ...]:
        r = self.block
        return (self.get_nodeattr("batchSize"), self.get_nodeattr("HI"), self.get_nodeattr("WI"),
                self.get_nodeattr("NumChannels") * r * r)  # fmt: skip

    def get_normal_output_shape(self, ind: int = 0) -> tuple[int, ...]:
        r = self.block
        return (self.get_nodeattr("batchSize"), self.get_nodeattr("HI") * r,
                self.get_nodeattr("WI") * r, self.get_nodeattr("NumChannels"))  # fmt: skip

    def get_folded_input_shape(self, ind: int = 0) -> tuple[int, ...]:
        *outer, depth = self.get_normal_input_shape()
        simd = self.get_nodeattr("SIMD")
        return (*outer, depth // simd, simd)

    def get_folded_output_shape(self, ind: int = 0) -> tuple[int, ...]:
        *outer, channels = self.get_normal_output_shape()
        simd = self.get_nodeattr("SIMD")
        return (*outer, channels // simd, simd)

    def get_exp_cycles(self) -> int:
        """One output beat per cycle once the first input row is in (two row buffers)."""
        return int(np.prod(self.get_folded_output_shape()[:-1]))

    def infer_node_datatype(self, model: ModelWrapper) -> None:
        datatype = model.get_tensor_datatype(self.onnx_node.input[0])
        self.set_nodeattr("inputDataType", datatype.name)
        model.set_tensor_datatype(self.onnx_node.output[0], datatype)

    def make_shape_compatible_op(self, model: ModelWrapper) -> onnx.NodeProto:
        shape_op: onnx.NodeProto = super().make_const_shape_op(self.get_normal_output_shape())
        return shape_op

    def verify_node(self) -> list[str]:
        problems: list[str] = []
        channels, simd = self.get_nodeattr("NumChannels"), self.get_nodeattr("SIMD")
        if channels % simd:
            problems.append(f"SIMD {simd} does not divide the {channels} output channels")
        if self.block < 1:
            problems.append(f"BlockSize {self.block} is not a whole factor")
        return problems

    def get_input_datatype(self, ind: int = 0) -> DataType:
        return DataType[self.get_nodeattr("inputDataType")]

    def get_output_datatype(self, ind: int = 0) -> DataType:
        return self.get_input_datatype()

    def get_instream_width(self, ind: int = 0) -> int:
        width: int = self.get_input_datatype().bitwidth() * self.get_nodeattr("SIMD")
        return width

    def get_outstream_width(self, ind: int = 0) -> int:
        return self.get_instream_width()

    def get_number_output_values(self) -> int:
        return int(np.prod(self.get_folded_output_shape()[:-1]))

    def execute_node(self, context: dict[str, np.ndarray], graph: onnx.GraphProto) -> None:
        node = self.onnx_node
        x = np.asarray(context[node.input[0]]).reshape(self.get_normal_input_shape())
        result = depth_to_space(x, self.block, self.get_nodeattr("Mode"))
        context[node.output[0]] = result.astype(np.float32)
