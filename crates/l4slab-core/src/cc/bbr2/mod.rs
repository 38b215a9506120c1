//! BBRv2 (`bbr2`, google/bbr v2alpha `net/ipv4/tcp_bbr2.c`) and L4S-BBRv2
//! (`bbr2-l4s`, L4STeam/linux `net/ipv4/tcp_bbr2.c`, commit 009adfe4).
//!
//! One implementation, written function by function after the kernel's (the
//! comments name each kernel function), parameterised by a [`Flavour`]. The two
//! trees share almost all of their code; where they differ the code branches on
//! the flavour, and every such branch is listed here:
//!
//! | # | v2alpha (`Flavour::V2Alpha`) | L4STeam (`Flavour::L4s`) |
//! |---|---|---|
//! | 1 | PROBE_BW gains from the 8-entry `pacing_gain` (DOWN 0.75) | 4-entry `bbr2_pacing_gain` (DOWN 232/256 = 0.906) |
//! | 2 | cwnd gain 2.0 in every PROBE_BW phase | UP adds `bw_probe_cwnd_gain`/4 (2.25) |
//! | 3 | `max_bw[2]` plus a scalar `bw_hi` bound (ECN-cut, raised by samples) | only the two-slot `bw_hi[2]` filter (the scalar stays ∞) |
//! | 4 | ECN cuts `inflight_lo` and (`ecn_bw_lo`) `bw_lo` | ECN cuts `inflight_lo` only |
//! | 5 | a too-high ECN probe also cuts `bw_hi` (`ecn_bw_hi`) | no bw cut |
//! | 6 | full-pipe detector of v1 on `max_bw`, STARTUP only (`bbr_check_full_bw_reached`) | on the sample bw, also in PROBE_UP (`bbr2_check_full_bw_reached`, `full_bw_now`) |
//! | 7 | PROBE_UP ends at 1.25·BDP in flight after one min_rtt | the same unless `bw_probe_exit = 1` (bw plateau) |
//! | 8 | RTO: `inflight_lo = prior_cwnd` | `inflight_lo = max(cwnd, prior_cwnd)` |
//! | 9 | `skb_marked_lost` counts CE in its sample | loss only |
//! | 10 | ECN off, `ecn_max_rtt_us` 5000 | ECN on, any RTT (a plain global, 0) |
//! | 11 | ECT(0) whenever ECN was negotiated | ECT(1) iff AccECN was negotiated (`bbr2_init`); ECT(0) with RFC 3168 feedback; with no ECN `bbr2_release` leaves the socket not-ECT and BBRv2 runs on (no fallback CC) |
//!
//! Both register `TCP_CONG_WANTS_CE_EVENTS`: a receiving socket running either
//! with `ecn_enable` and `precise_ece_ack` echoes CE DCTCP-style
//! (`dctcp_ece_ack_update`, net/ipv4/tcp_dctcp.h) — the PAM 2025 study's
//! "two-sided" BBRv2 — and with `fast_ack_mode = 2` also enters quick-ACK mode on
//! CE (`bbr_cwnd_event`).
//!
//! Units are the kernel's: bandwidth in packets/µs << 24 (`BW_SCALE`), gains in
//! 1/256 (`BBR_UNIT`), volumes in packets, PROBE_RTT/min_rtt stamps in jiffies.
//!
//! What v2 writes as BBRv3 (`cc/bbr3/`) does (the shared fields of `struct bbr`, the
//! PROBE_BW cycle, PROBE_RTT, the lower-bound resets) is in `cc/bbr_model.rs`; this
//! file keeps v2's own functions, those `impl BbrModel` names included.

mod params;
#[cfg(test)]
mod tests;

pub use params::{l4s_specs, v2alpha_specs, Bbr2Params, BBR_UNIT};

use super::descriptor::{parse_params, CcDescriptor, ReceiverDefaults};
use super::*;
use crate::schema::ParamSpec;

/// `BW_SCALE`: bandwidth in packets per µs << 24; gains « `BBR_SCALE` (`cc/bbr_common.rs`).
use super::bbr_common::{self as common, after, BBR_SCALE, GSO_MAX_SIZE};
pub use super::bbr_common::{BW_SCALE, BW_UNIT};
use super::bbr_model::{self as model, BbrModel, BbrState, Mode, Phase, UNSET as INF};
/// `bbr_pacing_margin_percent`: pace 1 % below the estimate.
const PACING_MARGIN_PERCENT: u64 = 1;

/// Which tree's BBRv2.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flavour {
    /// google/bbr v2alpha (`bbr2`).
    V2Alpha,
    /// L4STeam/linux (`bbr2-l4s`).
    L4s,
}

/// The fields of a `rate_sample` the "too high" test reads; built from the ACK's
/// sample or, in `skb_marked_lost`, from a lost packet's transmit snapshot.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct LossSample {
    pub tx_in_flight: u32,
    pub lost: i64,
    pub delivered: i64,
    pub delivered_ce: i64,
    pub is_app_limited: bool,
}

impl LossSample {
    fn of(rs: &RateSample) -> Self {
        LossSample {
            tx_in_flight: rs.tx_in_flight,
            lost: rs.lost,
            delivered: rs.delivered,
            delivered_ce: rs.delivered_ce,
            is_app_limited: rs.is_app_limited,
        }
    }
}

/// `msecs_to_jiffies`.
#[inline]
fn ms_to_jiffies(ms: u32) -> u32 {
    (ms as u64 * crate::time::HZ / 1000) as u32
}

/// `prandom_u32_max(n)`: uniform in [0, n).
#[inline]
fn prandom_u32_max(tp: &mut CcSock, n: u32) -> u32 {
    ((tp.rng.next_u32() as u64 * n as u64) >> 32) as u32
}

/// The BBRv2 congestion control block (`struct bbr`).
#[derive(Clone, Debug)]
pub struct Bbr2 {
    flavour: Flavour,
    p: Bbr2Params,
    /// The fields v3 shares (`cc/bbr_model.rs`).
    s: BbrState,
    /// PROBE_BW pacing gains by [`Phase`] (difference 1).
    phase_gain: [u32; 4],
    /// jiffies (u32, as `tcp_bbr2.c` keeps them).
    min_rtt_stamp: u32,
    probe_rtt_done_stamp: u32,
    probe_rtt_min_stamp: u32,
    prior_rcv_nxt: u64,
    ce_state: bool,
    got_ok_bw_probe_sample: bool,
    /// ns.
    ack_epoch_mstamp: Time,
    extra_acked: [u32; 2],
    pub(crate) bw_hi: u32,
    /// The max-bandwidth filter.
    pub(crate) max_bw: [u32; 2],
    /// `TCP_ECN_ECT_1` on this socket (L4S flavour with AccECN; difference 11).
    ect1: bool,
}

model::deref_to_state!(Bbr2);

impl Bbr2 {
    pub fn new(flavour: Flavour, p: Bbr2Params) -> Self {
        let g = |v: &[u32], i: usize| v.get(i).copied().unwrap_or(BBR_UNIT).min(0x3ff);
        // Difference 1: v2alpha's PROBE_BW reads entries 0..4 of the v1 table,
        // L4STeam's its own 4-entry `bbr2_pacing_gain`.
        let table = match flavour {
            Flavour::V2Alpha => &p.pacing_gain,
            Flavour::L4s => &p.bbr2_pacing_gain,
        };
        let phase_gain = [g(table, 0), g(table, 1), g(table, 2), g(table, 3)];
        Bbr2 {
            flavour,
            s: BbrState::new(p.high_gain, p.startup_cwnd_gain, p.ecn_alpha_init.min(BBR_UNIT)),
            phase_gain,
            min_rtt_stamp: 0,
            probe_rtt_done_stamp: 0,
            probe_rtt_min_stamp: 0,
            prior_rcv_nxt: 0,
            ce_state: false,
            got_ok_bw_probe_sample: false,
            ack_epoch_mstamp: 0,
            extra_acked: [0; 2],
            bw_hi: INF,
            max_bw: [0; 2],
            ect1: false,
            p,
        }
    }

    pub fn flavour(&self) -> Flavour {
        self.flavour
    }

    pub fn params(&self) -> &Bbr2Params {
        &self.p
    }

    // ---------------------------------------------------------------- model reads

    /// `bbr_extra_acked`.
    #[inline]
    fn extra_acked(&self) -> u32 {
        self.extra_acked[0].max(self.extra_acked[1])
    }

    /// `bbr_rate_bytes_per_sec`.
    fn rate_bytes_per_sec(tp: &CcSock, rate: u64, gain: u32, margin: u64) -> u64 {
        common::rate_bytes_per_sec(tp.mss, rate, gain, margin).max(1)
    }

    /// `bbr_bw_to_pacing_rate` (no `sk_max_pacing_rate` cap).
    fn bw_to_pacing_rate(tp: &CcSock, bw: u32, gain: u32) -> u64 {
        Self::rate_bytes_per_sec(tp, bw as u64, gain, PACING_MARGIN_PERCENT)
    }

    /// `bbr_init_pacing_rate_from_rtt`: high_gain · cwnd / srtt (1 ms if none).
    fn init_pacing_rate_from_rtt(&mut self, tp: &mut CcSock) {
        let rtt_us = if tp.srtt_us != 0 {
            self.has_seen_rtt = true;
            tp.srtt_us.max(1)
        } else {
            1000
        };
        let bw = (tp.cwnd as u64 * BW_UNIT / rtt_us) as u32;
        tp.pacing_rate = Self::bw_to_pacing_rate(tp, bw, self.p.high_gain.min(0x7ff));
    }

    /// `bbr_set_pacing_rate`: never lower the rate before the pipe is full.
    fn set_pacing_rate(&mut self, tp: &mut CcSock, bw: u32, gain: u32) {
        let rate = Self::bw_to_pacing_rate(tp, bw, gain);
        if !self.has_seen_rtt && tp.srtt_us != 0 {
            self.init_pacing_rate_from_rtt(tp);
        }
        common::raise_pacing_rate(tp, rate, self.full_bw_reached);
    }

    /// `bbr_min_tso_segs`.
    fn min_tso_segs(&self, tp: &CcSock) -> u32 {
        if tp.pacing_rate < (self.p.min_tso_rate >> 3) as u64 {
            1
        } else {
            2
        }
    }

    /// `bbr_tso_segs_generic`: ≈1 ms at the pacing rate plus the min_rtt allowance.
    fn tso_segs_generic(&self, tp: &CcSock, mss: u32, gso_max_size: u64) -> u32 {
        // The parameter is a 4-bit field (`bbr_tso_rtt_shift`, 0..=15).
        let shift = self.p.tso_rtt_shift.min(15);
        common::tso_segs_generic(tp, mss, self.min_rtt_us, shift, gso_max_size, self.min_tso_segs(tp))
    }

    /// `bbr_ack_aggregation_cwnd`.
    fn ack_aggregation_cwnd(&self) -> u32 {
        if self.p.extra_acked_gain != 0 && (self.full_bw_reached || self.p.extra_acked_in_startup != 0) {
            return common::ack_aggregation_cwnd(
                self.bw(),
                self.extra_acked(),
                self.p.extra_acked_gain,
                self.p.extra_acked_max_us,
            );
        }
        0
    }

    /// `bbr_set_cwnd`: grow toward the target (slow start below it), snap down to it.
    fn set_cwnd(&mut self, tp: &mut CcSock, acked: u32, bw: u32, gain: u32) {
        let mut cwnd = tp.cwnd;
        if acked != 0 {
            let mut target = self.bdp(bw, gain);
            target = target.saturating_add(self.ack_aggregation_cwnd());
            target = self.quantization_budget(tp, target);
            self.try_fast_path = false;
            if self.full_bw_reached {
                cwnd = cwnd.saturating_add(acked);
                if cwnd >= target {
                    cwnd = target;
                    self.try_fast_path = true;
                }
            } else if cwnd < target || cwnd < 2 * self.init_cwnd {
                cwnd = cwnd.saturating_add(acked);
            } else {
                self.try_fast_path = true;
            }
            if self.p.usage_based_cwnd {
                let max_probe = (2 * tp.max_packets_out).max(tp.cwnd);
                cwnd = cwnd.min(max_probe);
            }
            cwnd = cwnd.max(self.p.cwnd_min_target);
        }
        tp.cwnd = cwnd.min(tp.cwnd_clamp);
        if self.mode == Mode::ProbeRtt {
            tp.cwnd = tp.cwnd.min(self.probe_rtt_cwnd());
        }
    }

    /// `bbr_calculate_bw_sample`: delivered / interval, rounded up.
    fn calculate_bw_sample(rs: &RateSample) -> u32 {
        common::bw_sample_round_up(rs.delivered, rs.interval_us).unwrap_or(0)
    }

    /// `bbr_update_ack_aggregation`: the windowed max of data ACKed beyond bw · epoch.
    fn update_ack_aggregation(&mut self, tp: &CcSock, rs: &RateSample) {
        if self.p.extra_acked_gain == 0 || rs.acked_sacked == 0 || rs.delivered < 0 || rs.interval_us <= 0 {
            return;
        }
        if self.round_start {
            let mut thresh = self.p.extra_acked_win_rtts.min(0x1f);
            self.extra_acked_win_rtts = (self.extra_acked_win_rtts + 1).min(0x1f);
            if self.p.extra_acked_in_startup != 0 && !self.full_bw_reached {
                thresh = 1;
            }
            if self.extra_acked_win_rtts >= thresh {
                self.extra_acked_win_rtts = 0;
                self.extra_acked_win_idx ^= 1;
                self.extra_acked[self.extra_acked_win_idx] = 0;
            }
        }
        let epoch_us = tp.delivered_mstamp.saturating_sub(self.ack_epoch_mstamp) / 1000;
        let bw = self.bw();
        let reset_thresh = self.p.ack_epoch_acked_reset_thresh;
        let (reset, extra) =
            common::ack_epoch_excess(&mut self.ack_epoch_acked, bw, epoch_us, rs.acked_sacked, reset_thresh, tp.cwnd);
        if reset {
            self.ack_epoch_mstamp = tp.delivered_mstamp;
        }
        let slot = &mut self.extra_acked[self.extra_acked_win_idx];
        if extra > *slot {
            *slot = extra;
        }
    }

    /// `bbr_check_full_bw_reached` (v2alpha, difference 6): three rounds without
    /// 25 % growth of `max_bw` in STARTUP.
    fn check_full_bw_reached_v2alpha(&mut self, rs: &RateSample) {
        if self.full_bw_reached || !self.round_start || rs.is_app_limited {
            return;
        }
        let thresh = ((self.full_bw as u64 * self.p.full_bw_thresh.min(0x3ff) as u64) >> BBR_SCALE) as u32;
        if self.max_bw() >= thresh {
            self.full_bw = self.max_bw();
            self.full_bw_cnt = 0;
            return;
        }
        self.full_bw_cnt += 1;
        self.full_bw_reached = self.full_bw_cnt >= self.p.full_bw_cnt.min(7);
    }

    /// `bbr2_check_full_bw_reached` (L4STeam, difference 6): any sample 1.25× (UP:
    /// 1.125×) the reference restarts the count; rounds without count.
    fn check_full_bw_reached_l4s(&mut self, rs: &RateSample, sample_bw: u32) {
        if self.full_bw_now || rs.is_app_limited {
            return;
        }
        let (thresh, full_cnt) = if self.full_bw_reached {
            (self.p.full_bw_thresh_up.min(0x1ff), self.p.full_bw_cnt_up.min(3))
        } else {
            (self.p.full_bw_thresh.min(0x3ff), self.p.full_bw_cnt.min(7))
        };
        let bw_thresh = ((self.full_bw as u64 * thresh as u64) >> BBR_SCALE) as u32;
        if sample_bw >= bw_thresh {
            self.restart_full_bw(sample_bw);
            return;
        }
        if !self.round_start {
            return;
        }
        self.full_bw_cnt += 1;
        self.full_bw_now = self.full_bw_cnt >= full_cnt;
        self.full_bw_reached |= self.full_bw_now;
    }

    /// `bbr_check_drain`: enter DRAIN once full; true when in flight ≤ BDP.
    fn check_drain_done(&mut self, tp: &mut CcSock) -> bool {
        if self.mode == Mode::Startup && self.full_bw_reached {
            self.mode = Mode::Drain;
            tp.ssthresh = self.inflight(tp, self.max_bw(), BBR_UNIT);
            self.reset_congestion_signals();
        }
        self.mode == Mode::Drain
            && self.packets_in_net_at_edt(tp, tp.in_flight()) <= self.inflight(tp, self.max_bw(), BBR_UNIT)
    }

    /// `bbr_update_gains` (difference 2: L4STeam raises the cwnd gain in UP).
    fn update_gains(&mut self) {
        let p = &self.p;
        let (pacing, cwnd) = match self.mode {
            Mode::Startup => (p.high_gain.min(0x7ff), p.startup_cwnd_gain.min(0x7ff)),
            Mode::Drain => (p.drain_gain.min(0x3ff), p.startup_cwnd_gain.min(0x7ff)),
            Mode::ProbeBw => {
                let mut cwnd = p.cwnd_gain.min(0x7ff);
                if self.flavour == Flavour::L4s && self.cycle_idx == Phase::Up {
                    cwnd += p.bw_probe_cwnd_gain.min(3) * BBR_UNIT / 4;
                }
                (self.phase_gain[self.cycle_idx as usize], cwnd)
            }
            Mode::ProbeRtt => (BBR_UNIT, BBR_UNIT),
        };
        self.pacing_gain = pacing;
        self.cwnd_gain = cwnd;
    }

    // ------------------------------------------------------------ v2 functions

    /// `bbr2_check_ecn_too_high_in_startup`: `full_ecn_cnt` rounds of CE ≥ ecn_thresh.
    fn check_ecn_too_high_in_startup(&mut self, tp: &CcSock, ce_ratio: u64) {
        let full_ecn_cnt = self.p.full_ecn_cnt.min(3);
        let ecn_thresh = self.p.ecn_thresh.min(255);
        if self.full_bw_reached || !self.ecn_eligible || full_ecn_cnt == 0 || ecn_thresh == 0 {
            return;
        }
        if ce_ratio >= ecn_thresh as u64 {
            self.startup_ecn_rounds = (self.startup_ecn_rounds + 1) & 3; // a 2-bit field
        } else {
            self.startup_ecn_rounds = 0;
        }
        if self.startup_ecn_rounds >= full_ecn_cnt {
            self.handle_queue_too_high_in_startup(tp);
        }
    }

    /// `bbr2_update_ecn_alpha`: once per round, α ← (1−g)·α + g·CE/delivered.
    fn update_ecn_alpha(&mut self, tp: &CcSock) {
        if self.p.ecn_factor.min(255) == 0 {
            return;
        }
        let delivered = tp.delivered as i64 - self.alpha_last_delivered as i64;
        let delivered_ce = tp.delivered_ce as i64 - self.alpha_last_delivered_ce as i64;
        if delivered <= 0 || delivered_ce < 0 {
            return;
        }
        // See if we should use ECN sender logic for this connection (latched).
        let max_rtt = self.p.ecn_max_rtt_us.min(0x7ffff);
        if !self.ecn_eligible && self.p.ecn_enable && (self.min_rtt_us <= max_rtt || max_rtt == 0) {
            self.ecn_eligible = true;
        }
        let ce_ratio = ((delivered_ce as u64) << BBR_SCALE) / delivered as u64;
        let gain = self.p.ecn_alpha_gain.min(255) as u64;
        let mut alpha = ((BBR_UNIT as u64 - gain) * self.ecn_alpha as u64) >> BBR_SCALE;
        alpha += (gain * ce_ratio) >> BBR_SCALE;
        self.ecn_alpha = alpha.min(BBR_UNIT as u64) as u32;
        self.alpha_last_delivered = tp.delivered;
        self.alpha_last_delivered_ce = tp.delivered_ce;
        self.check_ecn_too_high_in_startup(tp, ce_ratio);
    }

    /// `bbr2_raise_inflight_hi_slope`: double the growth per round in UP.
    fn raise_inflight_hi_slope(&mut self, tp: &CcSock) {
        let growth_this_round = 1u32 << self.bw_probe_up_rounds.min(30);
        self.bw_probe_up_rounds = (self.bw_probe_up_rounds + 1).min(30);
        self.bw_probe_up_cnt = (tp.cwnd / growth_this_round).max(1);
    }

    /// `bbr2_probe_inflight_hi_upward`.
    fn probe_inflight_hi_upward(&mut self, tp: &CcSock, rs: &RateSample) {
        if !tp.is_cwnd_limited || tp.cwnd < self.inflight_hi {
            self.bw_probe_up_acks = 0;
            return;
        }
        self.bw_probe_up_acks += rs.acked_sacked;
        if self.bw_probe_up_acks >= self.bw_probe_up_cnt {
            let delta = self.bw_probe_up_acks / self.bw_probe_up_cnt;
            self.bw_probe_up_acks -= delta * self.bw_probe_up_cnt;
            self.inflight_hi = self.inflight_hi.saturating_add(delta);
        }
        if self.round_start {
            self.raise_inflight_hi_slope(tp);
        }
    }

    /// `bbr2_is_inflight_too_high`: lost > 2 % of `tx_in_flight`, or (ECN-eligible)
    /// CE ≥ 50 % of delivered.
    pub(crate) fn is_inflight_too_high(&self, s: &LossSample) -> bool {
        if s.lost > 0 && s.tx_in_flight != 0 {
            let loss_thresh = (s.tx_in_flight as u64 * self.p.loss_thresh.min(255) as u64) >> BBR_SCALE;
            if s.lost as u64 > loss_thresh {
                return true;
            }
        }
        let ecn_thresh = self.p.ecn_thresh.min(255);
        if s.delivered_ce > 0 && s.delivered > 0 && self.ecn_eligible && ecn_thresh != 0 {
            let t = (s.delivered as u64 * ecn_thresh as u64) >> BBR_SCALE;
            if s.delivered_ce as u64 >= t {
                return true;
            }
        }
        false
    }

    /// `bbr2_inflight_hi_from_lost_skb`: the in-flight level at which the loss rate
    /// crossed `loss_thresh` inside this lost skb.
    pub(crate) fn inflight_hi_from_lost_skb(&self, s: &LossSample, pcount: u32) -> u32 {
        BbrState::inflight_hi_from_lost_skb(self.p.loss_thresh.min(255), s.tx_in_flight, s.lost, pcount)
    }

    /// `bbr2_ecn_cut`: 1 − α · ecn_factor.
    pub fn ecn_cut(&self) -> u32 {
        BBR_UNIT - ((self.ecn_alpha * self.p.ecn_factor.min(255)) >> BBR_SCALE)
    }

    /// `bbr2_adapt_lower_bounds`: once per loss round when not probing, cut
    /// inflight_lo (and bw_lo) for ECN by `ecn_cut` and for loss by beta, the loss
    /// cut floored at the last round's delivery (differences 4).
    fn adapt_lower_bounds(&mut self, tp: &CcSock) {
        if self.is_probing_bandwidth() {
            return;
        }
        let cut_bw_lo = self.flavour == Flavour::V2Alpha && self.p.ecn_bw_lo;
        let (mut ecn_inflight_lo, mut ecn_bw_lo) = (INF, INF);
        if self.ecn_in_round && self.ecn_eligible && self.p.ecn_factor.min(255) != 0 {
            let cut = self.ecn_cut() as u64;
            if cut_bw_lo && self.bw_lo == INF {
                self.bw_lo = self.max_bw();
            }
            if self.inflight_lo == INF {
                self.inflight_lo = tp.cwnd;
            }
            ecn_inflight_lo = ((self.inflight_lo as u64 * cut) >> BBR_SCALE) as u32;
            if cut_bw_lo {
                ecn_bw_lo = ((self.bw_lo as u64 * cut) >> BBR_SCALE) as u32;
            }
        }
        if self.loss_in_round {
            if self.bw_lo == INF {
                self.bw_lo = self.max_bw();
            }
            if self.inflight_lo == INF {
                self.inflight_lo = tp.cwnd;
            }
            let keep = (BBR_UNIT - self.p.beta.min(255)) as u64;
            self.bw_lo = self.bw_latest.max(((self.bw_lo as u64 * keep) >> BBR_SCALE) as u32);
            self.inflight_lo = self.inflight_latest.max(((self.inflight_lo as u64 * keep) >> BBR_SCALE) as u32);
        }
        self.inflight_lo = self.inflight_lo.min(ecn_inflight_lo);
        if cut_bw_lo {
            self.bw_lo = self.bw_lo.min(ecn_bw_lo);
        }
    }

    /// `bbr2_update_congestion_signals`: the max-bw filter, the latest round's
    /// delivery, and the per-loss-round lower-bound update.
    fn update_congestion_signals(&mut self, tp: &CcSock, rs: &RateSample, sample_bw: u32) {
        self.loss_round_start = false;
        if rs.interval_us <= 0 || rs.acked_sacked == 0 {
            return;
        }
        if !rs.is_app_limited || sample_bw >= self.max_bw() {
            model::take_max_bw_sample(&mut self.max_bw, sample_bw);
        }
        self.loss_in_round |= rs.losses > 0;
        let delivered = rs.delivered.clamp(0, u32::MAX as i64) as u32;
        self.bw_latest = self.bw_latest.max(sample_bw);
        self.inflight_latest = self.inflight_latest.max(delivered);
        if rs.prior_delivered < self.loss_round_delivered {
            return;
        }
        self.loss_round_delivered = tp.delivered;
        self.loss_round_start = true;
        self.adapt_lower_bounds(tp);
        self.loss_in_round = false;
        self.ecn_in_round = false;
        self.bw_latest = sample_bw;
        self.inflight_latest = delivered;
    }

    /// `bbr2_handle_inflight_too_high`: once per probe, inflight_hi ←
    /// max(tx_in_flight, 0.7 · target); v2alpha also cuts bw_hi by ECN (difference 5).
    fn handle_inflight_too_high(&mut self, tp: &mut CcSock, s: &LossSample) {
        self.prev_probe_too_high = true;
        self.bw_probe_samples = false;
        if !s.is_app_limited {
            let keep = (BBR_UNIT - self.p.beta.min(255)) as u64;
            self.inflight_hi = s.tx_in_flight.max(((self.target_inflight(tp) as u64 * keep) >> BBR_SCALE) as u32);
            // bbr2_handle_inflight_too_high_via_ecn (v2alpha only).
            if self.flavour == Flavour::V2Alpha && self.p.ecn_bw_hi && self.ecn_eligible && !self.got_ok_bw_probe_sample
            {
                let cut = self.ecn_cut() as u64;
                if self.bw_hi == INF {
                    self.bw_hi = self.max_bw();
                }
                self.bw_hi = ((self.bw_hi as u64 * cut) >> BBR_SCALE) as u32;
            }
        }
        if self.mode == Mode::ProbeBw && self.cycle_idx == Phase::Up {
            self.start_bw_probe_down(tp);
        }
    }

    fn check_full_bw_reached(&mut self, rs: &RateSample, sample_bw: u32) {
        match self.flavour {
            Flavour::V2Alpha => self.check_full_bw_reached_v2alpha(rs),
            Flavour::L4s => self.check_full_bw_reached_l4s(rs, sample_bw),
        }
    }

    /// `bbr2_update_model`.
    fn update_model(&mut self, tp: &mut CcSock, rs: &RateSample, sample_bw: u32) {
        self.update_congestion_signals(tp, rs, sample_bw);
        self.update_ack_aggregation(tp, rs);
        self.check_loss_too_high_in_startup(tp, rs, self.p.full_loss_cnt.min(15));
        self.check_full_bw_reached(rs, sample_bw);
        self.check_drain(tp);
        self.update_cycle_phase(tp, rs, sample_bw);
        self.update_min_rtt(tp, rs);
    }

    /// Mode and phase as `ss` would name them.
    pub fn mode_name(&self) -> &'static str {
        match (self.mode, self.cycle_idx) {
            (Mode::Startup, _) => "STARTUP",
            (Mode::Drain, _) => "DRAIN",
            (Mode::ProbeRtt, _) => "PROBE_RTT",
            (Mode::ProbeBw, Phase::Up) => "PROBE_BW:UP",
            (Mode::ProbeBw, Phase::Down) => "PROBE_BW:DOWN",
            (Mode::ProbeBw, Phase::Cruise) => "PROBE_BW:CRUISE",
            (Mode::ProbeBw, Phase::Refill) => "PROBE_BW:REFILL",
        }
    }
}

impl BbrModel for Bbr2 {
    /// `bbr_bdp`: ceil(bw · min_rtt · gain).
    fn bdp(&self, bw: u32, gain: u32) -> u32 {
        if self.min_rtt_us == INF {
            return self.init_cwnd;
        }
        common::bdp(bw, gain, self.min_rtt_us)
    }

    /// `bbr_quantization_budget`.
    fn quantization_budget(&self, tp: &CcSock, mut cwnd: u32) -> u32 {
        let tso = 3 * self.tso_segs_goal(tp);
        if self.p.cwnd_tso_bduget == 1 {
            cwnd = cwnd.max(tso).max(self.p.cwnd_min_target);
        } else {
            cwnd = cwnd.saturating_add(tso);
            cwnd = (cwnd.saturating_add(1)) & !1;
        }
        if self.mode == Mode::ProbeBw && self.cycle_idx == Phase::Up {
            cwnd = cwnd.saturating_add(2);
        }
        cwnd
    }

    /// `bbr_drain_to_target` (a module parameter, on by default).
    fn drain_to_target(&self) -> bool {
        self.p.drain_to_target
    }

    /// `bbr_probe_rtt_cwnd`: max(cwnd_min_target, BDP · probe_rtt_cwnd_gain).
    fn probe_rtt_cwnd(&self) -> u32 {
        if self.p.probe_rtt_cwnd_gain == 0 {
            return self.p.cwnd_min_target;
        }
        self.p.cwnd_min_target.max(self.bdp(self.bw(), self.p.probe_rtt_cwnd_gain))
    }

    /// `bbr_check_probe_rtt_done`.
    fn check_probe_rtt_done(&mut self, tp: &mut CcSock) {
        let now = tp.jiffies() as u32;
        if !(self.probe_rtt_done_stamp != 0 && after(now, self.probe_rtt_done_stamp)) {
            return;
        }
        self.probe_rtt_min_stamp = now;
        tp.cwnd = tp.cwnd.max(self.prior_cwnd);
        self.exit_probe_rtt(tp);
    }

    /// `bbr2_start_bw_probe_refill`.
    fn start_bw_probe_refill(&mut self, tp: &CcSock, bw_probe_up_rounds: u32) {
        self.reset_lower_bounds();
        if self.inflight_hi != INF {
            self.inflight_hi = self.inflight_hi.saturating_add(self.p.refill_add_inc.min(3));
        }
        self.bw_probe_up_rounds = bw_probe_up_rounds.min(31);
        self.got_ok_bw_probe_sample = false;
        self.start_refill_phase(tp);
    }

    /// `bbr2_has_elapsed_in_phase`.
    fn has_elapsed_in_phase(&self, tp: &CcSock, interval_us: u32) -> bool {
        (tp.now / 1000) as i64 - (self.cycle_mstamp + interval_us as u64) as i64 > 0
    }

    /// `bbr2_is_reno_coexistence_probe_time`: min(63, target inflight) rounds.
    fn is_reno_coexistence_probe_time(&self, tp: &CcSock) -> bool {
        let mut rounds = self.p.bw_probe_max_rounds.min(255);
        let reno_gain = self.p.bw_probe_reno_gain.min(0x1ff);
        if reno_gain != 0 {
            let reno_rounds = ((self.target_inflight(tp) as u64 * reno_gain as u64) >> BBR_SCALE) as u32;
            rounds = rounds.min(reno_rounds);
        }
        self.rounds_since_probe >= rounds
    }

    /// v2 clamps each to its bit-field width (`tcp_bbr2.c`).
    fn ecn_reprobe_gain(&self) -> u32 {
        self.p.ecn_reprobe_gain.min(0x1ff)
    }

    fn probe_rtt_armed(&self) -> bool {
        self.probe_rtt_done_stamp != 0
    }

    fn arm_probe_rtt_done(&mut self, tp: &CcSock) {
        let now = tp.jiffies() as u32;
        self.probe_rtt_done_stamp = now.wrapping_add(ms_to_jiffies(self.p.probe_rtt_mode_ms.min(0x1ff)));
    }

    /// `bbr_max_bw`.
    #[inline]
    fn max_bw(&self) -> u32 {
        self.max_bw[0].max(self.max_bw[1])
    }

    /// `bbr_bw`: min(max_bw, bw_lo, bw_hi) (difference 3: `bw_hi` stays ∞ in L4S).
    #[inline]
    fn bw(&self) -> u32 {
        self.max_bw().min(self.bw_lo.min(self.bw_hi))
    }

    /// `bbr_tso_segs_goal`: in `mss_cache` segments with the generic GSO size, whatever
    /// the device.
    fn tso_segs_goal(&self, tp: &CcSock) -> u32 {
        self.tso_segs_generic(tp, tp.mss, GSO_MAX_SIZE)
    }

    /// `bbr2_inflight_with_headroom`: inflight_hi less 15 %, at least cwnd_min_target.
    fn inflight_with_headroom(&self) -> u32 {
        if self.inflight_hi == INF {
            return INF;
        }
        let headroom =
            ((self.inflight_hi as u64 * self.p.inflight_headroom.min(255) as u64) >> BBR_SCALE).max(1) as u32;
        (self.inflight_hi as i64 - headroom as i64).max(self.p.cwnd_min_target as i64) as u32
    }

    /// `bbr2_pick_probe_wait`: U{0..rand_rounds-1} rounds, 2 s + U[0, 1 s).
    fn pick_probe_wait(&mut self, tp: &mut CcSock) {
        self.rounds_since_probe = prandom_u32_max(tp, self.p.bw_probe_rand_rounds.min(15));
        let base = self.p.bw_probe_base_us.min((1 << 26) - 1);
        self.probe_wait_us = base + prandom_u32_max(tp, self.p.bw_probe_rand_us.min((1 << 26) - 1));
    }

    /// `bbr2_start_bw_probe_up` (L4STeam also restarts its full-bw detector).
    fn start_bw_probe_up(&mut self, tp: &CcSock, sample_bw: u32) {
        self.start_probe_up_phase(tp);
        if self.flavour == Flavour::L4s {
            self.restart_full_bw(sample_bw);
        }
        self.raise_inflight_hi_slope(tp);
    }

    /// `bbr2_adapt_upper_bounds`: probe feedback bookkeeping, the max-bw filter
    /// advance, and inflight_hi (and v2alpha's bw_hi) down on too-high samples or
    /// up on safe ones. True if it decided a state transition.
    fn adapt_upper_bounds(&mut self, tp: &mut CcSock, rs: &RateSample, sample_bw: u32) -> bool {
        if self.adapt_ack_phase(tp, rs) {
            return true;
        }
        let s = LossSample::of(rs);
        if self.is_inflight_too_high(&s) {
            if self.bw_probe_samples {
                self.handle_inflight_too_high(tp, &s);
            }
        } else {
            match self.flavour {
                Flavour::V2Alpha => {
                    self.got_ok_bw_probe_sample |= self.bw_probe_samples;
                    if self.inflight_hi == INF && self.bw_hi == INF {
                        return false;
                    }
                }
                Flavour::L4s => {
                    if self.inflight_hi == INF {
                        return false;
                    }
                }
            }
            if rs.tx_in_flight > self.inflight_hi {
                self.inflight_hi = rs.tx_in_flight;
            }
            if self.flavour == Flavour::V2Alpha && sample_bw > self.bw_hi {
                self.bw_hi = sample_bw;
            }
            if self.mode == Mode::ProbeBw && self.cycle_idx == Phase::Up {
                self.probe_inflight_hi_upward(tp, rs);
            }
        }
        false
    }

    /// `bbr2_check_drain`.
    fn check_drain(&mut self, tp: &mut CcSock) {
        if self.check_drain_done(tp) {
            self.mode = Mode::ProbeBw;
            self.start_bw_probe_down(tp);
        }
    }

    /// `bbr_update_min_rtt`: the 5 s PROBE_RTT filter and the 10 s min_rtt filter,
    /// and PROBE_RTT entry and exit.
    fn update_min_rtt(&mut self, tp: &mut CcSock, rs: &RateSample) {
        let now = tp.jiffies() as u32;
        let probe_rtt_win_ms = self.p.probe_rtt_win_ms.min(self.p.min_rtt_win_sec.min(0x1f) * 1000).min(0x3fff);
        let expire = self.probe_rtt_min_stamp.wrapping_add(ms_to_jiffies(probe_rtt_win_ms));
        let probe_rtt_expired = after(now, expire);
        if rs.rtt_us >= 0 && (rs.rtt_us <= self.probe_rtt_min_us as i64 || (probe_rtt_expired && !rs.is_ack_delayed)) {
            self.probe_rtt_min_us = rs.rtt_us.min(u32::MAX as i64) as u32;
            self.probe_rtt_min_stamp = now;
        }
        let expire = self.min_rtt_stamp.wrapping_add(self.p.min_rtt_win_sec.min(0x1f) * crate::time::HZ as u32);
        let min_rtt_expired = after(now, expire);
        if self.probe_rtt_min_us <= self.min_rtt_us || min_rtt_expired {
            self.min_rtt_us = self.probe_rtt_min_us;
            self.min_rtt_stamp = self.probe_rtt_min_stamp;
        }

        if self.p.probe_rtt_mode_ms.min(0x1ff) > 0
            && probe_rtt_expired
            && !self.idle_restart
            && self.mode != Mode::ProbeRtt
        {
            self.enter_probe_rtt(tp);
            self.probe_rtt_done_stamp = 0;
        }

        self.update_probe_rtt(tp, rs);
    }

    /// `bbr2_handle_queue_too_high_in_startup`.
    fn handle_queue_too_high_in_startup(&mut self, tp: &CcSock) {
        self.full_bw_reached = true;
        self.inflight_hi = self.inflight(tp, self.max_bw(), BBR_UNIT);
    }

    /// `bbr_cwnd_min_target`.
    fn cwnd_min_target(&self) -> u32 {
        self.p.cwnd_min_target
    }

    /// v2alpha: the UP phase ends after a min RTT once the flight reaches
    /// `bw_probe_pif_gain` × BDP; L4STeam with `bw_probe_exit` (difference 7): on a
    /// plateau, as v3.
    fn probe_up_done(&mut self, tp: &CcSock, inflight: u32, bw: u32, sample_bw: u32) -> bool {
        if self.flavour == Flavour::L4s && self.p.bw_probe_exit.min(1) == 1 {
            return self.probe_up_plateau_done(tp, sample_bw);
        }
        self.has_elapsed_in_phase(tp, self.min_rtt_us)
            && inflight >= self.inflight(tp, bw, self.p.bw_probe_pif_gain.min(0x1ff))
    }

    fn rs_inflight_too_high(&self, rs: &RateSample) -> bool {
        self.is_inflight_too_high(&LossSample::of(rs))
    }

    /// `bbr2_advance_max_bw_filter` / `bbr2_advance_bw_hi_filter`.
    fn advance_max_bw_filter(&mut self) {
        model::advance_max_bw_filter(&mut self.max_bw);
    }
}

impl CongestionControl for Bbr2 {
    /// No `pkts_acked` or `in_ack_event` hook (the sender skips both calls).
    fn has_pkts_acked(&self) -> bool {
        false
    }
    fn has_in_ack_event(&self) -> bool {
        false
    }
    fn name(&self) -> &'static str {
        match self.flavour {
            Flavour::V2Alpha => "bbr2",
            Flavour::L4s => "bbr2-l4s",
        }
    }

    fn flags(&self) -> CcFlags {
        FLAGS
    }

    fn wants_ce_events(&self) -> bool {
        true
    }

    /// `bbr_init` + `bbr2_init` (L4STeam: ECT(1) with AccECN, `bbr2_release` without ECN).
    fn init(&mut self, tp: &mut CcSock) {
        let now = tp.jiffies() as u32;
        let ecn_alpha = self.p.ecn_alpha_init.min(BBR_UNIT);
        self.s.init_model(tp, ecn_alpha);
        tp.ssthresh = TCP_INFINITE_SSTHRESH;
        self.next_rtt_delivered = 0;
        self.probe_rtt_done_stamp = 0;
        self.probe_rtt_min_stamp = now;
        self.min_rtt_stamp = now;
        self.init_pacing_rate_from_rtt(tp);
        self.ack_epoch_mstamp = tp.now;
        self.extra_acked = [0; 2];
        self.ce_state = false;
        self.prior_rcv_nxt = tp.rcv.rcv_nxt;
        self.bw_hi = INF;
        self.max_bw = [0; 2];
        self.got_ok_bw_probe_sample = false;
        self.update_gains();
        // Difference 11 (L4STeam bbr2_init): ECT(1) iff AccECN was negotiated;
        // with no ECN at all `bbr2_release` clears it (the socket sends not-ECT,
        // which `EcnMode::Off` already gives) and BBRv2 carries on.
        self.ect1 = self.flavour == Flavour::L4s && tp.ecn_mode == EcnMode::AccEcn;
    }

    /// `bbr2_ssthresh`.
    fn ssthresh(&mut self, tp: &CcSock) -> u32 {
        self.save_undo_state(tp)
    }

    fn has_cong_control(&self) -> bool {
        true
    }

    /// `inflight_hi` from `rs->tx_in_flight` and a lost skb's `tx.in_flight`.
    fn reads_tx_in_flight(&self) -> bool {
        true
    }

    /// `bbr2_main`.
    fn cong_control(&mut self, tp: &mut CcSock, rs: &RateSample) {
        self.update_round_start(tp, rs);
        if self.round_start {
            self.rounds_since_probe = (self.rounds_since_probe + 1).min(0xff);
            self.update_ecn_alpha(tp);
        }
        self.ecn_in_round |= rs.is_ece;
        let sample_bw = Self::calculate_bw_sample(rs);
        let (skip, update_model) = self.run_fast_path(tp, rs, sample_bw, self.p.fast_path);
        if !skip {
            if update_model {
                self.update_model(tp, rs, sample_bw);
            }
            self.update_gains();
            let bw = self.bw();
            self.set_pacing_rate(tp, bw, self.pacing_gain);
            self.set_cwnd(tp, rs.acked_sacked, bw, self.cwnd_gain);
            self.bound_cwnd_for_inflight_model(tp);
        }
        self.prev_ca_state = tp.ca_state;
        self.loss_in_cycle |= rs.lost > 0;
        self.ecn_in_cycle |= rs.delivered_ce > 0;
    }

    /// `bbr2_set_state` (difference 8 in the RTO branch).
    fn set_state(&mut self, tp: &mut CcSock, new_state: CaState) {
        if new_state == CaState::Loss {
            self.prev_ca_state = CaState::Loss;
            match self.flavour {
                Flavour::V2Alpha => self.full_bw = 0,
                Flavour::L4s => self.reset_full_bw(),
            }
            if !self.is_probing_bandwidth() && self.inflight_lo == INF {
                self.inflight_lo = match self.flavour {
                    Flavour::V2Alpha => self.prior_cwnd,
                    Flavour::L4s => tp.cwnd.max(self.prior_cwnd),
                };
            }
        } else if self.prev_ca_state == CaState::Loss {
            tp.cwnd = tp.cwnd.max(self.prior_cwnd);
            self.try_fast_path = false;
        }
    }

    /// `bbr_cwnd_event`: restart from idle; on a receiving socket, the DCTCP-style
    /// CE echo (`ecn_enable` and `precise_ece_ack`) and, with `fast_ack_mode = 2`,
    /// quick-ACK mode on CE.
    fn cwnd_event(&mut self, tp: &mut CcSock, ev: CaEvent) {
        match ev {
            CaEvent::TxStart if tp.app_limited != 0 => {
                self.idle_restart = true;
                self.ack_epoch_mstamp = tp.now;
                self.ack_epoch_acked = 0;
                if self.mode == Mode::ProbeBw {
                    self.set_pacing_rate(tp, self.bw(), BBR_UNIT);
                } else if self.mode == Mode::ProbeRtt {
                    self.check_probe_rtt_done(tp);
                }
            }
            CaEvent::EcnIsCe | CaEvent::EcnNoCe if self.p.ecn_enable && self.p.precise_ece_ack => {
                super::dctcp::dctcp_ece_ack_update(tp, ev, &mut self.prior_rcv_nxt, &mut self.ce_state);
                if self.p.fast_ack_mode.min(2) == 2 && ev == CaEvent::EcnIsCe {
                    tp.rcv.quickack = true;
                }
            }
            _ => {}
        }
    }

    /// `bbr2_skb_marked_lost`: loss bookkeeping, and while a probe's feedback
    /// arrives, the inflight level at which loss became too high.
    fn skb_marked_lost(&mut self, tp: &mut CcSock, skb: &SkbLostInfo) {
        if !self.loss_in_round {
            self.loss_round_delivered = tp.delivered;
        }
        self.loss_in_round = true;
        self.loss_in_cycle = true;
        if !self.bw_probe_samples || skb.tx.delivered_mstamp == 0 {
            return;
        }
        let mut s = LossSample {
            tx_in_flight: skb.tx.in_flight,
            lost: tp.lost as i64 - skb.tx.lost as i64,
            delivered: 0,
            // Difference 9: v2alpha's sample also carries the CE count.
            delivered_ce: match self.flavour {
                Flavour::V2Alpha => tp.delivered_ce as i64 - skb.tx.delivered_ce as i64,
                Flavour::L4s => 0,
            },
            is_app_limited: skb.tx.is_app_limited,
        };
        if self.is_inflight_too_high(&s) {
            s.tx_in_flight = self.inflight_hi_from_lost_skb(&s, skb.pcount.max(1));
            self.handle_inflight_too_high(tp, &s);
        }
    }

    /// `bbr2_undo_cwnd`.
    fn undo_cwnd(&mut self, tp: &CcSock) -> u32 {
        match self.flavour {
            Flavour::V2Alpha => {
                self.full_bw = 0;
                self.full_bw_cnt = 0;
            }
            Flavour::L4s => self.reset_full_bw(),
        }
        self.loss_in_round = false;
        if !self.p.undo {
            return tp.cwnd;
        }
        self.bw_lo = self.bw_lo.max(self.undo_bw_lo);
        self.inflight_lo = self.inflight_lo.max(self.undo_inflight_lo);
        self.inflight_hi = self.inflight_hi.max(self.undo_inflight_hi);
        self.prior_cwnd
    }

    /// `bbr_tso_segs`.
    fn tso_segs(&self, tp: &CcSock, mss_now: u32) -> Option<u32> {
        Some(self.tso_segs_generic(tp, mss_now, GSO_MAX_SIZE))
    }

    fn alpha(&self) -> Option<f64> {
        Some(self.ecn_alpha as f64 / BBR_UNIT as f64)
    }

    /// What `bbr2_get_info` reports.
    fn cc_state(&self, tp: &CcSock) -> CcState {
        let bound = |v: u32| if v == INF { None } else { Some(v) };
        CcState {
            bw_bytes_per_s: Some(Self::rate_bytes_per_sec(tp, self.bw() as u64, BBR_UNIT, 0)),
            min_rtt_us: bound(self.min_rtt_us),
            mode: Some(self.mode_name()),
            pacing_gain: Some(self.pacing_gain as f64 / BBR_UNIT as f64),
            inflight_hi: bound(self.inflight_hi),
            inflight_lo: bound(self.inflight_lo),
        }
    }

    fn ect_codepoint(&self) -> Ecn {
        if self.ect1 {
            Ecn::Ect1
        } else {
            Ecn::Ect0
        }
    }
}

/// `TCP_CONG_NON_RESTRICTED | TCP_CONG_WANTS_CE_EVENTS` in both trees; BBR asks
/// for internal pacing (`sk_pacing_status = SK_PACING_NEEDED` in `bbr_init`).
const FLAGS: CcFlags = CcFlags {
    needs_ecn: false,
    needs_accecn: false,
    wants_ect1: false,
    no_fallback_rfc3168: false,
    needs_pacing: true,
};

/// Refuse a key outside `specs` by name (the union struct would accept it).
fn check_keys(cc: &str, specs: &[ParamSpec], params: Option<&serde_json::Value>) -> Result<(), String> {
    if let Some(serde_json::Value::Object(o)) = params {
        for k in o.keys() {
            if !specs.iter().any(|p| p.name == k) {
                let known: Vec<&str> = specs.iter().map(|p| p.name).collect();
                return Err(format!("{k}: unknown {cc} parameter (known: {})", known.join(", ")));
            }
        }
    }
    Ok(())
}

fn check_gains(name: &str, v: &[u32], n: usize) -> Result<(), String> {
    if v.len() != n {
        return Err(format!("{name}: {} values given, {n} allowed", v.len()));
    }
    Ok(())
}

/// Build `bbr2` from its `cc_params`.
pub fn build_v2alpha(params: Option<&serde_json::Value>) -> Result<Bbr2, String> {
    Ok(Bbr2::new(Flavour::V2Alpha, parse_v2alpha(params)?))
}

/// `bbr2`'s `cc_params`, checked.
fn parse_v2alpha(params: Option<&serde_json::Value>) -> Result<Bbr2Params, String> {
    check_keys("bbr2", &v2alpha_specs(), params)?;
    let p = parse_params("bbr2", Bbr2Params::default(), params)?;
    check_gains("pacing_gain", &p.pacing_gain, 8)?;
    Ok(p)
}

/// Build `bbr2-l4s` from its `cc_params`.
pub fn build_l4s(params: Option<&serde_json::Value>) -> Result<Bbr2, String> {
    Ok(Bbr2::new(Flavour::L4s, parse_l4s(params)?))
}

/// `bbr2-l4s`'s `cc_params`, checked.
fn parse_l4s(params: Option<&serde_json::Value>) -> Result<Bbr2Params, String> {
    check_keys("bbr2-l4s", &l4s_specs(), params)?;
    let p = parse_params("bbr2-l4s", Bbr2Params::l4s(), params)?;
    check_gains("pacing_gain", &p.pacing_gain, 8)?;
    check_gains("bbr2_pacing_gain", &p.bbr2_pacing_gain, 4)?;
    Ok(p)
}

/// `bbr2` in the registry.
pub const DESCRIPTOR: CcDescriptor = CcDescriptor {
    name: "bbr2",
    doc: "BBRv2 (google/bbr v2alpha tcp_bbr2.c): two-timescale model, 2 % loss threshold; ECN off unless ecn_enable (ECT(0)).",
    l4s: false,
    flags: FLAGS,
    receiver: ReceiverDefaults::NONE,
    build: |p| Ok(Box::new(build_v2alpha(p)?)),
    check: |p| parse_v2alpha(p).map(drop),
    reports_state: true,
    params: v2alpha_specs,
};

/// `bbr2-l4s` in the registry: the L4STeam kernel's `bbr2` (the PAM 2025
/// testbed ran it with `tcp_ecn = 3` on both hosts).
pub const DESCRIPTOR_L4S: CcDescriptor = CcDescriptor {
    name: "bbr2-l4s",
    doc: "L4S-BBRv2 (L4STeam/linux tcp_bbr2.c): ECN on at any RTT, ECT(1) only with AccECN (set the sender ecn = 3, as the L4STeam hosts), ECN cuts inflight_lo only.",
    l4s: true,
    flags: FLAGS,
    receiver: ReceiverDefaults { receiver_ecn: Some(3), receiver_cc: None },
    build: |p| Ok(Box::new(build_l4s(p)?)),
    check: |p| parse_l4s(p).map(drop),
    reports_state: true,
    params: l4s_specs,
};
