//! Mechanism tests of BBRv3 against google/bbr v3 `net/ipv4/tcp_bbr.c`.
//!
//! [`Pipe`] is a small packet-level path built for these tests only (the engine's
//! TCP lives in `tcp/`, which `cc` must not depend on): a paced sender, one
//! bottleneck of fixed rate with a FIFO that sets CE above a sojourn threshold,
//! a fixed propagation RTT and one ACK per packet with the DCTCP-style precise
//! echo (`ecn_low` promises precise ACKs). Rate samples follow
//! net/ipv4/tcp_rate.c (the snapshot of the most recently sent delivered packet).

use super::*;
use std::collections::VecDeque;

const MSS: u32 = 1448;

#[derive(Clone, Copy)]
struct Sent {
    send_ns: u64,
    ack_ns: u64,
    ce: bool,
    tx: SkbTx,
}

/// A paced sender over one bottleneck (see the module doc).
struct Pipe {
    cc: Bbr3,
    tp: CcSock,
    /// Bottleneck serialisation time per packet, ns.
    tx_ns: u64,
    rtt_ns: u64,
    /// Sojourn above which the bottleneck sets CE, ns (`None`: never).
    ce_threshold_ns: Option<u64>,
    link_free_ns: u64,
    next_send_ns: u64,
    flight: VecDeque<Sent>,
    /// `tp->high_seq` of the current CWR episode.
    high_seq: u64,
}

impl Pipe {
    /// `rate_mbit` Mbit/s of 1448-byte payloads, `rtt_ms` base RTT; ECN negotiated
    /// (RFC 3168) with the route's `ecn_low` as given.
    fn new(rate_mbit: u64, rtt_us: u64, ecn_low: bool, ce_threshold_ns: Option<u64>) -> Self {
        Self::with(Bbr3Params::default(), rate_mbit, rtt_us, ecn_low, ce_threshold_ns)
    }

    fn with(p: Bbr3Params, rate_mbit: u64, rtt_us: u64, ecn_low: bool, ce_threshold_ns: Option<u64>) -> Self {
        let mut tp = CcSock::new(MSS, 10);
        tp.rng = crate::rng::stream(1, crate::rng::Stream::Flow(0));
        tp.ecn_mode = EcnMode::Rfc3168;
        tp.ecn_low = ecn_low;
        tp.paced = true;
        // The handshake gave one RTT sample at t = 1 ms.
        tp.now = 1_000_000;
        tp.srtt_us = rtt_us;
        tp.min_rtt_us = rtt_us as u32;
        let mut cc = Bbr3::new(p);
        cc.init(&mut tp);
        let tx_ns = MSS as u64 * 8 * 1000 / rate_mbit;
        Pipe {
            cc,
            tp,
            tx_ns,
            rtt_ns: rtt_us * 1000,
            ce_threshold_ns,
            link_free_ns: 0,
            next_send_ns: 1_000_000,
            flight: VecDeque::new(),
            high_seq: 0,
        }
    }

    /// BDP in packets.
    fn bdp(&self) -> f64 {
        self.rtt_ns as f64 / self.tx_ns as f64
    }

    fn send(&mut self, now: u64) {
        let tp = &mut self.tp;
        if tp.packets_out == 0 {
            // tcp_rate_skb_sent: a flight from idle restarts the sampling clocks.
            tp.first_tx_mstamp = now;
            tp.delivered_mstamp = now;
            self.cc.cwnd_event(tp, CaEvent::TxStart);
        }
        let tx = SkbTx {
            first_tx_mstamp: tp.first_tx_mstamp,
            delivered_mstamp: tp.delivered_mstamp,
            delivered: tp.delivered,
            delivered_ce: tp.delivered_ce,
            in_flight: tp.in_flight() + 1,
            lost: tp.lost,
            is_app_limited: tp.app_limited != 0,
        };
        tp.packets_out += 1;
        tp.snd_nxt += MSS as u64;
        let depart = self.link_free_ns.max(now) + self.tx_ns;
        let sojourn = depart - now - self.tx_ns;
        self.link_free_ns = depart;
        let ce = self.ce_threshold_ns.is_some_and(|t| sojourn > t);
        self.flight.push_back(Sent { send_ns: now, ack_ns: depart + self.rtt_ns, ce, tx });
        // EDT pacing (tcp_update_skb_after_send), one packet per skb.
        let rate = tp.pacing_rate.max(1);
        self.next_send_ns = self.next_send_ns.max(now) + MSS as u64 * 1_000_000_000 / rate;
        tp.wstamp_ns = self.next_send_ns;
        tp.is_cwnd_limited = tp.in_flight() >= tp.cwnd;
    }

    fn ack(&mut self, now: u64) {
        let s = self.flight.pop_front().unwrap();
        let tp = &mut self.tp;
        tp.now = now;
        let prior_in_flight = tp.in_flight();
        tp.packets_out -= 1;
        tp.snd_una += MSS as u64;
        tp.delivered += 1;
        if s.ce {
            tp.delivered_ce += 1;
        }
        if tp.app_limited != 0 && tp.delivered > tp.app_limited {
            tp.app_limited = 0;
        }
        let rtt_us = ((now - s.send_ns) / 1000) as i64;
        tp.min_rtt_us = tp.min_rtt_us.min(rtt_us as u32);
        tp.srtt_us = (tp.srtt_us * 7 + rtt_us as u64) / 8;
        tp.first_tx_mstamp = s.send_ns;
        tp.delivered_mstamp = now;
        let snd_us = ((s.send_ns - s.tx.first_tx_mstamp) / 1000) as i64;
        let ack_us = ((now - s.tx.delivered_mstamp) / 1000) as i64;
        let mut rs = RateSample {
            prior_delivered: s.tx.delivered,
            prior_mstamp: s.tx.delivered_mstamp,
            prior_delivered_ce: s.tx.delivered_ce,
            delivered: (tp.delivered - s.tx.delivered) as i64,
            delivered_ce: (tp.delivered_ce - s.tx.delivered_ce) as i64,
            interval_us: snd_us.max(ack_us),
            rtt_us,
            acked_sacked: 1,
            prior_in_flight,
            ece_delta: s.ce as u32,
            is_app_limited: s.tx.is_app_limited,
            tx_in_flight: s.tx.in_flight,
            lost: (tp.lost - s.tx.lost) as i64,
            is_ece: s.ce,
            ..RateSample::default()
        };
        if rs.interval_us < tp.min_rtt_us as i64 {
            rs.interval_us = -1;
        }
        // tcp_fastretrans_alert before tcp_cong_control: CWR ends once everything
        // sent before it is ACKed; an ECE ACK in Open enters CWR (tcp_enter_cwr).
        if tp.ca_state == CaState::Cwr && tp.snd_una > self.high_seq {
            self.cc.set_state(tp, CaState::Open);
            tp.ca_state = CaState::Open;
        }
        if s.ce && tp.ca_state == CaState::Open {
            self.high_seq = tp.snd_nxt;
            tp.prior_cwnd = tp.cwnd;
            tp.ssthresh = self.cc.ssthresh(tp);
            self.cc.set_state(tp, CaState::Cwr);
            tp.ca_state = CaState::Cwr;
        }
        self.cc.cong_control(tp, &rs);
    }

    /// Run until `until_ns`, calling `each` after every ACK.
    fn run(&mut self, until_ns: u64, mut each: impl FnMut(&Pipe)) {
        loop {
            let ack_at = self.flight.front().map(|s| s.ack_ns);
            let send_at = (self.tp.in_flight() < self.tp.cwnd).then_some(self.next_send_ns.max(self.tp.now));
            let (t, is_ack) = match (ack_at, send_at) {
                (Some(a), Some(s)) if s < a => (s, false),
                (Some(a), _) => (a, true),
                (None, Some(s)) => (s, false),
                (None, None) => unreachable!("nothing in flight and no room to send"),
            };
            if t > until_ns {
                return;
            }
            if is_ack {
                self.ack(t);
                each(self);
            } else {
                self.tp.now = t;
                self.send(t);
            }
        }
    }

    fn state(&self) -> CcState {
        self.cc.cc_state(&self.tp)
    }
}

const MS: u64 = 1_000_000;
const SEC: u64 = 1_000_000_000;

#[test]
fn defaults_are_the_kernels_fixed_point_constants() {
    let p = Bbr3Params::default();
    // tcp_bbr.c: BBR_UNIT * 277 / 100 + 1, BBR_UNIT * 2, BBR_UNIT * 1000 / 2885,
    // {5/4, 91/100, 1, 1}, 30/100, 2/100, 15/100, 1/3, 1/2.
    assert_eq!((p.startup_pacing_gain, p.startup_cwnd_gain, p.drain_gain), (710, 512, 88));
    assert_eq!(p.pacing_gain, [320, 232, 256, 256]);
    assert_eq!((p.beta, p.loss_thresh, p.inflight_headroom, p.ecn_factor, p.ecn_thresh), (76, 5, 38, 85, 128));
    assert_eq!((p.full_loss_cnt, p.full_ecn_cnt, p.ecn_max_rtt_us, p.ecn_reprobe_gain), (6, 2, 5000, 128));
    assert_eq!(
        (p.probe_rtt_win_ms, p.probe_rtt_mode_ms, p.min_rtt_win_sec, p.bw_probe_max_rounds),
        (5000, 200, 10, 63)
    );
}

#[test]
fn bad_params_are_one_line_errors_naming_the_field() {
    let e = registry::build("bbr3", Some(&serde_json::json!({"full_bw_cnt": 4}))).err().unwrap();
    assert!(e.starts_with("full_bw_cnt") && !e.contains('\n'), "{e}");
    let e = registry::build("bbr3", Some(&serde_json::json!({"probe_rtt_win_ms": 20_000}))).err().unwrap();
    assert!(e.starts_with("probe_rtt_win_ms: 20000 exceeds"), "{e}");
    let e = registry::build("bbr3", Some(&serde_json::json!({"pacing_gain": [320, 0, 256, 256]}))).err().unwrap();
    assert!(e.starts_with("pacing_gain: element 1"), "{e}");
    assert!(registry::build("bbr3", Some(&serde_json::json!({"ecn_max_rtt_us": 0}))).is_ok());
}

#[test]
fn startup_paces_at_2_77_with_cwnd_gain_2() {
    let mut p = Pipe::new(100, 10_000, false, None);
    // bbr_init_pacing_rate_from_rtt: 2.77 × 0.99 × IW / srtt.
    let want = 10.0 * MSS as f64 / 0.010 * (710.0 / 256.0) * 0.99;
    let got = p.tp.pacing_rate as f64;
    assert!((got / want - 1.0).abs() < 1e-3, "initial pacing {got} vs {want}");
    let mut seen = 0;
    p.run(30 * MS, |p| {
        if p.cc.mode == Mode::Startup {
            assert_eq!((p.cc.pacing_gain, p.cc.cwnd_gain), (710, 512));
            seen += 1;
        }
    });
    assert!(seen >= 10);
    // While STARTUP's samples grow, pacing = 2.77 × 0.99 × max_bw (never lowered).
    let bw = p.cc.bw() as u64;
    let want = Bbr3::rate_bytes_per_sec(&p.tp, bw, 710, 1);
    assert!(p.tp.pacing_rate >= want, "{} < {want}", p.tp.pacing_rate);
}

#[test]
fn full_pipe_exits_startup_into_drain_then_probe_bw_down() {
    let mut p = Pipe::new(100, 10_000, false, None);
    let bdp = p.bdp();
    let mut at_full: Option<(u64, u32)> = None;
    let mut drain_exit_inflight = None;
    let mut last_mode = Mode::Startup;
    p.run(2 * SEC, |p| {
        if last_mode == Mode::Startup && p.cc.mode == Mode::Drain {
            at_full = Some((p.tp.now, p.tp.ssthresh));
        }
        if last_mode == Mode::Drain && p.cc.mode == Mode::ProbeBw {
            drain_exit_inflight = Some(p.tp.in_flight());
            assert_eq!(p.cc.cycle_idx, Phase::Down, "DRAIN goes to PROBE_BW DOWN");
        }
        last_mode = p.cc.mode;
    });
    let (t, ssthresh) = at_full.expect("STARTUP ended");
    // Doubling from IW 10 to a BDP of ~86 takes ~4 rounds, then 3 rounds without 25 %
    // growth (bbr_full_bw_cnt): the exit is 6-10 rounds of ~10-20 ms after the start.
    assert!((50 * MS..=200 * MS).contains(&t), "full pipe at {} ms", t / MS);
    // ssthresh is exported as inflight(max_bw, 1) = BDP (+ quantization floor).
    assert!((ssthresh as f64) >= bdp && (ssthresh as f64) <= 1.2 * bdp, "ssthresh {ssthresh} vs BDP {bdp:.1}");
    // DRAIN holds until in flight is at most inflight(max_bw, 1).
    let inflight = drain_exit_inflight.expect("DRAIN ended");
    assert!(inflight as f64 <= 1.2 * bdp, "left DRAIN with {inflight} in flight, BDP {bdp:.1}");
    assert!(!p.cc.ecn_eligible, "no ecn_low: never ECN-eligible");
}

#[test]
fn drain_paces_at_1_over_2_885_with_startup_cwnd_gain() {
    let mut p = Pipe::new(100, 10_000, false, None);
    let mut drain_acks = 0;
    p.run(SEC, |p| {
        if p.cc.mode == Mode::Drain {
            assert_eq!((p.cc.pacing_gain, p.cc.cwnd_gain), (88, 512));
            drain_acks += 1;
        }
    });
    assert!(drain_acks > 0, "DRAIN seen");
}

#[test]
fn probe_bw_cycles_down_cruise_refill_up_with_the_v3_gains() {
    let mut p = Pipe::new(100, 10_000, false, None);
    let mut gains: Vec<(&'static str, u32, u32)> = Vec::new();
    p.run(4 * SEC, |p| {
        let m = p.state().mode.unwrap();
        if m.starts_with("PROBE_BW") && gains.last().is_none_or(|l| l.0 != m) {
            gains.push((m, p.cc.pacing_gain, p.cc.cwnd_gain));
        }
    });
    let seq: Vec<&str> = gains.iter().map(|g| g.0).collect();
    // bbr_update_cycle_phase: DOWN → CRUISE → REFILL (one round) → UP → DOWN …
    let cycle = ["PROBE_BW:DOWN", "PROBE_BW:CRUISE", "PROBE_BW:REFILL", "PROBE_BW:UP"];
    assert!(seq.len() >= 9, "at least two full cycles in 4 s: {seq:?}");
    for (i, m) in seq.iter().enumerate() {
        assert_eq!(*m, cycle[i % 4], "phase {i} of {seq:?}");
    }
    for (m, pacing, cwnd) in gains {
        let want = match m {
            "PROBE_BW:UP" => (320, 576),   // 1.25, 2 + 1/4
            "PROBE_BW:DOWN" => (232, 512), // BBR_UNIT * 91 / 100
            _ => (256, 512),
        };
        assert_eq!((pacing, cwnd), want, "{m}");
    }
}

#[test]
fn a_probe_starts_after_at_most_63_rounds_and_up_lasts_at_least_3_rounds() {
    let mut p = Pipe::new(100, 10_000, false, None);
    let mut rounds_in: Vec<(Phase, u32)> = Vec::new();
    p.run(5 * SEC, |p| {
        if p.cc.mode != Mode::ProbeBw {
            return;
        }
        let ph = p.cc.cycle_idx;
        match rounds_in.last_mut() {
            Some((last, n)) if *last == ph => *n += p.cc.round_start as u32,
            _ => rounds_in.push((ph, 0)),
        }
    });
    // Drop the first and last (possibly partial) phases.
    let done = &rounds_in[1..rounds_in.len() - 1];
    let cruise: Vec<u32> = done.iter().filter(|r| r.0 == Phase::Cruise).map(|r| r.1).collect();
    let up: Vec<u32> = done.iter().filter(|r| r.0 == Phase::Up).map(|r| r.1).collect();
    assert!(!cruise.is_empty() && !up.is_empty());
    // bbr_is_reno_coexistence_probe_time: REFILL once rounds_since_probe, started at
    // U{0,1} with DOWN, reaches min(63, target_inflight); BDP ≈ 86 > 63, so DOWN +
    // CRUISE span 62-63 round starts (the last one is counted in REFILL's entry).
    for w in done.windows(2) {
        if let [(Phase::Down, d), (Phase::Cruise, c)] = w {
            assert!((61..=63).contains(&(d + c)), "DOWN {d} + CRUISE {c} rounds: {rounds_in:?}");
        }
    }
    assert!(cruise.len() >= 3);
    // v3 UP ends on a bandwidth plateau: 3 round starts without 25 % growth (no loss
    // here); the third is the ACK that starts DOWN, so 2 are counted inside UP.
    for u in &up {
        assert!(*u >= 2, "UP lasted {} rounds: {rounds_in:?}", u + 1);
    }
}

#[test]
fn probe_rtt_every_5s_at_half_bdp_for_200ms_and_a_round() {
    let mut p = Pipe::new(100, 10_000, false, None);
    let bdp = p.bdp();
    let mut episodes: Vec<(u64, u64, u32)> = Vec::new(); // (start, end, max cwnd inside)
    let mut in_rtt = false;
    p.run(12 * SEC, |p| {
        let now_rtt = p.cc.mode == Mode::ProbeRtt;
        if now_rtt && !in_rtt {
            episodes.push((p.tp.now, 0, 0));
        }
        if now_rtt {
            let e = episodes.last_mut().unwrap();
            e.2 = e.2.max(p.tp.cwnd);
        }
        if !now_rtt && in_rtt {
            episodes.last_mut().unwrap().1 = p.tp.now;
            assert_eq!(p.cc.mode, Mode::ProbeBw, "back to PROBE_BW after a full pipe");
        }
        in_rtt = now_rtt;
    });
    assert_eq!(episodes.len(), 2, "PROBE_RTT at ~5 s and ~10 s: {episodes:?}");
    // bbr_probe_rtt_win_ms = 5000: the first after 5 s of no lower RTT (the min was set at start).
    assert!((5 * SEC..=5 * SEC + 100 * MS).contains(&episodes[0].0), "{episodes:?}");
    for (start, end, max_cwnd) in &episodes {
        let dur = end - start;
        // ≥ 200 ms at the low cwnd (bbr_probe_rtt_mode_ms) + draining + one round.
        assert!((200 * MS..=260 * MS).contains(&dur), "PROBE_RTT lasted {} ms", dur / MS);
        // The first ACK in PROBE_RTT already caps cwnd at max(4, BDP/2).
        let cap = (bdp / 2.0).ceil() as u32 + 1;
        assert!(*max_cwnd <= cap, "cwnd {max_cwnd} above BDP/2 = {cap}");
    }
}

#[test]
fn a_probe_with_over_2_percent_loss_cuts_inflight_hi_at_the_loss_onset() {
    // Bring the flow into PROBE_BW UP with probe feedback flowing.
    let mut q = Pipe::new(100, 10_000, false, None);
    q.run(SEC, |_| {});
    // Put the state in UP with samples (as bbr_start_bw_probe_up after REFILL).
    let (cc, tp) = (&mut q.cc, &mut q.tp);
    cc.mode = Mode::ProbeBw;
    cc.cycle_idx = Phase::Up;
    cc.bw_probe_samples = true;
    cc.inflight_hi = UNSET;
    let delivered_mstamp = tp.delivered_mstamp.max(1);
    // A packet sent with 100 in flight and none lost before it; 1 % of the flight lost: not too high.
    tp.lost += 1;
    let skb = |in_flight, lost| SkbLostInfo {
        pcount: 1,
        tx: SkbTx { in_flight, lost, delivered_mstamp, ..SkbTx::default() },
        ..SkbLostInfo::default()
    };
    let lost0 = tp.lost - 1;
    cc.skb_marked_lost(tp, &skb(100, lost0));
    assert_eq!(cc.inflight_hi, UNSET, "1 loss in a flight of 100 is below bbr_loss_thresh (5/256)");
    assert!(cc.loss_in_round && cc.loss_in_cycle, "bbr_note_loss");
    // Two more: 3 lost of 100 > 100·5/256 = 1 → too high. bbr_inflight_hi_from_lost_skb:
    // inflight_prev = 99, lost_prev = 2 ≥ budget ⌈99·5/256⌉ = 2 → prefix 0 → inflight_hi = 99.
    tp.lost += 2;
    cc.skb_marked_lost(tp, &skb(100, lost0));
    assert_eq!(cc.inflight_hi, 99);
    assert!(cc.prev_probe_too_high && !cc.bw_probe_samples, "react once per probe");
    assert_eq!(cc.cycle_idx, Phase::Down, "too high in UP → DOWN");
    // Not probing: later losses leave inflight_hi alone.
    tp.lost += 10;
    cc.skb_marked_lost(tp, &skb(100, lost0));
    assert_eq!(cc.inflight_hi, 99);
}

#[test]
fn inflight_hi_from_lost_skb_solves_for_the_crossing_point() {
    let cc = Bbr3::new(Bbr3Params::default());
    let from_lost_skb = |rs: &RateSample, pcount| {
        BbrState::inflight_hi_from_lost_skb(cc.p.loss_thresh, rs.tx_in_flight, rs.lost, pcount)
    };
    // lost_prev 0 < budget ⌈199·5/256⌉ = 4: prefix = (4 − 0)·256/(256 − 5) = 4.
    let rs = RateSample { tx_in_flight: 200, lost: 1, ..RateSample::default() };
    assert_eq!(from_lost_skb(&rs, 1), 199 + 4);
    // A negative prefix is impossible: a suspicious snapshot gives ~0U.
    let rs = RateSample { tx_in_flight: 0, lost: 1, ..RateSample::default() };
    assert_eq!(from_lost_skb(&rs, 1), UNSET);
}

#[test]
fn loss_in_a_cruise_round_cuts_bw_lo_and_inflight_lo_by_0_7_floored_at_the_latest_delivery() {
    let mut cc = Bbr3::new(Bbr3Params::default());
    let mut tp = CcSock::new(MSS, 10);
    cc.init(&mut tp);
    cc.mode = Mode::ProbeBw;
    cc.cycle_idx = Phase::Cruise;
    cc.bw_hi = [1000, 0];
    tp.cwnd = 100;
    cc.loss_in_round = true;
    cc.bw_latest = 10;
    cc.inflight_latest = 10;
    cc.adapt_lower_bounds(&tp);
    // bbr_loss_lower_bounds: x·(256 − 76) >> 8.
    assert_eq!((cc.bw_lo, cc.inflight_lo), (1000 * 180 / 256, 100 * 180 / 256));
    cc.bw_latest = 900;
    cc.inflight_latest = 90;
    cc.adapt_lower_bounds(&tp);
    assert_eq!((cc.bw_lo, cc.inflight_lo), (900, 90), "never below the latest round's delivery");
    // Probing (UP): the lower bounds are frozen.
    cc.cycle_idx = Phase::Up;
    cc.bw_latest = 1;
    cc.inflight_latest = 1;
    cc.adapt_lower_bounds(&tp);
    assert_eq!((cc.bw_lo, cc.inflight_lo), (900, 90));
}

#[test]
fn ecn_alpha_is_an_ewma_with_gain_1_16_and_the_cut_is_1_minus_alpha_over_3() {
    let mut cc = Bbr3::new(Bbr3Params::default());
    let mut tp = CcSock::new(MSS, 10);
    tp.ecn_mode = EcnMode::Rfc3168;
    tp.ecn_low = true;
    tp.min_rtt_us = 2000;
    cc.init(&mut tp);
    assert_eq!(cc.ecn_alpha, 256, "bbr_ecn_alpha_init = 1.0");
    // A round of 100 delivered, none CE: α = 256·15/16 = 240.
    tp.delivered = 100;
    assert_eq!(cc.update_ecn_alpha(&tp), Some(0));
    assert!(cc.ecn_eligible, "ECN + ecn_low + min_rtt 2 ms ≤ 5 ms");
    assert_eq!(cc.ecn_alpha, 240);
    // Then 100 with 50 CE: ce_ratio 128; α = 240·240/256 + 16·128/256 = 225 + 8.
    tp.delivered = 200;
    tp.delivered_ce = 50;
    assert_eq!(cc.update_ecn_alpha(&tp), Some(128));
    assert_eq!(cc.ecn_alpha, 233);
    // bbr_ecn_cut = 256 − α·85/256.
    assert_eq!(cc.ecn_cut(), 256 - 233 * 85 / 256);
    // An ECN-marked round outside probes cuts inflight_lo (from cwnd) by that, not bw_lo.
    cc.mode = Mode::ProbeBw;
    cc.cycle_idx = Phase::Cruise;
    tp.cwnd = 100;
    cc.ecn_in_round = true;
    cc.adapt_lower_bounds(&tp);
    assert_eq!(cc.inflight_lo, 100 * cc.ecn_cut() / 256);
    assert_eq!(cc.bw_lo, UNSET, "bw_lo untouched by ECN");
}

/// Run a CE-marking path for 3 s; returns (ECN-eligible, mean cwnd over the last
/// 2 s, CE fraction delivered, inflight_lo seen set).
fn ce_run(rtt_us: u64, ecn_low: bool) -> (bool, f64, f64, bool) {
    let mut p = Pipe::new(100, rtt_us, ecn_low, Some(MS));
    let (mut sum, mut n, mut lo_set) = (0.0, 0.0, false);
    p.run(3 * SEC, |p| {
        if p.tp.now > SEC {
            sum += p.tp.cwnd as f64;
            n += 1.0;
        }
        lo_set |= p.cc.inflight_lo != UNSET;
    });
    (p.cc.ecn_eligible, sum / n, p.tp.delivered_ce as f64 / p.tp.delivered as f64, lo_set)
}

#[test]
fn ce_is_ignored_without_ecn_low_or_above_5ms_min_rtt_and_used_with_both() {
    // 2 ms path, 1 ms CE threshold (the PAM short path).
    let (elig, cwnd_plain, ce_plain, lo_plain) = ce_run(2000, false);
    assert!(!elig && !lo_plain, "without ecn_low: bbr_can_use_ecn is false");
    let (elig, cwnd_ecn, ce_ecn, lo_ecn) = ce_run(2000, true);
    assert!(elig && lo_ecn, "with ecn_low at 2 ms: eligible, inflight_lo cut");
    // The response holds the queue near the 1 ms threshold: fewer packets in flight
    // and a far smaller CE share than the loss-only flow that rides above it.
    assert!(cwnd_ecn < 0.8 * cwnd_plain, "cwnd {cwnd_ecn:.1} vs {cwnd_plain:.1} without ecn_low");
    assert!(ce_ecn < 0.5 * ce_plain, "CE share {ce_ecn:.3} vs {ce_plain:.3}");
    // 10 ms path: min RTT > bbr_ecn_max_rtt_us = 5 ms, never eligible, same as no ecn_low.
    let (elig, cwnd_10, _, lo_10) = ce_run(10_000, true);
    let (_, cwnd_10_plain, _, _) = ce_run(10_000, false);
    assert!(!elig && !lo_10);
    assert_eq!(cwnd_10, cwnd_10_plain, "identical to the flow without ecn_low");
}

#[test]
fn ect_permanent_is_set_at_init_only_when_ecn_is_usable() {
    for (mode, ecn_low, want) in [
        (EcnMode::Rfc3168, true, true),
        (EcnMode::Rfc3168, false, false),
        (EcnMode::Off, true, false),
        (EcnMode::AccEcn, true, true),
    ] {
        let mut tp = CcSock::new(MSS, 10);
        tp.ecn_mode = mode;
        tp.ecn_low = ecn_low;
        // Latched at init regardless of min RTT (bbr_init: if (bbr_can_use_ecn(sk))).
        tp.min_rtt_us = 50_000;
        Bbr3::new(Bbr3Params::default()).init(&mut tp);
        assert_eq!(tp.ect_permanent, want, "{mode:?} ecn_low {ecn_low}");
    }
}

#[test]
fn tso_goal_adds_the_min_rtt_allowance() {
    let mut cc = Bbr3::new(Bbr3Params::default());
    let mut tp = CcSock::new(MSS, 10);
    tp.pacing_rate = 12_500_000;
    // 10 ms: 64 KB >> 19 = 0; 12 207 B / 1448 = 8.
    cc.min_rtt_us = 10_000;
    assert_eq!(cc.tso_segs_goal(&tp), 8);
    // 2 ms: + 64 KB >> 3 = 8192 B → (12 207 + 8192) / 1448 = 14.
    cc.min_rtt_us = 2000;
    assert_eq!(cc.tso_segs_goal(&tp), 14);
    // Low rate: the tcp_min_tso_segs floor (2).
    tp.pacing_rate = 10_000;
    cc.min_rtt_us = 50_000;
    assert_eq!(cc.tso_segs_goal(&tp), 2);
}

#[test]
fn cc_state_reports_the_model() {
    let mut p = Pipe::new(100, 10_000, false, None);
    p.run(3 * SEC, |_| {});
    let s = p.state();
    assert!(s.mode.unwrap().starts_with("PROBE_BW"));
    let bw_mbit = s.bw_bytes_per_s.unwrap() as f64 * 8.0 / 1e6;
    // 100 Mbit/s of 1448-byte payloads (the pipe counts payload only).
    assert!((bw_mbit - 100.0).abs() < 2.0, "bw {bw_mbit:.2} Mbit/s");
    assert!((10_000..=10_100).contains(&s.min_rtt_us.unwrap()));
    assert!(s.pacing_gain.is_some());
}

#[test]
fn a_tlp_repaired_loss_is_a_loss_and_while_probing_a_too_high_sample() {
    // bbr_run_loss_probe_recovery (bbr_loss_probe_recovery = true).
    let mut cc = Bbr3::new(Bbr3Params::default());
    let mut tp = CcSock::new(MSS, 10);
    tp.min_rtt_us = 10_000;
    cc.init(&mut tp);
    tp.delivered = 500;
    cc.cwnd_event(&mut tp, CaEvent::TlpRecovery);
    assert!(cc.loss_in_round && cc.loss_in_cycle);
    assert_eq!(cc.loss_round_delivered, 500, "the first loss of a round re-arms the loss round");
    assert_eq!(cc.inflight_hi, UNSET, "not probing: only noted");
    // Probing: one lost of inflight_latest + 1 = 31 > 31·5/256 → too high, inflight_hi
    // = max(31, 0.7·target_inflight).
    cc.mode = Mode::ProbeBw;
    cc.cycle_idx = Phase::Up;
    cc.bw_probe_samples = true;
    cc.inflight_latest = 30;
    tp.cwnd = 20;
    cc.cwnd_event(&mut tp, CaEvent::TlpRecovery);
    assert_eq!(cc.inflight_hi, 31);
    assert_eq!(cc.cycle_idx, Phase::Down);
    // An app-limited original does not move inflight_hi (bbr_handle_inflight_too_high).
    cc.cycle_idx = Phase::Up;
    cc.bw_probe_samples = true;
    cc.inflight_latest = 60;
    tp.tlp_orig_data_app_limited = true;
    cc.cwnd_event(&mut tp, CaEvent::TlpRecovery);
    assert_eq!(cc.inflight_hi, 31);
    assert!(cc.prev_probe_too_high);
}
