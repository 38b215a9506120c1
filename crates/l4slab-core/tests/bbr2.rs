//! BBRv2 (`bbr2`, google/bbr v2alpha) and L4S-BBRv2 (`bbr2-l4s`, L4STeam/linux)
//! end to end on the PAM 2025 path: 100 Mbit/s, 10 ms base RTT (BDP ≈ 83 packets
//! of 1500 B, 125 kB), with the study's three BBRv2 ECN modes.

mod common;
use common::*;
use serde_json::{json, Value};

/// A flow as on the PAM 2025 testbed: GSO/TSO off on every interface.
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
    // PAM 2025: "in DualPI2 the queuing delay of L4S-BBRv2 is around 1 ms" (mean
    // srtt − base RTT, against a Classic flow). Simulated (also with the testbed's
    // `target 5ms variant l4steam`): 0.3 ms. After the first ECN rounds the flow is
    // cwnd-limited at inflight_lo (≈ 56 packets, its BDP share), which CE only lowers
    // (bbr2_adapt_lower_bounds) and only REFILL/PROBE_RTT reset; it spends ≈ 87 % of
    // PROBE_BW in CRUISE with the L queue nearly empty (mean sojourn 0.18 ms, P99 1.35).
    // L4STeam 009adfe4 defaults checked: ecn_reprobe_gain 0, DOWN 0.91, fast_ack_mode 1;
    // bbr2_adapt_lower_bounds (ECN cut of inflight_lo by 1 − α·ecn_factor, unfloored)
    // matches. The metric is the paper's: mean of per-bin sRTT samples (iperf3-like) −
    // the 10 ms base, so delayed ACKs count (0.31 ms with them, 0.15 ms without, against
    // CUBIC in `target 5ms variant l4steam`). The sender-side ACK batching that closes
    // the Prague-vs-BBRv1 gap (tests/bbr.rs) adds only ≈ G/2 here (0.40 / 0.46 ms at
    // G = 100 / 250 µs) and leaves the L sojourn at 0.18–0.19 ms: it is not this gap.
    let r = run(&scenario(100, json!({"kind": "dualpi2"}), vec![bbr2_l4s(), pam(tcp("cubic", 10))], 60));
    let qd = r.flows[0].queuing_delay_ms;
    assert!((0.7..=1.2).contains(&qd), "L4S-BBRv2 queuing delay {qd} ms");
    assert!(r.bottleneck.utilisation >= 0.90);
}

#[test]
fn a_bad_receiver_cc_params_is_one_line_naming_the_field() {
    let mut f = bbr2("two-sided");
    f["receiver_cc_params"] = json!({"ecn_enabled": true});
    let cfg: l4slab_core::ScenarioConfig = serde_json::from_value(scenario(100, bfifo(250_000), vec![f], 1)).unwrap();
    let e = l4slab_core::run(&cfg).err().expect("refused");
    assert!(e.starts_with("flows[0].receiver_cc_params: ecn_enabled: unknown bbr2 parameter"), "{e}");
    assert!(!e.contains('\n'));
    let mut f = bbr2("two-sided");
    f["receiver_cc_params"] = json!({"fast_ack_mode": 3});
    let cfg: l4slab_core::ScenarioConfig = serde_json::from_value(scenario(100, bfifo(250_000), vec![f], 1)).unwrap();
    let e = l4slab_core::run(&cfg).err().expect("refused");
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
