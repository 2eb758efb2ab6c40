"""The boards and families a user can name are read from one table each (the board table,
``blueprint.choices.BOARDS``; the part names, ``hardware.place_route.parts.FAMILY_PARTS``):
every help text and road line lists them from there, so a new board or family is told
everywhere without another file changing, and the leaf's facts agree with the families."""

from __future__ import annotations

import re

import pytest

from brainsmith.blueprint.choices import BOARD_FAMILIES, BOARDS, LINKED_BOARDS
from brainsmith.hardware.place_route.parts import FAMILY_PARTS, built_in_part
from tests.support.processes import invoke


def help_text(*command: str) -> str:
    done = invoke(*command, "--help")
    assert done.returncode == 0, done.stderr
    return " ".join(re.sub(r"-\n\s*", "-", done.stdout).split())  # click's wrapping undone


def test_the_leaf_s_family_rows_are_the_families_brainsmith_places():
    from brainsmith.hardware.place_route.families import families

    placed = {family.name: family for family in families().usable}
    assert [row.family for row in FAMILY_PARTS] == list(placed)
    for row in FAMILY_PARTS:
        assert built_in_part(row.example) is not None, row.example
        assert row.packs_alone == (placed[row.family].packing is not None), row.family
    assert set(BOARD_FAMILIES.values()) <= set(placed)


@pytest.mark.parametrize(
    "command", [("bitstream",), ("flash",), ("build",)], ids=["bitstream", "flash", "build"]
)
def test_every_board_with_a_link_is_named_in_the_help(command):
    said = help_text(*command)
    for board in LINKED_BOARDS:
        loader = BOARDS[board][4]
        if command == ("flash",) and loader:
            assert f"{board} ({loader}" in said, board
        elif command != ("flash",):
            assert board in said, board
    assert "ECP5 BOARD" not in said and "synth_ecp5" not in said


@pytest.mark.parametrize("command", ["place-route", "build"])
def test_every_family_s_part_is_named_in_the_help(command):
    said = help_text(command)
    for row in FAMILY_PARTS:
        assert row.example in said, row.example


def test_the_command_list_names_every_family_and_no_family_s_board_alone():
    said = help_text()
    for row in FAMILY_PARTS:
        assert row.family in said, row.family
    assert "ECP5 board" not in said
