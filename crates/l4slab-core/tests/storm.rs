//! The "retransmission storm" of the linearity benchmark: two Prague flows into a drop-only PIE
//! (`limit 100000`) at 783 Mbit/s, 10 ms (examples/bench/prague-pie-783.toml).
//!
//! Slow start overshoots into the 100 000-packet queue (≈ 41 700 packets queue up,
//! ≈ 0.8 s of delay) before PIE drops; PIE's probability then integrates the excess
//! delay, plus 2 % per update while it is over 250 ms (sch_pie.c:
//! pie_calculate_probability), to well above 1 (nothing clamps it below MAX_PROB but
//! u64 overflow), so once the queue has drained PIE drops every arrival that finds
//! ≥ 2 MTU queued (pie_drop_early) and the bottleneck carries ≈ 4 % of what arrives.
//! Each sender is then window-limited: Prague halved its window once at Recovery
//! entry (prague_state → prague_enter_loss) to ≈ 15 000 packets and makes no further
//! reduction in that episode (cong_control bypasses PRR: tcp_input.c:tcp_cong_control),
//! which cannot end while the head's retransmissions are dropped. Every round RACK
//! (tcp_recovery.c:tcp_rack_detect_loss) marks the dropped retransmissions lost one
//! RTT after they left, which frees their window slots, and they go again, paced at
//! MTU·cwnd/sRTT (prague_update_pacing_rate). So each flow sends ≈ cwnd/sRTT
//! (≈ 15 000 / 18 ms ≈ 0.8 M packets/s) while the bottleneck carries ≈ 65 k/s — a
//! Linux sender does the same. These tests pin that explanation: the sending rate
//! never exceeds what the window allows per base RTT, and in the storm it is the
//! window's rate, not more.

use serde_json::json;

fn storm() -> l4slab_core::RunResults {
    // The receivers' window fixed far above the storm (1 GB): the storm as the congestion
    // window makes it. With autotuning the advertised window bounds it further (the
    // out-of-order data fills the receive buffer: `__tcp_select_window`).
    let flow = json!({"kind": "tcp", "cc": "prague", "rtt_ns": 10_000_000u64, "start_ns": 0, "receiver_ecn": 3,
                      "rwnd_bytes": 1u64 << 30});
    let cfg = json!({
        "seed": 1, "duration_ns": 2_500_000_000u64, "bin_ns": 50_000_000u64, "start_jitter_ns": 1_000_000u64,
        "bottleneck": {"rate_bps": 783_000_000u64, "burst_bytes": 1600, "access_rate_bps": 10_000_000_000u64,
                       "qdisc": {"kind": "pie", "limit_packets": 100_000}},
        "flows": [flow.clone(), flow],
    });
    let cfg: l4slab_core::ScenarioConfig = serde_json::from_value(cfg).expect("valid config");
    l4slab_core::run(&cfg).expect("run")
}

#[test]
fn the_storm_is_the_window_s_rate_and_no_more() {
    let r = storm();
    let bin_s = 0.05;
    let base_rtt_s = 0.010;
    let n = r.time_s.len();
    let mut storm_bins = 0;
    for (fi, f) in r.flow_series.iter().enumerate() {
        for b in 1..n {
            let sent = f.retransmits[b] as f64;
            // The window in flight at the bin's start, then each slot reused at most
            // once per base RTT: a dropped packet is marked lost only when a packet
            // sent after it is (S)ACKed (measured: up to 0.8 of this in the storm).
            let cwnd_max = f.cwnd[b - 1].max(f.cwnd[b]);
            let bound = cwnd_max * (1.0 + bin_s / base_rtt_s);
            assert!(
                sent <= bound,
                "flow {fi} bin {b}: {sent} retransmissions > cwnd {cwnd_max} per base RTT ({bound})"
            );
            // In the storm (the queue drained, PIE dropping nearly all): the rate is
            // the window's, cwnd per sRTT.
            let srtt_s = f.srtt_ms[b] / 1e3;
            if r.bottleneck_series.sojourn_ms[b] < 1.0 && sent > 0.0 && srtt_s < 0.05 {
                let window_rate = f.cwnd[b].min(f.cwnd[b - 1]) * bin_s / srtt_s;
                assert!(sent >= 0.5 * window_rate, "flow {fi} bin {b}: {sent} sent, window rate {window_rate}");
                storm_bins += 1;
            }
        }
    }
    assert!(storm_bins >= 20, "the storm regime is reached ({storm_bins} bins)");
    // The bottleneck carries a small fraction of what arrives, PIE's probability > 1.
    let q = &r.bottleneck.qdisc;
    let prob = q.extra["prob"];
    assert!(prob > 1.0, "PIE prob {prob}");
    assert!(q.drops > 4 * q.sent_packets, "drops {} sent {}", q.drops, q.sent_packets);
}
