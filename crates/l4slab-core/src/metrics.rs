//! Measurement: per-bin series, the sojourn histogram and the summary window.
//!
//! Everything is preallocated when the run starts (one slot per bin and flow), so
//! recording during the run allocates nothing unless a full sojourn trace was asked for.

use crate::results::{BottleneckSeries, DelayStats, FlowSeries, SojournTrace};
use crate::time::{secs, Time, NS_PER_MS};
use hdrhistogram::Histogram;

/// Delay histogram in ns with 3 significant digits (relative error ≤ 0.1 %).
pub struct DelayHistogram {
    hist: Histogram<u64>,
    sum_ns: u128,
}

impl DelayHistogram {
    pub fn new() -> Self {
        // Up to 1 hour of delay; memory is bounded (~100 KB).
        let hist = Histogram::new_with_bounds(1, 3_600_000_000_000, 3).expect("valid histogram bounds");
        DelayHistogram { hist, sum_ns: 0 }
    }

    #[inline]
    pub fn record(&mut self, ns: u64) {
        self.hist.saturating_record(ns.max(1));
        self.sum_ns += ns as u128;
    }

    pub fn stats_ms(&self) -> DelayStats {
        let n = self.hist.len();
        if n == 0 {
            return DelayStats::default();
        }
        let q = |p: f64| self.hist.value_at_quantile(p) as f64 / NS_PER_MS as f64;
        DelayStats {
            count: n,
            mean: self.sum_ns as f64 / n as f64 / NS_PER_MS as f64,
            p50: q(0.50),
            p90: q(0.90),
            p99: q(0.99),
            p999: q(0.999),
            max: self.hist.max() as f64 / NS_PER_MS as f64,
        }
    }
}

impl Default for DelayHistogram {
    fn default() -> Self {
        Self::new()
    }
}

/// Running accumulators of the current bin for one flow.
#[derive(Clone, Copy, Default)]
pub struct FlowBinAcc {
    pub bottleneck_bytes: u64,
    pub drops: u64,
    pub marks: u64,
}

/// Cumulative per-flow counters sampled at bin ends (differences give per-bin values).
#[derive(Clone, Copy, Default)]
pub struct FlowCumulative {
    pub bytes_delivered: u64,
    pub retransmits: u64,
    pub rtt_sum_us: u64,
    pub rtt_samples: u64,
    pub ce_packets: u64,
    pub segments_sent: u64,
    pub payload_bytes_sent: u64,
}

/// All recorders of a run.
pub struct Recorder {
    pub bin_ns: u64,
    pub warmup: Time,
    pub n_bins: usize,
    pub bin_index: usize,
    pub flow_series: Vec<FlowSeries>,
    pub bottleneck_series: BottleneckSeries,
    pub flow_acc: Vec<FlowBinAcc>,
    pub flow_prev: Vec<FlowCumulative>,
    /// Per-flow whole-run drop and mark counts.
    pub flow_drops: Vec<u64>,
    pub flow_marks: Vec<u64>,
    /// Per-flow bottleneck bytes inside the summary window.
    pub flow_window_bytes: Vec<u64>,
    /// srtt samples (µs) inside the summary window, per flow: sum and count.
    pub flow_srtt_sum: Vec<f64>,
    pub flow_srtt_n: Vec<u64>,
    /// Snapshot of cumulative counters at the start of the window.
    pub flow_at_warmup: Vec<FlowCumulative>,
    // Bottleneck bin accumulators.
    pub bin_bytes: u64,
    pub bin_sojourn_sum_ns: u128,
    pub bin_sojourn_n: u64,
    pub bin_drops: u64,
    pub bin_marks: u64,
    pub bin_arrivals: u64,
    // Window totals.
    pub window_bytes: u64,
    pub window_drops: u64,
    pub window_marks: u64,
    pub sojourn: DelayHistogram,
    /// Per sub-queue of the qdisc.
    pub class_sojourn: Vec<DelayHistogram>,
    pub trace: Option<SojournTrace>,
}

impl Recorder {
    pub fn new(
        n_flows: usize,
        n_classes: usize,
        duration: Time,
        bin_ns: u64,
        warmup: Time,
        trace: bool,
        trace_capacity: usize,
    ) -> Self {
        let n_bins = duration.div_ceil(bin_ns) as usize;
        let flow_series = (0..n_flows)
            .map(|_| FlowSeries {
                goodput_mbps: Vec::with_capacity(n_bins),
                throughput_mbps: Vec::with_capacity(n_bins),
                srtt_ms: Vec::with_capacity(n_bins),
                rtt_ms: Vec::with_capacity(n_bins),
                cwnd: Vec::with_capacity(n_bins),
                alpha: Vec::with_capacity(n_bins),
                pacing_rate_mbps: Vec::with_capacity(n_bins),
                payload_bytes: Vec::with_capacity(n_bins),
                ce_packets: Vec::with_capacity(n_bins),
                retransmits: Vec::with_capacity(n_bins),
                drops: Vec::with_capacity(n_bins),
                marks: Vec::with_capacity(n_bins),
            })
            .collect();
        let bottleneck_series = BottleneckSeries {
            utilisation: Vec::with_capacity(n_bins),
            sojourn_ms: Vec::with_capacity(n_bins),
            backlog_bytes: Vec::with_capacity(n_bins),
            backlog_packets: Vec::with_capacity(n_bins),
            drops: Vec::with_capacity(n_bins),
            marks: Vec::with_capacity(n_bins),
            arrivals: Vec::with_capacity(n_bins),
        };
        Recorder {
            bin_ns,
            warmup,
            n_bins,
            bin_index: 0,
            flow_series,
            bottleneck_series,
            flow_acc: vec![FlowBinAcc::default(); n_flows],
            flow_prev: vec![FlowCumulative::default(); n_flows],
            flow_drops: vec![0; n_flows],
            flow_marks: vec![0; n_flows],
            flow_window_bytes: vec![0; n_flows],
            flow_srtt_sum: vec![0.0; n_flows],
            flow_srtt_n: vec![0; n_flows],
            flow_at_warmup: vec![FlowCumulative::default(); n_flows],
            bin_bytes: 0,
            bin_sojourn_sum_ns: 0,
            bin_sojourn_n: 0,
            bin_drops: 0,
            bin_marks: 0,
            bin_arrivals: 0,
            window_bytes: 0,
            window_drops: 0,
            window_marks: 0,
            sojourn: DelayHistogram::new(),
            class_sojourn: (0..n_classes.max(1)).map(|_| DelayHistogram::new()).collect(),
            trace: trace.then(|| SojournTrace {
                time_s: Vec::with_capacity(trace_capacity),
                flow: Vec::with_capacity(trace_capacity),
                class: Vec::with_capacity(trace_capacity),
                sojourn_ms: Vec::with_capacity(trace_capacity),
            }),
        }
    }

    #[inline]
    pub fn in_window(&self, now: Time) -> bool {
        now >= self.warmup
    }

    /// A packet of `flow` left the bottleneck after `sojourn_ns` in the qdisc.
    #[inline]
    pub fn on_dequeue(&mut self, now: Time, flow: u32, class: u8, wire_len: u32, sojourn_ns: u64) {
        let f = flow as usize;
        self.flow_acc[f].bottleneck_bytes += wire_len as u64;
        self.bin_bytes += wire_len as u64;
        self.bin_sojourn_sum_ns += sojourn_ns as u128;
        self.bin_sojourn_n += 1;
        if self.in_window(now) {
            self.window_bytes += wire_len as u64;
            self.flow_window_bytes[f] += wire_len as u64;
            self.sojourn.record(sojourn_ns);
            if let Some(h) = self.class_sojourn.get_mut(class as usize) {
                h.record(sojourn_ns);
            }
        }
        if let Some(t) = self.trace.as_mut() {
            t.time_s.push(secs(now));
            t.flow.push(flow);
            t.class.push(class);
            t.sojourn_ms.push(sojourn_ns as f64 / NS_PER_MS as f64);
        }
    }

    #[inline]
    pub fn on_drop(&mut self, now: Time, flow: u32) {
        self.flow_acc[flow as usize].drops += 1;
        self.flow_drops[flow as usize] += 1;
        self.bin_drops += 1;
        if self.in_window(now) {
            self.window_drops += 1;
        }
    }

    #[inline]
    pub fn on_mark(&mut self, now: Time, flow: u32) {
        self.flow_acc[flow as usize].marks += 1;
        self.flow_marks[flow as usize] += 1;
        self.bin_marks += 1;
        if self.in_window(now) {
            self.window_marks += 1;
        }
    }
}
