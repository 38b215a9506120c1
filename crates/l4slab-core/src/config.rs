//! The resolved scenario the engine runs.
//!
//! The Python front end parses the user's TOML (units as strings, `tc` syntax) and
//! hands the engine this structure as JSON, with every quantity already in base
//! units: nanoseconds, bits per second, bytes, packets. Field names end in their
//! unit. `deny_unknown_fields` makes a front-end/engine mismatch a clear error.

use crate::packet::Ecn;
use crate::schema::{check_params, ParamKind, ParamSpec};
use serde::{Deserialize, Serialize};
use serde_json::json;

fn default_bin_ns() -> u64 {
    100_000_000
}
fn default_burst_bytes() -> u64 {
    // iproute2's default HTB bucket on high-resolution-timer kernels (iproute2 tc/q_htb.c default burst).
    1600
}
fn default_access_rate_bps() -> u64 {
    10_000_000_000
}
pub(crate) fn default_mss() -> u32 {
    1448
}
fn default_init_cwnd() -> u32 {
    10
}
fn default_rto_min_ns() -> u64 {
    200_000_000
}
fn default_start_jitter_ns() -> u64 {
    1_000_000
}
fn default_tcp_ecn() -> u8 {
    2
}
fn default_tcp_ecn_option() -> u8 {
    2
}
/// Default receiver `rx-usecs`: the Intel i40e driver's `I40E_ITR_RX_DEF` =
/// `I40E_ITR_20K`, 50 µs (drivers/net/ethernet/intel/i40e/i40e_txrx.h: 20 000
/// interrupts/s), ns.
pub const DEFAULT_RX_USECS_NS: u64 = 50_000;

fn default_rx_usecs_ns() -> u64 {
    DEFAULT_RX_USECS_NS
}

fn default_true() -> bool {
    true
}

/// A whole simulation run.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScenarioConfig {
    /// Seed of every random choice in the run.
    #[serde(default)]
    pub seed: u64,
    /// Simulated time, ns.
    pub duration_ns: u64,
    /// Width of time-series bins, ns (default 100 ms).
    #[serde(default = "default_bin_ns")]
    pub bin_ns: u64,
    /// Start of the summary window, ns (default 0: the whole run, as the studies did).
    #[serde(default)]
    pub warmup_ns: u64,
    /// Each flow's start is delayed by a uniform random amount in [0, start_jitter_ns]
    /// drawn from the seed (scripts never start iperf clients at the same instant).
    /// This is the run's source of trial-to-trial variation; 0 makes the seed irrelevant.
    #[serde(default = "default_start_jitter_ns")]
    pub start_jitter_ns: u64,
    /// Keep a per-packet trace of bottleneck sojourn times.
    #[serde(default)]
    pub trace_sojourn: bool,
    pub bottleneck: BottleneckConfig,
    /// Mean lateness of the delay node's netem watchdog (hrtimer + softirq), ns: every
    /// flow's propagation crosses one netem tfifo per direction, whose packets leave
    /// when a watchdog late by Exp(mean) fires or the next enqueue runs the qdisc
    /// (`net/delay_line.rs`, `NetemNode`); 0 = exactly on time (off).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub delay_node_timer_latency_ns: u64,
    /// A shaped queue on the reverse path, shared by every flow's ACKs after its
    /// receiver's NIC and reverse propagation (unset: the reverse path never queues).
    /// Its `access_rate_bps` is unused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reverse_bottleneck: Option<BottleneckConfig>,
    /// The links beyond the bottleneck and how flows cross them (unset: the dumbbell,
    /// `net/dumbbell.rs`); see [`TopologyConfig`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub topology: Option<TopologyConfig>,
    #[serde(default)]
    pub flows: Vec<FlowConfig>,
    /// Traffic sources that open flows during the run (web requests) or add
    /// inelastic load (SYN floods); see `traffic::web`, `traffic::synflood`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sources: Vec<SourceConfig>,
    /// Capture packets at one point into pcapng (`trace/capture.rs`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capture: Option<CaptureConfig>,
}

/// A traffic source beyond the configured flows.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum SourceConfig {
    /// Web requests (DualQ paper Appendix C): Poisson arrivals, one TCP connection
    /// each, a bounded-Pareto response size, closed by the server.
    Web(WebSourceConfig),
    /// hping3-like SYN flood (S2 §5.3): inelastic SYNs at a rate and ECN codepoint.
    SynFlood(SynFloodConfig),
}

/// Response sizes of a web source: a Pareto distribution of shape `alpha`
/// truncated to [`min_bytes`, `max_bytes`] (DualQ paper Appendix C: α = 0.9, 1 kB–1 MB).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WebSizes {
    pub alpha: f64,
    pub min_bytes: u64,
    pub max_bytes: u64,
}

/// A web source: requests arrive as a Poisson process of `rate_per_s`; each opens
/// a new connection (handshake through the queues, 1 s SYN RTO) on which the server
/// sends one response of a size drawn from `sizes` and closes. The TCP knobs
/// (`cc`, `rtt_ns`, `mss`, `ecn`, ...) are those of a TCP flow and apply to every
/// connection; `start_ns`/`stop_ns` bound the arrivals; `bytes` is not allowed.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct WebSourceConfig {
    /// Mean request arrivals per second.
    pub rate_per_s: f64,
    pub sizes: WebSizes,
    /// Test drop injection: the first handshake packet crossing the bottleneck of
    /// these requests (0-based arrival index) is lost before it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub drop_handshake_of: Vec<u64>,
    #[serde(flatten)]
    pub tcp: TcpFlowConfig,
}

/// An inelastic SYN flood (`hping3 -S --flood`-like, S2 §5.3): SYNs of `syn_bytes`
/// on the wire, at `rate_bps` counted on those frames, every one with codepoint `ecn`;
/// nothing answers them (no handshake completes).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SynFloodConfig {
    #[serde(flatten)]
    pub path: PathConfig,
    pub rate_bps: u64,
    /// L2 frame bytes of each SYN as the qdisc counts them (default 54: Ethernet 14 +
    /// IPv4 20 + TCP 20 without options, hping3's bare SYN).
    #[serde(default = "default_syn_bytes")]
    pub syn_bytes: u32,
    #[serde(default)]
    pub ecn: Ecn,
}

fn default_syn_bytes() -> u32 {
    54
}

/// Most requests per second a web source may ask for (10^5: 200 times the paper's
/// highest load of 500/s; each request is a connection with its own state).
pub const MAX_WEB_RATE_PER_S: f64 = 1e5;
/// Most sources a scenario may list (each has its own random streams, `rng::Stream`).
pub const MAX_SOURCES: usize = 1024;

impl SourceConfig {
    fn validate(&self, duration_ns: u64) -> Result<(), String> {
        let path = match self {
            SourceConfig::Web(w) => &w.tcp.path,
            SourceConfig::SynFlood(f) => &f.path,
        };
        if path.rtt_ns > MAX_DURATION_NS || path.fwd_delay() > path.rtt_ns {
            return Err(format!(
                "rtt_ns: {} is out of range (allowed 0..={MAX_DURATION_NS}, ≥ fwd_delay_ns)",
                path.rtt_ns
            ));
        }
        if path.start_ns >= duration_ns {
            return Err(format!("start_ns: {} is not before the end of the run", path.start_ns));
        }
        if path.stop_ns.is_some_and(|s| s <= path.start_ns) {
            return Err("stop_ns: must be after start_ns".into());
        }
        match self {
            SourceConfig::Web(w) => {
                if !(w.rate_per_s > 0.0 && w.rate_per_s <= MAX_WEB_RATE_PER_S) {
                    return Err(format!(
                        "rate_per_s: {} is out of range (allowed > 0 ..= {MAX_WEB_RATE_PER_S})",
                        w.rate_per_s
                    ));
                }
                let z = &w.sizes;
                if !(z.alpha > 0.0 && z.alpha <= 100.0) {
                    return Err(format!("sizes.alpha: {} is out of range (allowed > 0 ..= 100)", z.alpha));
                }
                if z.min_bytes == 0 || z.min_bytes > z.max_bytes || z.max_bytes as f64 > BYTES_RANGE.1 {
                    return Err(format!(
                        "sizes: {}..{} bytes is not a range (allowed 1 ≤ min_bytes ≤ max_bytes ≤ 2^60)",
                        z.min_bytes, z.max_bytes
                    ));
                }
                if w.tcp.bytes.is_some() {
                    return Err("bytes: not allowed on a web source (sizes draws each response's size)".into());
                }
                if w.tcp.path.reverse {
                    return Err("reverse: not allowed on a web source (responses cross the bottleneck)".into());
                }
                w.tcp.validate(&tcp_flow_params())?;
            }
            SourceConfig::SynFlood(f) => {
                if f.rate_bps == 0 || f.rate_bps > MAX_RATE_BPS {
                    return Err(format!("rate_bps: {} is out of range (allowed 1..={MAX_RATE_BPS})", f.rate_bps));
                }
                if !(54..=1514).contains(&f.syn_bytes) {
                    return Err(format!("syn_bytes: {} is out of range (allowed 54..=1514)", f.syn_bytes));
                }
            }
        }
        Ok(())
    }
}

/// Where a packet capture listens.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CapturePoint {
    /// The bottleneck's egress, after its qdisc (marks applied, drops gone), as
    /// `tcpdump -i` on the router's outgoing interface.
    Bottleneck,
    /// A flow's sending host: its data out and its ACKs in.
    Sender,
    /// A flow's receiving host: its data in and its ACKs out.
    Receiver,
}

/// A packet capture (`tcpdump -w`): a point, a window and a bound.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CaptureConfig {
    pub point: CapturePoint,
    /// Only this flow (required at a host; all flows at the bottleneck if unset).
    #[serde(default)]
    pub flow: Option<u32>,
    /// Start of the window, ns.
    #[serde(default)]
    pub start_ns: u64,
    /// End of the window, ns (unset: the end of the run).
    #[serde(default)]
    pub stop_ns: Option<u64>,
    /// At most this many packets are kept (the rest are counted as missed).
    #[serde(default = "default_capture_max_packets")]
    pub max_packets: u64,
}

fn default_capture_max_packets() -> u64 {
    CAPTURE_MAX_PACKETS_DEFAULT
}

/// The packets a capture keeps unless the scenario says (≈ 150 MB of records).
pub const CAPTURE_MAX_PACKETS_DEFAULT: u64 = 1_000_000;

/// Upper bound of `capture.max_packets` (≈ 1.5 GB of packet copies).
pub const MAX_CAPTURE_PACKETS: u64 = 10_000_000;
/// Bytes the capture keeps per packet (a copy of the packet, its time and sojourn).
pub const CAPTURE_RECORD_BYTES: u64 = 152;

/// The shaped bottleneck: `htb rate R burst B` with one child qdisc.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BottleneckConfig {
    pub rate_bps: u64,
    /// HTB bucket (bytes); 1600 B is tc's default (iproute2 tc/q_htb.c default burst).
    #[serde(default = "default_burst_bytes")]
    pub burst_bytes: u64,
    /// Senders' NIC line rate: back-to-back packets leave a host this fast.
    #[serde(default = "default_access_rate_bps")]
    pub access_rate_bps: u64,
    /// Mean lateness of the router host's qdisc watchdog (hrtimer + softirq), ns:
    /// each firing is late by Exp(mean) (`net/host_timer.rs`); 0 = on time (off).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub timer_latency_ns: u64,
    pub qdisc: QdiscConfig,
    /// Propagation on the link's wire after its queue, ns (0: the next hop at once).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub delay_ns: u64,
    /// The link's rate over time: each step is a `tc class change ... htb rate R` at
    /// `at_ns` (`net/link_model.rs`); empty: `rate_bps` throughout.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rate_schedule: Vec<RateStep>,
    /// Random or bursty loss on the link's wire (netem `loss random` / `loss gemodel`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loss: Option<LossConfig>,
    /// Delay jitter on the wire (netem `delay D J`, D = `delay_ns`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jitter: Option<JitterConfig>,
    /// The wire releases packets in batches (Wi-Fi aggregation, DOCSIS grants).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aggregate: Option<AggregateConfig>,
}

impl BottleneckConfig {
    /// Whether the link changes packets' fate or timing beyond its queue and delay.
    pub fn has_link_model(&self) -> bool {
        !self.rate_schedule.is_empty() || self.loss.is_some() || self.jitter.is_some() || self.aggregate.is_some()
    }
}

/// One step of a link's rate schedule.
#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RateStep {
    pub at_ns: u64,
    pub rate_bps: u64,
}

/// Loss on a link's wire, drawn per packet from the link's own stream.
#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
#[serde(tag = "model", rename_all = "snake_case", deny_unknown_fields)]
pub enum LossConfig {
    /// netem `loss random P`: each packet lost with probability `p`.
    Random { p: f64 },
    /// netem `loss gemodel p r 1-h 1-k` (Gilbert-Elliott): `p` = P(good → bad),
    /// `r` = P(bad → good), `bad_loss` = 1-h, `good_loss` = 1-k, per packet.
    Gemodel { p: f64, r: f64, bad_loss: f64, good_loss: f64 },
}

/// netem's `delay D J`: each packet's propagation uniform in [D - J, D + J).
#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JitterConfig {
    pub jitter_ns: u64,
    /// true: packets leave by their own time (netem's tfifo: reordering); false: a
    /// packet never overtakes the one before it (netem with `rate`).
    #[serde(default)]
    pub reorder: bool,
}

/// Batched release: the wire sends at grants every `interval_ns` (from time 0), at
/// most `max_bytes` per grant; a packet waits for the first grant with room.
#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AggregateConfig {
    pub interval_ns: u64,
    pub max_bytes: u64,
}

/// A topology beyond the dumbbell: `kind` names a builder of `net::TOPOLOGIES`
/// (`parking_lot`, `chain`), the other keys are its parameters, which the builder
/// reads and checks (`net::check_topology`). Hop 0 is always `bottleneck`; a flow
/// crosses hops `hops[0]..=hops[1]` of its `PathConfig` (default all); its ACKs
/// return over its own reverse NIC (uncongested).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct TopologyConfig {
    pub kind: String,
    #[serde(flatten)]
    pub params: serde_json::Map<String, serde_json::Value>,
}

/// Most hops a topology may have (a route also crosses the flow's NIC:
/// `net::route::MAX_ROUTE_LINKS` less one).
pub const MAX_HOPS: usize = 5;

impl ScenarioConfig {
    /// What the config alone says of a topology: a flow's `hops` and `reverse` need
    /// one, and the dumbbell's reverse queue excludes one (the rest: `net::check_topology`).
    fn check_topology_use(&self) -> Result<(), String> {
        for (i, f) in self.flows.iter().enumerate() {
            let p = f.path();
            if self.topology.is_none() && p.hops.is_some() {
                return Err(format!("flows[{i}].hops: only with a topology (the dumbbell has one hop)"));
            }
            if self.topology.is_some() && p.reverse {
                return Err(format!("flows[{i}].reverse: only with the dumbbell (no topology)"));
            }
        }
        if self.topology.is_some() && self.reverse_bottleneck.is_some() {
            return Err("reverse_bottleneck: only with the dumbbell (no topology)".into());
        }
        Ok(())
    }
}

/// Every check of a shaped link described in full (a topology's hop): rates and
/// bucket, wire model and schedule, qdisc; errors prefixed with `name`.
pub fn check_shaped_link(name: &str, l: &BottleneckConfig, duration_ns: u64) -> Result<(), String> {
    check_link(name, l, false)?;
    check_link_model(name, l, duration_ns)?;
    l.qdisc.validate().map_err(|e| format!("{name}.qdisc.{e}"))
}

/// Bounds of a link's rate schedule, loss, jitter and aggregation.
fn check_link_model(name: &str, l: &BottleneckConfig, duration_ns: u64) -> Result<(), String> {
    if l.delay_ns > MAX_DURATION_NS {
        return Err(format!("{name}.delay_ns: {} is out of range (allowed 0..={MAX_DURATION_NS})", l.delay_ns));
    }
    let mut last = None;
    for (i, s) in l.rate_schedule.iter().enumerate() {
        if s.rate_bps == 0 || s.rate_bps > MAX_RATE_BPS {
            return Err(format!(
                "{name}.rate_schedule[{i}].rate_bps: {} is out of range (allowed 1..={MAX_RATE_BPS})",
                s.rate_bps
            ));
        }
        if s.at_ns > duration_ns || last.is_some_and(|t| s.at_ns < t) {
            return Err(format!(
                "{name}.rate_schedule[{i}].at_ns: {} is out of order (allowed: non-decreasing, at most duration_ns)",
                s.at_ns
            ));
        }
        last = Some(s.at_ns);
    }
    let prob = |field: &str, v: f64| {
        if (0.0..=1.0).contains(&v) {
            Ok(())
        } else {
            Err(format!("{name}.loss.{field}: {v} is out of range (allowed 0..=1, a probability)"))
        }
    };
    match l.loss {
        None => {}
        Some(LossConfig::Random { p }) => prob("p", p)?,
        Some(LossConfig::Gemodel { p, r, bad_loss, good_loss }) => {
            prob("p", p)?;
            prob("r", r)?;
            prob("bad_loss", bad_loss)?;
            prob("good_loss", good_loss)?;
        }
    }
    if let Some(j) = l.jitter {
        if j.jitter_ns > l.delay_ns {
            return Err(format!(
                "{name}.jitter.jitter_ns: {} is out of range (allowed 0..={}, the link's delay_ns)",
                j.jitter_ns, l.delay_ns
            ));
        }
    }
    if let Some(a) = l.aggregate {
        if a.interval_ns == 0 || a.interval_ns > MAX_DURATION_NS {
            return Err(format!(
                "{name}.aggregate.interval_ns: {} is out of range (allowed 1..={MAX_DURATION_NS})",
                a.interval_ns
            ));
        }
        if a.max_bytes < 1514 || a.max_bytes > MAX_BURST_BYTES {
            return Err(format!(
                "{name}.aggregate.max_bytes: {} is out of range (allowed 1514..={MAX_BURST_BYTES}: a full frame fits)",
                a.max_bytes
            ));
        }
    }
    Ok(())
}

fn is_zero(v: &u64) -> bool {
    *v == 0
}

/// The bottleneck's child qdisc (defined with the qdisc registry).
pub use crate::qdisc::QdiscConfig;

/// One sender→receiver pair.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum FlowConfig {
    Tcp(TcpFlowConfig),
    Udp(UdpFlowConfig),
    UdpPrague(UdpPragueFlowConfig),
}

impl FlowConfig {
    pub fn path(&self) -> &PathConfig {
        match self {
            FlowConfig::Tcp(t) => &t.path,
            FlowConfig::Udp(u) => &u.path,
            FlowConfig::UdpPrague(u) => &u.path,
        }
    }
}

/// Propagation and timing shared by every flow kind.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PathConfig {
    /// Base RTT, ns (propagation only).
    pub rtt_ns: u64,
    /// Sender→bottleneck propagation, ns; default half the RTT. The bottleneck→receiver
    /// hop is 0 and the reverse path carries the rest.
    #[serde(default)]
    pub fwd_delay_ns: Option<u64>,
    /// When the flow starts, ns.
    #[serde(default)]
    pub start_ns: u64,
    /// When the flow stops sending new data, ns (default: the end of the run).
    #[serde(default)]
    pub stop_ns: Option<u64>,
    /// The flow's sender sits on the receivers' side: its data crosses the reverse
    /// path (and `reverse_bottleneck`, if any) and its ACKs the forward bottleneck,
    /// so data flows both ways and ACKs queue behind data. `fwd_delay_ns` is still
    /// the sender-to-queue propagation.
    #[serde(default)]
    pub reverse: bool,
    /// With a topology: the first and last hop the flow's data crosses (hop 0 is
    /// `bottleneck`); unset: every hop.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hops: Option<[u32; 2]>,
}

impl PathConfig {
    /// A path of `rtt_ns`, every other field at its default (the unit tests' flows).
    #[cfg(test)]
    pub fn of_rtt(rtt_ns: u64) -> Self {
        PathConfig { rtt_ns, fwd_delay_ns: None, start_ns: 0, stop_ns: None, reverse: false, hops: None }
    }

    pub fn fwd_delay(&self) -> u64 {
        self.fwd_delay_ns.unwrap_or(self.rtt_ns / 2)
    }
    pub fn rev_delay(&self) -> u64 {
        self.rtt_ns - self.fwd_delay()
    }
}

/// Declares [`TcpFlowConfig`] and the schema of its knobs ([`tcp_flow_params`]) from
/// one list: each knob after `cc` and the flattened path is a field (its doc comment,
/// its serde default) and, after `=>`, its schema kind, one-line doc and range or
/// choices. The schema's default of a knob is the one serde gives the field
/// ([`TcpFlowConfig::defaults`]), so name, type and default are written once.
macro_rules! tcp_flow_config {
    (
        $(#[$smeta:meta])*
        pub struct TcpFlowConfig {
            $(#[$ccmeta:meta])*
            pub cc: String,
            $(#[$pathmeta:meta])*
            pub path: PathConfig,
            $(
                $(#[$meta:meta])*
                pub $name:ident: $ty:ty => $kind:ident, $doc:literal $(, $method:ident($($arg:expr),*))*;
            )*
        }
    ) => {
        $(#[$smeta])*
        pub struct TcpFlowConfig {
            $(#[$ccmeta])*
            pub cc: String,
            $(#[$pathmeta])*
            pub path: PathConfig,
            $(
                $(#[$meta])*
                pub $name: $ty,
            )*
        }

        /// The schema of [`TcpFlowConfig`]'s knobs after `cc` and the path, in field order.
        fn tcp_knob_params() -> Vec<ParamSpec> {
            use ParamKind::*;
            let defaults = TcpFlowConfig::defaults();
            vec![$(
                ParamSpec::new(stringify!($name), $kind, defaults[stringify!($name)].clone(), $doc)
                    $(.$method($($arg),*))*
            ),*]
        }
    };
}

tcp_flow_config! {
    /// A bulk TCP transfer (iperf3-like).
    #[derive(Clone, Debug, Serialize, Deserialize)]
    #[serde(deny_unknown_fields)]
    pub struct TcpFlowConfig {
        /// Congestion control by Linux name ("cubic", "reno").
        pub cc: String,
        #[serde(flatten)]
        pub path: PathConfig,
        /// Bytes to send (`iperf3 -n`); `None` for an unbounded transfer.
        #[serde(default)]
        pub bytes: Option<u64> => Bytes,
            "Bytes to send (iperf3 -n); unset = unbounded transfer.",
            range(BYTES_RANGE.0, BYTES_RANGE.1);
        /// `mss_cache` payload bytes (1448: 1500 MTU with timestamps).
        #[serde(default = "default_mss")]
        pub mss: u32 => Bytes,
            "mss_cache payload: 1448 = 1500-byte MTU less IP, TCP and timestamp option (tcp_mtu_to_mss).",
            range(MSS_RANGE.0, MSS_RANGE.1);
        /// Initial window, segments (`initcwnd`).
        #[serde(default = "default_init_cwnd")]
        pub init_cwnd: u32 => Packets,
            "Initial window, segments: TCP_INIT_CWND = 10 (include/net/tcp.h; RFC 6928), `ip route ... initcwnd`.",
            range(INIT_CWND_MIN, INIT_CWND_MAX);
        /// `tcp_rto_min_us` in ns.
        #[serde(default = "default_rto_min_ns")]
        pub rto_min_ns: u64 => TimeNs,
            "Minimum RTO: TCP_RTO_MIN = 200 ms (include/net/tcp.h), `ip route ... rto_min`.",
            range(1.0, RTO_MIN_MAX_NS);
        /// Receive window fixed at this many bytes, as `SO_RCVBUF` locks it (no receive-buffer
        /// autotuning); `None` = the receiver autotunes its buffer and advertises the window
        /// (`tcp/rcvbuf.rs`; Linux Documentation/networking/ip-sysctl.rst, tcp_rmem).
        #[serde(default)]
        pub rwnd_bytes: Option<u64> => Bytes,
            "Receive window fixed (SO_RCVBUF: no autotuning); unset = the receiver autotunes its buffer up to tcp_rmem[2] and advertises the window.";
        /// Receiver delayed ACKs (Linux default on); off = quick-ACK every segment.
        #[serde(default = "default_true")]
        pub delayed_ack: bool => Bool,
            "Receiver delayed ACKs (tcp_send_delayed_ack, net/ipv4/tcp_output.c); off = quick-ACK every segment.";
        /// The sender host has `fq` as its egress qdisc: every CC is paced, by fq at the
        /// skbs' EDT departure times (net/sched/sch_fq.c), with TCP Small Queues bounding
        /// what waits there; without it only CCs that need pacing (Prague, BBR) are paced,
        /// inside TCP (net/ipv4/tcp_output.c:tcp_pacing_check).
        #[serde(default)]
        pub fq_pacing: bool => Bool,
            "Sender has the fq qdisc: every CC paced by fq at EDT departure times, TSQ bounds the host queue (sch_fq.c, tcp_small_queue_check).";
        /// TSO/GSO on the sender (Linux: always on for TCP, commit 0a6b2a1dc2a2 "tcp: switch to
        /// GSO being always on", net/core/sock.c:sk_setup_caps, even with `ethtool -K gso off tso
        /// off`): a paced sender emits skbs of `tso_segs` segments back to back (Linux
        /// net/ipv4/tcp_output.c:tcp_tso_segs); off, every skb is one segment (a model knob).
        #[serde(default = "default_true")]
        pub tso: bool => Bool,
            "TSO/GSO on the sender (Linux TCP forces GSO even with ethtool -K gso/tso off: net/core/sock.c:sk_setup_caps); off = one segment per skb, a model knob.";
        /// GRO on the receiver's NIC (`ethtool -K DEV gro on`, Linux's default): segments
        /// arriving within one NAPI poll reach TCP merged and are ACKed as one (stretch
        /// ACKs; net/ipv4/tcp_offload.c:tcp_gro_receive, tcp/gro.rs). Off by default in
        /// the engine: see docs/fidelity-dualq.md and docs/fidelity-pam-hosts.md (host burstiness).
        #[serde(default)]
        pub gro: bool => Bool,
            "GRO on the receiver (ethtool -K gro on; Linux default on): segments of one NAPI poll merge (tcp_gro_receive) and get one ACK (stretch ACKs). Engine default off.";
        /// TSO deferral (net/ipv4/tcp_output.c:tcp_tso_should_defer; always on in Linux
        /// with TSO, `tcp_tso_win_divisor` 3): a partial skb waits for an ACK that opens
        /// room for a fuller one. Engine default off: see docs/fidelity-pam-hosts.md.
        #[serde(default)]
        pub tso_defer: bool => Bool,
            "TSO deferral with tso (tcp_tso_should_defer, tcp_tso_win_divisor 3; always on in Linux): a partial skb waits for a fuller one. Engine default off.";
        /// When deferral may wait for the head's ACK (`tcp_tso_should_defer`): `expected`,
        /// Linux since "tcp: fix tcp_tso_should_defer() vs large RTT" (Oct 2025, also in
        /// the stable trees): only if that ACK is expected (head sent + srtt) within
        /// min(srtt/2, 1 ms); `half_srtt`, the kernels before it (the PAM 2025 testbed's
        /// 5.15): once the head left srtt/2 ago. Default `expected`.
        #[serde(default)]
        pub tso_defer_ack: TsoDeferAck => Choice,
            "When tso_defer waits for the head's ACK (tcp_tso_should_defer): expected = only if it is due (head sent + srtt) within min(srtt/2, 1 ms), Linux since Oct 2025 ('tcp: fix tcp_tso_should_defer() vs large RTT', also in the stable trees); half_srtt = once the head left srtt/2 ago, the kernels before (PAM 2025's 5.15).",
            choices(&["expected", "half_srtt"]);
        /// The receiver NIC's RX interrupt throttle (`ethtool -C DEV rx-usecs N`), ns: the
        /// minimum interval between two interrupts (Intel ITR; tcp/gro.rs); with `gro`, what
        /// arrives within it of the last interrupt is merged, a packet on a quiet port is
        /// handed up at once.
        #[serde(default = "default_rx_usecs_ns")]
        pub rx_usecs_ns: u64 => TimeNs,
            "Receiver NIC RX interrupt throttle (ethtool -C rx-usecs; i40e default 50 us, Intel ITR: a minimum interval between interrupts): with gro, what arrives within it of the last interrupt is merged.",
            range(0.0, RX_USECS_MAX_NS);
        /// The sending host's NIC RX interrupt throttle (`ethtool -C DEV rx-usecs N` on the
        /// sender), ns: ACKs arriving within it of the last interrupt reach TCP together at
        /// the NAPI poll, each timestamped at the poll; an ACK on a quiet port at once
        /// (tcp/gro.rs). 0 (the engine default, as
        /// `rx-usecs 0`): each ACK is processed when it arrives.
        #[serde(default)]
        pub sender_rx_usecs_ns: u64 => TimeNs,
            "Sending host's NIC RX interrupt throttle (ethtool -C rx-usecs on the sender; i40e default 50 us, Intel ITR: a minimum interval between interrupts): ACKs arriving within it of the last interrupt are processed together at the NAPI poll; an ACK on a quiet port at once. 0 (engine default): each ACK at its arrival.",
            range(0.0, RX_USECS_MAX_NS);
        /// Module parameters of the congestion control (fields of its `XxxParams`,
        /// e.g. `{"segment_sizing": {"scheme": "logarithmic", "k": 4.0}}` for Prague).
        #[serde(default)]
        pub cc_params: Option<serde_json::Value> => Object,
            "Module parameters of the congestion control (/sys/module/tcp_*/parameters); see its descriptor.";
        /// Sender host's `net.ipv4.tcp_ecn` (0–5; Linux default 2: accept, don't request).
        #[serde(default = "default_tcp_ecn")]
        pub ecn: u8 => Int,
            "Sender's net.ipv4.tcp_ecn (Documentation/networking/ip-sysctl.rst; default 2: accept, don't request).",
            range(TCP_ECN_RANGE.0, TCP_ECN_RANGE.1);
        /// Receiver host's `net.ipv4.tcp_ecn`.
        #[serde(default = "default_tcp_ecn")]
        pub receiver_ecn: u8 => Int,
            "Receiver's net.ipv4.tcp_ecn (Documentation/networking/ip-sysctl.rst; default 2; the front end first applies the cc's receiver_defaults).",
            range(TCP_ECN_RANGE.0, TCP_ECN_RANGE.1);
        /// `net.ipv4.tcp_ecn_option` on both hosts (0–3; default 2: AccECN option on every packet).
        #[serde(default = "default_tcp_ecn_option")]
        pub ecn_option: u8 => Int,
            "net.ipv4.tcp_ecn_option on both hosts (ip-sysctl.rst, AccECN; default 2: option on every packet).",
            range(TCP_ECN_OPTION_RANGE.0, TCP_ECN_OPTION_RANGE.1);
        /// Congestion control of the receiving socket; it decides DCTCP-style echo and
        /// whether a listener accepts AccECN (Linux net/ipv4/tcp_dctcp.h:dctcp_ece_ack_update, RFC 9768 §3.1).
        /// Default `cc::LINUX_DEFAULT` ([`TcpFlowConfig::receiver_cc`]).
        #[serde(default)]
        pub receiver_cc: Option<String> => Choice,
            "Receiving socket's congestion control (DCTCP-style echo, AccECN acceptance); unset = Linux's default (as cc); the front end first applies the cc's receiver_defaults.",
            choices(crate::cc::KNOWN);
        /// Module parameters of the receiving socket's congestion control, as
        /// `cc_params` (e.g. `{"ecn_enable": true}` for a bbr2 receiver that echoes CE
        /// DCTCP-style: google/bbr v2alpha tcp_bbr2.c:bbr_cwnd_event).
        #[serde(default)]
        pub receiver_cc_params: Option<serde_json::Value> => Object,
            "Module parameters of the receiving socket's congestion control, as cc_params (e.g. bbr2 ecn_enable).";
        /// The receiving host's kernel where its AccECN receive path differs from
        /// mainline's: `l4steam` is the L4STeam tree (the PAM 2025 and coexistence-paper
        /// testbeds' kernels; the DualQ testbed's 5.10 AccECN receiver, ij1/linux-accecn,
        /// has no `received_ce_pending` and behaves as mainline here), whose `tcp_ecn_received_counters` saturates the unreported-CE count
        /// on every ECT or CE segment (`received_ce_pending = max(.. + pcount, 0xf)`), so
        /// `__tcp_accecn_process` asks for an immediate ACK (`ICSK_ACK_NOW`) on every
        /// slow-path segment whose timestamp advanced. Default `mainline`.
        #[serde(default)]
        pub receiver_kernel: ReceiverKernel => Choice,
            "Receiving host's kernel tree where its AccECN receive path differs: l4steam ACKs every ECT/CE segment whose timestamp advanced (L4STeam/linux tcp_input.c:tcp_ecn_received_counters saturates received_ce_pending).",
            choices(&["mainline", "l4steam"]);
        /// The receiving host's Linux version as far as its receive-buffer autotuning
        /// differs (`tcp/rcvbuf.rs`): `mainline` (≥ 6.16: `tcp_rcvbuf_grow`, `tcp_rmem[2]`
        /// 32 MiB, the measured len/truesize `scaling_ratio`); `6.6` (6.6–6.15: the
        /// `scaling_ratio`, the older DRS formula, 6 MiB); `5.15` and `5.10` (≤ 6.5:
        /// `tcp_adv_win_scale` 1, half the buffer is window, the older DRS formula, 6 MiB).
        /// It also says whether the receiver ACKs a full-sized PSH segment (each GSO
        /// skb's last) at once, as Linux 6.6 on does (`tcp_input.c:tcp_measure_rcv_mss`):
        /// `mainline` and `6.6` do, `5.15` and `5.10` (the testbeds' L4STeam trees) do not
        /// (`tcp/rcvbuf.rs:psh_pushes`). Default `mainline`.
        #[serde(default)]
        pub receiver_rcvbuf: RcvbufKernel => Choice,
            "Receiving host's Linux version for receive-buffer autotuning (tcp_rcv_space_adjust, tcp_rmem) and the ACK of a full-sized PSH segment: mainline = 6.16 on (tcp_rcvbuf_grow, tcp_rmem[2] 32 MiB, scaling_ratio); 6.6 = older DRS, scaling_ratio, 6 MiB; 5.15 / 5.10 = older DRS, tcp_adv_win_scale 1, 6 MiB. mainline and 6.6 ACK a full-sized PSH segment at once (tcp_input.c:tcp_measure_rcv_mss, Linux 6.6); the 5.15 / 5.10 L4STeam trees delay it.",
            choices(&["mainline", "6.6", "5.15", "5.10"]);
        /// How the receiving host's SACK compression times a held SACK
        /// (`tcp_input.c:__tcp_ack_snd_check`: after the first three dupACKs for one
        /// `rcv_nxt`, later SACKs wait behind an hrtimer): `slack`, the engine's
        /// default, sends it after the timer's 10-µs slack alone; `kernel` arms the
        /// timer as the receiving kernel does (`receiver_rcvbuf` names it): a share of
        /// min(receive RTT, srtt) capped at 1 ms, plus the slack — 33 % and 10 µs on
        /// `mainline` (Linux ≥ 6.19), 5 % and 100 µs on `6.6`, `5.15`, `5.10`. With
        /// either, a segment that extends or adds a SACK block at index ≥ 2 sends the
        /// held SACK first (`tcp_sack_new_ofo_skb`, Linux ≥ 5.8). Default `slack`
        /// (docs/fidelity-pam-kernel.md: `kernel` is the kernel backend's rule and
        /// moves its differential table closer, but three PAM calibration cells out).
        #[serde(default)]
        pub receiver_sack_compression: SackCompression => Choice,
            "SACK compression's hrtimer on the receiver (tcp_input.c:__tcp_ack_snd_check): slack = the 10-us slack alone (engine default); kernel = the receiving kernel's, by receiver_rcvbuf: 33 % of min(rcv RTT, srtt) capped at 1 ms + 10 us on mainline (>= 6.19), 5 % + 100 us before.",
            choices(&["slack", "kernel"]);
        /// The route feature `ecn_low` on both hosts (`ip route ... features ecn_low`;
        /// google/bbr v3 `RTAX_FEATURE_ECN_LOW` → `TCP_ECN_LOW`): CE marks signal a
        /// shallow-threshold AQM. BBRv3 uses ECN only with it. Default off.
        #[serde(default)]
        pub ecn_low: bool => Bool,
            "Route feature ecn_low (ip route ... features ecn_low; google/bbr v3 RTAX_FEATURE_ECN_LOW): BBRv3 uses ECN only with it.";
        /// Drop injection for tests: the first transmission of these segment numbers
        /// (0-based, in MSS units of sequence space) is lost before the bottleneck.
        #[serde(default)]
        pub drop_segments: Vec<u64> => Object,
            "Test drop injection: first transmissions of these segment numbers are lost before the bottleneck.";
    }
}

impl TcpFlowConfig {
    /// Every field at the default serde gives it (a flow naming only `cc` and
    /// `rtt_ns`), as JSON: the schema's defaults.
    fn defaults() -> serde_json::Value {
        let flow: TcpFlowConfig = serde_json::from_value(json!({"cc": crate::cc::LINUX_DEFAULT, "rtt_ns": 0}))
            .expect("a flow of cc and rtt_ns deserializes");
        serde_json::to_value(flow).expect("a flow serializes")
    }

    /// The receiving socket's congestion control: `receiver_cc`, else Linux's default.
    pub fn receiver_cc(&self) -> &str {
        self.receiver_cc.as_deref().unwrap_or(crate::cc::LINUX_DEFAULT)
    }

    /// Check this flow's knobs against `knobs` ([`tcp_flow_params`]: ranges, the
    /// `cc`/`receiver_cc` choices), then each socket's congestion-control parameters as
    /// `traffic::tcp::build` takes them: the one check of a TCP flow, for a scenario's
    /// flows and a web source's connections alike. The error names the field
    /// (`receiver_cc_params: beta: ...`); the caller puts the flow's or source's path in front.
    pub fn validate(&self, knobs: &[ParamSpec]) -> Result<(), String> {
        check_params(knobs, self)?;
        crate::cc::check(&self.cc, self.cc_params.as_ref()).map_err(|e| format!("cc_params: {e}"))?;
        crate::cc::check(self.receiver_cc(), self.receiver_cc_params.as_ref())
            .map_err(|e| format!("receiver_cc_params: {e}"))
    }
}

/// The head-ACK rule of TSO deferral (see [`TcpFlowConfig::tso_defer_ack`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TsoDeferAck {
    /// Defer only while the head's ACK is expected within min(srtt/2, 1 ms).
    #[default]
    Expected,
    /// Defer once the head left srtt/2 ago (Linux before October 2025).
    HalfSrtt,
}

/// Kernel tree of a flow's receiving host, where its receive path differs (see
/// [`TcpFlowConfig::receiver_kernel`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ReceiverKernel {
    /// Mainline Linux (torvalds/linux, v6.18 with AccECN).
    #[default]
    Mainline,
    /// L4STeam/linux (the Prague kernels of the PAM 2025 and coexistence-paper testbeds).
    L4steam,
}

/// How a flow's receiver times its compressed SACKs (see
/// [`TcpFlowConfig::receiver_sack_compression`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SackCompression {
    /// The hrtimer's slack alone (10 µs).
    #[default]
    Slack,
    /// The receiving kernel's share of the RTT and slack (`receiver_rcvbuf`).
    Kernel,
}

/// Linux version of a flow's receiving host as far as its receive-buffer autotuning
/// differs (see [`TcpFlowConfig::receiver_rcvbuf`], `tcp/rcvbuf.rs`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum RcvbufKernel {
    /// Linux 6.16 and later (the kernel backend's 7.2).
    #[default]
    #[serde(rename = "mainline")]
    Mainline,
    /// Linux 6.6 (the coexistence paper's L4STeam tree).
    #[serde(rename = "6.6")]
    V6_6,
    /// Linux 5.15 (the PAM 2025 testbed's L4STeam tree).
    #[serde(rename = "5.15")]
    V5_15,
    /// Linux 5.10 (the DualQ paper's testbed, 5.10.31 L4STeam).
    #[serde(rename = "5.10")]
    V5_10,
}

/// An unresponsive constant-bit-rate UDP source.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UdpFlowConfig {
    #[serde(flatten)]
    pub path: PathConfig,
    /// Sending rate in bit/s counted on L2 frames (as the bottleneck counts).
    pub rate_bps: u64,
    /// UDP payload bytes per datagram (1472 fills a 1500-byte MTU).
    pub payload_bytes: u32,
    /// IP ECN codepoint on every datagram.
    #[serde(default)]
    pub ecn: Ecn,
}

/// A scalable UDP sender: L4STeam's `udp_prague` algorithm (`cc/udp_prague.rs`),
/// ECT(1) datagrams answered one by one by per-packet ACKs carrying the receiver's
/// counters; bulk, or real-time frames (`fps` > 0).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UdpPragueFlowConfig {
    #[serde(flatten)]
    pub path: PathConfig,
    /// Largest UDP payload per datagram, B (the reference's `max_packet_size`, 1400);
    /// the algorithm shrinks packets at low rates, down to 150 B.
    #[serde(default = "default_prague_packet")]
    pub max_packet_bytes: u32,
    /// Frames per second of the real-time mode; 0: bulk.
    #[serde(default)]
    pub fps: u32,
    /// Real-time mode: the time each frame is paced over, ns (at most the frame
    /// interval; default the whole interval). A frame carries the pacing rate's bytes
    /// over this time.
    #[serde(default)]
    pub frame_budget_ns: Option<u64>,
    /// The sender's rate cap, bit/s of UDP payload (the reference's `max_rate`;
    /// default 100 Gbit/s).
    #[serde(default = "default_prague_max_rate")]
    pub max_rate_bps: u64,
    /// The sending program's wake-up lateness on its host, mean ns: an ACK that arrives
    /// while it sleeps is read Exp(mean) later with every ACK that came meanwhile
    /// (`traffic::udp_prague::ProgramReads`); 0: an ideal host that reads every datagram
    /// as it arrives.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub sender_wake_latency_ns: u64,
    /// The receiving program's, for the data it answers with ACKs.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub receiver_wake_latency_ns: u64,
    /// Instead of a mean: the sending program's wake-up latency as measured, ns, its
    /// quantiles at evenly spaced probabilities from 0 to 1 (2 to
    /// [`MAX_WAKE_QUANTILES`], non-decreasing); each wake-up draws from the
    /// piecewise-linear distribution through them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sender_wake_quantiles_ns: Vec<u64>,
    /// The receiving program's.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub receiver_wake_quantiles_ns: Vec<u64>,
    /// How late the sending program's pacing timer wakes it (a timed-out `ppoll`), mean
    /// ns, or measured quantiles as above; 0 and none: on time.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub sender_timer_latency_ns: u64,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sender_timer_quantiles_ns: Vec<u64>,
    /// How long the sending program is busy with each ACK it reads, mean ns (an
    /// exponential) or measured quantiles as above: it reads the next only then, and an
    /// ACK that arrives meanwhile waits for it, not for a wake-up
    /// (`traffic::udp_prague::ProgramReads`); 0 and none: every read takes no time.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub sender_busy_time_ns: u64,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sender_busy_quantiles_ns: Vec<u64>,
    /// The receiving program's, with each data packet it reads and answers.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub receiver_busy_time_ns: u64,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub receiver_busy_quantiles_ns: Vec<u64>,
    /// With each measured distribution above: the top step of its quantiles (the last
    /// 1/(n−1) of probability) resolved into quantiles of its own, at evenly spaced
    /// probabilities across it (2 to [`MAX_WAKE_QUANTILES`], non-decreasing). Without it a
    /// draw in that step is spread evenly up to the maximum, which one rare sample
    /// (a program's first reads take ms) can put far above the rest.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sender_wake_tail_quantiles_ns: Vec<u64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub receiver_wake_tail_quantiles_ns: Vec<u64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sender_timer_tail_quantiles_ns: Vec<u64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sender_busy_tail_quantiles_ns: Vec<u64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub receiver_busy_tail_quantiles_ns: Vec<u64>,
}

/// Most quantiles of a measured wake-up latency distribution (0.1 % steps).
pub const MAX_WAKE_QUANTILES: usize = 1001;

/// A program's wake-up (or timer) latency given as a mean or as measured quantiles (not both).
fn check_wake(what: &str, mean_ns: u64, quantiles: &[u64], tail: &[u64]) -> Result<(), String> {
    check_host_time(what, &format!("{what}_latency_ns"), mean_ns, quantiles, tail)
}

/// A time of a program's host (`mean_field`, or `{what}_quantiles_ns` with its optional
/// `{what}_tail_quantiles_ns`; not both).
fn check_host_time(what: &str, mean_field: &str, mean_ns: u64, quantiles: &[u64], tail: &[u64]) -> Result<(), String> {
    if !tail.is_empty() {
        if quantiles.is_empty() {
            return Err(format!(
                "{what}_tail_quantiles_ns: given without {what}_quantiles_ns (the tail resolves their top step)"
            ));
        }
        check_quantiles(&format!("{what}_tail_quantiles_ns"), tail)?;
    }
    check_timer_latency(mean_field, mean_ns)?;
    if quantiles.is_empty() {
        return Ok(());
    }
    let field = format!("{what}_quantiles_ns");
    if mean_ns > 0 {
        return Err(format!("{field}: given with {mean_field} (allowed: one of the two)"));
    }
    check_quantiles(&field, quantiles)
}

/// Measured quantiles: 2..=[`MAX_WAKE_QUANTILES`] non-decreasing values of at most 1 s.
fn check_quantiles(field: &str, quantiles: &[u64]) -> Result<(), String> {
    if !(2..=MAX_WAKE_QUANTILES).contains(&quantiles.len()) {
        return Err(format!(
            "{field}: {} values (allowed 2..={MAX_WAKE_QUANTILES} quantiles, probabilities 0 to 1 evenly spaced)",
            quantiles.len()
        ));
    }
    if let Some(w) = quantiles.windows(2).find(|w| w[1] < w[0]) {
        return Err(format!("{field}: {} after {} (allowed: non-decreasing quantiles)", w[1], w[0]));
    }
    let top = quantiles[quantiles.len() - 1];
    if top > MAX_TIMER_LATENCY_NS {
        return Err(format!("{field}: {top} is out of range (allowed 0..={MAX_TIMER_LATENCY_NS})"));
    }
    Ok(())
}

fn default_prague_packet() -> u32 {
    crate::cc::udp_prague::INIT_MTU as u32
}
fn default_prague_max_rate() -> u64 {
    crate::cc::udp_prague::MAX_RATE * 8
}

impl UdpPragueFlowConfig {
    /// The algorithm's parameters.
    pub fn params(&self) -> crate::cc::udp_prague::PragueParams {
        use crate::cc::udp_prague as up;
        let interval_ns = if self.fps > 0 { 1_000_000_000 / self.fps as u64 } else { 0 };
        up::PragueParams {
            max_packet_size: self.max_packet_bytes as u64,
            fps: self.fps as u8,
            frame_budget_us: (self.frame_budget_ns.unwrap_or(interval_ns).min(interval_ns) / 1000) as i32,
            max_rate: (self.max_rate_bps / 8).max(up::MIN_RATE),
            ..up::PragueParams::default()
        }
    }

    fn validate(&self) -> Result<(), String> {
        use crate::cc::udp_prague as up;
        if !(up::MIN_MTU as u32..=MAX_UDP_PAYLOAD_BYTES).contains(&self.max_packet_bytes) {
            return Err(format!(
                "max_packet_bytes: {} is out of range (allowed {}..={MAX_UDP_PAYLOAD_BYTES})",
                self.max_packet_bytes,
                up::MIN_MTU
            ));
        }
        if self.fps > 255 {
            return Err(format!("fps: {} is out of range (allowed 0..=255; 0 is bulk)", self.fps));
        }
        if let Some(b) = self.frame_budget_ns {
            if self.fps == 0 {
                return Err("frame_budget_ns: only with fps > 0 (real-time mode)".into());
            }
            let interval = 1_000_000_000 / self.fps as u64;
            if b < 1000 || b > interval {
                return Err(format!(
                    "frame_budget_ns: {b} is out of range (allowed 1000..={interval}, the frame interval at {} fps)",
                    self.fps
                ));
            }
        }
        check_wake(
            "sender_wake",
            self.sender_wake_latency_ns,
            &self.sender_wake_quantiles_ns,
            &self.sender_wake_tail_quantiles_ns,
        )?;
        check_wake(
            "receiver_wake",
            self.receiver_wake_latency_ns,
            &self.receiver_wake_quantiles_ns,
            &self.receiver_wake_tail_quantiles_ns,
        )?;
        check_wake(
            "sender_timer",
            self.sender_timer_latency_ns,
            &self.sender_timer_quantiles_ns,
            &self.sender_timer_tail_quantiles_ns,
        )?;
        check_host_time(
            "sender_busy",
            "sender_busy_time_ns",
            self.sender_busy_time_ns,
            &self.sender_busy_quantiles_ns,
            &self.sender_busy_tail_quantiles_ns,
        )?;
        check_host_time(
            "receiver_busy",
            "receiver_busy_time_ns",
            self.receiver_busy_time_ns,
            &self.receiver_busy_quantiles_ns,
            &self.receiver_busy_tail_quantiles_ns,
        )?;
        let min_bps = up::MIN_RATE * 8;
        if self.max_rate_bps < min_bps || self.max_rate_bps > up::MAX_RATE * 8 {
            return Err(format!(
                "max_rate_bps: {} is out of range (allowed {min_bps}..={})",
                self.max_rate_bps,
                up::MAX_RATE * 8
            ));
        }
        Ok(())
    }
}

/// `mss`: Linux clamps `TCP_MAXSEG` to `TCP_MIN_MSS` (88) .. `MAX_TCP_WINDOW`-ish
/// 65535 less headers; the engine accepts 88..=65000.
const MSS_RANGE: (f64, f64) = (88.0, 65_000.0);
/// `net.ipv4.tcp_ecn`: 0..=5 (Linux `Documentation/networking/ip-sysctl.rst`).
const TCP_ECN_RANGE: (f64, f64) = (0.0, 5.0);
/// `net.ipv4.tcp_ecn_option`: 0..=3 (AccECN series, `ip-sysctl.rst`).
const TCP_ECN_OPTION_RANGE: (f64, f64) = (0.0, 3.0);
/// `initcwnd` (`ip route ... initcwnd N`): at least one segment.
const INIT_CWND_MIN: f64 = 1.0;

/// Upper bound of `duration_ns` (and of every other time of the scenario): 10^15 ns,
/// about 11.6 days of simulated time. Far beyond any packet-level study (hours at
/// most), and it keeps every instant below 2^53 ns, so times convert to f64 seconds
/// exactly and sums of a few times never overflow the u64 clock.
pub const MAX_DURATION_NS: u64 = 1_000_000_000_000_000;
/// Lower bound of `bin_ns`: 1 µs. Narrower bins sample below one packet time at any
/// rate the engine models (1500 B take 1.2 µs even at 10 Gbit/s).
pub const MIN_BIN_NS: u64 = 1_000;
/// Upper bound of the number of flows: 16384, 32 times the 512-flow benchmark. The
/// per-flow series, TCP state and summaries scale with it; the memory bound below
/// is usually what stops a large count first.
pub const MAX_FLOWS: usize = 16_384;
/// Upper bound of every rate (bottleneck, access link, UDP source): 10 Tbit/s, beyond
/// any NIC; `tx_time` of a minimum-size packet stays ≥ 1 ns below it.
pub const MAX_RATE_BPS: u64 = 10_000_000_000_000;
/// `burst_bytes`: HTB's bucket is a u32 (`struct tc_htb_opt.buffer`, include/uapi/linux/pkt_sched.h).
pub const MAX_BURST_BYTES: u64 = u32::MAX as u64;
/// `payload_bytes` of a UDP datagram: at most 65507 (65535 less IPv4 and UDP headers).
pub const MAX_UDP_PAYLOAD_BYTES: u32 = 65_507;
/// `bytes` of a TCP transfer: 1 B .. 2^60 B (an exabyte; no run can send more, and it
/// leaves headroom in the u64 sequence space).
const BYTES_RANGE: (f64, f64) = (1.0, (1u64 << 60) as f64);
/// `init_cwnd`: at most 65535 segments (an initial window beyond that has no meaning
/// at the rates modelled and would burst gigabytes into the first RTT).
const INIT_CWND_MAX: f64 = 65_535.0;
/// `rx_usecs_ns`: at most the i40e's largest ITR, 8160 µs
/// (drivers/net/ethernet/intel/i40e/i40e_txrx.h `I40E_MAX_ITR`).
const RX_USECS_MAX_NS: f64 = 8_160_000.0;
/// `rto_min_ns`: at most TCP_RTO_MAX = 120 s (include/net/tcp.h).
const RTO_MIN_MAX_NS: f64 = 120e9;

/// The memory a run may preallocate: 4 GiB. A run's results cross to Python as JSON
/// and become DataFrames, which multiplies the engine's footprint several times, and
/// studies run one engine per core; 4 GiB of preallocation is already a workstation's
/// worth for one run. Ordinary runs need kilobytes to megabytes (60 s of 100 ms bins
/// for 2 flows: 150 kB), so anything above is a mistake (`duration=1e9s`, `bin=1ns`),
/// not a big experiment.
pub const MAX_PREALLOC_BYTES: u64 = 4 << 30;
/// Series the recorder keeps per flow slot (`results::FlowSeries`) and for the
/// bottleneck (`results::BottleneckSeries`), 8 bytes a value.
pub const PER_FLOW_SERIES: u64 = 12;
/// (DualPI2's two per-queue sojourn series, 16 B a bin, are left out: the per-flow
/// state and series dominate any run near the bound.)
pub const BOTTLENECK_SERIES: u64 = 7;
/// Bytes per bin of the model-state series of a flow whose CC reports one
/// (`results::FlowSeries`: five f64 series and `cc_mode`, a `&'static str`).
pub const CC_STATE_SERIES_BYTES: u64 = 5 * 8 + 16;
/// Bytes of one sojourn-trace record (`results::SojournTrace`: f64 + u32 + u8 + f64).
pub const SOJOURN_RECORD_BYTES: u64 = 8 + 4 + 1 + 8;
/// A generous bound of one flow's state beyond its series, for the preallocation bound
/// only (`config` cannot depend on the modules whose types make up a flow): the state
/// itself is derived in `memory::flow_state_bytes` (about 10 kB a TCP flow), and
/// `tests/memory_sizes.rs` checks that this bound stays above it with any congestion
/// control and GRO.
pub const PER_FLOW_STATE_BYTES: u64 = 64 << 10;

/// What a run of `cfg` preallocates, in bytes, by part: (series, sojourn trace, flow state).
/// Mirrors the sizes `sim.rs` and `trace/` ask for; saturating, never overflows.
pub fn prealloc_estimate(cfg: &ScenarioConfig) -> (u128, u128, u128) {
    let bins = cfg.duration_ns.div_ceil(cfg.bin_ns.max(1)) as u128;
    let flows = cfg.flows.len() as u128;
    let mut series = bins * (flows * PER_FLOW_SERIES as u128 + BOTTLENECK_SERIES as u128) * 8;
    // The recorder adds the model-state series for flows whose CC reports a state (BBR).
    for f in &cfg.flows {
        if let FlowConfig::Tcp(t) = f {
            if crate::cc::registry::find(&t.cc).is_some_and(|d| d.reports_state) {
                series = series.saturating_add(bins * CC_STATE_SERIES_BYTES as u128);
            }
        }
    }
    // As sim.rs sizes the sojourn trace: the packets of 1000 B the bottleneck carries in the run.
    let trace = if cfg.trace_sojourn {
        cfg.bottleneck.rate_bps as u128 * cfg.duration_ns as u128 / 8 / 1_000_000_000 / 1000
            * SOJOURN_RECORD_BYTES as u128
    } else {
        0
    };
    let capture = cfg.capture.as_ref().map_or(0, |c| c.max_packets as u128 * CAPTURE_RECORD_BYTES as u128);
    (series, trace + capture, flows * PER_FLOW_STATE_BYTES as u128)
}

/// `n` bytes for a message: "80 GB", "512 MB", "3 kB".
fn human_bytes(n: u128) -> String {
    let units = [(1e18, "EB"), (1e15, "PB"), (1e12, "TB"), (1e9, "GB"), (1e6, "MB"), (1e3, "kB")];
    let x = n as f64;
    for (scale, unit) in units {
        if x >= scale {
            return format!("{:.0} {unit}", x / scale);
        }
    }
    format!("{n} B")
}

/// Every knob of a TCP flow (`TcpFlowConfig`, with its flattened path fields):
/// engine name, kind, Linux default, the range `validate` enforces, and a one-line
/// doc naming the primary source of the default.
pub fn tcp_flow_params() -> Vec<ParamSpec> {
    use ParamKind::*;
    let mut params = vec![
        ParamSpec::new(
            "cc",
            Choice,
            json!(crate::cc::LINUX_DEFAULT),
            "Congestion control by Linux name (net.ipv4.tcp_congestion_control; default Linux's).",
        )
        .choices(crate::cc::KNOWN),
        ParamSpec::new(
            "rtt_ns",
            TimeNs,
            serde_json::Value::Null,
            "Base RTT, propagation only (netem delay on the path); required.",
        ),
        ParamSpec::new(
            "fwd_delay_ns",
            TimeNs,
            serde_json::Value::Null,
            "Sender-to-bottleneck propagation; unset = half of rtt_ns, the reverse path carries the rest.",
        ),
        ParamSpec::new("start_ns", TimeNs, json!(0), "When the flow starts (before the run's start jitter)."),
        ParamSpec::new(
            "stop_ns",
            TimeNs,
            serde_json::Value::Null,
            "When the sender stops sending new data; unset = end of run.",
        ),
        ParamSpec::new(
            "reverse",
            Bool,
            json!(false),
            "The sender sits on the receivers' side: data crosses reverse_bottleneck, ACKs the bottleneck.",
        ),
    ];
    params.extend(tcp_knob_params());
    params
}

impl ScenarioConfig {
    /// Checks the engine needs; the front end gives users friendlier messages first.
    pub fn validate(&self) -> Result<(), String> {
        if self.duration_ns == 0 {
            return Err("duration_ns: must be > 0".into());
        }
        if self.bin_ns < MIN_BIN_NS || self.bin_ns > MAX_DURATION_NS {
            return Err(format!(
                "bin_ns: {} is out of range (allowed {MIN_BIN_NS}..={MAX_DURATION_NS} ns, at least 1 µs)",
                self.bin_ns
            ));
        }
        if self.warmup_ns >= self.duration_ns {
            return Err(format!("warmup_ns: {} must be shorter than duration_ns {}", self.warmup_ns, self.duration_ns));
        }
        if self.start_jitter_ns > MAX_DURATION_NS {
            return Err(format!(
                "start_jitter_ns: {} is out of range (allowed 0..={MAX_DURATION_NS} ns)",
                self.start_jitter_ns
            ));
        }
        check_link("bottleneck", &self.bottleneck, true)?;
        check_link_model("bottleneck", &self.bottleneck, self.duration_ns)?;
        check_timer_latency("delay_node_timer_latency_ns", self.delay_node_timer_latency_ns)?;
        self.bottleneck.qdisc.validate().map_err(|e| format!("bottleneck.qdisc.{e}"))?;
        if let Some(r) = &self.reverse_bottleneck {
            check_link("reverse_bottleneck", r, false)?;
            check_link_model("reverse_bottleneck", r, self.duration_ns)?;
            r.qdisc.validate().map_err(|e| format!("reverse_bottleneck.qdisc.{e}"))?;
        }
        if self.flows.is_empty() && self.sources.is_empty() {
            return Err("flows: at least one flow or source is required".into());
        }
        self.check_topology_use()?;
        if self.flows.len() > MAX_FLOWS {
            return Err(format!("flows: {} flows is too many (at most {MAX_FLOWS})", self.flows.len()));
        }
        // The memory bound first: it names what a too-long run would cost.
        self.check_memory()?;
        if self.duration_ns > MAX_DURATION_NS {
            let max_s = MAX_DURATION_NS / 1_000_000_000;
            return Err(format!(
                "duration_ns: {} is out of range (allowed 1..={MAX_DURATION_NS} ns, {max_s} s)",
                self.duration_ns
            ));
        }
        if let Some(c) = &self.capture {
            self.check_capture(c)?;
        }
        let tcp_params = tcp_flow_params();
        for (i, f) in self.flows.iter().enumerate() {
            let p = f.path();
            if p.rtt_ns > MAX_DURATION_NS {
                return Err(format!("flows[{i}].rtt_ns: {} is out of range (allowed 0..={MAX_DURATION_NS})", p.rtt_ns));
            }
            if p.fwd_delay() > p.rtt_ns {
                return Err(format!("flows[{i}].fwd_delay_ns: exceeds rtt_ns"));
            }
            if p.start_ns >= self.duration_ns {
                return Err(format!("flows[{i}].start_ns: {} is not before the end of the run", p.start_ns));
            }
            if p.stop_ns.is_some_and(|s| s <= p.start_ns) {
                return Err(format!("flows[{i}].stop_ns: must be after start_ns"));
            }
            match f {
                FlowConfig::Tcp(t) => {
                    t.validate(&tcp_params).map_err(|e| format!("flows[{i}].{e}"))?;
                }
                FlowConfig::UdpPrague(u) => u.validate().map_err(|e| format!("flows[{i}].{e}"))?,
                FlowConfig::Udp(u) => {
                    if u.rate_bps == 0 || u.rate_bps > MAX_RATE_BPS {
                        return Err(format!(
                            "flows[{i}].rate_bps: {} is out of range (allowed 1..={MAX_RATE_BPS})",
                            u.rate_bps
                        ));
                    }
                    if u.payload_bytes == 0 || u.payload_bytes > MAX_UDP_PAYLOAD_BYTES {
                        return Err(format!(
                            "flows[{i}].payload_bytes: {} is out of range (allowed 1..={MAX_UDP_PAYLOAD_BYTES})",
                            u.payload_bytes
                        ));
                    }
                }
            }
        }
        if self.sources.len() > MAX_SOURCES {
            return Err(format!("sources: {} sources is too many (at most {MAX_SOURCES})", self.sources.len()));
        }
        for (i, src) in self.sources.iter().enumerate() {
            src.validate(self.duration_ns).map_err(|e| format!("sources[{i}].{e}"))?;
        }
        Ok(())
    }

    /// Refuses a run whose preallocation (`prealloc_estimate`) exceeds `MAX_PREALLOC_BYTES`,
    /// naming the field that drives it.
    fn check_capture(&self, c: &CaptureConfig) -> Result<(), String> {
        if c.max_packets == 0 || c.max_packets > MAX_CAPTURE_PACKETS {
            return Err(format!(
                "capture.max_packets: {} is out of range (allowed 1..={MAX_CAPTURE_PACKETS})",
                c.max_packets
            ));
        }
        if c.start_ns >= self.duration_ns {
            return Err(format!("capture.start_ns: {} is not before the end of the run", c.start_ns));
        }
        if c.stop_ns.is_some_and(|s| s <= c.start_ns) {
            return Err("capture.stop_ns: must be after capture.start_ns".into());
        }
        match (c.point, c.flow) {
            (CapturePoint::Sender | CapturePoint::Receiver, None) => {
                Err(format!("capture.flow: required at point {:?} (which host?)", c.point).to_lowercase())
            }
            (_, Some(f)) if f as usize >= self.flows.len() => {
                Err(format!("capture.flow: {f} is not a flow (allowed 0..={})", self.flows.len().saturating_sub(1)))
            }
            _ => Ok(()),
        }
    }

    fn check_memory(&self) -> Result<(), String> {
        let (series, trace, state) = prealloc_estimate(self);
        let limit = MAX_PREALLOC_BYTES as u128;
        if series + trace + state <= limit {
            return Ok(());
        }
        let n = self.flows.len();
        let flows = if n == 1 { "1 flow".to_string() } else { format!("{n} flows") };
        let limit_s = format!("at most {} GiB", MAX_PREALLOC_BYTES >> 30);
        if trace >= series && trace >= state && !self.trace_sojourn {
            return Err(format!(
                "capture.max_packets: {} packets need ~{} with the rest of the run; {limit_s}",
                self.capture.as_ref().map_or(0, |c| c.max_packets),
                human_bytes(series + trace + state)
            ));
        }
        if trace >= series && trace >= state {
            return Err(format!(
                "trace_sojourn: a per-packet trace of {} ns at {} bit/s needs ~{}; {limit_s} \
                 (turn trace_sojourn off or shorten the run)",
                self.duration_ns,
                self.bottleneck.rate_bps,
                human_bytes(series + trace + state)
            ));
        }
        if state > series {
            return Err(format!(
                "flows: {flows} need ~{} of state and series; {limit_s} (use fewer flows)",
                human_bytes(series + trace + state)
            ));
        }
        let bin = if self.bin_ns.is_multiple_of(1_000_000) {
            format!("{} ms", self.bin_ns / 1_000_000)
        } else {
            format!("{} ns", self.bin_ns)
        };
        Err(format!(
            "duration_ns: {} ns of {bin} bins for {flows} needs ~{} of series; {limit_s} \
             (use a wider bin or a shorter run)",
            self.duration_ns,
            human_bytes(series + trace + state)
        ))
    }
}

/// Bound of `timer_latency_ns`: a mean watchdog lateness of 1 s.
pub const MAX_TIMER_LATENCY_NS: u64 = 1_000_000_000;

/// The scenario's bounds as the schema publishes them (`limits`), by the lowercase name
/// of their constant: the front end refuses what the engine would, in its own words,
/// from these values (never from a copy); with them the defaults of the sizes a scenario
/// may leave unset (`capture_max_packets_default`, `udp_prague_max_packet_bytes_default`),
/// which the front end's memory estimate needs.
pub fn limits() -> serde_json::Value {
    serde_json::json!({
        "max_duration_ns": MAX_DURATION_NS,
        "min_bin_ns": MIN_BIN_NS,
        "max_flows": MAX_FLOWS,
        "max_sources": MAX_SOURCES,
        "max_rate_bps": MAX_RATE_BPS,
        "max_burst_bytes": MAX_BURST_BYTES,
        "max_udp_payload_bytes": MAX_UDP_PAYLOAD_BYTES,
        "max_web_rate_per_s": MAX_WEB_RATE_PER_S,
        "max_capture_packets": MAX_CAPTURE_PACKETS,
        "capture_max_packets_default": CAPTURE_MAX_PACKETS_DEFAULT,
        "udp_prague_max_packet_bytes_default": default_prague_packet(),
        "max_timer_latency_ns": MAX_TIMER_LATENCY_NS,
        "max_prealloc_bytes": MAX_PREALLOC_BYTES,
    })
}

/// Rates and bucket of a shaped link.
fn check_link(name: &str, l: &BottleneckConfig, check_access: bool) -> Result<(), String> {
    if l.rate_bps == 0 || l.rate_bps > MAX_RATE_BPS {
        return Err(format!("{name}.rate_bps: {} is out of range (allowed 1..={MAX_RATE_BPS})", l.rate_bps));
    }
    if check_access && (l.access_rate_bps == 0 || l.access_rate_bps > MAX_RATE_BPS) {
        return Err(format!(
            "{name}.access_rate_bps: {} is out of range (allowed 1..={MAX_RATE_BPS})",
            l.access_rate_bps
        ));
    }
    if l.burst_bytes > MAX_BURST_BYTES {
        return Err(format!("{name}.burst_bytes: {} is out of range (allowed 0..={MAX_BURST_BYTES})", l.burst_bytes));
    }
    check_timer_latency(&format!("{name}.timer_latency_ns"), l.timer_latency_ns)
}

/// A host's mean timer lateness (`net/host_timer.rs`), at most [`MAX_TIMER_LATENCY_NS`].
fn check_timer_latency(field: &str, mean_ns: u64) -> Result<(), String> {
    if mean_ns > MAX_TIMER_LATENCY_NS {
        return Err(format!(
            "{field}: {mean_ns} is out of range (allowed 0..={MAX_TIMER_LATENCY_NS}, a mean lateness of at most 1 s)"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tcp_flow(extra: serde_json::Value) -> ScenarioConfig {
        let mut flow = json!({"kind": "tcp", "cc": "cubic", "rtt_ns": 10_000_000});
        flow.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        serde_json::from_value(json!({
            "duration_ns": 1_000_000_000u64,
            "bottleneck": {"rate_bps": 10_000_000, "qdisc": {"kind": "pfifo", "limit_packets": 100}},
            "flows": [flow],
        }))
        .unwrap()
    }

    #[test]
    fn tcp_params_cover_every_knob_with_serde_defaults() {
        let params = tcp_flow_params();
        let cfg = tcp_flow(json!({}));
        let FlowConfig::Tcp(t) = &cfg.flows[0] else { unreachable!() };
        let v = serde_json::to_value(t).unwrap();
        let fields: Vec<&String> = v.as_object().unwrap().keys().collect();
        for f in &fields {
            assert!(params.iter().any(|p| p.name == f.as_str()), "{f} has no ParamSpec");
        }
        assert_eq!(params.len(), fields.len(), "a ParamSpec names no TcpFlowConfig field");
        for p in &params {
            if !p.default.is_null() && p.name != "cc" {
                assert_eq!(v[p.name], p.default, "default of {}", p.name);
            }
        }
    }

    #[test]
    fn validate_uses_the_declared_ranges() {
        assert!(tcp_flow(json!({})).validate().is_ok());
        for (k, bad, good) in [("mss", 87, 88), ("ecn", 6, 5), ("ecn_option", 4, 3), ("init_cwnd", 0, 1)] {
            let e = tcp_flow(json!({ k: bad })).validate().unwrap_err();
            assert!(e.starts_with(&format!("flows[0].{k}: ")), "{e}");
            assert!(tcp_flow(json!({ k: good })).validate().is_ok(), "{k}={good}");
        }
        let e = tcp_flow(json!({"cc": "bbr9"})).validate().unwrap_err();
        assert!(e.starts_with("flows[0].cc: \"bbr9\" is not allowed (allowed reno, cubic"), "{e}");
        let e = tcp_flow(json!({"receiver_cc": "x"})).validate().unwrap_err();
        assert!(e.starts_with("flows[0].receiver_cc: \"x\" is not allowed"), "{e}");
        let e = tcp_flow(json!({"cc_params": {"beta": 5000}})).validate().unwrap_err();
        assert_eq!(e, "flows[0].cc_params: beta: 5000 is out of range (allowed 1..=1023)");
    }

    fn with(cfg: ScenarioConfig, top: serde_json::Value) -> ScenarioConfig {
        let mut v = serde_json::to_value(cfg).unwrap();
        v.as_object_mut().unwrap().extend(top.as_object().unwrap().clone());
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn memory_estimate_counts_the_model_state_series_of_flows_that_report_one() {
        let bins = 1_000u128; // 100 s of 100 ms bins
        let est = |cc: &str| {
            let cfg = with(tcp_flow(json!({"cc": cc})), json!({"duration_ns": 100_000_000_000u64}));
            prealloc_estimate(&cfg).0
        };
        assert_eq!(est("bbr") - est("cubic"), bins * CC_STATE_SERIES_BYTES as u128, "BBR reports its model");
        assert_eq!(est("prague"), est("cubic"), "Prague reports no model state");
    }

    #[test]
    fn memory_bound_names_the_field_value_and_limit() {
        let mut cfg = with(tcp_flow(json!({})), json!({"duration_ns": 1_000_000_000_000_000_000u64}));
        cfg.flows.push(cfg.flows[0].clone());
        let e = cfg.validate().unwrap_err();
        assert_eq!(
            e,
            "duration_ns: 1000000000000000000 ns of 100 ms bins for 2 flows needs ~2 TB of series; \
             at most 4 GiB (use a wider bin or a shorter run)"
        );
        // Just under and over the bound: 4 GiB / (19 series * 8 B) bins of 1 µs, one flow.
        let bins_ok = (MAX_PREALLOC_BYTES - PER_FLOW_STATE_BYTES) / ((PER_FLOW_SERIES + BOTTLENECK_SERIES) * 8);
        let ok = with(tcp_flow(json!({})), json!({"bin_ns": 1000, "duration_ns": bins_ok * 1000}));
        assert!(ok.validate().is_ok());
        let over = with(tcp_flow(json!({})), json!({"bin_ns": 1000, "duration_ns": (bins_ok + 1) * 1000}));
        assert!(over.validate().unwrap_err().starts_with("duration_ns: "));
        let e = with(
            tcp_flow(json!({})),
            json!({"duration_ns": 1_000_000_000_000u64, "trace_sojourn": true,
            "bottleneck": {"rate_bps": 10_000_000_000u64, "qdisc": {"kind": "pfifo", "limit_packets": 100}}}),
        )
        .validate()
        .unwrap_err();
        assert!(e.starts_with("trace_sojourn: "), "{e}");
        let mut many = tcp_flow(json!({}));
        many.flows = vec![many.flows[0].clone(); MAX_FLOWS + 1];
        assert_eq!(many.validate().unwrap_err(), format!("flows: {} flows is too many (at most 16384)", MAX_FLOWS + 1));
    }

    #[test]
    fn every_unbounded_input_is_bounded() {
        let cases = [
            (json!({"bin_ns": 999}), "bin_ns: 999 is out of range"),
            (
                json!({"duration_ns": MAX_DURATION_NS + 1, "bin_ns": MAX_DURATION_NS}),
                "duration_ns: 1000000000000001 is out of range",
            ),
            (json!({"start_jitter_ns": u64::MAX}), "start_jitter_ns: "),
            (json!({"bottleneck": {"rate_bps": u64::MAX, "qdisc": {"kind": "pfifo"}}}), "bottleneck.rate_bps: "),
            (
                json!({"bottleneck": {"rate_bps": 1000, "access_rate_bps": 0, "qdisc": {"kind": "pfifo"}}}),
                "bottleneck.access_rate_bps: ",
            ),
            (
                json!({"bottleneck": {"rate_bps": 1000, "burst_bytes": u64::MAX, "qdisc": {"kind": "pfifo"}}}),
                "bottleneck.burst_bytes: ",
            ),
        ];
        for (top, want) in cases {
            let e = with(tcp_flow(json!({})), top.clone()).validate().unwrap_err();
            assert!(e.starts_with(want), "{top}: {e}");
        }
        for (k, bad) in [
            ("rtt_ns", json!(u64::MAX)),
            ("bytes", json!(0)),
            ("init_cwnd", json!(u32::MAX)),
            ("rto_min_ns", json!(u64::MAX)),
        ] {
            let e = tcp_flow(json!({ k: bad })).validate().unwrap_err();
            assert!(e.starts_with(&format!("flows[0].{k}: ")), "{e}");
        }
        let udp = |rate: u64, payload: u32| -> ScenarioConfig {
            with(
                tcp_flow(json!({})),
                json!({"flows": [{"kind": "udp", "rtt_ns": 1000, "rate_bps": rate, "payload_bytes": payload}]}),
            )
        };
        assert!(udp(1_000_000, 1472).validate().is_ok());
        assert!(udp(u64::MAX, 1472).validate().unwrap_err().starts_with("flows[0].rate_bps: "));
        assert!(udp(1_000_000, 70_000).validate().unwrap_err().starts_with("flows[0].payload_bytes: "));
    }
}
