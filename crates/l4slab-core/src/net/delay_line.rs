//! Packets in propagation: what the wires hold between the time a packet leaves a
//! link and the time it reaches the next hop.
//!
//! All links with the same propagation delay share one line, kept sorted by each
//! packet's event key (arrival time, sequence number), so only its head needs an
//! event and a thousand flows' NICs cost one heap entry, not a thousand. Packets
//! mostly arrive in order (a constant delay after nearly monotone departures) and
//! go to the back; a packet that overtakes some (another NIC's backlog was longer)
//! is inserted in place. Each packet keeps the sequence number it would have had
//! as an event of its own (see [`crate::event`]), so the global event order is
//! unchanged; htsim's `Pipe` (`pipe.cpp`) keeps its in-flight packets the same way.
//!
//! When an insertion displaces the head, the old head's event stays in the heap;
//! an event fires only if its key is still the head's key, so such an entry (and
//! the duplicate scheduled when that packet is head again) is skipped.
//!
//! A line can instead be one interface of a delay node ([`NetemNode`]): a `netem
//! delay D` qdisc whose tfifo every flow crossing that interface shares, releasing
//! packets when its late watchdog fires or when an enqueue runs the qdisc.

use super::host_timer::HostTimer;
use crate::event::{EventQueue, LineId, LinkId, Target};
use crate::packet::Packet;
use crate::time::Time;
use std::collections::VecDeque;

/// A delay node's interface: `netem delay D` (`net/sched/sch_netem.c`) released by a
/// watchdog that fires late by the host's timer latency.
///
/// - `netem_enqueue` stamps each packet `time_to_send` = now + D and `tfifo_enqueue`
///   keeps the tfifo sorted by it; one tfifo per interface, shared by every flow that
///   leaves through it.
/// - `netem_dequeue` hands out the head once `time_to_send` ≤ now, and otherwise arms
///   the qdisc watchdog for the head's `time_to_send`
///   (`qdisc_watchdog_schedule_ns` → `sch_api.c:qdisc_watchdog_schedule_range_ns`,
///   which leaves a timer already queued for that very expiry alone and re-programs
///   it otherwise). When the hrtimer fires, late by the host's latency (`HostTimer`),
///   `qdisc_watchdog` raises `NET_TX_SOFTIRQ` and `qdisc_run` dequeues everything due
///   by then, back to back.
/// - Every enqueue also runs the qdisc (`net/core/dev.c:__dev_xmit_skb` →
///   `__qdisc_run` → `netem_dequeue`): a packet arriving between the head's due time
///   and the late firing releases every packet due by its arrival, at once.
///
/// Simplification: the lateness is one draw per arming (hrtimer interrupt and softirq
/// together), so a timer re-armed between its interrupt and its softirq (the node
/// busy in between) is not modelled; the node's egress NIC sends a batch back to back
/// at once (no serialisation: the node's NICs run at 10 Gbit/s or more, ≤ 1.2 µs per frame).
#[derive(Debug)]
pub struct NetemNode {
    delay_ns: u64,
    timer: HostTimer,
    /// The one live event of this line, (time, seq): the late watchdog armed for the
    /// head, an enqueue that runs the qdisc, or the next packet of a released batch.
    pending: Option<(Time, u64)>,
}

impl NetemNode {
    pub fn new(delay_ns: u64, timer: HostTimer) -> Self {
        NetemNode { delay_ns, timer, pending: None }
    }

    /// Run the qdisc at `at` (schedule this line's event there, superseding any other).
    #[inline]
    fn run_at(&mut self, at: Time, line: LineId, events: &mut EventQueue) {
        let seq = events.reserve_seq();
        events.push_reserved(at, seq, Target::LineHead(line));
        self.pending = Some((at, seq));
    }

    /// Arm the watchdog for a new head due at `due`: it fires late.
    #[inline]
    fn arm_watchdog(&mut self, due: Time, line: LineId, events: &mut EventQueue) {
        let fire = due + self.timer.lateness_ns();
        self.run_at(fire, line, events);
    }
}

/// One packet on the wire: when it arrives, its event key, the link it left.
#[derive(Clone, Copy, Debug)]
struct InFlight {
    arrive: Time,
    seq: u64,
    from: LinkId,
    pkt: Packet,
}

impl InFlight {
    #[inline]
    fn key(&self) -> (Time, u64) {
        (self.arrive, self.seq)
    }
}

/// A sorted delay line with one pending event for its head.
#[derive(Debug)]
pub struct DelayLine {
    id: LineId,
    fifo: VecDeque<InFlight>,
    /// A delay node's interface (its packets then leave when its netem runs, not at
    /// their due time); boxed: most lines are plain wires.
    node: Option<Box<NetemNode>>,
}

impl DelayLine {
    pub fn new(id: LineId) -> Self {
        DelayLine { id, fifo: VecDeque::with_capacity(64), node: None }
    }

    /// A delay node's interface: every packet pushed must be due its `delay_ns` after
    /// it reached the node.
    pub fn new_netem(id: LineId, node: NetemNode) -> Self {
        DelayLine { node: Some(Box::new(node)), ..DelayLine::new(id) }
    }

    /// Put `pkt`, leaving link `from`, on the line to arrive at `arrive` (on a delay
    /// node's interface: due then, leaving when the node's netem next runs).
    #[inline(always)]
    pub fn push(&mut self, arrive: Time, from: LinkId, pkt: &Packet, events: &mut EventQueue) {
        if self.node.is_some() {
            return self.push_netem(arrive, from, pkt, events);
        }
        let seq = events.reserve_seq();
        match self.fifo.back() {
            None => events.push_reserved(arrive, seq, Target::LineHead(self.id)),
            Some(b) if b.key() <= (arrive, seq) => {}
            Some(_) => return self.insert_sorted(InFlight { arrive, seq, from, pkt: *pkt }, events),
        }
        // Built in place: a packet is copied once, into the line.
        self.fifo.push_back(InFlight { arrive, seq, from, pkt: *pkt });
    }

    #[cold]
    fn insert_sorted(&mut self, e: InFlight, events: &mut EventQueue) {
        let pos = self.fifo.partition_point(|x| x.key() < e.key());
        if pos == 0 {
            events.push_reserved(e.arrive, e.seq, Target::LineHead(self.id));
        }
        self.fifo.insert(pos, e);
    }

    /// `netem_enqueue` of a packet due at `due`, which reached the node at
    /// `due - delay` (≥ the caller's now): into the tfifo by due time, then the
    /// qdisc runs (see [`NetemNode`]).
    #[inline(never)]
    fn push_netem(&mut self, due: Time, from: LinkId, pkt: &Packet, events: &mut EventQueue) {
        let seq = events.reserve_seq();
        let e = InFlight { arrive: due, seq, from, pkt: *pkt };
        // Most packets go to the back (a constant delay after nearly monotone arrivals):
        // `push_back` there, not `insert`, whose general shifting cost as much as the rest.
        let pos = match self.fifo.back() {
            Some(b) if b.key() > e.key() => {
                let pos = self.fifo.partition_point(|x| x.key() < e.key());
                self.fifo.insert(pos, e);
                pos
            }
            _ => {
                self.fifo.push_back(e);
                self.fifo.len() - 1
            }
        };
        let node = self.node.as_deref_mut().expect("a delay node's line");
        if pos == 0 {
            // A new head: the watchdog is (re)armed for its time_to_send.
            node.arm_watchdog(due, self.id, events);
            return;
        }
        // The head already due but its watchdog late: this enqueue releases it now.
        let enqueued = due - node.delay_ns;
        if self.fifo[0].arrive <= enqueued && node.pending.is_some_and(|(t, _)| t > enqueued) {
            node.run_at(enqueued, self.id, events);
        }
    }

    /// The event (`time`, `seq`) of this line fired: take the head if the event
    /// is still its own (else `None`: a displaced head's stale entry), and
    /// schedule the next head. Returns the link the packet left; the packet is
    /// copied to `pkt` whole, from the line's slot (moved out through an
    /// `Option`, it was written in overlapping pieces around its niche byte and
    /// read back at once, which the CPU cannot forward from its store buffer).
    #[inline]
    pub fn pop(&mut self, time: Time, seq: u64, events: &mut EventQueue, pkt: &mut Packet) -> Option<LinkId> {
        if self.node.is_some() {
            return self.pop_netem(time, seq, events, pkt);
        }
        let head = self.fifo.front()?;
        if head.key() != (time, seq) {
            return None;
        }
        *pkt = head.pkt;
        let from = head.from;
        self.fifo.pop_front();
        if let Some(next) = self.fifo.front() {
            events.push_reserved(next.arrive, next.seq, Target::LineHead(self.id));
        }
        Some(from)
    }

    /// The netem qdisc runs at `time`: the head leaves if due; the next packet
    /// follows at once if due too, else the watchdog is armed for it.
    #[inline(never)]
    fn pop_netem(&mut self, time: Time, seq: u64, events: &mut EventQueue, pkt: &mut Packet) -> Option<LinkId> {
        let node = self.node.as_deref_mut().expect("a delay node's line");
        if node.pending != Some((time, seq)) {
            return None;
        }
        node.pending = None;
        // Copied to `pkt` from the line's slot, then dropped there (as `pop` does): moved
        // out whole by `pop_front` it went through the stack first.
        let head = self.fifo.front()?;
        debug_assert!(head.arrive <= time, "a packet left the delay node before its time_to_send");
        *pkt = head.pkt;
        let from = head.from;
        self.fifo.pop_front();
        if let Some(next) = self.fifo.front() {
            if next.arrive <= time {
                node.run_at(time, self.id, events);
            } else {
                node.arm_watchdog(next.arrive, self.id, events);
            }
        }
        Some(from)
    }

    /// Packets on the line.
    pub fn len(&self) -> usize {
        self.fifo.len()
    }

    pub fn is_empty(&self) -> bool {
        self.fifo.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::PacketKind;

    /// A packet told apart by its sequence number.
    fn pkt(id: u64) -> Packet {
        let mut p = Packet::new(0, PacketKind::Data);
        p.tcp.seq = id;
        p
    }

    /// Drain `q`, taking line packets through `line`; (time, packet seq or 0).
    fn drain(q: &mut EventQueue, line: &mut DelayLine) -> Vec<(Time, u64)> {
        let mut seen = Vec::new();
        while let Some((t, target)) = q.pop() {
            match target {
                Target::LineHead(_) => {
                    let mut p = pkt(0);
                    if line.pop(t, q.last_seq(), q, &mut p).is_some() {
                        seen.push((t, p.tcp.seq))
                    }
                }
                _ => seen.push((t, 0)),
            }
        }
        seen
    }

    #[test]
    fn interleaves_with_other_events_as_one_event_per_packet_would() {
        // Line packets at 10, 10, 20 interleaved with plain events at 10 and 20
        // scheduled between them: pops must follow scheduling order at equal times.
        let mut q = EventQueue::with_capacity(8);
        let mut line = DelayLine::new(LineId(0));
        line.push(10, LinkId(0), &pkt(1), &mut q);
        q.push(10, Target::Sample);
        line.push(10, LinkId(0), &pkt(2), &mut q);
        q.push(20, Target::Sample);
        line.push(20, LinkId(0), &pkt(3), &mut q);
        assert_eq!(q.len(), 3, "one heap entry for the whole line");
        assert_eq!(drain(&mut q, &mut line), vec![(10, 1), (10, 0), (10, 2), (20, 0), (20, 3)]);
        assert!(line.is_empty());
    }

    #[test]
    fn an_overtaking_packet_goes_first_and_the_displaced_head_fires_once() {
        let mut q = EventQueue::with_capacity(8);
        let mut line = DelayLine::new(LineId(0));
        line.push(30, LinkId(1), &pkt(1), &mut q);
        line.push(40, LinkId(1), &pkt(2), &mut q);
        line.push(20, LinkId(2), &pkt(3), &mut q); // a shorter NIC backlog: overtakes both
        line.push(35, LinkId(2), &pkt(4), &mut q);
        q.push(30, Target::Sample);
        assert_eq!(drain(&mut q, &mut line), vec![(20, 3), (30, 1), (30, 0), (35, 4), (40, 2)]);
    }

    /// A delay node's interface with delay `d` whose watchdog fires late by Exp(`mean`).
    fn node(d: u64, mean: u64, seed: u64) -> DelayLine {
        use crate::rng::{stream, Stream};
        DelayLine::new_netem(
            LineId(0),
            NetemNode::new(d, HostTimer::new(mean, stream(seed, Stream::DelayNode(0))).unwrap()),
        )
    }

    /// Push `(arrival at the node, packet id, link)` in order of arrival, popping
    /// line events as the clock passes them; returns (release time, packet id).
    fn run_node(line: &mut DelayLine, d: u64, arrivals: &[(Time, u64, u32)]) -> Vec<(Time, u64)> {
        let mut q = EventQueue::with_capacity(8);
        let mut out = Vec::new();
        let pop_until = |q: &mut EventQueue, line: &mut DelayLine, until: Time, out: &mut Vec<(Time, u64)>| {
            while q.peek_time().is_some_and(|t| t <= until) {
                let (t, _) = q.pop().unwrap();
                let mut p = pkt(0);
                if line.pop(t, q.last_seq(), q, &mut p).is_some() {
                    out.push((t, p.tcp.seq));
                }
            }
        };
        for &(a, id, link) in arrivals {
            pop_until(&mut q, line, a, &mut out);
            line.push(a + d, LinkId(link), &pkt(id), &mut q);
        }
        pop_until(&mut q, line, Time::MAX, &mut out);
        out
    }

    #[test]
    fn netem_releases_a_late_head_at_the_next_enqueue_of_any_flow() {
        // A watchdog 1 s late on average: here only enqueues run the qdisc in time.
        let d = 5_000_000;
        let mut line = node(d, 1_000_000_000, 7);
        let got = run_node(
            &mut line,
            d,
            &[
                (0, 1, 0),           // due at d
                (100, 2, 0),         // due at d + 100
                (d + 50, 3, 1),      // another flow's packet: releases packet 1 (due by then)
                (d + 300, 4, 1),     // releases packet 2 (due d + 100)
                (2 * d + 60, 5, 0),  // releases packet 3 (due d + d + 50)
                (2 * d + 400, 6, 0), // releases packet 4 (due 2d + 300)
            ],
        );
        let first = &got[..4];
        assert_eq!(first, &[(d + 50, 1), (d + 300, 2), (2 * d + 60, 3), (2 * d + 400, 4)]);
        // The last two leave at the (very) late firings, never before their due time.
        assert!(got[4].0 >= 2 * d + 60 + d && got[4].1 == 5);
        assert!(got[5].0 >= got[4].0 && got[5].1 == 6);
    }

    #[test]
    fn netem_releases_everything_due_by_a_late_firing_back_to_back() {
        // No enqueue after the dues: the batch leaves at the firing armed for its head.
        let d = 1_000_000;
        let mut line = node(d, 50_000, 3);
        let got = run_node(&mut line, d, &[(0, 1, 0), (10, 2, 1), (20, 3, 0)]);
        assert_eq!(got.iter().map(|&(_, id)| id).collect::<Vec<_>>(), vec![1, 2, 3]);
        let fire = got[0].0;
        assert!(fire >= d, "released at {fire}, due {d}");
        // Packets due by the firing go with the head; a later one waits for its own.
        for &(t, id) in &got[1..] {
            let due = d + 10 * (id - 1);
            if due <= fire {
                assert_eq!(t, fire, "packet {id}");
            } else {
                assert!(t >= due && t > fire, "packet {id} at {t}");
            }
        }
    }

    #[test]
    fn netem_lateness_is_cut_by_the_next_arrival() {
        // A steady stream every 121 µs (100 Mbit/s of full frames) from two links
        // through a node whose watchdog is late by Exp(50 µs). Each packet is due
        // `wait` = 82 µs before the next arrival (5 ms is 41.32 spacings), which runs
        // the qdisc: it leaves at min(due + Exp(50 µs), due + wait), and the previous
        // packet has always left by its due time, so each arms its own watchdog.
        // Mean extra delay 50 µs · (1 − e^(−82/50)) = 40.3 µs.
        let (d, gap, mean) = (5_000_000u64, 121_000u64, 50_000u64);
        let wait = gap - d % gap;
        let arrivals: Vec<(Time, u64, u32)> = (0..20_000u64).map(|k| (k * gap, k + 1, (k % 2) as u32)).collect();
        let mut line = node(d, mean, 11);
        let got = run_node(&mut line, d, &arrivals);
        assert_eq!(got.len(), arrivals.len());
        // The last 42 have no later arrival: only their firings release them.
        let last_arrival = arrivals.last().unwrap().0;
        let got: Vec<(Time, u64)> =
            got.into_iter().filter(|&(_, id)| (id - 1) * gap + d + wait <= last_arrival).collect();
        let mut extra_sum = 0u64;
        for &(t, id) in &got {
            let extra = t - ((id - 1) * gap + d);
            assert!(extra <= wait, "packet {id} left {extra} ns after its due time");
            extra_sum += extra;
        }
        let mean_extra = extra_sum as f64 / got.len() as f64;
        let expect = mean as f64 * (1.0 - (-(wait as f64) / mean as f64).exp());
        // Standard error ≈ 30 µs / sqrt(2e4) = 0.2 µs.
        assert!((mean_extra - expect).abs() < 1_000.0, "mean extra {mean_extra} ns, expected {expect}");
        // Some packets went at the enqueue (the cut), most at their own firing.
        let cut = got.iter().filter(|&&(t, id)| t - ((id - 1) * gap + d) == wait).count() as f64 / got.len() as f64;
        assert!((cut - (-(wait as f64) / mean as f64).exp()).abs() < 0.02, "{cut} released by an enqueue");
    }
}
