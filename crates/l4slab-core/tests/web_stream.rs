//! Streamed per-request records: memory independent of the run length.
//! A streaming run (`run_streaming`) hands each web source's requests and the closed
//! flows' summaries to a `RecordSink` in chunks of at most `RECORD_CHUNK` as they are
//! final, so what the engine holds for them stays bounded while the run goes on.
//!
//! 1. The streamed records are exactly the in-memory run's (same values, same order)
//!    and every other part of the results is unchanged.
//! 2. Peak heap (per thread, by the test binary's counting global allocator): doubling the run
//!    length (and so the number of requests) grows the in-memory run's peak by at least
//!    the records' own size, and the streaming run's by a small fraction of that.

use std::sync::{Arc, Mutex};

use crate::common::counting_alloc::{peak_bytes, reset_peak};
use l4slab_core::results::{FlowSummary, RecordSink, RequestRecord, RECORD_CHUNK};
use l4slab_core::{run, run_streaming, ScenarioConfig};
use serde_json::{json, Value};

const S: u64 = 1_000_000_000;

/// 2 × 500 requests/s (Prague and CUBIC, sizes up to 100 kB so each response ends within
/// the run) with one long CUBIC flow over 100 Mbit/s DualPI2; 1-s bins keep the
/// time series small beside the records.
fn config(secs: u64) -> ScenarioConfig {
    let web = |cc: &str| {
        json!({"kind": "web", "rate_per_s": 500.0, "cc": cc, "rtt_ns": 10_000_000u64, "receiver_ecn": 3,
               "sizes": {"alpha": 0.9, "min_bytes": 1000, "max_bytes": 100_000}})
    };
    serde_json::from_value(json!({
        "seed": 9, "duration_ns": secs * S, "bin_ns": S,
        "bottleneck": {"rate_bps": 100_000_000u64, "qdisc": {"kind": "dualpi2", "limit_packets": 10000}},
        "flows": [{"kind": "tcp", "cc": "cubic", "rtt_ns": 10_000_000u64}],
        "sources": [web("prague"), web("cubic")],
    }))
    .unwrap()
}

/// What a sink saw: the records as JSON values (per source, and the closed flows) and
/// the largest chunk.
#[derive(Default)]
struct Seen {
    requests: Vec<Vec<Value>>,
    flow_records: Vec<Value>,
    largest_chunk: usize,
    chunks: usize,
    finished: bool,
}

/// Keeps everything (for the equality test) or only counts (for the memory test).
struct TestSink {
    seen: Arc<Mutex<Seen>>,
    keep: bool,
}

impl RecordSink for TestSink {
    fn requests(&mut self, source: u32, chunk: &[RequestRecord]) -> Result<(), String> {
        let mut s = self.seen.lock().unwrap();
        (s.largest_chunk, s.chunks) = (s.largest_chunk.max(chunk.len()), s.chunks + 1);
        if self.keep {
            let i = source as usize;
            if s.requests.len() <= i {
                s.requests.resize(i + 1, Vec::new());
            }
            s.requests[i].extend(chunk.iter().map(|r| serde_json::to_value(r).unwrap()));
        }
        Ok(())
    }
    fn flow_records(&mut self, chunk: &[FlowSummary]) -> Result<(), String> {
        let mut s = self.seen.lock().unwrap();
        (s.largest_chunk, s.chunks) = (s.largest_chunk.max(chunk.len()), s.chunks + 1);
        if self.keep {
            s.flow_records.extend(chunk.iter().map(|r| serde_json::to_value(r).unwrap()));
        }
        Ok(())
    }
    fn finish(&mut self) -> Result<(), String> {
        self.seen.lock().unwrap().finished = true;
        Ok(())
    }
}

#[test]
fn streamed_records_are_the_in_memory_runs_records_in_the_same_order() {
    let cfg = config(6);
    let whole = serde_json::to_value(run(&cfg).unwrap()).unwrap();
    let seen = Arc::new(Mutex::new(Seen::default()));
    let streamed = run_streaming(&cfg, Box::new(TestSink { seen: seen.clone(), keep: true })).unwrap();
    let streamed = serde_json::to_value(streamed).unwrap();
    let s = seen.lock().unwrap();
    assert!(s.finished);
    // Requests: source by source, in arrival order, as `RunResults::requests` lists them.
    let requests: Vec<Value> = s.requests.iter().flatten().cloned().collect();
    let expected = whole["requests"].as_array().unwrap();
    assert!(expected.len() > 4 * RECORD_CHUNK, "{} requests: too few to stream in chunks", expected.len());
    assert_eq!(requests.len(), expected.len());
    assert!(requests == *expected, "streamed requests differ from the in-memory run's");
    let closed = whole["flow_records"].as_array().unwrap();
    assert!(closed.len() > 4 * RECORD_CHUNK);
    assert!(s.flow_records == *closed, "streamed flow records differ from the in-memory run's");
    assert!(s.chunks > 8 && s.largest_chunk <= RECORD_CHUNK + 64, "{} chunks, largest {}", s.chunks, s.largest_chunk);
    // The rest of the results is the same; the streamed parts are left out of them.
    for key in ["requests", "flow_records"] {
        assert!(streamed[key].as_array().is_none_or(|v| v.is_empty()), "{key} kept in the results");
    }
    let strip = |mut v: Value| {
        let o = v.as_object_mut().unwrap();
        o.remove("requests");
        o.remove("flow_records");
        v
    };
    assert!(strip(whole.clone()) == strip(streamed), "the streamed run's other results differ");
}

/// Peak heap bytes of one run of `secs` seconds, and its number of requests.
fn peak(secs: u64, streaming: bool) -> (i64, usize) {
    let cfg = config(secs);
    let seen = Arc::new(Mutex::new(Seen::default()));
    let base = reset_peak();
    let r = if streaming {
        run_streaming(&cfg, Box::new(TestSink { seen: seen.clone(), keep: false })).unwrap()
    } else {
        run(&cfg).unwrap()
    };
    let peak = peak_bytes() - base;
    let n = if streaming { seen.lock().unwrap().chunks } else { r.requests.len() };
    (peak, n)
}

#[test]
fn a_streaming_runs_peak_memory_does_not_grow_with_its_requests() {
    let (m1, n1) = peak(8, false);
    let (m2, n2) = peak(16, false);
    let (s1, c1) = peak(8, true);
    let (s2, c2) = peak(16, true);
    let row = (std::mem::size_of::<RequestRecord>() + std::mem::size_of::<FlowSummary>()) as i64;
    let added = (n2 - n1) as i64;
    eprintln!(
        "in memory: {m1} B for {n1} requests, {m2} B for {n2}; streaming: {s1} B ({c1} chunks), {s2} B ({c2} chunks); \
         {row} B of records per request"
    );
    assert!(added > 7_000, "{n1} then {n2} requests");
    // Kept in memory, the extra requests' records are on the heap at the end: at least
    // their rows (the vectors' doubling adds up to as much again).
    assert!(m2 - m1 >= added * row, "in-memory peak grew only {} B for {added} more requests", m2 - m1);
    // Streamed, what grows is the time series (1-s bins: 8 more bins × a few dozen
    // slots × ~100 B) and the event and slot tables' high-water marks, not the records:
    // under a tenth of the records' size.
    assert!(
        s2 - s1 < added * row / 10,
        "streaming peak grew {} B for {added} more requests (records: {} B)",
        s2 - s1,
        added * row
    );
}

/// A sink that fails on its second chunk.
struct FailingSink {
    calls: usize,
}

impl RecordSink for FailingSink {
    fn requests(&mut self, _source: u32, _chunk: &[RequestRecord]) -> Result<(), String> {
        self.calls += 1;
        if self.calls == 2 {
            Err("disk full".into())
        } else {
            Ok(())
        }
    }
    fn flow_records(&mut self, _chunk: &[FlowSummary]) -> Result<(), String> {
        Ok(())
    }
}

#[test]
fn a_failing_sink_fails_the_run_and_later_records_are_not_kept() {
    let cfg = config(16);
    let base = reset_peak();
    let err = run_streaming(&cfg, Box::new(FailingSink { calls: 0 })).expect_err("the sink's error is the run's");
    let failing_peak = peak_bytes() - base;
    assert_eq!(err, "disk full");
    // After the error the records are dropped, not kept: the peak stays near a
    // streaming run's, far below what 16 000 requests' records take (about 7 MB).
    let (streaming_peak, _) = peak(16, true);
    assert!(
        failing_peak < streaming_peak + 1_000_000,
        "failing sink: peak {failing_peak} B, a streaming run's {streaming_peak} B"
    );
}
