"""The fidelity suite: l4slab against measurements of real Linux.

Each :class:`Case` is one measured case: a scenario configured as its testbed ran it, the
quantities the testbed reported, and the tolerance within which the simulator agrees. Cases
share a name when they measure one mechanism (``pam-fifo-ecn-delay`` is four buffer sizes).
``l4slab fidelity [--cases NAME,NAME] [--quick] [--out DIR]`` runs them and prints real beside
simulated with a verdict per quantity; ``--out`` also writes ``fidelity.csv``.
docs/fidelity.md explains each case's mechanism and its current agreement.

The real values come from data nobody on the project wrote: the PAM 2025 paper's
published cells (Sarpkaya, Fund, Panwar; ``l4slab/studies/pam2025``), the
DualQ paper's testbed (De Schepper et al., kernel 5.10.31-prague-37, Prague v0.6 with
``prague_rtt_scaling=1``, ``rtt_target 25 ms``, ``rtt_transition 500``; DualPI2 defaults
with ``any_ect``; fq on every host; 40 Mbit/s; 250 s after a warm-up of
5 + rate·RTT/100 s), and the coexistence paper's baseline (docs/studies.md names the papers).
A case without a tolerance is a reference (shown, not judged). Agreement must come from
mechanisms: nothing here feeds back into the engine.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

__all__ = ["CASES", "Case", "Check", "run_cases"]


@dataclass(frozen=True)
class Check:
    """One reported quantity: its name, the real value, and the allowed deviation
    (absolute ``tol``, or relative ``rel`` as a fraction); both None = reference only."""

    name: str
    real: float
    tol: float | None = None
    rel: float | None = None
    unit: str = ""

    def passes(self, sim: float) -> bool | None:
        if self.tol is None and self.rel is None:
            return None
        if sim is None or not math.isfinite(sim):
            return False
        allowed = self.tol if self.tol is not None else abs(self.real) * (self.rel or 0.0)
        return abs(sim - self.real) <= allowed + 1e-12


@dataclass(frozen=True)
class Case:
    name: str
    """What ``--cases`` selects; several cases may share it (one mechanism, several cells)."""
    title: str
    scenario: Callable[[bool], str]
    """TOML of the scenario; the argument asks for the quick variant (shorter run)."""
    measure: Callable[[Any], dict[str, float]]
    """The simulated quantities, by check name, from a :class:`~l4slab.results.RunResult`."""
    checks: tuple[Check, ...]
    source: str
    notes: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


# --- scenario builders ---------------------------------------------------------------


def _dualq_alone(cc: str, rtt_ms: int, quick: bool) -> str:
    """DualQ testbed: one flow alone over DualPI2 (any_ect), 40 Mbit/s, fq on the host,
    offloads on (TSO/GSO at the sender, GRO behind the NIC's default interrupt
    moderation at the receiver: ``ethtool -k`` defaults)."""
    warmup = 5 + 40 * rtt_ms / 100  # the DualQ paper's App. B: T_w = 5 + rate[Mbit/s]·RTT[ms]/100 s
    measured = 30 if quick else 250
    params = (
        'cc_params = { rtt_scaling = "rate", rtt_target_us = 25000, rtt_transition = 500 }'
        if cc == "prague-v06"
        else ""
    )
    return f"""
name = "fidelity-{cc}-{rtt_ms}ms"
duration = "{warmup + measured}s"
warmup = "{warmup}s"
trace_sojourn = true
[bottleneck]
rate = "40Mbit"
qdisc = "dualpi2 any_ect"
[[flows]]
cc = "{cc}"
rtt = "{rtt_ms}ms"
fq_pacing = true
tso = true
gro = true
{params}
"""


def _pam_base() -> dict:
    """The built-in ``pam2025`` study's ``[base]`` table: the testbed settings these cases
    share with it (one value for the study and the cases)."""
    from .scenario import read_toml_file
    from .study import registry

    tables, _ = read_toml_file(registry.study_file("pam2025"), "study")
    return tables["base"]


def _pam_delay_node_latency() -> str:
    """The PAM testbed's delay-node lateness, as the built-in ``pam2025`` study sets it
    (docs/fidelity-pam-hosts.md, "The path timing")."""
    return str(_pam_base()["delay_node_timer_latency"])


def _pam_offloads(flow: int) -> str:
    """``tso``/``tso_defer`` of the study's flow ``flow`` as TOML lines: the hosts' TCP keeps
    GSO and TSO deferral under ``ethtool -K gso off tso off`` (docs/fidelity-pam-hosts.md, "GSO on the
    PAM hosts")."""
    f = _pam_base()["flows"][flow]
    return "\n".join(f"{k} = {str(bool(f.get(k, False))).lower()}" for k in ("tso", "tso_defer"))


def _pam_pair(
    queue: str,
    buffer_bdp: float,
    classic_ecn: int,
    quick: bool,
    *,
    n_prague: int = 1,
    n_cubic: int = 1,
    preset: str = "pam2025.queues",
) -> str:
    """A PAM 2025 cell: Prague vs CUBIC, 100 Mbit/s, 10 ms, 60 s, the hosts' GSO; the
    multi-flow mixes run ``n_prague`` Prague vs ``n_cubic`` CUBIC flows (iperf3 -P N),
    the classic receivers with ``tcp_ecn = classic_ecn`` as on the testbed. Prague's
    receiver ran the L4STeam kernel (notebook: the l4s-testing build on every node), whose
    AccECN receive path ACKs each segment of a low-rate flow (``receiver_kernel``)."""
    from .study.spec import Preset

    # The nine queues of the PAM testbed, from the built-in study's presets (BDP 125 000 B).
    qdisc = Preset(preset, ()).qdisc(queue, int(buffer_bdp * 125_000))
    return f"""
name = "fidelity-pam-{queue}-{buffer_bdp}-{n_prague}v{n_cubic}"
duration = "{20 if quick else 60}s"
delay_node_timer_latency = "{_pam_delay_node_latency()}"  # the testbed's path timing (study.toml)
[bottleneck]
rate = "100Mbit"
bdp_rtt = "10ms"
qdisc = "{qdisc}"
[[flows]]
cc = "prague"
cc_params = {{ growth_gate = "app_limited" }}  # the testbed's 2024 L4STeam vintage (study.toml)
rtt = "10ms"
{_pam_offloads(0)}
count = {n_prague}
receiver_kernel = "l4steam"
[[flows]]
cc = "cubic"
cc_params = {{ hystart_round_reset = "cong_avoid" }}  # the CUBIC host's 5.13.12 (study.toml)
ecn = {classic_ecn}
receiver_ecn = {classic_ecn}
rtt = "10ms"
{_pam_offloads(1)}
count = {n_cubic}
"""


# --- measurements --------------------------------------------------------------------


def _l_queue(result) -> dict[str, float]:
    trace = result.sojourn
    flows = result.flows
    out: dict[str, float] = {}
    if trace is not None and len(trace):
        window = trace[trace["time_s"] >= result.summary["warmup_s"]]
        l_class = window[window["class"].astype(str).isin(["1", "L"])]
        s = l_class["sojourn_ms"]
        if len(s):
            out.update(
                {
                    "L sojourn mean": float(s.mean()),
                    "L sojourn P25": float(s.quantile(0.25)),
                    "L sojourn median": float(s.quantile(0.5)),
                    "L sojourn P75": float(s.quantile(0.75)),
                    "L sojourn P99": float(s.quantile(0.99)),
                    "L packets beyond 2 ms": float((s > 2.0).mean() * 100),
                }
            )
    f = flows.iloc[0]
    out["CE marks"] = 100.0 * float(f["ce_packets"]) / max(1.0, float(f["packets_sent"]))
    out["utilisation"] = 100.0 * float(result.summary["bottleneck"]["utilisation"])
    return out


def _l_tail(result) -> dict[str, float]:
    """The L queue's CCDF tail (the sojourn exceeded by 10^-4 and 10^-3 of the
    L packets after the warm-up) and the share of L packets beyond 2 ms."""
    trace = result.sojourn
    out: dict[str, float] = {}
    if trace is not None and len(trace):
        window = trace[trace["time_s"] >= result.summary["warmup_s"]]
        s = window[window["class"].astype(str).isin(["1", "L"])]["sojourn_ms"]
        if len(s):
            out["L sojourn P99.99"] = float(s.quantile(1 - 1e-4))
            out["L sojourn P99.9"] = float(s.quantile(1 - 1e-3))
            out["L sojourn max"] = float(s.max())
            out["L packets beyond 2 ms"] = float((s > 2.0).mean() * 100)
    return out


def _pam_measure(result) -> dict[str, float]:
    f = result.flows
    return {
        "Prague goodput": float(f.iloc[0]["goodput_mbps"]),
        "CUBIC goodput": float(f.iloc[1]["goodput_mbps"]),
        "Prague queuing delay": float(f.iloc[0]["queuing_delay_ms"]),
    }


def _low_rate_measure(result) -> dict[str, float]:
    """The first flow's (Prague's) queuing delay and goodput, and the L queue's mean
    sojourn over the whole run (bins weighted by the packets that left the L queue)."""
    f = result.flows
    out = {
        "Prague queuing delay": float(f.iloc[0]["queuing_delay_ms"]),
        "Prague goodput": float(f.iloc[0]["goodput_mbps"]),
    }
    for entry in result.summary.get("bottleneck", {}).get("sojourn_by_class") or []:
        if str(entry.get("class")) in ("L", "1") and (entry.get("sojourn_ms") or {}).get("mean") is not None:
            out["L sojourn mean"] = float(entry["sojourn_ms"]["mean"])
    return out


def _mark_prob_bound(result) -> dict[str, float]:
    series = result.bottleneck_series
    per_flow = result.flows
    worst_flow = float((per_flow["marks"] / per_flow["packets_sent"].clip(lower=1)).max())
    return {"max mark_prob": float(series["mark_prob"].max(skipna=True)), "max flow marks/packet": worst_flow}


def _pam_cases() -> list[Case]:
    cases = []
    # Prague starved in FIFO+ECN by non-ECN CUBIC: its queuing delay is the buffer's.
    for bdp, qd in ((1, 6.4), (2, 14.9), (4, 32.8), (8, 66.3)):
        cases.append(
            Case(
                "pam-fifo-ecn-delay",
                f"Prague vs non-ECN CUBIC, PAM FIFO+ECN, {bdp} BDP",
                lambda quick, bdp=bdp: _pam_pair("fifo_ecn", bdp, 0, quick),
                _pam_measure,
                (Check("Prague queuing delay", qd, rel=0.15, unit="ms"),),
                "PAM 2025 Prague-vs-CUBIC heatmap",
            )
        )
    # CoDel+ECN at 1 BDP against ECN-CUBIC.
    cases.append(
        Case(
            "pam-codel-ecn-share",
            "Prague vs ECN-CUBIC, PAM CoDel+ECN, 1 BDP",
            lambda quick: _pam_pair("codel_ecn", 1, 1, quick),
            _pam_measure,
            (Check("Prague goodput", 74.9, tol=3.0, unit="Mbit/s"),),
            "PAM 2025 Prague-vs-ECN-CUBIC heatmap",
        )
    )
    # Drop-based single queues at 0.5 BDP against non-ECN CUBIC.
    for queue, mbps in (("fifo", 40.4), ("pie", 39.7), ("codel", 41.3)):
        cases.append(
            Case(
                "pam-half-bdp-share",
                f"Prague vs CUBIC, PAM {queue}, 0.5 BDP",
                lambda quick, queue=queue: _pam_pair(queue, 0.5, 0, quick),
                _pam_measure,
                (Check("Prague goodput", mbps, tol=3.0, unit="Mbit/s"),),
                "PAM 2025 Prague-vs-CUBIC heatmap",
            )
        )
    # The PAM multi-flow mix 1v2 (one Prague vs an iperf3 -P 2 ECN-CUBIC client) in the
    # 2 BDP FIFO; the published per-flow mean (PAM 2025 multi-flow data).
    cases.append(
        Case(
            "pam-1v2-fifo",
            "1 Prague vs 2 ECN-CUBIC, PAM FIFO, 2 BDP",
            lambda quick: _pam_pair("fifo", 2, 1, quick, n_cubic=2),
            _pam_measure,
            (Check("Prague goodput", 40.3, tol=3.0, unit="Mbit/s"),),
            "PAM 2025 multi-flow data (1v2, FIFO)",
        )
    )
    # Prague's queuing delay in PAM FQ-CoDel (ECN), 1-8 BDP.
    for bdp, qd in ((1, 6.9), (2, 9.3), (4, 8.0), (8, 9.2)):
        cases.append(
            Case(
                "pam-fq-codel-delay",
                f"Prague vs CUBIC, PAM FQ-CoDel, {bdp} BDP",
                lambda quick, bdp=bdp: _pam_pair("fq_codel", bdp, 0, quick),
                _pam_measure,
                (Check("Prague queuing delay", qd, rel=0.15, unit="ms"),),
                "PAM 2025 Prague-vs-CUBIC heatmap",
            )
        )
    # A low-rate flow's queuing delay tracks the queue. PAM 2025 multi-flow
    # experiments (notebook data cubic_ECN_Prague_1_vs_N_N_vs_1_N_vs_N_srtt_data.json):
    # 1 Prague vs 25 ECN-CUBIC over the testbed's DualPI2 (L4STeam), 2 BDP; Prague at
    # ~4 Mbit/s, its sRTT - base 0.24 ms. The L queue's own mean sojourn is shown beside
    # it (reference): what the sender's sRTT can add to it is the receiver's ACK delay.
    cases.append(
        Case(
            "pam-1v25-low-rate",
            "1 Prague vs 25 ECN-CUBIC, PAM DualPI2, 2 BDP (low-rate flow's sRTT)",
            lambda quick: _pam_pair("dualpi2", 2, 1, quick, n_cubic=25, preset="pam2025.testbed"),
            _low_rate_measure,
            (
                Check("Prague queuing delay", 0.24, tol=0.3, unit="ms"),
                Check("L sojourn mean", float("nan"), unit="ms"),
                Check("Prague goodput", float("nan"), unit="Mbit/s"),
            ),
            "PAM 2025 multi-flow data (1v25, DualPI2)",
        )
    )
    return cases


def _dualq_cases() -> list[Case]:
    return [
        Case(
            "dualq-alone-5ms",
            "prague-v06 alone over DualPI2, 40 Mbit/s, 5 ms (DualQ testbed)",
            lambda quick: _dualq_alone("prague-v06", 5, quick),
            _l_queue,
            (
                Check("L sojourn mean", 0.52, tol=0.15, unit="ms"),
                Check("L sojourn P25", 0.36, unit="ms"),
                Check("L sojourn median", 0.49, unit="ms"),
                Check("L sojourn P75", 0.72, unit="ms"),
                Check("L sojourn P99", 1.08, tol=0.2, unit="ms"),
                Check("CE marks", 6.45, tol=2.0, unit="%"),
                Check("utilisation", 99.9, tol=1.0, unit="%"),
            ),
            "DualQ paper testbed data (per-packet sojourn written by the AQM)",
        ),
        Case(
            "dualq-alone-100ms",
            "prague-v06 alone over DualPI2, 40 Mbit/s, 100 ms (DualQ testbed)",
            lambda quick: _dualq_alone("prague-v06", 100, quick),
            _l_queue,
            (
                Check("L sojourn mean", 0.39, tol=0.15, unit="ms"),
                Check("L sojourn P25", 0.10, unit="ms"),
                Check("L sojourn median", 0.33, unit="ms"),
                Check("L sojourn P75", 0.59, unit="ms"),
                Check("L sojourn P99", 1.15, tol=0.2, unit="ms"),
                Check("CE marks", 3.9, tol=2.0, unit="%"),
            ),
            "DualQ paper testbed data",
        ),
        # The L queue's tail beyond the 1 ms step on the same testbed: 8-10 ms
        # (26-33 frames back to back at 40 Mbit/s) at 10^-4 of the packets at 5 ms and
        # 10^-3 at 100 ms. Judged at the middle of the band, +-1 ms.
        Case(
            "dualq-l-tail",
            "prague-v06 alone over DualPI2, 40 Mbit/s, 5 ms: L-queue tail (DualQ testbed)",
            lambda quick: _dualq_alone("prague-v06", 5, quick),
            _l_tail,
            (
                Check("L sojourn P99.99", 9.0, tol=1.0, unit="ms"),
                Check("L sojourn max", 10.0, unit="ms"),
            ),
            "DualQ paper testbed data (L-queue sojourn CCDF)",
        ),
        Case(
            "dualq-l-tail",
            "prague-v06 alone over DualPI2, 40 Mbit/s, 100 ms: L-queue tail (DualQ testbed)",
            lambda quick: _dualq_alone("prague-v06", 100, quick),
            _l_tail,
            (
                Check("L sojourn P99.9", 9.0, tol=1.0, unit="ms"),
                Check("L sojourn max", 10.0, unit="ms"),
            ),
            "DualQ paper testbed data (L-queue sojourn CCDF)",
        ),
        Case(
            "dualq-alone-v07",
            "prague (v0.7) alone over DualPI2, 40 Mbit/s, 5 ms (a later kernel: reference only)",
            lambda quick: _dualq_alone("prague", 5, quick),
            _l_queue,
            (
                Check("L sojourn P25", 0.36, unit="ms"),
                Check("L sojourn P75", 0.72, unit="ms"),
            ),
            "the DualQ testbed's v0.6 data (dualq-alone-5ms), for comparison",
        ),
    ]


def _mark_accounting() -> Case:
    return Case(
        "mark-accounting",
        "mark accounting: a CE packet is one mark (DualPI2 coupled + step on one packet)",
        lambda quick: (
            """
name = "fidelity-mark-accounting"
duration = "10s"
[bottleneck]
rate = "40Mbit"
qdisc = "dualpi2"
[[flows]]
cc = "prague"
rtt = "5ms"
count = 4
[[flows]]
cc = "cubic"
ecn = 1
rtt = "5ms"
"""
        ),
        _mark_prob_bound,
        (
            Check("max mark_prob", 0.5, tol=0.5),
            Check("max flow marks/packet", 0.5, tol=0.5),
        ),
        "definition: probabilities count packets (a value in [0, 1])",
    )


# --- Prague in a deep FQ-CoDel, the S2 shaper, the coexistence baseline, DualQ overload ---


def _deep_fq_codel(quick: bool) -> str:
    """Prague beside non-ECN CUBIC over a deep classic-ECN FQ-CoDel (Linux defaults:
    limit 10 240 packets, target 5 ms, interval 100 ms, ecn), 50 Mbit/s, 20 ms."""
    return f"""
name = "fidelity-deep-fq-codel"
duration = "{15 if quick else 40}s"
warmup = "5s"
[bottleneck]
rate = "50Mbit"
qdisc = "fq_codel"
[[flows]]
cc = "prague"
rtt = "20ms"
[[flows]]
cc = "cubic"
rtt = "20ms"
"""


def _s2_low_rate(scheme: str, quick: bool) -> str:
    """S2 §5.1 scenario 1, one cell: one Prague flow over an HTB-shaped DualPI2
    (the L4STeam qdisc of the shaper, 300 KB ≈ 200 packets, 1 ms step), 100 kbit/s, 20 ms."""
    params = '{ scheme = "logarithmic", k = 4.0 }' if scheme == "logarithmic" else f'{{ scheme = "{scheme}" }}'
    return f"""
name = "fidelity-s2-low-rate-{scheme}"
duration = "{30 if quick else 60}s"
warmup = "10s"
[bottleneck]
rate = "100kbit"
qdisc = "dualpi2 variant l4steam limit 200 step_thresh 1ms"
[[flows]]
cc = "prague"
rtt = "20ms"
cc_params = {{ segment_sizing = {params} }}
"""


def _s2_measure(scheme: str):
    def measure(result) -> dict[str, float]:
        f = result.flows.iloc[0]
        return {
            f"retransmissions ({scheme})": float(f["retransmits"]),
            f"DualPI2 drops ({scheme})": float(f["drops"]),
            f"mean payload ({scheme})": float(f["mean_payload_bytes"]),
        }

    return measure


# The coexistence paper's testbed (Table 1): routers on L4STeam 6.12.54, sender and receiver VMs on L4STeam
# 6.6.114. The L4STeam 6.6 tree (minuscat/l4steam-6.6.y, C.-Y. Chang's backport of the code
# that went upstream) carries the upstream-candidate DualPI2 (net/sched/sch_dualpi2.c:
# dualpi2_enqueue_skb `apply_step = skb_is_l4s(skb) && qdisc_qlen(q->l_queue) >=
# q->min_qlen_step`, dualpi2_reset_default `min_qlen_step = 0`, `memory_limit = limit *
# psched_mtu`), i.e. the engine's `variant mainline` with memlimit 10 000 x 1514 B; Prague
# MODULE_VERSION "0.7" whose prague_update_cwnd stops the increase on `tp->app_limited`
# (`growth_gate = "app_limited"`); and the L4STeam AccECN receive path
# (tcp_input.c:tcp_ecn_received_counters `received_ce_pending = max(... + pcount, 0xfU)`,
# `receiver_kernel = "l4steam"`). The coexistence paper's §3 says the 6.6 and 6.12 trees do not differ in
# Prague or DualPI2.
_COEXISTENCE_DUALPI2 = "dualpi2 memlimit 15140000"


def _coexistence_baseline(variant: str, quick: bool) -> str:
    """The coexistence paper's baseline, 1 Prague + 1 ECN-CUBIC over DualPI2 defaults,
    10 Mbit/s, 30 ms, 30 s. ``variant = "testbed"`` is the testbed as it ran (see
    ``_COEXISTENCE_DUALPI2``); ``"l4steam"`` swaps in the 2023-24 L4STeam DualPI2 (step only
    when the L queue already holds more than one packet) as a reference."""
    qdisc = _COEXISTENCE_DUALPI2 if variant == "testbed" else "dualpi2 variant l4steam"
    return f"""
name = "fidelity-coexistence-{variant}"
duration = "{20 if quick else 30}s"
warmup = "5s"
trace_sojourn = true
[bottleneck]
rate = "10Mbit"
qdisc = "{qdisc}"
[[flows]]
cc = "prague"
cc_params = {{ growth_gate = "app_limited" }}
rtt = "30ms"
ecn = "accecn"
receiver_ecn = "accecn"
receiver_kernel = "l4steam"
[[flows]]
cc = "cubic"
ecn = 1
receiver_ecn = 1
receiver_kernel = "l4steam"
rtt = "30ms"
"""


def _l_head_age_ms(result) -> float:
    """The time average over the measured window of ``now - l_head_ts`` (0 while the L
    queue is empty): what ``tc -s qdisc`` reports as ``delay_l``
    (sch_dualpi2.c:dualpi2_dump_stats -> get_queue_delays) when sampled at random times.
    From the per-packet trace: packet i heads the L queue from max(its enqueue, the
    previous L dequeue) to its own dequeue, its age growing from there."""
    import numpy as np

    trace = result.sojourn
    if trace is None or not len(trace):
        return math.nan
    start, end = float(result.summary["warmup_s"]), float(result.summary["duration_s"])
    l_class = trace[trace["class"].astype(str).isin(["1", "L"])].sort_values("time_s", kind="stable")
    left = l_class["time_s"].to_numpy(dtype=float)
    entered = left - l_class["sojourn_ms"].to_numpy(dtype=float) / 1e3
    heads = np.maximum(entered, np.concatenate([[-math.inf], left[:-1]]))
    # Only the part of each head interval inside the window counts.
    heads = np.maximum(heads, start)
    inside = left > start
    area = ((left - entered) ** 2 - (heads - entered) ** 2) / 2
    return float(area[inside].sum() / max(end - start, 1e-9) * 1e3)


# The DualPI2 of the DualQ paper's Table I (tc spelling).
_TABLE_I_DUALPI2 = (
    "dualpi2 limit 40000 target 15ms tupdate 16ms alpha 0.16 beta 3.2"
    " step_thresh 1ms coupling_factor 2 drop_on_overload"
)


def _dualq_overload(quick: bool) -> str:
    """The DualQ paper's §IV-G on its testbed (kernel 5.10.31-prague-37): 5 Prague v0.6
    (module defaults: RATE scaling, 25 ms target, 500-round transition) + 5 CUBIC, fq on
    every host, one Not-ECT UDP flow at 100 % of 100 Mbit/s, 10 ms; DualPI2 of Table I as
    the L4STeam tree of that kernel implements it (``variant l4steam``: the step applies
    only when the L queue holds more than one packet, L4STeam sch_dualpi2.c
    dualpi2_qdisc_enqueue ``apply_step = qdisc_qlen(q->l_queue) > 1``)."""
    return f"""
name = "fidelity-dualq-overload"
duration = "{20 if quick else 60}s"
warmup = "{5 if quick else 10}s"
[bottleneck]
rate = "100Mbit"
qdisc = "{_TABLE_I_DUALPI2} variant l4steam"
[[flows]]
label = "prague"
cc = "prague-v06"
count = 5
rtt = "10ms"
ecn = "accecn"
receiver_ecn = "accecn"
fq_pacing = true
[[flows]]
label = "cubic"
cc = "cubic"
count = 5
rtt = "10ms"
fq_pacing = true
[[flows]]
label = "udp"
kind = "udp"
rate = "100%"
packet_size = "1500B"
ecn = "not-ect"
rtt = "10ms"
"""


def _pair_measure(result) -> dict[str, float]:
    f = result.flows
    out = {
        "Prague goodput": float(f.iloc[0]["goodput_mbps"]),
        "CUBIC goodput": float(f.iloc[1]["goodput_mbps"]),
        "Prague queuing delay": float(f.iloc[0]["queuing_delay_ms"]),
    }
    trace = result.sojourn
    if trace is not None and len(trace):
        window = trace[trace["time_s"] >= result.summary["warmup_s"]]
        s = window[window["class"].astype(str).isin(["1", "L"])]["sojourn_ms"]
        if len(s):
            out["L sojourn mean"] = float(s.mean())
        out["L delay_l (tc, time average)"] = _l_head_age_ms(result)
    return out


# The kernel's Prague flows kept 1.38 Mbit/s each; a flow below a tenth of it is starved.
_OVERLOAD_REAL_MBPS = 1.38


def _overload_measure(result) -> dict[str, float]:
    f = result.flows
    prague = f[f["label"].astype(str).str.startswith("prague")]["goodput_mbps"].astype(float)
    return {
        "Prague goodput per flow": float(prague.mean()),
        "Prague flows starved": float((prague < 0.1 * _OVERLOAD_REAL_MBPS).sum()),
    }


def _other_cases() -> list[Case]:
    cases = [
        Case(
            "deep-fq-codel",
            "Prague vs CUBIC over a deep classic-ECN FQ-CoDel (limit 10240), 50 Mbit/s, 20 ms",
            _deep_fq_codel,
            _pair_measure,
            # PAM's FQ-CoDel cells at <= 8 BDP (7-9 ms) for comparison: not the same testbed.
            (Check("Prague queuing delay", 8.0, unit="ms"),),
            "PAM 2025 FQ-CoDel cells (reference); tcp_prague.c v0.7 first-CE rule (cc/prague/tests.rs)",
        ),
    ]
    # S2 gives no per-cell numbers (Fig. 3: > 20x fewer retransmissions than fixed MSS for
    # the pacing-rate schemes, logarithmic the lowest): each scheme's cell is a reference.
    for scheme in ("fixed", "default", "linear", "logarithmic"):
        cases.append(
            Case(
                "s2-low-rate",
                f"S2 §5.1 one Prague flow, {scheme} segment sizing, 100 kbit/s, 20 ms",
                lambda quick, scheme=scheme: _s2_low_rate(scheme, quick),
                _s2_measure(scheme),
                (
                    Check(f"retransmissions ({scheme})", math.nan),
                    Check(f"DualPI2 drops ({scheme})", math.nan),
                    Check(f"mean payload ({scheme})", math.nan, unit="B"),
                ),
                "S2 (Zeynali et al.) §5.1, Figs. 2-3 (no per-cell numbers: reference)",
            )
        )
    # The testbed's kernels (judged), and the 2023-24 L4STeam DualPI2 in their place
    # (reference: the step rule alone reverses the shares at 10 Mbit/s).
    for variant, judged in (("testbed", True), ("l4steam", False)):
        tol = 1.0 if judged else None
        cases.append(
            Case(
                "coexistence-baseline",
                "the coexistence paper's baseline: Prague + ECN-CUBIC, 10 Mbit/s, 30 ms, "
                + ("the L4STeam 6.6 tree's DualPI2 and Prague" if judged else "DualPI2 variant l4steam (2023-24)"),
                lambda quick, variant=variant: _coexistence_baseline(variant, quick),
                _pair_measure,
                (
                    Check("L sojourn mean", 0.1, unit="ms"),
                    Check("L delay_l (tc, time average)", 0.1, unit="ms"),
                    Check("Prague goodput", 2.5, tol=tol, unit="Mbit/s"),
                    Check("CUBIC goodput", 7.5, tol=tol, unit="Mbit/s"),
                ),
                "the coexistence paper's baseline, L4STeam 6.6/6.12 kernels",
            )
        )
    cases.append(
        Case(
            "dualq-overload",
            "DualQ overload: 5 Prague v0.6 + 5 CUBIC + Not-ECT UDP at 100 % of 100 Mbit/s (fq on hosts)",
            _dualq_overload,
            _overload_measure,
            (
                Check("Prague goodput per flow", _OVERLOAD_REAL_MBPS, unit="Mbit/s"),
                Check("Prague flows starved", 0.0, tol=0.0),
            ),
            "the DualQ paper's testbed (5.10.31-prague-37) overload data",
        )
    )
    return cases


#: Every case, in the order ``l4slab fidelity`` prints them.
CASES: list[Case] = [*_dualq_cases(), *_pam_cases(), *_other_cases(), _mark_accounting()]


def _case_scenario(case: Case, toml: str, overrides: Mapping[str, Any] | None):
    """The case's scenario with ``overrides`` (``--set``) applied. ``flows[*].KEY`` sets KEY
    on every flow entry of the case; ``flows[N].KEY`` needs entry N to exist in the case
    (appending a flow would change the case, not a setting of it)."""
    from .errors import ScenarioError
    from .scenario.load import _parse_toml, _split_path, apply_overrides, scenario_from_dict

    data = _parse_toml(toml, f"fidelity case {case.name}")
    if not overrides:
        return scenario_from_dict(data)
    flows = data.get("flows") or []
    expanded: dict[str, Any] = {}
    for key, value in overrides.items():
        wildcard = key.replace("__", ".").replace("flows.*", "flows[*]")
        if wildcard.startswith("flows[*]"):
            rest = wildcard[len("flows[*]") :]
            if not rest.startswith(".") or len(rest) < 2:
                raise ScenarioError(
                    f"--set: {key!r} needs a flow field after flows[*], e.g. flows[*].sender_rx_usecs=50"
                )
            for index in range(len(flows)):
                expanded[f"flows[{index}]{rest}"] = value
            continue
        parts = _split_path(key)
        if len(parts) > 1 and parts[0] == "flows" and isinstance(parts[1], int) and parts[1] >= len(flows):
            raise ScenarioError(
                f"--set: {key}: case {case.name} ({case.title}) has {len(flows)} flow entr"
                f"{'y' if len(flows) == 1 else 'ies'} (allowed flows[0..{len(flows) - 1}] or flows[*])"
            )
        expanded[key] = value
    try:
        return scenario_from_dict(apply_overrides(data, expanded))
    except ScenarioError as exc:
        raise ScenarioError(f"fidelity case {case.name}: {exc}") from None


def run_cases(
    names: set[str] | None = None,
    *,
    quick: bool = False,
    progress=None,
    overrides: Mapping[str, Any] | None = None,
):
    """Run the cases named in ``names`` (all when None); return a DataFrame with one line per
    check: case, title, quantity, real, simulated, tolerance and verdict (True/False, None
    for references). ``overrides`` (``l4slab fidelity --set``) change every selected case's
    scenario as ``l4slab run --set`` does, plus ``flows[*].KEY`` for every flow of a case."""
    import pandas as pd

    from .runner import run

    selected = [c for c in CASES if names is None or c.name in names]
    # Build every scenario first: a bad --set fails before any run starts.
    scenarios = [(case, case.scenario(quick)) for case in selected]
    built = {toml: _case_scenario(case, toml, overrides) for case, toml in scenarios}
    lines = []
    # The dualq-alone and dualq-l-tail cases measure the same runs: each distinct scenario runs once.
    results: dict[str, Any] = {}
    for i, (case, toml) in enumerate(scenarios):
        if progress is not None:
            progress(i, len(selected), case)
        if toml not in results:
            results[toml] = run(built[toml])
        result = results[toml]
        sim = case.measure(result)
        for c in case.checks:
            value = sim.get(c.name, float("nan"))
            tolerance = (
                f"±{c.tol:g}{c.unit and ' ' + c.unit}"
                if c.tol is not None
                else (f"±{c.rel * 100:g} %" if c.rel is not None else "reference")
            )
            lines.append(
                {
                    "case": case.name,
                    "title": case.title,
                    "quantity": c.name,
                    "unit": c.unit,
                    "real": c.real,
                    "simulated": value,
                    "tolerance": tolerance,
                    "agrees": c.passes(value),
                    "source": case.source,
                }
            )
    if progress is not None:
        progress(len(selected), len(selected), None)
    return pd.DataFrame(lines)
