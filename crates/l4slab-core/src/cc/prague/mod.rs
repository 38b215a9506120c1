//! TCP Prague as the L4STeam Linux tree implements it (`net/ipv4/tcp_prague.c`):
//! reference MODULE_VERSION "0.7" (commit 893e147) in [`v07`], with a selectable
//! "0.6" (commit 02573a2) in [`v06`] and the PAM 2025 testbed's module (L4STeam/tcp-prague
//! commit 90aea47f) in [`pam2025`], v0.6's optional classic-ECN-AQM detection in
//! [`classic_ecn_detector`] and the segment-sizing rules (v0.7's and those of
//! Zeynali et al., "Small Packets, Big Difference") in [`segment_sizing`].
//!
//! This file holds the state and the per-ACK skeleton the versions share; where
//! they differ, the skeleton calls the [`Version`] hooks that `v07.rs`, `v06.rs` and
//! `pam2025.rs` implement.
//!
//! Prague implements `cong_control`, so the stack bypasses PRR, `cong_avoid`, the
//! "cwnd = ssthresh at CWR exit" rule and the stack pacing rate
//! (`tcp_cong_control` in net/ipv4/tcp_input.c). Per ACK, `prague_cong_control`:
//! `prague_update_cwnd` → (once per virtual RTT) `prague_update_alpha` →
//! `prague_update_pacing_rate` → window/rate mode switch. The ECN reduction happens
//! earlier on the same ACK in `prague_state(CWR)` → `prague_enter_cwr`.
//!
//! Fixed-point representation follows the kernel so that rounding matches:
//! - `frac` (fractional cwnd) in 2^-20 packets (`CWND_UNIT`);
//! - α stored upscaled by 1/g = 16 with 24 (v0.7) or 20 (v0.6) fractional bits;
//! - RTTs in the kernel's `srtt_us` unit, µs·8. `CcSock::srtt_us` is unscaled µs, so
//!   the three low bits of the kernel's SRTT are lost here (≤ 1 µs);
//! - "MTU" = `tcp_mss_to_mtu(mss_cache)` = mss + 40 B IP/TCP + 12 B timestamps.
//!
//! When the handshake did not give AccECN, `prague_init` switches to the
//! `prague_reno` ops (Prague sets `TCP_CONG_NO_FALLBACK_RFC3168`): that is
//! [`RenoFallback`], which the registry wraps around [`Prague`].

use super::descriptor::{parse_params, CcDescriptor, ReceiverDefaults};
use super::reno::{EcnRequirement, RenoFallback};
use super::*;
use crate::packet::{IP_TCP_HLEN, TCPOLEN_TSTAMP_ALIGNED};
use crate::schema::{ParamKind, ParamSpec};

pub mod classic_ecn_detector;
pub mod pam2025;
pub mod segment_sizing;
pub mod v06;
pub mod v07;

use classic_ecn_detector::ClassicEcnDetector;
pub use segment_sizing::SegmentSizing;

/// `CWND_UNIT`: the fractional window is in 2^-20 packets.
const CWND_UNIT: u32 = 20;
const ONE_CWND: u64 = 1 << CWND_UNIT;
/// `PRAGUE_SHIFT_G`: EWMA gain 1/16.
const PRAGUE_SHIFT_G: u32 = 4;
/// `MIN_CWND_RTT`: floor of the integer cwnd derived from `frac`.
const MIN_CWND_RTT: u32 = 2;
/// `MIN_CWND_VIRT`: packets per virtual RTT targeted by MTU sizing (v0.7).
const MIN_CWND_VIRT: u64 = 2;
/// `MIN_MSS`: smallest payload per segment.
pub const MIN_MSS: u32 = 150;
/// `MINIMUM_RATE`: pacing-rate floor, 100 kb/s in bytes/s.
pub const MINIMUM_RATE: u64 = 12_500;
/// `MTU_SYS`: reference packet size of the AI and of the mode switch.
const MTU_SYS: u64 = 1500;
/// `HSRTT_SHIFT`: gain 1/128 of the slow SRTT average (v0.7).
const HSRTT_SHIFT: u32 = 7;
/// `RTT2SEC_SHIFT`: 2^23 "µs·8 per second" (≈ 8.39·10^6 instead of 8·10^6).
const RTT2SEC_SHIFT: u32 = 23;
/// `USEC_PER_SEC << 3`: numerator of MTU/SRTT with SRTT in µs·8.
const USEC_PER_SEC_X8: u64 = 8_000_000;

/// `tcp_mss_to_mtu` overhead: IPv4 + TCP headers + aligned timestamp option.
pub const MSS_TO_MTU: u32 = IP_TCP_HLEN + TCPOLEN_TSTAMP_ALIGNED;

#[inline]
fn mss_to_mtu(mss: u32) -> u32 {
    mss + MSS_TO_MTU
}
/// The current MTU.
#[inline]
fn mtu(tp: &CcSock) -> u64 {
    mss_to_mtu(tp.mss) as u64
}
/// The kernel's `tp->srtt_us` (µs·8).
#[inline]
fn srtt8(tp: &CcSock) -> u64 {
    tp.srtt_us << 3
}
/// `n / d` for a 128-bit `n` and a nonzero 64-bit `d`, exact: one 64-bit division
/// when `n` fits in 64 bits (on every ACK of a window below 2^24 packets), instead of
/// compiler-builtins' 128-bit `__udivti3` call, which LLVM emits for any `u128 / u128`.
#[inline]
fn div_u128(n: u128, d: u64) -> u128 {
    if n >> 64 == 0 {
        (n as u64 / d) as u128
    } else {
        n / d as u128
    }
}
/// `tcp_mstamp` in µs.
#[inline]
fn now_us(tp: &CcSock) -> u64 {
    tp.now / 1000
}
/// `tcp_stamp_us_delta(now, stamp)`.
#[inline]
fn since(tp: &CcSock, stamp_us: u64) -> u64 {
    now_us(tp).saturating_sub(stamp_us)
}

/// Which Prague to model.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PragueVersion {
    /// MODULE_VERSION "0.7", L4STeam/linux commit 893e147 (reference).
    #[default]
    V07,
    /// MODULE_VERSION "0.6", L4STeam/linux commit 02573a2.
    V06,
    /// The PAM 2025 testbed's module, L4STeam/tcp-prague commit 90aea47f: v0.7's core
    /// with the 0.6 tree's classic-ECN detector and its own rules ([`pam2025`]).
    /// Selecting it makes its defaults those of [`PragueParams::pam2025`].
    Pam2025,
}

/// Vintage of the classic-ECN detector's reference constants `V0_LG` / `D0_LG`
/// (lg 750 µs and lg 2 ms in α units), see [`ClassicEcnDetector`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FallbackConstants {
    /// Scaled to the α resolution in use (×16 at 24 bits): the fix of L4STeam/linux
    /// issue #38 and of the ANRW'25 artifact (Greenscreen23/prague-fallback-experiments
    /// `linux.diff`: `V0_LG (160234941ULL >> V)`, `D0_LG (183975331ULL >> D)`).
    #[default]
    Current,
    /// The L4STeam 5.15 tree used by the PAM 2025 testbed: `PRAGUE_ALPHA_BITS` 24 but
    /// `V0_LG (10014683ULL >> V)` and `D0_LG (11498458ULL >> D)` kept at their 20-bit
    /// values (L4STeam/linux issue #38, "Prague 5.15 ECN fallback always activates,
    /// even on L4S AQMs"): the score climbs to classic on any marking AQM, DualPI2 too.
    Pam2025,
}

/// What lets `prague_update_cwnd` grow the window (the test before its additive
/// increase, `if (acked <= 0 || ca->in_loss || <gate>) goto adjust;`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GrowthGate {
    /// `!tcp_is_cwnd_limited(sk)` (L4STeam/linux 893e147, the reference): no growth
    /// on ACKs of a window that pacing, not cwnd, kept from filling.
    #[default]
    CwndLimited,
    /// `tp->app_limited` (the netdev posting "[PATCH net-next 44/44] tcp: Add the TCP
    /// Prague congestion control module", 15 Oct 2024, and the L4STeam trees of that
    /// era): only an application-limited period stops the increase, so a flow paced
    /// by its own `sk_pacing_rate` grows on every unmarked ACK.
    AppLimited,
}

/// v0.6 `prague_rtt_scaling` heuristics. v0.7 always behaves as `Rate`.
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

/// Prague module parameters (`module_param`s of `tcp_prague.c`, plus the research
/// knobs); `Default` = v0.7 defaults.
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
    /// `prague_ecn_fallback` (v0.6): 0 off (default), 1 detect + fall back,
    /// 2 detect only. Also honoured with v0.7 (constants scaled to its 24-bit α).
    pub ecn_fallback: u32,
    /// Vintage of the detector's reference constants (`current`; `pam2025` = the
    /// unrescaled 5.15-tree values of L4STeam/linux issue #38). Irrelevant with a
    /// 20-bit α (v0.6), where both vintages are the same numbers.
    pub fallback_constants: FallbackConstants,
    /// `prague_rtt_scaling` (v0.6 only).
    pub rtt_scaling: RttScaling,
    /// The growth test of `prague_update_cwnd` (vintage; `cwnd_limited` = 893e147).
    pub growth_gate: GrowthGate,
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
            fallback_constants: FallbackConstants::Current,
            rtt_scaling: RttScaling::Rate,
            growth_gate: GrowthGate::CwndLimited,
            segment_sizing: SegmentSizing::Default,
            sizing_r_min_bps: 100_000,
            sizing_r_max_bps: 1_000_000,
            sizing_s_min: MIN_MSS,
        }
    }
}

impl PragueParams {
    /// v0.6 module defaults: 500-round transition, RATE scaling, fallback off.
    pub fn v06() -> Self {
        PragueParams { version: PragueVersion::V06, rtt_transition: 500, ..PragueParams::default() }
    }

    /// The PAM 2025 testbed's module (L4STeam/tcp-prague 90aea47f) at its defaults:
    /// the detector's 20-bit reference constants, growth stopped by `tp->app_limited`
    /// only, `prague_ecn_fallback` 0; the rest as v0.7.
    pub fn pam2025() -> Self {
        PragueParams {
            version: PragueVersion::Pam2025,
            fallback_constants: FallbackConstants::Pam2025,
            growth_gate: GrowthGate::AppLimited,
            ..PragueParams::default()
        }
    }
}

/// `prague`'s parameters: v0.7's defaults, or the PAM vintage's when the given
/// parameters select `version = "pam2025"`, overlaid with what is given.
pub fn parse_prague_params(cc: &str, params: Option<&serde_json::Value>) -> Result<PragueParams, String> {
    let pam = params.and_then(|p| p.get("version")).and_then(|v| v.as_str()) == Some("pam2025");
    parse_params(cc, if pam { PragueParams::pam2025() } else { PragueParams::default() }, params)
}

/// `prague` in the registry: v0.7 at its module defaults.
pub const DESCRIPTOR: CcDescriptor = CcDescriptor {
    name: "prague",
    doc: "TCP Prague v0.7 (L4STeam/linux net/ipv4/tcp_prague.c): AccECN, ECT(1), scalable α/2 reduction, paced.",
    l4s: true,
    flags: PRAGUE_FLAGS,
    receiver: ReceiverDefaults { receiver_ecn: Some(3), receiver_cc: None },
    build: |p| Ok(Box::new(RenoFallback::new(Prague::new(parse_prague_params("prague", p)?)))),
    check: |p| parse_prague_params("prague", p).map(drop),
    reports_state: false,
    params: || param_specs(&PragueParams::default()),
};

/// `prague-v06`: Prague at the v0.6 module defaults (`version = "v06"`, 500-round transition).
pub const DESCRIPTOR_V06: CcDescriptor = CcDescriptor {
    name: "prague-v06",
    doc: "TCP Prague v0.6 (older L4STeam tree): 20-bit α, rtt_scaling heuristics, optional classic-ECN detection.",
    l4s: true,
    flags: PRAGUE_FLAGS,
    receiver: ReceiverDefaults { receiver_ecn: Some(3), receiver_cc: None },
    build: |p| Ok(Box::new(RenoFallback::new(Prague::new(parse_params("prague-v06", PragueParams::v06(), p)?)))),
    check: |p| parse_params("prague-v06", PragueParams::v06(), p).map(drop),
    reports_state: false,
    params: || param_specs(&PragueParams::v06()),
};

/// `TCP_CONG_NEEDS_ECN | TCP_CONG_NEEDS_ACCECN | TCP_CONG_WANTS_ECT_1 |
/// TCP_CONG_NO_FALLBACK_RFC3168`, and pacing (`prague_init` sets
/// `sk_pacing_status = SK_PACING_NEEDED`).
const PRAGUE_FLAGS: CcFlags =
    CcFlags { needs_ecn: true, needs_accecn: true, wants_ect1: true, no_fallback_rfc3168: true, needs_pacing: true };

fn param_specs(d: &PragueParams) -> Vec<ParamSpec> {
    use ParamKind::*;
    fn json<T: serde::Serialize>(v: &T) -> serde_json::Value {
        serde_json::to_value(v).unwrap_or_default()
    }
    vec![
        ParamSpec::new(
            "version",
            Choice,
            json(&d.version),
            "Prague version: v07 (reference), v06 (older tree) or pam2025 (the PAM 2025 testbed's module, \
             L4STeam/tcp-prague 90aea47f; its defaults: fallback_constants pam2025, growth_gate app_limited)",
        )
        .choices(&["v07", "v06", "pam2025"]),
        ParamSpec::new(
            "burst_shift",
            Int,
            d.burst_shift.into(),
            "prague_burst_shift: max TSO burst = 2^-shift s at the pacing rate (12)",
        )
        .range(0.0, 63.0),
        ParamSpec::new(
            "max_tso_segs",
            Int,
            d.max_tso_segs.into(),
            "prague_max_tso_segs: cap on TSO segments, 0 = none (0)",
        ),
        ParamSpec::new(
            "rtt_transition",
            Int,
            d.rtt_transition.into(),
            "prague_rtt_transition: rounds after slow start before RTT independence (v0.7: 4, v0.6: 500)",
        ),
        ParamSpec::new(
            "rtt_target_us",
            Int,
            d.rtt_target_us.into(),
            "prague_rtt_target: virtual-RTT floor, µs (25000)",
        ),
        ParamSpec::new(
            "alpha_mode",
            Int,
            d.alpha_mode.into(),
            "prague_alpha_mode (v0.7): 0 = α starts at 0 and the first CE halves, 1 = α starts at 1",
        )
        .range(0.0, 1.0),
        ParamSpec::new(
            "cwnd_mode",
            Int,
            d.cwnd_mode.into(),
            "prague_cwnd_mode (v0.7): 0 window, 1 rate, 2 switch by window size (2)",
        )
        .range(0.0, 2.0),
        ParamSpec::new(
            "cwnd_transit",
            Int,
            d.cwnd_transit.into(),
            "prague_cwnd_transit (v0.7): window/rate switch point in 1500-B packets (4)",
        ),
        ParamSpec::new(
            "ecn_fallback",
            Int,
            d.ecn_fallback.into(),
            "prague_ecn_fallback (v0.6): 0 off, 1 detect classic ECN and fall back, 2 detect only",
        )
        .range(0.0, 2.0),
        ParamSpec::new(
            "fallback_constants",
            Choice,
            json(&d.fallback_constants),
            "classic-ECN detector constants lg(750us), lg(2ms): current (scaled to the alpha bits) or pam2025 \
             (L4STeam 5.15 tree, left at 20-bit values: falls back on L4S AQMs too; L4STeam/linux issue #38)",
        )
        .choices(&["current", "pam2025"]),
        ParamSpec::new(
            "rtt_scaling",
            Choice,
            json(&d.rtt_scaling),
            "prague_rtt_scaling (v0.6): none, rate, scalable or additive",
        )
        .choices(&["none", "rate", "scalable", "additive"]),
        ParamSpec::new(
            "growth_gate",
            Choice,
            json(&d.growth_gate),
            "what lets prague_update_cwnd add: cwnd_limited (tcp_is_cwnd_limited, L4STeam 893e147) or \
             app_limited (tp->app_limited, the Oct 2024 netdev posting and trees of that era)",
        )
        .choices(&["cwnd_limited", "app_limited"]),
        ParamSpec::new(
            "segment_sizing",
            Object,
            json(&d.segment_sizing),
            "segment sizing (v0.7): {scheme: default|fixed|linear|exponential (p)|logarithmic (k)}",
        ),
        ParamSpec::new(
            "sizing_r_min_bps",
            RateBps,
            d.sizing_r_min_bps.into(),
            "S2 sizing: rate at which segments are smallest, bit/s (100 kb/s)",
        ),
        ParamSpec::new(
            "sizing_r_max_bps",
            RateBps,
            d.sizing_r_max_bps.into(),
            "S2 sizing: rate from which segments are full-size, bit/s (1 Mb/s)",
        ),
        ParamSpec::new(
            "sizing_s_min",
            Bytes,
            d.sizing_s_min.into(),
            "S2 sizing: smallest payload, bytes (MIN_MSS = 150)",
        ),
    ]
}

/// Where v0.6 and v0.7 differ: the shared skeleton in this file calls these hooks;
/// [`v07::V07`] and [`v06::V06`] implement them.
trait Version: Send + Sync + std::fmt::Debug {
    /// `PRAGUE_ALPHA_BITS`.
    fn alpha_bits(&self) -> u32;
    /// `prague_alpha_mode` as `prague_init` reads it.
    fn alpha_mode(&self, params: &PragueParams) -> bool;
    /// α₀ = 1 at `prague_init` (else 0).
    fn alpha_starts_at_one(&self, p: &Prague) -> bool;
    /// The rate and pacing part of `prague_init`.
    fn init_rate(&self, p: &mut Prague, tp: &mut CcSock);
    /// The window/rate mode flags at `prague_init`.
    fn init_modes(&self, p: &mut Prague);
    /// Whether RTT independence can apply at all (v0.6: not with `rtt_scaling = none`).
    fn rtt_indep_possible(&self, p: &Prague) -> bool;
    /// Minimum time between α updates and between CWR reductions once
    /// RTT-independent, µs.
    fn gate_us(&self, p: &Prague, tp: &CcSock) -> u64;
    /// Whether the rate-based mode exists (v0.7).
    fn has_rate_mode(&self) -> bool;
    /// Whether the rate-based paths also need a CE mark seen (the PAM vintage tests
    /// `saw_ce` where it uses the mode; v0.7 only enters the mode after CE).
    fn rate_mode_needs_ce(&self) -> bool {
        false
    }
    /// `prague_frac_cwnd_to_snd_cwnd`.
    fn frac_to_cwnd(&self, p: &Prague, tp: &CcSock) -> u32;
    /// `prague_ai_ack_increase`, 2^-20 packets per packet per RTT.
    fn ai(&self, p: &Prague, tp: &CcSock) -> u64;
    /// `prague_update_cwnd` on the first ACK reporting CE, before `saw_ce` is set.
    fn first_ce(&self, p: &mut Prague);
    /// After α was updated in `prague_update_alpha` (v0.7: segment sizing).
    fn alpha_updated(&self, p: &mut Prague, tp: &mut CcSock);
    /// End of an α round in `prague_update_alpha`, before `prague_new_round`.
    fn round_end(&self, p: &mut Prague, tp: &CcSock);
    /// The additive increase of `prague_update_cwnd` for `acked` packets.
    fn additive_increase(&self, p: &mut Prague, tp: &CcSock, acked: u64);
    /// Floor of the ADJUST decrement, and whether the increment respects the clamp.
    fn adjust_floor(&self) -> u32;
    fn adjust_may_grow(&self, tp: &CcSock) -> bool;
    /// ADJUST at the floor with a window below it (v0.6: the reduction is dropped).
    fn at_floor(&self, _p: &mut Prague, _tp: &mut CcSock) {}
    /// The pacing rate of `prague_update_pacing_rate`, bytes/s.
    fn pacing_rate(&self, p: &mut Prague, tp: &CcSock) -> u64;
    /// The window/rate mode switch at the end of `prague_cong_control`.
    fn mode_switch(&self, p: &mut Prague, tp: &CcSock);
    /// The reduction of `prague_enter_cwr` by α (`bits` fractional bits).
    fn cwr_reduce(&self, p: &mut Prague, tp: &CcSock, alpha: u64, bits: u32);
    /// `prague_enter_loss` after `loss_cwnd` is saved.
    fn enter_loss(&self, p: &mut Prague, tp: &CcSock);
    /// `prague_cwnd_undo` before the cwnd is chosen.
    fn undo(&self, p: &mut Prague, tp: &CcSock);
    /// Lower bound of `prague_tso_segs`.
    fn min_tso_segs(&self) -> u32;
    /// v0.6 always runs the detector's RTT filter (`prague_pkts_acked`,
    /// `prague_ssthresh`), whether or not `prague_ecn_fallback` is on.
    fn always_feeds_detector(&self) -> bool;
}

/// The version a [`Prague`] runs, dispatched by a `match` (a direct call the compiler
/// inlines into the per-ACK skeleton) instead of through a `dyn Version` vtable.
macro_rules! each_version {
    ($v:expr, $x:ident => $call:expr) => {
        match $v {
            PragueVersion::V07 => {
                let $x = v07::V07;
                $call
            }
            PragueVersion::V06 => {
                let $x = v06::V06;
                $call
            }
            PragueVersion::Pam2025 => {
                let $x = pam2025::Pam2025;
                $call
            }
        }
    };
}

impl Version for PragueVersion {
    #[inline]
    fn alpha_bits(&self) -> u32 {
        each_version!(self, v => v.alpha_bits())
    }
    #[inline]
    fn alpha_mode(&self, params: &PragueParams) -> bool {
        each_version!(self, v => v.alpha_mode(params))
    }
    #[inline]
    fn alpha_starts_at_one(&self, p: &Prague) -> bool {
        each_version!(self, v => v.alpha_starts_at_one(p))
    }
    #[inline]
    fn init_rate(&self, p: &mut Prague, tp: &mut CcSock) {
        each_version!(self, v => v.init_rate(p, tp))
    }
    #[inline]
    fn init_modes(&self, p: &mut Prague) {
        each_version!(self, v => v.init_modes(p))
    }
    #[inline]
    fn rtt_indep_possible(&self, p: &Prague) -> bool {
        each_version!(self, v => v.rtt_indep_possible(p))
    }
    #[inline]
    fn gate_us(&self, p: &Prague, tp: &CcSock) -> u64 {
        each_version!(self, v => v.gate_us(p, tp))
    }
    #[inline]
    fn has_rate_mode(&self) -> bool {
        each_version!(self, v => v.has_rate_mode())
    }
    #[inline]
    fn rate_mode_needs_ce(&self) -> bool {
        each_version!(self, v => v.rate_mode_needs_ce())
    }
    #[inline]
    fn frac_to_cwnd(&self, p: &Prague, tp: &CcSock) -> u32 {
        each_version!(self, v => v.frac_to_cwnd(p, tp))
    }
    #[inline]
    fn ai(&self, p: &Prague, tp: &CcSock) -> u64 {
        each_version!(self, v => v.ai(p, tp))
    }
    #[inline]
    fn first_ce(&self, p: &mut Prague) {
        each_version!(self, v => v.first_ce(p))
    }
    #[inline]
    fn alpha_updated(&self, p: &mut Prague, tp: &mut CcSock) {
        each_version!(self, v => v.alpha_updated(p, tp))
    }
    #[inline]
    fn round_end(&self, p: &mut Prague, tp: &CcSock) {
        each_version!(self, v => v.round_end(p, tp))
    }
    #[inline]
    fn additive_increase(&self, p: &mut Prague, tp: &CcSock, acked: u64) {
        each_version!(self, v => v.additive_increase(p, tp, acked))
    }
    #[inline]
    fn adjust_floor(&self) -> u32 {
        each_version!(self, v => v.adjust_floor())
    }
    #[inline]
    fn adjust_may_grow(&self, tp: &CcSock) -> bool {
        each_version!(self, v => v.adjust_may_grow(tp))
    }
    #[inline]
    fn at_floor(&self, p: &mut Prague, tp: &mut CcSock) {
        each_version!(self, v => v.at_floor(p, tp))
    }
    #[inline]
    fn pacing_rate(&self, p: &mut Prague, tp: &CcSock) -> u64 {
        each_version!(self, v => v.pacing_rate(p, tp))
    }
    #[inline]
    fn mode_switch(&self, p: &mut Prague, tp: &CcSock) {
        each_version!(self, v => v.mode_switch(p, tp))
    }
    #[inline]
    fn cwr_reduce(&self, p: &mut Prague, tp: &CcSock, alpha: u64, bits: u32) {
        each_version!(self, v => v.cwr_reduce(p, tp, alpha, bits))
    }
    #[inline]
    fn enter_loss(&self, p: &mut Prague, tp: &CcSock) {
        each_version!(self, v => v.enter_loss(p, tp))
    }
    #[inline]
    fn undo(&self, p: &mut Prague, tp: &CcSock) {
        each_version!(self, v => v.undo(p, tp))
    }
    #[inline]
    fn min_tso_segs(&self) -> u32 {
        each_version!(self, v => v.min_tso_segs())
    }
    #[inline]
    fn always_feeds_detector(&self) -> bool {
        each_version!(self, v => v.always_feeds_detector())
    }
}

/// TCP Prague; the registry wraps it in [`RenoFallback`] for "prague-reno".
#[derive(Clone, Debug)]
pub struct Prague {
    params: PragueParams,
    ver: PragueVersion,
    cwr_stamp_us: u64,
    /// Time of the last α update (`alpha_stamp`), µs.
    alpha_stamp_us: u64,
    /// α·16 with `alpha_bits` fractional bits.
    upscaled_alpha: u64,
    /// `ai_ack_increase`, 2^-20 packets per packet per RTT.
    ai: u64,
    /// Initial MTU (upper bound of MTU sizing).
    mtu_cache: u32,
    /// Slow SRTT average, µs·8 << HSRTT_SHIFT (v0.7).
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
        let ver = params.version;
        Prague {
            params,
            ver,
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
    // ------------------------------------------------------------ helpers

    #[inline]
    fn alpha_bits(&self) -> u32 {
        self.ver.alpha_bits()
    }
    #[inline]
    fn max_alpha(&self) -> u64 {
        1u64 << self.alpha_bits()
    }
    /// Whether the classic-ECN detector's RTT filter runs.
    #[inline]
    fn feeds_detector(&self) -> bool {
        self.ver.always_feeds_detector() || self.params.ecn_fallback > 0
    }

    /// `prague_is_rtt_indep`: not in slow start and ≥ `rtt_transition` rounds.
    fn rtt_indep(&self, tp: &CcSock) -> bool {
        if !self.ver.rtt_indep_possible(self) {
            return false;
        }
        !tp.in_slow_start() && self.round >= self.params.rtt_transition
    }

    /// Rate-based code paths are taken only when RTT-independent (v0.7).
    fn rate_based(&self, tp: &CcSock) -> bool {
        self.ver.has_rate_mode()
            && self.rate_mode
            && (self.saw_ce || !self.ver.rate_mode_needs_ce())
            && self.rtt_indep(tp)
    }

    /// `prague_frac_cwnd_to_snd_cwnd`.
    fn frac_to_cwnd(&self, tp: &CcSock) -> u32 {
        self.ver.frac_to_cwnd(self, tp)
    }

    /// `prague_ai_ack_increase`.
    fn refresh_ai(&mut self, tp: &CcSock) {
        self.ai = self.ver.ai(self, tp);
    }

    /// `prague_cwnd_changed`.
    fn cwnd_changed(&mut self, tp: &CcSock) {
        self.refresh_ai(tp);
    }

    /// `prague_new_round`.
    fn new_round(&mut self, tp: &CcSock) {
        self.next_seq = tp.snd_nxt;
        self.old_delivered_ce = tp.delivered_ce;
        self.old_delivered = tp.delivered;
        if !tp.in_slow_start() {
            self.round = self.round.saturating_add(1);
        }
        self.refresh_ai(tp);
    }

    /// `prague_should_update_ewma`: one real RTT elapsed and, once RTT-independent,
    /// ≥ the target RTT since the last α update.
    fn should_update_ewma(&self, tp: &CcSock) -> bool {
        if tp.snd_una < self.next_seq {
            return false;
        }
        if !self.ver.rtt_indep_possible(self) {
            return true;
        }
        !self.rtt_indep(tp) || self.ver.gate_us(self, tp) <= since(tp, self.alpha_stamp_us)
    }

    /// `prague_update_alpha`: α ← (1 − g)·α + g·F with F the CE fraction of the
    /// round, as DCTCP (RFC 8257 §3.3; draft-briscoe-iccrg-prague-congestion-control).
    fn update_alpha(&mut self, tp: &mut CcSock) {
        let ver = self.ver;
        if self.saw_ce {
            let bits = self.alpha_bits();
            if self.params.ecn_fallback > 0 {
                self.det.detect(tp.min_rtt_us, bits, self.params.fallback_constants);
            }
            let mut ecn_segs = tp.delivered_ce.wrapping_sub(self.old_delivered_ce);
            if ecn_segs > 0 {
                let acked = tp.delivered.wrapping_sub(self.old_delivered).max(1);
                ecn_segs = (((ecn_segs as u128) << bits) / acked as u128) as u64;
            }
            let alpha = self.upscaled_alpha - (self.upscaled_alpha >> PRAGUE_SHIFT_G) + ecn_segs;
            self.alpha_stamp_us = now_us(tp);
            self.upscaled_alpha = alpha.min(self.max_alpha() << PRAGUE_SHIFT_G);
            ver.alpha_updated(self, tp);
        }
        ver.round_end(self, tp);
        self.new_round(tp);
    }

    /// `prague_update_cwnd`: AI on the unmarked packets, then ADJUST.
    fn update_cwnd(&mut self, tp: &mut CcSock, rs: &RateSample) {
        let mut acked = rs.acked_sacked as i64;
        if rs.ece_delta > 0 {
            let ver = self.ver;
            ver.first_ce(self);
            self.saw_ce = true;
            acked -= rs.ece_delta as i64;
        }
        if acked > 0 && !self.in_loss && self.may_grow(tp) {
            let mut acked = acked as u32;
            if tp.in_slow_start() {
                acked = tp.slow_start(acked);
                // Window state re-synced to the integer cwnd. (v0.6 at commit 02573a2
                // lacks this; other v0.6-era commits have it.)
                self.frac = (tp.cwnd as u64) << CWND_UNIT;
                if acked == 0 {
                    // As the kernel: ADJUST is skipped on this path.
                    self.cwnd_changed(tp);
                    return;
                }
            }
            let ver = self.ver;
            ver.additive_increase(self, tp, acked as u64);
        }
        self.adjust(tp);
    }

    /// The growth test of `prague_update_cwnd`, by vintage ([`GrowthGate`]).
    #[inline]
    fn may_grow(&self, tp: &CcSock) -> bool {
        match self.params.growth_gate {
            GrowthGate::CwndLimited => tp.is_cwnd_limited(),
            GrowthGate::AppLimited => tp.app_limited == 0,
        }
    }

    /// ADJUST (end of `prague_update_cwnd`): cwnd moves by ±1 per ACK toward
    /// ⌈frac⌉; a decrement sets ssthresh = cwnd.
    fn adjust(&mut self, tp: &mut CcSock) {
        let target = self.frac_to_cwnd(tp);
        if tp.cwnd > target && tp.cwnd > self.ver.adjust_floor() {
            tp.cwnd -= 1;
            tp.ssthresh = tp.cwnd;
            self.cwnd_changed(tp);
        } else if tp.cwnd > target {
            let ver = self.ver;
            ver.at_floor(self, tp);
        } else if tp.cwnd < target && self.ver.adjust_may_grow(tp) {
            tp.cwnd += 1;
            self.cwnd_changed(tp);
        }
    }

    /// `prague_update_pacing_rate`, and the TSO burst bound `max_tso_burst` =
    /// 2^-`burst_shift` s of data at that rate.
    fn update_pacing_rate(&mut self, tp: &mut CcSock) {
        let ver = self.ver;
        let rate = ver.pacing_rate(self, tp);
        let burst = rate / mtu(tp);
        self.max_tso_burst = ((burst >> self.params.burst_shift.min(63)) as u32).max(1);
        tp.pacing_rate = rate;
    }

    /// `prague_enter_cwr`: at most once per target RTT when RTT-independent,
    /// reduce by α/2 (RFC 9331 §4.3; the classic-ECN detector may floor α).
    fn enter_cwr(&mut self, tp: &CcSock) {
        if self.rtt_indep(tp) && self.ver.gate_us(self, tp) > since(tp, self.cwr_stamp_us) {
            return;
        }
        self.cwr_stamp_us = now_us(tp);
        let bits = self.alpha_bits();
        let mut alpha = self.upscaled_alpha >> PRAGUE_SHIFT_G;
        if self.params.ecn_fallback == 1 && self.det.classic_ecn > ClassicEcnDetector::l_sticky(bits) {
            alpha = self.det.alpha_floor(alpha, bits);
        }
        let ver = self.ver;
        ver.cwr_reduce(self, tp, alpha, bits);
    }

    /// The window reduction of `prague_enter_cwr`: frac·(1 − α/2), unbiased (+½
    /// before the shift).
    fn cwr_reduce_frac(&mut self, alpha: u64, bits: u32) {
        let red = ((alpha as u128 * self.frac as u128 + (1u128 << bits)) >> (bits + 1)) as u64;
        self.frac -= red.min(self.frac);
    }

    /// The loss halving of v0.7 and the PAM 2025 build: the rate saved for the undo, then
    /// the rate halved and frac from it (rate mode, returns true) or frac halved (window
    /// mode, false; the caller decides whether the rate follows); in loss from now.
    fn halve_for_loss(&mut self, tp: &CcSock) -> bool {
        self.loss_rate = self.rate;
        let rate_based = self.rate_based(tp);
        if rate_based {
            self.rate -= self.rate >> 1;
            self.frac = self.rate_to_frac(tp);
        } else {
            self.frac -= self.frac >> 1;
        }
        self.in_loss = true;
        rate_based
    }

    /// Rate mode's CWR reduction (v0.7 and the PAM 2025 build): rate·(1 − α/2), floor
    /// `MINIMUM_RATE`, frac from the rate.
    fn cwr_reduce_rate(&mut self, tp: &CcSock, alpha: u64, bits: u32) {
        let red = ((self.rate as u128 * alpha as u128) >> (bits + 1)) as u64;
        self.rate = self.rate.saturating_sub(red).max(MINIMUM_RATE);
        self.frac = self.rate_to_frac(tp);
    }

    /// `prague_enter_loss`: Reno-like halving, no AI until Open.
    fn enter_loss(&mut self, tp: &CcSock) {
        self.loss_cwnd = tp.cwnd;
        let ver = self.ver;
        ver.enter_loss(self, tp);
    }
}

impl EcnRequirement for Prague {
    /// `prague_init`: Prague runs only over AccECN feedback.
    fn ecn_ok(&self, mode: EcnMode) -> bool {
        mode == EcnMode::AccEcn
    }
    fn reno_name(&self) -> &'static str {
        "prague-reno"
    }
}

impl CongestionControl for Prague {
    fn alpha(&self) -> Option<f64> {
        Some(Prague::alpha(self))
    }

    fn name(&self) -> &'static str {
        "prague"
    }

    fn flags(&self) -> CcFlags {
        PRAGUE_FLAGS
    }

    /// `prague_init` with AccECN negotiated (otherwise [`RenoFallback`] does not call it).
    fn init(&mut self, tp: &mut CcSock) {
        let ver = self.ver;
        let srtt = srtt8(tp);
        self.alpha_stamp_us = now_us(tp);
        self.cwr_stamp_us = 0;
        self.alpha_mode = ver.alpha_mode(&self.params);
        self.upscaled_alpha = if ver.alpha_starts_at_one(self) { self.max_alpha() << PRAGUE_SHIFT_G } else { 0 };
        self.frac = (tp.cwnd as u64) << CWND_UNIT;
        self.max_tso_burst = 1;
        self.in_loss = false;
        self.loss_frac = 0;
        self.loss_cwnd = 0;
        self.rate_mode = false;
        self.round = 0;
        self.mtu_cache = if tp.mss > 0 { mss_to_mtu(tp.mss) } else { MTU_SYS as u32 };
        self.hsrtt = if srtt > 0 { srtt << HSRTT_SHIFT } else { 1 << (HSRTT_SHIFT + 3) };
        ver.init_rate(self, tp);
        self.loss_rate = 0;
        self.saw_ce = tp.delivered_ce > 0;
        ver.init_modes(self);
        self.det = ClassicEcnDetector::new(tp.srtt_us);
        self.new_round(tp);
    }

    /// `prague_ssthresh`: the stack's value is kept. The classic-ECN detector takes
    /// its gains from ssthresh (`prague_update_rtt_scaling`).
    fn ssthresh(&mut self, tp: &CcSock) -> u32 {
        if self.feeds_detector() {
            self.det.update_gain(tp.ssthresh);
        }
        tp.ssthresh
    }

    fn has_cong_control(&self) -> bool {
        true
    }

    /// `prague_cong_control`.
    fn cong_control(&mut self, tp: &mut CcSock, rs: &RateSample) {
        self.update_cwnd(tp, rs);
        if self.should_update_ewma(tp) {
            self.update_alpha(tp);
        }
        self.update_pacing_rate(tp);
        let ver = self.ver;
        ver.mode_switch(self, tp);
    }

    /// `prague_state`: called before `ca_state` changes.
    fn set_state(&mut self, tp: &mut CcSock, new_state: CaState) {
        if new_state == tp.ca_state {
            return;
        }
        match new_state {
            CaState::Recovery => self.enter_loss(tp),
            CaState::Cwr => self.enter_cwr(tp),
            CaState::Open => self.in_loss = false,
            _ => {}
        }
    }

    /// `prague_cwnd_event`: an RTO (CA_EVENT_LOSS) halves.
    fn cwnd_event(&mut self, tp: &mut CcSock, ev: CaEvent) {
        if ev == CaEvent::Loss {
            self.enter_loss(tp);
        }
    }

    fn has_in_ack_event(&self) -> bool {
        false
    }
    /// `prague_pkts_acked`: feeds the classic-ECN detector's RTT filter.
    fn pkts_acked(&mut self, _tp: &mut CcSock, sample: &AckSample) {
        if self.feeds_detector() && sample.rtt_us >= 0 {
            self.det.sample(sample.rtt_us);
        }
    }

    /// `prague_cwnd_undo`.
    fn undo_cwnd(&mut self, tp: &CcSock) -> u32 {
        let ver = self.ver;
        ver.undo(self, tp);
        self.loss_cwnd.max(tp.cwnd)
    }

    /// `prague_tso_segs`: the burst bound, optionally capped.
    fn tso_segs(&self, _tp: &CcSock, _mss_now: u32) -> Option<u32> {
        let mut segs = self.max_tso_burst.max(self.ver.min_tso_segs());
        if self.params.max_tso_segs > 0 {
            segs = segs.min(self.params.max_tso_segs);
        }
        Some(segs)
    }
}

#[cfg(test)]
mod tests;
