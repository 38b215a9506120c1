//! The receiving socket's buffer autotuning as Linux keeps it (net/ipv4/tcp_input.c
//! and net/ipv4/tcp_minisocks.c, tcp_output.c of Linux 7.2), as far as it decides
//! *when* the receiver ACKs:
//!
//! - `tcp_grow_window`, run for every data skb of ≥ 128 bytes
//!   (`tcp_event_data_recv`, and `tcp_data_queue_ofo` for out-of-order ones), raises
//!   `rcv_ssthresh` by up to two `advmss` toward min(`window_clamp`, `tcp_space`) and,
//!   whenever it does, asks for one quick ACK (`inet_csk(sk)->icsk_ack.quick |= 1`):
//!   while the room opens the receiver ACKs every segment, otherwise every second;
//! - the room opens once per receive RTT, when the application's read runs DRS
//!   (`tcp_rcv_space_adjust` → `tcp_rcvbuf_grow`: twice the bytes read in the last
//!   RTT, plus room for the sender to double, grows `sk_rcvbuf` and `window_clamp`,
//!   capped by `tcp_rmem[2]`);
//! - the receive RTT (`rcv_rtt_est`) comes from the echoed timestamps
//!   (`tcp_rcv_rtt_measure_ts`, `tcp_rcv_rtt_update`): once per new TSecr, from a
//!   full-sized skb, in the 1-ms units of the TS clock; a smaller sample replaces the
//!   estimate, a larger one enters with gain 1/8.
//!
//! In slow start this makes runs of per-segment ACKs (while `rcv_ssthresh` catches up
//! with each DRS step) alternate with runs of per-second-segment ACKs, so which
//! segments an ACK covers is not fixed by the count since the connection began.
//!
//! Bytes of buffer are counted as Linux counts them, in `skb->truesize`: each received
//! segment as a 1514-byte frame in a 2 KiB buffer ([`RX_TRUESIZE`]); windows are
//! bytes of payload, `tcp_win_from_space` scaling by the measured len/truesize ratio.
//! The application reads every in-order byte as it arrives (the receiver's model), so
//! the queue holds the skb being processed and the out-of-order data.
//!
//! - the window each ACK advertises (`tcp_select_window` → `__tcp_select_window`):
//!   the free space of the buffer, no more than `rcv_ssthresh`, never shrinking the
//!   right edge already offered, scaled by the window scale ([`rcv_wscale`]); the sender sends no further
//!   (`tcp_snd_wnd_test`), so a slow start stops where the receiver's room does.
//!
//! A scenario that pins the window (`rwnd_bytes`, as `SO_RCVBUF` locks the buffer:
//! `SOCK_RCVBUF_LOCK`) runs none of this: its receiver ACKs as before and its sender
//! keeps the fixed window. Not modelled: the window-dependent RTT sample
//! (`tcp_rcv_rtt_measure`, used only without timestamps) and memory pressure.
//!
//! The receiving kernel's version (a flow's `receiver_rcvbuf`, [`RcvbufKernel`]) picks
//! the rules, as the testbeds ran them:
//!
//! | version | window per byte of buffer | DRS (`tcp_rcv_space_adjust`) | `tcp_rmem[2]` |
//! |---|---|---|---|
//! | mainline (≥ 6.16) | `scaling_ratio`, measured len/truesize | `tcp_rcvbuf_grow`: 2·copied + 2·(2·copied)·growth | 32 MiB |
//! | 6.6 (6.6–6.15) | `scaling_ratio` | 2·copied + 16·advmss, + 2·that·growth, `tcp_space_from_win` | 6 MiB |
//! | 5.15, 5.10 (≤ 6.5) | `tcp_adv_win_scale` 1: half | the same, in `SKB_TRUESIZE(advmss + MAX_TCP_HEADER)` per advmss | 6 MiB |
//!
//! (6.6 has "tcp: get rid of sysctl_tcp_adv_win_scale"; 6.16 "tcp: add
//! tcp_rcvbuf_grow()" and "tcp: increase tcp_rmem[2] to 32 MB".)

use crate::config::RcvbufKernel;
use crate::time::{Time, NS_PER_US};

/// `tcp_rmem` defaults (bytes of truesize): min, initial `sk_rcvbuf`, and the DRS cap
/// of the kernels before 6.16 (6 MiB). `tcp_init` sets the cap to min(cap, RAM / 128):
/// a testbed host has the RAM, so the cap is the kernel's constant ([`tcp_rmem_max`]).
pub const TCP_RMEM: [u64; 3] = [4096, 131_072, 6_291_456];
/// The DRS cap from Linux 6.16 on (net/ipv4/tcp.c:tcp_init, "tcp: increase
/// tcp_rmem[2] to 32 MB").
pub const TCP_RMEM_MAX_6_16: u64 = 32 << 20;

/// `tcp_rmem[2]` of a receiving host running `kernel`: 32 MiB from 6.16 on, 6 MiB
/// before (the L4STeam trees of the DualQ (5.10), PAM 2025 (5.15) and coexistence (6.6)
/// testbeds).
pub fn tcp_rmem_max(kernel: RcvbufKernel) -> u64 {
    match kernel {
        RcvbufKernel::Mainline => TCP_RMEM_MAX_6_16,
        RcvbufKernel::V6_6 | RcvbufKernel::V5_15 | RcvbufKernel::V5_10 => TCP_RMEM[2],
    }
}
/// Whether a receiving host running `kernel` ACKs a full-sized segment with PSH at
/// once (`tcp_input.c:tcp_measure_rcv_mss` sets `ICSK_ACK_PUSHED` for it,
/// `tcp.c:tcp_cleanup_rbuf` ACKs after the read): "tcp: fix delayed ACKs for MSS
/// boundary condition" (4720852ed9af, Linux 6.6-rc5, October 2023), so mainline and
/// 6.6 have it. It carries a `Fixes:` tag and reached the 5.15 and 5.10 stable
/// series (Ubuntu's 5.15.0-93, January 2024), but the 5.10 and 5.15 receivers here are
/// the testbeds' L4STeam trees, forks that do not carry it (the DualQ paper's 5.10.31 of
/// April 2021; L4STeam/linux's pre-6.6 `tcp_input.c` at 01266553 has no PSH clause in
/// `tcp_measure_rcv_mss`): they keep delaying the ACK of a full-sized PSH segment.
pub fn psh_pushes(kernel: RcvbufKernel) -> bool {
    match kernel {
        RcvbufKernel::Mainline | RcvbufKernel::V6_6 => true,
        RcvbufKernel::V5_15 | RcvbufKernel::V5_10 => false,
    }
}

/// Each receiver version's `tcp_rmem` (min, default, max) as the schema publishes it, by
/// the name a flow's `receiver_rcvbuf` takes: the kernel backend sets its guest's sysctl
/// from these (a guest has less RAM than a testbed host, so `tcp_init` would cap the
/// maximum lower).
pub fn receiver_rcvbufs() -> serde_json::Value {
    let entry = |kernel| serde_json::json!({ "tcp_rmem": [TCP_RMEM[0], TCP_RMEM[1], tcp_rmem_max(kernel)] });
    serde_json::json!({
        "mainline": entry(RcvbufKernel::Mainline),
        "6.6": entry(RcvbufKernel::V6_6),
        "5.15": entry(RcvbufKernel::V5_15),
        "5.10": entry(RcvbufKernel::V5_10),
    })
}

/// `TCP_RMEM_TO_WIN_SCALE`: the len/truesize ratio is in 1/256.
const RMEM_TO_WIN_SCALE: u32 = 8;
/// `TCP_DEFAULT_SCALING_RATIO`: 50 % until a full segment was measured; before 6.6
/// always (`tcp_adv_win_scale` 1: `space - (space >> 1)`).
const DEFAULT_SCALING_RATIO: u64 = 1 << (RMEM_TO_WIN_SCALE - 1);
/// Before 6.6, DRS sizes the buffer per advmss of window by `SKB_TRUESIZE(advmss +
/// MAX_TCP_HEADER)` (x86-64: + 320 of headers, + 256 and 320 for `struct sk_buff` and
/// `skb_shared_info`), raised by 128 until its window holds an advmss
/// (`tcp_rcv_space_adjust`).
const SKB_TRUESIZE_OVERHEAD: u64 = 320 + 256 + 320;
/// `TCP_INIT_CWND`.
const TCP_INIT_CWND: u64 = 10;
/// `sysctl_tcp_app_win` default.
const TCP_APP_WIN: u32 = 31;
/// `sysctl_tcp_rcvbuf_low_rtt` default, µs: below it DRS grows in proportion to the RTT.
const RCVBUF_LOW_RTT_US: u64 = 1000;
/// `TCP_MAX_WSCALE`.
const TCP_MAX_WSCALE: u32 = 14;
/// `sysctl_rmem_max` default (`net.core.rmem_max`), which the window scale also covers.
const RMEM_MAX: u64 = 212_992;
/// The receiver's window scale (`tcp_select_initial_window`) for a `tcp_rmem[2]` of
/// `rmem_max`: ilog2(max(`tcp_rmem[2]`, `rmem_max`)) − 15 (7 for 6 MiB, 10 for 32 MiB).
/// The sender scales each ACK's window field by it (the SYN/ACK's option, RFC 7323 §2.3).
pub fn rcv_wscale(rmem_max: u64) -> u32 {
    let space = rmem_max.max(RMEM_MAX);
    (63 - space.leading_zeros()).saturating_sub(15).min(TCP_MAX_WSCALE)
}
/// `MAX_TCP_WINDOW`: the largest unscaled window field.
const MAX_TCP_WINDOW: u64 = 65_535;
/// `skb->truesize` of a received full-sized segment: a 1514-byte frame in a 2 KiB
/// buffer plus `struct sk_buff` (2 048 + 256; the same frame size the DualPI2 model's
/// memory limit counts).
pub const RX_TRUESIZE: u64 = 2304;
/// `tp->advmss` of the receiving socket on a 1500-byte-MTU route with timestamps
/// (1460 − 12: `tcp_rcv_synsent_state_process` / `tcp_rcv_state_process` subtract
/// `TCPOLEN_TSTAMP_ALIGNED` once timestamps are agreed).
pub const RCV_ADVMSS: u64 = super::TCP_ADVMSS as u64 - crate::packet::TCPOLEN_TSTAMP_ALIGNED as u64;

/// The receive-buffer state of one socket (`sk_rcvbuf`, `window_clamp`,
/// `rcv_ssthresh`, `scaling_ratio`, `rcvq_space`, `rcv_rtt_est`).
#[derive(Clone, Debug)]
pub struct RcvBuf {
    /// `sk_rcvbuf`, bytes of truesize.
    rcvbuf: u64,
    /// `tp->window_clamp`, bytes.
    window_clamp: u64,
    /// `tp->rcv_ssthresh`, bytes.
    rcv_ssthresh: u64,
    /// `tp->rcv_wnd` at the handshake (`rsk_rcv_wnd`).
    rcv_wnd_init: u64,
    /// `tp->scaling_ratio`: payload/truesize in 1/256.
    scaling_ratio: u64,
    /// `tp->rcvq_space`: bytes read in the last measured RTT, and where and when the
    /// measurement started.
    space: u64,
    space_seq: u64,
    space_time: Time,
    /// `space_time` + the receive RTT: DRS runs at a read from then on (`Time::MAX`
    /// while there is no RTT).
    space_due: Time,
    /// `tp->rcv_rtt_est.rtt_us` (µs × 8; 0 = none yet).
    rtt_us8: u64,
    /// `tcp_rmem[2]`, the DRS cap, bytes of truesize.
    rmem_max: u64,
    /// SACK compression as Linux ≥ 6.19 arms it (`tcp_comp_sack_rtt_percent` of the
    /// RTT, 10-µs slack), not as before (5 % of the RTT, 100-µs slack).
    comp_sack_6_19: bool,
    /// `rx_opt.rcv_wscale`.
    wscale: u32,
    /// `tp->rcv_rtt_last_tsecr` (0 until the first: a TSecr of 0 is never measured).
    last_tsecr: u32,
    /// Before 6.6: the window is half the buffer, never measured (`tcp_adv_win_scale`).
    fixed_ratio: bool,
    /// Before 6.16: the older DRS formula (no `tcp_rcvbuf_grow`).
    legacy_drs: bool,
    /// min(`window_clamp`, the window of the buffer less one segment's truesize): the
    /// most `tcp_grow_window` can raise `rcv_ssthresh` to (the skb it runs for is
    /// queued), so at or above it there is nothing to do.
    grow_ceiling: u64,
    /// [`RcvBuf::select_window`] with nothing and with one segment queued, when it is
    /// not the low-space case (`u64::MAX` when it is): an ACK's usual cases.
    win_cache: [u64; 2],
}

impl Default for RcvBuf {
    fn default() -> Self {
        RcvBuf::new(RcvbufKernel::Mainline)
    }
}

impl RcvBuf {
    /// A passive open's values from its SYN: `sk_rcvbuf` = `tcp_rmem[1]`, the initial
    /// window `tcp_select_initial_window(tcp_full_space)` rounded down to the MSS
    /// (`tcp_openreq_init_rwin`), `rcv_ssthresh` = that window
    /// (`tcp_create_openreq_child`), the clamp the largest scaled window; the rules and
    /// `tcp_rmem[2]` of the receiving `kernel`.
    pub fn new(kernel: RcvbufKernel) -> Self {
        let rmem_max = tcp_rmem_max(kernel);
        let rcvbuf = TCP_RMEM[1];
        let ratio = DEFAULT_SCALING_RATIO;
        let full = win_from_space(ratio, rcvbuf);
        let mss = RCV_ADVMSS;
        let mut rcv_wnd = full;
        if rcv_wnd > mss {
            rcv_wnd -= rcv_wnd % mss;
        }
        // rcv_wscale = ilog2(max(space, tcp_rmem[2], rmem_max)) − 15, clamp 65535 << wscale.
        let mut b = RcvBuf {
            rcvbuf,
            window_clamp: MAX_TCP_WINDOW << rcv_wscale(rmem_max),
            rcv_ssthresh: rcv_wnd,
            rcv_wnd_init: rcv_wnd,
            scaling_ratio: ratio,
            space: 0,
            space_seq: 0,
            space_time: 0,
            space_due: Time::MAX,
            rtt_us8: 0,
            last_tsecr: 0,
            rmem_max,
            wscale: rcv_wscale(rmem_max),
            fixed_ratio: matches!(kernel, RcvbufKernel::V5_15 | RcvbufKernel::V5_10),
            legacy_drs: kernel != RcvbufKernel::Mainline,
            comp_sack_6_19: kernel == RcvbufKernel::Mainline,
            grow_ceiling: 0,
            win_cache: [u64::MAX; 2],
        };
        b.update_ceiling();
        b
    }

    /// [`RcvBuf::grow_ceiling`] and the window cache after `sk_rcvbuf`, `window_clamp`,
    /// `rcv_ssthresh` or the ratio changed.
    fn update_ceiling(&mut self) {
        self.grow_ceiling =
            self.window_clamp.min(win_from_space(self.scaling_ratio, self.rcvbuf.saturating_sub(RX_TRUESIZE)));
        for (k, rmem) in [0, RX_TRUESIZE].into_iter().enumerate() {
            // The low-space case depends on the MSS: never cached.
            let (win, low) = self.select_window_of(rmem, RCV_ADVMSS);
            self.win_cache[k] = if low { u64::MAX } else { win };
        }
    }

    /// Whether `tcp_grow_window` can raise `rcv_ssthresh` at all (the per-segment fast path).
    #[inline]
    pub fn may_grow(&self) -> bool {
        self.rcv_ssthresh < self.grow_ceiling
    }

    /// `tcp_init_buffer_space` when the connection is established: the clamp to the
    /// full space less one reserved segment, `rcv_ssthresh` under it, the first DRS
    /// measurement from `copied_seq` with `rcvq_space` = 10 segments.
    pub fn established(&mut self, now: Time, copied_seq: u64) {
        let advmss = RCV_ADVMSS;
        let maxwin = win_from_space(self.scaling_ratio, self.rcvbuf);
        if self.window_clamp >= maxwin {
            self.window_clamp = maxwin;
            if maxwin > 4 * advmss {
                self.window_clamp = (maxwin - (maxwin >> TCP_APP_WIN)).max(4 * advmss);
            }
        }
        if self.window_clamp > 2 * advmss && self.window_clamp + advmss > maxwin {
            self.window_clamp = (2 * advmss).max(maxwin.saturating_sub(advmss));
        }
        self.rcv_ssthresh = self.rcv_ssthresh.min(self.window_clamp);
        self.space = self.rcv_ssthresh.min(self.rcv_wnd_init).min(TCP_INIT_CWND * advmss);
        self.update_ceiling();
        self.space_seq = copied_seq;
        self.set_space_time(now);
    }

    /// The `scaling_ratio` update of `tcp_measure_rcv_mss`, for a skb of `len` bytes
    /// and `truesize` whose segment length is at least `rcv_mss` and differs from it.
    pub fn measure_ratio(&mut self, len: u64, truesize: u64) {
        if self.fixed_ratio {
            return;
        }
        let ratio = ((len << RMEM_TO_WIN_SCALE) / truesize.max(1)).clamp(1, 255);
        if ratio != self.scaling_ratio {
            self.scaling_ratio = ratio;
            self.window_clamp = win_from_space(ratio, self.rcvbuf);
            self.space = self.space.min(self.window_clamp);
            self.update_ceiling();
        }
    }

    /// `tcp_grow_window` for a data skb of `len` payload bytes and `truesize`, with
    /// `rmem_alloc` bytes of truesize queued (this skb included). True when
    /// `rcv_ssthresh` grew: the caller asks for a quick ACK (`icsk_ack.quick |= 1`).
    pub fn grow_window(&mut self, len: u64, truesize: u64, rmem_alloc: u64, rcv_mss: u64) -> bool {
        // Between DRS steps `rcv_ssthresh` sits at its ceiling: nothing can grow.
        if len < 128 || !self.may_grow() {
            return false;
        }
        let space = win_from_space(self.scaling_ratio, self.rcvbuf.saturating_sub(rmem_alloc));
        let room = self.window_clamp.min(space) as i64 - self.rcv_ssthresh as i64;
        if room <= 0 {
            return false;
        }
        let incr = if win_from_space(self.scaling_ratio, truesize) <= len {
            2 * RCV_ADVMSS
        } else {
            // `__tcp_grow_window`: halve both until the skb's share fits.
            let mut t = win_from_space(self.scaling_ratio, truesize) >> 1;
            let mut window = win_from_space(self.scaling_ratio, self.rmem_max) >> 1;
            let mut incr = 0;
            while self.rcv_ssthresh <= window {
                if t <= len {
                    incr = 2 * rcv_mss;
                    break;
                }
                t >>= 1;
                window >>= 1;
            }
            incr
        };
        if incr == 0 {
            return false;
        }
        let incr = incr.max(2 * len);
        self.rcv_ssthresh += (room as u64).min(incr);
        self.update_ceiling();
        true
    }

    /// `tcp_rcv_rtt_measure_ts` for a data skb of `len` bytes echoing `tsecr`, at
    /// `now` (the TS clock counts ms).
    #[inline]
    pub fn rtt_measure_ts(&mut self, now: Time, tsecr: u32, len: u64, rcv_mss: u64) {
        if self.last_tsecr == tsecr {
            return;
        }
        self.last_tsecr = tsecr;
        if len < rcv_mss {
            return;
        }
        self.rtt_sample_ts(super::ts_clock(now), tsecr);
    }

    /// The sample of [`RcvBuf::rtt_measure_ts`] from a new TSecr, at TS clock `ts_now`.
    fn rtt_sample_ts(&mut self, ts_now: u32, tsecr: u32) {
        // `tcp_rtt_tsopt_us(tp, 0)`: a delta of 0 ms gives no sample.
        let delta = ts_now.wrapping_sub(tsecr);
        if delta == 0 || delta >= i32::MAX as u32 / 1000 {
            return;
        }
        self.rtt_update(delta as u64 * 1000);
    }

    /// `tcp_rcv_rtt_update(tp, sample, 0)` (the application has read everything).
    fn rtt_update(&mut self, sample_us: u64) {
        let m = sample_us << 3;
        self.rtt_us8 =
            if self.rtt_us8 == 0 || m < self.rtt_us8 { m } else { self.rtt_us8 - (self.rtt_us8 >> 3) + sample_us };
        self.set_space_time(self.space_time);
    }

    /// `tcp_rcv_space_adjust` at an application read that left `copied_seq` (all that
    /// arrived in order): once per receive RTT, DRS grows the buffer when more was
    /// read than in the last one. `ooo_span`: bytes from `rcv_nxt` to the end of the
    /// out-of-order queue (0 when empty).
    pub fn space_adjust(&mut self, now: Time, copied_seq: u64, ooo_span: u64) {
        // No RTT yet, or less than one since the measurement started.
        if now < self.space_due {
            return;
        }
        self.space_adjust_due(now, copied_seq, ooo_span);
    }

    /// Whether [`RcvBuf::space_adjust`] at `now` would run DRS (the per-read fast path).
    #[inline]
    pub fn space_due(&self, now: Time) -> bool {
        now >= self.space_due
    }

    /// `rcvq_space.time` = `now`, and when DRS may next run (`time < rtt_us` in µs
    /// compared in ns: no division on the per-segment path).
    fn set_space_time(&mut self, now: Time) {
        self.space_time = now;
        self.space_due = if self.rtt_us8 == 0 { Time::MAX } else { now + (self.rtt_us8 >> 3) * NS_PER_US };
    }

    /// [`RcvBuf::space_adjust`] once a receive RTT has passed.
    fn space_adjust_due(&mut self, now: Time, copied_seq: u64, ooo_span: u64) {
        let copied = copied_seq - self.space_seq;
        if copied > self.space {
            self.rcvbuf_grow(copied, ooo_span);
        }
        self.space_seq = copied_seq;
        self.set_space_time(now);
    }

    /// `tcp_rcvbuf_grow`: rcvwin = 2·copied plus, above `tcp_rcvbuf_low_rtt`, room for
    /// the sender to double (2·rcvwin·growth), below it rcvwin·rtt/low_rtt; the
    /// buffer grows to fit (≤ `tcp_rmem[2]`) and the clamp follows.
    fn rcvbuf_grow(&mut self, newval: u64, ooo_span: u64) {
        let oldval = self.space.max(1);
        self.space = newval;
        if self.legacy_drs {
            self.rcvbuf_grow_legacy(newval, oldval);
            return;
        }
        let mut rcvwin = newval << 1;
        let rtt_us = self.rtt_us8 >> 3;
        let grow = if rtt_us < RCVBUF_LOW_RTT_US {
            rcvwin * rtt_us / RCVBUF_LOW_RTT_US
        } else {
            ((rcvwin as u128) * 2 * (newval - oldval.min(newval)) as u128 / oldval as u128) as u64
        };
        rcvwin += grow + ooo_span;
        let rcvbuf = space_from_win(self.scaling_ratio, rcvwin).min(self.rmem_max);
        self.set_rcvbuf(rcvbuf);
    }

    /// `tcp_rcv_space_adjust` before 6.16: rcvwin = 2·copied + 16·advmss ("some cushion
    /// because of small variations"), plus 2·rcvwin·(copied − last)/last for a sender
    /// growing its window; the buffer for it by `tcp_space_from_win` (6.6), or before
    /// 6.6 by whole advmss of `SKB_TRUESIZE(advmss + MAX_TCP_HEADER)` each.
    fn rcvbuf_grow_legacy(&mut self, copied: u64, last: u64) {
        let advmss = RCV_ADVMSS;
        let mut rcvwin = (copied << 1) + 16 * advmss;
        let grow = ((rcvwin as u128) * (copied - last.min(copied)) as u128 / last as u128) as u64;
        rcvwin += grow << 1;
        let rcvbuf = if self.fixed_ratio {
            let mut rcvmem = advmss + SKB_TRUESIZE_OVERHEAD;
            while win_from_space(self.scaling_ratio, rcvmem) < advmss {
                rcvmem += 128;
            }
            (rcvwin / advmss) * rcvmem
        } else {
            space_from_win(self.scaling_ratio, rcvwin)
        };
        self.set_rcvbuf(rcvbuf.min(self.rmem_max));
    }

    /// `sk_rcvbuf` grows to `rcvbuf` if larger, "and the window clamp follows along".
    fn set_rcvbuf(&mut self, rcvbuf: u64) {
        if rcvbuf > self.rcvbuf {
            self.rcvbuf = rcvbuf;
            self.window_clamp = win_from_space(self.scaling_ratio, rcvbuf);
            self.update_ceiling();
        }
    }

    /// The window a SYN/ACK offers (unscaled, RFC 7323 §2.2): `rsk_rcv_wnd`.
    pub fn synack_window(&self) -> u64 {
        self.rcv_wnd_init.min(MAX_TCP_WINDOW)
    }

    /// `__tcp_select_window` with `rmem_alloc` bytes of truesize queued, for a
    /// receiver whose `rcv_mss` is `rcv_mss`: the free space (`tcp_space`), held to
    /// `rcv_ssthresh`, rounded up to the window scale; 0 when less than a segment or a
    /// sixteenth of the buffer is free. The second value is true when the free space
    /// is under half the full space: Linux then leaves quick-ACK mode
    /// (`icsk_ack.quick = 0`).
    #[inline]
    pub fn select_window(&self, rmem_alloc: u64, rcv_mss: u64) -> (u64, bool) {
        let cached = match rmem_alloc {
            0 => self.win_cache[0],
            RX_TRUESIZE => self.win_cache[1],
            _ => u64::MAX,
        };
        if cached != u64::MAX {
            return (cached, false);
        }
        self.select_window_of(rmem_alloc, rcv_mss)
    }

    /// [`RcvBuf::select_window`], computed.
    fn select_window_of(&self, rmem_alloc: u64, rcv_mss: u64) -> (u64, bool) {
        // The window scale's unit is a power of two: round with masks, not divisions.
        let mask = (1u64 << self.wscale) - 1;
        let mut free = win_from_space(self.scaling_ratio, self.rcvbuf.saturating_sub(rmem_alloc));
        let allowed = win_from_space(self.scaling_ratio, self.rcvbuf);
        let full = self.window_clamp.min(allowed);
        let mss = rcv_mss.min(full);
        if full == 0 {
            return (0, false);
        }
        let mut low = false;
        if free < full >> 1 {
            low = true;
            free &= !mask;
            if free < allowed >> 4 || free < mss {
                return (0, true);
            }
        }
        let free = free.min(self.rcv_ssthresh);
        ((free + mask) & !mask, low)
    }

    /// `rx_opt.rcv_wscale`.
    pub fn wscale(&self) -> u32 {
        self.wscale
    }
    /// `rcv_ssthresh`, bytes.
    pub fn rcv_ssthresh(&self) -> u64 {
        self.rcv_ssthresh
    }
    /// `window_clamp`, bytes.
    pub fn window_clamp(&self) -> u64 {
        self.window_clamp
    }
    /// `sk_rcvbuf`, bytes of truesize.
    pub fn rcvbuf(&self) -> u64 {
        self.rcvbuf
    }
    /// `rcvq_space.space`, bytes.
    pub fn space(&self) -> u64 {
        self.space
    }
    /// `rcv_rtt_est.rtt_us` ×8 (0 = none yet).
    pub fn rtt_us8(&self) -> u64 {
        self.rtt_us8
    }
    /// When the SACK-compression hrtimer fires, ns after it is armed, for `rtt_us8`
    /// (µs × 8: the smaller of the receive RTT and the socket's srtt;
    /// `tcp_input.c:__tcp_ack_snd_check`): a share of the RTT capped at
    /// `tcp_comp_sack_delay_ns` (1 ms), plus the hrtimer's slack
    /// (`hrtimer_start_range_ns` fires at the end of its range unless another
    /// interrupt comes first). Linux ≥ 6.19 (the `mainline` rules):
    /// `tcp_comp_sack_rtt_percent`, 33 % of the RTT (`(rtt + rtt / 4) × 33` ns, "tcp:
    /// add net.ipv4.tcp_comp_sack_rtt_percent"), and a 10-µs slack ("tcp: reduce
    /// tcp_comp_sack_slack_ns default value to 10 usec", Nov 2025). The kernels
    /// before (5.8 to 6.18: `6.6`, `5.15`, `5.10`): 5 % of the RTT (`rtt *
    /// (NSEC_PER_USEC >> 3) / 20`) and 100 µs.
    pub fn comp_sack_timer_ns(&self, rtt_us8: u64) -> u64 {
        if self.comp_sack_6_19 {
            ((rtt_us8 + (rtt_us8 >> 2)) * super::TCP_COMP_SACK_RTT_PERCENT).min(super::TCP_COMP_SACK_DELAY_NS)
                + super::TCP_COMP_SACK_SLACK_NS
        } else {
            (rtt_us8 * (NS_PER_US >> 3) / 20).min(super::TCP_COMP_SACK_DELAY_NS) + super::TCP_COMP_SACK_SLACK_NS_OLD
        }
    }
}

/// `__tcp_win_from_space`.
#[inline]
fn win_from_space(ratio: u64, space: u64) -> u64 {
    (space * ratio) >> RMEM_TO_WIN_SCALE
}

/// `__tcp_space_from_win`.
#[inline]
fn space_from_win(ratio: u64, win: u64) -> u64 {
    (win << RMEM_TO_WIN_SCALE) / ratio.max(1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::NS_PER_MS;

    /// SACK compression's hrtimer by vintage (`tcp_input.c:__tcp_ack_snd_check`):
    /// 33 % of the RTT capped at 1 ms plus 10 µs on mainline (≥ 6.19); 5 % of it
    /// capped at 1 ms plus 100 µs before.
    #[test]
    fn the_sack_compression_timer_follows_the_receiving_kernel() {
        let us8 = |ms: u64| ms * 1000 * 8;
        let m = RcvBuf::new(RcvbufKernel::Mainline);
        assert_eq!(m.comp_sack_timer_ns(us8(2)), 660_000 + 10_000);
        assert_eq!(m.comp_sack_timer_ns(us8(10)), NS_PER_MS + 10_000);
        for k in [RcvbufKernel::V6_6, RcvbufKernel::V5_15, RcvbufKernel::V5_10] {
            let o = RcvBuf::new(k);
            assert_eq!(o.comp_sack_timer_ns(us8(10)), 500_000 + 100_000);
            assert_eq!(o.comp_sack_timer_ns(us8(30)), NS_PER_MS + 100_000);
        }
        assert_eq!(m.comp_sack_timer_ns(0), 10_000, "no RTT yet: the slack alone");
    }

    #[test]
    fn initial_values_are_linuxs() {
        let mut b = RcvBuf::new(RcvbufKernel::V6_6);
        // 131072 × 50 % = 65536 → 45 segments of 1448: 65160; wscale 7.
        assert_eq!((b.rcv_ssthresh, b.window_clamp), (65_160, 65_535 << 7));
        b.established(0, 0);
        // tcp_init_buffer_space: clamp 65536 − 1448, rcvq_space 10 × 1448 (a 7.2
        // receiver's tcp_info: rcv_space 14480).
        assert_eq!((b.window_clamp, b.rcv_ssthresh, b.space), (64_088, 64_088, 14_480));
        // The first full segment: ratio 1436·256/2304 = 159; clamp 131072·159/256.
        b.measure_ratio(1436, RX_TRUESIZE);
        assert_eq!(b.scaling_ratio, 159);
        assert_eq!(b.window_clamp, 131_072 * 159 / 256);
    }

    #[test]
    fn grow_window_climbs_two_segments_at_a_time_to_the_free_space() {
        let mut b = RcvBuf::new(RcvbufKernel::V6_6);
        b.established(0, 0);
        b.measure_ratio(1436, RX_TRUESIZE);
        let limit = win_from_space(159, TCP_RMEM[1] - RX_TRUESIZE);
        let mut grown = 0;
        while b.grow_window(1436, RX_TRUESIZE, RX_TRUESIZE, 1436) {
            grown += 1;
            assert!(b.rcv_ssthresh <= limit);
        }
        // (80 067 − 64 088) / 2 896 → 6 steps, the last one partial.
        assert_eq!(grown, 6);
        assert_eq!(b.rcv_ssthresh, limit);
        // Short skbs never grow it.
        let mut c = RcvBuf::new(RcvbufKernel::V6_6);
        c.established(0, 0);
        assert!(!c.grow_window(100, RX_TRUESIZE, RX_TRUESIZE, 1436));
    }

    #[test]
    fn drs_grows_the_buffer_once_per_receive_rtt() {
        let mut b = RcvBuf::new(RcvbufKernel::Mainline);
        b.established(0, 0);
        b.measure_ratio(1436, RX_TRUESIZE);
        // No RTT sample yet: nothing.
        b.space_adjust(5 * NS_PER_MS, 100_000, 0);
        assert_eq!(b.rcvbuf, TCP_RMEM[1]);
        // A 10-ms RTT from the echoed timestamps (the second sample is the same TSecr: ignored).
        b.rtt_measure_ts(110 * NS_PER_MS, 100, 1436, 1436);
        b.rtt_measure_ts(125 * NS_PER_MS, 100, 1436, 1436);
        assert_eq!(b.rtt_us8, 10_000 << 3);
        // Before an RTT since the measurement started: nothing.
        b.space_adjust(9 * NS_PER_MS, 20_000, 0);
        assert_eq!(b.rcvbuf, TCP_RMEM[1]);
        // 28 960 B read in the RTT against 14 480: rcvwin = 2·28960 + 2·57920·1 = 173 760.
        b.space_adjust(10 * NS_PER_MS, 28_960, 0);
        assert_eq!(b.space, 28_960);
        assert_eq!(b.rcvbuf, space_from_win(159, 173_760));
        assert_eq!(b.window_clamp, win_from_space(159, b.rcvbuf));
        // The cap.
        b.space_adjust(30 * NS_PER_MS, 50_000_000, 0);
        assert_eq!(b.rcvbuf, TCP_RMEM_MAX_6_16);
        // A smaller RTT sample replaces the estimate; a larger one enters with gain 1/8.
        b.rtt_measure_ts(205 * NS_PER_MS, 200, 1436, 1436);
        assert_eq!(b.rtt_us8, 5_000 << 3);
        b.rtt_measure_ts(313 * NS_PER_MS, 300, 1436, 1436);
        assert_eq!(b.rtt_us8, (5_000 << 3) - (5_000 << 3 >> 3) + 13_000);
    }

    #[test]
    fn before_6_16_drs_adds_sixteen_segments_and_before_6_6_the_window_is_half_the_buffer() {
        // 5.10: the ratio stays 1/2 whatever the segments measure.
        let mut b = RcvBuf::new(RcvbufKernel::V5_10);
        b.established(0, 0);
        b.measure_ratio(1436, RX_TRUESIZE);
        assert_eq!(b.scaling_ratio, DEFAULT_SCALING_RATIO);
        b.rtt_measure_ts(110 * NS_PER_MS, 100, 1448, 1448);
        // 28 960 B read against 14 480: rcvwin = 2·28 960 + 16·1448 = 81 088, + 2·81 088·1
        // = 243 264, i.e. 168 advmss of SKB_TRUESIZE(1448 + 320) = 2 344 raised to 2 984
        // (half of it ≥ 1448).
        b.space_adjust(10 * NS_PER_MS, 28_960, 0);
        assert_eq!(b.rcvbuf, 168 * 2_984);
        assert_eq!(b.window_clamp, 168 * 2_984 / 2);
        // 6.6: the same window, its buffer from the measured ratio (tcp_space_from_win).
        let mut c = RcvBuf::new(RcvbufKernel::V6_6);
        c.established(0, 0);
        c.measure_ratio(1436, RX_TRUESIZE);
        c.rtt_measure_ts(110 * NS_PER_MS, 100, 1448, 1448);
        c.space_adjust(10 * NS_PER_MS, 28_960, 0);
        assert_eq!(c.rcvbuf, space_from_win(159, 243_264));
        // Both stop at 6 MiB.
        b.space_adjust(30 * NS_PER_MS, 50_000_000, 0);
        c.space_adjust(30 * NS_PER_MS, 50_000_000, 0);
        assert_eq!((b.rcvbuf, c.rcvbuf), (TCP_RMEM[2], TCP_RMEM[2]));
    }
}
