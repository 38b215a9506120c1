//! Queueing disciplines behind one trait, after Linux `net/sched`'s
//! enqueue/dequeue/peek split (`struct Qdisc_ops`).
//!
//! A qdisc timestamps packets on enqueue, may drop at enqueue (tail drop, PIE) or at
//! dequeue (CoDel, DualPI2) and may mark CE. Drops and marks are reported through
//! [`QdiscCtx`] so the simulator can attribute them to flows; `tc -s`-style counters
//! live in [`QdiscStats`]. A qdisc with a periodic controller (PIE, DualPI2) exposes
//! its next timer expiry and is called back at that time.
//!
//! The qdiscs are sans-IO: they see a packet only through [`QdiscPacket`] (what
//! `sch_*.c` reads of an `skb`: `qdisc_pkt_len`, the ECN field, the flow hash, the
//! enqueue timestamp in `skb->cb`) and time only as the `now` they are given, so any
//! driver (this simulator's `Packet` and event clock, or an emulator with real frames
//! and a wall clock) can run them. Nothing here imports the simulator.
//!
//! Every qdisc is one line of `qdisc_registry!` below, which generates the serde
//! [`QdiscConfig`], [`build`] and the [`REGISTRY`] the schema ([`specs`]) comes from.
//! Adding a qdisc `foo`: write `qdisc/foo.rs` with the qdisc (`impl<P: QdiscPacket>
//! Qdisc<P> for Foo<P>`) and its `FooParams` (serde, `Default` = Linux's `foo_init`,
//! `impl QdiscKind`: `KIND`, `DOC`, `params()`, `build()`, optionally `CLASSES` and
//! `check()`), then add `pub mod foo;` and the line `Foo(foo::FooParams),` here.

use crate::rng::SimRng;
use crate::schema::{check_params, ParamSpec, QdiscSpec};
use crate::time::{Time, NS_PER_US};
use serde::{Deserialize, Serialize};

pub mod codel;
pub mod dualpi2;
pub mod fifo;
pub mod fq;
pub mod fq_codel;
pub mod pie;
#[cfg(test)]
pub(crate) mod testutil;

/// `psched_mtu(dev)` of an Ethernet device: 1500 + 14 (include/net/pkt_sched.h:psched_mtu,
/// qdisc_pkt_len), the MTU every qdisc's defaults derive from.
pub const PSCHED_MTU: u32 = 1514;

/// Largest time `tc` carries in a u32-microsecond netlink attribute (`TCA_PIE_TARGET`,
/// `TCA_FQ_CE_THRESHOLD`, `TCA_DUALPI2_TARGET`, …), ns.
pub const TC_MAX_US_NS: u64 = u32::MAX as u64 * NS_PER_US;

/// The IP ECN field (RFC 3168 §5; Linux `include/net/inet_ecn.h` `INET_ECN_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum Ecn {
    #[default]
    #[serde(alias = "not_ect", alias = "notect")]
    NotEct = 0b00,
    #[serde(alias = "ect1", alias = "ect_1")]
    Ect1 = 0b01,
    #[serde(alias = "ect0", alias = "ect_0")]
    Ect0 = 0b10,
    Ce = 0b11,
}

impl Ecn {
    /// ECN-capable transport (ECT(0), ECT(1) or already CE).
    #[inline]
    pub fn is_ect(self) -> bool {
        self != Ecn::NotEct
    }
}

/// What a qdisc reads and writes of a packet (of Linux's `struct sk_buff` and the
/// qdisc's `skb->cb`). Implemented by the simulator's `Packet`; an emulator
/// implements it for its frames. Called per packet, so implementations should be
/// `#[inline]` field accesses.
pub trait QdiscPacket: Send + 'static {
    /// `qdisc_pkt_len(skb)`: the L2 frame length the qdisc accounts (bytes).
    fn wire_len(&self) -> u32;
    /// The IP ECN field.
    fn ecn(&self) -> Ecn;
    /// Overwrite the IP ECN field.
    fn set_ecn(&mut self, ecn: Ecn);
    /// The IPv4 TOS / IPv6 traffic-class byte, `DSCP << 2 | ECN` (`ipv4_get_dsfield`),
    /// which fq_codel's `ce_threshold_selector` masks. Default: DSCP 0.
    #[inline]
    fn dsfield(&self) -> u8 {
        self.ecn() as u8
    }
    /// Flow identity: the input of the flow hash that stands in for `skb_get_hash`
    /// (fq, fq_codel), and the flow a CE mark is reported for ([`QdiscCtx::marked`]).
    fn flow_key(&self) -> u32;
    /// Time the packet entered the qdisc (`codel_skb_cb`/`dualpi2_skb_cb` `ts`).
    fn enqueue_ts(&self) -> Time;
    fn set_enqueue_ts(&mut self, now: Time);
    /// Record the sub-queue the packet was put in, indexing [`Qdisc::class_names`]
    /// (for per-class sojourn statistics; DualPI2: 0 = C, 1 = L).
    fn set_qclass(&mut self, class: u8);

    /// `INET_ECN_set_ce`: set CE if ECN-capable. Returns `false` for Not-ECT (the
    /// caller then drops); an already-CE packet counts as marked.
    #[inline]
    fn set_ce(&mut self) -> bool {
        if self.ecn().is_ect() {
            self.set_ecn(Ecn::Ce);
            true
        } else {
            false
        }
    }
}

/// Counters as `tc -s qdisc show` prints them (serialised flat into the results'
/// `QdiscStatsOut`).
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct QdiscStats {
    pub sent_bytes: u64,
    pub sent_packets: u64,
    pub drops: u64,
    pub overlimits: u64,
    pub requeues: u64,
    /// CE marks (`ecn_mark` / `ce_mark`), re-marks of CE packets included.
    pub marks: u64,
    pub backlog_bytes: u64,
    pub backlog_packets: u64,
    /// Largest backlog seen, packets.
    pub maxq_packets: u64,
}

impl QdiscStats {
    /// Account a packet entering the queue.
    #[inline]
    pub fn on_enqueue<P: QdiscPacket>(&mut self, pkt: &P) {
        self.backlog_bytes += pkt.wire_len() as u64;
        self.backlog_packets += 1;
        self.maxq_packets = self.maxq_packets.max(self.backlog_packets);
    }
    /// Account a packet leaving the queue (sent or dropped at dequeue).
    #[inline]
    pub fn on_remove<P: QdiscPacket>(&mut self, pkt: &P) {
        self.backlog_bytes -= pkt.wire_len() as u64;
        self.backlog_packets -= 1;
    }
    /// Account a packet handed to the link.
    #[inline]
    pub fn on_sent<P: QdiscPacket>(&mut self, pkt: &P) {
        self.sent_bytes += pkt.wire_len() as u64;
        self.sent_packets += 1;
    }
}

/// What a qdisc may use and report during one call.
pub struct QdiscCtx<'a, P> {
    /// The run's qdisc random stream.
    pub rng: &'a mut SimRng,
    /// Packets dropped during the call (drained by the simulator).
    pub dropped: &'a mut Vec<P>,
    /// Flows whose packet was CE-marked during the call (drained by the simulator).
    pub marked: &'a mut Vec<u32>,
}

impl<P: QdiscPacket> QdiscCtx<'_, P> {
    /// Report a dropped packet (its ownership ends here).
    #[inline]
    pub fn drop_packet(&mut self, pkt: P) {
        self.dropped.push(pkt);
    }
    /// Report a CE mark on a packet of `flow`.
    #[inline]
    pub fn note_mark(&mut self, flow: u32) {
        self.marked.push(flow);
    }

    /// Drop `pkt`: count it in the qdisc's `tc -s` drops and report it.
    #[inline]
    pub fn drop_counted(&mut self, stats: &mut QdiscStats, pkt: P) {
        stats.drops += 1;
        self.drop_packet(pkt);
    }

    /// A CE mark on a packet of `flow`: count it in the `tc -s` marks and report it.
    #[inline]
    pub fn mark_counted(&mut self, stats: &mut QdiscStats, flow: u32) {
        stats.marks += 1;
        self.note_mark(flow);
    }
}

/// A queueing discipline.
pub trait Qdisc<P: QdiscPacket>: Send {
    /// `tc` kind, e.g. "bfifo".
    fn kind(&self) -> &'static str;

    /// Accept or drop `pkt` arriving at `now`. Dropped packets go to `ctx`.
    fn enqueue(&mut self, pkt: P, now: Time, ctx: &mut QdiscCtx<P>);

    /// Return the next packet to send, applying any dequeue-time AQM action.
    fn dequeue(&mut self, now: Time, ctx: &mut QdiscCtx<P>) -> Option<P>;

    /// The packet `dequeue` would consider next, without AQM action.
    fn peek(&self) -> Option<&P>;

    /// Counters.
    fn stats(&self) -> &QdiscStats;

    /// Whether [`next_timer`](Self::next_timer) can ever return `Some`. The
    /// simulator asks for the next timer after every enqueue and dequeue only
    /// when this holds, so a qdisc without a timer (`sch_fifo.c` has no watchdog)
    /// costs no virtual call there. Fixed for the qdisc's lifetime.
    fn has_timer(&self) -> bool {
        true
    }

    /// Whether only [`on_timer`](Self::on_timer) moves the timer (a periodic update
    /// armed at creation: PIE's and DualPI2's `tupdate`), so that while one is pending
    /// the simulator need not ask for the next timer after every packet. Fixed for the
    /// qdisc's lifetime.
    fn timer_is_periodic(&self) -> bool {
        false
    }

    /// Next time the qdisc's own timer fires, if any.
    fn next_timer(&self) -> Option<Time> {
        None
    }

    /// Timer callback at `now` (the simulator calls it at `next_timer()`).
    fn on_timer(&mut self, _now: Time, _ctx: &mut QdiscCtx<P>) {}

    /// Packets queued.
    fn len(&self) -> usize {
        self.stats().backlog_packets as usize
    }

    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Qdisc-specific statistics for `tc -s` output (e.g. DualPI2's `prob`,
    /// `delay_c`, `delay_l`, `pkts_in_c`, `pkts_in_l`, `step_marks`). Called once at
    /// the end of a run.
    fn extra_stats(&self) -> Vec<(&'static str, f64)> {
        Vec::new()
    }

    /// Names of the sub-queues a packet's `qclass` refers to (index = class), for
    /// per-queue sojourn statistics; a single-queue qdisc has one.
    fn class_names(&self) -> &'static [&'static str] {
        &["all"]
    }
}

/// What a qdisc module gives the registry: its `tc` kind, its parameters (the serde
/// struct carried by [`QdiscConfig`], whose `Default` is Linux's `*_init` defaults) with
/// their schema, and its constructor.
pub trait QdiscKind: Default + Clone + Serialize + Into<QdiscConfig> {
    /// `tc` kind (`Qdisc_ops.id`), also the serde tag of its [`QdiscConfig`] variant.
    const KIND: &'static str;
    /// One line for the schema, naming the Linux file mirrored.
    const DOC: &'static str;
    /// Sub-queues of per-class statistics ([`Qdisc::class_names`]).
    const CLASSES: &'static [&'static str] = &["all"];

    /// Every serde field, in engine units, with Linux's default and the range
    /// [`QdiscKind::validate`] enforces.
    fn params() -> Vec<ParamSpec>;

    /// Checks the schema cannot express (whole microseconds, variant-only fields).
    fn check(&self) -> Result<(), String> {
        Ok(())
    }

    /// Range checks from [`QdiscKind::params`], then [`QdiscKind::check`]; one-line
    /// errors naming the field, the value and what is allowed.
    fn validate(&self) -> Result<(), String> {
        check_params(&Self::params(), self)?;
        self.check()
    }

    /// The qdisc, created at time 0.
    fn build<P: QdiscPacket>(&self, rng: &mut SimRng) -> Box<dyn Qdisc<P>>;
}

/// One registry entry: what the front end and tests need to know of a qdisc without
/// building it. The builder is the params type's [`QdiscKind::build`], reached
/// through [`build`].
#[derive(Clone, Copy)]
pub struct QdiscDescriptor {
    pub kind: &'static str,
    pub doc: &'static str,
    pub classes: &'static [&'static str],
    /// Parameter schema.
    pub params: fn() -> Vec<ParamSpec>,
    /// The config with every parameter at its default.
    pub default_config: fn() -> QdiscConfig,
}

fn default_config<T: QdiscKind>() -> QdiscConfig {
    T::default().into()
}

impl QdiscDescriptor {
    const fn of<T: QdiscKind>() -> Self {
        QdiscDescriptor {
            kind: T::KIND,
            doc: T::DOC,
            classes: T::CLASSES,
            params: T::params,
            default_config: default_config::<T>,
        }
    }

    /// The schema entry.
    pub fn spec(&self) -> QdiscSpec {
        QdiscSpec { kind: self.kind, doc: self.doc, params: (self.params)(), classes: self.classes.to_vec() }
    }
}

/// The qdisc registry: one line per qdisc (`Variant(module::Params)`; the serde tag is
/// the variant in snake_case and must equal `Params::KIND`). It generates
/// [`QdiscConfig`], [`build`] and [`REGISTRY`].
macro_rules! qdisc_registry {
    ($($(#[$doc:meta])* $variant:ident($params:ty),)*) => {
        /// The bottleneck's qdisc: `kind` is the `tc` kind, the other fields its
        /// parameters in base units (ns, bytes, packets); omitted ones take Linux's
        /// defaults.
        #[derive(Clone, Debug, Serialize, Deserialize)]
        #[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
        pub enum QdiscConfig {
            $($(#[$doc])* $variant($params),)*
        }

        $(impl From<$params> for QdiscConfig {
            fn from(p: $params) -> Self {
                QdiscConfig::$variant(p)
            }
        })*

        impl QdiscConfig {
            /// `tc` kind.
            pub fn kind(&self) -> &'static str {
                match self {
                    $(QdiscConfig::$variant(_) => <$params as QdiscKind>::KIND,)*
                }
            }

            /// Parameter checks of the qdisc (one-line errors).
            pub fn validate(&self) -> Result<(), String> {
                match self {
                    $(QdiscConfig::$variant(p) => p.validate(),)*
                }
            }
        }

        /// Build the qdisc a scenario asks for (parameters already validated).
        pub fn build<P: QdiscPacket>(config: &QdiscConfig, rng: &mut SimRng) -> Box<dyn Qdisc<P>> {
            match config {
                $(QdiscConfig::$variant(p) => p.build(rng),)*
            }
        }

        /// Every qdisc the engine implements, in schema order.
        pub static REGISTRY: &[QdiscDescriptor] = &[$(QdiscDescriptor::of::<$params>(),)*];
    };
}

qdisc_registry! {
    /// `bfifo limit BYTES` (Linux `sch_fifo.c`).
    Bfifo(fifo::BfifoParams),
    /// `pfifo limit PACKETS` (Linux `sch_fifo.c`).
    Pfifo(fifo::PfifoParams),
    /// `dualpi2 ...` (RFC 9332 as Linux `sch_dualpi2.c`).
    Dualpi2(dualpi2::DualPi2Params),
    /// `pie ...` (RFC 8033 as Linux `sch_pie.c`).
    Pie(pie::PieParams),
    /// `fq ...` (Linux `sch_fq.c`; `orphan_mask 0` makes it the studies' "FIFO+ECN").
    Fq(fq::FqParams),
    /// `codel ...` (RFC 8289 as Linux `sch_codel.c`).
    Codel(codel::CodelParams),
    /// `fq_codel ...` (RFC 8290 as Linux `sch_fq_codel.c`; with
    /// `ce_threshold_selector 0x01/0x01` the L4S-aware variant).
    FqCodel(fq_codel::FqCodelParams),
}

/// The parameter schema of every qdisc (the front end's registry reads it).
pub fn specs() -> Vec<QdiscSpec> {
    REGISTRY.iter().map(QdiscDescriptor::spec).collect()
}

/// The registry entry of `tc` kind `kind`.
pub fn descriptor(kind: &str) -> Option<&'static QdiscDescriptor> {
    REGISTRY.iter().find(|d| d.kind == kind)
}

/// Packet flow hash for the flow-queueing qdiscs (fq, fq_codel), standing in for
/// `skb_get_hash` (a keyed jhash of the 5-tuple): the flow id times an odd constant,
/// xor the perturbation key, then murmur3's finaliser. A bijection of `flow` for a
/// fixed key, so distinct flows share a bucket only through the final masking or
/// `reciprocal_scale`.
#[inline]
pub(crate) fn flow_hash(flow: u32, perturbation: u32) -> u32 {
    let mut h = flow.wrapping_mul(0x9E37_79B1) ^ perturbation;
    h ^= h >> 16;
    h = h.wrapping_mul(0x85EB_CA6B);
    h ^= h >> 13;
    h = h.wrapping_mul(0xC2B2_AE35);
    h ^ (h >> 16)
}

#[cfg(test)]
mod tests {
    use super::testutil::{packet, Harness, TestPacket};
    use super::*;
    use serde_json::Value;
    use std::collections::BTreeSet;

    /// `has_timer() == false` lets the simulator skip `next_timer` after every
    /// packet: such a qdisc must never have a timer, through enqueues, drops and
    /// dequeues; one that has a timer (PIE's and DualPI2's tupdate) must say so.
    #[test]
    fn a_qdisc_without_a_timer_never_reports_one() {
        for d in REGISTRY {
            let mut h = Harness::new();
            let mut q: Box<dyn Qdisc<TestPacket>> = build(&(d.default_config)(), &mut h.rng);
            let mut seen = q.next_timer().is_some();
            for i in 0..3000u64 {
                q.enqueue(packet((i % 5) as u32, i, 1514, Ecn::Ect1), i * 1_000, &mut h.ctx());
                seen |= q.next_timer().is_some();
                if i % 3 == 0 {
                    q.dequeue(i * 1_000 + 500, &mut h.ctx());
                    seen |= q.next_timer().is_some();
                }
            }
            if !q.has_timer() {
                assert!(!seen, "{} says it has no timer but reported one", d.kind);
            }
            if matches!(d.kind, "pie" | "dualpi2") {
                assert!(q.has_timer() && seen, "{}: tupdate timer", d.kind);
            }
        }
    }

    #[test]
    fn every_descriptor_builds_with_its_defaults() {
        assert!(REGISTRY.iter().any(|d| d.kind == "dualpi2"));
        let kinds: BTreeSet<&str> = REGISTRY.iter().map(|d| d.kind).collect();
        assert_eq!(kinds.len(), REGISTRY.len(), "tc kinds are unique");
        for d in REGISTRY {
            let cfg = (d.default_config)();
            assert_eq!(cfg.kind(), d.kind);
            assert_eq!(cfg.validate(), Ok(()), "{}", d.kind);
            assert!(std::ptr::eq(descriptor(d.kind).unwrap(), d));
            let mut h = Harness::new();
            let mut q: Box<dyn Qdisc<TestPacket>> = build(&cfg, &mut h.rng);
            assert_eq!(q.kind(), d.kind);
            assert_eq!(q.class_names(), d.classes);
            q.enqueue(packet(0, 7, 1514, Ecn::Ect1), 0, &mut h.ctx());
            assert_eq!(q.len(), 1);
            let p = q.dequeue(1000, &mut h.ctx()).expect("a lone packet leaves");
            assert_eq!((p.id, p.enqueue_ts), (7, 0));
            assert!(q.is_empty());
        }
    }

    /// The serde fields of a qdisc's default config (without the tag) with their values.
    fn default_fields(d: &QdiscDescriptor) -> serde_json::Map<String, Value> {
        let Value::Object(mut m) = serde_json::to_value((d.default_config)()).unwrap() else { panic!() };
        assert_eq!(m.remove("kind"), Some(Value::from(d.kind)), "serde tag = tc kind");
        m
    }

    #[test]
    fn specs_cover_every_serde_field_with_its_default() {
        let specs = specs();
        assert_eq!(specs.len(), REGISTRY.len());
        // The front end reads them as JSON.
        let json = serde_json::to_value(&specs).unwrap();
        assert_eq!(json[0]["params"][0]["name"], "limit_bytes");
        for (s, d) in specs.iter().zip(REGISTRY) {
            assert_eq!((s.kind, &s.classes[..]), (d.kind, d.classes));
            assert!(!s.doc.is_empty());
            let fields = default_fields(d);
            let names: BTreeSet<&str> = s.params.iter().map(|p| p.name).collect();
            assert_eq!(names.len(), s.params.len(), "{}: duplicate param", s.kind);
            assert_eq!(names, fields.keys().map(String::as_str).collect(), "{}: spec vs serde fields", s.kind);
            for p in &s.params {
                assert_eq!(p.default, fields[p.name], "{}.{}: spec default vs Default", s.kind, p.name);
                assert!(
                    ["sch_", "RFC", "include/net", "tc"].iter().any(|s| p.doc.contains(s)),
                    "{}.{}",
                    s.kind,
                    p.name
                );
                if let (Some(lo), Some(hi)) = (p.min, p.max) {
                    assert!(lo <= hi);
                }
                if let Value::String(c) = &p.default {
                    assert!(p.choices.contains(&c.as_str()), "{}.{}", s.kind, p.name);
                }
            }
            // `{"kind": k}` alone takes every default.
            let c: QdiscConfig = serde_json::from_value(serde_json::json!({ "kind": s.kind })).unwrap();
            assert_eq!(serde_json::to_value(&c).unwrap(), serde_json::to_value((d.default_config)()).unwrap());
        }
    }

    #[test]
    fn values_outside_a_spec_range_are_refused_by_validate() {
        let mut tested = 0;
        for d in REGISTRY {
            for p in (d.params)() {
                let mut outside = Vec::new();
                if let Some(lo) = p.min {
                    outside.push(if p.kind == crate::schema::ParamKind::Float { lo - 0.5 } else { lo - 1.0 });
                }
                if let Some(hi) = p.max {
                    outside.push(hi + 1.0);
                }
                for x in outside {
                    let v = if x.fract() == 0.0 && p.kind != crate::schema::ParamKind::Float {
                        Value::from(x as i64)
                    } else {
                        Value::from(x)
                    };
                    let mut m = default_fields(d);
                    m.insert("kind".into(), Value::from(d.kind));
                    m.insert(
                        p.name.into(),
                        if p.kind == crate::schema::ParamKind::Object {
                            Value::from(vec![v.clone(), v.clone()])
                        } else {
                            v.clone()
                        },
                    );
                    // A value the field's type cannot hold is refused by serde already.
                    let Ok(cfg) = serde_json::from_value::<QdiscConfig>(Value::Object(m)) else { continue };
                    let err = cfg.validate().expect_err(&format!("{}.{} = {v}", d.kind, p.name));
                    let shown = serde_json::to_value(&cfg).unwrap()[p.name].clone();
                    assert_eq!(
                        err,
                        format!("{}: {shown} is out of range (allowed {})", p.name, crate::schema::range_text(&p))
                    );
                    assert!(!err.contains('\n'));
                    tested += 1;
                }
            }
        }
        assert!(tested >= 20, "only {tested} out-of-range cases reachable through serde");
    }
}
