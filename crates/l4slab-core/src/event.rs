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
//!
//! Pop-then-push in one sift: most events schedule one of the same kind while they
//! are handled (a delay line its next head, an endpoint its next timer). A popped
//! heap entry therefore stays at its heap's root, marked consumed, while the event
//! is handled; the first push into that heap overwrites the root and sifts it down
//! once ([`MinHeap::replace_top`]), instead of a pop (down to the bottom and back up)
//! followed by a push (up from the bottom). The consumed root is the smallest key
//! in its heap and every later push has a larger one (a later sequence number at a
//! time not before it), so the heap order holds; the next pop drops the root first
//! if nothing replaced it. The set of pending entries, and so the order of events,
//! is exactly that of a pop and a push.

use crate::time::Time;

/// Index of a link in the network.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LinkId(pub u32);

/// Index of a delay line (see [`crate::net::delay_line`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LineId(pub u32);

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
}

/// Who acts when an event fires.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// A flow starts (TCP connect / UDP source on).
    FlowStart { flow: u32 },
    /// The packet at the head of a delay line reaches the next hop.
    LineHead(LineId),
    /// A link's shaper may send again (tokens refilled).
    ShaperWake(LinkId),
    /// A link's qdisc timer (PIE/DualPI2 tupdate).
    QdiscTimer(LinkId),
    /// A link's rate schedule has a step due (`net/link_model.rs`).
    LinkChange(LinkId),
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

impl Entry {
    /// (time, seq) as one integer: one branch-free comparison in the heap's sifts.
    #[inline(always)]
    fn key(&self) -> u128 {
        (self.time as u128) << 64 | self.seq as u128
    }
}

/// A binary min-heap of entries by (time, sequence).
///
/// `std::collections::BinaryHeap` reads the element it sifts back from the slot
/// it has just been written to (`PeekMut`'s drop, `Hole::new`): a 16-byte load
/// of an entry written by narrower stores a moment before, which the CPU cannot
/// forward from its store buffer and waits for. These sifts keep the moving
/// entry in registers and write it once, at its final place. Keys are unique, so
/// the pop order is the same as any other correct heap's.
struct MinHeap {
    v: Vec<Entry>,
}

impl MinHeap {
    fn with_capacity(n: usize) -> Self {
        MinHeap { v: Vec::with_capacity(n) }
    }

    #[inline(always)]
    fn peek(&self) -> Option<&Entry> {
        self.v.first()
    }

    #[inline(always)]
    fn len(&self) -> usize {
        self.v.len()
    }

    #[inline]
    fn push(&mut self, e: Entry) {
        let k = e.key();
        let mut i = self.v.len();
        self.v.push(e);
        let v = self.v.as_mut_slice();
        while i > 0 {
            let parent = (i - 1) / 2;
            // SAFETY: parent < i < v.len().
            let pe = unsafe { *v.get_unchecked(parent) };
            if pe.key() <= k {
                break;
            }
            // SAFETY: i < v.len() (the slot pushed above, or a parent of it).
            unsafe { *v.get_unchecked_mut(i) = pe };
            i = parent;
        }
        // SAFETY: as above.
        unsafe { *v.get_unchecked_mut(i) = e };
    }

    /// Replace the root (the heap must not be empty) and restore the order.
    ///
    /// The sifts index without bounds checks: every index is a child below
    /// `n = v.len()` or the slot it came from; with a thousand flows the timers'
    /// heap is ten levels deep and the checks were two compares and branches per level.
    #[inline]
    fn replace_top(&mut self, e: Entry) {
        let k = e.key();
        let n = self.v.len();
        if n == 0 {
            // Never on the engine's paths (they replace a root they just read); kept so
            // that the unchecked writes below always have a slot.
            self.v.push(e);
            return;
        }
        let v = self.v.as_mut_slice();
        let mut i = 0;
        loop {
            let mut c = 2 * i + 1;
            if c >= n {
                break;
            }
            // SAFETY: c < n.
            let mut ck = unsafe { v.get_unchecked(c) }.key();
            if c + 1 < n {
                // SAFETY: c + 1 < n.
                let rk = unsafe { v.get_unchecked(c + 1) }.key();
                if rk < ck {
                    c += 1;
                    ck = rk;
                }
            }
            if k <= ck {
                break;
            }
            // SAFETY: i < c < n.
            unsafe { *v.get_unchecked_mut(i) = *v.get_unchecked(c) };
            i = c;
        }
        // SAFETY: i is 0 (n > 0) or a child index below n.
        unsafe { *v.get_unchecked_mut(i) = e };
    }

    /// Remove the root.
    #[inline]
    fn pop(&mut self) {
        if let Some(last) = self.v.pop() {
            if !self.v.is_empty() {
                self.replace_top(last);
            }
        }
    }
}

/// A slot outside the heap for an event source that never has more than one
/// event pending (a shaper's watchdog): it costs a comparison per pop instead of a
/// heap push and pop per event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PinId(u8);

/// Most pinned slots; the rest of such sources use the heap.
pub const MAX_PINS: usize = 4;

/// Which heap holds a consumed root (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Consumed {
    None,
    Heap,
    Timers,
}

/// Pending events.
pub struct EventQueue {
    heap: MinHeap,
    /// Endpoint timers ([`push_timer`](Self::push_timer)): one or two per flow,
    /// rarely due, so kept apart from the packets' events, whose heap then stays
    /// a few levels deep with hundreds of flows.
    timers: MinHeap,
    pins: [Option<Entry>; MAX_PINS],
    n_pins: usize,
    /// Index of the earliest occupied pin; meaningful only while `pin_key` is not
    /// `u128::MAX`.
    first_pin: usize,
    /// The (time, sequence) key of `first_pin`'s event, `u128::MAX` if none:
    /// read by every pop without touching the pins.
    pin_key: u128,
    /// The heap whose root is the event being handled, already returned by
    /// [`pop_until`](Self::pop_until) but not yet removed.
    consumed: Consumed,
    /// Sequence number of the event popped last.
    last_seq: u64,
    seq: u64,
    processed: u64,
}

impl EventQueue {
    pub fn with_capacity(n: usize) -> Self {
        EventQueue {
            heap: MinHeap::with_capacity(n),
            timers: MinHeap::with_capacity(n),
            pins: [None; MAX_PINS],
            n_pins: 0,
            first_pin: 0,
            pin_key: u128::MAX,
            consumed: Consumed::None,
            last_seq: 0,
            seq: 0,
            processed: 0,
        }
    }

    /// A pinned slot, if any is left.
    pub fn pin(&mut self) -> Option<PinId> {
        (self.n_pins < MAX_PINS).then(|| {
            self.n_pins += 1;
            PinId(self.n_pins as u8 - 1)
        })
    }

    /// Schedule `target` at `time` in `pin`, which must be empty; orders exactly
    /// as [`push`](Self::push) would.
    #[inline]
    pub fn push_pinned(&mut self, pin: PinId, time: Time, target: Target) {
        let seq = self.reserve_seq();
        let e = Entry { time, seq, target };
        // A pin's index is below MAX_PINS (`pin`), which the mask tells the compiler.
        let i = pin.0 as usize % MAX_PINS;
        debug_assert!(self.pins[i].is_none(), "pinned slot already holds an event");
        self.pins[i] = Some(e);
        // The slot was empty: the earliest pin is now the earlier of the one before
        // and this one (keys are unique), without a scan of the pins.
        if e.key() < self.pin_key {
            self.pin_key = e.key();
            self.first_pin = i;
        }
    }

    #[inline]
    fn update_first_pin(&mut self) {
        if self.n_pins == 1 {
            self.first_pin = 0;
            self.pin_key = self.pins[0].map_or(u128::MAX, |e| e.key());
            return;
        }
        self.first_pin = 0;
        let mut best = u128::MAX;
        for (i, p) in self.pins[..self.n_pins].iter().enumerate() {
            if let Some(e) = p {
                if e.key() < best {
                    best = e.key();
                    self.first_pin = i;
                }
            }
        }
        self.pin_key = best;
    }

    /// Schedule `target` at `time`, after everything already scheduled for `time`.
    #[inline]
    pub fn push(&mut self, time: Time, target: Target) {
        let seq = self.reserve_seq();
        self.push_heap(Entry { time, seq, target });
    }

    /// Into the packets' heap: over its consumed root if it has one.
    #[inline(always)]
    fn push_heap(&mut self, e: Entry) {
        if self.consumed == Consumed::Heap {
            self.consumed = Consumed::None;
            self.heap.replace_top(e);
        } else {
            self.heap.push(e);
        }
    }

    /// Schedule an endpoint's timer: ordered exactly as [`push`](Self::push).
    #[inline]
    pub fn push_timer(&mut self, time: Time, target: Target) {
        let seq = self.reserve_seq();
        let e = Entry { time, seq, target };
        if self.consumed == Consumed::Timers {
            self.consumed = Consumed::None;
            self.timers.replace_top(e);
        } else {
            self.timers.push(e);
        }
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
        self.push_heap(Entry { time, seq, target });
    }

    /// Remove and return the earliest event.
    #[inline]
    pub fn pop(&mut self) -> Option<(Time, Target)> {
        self.pop_until(Time::MAX)
    }

    /// Remove and return the earliest event if it is due at or before `end`.
    /// Keys are unique, so the earliest of the heap's, the timers' and the pins'
    /// heads is the earliest event overall.
    #[inline]
    pub fn pop_until(&mut self, end: Time) -> Option<(Time, Target)> {
        self.drop_consumed();
        let heap_top = self.heap.peek().map_or(u128::MAX, Entry::key);
        let timer_top = self.timers.peek().map_or(u128::MAX, Entry::key);
        let pin_top = self.pin_key;
        let first = heap_top.min(timer_top).min(pin_top);
        // u128::MAX: all empty (an entry's seq is below u64::MAX).
        if first == u128::MAX || (first >> 64) as Time > end {
            return None;
        }
        // A heap's root stays in place until the handler's first push replaces it.
        let e = if first == heap_top {
            self.consumed = Consumed::Heap;
            *self.heap.peek()?
        } else if first == timer_top {
            self.consumed = Consumed::Timers;
            *self.timers.peek()?
        } else {
            // `first` is not u128::MAX, so neither is `pin_key`: `first_pin` is occupied.
            let i = self.first_pin % MAX_PINS;
            let e = self.pins[i].take().expect("first pin");
            if self.n_pins == 1 {
                // The only pin is now empty.
                self.pin_key = u128::MAX;
            } else {
                self.update_first_pin();
            }
            e
        };
        self.processed += 1;
        self.last_seq = e.seq;
        Some((e.time, e.target))
    }

    /// Remove a consumed root nothing replaced.
    #[inline(always)]
    fn drop_consumed(&mut self) {
        match std::mem::replace(&mut self.consumed, Consumed::None) {
            Consumed::None => {}
            Consumed::Heap => {
                self.heap.pop();
            }
            Consumed::Timers => {
                self.timers.pop();
            }
        }
    }

    /// Time of the earliest event.
    #[inline]
    pub fn peek_time(&mut self) -> Option<Time> {
        self.drop_consumed();
        let h = self.heap.peek().map(|e| e.time);
        let t = self.timers.peek().map(|e| e.time);
        let h = match (h, t) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        match (self.pin_key != u128::MAX).then(|| self.pins[self.first_pin]).flatten() {
            Some(p) => Some(h.map_or(p.time, |h| h.min(p.time))),
            None => h,
        }
    }

    /// Sequence number of the event [`pop`](Self::pop) returned last: a place that
    /// keeps several keys (a delay line) checks it against its head.
    #[inline]
    pub fn last_seq(&self) -> u64 {
        self.last_seq
    }

    /// Events processed so far.
    pub fn processed(&self) -> u64 {
        self.processed
    }

    /// Entries pending (heap and pins).
    pub fn len(&self) -> usize {
        let consumed = usize::from(self.consumed != Consumed::None);
        self.heap.len() + self.timers.len() + self.pins.iter().flatten().count() - consumed
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
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
    fn pinned_events_order_like_heap_events() {
        let mut q = EventQueue::with_capacity(8);
        let a = q.pin().unwrap();
        let b = q.pin().unwrap();
        q.push(5, Target::FlowStart { flow: 0 });
        q.push_pinned(a, 5, Target::FlowStart { flow: 1 });
        q.push(3, Target::FlowStart { flow: 2 });
        q.push_pinned(b, 4, Target::FlowStart { flow: 3 });
        q.push(5, Target::FlowStart { flow: 4 });
        assert_eq!(q.peek_time(), Some(3));
        let order: Vec<u32> = std::iter::from_fn(|| q.pop())
            .map(|(_, a)| match a {
                Target::FlowStart { flow } => flow,
                _ => unreachable!(),
            })
            .collect();
        assert_eq!(order, vec![2, 3, 0, 1, 4]);
        // A slot can be reused once its event has fired.
        q.push_pinned(a, 9, Target::Sample);
        assert_eq!(q.pop(), Some((9, Target::Sample)));
        assert!(q.pop().is_none());
    }

    #[test]
    fn timers_order_like_heap_events() {
        let mut q = EventQueue::with_capacity(8);
        let a = q.pin().unwrap();
        q.push_timer(5, Target::FlowStart { flow: 0 });
        q.push(5, Target::FlowStart { flow: 1 });
        q.push_pinned(a, 5, Target::FlowStart { flow: 2 });
        q.push_timer(3, Target::FlowStart { flow: 3 });
        q.push(4, Target::FlowStart { flow: 4 });
        q.push_timer(5, Target::FlowStart { flow: 5 });
        assert_eq!((q.len(), q.peek_time()), (6, Some(3)));
        let order: Vec<u32> = std::iter::from_fn(|| q.pop())
            .map(|(_, a)| match a {
                Target::FlowStart { flow } => flow,
                _ => unreachable!(),
            })
            .collect();
        assert_eq!(order, vec![3, 4, 0, 1, 2, 5]);
        assert!(q.is_empty());
    }

    #[test]
    fn pushes_while_an_event_is_handled_order_like_a_pop_then_push() {
        // A model queue (sorted Vec of (time, seq)) against the queue whose popped root
        // stays in place until the handler's first push: same events in the same order,
        // with 0, 1 or 2 pushes per handled event into either heap, times from an LCG.
        let mut q = EventQueue::with_capacity(4);
        let mut model: Vec<(Time, u64, u32)> = Vec::new();
        let mut x: u64 = 12345;
        let mut rnd = move |m: u64| {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (x >> 33) % m
        };
        let mut id = 0u32;
        let mut push = |q: &mut EventQueue, model: &mut Vec<(Time, u64, u32)>, now: Time, timer: bool, dt: u64| {
            id += 1;
            let t = now + dt;
            if timer {
                q.push_timer(t, Target::FlowStart { flow: id });
            } else {
                q.push(t, Target::FlowStart { flow: id });
            }
            model.push((t, q.seq, id));
        };
        for _ in 0..8 {
            let (timer, dt) = (rnd(2) == 0, rnd(50));
            push(&mut q, &mut model, 0, timer, dt);
        }
        let mut popped = 0;
        while let Some((now, target)) = q.pop() {
            model.sort();
            let (t, _, want) = model.remove(0);
            assert_eq!((now, target), (t, Target::FlowStart { flow: want }));
            assert_eq!(q.len(), model.len());
            popped += 1;
            if popped < 2000 {
                let n = if model.len() < 4 { 2 } else { rnd(3) };
                for _ in 0..n {
                    let (timer, dt) = (rnd(2) == 0, rnd(50));
                    push(&mut q, &mut model, now, timer, dt);
                }
            }
        }
        assert!(model.is_empty() && popped >= 2000, "{popped}");
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
