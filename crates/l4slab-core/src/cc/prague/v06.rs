//! TCP Prague v0.6 where it differs from v0.7: L4STeam/linux `net/ipv4/tcp_prague.c`,
//! MODULE_VERSION "0.6", commit 02573a2 (the 5.x-era tree), for reproducing older
//! experiments.
//!
//! v0.6 has a window mode only, no segment sizing, α starting at 1 with 20
//! fractional bits, RTTs in 128-µs units (`RTT_UNIT`), the `prague_rtt_scaling`
//! heuristics (none / rate / scalable / additive) after a 500-round transition, a
//! pacing rate from `frac` without a rate floor (`frac` stays above one packet: ADJUST
//! drops reductions below the window floor), at least `tcp_min_tso_segs` per TSO burst,
//! and the classic-ECN-AQM detector always fed ([`super::classic_ecn_detector`]).

use super::*;

/// `PRAGUE_ALPHA_BITS`.
const ALPHA_BITS: u32 = 20;
/// `tcp_min_tso_segs`: the lower bound of `prague_tso_segs`.
const TCP_MIN_TSO_SEGS: u32 = 2;
/// `RTT_UNIT`: RTTs in 128-µs units.
const RTT_UNIT: u32 = 7;
/// `MAX_SCALED_RTT` compared against the 128-µs value (sic, as the kernel).
const MAX_SCALED_RTT: u64 = 100 * 1000;

/// MODULE_VERSION "0.6".
#[derive(Debug)]
pub(super) struct V06;

impl V06 {
    /// `prague_target_rtt` in 128-µs units (ADDITIVE adds SRTT).
    fn target(p: &Prague, tp: &CcSock) -> u64 {
        let t = (p.params.rtt_target_us >> RTT_UNIT) as u64;
        if p.params.rtt_scaling == RttScaling::Additive {
            t + (tp.srtt_us >> RTT_UNIT)
        } else {
            t
        }
    }

    /// The configured scaling mode (NONE when the target is 0).
    fn scaling(p: &Prague) -> RttScaling {
        if p.params.rtt_target_us >> RTT_UNIT == 0 {
            RttScaling::None
        } else {
            p.params.rtt_scaling
        }
    }
}

impl Version for V06 {
    fn alpha_bits(&self) -> u32 {
        ALPHA_BITS
    }

    fn alpha_mode(&self, _params: &PragueParams) -> bool {
        false
    }

    fn alpha_starts_at_one(&self, _p: &Prague) -> bool {
        true
    }

    /// The pacing rate is set only once an SRTT exists.
    fn init_rate(&self, p: &mut Prague, tp: &mut CcSock) {
        if srtt8(tp) > 0 {
            p.update_pacing_rate(tp);
        }
    }

    fn init_modes(&self, p: &mut Prague) {
        p.cwnd_mode_transit = false;
        p.rate_mode = false;
    }

    fn rtt_indep_possible(&self, p: &Prague) -> bool {
        V06::scaling(p) != RttScaling::None
    }

    fn gate_us(&self, p: &Prague, tp: &CcSock) -> u64 {
        V06::target(p, tp) << RTT_UNIT
    }

    fn has_rate_mode(&self) -> bool {
        false
    }

    /// max(⌈frac⌉, 1).
    fn frac_to_cwnd(&self, p: &Prague, _tp: &CcSock) -> u32 {
        let c = p.frac.div_ceil(ONE_CWND).min(u32::MAX as u64) as u32;
        c.max(1)
    }

    /// `prague_ai_ack_increase` with the `prague_rtt_scaling` heuristics.
    fn ai(&self, p: &Prague, tp: &CcSock) -> u64 {
        let scaling = V06::scaling(p);
        if scaling == RttScaling::None {
            return ONE_CWND;
        }
        let rtt = tp.srtt_us >> RTT_UNIT;
        if p.round < p.params.rtt_transition || rtt == 0 || rtt > MAX_SCALED_RTT {
            return ONE_CWND;
        }
        let target = V06::target(p, tp);
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

    /// α₀ = 1: the CWR entry does the first reduction.
    fn first_ce(&self, _p: &mut Prague) {}

    /// No segment sizing.
    fn alpha_updated(&self, _p: &mut Prague, _tp: &mut CcSock) {}

    /// No slow SRTT average.
    fn round_end(&self, _p: &mut Prague, _tp: &CcSock) {}

    /// frac += max(acked, round(acked·ai/cwnd)).
    fn additive_increase(&self, p: &mut Prague, tp: &CcSock, acked: u64) {
        let mut inc = acked * p.ai;
        let c = p.frac_to_cwnd(tp) as u64;
        if c > 0 {
            inc = (inc + (c >> 1)) / c;
        }
        p.frac += acked.max(inc);
    }

    fn adjust_floor(&self) -> u32 {
        MIN_CWND_RTT
    }

    /// A decrement that would take cwnd below `MIN_CWND` leaves it there and drops
    /// the rest of the reduction (`prague_update_cwnd`'s ADJUST: "No point in
    /// applying further reductions", `cwnd_cnt = 0`, `snd_ssthresh = snd_cwnd`).
    fn at_floor(&self, p: &mut Prague, tp: &mut CcSock) {
        p.frac = (tp.cwnd as u64) << CWND_UNIT;
        tp.ssthresh = tp.cwnd;
        p.cwnd_changed(tp);
    }

    fn adjust_may_grow(&self, tp: &CcSock) -> bool {
        tp.cwnd < tp.cwnd_clamp
    }

    /// MTU·frac/SRTT (×2 in slow start, before the division), rounded. `frac` stays
    /// above one packet: ADJUST drops reductions below the window floor ([`Self::at_floor`]).
    fn pacing_rate(&self, p: &mut Prague, tp: &CcSock) -> u64 {
        let mut rate = USEC_PER_SEC_X8 * mtu(tp);
        if tp.cwnd < tp.ssthresh / 2 {
            rate <<= 1;
        }
        let srtt = srtt8(tp);
        if srtt > 0 {
            rate /= srtt;
        }
        ((rate as u128 * p.frac as u128 + (ONE_CWND as u128 >> 1)) >> CWND_UNIT) as u64
    }

    fn mode_switch(&self, _p: &mut Prague, _tp: &CcSock) {}

    fn cwr_reduce(&self, p: &mut Prague, _tp: &CcSock, alpha: u64, bits: u32) {
        p.cwr_reduce_frac(alpha, bits);
    }

    /// Halve frac, never below one packet; the undo restores it (`loss_frac`). v0.6
    /// takes the halving from `cwnd_cnt`, and its pacing rate from max(`snd_cwnd`,
    /// in flight) ≥ the one packet `tcp_enter_loss` leaves: repeated RTOs never pace it
    /// below one packet per SRTT.
    fn enter_loss(&self, p: &mut Prague, tp: &CcSock) {
        p.loss_frac = p.frac;
        p.frac = (p.frac - (p.frac >> 1)).max(ONE_CWND);
        p.in_loss = true;
        p.cwnd_changed(tp);
    }

    fn undo(&self, p: &mut Prague, _tp: &CcSock) {
        p.frac = p.frac.max(p.loss_frac);
    }

    fn min_tso_segs(&self) -> u32 {
        TCP_MIN_TSO_SEGS
    }

    fn always_feeds_detector(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{ack, setup, steady, MSS};
    use super::*;

    #[test]
    fn v06_variant() {
        let (mut p, mut tp) = setup(PragueParams::v06(), 10, 10_000);
        // α₀ = 1 (20 bits), min 2 TSO segments, no floor on the pacing rate.
        assert_eq!(p.alpha(), 1.0);
        assert_eq!(p.upscaled_alpha, (1 << 20) << 4);
        assert_eq!(p.tso_segs(&tp, tp.mss), Some(2));
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
        // ... and drops the reduction that would take it below (cwnd_cnt = 0).
        assert_eq!((p.frac, tp.ssthresh), (2 << 20, 2));
        // No segment sizing.
        steady(&mut p, &mut tp, 2);
        p.round = 600;
        p.update_alpha(&mut tp);
        assert_eq!(tp.mss, MSS);
    }

    /// CE on every ACK at the window floor: ADJUST drops each reduction that would take
    /// cwnd below 2 (`cwnd_cnt = 0`), so `frac` never falls below one packet and the
    /// pacing rate stays at ≥ 1 packet per SRTT; without that, `frac` (and the pacing
    /// rate it sets) decays toward zero at each CWR while cwnd stays 2.
    #[test]
    fn reductions_below_the_window_floor_are_dropped() {
        let (mut p, mut tp) = setup(PragueParams::v06(), 10, 10_000);
        steady(&mut p, &mut tp, 2);
        tp.packets_out = 2;
        for _ in 0..200 {
            tp.ca_state = CaState::Open;
            ack(&mut p, &mut tp, 1, 1);
            assert!(p.frac > 1 << CWND_UNIT, "frac {} at or below one packet", p.frac);
        }
        assert_eq!(tp.cwnd, 2);
        assert!(tp.pacing_rate >= 1500 * 100, "{} B/s", tp.pacing_rate);
    }

    /// Repeated RTOs halve `frac` each time but never below one packet, so the pacing
    /// rate after a loss stays ≥ one packet per SRTT (v0.6 paces from max(`snd_cwnd`,
    /// in flight), and `tcp_enter_loss` leaves one packet).
    #[test]
    fn losses_leave_at_least_one_packet_to_pace() {
        let (mut p, mut tp) = setup(PragueParams::v06(), 10, 10_000);
        steady(&mut p, &mut tp, 2);
        for _ in 0..10 {
            p.cwnd_event(&mut tp, CaEvent::Loss); // each RTO: CA_EVENT_LOSS
        }
        assert_eq!(p.frac, ONE_CWND);
        p.update_pacing_rate(&mut tp);
        assert!(tp.pacing_rate >= 1500 * 100, "{} B/s", tp.pacing_rate);
    }
}
