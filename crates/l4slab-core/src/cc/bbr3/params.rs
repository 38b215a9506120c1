//! BBRv3's tunables. In google/bbr v3 `net/ipv4/tcp_bbr.c` every one is a
//! `static const` (no module parameters; `bbr_param(sk, name)` expands to the
//! constant): here they are `cc_params` with those values as defaults, so a study
//! can vary them. Fixed-point as the kernel: gains and fractions in 1/256
//! (`BBR_UNIT`), times in µs / ms / s as named.

use crate::schema::{ParamKind, ParamSpec};

pub use crate::cc::bbr_common::{BBR_SCALE, BBR_UNIT};

/// The tunables of google/bbr v3 `tcp_bbr.c` (each field's doc names the
/// `static const`); `Default` = the kernel's values.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Bbr3Params {
    /// `bbr_min_rtt_win_sec` = 10.
    pub min_rtt_win_sec: u32,
    /// `bbr_probe_rtt_mode_ms` = 200.
    pub probe_rtt_mode_ms: u32,
    /// `bbr_probe_rtt_win_ms` = 5000 (≤ min_rtt_win_sec·1000).
    pub probe_rtt_win_ms: u32,
    /// `bbr_probe_rtt_cwnd_gain` = BBR_UNIT/2.
    pub probe_rtt_cwnd_gain: u32,
    /// `bbr_tso_rtt_shift` = 9.
    pub tso_rtt_shift: u32,
    /// `bbr_pacing_margin_percent` = 1.
    pub pacing_margin_percent: u32,
    /// `bbr_startup_pacing_gain` = BBR_UNIT·277/100 + 1 = 710 (2.77).
    pub startup_pacing_gain: u32,
    /// `bbr_startup_cwnd_gain` = 2·BBR_UNIT.
    pub startup_cwnd_gain: u32,
    /// `bbr_drain_gain` = BBR_UNIT·1000/2885 = 88.
    pub drain_gain: u32,
    /// `bbr_cwnd_gain` = 2·BBR_UNIT.
    pub cwnd_gain: u32,
    /// `bbr_pacing_gain[]`: UP 5/4, DOWN 91/100 (232), CRUISE 1, REFILL 1.
    pub pacing_gain: [u32; 4],
    /// `bbr_cwnd_min_target` = 4.
    pub cwnd_min_target: u32,
    /// `bbr_full_bw_thresh` = BBR_UNIT·5/4.
    pub full_bw_thresh: u32,
    /// `bbr_full_bw_cnt` = 3.
    pub full_bw_cnt: u32,
    /// `bbr_extra_acked_gain` = BBR_UNIT.
    pub extra_acked_gain: u32,
    /// `bbr_extra_acked_win_rtts` = 5.
    pub extra_acked_win_rtts: u32,
    /// `bbr_ack_epoch_acked_reset_thresh` = 2^20.
    pub ack_epoch_acked_reset_thresh: u32,
    /// `bbr_extra_acked_max_us` = 100 ms.
    pub extra_acked_max_us: u32,
    /// `bbr_ecn_max_rtt_us` = 5000 (0 = any RTT).
    pub ecn_max_rtt_us: u32,
    /// `bbr_beta` = BBR_UNIT·30/100 = 76.
    pub beta: u32,
    /// `bbr_ecn_alpha_gain` = BBR_UNIT/16.
    pub ecn_alpha_gain: u32,
    /// `bbr_ecn_alpha_init` = BBR_UNIT.
    pub ecn_alpha_init: u32,
    /// `bbr_ecn_factor` = BBR_UNIT/3 = 85.
    pub ecn_factor: u32,
    /// `bbr_ecn_thresh` = BBR_UNIT/2.
    pub ecn_thresh: u32,
    /// `bbr_ecn_reprobe_gain` = BBR_UNIT/2.
    pub ecn_reprobe_gain: u32,
    /// `bbr_loss_thresh` = BBR_UNIT·2/100 = 5.
    pub loss_thresh: u32,
    /// `bbr_full_loss_cnt` = 6.
    pub full_loss_cnt: u32,
    /// `bbr_full_ecn_cnt` = 2.
    pub full_ecn_cnt: u32,
    /// `bbr_inflight_headroom` = BBR_UNIT·15/100 = 38.
    pub inflight_headroom: u32,
    /// `bbr_bw_probe_cwnd_gain` = 1 (in BBR_UNIT/4: UP cwnd gain 2.25).
    pub bw_probe_cwnd_gain: u32,
    /// `bbr_bw_probe_max_rounds` = 63.
    pub bw_probe_max_rounds: u32,
    /// `bbr_bw_probe_rand_rounds` = 2.
    pub bw_probe_rand_rounds: u32,
    /// `bbr_bw_probe_base_us` = 2 s.
    pub bw_probe_base_us: u32,
    /// `bbr_bw_probe_rand_us` = 1 s.
    pub bw_probe_rand_us: u32,
    /// `bbr_fast_path` = true.
    pub fast_path: bool,
    /// `net.ipv4.tcp_min_tso_segs` (sysctl, default 2): floor of `bbr_tso_segs_generic`.
    pub min_tso_segs: u32,
}

impl Default for Bbr3Params {
    fn default() -> Self {
        Bbr3Params {
            min_rtt_win_sec: 10,
            probe_rtt_mode_ms: 200,
            probe_rtt_win_ms: 5000,
            probe_rtt_cwnd_gain: BBR_UNIT / 2,
            tso_rtt_shift: 9,
            pacing_margin_percent: 1,
            startup_pacing_gain: BBR_UNIT * 277 / 100 + 1,
            startup_cwnd_gain: BBR_UNIT * 2,
            drain_gain: BBR_UNIT * 1000 / 2885,
            cwnd_gain: BBR_UNIT * 2,
            pacing_gain: [BBR_UNIT * 5 / 4, BBR_UNIT * 91 / 100, BBR_UNIT, BBR_UNIT],
            cwnd_min_target: 4,
            full_bw_thresh: BBR_UNIT * 5 / 4,
            full_bw_cnt: 3,
            extra_acked_gain: BBR_UNIT,
            extra_acked_win_rtts: 5,
            ack_epoch_acked_reset_thresh: 1 << 20,
            extra_acked_max_us: 100_000,
            ecn_max_rtt_us: 5000,
            beta: BBR_UNIT * 30 / 100,
            ecn_alpha_gain: BBR_UNIT / 16,
            ecn_alpha_init: BBR_UNIT,
            ecn_factor: BBR_UNIT / 3,
            ecn_thresh: BBR_UNIT / 2,
            ecn_reprobe_gain: BBR_UNIT / 2,
            loss_thresh: BBR_UNIT * 2 / 100,
            full_loss_cnt: 6,
            full_ecn_cnt: 2,
            inflight_headroom: BBR_UNIT * 15 / 100,
            bw_probe_cwnd_gain: 1,
            bw_probe_max_rounds: 63,
            bw_probe_rand_rounds: 2,
            bw_probe_base_us: 2_000_000,
            bw_probe_rand_us: 1_000_000,
            fast_path: true,
            min_tso_segs: 2,
        }
    }
}

impl Bbr3Params {
    /// Cross-field limits the per-field ranges cannot state.
    pub fn check(&self) -> Result<(), String> {
        if self.probe_rtt_win_ms as u64 > self.min_rtt_win_sec as u64 * 1000 {
            return Err(format!(
                "probe_rtt_win_ms: {} exceeds min_rtt_win_sec·1000 = {} (tcp_bbr.c: probe_rtt_win_ms <= min_rtt_win_sec * MSEC_PER_SEC)",
                self.probe_rtt_win_ms,
                self.min_rtt_win_sec as u64 * 1000
            ));
        }
        for (i, g) in self.pacing_gain.iter().enumerate() {
            if *g == 0 || *g > 1023 {
                return Err(format!("pacing_gain: element {i} = {g} is out of range (allowed 1..=1023, in 1/256)"));
            }
        }
        Ok(())
    }
}

/// The `cc_params` schema: one spec per field, default = the kernel constant.
pub fn param_specs() -> Vec<ParamSpec> {
    use ParamKind::*;
    let d = Bbr3Params::default();
    let int = |name, v: u32, min: f64, max: f64, doc| ParamSpec::new(name, Int, v.into(), doc).range(min, max);
    // Gains live in 10-bit fields (`pacing_gain:10`, `cwnd_gain:10`): at most 1023/256.
    vec![
        int(
            "min_rtt_win_sec",
            d.min_rtt_win_sec,
            1.0,
            3600.0,
            "bbr_min_rtt_win_sec: min_rtt filter window, s (static const 10)",
        ),
        int(
            "probe_rtt_mode_ms",
            d.probe_rtt_mode_ms,
            0.0,
            60_000.0,
            "bbr_probe_rtt_mode_ms: time at the PROBE_RTT cwnd, ms; 0 = no PROBE_RTT (200)",
        ),
        int(
            "probe_rtt_win_ms",
            d.probe_rtt_win_ms,
            1.0,
            3_600_000.0,
            "bbr_probe_rtt_win_ms: PROBE_RTT interval, ms, <= min_rtt_win_sec*1000 (5000)",
        ),
        int(
            "probe_rtt_cwnd_gain",
            d.probe_rtt_cwnd_gain,
            0.0,
            1023.0,
            "bbr_probe_rtt_cwnd_gain: PROBE_RTT cwnd / BDP, 1/256 (128 = 0.5)",
        ),
        int(
            "tso_rtt_shift",
            d.tso_rtt_shift,
            0.0,
            31.0,
            "bbr_tso_rtt_shift: halve the 64 KB TSO allowance per 2^shift µs of min_rtt; 0 = none (9)",
        ),
        int(
            "pacing_margin_percent",
            d.pacing_margin_percent,
            0.0,
            99.0,
            "bbr_pacing_margin_percent: pace this % below gain*bw (1)",
        ),
        int("startup_pacing_gain", d.startup_pacing_gain, 1.0, 1023.0, "bbr_startup_pacing_gain, 1/256 (710 = 2.77)"),
        int(
            "startup_cwnd_gain",
            d.startup_cwnd_gain,
            1.0,
            1023.0,
            "bbr_startup_cwnd_gain, 1/256; also DRAIN's (512 = 2.0)",
        ),
        int("drain_gain", d.drain_gain, 1.0, 1023.0, "bbr_drain_gain: DRAIN pacing gain, 1/256 (88 = 1/2.885)"),
        int("cwnd_gain", d.cwnd_gain, 1.0, 1023.0, "bbr_cwnd_gain: PROBE_BW cwnd gain, 1/256 (512 = 2.0)"),
        ParamSpec::new(
            "pacing_gain",
            Object,
            serde_json::json!(d.pacing_gain),
            "bbr_pacing_gain[]: PROBE_BW pacing gains [UP, DOWN, CRUISE, REFILL], 1/256 each ([320, 232, 256, 256])",
        ),
        int("cwnd_min_target", d.cwnd_min_target, 1.0, 1_000_000.0, "bbr_cwnd_min_target: cwnd floor, packets (4)"),
        int(
            "full_bw_thresh",
            d.full_bw_thresh,
            0.0,
            65535.0,
            "bbr_full_bw_thresh: bw growth that resets the plateau count, 1/256 (320 = 1.25)",
        ),
        int(
            "full_bw_cnt",
            d.full_bw_cnt,
            1.0,
            3.0,
            "bbr_full_bw_cnt: rounds without that growth for a full pipe (3; 2-bit field)",
        ),
        int(
            "extra_acked_gain",
            d.extra_acked_gain,
            0.0,
            1023.0,
            "bbr_extra_acked_gain: gain on the ACK-aggregation cwnd, 1/256; 0 = off (256)",
        ),
        int(
            "extra_acked_win_rtts",
            d.extra_acked_win_rtts,
            1.0,
            31.0,
            "bbr_extra_acked_win_rtts: extra_acked filter window, rounds (5)",
        ),
        int(
            "ack_epoch_acked_reset_thresh",
            d.ack_epoch_acked_reset_thresh,
            1.0,
            1_048_576.0,
            "bbr_ack_epoch_acked_reset_thresh: packets after which the ACK epoch restarts (2^20)",
        ),
        int(
            "extra_acked_max_us",
            d.extra_acked_max_us,
            0.0,
            10_000_000.0,
            "bbr_extra_acked_max_us: cap of the aggregation cwnd, µs of bw (100000)",
        ),
        int(
            "ecn_max_rtt_us",
            d.ecn_max_rtt_us,
            0.0,
            524_287.0,
            "bbr_ecn_max_rtt_us: ECN logic only if min_rtt <= this, µs; 0 = any RTT (5000)",
        ),
        int("beta", d.beta, 0.0, 256.0, "bbr_beta: loss cut of bw_lo/inflight_lo per lossy round, 1/256 (76 = 0.3)"),
        int(
            "ecn_alpha_gain",
            d.ecn_alpha_gain,
            0.0,
            256.0,
            "bbr_ecn_alpha_gain: EWMA gain of the CE fraction, 1/256 (16 = 1/16)",
        ),
        int("ecn_alpha_init", d.ecn_alpha_init, 0.0, 256.0, "bbr_ecn_alpha_init: initial ECN alpha, 1/256 (256 = 1.0)"),
        int(
            "ecn_factor",
            d.ecn_factor,
            0.0,
            256.0,
            "bbr_ecn_factor: inflight_lo cut = 1 - alpha*factor, 1/256; 0 = no ECN response (85 = 1/3)",
        ),
        int(
            "ecn_thresh",
            d.ecn_thresh,
            0.0,
            256.0,
            "bbr_ecn_thresh: CE fraction that is 'too high', 1/256; 0 = off (128 = 0.5)",
        ),
        int(
            "ecn_reprobe_gain",
            d.ecn_reprobe_gain,
            0.0,
            1023.0,
            "bbr_ecn_reprobe_gain: first-round inflight_hi growth after ECN clears, 1/256; 0 = off (128)",
        ),
        int(
            "loss_thresh",
            d.loss_thresh,
            0.0,
            255.0,
            "bbr_loss_thresh: loss rate of a probe that is 'too high', 1/256 (5 = 2 %)",
        ),
        int(
            "full_loss_cnt",
            d.full_loss_cnt,
            0.0,
            15.0,
            "bbr_full_loss_cnt: loss events in a recovery round to exit STARTUP; 0 = off (6; 4-bit counter)",
        ),
        int(
            "full_ecn_cnt",
            d.full_ecn_cnt,
            0.0,
            3.0,
            "bbr_full_ecn_cnt: rounds of CE > ecn_thresh to exit STARTUP; 0 = off (2; 2-bit counter)",
        ),
        int(
            "inflight_headroom",
            d.inflight_headroom,
            0.0,
            255.0,
            "bbr_inflight_headroom: share of inflight_hi left free in CRUISE, 1/256 (38 = 15 %)",
        ),
        int(
            "bw_probe_cwnd_gain",
            d.bw_probe_cwnd_gain,
            0.0,
            3.0,
            "bbr_bw_probe_cwnd_gain: cwnd gain added in PROBE_BW UP, in 1/4 (1 = +0.25)",
        ),
        int(
            "bw_probe_max_rounds",
            d.bw_probe_max_rounds,
            0.0,
            255.0,
            "bbr_bw_probe_max_rounds: Reno-coexistence bound on rounds between probes (63)",
        ),
        int(
            "bw_probe_rand_rounds",
            d.bw_probe_rand_rounds,
            1.0,
            255.0,
            "bbr_bw_probe_rand_rounds: random rounds added to that count, U{0..n-1} (2)",
        ),
        int(
            "bw_probe_base_us",
            d.bw_probe_base_us,
            0.0,
            4_000_000_000.0,
            "bbr_bw_probe_base_us: wall-clock wait between probes, µs (2000000)",
        ),
        int(
            "bw_probe_rand_us",
            d.bw_probe_rand_us,
            1.0,
            4_000_000_000.0,
            "bbr_bw_probe_rand_us: random extra wait U[0, n) µs (1000000)",
        ),
        ParamSpec::new(
            "fast_path",
            Bool,
            d.fast_path.into(),
            "bbr_fast_path: skip the model update on app-limited ACKs without news (true)",
        ),
        int(
            "min_tso_segs",
            d.min_tso_segs,
            1.0,
            255.0,
            "net.ipv4.tcp_min_tso_segs: floor of BBR's TSO burst, segments (sysctl, default 2)",
        ),
    ]
}
