//! A link: what a packet crosses between two hops.
//!
//! Three optional stages, in order: a queue (an HTB-like [`Shaper`] class with a
//! child [`Qdisc`], as `tc qdisc add ... htb` + `tc qdisc add ... parent`), a
//! serialiser (a NIC sending at its line rate: a packet leaves when the previous
//! one has, `max(now, free_at) + tx_time`, with no event of its own) and a
//! propagation delay (the network's delay line for that delay). A link with neither serialiser nor delay
//! hands a dequeued packet to the next hop at once, inside the same event, as a
//! router's egress hands a frame to a directly attached host.

use super::host_timer::HostTimer;
use super::link_model::{LinkModel, RateSchedule};
use super::shaper::Shaper;
use crate::event::{EventQueue, LineId, LinkId, PinId, Target};
use crate::packet::Packet;
use crate::qdisc::codel::{draw_uptime_ns, Codel, CodelParams};
use crate::qdisc::dualpi2::DualPi2;
use crate::qdisc::fifo::Fifo;
use crate::qdisc::fq_codel::FqCodel;
use crate::qdisc::pie::Pie;
use crate::qdisc::{self, Qdisc, QdiscConfig, QdiscCtx, QdiscStats};
use crate::rng::SimRng;
use crate::time::{tx_time, Time};

/// A NIC sending back to back at its line rate.
#[derive(Clone, Debug)]
pub struct Serialiser {
    rate_bps: u64,
    /// When the NIC is free again; departures are monotone.
    free_at: Time,
    /// The last frame length and its transmission time: most frames are full-sized
    /// (or all ACKs alike), and `tx_time` is a 128-bit division.
    last: (u32, u64),
}

impl Serialiser {
    pub fn new(rate_bps: u64) -> Self {
        Serialiser { rate_bps, free_at: 0, last: (0, 0) }
    }

    /// Departure time (end of transmission) of a frame of `wire_len` bytes handed over at `now`.
    #[inline]
    pub fn depart(&mut self, now: Time, wire_len: u32) -> Time {
        if self.last.0 != wire_len {
            self.last = (wire_len, tx_time(wire_len as u64, self.rate_bps));
        }
        let t = now.max(self.free_at) + self.last.1;
        self.free_at = t;
        t
    }
}

/// A link's qdisc. The FIFOs, PIE, CoDel, fq_codel and DualPI2 are held by their own type, so the calls
/// the link makes per packet (`is_empty` twice, `enqueue`, `dequeue`) are direct
/// and may be inlined, as the flow table holds the TCP endpoints (`sim.rs`,
/// `FlowEnd`); the other qdiscs through `dyn Qdisc`. Behaviour is the wrapped
/// qdisc's, call for call. An explicit one-byte tag (`repr(u8)`): left to the
/// compiler, the variant was read from a niche of the FIFO's fields (a load, a
/// subtraction and a conditional move before every match, three per packet).
#[repr(u8)]
pub enum LinkQdisc {
    Fifo(Fifo<Packet>),
    Pie(Pie<Packet>),
    Codel(Box<CodelFamily>),
    DualPi2(DualPi2<Packet>),
    Other(Box<dyn Qdisc<Packet>>),
}

impl LinkQdisc {
    /// The qdisc `config` asks for ([`qdisc::build`]'s, with the same use of `rng`).
    pub fn build(config: &QdiscConfig, rng: &mut SimRng) -> Self {
        match config {
            QdiscConfig::Bfifo(p) => LinkQdisc::Fifo(Fifo::bfifo(p.limit_bytes)),
            QdiscConfig::Pfifo(p) => LinkQdisc::Fifo(Fifo::pfifo(p.limit_packets)),
            QdiscConfig::Pie(p) => LinkQdisc::Pie(Pie::new(p.clone())),
            // As `CodelParams::build` draws it.
            QdiscConfig::Codel(p) => {
                let uptime = draw_uptime_ns(p.uptime_ns, rng);
                LinkQdisc::Codel(Box::new(CodelFamily::Codel(Codel::new(CodelParams {
                    uptime_ns: Some(uptime),
                    ..p.clone()
                }))))
            }
            QdiscConfig::FqCodel(p) => LinkQdisc::Codel(Box::new(CodelFamily::FqCodel(FqCodel::new(p.clone(), rng)))),
            QdiscConfig::Dualpi2(p) => LinkQdisc::DualPi2(DualPi2::new(p.clone(), rng)),
            other => LinkQdisc::Other(qdisc::build(other, rng)),
        }
    }
}

impl LinkQdisc {
    /// The enqueue of CoDel and fq_codel, by reference. Out of line, as their
    /// dequeue: inlined, their code made the link's FIFO path longer (reference +0.7 %).
    #[inline]
    fn enqueue_codel(&mut self, pkt: &Packet, now: Time, ctx: &mut QdiscCtx<Packet>) {
        match self {
            LinkQdisc::Codel(c) => match &mut **c {
                CodelFamily::Codel(c) => c.enqueue_ref(pkt, now, ctx),
                CodelFamily::FqCodel(f) => f.enqueue_ref(pkt, now, ctx),
            },
            other => other.enqueue(*pkt, now, ctx),
        }
    }

    /// The dequeue of CoDel and fq_codel into `out` (out of line, see `enqueue_codel`).
    #[inline]
    fn dequeue_codel(&mut self, now: Time, ctx: &mut QdiscCtx<Packet>, out: &mut Packet) -> bool {
        match self {
            LinkQdisc::Codel(c) => match &mut **c {
                CodelFamily::Codel(c) => c.dequeue_into(now, ctx, out),
                CodelFamily::FqCodel(f) => f.dequeue_into(now, ctx, out),
            },
            other => other.dequeue(now, ctx).map(|p| *out = p).is_some(),
        }
    }
}

/// CoDel and fq_codel, under one boxed variant of [`LinkQdisc`]: a sixth variant
/// lengthened the link's matches on the FIFO path (reference +0.7 % instructions).
pub enum CodelFamily {
    Codel(Codel<Packet>),
    FqCodel(FqCodel<Packet>),
}

/// Forward one call to the wrapped CoDel qdisc.
macro_rules! on_codel {
    ($self:expr, $q:ident => $call:expr) => {
        match $self {
            CodelFamily::Codel($q) => $call,
            CodelFamily::FqCodel($q) => $call,
        }
    };
}

impl Qdisc<Packet> for CodelFamily {
    fn kind(&self) -> &'static str {
        on_codel!(self, q => q.kind())
    }
    fn enqueue(&mut self, pkt: Packet, now: Time, ctx: &mut QdiscCtx<Packet>) {
        on_codel!(self, q => q.enqueue(pkt, now, ctx))
    }
    fn dequeue(&mut self, now: Time, ctx: &mut QdiscCtx<Packet>) -> Option<Packet> {
        on_codel!(self, q => q.dequeue(now, ctx))
    }
    fn peek(&self) -> Option<&Packet> {
        on_codel!(self, q => q.peek())
    }
    fn stats(&self) -> &QdiscStats {
        on_codel!(self, q => q.stats())
    }
    fn has_timer(&self) -> bool {
        on_codel!(self, q => q.has_timer())
    }
    fn timer_is_periodic(&self) -> bool {
        on_codel!(self, q => q.timer_is_periodic())
    }
    fn next_timer(&self) -> Option<Time> {
        on_codel!(self, q => q.next_timer())
    }
    fn on_timer(&mut self, now: Time, ctx: &mut QdiscCtx<Packet>) {
        on_codel!(self, q => q.on_timer(now, ctx))
    }
    fn len(&self) -> usize {
        on_codel!(self, q => q.len())
    }
    fn is_empty(&self) -> bool {
        on_codel!(self, q => q.is_empty())
    }
    fn extra_stats(&self) -> Vec<(&'static str, f64)> {
        on_codel!(self, q => q.extra_stats())
    }
    fn class_names(&self) -> &'static [&'static str] {
        on_codel!(self, q => q.class_names())
    }
}

impl From<Box<dyn Qdisc<Packet>>> for LinkQdisc {
    fn from(q: Box<dyn Qdisc<Packet>>) -> Self {
        LinkQdisc::Other(q)
    }
}

/// Forward one call to the wrapped qdisc.
macro_rules! on_qdisc {
    ($self:expr, $q:ident => $call:expr) => {
        match $self {
            LinkQdisc::Fifo($q) => $call,
            LinkQdisc::Pie($q) => $call,
            LinkQdisc::Codel($q) => $call,
            LinkQdisc::DualPi2($q) => $call,
            LinkQdisc::Other($q) => $call,
        }
    };
}

impl Qdisc<Packet> for LinkQdisc {
    fn kind(&self) -> &'static str {
        on_qdisc!(self, q => q.kind())
    }
    #[inline]
    fn enqueue(&mut self, pkt: Packet, now: Time, ctx: &mut QdiscCtx<Packet>) {
        on_qdisc!(self, q => q.enqueue(pkt, now, ctx))
    }
    #[inline]
    fn dequeue(&mut self, now: Time, ctx: &mut QdiscCtx<Packet>) -> Option<Packet> {
        on_qdisc!(self, q => q.dequeue(now, ctx))
    }
    fn peek(&self) -> Option<&Packet> {
        on_qdisc!(self, q => q.peek())
    }
    fn stats(&self) -> &QdiscStats {
        on_qdisc!(self, q => q.stats())
    }
    fn has_timer(&self) -> bool {
        on_qdisc!(self, q => q.has_timer())
    }
    fn timer_is_periodic(&self) -> bool {
        on_qdisc!(self, q => q.timer_is_periodic())
    }
    #[inline]
    fn next_timer(&self) -> Option<Time> {
        on_qdisc!(self, q => q.next_timer())
    }
    fn on_timer(&mut self, now: Time, ctx: &mut QdiscCtx<Packet>) {
        on_qdisc!(self, q => q.on_timer(now, ctx))
    }
    #[inline]
    fn len(&self) -> usize {
        on_qdisc!(self, q => q.len())
    }
    #[inline]
    fn is_empty(&self) -> bool {
        on_qdisc!(self, q => q.is_empty())
    }
    fn extra_stats(&self) -> Vec<(&'static str, f64)> {
        on_qdisc!(self, q => q.extra_stats())
    }
    fn class_names(&self) -> &'static [&'static str] {
        on_qdisc!(self, q => q.class_names())
    }
}

/// A shaped queue: the shaper, its child qdisc and what they report.
pub struct ShapedQueue {
    pub shaper: Shaper,
    pub qdisc: LinkQdisc,
    rng: SimRng,
    /// Packets the qdisc dropped and flows it marked during the last call (drained by the caller).
    pub dropped: Vec<Packet>,
    pub marked: Vec<u32>,
    /// Pending shaper watchdog (`qdisc_watchdog` in `sch_htb.c`) and qdisc timer; lazy.
    wake_at: Option<Time>,
    timer_at: Option<Time>,
    /// The event queue's pinned slot for the watchdog, if one was free.
    wake_pin: Option<PinId>,
    /// `qdisc.has_timer()`, read once: a timerless qdisc is not asked for its
    /// next timer after every packet.
    timed: bool,
    /// `qdisc.timer_is_periodic()`, read once: with its timer pending, such a qdisc is
    /// not asked either (only its timer callback moves the timer, and the simulator
    /// re-arms after that).
    periodic: bool,
    /// The host's watchdog lateness (`net/host_timer.rs`); `None`: on time.
    host_timer: Option<HostTimer>,
    /// The class's rate over time (`net/link_model.rs`); empty: constant.
    pub schedule: RateSchedule,
}

impl ShapedQueue {
    pub fn new(shaper: Shaper, qdisc: impl Into<LinkQdisc>, rng: SimRng) -> Self {
        let qdisc = qdisc.into();
        let timed = qdisc.has_timer();
        let periodic = qdisc.timer_is_periodic();
        ShapedQueue {
            timed,
            periodic,
            shaper,
            qdisc,
            rng,
            dropped: Vec::with_capacity(256),
            marked: Vec::with_capacity(256),
            wake_at: None,
            timer_at: None,
            wake_pin: None,
            host_timer: None,
            schedule: RateSchedule::default(),
        }
    }

    /// Change the class's rate over time (`tc class change` at each step).
    pub fn with_schedule(mut self, schedule: RateSchedule) -> Self {
        self.schedule = schedule;
        self
    }

    /// Apply the rate steps due by `now`; the time of the next one.
    pub fn apply_rate_steps(&mut self, now: Time) -> Option<Time> {
        if let Some(rate) = self.schedule.take_due(now) {
            self.shaper.set_rate(now, rate);
        }
        self.schedule.next_at()
    }

    /// Bits the class could send in [0, t) (its rate's integral).
    pub fn capacity_bits(&self, t: Time) -> f64 {
        if self.schedule.is_empty() {
            self.shaper.rate_bps() as f64 * t as f64 / 1e9
        } else {
            self.schedule.capacity_bits(t)
        }
    }

    /// Let the watchdog fire late by the host's timer latency (`None`: on time).
    pub fn with_host_timer(mut self, host_timer: Option<HostTimer>) -> Self {
        self.host_timer = host_timer;
        self
    }

    /// Keep the watchdog in a pinned slot of the event queue (it has at most one
    /// event pending), saving a heap push and pop per packet on a busy link.
    pub fn pin_watchdog(&mut self, events: &mut EventQueue) {
        // A late watchdog can be overtaken by an enqueue (see `waiting_for_tokens`),
        // leaving its event stale in the slot: it then lives in the heap instead.
        if self.host_timer.is_some() {
            return;
        }
        self.wake_pin = events.pin();
    }

    #[inline]
    fn ctx(&mut self) -> (&mut LinkQdisc, QdiscCtx<'_, Packet>) {
        (&mut self.qdisc, QdiscCtx { rng: &mut self.rng, dropped: &mut self.dropped, marked: &mut self.marked })
    }
}

/// Per-link counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LinkStats {
    /// Packets and L2 bytes that left the link's queue/serialiser.
    pub tx_packets: u64,
    pub tx_bytes: u64,
}

/// What became of a packet put on a link's wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tx {
    /// It reaches the next hop now (no serialiser, delay or link model).
    Now,
    /// It waits on delay line `.0` until `.1`.
    Wire(LineId, Time),
    /// The wire lost it (`link_model.rs`).
    Lost,
}

/// One link of the network.
pub struct Link {
    pub id: LinkId,
    delay_ns: u64,
    serialiser: Option<Serialiser>,
    /// The delay line its packets propagate on (none: it hands packets over at once).
    line: Option<LineId>,
    /// Its packets on that line.
    on_wire: u64,
    pub stats: LinkStats,
    /// Boxed: most links (NICs) have none, and a small `Link` keeps a
    /// thousand-flow network's per-packet state in fewer cache lines.
    queue: Option<Box<ShapedQueue>>,
    /// Loss, jitter, aggregation on the wire (`link_model.rs`); boxed, usually none.
    model: Option<Box<LinkModel>>,
}

impl Link {
    /// A link with the given stages; see the module docs for their order.
    /// `line` must be given exactly when the link has a serialiser or a delay.
    pub fn new(
        id: LinkId,
        queue: Option<ShapedQueue>,
        serialiser: Option<Serialiser>,
        delay_ns: u64,
        line: Option<LineId>,
    ) -> Self {
        debug_assert_eq!(line.is_some(), serialiser.is_some() || delay_ns > 0);
        Link {
            id,
            queue: queue.map(Box::new),
            serialiser,
            delay_ns,
            line,
            on_wire: 0,
            stats: LinkStats::default(),
            model: None,
        }
    }

    /// Give the link a wire model; it needs a delay line (`Network::add_link_with_model`).
    pub fn set_model(&mut self, model: LinkModel, line: LineId) {
        self.model = Some(Box::new(model));
        self.line = Some(line);
    }

    /// The wire model, if any.
    pub fn model(&self) -> Option<&LinkModel> {
        self.model.as_deref()
    }

    #[inline]
    pub fn queue(&self) -> Option<&ShapedQueue> {
        self.queue.as_deref()
    }

    #[inline]
    pub fn queue_mut(&mut self) -> Option<&mut ShapedQueue> {
        self.queue.as_deref_mut()
    }

    /// The delay line its packets propagate on, if any.
    pub fn line(&self) -> Option<LineId> {
        self.line
    }

    pub fn delay_ns(&self) -> u64 {
        self.delay_ns
    }

    /// Reuse an idle NIC link for a new flow with the same delay: a fresh
    /// serialiser at the same rate. False (and unchanged) if it is not idle.
    pub fn reset_for_reuse(&mut self, delay_ns: u64) -> bool {
        if self.on_wire > 0 || self.queue.is_some() || self.delay_ns != delay_ns {
            return false;
        }
        if let Some(s) = self.serialiser.as_mut() {
            *s = Serialiser::new(s.rate_bps);
        }
        true
    }

    /// Packets in the link's queue, for the conservation check (its packets on
    /// the wire are counted with the delay lines).
    pub fn packets_queued(&self) -> u64 {
        self.queue.as_ref().map_or(0, |q| q.qdisc.len() as u64)
    }

    /// Offer `pkt` to the queue (a FIFO copies it once, from `pkt` into its ring),
    /// then finish what most enqueues on a busy link come to: true if the qdisc
    /// reported no drop or mark and the shaper is waiting for tokens (its watchdog
    /// will dequeue), the qdisc's timer then re-armed
    /// ([`arm_qdisc_timer`](Self::arm_qdisc_timer)) and the enqueue done; false
    /// otherwise, with only the enqueue done (the caller accounts the reports, runs
    /// the dequeue loop and re-arms the timer). The queue is looked up once for all.
    #[inline]
    pub fn enqueue_busy(&mut self, now: Time, pkt: &Packet, events: &mut EventQueue) -> bool {
        let q = self.queue.as_mut().expect("enqueue on a link without a queue");
        let (qdisc, mut ctx) = q.ctx();
        match qdisc {
            LinkQdisc::Fifo(f) => f.enqueue_ref(pkt, now, &mut ctx),
            LinkQdisc::Pie(p) => p.enqueue_ref(pkt, now, &mut ctx),
            LinkQdisc::Codel(_) => qdisc.enqueue_codel(pkt, now, &mut ctx),
            qdisc => qdisc.enqueue(*pkt, now, &mut ctx),
        }
        if !q.dropped.is_empty() || !q.marked.is_empty() {
            return false;
        }
        if !(q.wake_at.is_some() && (q.host_timer.is_none() || !q.shaper.can_send(now))) {
            return false;
        }
        if q.timed && !(q.periodic && q.timer_at.is_some()) {
            self.arm_timed_qdisc(events);
        }
        true
    }

    /// Whether the shaper watchdog is pending (then it, not the caller, dequeues).
    /// With a late host timer, a pending watchdog does not hold the class back once
    /// it has tokens: every enqueue runs `__qdisc_run` → `htb_dequeue`, which sends
    /// then (`htb_dequeue` → `htb_do_events` by the clock, not by the timer), and the
    /// watchdog's own event is left stale.
    #[inline]
    pub fn waiting_for_tokens(&self, now: Time) -> bool {
        self.queue.as_ref().is_some_and(|q| q.wake_at.is_some() && (q.host_timer.is_none() || !q.shaper.can_send(now)))
    }

    /// One step of `htb_dequeue`: if the class has tokens and the qdisc a packet,
    /// dequeue and charge it, write it to `out` and return true; false if there is
    /// nothing for the wire now (empty, or no tokens: then the watchdog is armed
    /// for when there are). The second answer: whether the qdisc may have reported
    /// drops or marks (its dequeue ran, and it is not a FIFO, whose dequeue reports
    /// none), which the caller then drains. The packet goes to the caller's buffer rather than out through an enum: a
    /// packet moved through its niche byte is written in overlapping pieces, and
    /// the caller's immediate read of it then stalls on store forwarding.
    #[inline]
    pub fn dequeue_ready(&mut self, now: Time, events: &mut EventQueue, out: &mut Packet) -> (bool, bool) {
        let id = self.id;
        let Some(q) = self.queue.as_mut() else { return (false, false) };
        if q.qdisc.is_empty() {
            return (false, false);
        }
        if !q.shaper.can_send(now) {
            let mut t = q.shaper.next_send_time(now);
            if let Some(h) = q.host_timer.as_mut() {
                t += h.lateness_ns();
            }
            q.wake_at = Some(t);
            match q.wake_pin {
                Some(pin) => events.push_pinned(pin, t, Target::ShaperWake(id)),
                None => events.push(t, Target::ShaperWake(id)),
            }
            return (false, false);
        }
        // Sending now: a watchdog still pending (only a late one can be) is stale.
        q.wake_at = None;
        let (qdisc, mut ctx) = q.ctx();
        if let LinkQdisc::Fifo(f) = qdisc {
            // Straight from the ring's slot to `out`.
            if !f.dequeue_into(out) {
                return (false, false);
            }
            q.shaper.charge(now, out.wire_len);
            return (true, false);
        }
        if let LinkQdisc::Pie(p) = qdisc {
            // PIE acts at enqueue only (`sch_pie.c:pie_qdisc_dequeue`): no reports.
            if !p.dequeue_into(now, out) {
                return (false, false);
            }
            q.shaper.charge(now, out.wire_len);
            return (true, false);
        }
        if let LinkQdisc::Codel(_) = qdisc {
            // CoDel drops and marks at dequeue (`sch_codel.c:codel_qdisc_dequeue`,
            // `sch_fq_codel.c:fq_codel_dequeue`).
            if !qdisc.dequeue_codel(now, &mut ctx, out) {
                return (false, true);
            }
            q.shaper.charge(now, out.wire_len);
            return (true, true);
        }
        match qdisc.dequeue(now, &mut ctx) {
            Some(pkt) => {
                q.shaper.charge(now, pkt.wire_len);
                *out = pkt;
                (true, true)
            }
            None => (false, true),
        }
    }

    /// Whether the queue has drops or marks for the caller to account.
    #[inline]
    pub fn has_reports(&self) -> bool {
        self.queue.as_ref().is_some_and(|q| !q.dropped.is_empty() || !q.marked.is_empty())
    }

    /// The watchdog fired at `now`: true if it was the pending one (not stale).
    #[inline]
    pub fn take_wake(&mut self, now: Time) -> bool {
        match self.queue.as_mut() {
            Some(q) if q.wake_at == Some(now) => {
                q.wake_at = None;
                true
            }
            _ => false,
        }
    }

    /// The qdisc timer fired at `now`: run it if it was the pending one.
    pub fn fire_qdisc_timer(&mut self, now: Time) -> bool {
        match self.queue.as_mut() {
            Some(q) if q.timer_at == Some(now) => {
                q.timer_at = None;
                let (qdisc, mut ctx) = q.ctx();
                qdisc.on_timer(now, &mut ctx);
                true
            }
            _ => false,
        }
    }

    /// Schedule the qdisc's timer if it is earlier than the pending one.
    #[inline(always)]
    pub fn arm_qdisc_timer(&mut self, events: &mut EventQueue) {
        if self.queue.as_ref().is_some_and(|q| q.timed && !(q.periodic && q.timer_at.is_some())) {
            self.arm_timed_qdisc(events);
        }
    }

    #[inline(never)]
    fn arm_timed_qdisc(&mut self, events: &mut EventQueue) {
        let id = self.id;
        if let Some(q) = self.queue.as_mut() {
            if let Some(t) = q.qdisc.next_timer() {
                if q.timer_at.is_none_or(|s| t < s) {
                    q.timer_at = Some(t);
                    events.push(t, Target::QdiscTimer(id));
                }
            }
        }
    }

    /// Put `pkt` on the wire at `now` (after the queue, if any): it reaches the
    /// next hop now (no serialiser, no delay, no model), waits on a delay line, or
    /// is lost on the wire.
    #[inline]
    pub fn transmit(&mut self, now: Time, pkt: &Packet) -> Tx {
        self.stats.tx_packets += 1;
        self.stats.tx_bytes += pkt.wire_len as u64;
        let Some(line) = self.line else { return Tx::Now };
        let depart = match self.serialiser.as_mut() {
            Some(s) => s.depart(now, pkt.wire_len),
            None => now,
        };
        let arrive = match self.model.as_deref_mut() {
            None => depart + self.delay_ns,
            Some(m) => match m.apply(depart, self.delay_ns, pkt.wire_len) {
                Some(t) => t,
                None => return Tx::Lost,
            },
        };
        self.on_wire += 1;
        Tx::Wire(line, arrive)
    }

    /// One of this link's packets left its delay line.
    #[inline]
    pub fn left_wire(&mut self) {
        self.on_wire -= 1;
    }

    /// Test drop injection: the serialiser sends `pkt`, the wire loses it.
    pub fn transmit_lost(&mut self, now: Time, pkt: &Packet) {
        if let Some(s) = self.serialiser.as_mut() {
            s.depart(now, pkt.wire_len);
        }
    }
}
