"""The AQM qdiscs (fq, pie, codel, fq_codel, dualpi2) in tc syntax: the PAM 2025 strings,
every engine parameter, paired flags, not-simulated parameters and one-line errors."""

import pytest
from l4slab.errors import ScenarioError
from l4slab.qdisc import REGISTRY, PacketCount, describe_engine_qdisc, parse_qdisc, resolve_qdisc
from l4slab.units import bdp_bytes, parse_buffer

BDP_100M_10MS = bdp_bytes(100_000_000, 10_000_000)

FQ_DEFAULTS = {
    "kind": "fq",
    "limit_packets": 10_000,
    "flow_limit_packets": 100,
    "quantum_bytes": 3028,
    "initial_quantum_bytes": 15_140,
    "refill_delay_ns": 40_000_000,
    "orphan_mask": 1023,
    "buckets": 1024,
    "fastpath": False,
}
PIE_DEFAULTS = {
    "kind": "pie",
    "limit_packets": 1000,
    "target_ns": 15_000_000,
    "tupdate_ns": 15_000_000,
    "alpha": 2,
    "beta": 20,
    "ecn": False,
    "bytemode": False,
    "dq_rate_estimator": False,
}
CODEL_DEFAULTS = {
    "kind": "codel",
    "limit_packets": 1000,
    "target_ns": 5_000_000,
    "interval_ns": 100_000_000,
    "ecn": False,
}
FQ_CODEL_DEFAULTS = {
    "kind": "fq_codel",
    "limit_packets": 10_240,
    "flows": 1024,
    "quantum_bytes": 1514,
    "target_ns": 5_000_000,
    "interval_ns": 100_000_000,
    "ecn": True,
    "memory_limit_bytes": 32 << 20,
    "drop_batch_size": 64,
}
DUALPI2_DEFAULTS = {
    "kind": "dualpi2",
    "limit_packets": 10_000,
    "target_ns": 15_000_000,
    "tupdate_ns": 16_000_000,
    "step_thresh_ns": 1_000_000,
    "min_qlen_step": 0,
    "coupling_factor": 2,
    "drop_on_overload": True,
    "drop_dequeue": True,
    "ecn_mask": "l4s_ect",
    "classic_protection": 10,
    "split_gso": True,
    "variant": "mainline",
}


def resolve(value, buffer=None, bdp=BDP_100M_10MS):
    return resolve_qdisc(parse_qdisc(value), buffer=buffer, bdp=bdp, bdp_unavailable_reason="no common RTT")


#: PAM 2025 paper §3: the child qdiscs of the PAM 2025 study at 2 BDP (N = 167), verbatim.
PAM_STRINGS = [
    (
        "fq limit 167 flow_limit 167 orphan_mask 0 ce_threshold 5ms",
        {
            **FQ_DEFAULTS,
            "limit_packets": 167,
            "flow_limit_packets": 167,
            "orphan_mask": 0,
            "ce_threshold_ns": 5_000_000,
        },
    ),
    (
        "fq limit 167 flow_limit 167 ce_threshold 5ms",
        {**FQ_DEFAULTS, "limit_packets": 167, "flow_limit_packets": 167, "ce_threshold_ns": 5_000_000},
    ),
    ("pie limit 167 target 5ms noecn", {**PIE_DEFAULTS, "limit_packets": 167, "target_ns": 5_000_000}),
    (
        "codel limit 167 target 5ms interval 100ms noecn",
        {**CODEL_DEFAULTS, "limit_packets": 167},
    ),
    (
        "codel limit 167 target 5ms interval 100ms ecn",
        {**CODEL_DEFAULTS, "limit_packets": 167, "ecn": True},
    ),
    (
        "fq_codel limit 167 target 5ms interval 100ms ecn",
        {**FQ_CODEL_DEFAULTS, "limit_packets": 167},
    ),
    (
        "fq_codel limit 167 target 5ms interval 100ms ecn ce_threshold 1ms ce_threshold_selector 0x01/0x01",
        {**FQ_CODEL_DEFAULTS, "limit_packets": 167, "ce_threshold_ns": 1_000_000, "ce_threshold_selector": [1, 1]},
    ),
    ("dualpi2 target 5ms", {**DUALPI2_DEFAULTS, "target_ns": 5_000_000}),
]


@pytest.mark.parametrize("text, engine", PAM_STRINGS)
def test_pam_strings_resolve_to_the_engine_config(text, engine):
    assert resolve(text) == engine


@pytest.mark.parametrize("text, engine", PAM_STRINGS)
def test_pam_strings_describe_back_as_written(text, engine):
    described = describe_engine_qdisc(engine)
    expected = "dualpi2 limit 10000 target 5ms" if text == "dualpi2 target 5ms" else text
    assert described == expected
    assert resolve(described) == engine


@pytest.mark.parametrize(
    "kind, engine",
    [
        ("fq", FQ_DEFAULTS),
        ("pie", PIE_DEFAULTS),
        ("codel", CODEL_DEFAULTS),
        ("fq_codel", FQ_CODEL_DEFAULTS),
        ("dualpi2", DUALPI2_DEFAULTS),
    ],
)
def test_linux_defaults(kind, engine):
    """Defaults as each qdisc's Linux ``*_init`` sets them; optional engine fields (None) are omitted."""
    assert resolve(kind) == engine
    assert describe_engine_qdisc(engine).startswith(kind + " limit ")


@pytest.mark.parametrize(
    "text, changed",
    [
        (
            "fq quantum 1514b initial_quantum 3028 refill_delay 100ms buckets 256 orphan_mask 0x3ff fastpath",
            {
                "quantum_bytes": 1514,
                "initial_quantum_bytes": 3028,
                "refill_delay_ns": 100_000_000,
                "buckets": 256,
                "fastpath": True,
            },
        ),
        ("fq nofastpath flow_limit 2bdp", {"flow_limit_packets": 167}),
    ],
)
def test_fq_parameters(text, changed):
    assert resolve(text) == {**FQ_DEFAULTS, **changed}


def test_pie_parameters():
    text = "pie limit 2bdp target 20ms tupdate 30ms alpha 4 beta 40 ecn bytemode dq_rate_estimator"
    with pytest.raises(ScenarioError, match=r"^bottleneck\.qdisc\.beta: '40' gives beta 40, outside .* 0\.\.32$"):
        resolve(text)
    assert resolve(text.replace("beta 40", "beta 30")) == {
        **PIE_DEFAULTS,
        "limit_packets": 167,
        "target_ns": 20_000_000,
        "tupdate_ns": 30_000_000,
        "alpha": 4,
        "beta": 30,
        "ecn": True,
        "bytemode": True,
        "dq_rate_estimator": True,
    }
    assert resolve("pie ecn noecn".replace(" noecn", " nobytemode no_dq_rate_estimator"))["ecn"] is True


def test_codel_and_fq_codel_parameters():
    assert resolve("codel ce_threshold 2ms ecn") == {**CODEL_DEFAULTS, "ecn": True, "ce_threshold_ns": 2_000_000}
    assert resolve("fq_codel flows 64 quantum 300 noecn memory_limit 4mb drop_batch 8") == {
        **FQ_CODEL_DEFAULTS,
        "flows": 64,
        "quantum_bytes": 300,
        "ecn": False,
        "memory_limit_bytes": 4 << 20,
        "drop_batch_size": 8,
    }
    # ce_threshold_selector: hex or decimal, or a [VALUE, MASK] pair in a table.
    assert resolve("fq_codel ce_threshold 1ms ce_threshold_selector 1/3")["ce_threshold_selector"] == [1, 3]
    table = {"kind": "fq_codel", "ce_threshold": "1ms", "ce_threshold_selector": [1, 1]}
    assert resolve(table)["ce_threshold_selector"] == [1, 1]


def test_dualpi2_parameters():
    text = (
        "dualpi2 limit 2bdp memlimit 1mb target 5ms tupdate 10ms alpha 0.16 beta 3.2 step_thresh 500us "
        "min_qlen_step 2 coupling_factor 3 overflow drop_enqueue any_ect classic_protection 20 no_split_gso"
    )
    assert resolve(text) == {
        **DUALPI2_DEFAULTS,
        "limit_packets": 167,
        "memlimit_bytes": 1 << 20,
        "target_ns": 5_000_000,
        "tupdate_ns": 10_000_000,
        "alpha": 0.16,
        "beta": 3.2,
        "step_thresh_ns": 500_000,
        "min_qlen_step": 2,
        "coupling_factor": 3,
        "drop_on_overload": False,
        "drop_dequeue": False,
        "ecn_mask": "any_ect",
        "classic_protection": 20,
        "split_gso": False,
    }
    # step_thresh in packets replaces the time threshold.
    packets = resolve("dualpi2 step_thresh 5pkt")
    assert packets["step_thresh_packets"] == 5 and "step_thresh_ns" not in packets
    assert describe_engine_qdisc(packets) == "dualpi2 limit 10000 target 15ms step_thresh 5pkt"
    assert parse_qdisc("dualpi2 step_thresh 7packets").params["step_thresh"] == PacketCount(7)
    # alpha/beta stay unset (kernel defaults 41/256, 819/256) unless given.
    assert "alpha" not in resolve("dualpi2") and "beta" not in resolve("dualpi2")
    # the l4slab extension `variant`.
    l4steam = resolve("dualpi2 target 5ms variant l4steam")
    assert l4steam["variant"] == "l4steam"
    assert describe_engine_qdisc(l4steam) == "dualpi2 limit 10000 target 5ms variant l4steam"


def test_times_are_whole_microseconds_as_tc_sends_them():
    assert resolve("codel target 2500ns")["target_ns"] == 2_000
    assert resolve("pie target 0.0015ms")["target_ns"] == 1_000


def test_buffer_fills_every_aqm_limit_with_the_packet_rule():
    for kind in ("fq", "pie", "codel", "fq_codel", "dualpi2"):
        assert resolve(kind, buffer=parse_buffer("2bdp"))["limit_packets"] == 167
        assert resolve(kind, buffer=250_000)["limit_packets"] == 167


@pytest.mark.parametrize(
    "table, text",
    [
        ({"kind": "codel", "ecn": True}, "codel ecn"),
        ({"kind": "codel", "noecn": True}, "codel noecn"),
        ({"kind": "codel", "noecn": False}, "codel ecn"),
        ({"kind": "dualpi2", "any_ect": True, "overflow": True}, "dualpi2 any_ect overflow"),
        ({"kind": "dualpi2", "ecn_mask": "any_ect", "drop_dequeue": False}, "dualpi2 any_ect drop_enqueue"),
        (
            {"kind": "fq", "limit": "2bdp", "flow_limit": 167, "ce_threshold": "5ms"},
            "fq limit 167 flow_limit 167 ce_threshold 5ms",
        ),
    ],
)
def test_tables_and_tc_strings_agree(table, text):
    assert resolve(table) == resolve(text)


@pytest.mark.parametrize(
    "value, message",
    [
        ("fq maxrate 10mbit", "bottleneck.qdisc: fq parameter 'maxrate' is not simulated (pacing of local sockets"),
        ("fq limit 167 pacing", "bottleneck.qdisc: fq parameter 'pacing' is not simulated"),
        ("fq nopacing", "bottleneck.qdisc: fq parameter 'nopacing' is not simulated"),
        ("fq horizon 10s", "bottleneck.qdisc: fq parameter 'horizon' is not simulated"),
        ({"kind": "fq", "timer_slack": "10us"}, "bottleneck.qdisc: fq parameter 'timer_slack' is not simulated"),
        ("dualpi2 max_rtt 100ms", "bottleneck.qdisc: dualpi2 parameter 'max_rtt' is not simulated (tc's helper"),
        ("dualpi2 typical_rtt 10ms", "bottleneck.qdisc: dualpi2 parameter 'typical_rtt' is not simulated"),
        ("codel ecn noecn", "bottleneck.qdisc: codel in 'codel ecn noecn': 'noecn' conflicts with 'ecn'"),
        ("pie ecn ecn", "bottleneck.qdisc: pie in 'pie ecn ecn': parameter 'ecn' given twice"),
        ("dualpi2 l4s_ect any_ect", "'any_ect' conflicts with 'l4s_ect'"),
        ({"kind": "codel", "ecn": True, "noecn": True}, "bottleneck.qdisc: codel: 'noecn' conflicts with 'ecn'"),
        ({"kind": "codel", "ecn": "yes"}, "bottleneck.qdisc.ecn: 'yes' is not allowed; expected true or false"),
        ({"kind": "dualpi2", "ecn_mask": "all"}, "bottleneck.qdisc.ecn_mask: 'all' is not allowed"),
        ("fq_codel targt 5ms", "bottleneck.qdisc: fq_codel has no parameter 'targt' (did you mean 'target'?)"),
        ("fq_codel drop_batch_size 8", "(did you mean 'drop_batch'?)"),
        ("codel target 5", "bottleneck.qdisc.target: '5' is not a time with a unit"),
        ("codel interval", "bottleneck.qdisc: codel parameter 'interval' needs a value, e.g. 'codel interval 100ms'"),
        ("dualpi2 alpha", "bottleneck.qdisc: dualpi2 parameter 'alpha' needs a value, e.g. 'dualpi2 alpha 0.16'"),
        ("dualpi2 alpha fast", "bottleneck.qdisc.alpha: 'fast' is not a number"),
        ("dualpi2 step_thresh 10", "bottleneck.qdisc.step_thresh: '10' is not a time or a packet count"),
        ("dualpi2 variant 6.6", "bottleneck.qdisc.variant: '6.6' is not one of mainline, l4steam"),
        ("fq orphan_mask -1", "bottleneck.qdisc.orphan_mask: '-1' is not a non-negative integer"),
        ("fq_codel ce_threshold_selector 0x01", "bottleneck.qdisc.ce_threshold_selector: '0x01' is not VALUE/MASK"),
        ("fq_codel ce_threshold_selector 0x100/0xff", "VALUE and MASK are bytes (0..0xff)"),
    ],
)
def test_parse_errors_name_the_parameter(value, message):
    with pytest.raises(ScenarioError) as err:
        parse_qdisc(value)
    assert message in str(err.value)
    assert "\n" not in str(err.value)


@pytest.mark.parametrize(
    "value, message",
    [
        ("fq limit 0", "bottleneck.qdisc.limit: '0' gives limit 0 packets, outside the allowed range 1..4294967295"),
        ("fq quantum 2mb", "bottleneck.qdisc.quantum: '2097152' gives quantum 2097152 bytes, outside"),
        ("fq buckets 1", "bottleneck.qdisc.buckets: '1' gives buckets 1, outside the allowed range 2..262144"),
        ("codel limit 2000000", "bottleneck.qdisc.limit: '2000000' gives limit 2000000 packets"),
        ("codel target 1us", "bottleneck.qdisc.target: '1us' gives target 1us, outside the allowed range 1024ns..100s"),
        ("codel interval 200s", "bottleneck.qdisc.interval: '200s' gives interval 200s"),
        ("fq_codel quantum 100", "bottleneck.qdisc.quantum: '100' gives quantum 100 bytes, outside the allowed range"),
        ("fq_codel flows 0", "bottleneck.qdisc.flows: '0' gives flows 0"),
        ("pie tupdate 0ms", "bottleneck.qdisc.tupdate: '0s' gives tupdate 0s"),
        ("dualpi2 coupling_factor 0", "bottleneck.qdisc.coupling_factor: '0' gives coupling_factor 0"),
        ("dualpi2 classic_protection 101", "bottleneck.qdisc.classic_protection: '101' gives classic_protection 101"),
        ("dualpi2 target 0us", "bottleneck.qdisc.target: '0s' gives target 0s, outside the allowed range 1us.."),
        ("dualpi2 step_thresh 0pkt", "bottleneck.qdisc.step_thresh: 0 is out of range (allowed 1..="),
        ("dualpi2 alpha 0.001", "bottleneck.qdisc.alpha: 0.001 is out of range (allowed 1/256..<8388608 Hz, sent as"),
        ("dualpi2 beta 1e7", "bottleneck.qdisc.beta: 10000000.0 is out of range (allowed 0..=8388607.99609375)"),
        ("dualpi2 variant l4steam memlimit 1mb", "bottleneck.qdisc.memlimit: 1048576 is not supported by variant l4steam"),
        ("dualpi2 variant l4steam min_qlen_step 1", "bottleneck.qdisc.min_qlen_step: 1 is not supported by variant l4steam"),
        ("dualpi2 variant l4steam cla_ect", "bottleneck.qdisc.ecn_mask: cla_ect is not supported by variant l4steam"),
        ("pie limit 2bdp", "bottleneck.qdisc.limit: '2bdp' needs a BDP, but no common RTT"),
    ],
)
def test_resolve_errors_name_the_parameter(value, message):
    with pytest.raises(ScenarioError) as err:
        resolve(value, bdp=None if "bdp" in str(value) else BDP_100M_10MS)
    assert str(err.value).startswith(message), str(err.value)
    assert "\n" not in str(err.value)


def test_l4steam_accepts_alpha_zero_and_mainline_does_not():
    assert resolve("dualpi2 alpha 0 variant l4steam")["alpha"] == 0.0
    with pytest.raises(ScenarioError, match=r"alpha: 0 is out of range \(allowed 1/256"):
        resolve("dualpi2 alpha 0")


def test_every_parameter_round_trips_through_its_description():
    """describe(config) parses back to the same config, for non-default values of every kind."""
    texts = [
        "fq limit 50 flow_limit 20 quantum 1514 initial_quantum 0 refill_delay 1ms orphan_mask 0 buckets 64 "
        "ce_threshold 0s fastpath",
        "pie limit 50 target 1ms tupdate 2ms alpha 0 beta 32 ecn bytemode dq_rate_estimator",
        "codel limit 50 target 1ms interval 10ms ecn ce_threshold 500us uptime 1000s",
        "fq_codel limit 50 flows 1 quantum 256 target 1ms interval 10ms noecn ce_threshold 1ms "
        "ce_threshold_selector 0x02/0x03 memory_limit 1048576 drop_batch 1",
        "dualpi2 limit 50 memlimit 100000 target 1ms tupdate 2ms alpha 0.5 beta 5 step_thresh 3pkt min_qlen_step 1 "
        "coupling_factor 1 overflow drop_enqueue cla_ect classic_protection 0 no_split_gso",
    ]
    for text in texts:
        engine = resolve(text)
        assert describe_engine_qdisc(engine) == text
        assert resolve(describe_engine_qdisc(engine)) == engine
        assert str(parse_qdisc(text)) == text


def test_param_names_cover_every_keyword():
    # `uptime` is the engine's word for the router clock CoDel reads (include/net/codel.h:codel_get_time).
    assert REGISTRY["codel"].param_names == ["limit", "target", "interval", "ecn/noecn", "ce_threshold", "uptime"]
    assert "drop_on_overload/overflow" in REGISTRY["dualpi2"].param_names
    assert "l4s_ect/cla_ect/any_ect" in REGISTRY["dualpi2"].param_names
