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
//! * TCP sequence space as on the wire (RFC 9293 §3.4): each side's initial sequence
//!   number is 0 (Linux draws it from `secure_tcp_seq`; 0 keeps Wireshark's relative and
//!   absolute numbers equal) and the SYN consumes one number, so the first data byte is
//!   sequence 1 and the engine's byte offsets are shifted by one, modulo 2^32; the
//!   receiver's ACKs carry sequence 1 and every segment after the SYN the ACK flag;
//! * the flags (ACK, ECE, CWR, and for AccECN the ACE field in AE/CWR/ECE: RFC 9768
//!   §3.2.1), the timestamp option (`NOP NOP TS`, RFC 7323 §3, as Linux aligns it), SACK
//!   blocks (`NOP NOP SACK`, RFC 2018 §3) and the AccECN option (kind 174, order E1B CEB
//!   E0B, RFC 9768 §3.2.3, as the packet stores it), padded with NOPs to a multiple of 4
//!   bytes; the SYN and SYN/ACK carry Linux's `MSS, SACK_PERM+TS, NOP WS` (20 bytes,
//!   `tcp_output.c:tcp_options_write` for `tcp_syn_options`);
//! * TSval: the engine's millisecond clock plus a fixed offset per host ([`ts_offset`],
//!   as Linux's `secure_tcp_ts_off`); TSecr as Linux sets it: a SYN echoes 0, the
//!   receiver's segments echo its `ts_recent` (the engine's), and the sender's data echo
//!   the TSval of the newest ACK it had taken when it sent the segment (`ts_recent`,
//!   RFC 7323 §4.3, `tcp_input.c:tcp_replace_ts_recent`). The capture tracks it per
//!   flow, from the ACKs delivered to the sender, and for a segment captured after its
//!   sender (bottleneck, receiver) from the value noted when it left the sender;
//! * the advertised window: the window field of the receiver's ACK (its autotuned
//!   window, `tcp/rcvbuf.rs`) with the window scale of its kernel's `tcp_rmem[2]`; for a
//!   flow with a fixed window (`rwnd_bytes`), that window with the smallest scale that
//!   holds it, 7 at least (Linux's `tcp_select_initial_window` for the default `tcp_rmem`);
//! * headers only: the payload is not stored (a snap length, as `tcpdump -s`), but the
//!   original length and the IP total length are the packet's, and the TCP/UDP
//!   checksum is that of the packet with an all-zero payload (correct for the bytes a
//!   reader could reconstruct);
//! * per-packet comments (`opt_comment`) with what only a simulator knows: the
//!   bottleneck sojourn and sub-queue (e.g. `sojourn_us=412.0 queue=L`), the flow, and
//!   whether the segment is a retransmission.

use crate::config::{CaptureConfig, CapturePoint, FlowConfig};
use crate::event::EndpointId;
use crate::event::LinkId;
use crate::packet::{AccEcnOption, Packet, PacketKind, SackBlock, SackSet, SackTable, TCP_FLAG_AE};
use crate::qdisc::Ecn;
use crate::results::{CaptureResult, OutputFile, RunResults};
use crate::tcp::ecn::{ACCECN_CEB_INIT, ACCECN_E0B_INIT, ACCECN_E1B_INIT};
use crate::time::Time;
use crate::trace::{NetworkView, Observer};

use etherparse::{EtherType, Ethernet2Header, IpEcn, IpNumber, Ipv4Header, TcpHeader, UdpHeader};
use pcap_file::pcapng::blocks::enhanced_packet::{EnhancedPacketBlock, EnhancedPacketOption};
use pcap_file::pcapng::blocks::interface_description::{InterfaceDescriptionBlock, InterfaceDescriptionOption};
use pcap_file::pcapng::PcapNgWriter;
use pcap_file::DataLink;
use std::borrow::Cow;
use std::collections::VecDeque;
use std::time::Duration;

/// The server (receiver) port: iperf3's default.
pub const SERVER_PORT: u16 = 5201;
/// First client port: the start of Linux's default `ip_local_port_range`.
pub const CLIENT_PORT_BASE: u16 = 32768;
/// Bytes kept of each frame: Ethernet + IPv4 + the largest TCP header.
const SNAPLEN: u32 = 14 + 20 + 60;
/// TCP option kinds (IANA; AccECN: RFC 9768 §3.2.3).
const TCPOPT_NOP: u8 = 1;
const TCPOPT_MSS: u8 = 2;
const TCPOPT_WINDOW: u8 = 3;
const TCPOPT_SACK_PERM: u8 = 4;
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
    /// The TSecr the segment carries (the echoed TSval, without the timestamp offset).
    tsecr: u32,
}

/// A host's timestamp offset for flow slot `flow` (`from_receiver`: the receiver's). Linux
/// adds a random offset per host pair to its TSval clock (`secure_tcp_ts_off`, since
/// 4.11); the capture adds a fixed one per flow and side (splitmix64 of both), so a TSval
/// or TSecr is never 0 however early the flow starts.
fn ts_offset(flow: u32, from_receiver: bool) -> u32 {
    let mut x = ((flow as u64) << 1 | from_receiver as u64).wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    (x ^ (x >> 31)) as u32
}

/// What a flow's hosts put in headers the engine does not model, per flow slot.
#[derive(Clone, Copy, Debug)]
struct HostHeaders {
    /// The MSS option: `mss_cache` + the aligned timestamp option (Linux's `tcp_advmss`).
    mss_option: u16,
    /// Window scale (RFC 7323 §2.2) and the scaled window field of the receiver's segments.
    wscale: u8,
    window: u16,
}

impl HostHeaders {
    fn of(flow: Option<&FlowConfig>) -> Self {
        let (mss, rwnd) = match flow {
            Some(FlowConfig::Tcp(t)) => (t.mss, t.rwnd_bytes),
            _ => (crate::config::default_mss(), None),
        };
        let autotuned = match flow {
            Some(FlowConfig::Tcp(t)) if t.rwnd_bytes.is_none() => {
                Some(crate::tcp::rcvbuf::rcv_wscale(crate::tcp::rcvbuf::tcp_rmem_max(t.receiver_rcvbuf)) as u8)
            }
            _ => None,
        };
        let rwnd = rwnd.unwrap_or(65_535 << 14).min(65_535 << 14);
        let wscale = autotuned.unwrap_or_else(|| (7..=14).find(|&w| rwnd >> w <= 65_535).unwrap_or(14));
        HostHeaders {
            mss_option: (mss + crate::packet::TCPOLEN_TSTAMP_ALIGNED).min(65_535) as u16,
            wscale,
            window: (rwnd >> wscale).max(1) as u16,
        }
    }
}

/// A data segment that left its sender, with the TSecr it carried.
#[derive(Clone, Copy, Debug)]
struct Sent {
    seq: u64,
    tsval: u32,
    retrans: bool,
    tsecr: u32,
}

/// The sender side of one flow slot as the capture tracks it.
#[derive(Clone, Debug, Default)]
struct SenderEcho {
    /// `ts_recent`: TSval of the newest ACK (or SYN/ACK) delivered to the sender.
    ts_recent: u32,
    /// Segments that left the sender and have not yet passed the capture point (only
    /// for a point after the sender), oldest first.
    in_flight: VecDeque<Sent>,
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
    /// Per flow slot: its hosts' header fields, and the sender's echoed timestamp.
    hosts: Vec<HostHeaders>,
    echo: Vec<SenderEcho>,
}

impl PacketCapture {
    /// A capture of `cfg` whose `bottleneck` point is `link` (sub-queues named `classes`);
    /// `flows` are the run's configured flows (slots beyond them are opened by sources).
    pub fn new(cfg: &CaptureConfig, link: LinkId, classes: Vec<&'static str>, flows: &[FlowConfig]) -> Self {
        PacketCapture {
            hosts: flows.iter().map(|f| HostHeaders::of(Some(f))).collect(),
            echo: vec![SenderEcho::default(); flows.len()],
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

    /// The sender's state of flow slot `flow` (slots opened by sources grow the table:
    /// once per slot, not per packet).
    fn echo_mut(&mut self, flow: u32) -> &mut SenderEcho {
        let i = flow as usize;
        if i >= self.echo.len() {
            self.echo.resize(i + 1, SenderEcho::default());
        }
        &mut self.echo[i]
    }

    fn host(&self, flow: u32) -> HostHeaders {
        self.hosts.get(flow as usize).copied().unwrap_or_else(|| HostHeaders::of(None))
    }

    /// Whether data segments are captured after they left their sender (so their TSecr
    /// must be noted at the sender).
    fn after_sender(&self) -> bool {
        self.cfg.point != CapturePoint::Sender
    }

    /// The TSecr `pkt` carries on the wire, at the capture point.
    fn tsecr_of(&mut self, pkt: &Packet) -> u32 {
        match pkt.kind {
            PacketKind::Data if self.after_sender() => {
                let e = self.echo_mut(pkt.flow);
                // The segment's entry; entries before it are segments lost before the point.
                let found = e
                    .in_flight
                    .iter()
                    .position(|s| s.seq == pkt.tcp.seq && s.tsval == pkt.tcp.tsval && s.retrans == pkt.retrans);
                match found {
                    Some(k) => {
                        let tsecr = e.in_flight[k].tsecr;
                        e.in_flight.drain(..=k);
                        tsecr
                    }
                    None => e.ts_recent,
                }
            }
            PacketKind::Data => self.echo_mut(pkt.flow).ts_recent,
            // The receiver's segments echo its own ts_recent (the engine's); a SYN echoes 0.
            _ => pkt.tcp.tsecr,
        }
    }

    #[inline]
    fn keep(&mut self, now: Time, pkt: &Packet, sacks: &SackTable, sojourn_ns: Option<u64>) {
        let tsecr = self.tsecr_of(pkt);
        if (self.records.len() as u64) < self.cfg.max_packets {
            if self.records.len() == self.records.capacity() {
                self.grow();
            }
            self.records.push(Captured { t: now, pkt: *pkt, sack: sacks.get(pkt.tcp.sack), sojourn_ns, tsecr });
        } else {
            self.missed += 1;
        }
    }

    /// Double the room for records (up to `max_packets`), an allocation that may fail:
    /// its failure ends the run with one line (`guard::out_of_memory`).
    #[cold]
    #[inline(never)]
    fn grow(&mut self) {
        let len = self.records.len();
        let more = (len.max(1 << 14) as u64).min(self.cfg.max_packets - len as u64) as usize;
        if let Err(e) = crate::guard::try_grow(&mut self.records, more, "the packet capture (capture.max_packets)") {
            crate::guard::out_of_memory(&e)
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
        let buffer = crate::guard::try_vec(self.records.len() * 160 + 256, "the pcapng file (capture.max_packets)")?;
        let mut w = PcapNgWriter::new(buffer).map_err(err)?;
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
            let host = self.host(c.pkt.flow);
            let original_len = build_frame(&c.pkt, &c.sack, c.tsecr, &host, i as u16, &zeros, &mut frame)?;
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

/// The capture is an observer like any other: it keeps the packets passing its point (with
/// their SACK options from the run's side table) and writes `capture.pcapng` at the end.
impl Observer for PacketCapture {
    /// `pkt` left `link`'s queue after `sojourn_ns` in it.
    #[inline]
    fn on_dequeue(&mut self, now: Time, link: LinkId, pkt: &Packet, sojourn_ns: u64, sacks: &SackTable) {
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
    fn on_deliver(&mut self, now: Time, to: EndpointId, pkt: &Packet, sacks: &SackTable) {
        if to == EndpointId::sender(pkt.flow) && matches!(pkt.kind, PacketKind::Ack | PacketKind::SynAck) {
            // RFC 7323 §4.3 (tcp_replace_ts_recent): the receiver's segments never advance
            // past the sender's ACK point, so the newest TSval (serial order) is echoed.
            let e = self.echo_mut(pkt.flow);
            if pkt.kind == PacketKind::SynAck || (pkt.tcp.tsval.wrapping_sub(e.ts_recent) as i32) > 0 {
                e.ts_recent = pkt.tcp.tsval;
            }
        }
        if self.at_endpoint(to) && self.in_window(now) {
            self.keep(now, pkt, sacks, None);
        }
    }

    /// `pkt` leaves endpoint `from`.
    #[inline]
    fn on_emit(&mut self, now: Time, from: EndpointId, pkt: &Packet, sacks: &SackTable) {
        if pkt.kind == PacketKind::Data
            && self.after_sender()
            && from == EndpointId::sender(pkt.flow)
            && self.wants_flow(pkt.flow)
            && self.cfg.stop_ns.is_none_or(|s| now < s)
        {
            let e = self.echo_mut(pkt.flow);
            let tsecr = e.ts_recent;
            e.in_flight.push_back(Sent { seq: pkt.tcp.seq, tsval: pkt.tcp.tsval, retrans: pkt.retrans, tsecr });
        }
        if self.at_endpoint(from) && self.in_window(now) {
            self.keep(now, pkt, sacks, None);
        }
    }

    /// A new flow opened in slot `flow`: its sender has no timestamp to echo yet.
    fn on_flow_open(&mut self, flow: u32) {
        let e = self.echo_mut(flow);
        e.ts_recent = 0;
        e.in_flight.clear();
    }

    fn finish(&self, _view: &dyn NetworkView, r: &mut RunResults) {
        r.capture = Some(CaptureResult { packets: self.len() as u64, missed: self.missed() });
        r.files.push(OutputFile { name: "capture.pcapng", bytes: self.to_pcapng() });
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
    matches!(pkt.kind, PacketKind::Ack | PacketKind::SynAck | PacketKind::UdpAck)
}

/// Write `pkt` as an Ethernet frame into `out` (headers, then the payload's zeros up to
/// the snap length); returns the frame's original length on the wire. `tsecr` is the
/// echoed timestamp it carries, `host` its hosts' header fields.
fn build_frame(
    pkt: &Packet,
    sack: &SackSet,
    tsecr: u32,
    host: &HostHeaders,
    ip_id: u16,
    zeros: &[u8],
    out: &mut Vec<u8>,
) -> Result<u32, String> {
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
    if matches!(pkt.kind, PacketKind::Udp | PacketKind::UdpAck) {
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
        let (seq, ack) = wire_seq_ack(pkt);
        let syn = matches!(pkt.kind, PacketKind::Syn | PacketKind::SynAck);
        // RFC 7323 §2.2: the window field of a SYN is never scaled.
        let window = if t.window != 0 {
            t.window
        } else if syn {
            65_535
        } else {
            host.window
        };
        let mut tcp = TcpHeader::new(sport, dport, seq, window);
        tcp.acknowledgment_number = ack;
        tcp.ack = pkt.kind != PacketKind::Syn;
        tcp.syn = syn;
        tcp.psh = t.psh();
        // AccECN's ACE field uses the AE (ex-NS), CWR and ECE bits (RFC 9768 §3.2.1); a
        // data segment of an AccECN sender carries it too, so it is written whenever set.
        tcp.ns = t.ace & TCP_FLAG_AE != 0;
        tcp.cwr = t.cwr();
        tcp.ece = t.ece();
        // Each host's TSval clock with its offset; a SYN echoes nothing (TSecr 0, RFC 7323 §4.1).
        let tsval = t.tsval.wrapping_add(ts_offset(pkt.flow, back));
        let tsecr = if pkt.kind == PacketKind::Syn { 0 } else { tsecr.wrapping_add(ts_offset(pkt.flow, !back)) };
        let mut opts = [0u8; 40];
        let n = if syn {
            syn_options(tsval, tsecr, host, &mut opts)
        } else if pkt.kind == PacketKind::Data && t.accecn.get().is_none() && data_carries_accecn(pkt, sack) {
            // An AccECN sender's data segments carry the option (`tcp_ecn_option` 2, the
            // sender's `data_option_len`, already in the packet's wire length). Its counters
            // are the sender's own receive counters, which no payload has moved on a
            // one-way flow: their initial values (RFC 9768 §3.2.3; `tcp/ecn.rs`).
            let mut with_option = *t;
            with_option.accecn.set(Some(AccEcnOption {
                fields: 3,
                e1b: ACCECN_E1B_INIT,
                ceb: ACCECN_CEB_INIT,
                e0b: ACCECN_E0B_INIT,
            }));
            tcp_options(tsval, tsecr, &with_option, sack, &mut opts)
        } else {
            tcp_options(tsval, tsecr, t, sack, &mut opts)
        };
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

/// Whether a data segment's modelled wire length holds the AccECN option beside its
/// headers and payload (an AccECN sender's `data_option_len`, `tcp/input.rs`).
fn data_carries_accecn(pkt: &Packet, sack: &SackSet) -> bool {
    let plain = crate::packet::tcp_wire_len(pkt.payload, sack.num);
    pkt.wire_len == plain + crate::tcp::ecn::accecn_option_len(3)
}

/// The engine's byte offsets as wire sequence numbers (modulo 2^32): with both initial
/// sequence numbers 0, a SYN and SYN/ACK carry sequence 0, and the SYN consumes one
/// number on each side (RFC 9293 §3.4), so data byte `k` is sequence `k + 1`, the
/// receiver's segments carry sequence 1 and the sender's acknowledge the SYN/ACK (1).
fn wire_seq_ack(pkt: &Packet) -> (u32, u32) {
    let wire = |offset: u64| (offset.wrapping_add(1)) as u32;
    match pkt.kind {
        PacketKind::Syn => (0, 0),
        PacketKind::SynAck => (0, 1),
        PacketKind::Data => (wire(pkt.tcp.seq), 1),
        PacketKind::Ack => (1, wire(pkt.tcp.ack)),
        PacketKind::Udp | PacketKind::UdpAck => (0, 0),
    }
}

/// A SYN's or SYN/ACK's options as Linux writes them (`tcp_options_write` for
/// `tcp_syn_options` / `tcp_synack_options` with timestamps, SACK and window scaling
/// on): MSS (4), SACK_PERM + TS (2 + 10, the SACK_PERM in the timestamp's alignment
/// NOPs), NOP + WS (1 + 3): 20 bytes. Returns the length.
fn syn_options(tsval: u32, tsecr: u32, host: &HostHeaders, out: &mut [u8; 40]) -> usize {
    let mut n = 0;
    let mut put = |b: u8| {
        out[n] = b;
        n += 1;
    };
    put(TCPOPT_MSS);
    put(4);
    host.mss_option.to_be_bytes().into_iter().for_each(&mut put);
    put(TCPOPT_SACK_PERM);
    put(2);
    put(TCPOPT_TIMESTAMP);
    put(10);
    tsval.to_be_bytes().into_iter().for_each(&mut put);
    tsecr.to_be_bytes().into_iter().for_each(&mut put);
    put(TCPOPT_NOP);
    put(TCPOPT_WINDOW);
    put(3);
    put(host.wscale);
    n
}

/// The TCP options of `t` as Linux lays them out (`tcp_options_write`): timestamps,
/// then SACK blocks (in wire sequence numbers), then AccECN, each aligned with leading
/// NOPs. Returns the length.
fn tcp_options(tsval: u32, tsecr: u32, t: &crate::packet::TcpHeader, sack: &SackSet, out: &mut [u8; 40]) -> usize {
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
    tsval.to_be_bytes().into_iter().for_each(&mut put);
    tsecr.to_be_bytes().into_iter().for_each(&mut put);
    let blocks = sack.num as usize;
    if blocks > 0 {
        // RFC 2018 §3 (a D-SACK block first, RFC 2883 §4).
        put(TCPOPT_NOP);
        put(TCPOPT_NOP);
        put(TCPOPT_SACK);
        put(2 + 8 * blocks as u8);
        for b in sack.blocks() {
            let SackBlock { start, end } = *b;
            (start.wrapping_add(1) as u32).to_be_bytes().into_iter().for_each(&mut put);
            (end.wrapping_add(1) as u32).to_be_bytes().into_iter().for_each(&mut put);
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
    fn an_accecn_senders_data_segment_carries_the_option_its_wire_length_holds() {
        // tcp/input.rs: an AccECN sender with tcp_ecn_option 2 gives 12 B of each data
        // segment to the option (mss 1448 -> 1436 payload), so the frame is 1514 B.
        let zeros = vec![0u8; 65_536];
        let mut p = data(0, 0, 1436);
        p.wire_len = tcp_wire_len(1436, 0) + crate::tcp::ecn::accecn_option_len(3);
        let mut f = Vec::new();
        let len = build_frame(&p, &SackSet::default(), 7, &HostHeaders::of(None), 0, &zeros, &mut f).unwrap();
        assert_eq!(len, 1514);
        assert_eq!(len, p.wire_len);
        let tcp = TcpHeader::from_slice(&f[34..]).unwrap().0;
        let opts = tcp.options.as_slice();
        let at = opts.iter().position(|&b| b == TCPOPT_ACCECN1).expect("the AccECN option");
        assert_eq!(opts[at + 1], 11, "three 24-bit counters");
        assert_eq!(&opts[at + 2..at + 11], &[0, 0, 1, 0, 0, 0, 0, 0, 1], "E1B 1, CEB 0, E0B 1: no payload received");
        // A sender without the option fills the 12 B with payload (1448 B): 1514 B, no option.
        let plain = data(0, 0, 1448);
        let mut g = Vec::new();
        assert_eq!(
            build_frame(&plain, &SackSet::default(), 7, &HostHeaders::of(None), 0, &zeros, &mut g).unwrap(),
            1514
        );
        let tcp = TcpHeader::from_slice(&g[34..]).unwrap().0;
        assert!(!tcp.options.as_slice().contains(&TCPOPT_ACCECN1));
    }

    #[test]
    fn frame_length_matches_the_modelled_wire_length() {
        let zeros = vec![0u8; 65_536];
        let mut f = Vec::new();
        let p = data(3, 1448, 1448);
        let len = build_frame(&p, &SackSet::default(), 7, &HostHeaders::of(None), 0, &zeros, &mut f).unwrap();
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
        let len = build_frame(&a, &sack, 7, &HostHeaders::of(None), 0, &zeros, &mut f).unwrap();
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
