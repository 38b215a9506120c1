//! An inelastic SYN flood as S2 §5.3 ran it with hping3 (`hping3 -S --flood`):
//! bare SYNs (Ethernet 14 + IPv4 20 + TCP 20 = 54 B on the wire by default) at a
//! constant rate counted on those frames, each with the configured ECN codepoint
//! (hping3 sets the IP TOS byte with `-o`), and no handshake: the receiving end
//! is a sink that answers nothing (the target's SYN-ACKs would cross the
//! uncongested reverse path and change nothing at the bottleneck).
//!
//! The flood is one flow slot; its summary has `kind = "synflood"` and its
//! `throughput_mbps` is the flood's share of the bottleneck.

use super::udp::{ConstantRateSender, UdpSink};
use super::{FlowOpener, FlowSpec, TrafficSource};
use crate::config::SynFloodConfig;
use crate::packet::PacketKind;
use crate::time::Time;

/// The flooding host: one SYN of `syn_bytes` on the wire every `syn_bytes / rate`
/// (hping3 increments the source port per packet; the sequence is random: the engine
/// numbers the SYNs).
fn syn_flooder(flow: u32, cfg: &SynFloodConfig, stop: Time) -> ConstantRateSender {
    ConstantRateSender::new(flow, PacketKind::Syn, cfg.syn_bytes, 0, cfg.ecn, cfg.rate_bps, stop, ("synflood", "none"))
}

/// A SYN flood source (`SourceConfig::SynFlood`): one flow from setup.
pub struct SynFloodSource {
    cfg: SynFloodConfig,
}

impl SynFloodSource {
    pub fn new(cfg: &SynFloodConfig) -> Self {
        SynFloodSource { cfg: cfg.clone() }
    }
}

impl TrafficSource for SynFloodSource {
    fn open_initial(&mut self, opener: &mut dyn FlowOpener) -> Result<(), String> {
        let p = &self.cfg.path;
        let stop = p.stop_ns.unwrap_or(opener.end()).min(opener.end());
        let slot = opener.reserve_slot();
        opener.open(
            slot,
            FlowSpec {
                sender: Box::new(syn_flooder(slot, &self.cfg, stop)),
                receiver: Box::new(UdpSink::default()),
                start: p.start_ns,
                base_rtt_ns: p.rtt_ns,
                fwd_delay_ns: p.fwd_delay(),
                rev_delay_ns: p.rev_delay(),
                reverse: false,
            },
        );
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::PathConfig;
    use crate::packet::{Ecn, Outbox};
    use crate::traffic::Endpoint;

    #[test]
    fn syns_leave_at_the_rate_counted_on_their_frames() {
        let cfg =
            SynFloodConfig { path: PathConfig::of_rtt(10_000_000), rate_bps: 9_000_000, syn_bytes: 54, ecn: Ecn::Ect1 };
        let mut f = syn_flooder(0, &cfg, u64::MAX);
        let mut out = Outbox::default();
        f.start(0, &mut out);
        f.on_timer(0, &mut out);
        // 54 B = 432 bit at 9 Mbit/s: one SYN every 48 µs, 20 833 per second.
        assert_eq!(f.next_timer(), Some(48_000));
        assert_eq!((out[0].kind, out[0].wire_len, out[0].ecn, out[0].payload), (PacketKind::Syn, 54, Ecn::Ect1, 0));
    }
}
