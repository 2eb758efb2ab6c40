"""The shared value checks, and the tables that pair each key with a check and a text."""

from __future__ import annotations

import math

import pytest

from brainsmith.plugin import config, metadata
from brainsmith.plugin.blueprint import options
from brainsmith.plugin.values import (
    INVALID,
    boolean,
    list_of,
    nonempty_string,
    one_of,
    pathname,
    plugin_name,
    seconds,
    whole,
)


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
        (seconds, 5, 5.0),
        (seconds, 0, 0.0),
        (seconds, math.inf, 1e300),
        (seconds, 10**400, 1e300),
        (seconds, -1, INVALID),
        (seconds, math.nan, INVALID),
        (seconds, True, INVALID),
        (seconds, "5", INVALID),
        (boolean, False, False),
        (boolean, 0, INVALID),
        (pathname, "a/b", "a/b"),
        (pathname, "", INVALID),
        (pathname, "a\0b", INVALID),
        (plugin_name, "FoldBias", "FoldBias"),
        (plugin_name, "finn:FoldBias", INVALID),
        (plugin_name, "é", INVALID),
        (plugin_name, "A" * 101, INVALID),
        (whole(1, 3), 3, 3),
        (whole(1, 3), 4, INVALID),
        (whole(0), True, INVALID),
        (whole(0), 1.0, INVALID),
        (one_of(("hls", "rtl")), "rtl", "rtl"),
        (one_of(("hls", "rtl")), ["rtl"], INVALID),
        (list_of(nonempty_string), ["a", "b"], ("a", "b")),
        (list_of(nonempty_string), ("a",), INVALID),
        (list_of(nonempty_string, tuples=True, into=list), ("a",), ["a"]),
        (list_of(nonempty_string), ["a", ""], INVALID),
    ],
)
def test_a_check_returns_the_value_converted_or_invalid(check, value, expected):
    result = check(value)
    if expected is INVALID:
        assert result is INVALID
    else:
        assert result == expected and type(result) is type(expected)
