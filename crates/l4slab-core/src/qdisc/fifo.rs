//! `pfifo` and `bfifo` (Linux `net/sched/sch_fifo.c`): tail drop on a packet or
//! byte limit, no marking.

use super::{Qdisc, QdiscCtx, QdiscKind, QdiscPacket, QdiscStats, PSCHED_MTU};
use crate::rng::SimRng;
use crate::schema::{ParamKind, ParamSpec};
use crate::time::Time;
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::collections::VecDeque;

/// `DEFAULT_TX_QUEUE_LEN` of an Ethernet device (`ether_setup`), the limit
/// `sch_fifo.c:fifo_init` starts from when tc gives none.
pub const DEFAULT_TX_QUEUE_LEN: u32 = 1000;

/// `tc qdisc add ... bfifo` parameters.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct BfifoParams {
    /// `limit`: bytes of L2 frames (`qdisc_pkt_len`). Default `tx_queue_len x
    /// psched_mtu` = 1 514 000 (`fifo_init`).
    pub limit_bytes: u64,
}

impl Default for BfifoParams {
    fn default() -> Self {
        BfifoParams { limit_bytes: DEFAULT_TX_QUEUE_LEN as u64 * PSCHED_MTU as u64 }
    }
}

/// `tc qdisc add ... pfifo` parameters.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PfifoParams {
    /// `limit`: packets. Default `tx_queue_len` = 1000 (`fifo_init`).
    pub limit_packets: u32,
}

impl Default for PfifoParams {
    fn default() -> Self {
        PfifoParams { limit_packets: DEFAULT_TX_QUEUE_LEN }
    }
}

impl QdiscKind for BfifoParams {
    const KIND: &'static str = "bfifo";
    const DOC: &'static str = "Byte-limited drop-tail FIFO (net/sched/sch_fifo.c:bfifo_enqueue).";
    fn params() -> Vec<ParamSpec> {
        vec![ParamSpec::new(
            "limit_bytes",
            ParamKind::Bytes,
            json!(BfifoParams::default().limit_bytes),
            "Backlog limit in L2 bytes; an arrival that would exceed it is dropped. Default tx_queue_len 1000 x \
             psched_mtu 1514 (net/sched/sch_fifo.c:fifo_init); u32 in struct tc_fifo_qopt.",
        )
        .range(1.0, u32::MAX as f64)]
    }
    fn build<P: QdiscPacket>(&self, _rng: &mut SimRng) -> Box<dyn Qdisc<P>> {
        Box::new(Fifo::bfifo(self.limit_bytes))
    }
}

impl QdiscKind for PfifoParams {
    const KIND: &'static str = "pfifo";
    const DOC: &'static str = "Packet-limited drop-tail FIFO (net/sched/sch_fifo.c:pfifo_enqueue).";
    fn params() -> Vec<ParamSpec> {
        vec![ParamSpec::new(
            "limit_packets",
            ParamKind::Packets,
            json!(DEFAULT_TX_QUEUE_LEN),
            "Queue limit in packets; arrivals to a full queue are dropped. Default tx_queue_len 1000 \
             (net/sched/sch_fifo.c:fifo_init); u32 in struct tc_fifo_qopt.",
        )
        .range(1.0, u32::MAX as f64)]
    }
    fn build<P: QdiscPacket>(&self, _rng: &mut SimRng) -> Box<dyn Qdisc<P>> {
        Box::new(Fifo::pfifo(self.limit_packets))
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Limit {
    /// bfifo: backlog + this packet's L2 length must not exceed the limit.
    Bytes(u64),
    /// pfifo: queue length must be below the limit.
    Packets(u32),
}

/// A drop-tail FIFO.
pub struct Fifo<P> {
    queue: VecDeque<P>,
    limit: Limit,
    stats: QdiscStats,
}

impl<P> Fifo<P> {
    /// `bfifo limit BYTES`.
    pub fn bfifo(limit_bytes: u64) -> Self {
        Self::with_limit(Limit::Bytes(limit_bytes), (limit_bytes / 64) as usize)
    }

    /// `pfifo limit PACKETS`.
    pub fn pfifo(limit_packets: u32) -> Self {
        Self::with_limit(Limit::Packets(limit_packets), limit_packets as usize)
    }

    /// The ring starts at most 256 packets long and grows (by doubling) to what the
    /// queue holds: a ring sized to the limit (65 536 slots, 4 MB, for a 5-MB bfifo)
    /// would be swept by its head and tail through the caches, a fresh line for every
    /// few packets, however short the queue.
    fn with_limit(limit: Limit, capacity: usize) -> Self {
        Fifo { queue: VecDeque::with_capacity(capacity.clamp(16, 256)), limit, stats: QdiscStats::default() }
    }
}

impl<P: QdiscPacket + Copy> Fifo<P> {
    /// [`Qdisc::enqueue`] of a packet the caller holds by reference: copied once,
    /// from there into the ring's slot (the link's per-packet path; by value it was
    /// copied to the stack first).
    #[inline]
    pub fn enqueue_ref(&mut self, pkt: &P, now: Time, ctx: &mut QdiscCtx<P>) {
        let fits = match self.limit {
            Limit::Bytes(limit) => self.stats.backlog_bytes + pkt.wire_len() as u64 <= limit,
            Limit::Packets(limit) => self.queue.len() < limit as usize,
        };
        if !fits {
            ctx.drop_counted(&mut self.stats, *pkt);
            return;
        }
        self.stats.on_enqueue(pkt);
        self.queue.push_back(*pkt);
        if let Some(p) = self.queue.back_mut() {
            p.set_enqueue_ts(now);
        }
    }

    /// [`Qdisc::dequeue`] into `out`: the head is copied from its slot to `out` and
    /// the slot dropped, instead of moved out through an `Option` and copied again.
    /// False (and `out` untouched) if the queue is empty.
    #[inline]
    pub fn dequeue_into(&mut self, out: &mut P) -> bool {
        let Some(pkt) = self.queue.front() else { return false };
        *out = *pkt;
        self.queue.pop_front();
        self.stats.on_remove(out);
        self.stats.on_sent(out);
        true
    }
}

impl<P: QdiscPacket> Qdisc<P> for Fifo<P> {
    fn kind(&self) -> &'static str {
        match self.limit {
            Limit::Bytes(_) => "bfifo",
            Limit::Packets(_) => "pfifo",
        }
    }

    fn enqueue(&mut self, pkt: P, now: Time, ctx: &mut QdiscCtx<P>) {
        let fits = match self.limit {
            Limit::Bytes(limit) => self.stats.backlog_bytes + pkt.wire_len() as u64 <= limit,
            Limit::Packets(limit) => self.queue.len() < limit as usize,
        };
        if !fits {
            // qdisc_drop: counts a drop (and, as Linux's fifo, no overlimit).
            ctx.drop_counted(&mut self.stats, pkt);
            return;
        }
        self.stats.on_enqueue(&pkt);
        // Stamped in the queue's slot, after the copy: stamping the argument first
        // made the copy's 16-byte loads read over a fresh 8-byte store, which the
        // CPU cannot forward from its store buffer.
        self.queue.push_back(pkt);
        if let Some(p) = self.queue.back_mut() {
            p.set_enqueue_ts(now);
        }
    }

    fn dequeue(&mut self, _now: Time, _ctx: &mut QdiscCtx<P>) -> Option<P> {
        let pkt = self.queue.pop_front()?;
        self.stats.on_remove(&pkt);
        self.stats.on_sent(&pkt);
        Some(pkt)
    }

    fn peek(&self) -> Option<&P> {
        self.queue.front()
    }

    fn has_timer(&self) -> bool {
        false
    }

    fn stats(&self) -> &QdiscStats {
        &self.stats
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qdisc::testutil::TestPacket;
    use crate::qdisc::Ecn;
    use crate::rng;

    fn frame(id: u64, len: u32) -> TestPacket {
        crate::qdisc::testutil::packet(0, id, len, Ecn::NotEct)
    }

    #[test]
    fn bfifo_holds_floor_limit_over_frame_size() {
        // bfifo 250 000 B holds floor(250 000 / 1514) = 165 full frames (sch_fifo.c:bfifo_enqueue).
        let mut q = Fifo::<TestPacket>::bfifo(250_000);
        let mut r = rng::stream(1, rng::Stream::Qdisc);
        let (mut d, mut m) = (Vec::new(), Vec::new());
        let mut ctx = QdiscCtx { rng: &mut r, dropped: &mut d, marked: &mut m };
        for i in 0..200 {
            q.enqueue(frame(i, 1514), i, &mut ctx);
        }
        assert_eq!(q.len(), 165);
        assert_eq!(ctx.dropped.len(), 35);
        assert_eq!(q.stats().drops, 35);
        // FIFO order and timestamps.
        let p = q.dequeue(1000, &mut ctx).unwrap();
        assert_eq!((p.id, p.enqueue_ts), (0, 0));
        assert_eq!(q.stats().sent_packets, 1);
        assert_eq!(q.stats().backlog_bytes, 164 * 1514);
    }

    #[test]
    fn pfifo_counts_packets_not_bytes() {
        let mut q = Fifo::<TestPacket>::pfifo(3);
        let mut r = rng::stream(1, rng::Stream::Qdisc);
        let (mut d, mut m) = (Vec::new(), Vec::new());
        let mut ctx = QdiscCtx { rng: &mut r, dropped: &mut d, marked: &mut m };
        for i in 0..5 {
            q.enqueue(frame(i, if i % 2 == 0 { 66 } else { 1514 }), 0, &mut ctx);
        }
        assert_eq!(q.len(), 3);
        assert_eq!(d.len(), 2);
        assert_eq!(d[0].id, 3);
    }
}
