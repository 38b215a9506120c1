//! Packets as they cross the simulated network.
//!
//! A `Packet` is a small `Copy` value: it travels by value through the event queue
//! and the qdiscs, so the steady state allocates nothing per packet.

use crate::qdisc::QdiscPacket;
use crate::time::Time;

/// Ethernet header bytes counted by `qdisc_pkt_len` (include/net/sch_generic.h: `skb->len`
/// at the qdisc includes the MAC header).
pub const ETH_HLEN: u32 = 14;
/// IPv4 (20) + TCP (20) header bytes.
pub const IP_TCP_HLEN: u32 = 40;
/// Timestamp option, aligned (2 NOP + 10): `TCPOLEN_TSTAMP_ALIGNED` (include/net/tcp.h; RFC 7323).
pub const TCPOLEN_TSTAMP_ALIGNED: u32 = 12;
/// SACK option: 2 NOP + kind + len, then 8 bytes per block.
pub const TCPOLEN_SACK_BASE_ALIGNED: u32 = 4;
pub const TCPOLEN_SACK_PERBLOCK: u32 = 8;
/// IPv4 (20) + UDP (8) header bytes.
pub const IP_UDP_HLEN: u32 = 28;
/// At most 3 SACK blocks fit beside the timestamp option (40 − 12 = 28 B = 4 + 3·8; RFC 2018 §3).
pub const MAX_SACK_BLOCKS: usize = 3;

/// The IP ECN field, defined beside the qdiscs that read and mark it.
pub use crate::qdisc::Ecn;

/// What a packet carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PacketKind {
    /// TCP SYN (client to server).
    Syn,
    /// TCP SYN/ACK (server to client).
    SynAck,
    /// TCP segment with payload.
    Data,
    /// Pure TCP ACK (no payload).
    Ack,
    /// UDP datagram of an unresponsive source, or a UDP-Prague data packet.
    Udp,
    /// UDP-Prague's per-packet ACK (receiver to sender): `tcp.seq` carries the acknowledged
    /// sequence number and the lost count, `tcp.ack` the received and CE counts,
    /// `tsval`/`tsecr` the timestamps, `ece` the L4S-error flag (`traffic/udp_prague.rs`).
    UdpAck,
}

/// The AccECN option (TCP option kind 172/174, RFC 9768 §3.2.3) as carried on a
/// packet; kind 174 orders the counters E1B, CEB, E0B.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AccEcnOption {
    /// Number of counters present (0–3); None = no option on this packet.
    pub fields: u8,
    pub e1b: u32,
    pub ceb: u32,
    pub e0b: u32,
}

/// The AccECN option as a packet stores it: "none" or 0–3 fields, and the three
/// 24-bit counters (`ACCECN_FIELD_MASK`: the option carries 24 bits each) packed in
/// 9 bytes, so that the whole `Packet` fits in 128 bytes (copied inline, not by a
/// `memcpy` call). [`get`](Self::get) returns exactly the value given to [`set`](Self::set).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AccEcnSlot {
    /// `NO_OPTION`, or the number of counters present.
    fields: u8,
    counters: [u8; 9],
}

impl AccEcnSlot {
    const NO_OPTION: u8 = u8::MAX;
    /// Largest counter value the option holds.
    const COUNTER_MAX: u32 = (1 << 24) - 1;

    #[inline]
    pub fn get(&self) -> Option<AccEcnOption> {
        if self.fields == Self::NO_OPTION {
            return None;
        }
        let c = &self.counters;
        let at = |i: usize| u32::from_le_bytes([c[i], c[i + 1], c[i + 2], 0]);
        Some(AccEcnOption { fields: self.fields, e1b: at(0), ceb: at(3), e0b: at(6) })
    }

    /// Store `opt`; its counters must fit in 24 bits (the receiver masks them).
    #[inline]
    pub fn set(&mut self, opt: Option<AccEcnOption>) {
        *self = match opt {
            None => Self::default(),
            Some(o) => {
                assert!(o.fields != Self::NO_OPTION, "AccECN option with {} fields", o.fields);
                debug_assert!(o.e1b.max(o.ceb).max(o.e0b) <= Self::COUNTER_MAX, "AccECN counter above 24 bits");
                let mut counters = [0u8; 9];
                for (i, v) in [o.e1b, o.ceb, o.e0b].into_iter().enumerate() {
                    counters[3 * i..3 * i + 3].copy_from_slice(&v.to_le_bytes()[..3]);
                }
                AccEcnSlot { fields: o.fields, counters }
            }
        };
    }
}

impl Default for AccEcnSlot {
    /// No option.
    fn default() -> Self {
        AccEcnSlot { fields: Self::NO_OPTION, counters: [0; 9] }
    }
}

/// One SACK (or D-SACK) block `[start, end)` in sequence space.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SackBlock {
    pub start: u64,
    pub end: u64,
}

/// The SACK option of one ACK: up to three blocks, a D-SACK block first (RFC 2018 §3,
/// RFC 2883 §4). It travels beside the packet, in the run's [`SackTable`], so that
/// the 48 bytes of blocks that only ACKs in recovery carry are not copied with
/// every packet through delay lines and queues (a `Packet` is 64 bytes, not 128).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SackSet {
    /// Number of valid entries in `blocks` (1..=3 in the table).
    pub num: u8,
    /// Whether `blocks[0]` is a D-SACK block (RFC 2883).
    pub dsack: bool,
    pub blocks: [SackBlock; MAX_SACK_BLOCKS],
}

impl SackSet {
    /// The valid blocks, in the order the receiver wrote them.
    #[inline]
    pub fn blocks(&self) -> &[SackBlock] {
        &self.blocks[..self.num as usize]
    }
}

/// A packet's handle on its SACK option in the [`SackTable`]: none (no option), or
/// an entry. Three bytes (up to 2^24 − 1 SACK-carrying ACKs in the network at
/// once), so that `Packet` stays within 64 bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SackRef([u8; 3]);

impl SackRef {
    /// No SACK option.
    pub const NONE: SackRef = SackRef([0; 3]);
    const MAX_INDEX: u32 = (1 << 24) - 2;

    #[inline]
    pub fn is_some(self) -> bool {
        self != Self::NONE
    }

    #[inline]
    fn index(self) -> Option<usize> {
        let [a, b, c] = self.0;
        let v = u32::from_le_bytes([a, b, c, 0]);
        (v != 0).then(|| v as usize - 1)
    }

    #[inline]
    fn from_index(i: u32) -> SackRef {
        let [a, b, c, _] = (i + 1).to_le_bytes();
        SackRef([a, b, c])
    }
}

/// The SACK options of the ACKs in the network: a slab written when a receiver
/// builds an ACK ([`insert`](Self::insert)), read by the sender that takes it, and
/// freed by the simulator where the ACK leaves the network (delivered, or dropped
/// by a qdisc or on a NIC). Entries are reused from a free list: the steady state
/// allocates nothing.
#[derive(Debug, Default)]
pub struct SackTable {
    pub(crate) sets: Vec<SackSet>,
    free: Vec<u32>,
}

impl SackTable {
    /// Store `set` (which has at least one block) and return its handle.
    #[inline]
    pub fn insert(&mut self, set: SackSet) -> SackRef {
        debug_assert!(set.num > 0 && set.num as usize <= MAX_SACK_BLOCKS);
        if let Some(i) = self.free.pop() {
            self.sets[i as usize] = set;
            return SackRef::from_index(i);
        }
        let i = self.sets.len() as u32;
        assert!(
            i <= SackRef::MAX_INDEX,
            "more than {} SACK-carrying ACKs in the network at once",
            SackRef::MAX_INDEX + 1
        );
        self.sets.push(set);
        SackRef::from_index(i)
    }

    /// The set `r` names (an empty set for [`SackRef::NONE`]).
    #[inline]
    pub fn get(&self, r: SackRef) -> SackSet {
        r.index().map_or(SackSet::default(), |i| self.sets[i])
    }

    /// The ACK holding `r` left the network: its entry may be reused.
    #[inline]
    pub fn free(&mut self, r: SackRef) {
        if let Some(i) = r.index() {
            debug_assert!(!self.free.contains(&(i as u32)), "SACK entry freed twice");
            self.free.push(i as u32);
        }
    }

    /// Entries in use (ACKs with a SACK option in the network).
    pub fn live(&self) -> usize {
        self.sets.len() - self.free.len()
    }
}

/// What an endpoint's callbacks write to: the packets it emits (the `Vec` this
/// derefs to) and the run's [`SackTable`], where a receiver puts the SACK option of
/// the ACK it builds and a sender reads the one of the ACK it takes.
#[derive(Debug, Default)]
pub struct Outbox {
    pub pkts: Vec<Packet>,
    pub sacks: SackTable,
}

impl Outbox {
    pub fn with_capacity(n: usize) -> Self {
        Outbox { pkts: Vec::with_capacity(n), sacks: SackTable::default() }
    }
}

impl std::ops::Deref for Outbox {
    type Target = Vec<Packet>;
    #[inline]
    fn deref(&self) -> &Vec<Packet> {
        &self.pkts
    }
}

impl std::ops::DerefMut for Outbox {
    #[inline]
    fn deref_mut(&mut self) -> &mut Vec<Packet> {
        &mut self.pkts
    }
}

/// TCP header fields that the simulator models.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TcpHeader {
    /// First payload byte's sequence number (data) or the sender's current seq (ACK).
    pub seq: u64,
    /// Cumulative acknowledgement (receiver to sender).
    pub ack: u64,
    /// Timestamp value (TSval) in the sender's TS clock (ms, as Linux's default).
    pub tsval: u32,
    /// Timestamp echo reply (TSecr).
    pub tsecr: u32,
    /// The header's AE, CWR and ECE bits (`0b100`, `0b010`, `0b001`): read as the ECE
    /// and CWR flags of RFC 3168 feedback ([`TcpHeader::ece`], [`TcpHeader::cwr`]) or
    /// as AccECN's 3-bit ACE counter, as the negotiated mode says; and PSH
    /// ([`TCP_FLAG_PSH`], [`TcpHeader::psh`]), which only data segments carry. Read the
    /// counter as `ace & ACE_MASK`.
    pub ace: u8,
    /// The window field of an ACK (`th->window`): the receive window right-shifted by
    /// the receiver's window scale (RFC 7323 §2; `tcp_select_window`). 0 on packets of
    /// a flow whose window is the scenario's fixed `rwnd`.
    pub window: u16,
    /// AccECN option carried (fields = 0..3), if any.
    pub accecn: AccEcnSlot,
    /// The SACK option, if any: a handle into the run's [`SackTable`].
    pub sack: SackRef,
}

/// The bits of [`TcpHeader::ace`] that are the AE, CWR and ECE flags (AccECN's ACE).
pub const ACE_MASK: u8 = TCP_FLAG_AE | TCP_FLAG_CWR | TCP_FLAG_ECE;
/// The bit of [`TcpHeader::ace`] that is the AE flag (ex-NS; RFC 9768 §3.2.1: ACE's high bit).
pub const TCP_FLAG_AE: u8 = 0b100;
/// The bit of [`TcpHeader::ace`] that is the CWR flag.
pub const TCP_FLAG_CWR: u8 = 0b010;
/// The bit of [`TcpHeader::ace`] that is the ECE flag.
pub const TCP_FLAG_ECE: u8 = 0b001;
/// The bit of [`TcpHeader::ace`] that is the PSH flag (`TCPHDR_PSH`), kept beside the
/// ACE bits so that a packet stays 64 bytes.
pub const TCP_FLAG_PSH: u8 = 0b1000;

impl TcpHeader {
    /// The PSH flag.
    #[inline]
    pub fn psh(&self) -> bool {
        self.ace & TCP_FLAG_PSH != 0
    }
    /// Sets or clears the PSH flag.
    #[inline]
    pub fn set_psh(&mut self, on: bool) {
        self.ace = (self.ace & !TCP_FLAG_PSH) | ((on as u8) << 3);
    }
    /// The ECE flag.
    #[inline]
    pub fn ece(&self) -> bool {
        self.ace & TCP_FLAG_ECE != 0
    }
    /// The CWR flag.
    #[inline]
    pub fn cwr(&self) -> bool {
        self.ace & TCP_FLAG_CWR != 0
    }
    /// Sets or clears the ECE flag.
    #[inline]
    pub fn set_ece(&mut self, on: bool) {
        self.ace = (self.ace & !TCP_FLAG_ECE) | on as u8;
    }
    /// Sets or clears the CWR flag.
    #[inline]
    pub fn set_cwr(&mut self, on: bool) {
        self.ace = (self.ace & !TCP_FLAG_CWR) | ((on as u8) << 1);
    }
}

/// A packet in flight.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Packet {
    /// Index of the flow (scenario order).
    pub flow: u32,
    pub kind: PacketKind,
    /// Layer-2 frame length as `qdisc_pkt_len` sees it (payload + headers + 14 B).
    pub wire_len: u32,
    /// Transport payload bytes.
    pub payload: u32,
    pub ecn: Ecn,
    /// Whether this is a retransmission (for metrics only; the network does not look).
    pub retrans: bool,
    /// Time the packet entered the current qdisc (set by the qdisc on enqueue).
    pub enqueue_ts: Time,
    /// Sub-queue the qdisc put the packet in, indexing `Qdisc::class_names()`
    /// (DualPI2: 0 = C, 1 = L); 0 for single-queue qdiscs.
    pub qclass: u8,
    pub tcp: TcpHeader,
}

impl Packet {
    /// An empty packet of `kind` for `flow`; the caller fills in the rest.
    pub fn new(flow: u32, kind: PacketKind) -> Self {
        Packet {
            flow,
            kind,
            wire_len: 0,
            payload: 0,
            ecn: Ecn::NotEct,
            retrans: false,
            enqueue_ts: 0,
            qclass: 0,
            tcp: TcpHeader::default(),
        }
    }
}

/// What the qdiscs see of a packet. The flow key is the flow index (the simulator's
/// stand-in for the 5-tuple that `skb_get_hash` hashes); the DS field carries no DSCP.
impl QdiscPacket for Packet {
    #[inline]
    fn wire_len(&self) -> u32 {
        self.wire_len
    }
    #[inline]
    fn ecn(&self) -> Ecn {
        self.ecn
    }
    #[inline]
    fn set_ecn(&mut self, ecn: Ecn) {
        self.ecn = ecn;
    }
    #[inline]
    fn flow_key(&self) -> u32 {
        self.flow
    }
    #[inline]
    fn enqueue_ts(&self) -> Time {
        self.enqueue_ts
    }
    #[inline]
    fn set_enqueue_ts(&mut self, now: Time) {
        self.enqueue_ts = now;
    }
    #[inline]
    fn set_qclass(&mut self, class: u8) {
        self.qclass = class;
    }
}

/// Wire length of a TCP packet with `payload` bytes and `num_sack` SACK blocks.
#[inline]
pub fn tcp_wire_len(payload: u32, num_sack: u8) -> u32 {
    ETH_HLEN + IP_TCP_HLEN + TCPOLEN_TSTAMP_ALIGNED + sack_option_len(num_sack) + payload
}

/// Bytes of a SACK option with `num_sack` blocks (0 if none).
#[inline]
pub fn sack_option_len(num_sack: u8) -> u32 {
    if num_sack > 0 {
        TCPOLEN_SACK_BASE_ALIGNED + TCPOLEN_SACK_PERBLOCK * num_sack as u32
    } else {
        0
    }
}

/// TCP option space (40 B) left after timestamps and `num_sack` SACK blocks.
#[inline]
pub fn option_space_left(num_sack: u8) -> u32 {
    40 - TCPOLEN_TSTAMP_ALIGNED - sack_option_len(num_sack)
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn full_segment_is_1514_bytes() {
        assert_eq!(tcp_wire_len(1448, 0), 1514);
        assert_eq!(tcp_wire_len(0, 0), 66);
        assert_eq!(tcp_wire_len(0, 3), 66 + 28);
    }
    #[test]
    fn packet_fits_in_one_cache_line() {
        // The SACK blocks live in the SackTable and nothing carries a packet id or
        // send time the engine never reads: 512 flows' queues and delay lines hold
        // 64-byte packets (one cache line), not 128- or 80-byte ones.
        assert!(std::mem::size_of::<Packet>() <= 64, "Packet is {} bytes", std::mem::size_of::<Packet>());
    }
    #[test]
    fn sack_table_round_trips_and_reuses_freed_entries() {
        let mut t = SackTable::default();
        assert_eq!(t.get(SackRef::NONE), SackSet::default());
        let set = |k: u64| SackSet {
            num: 2,
            dsack: k.is_multiple_of(2),
            blocks: [SackBlock { start: k, end: k + 1 }, SackBlock { start: k + 5, end: k + 9 }, SackBlock::default()],
        };
        let refs: Vec<SackRef> = (0..300).map(|k| t.insert(set(k))).collect();
        assert!(refs.iter().all(|r| r.is_some()));
        for (k, r) in refs.iter().enumerate() {
            assert_eq!(t.get(*r), set(k as u64));
            assert_eq!(t.get(*r).blocks().len(), 2);
        }
        assert_eq!(t.live(), 300);
        t.free(refs[7]);
        t.free(refs[299]);
        t.free(SackRef::NONE);
        assert_eq!(t.live(), 298);
        let again = t.insert(set(1000));
        assert!(again == refs[299] || again == refs[7], "a freed entry is reused");
        assert_eq!(t.get(again), set(1000));
        assert_eq!(t.get(refs[8]), set(8));
        assert_eq!(t.sets.len(), 300, "no growth while entries are free");
    }
    #[test]
    fn accecn_slot_round_trips() {
        let mut h = TcpHeader::default();
        assert_eq!(h.accecn.get(), None);
        for fields in 0..=3 {
            let o = AccEcnOption { fields, e1b: 0xff_fffe, ceb: 1, e0b: 0x12_3456 };
            h.accecn.set(Some(o));
            assert_eq!(h.accecn.get(), Some(o));
        }
        h.accecn.set(None);
        assert_eq!(h.accecn, AccEcnSlot::default());
    }
    #[test]
    fn set_ce_semantics() {
        let mut p = Packet::new(0, PacketKind::Data);
        assert!(!p.set_ce());
        assert_eq!(p.ecn, Ecn::NotEct);
        p.ecn = Ecn::Ce;
        assert!(p.set_ce());
        p.ecn = Ecn::Ect1;
        assert!(p.set_ce());
        assert_eq!(p.ecn, Ecn::Ce);
    }
}
