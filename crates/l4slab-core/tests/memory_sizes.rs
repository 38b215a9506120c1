//! The engine's memory facts (`l4slab_core::memory`, published in the schema and read
//! by the front end's estimate) are what a run allocates: the per-flow state derived
//! from the engine's type sizes and constructor capacities, against the bytes building
//! a run of 2N flows allocates beyond one of N (the test binary's counting allocator).
//! And a buffer that cannot be allocated is one line.

use crate::common::counting_alloc::{peak_bytes, reset_peak};
use l4slab_core::{memory, sim::Simulation, ScenarioConfig};
use serde_json::json;

/// `n` CUBIC flows at 1 Gbit/s for 1 s of 100-ms bins (`tests/python/test_memory.py`'s flows).
fn flows(n: usize) -> ScenarioConfig {
    let flow = json!({"kind": "tcp", "cc": "cubic", "rtt_ns": 10_000_000u64, "start_ns": 0});
    serde_json::from_value(json!({"seed": 1, "duration_ns": 1_000_000_000u64, "bin_ns": 100_000_000u64,
        "start_jitter_ns": 1_000_000,
        "bottleneck": {"rate_bps": 1_000_000_000u64, "burst_bytes": 1600, "access_rate_bps": 10_000_000_000u64,
                       "qdisc": {"kind": "bfifo", "limit_bytes": 2_500_000}},
        "flows": vec![flow; n]}))
    .unwrap()
}

/// Peak bytes building a run of `cfg` allocates.
fn peak(cfg: &ScenarioConfig) -> i64 {
    let base = reset_peak();
    let sim = Simulation::new(cfg).unwrap();
    let p = peak_bytes() - base;
    drop(sim);
    p
}

#[test]
fn a_flows_derived_state_is_what_a_run_allocates_per_flow() {
    let cubic = memory::cc_state_bytes("cubic").unwrap();
    // A flow's series, reserved when the run is built: 12 values a bin, 10 bins.
    let derived = memory::flow_state_bytes() + 2 * cubic + 12 * 8 * 10;
    for n in [1000usize, 4000] {
        let per_flow = (peak(&flows(2 * n)) - peak(&flows(n))) as f64 / n as f64;
        let ratio = per_flow / derived as f64;
        eprintln!("{n}->{} flows: {per_flow:.0} B a flow allocated, {derived} B derived: ratio {ratio:.2}", 2 * n);
        // Vectors growing by doubling (links, routes, events) hold up to twice their
        // entries while they move: a few hundred bytes a flow above the derived state.
        assert!((0.95..=1.15).contains(&ratio), "{per_flow:.0} B a flow allocated against {derived} B derived");
    }
}

#[test]
fn the_preallocation_bound_of_a_flow_is_above_its_derived_state() {
    let largest_cc = l4slab_core::cc::specs().iter().filter_map(|c| memory::cc_state_bytes(c.name)).max().unwrap();
    let state = memory::flow_state_bytes() + memory::flow_summary_bytes() + 2 * largest_cc + memory::gro_bytes();
    assert!((state as u64) < l4slab_core::config::PER_FLOW_STATE_BYTES, "{state} B");
}

#[test]
fn the_schema_publishes_the_memory_facts() {
    let m = l4slab_core::engine_schema().memory;
    assert_eq!(m["flow_state_bytes"], memory::flow_state_bytes());
    assert_eq!(m["flow_series"], 12);
    assert_eq!(m["sojourn_record_bytes"], 8 + 4 + 1 + 8);
    assert!(m["cc_state_bytes"]["bbr"].as_u64().unwrap() > m["cc_state_bytes"]["reno"].as_u64().unwrap());
}

#[test]
fn a_buffer_that_cannot_be_allocated_is_one_line() {
    let e = l4slab_core::guard::try_vec::<f64>(usize::MAX / 16, "the per-bin series (bin)").unwrap_err();
    assert!(e.starts_with("out of memory: the per-bin series (bin): ") && !e.contains('\n'), "{e}");
}
