//! The dumbbell: what [`ScenarioConfig`](crate::config::ScenarioConfig) describes.
//!
//! ```text
//! sender i --[NIC i: access rate, fwd delay i]--> bottleneck (HTB + qdisc, delay 0) --> receiver i
//! sender i <--[reverse queue, optional, delay 0]-- [NIC' i: access rate, rev delay i] <-- receiver i
//! ```
//!
//! Each flow gets its own sender and receiver NIC (a serialiser at the access rate
//! followed by that flow's propagation delay); all share the forward bottleneck. The
//! reverse path is uncongested unless the scenario's `reverse_bottleneck` puts a
//! shaped queue on it, shared by every flow's ACKs (ACKs behind data, or data both
//! ways). Its links map to the random streams the engine always gave them
//! (`Qdisc`/`HostTimer`, `ReverseQdisc`/`ReverseHostTimer`).

use super::topology::{shaped_link, MeasuredLink, Nics, Topology};
use super::{Direction, EndpointId, FlowRoutes, LinkId, Network, Route};
use crate::config::ScenarioConfig;
use crate::rng::{stream, Stream};

/// The dumbbell's shared links and how it makes NICs.
#[derive(Clone, Debug)]
pub struct Dumbbell {
    pub bottleneck: LinkId,
    pub reverse_queue: Option<LinkId>,
    nics: Nics,
    measured: Vec<MeasuredLink>,
}

impl Dumbbell {
    /// The bottleneck (streams `Qdisc`, `HostTimer`) and, if `cfg` has one, the
    /// reverse queue (`ReverseQdisc`, `ReverseHostTimer`): links 0 and 1.
    pub fn from_config(cfg: &ScenarioConfig, net: &mut Network, nics: Nics) -> Self {
        let s = cfg.seed;
        let bottleneck = shaped_link(net, &cfg.bottleneck, stream(s, Stream::Qdisc), stream(s, Stream::HostTimer), s);
        let mut measured = vec![MeasuredLink { id: bottleneck, name: "bottleneck" }];
        let reverse_queue = cfg.reverse_bottleneck.as_ref().map(|rev| {
            let id = shaped_link(net, rev, stream(s, Stream::ReverseQdisc), stream(s, Stream::ReverseHostTimer), s);
            measured.push(MeasuredLink { id, name: "reverse_bottleneck" });
            id
        });
        Dumbbell { bottleneck, reverse_queue, nics, measured }
    }
}

impl Topology for Dumbbell {
    fn measured(&self) -> &[MeasuredLink] {
        &self.measured
    }

    /// Give flow slot `flow` its two NICs and routes; a reused slot keeps its NIC
    /// links when nothing is left on them, so short flows do not grow the network.
    /// A `reverse` flow's sender sits on the receivers' side: its data crosses the
    /// reverse queue (if any) and its ACKs the bottleneck.
    fn attach_flow(&self, net: &mut Network, flow: u32, fwd_delay_ns: u64, rev_delay_ns: u64, reverse: bool) {
        let old = net.previous_routes(flow).map(|r| (r.forward.links()[0], r.reverse.links()[0]));
        // The side of the delay node a NIC's packets cross: a reverse flow's data
        // travel towards the senders, as the other flows' ACKs do.
        let (data_side, ack_side) =
            if reverse { (Direction::Reverse, Direction::Forward) } else { (Direction::Forward, Direction::Reverse) };
        let tx_nic = self.nics.nic(net, old.map(|o| o.0), fwd_delay_ns, data_side);
        let rx_nic = self.nics.nic(net, old.map(|o| o.1), rev_delay_ns, ack_side);
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
    use crate::net::Hop;
    use crate::packet::{Packet, PacketKind};

    #[test]
    fn routes_cross_nic_then_bottleneck_and_back_through_the_reverse_queue() {
        let link = serde_json::json!({"rate_bps": 10_000_000, "access_rate_bps": 1_000_000_000u64,
            "qdisc": {"kind": "pfifo", "limit_packets": 10}});
        let cfg: ScenarioConfig = serde_json::from_value(serde_json::json!({
            "duration_ns": 1_000_000_000u64, "bottleneck": link, "reverse_bottleneck": link,
            "flows": [{"kind": "tcp", "cc": "cubic", "rtt_ns": 10_000}]}))
        .unwrap();
        let mut net = Network::new();
        let d = Dumbbell::from_config(&cfg, &mut net, Nics::of(&cfg));
        let rq = d.reverse_queue.unwrap();
        assert_eq!((d.bottleneck, rq), (LinkId(0), LinkId(1)), "measured links come first");
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
