//! What the emulator measures at its bottleneck, as the engine's `RunResults`.
//!
//! Bins of `bin_ns` from t0 (the instant forwarding started, the `t0_unix_ns` of the
//! ready file) up to `duration_ns`; the summary window is `[warmup_ns, duration_ns)`,
//! as in the engine's recorder. Everything is preallocated at start (one entry per
//! bin), so recording costs an index and an add.
//!
//! What a TUN-level observer cannot see is left for the front end, which reads it
//! from the endpoints (iperf3's JSON, `ss -tin`): the TCP goodput, sRTT, cwnd,
//! pacing rate and retransmissions are NaN (null in JSON) or 0 here.

use crate::packet::EmuPacket;
use l4slab_core::cc::EcnMode;
use l4slab_core::config::{FlowConfig, ScenarioConfig};
use l4slab_core::qdisc::{Ecn, QdiscPacket, QdiscStats};
use l4slab_core::results::{
    BottleneckSeries, BottleneckSummary, ClassSojourn, FlowSeries, FlowSummary, PacketCounts, QdiscStatsOut,
    RunResults, SojournTrace,
};
use l4slab_core::time::Time;
use l4slab_core::trace::histogram::DelayHistogram;

/// Most per-packet sojourn records kept with `trace_sojourn` (≈ 21 B each: 100 MB).
pub const MAX_TRACE_RECORDS: usize = 5_000_000;

#[derive(Default, Clone)]
struct FlowAcc {
    /// Per bin: L2 bytes leaving the bottleneck, payload bytes, drops, marks, CE-marked data packets.
    bytes: Vec<u64>,
    payload: Vec<u64>,
    data_pkts: Vec<u64>,
    drops: Vec<u64>,
    marks: Vec<u64>,
    ce: Vec<u64>,
    // Whole run.
    window_bytes: u64,
    window_payload: u64,
    data_sent: u64,
    payload_sent: u64,
    payload_sq: f64,
    ect_seen: bool,
    acks_sent: u64,
    drops_total: u64,
    marks_total: u64,
    ce_total: u64,
    ce_bytes: u64,
    /// When the flow's first bulk data segment (payload ≥ [`DATA_START_PAYLOAD`]) was
    /// read from its sender, ns since t0.
    data_start: Option<Time>,
    // The bottleneck's own view of every IP packet of the flow's forward path, whatever
    // the protocol (a command flow's only measurement), over the whole run (the tail
    // included: what the flow's receiver got):
    /// Packets and IP bytes offered by the sender, by the ECN codepoint they were sent
    /// with (Not-ECT, ECT(1), ECT(0), CE: the field's value).
    sent_ecn: [u64; 4],
    sent_ip_bytes: u64,
    /// Packets and IP bytes that left the bottleneck, those leaving CE, their sojourn.
    out_pkts: u64,
    out_ip_bytes: u64,
    out_ce: u64,
    out_ce_ip_bytes: u64,
    soj_sum_ns: u64,
    soj_max_ns: u64,
}

/// A segment with at least this much payload is bulk data: iperf3's control connection
/// (same address pair, its own port) carries only its cookie (37 B) and JSON parameters
/// and results (a few hundred bytes) before and after the test (iperf3 `iperf_api.c`).
pub const DATA_START_PAYLOAD: u16 = 512;

/// The bottleneck recorder.
pub struct Measure {
    bin_ns: u64,
    n_bins: usize,
    warmup_ns: u64,
    duration_ns: u64,
    rate_bps: u64,
    /// Bins whose backlog is filled in.
    bins_closed: usize,
    bytes: Vec<u64>,
    soj_sum_ns: Vec<u64>,
    soj_n: Vec<u64>,
    /// Per qdisc class (only when the qdisc has more than one, as the engine's
    /// recorder `trace/recorder.rs`): per bin, the sojourn sum (ns) and count of the
    /// packets of that class dequeued in the bin.
    class_soj_sum_ns: Vec<Vec<u64>>,
    class_soj_n: Vec<Vec<u64>>,
    backlog_bytes: Vec<u64>,
    backlog_packets: Vec<u64>,
    drops: Vec<u64>,
    marks: Vec<u64>,
    arrivals: Vec<u64>,
    window_bytes: u64,
    sojourn: DelayHistogram,
    by_class: Vec<DelayHistogram>,
    flows: Vec<FlowAcc>,
    trace: Option<SojournTrace>,
    /// Packet counts for `RunResults.packets`.
    pub counts: PacketCounts,
    /// Per qdisc class, up to the end of the traffic: packets dequeued, CE marks, drops.
    class_pkts: Vec<u64>,
    class_marks: Vec<u64>,
    class_drops: Vec<u64>,
    /// Flows run by the caller's commands (labelled `command`).
    commands: Vec<bool>,
}

impl Measure {
    pub fn new(cfg: &ScenarioConfig, classes: usize, commands: &[usize]) -> Self {
        let n_bins = cfg.duration_ns.div_ceil(cfg.bin_ns) as usize;
        let z = vec![0u64; n_bins];
        let flow = FlowAcc {
            bytes: z.clone(),
            payload: z.clone(),
            data_pkts: z.clone(),
            drops: z.clone(),
            marks: z.clone(),
            ce: z.clone(),
            ..Default::default()
        };
        let trace = cfg.trace_sojourn.then(|| {
            let cap = MAX_TRACE_RECORDS.min(
                (cfg.bottleneck.rate_bps as u128 * cfg.duration_ns as u128 / 8 / 64 / 1_000_000_000) as usize + 1024,
            );
            SojournTrace {
                time_s: Vec::with_capacity(cap),
                flow: Vec::with_capacity(cap),
                class: Vec::with_capacity(cap),
                sojourn_ms: Vec::with_capacity(cap),
            }
        });
        Measure {
            bin_ns: cfg.bin_ns,
            n_bins,
            warmup_ns: cfg.warmup_ns,
            duration_ns: cfg.duration_ns,
            rate_bps: cfg.bottleneck.rate_bps,
            bins_closed: 0,
            bytes: z.clone(),
            soj_sum_ns: z.clone(),
            soj_n: z.clone(),
            class_soj_sum_ns: if classes > 1 { vec![z.clone(); classes] } else { Vec::new() },
            class_soj_n: if classes > 1 { vec![z.clone(); classes] } else { Vec::new() },
            backlog_bytes: z.clone(),
            backlog_packets: z.clone(),
            drops: z.clone(),
            marks: z.clone(),
            arrivals: z,
            window_bytes: 0,
            sojourn: DelayHistogram::new(),
            by_class: (0..classes.max(1)).map(|_| DelayHistogram::new()).collect(),
            flows: vec![flow; cfg.flows.len()],
            trace,
            counts: PacketCounts::default(),
            class_pkts: vec![0; classes.max(1)],
            class_marks: vec![0; classes.max(1)],
            class_drops: vec![0; classes.max(1)],
            commands: (0..cfg.flows.len()).map(|i| commands.contains(&i)).collect(),
        }
    }

    #[inline]
    fn bin(&self, t: Time) -> Option<usize> {
        let b = (t / self.bin_ns) as usize;
        (b < self.n_bins).then_some(b)
    }

    #[inline]
    fn in_window(&self, t: Time) -> bool {
        t >= self.warmup_ns && t < self.duration_ns
    }

    /// Close the bins that ended by `t`, with the qdisc's backlog as of now.
    #[inline]
    pub fn advance(&mut self, t: Time, stats: &QdiscStats) {
        while self.bins_closed < self.n_bins && (self.bins_closed as u64 + 1) * self.bin_ns <= t {
            self.backlog_bytes[self.bins_closed] = stats.backlog_bytes;
            self.backlog_packets[self.bins_closed] = stats.backlog_packets;
            self.bins_closed += 1;
        }
    }

    /// A packet read from a sender's TUN (or made by a UDP source) at `t`.
    #[inline]
    pub fn on_sent(&mut self, p: &EmuPacket, t: Time) {
        self.counts.sent += 1;
        {
            let f = &mut self.flows[p.flow as usize];
            f.sent_ecn[p.ecn_in as usize & 3] += 1;
            f.sent_ip_bytes += p.ip_len() as u64;
        }
        if p.payload > 0 {
            self.counts.data += 1;
            let f = &mut self.flows[p.flow as usize];
            if f.data_start.is_none() && p.payload >= DATA_START_PAYLOAD {
                f.data_start = Some(t);
            }
            f.data_sent += 1;
            f.payload_sent += p.payload as u64;
            f.payload_sq += (p.payload as f64) * (p.payload as f64);
            f.ect_seen |= p.ecn_in.is_ect();
        } else {
            self.counts.acks += 1;
        }
    }

    /// A packet read from a receiver's TUN (ACKs).
    #[inline]
    pub fn on_ack(&mut self, flow: u16) {
        self.counts.sent += 1;
        self.counts.acks += 1;
        self.flows[flow as usize].acks_sent += 1;
    }

    /// A packet offered to the bottleneck qdisc at `t`.
    #[inline]
    pub fn on_arrival(&mut self, t: Time) {
        if let Some(b) = self.bin(t) {
            self.arrivals[b] += 1;
        }
    }

    /// A packet dropped by the bottleneck qdisc at `t`.
    #[inline]
    pub fn on_drop(&mut self, t: Time, flow: u16, class: u8) {
        self.counts.dropped += 1;
        if t < self.duration_ns {
            if let Some(c) = self.class_drops.get_mut(class as usize) {
                *c += 1;
            }
        }
        let bin = self.bin(t);
        let f = &mut self.flows[flow as usize];
        f.drops_total += 1;
        if let Some(b) = bin {
            self.drops[b] += 1;
            f.drops[b] += 1;
        }
    }

    /// A packet leaving the bottleneck at `t` (after its qdisc, CE mark applied).
    #[inline]
    pub fn on_dequeue(&mut self, t: Time, p: &EmuPacket) {
        let len = p.wire_len() as u64;
        let soj = t.saturating_sub(p.ts());
        let marked = p.ecn() == Ecn::Ce && p.ecn_in != Ecn::Ce;
        let win = self.in_window(t);
        let bin = self.bin(t);
        let f = &mut self.flows[p.flow as usize];
        if marked {
            f.marks_total += 1;
        }
        f.out_pkts += 1;
        f.out_ip_bytes += p.ip_len() as u64;
        if p.ecn() == Ecn::Ce {
            f.out_ce += 1;
            f.out_ce_ip_bytes += p.ip_len() as u64;
        }
        f.soj_sum_ns += soj;
        f.soj_max_ns = f.soj_max_ns.max(soj);
        if t < self.duration_ns {
            let c = (p.qclass as usize).min(self.class_pkts.len() - 1);
            self.class_pkts[c] += 1;
            self.class_marks[c] += marked as u64;
        }
        if p.ecn() == Ecn::Ce && p.payload > 0 {
            f.ce_total += 1;
            f.ce_bytes += p.payload as u64;
        }
        if let Some(b) = bin {
            self.bytes[b] += len;
            self.soj_sum_ns[b] += soj;
            self.soj_n[b] += 1;
            if let Some(c) = self.class_soj_n.get_mut(p.qclass as usize) {
                c[b] += 1;
                self.class_soj_sum_ns[p.qclass as usize][b] += soj;
            }
            f.bytes[b] += len;
            f.payload[b] += p.payload as u64;
            if p.payload > 0 {
                f.data_pkts[b] += 1;
            }
            if marked {
                self.marks[b] += 1;
                f.marks[b] += 1;
            }
            if p.ecn() == Ecn::Ce && p.payload > 0 {
                f.ce[b] += 1;
            }
        }
        if win {
            self.window_bytes += len;
            f.window_bytes += len;
            f.window_payload += p.payload as u64;
            self.sojourn.record(soj);
            if let Some(h) = self.by_class.get_mut(p.qclass as usize) {
                h.record(soj);
            }
        }
        if let Some(tr) = self.trace.as_mut() {
            if tr.time_s.len() < tr.time_s.capacity() && t < self.duration_ns {
                tr.time_s.push(t as f64 * 1e-9);
                tr.flow.push(p.flow as u32);
                tr.class.push(p.qclass);
                tr.sojourn_ms.push(soj as f64 * 1e-6);
            }
        }
    }

    /// Everything into the engine's results type. `qdisc` is the bottleneck's.
    /// Per flow, when its first bulk data segment left the sender (ns since t0):
    /// the real start of an iperf3 test, 3–5 RTTs after the client was launched
    /// (the control connection's handshake and parameter exchange come first).
    pub fn data_starts(&self) -> Vec<Option<Time>> {
        self.flows.iter().map(|f| f.data_start).collect()
    }

    /// Per flow, the bottleneck's own view of its forward path over the whole run, the
    /// 2-s tail included (`emu_meta.json` `flows`; what the flow's receiver got): what
    /// any stack is measured by. `ecn_codepoint`
    /// is the codepoint most of the flow's packets were sent with, a label from what
    /// was seen, not from what the scenario asked.
    pub fn flow_view(&self, commands: &[usize]) -> serde_json::Value {
        const NAMES: [&str; 4] = ["not-ect", "ect1", "ect0", "ce"];
        let flows: Vec<serde_json::Value> = self
            .flows
            .iter()
            .enumerate()
            .map(|(i, f)| {
                let sent: u64 = f.sent_ecn.iter().sum();
                let dominant = (0..4).max_by_key(|&k| (f.sent_ecn[k], std::cmp::Reverse(k))).unwrap_or(0);
                serde_json::json!({
                    "flow": i,
                    "command": commands.contains(&i),
                    "packets_sent": sent,
                    "ip_bytes_sent": f.sent_ip_bytes,
                    "sent_by_codepoint": {"not-ect": f.sent_ecn[0], "ect1": f.sent_ecn[1],
                        "ect0": f.sent_ecn[2], "ce": f.sent_ecn[3]},
                    "ecn_codepoint": if sent > 0 { serde_json::Value::from(NAMES[dominant]) } else { serde_json::Value::Null },
                    "packets_delivered": f.out_pkts,
                    "ip_bytes_delivered": f.out_ip_bytes,
                    "ce_delivered": f.out_ce,
                    "ce_ip_bytes_delivered": f.out_ce_ip_bytes,
                    "marks": f.marks_total,
                    "drops": f.drops_total,
                    "mean_sojourn_ms": if f.out_pkts > 0 {
                        serde_json::Value::from(f.soj_sum_ns as f64 / f.out_pkts as f64 * 1e-6)
                    } else { serde_json::Value::Null },
                    "max_sojourn_ms": if f.out_pkts > 0 {
                        serde_json::Value::from(f.soj_max_ns as f64 * 1e-6)
                    } else { serde_json::Value::Null },
                })
            })
            .collect();
        serde_json::Value::from(flows)
    }

    /// Per qdisc class (DualPI2: C, L), up to the end of the traffic: packets that left,
    /// CE marks, drops, and the sojourn statistics of the window (null for a class that
    /// sent nothing: an empty queue has no delay, not 0 ms).
    pub fn class_view(&self, classes: &[&str]) -> serde_json::Value {
        let v: Vec<serde_json::Value> = classes
            .iter()
            .enumerate()
            .map(|(c, name)| {
                let h = self.by_class.get(c).map(|h| h.stats_ms());
                let soj = match h {
                    Some(s) if s.count > 0 => {
                        serde_json::json!({"mean": s.mean, "p50": s.p50, "p99": s.p99, "max": s.max})
                    }
                    _ => serde_json::Value::Null,
                };
                serde_json::json!({"class": name, "packets": self.class_pkts.get(c), "marks": self.class_marks.get(c),
                    "drops": self.class_drops.get(c), "sojourn_ms": soj})
            })
            .collect();
        serde_json::Value::from(v)
    }

    pub fn results(
        mut self,
        cfg: &ScenarioConfig,
        kind: &str,
        stats: &QdiscStats,
        extra: Vec<(&'static str, f64)>,
        classes: &[&str],
    ) -> RunResults {
        self.advance(u64::MAX, stats);
        let nan = f64::NAN;
        let bin_s = self.bin_ns as f64 * 1e-9;
        let mbps = |bytes: u64, secs: f64| bytes as f64 * 8.0 / secs / 1e6;
        let window_s = (self.duration_ns - self.warmup_ns.min(self.duration_ns)) as f64 * 1e-9;
        let n = self.n_bins;
        // The last bin may be shorter than bin_ns.
        let bin_len = |b: usize| ((self.duration_ns - b as u64 * self.bin_ns).min(self.bin_ns)) as f64 * 1e-9;
        let bottleneck_series = BottleneckSeries {
            utilisation: (0..n).map(|b| self.bytes[b] as f64 * 8.0 / (self.rate_bps as f64 * bin_len(b))).collect(),
            sojourn_ms: (0..n)
                .map(|b| if self.soj_n[b] > 0 { self.soj_sum_ns[b] as f64 / self.soj_n[b] as f64 * 1e-6 } else { nan })
                .collect(),
            backlog_bytes: self.backlog_bytes.clone(),
            backlog_packets: self.backlog_packets.clone(),
            drops: self.drops.clone(),
            marks: self.marks.clone(),
            arrivals: self.arrivals.clone(),
            // Per sub-queue (DualPI2: C, L), in `sojourn_by_class` order; empty for a
            // single-queue qdisc, as the engine writes them.
            sojourn_class_ms: self
                .class_soj_n
                .iter()
                .zip(&self.class_soj_sum_ns)
                .map(|(n, sum)| {
                    (0..self.n_bins).map(|b| if n[b] > 0 { sum[b] as f64 / n[b] as f64 * 1e-6 } else { nan }).collect()
                })
                .collect(),
        };
        let mut flows = Vec::new();
        let mut flow_series = Vec::new();
        for (i, (fc, f)) in cfg.flows.iter().zip(&self.flows).enumerate() {
            let path = fc.path();
            let command = self.commands[i];
            let (kind_s, cc, udp) = match fc {
                _ if command => ("command", "command".to_string(), false),
                FlowConfig::Tcp(t) => ("tcp", t.cc.clone(), false),
                FlowConfig::Udp(_) => ("udp", "udp".to_string(), true),
                FlowConfig::UdpPrague(_) => ("udp_prague", "udp_prague".to_string(), true),
            };
            // ECT(0) is what a classic-ECN TCP sender sets (RFC 3168); a flow that sent
            // ECT(1) (an L4S sender, RFC 9331) or no ECT is not labelled rfc3168.
            let classic_ecn = f.sent_ecn[2] > 0 && f.sent_ecn[2] >= f.sent_ecn[1];
            // A UDP or command flow's goodput is the payload that left the bottleneck (no
            // endpoint tool reports it; a TCP flow's comes from iperf3).
            let udp = udp || command;
            let throughput = mbps(f.window_bytes, window_s);
            let goodput = if udp { mbps(f.window_payload, window_s) } else { nan };
            let mean_payload = if f.data_sent > 0 { f.payload_sent as f64 / f.data_sent as f64 } else { nan };
            let var =
                if f.data_sent > 0 { f.payload_sq / f.data_sent as f64 - mean_payload * mean_payload } else { nan };
            flows.push(FlowSummary {
                id: i as u32,
                start_s: path.start_ns as f64 * 1e-9,
                kind: kind_s.into(),
                cc: cc.into(),
                base_rtt_ms: path.rtt_ns as f64 * 1e-6,
                goodput_mbps: goodput,
                throughput_mbps: throughput,
                mean_srtt_ms: nan,
                queuing_delay_ms: nan,
                mean_rtt_ms: nan,
                bytes_delivered: if udp { f.payload.iter().sum() } else { 0 },
                packets_sent: f.data_sent,
                drops: f.drops_total,
                marks: f.marks_total,
                acks_sent: f.acks_sent,
                ecn_mode: if !udp && !command && f.ect_seen && classic_ecn { EcnMode::Rfc3168 } else { EcnMode::Off }
                    .name()
                    .into(),
                ce_packets: f.ce_total,
                ce_bytes: f.ce_bytes,
                mean_payload_bytes: mean_payload,
                payload_sd_bytes: var.max(0.0).sqrt(),
                mean_pacing_rate_mbps: nan,
                acks_per_packet: if f.data_sent > 0 && !udp { f.acks_sent as f64 / f.data_sent as f64 } else { nan },
                goodput_efficiency: if udp && f.window_bytes > 0 {
                    f.window_payload as f64 / f.window_bytes as f64
                } else {
                    nan
                },
                ..Default::default()
            });
            flow_series.push(FlowSeries {
                goodput_mbps: (0..n).map(|b| if udp { mbps(f.payload[b], bin_len(b)) } else { nan }).collect(),
                throughput_mbps: (0..n).map(|b| mbps(f.bytes[b], bin_len(b))).collect(),
                srtt_ms: vec![nan; n],
                rtt_ms: vec![nan; n],
                cwnd: vec![nan; n],
                alpha: vec![nan; n],
                pacing_rate_mbps: vec![nan; n],
                payload_bytes: (0..n)
                    .map(|b| if f.data_pkts[b] > 0 { f.payload[b] as f64 / f.data_pkts[b] as f64 } else { nan })
                    .collect(),
                ce_packets: f.ce.clone(),
                retransmits: vec![0; n],
                drops: f.drops.clone(),
                marks: f.marks.clone(),
                ..Default::default()
            });
        }
        let jain = {
            let g: Vec<f64> = flows.iter().map(|f| f.throughput_mbps).collect();
            let s: f64 = g.iter().sum();
            let s2: f64 = g.iter().map(|x| x * x).sum();
            if s2 > 0.0 {
                s * s / (g.len() as f64 * s2)
            } else {
                nan
            }
        };
        RunResults {
            duration_s: self.duration_ns as f64 * 1e-9,
            warmup_s: self.warmup_ns as f64 * 1e-9,
            bin_s,
            seed: cfg.seed,
            flows,
            bottleneck: BottleneckSummary {
                utilisation: self.window_bytes as f64 * 8.0 / (self.rate_bps as f64 * window_s),
                sojourn_ms: self.sojourn.stats_ms(),
                drops: stats.drops,
                marks: stats.marks,
                sojourn_by_class: classes
                    .iter()
                    .zip(&self.by_class)
                    .map(|(c, h)| ClassSojourn { class: (*c).to_string(), sojourn_ms: null_if_empty(h.stats_ms()) })
                    .collect(),
                qdisc: QdiscStatsOut::new(kind, stats, extra),
            },
            packets: self.counts.clone(),
            events: 0,
            time_s: (0..n).map(|b| b as f64 * bin_s).collect(),
            flow_series,
            bottleneck_series,
            sojourn_trace: self.trace.take(),
            jain_index: jain,
            ..Default::default()
        }
    }
}

/// A class that sent nothing has no sojourn: NaN (null in JSON), not 0 ms.
fn null_if_empty(s: l4slab_core::results::DelayStats) -> l4slab_core::results::DelayStats {
    if s.count > 0 {
        return s;
    }
    let nan = f64::NAN;
    l4slab_core::results::DelayStats { count: 0, mean: nan, p50: nan, p90: nan, p99: nan, p999: nan, max: nan }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::{write_udp, Pool};
    use serde_json::json;

    #[test]
    fn the_data_start_is_the_first_bulk_segment_read() {
        let cfg: ScenarioConfig = serde_json::from_value(json!({
            "duration_ns": 1_000_000_000u64,
            "bottleneck": {"rate_bps": 20_000_000u64, "qdisc": {"kind": "bfifo", "limit_bytes": 50_000}},
            "flows": [{"kind": "udp", "rtt_ns": 10_000_000, "rate_bps": 1_000_000, "payload_bytes": 100}],
        }))
        .unwrap();
        let mut m = Measure::new(&cfg, 1, &[]);
        let mut pool = Pool::new(4);
        let mut send = |m: &mut Measure, payload: usize, t: Time| {
            let mut buf = pool.take().unwrap();
            let n = write_udp(&mut buf, [10, 250, 0, 1], [10, 251, 0, 1], 40_000, 9, payload, Ecn::NotEct, 1);
            let p = EmuPacket::parse(buf, n, 0).ok().unwrap();
            m.on_sent(&p, t);
            pool.put(p.into_buf());
        };
        assert_eq!(m.data_starts(), vec![None]);
        send(&mut m, 0, 1_000); // a bare header: no data
        send(&mut m, 300, 2_000); // control-connection sized (iperf3's JSON parameters)
        assert_eq!(m.data_starts(), vec![None]);
        send(&mut m, DATA_START_PAYLOAD as usize, 3_000);
        send(&mut m, 1448, 4_000);
        assert_eq!(m.data_starts(), vec![Some(3_000)]);
    }

    /// The per-class bins: each sub-queue's mean sojourn of the packets dequeued in the
    /// bin, NaN in a bin where the class sent nothing; none for a single-queue qdisc.
    #[test]
    fn per_class_bins_are_each_class_mean_sojourn() {
        let cfg: ScenarioConfig = serde_json::from_value(json!({
            "duration_ns": 200_000_000u64,
            "bin_ns": 100_000_000u64,
            "bottleneck": {"rate_bps": 20_000_000u64, "qdisc": {"kind": "dualpi2"}},
            "flows": [{"kind": "udp", "rtt_ns": 10_000_000, "rate_bps": 1_000_000, "payload_bytes": 100}],
        }))
        .unwrap();
        let mut pool = Pool::new(8);
        // (dequeue time, sojourn, class): C = 0, L = 1 (DualPI2's `class_names`).
        let deq = [
            (10_000_000u64, 2_000_000u64, 0u8),
            (20_000_000, 4_000_000, 0),
            (30_000_000, 200_000, 1),
            (40_000_000, 400_000, 1),
            (150_000_000, 5_000_000, 0),
        ];
        let run = |classes: usize, pool: &mut Pool| {
            let mut m = Measure::new(&cfg, classes, &[]);
            for &(t, soj, class) in &deq {
                let mut buf = pool.take().unwrap();
                let n = write_udp(&mut buf, [10, 250, 0, 1], [10, 251, 0, 1], 40_000, 9, 100, Ecn::Ect1, 1);
                let mut p = EmuPacket::parse(buf, n, 0).ok().unwrap();
                p.set_enqueue_ts(t - soj);
                p.qclass = class;
                m.on_dequeue(t, &p);
                pool.put(p.into_buf());
            }
            let names: Vec<&str> = if classes > 1 { vec!["C", "L"] } else { vec!["all"] };
            m.results(&cfg, "dualpi2", &QdiscStats::default(), Vec::new(), &names)
        };
        let r = run(2, &mut pool);
        let s = &r.bottleneck_series;
        assert_eq!(s.sojourn_class_ms.len(), 2);
        let (c, l) = (&s.sojourn_class_ms[0], &s.sojourn_class_ms[1]);
        assert!((c[0] - 3.0).abs() < 1e-9, "C bin 0: {}", c[0]);
        assert!((l[0] - 0.3).abs() < 1e-9, "L bin 0: {}", l[0]);
        assert!((c[1] - 5.0).abs() < 1e-9, "C bin 1: {}", c[1]);
        assert!(l[1].is_nan(), "L sent nothing in bin 1: {}", l[1]);
        // The whole-queue bin is the mean over both classes: (2 + 4 + 0.2 + 0.4) / 4.
        assert!((s.sojourn_ms[0] - 1.65).abs() < 1e-9);
        // Serialised under the engine's key, read by the front end's `bottleneck_series_frame`.
        let v = serde_json::to_value(&r).unwrap();
        assert_eq!(v["bottleneck_series"]["sojourn_class_ms"][0][0].as_f64(), Some(3.0));
        let r1 = run(1, &mut pool);
        assert!(r1.bottleneck_series.sojourn_class_ms.is_empty());
        assert!(serde_json::to_value(&r1).unwrap()["bottleneck_series"].get("sojourn_class_ms").is_none());
    }

    /// An empty class has no sojourn (null, not 0 ms); the flow view labels the codepoint
    /// seen (an ECT(1) sender is `ect1`, not rfc3168) and counts per class.
    #[test]
    fn empty_class_is_null_and_labels_follow_the_codepoints_seen() {
        let cfg: ScenarioConfig = serde_json::from_value(json!({
            "duration_ns": 200_000_000u64,
            "bin_ns": 100_000_000u64,
            "bottleneck": {"rate_bps": 20_000_000u64, "qdisc": {"kind": "dualpi2"}},
            "flows": [{"kind": "tcp", "cc": "cubic", "rtt_ns": 10_000_000}],
        }))
        .unwrap();
        let mut pool = Pool::new(8);
        let mut m = Measure::new(&cfg, 2, &[0]);
        for (t, ecn, ce) in
            [(10_000_000u64, Ecn::Ect1, false), (20_000_000, Ecn::Ect1, true), (30_000_000, Ecn::Ect1, false)]
        {
            let mut buf = pool.take().unwrap();
            let n = write_udp(&mut buf, [10, 250, 0, 1], [10, 251, 0, 1], 40_000, 9, 1000, ecn, 1);
            let mut p = EmuPacket::parse(buf, n, 0).ok().unwrap();
            m.on_sent(&p, t - 1_000_000);
            p.set_enqueue_ts(t - 1_000_000);
            p.qclass = 1; // L only: C stays empty
            if ce {
                p.set_ecn(Ecn::Ce);
            }
            m.on_dequeue(t, &p);
            pool.put(p.into_buf());
        }
        let view = m.flow_view(&[0]);
        assert_eq!(view[0]["ecn_codepoint"], "ect1");
        assert_eq!(view[0]["sent_by_codepoint"]["ect1"], 3);
        assert_eq!((view[0]["packets_delivered"].as_u64(), view[0]["ce_delivered"].as_u64()), (Some(3), Some(1)));
        assert_eq!(view[0]["ip_bytes_delivered"], 3 * 1028);
        let classes = m.class_view(&["C", "L"]);
        assert!(classes[0]["sojourn_ms"].is_null(), "{}", classes[0]);
        assert_eq!((classes[1]["packets"].as_u64(), classes[1]["marks"].as_u64()), (Some(3), Some(1)));
        let r = m.results(&cfg, "dualpi2", &QdiscStats::default(), Vec::new(), &["C", "L"]);
        let v = serde_json::to_value(&r).unwrap();
        assert!(v["bottleneck"]["sojourn_by_class"][0]["sojourn_ms"]["mean"].is_null());
        assert_eq!(v["bottleneck"]["sojourn_by_class"][1]["sojourn_ms"]["mean"].as_f64(), Some(1.0));
        assert_eq!(v["flows"][0]["kind"], "command");
        assert_eq!(v["flows"][0]["ecn_mode"], "off"); // ECT(1) is not RFC 3168's codepoint
    }
}
