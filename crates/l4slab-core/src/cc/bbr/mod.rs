//! BBRv1 as mainline Linux `net/ipv4/tcp_bbr.c` (the same algorithm as google/bbr
//! `net/ipv4/tcp_bbr1.c`): a model-based congestion control that paces at
//! `pacing_gain × max_bw` and bounds in-flight data by `cwnd_gain × BDP`, where
//! `max_bw` is a 10-round windowed maximum of delivery-rate samples
//! (`tcp_rate.c`) and the BDP uses a 10 s windowed minimum RTT.
//!
//! States STARTUP → DRAIN → PROBE_BW (8-phase gain cycle) ⇄ PROBE_RTT, the
//! long-term ("policer") bandwidth mode, the `extra_acked` ACK-aggregation
//! allowance, the TSO quantization budget and packet conservation in the first
//! round of recovery are each written as the kernel function of the same name,
//! in the kernel's fixed point (bandwidth in packets/µs << 24, gains in 1/256) and
//! with its integer truncations.
//!
//! Source: N. Cardwell, Y. Cheng, C. S. Gunn, S. Hassas Yeganeh, V. Jacobson,
//! "BBR: Congestion-Based Congestion Control", ACM Queue 14(5), 2016; the code is
//! Linux `net/ipv4/tcp_bbr.c` (functions cited per item).
//!
//! Mainline v1 has no module parameters: every tunable is a `static const`.
//! [`BbrParams`] exposes them as `cc_params` with the kernel's values as defaults,
//! so a study can vary one, but a default run is the kernel's algorithm.

use super::descriptor::{parse_params, CcDescriptor, ReceiverDefaults};
use super::minmax::Minmax;
use super::{CaEvent, CaState, CcFlags, CcSock, CcState, CongestionControl, RateSample, SK_PACING_SHIFT};
use crate::time::Time;

#[cfg(test)]
mod tests;

pub use super::bbr_common::Mode;
use super::bbr_common::{self as common, after, ProbeRttStep};
/// Rate unit: packets per µs scaled by 2^24 (`BW_SCALE`); fractions (gains) scaled by
/// 256 (`BBR_SCALE`, `BBR_UNIT`); shared with BBRv2/v3 in `cc/bbr_common.rs`.
pub use super::bbr_common::{BBR_SCALE, BBR_UNIT, BW_SCALE, BW_UNIT};
/// `CYCLE_LEN`: phases of the PROBE_BW pacing-gain cycle.
pub const CYCLE_LEN: u32 = 8;
/// `bbr_pacing_gain[]`: 5/4, 3/4, then six phases at 1.0 (tcp_bbr.c).
pub const PACING_GAIN: [u32; CYCLE_LEN as usize] =
    [BBR_UNIT * 5 / 4, BBR_UNIT * 3 / 4, BBR_UNIT, BBR_UNIT, BBR_UNIT, BBR_UNIT, BBR_UNIT, BBR_UNIT];
/// `bbr_high_gain = BBR_UNIT * 2885 / 1000 + 1` = 739 (2/ln 2 ≈ 2.885).
pub const HIGH_GAIN: u32 = BBR_UNIT * 2885 / 1000 + 1;
/// `bbr_drain_gain = BBR_UNIT * 1000 / 2885` = 88.
pub const DRAIN_GAIN: u32 = BBR_UNIT * 1000 / 2885;
/// `TCP_INIT_CWND` (include/net/tcp.h).
const TCP_INIT_CWND: u32 = 10;
/// `GSO_MAX_SIZE - 1 - MAX_TCP_HEADER` (MAX_TCP_HEADER = 320 on x86-64 builds).
const GSO_GOAL_MAX_BYTES: u64 = 65536 - 1 - 320;
const USEC_PER_SEC: u64 = 1_000_000;
const USEC_PER_MSEC: u64 = 1_000;
const NS_PER_US: u64 = 1_000;

/// BBRv1's tunables, `static const` in mainline `tcp_bbr.c`; `Default` is the kernel.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct BbrParams {
    /// `bbr_high_gain`, STARTUP pacing and cwnd gain in 1/256 (739 ≈ 2.885).
    pub high_gain: u32,
    /// `bbr_drain_gain`, DRAIN pacing gain in 1/256 (88 ≈ 1/2.885).
    pub drain_gain: u32,
    /// `bbr_cwnd_gain`, PROBE_BW cwnd gain in 1/256 (512 = 2).
    pub cwnd_gain: u32,
    /// `bbr_cycle_rand`: the PROBE_BW start phase is drawn over this many phases (7).
    pub cycle_rand: u32,
    /// `bbr_cwnd_min_target`, packets (4).
    pub cwnd_min_target: u32,
    /// `bbr_bw_rtts`: window of the max-bw filter, rounds (CYCLE_LEN + 2 = 10).
    pub bw_rtts: u32,
    /// `bbr_min_rtt_win_sec`: window of the min-RTT filter, s (10).
    pub min_rtt_win_sec: u32,
    /// `bbr_probe_rtt_mode_ms`: minimum time at cwnd_min_target in PROBE_RTT (200).
    pub probe_rtt_mode_ms: u32,
    /// `bbr_min_tso_rate`, bit/s: below it one segment per skb (1 200 000).
    pub min_tso_rate: u64,
    /// `bbr_pacing_margin_percent`: pace this much below gain × bw (1).
    pub pacing_margin_percent: u32,
    /// `bbr_full_bw_thresh` in 1/256: growth that counts as "still growing" (320 = 1.25).
    pub full_bw_thresh: u32,
    /// `bbr_full_bw_cnt`: rounds without such growth before the pipe is full (3).
    pub full_bw_cnt: u32,
    /// `bbr_lt_intvl_min_rtts` (4).
    pub lt_intvl_min_rtts: u32,
    /// `bbr_lt_loss_thresh` in 1/256: lossy interval (50 ≈ 20 %).
    pub lt_loss_thresh: u32,
    /// `bbr_lt_bw_ratio` in 1/256: consistent bw between intervals (32 = 1/8).
    pub lt_bw_ratio: u32,
    /// `bbr_lt_bw_diff`, bytes/s: consistent bw between intervals (500 = 4 kbit/s).
    pub lt_bw_diff: u64,
    /// `bbr_lt_bw_max_rtts`: rounds to use lt_bw once policed (48).
    pub lt_bw_max_rtts: u32,
    /// `bbr_extra_acked_gain` in 1/256 (256).
    pub extra_acked_gain: u32,
    /// `bbr_extra_acked_win_rtts`: rounds per extra_acked slot (5).
    pub extra_acked_win_rtts: u32,
    /// `bbr_extra_acked_max_us`: cap of the aggregation allowance, µs of bw (100 000).
    pub extra_acked_max_us: u32,
}

impl Default for BbrParams {
    fn default() -> Self {
        BbrParams {
            high_gain: HIGH_GAIN,
            drain_gain: DRAIN_GAIN,
            cwnd_gain: BBR_UNIT * 2,
            cycle_rand: 7,
            cwnd_min_target: 4,
            bw_rtts: CYCLE_LEN + 2,
            min_rtt_win_sec: 10,
            probe_rtt_mode_ms: 200,
            min_tso_rate: 1_200_000,
            pacing_margin_percent: 1,
            full_bw_thresh: BBR_UNIT * 5 / 4,
            full_bw_cnt: 3,
            lt_intvl_min_rtts: 4,
            lt_loss_thresh: 50,
            lt_bw_ratio: BBR_UNIT / 8,
            lt_bw_diff: 4000 / 8,
            lt_bw_max_rtts: 48,
            extra_acked_gain: BBR_UNIT,
            extra_acked_win_rtts: 5,
            extra_acked_max_us: 100 * 1000,
        }
    }
}

/// `bbr` in the registry. `TCP_CONG_NON_RESTRICTED` has no effect here; `bbr_init`
/// sets `sk_pacing_status = SK_PACING_NEEDED` (internal pacing without fq), which is
/// `needs_pacing`.
pub const DESCRIPTOR: CcDescriptor = CcDescriptor {
    name: "bbr",
    doc: "BBRv1 (net/ipv4/tcp_bbr.c): model-based, paces at gain × windowed-max bw, cwnd 2 × BDP; ignores ECN.",
    l4s: false,
    flags: CcFlags { needs_pacing: true, ..CcFlags::NONE },
    receiver: ReceiverDefaults::NONE,
    build: |p| Ok(Box::new(Bbr::new(parse_params("bbr", BbrParams::default(), p)?))),
    check: |p| parse_params("bbr", BbrParams::default(), p).map(drop),
    reports_state: true,
    params: param_specs,
};

fn param_specs() -> Vec<crate::schema::ParamSpec> {
    use crate::schema::{ParamKind::*, ParamSpec as P};
    let d = BbrParams::default();
    let gain = |name, v: u32, doc| P::new(name, Int, v.into(), doc).range(1.0, 1023.0);
    vec![
        gain("high_gain", d.high_gain, "STARTUP pacing/cwnd gain in 1/256 (tcp_bbr.c bbr_high_gain: 739 ≈ 2.885)"),
        gain("drain_gain", d.drain_gain, "DRAIN pacing gain in 1/256 (tcp_bbr.c bbr_drain_gain: 88 ≈ 1/2.885)"),
        gain("cwnd_gain", d.cwnd_gain, "PROBE_BW cwnd gain in 1/256 (tcp_bbr.c bbr_cwnd_gain: 512 = 2)"),
        P::new(
            "cycle_rand",
            Int,
            d.cycle_rand.into(),
            "PROBE_BW start phase drawn over this many phases (tcp_bbr.c bbr_cycle_rand: 7)",
        )
        .range(1.0, 7.0),
        P::new(
            "cwnd_min_target",
            Int,
            d.cwnd_min_target.into(),
            "minimum cwnd and PROBE_RTT cwnd, packets (tcp_bbr.c bbr_cwnd_min_target: 4)",
        )
        .range(1.0, 1e6),
        P::new(
            "bw_rtts",
            Int,
            d.bw_rtts.into(),
            "max-bw filter window, rounds (tcp_bbr.c bbr_bw_rtts: CYCLE_LEN + 2 = 10)",
        )
        .range(1.0, 1e6),
        P::new(
            "min_rtt_win_sec",
            Int,
            d.min_rtt_win_sec.into(),
            "min-RTT filter window, s (tcp_bbr.c bbr_min_rtt_win_sec: 10)",
        )
        .range(1.0, 1e6),
        P::new(
            "probe_rtt_mode_ms",
            Int,
            d.probe_rtt_mode_ms.into(),
            "time at the minimum cwnd in PROBE_RTT, ms; 0 = never probe (tcp_bbr.c bbr_probe_rtt_mode_ms: 200)",
        )
        .range(0.0, 1e6),
        P::new(
            "min_tso_rate",
            Int,
            d.min_tso_rate.into(),
            "below this pacing rate, bit/s, one segment per skb (tcp_bbr.c bbr_min_tso_rate: 1200000)",
        )
        .range(0.0, 1e13),
        P::new(
            "pacing_margin_percent",
            Int,
            d.pacing_margin_percent.into(),
            "pace this many percent below gain × bw (tcp_bbr.c bbr_pacing_margin_percent: 1)",
        )
        .range(0.0, 99.0),
        gain(
            "full_bw_thresh",
            d.full_bw_thresh,
            "bw growth per round that keeps STARTUP going, 1/256 (tcp_bbr.c bbr_full_bw_thresh: 320 = 1.25)",
        ),
        P::new(
            "full_bw_cnt",
            Int,
            d.full_bw_cnt.into(),
            "rounds without that growth before the pipe is full (tcp_bbr.c bbr_full_bw_cnt: 3)",
        )
        .range(1.0, 3.0),
        P::new(
            "lt_intvl_min_rtts",
            Int,
            d.lt_intvl_min_rtts.into(),
            "policer detector: minimum rounds per interval (tcp_bbr.c bbr_lt_intvl_min_rtts: 4)",
        )
        .range(1.0, 31.0),
        gain(
            "lt_loss_thresh",
            d.lt_loss_thresh,
            "policer detector: lossy interval threshold, 1/256 (tcp_bbr.c bbr_lt_loss_thresh: 50 ≈ 20 %)",
        ),
        gain(
            "lt_bw_ratio",
            d.lt_bw_ratio,
            "policer detector: consistent bw ratio, 1/256 (tcp_bbr.c bbr_lt_bw_ratio: 32 = 1/8)",
        ),
        P::new(
            "lt_bw_diff",
            Int,
            d.lt_bw_diff.into(),
            "policer detector: consistent bw difference, bytes/s (tcp_bbr.c bbr_lt_bw_diff: 500 = 4 kbit/s)",
        )
        .range(0.0, 1e12),
        P::new(
            "lt_bw_max_rtts",
            Int,
            d.lt_bw_max_rtts.into(),
            "rounds to pace at the policed rate (tcp_bbr.c bbr_lt_bw_max_rtts: 48)",
        )
        .range(1.0, 127.0),
        P::new(
            "extra_acked_gain",
            Int,
            d.extra_acked_gain.into(),
            "ACK-aggregation cwnd allowance gain, 1/256; 0 = off (tcp_bbr.c bbr_extra_acked_gain: 256)",
        )
        .range(0.0, 1023.0),
        P::new(
            "extra_acked_win_rtts",
            Int,
            d.extra_acked_win_rtts.into(),
            "rounds per extra_acked filter slot (tcp_bbr.c bbr_extra_acked_win_rtts: 5)",
        )
        .range(1.0, 31.0),
        P::new(
            "extra_acked_max_us",
            Int,
            d.extra_acked_max_us.into(),
            "cap of the aggregation allowance, µs of bw (tcp_bbr.c bbr_extra_acked_max_us: 100000)",
        )
        .range(0.0, 1e9),
    ]
}

/// µs clock of a time (`tcp_mstamp`, `tcp_skb_timestamp_us`).
#[inline]
fn us(t: Time) -> u64 {
    t / NS_PER_US
}

/// `tcp_stamp_us_delta(t1, t0)`: max(t1 − t0, 0) in µs.
#[inline]
fn stamp_us_delta(t1_us: u64, t0_us: u64) -> u64 {
    t1_us.saturating_sub(t0_us)
}

/// `struct bbr` (tcp_bbr.c).
#[derive(Clone, Debug)]
pub struct Bbr {
    p: BbrParams,
    pub(crate) min_rtt_us: u32,
    pub(crate) min_rtt_stamp: u32,
    pub(crate) probe_rtt_done_stamp: u32,
    pub(crate) bw: Minmax,
    pub(crate) rtt_cnt: u32,
    pub(crate) next_rtt_delivered: u64,
    /// µs.
    pub(crate) cycle_mstamp: u64,
    pub(crate) mode: Mode,
    pub(crate) prev_ca_state: CaState,
    pub(crate) packet_conservation: bool,
    pub(crate) round_start: bool,
    pub(crate) idle_restart: bool,
    pub(crate) probe_rtt_round_done: bool,
    pub(crate) lt_is_sampling: bool,
    pub(crate) lt_rtt_cnt: u32,
    pub(crate) lt_use_bw: bool,
    pub(crate) lt_bw: u32,
    pub(crate) lt_last_delivered: u64,
    /// ms.
    pub(crate) lt_last_stamp: u32,
    pub(crate) lt_last_lost: u64,
    pub(crate) pacing_gain: u32,
    pub(crate) cwnd_gain: u32,
    pub(crate) full_bw_reached: bool,
    pub(crate) full_bw_cnt: u32,
    pub(crate) cycle_idx: u32,
    pub(crate) has_seen_rtt: bool,
    pub(crate) prior_cwnd: u32,
    pub(crate) full_bw: u32,
    /// µs.
    pub(crate) ack_epoch_mstamp: u64,
    pub(crate) extra_acked: [u32; 2],
    pub(crate) ack_epoch_acked: u32,
    pub(crate) extra_acked_win_rtts: u32,
    pub(crate) extra_acked_win_idx: usize,
}

impl Bbr {
    pub fn new(p: BbrParams) -> Self {
        Bbr {
            p,
            min_rtt_us: u32::MAX,
            min_rtt_stamp: 0,
            probe_rtt_done_stamp: 0,
            bw: Minmax::default(),
            rtt_cnt: 0,
            next_rtt_delivered: 0,
            cycle_mstamp: 0,
            mode: Mode::Startup,
            prev_ca_state: CaState::Open,
            packet_conservation: false,
            round_start: false,
            idle_restart: false,
            probe_rtt_round_done: false,
            lt_is_sampling: false,
            lt_rtt_cnt: 0,
            lt_use_bw: false,
            lt_bw: 0,
            lt_last_delivered: 0,
            lt_last_stamp: 0,
            lt_last_lost: 0,
            pacing_gain: HIGH_GAIN,
            cwnd_gain: HIGH_GAIN,
            full_bw_reached: false,
            full_bw_cnt: 0,
            cycle_idx: 0,
            has_seen_rtt: false,
            prior_cwnd: 0,
            full_bw: 0,
            ack_epoch_mstamp: 0,
            extra_acked: [0; 2],
            ack_epoch_acked: 0,
            extra_acked_win_rtts: 0,
            extra_acked_win_idx: 0,
        }
    }

    /// `bbr_max_bw`: the windowed max bw, packets/µs << 24.
    #[inline]
    pub fn max_bw(&self) -> u32 {
        self.bw.get()
    }

    /// `bbr_bw`: the estimate the flow paces and sizes cwnd from.
    #[inline]
    pub fn bw(&self) -> u32 {
        if self.lt_use_bw {
            self.lt_bw
        } else {
            self.max_bw()
        }
    }

    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// `bbr_extra_acked`.
    fn extra_acked(&self) -> u32 {
        self.extra_acked[0].max(self.extra_acked[1])
    }

    /// `bbr_rate_bytes_per_sec`: rate × mss × gain × (1 − margin), bytes/s (u128: the
    /// kernel's u64 is exact up to 2.9 Tbit/s, beyond which this does not wrap).
    fn rate_bytes_per_sec(&self, tp: &CcSock, rate: u64, gain: u32) -> u64 {
        common::rate_bytes_per_sec(tp.mss, rate, gain, self.p.pacing_margin_percent as u64)
    }

    /// `bbr_bw_to_pacing_rate` (no `sk_max_pacing_rate` is set).
    fn bw_to_pacing_rate(&self, tp: &CcSock, bw: u32, gain: u32) -> u64 {
        self.rate_bytes_per_sec(tp, bw as u64, gain)
    }

    /// `bbr_init_pacing_rate_from_rtt`: high_gain × cwnd / srtt (1 ms if none).
    fn init_pacing_rate_from_rtt(&mut self, tp: &mut CcSock) {
        let rtt_us = if tp.srtt_us > 0 {
            self.has_seen_rtt = true;
            tp.srtt_us.max(1)
        } else {
            USEC_PER_MSEC
        };
        let bw = tp.cwnd as u64 * BW_UNIT / rtt_us;
        tp.pacing_rate = self.bw_to_pacing_rate(tp, bw.min(u32::MAX as u64) as u32, self.p.high_gain);
    }

    /// `bbr_set_pacing_rate`: never lower the rate before the pipe is full.
    fn set_pacing_rate(&mut self, tp: &mut CcSock, bw: u32, gain: u32) {
        let rate = self.bw_to_pacing_rate(tp, bw, gain);
        if !self.has_seen_rtt && tp.srtt_us > 0 {
            self.init_pacing_rate_from_rtt(tp);
        }
        common::raise_pacing_rate(tp, rate, self.full_bw_reached);
    }

    /// `bbr_min_tso_segs`.
    pub fn min_tso_segs_of(&self, tp: &CcSock) -> u32 {
        if tp.pacing_rate < (self.p.min_tso_rate >> 3) {
            1
        } else {
            2
        }
    }

    /// `bbr_tso_segs_goal`: ~1 ms of data at the pacing rate (the generic GSO size,
    /// not the device's), at least `bbr_min_tso_segs`, at most 127.
    pub fn tso_segs_goal(&self, tp: &CcSock) -> u32 {
        let bytes = (tp.pacing_rate >> SK_PACING_SHIFT).min(GSO_GOAL_MAX_BYTES);
        let segs = ((bytes / tp.mss.max(1) as u64) as u32).max(self.min_tso_segs_of(tp));
        segs.min(0x7f)
    }

    /// `bbr_save_cwnd`.
    fn save_cwnd(&mut self, tp: &CcSock) {
        if self.prev_ca_state < CaState::Recovery && self.mode != Mode::ProbeRtt {
            self.prior_cwnd = tp.cwnd;
        } else {
            self.prior_cwnd = self.prior_cwnd.max(tp.cwnd);
        }
    }

    /// `bbr_bdp`: ceil(bw × min_rtt × gain), packets; TCP_INIT_CWND without an RTT.
    pub fn bdp(&self, bw: u32, gain: u32) -> u32 {
        if self.min_rtt_us == u32::MAX {
            return TCP_INIT_CWND;
        }
        common::bdp(bw, gain, self.min_rtt_us)
    }

    /// `bbr_quantization_budget`: + 3 TSO skbs, rounded up to even, + 2 in the 5/4 phase.
    fn quantization_budget(&self, tp: &CcSock, cwnd: u32) -> u32 {
        let mut cwnd = cwnd + 3 * self.tso_segs_goal(tp);
        cwnd = (cwnd + 1) & !1u32;
        if self.mode == Mode::ProbeBw && self.cycle_idx == 0 {
            cwnd += 2;
        }
        cwnd
    }

    /// `bbr_inflight`.
    pub fn inflight(&self, tp: &CcSock, bw: u32, gain: u32) -> u32 {
        let i = self.bdp(bw, gain);
        self.quantization_budget(tp, i)
    }

    /// `bbr_packets_in_net_at_edt`: in-flight minus what the bottleneck drains
    /// before the next departure time (`tcp_wstamp_ns`).
    fn packets_in_net_at_edt(&self, tp: &CcSock, inflight_now: u32) -> u32 {
        let probing = if self.pacing_gain > BBR_UNIT { self.tso_segs_goal(tp) } else { 0 };
        common::packets_in_net_at_edt(tp, self.bw(), inflight_now, probing)
    }

    /// `bbr_ack_aggregation_cwnd`.
    fn ack_aggregation_cwnd(&self) -> u32 {
        if self.p.extra_acked_gain == 0 || !self.full_bw_reached {
            return 0;
        }
        common::ack_aggregation_cwnd(self.bw(), self.extra_acked(), self.p.extra_acked_gain, self.p.extra_acked_max_us)
    }

    /// `bbr_set_cwnd_to_recover_or_restore`: deduct losses; packet conservation in the
    /// first round of Recovery; restore the saved cwnd on leaving recovery.
    fn set_cwnd_to_recover_or_restore(&mut self, tp: &CcSock, rs: &RateSample, acked: u32) -> (bool, u32) {
        let prev_state = self.prev_ca_state;
        let state = tp.ca_state;
        let mut cwnd = tp.cwnd;
        if rs.losses > 0 {
            cwnd = (cwnd as i64 - rs.losses as i64).max(1) as u32;
        }
        if state == CaState::Recovery && prev_state != CaState::Recovery {
            self.packet_conservation = true;
            self.next_rtt_delivered = tp.delivered; // start round now
            cwnd = tp.in_flight() + acked;
        } else if prev_state >= CaState::Recovery && state < CaState::Recovery {
            cwnd = cwnd.max(self.prior_cwnd);
            self.packet_conservation = false;
        }
        self.prev_ca_state = state;
        if self.packet_conservation {
            return (true, cwnd.max(tp.in_flight() + acked));
        }
        (false, cwnd)
    }

    /// `bbr_set_cwnd`: slow-start toward the target, or snap down to it.
    fn set_cwnd(&mut self, tp: &mut CcSock, rs: &RateSample, acked: u32, bw: u32, gain: u32) {
        let mut cwnd = tp.cwnd;
        if acked > 0 {
            let (conserving, c) = self.set_cwnd_to_recover_or_restore(tp, rs, acked);
            cwnd = c;
            if !conserving {
                let mut target = self.bdp(bw, gain);
                target += self.ack_aggregation_cwnd();
                target = self.quantization_budget(tp, target);
                if self.full_bw_reached {
                    cwnd = (cwnd + acked).min(target);
                } else if cwnd < target || tp.delivered < TCP_INIT_CWND as u64 {
                    cwnd += acked;
                }
                cwnd = cwnd.max(self.p.cwnd_min_target);
            }
        }
        tp.cwnd = cwnd.min(tp.cwnd_clamp);
        if self.mode == Mode::ProbeRtt {
            tp.cwnd = tp.cwnd.min(self.p.cwnd_min_target);
        }
    }

    /// `bbr_is_next_cycle_phase`.
    fn is_next_cycle_phase(&self, tp: &CcSock, rs: &RateSample) -> bool {
        let is_full_length = stamp_us_delta(us(tp.delivered_mstamp), self.cycle_mstamp) > self.min_rtt_us as u64;
        if self.pacing_gain == BBR_UNIT {
            return is_full_length;
        }
        let inflight = self.packets_in_net_at_edt(tp, rs.prior_in_flight);
        let bw = self.max_bw();
        if self.pacing_gain > BBR_UNIT {
            return is_full_length && (rs.losses > 0 || inflight >= self.inflight(tp, bw, self.pacing_gain));
        }
        is_full_length || inflight <= self.inflight(tp, bw, BBR_UNIT)
    }

    /// `bbr_advance_cycle_phase`.
    fn advance_cycle_phase(&mut self, tp: &CcSock) {
        self.cycle_idx = (self.cycle_idx + 1) & (CYCLE_LEN - 1);
        self.cycle_mstamp = us(tp.delivered_mstamp);
    }

    /// `bbr_update_cycle_phase`.
    fn update_cycle_phase(&mut self, tp: &CcSock, rs: &RateSample) {
        if self.mode == Mode::ProbeBw && self.is_next_cycle_phase(tp, rs) {
            self.advance_cycle_phase(tp);
        }
    }

    /// `bbr_reset_probe_bw_mode`: a random phase other than the 3/4 one
    /// (`CYCLE_LEN − 1 − prandom_u32_max(bbr_cycle_rand)`, then one step).
    fn reset_probe_bw_mode(&mut self, tp: &mut CcSock) {
        self.mode = Mode::ProbeBw;
        // prandom_u32_max(n) = (u64)get_random_u32() * n >> 32.
        let r = ((tp.rng.next_u32() as u64 * self.p.cycle_rand as u64) >> 32) as u32;
        self.cycle_idx = CYCLE_LEN - 1 - r;
        self.advance_cycle_phase(tp);
    }

    /// `bbr_reset_mode`.
    fn reset_mode(&mut self, tp: &mut CcSock) {
        if !self.full_bw_reached {
            self.mode = Mode::Startup;
        } else {
            self.reset_probe_bw_mode(tp);
        }
    }

    /// `bbr_reset_lt_bw_sampling_interval`.
    fn reset_lt_bw_sampling_interval(&mut self, tp: &CcSock) {
        self.lt_last_stamp = (us(tp.delivered_mstamp) / USEC_PER_MSEC) as u32;
        self.lt_last_delivered = tp.delivered;
        self.lt_last_lost = tp.lost;
        self.lt_rtt_cnt = 0;
    }

    /// `bbr_reset_lt_bw_sampling`.
    fn reset_lt_bw_sampling(&mut self, tp: &CcSock) {
        self.lt_bw = 0;
        self.lt_use_bw = false;
        self.lt_is_sampling = false;
        self.reset_lt_bw_sampling_interval(tp);
    }

    /// `bbr_lt_bw_interval_done`: two consistent lossy intervals ⇒ policed.
    fn lt_bw_interval_done(&mut self, tp: &CcSock, bw: u32) {
        if self.lt_bw != 0 {
            let diff = bw.abs_diff(self.lt_bw);
            if (diff as u64 * BBR_UNIT as u64 <= self.p.lt_bw_ratio as u64 * self.lt_bw as u64)
                || (self.rate_bytes_per_sec(tp, diff as u64, BBR_UNIT) <= self.p.lt_bw_diff)
            {
                self.lt_bw = ((bw as u64 + self.lt_bw as u64) >> 1) as u32;
                self.lt_use_bw = true;
                self.pacing_gain = BBR_UNIT;
                self.lt_rtt_cnt = 0;
                return;
            }
        }
        self.lt_bw = bw;
        self.reset_lt_bw_sampling_interval(tp);
    }

    /// `bbr_lt_bw_sampling`: the token-bucket policer detector.
    fn lt_bw_sampling(&mut self, tp: &mut CcSock, rs: &RateSample) {
        if self.lt_use_bw {
            if self.mode == Mode::ProbeBw && self.round_start {
                // lt_rtt_cnt is a 7-bit field in struct bbr.
                self.lt_rtt_cnt = (self.lt_rtt_cnt + 1) & 0x7f;
                if self.lt_rtt_cnt >= self.p.lt_bw_max_rtts {
                    self.reset_lt_bw_sampling(tp);
                    self.reset_probe_bw_mode(tp);
                }
            }
            return;
        }
        if !self.lt_is_sampling {
            if rs.losses == 0 {
                return;
            }
            self.reset_lt_bw_sampling_interval(tp);
            self.lt_is_sampling = true;
        }
        if rs.is_app_limited {
            self.reset_lt_bw_sampling(tp);
            return;
        }
        if self.round_start {
            self.lt_rtt_cnt = (self.lt_rtt_cnt + 1) & 0x7f;
        }
        if self.lt_rtt_cnt < self.p.lt_intvl_min_rtts {
            return;
        }
        if self.lt_rtt_cnt > 4 * self.p.lt_intvl_min_rtts {
            self.reset_lt_bw_sampling(tp);
            return;
        }
        if rs.losses == 0 {
            return;
        }
        // tp->lost, tp->delivered and the lt_last_* copies are u32 in the kernel.
        let lost = (tp.lost as u32).wrapping_sub(self.lt_last_lost as u32);
        let delivered = (tp.delivered as u32).wrapping_sub(self.lt_last_delivered as u32);
        if delivered == 0 || ((lost as u64) << BBR_SCALE) < self.p.lt_loss_thresh as u64 * delivered as u64 {
            return;
        }
        let t = ((us(tp.delivered_mstamp) / USEC_PER_MSEC) as u32).wrapping_sub(self.lt_last_stamp);
        if (t as i32) < 1 {
            return;
        }
        if t >= u32::MAX / USEC_PER_MSEC as u32 {
            self.reset_lt_bw_sampling(tp);
            return;
        }
        let t = t as u64 * USEC_PER_MSEC;
        let bw = delivered as u64 * BW_UNIT / t;
        self.lt_bw_interval_done(tp, bw as u32);
    }

    /// `bbr_update_bw`: rounds, the policer detector, the max-bw filter.
    fn update_bw(&mut self, tp: &mut CcSock, rs: &RateSample) {
        self.round_start = false;
        if rs.delivered < 0 || rs.interval_us <= 0 {
            return;
        }
        // !before(prior_delivered, next_rtt_delivered) on the kernel's u32 counters.
        if !after(self.next_rtt_delivered as u32, rs.prior_delivered as u32) {
            self.next_rtt_delivered = tp.delivered;
            self.rtt_cnt = self.rtt_cnt.wrapping_add(1);
            self.round_start = true;
            self.packet_conservation = false;
        }
        self.lt_bw_sampling(tp, rs);
        let bw = (rs.delivered as u64 * BW_UNIT / rs.interval_us as u64) as u32;
        if !rs.is_app_limited || bw >= self.max_bw() {
            self.bw.running_max(self.p.bw_rtts, self.rtt_cnt, bw);
        }
    }

    /// `bbr_update_ack_aggregation`: the excess of ACKed data over bw × epoch.
    fn update_ack_aggregation(&mut self, tp: &CcSock, rs: &RateSample) {
        if self.p.extra_acked_gain == 0 || rs.acked_sacked == 0 || rs.delivered < 0 || rs.interval_us <= 0 {
            return;
        }
        if self.round_start {
            self.extra_acked_win_rtts = (self.extra_acked_win_rtts + 1).min(0x1f);
            if self.extra_acked_win_rtts >= self.p.extra_acked_win_rtts {
                self.extra_acked_win_rtts = 0;
                self.extra_acked_win_idx ^= 1;
                self.extra_acked[self.extra_acked_win_idx] = 0;
            }
        }
        let epoch_us = stamp_us_delta(us(tp.delivered_mstamp), self.ack_epoch_mstamp);
        let bw = self.bw();
        let (reset, extra) =
            common::ack_epoch_excess(&mut self.ack_epoch_acked, bw, epoch_us, rs.acked_sacked, 1 << 20, tp.cwnd);
        if reset {
            self.ack_epoch_mstamp = us(tp.delivered_mstamp);
        }
        // The kernel stores extra_acked[] as u16.
        let extra = extra & 0xffff;
        if extra > self.extra_acked[self.extra_acked_win_idx] {
            self.extra_acked[self.extra_acked_win_idx] = extra;
        }
    }

    /// `bbr_check_full_bw_reached`: 3 non-app-limited rounds of < 25 % growth.
    fn check_full_bw_reached(&mut self, rs: &RateSample) {
        if self.full_bw_reached || !self.round_start || rs.is_app_limited {
            return;
        }
        let bw_thresh = ((self.full_bw as u64 * self.p.full_bw_thresh as u64) >> BBR_SCALE) as u32;
        if self.max_bw() >= bw_thresh {
            self.full_bw = self.max_bw();
            self.full_bw_cnt = 0;
            return;
        }
        // full_bw_cnt is a 2-bit field.
        self.full_bw_cnt = (self.full_bw_cnt + 1) & 3;
        self.full_bw_reached = self.full_bw_cnt >= self.p.full_bw_cnt;
    }

    /// `bbr_check_drain`.
    fn check_drain(&mut self, tp: &mut CcSock) {
        if self.mode == Mode::Startup && self.full_bw_reached {
            self.mode = Mode::Drain;
            tp.ssthresh = self.inflight(tp, self.max_bw(), BBR_UNIT);
        }
        if self.mode == Mode::Drain
            && self.packets_in_net_at_edt(tp, tp.in_flight()) <= self.inflight(tp, self.max_bw(), BBR_UNIT)
        {
            self.reset_probe_bw_mode(tp);
        }
    }

    /// `bbr_check_probe_rtt_done`.
    fn check_probe_rtt_done(&mut self, tp: &mut CcSock) {
        if !(self.probe_rtt_done_stamp != 0 && after(tp.jiffies() as u32, self.probe_rtt_done_stamp)) {
            return;
        }
        self.min_rtt_stamp = tp.jiffies() as u32;
        tp.cwnd = tp.cwnd.max(self.prior_cwnd);
        self.reset_mode(tp);
    }

    /// `bbr_update_min_rtt`: the 10 s min-RTT filter and PROBE_RTT.
    fn update_min_rtt(&mut self, tp: &mut CcSock, rs: &RateSample) {
        let now_j = tp.jiffies() as u32;
        let win = self.p.min_rtt_win_sec.wrapping_mul(crate::time::HZ as u32);
        let filter_expired = after(now_j, self.min_rtt_stamp.wrapping_add(win));
        // Only a sample *below* min_rtt postpones PROBE_RTT: Linux commit 1b9e2a8c99a5
        // ("tcp: only postpone PROBE_RTT if RTT is < current min_rtt estimate", v5.10,
        // in 5.13 as the PAM 2025 hosts ran it and in mainline since); before it, `<=`
        // let samples equal to min_rtt refresh min_rtt_stamp and push PROBE_RTT off.
        if rs.rtt_us >= 0 && (rs.rtt_us < self.min_rtt_us as i64 || (filter_expired && !rs.is_ack_delayed)) {
            self.min_rtt_us = rs.rtt_us.min(u32::MAX as i64) as u32;
            self.min_rtt_stamp = now_j;
        }
        if self.p.probe_rtt_mode_ms > 0 && filter_expired && !self.idle_restart && self.mode != Mode::ProbeRtt {
            self.mode = Mode::ProbeRtt;
            self.save_cwnd(tp);
            self.probe_rtt_done_stamp = 0;
        }
        if self.mode == Mode::ProbeRtt {
            let armed = self.probe_rtt_done_stamp != 0;
            let (round_done, next) = (&mut self.probe_rtt_round_done, &mut self.next_rtt_delivered);
            match common::probe_rtt_step(tp, armed, self.round_start, round_done, next, self.p.cwnd_min_target) {
                ProbeRttStep::Arm => {
                    // msecs_to_jiffies at HZ = 1000.
                    let ms = self.p.probe_rtt_mode_ms as u64 * crate::time::HZ / 1000;
                    self.probe_rtt_done_stamp = now_j.wrapping_add(ms as u32);
                }
                ProbeRttStep::Check => self.check_probe_rtt_done(tp),
                ProbeRttStep::Wait => {}
            }
        }
        if rs.delivered > 0 {
            self.idle_restart = false;
        }
    }

    /// `bbr_update_gains`.
    fn update_gains(&mut self) {
        let p = &self.p;
        (self.pacing_gain, self.cwnd_gain) = match self.mode {
            Mode::Startup => (p.high_gain, p.high_gain),
            Mode::Drain => (p.drain_gain, p.high_gain),
            Mode::ProbeBw => {
                let pacing = if self.lt_use_bw { BBR_UNIT } else { PACING_GAIN[self.cycle_idx as usize] };
                (pacing, p.cwnd_gain)
            }
            Mode::ProbeRtt => (BBR_UNIT, BBR_UNIT),
        };
    }

    /// `bbr_update_model`.
    fn update_model(&mut self, tp: &mut CcSock, rs: &RateSample) {
        self.update_bw(tp, rs);
        self.update_ack_aggregation(tp, rs);
        self.update_cycle_phase(tp, rs);
        self.check_full_bw_reached(rs);
        self.check_drain(tp);
        self.update_min_rtt(tp, rs);
        self.update_gains();
    }
}

impl CongestionControl for Bbr {
    /// No `pkts_acked` or `in_ack_event` hook (the sender skips both calls).
    fn has_pkts_acked(&self) -> bool {
        false
    }
    fn has_in_ack_event(&self) -> bool {
        false
    }
    fn name(&self) -> &'static str {
        "bbr"
    }

    fn flags(&self) -> CcFlags {
        DESCRIPTOR.flags
    }

    /// `bbr_init`.
    fn init(&mut self, tp: &mut CcSock) {
        self.prior_cwnd = 0;
        tp.ssthresh = super::TCP_INFINITE_SSTHRESH;
        self.rtt_cnt = 0;
        self.next_rtt_delivered = 0;
        self.prev_ca_state = CaState::Open;
        self.packet_conservation = false;
        self.probe_rtt_done_stamp = 0;
        self.probe_rtt_round_done = false;
        self.min_rtt_us = tp.min_rtt_us;
        self.min_rtt_stamp = tp.jiffies() as u32;
        self.bw.reset(self.rtt_cnt, 0);
        self.has_seen_rtt = false;
        self.init_pacing_rate_from_rtt(tp);
        self.round_start = false;
        self.idle_restart = false;
        self.full_bw_reached = false;
        self.full_bw = 0;
        self.full_bw_cnt = 0;
        self.cycle_mstamp = 0;
        self.cycle_idx = 0;
        self.reset_lt_bw_sampling(tp);
        self.mode = Mode::Startup;
        self.ack_epoch_mstamp = us(tp.now);
        self.ack_epoch_acked = 0;
        self.extra_acked_win_rtts = 0;
        self.extra_acked_win_idx = 0;
        self.extra_acked = [0; 2];
    }

    /// `bbr_ssthresh`: save cwnd for after recovery; ssthresh is left as it is.
    fn ssthresh(&mut self, tp: &CcSock) -> u32 {
        self.save_cwnd(tp);
        tp.ssthresh
    }

    fn has_cong_control(&self) -> bool {
        true
    }

    /// `bbr_main`.
    fn cong_control(&mut self, tp: &mut CcSock, rs: &RateSample) {
        self.update_model(tp, rs);
        let bw = self.bw();
        let pacing_gain = self.pacing_gain;
        self.set_pacing_rate(tp, bw, pacing_gain);
        let cwnd_gain = self.cwnd_gain;
        self.set_cwnd(tp, rs, rs.acked_sacked, bw, cwnd_gain);
    }

    /// `bbr_set_state`: an RTO ends a round and feeds the policer detector a loss.
    fn set_state(&mut self, tp: &mut CcSock, new_state: CaState) {
        if new_state == CaState::Loss {
            let rs = RateSample { losses: 1, ..RateSample::default() };
            self.prev_ca_state = CaState::Loss;
            self.full_bw = 0;
            self.round_start = true;
            self.lt_bw_sampling(tp, &rs);
        }
    }

    /// `bbr_cwnd_event`: restarting from idle while app-limited.
    fn cwnd_event(&mut self, tp: &mut CcSock, ev: CaEvent) {
        if ev == CaEvent::TxStart && tp.app_limited != 0 {
            self.idle_restart = true;
            self.ack_epoch_mstamp = us(tp.now);
            self.ack_epoch_acked = 0;
            if self.mode == Mode::ProbeBw {
                let bw = self.bw();
                self.set_pacing_rate(tp, bw, BBR_UNIT);
            } else if self.mode == Mode::ProbeRtt {
                self.check_probe_rtt_done(tp);
            }
        }
    }

    /// `bbr_undo_cwnd`: reset the full-pipe and policer detectors, keep cwnd.
    fn undo_cwnd(&mut self, tp: &CcSock) -> u32 {
        self.full_bw = 0;
        self.full_bw_cnt = 0;
        self.reset_lt_bw_sampling(tp);
        tp.cwnd
    }

    /// `bbr_min_tso_segs` (the `min_tso_segs` op; the skb size is the stack's
    /// `tcp_tso_autosize` with this minimum).
    fn min_tso_segs(&self, tp: &CcSock) -> Option<u32> {
        Some(self.min_tso_segs_of(tp))
    }

    /// What `bbr_get_info` reports (`ss -tin`: bw, mrtt, pacing_gain).
    fn cc_state(&self, tp: &CcSock) -> CcState {
        let bw = (self.bw() as u128 * tp.mss as u128 * USEC_PER_SEC as u128) >> BW_SCALE;
        CcState {
            bw_bytes_per_s: Some(bw.min(u64::MAX as u128) as u64),
            min_rtt_us: (self.min_rtt_us != u32::MAX).then_some(self.min_rtt_us),
            mode: Some(self.mode.name()),
            pacing_gain: Some(self.pacing_gain as f64 / BBR_UNIT as f64),
            inflight_hi: None,
            inflight_lo: None,
        }
    }
}
