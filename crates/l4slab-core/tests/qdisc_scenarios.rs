//! Scenario tests of the AQM qdiscs with long-lived flows and unresponsive UDP,
//! checked against each AQM's own target: DualPI2's 15 ms C-queue and 1 ms L-step
//! (RFC 9332, net/sched/sch_dualpi2.c), PIE's 15 ms QDELAY_REF (RFC 8033), CoDel's
//! 5 ms TARGET (RFC 8289), fq/fq_codel flow isolation (net/sched/sch_fq*.c, RFC 8290).

use crate::common;
use common::*;
use serde_json::{json, Value};

fn udp(rate_mbit: u64, ecn: &str) -> Value {
    json!({"kind": "udp", "rtt_ns": 10 * MS, "rate_bps": rate_mbit * MBIT, "payload_bytes": 1472, "ecn": ecn})
}

/// Fraction of the packets arriving at the bottleneck that it dropped.
fn drop_probability(r: &l4slab_core::RunResults) -> f64 {
    let b = &r.bottleneck_series;
    b.drops.iter().sum::<u64>() as f64 / b.arrivals.iter().sum::<u64>() as f64
}

fn class<'a>(r: &'a l4slab_core::RunResults, name: &str) -> &'a l4slab_core::results::DelayStats {
    &r.bottleneck.sojourn_by_class.iter().find(|c| c.class == name).expect("class exists").sojourn_ms
}

#[test]
fn dualpi2_holds_four_cubic_flows_at_its_15ms_target() {
    let flows = (0..4).map(|_| tcp("cubic", 10)).collect();
    let r = run(&scenario(100, json!({"kind": "dualpi2"}), flows, 30));
    let c = class(&r, "C");
    assert!((10.0..=20.0).contains(&c.mean), "C sojourn {}", c.mean);
    assert!(r.bottleneck.utilisation >= 0.95, "utilisation {}", r.bottleneck.utilisation);
    assert!(r.jain_index > 0.95, "jain {}", r.jain_index);
}

#[test]
fn dualpi2_overload_drops_the_excess_of_unresponsive_classic_udp() {
    // DualQ paper §IV-G and Fig. 12 (unresponsive UDP at 50–200 % of the link): UDP at 140 % of the link in the C queue. To keep the queue finite
    // the C drop probability must approach 1 − 1/1.4 ≈ 29 %.
    let flows = vec![udp(140, "not-ect"), tcp("cubic", 10), tcp("cubic", 10)];
    let r = run(&scenario(100, json!({"kind": "dualpi2"}), flows, 20));
    let p = drop_probability(&r);
    assert!((0.20..=0.40).contains(&p), "C drop probability {p}");
}

#[test]
fn dualpi2_keeps_l4s_udp_at_half_the_link_below_1ms() {
    // An ECT(1) source at 50 % goes to the L queue, which the scheduler serves
    // first: its P99 sojourn stays below the 1 ms step threshold.
    let flows = vec![udp(50, "ect1"), tcp("cubic", 10), tcp("cubic", 10)];
    let r = run(&scenario(100, json!({"kind": "dualpi2"}), flows, 20));
    let l = class(&r, "L");
    // 50 Mbit/s of 1514-B frames for 20 s = 82 562 packets.
    assert!(l.count > 80_000, "L packets {}", l.count);
    assert!(l.p99 < 1.0, "L P99 sojourn {} ms", l.p99);
    // The classic flows still get the rest of the link.
    let tcp_goodput: f64 = r.flows[1..].iter().map(|f| f.goodput_mbps).sum();
    assert!(tcp_goodput > 40.0, "CUBIC goodput {tcp_goodput}");
}

/// Four long-lived flows of `cc` (classic ECN requested when `ecn`) through `qdisc`,
/// measured after a 10 s warm-up (DualQ paper's T_w = 5 + rate·rtt/100 s).
fn four_flows(qdisc: Value, cc: &str, ecn: bool) -> l4slab_core::RunResults {
    let flows = (0..4)
        .map(|_| {
            let mut f = tcp(cc, 10);
            f["ecn"] = json!(if ecn { 1 } else { 0 });
            f
        })
        .collect();
    let mut s = scenario(100, qdisc, flows, 40);
    s["warmup_ns"] = json!(10 * SEC);
    run(&s)
}

fn assert_holds_target(r: &l4slab_core::RunResults, target_ms: f64, ecn: bool, what: &str) {
    let b = &r.bottleneck;
    let m = b.sojourn_ms.mean;
    assert!((m - target_ms).abs() <= 0.4 * target_ms, "{what}: mean sojourn {m} ms vs target {target_ms}");
    assert!(b.utilisation >= 0.90, "{what}: utilisation {}", b.utilisation);
    if ecn {
        // ECN-capable traffic is marked instead of dropped (no tail drops here either).
        assert_eq!(b.drops, 0, "{what}: drops with ECN");
        assert!(b.marks > 0, "{what}: no marks");
    } else {
        assert!(b.drops > 0 && b.marks == 0, "{what}: drops {} marks {}", b.drops, b.marks);
    }
}

#[test]
fn pie_holds_four_flows_near_its_15ms_target() {
    for cc in ["cubic", "reno"] {
        for ecn in [false, true] {
            let r = four_flows(json!({"kind": "pie", "ecn": ecn}), cc, ecn);
            assert_holds_target(&r, 15.0, ecn, &format!("pie {cc} ecn={ecn}"));
        }
    }
}

#[test]
fn codel_holds_four_flows_near_its_5ms_target() {
    for cc in ["cubic", "reno"] {
        for ecn in [false, true] {
            let r = four_flows(json!({"kind": "codel", "ecn": ecn}), cc, ecn);
            assert_holds_target(&r, 5.0, ecn, &format!("codel {cc} ecn={ecn}"));
        }
    }
}

#[test]
fn fq_codel_shares_fairly_between_10ms_and_80ms_rtt() {
    // Per-flow queues remove the RTT bias a shared FIFO gives CUBIC.
    let r = run(&scenario(100, json!({"kind": "fq_codel"}), vec![tcp("cubic", 10), tcp("cubic", 80)], 40));
    let ratio = r.flows[0].goodput_mbps / r.flows[1].goodput_mbps;
    assert!((ratio - 1.0).abs() <= 0.25, "rate ratio {ratio}");
}

#[test]
fn fq_with_orphan_mask_0_is_one_shared_queue() {
    // The studies' "FIFO+ECN": forwarded packets have no socket, so fq hashes them
    // with orphan_mask; 0 puts every flow in one queue (Linux net/sched/sch_fq.c:fq_classify).
    let q = |mask: u32| json!({"kind": "fq", "orphan_mask": mask, "limit_packets": 167, "flow_limit_packets": 167});
    let flows = || vec![tcp("cubic", 10), tcp("cubic", 10), tcp("reno", 10)];
    let one = run(&scenario(100, q(0), flows(), 10));
    let many = run(&scenario(100, q(1023), flows(), 10));
    let n = |r: &l4slab_core::RunResults| r.bottleneck.qdisc.extra["flows"];
    assert_eq!(n(&one), 1.0);
    assert_eq!(n(&many), 3.0);
    // One queue of 167 frames: sojourn never exceeds 167 × 121.12 µs ≈ 20.2 ms.
    assert!(one.bottleneck.sojourn_ms.max <= 20.3, "max sojourn {}", one.bottleneck.sojourn_ms.max);
}

#[test]
fn dualpi2_per_bin_sojourn_series_split_by_queue_bracket_the_shared_mean() {
    // The coexistence paper (Fig. 5) draws DualPI2's L and C queue delay per second: one
    // Prague flow (L) and one CUBIC flow (C). Each bin's all-packets mean is a
    // count-weighted mean of the two queues' means, so it lies between them;
    // the L queue sits near its 1 ms step, the C queue near its 15 ms target.
    let mut prague = tcp("prague", 10);
    prague["receiver_ecn"] = json!(3); // the receiver accepts AccECN (tcp_ecn=3)
    let flows = vec![prague, tcp("cubic", 10)];
    let r = run(&scenario(40, json!({"kind": "dualpi2"}), flows, 20));
    let b = &r.bottleneck_series;
    let names: Vec<&str> = r.bottleneck.sojourn_by_class.iter().map(|c| c.class.as_str()).collect();
    assert_eq!(names, ["C", "L"]);
    assert_eq!(b.sojourn_class_ms.len(), 2);
    let (c, l) = (&b.sojourn_class_ms[0], &b.sojourn_class_ms[1]);
    assert_eq!(c.len(), b.sojourn_ms.len());
    assert_eq!(l.len(), b.sojourn_ms.len());
    let mut both = 0;
    for i in 0..b.sojourn_ms.len() {
        if c[i].is_finite() && l[i].is_finite() {
            both += 1;
            let (lo, hi) = (c[i].min(l[i]), c[i].max(l[i]));
            assert!(
                b.sojourn_ms[i] >= lo - 1e-9 && b.sojourn_ms[i] <= hi + 1e-9,
                "bin {i}: {} not in [{lo}, {hi}]",
                b.sojourn_ms[i]
            );
        }
    }
    assert!(both > b.sojourn_ms.len() / 2, "bins with both queues busy: {both}");
    let mean = |v: &[f64]| {
        let x: Vec<f64> = v[v.len() / 2..].iter().copied().filter(|x| x.is_finite()).collect();
        x.iter().sum::<f64>() / x.len() as f64
    };
    assert!(mean(l) < 2.0, "L mean of bin means {}", mean(l));
    assert!((8.0..=22.0).contains(&mean(c)), "C mean of bin means {}", mean(c));
    // A single-queue qdisc has no per-class series (its one class is `sojourn_ms`).
    let r = run(&scenario(40, json!({"kind": "pie"}), vec![tcp("cubic", 10)], 5));
    assert!(r.bottleneck_series.sojourn_class_ms.is_empty());
}
