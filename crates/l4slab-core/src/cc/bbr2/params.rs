//! The module parameters of BBRv2 (`bbr2`, google/bbr v2alpha) and of L4S-BBRv2
//! (`bbr2-l4s`, L4STeam/linux), as `cc_params`.
//!
//! One serde struct holds the union of both parameter sets; each variant's schema
//! ([`v2alpha_specs`], [`l4s_specs`]) lists exactly the parameters its kernel
//! exposes, with that kernel's defaults, and a key outside it is refused by name.
//! Values are the kernel's fixed-point integers (gains in 1/256 = `BBR_UNIT`).
//! Sources: google/bbr v2alpha `net/ipv4/tcp_bbr2.c` (the `module_param_named`
//! block and `bbr2_init`), L4STeam/linux `net/ipv4/tcp_bbr2.c` (commit 009adfe4).

use crate::schema::{ParamKind, ParamSpec};

pub use crate::cc::bbr_common::BBR_UNIT;

/// BBRv2 module parameters (`/sys/module/tcp_bbr2/parameters/*`); `Default` is
/// google/bbr v2alpha, [`Bbr2Params::l4s`] is the L4STeam tree.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Bbr2Params {
    /// `bbr_ecn_enable`: use ECN in the model, and echo CE DCTCP-style on a
    /// receiving socket (a global read at event time). v2alpha false, L4S true.
    pub ecn_enable: bool,
    /// `bbr_ecn_max_rtt_us`: ECN only if min_rtt ≤ this (0 = any RTT). v2alpha 5000, L4S 0.
    pub ecn_max_rtt_us: u32,
    pub bw_rtts: u32,
    pub min_tso_rate: u32,
    pub tso_rtt_shift: u32,
    pub high_gain: u32,
    pub drain_gain: u32,
    pub startup_cwnd_gain: u32,
    pub cwnd_gain: u32,
    /// v2alpha's 8-entry `pacing_gain` (PROBE_BW phases use entries 0..4: UP, DOWN, CRUISE, REFILL).
    pub pacing_gain: Vec<u32>,
    /// L4STeam's 4-entry `bbr2_pacing_gain` (UP, DOWN, CRUISE, REFILL).
    pub bbr2_pacing_gain: Vec<u32>,
    pub cycle_rand: u32,
    pub cwnd_min_target: u32,
    pub probe_rtt_cwnd_gain: u32,
    pub cwnd_warn_val: u32,
    pub debug_port_mask: u32,
    pub flags: u32,
    pub debug_ftrace: bool,
    pub debug_with_printk: bool,
    pub min_rtt_win_sec: u32,
    pub probe_rtt_mode_ms: u32,
    pub probe_rtt_win_ms: u32,
    pub full_bw_thresh: u32,
    pub full_bw_cnt: u32,
    /// `cwnd_tso_bduget` [sic, the kernel's spelling]: 1 = floor, 0 = pad.
    pub cwnd_tso_bduget: u32,
    pub extra_acked_gain: u32,
    pub extra_acked_win_rtts: u32,
    pub extra_acked_max_us: u32,
    pub ack_epoch_acked_reset_thresh: u32,
    pub drain_to_target: bool,
    pub precise_ece_ack: bool,
    pub extra_acked_in_startup: u32,
    pub usage_based_cwnd: bool,
    pub beta: u32,
    pub ecn_alpha_gain: u32,
    pub ecn_alpha_init: u32,
    pub ecn_factor: u32,
    pub ecn_thresh: u32,
    pub ecn_reprobe_gain: u32,
    pub ecn_bw_lo: bool,
    pub ecn_bw_hi: bool,
    pub loss_thresh: u32,
    pub full_loss_cnt: u32,
    pub full_ecn_cnt: u32,
    pub inflight_headroom: u32,
    pub bw_probe_pif_gain: u32,
    pub bw_probe_exit: u32,
    pub full_bw_cnt_up: u32,
    pub full_bw_thresh_up: u32,
    pub bw_probe_cwnd_gain: u32,
    pub bw_probe_reno_gain: u32,
    pub bw_probe_max_rounds: u32,
    pub bw_probe_rand_rounds: u32,
    pub bw_probe_base_us: u32,
    pub bw_probe_rand_us: u32,
    pub undo: bool,
    pub fast_path: bool,
    /// `bbr_fast_ack_mode`: 1 = rwnd check off; 2 = also quick-ACK on CE (receiving socket).
    pub fast_ack_mode: u32,
    pub refill_add_inc: u32,
}

impl Default for Bbr2Params {
    /// google/bbr v2alpha `tcp_bbr2.c` defaults.
    fn default() -> Self {
        Bbr2Params {
            ecn_enable: false,
            ecn_max_rtt_us: 5000,
            bw_rtts: 10,
            min_tso_rate: 1_200_000,
            tso_rtt_shift: 9,
            high_gain: BBR_UNIT * 2885 / 1000 + 1,
            drain_gain: BBR_UNIT * 1000 / 2885,
            startup_cwnd_gain: BBR_UNIT * 2885 / 1000 + 1,
            cwnd_gain: BBR_UNIT * 2,
            pacing_gain: vec![
                BBR_UNIT * 5 / 4,
                BBR_UNIT * 3 / 4,
                BBR_UNIT,
                BBR_UNIT,
                BBR_UNIT,
                BBR_UNIT,
                BBR_UNIT,
                BBR_UNIT,
            ],
            bbr2_pacing_gain: vec![BBR_UNIT * 5 / 4, BBR_UNIT * 91 / 100, BBR_UNIT, BBR_UNIT],
            cycle_rand: 7,
            cwnd_min_target: 4,
            probe_rtt_cwnd_gain: BBR_UNIT / 2,
            cwnd_warn_val: 1 << 20,
            debug_port_mask: 0,
            flags: 0,
            debug_ftrace: false,
            debug_with_printk: false,
            min_rtt_win_sec: 10,
            probe_rtt_mode_ms: 200,
            probe_rtt_win_ms: 5000,
            full_bw_thresh: BBR_UNIT * 5 / 4,
            full_bw_cnt: 3,
            cwnd_tso_bduget: 1,
            extra_acked_gain: 256,
            extra_acked_win_rtts: 5,
            extra_acked_max_us: 100_000,
            ack_epoch_acked_reset_thresh: 1 << 20,
            drain_to_target: true,
            precise_ece_ack: true,
            extra_acked_in_startup: 1,
            usage_based_cwnd: false,
            beta: BBR_UNIT * 30 / 100,
            ecn_alpha_gain: BBR_UNIT / 16,
            ecn_alpha_init: BBR_UNIT,
            ecn_factor: BBR_UNIT / 3,
            ecn_thresh: BBR_UNIT / 2,
            ecn_reprobe_gain: 0,
            ecn_bw_lo: true,
            ecn_bw_hi: true,
            loss_thresh: BBR_UNIT * 2 / 100,
            full_loss_cnt: 8,
            full_ecn_cnt: 2,
            inflight_headroom: BBR_UNIT * 15 / 100,
            bw_probe_pif_gain: BBR_UNIT * 5 / 4,
            bw_probe_exit: 0,
            full_bw_cnt_up: 2,
            full_bw_thresh_up: 1125 * BBR_UNIT / 1000,
            bw_probe_cwnd_gain: 1,
            bw_probe_reno_gain: BBR_UNIT,
            bw_probe_max_rounds: 63,
            bw_probe_rand_rounds: 2,
            bw_probe_base_us: 2_000_000,
            bw_probe_rand_us: 1_000_000,
            undo: true,
            fast_path: true,
            fast_ack_mode: 1,
            refill_add_inc: 0,
        }
    }
}

impl Bbr2Params {
    /// L4STeam/linux `tcp_bbr2.c` defaults: ECN on (`bbr_ecn_enable = true`) at any
    /// RTT (`bbr_ecn_max_rtt_us = 0`, a plain global there); the rest as v2alpha.
    pub fn l4s() -> Self {
        Bbr2Params { ecn_enable: true, ecn_max_rtt_us: 0, ..Bbr2Params::default() }
    }
}

/// The parameters both trees expose, as (name, kind, doc, max) over `d`.
fn common(d: &Bbr2Params) -> Vec<ParamSpec> {
    let int = |name: &'static str, v: u32, doc: &'static str, max: u32| {
        ParamSpec::new(name, ParamKind::Int, v.into(), doc).range(0.0, max as f64)
    };
    let flag = |name: &'static str, v: bool, doc: &'static str| ParamSpec::new(name, ParamKind::Bool, v.into(), doc);
    vec![
        flag(
            "ecn_enable",
            d.ecn_enable,
            "bbr_ecn_enable: use ECN marks in the model and echo CE DCTCP-style as receiver",
        ),
        int(
            "ecn_max_rtt_us",
            d.ecn_max_rtt_us,
            "bbr_ecn_max_rtt_us: ECN only if min_rtt <= this, 0 = any RTT",
            0x7ffff,
        ),
        int(
            "min_tso_rate",
            d.min_tso_rate,
            "bbr_min_tso_rate: below this pacing rate (bit/s) TSO bursts are 1 segment",
            u32::MAX,
        ),
        int(
            "tso_rtt_shift",
            d.tso_rtt_shift,
            "bbr_tso_rtt_shift: halve the 64 KB RTT burst allowance per 2^shift us of min_rtt",
            15,
        ),
        int("high_gain", d.high_gain, "bbr_high_gain: STARTUP pacing gain in 1/256 (739 = 2.885)", 0x7ff),
        int("drain_gain", d.drain_gain, "bbr_drain_gain: DRAIN pacing gain in 1/256 (88 = 1/2.885)", 0x3ff),
        int("startup_cwnd_gain", d.startup_cwnd_gain, "bbr_startup_cwnd_gain: STARTUP cwnd gain in 1/256", 0x7ff),
        int("cwnd_gain", d.cwnd_gain, "bbr_cwnd_gain: PROBE_BW cwnd gain in 1/256 (512 = 2.0)", 0x7ff),
        int("cwnd_min_target", d.cwnd_min_target, "bbr_cwnd_min_target: minimum cwnd, packets", 15),
        int(
            "probe_rtt_cwnd_gain",
            d.probe_rtt_cwnd_gain,
            "bbr_probe_rtt_cwnd_gain: PROBE_RTT cwnd as BDP fraction in 1/256, 0 = cwnd_min_target",
            255,
        ),
        int(
            "cwnd_warn_val",
            d.cwnd_warn_val,
            "bbr_cwnd_warn_val: debugging only (a kernel warning), no effect here",
            u32::MAX,
        ),
        int("debug_port_mask", d.debug_port_mask, "bbr_debug_port_mask: debugging only, no effect here", 0xffff),
        int("flags", d.flags, "bbr_flags: debugging only, no effect here", u32::MAX),
        flag("debug_ftrace", d.debug_ftrace, "bbr_debug_ftrace: debugging only, no effect here"),
        flag("debug_with_printk", d.debug_with_printk, "bbr_debug_with_printk: debugging only, no effect here"),
        int("min_rtt_win_sec", d.min_rtt_win_sec, "bbr_min_rtt_win_sec: min_rtt filter window, s", 31),
        int(
            "probe_rtt_mode_ms",
            d.probe_rtt_mode_ms,
            "bbr_probe_rtt_mode_ms: minimum PROBE_RTT duration, ms (0 disables PROBE_RTT)",
            511,
        ),
        int(
            "probe_rtt_win_ms",
            d.probe_rtt_win_ms,
            "bbr_probe_rtt_win_ms: PROBE_RTT interval, ms (capped at min_rtt_win_sec)",
            0x3fff,
        ),
        int(
            "full_bw_thresh",
            d.full_bw_thresh,
            "bbr_full_bw_thresh: STARTUP growth that counts as growth, 1/256 (320 = 1.25)",
            0x3ff,
        ),
        int("full_bw_cnt", d.full_bw_cnt, "bbr_full_bw_cnt: rounds without growth that fill the pipe", 7),
        int(
            "cwnd_tso_bduget",
            d.cwnd_tso_bduget,
            "bbr_cwnd_tso_budget (kernel spelling bduget): 1 floors cwnd at 3 TSO bursts, 0 pads",
            1,
        ),
        int("extra_acked_gain", d.extra_acked_gain, "bbr_extra_acked_gain: ACK-aggregation cwnd gain in 1/256", 0x7ff),
        int(
            "extra_acked_win_rtts",
            d.extra_acked_win_rtts,
            "bbr_extra_acked_win_rtts: extra_acked filter window, rounds",
            31,
        ),
        int(
            "extra_acked_max_us",
            d.extra_acked_max_us,
            "bbr_extra_acked_max_us: cap of the aggregation cwnd, us of bw",
            u32::MAX,
        ),
        int(
            "ack_epoch_acked_reset_thresh",
            d.ack_epoch_acked_reset_thresh,
            "bbr_ack_epoch_acked_reset_thresh: packets that restart the ACK epoch",
            u32::MAX,
        ),
        flag("drain_to_target", d.drain_to_target, "bbr_drain_to_target: PROBE_BW DOWN until inflight <= BDP"),
        flag(
            "precise_ece_ack",
            d.precise_ece_ack,
            "bbr_precise_ece_ack: as receiver, echo CE DCTCP-style (needs ecn_enable)",
        ),
        int(
            "extra_acked_in_startup",
            d.extra_acked_in_startup,
            "bbr_extra_acked_in_startup: use extra_acked (1-round window) in STARTUP",
            1,
        ),
        flag("usage_based_cwnd", d.usage_based_cwnd, "bbr_usage_based_cwnd: never grow cwnd beyond 2x max_packets_out"),
        int("beta", d.beta, "bbr_beta: loss cut of bw_lo/inflight_lo in 1/256 (76: x0.703)", 255),
        int("ecn_alpha_gain", d.ecn_alpha_gain, "bbr_ecn_alpha_gain: ECN alpha EWMA gain in 1/256 (16 = 1/16)", 255),
        int("ecn_alpha_init", d.ecn_alpha_init, "bbr_ecn_alpha_init: initial alpha in 1/256 (256 = 1.0)", 256),
        int(
            "ecn_factor",
            d.ecn_factor,
            "bbr_ecn_factor: ECN cut = 1 - alpha*factor, 1/256 (85 = 1/3); 0 disables",
            255,
        ),
        int("ecn_thresh", d.ecn_thresh, "bbr_ecn_thresh: CE fraction that is too high, 1/256 (128 = 50 %)", 255),
        int(
            "ecn_reprobe_gain",
            d.ecn_reprobe_gain,
            "bbr_ecn_reprobe_gain: re-probe at this fraction of inflight_hi after ECN clears, 0 = off",
            0x1ff,
        ),
        int(
            "loss_thresh",
            d.loss_thresh,
            "bbr_loss_thresh: loss rate of a probe that is too high, 1/256 (5 = 2 %)",
            255,
        ),
        int(
            "full_loss_cnt",
            d.full_loss_cnt,
            "bbr_full_loss_cnt: loss events in a Recovery round that end STARTUP",
            15,
        ),
        int("full_ecn_cnt", d.full_ecn_cnt, "bbr_full_ecn_cnt: rounds of CE >= ecn_thresh that end STARTUP", 3),
        int(
            "inflight_headroom",
            d.inflight_headroom,
            "bbr_inflight_headroom: headroom below inflight_hi in CRUISE, 1/256 (38 = 15 %)",
            255,
        ),
        int(
            "bw_probe_pif_gain",
            d.bw_probe_pif_gain,
            "bbr_bw_probe_pif_gain: PROBE_UP ends at inflight >= this x BDP, 1/256",
            0x1ff,
        ),
        int(
            "bw_probe_reno_gain",
            d.bw_probe_reno_gain,
            "bbr_bw_probe_reno_gain: probe at least every gain x BDP rounds, 1/256; 0 = off",
            0x1ff,
        ),
        int(
            "bw_probe_max_rounds",
            d.bw_probe_max_rounds,
            "bbr_bw_probe_max_rounds: probe at least every this many rounds",
            255,
        ),
        int(
            "bw_probe_rand_rounds",
            d.bw_probe_rand_rounds,
            "bbr_bw_probe_rand_rounds: random start of the round count, U{0..n-1}",
            15,
        ),
        int("bw_probe_base_us", d.bw_probe_base_us, "bbr_bw_probe_base_us: wall-clock probe wait, us", (1 << 26) - 1),
        int(
            "bw_probe_rand_us",
            d.bw_probe_rand_us,
            "bbr_bw_probe_rand_us: random extra probe wait U[0, n), us",
            (1 << 26) - 1,
        ),
        flag("undo", d.undo, "bbr_undo: restore the model when a loss recovery was spurious"),
        flag("fast_path", d.fast_path, "bbr_fast_path: skip the model update on app-limited ACKs"),
        int(
            "fast_ack_mode",
            d.fast_ack_mode,
            "bbr_fast_ack_mode: 1 rwnd check off, 2 also quick-ACK on CE as receiver",
            2,
        ),
        int("refill_add_inc", d.refill_add_inc, "bbr_refill_add_inc: inflight_hi increment at REFILL, packets", 3),
    ]
}

/// google/bbr v2alpha's parameter schema.
pub fn v2alpha_specs() -> Vec<ParamSpec> {
    let d = Bbr2Params::default();
    let mut v = common(&d);
    v.push(
        ParamSpec::new(
            "bw_rtts",
            ParamKind::Int,
            d.bw_rtts.into(),
            "bbr_bw_rtts: v1 bw filter window, rounds (unused by v2's model)",
        )
        .range(0.0, 31.0),
    );
    v.push(
        ParamSpec::new(
            "pacing_gain",
            ParamKind::Object,
            serde_json::to_value(&d.pacing_gain).unwrap_or_default(),
            "bbr_pacing_gain: 8 gains in 1/256; PROBE_BW UP, DOWN, CRUISE, REFILL use entries 0-3",
        )
        .range(0.0, 1023.0),
    );
    v.push(
        ParamSpec::new(
            "cycle_rand",
            ParamKind::Int,
            d.cycle_rand.into(),
            "bbr_cycle_rand: v1 start-phase randomisation (unused by v2)",
        )
        .range(0.0, 7.0),
    );
    v.push(ParamSpec::new("ecn_bw_lo", ParamKind::Bool, d.ecn_bw_lo.into(), "bbr_ecn_bw_lo: ECN also cuts bw_lo"));
    v.push(ParamSpec::new(
        "ecn_bw_hi",
        ParamKind::Bool,
        d.ecn_bw_hi.into(),
        "bbr_ecn_bw_hi: a too-high ECN probe also cuts bw_hi",
    ));
    v
}

/// L4STeam/linux's parameter schema (no `bw_rtts`, `cycle_rand`, `ecn_bw_lo`,
/// `ecn_bw_hi`, `pacing_gain`; adds the PROBE_UP exit knobs and `bbr2_pacing_gain`).
pub fn l4s_specs() -> Vec<ParamSpec> {
    let d = Bbr2Params::l4s();
    let mut v = common(&d);
    let int = |name: &'static str, v: u32, doc: &'static str, max: f64| {
        ParamSpec::new(name, ParamKind::Int, v.into(), doc).range(0.0, max)
    };
    v.push(
        ParamSpec::new(
            "pacing_gain",
            ParamKind::Object,
            serde_json::to_value(&d.pacing_gain).unwrap_or_default(),
            "bbr_pacing_gain: the legacy 8-entry v1 table, unused by this tree's PROBE_BW (see bbr2_pacing_gain)",
        )
        .range(0.0, 1023.0),
    );
    v.push(int(
        "bw_probe_exit",
        d.bw_probe_exit,
        "bbr_bw_probe_exit: 0 PROBE_UP ends at 1.25 BDP in flight, 1 on a bw plateau",
        1.0,
    ));
    v.push(int(
        "full_bw_cnt_up",
        d.full_bw_cnt_up,
        "bbr_full_bw_cnt_up: plateau rounds that end PROBE_UP (bw_probe_exit 1)",
        3.0,
    ));
    v.push(int(
        "full_bw_thresh_up",
        d.full_bw_thresh_up,
        "bbr_full_bw_thresh_up: PROBE_UP growth threshold, 1/256 (288 = 1.125)",
        511.0,
    ));
    v.push(int(
        "bw_probe_cwnd_gain",
        d.bw_probe_cwnd_gain,
        "bbr_bw_probe_cwnd_gain: extra PROBE_UP cwnd gain in 1/4 (1 = +0.25)",
        3.0,
    ));
    v.push(
        ParamSpec::new(
            "bbr2_pacing_gain",
            ParamKind::Object,
            serde_json::to_value(&d.bbr2_pacing_gain).unwrap_or_default(),
            "bbr2_pacing_gain: PROBE_BW UP, DOWN, CRUISE, REFILL gains in 1/256 (320, 232, 256, 256)",
        )
        .range(0.0, 1023.0),
    );
    v
}
