//! Run an engine-JSON scenario from the command line and print the summary
//! (a development aid; users run scenarios through the `l4slab` CLI).
fn main() {
    let path = std::env::args().nth(1).expect("usage: run_json CONFIG.json");
    let text = std::fs::read_to_string(&path).expect("readable config");
    let cfg: l4slab_core::ScenarioConfig = serde_json::from_str(&text).expect("valid engine config");
    let t = std::time::Instant::now();
    let r = l4slab_core::run(&cfg).expect("run");
    let wall = t.elapsed().as_secs_f64();
    for f in &r.flows {
        println!(
            "flow {} {:6} goodput {:7.3} Mb/s srtt {:6.2} ms qdelay {:6.2} ms rtx {:5} rto {} tlp {} rec {} drops {} marks {} payload {:.0} B sd {:.0} pacing {:.4} Mb/s",
            f.id, f.cc, f.goodput_mbps, f.mean_srtt_ms, f.queuing_delay_ms, f.retransmits, f.rto_count, f.tlp_count, f.recoveries, f.drops, f.marks, f.mean_payload_bytes, f.payload_sd_bytes, f.mean_pacing_rate_mbps
        );
    }
    if std::env::var("L4SLAB_SERIES").is_ok() {
        for (i, t) in r.time_s.iter().enumerate() {
            let f = &r.flow_series[0];
            println!(
                "{t:.3} cwnd {} srtt {:.2} rtx {} drops {} ce {} alpha {:.3} util {:.3} soj {:.3}",
                f.cwnd[i],
                f.srtt_ms[i],
                f.retransmits[i],
                f.drops[i],
                f.ce_packets[i],
                f.alpha[i],
                r.bottleneck_series.utilisation[i],
                r.bottleneck_series.sojourn_ms[i]
            );
        }
    }
    let b = &r.bottleneck;
    println!(
        "util {:.4} sojourn mean {:.2} p50 {:.2} p99 {:.2} ms drops {} jain {:.4}",
        b.utilisation, b.sojourn_ms.mean, b.sojourn_ms.p50, b.sojourn_ms.p99, b.drops, r.jain_index
    );
    for c in &b.sojourn_by_class {
        println!(
            "  class {} sojourn mean {:.3} p99 {:.3} ms (n={})",
            c.class, c.sojourn_ms.mean, c.sojourn_ms.p99, c.sojourn_ms.count
        );
    }
    println!("  qdisc {:?}", b.qdisc);
    println!(
        "packets sent {} (data {} acks {}) events {} wall {:.3}s -> {:.2} M pkt/s",
        r.packets.sent,
        r.packets.data,
        r.packets.acks,
        r.events,
        wall,
        r.packets.sent as f64 / wall / 1e6
    );
}
