//! Packet capture: what `tcpdump -i IFACE -w FILE.pcapng` would have written at one
//! point of the network, for Wireshark and tshark.
//!
//! The observer keeps a copy of each packet that passes its point in a time window
//! (at most `max_packets`; the buffer grows by doubling, never per packet); at the end of
//! the run [`PacketCapture::to_pcapng`] turns them into pcapng (the IETF
//! draft-ietf-opsawg-pcapng format, via the `pcap-file` crate) with real Ethernet,
//! IPv4 and TCP/UDP headers built by `etherparse`:
//!
//! * addresses and ports synthesised per flow: sender `10.1.x.y`, receiver
//!   `10.2.x.y` (x.y = the flow number), client port `32768 + flow` (Linux's
//!   `ip_local_port_range` starts at 32768), server port 5201 (iperf3's);
//! * the IP ECN field as the packet carried it at that point (a CE mark applied by the
//!   bottleneck is in the egress capture, not in the ingress one);
//! * TCP: sequence and acknowledgement numbers modulo 2^32, the flags (ACK, ECE, CWR,
//!   and for AccECN the ACE field in AE/CWR/ECE: RFC 9768 §3.2.1), the timestamp option
//!   (`NOP NOP TS`, RFC 7323 §3, as Linux aligns it), SACK blocks (`NOP NOP SACK`,
//!   RFC 2018 §3) and the AccECN option (kind 174, order E1B CEB E0B, RFC 9768 §3.2.3,
//!   as the packet stores it), padded with NOPs to a multiple of 4 bytes;
//! * headers only: the payload is not stored (a snap length, as `tcpdump -s`), but the
//!   original length and the IP total length are the packet's, and the TCP/UDP
//!   checksum is that of the packet with an all-zero payload (correct for the bytes a
//!   reader could reconstruct);
//! * per-packet comments (`opt_comment`) with what only a simulator knows: the
//!   bottleneck sojourn and sub-queue (e.g. `sojourn_us=412.0 queue=L`), the flow, and
//!   whether the segment is a retransmission.

use crate::config::{CaptureConfig, CapturePoint};
use crate::event::EndpointId;
use crate::event::LinkId;
use crate::packet::{Packet, PacketKind, SackBlock, SackSet, SackTable};
use crate::qdisc::Ecn;
use crate::time::Time;

use etherparse::{EtherType, Ethernet2Header, IpEcn, IpNumber, Ipv4Header, TcpHeader, UdpHeader};
use pcap_file::pcapng::blocks::enhanced_packet::{EnhancedPacketBlock, EnhancedPacketOption};
use pcap_file::pcapng::blocks::interface_description::{InterfaceDescriptionBlock, InterfaceDescriptionOption};
use pcap_file::pcapng::PcapNgWriter;
use pcap_file::DataLink;
use std::borrow::Cow;
use std::time::Duration;

/// The server (receiver) port: iperf3's default.
pub const SERVER_PORT: u16 = 5201;
/// First client port: the start of Linux's default `ip_local_port_range`.
pub const CLIENT_PORT_BASE: u16 = 32768;
/// Bytes kept of each frame: Ethernet + IPv4 + the largest TCP header.
const SNAPLEN: u32 = 14 + 20 + 60;
/// TCP option kinds (IANA; AccECN: RFC 9768 §3.2.3).
const TCPOPT_NOP: u8 = 1;
const TCPOPT_SACK: u8 = 5;
const TCPOPT_TIMESTAMP: u8 = 8;
const TCPOPT_ACCECN1: u8 = 174;

/// One captured packet.
#[derive(Clone, Copy, Debug)]
struct Captured {
    t: Time,
    pkt: Packet,
    /// Its SACK option, copied from the run's side table (the entry is reused
    /// once the ACK leaves the network).
    sack: SackSet,
    /// Bottleneck sojourn (egress point only).
    sojourn_ns: Option<u64>,
}

/// The capture observer of a run.
pub struct PacketCapture {
    cfg: CaptureConfig,
    link: LinkId,
    /// The sub-queue names of the bottleneck qdisc (DualPI2: C, L).
    classes: Vec<&'static str>,
    records: Vec<Captured>,
    /// Packets that passed the point in the window but exceeded `max_packets`.
    missed: u64,
}

impl PacketCapture {
    /// A capture of `cfg` whose `bottleneck` point is `link` (sub-queues named `classes`).
    pub fn new(cfg: &CaptureConfig, link: LinkId, classes: Vec<&'static str>) -> Self {
        PacketCapture {
            cfg: cfg.clone(),
            link,
            classes,
            // Grows by doubling past this (amortised, not per packet); a short capture does not
            // reserve for `max_packets` (1 M by default, ≈ 150 MB).
            records: Vec::with_capacity(cfg.max_packets.min(1 << 14) as usize),
            missed: 0,
        }
    }

    #[inline]
    fn in_window(&self, now: Time) -> bool {
        now >= self.cfg.start_ns && self.cfg.stop_ns.is_none_or(|s| now < s)
    }

    #[inline]
    fn wants_flow(&self, flow: u32) -> bool {
        self.cfg.flow.is_none_or(|f| f == flow)
    }

    #[inline]
    fn keep(&mut self, now: Time, pkt: &Packet, sacks: &SackTable, sojourn_ns: Option<u64>) {
        if (self.records.len() as u64) < self.cfg.max_packets {
            self.records.push(Captured { t: now, pkt: *pkt, sack: sacks.get(pkt.tcp.sack), sojourn_ns });
        } else {
            self.missed += 1;
        }
    }

    /// Packets captured.
    pub fn len(&self) -> usize {
        self.records.len()
    }

    /// Whether nothing was captured.
    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    /// Packets that passed in the window after `max_packets` were kept.
    pub fn missed(&self) -> u64 {
        self.missed
    }

    /// The capture as a pcapng file.
    pub fn to_pcapng(&self) -> Result<Vec<u8>, String> {
        let err = |e: pcap_file::PcapError| format!("capture: writing pcapng: {e}");
        let mut w = PcapNgWriter::new(Vec::with_capacity(self.records.len() * 160 + 256)).map_err(err)?;
        let name = match self.cfg.point {
            CapturePoint::Bottleneck => "bottleneck-egress".to_string(),
            CapturePoint::Sender => format!("sender-{}", self.cfg.flow.unwrap_or(0)),
            CapturePoint::Receiver => format!("receiver-{}", self.cfg.flow.unwrap_or(0)),
        };
        w.write_pcapng_block(InterfaceDescriptionBlock {
            linktype: DataLink::ETHERNET,
            snaplen: SNAPLEN,
            options: vec![
                InterfaceDescriptionOption::IfName(Cow::Owned(name)),
                // Timestamps in nanoseconds (pcap-file writes `Duration::as_nanos`).
                InterfaceDescriptionOption::IfTsResol(9),
            ],
        })
        .map_err(err)?;
        let zeros = vec![0u8; 65_536];
        let mut frame = Vec::with_capacity(128);
        let mut comment = String::with_capacity(64);
        for (i, c) in self.records.iter().enumerate() {
            frame.clear();
            let original_len = build_frame(&c.pkt, &c.sack, i as u16, &zeros, &mut frame)?;
            comment.clear();
            self.describe(c, &mut comment);
            let caplen = frame.len().min(SNAPLEN as usize);
            w.write_pcapng_block(EnhancedPacketBlock {
                interface_id: 0,
                timestamp: Duration::from_nanos(c.t),
                original_len,
                data: Cow::Borrowed(&frame[..caplen]),
                options: vec![EnhancedPacketOption::Comment(Cow::Borrowed(&comment))],
            })
            .map_err(err)?;
        }
        Ok(w.into_inner())
    }

    fn describe(&self, c: &Captured, out: &mut String) {
        use std::fmt::Write;
        let _ = write!(out, "flow={}", c.pkt.flow);
        if let Some(s) = c.sojourn_ns {
            let q = self.classes.get(c.pkt.qclass as usize).copied().unwrap_or("0");
            let _ = write!(out, " sojourn_us={:.1} queue={q}", s as f64 / 1000.0);
        }
        if c.pkt.retrans {
            out.push_str(" retransmission");
        }
    }
}

/// The capture observes like a [`crate::trace::Observer`], with the run's SACK side
/// table beside each packet (it writes the option's blocks).
impl PacketCapture {
    /// `pkt` left `link`'s queue after `sojourn_ns` in it.
    #[inline]
    pub fn on_dequeue(&mut self, now: Time, link: LinkId, pkt: &Packet, sojourn_ns: u64, sacks: &SackTable) {
        if self.cfg.point == CapturePoint::Bottleneck
            && link == self.link
            && self.in_window(now)
            && self.wants_flow(pkt.flow)
        {
            self.keep(now, pkt, sacks, Some(sojourn_ns));
        }
    }

    /// `pkt` reached endpoint `to`.
    #[inline]
    pub fn on_deliver(&mut self, now: Time, to: EndpointId, pkt: &Packet, sacks: &SackTable) {
        if self.at_endpoint(to) && self.in_window(now) {
            self.keep(now, pkt, sacks, None);
        }
    }

    /// `pkt` leaves endpoint `from`.
    #[inline]
    pub fn on_emit(&mut self, now: Time, from: EndpointId, pkt: &Packet, sacks: &SackTable) {
        if self.at_endpoint(from) && self.in_window(now) {
            self.keep(now, pkt, sacks, None);
        }
    }
}

impl PacketCapture {
    /// Whether endpoint `e` is the host this capture listens on.
    #[inline]
    fn at_endpoint(&self, e: EndpointId) -> bool {
        let flow = e.flow();
        let side = match self.cfg.point {
            CapturePoint::Bottleneck => return false,
            CapturePoint::Sender => EndpointId::sender(flow),
            CapturePoint::Receiver => EndpointId::receiver(flow),
        };
        e == side && self.wants_flow(flow)
    }
}

/// The sender and receiver hosts' addresses for `flow`.
pub fn flow_addresses(flow: u32) -> ([u8; 4], [u8; 4]) {
    let (x, y) = (((flow >> 8) & 0xff) as u8, (flow & 0xff) as u8);
    ([10, 1, x, y], [10, 2, x, y])
}

/// A locally administered MAC for host `ip`.
fn mac(ip: [u8; 4]) -> [u8; 6] {
    [0x02, 0x00, ip[0], ip[1], ip[2], ip[3]]
}

/// Whether `pkt` travels from the flow's receiver to its sender (ACKs, SYN-ACK).
fn from_receiver(pkt: &Packet) -> bool {
    matches!(pkt.kind, PacketKind::Ack | PacketKind::SynAck)
}

/// Write `pkt` as an Ethernet frame into `out` (headers, then the payload's zeros up to
/// the snap length); returns the frame's original length on the wire.
fn build_frame(pkt: &Packet, sack: &SackSet, ip_id: u16, zeros: &[u8], out: &mut Vec<u8>) -> Result<u32, String> {
    let (snd, rcv) = flow_addresses(pkt.flow);
    let client_port = CLIENT_PORT_BASE.wrapping_add((pkt.flow % 28_232) as u16);
    let back = from_receiver(pkt);
    let (src, dst, sport, dport) =
        if back { (rcv, snd, SERVER_PORT, client_port) } else { (snd, rcv, client_port, SERVER_PORT) };
    let payload = (pkt.payload as usize).min(zeros.len());
    let ecn = match pkt.ecn {
        Ecn::NotEct => IpEcn::NotEct,
        Ecn::Ect1 => IpEcn::Ect1,
        Ecn::Ect0 => IpEcn::Ect0,
        Ecn::Ce => IpEcn::CongestionExperienced,
    };
    let eth = Ethernet2Header { source: mac(src), destination: mac(dst), ether_type: EtherType::IPV4 };
    let io = |e: std::io::Error| format!("capture: {e}");
    if pkt.kind == PacketKind::Udp {
        let udp = UdpHeader::without_ipv4_checksum(sport, dport, payload).map_err(|e| format!("capture: {e}"))?;
        let mut ip =
            Ipv4Header::new((8 + payload) as u16, 64, IpNumber::UDP, src, dst).map_err(|e| format!("capture: {e}"))?;
        ip.ecn = ecn;
        ip.identification = ip_id;
        let udp = UdpHeader { checksum: udp.calc_checksum_ipv4(&ip, &zeros[..payload]).unwrap_or(0), ..udp };
        eth.write(out).map_err(io)?;
        ip.write(out).map_err(io)?;
        udp.write(out).map_err(io)?;
    } else {
        let t = &pkt.tcp;
        let mut tcp = TcpHeader::new(sport, dport, t.seq as u32, 65_535);
        tcp.acknowledgment_number = t.ack as u32;
        tcp.ack = !matches!(pkt.kind, PacketKind::Syn);
        tcp.syn = matches!(pkt.kind, PacketKind::Syn | PacketKind::SynAck);
        tcp.psh = false;
        // AccECN's ACE field uses the AE (ex-NS), CWR and ECE bits (RFC 9768 §3.2.1); a
        // data segment of an AccECN sender carries it too, so it is written whenever set.
        if t.ace != 0 {
            tcp.ns = t.ace & 0b100 != 0;
            tcp.cwr = t.ace & 0b010 != 0;
            tcp.ece = t.ace & 0b001 != 0;
        } else {
            tcp.ece = t.ece;
            tcp.cwr = t.cwr;
        }
        let mut opts = [0u8; 40];
        let n = tcp_options(t, sack, &mut opts);
        tcp.set_options_raw(&opts[..n]).map_err(|e| format!("capture: TCP options: {e}"))?;
        let mut ip = Ipv4Header::new((tcp.header_len() + payload) as u16, 64, IpNumber::TCP, src, dst)
            .map_err(|e| format!("capture: {e}"))?;
        ip.ecn = ecn;
        ip.identification = ip_id;
        tcp.checksum = tcp.calc_checksum_ipv4(&ip, &zeros[..payload]).map_err(|e| format!("capture: {e}"))?;
        eth.write(out).map_err(io)?;
        ip.write(out).map_err(io)?;
        tcp.write(out).map_err(io)?;
    }
    let headers = out.len();
    out.extend_from_slice(&zeros[..payload.min((SNAPLEN as usize).saturating_sub(headers))]);
    Ok((headers + payload) as u32)
}

/// The TCP options of `t` as Linux lays them out (`tcp_options_write`): timestamps,
/// then SACK blocks, then AccECN, each aligned with leading NOPs. Returns the length.
fn tcp_options(t: &crate::packet::TcpHeader, sack: &SackSet, out: &mut [u8; 40]) -> usize {
    let mut n = 0;
    let mut put = |b: u8| {
        out[n] = b;
        n += 1;
    };
    // RFC 7323 §3 / Linux tcp_options_write: NOP NOP TS(10).
    put(TCPOPT_NOP);
    put(TCPOPT_NOP);
    put(TCPOPT_TIMESTAMP);
    put(10);
    t.tsval.to_be_bytes().into_iter().for_each(&mut put);
    t.tsecr.to_be_bytes().into_iter().for_each(&mut put);
    let blocks = sack.num as usize;
    if blocks > 0 {
        // RFC 2018 §3 (a D-SACK block first, RFC 2883 §4).
        put(TCPOPT_NOP);
        put(TCPOPT_NOP);
        put(TCPOPT_SACK);
        put(2 + 8 * blocks as u8);
        for b in sack.blocks() {
            let SackBlock { start, end } = *b;
            (start as u32).to_be_bytes().into_iter().for_each(&mut put);
            (end as u32).to_be_bytes().into_iter().for_each(&mut put);
        }
    }
    if let Some(o) = t.accecn.get() {
        // RFC 9768 §3.2.3: kind 174 lists E1B, CEB, E0B (24 bits each); NOP-padded to 4 bytes.
        let len = 2 + 3 * o.fields as usize;
        for _ in 0..(len.div_ceil(4) * 4 - len) {
            put(TCPOPT_NOP);
        }
        put(TCPOPT_ACCECN1);
        put(len as u8);
        for v in [o.e1b, o.ceb, o.e0b].into_iter().take(o.fields as usize) {
            v.to_be_bytes()[1..].iter().copied().for_each(&mut put);
        }
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::{tcp_wire_len, AccEcnOption};

    fn data(flow: u32, seq: u64, payload: u32) -> Packet {
        let mut p = Packet::new(flow, PacketKind::Data);
        p.payload = payload;
        p.wire_len = tcp_wire_len(payload, 0);
        p.tcp.seq = seq;
        p.ecn = Ecn::Ect1;
        p
    }

    #[test]
    fn frame_length_matches_the_modelled_wire_length() {
        let zeros = vec![0u8; 65_536];
        let mut f = Vec::new();
        let p = data(3, 1448, 1448);
        let len = build_frame(&p, &SackSet::default(), 0, &zeros, &mut f).unwrap();
        assert_eq!(len, p.wire_len, "Ethernet + IPv4 + TCP/TS + payload = the qdisc's frame length");
        assert_eq!(f.len() as u32, SNAPLEN.min(len));
        // IPv4 header: ECN bits = ECT(1), total length, a valid header checksum.
        let ip = Ipv4Header::from_slice(&f[14..]).unwrap().0;
        assert_eq!(ip.ecn, IpEcn::Ect1);
        assert_eq!(ip.total_len as u32, p.wire_len - 14);
        assert_eq!(ip.header_checksum, ip.calc_header_checksum());
        assert_eq!((ip.source, ip.destination), ([10, 1, 0, 3], [10, 2, 0, 3]));
    }

    #[test]
    fn ack_with_sack_and_accecn_option_has_the_modelled_length() {
        let zeros = vec![0u8; 65_536];
        let mut f = Vec::new();
        let mut a = Packet::new(1, PacketKind::Ack);
        a.tcp.ack = 10 * 1448;
        let mut sack = SackSet { num: 2, ..SackSet::default() };
        sack.blocks[0] = SackBlock { start: 12 * 1448, end: 13 * 1448 };
        sack.blocks[1] = SackBlock { start: 15 * 1448, end: 16 * 1448 };
        a.tcp.ace = 0b101;
        let fields = crate::tcp::ecn::accecn_fields_fitting(crate::packet::option_space_left(2)).unwrap();
        a.tcp.accecn.set(Some(AccEcnOption { fields, e1b: 0x10203, ceb: 7, e0b: 1 }));
        a.wire_len = tcp_wire_len(0, 2) + crate::tcp::ecn::accecn_option_len(fields);
        let len = build_frame(&a, &sack, 0, &zeros, &mut f).unwrap();
        assert_eq!(len, a.wire_len);
        let tcp = TcpHeader::from_slice(&f[34..]).unwrap().0;
        assert!(tcp.ns && !tcp.cwr && tcp.ece, "ACE = 0b101 in AE/CWR/ECE");
        assert_eq!((tcp.source_port, tcp.destination_port), (SERVER_PORT, CLIENT_PORT_BASE + 1));
        let opts = tcp.options.as_slice();
        let k = opts.iter().position(|&b| b == TCPOPT_ACCECN1).expect("AccECN option");
        assert_eq!(opts[k + 1] as usize, 2 + 3 * fields as usize);
        assert_eq!(&opts[k + 2..k + 5], &[0x01, 0x02, 0x03], "E1B first, 24 bits");
    }
}
