//! Real IPv4 packets as the engine's qdiscs see them.
//!
//! [`EmuPacket`] owns a fixed-size buffer from a [`Pool`] (preallocated at start, so
//! the forwarding loop allocates nothing: a buffer moves by pointer from the pool to
//! a delay line, a qdisc and back) and implements `l4slab_core::qdisc::QdiscPacket`
//! on the bytes themselves: the ECN field is the low two bits of the IPv4 TOS byte
//! (RFC 3168 §5), written in place with the header checksum updated incrementally
//! (RFC 1624 eqn. 3, as Linux `include/net/inet_ecn.h:IP_ECN_set_ce` does with
//! `csum_replace2`-style arithmetic), so a CE mark by `pie`/`dualpi2`/`fq_codel` is a
//! real CE mark the receiver's kernel sees.

use l4slab_core::qdisc::{Ecn, QdiscPacket};
use l4slab_core::time::Time;

/// Bytes of one buffer: the TUN MTU is 1500 (the device default), so every packet
/// read fits; a larger read is truncated by the kernel and dropped by [`EmuPacket::parse`].
pub const BUF_LEN: usize = 2048;
/// Ethernet header bytes added to the IP length: `qdisc_pkt_len` of an Ethernet
/// device counts the L2 frame (include/net/sch_generic.h:qdisc_pkt_len,
/// `skb->len` from the MAC header), as the engine's `PSCHED_MTU` = 1514 does.
pub const L2_OVERHEAD: u32 = 14;

/// One packet buffer.
pub type Buf = Box<[u8; BUF_LEN]>;

/// A fixed set of buffers, all allocated at start.
pub struct Pool {
    free: Vec<Buf>,
    size: usize,
}

impl Pool {
    pub fn new(size: usize) -> Self {
        let mut free = Vec::with_capacity(size);
        for _ in 0..size {
            free.push(Box::new([0u8; BUF_LEN]));
        }
        Pool { free, size }
    }
    /// A free buffer, or `None` when every buffer is in use (the packet is then
    /// dropped and counted as a pool overflow).
    #[inline]
    pub fn take(&mut self) -> Option<Buf> {
        self.free.pop()
    }
    /// Return a buffer (never grows the pool: capacity was reserved for all of them).
    #[inline]
    pub fn put(&mut self, b: Buf) {
        debug_assert!(self.free.len() < self.size);
        self.free.push(b);
    }
    pub fn available(&self) -> usize {
        self.free.len()
    }
    pub fn size(&self) -> usize {
        self.size
    }
}

/// Why a buffer read from a TUN is not forwarded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reject {
    /// Not IPv4 (IPv6 is disabled in the namespaces; anything else is not ours).
    NotIpv4,
    /// Shorter than its header or its `tot_len`, or longer than the buffer.
    Malformed,
}

/// A real IPv4 packet in a pooled buffer, with what the forwarding loop keeps of it.
pub struct EmuPacket {
    buf: Buf,
    /// IP bytes (`tot_len`).
    len: u16,
    /// The flow (TUN pair) it came from: index in the scenario's `flows`.
    pub flow: u16,
    /// Hash of the 5-tuple (`skb_get_hash` stand-in).
    key: u32,
    /// Enqueue time at the qdisc, ns since the run's t0.
    ts: Time,
    /// Sub-queue the qdisc put it in.
    pub qclass: u8,
    /// ECN field as read from the sender (to attribute CE marks to flows).
    pub ecn_in: Ecn,
    /// TCP/UDP payload bytes (0 for other protocols or pure ACKs).
    pub payload: u16,
}

#[inline]
fn be16(b: &[u8], i: usize) -> u16 {
    u16::from_be_bytes([b[i], b[i + 1]])
}

/// One's-complement sum of 16-bit big-endian words (RFC 1071).
fn ones_sum(data: &[u8]) -> u32 {
    let mut s: u32 = 0;
    let mut i = 0;
    while i + 1 < data.len() {
        s += be16(data, i) as u32;
        i += 2;
    }
    if i < data.len() {
        s += (data[i] as u32) << 8;
    }
    s
}

fn fold(mut s: u32) -> u16 {
    while s >> 16 != 0 {
        s = (s & 0xffff) + (s >> 16);
    }
    s as u16
}

/// The IPv4 header checksum of `hdr` (its checksum field taken as zero), RFC 791 §3.1.
pub fn ipv4_header_checksum(hdr: &[u8]) -> u16 {
    let s = ones_sum(hdr) - be16(hdr, 10) as u32;
    !fold(s)
}

/// Whether the header checksum of `hdr` verifies (RFC 1071: the sum is all ones).
pub fn ipv4_checksum_ok(hdr: &[u8]) -> bool {
    fold(ones_sum(hdr)) == 0xffff
}

/// A 5-tuple hash: the input of the qdiscs' flow hash (fq, fq_codel), standing in
/// for the kernel's `skb_get_hash` (net/core/flow_dissector.c: a keyed hash of
/// addresses, protocol and ports). FNV-1a over the fields, then a murmur3 finaliser.
fn five_tuple_key(b: &[u8], ihl: usize, proto: u8, first_fragment: bool) -> u32 {
    let mut h: u32 = 0x811c_9dc5;
    let mut eat = |x: u8| {
        h ^= x as u32;
        h = h.wrapping_mul(0x0100_0193);
    };
    for &x in &b[12..20] {
        eat(x);
    }
    eat(proto);
    if first_fragment && (proto == 6 || proto == 17) && b.len() >= ihl + 4 {
        for &x in &b[ihl..ihl + 4] {
            eat(x);
        }
    }
    h ^= h >> 16;
    h = h.wrapping_mul(0x85eb_ca6b);
    h ^= h >> 13;
    h
}

impl EmuPacket {
    /// Take `buf` holding `n` bytes read from the TUN of flow `flow`; checks the IPv4
    /// header and returns the buffer with the reason on rejection.
    pub fn parse(buf: Buf, n: usize, flow: u16) -> Result<EmuPacket, (Buf, Reject)> {
        if n < 20 || buf[0] >> 4 != 4 {
            let r = if n >= 1 && buf[0] >> 4 != 4 { Reject::NotIpv4 } else { Reject::Malformed };
            return Err((buf, r));
        }
        let ihl = ((buf[0] & 0x0f) as usize) * 4;
        let tot = be16(&buf[..], 2) as usize;
        if ihl < 20 || tot < ihl || tot > n || n > BUF_LEN {
            return Err((buf, Reject::Malformed));
        }
        let proto = buf[9];
        let frag = be16(&buf[..], 6) & 0x1fff;
        let key = five_tuple_key(&buf[..tot], ihl, proto, frag == 0);
        let payload = match proto {
            6 if tot >= ihl + 20 => {
                let doff = ((buf[ihl + 12] >> 4) as usize) * 4;
                tot.saturating_sub(ihl + doff)
            }
            17 if tot >= ihl + 8 => tot - ihl - 8,
            _ => 0,
        };
        let ecn_in = ecn_of(buf[1]);
        Ok(EmuPacket { buf, len: tot as u16, flow, key, ts: 0, qclass: 0, ecn_in, payload: payload as u16 })
    }

    /// The IP packet bytes (what is written to the receiving TUN).
    #[inline]
    pub fn bytes(&self) -> &[u8] {
        &self.buf[..self.len as usize]
    }

    /// IP length, bytes.
    #[inline]
    pub fn ip_len(&self) -> u32 {
        self.len as u32
    }

    /// Enqueue timestamp (ns since t0).
    #[inline]
    pub fn ts(&self) -> Time {
        self.ts
    }

    /// Give the buffer back (to its pool).
    #[inline]
    pub fn into_buf(self) -> Buf {
        self.buf
    }
}

#[inline]
fn ecn_of(tos: u8) -> Ecn {
    match tos & 3 {
        0 => Ecn::NotEct,
        1 => Ecn::Ect1,
        2 => Ecn::Ect0,
        _ => Ecn::Ce,
    }
}

impl QdiscPacket for EmuPacket {
    #[inline]
    fn wire_len(&self) -> u32 {
        self.len as u32 + L2_OVERHEAD
    }
    #[inline]
    fn ecn(&self) -> Ecn {
        ecn_of(self.buf[1])
    }
    /// Write the ECN bits of the TOS byte and update the header checksum
    /// incrementally: HC' = ~(~HC + ~m + m') over the 16-bit word holding
    /// version/IHL and TOS (RFC 1624 §3, eqn. 3).
    #[inline]
    fn set_ecn(&mut self, ecn: Ecn) {
        let old_word = be16(&self.buf[..], 0);
        self.buf[1] = (self.buf[1] & !3) | ecn as u8;
        let new_word = be16(&self.buf[..], 0);
        if old_word == new_word {
            return;
        }
        let hc = be16(&self.buf[..], 10);
        let s = (!hc as u32) + (!old_word as u32) + new_word as u32;
        let c = !fold(s);
        self.buf[10..12].copy_from_slice(&c.to_be_bytes());
    }
    #[inline]
    fn dsfield(&self) -> u8 {
        self.buf[1]
    }
    #[inline]
    fn flow_key(&self) -> u32 {
        self.key
    }
    #[inline]
    fn enqueue_ts(&self) -> Time {
        self.ts
    }
    #[inline]
    fn set_enqueue_ts(&mut self, now: Time) {
        self.ts = now;
    }
    #[inline]
    fn set_qclass(&mut self, class: u8) {
        self.qclass = class;
    }
}

/// Write an IPv4/UDP datagram of `payload` zero bytes into `buf` (UDP checksum 0:
/// "no checksum", RFC 768), with ECN codepoint `ecn` and IP id `id`; returns its length.
#[allow(clippy::too_many_arguments)]
pub fn write_udp(
    buf: &mut [u8; BUF_LEN],
    src: [u8; 4],
    dst: [u8; 4],
    sport: u16,
    dport: u16,
    payload: usize,
    ecn: Ecn,
    id: u16,
) -> usize {
    let tot = 20 + 8 + payload;
    debug_assert!(tot <= BUF_LEN);
    buf[..tot].fill(0);
    buf[0] = 0x45;
    buf[1] = ecn as u8;
    buf[2..4].copy_from_slice(&(tot as u16).to_be_bytes());
    buf[4..6].copy_from_slice(&id.to_be_bytes());
    buf[6] = 0x40; // DF
    buf[8] = 64; // TTL
    buf[9] = 17;
    buf[12..16].copy_from_slice(&src);
    buf[16..20].copy_from_slice(&dst);
    let c = ipv4_header_checksum(&buf[..20]);
    buf[10..12].copy_from_slice(&c.to_be_bytes());
    buf[20..22].copy_from_slice(&sport.to_be_bytes());
    buf[22..24].copy_from_slice(&dport.to_be_bytes());
    buf[24..26].copy_from_slice(&((8 + payload) as u16).to_be_bytes());
    tot
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The worked example of RFC 1071's successors used in many texts (Wikipedia,
    /// "IPv4 header checksum"): 4500 0073 0000 4000 4011 [b861] c0a8 0001 c0a8 00c7.
    const HDR: [u8; 20] = [
        0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0xb8, 0x61, 0xc0, 0xa8, 0x00, 0x01, 0xc0, 0xa8,
        0x00, 0xc7,
    ];

    fn packet_from(hdr: &[u8; 20]) -> EmuPacket {
        let mut b: Buf = Box::new([0u8; BUF_LEN]);
        b[..20].copy_from_slice(hdr);
        b[2..4].copy_from_slice(&0x73u16.to_be_bytes());
        EmuPacket::parse(b, 0x73, 3).map_err(|(_, r)| r).unwrap()
    }

    #[test]
    fn checksum_of_the_textbook_header() {
        assert_eq!(ipv4_header_checksum(&HDR), 0xb861);
        assert!(ipv4_checksum_ok(&HDR));
    }

    #[test]
    fn set_ce_writes_the_tos_bits_and_the_hand_computed_checksum() {
        // ECT(0): TOS 0x02. By hand: words 4502+0073+0000+4000+4011+c0a8+0001+c0a8+00c7
        // = 0x2479e → fold 0x479e+2 = 0x47a0 → checksum ~0x47a0 = 0xb85f.
        let mut h = HDR;
        h[1] = 0x02;
        h[10..12].copy_from_slice(&0xb85fu16.to_be_bytes());
        assert!(ipv4_checksum_ok(&h), "hand-computed ECT(0) checksum");
        let mut p = packet_from(&h);
        assert_eq!(p.ecn(), Ecn::Ect0);
        assert_eq!(p.wire_len(), 0x73 + 14);
        assert!(p.set_ce());
        // CE: TOS 0x03, sum one more → 0x47a1 → checksum 0xb85e.
        assert_eq!(p.ecn(), Ecn::Ce);
        assert_eq!(p.bytes()[1], 0x03);
        assert_eq!(be16(p.bytes(), 10), 0xb85e);
        assert!(ipv4_checksum_ok(&p.bytes()[..20]));
        assert_eq!(p.ecn_in, Ecn::Ect0, "the arrival codepoint is kept for attribution");
    }

    #[test]
    fn not_ect_is_not_marked_and_dscp_is_kept() {
        let mut h = HDR;
        h[1] = 0xb8; // DSCP EF, Not-ECT
        let c = ipv4_header_checksum(&h);
        h[10..12].copy_from_slice(&c.to_be_bytes());
        let mut p = packet_from(&h);
        assert!(!p.set_ce());
        assert_eq!(p.bytes()[1], 0xb8);
        p.set_ecn(Ecn::Ect1);
        assert_eq!(p.bytes()[1], 0xb9);
        assert_eq!(p.dsfield(), 0xb9);
        assert!(ipv4_checksum_ok(&p.bytes()[..20]));
    }

    #[test]
    fn every_codepoint_transition_keeps_the_checksum_valid() {
        let all = [Ecn::NotEct, Ecn::Ect1, Ecn::Ect0, Ecn::Ce];
        for a in all {
            for b in all {
                let mut h = HDR;
                h[1] = 0x10 | a as u8;
                let c = ipv4_header_checksum(&h);
                h[10..12].copy_from_slice(&c.to_be_bytes());
                let mut p = packet_from(&h);
                p.set_ecn(b);
                assert_eq!(p.ecn(), b);
                assert!(ipv4_checksum_ok(&p.bytes()[..20]), "{a:?} -> {b:?}");
                assert_eq!(ipv4_header_checksum(&p.bytes()[..20]), be16(p.bytes(), 10));
            }
        }
    }

    #[test]
    fn parse_rejects_what_is_not_an_ipv4_packet() {
        let mut b: Buf = Box::new([0u8; BUF_LEN]);
        b[0] = 0x60;
        assert_eq!(EmuPacket::parse(b, 40, 0).err().map(|e| e.1), Some(Reject::NotIpv4));
        let mut b: Buf = Box::new([0u8; BUF_LEN]);
        b[..20].copy_from_slice(&HDR);
        // tot_len 0x73 but only 40 bytes read.
        assert_eq!(EmuPacket::parse(b, 40, 0).err().map(|e| e.1), Some(Reject::Malformed));
    }

    #[test]
    fn flow_key_follows_the_five_tuple_and_payload_is_counted() {
        let mut b: Buf = Box::new([0u8; BUF_LEN]);
        let n = write_udp(&mut b, [10, 250, 0, 1], [10, 251, 0, 1], 4000, 5201, 1472, Ecn::Ect1, 7);
        assert_eq!(n, 1500);
        assert!(ipv4_checksum_ok(&b[..20]));
        let p = EmuPacket::parse(b, n, 0).map_err(|e| e.1).unwrap();
        assert_eq!((p.payload, p.wire_len(), p.ecn()), (1472, 1514, Ecn::Ect1));
        let mut b2: Buf = Box::new([0u8; BUF_LEN]);
        write_udp(&mut b2, [10, 250, 0, 1], [10, 251, 0, 1], 4001, 5201, 100, Ecn::Ect1, 8);
        let q = EmuPacket::parse(b2, 128, 0).map_err(|e| e.1).unwrap();
        assert_ne!(p.flow_key(), q.flow_key(), "another source port is another flow");
        let mut b3: Buf = Box::new([0u8; BUF_LEN]);
        write_udp(&mut b3, [10, 250, 0, 1], [10, 251, 0, 1], 4000, 5201, 10, Ecn::NotEct, 9);
        let r = EmuPacket::parse(b3, 38, 0).map_err(|e| e.1).unwrap();
        assert_eq!(p.flow_key(), r.flow_key(), "same 5-tuple, same key");
    }

    #[test]
    fn pool_hands_out_each_buffer_once() {
        let mut pool = Pool::new(3);
        let a = pool.take().unwrap();
        let b = pool.take().unwrap();
        let c = pool.take().unwrap();
        assert!(pool.take().is_none());
        pool.put(a);
        pool.put(b);
        pool.put(c);
        assert_eq!(pool.available(), 3);
    }
}
