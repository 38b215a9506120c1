//! A FIFO of packets in propagation: what a wire (or a serialiser feeding a wire)
//! holds between the time a packet leaves a hop and the time it reaches the next.
//!
//! Packets enter in non-decreasing arrival time (a constant delay after monotone
//! departures), so the line is a `VecDeque` and only its head needs an event. Each
//! packet keeps the sequence number it would have had as an event of its own (see
//! [`crate::event`]), so the global event order is unchanged; htsim's `Pipe`
//! (`pipe.cpp`) keeps its in-flight packets the same way.

use crate::event::{EventQueue, Target};
use crate::packet::Packet;
use crate::time::Time;
use std::collections::VecDeque;

/// One packet on the wire: when it arrives, its event key, the packet.
#[derive(Clone, Copy, Debug)]
struct InFlight {
    arrive: Time,
    seq: u64,
    pkt: Packet,
}

/// A FIFO delay line with at most one pending event (for its head).
#[derive(Debug, Default)]
pub struct DelayLine {
    fifo: VecDeque<InFlight>,
}

impl DelayLine {
    pub fn new() -> Self {
        DelayLine { fifo: VecDeque::with_capacity(64) }
    }

    /// Put `pkt` on the line to arrive at `arrive`; `head` is the event that fires
    /// when it reaches the head. Arrival times must not decrease.
    #[inline]
    pub fn push(&mut self, arrive: Time, pkt: &Packet, events: &mut EventQueue, head: Target) {
        debug_assert!(self.fifo.back().is_none_or(|b| b.arrive <= arrive), "delay line out of order");
        let seq = events.reserve_seq();
        if self.fifo.is_empty() {
            events.push_reserved(arrive, seq, head);
        }
        self.fifo.push_back(InFlight { arrive, seq, pkt: *pkt });
    }

    /// Take the head (its event just fired) and schedule the next one's event.
    #[inline]
    pub fn pop(&mut self, events: &mut EventQueue, head: Target) -> Packet {
        let p = self.fifo.pop_front().expect("a delay line event fired with the line empty");
        if let Some(next) = self.fifo.front() {
            events.push_reserved(next.arrive, next.seq, head);
        }
        p.pkt
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
    use crate::event::LinkId;
    use crate::packet::PacketKind;

    fn pkt(id: u64) -> Packet {
        let mut p = Packet::new(0, PacketKind::Data);
        p.id = id;
        p
    }

    #[test]
    fn interleaves_with_other_events_as_one_event_per_packet_would() {
        // Line packets at 10, 10, 20 interleaved with plain events at 10 and 20
        // scheduled between them: pops must follow scheduling order at equal times.
        let head = Target::LineHead(LinkId(0));
        let mut q = EventQueue::with_capacity(8);
        let mut line = DelayLine::new();
        line.push(10, &pkt(1), &mut q, head);
        q.push(10, Target::Sample);
        line.push(10, &pkt(2), &mut q, head);
        q.push(20, Target::Sample);
        line.push(20, &pkt(3), &mut q, head);
        assert_eq!(q.len(), 3, "one heap entry for the whole line");
        let mut seen = Vec::new();
        while let Some((t, target)) = q.pop() {
            match target {
                Target::LineHead(_) => seen.push((t, line.pop(&mut q, head).id)),
                _ => seen.push((t, 0)),
            }
        }
        assert_eq!(seen, vec![(10, 1), (10, 0), (10, 2), (20, 0), (20, 3)]);
        assert!(line.is_empty());
    }
}
