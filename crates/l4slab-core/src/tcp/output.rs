//! Transmission as Linux's `net/ipv4/tcp_output.c`: `tcp_connect` (the SYN),
//! `tcp_write_xmit` with `tcp_cwnd_test`, TSO sizing (`tcp_tso_autosize`,
//! `tcp_tso_segs`), EDT pacing (`tcp_pacing_check`, `tcp_update_skb_after_send`),
//! `tcp_cwnd_validate`, the retransmit path (`tcp_xmit_retransmit_queue`,
//! `__tcp_retransmit_skb`) and the tail loss probe (`tcp_schedule_loss_probe`,
//! `tcp_send_loss_probe`, RFC 8985 §7).

use super::mss_div::MssDiv;
use super::sender::*;

impl TcpSender {
    pub(super) fn send_syn(&mut self, now: Time, out: &mut Vec<Packet>) {
        let mut p = Packet::new(self.flow, PacketKind::Syn);
        p.wire_len = SYN_WIRE_LEN;
        p.tcp.tsval = ts_clock(now);
        p.retrans = self.syn_retries > 0;
        // ECN request (RFC 3168 §6.1.1, RFC 9768 §3.1.1); beyond the first SYN retransmission the ECN
        // flags are stripped (tcp_ecn_fallback), AccECN is still tried on the first.
        let flags = self.cc.flags();
        self.syn_ace = if self.syn_retries <= 1 { ecn::client_syn_ace(self.tcp_ecn, flags) } else { 0 };
        p.tcp.ace = self.syn_ace;
        p.ecn = ecn::syn_codepoint(flags);
        self.syn_sent_at = now;
        out.push(p);
        // SYN retransmission timer: TCP_TIMEOUT_INIT = 1 s (RFC 6298 §2.1), doubling.
        let rto = TCP_TIMEOUT_INIT_NS << self.syn_retries.min(6);
        self.xmit_timer = Some((XmitTimer::Retrans, now + rto));
    }

    /// `tcp_write_xmit` for new data. `probe` sends one segment
    /// regardless of cwnd (TLP).
    ///
    /// Most calls of an internally paced flow (every ACK between its pacing
    /// releases) find the next skb held by `tcp_pacing_check`; they are answered here,
    /// without the send loop's frame: arm the pacing timer, then what the end of
    /// the loop does when nothing was sent (`tcp_cwnd_validate` only when the window
    /// is full; with data left to send `tcp_rate_check_app_limited` is not due).
    #[inline]
    pub(super) fn write_xmit(&mut self, now: Time, out: &mut Vec<Packet>, probe: bool) {
        if self.phase != Phase::Established {
            return;
        }
        if !probe
            && !self.fq_pacing
            && self.tp.paced
            && self.tp.wstamp_ns > now
            && self.tp.snd_nxt < self.app_bytes
            && now < self.stop_at
        {
            self.pacing_timer = Some(self.tp.wstamp_ns);
            if self.tp.in_flight() >= self.tp.cwnd {
                self.tp.is_cwnd_limited = true;
                self.tp.max_packets_out = self.tp.packets_out;
                self.cwnd_usage_seq = self.tp.snd_nxt;
            }
            return;
        }
        self.write_xmit_skbs(now, out, probe);
    }

    /// The send loop of [`write_xmit`](Self::write_xmit).
    #[inline(never)]
    fn write_xmit_skbs(&mut self, now: Time, out: &mut Vec<Packet>, probe: bool) {
        let mut sent_any = false;
        let mut cwnd_limited = false;
        // Segments per skb, computed once, when the first skb is built (nothing it
        // reads has changed since the call began): a call that pacing or the window
        // stops at once (most ACK calls of a paced flow) does not need it.
        let mut max_segs: Option<u32> = None;
        // The skb being built: segments it may still take, payload bytes so far.
        // Its segments leave back to back; pacing acts per skb.
        let mut skb_room = 0u32;
        let mut skb_bytes = 0u64;
        let mut skb_segs = 0u32;
        // tcp_event_new_data_sent's `tcp_rearm_rto`, due once a segment went out with
        // no flight before it or with the loss probe pending. Done after the loop, and
        // only where the loss probe scheduled there does not replace the timer it sets:
        // nothing in between reads the timer, and what the re-arm reads (the pending
        // timer's kind, the RTO, the head's send time, now) is what it was at that
        // segment, so the timer ends as Linux leaves it.
        let mut rearm_due = false;
        // A pending loss probe makes every segment's re-arm due; nothing in the loop
        // sets the timer, so it is read once.
        let probe_pending = matches!(self.xmit_timer, Some((XmitTimer::LossProbe, _)));
        while self.tp.snd_nxt < self.app_bytes && now < self.stop_at {
            if skb_room == 0 {
                if skb_bytes > 0 {
                    self.new_skb_sent(std::mem::take(&mut skb_bytes), std::mem::take(&mut skb_segs), now, out);
                }
                if self.fq_pacing {
                    // fq paces below TCP; TCP Small Queues bounds what waits there
                    // (tcp_write_xmit → tcp_small_queue_check).
                    if !probe && self.tsq_limited(0) {
                        self.tsq_throttled = true;
                        break;
                    }
                } else if self.tp.paced && self.tp.wstamp_ns > now && !probe {
                    // tcp_pacing_check: arm the pacing timer for the departure time.
                    self.pacing_timer = Some(self.tp.wstamp_ns);
                    break;
                }
                let quota = if probe { 1 } else { self.cwnd_test() };
                if quota == 0 {
                    cwnd_limited = true;
                    break;
                }
                let max_segs = *max_segs.get_or_insert_with(|| self.tso_segs());
                if self.tso_defer && !probe && max_segs > 1 {
                    let head_len = self.write_queue_head_len(quota.min(max_segs));
                    if let Some(cwnd_full) = self.tso_should_defer(now, max_segs, head_len) {
                        cwnd_limited |= cwnd_full;
                        break;
                    }
                }
                skb_room = max_segs.min(quota).max(1);
                self.skb_overhead_due = true;
            }
            if self.tp.snd_nxt + self.mss as u64 > self.tp.snd_una.saturating_add(self.rwnd_bytes) {
                break;
            }
            let seg = self.tp.mss.saturating_sub(self.data_option_len).max(1);
            let len = (self.app_bytes - self.tp.snd_nxt).min(seg as u64) as u32;
            let seq = self.tp.snd_nxt;
            let was_empty = self.tp.packets_out == 0;
            if was_empty {
                self.cc.cwnd_event(&mut self.tp, CaEvent::TxStart);
            }
            // The skb's timestamp: its EDT departure with fq below (`skb_mstamp_ns =
            // tcp_wstamp_ns` in __tcp_transmit_skb), else now.
            let stamp = self.departure(now);
            let tx = self.rate_skb_sent(stamp, self.tp.in_flight() + 1);
            self.rtx.push_back(Seg::sent(seq, seq + len as u64, stamp, &tx));
            self.tp.snd_nxt += len as u64;
            self.tp.packets_out += 1;
            if self.tp.ca_state == CaState::Cwr || self.tp.ca_state == CaState::Recovery {
                self.prr_out += 1;
            }
            self.emit_data(seq, len, false, stamp, now, out);
            skb_room -= 1;
            skb_bytes += len as u64;
            skb_segs += 1;
            // tcp_event_new_data_sent: start the RTO if this is the only flight.
            rearm_due |= was_empty || probe_pending;
            sent_any = true;
            if probe {
                break;
            }
        }
        if skb_bytes > 0 {
            self.new_skb_sent(skb_bytes, skb_segs, now, out);
        }
        if !probe && (self.tp.snd_nxt >= self.app_bytes || now >= self.stop_at) {
            // The application has nothing more to write.
            self.rate_check_app_limited(now);
        }
        if self.tp.in_flight() >= self.tp.cwnd {
            cwnd_limited = true;
        }
        // tcp_cwnd_validate, called only when something was sent or the window is full
        // (net/ipv4/tcp_output.c:tcp_write_xmit: `if (likely(sent_pkts ||
        // is_cwnd_limited)) tcp_cwnd_validate(sk, is_cwnd_limited);`). A call that sends
        // nothing because pacing holds the next skb (tcp_pacing_check) leaves the
        // window's cwnd-limited record as it was: a paced flow keeps the AI it earned
        // when its last transmission filled the window.
        if (sent_any || cwnd_limited)
            && (self.tp.snd_una >= self.cwnd_usage_seq
                || cwnd_limited
                || (!self.tp.is_cwnd_limited && self.tp.packets_out > self.tp.max_packets_out))
        {
            self.tp.is_cwnd_limited = cwnd_limited;
            self.tp.max_packets_out = self.tp.packets_out;
            self.cwnd_usage_seq = self.tp.snd_nxt;
        }
        let probe_armed = sent_any && !probe && self.schedule_loss_probe(now, false);
        if rearm_due && !probe_armed {
            self.rearm_rto(now);
        }
    }

    /// Segments per skb (`tcp_tso_segs(sk, mss_now)`): 1 without TSO/GSO; else the
    /// CC's `tso_segs` hook (Prague's `prague_tso_segs`), else `tcp_tso_autosize`;
    /// never more than the device's `gso_max_size` holds. Both size in `mss_now`
    /// (`tcp_current_mss`: the MSS less the options every data segment carries, 1436 B
    /// with the AccECN option), as `tcp_write_xmit` does, not in `mss_cache`.
    #[inline(always)]
    pub(super) fn tso_segs(&self) -> u32 {
        if !self.tso {
            return 1;
        }
        // No skb grows beyond the device's gso_max_size (`tcp_xmit_size_goal`).
        let div = self.mss_div();
        let size_goal = div.size_goal;
        match self.cc.tso_segs(&self.tp, div.mss) {
            Some(segs) => segs.clamp(1, size_goal),
            None => self.tso_autosize(div).min(size_goal),
        }
    }

    /// The divisions by `mss_now` (`segment_payload`) `tso_segs` needs, kept until it
    /// changes (a CC may change the MSS: Prague's segment sizing): one per MSS instead of
    /// two per call.
    #[inline]
    fn mss_div(&self) -> MssDiv {
        let d = self.mss_div.get();
        let mss_now = self.segment_payload();
        if d.mss == mss_now {
            return d;
        }
        let d = MssDiv::new(mss_now);
        self.mss_div.set(d);
        d
    }

    /// `tcp_tso_autosize`: ≈1 ms of data at the pacing rate (`sk_pacing_shift`)
    /// plus `GSO_MAX_SIZE >> (min_rtt_us >> tcp_tso_rtt_log)`, at most 64 KB, at
    /// least `tcp_min_tso_segs`.
    fn tso_autosize(&self, div: MssDiv) -> u32 {
        let mut bytes = self.tp.pacing_rate >> SK_PACING_SHIFT;
        let r = self.tp.min_rtt_us >> TCP_TSO_RTT_LOG;
        if r < 32 {
            bytes += GSO_MAX_SIZE >> r;
        }
        let segs = div.div(bytes.min(GSO_MAX_SIZE) as u32) as u64;
        // tcp_tso_segs: the CC's min_tso_segs op (BBR) replaces the sysctl.
        let min_tso = self.cc.min_tso_segs(&self.tp).unwrap_or(TCP_MIN_TSO_SEGS);
        (segs as u32).max(min_tso)
    }

    /// `tcp_cwnd_test`: segments the cwnd lets the next skb take, 0 when full. One
    /// skb takes at most half the cwnd, so a burst does not empty the window.
    fn cwnd_test(&self) -> u32 {
        let in_flight = self.tp.in_flight();
        if in_flight >= self.tp.cwnd {
            return 0;
        }
        (self.tp.cwnd - in_flight).min((self.tp.cwnd >> 1).max(1))
    }

    /// Bytes of the write-queue skb at the send head once `tcp_write_xmit` has grown
    /// it to the `quota` segments it may send (`tcp_grow_skb`, which moves bytes from
    /// the next skb when the head is shorter than that).
    ///
    /// The application's writes fill skbs of `size_goal` bytes
    /// (`tcp.c:tcp_sendmsg_locked` appends to the tail skb until it holds
    /// `tcp_xmit_size_goal`: min(`gso_max_size` 64 KiB, half the largest window the
    /// peer offered, `tcp_bound_to_half_wnd`) in whole segments, 45 of 1436 B at
    /// 100 Mbit/s in the kernel backend's guest); `tcp_write_xmit` splits
    /// `tso_segs`-segment skbs off the head one (`tso_fragment`), so every `size_goal`
    /// bytes the head holds a remainder shorter than a full burst. The boundaries are
    /// placed as the sender passes them, with the size goal of that moment (a bulk
    /// writer's skbs are full: it refills the queue long before the head reaches them).
    fn write_queue_head_len(&mut self, quota: u32) -> u64 {
        let seg = self.segment_payload().max(1) as u64;
        let cutoff =
            if self.max_window > super::TCP_MSS_DEFAULT as u64 { self.max_window / 2 } else { self.max_window };
        let bound = if cutoff > 0 { super::GSO_MAX_SIZE.min(cutoff) } else { super::GSO_MAX_SIZE };
        let size_goal = (bound / seg).max(1) * seg;
        let nxt = self.tp.snd_nxt;
        if self.wq_skb_end <= nxt {
            self.wq_skb_end += ((nxt - self.wq_skb_end) / size_goal + 1) * size_goal;
        }
        (self.wq_skb_end - nxt).max(quota as u64 * seg)
    }

    /// `tcp_tso_should_defer` (net/ipv4/tcp_output.c), for an skb of `max_segs`
    /// segments at the send head: `Some(cwnd_limited)` to hold it until a later ACK
    /// opens room for a fuller one, `None` to send now. It holds only outside
    /// Recovery/Loss, when the last skb went within 1 ms (`tcp_wstamp_ns`, the last
    /// send for an unpaced socket), a full skb does not fit in min(cwnd room, send
    /// window), the write-queue skb at the head (`head_len` bytes,
    /// [`write_queue_head_len`](Self::write_queue_head_len)) does not fit either ("Middle
    /// in queue won't get any more data, full sendable already?"; a one-segment
    /// remainder is not even asked: `tcp_write_xmit` defers only an skb of more than
    /// one segment), less than 1/`tcp_tso_win_divisor` (3) of min(snd_wnd, cwnd) is
    /// available, and the head's ACK is expected within min(srtt/2, 1 ms) (before
    /// Linux's 2025 fix: the head left at least srtt/2 ago, `tso_defer_ack`). The
    /// last data of a sized transfer (the FIN skb) is never held.
    fn tso_should_defer(&self, now: Time, max_segs: u32, head_len: u64) -> Option<bool> {
        if self.tp.ca_state as u8 >= CaState::Recovery as u8 {
            return None;
        }
        let last = if self.tp.paced { self.tp.wstamp_ns.max(self.tp.lsndtime) } else { self.tp.lsndtime };
        if now > last + NS_PER_MS {
            return None;
        }
        let mss = self.tp.mss as u64;
        let in_flight = self.tp.in_flight();
        let send_win = self.tp.snd_una.saturating_add(self.rwnd_bytes).saturating_sub(self.tp.snd_nxt);
        let cong_win = self.tp.cwnd.saturating_sub(in_flight) as u64 * mss;
        let limit = send_win.min(cong_win);
        let skb_len = max_segs as u64 * mss;
        if limit >= skb_len || self.app_bytes - self.tp.snd_nxt <= limit || limit >= head_len {
            return None;
        }
        let chunk = self.rwnd_bytes.min(self.tp.cwnd as u64 * mss) / TCP_TSO_WIN_DIVISOR;
        if limit >= chunk {
            return None;
        }
        // The head's ACK is expected at its send time + srtt: defer only if that is
        // at most min(srtt/2, 1 ms) away ("tcp: fix tcp_tso_should_defer() vs large
        // RTT", Oct 2025, backported to the stable trees); before it, once the head left srtt/2
        // ago (`tso_defer_ack = "half_srtt"`).
        let head = self.rtx.front()?;
        let srtt_ns = self.tp.srtt_us * NS_PER_US;
        if self.tso_defer_half_srtt {
            if now.saturating_sub(head.xmit) < srtt_ns / 2 {
                return None;
            }
        } else if head.xmit + srtt_ns > now + (srtt_ns / 2).min(NS_PER_MS) {
            return None;
        }
        Some(cong_win < send_win && cong_win <= skb_len)
    }

    /// A new-data skb of `segs` segments has left: its segments share the skb's
    /// `tx.in_flight`, the packets in flight with the whole skb counted
    /// (`tcp_rate.c:tcp_set_tx_in_flight`, google/bbr: `tcp_packets_in_flight(tp) +
    /// tcp_skb_pcount(skb)`, stamped once per skb by `tcp_rate_skb_sent`; an ACK
    /// that delivers part of a GSO skb samples the whole skb's value), then the
    /// pacing bookkeeping ([`skb_sent`](Self::skb_sent)). Each segment was
    /// stamped with the flight up to itself as it was queued; nothing in between
    /// changes the flight but the skb's own segments. Only for a CC that reads it
    /// (`reads_tx_in_flight`: BBRv2/v3); for the others the restamp is work nothing reads.
    ///
    /// An skb of more than one segment carries PSH (`tcp_output.c:__tcp_transmit_skb`:
    /// "Force a PSH flag on all (GSO) packets to expedite GRO flush at receiver", set on
    /// the transmitted clone, so the write queue keeps none), and GSO keeps it on the
    /// last segment only (`tcp_offload.c:tcp_gso_segment` clears PSH and FIN on every
    /// segment but the last): the segment just emitted, the last packet in `out` or in
    /// the host's fq queue.
    #[inline(always)]
    fn new_skb_sent(&mut self, bytes: u64, segs: u32, now: Time, out: &mut [Packet]) {
        if segs > 1 {
            if self.cc_tx_in_flight {
                self.rtx.set_in_flight_of_last(segs as usize, self.tp.in_flight());
            }
            let last = if self.fq_pacing { self.host_q.back_mut().map(|q| &mut q.1) } else { out.last_mut() };
            if let Some(p) = last {
                debug_assert!(p.kind == PacketKind::Data);
                p.tcp.set_psh(true);
            }
        }
        self.skb_sent(bytes, now);
    }

    /// EDT bookkeeping after an skb of `bytes` payload left (`tcp_update_skb_after_send`,
    /// in EDT mode): the next departure moves on by bytes/rate, less up to half of
    /// it as credit when the stack ran late; the first 10 segments are not paced.
    pub(super) fn skb_sent(&mut self, bytes: u64, now: Time) {
        if !self.tp.paced {
            return;
        }
        let prior = self.tp.wstamp_ns;
        self.tp.wstamp_ns = self.tp.wstamp_ns.max(now);
        let rate = self.tp.pacing_rate;
        if rate > 0 && self.stats.data_segments_sent >= 10 {
            let mut len_ns = bytes * NS_PER_SEC / rate;
            let credit = self.tp.wstamp_ns - prior;
            len_ns -= (len_ns / 2).min(credit);
            self.tp.wstamp_ns += len_ns;
        }
    }

    /// Put one data segment on the wire, applying EDT pacing bookkeeping. `stamp` is
    /// the skb's timestamp, [`departure`](Self::departure)`(now)`, which the caller
    /// has just stamped the segment's queue entry with.
    #[inline(always)]
    pub(super) fn emit_data(
        &mut self,
        seq: u64,
        len: u32,
        retrans: bool,
        stamp: Time,
        now: Time,
        out: &mut Vec<Packet>,
    ) {
        debug_assert_eq!(stamp, self.departure(now));
        let mut p = Packet::new(self.flow, PacketKind::Data);
        p.payload = len;
        p.wire_len = tcp_wire_len(len, 0) + self.data_option_len;
        p.retrans = retrans;
        p.ecn = self.data_codepoint(retrans);
        p.tcp.seq = seq;
        // TSval from the skb's timestamp (tcp_skb_timestamp_ts: the EDT departure).
        p.tcp.tsval = ts_clock(stamp);
        // TSecr: the newest TSval of the peer's ACKs (`ts_recent`, RFC 7323 §4.3), which
        // the receiver's receive-RTT estimate reads (`tcp_rcv_rtt_measure_ts`).
        p.tcp.tsecr = self.last_ack_tsval;
        if self.ecn_rfc3168 && !retrans {
            p.tcp.set_cwr(std::mem::take(&mut self.queue_cwr));
        }
        if self.fq_pacing {
            // Handed to fq, which sends it at `stamp`; its truesize counts against
            // TSQ until then (one skb's overhead on its first segment).
            let truesize = len + if self.skb_overhead_due { TSQ_SKB_OVERHEAD } else { 0 };
            self.skb_overhead_due = false;
            self.host_q_truesize += truesize as u64;
            self.host_q.push_back((stamp, p, truesize));
        } else {
            out.push(p);
        }
        self.stats.data_segments_sent += 1;
        self.stats.payload_bytes_sent += len as u64;
        self.stats.payload_sq_sum += (len as u128) * (len as u128);
        self.stats.pacing_rate_sum += self.tp.pacing_rate as u128;
        self.tp.lsndtime = now;
    }

    /// The timestamp of an skb handed down now: with fq on the host, its EDT
    /// departure `max(tcp_wstamp_ns, now)` (__tcp_transmit_skb); otherwise now (an
    /// internally paced sender only sends once `wstamp` has come).
    #[inline]
    pub(super) fn departure(&self, now: Time) -> Time {
        if self.fq_pacing && self.tp.paced {
            self.tp.wstamp_ns.max(now)
        } else {
            now
        }
    }

    /// `tcp_small_queue_check`: more than ≈1 ms of data at the pacing rate (at least
    /// two skbs) already below TCP; `factor` 1 doubles the limit (retransmissions).
    /// With fq the `tcp_limit_output_bytes` cap does not apply (it is only for
    /// `SK_PACING_NONE`).
    pub(super) fn tsq_limited(&self, factor: u32) -> bool {
        if self.host_q.len() <= 1 {
            // tcp_rtx_queue_empty_or_single_skb-like: one skb may always wait.
            return false;
        }
        let two_skbs = 2 * (self.tp.mss as u64 * self.tso_segs() as u64 + TSQ_SKB_OVERHEAD as u64);
        let limit = two_skbs.max(self.tp.pacing_rate >> SK_PACING_SHIFT) << factor;
        self.host_q_truesize > limit
    }

    /// fq's dequeue on the sender host, run at the end of every sender callback:
    /// every packet whose departure time has come goes to the NIC; the space it frees
    /// may unthrottle TSQ (`tcp_wfree` → `tcp_tsq_handler`: retransmissions first,
    /// then new data), whose packets may be due at once. A loop, not recursion: each
    /// round releases at least one packet or ends.
    pub(super) fn fq_service(&mut self, now: Time, out: &mut Vec<Packet>) {
        loop {
            let mut released = false;
            while let Some(&(at, p, truesize)) = self.host_q.front() {
                if at > now {
                    break;
                }
                self.host_q.pop_front();
                self.host_q_truesize -= truesize as u64;
                out.push(p);
                released = true;
            }
            if !(released && self.tsq_throttled && !self.tsq_limited(0)) {
                return;
            }
            self.tsq_throttled = false;
            if self.tp.lost_out > self.tp.retrans_out {
                self.xmit_retransmit_queue(now, out);
            }
            self.write_xmit(now, out, false);
        }
    }

    /// IP-ECN codepoint of a data segment (`tcp_ecn_send`, RFC 3168 §6.1.5).
    pub(super) fn data_codepoint(&self, retrans: bool) -> Ecn {
        match self.tp.ecn_mode {
            EcnMode::Off => Ecn::NotEct,
            // RFC 3168 forbids ECT on retransmissions unless the CC needs ECN or set
            // TCP_ECN_ECT_PERMANENT (google/bbr v3 tcp_ecn_send). The CC's flags are
            // asked only here (a dynamic call per data segment otherwise).
            EcnMode::Rfc3168 if retrans && !self.cc.flags().needs_ecn && !self.tp.ect_permanent => Ecn::NotEct,
            _ => self.cc_ect,
        }
    }

    /// `tcp_xmit_retransmit_queue`: lost segments in sequence order while the cwnd
    /// (and pacing) allow.
    pub(super) fn xmit_retransmit_queue(&mut self, now: Time, out: &mut Vec<Packet>) {
        if self.tp.lost_out <= self.tp.retrans_out {
            return;
        }
        // The scoreboard index visits only the segments to retransmit (LOST, not
        // SACKED, not RETRANS). The stop tests depend only on state a retransmission
        // changes, so testing them before each such segment stops where a scan of
        // the whole queue testing them at every segment would.
        let mut next = self.rtx.next_lost(0);
        while let Some(i) = next {
            if self.tp.retrans_out >= self.tp.lost_out {
                break;
            }
            if self.tp.in_flight() >= self.tp.cwnd {
                break;
            }
            if self.fq_pacing {
                // tcp_xmit_retransmit_queue → tcp_small_queue_check(sk, skb, 1).
                if self.tsq_limited(1) {
                    self.tsq_throttled = true;
                    break;
                }
            } else if self.tp.paced && self.tp.wstamp_ns > now {
                self.pacing_timer = Some(self.tp.wstamp_ns);
                break;
            }
            self.retransmit_seg(i, now, out);
            if self.tp.ca_state == CaState::Cwr || self.tp.ca_state == CaState::Recovery {
                self.prr_out += 1;
            }
            next = self.rtx.next_lost(i + 1);
        }
    }

    /// Retransmit the segment at queue index `i` (`__tcp_retransmit_skb`).
    pub(super) fn retransmit_seg(&mut self, i: usize, now: Time, out: &mut Vec<Packet>) {
        let (seq, len) = {
            let s = &self.rtx[i];
            (s.seq, (s.end - s.seq) as u32)
        };
        let stamp = self.departure(now);
        let tx = self.rate_skb_sent(stamp, self.tp.in_flight() + 1);
        if !self.rtx[i].has(RETRANS) {
            self.tp.retrans_out += 1;
        }
        let mut s = self.rtx[i];
        s.flags = (s.flags | RETRANS | EVER_RETRANS) & !DELIVERED;
        s.xmit = stamp;
        s.set_tx(&tx);
        self.rtx.retransmit(i, s);
        self.stats.retransmits += 1;
        self.skb_overhead_due = true;
        self.emit_data(seq, len, true, stamp, now, out);
        self.skb_sent(len as u64, now);
    }

    /// `tcp_schedule_loss_probe` (RFC 8985 §7.2: PTO = 2·SRTT, + rto_min with one packet out).
    pub(super) fn schedule_loss_probe(&mut self, now: Time, advancing_rto: bool) -> bool {
        if self.tp.packets_out == 0 || !(self.tp.ca_state == CaState::Open || self.tp.ca_state == CaState::Cwr) {
            return false;
        }
        let srtt_us8 = self.rtt.srtt_us8;
        let mut timeout = if srtt_us8 > 0 {
            let mut t = round_up_to_jiffy((srtt_us8 >> 2) * NS_PER_US);
            t += if self.tp.packets_out == 1 { self.rtt.rto_min_us * NS_PER_US } else { TCP_TIMEOUT_MIN_NS };
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

    /// `tcp_send_loss_probe`.
    pub(super) fn send_loss_probe(&mut self, now: Time, out: &mut Vec<Packet>) {
        if self.tlp_high_seq == 0 {
            let before = self.tp.packets_out;
            if self.has_data_to_send() && now < self.stop_at {
                self.tlp_retrans = false;
                self.write_xmit(now, out, true);
            }
            if self.tp.packets_out > before {
                self.probe_sent(now);
            } else if let Some(last) = self.rtx.len().checked_sub(1) {
                if !self.rtx[last].has(SACKED) {
                    // google/bbr v3 tcp_send_loss_probe: remember the original's
                    // app-limited mark before the retransmission re-stamps it.
                    self.tp.tlp_orig_data_app_limited = self.rtx[last].tx_app_limited;
                    self.retransmit_seg(last, now, out);
                    self.tlp_retrans = true;
                    self.probe_sent(now);
                }
            }
        }
        self.rearm_rto(now);
    }

    pub(super) fn probe_sent(&mut self, _now: Time) {
        self.tlp_high_seq = self.tp.snd_nxt;
        self.stats.tlp_count += 1;
        // icsk_pending = 0 so tcp_rearm_rto restarts the RTO from now.
        self.xmit_timer = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::CcFlags;
    use crate::config::TcpFlowConfig;

    /// `MssDiv` equals the hardware division for every MSS up to 2^16 on the
    /// dividends `tso_autosize` can give (≤ GSO_MAX_SIZE: all of them for a few MSS
    /// values; the multiples of the MSS ±1 for every MSS), and at the 32-bit edge.
    #[test]
    fn mss_division_is_exact() {
        // The not-yet-computed value is itself right (for an MSS of 0).
        assert_eq!(format!("{:?}", MssDiv::EMPTY), format!("{:?}", MssDiv::new(0)));
        for mss in 0..=65_536u32 {
            let div = MssDiv::new(mss);
            let d = mss.max(1);
            assert_eq!(div.size_goal as u64, (GSO_MAX_SIZE / d as u64).max(1), "mss {mss}");
            let mut k = 0u64;
            while k * d as u64 <= GSO_MAX_SIZE + d as u64 {
                for n in [(k * d as u64).saturating_sub(1), k * d as u64, k * d as u64 + 1] {
                    assert_eq!(div.div(n as u32), n as u32 / d, "n {n} mss {mss}");
                }
                k += 1;
            }
            for n in [u32::MAX, u32::MAX - 1, u32::MAX / d * d, (u32::MAX / d * d).saturating_sub(1)] {
                assert_eq!(div.div(n), n / d, "n {n} mss {mss}");
            }
        }
        for mss in [1u32, 2, 3, 536, 1000, 1448, 1460, 8948, 9000] {
            let div = MssDiv::new(mss);
            for n in 0..=GSO_MAX_SIZE as u32 {
                assert_eq!(div.div(n), n / mss, "n {n} mss {mss}");
            }
        }
    }

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
        fn tso_segs(&self, _tp: &CcSock, _mss_now: u32) -> Option<u32> {
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
        s.tp.wstamp_ns = 1_000_000; // on time at t = 1 ms: no late-sender credit
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
        assert_eq!(s.tp.wstamp_ns, 1_000_000 + bytes * NS_PER_SEC / rate, "EDT moves by the skb's bytes / rate");
        assert_eq!(s.pacing_timer, Some(s.tp.wstamp_ns));
        // Nothing more until the departure time, then the next skb.
        out.clear();
        s.write_xmit(s.tp.wstamp_ns - 1, &mut out, false);
        assert!(out.is_empty());
        s.write_xmit(s.tp.wstamp_ns, &mut out, false);
        assert_eq!(out.len(), 4);
    }

    /// `tcp_rate.c:tcp_set_tx_in_flight` stamps an skb once, with the flight
    /// counting the whole skb (`tcp_packets_in_flight + tcp_skb_pcount`): every
    /// segment of a GSO skb carries it, so an ACK that delivers the skb's first
    /// segments samples the in-flight level its last segment reached, as BBRv2's
    /// `inflight_hi` reads it. A retransmission is an skb of its own.
    #[test]
    fn every_segment_of_a_gso_skb_carries_the_skbs_tx_in_flight() {
        let two_skbs = |reads: bool| {
            let mut s = sender(Some(4), true, 12_500_000);
            s.cc_tx_in_flight = reads; // as a CC that reads it (BBRv2/v3) would set
            let mut out = Vec::new();
            s.write_xmit(1_000_000, &mut out, false);
            s.write_xmit(s.tp.wstamp_ns, &mut out, false);
            assert_eq!(out.len(), 8, "two skbs of four");
            s.rtx.iter().map(|g| g.tx_in_flight).collect::<Vec<u32>>()
        };
        assert_eq!(two_skbs(true), [4, 4, 4, 4, 8, 8, 8, 8]);
        // A CC that reads no send-time flight: the segments keep their own stamps.
        assert_eq!(two_skbs(false), [1, 2, 3, 4, 5, 6, 7, 8]);
        // One segment per skb: each its own flight, itself included.
        let mut s = sender(Some(4), false, 12_500_000);
        let mut out = Vec::new();
        for _ in 0..3 {
            s.write_xmit(s.tp.wstamp_ns.max(1_000_000), &mut out, false);
        }
        let in_flight: Vec<u32> = s.rtx.iter().map(|g| g.tx_in_flight).collect();
        assert_eq!(in_flight, [1, 2, 3]);
    }

    #[test]
    fn a_late_sender_gets_up_to_half_an_skb_of_credit() {
        let rate = 12_500_000;
        let mut s = sender(Some(4), true, rate);
        let mut out = Vec::new();
        s.write_xmit(5_000_000, &mut out, false); // 4 ms late
        let bytes: u64 = out.iter().map(|p| p.payload as u64).sum();
        let len_ns = bytes * NS_PER_SEC / rate;
        assert_eq!(s.tp.wstamp_ns, 5_000_000 + len_ns - len_ns / 2);
    }

    #[test]
    fn without_tso_every_skb_is_one_segment() {
        let mut s = sender(Some(4), false, 12_500_000);
        let mut out = Vec::new();
        s.write_xmit(1_000_000, &mut out, false);
        assert_eq!(out.len(), 1);
        assert_eq!(s.tp.wstamp_ns, 1_000_000 + out[0].payload as u64 * NS_PER_SEC / 12_500_000);
    }

    #[test]
    fn tso_autosizing_is_1ms_of_data_plus_the_min_rtt_term() {
        // tcp_tso_autosize: pacing_rate >> 10, + 64 KB >> (min_rtt_us >> 9), ≤ 64 KB, ≥ 2.
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

    /// An unpaced CC (CUBIC over a plain qdisc) with skbs of `burst` segments.
    struct UnpacedBurst(u32);

    impl CongestionControl for UnpacedBurst {
        fn name(&self) -> &'static str {
            "unpaced-burst"
        }
        fn ssthresh(&mut self, tp: &CcSock) -> u32 {
            tp.cwnd
        }
        fn tso_segs(&self, _tp: &CcSock, _mss_now: u32) -> Option<u32> {
            Some(self.0)
        }
    }

    /// 30 segments sent at t = 0 in skbs of 10 (the window full), then cwnd grows to
    /// 34: room for 4 segments, less than a full skb and than cwnd/3 (11.3).
    fn deferring(defer: bool, srtt_us: u64) -> TcpSender {
        deferring_by(defer, srtt_us, "expected")
    }

    fn deferring_by(defer: bool, srtt_us: u64, ack_rule: &str) -> TcpSender {
        let cfg: TcpFlowConfig = serde_json::from_value(serde_json::json!(
            {"cc": "unpaced-burst", "rtt_ns": 10_000_000u64, "tso": true, "tso_defer": defer,
             "tso_defer_ack": ack_rule}
        ))
        .unwrap();
        let mut s = TcpSender::new(0, &cfg, Box::new(UnpacedBurst(10)), Time::MAX);
        s.phase = Phase::Established;
        s.tp.cwnd = 30;
        s.tp.srtt_us = srtt_us;
        s.stats.data_segments_sent = 10;
        let mut out = Vec::new();
        s.write_xmit(0, &mut out, false);
        assert_eq!(out.len(), 30);
        s.tp.cwnd = 34;
        s
    }

    #[test]
    fn tso_deferral_holds_a_partial_skb_while_the_heads_ack_is_due() {
        // tcp_tso_should_defer: last send 0.5 ms ago (< 1 ms), 4 segments of room
        // (< 10, < 34/3), the head left 0.5 ms ago ≥ srtt/2 = 0.4 ms: hold.
        let mut out = Vec::new();
        let mut s = deferring(true, 800);
        s.write_xmit(500_000, &mut out, false);
        assert!(out.is_empty(), "the partial skb waits");
        assert!(s.tp.is_cwnd_limited, "held for want of cwnd");
        // The last send more than 1 ms ago: send now (no bursts after idle).
        s.write_xmit(1_000_001, &mut out, false);
        assert_eq!(out.len(), 4);
        // The head's ACK not due before srtt/2 (5 ms): do not defer.
        out.clear();
        let mut s = deferring(true, 10_000);
        s.write_xmit(500_000, &mut out, false);
        assert_eq!(out.len(), 4);
        // Off (the engine's default): sent at once.
        out.clear();
        let mut s = deferring(false, 800);
        s.write_xmit(500_000, &mut out, false);
        assert_eq!(out.len(), 4);
    }

    #[test]
    fn tso_deferral_waits_only_for_an_ack_expected_within_a_millisecond() {
        // srtt 10 ms, the head sent at 0, the last send 0.5 ms ago. At 6 ms the head
        // left more than srtt/2 ago, but its ACK is expected at 10 ms, 4 ms away, more
        // than min(srtt/2, 1 ms): Linux since its 2025 fix sends; the rule before it held.
        let mut out = Vec::new();
        let mut s = deferring_by(true, 10_000, "expected");
        s.tp.lsndtime = 5_500_000;
        s.write_xmit(6_000_000, &mut out, false);
        assert_eq!(out.len(), 4, "the ACK is 4 ms away: send");
        out.clear();
        let mut s = deferring_by(true, 10_000, "half_srtt");
        s.tp.lsndtime = 5_500_000;
        s.write_xmit(6_000_000, &mut out, false);
        assert!(out.is_empty(), "before the fix: the head left >= srtt/2 ago, hold");
        // 0.8 ms before the head's ACK is expected: both rules hold.
        let mut s = deferring_by(true, 10_000, "expected");
        s.tp.lsndtime = 8_700_000;
        s.write_xmit(9_200_000, &mut out, false);
        assert!(out.is_empty(), "the ACK is 0.8 ms away: hold");
    }

    /// The rest of a write-queue skb goes out when it fits the room. The application's
    /// bytes sit in skbs of `size_goal` (`tcp_xmit_size_goal`: 64 KiB, 45 segments of
    /// 1448 B, while the peer's window is unknown or at least 128 KiB); after 40 segments
    /// the head skb has 5 left. With 5 segments of room (less than a full skb of 10,
    /// than cwnd/3, and the head's ACK due) `tcp_tso_should_defer` sends them ("Middle
    /// in queue won't get any more data, full sendable already?"); with 4 it holds. A
    /// peer window of 40 segments halves the skbs (`tcp_bound_to_half_wnd`: 20
    /// segments), so at 40 the head skb is a fresh one and 5 segments of room wait.
    /// At 100 Mbit/s this is what spends a Prague sender's one-segment room in the
    /// kernel: its 2-segment bursts leave a one-segment rest every 45 segments, sent
    /// alone (docs/fidelity-prague.md, "TSO deferral and the write queue's skbs").
    #[test]
    fn tso_deferral_sends_the_rest_of_a_write_queue_skb_that_fits() {
        let run = |cwnd: u32, max_window: u64| {
            let cfg: TcpFlowConfig = serde_json::from_value(serde_json::json!(
                {"cc": "unpaced-burst", "rtt_ns": 10_000_000u64, "tso": true, "tso_defer": true}
            ))
            .unwrap();
            let mut s = TcpSender::new(0, &cfg, Box::new(UnpacedBurst(10)), Time::MAX);
            s.phase = Phase::Established;
            s.tp.srtt_us = 800;
            s.stats.data_segments_sent = 10;
            s.max_window = max_window;
            s.tp.cwnd = 40;
            let mut out = Vec::new();
            s.write_xmit(0, &mut out, false);
            assert_eq!(s.tp.snd_nxt, 40 * 1448);
            s.tp.cwnd = cwnd;
            out.clear();
            s.write_xmit(500_000, &mut out, false);
            out.len()
        };
        assert_eq!(run(45, 0), 5, "the head skb's last 5 segments fit: sent");
        assert_eq!(run(44, 0), 0, "4 of room for 5 left: held");
        assert_eq!(run(45, 40 * 1448), 0, "20-segment skbs: a fresh one at the head, held");
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

    #[test]
    fn a_call_held_by_pacing_keeps_the_windows_cwnd_limited_record() {
        // tcp_write_xmit calls tcp_cwnd_validate only `if (likely(sent_pkts ||
        // is_cwnd_limited))`: a call that sends nothing because tcp_pacing_check holds
        // the next skb, with the window not full, changes nothing, even when snd_una
        // has passed cwnd_usage_seq (a new window).
        let rate = 1_250_000; // 10 Mbit/s: one 1448-B skb every ≈ 1.16 ms
        let mut s = sender(None, false, rate);
        s.tp.cwnd = 1;
        let mut out = Vec::new();
        s.write_xmit(1_000_000, &mut out, false);
        assert_eq!(out.len(), 1);
        assert!(s.tp.is_cwnd_limited, "the window filled: cwnd-limited");
        // The segment is acknowledged (a new window starts) and cwnd grows to 4; the
        // next skb's departure time has not come.
        s.rtx.pop_front();
        s.tp.snd_una = s.tp.snd_nxt;
        s.tp.packets_out = 0;
        s.tp.cwnd = 4;
        out.clear();
        s.write_xmit(1_100_000, &mut out, false);
        assert!(out.is_empty(), "pacing holds the skb");
        assert!(s.tp.is_cwnd_limited, "nothing sent and the window not full: the record is kept");
        // When pacing lets a segment go and the window is still not full, the new
        // window records that it is not cwnd-limited.
        s.write_xmit(s.tp.wstamp_ns, &mut out, false);
        assert_eq!(out.len(), 1);
        assert!(!s.tp.is_cwnd_limited);
    }

    #[test]
    fn bbr3_keeps_ect_on_retransmissions_only_when_ecn_is_usable() {
        // google/bbr v3: bbr_init sets TCP_ECN_ECT_PERMANENT when bbr_can_use_ecn
        // (ECN negotiated and the route's ecn_low); tcp_ecn_send then keeps ECT on
        // retransmissions, which RFC 3168 §6.1.5 otherwise sends Not-ECT.
        for (ecn_mode, ecn_low, retrans_ecn) in [
            (EcnMode::Rfc3168, true, Ecn::Ect0),
            (EcnMode::Rfc3168, false, Ecn::NotEct),
            (EcnMode::Off, true, Ecn::NotEct),
        ] {
            let cfg: TcpFlowConfig =
                serde_json::from_value(serde_json::json!({"cc": "bbr3", "rtt_ns": 10_000_000u64, "ecn_low": ecn_low}))
                    .unwrap();
            let mut s = TcpSender::new(0, &cfg, crate::cc::by_name("bbr3").unwrap(), Time::MAX);
            assert_eq!(s.tp.ecn_low, ecn_low, "the flow key reaches the CC's socket");
            s.phase = Phase::Established;
            s.tp.ecn_mode = ecn_mode;
            s.tp.min_rtt_us = 10_000;
            s.cc.init(&mut s.tp);
            let mut out = Vec::new();
            s.write_xmit(1_000_000, &mut out, false);
            let first = if ecn_mode == EcnMode::Off { Ecn::NotEct } else { Ecn::Ect0 };
            assert_eq!(out[0].ecn, first);
            out.clear();
            s.retransmit_seg(0, 2_000_000, &mut out);
            assert!(out[0].retrans);
            assert_eq!(out[0].ecn, retrans_ecn, "{ecn_mode:?} ecn_low {ecn_low}");
        }
        // Other CCs are unchanged: CUBIC's retransmissions stay Not-ECT.
        let cfg: TcpFlowConfig =
            serde_json::from_value(serde_json::json!({"cc": "cubic", "rtt_ns": 10_000_000u64, "ecn_low": true}))
                .unwrap();
        let mut s = TcpSender::new(0, &cfg, crate::cc::by_name("cubic").unwrap(), Time::MAX);
        s.phase = Phase::Established;
        s.tp.ecn_mode = EcnMode::Rfc3168;
        s.cc.init(&mut s.tp);
        let mut out = Vec::new();
        s.write_xmit(1_000_000, &mut out, false);
        out.clear();
        s.retransmit_seg(0, 2_000_000, &mut out);
        assert_eq!(out[0].ecn, Ecn::NotEct);
    }
}
