//! The sending endpoint of one TCP flow: its state (the `tcp_sock`, shared with the
//! congestion control as [`CcSock`]) and the entry points the simulator calls.
//!
//! The machinery is split as Linux splits it: `input` (`tcp_input.c`: ACK
//! processing, the recovery state machine, PRR, `tcp_cong_control`),
//! `rate` (`tcp_rate.c`: delivery-rate sampling), `recovery`
//! (`tcp_recovery.c`: RACK), `timer` (`tcp_timer.c`: RTO, TLP and pacing
//! timers) and `output` (`tcp_output.c`: `tcp_write_xmit`, TSO sizing,
//! pacing, retransmission, the loss probe).
//!
//! TSO/GSO (on by default, as Linux): an skb of up to `tso_segs` segments leaves
//! back to back and pacing acts per skb; `tso = false` gives one segment per skb
//! (a model knob: Linux TCP forces GSO whatever the device offers, commit
//! 0a6b2a1dc2a2).
//!
//! TSO deferral (`tso_defer`) and receiver GRO (`gro`) are options, off by default;
//! TCP Small Queues acts only with fq on the host (`fq_pacing`).
//!
//! Simplifications (docs/engine.md): no SYN/data reordering, no undo of loss
//! reductions (DSACK/Eifel/F-RTO), no write-queue skb boundaries (the 64-KB skbs
//! `tcp_sendmsg` builds, which `tcp_tso_should_defer`'s "middle in queue" rule and
//! `tcp_mss_split_point` consult).

pub(super) use super::ecn::{self, AccEcnSender, EcnMode};
pub(super) use super::rtt::RttEstimator;
pub(super) use super::rtx_queue::{RtxQueue, Seg, DELIVERED, EVER_RETRANS, LOST, RETRANS, SACKED};
pub(super) use super::*;
pub(super) use crate::cc::{
    AckEventFlags, AckSample, CaEvent, CaState, CcSock, CongestionControl, RateSample, SkbLostInfo, SkbTx,
    TCP_INFINITE_SSTHRESH,
};
use crate::config::TcpFlowConfig;
pub(super) use crate::packet::{tcp_wire_len, Ecn, Outbox, Packet, PacketKind, SackSet};
pub(super) use crate::time::{round_up_to_jiffy, Time, NS_PER_SEC, NS_PER_US};
use std::collections::VecDeque;

/// Kinds of the single retransmission timer (`icsk_pending`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum XmitTimer {
    Retrans,
    LossProbe,
    ReorderTimeout,
}

/// ACK processing flags (`FLAG_*` in tcp_input.c).
pub(super) mod flag {
    pub const DATA_ACKED: u32 = 1 << 0;
    pub const RETRANS_DATA_ACKED: u32 = 1 << 1;
    pub const DATA_SACKED: u32 = 1 << 2;
    pub const ECE: u32 = 1 << 3;
    pub const SND_UNA_ADVANCED: u32 = 1 << 4;
    pub const DSACKING_ACK: u32 = 1 << 5;
    pub const SET_XMIT_TIMER: u32 = 1 << 6;
    pub const LOST_RETRANS: u32 = 1 << 7;
    pub const NOT_DUP: u32 = DATA_ACKED | SND_UNA_ADVANCED;
    pub const CA_ALERT: u32 = DATA_SACKED | ECE | DSACKING_ACK;
    pub const FORWARD_PROGRESS: u32 = DATA_ACKED | DATA_SACKED;
}

/// Connection phase of the client.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Phase {
    Closed,
    SynSent,
    Established,
}

/// RACK state (RFC 8985 §6.1; Linux `tp->rack`).
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Rack {
    /// Send time and end_seq of the most recently sent delivered segment.
    pub(super) xmit: Time,
    pub(super) end_seq: u64,
    pub(super) rtt_us: u64,
    pub(super) advanced: bool,
    pub(super) reo_wnd_steps: u32,
}

/// Sender counters for metrics.
#[derive(Clone, Debug, Default)]
pub struct SenderStats {
    pub data_segments_sent: u64,
    pub retransmits: u64,
    pub rto_count: u64,
    pub tlp_count: u64,
    pub recoveries: u64,
    pub rtt_sum_us: u64,
    pub rtt_samples: u64,
    pub dsacks: u64,
    /// Payload bytes of all data segments sent, and the sum of their squares.
    pub payload_bytes_sent: u64,
    pub payload_sq_sum: u128,
    /// Sum over data segments sent of the pacing rate at that moment, bytes/s.
    pub pacing_rate_sum: u128,
    /// Time the last byte of a sized transfer was acknowledged.
    pub completed_at: Option<Time>,
}

/// The sending TCP endpoint of one flow. Its fields are laid out in declaration
/// order (`repr(C)`) from a cache-line boundary, the per-ACK ones first, so an ACK
/// touches fewer of its lines: with hundreds of flows they are rarely in L1.
#[repr(C, align(64))]
pub struct TcpSender {
    // Read or written on every ACK or send.
    pub(super) cc: Box<dyn CongestionControl>,
    /// The `tcp_sock`: cwnd, ssthresh, pacing rate and every counter the CC sees
    /// (`snd_una`, `snd_nxt`, `packets_out`, `sacked_out`, `lost_out`,
    /// `retrans_out`, `delivered`, `delivered_ce`, `lost`, `srtt_us`, `min_rtt_us`,
    /// `ca_state`, …), kept here only.
    pub tp: CcSock,
    /// RTO state (`srtt_us`×8, `mdev`, `rttvar`, `icsk_rto`).
    pub(super) rtt: RttEstimator,
    pub(super) rack: Rack,
    /// The retransmit queue and its scoreboard index (`tcp/rtx_queue.rs`).
    pub(super) rtx: RtxQueue,
    pub(super) xmit_timer: Option<(XmitTimer, Time)>,
    /// Pacing hrtimer: armed when the send loop stopped because `wstamp` was ahead.
    pub(super) pacing_timer: Option<Time>,
    /// With fq on the host (`fq_pacing`), TCP does not pace itself: it hands each skb
    /// down at once, stamped with its EDT departure time, and fq holds it until then
    /// (net/sched/sch_fq.c:fq_dequeue honours `skb->tstamp`). These are the packets
    /// below TCP — counted in `packets_out`, not yet on the wire — with their
    /// departure time and their share of `skb->truesize`.
    pub(super) host_q: VecDeque<(Time, Packet, u32)>,
    /// `gso_max_size / mss` and a reciprocal of the MSS for `tso_segs`
    /// (`tcp/output.rs`), recomputed when `tp.mss` changes.
    pub(super) mss_div: std::cell::Cell<super::mss_div::MssDiv>,
    /// Segments whose first transmission the test harness drops.
    pub(super) drop_segments: Vec<u64>,
    /// Total bytes to send; `u64::MAX` for an unbounded transfer.
    pub(super) app_bytes: u64,
    /// After this time no new data is written (iperf's `-t`).
    pub(super) stop_at: Time,
    pub(super) rwnd_bytes: u64,
    /// `tp->max_window`: the largest window the peer offered (`tcp_ack_update_window`),
    /// which bounds the write queue's skbs (`tcp_bound_to_half_wnd`).
    pub(super) max_window: u64,
    /// End sequence of the write-queue skb at the send head (`tcp/output.rs`:
    /// `write_queue_head_len`): the application's bytes sit in skbs of `size_goal`.
    pub(super) wq_skb_end: u64,
    /// The scenario fixes the window (`rwnd_bytes`): the ACKs' window fields are not read.
    pub(super) rwnd_fixed: bool,
    /// The receiver's window scale from its SYN/ACK (`rx_opt.snd_wscale`): its kernel's
    /// `tcp_rmem[2]` decides it (`tcp/rcvbuf.rs`).
    pub(super) snd_wscale: u32,
    /// Highest SACKed end sequence (`tcp_highest_sack_seq`).
    pub(super) fack: u64,
    /// Payload bytes newly SACKed by the ACK being processed (`tcp_sacktag_one`'s
    /// `state->delivered_bytes`).
    pub(super) sacked_bytes: u64,
    pub(super) high_seq: u64,
    pub(super) tlp_high_seq: u64,
    /// `tp->cwnd_usage_seq` (tcp_cwnd_validate).
    pub(super) cwnd_usage_seq: u64,
    pub(super) flow: u32,
    pub(super) mss: u32,
    pub(super) prr_delivered: u32,
    pub(super) prr_out: u32,
    pub(super) reordering: u32,
    pub(super) retransmits_since_rto: u32,
    /// Option bytes every data segment carries (12 with the AccECN option).
    pub(super) data_option_len: u32,
    /// Newest TSval seen on an ACK (AccECN processes ACKs whose timestamp advanced).
    pub(super) last_ack_tsval: u32,
    pub(super) phase: Phase,
    /// RFC 3168 ECN negotiated: CWR goes on the first new segment after a reduction.
    pub(super) ecn_rfc3168: bool,
    /// CWR flag to set on the next new data segment (RFC 3168 §6.1.2).
    pub(super) queue_cwr: bool,
    /// The host runs fq: pace whatever the CC.
    pub(super) fq_pacing: bool,
    /// TSO/GSO on: skbs of up to `tso_segs` segments.
    pub(super) tso: bool,
    /// Whether the CC implements `cong_control` (Prague, BBR), read once when it is
    /// built and again after its `init` (a fallback to Reno changes the answer)
    /// instead of through its vtable twice per ACK.
    pub(super) cc_cong_control: bool,
    /// The CC's ECT codepoint for new data (`ect_codepoint`), read as `cc_cong_control`
    /// instead of through its vtable for every data segment.
    pub(super) cc_ect: Ecn,
    /// Whether the CC reads the send-time flight (`reads_tx_in_flight`), read as
    /// `cc_cong_control`.
    pub(super) cc_tx_in_flight: bool,
    /// Whether the CC implements `pkts_acked` and `in_ack_event` (`has_pkts_acked`,
    /// `has_in_ack_event`: Linux's NULL tests of the optional hooks), read as
    /// `cc_cong_control` instead of calling an empty hook through the vtable per ACK.
    pub(super) cc_pkts_acked: bool,
    pub(super) cc_in_ack_event: bool,
    /// TSO deferral (`tcp_tso_should_defer`) on.
    pub(super) tso_defer: bool,
    /// Deferral's head-ACK rule is the pre-2025 srtt/2 age (`TsoDeferAck::HalfSrtt`).
    pub(super) tso_defer_half_srtt: bool,
    /// The next segment handed down starts an skb (it carries the skb's overhead in
    /// `host_q_truesize`).
    pub(super) skb_overhead_due: bool,
    /// `TSQ_THROTTLED`: the send loop stopped on TCP Small Queues' limit and resumes
    /// when an skb leaves (`tcp_wfree` → `tcp_tsq_handler`).
    pub(super) tsq_throttled: bool,
    pub stats: SenderStats,
    /// The sending host's NIC interrupt moderation (`sender_rx_usecs_ns` > 0): ACKs
    /// closer than `rx-usecs` to the port's last interrupt wait in the RX ring for the
    /// next NAPI poll and reach TCP together, each processed in order at the poll time
    /// (tcp/gro.rs). `None`: each at its arrival. Asked on every ACK.
    pub(super) ack_napi: Option<super::gro::Gro>,

    // Rarely used.
    pub(super) init_cwnd: u32,
    pub(super) prior_ssthresh: u32,
    pub(super) reord_seen: u32,
    pub(super) tlp_retrans: bool,
    /// This host's `tcp_ecn` and `tcp_ecn_option` sysctls.
    pub(super) tcp_ecn: u8,
    pub(super) ecn_option: u8,
    /// ACE value our SYN requested.
    pub(super) syn_ace: u8,
    /// AccECN decoding state.
    pub(super) accecn: AccEcnSender,
    pub(super) syn_sent_at: Time,
    pub(super) syn_retries: u32,
    /// `sk_wmem_alloc` of the skbs below TCP (TCP Small Queues' measure).
    pub(super) host_q_truesize: u64,
    /// The SACK blocks of the ACKs `ack_napi` holds, in the same order.
    held_sacks: Vec<SackSet>,
    pub(super) start_time: Time,
}

/// A finished sender's retransmit queue, kept by a traffic source of many short
/// connections (`traffic/web.rs`) to build the next one without fresh memory.
pub struct SenderBuffers(RtxQueue);

/// Segments a new sender's retransmit ring has room for before it grows.
const INITIAL_RTX_SEGMENTS: usize = 64;

/// Bytes a new sender holds, its congestion control's state aside: the struct and
/// its retransmit queue's first allocations (`crate::memory`).
pub fn sender_state_bytes() -> usize {
    std::mem::size_of::<TcpSender>() + RtxQueue::heap_bytes(INITIAL_RTX_SEGMENTS)
}

impl TcpSender {
    pub fn new(flow: u32, cfg: &TcpFlowConfig, cc: Box<dyn CongestionControl>, stop_at: Time) -> Self {
        Self::with_buffers(flow, cfg, cc, stop_at, None)
    }

    /// As [`new`](Self::new), reusing the allocations of an earlier sender's
    /// buffers (reset to a fresh sender's state: the results are the same).
    pub fn with_buffers(
        flow: u32,
        cfg: &TcpFlowConfig,
        cc: Box<dyn CongestionControl>,
        stop_at: Time,
        bufs: Option<SenderBuffers>,
    ) -> Self {
        let rtx = match bufs {
            Some(SenderBuffers(mut q)) => {
                q.reset();
                q
            }
            None => RtxQueue::with_capacity(INITIAL_RTX_SEGMENTS),
        };
        let paced = cc.flags().needs_pacing || cfg.fq_pacing;
        let cc_cong_control = cc.has_cong_control();
        let cc_ect = cc.ect_codepoint();
        let cc_tx_in_flight = cc.reads_tx_in_flight();
        let cc_pkts_acked = cc.has_pkts_acked();
        let cc_in_ack_event = cc.has_in_ack_event();
        let mut tp = CcSock::new(cfg.mss, cfg.init_cwnd);
        tp.paced = paced;
        tp.ecn_low = cfg.ecn_low;
        // Seed 0 until the flow's builder hands its stream of the run's seed
        // (`traffic::tcp::build`).
        tp.rng = crate::rng::stream(0, crate::rng::Stream::Flow(flow));
        TcpSender {
            flow,
            cc,
            tp,
            rtt: RttEstimator::new(cfg.rto_min_ns),
            phase: Phase::Closed,
            init_cwnd: cfg.init_cwnd,
            mss: cfg.mss,
            app_bytes: cfg.bytes.unwrap_or(u64::MAX),
            stop_at,
            rwnd_bytes: cfg.rwnd_bytes.unwrap_or(u64::MAX),
            rwnd_fixed: cfg.rwnd_bytes.is_some(),
            max_window: cfg.rwnd_bytes.unwrap_or(0),
            wq_skb_end: 0,
            snd_wscale: super::rcvbuf::rcv_wscale(super::rcvbuf::tcp_rmem_max(cfg.receiver_rcvbuf)),
            drop_segments: {
                let mut v = cfg.drop_segments.clone();
                v.sort_unstable();
                v
            },
            rtx,
            fack: 0,
            sacked_bytes: 0,
            high_seq: 0,
            prior_ssthresh: 0,
            prr_delivered: 0,
            prr_out: 0,
            reordering: TCP_REORDERING,
            reord_seen: 0,
            rack: Rack { reo_wnd_steps: 1, ..Rack::default() },
            tlp_high_seq: 0,
            tlp_retrans: false,
            retransmits_since_rto: 0,
            queue_cwr: false,
            ecn_rfc3168: false,
            tcp_ecn: cfg.ecn,
            ecn_option: cfg.ecn_option,
            syn_ace: 0,
            accecn: AccEcnSender::default(),
            data_option_len: 0,
            last_ack_tsval: 0,
            cwnd_usage_seq: 0,
            xmit_timer: None,
            syn_sent_at: 0,
            syn_retries: 0,
            fq_pacing: cfg.fq_pacing,
            tso: cfg.tso,
            cc_cong_control,
            cc_ect,
            cc_tx_in_flight,
            cc_pkts_acked,
            cc_in_ack_event,
            tso_defer: cfg.tso && cfg.tso_defer,
            tso_defer_half_srtt: cfg.tso_defer_ack == crate::config::TsoDeferAck::HalfSrtt,
            pacing_timer: None,
            host_q: VecDeque::new(),
            host_q_truesize: 0,
            tsq_throttled: false,
            skb_overhead_due: false,
            mss_div: std::cell::Cell::new(super::mss_div::MssDiv::EMPTY),
            ack_napi: (cfg.sender_rx_usecs_ns > 0).then(|| super::gro::Gro::new(cfg.sender_rx_usecs_ns)),
            held_sacks: Vec::with_capacity(if cfg.sender_rx_usecs_ns > 0 { super::gro::NAPI_POLL_WEIGHT } else { 0 }),
            stats: SenderStats::default(),
            start_time: 0,
        }
    }

    /// Take this sender's buffers for a later connection (the sender keeps an
    /// empty queue and must not send again).
    pub fn take_buffers(&mut self) -> SenderBuffers {
        SenderBuffers(std::mem::replace(&mut self.rtx, RtxQueue::empty()))
    }

    /// Congestion control name.
    pub fn cc_name(&self) -> &'static str {
        self.cc.name()
    }

    /// Smoothed RTT in µs (0 before the first sample).
    pub fn srtt_us(&self) -> u64 {
        self.tp.srtt_us
    }

    /// The CC's α (DCTCP, Prague), if it has one.
    pub fn cc_alpha(&self) -> Option<f64> {
        self.cc.alpha()
    }

    /// The CC's model state for the per-flow series (`cc_state`).
    pub fn cc_state(&self) -> crate::cc::CcState {
        self.cc.cc_state(&self.tp)
    }

    /// Current payload bytes per full segment (Prague may shrink it).
    pub fn segment_payload(&self) -> u32 {
        self.tp.mss.saturating_sub(self.data_option_len)
    }

    /// Data payload bytes sent (incl. retransmissions).
    pub fn payload_bytes_sent(&self) -> u64 {
        self.stats.payload_bytes_sent
    }

    /// cwnd in packets.
    pub fn cwnd(&self) -> u32 {
        self.tp.cwnd
    }

    /// `sk_pacing_rate`, payload bytes per second.
    pub fn pacing_rate(&self) -> u64 {
        self.tp.pacing_rate
    }

    /// The negotiated ECN mode.
    pub fn ecn_mode(&self) -> EcnMode {
        self.tp.ecn_mode
    }

    /// Whether the first transmission of the segment starting at `seq` is to be
    /// dropped by the test harness (drop injection).
    pub fn should_inject_drop(&self, pkt: &Packet) -> bool {
        !pkt.retrans
            && !self.drop_segments.is_empty()
            && self.drop_segments.binary_search(&(pkt.tcp.seq / self.mss as u64)).is_ok()
    }

    /// SYN retransmissions so far (the 1 s, 2 s, ... handshake timeouts).
    pub fn syn_retransmits(&self) -> u32 {
        self.syn_retries
    }

    /// Whether any segment is to be dropped by the test harness.
    pub fn injects_drops(&self) -> bool {
        !self.drop_segments.is_empty()
    }

    /// Open the connection: send the SYN (`tcp_connect`).
    pub fn start(&mut self, now: Time, out: &mut Outbox) {
        self.tp.now = now;
        self.start_time = now;
        self.phase = Phase::SynSent;
        self.send_syn(now, out);
    }

    /// A packet from the receiver reaches the sending host's NIC. Without interrupt
    /// moderation TCP handles it at once; with it (Intel's ITR throttle, tcp/gro.rs),
    /// at once too if the port's last interrupt is `rx-usecs` or more ago, else it
    /// waits for the NAPI poll at the end of that interval (or a full `NAPI_POLL_WEIGHT`).
    /// Pure ACKs are not merged by GRO (`tcp_gro_receive` flushes a segment without
    /// payload), so the poll hands them to TCP one by one, in arrival order.
    pub fn on_packet(&mut self, pkt: &Packet, now: Time, out: &mut Outbox) {
        match self.ack_napi.as_mut() {
            Some(g) => {
                // The run frees the ACK's SACK entry when this call returns (the
                // packet left the network): keep a copy of its blocks with the held packet.
                self.held_sacks.push(out.sacks.get(pkt.tcp.sack));
                if g.hold(pkt, now) {
                    self.ack_poll(now, out);
                }
            }
            None => self.process_packet(pkt, now, out),
        }
    }

    /// The NAPI poll of the sending host: every held packet goes up the stack now
    /// (`napi_poll` → `netif_receive_skb` → `tcp_v4_rcv` → `tcp_rcv_established`,
    /// whose `tcp_mstamp_refresh` stamps each with the poll's time).
    fn ack_poll(&mut self, now: Time, out: &mut Outbox) {
        let Some(g) = self.ack_napi.as_mut() else { return };
        let held = g.take(now);
        let sacks = std::mem::take(&mut self.held_sacks);
        for (pkt, set) in held.iter().zip(sacks.iter()) {
            // The held blocks re-enter the table only while TCP reads them.
            let mut pkt = *pkt;
            pkt.tcp.sack = if set.blocks().is_empty() { crate::packet::SackRef::NONE } else { out.sacks.insert(*set) };
            self.process_packet(&pkt, now, out);
            out.sacks.free(pkt.tcp.sack);
        }
        self.held_sacks = sacks;
        self.held_sacks.clear();
        if let Some(g) = self.ack_napi.as_mut() {
            g.count(held.len());
            g.give_back(held);
        }
    }

    /// ACK batches (NAPI polls) and the packets in them, when moderation is on.
    pub fn ack_polls(&self) -> Option<(u64, u64)> {
        self.ack_napi.as_ref().map(|g| (g.gro_packets, g.gro_segments))
    }

    /// Handle a packet from the receiver (SYN/ACK or ACK) in TCP.
    fn process_packet(&mut self, pkt: &Packet, now: Time, out: &mut Outbox) {
        // tcp_mstamp_refresh: one clock for the whole segment's processing.
        self.tp.now = now;
        match (pkt.kind, self.phase) {
            (PacketKind::SynAck, Phase::SynSent) => self.on_synack(pkt, now, out),
            (PacketKind::Ack, Phase::Established) => self.on_ack(pkt, now, out),
            _ => {}
        }
        if self.fq_pacing {
            self.fq_service(now, out);
        }
    }

    /// Timer callback: fire whatever is due (`tcp_write_timer_handler`, the pacing
    /// hrtimer).
    pub fn on_timer(&mut self, now: Time, out: &mut Outbox) {
        if self.ack_napi.as_ref().and_then(super::gro::Gro::poll_at).is_some_and(|t| t <= now) {
            self.ack_poll(now, out);
        }
        self.tp.now = now;
        self.timer_handler(now, out);
        if self.fq_pacing {
            self.fq_service(now, out);
        }
    }

    /// Earliest pending timer (retransmission/TLP/reorder, or the pacing release).
    pub fn next_timer(&self) -> Option<Time> {
        let rtx = self.xmit_timer.map(|(_, t)| t);
        let pace = match (self.pacing_timer, self.host_q.front().map(|e| e.0)) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        let t = match (rtx, pace) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        match (t, self.ack_napi.as_ref().and_then(super::gro::Gro::poll_at)) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    pub(super) fn has_data_to_send(&self) -> bool {
        self.phase == Phase::Established && self.tp.snd_nxt < self.app_bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::NS_PER_MS;
    use std::sync::{Arc, Mutex};

    const MSS: u64 = 1448;

    /// A `cong_control` CC that records, per ACK, the clock TCP stamped it with
    /// (`tp.now`, `tcp_mstamp_refresh`), the packets delivered so far and the rate
    /// sample's interval.
    struct Clock(Arc<Mutex<Vec<(Time, u64, i64)>>>);

    impl CongestionControl for Clock {
        fn name(&self) -> &'static str {
            "clock"
        }
        fn ssthresh(&mut self, tp: &CcSock) -> u32 {
            tp.cwnd
        }
        fn has_cong_control(&self) -> bool {
            true
        }
        fn cong_control(&mut self, tp: &mut CcSock, rs: &RateSample) {
            self.0.lock().unwrap().push((tp.now, tp.delivered, rs.interval_us));
        }
    }

    /// A SYN/ACK offering the largest unscaled window (RFC 7323 §2.2).
    fn synack() -> Packet {
        let mut p = Packet::new(0, PacketKind::SynAck);
        p.tcp.window = u16::MAX;
        p
    }

    fn ack(ack: u64, now: Time) -> Packet {
        let mut p = Packet::new(0, PacketKind::Ack);
        p.tcp.window = u16::MAX;
        p.tcp.ack = ack;
        p.tcp.tsval = ts_clock(now);
        p
    }

    /// Three ACKs 10 µs apart reach a sender with `sender_rx_usecs_ns` (or 0 = off);
    /// the simulator's loop is driven by hand (`next_timer` → `on_timer`). Returns
    /// what the CC saw per ACK.
    fn three_acks(rx_usecs_ns: u64) -> Vec<(Time, u64, i64)> {
        let cfg: TcpFlowConfig = serde_json::from_value(serde_json::json!({
            "cc": "reno", "rtt_ns": 10_000_000u64, "tso": false, "sender_rx_usecs_ns": rx_usecs_ns,
        }))
        .unwrap();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let mut s = TcpSender::new(0, &cfg, Box::new(Clock(seen.clone())), Time::MAX);
        let mut out = Outbox::default();
        s.start(0, &mut out);
        let deliver = |s: &mut TcpSender, pkt: &Packet, at: Time, out: &mut Outbox| {
            // Fire every timer due before `at`, as the event loop would.
            while let Some(t) = s.next_timer().filter(|&t| t <= at) {
                s.on_timer(t, out);
            }
            s.on_packet(pkt, at, out);
        };
        deliver(&mut s, &synack(), 10 * NS_PER_MS, &mut out);
        for k in 0..3u64 {
            let at = 20 * NS_PER_MS + k * 10_000;
            deliver(&mut s, &ack((k + 1) * MSS, at), at, &mut out);
        }
        let end = 21 * NS_PER_MS;
        while let Some(t) = s.next_timer().filter(|&t| t <= end) {
            s.on_timer(t, &mut out);
        }
        if rx_usecs_ns > 0 {
            // The SYN/ACK and the first ACK each reach a quiet port (polled at once);
            // the other two share the poll 50 µs after the first ACK's interrupt.
            assert_eq!(s.ack_polls(), Some((3, 4)));
        } else {
            assert_eq!(s.ack_polls(), None);
        }
        let v = seen.lock().unwrap().clone();
        v
    }

    #[test]
    fn acks_within_rx_usecs_are_processed_together_at_the_poll_in_order() {
        let v = three_acks(50_000);
        // The first ACK on a quiet port raises its interrupt at once (ITR throttle);
        // the next two arrive within the 50 µs interval and are processed together at
        // its end, in order.
        let t0 = 20 * NS_PER_MS;
        let poll = t0 + 50_000;
        assert_eq!(v.iter().map(|e| (e.0, e.1)).collect::<Vec<_>>(), vec![(t0, 1), (poll, 2), (poll, 3)]);
    }

    #[test]
    fn without_moderation_each_ack_is_processed_at_its_arrival() {
        let v = three_acks(0);
        let t0 = 20 * NS_PER_MS;
        assert_eq!(v.iter().map(|e| (e.0, e.1)).collect::<Vec<_>>(), vec![(t0, 1), (t0 + 10_000, 2), (t0 + 20_000, 3)]);
    }

    #[test]
    fn a_batch_shortens_the_rate_samples_ack_interval() {
        // tcp_rate.c:tcp_rate_gen: interval = max(send interval, ACK interval). The
        // three segments left back to back at the SYN/ACK, so the send interval is
        // ~0 and the ACK interval (from the SYN/ACK's processing, the
        // delivered_mstamp the segments were sent with) rules. Without moderation the
        // three intervals are 10 µs apart; with it, ACKs 2 and 3 share one poll and
        // so one interval, 50 µs after ACK 1's.
        let off = three_acks(0);
        let on = three_acks(50_000);
        assert_eq!(off[2].2 - off[0].2, 20, "ACK-clocked intervals grow 10 µs per ACK: {off:?}");
        assert_eq!(on[1].2 - on[0].2, 50, "the held ACK waits for the interval's end: {on:?}");
        assert_eq!(on[2].2 - on[1].2, 0, "one poll: the same interval for both ACKs: {on:?}");
    }

    /// A held ACK keeps its SACK blocks: the run frees (and may reuse) the ACK's
    /// table entry as soon as `on_packet` returns, so the poll must read a copy.
    #[test]
    fn a_held_ack_keeps_its_sack_blocks_after_the_run_reuses_its_table_entry() {
        let sacked_after_poll = |rx_usecs_ns: u64| {
            let cfg: TcpFlowConfig = serde_json::from_value(serde_json::json!({
                "cc": "reno", "rtt_ns": 10_000_000u64, "tso": false, "sender_rx_usecs_ns": rx_usecs_ns,
            }))
            .unwrap();
            let mut s = TcpSender::new(0, &cfg, Box::new(Clock(Arc::new(Mutex::new(Vec::new())))), Time::MAX);
            let mut out = Outbox::default();
            s.start(0, &mut out);
            s.on_packet(&synack(), 10 * NS_PER_MS, &mut out);
            while let Some(t) = s.next_timer().filter(|&t| t <= 10 * NS_PER_MS) {
                s.on_timer(t, &mut out);
            }
            // ACK of segment 0 SACKing segment 2 (segment 1 missing), 20 µs after the
            // SYN/ACK's interrupt: it is held until the throttle interval ends.
            let mut set = SackSet { num: 1, ..SackSet::default() };
            set.blocks[0] = crate::packet::SackBlock { start: 2 * MSS, end: 3 * MSS };
            let at = 10 * NS_PER_MS + 20_000;
            let mut pkt = ack(MSS, at);
            pkt.tcp.sack = out.sacks.insert(set);
            s.on_packet(&pkt, at, &mut out);
            // The ACK left the network: the run frees its entry, another ACK reuses it.
            out.sacks.free(pkt.tcp.sack);
            let other = out.sacks.insert(SackSet::default());
            while let Some(t) = s.next_timer().filter(|&t| t <= 21 * NS_PER_MS) {
                s.on_timer(t, &mut out);
            }
            out.sacks.free(other);
            assert_eq!(out.sacks.live(), 0, "the poll re-inserts a held set only while TCP reads it");
            s.tp.sacked_out
        };
        assert_eq!(sacked_after_poll(0), 1);
        assert_eq!(sacked_after_poll(50_000), 1);
    }
}
