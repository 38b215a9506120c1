//! The retransmit queue (`sk->tcp_rtx_queue`) with an index of its scoreboard, so
//! that the per-ACK walks cost what they find, not the length of the queue.
//!
//! Linux keeps the queue in an rb-tree by sequence (`tcp_rtx_queue`, searched by
//! `tcp_sacktag_bsearch`), skips already-SACKed ranges with the SACK cache
//! (`tcp_sacktag_write_queue`: `recv_sack_cache`, `tcp_sacktag_skip`) and walks RACK
//! over a time-ordered list that holds only packets still in flight
//! (`tp->tsorted_sent_queue`, `tcp_rack_detect_loss` in `net/ipv4/tcp_recovery.c`).
//! Here the queue is a ring of segments in sequence order and three bit sets over its
//! positions answer "the next segment at or after position i that is …" in a few
//! word operations (a second level of one bit per non-empty word skips empty runs):
//!
//! * **unsacked**: not `SACKED` — what SACK tagging may still tag;
//! * **original in flight**: never retransmitted, not `SACKED`, not `LOST` — the
//!   first transmissions `tcp_rack_detect_loss` examines, in sequence order which
//!   for them is also send order;
//! * **lost**: `LOST`, not `RETRANS`, not `SACKED` — what
//!   `tcp_xmit_retransmit_queue` retransmits.
//!
//!
//! and a list of retransmissions in send order (Linux's `tsorted_sent_queue` for
//! them: `tcp_rate_skb_sent` → `list_move_tail`), so RACK looks only at the
//! retransmissions sent before its reference packet instead of every one in flight.
//!
//! The sets are updated on every flag change (all flag writes go through
//! [`RtxQueue::set_flags`] / [`RtxQueue::replace`] / [`RtxQueue::retransmit`]), so
//! each walk visits the same segments as a scan of the whole queue would, minus the
//! ones it would have skipped: results are unchanged, only the skipping is cheap.
//! Positions are absolute (segments popped so far + index), so popping the head
//! does not renumber the sets; the sets are rings of words that grow by doubling,
//! like the segment ring itself, so nothing is allocated per packet once warm.

use crate::cc::{CcSock, SkbTx};
use crate::time::Time;
use std::collections::VecDeque;

/// Per-segment scoreboard bits (`TCPCB_*`).
pub(super) const SACKED: u8 = 1 << 0; // TCPCB_SACKED_ACKED
pub(super) const LOST: u8 = 1 << 1; // TCPCB_LOST
pub(super) const RETRANS: u8 = 1 << 2; // TCPCB_SACKED_RETRANS: a retransmission is in flight
pub(super) const EVER_RETRANS: u8 = 1 << 3; // TCPCB_EVER_RETRANS
pub(super) const DELIVERED: u8 = 1 << 4; // rate sample taken (Linux zeroes tx.delivered_mstamp)

/// One transmitted, not yet cumulatively acknowledged segment (an skb of the
/// retransmit queue): one 64-byte cache line (the ring's ACK-time reads and
/// send-time writes touch one line per segment, not 1.25 as with 80 bytes).
///
/// The rate-sample state of its last transmission (`tcp_skb_cb->tx`, an [`SkbTx`])
/// is kept flat, with `tp->delivered_ce` and `tp->lost` at transmission in 32 bits
/// as Linux keeps them (`tcp_sock.delivered_ce`, `tcp_sock.lost` are u32; the
/// counters here are u64): both only grow, and by less than 2^32 while a segment
/// is in the queue, so [`Seg::tx`] restores the full values from the current ones
/// exactly.
#[derive(Clone, Copy, Debug, Default)]
#[repr(align(64))]
pub(super) struct Seg {
    pub(super) seq: u64,
    pub(super) end: u64,
    /// Last transmission time (`skb_mstamp_ns`).
    pub(super) xmit: Time,
    /// `tx.first_tx_mstamp`: start of the send phase of its flight.
    pub(super) tx_first_tx_mstamp: Time,
    /// `tx.delivered_mstamp`.
    pub(super) tx_delivered_mstamp: Time,
    /// `tx.delivered`.
    pub(super) tx_delivered: u64,
    /// Low 32 bits of `tx.delivered_ce` and `tx.lost`.
    pub(super) tx_delivered_ce: u32,
    pub(super) tx_lost: u32,
    /// `tx.in_flight` (google/bbr v3).
    pub(super) tx_in_flight: u32,
    /// `tx.is_app_limited`.
    pub(super) tx_app_limited: bool,
    pub(super) flags: u8,
}

impl Seg {
    /// A segment sent at `xmit` with the rate-sample state `tx`.
    #[inline]
    pub(super) fn sent(seq: u64, end: u64, xmit: Time, tx: &SkbTx) -> Seg {
        let mut s = Seg { seq, end, xmit, ..Seg::default() };
        s.set_tx(tx);
        s
    }

    /// Stamp the rate-sample state of a (re)transmission.
    #[inline]
    pub(super) fn set_tx(&mut self, tx: &SkbTx) {
        self.tx_first_tx_mstamp = tx.first_tx_mstamp;
        self.tx_delivered_mstamp = tx.delivered_mstamp;
        self.tx_delivered = tx.delivered;
        self.tx_delivered_ce = tx.delivered_ce as u32;
        self.tx_lost = tx.lost as u32;
        self.tx_in_flight = tx.in_flight;
        self.tx_app_limited = tx.is_app_limited;
    }

    /// `tp->delivered_ce` at transmission, from its current value `now`.
    #[inline]
    pub(super) fn tx_delivered_ce(&self, now: u64) -> u64 {
        now.wrapping_sub((now as u32).wrapping_sub(self.tx_delivered_ce) as u64)
    }

    /// `tp->lost` now − at transmission.
    #[inline]
    pub(super) fn lost_since_tx(&self, now: u64) -> u64 {
        (now as u32).wrapping_sub(self.tx_lost) as u64
    }

    /// The rate-sample state of the last transmission, given the socket now.
    pub(super) fn tx(&self, tp: &CcSock) -> SkbTx {
        SkbTx {
            first_tx_mstamp: self.tx_first_tx_mstamp,
            delivered_mstamp: self.tx_delivered_mstamp,
            delivered: self.tx_delivered,
            delivered_ce: self.tx_delivered_ce(tp.delivered_ce),
            in_flight: self.tx_in_flight,
            lost: tp.lost.wrapping_sub(self.lost_since_tx(tp.lost)),
            is_app_limited: self.tx_app_limited,
        }
    }

    #[inline]
    pub(super) fn has(&self, f: u8) -> bool {
        self.flags & f != 0
    }
}

const _: () = assert!(std::mem::size_of::<Seg>() == 64);

/// Scoreboard classes of a segment's flags, one bit per set.
const C_UNSACKED: u8 = 1;
const C_ORIG: u8 = 2;
/// In flight for RACK after a retransmission (not a set: the send-ordered list).
const C_RETRANS: u8 = 8;
const C_LOST: u8 = 4;

#[inline]
fn classes(flags: u8) -> u8 {
    if flags & SACKED != 0 {
        return 0;
    }
    if flags & LOST != 0 && flags & RETRANS == 0 {
        C_UNSACKED | C_LOST
    } else if flags & EVER_RETRANS != 0 {
        C_UNSACKED | C_RETRANS
    } else {
        C_UNSACKED | C_ORIG
    }
}

/// A set of absolute positions within a window of at most `64 × words.len()`
/// consecutive positions, stored as a ring of words with a summary bit per
/// non-empty word.
#[derive(Clone, Debug)]
struct Bits {
    words: Vec<u64>,
    summary: Vec<u64>,
}

impl Bits {
    fn new(nwords: usize) -> Self {
        debug_assert!(nwords.is_power_of_two());
        Bits { words: vec![0; nwords], summary: vec![0; nwords.div_ceil(64)] }
    }

    #[inline]
    fn mask(&self) -> u64 {
        self.words.len() as u64 - 1
    }

    #[inline]
    fn insert(&mut self, a: u64) {
        let p = ((a >> 6) & self.mask()) as usize;
        self.words[p] |= 1 << (a & 63);
        self.summary[p >> 6] |= 1 << (p & 63);
    }

    #[inline]
    fn remove(&mut self, a: u64) {
        let p = ((a >> 6) & self.mask()) as usize;
        self.words[p] &= !(1 << (a & 63));
        if self.words[p] == 0 {
            self.summary[p >> 6] &= !(1 << (p & 63));
        }
    }

    /// Empty the word holding absolute positions `[64·w, 64·w + 64)`.
    #[inline]
    fn clear_word(&mut self, w: u64) {
        let p = (w & self.mask()) as usize;
        self.words[p] = 0;
        self.summary[p >> 6] &= !(1 << (p & 63));
    }

    /// Lowest member in `[from, to)`.
    #[inline]
    fn next(&self, from: u64, to: u64) -> Option<u64> {
        if from >= to {
            return None;
        }
        let mask = self.mask();
        let nwords = self.words.len() as u64;
        let last_w = (to - 1) >> 6;
        let mut w = from >> 6;
        let first = self.words[(w & mask) as usize] & (!0u64 << (from & 63));
        if first != 0 {
            let a = (w << 6) + first.trailing_zeros() as u64;
            return (a < to).then_some(a);
        }
        w += 1;
        while w <= last_w {
            let p = w & mask;
            let s = self.summary[(p >> 6) as usize] >> (p & 63);
            if s != 0 {
                let w2 = w + s.trailing_zeros() as u64;
                if w2 > last_w {
                    return None;
                }
                let word = self.words[(w2 & mask) as usize];
                debug_assert!(word != 0);
                let a = (w2 << 6) + word.trailing_zeros() as u64;
                return (a < to).then_some(a);
            }
            // The rest of this summary word (or of the ring) is empty.
            w += (64 - (p & 63)).min(nwords - p);
        }
        None
    }

    /// The same set in a ring of `nwords` words; the live window is `[lo, hi)`.
    fn regrow(&self, nwords: usize, lo: u64, hi: u64) -> Bits {
        let mut b = Bits::new(nwords);
        if lo < hi {
            let mask = self.mask();
            for w in (lo >> 6)..=((hi - 1) >> 6) {
                let word = self.words[(w & mask) as usize];
                if word != 0 {
                    let p = (w & b.mask()) as usize;
                    b.words[p] = word;
                    b.summary[p >> 6] |= 1 << (p & 63);
                }
            }
        }
        b
    }
}

/// The segments in sequence order: a ring of power-of-two capacity, indexed by a
/// mask (a `VecDeque` wraps its index by a compare and subtract and copies each
/// popped segment out); grows by doubling when full, so nothing is allocated per
/// packet once warm.
#[derive(Clone, Debug)]
struct SegRing {
    buf: Vec<Seg>,
    /// Slot of the first segment.
    head: usize,
    len: usize,
}

impl SegRing {
    fn with_capacity(n: usize) -> Self {
        let cap = if n == 0 { 0 } else { n.next_power_of_two() };
        SegRing { buf: vec![Seg::default(); cap], head: 0, len: 0 }
    }

    #[inline]
    fn slot(&self, i: usize) -> usize {
        (self.head + i) & (self.buf.len() - 1)
    }

    #[inline]
    fn push_back(&mut self, seg: Seg) {
        if self.len == self.buf.len() {
            self.grow();
        }
        let k = self.slot(self.len);
        self.buf[k] = seg;
        self.len += 1;
    }

    #[cold]
    #[inline(never)]
    fn grow(&mut self) {
        let cap = (self.buf.len() * 2).max(64);
        let mut buf = vec![Seg::default(); cap];
        for (i, b) in buf.iter_mut().enumerate().take(self.len) {
            *b = self.buf[self.slot(i)];
        }
        self.buf = buf;
        self.head = 0;
    }

    #[inline]
    fn pop_front(&mut self) -> Option<Seg> {
        if self.len == 0 {
            return None;
        }
        let s = self.buf[self.head];
        self.head = (self.head + 1) & (self.buf.len() - 1);
        self.len -= 1;
        Some(s)
    }

    #[inline]
    fn get(&self, i: usize) -> Option<&Seg> {
        if i < self.len {
            Some(&self.buf[self.slot(i)])
        } else {
            None
        }
    }

    #[inline]
    fn get_mut(&mut self, i: usize) -> &mut Seg {
        assert!(i < self.len, "retransmit queue index {i} past its {} segments", self.len);
        let k = self.slot(i);
        &mut self.buf[k]
    }

    fn clear(&mut self) {
        self.head = 0;
        self.len = 0;
    }
}

impl std::ops::Index<usize> for SegRing {
    type Output = Seg;
    #[inline]
    fn index(&self, i: usize) -> &Seg {
        assert!(i < self.len, "retransmit queue index {i} past its {} segments", self.len);
        &self.buf[self.slot(i)]
    }
}

/// The retransmit queue: segments in sequence order and the scoreboard index.
#[derive(Clone, Debug)]
pub(super) struct RtxQueue {
    segs: SegRing,
    /// Absolute position of `segs[0]` (segments popped so far).
    base: u64,
    unsacked: Bits,
    orig: Bits,
    lost: Bits,
    /// (absolute position, send time) of each retransmission, in send order;
    /// entries whose segment left (SACKed, lost again, acked, sent again) are
    /// dropped when a walk reaches them.
    retrans: VecDeque<(u64, Time)>,
    /// Reusable buffer for a RACK pass's indices to mark lost.
    pub(super) scratch: Vec<usize>,
}

/// Entries the retransmission list and the RACK scratch buffer start with.
const SIDE_CAPACITY: usize = 64;

impl RtxQueue {
    fn words_for(n: usize) -> usize {
        n.div_ceil(64).next_power_of_two().max(2)
    }

    pub(super) fn with_capacity(n: usize) -> Self {
        let nwords = Self::words_for(n);
        RtxQueue {
            segs: SegRing::with_capacity(n),
            base: 0,
            unsacked: Bits::new(nwords),
            orig: Bits::new(nwords),
            lost: Bits::new(nwords),
            retrans: VecDeque::with_capacity(SIDE_CAPACITY),
            scratch: Vec::with_capacity(SIDE_CAPACITY),
        }
    }

    /// The heap bytes [`with_capacity`](Self::with_capacity)`(n)` allocates: the segment
    /// ring, the three bit rings with their summaries, the retransmission list and the
    /// scratch buffer (`crate::memory`).
    pub(super) fn heap_bytes(n: usize) -> usize {
        use std::mem::size_of;
        let cap = if n == 0 { 0 } else { n.next_power_of_two() };
        let nwords = Self::words_for(n);
        cap * size_of::<Seg>()
            + 3 * (nwords + nwords.div_ceil(64)) * size_of::<u64>()
            + SIDE_CAPACITY * size_of::<(u64, Time)>()
            + SIDE_CAPACITY * size_of::<usize>()
    }

    /// A queue holding no memory, to leave behind in a sender whose buffers were
    /// taken (`TcpSender::take_buffers`); never used afterwards.
    pub(super) fn empty() -> Self {
        let none = || Bits { words: Vec::new(), summary: Vec::new() };
        RtxQueue {
            segs: SegRing::with_capacity(0),
            base: 0,
            unsacked: none(),
            orig: none(),
            lost: none(),
            retrans: VecDeque::new(),
            scratch: Vec::new(),
        }
    }

    /// Make this queue equal to a fresh one (no segment, position 0, empty
    /// scoreboard) while keeping its allocations, for the next connection of a
    /// slot. A bit ring larger than a fresh queue's holds the same sets (rings
    /// only grow, and every lookup is by absolute position within the window), so
    /// the connection behaves exactly as with `with_capacity`.
    pub(super) fn reset(&mut self) {
        if self.unsacked.words.len() < 2 {
            *self = RtxQueue::with_capacity(64);
            return;
        }
        self.segs.clear();
        self.base = 0;
        for b in [&mut self.unsacked, &mut self.orig, &mut self.lost] {
            b.words.fill(0);
            b.summary.fill(0);
        }
        self.retrans.clear();
        self.scratch.clear();
    }

    #[inline]
    pub(super) fn len(&self) -> usize {
        self.segs.len
    }
    #[inline]
    pub(super) fn is_empty(&self) -> bool {
        self.segs.len == 0
    }
    #[inline]
    pub(super) fn front(&self) -> Option<&Seg> {
        self.segs.get(0)
    }
    /// The last segment (tests only).
    #[cfg(test)]
    pub(super) fn back(&self) -> Option<&Seg> {
        self.segs.len.checked_sub(1).and_then(|i| self.segs.get(i))
    }
    /// Every segment in sequence order (tests only: the walks use the index).
    #[cfg(test)]
    pub(super) fn iter(&self) -> impl Iterator<Item = &Seg> {
        (0..self.segs.len).map(|i| &self.segs[i])
    }
    /// Index of the first segment for which `pred` is false (`pred` true on a
    /// prefix), as `slice::partition_point` (tests only: the reference for
    /// `first_ending_after`).
    #[cfg(test)]
    pub(super) fn partition_point(&self, mut pred: impl FnMut(&Seg) -> bool) -> usize {
        let (mut lo, mut hi) = (0, self.segs.len);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if pred(&self.segs[mid]) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }

    /// Index of the first segment ending after `seq` (`len()` if none): the
    /// segments are in sequence order, so this is `partition_point(|s| s.end <=
    /// seq)`, found by guessing the index from the head segment's length (exact
    /// when the segments have one size, as they mostly do) and galloping from the
    /// guess, instead of a binary search whose every probe misses the cache on a
    /// long queue.
    pub(super) fn first_ending_after(&self, seq: u64) -> usize {
        let n = self.segs.len;
        let Some(head) = self.segs.get(0) else { return 0 };
        if head.end > seq {
            return 0;
        }
        let len = (head.end - head.seq).max(1);
        let guess = (((seq - head.seq) / len) as usize).min(n - 1);
        // Invariant: lo < answer ≤ hi, with index lo known to end at or before seq.
        let (mut lo, mut hi);
        if self.segs[guess].end <= seq {
            lo = guess;
            let mut step = 1;
            hi = loop {
                let probe = lo + step;
                if probe >= n {
                    break n;
                }
                if self.segs[probe].end > seq {
                    break probe;
                }
                lo = probe;
                step *= 2;
            };
        } else {
            hi = guess;
            let mut step = 1;
            lo = loop {
                // Index 0 ends at or before seq (checked above).
                let probe = hi.saturating_sub(step);
                if self.segs[probe].end <= seq {
                    break probe;
                }
                hi = probe;
                step *= 2;
            };
        }
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            if self.segs[mid].end <= seq {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        hi
    }

    #[inline]
    fn update(&mut self, a: u64, old: u8, new: u8) {
        let (o, n) = (classes(old), classes(new));
        let d = o ^ n;
        if d == 0 {
            return;
        }
        for (c, bits) in [(C_UNSACKED, &mut self.unsacked), (C_ORIG, &mut self.orig), (C_LOST, &mut self.lost)] {
            if d & c != 0 {
                if n & c != 0 {
                    bits.insert(a);
                } else {
                    bits.remove(a);
                }
            }
        }
    }

    /// Append a newly sent segment.
    #[inline]
    pub(super) fn push_back(&mut self, seg: Seg) {
        let a = self.base + self.segs.len as u64;
        let nwords = self.unsacked.words.len() as u64;
        if (a >> 6) - (self.base >> 6) >= nwords {
            self.grow(a);
        }
        // The slot's word is empty but for this word's own positions (see
        // `pop_front`): only the sets the segment belongs to change.
        let c = classes(seg.flags);
        if c & C_UNSACKED != 0 {
            self.unsacked.insert(a);
        }
        if c & C_ORIG != 0 {
            self.orig.insert(a);
        }
        if c & C_LOST != 0 {
            self.lost.insert(a);
        }
        self.segs.push_back(seg);
    }

    /// Double the bit rings (the live window is `[base, a)`).
    #[cold]
    #[inline(never)]
    fn grow(&mut self, a: u64) {
        let n = self.unsacked.words.len() * 2;
        self.unsacked = self.unsacked.regrow(n, self.base, a);
        self.orig = self.orig.regrow(n, self.base, a);
        self.lost = self.lost.regrow(n, self.base, a);
    }

    /// Remove the head (cumulatively acknowledged). Its bits stay until the head
    /// leaves their word, which is then emptied whole: every query starts at or
    /// after `base`, so bits below it in the head's word are never read, and a
    /// `push_back` reaches a slot's word again only after the head has left it (a
    /// push into the head's own slot word doubles the rings first).
    #[inline]
    pub(super) fn pop_front(&mut self) -> Option<Seg> {
        let s = self.segs.pop_front()?;
        self.base += 1;
        if self.base & 63 == 0 {
            let w = (self.base >> 6) - 1;
            self.unsacked.clear_word(w);
            self.orig.clear_word(w);
            self.lost.clear_word(w);
        }
        Some(s)
    }

    /// The ring slot of the segment at index `i`, for [`slot_seg`](Self::slot_seg).
    #[inline]
    pub(super) fn slot(&self, i: usize) -> usize {
        self.segs.slot(i)
    }

    /// The segment last written to ring slot `k`: one of the queue, or one popped
    /// since the last [`push_back`](Self::push_back) (a pop leaves its slot as it was
    /// until a push reuses it).
    #[inline]
    pub(super) fn slot_seg(&self, k: usize) -> &Seg {
        &self.segs.buf[k]
    }

    /// Stamp the last `n` segments (one skb's, sent back to back) with the skb's
    /// `tx.in_flight`; no scoreboard bit depends on it.
    #[inline]
    pub(super) fn set_in_flight_of_last(&mut self, n: usize, in_flight: u32) {
        let len = self.segs.len;
        for i in len.saturating_sub(n)..len {
            self.segs.get_mut(i).tx_in_flight = in_flight;
        }
    }

    /// Set the flags of the segment at index `i`.
    #[inline]
    pub(super) fn set_flags(&mut self, i: usize, flags: u8) {
        let old = std::mem::replace(&mut self.segs.get_mut(i).flags, flags);
        self.update(self.base + i as u64, old, flags);
    }

    /// Replace the segment at index `i` (same sequence range, new state).
    #[inline]
    pub(super) fn replace(&mut self, i: usize, seg: Seg) {
        debug_assert_eq!((seg.seq, seg.end), (self.segs[i].seq, self.segs[i].end));
        let old = std::mem::replace(self.segs.get_mut(i), seg).flags;
        self.update(self.base + i as u64, old, seg.flags);
    }

    /// Tag the segment at index `i`, not SACKed yet, as SACKed and sampled:
    /// `(flags | SACKED | DELIVERED) & !(LOST | RETRANS)` (`tcp_sacktag_one`, with the
    /// rate sample `tcp_rate_skb_delivered` took). Its position leaves every set it
    /// was in, as [`set_flags`](Self::set_flags) would remove it, without the general
    /// class comparison.
    #[inline]
    pub(super) fn mark_sacked(&mut self, i: usize) {
        let s = self.segs.get_mut(i);
        let old = s.flags;
        debug_assert!(old & SACKED == 0);
        s.flags = (old | SACKED | DELIVERED) & !(LOST | RETRANS);
        let a = self.base + i as u64;
        let c = classes(old);
        self.unsacked.remove(a);
        if c & C_ORIG != 0 {
            self.orig.remove(a);
        }
        if c & C_LOST != 0 {
            self.lost.remove(a);
        }
    }

    #[inline]
    fn next_in(&self, bits: &Bits, from: usize) -> Option<usize> {
        let to = self.base + self.segs.len as u64;
        bits.next(self.base + from as u64, to).map(|a| (a - self.base) as usize)
    }

    /// First index ≥ `from` of a segment not SACKed.
    #[inline]
    pub(super) fn next_unsacked(&self, from: usize) -> Option<usize> {
        self.next_in(&self.unsacked, from)
    }

    /// First index ≥ `from` of a segment never retransmitted and neither SACKed
    /// nor marked lost.
    #[inline]
    pub(super) fn next_original(&self, from: usize) -> Option<usize> {
        self.next_in(&self.orig, from)
    }

    /// Replace the segment at index `i` by its retransmission `seg` (sent now, at
    /// `seg.xmit`, flags with `RETRANS | EVER_RETRANS`).
    #[inline]
    pub(super) fn retransmit(&mut self, i: usize, seg: Seg) {
        debug_assert!(seg.flags & RETRANS != 0 && seg.flags & EVER_RETRANS != 0);
        debug_assert!(self.retrans.back().is_none_or(|&(_, t)| t <= seg.xmit));
        self.replace(i, seg);
        self.retrans.push_back((self.base + i as u64, seg.xmit));
    }

    /// Visit, in send order, the retransmitted segments RACK examines (not SACKed,
    /// not lost awaiting another retransmission) last sent at or before `until`:
    /// `visit(index, segment)`. Listed entries of segments that left are dropped.
    pub(super) fn walk_retransmitted(&mut self, until: Time, mut visit: impl FnMut(usize, &Seg)) {
        let mut n = 0;
        while n < self.retrans.len() && self.retrans[n].1 <= until {
            n += 1;
        }
        // Keep the live entries of the first n, in order, at the end of that prefix.
        let mut w = n;
        for k in (0..n).rev() {
            let (a, t) = self.retrans[k];
            let live = a >= self.base && a < self.base + self.segs.len as u64 && {
                let s = &self.segs[(a - self.base) as usize];
                s.xmit == t && classes(s.flags) & C_RETRANS != 0
            };
            if live {
                w -= 1;
                self.retrans[w] = (a, t);
            }
        }
        self.retrans.drain(..w);
        for k in 0..n - w {
            let a = self.retrans[k].0;
            let i = (a - self.base) as usize;
            visit(i, &self.segs[i]);
        }
    }

    /// First index ≥ `from` of a segment lost and not yet retransmitted.
    #[inline]
    pub(super) fn next_lost(&self, from: usize) -> Option<usize> {
        self.next_in(&self.lost, from)
    }
}

impl std::ops::Index<usize> for RtxQueue {
    type Output = Seg;
    #[inline]
    fn index(&self, i: usize) -> &Seg {
        &self.segs[i]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seg(k: u64, flags: u8) -> Seg {
        Seg { seq: k * 10, end: k * 10 + 10, xmit: k, flags, ..Seg::default() }
    }

    /// Each query against a scan of the whole queue, over a long random history of
    /// pushes, pops, flag changes and retransmissions that wraps the rings many
    /// times and grows them.
    /// A random history of pushes, pops, flag changes and retransmissions (ring
    /// sizes grow to a few thousand segments, shrink, grow again), checking every
    /// query against a scan of the whole queue; returns the answers.
    fn exercise(q: &mut RtxQueue, seed: u64, steps: u32) -> Vec<Vec<usize>> {
        let mut answers = Vec::new();
        let mut rng = crate::rng::stream(seed, crate::rng::Stream::Flow(0));
        let mut next = 0u64;
        let mut clock: Time = 0;
        let e = EVER_RETRANS;
        let flag_sets = [0, SACKED, LOST, LOST | RETRANS | e, RETRANS | e, SACKED | e, LOST | e, 16, SACKED | LOST];
        for step in 0..steps {
            clock += (rng.next_u32() % 3) as Time;
            let r = rng.next_u32() % 100;
            // Grow to a few thousand, then shrink, then grow again.
            let target = if (step / 20_000) % 2 == 0 { 3000 } else { 50 };
            if r < 30 && q.len() < target {
                let f = flag_sets[(rng.next_u32() as usize) % 2];
                q.push_back(Seg { xmit: clock, ..seg(next, f) });
                next += 1;
            } else if r < 45 && !q.is_empty() {
                q.pop_front();
            } else if !q.is_empty() {
                let i = rng.next_u32() as usize % q.len();
                let f = flag_sets[rng.next_u32() as usize % flag_sets.len()];
                // As in the sender, a segment joins the retransmitted ones only by
                // a retransmission; it may change flags among them (lost again).
                let joins = classes(f) & C_RETRANS != 0 && classes(q[i].flags) & C_RETRANS == 0;
                if r >= 90 || joins {
                    q.retransmit(i, Seg { flags: f | RETRANS | e, xmit: clock, ..q[i] });
                } else if r < 80 {
                    q.set_flags(i, f);
                } else if r < 85 && !q[i].has(SACKED) {
                    let old = q[i].flags;
                    q.mark_sacked(i);
                    assert_eq!(q[i].flags, (old | SACKED | DELIVERED) & !(LOST | RETRANS));
                } else {
                    q.replace(i, Seg { flags: f, ..q[i] });
                }
            }
            if step % 7 == 0 && !q.is_empty() {
                let from = rng.next_u32() as usize % (q.len() + 1);
                let scan = |c: u8| (from..q.len()).find(|&i| classes(q[i].flags) & c != 0);
                assert_eq!(q.next_unsacked(from), scan(C_UNSACKED), "step {step}");
                assert_eq!(q.next_original(from), scan(C_ORIG), "step {step}");
                assert_eq!(q.next_lost(from), scan(C_LOST), "step {step}");
                // Retransmitted segments in flight sent by `until`: those the walk
                // visits, once each when never retransmitted twice at one instant.
                let until = clock.saturating_sub((rng.next_u32() % 50) as Time);
                let want: Vec<usize> =
                    (0..q.len()).filter(|&i| classes(q[i].flags) & C_RETRANS != 0 && q[i].xmit <= until).collect();
                let mut got = Vec::new();
                q.walk_retransmitted(until, |i, s| {
                    assert!(s.xmit <= until);
                    got.push(i)
                });
                got.sort_unstable();
                got.dedup();
                assert_eq!(got, want, "step {step}");
                let opt = |x: Option<usize>| x.map_or(vec![], |i| vec![i]);
                answers.extend([opt(q.next_unsacked(from)), opt(q.next_original(from)), opt(q.next_lost(from)), got]);
            }
        }
        answers
    }

    /// Each query against a scan of the whole queue, over a long random history
    /// that wraps the rings many times and grows them.
    #[test]
    fn every_query_equals_a_full_scan() {
        let mut q = RtxQueue::with_capacity(16);
        exercise(&mut q, 7, 200_000);
        assert!(q.unsacked.words.len() >= 3000 / 64, "the rings grew");
    }

    /// A queue reset after a busy connection (grown rings, segments and
    /// retransmissions left in it, base far from 0) answers every query of a new
    /// history as a fresh queue does: reusing it cannot change results.
    #[test]
    fn a_reset_queue_behaves_as_a_fresh_one() {
        let mut fresh = RtxQueue::with_capacity(64);
        let want = exercise(&mut fresh, 9, 60_000);
        let mut used = RtxQueue::with_capacity(16);
        exercise(&mut used, 7, 15_000);
        assert!(used.len() > 100 && used.base > 1000 && used.unsacked.words.len() > 2, "a busy queue to reset");
        used.reset();
        assert!(used.is_empty() && used.base == 0 && used.retrans.is_empty());
        assert_eq!(exercise(&mut used, 9, 60_000), want);
        // A sender's taken buffers leave an empty queue behind; resetting that
        // builds a fresh one.
        let mut taken = RtxQueue::empty();
        taken.reset();
        assert_eq!(exercise(&mut taken, 9, 60_000), want);
    }

    #[test]
    fn first_ending_after_equals_a_binary_search() {
        // Segments of mixed sizes (full, runts, a size change) and every probe
        // sequence from below the head to past the tail.
        let mut rng = crate::rng::stream(11, crate::rng::Stream::Flow(0));
        for round in 0..200 {
            let mut q = RtxQueue::with_capacity(16);
            let mut seq = 1000 * round as u64;
            let n = rng.next_u32() % 300;
            for _ in 0..n {
                let len = match rng.next_u32() % 10 {
                    0 => 1 + (rng.next_u32() % 1448) as u64,
                    1 => 1200,
                    _ => 1448,
                };
                q.push_back(Seg { seq, end: seq + len, ..Seg::default() });
                seq += len;
            }
            let lo = q.front().map_or(0, |s| s.seq.saturating_sub(3000));
            for _ in 0..200 {
                let probe = lo + (rng.next_u64() % (seq - lo + 3000));
                assert_eq!(q.first_ending_after(probe), q.partition_point(|s| s.end <= probe), "seq {probe}");
            }
        }
    }

    #[test]
    fn classes_follow_the_rack_and_retransmit_rules() {
        // tcp_rack_detect_loss skips SACKed and lost-not-retransmitted packets;
        // tcp_xmit_retransmit_queue sends LOST ones not SACKED and not in flight again.
        assert_eq!(classes(0), C_UNSACKED | C_ORIG);
        assert_eq!(classes(RETRANS | EVER_RETRANS), C_UNSACKED | C_RETRANS);
        assert_eq!(classes(LOST | RETRANS | EVER_RETRANS), C_UNSACKED | C_RETRANS);
        assert_eq!(classes(EVER_RETRANS | 16), C_UNSACKED | C_RETRANS);
        assert_eq!(classes(LOST), C_UNSACKED | C_LOST);
        assert_eq!(classes(SACKED), 0);
    }
}
