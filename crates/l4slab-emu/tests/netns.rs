//! End to end through real namespaces: the `l4slab-emu` binary between a sender and
//! a receiver, a 20 Mbit/s link with 10 ms each way. Needs root, `/dev/net/tun`,
//! `ip` and `iperf3`; without them the test says why on one line and passes.

use std::fs;
use std::net::UdpSocket;
use std::os::fd::AsRawFd;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

mod common;
use common::{read_json, start_emu, work_dir};

const PREFIX: &str = "l4setest";

fn skip_reason() -> Option<String> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Some("not root".into());
    }
    if !Path::new("/dev/net/tun").exists() {
        return Some("no /dev/net/tun".into());
    }
    for tool in ["ip", "iperf3"] {
        if Command::new(tool).arg("--version").stdout(Stdio::null()).stderr(Stdio::null()).status().is_err() {
            return Some(format!("{tool} is not installed"));
        }
    }
    if !fs::read_to_string("/proc/sys/net/ipv4/tcp_available_congestion_control").unwrap_or_default().contains("cubic")
    {
        return Some("the kernel has no cubic".into());
    }
    None
}

/// Run `f` in a thread inside namespace `ns`.
fn in_netns<T: Send + 'static>(ns: &str, f: impl FnOnce() -> T + Send + 'static) -> std::thread::JoinHandle<T> {
    let path = format!("/run/netns/{ns}");
    std::thread::spawn(move || {
        let nsf = fs::File::open(&path).expect("namespace file");
        // SAFETY: per-thread setns into a namespace we made.
        assert_eq!(unsafe { libc::setns(nsf.as_raw_fd(), libc::CLONE_NEWNET) }, 0, "setns");
        f()
    })
}

fn own_namespaces(pid: u32) -> Vec<String> {
    let p = format!("{PREFIX}-{pid}-");
    fs::read_dir("/run/netns")
        .map(|rd| rd.filter_map(|e| e.ok()?.file_name().into_string().ok()).filter(|n| n.starts_with(&p)).collect())
        .unwrap_or_default()
}

/// Return from the test (it passes) with one line saying why, where the host cannot run it.
macro_rules! skip_unless_able {
    () => {
        if let Some(why) = skip_reason() {
            eprintln!("skipped: {why}");
            return;
        }
    };
}

#[test]
fn twenty_mbit_ten_ms_each_way_rtt_throughput_and_cleanup() {
    skip_unless_able!();
    let dir = work_dir("emu-test");
    let cfg = serde_json::json!({
        "duration_ns": 7_000_000_000u64, "bin_ns": 100_000_000u64,
        "bottleneck": {"rate_bps": 20_000_000u64, "qdisc": {"kind": "bfifo", "limit_bytes": 50_000}},
        "flows": [{"kind": "tcp", "cc": "cubic", "rtt_ns": 20_000_000u64}],
    });
    let (mut child, r) = start_emu(&dir, &cfg, PREFIX);
    let pid = child.id();
    let f = &r["flows"][0];
    let (sns, rns) = (f["sender_ns"].as_str().unwrap().to_string(), f["receiver_ns"].as_str().unwrap().to_string());
    let raddr = f["receiver_addr"].as_str().unwrap().to_string();
    assert_eq!(own_namespaces(pid).len(), 2);

    // RTT on the idle link: 20 UDP echoes of 64 bytes (serialisation at 20 Mbit/s ≈ 40 µs).
    let ra = raddr.clone();
    let echo = in_netns(&rns, move || {
        let s = UdpSocket::bind(format!("{ra}:7")).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(3))).unwrap();
        let mut buf = [0u8; 256];
        for _ in 0..20 {
            let Ok((n, from)) = s.recv_from(&mut buf) else { break };
            s.send_to(&buf[..n], from).unwrap();
        }
    });
    std::thread::sleep(Duration::from_millis(100));
    let ra = raddr.clone();
    let pinger = in_netns(&sns, move || {
        let s = UdpSocket::bind("0.0.0.0:0").unwrap();
        s.set_read_timeout(Some(Duration::from_secs(1))).unwrap();
        let mut rtts = Vec::new();
        let mut buf = [0u8; 256];
        for i in 0..20u8 {
            let t = Instant::now();
            s.send_to(&[i; 64], format!("{ra}:7")).unwrap();
            if s.recv_from(&mut buf).is_ok() {
                rtts.push(t.elapsed().as_secs_f64() * 1e3);
            }
            std::thread::sleep(Duration::from_millis(30));
        }
        rtts
    });
    let mut rtts = pinger.join().unwrap();
    echo.join().unwrap();
    assert!(rtts.len() >= 18, "echoes answered: {}", rtts.len());
    rtts.sort_by(f64::total_cmp);
    let median = rtts[rtts.len() / 2];
    assert!((median - 20.0).abs() <= 2.0, "median RTT {median:.3} ms, expected 20 ± 2 ms ({rtts:?})");

    // A 3 s TCP transfer.
    let t0_unix = r["t0_unix_ns"].as_u64().unwrap();
    let server = Command::new("ip")
        .args(["netns", "exec", &rns, "iperf3", "-s", "-1", "-p", "5201"])
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let since_t0 =
        |now: std::time::SystemTime| now.duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64 - t0_unix;
    let start_ns = since_t0(std::time::SystemTime::now());
    let out = Command::new("ip")
        .args(["netns", "exec", &sns, "iperf3", "-c", &raddr, "-t", "3", "-C", "cubic", "-J"])
        .output()
        .unwrap();
    let end_ns = since_t0(std::time::SystemTime::now());
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).expect("iperf3 JSON");
    let goodput = j["end"]["sum_received"]["bits_per_second"].as_f64().unwrap() / 1e6;
    let mut server = server;
    let _ = server.wait();

    let st = child.wait().unwrap();
    let meta = read_json(&dir.join("emu_meta.json"));
    let res = read_json(&dir.join("emu_results.json"));
    // Nothing left behind: namespaces (and with them the TUNs) are gone.
    assert!(own_namespaces(pid).is_empty(), "left behind: {:?}", own_namespaces(pid));
    let ip_list = String::from_utf8(Command::new("ip").args(["netns", "list"]).output().unwrap().stdout).unwrap();
    assert!(!ip_list.contains(&format!("{PREFIX}-{pid}-")), "{ip_list}");
    assert!(!Path::new("/sys/class/net/l4stun0").exists(), "no TUN in the root namespace");

    // Throughput at the bottleneck (L2) over the bins inside the transfer, after a
    // 1 s start-up: the link's 20 Mbit/s, so 19–20 Mbit/s.
    let bin = 100_000_000u64;
    let util = res["bottleneck_series"]["utilisation"].as_array().unwrap();
    let (b0, b1) =
        ((start_ns + 1_000_000_000).div_ceil(bin) as usize, (end_ns.saturating_sub(300_000_000) / bin) as usize);
    assert!(b1 > b0 + 5, "transfer window {b0}..{b1}");
    let mean: f64 = util[b0..b1].iter().map(|v| v.as_f64().unwrap()).sum::<f64>() / (b1 - b0) as f64;
    let mbps = mean * 20.0;
    assert!((19.0..=20.2).contains(&mbps), "bottleneck throughput {mbps:.2} Mbit/s over bins {b0}..{b1}");
    // iperf3's goodput: payload 1448 of each 1514-B frame, ≈ 19.1 Mbit/s at most, less the start.
    assert!(goodput > 17.0 && goodput < 19.2, "iperf3 goodput {goodput:.2} Mbit/s");
    assert!(meta["packets_forwarded"].as_u64().unwrap() > 4000);
    // Every packet read from a TUN entered the links at its tap's kernel stamp (tap.rs):
    // the data, the ACKs and the echoes (a tap that takes nothing, or a filter that lets
    // the emulator's own writes in, leaves packets unmatched).
    let arr = &meta["arrival_late_ns"];
    let (stamped, unstamped) = (arr["stamped"].as_u64().unwrap(), arr["unstamped"].as_u64().unwrap());
    assert!(
        stamped >= meta["packets_forwarded"].as_u64().unwrap(),
        "stamped {stamped} of {}",
        meta["packets_forwarded"]
    );
    assert!(unstamped * 1000 <= stamped, "{unstamped} packets without a stamp ({stamped} with)");
    assert!(arr["p50"].as_u64().unwrap() < 1_000_000, "arrival lateness P50 {} ns", arr["p50"]);
    eprintln!(
        "rtt median {median:.3} ms, bottleneck {mbps:.2} Mbit/s, goodput {goodput:.2} Mbit/s, departure error p50 {} ns p99 {} ns, kept_up {}, exit {st}",
        meta["departure_error_ns"]["p50"], meta["departure_error_ns"]["p99"], meta["kept_up"]
    );
    if meta["kept_up"].as_bool() == Some(true) {
        assert!(st.success());
    }
    let _ = fs::remove_dir_all(&dir);
}

/// `IpExt` counters of the namespace the calling thread is in (`/proc/thread-self/net/netstat`:
/// net/ipv4/proc.c:netstat_seq_show, the receiving IP layer's ECN codepoint counts).
fn ipext(name: &str) -> u64 {
    let t = fs::read_to_string("/proc/thread-self/net/netstat").unwrap();
    let lines: Vec<&str> = t.lines().filter(|l| l.starts_with("IpExt:")).collect();
    let keys: Vec<&str> = lines[0].split_whitespace().collect();
    let vals: Vec<&str> = lines[1].split_whitespace().collect();
    keys.iter().position(|k| *k == name).map(|i| vals[i].parse().unwrap()).unwrap_or(0)
}

fn snmp_ip(name: &str) -> u64 {
    let t = fs::read_to_string("/proc/thread-self/net/snmp").unwrap();
    let lines: Vec<&str> = t.lines().filter(|l| l.starts_with("Ip:")).collect();
    let keys: Vec<&str> = lines[0].split_whitespace().collect();
    let vals: Vec<&str> = lines[1].split_whitespace().collect();
    keys.iter().position(|k| *k == name).map(|i| vals[i].parse().unwrap()).unwrap_or(0)
}

#[test]
fn udp_overload_through_codel_ecn_reaches_the_receiver_kernel_as_real_ce() {
    skip_unless_able!();
    // 30 Mbit/s of ECT(0) datagrams into a 20 Mbit/s CoDel with ECN: the standing queue
    // makes CoDel mark (RFC 8289 §5.4); the receiving kernel counts the codepoints it got.
    let dir = work_dir("emu-udp");
    let cfg = serde_json::json!({
        "duration_ns": 3_000_000_000u64, "bin_ns": 100_000_000u64,
        "bottleneck": {"rate_bps": 20_000_000u64, "qdisc": {"kind": "codel", "ecn": true}},
        "flows": [{"kind": "udp", "rtt_ns": 10_000_000u64, "rate_bps": 30_000_000u64, "payload_bytes": 1472, "ecn": "ect0"}],
    });
    let (mut child, r) = start_emu(&dir, &cfg, PREFIX);
    let pid = child.id();
    let rns = r["flows"][0]["receiver_ns"].as_str().unwrap().to_string();
    // Read the receiver's counters just before the emulator removes the namespace.
    let counters = in_netns(&rns, || {
        std::thread::sleep(Duration::from_millis(4_000));
        (ipext("InECT0Pkts"), ipext("InCEPkts"), snmp_ip("InHdrErrors"), snmp_ip("InReceives"))
    })
    .join()
    .unwrap();
    let status = child.wait().unwrap();
    eprintln!("l4slab-emu: {status}");
    let res = read_json(&dir.join("emu_results.json"));
    assert!(own_namespaces(pid).is_empty());
    let (ect0, ce, hdr_err, rx) = counters;
    let b = &res["bottleneck"];
    let marks = b["marks"].as_u64().unwrap();
    // What left the bottleneck over the whole run, its 2-s tail included (the qdisc's
    // `tc -s` counters are read when the traffic ends: the backlog drained after is not in them).
    let meta = read_json(&dir.join("emu_meta.json"));
    let view = &meta["flows"][0];
    let sent = view["packets_delivered"].as_u64().unwrap();
    assert!(b["qdisc"]["sent_packets"].as_u64().unwrap() <= sent);
    assert_eq!(view["ce_delivered"].as_u64().unwrap(), ce);
    assert_eq!(view["ecn_codepoint"].as_str(), Some("ect0"));
    eprintln!("receiver: InReceives {rx}, ECT(0) {ect0}, CE {ce}, header errors {hdr_err}; codel: sent {sent}, marks {marks}, drops {}", b["drops"]);
    assert_eq!(hdr_err, 0, "every rewritten header checksum verifies");
    assert!(marks > 50, "CoDel marked under a 1.5x overload: {marks}");
    // Every marked packet that left the bottleneck arrived as CE, the rest as ECT(0).
    assert_eq!(ce, res["flows"][0]["ce_packets"].as_u64().unwrap());
    assert_eq!(ce + ect0, sent);
    // The link ran at its rate: ≈ 20 Mbit/s of 30 offered over the 3 s.
    let util = b["utilisation"].as_f64().unwrap();
    assert!(util > 0.97 && util < 1.01, "utilisation {util}");
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn refused_input_is_one_line_exit_2_and_creates_nothing() {
    let dir = work_dir("emu-refuse");
    let cfg = serde_json::json!({
        "duration_ns": 1_000_000_000u64,
        "bottleneck": {"rate_bps": 20_000_000u64, "qdisc": {"kind": "bfifo", "limit_bytes": 50_000}},
        "flows": [{"kind": "tcp", "cc": "nosuchcc", "rtt_ns": 20_000_000u64}],
    });
    fs::write(dir.join("s.json"), cfg.to_string()).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_l4slab-emu"))
        .args(["run", "--config", dir.join("s.json").to_str().unwrap(), "--out", dir.to_str().unwrap()])
        .args(["--ready-file", dir.join("ready.json").to_str().unwrap(), "--prefix", PREFIX])
        .output()
        .unwrap();
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(err.contains("flows[0].cc") && err.contains("nosuchcc"), "{err}");
    assert!(!dir.join("ready.json").exists() && !dir.join("emu_results.json").exists());
    // A bad option too.
    let out = Command::new(env!("CARGO_BIN_EXE_l4slab-emu")).args(["run", "--prefix", "BAD-"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn sigterm_stops_writes_outputs_and_removes_everything() {
    skip_unless_able!();
    let dir = work_dir("emu-term");
    let cfg = serde_json::json!({
        "duration_ns": 60_000_000_000u64,
        "bottleneck": {"rate_bps": 20_000_000u64, "qdisc": {"kind": "fq_codel"}},
        "flows": [{"kind": "tcp", "cc": "cubic", "rtt_ns": 20_000_000u64},
                  {"kind": "udp", "rtt_ns": 20_000_000u64, "rate_bps": 1_000_000u64, "payload_bytes": 1000}],
    });
    let (mut child, _) = start_emu(&dir, &cfg, PREFIX);
    let pid = child.id();
    assert_eq!(own_namespaces(pid).len(), 4);
    std::thread::sleep(Duration::from_millis(500));
    // SAFETY: signalling our own child.
    unsafe { libc::kill(pid as i32, libc::SIGTERM) };
    let t = Instant::now();
    let st = child.wait().unwrap();
    assert!(t.elapsed() < Duration::from_secs(5), "stopped in {:?}", t.elapsed());
    assert!(own_namespaces(pid).is_empty(), "{:?}", own_namespaces(pid));
    let meta = read_json(&dir.join("emu_meta.json"));
    assert_eq!(meta["stopped_by_signal"], true);
    let res = read_json(&dir.join("emu_results.json"));
    // The UDP source ran for ≈ 0.5 s at 1 Mbit/s: some 60 datagrams crossed the bottleneck.
    let udp_pkts = res["flows"][1]["packets_sent"].as_u64().unwrap();
    assert!((30..=120).contains(&udp_pkts), "udp datagrams {udp_pkts}");
    eprintln!("stopped by SIGTERM: {st}, udp datagrams {udp_pkts}");
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn cleanup_removes_a_dead_owners_namespaces_only() {
    skip_unless_able!();
    // A namespace named for a pid that cannot be alive (above pid_max's 2^22 ceiling),
    // and one for our own live pid, under a prefix of this test's own: the other tests'
    // emulators, running in parallel, clean stale sets of PREFIX at their start.
    const OWN: &str = "l4sclean";
    let dead = format!("{OWN}-4999999-s0");
    let live = format!("{OWN}-{}-s0", std::process::id());
    for n in [&dead, &live] {
        assert!(Command::new("ip").args(["netns", "add", n]).status().unwrap().success());
    }
    let out = Command::new(env!("CARGO_BIN_EXE_l4slab-emu")).args(["cleanup", "--prefix", OWN]).output().unwrap();
    let left: Vec<String> =
        fs::read_dir("/run/netns").unwrap().filter_map(|e| e.ok()?.file_name().into_string().ok()).collect();
    let _ = Command::new("ip").args(["netns", "del", &live]).status();
    let _ = Command::new("ip").args(["netns", "del", &dead]).stderr(Stdio::null()).status();
    assert!(out.status.success());
    assert!(!left.contains(&dead), "the dead owner's namespace is removed");
    assert!(left.contains(&live), "a live owner's namespace is kept");
    assert!(String::from_utf8(out.stdout).unwrap().trim().parse::<u32>().unwrap() >= 1);
}
