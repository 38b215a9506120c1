//! The parking lot: N bottlenecks in series, each a copy of the scenario's
//! `bottleneck` (qdisc, bucket, host; not its delay, schedule or wire model) at its own rate (`topology.rates_bps` are hops
//! 1..), with cross traffic entering and leaving at each router.
//!
//! ```text
//!            cross 0        cross 1
//!              ↓ ↑            ↓ ↑
//! long ──▶ [hop 0: R0] ──▶ [hop 1: R1] ──▶ ...
//! ```
//!
//! A long flow crosses every hop (`hops` unset), cross traffic one (`hops = [i, i]`).
//! The links and routes are a [`Chain`]'s: what makes a parking lot is that every
//! hop is a bottleneck of the same kind, described once.

use super::chain::Chain;
use super::topology::{param, TopologyDescriptor};
use crate::config::{BottleneckConfig, MAX_RATE_BPS};

/// The parking lot's entry in `net::TOPOLOGIES`: `topology = {kind = "parking_lot",
/// rates_bps = [...]}`, the rates of hops 1...
pub const DESCRIPTOR: TopologyDescriptor = Chain::descriptor(
    "parking_lot",
    "N bottlenecks in series, each a copy of the bottleneck at its own rate; cross traffic enters and leaves at each.",
    |cfg, p| {
        let rates_bps: Vec<u64> = param(p, "rates_bps")?;
        rates_bps
            .iter()
            .enumerate()
            .map(|(i, &r)| {
                if r == 0 || r > MAX_RATE_BPS {
                    return Err(format!("topology.rates_bps[{i}]: {r} is out of range (allowed 1..={MAX_RATE_BPS})"));
                }
                // The bottleneck's queue and host; its rate schedule and wire are its own.
                Ok(BottleneckConfig {
                    rate_bps: r,
                    delay_ns: 0,
                    rate_schedule: Vec::new(),
                    loss: None,
                    jitter: None,
                    aggregate: None,
                    ..cfg.bottleneck.clone()
                })
            })
            .collect()
    },
);
