//! Shared helpers of the qdisc unit tests. They drive the qdiscs with their own
//! packet type, not the simulator's, which keeps the qdiscs sans-IO.

use super::{Ecn, QdiscCtx, QdiscPacket};
use crate::rng::{self, SimRng};
use crate::time::Time;

/// A minimal frame: what a qdisc reads and writes, plus an id to follow it by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TestPacket {
    pub flow: u32,
    pub id: u64,
    pub wire_len: u32,
    pub ecn: Ecn,
    pub enqueue_ts: Time,
    pub qclass: u8,
}

impl QdiscPacket for TestPacket {
    fn wire_len(&self) -> u32 {
        self.wire_len
    }
    fn ecn(&self) -> Ecn {
        self.ecn
    }
    fn set_ecn(&mut self, ecn: Ecn) {
        self.ecn = ecn;
    }
    fn flow_key(&self) -> u32 {
        self.flow
    }
    fn enqueue_ts(&self) -> Time {
        self.enqueue_ts
    }
    fn set_enqueue_ts(&mut self, now: Time) {
        self.enqueue_ts = now;
    }
    fn set_qclass(&mut self, class: u8) {
        self.qclass = class;
    }
}

/// Owns what a [`QdiscCtx`] borrows, so a test can drive a qdisc and then inspect
/// what it dropped and marked.
pub struct Harness {
    pub rng: SimRng,
    pub dropped: Vec<TestPacket>,
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

    pub fn ctx(&mut self) -> QdiscCtx<'_, TestPacket> {
        QdiscCtx { rng: &mut self.rng, dropped: &mut self.dropped, marked: &mut self.marked }
    }
}

/// A packet of `flow` with id `id`, L2 length `len` and codepoint `ecn`.
pub fn packet(flow: u32, id: u64, len: u32, ecn: Ecn) -> TestPacket {
    TestPacket { flow, id, wire_len: len, ecn, enqueue_ts: 0, qclass: 0 }
}
