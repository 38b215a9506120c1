//! `dualpi2`: the DualQ Coupled AQM (RFC 9332) as Linux `sch_dualpi2` implements it
//! (net/sched/sch_dualpi2.c). Two FIFOs share one packet limit: the L queue (ECT(1)/CE by default)
//! and the C queue (everything else). A credit-based byte WRR (90/10 by default)
//! serves them; a PI controller updated every `tupdate` on the larger head-of-line
//! waiting time gives the base probability p'; at dequeue C packets are marked or
//! dropped with p' squared (two random draws) and L packets are marked with k times p'
//! (coupling), and L packets are also step-marked on their own sojourn time.
//!
//! Two kernel versions are modelled (mainline Linux 6.18 vs L4STeam sch_dualpi2.c, switch `variant`):
//! * `mainline` (DP2-ML, Linux 6.18 `net/sched/sch_dualpi2.c`): `memlimit`,
//!   `min_qlen_step` (default 0 = always apply the step), separate step attributes.
//! * `l4steam` (DP2-T, the L4STeam testing kernel of 2023-24 used by the seed paper):
//!   no memlimit, step applied only to packets that found more than one packet in
//!   the L queue at enqueue.
//!
//! Linux follows RFC 9332 App. A only loosely; where they differ this module follows
//! Linux (RFC 9332 App. A vs sch_dualpi2.c): independent random draws instead of the RFC's
//! deterministic accumulator, a step at 1 ms instead of a 0.8–1.2 ms ramp, overload
//! at k·p' > 1 for both queues, packet (not byte) limit, a 16 ms update period, no
//! PI action below 2 MTU of backlog, and a credit-based WRR scheduler.
//!
//! Not modelled: tc filters and `skb->priority` classification (hence no "LLLL"
//! class, and no Not-ECT packet can reach the L queue, so the step's Not-ECT drop is
//! unreachable though implemented), GSO splitting (`split_gso` is accepted but the
//! simulator only carries MTU frames), the `max_rtt`/`typical_rtt` tc helper, and
//! hrtimer callback latency (the PI update runs exactly every `tupdate`).

use super::{Ecn, Qdisc, QdiscCtx, QdiscKind, QdiscPacket, QdiscStats, PSCHED_MTU, TC_MAX_US_NS};
use crate::rng::SimRng;
use crate::schema::{ParamKind, ParamSpec};
use crate::time::{Time, NS_PER_MS, NS_PER_SEC, NS_PER_US};
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::collections::VecDeque;

/// `MAX_PROB`: the u32 probability scale, 2^32 - 1 == 1.0 (sch_dualpi2.c `MAX_PROB`).
pub const MAX_PROB: u32 = u32::MAX;
/// alpha/beta cross netlink in units of 1/256 Hz (`ALPHA_BETA_SHIFT` = 8) and are
/// kept internally in units of 1/64 (`ALPHA_BETA_GRANULARITY` = 6), so the scaling
/// shift is 8 - 6 = 2 (sch_dualpi2.c:dualpi2_scale_alpha_beta).
const ALPHA_BETA_GRANULARITY: u32 = 6;
const ALPHA_BETA_SCALING: u32 = 8 - ALPHA_BETA_GRANULARITY;
/// Kernel limit on the netlink alpha/beta value (2^31 - 1, in 1/256 Hz).
const ALPHA_BETA_MAX_NL: u32 = (1 << 31) - 1;
/// tc's own bound on the float it parses (`(2 << 23) - 1`, in Hz).
const TC_ALPHA_BETA_MAX: f64 = ((2u32 << 23) - 1) as f64;
/// Kernel defaults when tc sends no alpha/beta: 41/256 Hz and 819/256 Hz.
pub const DEFAULT_ALPHA_NL: u32 = 41;
pub const DEFAULT_BETA_NL: u32 = 819;
/// Modelled `skb->truesize` of a forwarded frame, charged against `memlimit`
/// (an assumption: the testbed NIC's value is unknown). 2304 B =
/// SKB_TRUESIZE of a 2-KB receive fragment (2048 + aligned `struct sk_buff`), a
/// common value for drivers that build skbs around 2-KB buffers. Assumption.
pub const DEFAULT_SKB_TRUESIZE: u32 = 2304;

/// Which kernel's DualPI2 to reproduce (mainline Linux 6.18 vs L4STeam sch_dualpi2.c).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
pub enum DualPi2Variant {
    /// DP2-ML: upstream Linux (6.18 tree; L4STeam 6.6 backport).
    #[default]
    #[serde(rename = "mainline")]
    Mainline,
    /// DP2-T: L4STeam testing kernel (2023-24), as in the seed experiment.
    #[serde(rename = "l4steam")]
    L4STeam,
}

/// Which ECN codepoints go to the L queue (`ect & mask != 0`, sch_dualpi2.c:dualpi2_skb_classify).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
pub enum DualPi2EcnMask {
    /// `l4s_ect` (mask 0x1): ECT(1) and CE.
    #[default]
    #[serde(rename = "l4s_ect")]
    L4sEct,
    /// mask 0x2 (mainline only): ECT(0) and CE.
    #[serde(rename = "cla_ect")]
    ClaEct,
    /// `any_ect` (mask 0x3): every ECN-capable or CE packet.
    #[serde(rename = "any_ect")]
    AnyEct,
}

impl DualPi2EcnMask {
    fn bits(self) -> u8 {
        match self {
            DualPi2EcnMask::L4sEct => 0b01,
            DualPi2EcnMask::ClaEct => 0b10,
            DualPi2EcnMask::AnyEct => 0b11,
        }
    }
}

/// `tc qdisc add ... dualpi2 ...` parameters (sch_dualpi2.c:dualpi2_change, iproute2 tc/q_dualpi2.c), in base units.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DualPi2Params {
    /// `limit`: packets in both queues together; tail drop beyond. Default 10 000.
    pub limit_packets: u32,
    /// `memlimit` (mainline only): bytes of skb truesize in both queues. `None` =
    /// the kernel rule `limit x 2 x psched_mtu` (30 280 000 B for limit 10 000).
    pub memlimit_bytes: Option<u64>,
    /// `target`: PI reference queue delay, ns (tc carries whole µs). Default 15 ms.
    pub target_ns: u64,
    /// `tupdate`: PI update period, ns (whole µs). Default 16 ms.
    pub tupdate_ns: u64,
    /// `alpha`, Hz: integral gain as typed to tc. tc sends trunc(alpha x 256) (as a
    /// C float), so `alpha 0.16` gives 40/256. `None` (default) = not given, i.e. the
    /// kernel default 41/256 = 0.16015625 Hz (internal a_i = 44).
    pub alpha: Option<f64>,
    /// `beta`, Hz: proportional gain, same encoding. `None` (default) = kernel
    /// default 819/256 = 3.19921875 Hz (internal b_i = 879).
    pub beta: Option<f64>,
    /// `step_thresh TIME`: L-queue step marking threshold on the packet's sojourn,
    /// ns (whole µs). Default 1 ms. Unused when `step_thresh_packets` is set.
    pub step_thresh_ns: u64,
    /// `step_thresh Npkt`: threshold on the L queue length (after the packet leaves)
    /// instead of time. Default `None` (time threshold). Under `l4steam` the kernel
    /// multiplies the attribute by 1000 even in packet mode (DP2-T source quirk), so
    /// N packets act as 1000 x N there.
    pub step_thresh_packets: Option<u32>,
    /// `min_qlen_step` (mainline only): the step applies to a packet only if the L
    /// queue held at least this many packets when it arrived. Default 0 (always).
    /// The l4steam variant instead hard-codes "more than 1 packet".
    pub min_qlen_step: u32,
    /// `coupling_factor` k: p_CL = k x p'. Default 2.
    pub coupling_factor: u8,
    /// `drop_on_overload` (true, default) or `overflow` (false).
    pub drop_on_overload: bool,
    /// `drop_dequeue` (true, default): PI mark/drop at dequeue; false =
    /// `drop_enqueue`. The step is always applied at dequeue.
    pub drop_dequeue: bool,
    /// `classic_protection`: C-queue WRR weight in percent (wc; wl = 100 - wc).
    /// Default 10.
    pub classic_protection: u8,
    /// `l4s_ect` (default) / `any_ect` (/ mainline's mask 2): L-queue classifier.
    pub ecn_mask: DualPi2EcnMask,
    /// `split_gso` / `no_split_gso`. Default true. No effect: the simulator carries
    /// MTU-sized frames only (sch_dualpi2.c:dualpi2_qdisc_enqueue split_gso).
    pub split_gso: bool,
    /// Kernel version to reproduce: "mainline" (default) or "l4steam".
    pub variant: DualPi2Variant,
    /// Model parameter, not a tc one: skb truesize charged per packet against
    /// `memlimit` (mainline). Default 2304 B (an assumption: the testbed NIC's truesize is unknown).
    pub skb_truesize_bytes: u32,
}

impl Default for DualPi2Params {
    fn default() -> Self {
        DualPi2Params {
            limit_packets: 10_000,
            memlimit_bytes: None,
            target_ns: 15 * NS_PER_MS,
            tupdate_ns: 16 * NS_PER_MS,
            alpha: None,
            beta: None,
            step_thresh_ns: NS_PER_MS,
            step_thresh_packets: None,
            min_qlen_step: 0,
            coupling_factor: 2,
            drop_on_overload: true,
            drop_dequeue: true,
            classic_protection: 10,
            ecn_mask: DualPi2EcnMask::L4sEct,
            split_gso: true,
            variant: DualPi2Variant::Mainline,
            skb_truesize_bytes: DEFAULT_SKB_TRUESIZE,
        }
    }
}

/// tc's float-to-netlink conversion of alpha/beta: `(uint32_t)(strtof(arg) * 256)`,
/// computed in single precision and truncated (L4STeam iproute2 tc/q_dualpi2.c).
pub fn tc_alpha_beta_to_nl(hz: f64) -> u32 {
    ((hz as f32) * 256.0f32) as u32
}

/// The kernel's `dualpi2_scale_alpha_beta`: netlink units (1/256 Hz) to internal
/// gain per ns in units of 2^-6 of the u32 probability scale:
/// floor((nl x (2^32 - 1) >> 2) / 1e9) (sch_dualpi2.c:dualpi2_scale_alpha_beta: 41 -> 44, 819 -> 879).
pub fn scale_alpha_beta(nl: u32) -> u32 {
    let tmp = (nl as u64 * MAX_PROB as u64) >> ALPHA_BETA_SCALING;
    (tmp / NS_PER_SEC) as u32
}

impl DualPi2Params {
    /// Netlink value of alpha (1/256 Hz).
    pub fn alpha_nl(&self) -> u32 {
        self.alpha.map_or(DEFAULT_ALPHA_NL, tc_alpha_beta_to_nl)
    }
    /// Netlink value of beta (1/256 Hz).
    pub fn beta_nl(&self) -> u32 {
        self.beta.map_or(DEFAULT_BETA_NL, tc_alpha_beta_to_nl)
    }
    /// Internal integral gain a_i.
    pub fn a_i(&self) -> u32 {
        scale_alpha_beta(self.alpha_nl())
    }
    /// Internal proportional gain b_i.
    pub fn b_i(&self) -> u32 {
        scale_alpha_beta(self.beta_nl())
    }

    /// The memory limit in force (mainline): explicit, else `limit x 2 x MTU`
    /// saturated to u32 (DP2-ML `get_memory_limit`).
    pub fn memory_limit(&self) -> u32 {
        match self.memlimit_bytes {
            Some(m) => m as u32,
            None => (self.limit_packets as u64 * 2 * PSCHED_MTU as u64).min(u32::MAX as u64) as u32,
        }
    }
}

/// `tupdate` and `step_thresh` are kept as u32 ns by the kernel: whole µs up to 2^32 ns.
const MAX_U32_NS: u64 = (u32::MAX as u64 / NS_PER_US) * NS_PER_US;

impl QdiscKind for DualPi2Params {
    const KIND: &'static str = "dualpi2";
    const DOC: &'static str = "DualQ Coupled AQM, L and C queues under one PI controller \
        (RFC 9332 as net/sched/sch_dualpi2.c, mainline or L4STeam variant).";
    const CLASSES: &'static [&'static str] = &["C", "L"];

    fn params() -> Vec<ParamSpec> {
        let d = DualPi2Params::default();
        let u32max = u32::MAX as f64;
        let hz_max = ALPHA_BETA_MAX_NL as f64 / 256.0;
        vec![
            ParamSpec::new(
                "limit_packets",
                ParamKind::Packets,
                json!(d.limit_packets),
                "Packets in both queues together, tail drop beyond (net/sched/sch_dualpi2.c:dualpi2_reset_default: \
                 10000, both variants).",
            )
            .range(1.0, u32max),
            ParamSpec::new(
                "memlimit_bytes",
                ParamKind::Bytes,
                json!(null),
                "Mainline only: bytes of skb truesize in both queues; null = limit x 2 x psched_mtu \
                 (net/sched/sch_dualpi2.c:get_memory_limit; 30280000 B at the default limit).",
            )
            .range(1.0, u32max),
            ParamSpec::new(
                "target_ns",
                ParamKind::TimeNs,
                json!(d.target_ns),
                "PI reference queue delay, whole µs (net/sched/sch_dualpi2.c:dualpi2_reset_default: 15 ms, both \
                 variants; RFC 9332 §A.1).",
            )
            .range(NS_PER_US as f64, TC_MAX_US_NS as f64),
            ParamSpec::new(
                "tupdate_ns",
                ParamKind::TimeNs,
                json!(d.tupdate_ns),
                "PI update period, whole µs (net/sched/sch_dualpi2.c:dualpi2_reset_default: 16 ms, both variants).",
            )
            .range(NS_PER_US as f64, MAX_U32_NS as f64),
            ParamSpec::new(
                "alpha",
                ParamKind::Float,
                json!(null),
                "Integral gain in Hz as typed to tc, sent as trunc(alpha x 256); null = kernel default 41/256 Hz \
                 (net/sched/sch_dualpi2.c:dualpi2_reset_default, both variants). Mainline refuses < 1/256.",
            )
            .range(0.0, hz_max),
            ParamSpec::new(
                "beta",
                ParamKind::Float,
                json!(null),
                "Proportional gain in Hz, same encoding; null = kernel default 819/256 Hz \
                 (net/sched/sch_dualpi2.c:dualpi2_reset_default, both variants). Mainline refuses < 1/256.",
            )
            .range(0.0, hz_max),
            ParamSpec::new(
                "step_thresh_ns",
                ParamKind::TimeNs,
                json!(d.step_thresh_ns),
                "L-queue step-marking threshold on sojourn, whole µs; unused if step_thresh_packets is set \
                 (net/sched/sch_dualpi2.c:dualpi2_reset_default: 1 ms, both variants).",
            )
            .range(NS_PER_US as f64, MAX_U32_NS as f64),
            ParamSpec::new(
                "step_thresh_packets",
                ParamKind::Packets,
                json!(null),
                "Step threshold on the L queue length instead of time; null = time threshold \
                 (tc-dualpi2(8) step_thresh Npkt). l4steam multiplies it by 1000 (source quirk).",
            )
            .range(1.0, u32max),
            ParamSpec::new(
                "min_qlen_step",
                ParamKind::Packets,
                json!(d.min_qlen_step),
                "Mainline only: step only packets that found at least this many in L \
                 (net/sched/sch_dualpi2.c:dualpi2_reset_default: 0); l4steam hard-codes qlen(L) > 1 and needs 0.",
            )
            .range(0.0, u32max),
            ParamSpec::new(
                "coupling_factor",
                ParamKind::Int,
                json!(d.coupling_factor),
                "k in p_CL = k x p' (net/sched/sch_dualpi2.c:dualpi2_reset_default: 2, both variants; RFC 9332 §2.1).",
            )
            .range(1.0, 255.0),
            ParamSpec::new(
                "drop_on_overload",
                ParamKind::Bool,
                json!(d.drop_on_overload),
                "drop_on_overload (true) or overflow (false) (net/sched/sch_dualpi2.c:dualpi2_reset_default: \
                 drop, both variants).",
            ),
            ParamSpec::new(
                "drop_dequeue",
                ParamKind::Bool,
                json!(d.drop_dequeue),
                "PI mark/drop at dequeue (true) or enqueue (net/sched/sch_dualpi2.c:dualpi2_reset_default: \
                 drop_early = false, both variants).",
            ),
            ParamSpec::new(
                "classic_protection",
                ParamKind::Int,
                json!(d.classic_protection),
                "C-queue WRR weight wc in percent, wl = 100 - wc (net/sched/sch_dualpi2.c:dualpi2_reset_default: \
                 10, both variants; dualpi2_change refuses > 100).",
            )
            .range(0.0, 100.0),
            ParamSpec::new(
                "ecn_mask",
                ParamKind::Choice,
                json!(d.ecn_mask),
                "L-queue classifier, ECN & mask != 0 (net/sched/sch_dualpi2.c:dualpi2_reset_default: l4s_ect = \
                 INET_ECN_ECT_1, both variants); cla_ect is mainline only.",
            )
            .choices(&["l4s_ect", "cla_ect", "any_ect"]),
            ParamSpec::new(
                "split_gso",
                ParamKind::Bool,
                json!(d.split_gso),
                "Split GSO skbs at enqueue (net/sched/sch_dualpi2.c:dualpi2_reset_default: on, both variants); \
                 no effect here, the simulator carries MTU frames only.",
            ),
            ParamSpec::new(
                "variant",
                ParamKind::Choice,
                json!(d.variant),
                "Kernel to reproduce: mainline (Linux 6.18 net/sched/sch_dualpi2.c) or l4steam (L4STeam testing \
                 kernel 2023-24: no memlimit, step only when qlen(L) > 1).",
            )
            .choices(&["mainline", "l4steam"]),
            ParamSpec::new(
                "skb_truesize_bytes",
                ParamKind::Bytes,
                json!(d.skb_truesize_bytes),
                "Not a tc keyword: skb->truesize charged per packet against memlimit (mainline); 2304 = \
                 SKB_TRUESIZE(2048), an assumption (the testbed NIC's value is unknown).",
            )
            .range(1.0, u32max)
            .not_tc(),
        ]
    }

    /// What the schema cannot say: whole microseconds, and the fields only mainline has.
    fn check(&self) -> Result<(), String> {
        let ml = self.variant == DualPi2Variant::Mainline;
        if let (Some(m), false) = (self.memlimit_bytes, ml) {
            return Err(format!("memlimit_bytes: {m} is not supported by variant l4steam (allowed: unset)"));
        }
        for (name, v) in
            [("target_ns", self.target_ns), ("tupdate_ns", self.tupdate_ns), ("step_thresh_ns", self.step_thresh_ns)]
        {
            if !v.is_multiple_of(NS_PER_US) {
                return Err(format!("{name}: {v} is not a whole number of microseconds (tc carries µs)"));
            }
        }
        for (name, v) in [("alpha", self.alpha), ("beta", self.beta)] {
            if let Some(x) = v {
                let nl = tc_alpha_beta_to_nl(x);
                let min_nl = if ml { 1 } else { 0 };
                if !x.is_finite() || !(0.0..=TC_ALPHA_BETA_MAX).contains(&x) || nl < min_nl || nl > ALPHA_BETA_MAX_NL {
                    return Err(format!(
                        "{name}: {x} is out of range (allowed {}..<8388608 Hz, sent as trunc(x*256))",
                        if ml { "1/256" } else { "0" }
                    ));
                }
            }
        }
        if !ml && self.min_qlen_step != 0 {
            return Err(format!(
                "min_qlen_step: {} is not supported by variant l4steam (allowed 0; l4steam applies the step when qlen(L) > 1)",
                self.min_qlen_step
            ));
        }
        if !ml && self.ecn_mask == DualPi2EcnMask::ClaEct {
            return Err("ecn_mask: cla_ect is not supported by variant l4steam (allowed l4s_ect, any_ect)".into());
        }
        Ok(())
    }

    fn build<P: QdiscPacket>(&self, rng: &mut SimRng) -> Box<dyn Qdisc<P>> {
        Box::new(DualPi2::new(self.clone(), rng))
    }
}

/// Class of a queued packet (`dualpi2_skb_cb.classified`); only the two reachable
/// without tc filters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Class {
    Classic = 0,
    L4s = 1,
}

/// A queued packet and its control block (struct dualpi2_skb_cb).
#[derive(Debug)]
struct Entry<P> {
    pkt: P,
    /// ECN codepoint read at enqueue (`cb->ect`), before any mark.
    ect: Ecn,
    class: Class,
    /// Step eligibility decided at enqueue (sch_dualpi2.c:dualpi2_enqueue_skb step 4).
    apply_step: bool,
    /// A CE mark on this packet has been reported to the caller (see [`DualPi2::mark`]).
    mark_reported: bool,
}

/// How the step threshold is measured.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Step {
    /// Sojourn time, ns.
    Time(u64),
    /// L queue length after removing the packet.
    Packets(u32),
}

/// The DualPI2 qdisc.
pub struct DualPi2<P> {
    params: DualPi2Params,
    // Configuration in kernel units.
    limit: u32,
    memory_limit: u32,
    target: u64,
    tupdate: u64,
    a_i: u32,
    b_i: u32,
    step: Step,
    k: u8,
    ecn_mask: u8,
    wc: i32,
    wl: i32,
    credit_init: i32,
    truesize: u32,
    // Queues.
    c: VecDeque<Entry<P>>,
    l: VecDeque<Entry<P>>,
    // PI state.
    prob: u32,
    last_qdelay: u64,
    next_update: Time,
    // WRR credit (sign: > 0 means C is next when both are backlogged).
    credit: i32,
    // Mainline memory accounting.
    memory_used: u32,
    max_memory_used: u32,
    // `tc -s` counters.
    packets_in_c: u64,
    packets_in_l: u64,
    maxq: u64,
    ecn_mark: u64,
    step_marks: u64,
    /// Drops counted on the L child (step drops of Not-ECT L packets).
    l_drops: u64,
    /// Latest time seen, for the dump-time `delay_c`/`delay_l` of `extra_stats`.
    last_now: Time,
    stats: QdiscStats,
}

impl<P: QdiscPacket> DualPi2<P> {
    /// Build from validated parameters; the qdisc is created at t = 0, so the first
    /// PI update fires at `tupdate` (sch_dualpi2.c:dualpi2_init: hrtimer started at init + tupdate).
    pub fn new(params: DualPi2Params, _rng: &mut SimRng) -> Self {
        let ml = params.variant == DualPi2Variant::Mainline;
        let step = match params.step_thresh_packets {
            // DP2-T multiplies the STEP_THRESH attribute by NSEC_PER_USEC even when
            // the STEP_PACKETS flag is set, so `step_thresh 5pkt` becomes a 5000-packet
            // threshold there (source quirk of DP2-T 0a468c0f; truncated to u32).
            Some(n) if !ml => Step::Packets((n as u64 * NS_PER_US) as u32),
            Some(n) => Step::Packets(n),
            None => Step::Time(params.step_thresh_ns),
        };
        let wc = params.classic_protection as i32;
        let wl = 100 - wc;
        // sch_dualpi2.c:dequeue_packet: init = psched_mtu x (wc - wl) = -121 120 by default.
        let credit_init = PSCHED_MTU as i32 * (wc - wl);
        // Both queues start small and grow (by doubling) to what they hold: the shared
        // limit (10 000 packets by default) is rarely reached, and a ring sized to it
        // would sweep two 700-KB buffers through the cache, one fresh line per packet.
        let cap = (params.limit_packets as usize).clamp(16, 256);
        DualPi2 {
            limit: params.limit_packets,
            memory_limit: params.memory_limit(),
            target: params.target_ns,
            tupdate: params.tupdate_ns,
            a_i: params.a_i(),
            b_i: params.b_i(),
            step,
            k: params.coupling_factor,
            ecn_mask: params.ecn_mask.bits(),
            wc,
            wl,
            credit_init,
            truesize: params.skb_truesize_bytes,
            c: VecDeque::with_capacity(cap),
            l: VecDeque::with_capacity(cap),
            prob: 0,
            last_qdelay: 0,
            next_update: params.tupdate_ns,
            credit: credit_init,
            memory_used: 0,
            max_memory_used: 0,
            packets_in_c: 0,
            packets_in_l: 0,
            maxq: 0,
            ecn_mark: 0,
            step_marks: 0,
            l_drops: 0,
            last_now: 0,
            stats: QdiscStats::default(),
            params,
        }
    }

    /// Current base probability p' as the kernel's u32 (`pi2_prob`).
    pub fn prob(&self) -> u32 {
        self.prob
    }

    /// WRR credit.
    pub fn credit(&self) -> i32 {
        self.credit
    }

    /// Internal gains (a_i, b_i).
    pub fn gains(&self) -> (u32, u32) {
        (self.a_i, self.b_i)
    }

    /// The parameters this qdisc was built with.
    pub fn params(&self) -> &DualPi2Params {
        &self.params
    }

    /// sch_dualpi2.c:must_drop: overload iff k x prob > 2^32 - 1 (64-bit product).
    pub fn is_overloaded(&self) -> bool {
        self.prob as u64 * self.k as u64 > MAX_PROB as u64
    }

    fn is_mainline(&self) -> bool {
        self.params.variant == DualPi2Variant::Mainline
    }

    /// `dualpi2_roll`: true iff a uniform u32 is <= p (sch_dualpi2.c:dualpi2_roll).
    #[inline]
    fn roll(p: u32, rng: &mut SimRng) -> bool {
        rng.next_u32() <= p
    }

    /// `dualpi2_mark`: set CE if ECN-capable (re-marks of CE count), bump
    /// `ecn_mark` and report the mark (include/net/inet_ecn.h:INET_ECN_set_ce, sch_dualpi2.c:must_drop).
    ///
    /// A packet can be marked twice here: by the coupled (PI) rule and then by the
    /// step on the same dequeue, or at enqueue (`drop_enqueue`) and at dequeue. Linux
    /// counts both in `ecn_mark` (`INET_ECN_set_ce` succeeds on a CE packet), and so do
    /// the `tc -s` counters here; but the caller is told once per packet, so that
    /// per-flow marks and mark probabilities count packets (a probability never exceeds 1).
    fn mark(&mut self, e: &mut Entry<P>, ctx: &mut QdiscCtx<P>) -> bool {
        if e.pkt.set_ce() {
            self.ecn_mark += 1;
            self.stats.marks += 1;
            if !e.mark_reported {
                e.mark_reported = true;
                ctx.note_mark(e.pkt.flow_key());
            }
            true
        } else {
            false
        }
    }

    /// sch_dualpi2.c:must_drop: the PI-based decision for one packet, given the
    /// qdisc backlog in bytes (excluding the packet at dequeue, before adding it at
    /// enqueue). Marks the packet when that is the outcome; true = drop it.
    fn must_drop(&mut self, e: &mut Entry<P>, backlog: u64, ctx: &mut QdiscCtx<P>) -> bool {
        // sch_dualpi2.c:must_drop: no action with less than 2 MTU queued (Linux only; not in RFC 9332).
        if backlog < 2 * PSCHED_MTU as u64 {
            return false;
        }
        let prob = self.prob;
        let local_l_prob = prob as u64 * self.k as u64;
        let overload = self.is_overloaded();
        match e.class {
            // sch_dualpi2.c:dualpi2_classic_marking: p_C = p'^2 via two independent draws; Not-ECT or overload -> drop.
            Class::Classic => {
                if Self::roll(prob, ctx.rng) && Self::roll(prob, ctx.rng) {
                    if overload || e.ect == Ecn::NotEct {
                        return true;
                    }
                    self.mark(e, ctx);
                }
                false
            }
            Class::L4s => {
                if overload {
                    // sch_dualpi2.c:dualpi2_scalable_marking: on overload with drop_on_overload, drop w.p. p'^2 and
                    // mark every other L packet (p_CL saturates); in overflow mode
                    // (unreachable: prob is capped at MAX/k) mark without drawing.
                    if self.params.drop_on_overload && Self::roll(prob, ctx.rng) && Self::roll(prob, ctx.rng) {
                        return true;
                    }
                    self.mark(e, ctx);
                    return false;
                }
                // sch_dualpi2.c:dualpi2_scalable_marking: p_CL = k x p' (fits in u32 as not overloaded).
                if Self::roll(local_l_prob as u32, ctx.rng) {
                    if e.ect == Ecn::NotEct {
                        return true;
                    }
                    self.mark(e, ctx);
                }
                false
            }
        }
    }

    /// sch_dualpi2.c:do_step_aqm: step AQM on a packet leaving the L queue; true = drop it
    /// (Not-ECT above the step, DP2-T/ML).
    fn step_aqm(&mut self, e: &mut Entry<P>, now: Time, ctx: &mut QdiscCtx<P>) -> bool {
        let above = match self.step {
            Step::Time(th) => now.saturating_sub(e.pkt.enqueue_ts()) > th,
            // L queue length after removing this packet.
            Step::Packets(th) => self.l.len() as u64 > th as u64,
        };
        if e.apply_step && above {
            if e.ect == Ecn::NotEct {
                return true;
            }
            if self.mark(e, ctx) {
                self.step_marks += 1;
            }
        }
        false
    }

    /// sch_dualpi2.c:calculate_probability (DP2-T/ML integer arithmetic).
    fn calculate_probability(&mut self, now: Time) -> u32 {
        // Head-of-line waiting times (0 for an empty queue). Linux tracks head
        // enqueue timestamps with 0 meaning "empty"; the queue front is equivalent
        // (and avoids the sentinel clash with a packet enqueued at t = 0).
        let qdelay_c = self.c.front().map_or(0, |e| now.saturating_sub(e.pkt.enqueue_ts()));
        let qdelay_l = self.l.front().map_or(0, |e| now.saturating_sub(e.pkt.enqueue_ts()));
        let qdelay = qdelay_c.max(qdelay_l);
        // delta = (qdelay - target) a_i + (qdelay - last_qdelay) b_i in s64 (the
        // kernel notes overflow beyond ~4.2 s of delay change; wrap like it).
        let delta = (qdelay as i64)
            .wrapping_sub(self.target as i64)
            .wrapping_mul(self.a_i as i64)
            .wrapping_add((qdelay as i64).wrapping_sub(self.last_qdelay as i64).wrapping_mul(self.b_i as i64));
        self.last_qdelay = qdelay;
        // Scale by 2^-6 and add to the u32 prob; the kernel truncates the sum to
        // u32 and saturates only when the u32 addition wraps.
        let step = (delta.unsigned_abs() >> ALPHA_BETA_GRANULARITY) as u32;
        let new_prob = if delta > 0 {
            let n = self.prob.wrapping_add(step);
            if n < self.prob {
                MAX_PROB
            } else {
                n
            }
        } else {
            let n = self.prob.wrapping_sub(step);
            if n > self.prob {
                0
            } else {
                n
            }
        };
        // sch_dualpi2.c:calculate_probability: overflow mode caps p_CL at 100 %.
        if !self.params.drop_on_overload {
            new_prob.min(MAX_PROB / self.k as u32)
        } else {
            new_prob
        }
    }

    /// Index of the queue the WRR would serve next (sch_dualpi2.c:dequeue_packet), or None if empty.
    fn pick(&self) -> Option<Class> {
        if !self.l.is_empty() && (self.c.is_empty() || self.credit <= 0) {
            Some(Class::L4s)
        } else if !self.c.is_empty() {
            Some(Class::Classic)
        } else {
            None
        }
    }

    #[cfg(test)]
    fn set_prob(&mut self, p: u32) {
        self.prob = p;
    }
}

impl<P: QdiscPacket> Qdisc<P> for DualPi2<P> {
    fn kind(&self) -> &'static str {
        "dualpi2"
    }

    fn enqueue(&mut self, mut pkt: P, now: Time, ctx: &mut QdiscCtx<P>) {
        self.last_now = self.last_now.max(now);
        // sch_dualpi2.c:dualpi2_skb_classify: classify on the ECN field read at enqueue.
        let ect = pkt.ecn();
        let class = if (ect as u8) & self.ecn_mask != 0 { Class::L4s } else { Class::Classic };
        pkt.set_qclass(class as u8);
        let qlen = self.c.len() + self.l.len();
        // sch_dualpi2.c:dualpi2_enqueue_skb: shared packet limit (+ truesize memlimit in mainline) -> tail drop.
        let over_mem = self.is_mainline() && self.memory_used as u64 + self.truesize as u64 > self.memory_limit as u64;
        if qlen >= self.limit as usize || over_mem {
            self.stats.overlimits += 1;
            ctx.drop_counted(&mut self.stats, pkt);
            return;
        }
        let mut e = Entry { pkt, ect, class, apply_step: false, mark_reported: false };
        // sch_dualpi2.c:dualpi2_enqueue_skb: drop_enqueue mode runs the PI decision on the backlog before adding.
        if !self.params.drop_dequeue && self.must_drop(&mut e, self.stats.backlog_bytes, ctx) {
            ctx.drop_counted(&mut self.stats, e.pkt);
            return;
        }
        // sch_dualpi2.c:dualpi2_enqueue_skb: timestamp, memory, maxq (qlen before adding).
        e.pkt.set_enqueue_ts(now);
        if self.is_mainline() {
            self.memory_used = self.memory_used.wrapping_add(self.truesize);
            self.max_memory_used = self.max_memory_used.max(self.memory_used);
        }
        self.maxq = self.maxq.max(qlen as u64);
        self.stats.on_enqueue(&e.pkt);
        match class {
            Class::L4s => {
                // sch_dualpi2.c:dualpi2_enqueue_skb: step eligibility from the L queue length before appending:
                // DP2-T "qlen(L) > 1", DP2-ML "qlen(L) >= min_qlen_step".
                let ql = self.l.len() as u64;
                e.apply_step = if self.is_mainline() { ql >= self.params.min_qlen_step as u64 } else { ql > 1 };
                self.packets_in_l += 1;
                self.l.push_back(e);
            }
            Class::Classic => {
                self.packets_in_c += 1;
                self.c.push_back(e);
            }
        }
    }

    fn dequeue(&mut self, now: Time, ctx: &mut QdiscCtx<P>) -> Option<P> {
        // sch_dualpi2.c:dualpi2_qdisc_dequeue: `now` read once per call; drops retry within the call.
        self.last_now = self.last_now.max(now);
        loop {
            // sch_dualpi2.c:dequeue_packet: WRR pick; credit change only if the other queue is non-empty.
            let both = !self.c.is_empty() && !self.l.is_empty();
            let mut e = match self.pick() {
                Some(Class::L4s) => self.l.pop_front().expect("L non-empty"),
                Some(Class::Classic) => self.c.pop_front().expect("C non-empty"),
                None => {
                    // Both empty: reset the credit.
                    self.credit = self.credit_init;
                    return None;
                }
            };
            let len = e.pkt.wire_len() as i32;
            let credit_change = match (both, e.class) {
                (false, _) => 0,
                (true, Class::L4s) => self.wc.wrapping_mul(len),
                (true, Class::Classic) => (-self.wl).wrapping_mul(len),
            };
            if self.is_mainline() {
                self.memory_used = self.memory_used.wrapping_sub(self.truesize);
            }
            self.stats.on_remove(&e.pkt);
            // sch_dualpi2.c:dualpi2_qdisc_dequeue: PI decision on the remaining backlog; a drop skips the credit.
            if self.params.drop_dequeue && self.must_drop(&mut e, self.stats.backlog_bytes, ctx) {
                ctx.drop_counted(&mut self.stats, e.pkt);
                continue;
            }
            // sch_dualpi2.c:dualpi2_qdisc_dequeue: step AQM for L-queue packets (after surviving the PI decision).
            if e.class == Class::L4s && self.step_aqm(&mut e, now, ctx) {
                self.l_drops += 1;
                ctx.drop_counted(&mut self.stats, e.pkt);
                continue;
            }
            // sch_dualpi2.c:dualpi2_qdisc_dequeue: apply the credit change and send.
            self.credit = self.credit.wrapping_add(credit_change);
            self.stats.on_sent(&e.pkt);
            return Some(e.pkt);
        }
    }

    fn peek(&self) -> Option<&P> {
        match self.pick()? {
            Class::L4s => self.l.front().map(|e| &e.pkt),
            Class::Classic => self.c.front().map(|e| &e.pkt),
        }
    }

    fn stats(&self) -> &QdiscStats {
        &self.stats
    }

    /// `next_update` is set at creation and moved only by `on_timer`.
    fn timer_is_periodic(&self) -> bool {
        true
    }

    fn next_timer(&self) -> Option<Time> {
        Some(self.next_update)
    }

    /// sch_dualpi2.c:calculate_probability: PI update every tupdate; re-armed at callback time + tupdate.
    fn on_timer(&mut self, now: Time, _ctx: &mut QdiscCtx<P>) {
        if now < self.next_update {
            return;
        }
        self.last_now = self.last_now.max(now);
        self.prob = self.calculate_probability(now);
        self.next_update = now + self.tupdate;
    }

    /// `tc -s qdisc show` xstats (sch_dualpi2.c:dualpi2_dump_stats). `delay_c`/`delay_l` are computed at
    /// the latest time the qdisc saw (the trait passes no dump time), truncated to
    /// whole µs as the kernel reports them.
    fn extra_stats(&self) -> Vec<(&'static str, f64)> {
        let delay_ms = |q: &VecDeque<Entry<P>>| {
            q.front().map_or(0, |e| self.last_now.saturating_sub(e.pkt.enqueue_ts()) / NS_PER_US) as f64 / 1000.0
        };
        let mut v = vec![
            ("prob", self.prob as f64 / MAX_PROB as f64),
            ("delay_c_ms", delay_ms(&self.c)),
            ("delay_l_ms", delay_ms(&self.l)),
            ("pkts_in_c", self.packets_in_c as f64),
            ("pkts_in_l", self.packets_in_l as f64),
            ("maxq", self.maxq as f64),
            ("ecn_mark", self.ecn_mark as f64),
            ("step_marks", self.step_marks as f64),
            ("credit", self.credit as f64),
            ("l_drops", self.l_drops as f64),
        ];
        if self.is_mainline() {
            v.push(("memory_used", self.memory_used as f64));
            v.push(("max_memory_used", self.max_memory_used as f64));
            v.push(("memory_limit", self.memory_limit as f64));
        }
        v
    }

    fn class_names(&self) -> &'static [&'static str] {
        &["C", "L"]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qdisc::testutil::TestPacket;
    use crate::qdisc::Ecn;
    use crate::rng;

    const FRAME: u32 = 1514;
    const MS: u64 = NS_PER_MS;

    /// Owns what a `QdiscCtx` borrows.
    use crate::qdisc::testutil::Harness as H;

    fn frame(id: u64, ecn: Ecn, len: u32) -> TestPacket {
        crate::qdisc::testutil::packet(id as u32, id, len, ecn)
    }

    fn qdisc(params: DualPi2Params) -> DualPi2<TestPacket> {
        params.validate().expect("valid params");
        DualPi2::<TestPacket>::new(params, &mut rng::stream(0, rng::Stream::Qdisc))
    }

    fn extra(q: &DualPi2<TestPacket>, name: &str) -> f64 {
        q.extra_stats().into_iter().find(|(k, _)| *k == name).map(|(_, v)| v).expect(name)
    }

    /// Probability that `roll(p)` fires: P(r <= p) for uniform u32 r.
    fn p_roll(p: u32) -> f64 {
        (p as f64 + 1.0) / 4_294_967_296.0
    }

    /// Binomial tolerance: a fraction of n Bernoulli(p) trials has standard
    /// deviation sqrt(p(1-p)/n); 5 sigma gives a two-sided false-failure
    /// probability of about 5.7e-7 (and the seeded stream makes the test
    /// deterministic anyway).
    fn tol5(p: f64, n: u64) -> f64 {
        5.0 * (p * (1.0 - p) / n as f64).sqrt()
    }

    /// Keep at least 40 frames of `ecn` queued (so the 2-MTU rule never applies) and
    /// dequeue at t = 0 (sojourn 0: no step) until `n` packets were decided.
    /// Returns (marked, dropped, passed unmarked).
    fn steady(q: &mut DualPi2<TestPacket>, h: &mut H, ecn: Ecn, n: u64) -> (u64, u64, u64) {
        let (mut marked, mut passed, mut id) = (0u64, 0u64, 0u64);
        let drops0 = q.stats().drops;
        while marked + passed + (q.stats().drops - drops0) < n {
            while q.len() < 40 {
                q.enqueue(frame(id, ecn, FRAME), 0, &mut h.ctx());
                id += 1;
            }
            let p = q.dequeue(0, &mut h.ctx()).expect("backlogged");
            if p.ecn == Ecn::Ce {
                marked += 1;
            } else {
                assert_eq!(p.ecn, ecn);
                passed += 1;
            }
        }
        (marked, q.stats().drops - drops0, passed)
    }

    #[test]
    fn vector1_wrr_order_and_credit() {
        // Worked example of sch_dualpi2.c:dequeue_packet: both queues backlogged with 1514-B frames
        // from reset: L x9, C x1, repeating; credit after the first C = -121 120.
        let mut q = qdisc(DualPi2Params::default());
        let mut h = H::with_seed(1);
        for i in 0..40 {
            q.enqueue(frame(i, Ecn::Ect1, FRAME), 0, &mut h.ctx());
            q.enqueue(frame(100 + i, Ecn::Ect0, FRAME), 0, &mut h.ctx());
        }
        assert_eq!(q.credit(), -121_120);
        let mut order = String::new();
        let mut credits = Vec::new();
        for _ in 0..30 {
            let p = q.dequeue(0, &mut h.ctx()).unwrap();
            order.push(if p.qclass == 1 { 'L' } else { 'C' });
            credits.push(q.credit());
        }
        assert_eq!(order, "LLLLLLLLLC".repeat(3));
        // +15 140 per L packet, -136 260 per C packet.
        assert_eq!(credits[7], 0);
        assert_eq!(credits[8], 15_140);
        assert_eq!(credits[9], -121_120);
        assert_eq!(credits[19], -121_120);
        assert_eq!(q.stats().marks + q.stats().drops, 0, "prob = 0: no AQM action");
    }

    #[test]
    fn wrr_credit_frozen_with_one_queue_and_reset_when_empty() {
        // Worked example of sch_dualpi2.c:dequeue_packet: one queue empty -> the other is served every
        // time and the credit is frozen; a dequeue finding both empty resets it.
        let mut q = qdisc(DualPi2Params::default());
        let mut h = H::with_seed(1);
        for i in 0..2 {
            q.enqueue(frame(i, Ecn::Ect1, FRAME), 0, &mut h.ctx());
        }
        for i in 0..3 {
            q.enqueue(frame(10 + i, Ecn::NotEct, FRAME), 0, &mut h.ctx());
        }
        assert_eq!(q.dequeue(0, &mut h.ctx()).unwrap().qclass, 1);
        assert_eq!(q.credit(), -121_120 + 15_140);
        assert_eq!(q.dequeue(0, &mut h.ctx()).unwrap().qclass, 1);
        assert_eq!(q.credit(), -90_840);
        for _ in 0..3 {
            assert_eq!(q.dequeue(0, &mut h.ctx()).unwrap().qclass, 0);
            assert_eq!(q.credit(), -90_840);
        }
        assert!(q.dequeue(0, &mut h.ctx()).is_none());
        assert_eq!(q.credit(), -121_120);
    }

    #[test]
    fn alpha_beta_fixed_point_as_tc_and_kernel() {
        // sch_dualpi2.c:dualpi2_change, iproute2 tc/q_dualpi2.c: sch_dualpi2.c:dualpi2_reset_default: 41/256 and 819/256 -> a_i = 44, b_i = 879.
        let d = DualPi2Params::default();
        assert_eq!((d.alpha_nl(), d.beta_nl()), (41, 819));
        assert_eq!((d.a_i(), d.b_i()), (44, 879));
        assert_eq!(qdisc(d).gains(), (44, 879));
        // `tc ... alpha 0.16 beta 3.2` truncates to 40 and 819: a_i = 42.
        let tc = DualPi2Params { alpha: Some(0.16), beta: Some(3.2), ..Default::default() };
        assert_eq!((tc.alpha_nl(), tc.beta_nl()), (40, 819));
        assert_eq!((tc.a_i(), tc.b_i()), (42, 879));
        let exact = DualPi2Params { alpha: Some(0.16015625), ..Default::default() };
        assert_eq!(exact.a_i(), 44);
    }

    #[test]
    fn vector2_pi_integer_path() {
        // Worked example of sch_dualpi2.c:calculate_probability: a_i 44, b_i 879, target 15 ms, head waiting time held
        // at 16 ms at every update: +220 437 500 then +687 500 per update.
        let mut q = qdisc(DualPi2Params::default());
        let mut h = H::with_seed(1);
        assert_eq!(q.next_timer(), Some(16 * MS), "first expiry = creation + tupdate");
        q.enqueue(frame(0, Ecn::Ect0, FRAME), 0, &mut h.ctx());
        q.on_timer(16 * MS, &mut h.ctx());
        assert_eq!(q.prob(), 220_437_500);
        assert!((q.prob() as f64 / MAX_PROB as f64 - 0.051325).abs() < 1e-6);
        for k in 1..=10u64 {
            assert_eq!(q.next_timer(), Some(16 * MS * (k + 1)));
            // A new head arrives at 16k ms; the old one leaves just before the
            // update (one frame left: below 2 MTU, so no PI action at dequeue).
            q.enqueue(frame(k, Ecn::Ect0, FRAME), 16 * MS * k, &mut h.ctx());
            let p = q.dequeue(16 * MS * (k + 1) - 1, &mut h.ctx()).unwrap();
            assert_eq!((p.id, p.ecn), (k - 1, Ecn::Ect0));
            q.on_timer(16 * MS * (k + 1), &mut h.ctx());
            assert_eq!(q.prob(), 220_437_500 + 687_500 * k as u32);
        }
    }

    #[test]
    fn pi_uses_larger_head_wait_and_clamps() {
        let mut h = H::with_seed(1);
        // sch_dualpi2.c:calculate_probability step 1: the max of the C and L head waiting times.
        let mut q = qdisc(DualPi2Params::default());
        q.enqueue(frame(0, Ecn::Ect0, FRAME), 6 * MS, &mut h.ctx()); // C head waits 10 ms
        q.enqueue(frame(1, Ecn::Ect1, FRAME), 0, &mut h.ctx()); // L head waits 16 ms
        q.on_timer(16 * MS, &mut h.ctx());
        assert_eq!(q.prob(), 220_437_500);
        // Queues empty at the next update: delta = -15e6*44 - 16e6*879 -> clamp at 0.
        q.dequeue(16 * MS, &mut h.ctx());
        q.dequeue(16 * MS, &mut h.ctx());
        q.on_timer(32 * MS, &mut h.ctx());
        assert_eq!(q.prob(), 0);
        q.on_timer(48 * MS, &mut h.ctx());
        assert_eq!(q.prob(), 0);
        // Saturation at MAX_PROB when the u32 addition wraps.
        q.set_prob(MAX_PROB - 10);
        q.enqueue(frame(2, Ecn::Ect0, FRAME), 48 * MS, &mut h.ctx());
        q.on_timer(48 * MS + 20 * MS, &mut h.ctx());
        assert_eq!(q.prob(), MAX_PROB);
        // Kernel quirk (DP2-T/ML): the scaled step is truncated to u32 before the
        // wrap check, so one update adding >= 2^32 is taken modulo 2^32. Head wait
        // 300 ms from prob 0: (285e6*44 + 300e6*879)/64 = 4 316 250 000 -> 21 282 704.
        let mut q2 = qdisc(DualPi2Params { tupdate_ns: 300 * MS, ..Default::default() });
        q2.enqueue(frame(0, Ecn::Ect0, FRAME), 0, &mut h.ctx());
        assert_eq!(q2.next_timer(), Some(300 * MS));
        q2.on_timer(300 * MS, &mut h.ctx());
        assert_eq!(q2.prob(), 21_282_704);
    }

    #[test]
    fn overflow_mode_caps_prob_at_one_over_k() {
        // sch_dualpi2.c:calculate_probability step 5 / sch_dualpi2.c:dualpi2_scalable_marking: overflow mode caps prob at MAX/k.
        let mut q = qdisc(DualPi2Params { drop_on_overload: false, ..Default::default() });
        let mut h = H::with_seed(3);
        q.set_prob(MAX_PROB - 10);
        q.enqueue(frame(0, Ecn::Ect0, FRAME), 0, &mut h.ctx());
        q.on_timer(16 * MS, &mut h.ctx());
        assert_eq!(q.prob(), MAX_PROB / 2);
        assert!(!q.is_overloaded());
        q.dequeue(16 * MS, &mut h.ctx());
        // Classic ECT(0) packets are then marked, never force-dropped.
        let n = 20_000;
        let (marked, dropped, _) = steady(&mut q, &mut h, Ecn::Ect0, n);
        assert_eq!(dropped, 0);
        let pc = p_roll(MAX_PROB / 2).powi(2);
        assert!((marked as f64 / n as f64 - pc).abs() < tol5(pc, n), "marked {marked}");
    }

    #[test]
    fn a_packet_marked_by_coupling_and_step_is_reported_once() {
        // p' = 0.5 - 2^-32: p_CL = k p' fires for every L packet (sch_dualpi2.c:dualpi2_scalable_marking),
        // and a dequeue 2 ms after enqueue is above the 1 ms step (sch_dualpi2.c:do_step_aqm): both
        // rules mark each packet. Linux's `ecn_mark` counts both (INET_ECN_set_ce succeeds on CE); the
        // per-packet report, which per-flow marks and mark probabilities are built from, counts one.
        let mut q = qdisc(DualPi2Params::default());
        q.set_prob(2_147_483_647);
        let mut h = H::with_seed(3);
        let n = 2_000u64;
        for id in 0..n {
            q.enqueue(frame(id, Ecn::Ect1, FRAME), 0, &mut h.ctx());
        }
        let mut sent = 0u64;
        while let Some(p) = q.dequeue(2_000_000, &mut h.ctx()) {
            assert_eq!(p.ecn, Ecn::Ce);
            sent += 1;
        }
        assert_eq!(sent, n);
        assert_eq!(h.marked.len() as u64, n, "one report per marked packet");
        // The first packets found fewer than two queued behind them (step eligibility
        // `qlen(L) > 1` at enqueue, DP2-T) or under 2 MTU left (must_drop): count both rules.
        let ecn_mark = extra(&q, "ecn_mark") as u64;
        let step = extra(&q, "step_marks") as u64;
        assert!(step >= n - 2 && ecn_mark >= 2 * n - 4, "ecn_mark {ecn_mark}, step_marks {step}");
        assert_eq!(q.stats().marks, ecn_mark, "tc -s counts every mark, as Linux");
    }

    #[test]
    fn vector3_overload_boundary() {
        // Worked example of sch_dualpi2.c:calculate_probability (k = 2).
        let mut q = qdisc(DualPi2Params::default());
        q.set_prob(2_147_483_647);
        assert!(!q.is_overloaded());
        q.set_prob(2_147_483_648);
        assert!(q.is_overloaded());

        // Not overloaded at p' = 0.5: p_CL = 1 - 2^-32, so every L packet is marked
        // and none dropped.
        let mut h = H::with_seed(7);
        let mut q = qdisc(DualPi2Params::default());
        q.set_prob(2_147_483_647);
        let (marked, dropped, passed) = steady(&mut q, &mut h, Ecn::Ect1, 5_000);
        assert_eq!((dropped, passed), (0, 0));
        assert_eq!(marked, 5_000);

        // Overloaded: L behaves like C (drop w.p. p'^2) and every survivor is marked;
        // C ECT(0) packets are dropped w.p. p'^2 and never marked.
        let n = 20_000;
        let pd = p_roll(2_147_483_648).powi(2);
        let mut q = qdisc(DualPi2Params::default());
        q.set_prob(2_147_483_648);
        let (marked, dropped, passed) = steady(&mut q, &mut h, Ecn::Ect1, n);
        assert_eq!(passed, 0);
        assert_eq!(marked + dropped, n);
        assert!((dropped as f64 / n as f64 - pd).abs() < tol5(pd, n), "L dropped {dropped}");
        let mut q = qdisc(DualPi2Params::default());
        q.set_prob(2_147_483_648);
        let (marked, dropped, _) = steady(&mut q, &mut h, Ecn::Ect0, n);
        assert_eq!(marked, 0);
        assert!((dropped as f64 / n as f64 - pd).abs() < tol5(pd, n), "C dropped {dropped}");

        // The boundary is strict (k x prob > MAX_PROB). With k = 2 the product is even
        // and MAX_PROB odd, so check it where it can bite: k = 3, MAX_PROB = 3 x
        // 1 431 655 765. At that prob p_CL = 1 exactly (no drop); one more -> overload,
        // L packets dropped w.p. p'^2 ~ 1/9.
        let k3 = DualPi2Params { coupling_factor: 3, ..Default::default() };
        let mut q = qdisc(k3.clone());
        q.set_prob(1_431_655_765);
        assert!(!q.is_overloaded());
        assert_eq!(steady(&mut q, &mut h, Ecn::Ect1, 5_000), (5_000, 0, 0));
        let mut q = qdisc(k3);
        q.set_prob(1_431_655_766);
        assert!(q.is_overloaded());
        let (marked, dropped, passed) = steady(&mut q, &mut h, Ecn::Ect1, n);
        let pd = p_roll(1_431_655_766).powi(2);
        assert_eq!((passed, marked + dropped), (0, n));
        assert!((dropped as f64 / n as f64 - pd).abs() < tol5(pd, n), "k=3 L dropped {dropped}");
    }

    #[test]
    fn coupling_observed_at_dequeue() {
        // sch_dualpi2.c:must_drop / sch_dualpi2.c:calculate_probability: with prob fixed at p' = 0.1, C ECT(0) packets are
        // marked w.p. p'^2 = (p_CL/k)^2 and L packets w.p. p_CL = k p'.
        let prob = (0.1 * MAX_PROB as f64) as u32;
        let n = 200_000u64;
        let mut h = H::with_seed(11);
        let mut qc = qdisc(DualPi2Params::default());
        qc.set_prob(prob);
        let (mc, dc, _) = steady(&mut qc, &mut h, Ecn::Ect0, n);
        let mut ql = qdisc(DualPi2Params::default());
        ql.set_prob(prob);
        let (ml, dl, _) = steady(&mut ql, &mut h, Ecn::Ect1, n);
        assert_eq!((dc, dl), (0, 0), "ECT packets are marked, not dropped");
        let (fc, fl) = (mc as f64 / n as f64, ml as f64 / n as f64);
        let pc = p_roll(prob).powi(2); // two draws
        let pcl = p_roll(2 * prob); // one draw at k x prob
        assert!((fc - pc).abs() < tol5(pc, n), "C marked {fc} vs {pc}");
        assert!((fl - pcl).abs() < tol5(pcl, n), "L marked {fl} vs {pcl}");
        // The coupling law between the measured fractions: fc ~ (fl/k)^2. By the delta
        // method sd((fl/k)^2) = 2 (fl/k) sd(fl) / k; the two estimates are independent.
        let k = 2.0;
        let sd_c = (pc * (1.0 - pc) / n as f64).sqrt();
        let sd_l = 2.0 * (pcl / k) * (pcl * (1.0 - pcl) / n as f64).sqrt() / k;
        let tol = 5.0 * (sd_c * sd_c + sd_l * sd_l).sqrt();
        assert!((fc - (fl / k).powi(2)).abs() < tol, "coupling {fc} vs {}", (fl / k).powi(2));
        eprintln!(
            "coupling: fC {fc:.5} (exp {pc:.5} +- {:.5}), fL {fl:.5} (exp {pcl:.5} +- {:.5})",
            tol5(pc, n),
            tol5(pcl, n)
        );
        assert_eq!(extra(&qc, "ecn_mark"), mc as f64);
        assert_eq!(qc.stats().marks, mc);
        assert_eq!(extra(&ql, "step_marks"), 0.0);
    }

    #[test]
    fn not_ect_classic_dropped_like_ect0_marked() {
        // sch_dualpi2.c:dualpi2_classic_marking: a firing p_C draw drops a Not-ECT packet and marks ECT(0).
        let prob = (0.1 * MAX_PROB as f64) as u32;
        let n = 200_000u64;
        let mut h = H::with_seed(13);
        let mut q = qdisc(DualPi2Params::default());
        q.set_prob(prob);
        let (marked, dropped, _) = steady(&mut q, &mut h, Ecn::NotEct, n);
        assert_eq!(marked, 0);
        assert_eq!(h.marked.len(), 0);
        assert_eq!(h.dropped.len() as u64, dropped);
        let pc = p_roll(prob).powi(2);
        let fd = dropped as f64 / n as f64;
        assert!((fd - pc).abs() < tol5(pc, n), "dropped {fd} vs {pc}");
        let mut q0 = qdisc(DualPi2Params::default());
        q0.set_prob(prob);
        let (m0, _, _) = steady(&mut q0, &mut h, Ecn::Ect0, n);
        // Difference of two independent fractions: sd = sqrt(2) sd(one).
        let fm = m0 as f64 / n as f64;
        assert!((fd - fm).abs() < 2f64.sqrt() * tol5(pc, n), "dropped {fd} vs marked {fm}");
    }

    #[test]
    fn no_pi_action_below_two_mtu() {
        // sch_dualpi2.c:must_drop: no PI mark/drop while the backlog left behind the departing
        // packet is < 2 x 1514 B.
        let mut h = H::with_seed(5);
        // C at prob = MAX (overloaded: every C draw fires and drops).
        let mut q = qdisc(DualPi2Params::default());
        q.set_prob(MAX_PROB);
        for i in 0..3 {
            q.enqueue(frame(i, Ecn::Ect0, FRAME), 0, &mut h.ctx());
        }
        // #0 leaves 3028 B behind -> dropped; #1 leaves 1514 B -> untouched.
        let p = q.dequeue(0, &mut h.ctx()).unwrap();
        assert_eq!((p.id, p.ecn), (1, Ecn::Ect0));
        assert_eq!(h.dropped.iter().map(|p| p.id).collect::<Vec<_>>(), vec![0]);
        let p = q.dequeue(0, &mut h.ctx()).unwrap();
        assert_eq!((p.id, p.ecn), (2, Ecn::Ect0));
        assert_eq!(q.stats().drops, 1);

        // L at p' = 0.5 (p_CL ~ 1): marked iff >= 3028 B remain.
        let mut q = qdisc(DualPi2Params::default());
        q.set_prob(2_147_483_647);
        for (i, len) in [FRAME, FRAME, FRAME].into_iter().enumerate() {
            q.enqueue(frame(i as u64, Ecn::Ect1, len), 0, &mut h.ctx());
        }
        assert_eq!(q.dequeue(0, &mut h.ctx()).unwrap().ecn, Ecn::Ce);
        assert_eq!(q.dequeue(0, &mut h.ctx()).unwrap().ecn, Ecn::Ect1);
        assert_eq!(q.dequeue(0, &mut h.ctx()).unwrap().ecn, Ecn::Ect1);
        // Byte-exact: 1514 + 1513 = 3027 B left -> no action.
        for (i, len) in [FRAME, FRAME, FRAME - 1].into_iter().enumerate() {
            q.enqueue(frame(i as u64, Ecn::Ect1, len), 0, &mut h.ctx());
        }
        assert_eq!(q.dequeue(0, &mut h.ctx()).unwrap().ecn, Ecn::Ect1);
        assert_eq!(extra(&q, "ecn_mark"), 1.0);

        // The step is not subject to the 2-MTU rule (sch_dualpi2.c:do_step_aqm): a lone L packet that
        // waited 2 ms is step-marked (mainline: always eligible).
        let mut q = qdisc(DualPi2Params::default());
        q.enqueue(frame(9, Ecn::Ect1, FRAME), 0, &mut h.ctx());
        assert_eq!(q.dequeue(2 * MS, &mut h.ctx()).unwrap().ecn, Ecn::Ce);
        assert_eq!(extra(&q, "step_marks"), 1.0);
    }

    #[test]
    fn step_marks_only_l_packets_above_threshold() {
        // sch_dualpi2.c:do_step_aqm: mark an L packet iff its own sojourn > 1 ms (strict), measured
        // with the dequeue call's `now`; C packets are never step-marked.
        let mut q = qdisc(DualPi2Params::default());
        let mut h = H::with_seed(2);
        for i in 0..5 {
            q.enqueue(frame(i, Ecn::Ect1, FRAME), 0, &mut h.ctx());
            q.enqueue(frame(10 + i, Ecn::Ect0, FRAME), 0, &mut h.ctx());
        }
        // WRR from reset serves the 5 L packets first (credit stays <= 0).
        let times = [999_999, 1_000_000, 1_000_001, 2 * MS, 3 * MS];
        let got: Vec<Ecn> = times.iter().map(|&t| q.dequeue(t, &mut h.ctx()).unwrap()).map(|p| p.ecn).collect();
        assert_eq!(got, vec![Ecn::Ect1, Ecn::Ect1, Ecn::Ce, Ecn::Ce, Ecn::Ce]);
        for t in 1..=5 {
            let p = q.dequeue(50 * MS * t, &mut h.ctx()).unwrap();
            assert_eq!((p.qclass, p.ecn), (0, Ecn::Ect0), "C never step-marked");
        }
        assert_eq!(extra(&q, "step_marks"), 3.0);
        assert_eq!(extra(&q, "ecn_mark"), 3.0);
        assert_eq!(q.stats().marks, 3);
        assert_eq!(h.marked, vec![2, 3, 4]);
    }

    #[test]
    fn step_floor_l4steam_vs_mainline_min_qlen_step() {
        // sch_dualpi2.c:dualpi2_enqueue_skb / sch_dualpi2.c:do_step_aqm: DP2-T applies the step only to packets that found
        // qlen(L) > 1 at enqueue; DP2-ML to those finding qlen(L) >= min_qlen_step.
        let run = |params: DualPi2Params| -> Vec<Ecn> {
            let mut q = qdisc(params);
            let mut h = H::with_seed(4);
            for i in 0..4 {
                q.enqueue(frame(i, Ecn::Ect1, FRAME), 0, &mut h.ctx());
            }
            (0..4).map(|_| q.dequeue(5 * MS, &mut h.ctx()).unwrap().ecn).collect()
        };
        let (e, c) = (Ecn::Ect1, Ecn::Ce);
        let t = DualPi2Params { variant: DualPi2Variant::L4STeam, ..Default::default() };
        assert_eq!(run(t), vec![e, e, c, c]);
        assert_eq!(run(DualPi2Params::default()), vec![c, c, c, c]);
        assert_eq!(run(DualPi2Params { min_qlen_step: 2, ..Default::default() }), vec![e, e, c, c]);
    }

    #[test]
    fn step_in_packets() {
        // sch_dualpi2.c:do_step_aqm: measure = L queue length after removing the packet, strict >.
        let run = |params: DualPi2Params| -> Vec<Ecn> {
            let mut q = qdisc(params);
            let mut h = H::with_seed(4);
            for i in 0..5 {
                q.enqueue(frame(i, Ecn::Ect1, FRAME), 0, &mut h.ctx());
            }
            (0..5).map(|_| q.dequeue(0, &mut h.ctx()).unwrap().ecn).collect()
        };
        let (e, c) = (Ecn::Ect1, Ecn::Ce);
        let ml = DualPi2Params { step_thresh_packets: Some(2), ..Default::default() };
        assert_eq!(run(ml), vec![c, c, e, e, e]);
        // DP2-T source quirk: the packet threshold is multiplied by 1000.
        let t = DualPi2Params { step_thresh_packets: Some(2), variant: DualPi2Variant::L4STeam, ..Default::default() };
        assert_eq!(run(t), vec![e; 5]);
    }

    #[test]
    fn classification_and_counters() {
        // sch_dualpi2.c:dualpi2_skb_classify: ECT(1) and CE -> L with l4s_ect; any_ect adds ECT(0).
        let mut h = H::with_seed(1);
        let mut q = qdisc(DualPi2Params::default());
        for (i, ecn) in [Ecn::NotEct, Ecn::Ect1, Ecn::Ect0, Ecn::Ce].into_iter().enumerate() {
            q.enqueue(frame(i as u64, ecn, 100), 0, &mut h.ctx());
        }
        assert_eq!((extra(&q, "pkts_in_c"), extra(&q, "pkts_in_l")), (2.0, 2.0));
        let mut seen: Vec<(u64, u8)> =
            (0..4).map(|_| q.dequeue(0, &mut h.ctx()).unwrap()).map(|p| (p.id, p.qclass)).collect();
        seen.sort();
        assert_eq!(seen, vec![(0, 0), (1, 1), (2, 0), (3, 1)]);
        assert_eq!(q.class_names(), &["C", "L"]);

        let mut q = qdisc(DualPi2Params { ecn_mask: DualPi2EcnMask::AnyEct, ..Default::default() });
        for (i, ecn) in [Ecn::NotEct, Ecn::Ect1, Ecn::Ect0, Ecn::Ce].into_iter().enumerate() {
            q.enqueue(frame(i as u64, ecn, 100), 0, &mut h.ctx());
        }
        assert_eq!((extra(&q, "pkts_in_c"), extra(&q, "pkts_in_l")), (1.0, 3.0));
    }

    #[test]
    fn shared_tail_drop_limit_and_memlimit() {
        // sch_dualpi2.c:dualpi2_enqueue_skb: one packet limit for both queues; overlimit + drop.
        let mut h = H::with_seed(1);
        let mut q = qdisc(DualPi2Params { limit_packets: 5, ..Default::default() });
        for i in 0..3 {
            q.enqueue(frame(i, Ecn::Ect1, FRAME), 0, &mut h.ctx());
            q.enqueue(frame(10 + i, Ecn::Ect0, FRAME), 0, &mut h.ctx());
        }
        assert_eq!(q.len(), 5);
        assert_eq!((q.stats().drops, q.stats().overlimits), (1, 1));
        assert_eq!(h.dropped[0].id, 12);
        assert_eq!(extra(&q, "maxq"), 4.0, "maxq = qlen before adding");
        assert_eq!(q.stats().maxq_packets, 5);

        // Mainline memlimit on truesize (default 2304 B per skb).
        let mut q = qdisc(DualPi2Params { memlimit_bytes: Some(3 * 2304), ..Default::default() });
        for i in 0..4 {
            q.enqueue(frame(i, Ecn::Ect0, 66), 0, &mut h.ctx());
        }
        assert_eq!(q.len(), 3);
        assert_eq!(extra(&q, "memory_used"), 3.0 * 2304.0);
        q.dequeue(0, &mut h.ctx());
        assert_eq!(extra(&q, "memory_used"), 2.0 * 2304.0);
        assert_eq!(extra(&q, "max_memory_used"), 3.0 * 2304.0);
        assert_eq!(DualPi2Params::default().memory_limit(), 30_280_000);
    }

    #[test]
    fn drop_enqueue_mode_decides_at_enqueue() {
        // sch_dualpi2.c:dualpi2_enqueue_skb: PI decision at enqueue on the backlog before adding; none at
        // dequeue (the step still runs at dequeue).
        let mut h = H::with_seed(1);
        let mut q = qdisc(DualPi2Params { drop_dequeue: false, ..Default::default() });
        q.set_prob(2_147_483_647);
        for i in 0..4 {
            q.enqueue(frame(i, Ecn::Ect1, FRAME), 0, &mut h.ctx());
        }
        let got: Vec<Ecn> = (0..4).map(|_| q.dequeue(0, &mut h.ctx()).unwrap().ecn).collect();
        assert_eq!(got, vec![Ecn::Ect1, Ecn::Ect1, Ecn::Ce, Ecn::Ce]);
        // Overloaded C Not-ECT: dropped at enqueue once >= 3028 B are queued.
        q.set_prob(MAX_PROB);
        for i in 0..4 {
            q.enqueue(frame(i, Ecn::NotEct, FRAME), 0, &mut h.ctx());
        }
        assert_eq!(q.len(), 2);
        assert_eq!(q.stats().drops, 2);
        assert_eq!(q.stats().overlimits, 0);
    }

    #[test]
    fn dequeue_drop_retries_in_same_call_without_credit() {
        // sch_dualpi2.c:dualpi2_qdisc_dequeue: a drop at dequeue makes the same call pick the next packet;
        // dropped packets do not change the WRR credit.
        let mut h = H::with_seed(1);
        let mut q = qdisc(DualPi2Params::default());
        for i in 0..4 {
            q.enqueue(frame(i, Ecn::Ect1, FRAME), 0, &mut h.ctx());
        }
        q.enqueue(frame(10, Ecn::Ect0, FRAME), 0, &mut h.ctx());
        q.set_prob(MAX_PROB); // overloaded: L packets dropped w.p. 1 above 2 MTU
        let p = q.dequeue(0, &mut h.ctx()).unwrap();
        assert_eq!(p.id, 3);
        assert_eq!(h.dropped.iter().map(|p| p.id).collect::<Vec<_>>(), vec![0, 1, 2]);
        assert_eq!(q.credit(), -121_120 + 15_140);
        assert_eq!(q.stats().drops, 3);
        assert_eq!((q.stats().backlog_packets, q.stats().backlog_bytes), (1, FRAME as u64));
        assert_eq!(q.stats().sent_packets, 1);
    }

    #[test]
    fn timer_schedule_and_extra_stats() {
        let mut h = H::with_seed(1);
        let mut q = qdisc(DualPi2Params { target_ns: 5 * MS, ..Default::default() });
        assert_eq!(q.next_timer(), Some(16 * MS));
        q.on_timer(10 * MS, &mut h.ctx()); // early call: ignored
        assert_eq!(q.next_timer(), Some(16 * MS));
        q.enqueue(frame(0, Ecn::Ect0, FRAME), MS, &mut h.ctx());
        q.enqueue(frame(1, Ecn::Ect1, FRAME), 12 * MS, &mut h.ctx());
        q.on_timer(16 * MS, &mut h.ctx());
        assert_eq!(q.next_timer(), Some(32 * MS));
        // qdelay 15 ms: (10e6*44 + 15e6*879)/64 = 212 890 625.
        assert_eq!(q.prob(), 212_890_625);
        assert!((extra(&q, "prob") - 212_890_625.0 / MAX_PROB as f64).abs() < 1e-12);
        assert_eq!(extra(&q, "delay_c_ms"), 15.0);
        assert_eq!(extra(&q, "delay_l_ms"), 4.0);
        assert_eq!(extra(&q, "credit"), -121_120.0);
    }

    #[test]
    fn params_validate_and_serde() {
        assert!(DualPi2Params::default().validate().is_ok());
        let bad = |p: DualPi2Params, field: &str| {
            let e = p.validate().unwrap_err();
            assert!(e.starts_with(field), "{e}");
        };
        bad(DualPi2Params { limit_packets: 0, ..Default::default() }, "limit_packets:");
        bad(DualPi2Params { coupling_factor: 0, ..Default::default() }, "coupling_factor:");
        bad(DualPi2Params { classic_protection: 101, ..Default::default() }, "classic_protection:");
        bad(DualPi2Params { target_ns: 15_000_001, ..Default::default() }, "target_ns:");
        bad(DualPi2Params { tupdate_ns: 0, ..Default::default() }, "tupdate_ns:");
        bad(DualPi2Params { alpha: Some(0.001), ..Default::default() }, "alpha:");
        bad(DualPi2Params { beta: Some(-1.0), ..Default::default() }, "beta:");
        let t = DualPi2Params { variant: DualPi2Variant::L4STeam, ..Default::default() };
        assert!(DualPi2Params { alpha: Some(0.001), ..t.clone() }.validate().is_ok(), "DP2-T accepts alpha 0");
        bad(DualPi2Params { min_qlen_step: 1, ..t.clone() }, "min_qlen_step:");
        bad(DualPi2Params { memlimit_bytes: Some(1000), ..t.clone() }, "memlimit_bytes:");
        bad(DualPi2Params { ecn_mask: DualPi2EcnMask::ClaEct, ..t }, "ecn_mask:");

        let p: DualPi2Params =
            serde_json::from_str(r#"{"target_ns": 5000000, "variant": "l4steam", "ecn_mask": "any_ect"}"#).unwrap();
        assert_eq!(p.target_ns, 5 * MS);
        assert_eq!(p.variant, DualPi2Variant::L4STeam);
        assert_eq!(p.ecn_mask, DualPi2EcnMask::AnyEct);
        assert_eq!(p.limit_packets, 10_000);
        assert!(serde_json::from_str::<DualPi2Params>(r#"{"tagret_ns": 1}"#).is_err());
        let back: DualPi2Params = serde_json::from_str(&serde_json::to_string(&p).unwrap()).unwrap();
        assert_eq!(back, p);
    }
}
