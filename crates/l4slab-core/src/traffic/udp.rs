//! An unresponsive constant-bit-rate UDP source and the sink that counts what arrives.

use super::{Endpoint, Measured};
use crate::config::UdpFlowConfig;
use crate::packet::{Outbox, Packet, PacketKind, ETH_HLEN, IP_UDP_HLEN};
use crate::results::FlowSummary;
use crate::time::{tx_time, Time};
use crate::trace::FlowCumulative;

/// An unresponsive constant-bit-rate UDP source (iperf3 `-u -b RATE`): one datagram
/// every `wire_len / rate`, every datagram with the same ECN codepoint.
pub struct UdpSource {
    flow: u32,
    cfg: UdpFlowConfig,
    wire_len: u32,
    interval_ns: u64,
    pub datagrams_sent: u64,
    /// The source stops sending at this time.
    stop: Time,
    /// Time of the next datagram (the source's clock), once started.
    next_send: Option<Time>,
}

impl UdpSource {
    pub fn new(flow: u32, cfg: &UdpFlowConfig, stop: Time) -> Self {
        let wire_len = cfg.payload_bytes + IP_UDP_HLEN + ETH_HLEN;
        UdpSource {
            flow,
            cfg: cfg.clone(),
            wire_len,
            interval_ns: tx_time(wire_len as u64, cfg.rate_bps).max(1),
            datagrams_sent: 0,
            stop,
            next_send: None,
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

impl Endpoint for UdpSource {
    fn start(&mut self, now: Time, _out: &mut Outbox) {
        self.next_send = Some(now);
    }
    fn on_packet(&mut self, _pkt: &Packet, _now: Time, _out: &mut Outbox) {}
    fn on_timer(&mut self, now: Time, out: &mut Outbox) {
        if now < self.stop {
            self.next_send = Some(self.send(now, out));
        }
    }
    #[inline]
    fn next_timer(&self) -> Option<Time> {
        // A datagram at or after `stop` is never sent, so its clock tick need not exist.
        self.next_send.filter(|&t| t < self.stop)
    }
    fn arms_timer_first(&self) -> bool {
        true
    }
    fn is_finished(&self) -> bool {
        self.next_timer().is_none() && self.next_send.is_some()
    }
    fn measured(&self) -> Option<&dyn Measured> {
        Some(self)
    }
}

impl Measured for UdpSource {
    fn summarise(&self, _flow_start: Time, s: &mut FlowSummary) {
        s.kind = "udp".into();
        s.cc = "udp".into();
        s.mean_srtt_ms = f64::NAN;
        s.queuing_delay_ms = f64::NAN;
        s.mean_rtt_ms = f64::NAN;
        s.packets_sent = self.datagrams_sent;
    }
}

/// The receiving side of a UDP flow: counts delivered payload.
#[derive(Default)]
pub struct UdpSink {
    pub delivered_bytes: u64,
}

impl Endpoint for UdpSink {
    #[inline]
    fn on_packet(&mut self, pkt: &Packet, _now: Time, _out: &mut Outbox) {
        self.delivered_bytes += pkt.payload as u64;
    }
    fn is_finished(&self) -> bool {
        true
    }
    fn measured(&self) -> Option<&dyn Measured> {
        Some(self)
    }
}

impl Measured for UdpSink {
    fn add_cumulative(&self, c: &mut FlowCumulative) {
        c.bytes_delivered += self.delivered_bytes;
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
            path: PathConfig { rtt_ns: 10_000_000, fwd_delay_ns: None, start_ns: 0, stop_ns: None, reverse: false },
            rate_bps: 50_000_000,
            payload_bytes: 1472,
            ecn: Ecn::Ect1,
        };
        let mut s = UdpSource::new(0, &cfg, u64::MAX);
        let mut out = Vec::new();
        let next = s.send(0, &mut out);
        // 1514-B frames at 50 Mbit/s: one every 242.24 µs.
        assert_eq!(next, 242_240);
        assert_eq!(out[0].wire_len, 1514);
        assert_eq!(out[0].ecn, Ecn::Ect1);
    }
}
