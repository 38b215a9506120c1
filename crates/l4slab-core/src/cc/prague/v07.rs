//! TCP Prague v0.7 where it differs from v0.6: L4STeam/linux `net/ipv4/tcp_prague.c`,
//! MODULE_VERSION "0.7", commit 893e147 (the reference; also the netdev posting
//! "[PATCH net-next 44/44] tcp: Add the TCP Prague congestion control module").
//!
//! v0.7 adds the rate-based mode for windows of a few packets (`prague_cwnd_mode`,
//! `prague_cwnd_transit`), ±4/128 pacing wobble in that mode, a slow SRTT average
//! (`hsrtt`) for rate↔window conversion, α starting at 0 with the first CE halving
//! (`prague_alpha_mode` = 0), 24-bit α, RTT-independence after 4 rounds with
//! ai = (SRTT/25 ms)² (draft-briscoe-iccrg-prague-congestion-control), and
//! dynamic segment sizing ([`super::segment_sizing`]).

use super::*;

/// `PRAGUE_ALPHA_BITS`.
const ALPHA_BITS: u32 = 24;
/// `MAX_SCALED_RTT`: above this SRTT the AI is not RTT-scaled, µs.
const MAX_SCALED_RTT_US: u64 = 100_000;
/// `RATE_OFFSET` / `OFFSET_UNIT`: pacing wobble ±4/128 in the rate mode.
const RATE_OFFSET: u64 = 4;
const OFFSET_UNIT: u32 = 7;

/// MODULE_VERSION "0.7".
#[derive(Debug)]
pub(super) struct V07;

impl Prague {
    /// `prague_target_rtt`, µs·8.
    #[inline]
    pub(super) fn target8(&self) -> u64 {
        (self.params.rtt_target_us as u64) << 3
    }
    /// `prague_virtual_rtt`: max(T, SRTT), µs·8.
    #[inline]
    pub(super) fn vrtt8(&self, tp: &CcSock) -> u64 {
        self.target8().max(srtt8(tp))
    }

    /// `prague_frac_cwnd_to_pacing_rate`: max(MTU·frac/SRTT, 12 500 B/s).
    pub(super) fn frac_to_rate(&self, tp: &CcSock) -> u64 {
        let mut r = USEC_PER_SEC_X8 * mtu(tp);
        let srtt = srtt8(tp);
        if srtt > 0 {
            r /= srtt;
        }
        (((r as u128 * self.frac as u128) >> CWND_UNIT) as u64).max(MINIMUM_RATE)
    }

    /// `prague_pacing_rate_to_frac_cwnd`: ⌈rate·R/MTU⌉ in 2^-20 units with R = hsrtt
    /// (or SRTT) in µs·8 and the 2^23 "second" (a factor 0.954).
    pub(super) fn rate_to_frac(&self, tp: &CcSock) -> u64 {
        let mtu = mtu(tp);
        let h = self.hsrtt >> HSRTT_SHIFT;
        let rtt = if h != 0 { h } else { srtt8(tp) };
        let x = ((self.rate as u128 * rtt as u128) >> (RTT2SEC_SHIFT - CWND_UNIT)) as u64;
        x.div_ceil(mtu)
    }

    /// The rate mode's pacing rate before the slow-start doubling: `rate` + 4/128 in
    /// the first half of the virtual RTT since the α update, − 4/128 in the second
    /// (`prague_update_pacing_rate`, `prague_half_virtual_rtt_elapsed`).
    pub(super) fn wobbled_rate(&self, tp: &CcSock) -> u64 {
        let offset = ((RATE_OFFSET as u128 * self.rate as u128) >> OFFSET_UNIT) as u64;
        if (self.vrtt8(tp) >> 4) <= since(tp, self.alpha_stamp_us) {
            self.rate - offset
        } else {
            self.rate + offset
        }
    }

    /// The rate mode's additive increase (`prague_update_cwnd`, rate branch): +1500 B
    /// per vRTT of rate per vRTT, and frac follows the rate.
    pub(super) fn rate_mode_increase(&mut self, tp: &CcSock, acked: u64) {
        let mtu = mtu(tp);
        let vrtt = self.vrtt8(tp) as u128;
        let inc = ((acked as u128 * MTU_SYS as u128) << RTT2SEC_SHIFT) / vrtt;
        let divisor = (mtu as u128) << RTT2SEC_SHIFT;
        let vcwnd = (self.rate as u128 * vrtt).div_ceil(divisor);
        if vcwnd > 0 {
            self.rate += ((inc + vcwnd / 2) / vcwnd) as u64;
        }
        self.frac = (self.frac + acked).max(self.rate_to_frac(tp));
    }
}

impl Version for V07 {
    fn alpha_bits(&self) -> u32 {
        ALPHA_BITS
    }

    fn alpha_mode(&self, params: &PragueParams) -> bool {
        params.alpha_mode & 1 == 1
    }

    fn alpha_starts_at_one(&self, p: &Prague) -> bool {
        p.alpha_mode
    }

    /// `prague_init`: rate = MTU·max(cwnd, in_flight)/SRTT, then the pacing rate.
    fn init_rate(&self, p: &mut Prague, tp: &mut CcSock) {
        let srtt = srtt8(tp);
        p.rate = if srtt > 0 {
            let per_pkt = USEC_PER_SEC_X8 * mtu(tp) / srtt;
            (per_pkt * tp.cwnd.max(tp.in_flight()) as u64).max(MINIMUM_RATE)
        } else {
            MINIMUM_RATE
        };
        p.update_pacing_rate(tp);
    }

    fn init_modes(&self, p: &mut Prague) {
        p.cwnd_mode_transit = (p.params.cwnd_mode & 2) != 0;
        p.rate_mode = (p.params.cwnd_mode & 1) != 0;
    }

    fn rtt_indep_possible(&self, _p: &Prague) -> bool {
        true
    }

    fn gate_us(&self, p: &Prague, _tp: &CcSock) -> u64 {
        p.params.rtt_target_us as u64
    }

    fn has_rate_mode(&self) -> bool {
        true
    }

    /// clamp(⌈frac⌉, MIN_CWND_RTT, snd_cwnd_clamp).
    fn frac_to_cwnd(&self, p: &Prague, tp: &CcSock) -> u32 {
        let c = p.frac.div_ceil(ONE_CWND).min(u32::MAX as u64) as u32;
        c.max(MIN_CWND_RTT).min(tp.cwnd_clamp)
    }

    /// (SRTT/T)² after the transition, below T and `MAX_SCALED_RTT`; else 1.
    fn ai(&self, p: &Prague, tp: &CcSock) -> u64 {
        let rtt = srtt8(tp);
        if p.round < p.params.rtt_transition || rtt == 0 || rtt > (MAX_SCALED_RTT_US << 3) {
            return ONE_CWND;
        }
        let target = p.target8();
        if rtt >= target {
            return ONE_CWND;
        }
        // (rtt/target)² in 2^-20, rounded to nearest.
        let num = ((rtt as u128) << CWND_UNIT) * rtt as u128;
        let div = target as u128 * target as u128;
        ((num + div / 2) / div) as u64
    }

    /// With α₀ = 0 the first mark ever halves frac (α cannot yet).
    fn first_ce(&self, p: &mut Prague) {
        if !p.saw_ce && !p.alpha_mode {
            p.frac = (p.frac + 1) >> 1;
        }
    }

    fn alpha_updated(&self, p: &mut Prague, tp: &mut CcSock) {
        if p.rtt_indep(tp) && !p.in_loss {
            p.resize_segments(tp);
        }
    }

    /// hsrtt += SRTT − hsrtt/128.
    fn round_end(&self, p: &mut Prague, tp: &CcSock) {
        p.hsrtt = p.hsrtt + srtt8(tp) - (p.hsrtt >> HSRTT_SHIFT);
    }

    fn additive_increase(&self, p: &mut Prague, tp: &CcSock, acked: u64) {
        let mtu = mtu(tp);
        if p.rate_based(tp) {
            // `prague_rate_scaled_ai_ack_increase`: +1500 B per vRTT of rate per vRTT.
            p.rate_mode_increase(tp, acked);
        } else {
            // frac += acked·ai/frac packets, normalised to 1500-B packets.
            let mut inc = acked as u128 * p.ai as u128;
            if p.frac > 0 {
                inc <<= CWND_UNIT;
                inc = div_u128(inc + p.frac as u128 / 2, p.frac);
            }
            let inc = div_u128(inc * MTU_SYS as u128, mtu) as u64;
            p.frac += acked.max(inc);
            p.rate = (p.rate + acked).max(p.frac_to_rate(tp));
        }
    }

    fn adjust_floor(&self) -> u32 {
        0
    }

    fn adjust_may_grow(&self, _tp: &CcSock) -> bool {
        true
    }

    /// Rate mode: `rate` ± 4/128 (+ in the first half of the vRTT since the α
    /// update). Window mode: MTU·max(frac, in_flight)/SRTT, floor `MINIMUM_RATE`.
    /// ×2 in slow start (cwnd < ssthresh/2).
    fn pacing_rate(&self, p: &mut Prague, tp: &CcSock) -> u64 {
        let mut rate;
        if p.rate_based(tp) {
            rate = p.wobbled_rate(tp);
        } else {
            let inflight = (p.frac >> CWND_UNIT).max(tp.in_flight() as u64);
            rate = USEC_PER_SEC_X8 * mtu(tp);
            let srtt = srtt8(tp);
            if srtt > 0 {
                rate /= srtt;
            }
            rate = (rate * inflight).max(MINIMUM_RATE);
            p.rate = rate;
        }
        if tp.cwnd < tp.ssthresh / 2 {
            rate <<= 1;
        }
        rate
    }

    /// Rate mode once CE was seen and the window is ≤ `cwnd_transit` 1500-B packets.
    fn mode_switch(&self, p: &mut Prague, tp: &CcSock) {
        if !p.cwnd_mode_transit {
            return;
        }
        let cwnd_bytes = tp.cwnd as u64 * mtu(tp);
        let transit = p.params.cwnd_transit as u64 * MTU_SYS;
        if p.saw_ce && cwnd_bytes <= transit {
            p.rate_mode = true;
            p.frac = p.rate_to_frac(tp);
        } else {
            p.rate_mode = false;
            p.rate = p.frac_to_rate(tp);
        }
    }

    /// Rate mode: rate·(1 − α/2), floor `MINIMUM_RATE`; window mode: frac·(1 − α/2)
    /// and the rate follows.
    fn cwr_reduce(&self, p: &mut Prague, tp: &CcSock, alpha: u64, bits: u32) {
        if p.rate_based(tp) {
            p.cwr_reduce_rate(tp, alpha, bits);
        } else {
            p.cwr_reduce_frac(alpha, bits);
            p.rate = p.frac_to_rate(tp);
        }
    }

    /// Halve the rate (rate mode) or frac (window mode); the undo restores the rate.
    fn enter_loss(&self, p: &mut Prague, tp: &CcSock) {
        if !p.halve_for_loss(tp) {
            p.rate = p.frac_to_rate(tp);
        }
    }

    fn undo(&self, p: &mut Prague, tp: &CcSock) {
        p.in_loss = false;
        p.rate = p.rate.max(p.loss_rate);
        p.frac = p.rate_to_frac(tp);
    }

    fn min_tso_segs(&self) -> u32 {
        1
    }

    fn always_feeds_detector(&self) -> bool {
        false
    }
}
