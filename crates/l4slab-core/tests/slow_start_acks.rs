//! Which segments the receiver's ACKs cover in slow start, and what that decides for
//! TCP Prague's first CE mark.
//!
//! Prague halves its fractional window on the first CE ever reported
//! (tcp_prague.c:prague_update_cwnd, `alpha_mode` 0), but if the same ACK also acks
//! unmarked segments it then runs `tcp_slow_start` on them and re-syncs `frac_cwnd`
//! to the grown `snd_cwnd`: the halving is lost, `prague_ssthresh` keeps the infinite
//! ssthresh, and slow start goes on until a loss (cc/prague/tests.rs,
//! `first_ce_halves_frac_with_alpha_mode_0`). Whether the first marked segment is ACKed
//! alone is the receiver's doing. A Linux receiver ACKs every second full segment, but
//! every segment while receive-buffer autotuning raises `rcv_ssthresh`
//! (net/ipv4/tcp_input.c:tcp_grow_window sets `icsk_ack.quick |= 1`), which it does
//! for a stretch after each DRS step (tcp_rcv_space_adjust → tcp_rcvbuf_grow) all
//! through slow start. On the kernel backend (Linux 7.2, the project's Prague, Prague
//! alone in fq_codel at 100 Mbit/s) 64 % of the segments before the first mark were
//! ACKed alone at 10 ms, and the first mark ended slow start in every run at 11–20 ms
//! (docs/fidelity.md, "Prague's first CE in slow start").

mod common;
use common::*;
use serde_json::json;

/// Prague alone in fq_codel (Linux defaults, ECN) at 100 Mbit/s, `rtt_ms`, delayed ACKs.
fn prague_in_fq_codel(rtt_ms: u64, duration_ms: u64) -> l4slab_core::RunResults {
    let qdisc = json!({"kind": "fq_codel", "limit_packets": 10240, "flows": 1024, "quantum_bytes": 1514,
        "target_ns": 5 * MS, "interval_ns": 100 * MS, "ecn": true, "memory_limit_bytes": 32 << 20, "drop_batch_size": 64});
    let flow = json!({"kind": "tcp", "cc": "prague", "rtt_ns": rtt_ms * MS, "receiver_ecn": 3});
    let mut s = scenario(100, qdisc, vec![flow], 1);
    s["duration_ns"] = json!(duration_ms * MS);
    s["bin_ns"] = json!(10 * MS);
    run(&s)
}

/// Before the first mark (fq_codel's first CE comes ≈ 160 ms in at 10 ms): the
/// kernel's receiver sent 863 ACKs for 1051 segments (0.82 per segment: 675 alone, 188
/// pairs); one ACK per two segments past the quick ACKs would be ≈ 0.51.
#[test]
fn a_linux_receiver_acks_most_slow_start_segments_alone_while_its_window_grows() {
    let r = prague_in_fq_codel(10, 160);
    let f = &r.flows[0];
    assert_eq!(f.ce_packets, 0, "no mark yet");
    let received = f.bytes_delivered as f64 / f.mean_payload_bytes;
    assert!(received > 800.0, "slow start at 100 Mbit/s: {received} segments");
    let ratio = f.acks_sent as f64 / received;
    assert!((0.72..=0.92).contains(&ratio), "ACKs per segment {ratio:.3} ({} / {received})", f.acks_sent);
}

/// The first CE ends slow start: within 30 ms of the bin with the first mark cwnd has
/// come down, and no packet is lost (before, the engine's strict ACK pairing put the
/// first mark on a two-segment ACK at 12–18 ms and cwnd grew to ≈ 9 700 packets, past
/// fq_codel's 10 240-packet limit).
#[test]
fn the_first_ce_ends_prague_slow_start_at_11_to_20_ms() {
    for rtt_ms in [12, 15, 18] {
        let r = prague_in_fq_codel(rtt_ms, 600);
        let s = &r.flow_series[0];
        let first = s.ce_packets.iter().position(|&c| c > 0).expect("a CE mark");
        let at_mark = s.cwnd[first];
        let later = s.cwnd[(first + 3).min(s.cwnd.len() - 1)];
        let max = s.cwnd.iter().cloned().fold(0.0, f64::max);
        assert!(later < at_mark, "{rtt_ms} ms: cwnd {at_mark} at the first mark, {later} 30 ms later");
        assert!(max <= at_mark + 100.0, "{rtt_ms} ms: cwnd grew to {max} after {at_mark}");
        assert_eq!(r.flows[0].drops, 0, "{rtt_ms} ms");
    }
}
