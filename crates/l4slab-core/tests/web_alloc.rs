//! Memory per web connection: a source of many short connections reuses each
//! finished connection's buffers (the sender's retransmit queue, the receiver's
//! out-of-order buffer) and the endpoints' own allocations (rebuilt in place), and
//! its records hold no per-connection strings, so the heap allocations a run makes
//! grow by a small fixed number per request (the two congestion-control states),
//! not with what each connection carried. Counted per thread by the test binary's counting global allocator (`common/counting_alloc.rs`).

use crate::common::counting_alloc::allocations_so_far;

use l4slab_core::{run, ScenarioConfig};
use serde_json::json;

const S: u64 = 1_000_000_000;

/// Heap allocations of one web run of `secs` seconds, and its request count.
fn allocations(secs: u64) -> (u64, usize) {
    // 200 requests/s of Prague and CUBIC responses (DualQ paper App. C sizes, up to 100 kB
    // so every response completes) over a 100 Mbit/s DualPI2 bottleneck.
    let web = |cc: &str| {
        json!({"kind": "web", "rate_per_s": 100.0, "cc": cc, "rtt_ns": 10_000_000u64, "receiver_ecn": 3,
               "sizes": {"alpha": 0.9, "min_bytes": 1000, "max_bytes": 100_000}})
    };
    let cfg: ScenarioConfig = serde_json::from_value(json!({
        "seed": 5, "duration_ns": secs * S, "bin_ns": 100_000_000u64,
        "bottleneck": {"rate_bps": 100_000_000u64, "qdisc": {"kind": "dualpi2", "limit_packets": 10000}},
        "flows": [], "sources": [web("prague"), web("cubic")],
    }))
    .unwrap();
    let before = allocations_so_far();
    let r = run(&cfg).unwrap();
    let n = allocations_so_far() - before;
    (n, r.requests.len())
}

#[test]
fn a_reused_connection_slot_allocates_only_its_endpoints_and_cc_states_and_keeps_fixed_rows() {
    let (a1, n1) = allocations(4);
    let (a2, n2) = allocations(8);
    assert!(n2 > n1 + 500, "{n1} then {n2} requests");
    let per_request = (a2 - a1) as f64 / (n2 - n1) as f64;
    // Per request: the sender's and receiver's CC states (2 boxes); the endpoints
    // (rebuilt in their released allocations), the retransmit queue, the out-of-order
    // buffer and the records' labels allocate nothing. Vectors that double (records,
    // results) add well under 0.5 per request over 4 s. Fresh endpoint boxes put it at
    // 4; a fresh out-of-order buffer or retransmit queue per connection, or a String
    // per record field, at 5 or more.
    eprintln!("{per_request:.3} allocations per request ({a1} for {n1}, {a2} for {n2})");
    assert!(per_request < 2.5, "{per_request:.2} allocations per request ({a1} for {n1}, {a2} for {n2})");

    // What a run keeps per finished request: its RequestRecord and its closed
    // flow's FlowSummary (`RunResults.flow_records`), fixed-size rows whose labels
    // are static strings. Bounded so a field that grows the row is a decision.
    let row = std::mem::size_of::<l4slab_core::results::RequestRecord>()
        + std::mem::size_of::<l4slab_core::results::FlowSummary>();
    eprintln!("{row} bytes per finished request");
    assert!(row <= 512, "{row} bytes per finished request");
}
