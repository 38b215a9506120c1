//! When a packet really reached a TUN: the kernel's stamp, not the loop's read.
//!
//! A packet a namespace sends is written into its TUN's ring by `tun_net_xmit`; the
//! loop reads it when it next looks, which is late by however long the loop slept:
//! on a VM a `ppoll` woken by the arrival returns 15–40 µs later (the hypervisor's
//! wake-up), while during the spin before a departure the read is prompt. Stamping
//! packets with the read time therefore puts a variable delay in front of the
//! bottleneck that no link has: a packet that waited in the ring enters the qdisc
//! late and its sojourn is measured short by that much (sub-ms L4S queues feel it).
//!
//! Each TUN therefore has a packet tap beside it: an `AF_PACKET` socket bound to the
//! device, taking the packets the namespace transmits (`PACKET_OUTGOING`: a classic
//! BPF filter on the `pkttype` ancillary field keeps only those, truncated to
//! [`KEY`] bytes), stamped by the kernel as `dev_queue_xmit_nit` clones them for the
//! taps (`net/core/dev.c`: `net_timestamp_set`, `CLOCK_REALTIME`, enabled by
//! `SO_TIMESTAMPNS`), immediately before `ndo_start_xmit` puts them in the TUN's
//! ring. The loop matches each packet it reads from the TUN to its tap record by its
//! first [`KEY`] bytes (IP header and transport header: the order is the same, the
//! match is at the head unless the TUN dropped a packet) and uses the kernel's stamp
//! as the arrival time; how late the read was is the emulator's arrival lateness,
//! reported beside its departure error. A packet without a record (the tap's buffer
//! overflowed) keeps the read time and is counted.

use crate::netns::errno_msg;
use l4slab_core::trace::histogram::DelayHistogram;
use std::collections::VecDeque;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// Bytes of a packet that identify it: the IPv4 header (20) and 28 of the transport
/// header (TCP's sequence, ACK and options; UDP's header and payload start).
pub const KEY: usize = 48;
/// Tap records kept while waiting for their packet (more: the oldest go).
const RING: usize = 4096;
/// Records scanned for a packet before giving up (the TUN drops only at a full ring).
const SCAN: usize = 256;
/// A stamp further than this from the read time is not believed (a clock step).
const BELIEVE_NS: u64 = 1_000_000_000;
/// The tap's receive buffer (records are clones of whole skbs until trimmed).
const RCVBUF: libc::c_int = 8 << 20;

const ETH_P_ALL: u16 = 0x0003;
const PACKET_OUTGOING: u32 = 4;
const SKF_AD_OFF: u32 = 0xffff_f000;
const SKF_AD_PKTTYPE: u32 = 4;
const BPF_LD_W_ABS: u16 = 0x20;
const BPF_JEQ_K: u16 = 0x15;
const BPF_RET_K: u16 = 0x06;

fn setsockopt<T>(fd: libc::c_int, level: libc::c_int, name: libc::c_int, v: &T, what: &str) -> Result<(), String> {
    // SAFETY: `v` is a live value of the size passed.
    let r = unsafe {
        libc::setsockopt(fd, level, name, v as *const T as *const libc::c_void, std::mem::size_of::<T>() as u32)
    };
    if r != 0 {
        return Err(errno_msg(what));
    }
    Ok(())
}

/// Open the tap of device `dev` in the calling thread's network namespace.
pub fn open(dev: &str) -> Result<OwnedFd, String> {
    let name = std::ffi::CString::new(dev).map_err(|_| format!("tap: bad device name {dev:?}"))?;
    // SAFETY: if_nametoindex reads a NUL-terminated string.
    let ifindex = unsafe { libc::if_nametoindex(name.as_ptr()) };
    if ifindex == 0 {
        return Err(errno_msg("tap: if_nametoindex"));
    }
    // Protocol 0: no packet is taken until bind, after the filter is in place.
    // SAFETY: plain socket(2).
    let fd = unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_RAW | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return Err(errno_msg("tap: socket(AF_PACKET)"));
    }
    // SAFETY: fd is ours.
    let owned = unsafe { OwnedFd::from_raw_fd(fd) };
    let prog = [
        libc::sock_filter { code: BPF_LD_W_ABS, jt: 0, jf: 0, k: SKF_AD_OFF + SKF_AD_PKTTYPE },
        libc::sock_filter { code: BPF_JEQ_K, jt: 0, jf: 1, k: PACKET_OUTGOING },
        libc::sock_filter { code: BPF_RET_K, jt: 0, jf: 0, k: KEY as u32 },
        libc::sock_filter { code: BPF_RET_K, jt: 0, jf: 0, k: 0 },
    ];
    let fprog = libc::sock_fprog { len: prog.len() as u16, filter: prog.as_ptr() as *mut libc::sock_filter };
    setsockopt(fd, libc::SOL_SOCKET, libc::SO_ATTACH_FILTER, &fprog, "tap: SO_ATTACH_FILTER")?;
    setsockopt(fd, libc::SOL_SOCKET, libc::SO_TIMESTAMPNS, &1 as &libc::c_int, "tap: SO_TIMESTAMPNS")?;
    // Root may exceed rmem_max; if not, the default buffer still works (overflow is counted).
    let _ = setsockopt(fd, libc::SOL_SOCKET, libc::SO_RCVBUFFORCE, &RCVBUF, "tap: SO_RCVBUFFORCE");
    // SAFETY: zeroed sockaddr_ll is valid; the fields that matter are set below.
    let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
    sll.sll_family = libc::AF_PACKET as u16;
    sll.sll_protocol = ETH_P_ALL.to_be();
    sll.sll_ifindex = ifindex as i32;
    // SAFETY: bind reads a sockaddr_ll we own.
    let r = unsafe {
        libc::bind(
            fd,
            &sll as *const libc::sockaddr_ll as *const libc::sockaddr,
            std::mem::size_of::<libc::sockaddr_ll>() as u32,
        )
    };
    if r != 0 {
        return Err(errno_msg("tap: bind"));
    }
    Ok(owned)
}

struct Record {
    head: [u8; KEY],
    len: usize,
    stamp: u64,
}

/// One TUN's tap: its records waiting for their packets, and the arrival lateness.
pub struct Tap {
    fd: OwnedFd,
    ring: VecDeque<Record>,
    buf: [u8; KEY],
    cmsg: [u64; 16],
    /// Packets matched to a record / read without one.
    pub matched: u64,
    pub unmatched: u64,
}

impl Tap {
    pub fn new(fd: OwnedFd) -> Self {
        Tap { fd, ring: VecDeque::with_capacity(RING), buf: [0; KEY], cmsg: [0; 16], matched: 0, unmatched: 0 }
    }

    /// Take every record the tap has.
    fn drain(&mut self) {
        loop {
            let mut iov = libc::iovec { iov_base: self.buf.as_mut_ptr() as *mut libc::c_void, iov_len: KEY };
            // SAFETY: a zeroed msghdr is valid; the pointers set below outlive the call.
            let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
            msg.msg_iov = &mut iov;
            msg.msg_iovlen = 1;
            msg.msg_control = self.cmsg.as_mut_ptr() as *mut libc::c_void;
            msg.msg_controllen = std::mem::size_of_val(&self.cmsg) as _;
            // SAFETY: recvmsg on our socket into our buffers.
            let n = unsafe { libc::recvmsg(self.fd.as_raw_fd(), &mut msg, libc::MSG_DONTWAIT) };
            if n <= 0 {
                return;
            }
            let mut stamp = None;
            // SAFETY: walking the control buffer the kernel filled, with its macros.
            unsafe {
                let mut c = libc::CMSG_FIRSTHDR(&msg);
                while !c.is_null() {
                    if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_TIMESTAMPNS {
                        let ts = std::ptr::read_unaligned(libc::CMSG_DATA(c) as *const libc::timespec);
                        stamp = Some(ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64);
                    }
                    c = libc::CMSG_NXTHDR(&msg, c);
                }
            }
            let Some(stamp) = stamp else { continue };
            if self.ring.len() == RING {
                self.ring.pop_front();
            }
            self.ring.push_back(Record { head: self.buf, len: n as usize, stamp });
        }
    }

    fn find(&mut self, pkt: &[u8]) -> Option<u64> {
        let k = pkt.len().min(KEY);
        let at = self.ring.iter().take(SCAN).position(|r| r.len >= k && r.head[..k] == pkt[..k])?;
        // Records before the match are packets the TUN dropped or that were not read.
        self.ring.drain(..at);
        self.ring.pop_front().map(|r| r.stamp)
    }

    /// How late `pkt`, read from the TUN at `read_unix` (`CLOCK_REALTIME` ns), was
    /// read: `None` if it has no believable record.
    pub fn lateness(&mut self, pkt: &[u8], read_unix: u64) -> Option<u64> {
        let stamp = match self.find(pkt) {
            Some(s) => Some(s),
            None => {
                self.drain();
                self.find(pkt)
            }
        };
        match stamp {
            Some(s) if read_unix + 1_000 >= s && read_unix - s.min(read_unix) < BELIEVE_NS => {
                self.matched += 1;
                Some(read_unix.saturating_sub(s))
            }
            _ => {
                self.unmatched += 1;
                None
            }
        }
    }
}

/// The arrival lateness of every matched packet, over all taps.
pub struct Lateness {
    pub hist: DelayHistogram,
    pub max: u64,
}

impl Default for Lateness {
    fn default() -> Self {
        Self::new()
    }
}

impl Lateness {
    pub fn new() -> Self {
        Lateness { hist: DelayHistogram::new(), max: 0 }
    }
    #[inline]
    pub fn record(&mut self, ns: u64) {
        self.hist.record(ns);
        self.max = self.max.max(ns);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tap_with(records: &[(&[u8], u64)]) -> Tap {
        // Any descriptor will do: matching never reads it while records match.
        let fd = std::fs::File::open("/dev/null").unwrap();
        let mut t = Tap::new(OwnedFd::from(fd));
        for (bytes, stamp) in records {
            let mut head = [0u8; KEY];
            let n = bytes.len().min(KEY);
            head[..n].copy_from_slice(&bytes[..n]);
            t.ring.push_back(Record { head, len: n, stamp: *stamp });
        }
        t
    }

    fn pkt(tag: u8, len: usize) -> Vec<u8> {
        (0..len).map(|i| tag.wrapping_add(i as u8)).collect()
    }

    #[test]
    fn a_packet_takes_its_own_records_stamp_and_skips_dropped_ones() {
        let (a, b, c) = (pkt(1, 1500), pkt(2, 1500), pkt(3, 60));
        let mut t = tap_with(&[(&a, 1_000), (&b, 2_000), (&c, 3_000)]);
        // b read at 2 500: 500 ns late; a (never read: the TUN dropped it) goes with it.
        assert_eq!(t.lateness(&b, 2_500), Some(500));
        assert_eq!(t.ring.len(), 1);
        // Only the first KEY bytes identify a packet: c matches on its 48.
        assert_eq!(t.lateness(&c, 3_040), Some(40));
        assert_eq!((t.matched, t.unmatched), (2, 0));
        // A packet without a record keeps the read time and is counted.
        assert_eq!(t.lateness(&pkt(9, 100), 5_000), None);
        assert_eq!(t.unmatched, 1);
    }

    #[test]
    fn a_stamp_from_the_future_or_a_clock_step_away_is_not_believed() {
        let a = pkt(1, 200);
        assert_eq!(tap_with(&[(&a, 10_000)]).lateness(&a, 5_000), None, "stamped after the read");
        assert_eq!(tap_with(&[(&a, 10)]).lateness(&a, 10 + 2 * BELIEVE_NS), None, "a clock step");
        // Within 1 µs after the read: the two clocks' reads, not a future stamp.
        assert_eq!(tap_with(&[(&a, 10_500)]).lateness(&a, 10_000), Some(0));
    }

    #[test]
    fn packets_that_differ_after_the_key_are_one_packet_to_the_tap() {
        let mut a = pkt(1, 1500);
        let mut t = tap_with(&[(&a, 100)]);
        a[KEY + 10] ^= 0xff;
        assert_eq!(t.lateness(&a, 150), Some(50));
    }
}
