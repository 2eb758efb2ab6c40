"""Decorators validate metadata when applied and register with the hub."""

from __future__ import annotations

import pytest
from qonnx.transformation.base import Transformation

from brainsmith.plugin.core import backend, get_registry, kernel, step, transform
from brainsmith.plugin.errors import PluginMetadataError
from brainsmith.plugins import steps, transforms


def test_decorator_without_parentheses_registers_under_class_name():
    @transform
    class NoParens(Transformation):
        """Leaves the model alone."""

        def apply(self, model):
            return model, False

    spec = get_registry().find("transform", "NoParens")
    assert spec.obj is NoParens
    assert spec.description == "Leaves the model alone."
    assert spec.framework == "user"


def test_decorator_with_keywords_keeps_every_keyword():
    @transform(
        name="Tidy",
        stage="cleanup",
        description="tidy up",
        priority="HIGH",
        requires=["numpy"],
        tools=[],
        author="a",
        version="1.2.0",
    )
    class TidyImpl(Transformation):
        def apply(self, model):
            return model, False

    spec = get_registry().find("transform", "Tidy")
    assert spec.obj is TidyImpl
    assert spec.metadata["stage"] == "cleanup"
    assert spec.metadata["description"] == "tidy up"
    assert spec.metadata["priority"] == 75
    assert spec.metadata["requires"] == ["numpy"]
    assert spec.metadata["author"] == "a" and spec.metadata["version"] == "1.2.0"
    assert transforms.Tidy is TidyImpl


def test_unknown_keyword_names_file_line_and_suggests():
    with pytest.raises(PluginMetadataError) as err:

        @transform(name="X", stag="cleanup")
        class X(Transformation):
            def apply(self, model):
                return model, False

    message = str(err.value)
    assert "test_decorators.py:" in message
    assert "unknown keyword 'stag'" in message and "did you mean 'stage'" in message


def test_wrong_type_of_value_is_rejected():
    with pytest.raises(PluginMetadataError, match="'description' must be a string, got 3"):
        transform(description=3)


def test_transform_must_subclass_qonnx_transformation():
    with pytest.raises(PluginMetadataError, match=r"must subclass qonnx\.transformation\.base"):

        @transform
        class NotATransformation:
            pass


def test_backend_requires_kernel_and_backend_type():
    with pytest.raises(PluginMetadataError) as err:
        backend(name="B")
    assert "'kernel' is required" in str(err.value)
    assert "'backend_type' is required" in str(err.value)


def test_backend_type_must_be_hls_or_rtl():
    with pytest.raises(PluginMetadataError, match="'backend_type' must be 'hls' or 'rtl'"):
        backend(kernel="k", backend_type="vhdl")


@pytest.mark.parametrize("stage", ["Clean Up", "CLEANUP", "", "topology-opt", 3])
def test_stage_must_be_a_lowercase_word(stage):
    with pytest.raises(PluginMetadataError, match="'stage' must be a lowercase word"):
        transform(name="Staged", stage=stage)


@pytest.mark.parametrize(
    "folding", [{}, {"PE": 4}, {"PE": "Num Channels"}, ["PE"], {f"P{i}": "N" for i in range(5)}]
)
def test_folding_must_name_attributes_and_what_they_divide(folding):
    with pytest.raises(PluginMetadataError, match="'folding' must be a mapping of each folding"):
        kernel(name="Folded", folding=folding)


def test_a_declared_folding_is_kept_in_the_metadata():
    @kernel(name="Folded", folding={"PE": "NumChannels", "SIMD": "Width"})
    class Folded:
        pass

    assert Folded.__brainsmith_plugin__["folding"] == {"PE": "NumChannels", "SIMD": "Width"}


def test_kernel_must_decorate_a_class():
    with pytest.raises(PluginMetadataError, match="@kernel must decorate a class"):
        kernel(lambda: None)


def test_step_must_accept_model_and_cfg():
    with pytest.raises(PluginMetadataError, match=r"must accept \(model, cfg\)"):

        @step
        def lonely(model):
            return model


def test_positional_name_is_refused_with_the_fix():
    with pytest.raises(PluginMetadataError, match=r"@step\(name='fast'\)"):
        step("fast")


def test_step_is_returned_unchanged_and_usable_in_finn_build_config(tmp_path):
    @step(name="tag_model", description="marks the model")
    def tag_model(model, cfg):
        model.set_metadata_prop("tagged", "yes")
        return model

    assert steps.tag_model is tag_model
    from brainsmith.frameworks.finn.env import prepare_finn

    prepare_finn()
    from finn.builder.build_dataflow import resolve_build_steps
    from finn.builder.build_dataflow_config import DataflowBuildConfig

    cfg = DataflowBuildConfig(
        output_dir=str(tmp_path),
        synth_clk_period_ns=5.0,
        generate_outputs=[],
        steps=[steps.tag_model],
    )
    resolved = list(resolve_build_steps(cfg))
    assert resolved == [tag_model]
