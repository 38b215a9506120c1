// SPDX-License-Identifier: GPL-2.0
/*
 * l4slab's TCP Prague for mainline Linux 7.2: two congestion controls in one
 * file, written for the l4slab kernel backend (User-Mode Linux guest).
 *
 *   "prague"      TCP Prague MODULE_VERSION "0.7" as L4STeam/linux
 *                 net/ipv4/tcp_prague.c (commit 893e147) defines it, with the
 *                 classic-ECN-AQM detector off by default (ecn_fallback = 0).
 *   "prague_pam"  The PAM-2025-era hybrid (L4STeam/tcp-prague commit 90aea47f):
 *                 the same v0.7 core, classic-ECN detection and fall-back on
 *                 (pam_ecn_fallback = 1) with the detector's reference
 *                 constants left at their 20-bit values beside a 24-bit alpha
 *                 (pam_fallback_constants = pam2025; L4STeam/linux issue #38),
 *                 and growth stopped only by tp->app_limited
 *                 (pam_growth_gate = app_limited). With pam_version =
 *                 pam2025 it also follows that build's own rules where they
 *                 differ from v0.7 at 893e147 (model: cc/prague/pam2025.rs,
 *                 the engine's cc_params version = "pam2025"): the window-mode
 *                 increase divided by the integer snd_cwnd without the
 *                 1500/MTU scaling, pacing from max(snd_cwnd, in flight) with
 *                 the slow-start doubling kept in the rate, the window/rate
 *                 switch by size alone, window-mode reductions of frac alone,
 *                 segment sizing from the rate in both modes, and the
 *                 detector's RTT filter always fed.
 *
 * This is l4slab's own code. It is a C port of the project's Rust model of
 * Prague, crates/l4slab-core/src/cc/prague/{mod.rs,v07.rs,
 * classic_ecn_detector.rs,segment_sizing.rs} (the engine's "prague" with its
 * cc_params), against the mainline 7.2 TCP congestion-control API. Every rule
 * names its source: L4STeam's function ("tcp_prague.c:<function>"), an RFC,
 * or the Rust model ("model: <file>"). Nothing here is copied from L4STeam's
 * file; see README.md in this directory for the citation policy.
 *
 * Algorithm, in short (draft-briscoe-iccrg-prague-congestion-control;
 * RFC 9331 section 4 requirements for an L4S sender):
 *  - alpha: EWMA with gain 1/16 of the CE-marked fraction of delivered
 *    packets, from AccECN (tp->delivered_ce / tp->delivered), once per
 *    (virtual) RTT (RFC 8257 section 3.3 as DCTCP; tcp_prague.c:
 *    prague_update_alpha);
 *  - on CE: cwnd *= 1 - alpha/2, at most once per virtual RTT
 *    (RFC 9331 section 4.3; tcp_prague.c:prague_enter_cwr);
 *  - additive increase of 1 packet (of 1500 B) per 25 ms virtual RTT once
 *    RTT-independent (tcp_prague.c:prague_ai_ack_increase,
 *    prague_update_cwnd; RFC 9331 section 4.3 "reduced RTT dependence");
 *  - fractional cwnd in 2^-20 packets, window/rate mode switch below
 *    cwnd_transit packets, internal pacing (tcp_prague.c:
 *    prague_update_pacing_rate, prague_cong_control);
 *  - loss: Reno halving (tcp_prague.c:prague_enter_loss; RFC 9331 4.3);
 *  - no AccECN negotiated: Reno ("prague-reno", tcp_prague.c:prague_init).
 *
 * Mainline 7.2 API differences handled here (cf. the testbed PoC notes):
 *  - no rs->ece_delta: the per-ACK CE delta is tp->delivered_ce minus its
 *    value at the previous cong_control call;
 *  - no tso_segs op in mainline: the project's kernel patch
 *    python/l4slab/kernel/linux/patches/0004-tcp-ca-tso-segs.patch adds it,
 *    and l4sp_tso_segs returns the burst bound max_tso_burst =
 *    max(1, rate/MTU >> burst_shift), capped by max_tso_segs, as
 *    tcp_prague.c:prague_tso_segs (mainline's (pacing_rate >> shift) / MSS
 *    rounds differently: 2 segments at 95-98 Mbit/s where Prague's gives 1);
 *  - ECT(1) on data: flag TCP_CONG_ECT_1_DATA of the project's kernel patch
 *    python/l4slab/kernel/linux/patches/0001-tcp-ect1-data.patch;
 *  - no tp->mss_cache_set_by_cca: segment sizing writes tp->mss_cache
 *    directly (tcp_current_mss() keeps it until the path MTU changes);
 *  - the classic-ECN detector's state (L4STeam keeps it in struct tcp_sock)
 *    does not fit ICSK_CA_PRIV_SIZE (104 B): it is allocated at init.
 */

#define pr_fmt(fmt) "tcp_l4slab_prague: " fmt

#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/math64.h>
#include <linux/slab.h>
#include <linux/log2.h>
#include <linux/inet_diag.h>
#include <net/tcp.h>

/* ------------------------------------------------------------------ units */

/* Fixed-point units (model: mod.rs constants; tcp_prague.c v0.7 #defines). */
#define L4SP_CWND_SHIFT		20U		/* frac cwnd in 2^-20 packets */
#define L4SP_ONE_PKT		(1ULL << L4SP_CWND_SHIFT)
#define L4SP_G_SHIFT		4U		/* EWMA gain 1/16 */
#define L4SP_ALPHA_SHIFT	24U		/* alpha resolution (v0.7) */
#define L4SP_ALPHA_ONE		(1ULL << L4SP_ALPHA_SHIFT)
#define L4SP_MIN_CWND		2U		/* floor of the integer cwnd */
#define L4SP_MIN_PKTS_VRTT	2ULL		/* packets per vRTT (sizing) */
#define L4SP_MIN_MSS		150U		/* smallest payload (sizing) */
#define L4SP_MIN_RATE		12500ULL	/* 100 kb/s in bytes/s */
#define L4SP_REF_MTU		1500ULL		/* MTU_SYS of the AI */
#define L4SP_MAX_SCALED_RTT_US	100000ULL	/* no AI scaling above */
#define L4SP_WOBBLE		4ULL		/* +-4/128 pacing wobble */
#define L4SP_WOBBLE_SHIFT	7U
#define L4SP_HSRTT_SHIFT	7U		/* slow SRTT gain 1/128 */
#define L4SP_SEC_SHIFT		23U		/* 2^23 "us*8 per second" */
#define L4SP_USEC8_PER_SEC	(8ULL * USEC_PER_SEC)

/* Classic-ECN detector (model: classic_ecn_detector.rs; tcp_prague.c at
 * MODULE_VERSION 0.6 and L4STeam/tcp-prague 90aea47f:
 * prague_rtt_estimator, prague_update_rtt_scaling,
 * prague_classic_ecn_detection, prague_classic_ecn_fallback;
 * Briscoe & Ahmed, arXiv:1911.00710).
 */
#define L4SP_DET_SRTT_BITS	18U		/* slowest gains */
#define L4SP_DET_MDEV_BITS	(L4SP_DET_SRTT_BITS + 1)
#define L4SP_DET_INIT_CARRY	741455ULL	/* 2^19.5 */
#define L4SP_DET_INIT_ADJ_US	262144ULL	/* 2^18 */
#define L4SP_DET_WV		1U		/* weights 2^-1 */
#define L4SP_DET_WD		1U
/* Scores in alpha units: pure L4S below 8, classic above 9, max 17. */
#define L4SP_DET_L_STICKY	(16ULL << (L4SP_ALPHA_SHIFT - L4SP_DET_WV))
#define L4SP_DET_CLASSIC	(L4SP_DET_L_STICKY + L4SP_ALPHA_ONE)
#define L4SP_DET_C_STICKY	(L4SP_DET_CLASSIC + L4SP_DET_L_STICKY)
/* V*lg(750 us) and D*lg(2 ms) in alpha units.
 * current: floor(lg(750) * 2^24) = 160234941, floor(lg(2000) * 2^24) =
 *   183975331, halved (the fix of L4STeam/linux issue #38 and of the ANRW'25
 *   artifact Greenscreen23/prague-fallback-experiments).
 * pam2025: the 20-bit literals 10014683, 11498458 kept beside a 24-bit alpha
 *   (L4STeam 5.15 tree / tcp-prague 90aea47f; L4STeam/linux issue #38).
 */
#define L4SP_V0_LG_CURRENT	(160234941ULL >> L4SP_DET_WV)
#define L4SP_D0_LG_CURRENT	(183975331ULL >> L4SP_DET_WD)
#define L4SP_V0_LG_PAM2025	(10014683ULL >> L4SP_DET_WV)
#define L4SP_D0_LG_PAM2025	(11498458ULL >> L4SP_DET_WD)
/* A score as "units.hundredths" for the debug log. */
#define L4SP_SCORE_INT(c)	((c) >> L4SP_ALPHA_SHIFT)
#define L4SP_SCORE_CENT(c)	((((c) & (L4SP_ALPHA_ONE - 1)) * 100) >> L4SP_ALPHA_SHIFT)

/* ------------------------------------------------------ module parameters */

/* Named as the engine's cc_params keys (model: mod.rs PragueParams /
 * param_specs); defaults are the engine's (= tcp_prague.c v0.7 module
 * defaults). Read on every use unless noted "at init".
 */
static unsigned int l4sp_burst_shift __read_mostly = 12;
module_param_named(burst_shift, l4sp_burst_shift, uint, 0644);
MODULE_PARM_DESC(burst_shift,
		 "max burst = 2^-burst_shift s at the pacing rate (12)");

static unsigned int l4sp_max_tso_segs __read_mostly;
module_param_named(max_tso_segs, l4sp_max_tso_segs, uint, 0644);
MODULE_PARM_DESC(max_tso_segs, "cap on TSO/GSO segments, 0 = none (0)");

static unsigned int l4sp_rtt_transition __read_mostly = 4;
module_param_named(rtt_transition, l4sp_rtt_transition, uint, 0644);
MODULE_PARM_DESC(rtt_transition,
		 "rounds after slow start before RTT independence (4)");

static unsigned int l4sp_rtt_target_us __read_mostly = 25000;
module_param_named(rtt_target_us, l4sp_rtt_target_us, uint, 0644);
MODULE_PARM_DESC(rtt_target_us, "virtual-RTT floor, us (25000)");

static unsigned int l4sp_alpha_mode __read_mostly;
module_param_named(alpha_mode, l4sp_alpha_mode, uint, 0644);
MODULE_PARM_DESC(alpha_mode,
		 "0: alpha starts at 0 and the first CE halves; 1: alpha starts at 1 (0; at init)");

static unsigned int l4sp_cwnd_mode __read_mostly = 2;
module_param_named(cwnd_mode, l4sp_cwnd_mode, uint, 0644);
MODULE_PARM_DESC(cwnd_mode, "0 window, 1 rate, 2 switch by window size (2; at init)");

static unsigned int l4sp_cwnd_transit __read_mostly = 4;
module_param_named(cwnd_transit, l4sp_cwnd_transit, uint, 0644);
MODULE_PARM_DESC(cwnd_transit, "window/rate switch point in 1500-B packets (4)");

static unsigned int l4sp_debug __read_mostly;
module_param_named(debug, l4sp_debug, uint, 0644);
MODULE_PARM_DESC(debug,
		 "1: log a summary at release; 2: also log each classic-ECN score update (0)");

/* Values of the string-valued parameters (engine spellings, or 0/1). */
enum { L4SP_CONST_CURRENT, L4SP_CONST_PAM2025 };
enum { L4SP_GATE_CWND_LIMITED, L4SP_GATE_APP_LIMITED };
enum { L4SP_SIZING_DEFAULT, L4SP_SIZING_FIXED };

static const char *const l4sp_const_names[] = { "current", "pam2025", NULL };
static const char *const l4sp_gate_names[] = { "cwnd_limited", "app_limited", NULL };
static const char *const l4sp_sizing_names[] = { "default", "fixed", NULL };

struct l4sp_enum_param {
	unsigned int val;
	const char *const *names;
};

static int l4sp_enum_set(const char *arg, const struct kernel_param *kp)
{
	struct l4sp_enum_param *p = kp->arg;
	unsigned int v;
	int i;

	i = __sysfs_match_string(p->names, -1, arg);
	if (i >= 0) {
		WRITE_ONCE(p->val, i);
		return 0;
	}
	if (kstrtouint(arg, 0, &v))
		return -EINVAL;
	for (i = 0; p->names[i]; i++)
		if (i == v) {
			WRITE_ONCE(p->val, v);
			return 0;
		}
	return -EINVAL;
}

static int l4sp_enum_get(char *buf, const struct kernel_param *kp)
{
	const struct l4sp_enum_param *p = kp->arg;

	return scnprintf(buf, PAGE_SIZE, "%s\n", p->names[READ_ONCE(p->val)]);
}

static const struct kernel_param_ops l4sp_enum_ops = {
	.set = l4sp_enum_set,
	.get = l4sp_enum_get,
};

static struct l4sp_enum_param l4sp_segment_sizing = {
	L4SP_SIZING_DEFAULT, l4sp_sizing_names };
module_param_cb(segment_sizing, &l4sp_enum_ops, &l4sp_segment_sizing, 0644);
MODULE_PARM_DESC(segment_sizing,
		 "default (v0.7: >= 2 packets per virtual RTT) or fixed (initial MSS) (default)");

/* The vintage parameters, one set per registered CC. */
static unsigned int l4sp_ecn_fallback __read_mostly;
module_param_named(ecn_fallback, l4sp_ecn_fallback, uint, 0644);
MODULE_PARM_DESC(ecn_fallback,
		 "prague: 0 off, 1 detect classic ECN AQM and fall back, 2 detect only (0; at init)");

static struct l4sp_enum_param l4sp_fallback_constants = {
	L4SP_CONST_CURRENT, l4sp_const_names };
module_param_cb(fallback_constants, &l4sp_enum_ops, &l4sp_fallback_constants, 0644);
MODULE_PARM_DESC(fallback_constants,
		 "prague: detector references current or pam2025 (current; at init)");

static struct l4sp_enum_param l4sp_growth_gate = {
	L4SP_GATE_CWND_LIMITED, l4sp_gate_names };
module_param_cb(growth_gate, &l4sp_enum_ops, &l4sp_growth_gate, 0644);
MODULE_PARM_DESC(growth_gate,
		 "prague: cwnd_limited (893e147) or app_limited (cwnd_limited; at init)");

static unsigned int l4sp_pam_ecn_fallback __read_mostly = 1;
module_param_named(pam_ecn_fallback, l4sp_pam_ecn_fallback, uint, 0644);
MODULE_PARM_DESC(pam_ecn_fallback, "prague_pam: as ecn_fallback (1; at init)");

static struct l4sp_enum_param l4sp_pam_fallback_constants = {
	L4SP_CONST_PAM2025, l4sp_const_names };
module_param_cb(pam_fallback_constants, &l4sp_enum_ops,
		&l4sp_pam_fallback_constants, 0644);
MODULE_PARM_DESC(pam_fallback_constants,
		 "prague_pam: as fallback_constants (pam2025; at init)");

static struct l4sp_enum_param l4sp_pam_growth_gate = {
	L4SP_GATE_APP_LIMITED, l4sp_gate_names };
module_param_cb(pam_growth_gate, &l4sp_enum_ops, &l4sp_pam_growth_gate, 0644);
MODULE_PARM_DESC(pam_growth_gate, "prague_pam: as growth_gate (app_limited; at init)");

enum { L4SP_VER_V07, L4SP_VER_PAM2025 };
static const char *const l4sp_ver_names[] = { "v07", "pam2025", NULL };
static struct l4sp_enum_param l4sp_pam_version = {
	L4SP_VER_V07, l4sp_ver_names };
module_param_cb(pam_version, &l4sp_enum_ops, &l4sp_pam_version, 0644);
MODULE_PARM_DESC(pam_version,
		 "prague_pam: v07 (the v0.7 core) or pam2025 (the 90aea47f build's rules) (v07; at init)");

/* ------------------------------------------------------------------ state */

/* The classic-ECN detector (model: classic_ecn_detector.rs
 * ClassicEcnDetector). L4STeam keeps the RTT filter in struct tcp_sock
 * (srtt_pace_us, mdev_pace_us, g_srtt_shift, g_mdev_shift, classic_ecn) and
 * the carries in its CA state; here all of it is allocated per socket.
 */
struct l4sp_detector {
	u64 srtt_pace;		/* EWMA of RTT samples, us << g_srtt */
	u64 mdev_pace;		/* mean deviation, us << g_mdev */
	u64 rest_mdev;		/* carried mantissas of the integer logs */
	u64 rest_depth;
	u64 score;		/* classic-ECN score c, alpha units */
	u64 v0_lg, d0_lg;	/* reference constants of the vintage */
	u32 rounds;		/* detector updates so far (debug) */
	u32 rounds_to_classic;	/* first update with c >= CLASSIC (debug) */
	u8 g_srtt, g_mdev;	/* gain shifts */
};

/* Per-socket state in icsk_ca_priv (104 B); model: mod.rs struct Prague.
 * upscaled_alpha (<= 2^28) and ai (<= 2^20) fit u32, which leaves room for
 * the detector pointer.
 */
struct l4sp {
	u64 cwr_stamp;		/* tcp_mstamp of the last alpha/2 reduction */
	u64 alpha_stamp;	/* tcp_mstamp of the last alpha update */
	u64 hsrtt;		/* slow SRTT average, srtt_us << HSRTT_SHIFT */
	u64 frac;		/* fractional cwnd, 2^-20 packets */
	u64 rate;		/* internal pacing rate, bytes/s (MTU-based) */
	u64 loss_rate;		/* rate before the last loss (undo) */
	struct l4sp_detector *det; /* NULL: detector off */
	u32 upscaled_alpha;	/* alpha * 16, 24 fractional bits */
	u32 ai;			/* per-ACK increase, 2^-20 packets */
	u32 mtu_cache;		/* initial MTU (upper bound of sizing) */
	u32 loss_cwnd;
	u32 max_tso_burst;	/* packets, 2^-burst_shift s at the rate */
	u32 old_delivered;	/* tp->delivered at round start */
	u32 old_delivered_ce;	/* tp->delivered_ce at round start */
	u32 next_seq;		/* tp->snd_nxt at round start */
	u32 round;		/* rounds since the last slow-start exit */
	u32 last_delivered_ce;	/* tp->delivered_ce at the previous ACK */
	u8 saw_ce:1,		/* a CE mark was seen: there is an AQM */
	   alpha_one:1,		/* alpha_mode 1 */
	   mode_switch:1,	/* cwnd_mode bit 1: switch window/rate */
	   rate_mode:1,		/* rate-based mode selected */
	   in_loss:1,		/* reducing after a loss: no AI */
	   app_gate:1,		/* growth_gate = app_limited */
	   fallback:2;		/* ecn_fallback 0/1/2 of this socket */
	u8 vintage:1;		/* prague_pam with pam_version = pam2025 */
};

static struct tcp_congestion_ops l4sp_prague;
static struct tcp_congestion_ops l4sp_pam;
static struct tcp_congestion_ops l4sp_reno;

static inline struct l4sp *l4sp_ca(const struct sock *sk)
{
	return inet_csk_ca(sk);
}

/* -------------------------------------------------------------- helpers */

/* tcp_mss_to_mtu(mss_cache): the MTU the sizing and AI rules use. */
static u32 l4sp_mtu(struct sock *sk)
{
	return tcp_mss_to_mtu(sk, tcp_sk(sk)->mss_cache);
}

/* Virtual-RTT floor T in us*8 (tcp_prague.c:prague_target_rtt). */
static u64 l4sp_target8(void)
{
	return (u64)READ_ONCE(l4sp_rtt_target_us) << 3;
}

/* max(T, SRTT) in us*8 (tcp_prague.c:prague_virtual_rtt). */
static u64 l4sp_vrtt8(const struct tcp_sock *tp)
{
	return max_t(u64, l4sp_target8(), tp->srtt_us);
}

/* Not in slow start and >= rtt_transition rounds after it
 * (tcp_prague.c:prague_is_rtt_indep).
 */
static bool l4sp_rtt_indep(const struct sock *sk)
{
	return !tcp_in_slow_start(tcp_sk(sk)) &&
	       l4sp_ca(sk)->round >= READ_ONCE(l4sp_rtt_transition);
}

/* The rate-based code paths (cwnd_mode == 1 and RTT-independent; the
 * pam2025 build tests "cwnd_mode == 1 && saw_ce" where it uses them, since
 * its switch does not wait for CE: 90aea47f prague_update_pacing_rate,
 * prague_update_cwnd, prague_enter_cwr, prague_enter_loss).
 */
static bool l4sp_rate_based(const struct sock *sk)
{
	const struct l4sp *ca = l4sp_ca(sk);

	return ca->rate_mode && (!ca->vintage || ca->saw_ce) &&
	       l4sp_rtt_indep(sk);
}

static u32 l4sp_since(const struct tcp_sock *tp, u64 stamp)
{
	return tcp_stamp_us_delta(tp->tcp_mstamp, stamp);
}

/* clamp(ceil(frac), MIN_CWND, snd_cwnd_clamp)
 * (tcp_prague.c:prague_frac_cwnd_to_snd_cwnd).
 */
static u32 l4sp_frac_to_cwnd(const struct sock *sk)
{
	u64 c = DIV_ROUND_UP_ULL(l4sp_ca(sk)->frac, L4SP_ONE_PKT);

	c = max_t(u64, c, L4SP_MIN_CWND);
	return min_t(u64, c, tcp_sk(sk)->snd_cwnd_clamp);
}

/* max(MTU * frac / SRTT, MIN_RATE), bytes/s
 * (tcp_prague.c:prague_frac_cwnd_to_pacing_rate; model: v07.rs frac_to_rate).
 */
static u64 l4sp_frac_to_rate(struct sock *sk)
{
	const struct tcp_sock *tp = tcp_sk(sk);
	u64 r = L4SP_USEC8_PER_SEC * l4sp_mtu(sk);

	if (tp->srtt_us)
		r = div_u64(r, tp->srtt_us);
	r = mul_u64_u64_shr(r, l4sp_ca(sk)->frac, L4SP_CWND_SHIFT);
	return max_t(u64, r, L4SP_MIN_RATE);
}

/* ceil(rate * R / MTU) in 2^-20 packets, R = hsrtt (or SRTT) in us*8 over a
 * 2^23 "second" (tcp_prague.c:prague_pacing_rate_to_frac_cwnd; model:
 * v07.rs rate_to_frac).
 */
static u64 l4sp_rate_to_frac(struct sock *sk)
{
	const struct l4sp *ca = l4sp_ca(sk);
	u64 rtt = ca->hsrtt >> L4SP_HSRTT_SHIFT;

	if (!rtt)
		rtt = tcp_sk(sk)->srtt_us;
	return DIV_U64_ROUND_UP(mul_u64_u64_shr(ca->rate, rtt,
						L4SP_SEC_SHIFT - L4SP_CWND_SHIFT),
				l4sp_mtu(sk));
}

/* The per-ACK increase: (SRTT/T)^2 in 2^-20 packets once RTT-independent,
 * below T and MAX_SCALED_RTT, else 1 (tcp_prague.c:prague_ai_ack_increase,
 * prague_rate_scaled_ai_ack_increase; model: v07.rs ai).
 */
static void l4sp_refresh_ai(struct sock *sk)
{
	struct l4sp *ca = l4sp_ca(sk);
	u64 rtt = tcp_sk(sk)->srtt_us, target = l4sp_target8();
	u64 ai = L4SP_ONE_PKT;

	if (ca->round >= READ_ONCE(l4sp_rtt_transition) && rtt &&
	    rtt <= (L4SP_MAX_SCALED_RTT_US << 3) && rtt < target)
		ai = DIV64_U64_ROUND_CLOSEST((rtt << L4SP_CWND_SHIFT) * rtt,
					     target * target);
	WRITE_ONCE(ca->ai, (u32)ai);
}

/* tcp_prague.c:prague_cwnd_changed. */
static void l4sp_cwnd_changed(struct sock *sk)
{
	tcp_sk(sk)->snd_cwnd_stamp = tcp_jiffies32;
	l4sp_refresh_ai(sk);
}

/* Start an alpha round (tcp_prague.c:prague_new_round). */
static void l4sp_new_round(struct sock *sk)
{
	struct l4sp *ca = l4sp_ca(sk);
	struct tcp_sock *tp = tcp_sk(sk);

	ca->next_seq = tp->snd_nxt;
	ca->old_delivered_ce = tp->delivered_ce;
	ca->old_delivered = tp->delivered;
	if (!tcp_in_slow_start(tp) && ca->round < U32_MAX)
		ca->round++;	/* model: saturating (kernel wraps to transition) */
	l4sp_refresh_ai(sk);
}

/* ------------------------------------------------ classic-ECN detector */

static struct l4sp_detector *l4sp_det_new(struct sock *sk, bool pam2025)
{
	struct l4sp_detector *d = kzalloc(sizeof(*d), GFP_ATOMIC | __GFP_NOWARN);

	if (!d)
		return NULL;
	/* prague_init of the 0.6 tree / 90aea47f: SRTT seeds the filter. */
	d->g_srtt = L4SP_DET_SRTT_BITS;
	d->g_mdev = L4SP_DET_MDEV_BITS;
	d->srtt_pace = (u64)(tcp_sk(sk)->srtt_us >> 3) << L4SP_DET_SRTT_BITS;
	d->mdev_pace = 1ULL << L4SP_DET_MDEV_BITS;
	d->rest_mdev = L4SP_DET_INIT_CARRY;
	d->rest_depth = L4SP_DET_INIT_CARRY >> 1;
	d->v0_lg = pam2025 ? L4SP_V0_LG_PAM2025 : L4SP_V0_LG_CURRENT;
	d->d0_lg = pam2025 ? L4SP_D0_LG_PAM2025 : L4SP_D0_LG_CURRENT;
	return d;
}

/* RTT filter fed by every ACK's RTT sample, gains 2^-g
 * (tcp_prague.c 0.6:prague_rtt_estimator; model: ClassicEcnDetector::sample).
 */
static void l4sp_det_sample(struct l4sp_detector *d, s32 rtt_us)
{
	s64 m = rtt_us;
	s64 srtt = d->srtt_pace;

	if (srtt) {
		m -= srtt >> d->g_srtt;
		srtt += m;
		if (m < 0)
			m = -m;
		m -= d->mdev_pace >> d->g_mdev;
		d->mdev_pace = max_t(s64, (s64)d->mdev_pace + m, 0);
	} else {
		srtt = m << d->g_srtt;
		d->mdev_pace = 1ULL << d->g_mdev;
	}
	d->srtt_pace = max_t(s64, srtt, 1);
}

/* Gains from ssthresh: g = lg W + lg W / 2 + 1, at most 18; state rescaled
 * (tcp_prague.c 0.6:prague_update_rtt_scaling; model: update_gain).
 */
static void l4sp_det_gain(struct l4sp_detector *d, u32 ssthresh)
{
	u32 old = d->g_srtt, g = ilog2(max_t(u32, ssthresh, 1));

	g += (g >> 1) + 1;
	d->g_srtt = min_t(u32, g, L4SP_DET_SRTT_BITS);
	d->g_mdev = d->g_srtt + 1;
	if (d->g_srtt > old) {
		u32 s = d->g_srtt - old;

		d->srtt_pace <<= s;
		d->mdev_pace <<= s;
		d->rest_depth <<= s;
		d->rest_mdev <<= s;
	} else if (d->g_srtt < old) {
		u32 s = old - d->g_srtt;

		d->srtt_pace >>= s;
		d->mdev_pace >>= s;
		d->rest_depth >>= s;
		d->rest_mdev >>= s;
	}
}

/* Once per alpha round: c += V*lg(sigma/V0) + D*max(0, lg(depth/D0)),
 * clamped to [0, C_STICKY]; integer logs carry their mantissa
 * (tcp_prague.c 0.6:prague_classic_ecn_detection; model: detect).
 */
static void l4sp_det_update(struct sock *sk, struct l4sp_detector *d)
{
	u32 min_rtt = tcp_min_rtt(tcp_sk(sk));
	u64 srtt = d->srtt_pace >> d->g_srtt;
	u64 mdev = d->mdev_pace >> d->g_mdev;
	u64 adj = L4SP_DET_INIT_ADJ_US >> (L4SP_DET_MDEV_BITS - d->g_mdev);
	s64 c = d->score;
	u32 lg;

	if (!srtt || min_rtt == ~0U)
		return;
	mdev = mdev * d->rest_mdev + adj;
	lg = max_t(u32, ilog2(mdev | 1), d->g_mdev) - d->g_mdev;
	d->rest_mdev = mdev >> lg;
	c += ((s64)lg << (L4SP_ALPHA_SHIFT - L4SP_DET_WV)) - (s64)d->v0_lg;
	if (srtt > min_rtt) {
		u64 depth = (srtt - min_rtt) * d->rest_depth + (adj >> 1);
		u64 dlg;

		lg = max_t(u32, ilog2(depth | 1), d->g_srtt) - d->g_srtt;
		d->rest_depth = depth >> lg;
		dlg = (u64)lg << (L4SP_ALPHA_SHIFT - L4SP_DET_WD);
		if (dlg > d->d0_lg)
			c += dlg - d->d0_lg;
	}
	d->score = clamp_t(s64, c, 0, L4SP_DET_C_STICKY);
	d->rounds++;
	if (!d->rounds_to_classic && d->score >= L4SP_DET_CLASSIC)
		d->rounds_to_classic = d->rounds;
	if (READ_ONCE(l4sp_debug) >= 2)
		pr_info("%s sport %u: update %u score %llu.%02llu (L-sticky 8, classic 9, max 17) srtt %llu mdev %llu min_rtt %u us\n",
			inet_csk(sk)->icsk_ca_ops->name,
			ntohs(inet_sk(sk)->inet_sport), d->rounds,
			L4SP_SCORE_INT(d->score),
			L4SP_SCORE_CENT(d->score), srtt,
			d->mdev_pace >> d->g_mdev, min_rtt);
}

/* alpha floor 0.625 * (min(c, 9) - 8) (tcp_prague.c 0.6:
 * prague_classic_ecn_fallback; model: alpha_floor).
 */
static u64 l4sp_det_alpha_floor(const struct l4sp_detector *d, u64 alpha)
{
	u64 c = min_t(u64, d->score, L4SP_DET_CLASSIC) - L4SP_DET_L_STICKY;

	c = (c >> 1) + (c >> 3);
	return max(alpha, c);
}

/* ------------------------------------------------------- segment sizing */

/* ceil(bytes per virtual RTT / 2) (tcp_prague.c:
 * prague_pacing_rate_to_max_mtu; model: segment_sizing.rs default_max_mtu).
 */
static u64 l4sp_max_mtu(struct sock *sk)
{
	const struct l4sp *ca = l4sp_ca(sk);
	const struct tcp_sock *tp = tcp_sk(sk);
	u64 bytes;

	/* pam2025: from the rate in both modes (90aea47f
	 * prague_pacing_rate_to_max_mtu).
	 */
	if (ca->vintage || l4sp_rate_based(sk)) {
		bytes = mul_u64_u64_shr(ca->rate, l4sp_vrtt8(tp), L4SP_SEC_SHIFT);
	} else {
		u64 target = l4sp_target8(), rtt = tp->srtt_us;
		u64 scaled = ca->frac;

		if (rtt && rtt < target)
			scaled = mul_u64_u64_div_u64(scaled, target, rtt);
		bytes = mul_u64_u64_shr(scaled, l4sp_mtu(sk), L4SP_CWND_SHIFT);
	}
	return DIV64_U64_ROUND_UP(bytes, L4SP_MIN_PKTS_VRTT);
}

/* The MTU update at an alpha update: clamp to [mtu(MIN_MSS), initial MTU]
 * (tcp_prague.c:prague_valid_mtu), keep bytes in flight, rescale cwnd and
 * ssthresh (tcp_prague.c:prague_update_alpha; model: resize_segments).
 * Mainline has no tp->mss_cache_set_by_cca: mss_cache is written directly.
 */
static void l4sp_resize_segments(struct sock *sk)
{
	struct l4sp *ca = l4sp_ca(sk);
	struct tcp_sock *tp = tcp_sk(sk);
	u32 mtu_used = l4sp_mtu(sk), mtu, mss, path_mss, new_cwnd;
	u64 want;

	if (READ_ONCE(l4sp_segment_sizing.val) == L4SP_SIZING_FIXED)
		want = ca->mtu_cache;
	else
		want = l4sp_max_mtu(sk);
	mtu = min_t(u64, want, ca->mtu_cache);
	mtu = max_t(u32, mtu, tcp_mss_to_mtu(sk, L4SP_MIN_MSS));
	if (mtu == mtu_used)
		return;
	mss = tcp_mtu_to_mss(sk, mtu);
	path_mss = tcp_mtu_to_mss(sk, inet_csk(sk)->icsk_pmtu_cookie);
	if (inet_csk(sk)->icsk_pmtu_cookie && mss > path_mss)
		return;		/* the path shrank below our cache: leave it */
	ca->frac = mul_u64_u32_div(ca->frac, mtu_used, mtu);
	tp->mss_cache = mss;
	new_cwnd = l4sp_frac_to_cwnd(sk);
	if (ca->vintage) {
		/* 90aea47f prague_update_alpha: snd_cwnd from the rescaled
		 * frac, ssthresh left unscaled (model: pam2025.rs
		 * pam2025_resize_segments).
		 */
		tcp_snd_cwnd_set(tp, new_cwnd);
		return;
	}
	if (tcp_snd_cwnd(tp) != new_cwnd) {
		tcp_snd_cwnd_set(tp, new_cwnd);
		if (tp->snd_ssthresh < TCP_INFINITE_SSTHRESH)
			tp->snd_ssthresh = min_t(u64, TCP_INFINITE_SSTHRESH,
						 div_u64((u64)tp->snd_ssthresh *
							 mtu_used, mtu));
		l4sp_cwnd_changed(sk);
	}
}

/* ---------------------------------------------------------------- alpha */

/* One real RTT elapsed and, once RTT-independent, >= T since the last
 * alpha update (tcp_prague.c:prague_should_update_ewma).
 */
static bool l4sp_alpha_due(struct sock *sk)
{
	const struct tcp_sock *tp = tcp_sk(sk);
	const struct l4sp *ca = l4sp_ca(sk);

	if (before(tp->snd_una, ca->next_seq))
		return false;
	return !l4sp_rtt_indep(sk) ||
	       READ_ONCE(l4sp_rtt_target_us) <= l4sp_since(tp, ca->alpha_stamp);
}

/* alpha <- (1 - g) alpha + g F, F = CE fraction of the packets delivered in
 * the round, alpha kept upscaled by 1/g (RFC 8257 section 3.3;
 * tcp_prague.c:prague_update_alpha). Only after a first CE.
 */
static void l4sp_update_alpha(struct sock *sk)
{
	struct l4sp *ca = l4sp_ca(sk);
	struct tcp_sock *tp = tcp_sk(sk);

	if (ca->saw_ce) {
		u64 ce = tp->delivered_ce - ca->old_delivered_ce;
		u64 alpha = ca->upscaled_alpha;

		if (ca->det && ca->fallback)
			l4sp_det_update(sk, ca->det);
		if (ce) {
			u32 acked = tp->delivered - ca->old_delivered;

			ce = div_u64(ce << L4SP_ALPHA_SHIFT, max(1U, acked));
		}
		alpha = alpha - (alpha >> L4SP_G_SHIFT) + ce;
		ca->alpha_stamp = tp->tcp_mstamp;
		WRITE_ONCE(ca->upscaled_alpha,
			   (u32)min_t(u64, alpha,
				      L4SP_ALPHA_ONE << L4SP_G_SHIFT));
		if (l4sp_rtt_indep(sk) && !ca->in_loss)
			l4sp_resize_segments(sk);
	}
	/* hsrtt += SRTT - hsrtt/128 (tcp_prague.c:prague_update_alpha). */
	ca->hsrtt = ca->hsrtt + tp->srtt_us - (ca->hsrtt >> L4SP_HSRTT_SHIFT);
	l4sp_new_round(sk);
}

/* ----------------------------------------------------------------- cwnd */

/* AI on the unmarked packets, then cwnd moves one packet per ACK toward
 * ceil(frac) (tcp_prague.c:prague_update_cwnd; model: update_cwnd, adjust,
 * v07.rs additive_increase).
 */
static void l4sp_update_cwnd(struct sock *sk, const struct rate_sample *rs)
{
	struct l4sp *ca = l4sp_ca(sk);
	struct tcp_sock *tp = tcp_sk(sk);
	u32 ce = tp->delivered_ce - ca->last_delivered_ce;
	s64 acked = rs->acked_sacked;
	bool may_grow;
	u32 target;

	ca->last_delivered_ce = tp->delivered_ce;
	if (ce) {
		/* alpha_mode 0: the first mark ever halves frac. */
		if (!ca->saw_ce && !ca->alpha_one)
			ca->frac = (ca->frac + 1) >> 1;
		ca->saw_ce = 1;
		acked -= ce;
	}
	may_grow = ca->app_gate ? !tp->app_limited : tcp_is_cwnd_limited(sk);
	if (acked <= 0 || ca->in_loss || !may_grow)
		goto adjust;

	if (tcp_in_slow_start(tp)) {
		acked = tcp_slow_start(tp, acked);
		ca->frac = (u64)tcp_snd_cwnd(tp) << L4SP_CWND_SHIFT;
		if (!acked) {
			l4sp_cwnd_changed(sk);
			return;
		}
	}

	if (l4sp_rate_based(sk)) {
		/* +1500 B per virtual RTT of rate per virtual RTT
		 * (tcp_prague.c:prague_update_cwnd, rate branch).
		 */
		u64 vrtt = l4sp_vrtt8(tp);
		u64 inc = div64_u64(((u64)acked * L4SP_REF_MTU) << L4SP_SEC_SHIFT,
				    vrtt);
		u64 vcwnd = DIV64_U64_ROUND_UP(ca->rate * vrtt,
					       (u64)l4sp_mtu(sk) << L4SP_SEC_SHIFT);

		if (vcwnd)
			ca->rate += DIV64_U64_ROUND_CLOSEST(inc, vcwnd);
		ca->frac = max_t(u64, ca->frac + acked, l4sp_rate_to_frac(sk));
	} else if (ca->vintage) {
		/* frac += max(acked, round(acked * ai / snd_cwnd)), no MTU
		 * scaling, the rate left to the pacing update (90aea47f
		 * prague_update_cwnd; model: pam2025.rs additive_increase).
		 */
		u64 inc = (u64)acked * ca->ai;
		u32 cwnd = tcp_snd_cwnd(tp);

		if (cwnd)
			inc = div_u64(inc + (cwnd >> 1), cwnd);
		ca->frac += max_t(u64, acked, inc);
	} else {
		/* frac += acked * ai / frac, in 1500-B packets. */
		u64 inc = (u64)acked * ca->ai;

		if (ca->frac)
			inc = DIV64_U64_ROUND_CLOSEST(inc << L4SP_CWND_SHIFT,
						      ca->frac);
		inc = mul_u64_u32_div(inc, L4SP_REF_MTU, l4sp_mtu(sk));
		ca->frac += max_t(u64, acked, inc);
		ca->rate = max_t(u64, ca->rate + acked, l4sp_frac_to_rate(sk));
	}

adjust:
	target = l4sp_frac_to_cwnd(sk);
	if (tcp_snd_cwnd(tp) > target) {
		tcp_snd_cwnd_set(tp, tcp_snd_cwnd(tp) - 1);
		tp->snd_ssthresh = tcp_snd_cwnd(tp);
		l4sp_cwnd_changed(sk);
	} else if (tcp_snd_cwnd(tp) < target) {
		tcp_snd_cwnd_set(tp, tcp_snd_cwnd(tp) + 1);
		l4sp_cwnd_changed(sk);
	}
}

/* ---------------------------------------------------------------- pacing */

/* Rate mode: rate +-4/128 (+ in the first half of the virtual RTT since the
 * alpha update); window mode: MTU * max(frac, in_flight) / SRTT; x2 while
 * cwnd < ssthresh/2; burst bound 2^-burst_shift s
 * (tcp_prague.c:prague_update_pacing_rate; model: v07.rs pacing_rate).
 */
static void l4sp_update_pacing_rate(struct sock *sk)
{
	struct l4sp *ca = l4sp_ca(sk);
	struct tcp_sock *tp = tcp_sk(sk);
	u32 mtu = l4sp_mtu(sk);
	u64 rate;

	if (l4sp_rate_based(sk)) {
		u64 off = (L4SP_WOBBLE * ca->rate) >> L4SP_WOBBLE_SHIFT;

		if ((l4sp_vrtt8(tp) >> 4) <= l4sp_since(tp, ca->alpha_stamp))
			rate = ca->rate - off;
		else
			rate = ca->rate + off;
	} else if (ca->vintage) {
		/* MTU (x2 in slow start) / SRTT * max(snd_cwnd, in flight),
		 * the doubled value kept as the rate (90aea47f
		 * prague_update_pacing_rate; model: pam2025.rs pacing_rate).
		 */
		u64 inflight = max(tcp_snd_cwnd(tp), tcp_packets_in_flight(tp));

		rate = L4SP_USEC8_PER_SEC * mtu;
		if (tcp_snd_cwnd(tp) < tp->snd_ssthresh / 2)
			rate <<= 1;
		if (tp->srtt_us)
			rate = div_u64(rate, tp->srtt_us);
		rate = max_t(u64, rate * inflight, L4SP_MIN_RATE);
		ca->rate = rate;
		goto bound;
	} else {
		u64 inflight = max_t(u64, ca->frac >> L4SP_CWND_SHIFT,
				     tcp_packets_in_flight(tp));

		rate = L4SP_USEC8_PER_SEC * mtu;
		if (tp->srtt_us)
			rate = div_u64(rate, tp->srtt_us);
		rate = max_t(u64, rate * inflight, L4SP_MIN_RATE);
		ca->rate = rate;
	}
	if (tcp_snd_cwnd(tp) < tp->snd_ssthresh / 2)
		rate <<= 1;
bound:
	rate = min_t(u64, rate, READ_ONCE(sk->sk_max_pacing_rate));
	WRITE_ONCE(ca->max_tso_burst,
		   max_t(u32, 1, (u32)min_t(u64, U32_MAX,
			 div_u64(rate, mtu) >> min(READ_ONCE(l4sp_burst_shift), 63U))));
	WRITE_ONCE(sk->sk_pacing_rate, rate);
}

/* Rate mode once CE was seen and cwnd <= cwnd_transit 1500-B packets
 * (tcp_prague.c:prague_cong_control; model: v07.rs mode_switch).
 */
static void l4sp_mode_switch(struct sock *sk)
{
	struct l4sp *ca = l4sp_ca(sk);
	u64 bytes = (u64)tcp_snd_cwnd(tcp_sk(sk)) * l4sp_mtu(sk);

	if (!ca->mode_switch)
		return;
	if (ca->vintage) {
		/* By the window's size alone, CE or not, no re-sync
		 * (90aea47f prague_cong_control).
		 */
		ca->rate_mode = bytes <= READ_ONCE(l4sp_cwnd_transit) * L4SP_REF_MTU;
		return;
	}
	if (ca->saw_ce && bytes <= READ_ONCE(l4sp_cwnd_transit) * L4SP_REF_MTU) {
		ca->rate_mode = 1;
		ca->frac = l4sp_rate_to_frac(sk);
	} else {
		ca->rate_mode = 0;
		ca->rate = l4sp_frac_to_rate(sk);
	}
}

/* ------------------------------------------------------------- reactions */

/* On CE: reduce by alpha/2, once per T when RTT-independent; a classic-ECN
 * score above L_STICKY floors alpha (RFC 9331 section 4.3;
 * tcp_prague.c:prague_enter_cwr; model: enter_cwr, v07.rs cwr_reduce).
 */
static void l4sp_enter_cwr(struct sock *sk)
{
	struct l4sp *ca = l4sp_ca(sk);
	struct tcp_sock *tp = tcp_sk(sk);
	u64 alpha, red;

	if (l4sp_rtt_indep(sk) &&
	    READ_ONCE(l4sp_rtt_target_us) > l4sp_since(tp, ca->cwr_stamp))
		return;
	ca->cwr_stamp = tp->tcp_mstamp;
	alpha = ca->upscaled_alpha >> L4SP_G_SHIFT;
	if (ca->fallback == 1 && ca->det && ca->det->score > L4SP_DET_L_STICKY)
		alpha = l4sp_det_alpha_floor(ca->det, alpha);

	if (l4sp_rate_based(sk)) {
		red = mul_u64_u64_shr(ca->rate, alpha, L4SP_ALPHA_SHIFT + 1);
		ca->rate = max_t(u64, ca->rate - min(red, ca->rate),
				 L4SP_MIN_RATE);
		ca->frac = l4sp_rate_to_frac(sk);
	} else {
		/* frac * alpha / 2, unbiased by +1/2 before the shift. */
		red = mul_u64_add_u64_div_u64(alpha, ca->frac, L4SP_ALPHA_ONE,
					      L4SP_ALPHA_ONE << 1);
		ca->frac -= min(red, ca->frac);
		/* pam2025: frac alone; the rate follows at the next pacing
		 * update (90aea47f prague_enter_cwr).
		 */
		if (!ca->vintage)
			ca->rate = l4sp_frac_to_rate(sk);
	}
}

/* Loss: Reno-like halving of rate or frac, no AI until Open
 * (RFC 9331 section 4.3; tcp_prague.c:prague_enter_loss).
 */
static void l4sp_enter_loss(struct sock *sk)
{
	struct l4sp *ca = l4sp_ca(sk);

	ca->loss_cwnd = tcp_snd_cwnd(tcp_sk(sk));
	ca->loss_rate = ca->rate;
	if (l4sp_rate_based(sk)) {
		ca->rate -= ca->rate >> 1;
		ca->frac = l4sp_rate_to_frac(sk);
	} else {
		ca->frac -= ca->frac >> 1;
		/* pam2025: frac alone (90aea47f prague_enter_loss). */
		if (!ca->vintage)
			ca->rate = l4sp_frac_to_rate(sk);
	}
	ca->in_loss = 1;
}

/* tcp_prague.c:prague_state (called before icsk_ca_state changes). */
static void l4sp_set_state(struct sock *sk, u8 new_state)
{
	if (new_state == inet_csk(sk)->icsk_ca_state)
		return;
	switch (new_state) {
	case TCP_CA_Recovery:
		l4sp_enter_loss(sk);
		break;
	case TCP_CA_CWR:
		l4sp_enter_cwr(sk);
		break;
	case TCP_CA_Open:
		l4sp_ca(sk)->in_loss = 0;
		break;
	}
}

/* An RTO halves too (tcp_prague.c:prague_cwnd_event). */
static void l4sp_cwnd_event(struct sock *sk, enum tcp_ca_event ev)
{
	if (ev == CA_EVENT_LOSS)
		l4sp_enter_loss(sk);
}

/* tcp_prague.c:prague_cwnd_undo. */
static u32 l4sp_undo_cwnd(struct sock *sk)
{
	struct l4sp *ca = l4sp_ca(sk);

	ca->in_loss = 0;
	ca->rate = max(ca->rate, ca->loss_rate);
	ca->frac = l4sp_rate_to_frac(sk);
	return max(ca->loss_cwnd, tcp_snd_cwnd(tcp_sk(sk)));
}

/* ssthresh is kept; the detector takes its gains from it
 * (tcp_prague.c:prague_ssthresh; 0.6 tree: prague_update_rtt_scaling).
 */
static u32 l4sp_ssthresh(struct sock *sk)
{
	struct l4sp *ca = l4sp_ca(sk);
	u32 ssthresh = tcp_sk(sk)->snd_ssthresh;

	if (ca->det)
		l4sp_det_gain(ca->det, ssthresh);
	return ssthresh;
}

/* Feeds the detector's RTT filter (0.6 tree: prague_pkts_acked). */
static void l4sp_pkts_acked(struct sock *sk, const struct ack_sample *sample)
{
	struct l4sp *ca = l4sp_ca(sk);

	if (ca->det && sample->rtt_us >= 0)
		l4sp_det_sample(ca->det, sample->rtt_us);
}

/* tcp_prague.c:prague_cong_control: cwnd, (once per vRTT) alpha, pacing,
 * window/rate mode.
 */
static void l4sp_cong_control(struct sock *sk, u32 ack, int flag,
			      const struct rate_sample *rs)
{
	l4sp_update_cwnd(sk, rs);
	if (l4sp_alpha_due(sk))
		l4sp_update_alpha(sk);
	l4sp_update_pacing_rate(sk);
	l4sp_mode_switch(sk);
}

/* tcp_prague.c:prague_tso_segs: the skb's segments are the burst bound
 * (tcp_output.c:tcp_tso_segs calls it through the op of patch 0004, in place
 * of tcp_tso_autosize(), and caps it by sk_gso_max_segs).
 */
static u32 l4sp_tso_segs(struct sock *sk, unsigned int mss_now)
{
	u32 segs = READ_ONCE(l4sp_ca(sk)->max_tso_burst);
	u32 cap = READ_ONCE(l4sp_max_tso_segs);

	return cap ? min(segs, cap) : segs;
}

/* ss -i: the DCTCP layout (mainline has no INET_DIAG_PRAGUEINFO); alpha
 * scaled to 0..1024 as DCTCP's.
 */
static size_t l4sp_get_info(struct sock *sk, u32 ext, int *attr,
			    union tcp_cc_info *info)
{
	const struct l4sp *ca = l4sp_ca(sk);
	const struct tcp_sock *tp = tcp_sk(sk);

	if (ext & (1 << (INET_DIAG_DCTCPINFO - 1)) ||
	    ext & (1 << (INET_DIAG_VEGASINFO - 1))) {
		memset(&info->dctcp, 0, sizeof(info->dctcp));
		if (inet_csk(sk)->icsk_ca_ops != &l4sp_reno) {
			info->dctcp.dctcp_enabled = 1;
			info->dctcp.dctcp_ce_state = ca->saw_ce;
			info->dctcp.dctcp_alpha =
				(READ_ONCE(ca->upscaled_alpha) >> L4SP_G_SHIFT) >>
				(L4SP_ALPHA_SHIFT - 10);
			info->dctcp.dctcp_ab_ecn = tp->delivered_ce;
			info->dctcp.dctcp_ab_tot = tp->delivered;
		}
		*attr = INET_DIAG_DCTCPINFO;
		return sizeof(info->dctcp);
	}
	return 0;
}

/* ------------------------------------------------------- init / release */

static void l4sp_release(struct sock *sk)
{
	struct l4sp *ca = l4sp_ca(sk);
	struct l4sp_detector *d = ca->det;

	if (READ_ONCE(l4sp_debug))
		pr_info("%s sport %u released: delivered %u ce %u alpha %u/1024 cwnd %u rounds %u detector %s score %llu.%02llu classic at update %u\n",
			inet_csk(sk)->icsk_ca_ops->name,
			ntohs(inet_sk(sk)->inet_sport),
			tcp_sk(sk)->delivered, tcp_sk(sk)->delivered_ce,
			(ca->upscaled_alpha >> L4SP_G_SHIFT) >>
			(L4SP_ALPHA_SHIFT - 10),
			tcp_snd_cwnd(tcp_sk(sk)), ca->round,
			d ? "on" : "off",
			L4SP_SCORE_INT(d ? d->score : 0ULL),
			L4SP_SCORE_CENT(d ? d->score : 0ULL),
			d ? d->rounds_to_classic : 0);
	ca->det = NULL;
	kfree(d);
	cmpxchg(&sk->sk_pacing_status, SK_PACING_NEEDED, SK_PACING_NONE);
}

/* tcp_prague.c:prague_init: no AccECN -> Reno (the CC forbids the RFC 3168
 * fall-back); else pacing on, alpha, frac, rate, modes, a first round.
 */
static void l4sp_init(struct sock *sk)
{
	struct l4sp *ca = l4sp_ca(sk);
	struct tcp_sock *tp = tcp_sk(sk);
	bool pam = inet_csk(sk)->icsk_ca_ops == &l4sp_pam;
	u32 fb, gate, consts;
	bool vintage = pam &&
		READ_ONCE(l4sp_pam_version.val) == L4SP_VER_PAM2025;

	if (!tcp_ecn_mode_accecn(tp) &&
	    sk->sk_state != TCP_LISTEN && sk->sk_state != TCP_CLOSE) {
		if (READ_ONCE(l4sp_debug))
			pr_info("%s sport %u: no AccECN (ecn_flags %#x), prague-reno\n",
				inet_csk(sk)->icsk_ca_ops->name,
				ntohs(inet_sk(sk)->inet_sport), tp->ecn_flags);
		/* Nothing allocated yet; tcp_init_congestion_control() stops
		 * ECT marking since prague-reno has no NEEDS_ECN flag.
		 */
		inet_csk(sk)->icsk_ca_ops = &l4sp_reno;
		return;
	}

	cmpxchg(&sk->sk_pacing_status, SK_PACING_NONE, SK_PACING_NEEDED);

	ca->alpha_stamp = tp->tcp_mstamp;
	ca->cwr_stamp = 0;
	ca->alpha_one = READ_ONCE(l4sp_alpha_mode) & 1;
	ca->upscaled_alpha = ca->alpha_one ? L4SP_ALPHA_ONE << L4SP_G_SHIFT : 0;
	ca->frac = (u64)tcp_snd_cwnd(tp) << L4SP_CWND_SHIFT;
	ca->max_tso_burst = 1;
	ca->in_loss = 0;
	ca->loss_cwnd = 0;
	ca->rate_mode = 0;
	ca->mode_switch = 0;
	ca->round = 0;
	ca->mtu_cache = tp->mss_cache ? l4sp_mtu(sk) : L4SP_REF_MTU;
	ca->hsrtt = tp->srtt_us ? (u64)tp->srtt_us << L4SP_HSRTT_SHIFT :
				  1ULL << (L4SP_HSRTT_SHIFT + 3);
	ca->vintage = vintage;
	/* rate = MTU * max(cwnd, in_flight) / SRTT (tcp_prague.c:prague_init;
	 * 90aea47f: snd_cwnd alone).
	 */
	if (tp->srtt_us) {
		ca->rate = div_u64(L4SP_USEC8_PER_SEC * l4sp_mtu(sk), tp->srtt_us);
		ca->rate = max_t(u64, L4SP_MIN_RATE,
				 ca->rate * (vintage ? tcp_snd_cwnd(tp) :
					     max(tcp_snd_cwnd(tp),
						 tcp_packets_in_flight(tp))));
	} else {
		ca->rate = L4SP_MIN_RATE;
	}
	l4sp_update_pacing_rate(sk);
	ca->loss_rate = 0;
	ca->saw_ce = !!tp->delivered_ce;
	ca->last_delivered_ce = tp->delivered_ce;
	ca->mode_switch = !!(READ_ONCE(l4sp_cwnd_mode) & 2);
	ca->rate_mode = READ_ONCE(l4sp_cwnd_mode) & 1;

	/* The vintage (model: PragueParams ecn_fallback, fallback_constants,
	 * growth_gate; prague_pam = the PAM 2025 study's cc_params).
	 */
	if (pam) {
		fb = READ_ONCE(l4sp_pam_ecn_fallback);
		gate = READ_ONCE(l4sp_pam_growth_gate.val);
		consts = READ_ONCE(l4sp_pam_fallback_constants.val);
	} else {
		fb = READ_ONCE(l4sp_ecn_fallback);
		gate = READ_ONCE(l4sp_growth_gate.val);
		consts = READ_ONCE(l4sp_fallback_constants.val);
	}
	ca->fallback = min(fb, 2U);
	ca->app_gate = gate == L4SP_GATE_APP_LIMITED;
	/* icsk_ca_priv was zeroed by tcp_assign/reinit_congestion_control;
	 * a listener is never given a detector, so a clone never shares one.
	 */
	ca->det = NULL;
	/* pam2025: the detector's RTT filter and gains run whether or not the
	 * fall-back is on (90aea47f prague_pkts_acked, prague_ssthresh); it
	 * scores only with the fall-back on.
	 */
	if ((ca->fallback || vintage) && sk->sk_state != TCP_LISTEN) {
		ca->det = l4sp_det_new(sk, consts == L4SP_CONST_PAM2025);
		if (!ca->det) {
			/* Safe fall-back: this connection runs without the
			 * detector (as ecn_fallback = 0).
			 */
			pr_warn_ratelimited("no memory for the classic-ECN detector; off for this connection\n");
		}
	}
	if (!ca->det)
		ca->fallback = 0;
	l4sp_new_round(sk);
}

/* ------------------------------------------------------------------- ops */

#define L4SP_FLAGS	(TCP_CONG_NEEDS_ECN | TCP_CONG_NEEDS_ACCECN |	\
			 TCP_CONG_NO_FALLBACK_RFC3168 |			\
			 TCP_CONG_ECT_1_NEGOTIATION | TCP_CONG_ECT_1_DATA | \
			 TCP_CONG_NON_RESTRICTED)

static struct tcp_congestion_ops l4sp_prague __read_mostly = {
	.init		= l4sp_init,
	.release	= l4sp_release,
	.cong_control	= l4sp_cong_control,
	.cwnd_event	= l4sp_cwnd_event,
	.ssthresh	= l4sp_ssthresh,
	.undo_cwnd	= l4sp_undo_cwnd,
	.pkts_acked	= l4sp_pkts_acked,
	.set_state	= l4sp_set_state,
	.tso_segs	= l4sp_tso_segs,
	.get_info	= l4sp_get_info,
	.flags		= L4SP_FLAGS,
	.owner		= THIS_MODULE,
	.name		= "prague",
};

static struct tcp_congestion_ops l4sp_pam __read_mostly = {
	.init		= l4sp_init,
	.release	= l4sp_release,
	.cong_control	= l4sp_cong_control,
	.cwnd_event	= l4sp_cwnd_event,
	.ssthresh	= l4sp_ssthresh,
	.undo_cwnd	= l4sp_undo_cwnd,
	.pkts_acked	= l4sp_pkts_acked,
	.set_state	= l4sp_set_state,
	.tso_segs	= l4sp_tso_segs,
	.get_info	= l4sp_get_info,
	.flags		= L4SP_FLAGS,
	.owner		= THIS_MODULE,
	.name		= "prague_pam",
};

/* Reno when AccECN was not negotiated (tcp_prague.c:prague_reno; not
 * registered, only switched to by l4sp_init).
 */
static struct tcp_congestion_ops l4sp_reno __read_mostly = {
	.ssthresh	= tcp_reno_ssthresh,
	.cong_avoid	= tcp_reno_cong_avoid,
	.undo_cwnd	= tcp_reno_undo_cwnd,
	.get_info	= l4sp_get_info,
	.owner		= THIS_MODULE,
	.name		= "prague-reno",
};

static int __init l4sp_register(void)
{
	int ret;

	BUILD_BUG_ON(sizeof(struct l4sp) > ICSK_CA_PRIV_SIZE);
	ret = tcp_register_congestion_control(&l4sp_prague);
	if (ret)
		return ret;
	ret = tcp_register_congestion_control(&l4sp_pam);
	if (ret)
		tcp_unregister_congestion_control(&l4sp_prague);
	return ret;
}

static void __exit l4sp_unregister(void)
{
	tcp_unregister_congestion_control(&l4sp_pam);
	tcp_unregister_congestion_control(&l4sp_prague);
}

module_init(l4sp_register);
module_exit(l4sp_unregister);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("l4slab TCP Prague v0.7 (prague) and the PAM-2025 testbed's Prague (prague_pam)");
MODULE_VERSION("0.7");
