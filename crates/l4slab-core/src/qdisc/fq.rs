//! `fq` (Linux `net/sched/sch_fq.c`, Eric Dumazet) for forwarded traffic.
//!
//! Per-flow queues served by DRR with a new-flows list (initial quantum) and an
//! old-flows list, per-flow and total tail-drop limits, and a dequeue-time CE step at
//! `ce_threshold`. The router forwards every packet, so every packet is an "orphan"
//! (no socket): its flow is `hash(5-tuple) & orphan_mask` — here
//! `hash(Packet::flow, perturbation) & orphan_mask` — and, with `skb->tstamp` cleared
//! by the forwarding path, nothing is ever paced (forwarded skbs carry no socket pacing rate: sch_fq.c:fq_dequeue).
//! `orphan_mask 0` puts every packet in one flow: the studies' "FIFO+ECN" (as the PAM 2025 testbed configured it).
//!
//! Not modelled (no effect on forwarded traffic without `maxrate`): pacing / throttled
//! flows, `maxrate`, `low_rate_threshold`, `horizon`, `timer_slack`, and the ≥ 6.7
//! priority bands (every packet has priority 0 → band 1, so band selection never
//! changes the order). The ≥ 6.7 internal fast-path queue is optional (`fastpath`).

use super::{flow_hash, Qdisc, QdiscCtx, QdiscKind, QdiscPacket, QdiscStats, PSCHED_MTU, TC_MAX_US_NS};
use crate::rng::SimRng;
use crate::schema::{ParamKind, ParamSpec};
use crate::time::{jiffies, Time, HZ, NS_PER_JIFFY, NS_PER_MS, NS_PER_US};
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::collections::{HashMap, VecDeque};
use std::hash::{BuildHasherDefault, DefaultHasher};

/// Detached flows older than this are garbage-collected (`FQ_GC_AGE` = 3 s).
const GC_AGE_JIFFIES: u64 = 3 * HZ;
/// "Disabled" ce_threshold: ~0U µs (≈ 4295 s), as Linux's default.
const CE_THRESHOLD_OFF_NS: u64 = u32::MAX as u64 * NS_PER_US;
/// Fast path admits at most this many packets to the internal queue (Linux ≥ 6.7).
const FASTPATH_MAX: usize = 8;
/// `GOLDEN_RATIO_64` of `hash_64()` / `hash_ptr()`.
const GOLDEN_RATIO_64: u64 = 0x61C8_8646_80B5_83EB;

/// `tc qdisc add ... fq` parameters (sch_fq.c:fq_init, iproute2 tc/q_fq.c). Defaults are Linux's (`fq_init`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FqParams {
    /// `limit`: total packets queued (≥ 6.7: per band, fast-path packets excluded).
    /// Default 10 000.
    pub limit_packets: u32,
    /// `flow_limit`: packets per flow. Default 100.
    pub flow_limit_packets: u32,
    /// `quantum`: DRR quantum in bytes. Default 2 × psched_mtu = 3028.
    pub quantum_bytes: u32,
    /// `initial_quantum`: credit of a newly created flow. Default 10 × psched_mtu = 15 140.
    pub initial_quantum_bytes: u32,
    /// `refill_delay`: a flow re-activated after being idle (detached) longer than this
    /// gets credit = max(credit, quantum). Default 40 ms (Linux: jiffies, rounded up).
    pub refill_delay_ns: u64,
    /// `orphan_mask`: mask on the flow hash of socket-less packets. Default 1023;
    /// 0 = all forwarded packets in one flow ("FIFO+ECN").
    pub orphan_mask: u32,
    /// `buckets`: hash-table size for flow lookup (tc takes ilog2). Default 1024. Only
    /// affects which detached flows garbage collection finds.
    pub buckets: u32,
    /// `ce_threshold`: set CE on packets whose sojourn exceeds it at dequeue.
    /// Default none (Linux: ~4295 s).
    pub ce_threshold_ns: Option<u64>,
    /// Model the Linux ≥ 6.7 internal fast-path FIFO (not a tc option; sch_fq.c:fq_enqueue
    /// step 3; which kernel the testbed ran is not confirmed): packets arriving while no flow has packets go to an
    /// unmarked FIFO served first (≤ 8 packets). Default false (pre-6.7 behaviour).
    pub fastpath: bool,
}

impl Default for FqParams {
    fn default() -> Self {
        FqParams {
            limit_packets: 10_000,
            flow_limit_packets: 100,
            quantum_bytes: 2 * PSCHED_MTU,
            initial_quantum_bytes: 10 * PSCHED_MTU,
            refill_delay_ns: 40 * NS_PER_MS,
            orphan_mask: 1023,
            buckets: 1024,
            ce_threshold_ns: None,
            fastpath: false,
        }
    }
}

impl QdiscKind for FqParams {
    const KIND: &'static str = "fq";
    const DOC: &'static str =
        "FQ: per-flow DRR with CE marking on sojourn; no pacing for forwarded packets (net/sched/sch_fq.c).";

    fn params() -> Vec<ParamSpec> {
        let d = FqParams::default();
        // tc carries times as u32 microseconds (iproute2 tc/q_fq.c).
        let max_us_ns = TC_MAX_US_NS as f64;
        vec![
            ParamSpec::new(
                "limit_packets",
                ParamKind::Packets,
                json!(d.limit_packets),
                "Total packets queued, per band on Linux >= 6.7 (net/sched/sch_fq.c:fq_init: 10000).",
            )
            .range(1.0, u32::MAX as f64),
            ParamSpec::new(
                "flow_limit_packets",
                ParamKind::Packets,
                json!(d.flow_limit_packets),
                "Packets per flow (net/sched/sch_fq.c:fq_init: 100).",
            )
            .range(1.0, u32::MAX as f64),
            ParamSpec::new(
                "quantum_bytes",
                ParamKind::Bytes,
                json!(d.quantum_bytes),
                "DRR quantum (net/sched/sch_fq.c:fq_init: 2 * psched_mtu; fq_change refuses 0 and > 1 MiB).",
            )
            .range(1.0, (1 << 20) as f64),
            ParamSpec::new(
                "initial_quantum_bytes",
                ParamKind::Bytes,
                json!(d.initial_quantum_bytes),
                "Credit of a new flow (net/sched/sch_fq.c:fq_init: 10 * psched_mtu; signed 32-bit credit).",
            )
            .range(0.0, i32::MAX as f64),
            ParamSpec::new(
                "refill_delay_ns",
                ParamKind::TimeNs,
                json!(d.refill_delay_ns),
                "A flow idle longer than this gets credit >= quantum on return, in jiffies rounded up \
                 (net/sched/sch_fq.c:fq_init: msecs_to_jiffies(40)).",
            )
            .range(0.0, max_us_ns),
            ParamSpec::new(
                "orphan_mask",
                ParamKind::Int,
                json!(d.orphan_mask),
                "Mask on the flow hash of socket-less packets; 0 = one flow, the studies' FIFO+ECN \
                 (net/sched/sch_fq.c:fq_init: 1024 - 1).",
            )
            .range(0.0, u32::MAX as f64),
            ParamSpec::new(
                "buckets",
                ParamKind::Int,
                json!(d.buckets),
                "Flow-lookup hash buckets, tc sends ilog2 (net/sched/sch_fq.c:fq_init: fq_trees_log = ilog2(1024); \
                 fq_change accepts log 1..=18).",
            )
            .range(2.0, (256 * 1024) as f64),
            ParamSpec::new(
                "ce_threshold_ns",
                ParamKind::TimeNs,
                json!(null),
                "CE-mark packets whose sojourn at dequeue exceeds this; null = disabled \
                 (net/sched/sch_fq.c:fq_init: (u64)NSEC_PER_USEC * ~0U).",
            )
            .range(0.0, max_us_ns),
            ParamSpec::new(
                "fastpath",
                ParamKind::Bool,
                json!(d.fastpath),
                "Not a tc keyword: model the Linux >= 6.7 internal fast-path FIFO (net/sched/sch_fq.c:\
                 fq_fastpath_check); false = pre-6.7 behaviour.",
            )
            .not_tc(),
        ]
    }

    fn build<P: QdiscPacket>(&self, rng: &mut SimRng) -> Box<dyn Qdisc<P>> {
        Box::new(Fq::new(self.clone(), rng))
    }
}

/// Where a flow is linked (Linux: `next` pointer / detached bit of `age`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Link {
    /// Not on any list; `age` holds the jiffies (|1) when it was detached.
    Detached,
    New,
    Old,
    /// Slot unused (garbage-collected).
    Free,
}

struct Flow<P> {
    key: u64,
    queue: VecDeque<P>,
    credit: i32,
    link: Link,
    /// `jiffies | 1` when detached (the Linux age encoding; sch_fq.c:fq_enqueue step 5).
    age: u64,
}

/// The FQ qdisc.
pub struct Fq<P> {
    params: FqParams,
    stats: QdiscStats,
    perturbation: u32,
    ce_threshold: u64,
    refill_delay_jiffies: u64,
    buckets_log: u32,

    flows: Vec<Flow<P>>,
    free_slots: Vec<u32>,
    /// Flow key -> slot. Hashed with fixed keys (`DefaultHasher::new`), not std's per-process
    /// random ones: the lookups, not only their answers, are then the same on every run.
    index: HashMap<u64, u32, BuildHasherDefault<DefaultHasher>>,
    bucket_members: Vec<Vec<u32>>,
    new_flows: VecDeque<u32>,
    old_flows: VecDeque<u32>,
    /// ≥ 6.7 fast-path FIFO (`q->internal`).
    internal: VecDeque<P>,
    /// Packets in flows (= band 1 count; excludes the fast-path FIFO).
    flow_pkts: u64,

    // `tc -s` counters.
    n_flows: u64,
    inactive_flows: u64,
    stat_gc_flows: u64,
    stat_ce_mark: u64,
    stat_flows_plimit: u64,
    stat_fastpath_packets: u64,
}

impl<P: QdiscPacket> Fq<P> {
    /// An FQ qdisc; draws the flow-hash perturbation from `rng`.
    pub fn new(params: FqParams, rng: &mut SimRng) -> Self {
        let buckets_log = 31 - params.buckets.max(2).leading_zeros(); // ilog2, as tc
        let ce_threshold = params.ce_threshold_ns.unwrap_or(CE_THRESHOLD_OFF_NS);
        // msecs_to_jiffies / usecs_to_jiffies round up.
        let refill_delay_jiffies = params.refill_delay_ns.div_ceil(NS_PER_JIFFY);
        let n_flows_hint = (params.orphan_mask as usize).saturating_add(1).min(64);
        Fq {
            stats: QdiscStats::default(),
            perturbation: rng.next_u32(),
            ce_threshold,
            refill_delay_jiffies,
            buckets_log,
            flows: Vec::with_capacity(n_flows_hint),
            free_slots: Vec::new(),
            index: HashMap::with_capacity_and_hasher(n_flows_hint, BuildHasherDefault::default()),
            bucket_members: (0..1usize << buckets_log).map(|_| Vec::new()).collect(),
            new_flows: VecDeque::with_capacity(64),
            old_flows: VecDeque::with_capacity(64),
            internal: VecDeque::with_capacity(FASTPATH_MAX),
            flow_pkts: 0,
            n_flows: 0,
            inactive_flows: 0,
            stat_gc_flows: 0,
            stat_ce_mark: 0,
            stat_flows_plimit: 0,
            stat_fastpath_packets: 0,
            params,
        }
    }

    /// Flow key of an orphan packet: `((hash & orphan_mask) << 1) | 1` (sch_fq.c:fq_classify).
    #[inline]
    fn orphan_key(&self, pkt: &P) -> u64 {
        let h = flow_hash(pkt.flow_key(), self.perturbation) & self.params.orphan_mask;
        ((h as u64) << 1) | 1
    }

    /// `hash_ptr(sk, fq_trees_log)` on a 64-bit kernel.
    #[inline]
    fn bucket_of(&self, key: u64) -> u32 {
        (key.wrapping_mul(GOLDEN_RATIO_64) >> (64 - self.buckets_log)) as u32
    }

    fn total_qlen(&self) -> u64 {
        self.stats.backlog_packets
    }

    /// `fq_fastpath_check` for a packet due now (sch_fq.c:fq_enqueue step 3; ≥ 6.7 only).
    fn fastpath_ok(&self) -> bool {
        if self.total_qlen() != 0 {
            // Some flow has packets (no flow is ever throttled here).
            if self.n_flows != self.inactive_flows {
                return false;
            }
            if self.internal.len() >= FASTPATH_MAX {
                return false;
            }
        }
        true
    }

    /// `fq_gc`: free detached flows idle > 3 s found while looking up `key` in its
    /// bucket. Linux collects those on the rb-tree path to `key`; this model collects
    /// every such flow of the bucket except `key` itself (an approximation: the path
    /// usually is the whole, tiny, bucket).
    fn gc(&mut self, bucket: u32, key: u64, now_j: u64) {
        let members = &mut self.bucket_members[bucket as usize];
        let flows = &mut self.flows;
        let mut freed = 0u64;
        let free_slots = &mut self.free_slots;
        let index = &mut self.index;
        members.retain(|&slot| {
            let f = &mut flows[slot as usize];
            if f.key != key && f.link == Link::Detached && now_j > f.age + GC_AGE_JIFFIES {
                f.link = Link::Free;
                f.queue.clear();
                index.remove(&f.key);
                free_slots.push(slot);
                freed += 1;
                false
            } else {
                true
            }
        });
        self.n_flows -= freed;
        self.inactive_flows -= freed;
        self.stat_gc_flows += freed;
    }

    /// `fq_classify` for an orphan packet: find or create its flow (sch_fq.c:fq_classify).
    fn classify(&mut self, pkt: &P, now: Time) -> u32 {
        let key = self.orphan_key(pkt);
        let bucket = self.bucket_of(key);
        let now_j = jiffies(now);
        if self.bucket_members[bucket as usize].len() > 1 || !self.index.contains_key(&key) {
            self.gc(bucket, key, now_j);
        }
        if let Some(&slot) = self.index.get(&key) {
            return slot;
        }
        // New flow: detached, credit = initial_quantum, counted inactive.
        let flow = Flow {
            key,
            queue: VecDeque::new(),
            credit: self.params.initial_quantum_bytes as i32,
            link: Link::Detached,
            age: now_j | 1,
        };
        let slot = if let Some(slot) = self.free_slots.pop() {
            let f = &mut self.flows[slot as usize];
            let queue = std::mem::take(&mut f.queue); // reuse the buffer
            *f = Flow { queue, ..flow };
            slot
        } else {
            let mut flow = flow;
            flow.queue = VecDeque::with_capacity((self.params.flow_limit_packets as usize).clamp(16, 256));
            self.flows.push(flow);
            (self.flows.len() - 1) as u32
        };
        self.index.insert(key, slot);
        self.bucket_members[bucket as usize].push(slot);
        self.n_flows += 1;
        self.inactive_flows += 1;
        slot
    }

    fn drop_packet(&mut self, pkt: P, ctx: &mut QdiscCtx<P>) {
        ctx.drop_counted(&mut self.stats, pkt);
    }

    /// Number of flows currently allocated (`flows` of `tc -s`).
    pub fn flow_count(&self) -> u64 {
        self.n_flows
    }
}

impl<P: QdiscPacket> Qdisc<P> for Fq<P> {
    fn kind(&self) -> &'static str {
        "fq"
    }

    fn enqueue(&mut self, mut pkt: P, now: Time, ctx: &mut QdiscCtx<P>) {
        pkt.set_qclass(0);
        // sch_fq.c:fq_enqueue step 1: total limit (≥ 6.7: the band's count, which excludes
        // the fast-path FIFO; identical when the fast path is not modelled).
        let counted = if self.params.fastpath { self.flow_pkts } else { self.total_qlen() };
        if counted >= self.params.limit_packets as u64 {
            self.drop_packet(pkt, ctx);
            return;
        }
        // sch_fq.c:fq_enqueue step 2: skb->tstamp == 0 for forwarded packets, so
        // time_to_send = now (kept in enqueue_ts).
        pkt.set_enqueue_ts(now);

        // sch_fq.c:fq_enqueue step 3 (≥ 6.7): fast path, checked before the flow lookup.
        if self.params.fastpath && self.fastpath_ok() {
            self.stat_fastpath_packets += 1;
            self.stats.on_enqueue(&pkt);
            self.internal.push_back(pkt);
            return;
        }

        let slot = self.classify(&pkt, now);
        let quantum = self.params.quantum_bytes;
        let refill = self.refill_delay_jiffies;
        let f = &mut self.flows[slot as usize];
        // sch_fq.c:fq_enqueue step 4: per-flow limit.
        if f.queue.len() >= self.params.flow_limit_packets as usize {
            self.stat_flows_plimit += 1;
            self.drop_packet(pkt, ctx);
            return;
        }
        // sch_fq.c:fq_enqueue step 5: a detached flow joins new_flows; after refill_delay of
        // idleness its credit becomes max(credit, quantum) compared as u32 (Linux
        // max_t(u32, ...)), with the `jiffies | 1` age.
        if f.link == Link::Detached {
            f.link = Link::New;
            self.new_flows.push_back(slot);
            if jiffies(now) > f.age + refill {
                f.credit = (f.credit as u32).max(quantum) as i32;
            }
        }
        if f.queue.is_empty() {
            self.inactive_flows -= 1;
        }
        self.stats.on_enqueue(&pkt);
        f.queue.push_back(pkt);
        self.flow_pkts += 1;
    }

    fn dequeue(&mut self, now: Time, ctx: &mut QdiscCtx<P>) -> Option<P> {
        if self.total_qlen() == 0 {
            return None;
        }
        // sch_fq.c:fq_dequeue step 1: fast-path FIFO first, never CE-marked.
        if let Some(pkt) = self.internal.pop_front() {
            self.stats.on_remove(&pkt);
            self.stats.on_sent(&pkt);
            return Some(pkt);
        }
        let quantum = self.params.quantum_bytes as i32;
        // sch_fq.c:fq_dequeue step 3: DRR over new_flows, then old_flows.
        loop {
            let (from_new, slot) = match self.new_flows.front() {
                Some(&s) => (true, s),
                None => (false, *self.old_flows.front()?),
            };
            let f = &mut self.flows[slot as usize];
            if f.credit <= 0 {
                f.credit += quantum;
                f.link = Link::Old;
                if from_new {
                    self.new_flows.pop_front();
                } else {
                    self.old_flows.pop_front();
                }
                self.old_flows.push_back(slot);
                continue;
            }
            let Some(mut pkt) = f.queue.pop_front() else {
                // Empty: new -> tail of old (forced pass to prevent starvation);
                // old -> detached.
                if from_new {
                    self.new_flows.pop_front();
                    f.link = Link::Old;
                    self.old_flows.push_back(slot);
                } else {
                    self.old_flows.pop_front();
                    f.link = Link::Detached;
                    f.age = jiffies(now) | 1;
                }
                continue;
            };
            // sch_fq.c:fq_dequeue step 4: CE step on sojourn (time_to_send = enqueue time,
            // time_next_packet = 0 without pacing): mark iff now − t > ce_threshold.
            // ce_mark counts even when set-CE fails on Not-ECT (include/net/inet_ecn.h:INET_ECN_set_ce).
            if (now.wrapping_sub(pkt.enqueue_ts()).wrapping_sub(self.ce_threshold) as i64) > 0 {
                self.stat_ce_mark += 1;
                if pkt.set_ce() {
                    ctx.mark_counted(&mut self.stats, pkt.flow_key());
                }
            }
            if f.queue.is_empty() {
                self.inactive_flows += 1;
            }
            // sch_fq.c:fq_dequeue step 5: DRR charge; no pacing for forwarded packets (no socket pacing rate).
            f.credit -= pkt.wire_len() as i32;
            self.flow_pkts -= 1;
            self.stats.on_remove(&pkt);
            self.stats.on_sent(&pkt);
            return Some(pkt);
        }
    }

    fn peek(&self) -> Option<&P> {
        if let Some(p) = self.internal.front() {
            return Some(p);
        }
        // Without mutating: a non-empty flow with credit c is served in DRR round
        // r = 0 if c > 0, else floor(−c / quantum) + 1; flows moved to old_flows keep
        // the order of new_flows ++ old_flows, so the earliest round wins, ties by
        // list order.
        let q = self.params.quantum_bytes as i64;
        let mut best: Option<(i64, u32)> = None;
        for &slot in self.new_flows.iter().chain(self.old_flows.iter()) {
            let f = &self.flows[slot as usize];
            if f.queue.is_empty() {
                continue;
            }
            let c = f.credit as i64;
            let r = if c > 0 { 0 } else { -c / q + 1 };
            if best.is_none_or(|(br, _)| r < br) {
                best = Some((r, slot));
            }
        }
        best.and_then(|(_, s)| self.flows[s as usize].queue.front())
    }

    fn stats(&self) -> &QdiscStats {
        &self.stats
    }

    fn extra_stats(&self) -> Vec<(&'static str, f64)> {
        // `tc -s qdisc show dev X` for fq (net/sched/sch_fq.c).
        vec![
            ("flows", self.n_flows as f64),
            ("inactive_flows", self.inactive_flows as f64),
            ("throttled", 0.0),
            ("ce_mark", self.stat_ce_mark as f64),
            ("flows_plimit", self.stat_flows_plimit as f64),
            ("gc", self.stat_gc_flows as f64),
            ("fastpath_packets", self.stat_fastpath_packets as f64),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qdisc::testutil::TestPacket;
    use crate::qdisc::Ecn;

    /// 1514-B frame time at 100 Mbit/s.
    const T_FRAME: Time = 121_120;

    fn pkt(flow: u32, id: u64, len: u32, ecn: Ecn) -> TestPacket {
        crate::qdisc::testutil::packet(flow, id, len, ecn)
    }

    use crate::qdisc::testutil::Harness as Bufs;

    fn make(params: FqParams, b: &mut Bufs) -> Fq<TestPacket> {
        params.validate().unwrap();
        Fq::<TestPacket>::new(params, &mut b.rng)
    }

    /// Dequeue everything at `t0`, `t0 + T_FRAME`, ...; checks peek == dequeue.
    fn drain(q: &mut Fq<TestPacket>, b: &mut Bufs, t0: Time) -> Vec<TestPacket> {
        let mut out = Vec::new();
        let mut t = t0;
        while !q.is_empty() {
            let peeked = *q.peek().unwrap();
            let p = q.dequeue(t, &mut b.ctx()).unwrap();
            assert_eq!(peeked.id, p.id, "peek disagrees with dequeue");
            out.push(p);
            t += T_FRAME;
        }
        out
    }

    /// Two flow ids with distinct orphan keys (collisions are possible by design).
    fn distinct_flows(q: &Fq<TestPacket>) -> (u32, u32) {
        let k0 = q.orphan_key(&pkt(0, 0, 1514, Ecn::NotEct));
        let other = (1..).find(|&f| q.orphan_key(&pkt(f, 0, 1514, Ecn::NotEct)) != k0).unwrap();
        (0, other)
    }

    #[test]
    fn defaults_and_validation() {
        let p = FqParams::default();
        assert_eq!(p.validate(), Ok(()));
        assert_eq!(
            (p.limit_packets, p.flow_limit_packets, p.quantum_bytes, p.initial_quantum_bytes),
            (10_000, 100, 3028, 15_140)
        );
        assert_eq!((p.orphan_mask, p.buckets, p.ce_threshold_ns), (1023, 1024, None));
        let mut b = Bufs::new();
        let q = make(p, &mut b);
        assert_eq!((q.buckets_log, q.refill_delay_jiffies, q.ce_threshold), (10, 40, 4_294_967_295_000));
        let bad = FqParams { quantum_bytes: 0, ..FqParams::default() };
        assert_eq!(bad.validate().unwrap_err(), "quantum_bytes: 0 is out of range (allowed 1..=1048576)");
    }

    #[test]
    fn orphan_mask_zero_is_one_fifo_across_flows() {
        // sch_fq.c:fq_classify: orphan_mask 0 -> one flow, strict FIFO order, and the
        // effective limit is min(limit, flow_limit).
        let mut b = Bufs::new();
        let mut q = make(FqParams { orphan_mask: 0, ..FqParams::default() }, &mut b);
        for i in 0..150u64 {
            let len = if i % 3 == 0 { 66 } else { 1514 };
            q.enqueue(pkt((i % 5) as u32, i, len, Ecn::NotEct), i * 1000, &mut b.ctx());
        }
        assert_eq!(q.len(), 100); // flow_limit 100 < limit 10 000
        assert_eq!(b.dropped.len(), 50);
        assert_eq!(q.stat_flows_plimit, 50);
        assert_eq!(q.flow_count(), 1);
        let out = drain(&mut q, &mut b, 1_000_000);
        let ids: Vec<u64> = out.iter().map(|p| p.id).collect();
        assert_eq!(ids, (0..100).collect::<Vec<_>>());
        assert!(out.iter().all(|p| p.qclass == 0));
    }

    #[test]
    fn default_mask_separates_flows_and_round_robins_by_quantum() {
        // sch_fq.c:fq_dequeue: both flows start on new_flows with 15 140 B (10 frames), then
        // alternate on old_flows with 3028 B (2 frames) per turn.
        let mut b = Bufs::new();
        let mut q = make(FqParams::default(), &mut b);
        let (fa, fb) = distinct_flows(&q);
        for i in 0..20u64 {
            q.enqueue(pkt(fa, i, 1514, Ecn::NotEct), 0, &mut b.ctx());
        }
        for i in 0..20u64 {
            q.enqueue(pkt(fb, 100 + i, 1514, Ecn::NotEct), 0, &mut b.ctx());
        }
        assert_eq!(q.flow_count(), 2);
        let order: Vec<u32> = drain(&mut q, &mut b, 0).iter().map(|p| p.flow).collect();
        let mut expect = vec![fa; 10];
        expect.extend(vec![fb; 10]);
        for _ in 0..5 {
            expect.extend([fa, fa, fb, fb]);
        }
        assert_eq!(order, expect);
        // 1000-B packets: 3028 B of credit buys 4 packets (3028 → 28 → −972).
        let mut q = make(FqParams { initial_quantum_bytes: 0, ..FqParams::default() }, &mut b);
        for i in 0..8u64 {
            q.enqueue(pkt(fa, i, 1000, Ecn::NotEct), 0, &mut b.ctx());
            q.enqueue(pkt(fb, 100 + i, 1000, Ecn::NotEct), 0, &mut b.ctx());
        }
        let order: Vec<u32> = drain(&mut q, &mut b, 0).iter().map(|p| p.flow).collect();
        // Deficits carry over: A 3028→−972 (4), B (4), A −972+3028 = 2056→−944 (3),
        // B (3), then the last one each.
        let expect = [vec![fa; 4], vec![fb; 4], vec![fa; 3], vec![fb; 3], vec![fa], vec![fb]].concat();
        assert_eq!(order, expect);
        assert_eq!(q.extra_stats()[1], ("inactive_flows", 2.0));
    }

    #[test]
    fn new_flow_is_served_before_backlogged_old_flow() {
        // sch_fq.c:fq_dequeue: new_flows are served before old_flows.
        let mut b = Bufs::new();
        let mut q = make(FqParams::default(), &mut b);
        let (fa, fb) = distinct_flows(&q);
        for i in 0..30u64 {
            q.enqueue(pkt(fa, i, 1514, Ecn::NotEct), 0, &mut b.ctx());
        }
        for k in 0..11 {
            assert_eq!(q.dequeue(k * T_FRAME, &mut b.ctx()).unwrap().flow, fa);
        }
        // A is now on old_flows with credit 3028 − 1514; B arrives and goes first.
        q.enqueue(pkt(fb, 100, 1514, Ecn::NotEct), 11 * T_FRAME, &mut b.ctx());
        assert_eq!(q.dequeue(12 * T_FRAME, &mut b.ctx()).unwrap().flow, fb);
        assert_eq!(q.dequeue(13 * T_FRAME, &mut b.ctx()).unwrap().flow, fa);
    }

    #[test]
    fn flow_limit_drops_only_the_offending_flow() {
        // sch_fq.c:fq_enqueue step 4.
        let mut b = Bufs::new();
        let mut q = make(FqParams { flow_limit_packets: 5, ..FqParams::default() }, &mut b);
        let (fa, fb) = distinct_flows(&q);
        for i in 0..10u64 {
            q.enqueue(pkt(fa, i, 1514, Ecn::NotEct), 0, &mut b.ctx());
            if i < 4 {
                q.enqueue(pkt(fb, 100 + i, 1514, Ecn::NotEct), 0, &mut b.ctx());
            }
        }
        assert_eq!(q.len(), 9);
        assert_eq!(b.dropped.iter().map(|p| p.id).collect::<Vec<_>>(), vec![5, 6, 7, 8, 9]);
        assert!(b.dropped.iter().all(|p| p.flow == fa));
        assert_eq!((q.stat_flows_plimit, q.stats.drops), (5, 5));
        // Total limit applies across flows.
        let mut q = make(FqParams { limit_packets: 6, ..FqParams::default() }, &mut b);
        b.dropped.clear();
        for i in 0..4u64 {
            q.enqueue(pkt(fa, i, 1514, Ecn::NotEct), 0, &mut b.ctx());
            q.enqueue(pkt(fb, 100 + i, 1514, Ecn::NotEct), 0, &mut b.ctx());
        }
        assert_eq!(q.len(), 6);
        assert_eq!(b.dropped.iter().map(|p| p.id).collect::<Vec<_>>(), vec![3, 103]);
        assert_eq!(q.stat_flows_plimit, 0);
    }

    #[test]
    fn validation_vector_7_fifo_ecn_marks_beyond_5ms() {
        // Worked example: "FIFO+ECN" (orphan_mask 0, ce_threshold 5 ms) at
        // 100 Mbit/s. 100 ECT frames queued at t = 0, the k-th (1-based) leaves at
        // k·121.12 µs: marked iff k·121 120 > 5 000 000, i.e. k ≥ 42 (5 ms / 121.12 µs
        // = 41.28 frame times).
        let mut b = Bufs::new();
        let params = FqParams {
            limit_packets: 167,
            flow_limit_packets: 167,
            orphan_mask: 0,
            ce_threshold_ns: Some(5 * NS_PER_MS),
            ..FqParams::default()
        };
        let mut q = make(params, &mut b);
        for i in 0..100u64 {
            let ecn = if i % 2 == 0 { Ecn::Ect1 } else { Ecn::Ect0 };
            q.enqueue(pkt((i % 2) as u32, i, 1514, ecn), 0, &mut b.ctx());
        }
        let out = drain(&mut q, &mut b, T_FRAME);
        for (k, p) in out.iter().enumerate() {
            assert_eq!(p.id, k as u64);
            assert_eq!(p.ecn == Ecn::Ce, k + 1 >= 42, "frame {}", k + 1);
        }
        assert_eq!(q.stat_ce_mark, 59);
        assert_eq!(q.stats.marks, 59);
        assert_eq!(b.marked.len(), 59);

        // Boundary: a sojourn of exactly 5 ms is not marked, 5 ms + 1 ns is. A Not-ECT
        // frame is left untouched but still counted in ce_mark (sch_fq.c:fq_dequeue step 4).
        let mut q =
            make(FqParams { orphan_mask: 0, ce_threshold_ns: Some(5 * NS_PER_MS), ..FqParams::default() }, &mut b);
        q.enqueue(pkt(0, 1, 1514, Ecn::Ect0), 0, &mut b.ctx());
        q.enqueue(pkt(0, 2, 1514, Ecn::Ect0), 0, &mut b.ctx());
        q.enqueue(pkt(0, 3, 1514, Ecn::NotEct), 0, &mut b.ctx());
        assert_eq!(q.dequeue(5_000_000, &mut b.ctx()).unwrap().ecn, Ecn::Ect0);
        assert_eq!(q.dequeue(5_000_001, &mut b.ctx()).unwrap().ecn, Ecn::Ce);
        assert_eq!(q.dequeue(6_000_000, &mut b.ctx()).unwrap().ecn, Ecn::NotEct);
        assert_eq!((q.stat_ce_mark, q.stats.marks), (2, 1));
        assert!(q.extra_stats().contains(&("ce_mark", 2.0)));
    }

    #[test]
    fn steady_state_fifo_ecn_marks_iff_sojourn_over_threshold() {
        // Same vector with a standing queue: arrivals every 100 µs (faster than the
        // 121.12 µs service), so the sojourn grows by 21.12 µs per frame; exactly the
        // frames with sojourn > 5 ms are CE.
        let mut b = Bufs::new();
        let mut q = make(
            FqParams {
                orphan_mask: 0,
                limit_packets: 667,
                flow_limit_packets: 667,
                ce_threshold_ns: Some(5 * NS_PER_MS),
                ..FqParams::default()
            },
            &mut b,
        );
        let (mut next_arr, mut next_dep, mut id) = (0u64, T_FRAME, 0u64);
        let mut checked = 0;
        while next_dep < 200 * NS_PER_MS {
            if next_arr <= next_dep {
                q.enqueue(pkt((id % 3) as u32, id, 1514, Ecn::Ect1), next_arr, &mut b.ctx());
                id += 1;
                next_arr += 100_000;
            } else {
                if let Some(p) = q.dequeue(next_dep, &mut b.ctx()) {
                    let sojourn = next_dep - p.enqueue_ts;
                    assert_eq!(p.ecn == Ecn::Ce, sojourn > 5 * NS_PER_MS);
                    checked += 1;
                }
                next_dep += T_FRAME;
            }
        }
        assert!(checked > 1000 && q.stats.marks > 500);
    }

    #[test]
    fn refill_delay_uses_jiffies_with_odd_age() {
        // sch_fq.c:fq_enqueue step 5: a detached flow that was idle longer than refill_delay
        // (40 jiffies) gets credit max(credit, quantum); age = jiffies | 1.
        for (arrive_ms, expect) in [(45u64, 486i32), (46, 3028)] {
            let mut b = Bufs::new();
            let mut q = make(FqParams { initial_quantum_bytes: 2000, ..FqParams::default() }, &mut b);
            let (fa, fb) = distinct_flows(&q);
            q.enqueue(pkt(fa, 0, 1514, Ecn::NotEct), 0, &mut b.ctx());
            for i in 0..5u64 {
                q.enqueue(pkt(fb, 100 + i, 1514, Ecn::NotEct), 0, &mut b.ctx());
            }
            // 1 ms: A (2000 -> 486); 2 ms: A empty new -> old, B1; 3 ms: B2;
            // 4 ms: B refilled -> old tail, A empty on old -> detached (age 4|1 = 5), B3.
            let flows: Vec<u32> = (1..=4).map(|k| q.dequeue(k * NS_PER_MS, &mut b.ctx()).unwrap().flow).collect();
            assert_eq!(flows, vec![fa, fb, fb, fb]);
            let sa = q.index[&q.orphan_key(&pkt(fa, 0, 0, Ecn::NotEct))];
            assert_eq!(q.flows[sa as usize].link, Link::Detached);
            assert_eq!(q.flows[sa as usize].age, 5);
            q.enqueue(pkt(fa, 1, 1514, Ecn::NotEct), arrive_ms * NS_PER_MS, &mut b.ctx());
            assert_eq!(q.flows[sa as usize].credit, expect, "arrival at {arrive_ms} ms");
            assert_eq!(q.flows[sa as usize].link, Link::New);
        }
    }

    #[test]
    fn garbage_collection_of_idle_flows_in_the_same_bucket() {
        // Flows detached for more than 3 s are freed when another lookup hits their
        // bucket; a re-created flow starts again with initial_quantum.
        let mut b = Bufs::new();
        let mut q = make(FqParams { buckets: 2, initial_quantum_bytes: 1514, ..FqParams::default() }, &mut b);
        let ka = q.orphan_key(&pkt(0, 0, 0, Ecn::NotEct));
        let fb = (1..)
            .find(|&f| {
                let k = q.orphan_key(&pkt(f, 0, 0, Ecn::NotEct));
                k != ka && q.bucket_of(k) == q.bucket_of(ka)
            })
            .unwrap();
        q.enqueue(pkt(0, 0, 1514, Ecn::NotEct), 0, &mut b.ctx());
        for i in 1..=3 {
            q.enqueue(pkt(fb, i, 1514, Ecn::NotEct), 0, &mut b.ctx());
        }
        // 1 ms: A (credit 0). 2 ms: A refilled -> old; B1 (credit 0). 3 ms: B refilled
        // -> old; A empty on old -> detached (age 3|1 = 3); B2. 4 ms: B3.
        let flows: Vec<u32> = (1..=4).map(|k| q.dequeue(k * NS_PER_MS, &mut b.ctx()).unwrap().flow).collect();
        assert_eq!(flows, vec![0, fb, fb, fb]);
        let sa = q.index[&ka];
        assert_eq!(q.flows[sa as usize].link, Link::Detached);
        assert_eq!(q.flows[sa as usize].age, 3);
        assert_eq!((q.flow_count(), q.stat_gc_flows), (2, 0));
        // Not yet a candidate at jiffies = age + 3000.
        q.enqueue(pkt(fb, 4, 1514, Ecn::NotEct), 3_003 * NS_PER_MS, &mut b.ctx());
        assert_eq!((q.flow_count(), q.stat_gc_flows), (2, 0));
        // One jiffy later B's lookup collects A.
        q.enqueue(pkt(fb, 5, 1514, Ecn::NotEct), 3_004 * NS_PER_MS, &mut b.ctx());
        assert_eq!((q.flow_count(), q.stat_gc_flows), (1, 1));
        assert!(!q.index.contains_key(&ka));
        // Re-created A starts with initial_quantum again (an old flow refilled after
        // refill_delay would have had max(3028, credit) = 3028).
        q.enqueue(pkt(0, 6, 1514, Ecn::NotEct), 3_008 * NS_PER_MS, &mut b.ctx());
        let sa = q.index[&ka];
        assert_eq!(q.flows[sa as usize].credit, 1514);
        assert_eq!(q.flow_count(), 2);
        assert!(q.extra_stats().contains(&("gc", 1.0)));
    }

    #[test]
    fn fastpath_packets_bypass_flows_and_marking() {
        // sch_fq.c:fq_enqueue step 3 / sch_fq.c:fq_dequeue step 1 (Linux ≥ 6.7): after idle the first 8
        // packets go to the internal FIFO (no flow, no flow_limit, never CE-marked).
        let mut b = Bufs::new();
        let params = FqParams {
            orphan_mask: 0,
            fastpath: true,
            flow_limit_packets: 3,
            ce_threshold_ns: Some(NS_PER_MS),
            ..FqParams::default()
        };
        let mut q = make(params, &mut b);
        for i in 0..12u64 {
            q.enqueue(pkt(0, i, 1514, Ecn::Ect0), 0, &mut b.ctx());
        }
        // 8 in the fast path + 3 in the flow (flow_limit) + 1 dropped.
        assert_eq!((q.internal.len(), q.len()), (8, 11));
        assert_eq!(b.dropped.len(), 1);
        let out = drain(&mut q, &mut b, 10 * NS_PER_MS);
        assert_eq!(out.iter().map(|p| p.id).collect::<Vec<_>>(), (0..11).collect::<Vec<_>>());
        assert!(out[..8].iter().all(|p| p.ecn == Ecn::Ect0));
        assert!(out[8..].iter().all(|p| p.ecn == Ecn::Ce));
        assert!(q.extra_stats().contains(&("fastpath_packets", 8.0)));
    }
}
