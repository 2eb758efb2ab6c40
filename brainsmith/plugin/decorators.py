"""``@transform``, ``@kernel``, ``@backend``, ``@step``: the contract for plugin authors.

Each decorator validates its keywords when it is applied and registers the object with the
hub; invalid metadata raises PluginMetadataError naming the file and line of the decorator.

- ``@transform``: a subclass of ``qonnx.transformation.base.Transformation``.
  Keywords: ``name``, ``stage``, ``description``.
- ``@kernel``: a class (usually a QONNX/FINN custom op). Keywords: ``name``,
  ``description``, ``op_type``, ``domain``, ``infer_transform``.
- ``@backend``: a class implementing a kernel. Keywords: ``name``, ``kernel`` (required),
  ``backend_type`` (required: ``"hls"`` or ``"rtl"``), ``description``.
- ``@step``: a function ``step(model, cfg) -> model``, usable directly in a FINN
  ``DataflowBuildConfig(steps=[...])``. Keywords: ``name``, ``description``.

Every type also accepts ``priority``, ``requires`` (Python packages), ``tools``
(executables), ``author``, ``version``, ``min_brainsmith_version``,
``max_brainsmith_version`` and ``brainsmith_version`` (a PEP 440 specifier). Without
``name`` the plugin is named after the class or function; a ``name`` (and a backend's
``kernel``) is an ASCII identifier of at most 100 characters. Without ``description`` the
first line of its docstring is used.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable
from typing import TypeVar, overload

from brainsmith.plugin.errors import PluginMetadataError
from brainsmith.plugin.metadata import PLUGIN_ATTRIBUTE, first_doc_line, validate_metadata

# The decorated object comes back unchanged, and type checkers keep its type.
C = TypeVar("C", bound=type)
F = TypeVar("F", bound=Callable[..., object])


@overload
def transform(target: C, /) -> C: ...
@overload
def transform(target: None = None, /, **metadata: object) -> Callable[[C], C]: ...
def transform(target: C | None = None, /, **metadata: object) -> object:
    """Register a QONNX ``Transformation`` subclass as a transform plugin."""
    return _decorate("transform", target, metadata)


@overload
def kernel(target: C, /) -> C: ...
@overload
def kernel(target: None = None, /, **metadata: object) -> Callable[[C], C]: ...
def kernel(target: C | None = None, /, **metadata: object) -> object:
    """Register a hardware kernel class."""
    return _decorate("kernel", target, metadata)


@overload
def backend(target: C, /) -> C: ...
@overload
def backend(target: None = None, /, **metadata: object) -> Callable[[C], C]: ...
def backend(target: C | None = None, /, **metadata: object) -> object:
    """Register an HLS or RTL backend class of a kernel."""
    return _decorate("backend", target, metadata)


@overload
def step(target: F, /) -> F: ...
@overload
def step(target: None = None, /, **metadata: object) -> Callable[[F], F]: ...
def step(target: F | None = None, /, **metadata: object) -> object:
    """Register a build step ``fn(model, cfg) -> model``."""
    return _decorate("step", target, metadata)


def _decorate(plugin_type: str, target: object, given: dict[str, object]) -> object:
    frame = sys._getframe(2)
    where = f"{frame.f_code.co_filename}:{frame.f_lineno}"
    if target is not None and (isinstance(target, str) or given):
        raise PluginMetadataError(
            f"{where}: @{plugin_type} takes keyword arguments only, "
            f"e.g. @{plugin_type}(name={target!r})",
            where,
            plugin_type,
        )
    metadata, problems = validate_metadata(plugin_type, given)
    if problems:
        raise PluginMetadataError(
            f"{where}: invalid @{plugin_type}: " + "; ".join(problems), where, plugin_type
        )

    def apply(obj: object) -> object:
        _check_target(plugin_type, obj, where)
        full = dict(metadata)
        full.setdefault("name", getattr(obj, "__name__", ""))
        if not full.get("description"):
            full["description"] = first_doc_line(getattr(obj, "__doc__", None))
        with contextlib.suppress(AttributeError, TypeError):
            # the decorator's line, for a pip package's plugin too (plugins info: file:line)
            marker = {"type": plugin_type, **full, "line": frame.f_lineno}
            setattr(obj, PLUGIN_ATTRIBUTE, marker)
        from brainsmith.plugin.manager import register_decorated

        register_decorated(plugin_type, obj, full, where)
        return obj

    if target is not None:
        return apply(target)
    return apply


def _check_target(plugin_type: str, obj: object, where: str) -> None:
    label = getattr(obj, "__qualname__", repr(obj))
    if plugin_type == "step":
        if isinstance(obj, type) or not callable(obj):
            raise PluginMetadataError(
                f"{where}: @step must decorate a function step(model, cfg), not {label}",
                where,
                plugin_type,
            )
        if not _accepts_two_args(obj):
            raise PluginMetadataError(
                f"{where}: @step function {label} must accept (model, cfg); "
                f"define it as `def {getattr(obj, '__name__', 'step')}(model, cfg):`",
                where,
                plugin_type,
            )
        return
    if not isinstance(obj, type):
        raise PluginMetadataError(
            f"{where}: @{plugin_type} must decorate a class, not {label}", where, plugin_type
        )
    if plugin_type == "transform" and not _is_transformation(obj):
        raise PluginMetadataError(
            f"{where}: @transform class {label} must subclass "
            "qonnx.transformation.base.Transformation "
            "(from qonnx.transformation.base import Transformation)",
            where,
            plugin_type,
        )


def _is_transformation(cls: type) -> bool:
    return any(
        base.__name__ == "Transformation" and base.__module__ == "qonnx.transformation.base"
        for base in cls.__mro__
    )


def _accepts_two_args(fn: Callable[..., object]) -> bool:
    import inspect

    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):
        return True
    try:
        signature.bind(object(), object())
    except TypeError:
        return False
    return True
