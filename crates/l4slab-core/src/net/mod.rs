//! The network model: links addressed by [`LinkId`], and per-flow [`Route`]s over
//! them ending at endpoints.
//!
//! - [`link`]: a link's stages (shaped queue, serialiser, propagation).
//! - [`delay_line`]: packets in propagation, one pending event per line.
//! - [`shaper`]: the HTB-like token bucket of a queued link.
//! - [`route`]: routes, hops and directions.
//! - [`dumbbell`]: the topology `ScenarioConfig` describes, as one builder among
//!   possible others.
//!
//! This module holds state and per-link steps only; the simulator's event loop
//! drives packets from hop to hop.

pub mod delay_line;
pub mod dumbbell;
pub mod link;
pub mod route;
pub mod shaper;

use crate::packet::Packet;

pub use crate::event::{EndpointId, LinkId};
pub use link::{Link, LinkStats, Ready, Serialiser, ShapedQueue};
pub use route::{Direction, Hop, Route};
pub use shaper::Shaper;

/// The forward and reverse route of one flow slot.
#[derive(Clone, Copy, Debug)]
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

/// Links and the routes of every flow slot.
#[derive(Default)]
pub struct Network {
    pub links: Vec<Link>,
    routes: Vec<Option<FlowRoutes>>,
}

impl Network {
    pub fn new() -> Self {
        Network::default()
    }

    /// Add a link built from its stages; returns its id.
    pub fn add_link(&mut self, queue: Option<ShapedQueue>, serialiser: Option<Serialiser>, delay_ns: u64) -> LinkId {
        let id = LinkId(self.links.len() as u32);
        self.links.push(Link::new(id, queue, serialiser, delay_ns));
        id
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

    /// Packets held by all links (queues and wires).
    pub fn packets_held(&self) -> u64 {
        self.links.iter().map(Link::packets_held).sum()
    }
}
