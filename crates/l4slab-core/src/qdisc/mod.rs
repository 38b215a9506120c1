//! Queueing disciplines behind one trait, after Linux `net/sched`'s
//! enqueue/dequeue/peek split (`struct Qdisc_ops`).
//!
//! A qdisc timestamps packets on enqueue, may drop at enqueue (tail drop, PIE) or at
//! dequeue (CoDel, DualPI2) and may mark CE. Drops and marks are reported through
//! [`QdiscCtx`] so the simulator can attribute them to flows; `tc -s`-style counters
//! live in [`QdiscStats`]. A qdisc with a periodic controller (PIE, DualPI2) exposes
//! its next timer expiry and is called back at that time.
//!
//! The qdiscs are sans-IO: they see a packet only through [`QdiscPacket`] (what
//! `sch_*.c` reads of an `skb`: `qdisc_pkt_len`, the ECN field, the flow hash, the
//! enqueue timestamp in `skb->cb`) and time only as the `now` they are given, so any
//! driver (this simulator's `Packet` and event clock, or an emulator with real frames
//! and a wall clock) can run them. Nothing here imports the simulator.

use crate::rng::SimRng;
use crate::time::Time;
use serde::{Deserialize, Serialize};

pub mod codel;
pub mod dualpi2;
pub mod fifo;
pub mod fq;
pub mod fq_codel;
pub mod pie;
#[cfg(test)]
pub(crate) mod testutil;

/// The IP ECN field (RFC 3168 §5; Linux `include/net/inet_ecn.h` `INET_ECN_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum Ecn {
    #[default]
    #[serde(alias = "not_ect", alias = "notect")]
    NotEct = 0b00,
    #[serde(alias = "ect1", alias = "ect_1")]
    Ect1 = 0b01,
    #[serde(alias = "ect0", alias = "ect_0")]
    Ect0 = 0b10,
    Ce = 0b11,
}

impl Ecn {
    /// ECN-capable transport (ECT(0), ECT(1) or already CE).
    #[inline]
    pub fn is_ect(self) -> bool {
        self != Ecn::NotEct
    }
}

/// What a qdisc reads and writes of a packet (of Linux's `struct sk_buff` and the
/// qdisc's `skb->cb`). Implemented by the simulator's `Packet`; an emulator
/// implements it for its frames. Called per packet, so implementations should be
/// `#[inline]` field accesses.
pub trait QdiscPacket: Send + 'static {
    /// `qdisc_pkt_len(skb)`: the L2 frame length the qdisc accounts (bytes).
    fn wire_len(&self) -> u32;
    /// The IP ECN field.
    fn ecn(&self) -> Ecn;
    /// Overwrite the IP ECN field.
    fn set_ecn(&mut self, ecn: Ecn);
    /// The IPv4 TOS / IPv6 traffic-class byte, `DSCP << 2 | ECN` (`ipv4_get_dsfield`),
    /// which fq_codel's `ce_threshold_selector` masks. Default: DSCP 0.
    #[inline]
    fn dsfield(&self) -> u8 {
        self.ecn() as u8
    }
    /// Flow identity: the input of the flow hash that stands in for `skb_get_hash`
    /// (fq, fq_codel), and the flow a CE mark is reported for ([`QdiscCtx::marked`]).
    fn flow_key(&self) -> u32;
    /// Time the packet entered the qdisc (`codel_skb_cb`/`dualpi2_skb_cb` `ts`).
    fn enqueue_ts(&self) -> Time;
    fn set_enqueue_ts(&mut self, now: Time);
    /// Record the sub-queue the packet was put in, indexing [`Qdisc::class_names`]
    /// (for per-class sojourn statistics; DualPI2: 0 = C, 1 = L).
    fn set_qclass(&mut self, class: u8);

    /// `INET_ECN_set_ce`: set CE if ECN-capable. Returns `false` for Not-ECT (the
    /// caller then drops); an already-CE packet counts as marked.
    #[inline]
    fn set_ce(&mut self) -> bool {
        if self.ecn().is_ect() {
            self.set_ecn(Ecn::Ce);
            true
        } else {
            false
        }
    }
}

/// Counters as `tc -s qdisc show` prints them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct QdiscStats {
    pub sent_bytes: u64,
    pub sent_packets: u64,
    pub drops: u64,
    pub overlimits: u64,
    pub requeues: u64,
    /// CE marks (`ecn_mark` / `ce_mark`), re-marks of CE packets included.
    pub marks: u64,
    pub backlog_bytes: u64,
    pub backlog_packets: u64,
    /// Largest backlog seen, packets.
    pub maxq_packets: u64,
}

impl QdiscStats {
    /// Account a packet entering the queue.
    #[inline]
    pub fn on_enqueue<P: QdiscPacket>(&mut self, pkt: &P) {
        self.backlog_bytes += pkt.wire_len() as u64;
        self.backlog_packets += 1;
        self.maxq_packets = self.maxq_packets.max(self.backlog_packets);
    }
    /// Account a packet leaving the queue (sent or dropped at dequeue).
    #[inline]
    pub fn on_remove<P: QdiscPacket>(&mut self, pkt: &P) {
        self.backlog_bytes -= pkt.wire_len() as u64;
        self.backlog_packets -= 1;
    }
    /// Account a packet handed to the link.
    #[inline]
    pub fn on_sent<P: QdiscPacket>(&mut self, pkt: &P) {
        self.sent_bytes += pkt.wire_len() as u64;
        self.sent_packets += 1;
    }
}

/// What a qdisc may use and report during one call.
pub struct QdiscCtx<'a, P> {
    /// The run's qdisc random stream.
    pub rng: &'a mut SimRng,
    /// Packets dropped during the call (drained by the simulator).
    pub dropped: &'a mut Vec<P>,
    /// Flows whose packet was CE-marked during the call (drained by the simulator).
    pub marked: &'a mut Vec<u32>,
}

impl<P: QdiscPacket> QdiscCtx<'_, P> {
    /// Report a dropped packet (its ownership ends here).
    #[inline]
    pub fn drop_packet(&mut self, pkt: P) {
        self.dropped.push(pkt);
    }
    /// Report a CE mark on a packet of `flow`.
    #[inline]
    pub fn note_mark(&mut self, flow: u32) {
        self.marked.push(flow);
    }

    /// Drop `pkt`: count it in the qdisc's `tc -s` drops and report it.
    #[inline]
    pub fn drop_counted(&mut self, stats: &mut QdiscStats, pkt: P) {
        stats.drops += 1;
        self.drop_packet(pkt);
    }

    /// A CE mark on a packet of `flow`: count it in the `tc -s` marks and report it.
    #[inline]
    pub fn mark_counted(&mut self, stats: &mut QdiscStats, flow: u32) {
        stats.marks += 1;
        self.note_mark(flow);
    }
}

/// A queueing discipline.
pub trait Qdisc<P: QdiscPacket>: Send {
    /// `tc` kind, e.g. "bfifo".
    fn kind(&self) -> &'static str;

    /// Accept or drop `pkt` arriving at `now`. Dropped packets go to `ctx`.
    fn enqueue(&mut self, pkt: P, now: Time, ctx: &mut QdiscCtx<P>);

    /// Return the next packet to send, applying any dequeue-time AQM action.
    fn dequeue(&mut self, now: Time, ctx: &mut QdiscCtx<P>) -> Option<P>;

    /// The packet `dequeue` would consider next, without AQM action.
    fn peek(&self) -> Option<&P>;

    /// Counters.
    fn stats(&self) -> &QdiscStats;

    /// Next time the qdisc's own timer fires, if any.
    fn next_timer(&self) -> Option<Time> {
        None
    }

    /// Timer callback at `now` (the simulator calls it at `next_timer()`).
    fn on_timer(&mut self, _now: Time, _ctx: &mut QdiscCtx<P>) {}

    /// Packets queued.
    fn len(&self) -> usize {
        self.stats().backlog_packets as usize
    }

    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Qdisc-specific statistics for `tc -s` output (e.g. DualPI2's `prob`,
    /// `delay_c`, `delay_l`, `pkts_in_c`, `pkts_in_l`, `step_marks`). Called once at
    /// the end of a run.
    fn extra_stats(&self) -> Vec<(&'static str, f64)> {
        Vec::new()
    }

    /// Names of the sub-queues a packet's `qclass` refers to (index = class), for
    /// per-queue sojourn statistics; a single-queue qdisc has one.
    fn class_names(&self) -> &'static [&'static str] {
        &["all"]
    }
}

/// Build the qdisc a scenario asks for.
pub fn build<P: QdiscPacket>(config: &crate::config::QdiscConfig, rng: &mut SimRng) -> Box<dyn Qdisc<P>> {
    use crate::config::QdiscConfig;
    match config {
        QdiscConfig::Bfifo { limit_bytes } => Box::new(fifo::Fifo::bfifo(*limit_bytes)),
        QdiscConfig::Pfifo { limit_packets } => Box::new(fifo::Fifo::pfifo(*limit_packets)),
        QdiscConfig::Dualpi2(p) => Box::new(dualpi2::DualPi2::new(p.clone(), rng)),
        QdiscConfig::Pie(p) => Box::new(pie::Pie::new(p.clone())),
        QdiscConfig::Codel(p) => Box::new(codel::Codel::new(p.clone())),
        QdiscConfig::FqCodel(p) => Box::new(fq_codel::FqCodel::new(p.clone(), rng)),
        QdiscConfig::Fq(p) => Box::new(fq::Fq::new(p.clone(), rng)),
    }
}

/// Packet flow hash for the flow-queueing qdiscs (fq, fq_codel), standing in for
/// `skb_get_hash` (a keyed jhash of the 5-tuple): the flow id times an odd constant,
/// xor the perturbation key, then murmur3's finaliser. A bijection of `flow` for a
/// fixed key, so distinct flows share a bucket only through the final masking or
/// `reciprocal_scale`.
#[inline]
pub(crate) fn flow_hash(flow: u32, perturbation: u32) -> u32 {
    let mut h = flow.wrapping_mul(0x9E37_79B1) ^ perturbation;
    h ^= h >> 16;
    h = h.wrapping_mul(0x85EB_CA6B);
    h ^= h >> 13;
    h = h.wrapping_mul(0xC2B2_AE35);
    h ^ (h >> 16)
}
