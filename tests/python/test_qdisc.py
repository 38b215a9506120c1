"""Qdiscs in tc syntax and as tables; BDP conversion by the PAM 2025 rule."""

import pytest
from l4slab.errors import ScenarioError
from l4slab.qdisc import REGISTRY, QdiscRequest, bytes_to_packets, describe_engine_qdisc, parse_qdisc, resolve_qdisc
from l4slab.units import bdp_bytes, parse_buffer

BDP_100M_10MS = bdp_bytes(100_000_000, 10_000_000)


def resolve(value, buffer=None, bdp=BDP_100M_10MS):
    return resolve_qdisc(parse_qdisc(value), buffer=buffer, bdp=bdp, bdp_unavailable_reason="no common RTT")


@pytest.mark.parametrize(
    "text, engine",
    [
        ("bfifo limit 250000", {"kind": "bfifo", "limit_bytes": 250_000}),
        ("pfifo limit 167", {"kind": "pfifo", "limit_packets": 167}),
        ("bfifo", {"kind": "bfifo", "limit_bytes": 1000 * 1514}),
        ("pfifo", {"kind": "pfifo", "limit_packets": 1000}),
        ("  bfifo   limit   64kb ", {"kind": "bfifo", "limit_bytes": 65_536}),
        ("bfifo limit 2bdp", {"kind": "bfifo", "limit_bytes": 250_000}),
        ("pfifo limit 2bdp", {"kind": "pfifo", "limit_packets": 167}),
    ],
)
def test_tc_strings(text, engine):
    assert resolve(text) == engine


@pytest.mark.parametrize(
    "n_bdp, limit_bytes, limit_packets",
    [("0.5", 62_500, 42), ("1", 125_000, 84), ("2", 250_000, 167), ("4", 500_000, 334), ("8", 1_000_000, 667)],
)
def test_pam_study_table(n_bdp, limit_bytes, limit_packets):
    """PAM 2025 paper §3: bfifo n×125000 B and int(n×125000/1500)+1 packets at 100 Mbit/s × 10 ms."""
    assert resolve({"kind": "bfifo", "limit": f"{n_bdp}bdp"})["limit_bytes"] == limit_bytes
    assert resolve({"kind": "pfifo", "limit": f"{n_bdp}bdp"})["limit_packets"] == limit_packets
    assert resolve("bfifo", buffer=parse_buffer(f"{n_bdp}bdp"))["limit_bytes"] == limit_bytes
    assert resolve("pfifo", buffer=parse_buffer(f"{n_bdp}bdp"))["limit_packets"] == limit_packets


def test_buffer_in_bytes_for_pfifo_uses_the_packet_rule():
    assert (
        resolve("pfifo", buffer=250_000)
        == {"kind": "pfifo", "limit_packets": bytes_to_packets(250_000)}
        == {
            "kind": "pfifo",
            "limit_packets": 167,
        }
    )


def test_structured_form():
    request = parse_qdisc({"kind": "bfifo", "limit": "2bdp"})
    assert isinstance(request, QdiscRequest) and request.kind == "bfifo"
    assert resolve({"kind": "pfifo", "limit": 84}) == {"kind": "pfifo", "limit_packets": 84}


@pytest.mark.parametrize(
    "value, message",
    [
        (
            "fifo",
            "bottleneck.qdisc: unknown qdisc 'fifo' (did you mean 'pfifo'?); "
            "supported: bfifo, pfifo, dualpi2, pie, fq, codel, fq_codel",
        ),
        ("bfifo limt 3", "bottleneck.qdisc: bfifo has no parameter 'limt' (did you mean 'limit'?); bfifo takes: limit"),
        ("bfifo limit", "bottleneck.qdisc: bfifo parameter 'limit' needs a value, e.g. 'bfifo limit 1514000'"),
        ("bfifo limit 1 limit 2", "bottleneck.qdisc: bfifo parameter 'limit' given twice in 'bfifo limit 1 limit 2'"),
        ("", "bottleneck.qdisc: empty qdisc; expected e.g. 'bfifo limit 250000'"),
        ({"limit": 3}, "bottleneck.qdisc: a qdisc table needs 'kind'"),
        ({"kind": "pfifo", "burst": 3}, "bottleneck.qdisc: pfifo has no parameter 'burst'; pfifo takes: limit"),
        ("pfifo limit 2kb", "bottleneck.qdisc.limit: '2kb' is not a packet count"),
        ("bfifo limit lots", "bottleneck.qdisc.limit: 'lots' is not a buffer size"),
        (42, "bottleneck.qdisc: 42 is not a qdisc"),
    ],
)
def test_parse_errors(value, message):
    with pytest.raises(ScenarioError) as err:
        parse_qdisc(value)
    assert str(err.value).startswith(message)
    assert "\n" not in str(err.value)


def test_range_and_bdp_errors():
    with pytest.raises(
        ScenarioError,
        match=r"^bottleneck\.qdisc\.limit: '0' gives limit 0 bytes, outside the allowed range 1\.\.4294967295",
    ):
        resolve("bfifo limit 0")
    with pytest.raises(ScenarioError, match=r"^bottleneck\.qdisc\.limit: '2bdp' needs a BDP, but no common RTT"):
        resolve("bfifo limit 2bdp", bdp=None)
    with pytest.raises(ScenarioError, match=r"^bottleneck\.buffer: given together with bottleneck\.qdisc 'limit'"):
        resolve("bfifo limit 1000", buffer=1000)


def test_registry_describes_resolved_configs():
    assert set(REGISTRY) == {"bfifo", "pfifo", "fq", "pie", "codel", "fq_codel", "dualpi2"}
    for text in ("bfifo limit 250000", "pfifo limit 167"):
        assert describe_engine_qdisc(resolve(text)) == text
