//! `pie` (Linux `net/sched/sch_pie.c` + `include/net/pie.h`, RFC 8033).
//!
//! Proportional Integral controller Enhanced: a single FIFO whose drop/mark decision
//! is taken at **enqueue** against a probability that a periodic (jiffies) timer
//! updates from the queueing delay. The state machine and all fixed-point arithmetic
//! follow Linux (not the RFC pseudocode) where the two differ:
//!
//! * probability is a u64 with 1.0 == `MAX_PROB` = 2^56 − 1 and is **not** clamped at
//!   1.0 (sch_pie.c:pie_calculate_probability);
//! * times are psched ticks (ns >> 6; include/net/pkt_sched.h:PSCHED_NS2TICKS);
//! * alpha/beta are integers in units of 1/16 (Linux scales them with `>> 4`);
//! * the delay estimate is, by default, the sojourn of the last dequeued packet
//!   (timestamp mode); RFC 8033's dequeue-rate estimator is an option;
//! * de-randomisation by `accu_prob` (RFC 8033 §5.4 as implemented by Linux);
//! * decay is ×(1 − 1/64) instead of the RFC's ×0.98 (sch_pie.c:pie_calculate_probability step 7).

use super::{Qdisc, QdiscCtx, QdiscKind, QdiscPacket, QdiscStats, PSCHED_MTU, TC_MAX_US_NS};
use crate::rng::SimRng;
use crate::schema::{ParamKind, ParamSpec};
use crate::time::{Time, NS_PER_JIFFY, NS_PER_MS, NS_PER_SEC};
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::collections::VecDeque;

/// 1.0 in the fixed-point probability (`U64_MAX >> 8`; include/net/pie.h MAX_PROB).
pub const MAX_PROB: u64 = u64::MAX >> 8;
/// psched clock: ns >> 6 (64-ns ticks; include/net/pkt_sched.h:PSCHED_NS2TICKS).
const PSCHED_SHIFT: u32 = 6;
/// psched ticks per second (10^9 >> 6 = 15 625 000; include/net/pkt_sched.h:PSCHED_TICKS_PER_SEC).
const PSCHED_TICKS_PER_SEC: u64 = NS_PER_SEC >> PSCHED_SHIFT;
/// Rate estimator: measurement cycles need this many bytes (sch_pie.c:pie_process_dequeue).
const QUEUE_THRESHOLD: u32 = 16_384;
/// Fixed-point shift of the dequeue-rate estimate (bytes/tick × 256).
const PIE_SCALE: u32 = 8;
/// "Not set" sentinels, as Linux's `DTIME_INVALID` / `DQCOUNT_INVALID`.
const DTIME_INVALID: u64 = u64::MAX;
const DQCOUNT_INVALID: u64 = u64::MAX;
/// First timer expiry: `jiffies + HZ/2` after the qdisc is created (sch_pie.c:pie_init).
const FIRST_UPDATE_NS: Time = 500 * NS_PER_MS;

#[inline]
fn ns_to_ticks(ns: u64) -> u64 {
    ns >> PSCHED_SHIFT
}

/// Burst allowance, not configurable (RFC 8033 MAX_BURST; include/net/pie.h:pie_vars_init).
const BURST_TICKS: u64 = (150 * NS_PER_MS) >> PSCHED_SHIFT;

/// `tc qdisc add ... pie` parameters (include/net/pie.h:pie_params_init, sch_pie.c:pie_change). Defaults are Linux's
/// (`pie_params_init`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PieParams {
    /// `limit`: tail drop when the queue holds this many packets. Default 1000.
    pub limit_packets: u32,
    /// `target`: reference queueing delay. Default 15 ms. Stored by Linux in 64-ns
    /// psched ticks.
    pub target_ns: u64,
    /// `tupdate`: probability update period. Default 15 ms. Linux converts it to
    /// jiffies rounding **up** (HZ = 1000 here: whole ms; sch_pie.c:pie_change).
    pub tupdate_ns: u64,
    /// `alpha`: integral gain in units of 1/16 Hz (Linux `>> 4`). Default 2 (0.125 Hz).
    pub alpha: u32,
    /// `beta`: proportional gain in units of 1/16 Hz. Default 20 (1.25 Hz).
    pub beta: u32,
    /// `ecn` / `noecn`: mark ECN-capable packets instead of dropping them while the
    /// probability is ≤ 10 %. Default off.
    pub ecn: bool,
    /// `bytemode`: scale the probability by packet size / MTU. Default off.
    pub bytemode: bool,
    /// `dq_rate_estimator`: estimate delay as backlog / dequeue rate (RFC 8033 §5.2)
    /// instead of packet timestamps. Default off.
    pub dq_rate_estimator: bool,
}

impl Default for PieParams {
    fn default() -> Self {
        PieParams {
            limit_packets: 1000,
            target_ns: 15 * NS_PER_MS,
            tupdate_ns: 15 * NS_PER_MS,
            alpha: 2,
            beta: 20,
            ecn: false,
            bytemode: false,
            dq_rate_estimator: false,
        }
    }
}

impl QdiscKind for PieParams {
    const KIND: &'static str = "pie";
    const DOC: &'static str =
        "PIE: enqueue-time drop/mark on a PI-controlled probability (RFC 8033 as net/sched/sch_pie.c).";

    fn params() -> Vec<ParamSpec> {
        let d = PieParams::default();
        vec![
            ParamSpec::new("limit_packets", ParamKind::Packets, json!(d.limit_packets),
                "Tail-drop limit, packets (net/sched/sch_pie.c:pie_init sets sch->limit = 1000).")
                .range(1.0, u32::MAX as f64),
            ParamSpec::new("target_ns", ParamKind::TimeNs, json!(d.target_ns),
                "Reference queueing delay QDELAY_REF (include/net/pie.h:pie_params_init, RFC 8033 §4.2: 15 ms).")
                .range(0.0, TC_MAX_US_NS as f64),
            ParamSpec::new("tupdate_ns", ParamKind::TimeNs, json!(d.tupdate_ns),
                "Probability update period T_UPDATE, rounded up to jiffies (include/net/pie.h:pie_params_init: 15 ms).")
                .range(1.0, TC_MAX_US_NS as f64),
            ParamSpec::new("alpha", ParamKind::Int, json!(d.alpha),
                "Integral gain in 1/16 Hz (include/net/pie.h:pie_params_init: 2 = 0.125 Hz, RFC 8033 §4.2); \
                 iproute2 tc/q_pie.c accepts 0..=32.")
                .range(0.0, 32.0),
            ParamSpec::new("beta", ParamKind::Int, json!(d.beta),
                "Proportional gain in 1/16 Hz (include/net/pie.h:pie_params_init: 20 = 1.25 Hz, RFC 8033 §4.2); \
                 iproute2 tc/q_pie.c accepts 0..=32.")
                .range(0.0, 32.0),
            ParamSpec::new("ecn", ParamKind::Bool, json!(d.ecn),
                "Mark ECT packets instead of dropping while p <= 10 % (net/sched/sch_pie.c:pie_qdisc_enqueue; default off)."),
            ParamSpec::new("bytemode", ParamKind::Bool, json!(d.bytemode),
                "Scale the probability by packet size / MTU (include/net/pie.h:pie_params_init: off)."),
            ParamSpec::new("dq_rate_estimator", ParamKind::Bool, json!(d.dq_rate_estimator),
                "Estimate delay from the dequeue rate (RFC 8033 §5.2) instead of timestamps \
                 (include/net/pie.h:pie_params_init: off).")
        ]
    }

    fn build<P: QdiscPacket>(&self, _rng: &mut SimRng) -> Box<dyn Qdisc<P>> {
        Box::new(Pie::new(self.clone()))
    }
}

/// The PIE qdisc.
pub struct Pie<P> {
    params: PieParams,
    queue: VecDeque<P>,
    stats: QdiscStats,
    /// target in psched ticks.
    target: u64,
    /// Timer period in ns (whole jiffies).
    tupdate_jiffies: u64,
    next_update: Option<Time>,

    // ---- struct pie_vars ----
    /// Current delay estimate (ticks).
    qdelay: u64,
    /// Delay used at the previous update (ticks).
    qdelay_old: u64,
    /// Remaining burst allowance (ticks).
    burst_time: u64,
    /// Last dequeue time (timestamp mode) or start of the measurement cycle (ticks).
    dq_tstamp: u64,
    prob: u64,
    accu_prob: u64,
    dq_count: u64,
    /// Dequeue rate, bytes per tick × 256.
    avg_dq_rate: u32,

    // ---- struct pie_stats ----
    packets_in: u64,
    dropped: u64,
    overlimit: u64,
    ecn_mark: u64,
    maxq: u64,
}

impl<P: QdiscPacket> Pie<P> {
    /// A PIE qdisc created at time 0 (first probability update at 500 ms).
    pub fn new(params: PieParams) -> Self {
        let target = ns_to_ticks(params.target_ns);
        // usecs_to_jiffies rounds up (sch_pie.c:pie_change).
        let tupdate_jiffies = params.tupdate_ns.div_ceil(NS_PER_JIFFY);
        // Starts small and grows to what the queue holds, as `Fifo`'s ring.
        let cap = (params.limit_packets as usize).clamp(16, 256);
        let mut q = Pie {
            params,
            queue: VecDeque::with_capacity(cap),
            stats: QdiscStats::default(),
            target,
            tupdate_jiffies,
            next_update: Some(FIRST_UPDATE_NS),
            qdelay: 0,
            qdelay_old: 0,
            burst_time: 0,
            dq_tstamp: 0,
            prob: 0,
            accu_prob: 0,
            dq_count: 0,
            avg_dq_rate: 0,
            packets_in: 0,
            dropped: 0,
            overlimit: 0,
            ecn_mark: 0,
            maxq: 0,
        };
        q.vars_init();
        q
    }

    /// `pie_vars_init`: (re)start burst allowance, de-randomisation and the rate
    /// estimator. prob, qdelay and qdelay_old are kept (sch_pie.c:pie_calculate_probability step 8).
    fn vars_init(&mut self) {
        self.burst_time = BURST_TICKS;
        self.dq_tstamp = DTIME_INVALID;
        self.accu_prob = 0;
        self.dq_count = DQCOUNT_INVALID;
        self.avg_dq_rate = 0;
    }

    /// Current drop probability as a fraction of 1.0 (may exceed 1; sch_pie.c:pie_calculate_probability step 6).
    pub fn prob_fraction(&self) -> f64 {
        self.prob as f64 / MAX_PROB as f64
    }

    /// `pie_drop_early` (sch_pie.c:pie_qdisc_enqueue step 2): true = drop (or mark) decision.
    fn drop_early(&mut self, backlog: u32, packet_size: u32, ctx: &mut QdiscCtx<P>) -> bool {
        // a. Burst allowance left: accept.
        if self.burst_time > 0 {
            return false;
        }
        // b. Delay below target/2 and probability below 20 %: accept.
        if self.qdelay < self.target / 2 && self.prob < MAX_PROB / 5 {
            return false;
        }
        // c. Fewer than 2 MTU of backlog (before this packet): accept.
        if backlog < 2 * PSCHED_MTU {
            return false;
        }
        // d. Bytemode scales by size / MTU (integer division first, as Linux).
        let local_prob = if self.params.bytemode && packet_size <= PSCHED_MTU {
            (packet_size as u64).wrapping_mul(self.prob / PSCHED_MTU as u64)
        } else {
            self.prob
        };
        // e. De-randomisation (RFC 8033 §5.4 as in Linux): accumulate, never drop
        // below 0.85, always drop at 8.5 (without resetting accu), else a 56-bit draw
        // compared strictly (include/net/pie.h:pie_drop_early, get_random_u64).
        if local_prob == 0 {
            self.accu_prob = 0;
        } else {
            self.accu_prob = self.accu_prob.wrapping_add(local_prob);
        }
        if self.accu_prob < (MAX_PROB / 100) * 85 {
            return false;
        }
        if self.accu_prob >= (MAX_PROB / 2) * 17 {
            return true;
        }
        let rnd = ctx.rng.next_u64() >> 8;
        if rnd < local_prob {
            self.accu_prob = 0;
            return true;
        }
        false
    }

    /// `pie_process_dequeue` (sch_pie.c:pie_process_dequeue): update the delay / rate estimate with the
    /// departing packet; `backlog` is what remains queued (bytes).
    fn process_dequeue(&mut self, pkt: &P, now: Time, backlog: u32) {
        let now_t = ns_to_ticks(now);
        let dtime: u32;
        if !self.params.dq_rate_estimator {
            // Timestamp mode: sojourn of this packet, 0 once the queue is empty.
            self.qdelay = now_t.wrapping_sub(ns_to_ticks(pkt.enqueue_ts()));
            dtime = if self.dq_tstamp != DTIME_INVALID { now_t.wrapping_sub(self.dq_tstamp) as u32 } else { 0 };
            self.dq_tstamp = now_t;
            if backlog == 0 {
                self.qdelay = 0;
            }
            if dtime == 0 {
                return;
            }
        } else {
            // Rate mode: a cycle starts when ≥ 16 KiB are queued.
            if backlog >= QUEUE_THRESHOLD && self.dq_count == DQCOUNT_INVALID {
                self.dq_tstamp = now_t;
                self.dq_count = 0;
            }
            if self.dq_count == DQCOUNT_INVALID {
                return;
            }
            self.dq_count += pkt.wire_len() as u64;
            if self.dq_count < QUEUE_THRESHOLD as u64 {
                return;
            }
            // Linux keeps these in u32.
            let count = (self.dq_count << PIE_SCALE) as u32;
            dtime = now_t.wrapping_sub(self.dq_tstamp) as u32;
            if dtime == 0 {
                return;
            }
            let rate = count / dtime;
            self.avg_dq_rate =
                if self.avg_dq_rate == 0 { rate } else { (self.avg_dq_rate - (self.avg_dq_rate >> 3)) + (rate >> 3) };
            if backlog < QUEUE_THRESHOLD {
                self.dq_count = DQCOUNT_INVALID;
            } else {
                self.dq_count = 0;
                self.dq_tstamp = now_t;
            }
        }
        // Burst allowance shrinks by the time between dequeues / cycle length.
        if self.burst_time > 0 {
            self.burst_time = self.burst_time.saturating_sub(dtime as u64);
        }
    }

    /// `pie_calculate_probability` (sch_pie.c:pie_calculate_probability), run every tupdate.
    fn calculate_probability(&mut self, backlog: u32) {
        let qdelay: u64;
        let qdelay_old: u64;
        if self.params.dq_rate_estimator {
            qdelay_old = self.qdelay;
            self.qdelay_old = self.qdelay;
            // Little's law; u32 arithmetic as Linux.
            qdelay = (backlog << PIE_SCALE).checked_div(self.avg_dq_rate).unwrap_or(0) as u64;
        } else {
            qdelay = self.qdelay;
            qdelay_old = self.qdelay_old;
        }

        // Step 1: a tiny backlog with zero delay does not update (nor decay).
        let mut update_prob = !(qdelay == 0 && backlog != 0);

        // Step 2: gains per tick of delay, then auto-scaling by the current
        // probability (RFC 8033 §4.2): ×1/2 below 10 %, then ×1/4 per decade down
        // to 0.0001 % (at most five more steps).
        let per_tick = MAX_PROB / PSCHED_TICKS_PER_SEC;
        let mut alpha = (self.params.alpha as u64 * per_tick) >> 4;
        let mut beta = (self.params.beta as u64 * per_tick) >> 4;
        if self.prob < MAX_PROB / 10 {
            alpha >>= 1;
            beta >>= 1;
            let mut power: u64 = 100;
            while self.prob < MAX_PROB / power && power <= 1_000_000 {
                alpha >>= 2;
                beta >>= 2;
                power *= 10;
            }
        }

        // Step 3: delta = alpha·(q − target) + beta·(q − q_old), in two's complement
        // as Linux's u64/s64 mix.
        let mut delta: i64 = 0;
        delta = delta.wrapping_add(alpha.wrapping_mul(qdelay.wrapping_sub(self.target)) as i64);
        delta = delta.wrapping_add(beta.wrapping_mul(qdelay.wrapping_sub(qdelay_old)) as i64);

        let oldprob = self.prob;
        // Step 4: increase capped at 2 % per update once p ≥ 10 % (RFC 8033 §5.5).
        if delta > (MAX_PROB / 50) as i64 && self.prob >= MAX_PROB / 10 {
            delta = ((MAX_PROB / 100) * 2) as i64;
        }
        // Step 5: +2 % when the delay exceeds 250 ms.
        if qdelay > ns_to_ticks(250 * NS_PER_MS) {
            delta = delta.wrapping_add((MAX_PROB / 50) as i64);
        }
        // Step 6: wrap protection only; no clamp at 1.0 (Linux; differs from RFC).
        self.prob = self.prob.wrapping_add(delta as u64);
        if delta > 0 {
            if self.prob < oldprob {
                self.prob = MAX_PROB;
                update_prob = false;
            }
        } else if self.prob > oldprob {
            self.prob = 0;
        }

        // Step 7: decay ×(1 − 1/64) after two zero-delay updates (RFC: ×0.98).
        if qdelay == 0 && qdelay_old == 0 && update_prob {
            self.prob -= self.prob / 64;
        }

        // Step 8: store, and re-arm burst allowance when idle-ish with p == 0.
        self.qdelay = qdelay;
        if self.qdelay < self.target / 2
            && self.qdelay_old < self.target / 2
            && self.prob == 0
            && (!self.params.dq_rate_estimator || self.avg_dq_rate > 0)
        {
            self.vars_init();
        }
        // Step 9.
        if !self.params.dq_rate_estimator {
            self.qdelay_old = qdelay;
        }
    }
}

impl<P: QdiscPacket> Qdisc<P> for Pie<P> {
    fn kind(&self) -> &'static str {
        "pie"
    }

    fn enqueue(&mut self, mut pkt: P, now: Time, ctx: &mut QdiscCtx<P>) {
        pkt.set_qclass(0);
        // sch_pie.c:pie_qdisc_enqueue step 1: tail drop at limit (counts overlimit and dropped).
        if self.queue.len() >= self.params.limit_packets as usize {
            self.overlimit += 1;
            self.drop_packet(pkt, ctx);
            return;
        }
        // sch_pie.c:pie_qdisc_enqueue step 2: backlog before this packet; size = skb->len = L2 length.
        let backlog = self.stats.backlog_bytes as u32;
        let mut accept = !self.drop_early(backlog, pkt.wire_len(), ctx);
        // sch_pie.c:pie_qdisc_enqueue step 3: mark instead of drop only while the global p ≤ 10 %
        // and set-CE succeeds (ECT(0)/ECT(1)/CE). accu_prob is not reset here.
        if !accept && self.params.ecn && self.prob <= MAX_PROB / 10 && pkt.set_ce() {
            self.ecn_mark += 1;
            ctx.mark_counted(&mut self.stats, pkt.flow_key());
            accept = true;
        }
        if !accept {
            // sch_pie.c:pie_qdisc_enqueue step 4.
            self.drop_packet(pkt, ctx);
            return;
        }
        // sch_pie.c:pie_qdisc_enqueue step 5. (Linux stamps only in timestamp mode; the simulator
        // always needs the stamp for sojourn statistics, and rate mode ignores it.)
        pkt.set_enqueue_ts(now);
        self.packets_in += 1;
        self.maxq = self.maxq.max(self.queue.len() as u64);
        self.stats.on_enqueue(&pkt);
        self.queue.push_back(pkt);
    }

    fn dequeue(&mut self, now: Time, _ctx: &mut QdiscCtx<P>) -> Option<P> {
        // sch_pie.c:pie_qdisc_dequeue: plain FIFO, no AQM action at dequeue.
        let pkt = self.queue.pop_front()?;
        self.stats.on_remove(&pkt);
        self.process_dequeue(&pkt, now, self.stats.backlog_bytes as u32);
        self.stats.on_sent(&pkt);
        Some(pkt)
    }

    fn peek(&self) -> Option<&P> {
        self.queue.front()
    }

    fn stats(&self) -> &QdiscStats {
        &self.stats
    }

    /// `next_update` is set at creation and moved only by `on_timer`.
    fn timer_is_periodic(&self) -> bool {
        true
    }

    fn next_timer(&self) -> Option<Time> {
        self.next_update
    }

    fn on_timer(&mut self, now: Time, _ctx: &mut QdiscCtx<P>) {
        match self.next_update {
            Some(t) if now >= t => {}
            _ => return,
        }
        self.calculate_probability(self.stats.backlog_bytes as u32);
        // mod_timer(jiffies + tupdate): expiry on a jiffy boundary (sch_pie.c:pie_timer).
        self.next_update = if self.tupdate_jiffies > 0 {
            Some((now / NS_PER_JIFFY + self.tupdate_jiffies) * NS_PER_JIFFY)
        } else {
            None
        };
    }

    fn extra_stats(&self) -> Vec<(&'static str, f64)> {
        // sch_pie.c:pie_dump_stats (`tc -s qdisc show` xstats).
        let avg_dq_rate = if self.params.dq_rate_estimator {
            ((self.avg_dq_rate as u64 * PSCHED_TICKS_PER_SEC) >> PIE_SCALE) as f64
        } else {
            0.0
        };
        vec![
            ("prob", self.prob_fraction()),
            ("delay_ms", (self.qdelay << PSCHED_SHIFT) as f64 / NS_PER_MS as f64),
            ("avg_dq_rate", avg_dq_rate),
            ("packets_in", self.packets_in as f64),
            ("dropped", self.dropped as f64),
            ("overlimit", self.overlimit as f64),
            ("maxq", self.maxq as f64),
            ("ecn_mark", self.ecn_mark as f64),
        ]
    }
}

impl<P: QdiscPacket + Copy> Pie<P> {
    /// [`Qdisc::enqueue`] of a packet the caller keeps: the same decisions on `pkt`,
    /// then the packet copied once, into its slot, and classed, marked and stamped
    /// there (as `Fifo::enqueue_ref`), instead of copied into the call, changed and
    /// copied again into the queue.
    #[inline]
    pub fn enqueue_ref(&mut self, pkt: &P, now: Time, ctx: &mut QdiscCtx<P>) {
        // sch_pie.c:pie_qdisc_enqueue step 1: tail drop at limit (counts overlimit and dropped).
        if self.queue.len() >= self.params.limit_packets as usize {
            self.overlimit += 1;
            return self.drop_copy(pkt, ctx);
        }
        // Step 2: backlog before this packet; size = skb->len = L2 length.
        let backlog = self.stats.backlog_bytes as u32;
        let mut accept = !self.drop_early(backlog, pkt.wire_len(), ctx);
        // Step 3: mark instead of drop only while the global p <= 10 % and set-CE
        // succeeds (`INET_ECN_set_ce` of an ECN-capable packet).
        let mut mark = false;
        if !accept && self.params.ecn && self.prob <= MAX_PROB / 10 && pkt.ecn().is_ect() {
            self.ecn_mark += 1;
            ctx.mark_counted(&mut self.stats, pkt.flow_key());
            accept = true;
            mark = true;
        }
        if !accept {
            // Step 4.
            return self.drop_copy(pkt, ctx);
        }
        // Step 5 (stamped always: see `enqueue`).
        self.packets_in += 1;
        self.maxq = self.maxq.max(self.queue.len() as u64);
        self.stats.on_enqueue(pkt);
        self.queue.push_back(*pkt);
        if let Some(p) = self.queue.back_mut() {
            p.set_qclass(0);
            if mark {
                p.set_ecn(super::Ecn::Ce);
            }
            p.set_enqueue_ts(now);
        }
    }

    /// The drop of [`enqueue_ref`](Self::enqueue_ref): the copy reported is classed as
    /// `enqueue` classes every packet.
    #[cold]
    fn drop_copy(&mut self, pkt: &P, ctx: &mut QdiscCtx<P>) {
        let mut pkt = *pkt;
        pkt.set_qclass(0);
        self.drop_packet(pkt, ctx);
    }

    /// [`Qdisc::dequeue`] into `out`: the head is copied from its slot to `out` and
    /// the slot dropped, instead of moved out through an `Option` and copied again.
    /// False (and `out` untouched) if the queue is empty.
    #[inline]
    pub fn dequeue_into(&mut self, now: Time, out: &mut P) -> bool {
        // sch_pie.c:pie_qdisc_dequeue: plain FIFO, no AQM action at dequeue.
        let Some(pkt) = self.queue.front() else { return false };
        *out = *pkt;
        self.queue.pop_front();
        self.stats.on_remove(out);
        self.process_dequeue(out, now, self.stats.backlog_bytes as u32);
        self.stats.on_sent(out);
        true
    }
}

impl<P: QdiscPacket> Pie<P> {
    /// Drop at enqueue: `dropped++`, accu_prob = 0 (sch_pie.c:pie_qdisc_enqueue steps 1 and 4).
    fn drop_packet(&mut self, pkt: P, ctx: &mut QdiscCtx<P>) {
        self.dropped += 1;
        self.accu_prob = 0;
        ctx.drop_counted(&mut self.stats, pkt);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qdisc::testutil::TestPacket;
    use crate::qdisc::Ecn;

    const FRAME: u32 = 1514;

    fn frame(id: u64, ecn: Ecn) -> TestPacket {
        crate::qdisc::testutil::packet(0, id, FRAME, ecn)
    }

    use crate::qdisc::testutil::Harness as Bufs;

    #[test]
    fn defaults_and_fixed_point_constants() {
        let p = PieParams::default();
        assert_eq!(p.validate(), Ok(()));
        assert_eq!((p.limit_packets, p.alpha, p.beta), (1000, 2, 20));
        let q = Pie::<TestPacket>::new(p);
        // include/net/pie.h: 1.0 = 2^56 − 1; 15 ms = 234 375 ticks; 150 ms burst.
        assert_eq!(MAX_PROB, 72_057_594_037_927_935);
        assert_eq!(q.target, 234_375);
        assert_eq!(BURST_TICKS, 2_343_750);
        assert_eq!(q.burst_time, BURST_TICKS);
        assert_eq!(PSCHED_TICKS_PER_SEC, 15_625_000);
        let bad = PieParams { alpha: 33, ..PieParams::default() };
        assert_eq!(bad.validate().unwrap_err(), "alpha: 33 is out of range (allowed 0..=32)");
    }

    #[test]
    fn timer_first_expiry_and_jiffy_rounding() {
        // sch_pie.c:pie_init / pie_timer: first update HZ/2 = 500 ms after creation, then every
        // tupdate rounded up to whole jiffies (15.2 ms -> 16 ms).
        let mut b = Bufs::new();
        let mut q = Pie::<TestPacket>::new(PieParams { tupdate_ns: 15_200_000, ..PieParams::default() });
        assert_eq!(q.next_timer(), Some(500_000_000));
        q.on_timer(500_000_000, &mut b.ctx());
        assert_eq!(q.next_timer(), Some(516_000_000));
        q.on_timer(516_000_000, &mut b.ctx());
        assert_eq!(q.next_timer(), Some(532_000_000));
        let mut q = Pie::<TestPacket>::new(PieParams::default());
        q.on_timer(500_000_000, &mut b.ctx());
        assert_eq!(q.next_timer(), Some(515_000_000));
    }

    /// Drive a standing queue whose every packet waits exactly 30 ms (arrivals every
    /// 128 µs = 2000 ticks), firing the timer when due; return prob after each update.
    fn run_constant_delay(updates: usize) -> (Vec<u64>, Pie<TestPacket>, Bufs) {
        let mut b = Bufs::new();
        let mut q = Pie::<TestPacket>::new(PieParams::default());
        let gap: Time = 128_000;
        let delay: Time = 30 * NS_PER_MS;
        let (mut i, mut j) = (0u64, 0u64);
        let mut probs = Vec::new();
        while probs.len() < updates {
            let t_enq = i * gap;
            let t_deq = j * gap + delay;
            let t_tmr = q.next_timer().unwrap();
            if t_deq <= t_enq && t_deq <= t_tmr {
                let p = q.dequeue(t_deq, &mut b.ctx()).unwrap();
                assert_eq!(p.id, j);
                j += 1;
            } else if t_enq <= t_tmr {
                q.enqueue(frame(i, Ecn::NotEct), t_enq, &mut b.ctx());
                i += 1;
            } else {
                q.on_timer(t_tmr, &mut b.ctx());
                probs.push(q.prob);
            }
        }
        (probs, q, b)
    }

    #[test]
    fn probability_sequence_for_constant_30ms_delay() {
        // sch_pie.c:pie_calculate_probability worked by hand, target 15 ms = 234 375 ticks, q = 30 ms =
        // 468 750 ticks. Unscaled gains: MAX_PROB / 15 625 000 = 4 611 686 018;
        // alpha = 2·that >> 4 = 576 460 752; beta = 20·that >> 4 = 5 764 607 522.
        // Update 1 (p = 0 < 0.0001 %: ×1/2048, i.e. >> 11): alpha 281 474,
        //   beta 2 814 749, q_old = 0:
        //   delta = 281 474·234 375 + 2 814 749·468 750 = 1 385 384 062 500
        //   (p = 1.9226e-5 = 0.0019 %; real-valued (0.001875 + 0.0375)/2048).
        // Update 2 (0.001 % ≤ p < 0.01 %: ×1/128, >> 7): alpha 4 503 599, q = q_old:
        //   delta = 4 503 599·234 375 = 1 055 531 015 625 -> p = 2 440 915 078 125.
        // Updates 3..7 add the same delta until p ≥ 0.01 %; update 8 uses ×1/32:
        //   alpha = 576 460 752 >> 5 = 18 014 398, delta = 4 222 124 531 250.
        let (probs, q, b) = run_constant_delay(9);
        let d1 = 1_385_384_062_500u64;
        let d2 = 1_055_531_015_625u64;
        assert_eq!(probs[0], d1);
        assert_eq!(probs[1], d1 + d2);
        assert_eq!(probs[1], 2_440_915_078_125);
        assert_eq!(probs[2], 3_496_446_093_750);
        for (k, &p) in probs.iter().enumerate().take(7).skip(2) {
            assert_eq!(p, d1 + k as u64 * d2, "update {}", k + 1);
        }
        assert!(probs[6] >= MAX_PROB / 10_000 && probs[5] < MAX_PROB / 10_000);
        assert_eq!(probs[7] - probs[6], 18_014_398 * 234_375);
        assert_eq!(probs[7] - probs[6], 4_222_124_531_250);
        assert!((probs[0] as f64 / MAX_PROB as f64 - 1.9226066e-5).abs() < 1e-11);
        // Timer ran at 500, 515, ... ms; delay estimate is exactly 30 ms.
        assert_eq!(q.next_timer(), Some(500_000_000 + 9 * 15_000_000));
        assert_eq!(q.qdelay, 468_750);
        // accu_prob stays far below 0.85: nothing dropped.
        assert!(b.dropped.is_empty());
    }

    #[test]
    fn gain_scaling_validation_vector_5_and_two_percent_cap() {
        // Worked example: at p = 0.5 % the gains are /8 (>>1 then one >>2).
        let mut q = Pie::<TestPacket>::new(PieParams::default());
        q.prob = MAX_PROB / 200; // 0.5 %
        q.qdelay = q.target + 1000; // 1000 ticks above target, no change vs old
        q.qdelay_old = q.qdelay;
        let before = q.prob;
        q.calculate_probability(100_000);
        assert_eq!(q.prob - before, (576_460_752u64 >> 3) * 1000);
        // Above 10 %: unscaled, but a positive step is capped at 2 %.
        q.prob = MAX_PROB / 2;
        // +192 ms error (q = 207 ms < 250 ms): 576 460 752 · 3e6 = 1.73e15 > 2 % = 1.44e15.
        q.qdelay = q.target + 3_000_000;
        q.qdelay_old = q.qdelay;
        let before = q.prob;
        q.calculate_probability(100_000);
        assert_eq!(q.prob - before, (MAX_PROB / 100) * 2);
        // Beyond 250 ms: +2 % more on top of the capped step.
        q.prob = MAX_PROB / 2;
        q.qdelay = ns_to_ticks(300 * NS_PER_MS);
        q.qdelay_old = q.qdelay;
        q.calculate_probability(100_000);
        assert_eq!(q.prob, MAX_PROB / 2 + (MAX_PROB / 100) * 2 + MAX_PROB / 50);
        // No clamp at 1.0 (sch_pie.c:pie_calculate_probability step 6): p may exceed MAX_PROB.
        q.prob = MAX_PROB;
        q.qdelay = ns_to_ticks(300 * NS_PER_MS);
        q.calculate_probability(100_000);
        assert!(q.prob > MAX_PROB);
    }

    #[test]
    fn decay_when_delay_zero_and_rearm() {
        // sch_pie.c:pie_calculate_probability steps 1, 7, 8.
        let mut q = Pie::<TestPacket>::new(PieParams::default());
        q.prob = 6400;
        q.burst_time = 0;
        q.accu_prob = 77;
        // Zero delay but non-empty backlog: no decay (update_prob false), p moves
        // only by alpha·(0 − target) (scaled by 1/2048): 281 474·234 375 > 6400 -> 0.
        q.calculate_probability(1514);
        assert_eq!(q.prob, 0);
        // Zero delay, empty queue, p = 0, both delays < target/2 -> re-arm.
        assert_eq!(q.burst_time, BURST_TICKS);
        assert_eq!(q.accu_prob, 0);

        let mut q = Pie::<TestPacket>::new(PieParams { alpha: 0, beta: 0, ..PieParams::default() });
        q.prob = MAX_PROB / 2;
        q.calculate_probability(0);
        // q = q_old = 0, empty: p −= p/64.
        assert_eq!(q.prob, MAX_PROB / 2 - (MAX_PROB / 2) / 64);
        q.calculate_probability(5000); // backlog but zero delay: update_prob false
        assert_eq!(q.prob, MAX_PROB / 2 - (MAX_PROB / 2) / 64);
    }

    /// Enqueue three frames at t = 0 into `q` so that the backlog is 4542 B.
    fn prefill(q: &mut Pie<TestPacket>, b: &mut Bufs, n: u64) {
        for i in 0..n {
            q.enqueue(frame(1000 + i, Ecn::NotEct), 0, &mut b.ctx());
        }
    }

    #[test]
    fn ecn_marks_only_at_or_below_ten_percent() {
        // sch_pie.c:pie_qdisc_enqueue step 3 / RFC 8033 §5.1: a drop decision on an ECT packet is a
        // mark iff p ≤ 10 %; above it the ECT packet is dropped.
        let mut b = Bufs::new();
        let mut q = Pie::<TestPacket>::new(PieParams { ecn: true, ..PieParams::default() });
        prefill(&mut q, &mut b, 3);
        q.burst_time = 0;
        q.qdelay = q.target; // not below target/2
        q.prob = MAX_PROB / 10;
        // Force the deterministic branch: accu ≥ 8.5 after adding p.
        q.accu_prob = (MAX_PROB / 2) * 17;
        q.enqueue(frame(1, Ecn::Ect1), 1, &mut b.ctx());
        assert_eq!(q.len(), 4);
        assert!(b.dropped.is_empty());
        assert_eq!(q.queue.back().unwrap().ecn, Ecn::Ce);
        assert_eq!((q.ecn_mark, q.stats.marks), (1, 1));
        assert_eq!(b.marked, vec![0]);
        // Marking leaves accu_prob as is (the quirk of sch_pie.c:pie_qdisc_enqueue): next ECT marked too.
        q.enqueue(frame(2, Ecn::Ect0), 2, &mut b.ctx());
        assert_eq!((q.len(), q.ecn_mark), (5, 2));
        // Not-ECT at p ≤ 10 % is dropped and resets accu.
        q.enqueue(frame(3, Ecn::NotEct), 3, &mut b.ctx());
        assert_eq!(b.dropped.len(), 1);
        assert_eq!(q.accu_prob, 0);
        // p just above 10 %: even an ECT packet is dropped.
        q.prob = MAX_PROB / 10 + 1;
        q.accu_prob = (MAX_PROB / 2) * 17;
        q.enqueue(frame(4, Ecn::Ect1), 4, &mut b.ctx());
        assert_eq!(b.dropped.len(), 2);
        assert_eq!(b.dropped[1].id, 4);
        assert_eq!(b.dropped[1].ecn, Ecn::Ect1);
        assert_eq!((q.ecn_mark, q.dropped, q.stats.drops), (2, 2, 2));
        // Without `ecn`, an ECT packet is dropped at any p.
        let mut q = Pie::<TestPacket>::new(PieParams::default());
        prefill(&mut q, &mut b, 3);
        q.burst_time = 0;
        q.qdelay = q.target;
        q.prob = MAX_PROB / 100;
        q.accu_prob = (MAX_PROB / 2) * 17;
        q.enqueue(frame(5, Ecn::Ect1), 5, &mut b.ctx());
        assert_eq!(b.dropped.last().unwrap().id, 5);
    }

    #[test]
    fn no_early_drop_below_two_mtu_backlog() {
        // sch_pie.c:pie_qdisc_enqueue step 2c: with p = 100 % and no burst allowance,
        // arrivals are accepted while the backlog is < 3028 B, dropped from 3028 B.
        let mut b = Bufs::new();
        let mut q = Pie::<TestPacket>::new(PieParams::default());
        q.burst_time = 0;
        q.qdelay = q.target;
        q.prob = MAX_PROB * 9; // beyond 8.5 in one step: deterministic drop
        q.enqueue(frame(0, Ecn::NotEct), 0, &mut b.ctx()); // backlog 0
        q.enqueue(frame(1, Ecn::NotEct), 0, &mut b.ctx()); // backlog 1514
        assert_eq!(q.len(), 2);
        assert!(b.dropped.is_empty());
        q.enqueue(frame(2, Ecn::NotEct), 0, &mut b.ctx()); // backlog 3028
        assert_eq!(q.len(), 2);
        assert_eq!(b.dropped.len(), 1);
        // Small packets: 3027 B of backlog is still "below 2 MTU".
        let mut q = Pie::<TestPacket>::new(PieParams::default());
        q.burst_time = 0;
        q.qdelay = q.target;
        q.prob = MAX_PROB * 9;
        let mut small = frame(10, Ecn::NotEct);
        small.wire_len = 1513;
        q.enqueue(small, 0, &mut b.ctx());
        q.enqueue(frame(11, Ecn::NotEct), 0, &mut b.ctx());
        assert_eq!(q.stats.backlog_bytes, 3027);
        q.enqueue(frame(12, Ecn::NotEct), 0, &mut b.ctx());
        assert_eq!(q.len(), 3);
        assert_eq!(b.dropped.len(), 1);
    }

    #[test]
    fn no_early_drop_below_half_target_with_low_prob() {
        // sch_pie.c:pie_qdisc_enqueue step 2b: qdelay < target/2 and p < 20 % -> accept.
        let mut b = Bufs::new();
        let mut q = Pie::<TestPacket>::new(PieParams::default());
        prefill(&mut q, &mut b, 3);
        q.burst_time = 0;
        q.qdelay = q.target / 2 - 1;
        q.prob = MAX_PROB / 5 - 1;
        q.accu_prob = (MAX_PROB / 2) * 17;
        q.enqueue(frame(1, Ecn::NotEct), 0, &mut b.ctx());
        assert!(b.dropped.is_empty());
        q.prob = MAX_PROB / 5; // 20 %: rule no longer applies
        q.enqueue(frame(2, Ecn::NotEct), 0, &mut b.ctx());
        assert_eq!(b.dropped.len(), 1);
    }

    #[test]
    fn burst_allowance_suppresses_early_drops_for_150ms_of_dequeues() {
        // sch_pie.c:pie_process_dequeue: the allowance is consumed by the time between
        // dequeues (the first dequeue only starts the clock). With p = 900 % every
        // decision would drop; one frame leaves and one arrives each ms, so the
        // allowance is gone at the dequeue at 150 ms.
        let mut b = Bufs::new();
        let mut q = Pie::<TestPacket>::new(PieParams::default());
        q.prob = MAX_PROB * 9;
        q.qdelay = q.target; // keep rule 2b out of the way
        prefill(&mut q, &mut b, 4);
        let ms = NS_PER_MS;
        for k in 0..=150u64 {
            q.dequeue(k * ms, &mut b.ctx()).unwrap();
            q.enqueue(frame(k, Ecn::NotEct), k * ms + ms / 2, &mut b.ctx());
            if k < 150 {
                assert!(b.dropped.is_empty(), "dropped during burst allowance at {k} ms");
                assert_eq!(q.burst_time, BURST_TICKS - k * 15_625);
            }
        }
        assert_eq!(q.burst_time, 0);
        assert_eq!(b.dropped.len(), 1);
        assert_eq!(b.dropped[0].id, 150);
    }

    #[test]
    fn tail_drop_at_limit_counts_overlimit() {
        let mut b = Bufs::new();
        let mut q = Pie::<TestPacket>::new(PieParams { limit_packets: 5, ..PieParams::default() });
        for i in 0..8 {
            q.enqueue(frame(i, Ecn::NotEct), 0, &mut b.ctx());
        }
        assert_eq!(q.len(), 5);
        assert_eq!((q.overlimit, q.dropped, q.stats.drops, q.packets_in), (3, 3, 3, 5));
        assert_eq!(q.maxq, 4); // qlen before the add, as Linux
        let ex = q.extra_stats();
        assert!(ex.contains(&("overlimit", 3.0)) && ex.contains(&("packets_in", 5.0)));
    }

    #[test]
    fn delay_estimate_is_last_sojourn_and_zero_when_empty() {
        // sch_pie.c:pie_process_dequeue: qdelay = now − enqueue time of the departing packet (ticks),
        // forced to 0 when the queue becomes empty.
        let mut b = Bufs::new();
        let mut q = Pie::<TestPacket>::new(PieParams::default());
        q.enqueue(frame(0, Ecn::NotEct), 0, &mut b.ctx());
        q.enqueue(frame(1, Ecn::NotEct), 64_000, &mut b.ctx());
        q.dequeue(6_400_000, &mut b.ctx());
        assert_eq!(q.qdelay, 100_000);
        q.dequeue(6_528_000, &mut b.ctx());
        assert_eq!(q.qdelay, 0);
        let ex = q.extra_stats();
        assert!(ex.contains(&("delay_ms", 0.0)));
    }

    #[test]
    fn bytemode_scales_probability_by_size() {
        // sch_pie.c:pie_qdisc_enqueue step 2d: local_p = size × (p / 1514).
        let mut b = Bufs::new();
        let mut q = Pie::<TestPacket>::new(PieParams { bytemode: true, ..PieParams::default() });
        prefill(&mut q, &mut b, 2);
        q.burst_time = 0;
        q.qdelay = q.target;
        q.prob = MAX_PROB / 2;
        let mut small = frame(1, Ecn::NotEct);
        small.wire_len = 66;
        q.enqueue(small, 0, &mut b.ctx());
        assert_eq!(q.accu_prob, 66 * ((MAX_PROB / 2) / 1514));
    }

    #[test]
    fn rate_estimator_measures_drain_rate() {
        // sch_pie.c:pie_process_dequeue rate mode: 1514-B frames leaving every 121 088 ns (= 1892
        // ticks). The cycle starts at the first dequeue (t0 = 0, backlog ≥ 16 KiB)
        // and completes at the 11th (16 654 B ≥ 16 384), 10 gaps later.
        let mut b = Bufs::new();
        let mut q = Pie::<TestPacket>::new(PieParams { dq_rate_estimator: true, ..PieParams::default() });
        for i in 0..40 {
            q.enqueue(frame(i, Ecn::NotEct), 0, &mut b.ctx());
        }
        let gap = 1892 * 64;
        for k in 0..=11u64 {
            q.dequeue(k * gap, &mut b.ctx());
        }
        // count = 16 654 << 8 = 4 263 424; dtime = 10·1892 = 18 920 ticks -> 225
        // bytes/tick×256 (= 12.5 MB/s: 1514 B per 121.088 µs).
        assert_eq!(q.avg_dq_rate, 4_263_424 / 18_920);
        assert_eq!(q.avg_dq_rate, 225);
        assert_eq!(q.burst_time, BURST_TICKS - 18_920);
        // A new cycle started at the 11th dequeue; the 12th only counts bytes.
        assert_eq!(q.dq_count, 1514);
        // Timer: qdelay = (backlog << 8) / rate = (28·1514·256)/225 ticks.
        q.on_timer(500_000_000, &mut b.ctx());
        assert_eq!(q.qdelay, (28 * 1514 * 256 / 225) as u64);
        let rate = q.extra_stats().iter().find(|e| e.0 == "avg_dq_rate").unwrap().1;
        assert_eq!(rate, ((225u64 * 15_625_000) >> 8) as f64);
    }

    #[test]
    fn converges_to_target_under_unresponsive_overload() {
        // Closed-loop check of sch_pie.c:pie_qdisc_enqueue–sch_pie.c:pie_calculate_probability: 1514-B frames arriving at 110 Mbit/s
        // (every 110 µs) into a 100 Mbit/s departure process (121.12 µs). After
        // settling, the mean sojourn sits at target and the drop fraction at the
        // excess load 1 − 100/110 = 9.1 %. (prob itself settles near 17 %: the
        // de-randomisation of sch_pie.c:pie_qdisc_enqueue step 2e drops less often than p.)
        let mut b = Bufs::new();
        let mut q = Pie::<TestPacket>::new(PieParams::default()); // target 15 ms
        let (mut ta, mut td, mut id) = (0u64, 121_120u64, 0u64);
        let settle = 6 * NS_PER_SEC;
        let (mut soj, mut n_deq, mut n_arr, mut n_drop) = (0u64, 0u64, 0u64, 0u64);
        loop {
            let tt = q.next_timer().unwrap();
            let t = ta.min(td).min(tt);
            if t > 12 * NS_PER_SEC {
                break;
            }
            if t == tt {
                q.on_timer(t, &mut b.ctx());
            } else if t == ta {
                let before = b.dropped.len();
                q.enqueue(frame(id, Ecn::NotEct), t, &mut b.ctx());
                id += 1;
                if t > settle {
                    n_arr += 1;
                    n_drop += (b.dropped.len() - before) as u64;
                }
                ta += 110_000;
            } else {
                if let Some(p) = q.dequeue(t, &mut b.ctx()) {
                    if t > settle {
                        soj += t - p.enqueue_ts;
                        n_deq += 1;
                    }
                }
                td += 121_120;
            }
        }
        let mean_ms = soj as f64 / n_deq as f64 / 1e6;
        let drop_frac = n_drop as f64 / n_arr as f64;
        assert!((13.0..17.0).contains(&mean_ms), "mean sojourn {mean_ms} ms");
        assert!((0.085..0.10).contains(&drop_frac), "drop fraction {drop_frac}");
        assert!((0.10..0.25).contains(&q.prob_fraction()), "prob {}", q.prob_fraction());
        assert_eq!(q.overlimit, 0);
    }

    /// `enqueue_ref` and `dequeue_into` (the link's calls) take the same decisions,
    /// draws and counts as `enqueue` and `dequeue`, and hand out the same packets: two
    /// queues driven side by side past the tail-drop limit, with ECN marking, a mix of
    /// codepoints and the probability updates.
    #[test]
    fn by_reference_calls_match_enqueue_and_dequeue() {
        let params = PieParams { limit_packets: 1000, target_ns: 2_000_000, ecn: true, ..PieParams::default() };
        let (mut a, mut b) = (Pie::<TestPacket>::new(params.clone()), Pie::<TestPacket>::new(params));
        let (mut ba, mut bb) = (Bufs::new(), Bufs::new());
        let ecns = [Ecn::NotEct, Ecn::Ect0, Ecn::Ect1, Ecn::Ce];
        let mut next_timer = FIRST_UPDATE_NS;
        // Arrivals every 100 µs, departures every 121 µs (a 20 % overload), 5 s.
        for step in 0..50_000u64 {
            let now = step * 100_000;
            while next_timer <= now {
                a.on_timer(next_timer, &mut ba.ctx());
                b.on_timer(next_timer, &mut bb.ctx());
                next_timer = a.next_timer().unwrap();
                assert_eq!(b.next_timer(), Some(next_timer));
            }
            let mut p = frame(step, ecns[(step % 7 % 4) as usize]);
            p.qclass = 9;
            a.enqueue(p, now, &mut ba.ctx());
            b.enqueue_ref(&p, now, &mut bb.ctx());
            if step % 6 != 5 {
                let got = a.dequeue(now, &mut ba.ctx());
                let mut out = frame(u64::MAX, Ecn::NotEct);
                let ok = b.dequeue_into(now, &mut out);
                assert_eq!(got, ok.then_some(out), "step {step}");
            }
            assert_eq!((ba.dropped.len(), ba.marked.len()), (bb.dropped.len(), bb.marked.len()), "step {step}");
        }
        assert_eq!(ba.dropped, bb.dropped);
        assert_eq!(ba.marked, bb.marked);
        assert_eq!(a.stats, b.stats);
        assert_eq!(a.extra_stats(), b.extra_stats());
        assert!(a.overlimit > 0 && a.dropped > a.overlimit && a.ecn_mark > 0, "every path taken");
    }
}
