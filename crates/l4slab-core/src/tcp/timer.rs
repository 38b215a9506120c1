//! Timers as Linux's `net/ipv4/tcp_timer.c`: the one retransmission timer
//! (`icsk_retransmit_timer` with `icsk_pending` = RTO, loss probe or RACK reorder
//! timeout) dispatched by `tcp_write_timer_handler`, RTO expiry
//! (`tcp_retransmit_timer`: RFC 6298 §5.4–5.6 with Linux's backoff cap), SYN
//! retransmission, and the pacing hrtimer (`tcp_pace_kick`) that releases the
//! send loop at the EDT departure time. `tcp_enter_loss` is in `input` as
//! in Linux.

use super::sender::*;

impl TcpSender {
    /// `inet_csk_reset_xmit_timer`.
    pub(super) fn reset_xmit_timer(&mut self, kind: XmitTimer, at: Time) {
        self.xmit_timer = Some((kind, at));
    }

    /// `tcp_write_timer_handler` for whatever is due, then the pacing hrtimer.
    pub(super) fn timer_handler(&mut self, now: Time, out: &mut Vec<Packet>) {
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
        // tcp_pace_kick → tcp_tasklet_func: resume retransmissions, then new data.
        if self.pacing_timer.is_some_and(|t| t <= now) {
            self.pacing_timer = None;
            if self.tp.lost_out > self.tp.retrans_out {
                self.xmit_retransmit_queue(now, out);
            }
            self.write_xmit(now, out, false);
        }
    }

    /// `tcp_retransmit_timer`: RTO expiry.
    pub(super) fn retransmit_timer(&mut self, now: Time, out: &mut Vec<Packet>) {
        if self.tp.packets_out == 0 {
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
}
