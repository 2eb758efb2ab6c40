"""Invalid blueprints: every problem reported at once, each as ``file:line:column: error: ...``
with what was expected and, for names and keys, what was probably meant."""

from __future__ import annotations

import pytest

from brainsmith.blueprint import BlueprintError, load_blueprint
from brainsmith.plugin.errors import PluginError
from tests.test_blueprint_support import use_toy_registry, write


@pytest.fixture(autouse=True)
def toys(isolated_hub, tmp_path_factory, monkeypatch):
    use_toy_registry(tmp_path_factory, monkeypatch)


def problems(path) -> list[str]:
    with pytest.raises(BlueprintError) as err:
        load_blueprint(path)
    return [str(problem) for problem in err.value.problems]


def only_problem(path) -> str:
    found = problems(path)
    assert len(found) == 1, found
    return found[0]


# -- keys and types ----------------------------------------------------------------------------


def test_unknown_top_level_key_suggests_the_closest_one(tmp_path):
    path = write(tmp_path, "bp.yaml", "steps: [toy_first]\nhw_compilr:\n  kernels: [ToyMatMul]\n")
    assert only_problem(path) == (
        f"{path}:2:1: error: unknown key 'hw_compilr' at the top level; expected one of name, "
        "description, extends, hw_compiler, steps, build, design_space, search; did you mean "
        "'hw_compiler'?"
    )


def test_key_in_the_wrong_section_points_to_where_it_belongs(tmp_path):
    path = write(tmp_path, "bp.yaml", "steps: [toy_first]\nfpga_part: xc7z020clg400-1\n")
    assert only_problem(path).endswith("did you mean 'build.fpga_part'?")


def test_unknown_key_in_a_flow_mapping_is_located_at_the_key(tmp_path):
    path = write(
        tmp_path,
        "bp.yaml",
        """
        steps: [toy_first]
        build: {fpga_part: xc7z020clg400-1, clock: 5}
    """,
    )
    assert only_problem(path).startswith(f"{path}:2:37: error: unknown key 'clock' in build;")


def test_unknown_phase_is_rejected_with_a_suggestion(tmp_path):
    path = write(
        tmp_path,
        "bp.yaml",
        """
        hw_compiler:
          transforms_phased:
            pre_hw: [ToyTidy]
            post_hardware: [ToyExpand]
        steps: [toy_first]
    """,
    )
    assert only_problem(path) == (
        f"{path}:4:5: error: unknown key 'post_hardware' in hw_compiler.transforms_phased; "
        "expected one of pre_hw, post_hw; did you mean 'post_hw'?"
    )


def test_wrong_type_names_the_key_and_what_it_must_be(tmp_path):
    path = write(
        tmp_path,
        "bp.yaml",
        """
        steps: [toy_first]
        build:
          fpga_part: xc7z020clg400-1
          clock_ns: fast
    """,
    )
    assert only_problem(path) == (
        f"{path}:4:13: error: build.clock_ns is the text 'fast'; expected the target clock "
        "period in nanoseconds, from 0.1 (10 GHz) to 1,000,000"
    )


@pytest.mark.parametrize(
    ("entry", "column", "shown"),
    [
        ("clock_ns: 1.0e-300", 32, "build.clock_ns is 1e-300"),
        ("clock_ns: 1.0e+300", 32, "build.clock_ns is 1e+300"),
        (
            "target_fps: 1000000000000000000000",
            34,
            "build.target_fps is the number 1000000000000000000000",
        ),
    ],
    ids=["clock-too-short", "clock-too-long", "fps-beyond-any-design"],
)
def test_a_number_beyond_what_a_build_can_use_is_refused_at_its_place(
    tmp_path, entry, column, shown
):
    """A clock of 1e-300 ns passed and overflowed in the folding; such values are refused
    where they were written."""
    path = write(tmp_path, "bp.yaml", f"steps: [toy_first]\nbuild: {{board: U250, {entry}}}\n")
    problem = only_problem(path)
    assert problem.startswith(f"{path}:2:{column}: error: {shown}; expected"), problem


def test_number_that_yaml_reads_as_text_gets_a_hint(tmp_path):
    path = write(tmp_path, "bp.yaml", "steps: [toy_first]\nbuild: {board: U250, target_fps: 1e6}\n")
    assert (
        "build.target_fps is the text '1e6'; expected a whole number of frames per second, from 1 to 10**12 "
        "(YAML reads it as text; write the number in full" in only_problem(path)
    )


def test_verify_must_be_a_known_mode(tmp_path):
    path = write(tmp_path, "bp.yaml", "steps: [toy_first]\nbuild: {board: U250, verify: Final}\n")
    assert only_problem(path) == (
        f"{path}:2:30: error: build.verify is the text 'Final'; expected one of each, final, "
        "rtlsim, none; did you mean 'final'?"
    )


def test_verify_samples_must_be_at_least_one(tmp_path):
    path = write(tmp_path, "bp.yaml", "steps: [toy_first]\nbuild: {board: U250, verify_samples: 0}")
    assert (
        "build.verify_samples is the number 0; expected a whole number of random inputs, "
        "1 to 100000" in only_problem(path)
    )


@pytest.mark.parametrize("key", ["verify_atol", "verify_rtol", "clock_ns"])
def test_a_number_too_large_for_a_float_is_reported_not_a_crash(tmp_path, key):
    huge = "9" * 400
    path = write(tmp_path, "bp.yaml", f"steps: [toy_first]\nbuild: {{board: U250, {key}: {huge}}}")
    assert f"build.{key} is the number 999" in only_problem(path)


def test_boolean_is_not_a_number(tmp_path):
    path = write(tmp_path, "bp.yaml", "steps: [toy_first]\nbuild: {board: U250, clock_ns: true}\n")
    assert "build.clock_ns is a boolean (true)" in only_problem(path)


def test_list_of_names_must_be_a_list(tmp_path):
    path = write(tmp_path, "bp.yaml", "steps: [toy_first]\nhw_compiler: {transforms: ToyExpand}\n")
    assert only_problem(path) == (
        f"{path}:2:27: error: hw_compiler.transforms is the text 'ToyExpand'; expected a list of "
        "transform names, e.g. [ExpandNorms]"
    )


def test_name_must_be_a_short_identifier(tmp_path):
    path = write(tmp_path, "bp.yaml", "name: my blueprint\nsteps: [toy_first]\n")
    assert only_problem(path) == (
        f"{path}:1:7: error: name is the text 'my blueprint'; expected a short name: letters, "
        "digits, '.', '_' or '-', at most 100 characters"
    )


def test_missing_folding_config_file_is_named_with_its_full_path(tmp_path):
    path = write(
        tmp_path,
        "bp.yaml",
        """
        steps: [toy_first]
        build: {board: U250, folding_config: configs/folding.json}
    """,
    )
    assert only_problem(path) == (
        f"{path}:2:38: error: build.folding_config names 'configs/folding.json': no such file "
        f"({tmp_path}/configs/folding.json); expected the path of a FINN folding configuration "
        "file (relative to the blueprint)"
    )


def test_setting_both_fpga_part_and_board_is_an_error(tmp_path):
    write(tmp_path, "base.yaml", "steps: [toy_first]\nbuild: {fpga_part: xc7z020clg400-1}\n")
    path = write(tmp_path, "bp.yaml", "extends: base.yaml\nbuild:\n  board: Pynq-Z1\n")
    assert only_problem(path) == (
        f"{path}:3:3: error: build sets both fpga_part and board (fpga_part is set at "
        f"{tmp_path}/base.yaml:2); expected exactly one of them; set the inherited one to null "
        "to drop it"
    )


def test_build_section_needs_fpga_part_or_board(tmp_path):
    path = write(tmp_path, "bp.yaml", "steps: [toy_first]\nbuild:\n  clock_ns: 5.0\n")
    assert only_problem(path) == (
        f"{path}:2:1: error: build sets neither fpga_part nor board; expected exactly one of "
        "them, e.g. fpga_part: xcvc1902-vsva2197-2MP-e-S"
    )


# -- plugin names ------------------------------------------------------------------------------


def test_unknown_kernel_suggests_a_registered_one(tmp_path):
    path = write(tmp_path, "bp.yaml", "hw_compiler:\n  kernels: [ToyMatMull]\nsteps: [toy_first]\n")
    assert only_problem(path) == (
        f"{path}:2:13: error: no kernel named 'ToyMatMull'; expected a registered kernel such as "
        "'matmul' or 'finn:MVAU' (brainsmith plugins list --type kernel); did you mean 'ToyMatMul'?"
    )


def test_unknown_name_in_a_framework_suggests_from_that_framework(tmp_path):
    path = write(
        tmp_path, "bp.yaml", "hw_compiler:\n  transforms: [finn:Streamlin]\nsteps: [toy_first]\n"
    )
    message = only_problem(path)
    assert message.startswith(
        f"{path}:2:16: error: no transform named 'Streamlin' in framework "
        "'finn'; expected a registered transform"
    )
    assert message.endswith("did you mean 'Streamline'?")


def test_misspelt_framework_is_suggested(tmp_path):
    path = write(
        tmp_path, "bp.yaml", "hw_compiler:\n  transforms: [fin:Streamline]\nsteps: [toy_first]\n"
    )
    message = only_problem(path)
    assert message.startswith(f"{path}:2:16: error: no framework named 'fin' (in 'fin:Streamline')")
    assert message.endswith("did you mean 'finn'?")


@pytest.mark.parametrize("name", ["os:system", "my.module.Class", "~os.path:join", "a/b.py"])
def test_import_paths_are_rejected_even_when_optional(tmp_path, name):
    path = write(tmp_path, "bp.yaml", f"hw_compiler:\n  transforms: ['{name}']\nsteps: [toy_first]")
    assert only_problem(path).startswith(
        f"{path}:2:16: error: '{name.lstrip('~')}' is not a registered transform; a blueprint "
        "names registered plugins, never import paths; expected a registered transform"
    )


def test_name_of_another_plugin_type_says_where_it_belongs(tmp_path):
    path = write(tmp_path, "bp.yaml", "hw_compiler:\n  transforms: [toy_first]\nsteps: [toy_first]")
    assert only_problem(path).endswith("; 'toy_first' is a step: list it under steps")


def test_ambiguous_case_insensitive_match_lists_the_candidates(tmp_path):
    path = write(tmp_path, "bp.yaml", "hw_compiler:\n  kernels: [gemm]\nsteps: [toy_first]\n")
    assert only_problem(path) == (
        f"{path}:2:13: error: kernel name 'gemm' is ambiguous: ignoring case it matches "
        "user:GEMM, user:Gemm; expected the exact name of one of them"
    )


def test_default_steps_that_are_not_registered_are_reported(tmp_path, monkeypatch):
    config = write(tmp_path, "config.yaml", "plugin_system: {frameworks: [qonnx, finn]}\n")
    monkeypatch.setenv("BRAINSMITH_CONFIG", str(config))
    found = problems(write(tmp_path, "bp.yaml", "name: flow\n"))
    assert len(found) == 9
    assert found[0] == (
        f"{tmp_path}/bp.yaml:1:1: error: the default step 'cleanup' is not registered; expected "
        "brainsmith's standard steps to be installed, or an explicit 'steps:' list"
    )


# -- kernels and backends ----------------------------------------------------------------------


def test_backend_that_does_not_implement_the_kernel(tmp_path):
    path = write(
        tmp_path,
        "bp.yaml",
        """
        hw_compiler:
          kernels:
            - {kernel: ToyMatMul, backends: [ToySoftmaxHLS]}
        steps: [toy_first]
    """,
    )
    assert only_problem(path) == (
        f"{path}:3:38: error: backend user:ToySoftmaxHLS implements kernel 'ToySoftmax', not "
        "user:ToyMatMul; expected hls, rtl or one of user:ToyMatMul's backends (ToyMatMulHLS, "
        "ToyMatMulRTL)"
    )


def test_backend_type_the_kernel_does_not_have(tmp_path):
    path = write(
        tmp_path,
        "bp.yaml",
        """
        hw_compiler:
          kernels:
            - {kernel: ToySoftmax, backends: [rtl]}
        steps: [toy_first]
    """,
    )
    assert only_problem(path) == (
        f"{path}:3:39: error: kernel user:ToySoftmax has no rtl backend (it has: ToySoftmaxHLS "
        "(hls)); expected hls, rtl or one of user:ToySoftmax's backends (ToySoftmaxHLS)"
    )


def test_unknown_backend_suggests_one_of_the_kernels_backends(tmp_path):
    path = write(
        tmp_path,
        "bp.yaml",
        """
        hw_compiler:
          kernels:
            - {kernel: ToyMatMul, backends: [ToyMatMulRTX]}
        steps: [toy_first]
    """,
    )
    assert only_problem(path).endswith("did you mean 'ToyMatMulRTL' or 'ToyMatMulHLS'?")


def test_kernel_listed_twice(tmp_path):
    path = write(
        tmp_path,
        "bp.yaml",
        """
        hw_compiler:
          kernels:
            - ToyMatMul
            - {kernel: toymatmul, backends: [rtl]}
        steps: [toy_first]
    """,
    )
    assert only_problem(path) == (
        f"{path}:4:16: error: kernel user:ToyMatMul is listed twice (first on line 3); expected "
        "each kernel once; list all its backends in one entry"
    )


def test_kernel_entry_needs_a_kernel_key(tmp_path):
    path = write(
        tmp_path, "bp.yaml", "hw_compiler:\n  kernels: [{backends: [hls]}]\nsteps: [toy_first]\n"
    )
    assert only_problem(path) == (
        f"{path}:2:13: error: hw_compiler.kernels[0] has no 'kernel' key; expected "
        "{kernel: NAME, backends: [hls | rtl | BACKEND, ...]}"
    )


def test_backends_cannot_be_optional(tmp_path):
    path = write(
        tmp_path,
        "bp.yaml",
        "hw_compiler:\n  kernels: [{kernel: ToyMatMul, backends: ['~rtl']}]\nsteps: [toy_first]\n",
    )
    assert "hw_compiler.kernels[0].backends[0] is '~rtl': backends cannot be optional" in (
        only_problem(path)
    )


def test_backends_list_cannot_be_empty(tmp_path):
    path = write(
        tmp_path,
        "bp.yaml",
        "hw_compiler:\n  kernels: [{kernel: ToyMatMul, backends: []}]\nsteps: [toy_first]\n",
    )
    assert (
        "hw_compiler.kernels[0].backends is a list; expected a non-empty list of hls, rtl "
        "or backend names" in only_problem(path)
    )


# -- files and extends -------------------------------------------------------------------------


def test_missing_blueprint_file(tmp_path):
    path = tmp_path / "nothing.yaml"
    assert only_problem(path) == (
        f"{path}: error: cannot read '{path}': file not found; expected a blueprint YAML file"
    )


def test_missing_base_is_reported_at_extends_with_a_suggestion(tmp_path):
    write(tmp_path, "base.yaml", "steps: [toy_first]\n")
    path = write(tmp_path, "bp.yaml", "name: child\nextends: bse.yaml\n")
    assert only_problem(path) == (
        f"{path}:2:10: error: cannot read '{tmp_path}/bse.yaml': file not found; expected a "
        "blueprint YAML file; did you mean 'base.yaml'?"
    )


def test_extends_cycle_is_reported_with_the_loop(tmp_path):
    first = write(tmp_path, "a.yaml", "extends: b.yaml\nsteps: [toy_first]\n")
    second = write(tmp_path, "b.yaml", "extends: a.yaml\n")
    assert only_problem(first) == (
        f"{second}:1:10: error: 'extends' cycle: {first} -> {second} -> {first}; expected a "
        "chain of blueprints that ends in one without 'extends'"
    )


def test_blueprint_extending_itself_is_a_cycle(tmp_path):
    path = write(tmp_path, "a.yaml", "extends: ./a.yaml\n")
    assert "'extends' cycle" in only_problem(path)


def test_extends_must_be_a_path(tmp_path):
    path = write(tmp_path, "bp.yaml", "extends: [base.yaml]\nsteps: [toy_first]\n")
    assert only_problem(path).startswith(f"{path}:1:10: error: 'extends' is [")


def test_invalid_yaml_is_reported_at_its_position(tmp_path):
    path = write(tmp_path, "bp.yaml", "steps: [toy_first\nbuild: {board: U250}\n")
    assert only_problem(path).startswith(f"{path}:2:6: error: invalid YAML:")


def test_python_tags_are_rejected(tmp_path):
    path = write(tmp_path, "bp.yaml", "steps: !!python/object/apply:os.system [echo hi]\n")
    assert only_problem(path) == (
        f"{path}:1:8: error: tag 'tag:yaml.org,2002:python/object/apply:os.system' is not allowed "
        "(only plain YAML data)"
    )


@pytest.mark.parametrize(("text", "got"), [("", "empty"), ("- a\n- b\n", "not a mapping")])
def test_file_must_be_a_mapping(tmp_path, text, got):
    path = write(tmp_path, "bp.yaml", text)
    assert only_problem(path) == (
        f"{path}:1:1: error: the file is {got}; expected a mapping of blueprint keys (name, "
        "extends, hw_compiler, steps, build)"
    )


# -- the report as a whole ---------------------------------------------------------------------


def test_every_problem_is_reported_at_once_in_file_order(tmp_path):
    path = write(
        tmp_path,
        "bp.yaml",
        """
        name: all-problems
        hw_compiler:
          kernels: [ToyMatMull]
          transforms: [ToyExpnd]
        steps: [toy_frst]
        build: {board: U250, verify: finl}
    """,
    )
    found = problems(path)
    assert [line.split(": error: ")[0] for line in found] == [
        f"{path}:3:13",
        f"{path}:4:16",
        f"{path}:5:9",
        f"{path}:6:30",
    ]
    assert [line.rsplit("; ", 1)[-1] for line in found] == [
        "did you mean 'ToyMatMul'?",
        "did you mean 'ToyExpand'?",
        "did you mean 'toy_first'?",
        "did you mean 'final'?",
    ]


def test_problem_in_a_base_is_reported_in_the_base_file(tmp_path):
    base = write(tmp_path, "base.yaml", "hw_compiler:\n  transforms: [ToyExpnd]\n")
    path = write(tmp_path, "bp.yaml", "extends: base.yaml\nsteps: [toy_frst]\n")
    found = problems(path)
    assert [line.split(": error: ")[0] for line in found] == [f"{path}:2:9", f"{base}:2:16"]


def test_missing_base_does_not_hide_the_other_problems(tmp_path):
    path = write(tmp_path, "bp.yaml", "extends: nowhere.yaml\nsteps: [toy_frst]\nbuild: {}\n")
    found = problems(path)
    assert len(found) == 2
    assert "nowhere.yaml': file not found" in found[0] and "'toy_frst'" in found[1]


def test_problems_carry_file_line_column_and_message(tmp_path):
    path = write(tmp_path, "bp.yaml", "steps:\n  - toy_first\n  - toy_thrid\n")
    with pytest.raises(BlueprintError) as err:
        load_blueprint(path)
    (problem,) = err.value.problems
    assert (problem.file, problem.line, problem.column) == (str(path), 3, 5)
    assert problem.message.startswith("no step named 'toy_thrid'")
    assert str(err.value) == str(problem)


def test_blueprint_error_is_a_plugin_error(tmp_path):
    with pytest.raises(PluginError):
        load_blueprint(tmp_path / "missing.yaml")


def test_a_garbage_file_stops_after_fifty_problems(tmp_path):
    names = ", ".join(f"nothing_{i}" for i in range(200))
    found = problems(write(tmp_path, "bp.yaml", f"steps: [{names}]\n"))
    assert len(found) == 51
    assert found[-1].endswith("error: too many problems; stopped after 50")
