//! PSH and the receiver's ACK: the sender sets PSH on the last segment of every skb of
//! more than one segment (`tcp_output.c:__tcp_transmit_skb`, `tcp_offload.c:
//! tcp_gso_segment`), and a receiver of Linux 6.6 or later ACKs a full-sized PSH segment
//! at once (`tcp_input.c:tcp_measure_rcv_mss`, `tcp.c:tcp_cleanup_rbuf`). Checked against
//! the kernel backend (Linux 7.2.13, `l4slab run FILE --seed N --backend kernel`, seeds
//! 1–5; docs/fidelity-prague.md, "PSH and the delayed-ACK pair").

use crate::common;
use common::*;
use serde_json::json;

/// CUBIC alone, `bfifo` 1 BDP, 100 Mbit/s, 10 ms, GSO with deferral, the kernel's SACK
/// compression, 12 s, the summary from 2 s. The kernel: 0.5489–0.5491 ACKs per data
/// segment (the whole run), 6 drops from 2 s, 16 retransmissions in each of 5 runs; traced at the receiver (seed 1, 2–12 s): 9 262
/// of 81 827 data segments carry PSH and 8 399 of them are ACKed alone (the engine:
/// 9 271, 8 451). Without PSH the engine sent 0.497 ACKs per segment (every second
/// segment). Bounds: the kernel's runs ± 0.01 ACKs per segment; drops and
/// retransmissions within one of the kernel's.
#[test]
fn cubic_acks_each_gso_skbs_psh_segment_as_the_kernel() {
    let mut f = tcp("cubic", 10);
    f["tso"] = json!(true);
    f["tso_defer"] = json!(true);
    f["receiver_sack_compression"] = json!("kernel");
    let mut sc = scenario(100, bfifo(125_000), vec![f.clone()], 12);
    sc["warmup_ns"] = json!(2 * SEC);
    let r = run(&sc);
    let per_pkt = r.flows[0].acks_per_packet;
    assert!((0.539..=0.560).contains(&per_pkt), "ACKs per data segment {per_pkt} (kernel 0.5489-0.5491)");
    assert!((5..=7).contains(&r.bottleneck.drops), "drops {} (kernel 6)", r.bottleneck.drops);
    let rtx = r.flows[0].retransmits;
    assert!((15..=17).contains(&rtx), "retransmits {rtx} (kernel 16)");
    // A pre-6.6 receiver delays the PSH segment as any other: every second segment.
    f["receiver_rcvbuf"] = json!("5.15");
    sc["flows"] = json!([f]);
    let old = run(&sc).flows[0].acks_per_packet;
    assert!(old < 0.52, "ACKs per data segment with a 5.15 receiver {old}");
}
