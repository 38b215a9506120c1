//! TCP Prague as the L4STeam Linux tree implements it (tcp.md §7): reference v0.7
//! (`tcp_prague.c` MODULE_VERSION "0.7", [P7]) with a selectable v0.6 variant
//! ([P6], §7.16) including v0.6's optional classic-ECN-AQM detection (§7.15) and
//! S2's pacing-rate-only segment-sizing schemes (§7.12).
//!
//! Prague implements `cong_control`, so the stack bypasses PRR, `cong_avoid`, the
//! "cwnd = ssthresh at CWR exit" rule and the stack pacing rate (tcp.md §1.1 step 14,
//! §2.9). Per ACK (§7.4): update_cwnd → (once per virtual RTT) update_alpha →
//! update_pacing_rate → window/rate mode switch. The ECN reduction happens earlier
//! on the same ACK in `set_state(CWR)` (§7.6, §7.13).
//!
//! Fixed-point representation follows the kernel so that rounding matches:
//! - `frac` (fractional cwnd) in 2^-20 packets (CWND_UNIT, §0.3);
//! - α stored upscaled by 1/g = 16 with 24 (v0.7) or 20 (v0.6) fractional bits;
//! - RTTs in the kernel's `srtt_us` unit, µs·8. `CcSock::srtt_us` is unscaled µs, so
//!   the three low bits of the kernel's SRTT are lost here (≤ 1 µs);
//! - "MTU" = `tcp_mss_to_mtu(mss_cache)` = mss + 40 B IP/TCP + 12 B timestamps.
//!
//! Segment sizing writes `tp.mss` (the sender uses it for every new segment): the
//! kernel's `tcp_sync_mss(sk, mtu)` with `mss_cache_set_by_cca`.
//!
//! When the handshake did not give AccECN (`tp.ecn_mode != AccEcn` at `init`), the
//! connection becomes "prague-reno": Reno hooks, no ECN/ECT(1)/pacing flags, no
//! `cong_control` (§7.3 step 1, §7.14).

use super::reno::{reno_cong_avoid, reno_ssthresh, reno_undo_cwnd};
use super::*;
use crate::packet::{IP_TCP_HLEN, TCPOLEN_TSTAMP_ALIGNED};
use crate::tcp::ecn::EcnMode;

/// `CWND_UNIT`: the fractional window is in 2^-20 packets (§7.2).
const CWND_UNIT: u32 = 20;
const ONE_CWND: u64 = 1 << CWND_UNIT;
/// `PRAGUE_SHIFT_G`: EWMA gain 1/16 (§7.2).
const PRAGUE_SHIFT_G: u32 = 4;
/// `PRAGUE_ALPHA_BITS` (v0.7: 24; v0.6: 20) (§0.3, §7.2, §7.16).
const ALPHA_BITS_V07: u32 = 24;
const ALPHA_BITS_V06: u32 = 20;
/// `MIN_CWND_RTT`: floor of the integer cwnd derived from `frac` (§7.2).
const MIN_CWND_RTT: u32 = 2;
/// `MIN_CWND_VIRT`: packets per virtual RTT targeted by MTU sizing (§7.2, §7.11).
const MIN_CWND_VIRT: u64 = 2;
/// `MIN_MSS`: smallest payload per segment (§7.2).
pub const MIN_MSS: u32 = 150;
/// `MINIMUM_RATE`: pacing-rate floor, 100 kb/s in bytes/s (§7.2).
pub const MINIMUM_RATE: u64 = 12_500;
/// `MAX_SCALED_RTT`: above this SRTT the AI is not RTT-scaled (§7.2), µs.
const MAX_SCALED_RTT_US: u64 = 100_000;
/// `MTU_SYS`: reference packet size of the AI and of the mode switch (§7.2).
const MTU_SYS: u64 = 1500;
/// `RATE_OFFSET` / `OFFSET_UNIT`: pacing wobble ±4/128 (§7.9).
const RATE_OFFSET: u64 = 4;
const OFFSET_UNIT: u32 = 7;
/// `HSRTT_SHIFT`: gain 1/128 of the slow SRTT average (§7.2).
const HSRTT_SHIFT: u32 = 7;
/// `RTT2SEC_SHIFT`: 2^23 "µs·8 per second" (≈ 8.39·10^6 instead of 8·10^6, §7.3).
const RTT2SEC_SHIFT: u32 = 23;
/// `USEC_PER_SEC << 3`: numerator of MTU/SRTT with SRTT in µs·8.
const USEC_PER_SEC_X8: u64 = 8_000_000;
/// `tcp_min_tso_segs` (v0.6's `tso_segs` lower bound, §7.16).
const TCP_MIN_TSO_SEGS: u32 = 2;
/// v0.6 `RTT_UNIT`: RTTs in 128-µs units (§7.16).
const RTT_UNIT: u32 = 7;
/// v0.6 `MAX_SCALED_RTT` compared against the 128-µs value (sic, [P6]).
const V06_MAX_SCALED_RTT: u64 = 100 * 1000;

/// `tcp_mss_to_mtu` overhead: IPv4 + TCP headers + aligned timestamp option.
pub const MSS_TO_MTU: u32 = IP_TCP_HLEN + TCPOLEN_TSTAMP_ALIGNED;

#[inline]
fn mss_to_mtu(mss: u32) -> u32 {
    mss + MSS_TO_MTU
}

/// Which Prague to model (tcp.md §0.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PragueVersion {
    /// MODULE_VERSION "0.7" [P7] (reference).
    #[default]
    V07,
    /// MODULE_VERSION "0.6" [P6] (§7.16).
    V06,
}

/// v0.6 `prague_rtt_scaling` heuristics (§7.16). v0.7 always behaves as `Rate`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RttScaling {
    /// 0: no RTT independence.
    None,
    /// 1 (default): ai = (R/T)², α update and CWR gated to ≥ T apart.
    #[default]
    Rate,
    /// 2: ai = (1/8 + min(max(R − R1, 0), R0)/R0)·R/R0.
    Scalable,
    /// 3: like Rate with target T + SRTT.
    Additive,
}

/// Segment (MTU) sizing rule, applied at each α update when RTT-independent and not
/// in loss (§7.11, §7.12). Only v0.7 resizes segments.
#[derive(Clone, Copy, Debug, PartialEq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase", tag = "scheme")]
pub enum SegmentSizing {
    /// P7's rule: MTU = ⌈bytes per virtual RTT / 2⌉ (§7.11).
    #[default]
    Default,
    /// S2 baseline: always the initial MSS (§7.12).
    Fixed,
    /// S = S_min + (S_max − S_min)·x (§7.12).
    Linear,
    /// S = S_min + (S_max − S_min)·x^p (§7.12; S2 uses p = 2).
    Exponential { p: f64 },
    /// S = S_min + (S_max − S_min)·ln(1 + k·x)/ln(1 + k) (§7.12; S2 uses k = 4).
    Logarithmic { k: f64 },
}

/// Prague module parameters (tcp.md §7.2, §7.15, §7.16); `Default` = v0.7 defaults.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PragueParams {
    pub version: PragueVersion,
    /// `prague_burst_shift`: max GSO burst = 2^-shift s of data at the pacing rate (12).
    pub burst_shift: u32,
    /// `prague_max_tso_segs`: hard cap on TSO segments (0 = none).
    pub max_tso_segs: u32,
    /// `prague_rtt_transition`: post-slow-start rounds before RTT independence
    /// (v0.7: 4; v0.6: 500).
    pub rtt_transition: u32,
    /// `prague_rtt_target`: virtual-RTT floor T, µs (25 000).
    pub rtt_target_us: u32,
    /// `prague_alpha_mode` (v0.7): 0 = α₀ = 0 and the first CE halves; 1 = α₀ = 1.
    pub alpha_mode: u32,
    /// `prague_cwnd_mode` (v0.7): 0 window, 1 rate, 2 switch by size (default).
    pub cwnd_mode: u32,
    /// `prague_cwnd_transit` (v0.7): switch point in units of 1500 B (4).
    pub cwnd_transit: u32,
    /// `prague_ecn_fallback` (v0.6 §7.15): 0 off (default), 1 detect + fall back,
    /// 2 detect only. Also honoured with v0.7 (constants scaled to its 24-bit α).
    pub ecn_fallback: u32,
    /// `prague_rtt_scaling` (v0.6 only).
    pub rtt_scaling: RttScaling,
    /// Segment-sizing rule (v0.7 only).
    pub segment_sizing: SegmentSizing,
    /// S2 schemes: rate range [r_min, r_max], bit/s (100 kb/s, 1 Mb/s).
    pub sizing_r_min_bps: u64,
    pub sizing_r_max_bps: u64,
    /// S2 schemes: smallest payload S_min, bytes (150).
    pub sizing_s_min: u32,
}

impl Default for PragueParams {
    fn default() -> Self {
        PragueParams {
            version: PragueVersion::V07,
            burst_shift: 12,
            max_tso_segs: 0,
            rtt_transition: 4,
            rtt_target_us: 25_000,
            alpha_mode: 0,
            cwnd_mode: 2,
            cwnd_transit: 4,
            ecn_fallback: 0,
            rtt_scaling: RttScaling::Rate,
            segment_sizing: SegmentSizing::Default,
            sizing_r_min_bps: 100_000,
            sizing_r_max_bps: 1_000_000,
            sizing_s_min: MIN_MSS,
        }
    }
}

impl PragueParams {
    /// v0.6 module defaults (§7.16): 500-round transition, RATE scaling, fallback off.
    pub fn v06() -> Self {
        PragueParams { version: PragueVersion::V06, rtt_transition: 500, ..PragueParams::default() }
    }
}

/// v0.6 classic-ECN-AQM detector state (`tp->srtt_pace_us` etc. and the score
/// `tp->classic_ecn`, §7.15).
#[derive(Clone, Debug, Default)]
struct ClassicEcnDetector {
    g_srtt_shift: u32,
    g_mdev_shift: u32,
    /// EWMA of per-ACK RTT samples, µs << g_srtt_shift.
    srtt_pace: u64,
    /// Mean deviation, µs << g_mdev_shift.
    mdev_pace: u64,
    /// Carried mantissas of the integer logs (unbiasing).
    rest_mdev: u64,
    rest_depth: u64,
    /// Score c in α units (1.0 = 2^alpha_bits), clamped to [0, C_STICKY].
    classic_ecn: u64,
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
/// Reference queue variation V0 = 750 µs and depth D0 = 2 ms (§7.15).
const DET_V0_US: f64 = 750.0;
const DET_D0_US: f64 = 2000.0;

#[inline]
fn ilog2(x: u64) -> u32 {
    if x == 0 {
        0
    } else {
        63 - x.leading_zeros()
    }
}

impl ClassicEcnDetector {
    fn new(srtt_us: u64) -> Self {
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
    fn l_sticky(bits: u32) -> u64 {
        16u64 << (bits - DET_V)
    }
    fn classic(bits: u32) -> u64 {
        Self::l_sticky(bits) + (1u64 << bits)
    }
    fn c_sticky(bits: u32) -> u64 {
        Self::classic(bits) + Self::l_sticky(bits)
    }
    /// V·log2(V0) and D·log2(D0) in α units. At 20 bits these are the kernel's
    /// 10014683 >> 1 and 11498458 >> 1; at 24 bits they are scaled ×16 — the
    /// correction of the ANRW'25 fix (§7.15).
    fn v0_lg(bits: u32) -> u64 {
        ((DET_V0_US.log2() * (1u64 << bits) as f64).floor() as u64) >> DET_V
    }
    fn d0_lg(bits: u32) -> u64 {
        ((DET_D0_US.log2() * (1u64 << bits) as f64).floor() as u64) >> DET_D
    }

    /// `prague_rtt_estimator`: EWMA with gains 2^-g of the per-ACK RTT sample.
    fn sample(&mut self, mrtt_us: i64) {
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
    fn update_gain(&mut self, ssthresh: u32) {
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

    /// `prague_classic_ecn_detection`: score update once per α round (§7.15).
    fn detect(&mut self, min_rtt_us: u32, bits: u32) {
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
        c += ((mdev_lg as i128) << (bits - DET_V)) - Self::v0_lg(bits) as i128;
        if srtt_us > min_rtt_us as u64 {
            // c += 0.5·max(0, lg(d/D0)), d = standing queue.
            let depth = ((srtt_us - min_rtt_us as u64) as u128 * self.rest_depth as u128 + (adj_us >> 1) as u128)
                .min(u64::MAX as u128) as u64;
            let depth_lg = ilog2(depth).max(self.g_srtt_shift) - self.g_srtt_shift;
            self.rest_depth = depth >> depth_lg;
            let depth_lg = (depth_lg as u64) << (bits - DET_D);
            let d0 = Self::d0_lg(bits);
            if depth_lg > d0 {
                c += (depth_lg - d0) as i128;
            }
        }
        self.classic_ecn = c.clamp(0, Self::c_sticky(bits) as i128) as u64;
    }

    /// `prague_classic_ecn_fallback`: α floor 0.625·(min(c, 9) − 8).
    fn alpha_floor(&self, alpha: u64, bits: u32) -> u64 {
        let c = self.classic_ecn.min(Self::classic(bits)) - Self::l_sticky(bits);
        let c = (c >> 1) + (c >> 3);
        alpha.max(c)
    }
}

/// TCP Prague (and its "prague-reno" fallback).
#[derive(Clone, Debug)]
pub struct Prague {
    params: PragueParams,
    /// AccECN was not negotiated: behave as "prague-reno".
    reno: bool,
    cwr_stamp_us: u64,
    /// Time of the last α update (`alpha_stamp`), µs.
    alpha_stamp_us: u64,
    /// α·16 with `alpha_bits` fractional bits.
    upscaled_alpha: u64,
    /// `ai_ack_increase`, 2^-20 packets per packet per RTT.
    ai: u64,
    /// Initial MTU (upper bound of MTU sizing).
    mtu_cache: u32,
    /// Slow SRTT average, µs·8 << HSRTT_SHIFT.
    hsrtt: u64,
    /// Fractional window, 2^-20 packets.
    frac: u64,
    /// Internal pacing rate (`rate_bytes`), bytes/s (MTU-based).
    rate: u64,
    loss_rate: u64,
    /// v0.6: frac at the last loss (undo).
    loss_frac: u64,
    loss_cwnd: u32,
    max_tso_burst: u32,
    old_delivered: u64,
    old_delivered_ce: u64,
    next_seq: u64,
    round: u32,
    saw_ce: bool,
    alpha_mode: bool,
    cwnd_mode_transit: bool,
    /// `cwnd_mode == 1` (rate-based).
    rate_mode: bool,
    in_loss: bool,
    det: ClassicEcnDetector,
}

impl Default for Prague {
    fn default() -> Self {
        Prague::new(PragueParams::default())
    }
}

impl Prague {
    pub fn new(params: PragueParams) -> Self {
        let alpha_mode = params.alpha_mode & 1 == 1;
        Prague {
            params,
            reno: false,
            cwr_stamp_us: 0,
            alpha_stamp_us: 0,
            upscaled_alpha: 0,
            ai: ONE_CWND,
            mtu_cache: 0,
            hsrtt: 0,
            frac: 0,
            rate: MINIMUM_RATE,
            loss_rate: 0,
            loss_frac: 0,
            loss_cwnd: 0,
            max_tso_burst: 1,
            old_delivered: 0,
            old_delivered_ce: 0,
            next_seq: 0,
            round: 0,
            saw_ce: false,
            alpha_mode,
            cwnd_mode_transit: false,
            rate_mode: false,
            in_loss: false,
            det: ClassicEcnDetector::default(),
        }
    }

    pub fn params(&self) -> &PragueParams {
        &self.params
    }

    // ------------------------------------------------------------ metrics

    /// α as a fraction in [0, 1].
    pub fn alpha(&self) -> f64 {
        (self.upscaled_alpha >> PRAGUE_SHIFT_G) as f64 / (1u64 << self.alpha_bits()) as f64
    }
    /// The fractional window in packets.
    pub fn frac_cwnd(&self) -> f64 {
        self.frac as f64 / ONE_CWND as f64
    }
    /// Internal pacing rate (`rate_bytes`), bytes/s.
    pub fn rate_bytes(&self) -> u64 {
        self.rate
    }
    /// Whether the rate-based mode is selected (`cwnd_mode == 1`).
    pub fn in_rate_mode(&self) -> bool {
        self.rate_mode
    }
    /// Rounds since the last slow-start exit.
    pub fn round(&self) -> u32 {
        self.round
    }
    /// At least one CE mark was seen.
    pub fn saw_ce(&self) -> bool {
        self.saw_ce
    }
    pub fn in_loss(&self) -> bool {
        self.in_loss
    }
    /// The per-RTT additive increase, packets (1.0 = unscaled).
    pub fn ai(&self) -> f64 {
        self.ai as f64 / ONE_CWND as f64
    }
    /// `max_tso_burst`, packets.
    pub fn max_tso_burst(&self) -> u32 {
        self.max_tso_burst
    }
    /// Classic-ECN score c (§7.15) in α units (8 = L-sticky bound, 9 = Classic).
    pub fn classic_ecn_score(&self) -> f64 {
        self.det.classic_ecn as f64 / (1u64 << self.alpha_bits()) as f64
    }
    /// Whether the connection fell back to "prague-reno".
    pub fn is_reno_fallback(&self) -> bool {
        self.reno
    }

    // ------------------------------------------------------------ helpers

    #[inline]
    fn v06(&self) -> bool {
        self.params.version == PragueVersion::V06
    }
    #[inline]
    fn alpha_bits(&self) -> u32 {
        if self.v06() {
            ALPHA_BITS_V06
        } else {
            ALPHA_BITS_V07
        }
    }
    #[inline]
    fn max_alpha(&self) -> u64 {
        1u64 << self.alpha_bits()
    }
    #[inline]
    fn mtu(tp: &CcSock) -> u64 {
        mss_to_mtu(tp.mss) as u64
    }
    /// The kernel's `tp->srtt_us` (µs·8).
    #[inline]
    fn srtt8(tp: &CcSock) -> u64 {
        tp.srtt_us << 3
    }
    /// `tcp_mstamp` in µs.
    #[inline]
    fn now_us(tp: &CcSock) -> u64 {
        tp.now / 1000
    }
    /// `tcp_stamp_us_delta(now, stamp)`.
    #[inline]
    fn since(tp: &CcSock, stamp_us: u64) -> u64 {
        Self::now_us(tp).saturating_sub(stamp_us)
    }
    /// v0.7 `prague_target_rtt`, µs·8.
    #[inline]
    fn target8(&self) -> u64 {
        (self.params.rtt_target_us as u64) << 3
    }
    /// v0.6 target RTT in 128-µs units (`prague_target_rtt`, ADDITIVE adds SRTT).
    fn v06_target(&self, tp: &CcSock) -> u64 {
        let t = (self.params.rtt_target_us >> RTT_UNIT) as u64;
        if self.params.rtt_scaling == RttScaling::Additive {
            t + (tp.srtt_us >> RTT_UNIT)
        } else {
            t
        }
    }
    /// v0.6: the configured scaling mode (NONE when the target is 0).
    fn v06_scaling(&self) -> RttScaling {
        if self.params.rtt_target_us >> RTT_UNIT == 0 {
            RttScaling::None
        } else {
            self.params.rtt_scaling
        }
    }
    /// Target RTT in µs used for the α/CWR gating.
    fn gate_us(&self, tp: &CcSock) -> u64 {
        if self.v06() {
            self.v06_target(tp) << RTT_UNIT
        } else {
            self.params.rtt_target_us as u64
        }
    }
    /// `prague_virtual_rtt`: max(T, SRTT), µs·8.
    #[inline]
    fn vrtt8(&self, tp: &CcSock) -> u64 {
        self.target8().max(Self::srtt8(tp))
    }

    /// `prague_is_rtt_indep` (§7.3): not in slow start and ≥ transition rounds.
    fn rtt_indep(&self, tp: &CcSock) -> bool {
        if self.v06() && self.v06_scaling() == RttScaling::None {
            return false;
        }
        !tp.in_slow_start() && self.round >= self.params.rtt_transition
    }

    /// Rate-based code paths are taken only when RTT-independent (§7.10).
    fn rate_based(&self, tp: &CcSock) -> bool {
        !self.v06() && self.rate_mode && self.rtt_indep(tp)
    }

    /// `prague_frac_cwnd_to_snd_cwnd` (v0.7: clamp(⌈frac⌉, 2, clamp); v0.6: ≥ 1).
    fn frac_to_cwnd(&self, tp: &CcSock) -> u32 {
        let c = self.frac.div_ceil(ONE_CWND).min(u32::MAX as u64) as u32;
        if self.v06() {
            c.max(1)
        } else {
            c.max(MIN_CWND_RTT).min(tp.cwnd_clamp)
        }
    }

    /// `prague_frac_cwnd_to_pacing_rate`: max(MTU·frac/SRTT, 12 500 B/s).
    fn frac_to_rate(&self, tp: &CcSock) -> u64 {
        let mut r = USEC_PER_SEC_X8 * Self::mtu(tp);
        let srtt = Self::srtt8(tp);
        if srtt > 0 {
            r /= srtt;
        }
        (((r as u128 * self.frac as u128) >> CWND_UNIT) as u64).max(MINIMUM_RATE)
    }

    /// `prague_pacing_rate_to_frac_cwnd`: ⌈rate·R/MTU⌉ in 2^-20 units with
    /// R = hsrtt (or SRTT) in µs·8 and the 2^23 "second" (factor 0.954, §7.3).
    fn rate_to_frac(&self, tp: &CcSock) -> u64 {
        let mtu = Self::mtu(tp);
        let h = self.hsrtt >> HSRTT_SHIFT;
        let rtt = if h != 0 { h } else { Self::srtt8(tp) };
        let x = ((self.rate as u128 * rtt as u128) >> (RTT2SEC_SHIFT - CWND_UNIT)) as u64;
        x.div_ceil(mtu)
    }

    /// `prague_ai_ack_increase` (§7.3, §7.8; v0.6 heuristics §7.16).
    fn refresh_ai(&mut self, tp: &CcSock) {
        self.ai = if self.v06() { self.ai_v06(tp) } else { self.ai_v07(tp) };
    }

    fn ai_v07(&self, tp: &CcSock) -> u64 {
        let rtt = Self::srtt8(tp);
        if self.round < self.params.rtt_transition || rtt == 0 || rtt > (MAX_SCALED_RTT_US << 3) {
            return ONE_CWND;
        }
        let target = self.target8();
        if rtt >= target {
            return ONE_CWND;
        }
        // (rtt/target)² in 2^-20, rounded to nearest.
        let num = ((rtt as u128) << CWND_UNIT) * rtt as u128;
        let div = target as u128 * target as u128;
        ((num + div / 2) / div) as u64
    }

    fn ai_v06(&self, tp: &CcSock) -> u64 {
        let scaling = self.v06_scaling();
        if scaling == RttScaling::None {
            return ONE_CWND;
        }
        let rtt = tp.srtt_us >> RTT_UNIT;
        if self.round < self.params.rtt_transition || rtt == 0 || rtt > V06_MAX_SCALED_RTT {
            return ONE_CWND;
        }
        let target = self.v06_target(tp);
        match scaling {
            RttScaling::None => ONE_CWND,
            RttScaling::Rate | RttScaling::Additive => {
                if rtt >= target {
                    return ONE_CWND;
                }
                let num = ((rtt as u128) << CWND_UNIT) * rtt as u128;
                let div = target as u128 * target as u128;
                ((num + div / 2) / div) as u64
            }
            RttScaling::Scalable => {
                // R0 ≈ 16.4 ms, R1 ≈ 1.5 ms in 128-µs units.
                let r0: i128 = (1 << 14) >> RTT_UNIT;
                let r1: i128 = ((1 << 10) + (1 << 9)) >> RTT_UNIT;
                let rtt = rtt as i128;
                let mut inc = (ONE_CWND as i128 >> 3) * r0;
                inc += ONE_CWND as i128 * (rtt - r1).clamp(0, r0);
                inc *= rtt;
                let div = r0 * r0;
                ((inc + div / 2) / div) as u64
            }
        }
    }

    /// `prague_cwnd_changed`.
    fn cwnd_changed(&mut self, tp: &CcSock) {
        self.refresh_ai(tp);
    }

    /// `prague_new_round` (§7.5).
    fn new_round(&mut self, tp: &CcSock) {
        self.next_seq = tp.snd_nxt;
        self.old_delivered_ce = tp.delivered_ce;
        self.old_delivered = tp.delivered;
        if !tp.in_slow_start() {
            self.round = self.round.saturating_add(1);
        }
        self.refresh_ai(tp);
    }

    /// `prague_should_update_ewma` (§7.5): one real RTT elapsed and, once
    /// RTT-independent, ≥ T since the last α update.
    fn should_update_ewma(&self, tp: &CcSock) -> bool {
        if tp.snd_una < self.next_seq {
            return false;
        }
        if self.v06() && self.v06_scaling() == RttScaling::None {
            return true;
        }
        !self.rtt_indep(tp) || self.gate_us(tp) <= Self::since(tp, self.alpha_stamp_us)
    }

    /// `prague_update_alpha` (§7.5) incl. MTU sizing (§7.11/§7.12).
    fn update_alpha(&mut self, tp: &mut CcSock) {
        if self.saw_ce {
            let bits = self.alpha_bits();
            if self.params.ecn_fallback > 0 {
                self.det.detect(tp.min_rtt_us, bits);
            }
            let mut ecn_segs = tp.delivered_ce.wrapping_sub(self.old_delivered_ce);
            if ecn_segs > 0 {
                let acked = tp.delivered.wrapping_sub(self.old_delivered).max(1);
                ecn_segs = (((ecn_segs as u128) << bits) / acked as u128) as u64;
            }
            let alpha = self.upscaled_alpha - (self.upscaled_alpha >> PRAGUE_SHIFT_G) + ecn_segs;
            self.alpha_stamp_us = Self::now_us(tp);
            self.upscaled_alpha = alpha.min(self.max_alpha() << PRAGUE_SHIFT_G);
            if !self.v06() && self.rtt_indep(tp) && !self.in_loss {
                self.resize_segments(tp);
            }
        }
        if !self.v06() {
            self.hsrtt = self.hsrtt + Self::srtt8(tp) - (self.hsrtt >> HSRTT_SHIFT);
        }
        self.new_round(tp);
    }

    /// `prague_pacing_rate_to_max_mtu` (§7.11 steps 1–2): ⌈bytes per vRTT / 2⌉.
    fn default_max_mtu(&self, tp: &CcSock) -> u64 {
        let cwnd_bytes = if self.rate_based(tp) {
            ((self.rate as u128 * self.vrtt8(tp) as u128) >> RTT2SEC_SHIFT) as u64
        } else {
            let target = self.target8();
            let rtt = Self::srtt8(tp);
            let mut scaled = self.frac as u128;
            if rtt < target && rtt > 0 {
                scaled = scaled * target as u128 / rtt as u128;
            }
            ((scaled * Self::mtu(tp) as u128) >> CWND_UNIT) as u64
        };
        cwnd_bytes.div_ceil(MIN_CWND_VIRT)
    }

    /// S2 §4 segment size (payload bytes) for a pacing rate in bytes/s (§7.12).
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

    /// MTU update at an α update (§7.11 step 3–4): keeps bytes in flight, writes
    /// `tp.mss`, rescales cwnd/ssthresh.
    fn resize_segments(&mut self, tp: &mut CcSock) {
        let mtu_used = Self::mtu(tp);
        let target = match self.params.segment_sizing {
            SegmentSizing::Default => self.default_max_mtu(tp),
            _ => mss_to_mtu(self.s2_segment_size(self.rate)) as u64,
        };
        // prague_valid_mtu: clamp to [mss_to_mtu(150), initial MTU].
        let mtu = target.min(self.mtu_cache as u64).max(mss_to_mtu(MIN_MSS) as u64);
        if mtu == mtu_used {
            return;
        }
        self.frac = (self.frac as u128 * mtu_used as u128 / mtu as u128) as u64;
        tp.mss = mtu as u32 - MSS_TO_MTU;
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

    /// `prague_update_cwnd` (§7.4, §7.8, §7.10).
    fn update_cwnd(&mut self, tp: &mut CcSock, rs: &RateSample) {
        let mut acked = rs.acked_sacked as i64;
        if rs.ece_delta > 0 {
            // §7.4/§7.13: the first mark ever halves frac when α starts at 0.
            if !self.v06() && !self.saw_ce && !self.alpha_mode {
                self.frac = (self.frac + 1) >> 1;
            }
            self.saw_ce = true;
            acked -= rs.ece_delta as i64;
        }
        if acked > 0 && !self.in_loss && tp.is_cwnd_limited() {
            let mut acked = acked as u32;
            if tp.in_slow_start() {
                acked = tp.slow_start(acked);
                // Window state re-synced to the integer cwnd. (v0.6 at [P6] commit
                // 02573a2 lacks this; other v0.6-era commits have it, §7.16.)
                self.frac = (tp.cwnd as u64) << CWND_UNIT;
                if acked == 0 {
                    // NOTE: ADJUST is skipped on this path (§7.4).
                    self.cwnd_changed(tp);
                    return;
                }
            }
            self.additive_increase(tp, acked as u64);
        }
        self.adjust(tp);
    }

    fn additive_increase(&mut self, tp: &CcSock, acked: u64) {
        if self.v06() {
            let mut inc = acked * self.ai;
            let c = self.frac_to_cwnd(tp) as u64;
            if c > 0 {
                inc = (inc + (c >> 1)) / c;
            }
            self.frac += acked.max(inc);
            return;
        }
        let mtu = Self::mtu(tp);
        if self.rate_based(tp) {
            // §7.10: +1500 B per vRTT of rate per vRTT.
            let vrtt = self.vrtt8(tp) as u128;
            let inc = ((acked as u128 * MTU_SYS as u128) << RTT2SEC_SHIFT) / vrtt;
            let divisor = (mtu as u128) << RTT2SEC_SHIFT;
            let vcwnd = (self.rate as u128 * vrtt).div_ceil(divisor);
            if vcwnd > 0 {
                self.rate += ((inc + vcwnd / 2) / vcwnd) as u64;
            }
            self.frac = (self.frac + acked).max(self.rate_to_frac(tp));
        } else {
            // §7.8: frac += acked·ai/frac packets, normalised to 1500-B packets.
            let mut inc = acked as u128 * self.ai as u128;
            if self.frac > 0 {
                inc <<= CWND_UNIT;
                inc = (inc + self.frac as u128 / 2) / self.frac as u128;
            }
            let inc = (inc * MTU_SYS as u128 / mtu as u128) as u64;
            self.frac += acked.max(inc);
            self.rate = (self.rate + acked).max(self.frac_to_rate(tp));
        }
    }

    /// ADJUST (§7.4): cwnd moves by ±1 per ACK toward ⌈frac⌉; a decrement sets
    /// ssthresh = cwnd.
    fn adjust(&mut self, tp: &mut CcSock) {
        let target = self.frac_to_cwnd(tp);
        let floor = if self.v06() { MIN_CWND_RTT } else { 0 };
        if tp.cwnd > target && tp.cwnd > floor {
            tp.cwnd -= 1;
            tp.ssthresh = tp.cwnd;
            self.cwnd_changed(tp);
        } else if tp.cwnd < target && (!self.v06() || tp.cwnd < tp.cwnd_clamp) {
            tp.cwnd += 1;
            self.cwnd_changed(tp);
        }
    }

    /// `prague_update_pacing_rate` (§7.9; v0.6 §7.16).
    fn update_pacing_rate(&mut self, tp: &mut CcSock) {
        let mtu = Self::mtu(tp);
        let srtt = Self::srtt8(tp);
        let mut rate;
        if self.v06() {
            rate = USEC_PER_SEC_X8 * mtu;
            if tp.cwnd < tp.ssthresh / 2 {
                rate <<= 1;
            }
            if srtt > 0 {
                rate /= srtt;
            }
            rate = ((rate as u128 * self.frac as u128 + (ONE_CWND as u128 >> 1)) >> CWND_UNIT) as u64;
        } else {
            if self.rate_based(tp) {
                // ±4/128 wobble: + in the first half of the vRTT since the α update.
                let offset = ((RATE_OFFSET as u128 * self.rate as u128) >> OFFSET_UNIT) as u64;
                rate = if (self.vrtt8(tp) >> 4) <= Self::since(tp, self.alpha_stamp_us) {
                    self.rate - offset
                } else {
                    self.rate + offset
                };
            } else {
                let inflight = (self.frac >> CWND_UNIT).max(tp.in_flight() as u64);
                rate = USEC_PER_SEC_X8 * mtu;
                if srtt > 0 {
                    rate /= srtt;
                }
                rate = (rate * inflight).max(MINIMUM_RATE);
                self.rate = rate;
            }
            if tp.cwnd < tp.ssthresh / 2 {
                rate <<= 1;
            }
        }
        let burst = rate / mtu;
        self.max_tso_burst = ((burst >> self.params.burst_shift.min(63)) as u32).max(1);
        tp.pacing_rate = rate;
    }

    /// Window/rate mode switch after the pacing update (§7.10).
    fn mode_switch(&mut self, tp: &CcSock) {
        if self.v06() || !self.cwnd_mode_transit {
            return;
        }
        let cwnd_bytes = tp.cwnd as u64 * Self::mtu(tp);
        let transit = self.params.cwnd_transit as u64 * MTU_SYS;
        if self.saw_ce && cwnd_bytes <= transit {
            self.rate_mode = true;
            self.frac = self.rate_to_frac(tp);
        } else {
            self.rate_mode = false;
            self.rate = self.frac_to_rate(tp);
        }
    }

    /// `prague_enter_cwr` (§7.6).
    fn enter_cwr(&mut self, tp: &CcSock) {
        if self.rtt_indep(tp) && self.gate_us(tp) > Self::since(tp, self.cwr_stamp_us) {
            return;
        }
        self.cwr_stamp_us = Self::now_us(tp);
        let bits = self.alpha_bits();
        let mut alpha = self.upscaled_alpha >> PRAGUE_SHIFT_G;
        if self.params.ecn_fallback == 1 && self.det.classic_ecn > ClassicEcnDetector::l_sticky(bits) {
            alpha = self.det.alpha_floor(alpha, bits);
        }
        if self.rate_based(tp) {
            let red = ((self.rate as u128 * alpha as u128) >> (bits + 1)) as u64;
            self.rate = self.rate.saturating_sub(red).max(MINIMUM_RATE);
            self.frac = self.rate_to_frac(tp);
        } else {
            // Unbiased: + 1/2 before the shift.
            let red = ((alpha as u128 * self.frac as u128 + (1u128 << bits)) >> (bits + 1)) as u64;
            self.frac -= red.min(self.frac);
            if !self.v06() {
                self.rate = self.frac_to_rate(tp);
            }
        }
    }

    /// `prague_enter_loss` (§7.7): Reno-like halving, no AI until Open.
    fn enter_loss(&mut self, tp: &CcSock) {
        self.loss_cwnd = tp.cwnd;
        if self.v06() {
            self.loss_frac = self.frac;
            self.frac -= self.frac >> 1;
            self.in_loss = true;
            self.cwnd_changed(tp);
            return;
        }
        self.loss_rate = self.rate;
        if self.rate_based(tp) {
            self.rate -= self.rate >> 1;
            self.frac = self.rate_to_frac(tp);
        } else {
            self.frac -= self.frac >> 1;
            self.rate = self.frac_to_rate(tp);
        }
        self.in_loss = true;
    }
}

impl CongestionControl for Prague {
    fn alpha(&self) -> Option<f64> {
        Some(Prague::alpha(self))
    }

    fn name(&self) -> &'static str {
        if self.reno {
            "prague-reno"
        } else {
            "prague"
        }
    }

    /// §7.2/§7.14: NEEDS_ECN | NEEDS_ACCECN | WANTS_ECT_1 | NO_FALLBACK_RFC3168 and
    /// pacing needed; none of them once fallen back to prague-reno.
    fn flags(&self) -> CcFlags {
        if self.reno {
            return CcFlags::default();
        }
        CcFlags { needs_ecn: true, needs_accecn: true, wants_ect1: true, no_fallback_rfc3168: true, needs_pacing: true }
    }

    /// `prague_init` (§7.3).
    fn init(&mut self, tp: &mut CcSock) {
        if tp.ecn_mode != EcnMode::AccEcn {
            self.reno = true;
            return;
        }
        self.reno = false;
        let srtt = Self::srtt8(tp);
        self.alpha_stamp_us = Self::now_us(tp);
        self.cwr_stamp_us = 0;
        self.alpha_mode = !self.v06() && self.params.alpha_mode & 1 == 1;
        self.upscaled_alpha = if self.v06() || self.alpha_mode { self.max_alpha() << PRAGUE_SHIFT_G } else { 0 };
        self.frac = (tp.cwnd as u64) << CWND_UNIT;
        self.max_tso_burst = 1;
        self.in_loss = false;
        self.loss_frac = 0;
        self.loss_cwnd = 0;
        self.rate_mode = false;
        self.round = 0;
        self.mtu_cache = if tp.mss > 0 { mss_to_mtu(tp.mss) } else { MTU_SYS as u32 };
        self.hsrtt = if srtt > 0 { srtt << HSRTT_SHIFT } else { 1 << (HSRTT_SHIFT + 3) };
        if self.v06() {
            if srtt > 0 {
                self.update_pacing_rate(tp);
            }
        } else {
            self.rate = if srtt > 0 {
                let per_pkt = USEC_PER_SEC_X8 * Self::mtu(tp) / srtt;
                (per_pkt * tp.cwnd.max(tp.in_flight()) as u64).max(MINIMUM_RATE)
            } else {
                MINIMUM_RATE
            };
            self.update_pacing_rate(tp);
        }
        self.loss_rate = 0;
        self.saw_ce = tp.delivered_ce > 0;
        self.cwnd_mode_transit = !self.v06() && (self.params.cwnd_mode & 2) != 0;
        self.rate_mode = !self.v06() && (self.params.cwnd_mode & 1) != 0;
        self.det = ClassicEcnDetector::new(tp.srtt_us);
        self.new_round(tp);
    }

    /// `prague_ssthresh`: the stack's value is kept (§7.6 step 4). v0.6 also updates
    /// the detector's gains from ssthresh (§7.15).
    fn ssthresh(&mut self, tp: &CcSock) -> u32 {
        if self.reno {
            return reno_ssthresh(tp);
        }
        if self.v06() || self.params.ecn_fallback > 0 {
            self.det.update_gain(tp.ssthresh);
        }
        tp.ssthresh
    }

    fn cong_avoid(&mut self, tp: &mut CcSock, acked: u32) {
        if self.reno {
            reno_cong_avoid(tp, acked);
        }
    }

    fn has_cong_control(&self) -> bool {
        !self.reno
    }

    /// `prague_cong_control` (§7.4).
    fn cong_control(&mut self, tp: &mut CcSock, rs: &RateSample) {
        if self.reno {
            return;
        }
        self.update_cwnd(tp, rs);
        if self.should_update_ewma(tp) {
            self.update_alpha(tp);
        }
        self.update_pacing_rate(tp);
        self.mode_switch(tp);
    }

    /// `prague_state` (§7.6, §7.7): called before `ca_state` changes.
    fn set_state(&mut self, tp: &mut CcSock, new_state: CaState) {
        if self.reno || new_state == tp.ca_state {
            return;
        }
        match new_state {
            CaState::Recovery => self.enter_loss(tp),
            CaState::Cwr => self.enter_cwr(tp),
            CaState::Open => self.in_loss = false,
            _ => {}
        }
    }

    /// `prague_cwnd_event`: RTO halves (§7.7).
    fn cwnd_event(&mut self, tp: &mut CcSock, ev: CaEvent) {
        if !self.reno && ev == CaEvent::Loss {
            self.enter_loss(tp);
        }
    }

    /// v0.6 `prague_pkts_acked`: feeds the classic-ECN detector's RTT filter.
    fn pkts_acked(&mut self, _tp: &mut CcSock, sample: &AckSample) {
        if self.reno || !(self.v06() || self.params.ecn_fallback > 0) {
            return;
        }
        if sample.rtt_us >= 0 {
            self.det.sample(sample.rtt_us);
        }
    }

    /// `prague_cwnd_undo` (§7.7).
    fn undo_cwnd(&mut self, tp: &CcSock) -> u32 {
        if self.reno {
            return reno_undo_cwnd(tp);
        }
        if self.v06() {
            self.frac = self.frac.max(self.loss_frac);
        } else {
            self.in_loss = false;
            self.rate = self.rate.max(self.loss_rate);
            self.frac = self.rate_to_frac(tp);
        }
        self.loss_cwnd.max(tp.cwnd)
    }

    /// `prague_tso_segs` (§7.9): the burst bound, optionally capped.
    fn tso_segs(&self, _tp: &CcSock) -> Option<u32> {
        if self.reno {
            return None;
        }
        let mut segs = self.max_tso_burst;
        if self.v06() {
            segs = segs.max(TCP_MIN_TSO_SEGS);
        }
        if self.params.max_tso_segs > 0 {
            segs = segs.min(self.params.max_tso_segs);
        }
        Some(segs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::NS_PER_MS;

    const MSS: u32 = 1448; // MTU 1500 with timestamps

    /// An AccECN socket with the given cwnd and SRTT, Prague initialised at t = 0.
    fn setup(params: PragueParams, cwnd: u32, srtt_us: u64) -> (Prague, CcSock) {
        let mut tp = CcSock::new(MSS, cwnd);
        tp.ecn_mode = EcnMode::AccEcn;
        tp.srtt_us = srtt_us;
        tp.min_rtt_us = srtt_us as u32;
        tp.snd_nxt = cwnd as u64 * MSS as u64;
        let mut p = Prague::new(params);
        p.init(&mut tp);
        (p, tp)
    }

    /// Congestion avoidance, RTT-independent (round ≥ 4), AQM seen.
    fn steady(p: &mut Prague, tp: &mut CcSock, cwnd: u32) {
        tp.cwnd = cwnd;
        tp.ssthresh = cwnd;
        p.frac = (cwnd as u64) << CWND_UNIT;
        p.round = 4;
        p.saw_ce = true;
        p.refresh_ai(tp);
    }

    fn rs(acked: u32, ce: u32) -> RateSample {
        RateSample { acked_sacked: acked, ece_delta: ce, delivered: acked as i64, ..RateSample::default() }
    }

    /// One ACK: `acked` packets newly delivered, `ce` of them CE; the stack enters CWR
    /// first when ce > 0 (tcp.md §1.1 steps 11 and 14).
    fn ack(p: &mut Prague, tp: &mut CcSock, acked: u32, ce: u32) {
        tp.delivered += acked as u64;
        tp.delivered_ce += ce as u64;
        tp.snd_una += acked as u64 * MSS as u64;
        tp.snd_nxt = tp.snd_nxt.max(tp.snd_una);
        if ce > 0 && tp.ca_state < CaState::Cwr {
            p.set_state(tp, CaState::Cwr);
            tp.ca_state = CaState::Cwr;
        }
        p.cong_control(tp, &rs(acked, ce));
    }

    #[test]
    fn defaults_and_flags() {
        let p = PragueParams::default();
        assert_eq!(p.version, PragueVersion::V07);
        assert_eq!((p.burst_shift, p.max_tso_segs, p.rtt_transition, p.rtt_target_us), (12, 0, 4, 25_000));
        assert_eq!((p.alpha_mode, p.cwnd_mode, p.cwnd_transit, p.ecn_fallback), (0, 2, 4, 0));
        assert_eq!(p.segment_sizing, SegmentSizing::Default);
        assert_eq!(PragueParams::v06().rtt_transition, 500);
        let (pr, tp) = setup(PragueParams::default(), 10, 10_000);
        let f = pr.flags();
        assert!(f.needs_ecn && f.needs_accecn && f.wants_ect1 && f.no_fallback_rfc3168 && f.needs_pacing);
        assert_eq!(pr.ect_codepoint(), Ecn::Ect1);
        assert!(pr.has_cong_control());
        assert_eq!(pr.name(), "prague");
        // §7.3: α₀ = 0, frac = IW, MTU 1500, rate = 1500·10/10 ms = 1.5 MB/s, ×2 in slow start.
        assert_eq!(pr.alpha(), 0.0);
        assert_eq!(pr.frac, 10 << 20);
        assert_eq!(pr.mtu_cache, 1500);
        assert_eq!(pr.rate, 1_500_000);
        assert_eq!(tp.pacing_rate, 3_000_000);
        assert_eq!(pr.tso_segs(&tp), Some(1));
    }

    #[test]
    fn falls_back_to_reno_without_accecn() {
        for mode in [EcnMode::Off, EcnMode::Rfc3168] {
            let mut tp = CcSock::new(MSS, 10);
            tp.ecn_mode = mode;
            tp.srtt_us = 10_000;
            let mut p = Prague::default();
            // Before init the SYN asks for AccECN + ECT(1).
            assert!(p.flags().needs_accecn);
            p.init(&mut tp);
            assert!(p.is_reno_fallback());
            assert_eq!(p.name(), "prague-reno");
            assert_eq!(p.flags(), CcFlags::default());
            assert_eq!(p.ect_codepoint(), Ecn::Ect0); // unused: the stack sends Not-ECT with ECN off
            assert!(!p.has_cong_control());
            assert_eq!(p.tso_segs(&tp), None);
            // Reno: ½ on loss, +1 per delivered packet in slow start, undo to prior_cwnd.
            tp.cwnd = 40;
            assert_eq!(p.ssthresh(&tp), 20);
            tp.is_cwnd_limited = true;
            p.cong_avoid(&mut tp, 5);
            assert_eq!(tp.cwnd, 45);
            tp.prior_cwnd = 60;
            assert_eq!(p.undo_cwnd(&tp), 60);
        }
    }

    #[test]
    fn first_ce_halves_frac_with_alpha_mode_0() {
        let (mut p, mut tp) = setup(PragueParams::default(), 10, 10_000);
        tp.is_cwnd_limited = true;
        // Slow start on unmarked packets: +1 per packet, frac follows cwnd.
        ack(&mut p, &mut tp, 2, 0);
        assert_eq!(tp.cwnd, 12);
        assert_eq!(p.frac, 12 << 20);
        // An all-CE ACK: CWR with α = 0 reduces nothing, then update_cwnd halves frac.
        ack(&mut p, &mut tp, 2, 2);
        assert!(p.saw_ce());
        assert_eq!(p.frac, 6 << 20);
        // cwnd walks down by one per ACK and ends slow start (ssthresh = cwnd).
        assert_eq!((tp.cwnd, tp.ssthresh), (11, 11));
        for _ in 0..10 {
            p.cong_control(&mut tp, &rs(0, 0));
        }
        assert_eq!(tp.cwnd, 6);
        // Only the first mark halves.
        let f = p.frac;
        p.update_cwnd(&mut tp, &rs(1, 1));
        assert_eq!(p.frac, f);

        // §7.13: if the first CE ACK also covers unmarked packets, the slow-start
        // re-sync of frac cancels the halving.
        let (mut p, mut tp) = setup(PragueParams::default(), 10, 10_000);
        tp.is_cwnd_limited = true;
        ack(&mut p, &mut tp, 3, 1);
        assert_eq!(tp.cwnd, 12);
        assert_eq!(p.frac, 12 << 20);

        // alpha_mode 1: α₀ = 1, the CWR entry halves instead (frac·(1 − 1/2)).
        let (mut p, mut tp) = setup(PragueParams { alpha_mode: 1, ..PragueParams::default() }, 10, 10_000);
        assert_eq!(p.alpha(), 1.0);
        ack(&mut p, &mut tp, 2, 2);
        assert_eq!(p.frac, 5 << 20);
    }

    #[test]
    fn alpha_ewma_once_per_virtual_rtt_after_transition() {
        // RTT 5 ms: α is updated every RTT for the first 4 post-slow-start rounds,
        // then once per max(RTT, 25 ms) = every 5th RTT.
        let (mut p, mut tp) = setup(PragueParams::default(), 20, 5_000);
        tp.ssthresh = 20; // out of slow start
        p.saw_ce = true;
        let mut updates = vec![];
        let mut last_round = p.round();
        for i in 1..=40u64 {
            tp.now = i * 5 * NS_PER_MS;
            tp.snd_nxt += 20 * MSS as u64;
            // One RTT of data: 20 packets, 5 CE (F = 1/4), acknowledged up to next_seq.
            tp.delivered += 20;
            tp.delivered_ce += 5;
            tp.snd_una = tp.snd_nxt - 20 * MSS as u64;
            p.cong_control(&mut tp, &rs(0, 0));
            if p.round() != last_round {
                updates.push(i * 5);
                last_round = p.round();
            }
        }
        assert_eq!(updates, vec![5, 10, 15, 20, 45, 70, 95, 120, 145, 170, 195]);
        // α after n updates from 0 with F = 1/4: F·(1 − (15/16)^n); F is exact per
        // round (the 25 ms rounds cover 5 RTTs of marks).
        let n = updates.len() as i32;
        let expect = 0.25 * (1.0 - (15.0f64 / 16.0).powi(n));
        assert!((p.alpha() - expect).abs() < 1e-6, "{} vs {expect}", p.alpha());
    }

    #[test]
    fn reduction_frac_times_one_minus_half_alpha_at_most_every_25ms() {
        let (mut p, mut tp) = setup(PragueParams { cwnd_mode: 0, ..PragueParams::default() }, 100, 5_000);
        steady(&mut p, &mut tp, 100);
        p.upscaled_alpha = (1u64 << 23) << PRAGUE_SHIFT_G; // α = 0.5
        tp.now = 100 * NS_PER_MS;
        p.set_state(&mut tp, CaState::Cwr);
        assert_eq!(p.frac, 75 << 20); // 100·(1 − 0.25)
        assert_eq!(p.rate, p.frac_to_rate(&tp));
        tp.ca_state = CaState::Cwr;
        p.set_state(&mut tp, CaState::Open);
        tp.ca_state = CaState::Open;
        // A second CWR episode 10 ms later is ignored (RTT-independent, < 25 ms).
        tp.now = 110 * NS_PER_MS;
        p.set_state(&mut tp, CaState::Cwr);
        assert_eq!(p.frac, 75 << 20);
        tp.ca_state = CaState::Open;
        // 25 ms after the last applied reduction: applied again.
        tp.now = 125 * NS_PER_MS;
        p.set_state(&mut tp, CaState::Cwr);
        assert_eq!(p.frac, (75 << 20) - (75 << 20) / 4); // 56.25
                                                         // The integer cwnd then walks down by 1 per ACK, setting ssthresh.
        tp.ca_state = CaState::Cwr;
        p.cong_control(&mut tp, &rs(0, 0));
        assert_eq!((tp.cwnd, tp.ssthresh), (99, 99));
        // Before the transition there is no 25 ms gating.
        let (mut p, mut tp) = setup(PragueParams::default(), 100, 5_000);
        steady(&mut p, &mut tp, 100);
        p.round = 1;
        p.upscaled_alpha = (1u64 << 23) << PRAGUE_SHIFT_G;
        tp.now = 100 * NS_PER_MS;
        p.set_state(&mut tp, CaState::Cwr);
        tp.now = 105 * NS_PER_MS;
        p.set_state(&mut tp, CaState::Cwr);
        assert_eq!(p.frac, (75 << 20) - (75 << 20) / 4);
        // Rounding is unbiased: α = 0.5 on frac = 1 + 2^-20: reduction = round(0.25·frac).
        p.frac = ONE_CWND + 1;
        p.round = 0;
        p.set_state(&mut tp, CaState::Cwr);
        assert_eq!(p.frac, ONE_CWND + 1 - ((ONE_CWND + 1 + 2) / 4));
    }

    #[test]
    fn ai_is_rtt_scaled_after_transition() {
        let (mut p, mut tp) = setup(PragueParams::default(), 20, 5_000);
        tp.is_cwnd_limited = true;
        steady(&mut p, &mut tp, 20);
        p.rate_mode = false;
        p.next_seq = u64::MAX; // no α update during the test
                               // (5 ms / 25 ms)² = 0.04 packets per RTT.
        assert_eq!(p.ai, 41_943);
        assert!((p.ai() - 0.04).abs() < 1e-6);
        let f0 = p.frac_cwnd();
        for _ in 0..20 {
            ack(&mut p, &mut tp, 1, 0);
        }
        assert!((p.frac_cwnd() - f0 - 0.04).abs() < 1e-4, "{}", p.frac_cwnd() - f0);
        // One virtual RTT (25 ms = 5 RTTs): +0.2 packet = +1500 B·(5/25) per 5 ms,
        // i.e. the rate grows by one 1500-B packet per 25 ms per 25 ms.
        for _ in 0..80 {
            ack(&mut p, &mut tp, 1, 0);
        }
        assert!((p.frac_cwnd() - f0 - 0.2).abs() < 1e-3, "{}", p.frac_cwnd() - f0);
        // CE-marked packets earn nothing.
        let f1 = p.frac;
        ack(&mut p, &mut tp, 4, 4);
        assert!(p.frac <= f1);
        // Before the transition (round < 4) the AI is the Reno +1 per RTT.
        p.round = 3;
        p.refresh_ai(&tp);
        assert_eq!(p.ai, ONE_CWND);
        // Above 25 ms no scaling.
        let (mut p, tp) = setup(PragueParams::default(), 20, 40_000);
        p.round = 10;
        p.refresh_ai(&tp);
        assert_eq!(p.ai, ONE_CWND);
        // With 750-B packets the packet AI doubles (constant bytes).
        let (mut p, mut tp) = setup(PragueParams::default(), 20, 40_000);
        tp.mss = 750 - MSS_TO_MTU;
        tp.is_cwnd_limited = true;
        steady(&mut p, &mut tp, 20);
        p.next_seq = u64::MAX;
        // One ACK at frac = 20: (1/20)·(1500/750) = 0.1 packet of 750 B.
        let f0 = p.frac_cwnd();
        ack(&mut p, &mut tp, 1, 0);
        assert!((p.frac_cwnd() - f0 - 0.1).abs() < 1e-5, "{}", p.frac_cwnd() - f0);
    }

    #[test]
    fn rate_mode_at_4_packets_with_wobble() {
        let (mut p, mut tp) = setup(PragueParams::default(), 4, 20_000);
        steady(&mut p, &mut tp, 4);
        p.next_seq = u64::MAX;
        p.alpha_stamp_us = 0;
        tp.now = NS_PER_MS;
        p.cong_control(&mut tp, &rs(1, 0));
        // 4 × 1500 B ≤ 4 × MTU_SYS ⇒ rate mode; rate = 1500·4/20 ms = 300 kB/s.
        assert!(p.in_rate_mode());
        assert_eq!(p.rate, 300_000);
        // frac from rate with the slow SRTT average: 4·10^6/2^20 = 3.81 packets.
        assert_eq!(p.frac, 4_000_000);
        assert_eq!(tp.cwnd, 4);
        // First half of the virtual RTT (25 ms) after the α stamp: +4/128.
        tp.now = 5 * NS_PER_MS;
        p.cong_control(&mut tp, &rs(1, 0));
        assert_eq!(tp.pacing_rate, 309_375);
        assert!((tp.pacing_rate as f64 / p.rate as f64 - 1.03125).abs() < 1e-9);
        // Second half: −4/128.
        tp.now = 13 * NS_PER_MS;
        p.cong_control(&mut tp, &rs(1, 0));
        assert_eq!(tp.pacing_rate, 290_625);
        // cwnd stays a (≥ 2) upper bound.
        assert_eq!(tp.cwnd, 4);
        // Rate-mode CWR: rate·(1 − α/2), floor 12 500 B/s.
        p.upscaled_alpha = (1u64 << 24) << PRAGUE_SHIFT_G; // α = 1
        tp.now = 100 * NS_PER_MS;
        p.set_state(&mut tp, CaState::Cwr);
        assert_eq!(p.rate, 150_000);
        p.rate = 20_000;
        tp.now = 200 * NS_PER_MS;
        p.set_state(&mut tp, CaState::Cwr);
        assert_eq!(p.rate, MINIMUM_RATE);
        // 5 packets of 1500 B > 6000 B ⇒ back to window mode.
        let (mut p, mut tp) = setup(PragueParams::default(), 5, 20_000);
        steady(&mut p, &mut tp, 5);
        p.next_seq = u64::MAX;
        p.cong_control(&mut tp, &rs(1, 0));
        assert!(!p.in_rate_mode());
        // No rate mode before the first CE.
        let (mut p, mut tp) = setup(PragueParams::default(), 4, 20_000);
        steady(&mut p, &mut tp, 4);
        p.saw_ce = false;
        p.next_seq = u64::MAX;
        p.cong_control(&mut tp, &rs(1, 0));
        assert!(!p.in_rate_mode());
    }

    #[test]
    fn rate_mode_ai_about_one_packet_per_vrtt() {
        // Rate-mode AI (§7.10): ≈ +1500 B/vRTT of rate per vRTT (+~10 % from the
        // 2^23 and 2^20 fixed-point factors).
        let (mut p, mut tp) = setup(PragueParams::default(), 4, 20_000);
        steady(&mut p, &mut tp, 4);
        tp.is_cwnd_limited = true;
        p.rate_mode = true;
        p.rate = 240_000;
        p.next_seq = u64::MAX;
        // Per ACK: ⌊(1500 << 23)/vRTT₈⌋ = 62 914 spread over vcwnd = ⌈0.954·4⌉ = 4.
        p.update_cwnd(&mut tp, &rs(1, 0));
        assert_eq!(p.rate, 240_000 + 15_729);
        // Over one vRTT of ACKs at 2.4 MB/s (vcwnd 39 ≈ 40 packets per 25 ms).
        p.rate = 2_400_000;
        let r0 = p.rate;
        for _ in 0..39 {
            p.update_cwnd(&mut tp, &rs(1, 0));
        }
        let gain = (p.rate - r0) as f64;
        let nominal = 1500.0 / 0.025;
        assert!(gain > nominal && gain < 1.12 * nominal, "{gain}");
    }

    #[test]
    fn pacing_100pct_in_ca_200pct_in_ss_floor_12500() {
        let (mut p, mut tp) = setup(PragueParams::default(), 10, 10_000);
        // Slow start (cwnd < ssthresh/2): 2 × 1500·10/10 ms.
        p.update_pacing_rate(&mut tp);
        assert_eq!(tp.pacing_rate, 3_000_000);
        tp.ssthresh = 10;
        p.update_pacing_rate(&mut tp);
        assert_eq!(tp.pacing_rate, 1_500_000);
        // Floor: 2 packets per second is 3000 B/s < 100 kb/s.
        let (mut p, mut tp) = setup(PragueParams::default(), 2, 1_000_000);
        tp.ssthresh = 2;
        p.update_pacing_rate(&mut tp);
        assert_eq!(tp.pacing_rate, 12_500);
        assert_eq!(p.rate, MINIMUM_RATE);
        assert_eq!(p.frac_to_rate(&tp), MINIMUM_RATE);
    }

    #[test]
    fn tso_burst_is_244us_of_data() {
        let (mut p, mut tp) = setup(PragueParams::default(), 10, 10_000);
        tp.ssthresh = 10;
        // 1 Gb/s = 125 MB/s ⇒ ⌊83 333 pkt/s / 4096⌋ = 20.
        p.frac = 833 << 20;
        p.update_pacing_rate(&mut tp);
        assert_eq!(tp.pacing_rate, 124_950_000);
        assert_eq!(p.tso_segs(&tp), Some(20));
        // 100 Mb/s ⇒ 2; below ≈ 98 Mb/s ⇒ 1.
        p.frac = 84 << 20;
        p.update_pacing_rate(&mut tp);
        assert_eq!(p.tso_segs(&tp), Some(2));
        p.frac = 80 << 20;
        p.update_pacing_rate(&mut tp);
        assert_eq!(p.tso_segs(&tp), Some(1));
        // prague_max_tso_segs caps.
        let (mut p, mut tp) = setup(PragueParams { max_tso_segs: 8, ..PragueParams::default() }, 10, 10_000);
        tp.ssthresh = 10;
        p.frac = 833 << 20;
        p.update_pacing_rate(&mut tp);
        assert_eq!(p.tso_segs(&tp), Some(8));
    }

    #[test]
    fn loss_halves_blocks_ai_and_undo_restores() {
        let (mut p, mut tp) = setup(PragueParams { cwnd_mode: 0, ..PragueParams::default() }, 40, 10_000);
        steady(&mut p, &mut tp, 40);
        tp.is_cwnd_limited = true;
        p.next_seq = u64::MAX;
        let rate0 = p.rate;
        p.set_state(&mut tp, CaState::Recovery);
        tp.ca_state = CaState::Recovery;
        assert_eq!(p.frac, 20 << 20);
        assert!(p.in_loss());
        assert_eq!(p.loss_cwnd, 40);
        // No AI while in loss; cwnd walks down.
        ack(&mut p, &mut tp, 2, 0);
        assert_eq!(p.frac, 20 << 20);
        assert_eq!(tp.cwnd, 39);
        // Spurious: undo restores rate and cwnd.
        let c = p.undo_cwnd(&tp);
        assert_eq!(c, 40);
        assert!(!p.in_loss());
        assert!(p.rate >= rate0);
        // Open clears in_loss.
        tp.ca_state = CaState::Open;
        p.set_state(&mut tp, CaState::Recovery);
        tp.ca_state = CaState::Recovery;
        assert!(p.in_loss());
        // Re-entering the current state is a no-op (prague_state).
        let f = p.frac;
        p.set_state(&mut tp, CaState::Recovery);
        assert_eq!(p.frac, f);
        p.set_state(&mut tp, CaState::Open);
        assert!(!p.in_loss());
        // RTO: CA_EVENT_LOSS halves, no 25 ms gating.
        tp.ca_state = CaState::Open;
        let f = p.frac;
        p.cwnd_event(&mut tp, CaEvent::Loss);
        assert_eq!(p.frac, f - (f >> 1));
        // ssthresh hook leaves the stack's value.
        tp.ssthresh = 33;
        assert_eq!(p.ssthresh(&tp), 33);
    }

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

    #[test]
    fn v06_variant() {
        let (mut p, mut tp) = setup(PragueParams::v06(), 10, 10_000);
        // α₀ = 1 (20 bits), min 2 TSO segments, no floor on the pacing rate.
        assert_eq!(p.alpha(), 1.0);
        assert_eq!(p.upscaled_alpha, (1 << 20) << 4);
        assert_eq!(p.tso_segs(&tp), Some(2));
        // First CE: no halving in update_cwnd; the CWR entry halves (α = 1).
        ack(&mut p, &mut tp, 2, 2);
        assert_eq!(p.frac, 5 << 20);
        // Transition after 500 rounds: AI unscaled at round 10, RTT-scaled at 500.
        p.round = 10;
        tp.ssthresh = tp.cwnd;
        p.refresh_ai(&tp);
        assert_eq!(p.ai, ONE_CWND);
        p.round = 500;
        p.refresh_ai(&tp);
        // (78/195)² in 128-µs units.
        assert_eq!(p.ai, (((78u64 * 78) << 20) + 195 * 195 / 2) / (195 * 195));
        // ADJUST stops at 2.
        p.frac = 1 << 20;
        tp.cwnd = 3;
        p.adjust(&mut tp);
        assert_eq!(tp.cwnd, 2);
        p.adjust(&mut tp);
        assert_eq!(tp.cwnd, 2);
        // No segment sizing.
        steady(&mut p, &mut tp, 2);
        p.round = 600;
        p.update_alpha(&mut tp);
        assert_eq!(tp.mss, MSS);
    }

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
            d.detect(10_000, 24);
        }
        assert_eq!(d.classic_ecn, 0);
        // Large variation (±10 ms) and a 20 ms standing queue: the score climbs to C-sticky.
        let mut d = ClassicEcnDetector::new(30_000);
        d.update_gain(16);
        for _ in 0..200 {
            for i in 0..20 {
                d.sample(if i % 2 == 0 { 20_000 } else { 40_000 });
            }
            d.detect(10_000, 24);
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

    #[test]
    fn registered_by_name() {
        assert_eq!(by_name("prague").unwrap().name(), "prague");
        assert_eq!(by_name("prague-v06").unwrap().name(), "prague");
        assert_eq!(by_name("dctcp").unwrap().name(), "dctcp");
        assert!(KNOWN.contains(&"prague") && KNOWN.contains(&"dctcp") && KNOWN.contains(&"prague-v06"));
    }
}
