//! Scenario tests of the AQM qdiscs with long-lived flows (issue acceptance for the
//! bottleneck suite), checked against their targets and the seed studies.

mod common;
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
    // dualq.md §5: UDP at 140 % of the link in the C queue. To keep the queue finite
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
