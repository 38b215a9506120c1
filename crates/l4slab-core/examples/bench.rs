//! Engine throughput on four fixed scenarios: bottleneck packets per wall-clock
//! second, events per bottleneck packet and wall time per event.
//!
//! `cargo run --release -p l4slab-core --example bench [reference|10g|512|l4s|FILE.json]`
//! (no argument: all four; a `.json` file is an engine config as
//! `l4slab.scenario.load_scenario(path).resolve()` gives it, e.g. the web scenario). One run each. Rates are per second of this thread's
//! CPU time (`/proc/thread-self/schedstat`), which a shared machine disturbs less
//! than wall time; wall time is printed too.

use serde_json::json;
use sha2::{Digest, Sha256};

fn cubic_flows(n: usize, rtt_ns: u64) -> Vec<serde_json::Value> {
    (0..n).map(|_| json!({"kind": "tcp", "cc": "cubic", "rtt_ns": rtt_ns})).collect()
}

fn scenario(name: &str) -> serde_json::Value {
    match name {
        // python/l4slab/scenarios/reference.toml: 2 CUBIC, 100 Mbit/s, bfifo 250000, 10 ms, 60 s.
        "reference" => json!({
            "seed": 1, "duration_ns": 60_000_000_000u64, "bin_ns": 100_000_000, "start_jitter_ns": 1_000_000,
            "bottleneck": {"rate_bps": 100_000_000u64, "qdisc": {"kind": "bfifo", "limit_bytes": 250_000}},
            "flows": cubic_flows(2, 10_000_000),
        }),
        // 4 CUBIC at 10 Gbit/s, bfifo 2 BDP at 10 ms (25 MB), 5 s.
        "10g" => json!({
            "seed": 1, "duration_ns": 5_000_000_000u64, "bin_ns": 100_000_000, "start_jitter_ns": 1_000_000,
            "bottleneck": {"rate_bps": 10_000_000_000u64, "access_rate_bps": 40_000_000_000u64,
                           "qdisc": {"kind": "bfifo", "limit_bytes": 25_000_000}},
            "flows": cubic_flows(4, 10_000_000),
        }),
        // 512 CUBIC at 1 Gbit/s, 20 ms, bfifo 2 BDP (5 MB), 10 s.
        "512" => json!({
            "seed": 1, "duration_ns": 10_000_000_000u64, "bin_ns": 100_000_000, "start_jitter_ns": 1_000_000,
            "bottleneck": {"rate_bps": 1_000_000_000u64, "qdisc": {"kind": "bfifo", "limit_bytes": 5_000_000}},
            "flows": cubic_flows(512, 20_000_000),
        }),
        // examples/bench/prague-dualpi2.toml (the L4S path): the reference with one Prague
        // (AccECN, pacing, TSO deferral) and one CUBIC flow over DualPI2's defaults.
        "l4s" => json!({
            "seed": 1, "duration_ns": 60_000_000_000u64, "bin_ns": 100_000_000, "start_jitter_ns": 1_000_000,
            "bottleneck": {"rate_bps": 100_000_000u64, "qdisc": {"kind": "dualpi2"}},
            "flows": [
                {"kind": "tcp", "cc": "prague", "rtt_ns": 10_000_000, "tso": true, "tso_defer": true, "receiver_ecn": 3},
                {"kind": "tcp", "cc": "cubic", "rtt_ns": 10_000_000, "tso": true, "tso_defer": true},
            ],
        }),
        other => panic!("unknown bench scenario {other:?} (reference, 10g, 512, l4s)"),
    }
}

/// CPU time of the calling thread, ns (Linux); `None` elsewhere.
fn thread_cpu_ns() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    s.split_whitespace().next()?.parse().ok()
}

fn main() {
    let names: Vec<String> = match std::env::args().nth(1) {
        Some(n) => vec![n],
        None => ["reference", "10g", "512", "l4s"].iter().map(|s| s.to_string()).collect(),
    };
    for name in names {
        let value = if name.ends_with(".json") {
            let text = std::fs::read_to_string(&name).expect("read the bench config file");
            serde_json::from_str(&text).expect("bench config file is JSON")
        } else {
            scenario(&name)
        };
        let cfg: l4slab_core::ScenarioConfig = serde_json::from_value(value).expect("bench config");
        let cpu0 = thread_cpu_ns();
        let t = std::time::Instant::now();
        let r = l4slab_core::run(&cfg).expect("run");
        let wall = t.elapsed().as_secs_f64();
        let cpu = match (cpu0, thread_cpu_ns()) {
            (Some(a), Some(b)) => (b - a) as f64 / 1e9,
            _ => wall,
        };
        let pkts = r.bottleneck.qdisc.sent_packets as f64;
        // The corpus's canonical hash (sorted-key JSON without `events`): a speed
        // lever must leave it unchanged for scenarios outside the corpus too.
        let mut v = serde_json::to_value(&r).expect("results serialise");
        v.as_object_mut().expect("results are an object").remove("events");
        let digest = Sha256::digest(serde_json::to_vec(&v).expect("value serialises"));
        let hash: String = digest.iter().take(8).map(|b| format!("{b:02x}")).collect();
        let events = r.events as f64;
        println!(
            "{name:10} cpu {cpu:6.2} s (wall {wall:6.2} s)  bottleneck pkts {pkts:9.0}  {:6.3} Mpkt/s  events/pkt {:4.2}  ns/event {:6.1}  util {:.3}  results {hash}",
            pkts / cpu / 1e6,
            events / pkts,
            cpu * 1e9 / events,
            r.bottleneck.utilisation
        );
    }
}
