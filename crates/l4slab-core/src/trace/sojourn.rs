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
    /// `capacity`: packets expected (the vectors grow beyond it if needed); reserved up
    /// front, an allocation that may fail (one line, `guard::try_vec`).
    pub fn new(link: LinkId, capacity: usize) -> Result<Self, String> {
        use crate::guard::try_vec;
        let what = "the sojourn trace (trace_sojourn)";
        Ok(SojournTracer {
            link,
            trace: SojournTrace {
                time_s: try_vec(capacity, what)?,
                flow: try_vec(capacity, what)?,
                class: try_vec(capacity, what)?,
                sojourn_ms: try_vec(capacity, what)?,
            },
        })
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
