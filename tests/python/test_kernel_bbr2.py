"""The guest's BBRv2 (``python/l4slab/kernel/linux/net/tcp_l4slab_bbr2.c`` over the project's
TCP-core patch ``0003-tcp-bbr2-core.patch``) against the engine's ``bbr2``.

What must not regress, and the kernel runs the bounds come from (5 runs each, seeds 1-5 of
the same scenario; 100 Mbit/s, 10 ms; engine figures for the same seeds):

* **Alone in a 1-BDP FIFO** (``pfifo limit 84``, 20 s from 5 s): BBRv2 fills the link with a
  small queue. Kernel 92.35 Mbit/s and 0.390-0.401 ms queuing delay, 169 retransmissions (all
  in STARTUP) in every run; engine 92.29-92.30 Mbit/s, 0.43-0.45 ms, 156.
* **ECT and the CE response** (FIFO-ECN: ``fq limit 84 flow_limit 84 orphan_mask 0
  ce_threshold 5ms``, Prague beside BBRv2 with ``ecn_enable``, ``ecn_max_rtt_us = 0`` and
  RFC 3168 ECN at both ends, 20 s from 5 s). BBRv2's data is CE-marked (so sent ECT(0),
  ``tcp_output.c:tcp_ecn_send``): kernel 1 798-2 592 CE, engine 2 334-3 107. The module logs
  ``ecn_eligible`` and an ECN cut of ``inflight_lo`` (``bbr2_adapt_lower_bounds``), and BBRv2
  holds 8.9-13.0 Mbit/s (engine 10.1-13.7). With ``ecn_enable = false`` the same marks do
  nothing: kernel 37.0-69.2 Mbit/s (engine 56.2-86.7) and no ECN cut.
* **The loss response** (alone in ``pfifo limit 8``, below the 1.25-BDP probe, 20 s from
  5 s): the ``skb_marked_lost`` hook runs and a lost skb's send-time in-flight sets
  ``inflight_hi`` (``bbr2_inflight_hi_from_lost_skb``; logged as "inflight too high" with
  ``delivered 0``, the hook's sample): in every kernel run, tx_in_flight 82-83. Kernel
  83.8-85.5 Mbit/s with 342-362 retransmissions, engine 81.6-84.1 with 339-359.

* **L4S-BBRv2 alone in DualPI2** (``bbr2-l4s``, AccECN at both ends, 20 s from 5 s): ECT(1),
  the L queue; ``inflight_hi`` is set from the sampled skb's send-time flight, which Linux
  stamps once per GSO skb (``tcp_rate.c:tcp_set_tx_in_flight``), and the skbs are sized in
  ``mss_now`` (1436 B with the AccECN option, ``tcp_output.c:tcp_tso_segs``): 8 segments
  at 94.7 Mbit/s, so the PSH segment that ends each skb is ACKed in a pair. Kernel, 20
  runs: 88.16-91.00 Mbit/s (91.0 in 11), 0.515-0.520 ACKs per data segment; engine, seeds
  1-20: 86.86-89.12 (87.65 for seed 1), 0.515-0.519 (0.572-0.576 with skbs sized in
  ``mss_cache``; 83.5-83.8 Mbit/s with a per-segment stamp).

The module prints one line the first time each event happens on a connection (its ``debug``
parameter, on by default); the test reads them from the guest's ``dmesg.txt``. Cost: five
kernel runs, 2-5 s of wall time each on a loaded 2-core machine (the guest runs in virtual
time). Skips when no guest kernel is cached (``l4slab kernel build``).
"""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

import l4slab
import pytest
from conftest import requires_engine
from test_kernel_prague import KERNEL, needs_guest

pytestmark = requires_engine

FIFO_ECN = "fq limit 84 flow_limit 84 orphan_mask 0 ce_threshold 5ms"
BBR2_ECN = {"cc": "bbr2", "cc_params": {"ecn_enable": True, "ecn_max_rtt_us": 0}, "ecn": 1, "receiver_ecn": 1}


def _scenario(qdisc, bbr2, prague=False, duration="20s", warmup="5s"):
    host = {"rtt": "10ms", "tso": True, "tso_defer": True}
    flows = [{"label": "l4s", "cc": "prague", "cc_params": {"growth_gate": "app_limited"}, **host}] if prague else []
    flows.append({"label": "bbr2", **bbr2, **host})
    return {
        "name": "bbr2-kernel",
        "duration": duration,
        "warmup": warmup,
        "bin": "100ms",
        "seed": 1,
        "bottleneck": {"rate": "100Mbit", "qdisc": qdisc, "bdp_rtt": "10ms"},
        "flows": flows,
    }


class Pair:
    """One scenario on the engine (unless ``engine=False``) and on the kernel, with the
    module's kernel-log lines."""

    def __init__(self, scenario, engine=True):
        from l4slab.kernel.run import run_kernel

        self.engine = l4slab.run(scenario) if engine else None
        with tempfile.TemporaryDirectory(prefix="l4slab-bbr2-") as tmp:
            self.kernel = run_kernel(scenario, kernel=KERNEL, work_dir=tmp)
            dmesg = Path(tmp, "dmesg.txt")
            text = dmesg.read_text(errors="replace") if dmesg.exists() else ""
        self.events = [line.split(": ", 2)[-1] for line in text.splitlines() if "l4slab_bbr2 port" in line]

    def bbr2(self, run):
        return run.summary["flows"][-1]

    def event(self, prefix):
        return [e for e in self.events if e.startswith(prefix)]


@pytest.fixture(scope="module")
def alone():
    return Pair(_scenario("pfifo limit 84", BBR2_ECN))


@pytest.fixture(scope="module")
def fifo_ecn():
    return Pair(_scenario(FIFO_ECN, BBR2_ECN, prague=True))


@pytest.fixture(scope="module")
def fifo_ecn_off():
    off = {**BBR2_ECN, "cc_params": {"ecn_enable": False, "ecn_max_rtt_us": 0}}
    return Pair(_scenario(FIFO_ECN, off, prague=True), engine=False)


@pytest.fixture(scope="module")
def shallow():
    return Pair(_scenario("pfifo limit 8", BBR2_ECN))


@needs_guest
def test_bbr2_alone_in_a_fifo_fills_the_link_with_a_small_queue(alone):
    assert alone.kernel.meta["flows"][0]["sender_cc"] == "l4slab_bbr2"
    for run in (alone.engine, alone.kernel):
        f = alone.bbr2(run)
        assert f["goodput_mbps"] >= 91.0, f["goodput_mbps"]
        assert f["queuing_delay_ms"] <= 0.8, f["queuing_delay_ms"]
    assert abs(alone.bbr2(alone.engine)["goodput_mbps"] - alone.bbr2(alone.kernel)["goodput_mbps"]) <= 1.0


@needs_guest
def test_bbr2_with_ecn_enable_sends_ect_and_cuts_on_ce(fifo_ecn, fifo_ecn_off):
    for run in (fifo_ecn.engine, fifo_ecn.kernel):
        f = fifo_ecn.bbr2(run)
        assert f["ecn_mode"] == "rfc3168", f["ecn_mode"]
        assert f["ce_packets"] >= 1000, f["ce_packets"]  # CE-marked: it was ECT
        assert f["goodput_mbps"] <= 20.0, f["goodput_mbps"]
    assert fifo_ecn.event("ecn_eligible"), fifo_ecn.events
    cuts = fifo_ecn.event("ecn cut")
    assert cuts, fifo_ecn.events
    before, after = (int(v) for v in re.search(r"inflight_lo (\d+) -> (\d+)", cuts[0]).groups())
    assert after < before, cuts[0]
    # the same marks without ecn_enable: no ECN cut, and BBRv2 keeps far more of the link
    off = fifo_ecn_off.bbr2(fifo_ecn_off.kernel)
    assert off["ce_packets"] >= 1000, off["ce_packets"]
    assert not fifo_ecn_off.event("ecn cut"), fifo_ecn_off.events
    assert off["goodput_mbps"] >= 30.0, off["goodput_mbps"]
    assert off["goodput_mbps"] >= 2 * fifo_ecn.bbr2(fifo_ecn.kernel)["goodput_mbps"]


@needs_guest
def test_bbr2_loss_sets_inflight_hi_through_the_skb_marked_lost_hook(shallow):
    assert shallow.event("skb marked lost"), shallow.events
    assert shallow.event("loss cut"), shallow.events
    high = [e for e in shallow.event("inflight too high") if " delivered 0 " in e]
    assert high, shallow.events  # the hook's sample (delivered 0), not an ACK's
    tx_in_flight, lost = (int(v) for v in re.search(r"tx_in_flight (\d+) lost (\d+)", high[0]).groups())
    assert 60 <= tx_in_flight <= 110 and lost >= 1, high[0]  # about 1 BDP (84) plus the buffer (8)
    for run in (shallow.engine, shallow.kernel):
        f = shallow.bbr2(run)
        assert 75.0 <= f["goodput_mbps"] <= 90.0, f["goodput_mbps"]
        assert f["retransmits"] <= 500, f["retransmits"]


@pytest.fixture(scope="module")
def l4s_alone():
    flow = {"cc": "bbr2-l4s", "ecn": 3, "receiver_ecn": 3}
    return Pair(_scenario("dualpi2", flow))


@needs_guest
def test_bbr2_l4s_alone_in_dualpi2_takes_the_link_on_both_backends(l4s_alone):
    k, e = l4s_alone.bbr2(l4s_alone.kernel), l4s_alone.bbr2(l4s_alone.engine)
    for f in (k, e):
        assert f["ecn_mode"] == "accecn", f["ecn_mode"]
        assert f["ce_packets"] >= 1000, f["ce_packets"]
        # skbs of 8 segments of mss_now end in an ACKed pair; 7 of mss_cache gave 0.57
        assert 0.50 <= f["acks_per_packet"] <= 0.53, f["acks_per_packet"]
    assert 86.0 <= k["goodput_mbps"] <= 93.0, k["goodput_mbps"]
    # the kernel's 20 runs 88.16-91.00 against the engine's 87.65 (seeds 1-20:
    # 86.86-89.12): the gap within 4.5, a kernel run at 92 still passing; a per-segment
    # tx.in_flight (83.5-83.8) falls below the engine's floor of 86.5
    assert k["goodput_mbps"] - e["goodput_mbps"] <= 4.5, (k["goodput_mbps"], e["goodput_mbps"])
    assert e["goodput_mbps"] >= 86.5, e["goodput_mbps"]
