//! What a run produces. Serialised to JSON for the Python front end, which turns
//! the series into pandas DataFrames and writes Parquet.
//!
//! Conventions: flows are identified by their index in the scenario's `flows` list;
//! values that do not exist (a mean over no samples) are NaN in Rust and `null` in JSON.

use crate::qdisc::QdiscStats;
use serde::Serialize;

/// A label of a fixed vocabulary ("tcp", a CC name, an ECN mode): a `&'static str`
/// for everything the engine writes, so closing one of a web run's thousands of
/// connections allocates no strings (an owned `String` only where a caller builds one).
pub type Label = std::borrow::Cow<'static, str>;

/// Distribution summary of a delay, ms.
#[derive(Clone, Debug, Default, Serialize)]
pub struct DelayStats {
    pub count: u64,
    pub mean: f64,
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    pub p999: f64,
    pub max: f64,
}

/// Per-flow summary over the measurement window.
#[derive(Clone, Debug, Default, Serialize)]
pub struct FlowSummary {
    /// Index of the flow in the scenario's `flows` list.
    pub id: u32,
    /// Actual start time (configured start plus the random start offset), s.
    pub start_s: f64,
    /// "tcp" or "udp".
    pub kind: Label,
    /// Congestion control ("udp" for UDP sources).
    pub cc: Label,
    pub base_rtt_ms: f64,
    /// Receiver in-order payload rate, Mbit/s (10^6).
    pub goodput_mbps: f64,
    /// This flow's L2 bytes leaving the bottleneck, Mbit/s.
    pub throughput_mbps: f64,
    /// Mean of the sender's smoothed RTT sampled once per bin (iperf3-like), ms.
    pub mean_srtt_ms: f64,
    /// The studies' "queuing delay": mean_srtt_ms − base RTT.
    pub queuing_delay_ms: f64,
    /// Mean of all per-ACK RTT samples, ms.
    pub mean_rtt_ms: f64,
    /// Segments retransmitted (fast, RACK, TLP and RTO).
    pub retransmits: u64,
    pub rto_count: u64,
    pub tlp_count: u64,
    /// Entries into fast recovery.
    pub recoveries: u64,
    /// Payload bytes delivered in order to the receiving application (whole run).
    pub bytes_delivered: u64,
    /// Data packets (or datagrams) sent, incl. retransmissions (whole run).
    pub packets_sent: u64,
    /// This flow's packets dropped at the bottleneck (whole run).
    pub drops: u64,
    /// This flow's packets CE-marked at the bottleneck (whole run).
    pub marks: u64,
    /// ACKs the receiver sent (whole run).
    pub acks_sent: u64,
    /// Flow completion time for sized transfers, s (time from start to the last byte acked).
    pub fct_s: Option<f64>,
    /// cwnd at the end of the run, packets.
    pub final_cwnd: u32,
    /// Negotiated ECN mode: "off", "rfc3168" or "accecn".
    pub ecn_mode: Label,
    /// CE-marked data packets and their payload bytes seen by the receiver (whole run).
    pub ce_packets: u64,
    pub ce_bytes: u64,
    /// Mean payload bytes per data packet sent (Prague's segment sizing shrinks it)
    /// and its standard deviation (whole run).
    pub mean_payload_bytes: f64,
    pub payload_sd_bytes: f64,
    /// Pacing rate at the moment each data packet was sent, averaged over the
    /// packets, Mbit/s (whole run; the input of S2's segment-sizing formulas).
    pub mean_pacing_rate_mbps: f64,
    /// ACKs per data packet received (the receiver's ACK ratio).
    pub acks_per_packet: f64,
    /// Goodput over the flow's L2 throughput at the bottleneck (header overhead).
    pub goodput_efficiency: f64,
}

/// Bottleneck summary over the measurement window, with `tc -s` counters for the run.
#[derive(Clone, Debug, Default, Serialize)]
pub struct BottleneckSummary {
    /// L2 bytes sent / (rate × window).
    pub utilisation: f64,
    pub sojourn_ms: DelayStats,
    pub drops: u64,
    pub marks: u64,
    /// Sojourn per sub-queue of the qdisc (DualPI2: "C" and "L"), over the window.
    pub sojourn_by_class: Vec<ClassSojourn>,
    /// `tc -s qdisc` statistics (whole run).
    pub qdisc: QdiscStatsOut,
}

/// Sojourn statistics of one sub-queue.
#[derive(Clone, Debug, Default, Serialize)]
pub struct ClassSojourn {
    pub class: String,
    pub sojourn_ms: DelayStats,
}

/// The counters `tc -s qdisc show` prints ([`QdiscStats`], its fields at this level),
/// plus qdisc-specific extras. Reads through to the counters (`out.drops`).
#[derive(Clone, Debug, Default, Serialize)]
pub struct QdiscStatsOut {
    pub kind: String,
    #[serde(flatten)]
    pub stats: QdiscStats,
    /// Qdisc-specific statistics by their `tc -s` names (e.g. DualPI2 `prob`).
    pub extra: std::collections::BTreeMap<String, f64>,
}

impl QdiscStatsOut {
    /// A qdisc's kind, counters and extras as the results carry them.
    pub fn new(kind: &str, stats: &QdiscStats, extra: Vec<(&str, f64)>) -> Self {
        QdiscStatsOut {
            kind: kind.to_string(),
            stats: stats.clone(),
            extra: extra.into_iter().map(|(k, v)| (k.to_string(), v)).collect(),
        }
    }
}

impl std::ops::Deref for QdiscStatsOut {
    type Target = QdiscStats;
    fn deref(&self) -> &QdiscStats {
        &self.stats
    }
}

/// Packet conservation: sent = delivered + dropped + in_flight (checked by the engine).
#[derive(Clone, Debug, Default, Serialize)]
pub struct PacketCounts {
    pub sent: u64,
    pub delivered: u64,
    pub dropped: u64,
    pub in_flight: u64,
    /// Of `sent`: TCP data segments and UDP datagrams (forward direction).
    pub data: u64,
    /// Of `sent`: pure ACKs, SYNs and SYN/ACKs.
    pub acks: u64,
}

/// Time series of one flow (one value per bin).
#[derive(Clone, Debug, Default, Serialize)]
pub struct FlowSeries {
    pub goodput_mbps: Vec<f64>,
    pub throughput_mbps: Vec<f64>,
    /// Sender srtt at the end of the bin, ms (NaN before the first sample).
    pub srtt_ms: Vec<f64>,
    /// Mean of the RTT samples taken in the bin, ms (NaN if none).
    pub rtt_ms: Vec<f64>,
    /// cwnd at the end of the bin, packets.
    pub cwnd: Vec<f64>,
    /// The CC's α at the end of the bin (DCTCP, Prague; NaN otherwise).
    pub alpha: Vec<f64>,
    /// The socket's pacing rate at the end of the bin, Mbit/s (`sk_pacing_rate`;
    /// computed whether or not the sender is paced).
    pub pacing_rate_mbps: Vec<f64>,
    /// Mean payload of the data segments sent in the bin, bytes (NaN if none).
    pub payload_bytes: Vec<f64>,
    /// CE-marked data packets the receiver got in the bin.
    pub ce_packets: Vec<u64>,
    pub retransmits: Vec<u64>,
    pub drops: Vec<u64>,
    pub marks: Vec<u64>,
    // The CC's model state (`cc::CcState`, BBR's `bbr_get_info`) at the end of the
    // bin. Kept only for a slot whose CC has one: empty (and not serialised) when
    // every value would be NaN / "", so runs of CCs without a model carry none;
    // once started, one value per bin (NaN / "" before the first and where absent).
    /// Bandwidth estimate, Mbit/s of payload (BBR's `bbr_bw`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub bw_est_mbps: Vec<f64>,
    /// The CC's own min-RTT estimate, ms.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub min_rtt_ms: Vec<f64>,
    /// Pacing gain (unitless).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub pacing_gain: Vec<f64>,
    /// Upper in-flight bound, packets (BBRv2/v3 `inflight_hi`; NaN when unset).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub inflight_hi: Vec<f64>,
    /// Short-term in-flight bound, packets (BBRv2/v3 `inflight_lo`; NaN when unset).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub inflight_lo: Vec<f64>,
    /// Mode / phase, e.g. "STARTUP", "PROBE_BW" ("" where none).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub cc_mode: Vec<&'static str>,
}

impl FlowSeries {
    /// The optional model-state series, present only for CCs that report one.
    pub const CC_STATE_SERIES: [&'static str; 6] =
        ["bw_est_mbps", "min_rtt_ms", "pacing_gain", "inflight_hi", "inflight_lo", "cc_mode"];
}

/// A measured link beyond the bottleneck: its name, summary and series, as
/// `bottleneck` and `bottleneck_series` are for the first.
#[derive(Clone, Debug, Default, Serialize)]
pub struct LinkResult {
    pub name: &'static str,
    pub summary: BottleneckSummary,
    pub series: BottleneckSeries,
}

/// Bottleneck time series (one value per bin).
#[derive(Clone, Debug, Default, Serialize)]
pub struct BottleneckSeries {
    pub utilisation: Vec<f64>,
    /// Mean sojourn of packets dequeued in the bin, ms (NaN if none).
    pub sojourn_ms: Vec<f64>,
    /// Backlog at the end of the bin.
    pub backlog_bytes: Vec<u64>,
    pub backlog_packets: Vec<u64>,
    pub drops: Vec<u64>,
    pub marks: Vec<u64>,
    /// Packets that arrived at the qdisc in the bin (for drop/mark probability).
    pub arrivals: Vec<u64>,
    /// Mean sojourn per sub-queue of packets dequeued in the bin, ms (NaN if none),
    /// one series per class in `bottleneck.sojourn_by_class` order (DualPI2: C, L);
    /// empty, and not serialised, for a single-queue qdisc, whose one class is
    /// `sojourn_ms`. The coexistence paper (Fig. 5) draws the L and C queue delay per second.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sojourn_class_ms: Vec<Vec<f64>>,
}

/// Per-packet sojourn trace (only with `trace_sojourn`).
#[derive(Clone, Debug, Default, Serialize)]
pub struct SojournTrace {
    /// Dequeue time, s.
    pub time_s: Vec<f64>,
    pub flow: Vec<u32>,
    /// Sub-queue index (see `bottleneck.sojourn_by_class`).
    pub class: Vec<u8>,
    pub sojourn_ms: Vec<f64>,
}

/// Everything a run produces.
#[derive(Clone, Debug, Default, Serialize)]
pub struct RunResults {
    pub duration_s: f64,
    pub warmup_s: f64,
    pub bin_s: f64,
    pub seed: u64,
    pub flows: Vec<FlowSummary>,
    pub bottleneck: BottleneckSummary,
    pub packets: PacketCounts,
    /// Events the engine processed.
    pub events: u64,
    /// Start time of each bin, s.
    pub time_s: Vec<f64>,
    pub flow_series: Vec<FlowSeries>,
    pub bottleneck_series: BottleneckSeries,
    /// The measured links after the bottleneck (the dumbbell's reverse queue, a
    /// chain's further hops), in the topology's order; empty (and absent from the
    /// JSON) when the bottleneck is the only one.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub links: Vec<LinkResult>,
    pub sojourn_trace: Option<SojournTrace>,
    /// Per-flow jain's index of goodputs over the window.
    pub jain_index: f64,
    /// Flows that closed and released their slot during the run (short flows of a
    /// traffic source), one summary each in closing order: `id` is the slot, rates
    /// are over the flow's own lifetime in the window. `flows` and the series
    /// describe slots (their last occupant; series aggregate all occupants).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub flow_records: Vec<FlowSummary>,
    /// One record per request of the web sources, in arrival order per source
    /// (those still open at the end included, with `fct_s` None).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub requests: Vec<RequestRecord>,
    /// The packet capture, when the scenario asked for one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub capture: Option<CaptureResult>,
    /// Files the measurement writers write beside the results (e.g. `capture.pcapng`):
    /// not serialised, the binding hands each over by name, as bytes.
    #[serde(skip)]
    pub files: Vec<OutputFile>,
}

/// A file a measurement writer writes beside a run's results.
#[derive(Clone, Debug)]
pub struct OutputFile {
    /// Its name in the run directory.
    pub name: &'static str,
    /// Its bytes, or why they could not be written.
    pub bytes: Result<Vec<u8>, String>,
}

/// Records per chunk a run hands to a [`RecordSink`]: a source or the recorder keeps at
/// most about this many finished records (plus those waiting for an earlier request
/// still open) before passing them on, so their memory does not grow with the run.
pub const RECORD_CHUNK: usize = 1024;

/// Where a streaming run (`crate::run_streaming`) puts its per-request and
/// per-closed-flow records as they are final, in bounded chunks, instead of keeping
/// them for `RunResults::requests` / `RunResults::flow_records` (which then stay
/// empty). Chunks arrive in the order the in-memory results would list them: each
/// web source's requests in arrival order (`source` says which), closed flows in
/// closing order. An error stops the run's streaming and is returned by the run.
pub trait RecordSink: Send {
    /// The next requests of web source `source` (its index in `sources`).
    fn requests(&mut self, source: u32, chunk: &[RequestRecord]) -> Result<(), String>;
    /// The next closed flows' summaries.
    fn flow_records(&mut self, chunk: &[FlowSummary]) -> Result<(), String>;
    /// The run ended: everything was handed over.
    fn finish(&mut self) -> Result<(), String> {
        Ok(())
    }
}

/// One web request (DualQ paper Appendix B, C): what the client measured.
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct RequestRecord {
    /// Index of the source in `sources`.
    pub source: u32,
    /// Arrival index within the source (0-based).
    pub id: u64,
    /// Flow slot the connection used.
    pub flow: u32,
    /// Arrival time: the client opens its socket (timing starts), s.
    pub start_s: f64,
    /// Response size drawn, bytes.
    pub size_bytes: u64,
    /// Response bytes the client received in order.
    pub bytes_received: u64,
    /// From just before the SYN to the client seeing the server's close (the FIN on
    /// the last segment); None if the response did not complete within the run.
    pub fct_s: Option<f64>,
    /// Base RTT of the connection's path, s.
    pub base_rtt_s: f64,
    /// One base RTT (the handshake) plus the size at the full bottleneck rate.
    pub ideal_fct_s: f64,
    /// `ideal_fct_s / fct_s` (NaN if incomplete).
    pub efficiency: f64,
    pub cc: Label,
    pub ecn_mode: Label,
    /// Retransmissions of the bottleneck-crossing handshake packet (1 s, 2 s, ... timeouts).
    pub syn_retransmits: u32,
    pub retransmits: u64,
    pub rto_count: u64,
    pub ce_packets: u64,
}

/// A run's packet capture: counts in the results, the pcapng file beside them
/// (`capture.pcapng` in [`RunResults::files`]).
#[derive(Clone, Debug, Serialize)]
pub struct CaptureResult {
    /// Packets written to the file.
    pub packets: u64,
    /// Packets that passed the point in the window after `max_packets` were kept.
    pub missed: u64,
}

/// The metric names each result table carries, derived from the serialised field
/// names of a `Default` instance (so they cannot drift from the structs):
/// `flow_summary`, `flow_series`, `bottleneck_summary`, `bottleneck_series`.
pub fn metric_names() -> serde_json::Value {
    fn names<T: Serialize + Default>() -> serde_json::Value {
        match serde_json::to_value(T::default()) {
            Ok(serde_json::Value::Object(m)) => m.keys().cloned().map(serde_json::Value::String).collect(),
            _ => unreachable!("results structs serialise to objects"),
        }
    }
    // The CC-state series are left out of a default instance's JSON (empty): named here.
    let mut flow_series = names::<FlowSeries>();
    if let serde_json::Value::Array(a) = &mut flow_series {
        a.extend(FlowSeries::CC_STATE_SERIES.iter().map(|n| serde_json::Value::String((*n).into())));
    }
    serde_json::json!({
        "flow_summary": names::<FlowSummary>(),
        "flow_series": flow_series,
        "bottleneck_summary": names::<BottleneckSummary>(),
        "bottleneck_series": names::<BottleneckSeries>(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metric_names_list_the_struct_fields() {
        let m = metric_names();
        let has = |t: &str, f: &str| m[t].as_array().unwrap().iter().any(|v| v == f);
        assert!(has("flow_summary", "goodput_mbps") && has("flow_summary", "fct_s"));
        assert!(has("flow_series", "cwnd") && has("bottleneck_series", "arrivals"));
        assert!(has("bottleneck_summary", "sojourn_by_class"));
        assert_eq!(m["flow_series"].as_array().unwrap().len(), 12 + 6);
        assert!(has("flow_series", "bw_est_mbps") && has("flow_series", "cc_mode"));
        // A series that is never filled is not serialised (CCs without a model state).
        let v = serde_json::to_value(FlowSeries::default()).unwrap();
        assert!(v.get("bw_est_mbps").is_none() && v.get("cc_mode").is_none() && v.get("cwnd").is_some());
    }
}
