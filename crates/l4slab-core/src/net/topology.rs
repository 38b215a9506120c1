//! The topology as one unit: what the event loop asks of the network's shape.
//!
//! A [`Topology`] gives each flow slot its routes (which links its packets cross in
//! each direction, `attach_flow`) and names the links to measure (`measured`: hop 0,
//! the scenario's `bottleneck`, first; their ids are `0..n`, created before any NIC,
//! so the recorder finds a link's record by its id). `net::build_topology` picks the
//! builder the scenario's `topology.kind` names from `net::TOPOLOGIES` (none: the
//! dumbbell); `sim.rs` sees only the trait. Builders share the pieces here: a shaped
//! link from its config ([`shaped_link`]), with its own random streams, rate schedule
//! and wire model, the flows' NICs ([`Nics`]), and the checks every topology needs
//! ([`check_flows`]).
//!
//! Adding a topology: one file beside `dumbbell.rs` with a type implementing
//! [`Topology`] and its `DESCRIPTOR` (a [`TopologyDescriptor`]: kind, doc, how its
//! parameters give its hops, its builder), plus `pub mod` and one line in
//! `net::TOPOLOGIES`; the scenario's `[topology]` spelling in Python.

use super::host_timer::HostTimer;
use super::link_model::{LinkModel, RateSchedule};
use super::{Direction, LinePolicy, LinkId, LinkQdisc, Network, Serialiser, ShapedQueue, Shaper};
use crate::config::{BottleneckConfig, ScenarioConfig};
use crate::rng::{self, SimRng};
use serde_json::{Map, Value};

/// A link the recorder measures, and its name in the results.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MeasuredLink {
    pub id: LinkId,
    pub name: &'static str,
}

/// What the event loop asks of a topology.
pub trait Topology {
    /// Give flow slot `flow` its NICs and routes (a reused slot may keep its NICs).
    /// `fwd_delay_ns`/`rev_delay_ns`: the flow's one-way propagation each way;
    /// `reverse`: its sender sits on the receivers' side.
    fn attach_flow(&self, net: &mut Network, flow: u32, fwd_delay_ns: u64, rev_delay_ns: u64, reverse: bool);
    /// The measured links, hop 0 (the bottleneck) first, with ids `0..n`.
    fn measured(&self) -> &[MeasuredLink];
}

/// A topology's reading of its parameters ([`TopologyDescriptor::hops`]).
pub type HopsFn = fn(&ScenarioConfig, &Map<String, Value>) -> Result<Vec<BottleneckConfig>, String>;

/// What a topology exports to be registered in `net::TOPOLOGIES`.
pub struct TopologyDescriptor {
    /// `topology.kind` in the scenario.
    pub kind: &'static str,
    pub doc: &'static str,
    /// The shaped links after `bottleneck` (hops 1..) from the topology's parameters,
    /// checked; a one-line error names the parameter (`topology.PARAM: ...`).
    pub hops: HopsFn,
    /// Build the topology over every hop (`bottleneck` first) into `net`.
    pub build: fn(&ScenarioConfig, &[BottleneckConfig], &mut Network, Nics) -> Box<dyn Topology>,
}

/// Read a topology's one parameter `name` (a `T`) from its table without `kind`: any
/// other key is refused, the error naming the parameter.
pub fn param<T: serde::de::DeserializeOwned>(params: &Map<String, Value>, name: &str) -> Result<T, String> {
    if let Some(k) = params.keys().find(|k| k.as_str() != name) {
        return Err(format!("topology: unknown field `{k}`, expected `{name}`"));
    }
    let v = params.get(name).ok_or_else(|| format!("topology: missing field `{name}`"))?;
    serde_json::from_value(v.clone()).map_err(|e| format!("topology.{name}: {e}"))
}

/// What every topology of `hops` (`bottleneck` first) checks of the flows: each
/// flow's hops are a range of them, and its forward delay covers the propagation of
/// the hops it crosses.
pub fn check_flows(cfg: &ScenarioConfig, hops: &[BottleneckConfig]) -> Result<(), String> {
    let n = hops.len();
    if !(2..=crate::config::MAX_HOPS).contains(&n) {
        return Err(format!(
            "topology: {n} hops (bottleneck included) is not allowed (allowed 2..={})",
            crate::config::MAX_HOPS
        ));
    }
    for (i, f) in cfg.flows.iter().enumerate() {
        let p = f.path();
        let [a, b] = p.hops.unwrap_or([0, n as u32 - 1]);
        if a > b || b as usize >= n {
            return Err(format!(
                "flows[{i}].hops: [{a}, {b}] is not a range of hops (allowed 0 <= first <= last <= {})",
                n - 1
            ));
        }
        let crossed: u64 = hops[a as usize..=b as usize].iter().map(|h| h.delay_ns).sum();
        if p.fwd_delay() < crossed {
            return Err(format!(
                "flows[{i}].fwd_delay_ns: {} is shorter than the propagation of the hops it crosses ({crossed} ns)",
                p.fwd_delay()
            ));
        }
    }
    Ok(())
}

/// A shaped queue from a link description (`htb rate R burst B` + child qdisc);
/// `rng` becomes its qdisc's stream, `timer_rng` its host timer's.
pub fn shaped_queue(cfg: &BottleneckConfig, mut rng: SimRng, timer_rng: SimRng) -> ShapedQueue {
    let qdisc = LinkQdisc::build(&cfg.qdisc, &mut rng);
    ShapedQueue::new(Shaper::new(cfg.rate_bps, cfg.burst_bytes), qdisc, rng)
        .with_host_timer(HostTimer::new(cfg.timer_latency_ns, timer_rng))
        .with_schedule(RateSchedule::new(cfg.rate_bps, &cfg.rate_schedule))
}

/// Add a shaped link: its queue (streams `rng`, `timer_rng`), its propagation
/// `delay_ns`, and its wire model drawn from `LinkModel(id)` of `seed`.
pub fn shaped_link(net: &mut Network, cfg: &BottleneckConfig, rng: SimRng, timer_rng: SimRng, seed: u64) -> LinkId {
    let id = net.add_link(Some(shaped_queue(cfg, rng, timer_rng)), None, cfg.delay_ns);
    if let Some(model) = LinkModel::new(cfg, rng::stream(seed, rng::Stream::LinkModel(id.0))) {
        net.set_link_model(id, model);
    }
    id
}

/// From this many flows on, NICs share delay lines: the heap then stays small
/// enough for L1, which outweighs the occasional sorted insert.
pub const SHARED_LINES_FROM_FLOWS: usize = 32;

/// How a topology makes the flows' NICs: a serialiser at the access rate followed
/// by the flow's propagation each way.
#[derive(Clone, Copy, Debug)]
pub struct Nics {
    pub access_rate_bps: u64,
    /// How the NICs propagate (see [`LinePolicy`]).
    pub lines: LinePolicy,
    /// The delay node's mean timer lateness (ns, 0 = off) and the run's seed: on,
    /// every NIC's propagation crosses the node's netem, one tfifo per direction of
    /// travel and delay (`LinePolicy::DelayNode`), as the PAM testbed's delay node
    /// sits between the senders and the router.
    pub delay_node: (u64, u64),
}

impl Nics {
    /// The NICs of `cfg`'s flows. A traffic source (web) opens hundreds of connections
    /// during the run: their NICs share lines too, so the heap holds one entry per
    /// delay, not per connection.
    pub fn of(cfg: &ScenarioConfig) -> Self {
        let shared = cfg.flows.len() >= SHARED_LINES_FROM_FLOWS || !cfg.sources.is_empty();
        Nics {
            access_rate_bps: cfg.bottleneck.access_rate_bps,
            lines: if shared { LinePolicy::SharedByDelay } else { LinePolicy::Own },
            delay_node: (cfg.delay_node_timer_latency_ns, cfg.seed),
        }
    }

    /// A NIC of propagation `delay` whose packets cross the delay node on `side`:
    /// `old` (a reused slot's) if it is idle and fits, else a new one.
    pub fn nic(&self, net: &mut Network, old: Option<LinkId>, delay: u64, side: Direction) -> LinkId {
        let (mean_ns, seed) = self.delay_node;
        match old {
            // With the delay node on, only a NIC crossing it on the same side.
            Some(l)
                if (mean_ns == 0 || delay == 0 || net.node_side(l) == Some(side))
                    && net.link_mut(l).reset_for_reuse(delay) =>
            {
                l
            }
            _ => {
                let policy = if mean_ns > 0 { LinePolicy::DelayNode { side, mean_ns, seed } } else { self.lines };
                net.add_link_with(None, Some(Serialiser::new(self.access_rate_bps)), delay, policy)
            }
        }
    }
}
