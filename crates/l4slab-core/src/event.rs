//! The event queue: a binary min-heap of small entries ordered by (time, sequence).
//!
//! Events at the same nanosecond run in the order they were scheduled, so a run is
//! a pure function of the scenario and seed. An entry is 24 bytes: the time, a
//! global sequence number and a [`Target`] naming *who* acts (a link's delay line,
//! an endpoint's timer, ...). Packets never travel inside the heap; they wait where
//! they are (a link's delay line, a qdisc) and the heap holds at most one entry per
//! waiting place, keyed by the (time, sequence) of the packet at its head.
//!
//! Keeping the global order with fewer entries: a place that receives packets in
//! non-decreasing (time, sequence) order takes each packet's sequence number from
//! this queue's counter at the moment it would have scheduled an event of its own
//! ([`EventQueue::reserve_seq`]) and schedules only its head with that stored key
//! ([`EventQueue::push_reserved`]). The minimum over the heap then equals the
//! minimum over every waiting packet, so events pop in exactly the order one entry
//! per packet would give (the same argument as htsim's per-pipe FIFO in `pipe.cpp`).

use crate::time::Time;
use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// Index of a link in the network.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LinkId(pub u32);

/// Index of an endpoint (one side of a flow) in the flow table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct EndpointId(pub u32);

impl EndpointId {
    /// The sending side (TCP sender, UDP source) of flow slot `flow`.
    #[inline]
    pub fn sender(flow: u32) -> Self {
        EndpointId(flow * 2)
    }
    /// The receiving side of flow slot `flow`.
    #[inline]
    pub fn receiver(flow: u32) -> Self {
        EndpointId(flow * 2 + 1)
    }
    #[inline]
    pub fn flow(self) -> u32 {
        self.0 / 2
    }
    #[inline]
    pub fn is_sender(self) -> bool {
        self.0 % 2 == 0
    }
}

/// Who acts when an event fires.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// A flow starts (TCP connect / UDP source on).
    FlowStart { flow: u32 },
    /// The packet at the head of a link's delay line reaches the next hop.
    LineHead(LinkId),
    /// A link's shaper may send again (tokens refilled).
    ShaperWake(LinkId),
    /// A link's qdisc timer (PIE/DualPI2 tupdate).
    QdiscTimer(LinkId),
    /// An endpoint's timer may be due (lazy: a stale one is ignored).
    EndpointTimer(EndpointId),
    /// A traffic source's own event (e.g. a new connection arrives).
    Source(u32),
    /// End of a series bin.
    Sample,
}

#[derive(Clone, Copy, Debug)]
struct Entry {
    time: Time,
    seq: u64,
    target: Target,
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

    /// Schedule `target` at `time`, after everything already scheduled for `time`.
    #[inline]
    pub fn push(&mut self, time: Time, target: Target) {
        let seq = self.reserve_seq();
        self.heap.push(Entry { time, seq, target });
    }

    /// Take the next sequence number without scheduling anything: the key of a
    /// packet that waits in a FIFO place (see the module docs).
    #[inline]
    pub fn reserve_seq(&mut self) -> u64 {
        self.seq += 1;
        self.seq
    }

    /// Schedule `target` at a key taken earlier with [`reserve_seq`](Self::reserve_seq).
    #[inline]
    pub fn push_reserved(&mut self, time: Time, seq: u64, target: Target) {
        debug_assert!(seq <= self.seq);
        self.heap.push(Entry { time, seq, target });
    }

    /// Remove and return the earliest event.
    #[inline]
    pub fn pop(&mut self) -> Option<(Time, Target)> {
        let e = self.heap.pop()?;
        self.processed += 1;
        Some((e.time, e.target))
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

    /// Entries pending.
    pub fn len(&self) -> usize {
        self.heap.len()
    }

    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entry_is_at_most_24_bytes() {
        assert!(std::mem::size_of::<Entry>() <= 24, "heap entry is {} bytes", std::mem::size_of::<Entry>());
    }

    #[test]
    fn ties_break_in_insertion_order() {
        let mut q = EventQueue::with_capacity(8);
        q.push(5, Target::FlowStart { flow: 2 });
        q.push(3, Target::FlowStart { flow: 0 });
        q.push(5, Target::FlowStart { flow: 3 });
        q.push(3, Target::FlowStart { flow: 1 });
        let order: Vec<u32> = std::iter::from_fn(|| q.pop())
            .map(|(_, a)| match a {
                Target::FlowStart { flow } => flow,
                _ => unreachable!(),
            })
            .collect();
        assert_eq!(order, vec![0, 1, 2, 3]);
    }

    #[test]
    fn reserved_keys_order_like_immediate_pushes() {
        // Two schedules of the same events: one entry each, or the FIFO ones (flow 1)
        // held back with reserved keys and only the head in the heap.
        let mut direct = EventQueue::with_capacity(8);
        direct.push(10, Target::FlowStart { flow: 1 });
        direct.push(10, Target::FlowStart { flow: 0 });
        direct.push(12, Target::FlowStart { flow: 1 });
        let a: Vec<_> = std::iter::from_fn(|| direct.pop()).collect();

        let mut lazy = EventQueue::with_capacity(8);
        let s1 = lazy.reserve_seq();
        lazy.push_reserved(10, s1, Target::FlowStart { flow: 1 });
        lazy.push(10, Target::FlowStart { flow: 0 });
        let s2 = lazy.reserve_seq();
        let mut b = Vec::new();
        b.push(lazy.pop().unwrap());
        lazy.push_reserved(12, s2, Target::FlowStart { flow: 1 });
        b.extend(std::iter::from_fn(|| lazy.pop()));
        assert_eq!(a, b);
    }
}
