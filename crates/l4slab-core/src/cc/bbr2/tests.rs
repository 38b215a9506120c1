//! Mechanism tests of BBRv2 / L4S-BBRv2 against the constants of google/bbr
//! v2alpha and L4STeam/linux `tcp_bbr2.c`, driving `cong_control` with rate
//! samples as `tcp_rate.c` produces them.

use super::*;
use crate::time::NS_PER_MS;
use serde_json::json;

const MSS: u32 = 1448;
/// 100 Mbit/s in packets of MSS per µs << 24.
fn bw_100m() -> u32 {
    (100_000_000u64 * BW_UNIT / 8 / MSS as u64 / 1_000_000) as u32
}

fn sock(mode: EcnMode) -> CcSock {
    let mut tp = CcSock::new(MSS, 10);
    tp.now = 10 * NS_PER_MS;
    tp.srtt_us = 10_000;
    tp.min_rtt_us = 10_000;
    tp.ecn_mode = mode;
    tp
}

fn v2(params: serde_json::Value, mode: EcnMode) -> (Bbr2, CcSock) {
    let mut b = build_v2alpha(Some(&params)).unwrap();
    let mut tp = sock(mode);
    b.init(&mut tp);
    (b, tp)
}

/// One round's ACK: `n` packets delivered over `interval_us` (a bandwidth sample
/// of n/interval), RTT `rtt_us`, `lost` packets lost since the sampled packet was sent.
fn round(b: &mut Bbr2, tp: &mut CcSock, n: u32, interval_us: i64, rtt_us: i64, f: impl Fn(&mut RateSample)) {
    tp.now += interval_us as u64 * 1000;
    let mut rs = RateSample {
        prior_delivered: tp.delivered,
        prior_mstamp: tp.now - interval_us as u64 * 1000,
        delivered: n as i64,
        interval_us,
        rtt_us,
        acked_sacked: n,
        prior_in_flight: tp.in_flight(),
        tx_in_flight: tp.in_flight(),
        ..RateSample::default()
    };
    tp.delivered += n as u64;
    tp.delivered_mstamp = tp.now;
    f(&mut rs);
    b.cong_control(tp, &rs);
}

/// Rounds of a flow on a 100 Mbit/s, 10 ms path: 83 packets per 10 ms.
fn steady_rounds(b: &mut Bbr2, tp: &mut CcSock, k: usize) {
    for _ in 0..k {
        round(b, tp, 83, 10_000, 10_000, |_| {});
    }
}

#[test]
fn startup_paces_and_sizes_cwnd_at_2_885() {
    let (b, tp) = v2(json!({}), EcnMode::Off);
    assert_eq!(b.mode_name(), "STARTUP");
    // bbr_high_gain = BBR_UNIT * 2885 / 1000 + 1 = 739 (2.887).
    assert_eq!((b.pacing_gain, b.cwnd_gain), (739, 739));
    assert!((b.pacing_gain as f64 / 256.0 - 2.885).abs() < 0.003);
    // bbr_init_pacing_rate_from_rtt: 2.887 × 10 packets / 10 ms × 0.99.
    let expected = 739.0 / 256.0 * 10.0 * MSS as f64 / 0.010 * 0.99;
    assert!((tp.pacing_rate as f64 / expected - 1.0).abs() < 0.001, "{} vs {expected}", tp.pacing_rate);
    // Below the target cwnd grows by what is acked (slow start).
    let (mut b, mut tp) = v2(json!({}), EcnMode::Off);
    round(&mut b, &mut tp, 10, 10_000, 10_000, |_| {});
    assert_eq!(tp.cwnd, 20);
}

#[test]
fn full_pipe_after_three_rounds_below_25_percent_growth() {
    let (mut b, mut tp) = v2(json!({}), EcnMode::Off);
    // Growth of exactly 25 % per round keeps STARTUP going.
    let mut n = 10u32;
    for _ in 0..8 {
        round(&mut b, &mut tp, n, 10_000, 10_000, |_| {});
        n = n * 5 / 4 + 1;
        assert!(!b.full_bw_reached);
    }
    // Flat bandwidth: the pipe is full after exactly 3 rounds without 25 % growth.
    let (mut b, mut tp) = v2(json!({}), EcnMode::Off);
    round(&mut b, &mut tp, 83, 10_000, 10_000, |_| {});
    for k in 1..=3 {
        assert!(!b.full_bw_reached, "after {k} rounds");
        round(&mut b, &mut tp, 90, 10_000, 10_000, |_| {}); // +8 %: not growth
    }
    assert!(b.full_bw_reached);
    // The same for L4STeam's detector (on the sample bw).
    let mut l = build_l4s(None).unwrap();
    let mut tp = sock(EcnMode::AccEcn);
    l.init(&mut tp);
    round(&mut l, &mut tp, 83, 10_000, 10_000, |_| {});
    for _ in 0..3 {
        assert!(!l.full_bw_reached);
        round(&mut l, &mut tp, 90, 10_000, 10_000, |_| {});
    }
    assert!(l.full_bw_reached);
}

#[test]
fn drain_at_1_over_2_885_until_in_flight_is_one_bdp() {
    let (mut b, mut tp) = v2(json!({}), EcnMode::Off);
    tp.packets_out = 240; // STARTUP's queue: ≈ 2.9 BDP in flight
    steady_rounds(&mut b, &mut tp, 4);
    assert_eq!(b.mode_name(), "DRAIN");
    assert_eq!(b.pacing_gain, 88, "bbr_drain_gain = 256 * 1000 / 2885");
    // ssthresh is exported at DRAIN entry: inflight(max_bw, 1) = BDP (84) + nothing.
    let bdp = b.inflight(&tp, b.max_bw(), BBR_UNIT);
    assert!((84..=86).contains(&bdp), "{bdp}");
    assert_eq!(tp.ssthresh, bdp);
    // Still above the BDP: stays in DRAIN.
    tp.packets_out = bdp + 1;
    steady_rounds(&mut b, &mut tp, 1);
    assert_eq!(b.mode_name(), "DRAIN");
    tp.packets_out = bdp;
    steady_rounds(&mut b, &mut tp, 1);
    // PROBE_BW starts in DOWN; with in flight already at the BDP the same ACK
    // moves on to CRUISE (bbr2_check_time_to_cruise), as in the kernel.
    assert_eq!(b.mode_name(), "PROBE_BW:CRUISE");
    assert_eq!(b.phase_gain[Phase::Down as usize], 192, "v2alpha DOWN gain 0.75");
}

/// A flow in PROBE_BW at 100 Mbit/s × 10 ms.
fn in_probe_bw(b: &mut Bbr2, tp: &mut CcSock) {
    steady_rounds(b, tp, 4);
    tp.packets_out = 50;
    steady_rounds(b, tp, 2);
    assert!(b.mode_name().starts_with("PROBE_BW"), "{}", b.mode_name());
}

#[test]
fn probe_rtt_every_5_s_at_half_the_bdp() {
    let (mut b, mut tp) = v2(json!({}), EcnMode::Off);
    in_probe_bw(&mut b, &mut tp);
    let t0 = tp.now;
    // RTT samples above the minimum: the 5 s PROBE_RTT window runs out.
    let mut entered = None;
    while tp.now < t0 + 6_000 * NS_PER_MS {
        tp.packets_out = 80;
        round(&mut b, &mut tp, 83, 10_000, 12_000, |_| {});
        if b.mode == Mode::ProbeRtt {
            entered = Some(tp.now);
            break;
        }
    }
    let entered = entered.expect("PROBE_RTT within 6 s");
    // The window started at init (tp.now = 10 ms), the last new minimum.
    let since_min = (entered - 10 * NS_PER_MS) as f64 / 1e9;
    assert!((5.0..5.1).contains(&since_min), "{since_min} s");
    // cwnd max(4, BDP/2): BDP = 8.63 packets/ms × 10 ms → 87 → 44.
    let half = b.bdp(b.bw(), BBR_UNIT) / 2;
    assert_eq!(b.probe_rtt_cwnd(), b.bdp(b.bw(), 128));
    assert!(b.probe_rtt_cwnd().abs_diff(half) <= 1);
    assert_eq!(tp.cwnd, b.probe_rtt_cwnd());
    assert_eq!(b.pacing_gain, BBR_UNIT);
    // With in flight at the cap, it lasts 200 ms (and one round), then PROBE_BW.
    tp.packets_out = 40;
    let start = tp.now;
    while b.mode == Mode::ProbeRtt {
        round(&mut b, &mut tp, 40, 10_000, 10_000, |_| {});
        assert!(tp.now - start < 300 * NS_PER_MS);
    }
    let dur = (tp.now - start) / NS_PER_MS;
    assert!((200..=220).contains(&dur), "{dur} ms");
    assert_eq!(b.mode_name(), "PROBE_BW:CRUISE");
    // A tiny BDP: the floor of 4 packets.
    b.min_rtt_us = 500;
    assert_eq!(b.probe_rtt_cwnd(), 4);
}

#[test]
fn inflight_hi_is_cut_when_a_probe_loses_more_than_2_percent_and_not_below() {
    let (b, _) = v2(json!({}), EcnMode::Off);
    let s = |lost: i64| LossSample { tx_in_flight: 1000, lost, ..LossSample::default() };
    // loss_thresh = 5/256 = 1.95 %: 19/1000 is not too high, 20/1000 is.
    assert!(!b.is_inflight_too_high(&s(19)));
    assert!(b.is_inflight_too_high(&s(20)));

    // In a probe (bw_probe_samples), a too-high sample sets inflight_hi and ends UP.
    for (lost, cut) in [(1i64, false), (3, true)] {
        let (mut b, mut tp) = v2(json!({}), EcnMode::Off);
        in_probe_bw(&mut b, &mut tp);
        b.start_bw_probe_refill(&tp, 0);
        tp.packets_out = 84;
        round(&mut b, &mut tp, 83, 10_000, 10_000, |_| {}); // REFILL round → UP
        assert_eq!(b.mode_name(), "PROBE_BW:UP");
        assert!(b.bw_probe_samples);
        tp.packets_out = 100;
        round(&mut b, &mut tp, 83, 10_000, 10_000, |rs| {
            rs.tx_in_flight = 100;
            rs.lost = lost;
        });
        if cut {
            // max(tx_in_flight, 0.7 × target): target = min(BDP+budget, cwnd).
            assert_eq!(b.inflight_hi, 100);
            assert_eq!(b.mode_name(), "PROBE_BW:DOWN");
            assert!(b.prev_probe_too_high);
        } else {
            assert_eq!(b.inflight_hi, INF, "1 % loss leaves inflight_hi unset");
            assert_eq!(b.mode_name(), "PROBE_BW:UP");
        }
    }
}

#[test]
fn a_lost_packet_sets_inflight_hi_where_loss_crossed_2_percent() {
    let (b, _) = v2(json!({}), EcnMode::Off);
    // 10 lost of 200 sent: the previous 9 losses already exceed the 4-packet budget.
    let s = LossSample { tx_in_flight: 200, lost: 10, ..LossSample::default() };
    assert_eq!(b.inflight_hi_from_lost_skb(&s, 1), 199);
    // 3 lost of 100: budget ceil(99 × 5/256) = 2, lost_prev 2 → prefix 0.
    let s = LossSample { tx_in_flight: 100, lost: 3, ..LossSample::default() };
    assert_eq!(b.inflight_hi_from_lost_skb(&s, 1), 99);
    // 2 lost of 150: budget ceil(149 × 5/256) = 3, lost_prev 1 → (3−1)·256/251 = 2.
    let s = LossSample { tx_in_flight: 150, lost: 2, ..LossSample::default() };
    assert_eq!(b.inflight_hi_from_lost_skb(&s, 1), 151);
}

#[test]
fn ecn_alpha_is_an_ewma_with_gain_1_16_from_1() {
    let (mut b, mut tp) = v2(json!({"ecn_enable": true, "ecn_max_rtt_us": 0}), EcnMode::Rfc3168);
    assert_eq!(b.ecn_alpha, 256, "ecn_alpha_init = 1.0");
    // A round with no CE: α = 15/16 · 1 (updated at each round start).
    round(&mut b, &mut tp, 83, 10_000, 10_000, |_| {});
    assert_eq!(b.ecn_alpha, 240);
    round(&mut b, &mut tp, 83, 10_000, 10_000, |_| {});
    assert_eq!(b.ecn_alpha, 225);
    assert!(b.ecn_eligible);
    // 50 % CE for many rounds: α → 0.5 (128), from above, one 1/16 step at a time.
    let mut prev = b.ecn_alpha;
    for _ in 0..100 {
        tp.delivered_ce += 40;
        round(&mut b, &mut tp, 80, 10_000, 10_000, |_| {});
        let step = prev as i64 - b.ecn_alpha as i64;
        assert!(step >= 0 && step as u32 <= prev / 16 + 1);
        prev = b.ecn_alpha;
    }
    assert!((127..=136).contains(&b.ecn_alpha), "{}", b.ecn_alpha);
}

#[test]
fn ecn_response_above_50_percent_ce_and_the_per_round_cut() {
    let (mut b, mut tp) = v2(json!({"ecn_enable": true, "ecn_max_rtt_us": 0}), EcnMode::Rfc3168);
    in_probe_bw(&mut b, &mut tp);
    assert!(b.ecn_eligible);
    let s = |ce: i64| LossSample { delivered: 100, delivered_ce: ce, ..LossSample::default() };
    assert!(b.is_inflight_too_high(&s(50)), "50 % CE is too high (>=)");
    assert!(!b.is_inflight_too_high(&s(49)));
    // Not eligible (ecn_enable off, or min_rtt above ecn_max_rtt_us): CE is ignored.
    let (c, _) = v2(json!({}), EcnMode::Rfc3168);
    assert!(!c.is_inflight_too_high(&s(100)));
    let (mut c, mut tp2) = v2(json!({"ecn_enable": true}), EcnMode::Rfc3168); // max 5 ms < 10 ms
    steady_rounds(&mut c, &mut tp2, 3);
    assert!(!c.ecn_eligible);

    // Outside a probe, an ECE round cuts inflight_lo by 1 − α/3 and (v2alpha) bw_lo too.
    b.start_bw_probe_cruise();
    b.ecn_alpha = 256;
    let cwnd = tp.cwnd;
    let max_bw = b.max_bw();
    tp.delivered_ce += 83; // an all-CE round keeps α at 1
    round(&mut b, &mut tp, 83, 10_000, 10_000, |rs| rs.is_ece = true);
    assert_eq!(b.ecn_alpha, 256);
    let cut = 256 - 85; // 1 − 1.0 × 85/256
    assert_eq!(b.inflight_lo, cwnd * cut / 256);
    assert_eq!(b.bw_lo, ((max_bw as u64 * cut as u64) >> 8) as u32);

    // L4S-BBRv2 cuts inflight_lo only.
    let mut l = build_l4s(None).unwrap();
    let mut tp = sock(EcnMode::AccEcn);
    l.init(&mut tp);
    in_probe_bw(&mut l, &mut tp);
    l.start_bw_probe_cruise();
    l.ecn_alpha = 256;
    let cwnd = tp.cwnd;
    tp.delivered_ce += 83;
    round(&mut l, &mut tp, 83, 10_000, 10_000, |rs| rs.is_ece = true);
    assert_eq!(l.inflight_lo, cwnd * cut / 256);
    assert_eq!(l.bw_lo, INF);
}

#[test]
fn two_rounds_of_half_ce_end_startup() {
    let (mut b, mut tp) = v2(json!({"ecn_enable": true, "ecn_max_rtt_us": 0}), EcnMode::Rfc3168);
    let mut n = 10;
    for k in 0..4 {
        tp.delivered_ce += n as u64 / 2 + 1;
        round(&mut b, &mut tp, n, 10_000, 10_000, |_| {});
        n *= 2;
        // full_ecn_cnt = 2: the second such round ends STARTUP.
        assert_eq!(b.full_bw_reached, k >= 1, "round {k}");
    }
    assert!(b.full_bw_reached);
    assert_ne!(b.inflight_hi, INF, "inflight_hi = inflight(max_bw, 1)");
}

#[test]
fn bbr2_l4s_sends_ect1_only_with_accecn() {
    for (mode, want) in [(EcnMode::AccEcn, Ecn::Ect1), (EcnMode::Rfc3168, Ecn::Ect0), (EcnMode::Off, Ecn::Ect0)] {
        let mut l = build_l4s(None).unwrap();
        let mut tp = sock(mode);
        l.init(&mut tp);
        assert_eq!(l.ect_codepoint(), want, "{mode:?}");
        // Without ECN, BBRv2 still runs (no fallback CC): it is in STARTUP, paced.
        assert_eq!(l.mode_name(), "STARTUP");
    }
    let (b, _) = v2(json!({}), EcnMode::AccEcn);
    assert_eq!(b.ect_codepoint(), Ecn::Ect0, "v2alpha never sets ECT(1)");
    let d = build_l4s(None).unwrap();
    assert!(d.params().ecn_enable && d.params().ecn_max_rtt_us == 0);
    assert_eq!(d.phase_gain, [320, 232, 256, 256]);
}

#[test]
fn receiving_socket_echoes_ce_dctcp_style_only_with_ecn_enable() {
    let mut off = build_v2alpha(None).unwrap();
    let mut tp = sock(EcnMode::Rfc3168);
    off.init(&mut tp);
    tp.rcv = RcvAckState { rcv_nxt: 1000, ..RcvAckState::default() };
    off.cwnd_event(&mut tp, CaEvent::EcnIsCe);
    assert_eq!(tp.rcv, RcvAckState { rcv_nxt: 1000, ..RcvAckState::default() }, "no echo without ecn_enable");

    let mut on = build_v2alpha(Some(&json!({"ecn_enable": true}))).unwrap();
    on.init(&mut tp);
    tp.rcv = RcvAckState { rcv_nxt: 1000, delack_pending: true, ..RcvAckState::default() };
    on.cwnd_event(&mut tp, CaEvent::EcnIsCe);
    assert!(tp.rcv.demand_cwr && tp.rcv.ack_now && !tp.rcv.quickack);
    // prior_rcv_nxt was rcv_nxt at init (1000): that delayed ACK leaves first, with the old state.
    assert_eq!(tp.rcv.send_ack, Some((1000, false)));
    tp.rcv = RcvAckState { rcv_nxt: 2000, demand_cwr: true, ..RcvAckState::default() };
    on.cwnd_event(&mut tp, CaEvent::EcnNoCe);
    assert!(!tp.rcv.demand_cwr && tp.rcv.ack_now);

    let mut fast = build_v2alpha(Some(&json!({"ecn_enable": true, "fast_ack_mode": 2}))).unwrap();
    fast.init(&mut tp);
    tp.rcv = RcvAckState::default();
    fast.cwnd_event(&mut tp, CaEvent::EcnIsCe);
    assert!(tp.rcv.quickack, "fast_ack_mode 2: quick-ACK on CE");
    assert!(on.wants_ce_events());
}

#[test]
fn rto_and_undo_follow_each_tree() {
    let (mut b, mut tp) = v2(json!({}), EcnMode::Off);
    in_probe_bw(&mut b, &mut tp);
    b.start_bw_probe_cruise();
    tp.cwnd = 60;
    b.ssthresh(&tp); // save_cwnd: prior_cwnd = 60
    tp.cwnd = 80;
    b.set_state(&mut tp, CaState::Loss);
    assert_eq!(b.inflight_lo, 60, "v2alpha: prior_cwnd");
    let mut l = build_l4s(None).unwrap();
    let mut tp = sock(EcnMode::AccEcn);
    l.init(&mut tp);
    in_probe_bw(&mut l, &mut tp);
    l.start_bw_probe_cruise();
    tp.cwnd = 60;
    l.ssthresh(&tp);
    tp.cwnd = 80;
    l.set_state(&mut tp, CaState::Loss);
    assert_eq!(l.inflight_lo, 80, "L4STeam: max(cwnd, prior_cwnd)");
    // Undo restores the bounds saved by ssthresh and returns prior_cwnd.
    l.inflight_lo = 30;
    assert_eq!(l.undo_cwnd(&tp), 60);
    assert_eq!(l.inflight_lo, INF, "max(30, saved ∞)");
}

#[test]
fn parameters_are_the_kernels_and_foreign_ones_are_refused() {
    let d = Bbr2Params::default();
    assert_eq!((d.high_gain, d.drain_gain, d.cwnd_gain, d.beta, d.loss_thresh), (739, 88, 512, 76, 5));
    assert_eq!((d.ecn_alpha_gain, d.ecn_factor, d.ecn_thresh, d.ecn_max_rtt_us), (16, 85, 128, 5000));
    assert_eq!((d.inflight_headroom, d.probe_rtt_win_ms, d.probe_rtt_cwnd_gain), (38, 5000, 128));
    assert!(!d.ecn_enable);
    let e = build_l4s(Some(&json!({"ecn_bw_lo": false}))).err().unwrap();
    assert!(e.starts_with("ecn_bw_lo: unknown bbr2-l4s parameter"), "{e}");
    let e = build_v2alpha(Some(&json!({"bw_probe_exit": 1}))).err().unwrap();
    assert!(e.starts_with("bw_probe_exit: unknown bbr2 parameter"), "{e}");
    let e = crate::cc::build("bbr2", Some(&json!({"beta": 300}))).err().unwrap();
    assert!(e.starts_with("beta: 300 is out of range"), "{e}");
    let e = build_v2alpha(Some(&json!({"pacing_gain": [256, 256]}))).err().unwrap();
    assert_eq!(e, "pacing_gain: 2 values given, 8 allowed");
    // Every spec'd default is the struct's default.
    for (specs, defaults) in [(v2alpha_specs(), Bbr2Params::default()), (l4s_specs(), Bbr2Params::l4s())] {
        let v = serde_json::to_value(&defaults).unwrap();
        for p in specs {
            assert_eq!(p.default, v[p.name], "{}", p.name);
        }
    }
}

#[test]
fn cc_state_reports_the_model() {
    let (mut b, mut tp) = v2(json!({}), EcnMode::Off);
    in_probe_bw(&mut b, &mut tp);
    let s = b.cc_state(&tp);
    assert!(s.mode.unwrap().starts_with("PROBE_BW:"));
    assert_eq!(s.min_rtt_us, Some(10_000));
    // 83 packets per 10 ms ≈ 12.0 MB/s.
    let bw = s.bw_bytes_per_s.unwrap() as f64;
    assert!((bw / (83.0 * MSS as f64 / 0.010) - 1.0).abs() < 0.01, "{bw}");
    assert!(s.inflight_hi.is_none() && s.inflight_lo.is_none());
    assert!(bw_100m() > 0);
}

/// The L4STeam ECN path as audited against 009adfe4: with the defaults
/// (`bbr_ecn_max_rtt_us = 0`, "ECN allowed at any RTT" in `bbr2_update_ecn_alpha`)
/// a 10 ms flow is ECN-eligible from its first round; a marked round in CRUISE cuts
/// `inflight_lo` by 1 − α·ecn_factor with no floor (`bbr2_adapt_lower_bounds`: only
/// the loss response takes max(inflight_latest, …)), so it falls below the volume the
/// round delivered; `bw_lo` stays unset; only REFILL (`bbr2_reset_lower_bounds`) lifts it.
#[test]
fn l4s_ecn_cut_is_unfloored_and_only_refill_lifts_it() {
    let mut l = build_l4s(None).unwrap();
    let mut tp = sock(EcnMode::AccEcn);
    l.init(&mut tp);
    in_probe_bw(&mut l, &mut tp);
    assert!(l.ecn_eligible, "ecn_max_rtt_us = 0: eligible at a 10 ms min RTT");
    l.start_bw_probe_cruise();
    l.ecn_alpha = 256;
    let mut lo = tp.cwnd;
    for _ in 0..3 {
        tp.delivered_ce += 83;
        round(&mut l, &mut tp, 83, 10_000, 10_000, |rs| rs.is_ece = true);
        assert_eq!(l.inflight_lo, lo * (256 - 85) / 256);
        lo = l.inflight_lo;
    }
    assert!(l.inflight_lo < 83, "cut below the round's 83 delivered packets: {}", l.inflight_lo);
    assert_eq!(tp.cwnd, l.inflight_lo.max(4), "CRUISE is cwnd-limited at inflight_lo");
    assert_eq!(l.bw_lo, INF);
    // Rounds without marks leave it where it is.
    round(&mut l, &mut tp, 83, 10_000, 10_000, |_| {});
    assert_eq!(l.inflight_lo, lo);
    l.start_bw_probe_refill(&tp, 0);
    assert_eq!(l.inflight_lo, INF);
}
