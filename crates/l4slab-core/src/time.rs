//! Simulated time: integer nanoseconds since the start of the run.
//!
//! All engine arithmetic is done in `Time` (u64 ns). Linux keeps several clocks at
//! coarser resolution (jiffies for RTO/delayed-ACK timers, ms TCP timestamps,
//! 1.024 µs "codel time"); the modules that reproduce those quirks convert here.

/// Nanoseconds since the start of the simulation.
pub type Time = u64;

pub const NS_PER_US: u64 = 1_000;
pub const NS_PER_MS: u64 = 1_000_000;
pub const NS_PER_SEC: u64 = 1_000_000_000;

/// Linux `HZ` of the modelled kernels (1000 on distro server kernels; Linux kernel/Kconfig.hz (CONFIG_HZ)).
pub const HZ: u64 = 1000;
pub const NS_PER_JIFFY: u64 = NS_PER_SEC / HZ;

/// `tcp_jiffies32`: the jiffies clock at `t`.
#[inline]
pub fn jiffies(t: Time) -> u64 {
    t / NS_PER_JIFFY
}

/// Round a duration up to whole jiffies, as `usecs_to_jiffies` does for timers.
#[inline]
pub fn round_up_to_jiffy(d: u64) -> u64 {
    d.div_ceil(NS_PER_JIFFY) * NS_PER_JIFFY
}

/// Time to serialise `bytes` at `rate_bps` bit/s, rounded to the nearest ns.
#[inline]
pub fn tx_time(bytes: u64, rate_bps: u64) -> u64 {
    debug_assert!(rate_bps > 0);
    ((bytes as u128 * 8 * NS_PER_SEC as u128 + rate_bps as u128 / 2) / rate_bps as u128) as u64
}

#[inline]
pub fn secs(t: Time) -> f64 {
    t as f64 / NS_PER_SEC as f64
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn frame_time_at_100mbit() {
        // Linux include/net/sch_generic.h:psched_l2t_ns: L2T(1514 B) at 100 Mb/s = 121.12 µs.
        assert_eq!(tx_time(1514, 100_000_000), 121_120);
    }
    #[test]
    fn jiffy_rounding() {
        assert_eq!(round_up_to_jiffy(15_000_001), 16_000_000);
        assert_eq!(round_up_to_jiffy(15_000_000), 15_000_000);
    }
}
