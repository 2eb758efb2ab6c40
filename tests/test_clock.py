"""brainsmith.clock: a clock's period and frequency, converted and printed one way."""

import math

import pytest

from brainsmith.clock import MEETABLE_MHZ, PERIOD_NS, Clock, mhz_text


def test_a_clock_is_built_from_its_period_or_its_frequency():
    assert Clock.from_ns(10).mhz == 100.0 and Clock.from_ns(10).ns == 10.0
    assert Clock.from_mhz(200).ns == 5.0 and Clock.from_mhz(200) == Clock.from_ns(5)
    assert Clock.from_mhz(90).mhz == pytest.approx(90.0, rel=1e-12)
    assert Clock.from_ns(11.111).mhz == pytest.approx(1000 / 11.111)


def test_a_clock_prints_its_frequency_to_a_tenth_of_a_mhz():
    assert str(Clock.from_ns(11.111)) == "90.0 MHz"  # not 90.0009 MHz
    assert str(Clock.from_mhz(92.3361)) == "92.3 MHz"
    assert str(Clock.from_mhz(200)) == "200.0 MHz" == mhz_text(200)
    assert f"at {Clock.from_ns(20)}" == "at 50.0 MHz"


@pytest.mark.parametrize("ns", [0, -5.0, math.inf, math.nan, True, "5"])
def test_a_period_that_is_no_positive_number_is_refused(ns):
    with pytest.raises(ValueError, match="not a clock period"):
        Clock(ns)
    assert Clock.read_ns(ns) is None


@pytest.mark.parametrize("mhz", [0, -1.0, math.inf, math.nan, 1e-320])
def test_a_frequency_that_is_no_positive_number_is_refused(mhz):
    with pytest.raises(ValueError, match="not a clock"):
        Clock.from_mhz(mhz)


def test_a_report_s_values_are_read_as_a_clock_or_none():
    assert Clock.read_ns(5) == Clock(5.0) and Clock.read_mhz(50) == Clock(20.0)
    assert Clock.read_ns(None) is None and Clock.read_mhz("fast") is None
    assert Clock.read_ns(10**400) is None  # an int past a float's range


def test_the_range_a_build_can_target():
    assert PERIOD_NS == (0.1, 1e6) and MEETABLE_MHZ == (1.0, 1000.0)
    assert Clock.from_ns(0.1).in_range() and Clock.from_ns(1e6).in_range()
    assert not Clock.from_ns(0.09).in_range() and not Clock.from_ns(2e6).in_range()
    assert Clock.from_mhz(50).in_range((1.0, 100.0)) and not Clock.from_mhz(5).in_range(
        (1.0, 100.0)
    )
