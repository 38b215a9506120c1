//! Routes: the links a flow's packets cross, in order, and the endpoint they end at
//! (htsim's `Route` in `route.h`, a list of sinks ending at the receiver).
//!
//! Every flow has two: forward (sender to receiver: SYN, data, datagrams) and
//! reverse (receiver to sender: SYN/ACK, ACKs). A packet does not carry its
//! position; the hop after link `l` is found by looking `l` up in its route, which
//! is a few entries long.

use crate::event::{EndpointId, LinkId};
use crate::packet::{Packet, PacketKind};

/// Which way a packet travels along its flow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    /// Sender to receiver.
    Forward = 0,
    /// Receiver to sender.
    Reverse = 1,
}

impl Direction {
    /// The direction a packet of this kind travels.
    #[inline]
    pub fn of(pkt: &Packet) -> Direction {
        match pkt.kind {
            PacketKind::Syn | PacketKind::Data | PacketKind::Udp => Direction::Forward,
            PacketKind::SynAck | PacketKind::Ack | PacketKind::UdpAck => Direction::Reverse,
        }
    }
}

/// Where a packet goes next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hop {
    Link(LinkId),
    Endpoint(EndpointId),
}

/// Most links a route may cross (a dumbbell uses two each way).
pub const MAX_ROUTE_LINKS: usize = 6;

/// The bit that marks a route's last entry as its endpoint (link and endpoint ids
/// stay below it).
const ENDPOINT: u32 = 1 << 31;

/// The links of one direction of a flow, then the endpoint it ends at. Stored
/// inline (no pointer to chase per packet), the endpoint as the entry after the last
/// link (its id with [`ENDPOINT`] set) and every entry after that `u32::MAX`, which
/// no link has: the hop after a link is the entry after the link's own, found by a
/// scan that stops at the link.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Route {
    hops: [LinkId; MAX_ROUTE_LINKS + 1],
    /// The number of links plus one: never zero, so an `Option` of routes needs no
    /// tag of its own (a flow's two routes fill one cache line, `FlowRoutes`).
    len1: std::num::NonZeroU8,
}

impl Route {
    /// Panics beyond [`MAX_ROUTE_LINKS`] links (a topology-building error). Takes a
    /// slice: a source of short connections builds two routes per connection.
    pub fn new(links: &[LinkId], to: EndpointId) -> Self {
        assert!(links.len() <= MAX_ROUTE_LINKS, "a route crosses at most {MAX_ROUTE_LINKS} links");
        assert!(links.iter().all(|l| l.0 < ENDPOINT) && to.0 < ENDPOINT, "link and endpoint ids below 2^31");
        let mut hops = [LinkId(u32::MAX); MAX_ROUTE_LINKS + 1];
        hops[..links.len()].copy_from_slice(links);
        hops[links.len()] = LinkId(to.0 | ENDPOINT);
        Route { hops, len1: std::num::NonZeroU8::MIN.saturating_add(links.len() as u8) }
    }

    #[inline]
    pub fn links(&self) -> &[LinkId] {
        &self.hops[..self.len()]
    }

    pub fn to(&self) -> EndpointId {
        EndpointId(self.hops[self.len()].0 & !ENDPOINT)
    }

    /// The number of links.
    #[inline]
    fn len(&self) -> usize {
        self.len1.get() as usize - 1
    }

    /// Entry `i` as a hop.
    #[inline(always)]
    fn hop(&self, i: usize) -> Hop {
        let h = self.hops[i].0;
        if h & ENDPOINT == 0 {
            Hop::Link(LinkId(h))
        } else {
            Hop::Endpoint(EndpointId(h & !ENDPOINT))
        }
    }

    /// The first hop of a packet leaving its endpoint.
    #[inline]
    pub fn first(&self) -> Hop {
        self.hop(0)
    }

    /// The hop after link `from`.
    #[inline]
    pub fn after(&self, from: LinkId) -> Hop {
        // `from` (below 2^31) matches neither the endpoint's entry nor those after it.
        let mut i = 0;
        while i < MAX_ROUTE_LINKS && self.hops[i] != from {
            i += 1;
        }
        assert!(i < MAX_ROUTE_LINKS, "link is on the packet's route");
        self.hop(i + 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn traversal_visits_links_in_order_then_the_endpoint() {
        let r = Route::new(&[LinkId(4), LinkId(0), LinkId(7)], EndpointId(3));
        let mut hops = vec![r.first()];
        while let Some(Hop::Link(l)) = hops.last().copied() {
            hops.push(r.after(l));
        }
        assert_eq!(
            hops,
            vec![Hop::Link(LinkId(4)), Hop::Link(LinkId(0)), Hop::Link(LinkId(7)), Hop::Endpoint(EndpointId(3))]
        );
        assert_eq!(Route::new(&[], EndpointId(1)).first(), Hop::Endpoint(EndpointId(1)));
        assert_eq!((r.links(), r.to()), (&[LinkId(4), LinkId(0), LinkId(7)][..], EndpointId(3)));
    }

    #[test]
    fn direction_follows_the_packet_kind() {
        assert_eq!(Direction::of(&Packet::new(0, PacketKind::Data)), Direction::Forward);
        assert_eq!(Direction::of(&Packet::new(0, PacketKind::Ack)), Direction::Reverse);
        assert_eq!(Direction::of(&Packet::new(0, PacketKind::SynAck)), Direction::Reverse);
    }
}
