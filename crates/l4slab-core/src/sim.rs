//! The event loop: pops events and moves packets from hop to hop.
//!
//! The network ([`crate::net`]) holds links and routes, the flow table holds each
//! flow's two [`Endpoint`]s, [`crate::traffic`] sources open flows, and observers
//! ([`crate::trace`]) measure. Every packet created is, at any instant, in exactly
//! one place: a link (queue or wire), delivered or dropped; the engine checks that
//! conservation at the end of every run.

use crate::config::ScenarioConfig;
use crate::event::{EndpointId, EventQueue, LinkId, Target};
use crate::net::topology::Topology;
use crate::net::{Hop, Link, Network, Sent};
use crate::packet::{Outbox, Packet, PacketKind};
use crate::qdisc::Qdisc;
use crate::results::*;
use crate::time::{secs, Time};
use crate::trace::recorder::LinkToMeasure;
use crate::trace::{FlowCumulative, FlowSample, NetworkView, Observer, Observers, Recorder, WriterSetup};
use crate::traffic::scenario::ScenarioFlows;
use crate::traffic::tcp::{TcpReceiverEndpoint, TcpSenderEndpoint};
use crate::traffic::{Endpoint, FlowOpener, FlowSpec, TrafficSource};

/// An endpoint as the flow table holds it: the TCP sockets by their own type, so that
/// the per-packet calls (`on_packet`, `on_timer`, `next_timer`) are direct calls the
/// compiler can inline instead of indirect ones through a vtable (whose target
/// alternates between sender and receiver from one packet to the next); any other
/// endpoint behind `dyn Endpoint`.
enum FlowEnd {
    TcpSender(Box<TcpSenderEndpoint>),
    TcpReceiver(Box<TcpReceiverEndpoint>),
    Other(Box<dyn Endpoint>),
}

/// `$e` (a `FlowEnd`) as the endpoint it holds, `$f` applied to it.
macro_rules! on_end {
    ($e:expr, $x:ident => $f:expr) => {
        match $e {
            FlowEnd::TcpSender($x) => $f,
            FlowEnd::TcpReceiver($x) => $f,
            FlowEnd::Other($x) => $f,
        }
    };
}

impl FlowEnd {
    fn new(e: Box<dyn Endpoint>) -> Self {
        let any = &*e as &dyn std::any::Any;
        if any.is::<TcpSenderEndpoint>() {
            let b: Box<dyn std::any::Any> = e;
            FlowEnd::TcpSender(b.downcast().expect("checked type"))
        } else if any.is::<TcpReceiverEndpoint>() {
            let b: Box<dyn std::any::Any> = e;
            FlowEnd::TcpReceiver(b.downcast().expect("checked type"))
        } else {
            FlowEnd::Other(e)
        }
    }
    fn into_box(self) -> Box<dyn Endpoint> {
        match self {
            FlowEnd::TcpSender(b) => b,
            FlowEnd::TcpReceiver(b) => b,
            FlowEnd::Other(b) => b,
        }
    }
    #[inline(always)]
    fn get(&self) -> &dyn Endpoint {
        on_end!(self, e => &**e as &dyn Endpoint)
    }
    #[inline(always)]
    fn on_packet(&mut self, pkt: &Packet, now: Time, out: &mut Outbox) {
        on_end!(self, e => e.on_packet(pkt, now, out))
    }
    #[inline(always)]
    fn on_timer(&mut self, now: Time, out: &mut Outbox) {
        on_end!(self, e => e.on_timer(now, out))
    }
    #[inline(always)]
    fn next_timer(&self) -> Option<Time> {
        on_end!(self, e => e.next_timer())
    }
}

/// One flow slot: its endpoints and their pending timers.
struct FlowSlot {
    /// `[sender, receiver]`, indexed by `EndpointId::0 % 2`.
    ends: [FlowEnd; 2],
    /// Pending timer events (lazy: stale ones are ignored).
    timer_at: [Option<Time>; 2],
    /// `Endpoint::arms_timer_first` and whether `Endpoint::drop_injection` is offered, of each side,
    /// read once when the flow opens (both are fixed for an endpoint's life):
    /// no virtual call per packet to ask.
    arms_timer_first: [bool; 2],
    injects_drops: [bool; 2],
    start: Time,
    base_rtt: u64,
    /// Packets of this flow inside the network (queues and wires): a source reuses
    /// the slot only when none is left (`FlowOpener::is_quiet`).
    in_network: u32,
}

impl FlowSlot {
    /// Count the `n_out` packets side `side` just emitted into the flow's packets in
    /// the network, and return what routing them needs of the slot:
    /// (`arms_timer_first`, `injects_drops`) of that side.
    #[inline(always)]
    fn take_out(&mut self, side: usize, n_out: u32) -> (bool, bool) {
        self.in_network += n_out;
        (self.arms_timer_first[side], self.injects_drops[side])
    }
}

/// Bytes of one flow's slot in the flow table (its endpoints are boxed apart).
pub(crate) const FLOW_SLOT_BYTES: usize = std::mem::size_of::<Option<FlowSlot>>();

/// Whole-run packet accounting.
#[derive(Default)]
struct Counts {
    sent: u64,
    delivered: u64,
    dropped: u64,
    data: u64,
    acks: u64,
}

/// The flows of a run, and the slots released for reuse.
#[derive(Default)]
struct FlowTable {
    slots: Vec<Option<FlowSlot>>,
    free: Vec<u32>,
}

impl FlowTable {
    #[inline]
    fn slot(&self, flow: u32) -> &FlowSlot {
        self.slots[flow as usize].as_ref().expect("open flow slot")
    }
    #[inline]
    fn slot_mut(&mut self, flow: u32) -> &mut FlowSlot {
        self.slots[flow as usize].as_mut().expect("open flow slot")
    }
}

/// What a source sees while opening flows during setup or one of its events.
struct Opener<'a> {
    flows: &'a mut FlowTable,
    net: &'a mut Network,
    topology: &'a dyn Topology,
    events: &'a mut EventQueue,
    observers: Option<&'a mut Observers>,
    /// The time of the source's event (0 at setup).
    now: Time,
    end: Time,
}

impl FlowOpener for Opener<'_> {
    fn reserve_slot(&mut self) -> u32 {
        if let Some(s) = self.flows.free.pop() {
            return s;
        }
        self.flows.slots.push(None);
        self.flows.slots.len() as u32 - 1
    }
    fn open(&mut self, slot: u32, spec: FlowSpec) {
        self.topology.attach_flow(self.net, slot, spec.fwd_delay_ns, spec.rev_delay_ns, spec.reverse);
        let ends = [FlowEnd::new(spec.sender), FlowEnd::new(spec.receiver)];
        self.flows.slots[slot as usize] = Some(FlowSlot {
            arms_timer_first: [ends[0].get().arms_timer_first(), ends[1].get().arms_timer_first()],
            injects_drops: [ends[0].get().drop_injection().is_some(), ends[1].get().drop_injection().is_some()],
            ends,
            timer_at: [None, None],
            in_network: 0,
            start: spec.start,
            base_rtt: spec.base_rtt_ns,
        });
        if let Some(o) = self.observers.as_deref_mut() {
            o.on_flow_open(slot);
        }
        if spec.start < self.end {
            self.events.push(spec.start, Target::FlowStart { flow: slot });
        }
    }
    fn is_finished(&self, slot: u32) -> bool {
        self.flows.slots[slot as usize].as_ref().is_none_or(|f| f.ends.iter().all(|e| e.get().is_finished()))
    }
    fn is_quiet(&self, slot: u32) -> bool {
        self.flows.slots[slot as usize]
            .as_ref()
            .is_none_or(|f| f.in_network == 0 && f.ends.iter().all(|e| e.get().is_finished()))
    }
    fn release(&mut self, slot: u32) -> Option<[Box<dyn Endpoint>; 2]> {
        if let Some(o) = self.observers.as_deref_mut() {
            o.on_flow_close(self.now, slot, &View { flows: self.flows, net: self.net });
        }
        self.flows.free.push(slot);
        self.flows.slots[slot as usize].take().map(|f| f.ends.map(FlowEnd::into_box))
    }
    fn end(&self) -> Time {
        self.end
    }
    fn fill_request(&self, slot: u32, r: &mut crate::results::RequestRecord) {
        if let Some(f) = self.flows.slots[slot as usize].as_ref() {
            f.ends.iter().filter_map(|e| e.get().measured()).for_each(|m| m.fill_request(r));
        }
    }
}

/// The network and flows as observers read them.
struct View<'a> {
    flows: &'a FlowTable,
    net: &'a Network,
}

impl NetworkView for View<'_> {
    fn n_flows(&self) -> usize {
        self.flows.slots.len()
    }
    fn flow_start(&self, flow: usize) -> Time {
        self.flows.slots[flow].as_ref().map_or(0, |f| f.start)
    }
    fn base_rtt_ns(&self, flow: usize) -> u64 {
        self.flows.slots[flow].as_ref().map_or(0, |f| f.base_rtt)
    }
    fn cumulative(&self, flow: usize) -> FlowCumulative {
        let mut c = FlowCumulative::default();
        if let Some(f) = self.flows.slots[flow].as_ref() {
            f.ends.iter().filter_map(|e| e.get().measured()).for_each(|m| m.add_cumulative(&mut c));
        }
        c
    }
    fn sample(&self, flow: usize) -> FlowSample {
        let mut s = FlowSample::default();
        if let Some(f) = self.flows.slots[flow].as_ref() {
            f.ends.iter().filter_map(|e| e.get().measured()).for_each(|m| m.sample(&mut s));
        }
        s
    }
    fn summarise(&self, flow: usize, s: &mut FlowSummary) {
        if let Some(f) = self.flows.slots[flow].as_ref() {
            f.ends.iter().filter_map(|e| e.get().measured()).for_each(|m| m.summarise(f.start, s));
        }
    }
    fn link(&self, id: LinkId) -> &Link {
        self.net.link(id)
    }
}

/// The sink a streaming run switches to after its sink failed: the error is kept and
/// returned by the run, and later records are dropped instead of piling up.
struct DiscardRecords;

impl RecordSink for DiscardRecords {
    fn requests(&mut self, _source: u32, _chunk: &[RequestRecord]) -> Result<(), String> {
        Ok(())
    }
    fn flow_records(&mut self, _chunk: &[FlowSummary]) -> Result<(), String> {
        Ok(())
    }
}

/// One simulation run.
pub struct Simulation {
    cfg: ScenarioConfig,
    events: EventQueue,
    net: Network,
    topology: Box<dyn Topology>,
    flows: FlowTable,
    sources: Vec<Box<dyn TrafficSource>>,
    observers: Observers,
    /// Scratch buffer for the packets an endpoint emits in one callback, and the
    /// side table of the SACK options of the ACKs in the network (each entry freed
    /// where its ACK is delivered or dropped).
    out: Outbox,
    /// A blank packet, copied (one 64-byte copy, not a packet built field by field)
    /// for the buffer of a dequeue loop that runs inside another packet's handling
    /// ([`service`](Self::service)); the event loop's own events use `run`'s buffer.
    scratch: Packet,
    counts: Counts,
    end: Time,
    /// A streaming run's destination for per-request and closed-flow records
    /// (`crate::run_streaming`); its first error ends the streaming.
    sink: Option<Box<dyn RecordSink>>,
    sink_error: Option<String>,
}

impl Simulation {
    pub fn new(cfg: &ScenarioConfig) -> Result<Self, String> {
        Self::with_sources(cfg, Vec::new())
    }

    /// A run of `cfg` with traffic sources beyond the flows it lists (which keep
    /// slots `0..cfg.flows.len()`).
    pub fn with_sources(cfg: &ScenarioConfig, extra: Vec<Box<dyn TrafficSource>>) -> Result<Self, String> {
        let end = cfg.duration_ns;
        let mut net = Network::new();
        let topology = crate::net::build_topology(cfg, &mut net)?;
        let mut events = EventQueue::with_capacity(4096);
        let mut flows = FlowTable::default();
        let mut sources: Vec<Box<dyn TrafficSource>> =
            vec![Box::new(ScenarioFlows::new(&cfg.flows, cfg.seed, cfg.start_jitter_ns))];
        sources.extend(crate::traffic::build_sources(cfg)?);
        sources.extend(extra);
        for s in sources.iter_mut() {
            let mut opener = Opener {
                flows: &mut flows,
                net: &mut net,
                topology: topology.as_ref(),
                events: &mut events,
                observers: None,
                now: 0,
                end,
            };
            s.open_initial(&mut opener)?;
        }
        events.push(cfg.bin_ns.min(end), Target::Sample);
        for (i, s) in sources.iter().enumerate() {
            if let Some(t) = s.next_event() {
                events.push(t, Target::Source(i as u32));
            }
        }
        let measured: Vec<LinkToMeasure> = topology
            .measured()
            .iter()
            .map(|m| LinkToMeasure {
                id: m.id,
                name: m.name,
                n_classes: net.link(m.id).queue().map_or(1, |q| q.qdisc.class_names().len()),
            })
            .collect();
        let recorder = Recorder::new(&measured, flows.slots.len(), end, cfg.bin_ns, cfg.warmup_ns)?;
        let bottleneck = topology.measured()[0].id;
        let classes = net.link(bottleneck).queue().map_or(Vec::new(), |q| q.qdisc.class_names().to_vec());
        let observers = Observers::new(recorder, &WriterSetup { cfg, bottleneck, classes })?;
        for link in net.links.iter_mut() {
            if let Some(q) = link.queue_mut() {
                q.pin_watchdog(&mut events);
            }
            link.arm_qdisc_timer(&mut events);
            if let Some(t) = link.queue().and_then(|q| q.schedule.next_at()) {
                events.push(t, Target::LinkChange(link.id));
            }
        }
        Ok(Simulation {
            cfg: cfg.clone(),
            events,
            net,
            topology,
            flows,
            sources,
            observers,
            out: Outbox::with_capacity(256),
            scratch: Packet::new(0, PacketKind::Data),
            counts: Counts::default(),
            end,
            sink: None,
            sink_error: None,
        })
    }

    /// Run until the configured duration.
    pub fn run(&mut self) {
        // The packet arriving from a delay line, written in place by the line and
        // handed on from here: it is no part of `self`, so the hop it goes to may
        // borrow the simulation while it reads the packet (no copy out of a buffer of
        // the simulation's). The dequeue loop of a shaper's watchdog, a qdisc timer or a
        // rate step uses it too. Only the loop's own events use it; a dequeue loop
        // they cause inside their handling takes a copy of `scratch`.
        let mut arriving = Packet::new(0, PacketKind::Data);
        while let Some((now, target)) = self.events.pop_until(self.end) {
            self.dispatch(now, target, &mut arriving);
        }
        for source in self.sources.iter_mut() {
            let mut opener = Opener {
                flows: &mut self.flows,
                net: &mut self.net,
                topology: self.topology.as_ref(),
                events: &mut self.events,
                observers: None,
                now: self.end,
                end: self.end,
            };
            source.finish(self.end, &mut opener);
        }
        self.drain_records(None, true);
    }

    /// Stream this run's per-request and closed-flow records into `sink` as they are
    /// final, in bounded chunks, instead of keeping them for the results.
    pub fn set_sink(&mut self, sink: Box<dyn RecordSink>) {
        self.sink = Some(sink);
    }

    /// After [`run`](Self::run): the sink's first error, else its `finish`.
    pub fn finish_sink(&mut self) -> Result<(), String> {
        match (self.sink_error.take(), self.sink.take()) {
            (Some(e), _) => Err(e),
            (None, Some(mut sink)) => sink.finish(),
            (None, None) => Ok(()),
        }
    }

    /// Hand records on to the sink (source `only`'s after its event, else every
    /// source's; `all` at the end of the run). Cold: once per source event.
    fn drain_records(&mut self, only: Option<usize>, all: bool) {
        let Some(sink) = self.sink.as_deref_mut() else { return };
        let mut result = Ok(());
        for (i, source) in self.sources.iter_mut().enumerate() {
            if only.is_none_or(|o| o == i) && result.is_ok() {
                result = source.drain_records(sink, all);
            }
        }
        result = result.and_then(|()| self.observers.recorder.drain_records(sink, all));
        if let Err(e) = result {
            // Keep the first error for the run's result; later records are dropped
            // (not kept in memory) until the run ends.
            self.sink_error = Some(e);
            self.sink = Some(Box::new(DiscardRecords));
        }
    }

    fn dispatch(&mut self, now: Time, target: Target, arriving: &mut Packet) {
        match target {
            Target::LineHead(line) => {
                let seq = self.events.last_seq();
                if let Some(from) = self.net.arrive(line, now, seq, &mut self.events, arriving) {
                    let hop = self.net.next_hop(arriving, Some(from));
                    self.forward(now, hop, arriving);
                }
            }
            Target::EndpointTimer(e) => {
                // A released slot ignores its old flow's timers.
                let Some(f) = self.flows.slots[e.flow() as usize].as_mut() else { return };
                let side = (e.0 % 2) as usize;
                if f.timer_at[side] == Some(now) {
                    f.timer_at[side] = None;
                    f.ends[side].on_timer(now, &mut self.out);
                    let flags = f.take_out(side, self.out.pkts.len() as u32);
                    self.route_and_rearm(now, e, flags);
                }
            }
            Target::ShaperWake(l) => {
                // `take_wake` cleared the pending watchdog, so `service`'s test for one
                // (`waiting_for_tokens`) is false: straight to the dequeue loop.
                if self.net.link_mut(l).take_wake(now) {
                    self.service_ready(now, l, arriving);
                }
            }
            Target::QdiscTimer(l) => {
                if self.net.link_mut(l).fire_qdisc_timer(now) {
                    self.drain_reports(now, l);
                    self.net.link_mut(l).arm_qdisc_timer(&mut self.events);
                    self.service_into(now, l, arriving);
                }
            }
            Target::LinkChange(l) => {
                let next = self.net.link_mut(l).queue_mut().and_then(|q| q.apply_rate_steps(now));
                if let Some(t) = next {
                    self.events.push(t, Target::LinkChange(l));
                }
                self.service_into(now, l, arriving);
            }
            Target::FlowStart { flow } => {
                let e = EndpointId::sender(flow);
                let Some(f) = self.flows.slots[flow as usize].as_mut() else { return };
                on_end!(&mut f.ends[0], e => e.start(now, &mut self.out));
                self.after_endpoint(now, e);
            }
            Target::Source(i) => {
                let mut opener = Opener {
                    flows: &mut self.flows,
                    net: &mut self.net,
                    topology: self.topology.as_ref(),
                    events: &mut self.events,
                    observers: Some(&mut self.observers),
                    now,
                    end: self.end,
                };
                let source = &mut self.sources[i as usize];
                source.on_event(now, &mut opener);
                if let Some(t) = source.next_event() {
                    self.events.push(t, Target::Source(i));
                }
                self.drain_records(Some(i as usize), false);
            }
            Target::Sample => {
                self.observers.on_sample(now, &View { flows: &self.flows, net: &self.net });
                if now < self.end {
                    self.events.push((now + self.cfg.bin_ns).min(self.end), Target::Sample);
                }
            }
        }
    }

    /// Route the packets endpoint `e` just emitted and re-arm its timer, in the
    /// order the endpoint asks for.
    #[inline]
    fn after_endpoint(&mut self, now: Time, e: EndpointId) {
        let side = (e.0 % 2) as usize;
        let n_out = self.out.pkts.len() as u32;
        let flags = self.flows.slot_mut(e.flow()).take_out(side, n_out);
        self.route_and_rearm(now, e, flags);
    }

    /// [`after_endpoint`](Self::after_endpoint) once the slot has been read
    /// ([`FlowSlot::take_out`]): a caller that holds the slot already (a delivery,
    /// a timer) reads it there instead of looking it up again for each question.
    #[inline]
    fn route_and_rearm(&mut self, now: Time, e: EndpointId, (arms_timer_first, injects_drops): (bool, bool)) {
        if arms_timer_first {
            self.arm_timer(e);
            self.emit(now, e, injects_drops);
        } else {
            if !self.out.is_empty() {
                self.emit(now, e, injects_drops);
            }
            self.arm_timer(e);
        }
    }

    #[inline]
    fn arm_timer(&mut self, e: EndpointId) {
        let side = (e.0 % 2) as usize;
        let f = self.flows.slot_mut(e.flow());
        if let Some(t) = f.ends[side].next_timer() {
            if f.timer_at[side].is_none_or(|s| t < s) {
                f.timer_at[side] = Some(t);
                self.events.push_timer(t, Target::EndpointTimer(e));
            }
        }
    }

    /// Count the packets in `self.out` and send each to its first hop (the caller
    /// has counted them into their flow's `in_network`).
    fn emit(&mut self, now: Time, e: EndpointId, injects_drops: bool) {
        if self.out.is_empty() {
            return;
        }
        let side = (e.0 % 2) as usize;
        let mut out = std::mem::take(&mut self.out.pkts);
        for pkt in out.iter_mut() {
            self.counts.sent += 1;
            self.observers.on_emit(now, e, pkt, &self.out.sacks);
            match pkt.kind {
                PacketKind::Data | PacketKind::Udp => self.counts.data += 1,
                _ => self.counts.acks += 1,
            }
            let hop = self.net.next_hop(pkt, None);
            if injects_drops
                && self.flows.slot(e.flow()).ends[side]
                    .get()
                    .drop_injection()
                    .is_some_and(|d| d.loses_on_first_hop(pkt))
            {
                // Drop injection (tests): the NIC sends it, the wire loses it.
                if let Hop::Link(l) = hop {
                    self.net.link_mut(l).transmit_lost(now, pkt);
                }
                self.flows.slot_mut(e.flow()).in_network -= 1;
                self.counts.dropped += 1;
                self.out.sacks.free(pkt.tcp.sack);
                continue;
            }
            self.forward(now, hop, pkt);
        }
        out.clear();
        // Keep the buffer's capacity (a nested callback may have left a fresh one).
        if self.out.pkts.capacity() < out.capacity() {
            self.out.pkts = out;
        }
    }

    #[inline]
    fn forward(&mut self, now: Time, hop: Hop, pkt: &Packet) {
        match hop {
            Hop::Link(l) => self.arrive_link(now, l, pkt),
            Hop::Endpoint(e) => self.deliver(now, e, pkt),
        }
    }

    /// `pkt` reaches link `l`: into its queue, or straight onto its wire.
    fn arrive_link(&mut self, now: Time, l: LinkId, pkt: &Packet) {
        let link = self.net.link_mut(l);
        if link.queue().is_some() {
            self.observers.on_enqueue(now, l, pkt);
            // Most enqueues on a busy link report nothing and find the shaper waiting
            // for tokens: done there (the steps below, without their look-ups of the
            // link and its queue).
            if link.enqueue_busy(now, pkt, &mut self.events) {
                return;
            }
            if self.net.link(l).has_reports() {
                self.drain_nonempty_reports(now, l);
            }
            self.service(now, l);
            self.net.link_mut(l).arm_qdisc_timer(&mut self.events);
        } else {
            match self.net.transmit(l, now, pkt, &mut self.events) {
                Sent::Now => {
                    let hop = self.net.next_hop(pkt, Some(l));
                    self.forward(now, hop, pkt);
                }
                Sent::Later => {}
                Sent::Lost => self.lost_on_wire(now, l, pkt),
            }
        }
    }

    /// Link `l`'s wire lost `pkt` (`net/link_model.rs`): a drop at that link.
    #[cold]
    #[inline(never)]
    fn lost_on_wire(&mut self, now: Time, l: LinkId, pkt: &Packet) {
        self.counts.dropped += 1;
        if let Some(f) = self.flows.slots[pkt.flow as usize].as_mut() {
            f.in_network = f.in_network.saturating_sub(1);
        }
        self.observers.on_drop(now, l, pkt);
        self.out.sacks.free(pkt.tcp.sack);
    }

    /// The HTB dequeue loop of link `l`: while the class has tokens and the qdisc
    /// has packets, dequeue and transmit (`sch_htb.c:htb_dequeue`).
    /// The packets dequeued go through a copy of `scratch` (this may run inside
    /// another packet's handling, which holds the loop's buffer).
    #[inline]
    fn service(&mut self, now: Time, l: LinkId) {
        if self.net.link(l).waiting_for_tokens(now) {
            return; // the watchdog will dequeue
        }
        let mut buf = self.scratch;
        self.service_ready(now, l, &mut buf);
    }

    /// [`service`](Self::service) from the event loop's own event: the packets
    /// dequeued go through the loop's buffer `buf`.
    #[inline]
    fn service_into(&mut self, now: Time, l: LinkId, buf: &mut Packet) {
        if self.net.link(l).waiting_for_tokens(now) {
            return;
        }
        self.service_ready(now, l, buf);
    }

    /// [`service`](Self::service) once the shaper is not waiting for tokens: the
    /// check above is inlined into every caller (most enqueues on a busy link stop
    /// there), this loop is not. Each packet is dequeued into `pkt` (no part of
    /// `self`) and handed on from there.
    #[inline(never)]
    fn service_ready(&mut self, now: Time, l: LinkId, pkt: &mut Packet) {
        loop {
            // The link is looked up once for the dequeue and its reports.
            let link = self.net.link_mut(l);
            let (ready, may_report) = link.dequeue_ready(now, &mut self.events, pkt);
            if may_report && link.has_reports() {
                self.drain_nonempty_reports(now, l);
            }
            if !ready {
                return;
            }
            let pkt = &*pkt;
            self.observers.on_dequeue(now, l, pkt, now - pkt.enqueue_ts, &self.out.sacks);
            match self.net.transmit(l, now, pkt, &mut self.events) {
                Sent::Now => {
                    let hop = self.net.next_hop(pkt, Some(l));
                    self.forward(now, hop, pkt);
                }
                Sent::Later => {}
                Sent::Lost => self.lost_on_wire(now, l, pkt),
            }
        }
    }

    /// Account the drops and marks link `l`'s qdisc reported.
    #[inline]
    fn drain_reports(&mut self, now: Time, l: LinkId) {
        if self.net.links[l.0 as usize].has_reports() {
            self.drain_nonempty_reports(now, l);
        }
    }

    #[cold]
    fn drain_nonempty_reports(&mut self, now: Time, l: LinkId) {
        let q = self.net.links[l.0 as usize].queue_mut().expect("queued link");
        for p in q.dropped.drain(..) {
            self.counts.dropped += 1;
            if let Some(f) = self.flows.slots[p.flow as usize].as_mut() {
                f.in_network = f.in_network.saturating_sub(1);
            }
            self.observers.on_drop(now, l, &p);
            self.out.sacks.free(p.tcp.sack);
        }
        for flow in q.marked.drain(..) {
            self.observers.on_mark(now, l, flow);
        }
    }

    /// `pkt` reaches endpoint `e`.
    #[inline]
    fn deliver(&mut self, now: Time, e: EndpointId, pkt: &Packet) {
        self.counts.delivered += 1;
        self.observers.on_deliver(now, e, pkt, &self.out.sacks);
        let side = (e.0 % 2) as usize;
        // A packet of a flow whose slot was released arrives at a closed socket.
        let Some(f) = self.flows.slots[e.flow() as usize].as_mut() else {
            self.out.sacks.free(pkt.tcp.sack);
            return;
        };
        f.in_network = f.in_network.saturating_sub(1);
        f.ends[side].on_packet(pkt, now, &mut self.out);
        let flags = f.take_out(side, self.out.pkts.len() as u32);
        // The endpoint has read the ACK's SACK option (tcp_ack): its entry is free.
        self.out.sacks.free(pkt.tcp.sack);
        self.route_and_rearm(now, e, flags);
    }

    /// Packets still inside the network (queues and wires).
    fn in_flight(&self) -> u64 {
        self.net.packets_held()
    }

    /// Assemble the results (call after `run`).
    pub fn results(&self) -> RunResults {
        let mut r = RunResults {
            duration_s: secs(self.end),
            warmup_s: secs(self.cfg.warmup_ns),
            bin_s: secs(self.cfg.bin_ns),
            seed: self.cfg.seed,
            packets: PacketCounts {
                sent: self.counts.sent,
                delivered: self.counts.delivered,
                dropped: self.counts.dropped,
                in_flight: self.in_flight(),
                data: self.counts.data,
                acks: self.counts.acks,
            },
            events: self.events.processed(),
            ..Default::default()
        };
        self.observers.fill_results(&View { flows: &self.flows, net: &self.net }, &mut r);
        for source in self.sources.iter() {
            source.fill_results(&mut r);
        }
        r
    }

    /// Packet conservation: sent = delivered + dropped + in flight.
    pub fn check_conservation(&self) -> Result<(), String> {
        let inf = self.in_flight();
        let c = &self.counts;
        if c.sent != c.delivered + c.dropped + inf {
            return Err(format!(
                "packet conservation violated: sent {} != delivered {} + dropped {} + in flight {}",
                c.sent, c.delivered, c.dropped, inf
            ));
        }
        // Every SACK entry belongs to an ACK still in the network: one freed at
        // each delivery and drop, none leaked.
        let live = self.out.sacks.live() as u64;
        if live > inf {
            return Err(format!("SACK side table leaks: {live} entries live, {inf} packets in flight"));
        }
        Ok(())
    }
}

pub use crate::trace::jain_index;

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn config(extra: serde_json::Value) -> ScenarioConfig {
        let mut v = json!({
            "seed": 3, "duration_ns": 5_000_000_000u64,
            "bottleneck": {"rate_bps": 10_000_000, "qdisc": {"kind": "pfifo", "limit_packets": 50}},
            "flows": [{"kind": "tcp", "cc": "reno", "rtt_ns": 20_000_000},
                      {"kind": "tcp", "cc": "cubic", "rtt_ns": 30_000_000}],
        });
        v.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn observers_see_every_enqueue_dequeue_and_drop() {
        let r = crate::run(&config(json!({}))).unwrap();
        let q = &r.bottleneck.qdisc;
        let b = &r.bottleneck_series;
        let arrivals: u64 = b.arrivals.iter().sum();
        let drops: u64 = b.drops.iter().sum();
        assert!(q.drops > 0, "the scenario must drop");
        assert_eq!(drops, q.drops);
        assert_eq!(r.flows.iter().map(|f| f.drops).sum::<u64>(), q.drops);
        assert_eq!(arrivals, q.sent_packets + q.drops + q.backlog_packets);
        let bytes: f64 = b.utilisation.iter().sum::<f64>() * 0.1 * 10e6 / 8.0;
        assert!((bytes - q.sent_bytes as f64).abs() < 1.0, "{bytes} vs {}", q.sent_bytes);
    }

    /// Opens a sized transfer at 0.5 s, releases its slot once it has finished,
    /// and opens the next one in the same slot at 2 s.
    struct Sequential {
        at: Vec<Time>,
        slots: Vec<u32>,
    }

    impl TrafficSource for Sequential {
        fn open_initial(&mut self, _opener: &mut dyn FlowOpener) -> Result<(), String> {
            Ok(())
        }
        fn next_event(&self) -> Option<Time> {
            self.at.first().copied()
        }
        fn on_event(&mut self, now: Time, opener: &mut dyn FlowOpener) {
            self.at.remove(0);
            if let Some(&last) = self.slots.last() {
                assert!(opener.is_finished(last), "100 kB take well under 1.5 s at 10 Mbit/s");
                opener.release(last);
            }
            let slot = opener.reserve_slot();
            self.slots.push(slot);
            let t: crate::config::TcpFlowConfig =
                serde_json::from_value(json!({"cc": "cubic", "rtt_ns": 10_000_000, "bytes": 100_000})).unwrap();
            let sender = crate::tcp::TcpSender::new(slot, &t, crate::cc::build("cubic", None).unwrap(), opener.end());
            let receiver = crate::tcp::TcpReceiver::new(slot, true, 2, 2, "cubic");
            opener.open(
                slot,
                FlowSpec {
                    sender: Box::new(crate::traffic::tcp::TcpSenderEndpoint(sender)),
                    receiver: Box::new(crate::traffic::tcp::TcpReceiverEndpoint::bulk(receiver)),
                    start: now,
                    base_rtt_ns: 10_000_000,
                    fwd_delay_ns: 5_000_000,
                    rev_delay_ns: 5_000_000,
                    reverse: false,
                },
            );
        }
    }

    #[test]
    fn a_traffic_source_opens_flows_during_the_run_and_reuses_slots() {
        let cfg = config(json!({}));
        let source = Sequential { at: vec![500_000_000, 2_000_000_000], slots: Vec::new() };
        let mut sim = Simulation::with_sources(&cfg, vec![Box::new(source)]).unwrap();
        sim.run();
        sim.check_conservation().unwrap();
        let r = sim.results();
        assert_eq!(r.flows.len(), 3, "two configured flows and one reused slot");
        let web = &r.flows[2];
        assert_eq!(web.bytes_delivered, 100_000);
        let fct = web.fct_s.expect("the second transfer completes");
        // Under 2 s: a SYN lost to the full FIFO waits out its 1-s timeout.
        assert!(fct > 0.01 && fct < 2.0, "fct {fct}");
        assert!((web.start_s - 2.0).abs() < 1e-9, "the slot now holds the second flow");
        assert_eq!(sim.net.links.len(), 1 + 2 * 3, "the reused slot kept its NIC links");
        // The first transfer, closed at 2 s, left a record of its own.
        assert_eq!(r.flow_records.len(), 1);
        let first = &r.flow_records[0];
        assert_eq!((first.id, first.bytes_delivered), (2, 100_000));
        assert!((first.start_s - 0.5).abs() < 1e-9);
        let first_fct = first.fct_s.expect("the first transfer completed");
        assert!(first_fct > 0.01 && first_fct < 2.0, "fct {first_fct}");
        // Goodput over its lifetime in the window (0.5 s to 2 s).
        assert!((first.goodput_mbps - 100_000.0 * 8.0 / 1.5 / 1e6).abs() < 1e-9, "{}", first.goodput_mbps);
        // The slot's series aggregate both occupants: no counter runs backwards.
        let slot_bytes: f64 = r.flow_series[2].goodput_mbps.iter().map(|m| m * 1e6 / 8.0 * 0.1).sum();
        assert!((slot_bytes - 200_000.0).abs() < 1.0, "the slot's series carry both transfers: {slot_bytes}");
        assert!(r.flow_series[2].goodput_mbps.iter().all(|g| g.is_finite() && *g >= 0.0));
    }

    /// SACK options live in the side table while their ACKs are in the network:
    /// with losses forward (SACKs) and an ACK queue that drops, every entry is
    /// freed at its ACK's delivery or drop, and the table's size stays that of
    /// the ACKs in flight, not of the ACKs ever sent.
    #[test]
    fn sack_entries_are_freed_where_their_acks_are_delivered_or_dropped() {
        let rev = json!({"reverse_bottleneck": {"rate_bps": 300_000, "qdisc": {"kind": "pfifo", "limit_packets": 5}}});
        let mut sim = Simulation::new(&config(rev)).unwrap();
        sim.run();
        sim.check_conservation().unwrap();
        let r = sim.results();
        let fwd_drops = r.bottleneck.qdisc.drops;
        assert!(fwd_drops > 0, "forward losses make SACK blocks");
        assert!(r.packets.dropped > fwd_drops, "the ACK queue drops ACKs too");
        let sacks = &sim.out.sacks;
        assert!(sacks.sets.capacity() > 0, "ACKs carried SACK options");
        assert!(sacks.live() as u64 <= r.packets.in_flight);
        assert!(sacks.sets.len() <= 64, "the table holds ACKs in flight only: {}", sacks.sets.len());
    }

    #[test]
    fn a_queue_on_the_ack_path_delays_acks() {
        // ACKs of 66-90 B through a 100 kbit/s queue: about 150 per second leave
        // it, fewer than the receivers send, so ACKs back up and every RTT sample
        // carries their queueing delay; the uncongested reverse path adds none.
        let free = crate::run(&config(json!({}))).unwrap();
        let rev =
            json!({"reverse_bottleneck": {"rate_bps": 100_000, "qdisc": {"kind": "bfifo", "limit_bytes": 1_000_000}}});
        let slow = crate::run(&config(rev)).unwrap();
        let rtt = |r: &RunResults| r.flows[0].mean_rtt_ms;
        assert!(rtt(&free) < 100.0, "free reverse path: {} ms", rtt(&free));
        assert!(rtt(&slow) > rtt(&free) + 500.0, "ACK queueing adds RTT: {} vs {}", rtt(&slow), rtt(&free));
        // The forward bottleneck sees the same sojourn accounting either way.
        assert!(slow.bottleneck.qdisc.sent_packets > 0);
        assert_eq!(slow.packets.sent, slow.packets.delivered + slow.packets.dropped + slow.packets.in_flight);
    }
}
