//! The emulated link stages: a shaped queue (an HTB class `rate R burst B` with the
//! scenario's child qdisc, Linux `sch_htb.c`, reusing the engine's
//! `l4slab_core::net::shaper::Shaper` and `l4slab_core::qdisc::build`) and constant
//! propagation delays (a FIFO per flow and direction: a constant delay keeps order).

use crate::packet::EmuPacket;
use l4slab_core::config::BottleneckConfig;
use l4slab_core::net::shaper::Shaper;
use l4slab_core::qdisc::{self, Qdisc, QdiscCtx};
use l4slab_core::rng::SimRng;
use l4slab_core::time::Time;
use std::collections::VecDeque;

/// An HTB class with its child qdisc, driven with event times from the wall clock.
pub struct ShapedQueue {
    pub shaper: Shaper,
    pub qdisc: Box<dyn Qdisc<EmuPacket>>,
    rng: SimRng,
    /// Packets the qdisc dropped during the last call (drained by the caller).
    pub dropped: Vec<EmuPacket>,
    /// Flow keys the qdisc reported CE marks for (cleared by the caller; marks are
    /// attributed to flows by comparing a packet's ECN on arrival and on dequeue).
    pub marked: Vec<u32>,
}

impl ShapedQueue {
    /// `capacity`: the most packets the caller can ever hold (the pool size), so the
    /// report vectors never grow in the loop.
    pub fn new(cfg: &BottleneckConfig, mut rng: SimRng, capacity: usize) -> Self {
        let qdisc = qdisc::build(&cfg.qdisc, &mut rng);
        ShapedQueue {
            shaper: Shaper::new(cfg.rate_bps, cfg.burst_bytes),
            qdisc,
            rng,
            dropped: Vec::with_capacity(capacity),
            marked: Vec::with_capacity(capacity),
        }
    }

    #[inline]
    pub fn enqueue(&mut self, pkt: EmuPacket, now: Time) {
        let mut ctx = QdiscCtx { rng: &mut self.rng, dropped: &mut self.dropped, marked: &mut self.marked };
        self.qdisc.enqueue(pkt, now, &mut ctx);
    }

    /// When the class will next hand a packet to the wire: `None` if the qdisc is
    /// empty; else the time the token balance is non-negative (`htb_dequeue` sends
    /// while tokens ≥ 0 and charges afterwards, "send first, pay after").
    #[inline]
    pub fn next_departure(&self, now: Time) -> Option<Time> {
        if self.qdisc.is_empty() {
            None
        } else {
            Some(self.shaper.next_send_time(now))
        }
    }

    /// Dequeue one packet at `now` (the caller checked [`Self::next_departure`] ≤ now)
    /// and charge it to the bucket. `None` when the qdisc's AQM dropped what it had.
    #[inline]
    pub fn dequeue(&mut self, now: Time) -> Option<EmuPacket> {
        let mut ctx = QdiscCtx { rng: &mut self.rng, dropped: &mut self.dropped, marked: &mut self.marked };
        let p = self.qdisc.dequeue(now, &mut ctx)?;
        self.shaper.charge(now, l4slab_core::qdisc::QdiscPacket::wire_len(&p));
        Some(p)
    }

    /// The qdisc's own timer (PIE's and DualPI2's periodic probability update).
    #[inline]
    pub fn next_timer(&self) -> Option<Time> {
        self.qdisc.next_timer()
    }

    #[inline]
    pub fn on_timer(&mut self, now: Time) {
        let mut ctx = QdiscCtx { rng: &mut self.rng, dropped: &mut self.dropped, marked: &mut self.marked };
        self.qdisc.on_timer(now, &mut ctx);
    }
}

/// A constant propagation delay: packets leave in arrival order `delay_ns` after
/// they entered.
pub struct DelayFifo {
    pub delay_ns: u64,
    q: VecDeque<(Time, EmuPacket)>,
}

impl DelayFifo {
    pub fn new(delay_ns: u64, capacity: usize) -> Self {
        DelayFifo { delay_ns, q: VecDeque::with_capacity(capacity) }
    }
    /// Put `pkt` on the wire at `now`; it is due at `now + delay`.
    #[inline]
    pub fn push(&mut self, now: Time, pkt: EmuPacket) {
        debug_assert!(self.q.back().is_none_or(|b| b.0 <= now + self.delay_ns));
        self.q.push_back((now + self.delay_ns, pkt));
    }
    /// When the head is due.
    #[inline]
    pub fn head_due(&self) -> Option<Time> {
        self.q.front().map(|e| e.0)
    }
    #[inline]
    pub fn pop(&mut self) -> Option<(Time, EmuPacket)> {
        self.q.pop_front()
    }
    pub fn len(&self) -> usize {
        self.q.len()
    }
    pub fn is_empty(&self) -> bool {
        self.q.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::{write_udp, Buf, BUF_LEN};
    use l4slab_core::config::BottleneckConfig;
    use l4slab_core::qdisc::{fifo::BfifoParams, Ecn, QdiscConfig};
    use l4slab_core::rng::{stream, Stream};

    fn udp(n: usize, sport: u16) -> EmuPacket {
        let mut b: Buf = Box::new([0u8; BUF_LEN]);
        let len = write_udp(&mut b, [10, 250, 0, 1], [10, 251, 0, 1], sport, 5201, n - 28, Ecn::Ect0, 1);
        EmuPacket::parse(b, len, 0).map_err(|e| e.1).unwrap()
    }

    fn bfifo(limit: u64) -> BottleneckConfig {
        let json = serde_json::json!({"rate_bps": 20_000_000u64, "qdisc": {"kind": "bfifo", "limit_bytes": limit}});
        let _ = BfifoParams::default();
        let c: BottleneckConfig = serde_json::from_value(json).unwrap();
        assert!(matches!(c.qdisc, QdiscConfig::Bfifo(_)));
        c
    }

    #[test]
    fn a_backlog_drains_at_the_configured_rate() {
        // 20 Mbit/s, 1514-B frames: one every 605.6 µs once the 1600-B bucket is spent.
        let mut q = ShapedQueue::new(&bfifo(1_000_000), stream(1, Stream::Qdisc), 1024);
        let start = 1_000_000_000;
        for i in 0..200 {
            q.enqueue(udp(1500, 1000 + i), start);
        }
        let mut now = start;
        let mut sent = 0u64;
        let mut last = start;
        while let Some(t) = q.next_departure(now) {
            now = t;
            let p = q.dequeue(now).unwrap();
            sent += l4slab_core::qdisc::QdiscPacket::wire_len(&p) as u64;
            last = now;
        }
        assert_eq!(sent, 200 * 1514);
        // The first two leave at once on the full 1600-B bucket (640 µs of tokens), which
        // leaves 640 − 2 × 605.6 = −571.2 µs: the third goes 571.2 µs later, the other
        // 197 every 605.6 µs (as the engine's `two_frames_back_to_back_then_line_rate`).
        let expect = 571_200 + 197 * 605_600;
        assert!((last - start).abs_diff(expect) <= 200, "drained in {} ns, expected {expect}", last - start);
        let rate = (sent - 2 * 1514) as f64 * 8.0 / ((last - start) as f64 * 1e-9);
        assert!((rate / 20e6 - 1.0).abs() < 0.001, "rate {rate}");
    }

    #[test]
    fn bfifo_tail_drops_beyond_its_byte_limit() {
        let mut q = ShapedQueue::new(&bfifo(10 * 1514), stream(1, Stream::Qdisc), 64);
        for i in 0..15 {
            q.enqueue(udp(1500, i), 0);
        }
        assert_eq!(q.qdisc.len(), 10);
        assert_eq!(q.dropped.len(), 5);
        assert_eq!(q.qdisc.stats().drops, 5);
    }

    #[test]
    fn the_delay_line_releases_in_order_after_its_delay() {
        let mut d = DelayFifo::new(10_000_000, 8);
        d.push(5, udp(100, 1));
        d.push(7, udp(100, 2));
        assert_eq!(d.head_due(), Some(10_000_005));
        let (t, p) = d.pop().unwrap();
        assert_eq!((t, p.ip_len()), (10_000_005, 100));
        assert_eq!(d.head_due(), Some(10_000_007));
        d.pop();
        assert!(d.is_empty() && d.head_due().is_none());
    }
}
