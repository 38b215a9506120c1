//! TCP Reno as Linux implements it in `net/ipv4/tcp_cong.c` (`tcp_reno_ssthresh`,
//! `tcp_reno_cong_avoid`, `tcp_reno_undo_cwnd`; RFC 5681 with Linux's slow start
//! that grows by every packet delivered, no RFC 3465 L = 2 cap).
//!
//! Reno is also the fallback of DCTCP and Prague, so the three hooks are exposed as
//! free functions mirroring the exported `tcp_reno_*` kernel helpers, and
//! [`RenoFallback`] is the "<cc>-reno" switch both use, written once.

use super::descriptor::{CcDescriptor, ReceiverDefaults};
use super::*;

/// `tcp_reno_cong_avoid`.
pub fn reno_cong_avoid(tp: &mut CcSock, acked: u32) {
    // Only while cwnd-limited (`tcp_is_cwnd_limited`); slow start grows by the
    // packets delivered up to ssthresh; the leftover goes to congestion avoidance.
    let acked = tp.acked_after_slow_start(acked);
    if acked == 0 {
        return;
    }
    // Congestion avoidance: +1 packet per cwnd packets delivered (RFC 5681 §3.1).
    let w = tp.cwnd;
    tp.cong_avoid_ai(w, acked);
}

/// `tcp_reno_ssthresh`: half the cwnd at the moment of the event, at least 2.
#[inline]
pub fn reno_ssthresh(tp: &CcSock) -> u32 {
    (tp.cwnd >> 1).max(2)
}

/// `tcp_reno_undo_cwnd`: max(cwnd, prior_cwnd).
#[inline]
pub fn reno_undo_cwnd(tp: &CcSock) -> u32 {
    tp.cwnd.max(tp.prior_cwnd)
}

/// Linux `reno` (`tcp_reno` ops: ssthresh, cong_avoid, undo_cwnd; no other hooks).
#[derive(Clone, Copy, Debug, Default)]
pub struct Reno;

impl Reno {
    pub fn new() -> Self {
        Reno
    }
}

impl CongestionControl for Reno {
    /// No `pkts_acked` or `in_ack_event` hook (the sender skips both calls).
    fn has_pkts_acked(&self) -> bool {
        false
    }
    fn has_in_ack_event(&self) -> bool {
        false
    }
    fn name(&self) -> &'static str {
        "reno"
    }

    fn ssthresh(&mut self, tp: &CcSock) -> u32 {
        reno_ssthresh(tp)
    }

    fn cong_avoid(&mut self, tp: &mut CcSock, acked: u32) {
        reno_cong_avoid(tp, acked)
    }

    fn undo_cwnd(&mut self, tp: &CcSock) -> u32 {
        reno_undo_cwnd(tp)
    }
}

/// `reno` in the registry: no module parameters.
pub const DESCRIPTOR: CcDescriptor = CcDescriptor {
    name: "reno",
    doc: "TCP Reno (net/ipv4/tcp_cong.c; RFC 5681): halve on loss or ECE, +1 packet per RTT.",
    l4s: false,
    flags: CcFlags::NONE,
    receiver: ReceiverDefaults::NONE,
    build: |p| {
        super::descriptor::parse_params("reno", NoParams {}, p)?;
        Ok(Box::new(Reno))
    },
    check: |p| super::descriptor::parse_params("reno", NoParams {}, p).map(drop),
    reports_state: false,
    params: Vec::new,
};

/// The parameters of a module without any.
#[derive(Clone, Copy, Debug, Default, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NoParams {}

/// What a CC needs from the handshake to run as itself.
pub trait EcnRequirement {
    /// Whether `mode` satisfies it; otherwise `init` switches to "<cc>-reno".
    fn ecn_ok(&self, mode: EcnMode) -> bool;
    /// Name of the fallback (`dctcp-reno`, `prague-reno`).
    fn reno_name(&self) -> &'static str;
}

/// A CC that becomes Reno when the handshake did not give the ECN feedback it
/// needs: `dctcp_init` and `prague_init` swap `icsk_ca_ops` for their `*_reno`
/// ops (`tcp_reno_ssthresh`, `tcp_reno_cong_avoid`, `tcp_reno_undo_cwnd`, no other
/// hooks, no `TCP_CONG_*` flags), so the stack stops setting ECT and runs PRR.
#[derive(Clone, Debug)]
pub struct RenoFallback<C> {
    inner: C,
    reno: bool,
}

impl<C> RenoFallback<C> {
    pub fn new(inner: C) -> Self {
        RenoFallback { inner, reno: false }
    }
    /// The wrapped algorithm.
    pub fn inner(&self) -> &C {
        &self.inner
    }
    /// Whether `init` fell back to Reno.
    pub fn is_reno_fallback(&self) -> bool {
        self.reno
    }
}

impl<C: CongestionControl + EcnRequirement> CongestionControl for RenoFallback<C> {
    fn name(&self) -> &'static str {
        if self.reno {
            self.inner.reno_name()
        } else {
            self.inner.name()
        }
    }
    fn flags(&self) -> CcFlags {
        if self.reno {
            CcFlags::NONE
        } else {
            self.inner.flags()
        }
    }
    fn init(&mut self, tp: &mut CcSock) {
        self.reno = !self.inner.ecn_ok(tp.ecn_mode);
        if !self.reno {
            self.inner.init(tp);
        }
    }
    fn ssthresh(&mut self, tp: &CcSock) -> u32 {
        if self.reno {
            reno_ssthresh(tp)
        } else {
            self.inner.ssthresh(tp)
        }
    }
    fn cong_avoid(&mut self, tp: &mut CcSock, acked: u32) {
        if self.reno {
            reno_cong_avoid(tp, acked)
        } else {
            self.inner.cong_avoid(tp, acked)
        }
    }
    fn has_cong_control(&self) -> bool {
        !self.reno && self.inner.has_cong_control()
    }
    fn reads_tx_in_flight(&self) -> bool {
        !self.reno && self.inner.reads_tx_in_flight()
    }
    fn cong_control(&mut self, tp: &mut CcSock, rs: &RateSample) {
        if !self.reno {
            self.inner.cong_control(tp, rs)
        }
    }
    fn set_state(&mut self, tp: &mut CcSock, new_state: CaState) {
        if !self.reno {
            self.inner.set_state(tp, new_state)
        }
    }
    fn cwnd_event(&mut self, tp: &mut CcSock, ev: CaEvent) {
        if !self.reno {
            self.inner.cwnd_event(tp, ev)
        }
    }
    fn has_in_ack_event(&self) -> bool {
        !self.reno && self.inner.has_in_ack_event()
    }
    fn in_ack_event(&mut self, tp: &mut CcSock, flags: AckEventFlags) {
        if !self.reno {
            self.inner.in_ack_event(tp, flags)
        }
    }
    fn has_pkts_acked(&self) -> bool {
        !self.reno && self.inner.has_pkts_acked()
    }
    fn pkts_acked(&mut self, tp: &mut CcSock, sample: &AckSample) {
        if !self.reno {
            self.inner.pkts_acked(tp, sample)
        }
    }
    fn skb_marked_lost(&mut self, tp: &mut CcSock, skb: &SkbLostInfo) {
        if !self.reno {
            self.inner.skb_marked_lost(tp, skb)
        }
    }
    fn undo_cwnd(&mut self, tp: &CcSock) -> u32 {
        if self.reno {
            reno_undo_cwnd(tp)
        } else {
            self.inner.undo_cwnd(tp)
        }
    }
    fn tso_segs(&self, tp: &CcSock, mss_now: u32) -> Option<u32> {
        if self.reno {
            None
        } else {
            self.inner.tso_segs(tp, mss_now)
        }
    }
    /// The metric keeps reporting the (frozen) α after a fallback.
    fn alpha(&self) -> Option<f64> {
        self.inner.alpha()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ca_sock(cwnd: u32) -> CcSock {
        let mut tp = CcSock::new(1448, cwnd);
        tp.ssthresh = cwnd; // congestion avoidance
        tp.is_cwnd_limited = true;
        tp
    }

    #[test]
    fn ssthresh_halves_with_floor_of_two() {
        let mut r = Reno;
        let mut tp = ca_sock(100);
        assert_eq!(r.ssthresh(&tp), 50);
        tp.cwnd = 101;
        assert_eq!(r.ssthresh(&tp), 50);
        tp.cwnd = 3;
        assert_eq!(r.ssthresh(&tp), 2);
        tp.cwnd = 1;
        assert_eq!(r.ssthresh(&tp), 2);
    }

    #[test]
    fn ca_grows_one_per_cwnd_acked() {
        let mut r = Reno;
        let mut tp = ca_sock(10);
        for _ in 0..9 {
            r.cong_avoid(&mut tp, 1);
        }
        assert_eq!(tp.cwnd, 10);
        r.cong_avoid(&mut tp, 1);
        assert_eq!(tp.cwnd, 11);
        // The next +1 needs 11 more packets.
        for _ in 0..10 {
            r.cong_avoid(&mut tp, 1);
        }
        assert_eq!(tp.cwnd, 11);
        r.cong_avoid(&mut tp, 1);
        assert_eq!(tp.cwnd, 12);
        // One full window at 100 packets with delayed ACKs (2 per ACK): +1.
        let mut tp = ca_sock(100);
        for _ in 0..50 {
            r.cong_avoid(&mut tp, 2);
        }
        assert_eq!(tp.cwnd, 101);
        assert_eq!(tp.cwnd_cnt, 0);
    }

    #[test]
    fn slow_start_leftover_goes_to_ca() {
        let mut r = Reno;
        let mut tp = CcSock::new(1448, 10);
        tp.ssthresh = 15;
        tp.is_cwnd_limited = true;
        // A stretch ACK for 8 packets: +5 to ssthresh, 3 credits of CA.
        r.cong_avoid(&mut tp, 8);
        assert_eq!(tp.cwnd, 15);
        assert_eq!(tp.cwnd_cnt, 3);
        // Slow start doubles per round: 10 ACKed packets at cwnd 10 -> 20.
        let mut tp = CcSock::new(1448, 10);
        tp.is_cwnd_limited = true;
        for _ in 0..10 {
            r.cong_avoid(&mut tp, 1);
        }
        assert_eq!(tp.cwnd, 20);
    }

    #[test]
    fn no_growth_when_not_cwnd_limited() {
        let mut r = Reno;
        let mut tp = ca_sock(10);
        tp.is_cwnd_limited = false;
        for _ in 0..50 {
            r.cong_avoid(&mut tp, 1);
        }
        assert_eq!(tp.cwnd, 10);
        // In slow start, growth continues while cwnd < 2 * max_packets_out.
        let mut tp = CcSock::new(1448, 10);
        tp.max_packets_out = 6;
        r.cong_avoid(&mut tp, 1);
        assert_eq!(tp.cwnd, 11);
        r.cong_avoid(&mut tp, 1);
        assert_eq!(tp.cwnd, 12);
        r.cong_avoid(&mut tp, 1);
        assert_eq!(tp.cwnd, 12);
    }

    #[test]
    fn undo_restores_prior_cwnd() {
        let mut r = Reno;
        let mut tp = ca_sock(50);
        tp.prior_cwnd = 100;
        assert_eq!(r.undo_cwnd(&tp), 100);
        tp.cwnd = 120;
        assert_eq!(r.undo_cwnd(&tp), 120);
    }

    #[test]
    fn by_name_builds_reno() {
        assert_eq!(by_name("reno").unwrap().name(), "reno");
    }
}
