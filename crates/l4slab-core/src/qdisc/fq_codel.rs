//! FQ-CoDel (Linux `net/sched/sch_fq_codel.c`, RFC 8290): packets hashed
//! into `flows` buckets, each a FIFO under its own CoDel state (the shared core in
//! [`super::codel`]), served by DRR++ with a new-flows list that has priority over
//! the old-flows list; on overflow (packet limit or memory limit) a batch of packets
//! is dropped from the head of the fattest bucket.

use super::codel::{
    codel_dequeue, codel_dequeue_into, codel_time_specs, draw_uptime_ns, mtu_spec, uptime_spec, CodelConfig,
    CodelStats, CodelVars, QdiscFifo, MAX_LIMIT_PACKETS,
};
use super::{flow_hash, Qdisc, QdiscCtx, QdiscKind, QdiscPacket, QdiscStats, PSCHED_MTU};
use crate::rng::SimRng;
use crate::schema::{ParamKind, ParamSpec};
use crate::time::Time;
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::collections::VecDeque;

/// Modelled `skb->truesize` of a packet of `wire_len` bytes, for `memory_limit`.
///
/// Model (an assumption: the real value depends on the NIC
/// driver and is typically 2-4.5 KB for a 1514-B frame): a receive driver puts each
/// frame in its own 2048-B buffer (half a 4 KiB page, as page-splitting drivers do
/// for a 1500-B MTU) and the `struct sk_buff` head adds 256 B (its SKB_DATA_ALIGNed
/// size). Larger frames take as many 2048-B buffers as needed. So every frame of up
/// to 2048 B, ACKs included, costs 2304 B; the default 32 MiB limit holds 14 563
/// packets and never binds before the default 10 240-packet limit.
#[inline]
pub fn truesize(wire_len: u32) -> u64 {
    const RX_BUF: u64 = 2048;
    const SKB_HEAD: u64 = 256;
    SKB_HEAD + RX_BUF * (wire_len as u64).div_ceil(RX_BUF).max(1)
}

/// `tc qdisc ... fq_codel` parameters (sch_fq_codel.c:fq_codel_init), Linux defaults.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FqCodelParams {
    /// `limit`: packets across all buckets; above it the fattest bucket is trimmed.
    /// Default 10 240.
    pub limit_packets: u32,
    /// `flows`: number of hash buckets (fixed at creation). Default 1024, max 65 536.
    pub flows: u32,
    /// `quantum`: DRR quantum, bytes (L2). Default psched_mtu = 1514; min 256.
    pub quantum_bytes: u32,
    /// `target`: per-bucket CoDel target. Default 5 ms.
    pub target_ns: u64,
    /// `interval`: per-bucket CoDel interval. Default 100 ms.
    pub interval_ns: u64,
    /// `ecn` / `noecn`: CoDel marks ECT/CE packets instead of dropping. Default on.
    pub ecn: bool,
    /// `ce_threshold`: CE-mark departing packets whose sojourn exceeds this.
    /// Default disabled (`None`).
    pub ce_threshold_ns: Option<u64>,
    /// `ce_threshold_selector VALUE/MASK`: apply ce_threshold only to packets with
    /// (DS field & MASK) == VALUE; the simulator's DS field is the ECN field (DSCP 0),
    /// so `(0x01, 0x01)` selects ECT(1) and CE (the L4S-aware mode, Linux 5.16 commit dfcb63ce1de6).
    /// Default `None` (mask 0: all packets).
    pub ce_threshold_selector: Option<(u8, u8)>,
    /// `memory_limit`: bytes of modelled truesize (see [`truesize`]) across all
    /// buckets. Default 32 MiB (x86-64).
    pub memory_limit_bytes: u32,
    /// `drop_batch_size`: most packets dropped per overflow event. Default 64.
    pub drop_batch_size: u32,
    /// Not a tc keyword: the device's psched_mtu, CoDel's minimum-backlog rule.
    /// Default 1514.
    pub mtu_bytes: u32,
    /// Not a tc keyword: the router's uptime when the run starts, which CoDel's clock
    /// reads (`codel::CodelConfig::clock_base_ns`). `None` (default): drawn from the seed.
    pub uptime_ns: Option<u64>,
}

impl Default for FqCodelParams {
    fn default() -> Self {
        FqCodelParams {
            limit_packets: 10_240,
            flows: 1024,
            quantum_bytes: PSCHED_MTU,
            target_ns: 5_000_000,
            interval_ns: 100_000_000,
            ecn: true,
            ce_threshold_ns: None,
            ce_threshold_selector: None,
            memory_limit_bytes: 32 << 20,
            drop_batch_size: 64,
            mtu_bytes: PSCHED_MTU,
            uptime_ns: None,
        }
    }
}

impl QdiscKind for FqCodelParams {
    const KIND: &'static str = "fq_codel";
    const DOC: &'static str =
        "FQ-CoDel: hashed flow queues under DRR++, CoDel per queue (RFC 8290 as net/sched/sch_fq_codel.c).";

    fn params() -> Vec<ParamSpec> {
        let d = FqCodelParams::default();
        let mut v =
            vec![
            ParamSpec::new("limit_packets", ParamKind::Packets, json!(d.limit_packets),
                "Packets across all queues; above it the fattest queue is trimmed \
                 (net/sched/sch_fq_codel.c:fq_codel_init: 10 * 1024; RFC 8290 §5.2.3).")
                .range(1.0, MAX_LIMIT_PACKETS),
            ParamSpec::new("flows", ParamKind::Int, json!(d.flows),
                "Hash buckets, fixed at creation (net/sched/sch_fq_codel.c:fq_codel_init: 1024; \
                 fq_codel_change accepts 1..=65536).")
                .range(1.0, 65_536.0),
            ParamSpec::new("quantum_bytes", ParamKind::Bytes, json!(d.quantum_bytes),
                "DRR quantum (net/sched/sch_fq_codel.c:fq_codel_init: psched_mtu; fq_codel_change clamps to >= 256 \
                 and refuses > 1 MiB).")
                .range(256.0, (1 << 20) as f64),
        ];
        v.extend(codel_time_specs(d.target_ns, d.interval_ns));
        v.extend([
            ParamSpec::new(
                "ecn",
                ParamKind::Bool,
                json!(d.ecn),
                "CoDel marks ECT packets instead of dropping (net/sched/sch_fq_codel.c:fq_codel_init: on; \
                 RFC 8290 §5.2.6).",
            ),
            ParamSpec::new(
                "ce_threshold_selector",
                ParamKind::Object,
                json!(null),
                "[value, mask]: ce_threshold applies only to packets with (DS field & mask) == value; null = mask 0, \
                 all packets (net/sched/sch_fq_codel.c, Linux 5.16 commit dfcb63ce1de6). [1, 1] selects ECT(1)/CE.",
            )
            .range(0.0, 255.0),
            ParamSpec::new(
                "memory_limit_bytes",
                ParamKind::Bytes,
                json!(d.memory_limit_bytes),
                "Bytes of modelled skb truesize across all queues (net/sched/sch_fq_codel.c:fq_codel_init: 32 MiB; \
                 fq_codel_change caps at 2^31).",
            )
            .range(1.0, (1u64 << 31) as f64),
            ParamSpec::new(
                "drop_batch_size",
                ParamKind::Packets,
                json!(d.drop_batch_size),
                "Most packets dropped per overflow (net/sched/sch_fq_codel.c:fq_codel_init: 64).",
            )
            .range(1.0, 65_536.0),
            mtu_spec(),
            uptime_spec(),
        ]);
        v
    }

    fn build<P: QdiscPacket>(&self, rng: &mut SimRng) -> Box<dyn Qdisc<P>> {
        Box::new(FqCodel::new(self.clone(), rng))
    }
}

/// Which DRR++ list a bucket is on (Linux: `flowchain` linked into one list or empty).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum List {
    None,
    New,
    Old,
}

/// One hash bucket (Linux `struct fq_codel_flow` plus its `backlogs[]` entry).
struct Flow<P> {
    queue: VecDeque<P>,
    /// Bytes queued in this bucket.
    backlog: u64,
    deficit: i32,
    cvars: CodelVars,
    list: List,
}

/// The `fq_codel` qdisc.
pub struct FqCodel<P> {
    params: FqCodelParams,
    cfg: CodelConfig,
    /// Hash perturbation (Linux: the per-boot flow-dissector hash key).
    perturbation: u32,
    flows: Vec<Flow<P>>,
    new_flows: VecDeque<u32>,
    old_flows: VecDeque<u32>,
    /// Sum of modelled truesize of queued packets.
    memory_usage: u64,
    cstats: CodelStats,
    drop_overlimit: u64,
    drop_overmemory: u64,
    new_flow_count: u64,
    stats: QdiscStats,
}

impl<P: QdiscPacket> FqCodel<P> {
    /// Build the qdisc; draws the hash perturbation from `rng`, then (unless
    /// `uptime_ns` is given) the router's uptime.
    pub fn new(params: FqCodelParams, rng: &mut SimRng) -> Self {
        let perturbation = rng.next_u32();
        let uptime = draw_uptime_ns(params.uptime_ns, rng);
        let cfg = CodelConfig::from_ns(
            params.target_ns,
            params.interval_ns,
            params.ecn,
            params.ce_threshold_ns,
            params.ce_threshold_selector,
            params.mtu_bytes,
        )
        .with_clock_base(uptime);
        let n = params.flows as usize;
        let flows = (0..n)
            .map(|_| Flow {
                queue: VecDeque::new(),
                backlog: 0,
                deficit: 0,
                cvars: CodelVars::default(),
                list: List::None,
            })
            .collect();
        FqCodel {
            perturbation,
            cfg,
            flows,
            new_flows: VecDeque::with_capacity(n),
            old_flows: VecDeque::with_capacity(n),
            memory_usage: 0,
            cstats: CodelStats::default(),
            drop_overlimit: 0,
            drop_overmemory: 0,
            new_flow_count: 0,
            stats: QdiscStats::default(),
            params,
        }
    }

    pub fn params(&self) -> &FqCodelParams {
        &self.params
    }

    /// Bucket of `flow`: `reciprocal_scale(hash, flows)` = floor(hash x flows / 2^32)
    /// (sch_fq_codel.c:fq_codel_enqueue step 1).
    #[inline]
    pub fn bucket_of(&self, flow: u32) -> usize {
        ((flow_hash(flow, self.perturbation) as u64 * self.params.flows as u64) >> 32) as usize
    }

    /// CoDel state of a bucket (tests, diagnostics).
    pub fn bucket_vars(&self, bucket: usize) -> &CodelVars {
        &self.flows[bucket].cvars
    }

    /// Packets queued in a bucket.
    pub fn bucket_len(&self, bucket: usize) -> usize {
        self.flows[bucket].queue.len()
    }

    /// Bytes of modelled truesize queued.
    pub fn memory_usage(&self) -> u64 {
        self.memory_usage
    }

    /// Overflow drops caused by the memory limit.
    pub fn drop_overmemory(&self) -> u64 {
        self.drop_overmemory
    }

    /// The CoDel core counters (shared by all buckets, as in Linux).
    pub fn codel_stats(&self) -> &CodelStats {
        &self.cstats
    }

    /// `fq_codel_drop` (sch_fq_codel.c:fq_codel_enqueue step 5): drop from the head of the bucket with
    /// the largest byte backlog (first maximum in index order) until half of its
    /// backlog or `max_packets` packets are gone (at least one), and add the number
    /// dropped to its CoDel count (without a Newton step). Returns (bucket, dropped).
    fn drop_fattest(&mut self, max_packets: u32, ctx: &mut QdiscCtx<P>) -> (usize, u64) {
        let mut idx = 0;
        let mut maxbacklog = 0;
        for (i, f) in self.flows.iter().enumerate() {
            if f.backlog > maxbacklog {
                maxbacklog = f.backlog;
                idx = i;
            }
        }
        let threshold = maxbacklog >> 1;
        let flow = &mut self.flows[idx];
        let mut len = 0u64;
        let mut i = 0u32;
        // do { ... } while (++i < max_packets && len < threshold)
        while let Some(pkt) = flow.queue.pop_front() {
            len += pkt.wire_len() as u64;
            flow.backlog -= pkt.wire_len() as u64;
            self.memory_usage -= truesize(pkt.wire_len());
            self.stats.on_remove(&pkt);
            ctx.drop_counted(&mut self.stats, pkt);
            i += 1;
            if i >= max_packets || len >= threshold {
                break;
            }
        }
        // The victim's CoDel count grows by the batch, with no Newton step, so its
        // next CoDel drops come sooner (sch_fq_codel.c:fq_codel_drop, codel_impl.h:codel_Newton_step).
        flow.cvars.count = flow.cvars.count.wrapping_add(i);
        (idx, i as u64)
    }

    /// Where `dequeue` would take its next packet from, without changing state
    /// (walks DRR++ as far as needed; a bucket with no deficit gets its quantum
    /// added on the way, possibly more than once).
    fn peek_bucket(&self) -> Option<usize> {
        let q = self.params.quantum_bytes as i64;
        // First pass in service order with the current deficits.
        for &i in self.new_flows.iter().chain(self.old_flows.iter()) {
            let f = &self.flows[i as usize];
            if f.deficit > 0 && !f.queue.is_empty() {
                return Some(i as usize);
            }
        }
        // Every non-empty bucket has a non-positive deficit: each round adds one
        // quantum, so the first to become positive (in list order) is served.
        self.new_flows
            .iter()
            .chain(self.old_flows.iter())
            .map(|&i| i as usize)
            .filter(|&i| !self.flows[i].queue.is_empty())
            .min_by_key(|&i| (-(self.flows[i].deficit as i64)) / q)
    }
}

impl<P: QdiscPacket> FqCodel<P> {
    /// sch_fq_codel.c:fq_codel_enqueue steps 3 and 4, once bucket `idx` has the packet of
    /// `len` bytes at its tail: a bucket on neither list joins the tail of new_flows with a
    /// fresh quantum (one already on old_flows stays there, even if it was empty); then
    /// the memory and packet limits (qlen counts the new packet).
    #[inline(always)]
    fn schedule_and_limit(&mut self, idx: usize, len: u32, maxq_before: u64, ctx: &mut QdiscCtx<P>) {
        let flow = &mut self.flows[idx];
        if flow.list == List::None {
            flow.list = List::New;
            flow.deficit = self.params.quantum_bytes as i32;
            self.new_flows.push_back(idx as u32);
            self.new_flow_count += 1;
        }
        self.memory_usage += truesize(len);
        let memory_limited = self.memory_usage > self.params.memory_limit_bytes as u64;
        if self.stats.backlog_packets <= self.params.limit_packets as u64 && !memory_limited {
            return;
        }
        self.overlimit(memory_limited, maxq_before, ctx);
    }
}

impl<P: QdiscPacket> FqCodel<P> {
    /// Step 5 of `fq_codel_enqueue` (sch_fq_codel.c), past a limit: the fat-flow
    /// batch drop (RFC 8290 §4.1). The arriving packet survives unless the victim is
    /// its own bucket and the batch reaches the tail.
    #[cold]
    fn overlimit(&mut self, memory_limited: bool, maxq_before: u64, ctx: &mut QdiscCtx<P>) {
        let (_victim, dropped) = self.drop_fattest(self.params.drop_batch_size, ctx);
        self.drop_overlimit += dropped;
        if memory_limited {
            self.drop_overmemory += dropped;
        }
        // Linux's qlen exceeds the limit only inside this call; keep maxq at the
        // largest backlog left between calls.
        self.stats.maxq_packets = maxq_before.max(self.stats.backlog_packets);
    }
}

impl<P: QdiscPacket + Copy> FqCodel<P> {
    /// [`Qdisc::enqueue`] of a packet the caller keeps: the same steps, the packet
    /// copied once, into its bucket's slot, and stamped and classed there (as
    /// `Fifo::enqueue_ref`), instead of copied into the call, changed and copied again.
    #[inline]
    pub fn enqueue_ref(&mut self, pkt: &P, now: Time, ctx: &mut QdiscCtx<P>) {
        // sch_fq_codel.c:fq_codel_enqueue step 1: classify by hashed flow.
        let idx = self.bucket_of(pkt.flow_key());
        // Step 2: tail-append, stamp, account.
        let len = pkt.wire_len();
        let maxq_before = self.stats.maxq_packets;
        self.stats.on_enqueue(pkt);
        let flow = &mut self.flows[idx];
        flow.queue.push_back(*pkt);
        if let Some(p) = flow.queue.back_mut() {
            p.set_enqueue_ts(now);
            p.set_qclass(0);
        }
        flow.backlog += len as u64;
        self.schedule_and_limit(idx, len, maxq_before, ctx);
    }

    /// [`Qdisc::dequeue`] into `out`: the same DRR++ walk (sch_fq_codel.c:fq_codel_dequeue,
    /// [`drr_dequeue`](Self::drr_dequeue)), each bucket's CoDel through
    /// [`codel_dequeue_into`], so the packet sent is copied once, from its slot to `out`,
    /// unless CoDel dropped before it. Drops and marks are reported through `ctx` as
    /// `dequeue` reports them. False (and `out` untouched) if nothing is sent.
    #[inline(never)]
    pub fn dequeue_into(&mut self, now: Time, ctx: &mut QdiscCtx<P>, out: &mut P) -> bool {
        self.drr_dequeue(now, ctx, &mut IntoSlot(out))
    }
}

/// Where one bucket's CoDel puts the packet it sends: [`Qdisc::dequeue`]'s by-value
/// result or [`FqCodel::dequeue_into`]'s slot. The DRR++ walk around it is one
/// ([`FqCodel::drr_dequeue`]).
trait BucketSink<P: QdiscPacket> {
    /// Run the bucket's CoDel (`codel_dequeue` or `codel_dequeue_into`) and keep the packet
    /// it sends; that packet's wire length, or None if the bucket sent nothing.
    fn codel<F: FnMut(&P)>(
        &mut self,
        q: &mut QdiscFifo<'_, '_, P, F>,
        now: Time,
        cfg: &CodelConfig,
        vars: &mut CodelVars,
        stats: &mut CodelStats,
    ) -> Option<u32>;
    /// The packet kept by the last `codel` that sent one.
    fn sent(&self) -> Option<&P>;
}

/// [`Qdisc::dequeue`]'s sink: the packet by value.
struct ByValue<P>(Option<P>);

impl<P: QdiscPacket> BucketSink<P> for ByValue<P> {
    #[inline(always)]
    fn codel<F: FnMut(&P)>(
        &mut self,
        q: &mut QdiscFifo<'_, '_, P, F>,
        now: Time,
        cfg: &CodelConfig,
        vars: &mut CodelVars,
        stats: &mut CodelStats,
    ) -> Option<u32> {
        let pkt = codel_dequeue(q, now, cfg, vars, stats)?;
        let len = pkt.wire_len();
        self.0 = Some(pkt);
        Some(len)
    }
    #[inline(always)]
    fn sent(&self) -> Option<&P> {
        self.0.as_ref()
    }
}

/// [`FqCodel::dequeue_into`]'s sink: the caller's buffer.
struct IntoSlot<'a, P>(&'a mut P);

impl<P: QdiscPacket + Copy> BucketSink<P> for IntoSlot<'_, P> {
    #[inline(always)]
    fn codel<F: FnMut(&P)>(
        &mut self,
        q: &mut QdiscFifo<'_, '_, P, F>,
        now: Time,
        cfg: &CodelConfig,
        vars: &mut CodelVars,
        stats: &mut CodelStats,
    ) -> Option<u32> {
        codel_dequeue_into(q, self.0, now, cfg, vars, stats).then(|| self.0.wire_len())
    }
    #[inline(always)]
    fn sent(&self) -> Option<&P> {
        Some(&*self.0)
    }
}

impl<P: QdiscPacket> FqCodel<P> {
    /// sch_fq_codel.c:fq_codel_dequeue, DRR++ with per-bucket CoDel, the packet sent going
    /// to `sink`: true if one was sent.
    #[inline(always)]
    fn drr_dequeue<S: BucketSink<P>>(&mut self, now: Time, ctx: &mut QdiscCtx<P>, sink: &mut S) -> bool {
        loop {
            // Step 1: new flows first.
            let (from_new, idx) = if let Some(&i) = self.new_flows.front() {
                (true, i as usize)
            } else if let Some(&i) = self.old_flows.front() {
                (false, i as usize)
            } else {
                return false;
            };
            let flow = &mut self.flows[idx];
            // Step 2: quantum exhausted -> refill and move to the tail of old_flows.
            if flow.deficit <= 0 {
                flow.deficit += self.params.quantum_bytes as i32;
                if from_new {
                    self.new_flows.pop_front();
                } else {
                    self.old_flows.pop_front();
                }
                flow.list = List::Old;
                self.old_flows.push_back(idx as u32);
                continue;
            }
            // Step 3: per-bucket CoDel; the minimum-backlog rule sees the qdisc backlog.
            let Flow { queue, backlog, cvars, .. } = &mut *flow;
            let memory_usage = &mut self.memory_usage;
            let on_remove = |p: &P| {
                *backlog -= p.wire_len() as u64;
                *memory_usage -= truesize(p.wire_len());
            };
            let mut bq = QdiscFifo { queue, stats: &mut self.stats, ctx, on_remove };
            if let Some(len) = sink.codel(&mut bq, now, &self.cfg, cvars, &mut self.cstats) {
                // Step 5: charge the deficit.
                flow.deficit -= len as i32;
                if let Some(pkt) = sink.sent() {
                    self.stats.on_sent(pkt);
                }
                return true;
            }
            // Step 4: empty bucket. From new_flows with old_flows non-empty: to the tail
            // of old_flows (prevents starvation of old flows); otherwise off the lists (it
            // is "new" again on its next arrival).
            if from_new {
                self.new_flows.pop_front();
            } else {
                self.old_flows.pop_front();
            }
            if from_new && !self.old_flows.is_empty() {
                flow.list = List::Old;
                self.old_flows.push_back(idx as u32);
            } else {
                flow.list = List::None;
            }
        }
    }
}

impl<P: QdiscPacket> Qdisc<P> for FqCodel<P> {
    fn kind(&self) -> &'static str {
        "fq_codel"
    }

    fn enqueue(&mut self, mut pkt: P, now: Time, ctx: &mut QdiscCtx<P>) {
        // sch_fq_codel.c:fq_codel_enqueue step 1: classify by hashed flow.
        let idx = self.bucket_of(pkt.flow_key());
        // Step 2: stamp, tail-append, account.
        pkt.set_enqueue_ts(now);
        pkt.set_qclass(0);
        let len = pkt.wire_len();
        let maxq_before = self.stats.maxq_packets;
        self.stats.on_enqueue(&pkt);
        let flow = &mut self.flows[idx];
        flow.queue.push_back(pkt);
        flow.backlog += len as u64;
        self.schedule_and_limit(idx, len, maxq_before, ctx);
    }

    fn dequeue(&mut self, now: Time, ctx: &mut QdiscCtx<P>) -> Option<P> {
        // sch_fq_codel.c:fq_codel_dequeue (DRR++ with per-bucket CoDel).
        let mut sink = ByValue(None);
        self.drr_dequeue(now, ctx, &mut sink);
        sink.0
    }

    fn peek(&self) -> Option<&P> {
        self.peek_bucket().and_then(|i| self.flows[i].queue.front())
    }

    fn stats(&self) -> &QdiscStats {
        &self.stats
    }

    /// `tc -s` fq_codel xstats (sch_fq_codel.c:fq_codel_dump_stats).
    fn extra_stats(&self) -> Vec<(&'static str, f64)> {
        vec![
            ("ecn_mark", self.cstats.ecn_mark as f64),
            ("ce_mark", self.cstats.ce_mark as f64),
            ("drop_overlimit", self.drop_overlimit as f64),
            ("new_flow_count", self.new_flow_count as f64),
            ("new_flows_len", self.new_flows.len() as f64),
            ("old_flows_len", self.old_flows.len() as f64),
            // Not tc's: the router uptime the CoDel clock started from (codel.rs).
            ("uptime_s", self.cfg.clock_base_ns as f64 / 1e9),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qdisc::codel::CODEL_CLOCK_WRAP_NS;
    use crate::qdisc::testutil::TestPacket;
    use crate::qdisc::Ecn;
    use crate::rng;

    const MS: u64 = 1_000_000;

    fn pkt(flow: u32, id: u64, len: u32, ecn: Ecn) -> TestPacket {
        crate::qdisc::testutil::packet(flow, id, len, ecn)
    }

    use crate::qdisc::testutil::Harness;

    fn build(params: FqCodelParams) -> (FqCodel<TestPacket>, Harness) {
        let mut r = rng::stream(42, rng::Stream::Qdisc);
        (FqCodel::<TestPacket>::new(params, &mut r), Harness::with_seed(7))
    }

    /// Flow ids 0..n, asserting they sit in distinct buckets under this perturbation.
    fn distinct(q: &FqCodel<TestPacket>, n: u32) -> Vec<u32> {
        let mut b: Vec<usize> = (0..n).map(|f| q.bucket_of(f)).collect();
        b.sort();
        b.dedup();
        assert_eq!(b.len(), n as usize, "flows collide under this perturbation");
        (0..n).collect()
    }

    fn xstat(q: &FqCodel<TestPacket>, k: &str) -> f64 {
        q.extra_stats().into_iter().find(|(n, _)| *n == k).unwrap().1
    }

    #[test]
    fn hashing_uses_reciprocal_scale_and_perturbation() {
        let (q, _) = build(FqCodelParams::default());
        for f in 0..100 {
            assert!(q.bucket_of(f) < 1024);
        }
        // Another perturbation maps flows elsewhere.
        let mut r2 = rng::stream(43, rng::Stream::Qdisc);
        let q2 = FqCodel::<TestPacket>::new(FqCodelParams::default(), &mut r2);
        assert!((0..100).any(|f| q.bucket_of(f) != q2.bucket_of(f)));
        // With one bucket every flow shares it (and its FIFO order).
        let (mut q1, mut h) = build(FqCodelParams { flows: 1, ..Default::default() });
        for i in 0..4 {
            q1.enqueue(pkt(i as u32, i, 1514, Ecn::Ect0), 0, &mut h.ctx());
        }
        let order: Vec<u64> = (0..4).map(|_| q1.dequeue(0, &mut h.ctx()).unwrap().id).collect();
        assert_eq!(order, vec![0, 1, 2, 3]);
        // 1000 flows in 1024 buckets: ~1000 x (1 - e^-1000/1024)/... collisions exist
        // but most flows are alone (expected distinct buckets ~ 640).
        let mut b: Vec<usize> = (0..1000).map(|f| q.bucket_of(f)).collect();
        b.sort();
        b.dedup();
        assert!((580..700).contains(&b.len()), "{} distinct buckets", b.len());
    }

    #[test]
    fn new_flow_is_served_before_old_flows() {
        // sch_fq_codel.c:fq_codel_dequeue: new_flows has priority; a bucket that used its quantum moves
        // to old_flows; an emptied bucket leaves the lists and returns as new; one
        // still on old_flows when a packet arrives stays old (sch_fq_codel.c:fq_codel_enqueue step 3).
        let (mut q, mut h) = build(FqCodelParams::default());
        let f = distinct(&q, 3);
        for i in 0..2 {
            q.enqueue(pkt(f[0], i, 1514, Ecn::Ect0), 0, &mut h.ctx());
        }
        assert_eq!((xstat(&q, "new_flows_len"), xstat(&q, "old_flows_len")), (1.0, 0.0));
        // A's first packet from new_flows uses its quantum (deficit 0), so the next
        // call moves A to old_flows and serves it from there.
        assert_eq!(q.dequeue(0, &mut h.ctx()).unwrap().id, 0);
        assert_eq!(q.dequeue(0, &mut h.ctx()).unwrap().id, 1);
        assert_eq!((xstat(&q, "new_flows_len"), xstat(&q, "old_flows_len")), (0.0, 1.0));
        // A is empty but still on old_flows: its next packet does not make it new.
        q.enqueue(pkt(f[0], 2, 1514, Ecn::Ect0), 0, &mut h.ctx());
        assert_eq!((xstat(&q, "new_flows_len"), xstat(&q, "new_flow_count")), (0.0, 1.0));
        // B arrives later than A's packet but is served first.
        q.enqueue(pkt(f[1], 100, 1514, Ecn::Ect0), 1_000, &mut h.ctx());
        assert_eq!((xstat(&q, "new_flows_len"), xstat(&q, "new_flow_count")), (1.0, 2.0));
        assert_eq!(q.peek().unwrap().id, 100);
        assert_eq!(q.dequeue(2_000, &mut h.ctx()).unwrap().id, 100);
        // B (deficit 0) goes behind A on old_flows; A gets a quantum and goes behind
        // B; B is empty and leaves the lists; A is served.
        assert_eq!(q.dequeue(2_000, &mut h.ctx()).unwrap().id, 2);
        assert_eq!((xstat(&q, "new_flows_len"), xstat(&q, "old_flows_len")), (0.0, 1.0));
        // A small packet of a sparse flow C also jumps ahead; C keeps 1448 B deficit.
        q.enqueue(pkt(f[0], 3, 1514, Ecn::Ect0), 3_000, &mut h.ctx());
        q.enqueue(pkt(f[2], 200, 66, Ecn::NotEct), 4_000, &mut h.ctx());
        assert_eq!(q.dequeue(5_000, &mut h.ctx()).unwrap().id, 200);
        assert_eq!((xstat(&q, "new_flows_len"), xstat(&q, "old_flows_len")), (1.0, 1.0));
        // Empty C moves from new_flows to the tail of old_flows (old_flows is
        // non-empty: no starvation of old flows), A (deficit 0) gets a quantum and
        // goes behind C, C leaves the lists from old_flows, A is served.
        assert_eq!(q.dequeue(5_000, &mut h.ctx()).unwrap().id, 3);
        assert_eq!((xstat(&q, "new_flows_len"), xstat(&q, "old_flows_len")), (0.0, 1.0));
        assert!(q.dequeue(5_000, &mut h.ctx()).is_none());
        assert_eq!((xstat(&q, "new_flows_len"), xstat(&q, "old_flows_len")), (0.0, 0.0));
        // A returns as a new flow.
        q.enqueue(pkt(f[0], 300, 1514, Ecn::Ect0), 6_000, &mut h.ctx());
        assert_eq!((xstat(&q, "new_flows_len"), xstat(&q, "new_flow_count")), (1.0, 4.0));
        assert_eq!(q.stats().drops, 0);
    }

    #[test]
    fn drr_shares_bytes_equally_with_different_packet_sizes() {
        // sch_fq_codel.c:fq_codel_dequeue: quantum 1514 B per round; 1514-B vs 500-B packets.
        let (mut q, mut h) = build(FqCodelParams::default());
        let f = distinct(&q, 2);
        let mut id = 0;
        for _ in 0..2000 {
            q.enqueue(pkt(f[0], id, 1514, Ecn::Ect0), 0, &mut h.ctx());
            id += 1;
        }
        for _ in 0..6000 {
            q.enqueue(pkt(f[1], id, 500, Ecn::Ect0), 0, &mut h.ctx());
            id += 1;
        }
        let mut bytes = [0u64; 2];
        let mut pkts = [0u64; 2];
        for _ in 0..4000 {
            // now = 0: zero sojourn, so CoDel never interferes.
            let p = q.dequeue(0, &mut h.ctx()).unwrap();
            bytes[p.flow as usize] += p.wire_len as u64;
            pkts[p.flow as usize] += 1;
        }
        // Equal bytes within one quantum-plus-packet.
        let diff = bytes[0].abs_diff(bytes[1]);
        assert!(diff <= 1514 + 1514, "bytes {bytes:?}");
        assert!(pkts[1] > 2 * pkts[0], "packets {pkts:?}");
        assert_eq!(q.stats().drops, 0);
    }

    #[test]
    fn vector8_fattest_flow_batch_drop() {
        // Worked example: limit 167; 160 + 7 frames; arrival 168 drops
        // min(64, half of 160 frames' bytes = 80 frames) = 64 from the fat head.
        for arrival_flow in [1usize, 0] {
            let (mut q, mut h) = build(FqCodelParams { limit_packets: 167, ..Default::default() });
            let f = distinct(&q, 2);
            let (fat, thin) = (q.bucket_of(f[0]), q.bucket_of(f[1]));
            for i in 0..160 {
                q.enqueue(pkt(f[0], i, 1514, Ecn::Ect0), 0, &mut h.ctx());
            }
            for i in 0..7 {
                q.enqueue(pkt(f[1], 1000 + i, 1514, Ecn::Ect0), 0, &mut h.ctx());
            }
            assert!(h.dropped.is_empty());
            assert_eq!(q.len(), 167);
            q.enqueue(pkt(f[arrival_flow], 5000, 1514, Ecn::Ect0), 0, &mut h.ctx());
            assert_eq!(h.dropped.len(), 64);
            // From the head of the fat bucket, in order.
            assert_eq!(h.dropped.iter().map(|p| p.id).collect::<Vec<_>>(), (0..64).collect::<Vec<u64>>());
            assert_eq!(q.len(), 168 - 64);
            assert_eq!(q.stats().drops, 64);
            assert_eq!(xstat(&q, "drop_overlimit"), 64.0);
            assert_eq!(q.drop_overmemory(), 0);
            // CoDel count of the victim inflated by the batch.
            assert_eq!(q.bucket_vars(fat).count, 64);
            assert_eq!(q.bucket_vars(thin).count, 0);
            // The arriving packet survived at its bucket's tail.
            let b = q.bucket_of(f[arrival_flow]);
            assert_eq!(q.flows[b].queue.back().unwrap().id, 5000);
            assert_eq!(q.bucket_len(fat), if arrival_flow == 0 { 97 } else { 96 });
            assert_eq!(q.stats().backlog_bytes, 104 * 1514);
            assert_eq!(q.stats().maxq_packets, 167);
            assert_eq!(q.memory_usage(), 104 * truesize(1514));
        }
    }

    #[test]
    fn first_episode_after_a_batch_drop_depends_on_the_router_clock() {
        // sch_fq_codel.c:fq_codel_drop raises a fresh bucket's count (codel_vars_init: all 0,
        // rec_inv_sqrt 0 too) by the batch; its first CoDel episode then sees
        // delta = count - lastcount > 1 and tests now - drop_next (drop_next still 0)
        // against 16 intervals (include/net/codel_impl.h:codel_dequeue) with now =
        // ktime_get_ns() >> 10 as u32 (include/net/codel.h:codel_get_time): the router's
        // uptime decides. 1000 s: (s32)(16 I - now) < 0, count = 1, r = 0xFFFF. 3000 s
        // (> 2^31 codel units): "before", count = delta with one Newton step from r = 0,
        // which stays 0, so every later dequeue in the episode marks.
        const S: u64 = 1_000_000_000;
        for (uptime, stuck) in [(1_000 * S, false), (3_000 * S, true)] {
            let (mut q, mut h) =
                build(FqCodelParams { limit_packets: 100, uptime_ns: Some(uptime), ..Default::default() });
            let f = distinct(&q, 1)[0];
            let b = q.bucket_of(f);
            for i in 0..101 {
                q.enqueue(pkt(f, i, 1514, Ecn::Ect1), 0, &mut h.ctx());
            }
            // 101 frames over a 100-frame limit: half the backlog (51 frames) dropped.
            assert_eq!(h.dropped.len(), 51);
            assert_eq!((q.bucket_vars(b).count, q.bucket_vars(b).rec_inv_sqrt), (51, 0));
            // Sojourn above target from the first dequeue on; one interval later the
            // episode starts (the frames were queued at 0, so every sojourn is > 5 ms).
            let p = q.dequeue(10 * MS, &mut h.ctx()).unwrap();
            assert_eq!(p.ecn, Ecn::Ect1);
            let entry = q.dequeue(111 * MS, &mut h.ctx()).unwrap();
            assert_eq!(entry.ecn, Ecn::Ce, "entering the dropping state marks");
            let v = *q.bucket_vars(b);
            assert!(v.dropping);
            if stuck {
                assert_eq!((v.count, v.rec_inv_sqrt), (51, 0));
            } else {
                assert_eq!((v.count, v.rec_inv_sqrt), (1, 0xFFFF));
            }
            // The next 40 frames at 100 Mbit/s (121 us apart): the control law with
            // r = 0 marks every one; with r = 1.0 the next mark is an interval away.
            let marked = (0..40)
                .filter(|k| q.dequeue(111 * MS + (k + 1) * 121_000, &mut h.ctx()).unwrap().ecn == Ecn::Ce)
                .count();
            assert_eq!(marked, if stuck { 40 } else { 0 }, "uptime {uptime}");
        }
        // The default draws the uptime from the seed, over one wrap of the 32-bit clock.
        let mut r = rng::stream(1, rng::Stream::Qdisc);
        let draws: Vec<u64> = (0..200).map(|_| draw_uptime_ns(None, &mut r)).collect();
        assert!(draws.iter().all(|&u| u < CODEL_CLOCK_WRAP_NS));
        let upper = draws.iter().filter(|&&u| u >= CODEL_CLOCK_WRAP_NS / 2).count();
        assert!((70..=130).contains(&upper), "{upper} of 200 in the upper half");
        assert_eq!(draw_uptime_ns(Some(5), &mut r), 5);
    }

    #[test]
    fn batch_drop_stops_at_half_the_backlog() {
        // 20 frames in the fat bucket: half = 10 frames < 64.
        let (mut q, mut h) = build(FqCodelParams { limit_packets: 22, ..Default::default() });
        let f = distinct(&q, 2);
        for i in 0..20 {
            q.enqueue(pkt(f[0], i, 1514, Ecn::Ect0), 0, &mut h.ctx());
        }
        for i in 0..3 {
            q.enqueue(pkt(f[1], 100 + i, 1514, Ecn::Ect0), 0, &mut h.ctx());
        }
        assert_eq!(h.dropped.len(), 10);
        assert_eq!(q.len(), 13);
    }

    #[test]
    fn memory_limit_triggers_the_batch_drop() {
        // 10 frames of truesize 2304 fit in 23 040 B; the 11th overflows.
        let (mut q, mut h) = build(FqCodelParams { memory_limit_bytes: 10 * 2304, ..Default::default() });
        let f = distinct(&q, 1);
        for i in 0..11 {
            q.enqueue(pkt(f[0], i, 1514, Ecn::Ect0), 0, &mut h.ctx());
        }
        // Half of 11 frames' bytes -> 6 frames (5.5 rounded up by the >= test).
        assert_eq!(h.dropped.len(), 6);
        assert_eq!(q.drop_overmemory(), 6);
        assert_eq!(xstat(&q, "drop_overlimit"), 6.0);
        assert_eq!(q.memory_usage(), 5 * 2304);
    }

    #[test]
    fn l4s_aware_selector_marks_ect1_and_ce_but_never_ect0() {
        // The L4S-aware setting (Linux 5.16 commit dfcb63ce1de6): ce_threshold 1 ms, selector 0x01/0x01.
        let (mut q, mut h) = build(FqCodelParams {
            limit_packets: 167,
            ce_threshold_ns: Some(MS),
            ce_threshold_selector: Some((0x01, 0x01)),
            ..Default::default()
        });
        let f = distinct(&q, 4);
        let codepoints = [Ecn::Ect1, Ecn::Ect0, Ecn::Ce, Ecn::NotEct];
        // Each flow: one packet that will wait 0.5 ms, one that will wait 2 ms
        // (4.9 ms for ECT(0), still below the 5 ms CoDel target).
        let mut id = 0;
        for (k, &ecn) in codepoints.iter().enumerate() {
            q.enqueue(pkt(f[k], id, 1514, ecn), 0, &mut h.ctx());
            id += 1;
        }
        let mut out = Vec::new();
        for _ in 0..4 {
            out.push(q.dequeue(500_000, &mut h.ctx()).unwrap());
        }
        // 0.5 ms <= 1 ms: nothing marked; CE stays CE but is not counted.
        assert!(out.iter().zip(codepoints).all(|(p, e)| p.ecn == e));
        assert_eq!(q.codel_stats().ce_mark, 0);
        for (k, &ecn) in codepoints.iter().enumerate() {
            q.enqueue(pkt(f[k], id, 1514, ecn), 10 * MS, &mut h.ctx());
            id += 1;
        }
        let mut out = Vec::new();
        for _ in 0..4 {
            out.push(q.dequeue(10 * MS + 4_900_000, &mut h.ctx()).unwrap());
        }
        out.sort_by_key(|p| p.id);
        assert_eq!(out[0].ecn, Ecn::Ce); // ECT(1) marked
        assert_eq!(out[1].ecn, Ecn::Ect0); // ECT(0) never step-marked
        assert_eq!(out[2].ecn, Ecn::Ce); // CE re-marked (counted)
        assert_eq!(out[3].ecn, Ecn::NotEct); // Not-ECT: selector fails; never dropped
        assert_eq!(q.codel_stats().ce_mark, 2);
        assert_eq!(xstat(&q, "ce_mark"), 2.0);
        assert_eq!(xstat(&q, "ecn_mark"), 0.0);
        assert_eq!(q.stats().marks, 2);
        assert_eq!(h.marked, vec![f[0], f[2]]);
        assert_eq!(q.stats().drops, 0);

        // Without a selector the same threshold marks ECT(0) too.
        let (mut q, mut h) = build(FqCodelParams { ce_threshold_ns: Some(MS), ..Default::default() });
        q.enqueue(pkt(0, 0, 1514, Ecn::Ect0), 0, &mut h.ctx());
        assert_eq!(q.dequeue(2 * MS, &mut h.ctx()).unwrap().ecn, Ecn::Ce);
    }

    #[test]
    fn ect0_under_l4s_mode_only_sees_the_codel_law() {
        // A standing ECT(0) queue above 5 ms is CoDel-marked (ecn on by default), one
        // interval after first exceeding target, at the spaced control-law times;
        // the ce_threshold selector never marks it.
        let (mut q, mut h) = build(FqCodelParams {
            ce_threshold_ns: Some(MS),
            ce_threshold_selector: Some((0x01, 0x01)),
            ..Default::default()
        });
        let f = distinct(&q, 1);
        const STEP: u64 = 10 * 1024;
        for i in 0..1000 {
            q.enqueue(pkt(f[0], i, 1514, Ecn::Ect0), 0, &mut h.ctx());
        }
        let mut t = 0;
        let mut id = 10_000;
        let mut marks = Vec::new();
        while t < 300 * MS {
            let m0 = h.marked.len();
            assert!(q.dequeue(t, &mut h.ctx()).is_some());
            if h.marked.len() > m0 {
                marks.push(t);
            }
            q.enqueue(pkt(f[0], id, 1514, Ecn::Ect0), t, &mut h.ctx());
            id += 1;
            t += STEP;
        }
        let gaps: Vec<f64> = marks.windows(2).map(|w| (w[1] - w[0]) as f64 / 1e6).collect();
        assert!((marks[0] as f64 / 1e6 - 105.0).abs() < 0.1, "{marks:?}");
        for (g, s) in gaps.iter().zip([100.0, 50.0, 56.2]) {
            assert!((g - s).abs() <= 0.1, "{gaps:?}");
        }
        // Linux quirk: a CoDel-marked ECT(0) packet is CE when the ce_threshold test
        // runs, so the 0x01/0x01 selector matches and ce_mark counts it as well;
        // the flow still sees one marked packet per CoDel mark.
        assert_eq!(q.codel_stats().ecn_mark, marks.len() as u64);
        assert_eq!(q.codel_stats().ce_mark, marks.len() as u64);
        assert_eq!(q.stats().marks, marks.len() as u64);
        assert_eq!(h.marked.len(), marks.len());
        assert_eq!(q.stats().drops, 0);
    }

    #[test]
    fn codel_min_backlog_uses_the_whole_qdisc() {
        // sch_fq_codel.c:fq_codel_dequeue: a bucket holding a single packet is
        // CoDel-dropped when other buckets hold more than one MTU (noecn). Uptime 0:
        // CoDel's clock reads simulated time.
        let (mut q, mut h) = build(FqCodelParams { ecn: false, uptime_ns: Some(0), ..Default::default() });
        let f = distinct(&q, 2);
        let a = q.bucket_of(f[0]);
        q.enqueue(pkt(f[0], 1, 1514, Ecn::NotEct), 0, &mut h.ctx());
        for i in 0..3 {
            q.enqueue(pkt(f[1], 100 + i, 1514, Ecn::NotEct), 0, &mut h.ctx());
        }
        // A1 waits 10 ms > target with 3 x 1514 B left in the qdisc: above target.
        assert_eq!(q.dequeue(10 * MS, &mut h.ctx()).unwrap().id, 1);
        assert_eq!(q.bucket_vars(a).first_above_time, ((10 * MS) >> 10) as u32 + 97_656);
        q.enqueue(pkt(f[0], 2, 1514, Ecn::NotEct), 100 * MS, &mut h.ctx());
        // A moves to old_flows, B (new) is served; then A2 (alone in its bucket,
        // 20 ms sojourn, 3028 B left in the qdisc) is dropped and B served again.
        assert_eq!(q.dequeue(120 * MS, &mut h.ctx()).unwrap().id, 100);
        assert_eq!(q.dequeue(120 * MS, &mut h.ctx()).unwrap().id, 101);
        assert_eq!(h.dropped.iter().map(|p| p.id).collect::<Vec<_>>(), vec![2]);
        assert!(q.bucket_vars(a).dropping);
        assert_eq!(q.bucket_vars(a).count, 1);
        assert_eq!(q.codel_stats().drop_count, 1);
        // Alone in the qdisc, the same pattern never drops (backlog <= 1 MTU).
        let (mut q, mut h) = build(FqCodelParams { ecn: false, ..Default::default() });
        for k in 0..10 {
            q.enqueue(pkt(f[0], k, 1514, Ecn::NotEct), k * 100 * MS, &mut h.ctx());
            assert!(q.dequeue(k * 100 * MS + 50 * MS, &mut h.ctx()).is_some());
        }
        assert_eq!(q.stats().drops, 0);
    }

    #[test]
    fn validation_and_serde() {
        assert!(FqCodelParams::default().validate().is_ok());
        let e = FqCodelParams { flows: 0, ..Default::default() }.validate().unwrap_err();
        assert!(e.starts_with("flows: 0 is out of range"), "{e}");
        let e = FqCodelParams { quantum_bytes: 100, ..Default::default() }.validate().unwrap_err();
        assert!(e.starts_with("quantum_bytes: 100 is out of range"), "{e}");
        let e = FqCodelParams { drop_batch_size: 0, ..Default::default() }.validate().unwrap_err();
        assert!(e.starts_with("drop_batch_size: 0 is out of range"), "{e}");
        let e = FqCodelParams { interval_ns: 0, ..Default::default() }.validate().unwrap_err();
        assert!(e.starts_with("interval_ns: 0 is out of range"), "{e}");
        let p: FqCodelParams = serde_json::from_str(
            r#"{"limit_packets": 167, "ce_threshold_ns": 1000000, "ce_threshold_selector": [1, 1]}"#,
        )
        .unwrap();
        assert_eq!(p.ce_threshold_selector, Some((1, 1)));
        assert!(p.ecn);
        assert!(serde_json::from_str::<FqCodelParams>(r#"{"bogus": 1}"#).is_err());
        assert_eq!(truesize(1514), 2304);
        assert_eq!(truesize(66), 2304);
        assert_eq!(truesize(3000), 256 + 4096);
    }

    /// `enqueue_ref` and `dequeue_into` (the link's calls) take the same decisions
    /// and counts as `enqueue` and `dequeue`, report the same drops and marks and hand
    /// out the same packets (and the same per-bucket CoDel state after every step): two
    /// queues driven side by side, five flows of mixed codepoints and sizes through
    /// overloads and bursts past the packet limit (batch drops) alternating with phases
    /// that drain the queue below target, a pause and a second overload, with and
    /// without ECN, plain and L4S-aware ce_threshold, and once under a memory limit.
    #[test]
    fn by_reference_calls_match_enqueue_and_dequeue() {
        let l4s = (Some(MS), Some((0x01, 0x01)));
        for (ecn, (ce_threshold_ns, ce_threshold_selector), memory_limit_bytes) in [
            (true, (None, None), 32 << 20),
            (false, (None, None), 32 << 20),
            (true, l4s, 32 << 20),
            (true, (Some(2 * MS), None), 32 << 20),
            (true, (None, None), 400_000),
        ] {
            let params = FqCodelParams {
                limit_packets: 1000,
                ecn,
                ce_threshold_ns,
                ce_threshold_selector,
                memory_limit_bytes,
                ..Default::default()
            };
            let (mut a, mut ha) = build(params.clone());
            let (mut b, mut hb) = build(params);
            let ecns = [Ecn::NotEct, Ecn::Ect0, Ecn::Ect1, Ecn::Ce];
            let (mut sent, mut id) = (0u64, 0u64);
            // Arrivals every 100 µs; departures every 121 µs (a 20 % overload), then
            // none arriving for a second, then the overload again.
            for step in 0..80_000u64 {
                let now = step * 100_000;
                // And a burst of 150 every half second, past the packet limit.
                let arrivals = match step {
                    30_000..40_000 => 0,
                    _ if step % 5_000 == 0 => 150,
                    _ => 1,
                };
                for _ in 0..arrivals {
                    let flow = (id % 5) as u32;
                    let mut p = pkt(flow, id, [1514, 66, 800][(id % 3) as usize], ecns[(id % 7 % 4) as usize]);
                    p.qclass = 9;
                    id += 1;
                    a.enqueue(p, now, &mut ha.ctx());
                    b.enqueue_ref(&p, now, &mut hb.ctx());
                }
                // Every other 0.3 s, eleven departures per ten arrivals: the queue drains
                // below target while CoDel is dropping, without emptying.
                let departures =
                    if (step / 3_000) % 2 == 1 { 1 + (step % 10 == 0) as u32 } else { (step % 6 != 5) as u32 };
                for _ in 0..departures {
                    let got = a.dequeue(now, &mut ha.ctx());
                    let mut out = pkt(0, u64::MAX, 1, Ecn::NotEct);
                    let ok = b.dequeue_into(now, &mut hb.ctx(), &mut out);
                    assert_eq!(got, ok.then_some(out), "step {step}");
                    sent += ok as u64;
                }
                assert_eq!((ha.dropped.len(), ha.marked.len()), (hb.dropped.len(), hb.marked.len()), "step {step}");
                for f in 0..5 {
                    let k = a.bucket_of(f);
                    assert_eq!(a.bucket_vars(k), b.bucket_vars(k), "step {step}");
                }
            }
            assert_eq!(ha.dropped, hb.dropped);
            assert_eq!(ha.marked, hb.marked);
            assert_eq!(a.stats, b.stats);
            assert_eq!(a.codel_stats(), b.codel_stats());
            assert_eq!(a.memory_usage(), b.memory_usage());
            assert_eq!(a.extra_stats(), b.extra_stats());
            for f in 0..5 {
                let k = a.bucket_of(f);
                assert_eq!(a.bucket_vars(k), b.bucket_vars(k));
            }
            let c = a.codel_stats();
            assert!(
                sent > 0 && a.drop_overlimit > 0 && c.drop_count > 0,
                "every path taken: {c:?} {}",
                a.drop_overlimit
            );
            assert_eq!(c.ecn_mark > 0, ecn);
            assert_eq!(c.ce_mark > 0, ce_threshold_ns.is_some());
            assert_eq!(a.drop_overmemory() > 0, memory_limit_bytes < 1 << 20);
        }
    }
}
