//! BBRv3 scenarios (google/bbr v3 net/ipv4/tcp_bbr.c) at 100 Mbit/s, 60 s, with
//! bands from the algorithm: one flow fills the link; with the route feature
//! `ecn_low` on a 2 ms path it holds the queue near a 1 ms CE threshold, while on a
//! 10 ms path (min RTT > bbr_ecn_max_rtt_us = 5 ms) CE changes nothing; in a
//! shallow FIFO its loss rate stays below the 2 % probe threshold.
use crate::common;
use common::*;
use serde_json::{json, Value};

/// A bbr3 flow that requests ECN (net.ipv4.tcp_ecn = 1) with the route's `ecn_low` as given.
fn bbr3(rtt_ms: u64, ecn_low: bool) -> Value {
    let mut f = tcp("bbr3", rtt_ms);
    f["ecn"] = json!(1);
    f["ecn_low"] = json!(ecn_low);
    f
}

/// Bytes in one BDP at 100 Mbit/s.
fn bdp_bytes(rtt_ms: u64) -> u64 {
    100 * MBIT / 8 * rtt_ms / 1000
}

/// The PAM 2025 "FIFO+ECN" (fq with one flow bucket) with a CE threshold.
fn fifo_ce(threshold_ns: u64) -> Value {
    json!({"kind": "fq", "orphan_mask": 0, "ce_threshold_ns": threshold_ns})
}

#[test]
fn bbr3_alone_fills_the_link_at_10ms() {
    let r = run(&scenario(100, bfifo(2 * bdp_bytes(10)), vec![bbr3(10, false)], 60));
    let f = &r.flows[0];
    // PROBE_RTT costs ≈ 0.5·0.2/5 = 2 % (tcp_bbr.c comment), PROBE_BW DOWN a little more.
    assert!(r.bottleneck.utilisation >= 0.95, "utilisation {:.4}", r.bottleneck.utilisation);
    assert_eq!(f.cc, "bbr3");
    assert_eq!(f.ecn_mode, "rfc3168");
    // Paced at ≈ bw with cwnd ≤ 2 BDP (+ budget): the queue stays well below 1 BDP (10 ms).
    assert!(r.bottleneck.sojourn_ms.mean < 5.0, "mean sojourn {:.2} ms", r.bottleneck.sojourn_ms.mean);
    assert_eq!(r.bottleneck.drops, 0, "2 BDP of buffer holds cwnd_gain 2 (2.25 in UP) of BDP in flight");
}

#[test]
fn bbr3_with_ecn_low_on_a_2ms_path_holds_the_queue_near_a_1ms_ce_threshold() {
    let with = run(&scenario(100, fifo_ce(MS), vec![bbr3(2, true)], 60));
    let without = run(&scenario(100, fifo_ce(MS), vec![bbr3(2, false)], 60));
    let (s_with, s_without) = (with.bottleneck.sojourn_ms.mean, without.bottleneck.sojourn_ms.mean);
    // Loss-only, v3 keeps inflight at its quantization floor 3·tso_segs_goal ≈ 42
    // packets (tso goal ≈ 14 at 2 ms) against a BDP of ≈ 17: ≈ 2-3 ms of queue, far
    // above the threshold. With ECN usable, inflight_lo is cut by (1 − α/3) per
    // marked round and UP stops at > 50 % CE, so the queue hovers at the threshold.
    assert!(s_without > 1.5, "without ecn_low the queue sits above the threshold: {s_without:.2} ms");
    assert!(s_with <= 1.3, "with ecn_low the mean sojourn stays near 1 ms: {s_with:.2} ms");
    assert!(s_with < 0.6 * s_without, "{s_with:.2} ms vs {s_without:.2} ms");
    assert!(with.bottleneck.utilisation >= 0.9, "utilisation {:.4}", with.bottleneck.utilisation);
    let ce_share = |r: &l4slab_core::RunResults| r.flows[0].ce_packets as f64 / r.flows[0].packets_sent as f64;
    assert!(ce_share(&with) < 0.5 * ce_share(&without), "{:.3} vs {:.3}", ce_share(&with), ce_share(&without));
}

#[test]
fn bbr3_with_ecn_low_on_a_10ms_path_ignores_ce() {
    let with = run(&scenario(100, fifo_ce(MS), vec![bbr3(10, true)], 60));
    let without = run(&scenario(100, fifo_ce(MS), vec![bbr3(10, false)], 60));
    // min RTT 10 ms > bbr_ecn_max_rtt_us: never ECN-eligible, so the same packets
    // leave at the same times (no retransmissions, so ECT_PERMANENT shows nowhere).
    assert!(with.bottleneck.marks > 1000, "CE marks were there to ignore: {}", with.bottleneck.marks);
    assert_eq!(with.flows[0].retransmits, 0);
    assert_eq!(with.flows[0].goodput_mbps, without.flows[0].goodput_mbps);
    assert_eq!(with.bottleneck.sojourn_ms.mean, without.bottleneck.sojourn_ms.mean);
    assert_eq!(with.bottleneck.marks, without.bottleneck.marks);
    assert!(with.bottleneck.utilisation >= 0.95);
}

#[test]
fn bbr3_in_a_half_bdp_fifo_keeps_loss_below_the_probe_threshold() {
    let r = run(&scenario(100, bfifo(bdp_bytes(10) / 2), vec![bbr3(10, false)], 60));
    let f = &r.flows[0];
    let loss = r.bottleneck.drops as f64 / f.packets_sent as f64;
    // A probe that loses > 2 % of its flight (bbr_loss_thresh) cuts inflight_hi to
    // where the loss began, then CRUISE keeps 15 % headroom below it; probes come
    // every ≈ 63 rounds, so the long-run loss rate is a small fraction of 2 %.
    assert!(r.bottleneck.drops > 0, "probing finds the buffer's edge");
    assert!(loss < 0.005, "loss rate {:.4}", loss);
    assert!(r.bottleneck.utilisation >= 0.9, "utilisation {:.4}", r.bottleneck.utilisation);
}
