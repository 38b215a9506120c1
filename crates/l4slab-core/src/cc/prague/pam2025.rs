//! TCP Prague as the PAM 2025 testbed ran it: L4STeam/tcp-prague commit 90aea47f,
//! `net/ipv4/tcp_prague.c` (the out-of-tree module of the L4STeam 5.15 trees,
//! MODULE_VERSION "0.7"), where it differs from the reference v0.7 (L4STeam/linux
//! 893e147, [`super::v07`]).
//!
//! The file has v0.7's core — 24-bit α starting at 0 with the first CE halving, the
//! rate/window mode below 4 × 1500 B, the 150 B MTU floor, RTT independence after 4
//! rounds with ai = (SRTT/25 ms)² — beside the older classic-ECN detector (the 0.6
//! tree's, [`super::classic_ecn_detector`]), whose reference constants were left at
//! their 20-bit values (`fallback_constants = "pam2025"`, L4STeam/linux issue #38).
//! Where its rules differ from 893e147 (each cited `tcp_prague.c:function` at 90aea47f):
//!
//! - growth is gated on `tp->app_limited` (`prague_update_cwnd`: `... ||
//!   tp->app_limited) goto adjust;`), the parameters' default ([`GrowthGate::AppLimited`]);
//! - the window-mode additive increase divides by the integer `tp->snd_cwnd`, rounded,
//!   without 893e147's division by `frac_cwnd` and its 1500/MTU scaling
//!   (`prague_update_cwnd`: `increase = div_u64(increase + (new_cwnd >> 1), new_cwnd)`
//!   with `new_cwnd = tp->snd_cwnd`), and leaves `rate_bytes` alone;
//! - the pacing rate is computed from the integer window, max(`snd_cwnd`,
//!   `packets_in_flight`), doubled in slow start *before* the division by SRTT, and
//!   that doubled value is what the window mode stores as `rate_bytes`
//!   (`prague_update_pacing_rate`);
//! - the mode switch (`prague_cong_control`) sets `cwnd_mode` from the integer window's
//!   size alone, CE or not, with no re-sync of `frac_cwnd` or `rate_bytes` at the
//!   switch; the rate-based paths test `cwnd_mode == 1 && saw_ce` where they are used
//!   (`prague_update_pacing_rate`, `prague_update_cwnd`, `prague_enter_cwr`,
//!   `prague_enter_loss`);
//! - `prague_init` sets the rate from `snd_cwnd` alone (no `packets_in_flight`);
//! - the window-mode `prague_enter_cwr` and `prague_enter_loss` reduce `frac_cwnd` only
//!   (the rate follows at the next pacing update);
//! - segment sizing (`prague_update_alpha`) takes the bytes per virtual RTT from
//!   `rate_bytes` in both modes (`prague_pacing_rate_to_max_mtu`) and sets `snd_cwnd`
//!   from the rescaled `frac_cwnd`, leaving `snd_ssthresh` unscaled;
//! - the detector's own RTT estimator runs on every ACK (`prague_pkts_acked` →
//!   `prague_rtt_estimator`) and its gains follow every ssthresh (`prague_ssthresh` →
//!   `prague_update_rtt_scaling`), whether or not `prague_ecn_fallback` is on (it only
//!   decides whether `prague_classic_ecn_detection` scores and `prague_enter_cwr` floors α).
//!
//! Knobs the file does not have (`alpha_mode`, `cwnd_mode`) keep their v0.7 meaning;
//! their defaults are the file's fixed behaviour (α₀ = 0, the switch by size).

use super::v07::V07;
use super::*;

/// The PAM 2025 testbed's Prague (L4STeam/tcp-prague 90aea47f).
#[derive(Debug)]
pub(super) struct Pam2025;

impl Prague {
    /// `prague_pacing_rate_to_max_mtu` at 90aea47f: ⌈rate·vRTT / 2⌉ bytes, from
    /// `rate_bytes` in either mode.
    fn pam2025_max_mtu(&self, tp: &CcSock) -> u64 {
        let bytes = ((self.rate as u128 * self.vrtt8(tp) as u128) >> RTT2SEC_SHIFT) as u64;
        bytes.div_ceil(MIN_CWND_VIRT)
    }

    /// The MTU update of `prague_update_alpha` at 90aea47f: frac keeps the bytes in
    /// flight, `snd_cwnd` = ⌈frac⌉ (clamped), ssthresh unscaled.
    fn pam2025_resize_segments(&mut self, tp: &mut CcSock) {
        if self.apply_mtu(tp, Self::pam2025_max_mtu).is_some() {
            tp.cwnd = self.frac_to_cwnd(tp);
        }
    }
}

impl Version for Pam2025 {
    fn alpha_bits(&self) -> u32 {
        V07.alpha_bits()
    }

    fn alpha_mode(&self, params: &PragueParams) -> bool {
        V07.alpha_mode(params)
    }

    fn alpha_starts_at_one(&self, p: &Prague) -> bool {
        V07.alpha_starts_at_one(p)
    }

    /// `prague_init`: rate = MTU·snd_cwnd/SRTT (floor `MINIMUM_RATE`), then the pacing rate.
    fn init_rate(&self, p: &mut Prague, tp: &mut CcSock) {
        let srtt = srtt8(tp);
        p.rate =
            if srtt > 0 { (USEC_PER_SEC_X8 * mtu(tp) / srtt * tp.cwnd as u64).max(MINIMUM_RATE) } else { MINIMUM_RATE };
        p.update_pacing_rate(tp);
    }

    fn init_modes(&self, p: &mut Prague) {
        V07.init_modes(p);
    }

    fn rtt_indep_possible(&self, _p: &Prague) -> bool {
        true
    }

    fn gate_us(&self, p: &Prague, tp: &CcSock) -> u64 {
        V07.gate_us(p, tp)
    }

    fn has_rate_mode(&self) -> bool {
        true
    }

    /// `cwnd_mode == 1 && saw_ce` at each use (`prague_update_pacing_rate` and others).
    fn rate_mode_needs_ce(&self) -> bool {
        true
    }

    fn frac_to_cwnd(&self, p: &Prague, tp: &CcSock) -> u32 {
        V07.frac_to_cwnd(p, tp)
    }

    fn ai(&self, p: &Prague, tp: &CcSock) -> u64 {
        V07.ai(p, tp)
    }

    fn first_ce(&self, p: &mut Prague) {
        V07.first_ce(p);
    }

    fn alpha_updated(&self, p: &mut Prague, tp: &mut CcSock) {
        if p.rtt_indep(tp) && !p.in_loss {
            p.pam2025_resize_segments(tp);
        }
    }

    fn round_end(&self, p: &mut Prague, tp: &CcSock) {
        V07.round_end(p, tp);
    }

    /// Window mode: frac += max(acked, round(acked·ai / snd_cwnd)); rate mode as v0.7.
    fn additive_increase(&self, p: &mut Prague, tp: &CcSock, acked: u64) {
        if p.rate_based(tp) {
            p.rate_mode_increase(tp, acked);
            return;
        }
        let mut inc = acked as u128 * p.ai as u128;
        let cwnd = tp.cwnd as u64;
        if cwnd > 0 {
            inc = div_u128(inc + (cwnd >> 1) as u128, cwnd);
        }
        p.frac += acked.max(inc as u64);
    }

    fn adjust_floor(&self) -> u32 {
        V07.adjust_floor()
    }

    fn adjust_may_grow(&self, tp: &CcSock) -> bool {
        V07.adjust_may_grow(tp)
    }

    /// Rate mode: `rate` ± 4/128, ×2 in slow start. Window mode: MTU (×2 in slow
    /// start) / SRTT × max(snd_cwnd, in_flight), floor `MINIMUM_RATE`, stored as `rate`.
    fn pacing_rate(&self, p: &mut Prague, tp: &CcSock) -> u64 {
        let slow_start = tp.cwnd < tp.ssthresh / 2;
        if p.rate_based(tp) {
            let rate = p.wobbled_rate(tp);
            return if slow_start { rate << 1 } else { rate };
        }
        let mut rate = USEC_PER_SEC_X8 * mtu(tp);
        if slow_start {
            rate <<= 1;
        }
        let srtt = srtt8(tp);
        if srtt > 0 {
            rate /= srtt;
        }
        let inflight = tp.cwnd.max(tp.in_flight()) as u64;
        rate = rate.saturating_mul(inflight).max(MINIMUM_RATE);
        p.rate = rate;
        rate
    }

    /// `cwnd_mode` = (snd_cwnd·MTU ≤ cwnd_transit·1500 B), CE or not, no re-sync.
    fn mode_switch(&self, p: &mut Prague, tp: &CcSock) {
        if !p.cwnd_mode_transit {
            return;
        }
        p.rate_mode = tp.cwnd as u64 * mtu(tp) <= p.params.cwnd_transit as u64 * MTU_SYS;
    }

    /// Rate mode: rate·(1 − α/2), floor `MINIMUM_RATE`, frac from the rate; window
    /// mode: frac·(1 − α/2) alone.
    fn cwr_reduce(&self, p: &mut Prague, tp: &CcSock, alpha: u64, bits: u32) {
        if p.rate_based(tp) {
            p.cwr_reduce_rate(tp, alpha, bits);
        } else {
            p.cwr_reduce_frac(alpha, bits);
        }
    }

    /// Rate mode: halve the rate, frac from it; window mode: halve frac alone.
    fn enter_loss(&self, p: &mut Prague, tp: &CcSock) {
        p.halve_for_loss(tp);
    }

    fn undo(&self, p: &mut Prague, tp: &CcSock) {
        V07.undo(p, tp);
    }

    fn min_tso_segs(&self) -> u32 {
        1
    }

    fn always_feeds_detector(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{ack, rs, setup, steady, MSS};
    use super::*;

    fn pam() -> PragueParams {
        PragueParams::pam2025()
    }

    #[test]
    fn the_vintage_defaults_are_the_pam_testbeds() {
        let p = PragueParams::pam2025();
        assert_eq!(p.version, PragueVersion::Pam2025);
        assert_eq!(p.fallback_constants, FallbackConstants::Pam2025);
        assert_eq!(p.growth_gate, GrowthGate::AppLimited);
        // prague_ecn_fallback defaults to 0 in the file; the rest are v0.7's.
        assert_eq!(
            p,
            PragueParams {
                version: p.version,
                fallback_constants: p.fallback_constants,
                growth_gate: p.growth_gate,
                ..PragueParams::default()
            }
        );
        // `version = "pam2025"` alone selects the vintage's defaults; both constant
        // sets and both gates stay selectable beside it.
        let given = serde_json::json!({"version": "pam2025"});
        assert_eq!(parse_prague_params("prague", Some(&given)).unwrap(), PragueParams::pam2025());
        let given =
            serde_json::json!({"version": "pam2025", "fallback_constants": "current", "growth_gate": "cwnd_limited"});
        let q = parse_prague_params("prague", Some(&given)).unwrap();
        assert_eq!(
            (q.version, q.fallback_constants, q.growth_gate),
            (PragueVersion::Pam2025, FallbackConstants::Current, GrowthGate::CwndLimited)
        );
        // Without `version` the parameters start from v0.7's defaults as before.
        let given = serde_json::json!({"growth_gate": "app_limited"});
        assert_eq!(parse_prague_params("prague", Some(&given)).unwrap().version, PragueVersion::V07);
    }

    /// `prague_update_cwnd` at 90aea47f: the window-mode AI divides by the integer
    /// snd_cwnd, rounded, with no 1500/MTU scaling; 893e147 divides by frac and scales.
    #[test]
    fn ai_divides_by_the_integer_cwnd_without_mtu_scaling() {
        // MSS 1000 ⇒ MTU 1052: v0.7 scales the increase by 1500/1052.
        let mss = 1000;
        let run = |params: PragueParams| {
            let mut tp = CcSock::new(mss, 10);
            tp.ecn_mode = EcnMode::AccEcn;
            tp.srtt_us = 10_000;
            tp.min_rtt_us = 10_000;
            tp.snd_nxt = 10 * mss as u64;
            let mut p = Prague::new(params);
            p.init(&mut tp);
            steady(&mut p, &mut tp, 10);
            p.round = 0; // unscaled ai = 1 packet per RTT
            p.refresh_ai(&tp);
            // frac = 10.5 packets, snd_cwnd 11: the two divisors differ.
            p.frac = (21 << CWND_UNIT) / 2;
            tp.cwnd = 11;
            let ver = p.ver;
            ver.additive_increase(&mut p, &tp, 1);
            p.frac - (21 << CWND_UNIT) / 2
        };
        let pam_inc = run(pam());
        let v07_inc = run(PragueParams::default());
        // 90aea47f: (2^20 + 5) / 11.
        assert_eq!(pam_inc, ((1u64 << 20) + 5) / 11);
        // 893e147: round(2^40 / frac) · 1500 / 1052.
        let frac = (21u64 << 20) / 2;
        assert_eq!(v07_inc, ((((1u64 << 40) + frac / 2) / frac) as u128 * 1500 / 1052) as u64);
        assert!(v07_inc > pam_inc + pam_inc / 3, "{v07_inc} vs {pam_inc}");
    }

    /// `prague_update_pacing_rate` at 90aea47f: from max(snd_cwnd, in_flight), not frac;
    /// in slow start the doubled value is what rate_bytes keeps.
    #[test]
    fn pacing_from_the_integer_cwnd_doubled_rate_kept_in_slow_start() {
        let (mut p, mut tp) = setup(pam(), 10, 10_000);
        // Slow start (ssthresh infinite): MTU·2/SRTT·cwnd = 1500·2·100·10 = 3 MB/s, kept.
        assert_eq!(tp.pacing_rate, 3_000_000);
        assert_eq!(p.rate_bytes(), 3_000_000);
        // v0.7 keeps the undoubled rate.
        let (q, tq) = setup(PragueParams::default(), 10, 10_000);
        assert_eq!((tq.pacing_rate, q.rate_bytes()), (3_000_000, 1_500_000));
        // Congestion avoidance with frac below the integer window: the integer window paces.
        steady(&mut p, &mut tp, 20);
        p.frac = (39 << CWND_UNIT) / 2; // 19.5 packets
        p.update_pacing_rate(&mut tp);
        assert_eq!(tp.pacing_rate, 1500 * 100 * 20);
        let (mut q, mut tq) = setup(PragueParams::default(), 10, 10_000);
        steady(&mut q, &mut tq, 20);
        q.frac = (39 << CWND_UNIT) / 2;
        q.update_pacing_rate(&mut tq);
        assert_eq!(tq.pacing_rate, 1500 * 100 * 19);
    }

    /// `prague_cong_control` at 90aea47f switches to the rate mode at ≤ 4 × 1500 B
    /// before any CE; the rate paths still wait for CE (`cwnd_mode == 1 && saw_ce`).
    #[test]
    fn mode_switch_by_size_alone_rate_paths_need_ce() {
        let (mut p, mut tp) = setup(pam(), 4, 10_000);
        tp.ssthresh = 4; // out of slow start
        p.round = 4;
        assert!(!p.saw_ce());
        p.cong_control(&mut tp, &rs(0, 0));
        assert!(p.in_rate_mode(), "4 packets of 1500 B switch the mode without CE");
        assert!(!p.rate_based(&tp), "no rate-based path before CE");
        // v0.7 (893e147) needs CE for the switch itself.
        let (mut q, mut tq) = setup(PragueParams::default(), 4, 10_000);
        tq.ssthresh = 4;
        q.round = 4;
        q.cong_control(&mut tq, &rs(0, 0));
        assert!(!q.in_rate_mode());
        // With CE the rate paths run; no re-sync of frac at the switch back either.
        p.saw_ce = true;
        assert!(p.rate_based(&tp));
        tp.cwnd = 5;
        let f = p.frac;
        let ver = p.ver;
        ver.mode_switch(&mut p, &tp);
        assert!(!p.in_rate_mode());
        assert_eq!(p.frac, f);
    }

    /// `prague_enter_loss` at 90aea47f halves frac in the window mode and leaves the
    /// rate to the next pacing update; the undo restores it as v0.7 does.
    #[test]
    fn window_mode_loss_halves_frac_alone() {
        let (mut p, mut tp) = setup(pam(), 40, 10_000);
        steady(&mut p, &mut tp, 40);
        p.update_pacing_rate(&mut tp);
        let rate = p.rate_bytes();
        p.set_state(&mut tp, CaState::Recovery);
        assert_eq!(p.frac, 20 << CWND_UNIT);
        assert_eq!(p.rate_bytes(), rate);
        assert!(p.in_loss());
    }

    /// Segment sizing at 90aea47f: bytes per vRTT from rate_bytes, snd_cwnd from the
    /// rescaled frac, ssthresh left as it was.
    #[test]
    fn segment_resize_keeps_ssthresh() {
        let (mut p, mut tp) = setup(pam(), 2, 20_000);
        steady(&mut p, &mut tp, 2);
        p.rate_mode = true;
        p.rate = 25_000; // 200 kb/s: 596 B per vRTT ⇒ MTU 298
        tp.ssthresh = 2;
        p.update_alpha(&mut tp);
        assert_eq!(tp.mss, 298 - MSS_TO_MTU);
        assert_eq!(tp.ssthresh, 2, "90aea47f does not rescale ssthresh");
        assert_eq!(tp.cwnd, p.frac_to_cwnd(&tp));
        let _ = MSS;
    }

    /// The detector's RTT filter runs on every ACK with the fallback off (the file's
    /// `prague_pkts_acked`); v0.7 feeds it only with `ecn_fallback` > 0.
    #[test]
    fn the_detector_estimator_always_runs() {
        let (mut p, mut tp) = setup(pam(), 10, 10_000);
        let before = p.det.srtt_pace;
        p.pkts_acked(&mut tp, &AckSample { rtt_us: 20_000, ..AckSample::default() });
        assert_ne!(p.det.srtt_pace, before);
        let (mut q, mut tq) = setup(PragueParams::default(), 10, 10_000);
        let before = q.det.srtt_pace;
        q.pkts_acked(&mut tq, &AckSample { rtt_us: 20_000, ..AckSample::default() });
        assert_eq!(q.det.srtt_pace, before);
        // The first CE still halves and the slow-start re-sync still cancels it.
        let (mut p, mut tp) = setup(pam(), 10, 10_000);
        ack(&mut p, &mut tp, 2, 2);
        assert_eq!(p.frac, 5 << CWND_UNIT);
    }
}
