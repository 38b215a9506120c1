//! An inelastic SYN flood as S2 §5.3 ran it with hping3 (`hping3 -S --flood`):
//! bare SYNs (Ethernet 14 + IPv4 20 + TCP 20 = 54 B on the wire by default) at a
//! constant rate counted on those frames, each with the configured ECN codepoint
//! (hping3 sets the IP TOS byte with `-o`), and no handshake: the receiving end
//! is a sink that answers nothing (the target's SYN-ACKs would cross the
//! uncongested reverse path and change nothing at the bottleneck).
//!
//! The flood is one flow slot; its summary has `kind = "synflood"` and its
//! `throughput_mbps` is the flood's share of the bottleneck.

use super::udp::{RateClock, UdpSink};
use super::{Endpoint, FlowOpener, FlowSpec, Measured, TrafficSource};
use crate::config::SynFloodConfig;
use crate::packet::{Ecn, Outbox, Packet, PacketKind};
use crate::results::FlowSummary;
use crate::time::Time;

/// The flooding host: one SYN every `syn_bytes / rate`.
pub struct SynFlooder {
    flow: u32,
    wire_len: u32,
    ecn: Ecn,
    clock: RateClock,
}

impl SynFlooder {
    pub fn new(flow: u32, cfg: &SynFloodConfig, stop: Time) -> Self {
        SynFlooder {
            flow,
            wire_len: cfg.syn_bytes,
            ecn: cfg.ecn,
            clock: RateClock::new(cfg.syn_bytes as u64, cfg.rate_bps, stop),
        }
    }
}

impl Endpoint for SynFlooder {
    fn start(&mut self, now: Time, _out: &mut Outbox) {
        self.clock.start(now);
    }
    fn on_packet(&mut self, _pkt: &Packet, _now: Time, _out: &mut Outbox) {}
    fn on_timer(&mut self, now: Time, out: &mut Outbox) {
        if self.clock.tick(now) {
            let mut p = Packet::new(self.flow, PacketKind::Syn);
            p.wire_len = self.wire_len;
            p.ecn = self.ecn;
            // hping3 increments the source port per packet; the sequence is random.
            p.tcp.seq = self.clock.sent - 1;
            out.push(p);
        }
    }
    #[inline]
    fn next_timer(&self) -> Option<Time> {
        self.clock.next_timer()
    }
    fn arms_timer_first(&self) -> bool {
        true
    }
    fn is_finished(&self) -> bool {
        self.clock.is_finished()
    }
    fn measured(&self) -> Option<&dyn Measured> {
        Some(self)
    }
}

impl Measured for SynFlooder {
    fn summarise(&self, _flow_start: Time, s: &mut FlowSummary) {
        self.clock.summarise("synflood", "none", s);
    }
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
                sender: Box::new(SynFlooder::new(slot, &self.cfg, stop)),
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

    #[test]
    fn syns_leave_at_the_rate_counted_on_their_frames() {
        let cfg = SynFloodConfig {
            path: PathConfig {
                rtt_ns: 10_000_000,
                fwd_delay_ns: None,
                start_ns: 0,
                stop_ns: None,
                reverse: false,
                hops: None,
            },
            rate_bps: 9_000_000,
            syn_bytes: 54,
            ecn: Ecn::Ect1,
        };
        let mut f = SynFlooder::new(0, &cfg, u64::MAX);
        let mut out = Outbox::default();
        f.start(0, &mut out);
        f.on_timer(0, &mut out);
        // 54 B = 432 bit at 9 Mbit/s: one SYN every 48 µs, 20 833 per second.
        assert_eq!(f.next_timer(), Some(48_000));
        assert_eq!((out[0].kind, out[0].wire_len, out[0].ecn, out[0].payload), (PacketKind::Syn, 54, Ecn::Ect1, 0));
    }
}
