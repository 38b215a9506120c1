//! Helpers shared by the scenario tests.

pub mod counting_alloc;

use l4slab_core::{RunResults, ScenarioConfig};
use serde_json::{json, Value};

pub const MBIT: u64 = 1_000_000;
pub const MS: u64 = 1_000_000;
pub const SEC: u64 = 1_000_000_000;

/// A TCP flow in engine JSON.
pub fn tcp(cc: &str, rtt_ms: u64) -> Value {
    json!({"kind": "tcp", "cc": cc, "rtt_ns": rtt_ms * MS})
}

/// The PAM 2025 testbed's L4S sender as `python/l4slab/studies/pam2025` configures it:
/// TCP Prague of the study's vintage (`growth_gate = app_limited`), AccECN with the
/// L4STeam kernel's receiver, 10 ms base RTT; one segment per skb (`tso = false`; the study
/// has GSO on, as Linux TCP forces it, but `prague_tso_segs` gives one segment below a
/// pacing rate of ≈ 99 Mbit/s).
pub fn pam_prague() -> Value {
    json!({"kind": "tcp", "cc": "prague", "rtt_ns": 10 * MS, "tso": false, "receiver_ecn": 3,
           "receiver_kernel": "l4steam", "cc_params": {"growth_gate": "app_limited"}})
}

/// The PAM testbed's delay-node lateness as `python/l4slab/studies/pam2025/study.toml`
/// configures it (`delay_node_timer_latency = "<n>us"` in `[base]`), ns: read from the study
/// file so that the study, the fidelity rows and the tests share one value.
pub fn pam_study_delay_node_latency_ns() -> u64 {
    let study = include_str!("../../../../python/l4slab/studies/pam2025/study.toml");
    let line = study
        .lines()
        .find(|l| l.trim_start().starts_with("delay_node_timer_latency"))
        .expect("pam2025 study.toml sets delay_node_timer_latency");
    let value = line.split('"').nth(1).expect("a quoted duration");
    let us: u64 = value.strip_suffix("us").expect("in us").parse().expect("an integer");
    us * 1_000
}

/// A dumbbell scenario in engine JSON.
pub fn scenario(rate_mbit: u64, qdisc: Value, flows: Vec<Value>, duration_s: u64) -> Value {
    json!({
        "seed": 1,
        "duration_ns": duration_s * SEC,
        "bottleneck": {"rate_bps": rate_mbit * MBIT, "qdisc": qdisc},
        "flows": flows,
    })
}

pub fn bfifo(limit_bytes: u64) -> Value {
    json!({"kind": "bfifo", "limit_bytes": limit_bytes})
}

/// Run a scenario; `l4slab_core::run` itself checks packet conservation, and we
/// re-check the reported counts here.
pub fn run(v: &Value) -> RunResults {
    let cfg: ScenarioConfig = serde_json::from_value(v.clone()).expect("valid engine config");
    let r = l4slab_core::run(&cfg).expect("run succeeds");
    let p = &r.packets;
    assert_eq!(p.sent, p.delivered + p.dropped + p.in_flight, "packet conservation");
    r
}

/// Arrival bursts at the bottleneck, as `crates/l4slab-emu/examples/bursts.py` measures
/// them for the engine and the emulator alike: per flow, runs of packets enqueued
/// (dequeue time − sojourn) less than one 1514-B serialisation time apart, from `from_s`
/// on. Returns the packet-weighted shares of packets in bursts of ≥ 3 and ≥ 6, and the
/// packet-weighted mean burst size.
pub fn arrival_bursts(r: &RunResults, rate_bps: f64, from_s: f64) -> (f64, f64, f64) {
    let t = r.sojourn_trace.as_ref().expect("trace_sojourn");
    let ser_s = 1514.0 * 8.0 / rate_bps;
    let mut flows: Vec<u32> = t.flow.clone();
    flows.sort_unstable();
    flows.dedup();
    let (mut n, mut n3, mut n6, mut sq) = (0usize, 0usize, 0usize, 0usize);
    for f in flows {
        let mut enq: Vec<f64> = (0..t.time_s.len())
            .filter(|&i| t.flow[i] == f)
            .map(|i| t.time_s[i] - t.sojourn_ms[i] / 1e3)
            .filter(|&e| e >= from_s)
            .collect();
        enq.sort_by(f64::total_cmp);
        let mut close = |run: usize| {
            n += run;
            sq += run * run;
            n3 += if run >= 3 { run } else { 0 };
            n6 += if run >= 6 { run } else { 0 };
        };
        let mut run = 1usize;
        for w in enq.windows(2) {
            if w[1] - w[0] < ser_s {
                run += 1;
            } else {
                close(run);
                run = 1;
            }
        }
        if !enq.is_empty() {
            close(run);
        }
    }
    let n = n.max(1) as f64;
    (n3 as f64 / n, n6 as f64 / n, sq as f64 / n)
}
