//! The event queue: a binary min-heap ordered by (time, insertion sequence).
//!
//! Events at the same nanosecond run in the order they were scheduled, so a run is
//! a pure function of the scenario and seed. The heap's storage is reused: after
//! warm-up, scheduling allocates nothing.

use crate::packet::Packet;
use crate::time::Time;
use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// What happens at an event.
#[derive(Clone, Copy, Debug)]
pub enum Action {
    /// A flow starts (TCP connect / UDP source on).
    FlowStart { flow: u32 },
    /// A packet reaches the bottleneck's qdisc (forward direction).
    ArriveBottleneck(Packet),
    /// The bottleneck shaper may send again (tokens refilled).
    ShaperWake,
    /// The qdisc's own timer (PIE/DualPI2 tupdate).
    QdiscTimer,
    /// A packet reaches the receiving host of its flow.
    ArriveReceiver(Packet),
    /// A packet reaches the sending host of its flow (ACKs, SYN/ACKs).
    ArriveSender(Packet),
    /// A sender timer (retransmit/TLP/reorder or pacing) may be due.
    SenderTimer { flow: u32 },
    /// The receiver's delayed-ACK (or SACK-compression) timer may be due.
    ReceiverTimer { flow: u32 },
    /// A UDP source emits its next datagram.
    UdpSend { flow: u32 },
    /// End of a series bin: sample per-flow state.
    Sample,
}

#[derive(Clone, Copy, Debug)]
struct Entry {
    time: Time,
    seq: u64,
    action: Action,
}

impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        self.time == other.time && self.seq == other.seq
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Entry {
    // Reversed: BinaryHeap is a max-heap, we pop the earliest (time, seq).
    fn cmp(&self, other: &Self) -> Ordering {
        other.time.cmp(&self.time).then_with(|| other.seq.cmp(&self.seq))
    }
}

/// Pending events.
pub struct EventQueue {
    heap: BinaryHeap<Entry>,
    seq: u64,
    processed: u64,
}

impl EventQueue {
    pub fn with_capacity(n: usize) -> Self {
        EventQueue { heap: BinaryHeap::with_capacity(n), seq: 0, processed: 0 }
    }

    /// Schedule `action` at `time`.
    #[inline]
    pub fn push(&mut self, time: Time, action: Action) {
        self.seq += 1;
        self.heap.push(Entry { time, seq: self.seq, action });
    }

    /// Remove and return the earliest event.
    #[inline]
    pub fn pop(&mut self) -> Option<(Time, Action)> {
        let e = self.heap.pop()?;
        self.processed += 1;
        Some((e.time, e.action))
    }

    /// Time of the earliest event.
    #[inline]
    pub fn peek_time(&self) -> Option<Time> {
        self.heap.peek().map(|e| e.time)
    }

    /// Events processed so far.
    pub fn processed(&self) -> u64 {
        self.processed
    }

    /// Packets still travelling inside pending events (for the conservation check).
    pub fn packets_in_flight(&self) -> u64 {
        self.heap
            .iter()
            .filter(|e| {
                matches!(e.action, Action::ArriveBottleneck(_) | Action::ArriveReceiver(_) | Action::ArriveSender(_))
            })
            .count() as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn ties_break_in_insertion_order() {
        let mut q = EventQueue::with_capacity(8);
        q.push(5, Action::FlowStart { flow: 2 });
        q.push(3, Action::FlowStart { flow: 0 });
        q.push(5, Action::FlowStart { flow: 3 });
        q.push(3, Action::FlowStart { flow: 1 });
        let order: Vec<u32> = std::iter::from_fn(|| q.pop())
            .map(|(_, a)| match a {
                Action::FlowStart { flow } => flow,
                _ => unreachable!(),
            })
            .collect();
        assert_eq!(order, vec![0, 1, 2, 3]);
    }
}
