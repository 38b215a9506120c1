//! CoDel (RFC 8289) as Linux implements it: the core in `include/net/codel.h` and
//! `include/net/codel_impl.h`, the `codel` qdisc in `net/sched/sch_codel.c`.
//!
//! The first half of this file is the CoDel core shared by the `codel` qdisc below and
//! by `fq_codel` (one instance of [`CodelVars`] per flow bucket there): the per-queue
//! state, the `should_drop` test, the dequeue state machine, Linux's Newton-step
//! approximation of 1/sqrt(count) and the control law, all in the kernel's
//! 1.024 µs "codel time" (ns >> 10, u32, wrap-safe signed comparisons; include/net/codel.h:codel_get_time).
//! Where Linux and RFC 8289 differ, this follows Linux (the comments say where).

use super::{Qdisc, QdiscCtx, QdiscKind, QdiscPacket, QdiscStats, PSCHED_MTU};
use crate::rng::SimRng;
use crate::schema::{ParamKind, ParamSpec};
use crate::time::Time;
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::collections::VecDeque;

// ---------------------------------------------------------------------------------
// Shared CoDel core
// ---------------------------------------------------------------------------------

/// Linux `codel_time_t`: ns >> 10 truncated to u32 (1.024 µs units, wraps after
/// ~4398 s; compared with signed differences, so intervals must stay below 2^31 units).
pub type CodelTime = u32;

/// `CODEL_SHIFT`: codel time = ns >> 10 (include/net/codel.h:codel_get_time).
pub const CODEL_SHIFT: u32 = 10;

/// `REC_INV_SQRT_SHIFT`: rec_inv_sqrt is kept in 16 bits, used as Q0.32 after
/// shifting left by 16 (codel_impl.h:codel_Newton_step).
const REC_INV_SQRT_SHIFT: u32 = 16;

/// Largest time parameter accepted (100 s): keeps 16 x interval below 2^31 codel
/// units so the wrap-safe comparisons of the re-entry rule stay meaningful.
pub const MAX_TIME_PARAM_NS: u64 = 100_000_000_000;

/// Smallest target/interval accepted: one codel unit (a smaller value would become 0).
pub const MIN_TIME_PARAM_NS: u64 = 1 << CODEL_SHIFT;

/// `codel_get_time()` at simulated time `ns` (include/net/codel.h:codel_get_time: ns >> 10 as u32).
#[inline]
pub fn codel_time(ns: Time) -> CodelTime {
    (ns >> CODEL_SHIFT) as u32
}

/// Codel units to ns.
#[inline]
pub fn codel_time_to_ns(t: CodelTime) -> u64 {
    (t as u64) << CODEL_SHIFT
}

/// `codel_time_after(a, b)`: (s32)(a - b) > 0.
#[inline]
fn time_after(a: CodelTime, b: CodelTime) -> bool {
    (a.wrapping_sub(b) as i32) > 0
}

/// `codel_time_after_eq(a, b)`: (s32)(a - b) >= 0.
#[inline]
fn time_after_eq(a: CodelTime, b: CodelTime) -> bool {
    (a.wrapping_sub(b) as i32) >= 0
}

/// `codel_time_before(a, b)`: (s32)(a - b) < 0.
#[inline]
fn time_before(a: CodelTime, b: CodelTime) -> bool {
    (a.wrapping_sub(b) as i32) < 0
}

/// The CoDel parameters of one qdisc in internal units (Linux `struct codel_params`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CodelConfig {
    /// Target sojourn, codel units (5 ms -> 4882; include/net/codel.h:codel_params_init).
    pub target: CodelTime,
    /// Interval, codel units (100 ms -> 97 656).
    pub interval: CodelTime,
    /// ce_threshold in codel units; `None` = disabled (Linux: INT_MAX).
    pub ce_threshold: Option<CodelTime>,
    /// ce_threshold_selector value, compared with (ECN field & mask) (codel_impl.h:codel_dequeue, Linux 5.16 commit dfcb63ce1de6).
    pub ce_threshold_selector: u8,
    /// ce_threshold_selector mask; 0 = the threshold applies to every packet.
    pub ce_threshold_mask: u8,
    /// Mark ECT/CE packets instead of dropping them.
    pub ecn: bool,
    /// Minimum qdisc backlog (bytes) for a drop/mark: psched_mtu (codel_impl.h:codel_should_drop).
    pub mtu: u32,
    /// The host's `ktime_get_ns()` at simulated time 0, i.e. its uptime when the run
    /// starts: CoDel's clock is `ktime_get_ns() >> 10` (include/net/codel.h:codel_get_time),
    /// not time since the qdisc was created. It decides the re-entry rule's
    /// `now - drop_next < 16 * interval` on a queue's first dropping episode, where
    /// `drop_next` is still the 0 of `codel_vars_init`, and so whether an fq_codel queue
    /// whose `count` was raised by fat-flow drops resumes from a stale `rec_inv_sqrt`
    /// (see [`codel_dequeue`]).
    pub clock_base_ns: u64,
}

impl CodelConfig {
    /// Convert tc-style parameters in ns to codel units. Linux converts the user's µs
    /// with `(us * 1000) >> 10`; for whole-µs values this is exactly `ns >> 10`.
    pub fn from_ns(
        target_ns: u64,
        interval_ns: u64,
        ecn: bool,
        ce_threshold_ns: Option<u64>,
        ce_threshold_selector: Option<(u8, u8)>,
        mtu_bytes: u32,
    ) -> Self {
        let (sel, mask) = ce_threshold_selector.unwrap_or((0, 0));
        CodelConfig {
            target: codel_time(target_ns),
            interval: codel_time(interval_ns),
            ce_threshold: ce_threshold_ns.map(codel_time),
            ce_threshold_selector: sel,
            ce_threshold_mask: mask,
            ecn,
            mtu: mtu_bytes,
            clock_base_ns: 0,
        }
    }

    /// The same parameters on a host whose monotonic clock read `uptime_ns` when the
    /// run started (see [`CodelConfig::clock_base_ns`]).
    pub fn with_clock_base(mut self, uptime_ns: u64) -> Self {
        self.clock_base_ns = uptime_ns;
        self
    }

    /// `codel_get_time()` at simulated time `ns` on this host.
    #[inline]
    pub fn now(&self, ns: Time) -> CodelTime {
        codel_time(ns.wrapping_add(self.clock_base_ns))
    }
}

/// Per-queue CoDel state (Linux `struct codel_vars`). All-zero at creation
/// (`codel_vars_init` memsets it, so rec_inv_sqrt starts at 0 until the first
/// dropping episode sets it).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CodelVars {
    /// Packets dropped/marked since entering the dropping state (plus, in fq_codel,
    /// fat-flow batch drops).
    pub count: u32,
    /// `count` at the last entry into the dropping state.
    pub lastcount: u32,
    /// In the dropping state.
    pub dropping: bool,
    /// 1/sqrt(count) in Q0.16 (codel_impl.h:codel_Newton_step).
    pub rec_inv_sqrt: u16,
    /// Time the sojourn went (and stayed) above target, plus interval; 0 = below.
    pub first_above_time: CodelTime,
    /// Time of the next drop/mark when dropping.
    pub drop_next: CodelTime,
    /// Sojourn of the last packet examined, codel units.
    pub ldelay: CodelTime,
}

impl CodelVars {
    /// One Newton-Raphson step r <- r (3 - count r^2) / 2 in Linux's fixed point
    /// (`codel_impl.h:codel_Newton_step`). Intermediate products wrap exactly as the
    /// kernel's u64 arithmetic does (matters only for a stale r after fq_codel's
    /// fat-flow drop inflated `count`).
    pub fn newton_step(&mut self) {
        let invsqrt = (self.rec_inv_sqrt as u32) << REC_INV_SQRT_SHIFT; // Q0.32
        let invsqrt2 = ((invsqrt as u64 * invsqrt as u64) >> 32) as u32;
        let mut val = (3u64 << 32).wrapping_sub(self.count as u64 * invsqrt2 as u64);
        val >>= 2; // keep the next product in 64 bits
        val = val.wrapping_mul(invsqrt as u64) >> (32 - 2 + 1);
        self.rec_inv_sqrt = (val >> REC_INV_SQRT_SHIFT) as u16;
    }
}

/// `codel_control_law`: t + interval x rec_inv_sqrt / 2^16, via
/// `reciprocal_scale(interval, rec_inv_sqrt << 16)` (codel_impl.h:codel_control_law).
#[inline]
pub fn control_law(t: CodelTime, interval: CodelTime, rec_inv_sqrt: u16) -> CodelTime {
    let scale = (rec_inv_sqrt as u32) << REC_INV_SQRT_SHIFT;
    t.wrapping_add(((interval as u64 * scale as u64) >> 32) as u32)
}

/// Counters kept by the CoDel core (Linux `struct codel_stats`), per qdisc.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CodelStats {
    /// Largest packet seen at dequeue, bytes.
    pub maxpacket: u32,
    /// Packets dropped by the CoDel law.
    pub drop_count: u64,
    /// Bytes dropped by the CoDel law.
    pub drop_len: u64,
    /// CoDel-law CE marks.
    pub ecn_mark: u64,
    /// ce_threshold CE marks.
    pub ce_mark: u64,
}

/// What the CoDel dequeue needs from the qdisc that owns the queue (the callbacks
/// `dequeue_func`, `drop_func` and the `backlog` pointer of `codel_dequeue`).
pub trait CodelQueue {
    /// The packet type queued.
    type Pkt: QdiscPacket;
    /// Remove this queue's head packet, updating the qdisc's accounting (backlog,
    /// qlen, per-bucket backlog...). `None` if the queue is empty.
    fn dequeue_head(&mut self) -> Option<Self::Pkt>;
    /// The backlog (bytes) the minimum-backlog rule looks at, after the removal:
    /// the whole qdisc's backlog, also in fq_codel (codel_impl.h:codel_should_drop, sch_fq_codel.c:fq_codel_dequeue step 3).
    fn backlog_bytes(&self) -> u64;
    /// Drop a packet already removed by `dequeue_head`.
    fn drop(&mut self, pkt: Self::Pkt);
    /// Account a CE-marked packet: called once per packet and dequeue call even if
    /// both the CoDel law and ce_threshold marked it (Linux then counts both
    /// `ecn_mark` and `ce_mark`, which [`CodelStats`] does too).
    fn mark(&mut self, pkt: &Self::Pkt);
}

/// `codel_impl.h:codel_should_drop` for `pkt` (already removed from the queue)
/// at codel time `now`, with `backlog` bytes left in the qdisc.
pub fn should_drop<P: QdiscPacket>(
    pkt: Option<&P>,
    now: CodelTime,
    backlog: u64,
    cfg: &CodelConfig,
    vars: &mut CodelVars,
    stats: &mut CodelStats,
) -> bool {
    let Some(pkt) = pkt else {
        // codel_impl.h:codel_should_drop: no packet -> forget the above-target episode.
        vars.first_above_time = 0;
        return false;
    };
    // Sojourn in codel units: both ends truncated to 1.024 µs, as Linux stamps
    // codel_get_time() at enqueue and reads it again at dequeue (include/net/codel.h:codel_get_time).
    vars.ldelay = now.wrapping_sub(cfg.now(pkt.enqueue_ts()));
    stats.maxpacket = stats.maxpacket.max(pkt.wire_len());
    // codel_impl.h:codel_should_drop: below target, or at most one MTU left in the qdisc -> reset.
    if time_before(vars.ldelay, cfg.target) || backlog <= cfg.mtu as u64 {
        vars.first_above_time = 0;
        return false;
    }
    if vars.first_above_time == 0 {
        // Just went above: drop only if it stays above for an interval.
        vars.first_above_time = now.wrapping_add(cfg.interval);
        false
    } else {
        // Strictly after first_above_time (wrap-safe).
        time_after(now, vars.first_above_time)
    }
}

/// `codel_dequeue`: the CoDel state machine (codel_impl.h:codel_dequeue), then ce_threshold
/// marking (codel_impl.h:codel_dequeue; selector of Linux 5.16 commit dfcb63ce1de6). Returns the packet to send, if any; CoDel drops go
/// through `q.drop`, marks through `q.mark`. `now_ns` is read once per call.
pub fn codel_dequeue<Q: CodelQueue>(
    q: &mut Q,
    now_ns: Time,
    cfg: &CodelConfig,
    vars: &mut CodelVars,
    stats: &mut CodelStats,
) -> Option<Q::Pkt> {
    // Step 1.
    let Some(first) = q.dequeue_head() else {
        vars.dropping = false;
        return None;
    };
    let now = cfg.now(now_ns);
    // Step 2.
    let drop = should_drop(Some(&first), now, q.backlog_bytes(), cfg, vars, stats);
    codel_dequeue_rest(q, first, drop, now, cfg, vars, stats)
}

/// Steps 3 to 5 of `codel_dequeue` (codel_impl.h:codel_dequeue), for the head packet
/// `first` already removed and its `should_drop` answer `drop`.
fn codel_dequeue_rest<Q: CodelQueue>(
    q: &mut Q,
    first: Q::Pkt,
    drop: bool,
    now: CodelTime,
    cfg: &CodelConfig,
    vars: &mut CodelVars,
    stats: &mut CodelStats,
) -> Option<Q::Pkt> {
    let mut skb = Some(first);
    // Whether the packet to be returned got a CoDel-law mark in this call.
    let mut law_marked = false;
    'end: {
        if vars.dropping {
            // Step 3.
            if !drop {
                // Sojourn below target (or backlog <= mtu): leave the dropping state.
                vars.dropping = false;
            } else {
                // Drop (or mark) while it is time; a large backlog can need several
                // drops in one call, but at most one mark (codel_impl.h:codel_dequeue).
                while vars.dropping && time_after_eq(now, vars.drop_next) {
                    // `count` may wrap; Linux does not care either (no divide).
                    vars.count = vars.count.wrapping_add(1);
                    vars.newton_step();
                    let mut pkt = skb.take().expect("dropping loop always holds a packet");
                    if cfg.ecn && pkt.set_ce() {
                        // codel_impl.h:codel_dequeue: mark, advance drop_next, return this packet.
                        stats.ecn_mark += 1;
                        q.mark(&pkt);
                        law_marked = true;
                        vars.drop_next = control_law(vars.drop_next, cfg.interval, vars.rec_inv_sqrt);
                        skb = Some(pkt);
                        break 'end;
                    }
                    stats.drop_len += pkt.wire_len() as u64;
                    stats.drop_count += 1;
                    q.drop(pkt);
                    skb = q.dequeue_head();
                    if !should_drop(skb.as_ref(), now, q.backlog_bytes(), cfg, vars, stats) {
                        vars.dropping = false;
                    } else {
                        // Next drop one control-law step after the previous schedule
                        // (not after `now`).
                        vars.drop_next = control_law(vars.drop_next, cfg.interval, vars.rec_inv_sqrt);
                    }
                }
            }
        } else if drop {
            // Step 4: enter the dropping state.
            let mut pkt = skb.take().expect("drop implies a packet");
            if cfg.ecn && pkt.set_ce() {
                stats.ecn_mark += 1;
                q.mark(&pkt);
                law_marked = true;
                skb = Some(pkt);
            } else {
                stats.drop_len += pkt.wire_len() as u64;
                stats.drop_count += 1;
                q.drop(pkt);
                skb = q.dequeue_head();
                // Evaluated for its side effects (ldelay, first_above_time) only: the
                // next packet is returned even if it is above target (codel_impl.h:codel_dequeue).
                let _ = should_drop(skb.as_ref(), now, q.backlog_bytes(), cfg, vars, stats);
            }
            vars.dropping = true;
            // codel_impl.h:codel_dequeue re-entry rule (Linux; RFC 8289 §5 follows it):
            // restart from count - lastcount if the last episode ended recently.
            let delta = vars.count.wrapping_sub(vars.lastcount);
            if delta > 1 && time_before(now.wrapping_sub(vars.drop_next), cfg.interval.wrapping_mul(16)) {
                vars.count = delta;
                // One Newton step from the stale rec_inv_sqrt (Linux does not reset it).
                // On a queue's first episode drop_next is still 0, so whether this
                // branch runs depends on the host clock (`codel_get_time`, i.e. uptime);
                // when it does after fq_codel's fat-flow drops raised `count` from 0
                // (sch_fq_codel.c:fq_codel_drop `flow->cvars.count += i`), the stale
                // rec_inv_sqrt is codel_vars_init's 0, the Newton step keeps it 0, and the
                // control law then marks/drops every packet while dropping, in every later
                // episode that also resumes here.
                vars.newton_step();
            } else {
                vars.count = 1;
                vars.rec_inv_sqrt = (!0u32 >> REC_INV_SQRT_SHIFT) as u16; // 0xFFFF ~ 1.0
            }
            vars.lastcount = vars.count;
            vars.drop_next = control_law(now, cfg.interval, vars.rec_inv_sqrt);
        }
    }
    if let Some(pkt) = skb.as_mut() {
        ce_threshold_mark(q, pkt, law_marked, cfg, vars, stats);
    }
    skb
}

/// Step 5 of `codel_dequeue` (codel_impl.h:codel_dequeue; selector of Linux 5.16 commit
/// dfcb63ce1de6): ce_threshold step marking of the returned packet, on the ldelay of
/// the last packet examined (which is this one), strictly above the threshold, only
/// if the selector matches; no effect on the CoDel state.
#[inline]
fn ce_threshold_mark<Q: CodelQueue>(
    q: &mut Q,
    pkt: &mut Q::Pkt,
    law_marked: bool,
    cfg: &CodelConfig,
    vars: &CodelVars,
    stats: &mut CodelStats,
) {
    if let Some(thr) = cfg.ce_threshold {
        if time_after(vars.ldelay, thr) {
            // The DS-field byte is DSCP << 2 | ECN (`ipv4_get_dsfield`); the
            // simulator's packets carry DSCP 0, so there the selector sees the ECN field.
            let dsfield = pkt.dsfield();
            let selected = cfg.ce_threshold_mask == 0 || (dsfield & cfg.ce_threshold_mask) == cfg.ce_threshold_selector;
            if selected && pkt.set_ce() {
                // Linux counts ce_mark even when the CoDel law has just marked this
                // packet (it is CE now, so a 0x01/0x01 selector matches too); the
                // simulator reports one marked packet once (`q.mark`).
                stats.ce_mark += 1;
                if !law_marked {
                    q.mark(pkt);
                }
            }
        }
    }
}

/// [`codel_dequeue`] into `out`, for a qdisc's FIFO of packets the link copies: the
/// same steps, calls and counts, but when the head is not to be dropped (step 2
/// false: the sojourn below target, or not yet an interval above it) it is copied
/// once from its slot to `out` instead of moved out through an `Option`. Its
/// `should_drop` runs on the head in place, with the backlog it would leave (what
/// `dequeue_func` lowers the qdisc's backlog to before `codel_should_drop` reads
/// it). False (and `out` untouched) if the queue is empty.
#[inline]
pub(crate) fn codel_dequeue_into<P: QdiscPacket + Copy, F: FnMut(&P)>(
    q: &mut QdiscFifo<'_, '_, P, F>,
    out: &mut P,
    now_ns: Time,
    cfg: &CodelConfig,
    vars: &mut CodelVars,
    stats: &mut CodelStats,
) -> bool {
    // Step 1.
    let Some(head) = q.queue.front() else {
        vars.dropping = false;
        return false;
    };
    let now = cfg.now(now_ns);
    // Step 2, on the backlog left once the head is removed.
    let backlog = q.stats.backlog_bytes - head.wire_len() as u64;
    let drop = should_drop(Some(head), now, backlog, cfg, vars, stats);
    if !drop {
        // Step 3 leaves the dropping state (or stays out of it), step 4 does not run.
        *out = *head;
        q.queue.pop_front();
        q.stats.on_remove(out);
        (q.on_remove)(out);
        vars.dropping = false;
        ce_threshold_mark(q, out, false, cfg, vars, stats);
        return true;
    }
    let first = q.dequeue_head().expect("the head was there");
    match codel_dequeue_rest(q, first, drop, now, cfg, vars, stats) {
        Some(pkt) => {
            *out = pkt;
            true
        }
        None => false,
    }
}

// ---------------------------------------------------------------------------------
// The `codel` qdisc (sch_codel.c)
// ---------------------------------------------------------------------------------

/// `tc qdisc ... codel` parameters (include/net/codel.h:codel_params_init), Linux defaults.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CodelParams {
    /// `limit`: tail drop when the queue holds this many packets. Default 1000.
    pub limit_packets: u32,
    /// `target`: acceptable standing sojourn. Default 5 ms.
    pub target_ns: u64,
    /// `interval`: sliding window / control-law base. Default 100 ms.
    pub interval_ns: u64,
    /// `ecn` / `noecn`: mark ECT/CE packets instead of dropping. Default off for
    /// sch_codel (include/net/codel.h:codel_params_init).
    pub ecn: bool,
    /// `ce_threshold`: CE-mark every departing packet whose sojourn exceeds this,
    /// independent of the CoDel law. Default disabled (`None`).
    pub ce_threshold_ns: Option<u64>,
    /// Not a tc keyword: the device's psched_mtu, the minimum qdisc backlog below
    /// which CoDel never drops. Default 1514 (Ethernet).
    pub mtu_bytes: u32,
    /// Not a tc keyword: the router's uptime (`ktime_get_ns()`) when the run starts,
    /// which CoDel's clock reads ([`CodelConfig::clock_base_ns`]). `None` (default):
    /// drawn from the scenario seed ([`draw_uptime_ns`]).
    pub uptime_ns: Option<u64>,
}

impl Default for CodelParams {
    fn default() -> Self {
        CodelParams {
            limit_packets: 1000,
            target_ns: 5_000_000,
            interval_ns: 100_000_000,
            ecn: false,
            ce_threshold_ns: None,
            mtu_bytes: PSCHED_MTU,
            uptime_ns: None,
        }
    }
}

/// One wrap of CoDel's clock: 2^32 codel units of 1.024 µs (≈ 4398 s).
pub const CODEL_CLOCK_WRAP_NS: u64 = 1 << (32 + CODEL_SHIFT);

/// The router's uptime at the start of the run when the scenario does not give one:
/// uniform over one wrap of CoDel's 32-bit clock (include/net/codel.h:codel_get_time
/// keeps `ktime_get_ns() >> 10` as u32), from the qdisc's random stream. Only the
/// uptime modulo the wrap matters, so this is every uptime a real router may have had.
pub fn draw_uptime_ns(uptime_ns: Option<u64>, rng: &mut SimRng) -> u64 {
    uptime_ns.unwrap_or_else(|| rng.next_u64() & (CODEL_CLOCK_WRAP_NS - 1))
}

/// Schema of the router's uptime (`uptime_ns`; the engine word `uptime`, tc has none) shared by
/// `codel` and `fq_codel`.
pub(crate) fn uptime_spec() -> ParamSpec {
    ParamSpec::new(
        "uptime_ns",
        ParamKind::TimeNs,
        json!(null),
        "The router's uptime (ktime_get_ns) when the run starts (an engine word, not tc's: `uptime 1000s`); \
         CoDel's clock is \
         ktime_get_ns() >> 10 (include/net/codel.h:codel_get_time), which decides the re-entry rule on a \
         queue's first dropping episode (include/net/codel_impl.h:codel_dequeue). null = drawn from the \
         seed over one wrap of that 32-bit clock (2^42 ns, about 4398 s); only the uptime modulo that wrap \
         matters (any uptime up to 100 days is accepted).",
    )
    .range(0.0, 8.64e15)
}

/// Schema of the CoDel parameters shared by `codel` and `fq_codel`: `target_ns`,
/// `interval_ns`, `ce_threshold_ns` (defaults from `include/net/codel.h:codel_params_init`).
/// Times are bounded by one codel unit and 100 s so 16 x interval stays below 2^31
/// codel units (the re-entry rule's wrap-safe comparison).
pub(crate) fn codel_time_specs(target_ns: u64, interval_ns: u64) -> Vec<ParamSpec> {
    let (lo, hi) = (MIN_TIME_PARAM_NS as f64, MAX_TIME_PARAM_NS as f64);
    vec![
        ParamSpec::new(
            "target_ns",
            ParamKind::TimeNs,
            json!(target_ns),
            "Acceptable standing sojourn TARGET (include/net/codel.h:codel_params_init: 5 ms; RFC 8289 §4.4).",
        )
        .range(lo, hi),
        ParamSpec::new(
            "interval_ns",
            ParamKind::TimeNs,
            json!(interval_ns),
            "Sliding window and control-law base INTERVAL (include/net/codel.h:codel_params_init: 100 ms; \
             RFC 8289 §4.3).",
        )
        .range(lo, hi),
        ParamSpec::new(
            "ce_threshold_ns",
            ParamKind::TimeNs,
            json!(null),
            "CE-mark departing packets whose sojourn exceeds this, apart from the CoDel law; null = disabled \
             (include/net/codel.h:codel_params_init: CODEL_DISABLED_THRESHOLD).",
        )
        .range(0.0, hi),
    ]
}

/// Schema of the device MTU CoDel's minimum-backlog rule uses (`psched_mtu`, clamped
/// to 256..=1 MiB as fq_codel's quantum is).
pub(crate) fn mtu_spec() -> ParamSpec {
    ParamSpec::new(
        "mtu_bytes",
        ParamKind::Bytes,
        json!(PSCHED_MTU),
        "Not a tc keyword: the device's psched_mtu, below which backlog CoDel never drops \
         (include/net/codel_impl.h:codel_should_drop; Ethernet 1500 + 14).",
    )
    .range(256.0, (1 << 20) as f64)
    .not_tc()
}

/// Packet limits of `codel` and `fq_codel` (the engine's bound; Linux takes any u32).
pub(crate) const MAX_LIMIT_PACKETS: f64 = 1_000_000.0;

impl QdiscKind for CodelParams {
    const KIND: &'static str = "codel";
    const DOC: &'static str = "CoDel: one FIFO under the CoDel law (RFC 8289 as net/sched/sch_codel.c).";

    fn params() -> Vec<ParamSpec> {
        let d = CodelParams::default();
        let mut v = vec![ParamSpec::new(
            "limit_packets",
            ParamKind::Packets,
            json!(d.limit_packets),
            "Tail-drop limit, packets (net/sched/sch_codel.c:codel_init: DEFAULT_CODEL_LIMIT 1000).",
        )
        .range(1.0, MAX_LIMIT_PACKETS)];
        v.extend(codel_time_specs(d.target_ns, d.interval_ns));
        v.push(ParamSpec::new(
            "ecn",
            ParamKind::Bool,
            json!(d.ecn),
            "Mark ECT packets instead of dropping (include/net/codel.h:codel_params_init: off for sch_codel).",
        ));
        v.push(mtu_spec());
        v.push(uptime_spec());
        v
    }

    fn build<P: QdiscPacket>(&self, rng: &mut SimRng) -> Box<dyn Qdisc<P>> {
        let uptime = draw_uptime_ns(self.uptime_ns, rng);
        Box::new(Codel::new(CodelParams { uptime_ns: Some(uptime), ..self.clone() }))
    }
}

/// The `codel` qdisc: one FIFO under one CoDel instance.
pub struct Codel<P> {
    params: CodelParams,
    cfg: CodelConfig,
    queue: VecDeque<P>,
    vars: CodelVars,
    cstats: CodelStats,
    /// Tail drops (`drop_overlimit`).
    drop_overlimit: u64,
    stats: QdiscStats,
    /// Codel time of the last dequeue call (for the relative `drop_next` statistic).
    last_now: CodelTime,
}

/// A qdisc's FIFO seen by the CoDel core, for `codel` (the whole queue) and
/// `fq_codel` (one bucket): `dequeue_func` lowers the qdisc's backlog before
/// `codel_should_drop` runs (sch_codel.c:dequeue_func, sch_fq_codel.c:dequeue_func),
/// plus what the qdisc accounts of its own in `on_remove` (fq_codel: the bucket's
/// backlog and the memory usage); `drop_func` and marks are counted in the qdisc's
/// `tc -s` stats and reported through `ctx`.
pub(crate) struct QdiscFifo<'a, 'c, P, F> {
    pub queue: &'a mut VecDeque<P>,
    pub stats: &'a mut QdiscStats,
    pub ctx: &'a mut QdiscCtx<'c, P>,
    pub on_remove: F,
}

impl<P: QdiscPacket, F: FnMut(&P)> CodelQueue for QdiscFifo<'_, '_, P, F> {
    type Pkt = P;
    fn dequeue_head(&mut self) -> Option<P> {
        let pkt = self.queue.pop_front()?;
        self.stats.on_remove(&pkt);
        (self.on_remove)(&pkt);
        Some(pkt)
    }
    /// The whole qdisc's backlog, also in fq_codel (sch_fq_codel.c:fq_codel_dequeue).
    fn backlog_bytes(&self) -> u64 {
        self.stats.backlog_bytes
    }
    fn drop(&mut self, pkt: P) {
        self.ctx.drop_counted(self.stats, pkt);
    }
    fn mark(&mut self, pkt: &P) {
        self.ctx.mark_counted(self.stats, pkt.flow_key());
    }
}

impl<P: QdiscPacket> Codel<P> {
    pub fn new(params: CodelParams) -> Self {
        let cfg = CodelConfig::from_ns(
            params.target_ns,
            params.interval_ns,
            params.ecn,
            params.ce_threshold_ns,
            None, // sch_codel has no selector: ce_threshold applies to all packets
            params.mtu_bytes,
        )
        .with_clock_base(params.uptime_ns.unwrap_or(0));
        // Starts small and grows to what the queue holds, as `Fifo`'s ring.
        let cap = (params.limit_packets as usize).clamp(16, 256);
        Codel {
            params,
            cfg,
            queue: VecDeque::with_capacity(cap),
            vars: CodelVars::default(),
            cstats: CodelStats::default(),
            drop_overlimit: 0,
            stats: QdiscStats::default(),
            last_now: 0,
        }
    }

    pub fn params(&self) -> &CodelParams {
        &self.params
    }

    /// The CoDel state (for tests and diagnostics).
    pub fn vars(&self) -> &CodelVars {
        &self.vars
    }

    /// The CoDel core counters.
    pub fn codel_stats(&self) -> &CodelStats {
        &self.cstats
    }
}

impl<P: QdiscPacket + Copy> Codel<P> {
    /// [`Qdisc::enqueue`] of a packet the caller keeps: the same decision, then the
    /// packet copied once, into its slot, and stamped and classed there (as
    /// `Fifo::enqueue_ref`), instead of copied into the call, changed and copied again.
    #[inline]
    pub fn enqueue_ref(&mut self, pkt: &P, now: Time, ctx: &mut QdiscCtx<P>) {
        // sch_codel.c:codel_qdisc_enqueue: tail drop when qlen >= limit.
        if self.queue.len() >= self.params.limit_packets as usize {
            return self.drop_copy(pkt, ctx);
        }
        self.stats.on_enqueue(pkt);
        self.queue.push_back(*pkt);
        if let Some(p) = self.queue.back_mut() {
            p.set_enqueue_ts(now);
            p.set_qclass(0);
        }
    }

    /// The tail drop of [`enqueue_ref`](Self::enqueue_ref).
    #[cold]
    fn drop_copy(&mut self, pkt: &P, ctx: &mut QdiscCtx<P>) {
        self.drop_overlimit += 1;
        ctx.drop_counted(&mut self.stats, *pkt);
    }

    /// [`Qdisc::dequeue`] into `out` (sch_codel.c:codel_qdisc_dequeue through
    /// [`codel_dequeue_into`]): the packet sent is copied once, from its slot to
    /// `out`, unless CoDel dropped before it. Drops and marks are reported through
    /// `ctx` as `dequeue` reports them. False (and `out` untouched) if nothing is sent.
    #[inline(never)]
    pub fn dequeue_into(&mut self, now: Time, ctx: &mut QdiscCtx<P>, out: &mut P) -> bool {
        self.last_now = self.cfg.now(now);
        let mut fifo = QdiscFifo { queue: &mut self.queue, stats: &mut self.stats, ctx, on_remove: |_: &P| {} };
        if !codel_dequeue_into(&mut fifo, out, now, &self.cfg, &mut self.vars, &mut self.cstats) {
            return false;
        }
        self.stats.on_sent(out);
        true
    }
}

impl<P: QdiscPacket> Qdisc<P> for Codel<P> {
    fn kind(&self) -> &'static str {
        "codel"
    }

    fn enqueue(&mut self, mut pkt: P, now: Time, ctx: &mut QdiscCtx<P>) {
        // sch_codel.c:codel_qdisc_enqueue: tail drop when qlen >= limit.
        if self.queue.len() >= self.params.limit_packets as usize {
            self.drop_overlimit += 1;
            ctx.drop_counted(&mut self.stats, pkt);
            return;
        }
        pkt.set_enqueue_ts(now);
        pkt.set_qclass(0);
        self.stats.on_enqueue(&pkt);
        self.queue.push_back(pkt);
    }

    fn dequeue(&mut self, now: Time, ctx: &mut QdiscCtx<P>) -> Option<P> {
        self.last_now = self.cfg.now(now);
        let mut fifo = QdiscFifo { queue: &mut self.queue, stats: &mut self.stats, ctx, on_remove: |_: &P| {} };
        let pkt = codel_dequeue(&mut fifo, now, &self.cfg, &mut self.vars, &mut self.cstats)?;
        self.stats.on_sent(&pkt);
        Some(pkt)
    }

    fn peek(&self) -> Option<&P> {
        self.queue.front()
    }

    fn stats(&self) -> &QdiscStats {
        &self.stats
    }

    /// `tc -s` codel xstats (sch_codel.c:codel_dump_stats). `ldelay_ms` is the sojourn of the last
    /// packet examined; `drop_next` is µs from the last dequeue call to the next
    /// scheduled drop while dropping (0 otherwise), as tc prints it. `uptime_s` is not
    /// tc's: the router uptime the run's CoDel clock started from (drawn from the seed
    /// unless given), which decides the first episode's re-entry rule.
    fn extra_stats(&self) -> Vec<(&'static str, f64)> {
        let drop_next_us = if self.vars.dropping {
            let delta = self.vars.drop_next.wrapping_sub(self.last_now) as i32;
            (delta as i64 * (1 << CODEL_SHIFT)) as f64 / 1000.0
        } else {
            0.0
        };
        vec![
            ("count", self.vars.count as f64),
            ("lastcount", self.vars.lastcount as f64),
            ("ldelay_ms", codel_time_to_ns(self.vars.ldelay) as f64 / 1e6),
            ("drop_next", drop_next_us),
            ("ecn_mark", self.cstats.ecn_mark as f64),
            ("ce_mark", self.cstats.ce_mark as f64),
            ("drop_overlimit", self.drop_overlimit as f64),
            ("uptime_s", self.cfg.clock_base_ns as f64 / 1e9),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qdisc::testutil::TestPacket;
    use crate::qdisc::Ecn;

    const MS: u64 = 1_000_000;

    fn frame(id: u64, ecn: Ecn) -> TestPacket {
        crate::qdisc::testutil::packet(0, id, 1514, ecn)
    }

    use crate::qdisc::testutil::Harness;

    /// Linux's r after `count - 1` Newton steps from 0xFFFF (codel_impl.h:codel_Newton_step table).
    fn r_after(count: u32) -> u16 {
        let mut v = CodelVars { count: 1, rec_inv_sqrt: 0xFFFF, ..Default::default() };
        while v.count < count {
            v.count += 1;
            v.newton_step();
        }
        v.rec_inv_sqrt
    }

    #[test]
    fn unit_conversions() {
        // include/net/codel.h:codel_params_init: 5 ms = 4882 units, 100 ms = 97 656 units.
        let c = CodelConfig::from_ns(5 * MS, 100 * MS, false, None, None, 1514);
        assert_eq!(c.target, 4882);
        assert_eq!(c.interval, 97_656);
        // Wrap-safe comparisons across the u32 wrap.
        assert!(time_after(3, u32::MAX - 2));
        assert!(time_before(u32::MAX - 2, 3));
        assert!(time_after_eq(7, 7) && !time_after(7, 7));
    }

    #[test]
    fn newton_table_matches_spec() {
        // codel_impl.h:codel_Newton_step table (r as a fraction of 2^16).
        let expect = [(1, 0.99998), (2, 0.50002), (3, 0.5625), (4, 0.4878), (5, 0.4415), (8, 0.3515), (15, 0.2578)];
        for (count, r) in expect {
            let got = r_after(count) as f64 / 65536.0;
            assert!((got - r).abs() < 1e-4, "count {count}: r = {got}, spec {r}");
        }
        // control_law with interval 100 ms at count 1: 99.998 ms.
        let gap = control_law(0, 97_656, 0xFFFF);
        assert_eq!(gap, 97_654);
    }

    /// A persistently over-target queue: `depth` packets, dequeued every `step` ns
    /// and refilled after each dequeue, so every sojourn is depth x step (10 ms here)
    /// and CoDel acts at the dequeue instant nearest after each control-law time.
    /// Returns the times (ns) of CoDel drops or marks, in order.
    fn run_fluid(q: &mut Codel<TestPacket>, h: &mut Harness, ecn: Ecn, t0: Time, until: Time) -> Vec<Time> {
        const STEP: u64 = 10 * 1024; // 10 codel units: control-law times are hit within 10.24 µs
        let mut events = Vec::new();
        let mut id = 1_000_000 + t0;
        let mut t = t0;
        while t < until {
            let (d0, m0) = (h.dropped.len(), h.marked.len());
            let got = q.dequeue(t, &mut h.ctx());
            assert!(got.is_some());
            let n = (h.dropped.len() - d0) + (h.marked.len() - m0);
            for _ in 0..n {
                events.push(t);
            }
            // Keep the queue at its depth: one arrival per departure and drop.
            for _ in 0..(1 + h.dropped.len() - d0) {
                id += 1;
                q.enqueue(frame(id, ecn), t, &mut h.ctx());
            }
            t += STEP;
        }
        events
    }

    fn fill(q: &mut Codel<TestPacket>, h: &mut Harness, n: u64, ecn: Ecn, at: Time) {
        for i in 0..n {
            q.enqueue(frame(i, ecn), at, &mut h.ctx());
        }
    }

    #[test]
    fn vector4_drop_spacing_in_one_episode() {
        // Worked through codel_impl.h:codel_control_law: gaps 100.0, 50.0, 56.2, 48.8, 44.2, 40.4, 37.5, 35.2,
        // 33.2, 31.5 ms (Linux Newton approximation) within 0.1 ms.
        let mut q = Codel::<TestPacket>::new(CodelParams::default());
        let mut h = Harness::new();
        // 1000 packets x 10.24 µs = 10.24 ms of sojourn > 5 ms target.
        fill(&mut q, &mut h, 1000, Ecn::NotEct, 0);
        let drops = run_fluid(&mut q, &mut h, Ecn::NotEct, 0, 600 * MS);
        assert_eq!(drops.len(), 11, "drops at {drops:?}");
        let gaps: Vec<f64> = drops.windows(2).map(|w| (w[1] - w[0]) as f64 / 1e6).collect();
        let spec = [100.0, 50.0, 56.2, 48.8, 44.2, 40.4, 37.5, 35.2, 33.2, 31.5];
        for (g, s) in gaps.iter().zip(spec) {
            assert!((g - s).abs() <= 0.1, "gaps {gaps:?} vs spec {spec:?}");
        }
        // Sojourn first exceeds 5 ms at ~5 ms; first drop one interval later.
        assert!((drops[0] as f64 / 1e6 - 105.0).abs() < 0.1, "first drop at {}", drops[0]);
        assert_eq!(q.vars().count, 11);
        assert_eq!(q.vars().lastcount, 1);
        assert!(q.vars().dropping);
        assert_eq!(q.stats().drops, 11);
        assert_eq!(q.codel_stats().drop_count, 11);
        assert_eq!(h.dropped.len(), 11);
        assert!(h.marked.is_empty());
    }

    /// Drain everything at one instant: sojourns stay high, but the last packets
    /// leave at most one MTU behind, so CoDel leaves the dropping state.
    fn drain(q: &mut Codel<TestPacket>, h: &mut Harness, at: Time) {
        while q.dequeue(at, &mut h.ctx()).is_some() {}
        assert!(q.is_empty());
    }

    #[test]
    fn reentry_count_within_16_intervals() {
        // codel_impl.h:codel_dequeue step 4 (re-entry rule).
        let mut q = Codel::<TestPacket>::new(CodelParams::default());
        let mut h = Harness::new();
        fill(&mut q, &mut h, 1000, Ecn::NotEct, 0);
        let e1 = run_fluid(&mut q, &mut h, Ecn::NotEct, 0, 600 * MS);
        assert_eq!(e1.len(), 11);
        let drop_next = q.vars().drop_next;
        drain(&mut q, &mut h, 600 * MS);
        assert!(!q.vars().dropping);
        assert_eq!(q.vars().count, 11);
        // Refill 100 ms later; the queue is above target again 5 ms after, and the
        // next drop is one interval after that: 210 ms after drop_next < 1.6 s.
        let t1 = 700 * MS;
        fill(&mut q, &mut h, 1000, Ecn::NotEct, t1);
        let e2 = run_fluid(&mut q, &mut h, Ecn::NotEct, t1, t1 + 106 * MS);
        assert_eq!(e2.len(), 1);
        assert!(codel_time(e2[0]).wrapping_sub(drop_next) < 16 * 97_656);
        // count = count - lastcount = 11 - 1 = 10, one Newton step from the stale r.
        assert_eq!(q.vars().count, 10);
        assert_eq!(q.vars().lastcount, 10);
        let mut expect = CodelVars { count: 10, rec_inv_sqrt: r_after(11), ..Default::default() };
        expect.newton_step();
        assert_eq!(q.vars().rec_inv_sqrt, expect.rec_inv_sqrt);
        assert_eq!(q.vars().drop_next, control_law(codel_time(e2[0]), 97_656, expect.rec_inv_sqrt));

        // A third episode entered more than 16 intervals after drop_next: count = 1
        // (delta = 10 - 10 = 0 would also give 1, so first grow count again).
        let e3 = run_fluid(&mut q, &mut h, Ecn::NotEct, t1 + 106 * MS, t1 + 200 * MS);
        assert!(e3.len() >= 2);
        let t_end = t1 + 200 * MS;
        drain(&mut q, &mut h, t_end);
        assert!(q.vars().count - q.vars().lastcount > 1); // only the time test says no
        let t2 = t_end + 2_000 * MS; // 2 s > 16 x 100 ms
        fill(&mut q, &mut h, 1000, Ecn::NotEct, t2);
        let e4 = run_fluid(&mut q, &mut h, Ecn::NotEct, t2, t2 + 106 * MS);
        assert_eq!(e4.len(), 1);
        assert_eq!(q.vars().count, 1);
        assert_eq!(q.vars().rec_inv_sqrt, 0xFFFF);
    }

    #[test]
    fn no_drop_below_target() {
        // codel_impl.h:codel_should_drop: sojourn 4.9 ms < 5 ms for 1 s -> never above target.
        let mut q = Codel::<TestPacket>::new(CodelParams::default());
        let mut h = Harness::new();
        fill(&mut q, &mut h, 480, Ecn::NotEct, 0); // 480 x 10.24 µs = 4.92 ms
        let drops = run_fluid(&mut q, &mut h, Ecn::NotEct, 0, 1_000 * MS);
        assert!(drops.is_empty());
        assert_eq!(q.vars().first_above_time, 0);
        assert!((4.9..5.0).contains(&(codel_time_to_ns(q.vars().ldelay) as f64 / 1e6)));
        // Boundary: ldelay == target counts as above (only "< target" resets).
        let mut q = Codel::<TestPacket>::new(CodelParams::default());
        fill(&mut q, &mut h, 3, Ecn::NotEct, 0);
        q.dequeue(4882 * 1024, &mut h.ctx()).unwrap();
        assert_eq!(q.vars().first_above_time, 4882 + 97_656);
    }

    #[test]
    fn no_drop_with_at_most_one_mtu_left() {
        // codel_impl.h:codel_should_drop, codel_dequeue: packets wait 1 s (far above target), one dequeue
        // every 200 ms (> interval apart): a drop needs more than 1514 B left in
        // the qdisc after removing the packet examined.
        for (last_len, expect_drops) in [(1514u32, 0u64), (1515, 1)] {
            let mut q = Codel::<TestPacket>::new(CodelParams::default());
            let mut h = Harness::new();
            for (i, len) in [1514, 1514, last_len].into_iter().enumerate() {
                let mut p = frame(i as u64, Ecn::NotEct);
                p.wire_len = len;
                q.enqueue(p, 0, &mut h.ctx());
            }
            // 1 s: 1514 + last_len left -> above target, first_above_time = 1.1 s.
            assert_eq!(q.dequeue(1_000 * MS, &mut h.ctx()).unwrap().id, 0);
            assert_ne!(q.vars().first_above_time, 0);
            // 1.2 s: last_len left after the head: drop only if > 1514 B.
            let p = q.dequeue(1_200 * MS, &mut h.ctx()).unwrap();
            assert_eq!(q.stats().drops, expect_drops, "last_len {last_len}");
            assert_eq!(p.id, 1 + expect_drops);
            assert_eq!(q.vars().dropping, expect_drops == 1);
        }
        // A long-lived 2-packet queue never drops.
        let mut q = Codel::<TestPacket>::new(CodelParams::default());
        let mut h = Harness::new();
        let mut t = 0;
        for i in 0..20 {
            q.enqueue(frame(2 * i, Ecn::NotEct), t, &mut h.ctx());
            q.enqueue(frame(2 * i + 1, Ecn::NotEct), t, &mut h.ctx());
            t += 1_000 * MS;
            assert!(q.dequeue(t, &mut h.ctx()).is_some());
            assert!(q.dequeue(t + 200 * MS, &mut h.ctx()).is_some());
        }
        assert_eq!(q.stats().drops, 0);
    }

    #[test]
    fn ecn_marks_ect_and_drops_not_ect_at_the_same_instants() {
        // codel_impl.h:codel_dequeue: in ECN mode ECT packets are marked where Not-ECT ones are
        // dropped, and a marking episode advances drop_next exactly like drops.
        let run = |ecn_mode: bool, codepoint: Ecn| {
            let mut q = Codel::<TestPacket>::new(CodelParams { ecn: ecn_mode, ..Default::default() });
            let mut h = Harness::new();
            fill(&mut q, &mut h, 1000, codepoint, 0);
            let ev = run_fluid(&mut q, &mut h, codepoint, 0, 600 * MS);
            (ev, q.codel_stats().ecn_mark, q.stats().drops, q.stats().marks, h.marked.len())
        };
        let (marks_ect1, ecn_mark, drops, marks, noted) = run(true, Ecn::Ect1);
        assert_eq!((ecn_mark, drops, marks, noted), (11, 0, 11, 11));
        let (marks_ect0, ..) = run(true, Ecn::Ect0);
        let (drops_notect, ecn_mark, drops, marks, _) = run(true, Ecn::NotEct);
        assert_eq!((ecn_mark, drops, marks), (0, 11, 0));
        let (drops_noecn, ..) = run(false, Ecn::Ect0); // noecn: ECT packets dropped
        assert_eq!(marks_ect1.len(), 11);
        assert_eq!(marks_ect1, drops_notect);
        assert_eq!(marks_ect0, drops_notect);
        assert_eq!(drops_noecn, drops_notect);
    }

    #[test]
    fn ecn_marks_at_most_one_per_dequeue_but_drops_several() {
        // codel_impl.h:codel_dequeue step 3: when several drop times have passed, the drop loop
        // drops several packets in one call; ECN mode marks one and returns it.
        for (ecn, per_call) in [(Ecn::NotEct, 2usize), (Ecn::Ect0, 1)] {
            let mut q = Codel::<TestPacket>::new(CodelParams { ecn: true, ..Default::default() });
            let mut h = Harness::new();
            fill(&mut q, &mut h, 200, ecn, 0);
            q.dequeue(10 * MS, &mut h.ctx()).unwrap(); // first_above_time = 110 ms
            q.dequeue(111 * MS, &mut h.ctx()).unwrap(); // enter: drop_next ~ 211 ms
            let before = h.dropped.len() + h.marked.len();
            // At 262 ms both the 211 ms and the ~261 ms drop times have passed.
            q.dequeue(262 * MS, &mut h.ctx()).unwrap();
            assert_eq!(h.dropped.len() + h.marked.len() - before, per_call, "{ecn:?}");
        }
    }

    #[test]
    fn ce_threshold_marks_only_above_threshold() {
        // codel_impl.h:codel_dequeue step 5: ldelay > ce_threshold (strictly, in codel units).
        // ce_threshold 1 ms = 976 units.
        let p = CodelParams { ce_threshold_ns: Some(MS), ..Default::default() };
        assert_eq!(Codel::<TestPacket>::new(p.clone()).cfg.ce_threshold, Some(976));
        let mut q = Codel::<TestPacket>::new(p);
        let mut h = Harness::new();
        for (i, ecn) in [Ecn::Ect0, Ecn::Ect0, Ecn::NotEct, Ecn::Ect1, Ecn::Ce].into_iter().enumerate() {
            q.enqueue(frame(i as u64, ecn), 0, &mut h.ctx());
        }
        q.enqueue(frame(5, Ecn::Ect0), 2 * MS, &mut h.ctx());
        let a = q.dequeue(976 * 1024, &mut h.ctx()).unwrap(); // ldelay 976: not above
        assert_eq!(a.ecn, Ecn::Ect0);
        let b = q.dequeue(977 * 1024, &mut h.ctx()).unwrap(); // 977 > 976: marked
        assert_eq!(b.ecn, Ecn::Ce);
        let c = q.dequeue(2 * MS, &mut h.ctx()).unwrap(); // Not-ECT: untouched, not dropped
        assert_eq!(c.ecn, Ecn::NotEct);
        assert_eq!(q.dequeue(2 * MS, &mut h.ctx()).unwrap().ecn, Ecn::Ce); // ECT(1)
        assert_eq!(q.dequeue(2 * MS, &mut h.ctx()).unwrap().ecn, Ecn::Ce); // CE re-mark counts
        assert_eq!(q.codel_stats().ce_mark, 3);
        assert_eq!(q.codel_stats().ecn_mark, 0);
        assert_eq!(q.stats().marks, 3);
        assert_eq!(h.marked.len(), 3);
        assert_eq!(q.stats().drops, 0);
        // Below the threshold: nothing.
        assert_eq!(q.dequeue(2 * MS + 900_000, &mut h.ctx()).unwrap().ecn, Ecn::Ect0);
        assert_eq!(q.codel_stats().ce_mark, 3);
    }

    #[test]
    fn tail_drop_at_limit() {
        // sch_codel.c:codel_qdisc_enqueue: tail drop when qlen >= limit.
        let mut q = Codel::<TestPacket>::new(CodelParams { limit_packets: 5, ..Default::default() });
        let mut h = Harness::new();
        fill(&mut q, &mut h, 8, Ecn::NotEct, 0);
        assert_eq!(q.len(), 5);
        assert_eq!(q.stats().drops, 3);
        assert_eq!(h.dropped.iter().map(|p| p.id).collect::<Vec<_>>(), vec![5, 6, 7]);
        let xs = q.extra_stats();
        assert!(xs.contains(&("drop_overlimit", 3.0)));
        assert_eq!(q.stats().backlog_bytes, 5 * 1514);
    }

    #[test]
    fn codel_time_wraps_like_linux() {
        // Stamps and now on either side of the u32 codel-time wrap (~4398 s).
        let wrap_ns: u64 = 1 << 42;
        let mut q = Codel::<TestPacket>::new(CodelParams { ce_threshold_ns: Some(MS), ..Default::default() });
        let mut h = Harness::new();
        let t0 = wrap_ns - 500_000; // 0.5 ms before the wrap
        for i in 0..3 {
            q.enqueue(frame(i, Ecn::Ect0), t0, &mut h.ctx());
        }
        let p = q.dequeue(wrap_ns + 1_000_000, &mut h.ctx()).unwrap(); // 1.5 ms sojourn
        assert_eq!(p.ecn, Ecn::Ce);
        assert!((1.49..1.51).contains(&(codel_time_to_ns(q.vars().ldelay) as f64 / 1e6)));
    }

    #[test]
    fn extra_stats_and_validation() {
        let mut q = Codel::<TestPacket>::new(CodelParams::default());
        let mut h = Harness::new();
        fill(&mut q, &mut h, 1000, Ecn::NotEct, 0);
        run_fluid(&mut q, &mut h, Ecn::NotEct, 0, 200 * MS);
        let xs: std::collections::HashMap<_, _> = q.extra_stats().into_iter().collect();
        assert_eq!(xs["count"], q.vars().count as f64);
        assert_eq!(xs["lastcount"], 1.0);
        assert!((xs["ldelay_ms"] - 10.24).abs() < 0.01);
        assert!(xs["drop_next"] > 0.0 && xs["drop_next"] <= 100_000.0);
        assert_eq!(xs["ecn_mark"], 0.0);
        assert_eq!(xs["ce_mark"], 0.0);
        assert_eq!(xs["drop_overlimit"], 0.0);

        assert!(CodelParams::default().validate().is_ok());
        let e = CodelParams { limit_packets: 0, ..Default::default() }.validate().unwrap_err();
        assert!(e.starts_with("limit_packets: 0 is out of range"), "{e}");
        let e = CodelParams { target_ns: 0, ..Default::default() }.validate().unwrap_err();
        assert!(e.starts_with("target_ns: 0 is out of range"), "{e}");
        let e = CodelParams { mtu_bytes: 100, ..Default::default() }.validate().unwrap_err();
        assert!(e.starts_with("mtu_bytes: 100 is out of range"), "{e}");
        let p: CodelParams = serde_json::from_str(r#"{"limit_packets": 84, "ecn": true}"#).unwrap();
        assert_eq!((p.limit_packets, p.ecn, p.target_ns), (84, true, 5_000_000));
        assert!(serde_json::from_str::<CodelParams>(r#"{"limt": 1}"#).is_err());
    }

    /// `enqueue_ref` and `dequeue_into` (the link's calls) take the same decisions
    /// and counts as `enqueue` and `dequeue`, report the same drops and marks and hand
    /// out the same packets (and the same CoDel state after every step): two queues
    /// driven side by side through overloads past the tail-drop limit alternating with
    /// phases that drain the queue below target while dropping, a second overload after
    /// a pause (the re-entry rule), with and without ECN, with ce_threshold marking, a
    /// mix of codepoints and sizes.
    #[test]
    fn by_reference_calls_match_enqueue_and_dequeue() {
        for (ecn, ce_threshold_ns) in [(false, None), (true, None), (true, Some(MS)), (false, Some(3 * MS))] {
            let params = CodelParams {
                limit_packets: 1000,
                ecn,
                ce_threshold_ns,
                uptime_ns: Some(5_000_000_000),
                ..CodelParams::default()
            };
            let (mut a, mut b) = (Codel::<TestPacket>::new(params.clone()), Codel::<TestPacket>::new(params));
            let (mut ha, mut hb) = (Harness::new(), Harness::new());
            let ecns = [Ecn::NotEct, Ecn::Ect0, Ecn::Ect1, Ecn::Ce];
            let (mut sent, mut id) = (0u64, 0u64);
            // Arrivals every 100 µs; departures every 121 µs (a 20 % overload), then
            // none arriving for a second, then the overload again.
            for step in 0..80_000u64 {
                let now = step * 100_000;
                if !(30_000..40_000).contains(&step) {
                    let mut p = crate::qdisc::testutil::packet(
                        0,
                        id,
                        [1514, 66, 800][(id % 3) as usize],
                        ecns[(id % 7 % 4) as usize],
                    );
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
                    let mut out = frame(u64::MAX, Ecn::NotEct);
                    let ok = b.dequeue_into(now, &mut hb.ctx(), &mut out);
                    assert_eq!(got, ok.then_some(out), "step {step}");
                    sent += ok as u64;
                }
                assert_eq!((ha.dropped.len(), ha.marked.len()), (hb.dropped.len(), hb.marked.len()), "step {step}");
                assert_eq!(a.vars(), b.vars(), "step {step}");
            }
            assert_eq!(ha.dropped, hb.dropped);
            assert_eq!(ha.marked, hb.marked);
            assert_eq!(a.stats, b.stats);
            assert_eq!(a.codel_stats(), b.codel_stats());
            assert_eq!(a.vars(), b.vars());
            assert_eq!(a.extra_stats(), b.extra_stats());
            let c = a.codel_stats();
            assert!(sent > 0 && a.drop_overlimit > 0 && c.drop_count > 0, "every path taken");
            assert_eq!(c.ecn_mark > 0, ecn);
            assert_eq!(c.ce_mark > 0, ce_threshold_ns.is_some());
        }
    }
}
