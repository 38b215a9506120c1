//! The UDP-Prague flow: L4STeam's `udp_prague` sender and receiver (`cc/udp_prague.rs`)
//! as endpoints. Data packets are ECT(1) UDP datagrams; the receiver answers each with
//! a 26-byte ACK carrying its running counts of packets received, CE-marked and lost.
//!
//! Each host keeps its own microsecond clock as the reference's `Now()` does: the
//! sender's counts from its start (1 at the first instant), the receiver's from the
//! run's start; timestamps cross between them frozen and echoed, so the offset
//! between the two clocks never matters. The sender's timer is the reference loop's
//! receive timeout: the next burst's time, or 1 s while the window is full.
//!
//! Both ends are user programs, and a program on a real host reads its socket only
//! when the kernel has woken it: [`ProgramReads`] (off by default: an ideal host).

use super::{Endpoint, Measured};
use crate::cc::udp_prague::{diff, AckCounters, AckMsg, DataMsg, PragueReceiver, PragueSender, ACK_LEN};
use crate::config::UdpPragueFlowConfig;
use crate::net::host_timer::HostTimer;
use crate::packet::{Ecn, Outbox, Packet, PacketKind, ETH_HLEN, IP_UDP_HLEN};
use crate::results::FlowSummary;
use crate::rng;
use crate::time::Time;
use crate::trace::{FlowCumulative, FlowSample};

/// The label of the flow kind and of its congestion control.
pub const KIND: &str = "udp_prague";

fn ecn_bits(e: Ecn) -> u8 {
    match e {
        Ecn::NotEct => 0,
        Ecn::Ect1 => 1,
        Ecn::Ect0 => 2,
        Ecn::Ce => 3,
    }
}

fn ecn_of(bits: u8) -> Ecn {
    match bits & 3 {
        0 => Ecn::NotEct,
        1 => Ecn::Ect1,
        2 => Ecn::Ect0,
        _ => Ecn::Ce,
    }
}

/// A host's microsecond clock with origin `t0` (1 at `t0`, wrapping as `time_tp`).
#[inline]
fn clock_us(now: Time, t0: Time) -> i32 {
    ((now - t0) / 1000 + 1) as u32 as i32
}

/// The ACK as the engine's packet carries it (see [`PacketKind::UdpAck`]).
fn ack_packet(flow: u32, ack: &AckMsg, ecn: u8) -> Packet {
    let mut p = Packet::new(flow, PacketKind::UdpAck);
    p.payload = ACK_LEN as u32;
    p.wire_len = p.payload + IP_UDP_HLEN + ETH_HLEN;
    p.ecn = ecn_of(ecn);
    let c = &ack.counters;
    p.tcp.seq = ack.ack_seq as u32 as u64 | (c.lost as u32 as u64) << 32;
    p.tcp.ack = c.received as u32 as u64 | (c.ce as u32 as u64) << 32;
    p.tcp.tsval = ack.timestamp as u32;
    p.tcp.tsecr = ack.echoed_timestamp as u32;
    p.tcp.set_ece(c.error_l4s);
    p
}

fn ack_of(p: &Packet) -> AckMsg {
    AckMsg {
        ack_seq: p.tcp.seq as u32 as i32,
        timestamp: p.tcp.tsval as i32,
        echoed_timestamp: p.tcp.tsecr as i32,
        counters: AckCounters {
            received: p.tcp.ack as u32 as i32,
            ce: (p.tcp.ack >> 32) as u32 as i32,
            lost: (p.tcp.seq >> 32) as u32 as i32,
            error_l4s: p.tcp.ece(),
        },
    }
}

/// One of a program's host times as given: a mean, or measured quantiles with the
/// top step's own quantiles (`*_tail_quantiles_ns`); all empty or 0: none.
#[derive(Clone, Copy)]
struct HostTime<'a> {
    mean_ns: u64,
    quantiles: &'a [u64],
    tail: &'a [u64],
}

/// How late a program wakes (or how long it is busy): Exp(mean) (the one-parameter shape
/// of [`HostTimer`]), or drawn from the quantiles its host measured (piecewise-linear
/// between them; within the top step, between the tail's own quantiles when given, so
/// one rare sample keeps its own weight instead of spreading the step's up to it).
enum WakeLatency {
    Exp(HostTimer),
    Measured {
        quantiles: Box<[u64]>,
        tail: Box<[u64]>,
        rng: rng::SimRng,
    },
    /// At once (a program given only a busy time).
    Zero,
}

/// Piecewise-linear through evenly spaced quantiles `q` (at least 2) at `x` ∈ [0, 1].
fn between(q: &[u64], x: f64) -> (usize, f64) {
    let x = x * (q.len() - 1) as f64;
    let i = (x as usize).min(q.len() - 2);
    (i, x - i as f64)
}

impl WakeLatency {
    /// `None`: an ideal host (mean 0, no quantiles).
    fn new(t: HostTime, rng: rng::SimRng) -> Option<Self> {
        if t.quantiles.len() >= 2 {
            let tail = if t.tail.len() >= 2 { t.tail.into() } else { Box::default() };
            return Some(WakeLatency::Measured { quantiles: t.quantiles.into(), tail, rng });
        }
        HostTimer::new(t.mean_ns, rng).map(WakeLatency::Exp)
    }

    fn draw_ns(&mut self) -> u64 {
        match self {
            WakeLatency::Exp(h) => h.lateness_ns(),
            WakeLatency::Zero => 0,
            WakeLatency::Measured { quantiles: q, tail, rng } => {
                // u in (0, 1] onto the quantiles' index range.
                let (i, f) = between(q, rng.unit_open0());
                let (q, i, f) = if i == q.len() - 2 && !tail.is_empty() {
                    let (j, g) = between(tail, f);
                    (&tail[..], j, g)
                } else {
                    (&q[..], i, f)
                };
                (q[i] as f64 + f * (q[i + 1] - q[i]) as f64).round() as u64
            }
        }
    }
}

/// A user program reading its UDP socket on a real host. A datagram that arrives while
/// the program sleeps (in `ppoll`, as `l4slab-udp-prague` and L4STeam's `udp_prague`
/// do) makes the socket readable (`net/ipv4/udp.c:__udp_enqueue_schedule_skb` →
/// `sk_data_ready` wakes the waiter), but the program runs only when the scheduler
/// gives it the CPU: [`WakeLatency`] later. It then reads every datagram queued by
/// then, one `recvmsg` each, at that instant. The latency is what the program measures
/// on its host (`l4slab-udp-prague`'s `wake_us`: its mean, or its quantiles); none is an
/// ideal host. The pacing timer's lateness is a distribution of its own
/// (`sender_timer_latency`). Effect, the program alone through DualPI2 at 100 Mbit/s, 10 ms
/// (`tests/udp_prague.rs`): the receiver's ACKs leave in batches, the sender's
/// window-limited sends follow them, the bursts meet the L queue's 1-ms step at a
/// lower mean queue; a heavy tail (a loaded host) also leaves the link idle.
///
/// Each read also takes the program time (`busy`, `{sender,receiver}_busy_time`): its
/// `recvmsg`, its answer (the receiver's ACK `sendto`, which goes down the stack to the
/// TUN, `drivers/net/tun.c:tun_net_xmit`, and wakes the emulator; the sender's data
/// sends) and whatever takes the CPU from it meanwhile. With it, a woken program reads
/// one datagram, answers it at once, and reads the next only when it is free again
/// (`l4slab-udp-prague`'s `busy_us`: from a `recvmsg` return to the program's next
/// look at its socket); a datagram arriving while it is busy waits for that, not for
/// a wake-up. Without it every datagram of a batch is answered at the wake-up instant.
struct ProgramReads {
    late: WakeLatency,
    busy: Option<WakeLatency>,
    /// Datagrams waiting to be read, oldest first from `head`, and the buffer they swap with.
    pending: Vec<Packet>,
    head: usize,
    spare: Vec<Packet>,
    /// When the program reads the next of them (wakes up, or is free again).
    read_at: Option<Time>,
    /// With a busy time: until when the program is busy with the last datagram it read.
    busy_until: Time,
}

impl ProgramReads {
    fn new(wake: HostTime, rng: rng::SimRng, busy: HostTime, busy_rng: rng::SimRng) -> Option<Self> {
        let busy = WakeLatency::new(busy, busy_rng);
        // A program that wakes at once but takes time per datagram: a zero wake-up.
        let late = WakeLatency::new(wake, rng).or(busy.as_ref().map(|_| WakeLatency::Zero))?;
        Some(ProgramReads {
            late,
            busy,
            pending: Vec::with_capacity(64),
            head: 0,
            spare: Vec::with_capacity(64),
            read_at: None,
            busy_until: 0,
        })
    }

    /// `pkt` arrived at `now`; the first of a batch sets the wake-up (or, while the
    /// program is busy, the end of that).
    fn arrive(&mut self, pkt: &Packet, now: Time) {
        if self.read_at.is_none() {
            self.read_at = Some(if now < self.busy_until { self.busy_until } else { now + self.late.draw_ns().max(1) });
        }
        self.pending.push(*pkt);
    }

    /// With a busy time: the next datagram, if the program reads it now (it is awake at
    /// `now` and free); it is then busy with it for a draw of `busy`.
    fn next(&mut self, now: Time) -> Option<Packet> {
        let busy = self.busy.as_mut()?;
        if self.head >= self.pending.len() || self.read_at.is_none_or(|at| at > now) {
            return None;
        }
        let p = self.pending[self.head];
        self.head += 1;
        self.busy_until = now + busy.draw_ns();
        if self.head == self.pending.len() {
            self.pending.clear();
            self.head = 0;
            self.read_at = None;
        } else {
            self.read_at = Some(self.busy_until);
        }
        Some(p)
    }

    /// The datagrams to read now (the program is awake at `now`), oldest first; hand
    /// the vector back with [`done`](Self::done).
    fn take(&mut self) -> Vec<Packet> {
        self.read_at = None;
        let batch = std::mem::take(&mut self.pending);
        self.pending = std::mem::take(&mut self.spare);
        batch
    }

    fn done(&mut self, mut batch: Vec<Packet>) {
        batch.clear();
        self.spare = batch;
    }
}

/// The sending end.
pub struct UdpPragueSource {
    flow: u32,
    stop: Time,
    /// The sender's clock origin (its start).
    t0: Time,
    snd: Option<PragueSender>,
    params: crate::cc::udp_prague::PragueParams,
    /// The wait's target on the sender's clock, and the same instant in ns.
    target_us: i32,
    wake: Option<Time>,
    rtt_sum_us: u64,
    rtt_samples: u64,
    pacing_sum: u128,
    /// The sending program's host: its reads (`sender_wake_latency_ns`) and its pacing
    /// timer's lateness (`sender_timer_latency_ns`).
    reads: Option<ProgramReads>,
    timer_late: Option<WakeLatency>,
}

impl UdpPragueSource {
    pub fn new(flow: u32, cfg: &UdpPragueFlowConfig, stop: Time, seed: u64) -> Self {
        UdpPragueSource {
            flow,
            stop,
            t0: 0,
            snd: None,
            params: cfg.params(),
            target_us: 0,
            wake: None,
            rtt_sum_us: 0,
            rtt_samples: 0,
            pacing_sum: 0,
            reads: ProgramReads::new(
                HostTime {
                    mean_ns: cfg.sender_wake_latency_ns,
                    quantiles: &cfg.sender_wake_quantiles_ns,
                    tail: &cfg.sender_wake_tail_quantiles_ns,
                },
                rng::stream(seed, rng::Stream::SenderWake(flow)),
                HostTime {
                    mean_ns: cfg.sender_busy_time_ns,
                    quantiles: &cfg.sender_busy_quantiles_ns,
                    tail: &cfg.sender_busy_tail_quantiles_ns,
                },
                rng::stream(seed, rng::Stream::SenderBusy(flow)),
            ),
            timer_late: WakeLatency::new(
                HostTime {
                    mean_ns: cfg.sender_timer_latency_ns,
                    quantiles: &cfg.sender_timer_quantiles_ns,
                    tail: &cfg.sender_timer_tail_quantiles_ns,
                },
                rng::stream(seed, rng::Stream::SenderTimer(flow)),
            ),
        }
    }

    /// The algorithm's state (after `start`).
    pub fn sender(&self) -> Option<&PragueSender> {
        self.snd.as_ref()
    }

    /// Send what is due, then aim the timer at the loop's next wake.
    fn service(&mut self, now: Time, out: &mut Outbox) {
        let Some(snd) = self.snd.as_mut() else { return };
        if now >= self.stop {
            self.wake = None;
            return;
        }
        let t = clock_us(now, self.t0);
        let flow = self.flow;
        let rate = snd.info().pacing_rate;
        let mut sent = 0u64;
        snd.send_due(t, |o| {
            let mut p = Packet::new(flow, PacketKind::Udp);
            p.payload = o.size as u32;
            p.wire_len = p.payload + IP_UDP_HLEN + ETH_HLEN;
            p.ecn = ecn_of(o.ecn);
            p.tcp.seq = o.msg.seq as u32 as u64;
            p.tcp.tsval = o.msg.timestamp as u32;
            p.tcp.tsecr = o.msg.echoed_timestamp as u32;
            out.push(p);
            sent += 1;
        });
        self.pacing_sum += sent as u128 * rate as u128;
        self.target_us = snd.wake_at(t);
        // The µs boundary at or before `now`, plus the wait.
        let boundary = now - (now - self.t0) % 1000;
        let wait = diff(self.target_us, t) as i64 * 1000;
        // On a real host the timer wakes the program late (measured apart from the
        // reads: `l4slab-udp-prague`'s `timer_late_us`).
        let late = self.timer_late.as_mut().map_or(0, WakeLatency::draw_ns) as i64;
        self.wake = Some((boundary as i64 + wait + late).max(now as i64 + 1) as Time);
    }

    /// Read one ACK at `now`, then send what it releases.
    fn read_ack(&mut self, pkt: &Packet, now: Time, out: &mut Outbox) {
        let Some(snd) = self.snd.as_mut() else { return };
        let t = clock_us(now, self.t0);
        snd.on_ack(t, &ack_of(pkt));
        snd.after_wait(t, self.target_us, true);
        let rtt = snd.cc.rtt_us();
        if rtt > 0 {
            self.rtt_sum_us += rtt as u64;
            self.rtt_samples += 1;
        }
        self.service(now, out);
    }
}

impl Endpoint for UdpPragueSource {
    fn start(&mut self, now: Time, out: &mut Outbox) {
        self.t0 = now;
        self.snd = Some(PragueSender::new(&self.params, clock_us(now, now)));
        self.service(now, out);
    }

    fn on_packet(&mut self, pkt: &Packet, now: Time, out: &mut Outbox) {
        if self.snd.is_none() || pkt.kind != PacketKind::UdpAck {
            return;
        }
        match self.reads.as_mut() {
            Some(r) => r.arrive(pkt, now),
            None => self.read_ack(pkt, now, out),
        }
    }

    fn on_timer(&mut self, now: Time, out: &mut Outbox) {
        let read_due = self.reads.as_ref().and_then(|r| r.read_at).is_some_and(|at| at <= now);
        // A timer that expires while the program is busy with an ACK is seen when it is free.
        let busy_until = self.reads.as_ref().map_or(0, |r| r.busy_until);
        let wake_due = self.wake.is_some_and(|w| w.max(busy_until) <= now);
        // An earlier pending expiry than the wait now aimed at: nothing to do yet.
        if !read_due && !wake_due {
            return;
        }
        if let Some(r) = self.reads.as_mut().filter(|r| r.busy.is_some()) {
            // Woken by the timer: it reads what has come meanwhile, one by one.
            if wake_due && r.head < r.pending.len() {
                r.read_at = Some(now);
            }
            let mut read = false;
            while let Some(p) = self.reads.as_mut().and_then(|r| r.next(now)) {
                self.read_ack(&p, now, out);
                read = true;
            }
            if read || !wake_due {
                return;
            }
        }
        // Awake (by the socket or the timer): read every ACK that has arrived.
        if let Some(batch) = self.reads.as_mut().filter(|r| !r.pending.is_empty()).map(ProgramReads::take) {
            for p in &batch {
                self.read_ack(p, now, out);
            }
            if let Some(r) = self.reads.as_mut() {
                r.done(batch);
            }
            return;
        }
        let Some(snd) = self.snd.as_mut() else { return };
        snd.after_wait(clock_us(now, self.t0), self.target_us, false);
        self.service(now, out);
    }

    #[inline]
    fn next_timer(&self) -> Option<Time> {
        let read = self.reads.as_ref().and_then(|r| r.read_at);
        let busy_until = self.reads.as_ref().map_or(0, |r| r.busy_until);
        let wake = self.wake.filter(|&t| t < self.stop).map(|t| t.max(busy_until));
        match (read, wake) {
            (Some(r), Some(w)) => Some(r.min(w)),
            (r, w) => r.or(w),
        }
    }

    fn is_finished(&self) -> bool {
        self.snd.is_some() && self.wake.filter(|&t| t < self.stop).is_none()
    }

    fn measured(&self) -> Option<&dyn Measured> {
        Some(self)
    }
}

impl Measured for UdpPragueSource {
    fn add_cumulative(&self, c: &mut FlowCumulative) {
        if let Some(s) = &self.snd {
            c.rtt_sum_us += self.rtt_sum_us;
            c.rtt_samples += self.rtt_samples;
            c.segments_sent += s.stats.packets_sent;
            c.payload_bytes_sent += s.stats.bytes_sent;
        }
    }
    fn sample(&self, s: &mut FlowSample) {
        let Some(snd) = &self.snd else { return };
        let srtt = snd.cc.srtt_us();
        s.srtt_ms = if srtt > 0 { srtt as f64 / 1000.0 } else { f64::NAN };
        s.cwnd = snd.cc.packet_window() as f64;
        s.alpha = snd.cc.alpha();
        s.pacing_rate_mbps = snd.cc.pacing_rate() as f64 * 8.0 / 1e6;
    }
    fn summarise(&self, _flow_start: Time, s: &mut FlowSummary) {
        s.kind = KIND.into();
        s.cc = KIND.into();
        s.mean_rtt_ms =
            if self.rtt_samples > 0 { self.rtt_sum_us as f64 / self.rtt_samples as f64 / 1000.0 } else { f64::NAN };
        let Some(snd) = &self.snd else { return };
        s.packets_sent = snd.stats.packets_sent;
        s.rto_count = snd.stats.resets;
        s.final_cwnd = snd.cc.packet_window().min(u32::MAX as u64) as u32;
        let n = snd.stats.packets_sent as f64;
        s.mean_payload_bytes = if n > 0.0 { snd.stats.bytes_sent as f64 / n } else { f64::NAN };
        s.mean_pacing_rate_mbps = if n > 0.0 { self.pacing_sum as f64 / n * 8.0 / 1e6 } else { f64::NAN };
    }
}

/// The receiving end: counts what arrives and answers each data packet with an ACK.
pub struct UdpPragueSink {
    flow: u32,
    rcv: PragueReceiver,
    delivered_bytes: u64,
    ce_packets: u64,
    ce_bytes: u64,
    packets: u64,
    acks_sent: u64,
    /// The receiving program's host (`receiver_wake_latency_ns`).
    reads: Option<ProgramReads>,
}

impl UdpPragueSink {
    pub fn new(flow: u32, cfg: &UdpPragueFlowConfig, seed: u64) -> Self {
        UdpPragueSink {
            flow,
            rcv: PragueReceiver::new(clock_us(0, 0)),
            delivered_bytes: 0,
            ce_packets: 0,
            ce_bytes: 0,
            packets: 0,
            acks_sent: 0,
            reads: ProgramReads::new(
                HostTime {
                    mean_ns: cfg.receiver_wake_latency_ns,
                    quantiles: &cfg.receiver_wake_quantiles_ns,
                    tail: &cfg.receiver_wake_tail_quantiles_ns,
                },
                rng::stream(seed, rng::Stream::ReceiverWake(flow)),
                HostTime {
                    mean_ns: cfg.receiver_busy_time_ns,
                    quantiles: &cfg.receiver_busy_quantiles_ns,
                    tail: &cfg.receiver_busy_tail_quantiles_ns,
                },
                rng::stream(seed, rng::Stream::ReceiverBusy(flow)),
            ),
        }
    }
    /// The receiver's counters (received, CE, lost).
    pub fn counters(&self) -> AckCounters {
        self.rcv.counters()
    }
}

impl UdpPragueSink {
    /// Read one data packet at `now` and answer it.
    fn read_data(&mut self, pkt: &Packet, now: Time, out: &mut Outbox) {
        let msg = DataMsg {
            timestamp: pkt.tcp.tsval as i32,
            echoed_timestamp: pkt.tcp.tsecr as i32,
            seq: pkt.tcp.seq as u32 as i32,
            frame: None,
        };
        let (ack, ecn) = self.rcv.on_data(clock_us(now, 0), ecn_bits(pkt.ecn), &msg);
        self.packets += 1;
        self.delivered_bytes += pkt.payload as u64;
        if pkt.ecn == Ecn::Ce {
            self.ce_packets += 1;
            self.ce_bytes += pkt.payload as u64;
        }
        self.acks_sent += 1;
        out.push(ack_packet(self.flow, &ack, ecn));
    }
}

impl Endpoint for UdpPragueSink {
    fn on_packet(&mut self, pkt: &Packet, now: Time, out: &mut Outbox) {
        if pkt.kind != PacketKind::Udp {
            return;
        }
        match self.reads.as_mut() {
            Some(r) => r.arrive(pkt, now),
            None => self.read_data(pkt, now, out),
        }
    }
    fn on_timer(&mut self, now: Time, out: &mut Outbox) {
        let Some(r) = self.reads.as_mut().filter(|r| r.read_at.is_some_and(|at| at <= now)) else { return };
        if r.busy.is_some() {
            while let Some(p) = self.reads.as_mut().and_then(|r| r.next(now)) {
                self.read_data(&p, now, out);
            }
            return;
        }
        let batch = r.take();
        for p in &batch {
            self.read_data(p, now, out);
        }
        if let Some(r) = self.reads.as_mut() {
            r.done(batch);
        }
    }
    fn next_timer(&self) -> Option<Time> {
        self.reads.as_ref().and_then(|r| r.read_at)
    }
    fn is_finished(&self) -> bool {
        true
    }
    fn measured(&self) -> Option<&dyn Measured> {
        Some(self)
    }
}

impl Measured for UdpPragueSink {
    fn add_cumulative(&self, c: &mut FlowCumulative) {
        c.bytes_delivered += self.delivered_bytes;
        c.ce_packets += self.ce_packets;
    }
    fn summarise(&self, _flow_start: Time, s: &mut FlowSummary) {
        s.acks_sent = self.acks_sent;
        s.ce_packets = self.ce_packets;
        s.ce_bytes = self.ce_bytes;
        s.acks_per_packet = if self.packets > 0 { self.acks_sent as f64 / self.packets as f64 } else { f64::NAN };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn measured_wake_latency_draws_between_the_quantiles() {
        // Quantiles 0, 50 and 100 %: half the draws in [0, 100] µs, half in [100, 1000]
        // µs, each uniform: mean 0.5 · 50 + 0.5 · 550 = 300 µs.
        let t = |mean_ns, quantiles, tail| HostTime { mean_ns, quantiles, tail };
        let mut w =
            WakeLatency::new(t(0, &[0, 100_000, 1_000_000], &[]), rng::stream(1, rng::Stream::SenderWake(0))).unwrap();
        let n = 100_000;
        let draws: Vec<u64> = (0..n).map(|_| w.draw_ns()).collect();
        let mean = draws.iter().sum::<u64>() as f64 / n as f64;
        let below = draws.iter().filter(|&&d| d <= 100_000).count() as f64 / n as f64;
        // Standard errors: mean ≈ 1.0 µs (sd ≈ 310 µs), fraction ≈ 0.0016.
        assert!((mean - 300_000.0).abs() < 6_000.0, "mean {mean}");
        assert!((below - 0.5).abs() < 0.01, "below 100 µs {below}");
        assert!(draws.iter().all(|&d| d <= 1_000_000));
        // A mean alone is Exp(mean); neither is an ideal host.
        assert!(WakeLatency::new(t(0, &[], &[]), rng::stream(1, rng::Stream::SenderWake(0))).is_none());
        assert!(matches!(
            WakeLatency::new(t(5, &[], &[]), rng::stream(1, rng::Stream::SenderWake(0))),
            Some(WakeLatency::Exp(_))
        ));
    }

    #[test]
    fn the_tail_resolves_the_top_step() {
        // 11 quantiles, 10 % steps: 10..=100 µs, then the maximum 10 ms. Alone, the top
        // step spreads 10 % of the draws evenly up to 10 ms (mean 5.05 ms there); with a
        // tail whose points are all 100 µs but the last, those draws stay at 100 µs but
        // for the top tenth of a step of the tail's 10 steps (1 % of all draws, mean 5.05 ms).
        let us = 1000u64;
        let q: Vec<u64> = (1..=10).map(|k| k * 10 * us).chain([10_000 * us]).collect();
        let tail: Vec<u64> = [100 * us; 10].into_iter().chain([10_000 * us]).collect();
        let n = 200_000;
        let above = |tail: &[u64]| {
            let h = HostTime { mean_ns: 0, quantiles: &q, tail };
            let mut w = WakeLatency::new(h, rng::stream(1, rng::Stream::ReceiverWake(0))).unwrap();
            (0..n).filter(|_| w.draw_ns() > 200 * us).count() as f64 / n as f64
        };
        // Above 200 µs: 10 % × 9800/9900 = 9.9 % without the tail, a tenth of that with it
        // (standard errors 0.07 and 0.02 %).
        let (without, with) = (above(&[]), above(&tail));
        assert!((without - 0.099).abs() < 0.003, "without the tail {without}");
        assert!((with - 0.0099).abs() < 0.001, "with the tail {with}");
    }

    #[test]
    fn a_busy_program_reads_one_datagram_at_a_time_and_needs_no_wake_up_while_busy() {
        // Wakes 50 µs after a datagram reaches a sleeping program; busy 30 µs with each.
        let us = 1000;
        let (wake, busy) = (vec![50 * us, 50 * us], vec![30 * us, 30 * us]);
        let s = |k| rng::stream(1, k);
        let h = |quantiles| HostTime { mean_ns: 0, quantiles, tail: &[] };
        let mut r =
            ProgramReads::new(h(&wake), s(rng::Stream::ReceiverWake(0)), h(&busy), s(rng::Stream::ReceiverBusy(0)))
                .unwrap();
        let p = |seq| {
            let mut p = Packet::new(0, PacketKind::Udp);
            p.tcp.seq = seq;
            p
        };
        // Three arrive while it sleeps: read at the wake-up, then one per 30 µs.
        for (seq, at) in [(1, 0), (2, 10 * us), (3, 20 * us)] {
            r.arrive(&p(seq), at);
        }
        let mut reads = Vec::new();
        let mut read = |r: &mut ProgramReads, until: Time| {
            while let Some(at) = r.read_at.filter(|&at| at <= until) {
                while let Some(q) = r.next(at) {
                    reads.push((q.tcp.seq, at / us));
                }
            }
        };
        read(&mut r, 100 * us);
        // One arrives while it is busy with the third (until 140 µs): read when it is free.
        r.arrive(&p(4), 120 * us);
        read(&mut r, 199 * us);
        // One arrives after it went back to sleep: a wake-up again.
        r.arrive(&p(5), 200 * us);
        read(&mut r, 1000 * us);
        assert_eq!(reads, vec![(1, 50), (2, 80), (3, 110), (4, 140), (5, 250)]);
        assert!(r.read_at.is_none() && r.pending.is_empty());
        // A busy time alone: it wakes at once (1 ns) and still reads one at a time.
        let mut r =
            ProgramReads::new(h(&[]), s(rng::Stream::SenderWake(0)), h(&busy), s(rng::Stream::SenderBusy(0))).unwrap();
        r.arrive(&p(1), 0);
        r.arrive(&p(2), 0);
        assert_eq!(r.read_at, Some(1));
        assert_eq!(r.next(1).map(|q| q.tcp.seq), Some(1));
        assert_eq!((r.next(1).map(|q| q.tcp.seq), r.read_at), (None, Some(1 + 30 * us)));
        // Neither: an ideal host, no model at all.
        assert!(
            ProgramReads::new(h(&[]), s(rng::Stream::SenderWake(0)), h(&[]), s(rng::Stream::SenderBusy(0))).is_none()
        );
    }

    #[test]
    fn ack_round_trips_through_the_packet() {
        let ack = AckMsg {
            ack_seq: -5,
            timestamp: 123_456,
            echoed_timestamp: -7,
            counters: AckCounters { received: i32::MAX, ce: 17, lost: -1, error_l4s: true },
        };
        let p = ack_packet(3, &ack, 1);
        assert_eq!((p.kind, p.wire_len, p.ecn), (PacketKind::UdpAck, 68, Ecn::Ect1));
        assert_eq!(ack_of(&p), ack);
    }
}
