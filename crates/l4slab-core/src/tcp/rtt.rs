//! RTT estimation and the RTO (RFC 6298): Jacobson/Karels with Linux's
//! modifications (`tcp_rtt_estimator`, `__tcp_set_rto`), in Linux's scaled units.

use super::{TCP_RTO_MAX_NS, TCP_TIMEOUT_INIT_NS};
use crate::time::{round_up_to_jiffy, NS_PER_US};

/// RTT state of a sender (`srtt_us` ×8, `mdev_us`/`rttvar_us` ×4 as in `tcp_sock`).
#[derive(Clone, Debug)]
pub struct RttEstimator {
    /// Smoothed RTT in µs, scaled by 8 (0 = no sample yet).
    pub srtt_us8: u64,
    /// Mean deviation in µs, scaled by 4.
    pub mdev_us4: u64,
    /// Max mdev in the current RTT (×4).
    pub mdev_max_us4: u64,
    /// RTT variance used by the RTO (×4).
    pub rttvar_us4: u64,
    /// snd_nxt when the current "RTT" for the mdev_max decay started.
    pub rtt_seq: u64,
    /// `tcp_rto_min_us`.
    pub rto_min_us: u64,
    /// Current RTO (`icsk_rto`), ns, whole jiffies.
    pub rto_ns: u64,
}

impl RttEstimator {
    pub fn new(rto_min_ns: u64) -> Self {
        RttEstimator {
            srtt_us8: 0,
            mdev_us4: 0,
            mdev_max_us4: 0,
            rttvar_us4: 0,
            rtt_seq: 0,
            rto_min_us: rto_min_ns / NS_PER_US,
            rto_ns: TCP_TIMEOUT_INIT_NS,
        }
    }

    /// Smoothed RTT in µs (0 before the first sample).
    #[inline]
    pub fn srtt_us(&self) -> u64 {
        self.srtt_us8 >> 3
    }

    /// `tcp_rtt_estimator` followed by `tcp_set_rto` for a sample `m_us`.
    #[inline]
    pub fn sample(&mut self, m_us: u64, snd_una: u64, snd_nxt: u64) {
        let mut m = m_us as i64;
        let mut srtt = self.srtt_us8 as i64;
        if srtt != 0 {
            m -= srtt >> 3; // error in the estimate
            srtt += m; // srtt = 7/8 srtt + 1/8 m
            if m < 0 {
                m = -m;
                m -= (self.mdev_us4 >> 2) as i64;
                // RTT decreases barely raise the variance (Linux, not RFC 6298).
                if m > 0 {
                    m >>= 3;
                }
            } else {
                m -= (self.mdev_us4 >> 2) as i64;
            }
            self.mdev_us4 = (self.mdev_us4 as i64 + m).max(0) as u64;
            if self.mdev_us4 > self.mdev_max_us4 {
                self.mdev_max_us4 = self.mdev_us4;
                if self.mdev_max_us4 > self.rttvar_us4 {
                    self.rttvar_us4 = self.mdev_max_us4;
                }
            }
            // Once per RTT, decay rttvar toward the max mdev seen in it.
            if snd_una > self.rtt_seq {
                if self.mdev_max_us4 < self.rttvar_us4 {
                    self.rttvar_us4 -= (self.rttvar_us4 - self.mdev_max_us4) >> 2;
                }
                self.rtt_seq = snd_nxt;
                self.mdev_max_us4 = self.rto_min_us;
            }
        } else {
            srtt = m << 3;
            self.mdev_us4 = (m << 1) as u64;
            self.rttvar_us4 = self.mdev_us4.max(self.rto_min_us);
            self.mdev_max_us4 = self.rttvar_us4;
            self.rtt_seq = snd_nxt;
        }
        self.srtt_us8 = srtt.max(1) as u64;
        self.set_rto();
    }

    /// `tcp_set_rto`: RTO = srtt + rttvar (rttvar ≥ rto_min), bounded by 120 s,
    /// in whole jiffies as the timer wheel uses.
    fn set_rto(&mut self) {
        let rto_us = (self.srtt_us8 >> 3) + self.rttvar_us4;
        self.rto_ns = round_up_to_jiffy(rto_us * NS_PER_US).min(TCP_RTO_MAX_NS);
    }
}

/// `tcp_update_rtt_min` on `tp->min_rtt_us` (`u32::MAX` before the first sample):
/// skip a sample that is probably inflated by a delayed ACK when it is above the
/// current minimum. Linux filters over `tcp_min_rtt_wlen` = 300 s, longer than any
/// run here, so the running minimum is the same value.
pub fn update_min_rtt(min_rtt_us: &mut u32, rtt_us: i64, probably_delayed_ack: bool) {
    if rtt_us < 0 {
        return;
    }
    let rtt = (rtt_us.max(1)) as u32;
    if probably_delayed_ack && rtt > *min_rtt_us {
        return;
    }
    *min_rtt_us = (*min_rtt_us).min(rtt);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_sample_gives_rto_of_m_plus_rto_min() {
        let mut r = RttEstimator::new(200_000_000);
        r.sample(10_000, 0, 100);
        assert_eq!(r.srtt_us(), 10_000);
        // max(3m, m + 200 ms) = 210 ms.
        assert_eq!(r.rto_ns, 210_000_000);
    }

    #[test]
    fn converges_to_a_constant_rtt_and_keeps_the_floor() {
        let mut r = RttEstimator::new(200_000_000);
        let mut una = 0;
        for i in 0..200 {
            una += 10;
            r.sample(20_000, una, una + 10 * (i + 1));
        }
        assert_eq!(r.srtt_us(), 20_000);
        // rttvar never drops below rto_min: RTO = 20 ms + 200 ms.
        assert_eq!(r.rto_ns, 220_000_000);
    }

    #[test]
    fn rtt_increase_raises_rto_above_floor() {
        let mut r = RttEstimator::new(200_000_000);
        r.sample(10_000, 0, 10);
        // A jump to 500 ms: srtt = 10 + 490/8 = 71.25 ms; mdev (×4) = 20 + 490 − 5
        // = 505 ms replaces the 200 ms floor; RTO = 576.25 ms → 577 jiffies.
        r.sample(500_000, 1, 20);
        assert_eq!(r.srtt_us(), 71_250);
        assert_eq!(r.rttvar_us4, 505_000);
        assert_eq!(r.rto_ns, 577_000_000);
    }
}
