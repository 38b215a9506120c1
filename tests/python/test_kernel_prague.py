"""The engine's TCP Prague against the kernel's.

Each scenario runs on both backends: the engine (``l4slab.run``, ``crates/l4slab-core/src/
cc/prague/``) and the guest kernel (``run_kernel``, the project's own module
``python/l4slab/kernel/linux/net/tcp_l4slab_prague.c``). Every number asserted is measured
in the test; the tolerances, and why an expert would accept them, are stated at each test.

Where the two backends measure differently (``python/l4slab/kernel/collect.py``):

* goodput: the engine counts in-order payload at its receiver, the kernel the receiver's
  ``tcpi_bytes_received``; both over ``[warmup, duration)``;
* DualPI2's L-queue sojourn: per packet in the engine; in the kernel the qdisc's
  ``delay_l`` (the head packet's wait) sampled at every 100-ms tick and weighted by the
  bin's arrivals, so it is a sample of the same quantity, not a packet-exact mean;
* CE fraction: ``ce_packets / packets_sent`` over the whole run on both: CE-marked
  packets at the receiver (engine: its count; kernel: ``tcpi_received_ce``) over the
  sender's data segments (``tcpi_data_segs_out``);
* AccECN: the engine's negotiated mode; the kernel's ``tcpi_ecn_mode`` of both sockets and
  ``tcpi_accecn_opt_seen`` (2 = counters seen in the peer's AccECN option).

``prague_pam`` (the PAM-2025 hybrid) is the engine's ``prague`` with ``ecn_fallback = 1,
fallback_constants = "pam2025", growth_gate = "app_limited"``; the kernel backend maps
exactly these three keys to that module, and the test checks the module the sender's
socket ran.

Cost: six scenarios of 6-30 s virtual time (Prague against CUBIC three times, Prague
without an AccECN receiver five), about 95 s of guest wall time on a quiet 2-core machine
(the engine's runs take well under a second each). The kernel tests skip, with the reason,
when no guest kernel is cached (``l4slab kernel build``; ``.ci/run`` builds it first) or
named by ``L4SLAB_TEST_KERNEL=LINUX:INITRAMFS``.
"""

from __future__ import annotations

import math
import os
import statistics
import sys
from pathlib import Path

import l4slab
import pytest
from conftest import requires_engine


def _cached_kernel():
    if not sys.platform.startswith("linux"):
        return None
    env = os.environ.get("L4SLAB_TEST_KERNEL")
    if env:
        from l4slab.kernel.build import Kernel

        linux, initramfs = env.split(":", 1)
        return Kernel(directory=Path(linux).parent, linux=Path(linux), initramfs=Path(initramfs), release="")
    from l4slab.kernel.build import find_cached

    return find_cached()


KERNEL = _cached_kernel()

pytestmark = requires_engine
needs_guest = pytest.mark.skipif(
    KERNEL is None, reason="no guest kernel cached: run `l4slab kernel build` (.ci/run builds it before the tests)"
)

DUALPI2 = {"rate": "100Mbit", "qdisc": "dualpi2"}
#: The engine's PAM-2025 hybrid: the kernel backend maps exactly these to the module prague_pam.
PAM_ENGINE = {"ecn_fallback": 1, "fallback_constants": "pam2025", "growth_gate": "app_limited"}


def _scenario(name, duration, warmup, flows, bottleneck=DUALPI2):
    return {"name": name, "duration": duration, "warmup": warmup, "bottleneck": bottleneck, "flows": flows}


PRAGUE_ALONE = _scenario("prague-alone", "8s", "2s", [{"cc": "prague", "rtt": "10ms"}])
# 30 s, 5 s warm-up: CUBIC's epoch here is ~5 s (K = cbrt(W * 0.3 / 0.4), W ~ 150), so the
# 25-s window holds about five and the share depends less on where a cycle is cut.
PRAGUE_CUBIC = _scenario(
    "prague-vs-cubic", "30s", "5s", [{"cc": "prague", "rtt": "10ms"}, {"cc": "cubic", "rtt": "10ms"}]
)
#: Kernel runs of PRAGUE_CUBIC per test session (about 5.5 s of wall time each).
PRAGUE_CUBIC_KERNEL_RUNS = 3


def _pam(cc_params):
    return {"cc": "prague", "rtt": "10ms", "cc_params": cc_params}


PAM_ALONE = _scenario("prague-pam-alone", "8s", "2s", [_pam(PAM_ENGINE)])
PAM_CUBIC = _scenario("prague-pam-vs-cubic", "10s", "2s", [_pam(PAM_ENGINE), {"cc": "cubic", "rtt": "10ms"}])
PAM_ECN_CUBIC_PIE = _scenario(
    "prague-pam-vs-ecn-cubic-pie",
    "15s",
    "3s",
    [_pam(PAM_ENGINE), {"cc": "cubic", "rtt": "10ms", "ecn": 1, "receiver_ecn": 1}],
    bottleneck={"rate": "100Mbit", "qdisc": "pie ecn"},
)
NO_ACCECN = _scenario("prague-no-accecn-receiver", "6s", "2s", [{"cc": "prague", "rtt": "10ms", "receiver_ecn": 0}])


def _kernel_side(scenario):
    """The same scenario for the kernel backend (the same file: every field maps)."""
    return scenario


class Pair:
    """One scenario on both backends."""

    def __init__(self, scenario, work_dir=None):
        from l4slab.kernel.run import run_kernel

        self.engine = l4slab.run(scenario)
        self.work_dir = work_dir
        self.kernel = run_kernel(_kernel_side(scenario), kernel=KERNEL, work_dir=work_dir)
        self.e = self.engine.summary
        self.k = self.kernel.summary

    def both(self):
        return (("engine", self.e), ("kernel", self.k))

    def sender_cc(self, flow=0):
        """The congestion control the kernel's sender socket ran (the probe's sample)."""
        return self.kernel.meta["flows"][flow]["sender_cc"]


def _goodput(summary, flow=0):
    return summary["flows"][flow]["goodput_mbps"]


def _ce_fraction(summary, flow=0):
    f = summary["flows"][flow]
    return f["ce_packets"] / f["packets_sent"]


def _class_mean(summary, name):
    return next(c["sojourn_ms"]["mean"] for c in summary["bottleneck"]["sojourn_by_class"] if c["class"] == name)


def _pkts_in(summary, queue):
    return summary["bottleneck"]["qdisc"]["extra"][f"pkts_in_{queue}"]


@pytest.fixture(scope="module")
def prague_alone(tmp_path_factory):
    return Pair(PRAGUE_ALONE, work_dir=tmp_path_factory.mktemp("prague-alone"))


class Repeated(Pair):
    """One scenario on both backends, repeated: ``runs`` kernel runs and ``seeds`` engine seeds."""

    def __init__(self, scenario, runs, seeds):
        from l4slab.kernel.run import run_kernel

        super().__init__(scenario)
        self.kernel_runs = [self.k] + [
            run_kernel(dict(scenario, seed=seed), kernel=KERNEL).summary for seed in range(2, runs + 1)
        ]
        self.engine_seeds = [l4slab.run(dict(scenario, seed=seed)).summary for seed in seeds]


@pytest.fixture(scope="module")
def prague_cubic():
    return Repeated(PRAGUE_CUBIC, runs=PRAGUE_CUBIC_KERNEL_RUNS, seeds=range(1, 9))


@pytest.fixture(scope="module")
def pam_alone():
    return Pair(PAM_ALONE)


@pytest.fixture(scope="module")
def pam_cubic():
    return Pair(PAM_CUBIC)


@pytest.fixture(scope="module")
def pam_ecn_cubic_pie():
    return Pair(PAM_ECN_CUBIC_PIE)


# --- Prague alone in DualPI2, 100 Mbit/s, 10 ms ----------------------------------------------


@needs_guest
def test_prague_alone_goodput_agrees_within_3_mbits(prague_alone):
    """Alone, Prague fills the link on both (measured 94.85 and 94.85 Mbit/s: the payload
    share of 100 Mbit/s of frames). 3 Mbit/s is 3 % of the link: a window or pacing error
    that left the link idle even 3 % of the time would show."""
    assert prague_alone.sender_cc() == "prague"
    engine, kernel = _goodput(prague_alone.e), _goodput(prague_alone.k)
    assert engine > 85 and kernel > 85
    assert abs(engine - kernel) <= 3.0, (engine, kernel)


@needs_guest
def test_prague_alone_l_queue_under_1ms_and_within_half_a_ms(prague_alone):
    """Both keep DualPI2's L queue below 1 ms (its step threshold; measured 0.79 ms engine,
    0.71 ms kernel) and within 0.5 ms of each other: half the step, the scale on which a
    scalable CC holds the L queue. All data in L on both (ECT(1)), at most one packet in C."""
    for name, summary in prague_alone.both():
        assert _pkts_in(summary, "c") <= 1 and _pkts_in(summary, "l") > 10_000, name
    engine, kernel = _class_mean(prague_alone.e, "L"), _class_mean(prague_alone.k, "L")
    assert 0 < engine < 1.0 and 0 < kernel < 1.0, (engine, kernel)
    assert abs(engine - kernel) <= 0.5, (engine, kernel)


@needs_guest
def test_prague_alone_skbs_follow_its_burst_bound(prague_alone):
    """Prague sizes its skbs itself: max(1, (pacing rate / MTU) >> burst_shift 12) packets
    (``tcp_prague.c:prague_tso_segs``, the engine's ``tso_segs``), through the ``tso_segs``
    op of the project's ``0004-tcp-ca-tso-segs.patch``. Mainline's ``tcp_tso_autosize`` with
    ``sk_pacing_shift`` 12, (rate >> 12) / MSS, rounds the other way near 98 Mbit/s: 2
    segments where Prague's rule gives 1. Segments per skb are the sender's ``TcpOutSegs``
    over ``IpOutRequests`` (IP counts a GSO skb once). This scenario (8 s from the start):
    1.187 with the op in three runs; 1.78 on a guest without it. At 100 Mbit/s for 12 s:
    1.20 with the op (``tcpdump`` at the router: 80 % single segments), 1.85 without (84 %
    pairs). The bound, 1.5, sits between them."""
    import json

    nstat = json.loads((prague_alone.work_dir / "nstat-s0.json").read_text())["kernel"]
    per_skb = nstat["TcpOutSegs"] / nstat["IpOutRequests"]
    assert 1.0 <= per_skb <= 1.5, (per_skb, nstat["TcpOutSegs"], nstat["IpOutRequests"])


@needs_guest
def test_prague_alone_negotiates_accecn_on_both(prague_alone):
    """The engine's negotiated mode, and the kernel's as the run result reports it from
    tcp_info: the sender's and the receiver's ``tcpi_ecn_mode`` and the sender's
    ``tcpi_accecn_opt_seen`` = 2 (AccECN option counters seen from the receiver)."""
    assert prague_alone.e["flows"][0]["ecn_mode"] == "accecn"
    assert prague_alone.k["flows"][0]["ecn_mode"] == "accecn"
    assert prague_alone.kernel.meta["flows"][0]["receiver_ecn_mode"] == "accecn"
    assert prague_alone.k["kernel"]["accecn_opt_seen"] == [2]
    assert prague_alone.k["kernel"]["modules"] == ["prague"]


@needs_guest
def test_prague_alone_ce_fraction_of_the_same_order(prague_alone):
    """CE fraction of the data packets within a factor 2 (measured 6.0 % engine, 4.2 %
    kernel). Not tighter: the L queue's marks come from the 1-ms step and so depend on
    how the packets bunch (the engine's GSO and pacing model against the kernel's own
    tcp_tso_autosize bursts), not only on Prague's α; a factor 2 still tells a flow marked
    once per RTT from one marked per packet, or a Prague that ignored CE."""
    engine, kernel = _ce_fraction(prague_alone.e), _ce_fraction(prague_alone.k)
    assert engine > 0 and kernel > 0
    assert 0.5 <= engine / kernel <= 2.0, (engine, kernel)


@needs_guest
def test_prague_alone_with_gso_and_deferral_marks_as_the_kernel():
    """Prague alone in DualPI2 at 100 Mbit/s with the kernel's own GSO and TSO deferral
    (``tso``, ``tso_defer`` on the engine), 25 s from 5 s. The kernel's write queue holds
    skbs of ``tcp_xmit_size_goal`` (45 segments here) and ``tcp_write_xmit`` defers only a
    multi-segment head, so the one-segment rest an additive increase makes room for leaves
    alone and the queue rises by one packet, not two (``tcp/output.rs``
    ``write_queue_head_len``; docs/fidelity-prague.md). Kernel, seeds 1-5: 9 104-9 156 CE,
    0.546-0.547 ACKs per data packet; engine 9 387 and 0.548 in every seed. Without the rule
    the engine deferred the rest into pairs: about 45 % more CE and 0.506 ACKs per packet.
    Bounds: CE within 0.93-1.10 of the kernel's run, ACKs per packet within 0.02."""
    from l4slab.kernel.run import run_kernel

    scenario = _scenario(
        "prague-alone-gso", "25s", "5s", [{"cc": "prague", "rtt": "10ms", "tso": True, "tso_defer": True}]
    )
    kernel = run_kernel(scenario, kernel=KERNEL).summary["flows"][0]
    engine = l4slab.run(scenario).summary["flows"][0]
    assert 0.93 <= engine["ce_packets"] / kernel["ce_packets"] <= 1.10, (engine["ce_packets"], kernel["ce_packets"])
    assert abs(engine["acks_per_packet"] - kernel["acks_per_packet"]) <= 0.02, (
        engine["acks_per_packet"],
        kernel["acks_per_packet"],
    )


# --- Prague against CUBIC in DualPI2 ----------------------------------------------------------


@needs_guest
def test_prague_vs_cubic_rate_ratios_in_the_band_and_agree(prague_cubic):
    """Prague/CUBIC goodput ratio in the DualQ paper's 0.5-2 band on both backends (geometric
    mean of the runs), and the kernel's mean log ratio within the engine's:
    |mean log r_kernel − mean log r_engine| ≤ max(log 1.25, 3 × the standard error of that
    difference), from three kernel runs and eight engine seeds.

    Why so many runs: the ratio of one run is set by where CUBIC's few epochs fall in the
    window. Measured on 15-s runs (12-s window): kernel 1.12-1.68 over six runs, engine
    1.22-1.86 over eight seeds, so one kernel run could sit 2.5 engine SDs away. Over 30 s
    (25-s window): kernel 1.46, 1.76, 1.78, 1.83; engine seeds 1.35-1.92, geometric mean 1.58;
    log SDs about 0.10 (kernel) and 0.12 (engine), so the bound is about log 1.25 and the
    measured difference of means about log 1.07."""
    assert prague_cubic.sender_cc(0) == "prague" and prague_cubic.sender_cc(1) == "cubic"
    logs = {
        "kernel": [math.log(_goodput(s, 0) / _goodput(s, 1)) for s in prague_cubic.kernel_runs],
        "engine": [math.log(_goodput(s, 0) / _goodput(s, 1)) for s in prague_cubic.engine_seeds],
    }
    for name, values in logs.items():
        assert 0.5 <= math.exp(statistics.fmean(values)) <= 2.0, (name, [round(math.exp(v), 3) for v in values])
    for name, summary in prague_cubic.both():
        assert _class_mean(summary, "L") < 1.0, name
    kernel, engine = logs["kernel"], logs["engine"]
    se = math.sqrt(statistics.variance(kernel) / len(kernel) + statistics.variance(engine) / len(engine))
    difference = abs(statistics.fmean(kernel) - statistics.fmean(engine))
    ratios = {name: [round(math.exp(v), 3) for v in values] for name, values in logs.items()}
    assert difference <= max(math.log(1.25), 3 * se), (ratios, difference, se)


# --- the PAM-2025 hybrid (classic-ECN detector with the unscaled constants) -----------------


@needs_guest
def test_prague_pam_alone_falls_back_on_both(prague_alone, pam_alone):
    """With the PAM-era constants the detector's score climbs to "classic" on DualPI2 too
    (L4STeam/linux issue #38): α is floored at 0.625, every CE cuts ≥ 31 % and the flow
    leaves the link part idle. Measured as the effect, against plain Prague in the same
    test, since neither backend exposes the score: goodput down by more than 5 Mbit/s (9.6
    engine, 9.2 kernel), the CE fraction and the L-queue delay below half of Prague's; and
    the two backends' goodput within 3 Mbit/s (85.3 and 85.7 Mbit/s)."""
    assert pam_alone.sender_cc() == "prague_pam" and pam_alone.k["kernel"]["modules"] == ["prague_pam"]
    assert pam_alone.e["flows"][0]["ecn_mode"] == pam_alone.k["flows"][0]["ecn_mode"] == "accecn"
    for (name, prague), (_, pam) in zip(prague_alone.both(), pam_alone.both(), strict=True):
        assert _goodput(prague) - _goodput(pam) > 5.0, (name, _goodput(prague), _goodput(pam))
        assert _ce_fraction(pam) < 0.5 * _ce_fraction(prague), (name, _ce_fraction(pam), _ce_fraction(prague))
        assert _class_mean(pam, "L") < 0.5 * _class_mean(prague, "L"), name
    engine, kernel = _goodput(pam_alone.e), _goodput(pam_alone.k)
    assert abs(engine - kernel) <= 3.0, (engine, kernel)


@needs_guest
def test_prague_pam_vs_cubic_starves_alike(pam_cubic):
    """Fallen back, the hybrid yields to CUBIC in DualPI2 on both: Prague below a quarter of
    CUBIC (a fair share is 1), and each flow's goodput within 6 Mbit/s across the backends.
    Measured: engine 9.88/85.7 Mbit/s; the kernel (the guest with the BBRv2 core patch, the
    same binary, ten runs; a run's guest timing is not all from the seed) Prague 7.87-14.10,
    mean 10.4, CUBIC 81.5-87.7: at most 0.17 of CUBIC, at most 4.2 Mbit/s from the engine."""
    assert pam_cubic.sender_cc(0) == "prague_pam"
    for name, summary in pam_cubic.both():
        assert _goodput(summary, 0) < 0.25 * _goodput(summary, 1), name
    for flow in (0, 1):
        engine, kernel = _goodput(pam_cubic.e, flow), _goodput(pam_cubic.k, flow)
        assert abs(engine - kernel) <= 6.0, (flow, engine, kernel)


@needs_guest
def test_prague_pam_vs_ecn_cubic_in_pie_agrees_and_never_stalls(pam_ecn_cubic_pie):
    """One classic-ECN queue (``pie ecn``, 1000 packets): both flows overshoot in slow
    start, drop into recovery (~950 retransmits each backend), and the detector runs with
    the loss history, so one 15-s run's split is noisy: over ten engine seeds Prague got
    46-58 Mbit/s (SD 4.2); kernel runs 51.2 and 56.1. The kernel's split must lie inside
    the engine's seed distribution: each flow within max(3, 2.5 SD) Mbit/s of the engine's
    mean over ten seeds. And no 1-s window after the warm-up with Prague below 10 Mbit/s on either: a
    Prague left pacing at its halved-again ``frac`` while cwnd stays high and is not
    cwnd-limited would sit at a few Mbit/s for seconds (what a bottleneck that queued
    GSO aggregates produced, not this testbed)."""
    pair = pam_ecn_cubic_pie
    assert pair.sender_cc(0) == "prague_pam"
    assert pair.k["flows"][1]["ecn_mode"] == pair.e["flows"][1]["ecn_mode"] == "rfc3168"
    for name, summary in pair.both():
        assert summary["flows"][0]["retransmits"] > 100, name  # the loss path was taken
    seeds = [l4slab.run(dict(PAM_ECN_CUBIC_PIE, seed=seed)).summary for seed in range(1, 11)]
    for flow in (0, 1):
        engine = [_goodput(summary, flow) for summary in seeds]
        mean, sd = statistics.fmean(engine), statistics.stdev(engine)
        kernel = _goodput(pair.k, flow)
        assert abs(mean - kernel) <= max(3.0, 2.5 * sd), (flow, round(mean, 1), round(sd, 1), kernel)
    warmup = float(pair.e["warmup_s"])
    for name, result in (("engine", pair.engine), ("kernel", pair.kernel)):
        series = result.flow_series
        prague = series[(series["flow"] == 0) & (series["time_s"] >= warmup - 1e-9)]
        per_second = prague.groupby((prague["time_s"] - warmup + 1e-9) // 1.0)["goodput_mbps"].mean()
        assert len(per_second) >= 10 and per_second.min() > 10.0, (name, per_second.round(1).tolist())


# --- Prague without an AccECN receiver ---------------------------------------------------------


def test_prague_without_accecn_receiver_is_prague_reno_not_ect_in_c_on_engine():
    """The engine's half of the next test, which runs without a guest too: Prague's
    handshake gets no AccECN (receiver tcp_ecn = 0), so ``prague_init`` switches to Reno."""
    summary = l4slab.run(NO_ACCECN).summary
    flow = summary["flows"][0]
    assert flow["cc"] == "prague-reno" and flow["ecn_mode"] == "off" and flow["ce_packets"] == 0
    assert _pkts_in(summary, "l") <= 0.001 * _pkts_in(summary, "c")


#: Kernel runs of NO_ACCECN per test session (about 1.2 s of wall time each).
NO_ACCECN_KERNEL_RUNS = 5


@needs_guest
def test_prague_without_accecn_receiver_is_prague_reno_not_ect_in_c():
    """Receiver ``tcp_ecn = 0``: on both, the connection runs Prague's Reno (the kernel's
    sender socket reports ``prague-reno``), not-ECT (``ecn_mode`` off, no CE), its data in
    DualPI2's C queue (at most 0.1 % of the packets in L: the one seen is the handshake's).
    Goodput within 3 Mbit/s of each other in every run (measured 95.6 Mbit/s on both; a
    kernel run now and then 94.0-94.6).

    The C-queue delay is a Reno sawtooth under the 15-ms PI target, and one 4-s window of
    it varies from run to run: over 70 kernel boots of one seed (before the guest's
    randomness came from the seed) its mean was 11.7 ms, standard deviation
    0.87 ms, range 9.5-13.2 ms (the kernel's figure is also a sample: ``delay_c`` at 100-ms
    ticks); over engine seeds 1-8, 10.5-12.8 ms, mean 11.6 ms. So the means are compared:
    the engine's over 8 seeds and the kernel's over NO_ACCECN_KERNEL_RUNS runs, within 2 ms
    (about four standard deviations of that difference; a Reno whose sawtooth peaked a
    window's worth higher or lower would be several ms apart)."""
    pair = Repeated(NO_ACCECN, runs=NO_ACCECN_KERNEL_RUNS, seeds=range(1, 9))
    assert pair.sender_cc() == "prague-reno" and pair.e["flows"][0]["cc"] == "prague-reno"
    for name, summary in [("engine", s) for s in pair.engine_seeds] + [("kernel", s) for s in pair.kernel_runs]:
        flow = summary["flows"][0]
        assert flow["ecn_mode"] == "off" and flow["ce_packets"] == 0, name
        assert _pkts_in(summary, "l") <= 0.001 * _pkts_in(summary, "c"), name
        assert abs(_goodput(summary) - _goodput(pair.e)) <= 3.0, name
    engine = statistics.mean(_class_mean(s, "C") for s in pair.engine_seeds)
    kernel = statistics.mean(_class_mean(s, "C") for s in pair.kernel_runs)
    assert 5.0 < kernel < 15.0, kernel
    assert abs(engine - kernel) <= 2.0, (engine, kernel)
