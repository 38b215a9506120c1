//! fq on the sending host (`fq_pacing`): TCP hands skbs down at once with their EDT
//! departure time and fq sends them then (net/sched/sch_fq.c); TCP Small Queues bounds
//! what waits there (net/ipv4/tcp_output.c:tcp_small_queue_check). Packets held by fq
//! count in `packets_out`, so a flow paced at cwnd/srtt still fills its cwnd — and a
//! scalable CC keeps probing (the DualQ testbed ran fq on every host: fidelity case
//! dualq-alone-5ms).

use crate::common;
use common::*;
use serde_json::json;

/// `prague-v06` alone over DualPI2 (`any_ect`), 40 Mbit/s, 5 ms, as the DualQ testbed, with
/// its 5.10 receivers (the `dualq-*` studies' `receiver_rcvbuf`): they delay the ACK of a
/// full-sized PSH segment. (A 6.6 or later receiver ACKs each GSO skb's last segment at
/// once, `tcp_input.c:tcp_measure_rcv_mss`; with it the internally paced flow below does
/// not settle but is marked ~180 times a second, α ≈ 0.055, utilisation 1.000.)
fn dualq_alone(fq: bool) -> serde_json::Value {
    let mut flow = tcp("prague-v06", 5);
    flow["fq_pacing"] = json!(fq);
    flow["receiver_rcvbuf"] = json!("5.10");
    flow["receiver_ecn"] = json!(3); // the receiver accepts AccECN (tcp_ecn=3)
    flow["cc_params"] = json!({"rtt_scaling": "rate", "rtt_target_us": 25_000, "rtt_transition": 500});
    let mut s = scenario(40, json!({"kind": "dualpi2", "ecn_mask": "any_ect"}), vec![flow], 30);
    s["bin_ns"] = json!(1_000 * MS);
    s
}

#[test]
fn with_fq_on_the_host_prague_keeps_probing_and_is_marked_all_run() {
    let r = run(&dualq_alone(true));
    let marks = &r.flow_series[0].ce_packets;
    // No stall: CE marks in every second after the first (the testbed: 6.45 % of packets).
    assert!(marks[1..].iter().all(|&m| m > 0), "seconds without a mark: {marks:?}");
    let f = &r.flows[0];
    let ce = f.ce_packets as f64 / f.packets_sent as f64;
    assert!((0.03..=0.10).contains(&ce), "CE fraction {ce}");
    assert!(r.bottleneck.utilisation >= 0.99, "utilisation {}", r.bottleneck.utilisation);
}

#[test]
fn internal_pacing_alone_settles_below_the_step_without_marks() {
    // Without fq the CC paces inside TCP (tcp_pacing_check holds the send loop): in flight stays
    // at the paced amount below cwnd, the flow is not cwnd-limited and stops growing under the
    // 1 ms step — the contrast that makes the host's qdisc matter.
    let r = run(&dualq_alone(false));
    let marks = &r.flow_series[0].ce_packets;
    let late: u64 = marks[10..].iter().sum();
    assert_eq!(late, 0, "marks after 10 s: {marks:?}");
}

#[test]
fn fq_pacing_keeps_cubic_rate_and_queue_as_internal_pacing_would() {
    // CUBIC over a 2-BDP FIFO: fq pacing changes where packets wait on the host, not the
    // shared outcome: the link stays full and the queue bounded by the buffer.
    let mut a = tcp("cubic", 10);
    a["fq_pacing"] = json!(true);
    let r = run(&scenario(100, bfifo(250_000), vec![a.clone(), a], 20));
    assert!(r.bottleneck.utilisation >= 0.97, "utilisation {}", r.bottleneck.utilisation);
    assert!(r.jain_index >= 0.9, "jain {}", r.jain_index);
    assert!(r.bottleneck.sojourn_ms.max <= 20.3, "max sojourn {}", r.bottleneck.sojourn_ms.max);
}
