//! ACK processing as Linux's `net/ipv4/tcp_input.c`: `tcp_ack` with SACK tagging
//! (`tcp_sacktag_write_queue`), the cumulative clean-up (`tcp_clean_rtx_queue`),
//! RTT samples (`tcp_ack_update_rtt`), ECN feedback (`tcp_ecn_rcv_ecn_echo`,
//! AccECN `tcp_accecn_process`), the recovery state machine
//! (`tcp_fastretrans_alert`, `tcp_enter_recovery`, `tcp_enter_cwr`,
//! `tcp_enter_loss`, `tcp_mark_skb_lost`), PRR (`tcp_cwnd_reduction`, RFC 6937),
//! the `tcp_cong_control` dispatch with `tcp_update_pacing_rate`, and the
//! retransmission-timer re-arm (`tcp_rearm_rto`, `tcp_set_xmit_timer`).
//!
//! Per ACK the steps run in `tcp_ack`'s order: SACK tagging, clean-up with RTT
//! samples, ECN feedback, `pkts_acked`, `in_ack_event`, TLP bookkeeping, the state
//! machine (RACK loss marking, CWR/Recovery entry), timer re-arm, the rate sample,
//! then congestion control, retransmissions and new data.

use super::recovery::rack_sent_after;
use super::rtt::update_min_rtt;
use super::sender::*;

impl TcpSender {
    /// `tcp_rcv_synsent_state_process` + `tcp_init_transfer`: the SYN/ACK
    /// establishes the connection, negotiates ECN and gives the first RTT sample.
    pub(super) fn on_synack(&mut self, pkt: &Packet, now: Time, out: &mut Vec<Packet>) {
        self.phase = Phase::Established;
        self.xmit_timer = None;
        if !self.rwnd_fixed {
            // `snd_wnd` from the SYN/ACK's unscaled window (tcp_rcv_synsent_state_process).
            self.rwnd_bytes = pkt.tcp.window as u64;
            self.max_window = self.max_window.max(self.rwnd_bytes);
        }
        self.tp.ecn_mode = ecn::client_on_synack(pkt.tcp.ace, self.syn_ace, self.cc.flags());
        self.ecn_rfc3168 = self.tp.ecn_mode == EcnMode::Rfc3168;
        if self.tp.ecn_mode == EcnMode::AccEcn && self.ecn_option >= 2 {
            // The AccECN option (3 counters, 12 B aligned) rides on every data segment.
            self.data_option_len = ecn::accecn_option_len(3);
        }
        // The SYN's RTT is the first sample (Karn: only if never retransmitted).
        if self.syn_retries == 0 {
            let m = (now - self.syn_sent_at) / NS_PER_US;
            self.rtt.sample(m.max(1), 0, 0);
            self.tp.srtt_us = self.rtt.srtt_us();
            update_min_rtt(&mut self.tp.min_rtt_us, m as i64, false);
        } else if self.syn_retries > 1 {
            // More than one SYN retransmission: IW = 1 (tcp_init_transfer, RFC 6298 §5.7).
            self.tp.cwnd = 1;
        }
        if self.syn_retries <= 1 {
            self.tp.cwnd = self.init_cwnd;
        }
        self.cc.init(&mut self.tp);
        // A CC may give up ECN/pacing when the handshake did not give it what it
        // needs (Prague without AccECN becomes Reno).
        self.tp.paced = self.cc.flags().needs_pacing || self.fq_pacing;
        self.cc_cong_control = self.cc.has_cong_control();
        self.cc_ect = self.cc.ect_codepoint();
        self.cc_tx_in_flight = self.cc.reads_tx_in_flight();
        self.cc_pkts_acked = self.cc.has_pkts_acked();
        self.cc_in_ack_event = self.cc.has_in_ack_event();
        if !self.cc_cong_control {
            self.update_pacing_rate();
        }
        self.write_xmit(now, out, false);
    }

    /// `tcp_ack`.
    pub(super) fn on_ack(&mut self, pkt: &Packet, now: Time, out: &mut Outbox) {
        let ack = pkt.tcp.ack;
        // The ACK's SACK option, from the run's side table (freed by the simulator
        // once this callback returns).
        let sack = out.sacks.get(pkt.tcp.sack);
        if ack > self.tp.snd_nxt {
            return; // acks unsent data: ignore
        }
        let prior_snd_una = self.tp.snd_una;
        let prior_fack = if self.tp.sacked_out > 0 { self.fack } else { self.tp.snd_una };
        let prior_in_flight = self.tp.in_flight();
        let prior_delivered = self.tp.delivered;
        self.sacked_bytes = 0;
        let prior_lost_out = self.tp.lost_out;
        let prior_lost = self.tp.lost;
        let mut fl: u32 = 0;
        let mut rs = RateSample { prior_in_flight, ..RateSample::default() };
        let mut first_sack_xmit: Option<Time> = None;
        let mut last_sack_xmit: Option<Time> = None;

        if ack > prior_snd_una {
            fl |= flag::SND_UNA_ADVANCED;
            self.retransmits_since_rto = 0;
        }

        // SACK tagging (tcp_sacktag_write_queue).
        if sack.num > 0 {
            let (f, first, last) = self.sacktag(&sack, now, &mut rs);
            fl |= f;
            first_sack_xmit = first;
            last_sack_xmit = last;
        }
        if ack < prior_snd_una {
            // Old ACK: only SACK information and the state machine.
            if fl & flag::CA_ALERT != 0 {
                self.fastretrans_alert(prior_snd_una, fl, now, &mut 0);
                self.xmit_retransmit_queue(now, out);
            }
            return;
        }

        if !self.rwnd_fixed {
            // `tcp_ack_update_window`: the scaled window, taken from an ACK that advances
            // snd_una or offers more (`tcp_may_update_window`; the receiver sends no
            // data, so its sequence number never moves). The send window ends at
            // snd_una + snd_wnd (`tcp_wnd_end`).
            let nwin = (pkt.tcp.window as u64) << self.snd_wscale;
            if ack > prior_snd_una || nwin > self.rwnd_bytes {
                self.rwnd_bytes = nwin;
                self.max_window = self.max_window.max(nwin);
            }
        }
        // Cumulative clean-up (tcp_clean_rtx_queue) with RTT samples.
        let prior_sacked = self.tp.sacked_out;
        let prior_packets_out = self.tp.packets_out;
        let (f, first_ackt, last_ackt) = self.clean_rtx_queue(ack, now, prior_fack, &mut rs);
        fl |= f;
        self.tp.snd_una = ack;
        let pkts_acked = prior_packets_out - self.tp.packets_out;

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
        let acked_sacked = (self.tp.delivered - prior_delivered) as u32;
        if seq_rtt_us >= 0 {
            // A single packet acked with no SACK/ECE is probably a delayed ACK.
            let delayed = acked_sacked == 1 && fl & (flag::DATA_SACKED | flag::ECE) == 0;
            update_min_rtt(&mut self.tp.min_rtt_us, ca_rtt_us, delayed);
            self.rtt.sample(seq_rtt_us as u64, self.tp.snd_una, self.tp.snd_nxt);
            self.tp.srtt_us = self.rtt.srtt_us();
            self.stats.rtt_sum_us += seq_rtt_us as u64;
            self.stats.rtt_samples += 1;
        }
        // ECN feedback: RFC 3168 ECE counts every newly delivered packet as CE
        // (`tcp_ecn_rcv_ecn_echo`); AccECN takes the ACE/option delta
        // (`tcp_accecn_process`, draft-ietf-tcpm-accurate-ecn §3.2.2.5).
        match self.tp.ecn_mode {
            EcnMode::Rfc3168 if pkt.tcp.ece() => {
                fl |= flag::ECE;
                self.tp.delivered_ce += acked_sacked as u64;
                rs.ece_delta = acked_sacked;
            }
            EcnMode::AccEcn => {
                let tsval_advanced = pkt.tcp.tsval > self.last_ack_tsval;
                if fl & flag::FORWARD_PROGRESS != 0 || tsval_advanced {
                    // `sack_state.delivered_bytes`: the bytes newly SACKed
                    // (`tcp_sacktag_one`), replaced by the cumulative advance when
                    // snd_una moved (`tcp_clean_rtx_queue`, FLAG_ACKED): Linux 7.2 and
                    // L4STeam's AccECN trees ("tcp: AccECN needs to know delivered
                    // bytes", netdev RFC, March 2020).
                    let advance = self.tp.snd_una.saturating_sub(prior_snd_una);
                    let bytes = if advance > 0 { advance } else { self.sacked_bytes };
                    let sack_or_open =
                        sack.num > 0 || self.tp.ca_state == CaState::Open || self.tp.ca_state == CaState::Cwr;
                    let delta = self.accecn.process(
                        pkt.tcp.ace,
                        pkt.tcp.accecn.get(),
                        acked_sacked,
                        bytes,
                        self.tp.mss,
                        sack_or_open,
                    );
                    if delta > 0 {
                        fl |= flag::ECE;
                        self.tp.delivered_ce += delta as u64;
                        rs.ece_delta = delta;
                    }
                }
            }
            _ => {}
        }
        self.last_ack_tsval = self.last_ack_tsval.max(pkt.tcp.tsval);
        // FLAG_ACK_MAYBE_DELAYED (tcp_clean_rtx_queue): one runt packet newly acked,
        // nothing SACKed before, no loss or CE signal: likely a delayed ACK, so its
        // RTT may be inflated (BBR ignores it for min_rtt).
        rs.is_ack_delayed = first_ackt.is_some()
            && fl & flag::RETRANS_DATA_ACKED == 0
            && pkts_acked == 1
            && prior_sacked == 0
            && ack - prior_snd_una < self.segment_payload() as u64
            && rs.prior_delivered + 1 == self.tp.delivered
            && fl & flag::CA_ALERT == 0;
        if acked_sacked > 0 && self.cc_pkts_acked {
            let sample = AckSample { pkts_acked: acked_sacked, rtt_us: ca_rtt_us, in_flight: prior_in_flight };
            self.cc.pkts_acked(&mut self.tp, &sample);
        }

        // in_ack_event (DCTCP's α update happens here, before the state machine).
        if self.cc_in_ack_event {
            self.cc.in_ack_event(
                &mut self.tp,
                AckEventFlags { window_update: fl & flag::SND_UNA_ADVANCED != 0, ece: fl & flag::ECE != 0 },
            );
        }

        // TLP bookkeeping (tcp_process_tlp_ack).
        if self.tlp_high_seq != 0 {
            self.process_tlp_ack(ack, fl, sack.dsack);
        }

        // Recovery state machine on dubious ACKs.
        let mut rexmit = 0u8;
        let dubious = fl & flag::NOT_DUP == 0 || fl & flag::CA_ALERT != 0 || self.tp.ca_state != CaState::Open;
        if dubious {
            fl = self.fastretrans_alert(prior_snd_una, fl, now, &mut rexmit);
        }
        if fl & flag::SET_XMIT_TIMER != 0 {
            self.set_xmit_timer(now);
        }

        // Rate sample (tcp_rate_gen) and congestion control.
        rs.is_ece = fl & flag::ECE != 0;
        // rs.losses is the growth of tp->lost, as tcp_ack passes it to tcp_rate_gen
        // ("freshly marked lost"). PRR here still takes the growth of lost_out, which
        // is smaller when a packet marked lost earlier is (S)ACKed by this ACK or a
        // retransmission is lost again: kept, because changing it changes the
        // results of every loss-based CC (a known divergence, docs/engine.md).
        let lost_now = self.tp.lost_out.saturating_sub(prior_lost_out);
        let newly_lost = (self.tp.lost - prior_lost) as u32;
        self.rate_gen(now, acked_sacked, newly_lost, &mut rs);
        if self.tp.snd_una >= self.app_bytes && self.stats.completed_at.is_none() {
            self.stats.completed_at = Some(now);
        }
        self.cong_control(fl, acked_sacked, lost_now, &rs);

        // Retransmissions first, then new data.
        if rexmit != 0 {
            self.xmit_retransmit_queue(now, out);
        }
        self.write_xmit(now, out, false);
    }

    /// Tag SACKed segments; returns (flags, earliest and latest xmit of newly SACKed
    /// never-retransmitted segments).
    pub(super) fn sacktag(
        &mut self,
        sack: &SackSet,
        now: Time,
        rs: &mut RateSample,
    ) -> (u32, Option<Time>, Option<Time>) {
        let mut fl = 0;
        let mut first: Option<Time> = None;
        let mut last: Option<Time> = None;
        let mut reord = u64::MAX;
        let n = sack.num as usize;
        // Linux processes SACK blocks sorted by start sequence.
        let skip = if sack.dsack {
            fl |= flag::DSACKING_ACK;
            self.stats.dsacks += 1;
            1
        } else {
            0
        };
        let mut walk = self.rate_walk(rs);
        let mut blocks = sack.blocks;
        let blocks = &mut blocks[skip..n];
        blocks.sort_unstable_by_key(|b| b.start);
        for b in blocks.iter() {
            if b.end <= self.tp.snd_una {
                continue;
            }
            let start_idx = self.rtx.first_ending_after(b.start);
            // Only segments not SACKed yet are visited (tcp_sacktag_skip over what a
            // repeated block already covered): most of a repeated block is.
            let mut next = self.rtx.next_unsacked(start_idx);
            while let Some(i) = next {
                next = self.rtx.next_unsacked(i + 1);
                let r = &self.rtx[i];
                if r.seq >= b.end {
                    break;
                }
                if r.end > b.end {
                    continue;
                }
                // Newly SACKed (tcp_sacktag_one).
                let s = *r;
                if s.has(LOST) {
                    self.tp.lost_out -= 1;
                }
                if s.has(RETRANS) {
                    self.tp.retrans_out -= 1;
                }
                self.tp.sacked_out += 1;
                self.tp.delivered += 1;
                self.sacked_bytes += s.end - s.seq;
                fl |= flag::DATA_SACKED;
                if !s.has(EVER_RETRANS) {
                    first = Some(first.map_or(s.xmit, |f: Time| f.min(s.xmit)));
                    last = Some(last.map_or(s.xmit, |l: Time| l.max(s.xmit)));
                    if s.end <= self.fack {
                        reord = reord.min(s.seq);
                    }
                }
                self.rack_advance(s.has(EVER_RETRANS), s.end, s.xmit, now);
                walk.delivered(&s, self.rtx.slot(i));
                self.fack = self.fack.max(s.end);
                // SACKED, no longer LOST or RETRANS, and DELIVERED: Linux zeroes
                // tx.delivered_mstamp so a SACKed packet is not sampled again when it
                // is cumulatively acknowledged.
                self.rtx.mark_sacked(i);
            }
        }
        self.rate_walk_end(walk, rs);
        if reord != u64::MAX {
            self.check_sack_reordering(reord);
        }
        (fl, first, last)
    }

    /// Remove cumulatively acknowledged segments; returns (flags, first and last xmit
    /// of newly acked never-retransmitted segments).
    pub(super) fn clean_rtx_queue(
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
        // tcp_rack_advance for each newly delivered packet, applied once after the
        // loop (`rack_advance_folded`): the last passing packet's send time and the
        // latest passing (xmit, end_seq). A packet never retransmitted always passes.
        let mut rack_last: Option<Time> = None;
        let mut rack_latest: (Time, u64) = (0, 0);
        let mut walk = self.rate_walk(rs);
        while let Some(front) = self.rtx.front() {
            if front.end > ack {
                break;
            }
            let slot = self.rtx.slot(0);
            let s = self.rtx.pop_front().unwrap();
            self.tp.packets_out -= 1;
            if s.has(SACKED) {
                self.tp.sacked_out -= 1;
            } else {
                if s.has(LOST) {
                    self.tp.lost_out -= 1;
                }
                if s.has(RETRANS) {
                    self.tp.retrans_out -= 1;
                }
                self.tp.delivered += 1;
                let passes = if s.has(EVER_RETRANS) {
                    fl |= flag::RETRANS_DATA_ACKED;
                    self.rack_passes(true, s.xmit, now)
                } else {
                    if first.is_none() {
                        first = Some(s.xmit);
                    }
                    last = Some(s.xmit);
                    if s.seq < reord {
                        reord = s.seq;
                    }
                    true
                };
                if passes {
                    if rack_last.is_none() || rack_sent_after(s.xmit, rack_latest.0, s.end, rack_latest.1) {
                        rack_latest = (s.xmit, s.end);
                    }
                    rack_last = Some(s.xmit);
                }
            }
            walk.delivered(&s, slot);
            fl |= flag::DATA_ACKED | flag::SET_XMIT_TIMER;
        }
        self.rate_walk_end(walk, rs);
        if let Some(last_xmit) = rack_last {
            self.rack_advance_folded(last_xmit, rack_latest, now);
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
    pub(super) fn check_sack_reordering(&mut self, low_seq: u64) {
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

    /// `tcp_fastretrans_alert` (RFC 6675 §5, RFC 8985 §6.2; Linux state machine). Returns the updated flags.
    pub(super) fn fastretrans_alert(&mut self, _prior_snd_una: u64, mut fl: u32, now: Time, rexmit: &mut u8) -> u32 {
        let ece = fl & flag::ECE != 0;
        if ece {
            self.prior_ssthresh = 0; // forbid undo of an ECN reduction
        }
        // D. Exit a reduction once high_seq is acknowledged.
        if self.tp.ca_state != CaState::Open && self.tp.snd_una >= self.high_seq {
            match self.tp.ca_state {
                CaState::Cwr
                    // Exit only past high_seq, so the receiver has seen CWR.
                    if self.tp.snd_una != self.high_seq => {
                        self.end_cwnd_reduction();
                        self.set_ca_state(CaState::Open);
                    }
                CaState::Recovery => {
                    // No undo is modelled: end the reduction (tcp_try_undo_recovery
                    // falls through to Open, then tcp_end_cwnd_reduction).
                    self.set_ca_state(CaState::Open);
                    self.end_cwnd_reduction();
                }
                _ => {}
            }
        }
        // E. Per state.
        match self.tp.ca_state {
            CaState::Recovery => {
                fl = self.identify_packet_loss(fl, now);
            }
            CaState::Loss => {
                // tcp_process_loss: recovered once everything sent before the RTO is
                // acked (tcp_try_undo_recovery → Open, nothing to retransmit).
                if self.tp.snd_una >= self.high_seq {
                    self.set_ca_state(CaState::Open);
                } else {
                    *rexmit = 1;
                }
                fl = self.identify_packet_loss(fl, now);
                // tcp_fastretrans_alert, `case TCP_CA_Loss` (net/ipv4/tcp_input.c):
                // "Change state if cwnd is undone or retransmits are lost" — Open
                // again, or a retransmission RACK found lost (FLAG_LOST_RETRANS),
                // falls through to the default branch, which enters Recovery while
                // `lost_out` proves loss (tcp_time_to_recover): a new cwnd reduction
                // (Loss is not a reduction state for tcp_enter_recovery), ssthresh
                // and high_seq anew, Prague's `prague_state(Recovery)` halving.
                if !(self.tp.ca_state == CaState::Open || fl & flag::LOST_RETRANS != 0) {
                    return fl;
                }
                if self.tp.lost_out == 0 {
                    self.try_to_open(ece);
                    return fl;
                }
                self.enter_recovery(ece);
            }
            _ => {
                fl = self.identify_packet_loss(fl, now);
                if self.tp.lost_out == 0 {
                    self.try_to_open(ece);
                    return fl;
                }
                // Loss is proven: fast recovery.
                self.enter_recovery(ece);
            }
        }
        *rexmit = 1;
        fl
    }

    /// `tcp_try_to_open`: no loss proven (`tcp_time_to_recover` false): CWR on ECE,
    /// else stay Open / Disorder.
    fn try_to_open(&mut self, ece: bool) {
        if ece {
            self.enter_cwr();
        }
        if self.tp.ca_state != CaState::Cwr {
            self.try_keep_open();
        }
    }

    /// `tcp_identify_packet_loss` with RACK.
    pub(super) fn identify_packet_loss(&mut self, mut fl: u32, now: Time) -> u32 {
        if self.rtx.is_empty() {
            return fl;
        }
        let prior_retrans = self.tp.retrans_out;
        if self.rack_mark_lost(now) {
            fl &= !flag::SET_XMIT_TIMER;
        }
        if prior_retrans > self.tp.retrans_out {
            fl |= flag::LOST_RETRANS;
        }
        fl
    }

    /// `tcp_mark_skb_lost`: count the packet in `lost_out` (or, when its
    /// retransmission was lost too, take it out of `retrans_out`), count it in
    /// `tp->lost` and tell the CC (google/bbr v3 `tcp_notify_skb_loss_event`).
    pub(super) fn mark_skb_lost(&mut self, i: usize) {
        let s = self.rtx[i];
        if s.has(SACKED) {
            return;
        }
        if s.has(LOST) {
            if !s.has(RETRANS) {
                return;
            }
            // The retransmission itself was lost.
            self.rtx.set_flags(i, s.flags & !RETRANS);
            self.tp.retrans_out -= 1;
        } else {
            self.rtx.set_flags(i, s.flags | LOST);
            self.tp.lost_out += 1;
        }
        let info = SkbLostInfo { seq: s.seq, end_seq: s.end, pcount: 1, tx: s.tx(&self.tp) };
        self.tp.lost += 1;
        self.cc.skb_marked_lost(&mut self.tp, &info);
    }

    pub(super) fn set_ca_state(&mut self, s: CaState) {
        self.cc.set_state(&mut self.tp, s);
        self.tp.ca_state = s;
    }

    /// `tcp_try_keep_open`.
    pub(super) fn try_keep_open(&mut self) {
        let any_retrans_done = self.tp.retrans_out > 0 || self.rtx.front().is_some_and(|s| s.has(EVER_RETRANS));
        let state = if self.tp.sacked_out + self.tp.lost_out > 0 || any_retrans_done {
            CaState::Disorder
        } else {
            CaState::Open
        };
        if self.tp.ca_state != state {
            self.set_ca_state(state);
            self.high_seq = self.tp.snd_nxt;
        }
    }

    /// `tcp_init_cwnd_reduction`.
    pub(super) fn init_cwnd_reduction(&mut self) {
        self.high_seq = self.tp.snd_nxt;
        self.tlp_high_seq = 0;
        self.tp.cwnd_cnt = 0;
        self.tp.prior_cwnd = self.tp.cwnd;
        self.prr_delivered = 0;
        self.prr_out = 0;
        self.tp.ssthresh = self.cc.ssthresh(&self.tp);
        self.queue_cwr = true;
    }

    /// `tcp_end_cwnd_reduction`.
    pub(super) fn end_cwnd_reduction(&mut self) {
        if self.cc_cong_control {
            return;
        }
        // Linux: `ca_state == CWR || undo_marker`; without undo the marker is always set.
        if self.tp.ssthresh < TCP_INFINITE_SSTHRESH {
            self.tp.cwnd = self.tp.ssthresh;
        }
        self.cc.cwnd_event(&mut self.tp, CaEvent::CompleteCwr);
    }

    /// `tcp_enter_cwr`.
    pub(super) fn enter_cwr(&mut self) {
        self.prior_ssthresh = 0;
        if self.tp.ca_state < CaState::Cwr {
            self.init_cwnd_reduction();
            self.set_ca_state(CaState::Cwr);
        }
    }

    /// `tcp_enter_recovery`.
    pub(super) fn enter_recovery(&mut self, ece: bool) {
        self.stats.recoveries += 1;
        self.prior_ssthresh = 0;
        if !(self.tp.ca_state == CaState::Cwr || self.tp.ca_state == CaState::Recovery) {
            if !ece {
                self.prior_ssthresh = self.tp.ssthresh;
            }
            self.init_cwnd_reduction();
        }
        self.set_ca_state(CaState::Recovery);
    }

    /// `tcp_process_tlp_ack`.
    pub(super) fn process_tlp_ack(&mut self, ack: u64, fl: u32, dsack: bool) {
        if ack < self.tlp_high_seq {
            return;
        }
        if !self.tlp_retrans {
            self.tlp_high_seq = 0;
        } else if dsack {
            // Original and probe both arrived: no loss.
            self.tlp_high_seq = 0;
        } else if ack > self.tlp_high_seq {
            // The probe repaired a loss: reduce once (CWR entered and ended at once);
            // google/bbr v3 first tells the CC (BBRv3 counts it as a loss).
            self.cc.cwnd_event(&mut self.tp, CaEvent::TlpRecovery);
            self.init_cwnd_reduction();
            self.set_ca_state(CaState::Cwr);
            self.end_cwnd_reduction();
            self.try_keep_open();
        } else if fl & (flag::SND_UNA_ADVANCED | flag::NOT_DUP | flag::DATA_SACKED) == 0 {
            self.tlp_high_seq = 0;
        }
    }

    /// `tcp_cong_control`: a CC with `cong_control` (Prague, BBR) takes the whole
    /// update; otherwise PRR in CWR/Recovery, else `cong_avoid`, then the stack pacing rate.
    pub(super) fn cong_control(&mut self, fl: u32, acked_sacked: u32, losses: u32, rs: &RateSample) {
        if self.cc_cong_control {
            self.cc.cong_control(&mut self.tp, rs);
            return;
        }
        if self.tp.ca_state == CaState::Cwr || self.tp.ca_state == CaState::Recovery {
            self.cwnd_reduction(acked_sacked, losses, fl);
        } else if self.may_raise_cwnd(fl) {
            self.cc.cong_avoid(&mut self.tp, acked_sacked);
        }
        self.update_pacing_rate();
    }

    /// `tcp_may_raise_cwnd`.
    pub(super) fn may_raise_cwnd(&self, fl: u32) -> bool {
        if self.reordering > TCP_REORDERING {
            fl & flag::FORWARD_PROGRESS != 0
        } else {
            fl & flag::DATA_ACKED != 0
        }
    }

    /// PRR (`tcp_cwnd_reduction`, RFC 6937 with Linux's SSRB variant).
    pub(super) fn cwnd_reduction(&mut self, newly_acked_sacked: u32, newly_lost: u32, fl: u32) {
        if newly_acked_sacked == 0 || self.tp.prior_cwnd == 0 {
            return;
        }
        self.prr_delivered += newly_acked_sacked;
        let in_flight = self.tp.in_flight() as i64;
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

    /// `tcp_update_pacing_rate`, bytes per second: cwnd/srtt × 200 % in slow start
    /// (`tcp_pacing_ss_ratio`), × 120 % after (`tcp_pacing_ca_ratio`).
    pub(super) fn update_pacing_rate(&mut self) {
        let srtt_us8 = self.rtt.srtt_us8;
        let mut rate: u64 = self.mss as u64 * ((1_000_000 / 100) << 3);
        let ratio = if self.tp.cwnd < self.tp.ssthresh / 2 { TCP_PACING_SS_RATIO } else { TCP_PACING_CA_RATIO };
        rate *= ratio;
        rate *= self.tp.cwnd.max(self.tp.packets_out) as u64;
        if srtt_us8 > 0 {
            rate /= srtt_us8;
        }
        self.tp.pacing_rate = rate;
    }

    /// `tcp_set_xmit_timer`: a TLP if allowed, else the RTO.
    pub(super) fn set_xmit_timer(&mut self, now: Time) {
        if !self.schedule_loss_probe(now, true) {
            self.rearm_rto(now);
        }
    }

    /// `tcp_rto_delta_us`: time until the RTO measured from the head's send time.
    pub(super) fn rto_delta_ns(&self, now: Time) -> i64 {
        let head_xmit = self.rtx.front().map_or(now, |s| s.xmit);
        self.rtt.rto_ns as i64 - (now - head_xmit) as i64
    }

    /// `tcp_rearm_rto`.
    pub(super) fn rearm_rto(&mut self, now: Time) {
        if self.tp.packets_out == 0 {
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

    /// `tcp_enter_loss` (RTO: RFC 6298 §5, RFC 5681 §3.1 cwnd = 1 + in flight).
    pub(super) fn enter_loss(&mut self, now: Time) {
        if self.tp.ca_state <= CaState::Disorder
            || self.high_seq <= self.tp.snd_una
            || (self.tp.ca_state == CaState::Loss && self.retransmits_since_rto == 0)
        {
            self.prior_ssthresh = self.tp.ssthresh;
            self.tp.prior_cwnd = self.tp.cwnd;
            self.tp.ssthresh = self.cc.ssthresh(&self.tp);
            self.cc.cwnd_event(&mut self.tp, CaEvent::Loss);
        }
        // tcp_timeout_mark_lost: the head always; others once RACK deems them old.
        let rack_rtt_ns = self.rack.rtt_us * NS_PER_US;
        for i in 0..self.rtx.len() {
            if i != 0 && now - self.rtx[i].xmit < rack_rtt_ns {
                continue; // sent too recently to be deemed lost yet
            }
            self.mark_skb_lost(i);
        }
        self.tp.cwnd = self.tp.in_flight() + 1;
        self.tp.cwnd_cnt = 0;
        self.set_ca_state(CaState::Loss);
        self.high_seq = self.tp.snd_nxt;
        self.tlp_high_seq = 0;
        self.queue_cwr = true;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::reno::Reno;
    use crate::config::TcpFlowConfig;
    use crate::packet::SackBlock;
    use crate::time::NS_PER_MS;

    const MSS: u64 = 1448;

    /// The `tcp_sock` counters are the scoreboard's: nothing else holds a copy.
    fn assert_counters_match_queue(s: &TcpSender) {
        let count = |f: &dyn Fn(&Seg) -> bool| s.rtx.iter().filter(|g| f(g)).count() as u32;
        assert_eq!(s.tp.packets_out, s.rtx.len() as u32);
        assert_eq!(s.tp.sacked_out, count(&|g| g.has(SACKED)));
        assert_eq!(s.tp.lost_out, count(&|g| g.has(LOST) && !g.has(SACKED)));
        assert_eq!(s.tp.retrans_out, count(&|g| g.has(RETRANS)));
        assert_eq!(s.tp.snd_una, s.rtx.front().map_or(s.tp.snd_nxt, |g| g.seq));
    }

    /// A SYN/ACK offering the largest unscaled window (RFC 7323 §2.2).
    fn synack() -> Packet {
        let mut p = Packet::new(0, PacketKind::SynAck);
        p.tcp.window = u16::MAX;
        p
    }

    /// A sender of `cfg` whose handshake completed at 10 ms (a 10 ms SYN/ACK RTT sample):
    /// its initial window is out.
    fn established(cfg: serde_json::Value, cc: Box<dyn CongestionControl>) -> (TcpSender, Outbox) {
        let cfg: TcpFlowConfig = serde_json::from_value(cfg).unwrap();
        let mut s = TcpSender::new(0, &cfg, cc, Time::MAX);
        let mut out = Outbox::default();
        s.start(0, &mut out);
        s.on_packet(&synack(), 10 * NS_PER_MS, &mut out);
        (s, out)
    }

    /// A Reno sender without TSO at a 10 ms RTT, established ([`established`]).
    fn established_reno() -> (TcpSender, Outbox) {
        established(serde_json::json!({"cc": "reno", "rtt_ns": 10_000_000u64, "tso": false}), Box::new(Reno))
    }

    fn ack(out: &mut Outbox, ack: u64, sack: Option<(u64, u64)>, now: Time) -> Packet {
        let mut p = Packet::new(0, PacketKind::Ack);
        p.tcp.window = u16::MAX;
        p.tcp.ack = ack;
        p.tcp.tsval = ts_clock(now);
        if let Some((start, end)) = sack {
            let mut set = SackSet { num: 1, ..SackSet::default() };
            set.blocks[0] = SackBlock { start, end };
            p.tcp.sack = out.sacks.insert(set);
        }
        p
    }

    /// A `cong_control` CC that keeps the rate samples it is given.
    struct Samples(std::sync::Arc<std::sync::Mutex<Vec<RateSample>>>);

    impl CongestionControl for Samples {
        fn name(&self) -> &'static str {
            "samples"
        }
        fn ssthresh(&mut self, tp: &CcSock) -> u32 {
            tp.cwnd
        }
        fn has_cong_control(&self) -> bool {
            true
        }
        fn cong_control(&mut self, _tp: &mut CcSock, rs: &RateSample) {
            self.0.lock().unwrap().push(*rs);
        }
    }

    #[test]
    fn a_lone_runt_packet_acked_alone_may_be_a_delayed_ack() {
        let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let (mut s, mut out) = established(
            serde_json::json!({"cc": "reno", "rtt_ns": 10_000_000u64, "tso": false, "bytes": MSS + 100, "init_cwnd": 1}),
            Box::new(Samples(seen.clone())),
        );
        assert_eq!(s.tp.packets_out, 1);
        // The tail leaves when the first packet is acked: alone in flight.
        s.on_packet(&ack(&mut out, MSS, None, 20 * NS_PER_MS), 20 * NS_PER_MS, &mut out);
        assert_eq!(s.tp.packets_out, 1);
        s.on_packet(&ack(&mut out, MSS + 100, None, 60 * NS_PER_MS), 60 * NS_PER_MS, &mut out);
        let seen = seen.lock().unwrap();
        assert!(!seen[0].is_ack_delayed, "a full-sized packet");
        assert!(seen[1].is_ack_delayed, "the 100-byte tail, alone");
        assert_eq!((seen[1].delivered, seen[1].tx_in_flight, seen[1].last_end_seq), (1, 1, MSS + 100));
    }

    #[test]
    fn a_rack_loss_is_counted_once_in_the_tcp_sock_and_retransmitted() {
        let (mut s, mut out) = established_reno();
        assert_eq!((s.tp.srtt_us, s.tp.min_rtt_us), (10_000, 10_000));
        assert_eq!(s.tp.packets_out, 10, "IW10");
        assert_counters_match_queue(&s);
        // Segment 1 is lost: the ACK of segment 0, then SACKs of 2, 3, 4.
        out.clear();
        let t = 20 * NS_PER_MS;
        s.on_packet(&ack(&mut out, MSS, None, t), t, &mut out);
        assert_counters_match_queue(&s);
        assert_eq!((s.tp.delivered, s.tp.snd_una), (1, MSS));
        for k in 2..5 {
            let now = t + k * 10_000;
            s.on_packet(&ack(&mut out, MSS, Some((2 * MSS, (k + 1) * MSS)), now), now, &mut out);
            assert_counters_match_queue(&s);
        }
        // RACK (RFC 8985 §6.2): segment 1 was sent before the SACKed ones and has
        // been out for RACK.rtt; with 3 SACKed the reordering window is 0.
        assert_eq!(s.tp.ca_state, CaState::Recovery);
        assert_eq!((s.tp.sacked_out, s.tp.lost_out, s.tp.lost, s.tp.delivered), (3, 1, 1, 4));
        let rtx: Vec<_> = out.iter().filter(|p| p.retrans).collect();
        assert_eq!(rtx.len(), 1);
        assert_eq!(rtx[0].tcp.seq, MSS);
        assert_eq!(s.tp.retrans_out, 1);
        // The cumulative ACK of the repair ends recovery; the counters empty out.
        let now = 40 * NS_PER_MS;
        let all = s.tp.snd_nxt;
        s.on_packet(&ack(&mut out, all, None, now), now, &mut out);
        assert_counters_match_queue(&s);
        assert_eq!(s.tp.delivered, all / MSS, "every packet once, the repaired one too");
        assert_eq!((s.tp.lost_out, s.tp.retrans_out, s.tp.sacked_out, s.tp.lost), (0, 0, 0, 1));
    }

    /// After an RTO, a retransmission that RACK finds lost moves the sender from
    /// Loss to Recovery with a new reduction (tcp_fastretrans_alert, `case
    /// TCP_CA_Loss`: FLAG_LOST_RETRANS falls through to tcp_enter_recovery). Without
    /// it a sender whose retransmissions keep being dropped stays in Loss at the
    /// window it had, however many of its retransmissions are lost.
    #[test]
    fn a_lost_retransmission_after_an_rto_starts_a_recovery_with_a_new_reduction() {
        let (mut s, mut out) = established_reno();
        assert_eq!(s.tp.packets_out, 10, "IW10, all of it lost");
        // The loss probe, then the RTO: Loss, everything marked lost, the head
        // retransmitted.
        let mut t_rto = 0;
        while s.stats.rto_count == 0 {
            t_rto = s.xmit_timer.expect("a timer armed").1;
            s.on_timer(t_rto, &mut out);
        }
        out.clear();
        assert_eq!(s.tp.ca_state, CaState::Loss);
        // IW10 and the probe's new segment.
        let n = s.tp.packets_out;
        assert_eq!((n, s.tp.lost_out, s.tp.retrans_out), (11, 11, 1));
        // Let the window allow every lost segment out at once (as slow start in Loss
        // would over a few rounds): the rest retransmitted at t_rto too.
        s.tp.cwnd = n;
        s.xmit_retransmit_queue(t_rto, &mut out);
        assert_eq!((s.tp.retrans_out, out.len() as u32), (n, n - 1));
        assert_counters_match_queue(&s);
        // Meanwhile slow start in Loss grew the window to 40.
        s.tp.cwnd = 40;
        let (recoveries_before, lost_before) = (s.stats.recoveries, s.tp.lost);
        // One RTT later only the retransmission of segment 5 arrives: RACK (RFC 8985
        // §6.2) deems the retransmissions of 0..4, sent no later, lost.
        let now = t_rto + 10 * NS_PER_MS;
        out.clear();
        s.on_packet(&ack(&mut out, 0, Some((5 * MSS, 6 * MSS)), now), now, &mut out);
        assert_counters_match_queue(&s);
        // Their RETRANS bits cleared and counted in tp->lost again (tcp_mark_skb_lost).
        assert_eq!((s.tp.sacked_out, s.tp.lost_out, s.tp.lost - lost_before), (1, n - 1, 5));
        assert_eq!(s.tp.ca_state, CaState::Recovery, "Loss → Recovery on FLAG_LOST_RETRANS");
        assert_eq!(s.stats.recoveries, recoveries_before + 1);
        assert_eq!(s.high_seq, s.tp.snd_nxt, "tcp_init_cwnd_reduction");
        // A new reduction from the window of that moment: Reno's ssthresh = cwnd/2.
        assert_eq!((s.tp.prior_cwnd, s.tp.ssthresh), (40, 20));
        // PRR's forced fast retransmit: the head goes again at once.
        assert!(out.iter().any(|p| p.retrans && p.tcp.seq == 0));
    }
}
