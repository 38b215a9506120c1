//! The forwarding loop.
//!
//! Forward path of flow `i`: sender TUN → propagation `fwd_delay` (a [`DelayFifo`])
//! → the bottleneck (HTB class + qdisc) → receiver TUN (the bottleneck→receiver hop
//! has no delay, as in the engine's dumbbell). Reverse path: receiver TUN →
//! propagation `rtt − fwd_delay` → the reverse bottleneck if the scenario has one →
//! sender TUN. UDP flows are generated here, entering the forward path as if read
//! from the sender.
//!
//! Timing is event-driven on the wall clock: every scheduled action (a delay line's
//! head, the shaper's next departure, a qdisc timer, a UDP send) has a due time
//! in ns since t0; the loop runs every action whose time has come in due-time order,
//! each with `now` = its due time (so the shaper's and the qdiscs' arithmetic is
//! exact even when the loop is a few µs late, as Mahimahi's link shells compute
//! departures from the trace, not from when they woke), then reads what the TUNs
//! have (stamped with the real time), then sleeps until the next due time
//! (`clock::Waiter`). The lateness of every departure written to a TUN (real write
//! time − due time) is the emulator's departure error.

use crate::clock::{self, Waiter};
use crate::link::{DelayFifo, ShapedQueue};
use crate::measure::Measure;
use crate::packet::{write_udp, EmuPacket, Pool, BUF_LEN, L2_OVERHEAD};
use crate::tap::{Lateness, Tap};
use l4slab_core::config::{FlowConfig, ScenarioConfig};
use l4slab_core::qdisc::{Ecn, QdiscStats};
use l4slab_core::rng::{stream, Stream};
use l4slab_core::time::{tx_time, Time};
use l4slab_core::trace::histogram::DelayHistogram;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicBool, Ordering};

/// Buffers in the pool: enough for a 10 240-packet fq_codel backlog plus what the
/// delay lines hold at 1 Gbit/s × 100 ms (≈ 8 300 full frames). 2 KiB each: 40 MiB.
pub const POOL_PACKETS: usize = 20_480;
/// Packets read from one TUN per pass (so one busy flow cannot starve the timers).
const READ_BURST: usize = 64;
/// Longest sleep without a deadline: the stop flag is checked at least this often.
const MAX_SLEEP_NS: u64 = 20_000_000;
/// Destination port of the emulator's UDP datagrams (the discard service, RFC 863).
pub const UDP_DPORT: u16 = 9;
/// Source port of flow `i`'s UDP datagrams: `UDP_SPORT_BASE + i`.
pub const UDP_SPORT_BASE: u16 = 40_000;

/// One flow's two TUNs (with their taps) and addresses.
pub struct FlowPorts {
    pub sender_fd: RawFd,
    pub receiver_fd: RawFd,
    pub sender_addr: [u8; 4],
    pub receiver_addr: [u8; 4],
    pub sender_tap: Tap,
    pub receiver_tap: Tap,
}

struct FlowState {
    io: FlowPorts,
    fwd_in: DelayFifo,
    rev_in: DelayFifo,
    udp: Option<UdpSource>,
    /// When the first packet written to the sender since its last data segment was
    /// read was written (ns since t0): the start of the sender host's response time.
    ack_since: Option<Time>,
    /// When the last packet written to the receiver since its last ACK was read was
    /// written (ns since t0): the start of the receiver host's ACK time.
    data_last: Option<Time>,
    /// The latest arrival time given to a packet from the sender / the receiver (ns
    /// since t0): kernel stamps of concurrent transmits may cross; the lines stay FIFO.
    fwd_last: Time,
    rev_last: Time,
}

/// A constant-rate UDP source (the engine's `UdpFlowConfig`: `rate_bps` counted on
/// L2 frames, `payload_bytes` per datagram, one ECN codepoint).
struct UdpSource {
    next: Time,
    stop: Time,
    interval: u64,
    payload: usize,
    ecn: Ecn,
    id: u16,
}

/// The emulator's own error and load.
#[derive(Debug, Default, Clone)]
pub struct LoopStats {
    pub departures: u64,
    pub err_p50_ns: u64,
    pub err_p99_ns: u64,
    pub err_max_ns: u64,
    pub cpu_busy_fraction: f64,
    pub wall_ns: u64,
    pub pool_drops: u64,
    pub rejected: u64,
    pub write_errors: u64,
    /// Departures more than [`LATE_NS`] after their due time.
    pub late: u64,
    pub stopped_by_signal: bool,
    /// Where a late departure's time went: the longest wake-up from a `ppoll` timeout
    /// past the time asked for, the longest TUN write, the longest pass reading the
    /// TUNs (ns), and when the worst departure was due (ns since t0).
    pub wake_late_max_ns: u64,
    pub write_max_ns: u64,
    pub read_pass_max_ns: u64,
    pub err_max_at_ns: u64,
    /// Host stalls: runs of consecutive departures more than [`LATE_NS`] late, and the
    /// sum of each run's worst lateness (ns): how long the emulated link stood still.
    pub stalls: u64,
    pub stalled_ns: u64,
    /// Whether the loop ran in `SCHED_FIFO` (`clock::try_realtime`).
    pub realtime: bool,
    /// The senders' response time: from the first packet (an ACK) written to a sender's
    /// TUN after its last data segment was read, to the read of its next data segment.
    /// For an ACK-clocked bulk sender that is the sending host's own latency (softirq,
    /// socket backlog while the application holds the socket lock, `net/core/sock.c:
    /// __release_sock`) plus this loop's read latency: a few µs on an idle host; ms on a
    /// loaded one, where ACKs pile up and the sender then releases their segments in one
    /// burst. Also counted after ACKs that release nothing (recovery, a full window), so
    /// the upper quantiles include those waits.
    pub response_count: u64,
    pub response_p50_ns: u64,
    pub response_p90_ns: u64,
    pub response_p99_ns: u64,
    /// The receivers' ACK time: from the last packet written to a receiver's TUN before
    /// it sent something back, to the read of that packet (an ACK). An ACK the receiver
    /// sends at once from the emulator's own write (`tun_get_user` → softirq →
    /// `tcp_v4_rcv`, every second full segment: `__tcp_ack_snd_check`) takes µs; one held
    /// in the socket backlog while the reading application owns the socket, a delayed
    /// ACK, or a window update sent when the application reads (`tcp_cleanup_rbuf`)
    /// takes longer.
    pub ack_time_count: u64,
    pub ack_time_p50_ns: u64,
    pub ack_time_p90_ns: u64,
    pub ack_time_p99_ns: u64,
    /// How late the loop read packets after they reached their TUN (`tap.rs`: the tap's
    /// kernel stamp to the read), and how many packets had a stamp / had none (kept
    /// the read time). Arrivals are stamped with the kernel's time, so this lateness is
    /// not in the queue's sojourn; it is the part of a host's response and ACK times
    /// above that the loop itself adds.
    pub arrival_stamped: u64,
    pub arrival_unstamped: u64,
    pub arrival_late_p50_ns: u64,
    pub arrival_late_p99_ns: u64,
    pub arrival_late_max_ns: u64,
}

/// A departure later than this fails the run (`emu::kept_up`): 5 ms, CoDel's target
/// (RFC 8289 §4.3), the smallest queueing delay a classic AQM aims for, and a quarter of
/// the 20 ms base RTT most emulator examples use. A stall of d delays every packet
/// behind it by d for the hosts (their RTT samples, their ACK clock); the qdiscs'
/// decisions and the reported sojourn use due times, so the L queue's 1 ms scale is
/// not what a stall distorts. Measured on the project's 2-core machine at load average
/// 17 (a 10-s DualPI2 run, kernel CUBIC and a UDP program): maxima of 1.8-2.0 ms in
/// every run; host stalls of 10-43 ms (a user program at real-time priority) exceed it.
pub const LATE_NS: u64 = 5_000_000;

/// The forwarding state of one run.
pub struct Forwarder {
    flows: Vec<FlowState>,
    fwd: ShapedQueue,
    rev: Option<ShapedQueue>,
    pool: Pool,
    pub measure: Measure,
    err: DelayHistogram,
    err_max: u64,
    departures: u64,
    vt: Time,
    pool_drops: u64,
    rejected: u64,
    write_errors: u64,
    late: u64,
    write_max: u64,
    read_pass_max: u64,
    /// How late packets were read after reaching their TUN (`tap.rs`).
    arrival_late: Lateness,
    /// Stamp arrivals with the read time, not the tap's (`L4SLAB_EMU_READ_STAMPS`).
    read_stamps: bool,
    err_max_at: Time,
    stalls: u64,
    stalled: u64,
    /// The worst lateness of the stall in progress (0: none).
    stall_peak: u64,
    /// The senders' response time (see [`LoopStats::response_p50_ns`]).
    response: DelayHistogram,
    /// The receivers' ACK time (see [`LoopStats::ack_time_p50_ns`]).
    ack_time: DelayHistogram,
    /// When the scenario's traffic ended (`duration_ns`): the bottleneck qdisc's
    /// counters and state (`tc -s` and its extras), taken once.
    pub end_of_traffic: Option<(QdiscStats, Vec<(&'static str, f64)>)>,
    duration_ns: Time,
}

enum Action {
    FwdIn(usize),
    FwdOut,
    FwdTimer,
    RevIn(usize),
    RevOut,
    RevTimer,
    Udp(usize),
}

impl Forwarder {
    /// `commands`: flows whose packets come from the caller's own commands (nothing
    /// is generated for them, whatever their kind says).
    pub fn new(cfg: &ScenarioConfig, ports: Vec<FlowPorts>, commands: &[usize]) -> Self {
        let fwd = ShapedQueue::new(&cfg.bottleneck, stream(cfg.seed, Stream::Qdisc), POOL_PACKETS);
        let rev = cfg
            .reverse_bottleneck
            .as_ref()
            .map(|b| ShapedQueue::new(b, stream(cfg.seed, Stream::ReverseQdisc), POOL_PACKETS));
        let classes = fwd.qdisc.class_names().len();
        let flows = cfg
            .flows
            .iter()
            .zip(ports)
            .enumerate()
            .map(|(i, (fc, io))| {
                let path = fc.path();
                let udp = match fc {
                    FlowConfig::Udp(_) if commands.contains(&i) => None,
                    FlowConfig::Udp(u) => {
                        let frame = u.payload_bytes as u64 + 28 + L2_OVERHEAD as u64;
                        Some(UdpSource {
                            next: path.start_ns,
                            stop: path.stop_ns.unwrap_or(cfg.duration_ns).min(cfg.duration_ns),
                            interval: tx_time(frame, u.rate_bps).max(1),
                            payload: u.payload_bytes as usize,
                            ecn: u.ecn,
                            id: 0,
                        })
                    }
                    FlowConfig::Tcp(_) | FlowConfig::UdpPrague(_) => None,
                };
                // What a line can hold: the bottleneck rate's worth of minimum-size
                // (64 B) frames over its delay, so it never grows in the loop.
                let cap = |d: u64| {
                    let r = cfg.bottleneck.rate_bps.max(cfg.reverse_bottleneck.as_ref().map_or(0, |b| b.rate_bps));
                    ((r as u128 * d as u128 / 8 / 64 / 1_000_000_000) as usize + 256).min(POOL_PACKETS)
                };
                FlowState {
                    io,
                    fwd_in: DelayFifo::new(path.fwd_delay(), cap(path.fwd_delay())),
                    rev_in: DelayFifo::new(path.rev_delay(), cap(path.rev_delay())),
                    udp,
                    ack_since: None,
                    data_last: None,
                    fwd_last: 0,
                    rev_last: 0,
                }
            })
            .collect();
        Forwarder {
            flows,
            fwd,
            rev,
            pool: Pool::new(POOL_PACKETS),
            measure: Measure::new(cfg, classes, commands),
            err: DelayHistogram::new(),
            err_max: 0,
            departures: 0,
            vt: 0,
            pool_drops: 0,
            rejected: 0,
            write_errors: 0,
            late: 0,
            write_max: 0,
            read_pass_max: 0,
            arrival_late: Lateness::new(),
            read_stamps: std::env::var_os("L4SLAB_EMU_READ_STAMPS").is_some(),
            err_max_at: 0,
            stalls: 0,
            stalled: 0,
            stall_peak: 0,
            response: DelayHistogram::new(),
            ack_time: DelayHistogram::new(),
            end_of_traffic: None,
            duration_ns: cfg.duration_ns,
        }
    }

    /// The bottleneck queue (for its stats at the end).
    pub fn bottleneck(&self) -> &ShapedQueue {
        &self.fwd
    }

    /// The earliest pending action.
    fn next_action(&self) -> Option<(Time, Action)> {
        let mut best: Option<(Time, Action)> = None;
        let mut consider = |t: Option<Time>, a: Action| {
            if let Some(t) = t {
                if best.as_ref().is_none_or(|b| t < b.0) {
                    best = Some((t, a));
                }
            }
        };
        for (i, f) in self.flows.iter().enumerate() {
            consider(f.fwd_in.head_due(), Action::FwdIn(i));
            consider(f.rev_in.head_due(), Action::RevIn(i));
            if let Some(u) = &f.udp {
                consider((u.next < u.stop).then_some(u.next), Action::Udp(i));
            }
        }
        consider(self.fwd.next_departure(self.vt), Action::FwdOut);
        consider(self.fwd.next_timer(), Action::FwdTimer);
        if let Some(r) = &self.rev {
            consider(r.next_departure(self.vt), Action::RevOut);
            consider(r.next_timer(), Action::RevTimer);
        }
        best
    }

    /// Return dropped packets to the pool, counting forward-path drops.
    #[inline]
    fn drain_drops(&mut self, t: Time, forward: bool) {
        let q = if forward { &mut self.fwd } else { self.rev.as_mut().unwrap() };
        q.marked.clear();
        while let Some(p) = q.dropped.pop() {
            if forward {
                self.measure.on_drop(t, p.flow, p.qclass);
            } else {
                self.measure.counts.dropped += 1;
            }
            self.pool.put(p.into_buf());
        }
    }

    /// Write `p` to `fd` now; its due time was `due` (ns since t0, real clock `t0`).
    /// Returns the time it was written (ns since t0).
    #[inline]
    fn emit(&mut self, fd: RawFd, p: EmuPacket, due: Time, t0: u64) -> Time {
        let b = p.bytes();
        let before = clock::now_ns();
        // SAFETY: writing our buffer to our TUN descriptor.
        let r = unsafe { libc::write(fd, b.as_ptr() as *const libc::c_void, b.len()) };
        let after = clock::now_ns();
        self.write_max = self.write_max.max(after - before);
        let written = after - t0;
        let late = written.saturating_sub(due);
        if r < 0 {
            self.write_errors += 1;
        } else {
            self.measure.counts.delivered += 1;
        }
        self.err.record(late);
        if late > self.err_max {
            self.err_max = late;
            self.err_max_at = due;
        }
        if late > LATE_NS {
            self.late += 1;
            self.stall_peak = self.stall_peak.max(late);
        } else if self.stall_peak > 0 {
            self.end_stall();
        }
        self.departures += 1;
        self.pool.put(p.into_buf());
        written
    }

    /// The stall in progress is over: count it.
    fn end_stall(&mut self) {
        self.stalls += 1;
        self.stalled += self.stall_peak;
        self.stall_peak = 0;
    }

    /// A packet for flow `i`'s sender (an ACK) was written at `t`.
    #[inline]
    fn mark_sender_written(&mut self, i: usize, t: Time) {
        self.flows[i].ack_since.get_or_insert(t);
    }

    /// Run every action due by `now` (ns since t0), in due-time order.
    fn run_due(&mut self, now: Time, t0: u64) {
        // Bounded: each action consumes a packet or advances a timer; the bound only
        // guards against a qdisc timer that does not move.
        for _ in 0..1_000_000 {
            let Some((due, action)) = self.next_action() else { return };
            if due > now {
                return;
            }
            self.vt = self.vt.max(due);
            let t = self.vt;
            self.measure.advance(t, self.fwd.qdisc.stats());
            match action {
                Action::FwdIn(i) => {
                    let (_, p) = self.flows[i].fwd_in.pop().unwrap();
                    self.measure.on_arrival(t);
                    self.fwd.enqueue(p, t);
                    self.drain_drops(t, true);
                }
                Action::FwdOut => {
                    let p = self.fwd.dequeue(t);
                    self.drain_drops(t, true);
                    if let Some(p) = p {
                        self.measure.on_dequeue(t, &p);
                        let i = p.flow as usize;
                        let fd = self.flows[i].io.receiver_fd;
                        let w = self.emit(fd, p, t, t0);
                        self.flows[i].data_last = Some(w);
                    }
                }
                Action::FwdTimer => {
                    self.fwd.on_timer(t);
                    self.drain_drops(t, true);
                }
                Action::RevIn(i) => {
                    let (_, p) = self.flows[i].rev_in.pop().unwrap();
                    match self.rev.as_mut() {
                        Some(r) => {
                            r.enqueue(p, t);
                            self.drain_drops(t, false);
                        }
                        None => {
                            let fd = self.flows[i].io.sender_fd;
                            let w = self.emit(fd, p, t, t0);
                            self.mark_sender_written(i, w);
                        }
                    }
                }
                Action::RevOut => {
                    let p = self.rev.as_mut().unwrap().dequeue(t);
                    self.drain_drops(t, false);
                    if let Some(p) = p {
                        let i = p.flow as usize;
                        let fd = self.flows[i].io.sender_fd;
                        let w = self.emit(fd, p, t, t0);
                        self.mark_sender_written(i, w);
                    }
                }
                Action::RevTimer => {
                    self.rev.as_mut().unwrap().on_timer(t);
                    self.drain_drops(t, false);
                }
                Action::Udp(i) => self.udp_send(i, t),
            }
        }
    }

    /// One datagram of UDP flow `i` at `t`, into its forward propagation.
    fn udp_send(&mut self, i: usize, t: Time) {
        let f = &mut self.flows[i];
        let u = f.udp.as_mut().unwrap();
        u.next += u.interval;
        u.id = u.id.wrapping_add(1);
        let Some(mut buf) = self.pool.take() else {
            self.pool_drops += 1;
            return;
        };
        let n = write_udp(
            &mut buf,
            f.io.sender_addr,
            f.io.receiver_addr,
            UDP_SPORT_BASE + i as u16,
            UDP_DPORT,
            u.payload,
            u.ecn,
            u.id,
        );
        match EmuPacket::parse(buf, n, i as u16) {
            Ok(p) => {
                self.measure.on_sent(&p, t);
                f.fwd_in.push(t, p);
            }
            Err((b, _)) => self.pool.put(b),
        }
    }

    /// Read what the TUNs of every flow have (the pass began at `now`, ns since `t0`),
    /// each packet stamped with when it reached its TUN (its tap's kernel stamp, else
    /// the read).
    fn read_all(&mut self, now: Time, t0: u64) {
        for i in 0..self.flows.len() {
            for dir in [true, false] {
                for _ in 0..READ_BURST {
                    let Some(mut buf) = self.pool.take() else {
                        self.pool_drops += 1;
                        // Drain one packet into a scratch read so the TUN does not stall.
                        let mut scratch = [0u8; BUF_LEN];
                        let fd = if dir { self.flows[i].io.sender_fd } else { self.flows[i].io.receiver_fd };
                        // SAFETY: reading into a stack buffer we own.
                        let r = unsafe { libc::read(fd, scratch.as_mut_ptr() as *mut libc::c_void, BUF_LEN) };
                        if r <= 0 {
                            break;
                        }
                        continue;
                    };
                    let f = &mut self.flows[i];
                    let fd = if dir { f.io.sender_fd } else { f.io.receiver_fd };
                    // SAFETY: reading into a pool buffer we own.
                    let r = unsafe { libc::read(fd, buf.as_mut_ptr() as *mut libc::c_void, BUF_LEN) };
                    if r <= 0 {
                        self.pool.put(buf);
                        break;
                    }
                    let peer = if dir { f.io.receiver_addr } else { f.io.sender_addr };
                    // When the packet reached the TUN: the tap's kernel stamp (tap.rs).
                    let read_unix = clock::unix_ns();
                    let read = clock::now_ns().saturating_sub(t0).max(now);
                    let tap = if dir { &mut f.io.sender_tap } else { &mut f.io.receiver_tap };
                    let late = if self.read_stamps { None } else { tap.lateness(&buf[..r as usize], read_unix) };
                    let last = if dir { &mut f.fwd_last } else { &mut f.rev_last };
                    let now = match late {
                        Some(l) => {
                            self.arrival_late.record(l);
                            read.saturating_sub(l).max(*last)
                        }
                        None => read.max(*last),
                    };
                    *last = now;
                    match EmuPacket::parse(buf, r as usize, i as u16) {
                        // Only packets for the peer of this pair are forwarded.
                        Ok(p) if p.bytes()[16..20] == peer => {
                            if dir {
                                self.measure.on_sent(&p, now);
                                if p.payload > 0 {
                                    if let Some(since) = f.ack_since.take() {
                                        self.response.record(now.saturating_sub(since));
                                    }
                                }
                                f.fwd_in.push(now, p);
                            } else {
                                self.measure.on_ack(i as u16);
                                if let Some(last) = f.data_last.take() {
                                    self.ack_time.record(now.saturating_sub(last));
                                }
                                f.rev_in.push(now, p);
                            }
                        }
                        Ok(p) => {
                            self.rejected += 1;
                            self.pool.put(p.into_buf());
                        }
                        Err((b, _)) => {
                            self.rejected += 1;
                            self.pool.put(b);
                        }
                    }
                }
            }
        }
    }

    /// Packets still inside the emulator.
    pub fn in_flight(&self) -> u64 {
        let lines: usize = self.flows.iter().map(|f| f.fwd_in.len() + f.rev_in.len()).sum();
        lines as u64 + self.fwd.qdisc.len() as u64 + self.rev.as_ref().map_or(0, |r| r.qdisc.len() as u64)
    }

    /// Forward from monotonic time `t0` until `t0 + run_ns` or until `stop` is set.
    pub fn run(&mut self, t0: u64, run_ns: u64, stop: &AtomicBool) -> LoopStats {
        clock::tight_timer_slack();
        let realtime = clock::try_realtime();
        let fds: Vec<RawFd> = self.flows.iter().flat_map(|f| [f.io.sender_fd, f.io.receiver_fd]).collect();
        let mut waiter = Waiter::new(&fds);
        let cpu0 = clock::cpu_ns();
        let mut stopped = false;
        loop {
            let now = clock::now_ns().saturating_sub(t0);
            if now >= run_ns {
                break;
            }
            if stop.load(Ordering::Relaxed) {
                stopped = true;
                break;
            }
            if self.end_of_traffic.is_none() && now >= self.duration_ns {
                // Everything due up to the end of the traffic, then the counters.
                self.run_due(self.duration_ns, t0);
                self.end_of_traffic = Some((self.fwd.qdisc.stats().clone(), self.fwd.qdisc.extra_stats()));
            }
            self.run_due(now, t0);
            let before = clock::now_ns();
            self.read_all(before - t0, t0);
            let now = clock::now_ns() - t0;
            self.read_pass_max = self.read_pass_max.max(now + t0 - before);
            self.run_due(now, t0);
            let next = self.next_action().map(|(t, _)| t0 + t.min(run_ns));
            waiter.wait(next.or(Some(t0 + run_ns)), MAX_SLEEP_NS);
        }
        let wall = clock::now_ns() - t0;
        clock::normal_priority();
        if self.stall_peak > 0 {
            self.end_stall();
        }
        self.measure.counts.in_flight = self.in_flight();
        let h = self.err.stats_ms();
        let resp = self.response.stats_ms();
        let arr = self.arrival_late.hist.stats_ms();
        let (stamped, unstamped) = self
            .flows
            .iter()
            .flat_map(|f| [&f.io.sender_tap, &f.io.receiver_tap])
            .fold((0, 0), |(m, u), t| (m + t.matched, u + t.unmatched));
        let ack = self.ack_time.stats_ms();
        LoopStats {
            arrival_stamped: stamped,
            arrival_unstamped: unstamped,
            arrival_late_p50_ns: (arr.p50 * 1e6).round() as u64,
            arrival_late_p99_ns: (arr.p99 * 1e6).round() as u64,
            arrival_late_max_ns: self.arrival_late.max,
            ack_time_count: ack.count,
            ack_time_p50_ns: (ack.p50 * 1e6).round() as u64,
            ack_time_p90_ns: (ack.p90 * 1e6).round() as u64,
            ack_time_p99_ns: (ack.p99 * 1e6).round() as u64,
            response_count: resp.count,
            response_p50_ns: (resp.p50 * 1e6).round() as u64,
            response_p90_ns: (resp.p90 * 1e6).round() as u64,
            response_p99_ns: (resp.p99 * 1e6).round() as u64,
            departures: self.departures,
            err_p50_ns: (h.p50 * 1e6).round() as u64,
            err_p99_ns: (h.p99 * 1e6).round() as u64,
            err_max_ns: self.err_max,
            cpu_busy_fraction: (clock::cpu_ns() - cpu0) as f64 / wall.max(1) as f64,
            wall_ns: wall,
            pool_drops: self.pool_drops,
            rejected: self.rejected,
            write_errors: self.write_errors,
            late: self.late,
            stopped_by_signal: stopped,
            wake_late_max_ns: waiter.wake_late_max,
            write_max_ns: self.write_max,
            read_pass_max_ns: self.read_pass_max,
            err_max_at_ns: self.err_max_at,
            stalls: self.stalls,
            stalled_ns: self.stalled,
            realtime,
        }
    }
}
