//! The hot loop allocates nothing per packet: with the same flows, bins and duration,
//! a run that moves four times the packets makes (nearly) the same number of heap
//! allocations. Only buffers that grow with the window (the retransmit ring, queues
//! sized by what they hold) may add a few doublings. Checked with every per-packet
//! path of a bulk run on: CUBIC and Prague (AccECN), a DualPI2 bottleneck, and both
//! hosts' late timers (`net/host_timer.rs`); and loss recovery in a tail-drop FIFO with
//! compressed SACKs and BBRv2's GSO skbs. Counted per thread by the test binary's counting global allocator
//! (`common/counting_alloc.rs`).

use crate::common::counting_alloc::allocations_so_far;

use l4slab_core::{run, ScenarioConfig};
use serde_json::json;

const S: u64 = 1_000_000_000;

/// Heap allocations of one run of `cfg`, and its bottleneck packets.
fn counted(cfg: &ScenarioConfig) -> (u64, u64) {
    let before = allocations_so_far();
    let r = run(cfg).unwrap();
    (allocations_so_far() - before, r.bottleneck.qdisc.sent_packets)
}

/// Four times the rate, four times the packets, and at most `max_extra` more allocations
/// (64 unless a case says why more): even one allocation per 1 000 packets would be about
/// 250 more (≈ 250 000 more packets).
fn assert_flat(what: &str, scenario: fn(u64) -> (u64, u64)) {
    assert_flat_within(what, scenario, 64)
}

fn assert_flat_within(what: &str, scenario: fn(u64) -> (u64, u64), max_extra: u64) {
    let (few, few_pkts) = scenario(100);
    let (many, many_pkts) = scenario(400);
    assert!(many_pkts > 3 * few_pkts, "{what}: packets {few_pkts} -> {many_pkts}");
    let extra = many.saturating_sub(few);
    eprintln!("{what}: allocations {few} ({few_pkts} packets) -> {many} ({many_pkts} packets)");
    assert!(extra <= max_extra, "{what}: {extra} more allocations for {} more packets", many_pkts - few_pkts);
}

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
    counted(&cfg)
}

#[test]
fn four_times_the_packets_make_no_more_than_a_few_more_allocations() {
    assert_flat("dumbbell", allocations);
}

/// The same with a two-hop chain whose links change over time and drop, jitter and
/// batch packets (`net/link_model.rs`): the rate schedule's steps, the wire model's
/// draws and the second hop's measurement allocate nothing per packet either.
fn chain_allocations(rate_mbit: u64) -> (u64, u64) {
    let flow = |cc: &str| json!({"kind": "tcp", "cc": cc, "rtt_ns": 10_000_000u64, "receiver_ecn": 3});
    let hop = |r: u64| {
        json!({"rate_bps": r * 1_000_000, "qdisc": {"kind": "dualpi2", "limit_packets": 10000},
               "delay_ns": 1_000_000u64, "jitter": {"jitter_ns": 200_000u64},
               // Rare enough that the flows still scale with the rate (Mathis: ~1 Gbit/s at 1e-6).
               "loss": {"model": "gemodel", "p": 0.000001, "r": 0.5, "bad_loss": 1.0, "good_loss": 0.0},
               "aggregate": {"interval_ns": 1_000_000u64, "max_bytes": 1_000_000u64}})
    };
    let mut first = hop(rate_mbit);
    first["rate_schedule"] =
        json!([{"at_ns": 3 * S, "rate_bps": rate_mbit * 500_000}, {"at_ns": 6 * S, "rate_bps": rate_mbit * 1_000_000}]);
    let cfg: ScenarioConfig = serde_json::from_value(json!({
        "seed": 3, "duration_ns": 10 * S, "bin_ns": 100_000_000u64,
        "bottleneck": first,
        "topology": {"kind": "chain", "hops": [hop(2 * rate_mbit)]},
        "flows": [flow("cubic"), flow("prague")],
    }))
    .unwrap();
    counted(&cfg)
}

#[test]
fn a_changing_lossy_chain_allocates_nothing_per_packet() {
    assert_flat("chain", chain_allocations);
}

/// The loss-recovery path of a shared tail-drop FIFO (1 BDP): SACK compression with the
/// receiving kernel's timer, its flush and the AccECN option beside SACK blocks
/// (`tcp/receiver.rs`), GSO skbs with BBRv2's skb-wide send-time flight (`tcp/output.rs`),
/// Prague's recovery, allocate nothing per packet either.
fn fifo_loss_allocations(rate_mbit: u64) -> (u64, u64) {
    let flow = |cc: &str| {
        json!({"kind": "tcp", "cc": cc, "rtt_ns": 10_000_000u64, "receiver_ecn": 3, "tso": true,
               "tso_defer": true, "receiver_sack_compression": "kernel"})
    };
    let cfg: ScenarioConfig = serde_json::from_value(json!({
        "seed": 3, "duration_ns": 10 * S, "bin_ns": 100_000_000u64,
        "bottleneck": {"rate_bps": rate_mbit * 1_000_000,
                       "qdisc": {"kind": "bfifo", "limit_bytes": rate_mbit * 1_250}},
        "flows": [flow("bbr2"), flow("prague"), flow("cubic")],
    }))
    .unwrap();
    counted(&cfg)
}

/// Three flows' window-sized buffers (retransmit rings, out-of-order queues, SACK tables)
/// and the 1-BDP FIFO's ring double as the window grows with the rate: measured +7, +25,
/// +38 and +33 allocations for each doubling of the rate from 50 to 800 Mbit/s (524 to 627),
/// which does not grow with the packets (41 k to 657 k); one allocation per 1 000 packets
/// would add 80-330 per doubling. Hence 96 for the quadrupling (measured 63).
#[test]
fn tail_drop_recovery_with_compressed_sacks_allocates_nothing_per_packet() {
    assert_flat_within("fifo loss", fifo_loss_allocations, 96);
}
