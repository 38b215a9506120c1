//! Queuing delay in the PAM 2025 per-flow cells: why Prague's
//! mean sRTT is below the testbed's in `fq ... ce_threshold 5ms` beside ECN-CUBIC.
//!
//! The FQ cell's ECN-CUBIC flow keeps its own sub-queue at the 5 ms sojourn step. A
//! marking episode lasts longer than one RTT: the first CE reaches the sender after
//! one RTT, and the CWR-flagged segment (the first one sent after `tcp_enter_cwr`)
//! joins a queue that the reduction has not yet drained, so it and the segments
//! after it are marked as well. RFC 3168 §6.1.3 as Linux runs it then forces a
//! second reduction:
//! - receiver: `tcp_input.c:tcp_ecn_accept_cwr` clears `TCP_ECN_DEMAND_CWR` on the CWR
//!   segment, and `__tcp_ecn_check_ce` sets it again on the next CE, so ECE is echoed
//!   until the sender sends CWR again;
//! - sender: `tcp_enter_cwr` does nothing while `icsk_ca_state` is already CWR; when
//!   `snd_una` passes `high_seq`, `tcp_fastretrans_alert` step D ends CWR
//!   (`tcp_end_cwnd_reduction`: cwnd = ssthresh) and step E (`tcp_try_to_open`,
//!   `FLAG_ECE`) enters CWR again on the same ACK.
//!
//! So CUBIC's window falls to 0.7² ≈ 0.49 of its peak (`tcp_cubic.c` β = 717/1024),
//! below its 42-packet share of the BDP; its sub-queue empties and Prague is served at
//! the whole link rate, which drains Prague's queue: a dip of Prague's sRTT towards
//! the base RTT once per CUBIC cycle (≈ 0.75 s). That dip is what lowers Prague's
//! mean queuing delay (4.1–4.2 ms against the testbed's 4.7–4.8 ms) and CUBIC's own
//! (2.0 against 2.5): with one 0.7 reduction per episode CUBIC's window would stay at
//! or above its share. The engine follows the kernel's rules here; what the testbed
//! had that the engine lacks is noise in the sojourn (host timer latency of the
//! router and the delay node), which lets an earlier, transient excursion above the
//! step end an episode within one RTT. See docs/fidelity-pam-aqm.md (FQ and L4S-aware
//! FQ-CoDel beside ECN-CUBIC).

use crate::common;
use common::*;
use serde_json::json;

/// The PAM 2025 FQ cell at 2 BDP: `fq limit 167 flow_limit 167 ce_threshold 5ms`,
/// Prague (AccECN, L4STeam receiver) vs ECN-CUBIC, 100 Mbit/s, 10 ms, one segment per skb (`tso = false`).
fn pam_fq_ecn_cubic(secs: u64, bin_ms: u64) -> l4slab_core::RunResults {
    let prague = pam_prague();
    let mut cubic = tcp("cubic", 10);
    cubic["tso"] = json!(false);
    cubic["ecn"] = json!(1);
    let q = json!({"kind": "fq", "limit_packets": 167, "flow_limit_packets": 167, "ce_threshold_ns": 5 * MS});
    let mut s = scenario(100, q, vec![prague, cubic], secs);
    s["bottleneck"]["burst_bytes"] = json!(1600);
    s["bottleneck"]["access_rate_bps"] = json!(10_000 * MBIT);
    s["bin_ns"] = json!(bin_ms * MS);
    run(&s)
}

/// Marking episodes of one flow: runs of bins with CE packets, split at gaps of more
/// than `gap` bins. Returns (first bin, last bin) of each.
fn episodes(ce: &[u64], from: usize, gap: usize) -> Vec<(usize, usize)> {
    let mut out: Vec<(usize, usize)> = Vec::new();
    for (i, &n) in ce.iter().enumerate().skip(from) {
        if n == 0 {
            continue;
        }
        match out.last_mut() {
            Some((_, last)) if i - *last <= gap => *last = i,
            _ => out.push((i, i)),
        }
    }
    out
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

#[test]
fn ecn_cubic_in_the_pam_fq_cell_reduces_twice_per_marking_episode_and_prague_srtt_dips() {
    let bin_ms = 2;
    let r = pam_fq_ecn_cubic(20, bin_ms);
    let (p, c) = (&r.flow_series[0], &r.flow_series[1]);
    // After slow start (5 s); episodes at least 50 ms apart are distinct (a CUBIC cycle
    // is ≈ 0.75 s here).
    let eps = episodes(&c.ce_packets, 5_000 / bin_ms as usize, 25);
    let eps: Vec<_> = eps.into_iter().filter(|&(a, _)| a + 60 < c.cwnd.len()).collect();
    assert!(eps.len() >= 10, "CUBIC is marked in cycles: {} episodes in 15 s", eps.len());
    let mut ratios = Vec::new();
    let mut spans = Vec::new();
    let mut prague_dips = Vec::new();
    for &(a, b) in &eps {
        let peak = c.cwnd[a - 5..=a].iter().cloned().fold(f64::MIN, f64::max);
        let trough = c.cwnd[a..a + 40].iter().cloned().fold(f64::MAX, f64::min);
        ratios.push(trough / peak);
        spans.push(((b - a + 1) as u64 * bin_ms) as f64);
        prague_dips.push(p.srtt_ms[a..a + 60].iter().cloned().fold(f64::MAX, f64::min));
    }
    let (ratio, span, dip) = (median(ratios), median(spans), median(prague_dips));
    eprintln!("episodes {}: CUBIC trough/peak {ratio:.3}, CE span {span} ms, Prague min sRTT {dip:.2} ms", eps.len());
    // Marks span more than one base RTT (10 ms): the CWR segment is marked too.
    assert!(span > 10.0, "a marking episode outlasts one RTT: {span} ms");
    // Two β = 0.7 reductions: 0.49 (one reduction would give ≥ 0.7).
    assert!((0.44..=0.55).contains(&ratio), "CUBIC's cwnd falls to 0.7² of its peak: {ratio:.3}");
    // Prague's queue drains while CUBIC is below its share: sRTT falls from ≈ 14.7 ms
    // (a 5 ms step at half the link) to within 2.5 ms of the base RTT.
    assert!(dip < 12.5, "Prague's sRTT dips towards the 10 ms base: {dip:.2} ms");
    let f = &r.flows;
    eprintln!("queuing delay: Prague {:.2} ms, CUBIC {:.2} ms", f[0].queuing_delay_ms, f[1].queuing_delay_ms);
}

/// The PAM FQ cell beside non-ECN CUBIC (`fq limit P flow_limit P ce_threshold 5ms`,
/// 0.5–8 BDP; engine 0.45 / 0.91 / 2.13 / 2.98 / 3.45 ms against the testbed's 1.1 /
/// 2.2 / 3.9 / 4.1 / 4.2). CUBIC keeps the shared `limit` full, and `sch_fq.c:fq_enqueue`
/// drops whatever arrives while `sch->q.qlen >= sch->limit`: which flow loses the slot a
/// dequeue frees is decided by the two flows' arrival phase, as in the 0.5-BDP FIFO (Floyd &
/// Jacobson 1992). Prague, when it is the one that loses, halves long before its own
/// queue reaches the 5 ms step, so its queuing delay is a phase effect: here it moves
/// by more than 2 ms as CUBIC's base RTT moves by less than one 121-µs frame time.
/// No source gives the testbed's timing noise, so the engine does not average over it.
#[test]
fn prague_delay_in_the_pam_fq_cell_beside_non_ecn_cubic_is_a_phase_effect() {
    let delay = |extra_us: u64| {
        let prague = pam_prague();
        let mut cubic = tcp("cubic", 10);
        cubic["rtt_ns"] = json!(10 * MS + extra_us * 1_000);
        cubic["tso"] = json!(false);
        cubic["ecn"] = json!(0);
        cubic["receiver_ecn"] = json!(0);
        let q = json!({"kind": "fq", "limit_packets": 167, "flow_limit_packets": 167, "ce_threshold_ns": 5 * MS});
        let mut s = scenario(100, q, vec![prague, cubic], 30);
        s["bottleneck"]["burst_bytes"] = json!(1600);
        s["bottleneck"]["access_rate_bps"] = json!(10_000 * MBIT);
        let r = run(&s);
        (r.flows[0].queuing_delay_ms, r.flows[0].goodput_mbps, r.flows[0].retransmits)
    };
    let d: Vec<_> = [0, 45, 60, 90].iter().map(|&x| (x, delay(x))).collect();
    for (x, (qd, gp, rtx)) in &d {
        eprintln!("CUBIC RTT +{x:>3} µs: Prague queuing delay {qd:.2} ms, {gp:.1} Mbit/s, {rtx} retransmits");
    }
    let qds: Vec<f64> = d.iter().map(|(_, (q, _, _))| *q).collect();
    let (lo, hi) = (qds.iter().cloned().fold(f64::MAX, f64::min), qds.iter().cloned().fold(f64::MIN, f64::max));
    assert!(hi - lo > 2.0, "Prague's delay moves with CUBIC's phase: {lo:.2}–{hi:.2} ms");
    // Every phase keeps Prague below its own 5 ms step: losses, not marks, bound it.
    assert!(hi < 5.0, "Prague's queue stays below the step: {hi:.2} ms");
}
