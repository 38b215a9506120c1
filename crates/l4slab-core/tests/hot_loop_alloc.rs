//! The hot loop allocates nothing per packet: with the same flows, bins and duration,
//! a run that moves four times the packets makes (nearly) the same number of heap
//! allocations. Only buffers that grow with the window (the retransmit ring, queues
//! sized by what they hold) may add a few doublings. Checked with every per-packet
//! path of a bulk run on: CUBIC and Prague (AccECN), a DualPI2 bottleneck, and both
//! hosts' late timers (`net/host_timer.rs`). Counted per thread by the test binary's counting global allocator
//! (`common/counting_alloc.rs`).

use crate::common::counting_alloc::allocations_so_far;

use l4slab_core::{run, ScenarioConfig};
use serde_json::json;

const S: u64 = 1_000_000_000;

/// Heap allocations of a 10-s run at `rate_mbit`, and its bottleneck packets.
fn allocations(rate_mbit: u64) -> (u64, u64) {
    let flow = |cc: &str| json!({"kind": "tcp", "cc": cc, "rtt_ns": 10_000_000u64, "receiver_ecn": 3});
    let cfg: ScenarioConfig = serde_json::from_value(json!({
        "seed": 3, "duration_ns": 10 * S, "bin_ns": 100_000_000u64,
        "bottleneck": {"rate_bps": rate_mbit * 1_000_000, "timer_latency_ns": 5_000,
                       "qdisc": {"kind": "dualpi2", "limit_packets": 10000}},
        "delay_node_timer_latency_ns": 5_000,
        "flows": [flow("cubic"), flow("prague")],
    }))
    .unwrap();
    let before = allocations_so_far();
    let r = run(&cfg).unwrap();
    let n = allocations_so_far() - before;
    (n, r.bottleneck.qdisc.sent_packets)
}

#[test]
fn four_times_the_packets_make_no_more_than_a_few_more_allocations() {
    let (few, few_pkts) = allocations(100);
    let (many, many_pkts) = allocations(400);
    assert!(many_pkts > 3 * few_pkts, "packets {few_pkts} -> {many_pkts}");
    let extra = many.saturating_sub(few);
    eprintln!("allocations {few} ({few_pkts} packets) -> {many} ({many_pkts} packets)");
    // ≈ 250 000 more packets: even one allocation per 1 000 packets would be 250.
    assert!(extra <= 64, "{extra} more allocations for {} more packets", many_pkts - few_pkts);
}
