//! TSO deferral (`tcp_output.c:tcp_tso_should_defer`) checked against a real kernel.
//!
//! An unpaced CUBIC sender with GSO (forced by Linux TCP since 4.17) holds a partial skb
//! while its window opens by less than a full `tcp_tso_autosize` skb and the next ACK is
//! due within srtt/2: at ≈ 50 Mbit/s it then sends ≈ 5 segments every third delayed ACK
//! instead of 2 per ACK. The bursts this leaves at the bottleneck (runs of one flow's
//! packets enqueued less than a 1514-B serialisation time apart, as
//! `crates/l4slab-emu/examples/bursts.py` counts them) are compared with the same scenarios
//! run by `l4slab emulate` through the kernel's own stack (Linux 6.18.44, `cubic`, iperf3
//! 3.12, 20 s, bursts from 2 s; docs/fidelity-pam-hosts.md, "TSO deferral against the real kernel"):
//!
//! | scenario | real kernel, packet-weighted mean burst | engine, deferral on | off |
//! |---|---|---|---|
//! | 2 CUBIC, DualPI2 (l4steam, target 5 ms), 100 Mbit/s, 10 ms | 4.43–4.50 (4 trials) | 4.50–4.58 | 2.02 |
//! | 1 CUBIC, bfifo 250 000 B, 100 Mbit/s, 10 ms | 9.04 (2 trials) | 8.95 | 2.01 |

use crate::common;
use common::*;
use serde_json::{json, Value};

fn cubic_gso(defer: bool) -> Value {
    let mut f = tcp("cubic", 10);
    f["tso"] = json!(true);
    f["tso_defer"] = json!(defer);
    f
}

/// Packet-weighted mean burst and share of packets in bursts ≥ 3, from 2 s on.
fn bursts(qdisc: Value, flows: usize, defer: bool) -> (f64, f64) {
    let mut s = scenario(100, qdisc, (0..flows).map(|_| cubic_gso(defer)).collect(), 20);
    s["trace_sojourn"] = json!(true);
    let r = run(&s);
    let (b3, _, mean) = arrival_bursts(&r, 100e6, 2.0);
    eprintln!("{flows} CUBIC, defer {defer}: mean burst {mean:.2}, ≥ 3: {b3:.3}");
    (mean, b3)
}

#[test]
fn cubic_deferral_bursts_are_the_real_kernels_in_dualpi2() {
    let dualpi2 = json!({"kind": "dualpi2", "target_ns": 5 * MS, "variant": "l4steam"});
    let (mean, b3) = bursts(dualpi2.clone(), 2, true);
    // Real kernel: mean 4.43–4.50, 85.6–86.0 % of packets in bursts ≥ 3.
    assert!((4.1..=4.9).contains(&mean), "mean burst {mean:.2} (real 4.43–4.50)");
    assert!(b3 >= 0.80, "share in bursts ≥ 3: {b3:.3} (real 0.856–0.860)");
    let (mean_off, _) = bursts(dualpi2, 2, false);
    assert!(mean_off < 2.5, "without deferral each delayed ACK releases 2 segments: {mean_off:.2}");
}

#[test]
fn cubic_deferral_bursts_are_the_real_kernels_alone_in_a_fifo() {
    let (mean, _) = bursts(bfifo(250_000), 1, true);
    // Real kernel: 9.04 (tcp_tso_autosize at 1.2 × ≈ 95 Mbit/s: 10 segments per skb).
    assert!((8.3..=9.7).contains(&mean), "mean burst {mean:.2} (real 9.04)");
    let (mean_off, _) = bursts(bfifo(250_000), 1, false);
    assert!(mean_off < 2.5, "without deferral: {mean_off:.2}");
}
