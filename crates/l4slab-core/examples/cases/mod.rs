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

/// The case's config, or `None` for a name that is none of them.
pub fn scenario(name: &str) -> Option<serde_json::Value> {
    Some(match name {
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
        _ => return None,
    })
}

/// The configs that `bench` and `pgo_train` run, in order: each argument a case name, an
/// engine config file (`.json`) or a directory (its `.json` files, by name); none, the four
/// cases the benchmark reports. A bad argument is one line: the argument and what is allowed.
pub fn configs(args: Vec<String>) -> Result<Vec<(String, serde_json::Value)>, String> {
    let args = if args.is_empty() { ["reference", "10g", "512", "l4s"].map(String::from).to_vec() } else { args };
    let mut out = Vec::new();
    for arg in args {
        let path = std::path::Path::new(&arg);
        let mut files: Vec<std::path::PathBuf> = if path.is_dir() {
            let entries = std::fs::read_dir(path).map_err(|e| format!("{arg}: cannot read the directory: {e}"))?;
            let mut files = Vec::new();
            for entry in entries {
                let file = entry.map_err(|e| format!("{arg}: cannot read the directory: {e}"))?.path();
                if file.extension().is_some_and(|x| x == "json") {
                    files.push(file);
                }
            }
            files
        } else if arg.ends_with(".json") {
            vec![path.to_path_buf()]
        } else {
            let value = scenario(&arg).ok_or_else(|| {
                format!(
                    "{arg}: not a case, a .json engine config or a directory (cases: reference, 10g, 512, l4s, pam)"
                )
            })?;
            out.push((arg.clone(), value));
            continue;
        };
        files.sort();
        for file in files {
            let name = file.to_string_lossy().into_owned();
            let text = std::fs::read_to_string(&file).map_err(|e| format!("{name}: cannot read: {e}"))?;
            let value = serde_json::from_str(&text).map_err(|e| format!("{name}: not JSON: {e}"))?;
            out.push((name, value));
        }
    }
    Ok(out)
}

/// `value` as an engine config, or one line naming the config and what serde found.
pub fn engine_config(name: &str, value: serde_json::Value) -> Result<l4slab_core::ScenarioConfig, String> {
    serde_json::from_value(value).map_err(|e| format!("{name}: not an engine config: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bad_argument_is_one_line_naming_it() {
        let dir = std::env::temp_dir().join(format!("l4slab-bench-cases-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let not_json = dir.join("broken.json");
        std::fs::write(&not_json, "{").unwrap();
        let foreign = dir.join("foreign.json");
        std::fs::write(&foreign, r#"{"a": 1}"#).unwrap();
        let unknown = configs(vec!["nope".into()]).unwrap_err();
        assert!(
            unknown.starts_with("nope: not a case") && unknown.contains("reference, 10g, 512, l4s, pam"),
            "{unknown}"
        );
        let missing = configs(vec![dir.join("missing.json").to_string_lossy().into_owned()]).unwrap_err();
        assert!(missing.contains("missing.json: cannot read"), "{missing}");
        let broken = configs(vec![not_json.to_string_lossy().into_owned()]).unwrap_err();
        assert!(broken.contains("broken.json: not JSON"), "{broken}");
        let (name, value) = configs(vec![foreign.to_string_lossy().into_owned()]).unwrap().remove(0);
        let error = engine_config(&name, value).err().unwrap();
        assert!(error.contains("foreign.json: not an engine config: unknown field `a`"), "{error}");
        for message in [unknown, missing, broken, error] {
            assert!(!message.contains('\n'), "{message}");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn every_case_is_an_engine_config_and_no_argument_is_the_four() {
        let four: Vec<String> = configs(vec![]).unwrap().into_iter().map(|(name, _)| name).collect();
        assert_eq!(four, ["reference", "10g", "512", "l4s"]);
        for name in ["reference", "10g", "512", "l4s", "pam"] {
            let cfg = engine_config(name, scenario(name).unwrap()).unwrap();
            assert!(cfg.duration_ns > 0, "{name}");
        }
    }
}
