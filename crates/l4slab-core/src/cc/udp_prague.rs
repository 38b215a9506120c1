//! L4STeam's `udp_prague` congestion control (the `PragueCC` class of
//! `prague_cc.cpp` / `prague_cc.h` in L4STeam/udp_prague), its per-packet ACK format
//! (`pkt_format.h`) and its sender loop (`udp_prague_sender.cpp:main`), written anew.
//!
//! Pure: no engine types, no clock, no I/O. Times are the reference's `time_tp`, a
//! wrapping 32-bit microsecond count compared by differences; counters are its
//! `count_tp`, wrapping 32-bit packet counts. The engine's traffic kind
//! (`traffic/udp_prague.rs`) and the emulator's standalone program
//! (`l4slab-udp-prague`) both drive this module, so the simulated sender and the
//! real one run the same arithmetic.
//!
//! The mechanism, as the reference does it:
//! * **Per-packet ACKs with counters.** The receiver echoes, for every data packet,
//!   its running counts of packets received, CE-marked and lost
//!   (`PragueCC::DataReceivedSequence`, `GetACKInfo`); the sender reacts to count
//!   differences (`PragueCC::ACKReceived`), so a lost ACK loses no information.
//! * **RTT from frozen timestamps.** Each side stores `now − peer timestamp` when a
//!   packet arrives and echoes `now − stored` (`PacketReceived`, `GetTimeInfo`): the
//!   echo adds the peer's hold time back, so the RTT excludes it. srtt is an EWMA
//!   of 1/8; the virtual RTT `vrtt = max(srtt, 25 ms)` paces every per-RTT decision.
//! * **20-bit alpha.** Once per vrtt (and once per window of packets) the CE fraction
//!   `p = ΔCE·2^20 / Δreceived` enters `alpha += (p − alpha) >> 4` (DCTCP's g = 1/16).
//! * **No slow start.** The window starts as `srtt × init_rate` (100 kbit/s) at the
//!   first ACK and only grows additively: per non-CE ACK by
//!   `packet_size × increment / W × (srtt/vrtt)²`, where `increment` is one maximum
//!   packet while `rtts_to_growth` vrtts are still to wait after a reduction
//!   (`rate / 1.92 MB/s + 7`), then the bytes of 1 ms at the pacing rate (1 ms of
//!   queue growth per RTT: the reference's faster probing).
//! * **Reductions.** A CE-count increase cuts the window by `alpha/2` once per vrtt
//!   (CWR); a loss-count increase halves it once per vrtt, undone if the loss count
//!   falls back (reordering).
//! * **Rate mode.** Below 2 ms of srtt, or when srtt is not above one packet's
//!   pacing interval, the same rules act on the pacing rate instead of the window.
//! * **Pacing.** rate = W / srtt; packets of `rate × vrtt / 2` bytes (150 ..= max);
//!   bursts of 250 µs; a packet window 3 % above the rate's. The rate handed to the
//!   sender is 3 % above the estimate in the first half of each vrtt and 3 % below
//!   in the second (`GetCCInfo`).
//! * **RT-frame mode.** With a frame rate, the sender sends one frame per frame
//!   interval, sized `rate × frame budget` (`GetCCInfoVideo`), paced within its
//!   budget, with a window counted in frames.
//!
//! Where this module departs from the reference (each named in the code):
//! products and quotients in 128 bits (the reference's `W × alpha` wraps above
//! about 10^13 µB; here it is exact); divisions by a zero srtt, pacing
//! interval or received count guarded; an RT frame the frame window blocks stays
//! pending until the window opens or its interval has passed (the reference
//! advances the frame clock once per loop pass while blocked); and a frame whose
//! packets were all acknowledged before its last one was sent counts as received
//! (the reference's `get_frame_stat` leaves it in flight).

/// Wait at least 7 vrtts after a reduction before probing with 1 ms growth (`MIN_STEP`).
pub const MIN_STEP: u64 = 7;
/// One more vrtt of waiting per 1.92 MB/s (15.36 Mbit/s) of pacing rate (`RATE_STEP`).
pub const RATE_STEP: u64 = 1_920_000;
/// The probing growth: 1 ms of queue per RTT (`QUEUE_GROWTH`, µs).
pub const QUEUE_GROWTH_US: u64 = 1_000;
/// A burst's duration at the pacing rate (`BURST_TIME`, µs).
pub const BURST_TIME_US: u64 = 250;
/// The reference RTT below which decisions wait for a virtual one (`REF_RTT`, µs).
pub const REF_RTT_US: i32 = 25_000;
/// alpha's fixed point: 2^20 is probability 1 (`PROB_SHIFT`).
pub const PROB_SHIFT: u32 = 20;
pub const MAX_PROB: i64 = 1 << PROB_SHIFT;
/// alpha's EWMA gain 2^-4 (`ALPHA_SHIFT`).
pub const ALPHA_SHIFT: u32 = 4;
pub const MIN_PKT_BURST: u64 = 1;
pub const MIN_PKT_WIN: u64 = 2;
/// ±3 % on the pacing rate in the two halves of a vrtt (`RATE_OFFSET`, percent).
pub const RATE_OFFSET_PCT: u64 = 3;
pub const MIN_FRAME_WIN: u64 = 2;
/// `PRAGUE_MINMTU`, `PRAGUE_INITMTU`, `PRAGUE_INITWIN`, `PRAGUE_INITRATE`,
/// `PRAGUE_MINRATE`, `PRAGUE_MAXRATE` (B, B, packets, B/s, B/s, B/s).
pub const MIN_MTU: u64 = 150;
pub const INIT_MTU: u64 = 1400;
pub const INIT_WIN: u64 = 10;
pub const INIT_RATE: u64 = 12_500;
pub const MIN_RATE: u64 = 12_500;
pub const MAX_RATE: u64 = 12_500_000_000;
/// A window-limited sender that hears nothing for 1 s resets its state (`SND_TIMEOUT`, µs).
pub const SND_TIMEOUT_US: i32 = 1_000_000;
/// Consecutive timeouts after which the reference sender gives up (`MAX_TIMEOUT`).
pub const MAX_TIMEOUTS: u32 = 2;

/// The ECN field: `ecn_tp`.
pub const ECN_NOT_ECT: u8 = 0;
pub const ECN_L4S_ID: u8 = 1;
pub const ECN_ECT0: u8 = 2;
pub const ECN_CE: u8 = 3;

/// `a − b` of two wrapping 32-bit values, as a signed difference (the reference's
/// `time_tp` / `count_tp` comparisons `a - b > 0`).
#[inline]
pub fn diff(a: i32, b: i32) -> i32 {
    a.wrapping_sub(b)
}

/// `(a × b) / d` rounded to nearest in 128 bits, saturated to `u64` (`div_64_64_round`
/// of `mul_64_64_shift`); a zero divisor counts as 1.
#[inline]
fn mul_div_round(a: u64, b: u64, d: u64) -> u64 {
    let d = d.max(1) as u128;
    ((a as u128 * b as u128 + d / 2) / d).min(u64::MAX as u128) as u64
}

/// The constructor's parameters (`PragueCC::PragueCC`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PragueParams {
    /// Largest UDP payload, B (`max_packet_size`).
    pub max_packet_size: u64,
    /// Frames per second; 0: bulk (`fps`).
    pub fps: u8,
    /// RT mode: the time a frame is paced over, µs, at most the frame interval (`frame_budget`).
    pub frame_budget_us: i32,
    pub init_rate: u64,
    pub init_window: u64,
    pub min_rate: u64,
    pub max_rate: u64,
}

impl Default for PragueParams {
    /// The sender's defaults (`udp_prague_sender.cpp`: `PRAGUE_INITRATE`, `PRAGUE_INITWIN`,
    /// `PRAGUE_MINRATE`, 1400-byte packets, no rate cap).
    fn default() -> Self {
        PragueParams {
            max_packet_size: INIT_MTU,
            fps: 0,
            frame_budget_us: 0,
            init_rate: INIT_RATE,
            init_window: INIT_WIN,
            min_rate: MIN_RATE,
            max_rate: MAX_RATE,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CcState {
    Init,
    CongAvoid,
    InLoss,
    InCwr,
}

/// Which quantity the per-ACK rules move (`cca_prague_win` / `cca_prague_rate`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CcaMode {
    Window,
    Rate,
}

/// What the sender paces with (`GetCCInfo`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CcInfo {
    /// B/s.
    pub pacing_rate: u64,
    /// Packets allowed in flight.
    pub packet_window: u64,
    /// Packets sent back to back.
    pub packet_burst: u64,
    /// UDP payload bytes per packet.
    pub packet_size: u64,
}

/// What an RT sender sends its next frame with (`GetCCInfoVideo`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FrameInfo {
    pub pacing_rate: u64,
    /// B.
    pub frame_size: u64,
    /// Frames allowed in flight.
    pub frame_window: u64,
    pub packet_burst: u64,
    pub packet_size: u64,
}

/// The receiver's running counters as an ACK echoes them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AckCounters {
    pub received: i32,
    pub ce: i32,
    pub lost: i32,
    /// A data packet arrived with neither ECT(1) nor CE: the path bleaches or
    /// re-marks the L4S identifier.
    pub error_l4s: bool,
}

/// One `PragueCC`: both ends use it (the receiver for its counters and the timestamp
/// echo, the sender for everything).
#[derive(Clone, Debug)]
pub struct PragueCc {
    // Parameters.
    init_rate: u64,
    min_rate: u64,
    max_rate: u64,
    max_packet_size: u64,
    frame_budget_us: i32,
    // Both ends: the frozen peer timestamp and the RTT.
    ts_remote: Option<i32>,
    rtt: i32,
    srtt: i32,
    vrtt: i32,
    r_prev_ts: i32,
    // Receiver end.
    r: AckCounters,
    // Sender end: the latest echoed counters.
    packets_received: i32,
    packets_ce: i32,
    packets_lost: i32,
    packets_sent: i32,
    error_l4s: bool,
    alpha_ts: i32,
    alpha_packets_received: i32,
    alpha_packets_ce: i32,
    alpha_packets_sent: i32,
    loss_ts: i32,
    loss_mode: CcaMode,
    lost_window: u64,
    lost_rate: u64,
    loss_packets_lost: i32,
    loss_packets_sent: i32,
    lost_rtts_to_growth: i64,
    cwr_ts: i32,
    cwr_packets_sent: i32,
    // The control state.
    state: CcState,
    mode: CcaMode,
    rtts_to_growth: i64,
    alpha: i64,
    pacing_rate: u64,
    /// µB (bytes × 10^6, so that W / srtt[µs] is B/s).
    fractional_window: u64,
    packet_burst: u64,
    packet_size: u64,
    packet_window: u64,
}

impl PragueCc {
    /// A new state at `now` (`PragueCC::PragueCC`).
    pub fn new(p: &PragueParams, now: i32) -> Self {
        let frame_interval = if p.fps > 0 { 1_000_000 / p.fps as i32 } else { 0 };
        let mut cc = PragueCc {
            init_rate: p.init_rate,
            min_rate: p.min_rate,
            max_rate: p.max_rate,
            max_packet_size: p.max_packet_size,
            frame_budget_us: p.frame_budget_us.min(frame_interval),
            ts_remote: None,
            rtt: 0,
            srtt: 0,
            vrtt: 0,
            r_prev_ts: 0,
            r: AckCounters::default(),
            packets_received: 0,
            packets_ce: 0,
            packets_lost: 0,
            packets_sent: 0,
            error_l4s: false,
            alpha_ts: now,
            alpha_packets_received: 0,
            alpha_packets_ce: 0,
            alpha_packets_sent: 0,
            loss_ts: 0,
            loss_mode: CcaMode::Window,
            lost_window: 0,
            lost_rate: 0,
            loss_packets_lost: 0,
            loss_packets_sent: 0,
            lost_rtts_to_growth: 0,
            cwr_ts: 0,
            cwr_packets_sent: 0,
            state: CcState::Init,
            mode: CcaMode::Window,
            rtts_to_growth: (p.init_rate / RATE_STEP + MIN_STEP) as i64,
            alpha: 0,
            pacing_rate: p.init_rate,
            fractional_window: p.init_window * p.max_packet_size * 1_000_000,
            packet_burst: 0,
            packet_size: 0,
            packet_window: 0,
        };
        // The constructor sizes packets by the reference RTT (no srtt yet).
        cc.packet_size =
            (cc.pacing_rate * REF_RTT_US as u64 / 1_000_000 / MIN_PKT_WIN).clamp(MIN_MTU, cc.max_packet_size);
        cc.packet_burst = (cc.pacing_rate * BURST_TIME_US / 1_000_000 / cc.packet_size).max(MIN_PKT_BURST);
        cc.packet_window = (cc.fractional_window / 1_000_000).div_ceil(cc.packet_size).max(MIN_PKT_WIN);
        cc
    }

    /// A packet from the peer carrying its `timestamp` and the echo of ours
    /// (`PragueCC::PacketReceived`): freeze the peer's clock, take an RTT sample.
    /// False for a packet older than the newest seen.
    pub fn packet_received(&mut self, now: i32, timestamp: i32, echoed_timestamp: i32) -> bool {
        if self.state != CcState::Init && diff(self.r_prev_ts, timestamp) > 0 {
            return false;
        }
        self.ts_remote = Some(now.wrapping_sub(timestamp));
        self.rtt = diff(now, echoed_timestamp);
        if self.state != CcState::Init {
            self.srtt += (self.rtt - self.srtt) >> 3;
        } else {
            self.srtt = self.rtt;
        }
        self.vrtt = self.srtt.max(REF_RTT_US);
        self.r_prev_ts = timestamp;
        true
    }

    /// An ACK's counters (`PragueCC::ACKReceived`); `packets_sent`: the sender's own
    /// count of packets sent so far. Returns the packets in flight after it, or `None`
    /// for an old ACK (its counters below ones already seen).
    pub fn ack_received(&mut self, now: i32, ack: &AckCounters, packets_sent: i32) -> Option<i32> {
        if diff(self.packets_received, ack.received) > 0 || diff(self.packets_ce, ack.ce) > 0 {
            return None;
        }
        // Guarded: the reference divides by the rate and by srtt unchecked.
        let srtt = self.srtt.max(1) as u64;
        let pacing_interval = (self.packet_size * 1_000_000 / self.pacing_rate.max(1)) as i64;
        if self.state == CcState::Init {
            self.fractional_window = srtt * self.pacing_rate;
            self.state = CcState::CongAvoid;
        }
        // Rate mode where the RTT is too short (or too close to one packet's pacing
        // interval) to hold a queue estimate; switching back keeps the rate.
        if self.srtt <= 2000 || self.srtt as i64 <= pacing_interval {
            self.mode = CcaMode::Rate;
        } else {
            if self.mode == CcaMode::Rate {
                self.fractional_window = srtt * self.pacing_rate;
            }
            self.mode = CcaMode::Window;
        }

        // alpha, once a window of packets and a vrtt have passed.
        if diff(ack.received.wrapping_add(ack.lost), self.alpha_packets_sent) > 0
            && diff(diff(now, self.alpha_ts), self.vrtt) >= 0
        {
            let marked = diff(ack.ce, self.alpha_packets_ce) as i64;
            let got = (diff(ack.received, self.alpha_packets_received) as i64).max(1); // guarded
            let prob = (marked << PROB_SHIFT) / got;
            self.alpha += (prob - self.alpha) >> ALPHA_SHIFT;
            self.alpha = self.alpha.min(MAX_PROB);
            self.alpha_packets_sent = packets_sent;
            self.alpha_packets_ce = ack.ce;
            self.alpha_packets_received = ack.received;
            self.alpha_ts = now;
            if self.rtts_to_growth > 0 {
                self.rtts_to_growth -= 1;
            }
        }

        // Undo a loss reduction when the loss count falls back (reordering, not loss).
        if (self.lost_window > 0 || self.lost_rate > 0) && diff(self.loss_packets_lost, ack.lost) >= 0 {
            self.mode = self.loss_mode;
            if self.mode == CcaMode::Rate {
                self.pacing_rate += self.lost_rate;
                self.lost_rate = 0;
            } else {
                self.fractional_window += self.lost_window;
                self.lost_window = 0;
            }
            self.rtts_to_growth = (self.rtts_to_growth - self.lost_rtts_to_growth).max(0);
            self.lost_rtts_to_growth = 0;
            self.state = CcState::CongAvoid;
        }
        // Leave the loss state once a window and a vrtt have passed.
        if self.state == CcState::InLoss
            && diff(ack.received.wrapping_add(ack.lost), self.loss_packets_sent) > 0
            && diff(diff(now, self.loss_ts), self.vrtt) >= 0
        {
            self.state = CcState::CongAvoid;
        }
        // A loss-count increase: halve, once per vrtt.
        if self.state != CcState::InLoss && diff(self.packets_lost, ack.lost) < 0 {
            // vrtts until a 25-ms flow would reach the same bottleneck again.
            let vrtt = self.vrtt.max(1) as u64;
            let rtts = (self.pacing_rate / 2 / self.max_packet_size * REF_RTT_US as u64 / vrtt * REF_RTT_US as u64
                / 1_000_000) as i64;
            self.lost_rtts_to_growth = (self.lost_rtts_to_growth + rtts - self.rtts_to_growth).min(rtts);
            self.rtts_to_growth = rtts;
            if self.mode == CcaMode::Window {
                self.lost_window = self.fractional_window / 2;
                self.fractional_window -= self.lost_window;
            } else {
                self.lost_rate = self.pacing_rate / 2;
                self.pacing_rate -= self.lost_rate;
            }
            self.state = CcState::InLoss;
            self.loss_mode = self.mode;
            self.loss_packets_sent = packets_sent;
            self.loss_ts = now;
            self.loss_packets_lost = self.packets_lost;
        }

        // Additive growth for the ACKs that carried no CE.
        let acks = diff(ack.received, self.packets_received) as i64 - diff(ack.ce, self.packets_ce) as i64;
        if self.state != CcState::InLoss && acks > 0 {
            let acks = acks as u64;
            let mut increment = mul_div_round(self.pacing_rate, QUEUE_GROWTH_US, 1_000_000);
            if increment < self.max_packet_size || self.rtts_to_growth > 0 {
                increment = self.max_packet_size;
            }
            let vrtt = self.vrtt.max(1) as u64;
            if self.mode == CcaMode::Window {
                // W += acks · size · increment / W · (srtt/vrtt)², in µB.
                let scaler = mul_div_round(srtt * 1_000_000, srtt, vrtt * vrtt);
                let increase = mul_div_round(acks * self.packet_size * 1_000_000, scaler, self.fractional_window);
                self.fractional_window = self.fractional_window.saturating_add(increase.saturating_mul(increment));
            } else {
                // rate += acks · increment / vrtt · size / (rate · vrtt), in B/s.
                let invscaler = mul_div_round(self.pacing_rate, vrtt, self.packet_size * 1_000_000).max(1); // guarded
                let increase = mul_div_round(acks * increment, 1_000_000, vrtt);
                self.pacing_rate = self.pacing_rate.saturating_add(mul_div_round(increase, 1, invscaler));
            }
        }

        // Leave CWR once a window and a vrtt have passed.
        if self.state == CcState::InCwr
            && diff(ack.received.wrapping_add(ack.lost), self.cwr_packets_sent) > 0
            && diff(diff(now, self.cwr_ts), self.vrtt) >= 0
        {
            self.state = CcState::CongAvoid;
        }
        // A CE-count increase: reduce by alpha/2, once per vrtt.
        if self.state == CcState::CongAvoid && diff(self.packets_ce, ack.ce) < 0 {
            self.rtts_to_growth = (self.pacing_rate / RATE_STEP + MIN_STEP) as i64;
            let cut = |v: u64| ((v as u128 * self.alpha as u128) >> (PROB_SHIFT + 1)) as u64; // exact in 128 bits
            if self.mode == CcaMode::Window {
                self.fractional_window -= cut(self.fractional_window);
            } else {
                self.pacing_rate -= cut(self.pacing_rate);
            }
            self.state = CcState::InCwr;
            self.cwr_packets_sent = packets_sent;
            self.cwr_ts = now;
        }

        // The dependent parameters.
        if self.mode != CcaMode::Rate {
            self.pacing_rate = self.fractional_window / srtt;
        }
        self.pacing_rate = self.pacing_rate.clamp(self.min_rate, self.max_rate);
        self.fractional_window = (self.pacing_rate * srtt).max(1);
        self.packet_size =
            (self.pacing_rate * self.vrtt.max(0) as u64 / 1_000_000 / MIN_PKT_WIN).clamp(MIN_MTU, self.max_packet_size);
        self.packet_burst = (self.pacing_rate * BURST_TIME_US / 1_000_000 / self.packet_size).max(MIN_PKT_BURST);
        // The window lets the rate run 3 % fast and rounds up: pacing, not the window,
        // limits the sender unless the network stalls.
        let window_bytes = (self.fractional_window as u128 * (100 + RATE_OFFSET_PCT) as u128 / 100_000_000) as u64;
        self.packet_window = (window_bytes / self.packet_size + 1).max(MIN_PKT_WIN);

        self.packets_received = ack.received;
        self.packets_ce = ack.ce;
        self.packets_lost = ack.lost;
        self.packets_sent = packets_sent;
        self.error_l4s |= ack.error_l4s;
        Some(packets_sent.wrapping_sub(self.packets_received).wrapping_sub(self.packets_lost))
    }

    /// A data packet arrived at the receiver with IP ECN `ecn` and sequence number
    /// `seq` (the first is 1) (`PragueCC::DataReceivedSequence`): a gap counts as
    /// loss, a late packet takes one back.
    pub fn data_received_sequence(&mut self, ecn: u8, seq: i32) {
        let ecn = ecn & ECN_CE;
        self.r.received = self.r.received.wrapping_add(1);
        let skipped = seq.wrapping_sub(self.r.received).wrapping_sub(self.r.lost);
        if skipped >= 0 {
            self.r.lost = self.r.lost.wrapping_add(skipped);
        } else if self.r.lost > 0 {
            self.r.lost -= 1;
        }
        if ecn == ECN_CE {
            self.r.ce = self.r.ce.wrapping_add(1);
        } else if ecn != ECN_L4S_ID {
            self.r.error_l4s = true;
        }
    }

    /// No ACK for a whole timeout while window-limited (`PragueCC::ResetCCInfo`).
    pub fn reset(&mut self, now: i32) {
        self.state = CcState::Init;
        self.mode = CcaMode::Window;
        self.alpha_ts = now;
        self.alpha = 0;
        self.pacing_rate = self.init_rate;
        self.fractional_window = self.max_packet_size * 1_000_000;
        self.packet_burst = MIN_PKT_BURST;
        self.packet_size = self.max_packet_size;
        self.packet_window = MIN_PKT_WIN;
        self.rtts_to_growth = (self.pacing_rate / RATE_STEP + MIN_STEP) as i64;
        self.lost_rtts_to_growth = 0;
    }

    /// The timestamps and ECN field of the next packet to send (`GetTimeInfo`):
    /// `(timestamp, echoed timestamp, ecn)`; the echo is 0 before anything arrived.
    pub fn time_info(&self, now: i32) -> (i32, i32, u8) {
        let echoed = self.ts_remote.map_or(0, |r| now.wrapping_sub(r));
        (now, echoed, if self.error_l4s { ECN_NOT_ECT } else { ECN_L4S_ID })
    }

    /// The bulk sender's pacing (`GetCCInfo`): the rate 3 % fast in the first half of
    /// the vrtt since alpha's last update, 3 % slow in the second.
    pub fn cc_info(&self, now: i32) -> CcInfo {
        let pacing_rate = if diff(diff(now, self.alpha_ts), self.vrtt >> 1) >= 0 {
            self.pacing_rate * 100 / (100 + RATE_OFFSET_PCT)
        } else {
            self.pacing_rate * (100 + RATE_OFFSET_PCT) / 100
        };
        CcInfo {
            pacing_rate,
            packet_window: self.packet_window,
            packet_burst: self.packet_burst,
            packet_size: self.packet_size,
        }
    }

    /// The RT sender's next frame (`GetCCInfoVideo`): a frame carries the rate's bytes
    /// over the frame budget (at least one packet).
    pub fn frame_info(&self) -> FrameInfo {
        let budget_bytes = self.pacing_rate * self.frame_budget_us.max(0) as u64 / 1_000_000;
        let frame_size = budget_bytes.max(self.packet_size);
        FrameInfo {
            pacing_rate: self.pacing_rate,
            frame_size,
            frame_window: (self.packet_window * self.packet_size / frame_size).max(MIN_FRAME_WIN),
            packet_burst: self.packet_burst,
            packet_size: self.packet_size,
        }
    }

    /// The receiver's counters to echo (`GetACKInfo`).
    pub fn ack_info(&self) -> AckCounters {
        self.r
    }

    pub fn srtt_us(&self) -> i32 {
        self.srtt
    }
    pub fn rtt_us(&self) -> i32 {
        self.rtt
    }
    /// alpha as a probability.
    pub fn alpha(&self) -> f64 {
        self.alpha as f64 / MAX_PROB as f64
    }
    /// The unscaled pacing rate, B/s.
    pub fn pacing_rate(&self) -> u64 {
        self.pacing_rate
    }
    pub fn state(&self) -> CcState {
        self.state
    }
    pub fn mode(&self) -> CcaMode {
        self.mode
    }
    pub fn packet_window(&self) -> u64 {
        self.packet_window
    }
}

/// A data packet's header (`pkt_format.h`: `datamessage_t`, type 1, and, in RT mode,
/// `framemessage_t`, type 2, with the frame's number, the bytes of it sent before
/// this packet and its size).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DataMsg {
    pub timestamp: i32,
    pub echoed_timestamp: i32,
    /// Sequence number, from 1.
    pub seq: i32,
    /// RT mode: `(frame_nr, frame_sent, frame_size)`.
    pub frame: Option<(i32, i32, i32)>,
}

/// The per-packet ACK (`pkt_format.h`: `ackmessage_t`, type 17): the sequence number
/// of the packet it answers, the timestamps and the receiver's counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AckMsg {
    pub ack_seq: i32,
    pub timestamp: i32,
    pub echoed_timestamp: i32,
    pub counters: AckCounters,
}

pub const BULK_DATA_TYPE: u8 = 1;
pub const RT_DATA_TYPE: u8 = 2;
pub const PKT_ACK_TYPE: u8 = 17;
/// Header bytes of a bulk data packet, an RT data packet and an ACK (packed, network order).
pub const DATA_HEADER_LEN: usize = 13;
pub const FRAME_HEADER_LEN: usize = 25;
pub const ACK_LEN: usize = 26;

fn put(buf: &mut [u8], at: usize, v: i32) {
    buf[at..at + 4].copy_from_slice(&v.to_be_bytes());
}
fn get(buf: &[u8], at: usize) -> i32 {
    i32::from_be_bytes([buf[at], buf[at + 1], buf[at + 2], buf[at + 3]])
}

impl DataMsg {
    /// Write the header at the start of `buf` (at least [`FRAME_HEADER_LEN`] bytes).
    pub fn encode(&self, buf: &mut [u8]) {
        buf[0] = if self.frame.is_some() { RT_DATA_TYPE } else { BULK_DATA_TYPE };
        put(buf, 1, self.timestamp);
        put(buf, 5, self.echoed_timestamp);
        put(buf, 9, self.seq);
        if let Some((nr, sent, size)) = self.frame {
            put(buf, 13, nr);
            put(buf, 17, sent);
            put(buf, 21, size);
        }
    }
    /// Read a data packet; `None` if `buf` is not one.
    pub fn decode(buf: &[u8]) -> Option<DataMsg> {
        let frame = match *buf.first()? {
            BULK_DATA_TYPE if buf.len() >= DATA_HEADER_LEN => None,
            RT_DATA_TYPE if buf.len() >= FRAME_HEADER_LEN => Some((get(buf, 13), get(buf, 17), get(buf, 21))),
            _ => return None,
        };
        Some(DataMsg { timestamp: get(buf, 1), echoed_timestamp: get(buf, 5), seq: get(buf, 9), frame })
    }
}

impl AckMsg {
    /// Write the ACK into `buf` (at least [`ACK_LEN`] bytes); returns its length.
    pub fn encode(&self, buf: &mut [u8]) -> usize {
        buf[0] = PKT_ACK_TYPE;
        put(buf, 1, self.ack_seq);
        put(buf, 5, self.timestamp);
        put(buf, 9, self.echoed_timestamp);
        put(buf, 13, self.counters.received);
        put(buf, 17, self.counters.ce);
        put(buf, 21, self.counters.lost);
        buf[25] = self.counters.error_l4s as u8;
        ACK_LEN
    }
    /// Read an ACK; `None` if `buf` is not one.
    pub fn decode(buf: &[u8]) -> Option<AckMsg> {
        if buf.len() < ACK_LEN || buf[0] != PKT_ACK_TYPE {
            return None;
        }
        Some(AckMsg {
            ack_seq: get(buf, 1),
            timestamp: get(buf, 5),
            echoed_timestamp: get(buf, 9),
            counters: AckCounters {
                received: get(buf, 13),
                ce: get(buf, 17),
                lost: get(buf, 21),
                error_l4s: buf[25] != 0,
            },
        })
    }
}

/// The receiving end: counts, and answers every data packet with an ACK
/// (`udp_prague_receiver.cpp:main`: `PacketReceived`, `DataReceivedSequence`,
/// `GetTimeInfo`, `GetACKInfo`, one ACK sent with the ECN field `GetTimeInfo` gives).
#[derive(Clone, Debug)]
pub struct PragueReceiver {
    cc: PragueCc,
}

impl PragueReceiver {
    pub fn new(now: i32) -> Self {
        PragueReceiver { cc: PragueCc::new(&PragueParams::default(), now) }
    }
    /// A data packet arrived with ECN field `ecn`: the ACK to send and its ECN field.
    pub fn on_data(&mut self, now: i32, ecn: u8, msg: &DataMsg) -> (AckMsg, u8) {
        self.cc.packet_received(now, msg.timestamp, msg.echoed_timestamp);
        self.cc.data_received_sequence(ecn, msg.seq);
        let (timestamp, echoed_timestamp, ack_ecn) = self.cc.time_info(now);
        (AckMsg { ack_seq: msg.seq, timestamp, echoed_timestamp, counters: self.cc.ack_info() }, ack_ecn)
    }
    pub fn counters(&self) -> AckCounters {
        self.cc.ack_info()
    }
}

/// A packet the sender loop sends now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Outgoing {
    pub msg: DataMsg,
    /// UDP payload bytes (header included).
    pub size: u64,
    /// IP ECN field.
    pub ecn: u8,
}

/// Packet-state ring of the RT sender (`PKT_BUFFER_SIZE`) and its frame ring (`FRM_BUFFER_SIZE`).
const PKT_RING: usize = 65_536;
const FRM_RING: usize = 2_048;
const PKT_SENT: u8 = 1;
const PKT_DONE: u8 = 2;

/// The RT sender's frame clock and per-frame accounting (`udp_prague_sender.cpp:main`'s
/// RT branch; `pkt_format.h:ackmessage_t::get_frame_stat`).
#[derive(Clone, Debug)]
struct Frames {
    interval_us: i32,
    fps: i64,
    /// Start of the next frame slot; `None` before the first frame.
    timer: Option<i32>,
    nr: i32,
    /// Bytes of the current frame sent; 0: between frames.
    sent: u64,
    info: FrameInfo,
    /// The frame chosen for this slot has not started (the frame window held it).
    pending: bool,
    /// The current frame is being sent.
    sending: bool,
    /// Frames whose sending ended with packets neither acknowledged nor lost.
    open: i64,
    pkt_frame: Vec<i32>,
    pkt_state: Vec<u8>,
    outstanding: Vec<i32>,
    frames_sent: u64,
    frames_skipped: u64,
}

impl Frames {
    fn new(fps: u8) -> Self {
        Frames {
            interval_us: 1_000_000 / fps as i32,
            fps: fps as i64,
            timer: None,
            nr: 0,
            sent: 0,
            info: FrameInfo::default(),
            pending: false,
            sending: false,
            open: 0,
            pkt_frame: vec![0; PKT_RING],
            pkt_state: vec![0; PKT_RING],
            outstanding: vec![0; FRM_RING],
            frames_sent: 0,
            frames_skipped: 0,
        }
    }
    fn inflight(&self) -> i64 {
        self.sending as i64 + self.open
    }
    /// Packet `seq` is acknowledged or lost.
    fn done(&mut self, seq: i32) {
        let i = seq as u32 as usize % PKT_RING;
        if self.pkt_state[i] != PKT_SENT {
            return;
        }
        self.pkt_state[i] = PKT_DONE;
        let f = self.pkt_frame[i];
        let o = &mut self.outstanding[f as u32 as usize % FRM_RING];
        *o -= 1;
        if *o == 0 && !(self.sending && f == self.nr) {
            self.open -= 1;
        }
    }
}

/// What the sender has done (for results and the program's report).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SenderStats {
    pub packets_sent: u64,
    pub bytes_sent: u64,
    pub acks_received: u64,
    /// ACKs older than one already taken (reordered), ignored.
    pub acks_old: u64,
    /// The newest echoed counters.
    pub echoed: AckCounters,
    /// State resets after a timeout.
    pub resets: u64,
    /// RT mode: frames sent whole, and frame slots skipped (no frame sent in them).
    pub frames_sent: u64,
    pub frames_skipped: u64,
}

/// The sender loop (`udp_prague_sender.cpp:main`): bursts of `packet_burst` packets
/// while the window allows, the next burst one pacing interval of the burst's bytes
/// after this one started; an RT sender sends one frame per frame interval. Driven by
/// the caller's clock: [`send_due`](Self::send_due) at each wake, [`wake_at`](Self::wake_at)
/// for how long to wait for an ACK, [`on_ack`](Self::on_ack) and
/// [`after_wait`](Self::after_wait) when the wait ends.
#[derive(Clone, Debug)]
pub struct PragueSender {
    pub cc: PragueCc,
    frames: Option<Frames>,
    seq: i32,
    inflight: i32,
    next_send: i32,
    /// The lateness of the last wait, taken off the next pacing interval (`compRecv`).
    comp: i32,
    info: CcInfo,
    /// Consecutive timeouts without an ACK.
    timeouts: u32,
    pub stats: SenderStats,
}

impl PragueSender {
    pub fn new(p: &PragueParams, now: i32) -> Self {
        let cc = PragueCc::new(p, now);
        let info = cc.cc_info(now);
        PragueSender {
            cc,
            frames: (p.fps > 0).then(|| Frames::new(p.fps)),
            seq: 0,
            inflight: 0,
            next_send: now,
            comp: 0,
            info,
            timeouts: 0,
            stats: SenderStats::default(),
        }
    }

    /// Packets in flight (sent, neither acknowledged nor reported lost).
    pub fn inflight(&self) -> i32 {
        self.inflight
    }
    /// The pacing the last ACK set.
    pub fn info(&self) -> CcInfo {
        self.info
    }
    /// Consecutive timeouts (the reference program exits after more than [`MAX_TIMEOUTS`]).
    pub fn timeouts(&self) -> u32 {
        self.timeouts
    }

    /// Whether the window holds the sender (then it waits for an ACK, at most a timeout).
    fn blocked(&self) -> bool {
        match &self.frames {
            None => self.inflight as i64 >= self.info.packet_window as i64,
            Some(f) => f.inflight() >= f.info.frame_window as i64,
        }
    }

    /// Send what is due at `now`, handing each packet to `emit`.
    pub fn send_due(&mut self, now: i32, mut emit: impl FnMut(&Outgoing)) {
        let mut start: Option<i32> = None;
        let mut inburst: u64 = 0;
        let mut send = |s: &mut Self, size: u64, frame: Option<(i32, i32, i32)>| {
            let (timestamp, echoed_timestamp, ecn) = s.cc.time_info(now);
            start.get_or_insert(now);
            s.seq = s.seq.wrapping_add(1);
            let msg = DataMsg { timestamp, echoed_timestamp, seq: s.seq, frame };
            emit(&Outgoing { msg, size, ecn });
            s.stats.packets_sent += 1;
            s.stats.bytes_sent += size;
            s.inflight = s.inflight.wrapping_add(1);
        };
        if self.frames.is_none() {
            while !self.blocked() && inburst < self.info.packet_burst && diff(self.next_send, now) <= 0 {
                send(self, self.info.packet_size, None);
                inburst += 1;
            }
            if let Some(start) = start {
                self.next_send = self.after_burst(start, self.info.packet_size * inburst, self.info.pacing_rate);
            }
            return;
        }
        // RT mode: choose the frame of this slot, when between frames and due (a
        // chosen frame the window held is given up once its slot has passed).
        let cc_frame = self.cc.frame_info();
        let f = self.frames.as_mut().expect("RT mode");
        if f.sent == 0 && diff(self.next_send, now) <= 0 && (!f.pending || f.timer.is_some_and(|t| diff(t, now) <= 0)) {
            match f.timer {
                None => {
                    f.nr = f.nr.wrapping_add(1);
                    f.timer = Some(now.wrapping_add(f.interval_us));
                }
                Some(t) => {
                    let adv = if diff(t, now) <= 0 { 1 + diff(now, t) as i64 * f.fps / 1_000_000 } else { 1 };
                    if f.pending {
                        f.frames_skipped += 1;
                    }
                    f.frames_skipped += (adv - 1) as u64;
                    f.nr = f.nr.wrapping_add(adv as i32);
                    f.timer = Some(t.wrapping_add((adv * f.interval_us as i64) as i32));
                }
            }
            self.comp = 0;
            f.info = cc_frame;
            f.pending = true;
        }
        loop {
            let f = self.frames.as_mut().expect("RT mode");
            if !(f.inflight() <= f.info.frame_window as i64
                && f.sent < f.info.frame_size
                && inburst < f.info.packet_burst
                && diff(self.next_send, now) <= 0
                && f.pending | f.sending)
            {
                break;
            }
            if f.sent == 0 {
                f.sending = true;
                f.pending = false;
                f.outstanding[f.nr as u32 as usize % FRM_RING] = 0;
            }
            let mut size = f.info.packet_size;
            if f.sent + size > f.info.frame_size {
                size = if f.sent + MIN_MTU > f.info.frame_size { MIN_MTU } else { f.info.frame_size - f.sent };
            }
            let frame = Some((f.nr, f.sent as i32, f.info.frame_size as i32));
            let i = self.seq.wrapping_add(1) as u32 as usize % PKT_RING;
            f.pkt_frame[i] = f.nr;
            f.pkt_state[i] = PKT_SENT;
            f.outstanding[f.nr as u32 as usize % FRM_RING] += 1;
            f.sent += size;
            send(self, size, frame);
            inburst += 1;
        }
        if let Some(start) = start {
            let f = self.frames.as_mut().expect("RT mode");
            if f.sent >= f.info.frame_size {
                self.next_send = f.timer.unwrap_or(now);
                f.sent = 0;
                f.sending = false;
                f.frames_sent += 1;
                if f.outstanding[f.nr as u32 as usize % FRM_RING] > 0 {
                    f.open += 1;
                }
                self.stats.frames_sent = f.frames_sent;
            } else {
                let (size, rate) = (f.info.packet_size, f.info.pacing_rate);
                self.next_send = self.after_burst(start, size * inburst, rate);
            }
            self.stats.frames_skipped = self.frames.as_ref().map_or(0, |f| f.frames_skipped);
        }
    }

    /// The next burst's time: this one's start plus its bytes at the pacing rate, less
    /// the last wait's lateness, at least 1 µs on.
    fn after_burst(&mut self, start: i32, bytes: u64, rate: u64) -> i32 {
        let gap = (bytes * 1_000_000 / rate.max(1)).min(i32::MAX as u64) as i32 + self.comp;
        self.comp = 0;
        start.wrapping_add(gap.max(1))
    }

    /// Until when to wait for an ACK: the next send, or a timeout while the window holds.
    pub fn wake_at(&self, now: i32) -> i32 {
        if self.blocked() {
            now.wrapping_add(SND_TIMEOUT_US)
        } else {
            self.next_send
        }
    }

    /// An ACK arrived.
    pub fn on_ack(&mut self, now: i32, ack: &AckMsg) {
        self.stats.acks_received += 1;
        self.timeouts = 0;
        if let Some(f) = self.frames.as_mut() {
            f.done(ack.ack_seq);
            // Packets the receiver newly counts lost: the ones before this ACK's
            // packet still unanswered (`get_frame_stat`).
            let newly_lost = diff(ack.counters.lost, self.stats.echoed.lost).clamp(0, PKT_RING as i32);
            for k in 1..=newly_lost {
                f.done(ack.ack_seq.wrapping_sub(k));
            }
        }
        self.cc.packet_received(now, ack.timestamp, ack.echoed_timestamp);
        match self.cc.ack_received(now, &ack.counters, self.seq) {
            Some(inflight) => {
                self.inflight = inflight;
                self.stats.echoed = ack.counters;
            }
            None => self.stats.acks_old += 1,
        }
        if self.frames.is_none() {
            self.info = self.cc.cc_info(now);
        }
    }

    /// A wait aimed at `target` (from [`wake_at`](Self::wake_at)) ended at `now`;
    /// `got_ack`: it ended with an ACK (already given to [`on_ack`](Self::on_ack)).
    /// A timeout with the window still full resets the state; a late wake is taken
    /// off the next pacing interval.
    pub fn after_wait(&mut self, now: i32, target: i32, got_ack: bool) {
        if !got_ack && self.blocked() && diff(now, target) >= 0 {
            self.cc.reset(now);
            self.stats.resets += 1;
            self.timeouts += 1;
            self.inflight = 0;
            self.next_send = now;
            match self.frames.as_mut() {
                None => self.info = self.cc.cc_info(now),
                Some(f) => {
                    f.open = 0;
                    f.sending = false;
                    f.pending = false;
                    f.sent = 0;
                    f.timer = None;
                    f.pkt_state.iter_mut().for_each(|s| *s = 0);
                }
            }
            return;
        }
        let in_flight = match &self.frames {
            None => self.inflight > 0,
            Some(f) => f.inflight() > 0,
        };
        if diff(target, now) <= 0 && in_flight {
            self.comp = self.comp.wrapping_add(diff(target, now));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::VecDeque;

    /// Sender and receiver over a lossless pipe of `one_way` µs each way with no
    /// bottleneck; every `mark_every`-th data packet arrives CE (0: none). Returns the
    /// sender and the send times of each frame's first packet.
    fn pipe(p: PragueParams, one_way: i32, mark_every: u64, until: i32) -> (PragueSender, Vec<i32>) {
        let mut s = PragueSender::new(&p, 1);
        let mut r = PragueReceiver::new(1);
        let (mut data, mut acks): (VecDeque<(i32, DataMsg, u8)>, VecDeque<(i32, AckMsg)>) = Default::default();
        let mut firsts = Vec::new();
        let (mut now, mut n) = (1, 0u64);
        while now < until {
            s.send_due(now, |o| {
                if o.msg.frame.is_some_and(|(_, sent, _)| sent == 0) {
                    firsts.push(now);
                }
                n += 1;
                let ecn = if mark_every > 0 && n % mark_every == 0 { ECN_CE } else { o.ecn };
                data.push_back((now + one_way, o.msg, ecn));
            });
            let target = s.wake_at(now);
            let next = [Some(target), data.front().map(|d| d.0), acks.front().map(|a| a.0)]
                .into_iter()
                .flatten()
                .min()
                .unwrap();
            now = next.max(now + 1);
            while data.front().is_some_and(|d| d.0 <= now) {
                let (_, msg, ecn) = data.pop_front().unwrap();
                acks.push_back((now + one_way, r.on_data(now, ecn, &msg).0));
            }
            let mut got = false;
            while acks.front().is_some_and(|a| a.0 <= now) {
                s.on_ack(now, &acks.pop_front().unwrap().1);
                got = true;
            }
            s.after_wait(now, target, got);
        }
        (s, firsts)
    }

    #[test]
    fn rt_frames_leave_at_the_frame_rate() {
        let p = PragueParams { fps: 30, frame_budget_us: 10_000, ..PragueParams::default() };
        let (s, firsts) = pipe(p, 5_000, 0, 3_000_001);
        // 1 000 000 / 30 = 33 333 µs between frame starts, none skipped (the window
        // never holds a frame on an empty pipe).
        assert_eq!(s.stats.frames_skipped, 0);
        assert!((89..=91).contains(&firsts.len()), "{} frames in 3 s", firsts.len());
        assert!(firsts.windows(2).all(|w| w[1] - w[0] == 33_333), "{firsts:?}");
        assert_eq!(s.stats.resets, 0);
    }

    #[test]
    fn alpha_follows_the_ce_fraction() {
        // Every 4th packet CE: alpha's EWMA (gain 1/16 per vrtt) converges on 0.25.
        let (s, _) = pipe(PragueParams::default(), 5_000, 4, 10_000_000);
        assert!((s.cc.alpha() - 0.25).abs() < 0.02, "alpha {}", s.cc.alpha());
        let e = s.stats.echoed;
        assert_eq!(e.lost, 0);
        assert!((e.ce as f64 / e.received as f64 - 0.25).abs() < 0.01);
    }

    #[test]
    fn without_marks_the_rate_grows_without_slow_start() {
        // No CE, no loss: additive growth only. After 2 s at 10 ms the rate is far above
        // the 100 kbit/s start but below what doubling per RTT (slow start) would give.
        let (s, _) = pipe(PragueParams::default(), 5_000, 0, 2_000_000);
        let rate = s.cc.pacing_rate();
        assert!(rate > 10 * INIT_RATE, "rate {rate} B/s");
        assert!(rate < INIT_RATE << 20, "rate {rate} B/s");
        assert_eq!(s.cc.state(), CcState::CongAvoid);
    }

    #[test]
    fn receiver_counts_gaps_as_loss_and_reordering_back() {
        let mut r = PragueReceiver::new(1);
        let d = |seq| DataMsg { seq, ..DataMsg::default() };
        r.on_data(1, ECN_L4S_ID, &d(1));
        r.on_data(2, ECN_CE, &d(3)); // 2 missing
        assert_eq!(r.counters(), AckCounters { received: 2, ce: 1, lost: 1, error_l4s: false });
        r.on_data(3, ECN_L4S_ID, &d(2)); // late, not lost
        assert_eq!(r.counters(), AckCounters { received: 3, ce: 1, lost: 0, error_l4s: false });
        r.on_data(4, ECN_ECT0, &d(4)); // ECT(0): the L4S identifier was re-marked
        assert!(r.counters().error_l4s);
    }

    #[test]
    fn messages_round_trip() {
        let mut buf = [0u8; 64];
        let m = DataMsg { timestamp: -3, echoed_timestamp: 99, seq: 7, frame: Some((2, 1400, 5000)) };
        m.encode(&mut buf);
        assert_eq!(DataMsg::decode(&buf[..FRAME_HEADER_LEN]), Some(m));
        let b = DataMsg { frame: None, ..m };
        b.encode(&mut buf);
        assert_eq!(DataMsg::decode(&buf[..DATA_HEADER_LEN]), Some(b));
        let a = AckMsg {
            ack_seq: 7,
            timestamp: 1,
            echoed_timestamp: 2,
            counters: AckCounters { received: 6, ce: 2, lost: 1, error_l4s: true },
        };
        assert_eq!(a.encode(&mut buf), ACK_LEN);
        assert_eq!(AckMsg::decode(&buf[..ACK_LEN]), Some(a));
        assert_eq!(AckMsg::decode(&buf[..ACK_LEN - 1]), None);
    }
}
