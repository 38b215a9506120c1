//! The per-packet sojourn trace of one link's queue (`trace_sojourn`).

use super::{NetworkView, Observer};
use crate::event::LinkId;
use crate::packet::{Packet, SackTable};
use crate::results::{RunResults, SojournTrace};
use crate::time::{secs, Time, NS_PER_MS};

/// Records every dequeue at `link`: time, flow, sub-queue and sojourn.
pub struct SojournTracer {
    link: LinkId,
    trace: SojournTrace,
}

impl SojournTracer {
    /// `capacity`: packets expected (the vectors grow beyond it if needed).
    pub fn new(link: LinkId, capacity: usize) -> Self {
        SojournTracer {
            link,
            trace: SojournTrace {
                time_s: Vec::with_capacity(capacity),
                flow: Vec::with_capacity(capacity),
                class: Vec::with_capacity(capacity),
                sojourn_ms: Vec::with_capacity(capacity),
            },
        }
    }

    pub fn trace(&self) -> &SojournTrace {
        &self.trace
    }
}

impl Observer for SojournTracer {
    #[inline]
    fn on_dequeue(&mut self, now: Time, link: LinkId, pkt: &Packet, sojourn_ns: u64, _sacks: &SackTable) {
        if link == self.link {
            self.trace.time_s.push(secs(now));
            self.trace.flow.push(pkt.flow);
            self.trace.class.push(pkt.qclass);
            self.trace.sojourn_ms.push(sojourn_ns as f64 / NS_PER_MS as f64);
        }
    }

    fn finish(&self, _view: &dyn NetworkView, r: &mut RunResults) {
        r.sojourn_trace = Some(self.trace.clone());
    }
}
