//! Measurement as observers of the network.
//!
//! The simulator reports what happens to packets at queued links (offered to the
//! queue, dequeued, dropped, CE-marked), deliveries to endpoints and the end of
//! each bin to an [`Observer`] ([`Observers`]): the recorder, called by static
//! dispatch, and the measurement writers the scenario asks for, found by name in
//! [`WRITERS`]; none allocates per packet. At the end of the run each writes its part
//! of the results ([`Observer::finish`]), a file beside them included (`RunResults::files`).
//!
//! - [`recorder`]: per-bin series, histograms and the summary window.
//! - [`sojourn`]: the per-packet sojourn trace (writer `sojourn`, `trace_sojourn`).
//! - [`capture`]: the packet capture as pcapng (writer `capture`, `[capture]`).
//! - [`histogram`]: delay histograms.

pub mod capture;
pub mod histogram;
pub mod recorder;
pub mod sojourn;

use crate::config::ScenarioConfig;
use crate::event::{EndpointId, LinkId};
use crate::net::Link;
use crate::packet::{Packet, SackTable};
use crate::results::{FlowSummary, RunResults};
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

/// Hooks on the network's packet events. Every method defaults to nothing. `sacks`
/// holds the SACK options of the ACKs in the network (a packet's `tcp.sack` indexes it;
/// the entry is reused once the ACK leaves the network).
pub trait Observer {
    /// `pkt` is offered to `link`'s queue (before the qdisc decides).
    fn on_enqueue(&mut self, _now: Time, _link: LinkId, _pkt: &Packet) {}
    /// `pkt` left `link`'s queue after `sojourn_ns` in it.
    fn on_dequeue(&mut self, _now: Time, _link: LinkId, _pkt: &Packet, _sojourn_ns: u64, _sacks: &SackTable) {}
    /// `link`'s qdisc dropped `pkt`.
    fn on_drop(&mut self, _now: Time, _link: LinkId, _pkt: &Packet) {}
    /// `link`'s qdisc CE-marked a packet of `flow`.
    fn on_mark(&mut self, _now: Time, _link: LinkId, _flow: u32) {}
    /// `pkt` reached endpoint `to`.
    fn on_deliver(&mut self, _now: Time, _to: EndpointId, _pkt: &Packet, _sacks: &SackTable) {}
    /// `pkt` leaves endpoint `from` (onto its host's NIC).
    fn on_emit(&mut self, _now: Time, _from: EndpointId, _pkt: &Packet, _sacks: &SackTable) {}
    /// A flow was opened in slot `flow`.
    fn on_flow_open(&mut self, _flow: u32) {}
    /// The flow in slot `flow` is closed and its slot released at `now` (the view
    /// still shows it); a reused slot then holds a new flow.
    fn on_flow_close(&mut self, _now: Time, _flow: u32, _view: &dyn NetworkView) {}
    /// End of a bin.
    fn on_sample(&mut self, _now: Time, _view: &dyn NetworkView) {}
    /// The run ended: write this observer's part of the results (its fields of `r`, and
    /// any file it writes beside them into `r.files`).
    fn finish(&self, _view: &dyn NetworkView, _r: &mut RunResults) {}
}

/// What a measurement writer is built from: the run's config and its bottleneck.
pub struct WriterSetup<'a> {
    pub cfg: &'a ScenarioConfig,
    /// The bottleneck link, and the names of its qdisc's sub-queues (DualPI2: C, L).
    pub bottleneck: LinkId,
    pub classes: Vec<&'static str>,
}

/// A measurement writer the scenario may ask for, found by name: it builds its observer
/// when the run's config asks for it (`None` otherwise).
pub struct Writer {
    pub name: &'static str,
    /// The writer `setup` asks for, if any; an error is one line (a buffer that could
    /// not be allocated).
    pub build: fn(&WriterSetup) -> Result<Option<Box<dyn Observer + Send>>, String>,
}

/// The measurement writers beside the recorder, in the order they see events. A new
/// writer (e.g. flow-completion records) is one entry here and an [`Observer`].
pub const WRITERS: &[Writer] = &[
    Writer {
        name: "sojourn",
        build: |w| {
            // Rough trace capacity: packets the bottleneck can carry in the run.
            let c = w.cfg;
            if !c.trace_sojourn {
                return Ok(None);
            }
            let cap = (c.bottleneck.rate_bps as u128 * c.duration_ns as u128 / 8 / 1_000_000_000 / 1000) as usize;
            Ok(Some(Box::new(SojournTracer::new(w.bottleneck, cap)?) as Box<dyn Observer + Send>))
        },
    },
    Writer {
        name: "capture",
        build: |w| {
            Ok(w.cfg.capture.as_ref().map(|c| {
                Box::new(capture::PacketCapture::new(c, w.bottleneck, w.classes.clone(), &w.cfg.flows))
                    as Box<dyn Observer + Send>
            }))
        },
    },
];

/// The observers of a run: the recorder (statically dispatched: it sees every run's
/// every packet) and the writers the scenario asked for ([`WRITERS`]).
pub struct Observers {
    pub recorder: Recorder,
    pub writers: Vec<Box<dyn Observer + Send>>,
}

impl Observers {
    /// The recorder and every writer of [`WRITERS`] that `setup`'s config asks for.
    pub fn new(recorder: Recorder, setup: &WriterSetup) -> Result<Self, String> {
        let mut writers = Vec::new();
        for w in WRITERS {
            writers.extend((w.build)(setup)?);
        }
        Ok(Observers { recorder, writers })
    }

    // The writers' per-packet hooks, out of line: a run without writers (nearly every
    // run) pays one length test per packet event and keeps the event loop's hot
    // functions free of the loops' code.
    #[cold]
    #[inline(never)]
    fn writers_on_enqueue(&mut self, now: Time, link: LinkId, pkt: &Packet) {
        for w in self.writers.iter_mut() {
            w.on_enqueue(now, link, pkt);
        }
    }

    #[cold]
    #[inline(never)]
    fn writers_on_dequeue(&mut self, now: Time, link: LinkId, pkt: &Packet, sojourn_ns: u64, sacks: &SackTable) {
        for w in self.writers.iter_mut() {
            w.on_dequeue(now, link, pkt, sojourn_ns, sacks);
        }
    }

    #[cold]
    #[inline(never)]
    fn writers_on_drop(&mut self, now: Time, link: LinkId, pkt: &Packet) {
        for w in self.writers.iter_mut() {
            w.on_drop(now, link, pkt);
        }
    }

    #[cold]
    #[inline(never)]
    fn writers_on_mark(&mut self, now: Time, link: LinkId, flow: u32) {
        for w in self.writers.iter_mut() {
            w.on_mark(now, link, flow);
        }
    }

    #[cold]
    #[inline(never)]
    fn writers_on_deliver(&mut self, now: Time, to: EndpointId, pkt: &Packet, sacks: &SackTable) {
        for w in self.writers.iter_mut() {
            w.on_deliver(now, to, pkt, sacks);
        }
    }

    #[cold]
    #[inline(never)]
    fn writers_on_emit(&mut self, now: Time, from: EndpointId, pkt: &Packet, sacks: &SackTable) {
        for w in self.writers.iter_mut() {
            w.on_emit(now, from, pkt, sacks);
        }
    }

    /// Write the observers' parts of the results.
    pub fn fill_results(&self, view: &dyn NetworkView, r: &mut RunResults) {
        self.recorder.finish(view, r);
        for w in self.writers.iter() {
            w.finish(view, r);
        }
    }
}

impl Observer for Observers {
    #[inline]
    fn on_enqueue(&mut self, now: Time, link: LinkId, pkt: &Packet) {
        self.recorder.on_enqueue(now, link, pkt);
        if !self.writers.is_empty() {
            self.writers_on_enqueue(now, link, pkt);
        }
    }
    #[inline]
    fn on_dequeue(&mut self, now: Time, link: LinkId, pkt: &Packet, sojourn_ns: u64, sacks: &SackTable) {
        self.recorder.on_dequeue(now, link, pkt, sojourn_ns, sacks);
        if !self.writers.is_empty() {
            self.writers_on_dequeue(now, link, pkt, sojourn_ns, sacks);
        }
    }
    #[inline]
    fn on_drop(&mut self, now: Time, link: LinkId, pkt: &Packet) {
        self.recorder.on_drop(now, link, pkt);
        if !self.writers.is_empty() {
            self.writers_on_drop(now, link, pkt);
        }
    }
    #[inline]
    fn on_mark(&mut self, now: Time, link: LinkId, flow: u32) {
        self.recorder.on_mark(now, link, flow);
        if !self.writers.is_empty() {
            self.writers_on_mark(now, link, flow);
        }
    }
    #[inline]
    fn on_deliver(&mut self, now: Time, to: EndpointId, pkt: &Packet, sacks: &SackTable) {
        self.recorder.on_deliver(now, to, pkt, sacks);
        if !self.writers.is_empty() {
            self.writers_on_deliver(now, to, pkt, sacks);
        }
    }
    #[inline]
    fn on_emit(&mut self, now: Time, from: EndpointId, pkt: &Packet, sacks: &SackTable) {
        self.recorder.on_emit(now, from, pkt, sacks);
        if !self.writers.is_empty() {
            self.writers_on_emit(now, from, pkt, sacks);
        }
    }
    fn on_flow_open(&mut self, flow: u32) {
        self.recorder.on_flow_open(flow);
        for w in self.writers.iter_mut() {
            w.on_flow_open(flow);
        }
    }
    fn on_flow_close(&mut self, now: Time, flow: u32, view: &dyn NetworkView) {
        self.recorder.on_flow_close(now, flow, view);
        for w in self.writers.iter_mut() {
            w.on_flow_close(now, flow, view);
        }
    }
    fn on_sample(&mut self, now: Time, view: &dyn NetworkView) {
        self.recorder.on_sample(now, view);
        for w in self.writers.iter_mut() {
            w.on_sample(now, view);
        }
    }
    fn finish(&self, view: &dyn NetworkView, r: &mut RunResults) {
        self.fill_results(view, r);
    }
}
