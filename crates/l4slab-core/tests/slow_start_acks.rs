//! Slow start against the receiver: which segments its ACKs cover while its buffer
//! autotunes, what that decides for TCP Prague's first CE mark, and the window it
//! advertises (docs/fidelity-prague.md, "The first CE mark in slow start" and "The
//! receive window").
//!
//! Prague halves its fractional window on the first CE ever reported
//! (tcp_prague.c:prague_update_cwnd, `alpha_mode` 0), but if the same ACK also acks
//! unmarked segments it then runs `tcp_slow_start` on them and re-syncs `frac_cwnd` to the
//! grown `snd_cwnd`: the halving is lost and slow start goes on (cc/prague/tests.rs,
//! `first_ce_halves_frac_with_alpha_mode_0`). A Linux receiver ACKs every second full
//! segment, but every segment while receive-buffer autotuning raises `rcv_ssthresh`
//! (tcp_input.c:tcp_grow_window sets `icsk_ack.quick |= 1`), which it does after each DRS
//! step (tcp_rcv_space_adjust → tcp_rcvbuf_grow) until `sk_rcvbuf` reaches `tcp_rmem[2]`.
//! The kernel backend (Linux 7.2, tcp_rmem[2] 32 MiB, Prague alone in fq_codel at
//! 100 Mbit/s, 3 s): the first mark ends slow start at 5, 10, 15 and 20 ms. Where slow
//! start does go on (the guest's RAM-capped 3.7 MB tcp_rmem[2] at 5 and 10 ms) the
//! advertised window stops it without a loss (cwnd 3 188, no retransmission).

use crate::common;
use common::*;
use serde_json::json;

/// Prague alone in fq_codel (Linux defaults, ECN) at 100 Mbit/s, `rtt_ms`.
fn prague_in_fq_codel(rtt_ms: u64, delayed_ack: bool, duration_ms: u64) -> l4slab_core::RunResults {
    let qdisc = json!({"kind": "fq_codel", "limit_packets": 10240, "flows": 1024, "quantum_bytes": 1514,
        "target_ns": 5 * MS, "interval_ns": 100 * MS, "ecn": true, "memory_limit_bytes": 32 << 20, "drop_batch_size": 64});
    let flow =
        json!({"kind": "tcp", "cc": "prague", "rtt_ns": rtt_ms * MS, "receiver_ecn": 3, "delayed_ack": delayed_ack});
    let mut s = scenario(100, qdisc, vec![flow], 1);
    s["duration_ns"] = json!(duration_ms * MS);
    s["bin_ns"] = json!(10 * MS);
    run(&s)
}

/// cwnd in the bin with the first mark, 30 ms later, and the largest.
fn after_first_mark(r: &l4slab_core::RunResults) -> (f64, f64, f64) {
    let s = &r.flow_series[0];
    let first = s.ce_packets.iter().position(|&c| c > 0).expect("a CE mark");
    let max = s.cwnd.iter().cloned().fold(0.0, f64::max);
    (s.cwnd[first], s.cwnd[(first + 3).min(s.cwnd.len() - 1)], max)
}

/// Before the first mark (fq_codel's first CE comes ≈ 160 ms in at 10 ms): the kernel's
/// receiver sent 863 ACKs for 1 051 segments (0.82 per segment: 675 alone, 188 pairs); one
/// ACK per two segments past the quick ACKs would be ≈ 0.51.
#[test]
fn a_linux_receiver_acks_most_slow_start_segments_alone_while_its_window_grows() {
    let r = prague_in_fq_codel(10, true, 160);
    let f = &r.flows[0];
    assert_eq!(f.ce_packets, 0, "no mark yet");
    let received = f.bytes_delivered as f64 / f.mean_payload_bytes;
    assert!(received > 800.0, "slow start at 100 Mbit/s: {received} segments");
    let ratio = f.acks_sent as f64 / received;
    assert!((0.72..=0.92).contains(&ratio), "ACKs per segment {ratio:.3} ({} / {received})", f.acks_sent);
}

/// With delayed ACKs the first CE ends slow start: within 30 ms of the bin with the first
/// mark cwnd has come down, and no packet is lost (without the receiver's autotuning the
/// engine's strict ACK pairing put the first mark on a two-segment ACK at 12–18 ms and
/// cwnd grew to ≈ 10 000 packets, past fq_codel's 10 240-packet limit, into an RTO).
#[test]
fn with_delayed_acks_the_first_ce_ends_prague_slow_start() {
    for rtt_ms in [5, 10, 12, 15, 18, 20] {
        let r = prague_in_fq_codel(rtt_ms, true, 600);
        let (at_mark, later, max) = after_first_mark(&r);
        assert!(later < at_mark, "{rtt_ms} ms: cwnd {at_mark} at the first mark, {later} 30 ms later");
        assert!(max <= at_mark + 100.0, "{rtt_ms} ms: cwnd grew to {max} after {at_mark}");
        assert_eq!(r.flows[0].drops, 0, "{rtt_ms} ms");
    }
}

/// An ACK per segment always ends slow start at the first mark (kernel, `quickack 1`: 8 of
/// 8 runs at 5, 10, 15 and 20 ms).
#[test]
fn with_an_ack_per_segment_the_first_ce_ends_prague_slow_start() {
    for rtt_ms in [5, 10, 15, 20] {
        let r = prague_in_fq_codel(rtt_ms, false, 600);
        let (at_mark, later, max) = after_first_mark(&r);
        assert!(later < at_mark, "{rtt_ms} ms: cwnd {at_mark} at the first mark, {later} 30 ms later");
        assert!(max <= at_mark + 100.0, "{rtt_ms} ms: cwnd grew to {max} after {at_mark}");
        assert_eq!(r.flows[0].drops, 0, "{rtt_ms} ms");
    }
}

/// Reno alone, 100 Mbit/s, 10 ms, a 4 000-packet FIFO (480 ms), `duration_ms`: (max sRTT
/// ms, drops, ACKs per segment received).
fn reno_in_a_deep_fifo(flow_extra: serde_json::Value, duration_ms: u64) -> (f64, u64, f64) {
    let mut flow = tcp("reno", 10);
    for (k, v) in flow_extra.as_object().unwrap() {
        flow[k] = v.clone();
    }
    let mut s = scenario(100, json!({"kind": "pfifo", "limit_packets": 4000}), vec![flow], 1);
    s["duration_ns"] = json!(duration_ms * MS);
    s["bin_ns"] = json!(10 * MS);
    let r = run(&s);
    let srtt = r.flow_series[0].srtt_ms.iter().cloned().filter(|x| x.is_finite()).fold(0.0, f64::max);
    let f = &r.flows[0];
    (srtt, f.drops, f.acks_sent as f64 / (f.bytes_delivered as f64 / f.mean_payload_bytes))
}

/// The advertised window (tcp_output.c:tcp_select_window, `__tcp_select_window`: the free
/// buffer, at most `rcv_ssthresh`) bounds slow start where the receiver's `tcp_rmem[2]`
/// does: a 6.6 receiver (6 MiB: 3.9 MB of window at 1448/2304 B per segment) holds Reno's
/// bytes in flight to ≈ 330 ms at 100 Mbit/s and a 5.15 one (half of 6 MiB, 3.1 MB) to
/// ≈ 260 ms, so a 480-ms FIFO never overflows; mainline's 32 MiB (Linux ≥ 6.16) does not,
/// and the FIFO overflows. The kernel backend (7.2), same scenario: 32 MiB, 4 088 drops;
/// 6 MiB, no drop, the sender rwnd-limited for 4.76 of 5 s at a window of 2.29 MB (sRTT
/// 191 ms: its veth skbs' truesize is ≈ 4 KB per segment, the engine's NIC buffers 2.3 KB).
#[test]
fn the_advertised_window_bounds_slow_start_at_the_receivers_tcp_rmem() {
    let (srtt, drops, _) = reno_in_a_deep_fifo(json!({"receiver_rcvbuf": "6.6"}), 5000);
    assert_eq!(drops, 0, "6.6, 6 MiB receive buffer: sRTT {srtt} ms");
    assert!((300.0..=350.0).contains(&srtt), "6.6: max sRTT {srtt} ms, want the 3.9 MB window's ≈ 330 ms");
    let (srtt, drops, _) = reno_in_a_deep_fifo(json!({"receiver_rcvbuf": "5.15"}), 5000);
    assert_eq!(drops, 0, "5.15, 6 MiB receive buffer: sRTT {srtt} ms");
    assert!((240.0..=290.0).contains(&srtt), "5.15: max sRTT {srtt} ms, want the 3.1 MB window's ≈ 260 ms");
    let (srtt, drops, _) = reno_in_a_deep_fifo(json!({}), 5000);
    assert!(drops > 500, "32 MiB receive buffer: {drops} drops, sRTT {srtt} ms");
}

/// A scenario's `rwnd` pins the window (`SO_RCVBUF`: `SOCK_RCVBUF_LOCK`): the bytes in
/// flight stay within it (1 MB: 80 ms at 100 Mbit/s), and without autotuning there are no
/// quick ACKs while the window grows: in the first 200 ms of slow start, past the 16
/// quick ACKs, one ACK per two segments, against most segments ACKed alone when the
/// receiver autotunes.
#[test]
fn a_pinned_rwnd_turns_receive_autotuning_off() {
    let (srtt, drops, _) = reno_in_a_deep_fifo(json!({"rwnd_bytes": 1_000_000}), 5000);
    assert_eq!(drops, 0);
    assert!(srtt < 95.0, "max sRTT {srtt} ms under a 1-MB window");
    let (_, _, pinned) = reno_in_a_deep_fifo(json!({"rwnd_bytes": 1_000_000}), 200);
    let (_, _, autotuned) = reno_in_a_deep_fifo(json!({}), 200);
    assert!((0.49..=0.56).contains(&pinned), "pinned: ACKs per segment {pinned:.3}");
    assert!(autotuned > 0.7, "autotuned: ACKs per segment {autotuned:.3}");
}
