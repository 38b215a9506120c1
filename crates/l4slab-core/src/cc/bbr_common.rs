//! Pure fixed-point helpers that BBRv1 (`cc/bbr/`, mainline `net/ipv4/tcp_bbr.c`),
//! BBRv2 (`cc/bbr2/`, google/bbr v2alpha and L4STeam `net/ipv4/tcp_bbr2.c`) and BBRv3
//! (`cc/bbr3/`, google/bbr v3 `net/ipv4/tcp_bbr.c`) compute the same way. Each takes the
//! model state it needs as arguments, so each variant keeps its own `struct bbr` and calls
//! these where its kernel file has a function of the same name.
//!
//! What BBRv2 and BBRv3 alone share (the fields of `struct bbr` both keep, the PROBE_BW
//! cycle, PROBE_RTT, the bounds' resets) is in `cc/bbr_model.rs`.
//!
//! Widths: the kernel computes in u64; these compute in u128 where a product could leave
//! u64 (only beyond any simulated rate or RTT), so within the kernel's range the results
//! are the kernel's bit for bit.

use super::CcSock;

/// `BW_SCALE`: bandwidth in packets per µs is kept « 24 (all three files).
pub const BW_SCALE: u32 = 24;
/// `BW_UNIT` = 1 « `BW_SCALE`.
pub const BW_UNIT: u64 = 1 << BW_SCALE;
/// `BBR_SCALE`: gains are kept « 8 (`BBR_UNIT` = 256 = 1.0).
pub const BBR_SCALE: u32 = 8;
/// `BBR_UNIT`.
pub const BBR_UNIT: u32 = 1 << BBR_SCALE;
/// `MAX_TCP_HEADER` as the BBR files' TSO goal subtracts it (320 B on x86-64).
pub const MAX_TCP_HEADER: u64 = 320;
/// `sk_pacing_shift` and `GSO_LEGACY_MAX_SIZE` (64 KB): one definition for TCP and the
/// BBR files (`cc/mod.rs`).
pub use super::{GSO_MAX_SIZE, SK_PACING_SHIFT};
const USEC_PER_SEC: u64 = 1_000_000;

/// `enum bbr_mode` (all three files).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Startup,
    Drain,
    ProbeBw,
    ProbeRtt,
}

impl Mode {
    /// The mode as `ss` names it.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Startup => "STARTUP",
            Mode::Drain => "DRAIN",
            Mode::ProbeBw => "PROBE_BW",
            Mode::ProbeRtt => "PROBE_RTT",
        }
    }
}

/// `after(seq1, seq2)` on the kernel's u32 sequence-space counters.
#[inline]
pub fn after(a: u32, b: u32) -> bool {
    (b.wrapping_sub(a) as i32) < 0
}

/// `bbr_rate_bytes_per_sec`: `rate` (packets/µs « 24) × mss × gain × (100 − margin) %,
/// in bytes per second. v2alpha, L4STeam and v3 then floor the result at 1 (their
/// `max_t(u64, rate, 1)`); mainline v1 does not, so the floor is the caller's.
#[inline]
pub fn rate_bytes_per_sec(mss: u32, rate: u64, gain: u32, margin_percent: u64) -> u64 {
    let mut r = rate as u128 * mss as u128;
    r *= gain as u128;
    r >>= BBR_SCALE;
    r *= (USEC_PER_SEC / 100 * (100 - margin_percent)) as u128;
    (r >> BW_SCALE).min(u64::MAX as u128) as u64
}

/// `bbr_bdp` once a min RTT exists: ceil(bw × min_rtt × gain) packets (the caller returns
/// its initial cwnd while `min_rtt_us` is still `~0U`).
#[inline]
pub fn bdp(bw: u32, gain: u32, min_rtt_us: u32) -> u32 {
    let w = bw as u128 * min_rtt_us as u128;
    ((w * gain as u128) >> BBR_SCALE).div_ceil(BW_UNIT as u128).min(u32::MAX as u128) as u32
}

/// `bbr_calculate_bw_sample` (v2alpha, L4STeam, v3): delivered / interval in packets
/// per µs « 24, rounded up (`DIV_ROUND_UP_ULL`). `None` when the sample has no
/// interval or a negative delivered count (the caller keeps or zeroes its sample as
/// its kernel does). v1's `bbr_update_bw` rounds down instead and does not use this.
#[inline]
pub fn bw_sample_round_up(delivered: i64, interval_us: i64) -> Option<u32> {
    if interval_us > 0 && delivered >= 0 {
        let bw = (delivered as u64 * BW_UNIT).div_ceil(interval_us as u64);
        Some(bw.min(u32::MAX as u64) as u32)
    } else {
        None
    }
}

/// `bbr_tso_segs_generic` (v2alpha, L4STeam, v3): ≈ 1 ms of data at the pacing rate plus
/// 64 KB » (min_rtt_us » `tso_rtt_shift`) while that shift leaves < 32, capped by the GSO
/// size less a header, in segments of `mss` (`bbr_tso_segs`: the skb's `mss_now`;
/// `bbr_tso_segs_goal`: `mss_cache`), at least `min_segs`.
#[inline]
pub fn tso_segs_generic(
    tp: &CcSock,
    mss: u32,
    min_rtt_us: u32,
    tso_rtt_shift: u32,
    gso_max_size: u64,
    min_segs: u32,
) -> u32 {
    let mut bytes = tp.pacing_rate >> SK_PACING_SHIFT;
    if tso_rtt_shift != 0 {
        let r = min_rtt_us >> tso_rtt_shift;
        if r < 32 {
            bytes += GSO_MAX_SIZE >> r;
        }
    }
    bytes = bytes.min(gso_max_size - 1 - MAX_TCP_HEADER);
    ((bytes / mss.max(1) as u64) as u32).max(min_segs)
}

/// The end of `bbr_set_pacing_rate` (all three files), after the caller's pacing rate
/// at its gain: until the pipe is full the rate only rises.
#[inline]
pub fn raise_pacing_rate(tp: &mut CcSock, rate: u64, full_bw_reached: bool) {
    if full_bw_reached || rate > tp.pacing_rate {
        tp.pacing_rate = rate;
    }
}

/// `bbr_ack_aggregation_cwnd` once the caller's enabling condition holds:
/// min(gain × extra_acked » 8, bw × `extra_acked_max_us`).
#[inline]
pub fn ack_aggregation_cwnd(bw: u32, extra_acked: u32, extra_acked_gain: u32, extra_acked_max_us: u32) -> u32 {
    let max_aggr = (bw as u64 * extra_acked_max_us as u64 / BW_UNIT) as u32;
    let aggr = ((extra_acked_gain as u64 * extra_acked as u64) >> BBR_SCALE) as u32;
    aggr.min(max_aggr)
}

/// `bbr_packets_in_net_at_edt` (v1, v3): in-flight now, plus one TSO goal when pacing
/// above 1.0 (`probing_tso_segs`, 0 otherwise), less what the bottleneck drains at `bw`
/// before the next departure time (`tcp_wstamp_ns`).
#[inline]
pub fn packets_in_net_at_edt(tp: &CcSock, bw: u32, inflight_now: u32, probing_tso_segs: u32) -> u32 {
    let now_ns = tp.now;
    let edt_ns = tp.wstamp_ns.max(now_ns);
    let interval_us = (edt_ns - now_ns) / 1000;
    let interval_delivered = ((bw as u64 * interval_us) >> BW_SCALE) as u32;
    (inflight_now + probing_tso_segs).saturating_sub(interval_delivered)
}

/// What the PROBE_RTT step of `bbr_update_min_rtt` asks of its caller.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProbeRttStep {
    /// Nothing this ACK.
    Wait,
    /// In flight has drained to the PROBE_RTT window: stamp its end
    /// (`probe_rtt_done_stamp` = now + `probe_rtt_mode_ms`).
    Arm,
    /// A round has passed since: run `bbr_check_probe_rtt_done`.
    Check,
}

/// The PROBE_RTT step of `bbr_update_min_rtt` (all three files), called in PROBE_RTT:
/// mark the flight app-limited (low-rate samples are ignored in this mode); once in
/// flight is at most `probe_rtt_cwnd` and no end is stamped (`armed` false), start the
/// round count and ask for the stamp; while stamped, count the round and ask for the
/// done check once it has passed.
#[inline]
pub fn probe_rtt_step(
    tp: &mut CcSock,
    armed: bool,
    round_start: bool,
    round_done: &mut bool,
    next_rtt_delivered: &mut u64,
    probe_rtt_cwnd: u32,
) -> ProbeRttStep {
    tp.app_limited = (tp.delivered + tp.in_flight() as u64).max(1);
    if !armed && tp.in_flight() <= probe_rtt_cwnd {
        *round_done = false;
        *next_rtt_delivered = tp.delivered;
        ProbeRttStep::Arm
    } else if armed {
        if round_start {
            *round_done = true;
        }
        if *round_done {
            ProbeRttStep::Check
        } else {
            ProbeRttStep::Wait
        }
    } else {
        ProbeRttStep::Wait
    }
}

/// The ACK-aggregation epoch of `bbr_update_ack_aggregation` after the caller has rolled
/// its `extra_acked[]` window: bytes expected at `bw` over `epoch_us`, the epoch reset
/// when the ACKed count fell to or below that or reached `reset_thresh`, the ACKed count
/// saturated at 0xfffff. Returns `(reset, extra)`: whether the epoch restarts now (the
/// caller stamps it) and the excess of ACKed over expected, at most `cwnd`.
#[inline]
pub fn ack_epoch_excess(
    ack_epoch_acked: &mut u32,
    bw: u32,
    epoch_us: u64,
    acked_sacked: u32,
    reset_thresh: u32,
    cwnd: u32,
) -> (bool, u32) {
    // The kernel assigns the u64 quotient to a u32 (truncation; unreachable in practice).
    let mut expected = (bw as u64 * epoch_us / BW_UNIT) as u32;
    let reset = *ack_epoch_acked <= expected || *ack_epoch_acked as u64 + acked_sacked as u64 >= reset_thresh as u64;
    if reset {
        *ack_epoch_acked = 0;
        expected = 0;
    }
    *ack_epoch_acked = (*ack_epoch_acked + acked_sacked).min(0xfffff);
    (reset, (*ack_epoch_acked - expected).min(cwnd))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bdp_rounds_up_and_applies_the_gain() {
        // 100 Mbit/s of 1500-B packets = 8333.3 pkt/s = 0.0083 pkt/µs; 10 ms → 83.3 → 84.
        let bw = (8333.333_f64 / 1e6 * BW_UNIT as f64) as u32;
        assert_eq!(bdp(bw, BBR_UNIT, 10_000), 84);
        assert_eq!(bdp(bw, 2 * BBR_UNIT, 10_000), 167);
        assert_eq!(bdp(0, BBR_UNIT, 10_000), 0);
    }

    #[test]
    fn pacing_rate_has_the_margin() {
        // 1 pkt/µs × 1000 B × 1.0 less 1 % = 0.99e9 B/s.
        assert_eq!(rate_bytes_per_sec(1000, BW_UNIT, BBR_UNIT, 1), 990_000_000);
        assert_eq!(rate_bytes_per_sec(1000, BW_UNIT, BBR_UNIT / 2, 0), 500_000_000);
    }

    #[test]
    fn bw_sample_rounds_up_and_refuses_bad_samples() {
        assert_eq!(bw_sample_round_up(1, 3), Some(BW_UNIT.div_ceil(3) as u32));
        assert_eq!(bw_sample_round_up(1, 0), None);
        assert_eq!(bw_sample_round_up(-1, 10), None);
    }

    #[test]
    fn ack_epoch_resets_when_acks_fall_behind_the_rate() {
        let mut acked = 10;
        // Expected 1 pkt/µs × 20 µs = 20 ≥ 10 acked: reset, then the 5 newly ACKed are all excess.
        assert_eq!(ack_epoch_excess(&mut acked, BW_UNIT as u32, 20, 5, 1 << 20, 100), (true, 5));
        // 5 + 30 = 35 acked against 1 expected: 34 extra, then capped by a cwnd of 10.
        acked = 5;
        assert_eq!(ack_epoch_excess(&mut acked, BW_UNIT as u32, 1, 30, 1 << 20, 100), (false, 34));
        assert_eq!(ack_epoch_excess(&mut acked, BW_UNIT as u32, 1, 0, 1 << 20, 10), (false, 10));
    }
}
