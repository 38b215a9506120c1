//! No Prague flow starves itself: alone or beside one CUBIC flow over DualPI2 at
//! 10–100 Mbit/s, every Prague version the engine has keeps at least a tenth of its fair
//! share over the run, for every seed of a set. A Prague that paced itself below
//! cwnd/SRTT would never fill its window, so under the `cwnd_limited` growth gate
//! (`tcp_prague.c:prague_update_cwnd`, `tcp_output.c:tcp_cwnd_validate`) it could never
//! grow back; Linux's Prague paces from the integer window (v0.6) or from the window with
//! a 100 kbit/s floor (v0.7), so it does not.

use crate::common;
use common::*;
use serde_json::{json, Value};

/// `prague-v06` (the v0.6 module defaults), `prague` (v0.7) or `prague` with the PAM 2025
/// testbed's module.
fn prague(version: &str) -> Value {
    let mut f = tcp(if version == "v06" { "prague-v06" } else { "prague" }, 10);
    f["receiver_ecn"] = json!(3);
    if version == "pam2025" {
        f["cc_params"] = json!({"version": version});
    }
    f
}

/// (rate in Mbit/s, seeds): many seeds where a cwnd of 2 is a large part of the share.
const GRID: [(u64, u64); 4] = [(10, 24), (20, 12), (50, 4), (100, 4)];

fn starved(version: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (rate, seeds) in GRID {
        for peer in [false, true] {
            for seed in 1..=seeds {
                let mut flows = vec![prague(version)];
                if peer {
                    flows.push(tcp("cubic", 10));
                }
                let fair = rate as f64 / flows.len() as f64;
                let mut s = scenario(rate, json!({"kind": "dualpi2"}), flows, 10);
                s["seed"] = json!(seed);
                let g = run(&s).flows[0].goodput_mbps;
                if g < 0.1 * fair {
                    out.push(format!("{version} {rate} Mbit/s cubic={peer} seed {seed}: {g:.3} Mbit/s"));
                }
            }
        }
    }
    out
}

#[test]
fn prague_v06_never_starves_itself() {
    // Seed 19 at 10 Mbit/s beside CUBIC locked v0.6 at cwnd 2 while its pacing rate,
    // taken from the fractional window, decayed to 0.013 Mbit/s.
    let s = starved("v06");
    assert!(s.is_empty(), "{s:#?}");
}

#[test]
fn prague_v07_never_starves_itself() {
    let s = starved("v07");
    assert!(s.is_empty(), "{s:#?}");
}

#[test]
fn prague_pam2025_never_starves_itself() {
    let s = starved("pam2025");
    assert!(s.is_empty(), "{s:#?}");
}
