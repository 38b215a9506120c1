//! L4S behaviour end to end: AccECN + Prague over DualPI2, L4S-aware FQ-CoDel and
//! FIFO+ECN against the published PAM 2025 panels (PAM 2025 paper, Prague-vs-CUBIC panels:
//! 100 Mbit/s, 10 ms, 2 BDP, Prague vs CUBIC), DCTCP over a step marker, fallbacks.

use crate::common;
use common::*;
use serde_json::{json, Value};

fn prague() -> Value {
    let mut f = tcp("prague", 10);
    f["receiver_ecn"] = json!(3); // the receiver accepts AccECN (tcp_ecn=3)
    f
}

/// A PAM 2025 flow with one segment per skb (`tso = false`, the model knob; the testbed's TCP
/// kept GSO under `ethtool -K gso/tso off`: docs/fidelity-pam-hosts.md, "GSO on the PAM hosts").
fn pam(mut f: Value) -> Value {
    f["tso"] = json!(false);
    f
}

fn cubic(ecn: bool) -> Value {
    let mut f = tcp("cubic", 10);
    f["ecn"] = json!(if ecn { 1 } else { 0 });
    pam(f)
}

fn share(r: &l4slab_core::RunResults, i: usize) -> f64 {
    r.flows[i].goodput_mbps / 100.0
}

#[test]
fn prague_alone_over_dualpi2_gets_the_link_with_a_sub_ms_queue() {
    let r = run(&scenario(100, json!({"kind": "dualpi2"}), vec![prague()], 30));
    let f = &r.flows[0];
    assert_eq!(f.ecn_mode, "accecn");
    assert_eq!(f.drops, 0, "no loss: everything is marked");
    assert!(f.marks > 0);
    assert!(r.bottleneck.utilisation >= 0.95, "utilisation {}", r.bottleneck.utilisation);
    let l = &r.bottleneck.sojourn_by_class.iter().find(|c| c.class == "L").unwrap().sojourn_ms;
    // The DualQ paper's §V: alone, Prague's P99 is "slightly above 1 ms" (step marking only).
    assert!(l.p99 <= 2.0, "L P99 {}", l.p99);
    // The queue stays below the 1 ms step threshold on average. Alone, v0.7 sits at
    // ≈0.8 ms: its RTT-independent increase (1 packet per ~62 ms at 10 ms) and α of
    // ≈0.07 give cuts of ≈3 packets (0.4 ms), so the queue swings 0.6–1.05 ms. The
    // seed's "mean below 0.5 ms" is for runs beside a Classic flow (test below).
    assert!(l.mean <= 1.0, "L mean {}", l.mean);
}

#[test]
fn prague_beside_cubic_over_dualpi2_keeps_the_l_queue_below_half_a_ms() {
    // The DualQ paper's §V-E (Fig. 8, 40 Mbit/s): with a Classic flow, Prague's mean queue
    // delay is below 0.5 ms and its P99 below 1 ms (step plus coupled marking).
    for rtt in [5, 100] {
        let mut p = prague();
        p["rtt_ns"] = json!(rtt * MS);
        let mut c = tcp("cubic", rtt);
        c["rtt_ns"] = json!(rtt * MS);
        let mut sc = scenario(40, json!({"kind": "dualpi2"}), vec![p, c], 40);
        sc["warmup_ns"] = json!(10 * SEC);
        let r = run(&sc);
        let l = &r.bottleneck.sojourn_by_class.iter().find(|c| c.class == "L").unwrap().sojourn_ms;
        assert!(l.mean < 0.5 && l.p99 < 1.0, "{rtt} ms: L mean {} P99 {}", l.mean, l.p99);
        assert!(r.bottleneck.utilisation > 0.95, "{rtt} ms: utilisation {}", r.bottleneck.utilisation);
    }
}

#[test]
fn pam_fifo_ecn_prague_starves_ecn_cubic() {
    // Published (fifo_ecn, 2 BDP, CUBIC with ECN): Prague 90.3 (CUBIC 4.6) Mbit/s.
    let q = json!({"kind": "fq", "orphan_mask": 0, "limit_packets": 167, "flow_limit_packets": 167, "ce_threshold_ns": 5 * MS});
    let r = run(&scenario(100, q, vec![pam(prague()), cubic(true)], 60));
    assert!(share(&r, 0) > 0.80, "Prague share {}", share(&r, 0));
}

#[test]
fn pam_fifo_ecn_prague_is_starved_by_non_ecn_cubic() {
    // Published (fifo_ecn, 2 BDP, CUBIC without ECN): Prague 0.4 (CUBIC 95.2) Mbit/s.
    let q = json!({"kind": "fq", "orphan_mask": 0, "limit_packets": 167, "flow_limit_packets": 167, "ce_threshold_ns": 5 * MS});
    let r = run(&scenario(100, q, vec![pam(prague()), cubic(false)], 60));
    assert!(share(&r, 0) < 0.20, "Prague share {}", share(&r, 0));
}

#[test]
fn pam_dualpi2_shares_and_isolates() {
    // Published (dualpi2 target 5ms, CUBIC without ECN): 42.3 (52.7), delay 0.4 / 5.2 ms.
    let r = run(&scenario(100, json!({"kind": "dualpi2", "target_ns": 5 * MS}), vec![pam(prague()), cubic(false)], 60));
    for i in 0..2 {
        assert!((0.30..=0.70).contains(&share(&r, i)), "flow {i} share {}", share(&r, i));
    }
    assert!(r.flows[0].queuing_delay_ms < 1.0, "Prague queuing delay {}", r.flows[0].queuing_delay_ms);
    assert!((3.0..=8.0).contains(&r.flows[1].queuing_delay_ms), "CUBIC queuing delay {}", r.flows[1].queuing_delay_ms);
}

#[test]
fn pam_l4s_aware_fq_codel_gives_prague_low_delay() {
    // Published (fq_codel_l4s, 2 BDP, CUBIC without ECN): 46.3 (48.2), delay 1.3 / 4.3 ms.
    let q = json!({"kind": "fq_codel", "limit_packets": 167, "ecn": true, "ce_threshold_ns": MS, "ce_threshold_selector": [1, 1]});
    let r = run(&scenario(100, q, vec![pam(prague()), cubic(false)], 60));
    assert!(r.flows[0].queuing_delay_ms <= 2.0, "Prague queuing delay {}", r.flows[0].queuing_delay_ms);
    assert!((share(&r, 0) - share(&r, 1)).abs() < 0.1, "shares {} {}", share(&r, 0), share(&r, 1));
}

#[test]
fn dctcp_fills_the_link_over_a_1ms_step_marker() {
    let mut f = tcp("dctcp", 1);
    f["receiver_cc"] = json!("dctcp"); // DCTCP-style echo at the receiver
    let q = json!({"kind": "fq", "orphan_mask": 0, "ce_threshold_ns": MS});
    let r = run(&scenario(100, q, vec![f], 20));
    assert_eq!(r.flows[0].ecn_mode, "rfc3168");
    assert!(r.flows[0].throughput_mbps >= 95.0, "throughput {}", r.flows[0].throughput_mbps);
    let s = &r.bottleneck.sojourn_ms;
    assert!(s.p50 >= 0.5 && s.p50 <= 1.0 && s.p99 <= 1.2, "sojourn p50 {} p99 {}", s.p50, s.p99);
}

#[test]
fn prague_without_an_accecn_receiver_falls_back_to_not_ect_reno() {
    // A classic receiver (tcp_ecn=2) answers the AccECN SYN with classic ECN, which
    // Prague refuses: no ECN at all, so a marking AQM has to drop it.
    let r = run(&scenario(100, json!({"kind": "codel", "ecn": true}), vec![tcp("prague", 10)], 10));
    let f = &r.flows[0];
    assert_eq!(f.ecn_mode, "off");
    assert_eq!(f.marks, 0);
    assert!(f.drops > 0);
    assert!(r.bottleneck.utilisation > 0.9);
}

/// One Prague flow at 200 kbit/s, 20 ms with a segment-sizing scheme, on S2's shaper
/// (S2 paper §5.1: kernel 5.15 with the L4STeam DualPI2, 300 KB ≈ 200 packets,
/// 1 ms step). Returns the mean payload and the mean formula value over the 25-ms
/// bins after 10 s, and the retransmissions of the whole run.
fn prague_segment_sizing(scheme: &Value, seed: u64, formula: &dyn Fn(f64, f64) -> f64) -> (f64, f64, u64) {
    let mut f = prague();
    f["rtt_ns"] = json!(20 * MS);
    f["cc_params"] = json!({ "segment_sizing": scheme });
    let q = json!({"kind": "dualpi2", "variant": "l4steam", "limit_packets": 200});
    let mut sc = scenario(1, q, vec![f], 60);
    sc["seed"] = json!(seed);
    sc["bottleneck"]["rate_bps"] = json!(200_000);
    sc["bin_ns"] = json!(25 * MS);
    let r = run(&sc);
    let s = &r.flow_series[0];
    let (mut payload, mut expected, mut n) = (0.0, 0.0, 0.0);
    for i in 0..r.time_s.len() {
        if r.time_s[i] >= 10.0 && s.payload_bytes[i].is_finite() {
            payload += s.payload_bytes[i];
            expected += formula(s.pacing_rate_mbps[i] * 1e6, s.srtt_ms[i] / 1e3);
            n += 1.0;
        }
    }
    (payload / n, expected / n, r.flows[0].retransmits)
}

#[test]
fn prague_segment_sizes_follow_each_schemes_formula_at_200kbit() {
    // L4STeam/linux net/ipv4/tcp_prague.c:prague_pacing_rate_to_max_mtu (default: MTU = ⌈r·max(srtt, 25 ms)/2⌉) and S2 paper §4 (S2: S(x),
    // x = (r − 100 kb/s)/900 kb/s, within [150 B, MSS]); MSS = 1436 with AccECN.
    let (s_min, s_max) = (150.0, 1436.0);
    let x = |r: f64| (r.clamp(1e5, 1e6) - 1e5) / 9e5;
    let s2 = move |f: f64| s_min + (s_max - s_min) * f;
    type Formula = Box<dyn Fn(f64, f64) -> f64>;
    let cases: Vec<(&str, Value, Formula)> = vec![
        ("fixed", json!({"scheme": "fixed"}), Box::new(move |_, _| s_max)),
        (
            "default",
            json!({"scheme": "default"}),
            Box::new(move |r, srtt| ((r / 8.0 * srtt.max(0.025) / 2.0).ceil() - 64.0).clamp(s_min, s_max)),
        ),
        ("linear", json!({"scheme": "linear"}), Box::new(move |r, _| s2(x(r)))),
        ("exponential", json!({"scheme": "exponential", "p": 2.0}), Box::new(move |r, _| s2(x(r).powi(2)))),
        (
            "logarithmic",
            json!({"scheme": "logarithmic", "k": 4.0}),
            Box::new(move |r, _| s2((1.0 + 4.0 * x(r)).ln() / 5f64.ln())),
        ),
    ];
    let mut results = Vec::new();
    for (name, scheme, formula) in &cases {
        let (mut payload, mut rtx) = (0.0, 0);
        for seed in 1..=3 {
            let (p, e, r) = prague_segment_sizing(scheme, seed, formula.as_ref());
            assert!((p / e - 1.0).abs() <= 0.10, "{name} seed {seed}: mean payload {p:.0} B, formula {e:.0} B");
            payload += p / 3.0;
            rtx += r;
        }
        results.push((*name, payload, rtx));
    }
    let get = |n: &str| *results.iter().find(|m| m.0 == n).unwrap();
    // S2 Fig. 2 at 200 kbit/s: exponential < linear < logarithmic < default, and the
    // default rule keeps packets near the MSS (its virtual RTT includes the queue).
    assert!(get("exponential").1 < get("linear").1);
    assert!(get("linear").1 < get("logarithmic").1);
    assert!(get("logarithmic").1 < get("default").1);
    assert!(get("default").1 >= 0.9 * get("fixed").1, "default {:.0} B", get("default").1);
    // S2 Fig. 3: the pacing-rate-driven schemes retransmit less than the fixed
    // baseline: DualPI2's overload drops need 2 MTU of backlog, which small packets
    // at the same rate reach less often.
    let fixed = get("fixed").2;
    for name in ["linear", "exponential", "logarithmic"] {
        assert!(get(name).2 < fixed, "{name}: {} retransmissions vs fixed {fixed}", get(name).2);
    }
}
