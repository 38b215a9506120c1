//! A chain of links from the scenario file: hop 0 is `bottleneck`, then
//! `topology.hops` in series, each a shaped link with its own qdisc, rate (and
//! schedule), propagation `delay_ns` after it and wire model.
//!
//! ```text
//! sender --[NIC: fwd delay − hops' delays]--> hop a --> hop a+1 --> ... --> hop b --> receiver
//! sender <--[NIC': rev delay]-- receiver                      (ACKs: uncongested)
//! ```
//!
//! A flow enters before hop `a` and leaves after hop `b` (`PathConfig::hops`, default
//! every hop), so cross traffic can enter and leave at any router, as in htsim's
//! parking-lot and multi-hop experiments (a `Route` per flow through shared queues).
//! The propagation of the hops a flow crosses is part of its `rtt_ns`: its own NIC
//! adds the rest of its forward delay. Hop `i ≥ 1` draws from streams `HopQdisc(i)`
//! and `HopHostTimer(i)`; hop 0 from the dumbbell bottleneck's `Qdisc`/`HostTimer`.

use super::topology::{param, shaped_link, HopsFn, MeasuredLink, Nics, Topology, TopologyDescriptor};
use super::{Direction, EndpointId, FlowRoutes, LinkId, Network, Route};
use crate::config::{check_shaped_link, BottleneckConfig, ScenarioConfig};
use crate::rng::{stream, Stream};

/// The chain's entry in `net::TOPOLOGIES`: `topology = {kind = "chain", hops = [...]}`,
/// hops 1.., each a full link description.
pub const DESCRIPTOR: TopologyDescriptor = Chain::descriptor(
    "chain",
    "Any chain of links after the bottleneck, each described as the bottleneck is (rate, qdisc, delay, schedule, wire model).",
    |cfg, p| {
        let hops: Vec<BottleneckConfig> = param(p, "hops")?;
        for (i, h) in hops.iter().enumerate() {
            check_shaped_link(&format!("topology.hops[{i}]"), h, cfg.duration_ns)?;
        }
        Ok(hops)
    },
);

/// Names of the hops in the results: hop 0 is the bottleneck.
pub const HOP_NAMES: [&str; crate::config::MAX_HOPS] = ["bottleneck", "hop1", "hop2", "hop3", "hop4"];

/// The hops of a chain and the hops each configured flow crosses.
#[derive(Clone, Debug)]
pub struct Chain {
    hops: Vec<LinkId>,
    delays: Vec<u64>,
    measured: Vec<MeasuredLink>,
    /// `PathConfig::hops` of each configured flow (slots beyond: every hop).
    flow_hops: Vec<Option<[u32; 2]>>,
    nics: Nics,
}

impl Chain {
    /// The descriptor of a topology whose links are a chain's: `hops` reads the
    /// topology's parameters into the hops after the bottleneck, the chain builds them.
    pub const fn descriptor(kind: &'static str, doc: &'static str, hops: HopsFn) -> TopologyDescriptor {
        TopologyDescriptor {
            kind,
            doc,
            hops,
            build: |cfg, hops, net, nics| Box::new(Chain::build(cfg, hops, net, nics)),
        }
    }

    /// The links of `hops` (`bottleneck` first), in order (ids 0..n).
    pub fn build(cfg: &ScenarioConfig, configs: &[BottleneckConfig], net: &mut Network, nics: Nics) -> Self {
        let s = cfg.seed;
        let mut chain = Chain {
            hops: Vec::new(),
            delays: Vec::new(),
            measured: Vec::new(),
            flow_hops: cfg.flows.iter().map(|f| f.path().hops).collect(),
            nics,
        };
        for (i, h) in configs.iter().enumerate() {
            let (q, t) = if i == 0 {
                (Stream::Qdisc, Stream::HostTimer)
            } else {
                (Stream::HopQdisc(i as u32), Stream::HopHostTimer(i as u32))
            };
            let id = shaped_link(net, h, stream(s, q), stream(s, t), s);
            chain.hops.push(id);
            chain.delays.push(h.delay_ns);
            chain.measured.push(MeasuredLink { id, name: HOP_NAMES[i] });
        }
        chain
    }

    /// The hops flow slot `flow` crosses, first and last.
    pub fn hops_of(&self, flow: u32) -> [usize; 2] {
        let [a, b] = self.flow_hops.get(flow as usize).copied().flatten().unwrap_or([0, self.hops.len() as u32 - 1]);
        [a as usize, b as usize]
    }
}

impl Topology for Chain {
    fn measured(&self) -> &[MeasuredLink] {
        &self.measured
    }

    fn attach_flow(&self, net: &mut Network, flow: u32, fwd_delay_ns: u64, rev_delay_ns: u64, _reverse: bool) {
        let [a, b] = self.hops_of(flow);
        let old = net.previous_routes(flow).map(|r| (r.forward.links()[0], r.reverse.links()[0]));
        let crossed: u64 = self.delays[a..=b].iter().sum();
        let tx_nic = self.nics.nic(net, old.map(|o| o.0), fwd_delay_ns.saturating_sub(crossed), Direction::Forward);
        let rx_nic = self.nics.nic(net, old.map(|o| o.1), rev_delay_ns, Direction::Reverse);
        let mut path = [tx_nic; super::route::MAX_ROUTE_LINKS];
        path[1..2 + b - a].copy_from_slice(&self.hops[a..=b]);
        net.set_routes(
            flow,
            FlowRoutes {
                forward: Route::new(&path[..2 + b - a], EndpointId::receiver(flow)),
                reverse: Route::new(&[rx_nic], EndpointId::sender(flow)),
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
    fn a_flow_crosses_its_hops_in_order_and_its_nic_adds_the_rest_of_its_delay() {
        let cfg: ScenarioConfig = serde_json::from_value(serde_json::json!({
            "duration_ns": 1_000_000_000u64,
            "bottleneck": {"rate_bps": 100_000_000, "qdisc": {"kind": "pfifo"}, "delay_ns": 1_000_000},
            "topology": {"kind": "chain", "hops": [
                {"rate_bps": 50_000_000, "qdisc": {"kind": "pfifo"}, "delay_ns": 2_000_000},
                {"rate_bps": 20_000_000, "qdisc": {"kind": "pfifo"}}]},
            "flows": [{"kind": "tcp", "cc": "cubic", "rtt_ns": 20_000_000},
                      {"kind": "tcp", "cc": "cubic", "rtt_ns": 20_000_000, "hops": [1, 1]}]}))
        .unwrap();
        crate::validate(&cfg).unwrap();
        let mut net = Network::new();
        let t = cfg.topology.as_ref().unwrap();
        let mut hops = vec![cfg.bottleneck.clone()];
        hops.extend((DESCRIPTOR.hops)(&cfg, &t.params).unwrap());
        let c = Chain::build(&cfg, &hops, &mut net, Nics::of(&cfg));
        assert_eq!(c.measured().iter().map(|m| m.name).collect::<Vec<_>>(), ["bottleneck", "hop1", "hop2"]);
        for (flow, hops) in [(0u32, vec![0u32, 1, 2]), (1, vec![1])] {
            c.attach_flow(&mut net, flow, 10_000_000, 10_000_000, false);
            let data = Packet::new(flow, PacketKind::Data);
            let Hop::Link(nic) = net.next_hop(&data, None) else { panic!("starts on its NIC") };
            let crossed: u64 = hops.iter().map(|&h| net.link(LinkId(h)).delay_ns()).sum();
            assert_eq!(net.link(nic).delay_ns() + crossed, 10_000_000, "the forward delay is the flow's");
            let mut at = nic;
            for h in hops {
                assert_eq!(net.next_hop(&data, Some(at)), Hop::Link(LinkId(h)));
                at = LinkId(h);
            }
            assert_eq!(net.next_hop(&data, Some(at)), Hop::Endpoint(EndpointId::receiver(flow)));
        }
    }
}
