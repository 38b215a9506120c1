//! Topologies beyond the dumbbell and links that change over time, end to end: the
//! parking lot's share against network-utility theory, a chain's measured hops, the
//! reverse queue measured, a rate step under DualPI2, and the wire models.

use crate::common;
use common::*;
use serde_json::{json, Value};

fn prague(rtt_ms: u64) -> Value {
    let mut f = tcp("prague", rtt_ms);
    f["receiver_ecn"] = json!(3);
    f
}

/// The long flow's rate in the same parking lot when a flow's rate goes as
/// p^(−1/γ) of the marking probability p along its path (p_path = Σ p_link): γ = 1 for a
/// scalable CC under probabilistic marking (x = 2/(R·p), DualQ paper Appendix A, the
/// coupled L-queue marking: proportional fairness), γ = 2 under step marking (DCTCP
/// analysis: W = 2/p², the L queue's 1-ms step threshold). Solves
/// x^(−γ) = (c0 − x)^(−γ) + (c1 − x)^(−γ) by bisection.
fn long_flow_share(c0: f64, c1: f64, gamma: f64) -> f64 {
    let f = |x: f64| x.powf(-1.0 / gamma) - (c0 - x).powf(-1.0 / gamma) - (c1 - x).powf(-1.0 / gamma);
    let (mut lo, mut hi) = (1e-6, c1.min(c0) - 1e-6);
    for _ in 0..100 {
        let mid = (lo + hi) / 2.0;
        if f(mid) > 0.0 {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    lo
}

/// Parking lot of 100 and 50 Mbit/s under DualPI2: one long Prague flow across both
/// hops, one Prague cross flow on each hop, all with a 20 ms base RTT.
///
/// Theory (Kelly; Low, "A duality model of TCP and queue management algorithms"): a flow
/// across two queues sees p ≈ p0 + p1, and if x = K·p^(−1/γ) the rates maximise a
/// utility whose optimum gives the long flow 21.1 Mbit/s for γ = 1 (proportional
/// fairness: Prague's x = 2/(R p) under the DualQ's probabilistic marking) and 13.5
/// Mbit/s for γ = 2 (DCTCP's step-marking law); DualPI2's L queue marks by both its
/// step threshold and the coupled probability, so the long flow's rate lies between
/// (max-min would give 25, a Reno-like law 24.4: both above). The L-queue delay each
/// flow adds to its RTT is below a millisecond, so equal base RTTs stay equal RTTs and
/// the RTT weighting cancels. Measured (seeds 1, 2): 17.3 and 17.1 Mbit/s.
#[test]
fn parking_lot_long_flow_share_lies_between_the_step_and_probabilistic_marking_laws() {
    let (pf, step) = (long_flow_share(100.0, 50.0, 1.0), long_flow_share(100.0, 50.0, 2.0));
    assert!((pf - 21.13).abs() < 0.01 && (step - 13.5).abs() < 0.1, "{pf} {step}");
    for seed in [1, 2] {
        let mut long = prague(20);
        let mut cross0 = prague(20);
        cross0["hops"] = json!([0, 0]);
        let mut cross1 = prague(20);
        cross1["hops"] = json!([1, 1]);
        long["hops"] = json!([0, 1]);
        let v = json!({
            "seed": seed, "duration_ns": 60 * SEC, "warmup_ns": 10 * SEC,
            "bottleneck": {"rate_bps": 100 * MBIT, "qdisc": {"kind": "dualpi2"}},
            "topology": {"kind": "parking_lot", "rates_bps": [50 * MBIT]},
            "flows": [long, cross0, cross1],
        });
        let r = run(&v);
        assert_eq!(r.links.len(), 1);
        assert_eq!(r.links[0].name, "hop1");
        let long = r.flows[0].throughput_mbps; // L2 bytes at hop 0
        eprintln!(
            "seed {seed}: long {long:.2} cross0 {:.2} (goodput cross1 {:.2}); util hop0 {:.3} hop1 {:.3}; \
             L sojourn hop0 {:.3} hop1 {:.3} ms",
            r.flows[1].throughput_mbps,
            r.flows[2].goodput_mbps,
            r.bottleneck.utilisation,
            r.links[0].summary.utilisation,
            r.bottleneck.sojourn_ms.mean,
            r.links[0].summary.sojourn_ms.mean,
        );
        assert!((step..=pf).contains(&long), "long flow {long:.2} Mbit/s outside [{step:.1}, {pf:.1}]");
        // Both hops are full: the long flow and each cross flow fill them.
        assert!(r.bottleneck.utilisation > 0.97 && r.links[0].summary.utilisation > 0.97);
        assert!(r.bottleneck.sojourn_ms.mean < 1.0 && r.links[0].summary.sojourn_ms.mean < 1.0);
    }
}

/// A dumbbell with a reverse queue measures it: the ACKs of the forward flows arrive
/// there, and it is reported beside the bottleneck as `reverse_bottleneck`.
#[test]
fn the_reverse_queue_is_measured() {
    let v = json!({
        "seed": 1, "duration_ns": 5 * SEC,
        "bottleneck": {"rate_bps": 20 * MBIT, "qdisc": {"kind": "pfifo", "limit_packets": 100}},
        "reverse_bottleneck": {"rate_bps": MBIT, "qdisc": {"kind": "pfifo", "limit_packets": 100}},
        "flows": [tcp("cubic", 20)],
    });
    let r = run(&v);
    assert_eq!(r.links.len(), 1);
    let rev = &r.links[0];
    assert_eq!(rev.name, "reverse_bottleneck");
    let arrivals: u64 = rev.series.arrivals.iter().sum();
    let q = &rev.summary.qdisc;
    assert_eq!(arrivals, q.sent_packets + q.drops + q.backlog_packets);
    assert!(arrivals > 1000, "the flow's ACKs cross the reverse queue: {arrivals}");
    // Every reverse-queue byte is an ACK of the one flow: utilisation = ACK bits / capacity.
    let bytes: f64 = rev.series.utilisation.iter().sum::<f64>() * 0.1 * 1e6 / 8.0;
    assert!((bytes - q.sent_bytes as f64).abs() < 1.0, "{bytes} vs {}", q.sent_bytes);
}

/// A rate step 100 → 20 → 100 Mbit/s (`tc class change` at 10 s and 20 s) under DualPI2
/// with one Prague and one CUBIC flow, 20 ms base RTT, 10-ms bins.
///
/// Bounds, in base RTTs (20 ms), from each CC's response:
/// - down (capacity ÷ 5): CUBIC multiplies cwnd by 0.7 once per RTT with a loss, so
///   0.7ⁿ ≤ 1/5 takes 5 RTTs once PI2's drop probability has risen; Prague cuts by α/2
///   once per RTT with α an EWMA of gain 1/16 (`prague_update_alpha`): from α ≈ 0 under
///   marks on every packet (the L queue above its 1-ms step), Π(1 − α_k/2) ≤ 1/5 takes 11
///   RTTs. The queues' delay inflates those RTTs, so the flows have followed (both
///   queues back under their targets: L below the 1-ms step, C below 2 × PI2's 15 ms)
///   within 12 RTTs of inflated RTT, ≤ 1.5 s.
/// - up (capacity × 5): the flows must grow by 4/5 of the new BDP (132 packets of 1514 B
///   at 20 ms); Prague alone adds 1 segment per RTT, so the link is full within 132
///   RTTs = 2.64 s however little CUBIC adds.
///
/// The L queue's delay spike after the down-step: until Prague reacts, the excess
/// (100 − 20) Mbit/s × RTT of its share piles up: at most 4 RTTs of queue at 20 Mbit/s.
#[test]
fn a_rate_step_is_followed_within_a_bounded_number_of_rtts() {
    let mut p = prague(20);
    p["tso"] = json!(false);
    let mut c = tcp("cubic", 20);
    c["tso"] = json!(false);
    let v = json!({
        "seed": 1, "duration_ns": 30 * SEC, "bin_ns": 10 * MS,
        "bottleneck": {"rate_bps": 100 * MBIT, "qdisc": {"kind": "dualpi2"},
            "rate_schedule": [{"at_ns": 10 * SEC, "rate_bps": 20 * MBIT}, {"at_ns": 20 * SEC, "rate_bps": 100 * MBIT}]},
        "flows": [p, c],
    });
    let r = run(&v);
    let b = &r.bottleneck_series;
    let bin = |t: f64| (t / 0.01).round() as usize;
    let (l, cq) = (&b.sojourn_class_ms[1], &b.sojourn_class_ms[0]);
    // Utilisation is against the capacity in force: ≈ 1 in the low phase too.
    let util =
        |from: f64, to: f64| b.utilisation[bin(from)..bin(to)].iter().sum::<f64>() / (bin(to) - bin(from)) as f64;
    let spike = l[bin(10.0)..bin(12.0)].iter().cloned().fold(0.0, f64::max);
    let settled = |q: &[f64], limit: f64| {
        // The first bin after the step from which the queue's delay stays under `limit` for 1 s.
        (bin(10.0)..bin(19.0))
            .find(|&i| q[i..i + 100].iter().all(|&d| d.is_nan() || d < limit))
            .map(|i| (i - bin(10.0)) as f64 * 0.01)
    };
    let (l_follow, c_follow) = (settled(l, 1.0), settled(cq, 30.0));
    let refill = (bin(20.0)..bin(29.0))
        .find(|&i| b.utilisation[i..i + 50].iter().all(|&u| u > 0.9))
        .map(|i| (i - bin(20.0)) as f64 * 0.01);
    eprintln!(
        "rate step: util {:.3}/{:.3}/{:.3}; L spike {spike:.1} ms; follow down L {l_follow:?} s, C {c_follow:?} s; \
         refill {refill:?} s; goodput low phase {:.2}+{:.2}",
        util(5.0, 10.0),
        util(12.0, 20.0),
        util(25.0, 30.0),
        r.flow_series[0].goodput_mbps[bin(12.0)..bin(20.0)].iter().sum::<f64>() / 800.0,
        r.flow_series[1].goodput_mbps[bin(12.0)..bin(20.0)].iter().sum::<f64>() / 800.0,
    );
    assert!(util(12.0, 20.0) > 0.95, "the low phase's utilisation is against 20 Mbit/s");
    assert!(l_follow.is_some_and(|t| t <= 1.5), "L queue follows the step down within 1.5 s: {l_follow:?}");
    assert!(c_follow.is_some_and(|t| t <= 1.5), "C queue follows the step down within 1.5 s: {c_follow:?}");
    assert!(refill.is_some_and(|t| t <= 2.64), "the flows fill the link within 132 RTTs: {refill:?}");
    // The spike: above the 1-ms step (the step was felt), below 4 RTTs at 20 Mbit/s.
    assert!(spike > 1.0 && spike < 80.0, "L spike {spike} ms");
}
