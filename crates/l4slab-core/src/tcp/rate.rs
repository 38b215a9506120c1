//! Delivery-rate sampling as Linux's `net/ipv4/tcp_rate.c`: `tcp_rate_skb_sent`
//! stamps each (re)transmitted packet with the connection's delivery state,
//! `tcp_rate_skb_delivered` picks the most recently sent packet an ACK delivers,
//! `tcp_rate_gen` turns it into the ACK's [`RateSample`], and
//! `tcp_rate_check_app_limited` marks application-limited periods. The BBRv2/v3
//! additions of google/bbr (`tx.in_flight`, `tx.lost`, `rs->tx_in_flight`,
//! `rs->lost`, `rs->last_end_seq`) are filled as there.
//!
//! The sample: delivered = `tp->delivered` now − at the packet's transmission;
//! interval = max(send phase of its flight, time since `tp->delivered_mstamp` at
//! its transmission), so the rate is min(send rate, ACK rate) and cannot exceed
//! the bottleneck through ACK compression (draft-cheng-iccrg-delivery-rate-estimation Linux include/net/tcp_ecn.h and net/ipv4/tcp_input.c).

use super::sender::*;

impl TcpSender {
    /// `tcp_rate_skb_sent`: the delivery state to stamp on a packet (re)transmitted
    /// now; `in_flight` counts the packets in flight with this one.
    pub(super) fn rate_skb_sent(&mut self, now: Time, in_flight: u32) -> SkbTx {
        // From idle, samples start at this send: ACKs after it show what the network
        // delivered since (packets_out, not in_flight, so spurious loss marks do not
        // shorten the interval).
        if self.tp.packets_out == 0 {
            self.tp.first_tx_mstamp = now;
            self.tp.delivered_mstamp = now;
        }
        SkbTx {
            first_tx_mstamp: self.tp.first_tx_mstamp,
            delivered_mstamp: self.tp.delivered_mstamp,
            delivered: self.tp.delivered,
            delivered_ce: self.tp.delivered_ce,
            in_flight,
            lost: self.tp.lost,
            is_app_limited: self.tp.app_limited != 0,
        }
    }

    /// `tcp_rate_skb_delivered`: when `s` is the most recently sent packet this ACK
    /// delivered so far (`tcp_skb_sent_after`: later send time, ties broken by the
    /// higher end_seq; mainline since Linux 5.18, google/bbr v3), take the sample's
    /// starting point from it. One packet's walk ([`RateWalk`]); the ACK walks use
    /// [`rate_walk`](Self::rate_walk) over all they deliver.
    #[cfg(test)]
    pub(super) fn rate_skb_delivered(&mut self, s: &mut Seg, rs: &mut RateSample) {
        let mut w = self.rate_walk(rs);
        if w.delivered(s, 0) {
            self.rate_sample_from(s, rs);
        }
        s.flags |= DELIVERED;
    }

    /// Start a walk of `tcp_rate_skb_delivered` calls over packets an ACK delivers,
    /// in the order Linux calls it, from the sample `rs` has so far.
    #[inline(always)]
    pub(super) fn rate_walk(&self, rs: &RateSample) -> RateWalk {
        RateWalk {
            prior_delivered: rs.prior_delivered,
            first_tx_us: self.tp.first_tx_mstamp / NS_PER_US,
            last_end_seq: rs.last_end_seq,
            winner: RateWalk::NONE,
        }
    }

    /// End a walk: the sample takes its starting point from the last packet that
    /// won (the last for which `tcp_rate_skb_delivered` rewrote it), as the calls
    /// would have left it, read from its slot of the retransmit queue's ring (a
    /// segment of the queue, or one popped since: nothing is pushed during a walk).
    #[inline(always)]
    pub(super) fn rate_walk_end(&mut self, w: RateWalk, rs: &mut RateSample) {
        if w.winner != RateWalk::NONE {
            let s = *self.rtx.slot_seg(w.winner);
            self.rate_sample_from(&s, rs);
        }
    }

    /// `tcp_rate_skb_delivered`'s rewrite of the sample's starting point from `s`.
    /// Neither `tp->delivered_ce` nor `tp->lost`, which the 32-bit send-time copies
    /// are widened against, changes during a walk.
    #[inline(always)]
    fn rate_sample_from(&mut self, s: &Seg, rs: &mut RateSample) {
        rs.prior_delivered = s.tx_delivered;
        rs.prior_delivered_ce = s.tx_delivered_ce(self.tp.delivered_ce);
        rs.is_app_limited = s.tx_app_limited;
        rs.is_retrans = s.has(EVER_RETRANS);
        rs.tx_in_flight = s.tx_in_flight;
        rs.lost = s.lost_since_tx(self.tp.lost) as i64;
        rs.last_end_seq = s.end;
        rs.prior_mstamp = s.tx_delivered_mstamp;
        // Send time of the most recently delivered packet.
        self.tp.first_tx_mstamp = s.xmit;
        // Send phase of this flight (tcp_stamp_us_delta on µs stamps), kept in
        // `interval_us` for rate_gen.
        rs.interval_us = (s.xmit / NS_PER_US).saturating_sub(s.tx_first_tx_mstamp / NS_PER_US) as i64;
    }

    /// `tcp_rate_gen`: finish the rate sample of this ACK.
    pub(super) fn rate_gen(&mut self, now: Time, acked_sacked: u32, losses: u32, rs: &mut RateSample) {
        // The application-limited period ends once its data is delivered.
        if self.tp.app_limited != 0 && self.tp.delivered > self.tp.app_limited {
            self.tp.app_limited = 0;
        }
        if acked_sacked > 0 {
            self.tp.delivered_mstamp = now;
        }
        rs.acked_sacked = acked_sacked;
        rs.losses = losses;
        if rs.prior_mstamp == 0 {
            rs.delivered = -1;
            rs.interval_us = -1;
            return;
        }
        let prior_time = rs.prior_mstamp;
        rs.delivered = (self.tp.delivered - rs.prior_delivered) as i64;
        rs.delivered_ce = (self.tp.delivered_ce - rs.prior_delivered_ce) as i64;
        let snd_us = rs.interval_us;
        // tcp_stamp_us_delta(tp->tcp_mstamp, rs->prior_mstamp): µs clocks.
        let ack_us = (now / NS_PER_US).saturating_sub(prior_time / NS_PER_US) as i64;
        rs.interval_us = snd_us.max(ack_us);
        // An interval below min RTT is from ACK compression or a stretched clock.
        if rs.interval_us < self.tp.min_rtt_us as i64 {
            rs.interval_us = -1;
        }
    }

    /// `tcp_rate_check_app_limited`: with less than a segment left to send, room in
    /// the cwnd and every lost packet retransmitted, the flow is application-limited
    /// until what is now delivered or in flight has been delivered. Linux calls it
    /// when the application writes; the bulk application here has written its last
    /// byte when the send loop runs out of data (no host qdisc backlog is modelled).
    pub(super) fn rate_check_app_limited(&mut self, now: Time) {
        let unsent = if now >= self.stop_at { 0 } else { self.app_bytes.saturating_sub(self.tp.snd_nxt) };
        let in_flight = self.tp.in_flight();
        if unsent < self.tp.mss as u64 && in_flight < self.tp.cwnd && self.tp.lost_out <= self.tp.retrans_out {
            self.tp.app_limited = (self.tp.delivered + in_flight as u64).max(1);
        }
    }
}

/// A run of `tcp_rate_skb_delivered` calls within one ACK (SACK tagging, then the
/// cumulative clean-up). Each call compares the packet with the sample's current
/// starting point and, when the packet was sent later, rewrites the whole starting
/// point from it; the comparison reads only `rs.prior_delivered`, the send time
/// (`tp->first_tx_mstamp`, in µs) and `rs.last_end_seq`. The walk keeps those three
/// and the last winner, and [`TcpSender::rate_walk_end`] writes the sample once:
/// the same sample and `first_tx_mstamp` as a rewrite per winner.
pub(super) struct RateWalk {
    prior_delivered: u64,
    first_tx_us: u64,
    last_end_seq: u64,
    /// Ring slot of the last winner (`RtxQueue::slot_seg`), `NONE` before one.
    winner: usize,
}

impl RateWalk {
    const NONE: usize = usize::MAX;

    /// `tcp_rate_skb_delivered` of `s`, held in ring slot `slot` (the caller marks
    /// it `DELIVERED`); whether it became the sample's starting point.
    #[inline(always)]
    pub(super) fn delivered(&mut self, s: &Seg, slot: usize) -> bool {
        if s.has(DELIVERED) {
            return false;
        }
        let tx_us = s.xmit / NS_PER_US;
        if self.prior_delivered == 0 || skb_sent_after(tx_us, self.first_tx_us, s.end, self.last_end_seq) {
            self.prior_delivered = s.tx_delivered;
            self.first_tx_us = tx_us;
            self.last_end_seq = s.end;
            self.winner = slot;
            return true;
        }
        false
    }
}

/// `tcp_skb_sent_after(t1, t2, seq1, seq2)` (include/net/tcp.h): sent later, or at
/// the same time with a higher end sequence.
#[inline]
fn skb_sent_after(t1: u64, t2: u64, seq1: u64, seq2: u64) -> bool {
    t1 > t2 || (t1 == t2 && seq1 > seq2)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::{reno::Reno, CcFlags};
    use crate::config::TcpFlowConfig;
    use crate::time::NS_PER_MS;
    use std::sync::{Arc, Mutex};

    /// Reno that records every `skb_marked_lost` call with `tp->lost` at the time.
    struct LossRecorder(Arc<Mutex<Vec<(SkbLostInfo, u64)>>>);

    impl CongestionControl for LossRecorder {
        fn name(&self) -> &'static str {
            "loss-recorder"
        }
        fn flags(&self) -> CcFlags {
            CcFlags::default()
        }
        fn ssthresh(&mut self, tp: &CcSock) -> u32 {
            Reno.ssthresh(tp)
        }
        fn skb_marked_lost(&mut self, tp: &mut CcSock, skb: &SkbLostInfo) {
            self.0.lock().unwrap().push((*skb, tp.lost));
        }
    }

    /// An established, unpaced sender without TSO, 1 ms min RTT.
    fn sender(cc: Box<dyn CongestionControl>) -> TcpSender {
        let cfg: TcpFlowConfig =
            serde_json::from_value(serde_json::json!({"cc": "reno", "rtt_ns": 10_000_000u64, "tso": false})).unwrap();
        let mut s = TcpSender::new(0, &cfg, cc, Time::MAX);
        s.phase = Phase::Established;
        s.tp.min_rtt_us = 1_000;
        s
    }

    /// Queue one new segment sent at `now`, as `tcp_write_xmit` does.
    fn send(s: &mut TcpSender, now: Time) {
        let seq = s.tp.snd_nxt;
        let tx = s.rate_skb_sent(now, s.tp.in_flight() + 1);
        s.rtx.push_back(Seg::sent(seq, seq + 1448, now, &tx));
        s.tp.snd_nxt += 1448;
        s.tp.packets_out += 1;
    }

    /// Cumulatively acknowledge the first `n` queued segments at `now`.
    fn ack(s: &mut TcpSender, n: usize, now: Time) -> RateSample {
        let mut rs = RateSample::default();
        for _ in 0..n {
            let mut seg = s.rtx.pop_front().unwrap();
            s.tp.packets_out -= 1;
            s.tp.delivered += 1;
            s.rate_skb_delivered(&mut seg, &mut rs);
        }
        s.rate_gen(now, n as u32, 0, &mut rs);
        rs
    }

    #[test]
    fn a_sample_spans_the_longer_of_the_send_and_the_ack_phase() {
        // tcp_rate.c: bw = delivered / max(send interval, ACK interval).
        let mut s = sender(Box::new(Reno));
        let t0 = 10 * NS_PER_MS;
        for k in 0..4 {
            send(&mut s, t0 + k * NS_PER_MS);
        }
        // First ACK, 20 ms after the flight started from idle, for 2 packets: both
        // were sent with delivered = 0; the most recently sent one (t0 + 1 ms,
        // tcp_skb_sent_after) is the sample's start; its send phase is 1 ms, the
        // ACK phase 20 ms.
        let rs = ack(&mut s, 2, t0 + 20 * NS_PER_MS);
        assert_eq!((rs.prior_delivered, rs.prior_mstamp), (0, t0));
        assert_eq!((rs.delivered, rs.interval_us), (2, 20_000));
        assert_eq!(rs.tx_in_flight, 2, "the second packet's snapshot");
        assert_eq!((s.tp.delivered_mstamp, s.tp.first_tx_mstamp), (t0 + 20 * NS_PER_MS, t0 + NS_PER_MS));
        // A packet sent at 21 ms carries delivered = 2 and the send phase start.
        send(&mut s, t0 + 21 * NS_PER_MS);
        let tx = s.rtx.back().unwrap().tx(&s.tp);
        assert_eq!((tx.delivered, tx.delivered_mstamp, tx.first_tx_mstamp), (2, t0 + 20 * NS_PER_MS, t0 + NS_PER_MS));
        // The ACK at 25 ms delivers it with the two older ones: it is the most
        // recently sent, so delivered = 5 − 2 = 3 over max(20 ms send, 5 ms ACK):
        // the send phase is the longer one here (ACK compression).
        let rs = ack(&mut s, 3, t0 + 25 * NS_PER_MS);
        assert_eq!((rs.prior_delivered, rs.delivered, rs.interval_us), (2, 3, 20_000));
        assert_eq!(rs.tx_in_flight, 3, "two in flight when it left, plus itself");
        assert_eq!(rs.last_end_seq, 5 * 1448);
        // Below min RTT the interval is not trusted.
        s.tp.min_rtt_us = 30_000;
        send(&mut s, t0 + 26 * NS_PER_MS);
        let rs = ack(&mut s, 1, t0 + 27 * NS_PER_MS);
        assert_eq!((rs.delivered, rs.interval_us), (1, -1));
    }

    #[test]
    fn the_sample_starts_at_the_most_recently_sent_packet_ties_broken_by_sequence() {
        let mut s = sender(Box::new(Reno));
        let t0 = 10 * NS_PER_MS;
        // Three packets of one TSO burst (same send time) and a fourth 2 ms later,
        // delivered together by one ACK; none carries a later tx.delivered.
        for k in 0..3 {
            send(&mut s, t0);
            assert_eq!(s.rtx[k].xmit, t0);
        }
        send(&mut s, t0 + 2 * NS_PER_MS);
        // The ACK processes them in sequence order; the last-sent wins.
        let rs = ack(&mut s, 4, t0 + 15 * NS_PER_MS);
        assert_eq!((rs.tx_in_flight, rs.last_end_seq), (4, 4 * 1448));
        assert_eq!(rs.interval_us, 15_000, "ACK phase from the flight's start");
        // Two packets sent at the same time: the higher end_seq is the sample
        // (delivered > 0 at their send: with tx.delivered = 0, Linux's
        // `!rs->prior_delivered` lets every later-processed packet replace it).
        let mut s = sender(Box::new(Reno));
        s.tp.delivered = 5;
        send(&mut s, t0);
        send(&mut s, t0);
        let mut rs = RateSample::default();
        let (mut a, mut b) = (s.rtx[0], s.rtx[1]);
        s.tp.delivered += 2;
        s.tp.first_tx_mstamp = 0;
        s.rate_skb_delivered(&mut b, &mut rs);
        s.rate_skb_delivered(&mut a, &mut rs);
        assert_eq!((rs.last_end_seq, rs.tx_in_flight), (2 * 1448, 2), "order of processing does not matter");
        // A SACKed packet is not sampled again when cumulatively acknowledged.
        let mut rs2 = RateSample::default();
        s.rate_skb_delivered(&mut b, &mut rs2);
        assert_eq!(rs2.prior_mstamp, 0);
    }

    #[test]
    fn an_interval_below_min_rtt_and_a_sample_without_timing_are_invalid() {
        let mut s = sender(Box::new(Reno));
        s.tp.min_rtt_us = 10_000;
        send(&mut s, NS_PER_MS);
        // 9.999 ms: below min RTT (ACK compression or a stretched clock): discarded,
        // but the delivery counts stand.
        let rs = ack(&mut s, 1, NS_PER_MS + 9_999_000);
        assert_eq!((rs.delivered, rs.interval_us, rs.acked_sacked), (1, -1, 1));
        send(&mut s, 20 * NS_PER_MS);
        let rs = ack(&mut s, 1, 30 * NS_PER_MS);
        assert_eq!((rs.delivered, rs.interval_us), (1, 10_000), "exactly min RTT is kept");
        // An ACK that delivers nothing has no timing: delivered = interval = −1.
        let mut rs = RateSample::default();
        s.rate_gen(31 * NS_PER_MS, 0, 2, &mut rs);
        assert_eq!((rs.delivered, rs.interval_us, rs.losses), (-1, -1, 2));
    }

    #[test]
    fn running_out_of_data_marks_an_app_limited_period_until_it_is_delivered() {
        let mut s = sender(Box::new(Reno));
        s.app_bytes = 3 * 1448;
        s.tp.delivered = 7;
        for k in 0..3 {
            send(&mut s, NS_PER_MS + k);
        }
        assert!(!s.rtx[0].tx_app_limited);
        s.rate_check_app_limited(2 * NS_PER_MS);
        assert_eq!(s.tp.app_limited, 7 + 3, "delivered + in flight");
        // Not app-limited when the cwnd is full or a lost packet waits for its
        // retransmission.
        let mut c = sender(Box::new(Reno));
        c.app_bytes = 0;
        c.tp.cwnd = 2;
        c.tp.packets_out = 2;
        c.rate_check_app_limited(0);
        assert_eq!(c.tp.app_limited, 0);
        c.tp.cwnd = 10;
        c.tp.lost_out = 1;
        c.rate_check_app_limited(0);
        assert_eq!(c.tp.app_limited, 0);
        // Packets sent now carry the mark; the ACK that delivers past the period ends it.
        s.app_bytes = u64::MAX;
        send(&mut s, 3 * NS_PER_MS);
        assert!(s.rtx[3].tx_app_limited);
        let rs = ack(&mut s, 3, 20 * NS_PER_MS);
        assert!(!rs.is_app_limited, "sampled from a packet sent before the period");
        assert_eq!(s.tp.app_limited, 10, "delivered = 10 is not past the period yet");
        let rs = ack(&mut s, 1, 21 * NS_PER_MS);
        assert!(rs.is_app_limited);
        assert_eq!(s.tp.app_limited, 0);
    }

    #[test]
    fn in_flight_and_lost_snapshots_follow_a_loss_and_its_retransmission() {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let mut s = sender(Box::new(LossRecorder(seen.clone())));
        for k in 0..6 {
            send(&mut s, NS_PER_MS + k * 1000);
        }
        let ins: Vec<u32> = s.rtx.iter().map(|g| g.tx_in_flight).collect();
        assert_eq!(ins, [1, 2, 3, 4, 5, 6]);
        // tcp_mark_skb_lost on the head: lost_out and tp->lost count it, the CC
        // sees it with its transmit snapshot.
        s.mark_skb_lost(0);
        assert_eq!((s.tp.lost_out, s.tp.lost, s.tp.in_flight()), (1, 1, 5));
        {
            let seen = seen.lock().unwrap();
            assert_eq!(seen.len(), 1);
            let (info, lost_then) = seen[0];
            assert_eq!((info.seq, info.end_seq, info.pcount), (0, 1448, 1));
            assert_eq!((info.tx.in_flight, info.tx.lost), (1, 0));
            assert_eq!(lost_then, 1, "the hook runs after tp->lost counted the packet");
        }
        // Marking it again does nothing.
        s.mark_skb_lost(0);
        assert_eq!((s.tp.lost_out, s.tp.lost), (1, 1));
        // Its retransmission leaves with 5 others in flight and tp->lost = 1.
        let mut out = Vec::new();
        s.retransmit_seg(0, 10 * NS_PER_MS, &mut out);
        assert_eq!((s.rtx[0].tx_in_flight, s.rtx[0].tx(&s.tp).lost), (6, 1));
        // A packet sent before the loss was marked reports it in rs.lost.
        let mut rs = RateSample::default();
        let mut seg = s.rtx[3];
        s.tp.delivered += 1;
        s.rate_skb_delivered(&mut seg, &mut rs);
        assert_eq!((rs.tx_in_flight, rs.lost), (4, 1));
        // The retransmission is lost too: retrans_out drops, tp->lost counts it again.
        s.mark_skb_lost(0);
        assert_eq!((s.tp.retrans_out, s.tp.lost_out, s.tp.lost), (0, 1, 2));
        assert_eq!(seen.lock().unwrap().len(), 2);
        let mut rs = RateSample::default();
        let mut seg = s.rtx[0];
        s.rate_skb_delivered(&mut seg, &mut rs);
        assert_eq!((rs.tx_in_flight, rs.lost, rs.is_retrans), (6, 1, true));
    }

    /// A walk over an ACK's delivered packets leaves the sample and
    /// `first_tx_mstamp` as one rewrite per winning packet does (the per-call
    /// `tcp_rate_skb_delivered`, written out here): packets sent in and out of order,
    /// within one µs of each other, some already sampled, some of them popped.
    #[test]
    fn a_walk_leaves_the_sample_a_rewrite_per_winner_leaves() {
        fn per_call(s: &mut TcpSender, g: &Seg, rs: &mut RateSample) {
            if g.has(DELIVERED) {
                return;
            }
            let tx_us = g.xmit / NS_PER_US;
            if rs.prior_delivered == 0
                || skb_sent_after(tx_us, s.tp.first_tx_mstamp / NS_PER_US, g.end, rs.last_end_seq)
            {
                rs.prior_delivered = g.tx_delivered;
                rs.prior_delivered_ce = g.tx_delivered_ce(s.tp.delivered_ce);
                rs.is_app_limited = g.tx_app_limited;
                rs.is_retrans = g.has(EVER_RETRANS);
                rs.tx_in_flight = g.tx_in_flight;
                rs.lost = g.lost_since_tx(s.tp.lost) as i64;
                rs.last_end_seq = g.end;
                rs.prior_mstamp = g.tx_delivered_mstamp;
                s.tp.first_tx_mstamp = g.xmit;
                rs.interval_us = tx_us.saturating_sub(g.tx_first_tx_mstamp / NS_PER_US) as i64;
            }
        }
        let key = |rs: &RateSample, s: &TcpSender| {
            (
                (rs.prior_delivered, rs.prior_delivered_ce, rs.is_app_limited, rs.is_retrans, rs.tx_in_flight),
                (rs.lost, rs.last_end_seq, rs.prior_mstamp, rs.interval_us, s.tp.first_tx_mstamp),
            )
        };
        let mut rng = crate::rng::stream(7, crate::rng::Stream::Flow(0));
        for round in 0..200u64 {
            let mut s = sender(Box::new(Reno));
            s.tp.first_tx_mstamp = rng.next_u32() as u64 % 3_000;
            let n = 1 + (rng.next_u32() % 12) as usize;
            for k in 0..n {
                // Send times jump back and forth within a few µs; every stamp differs.
                let xmit = 1_000 + (rng.next_u32() as u64 % 5_000) + k as u64;
                let tx = SkbTx {
                    first_tx_mstamp: rng.next_u32() as u64 % 1_000,
                    delivered_mstamp: xmit / 2,
                    delivered: (rng.next_u32() % 3) as u64,
                    delivered_ce: k as u64,
                    in_flight: k as u32 + 1,
                    lost: 0,
                    is_app_limited: rng.next_u32().is_multiple_of(2),
                };
                let seq = k as u64 * 1448;
                let mut g = Seg::sent(seq, seq + 1448, xmit, &tx);
                if rng.next_u32().is_multiple_of(4) {
                    g.flags |= DELIVERED;
                }
                if rng.next_u32().is_multiple_of(4) {
                    g.flags |= EVER_RETRANS;
                }
                s.rtx.push_back(g);
                s.tp.packets_out += 1;
            }
            s.tp.delivered_ce = n as u64 + 3;
            s.tp.lost = 2;
            // The reference, per call, on a copy of the sender.
            let mut r = sender(Box::new(Reno));
            r.tp.first_tx_mstamp = s.tp.first_tx_mstamp;
            r.tp.delivered_ce = s.tp.delivered_ce;
            r.tp.lost = s.tp.lost;
            let start = RateSample { prior_delivered: round % 2, last_end_seq: 3 * 1448, ..RateSample::default() };
            let mut rs_ref = start;
            let segs: Vec<Seg> = s.rtx.iter().copied().collect();
            // SACK tagging of every other packet by index, then the cumulative pops.
            let tagged: Vec<usize> = (0..n).filter(|i| i % 2 == 1).collect();
            for &i in &tagged {
                per_call(&mut r, &segs[i], &mut rs_ref);
            }
            for (i, g) in segs.iter().enumerate() {
                if !tagged.contains(&i) {
                    per_call(&mut r, g, &mut rs_ref);
                }
            }
            let mut rs = start;
            let mut w = s.rate_walk(&rs);
            for &i in &tagged {
                let g = s.rtx[i];
                w.delivered(&g, s.rtx.slot(i));
                s.rtx.set_flags(i, g.flags | DELIVERED);
            }
            s.rate_walk_end(w, &mut rs);
            let mut w = s.rate_walk(&rs);
            for _ in 0..n {
                let slot = s.rtx.slot(0);
                let g = s.rtx.pop_front().unwrap();
                w.delivered(&g, slot);
            }
            s.rate_walk_end(w, &mut rs);
            assert_eq!(key(&rs, &s), key(&rs_ref, &r), "round {round}");
        }
    }
}
