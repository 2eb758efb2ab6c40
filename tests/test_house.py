"""``benchmarks.house``: the shape of the code, each function counted once."""

from __future__ import annotations

from benchmarks.house import function_complexities

SOURCE = """
class Outer:
    def method(self, x):
        def closure():
            pass
        if x:
            return 1
        return 0

    class Inner:
        def inner_method(self):
            pass


def function():
    def nested():
        pass
"""


def test_each_function_method_and_closure_is_counted_once():
    # method (2), closure, Inner.inner_method, function, nested
    assert sorted(function_complexities(SOURCE)) == [1, 1, 1, 1, 2]
