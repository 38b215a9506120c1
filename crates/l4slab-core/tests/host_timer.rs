//! The router host's timer latency (`bottleneck.timer_latency_ns`, net/host_timer.rs):
//! the HTB watchdog of `htb rate 100mbit` fires late by an exponentially distributed
//! time, and an enqueue in between serves the class at once (Linux ≥ 4.6).
//! Issue 11 rows 7 and 12: the PAM FIFO cells, where a deterministic service grid
//! phase-locks CUBIC's ACK-clocked arrivals (tests/host_ackbatch.rs).

mod common;
use common::*;
use serde_json::json;

/// PAM 2025 Prague vs non-ECN CUBIC, 100 Mbit/s, 10 ms, `bfifo limit` = `bdp`
/// × 125 000 B behind `htb rate 100mbit`, GSO/TSO off, the L4S receiver on the
/// L4STeam kernel (as tests/host_ackbatch.rs and python/l4slab/fidelity.py build
/// it); CUBIC's base RTT lengthened by `cubic_rtt_extra_ns`; the router's watchdog
/// late by Exp(`latency_ns`). Prague's and CUBIC's goodput, Mbit/s.
fn pam_fifo(bdp: f64, secs: u64, seed: u64, latency_ns: u64, cubic_rtt_extra_ns: u64) -> (f64, f64) {
    pam_fifo_hosts(bdp, secs, seed, latency_ns, 0, cubic_rtt_extra_ns)
}

/// As [`pam_fifo`], with the delay node's release late by Exp(`node_ns`) too.
fn pam_fifo_hosts(
    bdp: f64,
    secs: u64,
    seed: u64,
    latency_ns: u64,
    node_ns: u64,
    cubic_rtt_extra_ns: u64,
) -> (f64, f64) {
    let mut prague = tcp("prague", 10);
    prague["tso"] = json!(false);
    prague["cc_params"] = json!({"growth_gate": "app_limited"});
    prague["receiver_kernel"] = json!("l4steam");
    prague["receiver_ecn"] = json!(3);
    let mut cubic = tcp("cubic", 10);
    cubic["rtt_ns"] = json!(10 * MS + cubic_rtt_extra_ns);
    cubic["tso"] = json!(false);
    cubic["ecn"] = json!(0);
    cubic["receiver_ecn"] = json!(0);
    let mut s = scenario(100, bfifo((bdp * 125_000.0) as u64), vec![prague, cubic], secs);
    s["seed"] = json!(seed);
    s["bottleneck"]["burst_bytes"] = json!(1600);
    s["bottleneck"]["access_rate_bps"] = json!(10_000 * MBIT);
    s["bottleneck"]["timer_latency_ns"] = json!(latency_ns);
    s["delay_node_timer_latency_ns"] = json!(node_ns);
    let r = run(&s);
    (r.flows[0].goodput_mbps, r.flows[1].goodput_mbps)
}

/// Measurement (not an assertion): Prague's goodput in the PAM FIFO cells against the
/// mean watchdog lateness, several seeds. `L4SLAB_HT_BDPS`, `L4SLAB_HT_MEANS_US`,
/// `L4SLAB_HT_SEEDS`, `L4SLAB_HT_SECS` override the grid.
/// `cargo test -p l4slab-core --release --test host_timer -- --ignored --nocapture`
#[test]
#[ignore]
fn measure_fifo_share_vs_timer_latency() {
    let list = |k: &str, d: &str| -> Vec<f64> {
        std::env::var(k).unwrap_or(d.into()).split(',').map(|x| x.trim().parse().unwrap()).collect()
    };
    let bdps = list("L4SLAB_HT_BDPS", "0.5");
    let means = list("L4SLAB_HT_MEANS_US", "0,2,5,10,20,50");
    let seeds = list("L4SLAB_HT_SEEDS", "1,2,3");
    let secs = list("L4SLAB_HT_SECS", "60")[0] as u64;
    // Which hosts' timers are late: "htb", "node" or "both" (`L4SLAB_HT_WHERE`).
    let at = std::env::var("L4SLAB_HT_WHERE").unwrap_or("both".into());
    for &b in &bdps {
        for &m in &means {
            let ns = (m * 1000.0) as u64;
            let (h, n) = match at.as_str() {
                "htb" => (ns, 0),
                "node" => (0, ns),
                _ => (ns, ns),
            };
            let v: Vec<f64> = seeds.iter().map(|&s| pam_fifo_hosts(b, secs, s as u64, h, n, 0).0).collect();
            let mean = v.iter().sum::<f64>() / v.len() as f64;
            let txt: Vec<String> = v.iter().map(|x| format!("{x:.1}")).collect();
            eprintln!("{at}: bdp {b} mean_latency {m} us: Prague {} (mean {mean:.1}) Mbit/s", txt.join(" / "));
        }
    }
}

/// Measurement: Prague's goodput at 0.5 BDP against CUBIC's base-RTT offset
/// (k · 15.14 µs, k = 0…7: one frame time in 8 steps), with the watchdog on time and
/// late by Exp(`L4SLAB_HT_MEANS_US`), seed 1, 60 s.
#[test]
#[ignore]
fn measure_phase_sensitivity_vs_timer_latency() {
    let means: Vec<f64> = std::env::var("L4SLAB_HT_MEANS_US")
        .unwrap_or("0,10".into())
        .split(',')
        .map(|x| x.trim().parse().unwrap())
        .collect();
    for &m in &means {
        let v: Vec<String> =
            (0..8u64).map(|k| format!("{:.1}", pam_fifo(0.5, 60, 1, (m * 1000.0) as u64, k * 15_140).0)).collect();
        eprintln!("mean_latency {m} us: Prague at CUBIC RTT +0..+106 us: {}", v.join(" / "));
    }
}
