"""Unit parsing as tc writes quantities; error messages name the field and the value."""

from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st
from l4slab.errors import ScenarioError
from l4slab.units import (
    BdpMultiple,
    Percent,
    bdp_bytes,
    format_rate,
    format_time,
    parse_buffer,
    parse_packets,
    parse_rate,
    parse_rate_or_percent,
    parse_size,
    parse_time,
)


@pytest.mark.parametrize(
    "text, ns",
    [
        ("10ms", 10_000_000),
        ("1s", 1_000_000_000),
        ("250us", 250_000),
        ("5ns", 5),
        ("0.1ms", 100_000),
        ("1.5sec", 1_500_000_000),
        ("2 msec", 2_000_000),
        ("100usec", 100_000),
        ("3µs", 3_000),
        ("0s", 0),
        ("1e3ms", 1_000_000_000),
    ],
)
def test_times(text, ns):
    assert parse_time(text, "f") == ns


@pytest.mark.parametrize("bad", ["10", 10, 1.5, "10min", "ms", "", "ten ms", True, None, [1]])
def test_time_requires_unit(bad):
    with pytest.raises(ScenarioError) as err:
        parse_time(bad, "flows[1].rtt")
    message = str(err.value)
    assert message.startswith(f"flows[1].rtt: {bad!r} is not a time")
    assert "expected e.g. '10ms'" in message
    assert "\n" not in message


def test_negative_time():
    with pytest.raises(ScenarioError, match=r"^duration: '-1s' is negative"):
        parse_time("-1s", "duration")


@pytest.mark.parametrize(
    "text, bps",
    [
        ("100Mbit", 100_000_000),
        ("100mbit", 100_000_000),
        ("1gbit", 1_000_000_000),
        ("1Gbit", 1_000_000_000),
        ("500kbit", 500_000),
        ("10bit", 10),
        ("100Mbit/s", 100_000_000),
        ("1.5Mbit", 1_500_000),
        ("1mibit", 1_048_576),
        ("2tbit", 2_000_000_000_000),
    ],
)
def test_rates(text, bps):
    assert parse_rate(text, "bottleneck.rate") == bps


@pytest.mark.parametrize("bad", ["100Mbps", "100mbps", "10kbps", "1gbps", "100bps", "100MB/s", "100KiBps"])
def test_bytes_per_second_units_rejected_with_explanation(bad):
    with pytest.raises(ScenarioError) as err:
        parse_rate(bad, "bottleneck.rate")
    message = str(err.value)
    assert message.startswith(f"bottleneck.rate: {bad!r} is ambiguous")
    assert "bytes per second" in message and "bits per second" in message
    assert "\n" not in message


def test_ambiguous_rate_suggests_both_readings():
    with pytest.raises(ScenarioError) as err:
        parse_rate("100Mbps", "bottleneck.rate")
    assert "'100Mbit' if you meant bits" in str(err.value)
    assert "'800Mbit' if you meant bytes" in str(err.value)


@pytest.mark.parametrize("bad", ["100", 100, "100M", "fast", "100 mbits"])
def test_rate_bad(bad):
    with pytest.raises(
        ScenarioError, match=r"^bottleneck\.rate: .* is not a rate in bits per second; expected e\.g\. '100Mbit'"
    ):
        parse_rate(bad, "bottleneck.rate")


@pytest.mark.parametrize(
    "text, nbytes",
    [
        ("250000B", 250_000),
        ("250000", 250_000),
        (250000, 250_000),
        ("1500b", 1500),
        ("64kb", 65_536),
        ("64k", 65_536),
        ("64KB", 65_536),
        ("1mb", 1_048_576),
        ("1m", 1_048_576),
        ("1g", 2**30),
        ("8kbit", 1024),
        ("1.5k", 1536),
    ],
)
def test_sizes_follow_tc_get_size(text, nbytes):
    assert parse_size(text, "s") == nbytes


@pytest.mark.parametrize("bad", ["10 bytes", "1x", "-5", "k"])
def test_size_bad(bad):
    with pytest.raises(
        ScenarioError, match=r"^flows\[0\]\.bytes: .* expected e\.g\. '250000B'|^flows\[0\]\.bytes: .* is negative"
    ):
        parse_size(bad, "flows[0].bytes")


def test_buffers():
    assert parse_buffer("2bdp") == BdpMultiple(Fraction(2))
    assert parse_buffer("0.5BDP") == BdpMultiple(Fraction(1, 2))
    assert parse_buffer("250000B") == 250_000
    with pytest.raises(
        ScenarioError, match=r"^bottleneck\.buffer: '2 bdps' is not a buffer size; expected e\.g\. '2bdp'"
    ):
        parse_buffer("2 bdps", "bottleneck.buffer")


def test_packets():
    assert parse_packets(167) == 167
    assert parse_packets("167") == 167
    assert parse_packets("2bdp") == BdpMultiple(Fraction(2))
    with pytest.raises(ScenarioError, match=r"^q\.limit: '1.5' is not a packet count"):
        parse_packets("1.5", "q.limit")


def test_percent_and_rate():
    assert parse_rate_or_percent("140%") == Percent(Fraction(7, 5))
    assert parse_rate_or_percent("50 %") == Percent(Fraction(1, 2))
    assert parse_rate_or_percent("50Mbit") == 50_000_000
    with pytest.raises(ScenarioError, match=r"^flows\[1\]\.rate: 'lots' is not a rate; expected e\.g\. '50%'"):
        parse_rate_or_percent("lots", "flows[1].rate")
    with pytest.raises(ScenarioError, match="ambiguous"):
        parse_rate_or_percent("50Mbps", "flows[1].rate")


def test_bdp_exact():
    assert bdp_bytes(100_000_000, 10_000_000) == 125_000


@given(st.integers(min_value=0, max_value=10**15))
def test_time_format_round_trip(ns):
    assert parse_time(format_time(ns)) == ns


@given(st.integers(min_value=1, max_value=10**14))
def test_rate_format_round_trip(bps):
    assert parse_rate(format_rate(bps)) == bps


@given(st.integers(min_value=0, max_value=10**6), st.sampled_from(["ms", "us", "ns", "s"]))
def test_integer_times_scale_exactly(number, unit):
    scale = {"s": 10**9, "ms": 10**6, "us": 10**3, "ns": 1}[unit]
    assert parse_time(f"{number}{unit}") == number * scale
