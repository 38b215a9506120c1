//! `l4slab-udp-prague`: a real UDP-Prague sender and receiver over UDP sockets, driven
//! by the engine's own algorithm module (`l4slab_core::cc::udp_prague`), so the
//! simulated flow kind `udp_prague` can be checked against a real one through the
//! emulator (docs/emulator.md, "The UDP-Prague program").
//!
//! ```text
//! l4slab-udp-prague send --dst ADDR --port P --duration SECS --out FILE.json
//!                        [--max-rate MBIT] [--fps N [--frame-budget MS]] [--max-packet BYTES] [--sample SECS]
//! l4slab-udp-prague recv --bind ADDR --port P --duration SECS --out FILE.json [--sample SECS]
//! ```
//!
//! Data leave with the ECN field the algorithm gives (ECT(1), Not-ECT once the
//! receiver reports the L4S identifier bleached), set per packet with `IP_TOS`; the
//! receiver reads each datagram's field with `IP_RECVTOS` and answers every data
//! packet with the 26-byte ACK of `pkt_format.h` (its counters of packets received,
//! CE-marked and lost). Both ends stop by themselves after `--duration` seconds and
//! write their own counts as JSON. The program stays at normal priority: it never
//! asks for a real-time class (the emulator's forwarding loop must stay above it).
//!
//! Each end also measures its host (`wake_us`, `read_us`, `busy_us`, the sender's
//! `timer_late_us` in its JSON): with `SO_TIMESTAMPNS` the kernel stamps every datagram
//! as it enters the stack (`net/core/dev.c:netif_receive_skb_internal` →
//! `net_timestamp_check`; through the emulator that is inside the emulator's own TUN
//! write, `drivers/net/tun.c:tun_rx_batched`, which delivers the datagram to the socket
//! and wakes the reader in the same call, so the stamp is not late by the emulator's
//! departure error and precedes the wake-up by the IP/UDP receive path only); the time
//! from that stamp to the program's `recvmsg` is how long the datagram waited for the
//! program. `wake_us` counts only the first datagram read after the program slept in
//! `ppoll` and that arrived while it slept: the host's wake-up latency, which the
//! engine's `sender_wake_latency`/`receiver_wake_latency` model (`traffic/udp_prague.rs`,
//! `ProgramReads`). `busy_us`, per datagram read, is the time from its `recvmsg` return
//! to the program's next look at its socket (the receiver: its ACK's `sendto` returned;
//! the sender: the data that ACK released sent, the next wait begun): the engine's
//! `sender_busy_time`/`receiver_busy_time`.
//!
//! The command line is [`main_with`], shared by the `l4slab-udp-prague` binary and the
//! Python extension (`python -m l4slab._udp_prague`, the `l4slab-udp-prague` console
//! script of `pip install`), as the emulator's is.

use l4slab_core::cc::udp_prague::{
    AckMsg, DataMsg, PragueParams, PragueReceiver, PragueSender, ACK_LEN, ECN_CE, ECN_ECT0, ECN_L4S_ID, ECN_NOT_ECT,
    FRAME_HEADER_LEN, MAX_RATE, MIN_MTU, MIN_RATE,
};
use serde_json::{json, Value};
use std::net::{Ipv4Addr, SocketAddrV4, UdpSocket};
use std::os::fd::AsRawFd;

const USAGE: &str = "usage: l4slab-udp-prague send --dst ADDR --port P --duration SECS --out FILE.json \
[--max-rate MBIT] [--fps N [--frame-budget MS]] [--max-packet BYTES] [--sample SECS] [--trace FILE.csv] | \
l4slab-udp-prague recv --bind ADDR --port P --duration SECS --out FILE.json [--sample SECS] [--trace FILE.csv]";
/// Longest run: one hour.
const MAX_DURATION_S: f64 = 3600.0;
/// Largest UDP payload through a 1500-byte MTU.
const MAX_PACKET: u64 = 1472;

struct Fail(String);

fn now_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes the timespec it is given.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

fn realtime_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes the timespec it is given.
    unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Latencies of one kind: 1-µs buckets up to [`LATENCY_BUCKETS`] µs (the rest in the
/// last), count, sum and maximum; allocated once.
struct Latency {
    buckets: Vec<u64>,
    n: u64,
    sum_ns: u64,
    max_ns: u64,
}

const LATENCY_BUCKETS: usize = 50_000;
/// The distribution is written as this many quantiles (0, 0.1, ..., 100 %): fine enough
/// that the last step, from the 99.9th percentile to the maximum, holds 0.1 % of the
/// samples (a model drawing between the points spreads that much mass up to the maximum).
const QUANTILES: usize = 1001;

impl Latency {
    fn new() -> Self {
        Latency { buckets: vec![0; LATENCY_BUCKETS + 1], n: 0, sum_ns: 0, max_ns: 0 }
    }
    fn add(&mut self, ns: u64) {
        self.buckets[((ns / 1000) as usize).min(LATENCY_BUCKETS)] += 1;
        self.n += 1;
        self.sum_ns += ns;
        self.max_ns = self.max_ns.max(ns);
    }
    /// The 0, 0.1, ..., 100 % quantiles, µs: the middle of the sample's 1-µs bucket (the
    /// maximum for the top one and for any beyond the last bucket).
    fn quantiles_us(&self) -> Vec<f64> {
        let max = self.max_ns as f64 / 1000.0;
        let mut out = Vec::with_capacity(QUANTILES);
        let (mut seen, mut bucket) = (0u64, 0usize);
        for k in 0..QUANTILES {
            // The rank of quantile k: the ceil(k/1000 · n)-th sample, at least the first.
            let rank = ((k as u64 * self.n).div_ceil(QUANTILES as u64 - 1)).max(1);
            while bucket <= LATENCY_BUCKETS && seen + self.buckets[bucket] < rank {
                seen += self.buckets[bucket];
                bucket += 1;
            }
            out.push(if k + 1 == QUANTILES || bucket >= LATENCY_BUCKETS {
                max
            } else {
                (bucket as f64 + 0.5).min(max)
            });
        }
        out
    }
    /// The top step of [`quantiles_us`](Self::quantiles_us) resolved: the samples from the
    /// 99.9th percentile's rank to the maximum, as their own 0, 0.1, ..., 100 % points, µs.
    /// Without it a model drawing between the 99.9th percentile and the maximum spreads
    /// 0.1 % of its draws up to one rare sample (a program's first reads, its code and
    /// buffers not yet in memory, take ms); with it that sample keeps its own weight.
    fn tail_quantiles_us(&self) -> Vec<f64> {
        let max = self.max_ns as f64 / 1000.0;
        let (top, k) = (QUANTILES as u64 - 1, QUANTILES as u64 - 2);
        let lo = ((k * self.n).div_ceil(top)).max(1);
        let span = self.n - lo;
        let mut out = Vec::with_capacity(QUANTILES);
        let (mut seen, mut bucket) = (0u64, 0usize);
        for j in 0..QUANTILES as u64 {
            let rank = lo + (j * span).div_ceil(top);
            while bucket <= LATENCY_BUCKETS && seen + self.buckets[bucket] < rank {
                seen += self.buckets[bucket];
                bucket += 1;
            }
            out.push(if j == top || bucket >= LATENCY_BUCKETS { max } else { (bucket as f64 + 0.5).min(max) });
        }
        out
    }
    fn json(&self) -> Value {
        if self.n == 0 {
            return json!({"count": 0});
        }
        let q = self.quantiles_us();
        json!({
            "count": self.n, "mean": self.sum_ns as f64 / self.n as f64 / 1000.0,
            "p50": q[500], "p90": q[900], "p99": q[990], "max": q[1000], "quantiles": q,
            "tail": self.tail_quantiles_us(),
        })
    }
}

/// The algorithm's clock: µs since `t0`, 1 at `t0` (the reference's `Now()`).
fn clock_us(now: u64, t0: u64) -> i32 {
    ((now - t0) / 1000 + 1) as u32 as i32
}

/// Wait until `fd` is readable or `deadline` (CLOCK_MONOTONIC ns) passes; true if readable.
fn wait_readable(fd: i32, deadline: u64) -> bool {
    let now = now_ns();
    let left = deadline.saturating_sub(now);
    let ts = libc::timespec { tv_sec: (left / 1_000_000_000) as libc::time_t, tv_nsec: (left % 1_000_000_000) as _ };
    let mut p = libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
    // SAFETY: one valid pollfd and a timespec on the stack.
    let n = unsafe { libc::ppoll(&mut p, 1, &ts, std::ptr::null()) };
    n > 0 && p.revents & libc::POLLIN != 0
}

fn set_int_opt(fd: i32, name: libc::c_int, v: libc::c_int) -> Result<(), Fail> {
    set_opt(fd, libc::IPPROTO_IP, name, v)
}

fn set_opt(fd: i32, level: libc::c_int, name: libc::c_int, v: libc::c_int) -> Result<(), Fail> {
    // SAFETY: setsockopt with a c_int value of the right size.
    let r = unsafe {
        libc::setsockopt(
            fd,
            level,
            name,
            &v as *const libc::c_int as *const libc::c_void,
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if r != 0 {
        return Err(Fail(format!("setsockopt: {}", std::io::Error::last_os_error())));
    }
    Ok(())
}

/// The socket's outgoing ECN field, set only when it changes.
struct Tos {
    fd: i32,
    current: Option<u8>,
}

impl Tos {
    fn set(&mut self, ecn: u8) -> Result<(), Fail> {
        if self.current != Some(ecn) {
            set_int_opt(self.fd, libc::IP_TOS, ecn as libc::c_int)?;
            self.current = Some(ecn);
        }
        Ok(())
    }
}

/// A datagram read: its length, the IP ECN field (from the `IP_TOS` control message),
/// the source and the kernel's arrival stamp (`SCM_TIMESTAMPNS`, CLOCK_REALTIME ns).
struct Read {
    len: usize,
    ecn: u8,
    from: SocketAddrV4,
    stamp_ns: Option<u64>,
}

/// Receive one datagram without blocking.
fn recv_with_tos(fd: i32, buf: &mut [u8]) -> Option<Read> {
    let mut iov = libc::iovec { iov_base: buf.as_mut_ptr() as *mut libc::c_void, iov_len: buf.len() };
    let mut cmsg = [0u64; 8];
    // SAFETY: zeroed sockaddr_in and msghdr are valid initial values.
    let mut src: libc::sockaddr_in = unsafe { std::mem::zeroed() };
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_name = &mut src as *mut libc::sockaddr_in as *mut libc::c_void;
    msg.msg_namelen = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = cmsg.as_mut_ptr() as *mut libc::c_void;
    msg.msg_controllen = std::mem::size_of_val(&cmsg) as _;
    // SAFETY: msg points at live buffers of the sizes given.
    let n = unsafe { libc::recvmsg(fd, &mut msg, libc::MSG_DONTWAIT) };
    if n < 0 {
        return None;
    }
    let mut tos = 0u8;
    let mut stamp_ns = None;
    // SAFETY: walking the control messages recvmsg filled, with the libc macros; the
    // timestamp is read unaligned from the message's data.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(&msg);
        while !c.is_null() {
            if (*c).cmsg_level == libc::IPPROTO_IP && (*c).cmsg_type == libc::IP_TOS {
                tos = *libc::CMSG_DATA(c);
            } else if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_TIMESTAMPNS {
                let ts = std::ptr::read_unaligned(libc::CMSG_DATA(c) as *const libc::timespec);
                stamp_ns = Some(ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64);
            }
            c = libc::CMSG_NXTHDR(&msg, c);
        }
    }
    let from = SocketAddrV4::new(Ipv4Addr::from(u32::from_be(src.sin_addr.s_addr)), u16::from_be(src.sin_port));
    Some(Read { len: n as usize, ecn: tos & 3, from, stamp_ns })
}

/// The host's latencies as one end sees them (see the module's documentation).
struct HostTiming {
    wake: Latency,
    read: Latency,
    busy: Latency,
}

impl HostTiming {
    fn new() -> Self {
        HostTiming { wake: Latency::new(), read: Latency::new(), busy: Latency::new() }
    }
    /// A datagram read at `read_ns` (CLOCK_REALTIME); `woke`: the first read after a
    /// sleep that began at `slept_ns`.
    fn on_read(&mut self, r: &Read, read_ns: u64, woke: bool, slept_ns: u64) {
        let Some(stamp) = r.stamp_ns else { return };
        let waited = read_ns.saturating_sub(stamp);
        self.read.add(waited);
        if woke && stamp > slept_ns {
            self.wake.add(waited);
        }
    }
}

/// The options of one command: `--name value` pairs.
struct Opts(Vec<(String, String)>);

impl Opts {
    fn parse(args: &[String], allowed: &[&str]) -> Result<Opts, Fail> {
        let mut v = Vec::new();
        let mut it = args.iter();
        while let Some(a) = it.next() {
            if !allowed.contains(&a.as_str()) {
                return Err(Fail(format!("{a}: unknown argument (allowed: {})", allowed.join(", "))));
            }
            let val = it.next().ok_or_else(|| Fail(format!("{a}: missing value")))?;
            v.push((a.clone(), val.clone()));
        }
        Ok(Opts(v))
    }
    fn get(&self, k: &str) -> Option<&str> {
        self.0.iter().rev().find(|(n, _)| n == k).map(|(_, v)| v.as_str())
    }
    fn need(&self, k: &str) -> Result<&str, Fail> {
        self.get(k).ok_or_else(|| Fail(format!("{k}: required ({USAGE})")))
    }
    fn num(&self, k: &str, default: Option<f64>, lo: f64, hi: f64, what: &str) -> Result<f64, Fail> {
        let v = match (self.get(k), default) {
            (Some(s), _) => s.parse::<f64>().map_err(|_| Fail(format!("{k}: {s:?} is not a number ({what})")))?,
            (None, Some(d)) => return Ok(d),
            (None, None) => return Err(Fail(format!("{k}: required ({USAGE})"))),
        };
        if !(v.is_finite() && v >= lo && v <= hi) {
            return Err(Fail(format!("{k}: {v} is out of range ({what})")));
        }
        Ok(v)
    }
    fn addr(&self, k: &str) -> Result<Ipv4Addr, Fail> {
        let s = self.need(k)?;
        s.parse().map_err(|_| Fail(format!("{k}: {s:?} is not an IPv4 address")))
    }
    fn port(&self) -> Result<u16, Fail> {
        Ok(self.num("--port", None, 1.0, 65535.0, "allowed 1..=65535")? as u16)
    }
    fn duration_ns(&self) -> Result<u64, Fail> {
        let d = self.num("--duration", None, 0.001, MAX_DURATION_S, "seconds, allowed 0.001..=3600")?;
        Ok((d * 1e9) as u64)
    }
    fn sample_ns(&self) -> Result<u64, Fail> {
        Ok((self.num("--sample", Some(0.1), 0.001, 60.0, "seconds between rate samples, allowed 0.001..=60")? * 1e9)
            as u64)
    }
}

fn write_json(path: &str, v: &Value) -> Result<(), Fail> {
    let text = serde_json::to_string_pretty(v).map_err(|e| Fail(format!("--out: {e}")))?;
    std::fs::write(path, text + "\n").map_err(|e| Fail(format!("--out: {path}: {e}")))
}

/// `--trace FILE.csv`: one row per event, times in CLOCK_REALTIME ns (the clock of the
/// kernel's arrival stamps), written when the program ends. The sender writes one row
/// per pass of its loop (`start_ns,packets,slept_ns,woke_ns,stamp_ns,read_ns`: the pass
/// began, sent `packets` datagrams, entered `ppoll` at `slept_ns`, left it at `woke_ns`,
/// and read the ACK the kernel stamped `stamp_ns` by `read_ns`; 0 when it read none);
/// the receiver one row per datagram
/// (`slept_ns,woke_ns,stamp_ns,read_ns,answered_ns`: the wait it was read after, its
/// stamp, the `recvmsg` return and the return of the ACK's `sendto`). What a woken
/// program does with its time, datagram by datagram (docs/emulator-commands.md).
struct Trace<const N: usize> {
    path: String,
    header: &'static str,
    rows: Vec<[u64; N]>,
}

impl<const N: usize> Trace<N> {
    fn new(o: &Opts, header: &'static str, duration: u64) -> Option<Self> {
        // Preallocated for 20 000 rows a second (a 1400-byte datagram at 224 Mbit/s).
        let rows = Vec::with_capacity((duration / 50_000).min(1 << 24) as usize);
        o.get("--trace").map(|p| Trace { path: p.to_string(), header, rows })
    }
    fn write(&self) -> Result<(), Fail> {
        use std::io::Write;
        let fail = |e: std::io::Error| Fail(format!("--trace: {}: {e}", self.path));
        let mut w = std::io::BufWriter::new(std::fs::File::create(&self.path).map_err(fail)?);
        writeln!(w, "{}", self.header).map_err(fail)?;
        for r in &self.rows {
            let line: Vec<String> = r.iter().map(u64::to_string).collect();
            writeln!(w, "{}", line.join(",")).map_err(fail)?;
        }
        w.flush().map_err(fail)
    }
}

/// Rate samples: one per `every` ns, preallocated for the whole run.
struct Samples {
    every: u64,
    next: u64,
    last_bytes: u64,
    rows: Vec<Value>,
}

impl Samples {
    fn new(t0: u64, every: u64, duration: u64) -> Self {
        Samples { every, next: t0 + every, last_bytes: 0, rows: Vec::with_capacity((duration / every) as usize + 2) }
    }
    /// If a sample is due at `now`, the seconds since `t0` and the bit/s since the last.
    fn due(&mut self, now: u64, t0: u64, bytes: u64) -> Option<(f64, f64)> {
        if now < self.next {
            return None;
        }
        let span = (now - (self.next - self.every)) as f64 / 1e9;
        let bps = (bytes - self.last_bytes) as f64 * 8.0 / span;
        self.last_bytes = bytes;
        while self.next <= now {
            self.next += self.every;
        }
        Some(((now - t0) as f64 / 1e9, bps))
    }
}

fn send(args: &[String]) -> Result<(), Fail> {
    let o = Opts::parse(
        args,
        &[
            "--dst",
            "--port",
            "--duration",
            "--out",
            "--max-rate",
            "--fps",
            "--frame-budget",
            "--max-packet",
            "--sample",
            "--trace",
        ],
    )?;
    let dst = SocketAddrV4::new(o.addr("--dst")?, o.port()?);
    let duration = o.duration_ns()?;
    let out = o.need("--out")?.to_string();
    let max_rate_mbit = o.num(
        "--max-rate",
        Some(MAX_RATE as f64 * 8.0 / 1e6),
        MIN_RATE as f64 * 8.0 / 1e6,
        MAX_RATE as f64 * 8.0 / 1e6,
        "Mbit/s of UDP payload, allowed 0.1..=100000",
    )?;
    let fps = o.num("--fps", Some(0.0), 0.0, 255.0, "frames per second, allowed 0..=255 (0: bulk)")? as u8;
    let interval_ms = if fps > 0 { 1000.0 / fps as f64 } else { 0.0 };
    let budget_ms = if o.get("--frame-budget").is_some() && fps == 0 {
        return Err(Fail("--frame-budget: only with --fps (real-time mode)".into()));
    } else {
        o.num(
            "--frame-budget",
            Some(interval_ms),
            0.001,
            interval_ms.max(0.001),
            "ms, allowed up to the frame interval",
        )?
    };
    let max_packet = o.num(
        "--max-packet",
        Some(l4slab_core::cc::udp_prague::INIT_MTU as f64),
        MIN_MTU as f64,
        MAX_PACKET as f64,
        "UDP payload bytes, allowed 150..=1472",
    )? as u64;
    let params = PragueParams {
        max_packet_size: max_packet,
        fps,
        frame_budget_us: (budget_ms * 1000.0) as i32,
        max_rate: (max_rate_mbit * 1e6 / 8.0) as u64,
        ..PragueParams::default()
    };

    let sock = UdpSocket::bind("0.0.0.0:0").map_err(|e| Fail(format!("socket: {e}")))?;
    sock.connect(dst).map_err(|e| Fail(format!("--dst: {dst}: {e}")))?;
    let fd = sock.as_raw_fd();
    set_int_opt(fd, libc::IP_RECVTOS, 1)?;
    set_opt(fd, libc::SOL_SOCKET, libc::SO_TIMESTAMPNS, 1)?;
    let mut tos = Tos { fd, current: None };
    let (mut host, mut timer_late) = (HostTiming::new(), Latency::new());
    // Pacing needs µs wake-ups: no 50-µs timer slack (kernel/time/hrtimer.c).
    // SAFETY: prctl with an integer argument.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0) };

    let t0 = now_ns();
    let end = t0 + duration;
    let mut s = PragueSender::new(&params, clock_us(t0, t0));
    let mut buf = [0u8; 2048];
    let mut rbuf = [0u8; 2048];
    let mut send_errors = 0u64;
    let mut samples = Samples::new(t0, o.sample_ns()?, duration);
    let mut tos_err: Option<Fail> = None;
    let mut trace = Trace::<6>::new(&o, "start_ns,packets,slept_ns,woke_ns,stamp_ns,read_ns", duration);
    let mut last_ack_read: Option<u64> = None;
    loop {
        let now = now_ns();
        if now >= end {
            break;
        }
        let t = clock_us(now, t0);
        let (start_rt, sent_before) = (trace.as_ref().map_or(0, |_| realtime_ns()), s.stats.packets_sent);
        s.send_due(t, |p| {
            if let Err(e) = tos.set(p.ecn) {
                tos_err = Some(e);
            }
            p.msg.encode(&mut buf);
            if sock.send(&buf[..p.size.max(FRAME_HEADER_LEN as u64) as usize]).is_err() {
                send_errors += 1;
            }
        });
        if let Some(e) = tos_err.take() {
            return Err(e);
        }
        let target = s.wake_at(t);
        let wait_ns = l4slab_core::cc::udp_prague::diff(target, t) as i64 * 1000;
        let deadline = ((now - (now - t0) % 1000) as i64 + wait_ns).max(now as i64).min(end as i64) as u64;
        // Wait for an ACK until the loop's target (a non-ACK datagram: keep waiting).
        let mut got = false;
        let mut first = true;
        let (slept, sleeps) = (realtime_ns(), deadline > now);
        // Free for the next ACK: busy with the last one (and the data it released) since its read.
        if let Some(read) = last_ack_read.take() {
            host.busy.add(slept.saturating_sub(read));
        }
        let mut row = [start_rt, s.stats.packets_sent - sent_before, slept, 0, 0, 0];
        while !got && wait_readable(fd, deadline) {
            if first {
                row[3] = realtime_ns();
            }
            match recv_with_tos(fd, &mut rbuf) {
                Some(r) => {
                    let read = realtime_ns();
                    host.on_read(&r, read, first, slept);
                    first = false;
                    (row[4], row[5]) = (r.stamp_ns.unwrap_or(0), read);
                    if let Some(ack) = AckMsg::decode(&rbuf[..r.len]) {
                        s.on_ack(clock_us(now_ns(), t0), &ack);
                        got = true;
                        last_ack_read = Some(read);
                    }
                }
                None => send_errors += 1, // ICMP port unreachable before the receiver is up
            }
        }
        let now = now_ns();
        if !got && first && sleeps && now >= deadline {
            timer_late.add(now - deadline);
        }
        if let Some(tr) = trace.as_mut() {
            if row[3] == 0 {
                row[3] = realtime_ns();
            }
            tr.rows.push(row);
        }
        s.after_wait(clock_us(now, t0), target, got);
        if let Some((at, bps)) = samples.due(now, t0, s.stats.bytes_sent) {
            let i = s.info();
            samples.rows.push(json!({
                "t_s": at, "sent_bps": bps, "pacing_rate_bps": s.cc.pacing_rate() * 8,
                "srtt_ms": s.cc.srtt_us() as f64 / 1000.0, "alpha": s.cc.alpha(),
                "packet_window": i.packet_window, "inflight": s.inflight(),
            }));
        }
    }
    let elapsed = (now_ns() - t0) as f64 / 1e9;
    if let Some(tr) = &trace {
        tr.write()?;
    }
    let st = &s.stats;
    write_json(
        &out,
        &json!({
            "program": "l4slab-udp-prague", "role": "send",
            "dst": dst.ip().to_string(), "port": dst.port(), "duration_s": duration as f64 / 1e9,
            "elapsed_s": elapsed, "fps": fps, "max_packet_bytes": max_packet,
            "packets_sent": st.packets_sent, "bytes_sent": st.bytes_sent,
            "ip_bytes_sent": st.bytes_sent + 28 * st.packets_sent,
            "acks_received": st.acks_received, "acks_old": st.acks_old,
            "echoed_received": st.echoed.received, "echoed_ce": st.echoed.ce, "echoed_lost": st.echoed.lost,
            "error_l4s": st.echoed.error_l4s, "resets": st.resets,
            "frames_sent": st.frames_sent, "frames_skipped": st.frames_skipped,
            "send_errors": send_errors, "mean_rate_bps": st.bytes_sent as f64 * 8.0 / elapsed,
            "final_pacing_rate_bps": s.cc.pacing_rate() * 8, "srtt_ms": s.cc.srtt_us() as f64 / 1000.0,
            "alpha": s.cc.alpha(), "wake_us": host.wake.json(), "read_us": host.read.json(), "busy_us": host.busy.json(),
            "timer_late_us": timer_late.json(), "rate_samples": samples.rows,
        }),
    )
}

fn recv(args: &[String]) -> Result<(), Fail> {
    let o = Opts::parse(args, &["--bind", "--port", "--duration", "--out", "--sample", "--trace"])?;
    let bind = SocketAddrV4::new(o.addr("--bind")?, o.port()?);
    let duration = o.duration_ns()?;
    let out = o.need("--out")?.to_string();
    let sock = UdpSocket::bind(bind).map_err(|e| Fail(format!("--bind: {bind}: {e}")))?;
    let fd = sock.as_raw_fd();
    set_int_opt(fd, libc::IP_RECVTOS, 1)?;
    set_opt(fd, libc::SOL_SOCKET, libc::SO_TIMESTAMPNS, 1)?;
    let mut tos = Tos { fd, current: None };
    let mut host = HostTiming::new();

    let t0 = now_ns();
    let end = t0 + duration;
    let mut r = PragueReceiver::new(clock_us(t0, t0));
    let mut buf = [0u8; 65_536];
    let mut abuf = [0u8; ACK_LEN];
    let (mut packets, mut bytes, mut acks, mut ack_errors, mut other) = (0u64, 0u64, 0u64, 0u64, 0u64);
    let mut by_ecn = [0u64; 4];
    let mut samples = Samples::new(t0, o.sample_ns()?, duration);
    let (mut last_pkts, mut last_ce) = (0u64, 0u64);
    let mut first: Option<f64> = None;
    let mut last: f64 = 0.0;
    let mut trace = Trace::<5>::new(&o, "slept_ns,woke_ns,stamp_ns,read_ns,answered_ns", duration);
    while now_ns() < end {
        let slept = realtime_ns();
        if wait_readable(fd, end) {
            let woke_at = trace.as_ref().map_or(0, |_| realtime_ns());
            let mut woke = true;
            let mut row = [0u64; 5];
            while let Some(Read { len: n, ecn, from, .. }) = recv_with_tos(fd, &mut buf).inspect(|r| {
                let read = realtime_ns();
                host.on_read(r, read, woke, slept);
                row = [slept, woke_at, r.stamp_ns.unwrap_or(0), read, 0];
                woke = false;
            }) {
                let read = row[3];
                let now = now_ns();
                let Some(msg) = DataMsg::decode(&buf[..n]) else {
                    other += 1;
                    continue;
                };
                let at = (now - t0) as f64 / 1e9;
                first.get_or_insert(at);
                last = at;
                packets += 1;
                bytes += n as u64;
                by_ecn[ecn as usize] += 1;
                let (ack, ack_ecn) = r.on_data(clock_us(now, t0), ecn, &msg);
                tos.set(ack_ecn)?;
                let len = ack.encode(&mut abuf);
                match sock.send_to(&abuf[..len], from) {
                    Ok(_) => acks += 1,
                    Err(_) => ack_errors += 1,
                }
                // Free for the next datagram: busy with this one since its read.
                let answered = realtime_ns();
                host.busy.add(answered.saturating_sub(read));
                if let Some(tr) = trace.as_mut() {
                    row[4] = answered;
                    tr.rows.push(row);
                }
            }
        }
        let now = now_ns();
        if let Some((at, bps)) = samples.due(now, t0, bytes) {
            let ce = by_ecn[ECN_CE as usize];
            let (dp, dc) = (packets - last_pkts, ce - last_ce);
            (last_pkts, last_ce) = (packets, ce);
            samples.rows.push(json!({
                "t_s": at, "recv_bps": bps,
                "ce_fraction": if dp > 0 { dc as f64 / dp as f64 } else { f64::NAN },
            }));
        }
    }
    if let Some(tr) = &trace {
        tr.write()?;
    }
    let c = r.counters();
    let active = first.map_or(0.0, |f| last - f);
    write_json(
        &out,
        &json!({
            "program": "l4slab-udp-prague", "role": "recv",
            "bind": bind.ip().to_string(), "port": bind.port(), "duration_s": duration as f64 / 1e9,
            "packets_received": packets, "bytes_received": bytes, "ip_bytes_received": bytes + 28 * packets,
            "ce_packets": by_ecn[ECN_CE as usize], "ect1_packets": by_ecn[ECN_L4S_ID as usize],
            "ect0_packets": by_ecn[ECN_ECT0 as usize], "not_ect_packets": by_ecn[ECN_NOT_ECT as usize],
            "lost_packets": c.lost, "error_l4s": c.error_l4s,
            "acks_sent": acks, "ce_echoed": c.ce, "ack_send_errors": ack_errors, "other_datagrams": other,
            "first_data_s": first, "last_data_s": first.map(|_| last),
            "mean_rate_bps": if active > 0.0 { bytes as f64 * 8.0 / active } else { 0.0 },
            "wake_us": host.wake.json(), "read_us": host.read.json(), "busy_us": host.busy.json(),
            "rate_samples": samples.rows,
        }),
    )
}

/// Run the program's command line (`send ...` or `recv ...`, without the program name);
/// returns the exit status (0, or 2 with one line on stderr for bad input or a failure).
pub fn main_with(args: Vec<String>) -> i32 {
    let r = match args.first().map(String::as_str) {
        Some("send") => send(&args[1..]),
        Some("recv") => recv(&args[1..]),
        Some("-h" | "--help") => {
            println!("{USAGE}");
            return 0;
        }
        Some(other) => Err(Fail(format!("{other}: unknown command ({USAGE})"))),
        None => Err(Fail(USAGE.into())),
    };
    match r {
        Ok(()) => 0,
        Err(Fail(msg)) => {
            eprintln!("l4slab-udp-prague: {msg}");
            2
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_rare_sample_keeps_its_weight_in_the_tail() {
        // 100 000 samples of 20-69 µs and one of 4 ms (a program's first read).
        let mut l = Latency::new();
        for k in 0..100_000u64 {
            l.add((20 + k % 50) * 1000 + 300);
        }
        l.add(4_000_000);
        let (q, t) = (l.quantiles_us(), l.tail_quantiles_us());
        // The 1001 points: the top step runs from 69.5 µs to 4 ms (0.1 % of the mass).
        assert_eq!((q[999], q[1000]), (69.5, 4000.0));
        // The tail's own points: the 101 samples from the 99.9th percentile's rank; the
        // 4 ms one is the last, so only the tail's top 1 % (1 in 100 000 of all) reaches it.
        assert!(t[..=990].iter().all(|&v| v == 69.5), "{:?}", &t[985..]);
        assert!(t[991..].iter().all(|&v| v == 4000.0), "{:?}", &t[985..]);
    }

    #[test]
    fn latency_quantiles_are_the_samples_ranks_at_bucket_middles() {
        let mut l = Latency::new();
        // One sample in each of the buckets 0..1000 µs, in reverse order.
        for k in (0..1000u64).rev() {
            l.add(k * 1000 + 500);
        }
        let q = l.quantiles_us();
        assert_eq!(q.len(), QUANTILES);
        assert_eq!((q[0], q[1], q[10], q[500], q[990], q[1000]), (0.5, 0.5, 9.5, 499.5, 989.5, 999.5));
        assert!(q.windows(2).all(|w| w[0] <= w[1]));
        // Beyond the last bucket: the maximum.
        l.add(80_000_000);
        assert_eq!(l.quantiles_us()[1000], 80_000.0);
        // The tail: the top 0.1 % (ranks 1000 and 1001 of 1001: 999.5 µs and 80 ms) on its own.
        let t = l.tail_quantiles_us();
        assert_eq!((t.len(), t[0], t[1], t[1000]), (QUANTILES, 999.5, 80_000.0, 80_000.0));
        let j = l.json();
        assert_eq!(j["count"], 1001);
        // (Σ k·1000 + 500 for k < 1000, + 80 ms) / 1001 samples = 580 ms / 1001, in µs.
        assert!((j["mean"].as_f64().unwrap() - 580_000.0 / 1001.0).abs() < 1e-9, "{j}");
    }
}
