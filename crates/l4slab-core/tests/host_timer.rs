//! The VM hosts' timer latency: the router's (`bottleneck.timer_latency_ns`,
//! net/host_timer.rs): the HTB watchdog of `htb rate 100mbit` fires late by an
//! exponentially distributed time, and an enqueue in between serves the class at once
//! (`htb_dequeue` runs on every enqueue); and the delay node's
//! (`delay_node_timer_latency_ns`, net/delay_line.rs `NetemNode`), whose netem releases
//! the same way.
//! The PAM FIFO cells (fidelity cases pam-half-bdp-share, pam-1v2-fifo), where a
//! deterministic service grid phase-locks CUBIC's ACK-clocked arrivals (tests/host_ackbatch.rs).

use crate::common;
use common::*;
use serde_json::json;

/// PAM 2025 Prague vs non-ECN CUBIC, 100 Mbit/s, 10 ms, `bfifo limit` = `bdp`
/// × 125 000 B behind `htb rate 100mbit`, one segment per skb (`tso = false`), the L4S receiver on the
/// L4STeam kernel (as tests/host_ackbatch.rs and the `fidelity` study's PAM panels set
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
    let prague = pam_prague();
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
/// `cargo test -p l4slab-core --profile test-fast --test engine -- --ignored --nocapture host_timer::`
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

/// One UDP flow of 1472-B payloads at `rate_mbit` into `htb rate 100mbit` + a
/// 100 kB bfifo, the watchdog late by Exp(`latency_ns`); 5 s.
fn udp_through_htb(rate_mbit: u64, latency_ns: u64, seed: u64) -> l4slab_core::RunResults {
    let udp = json!({"kind": "udp", "rtt_ns": 10 * MS, "rate_bps": rate_mbit * MBIT, "payload_bytes": 1472});
    let mut s = scenario(100, bfifo(100_000), vec![udp], 5);
    s["seed"] = json!(seed);
    if latency_ns > 0 {
        s["bottleneck"]["timer_latency_ns"] = json!(latency_ns);
    }
    run(&s)
}

/// A class that never runs out of tokens never arms the watchdog: at 50 Mbit/s a
/// 1514-B frame (121 µs of tokens) comes every 242 µs, so the 1600-B bucket (128 µs)
/// always covers it and a late timer changes nothing, bit for bit.
#[test]
fn a_class_with_tokens_never_waits_for_the_late_timer() {
    let off = serde_json::to_string(&udp_through_htb(50, 0, 1)).unwrap();
    let on = serde_json::to_string(&udp_through_htb(50, 200_000, 1)).unwrap();
    assert_eq!(off, on);
}

/// Every enqueue runs `__qdisc_run` → `htb_dequeue`, whose `htb_do_events` re-activates
/// a class by the clock, so a watchdog firing late does not stall a class whose tokens
/// are back. At 150 Mbit/s into 100 Mbit/s a packet arrives every 80.7 µs, within the
/// 128 µs the bucket holds, so even a 500-µs mean lateness costs no capacity:
/// utilisation stays ≥ 99.5 % (with the timer alone deciding — a pending watchdog
/// blocking the class — each late firing would lose Exp(500 µs) minus one bucket:
/// utilisation near 2 frames per (121 + 500) µs, ≈ 40 %).
#[test]
fn enqueues_serve_the_class_while_its_watchdog_is_late() {
    let on_time = udp_through_htb(150, 0, 1);
    let late = udp_through_htb(150, 500_000, 1);
    let (u0, u1) = (on_time.bottleneck.utilisation, late.bottleneck.utilisation);
    eprintln!("utilisation on time {u0:.4}, watchdog late by Exp(500 us) {u1:.4}");
    assert!(u0 > 0.995 && u1 > 0.995, "utilisation {u0:.4} / {u1:.4}");
}

/// Every draw comes from the seed: the same seed repeats a run with late timers on
/// both hosts bit for bit; another seed differs; and the timers change the run (the
/// same seed with both off differs). The results' own `seed` field is left out of the
/// comparison, so only the timers' draws can make two runs differ.
#[test]
fn late_timers_are_drawn_from_the_seed() {
    let runs: Vec<String> = [(1u64, 10_000u64), (1, 10_000), (2, 10_000), (1, 0)]
        .iter()
        .map(|&(seed, latency_ns)| {
            let mut s = scenario(100, bfifo(62_500), vec![tcp("cubic", 10), tcp("cubic", 10)], 3);
            s["seed"] = json!(seed);
            s["start_jitter_ns"] = json!(0); // the seed then acts only through the timers
            s["bottleneck"]["timer_latency_ns"] = json!(latency_ns);
            s["delay_node_timer_latency_ns"] = json!(latency_ns);
            let mut results = serde_json::to_value(run(&s)).unwrap();
            results.as_object_mut().unwrap().remove("seed").expect("results carry the seed");
            results.to_string()
        })
        .collect();
    assert_eq!(runs[0], runs[1], "same seed, same run");
    assert_ne!(runs[0], runs[2], "another seed draws other latencies");
    assert_ne!(runs[0], runs[3], "late timers change the run");
}

/// The 0.5-BDP FIFO, pinned as a negative result: over the hrtimer latencies a KVM
/// guest's softirq path has (a few µs: KVM commits 3b8a5df6c4dc and ce7a058a2117
/// measure 3 200–9 600 cycles for a guest tsc-deadline timer; net/host_timer.rs), late
/// watchdogs on both VMs (router HTB and delay node) leave Prague's share in the
/// 0.5-BDP FIFO ≈ 10 Mbit/s below the published 40.4: at 2 µs where it is on time; at
/// 5 µs, the top of that range, it rises by ≈ 5 Mbit/s (3 seeds: 28.5 / 30.1 / 34.0
/// Mbit/s at 0 / 2 / 5 µs with the receivers' buffer autotuning) and stays more than 5
/// below. If this fails, host timing moves the FIFO cells and they must be re-judged
/// (docs/fidelity-pam-hosts.md, timer latency).
#[test]
fn guest_timer_latency_leaves_the_half_bdp_fifo_share_where_it_was() {
    let mean =
        |ns: u64| -> f64 { [1u64, 2, 3].iter().map(|&s| pam_fifo_hosts(0.5, 60, s, ns, ns, 0).0).sum::<f64>() / 3.0 };
    let (off, two, five) = (mean(0), mean(2_000), mean(5_000));
    eprintln!("FIFO 0.5 BDP, 3 seeds: Prague {off:.1} / {two:.1} / {five:.1} Mbit/s at 0 / 2 / 5 us");
    assert!((two - off).abs() < 3.0, "Prague {two:.1} at 2 us vs {off:.1} on time");
    for (m, v) in [(2, two), (5, five)] {
        assert!(v < 40.4 - 5.0, "Prague {v:.1} at {m} us now near the published 40.4");
    }
}

/// Prague vs non-ECN CUBIC in the PAM testbed's DualPI2 (`dualpi2 target 5ms variant
/// l4steam`), 30 s: Prague's mean sRTT, ms, with the delay node late by Exp(`node_ns`).
fn pam_dualpi2_prague_srtt(seed: u64, node_ns: u64) -> f64 {
    let mut cubic = tcp("cubic", 10);
    cubic["ecn"] = json!(0);
    cubic["receiver_ecn"] = json!(0);
    let mut prague = pam_prague();
    // The hosts' TCP keeps GSO and TSO deferral (pam2025 study.toml; docs/fidelity.md,
    // "GSO on the PAM hosts").
    for f in [&mut prague, &mut cubic] {
        f["tso"] = json!(true);
        f["tso_defer"] = json!(true);
    }
    let q = json!({"kind": "dualpi2", "limit_packets": 10000, "target_ns": 5 * MS, "variant": "l4steam"});
    let mut s = scenario(100, q, vec![prague, cubic], 30);
    s["seed"] = json!(seed);
    s["bottleneck"]["burst_bytes"] = json!(1600);
    s["bottleneck"]["access_rate_bps"] = json!(10_000 * MBIT);
    s["delay_node_timer_latency_ns"] = json!(node_ns);
    run(&s).flows[0].mean_srtt_ms
}

/// The PAM study's delay-node lateness is the testbed's own RTT excess (docs/fidelity.md,
/// "The PAM testbed's path timing"): in DualPI2, where Prague's queue is held by the
/// coupled PI, every testbed trial has Prague's sRTT at 10.33–10.41 ms (median 10.345)
/// (`fatihsarpkaya/L4S-PAM2025`, `cubic_noecn_srtt_tx_L4S.json`, DualPI2 keys) against the
/// on-time engine's 10.22, an excess of 0.11–0.19 ms. The configured mean must add about
/// the low end of that (0.08–0.15 ms asserted; a packet crosses the delay node twice per
/// RTT, data and ACK, each leaving at the earlier of the late firing and the next enqueue
/// on its interface),
/// and, as a consequence rather than a target, it unlocks the 0.5-BDP FIFO's phase
/// (Prague 28–32 Mbit/s on time; the testbed's ten trials 32.3–45.9, mean 40.4).
#[test]
fn pam_delay_node_latency_is_the_testbeds_rtt_excess_and_unlocks_the_fifo_phase() {
    let node = pam_study_delay_node_latency_ns();
    let excess: f64 =
        [1u64, 2].iter().map(|&s| pam_dualpi2_prague_srtt(s, node) - pam_dualpi2_prague_srtt(s, 0)).sum::<f64>() / 2.0;
    eprintln!("DualPI2: Prague's sRTT +{excess:.3} ms with the delay node late by Exp({} us)", node / 1_000);
    assert!((0.08..=0.15).contains(&excess), "sRTT excess {excess:.3} ms, testbed 0.11-0.19 ms");

    let share =
        |ns: u64| -> f64 { [1u64, 2, 3].iter().map(|&s| pam_fifo_hosts(0.5, 60, s, 0, ns, 0).0).sum::<f64>() / 3.0 };
    let (on_time, late) = (share(0), share(node));
    eprintln!("FIFO 0.5 BDP, 3 seeds: Prague {on_time:.1} Mbit/s on time, {late:.1} with the testbed's lateness");
    assert!(on_time < 34.0, "on time {on_time:.1}: the phase-locked share moved");
    assert!(late - on_time > 5.0, "late {late:.1} vs on time {on_time:.1}: the phase lock held");
    assert!((36.0..=45.0).contains(&late), "late {late:.1} outside the testbed's trial range 32.3-45.9 around 40.4");
}

/// Measurement (not an assertion): Prague's added sRTT in the PAM DualPI2 cell and its
/// 0.5-BDP FIFO share against the delay node's mean lateness. `L4SLAB_HT_MEANS_US`,
/// `L4SLAB_HT_SEEDS` override the grid.
/// `cargo test -p l4slab-core --profile test-fast --test engine host_timer::measure_node -- --ignored --nocapture`
#[test]
#[ignore]
fn measure_node_latency_rtt_excess_and_fifo_share() {
    let list = |k: &str, d: &str| -> Vec<u64> {
        std::env::var(k).unwrap_or(d.into()).split(',').map(|x| x.trim().parse().unwrap()).collect()
    };
    let seeds = list("L4SLAB_HT_SEEDS", "1,2");
    let base: Vec<f64> = seeds.iter().map(|&s| pam_dualpi2_prague_srtt(s, 0)).collect();
    for m in list("L4SLAB_HT_MEANS_US", "25,50,75,100,125,150") {
        let ex = seeds.iter().zip(&base).map(|(&s, b)| pam_dualpi2_prague_srtt(s, m * 1_000) - b).sum::<f64>()
            / seeds.len() as f64;
        let fifo =
            seeds.iter().map(|&s| pam_fifo_hosts(0.5, 60, s, 0, m * 1_000, 0).0).sum::<f64>() / seeds.len() as f64;
        eprintln!("node Exp({m} us): DualPI2 sRTT +{ex:.3} ms; FIFO 0.5 BDP Prague {fifo:.1} Mbit/s");
    }
}
