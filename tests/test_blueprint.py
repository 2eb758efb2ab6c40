"""Blueprints resolve to registry specs: names, kernels and backends, extends, build options,
the plugin collections they select, and they import no plugin module while doing so."""

from __future__ import annotations

import dataclasses
import logging

import pytest
import yaml

from brainsmith.blueprint import (
    DEFAULT_STEPS,
    Blueprint,
    BlueprintError,
    load_blueprint,
    load_blueprint_plugins,
)
from brainsmith.plugin.errors import PluginNotFoundError
from tests.conftest import run_python
from tests.test_blueprint_support import TOY_BLUEPRINT, use_toy_registry, write


@pytest.fixture(autouse=True)
def toys(isolated_hub, tmp_path_factory, monkeypatch):
    use_toy_registry(tmp_path_factory, monkeypatch)


def names(specs) -> list[str]:
    return [spec.qualified_name for spec in specs]


def test_short_and_qualified_names_resolve_to_registry_specs(tmp_path):
    blueprint = load_blueprint(write(tmp_path, "toy.yaml", TOY_BLUEPRINT))
    assert names(blueprint.transforms) == ["user:ToyExpand", "finn:Streamline"]
    assert names(blueprint.transforms_phased["pre_hw"]) == ["user:ToyTidy"]
    assert names(blueprint.transforms_phased["post_hw"]) == ["qonnx:FoldConstants"]
    assert names(blueprint.steps) == ["user:toy_first", "user:toy_second"]


def test_names_match_ignoring_case_when_unambiguous(tmp_path):
    path = write(
        tmp_path,
        "bp.yaml",
        """
        hw_compiler:
          kernels: [toymatmul, FINN:thresholding]
          transforms: [streamline]
        steps: [TOY_FIRST]
    """,
    )
    blueprint = load_blueprint(path)
    assert names(k.kernel for k in blueprint.kernels) == ["user:ToyMatMul", "finn:Thresholding"]
    assert names(blueprint.transforms) == ["finn:Streamline"]
    assert names(blueprint.steps) == ["user:toy_first"]


def test_kernel_without_backends_allows_all_of_its_backends(tmp_path):
    blueprint = load_blueprint(write(tmp_path, "bp.yaml", TOY_BLUEPRINT))
    kernel, backends = blueprint.kernels[0]
    assert kernel.qualified_name == "user:ToyMatMul"
    assert names(backends) == ["user:ToyMatMulHLS", "user:ToyMatMulRTL"]


def test_backends_restricted_by_type(tmp_path):
    path = write(
        tmp_path,
        "bp.yaml",
        """
        hw_compiler:
          kernels:
            - {kernel: ToyMatMul, backends: [rtl]}
            - {kernel: finn:MVAU, backends: [HLS]}
        steps: [toy_first]
    """,
    )
    blueprint = load_blueprint(path)
    assert [names(backends) for _, backends in blueprint.kernels] == [
        ["user:ToyMatMulRTL"],
        ["finn:MVAU_hls"],
    ]


def test_backends_named_explicitly_keep_their_listed_order(tmp_path):
    path = write(
        tmp_path,
        "bp.yaml",
        """
        hw_compiler:
          kernels:
            - {kernel: ToyMatMul, backends: [ToyMatMulRTL, user:ToyMatMulHLS, rtl]}
        steps: [toy_first]
    """,
    )
    _, backends = load_blueprint(path).kernels[0]
    assert names(backends) == ["user:ToyMatMulRTL", "user:ToyMatMulHLS"]


def test_backends_property_lists_each_allowed_backend_once(tmp_path):
    blueprint = load_blueprint(write(tmp_path, "bp.yaml", TOY_BLUEPRINT))
    assert names(blueprint.backends) == [
        "user:ToyMatMulHLS",
        "user:ToyMatMulRTL",
        "user:ToySoftmaxHLS",
    ]


def test_extends_merges_mappings_and_replaces_lists(tmp_path):
    write(
        tmp_path,
        "base.yaml",
        """
        hw_compiler:
          transforms: [ToyExpand]
          transforms_phased: {pre_hw: [ToyTidy], post_hw: [FoldConstants]}
        steps: [toy_first, toy_second]
        build: {fpga_part: xc7z020clg400-1, clock_ns: 4.0, verify: each}
    """,
    )
    child = write(
        tmp_path,
        "child.yaml",
        """
        extends: base.yaml
        hw_compiler:
          transforms: [finn:Streamline]
          transforms_phased: {post_hw: []}
        steps: [toy_second]
        build: {clock_ns: 2.5}
    """,
    )
    blueprint = load_blueprint(child)
    assert names(blueprint.transforms) == ["finn:Streamline"]
    assert names(blueprint.transforms_phased["pre_hw"]) == ["user:ToyTidy"]
    assert blueprint.transforms_phased["post_hw"] == ()
    assert names(blueprint.steps) == ["user:toy_second"]
    assert (blueprint.build.fpga_part, blueprint.build.clock_ns, blueprint.build.verify) == (
        "xc7z020clg400-1",
        2.5,
        "each",
    )


def test_null_drops_an_inherited_value(tmp_path):
    write(
        tmp_path,
        "base.yaml",
        """
        steps: [toy_first]
        build: {fpga_part: xc7z020clg400-1}
    """,
    )
    child = write(
        tmp_path,
        "child.yaml",
        """
        extends: base.yaml
        build: {fpga_part: null, board: Pynq-Z1}
    """,
    )
    build = load_blueprint(child).build
    assert (build.fpga_part, build.board) == (None, "Pynq-Z1")


def test_name_and_description_are_not_inherited(tmp_path):
    write(
        tmp_path,
        "base.yaml",
        """
        name: base
        description: the base
        steps: [toy_first]
    """,
    )
    blueprint = load_blueprint(write(tmp_path, "my-model.yaml", "extends: base.yaml\n"))
    assert (blueprint.name, blueprint.description) == ("my-model", "")


def test_chain_lists_the_file_then_the_bases_it_extends(tmp_path):
    base = write(tmp_path, "shared/base.yaml", "steps: [toy_first]\n")
    middle = write(tmp_path, "shared/middle.yaml", "extends: base.yaml\n")
    top = write(tmp_path, "top.yaml", "extends: shared/middle.yaml\n")
    blueprint = load_blueprint(top)
    assert blueprint.path == str(top)
    assert blueprint.chain == (str(top), str(middle), str(base))


def test_without_steps_the_standard_flow_is_used(tmp_path):
    blueprint = load_blueprint(write(tmp_path, "bp.yaml", "name: flow\n"))
    assert [spec.name for spec in blueprint.steps] == list(DEFAULT_STEPS)


def test_build_options_have_documented_defaults(tmp_path):
    path = write(
        tmp_path,
        "bp.yaml",
        """
        steps: [toy_first]
        build: {board: Pynq-Z1}
    """,
    )
    build = load_blueprint(path).build
    assert (build.clock_ns, build.target_fps, build.verify, build.verify_samples) == (
        None,  # the target's own: FINN's 5 ns here, a Lattice board's family's (builder)
        None,
        "final",
        16,
    )
    assert build.period_ns == 5.0
    assert (build.folding_config, build.specialize_config, build.output_dir) == (None,) * 3


def test_build_paths_are_relative_to_the_file_that_sets_them(tmp_path):
    write(tmp_path, "configs/folding.json", "{}")
    write(
        tmp_path,
        "configs/base.yaml",
        """
        steps: [toy_first]
        build: {fpga_part: xc7z020clg400-1, folding_config: folding.json}
    """,
    )
    write(tmp_path, "specialize.json", "{}")
    child = write(
        tmp_path,
        "child.yaml",
        """
        extends: configs/base.yaml
        build: {specialize_config: specialize.json, output_dir: out/child}
    """,
    )
    build = load_blueprint(child).build
    assert build.folding_config == str(tmp_path / "configs" / "folding.json")
    assert build.specialize_config == str(tmp_path / "specialize.json")
    assert build.output_dir == str(tmp_path / "out" / "child")


def test_whole_numbers_are_accepted_as_clock_period(tmp_path):
    path = write(
        tmp_path,
        "bp.yaml",
        """
        steps: [toy_first]
        build: {fpga_part: xc7z020clg400-1, clock_ns: 4, target_fps: 1000000}
    """,
    )
    build = load_blueprint(path).build
    assert (build.clock_ns, build.target_fps) == (4.0, 1_000_000)


def test_blueprint_without_build_section_still_selects_plugins(tmp_path):
    path = write(tmp_path, "bp.yaml", "hw_compiler: {transforms: [ToyExpand]}\nsteps: [toy_first]")
    blueprint = load_blueprint(path)
    assert blueprint.build is None
    assert names(blueprint.transforms) == ["user:ToyExpand"]


def test_optional_plugin_that_is_not_installed_is_skipped_and_logged(tmp_path, caplog):
    path = write(
        tmp_path,
        "bp.yaml",
        """
        hw_compiler:
          transforms:
            - ToyExpand
            - "~NotInstalledAnywhere"
            - "~ToyTidy"
        steps: [toy_first]
    """,
    )
    with caplog.at_level(logging.INFO, logger="brainsmith.blueprint"):
        blueprint = load_blueprint(path)
    assert names(blueprint.transforms) == ["user:ToyExpand", "user:ToyTidy"]
    skipped = blueprint.skipped[0]
    assert (skipped.type, skipped.name, skipped.reason) == (
        "transform",
        "NotInstalledAnywhere",
        "not installed",
    )
    assert (skipped.file, skipped.line, skipped.column) == (str(path), 4, 7)
    assert [r.name for r in caplog.records] == ["brainsmith.blueprint"]
    assert f"{path}:4:7: optional transform 'NotInstalledAnywhere' skipped" in caplog.text


def test_transforms_phased_always_has_both_phases(tmp_path):
    blueprint = load_blueprint(write(tmp_path, "bp.yaml", "steps: [toy_first]\n"))
    assert dict(blueprint.transforms_phased) == {"pre_hw": (), "post_hw": ()}


def test_to_dict_is_the_resolved_blueprint_with_qualified_names(tmp_path):
    data = load_blueprint(write(tmp_path, "toy.yaml", TOY_BLUEPRINT)).to_dict()
    assert data == {
        "name": "toy",
        "description": "Toy plugins and a few of FINN's",
        "hw_compiler": {
            "kernels": [
                {
                    "kernel": "user:ToyMatMul",
                    "backends": ["user:ToyMatMulHLS", "user:ToyMatMulRTL"],
                },
                {"kernel": "user:ToySoftmax", "backends": ["user:ToySoftmaxHLS"]},
            ],
            "transforms": ["user:ToyExpand", "finn:Streamline"],
            "transforms_phased": {"pre_hw": ["user:ToyTidy"], "post_hw": ["qonnx:FoldConstants"]},
        },
        "steps": ["user:toy_first", "user:toy_second"],
        "build": {
            "fpga_part": "xc7z020clg400-1",  # no clock_ns: the blueprint leaves it to the target
            "verify": "final",
            "verify_samples": 16,
            "verify_rtol": 1e-05,  # verify_atol left open: compared in quantizer steps
        },
    }


def test_to_dict_is_itself_a_blueprint_that_resolves_the_same(tmp_path):
    write(tmp_path, "folding.json", "{}")
    write(
        tmp_path, "base.yaml", "build: {fpga_part: xc7z020clg400-1, folding_config: folding.json}\n"
    )
    first = load_blueprint(
        write(
            tmp_path,
            "toy.yaml",
            """
        extends: base.yaml
        hw_compiler:
          kernels: [ToyMatMul, {kernel: ToySoftmax, backends: [hls]}]
          transforms: [ToyExpand, "~NotInstalledAnywhere", finn:Streamline]
          transforms_phased: {pre_hw: [ToyTidy]}
        steps: [toy_first]
    """,
        )
    )
    again = write(tmp_path, "elsewhere/shown.yaml", yaml.safe_dump(first.to_dict()))
    assert load_blueprint(again).to_dict() == first.to_dict()


def test_blueprint_is_immutable(tmp_path):
    blueprint = load_blueprint(write(tmp_path, "toy.yaml", TOY_BLUEPRINT))
    assert isinstance(blueprint, Blueprint)
    with pytest.raises(dataclasses.FrozenInstanceError):
        blueprint.name = "other"  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        blueprint.build.clock_ns = 1.0  # type: ignore[misc]
    with pytest.raises(TypeError):
        blueprint.transforms_phased["pre_hw"] = ()  # type: ignore[index]


def test_plugin_collections_hold_only_what_the_blueprint_selects(tmp_path):
    plugins = load_blueprint_plugins(write(tmp_path, "toy.yaml", TOY_BLUEPRINT))
    assert set(plugins) == {"transforms", "kernels", "backends", "steps"}
    assert plugins["transforms"].list_plugins() == [
        "FoldConstants",
        "Streamline",
        "ToyExpand",
        "ToyTidy",
    ]
    assert plugins["kernels"].list_plugins() == ["ToyMatMul", "ToySoftmax"]
    assert plugins["backends"].list_plugins() == ["ToyMatMulHLS", "ToyMatMulRTL", "ToySoftmaxHLS"]
    assert plugins["steps"].list_plugins() == ["toy_first", "toy_second"]


def test_plugin_collections_give_the_plugin_objects(tmp_path):
    plugins = load_blueprint_plugins(write(tmp_path, "toy.yaml", TOY_BLUEPRINT))
    assert plugins["transforms"].ToyExpand().apply("model") == ("model", False)
    assert plugins["transforms"]["finn:Streamline"].__name__ == "Streamline"
    assert plugins["steps"].toy_first("model", None) == "model"


def test_plugin_outside_the_blueprint_is_not_in_its_collection(tmp_path):
    plugins = load_blueprint_plugins(write(tmp_path, "toy.yaml", TOY_BLUEPRINT))
    with pytest.raises(
        PluginNotFoundError,
        match="'ToyExpnd' is not part of this blueprint; did you mean 'ToyExpand'",
    ):
        plugins["transforms"].ToyExpnd  # noqa: B018
    assert "ToySoftmaxRTL" not in plugins["backends"]


def test_loading_a_blueprint_imports_no_plugin_module(tmp_path):
    path = write(tmp_path, "toy.yaml", TOY_BLUEPRINT)
    result = run_python(f"""
        import sys
        from brainsmith.plugin import load_blueprint_plugins

        def plugin_modules():
            heavy = ("finn", "qonnx", "onnx", "torch", "toy_kernels", "toy_transforms", "toy_steps")
            own = ("brainsmith.transforms", "brainsmith.kernels", "brainsmith.backends",
                   "brainsmith.steps")
            # a plugin folder's modules are bsm_<folder>_<hash>.<module>
            names = [m.partition(".")[2] if m.startswith("bsm_") else m for m in sys.modules]
            return sorted(m for m in names if m.split(".")[0] in heavy or m.startswith(own))

        plugins = load_blueprint_plugins({str(path)!r})
        print(plugin_modules())
        plugins["steps"].toy_first
        print(plugin_modules())
        plugins["transforms"].ToyExpand
        print(plugin_modules())
    """)
    assert result.returncode == 0, result.stderr
    after_load, after_step, after_transform = result.stdout.splitlines()
    assert after_load == "[]"
    assert after_step == "['toy_steps']"
    assert "toy_transforms" in after_transform and "qonnx" in after_transform
    assert "toy_kernels" not in after_transform and "'finn'" not in after_transform


def test_twenty_plugin_blueprint_resolves_without_importing_a_plugin(tmp_path):
    path = write(
        tmp_path,
        "twenty.yaml",
        """
        hw_compiler:
          kernels:
            - MVAU
            - {kernel: Thresholding, backends: [rtl]}
            - {kernel: finn:LayerNorm, backends: [hls]}
            - ToyMatMul
            - {kernel: ToySoftmax, backends: [hls]}
          transforms: [Streamline, FoldConstants, finn:MinimizeAccumulatorWidth, InferShapes,
                       InferDataTypes, GiveUniqueNodeNames, ToyExpand]
          transforms_phased: {pre_hw: [ToyTidy, RemoveUnusedTensors], post_hw: [InferLayerNorm]}
        steps: [toy_first, toy_second, finn:step_tidy_up, finn:step_streamline]
        build: {fpga_part: xcvc1902-vsva2197-2MP-e-S}
    """,
    )
    blueprint = load_blueprint(path)  # warms the index, imports yaml
    specs = [spec for group in blueprint.specs().values() for spec in group]
    assert len(specs) >= 20
    assert not [spec.qualified_name for spec in specs if spec.loaded]
    # (how long this takes is benchmark P3's business: benchmarks/RESULTS.md)


def test_loading_an_invalid_blueprint_raises_blueprint_error_not_other_errors(tmp_path):
    with pytest.raises(BlueprintError):
        load_blueprint(write(tmp_path, "bp.yaml", "steps: [no_such_step]\n"))
