//! Non-TCP traffic sources.

use crate::config::UdpFlowConfig;
use crate::packet::{Packet, PacketKind, ETH_HLEN, IP_UDP_HLEN};
use crate::time::{tx_time, Time};

/// An unresponsive constant-bit-rate UDP source (iperf3 `-u -b RATE`): one datagram
/// every `wire_len / rate`, every datagram with the same ECN codepoint.
pub struct UdpSource {
    flow: u32,
    cfg: UdpFlowConfig,
    wire_len: u32,
    interval_ns: u64,
    pub datagrams_sent: u64,
}

impl UdpSource {
    pub fn new(flow: u32, cfg: &UdpFlowConfig) -> Self {
        let wire_len = cfg.payload_bytes + IP_UDP_HLEN + ETH_HLEN;
        UdpSource {
            flow,
            cfg: cfg.clone(),
            wire_len,
            interval_ns: tx_time(wire_len as u64, cfg.rate_bps).max(1),
            datagrams_sent: 0,
        }
    }

    /// Emit one datagram; returns the time of the next.
    pub fn send(&mut self, now: Time, out: &mut Vec<Packet>) -> Time {
        let mut p = Packet::new(self.flow, PacketKind::Udp);
        p.wire_len = self.wire_len;
        p.payload = self.cfg.payload_bytes;
        p.ecn = self.cfg.ecn;
        p.tcp.seq = self.datagrams_sent;
        out.push(p);
        self.datagrams_sent += 1;
        now + self.interval_ns
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::PathConfig;
    use crate::packet::Ecn;

    #[test]
    fn rate_counts_l2_frames() {
        let cfg = UdpFlowConfig {
            path: PathConfig { rtt_ns: 10_000_000, fwd_delay_ns: None, start_ns: 0, stop_ns: None },
            rate_bps: 50_000_000,
            payload_bytes: 1472,
            ecn: Ecn::Ect1,
        };
        let mut s = UdpSource::new(0, &cfg);
        let mut out = Vec::new();
        let next = s.send(0, &mut out);
        // 1514-B frames at 50 Mbit/s: one every 242.24 µs.
        assert_eq!(next, 242_240);
        assert_eq!(out[0].wire_len, 1514);
        assert_eq!(out[0].ecn, Ecn::Ect1);
    }
}
