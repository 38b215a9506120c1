//! Prague's share beside CUBIC in the PAM drop-tail cells (`l4slab fidelity` cases
//! pam-half-bdp-share and pam-1v2-fifo).
//! Measurements (ignored tests) of mechanisms checked against the PAM testbed's
//! configuration (notebook `single_flow_experiments.ipynb` of fatihsarpkaya/L4S-PAM2025).

use crate::common;
use common::*;
use serde_json::{json, Value};

fn env_list(name: &str, default: &str) -> Vec<f64> {
    std::env::var(name).unwrap_or(default.into()).split(',').map(|x| x.trim().parse().unwrap()).collect()
}

/// The PAM FIFO cell (as tests/host_timer.rs builds it, with the testbed's 5.15 receivers)
/// with JSON merged into each flow.
fn pam_fifo_cell(bdp: f64, secs: u64, seed: u64, prague_extra: &Value, cubic_extra: &Value) -> l4slab_core::RunResults {
    let mut prague = pam_prague();
    let mut cubic = tcp("cubic", 10);
    cubic["tso"] = json!(false);
    cubic["ecn"] = json!(0);
    cubic["receiver_ecn"] = json!(0);
    // The testbed's receivers autotune as 5.15 (its CUBIC hosts' 5.13.12 the same):
    // pam2025's study.toml.
    for f in [&mut prague, &mut cubic] {
        f["receiver_rcvbuf"] = json!("5.15");
    }
    for (f, extra) in [(&mut prague, prague_extra), (&mut cubic, cubic_extra)] {
        if let Some(m) = extra.as_object() {
            for (k, v) in m {
                f[k] = v.clone();
            }
        }
    }
    let mut s = scenario(100, bfifo((bdp * 125_000.0) as u64), vec![prague, cubic], secs);
    s["seed"] = json!(seed);
    s["bottleneck"]["burst_bytes"] = json!(1600);
    s["bottleneck"]["access_rate_bps"] = json!(10_000 * MBIT);
    run(&s)
}

/// `L4SLAB_FS_BDPS`, `L4SLAB_FS_SEEDS`, `L4SLAB_FS_SECS`, `L4SLAB_FS_PRAGUE` and
/// `L4SLAB_FS_CUBIC` (JSON objects merged into the flow entries).
/// `cargo test -p l4slab-core --profile test-fast --test engine fifo_share::measure -- --ignored --nocapture`
#[test]
#[ignore]
fn measure() {
    let bdps = env_list("L4SLAB_FS_BDPS", "0.5");
    let seeds = env_list("L4SLAB_FS_SEEDS", "1");
    let secs = env_list("L4SLAB_FS_SECS", "60")[0] as u64;
    let pe: Value = serde_json::from_str(&std::env::var("L4SLAB_FS_PRAGUE").unwrap_or("{}".into())).unwrap();
    let ce: Value = serde_json::from_str(&std::env::var("L4SLAB_FS_CUBIC").unwrap_or("{}".into())).unwrap();
    for &b in &bdps {
        for &sd in &seeds {
            let r = pam_fifo_cell(b, secs, sd as u64, &pe, &ce);
            let f = &r.flows;
            println!(
                "bdp {b} seed {sd}: prague {:.1} cubic {:.1} Mbit/s; drops prague {} / {} sent, cubic {} / {} sent",
                f[0].goodput_mbps, f[1].goodput_mbps, f[0].drops, f[0].packets_sent, f[1].drops, f[1].packets_sent
            );
            if std::env::var("L4SLAB_FS_CWND").is_ok() {
                for (i, name) in ["prague", "cubic"].iter().enumerate() {
                    let c = &r.flow_series[i].cwnd;
                    let g = &r.flow_series[i].goodput_mbps;
                    let n = c.len().min(40);
                    println!("    {name} cwnd/bin: {:?}", &c[..n].iter().map(|x| *x as u32).collect::<Vec<_>>());
                    println!("    {name} goodput/bin: {:?}", &g[..n].iter().map(|x| *x as u32).collect::<Vec<_>>());
                }
            }
            for (name, x) in [("prague", &f[0]), ("cubic", &f[1])] {
                println!(
                    "    {name}: start {:.4} s, recoveries {}, rto {}, tlp {}, retransmits {}, final cwnd {}",
                    x.start_s, x.recoveries, x.rto_count, x.tlp_count, x.retransmits, x.final_cwnd
                );
            }
        }
    }
}

/// The 4–8 BDP FIFO cells: over a 1-MB FIFO the 60-s shares are set at
/// start-up, not by a loss cycle. Prague (no HyStart in tcp_prague.c) slow-starts into the
/// buffer; CUBIC leaves slow start at HyStart's ACK-train / delay exit
/// (tcp_cubic.c:hystart_update) far below it and then grows by its Reno-friendly / cubic
/// rules, losing few packets. With HyStart off CUBIC overshoots too and the order flips.
/// (30 s, seed 1: Prague 58.2 / CUBIC 36.8 Mbit/s with HyStart, 31.2 / 64.1 without;
/// CUBIC drops 28 vs 629 packets.)
#[test]
fn pam_8bdp_fifo_share_is_set_by_cubics_slow_start_exit() {
    let on = pam_fifo_cell(8.0, 30, 1, &json!({}), &json!({}));
    let off = pam_fifo_cell(8.0, 30, 1, &json!({}), &json!({"cc_params": {"hystart": false}}));
    let (p_on, c_on) = (on.flows[0].goodput_mbps, on.flows[1].goodput_mbps);
    let (p_off, c_off) = (off.flows[0].goodput_mbps, off.flows[1].goodput_mbps);
    assert!(p_on > c_on + 15.0, "HyStart on: Prague {p_on:.1} vs CUBIC {c_on:.1}");
    assert!(c_off > p_off + 15.0, "HyStart off: Prague {p_off:.1} vs CUBIC {c_off:.1}");
    // With HyStart CUBIC's own losses are a few dozen packets in 30 s: no loss cycle.
    assert!(on.flows[1].drops < 100, "CUBIC drops {}", on.flows[1].drops);
    assert!(off.flows[1].drops > 300, "CUBIC drops without HyStart {}", off.flows[1].drops);
}
