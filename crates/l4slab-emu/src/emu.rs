//! The `run` and `cleanup` commands: checks, setup, the loop, outputs, cleanup.
//!
//! Exit codes (the process protocol shared with the Python side): 0 success; 1 a
//! run-time failure, including a run that did not keep up ([`kept_up`]), with one
//! line on stderr; 2 refused input (checked before anything is created).

use crate::clock;
use crate::forward::{FlowPorts, Forwarder, LoopStats};
use crate::netns::{self, fmt_addr, receiver_addr, sender_addr, Namespaces, MAX_EMU_FLOWS};
use crate::tap::Tap;
use l4slab_core::config::{FlowConfig, ScenarioConfig};
use serde_json::json;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Time forwarding goes on after the scenario's duration (the protocol's `+ 2 s`:
/// packets in flight at the end still reach their hosts, iperf3 closes cleanly).
pub const TAIL_NS: u64 = 2_000_000_000;
/// Hard cap beyond the duration: the process removes its namespaces and exits.
pub const HARD_CAP_NS: u64 = 30_000_000_000;
/// The emulator kept up when its departure error P99 is at most 1 ms (ten times the
/// 100 µs target; beyond it the emulated queue's own delay, which AQMs act on at a
/// 1 ms scale (DualPI2's L4S step threshold, RFC 9332 §A.1), is distorted) and no
/// departure at all was more than `forward::LATE_NS` late: one host stall of that
/// size delays every packet behind it by as much, so a single one changes what the
/// hosts see (see `forward::LATE_NS` for the bound).
pub const KEPT_UP_P99_NS: u64 = 1_000_000;
/// How long the namespaces of command flows are kept after forwarding stops, for their
/// programs to exit by themselves (a receiver writing its counts).
pub const COMMAND_EXIT_NS: u64 = 1_000_000_000;
/// The iperf3 port the front end uses (protocol field `port`).
pub const IPERF_PORT: u16 = 5201;

/// An error with its exit code.
#[derive(Debug)]
pub struct Fail {
    pub code: i32,
    pub msg: String,
}

fn refuse(msg: impl Into<String>) -> Fail {
    Fail { code: 2, msg: msg.into() }
}
fn fail(msg: impl Into<String>) -> Fail {
    Fail { code: 1, msg: msg.into() }
}

/// Whether the loop kept up (see [`KEPT_UP_P99_NS`]).
pub fn kept_up(s: &LoopStats) -> bool {
    s.err_p99_ns <= KEPT_UP_P99_NS && s.late == 0
}

fn has_net_admin() -> bool {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        return true;
    }
    // CapEff bit 12 = CAP_NET_ADMIN (include/uapi/linux/capability.h).
    fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines().find_map(|l| l.strip_prefix("CapEff:").map(|v| u64::from_str_radix(v.trim(), 16).unwrap_or(0)))
        })
        .is_some_and(|c| c & (1 << 12) != 0)
}

/// The kernel's congestion controls (`net.ipv4.tcp_available_congestion_control`).
pub fn available_ccs() -> Vec<String> {
    fs::read_to_string("/proc/sys/net/ipv4/tcp_available_congestion_control")
        .unwrap_or_default()
        .split_whitespace()
        .map(str::to_string)
        .collect()
}

fn sysctl_exists(name: &str) -> bool {
    Path::new(&format!("/proc/sys/{}", name.replace('.', "/"))).exists()
}

/// `rto_min` as `ip route` spells it.
fn rto_min_arg(ns: u64) -> Option<String> {
    if ns.is_multiple_of(1_000_000) {
        Some(format!("{}ms", ns / 1_000_000))
    } else if ns.is_multiple_of(1_000) {
        Some(format!("{}us", ns / 1_000))
    } else {
        None
    }
}

/// What one namespace of flow `i` gets: route options and sysctls.
pub struct HostSetup {
    pub route_opts: Vec<String>,
    pub sysctls: Vec<(String, String)>,
    /// Generic segmentation offload on the host's TUN (off for a `tso = false` sender).
    pub gso: bool,
}

/// Check the config against what the emulator and this kernel can do; the
/// per-flow (sender, receiver) host setup on success. Nothing is created here.
pub fn check(cfg: &ScenarioConfig) -> Result<Vec<(HostSetup, HostSetup)>, Fail> {
    check_with(cfg, &[])
}

/// [`check`] with the flows in `commands` (indices) run by the caller's own commands
/// (a command flow: docs/emulator.md): their hosts get the kernel's defaults (IPv6 off
/// only), no route metric, no CC check, and the emulator generates nothing for them;
/// the flow's own kind and fields describe only the simulated counterpart.
pub fn check_with(cfg: &ScenarioConfig, commands: &[usize]) -> Result<Vec<(HostSetup, HostSetup)>, Fail> {
    cfg.validate().map_err(refuse)?;
    if cfg.flows.is_empty() {
        return Err(refuse("flows: the scenario has none (the emulator forwards its flows' packets)"));
    }
    if cfg.flows.len() > MAX_EMU_FLOWS {
        return Err(refuse(format!(
            "flows: {} flows is more than the emulator runs (allowed 1..={MAX_EMU_FLOWS})",
            cfg.flows.len()
        )));
    }
    if !cfg.sources.is_empty() {
        return Err(refuse("sources: web and SYN-flood sources are not emulated (allowed: tcp and udp flows)"));
    }
    if cfg.capture.is_some() {
        return Err(refuse("capture: not available in the emulator (run tcpdump in a namespace instead)"));
    }
    if cfg.topology.is_some() {
        return Err(refuse("topology: not emulated (allowed: the dumbbell, no [topology])"));
    }
    for (name, link) in std::iter::once(("bottleneck", &cfg.bottleneck))
        .chain(cfg.reverse_bottleneck.iter().map(|r| ("reverse_bottleneck", r)))
    {
        if link.has_link_model() || link.delay_ns > 0 {
            return Err(refuse(format!(
                "{name}: netem, rate_schedule, rate_trace and aggregate are not emulated (allowed: rate, qdisc, burst)"
            )));
        }
    }
    let ccs = available_ccs();
    let accecn = sysctl_exists("net.ipv4.tcp_ecn_option");
    let max_ecn = if accecn { 5 } else { 2 };
    let ipv6_off = [("net.ipv6.conf.all.disable_ipv6", "1"), ("net.ipv6.conf.default.disable_ipv6", "1")];
    let mut out = Vec::new();
    for (i, f) in cfg.flows.iter().enumerate() {
        let at = |field: &str| format!("flows[{i}].{field}");
        if f.path().reverse {
            return Err(refuse(format!("{}: true is not emulated (allowed: false)", at("reverse"))));
        }
        let mut base: Vec<(String, String)> = ipv6_off.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        if commands.contains(&i) {
            out.push((
                HostSetup { route_opts: vec![], sysctls: base.clone(), gso: true },
                HostSetup { route_opts: vec![], sysctls: base, gso: true },
            ));
            continue;
        }
        match f {
            FlowConfig::UdpPrague(_) => {
                return Err(refuse(format!(
                    "{}: \"udp_prague\" is the engine's model; emulated, it needs a command (the \
                     l4slab-udp-prague program as a command flow; allowed without one: tcp, udp)",
                    at("kind")
                )));
            }
            FlowConfig::Udp(u) => {
                if u.payload_bytes > 1472 {
                    return Err(refuse(format!(
                        "{}: {} does not fit the TUN's 1500-byte MTU (allowed 1..=1472)",
                        at("payload_bytes"),
                        u.payload_bytes
                    )));
                }
                if u.payload_bytes == 0 {
                    return Err(refuse(format!("{}: 0 is not allowed (allowed 1..=1472)", at("payload_bytes"))));
                }
                out.push((
                    HostSetup { route_opts: vec![], sysctls: base.clone(), gso: true },
                    HostSetup { route_opts: vec![], sysctls: base, gso: true },
                ));
            }
            FlowConfig::Tcp(t) => {
                if !ccs.iter().any(|c| c == &t.cc) {
                    return Err(refuse(format!(
                        "{}: {:?} is not in this kernel's tcp_available_congestion_control (allowed: {})",
                        at("cc"),
                        t.cc,
                        ccs.join(", ")
                    )));
                }
                if t.cc_params.is_some() {
                    return Err(refuse(format!(
                        "{}: module parameters cannot be set per flow on a real kernel (allowed: unset)",
                        at("cc_params")
                    )));
                }
                if t.receiver_cc.as_ref().is_some_and(|r| r != &t.cc && !ccs.contains(r)) {
                    return Err(refuse(format!(
                        "{}: {:?} is not in this kernel (allowed: {})",
                        at("receiver_cc"),
                        t.receiver_cc.as_deref().unwrap_or(""),
                        ccs.join(", ")
                    )));
                }
                if t.receiver_cc_params.is_some() {
                    return Err(refuse(format!(
                        "{}: cannot be set on a real kernel (allowed: unset)",
                        at("receiver_cc_params")
                    )));
                }
                for (name, v) in [("ecn", t.ecn), ("receiver_ecn", t.receiver_ecn)] {
                    if v > max_ecn {
                        return Err(refuse(format!(
                            "{}: {v} is refused by this kernel's net.ipv4.tcp_ecn (allowed 0..={max_ecn})",
                            at(name)
                        )));
                    }
                }
                if t.fq_pacing {
                    return Err(refuse(format!("{}: true needs the fq qdisc on the sender, which this emulator does not provide (allowed: false)", at("fq_pacing"))));
                }
                if t.ecn_low {
                    return Err(refuse(format!(
                        "{}: true needs a BBRv3 kernel's route feature (allowed: false)",
                        at("ecn_low")
                    )));
                }
                if !t.drop_segments.is_empty() {
                    return Err(refuse(format!(
                        "{}: drop injection is a simulator test hook (allowed: empty)",
                        at("drop_segments")
                    )));
                }
                if t.rwnd_bytes.is_some() {
                    return Err(refuse(format!("{}: not emulated (allowed: unset)", at("rwnd_bytes"))));
                }
                let Some(rto) = rto_min_arg(t.rto_min_ns) else {
                    return Err(refuse(format!(
                        "{}: {} is not a whole number of µs (ip route rto_min)",
                        at("rto_min_ns"),
                        t.rto_min_ns
                    )));
                };
                // Route metrics (ip-route(8): initcwnd, rto_min, quickack) on the
                // sender's route for the data and the receiver's for its ACKs.
                let mut sender_route =
                    vec!["initcwnd".to_string(), t.init_cwnd.to_string(), "rto_min".into(), rto.clone()];
                let mut receiver_route = vec!["rto_min".to_string(), rto];
                // RTAX_CC_ALGO (`congctl`, unlocked): the connection is created under the
                // flow's CC (net/ipv4/tcp_output.c:tcp_connect_init -> tcp_ca_dst_init) instead
                // of the namespace's default, which a new namespace inherits from the host (bbr
                // on the project's machine) and which cannot be set to a CC outside
                // tcp_allowed_congestion_control (tcp_cong.c:tcp_set_default_congestion_control,
                // -EPERM). It matters because iperf3 (3.12) sets TCP_CONGESTION only after
                // connect(): the connection was established under bbr, whose bbr_init sets
                // sk_pacing_status = SK_PACING_NEEDED (tcp_bbr.c), and switching to cubic
                // (tcp_cong.c:tcp_reinit_congestion_control) never clears it, so "cubic" and
                // "reno" were internally paced (tcp_output.c:tcp_pacing_check) and HyStart's ACK
                // train used the unhalved threshold (tcp_cubic.c:hystart_update).
                sender_route.extend(["congctl".to_string(), t.cc.clone()]);
                let rcc = t.receiver_cc.clone().unwrap_or_else(|| t.cc.clone());
                receiver_route.extend(["congctl".to_string(), rcc]);
                if !t.delayed_ack {
                    // RTAX_QUICKACK: the receiver ACKs every segment (net/ipv4/tcp_input.c:tcp_in_quickack_mode).
                    receiver_route.extend(["quickack".to_string(), "1".to_string()]);
                    sender_route.extend(["quickack".to_string(), "1".to_string()]);
                }
                let mut s = base.clone();
                s.push(("net.ipv4.tcp_ecn".into(), t.ecn.to_string()));
                base.push(("net.ipv4.tcp_ecn".into(), t.receiver_ecn.to_string()));
                if accecn {
                    s.push(("net.ipv4.tcp_ecn_option".into(), t.ecn_option.to_string()));
                    base.push(("net.ipv4.tcp_ecn_option".into(), t.ecn_option.to_string()));
                }
                // tso: the TUN has no hardware TSO; the kernel's GSO segments large skbs
                // just before the device (net/core/dev.c:validate_xmit_skb), which is
                // what `tso = true` models. `tso = false` turns GSO off on the sender's
                // TUN, so TCP builds one-segment skbs (net/core/sock.c:sk_setup_caps).
                out.push((
                    HostSetup { route_opts: sender_route, sysctls: s, gso: t.tso },
                    HostSetup { route_opts: receiver_route, sysctls: base, gso: true },
                ));
            }
        }
    }
    Ok(out)
}

/// Check privileges and devices (before anything is created).
pub fn check_host() -> Result<(), Fail> {
    if !has_net_admin() {
        return Err(refuse("privileges: the emulator needs root or CAP_NET_ADMIN (namespaces, TUN devices)"));
    }
    if !Path::new("/dev/net/tun").exists() {
        return Err(refuse("/dev/net/tun: missing (load the tun module or give the container the device)"));
    }
    if std::process::Command::new("ip").arg("-V").output().is_err() {
        return Err(refuse("ip: iproute2's ip command is not installed"));
    }
    Ok(())
}

/// Write `data` to `path` atomically (a temporary file beside it, then rename).
pub fn write_atomic(path: &Path, data: &[u8]) -> Result<(), String> {
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    fs::write(&tmp, data).map_err(|e| format!("cannot write {}: {e}", tmp.display()))?;
    fs::rename(&tmp, path).map_err(|e| format!("cannot rename to {}: {e}", path.display()))
}

fn kernel_release() -> String {
    fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default().trim().to_string()
}

/// Options of `run`.
pub struct RunOpts {
    pub config: PathBuf,
    pub out: PathBuf,
    pub ready_file: PathBuf,
    pub prefix: String,
    /// Flows whose sender and receiver are the caller's commands (`--command-flows`).
    pub command_flows: Vec<usize>,
}

/// `l4slab-emu run`.
pub fn run(opts: &RunOpts) -> Result<(), Fail> {
    netns::check_prefix(&opts.prefix).map_err(refuse)?;
    let text = fs::read_to_string(&opts.config)
        .map_err(|e| refuse(format!("--config: cannot read {}: {e}", opts.config.display())))?;
    let cfg: ScenarioConfig = serde_json::from_str(&text).map_err(|e| refuse(format!("--config: {e}")))?;
    if let Some(&i) = opts.command_flows.iter().find(|&&i| i >= cfg.flows.len()) {
        return Err(refuse(format!(
            "--command-flows: {i} is not a flow of the scenario (allowed 0..{})",
            cfg.flows.len()
        )));
    }
    let hosts = check_with(&cfg, &opts.command_flows)?;
    check_host()?;
    if !opts.out.is_dir() {
        return Err(refuse(format!("--out: {} is not a directory", opts.out.display())));
    }
    if let Some(dir) = opts.ready_file.parent().filter(|d| !d.as_os_str().is_empty()) {
        if !dir.is_dir() {
            return Err(refuse(format!("--ready-file: {} is not a directory", dir.display())));
        }
    }
    netns::cleanup_stale(&opts.prefix, false);
    // The caller's death stops the run (SIGTERM: the loop ends, the guard removes the
    // namespaces and every process inside them), so a front end killed with SIGKILL
    // leaves nothing running (prctl(2) PR_SET_PDEATHSIG; checked against a parent that
    // died before the call: then the parent is already someone else).
    let parent = unsafe { libc::getppid() };
    // SAFETY: prctl with integer arguments.
    unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM as libc::c_ulong) };

    // SIGINT/SIGTERM set the flag; the loop (and the setup between steps) stops,
    // then the guard removes everything.
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, Arc::clone(&stop)).map_err(|e| fail(format!("signal handler: {e}")))?;
    }
    if unsafe { libc::getppid() } != parent {
        return Err(fail("the caller exited before the run started"));
    }
    let pid = std::process::id();
    let prefix = opts.prefix.clone();
    let cap_ns = cfg.duration_ns.saturating_add(HARD_CAP_NS);
    // The hard cap: whatever the main thread is doing, the namespaces go and the process ends.
    std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_nanos(cap_ns));
        for n in netns::own_namespaces(&prefix, pid) {
            netns::delete(&n);
        }
        eprintln!("l4slab-emu: hard time cap reached (duration + 30 s); namespaces removed");
        std::process::exit(1);
    });

    let mut guard = Namespaces::new();
    let mut ports = Vec::with_capacity(cfg.flows.len());
    let mut ready_flows = Vec::new();
    for (i, (s, r)) in hosts.iter().enumerate() {
        if stop.load(Ordering::Relaxed) {
            return Err(fail("stopped by a signal during setup"));
        }
        let (sa, ra) = (sender_addr(i), receiver_addr(i));
        let sn = format!("{}-{pid}-s{i}", opts.prefix);
        let rn = format!("{}-{pid}-r{i}", opts.prefix);
        let (sfd, stap) = guard.add(&sn, sa, ra, &s.route_opts, &s.sysctls, s.gso).map_err(fail)?;
        let (rfd, rtap) = guard.add(&rn, ra, sa, &r.route_opts, &r.sysctls, r.gso).map_err(fail)?;
        ports.push(FlowPorts {
            sender_fd: sfd,
            receiver_fd: rfd,
            sender_addr: sa,
            receiver_addr: ra,
            sender_tap: Tap::new(stap),
            receiver_tap: Tap::new(rtap),
        });
        ready_flows.push(json!({"flow": i, "sender_ns": sn, "receiver_ns": rn,
            "sender_addr": fmt_addr(sa), "receiver_addr": fmt_addr(ra), "port": IPERF_PORT}));
    }
    let mut fw = Forwarder::new(&cfg, ports, &opts.command_flows);
    let t0 = clock::now_ns();
    let t0_unix = clock::unix_ns();
    let ready = json!({"t0_unix_ns": t0_unix, "flows": ready_flows});
    write_atomic(&opts.ready_file, ready.to_string().as_bytes()).map_err(fail)?;

    let stats = fw.run(t0, cfg.duration_ns + TAIL_NS, &stop);

    // The qdisc's counters and state (DualPI2's `prob`, `delay_c/l`) as they were when
    // the scenario's traffic ended, not after the tail (an idle queue: always 0); a run
    // stopped early by a signal has only the counters of its end.
    let end = fw.end_of_traffic.take();
    let q = fw.bottleneck();
    let kind = q.qdisc.kind();
    let (qstats, extra) = end.unwrap_or_else(|| (q.qdisc.stats().clone(), q.qdisc.extra_stats()));
    let classes: Vec<&str> = q.qdisc.class_names().to_vec();
    let Forwarder { measure, .. } = fw;
    let data_start_ns = measure.data_starts();
    let flow_view = measure.flow_view(&opts.command_flows);
    let class_view = measure.class_view(&classes);
    let results = measure.results(&cfg, kind, &qstats, extra, &classes);
    let ok = kept_up(&stats);
    let meta = json!({
        "departure_error_ns": {"p50": stats.err_p50_ns, "p99": stats.err_p99_ns, "max": stats.err_max_ns},
        "cpu_busy_fraction": stats.cpu_busy_fraction,
        "packets_forwarded": stats.departures,
        "kept_up": ok,
        "kernel": kernel_release(),
        "kept_up_rule": format!("departure error P99 <= {} ns and no departure later than {} ns",
            KEPT_UP_P99_NS, crate::forward::LATE_NS),
        "late_bound_ns": crate::forward::LATE_NS,
        "flows": flow_view,
        "classes": class_view,
        "departures_late": stats.late,
        "stalls": stats.stalls,
        "stalled_ns": stats.stalled_ns,
        "pool_drops": stats.pool_drops,
        "rejected_packets": stats.rejected,
        "write_errors": stats.write_errors,
        "wall_s": stats.wall_ns as f64 * 1e-9,
        "stopped_by_signal": stats.stopped_by_signal,
        "realtime": stats.realtime,
        "loop_ns": {"wake_late_max": stats.wake_late_max_ns, "write_max": stats.write_max_ns,
            "read_pass_max": stats.read_pass_max_ns, "err_max_at": stats.err_max_at_ns},
        "flow_data_start_ns": data_start_ns,
        "sender_response_ns": {"count": stats.response_count, "p50": stats.response_p50_ns,
            "p90": stats.response_p90_ns, "p99": stats.response_p99_ns},
        "receiver_ack_time_ns": {"count": stats.ack_time_count, "p50": stats.ack_time_p50_ns,
            "p90": stats.ack_time_p90_ns, "p99": stats.ack_time_p99_ns},
        "arrival_late_ns": {"stamped": stats.arrival_stamped, "unstamped": stats.arrival_unstamped,
            "p50": stats.arrival_late_p50_ns, "p99": stats.arrival_late_p99_ns, "max": stats.arrival_late_max_ns},
    });
    let body = serde_json::to_vec(&results).map_err(|e| fail(format!("results: {e}")))?;
    write_atomic(&opts.out.join("emu_results.json"), &body).map_err(fail)?;
    write_atomic(&opts.out.join("emu_meta.json"), serde_json::to_string_pretty(&meta).unwrap().as_bytes())
        .map_err(fail)?;
    // A command's receiver told to listen until forwarding stops (`{until_end}`) ends a
    // few ms after it, once it has written its own counts: the namespaces (and what is
    // still inside them) go when the commands there have exited, or after COMMAND_EXIT_NS;
    // at once when a signal stopped the run (nobody is waiting for those counts).
    let names: Vec<String> = if stats.stopped_by_signal { &[][..] } else { &opts.command_flows[..] }
        .iter()
        .flat_map(|i| [format!("{}-{pid}-s{i}", opts.prefix), format!("{}-{pid}-r{i}", opts.prefix)])
        .collect();
    let deadline = clock::now_ns() + COMMAND_EXIT_NS;
    while clock::now_ns() < deadline && names.iter().any(|n| !netns::pids_inside(n).is_empty()) {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    drop(guard);
    if !ok {
        return Err(fail(format!(
            "the emulator did not keep up: departure error P99 {} µs, max {} µs, {} of {} departures more than {} µs late (bound: P99 <= {} µs, none later than {} µs)",
            stats.err_p99_ns / 1000,
            stats.err_max_ns / 1000,
            stats.late,
            stats.departures,
            crate::forward::LATE_NS / 1000,
            KEPT_UP_P99_NS / 1000,
            crate::forward::LATE_NS / 1000,
        )));
    }
    Ok(())
}

/// `l4slab-emu cleanup`: remove namespaces with `prefix` whose owner is dead (all with `all`).
pub fn cleanup(prefix: &str, all: bool) -> Result<usize, Fail> {
    netns::check_prefix(prefix).map_err(refuse)?;
    Ok(netns::cleanup_stale(prefix, all))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(flow: serde_json::Value) -> ScenarioConfig {
        serde_json::from_value(json!({
            "duration_ns": 1_000_000_000u64,
            "bottleneck": {"rate_bps": 20_000_000u64, "qdisc": {"kind": "bfifo", "limit_bytes": 50_000}},
            "flows": [flow],
        }))
        .unwrap()
    }

    #[test]
    fn unsupported_requests_are_one_line_refusals_naming_the_field() {
        let bad = [
            (json!({"kind": "tcp", "cc": "nosuchcc", "rtt_ns": 10_000_000}), "flows[0].cc"),
            (json!({"kind": "tcp", "cc": "reno", "rtt_ns": 10_000_000, "fq_pacing": true}), "flows[0].fq_pacing"),
            (json!({"kind": "tcp", "cc": "reno", "rtt_ns": 10_000_000, "reverse": true}), "flows[0].reverse"),
            (
                json!({"kind": "tcp", "cc": "reno", "rtt_ns": 10_000_000, "drop_segments": [3]}),
                "flows[0].drop_segments",
            ),
            (
                json!({"kind": "udp", "rtt_ns": 10_000_000, "rate_bps": 1_000_000, "payload_bytes": 9000}),
                "flows[0].payload_bytes",
            ),
        ];
        for (flow, field) in bad {
            let e = check(&cfg(flow)).err().expect("refused");
            assert_eq!(e.code, 2);
            assert!(e.msg.starts_with(field), "{}", e.msg);
            assert!(!e.msg.contains('\n'));
        }
    }

    #[test]
    fn route_metrics_and_sysctls_follow_the_flow() {
        if !available_ccs().iter().any(|c| c == "reno") {
            eprintln!("skipped: this kernel has no reno");
            return;
        }
        let h = check(&cfg(json!({"kind": "tcp", "cc": "reno", "rtt_ns": 10_000_000, "ecn": 1, "receiver_ecn": 2,
            "delayed_ack": false, "init_cwnd": 4})))
        .map_err(|e| e.msg)
        .unwrap();
        let (s, r) = &h[0];
        assert_eq!(s.route_opts[..4], ["initcwnd", "4", "rto_min", "200ms"]);
        assert!(r.route_opts.windows(2).any(|w| w == ["quickack", "1"]));
        assert!(s.route_opts.windows(2).any(|w| w == ["congctl", "reno"]));
        assert!(r.route_opts.windows(2).any(|w| w == ["congctl", "reno"]));
        assert!(s.sysctls.contains(&("net.ipv4.tcp_ecn".into(), "1".into())));
        assert!(r.sysctls.contains(&("net.ipv4.tcp_ecn".into(), "2".into())));
        assert_eq!(rto_min_arg(1_500_000).as_deref(), Some("1500us"));
        assert_eq!(rto_min_arg(1_500_001), None);
    }

    #[test]
    fn kept_up_follows_the_documented_bound() {
        let mut s = LoopStats { departures: 10_000, err_p99_ns: 80_000, ..Default::default() };
        assert!(kept_up(&s));
        s.err_p99_ns = 1_000_001;
        assert!(!kept_up(&s));
        s.err_p99_ns = 50_000;
        s.late = 1;
        assert!(!kept_up(&s), "one departure later than the bound fails the run");
    }
}
