//! Endpoints and the traffic sources that create them.
//!
//! An [`Endpoint`] is one side of a flow: it takes packets and timer expiries and
//! emits packets; the simulator routes what it emits and keeps its (lazy) timer.
//! A [`TrafficSource`] decides which flows exist: it opens flows at setup and may
//! open more at its own events ([`TrafficSource::next_event`], a `Target::Source`
//! event the simulator schedules and re-arms), through a [`FlowOpener`] that hands
//! out flow slots, reusing released ones, so a source of many short connections
//! (checking [`FlowOpener::is_finished`] at its events) needs no change to the
//! event loop.
//!
//! - [`tcp`]: the TCP sender and receiver as endpoints.
//! - [`udp`]: the constant-rate UDP source and its sink.
//! - [`udp_prague`]: L4STeam's scalable UDP sender (bulk or real-time frames) and its per-packet-ACK receiver.
//! - [`scenario`]: the flows a `ScenarioConfig` lists (bulk TCP, UDP CBR).
//! - [`web`]: web requests, one short TCP connection each, with per-request records.
//! - [`synflood`]: an inelastic SYN flood.

pub mod scenario;
pub mod synflood;
pub mod tcp;
pub mod udp;
pub mod udp_prague;
pub mod web;

use crate::packet::{Outbox, Packet};
use crate::results::{FlowSummary, RecordSink, RequestRecord, RunResults};
use crate::tcp::receiver::ReceiverBuffers;
use crate::tcp::sender::SenderBuffers;
use crate::time::Time;
use crate::trace::{FlowCumulative, FlowSample};

/// One side of a flow: the I/O the simulator drives (a packet in, a timer, packets out
/// into an [`Outbox`]). What else an endpoint can do is an optional capability it
/// offers through an accessor, read where it is needed and never on the per-packet
/// path of a flow that does not use it: [`Measured`] (its share of the per-flow series,
/// summary and request record), [`DropInjection`] (tests) and [`Reusable`] (a released
/// connection's buffers and allocation).
pub trait Endpoint: Send + std::any::Any {
    /// The flow starts at `now` (called on the sending side only).
    fn start(&mut self, _now: Time, _out: &mut Outbox) {}

    /// A packet of this flow arrived.
    fn on_packet(&mut self, pkt: &Packet, now: Time, out: &mut Outbox);

    /// The timer set through [`next_timer`](Self::next_timer) fired.
    fn on_timer(&mut self, _now: Time, _out: &mut Outbox) {}

    /// When the endpoint wants [`on_timer`](Self::on_timer); the simulator keeps one
    /// pending event and re-arms only for an earlier time (stale expiries are
    /// ignored), as `sk_reset_timer` does with an already-pending timer.
    fn next_timer(&self) -> Option<Time> {
        None
    }

    /// Whether the simulator arms the next timer *before* putting this callback's
    /// packets on the wire: a clocked source re-arms its clock first (an hrtimer
    /// callback returning `HRTIMER_RESTART`); TCP transmits, then re-arms
    /// (`tcp_write_xmit` before `tcp_rearm_rto`). Read once when the flow
    /// opens: fixed for the endpoint's life.
    fn arms_timer_first(&self) -> bool {
        false
    }

    /// The flow has nothing left to do (a sized transfer completed); a source may
    /// then release its slot.
    fn is_finished(&self) -> bool {
        false
    }

    /// What this side measures; `None`: nothing (its flow's series and summary then
    /// hold only the other side's part).
    fn measured(&self) -> Option<&dyn Measured> {
        None
    }

    /// Test drop injection, if this endpoint may ever lose a packet on purpose. Read
    /// once when the flow opens (fixed for its life): a flow without it pays one
    /// flag test per emitted packet, nothing more.
    fn drop_injection(&self) -> Option<&dyn DropInjection> {
        None
    }

    /// The released endpoint as something to reuse, for a source of many short
    /// connections. `None`: it is dropped.
    fn into_reusable(self: Box<Self>) -> Option<Box<dyn Reusable>> {
        None
    }
}

/// An endpoint's measurements (an [`Endpoint::measured`] capability).
pub trait Measured {
    /// Add this side's cumulative counters (differences give per-bin values).
    fn add_cumulative(&self, _c: &mut FlowCumulative) {}

    /// Fill this side's part of the end-of-bin state.
    fn sample(&self, _s: &mut FlowSample) {}

    /// Fill this side's part of the flow summary (`flow_start`: the actual start).
    fn summarise(&self, _flow_start: Time, _s: &mut FlowSummary) {}

    /// Fill this side's part of a web request's record.
    fn fill_request(&self, _r: &mut RequestRecord) {}
}

/// Test drop injection (an [`Endpoint::drop_injection`] capability).
pub trait DropInjection {
    /// `pkt` is lost right after leaving the endpoint's NIC.
    fn loses_on_first_hop(&self, pkt: &Packet) -> bool;
}

/// A released endpoint's reuse (an [`Endpoint::into_reusable`] capability).
pub trait Reusable {
    /// Hand over a TCP endpoint's buffers, so a source of many short connections
    /// builds the next one without fresh memory (`TcpSender::with_buffers`,
    /// `TcpReceiver::with_buffers`).
    fn take_buffers(&mut self) -> Option<EndpointBuffers>;

    /// The endpoint itself, for a source that rebuilds the next connection of its own
    /// endpoint type in the same heap allocation (the web source: no allocation per
    /// request for its endpoints).
    fn into_any(self: Box<Self>) -> Box<dyn std::any::Any>;
}

/// What a finished endpoint hands over for reuse ([`Reusable::take_buffers`]).
pub enum EndpointBuffers {
    /// The sender's retransmit queue.
    Sender(SenderBuffers),
    /// The receiver's out-of-order buffer.
    Receiver(ReceiverBuffers),
}

/// Everything the simulator needs to open a flow in a slot.
pub struct FlowSpec {
    pub sender: Box<dyn Endpoint>,
    pub receiver: Box<dyn Endpoint>,
    /// Actual start time (jitter included).
    pub start: Time,
    /// Base RTT (propagation only), for the summary.
    pub base_rtt_ns: u64,
    /// One-way propagation delays the topology gives the flow's path.
    pub fwd_delay_ns: u64,
    pub rev_delay_ns: u64,
    /// Data crosses the topology's reverse direction (see `PathConfig::reverse`).
    pub reverse: bool,
}

/// What a traffic source may do to the flow table.
pub trait FlowOpener {
    /// A slot for a new flow: a released one if any, else a fresh one. Endpoints
    /// are built with this number (it is their packets' `flow`).
    fn reserve_slot(&mut self) -> u32;
    /// Open the flow in `slot`; it starts at `spec.start`.
    fn open(&mut self, slot: u32, spec: FlowSpec);
    /// Whether the flow in `slot` has finished (both endpoints say so).
    fn is_finished(&self, slot: u32) -> bool;
    /// Finished, and none of its packets is left in the network: the slot can be
    /// released and reused without an old packet reaching the new flow.
    fn is_quiet(&self, slot: u32) -> bool;
    /// Give `slot` back for reuse once its flow has finished. Its old flow's
    /// pending timers are ignored, and packets of it still in the network are
    /// delivered to a closed socket (counted, then discarded) while the slot is
    /// free; a source should release only when none are left (after the FIN/ACK
    /// exchange of a future short-flow source). Returns the flow's two endpoints
    /// (`[sender, receiver]`), for the source to reuse their buffers.
    fn release(&mut self, slot: u32) -> Option<[Box<dyn Endpoint>; 2]>;
    /// End of the run: sources need not open flows that would start after it.
    fn end(&self) -> Time;
    /// Both endpoints' parts of a request record for the flow in `slot`.
    fn fill_request(&self, slot: u32, r: &mut RequestRecord);
}

/// Something that creates flows.
pub trait TrafficSource: Send {
    /// Open the flows that exist from the start of the run (errors name the flow).
    fn open_initial(&mut self, opener: &mut dyn FlowOpener) -> Result<(), String>;
    /// Time of this source's next own event (e.g. the next connection arrival).
    fn next_event(&self) -> Option<Time> {
        None
    }
    /// This source's event fired: open (and release) flows.
    fn on_event(&mut self, _now: Time, _opener: &mut dyn FlowOpener) {}
    /// The run ended at `now`: record what is still open.
    fn finish(&mut self, _now: Time, _opener: &mut dyn FlowOpener) {}
    /// Add this source's records to the results.
    fn fill_results(&self, _r: &mut RunResults) {}
    /// A streaming run: hand the records that are final to `sink` once about
    /// [`crate::results::RECORD_CHUNK`] have gathered (`all`: everything, at the end
    /// of the run, after [`finish`](Self::finish)).
    fn drain_records(&mut self, _sink: &mut dyn RecordSink, _all: bool) -> Result<(), String> {
        Ok(())
    }
}

/// The sources a scenario lists in `sources` (after its `flows`).
pub fn build_sources(cfg: &crate::config::ScenarioConfig) -> Result<Vec<Box<dyn TrafficSource>>, String> {
    use crate::config::SourceConfig;
    let mut v: Vec<Box<dyn TrafficSource>> = Vec::with_capacity(cfg.sources.len());
    for (i, s) in cfg.sources.iter().enumerate() {
        v.push(match s {
            SourceConfig::Web(w) => Box::new(web::WebSource::new(i as u32, w, cfg.seed, cfg.bottleneck.rate_bps)),
            SourceConfig::SynFlood(f) => Box::new(synflood::SynFloodSource::new(f)),
        });
    }
    Ok(v)
}
