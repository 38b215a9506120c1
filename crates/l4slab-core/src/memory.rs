//! What a run holds in memory, from the sizes of the engine's own types and the
//! capacities its constructors ask for: one place for these facts. The front end's peak
//! estimate (`python/l4slab/memory.py`) reads [`sizes`] through the schema's `memory`;
//! `tests/memory_sizes.rs` checks them against what building a run allocates (the test
//! binary's counting allocator), and that the engine's coarse preallocation bound
//! (`config::PER_FLOW_STATE_BYTES`) stays above a flow's derived state.

use std::mem::size_of;

use crate::config::{
    BOTTLENECK_SERIES, CAPTURE_RECORD_BYTES, CC_STATE_SERIES_BYTES, PER_FLOW_SERIES, SOJOURN_RECORD_BYTES,
};
use crate::net::link::Link;
use crate::net::FlowRoutes;
use crate::results::FlowSummary;

/// Bytes one flow (a TCP sender and receiver) holds in the engine once the run is
/// built, their congestion controls' state and GRO aside ([`cc_state_bytes`],
/// [`gro_bytes`]), its per-bin series aside (8 bytes a value, by the bin): the sender
/// (struct and retransmit queue), the receiver (struct and out-of-order queue), its
/// slot in the flow table, the two NIC links and routes `attach_flow` gives it and the
/// recorder's record of it. What the run adds later (its summary in the results,
/// [`flow_summary_bytes`]; timer events and buffers growing with the window) is not
/// counted here.
pub fn flow_state_bytes() -> usize {
    crate::tcp::sender::sender_state_bytes()
        + crate::tcp::receiver::receiver_state_bytes(false)
        + crate::sim::FLOW_SLOT_BYTES
        + 2 * size_of::<Link>()
        + size_of::<Option<FlowRoutes>>()
        + crate::trace::recorder::flow_record_bytes()
}

/// Bytes of a flow's summary in the results.
pub fn flow_summary_bytes() -> usize {
    size_of::<FlowSummary>()
}

/// Bytes of the heap a receiver's GRO batch takes (`tcp::gro::Gro`).
pub fn gro_bytes() -> usize {
    crate::tcp::gro::Gro::heap_bytes()
}

/// The state of congestion control `name` with its default parameters (the box a
/// sender or receiver holds), or None for a name the registry does not know.
pub fn cc_state_bytes(name: &str) -> Option<usize> {
    crate::cc::build(name, None).ok().map(|cc| std::mem::size_of_val(&*cc))
}

/// The sizes the schema publishes (`memory`): series per flow and for the bottleneck
/// (8 bytes a value a bin), the model-state series of a CC that reports one, a
/// sojourn-trace record, a capture record, a flow's state, each CC's state and GRO's.
pub fn sizes() -> serde_json::Value {
    let ccs: serde_json::Map<String, serde_json::Value> = crate::cc::specs()
        .iter()
        .filter_map(|c| cc_state_bytes(c.name).map(|b| (c.name.to_string(), b.into())))
        .collect();
    serde_json::json!({
        "flow_series": PER_FLOW_SERIES,
        "bottleneck_series": BOTTLENECK_SERIES,
        "series_value_bytes": size_of::<f64>(),
        "cc_state_series_bytes": CC_STATE_SERIES_BYTES,
        "sojourn_record_bytes": SOJOURN_RECORD_BYTES,
        "capture_record_bytes": CAPTURE_RECORD_BYTES,
        "flow_state_bytes": flow_state_bytes(),
        "flow_summary_bytes": flow_summary_bytes(),
        "gro_bytes": gro_bytes(),
        "cc_state_bytes": ccs,
    })
}
