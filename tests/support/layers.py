"""A third-party hardware layer as a plugin package would ship it: a kernel for an integer
clip (a layer FINN does not have), the transform that infers it from ONNX ``Clip`` nodes
on integer data, and an RTL backend whose Python execution computes it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

DIST = "acme-clip-layers"
MODULE = "acme_clip_layers"
OP_TYPE = "AcmeClip"
LOW, HIGH = -3, 5

PLUGIN_SOURCE = '''
"""Acme's integer clip layer for brainsmith and FINN."""

import os

import numpy as np
from finn.custom_op.fpgadataflow.hwcustomop import HWCustomOp
from finn.custom_op.fpgadataflow.rtlbackend import RTLBackend
from onnx import helper
from qonnx.core.datatype import DataType
from qonnx.transformation.base import Transformation

from brainsmith.plugin.core import backend, kernel, transform

HW_DOMAIN = "finn.custom_op.fpgadataflow"


@transform(name="InferAcmeClip", stage="hardware")
class InferAcmeClip(Transformation):
    """Clip nodes on integer data with constant bounds become AcmeClip layers."""

    def apply(self, model):
        graph = model.graph
        for index, node in enumerate(graph.node):
            if node.op_type != "Clip" or node.domain or len(node.input) != 3:
                continue
            idt = model.get_tensor_datatype(node.input[0])
            low, high = (model.get_initializer(name) for name in node.input[1:])
            if not idt.is_integer() or low is None or high is None:
                continue
            low, high = float(np.asarray(low).item()), float(np.asarray(high).item())
            if low != int(low) or high != int(high):
                continue  # bounds between integers: not a clip of integers to integers
            low, high = int(low), int(high)
            shape = list(model.get_tensor_shape(node.input[0]))
            odt = DataType.get_smallest_possible(low if low < 0 else high)
            if low < 0 and not odt.allowed(high):
                odt = DataType.get_smallest_possible(-high - 1)
            layer = helper.make_node(
                "AcmeClip",
                [node.input[0]],
                [node.output[0]],
                domain=HW_DOMAIN,
                backend="fpgadataflow",
                name=f"AcmeClip_{index}",
                NumChannels=shape[-1],
                PE=1,
                low=low,
                high=high,
                inputDataType=idt.name,
                outputDataType=odt.name,
                numInputVectors=shape[:-1],
            )
            graph.node.insert(index, layer)
            graph.node.remove(node)
            model.set_tensor_datatype(node.output[0], odt)
            return model, True
        return model, False


@transform(name="MoveScalarMulPastClip", stage="streamline")
class MoveScalarMulPastClip(Transformation):
    """Mul(x, s) -> Clip(lo, hi) becomes Clip(lo / s, hi / s) -> Mul(s) for a constant s > 0
    (the same values), so the clip sees x; bounds on x's integer grid become integers.
    Node names are kept."""

    def apply(self, model):
        graph = model.graph
        for mul in list(graph.node):
            scale = model.get_initializer(mul.input[1]) if mul.op_type == "Mul" else None
            readers = model.find_consumers(mul.output[0]) or []
            if scale is None or np.size(scale) != 1 or float(np.ravel(scale)[0]) <= 0:
                continue
            if len(readers) != 1 or readers[0].op_type != "Clip" or len(readers[0].input) != 3:
                continue
            clip, s = readers[0], float(np.ravel(scale)[0])
            bounds = [model.get_initializer(name) for name in clip.input[1:]]
            if any(b is None for b in bounds) or mul.output[0] in [o.name for o in graph.output]:
                continue
            low, high = (float(np.ravel(b)[0]) / s for b in bounds)
            x, between, y = mul.input[0], mul.output[0], clip.output[0]
            dt = model.get_tensor_datatype(x)
            on_grid = all(abs(b - round(b)) < 1e-4 for b in (low, high))
            if dt.is_integer() and on_grid:
                low, high = float(round(low)), float(round(high))
            model.set_initializer(clip.input[1], np.array(low, np.float32))
            model.set_initializer(clip.input[2], np.array(high, np.float32))
            clip.input[0], clip.output[0] = x, between
            mul.input[0], mul.output[0] = between, y
            model.set_tensor_datatype(between, dt if on_grid else DataType["FLOAT32"])
            graph.node.remove(clip)
            graph.node.insert(list(graph.node).index(mul), clip)
            return model, True
        return model, False


@kernel(
    op_type="AcmeClip",
    infer_transform="InferAcmeClip",
    rewrites=["MoveScalarMulPastClip"],
    domain=HW_DOMAIN,
)
class AcmeClip(HWCustomOp):
    """Clips integers to [low, high], PE channels per cycle."""

    def get_nodeattr_types(self):
        attrs = super().get_nodeattr_types()
        attrs.update(
            {
                "NumChannels": ("i", True, 0),
                "PE": ("i", False, 1),
                "low": ("i", True, 0),
                "high": ("i", True, 0),
                "inputDataType": ("s", True, ""),
                "outputDataType": ("s", True, ""),
                "numInputVectors": ("ints", False, [1]),
            }
        )
        return attrs

    def get_normal_input_shape(self, ind=0):
        return (*self.get_nodeattr("numInputVectors"), self.get_nodeattr("NumChannels"))

    def get_normal_output_shape(self, ind=0):
        return self.get_normal_input_shape()

    def get_folded_input_shape(self, ind=0):
        pe = self.get_nodeattr("PE")
        return (*self.get_nodeattr("numInputVectors"), self.get_nodeattr("NumChannels") // pe, pe)

    def get_folded_output_shape(self, ind=0):
        return self.get_folded_input_shape()

    def get_input_datatype(self, ind=0):
        return DataType[self.get_nodeattr("inputDataType")]

    def get_output_datatype(self, ind=0):
        return DataType[self.get_nodeattr("outputDataType")]

    def get_instream_width(self, ind=0):
        return self.get_input_datatype().bitwidth() * self.get_nodeattr("PE")

    def get_outstream_width(self, ind=0):
        return self.get_output_datatype().bitwidth() * self.get_nodeattr("PE")

    def get_number_output_values(self):
        return int(np.prod(self.get_folded_output_shape()[:-1]))

    def get_exp_cycles(self):
        return self.get_number_output_values()

    def infer_node_datatype(self, model):
        model.set_tensor_datatype(self.onnx_node.output[0], self.get_output_datatype())

    def verify_node(self):
        return []

    def execute_node(self, context, graph):
        node = self.onnx_node
        low, high = self.get_nodeattr("low"), self.get_nodeattr("high")
        context[node.output[0]] = np.clip(context[node.input[0]], low, high).astype(np.float32)


@backend(kernel="AcmeClip", backend_type="rtl")
class AcmeClipRTL(AcmeClip, RTLBackend):
    """AcmeClip in RTL: one comparator pair per PE."""

    def get_nodeattr_types(self):
        return {**AcmeClip.get_nodeattr_types(self), **RTLBackend.get_nodeattr_types(self)}

    def generate_hdl(self, model, fpgapart, clk):
        folder = self.get_nodeattr("code_gen_dir_ipgen")
        top = self.get_verilog_top_module_name()
        with open(os.path.join(folder, f"{top}.v"), "w") as handle:
            handle.write(f"module {top}();\\nendmodule\\n")
        self.set_nodeattr("ipgen_path", folder)
        self.set_nodeattr("ip_path", folder)

    def get_rtl_file_list(self, abspath=False):
        top = f"{self.get_verilog_top_module_name()}.v"
        return [os.path.join(self.get_nodeattr("code_gen_dir_ipgen"), top)] if abspath else [top]

    def code_generation_ipi(self):
        return []

    def execute_node(self, context, graph):
        AcmeClip.execute_node(self, context, graph)
'''


def int_clip_model(path: Path, channels: int = 8) -> Path:
    """An ONNX ``Clip`` of INT8 data to [LOW, HIGH]: FINN has no layer for it."""
    low = numpy_helper.from_array(np.array(LOW, np.float32), "low")
    high = numpy_helper.from_array(np.array(HIGH, np.float32), "high")
    graph = helper.make_graph(
        [helper.make_node("Clip", ["x", "low", "high"], ["y"], name="Clip_0")],
        "int_clip",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, channels])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, channels])],
        [low, high],
    )
    annotation = onnx.TensorAnnotation(tensor_name="x")
    annotation.quant_parameter_tensor_names.add(key="finn_datatype", value="INT8")
    graph.quantization_annotation.append(annotation)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.save(model, path)
    return path
