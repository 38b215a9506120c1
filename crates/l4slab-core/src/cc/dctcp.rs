//! DCTCP as Linux implements it in `net/ipv4/tcp_dctcp.c` and `tcp_dctcp.h`
//! (RFC 8257; Alizadeh et al., SIGCOMM 2010).
//!
//! Hooks and their place in `tcp_ack()` (net/ipv4/tcp_input.c):
//! - `in_ack_event` (`dctcp_update_alpha`, before the recovery state machine): α
//!   update once per RTT from the `delivered` / `delivered_ce` deltas;
//! - `ssthresh` (`dctcp_ssthresh`, called when the stack enters CWR/Recovery/Loss):
//!   cwnd − ⌊cwnd·α/2048⌋, at least 2;
//! - `set_state(Recovery)` and `cwnd_event(Loss)` (`dctcp_react_to_loss`): Reno
//!   halving that overrides the α-based value just computed;
//! - `cong_avoid` = `tcp_reno_cong_avoid`. In CWR the stack runs PRR and never calls
//!   `cong_avoid`, so there is no increase during an ECN reduction;
//! - `cwnd_event(ECN_IS_CE / ECN_NO_CE)` on a receiving socket
//!   (`dctcp_ece_ack_update`): the DCTCP-style CE echo of RFC 8257 §3.2.
//!
//! If ECN was not negotiated, `dctcp_init` switches to the `dctcp_reno` ops:
//! [`RenoFallback`] (registered as `dctcp`).
//!
//! α is kept in Linux's 1/1024 units with the mainline decay rule
//! (`α −= min_not_zero(α, α >> g)`, so α < 16/1024 decays to 0).

use super::descriptor::{parse_params, CcDescriptor, ReceiverDefaults};
use super::reno::{reno_cong_avoid, reno_ssthresh, EcnRequirement, RenoFallback};
use super::*;
use crate::schema::{ParamKind, ParamSpec};

/// `DCTCP_MAX_ALPHA`: α = 1.0 in 1/1024 units.
pub const DCTCP_MAX_ALPHA: u32 = 1024;

/// DCTCP module parameters; `Default` gives the Linux defaults.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DctcpParams {
    /// `dctcp_shift_g`: EWMA gain g = 2^-shift_g (default 4 ⇒ 1/16).
    pub shift_g: u32,
    /// `dctcp_alpha_on_init`: initial α in 1/1024 (default 1024 = 1.0).
    pub alpha_on_init: u32,
}

impl Default for DctcpParams {
    fn default() -> Self {
        DctcpParams { shift_g: 4, alpha_on_init: DCTCP_MAX_ALPHA }
    }
}

/// `dctcp` in the registry.
pub const DESCRIPTOR: CcDescriptor = CcDescriptor {
    name: "dctcp",
    doc: "DCTCP (net/ipv4/tcp_dctcp.c; RFC 8257): classic ECN, ECT(0), cwnd reduced by α/2 once per RTT.",
    l4s: false,
    flags: CcFlags {
        needs_ecn: true,
        needs_accecn: false,
        wants_ect1: false,
        no_fallback_rfc3168: false,
        needs_pacing: false,
    },
    receiver: ReceiverDefaults { receiver_ecn: Some(1), receiver_cc: Some("dctcp") },
    build: |p| Ok(Box::new(RenoFallback::new(Dctcp::new(parse_params("dctcp", DctcpParams::default(), p)?)))),
    check: |p| parse_params("dctcp", DctcpParams::default(), p).map(drop),
    reports_state: false,
    params: param_specs,
};

fn param_specs() -> Vec<ParamSpec> {
    let d = DctcpParams::default();
    vec![
        ParamSpec::new(
            "shift_g",
            ParamKind::Int,
            d.shift_g.into(),
            "dctcp_shift_g: α gain g = 2^-shift_g (tcp_dctcp.c: 4)",
        )
        .range(0.0, 10.0),
        ParamSpec::new(
            "alpha_on_init",
            ParamKind::Int,
            d.alpha_on_init.into(),
            "dctcp_alpha_on_init: initial α in 1/1024 (tcp_dctcp.c: 1024 = 1.0)",
        )
        .range(0.0, DCTCP_MAX_ALPHA as f64),
    ]
}

/// Linux `dctcp` (its "dctcp-reno" fallback is [`RenoFallback`]).
#[derive(Clone, Debug)]
pub struct Dctcp {
    params: DctcpParams,
    /// `dctcp_alpha`, 1/1024 units.
    alpha: u32,
    /// `next_seq`: snd_nxt when the current observation window started.
    next_seq: u64,
    /// `old_delivered` / `old_delivered_ce` at the start of the window.
    old_delivered: u64,
    old_delivered_ce: u64,
    /// `loss_cwnd`: cwnd at the last reduction (for undo).
    loss_cwnd: u32,
    /// Receiving socket: `prior_rcv_nxt` and `ce_state` of `dctcp_ece_ack_update`.
    prior_rcv_nxt: u64,
    ce_state: bool,
}

impl Default for Dctcp {
    fn default() -> Self {
        Dctcp::new(DctcpParams::default())
    }
}

impl Dctcp {
    pub fn new(params: DctcpParams) -> Self {
        let alpha = params.alpha_on_init.min(DCTCP_MAX_ALPHA);
        Dctcp {
            params,
            alpha,
            next_seq: 0,
            old_delivered: 0,
            old_delivered_ce: 0,
            loss_cwnd: 0,
            prior_rcv_nxt: 0,
            ce_state: false,
        }
    }

    /// α as a fraction in [0, 1] (for metrics).
    pub fn alpha(&self) -> f64 {
        self.alpha as f64 / DCTCP_MAX_ALPHA as f64
    }

    /// α in the kernel's 1/1024 units.
    pub fn alpha_raw(&self) -> u32 {
        self.alpha
    }

    /// `dctcp_reset`: start a new observation window.
    fn reset(&mut self, tp: &CcSock) {
        self.next_seq = tp.snd_nxt;
        self.old_delivered = tp.delivered;
        self.old_delivered_ce = tp.delivered_ce;
    }

    /// `dctcp_update_alpha`: α ← (1 − g)·α + g·F once per RTT (RFC 8257 §3.3).
    fn update_alpha(&mut self, tp: &CcSock) {
        // Once per RTT: when snd_una has reached snd_nxt of the previous update.
        if tp.snd_una < self.next_seq {
            return;
        }
        let delivered = tp.delivered.wrapping_sub(self.old_delivered) as u32;
        let mut delivered_ce = tp.delivered_ce.wrapping_sub(self.old_delivered_ce) as u32;
        let mut alpha = self.alpha;
        // Mainline decay: α >> g, or all of α when that is 0 (`min_not_zero`).
        let decay = alpha >> self.params.shift_g;
        alpha -= if decay == 0 { alpha } else { decay };
        if delivered_ce > 0 {
            // F·1024·g = (ce << (10 − g)) / delivered, truncated.
            delivered_ce <<= 10 - self.params.shift_g.min(10);
            delivered_ce /= delivered.max(1);
            alpha = (alpha + delivered_ce).min(DCTCP_MAX_ALPHA);
        }
        self.alpha = alpha;
        self.reset(tp);
    }

    /// `dctcp_react_to_loss`: Reno halving.
    fn react_to_loss(&mut self, tp: &mut CcSock) {
        self.loss_cwnd = tp.cwnd;
        tp.ssthresh = reno_ssthresh(tp);
    }
}

/// `dctcp_ece_ack_update` (net/ipv4/tcp_dctcp.h): the receiver's CE state follows
/// the last data segment; on a change, an ACK that was being delayed first goes out
/// for the data before this segment carrying the old state, and this segment is
/// ACKed at once, so the sender sees exactly which segments were marked (RFC 8257
/// §3.2). `TCP_ECN_DEMAND_CWR` holds the state ECE echoes (`dctcp_ece_ack_cwr`).
pub fn dctcp_ece_ack_update(tp: &mut CcSock, ev: CaEvent, prior_rcv_nxt: &mut u64, ce_state: &mut bool) {
    let new_ce_state = ev == CaEvent::EcnIsCe;
    let r = &mut tp.rcv;
    if *ce_state != new_ce_state {
        if r.delack_pending {
            r.demand_cwr = *ce_state;
            r.send_ack = Some((*prior_rcv_nxt, *ce_state));
        }
        r.ack_now = true;
    }
    *prior_rcv_nxt = r.rcv_nxt;
    *ce_state = new_ce_state;
    r.demand_cwr = new_ce_state;
}

impl EcnRequirement for Dctcp {
    /// `dctcp_init`: DCTCP needs ECN (RFC 3168 or AccECN).
    fn ecn_ok(&self, mode: EcnMode) -> bool {
        mode != EcnMode::Off
    }
    fn reno_name(&self) -> &'static str {
        "dctcp-reno"
    }
}

impl CongestionControl for Dctcp {
    fn alpha(&self) -> Option<f64> {
        Some(Dctcp::alpha(self))
    }

    fn name(&self) -> &'static str {
        "dctcp"
    }

    /// `TCP_CONG_NEEDS_ECN` only: classic negotiation, ECT(0) on all packets.
    fn flags(&self) -> CcFlags {
        DESCRIPTOR.flags
    }

    /// `dctcp_init` with ECN negotiated (otherwise [`RenoFallback`] does not call it).
    fn init(&mut self, tp: &mut CcSock) {
        self.prior_rcv_nxt = tp.rcv.rcv_nxt;
        self.alpha = self.params.alpha_on_init.min(DCTCP_MAX_ALPHA);
        self.loss_cwnd = 0;
        self.ce_state = false;
        self.reset(tp);
    }

    /// `dctcp_ssthresh`: max(cwnd − ⌊cwnd·α / 2048⌋, 2).
    fn ssthresh(&mut self, tp: &CcSock) -> u32 {
        self.loss_cwnd = tp.cwnd;
        let red = ((tp.cwnd as u64 * self.alpha as u64) >> 11) as u32;
        (tp.cwnd - red).max(2)
    }

    /// `tcp_reno_cong_avoid`.
    fn cong_avoid(&mut self, tp: &mut CcSock, acked: u32) {
        reno_cong_avoid(tp, acked)
    }

    /// `dctcp_state`: entering Recovery halves (overrides the α-based ssthresh).
    fn set_state(&mut self, tp: &mut CcSock, new_state: CaState) {
        if new_state == CaState::Recovery && new_state != tp.ca_state {
            self.react_to_loss(tp);
        }
    }

    /// `dctcp_cwnd_event`: RTO (CA_EVENT_LOSS) halves; on a receiving socket the CE
    /// events drive the DCTCP-style echo.
    fn cwnd_event(&mut self, tp: &mut CcSock, ev: CaEvent) {
        match ev {
            CaEvent::Loss => self.react_to_loss(tp),
            CaEvent::EcnIsCe | CaEvent::EcnNoCe => {
                dctcp_ece_ack_update(tp, ev, &mut self.prior_rcv_nxt, &mut self.ce_state)
            }
            _ => {}
        }
    }

    fn has_pkts_acked(&self) -> bool {
        false
    }
    /// `dctcp_update_alpha` runs as `in_ack_event`.
    fn in_ack_event(&mut self, tp: &mut CcSock, _flags: AckEventFlags) {
        self.update_alpha(tp);
    }

    /// `dctcp_cwnd_undo`: max(cwnd, loss_cwnd).
    fn undo_cwnd(&mut self, tp: &CcSock) -> u32 {
        tp.cwnd.max(self.loss_cwnd)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ecn_sock(cwnd: u32) -> CcSock {
        let mut tp = CcSock::new(1448, cwnd);
        tp.ecn_mode = EcnMode::Rfc3168;
        tp
    }

    /// Deliver one round of `n` packets of which `ce` were CE-marked; the ACK that
    /// completes the round triggers the α update.
    fn round(d: &mut Dctcp, tp: &mut CcSock, n: u64, ce: u64) {
        tp.snd_nxt += n * 1448;
        tp.delivered += n;
        tp.delivered_ce += ce;
        tp.snd_una = d.next_seq;
        d.in_ack_event(tp, AckEventFlags { window_update: true, ece: ce > 0 });
    }

    #[test]
    fn defaults_match_linux() {
        let p = DctcpParams::default();
        assert_eq!(p.shift_g, 4);
        assert_eq!(p.alpha_on_init, 1024);
        let d = Dctcp::default();
        assert_eq!(d.alpha(), 1.0);
        assert!(d.flags().needs_ecn);
        assert!(!d.flags().needs_accecn && !d.flags().wants_ect1 && !d.flags().needs_pacing);
        assert!(!d.has_cong_control());
    }

    #[test]
    fn alpha_updates_once_per_rtt() {
        let mut d = Dctcp::default();
        let mut tp = ecn_sock(10);
        tp.snd_nxt = 10 * 1448;
        d.init(&mut tp);
        assert_eq!(d.next_seq, 10 * 1448);
        // ACKs inside the window do not update α even with CE.
        tp.snd_una = 5 * 1448;
        tp.delivered = 5;
        tp.delivered_ce = 5;
        d.in_ack_event(&mut tp, AckEventFlags::default());
        assert_eq!(d.alpha_raw(), 1024);
        // The ACK reaching next_seq does: F = 5/10 ⇒ α = 1024 − 64 + 32 = 992.
        tp.snd_nxt = 20 * 1448;
        tp.snd_una = 10 * 1448;
        tp.delivered = 10;
        d.in_ack_event(&mut tp, AckEventFlags::default());
        assert_eq!(d.alpha_raw(), 992);
        assert_eq!(d.next_seq, 20 * 1448);
        assert_eq!((d.old_delivered, d.old_delivered_ce), (10, 5));
    }

    /// α_n = F + (1 − F)·(15/16)^n from α_0 = 1 under a constant marked fraction F
    /// (the EWMA α_{n+1} = (15/16)·α_n + F/16 has fixed point F). Integer rounding in
    /// 1/1024 units keeps the kernel value within a few units of the real one.
    #[test]
    fn alpha_converges_to_marked_fraction() {
        for &(f_num, n_pkts) in &[(1u64, 4u64), (1, 10), (1, 100), (0, 100)] {
            let f = f_num as f64 / n_pkts as f64;
            let mut d = Dctcp::default();
            let mut tp = ecn_sock(10);
            d.init(&mut tp);
            for n in 1..=60 {
                round(&mut d, &mut tp, n_pkts, f_num);
                let exact = f + (1.0 - f) * (15.0f64 / 16.0).powi(n);
                // Each step truncates ≤ 1 unit twice; the error accumulates to < 16/1024.
                assert!((d.alpha() - exact).abs() <= 16.0 / 1024.0, "F={f} n={n}: {} vs {exact}", d.alpha());
            }
        }
        // Exact kernel numbers for F = 1/4 (ce term = (1 << 6)/4 = 16):
        // 1024 → 1024 − 64 + 16 = 976 → 976 − 61 + 16 = 931 → 931 − 58 + 16 = 889.
        let mut d = Dctcp::default();
        let mut tp = ecn_sock(10);
        d.init(&mut tp);
        let mut seen = vec![];
        for _ in 0..3 {
            round(&mut d, &mut tp, 4, 1);
            seen.push(d.alpha_raw());
        }
        assert_eq!(seen, vec![976, 931, 889]);
        // After 200 rounds α sits at the fixed point of the integer recursion:
        // α − ⌊α/16⌋ + 16 = α ⇔ ⌊α/16⌋ = 16 ⇔ α ∈ [256, 271]; from above it stops at 271.
        for _ in 0..200 {
            round(&mut d, &mut tp, 4, 1);
        }
        assert_eq!(d.alpha_raw(), 271);
        assert!((d.alpha() - 0.25).abs() < 0.02);
    }

    #[test]
    fn small_alpha_decays_to_zero_mainline() {
        let mut d = Dctcp::new(DctcpParams { shift_g: 4, alpha_on_init: 15 });
        let mut tp = ecn_sock(10);
        d.init(&mut tp);
        assert_eq!(d.alpha_raw(), 15);
        round(&mut d, &mut tp, 10, 0);
        assert_eq!(d.alpha_raw(), 0);
        // From 0, one round with F = 1/100 adds ⌊64/100⌋ = 0; F = 1/10 adds 6.
        round(&mut d, &mut tp, 10, 1);
        assert_eq!(d.alpha_raw(), 6);
    }

    #[test]
    fn ssthresh_is_cwnd_times_one_minus_alpha_half() {
        let mut d = Dctcp::default();
        let mut tp = ecn_sock(100);
        d.init(&mut tp);
        // α = 1: halve.
        assert_eq!(d.ssthresh(&tp), 50);
        assert_eq!(d.loss_cwnd, 100);
        // α = 0.25 (256/1024): 100 − ⌊100·256/2048⌋ = 100 − 12 = 88 ≈ 100·(1 − 0.125).
        d.alpha = 256;
        assert_eq!(d.ssthresh(&tp), 88);
        // α = 0.5: 1000 − 250 = 750.
        d.alpha = 512;
        tp.cwnd = 1000;
        assert_eq!(d.ssthresh(&tp), 750);
        // Floor of 2.
        tp.cwnd = 2;
        d.alpha = 1024;
        assert_eq!(d.ssthresh(&tp), 2);
        // α = 0: no reduction.
        d.alpha = 0;
        tp.cwnd = 40;
        assert_eq!(d.ssthresh(&tp), 40);
    }

    #[test]
    fn loss_halves_overriding_alpha() {
        let mut d = Dctcp::default();
        let mut tp = ecn_sock(100);
        d.init(&mut tp);
        d.alpha = 128;
        // Stack: ssthresh() first (α-based), then set_state(Recovery) halves.
        tp.ssthresh = d.ssthresh(&tp);
        assert_eq!(tp.ssthresh, 94);
        d.set_state(&mut tp, CaState::Recovery);
        assert_eq!(tp.ssthresh, 50);
        // Already in Recovery: no second halving.
        tp.ca_state = CaState::Recovery;
        tp.cwnd = 60;
        d.set_state(&mut tp, CaState::Recovery);
        assert_eq!(tp.ssthresh, 50);
        // RTO: CA_EVENT_LOSS halves the cwnd of the moment.
        tp.ca_state = CaState::Open;
        tp.cwnd = 30;
        d.cwnd_event(&mut tp, CaEvent::Loss);
        assert_eq!(tp.ssthresh, 15);
        assert_eq!(d.loss_cwnd, 30);
        // CWR entry does not halve.
        tp.ssthresh = 20;
        d.set_state(&mut tp, CaState::Cwr);
        assert_eq!(tp.ssthresh, 20);
    }

    #[test]
    fn undo_restores_loss_cwnd() {
        let mut d = Dctcp::default();
        let mut tp = ecn_sock(80);
        d.init(&mut tp);
        d.ssthresh(&tp);
        tp.cwnd = 40;
        assert_eq!(d.undo_cwnd(&tp), 80);
        tp.cwnd = 90;
        assert_eq!(d.undo_cwnd(&tp), 90);
    }

    #[test]
    fn reno_growth() {
        let mut d = Dctcp::default();
        let mut tp = ecn_sock(10);
        d.init(&mut tp);
        tp.is_cwnd_limited = true;
        // Slow start: +1 per delivered packet.
        d.cong_avoid(&mut tp, 10);
        assert_eq!(tp.cwnd, 20);
        // CA: +1 per cwnd delivered.
        tp.ssthresh = 20;
        for _ in 0..19 {
            d.cong_avoid(&mut tp, 1);
        }
        assert_eq!(tp.cwnd, 20);
        d.cong_avoid(&mut tp, 1);
        assert_eq!(tp.cwnd, 21);
    }

    #[test]
    fn falls_back_to_reno_without_ecn() {
        let mut d = RenoFallback::new(Dctcp::default());
        let mut tp = CcSock::new(1448, 10);
        tp.ecn_mode = EcnMode::Off;
        d.init(&mut tp);
        assert!(d.is_reno_fallback());
        assert_eq!(d.name(), "dctcp-reno");
        assert_eq!(d.flags(), CcFlags::default());
        tp.cwnd = 100;
        // Reno halving regardless of α, no α updates.
        assert_eq!(d.ssthresh(&tp), 50);
        tp.delivered = 10;
        tp.delivered_ce = 10;
        tp.snd_una = 1;
        d.in_ack_event(&mut tp, AckEventFlags::default());
        assert_eq!(d.inner().alpha_raw(), 1024);
        tp.prior_cwnd = 120;
        assert_eq!(d.undo_cwnd(&tp), 120);
        // With ECN (RFC 3168 or AccECN) DCTCP stays DCTCP.
        let mut d = RenoFallback::new(Dctcp::default());
        let mut tp = CcSock::new(1448, 10);
        tp.ecn_mode = EcnMode::AccEcn;
        d.init(&mut tp);
        assert!(!d.is_reno_fallback());
        assert_eq!(d.name(), "dctcp");
    }

    /// `dctcp_ece_ack_update`: ECE follows the last segment's CE state; a flip ACKs
    /// at once, first flushing a delayed ACK with the old state for the prior data.
    #[test]
    fn receiver_ce_events_flip_the_echo() {
        let mut d = Dctcp::default();
        let mut tp = ecn_sock(10);
        d.init(&mut tp);
        // Same state (no CE): nothing to do beyond remembering rcv_nxt.
        tp.rcv.rcv_nxt = 1000;
        d.cwnd_event(&mut tp, CaEvent::EcnNoCe);
        assert_eq!(tp.rcv, RcvAckState { rcv_nxt: 1000, ..RcvAckState::default() });
        // CE with a delayed ACK pending: ACK 1000 with ECE = 0, then ACK now with ECE = 1.
        tp.rcv.rcv_nxt = 2000;
        tp.rcv.delack_pending = true;
        d.cwnd_event(&mut tp, CaEvent::EcnIsCe);
        assert_eq!(tp.rcv.send_ack, Some((1000, false)));
        assert!(tp.rcv.ack_now && tp.rcv.demand_cwr);
        // Back to no CE without a pending ACK: no extra ACK, immediate ACK with ECE = 0.
        tp.rcv = RcvAckState { rcv_nxt: 3000, demand_cwr: true, ..RcvAckState::default() };
        d.cwnd_event(&mut tp, CaEvent::EcnNoCe);
        assert_eq!(tp.rcv.send_ack, None);
        assert!(tp.rcv.ack_now && !tp.rcv.demand_cwr);
    }
}
