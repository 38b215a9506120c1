//! Shared helpers of the qdisc unit tests.

use super::QdiscCtx;
use crate::packet::{Ecn, Packet, PacketKind};
use crate::rng::{self, SimRng};

/// Owns what a [`QdiscCtx`] borrows, so a test can drive a qdisc and then inspect
/// what it dropped and marked.
pub struct Harness {
    pub rng: SimRng,
    pub dropped: Vec<Packet>,
    pub marked: Vec<u32>,
}

impl Harness {
    /// A harness whose qdisc random stream comes from seed 1.
    pub fn new() -> Self {
        Self::with_seed(1)
    }

    pub fn with_seed(seed: u64) -> Self {
        Harness { rng: rng::stream(seed, rng::Stream::Qdisc), dropped: Vec::new(), marked: Vec::new() }
    }

    pub fn ctx(&mut self) -> QdiscCtx<'_> {
        QdiscCtx { rng: &mut self.rng, dropped: &mut self.dropped, marked: &mut self.marked }
    }
}

/// A data packet of `flow` with id `id`, L2 length `len` and codepoint `ecn`.
pub fn packet(flow: u32, id: u64, len: u32, ecn: Ecn) -> Packet {
    let mut p = Packet::new(flow, PacketKind::Data);
    p.wire_len = len;
    p.id = id;
    p.ecn = ecn;
    p
}
