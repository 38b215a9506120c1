//! Prague v0.7's dynamic segment (MTU) sizing and the research schemes of Zeynali
//! et al., "Small Packets, Big Difference" (S2 §4).
//!
//! v0.7 (L4STeam/linux `net/ipv4/tcp_prague.c`, MODULE_VERSION "0.7", commit
//! 893e147) shrinks segments at low rates so that at least `MIN_CWND_VIRT` = 2
//! packets fly per virtual RTT: `prague_pacing_rate_to_max_mtu` and
//! `prague_valid_mtu`, applied from `prague_update_alpha` when RTT-independent and
//! not in loss. The new size goes to the stack through `tp.mss`, the kernel's
//! `tcp_sync_mss(sk, mtu)` with `mss_cache_set_by_cca`; bytes in flight are kept.
//!
//! S2's schemes replace the rule with a function of the pacing rate alone:
//! S = S_min + (S_max − S_min)·f(x), x = (r − r_min)/(r_max − r_min) clipped to
//! [0, 1], with f linear, x^p or ln(1 + k·x)/ln(1 + k).

use super::*;

/// Segment (MTU) sizing rule, applied at each α update when RTT-independent and not
/// in loss. Only v0.7 resizes segments.
#[derive(Clone, Copy, Debug, PartialEq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase", tag = "scheme")]
pub enum SegmentSizing {
    /// v0.7's rule: MTU = ⌈bytes per virtual RTT / 2⌉ (`prague_pacing_rate_to_max_mtu`).
    #[default]
    Default,
    /// S2 baseline: always the initial MSS.
    Fixed,
    /// S = S_min + (S_max − S_min)·x.
    Linear,
    /// S = S_min + (S_max − S_min)·x^p (S2 uses p = 2).
    Exponential { p: f64 },
    /// S = S_min + (S_max − S_min)·ln(1 + k·x)/ln(1 + k) (S2 uses k = 4).
    Logarithmic { k: f64 },
}

impl Prague {
    /// `prague_pacing_rate_to_max_mtu`: ⌈bytes per vRTT / MIN_CWND_VIRT⌉.
    pub(super) fn default_max_mtu(&self, tp: &CcSock) -> u64 {
        let cwnd_bytes = if self.rate_based(tp) {
            ((self.rate as u128 * self.vrtt8(tp) as u128) >> RTT2SEC_SHIFT) as u64
        } else {
            let target = self.target8();
            let rtt = srtt8(tp);
            let mut scaled = self.frac as u128;
            if rtt < target && rtt > 0 {
                scaled = scaled * target as u128 / rtt as u128;
            }
            ((scaled * mtu(tp) as u128) >> CWND_UNIT) as u64
        };
        cwnd_bytes.div_ceil(MIN_CWND_VIRT)
    }

    /// S2 §4 segment size (payload bytes) for a pacing rate in bytes/s.
    pub fn s2_segment_size(&self, rate_bytes: u64) -> u32 {
        let s_max = self.mtu_cache.saturating_sub(MSS_TO_MTU).max(self.params.sizing_s_min) as f64;
        let s_min = self.params.sizing_s_min as f64;
        let r_min = self.params.sizing_r_min_bps as f64;
        let r_max = (self.params.sizing_r_max_bps as f64).max(r_min + 1.0);
        let r = ((rate_bytes * 8) as f64).clamp(r_min, r_max);
        let x = (r - r_min) / (r_max - r_min);
        let f = match self.params.segment_sizing {
            SegmentSizing::Default | SegmentSizing::Fixed => 1.0,
            SegmentSizing::Linear => x,
            SegmentSizing::Exponential { p } => x.powf(p),
            SegmentSizing::Logarithmic { k } => (1.0 + k * x).ln() / (1.0 + k).ln(),
        };
        (s_min + (s_max - s_min) * f).round() as u32
    }

    /// The start of the MTU update of `prague_update_alpha` (both vintages): the target MTU
    /// (`default_max_mtu` under `segment_sizing = default`, else S2's size for the rate),
    /// clamped by `prague_valid_mtu` to [mss_to_mtu(MIN_MSS), initial MTU]; when it differs
    /// from the MTU in use, frac is rescaled to keep the bytes in flight and `tp.mss` is set.
    /// Returns (the MTU used before, the new MTU) when it changed.
    pub(super) fn apply_mtu(
        &mut self,
        tp: &mut CcSock,
        default_max_mtu: fn(&Self, &CcSock) -> u64,
    ) -> Option<(u64, u64)> {
        let mtu_used = mtu(tp);
        let target = match self.params.segment_sizing {
            SegmentSizing::Default => default_max_mtu(self, tp),
            _ => mss_to_mtu(self.s2_segment_size(self.rate)) as u64,
        };
        let mtu = target.min(self.mtu_cache as u64).max(mss_to_mtu(MIN_MSS) as u64);
        if mtu == mtu_used {
            return None;
        }
        self.frac = (self.frac as u128 * mtu_used as u128 / mtu as u128) as u64;
        tp.mss = mtu as u32 - MSS_TO_MTU;
        Some((mtu_used, mtu))
    }

    /// The MTU update of `prague_update_alpha`: keeps bytes in flight, writes
    /// `tp.mss`, rescales cwnd and ssthresh.
    pub(super) fn resize_segments(&mut self, tp: &mut CcSock) {
        let Some((mtu_used, mtu)) = self.apply_mtu(tp, Self::default_max_mtu) else {
            return;
        };
        let new_cwnd = self.frac_to_cwnd(tp);
        if tp.cwnd != new_cwnd {
            tp.cwnd = new_cwnd;
            // The kernel truncates the product to u32; keep "infinite" infinite.
            if tp.ssthresh < TCP_INFINITE_SSTHRESH {
                let s = tp.ssthresh as u64 * mtu_used / mtu;
                tp.ssthresh = s.min(TCP_INFINITE_SSTHRESH as u64) as u32;
            }
            self.cwnd_changed(tp);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{setup, steady, MSS};
    use super::*;

    #[test]
    fn default_mtu_sizing_two_packets_per_vrtt() {
        // 200 kb/s at RTT 20 ms, rate mode: bytes per vRTT = 25 000 B/s·25 ms·0.954
        // = 596 B ⇒ MTU ⌈596/2⌉ = 298 B ⇒ payload 246 B (S2's r·max(RTT,25 ms)/2 =
        // 312.5 B of MTU without the 2^23 factor).
        let (mut p, mut tp) = setup(PragueParams::default(), 2, 20_000);
        steady(&mut p, &mut tp, 2);
        p.rate_mode = true;
        p.rate = 25_000;
        p.update_alpha(&mut tp);
        assert_eq!(tp.mss, 298 - 52);
        // Window mode, same rate: frac = 1/3 packet of 1500 B at 20 ms;
        // bytes per vRTT = frac·1500·25/20 = 625 B ⇒ MTU 312 B ⇒ payload 260 B.
        let (mut p, mut tp) = setup(PragueParams { cwnd_mode: 0, ..PragueParams::default() }, 2, 20_000);
        steady(&mut p, &mut tp, 2);
        p.frac = ONE_CWND / 3;
        assert_eq!(p.frac_to_rate(&tp), 24_999);
        p.update_alpha(&mut tp);
        assert_eq!(tp.mss, 312 - 52);
        // frac rescaled to keep bytes: (1/3)·1500/312 = 1.60 packets.
        assert!((p.frac_cwnd() - 1500.0 / 3.0 / 312.0).abs() < 1e-3);
        // 100 kb/s at 5 ms: 298 B per vRTT ⇒ 149 ⇒ floor mss_to_mtu(150) = 202.
        let (mut p, mut tp) = setup(PragueParams::default(), 2, 5_000);
        steady(&mut p, &mut tp, 2);
        p.rate_mode = true;
        p.rate = 12_500;
        p.update_alpha(&mut tp);
        assert_eq!(tp.mss, MIN_MSS);
        // 10 Mb/s: capped at the initial MTU.
        let (mut p, mut tp) = setup(PragueParams::default(), 20, 20_000);
        steady(&mut p, &mut tp, 20);
        tp.mss = 500;
        p.update_alpha(&mut tp);
        assert_eq!(tp.mss, MSS);
        // Not while in slow start / before the transition / in loss / before a CE.
        for variant in 0..4 {
            let (mut p, mut tp) = setup(PragueParams::default(), 2, 20_000);
            steady(&mut p, &mut tp, 2);
            p.rate_mode = true;
            p.rate = 25_000;
            match variant {
                0 => tp.ssthresh = TCP_INFINITE_SSTHRESH,
                1 => p.round = 3,
                2 => p.in_loss = true,
                _ => p.saw_ce = false,
            }
            p.update_alpha(&mut tp);
            assert_eq!(tp.mss, MSS, "variant {variant}");
        }
    }

    #[test]
    fn s2_segment_sizing_schemes() {
        // r = 550 kb/s ⇒ x = (550 − 100)/(1000 − 100) = 0.5; S_min 150, S_max 1448.
        let cases = [
            (SegmentSizing::Fixed, 1448),
            (SegmentSizing::Linear, 799),                  // 150 + 1298·0.5
            (SegmentSizing::Exponential { p: 2.0 }, 475),  // 150 + 1298·0.25 = 474.5
            (SegmentSizing::Logarithmic { k: 4.0 }, 1036), // 150 + 1298·ln 3/ln 5 = 1036.02
        ];
        for (scheme, want) in cases {
            let (mut p, mut tp) = setup(PragueParams { segment_sizing: scheme, ..PragueParams::default() }, 4, 20_000);
            assert_eq!(p.s2_segment_size(68_750), want, "{scheme:?}");
            // Clipping of r to [r_min, r_max].
            assert_eq!(p.s2_segment_size(6_000), if scheme == SegmentSizing::Fixed { 1448 } else { 150 });
            assert_eq!(p.s2_segment_size(1_000_000), 1448);
            // Applied at the α update through tp.mss.
            steady(&mut p, &mut tp, 4);
            p.rate_mode = true;
            p.rate = 68_750;
            p.update_alpha(&mut tp);
            assert_eq!(tp.mss, want, "{scheme:?}");
        }
    }
}
