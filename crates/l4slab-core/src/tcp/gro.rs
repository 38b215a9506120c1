//! Receiver GRO (generic receive offload) behind NIC interrupt moderation: the
//! segments of a flow that reach the receiving host within one NAPI poll are merged
//! before TCP sees them, so TCP processes one GRO packet (and ACKs it once, a
//! stretch ACK) where the wire carried several segments.
//!
//! What arrives "together" is decided by the NIC's interrupt moderation
//! (`ethtool -C DEV rx-usecs N`). The default 50 µs is the Intel i40e driver's
//! `I40E_ITR_RX_DEF` = `I40E_ITR_20K` (drivers/net/ethernet/intel/i40e/i40e_txrx.h:
//! 20 000 interrupts/s), and Intel's ITR is an interrupt *throttle*: a guaranteed
//! minimum interval between two interrupts, not a delay after each packet. The
//! interval counter is reloaded when an interrupt is asserted; a packet that arrives
//! once it has run out (the port was quiet for a whole interval) raises its interrupt
//! at once, a packet that arrives earlier waits until the interval since the last
//! interrupt has passed (Intel I210 datasheet §7.3.2.1 "Interrupt Throttling", EITR,
//! Figure 7-15: "if the EITR counter counted down to zero and no interrupt event has
//! happened, then the EITR counter is not re-armed but stays at zero. Thus, the next
//! interrupt event triggers an interrupt immediately"; 8254x SDM §13.4.18 ITR: "a
//! guaranteed inter-interrupt delay"). So a sparse packet (an ACK every 240 µs at
//! 100 Mbit/s) reaches the stack without delay, and only packets closer than
//! `rx-usecs` are batched. (Modelling it as "`rx-usecs` after every first arrival",
//! as this file did first, shifted every sparse ACK by a fixed 50 µs; in a
//! deterministic tail-drop run such a sub-frame shift moves the flows' arrival phase
//! and with it the drop split: Floyd & Jacobson, "On Traffic Phase Effects in
//! Packet-Switched Gateways", 1991/92.) The poll then drains what the ring holds, at
//! most the NAPI budget of 64 packets (`NAPI_POLL_WEIGHT`, include/linux/netdevice.h),
//! and `napi_complete_done` flushes every held GRO packet (net/core/dev.c:
//! `napi_poll` / `net_rx_action`; `gro_flush_timeout` = 0 by default, so nothing
//! outlives the poll).
//!
//! Which consecutive segments merge is `tcp_gro_receive` (net/ipv4/tcp_offload.c)
//! with `inet_gro_flush` / `inet_gro_receive` (net/ipv4/af_inet.c): the next segment
//! must start where the GRO packet ends, be no longer than its first segment
//! (`gso_size`), carry the same TCP flags apart from FIN/PSH, no CWR (the RFC 3168
//! flush), the same ACK number, identical options (so the same TSval: a millisecond
//! tick splits a train), and the same IP TOS byte, i.e. the same ECN codepoint (a CE
//! mark starts a new GRO packet); a segment shorter than `gso_size` ends the packet
//! (`flush = len < mss`), and so does a segment with PSH, merged first (`flush |= flags &
//! (URG | PSH | ...)`; the packet's header takes its PSH: `tcp_flag_word(th2) |= flags &
//! (FIN | PSH)`), which is the sender's reason to set PSH on the last segment of each
//! GSO skb; the packet stays below `gro_max_size` = 65 536 bytes
//! (`GRO_LEGACY_MAX_SIZE`, `skb_gro_receive`).

use crate::packet::{Packet, TCP_FLAG_CWR, TCP_FLAG_PSH};
use crate::time::Time;

/// `NAPI_POLL_WEIGHT`: packets one NAPI poll handles at most.
pub const NAPI_POLL_WEIGHT: usize = 64;
/// `GRO_LEGACY_MAX_SIZE`: the largest GRO packet (IP length), bytes.
pub const GRO_MAX_SIZE: u32 = 65_536;
/// IPv4 + TCP headers with timestamps, counted in the GRO packet's IP length.
const IP_TCP_HLEN: u32 = 20 + 32;
/// Default `rx-usecs` (i40e `I40E_ITR_20K`), ns: the scenario default.
pub use crate::config::DEFAULT_RX_USECS_NS;

/// The receive side of one host interface for one connection: segments waiting for
/// the next NAPI poll.
pub struct Gro {
    /// Minimum interval between two RX interrupts (`rx-usecs`, Intel ITR), ns.
    rx_delay_ns: u64,
    /// When the last interrupt fired (the last poll), if any.
    last_irq: Option<Time>,
    /// Segments received since the last poll, in arrival order (capacity
    /// `NAPI_POLL_WEIGHT`, reserved once: holding allocates nothing).
    held: Vec<Packet>,
    /// When the pending interrupt fires and the poll runs.
    poll_at: Option<Time>,
    /// GRO packets handed to TCP, and the segments in them.
    pub gro_packets: u64,
    pub gro_segments: u64,
}

impl Gro {
    /// The heap bytes a `Gro` holds: its batch of `NAPI_POLL_WEIGHT` packets.
    pub fn heap_bytes() -> usize {
        NAPI_POLL_WEIGHT * std::mem::size_of::<Packet>()
    }

    pub fn new(rx_delay_ns: u64) -> Self {
        Gro {
            rx_delay_ns,
            last_irq: None,
            held: Vec::with_capacity(NAPI_POLL_WEIGHT),
            poll_at: None,
            gro_packets: 0,
            gro_segments: 0,
        }
    }

    /// When the next poll runs, if a segment waits.
    #[inline]
    pub fn poll_at(&self) -> Option<Time> {
        self.poll_at
    }

    /// A segment reached the NIC at `now`. True when the caller polls at once: the
    /// throttle interval since the last interrupt has passed (the interrupt fires
    /// now), or the ring holds a full NAPI budget.
    #[inline]
    pub fn hold(&mut self, pkt: &Packet, now: Time) -> bool {
        if self.held.is_empty() {
            // The interrupt fires at the end of the interval that began with the
            // last one, or now if that interval is over (ITR throttle).
            let irq = self.last_irq.map_or(now, |t| (t + self.rx_delay_ns).max(now));
            self.poll_at = Some(irq);
        }
        self.held.push(*pkt);
        self.held.len() >= NAPI_POLL_WEIGHT || self.poll_at.is_some_and(|t| t <= now)
    }

    /// Take the held segments for a poll at `now` (the caller hands the buffer back
    /// with [`Gro::give_back`], so no poll allocates). Only a poll its interrupt
    /// started reloads the throttle interval: a full NAPI budget is polled before the
    /// interrupt (NAPI repolls with interrupts off), and the ITR counter keeps running
    /// from the last interrupt.
    #[inline]
    pub fn take(&mut self, now: Time) -> Vec<Packet> {
        if self.poll_at.is_none_or(|t| t <= now) {
            self.last_irq = Some(now);
        }
        self.poll_at = None;
        std::mem::take(&mut self.held)
    }

    #[inline]
    pub fn give_back(&mut self, mut buf: Vec<Packet>) {
        buf.clear();
        if self.held.is_empty() {
            self.held = buf;
        }
    }

    /// Count one GRO packet of `segs` segments.
    #[inline]
    pub fn count(&mut self, segs: usize) {
        self.gro_packets += 1;
        self.gro_segments += segs as u64;
    }
}

/// Whether `next` joins the GRO packet that starts with `first`, ends with `last`
/// and carries `bytes` of payload so far (`tcp_gro_receive`'s flush tests).
#[inline]
pub fn can_merge(first: &Packet, last: &Packet, bytes: u32, next: &Packet) -> bool {
    let gso_size = first.payload;
    // `flush = len < mss` at out_check_final: a short segment closed the packet.
    last.payload == gso_size
        && !last.tcp.psh()
        && next.payload > 0
        && next.payload <= gso_size
        && next.tcp.seq == last.tcp.seq + last.payload as u64
        && !next.tcp.cwr()
        // The flags must match, CWR, FIN and PSH aside (`tcp_gro_receive`: `~(FIN | PSH)`,
        // a CWR segment flushed above).
        && (next.tcp.ace ^ first.tcp.ace) & !(TCP_FLAG_CWR | TCP_FLAG_PSH) == 0
        && next.tcp.ack == first.tcp.ack
        && next.tcp.tsval == first.tcp.tsval
        && next.tcp.tsecr == first.tcp.tsecr
        && next.tcp.accecn == first.tcp.accecn
        && !next.tcp.sack.is_some()
        && !first.tcp.sack.is_some()
        && next.ecn == first.ecn
        && bytes + next.payload + IP_TCP_HLEN <= GRO_MAX_SIZE
}

/// Split `held` (arrival order) into GRO packets: calls `f(start, end)` for each
/// run `held[start..end]` that `tcp_gro_receive` would merge.
#[inline]
pub fn for_each_gro_packet(held: &[Packet], mut f: impl FnMut(usize, usize)) {
    let mut start = 0;
    while start < held.len() {
        let mut end = start + 1;
        let mut bytes = held[start].payload;
        while end < held.len() && can_merge(&held[start], &held[end - 1], bytes, &held[end]) {
            bytes += held[end].payload;
            end += 1;
        }
        f(start, end);
        start = end;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::{Ecn, PacketKind};

    fn seg(seq: u64, len: u32) -> Packet {
        let mut p = Packet::new(0, PacketKind::Data);
        p.tcp.seq = seq;
        p.payload = len;
        p.ecn = Ecn::Ect1;
        p
    }

    fn runs(held: &[Packet]) -> Vec<usize> {
        let mut v = Vec::new();
        for_each_gro_packet(held, |s, e| v.push(e - s));
        v
    }

    #[test]
    fn back_to_back_in_order_segments_merge_up_to_64_kb() {
        // 60 full segments of 1448 B: 45 fit in 65 536 B with the 52-B headers
        // (45·1448 + 52 = 65 212; 46 would be 66 660), then the rest.
        let held: Vec<Packet> = (0..60).map(|i| seg(i * 1448, 1448)).collect();
        assert_eq!(runs(&held), vec![45, 15]);
    }

    #[test]
    fn a_gap_an_ecn_change_a_new_tsval_or_a_short_segment_ends_the_packet() {
        let mut held: Vec<Packet> = (0..8).map(|i| seg(i * 1448, 1448)).collect();
        held[2].tcp.seq += 1448; // a hole before segment 2 (and 3 follows 2 no more)
        held[5].ecn = Ecn::Ce; // CE: another TOS byte (inet_gro_flush)
        held[7].tcp.tsval = 1; // a new millisecond: options differ
        assert_eq!(runs(&held), vec![2, 1, 2, 1, 1, 1]);
        // A short segment joins, then closes the packet.
        let mut held: Vec<Packet> = (0..4).map(|i| seg(i * 1448, 1448)).collect();
        held[1].payload = 700;
        held[2].tcp.seq = 1448 + 700;
        held[3].tcp.seq = 2 * 1448 + 700;
        assert_eq!(runs(&held), vec![2, 2]);
        // CWR (RFC 3168) is never merged into a GRO packet.
        let mut held: Vec<Packet> = (0..3).map(|i| seg(i * 1448, 1448)).collect();
        held[1].tcp.set_cwr(true);
        assert_eq!(runs(&held), vec![1, 2]);
        // PSH (the last segment of each GSO skb) joins, then closes the packet.
        let mut held: Vec<Packet> = (0..6).map(|i| seg(i * 1448, 1448)).collect();
        held[0].tcp.set_psh(true);
        held[3].tcp.set_psh(true);
        assert_eq!(runs(&held), vec![1, 3, 2]);
    }

    #[test]
    fn the_interrupt_is_throttled_not_delayed_or_fires_at_a_full_budget() {
        let mut g = Gro::new(DEFAULT_RX_USECS_NS);
        assert_eq!(g.poll_at(), None);
        // The first packet on a quiet port raises its interrupt at once.
        assert!(g.hold(&seg(0, 1448), 1_000), "a quiet port's first packet is polled at once");
        let buf = g.take(1_000);
        assert_eq!(buf.len(), 1);
        g.give_back(buf);
        // Packets within 50 µs of that interrupt wait for the interval to end.
        assert!(!g.hold(&seg(1448, 1448), 20_000));
        assert!(!g.hold(&seg(2 * 1448, 1448), 40_000));
        assert_eq!(g.poll_at(), Some(1_000 + 50_000));
        let buf = g.take(51_000);
        assert_eq!(buf.len(), 2);
        g.give_back(buf);
        assert_eq!(g.poll_at(), None);
        // 60 µs later the interval (reloaded at 51 µs) is over: at once again.
        assert!(g.hold(&seg(3 * 1448, 1448), 111_000));
        assert_eq!(g.poll_at(), Some(111_000));
        let buf = g.take(111_000);
        g.give_back(buf);
        for i in 0..NAPI_POLL_WEIGHT as u64 - 1 {
            assert!(!g.hold(&seg(i * 1448, 1448), 120_000));
        }
        assert!(g.hold(&seg(63 * 1448, 1448), 120_000), "the 64th packet fills the NAPI budget");
        assert!(g.held.capacity() >= NAPI_POLL_WEIGHT);
        let buf = g.take(120_000);
        assert_eq!(buf.len(), NAPI_POLL_WEIGHT);
        g.give_back(buf);
        // No interrupt fired for the budget poll: the interval still runs from 111 µs.
        assert!(!g.hold(&seg(64 * 1448, 1448), 130_000));
        assert_eq!(g.poll_at(), Some(111_000 + 50_000));
    }
}
