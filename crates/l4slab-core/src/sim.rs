//! The dumbbell network and the event loop.
//!
//! Topology (aqm.md §0): each flow's sender → (its NIC at the access rate) →
//! forward propagation → the shaped bottleneck (HTB class + child qdisc) → its
//! receiver; ACKs return over an uncongested reverse path. Every packet created is,
//! at any instant, in exactly one place: an event, the qdisc, delivered or dropped;
//! the engine checks that conservation at the end of every run.

use crate::config::{FlowConfig, ScenarioConfig};
use crate::event::{Action, EventQueue};
use crate::link::Shaper;
use crate::metrics::{FlowCumulative, Recorder};
use crate::packet::{Packet, PacketKind};
use crate::qdisc::{self, Qdisc, QdiscCtx};
use crate::results::*;
use crate::rng::{self, SimRng};
use crate::source::UdpSource;
use crate::tcp::{TcpReceiver, TcpSender};
use crate::time::{secs, tx_time, Time, NS_PER_MS, NS_PER_US};

enum Endpoints {
    Tcp { sender: TcpSender, receiver: TcpReceiver },
    Udp { source: UdpSource, delivered_bytes: u64 },
}

struct Flow {
    ends: Endpoints,
    fwd_delay: u64,
    rev_delay: u64,
    start: Time,
    stop: Time,
    base_rtt: u64,
    /// When the sender's NIC is free again.
    tx_nic_free: Time,
    /// When the receiver's NIC is free again (ACK serialisation).
    rx_nic_free: Time,
    /// Pending timer events (lazy: stale ones are ignored).
    sender_timer_at: Option<Time>,
    receiver_timer_at: Option<Time>,
}

/// Whole-run packet accounting.
#[derive(Default)]
struct Counts {
    sent: u64,
    delivered: u64,
    dropped: u64,
    data: u64,
    acks: u64,
}

/// One simulation run.
pub struct Simulation {
    cfg: ScenarioConfig,
    events: EventQueue,
    shaper: Shaper,
    qdisc: Box<dyn Qdisc<Packet>>,
    qdisc_rng: SimRng,
    qdisc_timer_at: Option<Time>,
    shaper_wake_at: Option<Time>,
    dropped_buf: Vec<Packet>,
    marked_buf: Vec<u32>,
    flows: Vec<Flow>,
    out: Vec<Packet>,
    rec: Recorder,
    counts: Counts,
    next_id: u64,
    access_rate: u64,
    end: Time,
    finished: bool,
}

impl Simulation {
    pub fn new(cfg: &ScenarioConfig) -> Result<Self, String> {
        let end = cfg.duration_ns;
        let mut jitter = rng::stream(cfg.seed, rng::Stream::StartJitter);
        let mut flows = Vec::with_capacity(cfg.flows.len());
        for (i, fc) in cfg.flows.iter().enumerate() {
            let path = fc.path();
            let start = path.start_ns + jitter.below_inclusive(cfg.start_jitter_ns);
            let stop = path.stop_ns.unwrap_or(end).min(end);
            let ends = match fc {
                FlowConfig::Tcp(t) => {
                    let cc =
                        crate::cc::build(&t.cc, t.cc_params.as_ref()).map_err(|e| format!("flows[{i}].cc: {e}"))?;
                    Endpoints::Tcp {
                        sender: TcpSender::new(i as u32, t, cc, stop),
                        receiver: TcpReceiver::new(
                            i as u32,
                            t.delayed_ack,
                            t.receiver_ecn,
                            t.ecn_option,
                            t.receiver_cc.as_deref().unwrap_or("cubic"),
                        ),
                    }
                }
                FlowConfig::Udp(u) => Endpoints::Udp { source: UdpSource::new(i as u32, u), delivered_bytes: 0 },
            };
            flows.push(Flow {
                ends,
                fwd_delay: path.fwd_delay(),
                rev_delay: path.rev_delay(),
                start,
                stop,
                base_rtt: path.rtt_ns,
                tx_nic_free: 0,
                rx_nic_free: 0,
                sender_timer_at: None,
                receiver_timer_at: None,
            });
        }
        // Rough trace capacity: packets the bottleneck can carry in the run.
        let trace_cap = if cfg.trace_sojourn {
            (cfg.bottleneck.rate_bps as u128 * cfg.duration_ns as u128 / 8 / 1_000_000_000 / 1000) as usize
        } else {
            0
        };
        let mut events = EventQueue::with_capacity(4096);
        for (i, f) in flows.iter().enumerate() {
            if f.start < end {
                events.push(f.start, Action::FlowStart { flow: i as u32 });
            }
        }
        events.push(cfg.bin_ns.min(end), Action::Sample);
        let mut qdisc_rng = rng::stream(cfg.seed, rng::Stream::Qdisc);
        let qdisc = qdisc::build(&cfg.bottleneck.qdisc, &mut qdisc_rng);
        let n_classes = qdisc.class_names().len();
        let mut sim = Simulation {
            cfg: cfg.clone(),
            events,
            shaper: Shaper::new(cfg.bottleneck.rate_bps, cfg.bottleneck.burst_bytes),
            qdisc,
            qdisc_rng,
            qdisc_timer_at: None,
            shaper_wake_at: None,
            dropped_buf: Vec::with_capacity(256),
            marked_buf: Vec::with_capacity(256),
            rec: Recorder::new(flows.len(), n_classes, end, cfg.bin_ns, cfg.warmup_ns, cfg.trace_sojourn, trace_cap),
            flows,
            out: Vec::with_capacity(256),
            counts: Counts::default(),
            next_id: 0,
            access_rate: cfg.bottleneck.access_rate_bps,
            end,
            finished: false,
        };
        sim.arm_qdisc_timer();
        Ok(sim)
    }

    /// Run until the configured duration.
    pub fn run(&mut self) {
        while let Some(t) = self.events.peek_time() {
            if t > self.end {
                break;
            }
            let (now, action) = self.events.pop().expect("peeked");
            self.dispatch(now, action);
        }
        self.finished = true;
    }

    fn dispatch(&mut self, now: Time, action: Action) {
        match action {
            Action::FlowStart { flow } => self.on_flow_start(now, flow),
            Action::ArriveBottleneck(pkt) => self.on_arrive_bottleneck(now, pkt),
            Action::ShaperWake => {
                if self.shaper_wake_at == Some(now) {
                    self.shaper_wake_at = None;
                    self.try_send(now);
                }
            }
            Action::QdiscTimer => {
                if self.qdisc_timer_at == Some(now) {
                    self.qdisc_timer_at = None;
                    let mut ctx = QdiscCtx {
                        rng: &mut self.qdisc_rng,
                        dropped: &mut self.dropped_buf,
                        marked: &mut self.marked_buf,
                    };
                    self.qdisc.on_timer(now, &mut ctx);
                    self.drain_qdisc_reports(now);
                    self.arm_qdisc_timer();
                    self.try_send(now);
                }
            }
            Action::ArriveReceiver(pkt) => self.on_arrive_receiver(now, pkt),
            Action::ArriveSender(pkt) => self.on_arrive_sender(now, pkt),
            Action::SenderTimer { flow } => {
                let f = &mut self.flows[flow as usize];
                if f.sender_timer_at == Some(now) {
                    f.sender_timer_at = None;
                    if let Endpoints::Tcp { sender, .. } = &mut f.ends {
                        sender.on_timer(now, &mut self.out);
                    }
                    self.flush_sender(now, flow);
                }
            }
            Action::ReceiverTimer { flow } => {
                let f = &mut self.flows[flow as usize];
                if f.receiver_timer_at == Some(now) {
                    f.receiver_timer_at = None;
                    if let Endpoints::Tcp { receiver, .. } = &mut f.ends {
                        receiver.on_timer(now, &mut self.out);
                    }
                    self.flush_receiver(now, flow);
                }
            }
            Action::UdpSend { flow } => {
                let f = &mut self.flows[flow as usize];
                if now < f.stop {
                    if let Endpoints::Udp { source, .. } = &mut f.ends {
                        let next = source.send(now, &mut self.out);
                        self.events.push(next, Action::UdpSend { flow });
                    }
                    self.flush_sender(now, flow);
                }
            }
            Action::Sample => self.on_sample(now),
        }
    }

    fn on_flow_start(&mut self, now: Time, flow: u32) {
        let f = &mut self.flows[flow as usize];
        match &mut f.ends {
            Endpoints::Tcp { sender, .. } => {
                sender.start(now, &mut self.out);
                self.flush_sender(now, flow);
            }
            Endpoints::Udp { .. } => self.events.push(now, Action::UdpSend { flow }),
        }
    }

    /// Put the packets the sender of `flow` produced on its NIC and the forward path,
    /// then re-arm its timer.
    fn flush_sender(&mut self, now: Time, flow: u32) {
        let fi = flow as usize;
        let mut drain = std::mem::take(&mut self.out);
        for mut pkt in drain.drain(..) {
            pkt.id = self.next_id;
            self.next_id += 1;
            pkt.sent_ts = now;
            self.counts.sent += 1;
            match pkt.kind {
                PacketKind::Data | PacketKind::Udp => self.counts.data += 1,
                _ => self.counts.acks += 1,
            }
            let f = &mut self.flows[fi];
            let depart = now.max(f.tx_nic_free) + tx_time(pkt.wire_len as u64, self.access_rate);
            f.tx_nic_free = depart;
            let inject = match &f.ends {
                Endpoints::Tcp { sender, .. } => pkt.kind == PacketKind::Data && sender.should_inject_drop(&pkt),
                _ => false,
            };
            if inject {
                // Drop injection (tests): lost on the way, before the bottleneck.
                self.counts.dropped += 1;
                continue;
            }
            self.events.push(depart + f.fwd_delay, Action::ArriveBottleneck(pkt));
        }
        self.out = drain;
        self.arm_sender_timer(fi);
    }

    /// Send the receiver's ACKs over the reverse path, then re-arm its timer.
    fn flush_receiver(&mut self, now: Time, flow: u32) {
        let fi = flow as usize;
        let mut drain = std::mem::take(&mut self.out);
        for mut pkt in drain.drain(..) {
            pkt.id = self.next_id;
            self.next_id += 1;
            pkt.sent_ts = now;
            self.counts.sent += 1;
            self.counts.acks += 1;
            let f = &mut self.flows[fi];
            let depart = now.max(f.rx_nic_free) + tx_time(pkt.wire_len as u64, self.access_rate);
            f.rx_nic_free = depart;
            self.events.push(depart + f.rev_delay, Action::ArriveSender(pkt));
        }
        self.out = drain;
        let f = &mut self.flows[fi];
        if let Endpoints::Tcp { receiver, .. } = &f.ends {
            if let Some(t) = receiver.next_timer() {
                if f.receiver_timer_at.is_none_or(|s| t < s) {
                    f.receiver_timer_at = Some(t);
                    self.events.push(t, Action::ReceiverTimer { flow });
                }
            }
        }
    }

    fn arm_sender_timer(&mut self, fi: usize) {
        let f = &mut self.flows[fi];
        if let Endpoints::Tcp { sender, .. } = &f.ends {
            if let Some(t) = sender.next_timer() {
                if f.sender_timer_at.is_none_or(|s| t < s) {
                    f.sender_timer_at = Some(t);
                    self.events.push(t, Action::SenderTimer { flow: fi as u32 });
                }
            }
        }
    }

    fn on_arrive_bottleneck(&mut self, now: Time, pkt: Packet) {
        self.rec.bin_arrivals += 1;
        let mut ctx =
            QdiscCtx { rng: &mut self.qdisc_rng, dropped: &mut self.dropped_buf, marked: &mut self.marked_buf };
        self.qdisc.enqueue(pkt, now, &mut ctx);
        self.drain_qdisc_reports(now);
        self.try_send(now);
        self.arm_qdisc_timer();
    }

    fn drain_qdisc_reports(&mut self, now: Time) {
        for p in self.dropped_buf.drain(..) {
            self.counts.dropped += 1;
            self.rec.on_drop(now, p.flow);
        }
        for flow in self.marked_buf.drain(..) {
            self.rec.on_mark(now, flow);
        }
    }

    fn arm_qdisc_timer(&mut self) {
        if let Some(t) = self.qdisc.next_timer() {
            if self.qdisc_timer_at.is_none_or(|s| t < s) {
                self.qdisc_timer_at = Some(t);
                self.events.push(t, Action::QdiscTimer);
            }
        }
    }

    /// The HTB dequeue loop: while the class has tokens and the qdisc has packets,
    /// dequeue and transmit; otherwise wait for tokens (aqm.md §8.3–8.4).
    fn try_send(&mut self, now: Time) {
        if self.shaper_wake_at.is_some() {
            return; // the watchdog will dequeue
        }
        loop {
            if self.qdisc.is_empty() {
                return;
            }
            if !self.shaper.can_send(now) {
                let t = self.shaper.next_send_time(now);
                self.shaper_wake_at = Some(t);
                self.events.push(t, Action::ShaperWake);
                return;
            }
            let mut ctx =
                QdiscCtx { rng: &mut self.qdisc_rng, dropped: &mut self.dropped_buf, marked: &mut self.marked_buf };
            let pkt = self.qdisc.dequeue(now, &mut ctx);
            self.drain_qdisc_reports(now);
            let Some(pkt) = pkt else { return };
            self.shaper.charge(now, pkt.wire_len);
            self.rec.on_dequeue(now, pkt.flow, pkt.qclass, pkt.wire_len, now - pkt.enqueue_ts);
            // The bottleneck→receiver hop has no delay: deliver now.
            self.on_arrive_receiver(now, pkt);
        }
    }

    fn on_arrive_receiver(&mut self, now: Time, pkt: Packet) {
        self.counts.delivered += 1;
        let fi = pkt.flow as usize;
        match &mut self.flows[fi].ends {
            Endpoints::Tcp { receiver, .. } => {
                receiver.on_packet(&pkt, now, &mut self.out);
                self.flush_receiver(now, pkt.flow);
            }
            Endpoints::Udp { delivered_bytes, .. } => *delivered_bytes += pkt.payload as u64,
        }
    }

    fn on_arrive_sender(&mut self, now: Time, pkt: Packet) {
        self.counts.delivered += 1;
        let fi = pkt.flow as usize;
        if let Endpoints::Tcp { sender, .. } = &mut self.flows[fi].ends {
            sender.on_packet(&pkt, now, &mut self.out);
            self.flush_sender(now, pkt.flow);
        }
    }

    fn cumulative(&self, fi: usize) -> FlowCumulative {
        match &self.flows[fi].ends {
            Endpoints::Tcp { sender, receiver } => FlowCumulative {
                bytes_delivered: receiver.bytes_delivered,
                retransmits: sender.stats.retransmits,
                rtt_sum_us: sender.stats.rtt_sum_us,
                rtt_samples: sender.stats.rtt_samples,
                ce_packets: receiver.ce_packets,
                segments_sent: sender.stats.data_segments_sent,
                payload_bytes_sent: sender.stats.payload_bytes_sent,
            },
            Endpoints::Udp { delivered_bytes, .. } => {
                FlowCumulative { bytes_delivered: *delivered_bytes, ..Default::default() }
            }
        }
    }

    /// End of a bin: close every series' current value.
    fn on_sample(&mut self, now: Time) {
        let bin_start = self.rec.bin_index as u64 * self.rec.bin_ns;
        let width_s = secs(now - bin_start).max(1e-12);
        let mbps = |bytes: u64| bytes as f64 * 8.0 / width_s / 1e6;
        for fi in 0..self.flows.len() {
            let cum = self.cumulative(fi);
            let prev = self.rec.flow_prev[fi];
            let acc = self.rec.flow_acc[fi];
            let (srtt_ms, cwnd, alpha, pacing_mbps) = match &self.flows[fi].ends {
                Endpoints::Tcp { sender, .. } => {
                    let s = sender.srtt_us();
                    (
                        if s > 0 { s as f64 / 1000.0 } else { f64::NAN },
                        sender.cwnd() as f64,
                        sender.cc_alpha().unwrap_or(f64::NAN),
                        sender.tp.pacing_rate as f64 * 8.0 / 1e6,
                    )
                }
                _ => (f64::NAN, f64::NAN, f64::NAN, f64::NAN),
            };
            let segs = cum.segments_sent - prev.segments_sent;
            let rtt_n = cum.rtt_samples - prev.rtt_samples;
            let series = &mut self.rec.flow_series[fi];
            series.goodput_mbps.push(mbps(cum.bytes_delivered - prev.bytes_delivered));
            series.throughput_mbps.push(mbps(acc.bottleneck_bytes));
            series.srtt_ms.push(srtt_ms);
            series.rtt_ms.push(if rtt_n > 0 {
                (cum.rtt_sum_us - prev.rtt_sum_us) as f64 / rtt_n as f64 / 1000.0
            } else {
                f64::NAN
            });
            series.cwnd.push(cwnd);
            series.alpha.push(alpha);
            series.pacing_rate_mbps.push(pacing_mbps);
            series.payload_bytes.push(if segs > 0 {
                (cum.payload_bytes_sent - prev.payload_bytes_sent) as f64 / segs as f64
            } else {
                f64::NAN
            });
            series.ce_packets.push(cum.ce_packets - prev.ce_packets);
            series.retransmits.push(cum.retransmits - prev.retransmits);
            series.drops.push(acc.drops);
            series.marks.push(acc.marks);
            // iperf3-like srtt sampling for the summary's mean srtt.
            if bin_start >= self.rec.warmup && srtt_ms.is_finite() && now > self.flows[fi].start {
                self.rec.flow_srtt_sum[fi] += srtt_ms;
                self.rec.flow_srtt_n[fi] += 1;
            }
            self.rec.flow_prev[fi] = cum;
            self.rec.flow_acc[fi] = Default::default();
            if now <= self.rec.warmup {
                self.rec.flow_at_warmup[fi] = cum;
            }
        }
        let rate = self.shaper.rate_bps() as f64;
        let b = &mut self.rec.bottleneck_series;
        b.utilisation.push(self.rec.bin_bytes as f64 * 8.0 / width_s / rate);
        b.sojourn_ms.push(if self.rec.bin_sojourn_n > 0 {
            self.rec.bin_sojourn_sum_ns as f64 / self.rec.bin_sojourn_n as f64 / NS_PER_MS as f64
        } else {
            f64::NAN
        });
        let st = self.qdisc.stats();
        b.backlog_bytes.push(st.backlog_bytes);
        b.backlog_packets.push(st.backlog_packets);
        b.drops.push(self.rec.bin_drops);
        b.marks.push(self.rec.bin_marks);
        b.arrivals.push(self.rec.bin_arrivals);
        self.rec.bin_bytes = 0;
        self.rec.bin_sojourn_sum_ns = 0;
        self.rec.bin_sojourn_n = 0;
        self.rec.bin_drops = 0;
        self.rec.bin_marks = 0;
        self.rec.bin_arrivals = 0;
        self.rec.bin_index += 1;
        if now < self.end {
            self.events.push((now + self.rec.bin_ns).min(self.end), Action::Sample);
        }
    }

    /// Packets still inside the network (events and the qdisc).
    fn in_flight(&self) -> u64 {
        self.events.packets_in_flight() + self.qdisc.len() as u64
    }

    /// Assemble the results (call after `run`).
    pub fn results(&self) -> RunResults {
        let window_s = secs(self.end - self.cfg.warmup_ns);
        let mut flows = Vec::with_capacity(self.flows.len());
        for (fi, f) in self.flows.iter().enumerate() {
            let cum = self.cumulative(fi);
            let w = self.rec.flow_at_warmup[fi];
            let goodput = (cum.bytes_delivered - w.bytes_delivered) as f64 * 8.0 / window_s / 1e6;
            let srtt_n = self.rec.flow_srtt_n[fi];
            let mean_srtt = if srtt_n > 0 { self.rec.flow_srtt_sum[fi] / srtt_n as f64 } else { f64::NAN };
            let base_rtt_ms = f.base_rtt as f64 / NS_PER_MS as f64;
            let mut s = FlowSummary {
                id: fi as u32,
                start_s: secs(f.start),
                base_rtt_ms,
                goodput_mbps: goodput,
                throughput_mbps: self.rec.flow_window_bytes[fi] as f64 * 8.0 / window_s / 1e6,
                mean_srtt_ms: mean_srtt,
                queuing_delay_ms: mean_srtt - base_rtt_ms,
                bytes_delivered: cum.bytes_delivered,
                drops: self.rec.flow_drops[fi],
                marks: self.rec.flow_marks[fi],
                ..Default::default()
            };
            match &f.ends {
                Endpoints::Tcp { sender, receiver } => {
                    let st = &sender.stats;
                    s.kind = "tcp".into();
                    s.cc = sender.cc_name().into();
                    s.mean_rtt_ms = if st.rtt_samples > 0 {
                        st.rtt_sum_us as f64 / st.rtt_samples as f64 / 1000.0
                    } else {
                        f64::NAN
                    };
                    s.retransmits = st.retransmits;
                    s.rto_count = st.rto_count;
                    s.tlp_count = st.tlp_count;
                    s.recoveries = st.recoveries;
                    s.packets_sent = st.data_segments_sent;
                    s.acks_sent = receiver.acks_sent;
                    s.fct_s = st.completed_at.map(|t| secs(t - f.start));
                    s.final_cwnd = sender.cwnd();
                    s.ecn_mode = match sender.ecn_mode() {
                        crate::tcp::ecn::EcnMode::Off => "off",
                        crate::tcp::ecn::EcnMode::Rfc3168 => "rfc3168",
                        crate::tcp::ecn::EcnMode::AccEcn => "accecn",
                    }
                    .into();
                    s.ce_packets = receiver.ce_packets;
                    s.ce_bytes = receiver.ce_bytes;
                    let n = st.data_segments_sent as f64;
                    s.mean_payload_bytes = st.payload_bytes_sent as f64 / n;
                    s.payload_sd_bytes = (st.payload_sq_sum as f64 / n - s.mean_payload_bytes.powi(2)).max(0.0).sqrt();
                    s.mean_pacing_rate_mbps = st.pacing_rate_sum as f64 / n * 8.0 / 1e6;
                    if st.data_segments_sent == 0 {
                        (s.mean_payload_bytes, s.payload_sd_bytes, s.mean_pacing_rate_mbps) =
                            (f64::NAN, f64::NAN, f64::NAN);
                    }
                    s.acks_per_packet = if receiver.segments_received > 0 {
                        receiver.acks_sent as f64 / receiver.segments_received as f64
                    } else {
                        f64::NAN
                    };
                }
                Endpoints::Udp { source, .. } => {
                    s.kind = "udp".into();
                    s.cc = "udp".into();
                    s.mean_srtt_ms = f64::NAN;
                    s.queuing_delay_ms = f64::NAN;
                    s.mean_rtt_ms = f64::NAN;
                    s.packets_sent = source.datagrams_sent;
                }
            }
            s.goodput_efficiency = if s.throughput_mbps > 0.0 { s.goodput_mbps / s.throughput_mbps } else { f64::NAN };
            flows.push(s);
        }
        let goodputs: Vec<f64> = flows.iter().map(|f| f.goodput_mbps).collect();
        let jain = jain_index(&goodputs);
        let st = self.qdisc.stats();
        let in_flight = self.in_flight();
        RunResults {
            duration_s: secs(self.end),
            warmup_s: secs(self.cfg.warmup_ns),
            bin_s: secs(self.cfg.bin_ns),
            seed: self.cfg.seed,
            flows,
            bottleneck: BottleneckSummary {
                utilisation: self.rec.window_bytes as f64 * 8.0 / window_s / self.shaper.rate_bps() as f64,
                sojourn_ms: self.rec.sojourn.stats_ms(),
                drops: self.rec.window_drops,
                marks: self.rec.window_marks,
                sojourn_by_class: self
                    .qdisc
                    .class_names()
                    .iter()
                    .zip(self.rec.class_sojourn.iter())
                    .map(|(name, h)| ClassSojourn { class: name.to_string(), sojourn_ms: h.stats_ms() })
                    .collect(),
                qdisc: QdiscStatsOut {
                    kind: self.qdisc.kind().into(),
                    sent_bytes: st.sent_bytes,
                    sent_packets: st.sent_packets,
                    drops: st.drops,
                    overlimits: st.overlimits,
                    requeues: st.requeues,
                    marks: st.marks,
                    backlog_bytes: st.backlog_bytes,
                    backlog_packets: st.backlog_packets,
                    maxq_packets: st.maxq_packets,
                    extra: self.qdisc.extra_stats().into_iter().map(|(k, v)| (k.to_string(), v)).collect(),
                },
            },
            packets: PacketCounts {
                sent: self.counts.sent,
                delivered: self.counts.delivered,
                dropped: self.counts.dropped,
                in_flight,
                data: self.counts.data,
                acks: self.counts.acks,
            },
            events: self.events.processed(),
            time_s: (0..self.rec.bin_index).map(|i| secs(i as u64 * self.rec.bin_ns)).collect(),
            flow_series: self.rec.flow_series.clone(),
            bottleneck_series: self.rec.bottleneck_series.clone(),
            sojourn_trace: self.rec.trace.clone(),
            jain_index: jain,
        }
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
        Ok(())
    }
}

/// Jain's fairness index of `x` (1 = perfectly fair).
pub fn jain_index(x: &[f64]) -> f64 {
    let n = x.len() as f64;
    let s: f64 = x.iter().sum();
    let s2: f64 = x.iter().map(|v| v * v).sum();
    if s2 == 0.0 {
        return f64::NAN;
    }
    s * s / (n * s2)
}

#[allow(dead_code)]
const _: u64 = NS_PER_US;
