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

use crate::event::{EventQueue, LineId, LinkId, Target};
use crate::packet::Packet;
use crate::time::Time;
use std::collections::VecDeque;

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
}

impl DelayLine {
    pub fn new(id: LineId) -> Self {
        DelayLine { id, fifo: VecDeque::with_capacity(64) }
    }

    /// Put `pkt`, leaving link `from`, on the line to arrive at `arrive`.
    #[inline]
    pub fn push(&mut self, arrive: Time, from: LinkId, pkt: &Packet, events: &mut EventQueue) {
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

    /// The event (`time`, `seq`) of this line fired: take the head if the event
    /// is still its own (else `None`: a displaced head's stale entry), and
    /// schedule the next head. Returns the link the packet left; the packet is
    /// copied to `pkt` whole, from the line's slot (moved out through an
    /// `Option`, it was written in overlapping pieces around its niche byte and
    /// read back at once, which the CPU cannot forward from its store buffer).
    #[inline]
    pub fn pop(&mut self, time: Time, seq: u64, events: &mut EventQueue, pkt: &mut Packet) -> Option<LinkId> {
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
}
