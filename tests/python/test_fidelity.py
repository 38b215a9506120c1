"""The fidelity suite's machinery (the suite itself is run by `l4slab fidelity`, not here)."""

from __future__ import annotations

import math

from l4slab import fidelity
from l4slab.cli import main


def test_checks_judge_absolute_and_relative_tolerances():
    assert fidelity.Check("x", 0.52, tol=0.15).passes(0.66) is True
    assert fidelity.Check("x", 0.52, tol=0.15).passes(0.68) is False
    assert fidelity.Check("x", 66.3, rel=0.15).passes(75.0) is True
    assert fidelity.Check("x", 66.3, rel=0.15).passes(118.0) is False
    assert fidelity.Check("x", 1.0).passes(5.0) is None, "a reference is shown, not judged"
    assert fidelity.Check("x", 1.0, tol=1.0).passes(math.nan) is False


def test_every_case_resolves_to_a_valid_scenario():
    from l4slab.scenario import scenario_from_toml

    for case in fidelity.CASES:
        scenario_from_toml(case.scenario(True)).resolve()
    assert {c.name for c in fidelity.CASES} >= {
        "dualq-alone-5ms",
        "dualq-alone-100ms",
        "dualq-l-tail",
        "dualq-alone-v07",
        "pam-fifo-ecn-delay",
        "pam-codel-ecn-share",
        "pam-half-bdp-share",
        "pam-fq-codel-delay",
        "deep-fq-codel",
        "coexistence-baseline",
        "dualq-overload",
        "mark-accounting",
    }


def test_pam_cases_run_the_hosts_gso_as_the_pam2025_study_does():
    """The PAM cases share the study's host offloads: ethtool gso/tso off leaves Linux TCP's GSO
    and TSO deferral on (docs/fidelity-pam-hosts.md, "GSO on the PAM hosts")."""
    toml = next(c for c in fidelity.CASES if c.name == "pam-codel-ecn-share").scenario(True)
    assert toml.count("tso = true") == 2 and toml.count("tso_defer = true") == 2


def test_mark_probabilities_count_packets():
    table = fidelity.run_cases({"mark-accounting"}, quick=True)
    assert list(table["quantity"]) == ["max mark_prob", "max flow marks/packet"]
    assert table["agrees"].all(), table
    assert (table["simulated"] <= 1.0).all()


def test_cli_refuses_an_unknown_case_on_one_line(capsys):
    assert main(["fidelity", "--cases", "dualq-alone-5ms,no-such-case"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--cases: no case 'no-such-case'; cases are dualq-alone-5ms," in err[0], err


def test_l_tail_is_read_after_the_warm_up():
    import types

    import pandas as pd

    # 100 000 L packets at 0.5 ms and 20 (2e-4) at 9 ms after the warm-up; C packets and
    # warm-up packets at 50 ms must not count.
    n = 100_000
    trace = pd.DataFrame(
        {
            "time_s": [10.0] * (n + 20) + [10.0, 1.0],
            "class": ["L"] * (n + 20) + ["C", "L"],
            "sojourn_ms": [0.5] * n + [9.0] * 20 + [50.0, 50.0],
        }
    )
    result = types.SimpleNamespace(sojourn=trace, summary={"warmup_s": 5.0})
    tail = fidelity._l_tail(result)
    assert tail["L sojourn P99.99"] == 9.0
    assert tail["L sojourn P99.9"] == 0.5
    assert tail["L sojourn max"] == 9.0
    assert math.isclose(tail["L packets beyond 2 ms"], 100 * 20 / (n + 20))
    # The testbed's dualq cases run with the hosts' offloads on.
    toml = next(c for c in fidelity.CASES if c.name == "dualq-l-tail").scenario(True)
    assert "gro = true" in toml and "tso = true" in toml and "fq_pacing = true" in toml


def _run_toml(text):
    from l4slab.runner import run
    from l4slab.scenario import scenario_from_toml

    return run(scenario_from_toml(text))


def test_overloaded_prague_v06_kept_alive_by_host_fq_as_on_the_testbed():
    """v0.6 has no pacing floor and its AI runs only while cwnd-limited
    (tcp_prague.c v0.6 prague_update_cwnd: `!tcp_is_cwnd_limited(sk)` → no increase): a
    flow paced inside TCP below cwnd/RTT is never cwnd-limited (tcp_output.c:tcp_write_xmit
    breaks on tcp_pacing_check before tcp_cwnd_test) and cannot grow back. With fq on the
    host (the testbed's), TCP hands the skbs to fq at once, stays cwnd-limited and keeps
    its AI: every Prague flow keeps a rate."""
    with_fq = fidelity._dualq_overload(True)
    measured = fidelity._overload_measure(_run_toml(with_fq))
    assert measured["Prague flows starved"] == 0
    assert measured["Prague goodput per flow"] > 0.3
    without_fq = with_fq.replace("fq_pacing = true\n", "")
    starved = fidelity._overload_measure(_run_toml(without_fq))
    assert starved["Prague flows starved"] >= 4


def _four_mbit(variant: str, cc: str) -> str:
    return f"""
name = "dualq-basic-4mbit-{variant}"
duration = "40s"
warmup = "10s"
[bottleneck]
rate = "4Mbit"
qdisc = "{fidelity._TABLE_I_DUALPI2} variant {variant}"
[[flows]]
cc = "{cc}"
rtt = "20ms"
ecn = "accecn"
receiver_ecn = "accecn"
fq_pacing = true
[[flows]]
cc = "cubic"
rtt = "20ms"
fq_pacing = true
"""


def test_dualq_4mbit_ratio_follows_from_the_l4steam_step_rule():
    """At 4 Mbit/s a 1514-byte frame takes 3 ms: a lone L packet behind a C packet in
    service waits > 1 ms. Mainline's step (min_qlen_step 0) marks it; the L4STeam DualPI2
    of the DualQ testbed's kernel applies the step only when the L queue holds more than one
    packet (sch_dualpi2.c dualpi2_qdisc_enqueue: `apply_step = qdisc_qlen(q->l_queue) > 1`),
    and the DualQ paper's Prague:CUBIC 0.85-2.5 follows."""
    for cc in ("prague-v06", "prague"):
        f = _run_toml(_four_mbit("l4steam", cc)).flows
        ratio = float(f.iloc[0]["goodput_mbps"]) / float(f.iloc[1]["goodput_mbps"])
        assert 0.85 <= ratio <= 2.5, (cc, ratio)
    f = _run_toml(_four_mbit("mainline", "prague")).flows
    assert float(f.iloc[0]["goodput_mbps"]) / float(f.iloc[1]["goodput_mbps"]) < 0.3


def test_coexistence_baseline_follows_from_the_l4steam_6_6_tree():
    """The coexistence paper's kernels (L4STeam 6.6/6.12) carry the DualPI2 that went upstream: the step
    applies to every L4S packet (min_qlen_step 0), so at 10 Mbit/s a lone Prague packet
    behind a 1.2-ms CUBIC frame is step-marked and CUBIC gets the larger share, as the coexistence paper
    reports (Prague about 2.5, CUBIC about 7.5 Mbit/s, retransmissions near zero). The
    2023-24 L4STeam step rule (qlen(L) > 1) reverses the shares: the reference case."""
    from l4slab.runner import run

    testbed = run(fidelity._coexistence_baseline("testbed", True)).flows
    prague, cubic = (float(testbed.iloc[i]["goodput_mbps"]) for i in (0, 1))
    assert abs(prague - 2.5) < 1.0 and abs(cubic - 7.5) < 1.0, (prague, cubic)
    assert int(testbed["retransmits"].sum()) <= 0.002 * int(testbed["packets_sent"].sum())
    old = run(fidelity._coexistence_baseline("l4steam", True)).flows
    assert float(old.iloc[0]["goodput_mbps"]) > float(old.iloc[1]["goodput_mbps"])


def test_tc_delay_l_is_the_time_average_of_the_l_heads_age():
    """`_l_head_age_ms`: packet i heads the L queue from max(enqueue, previous dequeue) to its
    dequeue. Two packets: enqueued at 1.0 s, left at 1.002 s (sojourn 2 ms), and enqueued at
    1.001 s, left at 1.003 s (sojourn 2 ms, head from 1.002 s at age 1 ms). Areas 2 ms²
    and (2² − 1²)/2 = 1.5 ms², over a 1-s window: 3.5 µs."""
    import types

    import pandas as pd

    trace = pd.DataFrame({"time_s": [1.002, 1.003, 1.004], "sojourn_ms": [2.0, 2.0, 9.0], "class": ["L", "L", "C"]})
    result = types.SimpleNamespace(sojourn=trace, summary={"warmup_s": 0.5, "duration_s": 1.5})
    assert math.isclose(fidelity._l_head_age_ms(result), 0.0035, rel_tol=1e-9)
    # A head interval that began before the warm-up counts from the warm-up's end: a packet
    # enqueued at 0.4 s that left at 0.6 s (sojourn 200 ms), window 0.5-1.5 s: its age runs
    # from 100 to 200 ms inside, area (0.2² − 0.1²)/2 = 0.015 s², i.e. 15 ms over 1 s.
    straddle = pd.DataFrame({"time_s": [0.6], "sojourn_ms": [200.0], "class": ["L"]})
    result = types.SimpleNamespace(sojourn=straddle, summary={"warmup_s": 0.5, "duration_s": 1.5})
    assert math.isclose(fidelity._l_head_age_ms(result), 15.0, rel_tol=1e-9)


def test_cli_set_changes_every_selected_case_and_names_the_case_on_a_bad_index(capsys):
    """`l4slab fidelity --set` applies to each selected case's scenario: flows[*].KEY on every
    flow entry; flows[N] beyond a case's entries is refused on one line naming the case (it
    would append a flow, changing the case)."""
    case = next(c for c in fidelity.CASES if c.name == "coexistence-baseline")
    toml = fidelity._coexistence_baseline("testbed", True)
    plain = fidelity._case_scenario(case, toml, None)
    changed = fidelity._case_scenario(case, toml, {"flows[*].sender_rx_usecs": "50us", "bottleneck.rate": "20Mbit"})
    assert [f.sender_rx_usecs for f in plain.flows] == [None, None]
    assert len({str(f.sender_rx_usecs) for f in changed.flows}) == 1 and changed.flows[0].sender_rx_usecs is not None
    assert changed.bottleneck.rate != plain.bottleneck.rate
    assert main(["fidelity", "--cases", "coexistence-baseline", "--set", "flows[2].rtt=5ms"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "case coexistence-baseline" in err[0] and "flows[0..1] or flows[*]" in err[0], err


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
