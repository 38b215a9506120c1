//! The benchmark's named scenarios as engine configs (`bench CASE`), shared with the
//! profile-guided build's training runner (`crates/l4slab-py/examples/pgo_train.rs`, which
//! includes this file by path).

use serde_json::json;

fn cubic_flows(n: usize, rtt_ns: u64) -> Vec<serde_json::Value> {
    (0..n).map(|_| json!({"kind": "tcp", "cc": "cubic", "rtt_ns": rtt_ns})).collect()
}

/// A case's config: seed 1, 100-ms bins, starts spread over 1 ms.
fn case(duration_ns: u64, bottleneck: serde_json::Value, flows: serde_json::Value) -> serde_json::Value {
    json!({"seed": 1, "duration_ns": duration_ns, "bin_ns": 100_000_000, "start_jitter_ns": 1_000_000,
           "bottleneck": bottleneck, "flows": flows})
}

pub fn scenario(name: &str) -> serde_json::Value {
    match name {
        // python/l4slab/scenarios/reference.toml: 2 CUBIC, 100 Mbit/s, bfifo 250000, 10 ms, 60 s.
        "reference" => case(
            60_000_000_000,
            json!({"rate_bps": 100_000_000u64, "qdisc": {"kind": "bfifo", "limit_bytes": 250_000}}),
            json!(cubic_flows(2, 10_000_000)),
        ),
        // 4 CUBIC at 10 Gbit/s, bfifo 2 BDP at 10 ms (25 MB), 5 s.
        "10g" => case(
            5_000_000_000,
            json!({"rate_bps": 10_000_000_000u64, "access_rate_bps": 40_000_000_000u64,
                   "qdisc": {"kind": "bfifo", "limit_bytes": 25_000_000}}),
            json!(cubic_flows(4, 10_000_000)),
        ),
        // 512 CUBIC at 1 Gbit/s, 20 ms, bfifo 2 BDP (5 MB), 10 s.
        "512" => case(
            10_000_000_000,
            json!({"rate_bps": 1_000_000_000u64, "qdisc": {"kind": "bfifo", "limit_bytes": 5_000_000}}),
            json!(cubic_flows(512, 20_000_000)),
        ),
        // examples/bench/prague-dualpi2.toml (the L4S path): the reference with one Prague
        // (AccECN, pacing, TSO deferral) and one CUBIC flow over DualPI2's defaults.
        "l4s" => case(
            60_000_000_000,
            json!({"rate_bps": 100_000_000u64, "qdisc": {"kind": "dualpi2"}}),
            json!([
                {"kind": "tcp", "cc": "prague", "rtt_ns": 10_000_000, "tso": true, "tso_defer": true, "receiver_ecn": 3},
                {"kind": "tcp", "cc": "cubic", "rtt_ns": 10_000_000, "tso": true, "tso_defer": true},
            ]),
        ),
        // One run of the `pam2025` study as its plan makes it (the plan's run 999): Prague
        // (the study's build) against BBRv1 over PIE at 8 BDP, both through the delay node's
        // netem (its watchdog's lateness drawn per arming), the testbed's hosts.
        "pam" => {
            let host = json!({"kind": "tcp", "rtt_ns": 10_000_000, "start_ns": 0, "tso": true, "tso_defer": true,
                              "tso_defer_ack": "half_srtt", "receiver_rcvbuf": "5.15", "receiver_sack_compression": "kernel"});
            let mut prague = host.clone();
            let mut bbr = host;
            prague.as_object_mut().unwrap().extend([
                ("cc".into(), json!("prague")),
                ("cc_params".into(), json!({"version": "pam2025"})),
                ("receiver_kernel".into(), json!("l4steam")),
                ("receiver_ecn".into(), json!(3)),
            ]);
            bbr.as_object_mut().unwrap().extend([("cc".into(), json!("bbr")), ("ecn".into(), json!(0))]);
            json!({
                "seed": 5_665_354_573_148_546_571u64, "duration_ns": 60_000_000_000u64, "bin_ns": 100_000_000,
                "start_jitter_ns": 1_000_000, "delay_node_timer_latency_ns": 75_000,
                "bottleneck": {"rate_bps": 100_000_000u64, "burst_bytes": 1600, "access_rate_bps": 10_000_000_000u64,
                               "qdisc": {"kind": "pie", "limit_packets": 667, "target_ns": 5_000_000,
                                         "tupdate_ns": 15_000_000, "alpha": 2, "beta": 20, "ecn": false,
                                         "bytemode": false, "dq_rate_estimator": false}},
                "flows": [prague, bbr],
            })
        }
        other => panic!("unknown bench scenario {other:?} (reference, 10g, 512, l4s, pam, FILE.json, DIR)"),
    }
}

/// The configs that `bench` and `pgo_train` run, in order: each argument a case name, an
/// engine config file (`.json`) or a directory (its `.json` files, by name); none, the four
/// cases the benchmark reports.
pub fn configs(args: Vec<String>) -> Vec<(String, serde_json::Value)> {
    let args = if args.is_empty() { ["reference", "10g", "512", "l4s"].map(String::from).to_vec() } else { args };
    let mut out = Vec::new();
    for arg in args {
        let path = std::path::Path::new(&arg);
        let mut files: Vec<std::path::PathBuf> = if path.is_dir() {
            std::fs::read_dir(path)
                .expect("read the config directory")
                .map(|e| e.expect("directory entry").path())
                .filter(|p| p.extension().is_some_and(|x| x == "json"))
                .collect()
        } else if arg.ends_with(".json") {
            vec![path.to_path_buf()]
        } else {
            out.push((arg.clone(), scenario(&arg)));
            continue;
        };
        files.sort();
        for file in files {
            let text = std::fs::read_to_string(&file).expect("read the config file");
            let value = serde_json::from_str(&text).expect("the config file is JSON");
            out.push((file.to_string_lossy().into_owned(), value));
        }
    }
    out
}
