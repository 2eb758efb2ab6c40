"""The shared value checks, and the tables that pair each key with a check and a text."""

from __future__ import annotations

import math

import pytest

from brainsmith.blueprint import options
from brainsmith.plugin import metadata, values
from brainsmith.plugin.settings import config

INVALID = values.INVALID


def test_every_key_with_an_expected_text_has_a_check_and_no_other():
    assert list(config.CONFIG_CHECKS) == list(config.CONFIG_KEYS)
    decorator_keys = {key for keys in metadata.TYPE_KEYS.values() for key in keys}
    assert set(metadata.METADATA_CHECKS) == set(metadata.COMMON_KEYS) | decorator_keys
    assert list(metadata.RECORD_CHECKS) == list(metadata.RECORD_KEYS)
    assert list(options.BUILD_CHECKS) == list(options.BUILD_KEYS)
    assert list(options.FOLDING_CHECKS) == list(options.FOLDING_KEYS)


@pytest.mark.parametrize(
    ("check", "value", "expected"),
    [
        (values.seconds, 5, 5.0),
        (values.seconds, 0, 0.0),
        (values.seconds, math.inf, 1e300),
        (values.seconds, 10**400, 1e300),
        (values.seconds, -1, INVALID),
        (values.seconds, math.nan, INVALID),
        (values.seconds, True, INVALID),
        (values.seconds, "5", INVALID),
        (values.boolean, False, False),
        (values.boolean, 0, INVALID),
        (values.pathname, "a/b", "a/b"),
        (values.pathname, "", INVALID),
        (values.pathname, "a\0b", INVALID),
        (values.plugin_name, "FoldBias", "FoldBias"),
        (values.plugin_name, "finn:FoldBias", INVALID),
        (values.plugin_name, "é", INVALID),
        (values.plugin_name, "A" * 101, INVALID),
        (values.whole(1, 3), 3, 3),
        (values.whole(1, 3), 4, INVALID),
        (values.whole(0), True, INVALID),
        (values.whole(0), 1.0, INVALID),
        (values.one_of(("hls", "rtl")), "rtl", "rtl"),
        (values.one_of(("hls", "rtl")), ["rtl"], INVALID),
        (values.list_of(values.nonempty_string), ["a", "b"], ("a", "b")),
        (values.list_of(values.nonempty_string), ("a",), INVALID),
        (values.list_of(values.nonempty_string, tuples=True, into=list), ("a",), ["a"]),
        (values.list_of(values.nonempty_string), ["a", ""], INVALID),
    ],
)
def test_a_check_returns_the_value_converted_or_invalid(check, value, expected):
    result = check(value)
    if expected is INVALID:
        assert result is INVALID
    else:
        assert result == expected and type(result) is type(expected)
