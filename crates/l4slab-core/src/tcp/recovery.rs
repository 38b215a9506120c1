//! RACK-TLP loss detection as Linux's `net/ipv4/tcp_recovery.c` (RFC 8985):
//! `tcp_rack_advance` (RFC 8985 §6.2 step 2, the most recently sent delivered
//! packet), the reordering window `tcp_rack_reo_wnd` (min_rtt/4 per step, 0 in recovery
//! before reordering was seen), `tcp_rack_detect_loss` and `tcp_rack_mark_lost`, and the
//! reorder timer `tcp_rack_reo_timeout`, each the function of that name in
//! `net/ipv4/tcp_recovery.c`.

use super::sender::*;

impl TcpSender {
    /// `tcp_rack_advance`.
    pub(super) fn rack_advance(&mut self, ever_retrans: bool, end_seq: u64, xmit: Time, now: Time) {
        if !self.rack_passes(ever_retrans, xmit, now) {
            return;
        }
        self.rack_advance_folded(xmit, (xmit, end_seq), now);
    }

    /// `tcp_rack_advance`'s ambiguity check: a retransmitted packet (S)ACKed sooner
    /// than the min RTT after its last transmission probably had its original
    /// delivered, and does not advance RACK.
    #[inline]
    pub(super) fn rack_passes(&self, ever_retrans: bool, xmit: Time, now: Time) -> bool {
        !(ever_retrans && (now - xmit) / NS_PER_US < self.tp.min_rtt_us as u64)
    }

    /// `tcp_rack_advance` for a run of delivered packets that pass
    /// [`rack_passes`](Self::rack_passes), in one update: the calls leave RACK's rtt
    /// from the last of them (sent at `last_xmit`) and RACK's reference the latest
    /// of its own and theirs under `tcp_rack_sent_after`, a total order on (xmit,
    /// end_seq), so `latest` (their latest) stands for them all.
    #[inline]
    pub(super) fn rack_advance_folded(&mut self, last_xmit: Time, latest: (Time, u64), now: Time) {
        self.rack.advanced = true;
        self.rack.rtt_us = (now - last_xmit) / NS_PER_US;
        if rack_sent_after(latest.0, self.rack.xmit, latest.1, self.rack.end_seq) {
            self.rack.xmit = latest.0;
            self.rack.end_seq = latest.1;
        }
    }

    /// `tcp_rack_reo_wnd` in µs.
    pub(super) fn rack_reo_wnd_us(&self) -> u64 {
        if self.reord_seen == 0 && (self.tp.ca_state >= CaState::Recovery || self.tp.sacked_out >= self.reordering) {
            return 0;
        }
        let min_rtt = if self.tp.min_rtt_us == u32::MAX { 0 } else { self.tp.min_rtt_us as u64 };
        ((min_rtt >> 2) * self.rack.reo_wnd_steps as u64).min(self.rtt.srtt_us())
    }

    /// `tcp_rack_detect_loss`: mark lost every segment sent before the most recently
    /// delivered one by more than RACK.rtt + reo_wnd; returns the largest remaining
    /// wait (µs) of the others, 0 if none.
    pub(super) fn rack_detect_loss(&mut self, now: Time) -> u64 {
        let reo_wnd = self.rack_reo_wnd_us();
        let wait = self.rack.rtt_us + reo_wnd;
        let (rack_xmit, rack_end) = (self.rack.xmit, self.rack.end_seq);
        let mut timeout = 0u64;
        // The packets examined are those in flight (not SACKed, not lost awaiting
        // retransmission) in sequence order, up to the first never-retransmitted one
        // not sent before RACK's reference packet; a retransmitted one not sent
        // before it is passed over. Originals are in sequence = send order, so they
        // are walked from the first (the index skips the rest); of the
        // retransmissions only those sent by RACK's packet can qualify, found in
        // send order as Linux's tsorted_sent_queue finds them. Marking follows in
        // sequence order.
        let mut marks = std::mem::take(&mut self.rtx.scratch);
        marks.clear();
        let mut bound = self.rtx.len();
        let mut next = self.rtx.next_original(0);
        while let Some(i) = next {
            let s = &self.rtx[i];
            if !rack_sent_after(rack_xmit, s.xmit, rack_end, s.end) {
                bound = i;
                break;
            }
            let elapsed = (now - s.xmit) / NS_PER_US;
            if elapsed >= wait {
                marks.push(i);
            } else {
                timeout = timeout.max(wait - elapsed);
            }
            next = self.rtx.next_original(i + 1);
        }
        let originals = marks.len();
        self.rtx.walk_retransmitted(rack_xmit, |i, s| {
            if i < bound && rack_sent_after(rack_xmit, s.xmit, rack_end, s.end) {
                let elapsed = (now - s.xmit) / NS_PER_US;
                if elapsed >= wait {
                    marks.push(i);
                } else {
                    timeout = timeout.max(wait - elapsed);
                }
            }
        });
        if marks.len() > originals {
            marks.sort_unstable();
            marks.dedup();
        }
        for &i in &marks {
            self.mark_skb_lost(i);
        }
        self.rtx.scratch = marks;
        timeout
    }

    /// `tcp_rack_mark_lost`: returns whether the reorder timer was armed.
    pub(super) fn rack_mark_lost(&mut self, now: Time) -> bool {
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

    /// `tcp_rack_reo_timeout`.
    pub(super) fn rack_reo_timeout(&mut self, now: Time, out: &mut Vec<Packet>) {
        let prior_in_flight = self.tp.in_flight();
        let prior_lost_out = self.tp.lost_out;
        let timeout_us = self.rack_detect_loss(now);
        if prior_in_flight != self.tp.in_flight() {
            if self.tp.ca_state != CaState::Recovery {
                self.enter_recovery(false);
                if !self.cc_cong_control {
                    let newly_lost = self.tp.lost_out.saturating_sub(prior_lost_out);
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
}

/// `tcp_rack_sent_after`: was (t1, seq1) sent after (t2, seq2)?
#[inline]
pub(super) fn rack_sent_after(t1: Time, t2: Time, seq1: u64, seq2: u64) -> bool {
    t1 > t2 || (t1 == t2 && seq1 > seq2)
}
