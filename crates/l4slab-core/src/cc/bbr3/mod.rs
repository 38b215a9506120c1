//! BBRv3 as google/bbr's `v3` branch implements it (`net/ipv4/tcp_bbr.c`,
//! `BBR_VERSION 3`, module name `bbr`; the PAM 2025 testbed ran the 6.4 build of
//! this branch). Function names in comments are that file's.
//!
//! The model: a two-slot max filter of delivery-rate samples (`bw_hi[2]`, one slot
//! per PROBE_BW cycle), the min RTT (10 s window, PROBE_RTT every 5 s), short-term
//! lower bounds `bw_lo` / `inflight_lo` cut per lossy (×0.7) or CE-marked
//! (×(1 − α/3)) round outside probes, and the long-term `inflight_hi` set where a
//! probe's loss rate passed 2 % (or its CE share 50 %). STARTUP paces at 2.77 with
//! cwnd gain 2, exits on a bandwidth plateau (3 rounds < 25 % growth), on loss
//! (≥ 6 loss events and > 2 % loss in a recovery round) or on ECN (2 rounds with
//! more than 50 % CE); DRAIN at 1/2.885; PROBE_BW cycles DOWN (0.91) → CRUISE → REFILL →
//! UP (1.25, cwnd gain 2.25).
//!
//! ECN is used only when `bbr_can_use_ecn`: ECN negotiated **and** the route
//! feature `ecn_low` ([`CcSock::ecn_low`]), and then only once the flow is
//! "ECN-eligible", latched at a round start with min RTT ≤ `ecn_max_rtt_us`
//! (5 ms). With `bbr_can_use_ecn` at `bbr_init` the socket sets
//! `TCP_ECN_ECT_PERMANENT` ([`CcSock::ect_permanent`]): retransmissions keep ECT.
//!
//! Everything is the kernel's fixed point: bw in packets/µs << 24 (`BW_SCALE`),
//! gains in 1/256, volumes in packets, times in µs (`tcp_mstamp`) and jiffies.
//!
//! Not modelled (see docs/architecture.md): PLB (`tcp_plb_enabled` is off by
//! default; with it off α is updated only while ECN-eligible, as here),
//! `rs->is_acking_tlp_retrans_seq` (the latest-delivery filters are reset on every
//! loss-round start, also by the ACK of a TLP retransmission), the receive-side precise
//! ECE of a bbr receiving socket (`bbr_precise_ece_ack`; the PAM testbed's v3
//! receivers were CUBIC), and `fast_ack_mode` (it only turns off the receive-window
//! check of `__tcp_ack_snd_check`, which the engine's receiver never applies).
//!
//! What v3 writes as BBRv2 (`cc/bbr2/`) does (the shared fields of `struct bbr`, the
//! PROBE_BW cycle, PROBE_RTT, the lower-bound resets) is in `cc/bbr_model.rs`; this
//! file keeps v3's own functions, those `impl BbrModel` names included.

use super::descriptor::{parse_params, CcDescriptor, ReceiverDefaults};
use super::*;

pub mod params;
#[cfg(test)]
mod tests;

pub use params::Bbr3Params;
use params::{BBR_SCALE, BBR_UNIT};

/// `BW_SCALE`: bw is in packets per µs << 24; `GSO_LEGACY_MAX_SIZE` = 64 KB (`cc/bbr_common.rs`).
use super::bbr_common::{self as common, BW_UNIT, GSO_MAX_SIZE as GSO_LEGACY_MAX_SIZE};
use super::bbr_model::{self as model, BbrModel, BbrState, Mode, Phase, UNSET};

/// `struct bbr` (the fields of v3; bit-field widths noted where they saturate or wrap).
#[derive(Clone, Debug)]
pub struct Bbr3 {
    p: Bbr3Params,
    /// The fields v2 shares (`cc/bbr_model.rs`).
    s: BbrState,
    /// jiffies.
    min_rtt_stamp: u64,
    probe_rtt_done_stamp: u64,
    probe_rtt_min_stamp: u64,
    /// µs.
    ack_epoch_mstamp: u64,
    extra_acked: [u16; 2],
    /// The max-bandwidth filter.
    bw_hi: [u32; 2],
}

model::deref_to_state!(Bbr3);

/// `struct bbr_context`.
#[derive(Clone, Copy, Default)]
struct Ctx {
    sample_bw: u32,
}

#[inline]
fn now_us(tp: &CcSock) -> u64 {
    tp.now / 1000
}

impl Bbr3 {
    pub fn new(p: Bbr3Params) -> Self {
        Bbr3 {
            p,
            // struct bbr starts zeroed; bbr_update_gains sets the gains on the first ACK.
            s: BbrState::new(0, 0, BBR_UNIT),
            min_rtt_stamp: 0,
            probe_rtt_done_stamp: 0,
            probe_rtt_min_stamp: 0,
            ack_epoch_mstamp: 0,
            extra_acked: [0; 2],
            bw_hi: [0; 2],
        }
    }

    pub fn params(&self) -> &Bbr3Params {
        &self.p
    }
    pub fn mode(&self) -> Mode {
        self.mode
    }
    pub fn phase(&self) -> Phase {
        self.cycle_idx
    }
    pub fn pacing_gain(&self) -> u32 {
        self.pacing_gain
    }
    pub fn cwnd_gain(&self) -> u32 {
        self.cwnd_gain
    }
    pub fn full_bw_reached(&self) -> bool {
        self.full_bw_reached
    }
    pub fn ecn_eligible(&self) -> bool {
        self.ecn_eligible
    }
    /// `inflight_hi`, `None` while unset (`~0U`).
    pub fn inflight_hi(&self) -> Option<u32> {
        (self.inflight_hi != UNSET).then_some(self.inflight_hi)
    }
    /// `inflight_lo`, `None` while unset.
    pub fn inflight_lo(&self) -> Option<u32> {
        (self.inflight_lo != UNSET).then_some(self.inflight_lo)
    }
    /// `ecn_alpha` in 1/256.
    pub fn ecn_alpha(&self) -> u32 {
        self.ecn_alpha
    }

    /// `bbr_can_use_ecn`: ECN negotiated and the route's `ecn_low` (`TCP_ECN_LOW`).
    #[inline]
    fn can_use_ecn(tp: &CcSock) -> bool {
        tp.ecn_mode != EcnMode::Off && tp.ecn_low
    }

    /// `bbr_extra_acked`.
    #[inline]
    fn extra_acked(&self) -> u32 {
        self.extra_acked[0].max(self.extra_acked[1]) as u32
    }

    /// `bbr_rate_bytes_per_sec`.
    fn rate_bytes_per_sec(tp: &CcSock, rate: u64, gain: u32, margin: u32) -> u64 {
        common::rate_bytes_per_sec(tp.mss, rate, gain, margin as u64).max(1)
    }

    /// `bbr_bw_to_pacing_rate` (no `sk_max_pacing_rate` cap is configured).
    fn bw_to_pacing_rate(&self, tp: &CcSock, bw: u32, gain: u32) -> u64 {
        Self::rate_bytes_per_sec(tp, bw as u64, gain, self.p.pacing_margin_percent)
    }

    /// `bbr_init_pacing_rate_from_rtt`.
    fn init_pacing_rate_from_rtt(&mut self, tp: &mut CcSock) {
        let rtt_us = if tp.srtt_us > 0 {
            self.has_seen_rtt = true;
            tp.srtt_us.max(1)
        } else {
            1000
        };
        let bw = tp.cwnd as u64 * BW_UNIT / rtt_us;
        // bbr_bw_to_pacing_rate takes a u32 bw.
        tp.pacing_rate = self.bw_to_pacing_rate(tp, bw as u32, self.p.startup_pacing_gain);
    }

    /// `bbr_set_pacing_rate`.
    fn set_pacing_rate(&mut self, tp: &mut CcSock, bw: u32, gain: u32) {
        let rate = self.bw_to_pacing_rate(tp, bw, gain);
        if !self.has_seen_rtt && tp.srtt_us > 0 {
            self.init_pacing_rate_from_rtt(tp);
        }
        common::raise_pacing_rate(tp, rate, self.full_bw_reached);
    }

    /// `bbr_tso_segs_generic`.
    fn tso_segs_generic(&self, tp: &CcSock, mss: u32, gso_max_size: u64) -> u32 {
        common::tso_segs_generic(tp, mss, self.min_rtt_us, self.p.tso_rtt_shift, gso_max_size, self.p.min_tso_segs)
    }

    /// `bbr_ack_aggregation_cwnd`.
    fn ack_aggregation_cwnd(&self) -> u32 {
        if self.p.extra_acked_gain == 0 {
            return 0;
        }
        common::ack_aggregation_cwnd(self.bw(), self.extra_acked(), self.p.extra_acked_gain, self.p.extra_acked_max_us)
    }

    /// `bbr_set_cwnd`.
    fn set_cwnd(&mut self, tp: &mut CcSock, acked: u32, bw: u32, gain: u32) {
        let mut cwnd = tp.cwnd;
        if acked != 0 {
            let mut target = self.bdp(bw, gain);
            target += self.ack_aggregation_cwnd();
            target = self.quantization_budget(tp, target);
            self.try_fast_path = false;
            if self.full_bw_reached {
                cwnd += acked;
                if cwnd >= target {
                    cwnd = target;
                    self.try_fast_path = true;
                }
            } else if cwnd < target || cwnd < 2 * self.init_cwnd {
                cwnd += acked;
            } else {
                self.try_fast_path = true;
            }
            cwnd = cwnd.max(self.p.cwnd_min_target);
        }
        tp.cwnd = cwnd.min(tp.cwnd_clamp);
        if self.mode == Mode::ProbeRtt {
            tp.cwnd = tp.cwnd.min(self.probe_rtt_cwnd());
        }
    }

    /// `bbr_calculate_bw_sample`: delivered / interval, rounded up.
    fn calculate_bw_sample(rs: &RateSample, ctx: &mut Ctx) {
        if rs.interval_us > 0 && rs.delivered < 0 {
            return; // the kernel returns with the sample left at 0
        }
        ctx.sample_bw = common::bw_sample_round_up(rs.delivered, rs.interval_us).unwrap_or(0);
    }

    /// `bbr_update_ack_aggregation`.
    fn update_ack_aggregation(&mut self, tp: &CcSock, rs: &RateSample) {
        if self.p.extra_acked_gain == 0 || rs.acked_sacked == 0 || rs.delivered < 0 || rs.interval_us <= 0 {
            return;
        }
        let mut win_thresh = self.p.extra_acked_win_rtts;
        if self.round_start {
            self.extra_acked_win_rtts = (self.extra_acked_win_rtts + 1).min(0x1f);
            if !self.full_bw_reached {
                win_thresh = 1;
            }
            if self.extra_acked_win_rtts >= win_thresh {
                self.extra_acked_win_rtts = 0;
                self.extra_acked_win_idx ^= 1;
                self.extra_acked[self.extra_acked_win_idx] = 0;
            }
        }
        let epoch_us = (tp.delivered_mstamp / 1000).saturating_sub(self.ack_epoch_mstamp);
        let bw = self.bw();
        let reset_thresh = self.p.ack_epoch_acked_reset_thresh;
        let (reset, extra) =
            common::ack_epoch_excess(&mut self.ack_epoch_acked, bw, epoch_us, rs.acked_sacked, reset_thresh, tp.cwnd);
        if reset {
            self.ack_epoch_mstamp = tp.delivered_mstamp / 1000;
        }
        // `extra_acked[]` is u16 in struct bbr.
        let extra = extra as u16;
        if extra > self.extra_acked[self.extra_acked_win_idx] {
            self.extra_acked[self.extra_acked_win_idx] = extra;
        }
    }

    /// `bbr_update_gains`.
    fn update_gains(&mut self) {
        let p = &self.p;
        (self.s.pacing_gain, self.s.cwnd_gain) = match self.s.mode {
            Mode::Startup => (p.startup_pacing_gain, p.startup_cwnd_gain),
            Mode::Drain => (p.drain_gain, p.startup_cwnd_gain),
            Mode::ProbeBw => {
                let mut cwnd = p.cwnd_gain;
                if p.bw_probe_cwnd_gain != 0 && self.s.cycle_idx == Phase::Up {
                    cwnd += BBR_UNIT * p.bw_probe_cwnd_gain / 4;
                }
                (p.pacing_gain[self.s.cycle_idx as usize], cwnd)
            }
            Mode::ProbeRtt => (BBR_UNIT, BBR_UNIT),
        };
    }

    /// `bbr_check_ecn_too_high_in_startup`.
    fn check_ecn_too_high_in_startup(&mut self, tp: &CcSock, ce_ratio: u32) {
        if self.full_bw_reached || !self.ecn_eligible || self.p.full_ecn_cnt == 0 || self.p.ecn_thresh == 0 {
            return;
        }
        if ce_ratio >= self.p.ecn_thresh {
            // 2-bit field.
            self.startup_ecn_rounds = (self.startup_ecn_rounds + 1) & 3;
        } else {
            self.startup_ecn_rounds = 0;
        }
        if self.startup_ecn_rounds >= self.p.full_ecn_cnt {
            self.handle_queue_too_high_in_startup(tp);
        }
    }

    /// `bbr_update_ecn_alpha`: returns the round's CE ratio (1/256), `None` if not available.
    fn update_ecn_alpha(&mut self, tp: &CcSock) -> Option<u32> {
        let can = Self::can_use_ecn(tp);
        if !self.ecn_eligible
            && can
            && self.p.ecn_factor != 0
            && (self.min_rtt_us <= self.p.ecn_max_rtt_us || self.p.ecn_max_rtt_us == 0)
        {
            self.ecn_eligible = true;
        }
        // PLB (`tcp_plb_enabled`) is off: α only while ECN-eligible.
        if !self.ecn_eligible {
            return None;
        }
        let delivered = tp.delivered.wrapping_sub(self.alpha_last_delivered);
        let delivered_ce = tp.delivered_ce.wrapping_sub(self.alpha_last_delivered_ce);
        if delivered == 0 || delivered > i64::MAX as u64 || delivered_ce > i64::MAX as u64 {
            return None;
        }
        let ce_ratio = (delivered_ce << BBR_SCALE) / delivered;
        let gain = self.p.ecn_alpha_gain as u64;
        let mut alpha = ((BBR_UNIT as u64 - gain) * self.ecn_alpha as u64) >> BBR_SCALE;
        alpha += (gain * ce_ratio) >> BBR_SCALE;
        self.ecn_alpha = alpha.min(BBR_UNIT as u64) as u32;
        self.alpha_last_delivered = tp.delivered;
        self.alpha_last_delivered_ce = tp.delivered_ce;
        let ce_ratio = ce_ratio.min(u32::MAX as u64) as u32;
        self.check_ecn_too_high_in_startup(tp, ce_ratio);
        Some(ce_ratio)
    }

    /// `bbr_raise_inflight_hi_slope`.
    fn raise_inflight_hi_slope(&mut self, tp: &CcSock) {
        let growth_this_round = 1u32 << self.bw_probe_up_rounds;
        self.bw_probe_up_rounds = (self.bw_probe_up_rounds + 1).min(30);
        self.bw_probe_up_cnt = (tp.cwnd / growth_this_round).max(1);
    }

    /// `bbr_probe_inflight_hi_upward`.
    fn probe_inflight_hi_upward(&mut self, tp: &CcSock, rs: &RateSample) {
        if !tp.is_cwnd_limited || tp.cwnd < self.inflight_hi {
            return;
        }
        self.bw_probe_up_acks += rs.acked_sacked;
        if self.bw_probe_up_acks >= self.bw_probe_up_cnt {
            let delta = self.bw_probe_up_acks / self.bw_probe_up_cnt;
            self.bw_probe_up_acks -= delta * self.bw_probe_up_cnt;
            self.inflight_hi = self.inflight_hi.wrapping_add(delta);
            self.try_fast_path = false;
        }
        if self.round_start {
            self.raise_inflight_hi_slope(tp);
        }
    }

    /// `bbr_is_inflight_too_high`: the sample's loss rate above `loss_thresh`, or
    /// (ECN-eligible) its CE share above `ecn_thresh`.
    fn is_inflight_too_high(&self, rs: &RateSample) -> bool {
        if rs.lost > 0 && rs.tx_in_flight != 0 {
            let loss_thresh = (rs.tx_in_flight as u64 * self.p.loss_thresh as u64) >> BBR_SCALE;
            if rs.lost as u64 > loss_thresh {
                return true;
            }
        }
        if rs.delivered_ce > 0 && rs.delivered > 0 && self.ecn_eligible && self.p.ecn_thresh != 0 {
            let ecn_thresh = (rs.delivered as u64 * self.p.ecn_thresh as u64) >> BBR_SCALE;
            if rs.delivered_ce as u64 > ecn_thresh {
                return true;
            }
        }
        false
    }

    /// `bbr_ecn_cut`.
    fn ecn_cut(&self) -> u32 {
        BBR_UNIT - ((self.ecn_alpha * self.p.ecn_factor) >> BBR_SCALE)
    }

    /// `bbr_init_lower_bounds`.
    fn init_lower_bounds(&mut self, tp: &CcSock, init_bw: bool) {
        if init_bw && self.bw_lo == UNSET {
            self.bw_lo = self.max_bw();
        }
        if self.inflight_lo == UNSET {
            self.inflight_lo = tp.cwnd;
        }
    }

    /// `bbr_adapt_lower_bounds`: per loss round outside probes, cut inflight_lo
    /// by the ECN factor and bw_lo / inflight_lo by β (never below the latest round's delivery).
    fn adapt_lower_bounds(&mut self, tp: &CcSock) {
        if self.is_probing_bandwidth() {
            return;
        }
        let mut ecn_inflight_lo = UNSET;
        if self.ecn_in_round && self.p.ecn_factor != 0 {
            self.init_lower_bounds(tp, false);
            ecn_inflight_lo = ((self.inflight_lo as u64 * self.ecn_cut() as u64) >> BBR_SCALE) as u32;
        }
        if self.loss_in_round {
            self.init_lower_bounds(tp, true);
            let loss_cut = (BBR_UNIT - self.p.beta) as u64;
            self.bw_lo = self.bw_latest.max(((self.bw_lo as u64 * loss_cut) >> BBR_SCALE) as u32);
            self.inflight_lo = self.inflight_latest.max(((self.inflight_lo as u64 * loss_cut) >> BBR_SCALE) as u32);
        }
        self.inflight_lo = self.inflight_lo.min(ecn_inflight_lo);
        self.bw_lo = self.bw_lo.max(1);
    }

    /// `bbr_exit_loss_recovery`.
    fn exit_loss_recovery(&mut self, tp: &mut CcSock) {
        tp.cwnd = tp.cwnd.max(self.prior_cwnd);
        self.try_fast_path = false;
    }

    /// `bbr_update_latest_delivery_signals`.
    fn update_latest_delivery_signals(&mut self, tp: &CcSock, rs: &RateSample, ctx: &Ctx) {
        self.loss_round_start = false;
        if rs.interval_us <= 0 || rs.acked_sacked == 0 {
            return;
        }
        self.bw_latest = self.bw_latest.max(ctx.sample_bw);
        self.inflight_latest = self.inflight_latest.max(rs.delivered.clamp(0, u32::MAX as i64) as u32);
        if rs.prior_delivered >= self.loss_round_delivered {
            self.loss_round_delivered = tp.delivered;
            self.loss_round_start = true;
        }
    }

    /// `bbr_advance_latest_delivery_signals` (`rs->is_acking_tlp_retrans_seq` is
    /// not reported by the engine: taken as false).
    fn advance_latest_delivery_signals(&mut self, rs: &RateSample, ctx: &Ctx) {
        if self.loss_round_start {
            self.bw_latest = ctx.sample_bw;
            self.inflight_latest = rs.delivered.clamp(0, u32::MAX as i64) as u32;
        }
    }

    /// `bbr_update_congestion_signals`.
    fn update_congestion_signals(&mut self, tp: &CcSock, rs: &RateSample, ctx: &Ctx) {
        if rs.interval_us <= 0 || rs.acked_sacked == 0 {
            return;
        }
        let bw = ctx.sample_bw;
        if !rs.is_app_limited || bw >= self.max_bw() {
            model::take_max_bw_sample(&mut self.bw_hi, bw);
        }
        self.loss_in_round |= rs.losses > 0;
        if !self.loss_round_start {
            return;
        }
        self.adapt_lower_bounds(tp);
        self.loss_in_round = false;
        self.ecn_in_round = false;
    }

    /// `bbr_handle_inflight_too_high`.
    fn handle_inflight_too_high(&mut self, tp: &mut CcSock, rs: &RateSample) {
        self.prev_probe_too_high = true;
        self.bw_probe_samples = false;
        if !rs.is_app_limited {
            let cut = (self.target_inflight(tp) as u64 * (BBR_UNIT - self.p.beta) as u64) >> BBR_SCALE;
            self.inflight_hi = rs.tx_in_flight.max(cut as u32);
        }
        if self.mode == Mode::ProbeBw && self.cycle_idx == Phase::Up {
            self.start_bw_probe_down(tp);
        }
    }

    /// `bbr_check_full_bw_reached`: any sample ≥ 1.25 × full_bw restarts the
    /// count; otherwise each round start counts, and `full_bw_cnt` rounds make a plateau.
    fn check_full_bw_reached(&mut self, rs: &RateSample, ctx: &Ctx) {
        if self.full_bw_now || rs.is_app_limited {
            return;
        }
        let bw_thresh = ((self.full_bw as u64 * self.p.full_bw_thresh as u64) >> BBR_SCALE).min(u32::MAX as u64) as u32;
        if ctx.sample_bw >= bw_thresh {
            self.restart_full_bw(ctx.sample_bw);
            return;
        }
        if !self.round_start {
            return;
        }
        self.full_bw_cnt = (self.full_bw_cnt + 1) & 3;
        self.full_bw_now = self.full_bw_cnt >= self.p.full_bw_cnt;
        self.full_bw_reached |= self.full_bw_now;
    }

    /// `bbr_update_model`.
    fn update_model(&mut self, tp: &mut CcSock, rs: &RateSample, ctx: &Ctx) {
        self.update_congestion_signals(tp, rs, ctx);
        self.update_ack_aggregation(tp, rs);
        self.check_loss_too_high_in_startup(tp, rs, self.p.full_loss_cnt);
        self.check_full_bw_reached(rs, ctx);
        self.check_drain(tp);
        self.update_cycle_phase(tp, rs, ctx.sample_bw);
        self.update_min_rtt(tp, rs);
    }

    /// `bbr_main`.
    fn main(&mut self, tp: &mut CcSock, rs: &RateSample) {
        let mut ctx = Ctx::default();
        self.update_round_start(tp, rs);
        if self.round_start {
            self.rounds_since_probe = (self.rounds_since_probe + 1).min(0xff);
            self.update_ecn_alpha(tp);
        }
        self.ecn_in_round |= self.ecn_eligible && rs.is_ece;
        Self::calculate_bw_sample(rs, &mut ctx);
        self.update_latest_delivery_signals(tp, rs, &ctx);
        let (skip, update_model) = self.run_fast_path(tp, rs, ctx.sample_bw, self.p.fast_path);
        if !skip {
            if update_model {
                self.update_model(tp, rs, &ctx);
            }
            self.update_gains();
            let bw = self.bw();
            self.set_pacing_rate(tp, bw, self.pacing_gain);
            self.set_cwnd(tp, rs.acked_sacked, bw, self.cwnd_gain);
            self.bound_cwnd_for_inflight_model(tp);
        }
        self.advance_latest_delivery_signals(rs, &ctx);
        self.prev_ca_state = tp.ca_state;
        self.loss_in_cycle |= rs.lost > 0;
        self.ecn_in_cycle |= rs.delivered_ce > 0;
    }

    /// `bbr_run_loss_probe_recovery`: a TLP repaired the loss of one segment.
    fn run_loss_probe_recovery(&mut self, tp: &mut CcSock) {
        self.note_loss(tp);
        if !self.bw_probe_samples {
            return;
        }
        let rs = RateSample {
            lost: 1,
            tx_in_flight: self.inflight_latest + 1,
            is_app_limited: tp.tlp_orig_data_app_limited,
            ..RateSample::default()
        };
        if self.is_inflight_too_high(&rs) {
            self.handle_inflight_too_high(tp, &rs);
        }
    }

    /// `bbr_note_loss`.
    fn note_loss(&mut self, tp: &CcSock) {
        if !self.loss_in_round {
            self.loss_round_delivered = tp.delivered;
        }
        self.loss_in_round = true;
        self.loss_in_cycle = true;
    }
}

impl BbrModel for Bbr3 {
    /// `bbr_bdp`.
    fn bdp(&self, bw: u32, gain: u32) -> u32 {
        if self.min_rtt_us == u32::MAX {
            return self.init_cwnd;
        }
        common::bdp(bw, gain, self.min_rtt_us)
    }

    /// `bbr_quantization_budget`.
    fn quantization_budget(&self, tp: &CcSock, cwnd: u32) -> u32 {
        let tso_segs_goal = 3 * self.tso_segs_goal(tp);
        let mut cwnd = cwnd.max(tso_segs_goal).max(self.p.cwnd_min_target);
        if self.mode == Mode::ProbeBw && self.cycle_idx == Phase::Up {
            cwnd += 2;
        }
        cwnd
    }

    /// v3 always drains to the target before CRUISE.
    fn drain_to_target(&self) -> bool {
        true
    }

    /// `bbr_probe_rtt_cwnd`.
    fn probe_rtt_cwnd(&self) -> u32 {
        self.p.cwnd_min_target.max(self.bdp(self.bw(), self.p.probe_rtt_cwnd_gain))
    }

    /// `bbr_check_probe_rtt_done`.
    fn check_probe_rtt_done(&mut self, tp: &mut CcSock) {
        if !(self.probe_rtt_done_stamp != 0 && tp.jiffies() > self.probe_rtt_done_stamp) {
            return;
        }
        self.probe_rtt_min_stamp = tp.jiffies();
        tp.cwnd = tp.cwnd.max(self.prior_cwnd);
        self.exit_probe_rtt(tp);
    }

    /// `bbr_start_bw_probe_refill`.
    fn start_bw_probe_refill(&mut self, tp: &CcSock, bw_probe_up_rounds: u32) {
        self.reset_lower_bounds();
        self.bw_probe_up_rounds = bw_probe_up_rounds & 0x1f;
        self.start_refill_phase(tp);
    }

    /// `bbr_has_elapsed_in_phase`.
    fn has_elapsed_in_phase(&self, tp: &CcSock, interval_us: u32) -> bool {
        now_us(tp) > self.cycle_mstamp + interval_us as u64
    }

    /// `bbr_is_reno_coexistence_probe_time`.
    fn is_reno_coexistence_probe_time(&self, tp: &CcSock) -> bool {
        let rounds = self.p.bw_probe_max_rounds.min(self.target_inflight(tp));
        self.rounds_since_probe >= rounds
    }

    fn ecn_reprobe_gain(&self) -> u32 {
        self.p.ecn_reprobe_gain
    }

    fn probe_rtt_armed(&self) -> bool {
        self.probe_rtt_done_stamp != 0
    }

    fn arm_probe_rtt_done(&mut self, tp: &CcSock) {
        self.probe_rtt_done_stamp = tp.jiffies() + self.p.probe_rtt_mode_ms as u64 * HZ_PER_MS;
    }

    /// `bbr_max_bw`.
    #[inline]
    fn max_bw(&self) -> u32 {
        self.bw_hi[0].max(self.bw_hi[1])
    }

    /// `bbr_bw`.
    #[inline]
    fn bw(&self) -> u32 {
        self.max_bw().min(self.bw_lo)
    }

    /// `bbr_tso_segs_goal`.
    fn tso_segs_goal(&self, tp: &CcSock) -> u32 {
        self.tso_segs_generic(tp, tp.mss, GSO_LEGACY_MAX_SIZE)
    }

    /// `bbr_inflight_with_headroom`.
    fn inflight_with_headroom(&self) -> u32 {
        if self.inflight_hi == UNSET {
            return UNSET;
        }
        let headroom = ((self.inflight_hi as u64 * self.p.inflight_headroom as u64) >> BBR_SCALE) as u32;
        let headroom = headroom.max(1);
        (self.inflight_hi as i32).wrapping_sub(headroom as i32).max(self.p.cwnd_min_target as i32) as u32
    }

    /// `bbr_pick_probe_wait`: `get_random_u32_below` from the flow's stream.
    fn pick_probe_wait(&mut self, tp: &mut CcSock) {
        self.rounds_since_probe = below(tp, self.p.bw_probe_rand_rounds);
        self.probe_wait_us = self.p.bw_probe_base_us.saturating_add(below(tp, self.p.bw_probe_rand_us));
    }

    /// `bbr_start_bw_probe_up`.
    fn start_bw_probe_up(&mut self, tp: &CcSock, sample_bw: u32) {
        self.start_probe_up_phase(tp);
        self.restart_full_bw(sample_bw);
        self.raise_inflight_hi_slope(tp);
    }

    /// `bbr_adapt_upper_bounds`: returns true if it decided a state transition.
    fn adapt_upper_bounds(&mut self, tp: &mut CcSock, rs: &RateSample, _sample_bw: u32) -> bool {
        if self.adapt_ack_phase(tp, rs) {
            return true;
        }
        if self.is_inflight_too_high(rs) {
            if self.bw_probe_samples {
                self.handle_inflight_too_high(tp, rs);
            }
        } else {
            if self.inflight_hi == UNSET {
                return false;
            }
            if rs.tx_in_flight > self.inflight_hi {
                self.inflight_hi = rs.tx_in_flight;
            }
            if self.mode == Mode::ProbeBw && self.cycle_idx == Phase::Up {
                self.probe_inflight_hi_upward(tp, rs);
            }
        }
        false
    }

    /// `bbr_check_drain`.
    fn check_drain(&mut self, tp: &mut CcSock) {
        if self.mode == Mode::Startup && self.full_bw_reached {
            self.mode = Mode::Drain;
            // Exported for monitoring only (ssthresh is not used by BBR).
            tp.ssthresh = self.inflight(tp, self.max_bw(), BBR_UNIT);
            self.reset_congestion_signals();
        }
        if self.mode == Mode::Drain
            && self.packets_in_net_at_edt(tp, tp.in_flight()) <= self.inflight(tp, self.max_bw(), BBR_UNIT)
        {
            self.mode = Mode::ProbeBw;
            self.start_bw_probe_down(tp);
        }
    }

    /// `bbr_update_min_rtt`.
    fn update_min_rtt(&mut self, tp: &mut CcSock, rs: &RateSample) {
        let j = tp.jiffies();
        let probe_rtt_expired = j > self.probe_rtt_min_stamp + self.p.probe_rtt_win_ms as u64 * HZ_PER_MS;
        if rs.rtt_us >= 0
            && ((rs.rtt_us as u64) < self.probe_rtt_min_us as u64 || (probe_rtt_expired && !rs.is_ack_delayed))
        {
            self.probe_rtt_min_us = rs.rtt_us.min(u32::MAX as i64) as u32;
            self.probe_rtt_min_stamp = j;
        }
        let min_rtt_expired = j > self.min_rtt_stamp + self.p.min_rtt_win_sec as u64 * HZ;
        if self.probe_rtt_min_us <= self.min_rtt_us || min_rtt_expired {
            self.min_rtt_us = self.probe_rtt_min_us;
            self.min_rtt_stamp = self.probe_rtt_min_stamp;
        }
        if self.p.probe_rtt_mode_ms > 0 && probe_rtt_expired && !self.idle_restart && self.mode != Mode::ProbeRtt {
            self.enter_probe_rtt(tp);
            self.probe_rtt_done_stamp = 0;
        }
        self.update_probe_rtt(tp, rs);
    }

    /// `bbr_handle_queue_too_high_in_startup`.
    fn handle_queue_too_high_in_startup(&mut self, tp: &CcSock) {
        self.full_bw_reached = true;
        let bdp = self.inflight(tp, self.max_bw(), BBR_UNIT);
        self.inflight_hi = bdp.max(self.inflight_latest);
    }

    /// `bbr_cwnd_min_target`.
    fn cwnd_min_target(&self) -> u32 {
        self.p.cwnd_min_target
    }

    /// The UP phase ends on a plateau (or `inflight_hi` keeps restarting the detector).
    fn probe_up_done(&mut self, tp: &CcSock, _inflight: u32, _bw: u32, sample_bw: u32) -> bool {
        self.probe_up_plateau_done(tp, sample_bw)
    }

    fn rs_inflight_too_high(&self, rs: &RateSample) -> bool {
        self.is_inflight_too_high(rs)
    }

    /// `bbr_advance_max_bw_filter`.
    fn advance_max_bw_filter(&mut self) {
        model::advance_max_bw_filter(&mut self.bw_hi);
    }
}

/// `HZ` per ms: `msecs_to_jiffies` at HZ = 1000.
const HZ_PER_MS: u64 = crate::time::HZ / 1000;
const HZ: u64 = crate::time::HZ;

/// `get_random_u32_below(n)`: uniform in [0, n) from the flow's stream.
fn below(tp: &mut CcSock, n: u32) -> u32 {
    if n <= 1 {
        0
    } else {
        tp.rng.below_inclusive(n as u64 - 1) as u32
    }
}

impl CongestionControl for Bbr3 {
    /// No `pkts_acked` or `in_ack_event` hook (the sender skips both calls).
    fn has_pkts_acked(&self) -> bool {
        false
    }
    fn has_in_ack_event(&self) -> bool {
        false
    }
    fn name(&self) -> &'static str {
        "bbr3"
    }

    fn flags(&self) -> CcFlags {
        BBR3_FLAGS
    }

    /// `bbr_init`.
    fn init(&mut self, tp: &mut CcSock) {
        let j = tp.jiffies();
        let ecn_alpha = self.p.ecn_alpha_init;
        self.s.init_model(tp, ecn_alpha);
        tp.ssthresh = TCP_INFINITE_SSTHRESH;
        self.next_rtt_delivered = tp.delivered;
        self.probe_rtt_done_stamp = 0;
        self.probe_rtt_min_stamp = j;
        self.min_rtt_stamp = j;
        self.init_pacing_rate_from_rtt(tp);
        self.ack_epoch_mstamp = now_us(tp);
        self.extra_acked = [0; 2];
        self.bw_hi = [0; 2];
        if Self::can_use_ecn(tp) {
            tp.ect_permanent = true;
        }
    }

    /// `bbr_ssthresh`: save state for undo; ssthresh is unchanged.
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

    fn cong_control(&mut self, tp: &mut CcSock, rs: &RateSample) {
        self.main(tp, rs);
    }

    /// `bbr_set_state`.
    fn set_state(&mut self, tp: &mut CcSock, new_state: CaState) {
        if new_state == CaState::Loss {
            self.prev_ca_state = CaState::Loss;
            self.reset_full_bw();
            if !self.is_probing_bandwidth() && self.inflight_lo == UNSET {
                self.inflight_lo = tp.cwnd.max(self.prior_cwnd);
            }
        } else if self.prev_ca_state == CaState::Loss && new_state != CaState::Loss {
            self.exit_loss_recovery(tp);
        }
    }

    /// `bbr_cwnd_event` (the CE events of a receiving socket are not delivered to
    /// BBRv3 by the engine; see the module doc).
    fn cwnd_event(&mut self, tp: &mut CcSock, ev: CaEvent) {
        if ev == CaEvent::TlpRecovery {
            // bbr_loss_probe_recovery = true.
            self.run_loss_probe_recovery(tp);
        } else if ev == CaEvent::TxStart {
            if tp.app_limited == 0 {
                return;
            }
            self.idle_restart = true;
            self.ack_epoch_mstamp = now_us(tp);
            self.ack_epoch_acked = 0;
            if self.mode == Mode::ProbeBw {
                let bw = self.bw();
                self.set_pacing_rate(tp, bw, BBR_UNIT);
            } else if self.mode == Mode::ProbeRtt {
                self.check_probe_rtt_done(tp);
            }
        }
    }

    /// `bbr_skb_marked_lost`: while probing, was the loss rate of the flight up
    /// to this packet too high, and at which packet did it become so?
    fn skb_marked_lost(&mut self, tp: &mut CcSock, skb: &SkbLostInfo) {
        self.note_loss(tp);
        if !self.bw_probe_samples {
            return;
        }
        if skb.tx.delivered_mstamp == 0 {
            return;
        }
        let mut rs = RateSample {
            tx_in_flight: skb.tx.in_flight,
            lost: tp.lost as i64 - skb.tx.lost as i64,
            is_app_limited: skb.tx.is_app_limited,
            ..RateSample::default()
        };
        if self.is_inflight_too_high(&rs) {
            rs.tx_in_flight =
                BbrState::inflight_hi_from_lost_skb(self.p.loss_thresh, rs.tx_in_flight, rs.lost, skb.pcount);
            self.handle_inflight_too_high(tp, &rs);
        }
    }

    /// `bbr_undo_cwnd`.
    fn undo_cwnd(&mut self, _tp: &CcSock) -> u32 {
        self.reset_full_bw();
        self.loss_in_round = false;
        self.bw_lo = self.bw_lo.max(self.undo_bw_lo);
        self.inflight_lo = self.inflight_lo.max(self.undo_inflight_lo);
        self.inflight_hi = self.inflight_hi.max(self.undo_inflight_hi);
        self.try_fast_path = false;
        self.prior_cwnd
    }

    /// `bbr_tso_segs` (the device's GSO limit is the legacy 64 KB here).
    fn tso_segs(&self, tp: &CcSock, mss_now: u32) -> Option<u32> {
        Some(self.tso_segs_generic(tp, mss_now, GSO_LEGACY_MAX_SIZE))
    }

    /// `ecn_alpha` while the flow is ECN-eligible (it is updated only then).
    fn alpha(&self) -> Option<f64> {
        self.ecn_eligible.then(|| self.ecn_alpha as f64 / BBR_UNIT as f64)
    }

    /// What `bbr_get_info` reports.
    fn cc_state(&self, tp: &CcSock) -> CcState {
        let mode = match self.mode {
            Mode::Startup => "STARTUP",
            Mode::Drain => "DRAIN",
            Mode::ProbeRtt => "PROBE_RTT",
            Mode::ProbeBw => match self.cycle_idx {
                Phase::Up => "PROBE_BW:UP",
                Phase::Down => "PROBE_BW:DOWN",
                Phase::Cruise => "PROBE_BW:CRUISE",
                Phase::Refill => "PROBE_BW:REFILL",
            },
        };
        CcState {
            bw_bytes_per_s: Some(Self::rate_bytes_per_sec(tp, self.bw() as u64, BBR_UNIT, 0)),
            min_rtt_us: (self.min_rtt_us != u32::MAX).then_some(self.min_rtt_us),
            mode: Some(mode),
            pacing_gain: Some(self.pacing_gain as f64 / BBR_UNIT as f64),
            inflight_hi: self.inflight_hi(),
            inflight_lo: self.inflight_lo(),
        }
    }
}

/// `TCP_CONG_NON_RESTRICTED | TCP_CONG_WANTS_CE_EVENTS` and pacing (`bbr_init`
/// sets `SK_PACING_NEEDED`); no `TCP_CONG_NEEDS_ECN`: ECN follows the host's `tcp_ecn`.
const BBR3_FLAGS: CcFlags = CcFlags {
    needs_ecn: false,
    needs_accecn: false,
    wants_ect1: false,
    no_fallback_rfc3168: false,
    needs_pacing: true,
};

fn parse(p: Option<&serde_json::Value>) -> Result<Bbr3Params, String> {
    let params = parse_params("bbr3", Bbr3Params::default(), p)?;
    params.check()?;
    Ok(params)
}

fn build(p: Option<&serde_json::Value>) -> Result<Box<dyn CongestionControl>, String> {
    Ok(Box::new(Bbr3::new(parse(p)?)))
}

/// `bbr3` in the registry: google/bbr v3 with its compile-time constants as defaults.
pub const DESCRIPTOR: CcDescriptor = CcDescriptor {
    name: "bbr3",
    doc: "BBRv3 (google/bbr v3 net/ipv4/tcp_bbr.c): STARTUP 2.77, PROBE_BW DOWN/CRUISE/REFILL/UP, ECN only with ecn_low and min RTT <= 5 ms.",
    l4s: false,
    flags: BBR3_FLAGS,
    receiver: ReceiverDefaults::NONE,
    build,
    check: |p| parse(p).map(drop),
    reports_state: true,
    params: params::param_specs,
};
