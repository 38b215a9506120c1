//! Property tests: invariants over randomly drawn scenarios.

use crate::common;
use common::*;
use proptest::prelude::*;
use serde_json::json;

fn arb_scenario() -> impl Strategy<Value = serde_json::Value> {
    (
        prop::sample::select(vec![10u64, 50, 100]),
        1u64..40,
        prop::sample::select(vec![0.25f64, 0.5, 1.0, 2.0, 4.0]),
        prop::collection::vec((prop::sample::select(vec!["reno", "cubic"]), 2u64..60), 1..4),
        prop::collection::vec(0u64..3000, 0..6),
        any::<u64>(),
        any::<bool>(),
    )
        .prop_map(|(rate, rtt_ms, bdp, flows, drops, seed, udp)| {
            let limit = ((rate * MBIT) as f64 * (rtt_ms * MS) as f64 / 8e9 * bdp).max(3000.0) as u64;
            let mut fl: Vec<serde_json::Value> = flows
                .iter()
                .enumerate()
                .map(|(i, (cc, rtt))| {
                    let mut f = tcp(cc, *rtt);
                    if i == 0 {
                        f["drop_segments"] = json!(drops.clone());
                    }
                    f
                })
                .collect();
            if udp {
                fl.push(
                    json!({"kind": "udp", "rtt_ns": rtt_ms * MS, "rate_bps": rate * MBIT / 3, "payload_bytes": 1000}),
                );
            }
            let q = if seed % 2 == 0 {
                bfifo(limit)
            } else {
                json!({"kind": "pfifo", "limit_packets": (limit / 1514).max(2)})
            };
            // 10 s: room for the SYN's exponential backoff (1 s, 2 s, 4 s; Linux
            // tcp_timer.c:tcp_retransmit_timer) when a tiny queue drops it repeatedly.
            let mut s = scenario(rate, q, fl, 10);
            s["seed"] = json!(seed);
            s
        })
}

proptest! {
    // A fixed seed: the suite is deterministic like the engine (a failing case
    // reproduces on every machine).
    #![proptest_config(ProptestConfig {
        cases: 24,
        rng_seed: proptest::test_runner::RngSeed::Fixed(0x4c34_5361),
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    /// Every packet is delivered, dropped or still in flight; the TCP stack never
    /// stalls for good; a run is a pure function of its scenario.
    #[test]
    fn conservation_progress_and_determinism(s in arb_scenario()) {
        let a = run(&s);
        for f in a.flows.iter().filter(|f| f.kind == "tcp") {
            prop_assert!(f.bytes_delivered > 0, "flow {} delivered nothing", f.id);
        }
        prop_assert!(a.bottleneck.utilisation <= 1.01);
        let b = run(&s);
        prop_assert_eq!(serde_json::to_string(&a).unwrap(), serde_json::to_string(&b).unwrap());
    }
}
