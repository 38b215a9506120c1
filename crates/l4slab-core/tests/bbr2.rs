//! BBRv2 (`bbr2`, google/bbr v2alpha) and L4S-BBRv2 (`bbr2-l4s`, L4STeam/linux)
//! end to end on the PAM 2025 path: 100 Mbit/s, 10 ms base RTT (BDP ≈ 83 packets
//! of 1500 B, 125 kB), with the study's three BBRv2 ECN modes.

use crate::common;
use common::*;
use serde_json::{json, Value};

/// A PAM 2025 flow with one segment per skb (`tso = false`, the model knob; the testbed's TCP
/// kept GSO under `ethtool -K gso/tso off`: docs/fidelity-pam-hosts.md, "GSO on the PAM hosts").
fn pam(mut f: Value) -> Value {
    f["tso"] = json!(false);
    f
}

/// BBRv2 with one of the PAM study's ECN modes.
fn bbr2(mode: &str) -> Value {
    let mut f = pam(tcp("bbr2", 10));
    match mode {
        "none" => {}
        // Sender ecn_enable=1, ecn_max_rtt_us=0, requests ECN; classic RFC 3168 receiver.
        "one-sided" => {
            f["ecn"] = json!(1);
            f["cc_params"] = json!({"ecn_enable": true, "ecn_max_rtt_us": 0});
        }
        // The receiving socket also runs bbr2 with ecn_enable: DCTCP-style CE echo.
        "two-sided" => {
            f["ecn"] = json!(1);
            f["cc_params"] = json!({"ecn_enable": true, "ecn_max_rtt_us": 0});
            f["receiver_cc"] = json!("bbr2");
            f["receiver_cc_params"] = json!({"ecn_enable": true, "ecn_max_rtt_us": 0});
        }
        _ => unreachable!(),
    }
    f
}

fn bbr2_l4s() -> Value {
    let mut f = pam(tcp("bbr2-l4s", 10));
    f["ecn"] = json!(3); // the L4STeam hosts ran tcp_ecn=3 (AccECN)
    f["receiver_ecn"] = json!(3);
    f
}

fn class_mean(r: &l4slab_core::RunResults, class: &str) -> f64 {
    r.bottleneck.sojourn_by_class.iter().find(|c| c.class == class).unwrap().sojourn_ms.mean
}

fn fifo_ce_1ms() -> Value {
    // One FIFO (fq with every flow in one orphan queue) of 8 BDP that CE-marks ECT
    // packets whose sojourn exceeds 1 ms: the PAM "FIFO+ECN" queue at a 1 ms threshold.
    json!({"kind": "fq", "orphan_mask": 0, "limit_packets": 667, "flow_limit_packets": 667, "ce_threshold_ns": MS})
}

/// Mean of a flow's α series after the first 10 s.
fn mean_alpha(r: &l4slab_core::RunResults, i: usize) -> f64 {
    let a = &r.flow_series[i].alpha;
    let tail = &a[a.len() / 3..];
    tail.iter().sum::<f64>() / tail.len() as f64
}

#[test]
fn bbr2_alone_fills_the_link() {
    // 2 BDP drop-tail buffer, 60 s: one BBRv2 flow paces at 0.99 of its bw estimate
    // and probes every 2-3 s; PROBE_RTT costs ≈ 0.5 × 0.2 s / 5 s = 2 % (§ bbr_update_min_rtt).
    let r = run(&scenario(100, bfifo(250_000), vec![bbr2("none")], 60));
    assert!(r.bottleneck.utilisation >= 0.95, "utilisation {}", r.bottleneck.utilisation);
    assert_eq!(r.flows[0].ecn_mode, "off");
}

#[test]
fn two_sided_ecn_holds_a_shared_queue_below_the_mark_threshold_where_no_ecn_stands_a_bdp() {
    // Without ECN, two BBRv2 flows each keep cwnd = 2 × their BDP share: 2 BDP in
    // flight over a 1 BDP pipe, a standing queue of ≈ 1 BDP (10 ms) in the 8 BDP FIFO
    // (no loss, so inflight_hi never bounds them).
    let r = run(&scenario(100, fifo_ce_1ms(), vec![bbr2("none"), bbr2("none")], 30));
    let q = r.bottleneck.sojourn_ms.mean;
    assert!((7.0..=13.0).contains(&q), "no ECN: mean sojourn {q} ms");
    // Two-sided ECN: every marked round cuts inflight_lo by α/3 and a probe ends at
    // 50 % CE, so the queue stays below the 1 ms marking threshold, and the pipe full.
    let r = run(&scenario(100, fifo_ce_1ms(), vec![bbr2("two-sided"), bbr2("two-sided")], 30));
    let q = r.bottleneck.sojourn_ms.mean;
    assert!(q <= 1.0, "two-sided: mean sojourn {q} ms");
    assert!(r.bottleneck.utilisation >= 0.90, "two-sided: utilisation {}", r.bottleneck.utilisation);
    assert!(r.flows.iter().all(|f| f.ecn_mode == "rfc3168" && f.marks > 0 && f.drops == 0));
}

#[test]
fn one_sided_ecn_counts_every_packet_of_a_marked_round_as_ce() {
    // An RFC 3168 receiver sets ECE on every ACK until CWR, so the sender counts all
    // packets of a marked round as CE (tcp_input.c: delivered_ce += acked on ECE):
    // its α tends to the fraction of rounds with a mark, 1 − (1 − p)^W, while the
    // DCTCP-style echo of a bbr2 receiver with ecn_enable gives α ≈ p, the fraction
    // of marked packets. Beside an ECN-CUBIC flow whose sawtooth keeps the shared
    // 1 ms-threshold FIFO around its threshold, marks come in most rounds but hit a
    // small fraction of packets, so one-sided α is several times two-sided α.
    let mut cubic = pam(tcp("cubic", 10));
    cubic["ecn"] = json!(1);
    let q = fifo_ce_1ms();
    let one = run(&scenario(100, q.clone(), vec![bbr2("one-sided"), cubic.clone()], 30));
    let two = run(&scenario(100, q, vec![bbr2("two-sided"), cubic], 30));
    let (a1, a2) = (mean_alpha(&one, 0), mean_alpha(&two, 0));
    assert!(two.flows[0].marks > 0 && one.flows[0].marks > 0);
    assert!(a1 >= 2.0 * a2 && a1 > 0.0, "one-sided α {a1}, two-sided α {a2}");
}

#[test]
fn bbr2_l4s_with_accecn_uses_the_dualpi2_l_queue_and_fills_the_link() {
    let r = run(&scenario(100, json!({"kind": "dualpi2"}), vec![bbr2_l4s()], 30));
    let f = &r.flows[0];
    assert_eq!(f.ecn_mode, "accecn");
    assert!(f.marks > 0 && f.drops == 0);
    assert!(r.bottleneck.utilisation >= 0.90, "utilisation {}", r.bottleneck.utilisation);
    // ECT(1): classified into L; L4S-BBRv2's ECN cut bounds the L queue near the
    // 1 ms step (it never exceeds the PAM paper's "around 1 ms").
    let l = class_mean(&r, "L");
    assert!(l > 0.0 && l <= 1.2, "L mean sojourn {l} ms");
    // With classic ECN it sends ECT(0) (Classic queue), without ECN not-ECT; BBRv2 runs on.
    for (ecn, mode) in [(1, "rfc3168"), (0, "off")] {
        let mut fl = bbr2_l4s();
        fl["ecn"] = json!(ecn);
        fl["receiver_ecn"] = json!(ecn.max(2));
        let r = run(&scenario(100, json!({"kind": "dualpi2"}), vec![fl], 10));
        assert_eq!(r.flows[0].ecn_mode, mode);
        assert!(r.bottleneck.sojourn_by_class.iter().all(|c| c.class != "L" || c.sojourn_ms.count == 0));
        assert!(r.bottleneck.utilisation >= 0.85, "{mode}: utilisation {}", r.bottleneck.utilisation);
    }
}

#[test]
#[ignore = "known gap (reported): the simulated L4S-BBRv2 queuing delay in DualPI2 is ~0.3 ms, not the PAM paper's 0.7-1.2 ms"]
fn bbr2_l4s_queuing_delay_in_dualpi2_is_about_1_ms_as_pam_2025_reports() {
    // PAM 2025: "in DualPI2 the queuing delay of L4S-BBRv2 is around 1 ms" (mean sRTT −
    // the 10 ms base, against a Classic flow). The testbed's own per-trial files
    // (fatihsarpkaya/L4S-PAM2025, Data/1vs1 flow experiments/L4S-Compatible BBRv2 vs
    // Classic/cubic_noecn_{srtt,tput}_tx_L4S.json, DualPI2 rows): sRTT 10.65–11.13 ms
    // (mean ≈ 0.77 ms) at 55.4–56.9 Mbit/s. This engine, configured as that testbed
    // (DualPI2 `target 5ms variant l4steam`, the L4STeam AccECN receiver, the receiving
    // socket running bbr2-l4s as rx_L4S did): 0.27–0.29 ms at 65.6–66.3 Mbit/s (three
    // trials of the study's DualPI2 row), L sojourn mean 0.17 ms, P99 1.35 ms; of the
    // flow's marks ≈ 35 % are step marks and ≈ 65 % coupled (2p'), 11 % of L packets.
    //
    // The ECN path matches L4STeam tcp_bbr2.c 009adfe4 line by line (the stored file
    // nearest the 2024 testing build; 198b982a is the older 8-gain-table tree with the
    // same ECN logic): ecn_eligible latches at the first round start with
    // `bbr_ecn_max_rtt_us = 0` meaning any RTT; α is updated once per round (gain 1/16,
    // init 1.0); `bbr2_adapt_lower_bounds` cuts inflight_lo by 1 − α/3 once per marked
    // round with no floor and never bw_lo; `bbr2_is_inflight_too_high` ends a probe at
    // CE ≥ 50 % of a sample; CRUISE caps cwnd at min(inflight_hi − 15 %, inflight_lo);
    // probes come every min(63, target_inflight) rounds or 2–3 s; ecn_reprobe_gain 0;
    // DOWN 0.91, UP cwnd gain 2.25, bw_probe_exit 0; TSO goal with offloads off; the
    // sender's fast_ack_mode only matters on a receiving socket (mechanism tests in
    // cc/bbr2/tests.rs). AccECN feeds delivered_ce from the ACE delta and sets is_ece as
    // `tcp_accecn_process` does. Ruled out as the cause: the receiving socket's CC (its
    // DCTCP-style echo over AccECN: ACKs/packet 0.61 → 0.64, delay unchanged); pacing
    // 2 % / 4 % above the estimate (0.29 / 0.31 ms); sender ACK batching (≈ G/2);
    // delayed ACKs (0.31 ms with, 0.15 ms without).
    //
    // The gap is not DualPI2's: the same testbed files give ≈ 1.0 ms in FQ (ce_threshold
    // 5 ms; engine 0.46 ms) and ≈ 0.8 ms in L4S-aware FQ-CoDel (engine 0.33 ms), where the
    // CUBIC flow's sRTT agrees across panels (FQ-CoDel 4.2 ms in both the Prague and the
    // L4S-BBRv2 panel), so it is specific to the BBRv2 flow on that testbed, and its
    // mechanism is not in the L4STeam CC code. Open.
    //
    // The same files give the window (goodput × sRTT): in L4S-aware FQ-CoDel the
    // testbed's 40.0–40.2 packets equal the engine's (pinned by
    // bbr2_l4s_cruises_cwnd_limited_at_inflight_hi_less_headroom_in_l4s_aware_fq_codel),
    // so the testbed's extra sRTT comes at the same window (and costs it 2.5 Mbit/s); in
    // DualPI2 the testbed's window is 52 packets (56 Mbit/s, 10.77 ms) against the
    // engine's 58.5 (66 Mbit/s, 10.27 ms). In both cells the flow is cwnd-limited
    // (CRUISE: inflight_hi − 15 % or inflight_lo; DualPI2 paces at 87 Mbit/s and
    // delivers 66), so the max-bw filter's bias does not set this delay. Moved by
    // (L4S-FQ-CoDel / DualPI2, 30 s, seed 1; baseline 0.35 / 0.26 ms): the receiving host
    // ACKing every second segment (mainline AccECN path) 0.56 / 0.33; per-segment ACKs
    // 0.20 / 0.16; router and delay-node timers late by Exp(15 µs) 0.40 / 0.33, Exp(50 µs)
    // 0.52 / 0.41 (Prague in DualPI2 0.26 / 0.33, real 0.3); sender NIC ITR 50 / 125 µs
    // 0.35 / 0.34; L4S-OLD gains (DOWN 0.75, UP cwnd gain 2) 0.35 / 0.29;
    // inflight_headroom 0: 0.60 / 0.29. None is both sourced and large enough.
    let q = json!({"kind": "dualpi2", "target_ns": 5 * MS, "variant": "l4steam"});
    let r = run(&scenario(100, q, vec![pam_bbr2_l4s(), pam(tcp("cubic", 10))], 60));
    let qd = r.flows[0].queuing_delay_ms;
    assert!((0.7..=1.2).contains(&qd), "L4S-BBRv2 queuing delay {qd} ms");
    assert!(r.bottleneck.utilisation >= 0.90);
}

/// The PAM 2025 L4S-BBRv2 flow as the testbed ran it: AccECN with the L4STeam receive
/// path, and the receiving socket on bbr2-l4s (rx_L4S's default CC was the sender's).
fn pam_bbr2_l4s() -> Value {
    let mut f = bbr2_l4s();
    f["receiver_kernel"] = json!("l4steam");
    f["receiver_cc"] = json!("bbr2-l4s");
    f
}

#[test]
fn bbr2_l4s_cruises_cwnd_limited_at_inflight_hi_less_headroom_in_l4s_aware_fq_codel() {
    // The PAM 2025 L4S-aware FQ-CoDel cell (fq_codel with ce_threshold 1 ms for ECT(1),
    // 2 BDP), L4S-BBRv2 against ECN-CUBIC. Each UP probe ends when CE ≥ 50 % of a
    // sample (bbr2_is_inflight_too_high; the 1 ms threshold), which sets inflight_hi;
    // in CRUISE bbr2_bound_cwnd_for_inflight_model caps cwnd at
    // min(bbr2_inflight_with_headroom = inflight_hi − inflight_hi·38/256, inflight_lo)
    // (L4STeam tcp_bbr2.c). The flow sits at that cap: in flight ≈ cwnd, queue ≈ 0.
    // So its window, not a max-filter bias in its pacing rate (0.99 · bw, above the
    // rate its window allows), decides its queuing delay.
    //
    // The testbed's own files (fatihsarpkaya/L4S-PAM2025, "L4S-Compatible BBRv2 vs
    // Classic", cubic_ecn_{tput,srtt}_tx_L4S.json, FQ_Codel_L4S rows at 1 and 2 BDP):
    // 42.5–43.5 Mbit/s at sRTT 10.68–11.06 ms, i.e. a window of 40.0–40.2 packets of
    // 1448 B; the engine's is within a few % of that, at 45.5 Mbit/s and ≈ 10.3 ms. The
    // testbed's ≈ 0.45 ms more sRTT comes at the same window, so it is not the CC's
    // choice of window (the missing delay is in the RTT at a given window).
    let q = json!({"kind": "fq_codel", "limit_packets": 167, "target_ns": 5 * MS, "interval_ns": 100 * MS,
                   "ecn": true, "ce_threshold_ns": MS, "ce_threshold_selector": [1, 1]});
    let mut cubic = pam(tcp("cubic", 10));
    cubic["ecn"] = json!(1);
    cubic["receiver_ecn"] = json!(1);
    let mut s = scenario(100, q, vec![pam_bbr2_l4s(), cubic], 30);
    s["warmup_ns"] = json!(5 * SEC);
    let r = run(&s);
    let fs = &r.flow_series[0];
    let (mut at_cap, mut cruise, mut cwnd_sum) = (0, 0, 0.0);
    for i in 50..fs.cwnd.len() {
        if fs.cc_mode[i] != "PROBE_BW:CRUISE" {
            continue;
        }
        cruise += 1;
        cwnd_sum += fs.cwnd[i];
        let hi = fs.inflight_hi[i];
        let headroom = ((hi * 38.0 / 256.0).floor()).max(1.0);
        let lo = if fs.inflight_lo[i].is_finite() { fs.inflight_lo[i] } else { f64::INFINITY };
        if fs.cwnd[i] == (hi - headroom).min(lo).max(4.0) {
            at_cap += 1;
        }
    }
    assert!(cruise >= 150, "CRUISE bins {cruise} of {}", fs.cwnd.len() - 50);
    assert!(at_cap as f64 >= 0.9 * cruise as f64, "cwnd at the CRUISE cap in {at_cap} of {cruise} bins");
    // In flight (goodput × sRTT, packets of 1448 B) is the CRUISE cwnd: within the
    // dips of DOWN / PROBE_RTT below it and the UP probes above it.
    let f = &r.flows[0];
    let window = f.goodput_mbps * 1e6 / (1448.0 * 8.0) * f.mean_srtt_ms / 1000.0;
    let cwnd = cwnd_sum / cruise as f64;
    assert!((0.93..=1.05).contains(&(window / cwnd)), "window {window:.1} vs CRUISE cwnd {cwnd:.1}");
    // The testbed's window, 40.0–40.2 packets, within 6 %.
    assert!((37.7..=42.6).contains(&window), "window {window:.1} packets");
    assert!(f.queuing_delay_ms < 0.6, "queuing delay {:.3} ms", f.queuing_delay_ms);
}

#[test]
fn bbr2_l4s_gets_under_15_percent_against_two_sided_bbr2_and_long_path_bbr3_in_dualpi2() {
    // PAM 2025: in DualPI2 L4S-BBRv2 is harmed (< ~15 %) by two-sided BBRv2 and by
    // BBRv3 on the 10 ms path (testbed files: 4.0–5.1 Mbit/s against BBRv3). The classic
    // flow is ECT(0) in the C queue and barely answers its p'² marks (two-sided: α ≈
    // p'²; BBRv3 at min RTT > 5 ms ignores CE), so the PI raises p' until the L flow,
    // cutting inflight_lo by α/3 on every round with a coupled (2p') mark, is squeezed.
    let q = json!({"kind": "dualpi2", "target_ns": 5 * MS, "variant": "l4steam"});
    let mut bbr3 = pam(tcp("bbr3", 10));
    bbr3["ecn"] = json!(1);
    bbr3["receiver_ecn"] = json!(1);
    bbr3["ecn_low"] = json!(true);
    for (name, other) in [("two-sided BBRv2", bbr2("two-sided")), ("BBRv3", bbr3)] {
        let r = run(&scenario(100, q.clone(), vec![pam_bbr2_l4s(), other], 60));
        let (l, c) = (r.flows[0].goodput_mbps, r.flows[1].goodput_mbps);
        let share = l / (l + c);
        assert!((0.02..0.15).contains(&share), "L4S-BBRv2 share against {name}: {share:.3}");
        assert!(r.flows[1].ecn_mode == "rfc3168" && r.flows[0].ecn_mode == "accecn");
    }
}

#[test]
fn a_bad_receiver_cc_params_is_one_line_naming_the_field() {
    let mut f = bbr2("two-sided");
    f["receiver_cc_params"] = json!({"ecn_enabled": true});
    let cfg: l4slab_core::ScenarioConfig = serde_json::from_value(scenario(100, bfifo(250_000), vec![f], 1)).unwrap();
    let e = l4slab_core::run(&cfg).expect_err("refused");
    assert!(e.starts_with("flows[0].receiver_cc_params: ecn_enabled: unknown bbr2 parameter"), "{e}");
    assert!(!e.contains('\n'));
    let mut f = bbr2("two-sided");
    f["receiver_cc_params"] = json!({"fast_ack_mode": 3});
    let cfg: l4slab_core::ScenarioConfig = serde_json::from_value(scenario(100, bfifo(250_000), vec![f], 1)).unwrap();
    let e = l4slab_core::run(&cfg).expect_err("refused");
    assert_eq!(e, "flows[0].receiver_cc_params: fast_ack_mode: 3 is out of range (allowed 0..=2)");
}

#[test]
fn probe_rtt_dips_to_half_a_bdp_about_every_5_s_under_a_standing_queue() {
    // Two flows hold a ≈ 1 BDP standing queue (test above), so no RTT sample matches
    // the minimum and each flow's 5 s probe_rtt_min window expires (bbr_update_min_rtt,
    // bbr_probe_rtt_win_ms = 5000): PROBE_RTT caps cwnd at max(4, BDP_share/2) for
    // ≥ 200 ms. Its BDP is computed from the flow's bw (≈ half the link): ≈ 21-25 packets.
    let r = run(&scenario(100, bfifo(1_000_000), vec![bbr2("none"), bbr2("none")], 31));
    let cwnd = &r.flow_series[0].cwnd;
    let bin_s = 0.1;
    let mut starts = Vec::new();
    let mut in_dip = false;
    for (i, &c) in cwnd.iter().enumerate() {
        let dip = c > 0.0 && c <= 30.0;
        if dip && !in_dip && i as f64 * bin_s > 2.0 {
            starts.push(i as f64 * bin_s);
        }
        in_dip = dip;
    }
    assert!((5..=7).contains(&starts.len()), "PROBE_RTT dips at {starts:?}");
    for w in starts.windows(2) {
        let gap = w[1] - w[0];
        assert!((4.0..=6.5).contains(&gap), "dips at {starts:?}");
    }
}

/// Share of the first flow and the fraction of its PROBE_BW time it spends in DOWN,
/// after 10 s (flow series, 100 ms bins).
fn split_and_down_time(r: &l4slab_core::RunResults) -> (f64, f64) {
    let g: Vec<f64> = r.flows.iter().map(|f| f.goodput_mbps).collect();
    let modes = &r.flow_series[g.iter().enumerate().min_by(|a, b| a.1.total_cmp(b.1)).unwrap().0].cc_mode;
    let tail = &modes[modes.len() / 6..];
    let probe_bw = tail.iter().filter(|m| m.starts_with("PROBE_BW")).count() as f64;
    let down = tail.iter().filter(|m| **m == "PROBE_BW:DOWN").count() as f64;
    (g[0] / (g[0] + g[1]), down / probe_bw)
}

#[test]
fn two_flows_in_a_lossless_2_bdp_fifo_split_unevenly_because_drain_to_target_holds_the_smaller_in_down() {
    // Two v2alpha flows, 2 BDP bfifo: Σcwnd ≈ 2·Σbw·min_rtt ≈ 2.2 BDP < BDP + buffer
    // (3 BDP), so after STARTUP nothing is lost, inflight_hi stays unset and the
    // loss/ECN bounds never act. v2alpha's default `bbr_drain_to_target = true`
    // (tcp_bbr2.c:bbr2_check_time_to_cruise) keeps a flow in PROBE_BW DOWN (pacing 3/4)
    // until its in-flight is ≤ its own BDP + budget: the larger flow's standing queue
    // keeps the smaller flow's in-flight above that, so the smaller one paces at 3/4 of
    // its estimate most of the time and the split persists (≈ 24/76 %). With
    // drain_to_target off, DOWN ends after one min_rtt and the flows share evenly.
    let pair = |dtt: bool| {
        let mut f = pam(tcp("bbr2", 10));
        f["cc_params"] = json!({"drain_to_target": dtt});
        run(&scenario(100, bfifo(250_000), vec![f.clone(), f], 60))
    };
    let (share, down) = split_and_down_time(&pair(true));
    let minority = share.min(1.0 - share);
    assert!(minority < 0.35, "default v2alpha split {share:.3}");
    assert!(down > 0.5, "smaller flow in DOWN {down:.2} of its PROBE_BW time");
    let (share, down) = split_and_down_time(&pair(false));
    assert!((0.45..=0.55).contains(&share), "drain_to_target off: share {share:.3}");
    assert!(down < 0.2, "DOWN {down:.2} of PROBE_BW time without drain_to_target");
}

/// L4S-BBRv2 alone in DualPI2, 100 Mbit/s, 10 ms, as Linux sends (GSO skbs, TSO
/// deferral, the AccECN option on every segment), 20 s from 5 s, bins of 10 ms.
fn bbr2_l4s_alone_in_dualpi2() -> l4slab_core::RunResults {
    let mut f = tcp("bbr2-l4s", 10);
    f["ecn"] = json!(3);
    f["receiver_ecn"] = json!(3);
    f["tso"] = json!(true);
    f["tso_defer"] = json!(true);
    let mut s = scenario(100, json!({"kind": "dualpi2"}), vec![f], 20);
    s["warmup_ns"] = json!(5 * SEC);
    s["bin_ns"] = json!(10 * MS);
    run(&s)
}

#[test]
fn bbr2_l4s_with_gso_sets_inflight_hi_from_the_whole_skbs_flight() {
    // A probe's CE (the L queue's 1 ms step) sets inflight_hi from the sampled skb's
    // tx.in_flight, which Linux stamps once per skb with the whole skb counted
    // (tcp_rate.c:tcp_set_tx_in_flight): an ACK for the skb's first two segments reads
    // the flight its last segment reached. CRUISE then holds cwnd at inflight_hi less 15 %
    // (bbr2_inflight_with_headroom). Per-segment stamps (in flight up to each segment)
    // left inflight_hi at 90-93, CRUISE at 77-80 and the flow at 83.5-83.8 Mbit/s (seeds
    // 1-3). Seeds 1-20: inflight_hi 96-99 (97 in 11), CRUISE cwnd 82-85, 86.9-89.1 Mbit/s;
    // the kernel backend (Linux 7.2, the project's BBRv2 module; docs/fidelity-pam-aqm.md),
    // 20 runs: 96-99 (99 in 11), 82-85, 88.2-91.0.
    let r = bbr2_l4s_alone_in_dualpi2();
    let fs = &r.flow_series[0];
    let (mut hi, mut cwnd) = (Vec::new(), Vec::new());
    for i in 500..fs.cwnd.len() {
        if fs.cc_mode[i] == "PROBE_BW:CRUISE" {
            hi.push(fs.inflight_hi[i]);
            cwnd.push(fs.cwnd[i]);
        }
    }
    assert!(hi.len() >= 1000, "CRUISE bins {}", hi.len());
    hi.sort_by(f64::total_cmp);
    cwnd.sort_by(f64::total_cmp);
    let (hi, cwnd) = (hi[hi.len() / 2], cwnd[cwnd.len() / 2]);
    assert!((95.0..=101.0).contains(&hi), "median CRUISE inflight_hi {hi}");
    assert!(cwnd >= 81.0, "median CRUISE cwnd {cwnd}");
    let g = r.flows[0].goodput_mbps;
    assert!(g >= 86.0, "goodput {g} Mbit/s");
}

#[test]
fn bbr2_l4s_sizes_its_gso_skbs_in_mss_now_so_its_acks_come_in_pairs() {
    // tcp_write_xmit sizes an skb in mss_now (tcp_current_mss: 1436 B, the MSS less the
    // AccECN option every segment carries), for the CC's tso_segs op as for
    // tcp_tso_autosize (tcp_output.c:tcp_tso_segs; google/bbr bbr_tso_segs(sk, mss_now)),
    // while BBR's own TSO goal stays in mss_cache (bbr_tso_segs_goal). At ≈ 94.7 Mbit/s,
    // 11 559 B a millisecond: 8 segments of 1436 B, 7 of 1448. The last segment of every
    // skb carries PSH, and a 6.6+ receiver ACKs a full-sized PSH segment at once
    // (tcp_input.c:tcp_measure_rcv_mss, tcp.c:tcp_cleanup_rbuf): 7-segment skbs end in a
    // PSH segment ACKed alone, 8-segment skbs in an ACK of two. The kernel backend, 20
    // runs: 0.515-0.520 ACKs per data segment (nstat: 79 525 ACKs for 154 689 segments),
    // skbs 77 % of 8 segments (the traced module's count of the retransmission queue);
    // the engine, seeds 1-20: 0.515-0.519, 0.572-0.576 with skbs sized in mss_cache.
    let r = bbr2_l4s_alone_in_dualpi2();
    let f = &r.flows[0];
    assert_eq!(f.mean_payload_bytes, 1436.0);
    assert!((0.50..=0.53).contains(&f.acks_per_packet), "ACKs per data segment {}", f.acks_per_packet);
}

/// BBRv2 (no `ecn_enable`, RFC 3168 ECN at both ends, so its packets are CE-marked but it
/// ignores the marks) beside Prague in the PAM "FIFO-ECN" queue (one fq flow of 84 packets,
/// CE above 5 ms), both with GSO as Linux sends, 100 Mbit/s, 10 ms; the BBRv2 receive
/// window pinned (`rwnd_bytes`, as `SO_RCVBUF` locks it), as `l4slab run` resolves the scenario
/// (1-ms start jitter, the 10-Gbit/s access links). Seconds 1-3.
fn bbr2_beside_prague_in_fifo_ecn(rwnd_bytes: u64, seed: u64) -> (f64, Vec<f64>, f64) {
    let mut prague = json!({"kind": "tcp", "cc": "prague", "rtt_ns": 10 * MS,
                            "cc_params": {"growth_gate": "app_limited"}, "receiver_ecn": 3});
    let mut b = tcp("bbr2", 10);
    b["ecn"] = json!(1);
    b["receiver_ecn"] = json!(1);
    b["rwnd_bytes"] = json!(rwnd_bytes);
    for f in [&mut prague, &mut b] {
        f["tso"] = json!(true);
        f["tso_defer"] = json!(true);
    }
    let q = json!({"kind": "fq", "orphan_mask": 0, "limit_packets": 84, "flow_limit_packets": 84,
                   "ce_threshold_ns": 5 * MS});
    let mut s = scenario(100, q, vec![prague, b], 3);
    s["seed"] = json!(seed);
    s["start_jitter_ns"] = json!(MS);
    s["bottleneck"]["burst_bytes"] = json!(1600);
    s["bottleneck"]["access_rate_bps"] = json!(10_000 * MBIT);
    s["warmup_ns"] = json!(SEC);
    s["bin_ns"] = json!(10 * MS);
    let r = run(&s);
    let fs = &r.flow_series[1];
    let cruise: Vec<f64> =
        (100..fs.cwnd.len()).filter(|&i| fs.cc_mode[i] == "PROBE_BW:CRUISE").map(|i| fs.cwnd[i]).collect();
    let median_cruise_cwnd = {
        let mut c = cruise.clone();
        c.sort_by(f64::total_cmp);
        c.get(c.len() / 2).copied().unwrap_or(f64::NAN)
    };
    // The series stays empty while inflight_hi was never set.
    let hi = fs.inflight_hi.get(100..).unwrap_or(&[]).to_vec();
    (r.flows[1].goodput_mbps, hi, median_cruise_cwnd)
}

#[test]
fn bbr2s_startup_exit_beside_prague_follows_its_receive_window() {
    // How STARTUP ends decides BBRv2's share here: CRUISE holds cwnd at inflight_hi less
    // 15 % (bbr2_inflight_with_headroom) over Prague's 5-ms standing queue, and nothing
    // later raises a bound that no probe finds too high. A window that caps the flight
    // at ≈ 1.6 BDP (130 packets, what Linux 7.2's receiver advertises there on the kernel
    // backend at the first loss) flattens STARTUP's bandwidth growth before the queue
    // overflows: the full-pipe detector (bbr_check_full_bw_reached, three rounds without
    // 25 % growth) ends it with inflight_hi unset, and BBRv2 keeps cwnd at 2 BDP (≈ 93
    // Mbit/s). With no window limit STARTUP overflows the 84-packet queue; ≥ 8 lossy ACKs
    // in a Recovery round of too-high loss end it (bbr2_check_loss_too_high_in_startup)
    // with inflight_hi = the BDP at max_bw (≈ 70), and BBRv2 cruises at ≈ 60 packets
    // (52-56 Mbit/s). Measured over seeds 1-12 (20 s runs): every pinned-window run the
    // first way (93.1-93.2 Mbit/s), every unpinned one the second (52.3-56.3); the kernel
    // backend with its autotuned window shows both, and its early loss exit
    // (docs/fidelity-pam-aqm.md, "BBRv2 without ecn_enable").
    for seed in 1..=3 {
        let (g, hi, _) = bbr2_beside_prague_in_fifo_ecn(188 << 10, seed);
        assert!(
            hi.iter().all(|h| h.is_nan()),
            "seed {seed}, 188-kB window: inflight_hi set ({:?})",
            hi.iter().find(|h| !h.is_nan())
        );
        assert!(g > 85.0, "seed {seed}, 188-kB window: BBRv2 {g:.1} Mbit/s");
        let (g, hi, cwnd) = bbr2_beside_prague_in_fifo_ecn(1 << 30, seed);
        let hi0 = hi.first().copied().unwrap_or(f64::NAN);
        assert!((60.0..=95.0).contains(&hi0), "seed {seed}, no window limit: inflight_hi {hi0} at 1 s");
        assert!((cwnd - 0.85 * hi0).abs() <= 3.0, "seed {seed}: CRUISE cwnd {cwnd} against inflight_hi {hi0}");
        assert!((45.0..=65.0).contains(&g), "seed {seed}, no window limit: BBRv2 {g:.1} Mbit/s");
    }
}
