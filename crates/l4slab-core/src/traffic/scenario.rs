//! The flows a `ScenarioConfig` lists: bulk (or sized) TCP transfers, UDP CBR
//! sources and UDP-Prague senders, each opened once at setup in list order.

use super::tcp::{TcpReceiverEndpoint, TcpSenderEndpoint};
use super::udp::{ConstantRateSender, UdpSink};
use super::udp_prague::{UdpPragueSink, UdpPragueSource};
use super::{Endpoint, FlowOpener, FlowSpec, TrafficSource};
use crate::config::FlowConfig;
use crate::rng::{self, SimRng};

/// A flow's sender and receiver.
type EndpointPair = (Box<dyn Endpoint>, Box<dyn Endpoint>);

/// The configured flows, opened in order with the run's start jitter.
pub struct ScenarioFlows {
    flows: Vec<FlowConfig>,
    jitter: SimRng,
    start_jitter_ns: u64,
    /// The run's seed, for each flow's congestion-control stream.
    seed: u64,
}

impl ScenarioFlows {
    pub fn new(flows: &[FlowConfig], seed: u64, start_jitter_ns: u64) -> Self {
        ScenarioFlows {
            flows: flows.to_vec(),
            jitter: rng::stream(seed, rng::Stream::StartJitter),
            start_jitter_ns,
            seed,
        }
    }

    /// Build flow `i`'s endpoints for `slot` (errors name the flow).
    fn endpoints(fc: &FlowConfig, i: usize, slot: u32, stop: u64, seed: u64) -> Result<EndpointPair, String> {
        Ok(match fc {
            FlowConfig::Tcp(t) => {
                let cc_rng = rng::stream(seed, rng::Stream::Flow(slot));
                let (sender, receiver) =
                    super::tcp::build(t, slot, stop, cc_rng, (None, None)).map_err(|e| format!("flows[{i}].{e}"))?;
                (Box::new(TcpSenderEndpoint(sender)), Box::new(TcpReceiverEndpoint::bulk(receiver)))
            }
            FlowConfig::Udp(u) => (Box::new(ConstantRateSender::udp(slot, u, stop)), Box::new(UdpSink::default())),
            FlowConfig::UdpPrague(u) => {
                (Box::new(UdpPragueSource::new(slot, u, stop, seed)), Box::new(UdpPragueSink::new(slot, u, seed)))
            }
        })
    }
}

impl TrafficSource for ScenarioFlows {
    fn open_initial(&mut self, opener: &mut dyn FlowOpener) -> Result<(), String> {
        let end = opener.end();
        for (i, fc) in self.flows.iter().enumerate() {
            let path = fc.path();
            let start = path.start_ns + self.jitter.below_inclusive(self.start_jitter_ns);
            let stop = path.stop_ns.unwrap_or(end).min(end);
            let slot = opener.reserve_slot();
            let (sender, receiver) = Self::endpoints(fc, i, slot, stop, self.seed)?;
            opener.open(
                slot,
                FlowSpec {
                    sender,
                    receiver,
                    start,
                    base_rtt_ns: path.rtt_ns,
                    fwd_delay_ns: path.fwd_delay(),
                    rev_delay_ns: path.rev_delay(),
                    reverse: path.reverse,
                },
            );
        }
        Ok(())
    }
}
