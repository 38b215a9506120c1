//! An unresponsive constant-bit-rate UDP source and the sink that counts what arrives.

use super::{Endpoint, Measured};
use crate::config::UdpFlowConfig;
use crate::packet::{Ecn, Outbox, Packet, PacketKind, ETH_HLEN, IP_UDP_HLEN};
use crate::results::FlowSummary;
use crate::time::{tx_time, Time};
use crate::trace::FlowCumulative;

/// The send clock of an unresponsive constant-rate source (a UDP CBR source, a SYN
/// flood): one packet every `interval_ns` from its start until `stop`, re-armed before
/// the packet goes out (`Endpoint::arms_timer_first`).
struct RateClock {
    interval_ns: u64,
    /// No packet leaves at or after this time.
    stop: Time,
    /// Time of the next packet, once started.
    next_send: Option<Time>,
    /// Packets sent so far.
    sent: u64,
}

impl RateClock {
    /// A clock for `wire_len`-byte packets at `rate_bps`.
    fn new(wire_len: u64, rate_bps: u64, stop: Time) -> Self {
        RateClock { interval_ns: tx_time(wire_len, rate_bps).max(1), stop, next_send: None, sent: 0 }
    }
    fn start(&mut self, now: Time) {
        self.next_send = Some(now);
    }
    /// The clock fired at `now`: whether a packet goes out (the source then sends packet
    /// number `sent - 1`); the next is due one interval later.
    fn tick(&mut self, now: Time) -> bool {
        if now >= self.stop {
            return false;
        }
        self.sent += 1;
        self.next_send = Some(now + self.interval_ns);
        true
    }
    #[inline]
    fn next_timer(&self) -> Option<Time> {
        // A packet at or after `stop` is never sent, so its clock tick need not exist.
        self.next_send.filter(|&t| t < self.stop)
    }
    fn is_finished(&self) -> bool {
        self.next_timer().is_none() && self.next_send.is_some()
    }
    /// The flow summary of a source that measures no RTT.
    fn summarise(&self, kind: &'static str, cc: &'static str, s: &mut FlowSummary) {
        s.kind = kind.into();
        s.cc = cc.into();
        s.mean_srtt_ms = f64::NAN;
        s.queuing_delay_ms = f64::NAN;
        s.mean_rtt_ms = f64::NAN;
        s.packets_sent = self.sent;
    }
}

/// An unresponsive constant-rate sender: one packet of a fixed kind, size and ECN
/// codepoint every `wire_len / rate` (the [`RateClock`]), numbered in `tcp.seq`. A UDP
/// CBR source ([`ConstantRateSender::udp`], iperf3 `-u -b RATE`) and a SYN flood
/// (`synflood::SynFloodSource`, `hping3 -S --flood`) differ only in the packet.
pub struct ConstantRateSender {
    flow: u32,
    kind: PacketKind,
    wire_len: u32,
    payload: u32,
    ecn: Ecn,
    clock: RateClock,
    /// The flow summary's `kind` and `cc`.
    summary: (&'static str, &'static str),
}

impl ConstantRateSender {
    /// `wire_len`-byte packets of `kind` carrying `payload` bytes, at `rate_bps` counted
    /// on the wire, until `stop`; `summary` names the flow's `kind` and `cc`.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn new(
        flow: u32,
        kind: PacketKind,
        wire_len: u32,
        payload: u32,
        ecn: Ecn,
        rate_bps: u64,
        stop: Time,
        summary: (&'static str, &'static str),
    ) -> Self {
        let clock = RateClock::new(wire_len as u64, rate_bps, stop);
        ConstantRateSender { flow, kind, wire_len, payload, ecn, clock, summary }
    }

    /// An unresponsive constant-bit-rate UDP source (iperf3 `-u -b RATE`): every datagram
    /// with the same ECN codepoint.
    pub fn udp(flow: u32, cfg: &UdpFlowConfig, stop: Time) -> Self {
        let wire_len = cfg.payload_bytes + IP_UDP_HLEN + ETH_HLEN;
        Self::new(flow, PacketKind::Udp, wire_len, cfg.payload_bytes, cfg.ecn, cfg.rate_bps, stop, ("udp", "udp"))
    }

    /// Packets sent so far.
    pub fn packets_sent(&self) -> u64 {
        self.clock.sent
    }
}

impl Endpoint for ConstantRateSender {
    fn start(&mut self, now: Time, _out: &mut Outbox) {
        self.clock.start(now);
    }
    fn on_packet(&mut self, _pkt: &Packet, _now: Time, _out: &mut Outbox) {}
    fn on_timer(&mut self, now: Time, out: &mut Outbox) {
        if self.clock.tick(now) {
            let mut p = Packet::new(self.flow, self.kind);
            p.wire_len = self.wire_len;
            p.payload = self.payload;
            p.ecn = self.ecn;
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

impl Measured for ConstantRateSender {
    fn summarise(&self, _flow_start: Time, s: &mut FlowSummary) {
        self.clock.summarise(self.summary.0, self.summary.1, s);
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
            path: PathConfig::of_rtt(10_000_000),
            rate_bps: 50_000_000,
            payload_bytes: 1472,
            ecn: Ecn::Ect1,
        };
        let mut s = ConstantRateSender::udp(0, &cfg, u64::MAX);
        let mut out = Outbox::default();
        s.start(0, &mut out);
        s.on_timer(0, &mut out);
        // 1514-B frames at 50 Mbit/s: one every 242.24 µs.
        assert_eq!(s.next_timer(), Some(242_240));
        assert_eq!(out[0].wire_len, 1514);
        assert_eq!(out[0].ecn, Ecn::Ect1);
        assert_eq!(s.packets_sent(), 1);
    }
}
