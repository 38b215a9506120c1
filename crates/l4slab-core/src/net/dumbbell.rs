//! The dumbbell: what [`ScenarioConfig`](crate::config::ScenarioConfig) describes.
//!
//! ```text
//! sender i --[NIC i: access rate, fwd delay i]--> bottleneck (HTB + qdisc, delay 0) --> receiver i
//! sender i <--[reverse queue, optional, delay 0]-- [NIC' i: access rate, rev delay i] <-- receiver i
//! ```
//!
//! Each flow gets its own sender and receiver NIC (a serialiser at the access rate
//! followed by that flow's propagation delay); all share the forward bottleneck. The
//! reverse path is uncongested unless [`Dumbbell::add_reverse_queue`] puts a shaped
//! queue on it, shared by every flow's ACKs (ACKs behind data, or data both ways).

use super::host_timer::HostTimer;
use super::{Direction, EndpointId, FlowRoutes, LinePolicy, LinkId, Network, Route, Serialiser, ShapedQueue, Shaper};
use crate::config::BottleneckConfig;
use crate::qdisc;
use crate::rng::SimRng;

/// Ids of the dumbbell's shared links.
#[derive(Clone, Copy, Debug)]
pub struct Dumbbell {
    pub bottleneck: LinkId,
    pub reverse_queue: Option<LinkId>,
    access_rate_bps: u64,
    /// How the flows' NICs propagate (see [`LinePolicy`]).
    pub nic_lines: LinePolicy,
    /// The delay node's mean timer lateness (ns, 0 = off) and the run's seed: on,
    /// every NIC's propagation crosses the node's netem, one tfifo per direction of
    /// travel and delay (`LinePolicy::DelayNode`), as the PAM testbed's delay node
    /// sits between the senders and the router.
    pub delay_node: (u64, u64),
}

/// From this many flows on, NICs share delay lines: the heap then stays small
/// enough for L1, which outweighs the occasional sorted insert.
pub const SHARED_LINES_FROM_FLOWS: usize = 32;

/// A shaped queue from a bottleneck description (`htb rate R burst B` + child qdisc);
/// `timer_rng` draws its host's watchdog lateness (`timer_latency_ns`, if set).
pub fn shaped_queue(cfg: &BottleneckConfig, mut rng: SimRng, timer_rng: SimRng) -> ShapedQueue {
    let qdisc = qdisc::build(&cfg.qdisc, &mut rng);
    ShapedQueue::new(Shaper::new(cfg.rate_bps, cfg.burst_bytes), qdisc, rng)
        .with_host_timer(HostTimer::new(cfg.timer_latency_ns, timer_rng))
}

impl Dumbbell {
    /// Add the shared bottleneck to `net`; `rng` becomes its qdisc's random stream,
    /// `timer_rng` its host timer's.
    pub fn build(net: &mut Network, cfg: &BottleneckConfig, rng: SimRng, timer_rng: SimRng) -> Self {
        let bottleneck = net.add_link(Some(shaped_queue(cfg, rng, timer_rng)), None, 0);
        Dumbbell {
            bottleneck,
            reverse_queue: None,
            access_rate_bps: cfg.access_rate_bps,
            nic_lines: LinePolicy::Own,
            delay_node: (0, 0),
        }
    }

    /// Put a shaped queue on the reverse path (call before attaching flows).
    pub fn add_reverse_queue(&mut self, net: &mut Network, queue: ShapedQueue) -> LinkId {
        let id = net.add_link(Some(queue), None, 0);
        self.reverse_queue = Some(id);
        id
    }

    /// Give flow slot `flow` its two NICs and routes; a reused slot keeps its NIC
    /// links when nothing is left on them, so short flows do not grow the network.
    /// A `reverse` flow's sender sits on the receivers' side: its data crosses the
    /// reverse queue (if any) and its ACKs the bottleneck.
    pub fn attach_flow(&self, net: &mut Network, flow: u32, fwd_delay_ns: u64, rev_delay_ns: u64, reverse: bool) {
        let old = net.previous_routes(flow).map(|r| (r.forward.links()[0], r.reverse.links()[0]));
        // The side of the delay node a NIC's packets cross: a reverse flow's data
        // travel towards the senders, as the other flows' ACKs do.
        let (data_side, ack_side) =
            if reverse { (Direction::Reverse, Direction::Forward) } else { (Direction::Forward, Direction::Reverse) };
        let (mean_ns, seed) = self.delay_node;
        let nic = |net: &mut Network, old: Option<LinkId>, delay, side| match old {
            // With the delay node on, only a NIC crossing it on the same side.
            Some(l)
                if (mean_ns == 0 || delay == 0 || net.node_side(l) == Some(side))
                    && net.link_mut(l).reset_for_reuse(delay) =>
            {
                l
            }
            _ => {
                let policy = if mean_ns > 0 { LinePolicy::DelayNode { side, mean_ns, seed } } else { self.nic_lines };
                net.add_link_with(None, Some(Serialiser::new(self.access_rate_bps)), delay, policy)
            }
        };
        let tx_nic = nic(net, old.map(|o| o.0), fwd_delay_ns, data_side);
        let rx_nic = nic(net, old.map(|o| o.1), rev_delay_ns, ack_side);
        // The queue each direction's packets meet after their NIC and propagation.
        let (data_queue, ack_queue) = if reverse {
            (self.reverse_queue, Some(self.bottleneck))
        } else {
            (Some(self.bottleneck), self.reverse_queue)
        };
        // NIC, then the queue if any (on the stack: nothing allocated per connection).
        let path = |nic: LinkId, queue: Option<LinkId>| ([nic, queue.unwrap_or(nic)], 1 + queue.is_some() as usize);
        let (data_path, n_data) = path(tx_nic, data_queue);
        let (ack_path, n_ack) = path(rx_nic, ack_queue);
        net.set_routes(
            flow,
            FlowRoutes {
                forward: Route::new(&data_path[..n_data], EndpointId::receiver(flow)),
                reverse: Route::new(&ack_path[..n_ack], EndpointId::sender(flow)),
            },
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::QdiscConfig;
    use crate::net::Hop;
    use crate::packet::{Packet, PacketKind};
    use crate::rng::{stream, Stream};

    #[test]
    fn routes_cross_nic_then_bottleneck_and_back_through_the_reverse_queue() {
        let cfg = BottleneckConfig {
            rate_bps: 10_000_000,
            burst_bytes: 1600,
            access_rate_bps: 1_000_000_000,
            timer_latency_ns: 0,
            qdisc: QdiscConfig::Pfifo(crate::qdisc::fifo::PfifoParams { limit_packets: 10 }),
        };
        let mut net = Network::new();
        let mut d = Dumbbell::build(&mut net, &cfg, stream(1, Stream::Qdisc), stream(1, Stream::HostTimer));
        let rq = d.add_reverse_queue(
            &mut net,
            shaped_queue(&cfg, stream(1, Stream::ReverseQdisc), stream(1, Stream::ReverseHostTimer)),
        );
        d.attach_flow(&mut net, 0, 3_000, 7_000, false);
        let data = Packet::new(0, PacketKind::Data);
        let ack = Packet::new(0, PacketKind::Ack);
        let Hop::Link(nic) = net.next_hop(&data, None) else { panic!("data starts on the NIC") };
        assert_eq!(net.link(nic).delay_ns(), 3_000);
        assert_eq!(net.next_hop(&data, Some(nic)), Hop::Link(d.bottleneck));
        assert_eq!(net.next_hop(&data, Some(d.bottleneck)), Hop::Endpoint(EndpointId::receiver(0)));
        let Hop::Link(rx_nic) = net.next_hop(&ack, None) else { panic!("ACKs start on the receiver's NIC") };
        assert_eq!(net.link(rx_nic).delay_ns(), 7_000);
        assert_eq!(net.next_hop(&ack, Some(rx_nic)), Hop::Link(rq));
        assert_eq!(net.next_hop(&ack, Some(rq)), Hop::Endpoint(EndpointId::sender(0)));
    }
}
