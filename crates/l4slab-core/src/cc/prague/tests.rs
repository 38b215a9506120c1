//! Unit tests of TCP Prague against the arithmetic of L4STeam/linux
//! `net/ipv4/tcp_prague.c` (v0.7 at 893e147 unless a test says v0.6, 02573a2):
//! ACK-by-ACK window, α, pacing and segment-sizing steps on a bare [`CcSock`].

use super::*;
use crate::time::NS_PER_MS;

pub(super) const MSS: u32 = 1448; // MTU 1500 with timestamps

/// An AccECN socket with the given cwnd and SRTT, Prague initialised at t = 0.
pub(super) fn setup(params: PragueParams, cwnd: u32, srtt_us: u64) -> (Prague, CcSock) {
    let mut tp = CcSock::new(MSS, cwnd);
    tp.ecn_mode = EcnMode::AccEcn;
    tp.srtt_us = srtt_us;
    tp.min_rtt_us = srtt_us as u32;
    tp.snd_nxt = cwnd as u64 * MSS as u64;
    let mut p = Prague::new(params);
    p.init(&mut tp);
    (p, tp)
}

/// Congestion avoidance, RTT-independent (round ≥ 4), AQM seen.
pub(super) fn steady(p: &mut Prague, tp: &mut CcSock, cwnd: u32) {
    tp.cwnd = cwnd;
    tp.ssthresh = cwnd;
    p.frac = (cwnd as u64) << CWND_UNIT;
    p.round = 4;
    p.saw_ce = true;
    p.refresh_ai(tp);
}

pub(super) fn rs(acked: u32, ce: u32) -> RateSample {
    RateSample { acked_sacked: acked, ece_delta: ce, delivered: acked as i64, ..RateSample::default() }
}

/// One ACK: `acked` packets newly delivered, `ce` of them CE; the stack enters CWR
/// first when ce > 0 (`tcp_ack` → `tcp_fastretrans_alert` → `tcp_try_to_open` →
/// `tcp_enter_cwr`, then `tcp_cong_control`).
pub(super) fn ack(p: &mut Prague, tp: &mut CcSock, acked: u32, ce: u32) {
    tp.delivered += acked as u64;
    tp.delivered_ce += ce as u64;
    tp.snd_una += acked as u64 * MSS as u64;
    tp.snd_nxt = tp.snd_nxt.max(tp.snd_una);
    if ce > 0 && tp.ca_state < CaState::Cwr {
        p.set_state(tp, CaState::Cwr);
        tp.ca_state = CaState::Cwr;
    }
    p.cong_control(tp, &rs(acked, ce));
}

#[test]
fn defaults_and_flags() {
    let p = PragueParams::default();
    assert_eq!(p.version, PragueVersion::V07);
    assert_eq!((p.burst_shift, p.max_tso_segs, p.rtt_transition, p.rtt_target_us), (12, 0, 4, 25_000));
    assert_eq!((p.alpha_mode, p.cwnd_mode, p.cwnd_transit, p.ecn_fallback), (0, 2, 4, 0));
    assert_eq!(p.segment_sizing, SegmentSizing::Default);
    assert_eq!(PragueParams::v06().rtt_transition, 500);
    let (pr, tp) = setup(PragueParams::default(), 10, 10_000);
    let f = pr.flags();
    assert!(f.needs_ecn && f.needs_accecn && f.wants_ect1 && f.no_fallback_rfc3168 && f.needs_pacing);
    assert_eq!(pr.ect_codepoint(), Ecn::Ect1);
    assert!(pr.has_cong_control());
    assert_eq!(pr.name(), "prague");
    // `prague_init`: α₀ = 0, frac = IW, MTU 1500, rate = 1500·10/10 ms = 1.5 MB/s, ×2 in slow start.
    assert_eq!(pr.alpha(), 0.0);
    assert_eq!(pr.frac, 10 << 20);
    assert_eq!(pr.mtu_cache, 1500);
    assert_eq!(pr.rate, 1_500_000);
    assert_eq!(tp.pacing_rate, 3_000_000);
    assert_eq!(pr.tso_segs(&tp, tp.mss), Some(1));
}

#[test]
fn falls_back_to_reno_without_accecn() {
    for mode in [EcnMode::Off, EcnMode::Rfc3168] {
        let mut tp = CcSock::new(MSS, 10);
        tp.ecn_mode = mode;
        tp.srtt_us = 10_000;
        let mut p = RenoFallback::new(Prague::default());
        // Before init the SYN asks for AccECN + ECT(1).
        assert!(p.flags().needs_accecn);
        p.init(&mut tp);
        assert!(p.is_reno_fallback());
        assert_eq!(p.name(), "prague-reno");
        assert_eq!(p.flags(), CcFlags::default());
        assert_eq!(p.ect_codepoint(), Ecn::Ect0); // unused: the stack sends Not-ECT with ECN off
        assert!(!p.has_cong_control());
        assert_eq!(p.tso_segs(&tp, tp.mss), None);
        // Reno: ½ on loss, +1 per delivered packet in slow start, undo to prior_cwnd.
        tp.cwnd = 40;
        assert_eq!(p.ssthresh(&tp), 20);
        tp.is_cwnd_limited = true;
        p.cong_avoid(&mut tp, 5);
        assert_eq!(tp.cwnd, 45);
        tp.prior_cwnd = 60;
        assert_eq!(p.undo_cwnd(&tp), 60);
    }
}

#[test]
fn first_ce_halves_frac_with_alpha_mode_0() {
    let (mut p, mut tp) = setup(PragueParams::default(), 10, 10_000);
    tp.is_cwnd_limited = true;
    // Slow start on unmarked packets: +1 per packet, frac follows cwnd.
    ack(&mut p, &mut tp, 2, 0);
    assert_eq!(tp.cwnd, 12);
    assert_eq!(p.frac, 12 << 20);
    // An all-CE ACK: CWR with α = 0 reduces nothing, then update_cwnd halves frac.
    ack(&mut p, &mut tp, 2, 2);
    assert!(p.saw_ce());
    assert_eq!(p.frac, 6 << 20);
    // cwnd walks down by one per ACK and ends slow start (ssthresh = cwnd).
    assert_eq!((tp.cwnd, tp.ssthresh), (11, 11));
    for _ in 0..10 {
        p.cong_control(&mut tp, &rs(0, 0));
    }
    assert_eq!(tp.cwnd, 6);
    // Only the first mark halves.
    let f = p.frac;
    p.update_cwnd(&mut tp, &rs(1, 1));
    assert_eq!(p.frac, f);

    // If the first CE ACK also covers unmarked packets, the slow-start
    // re-sync of frac cancels the halving, as in the kernel (Prague beside
    // CUBIC in a deep FQ-CoDel, docs/fidelity-prague.md):
    // tcp_prague.c v0.7 prague_update_cwnd halves frac_cwnd on the first
    // `rs->ece_delta`, then, with `acked -= rs->ece_delta` > 0 and
    // tcp_in_slow_start, runs `tcp_slow_start` and `ca->frac_cwnd =
    // tcp_snd_cwnd(tp) << CWND_UNIT`. The stack's tcp_enter_cwr →
    // tcp_init_cwnd_reduction took ssthresh from prague_ssthresh, which returns
    // `tp->snd_ssthresh` unchanged, and prague_enter_cwr reduced by α/2 = 0: slow
    // start goes on. Only an ACK whose packets are all marked (ADJUST's decrement
    // sets ssthresh = cwnd) or a loss ends it.
    let (mut p, mut tp) = setup(PragueParams::default(), 10, 10_000);
    tp.is_cwnd_limited = true;
    let ssthresh = tp.ssthresh;
    ack(&mut p, &mut tp, 3, 1);
    assert_eq!(tp.cwnd, 12);
    assert_eq!(p.frac, 12 << 20);
    assert_eq!(tp.ssthresh, ssthresh, "prague_ssthresh keeps the stack's value");
    assert!(tp.in_slow_start() && p.saw_ce());
    // Later marked ACKs with unmarked packets keep growing the window.
    tp.ca_state = CaState::Open;
    ack(&mut p, &mut tp, 3, 1);
    assert_eq!(tp.cwnd, 14);
    assert!(tp.in_slow_start());

    // alpha_mode 1: α₀ = 1, the CWR entry halves instead (frac·(1 − 1/2)).
    let (mut p, mut tp) = setup(PragueParams { alpha_mode: 1, ..PragueParams::default() }, 10, 10_000);
    assert_eq!(p.alpha(), 1.0);
    ack(&mut p, &mut tp, 2, 2);
    assert_eq!(p.frac, 5 << 20);
}

#[test]
fn alpha_ewma_once_per_virtual_rtt_after_transition() {
    // RTT 5 ms: α is updated every RTT for the first 4 post-slow-start rounds,
    // then once per max(RTT, 25 ms) = every 5th RTT.
    let (mut p, mut tp) = setup(PragueParams::default(), 20, 5_000);
    tp.ssthresh = 20; // out of slow start
    p.saw_ce = true;
    let mut updates = vec![];
    let mut last_round = p.round();
    for i in 1..=40u64 {
        tp.now = i * 5 * NS_PER_MS;
        tp.snd_nxt += 20 * MSS as u64;
        // One RTT of data: 20 packets, 5 CE (F = 1/4), acknowledged up to next_seq.
        tp.delivered += 20;
        tp.delivered_ce += 5;
        tp.snd_una = tp.snd_nxt - 20 * MSS as u64;
        p.cong_control(&mut tp, &rs(0, 0));
        if p.round() != last_round {
            updates.push(i * 5);
            last_round = p.round();
        }
    }
    assert_eq!(updates, vec![5, 10, 15, 20, 45, 70, 95, 120, 145, 170, 195]);
    // α after n updates from 0 with F = 1/4: F·(1 − (15/16)^n); F is exact per
    // round (the 25 ms rounds cover 5 RTTs of marks).
    let n = updates.len() as i32;
    let expect = 0.25 * (1.0 - (15.0f64 / 16.0).powi(n));
    assert!((p.alpha() - expect).abs() < 1e-6, "{} vs {expect}", p.alpha());
}

#[test]
fn reduction_frac_times_one_minus_half_alpha_at_most_every_25ms() {
    let (mut p, mut tp) = setup(PragueParams { cwnd_mode: 0, ..PragueParams::default() }, 100, 5_000);
    steady(&mut p, &mut tp, 100);
    p.upscaled_alpha = (1u64 << 23) << PRAGUE_SHIFT_G; // α = 0.5
    tp.now = 100 * NS_PER_MS;
    p.set_state(&mut tp, CaState::Cwr);
    assert_eq!(p.frac, 75 << 20); // 100·(1 − 0.25)
    assert_eq!(p.rate, p.frac_to_rate(&tp));
    tp.ca_state = CaState::Cwr;
    p.set_state(&mut tp, CaState::Open);
    tp.ca_state = CaState::Open;
    // A second CWR episode 10 ms later is ignored (RTT-independent, < 25 ms).
    tp.now = 110 * NS_PER_MS;
    p.set_state(&mut tp, CaState::Cwr);
    assert_eq!(p.frac, 75 << 20);
    tp.ca_state = CaState::Open;
    // 25 ms after the last applied reduction: applied again.
    tp.now = 125 * NS_PER_MS;
    p.set_state(&mut tp, CaState::Cwr);
    assert_eq!(p.frac, (75 << 20) - (75 << 20) / 4); // 56.25
                                                     // The integer cwnd then walks down by 1 per ACK, setting ssthresh.
    tp.ca_state = CaState::Cwr;
    p.cong_control(&mut tp, &rs(0, 0));
    assert_eq!((tp.cwnd, tp.ssthresh), (99, 99));
    // Before the transition there is no 25 ms gating.
    let (mut p, mut tp) = setup(PragueParams::default(), 100, 5_000);
    steady(&mut p, &mut tp, 100);
    p.round = 1;
    p.upscaled_alpha = (1u64 << 23) << PRAGUE_SHIFT_G;
    tp.now = 100 * NS_PER_MS;
    p.set_state(&mut tp, CaState::Cwr);
    tp.now = 105 * NS_PER_MS;
    p.set_state(&mut tp, CaState::Cwr);
    assert_eq!(p.frac, (75 << 20) - (75 << 20) / 4);
    // Rounding is unbiased: α = 0.5 on frac = 1 + 2^-20: reduction = round(0.25·frac).
    p.frac = ONE_CWND + 1;
    p.round = 0;
    p.set_state(&mut tp, CaState::Cwr);
    assert_eq!(p.frac, ONE_CWND + 1 - ((ONE_CWND + 1 + 2) / 4));
}

#[test]
fn ai_is_rtt_scaled_after_transition() {
    let (mut p, mut tp) = setup(PragueParams::default(), 20, 5_000);
    tp.is_cwnd_limited = true;
    steady(&mut p, &mut tp, 20);
    p.rate_mode = false;
    p.next_seq = u64::MAX; // no α update during the test
                           // (5 ms / 25 ms)² = 0.04 packets per RTT.
    assert_eq!(p.ai, 41_943);
    assert!((p.ai() - 0.04).abs() < 1e-6);
    let f0 = p.frac_cwnd();
    for _ in 0..20 {
        ack(&mut p, &mut tp, 1, 0);
    }
    assert!((p.frac_cwnd() - f0 - 0.04).abs() < 1e-4, "{}", p.frac_cwnd() - f0);
    // One virtual RTT (25 ms = 5 RTTs): +0.2 packet = +1500 B·(5/25) per 5 ms,
    // i.e. the rate grows by one 1500-B packet per 25 ms per 25 ms.
    for _ in 0..80 {
        ack(&mut p, &mut tp, 1, 0);
    }
    assert!((p.frac_cwnd() - f0 - 0.2).abs() < 1e-3, "{}", p.frac_cwnd() - f0);
    // CE-marked packets earn nothing.
    let f1 = p.frac;
    ack(&mut p, &mut tp, 4, 4);
    assert!(p.frac <= f1);
    // Before the transition (round < 4) the AI is the Reno +1 per RTT.
    p.round = 3;
    p.refresh_ai(&tp);
    assert_eq!(p.ai, ONE_CWND);
    // Above 25 ms no scaling.
    let (mut p, tp) = setup(PragueParams::default(), 20, 40_000);
    p.round = 10;
    p.refresh_ai(&tp);
    assert_eq!(p.ai, ONE_CWND);
    // With 750-B packets the packet AI doubles (constant bytes).
    let (mut p, mut tp) = setup(PragueParams::default(), 20, 40_000);
    tp.mss = 750 - MSS_TO_MTU;
    tp.is_cwnd_limited = true;
    steady(&mut p, &mut tp, 20);
    p.next_seq = u64::MAX;
    // One ACK at frac = 20: (1/20)·(1500/750) = 0.1 packet of 750 B.
    let f0 = p.frac_cwnd();
    ack(&mut p, &mut tp, 1, 0);
    assert!((p.frac_cwnd() - f0 - 0.1).abs() < 1e-5, "{}", p.frac_cwnd() - f0);
}

/// The growth test of `prague_update_cwnd` by vintage: 893e147 adds only while
/// `tcp_is_cwnd_limited` (a window that pacing kept from filling earns nothing); the
/// Oct 2024 netdev posting ("[PATCH net-next 44/44]", `if (acked <= 0 ||
/// ca->in_loss || tp->app_limited) goto adjust;`) adds on every unmarked ACK outside
/// an application-limited period.
#[test]
fn growth_gate_cwnd_limited_vs_app_limited() {
    for gate in [GrowthGate::CwndLimited, GrowthGate::AppLimited] {
        let params = PragueParams { growth_gate: gate, ..PragueParams::default() };
        let (mut p, mut tp) = setup(params, 20, 20_000);
        steady(&mut p, &mut tp, 20);
        p.rate_mode = false;
        p.next_seq = u64::MAX;
        // Paced below the window: in flight short of cwnd, the last window not full.
        tp.is_cwnd_limited = false;
        tp.max_packets_out = 15;
        let f0 = p.frac;
        for _ in 0..20 {
            ack(&mut p, &mut tp, 1, 0);
        }
        // ai = (20 ms / 25 ms)² = 0.64 packet per window: 20 ACKs of 0.64/frac each
        // with frac rising from 20 to 20.63 add ≈ 0.6306 packet; or nothing.
        let grew = (p.frac - f0) as f64 / ONE_CWND as f64;
        match gate {
            GrowthGate::CwndLimited => assert_eq!(p.frac, f0, "not cwnd-limited: no AI"),
            GrowthGate::AppLimited => assert!((grew - 0.6306).abs() < 1e-3, "{grew}"),
        }
        // An application-limited period stops both.
        tp.app_limited = tp.delivered + 100;
        let f1 = p.frac;
        ack(&mut p, &mut tp, 1, 0);
        assert_eq!(p.frac, f1, "{gate:?}: app-limited");
    }
    assert_eq!(PragueParams::default().growth_gate, GrowthGate::CwndLimited);
}

#[test]
fn rate_mode_at_4_packets_with_wobble() {
    let (mut p, mut tp) = setup(PragueParams::default(), 4, 20_000);
    steady(&mut p, &mut tp, 4);
    p.next_seq = u64::MAX;
    p.alpha_stamp_us = 0;
    tp.now = NS_PER_MS;
    p.cong_control(&mut tp, &rs(1, 0));
    // 4 × 1500 B ≤ 4 × MTU_SYS ⇒ rate mode; rate = 1500·4/20 ms = 300 kB/s.
    assert!(p.in_rate_mode());
    assert_eq!(p.rate, 300_000);
    // frac from rate with the slow SRTT average: 4·10^6/2^20 = 3.81 packets.
    assert_eq!(p.frac, 4_000_000);
    assert_eq!(tp.cwnd, 4);
    // First half of the virtual RTT (25 ms) after the α stamp: +4/128.
    tp.now = 5 * NS_PER_MS;
    p.cong_control(&mut tp, &rs(1, 0));
    assert_eq!(tp.pacing_rate, 309_375);
    assert!((tp.pacing_rate as f64 / p.rate as f64 - 1.03125).abs() < 1e-9);
    // Second half: −4/128.
    tp.now = 13 * NS_PER_MS;
    p.cong_control(&mut tp, &rs(1, 0));
    assert_eq!(tp.pacing_rate, 290_625);
    // cwnd stays a (≥ 2) upper bound.
    assert_eq!(tp.cwnd, 4);
    // Rate-mode CWR: rate·(1 − α/2), floor 12 500 B/s.
    p.upscaled_alpha = (1u64 << 24) << PRAGUE_SHIFT_G; // α = 1
    tp.now = 100 * NS_PER_MS;
    p.set_state(&mut tp, CaState::Cwr);
    assert_eq!(p.rate, 150_000);
    p.rate = 20_000;
    tp.now = 200 * NS_PER_MS;
    p.set_state(&mut tp, CaState::Cwr);
    assert_eq!(p.rate, MINIMUM_RATE);
    // 5 packets of 1500 B > 6000 B ⇒ back to window mode.
    let (mut p, mut tp) = setup(PragueParams::default(), 5, 20_000);
    steady(&mut p, &mut tp, 5);
    p.next_seq = u64::MAX;
    p.cong_control(&mut tp, &rs(1, 0));
    assert!(!p.in_rate_mode());
    // No rate mode before the first CE.
    let (mut p, mut tp) = setup(PragueParams::default(), 4, 20_000);
    steady(&mut p, &mut tp, 4);
    p.saw_ce = false;
    p.next_seq = u64::MAX;
    p.cong_control(&mut tp, &rs(1, 0));
    assert!(!p.in_rate_mode());
}

#[test]
fn rate_mode_ai_about_one_packet_per_vrtt() {
    // Rate-mode AI (`prague_rate_scaled_ai_ack_increase`): ≈ +1500 B/vRTT of rate per vRTT (+~10 % from the
    // 2^23 and 2^20 fixed-point factors).
    let (mut p, mut tp) = setup(PragueParams::default(), 4, 20_000);
    steady(&mut p, &mut tp, 4);
    tp.is_cwnd_limited = true;
    p.rate_mode = true;
    p.rate = 240_000;
    p.next_seq = u64::MAX;
    // Per ACK: ⌊(1500 << 23)/vRTT₈⌋ = 62 914 spread over vcwnd = ⌈0.954·4⌉ = 4.
    p.update_cwnd(&mut tp, &rs(1, 0));
    assert_eq!(p.rate, 240_000 + 15_729);
    // Over one vRTT of ACKs at 2.4 MB/s (vcwnd 39 ≈ 40 packets per 25 ms).
    p.rate = 2_400_000;
    let r0 = p.rate;
    for _ in 0..39 {
        p.update_cwnd(&mut tp, &rs(1, 0));
    }
    let gain = (p.rate - r0) as f64;
    let nominal = 1500.0 / 0.025;
    assert!(gain > nominal && gain < 1.12 * nominal, "{gain}");
}

#[test]
fn pacing_100pct_in_ca_200pct_in_ss_floor_12500() {
    let (mut p, mut tp) = setup(PragueParams::default(), 10, 10_000);
    // Slow start (cwnd < ssthresh/2): 2 × 1500·10/10 ms.
    p.update_pacing_rate(&mut tp);
    assert_eq!(tp.pacing_rate, 3_000_000);
    tp.ssthresh = 10;
    p.update_pacing_rate(&mut tp);
    assert_eq!(tp.pacing_rate, 1_500_000);
    // Floor: 2 packets per second is 3000 B/s < 100 kb/s.
    let (mut p, mut tp) = setup(PragueParams::default(), 2, 1_000_000);
    tp.ssthresh = 2;
    p.update_pacing_rate(&mut tp);
    assert_eq!(tp.pacing_rate, 12_500);
    assert_eq!(p.rate, MINIMUM_RATE);
    assert_eq!(p.frac_to_rate(&tp), MINIMUM_RATE);
}

#[test]
fn tso_burst_is_244us_of_data() {
    let (mut p, mut tp) = setup(PragueParams::default(), 10, 10_000);
    tp.ssthresh = 10;
    // 1 Gb/s = 125 MB/s ⇒ ⌊83 333 pkt/s / 4096⌋ = 20.
    p.frac = 833 << 20;
    p.update_pacing_rate(&mut tp);
    assert_eq!(tp.pacing_rate, 124_950_000);
    assert_eq!(p.tso_segs(&tp, tp.mss), Some(20));
    // 100 Mb/s ⇒ 2; below ≈ 98 Mb/s ⇒ 1.
    p.frac = 84 << 20;
    p.update_pacing_rate(&mut tp);
    assert_eq!(p.tso_segs(&tp, tp.mss), Some(2));
    p.frac = 80 << 20;
    p.update_pacing_rate(&mut tp);
    assert_eq!(p.tso_segs(&tp, tp.mss), Some(1));
    // prague_max_tso_segs caps.
    let (mut p, mut tp) = setup(PragueParams { max_tso_segs: 8, ..PragueParams::default() }, 10, 10_000);
    tp.ssthresh = 10;
    p.frac = 833 << 20;
    p.update_pacing_rate(&mut tp);
    assert_eq!(p.tso_segs(&tp, tp.mss), Some(8));
}

#[test]
fn loss_halves_blocks_ai_and_undo_restores() {
    let (mut p, mut tp) = setup(PragueParams { cwnd_mode: 0, ..PragueParams::default() }, 40, 10_000);
    steady(&mut p, &mut tp, 40);
    tp.is_cwnd_limited = true;
    p.next_seq = u64::MAX;
    let rate0 = p.rate;
    p.set_state(&mut tp, CaState::Recovery);
    tp.ca_state = CaState::Recovery;
    assert_eq!(p.frac, 20 << 20);
    assert!(p.in_loss());
    assert_eq!(p.loss_cwnd, 40);
    // No AI while in loss; cwnd walks down.
    ack(&mut p, &mut tp, 2, 0);
    assert_eq!(p.frac, 20 << 20);
    assert_eq!(tp.cwnd, 39);
    // Spurious: undo restores rate and cwnd.
    let c = p.undo_cwnd(&tp);
    assert_eq!(c, 40);
    assert!(!p.in_loss());
    assert!(p.rate >= rate0);
    // Open clears in_loss.
    tp.ca_state = CaState::Open;
    p.set_state(&mut tp, CaState::Recovery);
    tp.ca_state = CaState::Recovery;
    assert!(p.in_loss());
    // Re-entering the current state is a no-op (prague_state).
    let f = p.frac;
    p.set_state(&mut tp, CaState::Recovery);
    assert_eq!(p.frac, f);
    p.set_state(&mut tp, CaState::Open);
    assert!(!p.in_loss());
    // RTO: CA_EVENT_LOSS halves, no 25 ms gating.
    tp.ca_state = CaState::Open;
    let f = p.frac;
    p.cwnd_event(&mut tp, CaEvent::Loss);
    assert_eq!(p.frac, f - (f >> 1));
    // ssthresh hook leaves the stack's value.
    tp.ssthresh = 33;
    assert_eq!(p.ssthresh(&tp), 33);
}

#[test]
fn registered_by_name() {
    assert_eq!(by_name("prague").unwrap().name(), "prague");
    assert_eq!(by_name("prague-v06").unwrap().name(), "prague");
    assert_eq!(by_name("dctcp").unwrap().name(), "dctcp");
    assert!(KNOWN.contains(&"prague") && KNOWN.contains(&"dctcp") && KNOWN.contains(&"prague-v06"));
}
