//! BBRv3 scenarios (google/bbr v3 net/ipv4/tcp_bbr.c) at 100 Mbit/s.
mod common;
use common::*;
use serde_json::{json, Value};

fn bbr3(rtt_ms: u64, ecn_low: bool) -> Value {
    let mut f = tcp("bbr3", rtt_ms);
    f["ecn"] = json!(1);
    f["ecn_low"] = json!(ecn_low);
    f
}

#[test]
#[ignore]
fn explore() {
    let bdp = |rtt_ms: u64| 100 * MBIT / 8 * rtt_ms / 1000;
    for (rtt, ecn_low, q) in [
        (10u64, false, bfifo(4 * bdp(10))),
        (2, true, json!({"kind": "fq", "orphan_mask": 0, "ce_threshold_ns": MS})),
        (2, false, json!({"kind": "fq", "orphan_mask": 0, "ce_threshold_ns": MS})),
        (10, true, json!({"kind": "fq", "orphan_mask": 0, "ce_threshold_ns": MS})),
        (10, false, bfifo(bdp(10) / 2)),
    ] {
        let t = std::time::Instant::now();
        let r = run(&scenario(100, q, vec![bbr3(rtt, ecn_low)], 30));
        let f = &r.flows[0];
        println!(
            "rtt {rtt} ecn_low {ecn_low}: util {:.4} goodput {:.2} sojourn mean {:.3} p99 {:?} drops {} marks {} ce {} retrans {} ecn {} cwnd {} wall {:?} events {}",
            r.bottleneck.utilisation, f.goodput_mbps, r.bottleneck.sojourn_ms.mean, r.bottleneck.sojourn_ms, r.bottleneck.drops, r.bottleneck.marks, f.ce_packets, f.retransmits, f.ecn_mode, f.final_cwnd, t.elapsed(), r.events
        );
    }
}
