//! Mechanism tests of BBRv1 against the constants and rules of net/ipv4/tcp_bbr.c,
//! driven by synthetic rate samples (one ACK per packet-timed round unless said).

use super::*;
use crate::cc::CaState;
use crate::time::{NS_PER_MS, NS_PER_SEC};

const MIN_RTT_US: u32 = 10_000;

/// A BBR flow and its `tcp_sock`, with a clock and a delivered counter.
struct H {
    bbr: Bbr,
    tp: CcSock,
}

impl H {
    fn new() -> H {
        let mut tp = CcSock::new(1448, 10);
        tp.now = NS_PER_SEC;
        tp.srtt_us = MIN_RTT_US as u64;
        tp.min_rtt_us = MIN_RTT_US;
        tp.rng = crate::rng::stream(1, crate::rng::Stream::Flow(0));
        let mut bbr = Bbr::new(BbrParams::default());
        bbr.init(&mut tp);
        H { bbr, tp }
    }

    /// One ACK `dt_us` after the previous one delivering `d` packets over an
    /// interval of `interval_us`; `prior_delivered` is the sampled packet's
    /// `tx.delivered` (`None`: what was delivered before this ACK, i.e. a new round).
    fn ack_with(
        &mut self,
        dt_us: u64,
        d: u64,
        interval_us: i64,
        prior_delivered: Option<u64>,
        rtt_us: i64,
    ) -> RateSample {
        self.tp.now += dt_us * 1000;
        let prior = prior_delivered.unwrap_or(self.tp.delivered);
        self.tp.delivered += d;
        self.tp.delivered_mstamp = self.tp.now;
        // tcp_rate_gen: the app-limited period ends once its data is delivered; the
        // sample is app-limited while it lasts.
        if self.tp.app_limited != 0 && self.tp.delivered > self.tp.app_limited {
            self.tp.app_limited = 0;
        }
        let rs = RateSample {
            is_app_limited: self.tp.app_limited != 0,
            prior_delivered: prior,
            prior_mstamp: 1,
            delivered: (self.tp.delivered - prior) as i64,
            interval_us,
            rtt_us,
            acked_sacked: d as u32,
            prior_in_flight: self.tp.in_flight(),
            ..RateSample::default()
        };
        self.bbr.cong_control(&mut self.tp, &rs);
        rs
    }

    /// A round of `d` packets delivered in one min RTT (bw = d per 10 ms).
    fn round(&mut self, d: u64) {
        self.ack_with(MIN_RTT_US as u64, d, MIN_RTT_US as i64, None, MIN_RTT_US as i64);
    }

    /// bw of `d` packets per 10 ms in BBR's unit.
    fn bw_of(d: u64) -> u32 {
        (d * BW_UNIT / MIN_RTT_US as u64) as u32
    }

    /// Grow to a full pipe at 100 packets per round, staying in DRAIN (a big flight).
    fn reach_drain(&mut self) {
        self.tp.packets_out = 1000;
        for d in [10, 20, 40, 80, 100, 100, 100, 100] {
            self.round(d);
        }
        assert_eq!(self.bbr.mode, Mode::Drain);
    }

    /// …then let the flight fall to the target: PROBE_BW.
    fn reach_probe_bw(&mut self) {
        self.reach_drain();
        self.tp.packets_out = 50;
        self.ack_with(100, 0, -1, None, -1);
        assert_eq!(self.bbr.mode, Mode::ProbeBw);
    }
}

#[test]
fn gains_are_the_kernels_fixed_point_constants() {
    assert_eq!(HIGH_GAIN, 739, "BBR_UNIT * 2885 / 1000 + 1");
    assert!((HIGH_GAIN as f64 / 256.0 - 2.0 / std::f64::consts::LN_2).abs() < 0.003);
    assert_eq!(DRAIN_GAIN, 88, "BBR_UNIT * 1000 / 2885");
    assert_eq!(PACING_GAIN, [320, 192, 256, 256, 256, 256, 256, 256]);
    assert_eq!(BbrParams::default().cwnd_gain, 512);
    let h = H::new();
    assert_eq!(h.bbr.mode, Mode::Startup);
    assert_eq!((h.bbr.pacing_gain, h.bbr.cwnd_gain), (739, 739));
    // bbr_init_pacing_rate_from_rtt: 2.885 × 10 packets / 10 ms × 0.99.
    let expect = 739.0 / 256.0 * 10.0 * 1448.0 / 0.010 * 0.99;
    assert!((h.tp.pacing_rate as f64 / expect - 1.0).abs() < 1e-3, "{} vs {expect}", h.tp.pacing_rate);
}

#[test]
fn pacing_is_gain_times_bw_one_percent_below() {
    let h = H::new();
    let bw = H::bw_of(100); // 100 packets per 10 ms = 14.48 MB/s
    for gain in [BBR_UNIT, 320, 192, HIGH_GAIN] {
        let rate = h.bbr.bw_to_pacing_rate(&h.tp, bw, gain) as f64;
        let expect = 14.48e6 * gain as f64 / 256.0 * 0.99;
        assert!((rate / expect - 1.0).abs() < 1e-4, "gain {gain}: {rate} vs {expect}");
    }
}

#[test]
fn full_pipe_after_three_rounds_below_25_percent_growth() {
    let mut h = H::new();
    h.tp.packets_out = 1000;
    for d in [10, 20, 40, 80, 100] {
        h.round(d);
        assert_eq!(h.bbr.full_bw_cnt, 0, "growth ≥ 25 % resets the count");
    }
    // 124 is +24 %: not enough to count as growth.
    h.round(124);
    assert_eq!((h.bbr.full_bw_cnt, h.bbr.full_bw), (1, H::bw_of(100)));
    h.round(124);
    assert_eq!(h.bbr.mode, Mode::Startup);
    assert!(!h.bbr.full_bw_reached);
    h.round(124);
    assert!(h.bbr.full_bw_reached, "third round without 25 % growth");
    assert_eq!(h.bbr.mode, Mode::Drain);
    assert_eq!(h.bbr.pacing_gain, DRAIN_GAIN);
    assert_eq!(h.bbr.cwnd_gain, HIGH_GAIN, "DRAIN keeps the STARTUP cwnd gain");
    // ssthresh is exported at STARTUP exit: inflight(max_bw, 1).
    // (with the quantization budget at the STARTUP pacing rate of that moment).
    assert!(
        h.tp.ssthresh > h.bbr.bdp(h.bbr.max_bw(), BBR_UNIT) && h.tp.ssthresh.is_multiple_of(2),
        "{}",
        h.tp.ssthresh
    );

    // A 25 % step keeps STARTUP going; app-limited rounds do not count.
    let mut g = H::new();
    g.tp.packets_out = 1000;
    for d in [80, 100, 124, 124, 155] {
        g.round(d);
    }
    assert_eq!((g.bbr.full_bw_cnt, g.bbr.mode), (0, Mode::Startup), "124 → 155 is +25 %");
    g.tp.app_limited = 1;
    let rs_round = |g: &mut H| {
        g.tp.now += 10 * NS_PER_MS;
        let prior = g.tp.delivered;
        g.tp.delivered += 155;
        let rs = RateSample {
            prior_delivered: prior,
            prior_mstamp: 1,
            delivered: 155,
            interval_us: 10_000,
            rtt_us: 10_000,
            acked_sacked: 155,
            is_app_limited: true,
            ..RateSample::default()
        };
        g.bbr.cong_control(&mut g.tp, &rs);
    };
    for _ in 0..5 {
        rs_round(&mut g);
    }
    assert_eq!((g.bbr.full_bw_cnt, g.bbr.mode), (0, Mode::Startup), "app-limited rounds are not counted");
}

#[test]
fn drain_lasts_until_the_flight_is_down_to_the_bdp_target() {
    let mut h = H::new();
    h.reach_drain();
    let target = h.bbr.inflight(&h.tp, h.bbr.max_bw(), BBR_UNIT);
    // BDP = 100 packets; + 3 TSO skbs of ⌊pacing/1024/mss⌋, rounded up to even.
    let goal = h.bbr.tso_segs_goal(&h.tp);
    assert_eq!(target, (100 + 3 * goal + 1) & !1);
    h.tp.packets_out = target + 1;
    h.ack_with(100, 1, -1, None, -1);
    assert_eq!(h.bbr.mode, Mode::Drain, "one packet above the target");
    h.tp.packets_out = target;
    h.ack_with(100, 1, -1, None, -1);
    assert_eq!(h.bbr.mode, Mode::ProbeBw);
    assert_ne!(h.bbr.cycle_idx, 1, "never starts in the 3/4 phase");
    assert_eq!(h.bbr.cwnd_gain, 512);
}

#[test]
fn probe_bw_cycles_through_the_eight_gains() {
    let mut h = H::new();
    h.reach_probe_bw();
    // Flight above 1.25 × BDP so the probing phase may end once min_rtt has passed.
    h.tp.packets_out = 400;
    let start = h.bbr.cycle_idx;
    let mut gains = vec![h.bbr.pacing_gain];
    for _ in 0..16 {
        // Each ACK comes a bit more than min_rtt after the phase started.
        h.ack_with(MIN_RTT_US as u64 + 100, 50, MIN_RTT_US as i64, Some(h.tp.delivered - 50), MIN_RTT_US as i64);
        gains.push(h.bbr.pacing_gain);
    }
    for (k, g) in gains.iter().enumerate() {
        let idx = (start as usize + k) % 8;
        assert_eq!(*g, PACING_GAIN[idx], "phase {k} after the start at {start}: {gains:?}");
    }
}

#[test]
fn the_probing_phase_waits_for_its_inflight_target_unless_packets_are_lost() {
    let mut h = H::new();
    h.reach_probe_bw();
    // Walk to phase 0 (gain 5/4).
    h.tp.packets_out = 400;
    while h.bbr.cycle_idx != 0 {
        h.ack_with(MIN_RTT_US as u64 + 100, 50, MIN_RTT_US as i64, Some(h.tp.delivered - 50), MIN_RTT_US as i64);
    }
    assert_eq!(h.bbr.pacing_gain, 320);
    // The flight stays at the BDP: min_rtt passes but the 5/4 phase persists.
    h.tp.packets_out = 100;
    for _ in 0..3 {
        h.ack_with(MIN_RTT_US as u64 + 100, 50, MIN_RTT_US as i64, Some(h.tp.delivered - 50), MIN_RTT_US as i64);
        assert_eq!(h.bbr.cycle_idx, 0);
    }
    // A loss ends it (the path may not hold 1.25 × BDP).
    h.tp.now += 1000;
    h.tp.delivered += 1;
    h.tp.delivered_mstamp = h.tp.now;
    let rs = RateSample {
        prior_delivered: h.tp.delivered - 1,
        prior_mstamp: 1,
        delivered: 1,
        interval_us: MIN_RTT_US as i64,
        acked_sacked: 1,
        losses: 1,
        rtt_us: -1,
        prior_in_flight: 100,
        ..RateSample::default()
    };
    h.bbr.cong_control(&mut h.tp, &rs);
    assert_eq!((h.bbr.cycle_idx, h.bbr.pacing_gain), (1, 192));
    // The 3/4 phase ends early once the flight is down to the BDP target.
    h.tp.packets_out = 50;
    h.ack_with(100, 1, MIN_RTT_US as i64, Some(h.tp.delivered - 1), MIN_RTT_US as i64);
    assert_eq!(h.bbr.cycle_idx, 2, "drained before min_rtt elapsed");
}

#[test]
fn the_random_start_phase_is_uniform_over_seven_and_never_the_draining_one() {
    let mut h = H::new();
    h.reach_probe_bw();
    let mut counts = [0u32; 8];
    let n = 70_000;
    for _ in 0..n {
        h.bbr.reset_probe_bw_mode(&mut h.tp);
        counts[h.bbr.cycle_idx as usize] += 1;
    }
    assert_eq!(counts[1], 0, "the 3/4 phase: {counts:?}");
    for (i, c) in counts.iter().enumerate().filter(|(i, _)| *i != 1) {
        // 10 000 expected each; 5 σ ≈ 460.
        assert!((*c as i64 - 10_000).abs() < 500, "phase {i}: {c} of {n}");
    }
}

#[test]
fn probe_rtt_after_ten_seconds_without_a_new_minimum_holds_four_packets_for_200_ms_and_a_round() {
    let mut h = H::new();
    h.reach_probe_bw();
    h.tp.packets_out = 200;
    h.tp.cwnd = 200;
    let stamp = h.bbr.min_rtt_stamp;
    // RTT samples above the minimum for 10 s: no PROBE_RTT before the window ends.
    let t_end = stamp as u64 * NS_PER_MS + 10 * NS_PER_SEC;
    while h.tp.now + 10 * NS_PER_MS <= t_end {
        h.ack_with(10_000, 100, 10_000, None, 12_000);
        assert_eq!(h.bbr.mode, Mode::ProbeBw, "at {} ms", h.tp.now / NS_PER_MS);
    }
    let cwnd_before = h.tp.cwnd;
    // The first ACK after the window: PROBE_RTT at cwnd 4.
    h.ack_with(11_000, 100, 10_000, None, 12_000);
    assert_eq!(h.bbr.mode, Mode::ProbeRtt);
    assert_eq!(h.tp.cwnd, 4);
    assert_eq!((h.bbr.pacing_gain, h.bbr.cwnd_gain), (BBR_UNIT, BBR_UNIT));
    assert_eq!(h.bbr.prior_cwnd, cwnd_before, "cwnd saved for the exit");
    assert!(h.tp.app_limited != 0, "samples in PROBE_RTT are app-limited");
    // The flight drains to 4: the 200 ms clock starts.
    h.tp.packets_out = 4;
    h.ack_with(1_000, 1, 10_000, Some(h.tp.delivered - 1), 10_000);
    let armed = h.tp.now;
    assert!(h.bbr.probe_rtt_done_stamp != 0);
    // A round passes quickly, but 200 ms must pass too.
    let mut t_exit = None;
    for _ in 0..40 {
        h.ack_with(10_000, 4, 10_000, None, 10_000);
        assert!(h.tp.cwnd <= 4 || h.bbr.mode != Mode::ProbeRtt);
        if h.bbr.mode != Mode::ProbeRtt {
            t_exit = Some(h.tp.now);
            break;
        }
    }
    let t_exit = t_exit.expect("PROBE_RTT ended");
    let held = (t_exit - armed) / NS_PER_MS;
    assert!((200..=211).contains(&held), "held {held} ms");
    assert_eq!(h.bbr.mode, Mode::ProbeBw, "full pipe reached before: back to PROBE_BW");
    // cwnd restored to the saved one, then (full pipe) snapped to the target.
    let target = h.bbr.quantization_budget(&h.tp, h.bbr.bdp(h.bbr.bw(), 512) + h.bbr.ack_aggregation_cwnd());
    assert!(target > 100, "the bw estimate survived PROBE_RTT: target {target}");
    assert_eq!(h.tp.cwnd, target.min(cwnd_before + 4), "cwnd restored");
    assert_eq!(h.bbr.min_rtt_stamp as u64, t_exit / NS_PER_MS, "next PROBE_RTT ≥ 10 s later");

    // Without a packet-timed round the 200 ms are not enough.
    let mut g = H::new();
    g.reach_probe_bw();
    g.tp.packets_out = 4;
    g.tp.now += 10 * NS_PER_SEC;
    g.ack_with(1_000, 1, 10_000, Some(g.tp.delivered - 1), 12_000);
    assert_eq!(g.bbr.mode, Mode::ProbeRtt);
    let marker = g.bbr.next_rtt_delivered;
    for _ in 0..30 {
        // Samples from packets sent before the round started.
        g.ack_with(10_000, 1, 10_000, Some(marker - 1), 10_000);
    }
    assert_eq!(g.bbr.mode, Mode::ProbeRtt, "300 ms, but no round at 4 packets");
}

#[test]
fn only_a_sample_below_min_rtt_postpones_probe_rtt() {
    // tcp_bbr.c:bbr_update_min_rtt since Linux 5.10 (commit 1b9e2a8c99a5): a sample equal
    // to min_rtt (common with ms-granular timestamp RTTs in recovery, and in an unqueued
    // path) does not refresh min_rtt_stamp, so PROBE_RTT comes 10 s after the last
    // *lower* sample; with the old `<=` it never came while such samples kept arriving.
    let mut h = H::new();
    h.reach_probe_bw();
    h.tp.packets_out = 200;
    h.tp.cwnd = 200;
    let (min, stamp) = (h.bbr.min_rtt_us, h.bbr.min_rtt_stamp);
    let t_end = stamp as u64 * NS_PER_MS + 10 * NS_PER_SEC;
    while h.tp.now + 10 * NS_PER_MS <= t_end {
        h.ack_with(10_000, 100, 10_000, None, min as i64);
        assert_eq!((h.bbr.min_rtt_stamp, h.bbr.mode), (stamp, Mode::ProbeBw), "at {} ms", h.tp.now / NS_PER_MS);
    }
    h.ack_with(11_000, 100, 10_000, None, min as i64);
    assert_eq!(h.bbr.mode, Mode::ProbeRtt, "samples equal to min_rtt did not postpone PROBE_RTT");
    // A lower sample does refresh the filter.
    let mut g = H::new();
    g.reach_probe_bw();
    g.ack_with(10_000, 100, 10_000, None, min as i64 - 1);
    assert_eq!((g.bbr.min_rtt_us, g.bbr.min_rtt_stamp as u64), (min - 1, g.tp.now / NS_PER_MS));
}

#[test]
fn recovery_conserves_packets_for_a_round_then_restores_cwnd() {
    let mut h = H::new();
    h.reach_probe_bw();
    h.tp.cwnd = 200;
    h.tp.packets_out = 150;
    // Entering recovery: the stack calls ssthresh (bbr_save_cwnd), then set_state.
    let ss = h.tp.ssthresh;
    assert_eq!(h.bbr.ssthresh(&h.tp), ss, "ssthresh is returned unchanged");
    assert_eq!(h.bbr.prior_cwnd, 200);
    h.tp.ca_state = CaState::Recovery;
    h.tp.lost_out = 3;
    let rs = h.ack_with(100, 2, 10_000, Some(h.tp.delivered), 10_000);
    assert!(h.bbr.packet_conservation);
    assert_eq!(h.tp.cwnd, h.tp.in_flight() + rs.acked_sacked, "cwnd = in flight + acked");
    // Still conserving within the round (samples of packets sent before recovery
    // began): cwnd = max(cwnd, in flight + acked), no growth.
    let prev = h.tp.cwnd;
    h.tp.packets_out -= 2;
    h.ack_with(100, 2, 10_000, Some(h.tp.delivered - 20), 10_000);
    assert_eq!(h.tp.cwnd, prev.max(h.tp.in_flight() + 2));
    assert!(h.bbr.packet_conservation);
    // Leaving recovery restores the saved cwnd (then the target caps it).
    h.tp.ca_state = CaState::Open;
    h.tp.lost_out = 0;
    h.ack_with(10_000, 2, 10_000, None, 10_000);
    assert!(!h.bbr.packet_conservation);
    let target = h.bbr.quantization_budget(&h.tp, h.bbr.bdp(h.bbr.bw(), 512) + h.bbr.ack_aggregation_cwnd());
    assert_eq!(h.tp.cwnd, (200 + 2u32).min(target), "max(cwnd, prior_cwnd) + acked, capped by the target");
}

#[test]
fn an_rto_ends_a_round_and_resets_the_full_pipe_estimate() {
    let mut h = H::new();
    h.reach_probe_bw();
    assert!(h.bbr.full_bw > 0);
    h.bbr.set_state(&mut h.tp, CaState::Loss);
    assert_eq!((h.bbr.full_bw, h.bbr.round_start, h.bbr.prev_ca_state), (0, true, CaState::Loss));
    assert!(h.bbr.lt_is_sampling, "the RTO is the policer detector's first loss");
    assert_eq!(h.bbr.undo_cwnd(&h.tp), h.tp.cwnd, "undo keeps cwnd");
    assert!(!h.bbr.lt_is_sampling);
}

#[test]
fn two_consistent_lossy_intervals_mean_a_policer() {
    let mut h = H::new();
    h.reach_probe_bw();
    h.tp.packets_out = 100;
    // A policer at 50 packets per 10 ms with 25 % loss: rounds of 50 delivered, 13 lost.
    let lossy_round = |h: &mut H| {
        h.tp.now += 10 * NS_PER_MS;
        let prior = h.tp.delivered;
        h.tp.delivered += 50;
        h.tp.lost += 13;
        h.tp.delivered_mstamp = h.tp.now;
        let rs = RateSample {
            prior_delivered: prior,
            prior_mstamp: 1,
            delivered: 50,
            interval_us: 10_000,
            rtt_us: 10_000,
            acked_sacked: 50,
            losses: 13,
            prior_in_flight: 100,
            ..RateSample::default()
        };
        h.bbr.cong_control(&mut h.tp, &rs);
    };
    let mut rounds = 0;
    while !h.bbr.lt_use_bw && rounds < 40 {
        lossy_round(&mut h);
        rounds += 1;
    }
    assert!(h.bbr.lt_use_bw, "policed after {rounds} rounds");
    // First loss starts sampling; each interval needs ≥ 4 rounds: two intervals.
    assert!((8..=10).contains(&rounds), "{rounds} rounds");
    let lt = h.bbr.lt_bw as f64 / H::bw_of(50) as f64;
    assert!((lt - 1.0).abs() < 0.03, "lt_bw = {lt} × the policed rate");
    assert_eq!(h.bbr.bw(), h.bbr.lt_bw);
    assert_eq!(h.bbr.pacing_gain, BBR_UNIT, "gain 1 while policed");
    // 48 rounds later PROBE_BW restarts on the max-bw filter.
    for _ in 0..48 {
        h.round(50);
    }
    assert!(!h.bbr.lt_use_bw);
}

#[test]
fn ack_aggregation_raises_the_cwnd_target_by_the_excess_acked() {
    let mut h = H::new();
    h.reach_probe_bw();
    let base = h.bbr.inflight(&h.tp, h.bbr.bw(), 512);
    // ACKs arrive in bursts: 40 packets at once after 2 ms of silence (bw is 10/ms).
    for _ in 0..20 {
        h.ack_with(2_000, 40, MIN_RTT_US as i64, Some(h.tp.delivered), MIN_RTT_US as i64);
    }
    assert!(h.bbr.extra_acked() >= 15, "extra_acked {:?}", h.bbr.extra_acked);
    let aggr = h.bbr.ack_aggregation_cwnd();
    assert!(aggr > 0 && aggr == h.bbr.extra_acked().min((h.bbr.bw() as u64 * 100_000 / BW_UNIT) as u32));
    h.tp.cwnd = 1000;
    h.ack_with(100, 1, MIN_RTT_US as i64, Some(h.tp.delivered), MIN_RTT_US as i64);
    let bdp2 = h.bbr.bdp(h.bbr.bw(), 512);
    assert!(h.tp.cwnd >= base && h.tp.cwnd == h.bbr.quantization_budget(&h.tp, bdp2 + aggr));
}

#[test]
fn tso_goal_is_a_millisecond_of_data_and_one_segment_below_1_2_mbit() {
    let mut h = H::new();
    h.tp.pacing_rate = 12_375_000; // ≈ 99 Mbit/s
    assert_eq!(h.bbr.tso_segs_goal(&h.tp), 12_375_000 / 1024 / 1448);
    assert_eq!(h.bbr.min_tso_segs(&h.tp), Some(2));
    h.tp.pacing_rate = 149_999;
    assert_eq!((h.bbr.tso_segs_goal(&h.tp), h.bbr.min_tso_segs(&h.tp)), (1, Some(1)));
    h.tp.pacing_rate = 10_000_000_000;
    assert_eq!(h.bbr.tso_segs_goal(&h.tp), (65536 - 1 - 320) / 1448, "capped by the 64 KB GSO size");
}

#[test]
fn idle_restart_paces_at_the_estimate_in_probe_bw() {
    let mut h = H::new();
    h.reach_probe_bw();
    while h.bbr.cycle_idx != 0 {
        h.tp.packets_out = 400;
        h.ack_with(MIN_RTT_US as u64 + 100, 50, MIN_RTT_US as i64, Some(h.tp.delivered - 50), MIN_RTT_US as i64);
    }
    h.tp.app_limited = 5;
    h.bbr.cwnd_event(&mut h.tp, CaEvent::TxStart);
    assert!(h.bbr.idle_restart);
    assert_eq!(h.tp.pacing_rate, h.bbr.bw_to_pacing_rate(&h.tp, h.bbr.bw(), BBR_UNIT));
}

#[test]
fn cc_state_reports_bw_min_rtt_mode_and_gain() {
    let mut h = H::new();
    h.tp.packets_out = 1000;
    h.round(100);
    let s = h.bbr.cc_state(&h.tp);
    assert_eq!(s.mode, Some("STARTUP"));
    assert_eq!(s.min_rtt_us, Some(MIN_RTT_US));
    // 100 packets per 10 ms of 1448 B = 14.48 MB/s (bbr_get_info's conversion).
    let bw = s.bw_bytes_per_s.unwrap() as f64;
    assert!((bw / 14.48e6 - 1.0).abs() < 1e-5, "{bw}");
    assert_eq!(s.pacing_gain, Some(739.0 / 256.0));
    assert_eq!((s.inflight_hi, s.inflight_lo), (None, None));
}

#[test]
fn params_are_checked_and_named() {
    let e = crate::cc::build("bbr", Some(&serde_json::json!({"cwnd_gain": 0}))).err().unwrap();
    assert!(e.starts_with("cwnd_gain") && !e.contains('\n'), "{e}");
    let e = crate::cc::build("bbr", Some(&serde_json::json!({"cycle_rand": 8}))).err().unwrap();
    assert!(e.starts_with("cycle_rand"), "{e}");
    assert!(crate::cc::build("bbr", Some(&serde_json::json!({"probe_rtt_mode_ms": 0}))).is_ok());
    let cc = crate::cc::by_name("bbr").unwrap();
    assert!(cc.flags().needs_pacing && cc.has_cong_control());
}
