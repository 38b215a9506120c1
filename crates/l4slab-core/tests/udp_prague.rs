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

/// The receiving program's wake-up as a quiet 2-core VM measured it (`l4slab-udp-prague`
/// recv.json `wake_us`, pooled: P0 1.5 µs, P10 11.5, P50 27.5, P90 68.5, P99 116.5), as
/// 101 quantiles (1 % steps, linear between those points) ending at the trials' maximum,
/// 4.2 ms: a program's first read.
fn quiet_receiver(tail: bool) -> l4slab_core::RunResults {
    let points = [(0.0, 1.5), (10.0, 11.5), (50.0, 27.5), (90.0, 68.5), (99.0, 116.5)];
    let at = |p: f64| {
        let w = points.windows(2).find(|w| p <= w[1].0).unwrap();
        w[0].1 + (p - w[0].0) / (w[1].0 - w[0].0) * (w[1].1 - w[0].1)
    };
    let mut q: Vec<u64> = (0..=99).map(|k| (at(k as f64) * 1000.0) as u64).collect();
    q.push(4_200_000);
    let mut f = udp_prague();
    f["receiver_wake_quantiles_ns"] = json!(q);
    if tail {
        // The top 1 % of a 40 000-wake trial: 400 samples from 116.5 to 300 µs, and the
        // one of 4.2 ms.
        let t: Vec<u64> = (0..400).map(|k| 116_500 + k * 183_500 / 399).chain([4_200_000]).collect();
        f["receiver_wake_tail_quantiles_ns"] = json!(t);
    }
    let mut sc = scenario(100, json!({"kind": "dualpi2"}), vec![f], 12);
    sc["warmup_ns"] = json!(5 * SEC);
    run(&sc)
}

#[test]
fn one_rare_slow_read_stalls_the_model_only_as_often_as_it_happened() {
    // Drawn evenly across the top 1 % step up to the 4.2-ms maximum, one in 200 of the
    // receiver's wake-ups stalls it ≥ 2 ms (0.5 % of 40 000: 200 stalls where the trial
    // had one): the ACKs stop, the link idles, the batch that follows overshoots the
    // 1-ms step. Resolved by the tail, the maximum keeps its weight of 1 in 40 000 and
    // the L queue stays near the ideal host's (0.737 ms, 97.1 Mbit/s). Seeds 1-3: L mean
    // 0.35-0.38 ms and 91.3 Mbit/s even, 0.73 ms and 97.1 with the tail (0.73 with the
    // maximum cut to 300 µs).
    let (even, tail) = (quiet_receiver(false), quiet_receiver(true));
    let ((m_even, _), (m_tail, _)) = (l_queue(&even), l_queue(&tail));
    let (g_even, g_tail) = (even.flows[0].goodput_mbps, tail.flows[0].goodput_mbps);
    assert!(m_tail > 0.70 && m_even < m_tail - 0.1, "L mean {m_even} (even) vs {m_tail} ms (tail)");
    assert!(g_tail > 96.8 && g_even < g_tail - 0.5, "goodput {g_even} vs {g_tail} Mbit/s");
}

#[test]
fn a_busy_reader_spreads_its_batch() {
    // The receiving program woken Exp(150 µs) late answers a batch one datagram per busy
    // time instead of at one instant; busy 30 µs a datagram (Exp) is far shorter than the
    // 115-µs packet spacing at 100 Mbit/s, so few batches form and the L queue barely
    // moves (0.593 -> 0.588 ms, seeds 1-3); the mark rate rises a little (2.69 -> 2.87 %).
    let base = |busy: u64| {
        let mut f = udp_prague();
        f["receiver_wake_latency_ns"] = json!(150_000);
        f["receiver_busy_time_ns"] = json!(busy);
        let mut sc = scenario(100, json!({"kind": "dualpi2"}), vec![f], 12);
        sc["warmup_ns"] = json!(5 * SEC);
        run(&sc)
    };
    let (at_once, busy) = (base(0), base(30_000));
    let ((m0, _), (m1, _)) = (l_queue(&at_once), l_queue(&busy));
    assert!((m0 - m1).abs() < 0.05, "L mean {m0} -> {m1} ms");
    assert_ne!(serde_json::to_string(&at_once).unwrap(), serde_json::to_string(&busy).unwrap());
    assert_eq!(busy.flows[0].drops, 0);
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
        (
            "receiver_busy_tail_quantiles_ns",
            json!([1000, 2000]),
            "flows[0].receiver_busy_tail_quantiles_ns: given without receiver_busy_quantiles_ns",
        ),
        ("sender_busy_time_ns", json!(2 * SEC), "flows[0].sender_busy_time_ns: 2000000000 is out of range"),
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
    // The RT flow's programs wake late: their batched reads reuse two vectors; the bulk
    // flow's are busy with each datagram (one read at a time from the same vectors).
    rt["sender_wake_latency_ns"] = json!(100_000);
    rt["receiver_wake_latency_ns"] = json!(100_000);
    let mut bulk = udp_prague();
    bulk["receiver_wake_quantiles_ns"] = json!([10_000, 30_000, 200_000]);
    bulk["receiver_wake_tail_quantiles_ns"] = json!([100_000, 200_000]);
    bulk["receiver_busy_time_ns"] = json!(20_000);
    bulk["sender_busy_time_ns"] = json!(10_000);
    let mut sc = scenario(rate_mbit, json!({"kind": "dualpi2", "limit_packets": 10000}), vec![bulk, rt], 10);
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
