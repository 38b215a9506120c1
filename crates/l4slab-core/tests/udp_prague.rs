//! The UDP-Prague flow (L4STeam's `udp_prague` algorithm, `cc/udp_prague.rs`) end to end,
//! against what the algorithm and the DualQ Coupled AQM predict.

use crate::common;
use common::*;
use serde_json::{json, Value};

fn udp_prague() -> Value {
    json!({"kind": "udp_prague", "rtt_ns": 10 * MS})
}

/// The L queue's mean and P99 sojourn, ms.
fn l_queue(r: &l4slab_core::RunResults) -> (f64, f64) {
    let l = &r.bottleneck.sojourn_by_class.iter().find(|c| c.class == "L").unwrap().sojourn_ms;
    (l.mean, l.p99)
}

#[test]
fn alone_in_dualpi2_it_fills_the_link_below_the_step() {
    // 100 Mbit/s, 10 ms. No slow start: the rate grows from 100 kbit/s by 1 ms of queue
    // per RTT × (srtt/25 ms)², ≈ 1.6 % per 10-ms RTT, so the link is full after ≈ 5 s;
    // measured after 10 s. Alone, only DualPI2's 1-ms step marks the L queue (the
    // coupled probability is 0 with an empty C queue): each CE cuts the window by
    // alpha/2 once per vrtt, so the queue oscillates just below the step and the link
    // stays full.
    let mut sc = scenario(100, json!({"kind": "dualpi2"}), vec![udp_prague()], 40);
    sc["warmup_ns"] = json!(10 * SEC);
    let r = run(&sc);
    let f = &r.flows[0];
    assert_eq!((f.kind.as_ref(), f.cc.as_ref()), ("udp_prague", "udp_prague"));
    assert_eq!(f.drops, 0, "no loss: the L queue marks");
    assert!(f.marks > 0 && f.ce_packets > 0);
    assert!(r.bottleneck.utilisation >= 0.95, "utilisation {}", r.bottleneck.utilisation);
    let (mean, p99) = l_queue(&r);
    assert!(mean < 1.0, "L mean {mean} ms: at or above the 1-ms step");
    assert!(p99 < 2.0, "L P99 {p99} ms");
    // Per-packet ACKs: one per data packet received.
    assert!((f.acks_per_packet - 1.0).abs() < 1e-9, "ACKs per packet {}", f.acks_per_packet);
    // Full-size packets at this rate (rate × vrtt / 2 ≫ 1400 B).
    assert!(f.mean_payload_bytes > 1390.0, "mean payload {}", f.mean_payload_bytes);
}

#[test]
fn programs_that_wake_late_batch_their_reads_and_keep_the_l_queue_lower() {
    // The same flow with both programs on a host that wakes them Exp(150 µs) after a
    // datagram arrives (`ProgramReads`) and fires the sender's pacing timer as late: the
    // receiver's ACKs leave in batches and the sender's window-limited sends follow
    // them, so bursts cross the 1-ms step at a lower mean queue. Measured (seeds 1-3):
    // L mean 0.737 -> 0.44 ms, marks 2.5 -> 2.7-3.1 % of packets, goodput 97.1 -> 96.5
    // Mbit/s; the receiver's batching alone gives 0.59 ms, the sender's reads or its
    // timer alone 0.73 ms.
    let base = |late: u64| {
        let mut f = udp_prague();
        f["sender_wake_latency_ns"] = json!(late);
        f["receiver_wake_latency_ns"] = json!(late);
        f["sender_timer_latency_ns"] = json!(late);
        let mut sc = scenario(100, json!({"kind": "dualpi2"}), vec![f], 12);
        sc["warmup_ns"] = json!(5 * SEC);
        run(&sc)
    };
    let (ideal, late) = (base(0), base(150_000));
    let marks = |r: &l4slab_core::RunResults| r.bottleneck.qdisc.marks as f64 / r.bottleneck.qdisc.sent_packets as f64;
    let ((m0, _), (m1, _)) = (l_queue(&ideal), l_queue(&late));
    assert!(m0 > 0.65 && m1 < m0 - 0.2, "L mean {m0} -> {m1} ms");
    assert!(marks(&late) > marks(&ideal) * 1.1, "marks {} -> {}", marks(&ideal), marks(&late));
    assert!(late.bottleneck.utilisation > 0.95, "utilisation {}", late.bottleneck.utilisation);
    assert_eq!(late.flows[0].drops, 0);
    // An ideal host is the default: 0 changes nothing.
    let mut sc = scenario(100, json!({"kind": "dualpi2"}), vec![udp_prague()], 12);
    sc["warmup_ns"] = json!(5 * SEC);
    assert_eq!(serde_json::to_string(&run(&sc)).unwrap(), serde_json::to_string(&ideal).unwrap());
}

#[test]
fn against_cubic_in_dualpi2_the_rate_ratio_is_in_the_dualq_band() {
    // The DualQ Coupled AQM (RFC 9332 §2.1, k = 2) balances a scalable flow against a
    // Classic one to within the paper's 0.5–2 band of rate ratios.
    let mut sc = scenario(100, json!({"kind": "dualpi2"}), vec![udp_prague(), tcp("cubic", 10)], 60);
    sc["warmup_ns"] = json!(20 * SEC);
    let r = run(&sc);
    let ratio = r.flows[0].goodput_mbps / r.flows[1].goodput_mbps;
    assert!((0.5..=2.0).contains(&ratio), "UDP-Prague/CUBIC {ratio}");
    assert!(r.bottleneck.utilisation > 0.95, "utilisation {}", r.bottleneck.utilisation);
}

#[test]
fn rt_frames_carry_the_capped_rate_over_the_budget() {
    // 25 frames/s, each paced over 20 ms of its 40-ms interval at the pacing rate, capped
    // at 8 Mbit/s (1 MB/s): 20 000 B a frame once the rate reaches the cap, so
    // 25 × 20 000 B = 4 Mbit/s of payload, with the link far from full.
    let mut f = udp_prague();
    f["fps"] = json!(25);
    f["frame_budget_ns"] = json!(20 * MS);
    f["max_rate_bps"] = json!(8 * MBIT);
    let mut sc = scenario(100, json!({"kind": "dualpi2"}), vec![f], 30);
    sc["warmup_ns"] = json!(15 * SEC);
    let r = run(&sc);
    let g = r.flows[0].goodput_mbps;
    assert!((g - 4.0).abs() < 0.04, "goodput {g} Mbit/s, expected 4.0");
    assert_eq!(r.flows[0].drops, 0);
}

#[test]
fn deterministic_per_seed() {
    let mut sc = scenario(100, json!({"kind": "dualpi2"}), vec![udp_prague(), tcp("cubic", 10)], 5);
    sc["start_jitter_ns"] = json!(5 * MS);
    let a = serde_json::to_string(&run(&sc)).unwrap();
    assert_eq!(a, serde_json::to_string(&run(&sc)).unwrap(), "same seed, same results");
    sc["seed"] = json!(2);
    assert_ne!(a, serde_json::to_string(&run(&sc)).unwrap(), "the seed moves the start jitter");
}

#[test]
fn bad_input_names_the_field() {
    for (field, value, says) in [
        ("max_packet_bytes", json!(100), "flows[0].max_packet_bytes: 100 is out of range (allowed 150..=65507)"),
        ("fps", json!(300), "flows[0].fps: 300 is out of range"),
        ("max_rate_bps", json!(1), "flows[0].max_rate_bps: 1 is out of range"),
        (
            "receiver_wake_latency_ns",
            json!(2 * SEC),
            "flows[0].receiver_wake_latency_ns: 2000000000 is out of range (allowed 0..=1000000000",
        ),
    ] {
        let mut f = udp_prague();
        f[field] = value;
        let cfg: l4slab_core::ScenarioConfig =
            serde_json::from_value(scenario(100, json!({"kind": "dualpi2"}), vec![f], 1)).unwrap();
        let e = l4slab_core::run(&cfg).unwrap_err();
        assert!(e.contains(says), "{e}");
    }
}

/// Heap allocations of a 10-s run of one bulk and one RT UDP-Prague flow at `rate_mbit`, and
/// the bottleneck's packets.
fn allocations(rate_mbit: u64) -> (u64, u64) {
    let mut rt = udp_prague();
    rt["fps"] = json!(50);
    // The RT flow's programs wake late: their batched reads reuse two vectors.
    rt["sender_wake_latency_ns"] = json!(100_000);
    rt["receiver_wake_latency_ns"] = json!(100_000);
    let mut sc = scenario(rate_mbit, json!({"kind": "dualpi2", "limit_packets": 10000}), vec![udp_prague(), rt], 10);
    sc["bin_ns"] = json!(100 * MS);
    let cfg: l4slab_core::ScenarioConfig = serde_json::from_value(sc).unwrap();
    let before = common::counting_alloc::allocations_so_far();
    let r = l4slab_core::run(&cfg).unwrap();
    (common::counting_alloc::allocations_so_far() - before, r.bottleneck.qdisc.sent_packets)
}

#[test]
fn the_hot_loop_allocates_nothing_per_packet() {
    let (few, few_pkts) = allocations(100);
    let (many, many_pkts) = allocations(400);
    assert!(many_pkts > 2 * few_pkts, "packets {few_pkts} -> {many_pkts}");
    // Even one allocation per 1 000 extra packets would be hundreds.
    assert!(many.saturating_sub(few) <= 64, "{few} -> {many} allocations for {} more packets", many_pkts - few_pkts);
}
