//! What BBRv2 (`cc/bbr2/`: google/bbr v2alpha and L4STeam `net/ipv4/tcp_bbr2.c`) and
//! BBRv3 (`cc/bbr3/`: google/bbr v3 `net/ipv4/tcp_bbr.c`) share of their model: the fields
//! of `struct bbr` both files have ([`BbrState`]), the mode / phase enums, and the
//! functions both kernel files write alike, as provided methods of [`BbrModel`].
//!
//! Each variant keeps its own struct (it holds a [`BbrState`] and dereferences to it, so
//! `self.inflight_hi` reads the same in both files), its own module parameters, and the
//! functions its kernel file writes differently; those are the trait's required methods
//! (`bbr_max_bw`, `bbr_inflight`, `bbr_pick_probe_wait`, the start of a bandwidth probe,
//! ...), so a shared function calls the variant's own version where the two kernels
//! differ. Where a shared function reads a module parameter, the variant passes it as its
//! kernel file reads it (v2 clamps each to the width of the bit-field `tcp_bbr2.c` keeps
//! it in, v3 reads it plain). The fixed-point helpers BBRv1 shares too are in
//! `bbr_common.rs`.
//!
//! All dispatch is static (each variant calls these on its own concrete type).

use std::ops::DerefMut;

use super::bbr_common::{probe_rtt_step, ProbeRttStep, BBR_SCALE, BBR_UNIT};
use super::{CaState, CcSock, RateSample};

pub use super::bbr_common::Mode;

/// `~0U`: an unset bound (`bw_lo`, `inflight_lo`, `inflight_hi`, `bw_probe_up_cnt`).
pub const UNSET: u32 = u32::MAX;

/// `enum bbr_pacing_gain_phase`: PROBE_BW's phases, in gain-table order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    Up = 0,
    Down = 1,
    Cruise = 2,
    Refill = 3,
}

/// `enum bbr_ack_phase`: how the ACK stream relates to bandwidth probing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AckPhase {
    Init,
    Refilling,
    ProbeStarting,
    ProbeFeedback,
    ProbeStopping,
}

/// The fields of `struct bbr` that BBRv2 and BBRv3 both keep, of the same width (bit-field
/// widths noted where they saturate or wrap). The clock stamps (v2 keeps u32 jiffies, v3
/// u64), the ACK-aggregation window (u32 / u16) and the max-bandwidth filter stay in each
/// variant's struct.
#[derive(Clone, Debug)]
pub struct BbrState {
    pub(crate) min_rtt_us: u32,
    pub(crate) probe_rtt_min_us: u32,
    pub(crate) next_rtt_delivered: u64,
    /// Start of the current PROBE_BW phase, µs.
    pub(crate) cycle_mstamp: u64,
    pub(crate) mode: Mode,
    pub(crate) prev_ca_state: CaState,
    pub(crate) round_start: bool,
    /// 5 bits.
    pub(crate) bw_probe_up_rounds: u32,
    pub(crate) try_fast_path: bool,
    pub(crate) idle_restart: bool,
    pub(crate) probe_rtt_round_done: bool,
    pub(crate) cycle_idx: Phase,
    pub(crate) has_seen_rtt: bool,
    pub(crate) pacing_gain: u32,
    pub(crate) cwnd_gain: u32,
    pub(crate) full_bw_reached: bool,
    pub(crate) full_bw_now: bool,
    /// 2 bits.
    pub(crate) full_bw_cnt: u32,
    /// 7 bits.
    pub(crate) init_cwnd: u32,
    pub(crate) prior_cwnd: u32,
    pub(crate) full_bw: u32,
    /// 20 bits.
    pub(crate) ack_epoch_acked: u32,
    /// 5 bits.
    pub(crate) extra_acked_win_rtts: u32,
    pub(crate) extra_acked_win_idx: usize,
    /// 2 bits.
    pub(crate) startup_ecn_rounds: u32,
    pub(crate) loss_in_cycle: bool,
    pub(crate) ecn_in_cycle: bool,
    pub(crate) loss_round_delivered: u64,
    pub(crate) undo_bw_lo: u32,
    pub(crate) undo_inflight_lo: u32,
    pub(crate) undo_inflight_hi: u32,
    pub(crate) bw_latest: u32,
    pub(crate) bw_lo: u32,
    pub(crate) inflight_latest: u32,
    pub(crate) inflight_lo: u32,
    pub(crate) inflight_hi: u32,
    pub(crate) bw_probe_up_cnt: u32,
    pub(crate) bw_probe_up_acks: u32,
    pub(crate) probe_wait_us: u32,
    pub(crate) ecn_eligible: bool,
    /// EWMA of the CE fraction, 0..=256.
    pub(crate) ecn_alpha: u32,
    pub(crate) bw_probe_samples: bool,
    pub(crate) prev_probe_too_high: bool,
    pub(crate) stopped_risky_probe: bool,
    /// 8 bits.
    pub(crate) rounds_since_probe: u32,
    pub(crate) loss_round_start: bool,
    pub(crate) loss_in_round: bool,
    pub(crate) ecn_in_round: bool,
    pub(crate) ack_phase: AckPhase,
    /// 4 bits.
    pub(crate) loss_events_in_round: u32,
    pub(crate) initialized: bool,
    pub(crate) alpha_last_delivered: u64,
    pub(crate) alpha_last_delivered_ce: u64,
}

impl BbrState {
    /// The state before `bbr_init`, with the gains and ECN α the variant starts from
    /// (v3's `struct bbr` starts zeroed: its gains are set on the first ACK).
    pub fn new(pacing_gain: u32, cwnd_gain: u32, ecn_alpha: u32) -> Self {
        BbrState {
            min_rtt_us: UNSET,
            probe_rtt_min_us: UNSET,
            next_rtt_delivered: 0,
            cycle_mstamp: 0,
            mode: Mode::Startup,
            prev_ca_state: CaState::Open,
            round_start: false,
            bw_probe_up_rounds: 0,
            try_fast_path: false,
            idle_restart: false,
            probe_rtt_round_done: false,
            cycle_idx: Phase::Up,
            has_seen_rtt: false,
            pacing_gain,
            cwnd_gain,
            full_bw_reached: false,
            full_bw_now: false,
            full_bw_cnt: 0,
            init_cwnd: 10,
            prior_cwnd: 0,
            full_bw: 0,
            ack_epoch_acked: 0,
            extra_acked_win_rtts: 0,
            extra_acked_win_idx: 0,
            startup_ecn_rounds: 0,
            loss_in_cycle: false,
            ecn_in_cycle: false,
            loss_round_delivered: 0,
            undo_bw_lo: 0,
            undo_inflight_lo: 0,
            undo_inflight_hi: 0,
            bw_latest: 0,
            bw_lo: UNSET,
            inflight_latest: 0,
            inflight_lo: UNSET,
            inflight_hi: UNSET,
            bw_probe_up_cnt: UNSET,
            bw_probe_up_acks: 0,
            probe_wait_us: 0,
            ecn_eligible: false,
            ecn_alpha,
            bw_probe_samples: false,
            prev_probe_too_high: false,
            stopped_risky_probe: false,
            rounds_since_probe: 0,
            loss_round_start: false,
            loss_in_round: false,
            ecn_in_round: false,
            ack_phase: AckPhase::Init,
            loss_events_in_round: 0,
            initialized: false,
            alpha_last_delivered: 0,
            alpha_last_delivered_ce: 0,
        }
    }

    /// The part of `bbr_init` both kernel files write alike: everything but the clock
    /// stamps, the max filter, the ACK-aggregation window and the pacing rate, which each
    /// variant's `init` sets after this (its pacing rate after `has_seen_rtt` is cleared
    /// here). `ecn_alpha` is `bbr_ecn_alpha_init` as the variant reads it.
    pub fn init_model(&mut self, tp: &CcSock, ecn_alpha: u32) {
        self.initialized = true;
        self.init_cwnd = tp.cwnd.min(0x7f);
        self.prior_cwnd = tp.prior_cwnd;
        self.prev_ca_state = CaState::Open;
        self.probe_rtt_round_done = false;
        self.probe_rtt_min_us = tp.min_rtt_us;
        self.min_rtt_us = tp.min_rtt_us;
        self.has_seen_rtt = false;
        self.round_start = false;
        self.idle_restart = false;
        self.full_bw_reached = false;
        self.reset_full_bw();
        self.cycle_mstamp = 0;
        self.cycle_idx = Phase::Up;
        self.mode = Mode::Startup;
        self.ack_epoch_acked = 0;
        self.extra_acked_win_rtts = 0;
        self.extra_acked_win_idx = 0;
        self.try_fast_path = false;
        // Start sampling ECN after the first full flight is ACKed.
        self.loss_round_delivered = tp.delivered + 1;
        self.loss_round_start = false;
        self.undo_bw_lo = 0;
        self.undo_inflight_lo = 0;
        self.undo_inflight_hi = 0;
        self.loss_events_in_round = 0;
        self.startup_ecn_rounds = 0;
        self.reset_congestion_signals();
        self.bw_lo = UNSET;
        self.inflight_lo = UNSET;
        self.inflight_hi = UNSET;
        self.bw_probe_up_cnt = UNSET;
        self.bw_probe_up_acks = 0;
        self.bw_probe_up_rounds = 0;
        self.probe_wait_us = 0;
        self.stopped_risky_probe = false;
        self.ack_phase = AckPhase::Init;
        self.rounds_since_probe = 0;
        self.bw_probe_samples = false;
        self.prev_probe_too_high = false;
        self.ecn_eligible = false;
        self.ecn_alpha = ecn_alpha;
        self.alpha_last_delivered = 0;
        self.alpha_last_delivered_ce = 0;
    }

    /// `bbr_update_round_start`.
    pub fn update_round_start(&mut self, tp: &CcSock, rs: &RateSample) {
        self.round_start = false;
        if rs.interval_us > 0 && rs.prior_delivered >= self.next_rtt_delivered {
            self.next_rtt_delivered = tp.delivered;
            self.round_start = true;
        }
    }

    /// `bbr_save_cwnd`.
    pub fn save_cwnd(&mut self, tp: &CcSock) {
        if self.prev_ca_state < CaState::Recovery && self.mode != Mode::ProbeRtt {
            self.prior_cwnd = tp.cwnd;
        } else {
            self.prior_cwnd = self.prior_cwnd.max(tp.cwnd);
        }
    }

    /// What `bbr_ssthresh` does: save the state an undo restores; ssthresh is unchanged.
    pub fn save_undo_state(&mut self, tp: &CcSock) -> u32 {
        self.save_cwnd(tp);
        self.undo_bw_lo = self.bw_lo;
        self.undo_inflight_lo = self.inflight_lo;
        self.undo_inflight_hi = self.inflight_hi;
        tp.ssthresh
    }

    /// Entering PROBE_RTT in `bbr_update_min_rtt` (the caller clears its done stamp).
    pub fn enter_probe_rtt(&mut self, tp: &CcSock) {
        self.mode = Mode::ProbeRtt;
        self.save_cwnd(tp);
        self.ack_phase = AckPhase::ProbeStopping;
        self.next_rtt_delivered = tp.delivered;
    }

    /// `bbr_reset_full_bw`.
    pub fn reset_full_bw(&mut self) {
        self.full_bw = 0;
        self.full_bw_cnt = 0;
        self.full_bw_now = false;
    }

    /// `bbr_reset_full_bw` and a new reference sample: the plateau detector starts over
    /// from `sample_bw`.
    pub fn restart_full_bw(&mut self, sample_bw: u32) {
        self.reset_full_bw();
        self.full_bw = sample_bw;
    }

    /// `bbr_is_probing_bandwidth`.
    pub fn is_probing_bandwidth(&self) -> bool {
        self.mode == Mode::Startup
            || (self.mode == Mode::ProbeBw && matches!(self.cycle_idx, Phase::Refill | Phase::Up))
    }

    /// `bbr_reset_lower_bounds`.
    pub fn reset_lower_bounds(&mut self) {
        self.bw_lo = UNSET;
        self.inflight_lo = UNSET;
    }

    /// `bbr_reset_congestion_signals`.
    pub fn reset_congestion_signals(&mut self) {
        self.loss_in_round = false;
        self.ecn_in_round = false;
        self.loss_in_cycle = false;
        self.ecn_in_cycle = false;
        self.bw_latest = 0;
        self.inflight_latest = 0;
    }

    /// `bbr_set_cycle_idx`.
    pub fn set_cycle_idx(&mut self, idx: Phase) {
        self.cycle_idx = idx;
        self.try_fast_path = false;
    }

    /// `bbr_start_bw_probe_cruise`.
    pub fn start_bw_probe_cruise(&mut self) {
        if self.inflight_lo != UNSET {
            self.inflight_lo = self.inflight_lo.min(self.inflight_hi);
        }
        self.set_cycle_idx(Phase::Cruise);
    }

    /// The shared start of `bbr_start_bw_probe_up` (v2alpha stops here; L4STeam and v3
    /// also restart the plateau detector, `reset_full_bw`).
    pub fn start_probe_up_phase(&mut self, tp: &CcSock) {
        self.ack_phase = AckPhase::ProbeStarting;
        self.next_rtt_delivered = tp.delivered;
        self.cycle_mstamp = tp.now / 1000;
        self.set_cycle_idx(Phase::Up);
    }

    /// The shared part of `bbr_start_bw_probe_refill` after the variant's own start.
    pub fn start_refill_phase(&mut self, tp: &CcSock) {
        self.bw_probe_up_acks = 0;
        self.stopped_risky_probe = false;
        self.ack_phase = AckPhase::Refilling;
        self.next_rtt_delivered = tp.delivered;
        self.set_cycle_idx(Phase::Refill);
    }

    /// The plateau exit of PROBE_BW's UP phase (L4STeam's `bbr2_bw_probe_exit`, v3's
    /// `bbr_update_cycle_phase`): while `inflight_hi` limits the window the plateau
    /// detector restarts; otherwise a bw plateau ends the probe.
    pub fn probe_up_plateau_done(&mut self, tp: &CcSock, sample_bw: u32) -> bool {
        if tp.is_cwnd_limited && tp.cwnd >= self.inflight_hi {
            // inflight_hi is limiting bw growth.
            self.restart_full_bw(sample_bw);
            false
        } else {
            // A plateau in estimated bw: the pipe looks full.
            self.full_bw_now
        }
    }

    /// `bbr_inflight_hi_from_lost_skb`: the in-flight level at which the loss rate crossed
    /// `loss_thresh` (1/256) within an skb of `pcount` segments, sent with `tx_in_flight`
    /// in flight and `lost` lost before it.
    pub fn inflight_hi_from_lost_skb(loss_thresh: u32, tx_in_flight: u32, lost: i64, pcount: u32) -> u32 {
        let loss_thresh = loss_thresh as u64;
        let inflight_prev = tx_in_flight as i64 - pcount as i64;
        if inflight_prev < 0 {
            return UNSET;
        }
        let lost_prev = lost - pcount as i64;
        if lost_prev < 0 {
            return UNSET;
        }
        let loss_budget = (inflight_prev as u64 * loss_thresh + BBR_UNIT as u64 - 1) >> BBR_SCALE;
        let lost_prefix = if lost_prev as u64 >= loss_budget {
            0
        } else {
            let divisor = BBR_UNIT as u64 - loss_thresh;
            if divisor == 0 {
                return UNSET;
            }
            ((loss_budget - lost_prev as u64) << BBR_SCALE) / divisor
        };
        (inflight_prev as u64 + lost_prefix).min(UNSET as u64) as u32
    }
}

/// The model functions BBRv2 and BBRv3 write alike, over the variant's own versions of
/// those they write differently (the required methods).
pub trait BbrModel: DerefMut<Target = BbrState> {
    /// `bbr_max_bw`.
    fn max_bw(&self) -> u32;
    /// `bbr_bw`.
    fn bw(&self) -> u32;
    /// `bbr_bdp`.
    fn bdp(&self, bw: u32, gain: u32) -> u32;
    /// `bbr_quantization_budget`.
    fn quantization_budget(&self, tp: &CcSock, cwnd: u32) -> u32;
    /// `bbr_tso_segs_goal`.
    fn tso_segs_goal(&self, tp: &CcSock) -> u32;
    /// `bbr_inflight_with_headroom`.
    fn inflight_with_headroom(&self) -> u32;
    /// `bbr_cwnd_min_target` as the variant reads it.
    fn cwnd_min_target(&self) -> u32;
    /// `bbr_pick_probe_wait`.
    fn pick_probe_wait(&mut self, tp: &mut CcSock);
    /// `bbr_start_bw_probe_up`.
    fn start_bw_probe_up(&mut self, tp: &CcSock, sample_bw: u32);
    /// `bbr_adapt_upper_bounds`: true if it decided a state transition.
    fn adapt_upper_bounds(&mut self, tp: &mut CcSock, rs: &RateSample, sample_bw: u32) -> bool;
    /// `bbr_start_bw_probe_refill`.
    fn start_bw_probe_refill(&mut self, tp: &CcSock, bw_probe_up_rounds: u32);
    /// `bbr_has_elapsed_in_phase`.
    fn has_elapsed_in_phase(&self, tp: &CcSock, interval_us: u32) -> bool;
    /// `bbr_is_reno_coexistence_probe_time`.
    fn is_reno_coexistence_probe_time(&self, tp: &CcSock) -> bool;
    /// `bbr_ecn_reprobe_gain` as the variant reads it.
    fn ecn_reprobe_gain(&self) -> u32;
    /// `bbr_probe_rtt_cwnd`.
    fn probe_rtt_cwnd(&self) -> u32;
    /// Whether PROBE_RTT's end is stamped (`probe_rtt_done_stamp` != 0).
    fn probe_rtt_armed(&self) -> bool;
    /// Stamp PROBE_RTT's end: `probe_rtt_done_stamp` = now + `probe_rtt_mode_ms`.
    fn arm_probe_rtt_done(&mut self, tp: &CcSock);
    /// `bbr_check_probe_rtt_done`.
    fn check_probe_rtt_done(&mut self, tp: &mut CcSock);
    /// Whether DOWN waits for the flight to drain to the BDP before CRUISE (v2: the
    /// `bbr_drain_to_target` parameter; v3: always).
    fn drain_to_target(&self) -> bool;
    /// Whether PROBE_BW's UP phase ends now (after the shared "too high before" test).
    fn probe_up_done(&mut self, tp: &CcSock, inflight: u32, bw: u32, sample_bw: u32) -> bool;
    /// `bbr_check_drain`.
    fn check_drain(&mut self, tp: &mut CcSock);
    /// `bbr_update_min_rtt`.
    fn update_min_rtt(&mut self, tp: &mut CcSock, rs: &RateSample);
    /// `bbr_is_inflight_too_high` on an ACK's rate sample.
    fn rs_inflight_too_high(&self, rs: &RateSample) -> bool;
    /// `bbr_handle_queue_too_high_in_startup`.
    fn handle_queue_too_high_in_startup(&mut self, tp: &CcSock);
    /// `bbr_advance_max_bw_filter`.
    fn advance_max_bw_filter(&mut self);

    /// `bbr_inflight`: the in-flight target for `bw` at `gain`.
    #[inline]
    fn inflight(&self, tp: &CcSock, bw: u32, gain: u32) -> u32 {
        self.quantization_budget(tp, self.bdp(bw, gain))
    }

    /// `bbr_check_time_to_cruise`: DOWN ends once the flight is within the headroom
    /// below `inflight_hi` and at most the BDP (or, without `drain_to_target`, a min RTT
    /// has passed).
    fn check_time_to_cruise(&self, tp: &CcSock, inflight: u32, bw: u32) -> bool {
        if inflight > self.inflight_with_headroom() {
            return false;
        }
        let is_under_bdp = inflight <= self.inflight(tp, bw, BBR_UNIT);
        if self.drain_to_target() {
            return is_under_bdp;
        }
        is_under_bdp || self.has_elapsed_in_phase(tp, self.min_rtt_us)
    }

    /// `bbr_target_inflight`.
    #[inline]
    fn target_inflight(&self, tp: &CcSock) -> u32 {
        self.inflight(tp, self.bw(), BBR_UNIT).min(tp.cwnd)
    }

    /// `bbr_packets_in_net_at_edt`.
    #[inline]
    fn packets_in_net_at_edt(&self, tp: &CcSock, inflight_now: u32) -> u32 {
        let probing = if self.pacing_gain > BBR_UNIT { self.tso_segs_goal(tp) } else { 0 };
        super::bbr_common::packets_in_net_at_edt(tp, self.bw(), inflight_now, probing)
    }

    /// `bbr_bound_cwnd_for_inflight_model`.
    fn bound_cwnd_for_inflight_model(&self, tp: &mut CcSock) {
        if !self.initialized {
            return;
        }
        let mut cap = UNSET;
        if self.mode == Mode::ProbeBw && self.cycle_idx != Phase::Cruise {
            cap = self.inflight_hi;
        } else if self.mode == Mode::ProbeRtt || (self.mode == Mode::ProbeBw && self.cycle_idx == Phase::Cruise) {
            cap = self.inflight_with_headroom();
        }
        cap = cap.min(self.inflight_lo);
        cap = cap.max(self.cwnd_min_target());
        tp.cwnd = tp.cwnd.min(cap);
    }

    /// `bbr_start_bw_probe_down`.
    fn start_bw_probe_down(&mut self, tp: &mut CcSock) {
        self.reset_congestion_signals();
        self.bw_probe_up_cnt = UNSET;
        self.pick_probe_wait(tp);
        self.cycle_mstamp = tp.now / 1000;
        self.ack_phase = AckPhase::ProbeStopping;
        self.next_rtt_delivered = tp.delivered;
        self.set_cycle_idx(Phase::Down);
    }

    /// `bbr_exit_probe_rtt`.
    fn exit_probe_rtt(&mut self, tp: &mut CcSock) {
        self.reset_lower_bounds();
        if self.full_bw_reached {
            self.mode = Mode::ProbeBw;
            self.start_bw_probe_down(tp);
            self.start_bw_probe_cruise();
        } else {
            self.mode = Mode::Startup;
        }
    }

    /// `bbr_check_time_to_probe_bw`: refill early after an ECN-only cycle (by
    /// log2(`inflight_hi` × `ecn_reprobe_gain`) rounds), else once the random probe wait
    /// or the Reno-coexistence rounds have passed.
    fn check_time_to_probe_bw(&mut self, tp: &mut CcSock) -> bool {
        let reprobe = self.ecn_reprobe_gain();
        if reprobe != 0 && self.ecn_eligible && self.ecn_in_cycle && !self.loss_in_cycle && tp.ca_state == CaState::Open
        {
            let n = ilog2((self.inflight_hi as u64 * reprobe as u64) >> BBR_SCALE);
            self.start_bw_probe_refill(tp, n);
            return true;
        }
        if self.has_elapsed_in_phase(tp, self.probe_wait_us) || self.is_reno_coexistence_probe_time(tp) {
            self.start_bw_probe_refill(tp, 0);
            return true;
        }
        false
    }

    /// The PROBE_RTT part of `bbr_update_min_rtt`, after the min-RTT filter and the
    /// entry test (`bbr_common::probe_rtt_step`), and the end of an idle restart.
    fn update_probe_rtt(&mut self, tp: &mut CcSock, rs: &RateSample) {
        if self.mode == Mode::ProbeRtt {
            let (armed, cwnd) = (self.probe_rtt_armed(), self.probe_rtt_cwnd());
            let s: &mut BbrState = self;
            match probe_rtt_step(tp, armed, s.round_start, &mut s.probe_rtt_round_done, &mut s.next_rtt_delivered, cwnd)
            {
                ProbeRttStep::Arm => self.arm_probe_rtt_done(tp),
                ProbeRttStep::Check => self.check_probe_rtt_done(tp),
                ProbeRttStep::Wait => {}
            }
        }
        if rs.delivered > 0 {
            self.idle_restart = false;
        }
    }

    /// `bbr_update_cycle_phase`.
    fn update_cycle_phase(&mut self, tp: &mut CcSock, rs: &RateSample, sample_bw: u32) {
        if !self.full_bw_reached {
            return;
        }
        if self.adapt_upper_bounds(tp, rs, sample_bw) {
            return;
        }
        if self.mode != Mode::ProbeBw {
            return;
        }
        let inflight = self.packets_in_net_at_edt(tp, rs.prior_in_flight);
        let bw = self.max_bw();
        match self.cycle_idx {
            Phase::Cruise => {
                self.check_time_to_probe_bw(tp);
            }
            Phase::Refill => {
                if self.round_start {
                    self.bw_probe_samples = true;
                    self.start_bw_probe_up(tp, sample_bw);
                }
            }
            Phase::Up => {
                let done = if self.prev_probe_too_high && inflight >= self.inflight_hi {
                    self.stopped_risky_probe = true;
                    true
                } else {
                    self.probe_up_done(tp, inflight, bw, sample_bw)
                };
                if done {
                    self.prev_probe_too_high = false;
                    self.start_bw_probe_down(tp);
                }
            }
            Phase::Down => {
                if self.check_time_to_probe_bw(tp) {
                    return;
                }
                if self.check_time_to_cruise(tp, inflight, bw) {
                    self.start_bw_probe_cruise();
                }
            }
        }
    }

    /// `bbr_check_loss_too_high_in_startup`: ≥ `full_loss_cnt` loss events in a Recovery
    /// round whose sample is too high end STARTUP.
    fn check_loss_too_high_in_startup(&mut self, tp: &CcSock, rs: &RateSample, full_loss_cnt: u32) {
        if self.full_bw_reached {
            return;
        }
        if rs.losses > 0 && self.loss_events_in_round < 0xf {
            self.loss_events_in_round += 1;
        }
        if full_loss_cnt != 0
            && self.loss_round_start
            && tp.ca_state == CaState::Recovery
            && self.loss_events_in_round >= full_loss_cnt
            && self.rs_inflight_too_high(rs)
        {
            self.handle_queue_too_high_in_startup(tp);
            return;
        }
        if self.loss_round_start {
            self.loss_events_in_round = 0;
        }
    }

    /// `bbr_run_fast_path` (v2: `bbr2_fast_path`): an app-limited ACK below max_bw without
    /// loss or ECN in the round skips the model update. Returns (skip the control update
    /// too, update the model).
    fn run_fast_path(&mut self, tp: &mut CcSock, rs: &RateSample, sample_bw: u32, enabled: bool) -> (bool, bool) {
        if enabled
            && self.try_fast_path
            && rs.is_app_limited
            && sample_bw < self.max_bw()
            && !self.loss_in_round
            && !self.ecn_in_round
        {
            let prev_mode = self.mode;
            let prev_min_rtt_us = self.min_rtt_us;
            self.check_drain(tp);
            self.update_cycle_phase(tp, rs, sample_bw);
            self.update_min_rtt(tp, rs);
            if self.mode == prev_mode && self.min_rtt_us == prev_min_rtt_us && self.try_fast_path {
                return (true, false);
            }
            return (false, false);
        }
        (false, true)
    }

    /// The ACK-phase bookkeeping that starts `bbr_adapt_upper_bounds`: the first round
    /// of a probe's feedback, and at the end of a probe the filter advance and the refill
    /// after a risky probe stopped early. True if it started a refill (a transition).
    fn adapt_ack_phase(&mut self, tp: &mut CcSock, rs: &RateSample) -> bool {
        if self.ack_phase == AckPhase::ProbeStarting && self.round_start {
            self.ack_phase = AckPhase::ProbeFeedback;
        }
        if self.ack_phase == AckPhase::ProbeStopping && self.round_start {
            self.bw_probe_samples = false;
            self.ack_phase = AckPhase::Init;
            if self.mode == Mode::ProbeBw && !rs.is_app_limited {
                self.advance_max_bw_filter();
            }
            if self.mode == Mode::ProbeBw && self.stopped_risky_probe && !self.prev_probe_too_high {
                self.start_bw_probe_refill(tp, 0);
                return true;
            }
        }
        false
    }
}

/// `ilog2` (0 for 0, where the kernel's is undefined).
#[inline]
pub fn ilog2(v: u64) -> u32 {
    if v == 0 {
        0
    } else {
        63 - v.leading_zeros()
    }
}

/// `Deref` / `DerefMut` of a variant's struct to the [`BbrState`] in its field `s`.
macro_rules! deref_to_state {
    ($t:ty) => {
        impl std::ops::Deref for $t {
            type Target = $crate::cc::bbr_model::BbrState;
            #[inline]
            fn deref(&self) -> &Self::Target {
                &self.s
            }
        }
        impl std::ops::DerefMut for $t {
            #[inline]
            fn deref_mut(&mut self) -> &mut Self::Target {
                &mut self.s
            }
        }
    };
}
pub(crate) use deref_to_state;

/// The two-slot max filter of the bandwidth samples (v2's `max_bw[]`, v3's `bw_hi[]`):
/// `bbr_take_max_bw_sample`.
#[inline]
pub fn take_max_bw_sample(filter: &mut [u32; 2], bw: u32) {
    filter[1] = filter[1].max(bw);
}

/// `bbr_advance_max_bw_filter`: the current slot becomes the previous one.
#[inline]
pub fn advance_max_bw_filter(filter: &mut [u32; 2]) {
    if filter[1] == 0 {
        return;
    }
    filter[0] = filter[1];
    filter[1] = 0;
}
