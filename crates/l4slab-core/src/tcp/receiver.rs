//! The receiving endpoint: in-order and out-of-order data, SACK/D-SACK blocks, and
//! Linux's ACK policy (Linux net/ipv4/tcp_input.c:tcp_rcv_established, __tcp_ack_snd_check): an ACK for every second full segment,
//! quick-ACKs for the first 16 segments and after gaps, immediate ACKs while data is
//! out of order (then SACK compression), and the 40 ms delayed-ACK timer with `ato`
//! adaptation, bounded by the receiver's handshake RTT (`tcp_send_delayed_ack`).
//! Segments smaller than the learned MSS (`tcp_measure_rcv_mss`) set
//! `ICSK_ACK_PUSHED`, and so, on a receiver of Linux 6.6 or later, does a full-sized
//! one with PSH (the last segment of each GSO skb, `tcp/output.rs`); the application's
//! read then ACKs at once (`tcp_cleanup_rbuf`): the application is taken to read every
//! in-order byte as soon as it arrives (iperf3 blocked in `read`). While receive-buffer autotuning
//! opens room (`tcp_grow_window`, `tcp/rcvbuf.rs`) every segment gets its own ACK.
//!
//! With GRO on ([`TcpReceiver::set_gro`], `tcp/gro.rs`) data segments wait for the
//! NIC's next NAPI poll and reach TCP merged: each segment's state (sequence space,
//! AccECN counters, SACK) is updated as before, but the ACK decision
//! (`__tcp_ack_snd_check`, `tcp_cleanup_rbuf`) and `tcp_event_data_recv` run once per
//! GRO packet, as `tcp_rcv_established` runs once per skb: one (stretch) ACK per GRO
//! packet of ≥ 2 full segments.

use super::ecn::{self, AccEcnCounters, AccEcnOption, EcnMode};
use super::gro::{self, Gro};
use super::rcvbuf::{RcvBuf, RX_TRUESIZE};
use super::*;
use crate::cc::{CaEvent, CcFlags, CcSock, CongestionControl};
use crate::packet::{
    option_space_left, tcp_wire_len, Ecn, Outbox, Packet, PacketKind, SackBlock, SackSet, ETH_HLEN, MAX_SACK_BLOCKS,
};
use crate::time::{Time, NS_PER_US};
use std::collections::VecDeque;

/// A finished receiver's out-of-order buffer, kept by a source of many short
/// connections to build the next receiver without fresh memory.
pub struct ReceiverBuffers(VecDeque<SackBlock>);

/// Out-of-order blocks a new receiver has room for before its queue grows.
const OOO_CAPACITY: usize = 64;

/// Bytes a new receiver holds, its socket's congestion control aside: the struct, its
/// out-of-order queue and, with GRO, the batch it holds (`crate::memory`).
pub fn receiver_state_bytes(gro: bool) -> usize {
    std::mem::size_of::<TcpReceiver>()
        + OOO_CAPACITY * std::mem::size_of::<SackBlock>()
        + if gro { super::gro::Gro::heap_bytes() } else { 0 }
}

/// Receiver state of one connection.
pub struct TcpReceiver {
    flow: u32,
    delayed_ack: bool,
    /// Next expected sequence number.
    rcv_nxt: u64,
    /// `rcv_wup`: rcv_nxt when the last ACK was sent.
    rcv_wup: u64,
    /// Out-of-order ranges, sorted, disjoint and not adjacent (holes fill from the
    /// front, new data extends the back: a deque makes both O(1)).
    ooo: VecDeque<SackBlock>,
    /// Bytes held in `ooo`.
    ooo_bytes: u64,
    /// Receive-buffer autotuning (`rcv_ssthresh`, DRS, the receive RTT).
    rcvbuf: RcvBuf,
    /// `tcp_init_buffer_space` ran (the handshake completed).
    established: bool,
    /// The window is the scenario's fixed `rwnd` (`SO_RCVBUF` locked): no autotuning,
    /// no window in the ACKs.
    fixed_window: bool,
    /// `tp->rcv_wnd`: the window the last ACK offered from `rcv_wup`, bytes.
    rcv_wnd: u64,
    /// The in-order skb being processed is still queued (the application reads it
    /// after the ACK decision): its truesize counts against the free space.
    unread_skb: bool,
    /// SACK blocks in most-recent-first order (`tp->selective_acks`).
    recent: [SackBlock; MAX_SACK_BLOCKS + 1],
    num_recent: usize,
    /// Pending D-SACK block for the next ACK.
    dsack: Option<SackBlock>,
    /// `icsk_ack.rcv_mss` estimate.
    rcv_mss: u32,
    /// `icsk_ack.last_seg_size`: the last small segment's MSS-equivalent length.
    last_seg_size: u32,
    /// `icsk_ack.pending & ICSK_ACK_PUSHED` / `ICSK_ACK_PUSHED2`.
    pushed: bool,
    pushed2: bool,
    /// The receiving kernel sets `ICSK_ACK_PUSHED` for a full-sized segment with PSH
    /// (Linux 6.6 on; see [`TcpReceiver::measure_rcv_mss`]).
    psh_pushes: bool,
    /// When the last SYN/ACK left (`tcp_synack_rtt_meas` measures from it).
    synack_sent: Option<Time>,
    /// `tp->srtt_us` of the receiving socket, ns: its only RTT sample is the
    /// handshake's (a pure receiver's ACKs acknowledge no data of its own).
    srtt_ns: u64,
    /// `icsk_ack.quick`: remaining quick ACKs.
    quick: u32,
    /// `icsk_ack.ato`, ns (0 until the first data segment).
    ato: u64,
    /// `icsk_ack.lrcvtime`: last data arrival.
    lrcvtime: Time,
    /// `icsk_ack.pending & ICSK_ACK_SCHED`: an ACK is owed.
    ack_scheduled: bool,
    /// `ICSK_ACK_NOW`: the next check must ACK at once.
    ack_now: bool,
    /// Delayed-ACK timer deadline (`ICSK_ACK_TIMER`).
    delack_deadline: Option<Time>,
    /// The receiver's RTO, which bounds `ato` (no RTT samples on a pure receiver: 1 s).
    rto_ns: u64,
    /// SACK compression's hrtimer as the receiving kernel arms it (`tcp/rcvbuf.rs`);
    /// off, it fires after the 10-µs slack alone (`receiver_sack_compression`).
    comp_sack_timer: bool,
    /// SACK compression (`compressed_ack`, `dup_ack_counter`, hrtimer).
    compressed_ack: u32,
    compressed_ack_rcv_nxt: u64,
    dup_ack_counter: u32,
    comp_deadline: Option<Time>,
    /// `ts_recent`: TSval to echo (RFC 7323 rule).
    ts_recent: u32,
    // --- ECN (Linux include/net/tcp_ecn.h and net/ipv4/tcp_input.c) ---
    /// This host's `tcp_ecn` sysctl and `tcp_ecn_option`.
    tcp_ecn: u8,
    ecn_option: u8,
    /// The receiving socket's congestion control, which sees the CE events
    /// (`tcp_ca_event(sk, CA_EVENT_ECN_IS_CE / ECN_NO_CE)`), and its flags.
    cc: Box<dyn CongestionControl>,
    cc_sock: CcSock,
    cc_flags: CcFlags,
    /// `tcp_ca_needs_ecn || tcp_ca_wants_ce_events` of `cc`, read once after each
    /// `init` (a [`crate::cc::RenoFallback`] changes its answer there) instead of
    /// through two calls per ECN-capable segment.
    ca_ecn_events: bool,
    /// Negotiated mode (server side).
    pub ecn_mode: EcnMode,
    /// RFC 3168 `TCP_ECN_DEMAND_CWR`: echo ECE on every ACK.
    demand_cwr: bool,
    /// RFC 3168 `TCP_ECN_SEEN`.
    ecn_seen: bool,
    /// AccECN receive counters.
    pub accecn: AccEcnCounters,
    /// The L4STeam tree's AccECN receive path (`receiver_kernel = "l4steam"`): every
    /// ECT/CE segment saturates the unreported-CE count, so each slow-path segment
    /// whose timestamp advanced is ACKed at once (see `accecn_l4steam_ack_now`).
    l4steam_accecn: bool,
    /// Data segments received CE-marked, and their payload bytes.
    pub ce_packets: u64,
    pub ce_bytes: u64,
    // --- counters ---
    /// Payload bytes delivered in order to the application.
    pub bytes_delivered: u64,
    /// ACKs sent (incl. SYN/ACKs).
    pub acks_sent: u64,
    /// Data segments received (incl. duplicates).
    pub segments_received: u64,
    // --- GRO (tcp/gro.rs) ---
    /// Receiver GRO behind NIC interrupt moderation; `None` = GRO off.
    pub gro: Option<Gro>,
    /// More segments of the current GRO packet follow this one (its ACK decision waits).
    gro_more: bool,
    /// This segment continues a GRO packet (its per-skb bookkeeping already ran).
    gro_cont: bool,
    /// `gso_size` of the current multi-segment GRO packet (0: a single segment).
    gro_gso_size: u32,
    /// Payload bytes and segments of the current GRO packet (`skb->len`, for truesize).
    gro_len: u32,
    gro_segs: u32,
    /// The current GRO packet's header carries PSH (its last segment's).
    gro_psh: bool,
}

impl TcpReceiver {
    /// A receiver; `tcp_ecn`/`ecn_option` are this host's sysctls and `cc` its
    /// socket's congestion control by Linux name, with its module defaults (Linux's
    /// default, [`crate::cc::LINUX_DEFAULT`], if unknown). A flow's receiver is built by
    /// `traffic::tcp::build` ([`with_cc`](Self::with_cc)); this is for tests.
    pub fn new(flow: u32, delayed_ack: bool, tcp_ecn: u8, ecn_option: u8, cc: &str) -> Self {
        let cc = crate::cc::by_name(cc)
            .or_else(|| crate::cc::by_name(crate::cc::LINUX_DEFAULT))
            .expect("Linux's default congestion control is registered");
        Self::with_cc(flow, delayed_ack, tcp_ecn, ecn_option, cc, None)
    }

    /// Take this receiver's buffers for a later connection (the receiver keeps an
    /// empty one and must not receive again).
    pub fn take_buffers(&mut self) -> ReceiverBuffers {
        ReceiverBuffers(std::mem::take(&mut self.ooo))
    }

    /// A receiver whose socket runs `cc`, already built (with its `receiver_cc_params`),
    /// reusing a finished receiver's out-of-order buffer if given (emptied: the results
    /// are the same), as a source of many short connections does (`traffic/web.rs`).
    pub fn with_cc(
        flow: u32,
        delayed_ack: bool,
        tcp_ecn: u8,
        ecn_option: u8,
        cc: Box<dyn crate::cc::CongestionControl>,
        bufs: Option<ReceiverBuffers>,
    ) -> Self {
        let ooo = match bufs {
            Some(ReceiverBuffers(mut q)) => {
                q.clear();
                q
            }
            None => VecDeque::with_capacity(OOO_CAPACITY),
        };
        Self::build(flow, delayed_ack, tcp_ecn, ecn_option, cc, ooo)
    }

    fn build(
        flow: u32,
        delayed_ack: bool,
        tcp_ecn: u8,
        ecn_option: u8,
        cc: Box<dyn crate::cc::CongestionControl>,
        ooo: VecDeque<SackBlock>,
    ) -> Self {
        let cc_flags = cc.flags();
        let ca_ecn_events = cc_flags.needs_ecn || cc.wants_ce_events();
        TcpReceiver {
            flow,
            delayed_ack,
            rcv_nxt: 0,
            rcv_wup: 0,
            ooo,
            ooo_bytes: 0,
            rcvbuf: RcvBuf::default(),
            established: false,
            fixed_window: false,
            rcv_wnd: 0,
            unread_skb: false,
            recent: [SackBlock::default(); MAX_SACK_BLOCKS + 1],
            num_recent: 0,
            dsack: None,
            rcv_mss: 536,
            last_seg_size: 0,
            pushed: false,
            pushed2: false,
            psh_pushes: true,
            synack_sent: None,
            srtt_ns: 0,
            quick: 0,
            ato: 0,
            lrcvtime: 0,
            ack_scheduled: false,
            ack_now: false,
            delack_deadline: None,
            rto_ns: TCP_TIMEOUT_INIT_NS,
            comp_sack_timer: false,
            compressed_ack: 0,
            compressed_ack_rcv_nxt: 0,
            dup_ack_counter: 0,
            comp_deadline: None,
            ts_recent: 0,
            tcp_ecn,
            ecn_option,
            cc,
            // The receive side reads only `ecn_mode` and `rcv`; mss and cwnd are unused.
            cc_sock: CcSock::new(536, 10),
            cc_flags,
            ca_ecn_events,
            ecn_mode: EcnMode::Off,
            demand_cwr: false,
            ecn_seen: false,
            accecn: AccEcnCounters::default(),
            l4steam_accecn: false,
            ce_packets: 0,
            ce_bytes: 0,
            bytes_delivered: 0,
            acks_sent: 0,
            segments_received: 0,
            gro: None,
            gro_more: false,
            gro_cont: false,
            gro_gso_size: 0,
            gro_len: 0,
            gro_segs: 0,
            gro_psh: false,
        }
    }

    /// SACK compression's hrtimer as the receiving kernel arms it
    /// (`receiver_sack_compression = "kernel"`); the slack alone otherwise.
    pub fn with_comp_sack_timer(mut self, on: bool) -> Self {
        self.comp_sack_timer = on;
        self
    }

    /// The receiving host runs the L4STeam kernel's AccECN receive path
    /// (`receiver_kernel = "l4steam"`); mainline's otherwise.
    pub fn with_l4steam_accecn(mut self, on: bool) -> Self {
        self.l4steam_accecn = on;
        self
    }

    /// A receiver whose window the scenario fixes (`rwnd_bytes`; an application's
    /// `SO_RCVBUF` locks the buffer, `SOCK_RCVBUF_LOCK`): no receive-buffer autotuning
    /// and no advertised window (the sender keeps the fixed one).
    pub fn with_fixed_window(mut self, fixed: bool) -> Self {
        self.fixed_window = fixed;
        self
    }

    /// Receive-buffer autotuning with the rules and `tcp_rmem[2]` of the receiving
    /// host's Linux version (`tcp/rcvbuf.rs`).
    pub fn with_rcvbuf_kernel(mut self, kernel: crate::config::RcvbufKernel) -> Self {
        self.rcvbuf = RcvBuf::new(kernel);
        self.psh_pushes = super::rcvbuf::psh_pushes(kernel);
        self
    }

    /// Turn receiver GRO on (`ethtool -K gro on`) with the NIC's RX interrupt throttle
    /// (`ethtool -C rx-usecs`, the minimum interval between interrupts), ns.
    pub fn set_gro(&mut self, rx_delay_ns: u64) {
        self.gro = Some(Gro::new(rx_delay_ns));
    }

    /// Next expected byte.
    pub fn rcv_nxt(&self) -> u64 {
        self.rcv_nxt
    }

    /// Earliest pending timer.
    pub fn next_timer(&self) -> Option<Time> {
        let t = match (self.delack_deadline, self.comp_deadline) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        match (t, self.gro.as_ref().and_then(Gro::poll_at)) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// The NAPI poll: hand the held segments to TCP as GRO packets
    /// (`napi_gro_receive` … `napi_complete_done` → `gro_flush`).
    fn gro_poll(&mut self, now: Time, out: &mut Outbox) {
        let Some(g) = self.gro.as_mut() else { return };
        let held = g.take(now);
        gro::for_each_gro_packet(&held, |start, end| {
            self.gro_gso_size = if end - start > 1 { held[start].payload } else { 0 };
            self.gro_len = held[start..end].iter().map(|p| p.payload).sum();
            self.gro_segs = (end - start) as u32;
            // The GRO packet's header takes a merged segment's PSH, and PSH closes it.
            self.gro_psh = held[end - 1].tcp.psh();
            for (k, pkt) in held[start..end].iter().enumerate() {
                self.gro_cont = k > 0;
                self.gro_more = start + k + 1 < end;
                self.on_data(pkt, now, out);
            }
            if let Some(g) = self.gro.as_mut() {
                g.count(end - start);
            }
        });
        self.gro_more = false;
        self.gro_cont = false;
        self.gro_gso_size = 0;
        self.gro_len = 0;
        self.gro_segs = 0;
        self.gro_psh = false;
        if let Some(g) = self.gro.as_mut() {
            g.give_back(held);
        }
    }

    /// Handle a packet from the sender.
    pub fn on_packet(&mut self, pkt: &Packet, now: Time, out: &mut Outbox) {
        match pkt.kind {
            PacketKind::Syn => {
                // Answer every (re)transmitted SYN with a SYN/ACK; decide ECN (Linux net/ipv4/tcp_input.c:tcp_ecn_create_request).
                self.ts_recent = pkt.tcp.tsval;
                let (mode, ace) = ecn::server_accept(pkt.tcp.ace, pkt.ecn, self.tcp_ecn, self.cc_flags);
                self.ecn_mode = mode;
                // The socket's CC starts with the negotiated mode (`tcp_init_congestion_control`).
                self.cc_sock.ecn_mode = mode;
                self.cc_sock.rcv.rcv_nxt = self.rcv_nxt;
                self.cc.init(&mut self.cc_sock);
                self.ca_ecn_events = self.cc.flags().needs_ecn || self.cc.wants_ce_events();
                let mut a = Packet::new(self.flow, PacketKind::SynAck);
                a.tcp.ace = ace;
                // The SYN/ACK is ECT only if the listener's CC needs ECN (Linux include/net/tcp_ecn.h:tcp_ecn_send_synack).
                if mode != EcnMode::Off {
                    a.ecn = ecn::syn_codepoint(self.cc_flags);
                }
                a.wire_len = SYN_WIRE_LEN;
                a.tcp.ack = 0;
                a.tcp.tsval = ts_clock(now);
                a.tcp.tsecr = self.ts_recent;
                if !self.fixed_window {
                    // The SYN/ACK's window is never scaled (RFC 7323 §2.2).
                    self.rcv_wnd = self.rcvbuf.synack_window();
                    a.tcp.window = self.rcv_wnd as u16;
                }
                self.acks_sent += 1;
                self.synack_sent = Some(now);
                out.push(a);
            }
            PacketKind::Data => match self.gro.as_mut() {
                Some(g) => {
                    if g.hold(pkt, now) {
                        self.gro_poll(now, out);
                    }
                }
                None => self.on_data(pkt, now, out),
            },
            _ => {}
        }
    }

    #[inline(always)]
    fn on_data(&mut self, pkt: &Packet, now: Time, out: &mut Outbox) {
        self.segments_received += 1;
        if let Some(sent) = self.synack_sent.take() {
            // The ACK completing the handshake arrives with the first data:
            // tcp_rcv_state_process (TCP_SYN_RECV) → tcp_synack_rtt_meas →
            // tcp_ack_update_rtt gives the socket its srtt and RTO (tcp_rtt_estimator's
            // first sample: rttvar = max(2m, tcp_rto_min); tcp_set_rto: RTO = m + rttvar).
            let m = now.saturating_sub(sent).max(NS_PER_US);
            self.srtt_ns = m;
            self.rto_ns = m + (2 * m).max(TCP_RTO_MIN_NS);
        }
        if !self.established {
            // `tcp_init_transfer` → `tcp_init_buffer_space` on entering ESTABLISHED.
            self.established = true;
            self.rcvbuf.established(now, self.rcv_nxt);
        }
        let seq = pkt.tcp.seq;
        let end = seq + pkt.payload as u64;
        if pkt.ecn == Ecn::Ce {
            self.ce_packets += 1;
            self.ce_bytes += pkt.payload as u64;
        }
        // AccECN receive counters run on every segment (Linux include/net/tcp_ecn.h:tcp_ecn_received_counters).
        if self.ecn_mode == EcnMode::AccEcn {
            let edge = self.accecn.on_packet(pkt.ecn, pkt.payload);
            if self.l4steam_accecn {
                if edge || self.accecn_l4steam_ack_now(pkt) {
                    self.ack_now = true;
                }
            } else if edge || self.accecn.pending_ce >= ecn::ACCECN_CE_PENDING_ACK_NOW {
                self.ack_now = true;
            }
        }
        // RFC 3168: CWR is accepted before the CE check (tcp_ecn_accept_cwr).
        if self.ecn_mode == EcnMode::Rfc3168 && pkt.tcp.cwr() {
            self.demand_cwr = false;
            if pkt.payload > 0 {
                self.ack_now = true;
            }
        }
        // RFC 7323 §4.3 as `tcp_replace_ts_recent`: echo the TSval of the segment
        // that starts at or below the last ACKed point.
        if seq <= self.rcv_wup {
            self.ts_recent = pkt.tcp.tsval;
        }
        // `tcp_rcv_rtt_measure_ts`: RTT from our own echoed timestamp (once per skb),
        // read by DRS and by SACK compression's delay.
        if pkt.tcp.tsecr != 0 && !self.gro_cont {
            self.rcvbuf.rtt_measure_ts(now, pkt.tcp.tsecr, self.skb_len(pkt), self.rcv_mss as u64);
        }

        if end <= self.rcv_nxt {
            // Entirely duplicate: `tcp_send_dupack` with a D-SACK, quick-ACK mode.
            self.dsack = Some(SackBlock { start: seq, end });
            self.enter_quickack_mode(TCP_MAX_QUICKACKS);
            if self.gro_more {
                // Inside a GRO packet: the one ACK at its end carries the D-SACK.
                self.ack_now = true;
                self.ack_scheduled = true;
                return;
            }
            self.send_ack(now, out);
            return;
        }

        if seq <= self.rcv_nxt {
            // In order (possibly overlapping old data).
            let had_ooo = !self.ooo.is_empty();
            let advanced = end - self.rcv_nxt;
            self.rcv_nxt = end;
            self.bytes_delivered += advanced;
            if seq < self.rcv_nxt - advanced {
                // Partially duplicate: D-SACK the old part.
                self.dsack = Some(SackBlock { start: seq, end: self.rcv_nxt - advanced });
            }
            if !self.gro_cont {
                // Once per skb; a GRO packet is measured by its gso_size.
                self.measure_rcv_mss(pkt);
                self.event_data_recv(now);
                self.grow_window(pkt);
            }
            self.ecn_check_ce(pkt.ecn, now, out);
            if had_ooo {
                self.pull_ooo();
                // RFC 5681 §4.2: ACK at once when the gap is filled.
                if self.ooo.is_empty() {
                    self.ack_now = true;
                }
            }
            self.ack_scheduled = true;
            if self.gro_more {
                return;
            }
            self.unread_skb = true;
            self.ack_snd_check(now, out);
            self.unread_skb = false;
            // The application's read: DRS (`tcp_rcv_space_adjust`), then `tcp_cleanup_rbuf`.
            if !self.fixed_window && self.rcvbuf.space_due(now) {
                let span = self.ooo.back().map_or(0, |b| b.end - self.rcv_nxt);
                self.rcvbuf.space_adjust(now, self.rcv_nxt, span);
            }
            self.cleanup_rbuf(now, out);
        } else {
            // Out of order: queue, SACK, and ACK (maybe compressed).
            self.ecn_check_ce(pkt.ecn, now, out);
            // `tcp_sack_new_ofo_skb`: a segment that extends the third or a later SACK
            // block, or adds a block beside two or more, first sends the compressed ACK
            // with the blocks as they were (`tcp_sack_compress_send_ack`), so that no
            // block is pushed out of the option unreported.
            if self.compressed_ack > 0 && !self.ooo.is_empty() && self.sack_index(seq, end) >= TCP_SACK_BLOCKS_EXPECTED
            {
                self.send_ack(now, out);
            }
            self.insert_ooo(seq, end);
            if !self.gro_cont {
                // `tcp_data_queue_ofo` ends with `tcp_grow_window` (a SACK flow).
                self.grow_window(pkt);
            }
            self.ack_scheduled = true;
            if self.gro_more {
                return;
            }
            self.ack_snd_check(now, out);
        }
    }

    /// The L4STeam tree's AccECN receive path (L4STeam/linux net/ipv4/tcp_input.c),
    /// called before the segment updates `ts_recent`:
    /// `tcp_ecn_received_counters` sets
    /// `received_ce_pending = max(received_ce_pending + pcount, 0xfU)` for every ECT or CE
    /// segment (mainline: `min`, which caps the
    /// count of unreported CE marks), so the count is 15 whatever was marked. A data
    /// segment that carries options beyond the timestamps (the AccECN option, sent on
    /// every packet with `tcp_ecn_option` 2 or 3) misses header prediction and goes
    /// through `tcp_rcv_established`'s slow path, whose `tcp_ack(FLAG_SLOWPATH |
    /// FLAG_UPDATE_TS_RECENT)` reaches `tcp_accecn_process` even with nothing in flight
    /// (the `no_queue` label); `__tcp_accecn_process` goes on when the segment advanced
    /// the timestamp (`FLAG_TS_PROGRESS`: `tcp_replace_ts_recent` for a segment at or
    /// below `rcv_wup` with a newer TSval) and sets `ICSK_ACK_NOW` when
    /// `received_ce_pending >= TCP_ACCECN_ACE_MAX_DELTA` (6). Net effect: the first
    /// segment after each ACK is ACKed at once when it left the sender in a later
    /// millisecond (the TSval clock), so a low-rate flow gets an ACK per segment.
    fn accecn_l4steam_ack_now(&mut self, pkt: &Packet) -> bool {
        if pkt.ecn == Ecn::NotEct {
            return false;
        }
        self.accecn.pending_ce = 15;
        let slow_path = self.ecn_option >= 2;
        let ts_progress = pkt.tcp.seq <= self.rcv_wup && (pkt.tcp.tsval.wrapping_sub(self.ts_recent) as i32) > 0;
        slow_path && ts_progress && self.accecn.pending_ce >= ecn::ACCECN_CE_PENDING_ACK_NOW
    }

    /// `tcp_measure_rcv_mss` (net/ipv4/tcp_input.c): a segment at least as long as
    /// `rcv_mss` sets it (≤ advmss) and, if it carries PSH, marks the ACK
    /// `ICSK_ACK_PUSHED` ("tcp: fix delayed ACKs for MSS boundary condition", Linux
    /// 6.6: "likely the end of an application write"; the receiver vintages that have
    /// it: [`super::rcvbuf::psh_pushes`]); a shorter one whose length, header
    /// included, is ≥ TCP_MSS_DEFAULT + 20, or ≥ TCP_MIN_MSS + 20 without
    /// PSH/FIN/URG/SYN (`TCP_REMNANT`), is remembered in `last_seg_size` and becomes
    /// `rcv_mss` when two in a row have the same length; any other short segment marks
    /// the ACK `ICSK_ACK_PUSHED` (then `ICSK_ACK_PUSHED2`). Without GRO the length is
    /// the segment's payload, with GRO the packet's `gso_size` and its flags those of
    /// its merged header.
    fn measure_rcv_mss(&mut self, pkt: &Packet) {
        let lss = self.last_seg_size;
        self.last_seg_size = 0;
        // A GRO packet is measured by its gso_size (`skb_shinfo(skb)->gso_size ?: skb->len`).
        let len = if self.gro_gso_size > 0 { self.gro_gso_size } else { pkt.payload };
        let psh = if self.gro_segs > 1 { self.gro_psh } else { pkt.tcp.psh() };
        if len >= self.rcv_mss {
            if len != self.rcv_mss {
                // The len/truesize ratio of receive-buffer autotuning (`scaling_ratio`).
                self.rcvbuf.measure_ratio(self.skb_len(pkt), self.skb_truesize());
            }
            self.rcv_mss = len.min(TCP_ADVMSS);
            if psh && self.psh_pushes {
                self.pushed = true;
            }
            return;
        }
        // "len" including the TCP header, then less the fixed header + timestamps
        // (`tcp_header_len`): what varies is the option space beyond the timestamps.
        let tcp_hlen = pkt.wire_len.saturating_sub(ETH_HLEN + IP_HLEN + pkt.payload).max(TCP_HEADER_LEN);
        let with_hdr = len + tcp_hlen;
        if with_hdr >= TCP_MSS_DEFAULT + TCPHDR_LEN || (with_hdr >= TCP_MIN_MSS + TCPHDR_LEN && !psh) {
            let l = with_hdr - TCP_HEADER_LEN;
            self.last_seg_size = l;
            if l == lss {
                self.rcv_mss = l;
                return;
            }
        }
        if self.pushed {
            self.pushed2 = true;
        }
        self.pushed = true;
    }

    /// `tcp_cleanup_rbuf` after the application has read what just arrived in order
    /// (net/ipv4/tcp.c): with an ACK owed, ACK at once if more than one `rcv_mss`
    /// is unacknowledged, or if a short segment was pushed (`ICSK_ACK_PUSHED2`, or
    /// `ICSK_ACK_PUSHED` outside ping-pong mode: a pure receiver never enters it) and
    /// the read emptied the receive queue (no out-of-order data held).
    ///
    /// With autotuning, also a window update: if the window left from the last ACK is
    /// at most half the clamp and the read frees at least twice that, ACK now
    /// (`__tcp_cleanup_rbuf`: "we can now advertise a non-zero window which has been
    /// raised significantly").
    fn cleanup_rbuf(&mut self, now: Time, out: &mut Outbox) {
        if self.ack_scheduled
            && self.ooo.is_empty()
            && (self.rcv_nxt - self.rcv_wup > self.rcv_mss as u64 || self.pushed || self.pushed2)
        {
            self.send_ack(now, out);
            return;
        }
        // Runs after `on_data` established the buffer.
        if self.fixed_window {
            return;
        }
        let now_win = (self.rcv_wup + self.rcv_wnd).saturating_sub(self.rcv_nxt);
        if 2 * now_win <= self.rcvbuf.window_clamp() {
            let (new_win, low) = self.rcvbuf.select_window(self.ooo_rmem(), self.rcv_mss as u64);
            if low {
                self.quick = 0;
            }
            if new_win > 0 && new_win >= 2 * now_win {
                self.send_ack(now, out);
            }
        }
    }

    /// `tcp_event_data_recv`: quick-ACK and ato bookkeeping (Linux net/ipv4/tcp_input.c).
    fn event_data_recv(&mut self, now: Time) {
        if self.ato == 0 {
            // First data segment: quick-ACK mode, ato = TCP_ATO_MIN.
            self.incr_quickack(TCP_MAX_QUICKACKS);
            self.ato = TCP_ATO_MIN_NS;
        } else {
            let m = now - self.lrcvtime;
            if m <= TCP_ATO_MIN_NS / 2 {
                self.ato = (self.ato >> 1) + TCP_ATO_MIN_NS / 2;
            } else if m < self.ato {
                self.ato = ((self.ato >> 1) + m).min(self.rto_ns);
            } else if m > self.rto_ns {
                self.incr_quickack(TCP_MAX_QUICKACKS);
            }
        }
        self.lrcvtime = now;
    }

    /// `skb->len` of the skb `pkt` starts: the GRO packet's payload, else the segment's.
    fn skb_len(&self, pkt: &Packet) -> u64 {
        if self.gro_segs > 1 {
            self.gro_len as u64
        } else {
            pkt.payload as u64
        }
    }

    /// `skb->truesize` of the skb `pkt` starts ([`RX_TRUESIZE`] per segment).
    fn skb_truesize(&self) -> u64 {
        RX_TRUESIZE * self.gro_segs.max(1) as u64
    }

    /// `tcp_grow_window` (end of `tcp_event_data_recv`, and of `tcp_data_queue_ofo`):
    /// while `rcv_ssthresh` grows, one quick ACK (`icsk_ack.quick |= 1`). The queue
    /// holds this skb and the out-of-order data (the application reads the rest).
    #[inline]
    fn grow_window(&mut self, pkt: &Packet) {
        if self.fixed_window || !self.rcvbuf.may_grow() {
            return;
        }
        let truesize = self.skb_truesize();
        let ooo_rmem = self.ooo_rmem();
        if self.rcvbuf.grow_window(self.skb_len(pkt), truesize, truesize + ooo_rmem, self.rcv_mss as u64) {
            self.quick |= 1;
        }
    }

    /// Truesize of the out-of-order queue ([`RX_TRUESIZE`] per segment of `rcv_mss`).
    fn ooo_rmem(&self) -> u64 {
        if self.ooo_bytes == 0 {
            return 0;
        }
        self.ooo_bytes.div_ceil(self.rcv_mss.max(1) as u64) * RX_TRUESIZE
    }

    /// `tcp_select_window` for an ACK: the new window from the free space
    /// (`__tcp_select_window`, `tcp/rcvbuf.rs`), never less than what is left of the
    /// last one (the right edge does not move back: `tcp_shrink_window` 0), as the
    /// scaled 16-bit field. Leaves quick-ACK mode when the buffer is more than half full.
    fn select_window(&mut self) -> u16 {
        let wscale = self.rcvbuf.wscale();
        let mask = (1u64 << wscale) - 1;
        let rmem = self.ooo_rmem() + if self.unread_skb { self.skb_truesize() } else { 0 };
        let (mut new_win, low) = self.rcvbuf.select_window(rmem, self.rcv_mss as u64);
        if low {
            self.quick = 0;
        }
        let cur_win = (self.rcv_wup + self.rcv_wnd).saturating_sub(self.rcv_nxt);
        if new_win < cur_win {
            new_win = (cur_win + mask) & !mask;
        }
        self.rcv_wnd = new_win;
        (new_win >> wscale).min(65_535) as u16
    }

    /// The receive-buffer state (`tcp/rcvbuf.rs`).
    pub fn rcvbuf(&self) -> &RcvBuf {
        &self.rcvbuf
    }

    /// `tcp_data_ecn_check` (net/ipv4/tcp_input.c): with ECN on (RFC 3168 or AccECN)
    /// a CC that needs ECN or wants CE events sees every data segment's CE state as a
    /// `CA_EVENT_ECN_IS_CE` / `CA_EVENT_ECN_NO_CE` (DCTCP and BBRv2 echo it
    /// DCTCP-style); in RFC 3168 mode the echo (RFC 3168 §6.1.3: ECE until CWR) then
    /// runs with what the CC left.
    #[inline]
    fn ecn_check_ce(&mut self, ip_ecn: Ecn, now: Time, out: &mut Outbox) {
        if self.ecn_mode == EcnMode::AccEcn {
            // `tcp_data_ecn_check` returns only when ECN is off: with AccECN a CC that
            // wants CE events (BBRv2's DCTCP-style `bbr_cwnd_event`) sees them too;
            // the RFC 3168 echo state (DEMAND_CWR, quick-ACK on CE) is RFC 3168 only.
            match ip_ecn {
                Ecn::Ce => self.ca_ecn_event(CaEvent::EcnIsCe, now, out),
                Ecn::Ect0 | Ecn::Ect1 => self.ca_ecn_event(CaEvent::EcnNoCe, now, out),
                Ecn::NotEct => {}
            }
            return;
        }
        if self.ecn_mode != EcnMode::Rfc3168 {
            return;
        }
        match ip_ecn {
            Ecn::NotEct => {
                // Not-ECT after ECT: probably a retransmission.
                if self.ecn_seen {
                    self.enter_quickack_mode(2);
                }
            }
            Ecn::Ce => {
                self.ca_ecn_event(CaEvent::EcnIsCe, now, out);
                if !self.demand_cwr {
                    self.enter_quickack_mode(2);
                    self.demand_cwr = true;
                }
                self.ecn_seen = true;
            }
            _ => {
                self.ca_ecn_event(CaEvent::EcnNoCe, now, out);
                self.ecn_seen = true;
            }
        }
    }

    /// `tcp_ca_event(sk, ev)` if the CC needs ECN (`tcp_ca_needs_ecn`) or wants CE
    /// events (`tcp_ca_wants_ce_events`, google/bbr and L4STeam trees' tcp_input.c:
    /// BBRv2): hand it the receive state, then apply what it asked for (an ACK for
    /// earlier data, an immediate ACK, quick-ACK mode, the ECE state).
    fn ca_ecn_event(&mut self, ev: CaEvent, now: Time, out: &mut Outbox) {
        if !self.ca_ecn_events {
            return;
        }
        let r = &mut self.cc_sock.rcv;
        r.rcv_nxt = self.rcv_nxt;
        r.delack_pending = self.delack_deadline.is_some();
        r.demand_cwr = self.demand_cwr;
        r.ack_now = false;
        r.send_ack = None;
        r.quickack = false;
        self.cc_sock.now = now;
        self.cc.cwnd_event(&mut self.cc_sock, ev);
        let r = self.cc_sock.rcv;
        if let Some((ack, ece)) = r.send_ack {
            // `__tcp_send_ack(sk, ack)`: a special ACK that leaves the delayed-ACK state alone.
            let mut a = self.build_ack(ack, now);
            if self.ecn_mode == EcnMode::Rfc3168 {
                // AccECN carries the counters in ACE; DEMAND_CWR is an RFC 3168 flag.
                a.tcp.set_ece(ece);
            }
            out.push(a);
            self.acks_sent += 1;
        }
        if r.ack_now {
            self.ack_now = true;
        }
        if r.quickack {
            self.enter_quickack_mode(TCP_MAX_QUICKACKS);
        }
        self.demand_cwr = r.demand_cwr;
    }

    /// `tcp_incr_quickack`: quick = min(rcv_wnd / (2 rcv_mss), max). The window is
    /// never limiting here; Linux's initial 64 KB window gives 22 > 16.
    fn incr_quickack(&mut self, max: u32) {
        let quickacks = (65_535 / (2 * self.rcv_mss.max(1))).min(max);
        self.quick = self.quick.max(quickacks);
    }

    fn enter_quickack_mode(&mut self, max: u32) {
        self.incr_quickack(max);
        self.ato = TCP_ATO_MIN_NS;
    }

    /// `__tcp_ack_snd_check` (Linux net/ipv4/tcp_input.c).
    fn ack_snd_check(&mut self, now: Time, out: &mut Outbox) {
        if !self.ack_scheduled {
            return;
        }
        let more_than_one_mss = self.rcv_nxt - self.rcv_wup > self.rcv_mss as u64;
        let quickack_mode = self.quick > 0 || !self.delayed_ack;
        if more_than_one_mss || quickack_mode || self.ack_now {
            self.send_ack(now, out);
            return;
        }
        if self.ooo.is_empty() {
            self.send_delayed_ack(now, out);
            return;
        }
        // Out-of-order data: the first 3 dupACKs for a given rcv_nxt go at once,
        // later ones are compressed behind an hrtimer.
        if self.compressed_ack >= TCP_COMP_SACK_NR {
            self.send_ack(now, out);
            return;
        }
        if self.compressed_ack_rcv_nxt != self.rcv_nxt {
            self.compressed_ack_rcv_nxt = self.rcv_nxt;
            self.dup_ack_counter = 0;
        }
        if self.dup_ack_counter < TCP_FASTRETRANS_THRESH {
            self.dup_ack_counter += 1;
            self.send_ack(now, out);
            return;
        }
        self.compressed_ack += 1;
        if self.comp_deadline.is_some() {
            return;
        }
        // Delay: a share of the RTT (the receive RTT, or the socket's srtt if smaller),
        // at most 1 ms, and the hrtimer's slack: the receiving kernel's (`tcp/rcvbuf.rs`);
        // without `receiver_sack_compression = "kernel"` the 10-µs slack alone.
        let timer = if self.comp_sack_timer {
            let mut rtt_us8 = self.rcvbuf.rtt_us8();
            let srtt_us8 = self.srtt_ns / NS_PER_US * 8;
            if srtt_us8 > 0 && srtt_us8 < rtt_us8 {
                rtt_us8 = srtt_us8;
            }
            self.rcvbuf.comp_sack_timer_ns(rtt_us8)
        } else {
            TCP_COMP_SACK_SLACK_NS
        };
        self.comp_deadline = Some(now + timer);
    }

    /// `tcp_send_delayed_ack` (net/ipv4/tcp_output.c): an `ato` above TCP_DELACK_MIN
    /// is bounded by HZ/2 (TCP_DELACK_MAX when `ICSK_ACK_PUSHED`), and by the
    /// socket's srtt if it has one (at least TCP_DELACK_MIN): with the handshake's
    /// RTT below 40 ms, a delayed ACK waits at most 40 ms however far `ato` inflated.
    fn send_delayed_ack(&mut self, now: Time, out: &mut Outbox) {
        let mut ato = self.ato;
        if ato > TCP_DELACK_MIN_NS {
            let mut max_ato = if self.pushed { TCP_DELACK_MAX_NS } else { 500 * crate::time::NS_PER_MS };
            if self.srtt_ns > 0 {
                max_ato = max_ato.min(self.srtt_ns.max(TCP_DELACK_MIN_NS));
            }
            ato = ato.min(max_ato);
        }
        let mut timeout = now + ato;
        if let Some(pending) = self.delack_deadline {
            // If the timer is about to expire, ACK now.
            if pending <= now + (ato >> 2) {
                self.send_ack(now, out);
                return;
            }
            // Never push an armed timer later.
            timeout = timeout.min(pending);
        }
        self.delack_deadline = Some(timeout);
    }

    /// Timer callback: delayed ACK and SACK compression.
    pub fn on_timer(&mut self, now: Time, out: &mut Outbox) {
        if self.gro.as_ref().and_then(Gro::poll_at).is_some_and(|t| t <= now) {
            self.gro_poll(now, out);
        }
        if let Some(t) = self.comp_deadline {
            if t <= now {
                self.comp_deadline = None;
                if self.compressed_ack > 0 {
                    self.send_ack(now, out);
                }
            }
        }
        if let Some(t) = self.delack_deadline {
            if t <= now {
                self.delack_deadline = None;
                if self.ack_scheduled {
                    // Not in ping-pong mode: inflate ato (tcp_delack_timer_handler).
                    self.ato = (self.ato << 1).min(self.rto_ns);
                    self.send_ack(now, out);
                }
            }
        }
    }

    /// Build and send an ACK for rcv_nxt with SACK blocks (`tcp_send_ack`).
    fn send_ack(&mut self, now: Time, out: &mut Outbox) {
        let mut a = self.build_ack(self.rcv_nxt, now);
        let mut set = SackSet::default();
        let mut n = 0;
        if let Some(d) = self.dsack.take() {
            set.blocks[0] = d;
            set.dsack = true;
            n = 1;
        }
        for b in self.recent[..self.num_recent].iter() {
            if n == MAX_SACK_BLOCKS {
                break;
            }
            set.blocks[n] = *b;
            n += 1;
        }
        // `tcp_options_fit_accecn` (tcp_output.c): when the AccECN option cannot carry
        // the `accecn_minlen` fields that the codepoints received since the last option
        // need beside more than two SACK blocks, blocks are dropped one at a time (never
        // below two) until it can; if it cannot even then, the blocks stay and the ACK
        // carries no option (below). In L4STeam's AccECN patches since "tcp: try to fit
        // AccECN option with SACK" (netdev RFC, March 2020), as in mainline.
        if self.ecn_mode == EcnMode::AccEcn && self.ecn_option >= 2 && self.accecn.minlen > 0 {
            let fits = |k: usize| {
                ecn::accecn_fields_fitting(option_space_left(k as u8)).is_some_and(|f| f >= self.accecn.minlen)
            };
            let mut m = n;
            while m > 2 && !fits(m) {
                m -= 1;
            }
            if fits(m) {
                n = m;
            }
        }
        set.num = n as u8;
        if n > 0 {
            // The blocks ride in the run's side table (packet.rs `SackTable`).
            a.tcp.sack = out.sacks.insert(set);
        }
        a.wire_len = tcp_wire_len(0, set.num);
        self.add_accecn_option(&mut a, set.num);
        out.push(a);
        self.acks_sent += 1;
        self.on_ack_sent();
    }

    /// An ACK for `ack` carrying this receiver's ECN feedback (no SACK yet).
    fn build_ack(&mut self, ack: u64, now: Time) -> Packet {
        let mut a = Packet::new(self.flow, PacketKind::Ack);
        a.tcp.ack = ack;
        a.tcp.tsval = ts_clock(now);
        a.tcp.tsecr = self.ts_recent;
        a.wire_len = tcp_wire_len(0, 0);
        if !self.fixed_window {
            a.tcp.window = self.select_window();
        }
        match self.ecn_mode {
            EcnMode::Off => {}
            EcnMode::Rfc3168 => {
                a.tcp.set_ece(self.demand_cwr);
                // Pure ACKs are ECT only from a CC that needs ECN (DCTCP; Linux net/ipv4/tcp_output.c:tcp_ecn_send).
                if self.cc_flags.needs_ecn {
                    a.ecn = if self.cc_flags.wants_ect1 { Ecn::Ect1 } else { Ecn::Ect0 };
                }
            }
            EcnMode::AccEcn => {
                a.tcp.ace = self.accecn.ace();
                self.accecn.pending_ce = 0;
                a.ecn = if self.cc_flags.wants_ect1 { Ecn::Ect1 } else { Ecn::Ect0 };
            }
        }
        a
    }

    /// Append the AccECN option if the mode and `tcp_ecn_option` ask for it and it
    /// fits beside the SACK blocks (Linux net/ipv4/tcp_output.c:tcp_established_options).
    fn add_accecn_option(&mut self, a: &mut Packet, num_sack: u8) {
        if self.ecn_mode != EcnMode::AccEcn || self.ecn_option < 2 {
            return;
        }
        // Fewer fields than `accecn_minlen` fit: no option (`tcp_options_fit_accecn`).
        if let Some(fields) =
            ecn::accecn_fields_fitting(option_space_left(num_sack)).filter(|&f| f >= self.accecn.minlen)
        {
            a.tcp.accecn.set(Some(AccEcnOption {
                fields,
                e1b: self.accecn.e1b & ecn::ACCECN_FIELD_MASK,
                ceb: self.accecn.ceb & ecn::ACCECN_FIELD_MASK,
                e0b: self.accecn.e0b & ecn::ACCECN_FIELD_MASK,
            }));
            a.wire_len += ecn::accecn_option_len(fields);
            if fields > 0 {
                self.accecn.minlen = 0;
            }
        }
    }

    /// `tcp_event_ack_sent`: leave quick-ACK mode gradually, clear the timers.
    fn on_ack_sent(&mut self) {
        if self.quick > 0 {
            let pkts = if self.ack_scheduled { 1 } else { 0 };
            if pkts >= self.quick {
                self.quick = 0;
                self.ato = TCP_ATO_MIN_NS;
            } else {
                self.quick -= pkts;
            }
        }
        // inet_csk_clear_xmit_timer(sk, ICSK_TIME_DACK): `icsk_ack.pending = 0`.
        self.ack_scheduled = false;
        self.ack_now = false;
        self.pushed = false;
        self.pushed2 = false;
        self.delack_deadline = None;
        self.compressed_ack = 0;
        self.comp_deadline = None;
        self.rcv_wup = self.rcv_nxt;
    }

    /// `tcp_sack_new_ofo_skb`'s `this_sack`: the index of the first recent SACK block
    /// that `[seq, end)` overlaps or touches (`tcp_sack_extend`), else their number.
    fn sack_index(&self, seq: u64, end: u64) -> usize {
        self.recent[..self.num_recent].iter().position(|b| seq <= b.end && b.start <= end).unwrap_or(self.num_recent)
    }

    /// Add `[seq, end)` to the out-of-order set and to the recency list.
    #[inline]
    fn insert_ooo(&mut self, seq: u64, end: u64) {
        // Most segments extend the last range or open a new one after it
        // (`tcp_input.c:tcp_data_queue_ofo`'s fast path: "In the typical case, we are
        // adding an skb to the end of the list", by `ooo_last_skb`, without the rb-tree
        // lookup). The ranges are sorted, disjoint and not adjacent, so every range
        // before the last ends before the last's start: if that start is at or below
        // `seq`, the last is the only range the segment can touch.
        match self.ooo.back_mut() {
            Some(last) if last.start <= seq => {
                let blk = if seq <= last.end {
                    // Overlapping or adjacent: merged into the last range.
                    if end <= last.end {
                        // Duplicate of out-of-order data: D-SACK it (tcp_data_queue_ofo).
                        self.dsack = Some(SackBlock { start: seq, end });
                    }
                    let merged = last.end - last.start;
                    last.end = last.end.max(end);
                    self.ooo_bytes = self.ooo_bytes - merged + (last.end - last.start);
                    *last
                } else {
                    let blk = SackBlock { start: seq, end };
                    self.ooo.push_back(blk);
                    self.ooo_bytes += end - seq;
                    blk
                };
                self.note_recent(blk);
            }
            None => {
                let blk = SackBlock { start: seq, end };
                self.ooo.push_back(blk);
                self.ooo_bytes += end - seq;
                self.note_recent(blk);
            }
            Some(_) => self.insert_ooo_before_last(seq, end),
        }
    }

    /// [`insert_ooo`](Self::insert_ooo) of a segment that starts before the last range.
    #[inline(never)]
    fn insert_ooo_before_last(&mut self, seq: u64, end: u64) {
        let mut blk = SackBlock { start: seq, end };
        // Merge with every overlapping/adjacent range: sorted and disjoint, they are
        // a run from the first that does not end before the segment (a binary
        // search, as tcp_data_queue_ofo descends the ofo rb-tree).
        let lo = self.ooo.partition_point(|r| r.end < blk.start);
        let mut hi = lo;
        let mut dup = false;
        let mut merged = 0;
        while let Some(&r) = self.ooo.get(hi) {
            if r.start > blk.end {
                break;
            }
            if r.start <= seq && end <= r.end {
                dup = true;
            }
            merged += r.end - r.start;
            blk.start = blk.start.min(r.start);
            blk.end = blk.end.max(r.end);
            hi += 1;
        }
        self.ooo_bytes = self.ooo_bytes - merged + (blk.end - blk.start);
        if dup {
            // Duplicate of out-of-order data: D-SACK it (tcp_data_queue_ofo).
            self.dsack = Some(SackBlock { start: seq, end });
        }
        if hi > lo {
            self.ooo[lo] = blk;
            self.ooo.drain(lo + 1..hi);
        } else {
            self.ooo.insert(lo, blk);
        }
        self.note_recent(blk);
    }

    /// Recency list: the block containing the newest segment (`blk`, the out-of-order
    /// range it is now part of) goes first (`tcp_sack_new_ofo_skb`); blocks merged into
    /// it disappear.
    #[inline]
    fn note_recent(&mut self, blk: SackBlock) {
        let overlaps = |b: &SackBlock| !(b.end < blk.start || b.start > blk.end);
        // Most often the newest segment grew the block that was already first, and
        // it touches no other: the list then only has that block replaced, in place
        // (the general path below gives the same list through a copy).
        let n = self.num_recent;
        if n > 0 && overlaps(&self.recent[0]) && !self.recent[1..n].iter().any(overlaps) {
            self.recent[0] = blk;
            return;
        }
        self.rebuild_recent(blk);
    }

    /// [`note_recent`](Self::note_recent)'s general case: the list rebuilt with `blk`
    /// first.
    #[inline(never)]
    fn rebuild_recent(&mut self, blk: SackBlock) {
        let overlaps = |b: &SackBlock| !(b.end < blk.start || b.start > blk.end);
        let mut kept = [SackBlock::default(); MAX_SACK_BLOCKS + 1];
        kept[0] = blk;
        let mut n = 1;
        for b in self.recent[..self.num_recent].iter() {
            if !overlaps(b) && n < kept.len() {
                kept[n] = *b;
                n += 1;
            }
        }
        self.recent = kept;
        self.num_recent = n;
    }

    /// `tcp_ofo_queue`: move now-contiguous ranges into the receive queue.
    fn pull_ooo(&mut self) {
        while let Some(first) = self.ooo.front().copied() {
            if first.start > self.rcv_nxt {
                break;
            }
            if first.end > self.rcv_nxt {
                self.bytes_delivered += first.end - self.rcv_nxt;
                self.rcv_nxt = first.end;
            }
            self.ooo_bytes -= first.end - first.start;
            self.ooo.pop_front();
        }
        // Drop SACK blocks now below rcv_nxt (`tcp_sack_remove`).
        let mut n = 0;
        let mut kept = [SackBlock::default(); MAX_SACK_BLOCKS + 1];
        for b in self.recent[..self.num_recent].iter() {
            if b.end > self.rcv_nxt {
                kept[n] = *b;
                n += 1;
            }
        }
        self.recent = kept;
        self.num_recent = n;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The out-of-order merge against a scan of every range (the rule it replaced):
    /// random segments below and above holes, duplicates and fills.
    #[test]
    fn out_of_order_merge_equals_a_scan_of_every_range() {
        let mut rng = crate::rng::stream(3, crate::rng::Stream::Flow(0));
        let mut r = TcpReceiver::new(0, true, 0, 0, "reno");
        let mut want: Vec<SackBlock> = Vec::new();
        for _ in 0..20_000 {
            let seq = (rng.next_u32() % 400) as u64 * 10;
            let end = seq + 10 * (1 + rng.next_u32() % 3) as u64;
            let mut blk = SackBlock { start: seq, end };
            let mut dup = false;
            let mut i = 0;
            while i < want.len() {
                let x = want[i];
                if x.end < blk.start || x.start > blk.end {
                    i += 1;
                    continue;
                }
                dup |= x.start <= seq && end <= x.end;
                blk = SackBlock { start: blk.start.min(x.start), end: blk.end.max(x.end) };
                want.remove(i);
            }
            let pos = want.partition_point(|x| x.start < blk.start);
            want.insert(pos, blk);
            r.dsack = None;
            r.insert_ooo(seq, end);
            assert_eq!(r.dsack.is_some(), dup);
            assert!(r.ooo.iter().eq(want.iter()));
            if rng.next_u32().is_multiple_of(50) {
                // The hole at the front fills: everything is delivered.
                r.rcv_nxt = want.last().map_or(0, |b| b.end);
                r.pull_ooo();
                want.clear();
                assert!(r.ooo.is_empty());
            }
        }
    }

    fn data(seq: u64, len: u32) -> Packet {
        let mut p = Packet::new(0, PacketKind::Data);
        p.payload = len;
        p.tcp.seq = seq;
        p
    }

    /// Segments of 1448 B ACKed one by one from the first: the 16 quick ACKs of
    /// `tcp_incr_quickack`, and 6 more while `tcp_grow_window` raises `rcv_ssthresh`
    /// from the initial 64 088 B to the free space of the 128 KiB buffer
    /// (131 072 − 2 304 B at 1448·256/2304 = 160/256: 80 480 B, two advmss a step),
    /// each step asking for one more (`quick |= 1`). Without timestamps DRS never
    /// runs, so the room opens no further.
    const QUICK_ACKS: u64 = 22;

    /// `tcp_grow_window`: while `rcv_ssthresh` climbs toward the room DRS opened, each
    /// segment is ACKed at once; once it has caught up, every second one.
    #[test]
    fn every_segment_is_acked_while_the_receive_window_grows() {
        use crate::time::NS_PER_MS;
        let mut r = TcpReceiver::new(0, true, 2, 2, "cubic");
        let mut out = Outbox::default();
        r.on_packet(&Packet::new(0, PacketKind::Syn), 0, &mut out);
        out.clear();
        // Segments every 100 µs echoing a TSval 10 ms old: a 10-ms receive RTT.
        let mut acked_alone = Vec::new();
        let mut t = 10 * NS_PER_MS;
        let mut last_ack = 0;
        for i in 0..400u64 {
            let mut d = data(i * 1448, 1448);
            d.tcp.tsecr = ts_clock(t) - 10;
            r.on_packet(&d, t, &mut out);
            if let Some(a) = out.last() {
                if a.tcp.ack == (i + 1) * 1448 && last_ack == i * 1448 {
                    acked_alone.push(i);
                }
                last_ack = a.tcp.ack;
            }
            out.clear();
            t += 100_000;
        }
        // First the quick ACKs and the initial growth.
        assert!(acked_alone.starts_with(&(0..QUICK_ACKS).collect::<Vec<_>>()), "{acked_alone:?}");
        // Then pairs until an RTT has passed (segment 100 at 20 ms): DRS has seen 100
        // segments read against rcvq_space = 10, grows the buffer and the clamp, and
        // every segment is ACKed alone again while rcv_ssthresh climbs, two advmss a
        // segment, up to the new free space.
        assert!(!acked_alone.contains(&(QUICK_ACKS + 1)));
        let run: Vec<u64> = acked_alone.iter().copied().filter(|&i| i >= 100).collect();
        assert!(run.len() >= 50, "{acked_alone:?}");
        let grown = r.rcvbuf().rcv_ssthresh();
        assert!(grown > 200_000, "rcv_ssthresh {grown}");
        // Without the growth (a receiver whose buffer cannot grow) the same segments
        // are ACKed in pairs: checked by the receiver's room being closed at the end.
        assert!(r.rcvbuf().rcvbuf() > TCP_RMEM_1);
    }
    const TCP_RMEM_1: u64 = super::super::rcvbuf::TCP_RMEM[1];

    /// Segments 1 µs apart, past the 16 quick ACKs: the first, on a quiet port, is
    /// polled at once (Intel's ITR throttle, tcp/gro.rs); the next ones wait for the
    /// end of the 50 µs interval and reach TCP merged: one stretch ACK per GRO packet,
    /// up to 64 KB.
    #[test]
    fn gro_acks_each_gro_packet_once_at_the_poll() {
        let (mut r, mut seq, mut t) = past_quickacks(true, 10 * NS_PER_MS);
        r.set_gro(gro::DEFAULT_RX_USECS_NS);
        let mut out = Outbox::default();
        let first = t + 1_000;
        // 60 back-to-back full segments within 60 µs: the NAPI budget (64) is not
        // reached, so the polls are the throttle's.
        for _ in 0..60 {
            t += 1_000;
            if r.next_timer().is_some_and(|d| d <= t) {
                let due = r.next_timer().unwrap();
                r.on_timer(due, &mut out);
            }
            r.on_packet(&data(seq, 1448), t, &mut out);
            seq += 1448;
        }
        // Poll 1 at `first` (1 segment: a delayed ACK), poll 2 at first + 50 µs with
        // the 49 segments held by then (first + 1 .. first + 49 µs): two GRO packets
        // (45 fill 64 KB, then 4), each ACKed once, at the poll time.
        let g = r.gro.as_ref().unwrap();
        assert_eq!((g.gro_packets, g.gro_segments), (3, 50));
        // The 45-segment packet's ACK is sent while it is queued (its 104 KB of truesize in
        // the 128 KB buffer: a small window), and the read that follows frees the buffer:
        // a window update for the same sequence (`__tcp_cleanup_rbuf`), then the next
        // packet's ACK.
        let acked: Vec<u64> = out.iter().map(|a| a.tcp.ack).collect();
        assert_eq!(acked.len(), 3, "{acked:?}");
        assert_eq!(acked[0], acked[1], "{acked:?}");
        assert!(out[1].tcp.window > out[0].tcp.window, "the update opens the window");
        assert!(out.iter().all(|a| a.kind == PacketKind::Ack));
        assert_eq!(out[0].tcp.ack, (QUICK_ACKS + 1 + 45) * 1448);
        // The remaining 10 wait for the next poll, one interval after poll 2.
        assert_eq!(r.next_timer(), Some(first + 50_000 + 50_000));
        out.clear();
        r.on_timer(first + 100_000, &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].tcp.ack, seq);
        assert_eq!(r.rcv_nxt(), seq);
    }

    /// A CE mark splits the GRO packet (another TOS byte) and the AccECN counters
    /// still count every CE segment (`gso_segs`).
    #[test]
    fn gro_splits_at_an_ecn_change_and_counts_every_ce_segment() {
        let mut r = TcpReceiver::new(0, true, 3, 2, "prague");
        let mut out = Outbox::default();
        let mut syn = Packet::new(0, PacketKind::Syn);
        syn.tcp.ace = 0b111;
        r.on_packet(&syn, 0, &mut out);
        assert_eq!(r.ecn_mode, EcnMode::AccEcn);
        r.set_gro(gro::DEFAULT_RX_USECS_NS);
        out.clear();
        let t0 = NS_PER_MS;
        for i in 0..10u64 {
            let mut p = data(i * 1448, 1448);
            p.ecn = if (4..7).contains(&i) { Ecn::Ce } else { Ecn::Ect1 };
            r.on_packet(&p, t0 + i * 1_000, &mut out);
            if i == 0 {
                // The quiet port's first segment is polled at once (ITR throttle).
                assert_eq!(r.gro.as_ref().unwrap().gro_segments, 1);
                out.clear();
            }
        }
        assert!(out.is_empty(), "nothing else reaches TCP before the poll");
        r.on_timer(t0 + 50_000, &mut out);
        let g = r.gro.as_ref().unwrap();
        // 1 + (1..4 ECT(1), 4..7 CE, 7..10 ECT(1)).
        assert_eq!((g.gro_packets, g.gro_segments), (4, 10));
        assert_eq!(r.ce_packets, 3);
        assert_eq!(r.rcv_nxt(), 10 * 1448);
        assert_eq!(out.last().unwrap().tcp.ack, 10 * 1448);
    }

    #[test]
    fn first_segments_are_quick_acked_then_every_second() {
        let mut r = TcpReceiver::new(0, true, 2, 2, "cubic");
        let mut out = Outbox::default();
        let mut t = 0;
        for i in 0..40u64 {
            t += 100_000;
            r.on_packet(&data(i * 1448, 1448), t, &mut out);
        }
        // QUICK_ACKS quick ACKs, then one per 2 segments for the rest.
        assert_eq!(out.len() as u64, QUICK_ACKS + (40 - QUICK_ACKS) / 2);
        assert!(out.iter().all(|a| a.kind == PacketKind::Ack));
        assert_eq!(out.last().unwrap().tcp.ack, 40 * 1448);
    }

    #[test]
    fn odd_segment_is_acked_by_the_40ms_timer() {
        let mut r = TcpReceiver::new(0, true, 2, 2, "cubic");
        let mut out = Outbox::default();
        let n = QUICK_ACKS + 1;
        for i in 0..n {
            r.on_packet(&data(i * 1448, 1448), 1000 * (i + 1), &mut out);
        }
        assert_eq!(out.len() as u64, QUICK_ACKS);
        let deadline = r.next_timer().expect("delack armed");
        assert_eq!(deadline, n * 1000 + TCP_ATO_MIN_NS);
        r.on_timer(deadline, &mut out);
        assert_eq!(out.len() as u64, n);
        assert_eq!(out[QUICK_ACKS as usize].tcp.ack, n * 1448);
    }

    /// A receiver past its quick ACKs (segments of 1448 B every µs from `t0`); the
    /// SYN/ACK left at 0 when `handshake`, so its srtt is `t0` (tcp_synack_rtt_meas).
    fn past_quickacks(handshake: bool, t0: Time) -> (TcpReceiver, u64, Time) {
        let mut r = TcpReceiver::new(0, true, 2, 2, "cubic");
        let mut out = Outbox::default();
        if handshake {
            r.on_packet(&Packet::new(0, PacketKind::Syn), 0, &mut out);
        }
        let mut t = t0;
        for i in 0..QUICK_ACKS {
            r.on_packet(&data(i * 1448, 1448), t, &mut out);
            t += 1000;
        }
        assert_eq!(r.quick, 0);
        (r, QUICK_ACKS * 1448, t)
    }

    #[test]
    fn the_delayed_ack_waits_at_most_the_handshake_rtt_or_40ms() {
        use crate::time::NS_PER_MS;
        // tcp_send_delayed_ack: ato > TCP_DELACK_MIN is bounded by max(srtt,
        // TCP_DELACK_MIN) when the socket has an srtt, else by HZ/2.
        for (handshake, bound) in [(true, TCP_DELACK_MIN_NS), (false, 80 * NS_PER_MS)] {
            let (mut r, seq, t) = past_quickacks(handshake, 10 * NS_PER_MS);
            let mut out = Outbox::default();
            // An odd segment: the 40 ms timer ACKs it and inflates ato to 80 ms
            // (tcp_delack_timer_handler; the receiver's RTO is 10 + 200 ms or 1 s).
            r.on_packet(&data(seq, 1448), t, &mut out);
            let d = r.next_timer().expect("delack armed");
            assert_eq!(d, t + TCP_ATO_MIN_NS);
            r.on_timer(d, &mut out);
            assert_eq!(r.ato, 2 * TCP_ATO_MIN_NS);
            // The next odd segment 100 ms later (longer than ato: ato stays 80 ms).
            let t2 = d + 100 * NS_PER_MS;
            r.on_packet(&data(seq + 1448, 1448), t2, &mut out);
            assert_eq!(r.next_timer(), Some(t2 + bound), "handshake {handshake}");
        }
    }

    #[test]
    fn a_short_segment_is_acked_when_the_application_reads_it() {
        use crate::time::NS_PER_MS;
        // tcp_measure_rcv_mss marks a segment shorter than rcv_mss ICSK_ACK_PUSHED
        // unless it repeats the last short length; tcp_cleanup_rbuf then ACKs as soon
        // as the application has read it.
        let (mut r, mut seq, mut t) = past_quickacks(true, 10 * NS_PER_MS);
        let mut out = Outbox::default();
        r.on_packet(&data(seq, 700), t, &mut out);
        assert_eq!(out.len(), 1, "a pushed short segment is ACKed at once");
        assert_eq!(out[0].tcp.ack, seq + 700);
        seq += 700;
        // Steady 600-B segments: the first is pushed (new length), the second sets
        // rcv_mss = 600, then every second segment is ACKed (more than one rcv_mss).
        let mut acks = Vec::new();
        for _ in 0..6 {
            t += 1000;
            out.clear();
            r.on_packet(&data(seq, 600), t, &mut out);
            seq += 600;
            acks.push(out.len());
        }
        assert_eq!(acks, vec![1, 0, 1, 0, 1, 0]);
        assert_eq!(r.rcv_mss, 600);
        // Full segments again: rcv_mss back to 1448 (the first is ACKed with the 600 B
        // still owed: more than one rcv_mss), then no push: the next one waits.
        out.clear();
        r.on_packet(&data(seq, 1448), t + 1000, &mut out);
        assert_eq!(r.rcv_mss, 1448);
        assert_eq!(out.len(), 1);
        out.clear();
        r.on_packet(&data(seq + 1448, 1448), t + 2000, &mut out);
        assert!(out.is_empty());
    }

    /// A full-sized segment with PSH, the last of a GSO skb, opening a delayed-ACK pair:
    /// a receiver of Linux 6.6 or later ACKs it at once (`tcp_measure_rcv_mss` sets
    /// `ICSK_ACK_PUSHED`, `tcp_cleanup_rbuf` ACKs after the read), an older one (the
    /// testbeds' 5.10 and 5.15 L4STeam trees) waits for the pair as without PSH. Short
    /// segments with PSH are never taken as the MSS (`TCP_REMNANT`).
    #[test]
    fn a_full_sized_psh_segment_is_acked_at_once_from_linux_6_6() {
        use crate::config::RcvbufKernel;
        use crate::time::NS_PER_MS;
        for (kernel, at_once) in [
            (RcvbufKernel::Mainline, true),
            (RcvbufKernel::V6_6, true),
            (RcvbufKernel::V5_15, false),
            (RcvbufKernel::V5_10, false),
        ] {
            let mut r = TcpReceiver::new(0, true, 2, 2, "cubic").with_rcvbuf_kernel(kernel);
            let mut out = Outbox::default();
            r.on_packet(&Packet::new(0, PacketKind::Syn), 0, &mut out);
            // Past the quick ACKs and the window's growth: segments until one is held.
            let (mut seq, mut t) = (0u64, 10 * NS_PER_MS);
            loop {
                out.clear();
                r.on_packet(&data(seq, 1448), t, &mut out);
                seq += 1448;
                t += 100_000;
                if out.is_empty() {
                    break;
                }
            }
            assert!(seq < 200 * 1448, "{kernel:?}: no delayed ACK");
            out.clear();
            r.on_packet(&data(seq, 1448), t, &mut out);
            assert_eq!(out.len(), 1, "{kernel:?}: the pair is ACKed");
            seq += 1448;
            t += 100_000;
            // Without PSH the first of the next pair waits on every vintage.
            out.clear();
            r.on_packet(&data(seq, 1448), t, &mut out);
            assert!(out.is_empty(), "{kernel:?}");
            seq += 1448;
            t += 100_000;
            out.clear();
            r.on_packet(&data(seq, 1448), t, &mut out);
            assert_eq!(out.len(), 1, "{kernel:?}");
            seq += 1448;
            t += 100_000;
            // With PSH: at once from 6.6.
            let mut p = data(seq, 1448);
            p.tcp.set_psh(true);
            out.clear();
            r.on_packet(&p, t, &mut out);
            assert_eq!(out.len(), at_once as usize, "{kernel:?}");
            if at_once {
                assert_eq!(out[0].tcp.ack, seq + 1448);
                assert!(!out[0].tcp.psh(), "an ACK carries no PSH");
            }
        }
        // A segment shorter than TCP_MSS_DEFAULT (536 B with its header) is learnt as the
        // MSS only without PSH: with it each one is pushed (ACKed at once), without it the
        // second of the same length sets rcv_mss.
        for psh in [true, false] {
            let (mut r, mut seq, mut t) = past_quickacks(true, 10 * NS_PER_MS);
            let mut out = Outbox::default();
            let mut acks = Vec::new();
            for _ in 0..4 {
                let mut p = data(seq, 400);
                p.tcp.set_psh(psh);
                out.clear();
                r.on_packet(&p, t, &mut out);
                acks.push(out.len());
                seq += 400;
                t += 1000;
            }
            if psh {
                assert_eq!((acks, r.rcv_mss), (vec![1, 1, 1, 1], 1448));
            } else {
                assert_eq!((acks, r.rcv_mss), (vec![1, 0, 1, 0], 400));
            }
        }
    }

    /// With GRO, a GSO skb's PSH segment closes its GRO packet (`tcp_gro_receive`), and the
    /// packet's header carries the PSH: a 3-segment packet is ACKed at once as a stretch
    /// ACK, and the next skb's segments form their own packet.
    #[test]
    fn gro_packets_end_at_psh_and_take_its_flag() {
        let (mut r, mut seq, mut t) = past_quickacks(true, 10 * NS_PER_MS);
        r.set_gro(gro::DEFAULT_RX_USECS_NS);
        let mut out = Outbox::default();
        // Let the throttle interval since the last poll run out, then two skbs of 3
        // segments back to back within one interval.
        t += 1_000_000;
        let first = t;
        for k in 0..6u64 {
            let mut p = data(seq, 1448);
            p.tcp.set_psh(k % 3 == 2);
            r.on_packet(&p, t, &mut out);
            seq += 1448;
            t += 1_000;
        }
        if let Some(due) = r.next_timer() {
            r.on_timer(due, &mut out);
        }
        let g = r.gro.as_ref().unwrap();
        // The first segment was polled alone (a quiet port); then [2 + PSH] and [3 + PSH].
        assert_eq!((g.gro_packets, g.gro_segments), (3, 6), "{first}");
        assert_eq!(out.last().map(|a| a.tcp.ack), Some(seq));
    }

    /// Feeds `r` an AccECN SYN (ECT(1), the AccECN ACE codepoint) so it negotiates AccECN.
    fn accecn_handshake(mut r: TcpReceiver) -> (TcpReceiver, Outbox) {
        let mut out = Outbox::default();
        let mut syn = Packet::new(0, PacketKind::Syn);
        syn.tcp.ace = ecn::SYN_ACE_ACCECN;
        syn.ecn = Ecn::Ect1;
        r.on_packet(&syn, 0, &mut out);
        assert_eq!(r.ecn_mode, EcnMode::AccEcn);
        (r, out)
    }

    /// An AccECN receiver (Prague's, `tcp_ecn` 3, `tcp_ecn_option` 2) past its quick
    /// ACKs, fed ECT(1) or CE segments of 1448 B every `gap` ns with TSvals from the
    /// sender's millisecond clock; returns the ACKs each segment drew.
    fn accecn_acks_per_segment(l4steam: bool, ecn: Ecn, gap: Time) -> Vec<usize> {
        let (mut r, mut out) = accecn_handshake(TcpReceiver::new(0, true, 3, 2, "prague").with_l4steam_accecn(l4steam));
        let mut acks = Vec::new();
        let mut t = 10 * crate::time::NS_PER_MS;
        for i in 0..QUICK_ACKS + 20 {
            let mut d = data(i * 1448, 1448);
            d.ecn = ecn;
            d.tcp.tsval = ts_clock(t - 5 * crate::time::NS_PER_MS);
            out.clear();
            r.on_packet(&d, t, &mut out);
            acks.push(out.len());
            t += gap;
        }
        acks.split_off(QUICK_ACKS as usize)
    }

    #[test]
    fn the_l4steam_accecn_receiver_acks_every_segment_of_a_low_rate_flow() {
        use crate::time::{NS_PER_MS, NS_PER_US};
        // Mainline: past the 16 quick ACKs, one ACK per two full segments, marked or
        // not (a steady CE run is no codepoint change; the 6-CE rule is met first by
        // the every-second-segment ACK).
        for ecn in [Ecn::Ect1, Ecn::Ce] {
            assert_eq!(accecn_acks_per_segment(false, ecn, 3 * NS_PER_MS), [0, 1].repeat(10), "{ecn:?}");
        }
        // L4STeam: received_ce_pending saturates at 15 on every ECT/CE segment, and a
        // segment whose TSval advanced past ts_recent sets ICSK_ACK_NOW: segments
        // 3 ms apart are each ACKed at once, marked or not.
        for ecn in [Ecn::Ect1, Ecn::Ce] {
            assert_eq!(accecn_acks_per_segment(true, ecn, 3 * NS_PER_MS), vec![1; 20], "{ecn:?}");
        }
        // Segments 100 µs apart mostly share a TSval: only the first segment of a
        // new millisecond after an ACK is ACKed early; the rest go every second one.
        let fast = accecn_acks_per_segment(true, Ecn::Ect1, 100 * NS_PER_US);
        let n: usize = fast.iter().sum();
        assert!((10..=12).contains(&n), "{fast:?}");
    }

    #[test]
    fn hole_produces_immediate_sack_and_fill_acks_at_once() {
        let mut r = TcpReceiver::new(0, true, 2, 2, "cubic");
        let mut out = Outbox::default();
        for i in 0..20u64 {
            r.on_packet(&data(i * 1448, 1448), 1000 * (i + 1), &mut out);
        }
        out.clear();
        // Segment 20 lost; 21..23 arrive: each is ACKed at once with a growing SACK block.
        for i in 21..24u64 {
            r.on_packet(&data(i * 1448, 1448), 100_000 + i, &mut out);
        }
        assert_eq!(out.len(), 3);
        let last = out.last().unwrap();
        assert_eq!(last.tcp.ack, 20 * 1448);
        let set = out.sacks.get(last.tcp.sack);
        assert_eq!(set.num, 1);
        assert_eq!(set.blocks[0], SackBlock { start: 21 * 1448, end: 24 * 1448 });
        assert_eq!(last.wire_len, tcp_wire_len(0, 1), "the option's 12 bytes are on the wire");
        out.clear();
        r.on_packet(&data(20 * 1448, 1448), 200_000, &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].tcp.ack, 24 * 1448);
        assert!(!out[0].tcp.sack.is_some());
    }

    /// `tcp_sack_new_ofo_skb` (Linux ≥ 5.8): while SACKs are held by SACK compression,
    /// a segment that would add a SACK block beside two others first sends the held
    /// SACK with the blocks as they were, so no block leaves the option unreported.
    #[test]
    fn a_held_sack_is_sent_before_a_third_block_is_added() {
        let mut r = TcpReceiver::new(0, true, 2, 2, "cubic");
        let mut out = Outbox::default();
        // Past the quick ACKs (`QUICK_ACKS`), so that only SACK compression holds ACKs.
        let b = QUICK_ACKS + 20;
        for i in 0..b {
            r.on_packet(&data(i * 1448, 1448), 1000 * (i + 1), &mut out);
        }
        // Segment b lost; b+1..b+3 draw the three dupACKs at once, 24 is held (its
        // timer's slack is 10 µs: every segment below arrives within it).
        let t = 1_000_000;
        for i in b + 1..b + 5 {
            r.on_packet(&data(i * 1448, 1448), t + i, &mut out);
        }
        out.clear();
        // b+5 lost, b+6 opens a second block: still held.
        r.on_packet(&data((b + 6) * 1448, 1448), t + b + 6, &mut out);
        assert!(out.is_empty(), "a second block is held");
        // b+7 lost, b+8 would add a third: the held SACK leaves first, with two blocks.
        r.on_packet(&data((b + 8) * 1448, 1448), t + b + 8, &mut out);
        assert_eq!(out.len(), 1, "the held SACK is flushed");
        assert_eq!(out[0].tcp.ack, b * 1448);
        let set = out.sacks.get(out[0].tcp.sack);
        assert_eq!(
            set.blocks(),
            &[
                SackBlock { start: (b + 6) * 1448, end: (b + 7) * 1448 },
                SackBlock { start: (b + 1) * 1448, end: (b + 5) * 1448 }
            ]
        );
        // The held timer fires with the three blocks.
        out.clear();
        let at = r.next_timer().expect("segment b+8 is held");
        assert_eq!(at, t + b + 8 + TCP_COMP_SACK_SLACK_NS, "the engine's default: the slack alone");
        r.on_timer(at, &mut out);
        assert_eq!(out.sacks.get(out[0].tcp.sack).num, 3);
    }

    /// `tcp_options_fit_accecn`: an AccECN option that must carry `accecn_minlen`
    /// fields displaces SACK blocks beyond two; when it cannot fit even beside two,
    /// the blocks stay and the ACK carries no option.
    #[test]
    fn the_accecn_option_displaces_a_third_sack_block_when_it_fits_beside_two() {
        let third_dupack = |ecn: Ecn| {
            let (mut r, mut out) = accecn_handshake(TcpReceiver::new(0, true, 3, 2, "prague"));
            for i in 0..20u64 {
                let mut d = data(i * 1448, 1448);
                d.ecn = ecn;
                r.on_packet(&d, 1000 * (i + 1), &mut out);
            }
            // Holes at 20, 22, 24: the dupACKs for 21, 23 and 25 go at once.
            for i in [21u64, 23, 25] {
                out.clear();
                let mut d = data(i * 1448, 1448);
                d.ecn = ecn;
                r.on_packet(&d, 100_000 + i, &mut out);
            }
            assert_eq!(out.len(), 1);
            (out.sacks.get(out[0].tcp.sack).num, out[0].tcp.accecn.get().map(|o| o.fields))
        };
        // ECT(1) data: the option needs one field (e1b); two blocks leave room for two.
        assert_eq!(third_dupack(Ecn::Ect1), (2, Some(2)));
        // ECT(0) data: it needs all three (e0b last), which never fit beside two blocks.
        assert_eq!(third_dupack(Ecn::Ect0), (3, None));
    }

    #[test]
    fn duplicate_segment_gets_dsack() {
        let mut r = TcpReceiver::new(0, true, 2, 2, "cubic");
        let mut out = Outbox::default();
        r.on_packet(&data(0, 1448), 1000, &mut out);
        out.clear();
        r.on_packet(&data(0, 1448), 2000, &mut out);
        assert_eq!(out.len(), 1);
        let set = out.sacks.get(out[0].tcp.sack);
        assert!(set.dsack);
        assert_eq!(set.blocks(), &[SackBlock { start: 0, end: 1448 }]);
    }

    /// An AccECN receiving socket whose CC wants CE events (L4STeam tcp_bbr2.c with its
    /// default `ecn_enable`, as the PAM 2025 L4S receiver ran it): L4STeam/linux
    /// tcp_input.c:tcp_data_ecn_check returns only when ECN is off, so the CE state
    /// change reaches `bbr_cwnd_event` → `dctcp_ece_ack_update`, which flushes the held
    /// delayed ACK and ACKs the CE segment at once; a CUBIC receiver has no such event.
    #[test]
    fn an_accecn_bbr2_receiver_acks_ce_state_changes_at_once() {
        let acks = |cc: &str| {
            let (mut r, mut out) = accecn_handshake(TcpReceiver::new(0, true, 3, 2, cc));
            let n = QUICK_ACKS + 1;
            for i in 0..n {
                let mut d = data(i * 1448, 1448);
                d.ecn = Ecn::Ect1;
                r.on_packet(&d, 1000 * (i + 1), &mut out);
            }
            assert!(r.next_timer().is_some(), "the last segment waits for the delayed ACK");
            out.clear();
            let mut d = data(n * 1448, 1448);
            d.ecn = Ecn::Ce;
            r.on_packet(&d, 30_000, &mut out);
            out.iter().map(|a| a.tcp.ack / 1448 - n).collect::<Vec<u64>>()
        };
        assert_eq!(acks("bbr2-l4s"), [0, 1]);
        assert_eq!(acks("cubic"), [1]);
    }

    /// A DCTCP receiver over RFC 3168 feedback: its CC's `dctcp_ece_ack_update`
    /// flushes the delayed ACK with the old CE state, then ACKs the CE segment at
    /// once with ECE (RFC 8257 §3.2); a CUBIC receiver echoes ECE until CWR instead.
    #[test]
    fn dctcp_receiver_echoes_ce_state_changes_at_once() {
        let n = QUICK_ACKS + 1;
        for (cc, want) in [("dctcp", vec![(n, false), (n + 1, true)]), ("cubic", vec![(n + 1, true)])] {
            let mut r = TcpReceiver::new(0, true, 1, 2, cc);
            let mut out = Outbox::default();
            let mut syn = Packet::new(0, PacketKind::Syn);
            syn.tcp.ace = ecn::SYN_ACE_CLASSIC;
            r.on_packet(&syn, 0, &mut out);
            assert_eq!(r.ecn_mode, EcnMode::Rfc3168);
            // The quick ACKs, then the last segment waits for the delayed-ACK timer.
            for i in 0..n {
                let mut d = data(i * 1448, 1448);
                d.ecn = Ecn::Ect0;
                r.on_packet(&d, 1000 * (i + 1), &mut out);
            }
            assert!(r.next_timer().is_some());
            out.clear();
            let mut d = data(n * 1448, 1448);
            d.ecn = Ecn::Ce;
            r.on_packet(&d, 30_000, &mut out);
            let got: Vec<(u64, bool)> = out.iter().map(|a| (a.tcp.ack / 1448, a.tcp.ece())).collect();
            assert_eq!(got, want, "{cc}");
        }
    }
}
