//! TCP Prague's first CE mark in slow start, end to end (docs/fidelity-prague.md, "Prague's
//! first CE in slow start").
//!
//! Prague halves its fractional window on the first CE ever reported
//! (tcp_prague.c:prague_update_cwnd, `alpha_mode` 0); if the same ACK also acks unmarked
//! segments it then runs `tcp_slow_start` on them and re-syncs `frac_cwnd` to the grown
//! `snd_cwnd`, so the halving is lost and slow start goes on (cc/prague/tests.rs,
//! `first_ce_halves_frac_with_alpha_mode_0`). Which it is depends on the receiver: an ACK
//! per segment always ends slow start at the first mark — on the kernel backend (Linux
//! 7.2, the project's Prague, `delayed_ack = false` as `quickack 1`) in 8 of 8 runs at 5,
//! 10, 15 and 20 ms.

use crate::common;
use common::*;
use serde_json::json;

/// Prague alone in fq_codel (Linux defaults, ECN) at 100 Mbit/s, `rtt_ms`.
fn prague_in_fq_codel(rtt_ms: u64, delayed_ack: bool) -> l4slab_core::RunResults {
    let qdisc = json!({"kind": "fq_codel", "limit_packets": 10240, "flows": 1024, "quantum_bytes": 1514,
        "target_ns": 5 * MS, "interval_ns": 100 * MS, "ecn": true, "memory_limit_bytes": 32 << 20, "drop_batch_size": 64});
    let flow =
        json!({"kind": "tcp", "cc": "prague", "rtt_ns": rtt_ms * MS, "receiver_ecn": 3, "delayed_ack": delayed_ack});
    let mut s = scenario(100, qdisc, vec![flow], 1);
    s["duration_ns"] = json!(600 * MS);
    s["bin_ns"] = json!(10 * MS);
    run(&s)
}

/// cwnd 30 ms after the bin with the first mark, against cwnd in that bin, and the largest.
fn after_first_mark(r: &l4slab_core::RunResults) -> (f64, f64, f64) {
    let s = &r.flow_series[0];
    let first = s.ce_packets.iter().position(|&c| c > 0).expect("a CE mark");
    let max = s.cwnd.iter().cloned().fold(0.0, f64::max);
    (s.cwnd[first], s.cwnd[(first + 3).min(s.cwnd.len() - 1)], max)
}

#[test]
fn with_an_ack_per_segment_the_first_ce_ends_prague_slow_start() {
    for rtt_ms in [5, 10, 15, 20] {
        let r = prague_in_fq_codel(rtt_ms, false);
        let (at_mark, later, max) = after_first_mark(&r);
        assert!(later < at_mark, "{rtt_ms} ms: cwnd {at_mark} at the first mark, {later} 30 ms later");
        assert!(max <= at_mark + 100.0, "{rtt_ms} ms: cwnd grew to {max} after {at_mark}");
        assert_eq!(r.flows[0].drops, 0, "{rtt_ms} ms");
    }
}

/// With delayed ACKs the first mark can ride on a two-segment ACK: at 10 ms the engine's
/// strict pairing puts it there and slow start goes on (the kernel: in some boots, its
/// receive-window autotuning ACKing runs of single segments; docs/fidelity-prague.md).
#[test]
fn with_delayed_acks_a_first_ce_on_a_two_segment_ack_does_not_end_slow_start() {
    let r = prague_in_fq_codel(10, true);
    let (at_mark, later, _) = after_first_mark(&r);
    assert!(later > at_mark, "cwnd {at_mark} at the first mark, {later} 30 ms later");
}
