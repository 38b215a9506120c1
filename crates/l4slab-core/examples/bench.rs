//! Engine throughput on four fixed scenarios: bottleneck packets per wall-clock
//! second, events per bottleneck packet and wall time per event.
//!
//! `cargo run --release -p l4slab-core --example bench [reference|10g|512|l4s|pam|FILE.json|DIR]...`
//! (no argument: the first four; a `.json` file is an engine config as
//! `l4slab.scenario.load_scenario(path).resolve()` gives it, e.g. the web scenario; a directory,
//! every `.json` file in it, by name; the cases are in `cases/mod.rs`). One run each. Rates are per second of this thread's
//! CPU time (`/proc/thread-self/schedstat`), which a shared machine disturbs less
//! than wall time; wall time is printed too.

mod cases;

use sha2::{Digest, Sha256};

/// CPU time of the calling thread, ns (Linux); `None` elsewhere.
fn thread_cpu_ns() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    s.split_whitespace().next()?.parse().ok()
}

fn main() {
    if let Err(error) = bench(std::env::args().skip(1).collect()) {
        eprintln!("bench: error: {error}");
        std::process::exit(2);
    }
}

fn bench(args: Vec<String>) -> Result<(), String> {
    for (name, value) in cases::configs(args)? {
        let cfg = cases::engine_config(&name, value)?;
        let cpu0 = thread_cpu_ns();
        let t = std::time::Instant::now();
        let r = l4slab_core::run(&cfg).map_err(|e| format!("{name}: {e}"))?;
        let wall = t.elapsed().as_secs_f64();
        let cpu = match (cpu0, thread_cpu_ns()) {
            (Some(a), Some(b)) => (b - a) as f64 / 1e9,
            _ => wall,
        };
        let pkts = r.bottleneck.qdisc.sent_packets as f64;
        // The corpus's canonical hash (sorted-key JSON without `events`): a speed
        // lever must leave it unchanged for scenarios outside the corpus too.
        let mut v = serde_json::to_value(&r).expect("results serialise");
        v.as_object_mut().expect("results are an object").remove("events");
        let digest = Sha256::digest(serde_json::to_vec(&v).expect("value serialises"));
        let hash: String = digest.iter().take(8).map(|b| format!("{b:02x}")).collect();
        let events = r.events as f64;
        println!(
            "{name:10} cpu {cpu:6.2} s (wall {wall:6.2} s)  bottleneck pkts {pkts:9.0}  {:6.3} Mpkt/s  events/pkt {:4.2}  ns/event {:6.1}  util {:.3}  results {hash}",
            pkts / cpu / 1e6,
            events / pkts,
            cpu * 1e9 / events,
            r.bottleneck.utilisation
        );
    }
    Ok(())
}
