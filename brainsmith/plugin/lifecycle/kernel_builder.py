"""Custom kernels without writing a FINN class by hand.

``KernelBuilder("swish", num_inputs=1).execute(fn).build()`` registers a kernel plugin that
is also a QONNX custom op in domain ``brainsmith.custom_op``, so ``execute_onnx`` runs models
that contain it and ``InferShapes`` / ``InferDataTypes`` understand it. Functions receive
numpy arrays (or shapes, or QONNX datatype names) positionally and node attributes as keywords.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable

from brainsmith.plugin.errors import PluginError, PluginNotFoundError
from brainsmith.plugin.manager import RESET_HOOKS, get_plugin_manager
from brainsmith.plugin.spec import PluginSpec

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence
    from typing import Protocol, SupportsInt

    import numpy as np
    from numpy.typing import NDArray
    from onnx import GraphProto, ModelProto, NodeProto

    from brainsmith.plugin.registry import Registry

    Shape = Iterable[SupportsInt]  # what a shape inference returns
    Array = NDArray[np.generic]  # a kernel's input or output
    AttrType = tuple[str, bool, object]  # QONNX's (code, required, default) of an attribute

    class Named(Protocol):
        """A QONNX ``DataType``, as far as a kernel reads it."""

        @property
        def name(self) -> str: ...

    class TensorModel(Protocol):
        """QONNX's ``ModelWrapper`` (untyped), as the inferences of a kernel's op use it."""

        @property
        def model(self) -> ModelProto: ...

        def get_tensor_shape(self, name: str) -> list[int] | None: ...

        def get_tensor_datatype(self, name: str) -> Named: ...

        def set_tensor_datatype(self, name: str, datatype: object) -> None: ...

    class OpNode(Protocol):
        """QONNX's ``CustomOp`` (untyped), as the methods of a kernel's op class use it."""

        @property
        def onnx_node(self) -> NodeProto: ...

        def get_nodeattr(self, name: str) -> object: ...

        def make_const_shape_op(self, shape: tuple[int, ...]) -> NodeProto: ...


DOMAIN = "brainsmith.custom_op"
_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]*\Z")
_ATTR_CODES = {bool: "i", int: "i", float: "f", str: "s"}

custom_op: dict[str, type] = {}  # op_type -> QONNX CustomOp class (QONNX reads this dict)


class KernelInputError(PluginError, ValueError):
    """A custom kernel was given inputs it cannot take (count, shape or dtype)."""


class KernelExecutionError(PluginError, RuntimeError):
    """A custom kernel's own code raised; the message names the kernel and where."""


class CustomKernel:
    """A kernel made by KernelBuilder: numpy execution plus shape and datatype inference."""

    def __init__(self, builder: KernelBuilder) -> None:
        self.name = builder._name
        self.num_inputs = builder._num_inputs
        self.attributes = dict(builder._attributes)
        self.description = builder._description
        if builder._execute is None:  # build() refuses such a builder before this
            raise PluginError(f"kernel '{builder._name}' has no execute function")
        self._execute: Callable[..., object] = builder._execute
        self._infer_shape = builder._infer_shape
        self._infer_datatype = builder._infer_datatype
        self._validate = builder._validate
        self.framework = ""  # set when registered
        self.op_class = _make_op_class(self)

    def __call__(self, *inputs: object, **attributes: object) -> Array:
        """Validate ``inputs`` and run the kernel; returns a numpy array."""
        import numpy as np

        attrs = {**self.attributes, **attributes}
        arrays = self.check_inputs(inputs, attrs)
        expected = self.output_shape([a.shape for a in arrays], attrs)
        result = np.asarray(self._guarded("execute", self._execute, *arrays, **attrs))
        if tuple(result.shape) != tuple(expected):
            raise KernelExecutionError(
                f"kernel '{self.name}': execute returned shape {tuple(result.shape)}, "
                f"but its shape inference says {tuple(expected)}"
            )
        return result

    def check_inputs(self, inputs: Sequence[object], attrs: Mapping[str, object]) -> list[Array]:
        """Numpy arrays of ``inputs``, or KernelInputError saying what was expected."""
        import numpy as np

        if len(inputs) != self.num_inputs:
            plural = "" if self.num_inputs == 1 else "s"
            raise KernelInputError(
                f"kernel '{self.name}' expects {self.num_inputs} input{plural}, got {len(inputs)}"
            )
        arrays = [np.asarray(x) for x in inputs]
        for index, array in enumerate(arrays):
            if array.dtype.kind not in "biuf":
                raise KernelInputError(
                    f"kernel '{self.name}': input {index} has dtype {array.dtype}; "
                    "expected a numeric (bool, int or float) array"
                )
        self.output_shape([a.shape for a in arrays], attrs)
        if self._validate is not None:
            try:
                self._validate(*arrays, **attrs)
            except (ValueError, TypeError, AssertionError) as exc:
                raise KernelInputError(f"kernel '{self.name}': invalid input: {exc}") from exc
            except Exception as exc:
                raise self._failure("validate", exc) from exc
        return arrays

    def output_shape(
        self, shapes: Sequence[Shape], attrs: Mapping[str, object] | None = None
    ) -> tuple[int, ...]:
        """The output shape for input ``shapes`` (default: numpy broadcasting)."""
        import numpy as np

        attrs = {**self.attributes, **(attrs or {})}
        dims = [tuple(int(d) for d in s) for s in shapes]
        try:
            if self._infer_shape is None:
                return tuple(np.broadcast_shapes(*dims))
            return tuple(int(d) for d in self._infer_shape(*dims, **attrs))
        except (ValueError, TypeError) as exc:
            shown = ", ".join(str(s) for s in dims)
            raise KernelInputError(
                f"kernel '{self.name}': input shapes {shown} are not accepted: {exc}"
            ) from exc

    def output_datatype(
        self, datatypes: list[str], attrs: Mapping[str, object] | None = None
    ) -> str:
        """The QONNX datatype name of the output (default: FLOAT32)."""
        if self._infer_datatype is None:
            return "FLOAT32"
        attrs = {**self.attributes, **(attrs or {})}
        return str(self._guarded("infer_datatype", self._infer_datatype, *datatypes, **attrs))

    def _guarded(
        self, stage: str, fn: Callable[..., object], *args: object, **kwargs: object
    ) -> object:
        try:
            return fn(*args, **kwargs)
        except PluginError:
            raise
        except Exception as exc:
            raise self._failure(stage, exc) from exc

    def _failure(self, stage: str, exc: Exception) -> KernelExecutionError:
        from brainsmith.plugin.containment import origin
        from brainsmith.plugin.manager import report_problem

        owner = f"{self.framework or 'unregistered'}:{self.name}"
        reason = f"{stage} raised {type(exc).__name__}: {exc} ({origin(exc)})"
        report_problem(self.framework or self.name, f"kernel {owner}", reason)
        return KernelExecutionError(f"kernel '{self.name}' ({owner}) failed: {reason}")

    def __repr__(self) -> str:
        return f"<CustomKernel {self.name} inputs={self.num_inputs}>"


class KernelBuilder:
    """Fluent definition of a custom kernel; ``build()`` registers it."""

    def __init__(self, name: str, num_inputs: int = 1) -> None:
        if not isinstance(name, str) or not _NAME.match(name) or re.search(r"_v\d+\Z", name):
            raise PluginError(
                f"kernel name {name!r} must be an identifier such as 'swish' "
                "(letters, digits, '_'; no '_vN' suffix, which QONNX reads as a version)"
            )
        if not isinstance(num_inputs, int) or num_inputs < 1:
            raise PluginError(
                f"kernel '{name}': num_inputs must be an int >= 1, got {num_inputs!r}"
            )
        self._name, self._num_inputs = name, num_inputs
        self._attributes: dict[str, object] = {}
        self._description = ""
        self._execute: Callable[..., object] | None = None
        self._infer_shape: Callable[..., Shape] | None = None
        self._infer_datatype: Callable[..., object] | None = None
        self._validate: Callable[..., object] | None = None

    def execute(self, fn: Callable[..., object]) -> KernelBuilder:
        """``fn(*arrays, **attributes) -> array``: the kernel's reference behaviour."""
        self._execute = fn
        return self

    def infer_shape(self, fn: Callable[..., Shape]) -> KernelBuilder:
        """``fn(*input_shapes, **attributes) -> output shape`` (default: broadcasting)."""
        self._infer_shape = fn
        return self

    def infer_datatype(self, fn: Callable[..., object]) -> KernelBuilder:
        """``fn(*input_datatype_names, **attributes) -> name`` such as ``"FLOAT32"``."""
        self._infer_datatype = fn
        return self

    def validate(self, fn: Callable[..., object]) -> KernelBuilder:
        """``fn(*arrays, **attributes)`` raising ValueError/TypeError for bad inputs."""
        self._validate = fn
        return self

    def attribute(self, name: str, default: object) -> KernelBuilder:
        """A node attribute with a default (int, float, str, or a list of ints or floats)."""
        _attr_code(self._name, name, default)
        self._attributes[name] = default
        return self

    def description(self, text: str) -> KernelBuilder:
        self._description = text
        return self

    def create(self) -> CustomKernel:
        """The kernel, not registered (for a plugin package's custom operations)."""
        if self._execute is None:
            raise PluginError(f"kernel '{self._name}' needs .execute(fn) before build()")
        return CustomKernel(self)

    def build(self, framework: str | None = None) -> CustomKernel:
        """Create and register the kernel; ``framework`` defaults to the caller's
        (``user`` for scripts, the plugin's name inside a loaded plugin)."""
        kernel = self.create()
        if framework is None:
            caller = sys._getframe(1).f_globals.get("__name__", "")
            framework = get_plugin_manager()._framework_of(caller)
        from brainsmith.plugin.lifecycle.bundles import contribute

        spec = spec_for(kernel, framework)
        contribute(f"kernel:{spec.name}", [spec], displaced(spec))
        return kernel


# -- registration (used by build(), plugin packages and loaded plugins) --------------------
def spec_for(kernel: CustomKernel, framework: str) -> PluginSpec:
    code = getattr(kernel._execute, "__code__", None)
    metadata = {
        "description": kernel.description or f"custom kernel {kernel.name}",
        "op_type": kernel.name,
        "domain": DOMAIN,
        "line": code.co_firstlineno if code else 0,
    }
    spec = PluginSpec(
        "kernel",
        kernel.name,
        framework,
        f"{DOMAIN}:{kernel.name}",
        metadata,
        code.co_filename if code else "",
    )
    spec.obj = kernel.op_class
    return spec


def displaced(spec: PluginSpec) -> list[PluginSpec]:
    """The registered kernel ``spec`` replaces (same name and framework); raise on a clash."""
    old = _kernels().get(spec.name)
    if old is None:
        return []
    if old.obj is spec.obj or old.framework == spec.framework:
        return [old]  # the same kernel changing owner, or its owner redefining it
    raise PluginError(
        f"custom kernel '{spec.name}' is already registered by {old.qualified_name}; "
        "QONNX op types must be unique in domain "
        f"{DOMAIN}: pick another name or unregister the other one first"
    )


def install_ops(specs: list[PluginSpec]) -> None:
    from qonnx.custom_op.registry import add_domain_alias, add_op_to_domain

    add_domain_alias(DOMAIN, __name__)
    for spec in specs:
        kernel = getattr(spec.obj, "kernel", None)
        if (
            spec.type == "kernel"
            and isinstance(kernel, CustomKernel)
            and isinstance(spec.obj, type)
        ):
            kernel.framework = spec.framework
            custom_op[spec.name] = spec.obj
            add_op_to_domain(DOMAIN, spec.obj)


def remove_ops(specs: list[PluginSpec]) -> None:
    for spec in specs:
        if spec.obj is not None and custom_op.get(spec.name) is spec.obj:
            del custom_op[spec.name]
            _forget_in_qonnx(spec.name)


def _forget_in_qonnx(op_type: str) -> None:
    # QONNX 1.0 caches op classes and offers no removal; drop the cache entry so a removed
    # kernel is no longer executable.
    qonnx_registry = sys.modules.get("qonnx.custom_op.registry")
    if qonnx_registry is not None:
        with qonnx_registry._REGISTRY_LOCK:
            qonnx_registry._OP_REGISTRY.get(DOMAIN, {}).pop(op_type, None)


# -- queries -------------------------------------------------------------------------------
def list_custom_kernels() -> list[str]:
    """Names of the registered custom kernels."""
    return sorted(_kernels())


def is_custom_kernel_registered(name: str) -> bool:
    return name in _kernels()


def get_custom_kernel(name: str) -> CustomKernel:
    kernels = _kernels()
    spec = kernels.get(name)
    if spec is None:
        from brainsmith.plugin.names import suggest

        known = ", ".join(sorted(kernels)) or "none"
        raise PluginNotFoundError(
            f"no custom kernel named '{name}'{suggest(name, list(kernels))} (registered: {known})",
            "kernel",
            name,
        )
    kernel: CustomKernel = getattr(spec.obj, "kernel")  # noqa: B009 - set by _make_op_class
    return kernel


def execute_kernel(name: str, inputs: Sequence[object], **attributes: object) -> Array:
    """Run a registered custom kernel on numpy arrays."""
    return get_custom_kernel(name)(*inputs, **attributes)


# -- the QONNX side ------------------------------------------------------------------------
def _attr_code(kernel: str, name: str, default: object) -> str:
    if isinstance(default, list | tuple) and default:
        if all(isinstance(v, int) and not isinstance(v, bool) for v in default):
            return "ints"
        if all(isinstance(v, int | float) and not isinstance(v, bool) for v in default):
            return "floats"
    elif type(default) in _ATTR_CODES:
        return _ATTR_CODES[type(default)]
    raise PluginError(
        f"kernel '{kernel}': attribute '{name}' default must be an int, float, str or a "
        f"non-empty list of numbers, got {default!r}"
    )


def _make_op_class(kernel: CustomKernel) -> type:
    from qonnx.core.datatype import DataType
    from qonnx.custom_op.base import CustomOp

    attr_types = {
        name: (_attr_code(kernel.name, name, value), False, value)
        for name, value in kernel.attributes.items()
    }

    def attrs(op: OpNode) -> dict[str, object]:
        return {name: op.get_nodeattr(name) for name in kernel.attributes}

    def get_nodeattr_types(self: OpNode) -> dict[str, AttrType]:
        return dict(attr_types)

    def make_shape_compatible_op(self: OpNode, model: TensorModel) -> NodeProto:
        shapes = _input_shapes(model, list(self.onnx_node.input), kernel.name)
        return self.make_const_shape_op(kernel.output_shape(shapes, attrs(self)))

    def infer_node_datatype(self: OpNode, model: TensorModel) -> None:
        names = [model.get_tensor_datatype(name).name for name in self.onnx_node.input]
        result = kernel.output_datatype(names, attrs(self))
        model.set_tensor_datatype(self.onnx_node.output[0], DataType[result])

    def execute_node(self: OpNode, context: dict[str, Array], graph: GraphProto) -> None:
        inputs = [context[name] for name in self.onnx_node.input]
        context[self.onnx_node.output[0]] = kernel(*inputs, **attrs(self))

    def verify_node(self: OpNode) -> list[str]:
        found = len(self.onnx_node.input)
        if found != kernel.num_inputs:
            return [f"{kernel.name}: expected {kernel.num_inputs} inputs, found {found}"]
        return [f"{kernel.name}: inputs ok"]

    namespace = {
        "__doc__": kernel.description or f"Custom kernel {kernel.name} (KernelBuilder).",
        "__module__": __name__,
        "__qualname__": kernel.name,
        "kernel": kernel,
        "get_nodeattr_types": get_nodeattr_types,
        "make_shape_compatible_op": make_shape_compatible_op,
        "infer_node_datatype": infer_node_datatype,
        "execute_node": execute_node,
        "verify_node": verify_node,
    }
    return type(kernel.name, (CustomOp,), namespace)


# -- examples ------------------------------------------------------------------------------
def register_example_kernels() -> list[str]:
    """Register swish, gelu, power and layer_norm (framework ``brainsmith``)."""
    import math

    import numpy as np

    def floating(*arrays: Array, **_attrs: object) -> None:
        for index, array in enumerate(arrays):
            if array.dtype.kind != "f":
                raise TypeError(f"input {index} must be a float array, got {array.dtype}")

    def norm_params(x: Array, scale: Array, bias: Array, **_attrs: object) -> None:
        floating(x, scale, bias)
        for label, array in (("scale", scale), ("bias", bias)):
            if array.shape != x.shape[-1:]:
                raise ValueError(f"{label} must have shape {x.shape[-1:]}, got {array.shape}")

    def layer_norm(
        x: NDArray[np.floating],
        scale: NDArray[np.floating],
        bias: NDArray[np.floating],
        epsilon: float,
    ) -> NDArray[np.floating]:
        mean = x.mean(axis=-1, keepdims=True)
        var = x.var(axis=-1, keepdims=True)
        normalised: NDArray[np.floating] = (x - mean) / np.sqrt(var + epsilon) * scale + bias
        return normalised

    erf = np.vectorize(math.erf, otypes=[float])
    kernels = [
        KernelBuilder("swish")
        .execute(lambda x: x / (1.0 + np.exp(-x)))
        .validate(floating)
        .description("x * sigmoid(x)"),
        KernelBuilder("gelu")
        .execute(lambda x: (0.5 * x * (1.0 + erf(x / math.sqrt(2.0)))).astype(x.dtype))
        .validate(floating)
        .description("Gaussian error linear unit (exact, erf)"),
        KernelBuilder("power", num_inputs=2)
        .execute(np.power)
        .validate(floating)
        .description("elementwise base ** exponent, broadcasting"),
        KernelBuilder("layer_norm", num_inputs=3)
        .attribute("epsilon", 1e-5)
        .execute(layer_norm)
        .validate(norm_params)
        .infer_shape(lambda x, scale, bias, **_: x)
        .description("normalise over the last axis, then scale and shift"),
    ]
    for builder in kernels:
        builder.build(framework="brainsmith")
    return [builder._name for builder in kernels]


def _input_shapes(model: TensorModel, names: list[str], kernel: str) -> list[list[int]]:
    """Input shapes for shape inference; QONNX hides custom ops node by node, so shapes of
    tensors made by standard ops earlier in the graph come from ONNX shape inference."""
    shapes = [model.get_tensor_shape(name) for name in names]
    if any(shape is None for shape in shapes):
        from onnx.shape_inference import infer_shapes
        from qonnx.core.modelwrapper import ModelWrapper

        inferred = ModelWrapper(infer_shapes(model.model))
        shapes = [inferred.get_tensor_shape(name) for name in names]
    missing = [name for name, shape in zip(names, shapes, strict=True) if shape is None]
    if missing:
        raise KernelInputError(f"kernel '{kernel}': unknown shape of input {', '.join(missing)}")
    return [shape for shape in shapes if shape is not None]


def _kernels() -> dict[str, PluginSpec]:
    """The registered custom kernels by name: the registry's kernels whose class QONNX serves."""
    specs = get_plugin_manager().registry().specs("kernel")
    return {s.name: s for s in specs if s.obj is not None and custom_op.get(s.name) is s.obj}


def _reset(_registry: Registry) -> None:
    for op_type in list(custom_op):
        del custom_op[op_type]
        _forget_in_qonnx(op_type)


RESET_HOOKS.append(_reset)

__all__ = [
    "DOMAIN",
    "CustomKernel",
    "KernelBuilder",
    "KernelExecutionError",
    "KernelInputError",
    "execute_kernel",
    "get_custom_kernel",
    "is_custom_kernel_registered",
    "list_custom_kernels",
    "register_example_kernels",
]
