"""The seed papers' statements, checked on reduced grids of the built-in studies
dualq-multiflow, dualq-mixed-rtt, dualq-overload, s2-many-flows, s2-fairness and
ecn-threshold: each test runs a few points of the study file as shipped (a ``filter`` and
shorter runs; nothing else changed) through ``l4slab.study.run``, asserts a statement of the
paper with a band an expert would accept, and renders the study's report sections."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(
    __import__("importlib").util.find_spec("l4slab._core") is None, reason="the engine is not built"
)


def _toml(value) -> str:
    """A TOML inline value (table, array, string, number)."""
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{json.dumps(k)} = {_toml(v)}" for k, v in value.items()) + " }"
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    return json.dumps(value)


def reduced_study(name: str, tmp_path: Path, rules: list[dict] | None, overrides: dict, trials: int = 1, panels=None):
    """Run the built-in study ``name`` with only the points matching ``rules`` (its ``filter``),
    ``trials`` trials and the base ``overrides``; return (its catalog, its report module)."""
    from l4slab import study
    from l4slab.study import registry

    text = registry.study_file(name).read_text(encoding="utf-8")
    text = re.sub(r"(?m)^trials = \d+", f"trials = {trials}", text)
    if rules:
        text = text.replace("[study]\n", "[study]\nfilter = [" + ", ".join(map(_toml, rules)) + "]\n", 1)
    file = tmp_path / f"{name}.toml"
    file.write_text(text, encoding="utf-8")
    report = study.run(file, out=tmp_path / "dir", jobs=1, overrides=overrides, panels=panels)
    assert report.failed == 0, report.errors
    module = registry._load_report_module(str(registry.study_dir(name) / "report.py"), name)
    return study.load(tmp_path / "dir"), module


def render(module, data, tmp_path: Path) -> list[str]:
    """The study's report sections; every figure they name exists."""
    out = tmp_path / "report"
    out.mkdir()
    lines = [line for section in module.SECTIONS for line in section(data, out)]
    images = re.findall(r"\]\(([^)]+\.png)\)", "\n".join(lines))
    assert images, "the sections draw no figure"
    for image in images:
        assert (out / image).is_file(), image
    return lines


def test_dualq_multiflow_figure7_balance(tmp_path):
    """The DualQ paper's §IV-D / Figure 7 (40 Mbit/s, 10 ms), on the testbed's Prague v0.6 with fq on
    the hosts and its 5.10 receivers: FQ-CoDel's round robin gives every flow its fair rate; PIE
    balances the types almost perfectly; over DualPI2 "no flow gets much below the 'fair'
    rate": every flow of the equal mixes keeps at least three quarters of it, so the
    Prague:CUBIC ratio per flow of an n-n mix lies within 0.6-5/3 (CUBIC's share of the fair
    rate is 2/(1+r) >= 0.75, Prague's 2r/(1+r) >= 0.75). Measured here: 0.80-1.47 (1-1 1.47;
    the 5-5 mix's 0.80 is below the basic grid's 0.85: v0.6's two-segment TSO floor,
    test_dualq_multiflow_v06_tso_floor).

    A 1-1 ratio above 4/3 is what Linux gives: on the one variant of this cell the kernel
    backend runs (mainline DualPI2, Prague v0.7, 1-1, 30 s after 10 s;
    examples/kernel/dualq-coexistence/prague-cubic-40mbit.toml) Linux 7.2 gave 1.27-1.68 over
    15 boots (mean 1.42, SD 0.13; 9 of 15 above 4/3, one at 1.68 with CUBIC at 0.746 of its
    fair rate) and 1.33-1.47 over 5 boots of 250 s; the engine on that cell 1.17-1.58 over
    seeds 1-10 (mean 1.39), 1.15-1.57 (1.36) with the window fixed. On this cell, seeds 1-10:
    1.21-1.76 (mean 1.44) with the 5.10 receivers, 1.17-1.63 (1.41) with the window fixed.
    The engine's run is deterministic, so the seed's 1.47 is judged against the paper's
    statement, not against one draw of that spread."""
    rules = [{"flows.1.cc": "cubic", "flows.0.count": n, "flows.1.count": n} for n in (1, 2, 5, 10)]
    data, module = reduced_study("dualq-multiflow", tmp_path, rules, {"duration": "30s", "warmup": "10s"})
    flows = module.mix_flows(data)
    assert set(flows["mix"]) == {"1-1", "2-2", "5-5", "10-10"}
    fq = flows[flows["aqm"] == "FQ-CoDel"]
    assert fq["normalised"].between(0.95, 1.05).all(), fq["normalised"].describe()
    from l4slab.analysis.seed_studies import rate_ratio, type_rates

    pie = type_rates(flows[flows["aqm"] == "PIE"], ["mix"])
    assert pie["mean"].between(0.85, 1.15).all(), pie
    dualpi2 = flows[flows["aqm"] == "DualPI2"]
    assert (dualpi2["normalised"] >= 0.75).all(), dualpi2.groupby("mix")["normalised"].min()
    ratio = rate_ratio(dualpi2, ["mix"])
    assert len(ratio) == 4 and ratio["ratio"].between(0.6, 5.0 / 3.0).all(), ratio
    render(module, data, tmp_path)


def test_dualq_multiflow_v06_tso_floor():
    """Why the 5-5 mix on v0.6 gives Prague less than v0.7 does: v0.6's prague_tso_segs
    returns at least tcp_min_tso_segs (2) segments, and fq paces the skb, so each Prague
    send puts two back-to-back frames into the L queue (more sojourn, more CE marks for the
    same rate). With one segment per skb (TSO off) the ratio is v0.7's, near 1."""
    from l4slab.runner import run
    from l4slab.scenario import scenario_from_toml

    def ratio(tso: bool) -> float:
        text = f"""
duration = "30s"
warmup = "10s"
[bottleneck]
rate = "40Mbit"
qdisc = "dualpi2 limit 40000 step_thresh 1ms drop_on_overload variant l4steam"
[[flows]]
cc = "prague-v06"
count = 5
rtt = "10ms"
fq_pacing = true
tso = {str(tso).lower()}
[[flows]]
cc = "cubic"
count = 5
rtt = "10ms"
fq_pacing = true
"""
        f = run(scenario_from_toml(text, overrides={"seed": 2019})).flows
        return float(f[f["group"] == 0]["goodput_mbps"].mean() / f[f["group"] == 1]["goodput_mbps"].mean())

    with_floor, without = ratio(True), ratio(False)
    assert with_floor < 0.9 < without, (with_floor, without)


def test_dualq_mixed_rtt_worst_ratios_and_l_delay(tmp_path):
    """The DualQ paper's §IV-E: the worst rate ratio, A5 Prague vs B100 Reno over DualPI2, is 6.3
    (and 5.5 for A5 ECN-CUBIC vs B100 Reno over PIE): within a factor 1.5 of each; Prague's
    mean L delay below 0.5 ms; equal RTTs give a ratio near 1."""
    rules = [{"flows.0.rtt": "5ms", "flows.1.rtt": ["5ms", "100ms"], "flows.1.cc": "reno"}]
    data, module = reduced_study(
        "dualq-mixed-rtt", tmp_path, rules, {"duration": "45s", "warmup": "15s"}, panels=["dualpi2", "pie"]
    )
    cases = module.case_frame(data).set_index(["aqm", "case"])
    assert 6.3 / 1.5 <= cases.loc[("DualPI2", "5-100"), "rate_ratio"] <= 6.3 * 1.5
    assert 5.5 / 1.5 <= cases.loc[("PIE", "5-100"), "rate_ratio"] <= 5.5 * 1.5
    for aqm in ("DualPI2", "PIE"):
        assert 0.7 <= cases.loc[(aqm, "5-5"), "rate_ratio"] <= 1.5
    assert (cases.loc["DualPI2", "a_mean_ms"] < 0.5).all()
    lines = render(module, data, tmp_path)
    assert any("6.3" in line for line in lines)


def test_dualq_overload_udp_class(tmp_path):
    """The DualQ paper's §IV-G / Figure 12 (100 Mbit/s, 10 ms): at 140 % in the L queue the L delay
    rises to about the Classic target (15 ms) and the UDP's share hardly differs from
    Not-ECT's; at 50 % the class does not matter to the responsive flows and the L queue
    keeps sub-millisecond delay."""
    rules = [{"flows.2.rate": ["50%", "140%"]}]
    data, module = reduced_study("dualq-overload", tmp_path, rules, {"duration": "15s", "warmup": "5s"})
    share = module.shares(data).set_index(["flows_2_ecn", "flows_2_rate", "label"])["share"]
    delay = module.delays(data).set_index(["flows_2_ecn", "flows_2_rate", "class"])["mean_ms"]
    assert 10.0 <= delay[("ect1", "140%", "L")] <= 20.0
    assert abs(share[("ect1", "140%", "udp")] - share[("not-ect", "140%", "udp")]) < 0.03
    responsive = {ecn: share[(ecn, "50%", "prague")] + share[(ecn, "50%", "cubic")] for ecn in ("ect1", "not-ect")}
    assert abs(responsive["ect1"] - responsive["not-ect"]) < 0.05
    assert delay[("ect1", "50%", "L")] < 1.0 and delay[("not-ect", "50%", "L")] < 1.0
    render(module, data, tmp_path)


def test_s2_many_flows_packet_sizes(tmp_path):
    """S2 §5.2: more flows (smaller fair shares) give smaller packets; the pacing-rate-only
    (logarithmic) scheme's packet size depends less on the RTT than the default's;
    retransmissions are negligible."""
    schemes = [{"segment_sizing": {"scheme": "default"}}, {"segment_sizing": {"scheme": "logarithmic", "k": 4.0}}]
    rules = [{"flows.0.count": [10, 20], "flows.0.rtt": ["10ms", "40ms"], "flows.0.cc_params": schemes}]
    data, module = reduced_study("s2-many-flows", tmp_path, rules, {"duration": "30s", "warmup": "10s"})
    sizes = module.packet_sizes(data.flows).set_index(["flows_0_count", "flows_0_rtt", "scheme"])["payload"]
    assert sizes[(20, "10ms", "default")] < sizes[(10, "10ms", "default")] - 100
    default_spread = abs(sizes[(20, "10ms", "default")] - sizes[(20, "40ms", "default")])
    log_spread = abs(sizes[(20, "10ms", "logarithmic")] - sizes[(20, "40ms", "logarithmic")])
    assert log_spread < default_spread
    assert module.packet_sizes(data.flows)["retx_per_1000"].max() < 5.0
    render(module, data, tmp_path)


def test_s2_fairness_jain(tmp_path):
    """S2 §5.4: 5 Prague vs 5 CUBIC share fairly (JFI > 0.95) whichever starts first (JFI
    within 0.05); against 10 BBRv3 flows fairness degrades below that against 10 CUBIC, and
    Prague's segments shrink more."""
    default = {"segment_sizing": {"scheme": "default"}}
    rules = [
        {"flows.1.cc": "cubic", "flows.0.count": 5, "flows.0.cc_params": default},
        {"flows.0.count": 10, "flows.0.start": "0s", "flows.0.cc_params": default},
    ]
    data, module = reduced_study("s2-fairness", tmp_path, rules, {})
    jfi = module.jain_per_run(data.flows).set_index(["flows_1_cc", "flows_0_count", "order"])["jfi"]
    five = [jfi[("cubic", 5, order)] for order in ("Prague first", "other first")]
    assert min(five) > 0.95 and abs(five[0] - five[1]) < 0.05
    assert jfi[("bbr3", 10, "Prague first")] < min(0.8, jfi[("cubic", 10, "Prague first")])
    sizes = module.prague_sizes(data.flows).set_index("case")["payload"]
    assert sizes["vs bbr3, N = 10"] < sizes["vs cubic, N = 10"]
    render(module, data, tmp_path)


def test_ecn_threshold_classic_vs_scalable(tmp_path):
    """The DualQ paper's Figure 2 / the PAM authors' FIFO+ECN illustration (100 Mbit/s, 25 ms, 2 BDP):
    ECN-CUBIC keeps a 20 ms threshold at full utilisation but under-uses the link at 1 ms;
    Prague at 1 ms keeps the link full with a P99 delay near the threshold; CUBIC without ECN
    fills the buffer (tens of ms)."""
    data, module = reduced_study("ecn-threshold", tmp_path, None, {"duration": "30s", "warmup": "10s"})
    cases = module.cases(data).set_index("case")
    assert cases.loc["ECN-CUBIC, CE at 1ms", "utilisation"] < 0.9
    assert cases.loc["ECN-CUBIC, CE at 20ms", "utilisation"] > 0.97
    assert cases.loc["Prague, CE at 1ms", "utilisation"] > 0.97
    assert cases.loc["Prague, CE at 1ms", "sojourn_p99_ms"] < 2.0
    assert cases.loc["CUBIC, no ECN", "sojourn_mean_ms"] > 20.0
    render(module, data, tmp_path)


def test_coexistence_staggered_phases_match_the_paper(tmp_path):
    """The coexistence paper's §4 (10 Mbit/s, 30 ms, DualPI2 defaults, ECN-CUBIC) on the testbed's kernels
    (the study file: the L4STeam 6.6 tree's DualPI2 step rule, Prague's app-limited growth
    gate, the L4STeam AccECN receivers): the baseline gives Prague about 2.5 and CUBIC about
    7.5 Mbit/s with retransmissions near zero; each staggered start re-divides the capacity
    (2 Prague: about 4.7 each; a CUBIC joining takes about 6 and leaves the Prague flows about
    2; two CUBIC about 3.2 each, Prague about 1.5). Bands: ±1 Mbit/s on each stated number
    (10 trials give 2.46/7.49, 4.70/4.74, 6.30 and 1.85, 3.39/3.23 and 1.68)."""
    rules = [{"bottleneck.qdisc": "dualpi2 memlimit 15140000"}]  # the baseline and 2 Prague then 2 CUBIC (the zip)
    data, module = reduced_study("coexistence", tmp_path, rules, {}, trials=3)
    table = module.phase_table(module.per_second(data)).set_index(["case", "phase", "server"])["_throughput"]
    baseline = "Baseline: 1 Prague + 1 CUBIC, DualPI2"
    assert abs(table[(baseline, "0-30 s", "prague")] - 2.5) < 1.0
    assert abs(table[(baseline, "0-30 s", "cubic")] - 7.5) < 1.0
    mixed = "DualPI2, 2 Prague then 2 CUBIC"
    for phase, server, paper in (("10-20 s", "prague1", 4.7), ("10-20 s", "prague2", 4.7), ("20-30 s", "cubic3", 6.0),
                                 ("20-30 s", "prague1", 2.0), ("30-40 s", "cubic3", 3.2),
                                 ("30-40 s", "prague1", 1.5)):  # fmt: skip
        assert abs(table[(mixed, phase, server)] - paper) < 1.0, (phase, server, table[(mixed, phase, server)])
    flows = data.flows[data.flows["run_id"].map(module.run_cases(data.flows)) == baseline]
    assert (flows["retransmits"] <= 0.002 * flows["packets_sent"]).all()
    # The per-second queue delay per DualPI2 queue (coexistence paper Fig. 5): both queues drawn, the L
    # queue (Prague) near DualPI2's 1 ms step, the C queue (ECN-CUBIC) near its 15 ms target.
    queue = module.queue_per_second(data)
    late = queue[(queue["case"] == mixed) & (queue["second"] >= 22)].groupby("queue")["sojourn_ms"].mean()
    assert set(late.index) == {"L", "C"}, late
    assert late["L"] < 2.0 and 5.0 < late["C"] < 25.0, late.to_dict()
    lines = render(module, data, tmp_path)
    assert any("| 7.5 |" in line for line in lines)


def test_dualq_web_requests_from_the_store(tmp_path):
    """The study store keeps each web run's request table: the FCT analysis of the DualQ paper
    §IV-F reads it (StudyData.requests, the SQL view ``requests``). Under high load over
    DualPI2, short (< 50 kB) Prague responses complete more efficiently than short CUBIC
    ones (mean and P1), and CUBIC's requests are the ones hit by SYN timeouts."""
    from l4slab import study

    dualpi2 = (
        "dualpi2 limit 40000 target 15ms tupdate 16ms alpha 0.16 beta 3.2 step_thresh 1ms coupling_factor 2 "
        "drop_on_overload variant l4steam"
    )
    rules = [{"bottleneck.qdisc": dualpi2, "sources.0.rate": "10/s per 4Mbit"}]
    data, module = reduced_study("dualq-web", tmp_path, rules, {"duration": "10s", "warmup": "2s"})
    requests = data.requests()
    # 300 requests/s per CC (10/s per 4 Mbit at 120 Mbit/s) for 10 s: 3000 ± 5 sigma each.
    counts = requests.groupby("cc").size()
    assert set(counts.index) == {"prague", "cubic"} and counts.between(3000 - 275, 3000 + 275).all(), counts
    assert {"size_bytes", "fct_s", "efficiency", "syn_retransmits", "sources_0_rate", "trial"} <= set(requests.columns)
    sql = study.query(tmp_path / "dir", "SELECT cc, count(*) AS n FROM requests GROUP BY cc").set_index("cc")["n"]
    assert sql.to_dict() == counts.to_dict()
    short = requests[(requests["size_bytes"] < 50_000) & requests["fct_s"].notna()]
    prague, cubic = (short.loc[short["cc"] == cc, "efficiency"] for cc in ("prague", "cubic"))
    assert prague.mean() > cubic.mean() + 0.1 and prague.quantile(0.01) > cubic.quantile(0.01)
    assert requests.loc[requests["cc"] == "prague", "syn_retransmits"].sum() == 0
    lines = render(module, data, tmp_path)
    assert any("P99" in line and "L queue" in line for line in lines)


def test_requests_of_a_study_without_web_traffic_are_empty(tmp_path):
    from l4slab import study
    from l4slab.errors import ScenarioError

    data, _ = reduced_study("ecn-threshold", tmp_path, [{"flows.0.cc": "prague"}], {"duration": "3s", "warmup": "1s"})
    assert data.requests().empty
    with pytest.raises(ScenarioError, match="query: "):
        study.query(tmp_path / "dir", "SELECT count(*) FROM requests")


def test_dualq_basic_figure6_sections(tmp_path):
    """The DualQ paper's §IV-C on three points at 40 Mbit/s, 10 ms: DualPI2's L-queue mean is about one
    packet's serialisation time (0.3 ms) and its P99 2-3 packets' (band 1-4); CUBIC's C queue
    sits near the 15 ms target (10-20 ms); the Prague:CUBIC ratio is within 0.85-2.5; the
    sections draw Figure 6's rows."""
    rules = [{"bottleneck.rate": "40Mbit", "flows.0.rtt": "10ms"}]
    data, module = reduced_study("dualq-basic", tmp_path, rules, {"duration": "30s", "warmup": "10s"})
    grid = module.grid(data).set_index("aqm")
    l4s = grid.loc["DualPI2"]
    assert 0.3 <= l4s["a_mean_ms"] / l4s["packet_ms"] <= 1.5
    assert 1.0 <= l4s["a_p99_ms"] / l4s["packet_ms"] <= 4.0
    assert 10.0 <= l4s["b_mean_ms"] <= 20.0
    assert 0.85 <= l4s["rate_ratio"] <= 2.5
    lines = render(module, data, tmp_path)
    assert sum(".png" in line for line in lines) >= 8


def test_s2_syn_flood_ect0_below_link_rate_subtracts_from_capacity():
    """Why S2's ECT(0) statement does not hold: DualPI2 CE-marks ECN-capable Classic packets
    instead of dropping them below overload, so a 9 Mbit/s ECT(0) flood keeps its rate and
    Prague gets the 1 Mbit/s residual, as with ECT(1) (DualQ paper §III-D), once the packet limit
    cannot shed the 54-byte SYNs; with the study's 200-packet limit tail drops give Prague more."""
    from l4slab import engine
    from l4slab.study.spec import load_study

    shares = {}
    for limit in (200, 10000):
        qdisc = f"dualpi2 variant l4steam limit {limit} step_thresh 1ms"
        spec = load_study("s2-syn-flood", overrides={"duration": "15s", "warmup": "5s", "bottleneck.qdisc": qdisc})
        run = next(
            r
            for r in spec.runs
            if r.trial == 0 and spec.points[r.point].values == {"sources.0.rate": "9Mbit", "sources.0.ecn": "ect0"}
        )
        raw, _ = engine.simulate(spec.config(run))
        flows = {f["kind"]: f for f in raw["flows"]}
        shares[limit] = (flows["tcp"]["throughput_mbps"], flows["synflood"]["throughput_mbps"], raw["bottleneck"])
    prague, flood, bottleneck = shares[10000]
    assert abs(prague - 1.0) < 0.5 and flood > 8.8 and bottleneck["drops"] == 0 and bottleneck["marks"] > 0
    assert shares[200][0] > prague + 1.5 and shares[200][2]["drops"] > 0


def test_dualq_web_high_load_l_tail_is_the_unpaced_first_flights():
    """Why the DualQ paper's §IV-F statement "under heavy web load, L4S queue delay is below 1 ms at P99" does
    not hold here (P99 1.3-2.1 ms over 10-60 s at 120 Mbit/s, 300 Prague connections/s): the
    tail is made by the web connections' first flights. Linux does not pace a connection's
    first 10 segments (net/ipv4/tcp_output.c:tcp_update_skb_after_send advances
    tcp_wstamp_ns only once data_segs_out >= 10; the engine does the same), so each Prague
    response's initial window enters the L queue back to back: 10 packets are 1 ms at 120
    Mbit/s, and overlapping first flights (300/s) push packets past 1 ms. Pinned: the
    SYN-ACK + initial-window packets are over-represented among the L packets above 1 ms
    (about half of them, against about a quarter of all L packets), and without the Prague
    web source the long Prague flow keeps the L queue's P99 at 2 packets (0.2 ms)."""
    import l4slab
    from l4slab.analysis.paper_metrics import delay_attribution

    scenario = "examples/web/dualq-high-web.toml"
    root = Path(__file__).resolve().parents[2]
    high = l4slab.run(root / scenario, duration="10s", warmup="2s", trace_sojourn=True)
    trace = high.sojourn[high.sojourn["time_s"] >= 2.0]
    found = delay_attribution(trace, high.requests, queue="L", threshold_ms=1.0, flight=10)
    assert found["p99_ms"] > 1.0, found  # the statement does not hold
    assert found["first_flight"] >= 0.35 and found["first_flight"] >= 1.5 * found["first_flight_of_all"], found
    quiet = l4slab.run(root / scenario, duration="10s", warmup="2s", trace_sojourn=True,
                       sources__0__rate="0.01/s per 4Mbit")  # fmt: skip
    l_queue = quiet.sojourn[(quiet.sojourn["time_s"] >= 2.0) & (quiet.sojourn["class"] == "L")]
    assert l_queue["sojourn_ms"].quantile(0.99) < 0.5


def test_dualq_mixed_rtt_prague_l_mean_above_half_ms_only_under_step_marking(tmp_path):
    """Why the DualQ paper's §IV-E statement "Prague's mean queue delay on DualPI2 is below 0.5 ms for all
    tested cases" does not hold for Prague vs Prague (0.3-0.7 ms here) nor for Prague alone
    (0.75 ms at 5 ms): without Classic traffic the C queue is empty, the base PI's p' (driven
    by the larger of the two queue delays against the 15 ms target, sch_dualpi2.c:
    calculate_probability) stays 0, so the coupled L marking k·p' is 0 and every mark comes
    from the 1 ms step. A DCTCP-like flow on a step threshold K keeps a sawtooth just under
    K (Alizadeh et al., "DCTCP", SIGCOMM 2010, §3.3: Q_max = K + N, amplitude
    ½·sqrt(2N(C·RTT + K)) packets; 1 flow at 40 Mbit/s, 5 ms: mean ≈ 2.7 packets = 0.8 ms),
    not at one packet. With CUBIC in the C queue, p' > 0 and the coupled marks hold the L
    queue below the step (mean about 0.2 ms, the paper's regime)."""
    rules = [{"flows.0.rtt": "5ms", "flows.1.rtt": "5ms", "flows.1.cc": ["prague-v06", "cubic"]}]
    data, module = reduced_study(
        "dualq-mixed-rtt", tmp_path, rules, {"duration": "30s", "warmup": "10s"}, panels=["dualpi2"]
    )
    cases = module.case_frame(data).set_index("b_cc")
    bottleneck = data.bottleneck.merge(data.flows[data.flows["label"] == "B"][["run_id", "cc"]], on="run_id")
    bottleneck = bottleneck.set_index("cc")
    prague, cubic = bottleneck.loc["prague-v06"], bottleneck.loc["cubic"]
    # All but a handful of marks (slow start, whose L delay briefly drives p') are step marks.
    assert prague["qdisc_prob"] == 0 and prague["qdisc_step_marks"] >= 0.99 * prague["qdisc_marks"] > 0
    assert 0.3 <= cases.loc["prague-v06", "a_mean_ms"] <= 1.0  # under the 1 ms step, above one packet (0.3 ms)
    assert cubic["qdisc_prob"] > 0 and cubic["qdisc_step_marks"] < 0.5 * cubic["qdisc_marks"]
    assert cases.loc["cubic", "a_mean_ms"] < 0.5  # the coupled regime: the paper's statement holds
