//! Web traffic as the DualQ paper (De Schepper et al., "Dual Queue Coupled AQM",
//! Appendix C) generated it: requests arrive as a Poisson process, every request
//! opens a new TCP connection, and the server sends one response, of a size drawn
//! from a Pareto distribution (α = 0.9, 1 kB to 1 MB), then closes. The client
//! logs the completion time "started just before opening the TCP socket, and
//! stopped after the connection close by the server was detected" (Appendix B).
//!
//! One request's timeline, as on the paper's testbed where the bottleneck carries
//! the downloads (server → client):
//! 1. t0: the client sends its SYN; it crosses the uncongested client → server
//!    path (the reverse propagation, `PathConfig::rev_delay`).
//! 2. The server answers with its SYN-ACK, which crosses the bottleneck queue: it
//!    can be dropped or CE-marked, is ECN-capable only where the CC makes it so
//!    (Linux include/net/tcp_ecn.h:tcp_ecn_send_synack: `INET_ECN_xmit` only if
//!    `tcp_ca_needs_ecn`, i.e. Prague/DCTCP, never for classic-ECN CUBIC, RFC 3168
//!    §6.1.1), and is retransmitted after `TCP_TIMEOUT_INIT` = 1 s, doubling
//!    (RFC 6298 §2.1; Linux net/ipv4/inet_connection_sock.c:reqsk_timer_handler).
//! 3. The client's ACK carrying the request crosses back; the server then sends
//!    the response with the congestion control of the source (slow start from
//!    IW10) and closes: its FIN rides on the last segment
//!    (net/ipv4/tcp_output.c:tcp_send_fin appends FIN to the write-queue tail).
//! 4. The client detects the close when the last byte (and FIN) arrives in order.
//!
//! A lone small response thus takes 2 RTTs (handshake, then request/response).
//!
//! Mapping onto the engine's TCP: the data sender (`TcpSender`, slot side 0,
//! whose packets take the forward route through the bottleneck) is the server; its
//! connect machinery emits the bottleneck-crossing handshake packet with the same
//! size, ECN codepoint rule and 1 s doubling timer as the SYN-ACK above, and the
//! receiver's answer plays the client's ACK + request. The client's own SYN (in
//! step 1) is modelled by its propagation only: `WebServer` starts its socket one
//! reverse one-way delay after the arrival. Simplification: that SYN does not
//! cross `reverse_bottleneck` (the paper's client → server path never queued), and
//! ECN negotiation runs from the server's side (both ends use the source's
//! settings, so the negotiated mode is the same).
//!
//! Slots: a finished connection keeps its slot until none of its packets is left
//! in the network (`FlowOpener::is_quiet`: stray retransmissions or ACKs must not
//! reach the next connection of the slot, the job TIME_WAIT does for a 4-tuple);
//! at the next arrival after that the source records it and releases the slot.
//! Random streams: arrivals (`Stream::Arrivals`), sizes (`Stream::Sizes`) and each
//! connection's CC (`Stream::Connection`) come from the seed, independent of one
//! another and of slot reuse.

use super::tcp::{Response, TcpReceiverEndpoint, TcpSenderEndpoint};
use super::{DropInjection, Endpoint, EndpointBuffers, FlowOpener, FlowSpec, Measured, Reusable, TrafficSource};
use crate::config::{WebSizes, WebSourceConfig};
use crate::packet::{Outbox, Packet, PacketKind};
use crate::results::{FlowSummary, RecordSink, RequestRecord, RunResults, RECORD_CHUNK};
use crate::rng::{self, SimRng, Stream};
use crate::tcp::receiver::ReceiverBuffers;
use crate::tcp::sender::SenderBuffers;
use crate::time::{secs, Time, NS_PER_SEC};
use crate::trace::{FlowCumulative, FlowSample};

/// A Poisson process's next gap: exponential with mean `1/rate_per_s` seconds, in ns.
pub fn exp_gap_ns(rng: &mut SimRng, rate_per_s: f64) -> u64 {
    let s = -rng.unit_open0().ln() / rate_per_s;
    (s * NS_PER_SEC as f64).round().max(1.0) as u64
}

/// A draw from the Pareto distribution of shape α truncated to [L, H] (the
/// bounded Pareto), by inverting its CDF
/// F(x) = (1 − (L/x)^α) / (1 − (L/H)^α): x = L · (1 − u (1 − (L/H)^α))^(−1/α).
pub fn bounded_pareto(rng: &mut SimRng, z: &WebSizes) -> u64 {
    bounded_pareto_with(rng, z, pareto_tail(z))
}

/// (L/H)^α, the part of [`bounded_pareto`]'s inversion that depends only on the
/// distribution (a source computes it once, not per request).
fn pareto_tail(z: &WebSizes) -> f64 {
    (z.min_bytes as f64 / z.max_bytes as f64).powf(z.alpha)
}

fn bounded_pareto_with(rng: &mut SimRng, z: &WebSizes, tail: f64) -> u64 {
    let l = z.min_bytes as f64;
    let u = 1.0 - rng.unit_open0(); // [0, 1)
    let x = l * (1.0 - u * (1.0 - tail)).powf(-1.0 / z.alpha);
    (x.round() as u64).clamp(z.min_bytes, z.max_bytes)
}

/// Mean of the bounded Pareto (α ≠ 1):
/// E[X] = L^α / (1 − (L/H)^α) · α/(α − 1) · (L^(1−α) − H^(1−α)).
pub fn bounded_pareto_mean(z: &WebSizes) -> f64 {
    let (l, h, a) = (z.min_bytes as f64, z.max_bytes as f64, z.alpha);
    if (a - 1.0).abs() < 1e-12 {
        return l * h / (h - l) * (h / l).ln();
    }
    l.powf(a) / (1.0 - (l / h).powf(a)) * a / (a - 1.0) * (l.powf(1.0 - a) - h.powf(1.0 - a))
}

/// CDF of the bounded Pareto at `x` bytes.
pub fn bounded_pareto_cdf(z: &WebSizes, x: f64) -> f64 {
    let (l, h, a) = (z.min_bytes as f64, z.max_bytes as f64, z.alpha);
    if x < l {
        0.0
    } else if x >= h {
        1.0
    } else {
        (1.0 - (l / x).powf(a)) / (1.0 - (l / h).powf(a))
    }
}

/// The server side of a web connection: the response sender, whose socket opens
/// when the client's SYN has arrived.
pub struct WebServer {
    inner: TcpSenderEndpoint,
    /// Client SYN's one-way trip to the server.
    syn_delay_ns: u64,
    syn_arrives: Option<Time>,
    opened: bool,
    /// Test drop injection: the first handshake packet is lost.
    drop_handshake: bool,
}

impl Endpoint for WebServer {
    fn start(&mut self, now: Time, _out: &mut Outbox) {
        self.syn_arrives = Some(now + self.syn_delay_ns);
    }
    #[inline]
    fn on_packet(&mut self, pkt: &Packet, now: Time, out: &mut Outbox) {
        self.inner.on_packet(pkt, now, out);
    }
    fn on_timer(&mut self, now: Time, out: &mut Outbox) {
        if self.opened {
            self.inner.on_timer(now, out);
        } else if self.syn_arrives.is_some_and(|t| t <= now) {
            self.opened = true;
            self.inner.start(now, out);
        }
    }
    #[inline]
    fn next_timer(&self) -> Option<Time> {
        if self.opened {
            self.inner.next_timer()
        } else {
            self.syn_arrives
        }
    }
    fn is_finished(&self) -> bool {
        self.inner.is_finished()
    }
    fn measured(&self) -> Option<&dyn Measured> {
        Some(self)
    }
    fn drop_injection(&self) -> Option<&dyn DropInjection> {
        (self.drop_handshake || self.inner.0.injects_drops()).then_some(self as &dyn DropInjection)
    }
    fn into_reusable(self: Box<Self>) -> Option<Box<dyn Reusable>> {
        Some(self)
    }
}

impl DropInjection for WebServer {
    #[inline]
    fn loses_on_first_hop(&self, pkt: &Packet) -> bool {
        (self.drop_handshake && pkt.kind == PacketKind::Syn && !pkt.retrans) || self.inner.loses_on_first_hop(pkt)
    }
}

impl Reusable for WebServer {
    fn take_buffers(&mut self) -> Option<EndpointBuffers> {
        self.inner.take_buffers()
    }
    fn into_any(self: Box<Self>) -> Box<dyn std::any::Any> {
        self
    }
}

impl Measured for WebServer {
    fn add_cumulative(&self, c: &mut FlowCumulative) {
        self.inner.add_cumulative(c);
    }
    fn sample(&self, s: &mut FlowSample) {
        self.inner.sample(s);
    }
    fn summarise(&self, flow_start: Time, s: &mut FlowSummary) {
        self.inner.summarise(flow_start, s);
        s.kind = "web".into();
    }
    fn fill_request(&self, r: &mut RequestRecord) {
        let sender = &self.inner.0;
        r.cc = sender.cc_name().into();
        r.ecn_mode = sender.ecn_mode().name().into();
        r.syn_retransmits = sender.syn_retransmits();
        r.retransmits = sender.stats.retransmits;
        r.rto_count = sender.stats.rto_count;
    }
}

/// A connection holding a slot.
struct Conn {
    id: u64,
    slot: u32,
    start: Time,
    size: u64,
}

/// A web source (`SourceConfig::Web`).
pub struct WebSource {
    index: u32,
    cfg: WebSourceConfig,
    seed: u64,
    link_rate_bps: u64,
    arrivals: SimRng,
    sizes: SimRng,
    next_arrival: Option<Time>,
    stop: Time,
    count: u64,
    open: Vec<Conn>,
    /// Finished requests not yet handed on (all of them in a run without a
    /// [`RecordSink`]; in a streaming run those waiting for an earlier request).
    records: Vec<RequestRecord>,
    /// A streaming run tries to hand records on once `records` holds this many.
    drain_at: usize,
    /// Buffers of released connections' senders, for the next connections
    /// (at most as many as were ever open at once).
    spare: Vec<SenderBuffers>,
    /// Finished receivers' out-of-order buffers.
    spare_ooo: Vec<ReceiverBuffers>,
    /// Released connections' endpoint allocations, rebuilt in place for the next
    /// connections (the old endpoint is dropped where the new one is written).
    spare_servers: Vec<Box<WebServer>>,
    spare_clients: Vec<Box<TcpReceiverEndpoint>>,
    /// (L/H)^α of the size distribution.
    pareto_tail: f64,
}

impl WebSource {
    pub fn new(index: u32, cfg: &WebSourceConfig, seed: u64, link_rate_bps: u64) -> Self {
        let mut arrivals = rng::stream(seed, Stream::Arrivals(index));
        let first = cfg.tcp.path.start_ns + exp_gap_ns(&mut arrivals, cfg.rate_per_s);
        WebSource {
            index,
            cfg: cfg.clone(),
            seed,
            link_rate_bps,
            arrivals,
            sizes: rng::stream(seed, Stream::Sizes(index)),
            next_arrival: Some(first),
            stop: cfg.tcp.path.stop_ns.unwrap_or(u64::MAX),
            count: 0,
            open: Vec::new(),
            records: Vec::new(),
            drain_at: RECORD_CHUNK,
            spare: Vec::new(),
            spare_ooo: Vec::new(),
            spare_servers: Vec::new(),
            spare_clients: Vec::new(),
            pareto_tail: pareto_tail(&cfg.sizes),
        }
    }

    fn record(&mut self, c: &Conn, opener: &dyn FlowOpener) {
        let ideal = secs(self.cfg.tcp.path.rtt_ns) + c.size as f64 * 8.0 / self.link_rate_bps as f64;
        let mut r = RequestRecord {
            source: self.index,
            id: c.id,
            flow: c.slot,
            start_s: secs(c.start),
            size_bytes: c.size,
            base_rtt_s: secs(self.cfg.tcp.path.rtt_ns),
            ideal_fct_s: ideal,
            ..Default::default()
        };
        opener.fill_request(c.slot, &mut r);
        r.efficiency = r.fct_s.map_or(f64::NAN, |f| ideal / f);
        self.records.push(r);
    }

    fn open_connection(&mut self, now: Time, opener: &mut dyn FlowOpener) {
        let id = self.count;
        self.count += 1;
        let size = bounded_pareto_with(&mut self.sizes, &self.cfg.sizes, self.pareto_tail);
        let slot = opener.reserve_slot();
        // The source's own TCP settings with this response's size (set in place:
        // no copy of the config per connection), built as every TCP flow is.
        self.cfg.tcp.bytes = Some(size);
        let t = &self.cfg.tcp;
        let cc_rng = rng::stream(self.seed, Stream::Connection(self.index, id as u32));
        let spare = (self.spare.pop(), self.spare_ooo.pop());
        let (sender, receiver) =
            super::tcp::build(t, slot, opener.end(), cc_rng, spare).expect("validated by ScenarioConfig::validate");
        let path = &t.path;
        let drop_handshake = self.cfg.drop_handshake_of.contains(&id);
        // A released connection's allocation takes the new endpoint in place (its old
        // one is dropped there); each field is written once, no whole-struct moves.
        let mut server: Box<WebServer> = match self.spare_servers.pop() {
            Some(mut b) => {
                b.inner.0 = sender;
                (b.syn_arrives, b.opened) = (None, false);
                b
            }
            None => Box::new(WebServer {
                inner: TcpSenderEndpoint(sender),
                syn_delay_ns: 0,
                syn_arrives: None,
                opened: false,
                drop_handshake: false,
            }),
        };
        (server.syn_delay_ns, server.drop_handshake) = (path.rev_delay(), drop_handshake);
        let response = Response { size, start: now, closed_at: None };
        let client: Box<TcpReceiverEndpoint> = match self.spare_clients.pop() {
            Some(mut b) => {
                (b.rx, b.response) = (receiver, Some(response));
                b
            }
            None => Box::new(TcpReceiverEndpoint { rx: receiver, response: Some(response) }),
        };
        opener.open(
            slot,
            FlowSpec {
                sender: server,
                receiver: client,
                start: now,
                base_rtt_ns: path.rtt_ns,
                fwd_delay_ns: path.fwd_delay(),
                rev_delay_ns: path.rev_delay(),
                reverse: false,
            },
        );
        self.open.push(Conn { id, slot, start: now, size });
    }

    /// Record and release the connections that are finished and quiet.
    fn sweep(&mut self, opener: &mut dyn FlowOpener) {
        let mut i = 0;
        while i < self.open.len() {
            if opener.is_quiet(self.open[i].slot) {
                let c = self.open.swap_remove(i);
                self.record(&c, opener);
                for e in opener.release(c.slot).into_iter().flatten() {
                    let Some(mut e) = e.into_reusable() else { continue };
                    match e.take_buffers() {
                        Some(EndpointBuffers::Sender(b)) => self.spare.push(b),
                        Some(EndpointBuffers::Receiver(b)) => self.spare_ooo.push(b),
                        None => {}
                    }
                    match e.into_any().downcast::<WebServer>() {
                        Ok(server) => self.spare_servers.push(server),
                        Err(any) => {
                            if let Ok(client) = any.downcast::<TcpReceiverEndpoint>() {
                                self.spare_clients.push(client);
                            }
                        }
                    }
                }
            } else {
                i += 1;
            }
        }
    }
}

impl TrafficSource for WebSource {
    fn open_initial(&mut self, _opener: &mut dyn FlowOpener) -> Result<(), String> {
        Ok(())
    }
    fn next_event(&self) -> Option<Time> {
        self.next_arrival.filter(|&t| t < self.stop)
    }
    fn on_event(&mut self, now: Time, opener: &mut dyn FlowOpener) {
        self.sweep(opener);
        self.open_connection(now, opener);
        self.next_arrival = Some(now + exp_gap_ns(&mut self.arrivals, self.cfg.rate_per_s));
    }
    fn finish(&mut self, _now: Time, opener: &mut dyn FlowOpener) {
        for c in std::mem::take(&mut self.open) {
            self.record(&c, opener);
        }
        // Records in arrival order: sort (id, index) pairs, then move each record
        // once (the records are large; ids are unique, so the order is total).
        let mut order: Vec<(u64, usize)> = self.records.iter().enumerate().map(|(i, r)| (r.id, i)).collect();
        order.sort_unstable();
        let mut taken: Vec<Option<RequestRecord>> = std::mem::take(&mut self.records).into_iter().map(Some).collect();
        self.records = order.iter().map(|&(_, i)| taken[i].take().expect("each record once")).collect();
    }
    fn fill_results(&self, r: &mut RunResults) {
        r.requests.extend(self.records.iter().cloned());
    }
    /// Records leave in arrival order, as `finish` orders them: only those below the
    /// oldest connection still open are final. A connection open for long (a 1 MB
    /// response, SYN timeouts) holds back the later ones; the next attempt waits for
    /// another chunk, so the sort runs once per chunk, not per arrival.
    fn drain_records(&mut self, sink: &mut dyn RecordSink, all: bool) -> Result<(), String> {
        if !all && self.records.len() < self.drain_at {
            return Ok(());
        }
        let below = if all { u64::MAX } else { self.open.iter().map(|c| c.id).min().unwrap_or(self.count) };
        self.records.sort_unstable_by_key(|r| r.id);
        let n = self.records.partition_point(|r| r.id < below);
        let result = if n > 0 { sink.requests(self.index, &self.records[..n]) } else { Ok(()) };
        self.records.drain(..n);
        self.drain_at = self.records.len() + RECORD_CHUNK;
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paper_sizes() -> WebSizes {
        WebSizes { alpha: 0.9, min_bytes: 1000, max_bytes: 1_000_000 }
    }

    #[test]
    fn bounded_pareto_passes_a_ks_test_and_has_the_theoretical_mean() {
        let z = paper_sizes();
        let mut rng = rng::stream(7, Stream::Sizes(0));
        let n = 20_000;
        let mut x: Vec<u64> = (0..n).map(|_| bounded_pareto(&mut rng, &z)).collect();
        assert!(x.iter().all(|&v| (1000..=1_000_000).contains(&v)));
        x.sort_unstable();
        // Kolmogorov–Smirnov statistic against the bounded Pareto CDF; the 1 %
        // critical value is 1.63/√n (rounding to whole bytes moves F by < 1e-3).
        let d = x
            .iter()
            .enumerate()
            .map(|(i, &v)| {
                let f = bounded_pareto_cdf(&z, v as f64);
                (f - i as f64 / n as f64).abs().max(((i + 1) as f64 / n as f64 - f).abs())
            })
            .fold(0.0, f64::max);
        assert!(d < 1.63 / (n as f64).sqrt() + 1e-3, "KS D = {d}");
        // Mean: ≈ 8.98 kB in theory; a heavy tail, so allow 4 standard errors.
        let mean = x.iter().sum::<u64>() as f64 / n as f64;
        let m = bounded_pareto_mean(&z);
        let var = x.iter().map(|&v| (v as f64 - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
        let se = (var / n as f64).sqrt();
        assert!((mean - m).abs() < 4.0 * se, "mean {mean} vs theory {m} (se {se})");
        assert!((m - 8_976.0).abs() < 10.0, "theoretical mean {m}");
    }

    #[test]
    fn poisson_gaps_have_cv_one_and_the_right_mean() {
        let mut rng = rng::stream(3, Stream::Arrivals(0));
        let n = 50_000;
        let g: Vec<f64> = (0..n).map(|_| exp_gap_ns(&mut rng, 300.0) as f64 / 1e9).collect();
        let mean = g.iter().sum::<f64>() / n as f64;
        let sd = (g.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt();
        // Mean 1/300 s within 4 standard errors (sd/√n = mean/√n); CV of an exponential = 1.
        assert!((mean - 1.0 / 300.0).abs() < 4.0 * mean / (n as f64).sqrt(), "mean {mean}");
        assert!((sd / mean - 1.0).abs() < 0.02, "cv {}", sd / mean);
    }
}
