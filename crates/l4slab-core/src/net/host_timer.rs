//! A VM host's timer latency: how late its qdisc watchdog fires (the router's HTB
//! here; the delay node's netem in `delay_line::NetemNode`).
//!
//! When an HTB class runs out of tokens, `sch_htb.c:htb_dequeue` arms the qdisc
//! watchdog for the time the class may send again (`qdisc_watchdog_schedule_ns`,
//! `include/net/pkt_sched.h`, which calls `net/sched/sch_api.c:
//! qdisc_watchdog_schedule_range_ns`: an `hrtimer` in `HRTIMER_MODE_ABS_PINNED`). The packet
//! leaves when that hrtimer's interrupt has run `qdisc_watchdog` (which raises
//! `NET_TX_SOFTIRQ` through `__netif_schedule`) and the softirq has run the qdisc:
//! late by the host's timer latency. On a bare-metal host that is a microsecond or
//! two; in a VM the guest's LAPIC timer is itself an hrtimer of the host (KVM
//! `arch/x86/kvm/lapic.c`, tsc-deadline mode), delivered by a VM exit and entry,
//! and the vCPU may not be running when it expires.
//!
//! Magnitudes, from primary sources (none of them the testbed's own):
//! - KVM commit d0659d946be0 ("add option to advance tscdeadline hrtimer
//!   expiration") made `lapic_timer_advance_ns` exist because guest timers fire
//!   late; commit 3b8a5df6c4dc ("Tune lapic_timer_advance_ns automatically")
//!   measured kvm-unit-tests `tscdeadline_latency` at 5 700 cycles (upstream host
//!   kernel) and 9 600 cycles (a 3.10 host kernel) on a Skylake server, i.e.
//!   ≈ 1–4 µs at an assumed 2.5–4 GHz (the commit gives no clock); commit
//!   ce7a058a2117 (VMX preemption timer): ≈ 3 200 cycles.
//! - rt-tests `README.markdown` (cyclictest, a user thread woken by an hrtimer,
//!   which adds a scheduler wake-up to the interrupt): "on a non-realtime system"
//!   Avg 14–17 µs, Max 39 ms; on a realtime one Avg 10 µs, Max 18–22 µs.
//!
//! So the mean lateness of a guest's hrtimer is a few µs (interrupt path alone) to
//! ≈ 15 µs (with a wake-up), with rare long excursions. The model: each watchdog
//! firing is late by an exponentially distributed time of mean `mean_ns` (the
//! right-skewed shape of cyclictest histograms; one parameter, so nothing is
//! tuned beyond the scale that the sources bound). Every draw comes from the
//! link's own random stream (`rng::Stream::HostTimer`). Mean 0 = off: the
//! watchdog fires exactly when the class has tokens, as the engine always did.
//!
//! What lateness changes (`net/link.rs`): tokens accrue meanwhile up to the bucket
//! (`htb_charge_class` caps them at `buffer`), so the service instants drift off
//! the fixed 1-frame grid; and a pending watchdog does not block the qdisc: every
//! enqueue runs the qdisc (`net/core/dev.c:__dev_xmit_skb` → `__qdisc_run` →
//! `sch_generic.c:qdisc_restart` → `htb_dequeue`), and `htb_dequeue` first moves
//! every class whose wait has ended back to the active rows (`htb_do_events`, by
//! `q->now`, whatever the hrtimer does), so it sends if the class has tokens by
//! then. A packet arriving between the due time and the late firing is therefore
//! served at its arrival.

use crate::rng::SimRng;

/// Exponentially distributed timer lateness of one host.
#[derive(Clone, Debug)]
pub struct HostTimer {
    mean_ns: f64,
    rng: SimRng,
}

impl HostTimer {
    /// `None` when `mean_ns` is 0 (off).
    pub fn new(mean_ns: u64, rng: SimRng) -> Option<Self> {
        (mean_ns > 0).then_some(HostTimer { mean_ns: mean_ns as f64, rng })
    }

    /// How late the next firing is, ns (inverse transform of Exp(1/mean)).
    #[inline]
    pub fn lateness_ns(&mut self) -> u64 {
        round_ns(-self.rng.unit_open0().ln() * self.mean_ns)
    }
}

/// `x.round() as u64` for `x ≥ 0` (or `-0.0`), without the call to libm's `round`
/// that `f64::round` compiles to on baseline x86-64 (no SSE4.1 `roundsd`): the
/// conversion truncates, and the fraction `x - trunc(x)` is exact below 2^52 (above,
/// every double is an integer and the fraction is 0), so a fraction of one half or
/// more rounds away from zero exactly as `round` does.
///
/// Below 2^63 (every lateness a run draws: the largest, -ln(2^-53) means, is 37 means)
/// the conversions go through `i64`, one instruction each way on x86-64, where those of
/// `u64` are a dozen (the halves above 2^63, the saturation); the values are the same.
#[inline(always)]
fn round_ns(x: f64) -> u64 {
    if (0.0..9_223_372_036_854_775_808.0).contains(&x) {
        let whole = x as i64;
        return (whole + i64::from(x - whole as f64 >= 0.5)) as u64;
    }
    // From 2^64 on, `as` saturates at u64::MAX, as `round` then does.
    let whole = x as u64;
    whole.saturating_add(u64::from(x - whole as f64 >= 0.5))
}

#[cfg(test)]
mod round_tests {
    use super::round_ns;

    #[test]
    fn rounds_as_f64_round_does() {
        let mut cases = vec![
            0.0,
            -0.0,
            0.5,
            1.5,
            2.5,
            0.49999999999999994,
            4503599627370495.5,
            4503599627370496.0,
            9007199254740993.0,
            1e18,
            9223372036854774784.0,
            9223372036854775808.0,
            f64::from_bits(0x43ef_ffff_ffff_ffff), // the largest double below 2^64
            1e20,
            f64::INFINITY,
            12345.499999,
            12345.5,
        ];
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for _ in 0..200_000 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let u = ((x >> 11) as f64 + 0.5) / (1u64 << 53) as f64;
            cases.push(-u.ln() * 25_000.0);
            cases.push(f64::from_bits(0x3fe0_0000_0000_0000 + (x >> 40)) * (x >> 54) as f64);
        }
        for v in cases {
            assert_eq!(round_ns(v), v.round() as u64, "{v:e}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::{stream, Stream};

    #[test]
    fn off_at_zero_and_exponential_with_the_given_mean() {
        assert!(HostTimer::new(0, stream(1, Stream::HostTimer)).is_none());
        let mut t = HostTimer::new(10_000, stream(1, Stream::HostTimer)).unwrap();
        let n = 200_000;
        let v: Vec<u64> = (0..n).map(|_| t.lateness_ns()).collect();
        let mean = v.iter().sum::<u64>() as f64 / n as f64;
        // Standard error of the mean: 10 µs / sqrt(2e5) = 22 ns.
        assert!((mean - 10_000.0).abs() < 150.0, "mean {mean}");
        // Exponential: P(X > mean) = e^-1, P(X > 3 mean) = e^-3.
        let above = |x: u64| v.iter().filter(|&&y| y > x).count() as f64 / n as f64;
        assert!((above(10_000) - (-1f64).exp()).abs() < 0.005);
        assert!((above(30_000) - (-3f64).exp()).abs() < 0.002);
        // The same seed draws the same numbers.
        let mut u = HostTimer::new(10_000, stream(1, Stream::HostTimer)).unwrap();
        assert_eq!(u.lateness_ns(), v[0]);
    }
}
