//! The binned recorder: per-bin series of every flow and of every measured link
//! (the topology's `measured()`: the bottleneck first, whose record is `links[0]`),
//! the sojourn histograms and the summary window. A flow's own counters at a link
//! (bytes, drops, marks) are those at the bottleneck.
//!
//! Per-bin storage is preallocated when the run starts (one slot per bin and flow),
//! so recording allocates nothing per packet. At the end it writes its own parts of
//! [`RunResults`]: flow summaries and series, the bottleneck summary and series,
//! bin times and Jain's index.
//!
//! A flow slot may hold many short flows in turn (a traffic source releases and
//! reuses slots): the slot's series then aggregate its occupants (the counters of
//! closed flows are carried in `closed`), and each closed flow leaves a per-flow
//! record (`RunResults::flow_records`) instead of series of its own.

use super::histogram::DelayHistogram;
use super::{FlowCumulative, NetworkView, Observer};
use crate::event::LinkId;
use crate::guard::try_vec;
use crate::packet::{Packet, SackTable};
use crate::qdisc::Qdisc;
use crate::results::*;
use crate::time::{secs, Time, NS_PER_MS};

/// Running accumulators of the current bin for one flow.
#[derive(Clone, Copy, Default)]
struct FlowBinAcc {
    bottleneck_bytes: u64,
    drops: u64,
    marks: u64,
}

/// Per-flow counters touched per packet, kept apart from the series so that a
/// thousand flows' worth stays in a few cache lines.
#[derive(Clone, Copy, Default)]
struct FlowHot {
    acc: FlowBinAcc,
    /// Whole-run drop and mark counts at the watched link.
    drops: u64,
    marks: u64,
    /// Bytes through the watched link inside the summary window.
    window_bytes: u64,
}

/// Per-flow state of the recorder touched once per bin.
#[derive(Default)]
struct FlowRecord {
    series: FlowSeries,
    /// The slot's cumulative counters (closed occupants included) at the end of the previous bin.
    prev: FlowCumulative,
    /// Sum of the final counters of the flows that held this slot and closed.
    closed: FlowCumulative,
    /// The current occupant's counters at the start of the summary window.
    at_warmup: FlowCumulative,
    /// srtt samples (ms) inside the window: sum and count (iperf3-like mean).
    srtt_sum: f64,
    srtt_n: u64,
}

/// Accumulators of the watched link's current bin.
#[derive(Default)]
struct LinkBin {
    bytes: u64,
    sojourn_sum_ns: u128,
    sojourn_n: u64,
    drops: u64,
    marks: u64,
    arrivals: u64,
}

/// Sojourn sum (ns) and count of one sub-queue in the current bin.
#[derive(Clone, Copy, Default)]
struct ClassBin {
    sum_ns: u128,
    n: u64,
}

/// The record of one measured link.
struct LinkRecord {
    name: &'static str,
    bin: LinkBin,
    series: BottleneckSeries,
    window_bytes: u64,
    window_drops: u64,
    window_marks: u64,
    sojourn: DelayHistogram,
    /// Per sub-queue of the link's qdisc; empty for a single-queue qdisc, whose one
    /// class has exactly the samples of `sojourn`.
    class_sojourn: Vec<DelayHistogram>,
    /// The current bin's per-class sojourn accumulators (same length as `class_sojourn`).
    class_bin: Vec<ClassBin>,
}

/// Bytes the recorder holds per flow slot beside its series (counted by the bin, in
/// `crate::memory`): the slot's record and its hot accumulators.
pub fn flow_record_bytes() -> usize {
    std::mem::size_of::<FlowRecord>() + std::mem::size_of::<FlowHot>()
}

/// What the recorder's reservations name when they fail (`guard::try_vec`).
const SERIES: &str = "the per-bin series (bin)";

impl LinkRecord {
    /// The link's series reserved up front, allocations that may fail (one line).
    fn new(name: &'static str, n_classes: usize, n_bins: usize) -> Result<Self, String> {
        let series = BottleneckSeries {
            utilisation: try_vec(n_bins, SERIES)?,
            sojourn_ms: try_vec(n_bins, SERIES)?,
            backlog_bytes: try_vec(n_bins, SERIES)?,
            backlog_packets: try_vec(n_bins, SERIES)?,
            drops: try_vec(n_bins, SERIES)?,
            marks: try_vec(n_bins, SERIES)?,
            arrivals: try_vec(n_bins, SERIES)?,
            sojourn_class_ms: if n_classes > 1 {
                (0..n_classes).map(|_| try_vec(n_bins, SERIES)).collect::<Result<_, _>>()?
            } else {
                Vec::new()
            },
        };
        Ok(LinkRecord {
            name,
            bin: LinkBin::default(),
            series,
            window_bytes: 0,
            window_drops: 0,
            window_marks: 0,
            sojourn: DelayHistogram::new(),
            class_sojourn: if n_classes > 1 {
                (0..n_classes).map(|_| DelayHistogram::new()).collect()
            } else {
                Vec::new()
            },
            class_bin: vec![ClassBin::default(); if n_classes > 1 { n_classes } else { 0 }],
        })
    }

    /// The link's summary over the window [`warmup`, `end`).
    fn summary(&self, link: &crate::net::Link, warmup: Time, end: Time) -> BottleneckSummary {
        let window_s = secs(end - warmup);
        let q = link.queue().expect("the recorder measures queued links");
        let st = q.qdisc.stats();
        let utilisation = if q.schedule.is_empty() {
            self.window_bytes as f64 * 8.0 / window_s / q.shaper.rate_bps() as f64
        } else {
            self.window_bytes as f64 * 8.0 / (q.capacity_bits(end) - q.capacity_bits(warmup))
        };
        BottleneckSummary {
            utilisation,
            sojourn_ms: self.sojourn.stats_ms(),
            drops: self.window_drops,
            marks: self.window_marks,
            sojourn_by_class: if self.class_sojourn.is_empty() {
                let names = q.qdisc.class_names();
                names
                    .first()
                    .map(|n| ClassSojourn { class: n.to_string(), sojourn_ms: self.sojourn.stats_ms() })
                    .into_iter()
                    .collect()
            } else {
                q.qdisc
                    .class_names()
                    .iter()
                    .zip(self.class_sojourn.iter())
                    .map(|(name, h)| ClassSojourn { class: name.to_string(), sojourn_ms: h.stats_ms() })
                    .collect()
            },
            qdisc: QdiscStatsOut::new(q.qdisc.kind(), st, q.qdisc.extra_stats()),
        }
    }

    /// End of a bin that started at `bin_start`: close the link's series values.
    fn close_bin(&mut self, link: &crate::net::Link, bin_start: Time, now: Time, width_s: f64) {
        let q = link.queue().expect("the recorder measures queued links");
        let st = q.qdisc.stats();
        let b = &mut self.series;
        b.utilisation.push(if q.schedule.is_empty() {
            self.bin.bytes as f64 * 8.0 / width_s / q.shaper.rate_bps() as f64
        } else {
            self.bin.bytes as f64 * 8.0 / (q.capacity_bits(now) - q.capacity_bits(bin_start)).max(1e-9)
        });
        b.sojourn_ms.push(if self.bin.sojourn_n > 0 {
            self.bin.sojourn_sum_ns as f64 / self.bin.sojourn_n as f64 / NS_PER_MS as f64
        } else {
            f64::NAN
        });
        b.backlog_bytes.push(st.backlog_bytes);
        b.backlog_packets.push(st.backlog_packets);
        b.drops.push(self.bin.drops);
        b.marks.push(self.bin.marks);
        b.arrivals.push(self.bin.arrivals);
        for (series, c) in b.sojourn_class_ms.iter_mut().zip(self.class_bin.iter_mut()) {
            series.push(if c.n > 0 { c.sum_ns as f64 / c.n as f64 / NS_PER_MS as f64 } else { f64::NAN });
            *c = ClassBin::default();
        }
        self.bin = LinkBin::default();
    }
}

/// Series, histograms and window totals of a run.
pub struct Recorder {
    bin_ns: u64,
    warmup: Time,
    end: Time,
    n_bins: usize,
    bin_index: usize,
    flows: Vec<FlowRecord>,
    hot: Vec<FlowHot>,
    /// The measured links, by id (the topology gives them ids `0..n`).
    links: Vec<LinkRecord>,
    /// Summaries of flows closed during the run, in closing order.
    records: Vec<FlowSummary>,
}

/// A link to measure: its id, name and the number of its qdisc's sub-queues.
pub struct LinkToMeasure {
    pub id: LinkId,
    pub name: &'static str,
    pub n_classes: usize,
}

impl Recorder {
    /// Record `n_flows` flows and the links `links` (ids `0..links.len()`, in order).
    /// The series of the bins are reserved up front, allocations that may fail (one
    /// line, `guard::try_vec`), for each link and for each of the `n_flows` flows.
    pub fn new(links: &[LinkToMeasure], n_flows: usize, end: Time, bin_ns: u64, warmup: Time) -> Result<Self, String> {
        let n_bins = end.div_ceil(bin_ns) as usize;
        assert!(links.iter().enumerate().all(|(i, l)| l.id.0 as usize == i), "measured links have ids 0..n");
        let mut r = Recorder {
            bin_ns,
            warmup,
            end,
            n_bins,
            bin_index: 0,
            flows: Vec::with_capacity(n_flows),
            hot: Vec::with_capacity(n_flows),
            links: links.iter().map(|l| LinkRecord::new(l.name, l.n_classes, n_bins)).collect::<Result<_, _>>()?,
            records: Vec::new(),
        };
        r.try_ensure_flows(n_flows)?;
        Ok(r)
    }

    /// Make room for flow slots `0..n` (a slot opened during the run: its series'
    /// allocations failing end the process in one line, as any allocation of the run).
    pub fn ensure_flows(&mut self, n: usize) {
        if let Err(e) = self.try_ensure_flows(n) {
            crate::guard::out_of_memory(&e)
        }
    }

    /// [`ensure_flows`](Self::ensure_flows), its series reserved with allocations that may fail.
    fn try_ensure_flows(&mut self, n: usize) -> Result<(), String> {
        let n_bins = self.n_bins;
        while self.flows.len() < n {
            self.flows.push(FlowRecord {
                series: FlowSeries {
                    goodput_mbps: try_vec(n_bins, SERIES)?,
                    throughput_mbps: try_vec(n_bins, SERIES)?,
                    srtt_ms: try_vec(n_bins, SERIES)?,
                    rtt_ms: try_vec(n_bins, SERIES)?,
                    cwnd: try_vec(n_bins, SERIES)?,
                    alpha: try_vec(n_bins, SERIES)?,
                    pacing_rate_mbps: try_vec(n_bins, SERIES)?,
                    payload_bytes: try_vec(n_bins, SERIES)?,
                    ce_packets: try_vec(n_bins, SERIES)?,
                    retransmits: try_vec(n_bins, SERIES)?,
                    drops: try_vec(n_bins, SERIES)?,
                    marks: try_vec(n_bins, SERIES)?,
                    // The CC-state series start empty (see `push_state`).
                    ..FlowSeries::default()
                },
                ..Default::default()
            });
            self.hot.push(FlowHot::default());
            // A slot opened during the run: the bins before it carried nothing
            // (rates and counts 0, sender state NaN), so every series spans the run.
            let done = self.bin_index;
            if done > 0 {
                let s = &mut self.flows.last_mut().expect("just pushed").series;
                for v in [&mut s.goodput_mbps, &mut s.throughput_mbps] {
                    v.resize(done, 0.0);
                }
                for v in [&mut s.srtt_ms, &mut s.rtt_ms, &mut s.cwnd, &mut s.alpha, &mut s.pacing_rate_mbps] {
                    v.resize(done, f64::NAN);
                }
                s.payload_bytes.resize(done, f64::NAN);
                for v in [&mut s.ce_packets, &mut s.retransmits, &mut s.drops, &mut s.marks] {
                    v.resize(done, 0);
                }
            }
        }
        Ok(())
    }

    /// The bottleneck: the link whose per-flow counters the recorder keeps.
    pub fn link(&self) -> LinkId {
        LinkId(0)
    }

    #[inline]
    fn in_window(&self, now: Time) -> bool {
        now >= self.warmup
    }

    /// The summary of the flow now in slot `fi`, rates over `window_s` seconds.
    fn flow_summary(&self, fi: usize, view: &dyn NetworkView, window_s: f64) -> FlowSummary {
        let (rec, hot) = (&self.flows[fi], &self.hot[fi]);
        let cum = view.cumulative(fi);
        let w = rec.at_warmup;
        let goodput = (cum.bytes_delivered - w.bytes_delivered) as f64 * 8.0 / window_s / 1e6;
        let mean_srtt = if rec.srtt_n > 0 { rec.srtt_sum / rec.srtt_n as f64 } else { f64::NAN };
        let base_rtt_ms = view.base_rtt_ns(fi) as f64 / NS_PER_MS as f64;
        let mut s = FlowSummary {
            id: fi as u32,
            start_s: secs(view.flow_start(fi)),
            base_rtt_ms,
            goodput_mbps: goodput,
            throughput_mbps: hot.window_bytes as f64 * 8.0 / window_s / 1e6,
            mean_srtt_ms: mean_srtt,
            queuing_delay_ms: mean_srtt - base_rtt_ms,
            bytes_delivered: cum.bytes_delivered,
            drops: hot.drops,
            marks: hot.marks,
            ..Default::default()
        };
        view.summarise(fi, &mut s);
        s.goodput_efficiency = if s.throughput_mbps > 0.0 { s.goodput_mbps / s.throughput_mbps } else { f64::NAN };
        s
    }

    /// Close the flow in slot `flow` at `now`: keep its record and carry its counters
    /// into the slot's series so a new occupant starts from zero.
    pub fn on_flow_close(&mut self, now: Time, flow: u32, view: &dyn NetworkView) {
        let fi = flow as usize;
        if fi >= self.flows.len() {
            return;
        }
        // A closed flow's rates are over its own lifetime inside the window.
        let from = view.flow_start(fi).max(self.warmup);
        let lifetime_s = secs(now.saturating_sub(from)).max(1e-9);
        let mut s = self.flow_summary(fi, view, lifetime_s);
        if now <= self.warmup {
            // Closed before the window opened: nothing of it counts in the window.
            (s.goodput_mbps, s.throughput_mbps, s.goodput_efficiency) = (f64::NAN, f64::NAN, f64::NAN);
        }
        self.records.push(s);
        let (rec, hot) = (&mut self.flows[fi], &mut self.hot[fi]);
        rec.closed = rec.closed + view.cumulative(fi);
        rec.at_warmup = FlowCumulative::default();
        (rec.srtt_sum, rec.srtt_n) = (0.0, 0);
        (hot.drops, hot.marks, hot.window_bytes) = (0, 0, 0);
    }

    /// A streaming run: hand the closed flows' records on, in closing order, once
    /// [`RECORD_CHUNK`] have gathered (`all`: whatever is left).
    pub fn drain_records(&mut self, sink: &mut dyn RecordSink, all: bool) -> Result<(), String> {
        if self.records.is_empty() || (!all && self.records.len() < RECORD_CHUNK) {
            return Ok(());
        }
        let result = sink.flow_records(&self.records);
        self.records.clear();
        result
    }

    /// Write the recorder's parts of the results.
    pub fn fill_results(&self, view: &dyn NetworkView, r: &mut RunResults) {
        let window_s = secs(self.end - self.warmup);
        let flows: Vec<FlowSummary> =
            (0..view.n_flows().min(self.flows.len())).map(|fi| self.flow_summary(fi, view, window_s)).collect();
        let goodputs: Vec<f64> = flows.iter().map(|f| f.goodput_mbps).collect();
        r.jain_index = jain_index(&goodputs);
        r.flows = flows;
        r.flow_records = self.records.clone();
        let summary = |i: usize| self.links[i].summary(view.link(LinkId(i as u32)), self.warmup, self.end);
        r.bottleneck = summary(0);
        r.time_s = (0..self.bin_index).map(|i| secs(i as u64 * self.bin_ns)).collect();
        r.flow_series = self.flows.iter().take(view.n_flows()).map(|f| f.series.clone()).collect();
        r.bottleneck_series = self.links[0].series.clone();
        r.links = (1..self.links.len())
            .map(|i| LinkResult { name: self.links[i].name, summary: summary(i), series: self.links[i].series.clone() })
            .collect();
    }
}

impl Observer for Recorder {
    fn finish(&self, view: &dyn NetworkView, r: &mut RunResults) {
        self.fill_results(view, r);
    }

    #[inline]
    fn on_enqueue(&mut self, _now: Time, link: LinkId, _pkt: &Packet) {
        if let Some(l) = self.links.get_mut(link.0 as usize) {
            l.bin.arrivals += 1;
        }
    }

    #[inline]
    fn on_dequeue(&mut self, now: Time, link: LinkId, pkt: &Packet, sojourn_ns: u64, _sacks: &SackTable) {
        let in_window = now >= self.warmup;
        let Some(l) = self.links.get_mut(link.0 as usize) else { return };
        let len = pkt.wire_len as u64;
        l.bin.bytes += len;
        l.bin.sojourn_sum_ns += sojourn_ns as u128;
        l.bin.sojourn_n += 1;
        if let Some(c) = l.class_bin.get_mut(pkt.qclass as usize) {
            c.sum_ns += sojourn_ns as u128;
            c.n += 1;
        }
        if in_window {
            l.window_bytes += len;
            l.sojourn.record(sojourn_ns);
            if let Some(h) = l.class_sojourn.get_mut(pkt.qclass as usize) {
                h.record(sojourn_ns);
            }
        }
        if link.0 == 0 {
            let f = &mut self.hot[pkt.flow as usize];
            f.acc.bottleneck_bytes += len;
            if in_window {
                f.window_bytes += len;
            }
        }
    }

    #[inline]
    fn on_drop(&mut self, now: Time, link: LinkId, pkt: &Packet) {
        let in_window = self.in_window(now);
        let Some(l) = self.links.get_mut(link.0 as usize) else { return };
        l.bin.drops += 1;
        if in_window {
            l.window_drops += 1;
        }
        if link.0 == 0 {
            let f = &mut self.hot[pkt.flow as usize];
            f.acc.drops += 1;
            f.drops += 1;
        }
    }

    #[inline]
    fn on_mark(&mut self, now: Time, link: LinkId, flow: u32) {
        let in_window = self.in_window(now);
        let Some(l) = self.links.get_mut(link.0 as usize) else { return };
        l.bin.marks += 1;
        if in_window {
            l.window_marks += 1;
        }
        if link.0 == 0 {
            let f = &mut self.hot[flow as usize];
            f.acc.marks += 1;
            f.marks += 1;
        }
    }

    fn on_flow_open(&mut self, flow: u32) {
        self.ensure_flows(flow as usize + 1);
    }

    /// End of a bin: close every series' current value.
    fn on_sample(&mut self, now: Time, view: &dyn NetworkView) {
        let bin_start = self.bin_index as u64 * self.bin_ns;
        let width_s = secs(now - bin_start).max(1e-12);
        let mbps = |bytes: u64| bytes as f64 * 8.0 / width_s / 1e6;
        let warmup = self.warmup;
        for (fi, (rec, hot)) in self.flows.iter_mut().zip(self.hot.iter_mut()).enumerate().take(view.n_flows()) {
            let occupant = view.cumulative(fi);
            let cum = rec.closed + occupant;
            let prev = rec.prev;
            let acc = hot.acc;
            let sample = view.sample(fi);
            let segs = cum.segments_sent - prev.segments_sent;
            let rtt_n = cum.rtt_samples - prev.rtt_samples;
            let series = &mut rec.series;
            series.goodput_mbps.push(mbps(cum.bytes_delivered - prev.bytes_delivered));
            series.throughput_mbps.push(mbps(acc.bottleneck_bytes));
            series.srtt_ms.push(sample.srtt_ms);
            series.rtt_ms.push(if rtt_n > 0 {
                (cum.rtt_sum_us - prev.rtt_sum_us) as f64 / rtt_n as f64 / 1000.0
            } else {
                f64::NAN
            });
            series.cwnd.push(sample.cwnd);
            series.alpha.push(sample.alpha);
            series.pacing_rate_mbps.push(sample.pacing_rate_mbps);
            series.payload_bytes.push(if segs > 0 {
                (cum.payload_bytes_sent - prev.payload_bytes_sent) as f64 / segs as f64
            } else {
                f64::NAN
            });
            series.ce_packets.push(cum.ce_packets - prev.ce_packets);
            series.retransmits.push(cum.retransmits - prev.retransmits);
            series.drops.push(acc.drops);
            series.marks.push(acc.marks);
            // The CC's model state, kept only once the slot has one (allocates at its
            // first value, then once per bin; never per packet).
            let bin = series.goodput_mbps.len() - 1;
            let st = sample.cc;
            let opt = |v: Option<f64>| v.unwrap_or(f64::NAN);
            push_state(&mut series.bw_est_mbps, bin, opt(st.bw_bytes_per_s.map(|b| b as f64 * 8.0 / 1e6)), f64::NAN);
            push_state(&mut series.min_rtt_ms, bin, opt(st.min_rtt_us.map(|u| u as f64 / 1000.0)), f64::NAN);
            push_state(&mut series.pacing_gain, bin, opt(st.pacing_gain), f64::NAN);
            push_state(&mut series.inflight_hi, bin, opt(st.inflight_hi.map(f64::from)), f64::NAN);
            push_state(&mut series.inflight_lo, bin, opt(st.inflight_lo.map(f64::from)), f64::NAN);
            push_state(&mut series.cc_mode, bin, st.mode.unwrap_or(""), "");
            // iperf3-like srtt sampling for the summary's mean srtt.
            if bin_start >= warmup && sample.srtt_ms.is_finite() && now > view.flow_start(fi) {
                rec.srtt_sum += sample.srtt_ms;
                rec.srtt_n += 1;
            }
            rec.prev = cum;
            hot.acc = FlowBinAcc::default();
            if now <= warmup {
                rec.at_warmup = occupant;
            }
        }
        for (i, l) in self.links.iter_mut().enumerate() {
            l.close_bin(view.link(LinkId(i as u32)), bin_start, now, width_s);
        }
        self.bin_index += 1;
    }
}

/// Jain's fairness index of `x` (1 = perfectly fair).
pub fn jain_index(x: &[f64]) -> f64 {
    let n = x.len() as f64;
    let s: f64 = x.iter().sum();
    let s2: f64 = x.iter().map(|v| v * v).sum();
    if s2 == 0.0 {
        return f64::NAN;
    }
    s * s / (n * s2)
}

/// Append `x` for bin `bin` to an optional series: nothing while the series is empty
/// and `x` is the absent value; the first present value back-fills the earlier bins
/// with `absent`, so a started series has one value per bin.
fn push_state<T: Copy + PartialEq>(v: &mut Vec<T>, bin: usize, x: T, absent: T) {
    #[allow(clippy::eq_op)]
    let is_absent = x != x || x == absent; // NaN ≠ NaN
    if v.is_empty() && is_absent {
        return;
    }
    if v.len() < bin {
        v.resize(bin, absent);
    }
    v.push(x);
}
