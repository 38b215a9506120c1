//! TCP endpoints as Linux behaves: a bulk sender with SACK, RACK-TLP, PRR, RFC 6298
//! RTO with Linux's floor, and a receiver with delayed and quick ACKs.
//!
//! The sender is split as Linux's `net/ipv4`: [`sender`] (the endpoint and its
//! `tcp_sock`), `input` (`tcp_input.c`), `rate` (`tcp_rate.c`), `recovery`
//! (`tcp_recovery.c`), `timer` (`tcp_timer.c`), `output` (`tcp_output.c`).
//!
//! Sequence numbers are in bytes (u64, ISN 0, data starts at 0); windows in packets.
//! Endpoints do not see the network: they append packets to an output buffer and
//! expose their next timer deadline; [`crate::sim`] moves packets and fires timers.

pub mod ecn;
pub mod gro;
mod input;
mod mss_div;
mod output;
mod rate;
pub mod rcvbuf;
pub mod receiver;
mod recovery;
pub mod rtt;
mod rtx_queue;
pub mod sender;
mod timer;

pub use receiver::TcpReceiver;
pub use sender::TcpSender;

use crate::time::{Time, NS_PER_MS};

/// `TCP_TIMEOUT_INIT`: RTO before the first RTT sample (Linux include/net/tcp.h).
pub const TCP_TIMEOUT_INIT_NS: u64 = 1_000 * NS_PER_MS;
/// `TCP_RTO_MAX` (Linux include/net/tcp.h (TCP_* constants)).
pub const TCP_RTO_MAX_NS: u64 = 120_000 * NS_PER_MS;
/// `TCP_TIMEOUT_MIN`: 2 jiffies (RACK reorder timer slack, TLP with > 1 packet out).
pub const TCP_TIMEOUT_MIN_NS: u64 = 2 * NS_PER_MS;
/// `TCP_ATO_MIN` = `TCP_DELACK_MIN` = HZ/25 (Linux include/net/tcp.h).
pub const TCP_ATO_MIN_NS: u64 = 40 * NS_PER_MS;
/// `TCP_DELACK_MAX` = HZ/5.
pub const TCP_DELACK_MAX_NS: u64 = 200 * NS_PER_MS;
/// `TCP_DELACK_MIN` = HZ/25 (the same value as `TCP_ATO_MIN`).
pub const TCP_DELACK_MIN_NS: u64 = 40 * NS_PER_MS;
/// `TCP_RTO_MIN` = HZ/5, the default `tcp_rto_min_us` of a host (the receiver's).
pub const TCP_RTO_MIN_NS: u64 = 200 * NS_PER_MS;
/// `TCP_MSS_DEFAULT` (536) and `TCP_MIN_MSS` (88), payload bytes (include/net/tcp.h).
pub const TCP_MSS_DEFAULT: u32 = 536;
pub const TCP_MIN_MSS: u32 = 88;
/// `sizeof(struct tcphdr)` and the receiver's `tcp_header_len` (header + aligned
/// timestamps, which every connection here negotiates).
pub const TCPHDR_LEN: u32 = 20;
pub const TCP_HEADER_LEN: u32 = 20 + crate::packet::TCPOLEN_TSTAMP_ALIGNED;
/// `tp->advmss` of a 1500-byte-MTU route (1500 − 40), which bounds `rcv_mss`.
pub const TCP_ADVMSS: u32 = 1460;
/// IPv4 header without options.
pub const IP_HLEN: u32 = 20;
/// `TCP_MAX_QUICKACKS`.
pub const TCP_MAX_QUICKACKS: u32 = 16;
/// `tcp_reordering` sysctl default.
pub const TCP_REORDERING: u32 = 3;
/// `tcp_max_reordering`.
pub const TCP_MAX_REORDERING: u32 = 300;
/// `tcp_comp_sack_nr`.
pub const TCP_COMP_SACK_NR: u32 = 44;
/// `tcp_comp_sack_delay_ns`.
pub const TCP_COMP_SACK_DELAY_NS: u64 = NS_PER_MS;
/// `tcp_comp_sack_rtt_percent` (Linux ≥ 6.19; before it the delay was 5 % of the RTT).
pub const TCP_COMP_SACK_RTT_PERCENT: u64 = 33;
/// `TCP_SACK_BLOCKS_EXPECTED`: a segment that extends or adds a SACK block at this index
/// or beyond sends the compressed ACK first (`tcp_input.c:tcp_sack_new_ofo_skb`; since
/// "tcp: tcp_sack_new_ofo_skb() should be more conservative", Linux 5.8, so in every
/// vintage the engine names).
pub const TCP_SACK_BLOCKS_EXPECTED: usize = 2;
/// Slack of the SACK-compression hrtimer (`tcp_comp_sack_slack_ns`, Linux ≥ 6.19).
pub const TCP_COMP_SACK_SLACK_NS: u64 = 10_000;
/// `tcp_comp_sack_slack_ns` from 5.8 ("tcp: add tcp_comp_sack_slack_ns") to 6.18.
pub const TCP_COMP_SACK_SLACK_NS_OLD: u64 = 100_000;
/// `TCP_FASTRETRANS_THRESH`.
pub const TCP_FASTRETRANS_THRESH: u32 = 3;
/// `tcp_pacing_ss_ratio` / `tcp_pacing_ca_ratio`, percent.
pub const TCP_PACING_SS_RATIO: u64 = 200;
pub const TCP_PACING_CA_RATIO: u64 = 120;
/// `sk_pacing_shift` and `GSO_LEGACY_MAX_SIZE`, shared with the CCs (defined in `cc`).
pub use crate::cc::{GSO_MAX_SIZE, SK_PACING_SHIFT};
/// `skb->truesize` beyond the payload of one TCP skb, bytes: the `struct sk_buff` and
/// `skb_shared_info` plus the linear head (`MAX_TCP_HEADER`) that `tcp_stream_alloc_skb`
/// allocates (include/linux/skbuff.h `SKB_TRUESIZE`); an approximation on x86-64
/// (≈ 2304 − 1448, the 1514-byte frame's truesize used by the DualPI2 model). TCP Small
/// Queues counts it (`sk_wmem_alloc`).
pub const TSQ_SKB_OVERHEAD: u32 = 856;
/// `tcp_tso_rtt_log`: autosizing adds GSO_MAX_SIZE >> (min_rtt_us >> 9).
pub const TCP_TSO_RTT_LOG: u32 = 9;
/// `tcp_min_tso_segs`.
pub const TCP_MIN_TSO_SEGS: u32 = 2;
/// `net.ipv4.tcp_tso_win_divisor` default (Documentation/networking/ip-sysctl.rst):
/// TSO deferral sends once 1/3 of min(snd_wnd, cwnd) is available.
pub const TCP_TSO_WIN_DIVISOR: u64 = 3;
/// Wire length of SYN and SYN/ACK (MSS, SACK-permitted, timestamps, window scale).
pub const SYN_WIRE_LEN: u32 = 14 + 40 + 20;

/// The TCP timestamp clock: Linux's default TS clock ticks in milliseconds.
#[inline]
pub fn ts_clock(now: Time) -> u32 {
    (now / NS_PER_MS) as u32
}
