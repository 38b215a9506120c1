//! The network model: links addressed by [`LinkId`], and per-flow [`Route`]s over
//! them ending at endpoints.
//!
//! - [`link`]: a link's stages (shaped queue, serialiser, propagation).
//! - [`delay_line`]: packets in propagation, one line per distinct delay, one
//!   pending event per line.
//! - [`shaper`]: the HTB-like token bucket of a queued link.
//! - [`host_timer`]: how late a VM host's qdisc watchdog fires (off by default):
//!   the router's HTB and the delay node's netem (`delay_line::NetemNode`).
//! - [`route`]: routes, hops and directions.
//! - [`link_model`]: loss, jitter and aggregation on a link's wire, and its rate
//!   schedule.
//! - [`topology`]: the [`topology::Topology`] the event loop asks for routes and
//!   measured links; [`build_topology`] picks the builder the scenario names:
//!   [`dumbbell`] (no topology), [`parking_lot`], [`chain`].
//!
//! This module holds state and per-link steps only; the simulator's event loop
//! drives packets from hop to hop.

pub mod chain;
pub mod delay_line;
pub mod dumbbell;
pub mod host_timer;
pub mod link;
pub mod link_model;
pub mod parking_lot;
pub mod route;
pub mod shaper;
pub mod topology;

use crate::packet::Packet;

use crate::event::EventQueue;
pub use crate::event::{EndpointId, LineId, LinkId};
use crate::time::Time;
use delay_line::{DelayLine, NetemNode};
use host_timer::HostTimer;
pub use link::{Link, LinkQdisc, LinkStats, Serialiser, ShapedQueue, Tx};
pub use route::{Direction, Hop, Route};
pub use shaper::Shaper;

/// Which delay line a link's packets propagate on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LinePolicy {
    /// The delay node's interface for packets travelling `side`, shared by every link
    /// with the same delay: a netem tfifo whose watchdog fires late by Exp(`mean_ns`)
    /// (`delay_line::NetemNode`), drawn from the run's stream `DelayNode(line)`.
    DelayNode { side: Direction, mean_ns: u64, seed: u64 },
    /// A line of its own: packets enter in departure order (always at the back),
    /// one heap entry per link. Best for a few links carrying long bursts.
    Own,
    /// The line shared by every link with the same delay: one heap entry per
    /// distinct delay, at the price of sorted inserts when one link's packet
    /// overtakes another's. Best for many links (a thousand flows' NICs).
    SharedByDelay,
}

/// The topologies beyond the dumbbell, by `topology.kind`: one line per builder.
pub const TOPOLOGIES: &[topology::TopologyDescriptor] = &[parking_lot::DESCRIPTOR, chain::DESCRIPTOR];

/// The builder `cfg.topology` names and every hop (`bottleneck` first); `None`: the dumbbell.
fn topology_of(
    cfg: &crate::config::ScenarioConfig,
) -> Result<Option<(&'static topology::TopologyDescriptor, Vec<crate::config::BottleneckConfig>)>, String> {
    let Some(t) = &cfg.topology else { return Ok(None) };
    let Some(d) = TOPOLOGIES.iter().find(|d| d.kind == t.kind) else {
        let kinds: Vec<&str> = TOPOLOGIES.iter().map(|d| d.kind).collect();
        return Err(format!("topology.kind: {:?} is not allowed (allowed {})", t.kind, kinds.join(", ")));
    };
    let mut hops = vec![cfg.bottleneck.clone()];
    hops.extend((d.hops)(cfg, &t.params)?);
    Ok(Some((d, hops)))
}

/// The topology's checks (its parameters, the flows' hops); nothing for the dumbbell.
pub fn check_topology(cfg: &crate::config::ScenarioConfig) -> Result<(), String> {
    match topology_of(cfg)? {
        None => Ok(()),
        Some((_, hops)) => topology::check_flows(cfg, &hops),
    }
}

/// The topology `cfg` describes, its links added to `net` (the one place that picks
/// a builder). `cfg` has passed [`check_topology`].
pub fn build_topology(
    cfg: &crate::config::ScenarioConfig,
    net: &mut Network,
) -> Result<Box<dyn topology::Topology>, String> {
    let nics = topology::Nics::of(cfg);
    let built: Box<dyn topology::Topology> = match topology_of(cfg)? {
        None => Box::new(dumbbell::Dumbbell::from_config(cfg, net, nics)),
        Some((d, hops)) => (d.build)(cfg, &hops, net, nics),
    };
    debug_assert!(built.measured().iter().enumerate().all(|(i, m)| m.id.0 as usize == i));
    Ok(built)
}

/// Where a transmitted packet is (see [`Network::transmit`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sent {
    Now,
    Later,
    Lost,
}

/// The forward and reverse route of one flow slot: 64 bytes, aligned to a cache
/// line (and so is an `Option` of them, the routes' niche serving as its tag), so
/// that with hundreds of flows a packet's route costs one line, not two.
#[derive(Clone, Copy, Debug)]
#[repr(align(64))]
pub struct FlowRoutes {
    pub forward: Route,
    pub reverse: Route,
}

impl FlowRoutes {
    #[inline]
    pub fn get(&self, dir: Direction) -> &Route {
        match dir {
            Direction::Forward => &self.forward,
            Direction::Reverse => &self.reverse,
        }
    }
}

/// Links, the delay lines their packets propagate on, and the routes of every
/// flow slot.
#[derive(Default)]
pub struct Network {
    pub links: Vec<Link>,
    lines: Vec<DelayLine>,
    /// The line of each distinct propagation delay (links without a delay but
    /// with a serialiser share the delay-0 line).
    line_by_delay: Vec<(u64, LineId)>,
    /// The delay node's interfaces: one per direction of travel and delay.
    node_lines: Vec<(Direction, u64, LineId)>,
    routes: Vec<Option<FlowRoutes>>,
}

impl Network {
    pub fn new() -> Self {
        Network::default()
    }

    /// Add a link built from its stages, with a delay line of its own; returns its id.
    pub fn add_link(&mut self, queue: Option<ShapedQueue>, serialiser: Option<Serialiser>, delay_ns: u64) -> LinkId {
        self.add_link_with(queue, serialiser, delay_ns, LinePolicy::Own)
    }

    /// Add a link, choosing how its packets propagate.
    pub fn add_link_with(
        &mut self,
        queue: Option<ShapedQueue>,
        serialiser: Option<Serialiser>,
        delay_ns: u64,
        policy: LinePolicy,
    ) -> LinkId {
        let id = LinkId(self.links.len() as u32);
        let line = (serialiser.is_some() || delay_ns > 0).then(|| match policy {
            LinePolicy::Own => self.new_line(None),
            LinePolicy::SharedByDelay => self.line_for(delay_ns),
            LinePolicy::DelayNode { side, mean_ns, seed } => self.node_line_for(side, delay_ns, mean_ns, seed),
        });
        self.links.push(Link::new(id, queue, serialiser, delay_ns, line));
        id
    }

    /// Give link `l` a wire model on a delay line of its own (the model's jitter may
    /// reorder, which a line of its own keeps sorted).
    pub fn set_link_model(&mut self, l: LinkId, model: link_model::LinkModel) {
        let line = match self.links[l.0 as usize].line() {
            Some(line) => line,
            None => self.new_line(None),
        };
        self.links[l.0 as usize].set_model(model, line);
    }

    fn line_for(&mut self, delay_ns: u64) -> LineId {
        match self.line_by_delay.iter().find(|(d, _)| *d == delay_ns) {
            Some(&(_, l)) => l,
            None => self.new_line(Some(delay_ns)),
        }
    }

    /// The side of the delay node link `l`'s packets cross, if its line is one of
    /// the node's interfaces.
    pub fn node_side(&self, l: LinkId) -> Option<Direction> {
        let line = self.links[l.0 as usize].line()?;
        self.node_lines.iter().find(|&&(_, _, nl)| nl == line).map(|&(side, _, _)| side)
    }

    fn node_line_for(&mut self, side: Direction, delay_ns: u64, mean_ns: u64, seed: u64) -> LineId {
        if let Some(&(_, _, l)) = self.node_lines.iter().find(|(s, d, _)| *s == side && *d == delay_ns) {
            return l;
        }
        let l = LineId(self.lines.len() as u32);
        let rng = crate::rng::stream(seed, crate::rng::Stream::DelayNode(l.0));
        let node = match HostTimer::new(mean_ns, rng) {
            Some(timer) if delay_ns > 0 => NetemNode::new(delay_ns, timer),
            // On time, or no delay (netem would release at the enqueue): a plain line.
            _ => return self.new_line(None),
        };
        self.lines.push(DelayLine::new_netem(l, node));
        self.node_lines.push((side, delay_ns, l));
        l
    }

    fn new_line(&mut self, shared_delay: Option<u64>) -> LineId {
        let l = LineId(self.lines.len() as u32);
        self.lines.push(DelayLine::new(l));
        if let Some(d) = shared_delay {
            self.line_by_delay.push((d, l));
        }
        l
    }

    /// Put `pkt` on link `l`'s wire at `now`: `Sent::Now` if it reaches the next hop
    /// now; `Sent::Later` if it waits on a delay line (its arrival is an event);
    /// `Sent::Lost` if the wire lost it (the caller accounts the drop).
    #[inline(always)]
    pub fn transmit(&mut self, l: LinkId, now: Time, pkt: &Packet, events: &mut EventQueue) -> Sent {
        match self.links[l.0 as usize].transmit(now, pkt) {
            Tx::Now => Sent::Now,
            Tx::Wire(line, arrive) => {
                self.lines[line.0 as usize].push(arrive, l, pkt, events);
                Sent::Later
            }
            Tx::Lost => Sent::Lost,
        }
    }

    /// Line `line`'s event (`time`, `seq`) fired: the link the arriving packet
    /// left, the packet written to `pkt`; `None` for a stale entry.
    #[inline]
    pub fn arrive(
        &mut self,
        line: LineId,
        time: Time,
        seq: u64,
        events: &mut EventQueue,
        pkt: &mut Packet,
    ) -> Option<LinkId> {
        let from = self.lines[line.0 as usize].pop(time, seq, events, pkt)?;
        self.links[from.0 as usize].left_wire();
        Some(from)
    }

    #[inline]
    pub fn link(&self, id: LinkId) -> &Link {
        &self.links[id.0 as usize]
    }

    #[inline]
    pub fn link_mut(&mut self, id: LinkId) -> &mut Link {
        &mut self.links[id.0 as usize]
    }

    /// Set (or replace, when a slot is reused) the routes of flow slot `flow`.
    pub fn set_routes(&mut self, flow: u32, routes: FlowRoutes) {
        const _: () = assert!(std::mem::size_of::<Option<FlowRoutes>>() == 64);
        let i = flow as usize;
        if self.routes.len() <= i {
            self.routes.resize(i + 1, None);
        }
        self.routes[i] = Some(routes);
    }

    /// The routes slot `flow` had, if any (a reused slot).
    pub fn previous_routes(&self, flow: u32) -> Option<&FlowRoutes> {
        self.routes.get(flow as usize).and_then(|r| r.as_ref())
    }

    #[inline]
    pub fn routes(&self, flow: u32) -> &FlowRoutes {
        self.routes[flow as usize].as_ref().expect("flow slot has routes")
    }

    /// Where `pkt` goes after `from` (`None`: it leaves its endpoint).
    #[inline]
    pub fn next_hop(&self, pkt: &Packet, from: Option<LinkId>) -> Hop {
        let r = self.routes(pkt.flow).get(Direction::of(pkt));
        match from {
            None => r.first(),
            Some(l) => r.after(l),
        }
    }

    /// Packets held by the network (queues and wires).
    pub fn packets_held(&self) -> u64 {
        self.links.iter().map(Link::packets_queued).sum::<u64>()
            + self.lines.iter().map(|l| l.len() as u64).sum::<u64>()
    }
}
