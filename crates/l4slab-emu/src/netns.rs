//! Network namespaces and TUN devices, and their cleanup.
//!
//! Per flow `i` the emulator makes two namespaces, `{prefix}-{pid}-s{i}` (sender)
//! and `{prefix}-{pid}-r{i}` (receiver), each with `lo` and one TUN device
//! [`TUN_NAME`] (`IFF_TUN | IFF_NO_PI`: bare IP packets, ip(8)/`tuntap.rst`). The
//! sender has [`sender_addr`]`(i)`/32, the receiver [`receiver_addr`]`(i)`/32, and each
//! a single /32 route to the other through its TUN: no default route, no other
//! interface, so nothing can leave the pair except through the emulator, and the
//! addresses (10.250.0.0/16, 10.251.0.0/16) exist only inside these namespaces.
//!
//! The TUN is created inside its namespace by a short-lived thread that `setns(2)`s
//! into it (a namespace switch is per thread for `CLONE_NEWNET`), opens
//! `/dev/net/tun`, issues `TUNSETIFF`, writes the namespace's sysctls (`/proc/sys/net`
//! resolves to the calling thread's namespace: fs/proc/proc_sysctl.c via
//! net/sysctl_net.c:net_ctl_header_lookup) and exits; the file descriptor stays with
//! the process, the device in the namespace. The device is not persistent: it
//! disappears when the descriptor is closed, and the namespace with `ip netns del`.
//! [`Namespaces`] removes everything on drop (normal exit, error paths, unwinding);
//! after a SIGKILL, the next start's [`cleanup_stale`] removes sets whose owner pid
//! is dead.

use std::ffi::CString;
use std::fs;
use std::io::Write;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::process::Command;

/// Name of the TUN device in every namespace.
pub const TUN_NAME: &str = "l4stun0";
/// Where `ip netns` keeps its namespaces (bind mounts).
pub const NETNS_DIR: &str = "/run/netns";
/// Most flows one emulator runs (two namespaces each; the loop scans flows per event).
pub const MAX_EMU_FLOWS: usize = 250;

/// Sender address of flow `i` (`i < MAX_EMU_FLOWS`).
pub fn sender_addr(i: usize) -> [u8; 4] {
    [10, 250, (i / 250) as u8, (i % 250 + 1) as u8]
}
/// Receiver address of flow `i`.
pub fn receiver_addr(i: usize) -> [u8; 4] {
    [10, 251, (i / 250) as u8, (i % 250 + 1) as u8]
}
pub fn fmt_addr(a: [u8; 4]) -> String {
    format!("{}.{}.{}.{}", a[0], a[1], a[2], a[3])
}

/// Whether `prefix` is acceptable: 1–16 of `[a-z0-9]`.
pub fn check_prefix(prefix: &str) -> Result<(), String> {
    if prefix.is_empty() || prefix.len() > 16 || !prefix.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit()) {
        return Err(format!("--prefix: {prefix:?} is not allowed (1 to 16 characters of a-z, 0-9)"));
    }
    Ok(())
}

/// Run `ip ARGS`; a one-line error with ip's own message on failure.
pub fn ip(args: &[&str]) -> Result<(), String> {
    let out = Command::new("ip").args(args).output().map_err(|e| format!("cannot run ip: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        let msg = String::from_utf8_lossy(&out.stderr);
        Err(format!("ip {}: {}", args.join(" "), msg.trim().lines().next().unwrap_or("failed")))
    }
}

/// A namespace the emulator made, with its TUN.
pub struct Netns {
    pub name: String,
    pub tun: OwnedFd,
}

/// Every namespace and TUN of this run; removed on drop.
pub struct Namespaces {
    pub list: Vec<Netns>,
    /// Names created whose TUN is not open yet (a failure in between).
    pending: Vec<String>,
}

impl Namespaces {
    pub fn new() -> Self {
        Namespaces { list: Vec::new(), pending: Vec::new() }
    }

    /// Create namespace `name` with `lo` up, the TUN device up with `addr`/32, a /32
    /// route to `peer` carrying `route_opts` (`initcwnd`, `rto_min`, `quickack`), and
    /// `sysctls` (paths under /proc/sys, values) written inside it.
    /// `gso`: leave generic segmentation offload on the TUN (the kernel default);
    /// off, the sender's TCP builds one-segment skbs (`tso = false`).
    #[allow(clippy::too_many_arguments)]
    pub fn add(
        &mut self,
        name: &str,
        addr: [u8; 4],
        peer: [u8; 4],
        route_opts: &[String],
        sysctls: &[(String, String)],
        gso: bool,
    ) -> Result<(RawFd, OwnedFd), String> {
        ip(&["netns", "add", name])?;
        self.pending.push(name.to_string());
        let (tun, tap) = open_tun_in(name, sysctls, gso)?;
        let fd = tun.as_raw_fd();
        self.pending.pop();
        self.list.push(Netns { name: name.to_string(), tun });
        ip(&["-n", name, "link", "set", "lo", "up"])?;
        ip(&["-n", name, "link", "set", TUN_NAME, "up"])?;
        let a = format!("{}/32", fmt_addr(addr));
        ip(&["-n", name, "addr", "add", &a, "dev", TUN_NAME])?;
        let p = format!("{}/32", fmt_addr(peer));
        let mut args: Vec<&str> = vec!["-n", name, "route", "add", &p, "dev", TUN_NAME];
        args.extend(route_opts.iter().map(String::as_str));
        ip(&args)?;
        Ok((fd, tap))
    }

    /// Close every TUN and delete every namespace, after ending every process still
    /// inside it; returns how many were removed.
    pub fn remove_all(&mut self) -> usize {
        let mut n = 0;
        for ns in self.list.drain(..) {
            drop(ns.tun);
            if delete(&ns.name) {
                n += 1;
            }
        }
        for name in self.pending.drain(..) {
            if delete(&name) {
                n += 1;
            }
        }
        n
    }
}

impl Default for Namespaces {
    fn default() -> Self {
        Self::new()
    }
}

impl Drop for Namespaces {
    fn drop(&mut self) {
        self.remove_all();
    }
}

/// `struct ifreq` as `TUNSETIFF` reads it (include/uapi/linux/if.h): the name and
/// the flags, padded to the union's 24 bytes.
#[repr(C)]
struct IfReq {
    name: [libc::c_char; libc::IFNAMSIZ],
    flags: libc::c_short,
    _pad: [u8; 22],
}

/// `_IOW('T', 202, int)` (include/uapi/linux/if_tun.h).
const TUNSETIFF: libc::c_ulong = 0x4004_54ca;
const IFF_TUN: libc::c_short = 0x0001;
const IFF_NO_PI: libc::c_short = 0x1000;

/// `what: <the last OS error>`.
pub(crate) fn errno_msg(what: &str) -> String {
    format!("{what}: {}", std::io::Error::last_os_error())
}

/// `struct ethtool_value` (include/uapi/linux/ethtool.h).
#[repr(C)]
struct EthtoolValue {
    cmd: u32,
    data: u32,
}

/// `struct ifreq` with `ifr_data` (the `SIOCETHTOOL` argument).
#[repr(C)]
struct IfReqData {
    name: [libc::c_char; libc::IFNAMSIZ],
    data: *mut EthtoolValue,
    _pad: [u8; 16],
}

const SIOCETHTOOL: libc::c_ulong = 0x8946;
const ETHTOOL_GGSO: u32 = 0x23;
const ETHTOOL_SGSO: u32 = 0x24;

/// `ethtool -K TUN_NAME gso off` in the calling thread's namespace (the `SIOCETHTOOL`
/// ioctl ethtool(8) uses; net/ethtool/ioctl.c:ethtool_set_one_feature), read back.
fn gso_off() -> Result<(), String> {
    // SAFETY: a datagram socket only used for the ioctl, closed by OwnedFd.
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return Err(errno_msg("socket"));
    }
    // SAFETY: fd is ours.
    let _sock = unsafe { OwnedFd::from_raw_fd(fd) };
    let mut val = EthtoolValue { cmd: ETHTOOL_SGSO, data: 0 };
    let mut req = IfReqData { name: [0; libc::IFNAMSIZ], data: &mut val, _pad: [0; 16] };
    for (d, s) in req.name.iter_mut().zip(TUN_NAME.bytes()) {
        *d = s as libc::c_char;
    }
    // SAFETY: SIOCETHTOOL reads the ifreq and the ethtool_value it points to, both ours.
    if unsafe { libc::ioctl(fd, SIOCETHTOOL as _, &mut req as *mut IfReqData) } < 0 {
        return Err(errno_msg("tso: ethtool gso off on the TUN"));
    }
    val = EthtoolValue { cmd: ETHTOOL_GGSO, data: 1 };
    req.data = &mut val;
    // SAFETY: as above.
    if unsafe { libc::ioctl(fd, SIOCETHTOOL as _, &mut req as *mut IfReqData) } < 0 || val.data != 0 {
        return Err("tso: the kernel kept gso on for the TUN".into());
    }
    Ok(())
}

/// In a thread inside namespace `name`: write `sysctls`, create the TUN device
/// (with GSO off unless `gso`) and its packet tap (`tap.rs`).
fn open_tun_in(name: &str, sysctls: &[(String, String)], gso: bool) -> Result<(OwnedFd, OwnedFd), String> {
    let path = format!("{NETNS_DIR}/{name}");
    let sysctls = sysctls.to_vec();
    let h = std::thread::spawn(move || -> Result<(OwnedFd, OwnedFd), String> {
        let nsf = fs::File::open(&path).map_err(|e| format!("open {path}: {e}"))?;
        // SAFETY: setns on an open namespace file; affects only this thread, which ends here.
        if unsafe { libc::setns(nsf.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
            return Err(errno_msg("setns"));
        }
        for (k, v) in &sysctls {
            let p = format!("/proc/sys/{}", k.replace('.', "/"));
            let r = fs::OpenOptions::new().write(true).open(&p).and_then(|mut f| f.write_all(v.as_bytes()));
            if let Err(e) = r {
                // IPv6 may be compiled out; everything else must be applied.
                if !k.starts_with("net.ipv6.") {
                    return Err(format!("sysctl {k}={v}: {e}"));
                }
            }
        }
        let dev = CString::new("/dev/net/tun").unwrap();
        // SAFETY: plain open(2).
        let fd = unsafe { libc::open(dev.as_ptr(), libc::O_RDWR | libc::O_NONBLOCK | libc::O_CLOEXEC) };
        if fd < 0 {
            return Err(errno_msg("open /dev/net/tun"));
        }
        // SAFETY: fd is ours and open.
        let owned = unsafe { OwnedFd::from_raw_fd(fd) };
        let mut req = IfReq { name: [0; libc::IFNAMSIZ], flags: IFF_TUN | IFF_NO_PI, _pad: [0; 22] };
        for (d, s) in req.name.iter_mut().zip(TUN_NAME.bytes()) {
            *d = s as libc::c_char;
        }
        // SAFETY: TUNSETIFF reads an ifreq we own.
        if unsafe { libc::ioctl(fd, TUNSETIFF as _, &mut req as *mut IfReq) } < 0 {
            return Err(errno_msg("TUNSETIFF"));
        }
        if !gso {
            gso_off()?;
        }
        let tap = crate::tap::open(TUN_NAME)?;
        Ok((owned, tap))
    });
    h.join().map_err(|_| "the namespace thread panicked".to_string())?
}

/// The owner pid of a namespace named `{prefix}-{pid}-...`, if it is one of ours.
pub fn owner_pid(name: &str, prefix: &str) -> Option<u32> {
    let rest = name.strip_prefix(prefix)?.strip_prefix('-')?;
    let (pid, tail) = rest.split_once('-')?;
    if tail.is_empty() {
        return None;
    }
    pid.parse().ok()
}

/// Namespaces with `prefix` whose owner is dead (or all of them with `all`).
pub fn stale_namespaces(prefix: &str, all: bool) -> Vec<String> {
    let Ok(rd) = fs::read_dir(NETNS_DIR) else { return Vec::new() };
    let mut v: Vec<String> = rd
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| match owner_pid(n, prefix) {
            Some(pid) => all || !std::path::Path::new(&format!("/proc/{pid}")).exists(),
            None => false,
        })
        .collect();
    v.sort();
    v
}

/// Remove stale namespaces (their TUNs went with their owner) and every process still
/// inside them; returns how many.
pub fn cleanup_stale(prefix: &str, all: bool) -> usize {
    stale_namespaces(prefix, all).iter().filter(|n| delete(n)).count()
}

/// The processes inside namespace `name` (`ip netns pids`: every process whose
/// `/proc/PID/ns/net` is the namespace's inode), this process excepted.
pub fn pids_inside(name: &str) -> Vec<i32> {
    let me = std::process::id() as i32;
    Command::new("ip")
        .args(["netns", "pids", name])
        .output()
        .map(|o| {
            String::from_utf8_lossy(&o.stdout)
                .split_whitespace()
                .filter_map(|p| p.parse::<i32>().ok())
                .collect::<Vec<i32>>()
        })
        .unwrap_or_default()
        .into_iter()
        .filter(|&p: &i32| p > 1 && p != me)
        .collect()
}

/// SIGKILL every process inside `name`, then delete the namespace. `ip netns del`
/// only removes the name: a process still inside (an `iperf3 -s`, a user's command
/// whose owner died) keeps the namespace and its devices alive, unnamed and out of
/// reach of any later cleanup. Bounded: three rounds (a process forking while it is
/// killed), 20 ms apart.
pub fn delete(name: &str) -> bool {
    for _ in 0..3 {
        let pids = pids_inside(name);
        if pids.is_empty() {
            break;
        }
        for p in pids {
            // SAFETY: kill(2) with a pid read from the namespace; no memory involved.
            unsafe { libc::kill(p, libc::SIGKILL) };
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    ip(&["netns", "del", name]).is_ok()
}

/// Namespaces of this process (by name prefix `{prefix}-{pid}-`), for the tests.
pub fn own_namespaces(prefix: &str, pid: u32) -> Vec<String> {
    let Ok(rd) = fs::read_dir(NETNS_DIR) else { return Vec::new() };
    rd.filter_map(|e| e.ok()?.file_name().into_string().ok()).filter(|n| owner_pid(n, prefix) == Some(pid)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_addresses() {
        assert_eq!(owner_pid("l4se-123-s0", "l4se"), Some(123));
        assert_eq!(owner_pid("l4se-123-", "l4se"), None);
        assert_eq!(owner_pid("l4sex-123-s0", "l4se"), None);
        assert_eq!(owner_pid("other", "l4se"), None);
        assert_eq!(fmt_addr(sender_addr(0)), "10.250.0.1");
        assert_eq!(fmt_addr(receiver_addr(249)), "10.251.0.250");
        assert_eq!(fmt_addr(sender_addr(250)), "10.250.1.1");
        assert!(check_prefix("l4se").is_ok());
        assert!(check_prefix("L4SE").is_err() && check_prefix("").is_err() && check_prefix("a-b").is_err());
    }
}
