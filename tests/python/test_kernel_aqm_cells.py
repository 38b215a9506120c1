"""Two PAM 2025 AQM cells on both backends: CoDel+ECN at 1 BDP and fq's ``ce_threshold``.

Each cell runs on the engine (``l4slab.run``) and the guest kernel (``run_kernel``):
Prague (v0.7, app-limited growth gate, as the PAM study runs it) against ECN-CUBIC,
100 Mbit/s, 10 ms, 20 s with the summary from 5 s. Both senders use GSO with TSO
deferral (``tso_defer = true``), which is what the kernel's TCP always does
(``tcp_output.c:tcp_tso_should_defer``). The kernel's spread comes from 5 runs of each
scenario (boots with their own randomness), measured on Linux 7.2.13; the
tolerances below are set from those runs, with margin.

* **CoDel+ECN at 1 BDP** (``codel limit 84 target 5ms interval 100ms ecn``). CoDel's ECN
  marks never drop, so only the limit can (``sch_codel.c:codel_qdisc_enqueue``) and each
  such drop halves Prague. On both backends Prague's standing queue stays below the
  84-packet limit after slow start. Kernel: Prague 89.4–89.8 Mbit/s, queuing delay
  6.71–7.12 ms, 0 drops after 5 s in 5 of 5 runs. Engine: 87.7–90.1 Mbit/s, 6.42–6.94 ms,
  0–1 drops over seeds 1–5. A guest run is deterministic for a given kernel binary and
  seed, and a rebuilt kernel lands a seed on another trajectory: over seeds 1–6 on two
  builds (with and without the BBRv2 core patch, which no CC here reads) Prague took
  85.2–89.8 Mbit/s with 0–5 drops after 5 s, the same spread on both. The testbed's 74.9 Mbit/s is therefore not what Linux's CoDel
  and this Prague give. (The PAM hybrid's classic-ECN fallback gives 42.5–44.5 on both.)
* **fq, ce_threshold 5 ms, 2 BDP** (``fq limit 167 flow_limit 167 ce_threshold 5ms``).
  ``sch_fq.c:fq_dequeue`` marks every packet whose own wait exceeds the threshold. With
  GSO bursts, only the packets at a burst's tail cross it while the queue's mean is still
  below, so ECN-CUBIC's marking episodes are short and most end after one reduction.
  Kernel: one reduction in 16/25–26/29 episodes (64–90 %), Prague's queuing delay
  4.53–4.75 ms, goodput 47.98–48.98 Mbit/s. Engine: 73–86 %, 4.55–4.68 ms, 48.26–48.81
  over seeds 1–5. The testbed reported 4.7–4.8 ms. With one segment per skb, every episode
  is two reductions (``crates/l4slab-core/tests/delay_cells.rs``).

* **A CC without ``TCP_CONG_NEEDS_ECN`` on a classic-ECN connection** (BBRv1 with
  ``tcp_ecn = 1`` at both ends against Prague, CoDel+ECN at 1 BDP). This is the TCP core's
  part of the PAM BBRv2 panels (BBRv2 itself: ``test_kernel_bbr2.py``).
  ``tcp_output.c:tcp_ecn_send`` sends new data ECT(0), so CoDel marks BBR's packets. A cwnd set in ``cong_control`` ignores the
  CWR that ECE starts (``tcp_input.c:tcp_cong_control`` skips PRR). Kernel: BBR
  85.6–86.0 Mbit/s with 3 277–4 195 CE, Prague 8.44–9.02. Engine: 85.2–86.2 with
  2 571–4 171 CE, Prague 8.23–9.39.

* **FQ-CoDel at 8 BDP** (``fq_codel limit 667 target 5ms interval 100ms ecn`` vs non-ECN
  CUBIC, 30 s from 10 s). No overflow, so Prague's own CoDel runs its control law from a
  fresh state (``sch_fq_codel.c``, ``codel_impl.h:codel_dequeue``). Kernel (7 runs, with and
  without fq on the senders): Prague's CE 3 968–4 064, queuing delay 6.38–7.36 ms.
  Engine: 3 987–4 033 CE, 6.42–7.24 ms.

Cost: four kernel runs, about 8, 8, 12 and 20 s of guest wall time on a quiet 2-core machine.
The 10-ms probe interval of the fq run makes it the slower one. The test skips when no
guest kernel is cached (``l4slab kernel build``).
"""

from __future__ import annotations

import l4slab
import pytest
from conftest import requires_engine
from test_kernel_prague import KERNEL, needs_guest

pytestmark = requires_engine


def _cell(qdisc: str, bin_: str = "100ms") -> dict:
    host = {"rtt": "10ms", "tso": True, "tso_defer": True}
    return {
        "name": "pam-aqm-cell",
        "duration": "20s",
        "warmup": "5s",
        "bin": bin_,
        "seed": 1,
        "bottleneck": {"rate": "100Mbit", "qdisc": qdisc, "bdp_rtt": "10ms"},
        "flows": [
            {"label": "l4s", "cc": "prague", "cc_params": {"growth_gate": "app_limited"}, **host},
            {"label": "classic", "cc": "cubic", "ecn": 1, "receiver_ecn": 1, **host},
        ],
    }


CODEL_ECN_1BDP = _cell("codel limit 84 target 5ms interval 100ms ecn")
FQ_CODEL_8BDP = _cell("fq_codel limit 667 target 5ms interval 100ms ecn")
FQ_CODEL_8BDP.update(duration="30s", warmup="10s")
FQ_CODEL_8BDP["flows"][1].update(ecn=0, receiver_ecn=0)
BBR_ECN_CODEL = _cell("codel limit 84 target 5ms interval 100ms ecn")
BBR_ECN_CODEL["flows"][1].update(label="bbr", cc="bbr")
FQ_2BDP = _cell("fq limit 167 flow_limit 167 ce_threshold 5ms", bin_="10ms")


class Pair:
    def __init__(self, scenario):
        from l4slab.kernel.run import run_kernel

        self.engine = l4slab.run(scenario)
        self.kernel = run_kernel(scenario, kernel=KERNEL)

    def both(self):
        return (("engine", self.engine), ("kernel", self.kernel))


@pytest.fixture(scope="module")
def codel_ecn():
    return Pair(CODEL_ECN_1BDP)


@pytest.fixture(scope="module")
def fq_ecn():
    return Pair(FQ_2BDP)


@pytest.fixture(scope="module")
def fq_codel_8bdp():
    return Pair(FQ_CODEL_8BDP)


@pytest.fixture(scope="module")
def bbr_ecn():
    return Pair(BBR_ECN_CODEL)


def _flow(run, i):
    return run.summary["flows"][i]


def one_reduction_share(run, flow=1, since_s=5.0):
    """The share of the flow's window reductions that one β step explains.

    An episode is a run of non-increasing cwnd samples. The trough/peak ratio of one
    CUBIC reduction is 0.7; two back to back give 0.49.
    """
    fs = run.flow_series
    cwnd = fs[(fs.flow == flow) & (fs.time_s >= since_s)].cwnd.to_numpy()
    ratios, i = [], 0
    while i < len(cwnd) - 1:
        if cwnd[i + 1] < cwnd[i]:
            j = i
            while j < len(cwnd) - 1 and cwnd[j + 1] <= cwnd[j]:
                j += 1
            ratios.append(cwnd[j] / cwnd[i])
            i = j
        else:
            i += 1
    return sum(r > 0.6 for r in ratios) / max(len(ratios), 1), len(ratios)


@needs_guest
def test_codel_ecn_limit_does_not_bind_prague_keeps_its_share_on_both(codel_ecn):
    """Few drops at CoDel's 84-packet limit after slow start, on either backend. Prague
    takes ≥ 84 Mbit/s on both, and the two agree within 3 Mbit/s: kernel 85.2–89.8 with
    0–5 drops (seeds 1–6, two builds), engine (seed 1) 87.7. A standing queue that reached
    the limit would take Prague to ≈ 74, the testbed's value."""
    for name, run in codel_ecn.both():
        assert run.summary["bottleneck"]["drops"] <= 8, (name, run.summary["bottleneck"]["drops"])
        assert _flow(run, 0)["goodput_mbps"] >= 84, (name, _flow(run, 0)["goodput_mbps"])
    e, k = _flow(codel_ecn.engine, 0)["goodput_mbps"], _flow(codel_ecn.kernel, 0)["goodput_mbps"]
    assert abs(e - k) <= 3.0, (e, k)


@needs_guest
def test_codel_ecn_prague_standing_queue_agrees_within_15_percent(codel_ecn):
    """Prague's queuing delay, sRTT − base: kernel 6.71–7.12 ms, engine (seed 1) 6.48 ms.
    The 15 % tolerance is the differential study's. An engine standing 1.3× higher (the
    testbed's ≈ 8.1 ms), or 1.3× lower, would fail."""
    e, k = _flow(codel_ecn.engine, 0)["queuing_delay_ms"], _flow(codel_ecn.kernel, 0)["queuing_delay_ms"]
    assert abs(e - k) <= 0.15 * k, (e, k)


@needs_guest
def test_fq_ce_threshold_ecn_cubic_mostly_reduces_once_per_episode_on_both(fq_ecn):
    """Most marking episodes of ECN-CUBIC end after one β = 0.7 reduction. Kernel:
    64–90 % of 25–29 episodes. Engine: 73 % (seed 1). With one segment per skb the engine
    gives 0 %: every episode is two reductions."""
    for name, run in fq_ecn.both():
        share, n = one_reduction_share(run)
        assert n >= 15, (name, n)
        assert share >= 0.5, (name, share, n)


@needs_guest
def test_fq_ce_threshold_prague_queuing_delay_and_split_agree(fq_ecn):
    """Prague's queuing delay within 0.5 ms: kernel 4.53–4.75 ms, engine 4.55 ms. Goodput
    within 3 Mbit/s: kernel 47.98–48.98, engine 48.81. The kernel's own delay is checked
    against the testbed's 4.7–4.8 ms with the kernel's 5-run range widened by ≈ 0.3 ms."""
    e, k = _flow(fq_ecn.engine, 0), _flow(fq_ecn.kernel, 0)
    assert abs(e["queuing_delay_ms"] - k["queuing_delay_ms"]) <= 0.5, (e["queuing_delay_ms"], k["queuing_delay_ms"])
    assert 4.2 <= k["queuing_delay_ms"] <= 5.2, k["queuing_delay_ms"]
    assert abs(e["goodput_mbps"] - k["goodput_mbps"]) <= 3.0, (e["goodput_mbps"], k["goodput_mbps"])


@needs_guest
def test_a_classic_ecn_bbr_sends_ect0_and_keeps_its_rate_under_ce_on_both(bbr_ecn):
    """BBR negotiates RFC 3168 ECN and its data is CE-marked, i.e. sent ECT: the kernel's
    3 277–4 195 CE in 5 runs; a Not-ECT flow gets none. CE does not cut its cwnd: ≥ 80
    Mbit/s on both (kernel 85.6–86.0). Prague's leftover share agrees within 3 Mbit/s
    (kernel 8.44–9.02, engine 8.23)."""
    for name, run in bbr_ecn.both():
        bbr = _flow(run, 1)
        assert bbr["ecn_mode"] == "rfc3168", (name, bbr["ecn_mode"])
        assert bbr["ce_packets"] >= 2000, (name, bbr["ce_packets"])
        assert bbr["goodput_mbps"] >= 80, (name, bbr["goodput_mbps"])
    e, k = _flow(bbr_ecn.engine, 0)["goodput_mbps"], _flow(bbr_ecn.kernel, 0)["goodput_mbps"]
    assert abs(e - k) <= 3.0, (e, k)


@needs_guest
def test_fq_codel_prague_runs_codels_control_law_on_both(fq_codel_8bdp):
    """Prague's CE count from its own CoDel bucket agrees within 15 %: kernel 3 968–4 064
    in 7 runs, engine 4 033. A stuck control law (every packet above target marked) would
    give ≈ 14 000. Both queuing delays fall in the kernel's 6.38–7.36 ms widened by 0.5 ms
    on each side (the phase of Prague's slow oscillation under sparse marks sets the
    mean)."""
    e, k = _flow(fq_codel_8bdp.engine, 0), _flow(fq_codel_8bdp.kernel, 0)
    assert abs(e["ce_packets"] - k["ce_packets"]) <= 0.15 * k["ce_packets"], (e["ce_packets"], k["ce_packets"])
    for name, f in (("engine", e), ("kernel", k)):
        assert 5.9 <= f["queuing_delay_ms"] <= 7.9, (name, f["queuing_delay_ms"])
