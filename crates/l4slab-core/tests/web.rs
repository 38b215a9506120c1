//! Web traffic (DualQ paper Appendix C) and the SYN flood (S2 §5.3): numbers from
//! theory and hand calculation, not from earlier runs.

use l4slab_core::results::RequestRecord;
use l4slab_core::{run, RunResults, ScenarioConfig};
use serde_json::{json, Value};

const MS: u64 = 1_000_000;
const S: u64 = 1_000_000_000;

fn scenario(rate_bps: u64, duration_ns: u64, flows: Value, sources: Value) -> ScenarioConfig {
    serde_json::from_value(json!({
        "seed": 11, "duration_ns": duration_ns,
        "bottleneck": {"rate_bps": rate_bps, "qdisc": {"kind": "pfifo", "limit_packets": 10000}},
        "flows": flows, "sources": sources,
    }))
    .unwrap()
}

fn web(rate: f64, cc: &str, min: u64, max: u64, extra: Value) -> Value {
    let mut v = json!({"kind": "web", "rate_per_s": rate, "cc": cc, "rtt_ns": 20 * MS,
                       "sizes": {"alpha": 0.9, "min_bytes": min, "max_bytes": max}});
    v.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
    v
}

fn requests(r: &RunResults) -> &[RequestRecord] {
    &r.requests
}

#[test]
fn a_one_packet_response_on_an_idle_path_takes_two_rtts() {
    // 1 kB responses, 2 requests/s on 100 Mbit/s: the path is idle for each one.
    // SYN (0.5 RTT) + SYN-ACK (0.5 RTT) + request (0.5 RTT) + response (0.5 RTT),
    // plus about 0.2 ms of serialisation: 40.0–40.5 ms at a 20 ms RTT.
    let cfg = scenario(100_000_000, 10 * S, json!([]), json!([web(2.0, "cubic", 1000, 1000, json!({}))]));
    let r = run(&cfg).unwrap();
    let req = requests(&r);
    assert!(req.len() >= 8, "{} requests", req.len());
    for q in req.iter().filter(|q| q.start_s < 9.0) {
        let fct = q.fct_s.expect("completed");
        assert!((0.040..0.0405).contains(&fct), "request {} fct {fct}", q.id);
        assert_eq!((q.size_bytes, q.bytes_received, q.syn_retransmits), (1000, 1000, 0));
        // Ideal = 1 RTT + 1 kB at 100 Mbit/s = 20.08 ms: a request/response needs 2 RTTs.
        assert!((q.ideal_fct_s - 0.02008).abs() < 1e-9);
        assert!((q.efficiency - 0.02008 / fct).abs() < 1e-12 && q.efficiency < 0.51);
    }
}

#[test]
fn a_lost_handshake_packet_costs_the_one_second_syn_timeout() {
    let cfg = scenario(
        100_000_000,
        10 * S,
        json!([]),
        json!([web(2.0, "cubic", 1000, 1000, json!({"drop_handshake_of": [0, 3]}))]),
    );
    let r = run(&cfg).unwrap();
    let req = requests(&r);
    for q in req.iter().filter(|q| q.start_s < 8.0) {
        let fct = q.fct_s.expect("completed");
        if q.id == 0 || q.id == 3 {
            // TCP_TIMEOUT_INIT = 1 s (RFC 6298 §2.1) on top of the 2 RTTs.
            assert_eq!(q.syn_retransmits, 1);
            assert!((1.040..1.0405).contains(&fct), "request {} fct {fct}", q.id);
        } else {
            assert_eq!(q.syn_retransmits, 0);
            assert!(fct < 0.0405, "request {} fct {fct}", q.id);
        }
    }
}

#[test]
fn a_lone_megabyte_response_takes_handshake_plus_slow_start_by_hand() {
    // Reno (no HyStart), 1 Gbit/s, 20 ms: the BDP (1650 segments) exceeds what slow
    // start reaches, so the response is rounds of 10·2^k segments, one RTT each.
    // 1 MB = 691 segments of 1448 B: rounds 10+20+40+80+160+320 = 630, then 61.
    // Data starts 1.5 RTT after the SYN (30 ms); the 7th round starts 6 RTT later
    // (150 ms) and arrives 10 ms + 61·1514·8 bit / 1 Gbit/s (0.74 ms) later.
    let by_hand = 0.030 + 6.0 * 0.020 + 0.010 + 61.0 * 1514.0 * 8.0 / 1e9;
    let cfg = scenario(1_000_000_000, 20 * S, json!([]), json!([web(0.5, "reno", 1_000_000, 1_000_000, json!({}))]));
    let r = run(&cfg).unwrap();
    let req = requests(&r);
    // The lone ones: no other request within 0.5 s either side.
    let lone: Vec<&RequestRecord> = req
        .iter()
        .filter(|q| q.start_s < 19.0 && req.iter().all(|o| o.id == q.id || (o.start_s - q.start_s).abs() > 0.5))
        .collect();
    assert!(lone.len() >= 3, "{} lone requests", lone.len());
    for q in lone {
        let fct = q.fct_s.expect("completed");
        assert!((fct - by_hand).abs() / by_hand < 0.10, "fct {fct} vs by hand {by_hand}");
        assert_eq!(q.retransmits, 0);
        assert!(q.efficiency <= 1.0);
    }
}

#[test]
fn arrivals_are_poisson_and_runs_are_deterministic() {
    // 50 requests/s for 20 s: N ~ Poisson(1000), σ ≈ 31.6.
    let src = json!([web(50.0, "cubic", 1000, 1_000_000, json!({}))]);
    let cfg = scenario(100_000_000, 20 * S, json!([]), src.clone());
    let r = run(&cfg).unwrap();
    let n = r.requests.len() as f64;
    assert!((n - 1000.0).abs() < 3.0 * 1000f64.sqrt(), "{n} arrivals");
    let starts: Vec<f64> = r.requests.iter().map(|q| q.start_s).collect();
    assert!(starts.windows(2).all(|w| w[0] < w[1]), "records in arrival order");
    // Every completed request: efficiency in (0, 1]; most complete within the run.
    let done: Vec<&RequestRecord> = r.requests.iter().filter(|q| q.fct_s.is_some()).collect();
    assert!(done.iter().all(|q| q.efficiency > 0.0 && q.efficiency <= 1.0));
    assert!(done.len() as f64 > 0.97 * n, "{} of {n} completed", done.len());
    assert!(done.iter().all(|q| q.bytes_received == q.size_bytes));
    // Slots are reused: far fewer slots than requests; every slot's series spans the run.
    assert!(r.flows.len() < 400, "{} slots for {n} requests", r.flows.len());
    for s in &r.flow_series {
        assert_eq!(
            (s.goodput_mbps.len(), s.cwnd.len(), s.drops.len()),
            (r.time_s.len(), r.time_s.len(), r.time_s.len())
        );
    }
    // Same seed, same records; another seed, other arrivals.
    let again = run(&cfg).unwrap();
    let text = |r: &RunResults| serde_json::to_string(&r.requests).unwrap();
    assert_eq!(text(&r), text(&again));
    let mut other = cfg.clone();
    other.seed = 12;
    assert_ne!(run(&other).unwrap().requests[0].start_s, r.requests[0].start_s);
}

#[test]
fn prague_web_flows_negotiate_accecn_and_send_ect_handshakes_into_the_l_queue() {
    // DualPI2 with a saturating CUBIC flow: Prague's handshake packets are ECT(1)
    // (tcp_ecn_send_synack: the CC needs ECN), go to the L queue and are marked,
    // never dropped; CUBIC's are Not-ECT in the C queue.
    let mut cfg: ScenarioConfig = serde_json::from_value(json!({
        "seed": 5, "duration_ns": 20 * S,
        "bottleneck": {"rate_bps": 40_000_000, "qdisc": {"kind": "dualpi2"}},
        "flows": [{"kind": "tcp", "cc": "cubic", "rtt_ns": 20 * MS, "ecn": 1, "receiver_ecn": 1}],
        // Both hosts run AccECN (net.ipv4.tcp_ecn = 3), as on the L4S testbeds.
        "sources": [web(20.0, "prague", 1000, 100_000, json!({"ecn": 3, "receiver_ecn": 3}))],
    }))
    .unwrap();
    let r = run(&cfg).unwrap();
    assert!(r.requests.len() > 300);
    for q in r.requests.iter().filter(|q| q.fct_s.is_some()) {
        assert!(q.ecn_mode == "accecn" && q.syn_retransmits == 0, "{q:?}");
    }
    let short: Vec<f64> = r.requests.iter().filter_map(|q| q.fct_s).collect();
    assert!(short.iter().all(|&f| f < 1.0), "no Prague request waits for a SYN timeout");
    // The same load as CUBIC (no ECN) must survive too; records carry the CC.
    cfg.sources = serde_json::from_value(json!([web(20.0, "cubic", 1000, 100_000, json!({}))])).unwrap();
    let c = run(&cfg).unwrap();
    assert!(c.requests.iter().all(|q| q.cc == "cubic" && q.ecn_mode == "off"));
}

#[test]
fn a_syn_flood_sends_at_its_frame_rate_and_codepoint() {
    // 5 Mbit/s of 54-B SYNs on an otherwise idle 10 Mbit/s link: all delivered,
    // 5 Mbit/s of bottleneck throughput, 11 574 SYNs per second.
    let cfg = scenario(
        10_000_000,
        4 * S,
        json!([]),
        json!([{"kind": "syn_flood", "rtt_ns": 10 * MS, "rate_bps": 5_000_000, "ecn": "ect1"}]),
    );
    let r = run(&cfg).unwrap();
    let f = &r.flows[0];
    assert_eq!(f.kind, "synflood");
    assert!((f.throughput_mbps - 5.0).abs() < 0.01, "{}", f.throughput_mbps);
    assert_eq!(f.packets_sent, 4 * 5_000_000 / 432 + 1);
    assert_eq!(r.bottleneck.drops, 0);
}

#[test]
fn bad_source_fields_name_the_field_value_and_range() {
    let bad = |src: Value| {
        let cfg = scenario(10_000_000, S, json!([]), json!([src]));
        run(&cfg).unwrap_err()
    };
    let e = bad(web(0.0, "cubic", 1000, 1000, json!({})));
    assert!(e.starts_with("sources[0].rate_per_s: 0 is out of range"), "{e}");
    let e = bad(web(1.0, "cubic", 2000, 1000, json!({})));
    assert!(e.starts_with("sources[0].sizes: 2000..1000 bytes is not a range"), "{e}");
    let e = bad(web(1.0, "cubic", 1000, 1000, json!({"bytes": 5})));
    assert!(e.starts_with("sources[0].bytes: not allowed"), "{e}");
    let e = bad(web(1.0, "bbr9", 1000, 1000, json!({})));
    assert!(e.starts_with("sources[0].cc: \"bbr9\" is not allowed"), "{e}");
    let e = bad(json!({"kind": "syn_flood", "rtt_ns": MS, "rate_bps": 1000, "syn_bytes": 10}));
    assert!(e.starts_with("sources[0].syn_bytes: 10 is out of range"), "{e}");
    // An unknown key is refused by the schema.
    let v = json!({"seed": 1, "duration_ns": S,
        "bottleneck": {"rate_bps": 1000, "qdisc": {"kind": "pfifo"}},
        "sources": [web(1.0, "cubic", 1000, 1000, json!({"ratee": 1}))]});
    let e = serde_json::from_value::<ScenarioConfig>(v).unwrap_err().to_string();
    assert!(e.contains("ratee"), "{e}");
}
