//! TCP Reno as Linux implements it in `net/ipv4/tcp_cong.c` (tcp.md §4, [MG]).
//!
//! Reno is also the fallback of DCTCP and Prague, so the three hooks are exposed as
//! free functions (`reno_cong_avoid`, `reno_ssthresh`, `reno_undo_cwnd`) that other
//! modules can call, mirroring the exported `tcp_reno_*` kernel helpers.

use super::*;

/// `tcp_reno_cong_avoid` (tcp.md §4, §2.2).
pub fn reno_cong_avoid(tp: &mut CcSock, acked: u32) {
    // §2.2/§4: only while cwnd-limited; slow start grows by the packets delivered (no
    // ABC L=2 cap), up to ssthresh; the leftover goes to congestion avoidance.
    let acked = tp.acked_after_slow_start(acked);
    if acked == 0 {
        return;
    }
    // §4: congestion avoidance, +1 packet per cwnd packets delivered.
    let w = tp.cwnd;
    tp.cong_avoid_ai(w, acked);
}

/// `tcp_reno_ssthresh`: half the cwnd at the moment of the event, at least 2 (tcp.md §4).
#[inline]
pub fn reno_ssthresh(tp: &CcSock) -> u32 {
    (tp.cwnd >> 1).max(2)
}

/// `tcp_reno_undo_cwnd`: max(cwnd, prior_cwnd) (tcp.md §4).
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
