//! The classic-ECN-AQM detector of TCP Prague v0.6 (`prague_ecn_fallback`; L4STeam/linux
//! `net/ipv4/tcp_prague.c` at MODULE_VERSION "0.6", commit 02573a2:
//! `prague_rtt_estimator`, `prague_update_rtt_scaling`,
//! `prague_classic_ecn_detection`, `prague_classic_ecn_fallback`).
//!
//! A classic (RFC 3168) AQM marks from a deep, variable queue; an L4S AQM from a
//! shallow, steady one. The detector scores the connection once per α round from
//! the RTT's mean deviation σ and standing-queue depth d (Briscoe & Ahmed, "TCP
//! Prague fall-back on detection of a classic ECN AQM", arXiv:1911.00710):
//! c += ½·lg(σ/V0) + ½·max(0, lg(d/D0)), clamped to [0, C_STICKY]. With
//! `ecn_fallback = 1`, a score above L_STICKY floors α at 0.625·(min(c, 9) − 8) at
//! each CWR, so Prague reduces like Reno against a classic AQM.
//!
//! v0.7 has no detector; the simulator still honours `ecn_fallback` there, with the
//! constants scaled to v0.7's 24-bit α — the correction of the ANRW'25 artifact
//! "Reproducing and Solving a Fallback Issue in TCP Prague"
//! (github.com/Greenscreen23/prague-fallback-experiments, `linux.diff`).
//!
//! Two vintages of those reference constants (`cc_params.fallback_constants`):
//! `current` scales them to the α resolution (the fix above); `pam2025` keeps the
//! 20-bit values `V0_LG (10014683ULL >> V)`, `D0_LG (11498458ULL >> D)` beside a 24-bit
//! α, as the L4STeam 5.15 tree that the PAM 2025 testbed ran did (L4STeam/linux issue
//! #38, "Prague 5.15 ECN fallback always activates, even on L4S AQMs", 2025-01-14). The
//! references are then 16× too small, so each α round adds about 15/16·½·lg 750 ≈ 4.5
//! units of "classic" evidence even with a steady sub-ms queue: the score passes
//! C_STICKY within a few rounds and, with `ecn_fallback = 1`, Prague reduces like Reno
//! in DualPI2's L queue too (PAM 2025 §4.1: fallback-enabled Prague got much less than
//! its share under DualPI2).

use super::FallbackConstants;

/// Detector state: `tp->srtt_pace_us`, `tp->mdev_pace_us`, the log carries and the
/// score `tp->classic_ecn`.
#[derive(Clone, Debug, Default)]
pub(super) struct ClassicEcnDetector {
    pub(super) g_srtt_shift: u32,
    pub(super) g_mdev_shift: u32,
    /// EWMA of per-ACK RTT samples, µs << g_srtt_shift.
    pub(super) srtt_pace: u64,
    /// Mean deviation, µs << g_mdev_shift.
    pub(super) mdev_pace: u64,
    /// Carried mantissas of the integer logs (unbiasing).
    pub(super) rest_mdev: u64,
    pub(super) rest_depth: u64,
    /// Score c in α units (1.0 = 2^alpha_bits), clamped to [0, C_STICKY].
    pub(super) classic_ecn: u64,
}

/// `PRAGUE_MAX_SRTT_BITS` / `PRAGUE_MAX_MDEV_BITS`: initial (slowest) gains.
const DET_MAX_SRTT_BITS: u32 = 18;
const DET_MAX_MDEV_BITS: u32 = DET_MAX_SRTT_BITS + 1;
/// `PRAGUE_INIT_MDEV_CARRY` = 2^19.5 and `PRAGUE_INIT_ADJ_US` = 2^18.
const DET_INIT_MDEV_CARRY: u64 = 741_455;
const DET_INIT_ADJ_US: u64 = 262_144;
/// Weights 2^-V (mdev term) and 2^-D (depth term): 0.5 each.
const DET_V: u32 = 1;
const DET_D: u32 = 1;
/// Reference queue variation V0 = 750 µs and depth D0 = 2 ms (arXiv:1911.00710).
const DET_V0_US: f64 = 750.0;
const DET_D0_US: f64 = 2000.0;

/// `V0_LG` / `D0_LG` as the L4STeam 5.15 tree wrote them (⌊lg 750 · 2^20⌋ >> V,
/// ⌊lg 2000 · 2^20⌋ >> D), whatever `PRAGUE_ALPHA_BITS` is.
const PAM2025_V0_LG: u64 = 10_014_683 >> DET_V;
const PAM2025_D0_LG: u64 = 11_498_458 >> DET_D;

#[inline]
fn ilog2(x: u64) -> u32 {
    if x == 0 {
        0
    } else {
        63 - x.leading_zeros()
    }
}

impl ClassicEcnDetector {
    pub(super) fn new(srtt_us: u64) -> Self {
        ClassicEcnDetector {
            g_srtt_shift: DET_MAX_SRTT_BITS,
            g_mdev_shift: DET_MAX_MDEV_BITS,
            srtt_pace: srtt_us << DET_MAX_SRTT_BITS,
            mdev_pace: 1 << DET_MAX_MDEV_BITS,
            rest_mdev: DET_INIT_MDEV_CARRY,
            rest_depth: DET_INIT_MDEV_CARRY >> 1,
            classic_ecn: 0,
        }
    }

    /// `L_STICKY` = 8.0, `CLASSIC_ECN` = 9.0, `C_STICKY` = 17.0 in α units.
    pub(super) fn l_sticky(bits: u32) -> u64 {
        16u64 << (bits - DET_V)
    }
    pub(super) fn classic(bits: u32) -> u64 {
        Self::l_sticky(bits) + (1u64 << bits)
    }
    pub(super) fn c_sticky(bits: u32) -> u64 {
        Self::classic(bits) + Self::l_sticky(bits)
    }
    /// V·log2(V0) and D·log2(D0) in α units. At 20 bits these are the kernel's
    /// 10014683 >> 1 and 11498458 >> 1; at 24 bits they are scaled ×16 — the
    /// ANRW'25 correction.
    pub(super) fn v0_lg(bits: u32) -> u64 {
        ((DET_V0_US.log2() * (1u64 << bits) as f64).floor() as u64) >> DET_V
    }
    pub(super) fn d0_lg(bits: u32) -> u64 {
        ((DET_D0_US.log2() * (1u64 << bits) as f64).floor() as u64) >> DET_D
    }
    /// The reference constants (V·lg V0, D·lg D0) of a vintage at `bits` of α.
    pub(super) fn references(bits: u32, vintage: FallbackConstants) -> (u64, u64) {
        match vintage {
            FallbackConstants::Current => (Self::v0_lg(bits), Self::d0_lg(bits)),
            // L4STeam 5.15 `tcp_prague.c`: the literals of the 20-bit tree.
            FallbackConstants::Pam2025 => (PAM2025_V0_LG, PAM2025_D0_LG),
        }
    }

    /// `prague_rtt_estimator`: EWMA with gains 2^-g of the per-ACK RTT sample.
    pub(super) fn sample(&mut self, mrtt_us: i64) {
        let mut m = mrtt_us as i128;
        let mut srtt = self.srtt_pace as i128;
        if srtt != 0 {
            m -= srtt >> self.g_srtt_shift;
            srtt += m;
            if m < 0 {
                m = -m;
            }
            m -= (self.mdev_pace >> self.g_mdev_shift) as i128;
            self.mdev_pace = (self.mdev_pace as i128 + m).max(0) as u64;
        } else {
            srtt = m << self.g_srtt_shift;
            self.mdev_pace = 1 << self.g_mdev_shift;
        }
        self.srtt_pace = srtt.max(1) as u64;
    }

    /// `prague_update_rtt_scaling`: gain from ssthresh, g = ⌊lg s⌋ + ⌊⌊lg s⌋/2⌋ + 1 ≤ 18.
    pub(super) fn update_gain(&mut self, ssthresh: u32) {
        let old = self.g_srtt_shift;
        let mut g = ilog2(ssthresh.max(1) as u64);
        g += (g >> 1) + 1;
        self.g_srtt_shift = g.min(DET_MAX_SRTT_BITS);
        self.g_mdev_shift = self.g_srtt_shift + 1;
        if self.g_srtt_shift > old {
            let d = self.g_srtt_shift - old;
            self.srtt_pace <<= d;
            self.mdev_pace <<= d;
            self.rest_depth <<= d;
            self.rest_mdev <<= d;
        } else if self.g_srtt_shift < old {
            let d = old - self.g_srtt_shift;
            self.srtt_pace >>= d;
            self.mdev_pace >>= d;
            self.rest_depth >>= d;
            self.rest_mdev >>= d;
        }
    }

    /// `prague_classic_ecn_detection`: score update once per α round.
    pub(super) fn detect(&mut self, min_rtt_us: u32, bits: u32, vintage: FallbackConstants) {
        let (v0_lg, d0_lg) = Self::references(bits, vintage);
        let srtt_us = self.srtt_pace >> self.g_srtt_shift;
        let mdev_us = self.mdev_pace >> self.g_mdev_shift;
        if srtt_us == 0 || min_rtt_us == u32::MAX {
            return;
        }
        let adj_us = DET_INIT_ADJ_US >> (DET_MAX_MDEV_BITS - self.g_mdev_shift);
        let mut c = self.classic_ecn as i128;
        // c += 0.5·lg(σ/V0), the integer log carrying its mantissa to the next round.
        let mdev = (mdev_us as u128 * self.rest_mdev as u128 + adj_us as u128).min(u64::MAX as u128) as u64;
        let mdev_lg = ilog2(mdev).max(self.g_mdev_shift) - self.g_mdev_shift;
        self.rest_mdev = mdev >> mdev_lg;
        c += ((mdev_lg as i128) << (bits - DET_V)) - v0_lg as i128;
        if srtt_us > min_rtt_us as u64 {
            // c += 0.5·max(0, lg(d/D0)), d = standing queue.
            let depth = ((srtt_us - min_rtt_us as u64) as u128 * self.rest_depth as u128 + (adj_us >> 1) as u128)
                .min(u64::MAX as u128) as u64;
            let depth_lg = ilog2(depth).max(self.g_srtt_shift) - self.g_srtt_shift;
            self.rest_depth = depth >> depth_lg;
            let depth_lg = (depth_lg as u64) << (bits - DET_D);
            if depth_lg > d0_lg {
                c += (depth_lg - d0_lg) as i128;
            }
        }
        self.classic_ecn = c.clamp(0, Self::c_sticky(bits) as i128) as u64;
    }

    /// `prague_classic_ecn_fallback`: α floor 0.625·(min(c, 9) − 8).
    pub(super) fn alpha_floor(&self, alpha: u64, bits: u32) -> u64 {
        let c = self.classic_ecn.min(Self::classic(bits)) - Self::l_sticky(bits);
        let c = (c >> 1) + (c >> 3);
        alpha.max(c)
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{setup, steady};
    use super::super::{CaState, CongestionControl, PragueParams};
    use super::*;

    #[test]
    fn classic_ecn_detector() {
        // Low delay variation, no standing queue: the score stays at 0 (L4S).
        let mut d = ClassicEcnDetector::new(10_000);
        d.update_gain(16); // g = 4 + 2 + 1 = 7
        assert_eq!((d.g_srtt_shift, d.g_mdev_shift), (7, 8));
        for _ in 0..50 {
            for _ in 0..20 {
                d.sample(10_000);
            }
            d.detect(10_000, 24, FallbackConstants::Current);
        }
        assert_eq!(d.classic_ecn, 0);
        // Large variation (±10 ms) and a 20 ms standing queue: the score climbs to C-sticky.
        let mut d = ClassicEcnDetector::new(30_000);
        d.update_gain(16);
        for _ in 0..200 {
            for i in 0..20 {
                d.sample(if i % 2 == 0 { 20_000 } else { 40_000 });
            }
            d.detect(10_000, 24, FallbackConstants::Current);
        }
        assert_eq!(d.classic_ecn, ClassicEcnDetector::c_sticky(24));
        // Fallback: α floor 0.625 at c ≥ 9.
        assert_eq!(d.alpha_floor(0, 24), (1u64 << 24) / 2 + (1u64 << 24) / 8);
        // The 20-bit constants are the kernel's.
        assert_eq!(ClassicEcnDetector::v0_lg(20), 10_014_683 >> 1);
        assert_eq!(ClassicEcnDetector::d0_lg(20), 11_498_458 >> 1);
        // At 24 bits they are scaled ×16 (the ANRW'25 correction).
        assert!(ClassicEcnDetector::v0_lg(24).abs_diff(16 * ClassicEcnDetector::v0_lg(20)) <= 16);
        assert!(ClassicEcnDetector::d0_lg(24).abs_diff(16 * ClassicEcnDetector::d0_lg(20)) <= 16);
    }

    /// The two vintages of the reference constants (L4STeam/linux issue #38).
    #[test]
    fn fallback_constant_vintages() {
        use FallbackConstants::{Current, Pam2025};
        // 20-bit α (v0.6): both vintages are the kernel's literals.
        assert_eq!(ClassicEcnDetector::references(20, Pam2025), ClassicEcnDetector::references(20, Current));
        assert_eq!(ClassicEcnDetector::references(20, Current), (10_014_683 >> 1, 11_498_458 >> 1));
        // 24-bit α: `current` is the fix 160234941 >> 1, 183975331 >> 1 (±1 from flooring);
        // `pam2025` keeps the 20-bit literals, 16× too small.
        let (v0, d0) = ClassicEcnDetector::references(24, Current);
        assert!(v0.abs_diff(160_234_941 >> 1) <= 1 && d0.abs_diff(183_975_331 >> 1) <= 1, "{v0} {d0}");
        assert_eq!(ClassicEcnDetector::references(24, Pam2025), (10_014_683 >> 1, 11_498_458 >> 1));

        // An L4S AQM: RTT 10 ms ± 0.25 ms, no standing queue (σ ≈ 250 µs < V0 = 750 µs).
        let run = |vintage| {
            let mut d = ClassicEcnDetector::new(10_000);
            d.update_gain(64); // g = 6 + 3 + 1 = 10
            let mut rounds_to_classic = None;
            for round in 0..100 {
                for i in 0..64 {
                    d.sample(if i % 2 == 0 { 10_000 } else { 10_500 });
                }
                d.detect(10_000, 24, vintage);
                if rounds_to_classic.is_none() && d.classic_ecn >= ClassicEcnDetector::classic(24) {
                    rounds_to_classic = Some(round + 1);
                }
            }
            (d.classic_ecn, rounds_to_classic)
        };
        // Today's constants: lg(σ/V0) < 0 every round, the score stays at 0 (L4S).
        assert_eq!(run(Current), (0, None));
        // PAM-era constants: each round adds ½·lg σ − ½·lg(750)/16 ≈ +3.4 units, so the
        // score passes CLASSIC_ECN (9) within 3–4 rounds and sits at C_STICKY (17).
        let (score, rounds) = run(Pam2025);
        assert_eq!(score, ClassicEcnDetector::c_sticky(24));
        let rounds = rounds.unwrap();
        assert!((2..=5).contains(&rounds), "reached classic after {rounds} rounds");
    }

    /// Mode 1 floors α at each CWR once the score passed L_STICKY.
    #[test]
    fn classic_ecn_fallback_floors_alpha_at_cwr() {
        // Mode 1 applies the floor at CWR: α = 0.1 ⇒ reduction 0.3125.
        let params = PragueParams { ecn_fallback: 1, cwnd_mode: 0, ..PragueParams::default() };
        let (mut p, mut tp) = setup(params, 64, 10_000);
        steady(&mut p, &mut tp, 64);
        p.round = 0;
        p.upscaled_alpha = ((1u64 << 24) / 10) << 4;
        p.det.classic_ecn = ClassicEcnDetector::c_sticky(24);
        p.set_state(&mut tp, CaState::Cwr);
        assert!((p.frac_cwnd() - 64.0 * (1.0 - 0.3125)).abs() < 1e-3, "{}", p.frac_cwnd());
    }
}
