"""Shared by the blueprint tests (no tests here): toy plugins in a user plugin folder (their
framework is "user"), a discovery index shared by the tests of one run, blueprint files."""

from __future__ import annotations

import textwrap
from pathlib import Path

from brainsmith.blueprint import DEFAULT_STEPS

TOY_KERNELS = """
    from brainsmith.plugin import backend, kernel


    @kernel(name="ToyMatMul", description="A toy matrix multiply")
    class ToyMatMul:
        pass


    @backend(name="ToyMatMulHLS", kernel="ToyMatMul", backend_type="hls")
    class ToyMatMulHLS:
        pass


    @backend(name="ToyMatMulRTL", kernel="ToyMatMul", backend_type="rtl")
    class ToyMatMulRTL:
        pass


    @kernel(name="ToySoftmax")
    class ToySoftmax:
        pass


    @backend(name="ToySoftmaxHLS", kernel="ToySoftmax", backend_type="hls")
    class ToySoftmaxHLS:
        pass


    @kernel(name="Gemm")
    class Gemm:
        pass


    @kernel(name="GEMM")
    class GemmUpper:
        pass
"""
TOY_TRANSFORMS = """
    from qonnx.transformation.base import Transformation

    from brainsmith.plugin import transform


    @transform(name="ToyExpand")
    class ToyExpand(Transformation):
        def apply(self, model):
            return model, False


    @transform(name="ToyTidy")
    class ToyTidy(Transformation):
        def apply(self, model):
            return model, False
"""
TOY_STEPS = """
    from brainsmith.plugin import step


    @step(name="toy_first")
    def toy_first(model, cfg):
        return model


    @step(name="toy_second")
    def toy_second(model, cfg):
        return model
"""
TOY_BLUEPRINT = """
    name: toy
    description: Toy plugins and a few of FINN's
    hw_compiler:
      kernels:
        - ToyMatMul
        - {kernel: ToySoftmax, backends: [hls]}
      transforms: [ToyExpand, finn:Streamline]
      transforms_phased:
        pre_hw: [ToyTidy]
        post_hw: [FoldConstants]
    steps: [toy_first, toy_second]
    build:
      fpga_part: xc7z020clg400-1
"""


STANDARD_STEPS = "from brainsmith.plugin import step\n" + "".join(
    f"\n\n@step(name={name!r})\ndef {name}(model, cfg):\n    return model\n"
    for name in DEFAULT_STEPS
)
TOY_MODULES = {
    "toy_kernels.py": TOY_KERNELS,
    "toy_transforms.py": TOY_TRANSFORMS,
    "toy_steps.py": TOY_STEPS,
    "toy_standard_steps.py": STANDARD_STEPS,  # the default flow's names, as user plugins
}


def use_toy_registry(tmp_path_factory, monkeypatch) -> Path:
    """Register the toy plugin folder, with a discovery cache shared by the tests of a run.

    All blueprint tests use the same folder and cache: FINN and QONNX are scanned once, not
    per test (the index is reused while the plugin folders stay the same).
    """
    base = tmp_path_factory.getbasetemp()
    folder = base / "blueprint-toy-plugins"
    if not folder.is_dir():
        folder.mkdir()
        for name, source in TOY_MODULES.items():
            (folder / name).write_text(textwrap.dedent(source))
    cache = base / "blueprint-discovery-cache"
    cache.mkdir(mode=0o700, exist_ok=True)
    monkeypatch.setenv("BRAINSMITH_CACHE_DIR", str(cache))
    monkeypatch.setenv("BRAINSMITH_PLUGIN_DIRS", str(folder))
    return folder


def write(folder: Path, name: str, text: str) -> Path:
    """Write a (dedented) blueprint or other file and return its path."""
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip("\n"))
    return path
