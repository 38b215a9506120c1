//! Measurement as observers of the network.
//!
//! The simulator reports what happens to packets at queued links (offered to the
//! queue, dequeued, dropped, CE-marked), deliveries to endpoints and the end of
//! each bin to an [`Observer`]. Observers are a fixed set ([`Observers`]), called
//! by static dispatch; none allocates per packet.
//!
//! - [`recorder`]: per-bin series, histograms and the summary window.
//! - [`sojourn`]: the per-packet sojourn trace.
//! - [`histogram`]: delay histograms.

pub mod capture;
pub mod histogram;
pub mod recorder;
pub mod sojourn;

use crate::event::{EndpointId, LinkId};
use crate::net::Link;
use crate::packet::{Packet, SackTable};
use crate::results::{CaptureResult, FlowSummary, RunResults};
use crate::time::Time;

pub use histogram::DelayHistogram;
pub use recorder::{jain_index, Recorder};
pub use sojourn::SojournTracer;

/// Cumulative per-flow counters sampled at bin ends (differences give per-bin values).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FlowCumulative {
    pub bytes_delivered: u64,
    pub retransmits: u64,
    pub rtt_sum_us: u64,
    pub rtt_samples: u64,
    pub ce_packets: u64,
    pub segments_sent: u64,
    pub payload_bytes_sent: u64,
}

impl std::ops::Add for FlowCumulative {
    type Output = FlowCumulative;
    fn add(self, o: FlowCumulative) -> FlowCumulative {
        FlowCumulative {
            bytes_delivered: self.bytes_delivered + o.bytes_delivered,
            retransmits: self.retransmits + o.retransmits,
            rtt_sum_us: self.rtt_sum_us + o.rtt_sum_us,
            rtt_samples: self.rtt_samples + o.rtt_samples,
            ce_packets: self.ce_packets + o.ce_packets,
            segments_sent: self.segments_sent + o.segments_sent,
            payload_bytes_sent: self.payload_bytes_sent + o.payload_bytes_sent,
        }
    }
}

/// A flow's sender state at the end of a bin (NaN where it has none).
#[derive(Clone, Copy, Debug)]
pub struct FlowSample {
    pub srtt_ms: f64,
    pub cwnd: f64,
    pub alpha: f64,
    pub pacing_rate_mbps: f64,
    /// The CC's model state (`None` fields where it has none).
    pub cc: crate::cc::CcState,
}

impl Default for FlowSample {
    fn default() -> Self {
        FlowSample {
            srtt_ms: f64::NAN,
            cwnd: f64::NAN,
            alpha: f64::NAN,
            pacing_rate_mbps: f64::NAN,
            cc: crate::cc::CcState::default(),
        }
    }
}

/// What an observer may read at a bin end and at the end of the run.
pub trait NetworkView {
    /// Flow slots `0..n_flows()`.
    fn n_flows(&self) -> usize;
    /// Actual start time of flow `flow`.
    fn flow_start(&self, flow: usize) -> Time;
    fn base_rtt_ns(&self, flow: usize) -> u64;
    /// Both endpoints' cumulative counters.
    fn cumulative(&self, flow: usize) -> FlowCumulative;
    /// The sender's end-of-bin state.
    fn sample(&self, flow: usize) -> FlowSample;
    /// Both endpoints' parts of the summary.
    fn summarise(&self, flow: usize, s: &mut FlowSummary);
    fn link(&self, id: LinkId) -> &Link;
}

/// Hooks on the network's packet events. Every method defaults to nothing.
pub trait Observer {
    /// `pkt` is offered to `link`'s queue (before the qdisc decides).
    fn on_enqueue(&mut self, _now: Time, _link: LinkId, _pkt: &Packet) {}
    /// `pkt` left `link`'s queue after `sojourn_ns` in it.
    fn on_dequeue(&mut self, _now: Time, _link: LinkId, _pkt: &Packet, _sojourn_ns: u64) {}
    /// `link`'s qdisc dropped `pkt`.
    fn on_drop(&mut self, _now: Time, _link: LinkId, _pkt: &Packet) {}
    /// `link`'s qdisc CE-marked a packet of `flow`.
    fn on_mark(&mut self, _now: Time, _link: LinkId, _flow: u32) {}
    /// `pkt` reached endpoint `to`.
    fn on_deliver(&mut self, _now: Time, _to: EndpointId, _pkt: &Packet) {}
    /// `pkt` leaves endpoint `from` (onto its host's NIC).
    fn on_emit(&mut self, _now: Time, _from: EndpointId, _pkt: &Packet) {}
    /// A flow was opened in slot `flow`.
    fn on_flow_open(&mut self, _flow: u32) {}
    /// The flow in slot `flow` is closed and its slot released at `now` (the view
    /// still shows it); a reused slot then holds a new flow.
    fn on_flow_close(&mut self, _now: Time, _flow: u32, _view: &dyn NetworkView) {}
    /// End of a bin.
    fn on_sample(&mut self, _now: Time, _view: &dyn NetworkView) {}
}

/// The observers of a run: the recorder and, if asked for, the sojourn trace.
pub struct Observers {
    pub recorder: Recorder,
    pub sojourn: Option<SojournTracer>,
    pub capture: Option<capture::PacketCapture>,
}

impl Observers {
    /// `pkt` left `link`'s queue (as [`Observer::on_dequeue`]; `sacks` holds the
    /// SACK options of the ACKs in the network, which the capture writes).
    #[inline]
    pub fn on_dequeue(&mut self, now: Time, link: LinkId, pkt: &Packet, sojourn_ns: u64, sacks: &SackTable) {
        self.recorder.on_dequeue(now, link, pkt, sojourn_ns);
        if let Some(s) = self.sojourn.as_mut() {
            s.on_dequeue(now, link, pkt, sojourn_ns);
        }
        if let Some(c) = self.capture.as_mut() {
            c.on_dequeue(now, link, pkt, sojourn_ns, sacks);
        }
    }
    /// `pkt` reached endpoint `to` (as [`Observer::on_deliver`]).
    #[inline]
    pub fn on_deliver(&mut self, now: Time, to: EndpointId, pkt: &Packet, sacks: &SackTable) {
        self.recorder.on_deliver(now, to, pkt);
        if let Some(c) = self.capture.as_mut() {
            c.on_deliver(now, to, pkt, sacks);
        }
    }
    /// `pkt` leaves endpoint `from` (as [`Observer::on_emit`]).
    #[inline]
    pub fn on_emit(&mut self, now: Time, from: EndpointId, pkt: &Packet, sacks: &SackTable) {
        if let Some(c) = self.capture.as_mut() {
            c.on_emit(now, from, pkt, sacks);
        }
    }

    /// Write the observers' parts of the results.
    pub fn fill_results(&self, view: &dyn NetworkView, r: &mut RunResults) {
        self.recorder.fill_results(view, r);
        r.sojourn_trace = self.sojourn.as_ref().map(|s| s.trace().clone());
        if let Some(c) = &self.capture {
            r.capture = Some(CaptureResult { packets: c.len() as u64, missed: c.missed(), pcapng: c.to_pcapng() });
        }
    }
}

// Dequeue, deliver and emit are the inherent methods above: they also take the
// run's SACK side table.
impl Observer for Observers {
    #[inline]
    fn on_enqueue(&mut self, now: Time, link: LinkId, pkt: &Packet) {
        self.recorder.on_enqueue(now, link, pkt);
    }
    #[inline]
    fn on_drop(&mut self, now: Time, link: LinkId, pkt: &Packet) {
        self.recorder.on_drop(now, link, pkt);
    }
    #[inline]
    fn on_mark(&mut self, now: Time, link: LinkId, flow: u32) {
        self.recorder.on_mark(now, link, flow);
    }
    fn on_flow_close(&mut self, now: Time, flow: u32, view: &dyn NetworkView) {
        self.recorder.on_flow_close(now, flow, view);
    }
    fn on_flow_open(&mut self, flow: u32) {
        self.recorder.on_flow_open(flow);
        if let Some(c) = self.capture.as_mut() {
            c.on_flow_open(flow);
        }
    }
    fn on_sample(&mut self, now: Time, view: &dyn NetworkView) {
        self.recorder.on_sample(now, view);
    }
}
