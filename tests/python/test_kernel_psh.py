"""PSH and the receiver's ACK, the engine against the kernel backend.

The Linux sender sets PSH on the last segment of every skb of more than one segment
(``tcp_output.c:__tcp_transmit_skb``, kept on the last segment by
``tcp_offload.c:tcp_gso_segment``), and a receiver of Linux 6.6 or later ACKs a full-sized
PSH segment at once (``tcp_input.c:tcp_measure_rcv_mss`` sets ``ICSK_ACK_PUSHED``,
``tcp.c:tcp_cleanup_rbuf`` ACKs after the read). With GSO and TSO deferral each skb's end
then gets its own ACK, which sets where a sender's bursts and its CWR rounds start
(docs/fidelity-dualq.md, "DCTCP in the L queue"; docs/fidelity-prague.md, "PSH and the
delayed-ACK pair").

The bounds come from five kernel runs and five engine seeds of each scenario
(``l4slab run FILE --seed N [--backend kernel]``, seeds 1-5, Linux 7.2.13); each test runs
one kernel boot (about 2-5 s of wall time; DCTCP in the L queue three) and the engine's seed 1.
"""

from __future__ import annotations

import statistics

import l4slab
import pytest
from conftest import requires_engine
from test_kernel_prague import KERNEL, needs_guest

pytestmark = requires_engine


def _pair(scenario):
    from l4slab.kernel.run import run_kernel

    kernel = run_kernel(scenario, kernel=KERNEL).summary
    engine = l4slab.run(scenario).summary
    return engine, kernel


DCTCP_L = {
    "name": "dctcp-l",
    "duration": "20s",
    "warmup": "5s",
    "bottleneck": {"rate": "100Mbit", "bdp_rtt": "10ms", "qdisc": "dualpi2 any_ect"},
    "flows": [
        {
            "cc": "dctcp",
            "rtt": "10ms",
            "tso": True,
            "tso_defer": True,
            "receiver_sack_compression": "kernel",
        }
    ],
}

#: Kernel boots of DCTCP_L per test session (about 2 s of wall time each).
DCTCP_L_KERNEL_RUNS = 3

CUBIC_FIFO = {
    "name": "cubic-bfifo-1bdp",
    "duration": "12s",
    "warmup": "2s",
    "bottleneck": {"rate": "100Mbit", "bdp_rtt": "10ms", "qdisc": "bfifo", "buffer": "1bdp"},
    "flows": [
        {
            "cc": "cubic",
            "rtt": "10ms",
            "tso": True,
            "tso_defer": True,
            "receiver_sack_compression": "kernel",
        }
    ],
}


@needs_guest
def test_dctcp_in_the_l_queue_fills_the_link_as_the_kernel():
    """DCTCP alone in DualPI2's L queue (``any_ect``), 100 Mbit/s, 10 ms, 20 s from 5 s.
    Kernel, 12 runs: utilisation 0.9843-0.9904 (ten of them 0.9884-0.9904), 4 557-4 732
    marks, 0.5807-0.5920 ACKs per data segment (eleven 0.5807-0.5828): a boot now and then
    lands apart. Engine, seeds 1-5: 0.9914-0.9960, 4 793-5 036, 0.5807-0.5814; without PSH
    it left the link idle 3-4 % of the time (0.958-0.969, 3 156-3 297 marks, 0.521-0.529
    ACKs per segment: the ECE of a CE change came mid-deferral and CWR ran its round low).
    Bounds: utilisation within 0.015 (the runs' largest gap 0.0117; without PSH at least
    0.015 below every kernel run), marks within 0.93-1.15 of the kernel's run
    (engine/kernel ratios of the runs 1.01-1.11), ACKs per segment within 0.015 (largest gap
    0.0113; without PSH 0.05 and more).

    The guest's randomness now and then puts the run in another regime: 80 boots with the
    host's randomness (before the guest took it from the seed; 30 alone, 30 beside a second
    guest, 20 beside busy host processes): 79 gave 0.9854-0.9914, 4 435-4 788 marks,
    0.5795-0.5827 ACKs per segment, but one held cwnd at 92 from 1 s to 8 s with 3.5 times
    the marks (0.9919, 9 320, 0.6157); one of eight passes of the kernel tests gave 0.6001
    ACKs per segment. So the kernel's figure is the median of DCTCP_L_KERNEL_RUNS seeds,
    each metric's own (seeds 1-3: 0.9895, 0.9882, 0.9900; 4 634, 4 624, 4 708 marks; 0.5810,
    0.5808, 0.5815 ACKs per segment). The other regime is DCTCP's α trap
    (``test_kernel_dctcp.py``): of seeds 1-240 it held the kernel more than a tenth of the
    run in 4 (11 775 marks the most), the engine in 7 (14 587 the most)."""
    from l4slab.kernel.run import run_kernel

    engine = l4slab.run(DCTCP_L).summary
    kernels = [run_kernel(dict(DCTCP_L, seed=seed), kernel=KERNEL).summary for seed in range(1, DCTCP_L_KERNEL_RUNS + 1)]
    ue = engine["bottleneck"]["utilisation"]
    uk = statistics.median(k["bottleneck"]["utilisation"] for k in kernels)
    assert abs(ue - uk) <= 0.015, (ue, uk)
    me = engine["bottleneck"]["marks"]
    mk = statistics.median(k["bottleneck"]["marks"] for k in kernels)
    assert 0.93 <= me / mk <= 1.15, (me, mk)
    ae = engine["flows"][0]["acks_per_packet"]
    ak = statistics.median(k["flows"][0]["acks_per_packet"] for k in kernels)
    assert abs(ae - ak) <= 0.015, (ae, ak)


@needs_guest
def test_cubic_acks_each_gso_skbs_end_as_the_kernel():
    """CUBIC alone, ``bfifo`` 1 BDP, 100 Mbit/s, 10 ms, 12 s from 2 s. Kernel, 5 runs:
    0.5489-0.5491 ACKs per data segment, 6 drops, 16 retransmissions, sRTT 16.59-16.60 ms;
    traced at the receiver (seed 1, 2-12 s) 9 262 PSH segments, 8 399 ACKed alone. Engine,
    seeds 1-5: 0.5478-0.5483, 6, 16, 16.62-16.65 ms (9 271 and 8 451); without PSH 0.497
    ACKs per segment. Bounds: ACKs per segment within 0.01, drops and retransmissions
    within one, sRTT within 0.2 ms."""
    engine, kernel = _pair(CUBIC_FIFO)
    ae, ak = engine["flows"][0]["acks_per_packet"], kernel["flows"][0]["acks_per_packet"]
    assert abs(ae - ak) <= 0.01, (ae, ak)
    de, dk = engine["bottleneck"]["drops"], kernel["bottleneck"]["drops"]
    assert abs(de - dk) <= 1, (de, dk)
    re_, rk = engine["flows"][0]["retransmits"], kernel["flows"][0]["retransmits"]
    assert abs(re_ - rk) <= 1, (re_, rk)
    se, sk = engine["flows"][0]["mean_srtt_ms"], kernel["flows"][0]["mean_srtt_ms"]
    assert abs(se - sk) <= 0.2, (se, sk)
