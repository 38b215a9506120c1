//! The shaper of a queued link: an HTB class `rate R burst B` (Linux `sch_htb.c`).
//!
//! HTB lets a class send whenever its token balance is non-negative and charges the
//! frame afterwards ("send first, pay after"), so with tc's default 1600-B bucket at
//! most two frames leave back to back after idle and a backlog drains at exactly R.
//! Tokens are kept in nanoseconds of transmission time, as in `sch_htb.c`.

use crate::time::{tx_time, Time};

/// Token-bucket state of one HTB class.
#[derive(Clone, Debug)]
pub struct Shaper {
    rate_bps: u64,
    /// `burst` as configured, bytes (the bucket follows a rate change).
    burst_bytes: u64,
    /// Bucket depth (`buffer`), ns of transmission time.
    buffer_ns: i64,
    /// Current tokens, ns; may go negative after a send.
    tokens_ns: i64,
    /// Time of the last charge (`t_c`).
    last_ns: Time,
    /// `mbuffer`: credit accumulation is bounded by 60 s of elapsed time.
    mbuffer_ns: i64,
    /// The last frame length charged and its transmission time (`tx_time` is a
    /// 128-bit division; Linux keeps a precomputed rate table, `psched_l2t_ns`).
    last: (u32, i64),
}

impl Shaper {
    pub fn new(rate_bps: u64, burst_bytes: u64) -> Self {
        let buffer_ns = tx_time(burst_bytes, rate_bps) as i64;
        Shaper {
            rate_bps,
            burst_bytes,
            buffer_ns,
            // The class starts with a full bucket.
            tokens_ns: buffer_ns,
            last_ns: 0,
            mbuffer_ns: 60_000_000_000,
            last: (0, 0),
        }
    }

    pub fn rate_bps(&self) -> u64 {
        self.rate_bps
    }

    /// `tc class change ... htb rate R burst B` at `now` (`sch_htb.c:htb_change_class`):
    /// the rate and the bucket (B's transmission time at R, as tc computes `buffer`)
    /// change; the tokens the class holds, in ns, stay (capped by the new bucket).
    pub fn set_rate(&mut self, now: Time, rate_bps: u64) {
        let tokens = self.tokens_at(now);
        self.rate_bps = rate_bps;
        self.buffer_ns = tx_time(self.burst_bytes, rate_bps) as i64;
        self.tokens_ns = tokens.min(self.buffer_ns);
        self.last_ns = now;
        self.last = (0, 0);
    }

    /// Tokens the class would hold at `now`.
    #[inline]
    fn tokens_at(&self, now: Time) -> i64 {
        let elapsed = (now - self.last_ns).min(self.mbuffer_ns as u64) as i64;
        (self.tokens_ns + elapsed).min(self.buffer_ns)
    }

    /// Whether the class may send at `now` (tokens ≥ 0).
    #[inline]
    pub fn can_send(&self, now: Time) -> bool {
        self.tokens_at(now) >= 0
    }

    /// Charge a frame of `wire_len` bytes sent at `now`.
    #[inline]
    pub fn charge(&mut self, now: Time, wire_len: u32) {
        if self.last.0 != wire_len {
            self.last = (wire_len, tx_time(wire_len as u64, self.rate_bps) as i64);
        }
        let t = self.tokens_at(now) - self.last.1;
        self.tokens_ns = t.max(1 - self.mbuffer_ns);
        self.last_ns = now;
    }

    /// Earliest time at which the class may send again.
    #[inline]
    pub fn next_send_time(&self, now: Time) -> Time {
        let t = self.tokens_at(now);
        if t >= 0 {
            now
        } else {
            now + (-t) as u64
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_frames_back_to_back_then_line_rate() {
        // tc's 1600-B bucket at 100 Mbit/s: departures at 0, 0, 114.24 µs, then every 121.12 µs.
        let mut s = Shaper::new(100_000_000, 1600);
        let mut now = 1_000_000_000; // long idle
        let mut departures = Vec::new();
        for _ in 0..5 {
            now = s.next_send_time(now);
            departures.push(now);
            s.charge(now, 1514);
        }
        let t0 = departures[0];
        let rel: Vec<u64> = departures.iter().map(|t| t - t0).collect();
        assert_eq!(rel[1], 0);
        assert_eq!(rel[2], 114_240);
        assert_eq!(rel[3] - rel[2], 121_120);
        assert_eq!(rel[4] - rel[3], 121_120);
    }
}
