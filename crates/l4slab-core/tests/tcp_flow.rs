//! The TCP flow as one unit: a scenario's flow and a web source's connection are checked
//! by one validator (`TcpFlowConfig::validate`) and built by one builder
//! (`traffic::tcp::build`), so every knob, `receiver_cc_params` included, means the same
//! and is refused in the same words in both.

use l4slab_core::{run, RunResults, ScenarioConfig};
use serde_json::{json, Value};

const MS: u64 = 1_000_000;
const S: u64 = 1_000_000_000;

fn config(qdisc: Value, flows: Value, sources: Value, secs: u64) -> ScenarioConfig {
    serde_json::from_value(json!({
        "seed": 3, "duration_ns": secs * S,
        "bottleneck": {"rate_bps": 100_000_000u64, "qdisc": qdisc},
        "flows": flows, "sources": sources,
    }))
    .unwrap()
}

fn with(mut v: Value, extra: &Value) -> Value {
    v.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
    v
}

fn flow(extra: &Value) -> Value {
    with(json!({"kind": "tcp", "cc": "cubic", "rtt_ns": 20 * MS}), extra)
}

fn web(extra: &Value) -> Value {
    with(
        json!({"kind": "web", "rate_per_s": 20.0, "cc": "cubic", "rtt_ns": 20 * MS,
               "sizes": {"alpha": 0.9, "min_bytes": 10_000, "max_bytes": 1_000_000}}),
        extra,
    )
}

fn pfifo() -> Value {
    json!({"kind": "pfifo", "limit_packets": 1000})
}

/// The engine's message for `extra` on a flow and on a web source, without their paths.
fn both_errors(extra: Value) -> (String, String) {
    let on_flow = config(pfifo(), json!([flow(&extra)]), json!([]), 1).validate().unwrap_err();
    let on_web = config(pfifo(), json!([]), json!([web(&extra)]), 1).validate().unwrap_err();
    let strip = |e: &str, path: &str| e.strip_prefix(path).unwrap_or_else(|| panic!("{e:?} names {path}")).to_string();
    (strip(&on_flow, "flows[0]."), strip(&on_web, "sources[0]."))
}

#[test]
fn a_bad_receiver_cc_params_is_the_same_one_line_error_on_a_flow_and_a_web_source() {
    let cases = [
        (
            json!({"receiver_cc_params": {"no_such_knob": 1}}),
            "receiver_cc_params: no_such_knob: unknown cubic parameter (known: beta, ",
        ),
        (
            json!({"receiver_cc_params": {"beta": 5000}}),
            "receiver_cc_params: beta: 5000 is out of range (allowed 1..=1023)",
        ),
        (
            json!({"receiver_cc": "dctcp", "receiver_cc_params": {"shift_g": "four"}}),
            "receiver_cc_params: shift_g: invalid type",
        ),
        (json!({"cc_params": {"no_such_knob": 1}}), "cc_params: no_such_knob: unknown cubic parameter (known: beta, "),
        (json!({"receiver_cc": "bbr9"}), "receiver_cc: \"bbr9\" is not allowed (allowed reno, cubic"),
        (json!({"mss": 87}), "mss: 87 is out of range"),
    ];
    for (extra, want) in cases {
        let (on_flow, on_web) = both_errors(extra.clone());
        assert_eq!(on_flow, on_web, "{extra}");
        assert!(on_flow.starts_with(want), "{extra}: {on_flow}");
        assert!(!on_flow.contains('\n'), "{on_flow}");
    }
}

fn fcts(r: &RunResults) -> Vec<Option<f64>> {
    r.requests.iter().map(|q| q.fct_s).collect()
}

/// Web responses from BBRv2 senders with ECN (`ecn_enable`, as the PAM study's two-sided
/// mode), next to a bulk BBRv2 flow, through a FIFO that CE-marks above 1 ms of sojourn.
fn bbr2_web(receiver_cc_params: Option<Value>) -> RunResults {
    // A fixed window (no receive-buffer autotuning): with autotuning this scenario's
    // response times came out the same with and without the echo. The PAM testbed's 5.15
    // receivers: a 6.6 or later receiver ACKs each GSO skb's last (PSH) segment at once
    // (tcp_input.c:tcp_measure_rcv_mss), and here that made the response times the same
    // under both echo rules (0 of 93 differ; 23 with the 5.15 receivers).
    let bbr2 = json!({"cc": "bbr2", "ecn": 1, "cc_params": {"ecn_enable": true, "ecn_max_rtt_us": 0},
                      "receiver_cc": "bbr2", "rwnd_bytes": 1u64 << 30, "receiver_rcvbuf": "5.15"});
    let mut w = web(&bbr2);
    if let Some(p) = receiver_cc_params {
        w["receiver_cc_params"] = p;
    }
    let fifo_ce = json!({"kind": "fq", "orphan_mask": 0, "limit_packets": 667, "flow_limit_packets": 667,
                         "ce_threshold_ns": MS});
    let cfg = config(fifo_ce, json!([flow(&bbr2)]), json!([w]), 5);
    cfg.validate().unwrap();
    run(&cfg).unwrap()
}

#[test]
fn a_web_source_builds_its_receiver_with_its_receiver_cc_params() {
    let plain = bbr2_web(None);
    assert!(plain.requests.len() >= 80, "{} requests in 5 s at 20/s", plain.requests.len());
    assert!(plain.requests.iter().map(|q| q.ce_packets).sum::<u64>() > 0, "the responses see CE marks");
    // The receiver's module defaults given explicitly: the same receiver, the same run.
    let defaults = bbr2_web(Some(json!({"ecn_enable": false})));
    assert_eq!(fcts(&plain), fcts(&defaults));
    // A receiving socket with ecn_enable echoes CE DCTCP-style (google/bbr v2alpha
    // tcp_bbr2.c:bbr_cwnd_event), where the default latches ECE until CWR (RFC 3168
    // §6.1.3): the senders see other congestion signals, and the responses end otherwise.
    let echo = bbr2_web(Some(json!({"ecn_enable": true, "ecn_max_rtt_us": 0})));
    assert_ne!(fcts(&plain), fcts(&echo), "receiver_cc_params changed nothing on a web source");
}
