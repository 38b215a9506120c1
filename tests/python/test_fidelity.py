"""The fidelity suite as the built-in study ``fidelity``: its panels, its published data,
the verdicts and the ``l4slab fidelity`` view (the whole suite is run by `l4slab fidelity`,
not here)."""

from __future__ import annotations

import dataclasses
import math

import pytest
from l4slab import fidelity
from l4slab.cli import main
from l4slab.study import load_study, registry


def _published(**fields):
    return fidelity.Published("c", "p", {}, "Prague goodput", "Mbit/s", **fields, source="s")


def test_published_values_judge_absolute_and_relative_tolerances():
    assert _published(real=0.52, tol=0.15, rel=None).judge(0.66) is True
    assert _published(real=0.52, tol=0.15, rel=None).judge(0.68) is False
    assert _published(real=66.3, tol=None, rel=0.15).judge(75.0) is True
    assert _published(real=66.3, tol=None, rel=0.15).judge(118.0) is False
    assert _published(real=1.0, tol=None, rel=None).judge(5.0) is None, "a reference is shown, not judged"
    assert _published(real=1.0, tol=1.0, rel=None).judge(math.nan) is False


def test_every_published_row_names_a_panel_cell_and_quantity_of_the_study():
    spec = load_study("fidelity")
    published = fidelity.load_published()
    points = [p.values for p in spec.points]
    columns = {f.path: f.column for f in spec.factors}
    for row in published:
        matching = [
            v for v in points
            if v["panel"] == row.panel
            and all(str(v.get(next(p for p, c in columns.items() if c == k))) == val for k, val in row.cell.items())
        ]  # fmt: skip
        assert len(matching) == 1, (row.case, row.panel, row.cell)
    assert set(fidelity.cases(published)) >= {
        "dualq-alone-5ms", "dualq-alone-100ms", "dualq-l-tail", "dualq-alone-v07", "pam-fifo-ecn-delay",
        "pam-codel-ecn-share", "pam-half-bdp-share", "pam-fq-codel-delay", "deep-fq-codel", "coexistence-baseline",
        "dualq-overload", "mark-accounting", "s2-low-rate", "pam-1v25-low-rate", "pam-1v2-fifo",
    }  # fmt: skip
    assert sum(p.judge(p.real) is not None for p in published) >= 25


def test_a_bad_published_file_is_one_line_naming_line_and_column(tmp_path):
    from l4slab.errors import ScenarioError

    text = fidelity.published_file().read_text(encoding="utf-8")
    bad = tmp_path / "pub.csv"
    bad.write_text(text.replace("0.52,0.15,", "0.52,fast,", 1), encoding="utf-8")
    with pytest.raises(ScenarioError, match=r"pub.csv line \d+, column 'tol': 'fast' is not a number"):
        fidelity.load_published(bad)


def test_pam_panels_repeat_the_pam2025_study_testbed_settings():
    """The PAM panels run the pam2025 study's testbed: the delay node's lateness and each flow's
    host settings (GSO and TSO deferral as Linux TCP keeps them under ethtool gso/tso off:
    docs/fidelity-pam-hosts.md, "GSO on the PAM hosts"; the L4STeam receiver; the vintages'
    cc_params). The suite repeats them; this test holds the two in step."""
    from l4slab.scenario import read_toml_file

    pam, _ = read_toml_file(registry.study_file("pam2025"), "study")
    suite, _ = read_toml_file(registry.study_file("fidelity"), "study")
    pam_flows = pam["base"]["flows"]
    keys = ("cc", "rtt", "tso", "tso_defer", "tso_defer_ack", "receiver_kernel", "receiver_rcvbuf",
            "receiver_sack_compression")
    for name, panel in suite["panels"].items():
        if not name.startswith("pam-"):
            continue
        assert panel["set"]["delay_node_timer_latency"] == pam["base"]["delay_node_timer_latency"], name
        for mine, theirs in zip(panel["set"]["flows"], pam_flows):
            assert {k: mine.get(k) for k in keys} == {k: theirs.get(k) for k in keys}, name
        prague_cubic = pam["panels"]["prague-cubic"]["set"]
        assert panel["set"]["flows"][0]["cc_params"] == prague_cubic["flows.0.cc_params"], name
        assert panel["set"]["flows"][1]["cc_params"] == prague_cubic["flows.1.cc_params"], name
    # The PAM studies run the testbed's own Prague build (L4STeam/tcp-prague 90aea47f).
    assert pam["panels"]["prague-cubic"]["set"]["flows.0.cc_params"] == {"version": "pam2025"}


def test_mark_probabilities_count_packets_and_a_tampered_value_flips_the_verdict(tmp_path):
    table, directory = fidelity.run({"mark-accounting"}, quick=True, out=tmp_path / "fid", jobs=1)
    assert list(table["quantity"]) == ["max mark_prob", "max flow marks/packet"]
    assert table["agrees"].all(), table
    assert (table["simulated"] <= 1.0).all() and (table["simulated"] > 0.0).all()
    # The study's report section prints the same verdicts.
    from l4slab import study

    assert registry.report_sections("fidelity") == (fidelity.section,)
    lines = fidelity.section(study.load(directory), tmp_path)
    assert lines[0] == "## Fidelity" and "2 of 2 judged quantities agree" in lines[2], lines
    assert sum("| mark-accounting |" in line and "| yes |" in line for line in lines) == 2
    # The verdict follows the published value: move it out of reach and it disagrees.

    published = [p for p in fidelity.load_published() if p.case == "mark-accounting"]
    tampered = [dataclasses.replace(published[0], real=5.0), published[1]]
    again = fidelity.verdicts(study.load(directory), tampered)
    assert list(again["agrees"]) == [False, True]


def test_quick_keeps_each_warm_up_and_a_panel_override_stays_in_its_panel():
    quick = fidelity.quick_overrides()
    assert quick["dualq-alone-100ms:duration"] == "65s" and quick["pam-half-bdp-share:duration"] == "20s"
    assert quick["mark-accounting:duration"] == "10s"
    spec = load_study("fidelity", panels=["dualq-alone-100ms", "mark-accounting"], overrides=quick)
    assert sorted(p.scenario["duration"] for p in spec.points) == ["10s", "65s"]
    from l4slab.errors import ScenarioError

    with pytest.raises(ScenarioError, match="'no-panel' is not a panel of this study"):
        load_study("fidelity", panels=["mark-accounting"], overrides={"no-panel:duration": "5s"})


def test_cli_refuses_an_unknown_case_on_one_line(capsys):
    assert main(["fidelity", "--cases", "dualq-alone-5ms,no-such-case"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--cases: no case 'no-such-case'; cases are dualq-alone-5ms," in err[0], err


def _panel_scenarios(panel, overrides=None):
    """The scenarios of one panel of the suite (quick unless ``overrides`` say otherwise)."""
    from l4slab.scenario import scenario_from_dict

    spec = load_study("fidelity", panels=[panel], overrides=overrides or fidelity.quick_overrides([panel]))
    return [scenario_from_dict(p.scenario) for p in spec.points]


def _run_scenario(scenario):
    from l4slab.runner import run

    return run(scenario)


def _prague_rates(result):
    f = result.flows
    return f[f["cc"].astype(str).str.startswith("prague")]["goodput_mbps"].astype(float)


def test_overloaded_prague_v06_keeps_a_rate_at_its_window_floor():
    """v0.6 grows only while cwnd-limited (tcp_prague.c v0.6 prague_update_cwnd:
    `!tcp_is_cwnd_limited(sk)` -> no increase) and paces from its window. At the floor of
    MIN_CWND = 2 its ADJUST drops any further reduction (`cwnd_cnt = 0`, "no point in
    applying further reductions"), so the window that paces it never falls below one
    packet: it keeps sending, fills its window again and grows, with fq on the hosts (the
    testbed's) or TCP's own pacing alike. No Prague flow starves (without the floor the
    flows paced by TCP itself decayed to about 0.001 Mbit/s)."""
    quick = {"duration": "20s", "warmup": "5s"}
    (with_fq,) = _panel_scenarios("dualq-overload", quick)
    rates = _prague_rates(_run_scenario(with_fq))
    assert (rates >= fidelity.STARVED_MBPS).all() and rates.mean() > 0.3, rates
    (without_fq,) = _panel_scenarios("dualq-overload", {**quick, "flows[0].fq_pacing": False, "flows[1].fq_pacing": False})
    rates = _prague_rates(_run_scenario(without_fq))
    assert (rates >= fidelity.STARVED_MBPS).all() and rates.mean() > 0.3, rates


def test_prague_v06_keeps_a_trickle_under_ect1_overload():
    """The DualQ paper's overload test with the UDP in the L queue (ECT(1)) at 200 % of the
    link: DualPI2 drops about half of every queue's packets, and each Prague flow lives on
    RTOs. v0.6's pacing after a loss never falls below one packet per SRTT (its rate is
    MTU/SRTT x max(snd_cwnd, in_flight), and tcp_enter_loss leaves one packet), so every
    flow keeps a trickle: the testbed's 0.01-0.13 Mbit/s per flow at 140-200 %, not 0.001."""
    text = """
duration = "25s"
warmup = "5s"
seed = 2019
[bottleneck]
rate = "100Mbit"
qdisc = "dualpi2 limit 40000 target 15ms tupdate 16ms alpha 0.16 beta 3.2 step_thresh 1ms coupling_factor 2 drop_on_overload variant l4steam"
[[flows]]
cc = "prague-v06"
count = 5
rtt = "10ms"
ecn = "accecn"
receiver_ecn = "accecn"
fq_pacing = true
[[flows]]
cc = "cubic"
count = 5
rtt = "10ms"
fq_pacing = true
[[flows]]
kind = "udp"
rate = "200%"
packet_size = "1500B"
ecn = "ect1"
rtt = "10ms"
"""
    rates = _prague_rates(_run_toml(text))
    assert len(rates) == 5 and (rates >= 0.005).all() and rates.mean() >= 0.01, rates


def _four_mbit(variant: str, cc: str) -> str:
    """The 4 Mbit/s cell on `variant`'s testbed: the DualQ paper's (`l4steam`) had 5.10
    receivers (its receive-buffer autotuning, tcp/rcvbuf.rs), the mainline one 7.2's."""
    from l4slab.scenario import read_toml_file

    suite, _ = read_toml_file(registry.study_file("fidelity"), "study")
    table_i = suite["panels"]["dualq-overload"]["set"]["bottleneck"]["qdisc"].replace(" variant l4steam", "")
    rcvbuf = "5.10" if variant == "l4steam" else "mainline"
    return f"""
name = "dualq-basic-4mbit-{variant}"
duration = "40s"
warmup = "10s"
[bottleneck]
rate = "4Mbit"
qdisc = "{table_i} variant {variant}"
[[flows]]
cc = "{cc}"
rtt = "20ms"
ecn = "accecn"
receiver_ecn = "accecn"
fq_pacing = true
receiver_rcvbuf = "{rcvbuf}"
[[flows]]
cc = "cubic"
rtt = "20ms"
fq_pacing = true
receiver_rcvbuf = "{rcvbuf}"
"""


def _run_toml(text):
    from l4slab.scenario import scenario_from_toml

    return _run_scenario(scenario_from_toml(text))


def test_dualq_4mbit_ratio_follows_from_the_l4steam_step_rule():
    """At 4 Mbit/s a 1514-byte frame takes 3 ms: a lone L packet behind a C packet in
    service waits > 1 ms. Mainline's step (min_qlen_step 0) marks it; the L4STeam DualPI2
    of the DualQ testbed's kernel applies the step only when the L queue holds more than one
    packet (sch_dualpi2.c dualpi2_qdisc_enqueue: `apply_step = qdisc_qlen(q->l_queue) > 1`),
    and the DualQ paper's Prague:CUBIC 0.85-2.5 follows.

    The ratio is judged as the paper ran it (250 s) and over seeds: one 40-s run varies by
    seed far more than the band's margin (v0.7 with the 5.10 receivers, seeds 1-30:
    1.83-2.69, 5 of 30 above 2.5), so a single draw passes or fails by its seed. At 250 s,
    seeds 1-10 give v0.7 2.16-2.51 (mean 2.29) and v0.6 1.90-1.98 (mean 1.93) with the
    testbed's 5.10 receivers (2.15-2.37, 2.27 and 1.96-2.17, 2.06 with every window fixed).
    The kernel backend runs `variant l4steam` as mainline's qdisc with `min_qlen_step 2`:
    1.96-2.80, mean 2.37 over 15 boots of 40 s (tests/python/test_kernel_dualpi2_l4steam.py);
    on mainline DualPI2 it gives 0.06-0.14 (6 boots, 40 s; the engine 0.05-0.16 over 10
    seeds; docs/fidelity-prague.md, "Receive-buffer autotuning in the DualQ cells")."""
    from l4slab.scenario import scenario_from_toml

    def ratio(variant, cc, seed):
        text = _four_mbit(variant, cc).replace('duration = "40s"', 'duration = "250s"')
        f = _run_scenario(scenario_from_toml(text, overrides={"seed": seed})).flows
        return float(f.iloc[0]["goodput_mbps"]) / float(f.iloc[1]["goodput_mbps"])

    for cc in ("prague-v06", "prague"):
        ratios = [ratio("l4steam", cc, seed) for seed in range(1, 11)]
        assert 0.85 <= sum(ratios) / len(ratios) <= 2.5, (cc, ratios)
    assert ratio("mainline", "prague", 1) < 0.3


def test_coexistence_baseline_follows_from_the_l4steam_6_6_tree():
    """The coexistence paper's kernels (L4STeam 6.6/6.12) carry the DualPI2 that went upstream: the step
    applies to every L4S packet (min_qlen_step 0), so at 10 Mbit/s a lone Prague packet
    behind a 1.2-ms CUBIC frame is step-marked and CUBIC gets the larger share, as the coexistence paper
    reports (Prague about 2.5, CUBIC about 7.5 Mbit/s, retransmissions near zero). The
    2023-24 L4STeam step rule (qlen(L) > 1) reverses the shares: the reference cell."""
    testbed, old = _panel_scenarios("coexistence-baseline", {"duration": "20s"})
    assert "memlimit" in str(testbed.bottleneck.qdisc) and "l4steam" in str(old.bottleneck.qdisc)
    flows = _run_scenario(testbed).flows
    prague, cubic = (float(flows.iloc[i]["goodput_mbps"]) for i in (0, 1))
    assert abs(prague - 2.5) < 1.0 and abs(cubic - 7.5) < 1.0, (prague, cubic)
    assert int(flows["retransmits"].sum()) <= 0.002 * int(flows["packets_sent"].sum())
    flows = _run_scenario(old).flows
    assert float(flows.iloc[0]["goodput_mbps"]) > float(flows.iloc[1]["goodput_mbps"])


def test_tc_delay_l_is_the_time_average_of_the_l_heads_age():
    """Packet i heads the L queue from max(enqueue, previous dequeue) to its dequeue. Two
    packets: enqueued at 1.0 s, left at 1.002 s (sojourn 2 ms), and enqueued at 1.001 s, left
    at 1.003 s (sojourn 2 ms, head from 1.002 s at age 1 ms). Areas 2 ms² and
    (2² − 1²)/2 = 1.5 ms², over a 1-s window: 3.5 µs."""
    import pandas as pd

    trace = pd.DataFrame({"time_s": [1.002, 1.003, 1.004], "sojourn_ms": [2.0, 2.0, 9.0], "class": ["L", "L", "C"]})
    assert math.isclose(fidelity.delay_l_time_average(trace, 0.5, 1.5), 0.0035, rel_tol=1e-9)
    # A head interval that began before the window counts from the window's start: a packet
    # enqueued at 0.4 s that left at 0.6 s (sojourn 200 ms), window 0.5-1.5 s: its age runs
    # from 100 to 200 ms inside, area (0.2² − 0.1²)/2 = 0.015 s², i.e. 15 ms over 1 s.
    straddle = pd.DataFrame({"time_s": [0.6], "sojourn_ms": [200.0], "class": ["L"]})
    assert math.isclose(fidelity.delay_l_time_average(straddle, 0.5, 1.5), 15.0, rel_tol=1e-9)


def test_set_changes_every_selected_panel_and_names_the_panel_on_a_bad_index(capsys):
    """`l4slab fidelity --set` applies to each selected panel's scenario: flows[*].KEY on every
    flow entry; flows[N] beyond a panel's entries is refused on one line naming the panel (it
    would append a flow, changing the case)."""
    plain = _panel_scenarios("coexistence-baseline")[0]
    changed = _panel_scenarios(
        "coexistence-baseline",
        {**fidelity.quick_overrides(), "flows[*].sender_rx_usecs": "50us", "bottleneck.rate": "20Mbit"},
    )[0]
    assert [f.sender_rx_usecs for f in plain.flows] == [None, None]
    assert len({str(f.sender_rx_usecs) for f in changed.flows}) == 1 and changed.flows[0].sender_rx_usecs is not None
    assert changed.bottleneck.rate != plain.bottleneck.rate
    assert main(["fidelity", "--cases", "coexistence-baseline", "--set", "flows[2].rtt=5ms"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "panel coexistence-baseline" in err[0] and "flows[0..1] or flows[*]" in err[0], err


def test_flow_table_cc_is_the_registry_name():
    """The flows table names the CC as the scenario chose it (`prague-v06`), not the kernel
    module name both Prague vintages share; a Prague without AccECN that fell back to its
    Reno ops keeps the `-reno` suffix (`prague_init` -> `prague_reno`)."""
    from l4slab.runner import run
    from l4slab.scenario import scenario_from_toml

    text = """
duration = "1s"
[bottleneck]
rate = "10Mbit"
qdisc = "dualpi2"
[[flows]]
cc = "prague-v06"
rtt = "10ms"
[[flows]]
cc = "prague-v06"
rtt = "10ms"
ecn = 0
receiver_ecn = 0
[[flows]]
cc = "cubic"
rtt = "10ms"
"""
    assert list(run(scenario_from_toml(text)).flows["cc"]) == ["prague-v06", "prague-v06-reno", "cubic"]
