//! Congestion control: one trait, one file per algorithm.
//!
//! The trait mirrors Linux's `struct tcp_congestion_ops` (include/net/tcp.h) so that
//! each algorithm can be written as the kernel module is: the TCP endpoint owns a
//! [`CcSock`] (the `tcp_sock` fields a CC reads and writes) and calls the hooks at
//! the points of `tcp_ack()` (net/ipv4/tcp_input.c) where Linux calls them. A CC that implements
//! `cong_control` (Prague, BBR) takes over the whole per-ACK window and pacing update;
//! the others (Reno, CUBIC, DCTCP) provide `ssthresh` + `cong_avoid` and the endpoint
//! applies PRR and the stack pacing rate around them.

use crate::packet::Ecn;
use crate::time::{jiffies, Time};

pub mod bbr;
pub mod bbr2;
pub mod bbr3;
pub mod bbr_common;
pub mod bbr_model;
pub mod cubic;
pub mod dctcp;
pub mod descriptor;
pub mod minmax;
pub mod prague;
pub mod registry;
pub mod reno;
pub mod udp_prague;

/// `snd_ssthresh` before any congestion event (TCP_INFINITE_SSTHRESH).
pub const TCP_INFINITE_SSTHRESH: u32 = 0x7fff_ffff;
/// `sk_pacing_shift` (include/net/sock.h default 10): TSO autosizing and TCP Small Queues
/// aim at 2^-10 s (≈ 1 ms) of data at the pacing rate. Defined here, at the TCP–CC
/// boundary, for `tcp/` and for the CCs that size their own skbs (the BBR family).
pub const SK_PACING_SHIFT: u32 = 10;
/// `GSO_LEGACY_MAX_SIZE` (64 KB), the default `gso_max_size` of a device; shared as above.
pub const GSO_MAX_SIZE: u64 = 65_536;

/// Linux's congestion-avoidance states (`enum tcp_ca_state`), in kernel order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Default)]
pub enum CaState {
    #[default]
    Open = 0,
    Disorder = 1,
    Cwr = 2,
    Recovery = 3,
    Loss = 4,
}

/// The ECN feedback mode a connection negotiated (the L4STeam tree's
/// `tcp_ecn_mode_rfc3168()` / `tcp_ecn_mode_accecn()`). It lives here, not in `tcp::ecn`, because
/// [`CcSock`] carries it: `cc` must not depend on `tcp`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum EcnMode {
    #[default]
    Off,
    /// Classic RFC 3168 feedback (ECE until CWR; DCTCP-style if the receiver's CC is DCTCP).
    Rfc3168,
    /// Accurate ECN (RFC 9768).
    AccEcn,
}

impl EcnMode {
    /// Every mode, in the order of the kernel's `tcpi_ecn_mode` (0 off, 1 rfc3168, 2 accecn).
    pub const ALL: [EcnMode; 3] = [EcnMode::Off, EcnMode::Rfc3168, EcnMode::AccEcn];

    /// The name results and the schema use (`ecn_mode` of a flow or a request).
    pub fn name(self) -> &'static str {
        match self {
            EcnMode::Off => "off",
            EcnMode::Rfc3168 => "rfc3168",
            EcnMode::AccEcn => "accecn",
        }
    }
}

impl serde::Serialize for EcnMode {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

/// `enum tcp_ca_event`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CaEvent {
    /// First transmission when no packet is in flight.
    TxStart,
    /// Congestion window restart after idle.
    CwndRestart,
    /// End of a cwnd reduction (CWR or Recovery exit).
    CompleteCwr,
    /// Retransmission timeout (`tcp_enter_loss`).
    Loss,
    /// Receiver: a data segment arrived without CE.
    EcnNoCe,
    /// Receiver: a data segment arrived with CE.
    EcnIsCe,
    /// A retransmitted tail loss probe repaired a real loss (google/bbr v3
    /// `CA_EVENT_TLP_RECOVERY`, raised in `tcp_process_tlp_ack` before the reduction).
    TlpRecovery,
}

/// Flags of the current ACK passed to `in_ack_event` (`CA_ACK_*`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AckEventFlags {
    /// Not a pure duplicate: the ACK advanced snd_una (`CA_ACK_SLOWPATH` is not modelled).
    pub window_update: bool,
    /// The ACK carried an ECN congestion signal (FLAG_ECE; `CA_ACK_ECE`).
    pub ece: bool,
}

/// Per-ACK RTT sample for `pkts_acked` (`struct ack_sample`).
#[derive(Clone, Copy, Debug, Default)]
pub struct AckSample {
    /// Packets newly acknowledged (cumulatively or by SACK).
    pub pkts_acked: u32,
    /// RTT of the most recently sent newly acked packet, µs; negative when none.
    pub rtt_us: i64,
    /// Packets in flight before this ACK.
    pub in_flight: u32,
}

/// Delivery-rate sample of one ACK (`struct rate_sample`, net/ipv4/tcp_rate.c).
#[derive(Clone, Copy, Debug, Default)]
pub struct RateSample {
    /// `tp->delivered` when the most recently delivered packet was sent.
    pub prior_delivered: u64,
    /// `tp->delivered_mstamp` when that packet was sent (0 = no sample).
    pub prior_mstamp: Time,
    /// `tp->delivered_ce` at the same moment.
    pub prior_delivered_ce: u64,
    /// Packets delivered over `interval_us`; negative if the sample is invalid.
    pub delivered: i64,
    /// CE-marked packets delivered over `interval_us`.
    pub delivered_ce: i64,
    /// max(send interval, ACK interval) in µs; negative if invalid.
    pub interval_us: i64,
    /// RTT of the most recently sent newly delivered packet (µs), negative if none.
    pub rtt_us: i64,
    /// Packets newly marked lost by this ACK.
    pub losses: u32,
    /// Packets newly (S)ACKed by this ACK.
    pub acked_sacked: u32,
    /// Packets in flight before this ACK.
    pub prior_in_flight: u32,
    /// CE marks newly reported by this ACK (AccECN delta, or `acked_sacked` for an RFC 3168 ECE ACK).
    pub ece_delta: u32,
    /// The sample is from an application-limited period.
    pub is_app_limited: bool,
    /// The most recently delivered packet was a retransmission.
    pub is_retrans: bool,
    /// The ACK is probably a delayed ACK (`FLAG_ACK_MAYBE_DELAYED`): it newly acked
    /// one sub-MSS packet with nothing SACKed, lost or CE-marked, so `rtt_us` may
    /// include the receiver's delay.
    pub is_ack_delayed: bool,
    /// `tx.in_flight` of the most recently sent delivered packet: packets in flight
    /// when it was sent, itself included (google/bbr v3 `rs->tx_in_flight`).
    pub tx_in_flight: u32,
    /// Packets marked lost between that packet's transmission and its delivery,
    /// `tp->lost - tx.lost` (google/bbr v3 `rs->lost`).
    pub lost: i64,
    /// The ACK carried an ECN congestion signal (`FLAG_ECE`; google/bbr v3 `rs->is_ece`).
    pub is_ece: bool,
    /// `end_seq` of the most recently sent delivered packet (`rs->last_end_seq`).
    pub last_end_seq: u64,
}

/// Delivery state stamped on a packet when it is (re)transmitted
/// (`tcp_skb_cb->tx`, filled by `tcp_rate_skb_sent` in net/ipv4/tcp_rate.c).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SkbTx {
    /// `tp->first_tx_mstamp` at transmission: start of the send phase of its flight.
    pub first_tx_mstamp: Time,
    /// `tp->delivered_mstamp` at transmission.
    pub delivered_mstamp: Time,
    /// `tp->delivered` at transmission.
    pub delivered: u64,
    /// `tp->delivered_ce` at transmission.
    pub delivered_ce: u64,
    /// Packets in flight when sent, this one included (google/bbr v3 `tx.in_flight`).
    pub in_flight: u32,
    /// `tp->lost` at transmission (google/bbr v3 `tx.lost`).
    pub lost: u64,
    /// Sent in an application-limited period (`tp->app_limited` was set).
    pub is_app_limited: bool,
}

/// A packet just marked lost, as `skb_marked_lost` sees it (google/bbr v3
/// `tcp_congestion_ops.skb_marked_lost`, called from `tcp_mark_skb_lost`).
#[derive(Clone, Copy, Debug, Default)]
pub struct SkbLostInfo {
    /// Sequence range (bytes).
    pub seq: u64,
    pub end_seq: u64,
    /// `tcp_skb_pcount`: segments in the skb (1: the scoreboard is per segment).
    pub pcount: u32,
    /// Its state at its last transmission (a SACKed packet is never marked lost, so
    /// `tx.delivered_mstamp` is always that of a packet not yet delivered).
    pub tx: SkbTx,
}

/// A congestion control's model state, sampled at the end of every bin for the
/// per-flow series (`FlowSeries`): what `ss -tin` shows of BBR (`bbr:(bw:…,mrtt:…,
/// pacing_gain:…)`, from `bbr_get_info` in net/ipv4/tcp_bbr.c) plus the v2/v3
/// two-timescale bounds. `None` where the CC has no such quantity.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct CcState {
    /// Bandwidth estimate the CC paces and sizes cwnd from, bytes per second
    /// (BBR's `bbr_bw`).
    pub bw_bytes_per_s: Option<u64>,
    /// The CC's own minimum-RTT estimate, µs (BBR's `min_rtt_us`).
    pub min_rtt_us: Option<u32>,
    /// Mode and phase, e.g. "STARTUP", "PROBE_BW:UP", "PROBE_RTT".
    pub mode: Option<&'static str>,
    /// Current pacing gain (BBR's `pacing_gain`, unitless).
    pub pacing_gain: Option<f64>,
    /// Upper bound on in-flight data, packets (BBRv2/v3 `inflight_hi`; `None` when unset/∞).
    pub inflight_hi: Option<u32>,
    /// Short-term bound on in-flight data, packets (BBRv2/v3 `inflight_lo`; `None` when unset/∞).
    pub inflight_lo: Option<u32>,
}

/// Requirements a CC places on the connection (`TCP_CONG_*` flags of `tcp_congestion_ops`).
///
/// Which flags each CC sets is in its [`descriptor::CcDescriptor`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CcFlags {
    /// Always request ECN (TCP_CONG_NEEDS_ECN; DCTCP, Prague).
    pub needs_ecn: bool,
    /// Request/accept AccECN (TCP_CONG_NEEDS_ACCECN; Prague).
    pub needs_accecn: bool,
    /// Send ECT(1) instead of ECT(0) (TCP_CONG_WANTS_ECT_1; Prague).
    pub wants_ect1: bool,
    /// Refuse RFC 3168 feedback (TCP_CONG_NO_FALLBACK_RFC3168; Prague).
    pub no_fallback_rfc3168: bool,
    /// The CC requires internal pacing even without the fq qdisc (BBR, Prague).
    pub needs_pacing: bool,
}

impl CcFlags {
    /// No `TCP_CONG_*` flag (Reno, CUBIC, and a `*-reno` fallback).
    pub const NONE: CcFlags = CcFlags {
        needs_ecn: false,
        needs_accecn: false,
        wants_ect1: false,
        no_fallback_rfc3168: false,
        needs_pacing: false,
    };
}

/// The receive-side state a CC's `CA_EVENT_ECN_IS_CE` / `CA_EVENT_ECN_NO_CE`
/// handler reads and writes, as `dctcp_ece_ack_update` (net/ipv4/tcp_dctcp.h) does
/// on the `tcp_sock` of a receiving socket. The receiver fills the read part before
/// [`CongestionControl::cwnd_event`] and applies the written part afterwards.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RcvAckState {
    /// `tp->rcv_nxt` after the segment that raised the event.
    pub rcv_nxt: u64,
    /// `icsk_ack.pending & ICSK_ACK_TIMER`: a delayed ACK is pending.
    pub delack_pending: bool,
    /// `tp->ecn_flags & TCP_ECN_DEMAND_CWR`: RFC 3168 ECE on the ACKs from now on.
    pub demand_cwr: bool,
    /// Written: set `ICSK_ACK_NOW` (ACK this segment at once).
    pub ack_now: bool,
    /// Written: `__tcp_send_ack(sk, ack)` with ECE = `ece`, sent at once, before
    /// the ACK of this segment.
    pub send_ack: Option<(u64, bool)>,
    /// Written: `tcp_enter_quickack_mode(sk, TCP_MAX_QUICKACKS)` (BBRv2's
    /// `fast_ack_mode = 2` on CE, google/bbr v2alpha tcp_bbr2.c:bbr_cwnd_event).
    pub quickack: bool,
}

/// The `tcp_sock` state a congestion control reads and writes.
///
/// This is the sender's own state (one source of truth, as Linux's `struct
/// tcp_sock`): the TCP sender updates these counters where they change, so a hook
/// always sees current values. A CC writes only `cwnd`, `ssthresh`, `cwnd_cnt`,
/// `cwnd_clamp`, `pacing_rate`, `ect_permanent` (BBRv3) (and `mss`, Prague) and
/// draws from `rng`.
#[derive(Clone, Debug)]
pub struct CcSock {
    // --- written by the CC ---
    /// `snd_cwnd`, packets.
    pub cwnd: u32,
    /// `snd_ssthresh`, packets.
    pub ssthresh: u32,
    /// `snd_cwnd_cnt`: fractional additive-increase credit.
    pub cwnd_cnt: u32,
    /// `snd_cwnd_clamp`.
    pub cwnd_clamp: u32,
    /// `sk_pacing_rate`, bytes per second (payload bytes, as Linux).
    pub pacing_rate: u64,
    /// `tp->ecn_flags & TCP_ECN_ECT_PERMANENT` (google/bbr v3 patch "ensure
    /// ECN-enabled BBR flows set ECT on retransmits", include/net/tcp.h): with ECN
    /// negotiated, retransmissions keep the ECT codepoint (`tcp_ecn_send`).
    pub ect_permanent: bool,
    // --- read-only for the CC ---
    /// `tp->tcp_mstamp`: the time of the event being processed (set on entry to
    /// `on_packet`, `on_timer` and `start`, as `tcp_mstamp_refresh`).
    pub now: Time,
    /// `mss_cache`, payload bytes per full segment.
    pub mss: u32,
    /// Smoothed RTT in µs (unscaled; 0 before the first sample).
    pub srtt_us: u64,
    /// Windowed minimum RTT in µs (`tcp_min_rtt`); `u32::MAX` before the first sample.
    pub min_rtt_us: u32,
    pub packets_out: u32,
    pub sacked_out: u32,
    pub lost_out: u32,
    pub retrans_out: u32,
    /// Packets delivered (cumulative + SACK) since the connection started.
    pub delivered: u64,
    /// Of which reported CE-marked.
    pub delivered_ce: u64,
    /// `tp->lost`: packets ever marked lost (`tcp_mark_skb_lost`), retransmissions
    /// lost again included.
    pub lost: u64,
    /// `tp->app_limited`: 0, or the `delivered` count at which the current
    /// application-limited period ends (`tcp_rate_check_app_limited`).
    pub app_limited: u64,
    /// `tp->delivered_mstamp`: time `delivered` last grew (or the flight started).
    pub delivered_mstamp: Time,
    /// `tp->first_tx_mstamp`: send time of the most recently delivered packet, or of
    /// the first packet of a flight started from idle.
    pub first_tx_mstamp: Time,
    /// This flow's random stream for the CC (BBR's random PROBE_BW phase):
    /// `rng::Stream::Flow(flow)`, independent of every other stream.
    pub rng: crate::rng::SimRng,
    /// Oldest unacknowledged sequence number (bytes).
    pub snd_una: u64,
    /// Next sequence number to send (bytes).
    pub snd_nxt: u64,
    pub ca_state: CaState,
    /// `prior_cwnd` saved at the start of the current reduction.
    pub prior_cwnd: u32,
    /// `tp->is_cwnd_limited` (the flow was cwnd-limited in the current window).
    pub is_cwnd_limited: bool,
    /// `tp->max_packets_out` in the current window.
    pub max_packets_out: u32,
    /// Whether the socket is actually paced (fq or internal pacing).
    pub paced: bool,
    /// `tp->lsndtime`: time of the last data transmission.
    pub lsndtime: Time,
    /// The negotiated ECN feedback mode.
    pub ecn_mode: EcnMode,
    /// The route feature `ecn_low` (`ip route ... features ecn_low`,
    /// `dst_feature(dst, RTAX_FEATURE_ECN_LOW)` → `TCP_ECN_LOW` in google/bbr v3):
    /// CE marks come from a shallow-threshold AQM and the peer ACKs precisely.
    pub ecn_low: bool,
    /// `tp->tlp_orig_data_app_limited` (google/bbr v3): the segment a tail loss
    /// probe retransmitted was sent application-limited.
    pub tlp_orig_data_app_limited: bool,
    /// `tp->tcp_wstamp_ns`: earliest departure time (EDT) of the next skb, as the
    /// pacing bookkeeping of `tcp_update_skb_after_send` left it.
    pub wstamp_ns: Time,
    /// Receive side, for the CE events of a receiving socket's CC.
    pub rcv: RcvAckState,
}

impl CcSock {
    pub fn new(mss: u32, init_cwnd: u32) -> Self {
        CcSock {
            cwnd: init_cwnd,
            ssthresh: TCP_INFINITE_SSTHRESH,
            cwnd_cnt: 0,
            cwnd_clamp: u32::MAX / 2,
            pacing_rate: 0,
            ect_permanent: false,
            now: 0,
            mss,
            srtt_us: 0,
            min_rtt_us: u32::MAX,
            packets_out: 0,
            sacked_out: 0,
            lost_out: 0,
            retrans_out: 0,
            delivered: 0,
            delivered_ce: 0,
            lost: 0,
            app_limited: 0,
            delivered_mstamp: 0,
            first_tx_mstamp: 0,
            rng: crate::rng::stream(0, crate::rng::Stream::Flow(0)),
            snd_una: 0,
            snd_nxt: 0,
            ca_state: CaState::Open,
            prior_cwnd: 0,
            is_cwnd_limited: false,
            max_packets_out: 0,
            paced: false,
            lsndtime: 0,
            ecn_mode: EcnMode::Off,
            ecn_low: false,
            tlp_orig_data_app_limited: false,
            wstamp_ns: 0,
            rcv: RcvAckState::default(),
        }
    }

    /// `tcp_jiffies32`.
    #[inline]
    pub fn jiffies(&self) -> u64 {
        jiffies(self.now)
    }

    /// `tcp_packets_in_flight` (include/net/tcp.h): out + retrans − sacked − lost.
    #[inline]
    pub fn in_flight(&self) -> u32 {
        (self.packets_out + self.retrans_out).saturating_sub(self.sacked_out + self.lost_out)
    }

    /// `tcp_in_slow_start`.
    #[inline]
    pub fn in_slow_start(&self) -> bool {
        self.cwnd < self.ssthresh
    }

    /// `tcp_is_cwnd_limited` (include/net/tcp.h).
    #[inline]
    pub fn is_cwnd_limited(&self) -> bool {
        if self.is_cwnd_limited {
            return true;
        }
        if self.in_slow_start() {
            return self.cwnd < 2 * self.max_packets_out;
        }
        false
    }

    /// `tcp_slow_start`: grow by the packets delivered, up to ssthresh; return the
    /// part of `acked` left over for congestion avoidance (net/ipv4/tcp_cong.c).
    pub fn slow_start(&mut self, acked: u32) -> u32 {
        let cwnd = (self.cwnd as u64 + acked as u64).min(self.ssthresh as u64) as u32;
        let used = cwnd - self.cwnd;
        self.cwnd = cwnd.min(self.cwnd_clamp);
        acked - used
    }

    /// The common head of every `cong_avoid` (`tcp_reno_cong_avoid`): no growth unless
    /// cwnd-limited, slow start first. Returns the packets left over for congestion
    /// avoidance (0: nothing more to do on this ACK).
    pub fn acked_after_slow_start(&mut self, acked: u32) -> u32 {
        if !self.is_cwnd_limited() {
            return 0;
        }
        if self.in_slow_start() {
            return self.slow_start(acked);
        }
        acked
    }

    /// `tcp_cong_avoid_ai` (net/ipv4/tcp_cong.c): +1 packet per `w` packets acknowledged.
    pub fn cong_avoid_ai(&mut self, w: u32, acked: u32) {
        let w = w.max(1);
        // If credits accumulated at a higher w, apply them gently now.
        if self.cwnd_cnt >= w {
            self.cwnd_cnt = 0;
            self.cwnd += 1;
        }
        self.cwnd_cnt += acked;
        if self.cwnd_cnt >= w {
            let delta = self.cwnd_cnt / w;
            self.cwnd_cnt -= delta * w;
            self.cwnd += delta;
        }
        self.cwnd = self.cwnd.min(self.cwnd_clamp);
    }
}

/// A congestion-control algorithm (`struct tcp_congestion_ops`).
///
/// Hooks default to "not implemented" as in Linux. Exactly one of
/// (`ssthresh` + `cong_avoid`) or `cong_control` drives the window.
pub trait CongestionControl: Send {
    /// Name as in `net.ipv4.tcp_congestion_control` (e.g. "cubic").
    fn name(&self) -> &'static str;

    /// `TCP_CONG_*` flags.
    fn flags(&self) -> CcFlags {
        CcFlags::default()
    }

    /// Called once when the connection is established.
    fn init(&mut self, _tp: &mut CcSock) {}

    /// New slow-start threshold on loss/ECE/RTO (required unless `has_cong_control`).
    fn ssthresh(&mut self, tp: &CcSock) -> u32;

    /// Window growth on an ACK outside a reduction (`cong_avoid`); `acked` packets
    /// were newly delivered.
    fn cong_avoid(&mut self, _tp: &mut CcSock, _acked: u32) {}

    /// Whether this CC implements `cong_control` (then `cong_avoid`, PRR and the
    /// stack pacing update are bypassed: `tcp_cong_control` in net/ipv4/tcp_input.c).
    /// Fixed from `init` on (`icsk_ca_ops` changes only there): the sender reads it
    /// when the CC is built and after `init`.
    fn has_cong_control(&self) -> bool {
        false
    }

    /// Full per-ACK control (`cong_control`).
    fn cong_control(&mut self, _tp: &mut CcSock, _rs: &RateSample) {}

    /// Whether this CC reads the send-time flight of what it samples (`rs.tx_in_flight`,
    /// a lost skb's `tx.in_flight`): BBRv2 and v3. Only then does the sender stamp every
    /// segment of a GSO skb with the skb's flight (`tcp_rate.c:tcp_set_tx_in_flight`);
    /// for the others each segment keeps the flight up to itself, which nothing reads.
    /// Fixed from `init` on: read when the CC is built and after `init`.
    fn reads_tx_in_flight(&self) -> bool {
        false
    }

    /// Called before the endpoint changes `ca_state` (`set_state`).
    fn set_state(&mut self, _tp: &mut CcSock, _new_state: CaState) {}

    /// `TCP_CONG_WANTS_CE_EVENTS` (google/bbr and L4STeam trees): a receiving
    /// socket passes each segment's CE state to `cwnd_event` as DCTCP's does
    /// (`tcp_ca_wants_ce_events` = needs ECN or this flag), without needing ECN.
    fn wants_ce_events(&self) -> bool {
        false
    }

    /// `cwnd_event`.
    fn cwnd_event(&mut self, _tp: &mut CcSock, _ev: CaEvent) {}

    /// Whether this CC implements `in_ack_event` (Linux's `icsk_ca_ops->in_ack_event`
    /// is optional: `tcp_input.c:tcp_in_ack_event` calls it only when set). The sender
    /// reads it as `has_cong_control` and does not call the hook where it is false. True
    /// unless the CC says otherwise: a CC without the hook answers false (one virtual call
    /// per ACK saved); one that forgets to is only called for nothing.
    fn has_in_ack_event(&self) -> bool {
        true
    }

    /// `in_ack_event`: once per ACK, before the recovery state machine.
    fn in_ack_event(&mut self, _tp: &mut CcSock, _flags: AckEventFlags) {}

    /// `skb_marked_lost`: a packet was just marked lost (google/bbr v3, called from
    /// `tcp_mark_skb_lost` after `tp->lost` counted it; BBRv3 `bbr_skb_marked_lost`).
    fn skb_marked_lost(&mut self, _tp: &mut CcSock, _skb: &SkbLostInfo) {}

    /// Whether this CC implements `pkts_acked` (optional in Linux:
    /// `tcp_input.c:tcp_clean_rtx_queue` calls `icsk_ca_ops->pkts_acked` only when
    /// set). As `has_in_ack_event`: true unless the CC, having no such hook, says false.
    fn has_pkts_acked(&self) -> bool {
        true
    }

    /// `pkts_acked`: once per ACK that delivered packets.
    fn pkts_acked(&mut self, _tp: &mut CcSock, _sample: &AckSample) {}

    /// `undo_cwnd`: cwnd to restore when a loss reduction is undone.
    fn undo_cwnd(&mut self, tp: &CcSock) -> u32 {
        tp.cwnd.max(tp.prior_cwnd)
    }

    /// Segments per TSO burst (`tso_segs(sk, mss_now)`), `None` to use the stack's
    /// autosizing. `mss_now` is `tcp_current_mss`: a full segment's payload less the
    /// options every data segment carries (the AccECN option), which `tcp_write_xmit`
    /// sizes the skb in (`tcp_tso_segs`).
    fn tso_segs(&self, _tp: &CcSock, _mss_now: u32) -> Option<u32> {
        None
    }

    /// `min_tso_segs`: the minimum segments per skb for `tcp_tso_autosize`
    /// (`tcp_tso_segs` in net/ipv4/tcp_output.c; BBRv1 `bbr_min_tso_segs`), `None` for
    /// the sysctl `tcp_min_tso_segs`. Used only when `tso_segs` is `None`.
    fn min_tso_segs(&self, _tp: &CcSock) -> Option<u32> {
        None
    }

    /// The congestion-extent estimate α in [0, 1] of scalable CCs (DCTCP, Prague),
    /// for metrics; `None` for CCs without one.
    fn alpha(&self) -> Option<f64> {
        None
    }

    /// The model state for the per-flow series (`None` fields for CCs without one).
    fn cc_state(&self, _tp: &CcSock) -> CcState {
        CcState::default()
    }

    /// ECN codepoint for new data when ECN was negotiated. Fixed from `init` on: the
    /// sender reads it when the CC is built and after `init`.
    fn ect_codepoint(&self) -> Ecn {
        if self.flags().wants_ect1 {
            Ecn::Ect1
        } else {
            Ecn::Ect0
        }
    }
}

/// Linux's default congestion control (`net.ipv4.tcp_congestion_control`; net/ipv4/Kconfig
/// `DEFAULT_TCP_CONG` is "cubic"): a flow's receiving socket runs it unless the flow names
/// another (`receiver_cc`), and it is the schema's default `cc`.
pub const LINUX_DEFAULT: &str = "cubic";

/// Build a congestion control by its Linux name with its module defaults (a view
/// of [`registry::TABLE`]).
pub fn by_name(name: &str) -> Option<Box<dyn CongestionControl>> {
    registry::find(name).and_then(|d| (d.build)(None).ok())
}

/// Build a congestion control by name with module parameters given as JSON (the
/// fields of its `XxxParams`, Linux defaults for those not given).
pub fn build(name: &str, params: Option<&serde_json::Value>) -> Result<Box<dyn CongestionControl>, String> {
    registry::build(name, params)
}

/// Check `name` with `params` as [`build`] would, building nothing (validation).
pub fn check(name: &str, params: Option<&serde_json::Value>) -> Result<(), String> {
    registry::check(name, params)
}

/// Names accepted by [`by_name`] and [`build`].
pub use registry::{specs, KNOWN};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slow_start_returns_leftover() {
        let mut tp = CcSock::new(1448, 10);
        tp.ssthresh = 14;
        assert_eq!(tp.slow_start(6), 2);
        assert_eq!(tp.cwnd, 14);
    }

    #[test]
    fn cong_avoid_ai_one_per_window() {
        let mut tp = CcSock::new(1448, 10);
        for _ in 0..9 {
            tp.cong_avoid_ai(10, 1);
        }
        assert_eq!(tp.cwnd, 10);
        tp.cong_avoid_ai(10, 1);
        assert_eq!(tp.cwnd, 11);
        assert_eq!(tp.cwnd_cnt, 0);
        // A stretch ACK of 25 packets at w = 11 gives +2 and keeps 3 credits.
        tp.cong_avoid_ai(11, 25);
        assert_eq!(tp.cwnd, 13);
        assert_eq!(tp.cwnd_cnt, 3);
    }

    #[test]
    fn in_flight_formula() {
        let mut tp = CcSock::new(1448, 10);
        tp.packets_out = 20;
        tp.sacked_out = 5;
        tp.lost_out = 3;
        tp.retrans_out = 2;
        assert_eq!(tp.in_flight(), 14);
    }
}
