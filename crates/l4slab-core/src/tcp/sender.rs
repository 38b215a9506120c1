//! The sending endpoint: Linux's `tcp_ack()` / `tcp_write_xmit()` machinery for a
//! bulk transfer (tcp.md §1.1, §1.2, §2).
//!
//! Per ACK, steps run in the order of tcp.md §1.1: SACK tagging, cumulative clean-up
//! with RTT samples, `in_ack_event`, TLP bookkeeping, the recovery state machine
//! (`tcp_fastretrans_alert`, RACK loss marking, CWR/Recovery entry), timer re-arm,
//! the rate sample, then congestion control (`cong_control`, or PRR / `cong_avoid`
//! and the stack pacing rate), retransmissions and new data.
//!
//! TSO/GSO (on by default, as Linux): an skb of up to `tso_segs` segments leaves
//! back to back and pacing acts per skb; GSO off gives one segment per skb.
//!
//! Simplifications (docs/engine.md): no SYN/data reordering, no undo of loss
//! reductions (DSACK/Eifel/F-RTO), no TSO deferral, GRO or TCP Small Queues (the
//! host queue is the NIC's serialisation only).

use super::ecn::{self, AccEcnSender, EcnMode};
use super::rtt::RttEstimator;
use super::*;
use crate::cc::{
    AckEventFlags, AckSample, CaEvent, CaState, CcSock, CongestionControl, RateSample, TCP_INFINITE_SSTHRESH,
};
use crate::config::TcpFlowConfig;
use crate::packet::{tcp_wire_len, Ecn, Packet, PacketKind};
use crate::time::{round_up_to_jiffy, Time, NS_PER_SEC, NS_PER_US};
use std::collections::VecDeque;

/// Per-segment scoreboard bits (`TCPCB_*`).
const SACKED: u8 = 1 << 0; // TCPCB_SACKED_ACKED
const LOST: u8 = 1 << 1; // TCPCB_LOST
const RETRANS: u8 = 1 << 2; // TCPCB_SACKED_RETRANS: a retransmission is in flight
const EVER_RETRANS: u8 = 1 << 3; // TCPCB_EVER_RETRANS
const DELIVERED: u8 = 1 << 4; // rate sample taken (delivered_mstamp cleared)
const APP_LIMITED: u8 = 1 << 5;

/// One transmitted, not yet cumulatively acknowledged segment (an skb of the
/// retransmit queue).
#[derive(Clone, Copy, Debug)]
struct Seg {
    seq: u64,
    end: u64,
    /// Last transmission time (`skb_mstamp_ns`).
    xmit: Time,
    /// Rate-sample state at the last transmission (`tcp_skb_cb->tx`).
    first_tx: Time,
    delivered_time: Time,
    delivered: u64,
    delivered_ce: u64,
    flags: u8,
}

impl Seg {
    #[inline]
    fn has(&self, f: u8) -> bool {
        self.flags & f != 0
    }
}

/// Kinds of the single retransmission timer (`icsk_pending`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum XmitTimer {
    Retrans,
    LossProbe,
    ReorderTimeout,
}

/// ACK processing flags (`FLAG_*`).
mod flag {
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
enum Phase {
    Closed,
    SynSent,
    Established,
}

/// RACK state (RFC 8985; tcp.md §2.7.2).
#[derive(Clone, Copy, Debug, Default)]
struct Rack {
    /// Send time and end_seq of the most recently sent delivered segment.
    xmit: Time,
    end_seq: u64,
    rtt_us: u64,
    advanced: bool,
    reo_wnd_steps: u32,
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

/// The sending TCP endpoint of one flow.
pub struct TcpSender {
    flow: u32,
    cc: Box<dyn CongestionControl>,
    /// The CC-visible socket state (cwnd, ssthresh, pacing rate, counters).
    pub tp: CcSock,
    rtt: RttEstimator,
    phase: Phase,
    init_cwnd: u32,
    mss: u32,
    /// Total bytes to send; `u64::MAX` for an unbounded transfer.
    app_bytes: u64,
    /// After this time no new data is written (iperf's `-t`).
    stop_at: Time,
    rwnd_bytes: u64,
    /// Segments whose first transmission the test harness drops.
    drop_segments: Vec<u64>,

    snd_una: u64,
    snd_nxt: u64,
    rtx: VecDeque<Seg>,
    packets_out: u32,
    sacked_out: u32,
    lost_out: u32,
    retrans_out: u32,
    /// Highest SACKed end sequence (`tcp_highest_sack_seq`).
    fack: u64,

    ca_state: CaState,
    high_seq: u64,
    prior_ssthresh: u32,
    prr_delivered: u32,
    prr_out: u32,
    reordering: u32,
    reord_seen: u32,
    rack: Rack,
    tlp_high_seq: u64,
    tlp_retrans: bool,
    retransmits_since_rto: u32,
    /// CWR flag to set on the next new data segment (RFC 3168 mode; issue: ECN).
    queue_cwr: bool,
    /// RFC 3168 ECN negotiated: CWR goes on the first new segment after a reduction.
    ecn_rfc3168: bool,
    /// This host's `tcp_ecn` and `tcp_ecn_option` sysctls.
    tcp_ecn: u8,
    ecn_option: u8,
    /// ACE value our SYN requested.
    syn_ace: u8,
    /// The negotiated mode.
    ecn_mode: EcnMode,
    /// AccECN decoding state.
    accecn: AccEcnSender,
    /// Option bytes every data segment carries (12 with the AccECN option).
    data_option_len: u32,
    /// Newest TSval seen on an ACK (AccECN processes ACKs whose timestamp advanced).
    last_ack_tsval: u32,

    // Rate sampling (tcp_rate.c).
    delivered: u64,
    delivered_ce: u64,
    delivered_time: Time,
    first_tx_time: Time,
    app_limited: u64,

    // cwnd validation (tcp_cwnd_validate).
    is_cwnd_limited: bool,
    max_packets_out: u32,
    cwnd_usage_seq: u64,

    // Timers.
    xmit_timer: Option<(XmitTimer, Time)>,
    syn_sent_at: Time,
    syn_retries: u32,
    /// Internal pacing (EDT): earliest departure of the next packet.
    wstamp: Time,
    paced: bool,
    /// The host runs fq: pace whatever the CC.
    fq_pacing: bool,
    /// TSO/GSO on: skbs of up to `tso_segs` segments (tcp.md §2.11).
    tso: bool,
    /// Pacing hrtimer: armed when the send loop stopped because `wstamp` was ahead.
    pacing_timer: Option<Time>,

    pub stats: SenderStats,
    start_time: Time,
}

impl TcpSender {
    pub fn new(flow: u32, cfg: &TcpFlowConfig, cc: Box<dyn CongestionControl>, stop_at: Time) -> Self {
        let paced = cc.flags().needs_pacing || cfg.fq_pacing;
        let mut tp = CcSock::new(cfg.mss, cfg.init_cwnd);
        tp.paced = paced;
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
            drop_segments: {
                let mut v = cfg.drop_segments.clone();
                v.sort_unstable();
                v
            },
            snd_una: 0,
            snd_nxt: 0,
            rtx: VecDeque::with_capacity(1024),
            packets_out: 0,
            sacked_out: 0,
            lost_out: 0,
            retrans_out: 0,
            fack: 0,
            ca_state: CaState::Open,
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
            ecn_mode: EcnMode::Off,
            accecn: AccEcnSender::default(),
            data_option_len: 0,
            last_ack_tsval: 0,
            delivered: 0,
            delivered_ce: 0,
            delivered_time: 0,
            first_tx_time: 0,
            app_limited: 0,
            is_cwnd_limited: false,
            max_packets_out: 0,
            cwnd_usage_seq: 0,
            xmit_timer: None,
            syn_sent_at: 0,
            syn_retries: 0,
            wstamp: 0,
            paced,
            fq_pacing: cfg.fq_pacing,
            tso: cfg.tso,
            pacing_timer: None,
            stats: SenderStats::default(),
            start_time: 0,
        }
    }

    /// Congestion control name.
    pub fn cc_name(&self) -> &'static str {
        self.cc.name()
    }

    /// Smoothed RTT in µs (0 before the first sample).
    pub fn srtt_us(&self) -> u64 {
        self.rtt.srtt_us()
    }

    /// The CC's α (DCTCP, Prague), if it has one.
    pub fn cc_alpha(&self) -> Option<f64> {
        self.cc.alpha()
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

    /// Whether the first transmission of the segment starting at `seq` is to be
    /// dropped by the test harness (drop injection).
    pub fn should_inject_drop(&self, pkt: &Packet) -> bool {
        !pkt.retrans
            && !self.drop_segments.is_empty()
            && self.drop_segments.binary_search(&(pkt.tcp.seq / self.mss as u64)).is_ok()
    }

    /// Open the connection: send the SYN.
    pub fn start(&mut self, now: Time, out: &mut Vec<Packet>) {
        self.start_time = now;
        self.phase = Phase::SynSent;
        self.send_syn(now, out);
    }

    fn send_syn(&mut self, now: Time, out: &mut Vec<Packet>) {
        let mut p = Packet::new(self.flow, PacketKind::Syn);
        p.wire_len = SYN_WIRE_LEN;
        p.tcp.tsval = ts_clock(now);
        p.retrans = self.syn_retries > 0;
        // ECN request (tcp.md §3.2); beyond the first SYN retransmission the ECN
        // flags are stripped (tcp_ecn_fallback), AccECN is still tried on the first.
        let flags = self.cc.flags();
        self.syn_ace = if self.syn_retries <= 1 { ecn::client_syn_ace(self.tcp_ecn, flags) } else { 0 };
        p.tcp.ace = self.syn_ace;
        p.ecn = ecn::syn_codepoint(flags);
        self.syn_sent_at = now;
        out.push(p);
        // SYN retransmission timer: 1 s, doubling (tcp.md §2.3).
        let rto = TCP_TIMEOUT_INIT_NS << self.syn_retries.min(6);
        self.xmit_timer = Some((XmitTimer::Retrans, now + rto));
    }

    /// Earliest pending timer (retransmission/TLP/reorder, or the pacing release).
    pub fn next_timer(&self) -> Option<Time> {
        let rtx = self.xmit_timer.map(|(_, t)| t);
        let pace = self.pacing_timer;
        match (rtx, pace) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn has_data_to_send(&self) -> bool {
        self.phase == Phase::Established && self.snd_nxt < self.app_bytes
    }

    /// Refresh the read-only part of the CC's view.
    #[inline]
    fn sync_tp(&mut self, now: Time) {
        let tp = &mut self.tp;
        tp.now = now;
        tp.srtt_us = self.rtt.srtt_us();
        tp.min_rtt_us = self.rtt.min_rtt_us;
        tp.packets_out = self.packets_out;
        tp.sacked_out = self.sacked_out;
        tp.lost_out = self.lost_out;
        tp.retrans_out = self.retrans_out;
        tp.delivered = self.delivered;
        tp.delivered_ce = self.delivered_ce;
        tp.snd_una = self.snd_una;
        tp.snd_nxt = self.snd_nxt;
        tp.ca_state = self.ca_state;
        tp.is_cwnd_limited = self.is_cwnd_limited;
        tp.max_packets_out = self.max_packets_out;
    }

    /// `tcp_packets_in_flight`.
    #[inline]
    fn in_flight(&self) -> u32 {
        (self.packets_out + self.retrans_out).saturating_sub(self.sacked_out + self.lost_out)
    }

    // ------------------------------------------------------------------ input

    /// Handle a packet from the receiver (SYN/ACK or ACK).
    pub fn on_packet(&mut self, pkt: &Packet, now: Time, out: &mut Vec<Packet>) {
        match (pkt.kind, self.phase) {
            (PacketKind::SynAck, Phase::SynSent) => self.on_synack(pkt, now, out),
            (PacketKind::Ack, Phase::Established) => {
                self.on_ack(pkt, now, out);
            }
            _ => {}
        }
    }

    fn on_synack(&mut self, pkt: &Packet, now: Time, out: &mut Vec<Packet>) {
        self.phase = Phase::Established;
        self.xmit_timer = None;
        self.ecn_mode = ecn::client_on_synack(pkt.tcp.ace, self.syn_ace, self.cc.flags());
        self.tp.ecn_mode = self.ecn_mode;
        self.ecn_rfc3168 = self.ecn_mode == EcnMode::Rfc3168;
        if self.ecn_mode == EcnMode::AccEcn && self.ecn_option >= 2 {
            // The AccECN option (3 counters, 12 B aligned) rides on every data segment.
            self.data_option_len = ecn::accecn_option_len(3);
        }
        // The SYN's RTT is the first sample (Karn: only if never retransmitted).
        if self.syn_retries == 0 {
            let m = (now - self.syn_sent_at) / NS_PER_US;
            self.rtt.sample(m.max(1), 0, 0);
            self.rtt.update_min_rtt(m as i64, false);
        } else if self.syn_retries > 1 {
            // More than one SYN retransmission: IW = 1 (tcp.md §2.2).
            self.tp.cwnd = 1;
        }
        if self.syn_retries <= 1 {
            self.tp.cwnd = self.init_cwnd;
        }
        self.sync_tp(now);
        self.cc.init(&mut self.tp);
        // A CC may give up ECN/pacing when the handshake did not give it what it
        // needs (Prague without AccECN becomes Reno).
        self.paced = self.cc.flags().needs_pacing || self.fq_pacing;
        self.tp.paced = self.paced;
        if !self.cc.has_cong_control() {
            self.update_pacing_rate();
        }
        self.write_xmit(now, out, false);
    }

    /// `tcp_ack`.
    fn on_ack(&mut self, pkt: &Packet, now: Time, out: &mut Vec<Packet>) {
        let ack = pkt.tcp.ack;
        if ack > self.snd_nxt {
            return; // acks unsent data: ignore
        }
        let prior_snd_una = self.snd_una;
        let prior_fack = if self.sacked_out > 0 { self.fack } else { self.snd_una };
        let prior_in_flight = self.in_flight();
        let prior_delivered = self.delivered;
        let prior_lost = self.lost_out;
        let mut fl: u32 = 0;
        let mut rs = RateSample { prior_in_flight, ..RateSample::default() };
        let mut first_sack_xmit: Option<Time> = None;
        let mut last_sack_xmit: Option<Time> = None;

        if ack > prior_snd_una {
            fl |= flag::SND_UNA_ADVANCED;
            self.retransmits_since_rto = 0;
        }

        // SACK tagging (tcp_sacktag_write_queue).
        if pkt.tcp.num_sack > 0 {
            let (f, first, last) = self.sacktag(pkt, now, &mut rs);
            fl |= f;
            first_sack_xmit = first;
            last_sack_xmit = last;
        }
        // RFC 3168 mode would set FLAG_ECE here (tcp.md §1.1 step 4); ECN
        // feedback modes arrive with the ECN issue.
        if ack < prior_snd_una {
            // Old ACK: only SACK information and the state machine.
            if fl & flag::CA_ALERT != 0 {
                self.fastretrans_alert(prior_snd_una, fl, now, &mut 0);
                self.xmit_retransmit_queue(now, out);
            }
            return;
        }

        // Cumulative clean-up (tcp_clean_rtx_queue) with RTT samples.
        let (f, first_ackt, last_ackt) = self.clean_rtx_queue(ack, now, prior_fack, &mut rs);
        fl |= f;
        self.snd_una = ack;

        // RTT (tcp_ack_update_rtt): oldest never-retransmitted newly acked packet for
        // the RTO estimator, the newest for the CC.
        let mut seq_rtt_us: i64 = first_ackt.map_or(-1, |t| ((now - t) / NS_PER_US) as i64);
        let mut ca_rtt_us: i64 = last_ackt.map_or(-1, |t| ((now - t) / NS_PER_US) as i64);
        if let Some(fs) = first_sack_xmit {
            let sack_rtt = ((now - fs) / NS_PER_US) as i64;
            if seq_rtt_us < 0 {
                seq_rtt_us = sack_rtt;
            }
            if let Some(ls) = last_sack_xmit {
                ca_rtt_us = ((now - ls) / NS_PER_US) as i64;
            }
        }
        if seq_rtt_us < 0 && fl & flag::DATA_ACKED != 0 && pkt.tcp.tsecr != 0 {
            // Timestamp path (ms resolution) when only retransmitted data was acked.
            let delta_ms = ts_clock(now).wrapping_sub(pkt.tcp.tsecr).max(1) as i64;
            seq_rtt_us = delta_ms * 1000;
            ca_rtt_us = seq_rtt_us;
        }
        rs.rtt_us = ca_rtt_us;
        let acked_sacked = (self.delivered - prior_delivered) as u32;
        if seq_rtt_us >= 0 {
            // A single packet acked with no SACK/ECE is probably a delayed ACK.
            let delayed = acked_sacked == 1 && fl & (flag::DATA_SACKED | flag::ECE) == 0;
            self.rtt.update_min_rtt(ca_rtt_us, delayed);
            self.rtt.sample(seq_rtt_us as u64, self.snd_una, self.snd_nxt);
            self.stats.rtt_sum_us += seq_rtt_us as u64;
            self.stats.rtt_samples += 1;
        }
        // ECN feedback (tcp.md §1.1 steps 4 and 8, §3.3, §3.5.6).
        match self.ecn_mode {
            EcnMode::Rfc3168 if pkt.tcp.ece => {
                fl |= flag::ECE;
                self.delivered_ce += acked_sacked as u64;
                rs.ece_delta = acked_sacked;
            }
            EcnMode::AccEcn => {
                let tsval_advanced = pkt.tcp.tsval > self.last_ack_tsval;
                if fl & flag::FORWARD_PROGRESS != 0 || tsval_advanced {
                    let bytes = self.snd_una.saturating_sub(prior_snd_una).max(acked_sacked as u64);
                    let sack_or_open =
                        pkt.tcp.num_sack > 0 || self.ca_state == CaState::Open || self.ca_state == CaState::Cwr;
                    let delta = self.accecn.process(
                        pkt.tcp.ace,
                        pkt.tcp.accecn,
                        acked_sacked,
                        bytes,
                        self.tp.mss,
                        sack_or_open,
                    );
                    if delta > 0 {
                        fl |= flag::ECE;
                        self.delivered_ce += delta as u64;
                        rs.ece_delta = delta;
                    }
                }
            }
            _ => {}
        }
        self.last_ack_tsval = self.last_ack_tsval.max(pkt.tcp.tsval);
        self.sync_tp(now);
        if acked_sacked > 0 {
            let sample = AckSample { pkts_acked: acked_sacked, rtt_us: ca_rtt_us, in_flight: prior_in_flight };
            self.cc.pkts_acked(&mut self.tp, &sample);
        }

        // in_ack_event (DCTCP's α update happens here, before the state machine).
        self.cc.in_ack_event(
            &mut self.tp,
            AckEventFlags { window_update: fl & flag::SND_UNA_ADVANCED != 0, ece: fl & flag::ECE != 0 },
        );

        // TLP bookkeeping (tcp_process_tlp_ack).
        if self.tlp_high_seq != 0 {
            self.process_tlp_ack(ack, fl, pkt.tcp.dsack, now);
        }

        // Recovery state machine on dubious ACKs.
        let mut rexmit = 0u8;
        let dubious = fl & flag::NOT_DUP == 0 || fl & flag::CA_ALERT != 0 || self.ca_state != CaState::Open;
        if dubious {
            fl = self.fastretrans_alert(prior_snd_una, fl, now, &mut rexmit);
        }
        if fl & flag::SET_XMIT_TIMER != 0 {
            self.set_xmit_timer(now);
        }

        // Rate sample (tcp_rate_gen) and congestion control.
        let lost_now = self.lost_out.saturating_sub(prior_lost);
        self.rate_gen(now, acked_sacked, lost_now, &mut rs);
        if self.snd_una >= self.app_bytes && self.stats.completed_at.is_none() {
            self.stats.completed_at = Some(now);
        }
        self.cong_control(fl, acked_sacked, lost_now, &rs, now);

        // Retransmissions first, then new data.
        if rexmit != 0 {
            self.xmit_retransmit_queue(now, out);
        }
        self.write_xmit(now, out, false);
    }

    /// Tag SACKed segments; returns (flags, earliest and latest xmit of newly SACKed
    /// never-retransmitted segments).
    fn sacktag(&mut self, pkt: &Packet, now: Time, rs: &mut RateSample) -> (u32, Option<Time>, Option<Time>) {
        let mut fl = 0;
        let mut first: Option<Time> = None;
        let mut last: Option<Time> = None;
        let mut reord = u64::MAX;
        let n = pkt.tcp.num_sack as usize;
        // Linux processes SACK blocks sorted by start sequence.
        let skip = if pkt.tcp.dsack {
            fl |= flag::DSACKING_ACK;
            self.stats.dsacks += 1;
            1
        } else {
            0
        };
        let mut blocks = pkt.tcp.sack;
        let blocks = &mut blocks[skip..n];
        blocks.sort_unstable_by_key(|b| b.start);
        for b in blocks.iter() {
            if b.end <= self.snd_una {
                continue;
            }
            let start_idx = self.rtx.partition_point(|s| s.end <= b.start);
            for i in start_idx..self.rtx.len() {
                let s = self.rtx[i];
                if s.seq >= b.end {
                    break;
                }
                if s.end > b.end || s.has(SACKED) {
                    continue;
                }
                // Newly SACKed.
                let mut seg = s;
                if seg.has(LOST) {
                    self.lost_out -= 1;
                }
                if seg.has(RETRANS) {
                    self.retrans_out -= 1;
                }
                seg.flags = (seg.flags | SACKED) & !(LOST | RETRANS);
                self.sacked_out += 1;
                self.delivered += 1;
                fl |= flag::DATA_SACKED;
                if !s.has(EVER_RETRANS) {
                    first = Some(first.map_or(s.xmit, |f: Time| f.min(s.xmit)));
                    last = Some(last.map_or(s.xmit, |l: Time| l.max(s.xmit)));
                    if s.end <= self.fack {
                        reord = reord.min(s.seq);
                    }
                }
                self.rack_advance(s.has(EVER_RETRANS), s.end, s.xmit, now);
                self.rate_skb_delivered(&mut seg, rs);
                self.fack = self.fack.max(seg.end);
                self.rtx[i] = seg;
            }
        }
        if reord != u64::MAX {
            self.check_sack_reordering(reord);
        }
        (fl, first, last)
    }

    /// Remove cumulatively acknowledged segments; returns (flags, first and last xmit
    /// of newly acked never-retransmitted segments).
    fn clean_rtx_queue(
        &mut self,
        ack: u64,
        now: Time,
        prior_fack: u64,
        rs: &mut RateSample,
    ) -> (u32, Option<Time>, Option<Time>) {
        let mut fl = 0;
        let mut first: Option<Time> = None;
        let mut last: Option<Time> = None;
        let mut reord = u64::MAX;
        while let Some(front) = self.rtx.front() {
            if front.end > ack {
                break;
            }
            let mut s = self.rtx.pop_front().unwrap();
            self.packets_out -= 1;
            if s.has(SACKED) {
                self.sacked_out -= 1;
            } else {
                if s.has(LOST) {
                    self.lost_out -= 1;
                }
                if s.has(RETRANS) {
                    self.retrans_out -= 1;
                }
                self.delivered += 1;
                if s.has(EVER_RETRANS) {
                    fl |= flag::RETRANS_DATA_ACKED;
                } else {
                    if first.is_none() {
                        first = Some(s.xmit);
                    }
                    last = Some(s.xmit);
                    if s.seq < reord {
                        reord = s.seq;
                    }
                }
                self.rack_advance(s.has(EVER_RETRANS), s.end, s.xmit, now);
            }
            self.rate_skb_delivered(&mut s, rs);
            fl |= flag::DATA_ACKED | flag::SET_XMIT_TIMER;
        }
        if self.rtx.is_empty() {
            self.fack = ack;
        }
        // Cumulatively acked never-retransmitted data below the prior highest SACK
        // means the network reordered (tcp_check_sack_reordering).
        if reord < prior_fack {
            self.check_sack_reordering(reord);
        }
        (fl, first, last)
    }

    /// `tcp_check_sack_reordering`.
    fn check_sack_reordering(&mut self, low_seq: u64) {
        if low_seq >= self.fack {
            return;
        }
        let metric = self.fack - low_seq;
        let mss = self.mss as u64;
        if metric > self.reordering as u64 * mss {
            self.reordering = (metric.div_ceil(mss) as u32).min(TCP_MAX_REORDERING);
        }
        self.reord_seen += 1;
    }

    /// `tcp_rack_advance`.
    fn rack_advance(&mut self, ever_retrans: bool, end_seq: u64, xmit: Time, now: Time) {
        let rtt_us = (now - xmit) / NS_PER_US;
        if ever_retrans && rtt_us < self.rtt.min_rtt_us as u64 {
            // Ambiguous: probably the original was delivered.
            return;
        }
        self.rack.advanced = true;
        self.rack.rtt_us = rtt_us;
        if rack_sent_after(xmit, self.rack.xmit, end_seq, self.rack.end_seq) {
            self.rack.xmit = xmit;
            self.rack.end_seq = end_seq;
        }
    }

    /// `tcp_rate_skb_delivered`.
    fn rate_skb_delivered(&mut self, s: &mut Seg, rs: &mut RateSample) {
        if s.has(DELIVERED) {
            return;
        }
        if rs.prior_mstamp == 0 || s.delivered > rs.prior_delivered {
            rs.prior_delivered = s.delivered;
            rs.prior_delivered_ce = s.delivered_ce;
            rs.is_app_limited = s.has(APP_LIMITED);
            rs.is_retrans = s.has(EVER_RETRANS);
            // Send interval of this flight, stored for rate_gen in `interval_us`.
            rs.interval_us = ((s.xmit - s.first_tx) / NS_PER_US) as i64;
            self.first_tx_time = s.xmit;
            rs.prior_mstamp = s.delivered_time;
        }
        s.flags |= DELIVERED;
    }

    /// `tcp_rate_gen`: finish the rate sample of this ACK.
    fn rate_gen(&mut self, now: Time, acked_sacked: u32, losses: u32, rs: &mut RateSample) {
        if self.app_limited != 0 && self.delivered > self.app_limited {
            self.app_limited = 0;
        }
        if acked_sacked > 0 {
            self.delivered_time = now;
        }
        rs.acked_sacked = acked_sacked;
        rs.losses = losses;
        if rs.prior_mstamp == 0 {
            rs.delivered = -1;
            rs.interval_us = -1;
            return;
        }
        let prior_time = rs.prior_mstamp;
        rs.delivered = (self.delivered - rs.prior_delivered) as i64;
        rs.delivered_ce = (self.delivered_ce - rs.prior_delivered_ce) as i64;
        let snd_us = rs.interval_us;
        let ack_us = ((now.saturating_sub(prior_time)) / NS_PER_US) as i64;
        rs.interval_us = snd_us.max(ack_us);
        if rs.interval_us < self.rtt.min_rtt_us as i64 {
            rs.interval_us = -1;
        }
    }

    // --------------------------------------------------------- state machine

    /// `tcp_fastretrans_alert` (tcp.md §2.6). Returns the updated flags.
    fn fastretrans_alert(&mut self, _prior_snd_una: u64, mut fl: u32, now: Time, rexmit: &mut u8) -> u32 {
        let ece = fl & flag::ECE != 0;
        if ece {
            self.prior_ssthresh = 0; // forbid undo of an ECN reduction
        }
        // D. Exit a reduction once high_seq is acknowledged.
        if self.ca_state != CaState::Open && self.snd_una >= self.high_seq {
            match self.ca_state {
                CaState::Cwr
                    // Exit only past high_seq, so the receiver has seen CWR.
                    if self.snd_una != self.high_seq => {
                        self.end_cwnd_reduction(now);
                        self.set_ca_state(CaState::Open);
                    }
                CaState::Recovery => {
                    // No undo is modelled: end the reduction (tcp_try_undo_recovery
                    // falls through to Open, then tcp_end_cwnd_reduction).
                    self.set_ca_state(CaState::Open);
                    self.end_cwnd_reduction(now);
                }
                _ => {}
            }
        }
        // E. Per state.
        match self.ca_state {
            CaState::Recovery => {
                fl = self.identify_packet_loss(fl, now);
            }
            CaState::Loss => {
                // tcp_process_loss: recovered once everything sent before the RTO is acked.
                if self.snd_una >= self.high_seq {
                    self.set_ca_state(CaState::Open);
                    return fl;
                }
                *rexmit = 1;
                fl = self.identify_packet_loss(fl, now);
                return fl;
            }
            _ => {
                fl = self.identify_packet_loss(fl, now);
                if self.lost_out == 0 {
                    // tcp_try_to_open.
                    if ece {
                        self.enter_cwr(now);
                    }
                    if self.ca_state != CaState::Cwr {
                        self.try_keep_open();
                    }
                    return fl;
                }
                // Loss is proven: fast recovery.
                self.enter_recovery(ece, now);
            }
        }
        *rexmit = 1;
        fl
    }

    /// `tcp_identify_packet_loss` with RACK.
    fn identify_packet_loss(&mut self, mut fl: u32, now: Time) -> u32 {
        if self.rtx.is_empty() {
            return fl;
        }
        let prior_retrans = self.retrans_out;
        if self.rack_mark_lost(now) {
            fl &= !flag::SET_XMIT_TIMER;
        }
        if prior_retrans > self.retrans_out {
            fl |= flag::LOST_RETRANS;
        }
        fl
    }

    /// `tcp_rack_reo_wnd` in µs.
    fn rack_reo_wnd_us(&self) -> u64 {
        if self.reord_seen == 0 && (self.ca_state >= CaState::Recovery || self.sacked_out >= self.reordering) {
            return 0;
        }
        let min_rtt = if self.rtt.min_rtt_us == u32::MAX { 0 } else { self.rtt.min_rtt_us as u64 };
        ((min_rtt >> 2) * self.rack.reo_wnd_steps as u64).min(self.rtt.srtt_us())
    }

    /// `tcp_rack_detect_loss`: mark lost every segment sent before the most recently
    /// delivered one by more than RACK.rtt + reo_wnd; returns the largest remaining
    /// wait (µs) of the others, 0 if none.
    fn rack_detect_loss(&mut self, now: Time) -> u64 {
        let reo_wnd = self.rack_reo_wnd_us();
        let mut timeout = 0u64;
        for i in 0..self.rtx.len() {
            let s = self.rtx[i];
            if s.has(SACKED) || (s.has(LOST) && !s.has(RETRANS)) {
                continue;
            }
            if !rack_sent_after(self.rack.xmit, s.xmit, self.rack.end_seq, s.end) {
                if s.has(EVER_RETRANS) {
                    continue; // retransmitted later; later originals may still qualify
                }
                break;
            }
            let elapsed = (now - s.xmit) / NS_PER_US;
            let wait = self.rack.rtt_us + reo_wnd;
            if elapsed >= wait {
                self.mark_lost(i);
            } else {
                timeout = timeout.max(wait - elapsed);
            }
        }
        timeout
    }

    /// `tcp_mark_skb_lost`.
    fn mark_lost(&mut self, i: usize) {
        let s = &mut self.rtx[i];
        if s.has(SACKED) {
            return;
        }
        if s.has(LOST) {
            if s.has(RETRANS) {
                // The retransmission itself was lost.
                s.flags &= !RETRANS;
                self.retrans_out -= 1;
            }
        } else {
            s.flags |= LOST;
            self.lost_out += 1;
        }
    }

    /// `tcp_rack_mark_lost`: returns whether the reorder timer was armed.
    fn rack_mark_lost(&mut self, now: Time) -> bool {
        if !self.rack.advanced {
            return false;
        }
        self.rack.advanced = false;
        let timeout_us = self.rack_detect_loss(now);
        if timeout_us > 0 {
            let t = round_up_to_jiffy(timeout_us * NS_PER_US) + TCP_TIMEOUT_MIN_NS;
            self.reset_xmit_timer(XmitTimer::ReorderTimeout, now + t.min(self.rtt.rto_ns));
            return true;
        }
        false
    }

    fn set_ca_state(&mut self, s: CaState) {
        self.cc.set_state(&mut self.tp, s);
        self.ca_state = s;
        self.tp.ca_state = s;
    }

    /// `tcp_try_keep_open`.
    fn try_keep_open(&mut self) {
        let any_retrans_done = self.retrans_out > 0 || self.rtx.front().is_some_and(|s| s.has(EVER_RETRANS));
        let state =
            if self.sacked_out + self.lost_out > 0 || any_retrans_done { CaState::Disorder } else { CaState::Open };
        if self.ca_state != state {
            self.set_ca_state(state);
            self.high_seq = self.snd_nxt;
        }
    }

    /// `tcp_init_cwnd_reduction`.
    fn init_cwnd_reduction(&mut self, now: Time) {
        self.high_seq = self.snd_nxt;
        self.tlp_high_seq = 0;
        self.tp.cwnd_cnt = 0;
        self.tp.prior_cwnd = self.tp.cwnd;
        self.prr_delivered = 0;
        self.prr_out = 0;
        self.sync_tp(now);
        self.tp.ssthresh = self.cc.ssthresh(&self.tp);
        self.queue_cwr = true;
    }

    /// `tcp_end_cwnd_reduction`.
    fn end_cwnd_reduction(&mut self, now: Time) {
        if self.cc.has_cong_control() {
            return;
        }
        // Linux: `ca_state == CWR || undo_marker`; without undo the marker is always set.
        if self.tp.ssthresh < TCP_INFINITE_SSTHRESH {
            self.tp.cwnd = self.tp.ssthresh;
        }
        self.sync_tp(now);
        self.cc.cwnd_event(&mut self.tp, CaEvent::CompleteCwr);
    }

    /// `tcp_enter_cwr`.
    fn enter_cwr(&mut self, now: Time) {
        self.prior_ssthresh = 0;
        if self.ca_state < CaState::Cwr {
            self.init_cwnd_reduction(now);
            self.set_ca_state(CaState::Cwr);
        }
    }

    /// `tcp_enter_recovery`.
    fn enter_recovery(&mut self, ece: bool, now: Time) {
        self.stats.recoveries += 1;
        self.prior_ssthresh = 0;
        if !(self.ca_state == CaState::Cwr || self.ca_state == CaState::Recovery) {
            if !ece {
                self.prior_ssthresh = self.tp.ssthresh;
            }
            self.init_cwnd_reduction(now);
        }
        self.set_ca_state(CaState::Recovery);
    }

    /// `tcp_process_tlp_ack`.
    fn process_tlp_ack(&mut self, ack: u64, fl: u32, dsack: bool, now: Time) {
        if ack < self.tlp_high_seq {
            return;
        }
        if !self.tlp_retrans {
            self.tlp_high_seq = 0;
        } else if dsack {
            // Original and probe both arrived: no loss.
            self.tlp_high_seq = 0;
        } else if ack > self.tlp_high_seq {
            // The probe repaired a loss: reduce once (CWR entered and ended at once).
            self.init_cwnd_reduction(now);
            self.set_ca_state(CaState::Cwr);
            self.end_cwnd_reduction(now);
            self.try_keep_open();
        } else if fl & (flag::SND_UNA_ADVANCED | flag::NOT_DUP | flag::DATA_SACKED) == 0 {
            self.tlp_high_seq = 0;
        }
    }

    /// `tcp_cong_control` (tcp.md §1.1 step 14).
    fn cong_control(&mut self, fl: u32, acked_sacked: u32, losses: u32, rs: &RateSample, now: Time) {
        self.sync_tp(now);
        if self.cc.has_cong_control() {
            self.cc.cong_control(&mut self.tp, rs);
            return;
        }
        if self.ca_state == CaState::Cwr || self.ca_state == CaState::Recovery {
            self.cwnd_reduction(acked_sacked, losses, fl);
        } else if self.may_raise_cwnd(fl) {
            self.cc.cong_avoid(&mut self.tp, acked_sacked);
        }
        self.update_pacing_rate();
    }

    /// `tcp_may_raise_cwnd`.
    fn may_raise_cwnd(&self, fl: u32) -> bool {
        if self.reordering > TCP_REORDERING {
            fl & flag::FORWARD_PROGRESS != 0
        } else {
            fl & flag::DATA_ACKED != 0
        }
    }

    /// PRR (`tcp_cwnd_reduction`, tcp.md §2.8).
    fn cwnd_reduction(&mut self, newly_acked_sacked: u32, newly_lost: u32, fl: u32) {
        if newly_acked_sacked == 0 || self.tp.prior_cwnd == 0 {
            return;
        }
        self.prr_delivered += newly_acked_sacked;
        let in_flight = self.in_flight() as i64;
        let ssthresh = self.tp.ssthresh as i64;
        let delta = ssthresh - in_flight;
        let mut sndcnt: i64 = if delta < 0 {
            let dividend = ssthresh as u64 * self.prr_delivered as u64 + self.tp.prior_cwnd as u64 - 1;
            (dividend / self.tp.prior_cwnd as u64) as i64 - self.prr_out as i64
        } else {
            let mut s = (self.prr_delivered as i64 - self.prr_out as i64).max(newly_acked_sacked as i64);
            if fl & flag::SND_UNA_ADVANCED != 0 && newly_lost == 0 {
                s += 1;
            }
            s.min(delta)
        };
        // Force a fast retransmit upon entering fast recovery.
        sndcnt = sndcnt.max(if self.prr_out > 0 { 0 } else { 1 });
        self.tp.cwnd = (in_flight + sndcnt).max(1) as u32;
    }

    /// `tcp_update_pacing_rate` (tcp.md §2.10), bytes per second.
    fn update_pacing_rate(&mut self) {
        let srtt_us8 = self.rtt.srtt_us8;
        let mut rate: u64 = self.mss as u64 * ((1_000_000 / 100) << 3);
        let ratio = if self.tp.cwnd < self.tp.ssthresh / 2 { TCP_PACING_SS_RATIO } else { TCP_PACING_CA_RATIO };
        rate *= ratio;
        rate *= self.tp.cwnd.max(self.packets_out) as u64;
        if srtt_us8 > 0 {
            rate /= srtt_us8;
        }
        self.tp.pacing_rate = rate;
    }

    // ----------------------------------------------------------------- timers

    fn reset_xmit_timer(&mut self, kind: XmitTimer, at: Time) {
        self.xmit_timer = Some((kind, at));
    }

    /// `tcp_set_xmit_timer`: a TLP if allowed, else the RTO.
    fn set_xmit_timer(&mut self, now: Time) {
        if !self.schedule_loss_probe(now, true) {
            self.rearm_rto(now);
        }
    }

    /// `tcp_rto_delta_us`: time until the RTO measured from the head's send time.
    fn rto_delta_ns(&self, now: Time) -> i64 {
        let head_xmit = self.rtx.front().map_or(now, |s| s.xmit);
        self.rtt.rto_ns as i64 - (now - head_xmit) as i64
    }

    /// `tcp_rearm_rto`.
    fn rearm_rto(&mut self, now: Time) {
        if self.packets_out == 0 {
            self.xmit_timer = None;
            return;
        }
        let mut rto = self.rtt.rto_ns;
        if matches!(self.xmit_timer, Some((XmitTimer::ReorderTimeout, _)) | Some((XmitTimer::LossProbe, _))) {
            let delta = self.rto_delta_ns(now).max(1) as u64;
            rto = round_up_to_jiffy(delta);
        }
        self.reset_xmit_timer(XmitTimer::Retrans, now + rto);
    }

    /// `tcp_schedule_loss_probe` (tcp.md §2.7.6).
    fn schedule_loss_probe(&mut self, now: Time, advancing_rto: bool) -> bool {
        if self.packets_out == 0 || !(self.ca_state == CaState::Open || self.ca_state == CaState::Cwr) {
            return false;
        }
        let srtt_us8 = self.rtt.srtt_us8;
        let mut timeout = if srtt_us8 > 0 {
            let mut t = round_up_to_jiffy((srtt_us8 >> 2) * NS_PER_US);
            t += if self.packets_out == 1 { self.rtt.rto_min_us * NS_PER_US } else { TCP_TIMEOUT_MIN_NS };
            t
        } else {
            TCP_TIMEOUT_INIT_NS
        };
        let rto_delta = if advancing_rto { self.rtt.rto_ns as i64 } else { self.rto_delta_ns(now) };
        if rto_delta > 0 {
            timeout = timeout.min(round_up_to_jiffy(rto_delta as u64));
        }
        self.reset_xmit_timer(XmitTimer::LossProbe, now + timeout);
        true
    }

    /// Timer callback: fire whatever is due.
    pub fn on_timer(&mut self, now: Time, out: &mut Vec<Packet>) {
        if let Some((kind, at)) = self.xmit_timer {
            if at <= now {
                self.xmit_timer = None;
                match (self.phase, kind) {
                    (Phase::SynSent, _) => {
                        self.syn_retries += 1;
                        self.send_syn(now, out);
                        return;
                    }
                    (Phase::Established, XmitTimer::Retrans) => self.retransmit_timer(now, out),
                    (Phase::Established, XmitTimer::LossProbe) => self.send_loss_probe(now, out),
                    (Phase::Established, XmitTimer::ReorderTimeout) => self.rack_reo_timeout(now, out),
                    _ => {}
                }
            }
        }
        if self.pacing_timer.is_some_and(|t| t <= now) {
            self.pacing_timer = None;
            if self.lost_out > self.retrans_out {
                self.xmit_retransmit_queue(now, out);
            }
            self.write_xmit(now, out, false);
        }
    }

    /// `tcp_retransmit_timer`: RTO expiry.
    fn retransmit_timer(&mut self, now: Time, out: &mut Vec<Packet>) {
        if self.packets_out == 0 {
            return;
        }
        self.stats.rto_count += 1;
        self.enter_loss(now);
        self.retransmits_since_rto += 1;
        self.retransmit_seg(0, now, out);
        // Exponential backoff (the next valid RTT sample recomputes the RTO).
        self.rtt.rto_ns = (self.rtt.rto_ns << 1).min(TCP_RTO_MAX_NS);
        self.reset_xmit_timer(XmitTimer::Retrans, now + self.rtt.rto_ns);
    }

    /// `tcp_enter_loss` (tcp.md §2.4).
    fn enter_loss(&mut self, now: Time) {
        if self.ca_state <= CaState::Disorder
            || self.high_seq <= self.snd_una
            || (self.ca_state == CaState::Loss && self.retransmits_since_rto == 0)
        {
            self.prior_ssthresh = self.tp.ssthresh;
            self.tp.prior_cwnd = self.tp.cwnd;
            self.sync_tp(now);
            self.tp.ssthresh = self.cc.ssthresh(&self.tp);
            self.cc.cwnd_event(&mut self.tp, CaEvent::Loss);
        }
        // tcp_timeout_mark_lost: the head always; others once RACK deems them old.
        let rack_rtt_ns = self.rack.rtt_us * NS_PER_US;
        for i in 0..self.rtx.len() {
            if i != 0 && now - self.rtx[i].xmit < rack_rtt_ns {
                continue; // sent too recently to be deemed lost yet
            }
            self.mark_lost(i);
        }
        self.tp.cwnd = self.in_flight() + 1;
        self.tp.cwnd_cnt = 0;
        self.set_ca_state(CaState::Loss);
        self.high_seq = self.snd_nxt;
        self.tlp_high_seq = 0;
        self.queue_cwr = true;
    }

    /// `tcp_send_loss_probe`.
    fn send_loss_probe(&mut self, now: Time, out: &mut Vec<Packet>) {
        if self.tlp_high_seq == 0 {
            let before = self.packets_out;
            if self.has_data_to_send() && now < self.stop_at {
                self.tlp_retrans = false;
                self.write_xmit(now, out, true);
            }
            if self.packets_out > before {
                self.probe_sent(now);
            } else if let Some(last) = self.rtx.len().checked_sub(1) {
                if !self.rtx[last].has(SACKED) {
                    self.retransmit_seg(last, now, out);
                    self.tlp_retrans = true;
                    self.probe_sent(now);
                }
            }
        }
        self.rearm_rto(now);
    }

    fn probe_sent(&mut self, _now: Time) {
        self.tlp_high_seq = self.snd_nxt;
        self.stats.tlp_count += 1;
        // icsk_pending = 0 so tcp_rearm_rto restarts the RTO from now.
        self.xmit_timer = None;
    }

    /// `tcp_rack_reo_timeout`.
    fn rack_reo_timeout(&mut self, now: Time, out: &mut Vec<Packet>) {
        let prior_in_flight = self.in_flight();
        let prior_lost = self.lost_out;
        let timeout_us = self.rack_detect_loss(now);
        if prior_in_flight != self.in_flight() {
            if self.ca_state != CaState::Recovery {
                self.enter_recovery(false, now);
                if !self.cc.has_cong_control() {
                    let newly_lost = self.lost_out.saturating_sub(prior_lost);
                    self.cwnd_reduction(1, newly_lost, 0);
                }
            }
            self.xmit_retransmit_queue(now, out);
        }
        if timeout_us > 0 {
            let t = round_up_to_jiffy(timeout_us * NS_PER_US) + TCP_TIMEOUT_MIN_NS;
            self.reset_xmit_timer(XmitTimer::ReorderTimeout, now + t);
        } else if !matches!(self.xmit_timer, Some((XmitTimer::Retrans, _))) {
            self.rearm_rto(now);
        }
    }

    // ----------------------------------------------------------------- output

    /// `tcp_xmit_retransmit_queue` (tcp.md §2.7.3).
    fn xmit_retransmit_queue(&mut self, now: Time, out: &mut Vec<Packet>) {
        if self.lost_out <= self.retrans_out {
            return;
        }
        let mut i = 0;
        while i < self.rtx.len() {
            if self.retrans_out >= self.lost_out {
                break;
            }
            if self.in_flight() >= self.tp.cwnd {
                break;
            }
            if self.paced && self.wstamp > now {
                self.pacing_timer = Some(self.wstamp);
                break;
            }
            let s = self.rtx[i];
            if s.has(LOST) && !s.has(SACKED) && !s.has(RETRANS) {
                self.retransmit_seg(i, now, out);
                if self.ca_state == CaState::Cwr || self.ca_state == CaState::Recovery {
                    self.prr_out += 1;
                }
            }
            i += 1;
        }
    }

    /// Retransmit the segment at queue index `i` (`__tcp_retransmit_skb`).
    fn retransmit_seg(&mut self, i: usize, now: Time, out: &mut Vec<Packet>) {
        let (seq, len) = {
            let s = &self.rtx[i];
            (s.seq, (s.end - s.seq) as u32)
        };
        if !self.rtx[i].has(RETRANS) {
            self.retrans_out += 1;
        }
        let (delivered, delivered_ce, dtime, ftx) = self.rate_tx_state(now);
        let s = &mut self.rtx[i];
        s.flags = (s.flags | RETRANS | EVER_RETRANS) & !(DELIVERED | APP_LIMITED);
        s.xmit = now;
        s.delivered = delivered;
        s.delivered_ce = delivered_ce;
        s.delivered_time = dtime;
        s.first_tx = ftx;
        self.stats.retransmits += 1;
        self.emit_data(seq, len, true, now, out);
        self.skb_sent(len as u64, now);
    }

    /// Rate-sample state stamped on a segment at transmission (`tcp_rate_skb_sent`).
    fn rate_tx_state(&mut self, now: Time) -> (u64, u64, Time, Time) {
        if self.packets_out == 0 {
            self.first_tx_time = now;
            self.delivered_time = now;
        }
        (self.delivered, self.delivered_ce, self.delivered_time, self.first_tx_time)
    }

    /// `tcp_write_xmit` for new data (tcp.md §1.2). `probe` sends one segment
    /// regardless of cwnd (TLP).
    fn write_xmit(&mut self, now: Time, out: &mut Vec<Packet>, probe: bool) {
        if self.phase != Phase::Established {
            return;
        }
        let mut sent_any = false;
        let mut cwnd_limited = false;
        let max_segs = self.tso_segs();
        // The skb being built: segments it may still take, payload bytes so far.
        // Its segments leave back to back; pacing acts per skb.
        let mut skb_room = 0u32;
        let mut skb_bytes = 0u64;
        while self.snd_nxt < self.app_bytes && now < self.stop_at {
            if skb_room == 0 {
                if skb_bytes > 0 {
                    self.skb_sent(std::mem::take(&mut skb_bytes), now);
                }
                if self.paced && self.wstamp > now && !probe {
                    // tcp_pacing_check: arm the pacing timer for the departure time.
                    self.pacing_timer = Some(self.wstamp);
                    break;
                }
                let in_flight = self.in_flight();
                if !probe && in_flight >= self.tp.cwnd {
                    cwnd_limited = true;
                    break;
                }
                // tcp_cwnd_test: one skb takes at most half the cwnd.
                let quota = if probe { 1 } else { (self.tp.cwnd - in_flight).min((self.tp.cwnd >> 1).max(1)) };
                skb_room = max_segs.min(quota).max(1);
            }
            if self.snd_nxt + self.mss as u64 > self.snd_una.saturating_add(self.rwnd_bytes) {
                break;
            }
            let seg = self.tp.mss.saturating_sub(self.data_option_len).max(1);
            let len = (self.app_bytes - self.snd_nxt).min(seg as u64) as u32;
            let seq = self.snd_nxt;
            let was_empty = self.packets_out == 0;
            if was_empty {
                self.sync_tp(now);
                self.cc.cwnd_event(&mut self.tp, CaEvent::TxStart);
            }
            let (delivered, delivered_ce, dtime, ftx) = self.rate_tx_state(now);
            let mut flags = 0;
            if self.app_limited != 0 {
                flags |= APP_LIMITED;
            }
            self.rtx.push_back(Seg {
                seq,
                end: seq + len as u64,
                xmit: now,
                first_tx: ftx,
                delivered_time: dtime,
                delivered,
                delivered_ce,
                flags,
            });
            self.snd_nxt += len as u64;
            self.packets_out += 1;
            if self.ca_state == CaState::Cwr || self.ca_state == CaState::Recovery {
                self.prr_out += 1;
            }
            self.emit_data(seq, len, false, now, out);
            skb_room -= 1;
            skb_bytes += len as u64;
            // tcp_event_new_data_sent: start the RTO if this is the only flight.
            if was_empty || matches!(self.xmit_timer, Some((XmitTimer::LossProbe, _))) {
                self.rearm_rto(now);
            }
            sent_any = true;
            if probe {
                break;
            }
        }
        if skb_bytes > 0 {
            self.skb_sent(skb_bytes, now);
        }
        if self.in_flight() >= self.tp.cwnd {
            cwnd_limited = true;
        }
        // tcp_cwnd_validate.
        if self.snd_una >= self.cwnd_usage_seq
            || cwnd_limited
            || (!self.is_cwnd_limited && self.packets_out > self.max_packets_out)
        {
            self.is_cwnd_limited = cwnd_limited;
            self.max_packets_out = self.packets_out;
            self.cwnd_usage_seq = self.snd_nxt;
        }
        if sent_any && !probe {
            self.schedule_loss_probe(now, false);
        }
    }

    /// IP-ECN codepoint of a data segment (tcp.md §3.1).
    fn data_codepoint(&self, retrans: bool) -> Ecn {
        let flags = self.cc.flags();
        match self.ecn_mode {
            EcnMode::Off => Ecn::NotEct,
            // RFC 3168 forbids ECT on retransmissions unless the CC needs ECN.
            EcnMode::Rfc3168 if retrans && !flags.needs_ecn => Ecn::NotEct,
            _ => self.cc.ect_codepoint(),
        }
    }

    /// The negotiated ECN mode.
    pub fn ecn_mode(&self) -> EcnMode {
        self.ecn_mode
    }

    /// Put one data segment on the wire, applying EDT pacing bookkeeping.
    fn emit_data(&mut self, seq: u64, len: u32, retrans: bool, now: Time, out: &mut Vec<Packet>) {
        let mut p = Packet::new(self.flow, PacketKind::Data);
        p.payload = len;
        p.wire_len = tcp_wire_len(len, 0) + self.data_option_len;
        p.retrans = retrans;
        p.ecn = self.data_codepoint(retrans);
        p.tcp.seq = seq;
        p.tcp.tsval = ts_clock(now);
        if self.ecn_rfc3168 && !retrans {
            p.tcp.cwr = std::mem::take(&mut self.queue_cwr);
        }
        out.push(p);
        self.stats.data_segments_sent += 1;
        self.stats.payload_bytes_sent += len as u64;
        self.stats.payload_sq_sum += (len as u128) * (len as u128);
        self.stats.pacing_rate_sum += self.tp.pacing_rate as u128;
        self.tp.lsndtime = now;
    }

    /// Segments per skb (`tcp_tso_segs`, tcp.md §2.11): 1 without TSO/GSO; else the
    /// CC's `tso_segs` hook (Prague, §7.9), else autosizing: ≈1 ms of data at the
    /// pacing rate plus a 64 KB term that halves every 512 µs of min RTT, ≥ 2.
    fn tso_segs(&self) -> u32 {
        if !self.tso {
            return 1;
        }
        // No skb grows beyond the device's gso_max_size (`tcp_xmit_size_goal`).
        let size_goal = (GSO_MAX_SIZE / self.tp.mss.max(1) as u64).max(1) as u32;
        if let Some(segs) = self.cc.tso_segs(&self.tp) {
            return segs.clamp(1, size_goal);
        }
        let mut bytes = self.tp.pacing_rate >> SK_PACING_SHIFT;
        let r = self.tp.min_rtt_us >> TCP_TSO_RTT_LOG;
        if r < 32 {
            bytes += GSO_MAX_SIZE >> r;
        }
        let segs = bytes.min(GSO_MAX_SIZE) / self.tp.mss.max(1) as u64;
        (segs as u32).max(TCP_MIN_TSO_SEGS).min(size_goal)
    }

    /// EDT bookkeeping after an skb of `bytes` payload left (`tcp_update_skb_after_send`,
    /// tcp.md §2.10): the next departure moves on by bytes/rate, less up to half of
    /// it as credit when the stack ran late; the first 10 segments are not paced.
    fn skb_sent(&mut self, bytes: u64, now: Time) {
        if !self.paced {
            return;
        }
        let prior = self.wstamp;
        self.wstamp = self.wstamp.max(now);
        let rate = self.tp.pacing_rate;
        if rate > 0 && self.stats.data_segments_sent >= 10 {
            let mut len_ns = bytes * NS_PER_SEC / rate;
            let credit = self.wstamp - prior;
            len_ns -= (len_ns / 2).min(credit);
            self.wstamp += len_ns;
        }
    }
}

/// `tcp_rack_sent_after`: was (t1, seq1) sent after (t2, seq2)?
#[inline]
fn rack_sent_after(t1: Time, t2: Time, seq1: u64, seq2: u64) -> bool {
    t1 > t2 || (t1 == t2 && seq1 > seq2)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::CcFlags;

    /// A paced CC whose `tso_segs` hook returns a fixed burst.
    struct FixedBurst(Option<u32>);

    impl CongestionControl for FixedBurst {
        fn name(&self) -> &'static str {
            "fixed-burst"
        }
        fn flags(&self) -> CcFlags {
            CcFlags { needs_pacing: true, ..CcFlags::default() }
        }
        fn ssthresh(&mut self, tp: &CcSock) -> u32 {
            tp.cwnd
        }
        fn tso_segs(&self, _tp: &CcSock) -> Option<u32> {
            self.0
        }
    }

    /// An established sender past its 10 unpaced segments, cwnd 100, pacing at
    /// `rate` payload bytes/s, 10 ms min RTT.
    fn sender(burst: Option<u32>, tso: bool, rate: u64) -> TcpSender {
        let cfg: TcpFlowConfig =
            serde_json::from_value(serde_json::json!({"cc": "fixed-burst", "rtt_ns": 10_000_000u64, "tso": tso}))
                .unwrap();
        let mut s = TcpSender::new(0, &cfg, Box::new(FixedBurst(burst)), Time::MAX);
        s.phase = Phase::Established;
        s.tp.cwnd = 100;
        s.tp.pacing_rate = rate;
        s.tp.min_rtt_us = 10_000;
        s.stats.data_segments_sent = 10;
        s.wstamp = 1_000_000; // on time at t = 1 ms: no late-sender credit
        s
    }

    #[test]
    fn a_tso_skb_leaves_back_to_back_and_is_paced_as_one() {
        let rate = 12_500_000; // 100 Mbit/s of payload
        let mut s = sender(Some(4), true, rate);
        let mut out = Vec::new();
        s.write_xmit(1_000_000, &mut out, false);
        assert_eq!(out.len(), 4, "one skb of tso_segs segments");
        let bytes: u64 = out.iter().map(|p| p.payload as u64).sum();
        assert_eq!(s.wstamp, 1_000_000 + bytes * NS_PER_SEC / rate, "EDT moves by the skb's bytes / rate");
        assert_eq!(s.pacing_timer, Some(s.wstamp));
        // Nothing more until the departure time, then the next skb.
        out.clear();
        s.write_xmit(s.wstamp - 1, &mut out, false);
        assert!(out.is_empty());
        s.write_xmit(s.wstamp, &mut out, false);
        assert_eq!(out.len(), 4);
    }

    #[test]
    fn a_late_sender_gets_up_to_half_an_skb_of_credit() {
        let rate = 12_500_000;
        let mut s = sender(Some(4), true, rate);
        let mut out = Vec::new();
        s.write_xmit(5_000_000, &mut out, false); // 4 ms late
        let bytes: u64 = out.iter().map(|p| p.payload as u64).sum();
        let len_ns = bytes * NS_PER_SEC / rate;
        assert_eq!(s.wstamp, 5_000_000 + len_ns - len_ns / 2);
    }

    #[test]
    fn without_tso_every_skb_is_one_segment() {
        let mut s = sender(Some(4), false, 12_500_000);
        let mut out = Vec::new();
        s.write_xmit(1_000_000, &mut out, false);
        assert_eq!(out.len(), 1);
        assert_eq!(s.wstamp, 1_000_000 + out[0].payload as u64 * NS_PER_SEC / 12_500_000);
    }

    #[test]
    fn tso_autosizing_is_1ms_of_data_plus_the_min_rtt_term() {
        // tcp.md §2.11: pacing_rate >> 10, + 64 KB >> (min_rtt_us >> 9), ≤ 64 KB, ≥ 2.
        let s = sender(None, true, 125_000_000); // 1 Gbit/s: 122 070 B per 2^-10 s → capped at 64 KB
        assert_eq!(s.tso_segs(), (65_536 / 1448) as u32);
        let s = sender(None, true, 12_500_000); // 100 Mbit/s: 12 207 B, min RTT 10 ms adds 64 KB >> 19 = 0
        assert_eq!(s.tso_segs(), 12_207 / 1448);
        let mut s = sender(None, true, 12_500_000);
        s.tp.min_rtt_us = 1_000; // 64 KB >> 1 = 32 KB more
        assert_eq!(s.tso_segs(), (12_207 + 32_768) / 1448);
        let s = sender(None, true, 125_000); // 1 Mbit/s: 122 B → the 2-segment floor
        assert_eq!(s.tso_segs(), TCP_MIN_TSO_SEGS);
    }

    #[test]
    fn one_skb_takes_at_most_half_the_cwnd() {
        // tcp_cwnd_test: quota = min(cwnd/2, cwnd − in_flight).
        let mut s = sender(Some(40), true, 12_500_000);
        s.tp.cwnd = 20;
        let mut out = Vec::new();
        s.write_xmit(1_000_000, &mut out, false);
        assert_eq!(out.len(), 10);
    }
}
