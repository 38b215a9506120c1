// SPDX-License-Identifier: GPL-2.0
/*
 * l4slab's BBRv2 for mainline Linux 7.2: two congestion controls in one file,
 * written for the l4slab kernel backend (User-Mode Linux guest).
 *
 *   "l4slab_bbr2"      BBRv2 as google/bbr's v2alpha net/ipv4/tcp_bbr2.c
 *                      defines it (the engine's "bbr2"): ECN off unless
 *                      ecn_enable, and then only at min_rtt <= ecn_max_rtt_us.
 *   "l4slab_bbr2_l4s"  L4STeam/linux's tcp_bbr2.c (commit 009adfe4, the
 *                      engine's "bbr2-l4s"): ECN on at any RTT, ECT(1) with
 *                      AccECN, ECN cuts inflight_lo only.
 *
 * This is l4slab's own code: a C port of the project's Rust model,
 * crates/l4slab-core/src/cc/bbr2/mod.rs and cc/bbr_model.rs (with the
 * fixed-point helpers of cc/bbr_common.rs), against the mainline 7.2 TCP
 * congestion-control API. Each function names the tcp_bbr2.c function it
 * stands for, as the Rust model does; the numbered "difference N" comments are
 * the table of differences between the two trees at the top of
 * cc/bbr2/mod.rs. Nothing is copied from google/bbr's or L4STeam's files.
 *
 * What BBRv2 needs of the TCP core and mainline 7.2 lacks comes from the
 * project's patch ../patches/0003-tcp-bbr2-core.patch: rs->tx_in_flight,
 * rs->lost and rs->is_ece in the rate sample, tx.in_flight and tx.lost in the
 * skb's control block, the skb_marked_lost hook, and TCP_CONG_WANTS_CE_EVENTS
 * (the receiver's CE events for the DCTCP-style echo of a two-sided BBRv2).
 *
 * Units are the kernel's: bandwidth in packets/us << 24 (BW_SCALE), gains in
 * 1/256 (BBR_UNIT), volumes in packets, PROBE_RTT / min_rtt stamps in
 * jiffies, PROBE_BW phase stamps in us.
 *
 * The state (about 220 B) does not fit ICSK_CA_PRIV_SIZE (104 B; tcp_bbr2.c
 * packs it into bit-fields): it is kzalloc()ed (GFP_ATOMIC) at init and freed
 * at release. If that fails the connection keeps the stack's initial cwnd and
 * pacing rate (a warning once).
 */

#define pr_fmt(fmt) "tcp_l4slab_bbr2: " fmt

#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/math64.h>
#include <linux/slab.h>
#include <linux/random.h>
#include <linux/log2.h>
#include <linux/inet_diag.h>
#include <net/tcp.h>
#include "tcp_dctcp.h"

#define BW_SCALE	24
#define BW_UNIT		(1ULL << BW_SCALE)
#define BBR_SCALE	8
#define BBR_UNIT	(1U << BBR_SCALE)
#define BBR_INF		(~0U)
/* bbr_pacing_margin_percent: pace 1 % below the estimate */
#define BBR_PACING_MARGIN_PERCENT 1

/* ------------------------------------------------------------- parameters */

/* Names and defaults as the engine's bbr2 cc_params (cc/bbr2/params.rs,
 * google/bbr v2alpha's module_param block); the L4S ops read ecn_enable and
 * ecn_max_rtt_us from their own l4s_* parameters (L4STeam's defaults). Each is
 * clamped on use to the bit-field width tcp_bbr2.c keeps it in, as the model.
 */
static bool p_ecn_enable;
static uint p_ecn_max_rtt_us = 5000;
static bool p_l4s_ecn_enable = true;
static uint p_l4s_ecn_max_rtt_us;
static uint p_min_tso_rate = 1200000;
static uint p_tso_rtt_shift = 9;
static uint p_high_gain = BBR_UNIT * 2885 / 1000 + 1;
static uint p_drain_gain = BBR_UNIT * 1000 / 2885;
static uint p_startup_cwnd_gain = BBR_UNIT * 2885 / 1000 + 1;
static uint p_cwnd_gain = BBR_UNIT * 2;
/* PROBE_BW gains UP, DOWN, CRUISE, REFILL: v2alpha's pacing_gain[0..4] and
 * L4STeam's bbr2_pacing_gain (difference 1)
 */
static uint p_gain_up = BBR_UNIT * 5 / 4;
static uint p_gain_down = BBR_UNIT * 3 / 4;
static uint p_l4s_gain_down = BBR_UNIT * 91 / 100;
static uint p_cwnd_min_target = 4;
static uint p_probe_rtt_cwnd_gain = BBR_UNIT / 2;
static uint p_min_rtt_win_sec = 10;
static uint p_probe_rtt_mode_ms = 200;
static uint p_probe_rtt_win_ms = 5000;
static uint p_full_bw_thresh = BBR_UNIT * 5 / 4;
static uint p_full_bw_cnt = 3;
static uint p_cwnd_tso_bduget = 1;
static uint p_extra_acked_gain = 256;
static uint p_extra_acked_win_rtts = 5;
static uint p_extra_acked_max_us = 100000;
static uint p_ack_epoch_acked_reset_thresh = 1U << 20;
static bool p_drain_to_target = true;
static bool p_precise_ece_ack = true;
static uint p_extra_acked_in_startup = 1;
static bool p_usage_based_cwnd;
static uint p_beta = BBR_UNIT * 30 / 100;
static uint p_ecn_alpha_gain = BBR_UNIT / 16;
static uint p_ecn_alpha_init = BBR_UNIT;
static uint p_ecn_factor = BBR_UNIT / 3;
static uint p_ecn_thresh = BBR_UNIT / 2;
static uint p_ecn_reprobe_gain;
static bool p_ecn_bw_lo = true;
static bool p_ecn_bw_hi = true;
static uint p_loss_thresh = BBR_UNIT * 2 / 100;
static uint p_full_loss_cnt = 8;
static uint p_full_ecn_cnt = 2;
static uint p_inflight_headroom = BBR_UNIT * 15 / 100;
static uint p_bw_probe_pif_gain = BBR_UNIT * 5 / 4;
static uint p_bw_probe_exit;
static uint p_full_bw_cnt_up = 2;
static uint p_full_bw_thresh_up = 1125 * BBR_UNIT / 1000;
static uint p_bw_probe_cwnd_gain = 1;
static uint p_bw_probe_reno_gain = BBR_UNIT;
static uint p_bw_probe_max_rounds = 63;
static uint p_bw_probe_rand_rounds = 2;
static uint p_bw_probe_base_us = 2000000;
static uint p_bw_probe_rand_us = 1000000;
static bool p_undo = true;
static bool p_fast_path = true;
static uint p_fast_ack_mode = 1;
static uint p_refill_add_inc;
/* on by default: the kernel log's per-connection line is what the project's
 * tests read (tests/python/test_kernel_bbr2.py)
 */
static uint p_debug = 1;

#define L4SB_PARAM(name, type, doc) \
	module_param_named(name, p_##name, type, 0644); \
	MODULE_PARM_DESC(name, doc)

L4SB_PARAM(ecn_enable, bool, "l4slab_bbr2: use ECN in the model and echo CE DCTCP-style as receiver");
L4SB_PARAM(ecn_max_rtt_us, uint, "l4slab_bbr2: ECN only if min_rtt <= this, 0 = any RTT");
L4SB_PARAM(l4s_ecn_enable, bool, "l4slab_bbr2_l4s's ecn_enable");
L4SB_PARAM(l4s_ecn_max_rtt_us, uint, "l4slab_bbr2_l4s's ecn_max_rtt_us");
L4SB_PARAM(min_tso_rate, uint, "below this pacing rate (bit/s) TSO bursts are 1 segment");
L4SB_PARAM(tso_rtt_shift, uint, "halve the 64 KB RTT burst allowance per 2^shift us of min_rtt");
L4SB_PARAM(high_gain, uint, "STARTUP pacing gain, 1/256");
L4SB_PARAM(drain_gain, uint, "DRAIN pacing gain, 1/256");
L4SB_PARAM(startup_cwnd_gain, uint, "STARTUP cwnd gain, 1/256");
L4SB_PARAM(cwnd_gain, uint, "PROBE_BW cwnd gain, 1/256");
L4SB_PARAM(gain_up, uint, "PROBE_BW UP pacing gain, 1/256 (pacing_gain[0])");
L4SB_PARAM(gain_down, uint, "l4slab_bbr2's PROBE_BW DOWN pacing gain (pacing_gain[1])");
L4SB_PARAM(l4s_gain_down, uint, "l4slab_bbr2_l4s's DOWN pacing gain (bbr2_pacing_gain[1])");
L4SB_PARAM(cwnd_min_target, uint, "minimum cwnd, packets");
L4SB_PARAM(probe_rtt_cwnd_gain, uint, "PROBE_RTT cwnd as BDP fraction, 1/256");
L4SB_PARAM(min_rtt_win_sec, uint, "min_rtt filter window, s");
L4SB_PARAM(probe_rtt_mode_ms, uint, "minimum PROBE_RTT duration, ms");
L4SB_PARAM(probe_rtt_win_ms, uint, "PROBE_RTT interval, ms");
L4SB_PARAM(full_bw_thresh, uint, "STARTUP growth that counts as growth, 1/256");
L4SB_PARAM(full_bw_cnt, uint, "rounds without growth that fill the pipe");
L4SB_PARAM(cwnd_tso_bduget, uint, "1 floors cwnd at 3 TSO bursts, 0 pads");
L4SB_PARAM(extra_acked_gain, uint, "ACK-aggregation cwnd gain, 1/256");
L4SB_PARAM(extra_acked_win_rtts, uint, "extra_acked filter window, rounds");
L4SB_PARAM(extra_acked_max_us, uint, "cap on the ACK-aggregation cwnd, us at bw");
L4SB_PARAM(ack_epoch_acked_reset_thresh, uint, "ACK epoch reset, packets");
L4SB_PARAM(drain_to_target, bool, "DOWN drains to the BDP before CRUISE");
L4SB_PARAM(precise_ece_ack, bool, "echo CE DCTCP-style as receiver (with ecn_enable)");
L4SB_PARAM(extra_acked_in_startup, uint, "ACK-aggregation cwnd in STARTUP");
L4SB_PARAM(usage_based_cwnd, bool, "cap cwnd at 2 * max_packets_out");
L4SB_PARAM(beta, uint, "loss cut of the lower bounds, 1/256");
L4SB_PARAM(ecn_alpha_gain, uint, "ECN alpha EWMA gain, 1/256");
L4SB_PARAM(ecn_alpha_init, uint, "initial ECN alpha, 1/256");
L4SB_PARAM(ecn_factor, uint, "inflight_lo cut per alpha, 1/256");
L4SB_PARAM(ecn_thresh, uint, "CE ratio that makes inflight too high, 1/256");
L4SB_PARAM(ecn_reprobe_gain, uint, "early refill after an ECN-only cycle, 1/256");
L4SB_PARAM(ecn_bw_lo, bool, "l4slab_bbr2: ECN also cuts bw_lo");
L4SB_PARAM(ecn_bw_hi, bool, "l4slab_bbr2: a too-high ECN probe also cuts bw_hi");
L4SB_PARAM(loss_thresh, uint, "loss rate that makes inflight too high, 1/256");
L4SB_PARAM(full_loss_cnt, uint, "loss events in a round that end STARTUP");
L4SB_PARAM(full_ecn_cnt, uint, "rounds of high CE that end STARTUP");
L4SB_PARAM(inflight_headroom, uint, "headroom below inflight_hi in CRUISE, 1/256");
L4SB_PARAM(bw_probe_pif_gain, uint, "UP ends at this BDP fraction in flight, 1/256");
L4SB_PARAM(bw_probe_exit, uint, "l4slab_bbr2_l4s: 1 ends UP on a bw plateau");
L4SB_PARAM(full_bw_cnt_up, uint, "l4slab_bbr2_l4s: plateau rounds in UP");
L4SB_PARAM(full_bw_thresh_up, uint, "l4slab_bbr2_l4s: growth in UP, 1/256");
L4SB_PARAM(bw_probe_cwnd_gain, uint, "l4slab_bbr2_l4s: UP cwnd gain add, 1/4");
L4SB_PARAM(bw_probe_reno_gain, uint, "Reno-coexistence probe rounds per packet, 1/256");
L4SB_PARAM(bw_probe_max_rounds, uint, "most rounds between bw probes");
L4SB_PARAM(bw_probe_rand_rounds, uint, "random rounds added to the probe wait");
L4SB_PARAM(bw_probe_base_us, uint, "bw probe wait, us");
L4SB_PARAM(bw_probe_rand_us, uint, "random us added to the probe wait");
L4SB_PARAM(undo, bool, "restore the bounds on an undo");
L4SB_PARAM(fast_path, bool, "skip the model update on app-limited ACKs");
L4SB_PARAM(fast_ack_mode, uint, "2: quick-ACK on CE as receiver");
L4SB_PARAM(refill_add_inc, uint, "inflight_hi increment at REFILL");
L4SB_PARAM(debug, uint, "1: a summary line per sending connection at release (default), 0: none");

/* ------------------------------------------------------------------ state */

enum l4sb_mode { MODE_STARTUP, MODE_DRAIN, MODE_PROBE_BW, MODE_PROBE_RTT };
enum l4sb_phase { PHASE_UP, PHASE_DOWN, PHASE_CRUISE, PHASE_REFILL };
enum l4sb_ack_phase {
	ACK_INIT, ACK_REFILLING, ACK_PROBE_STARTING, ACK_PROBE_FEEDBACK,
	ACK_PROBE_STOPPING,
};

/* struct bbr of tcp_bbr2.c, as model: BbrState + Bbr2 (plain fields) */
struct l4sb {
	bool l4s;			/* the L4STeam flavour */
	u32 min_rtt_us;
	u32 probe_rtt_min_us;
	u32 next_rtt_delivered;
	u64 cycle_mstamp;		/* us */
	u8 mode, prev_ca_state, cycle_idx, ack_phase;
	bool round_start, try_fast_path, idle_restart, probe_rtt_round_done;
	bool has_seen_rtt, full_bw_reached, full_bw_now, initialized;
	bool loss_in_cycle, ecn_in_cycle, ecn_eligible, bw_probe_samples;
	bool prev_probe_too_high, stopped_risky_probe, loss_round_start;
	bool loss_in_round, ecn_in_round, got_ok_bw_probe_sample;
	u32 bw_probe_up_rounds;		/* 5 bits */
	u32 pacing_gain, cwnd_gain;
	u32 full_bw_cnt;		/* 2 bits */
	u32 init_cwnd;			/* 7 bits */
	u32 prior_cwnd;
	u32 full_bw;
	u32 ack_epoch_acked;		/* 20 bits */
	u32 extra_acked_win_rtts;	/* 5 bits */
	u32 extra_acked_win_idx;
	u32 startup_ecn_rounds;		/* 2 bits */
	u32 loss_round_delivered;
	u32 undo_bw_lo, undo_inflight_lo, undo_inflight_hi;
	u32 bw_latest, bw_lo, inflight_latest, inflight_lo, inflight_hi;
	u32 bw_probe_up_cnt, bw_probe_up_acks;
	u32 probe_wait_us;
	u32 ecn_alpha;			/* 0..256 */
	u32 rounds_since_probe;		/* 8 bits */
	u32 loss_events_in_round;	/* 4 bits */
	u32 alpha_last_delivered, alpha_last_delivered_ce;
	/* Bbr2's own */
	u32 min_rtt_stamp, probe_rtt_done_stamp, probe_rtt_min_stamp;	/* jiffies */
	u32 prior_rcv_nxt, ce_state;
	u64 ack_epoch_mstamp;		/* us */
	u32 extra_acked[2];
	u32 bw_hi;
	u32 max_bw[2];
	/* counts for the debug line */
	u32 n_ecn_cuts, n_loss_cuts, n_too_high, n_lost_skbs;
	u32 logged;			/* LOG_* events already printed */
};

/* The debug events, each printed once per connection when it first happens */
enum { LOG_ECN_ELIGIBLE = 1, LOG_ECN_CUT = 2, LOG_LOSS_CUT = 4, LOG_LOST_SKB = 8, LOG_TOO_HIGH = 16 };

struct l4sb_priv {
	struct l4sb *b;
};

/* What the "too high" test reads (model: LossSample) */
struct l4sb_sample {
	u32 tx_in_flight;
	s32 lost;
	s32 delivered;
	s32 delivered_ce;
	bool is_app_limited;
};

static struct tcp_congestion_ops l4sb_v2alpha;
static struct tcp_congestion_ops l4sb_l4s;

static inline struct l4sb *l4sb(const struct sock *sk)
{
	return ((struct l4sb_priv *)inet_csk_ca(sk))->b;
}

/* One kernel-log line the first time @event happens on this connection (debug) */
#define l4sb_log_once(sk, b, event, fmt, ...)						\
	do {										\
		if (p_debug && !((b)->logged & (event))) {				\
			(b)->logged |= (event);						\
			pr_info("%s port %u: " fmt "\n",				\
				(b)->l4s ? "l4slab_bbr2_l4s" : "l4slab_bbr2",		\
				ntohs(inet_sk(sk)->inet_sport), ##__VA_ARGS__);		\
		}									\
	} while (0)

static inline bool ecn_enable(const struct l4sb *b)
{
	return b->l4s ? p_l4s_ecn_enable : p_ecn_enable;
}

static inline u32 ecn_max_rtt_us(const struct l4sb *b)
{
	return min_t(u32, b->l4s ? p_l4s_ecn_max_rtt_us : p_ecn_max_rtt_us, 0x7ffff);
}

/* ---------------------------------------------------- fixed-point helpers */

/* model: bbr_common.rs rate_bytes_per_sec (tcp_bbr2.c:bbr_rate_bytes_per_sec) */
static u64 rate_bytes_per_sec(const struct sock *sk, u64 rate, u32 gain, int margin)
{
	unsigned int mss = tcp_sk(sk)->mss_cache;

	rate *= mss;
	rate *= gain;
	rate >>= BBR_SCALE;
	rate *= USEC_PER_SEC / 100 * (100 - margin);
	rate >>= BW_SCALE;
	return max_t(u64, rate, 1);
}

/* tcp_bbr2.c:bbr_bw_to_pacing_rate */
static u64 bw_to_pacing_rate(const struct sock *sk, u32 bw, u32 gain)
{
	u64 rate = rate_bytes_per_sec(sk, bw, gain, BBR_PACING_MARGIN_PERCENT);

	return min_t(u64, rate, READ_ONCE(sk->sk_max_pacing_rate));
}

static inline u32 max_bw(const struct l4sb *b)
{
	return max(b->max_bw[0], b->max_bw[1]);
}

/* tcp_bbr2.c:bbr_bw (difference 3: bw_hi stays infinite in L4S) */
static inline u32 cur_bw(const struct l4sb *b)
{
	return min(max_bw(b), min(b->bw_lo, b->bw_hi));
}

/* tcp_bbr2.c:bbr_bdp */
static u32 bdp(const struct l4sb *b, u32 bw, u32 gain)
{
	u64 w;

	if (b->min_rtt_us == BBR_INF)
		return b->init_cwnd;
	w = (u64)bw * b->min_rtt_us;
	return (u32)min_t(u64, DIV_ROUND_UP_ULL((w * gain) >> BBR_SCALE, BW_UNIT), BBR_INF);
}

/* tcp_bbr2.c:bbr_min_tso_segs */
static u32 min_tso_segs_of(const struct sock *sk)
{
	return READ_ONCE(sk->sk_pacing_rate) < (p_min_tso_rate >> 3) ? 1 : 2;
}

/* tcp_bbr2.c:bbr_tso_segs_generic with the generic GSO size (model:
 * bbr_common.rs tso_segs_generic)
 */
static u32 tso_segs_goal(const struct sock *sk, const struct l4sb *b)
{
	u32 shift = min_t(u32, p_tso_rtt_shift, 15);
	u64 bytes = READ_ONCE(sk->sk_pacing_rate) >> READ_ONCE(sk->sk_pacing_shift);

	if (shift) {
		u32 r = b->min_rtt_us >> shift;

		if (r < 32)
			bytes += GSO_LEGACY_MAX_SIZE >> r;
	}
	bytes = min_t(u64, bytes, GSO_LEGACY_MAX_SIZE - 1 - MAX_TCP_HEADER);
	return max_t(u32, div_u64(bytes, max_t(u32, tcp_sk(sk)->mss_cache, 1)),
		     min_tso_segs_of(sk));
}

/* tcp_bbr2.c:bbr_quantization_budget */
static u32 quantization_budget(const struct sock *sk, const struct l4sb *b, u32 cwnd)
{
	u32 tso = 3 * tso_segs_goal(sk, b);

	if (p_cwnd_tso_bduget == 1) {
		cwnd = max(max(cwnd, tso), p_cwnd_min_target);
	} else {
		cwnd = cwnd > BBR_INF - tso ? BBR_INF : cwnd + tso;
		cwnd = (cwnd == BBR_INF ? cwnd : cwnd + 1) & ~1U;
	}
	if (b->mode == MODE_PROBE_BW && b->cycle_idx == PHASE_UP)
		cwnd = cwnd > BBR_INF - 2 ? BBR_INF : cwnd + 2;
	return cwnd;
}

/* tcp_bbr2.c:bbr_inflight */
static u32 inflight(const struct sock *sk, const struct l4sb *b, u32 bw, u32 gain)
{
	return quantization_budget(sk, b, bdp(b, bw, gain));
}

/* tcp_bbr2.c:bbr2_target_inflight */
static u32 target_inflight(const struct sock *sk, const struct l4sb *b)
{
	return min(inflight(sk, b, cur_bw(b), BBR_UNIT), tcp_snd_cwnd(tcp_sk(sk)));
}

/* tcp_bbr2.c:bbr_packets_in_net_at_edt */
static u32 packets_in_net_at_edt(const struct sock *sk, const struct l4sb *b, u32 inflight_now)
{
	const struct tcp_sock *tp = tcp_sk(sk);
	u64 now_ns = tp->tcp_clock_cache;
	u64 edt_ns = max(tp->tcp_wstamp_ns, now_ns);
	u64 interval_us = div_u64(edt_ns - now_ns, NSEC_PER_USEC);
	u32 interval_delivered = (u32)(((u64)cur_bw(b) * interval_us) >> BW_SCALE);
	u32 in = inflight_now + (b->pacing_gain > BBR_UNIT ? tso_segs_goal(sk, b) : 0);

	return in > interval_delivered ? in - interval_delivered : 0;
}

/* tcp_bbr2.c:bbr2_inflight_with_headroom */
static u32 inflight_with_headroom(const struct l4sb *b)
{
	u32 headroom;

	if (b->inflight_hi == BBR_INF)
		return BBR_INF;
	headroom = max_t(u32, ((u64)b->inflight_hi * min_t(u32, p_inflight_headroom, 255)) >> BBR_SCALE, 1);
	return max_t(s64, (s64)b->inflight_hi - headroom, p_cwnd_min_target);
}

/* tcp_bbr2.c:bbr_probe_rtt_cwnd */
static u32 probe_rtt_cwnd(const struct l4sb *b)
{
	if (p_probe_rtt_cwnd_gain == 0)
		return p_cwnd_min_target;
	return max(p_cwnd_min_target, bdp(b, cur_bw(b), p_probe_rtt_cwnd_gain));
}

/* ----------------------------------------------------- small transitions */

/* tcp_bbr2.c:bbr_reset_full_bw */
static void reset_full_bw(struct l4sb *b)
{
	b->full_bw = 0;
	b->full_bw_cnt = 0;
	b->full_bw_now = false;
}

static void restart_full_bw(struct l4sb *b, u32 sample_bw)
{
	reset_full_bw(b);
	b->full_bw = sample_bw;
}

/* tcp_bbr2.c:bbr2_is_probing_bandwidth */
static bool is_probing_bandwidth(const struct l4sb *b)
{
	return b->mode == MODE_STARTUP ||
	       (b->mode == MODE_PROBE_BW &&
		(b->cycle_idx == PHASE_REFILL || b->cycle_idx == PHASE_UP));
}

/* tcp_bbr2.c:bbr2_reset_lower_bounds */
static void reset_lower_bounds(struct l4sb *b)
{
	b->bw_lo = BBR_INF;
	b->inflight_lo = BBR_INF;
}

/* tcp_bbr2.c:bbr2_reset_congestion_signals */
static void reset_congestion_signals(struct l4sb *b)
{
	b->loss_in_round = false;
	b->ecn_in_round = false;
	b->loss_in_cycle = false;
	b->ecn_in_cycle = false;
	b->bw_latest = 0;
	b->inflight_latest = 0;
}

/* tcp_bbr2.c:bbr_set_cycle_idx */
static void set_cycle_idx(struct l4sb *b, u8 idx)
{
	b->cycle_idx = idx;
	b->try_fast_path = false;
}

/* tcp_bbr2.c:bbr_save_cwnd */
static void save_cwnd(const struct sock *sk, struct l4sb *b)
{
	u32 cwnd = tcp_snd_cwnd(tcp_sk(sk));

	if (b->prev_ca_state < TCP_CA_Recovery && b->mode != MODE_PROBE_RTT)
		b->prior_cwnd = cwnd;
	else
		b->prior_cwnd = max(b->prior_cwnd, cwnd);
}

/* tcp_bbr2.c:bbr2_pick_probe_wait */
static void pick_probe_wait(struct l4sb *b)
{
	u32 rr = min_t(u32, p_bw_probe_rand_rounds, 15);
	u32 ru = min_t(u32, p_bw_probe_rand_us, (1U << 26) - 1);

	b->rounds_since_probe = rr ? get_random_u32_below(rr) : 0;
	b->probe_wait_us = min_t(u32, p_bw_probe_base_us, (1U << 26) - 1) +
			   (ru ? get_random_u32_below(ru) : 0);
}

/* tcp_bbr2.c:bbr2_start_bw_probe_down */
static void start_bw_probe_down(struct sock *sk, struct l4sb *b)
{
	reset_congestion_signals(b);
	b->bw_probe_up_cnt = BBR_INF;
	pick_probe_wait(b);
	b->cycle_mstamp = tcp_sk(sk)->tcp_mstamp;
	b->ack_phase = ACK_PROBE_STOPPING;
	b->next_rtt_delivered = tcp_sk(sk)->delivered;
	set_cycle_idx(b, PHASE_DOWN);
}

/* tcp_bbr2.c:bbr2_start_bw_probe_cruise */
static void start_bw_probe_cruise(struct l4sb *b)
{
	if (b->inflight_lo != BBR_INF)
		b->inflight_lo = min(b->inflight_lo, b->inflight_hi);
	set_cycle_idx(b, PHASE_CRUISE);
}

/* tcp_bbr2.c:bbr2_start_bw_probe_refill */
static void start_bw_probe_refill(struct sock *sk, struct l4sb *b, u32 bw_probe_up_rounds)
{
	reset_lower_bounds(b);
	if (b->inflight_hi != BBR_INF)
		b->inflight_hi = min_t(u64, (u64)b->inflight_hi + min_t(u32, p_refill_add_inc, 3), BBR_INF);
	b->bw_probe_up_rounds = min_t(u32, bw_probe_up_rounds, 31);
	b->got_ok_bw_probe_sample = false;
	b->bw_probe_up_acks = 0;
	b->stopped_risky_probe = false;
	b->ack_phase = ACK_REFILLING;
	b->next_rtt_delivered = tcp_sk(sk)->delivered;
	set_cycle_idx(b, PHASE_REFILL);
}

/* tcp_bbr2.c:bbr2_raise_inflight_hi_slope */
static void raise_inflight_hi_slope(struct sock *sk, struct l4sb *b)
{
	u32 growth_this_round = 1U << min_t(u32, b->bw_probe_up_rounds, 30);

	b->bw_probe_up_rounds = min_t(u32, b->bw_probe_up_rounds + 1, 30);
	b->bw_probe_up_cnt = max_t(u32, tcp_snd_cwnd(tcp_sk(sk)) / growth_this_round, 1);
}

/* tcp_bbr2.c:bbr2_start_bw_probe_up (L4STeam also restarts its full-bw
 * detector)
 */
static void start_bw_probe_up(struct sock *sk, struct l4sb *b, u32 sample_bw)
{
	b->ack_phase = ACK_PROBE_STARTING;
	b->next_rtt_delivered = tcp_sk(sk)->delivered;
	b->cycle_mstamp = tcp_sk(sk)->tcp_mstamp;
	set_cycle_idx(b, PHASE_UP);
	if (b->l4s)
		restart_full_bw(b, sample_bw);
	raise_inflight_hi_slope(sk, b);
}

/* tcp_bbr2.c:bbr2_has_elapsed_in_phase */
static bool has_elapsed_in_phase(const struct sock *sk, const struct l4sb *b, u32 interval_us)
{
	return (s64)(tcp_sk(sk)->tcp_mstamp - (b->cycle_mstamp + interval_us)) > 0;
}

/* tcp_bbr2.c:bbr2_is_reno_coexistence_probe_time */
static bool is_reno_coexistence_probe_time(const struct sock *sk, const struct l4sb *b)
{
	u32 rounds = min_t(u32, p_bw_probe_max_rounds, 255);
	u32 reno_gain = min_t(u32, p_bw_probe_reno_gain, 0x1ff);

	if (reno_gain)
		rounds = min_t(u32, rounds, ((u64)target_inflight(sk, b) * reno_gain) >> BBR_SCALE);
	return b->rounds_since_probe >= rounds;
}

/* tcp_bbr2.c:bbr2_check_time_to_probe_bw */
static bool check_time_to_probe_bw(struct sock *sk, struct l4sb *b)
{
	u32 reprobe = min_t(u32, p_ecn_reprobe_gain, 0x1ff);

	if (reprobe && b->ecn_eligible && b->ecn_in_cycle && !b->loss_in_cycle &&
	    inet_csk(sk)->icsk_ca_state == TCP_CA_Open) {
		u64 v = ((u64)b->inflight_hi * reprobe) >> BBR_SCALE;

		start_bw_probe_refill(sk, b, v ? ilog2(v) : 0);
		return true;
	}
	if (has_elapsed_in_phase(sk, b, b->probe_wait_us) ||
	    is_reno_coexistence_probe_time(sk, b)) {
		start_bw_probe_refill(sk, b, 0);
		return true;
	}
	return false;
}

/* tcp_bbr2.c:bbr2_check_time_to_cruise */
static bool check_time_to_cruise(const struct sock *sk, const struct l4sb *b, u32 inflight_now, u32 bw)
{
	bool is_under_bdp;

	if (inflight_now > inflight_with_headroom(b))
		return false;
	is_under_bdp = inflight_now <= inflight(sk, b, bw, BBR_UNIT);
	if (p_drain_to_target)
		return is_under_bdp;
	return is_under_bdp || has_elapsed_in_phase(sk, b, b->min_rtt_us);
}

/* ------------------------------------------------------- congestion signals */

/* tcp_bbr2.c:bbr2_is_inflight_too_high */
static bool is_inflight_too_high(const struct l4sb *b, const struct l4sb_sample *s)
{
	u32 ecn_thresh = min_t(u32, p_ecn_thresh, 255);

	if (s->lost > 0 && s->tx_in_flight) {
		u64 loss_thresh = ((u64)s->tx_in_flight * min_t(u32, p_loss_thresh, 255)) >> BBR_SCALE;

		if ((u64)s->lost > loss_thresh)
			return true;
	}
	if (s->delivered_ce > 0 && s->delivered > 0 && b->ecn_eligible && ecn_thresh) {
		u64 t = ((u64)s->delivered * ecn_thresh) >> BBR_SCALE;

		if ((u64)s->delivered_ce >= t)
			return true;
	}
	return false;
}

/* tcp_bbr2.c:bbr2_inflight_hi_from_lost_skb (model: bbr_model.rs) */
static u32 inflight_hi_from_lost_skb(const struct l4sb_sample *s, u32 pcount)
{
	u64 loss_thresh = min_t(u32, p_loss_thresh, 255);
	s64 inflight_prev = (s64)s->tx_in_flight - pcount;
	s64 lost_prev = (s64)s->lost - pcount;
	u64 loss_budget, lost_prefix;

	if (inflight_prev < 0 || lost_prev < 0)
		return BBR_INF;
	loss_budget = ((u64)inflight_prev * loss_thresh + BBR_UNIT - 1) >> BBR_SCALE;
	if ((u64)lost_prev >= loss_budget) {
		lost_prefix = 0;
	} else {
		if (BBR_UNIT - loss_thresh == 0)
			return BBR_INF;
		lost_prefix = div_u64((loss_budget - lost_prev) << BBR_SCALE, BBR_UNIT - loss_thresh);
	}
	return min_t(u64, inflight_prev + lost_prefix, BBR_INF);
}

/* tcp_bbr2.c:bbr2_ecn_cut */
static u32 ecn_cut(const struct l4sb *b)
{
	return BBR_UNIT - ((b->ecn_alpha * min_t(u32, p_ecn_factor, 255)) >> BBR_SCALE);
}

/* tcp_bbr2.c:bbr2_handle_queue_too_high_in_startup */
static void handle_queue_too_high_in_startup(struct sock *sk, struct l4sb *b)
{
	b->full_bw_reached = true;
	b->inflight_hi = inflight(sk, b, max_bw(b), BBR_UNIT);
}

/* tcp_bbr2.c:bbr2_check_ecn_too_high_in_startup */
static void check_ecn_too_high_in_startup(struct sock *sk, struct l4sb *b, u32 ce_ratio)
{
	u32 full_ecn_cnt = min_t(u32, p_full_ecn_cnt, 3);
	u32 ecn_thresh = min_t(u32, p_ecn_thresh, 255);

	if (b->full_bw_reached || !b->ecn_eligible || !full_ecn_cnt || !ecn_thresh)
		return;
	if (ce_ratio >= ecn_thresh)
		b->startup_ecn_rounds = (b->startup_ecn_rounds + 1) & 3;
	else
		b->startup_ecn_rounds = 0;
	if (b->startup_ecn_rounds >= full_ecn_cnt)
		handle_queue_too_high_in_startup(sk, b);
}

/* tcp_bbr2.c:bbr2_update_ecn_alpha: once per round, alpha <- (1-g) alpha +
 * g CE/delivered
 */
static void update_ecn_alpha(struct sock *sk, struct l4sb *b)
{
	const struct tcp_sock *tp = tcp_sk(sk);
	s32 delivered = tp->delivered - b->alpha_last_delivered;
	s32 delivered_ce = tp->delivered_ce - b->alpha_last_delivered_ce;
	u32 max_rtt = ecn_max_rtt_us(b);
	u64 gain, alpha;
	u32 ce_ratio;

	if (min_t(u32, p_ecn_factor, 255) == 0)
		return;
	if (delivered <= 0 || delivered_ce < 0)
		return;
	/* See if we should use ECN sender logic for this connection (latched) */
	if (!b->ecn_eligible && ecn_enable(b) && (b->min_rtt_us <= max_rtt || !max_rtt)) {
		b->ecn_eligible = true;
		l4sb_log_once(sk, b, LOG_ECN_ELIGIBLE, "ecn_eligible at min_rtt %u us", b->min_rtt_us);
	}
	ce_ratio = div_u64((u64)delivered_ce << BBR_SCALE, delivered);
	gain = min_t(u32, p_ecn_alpha_gain, 255);
	alpha = ((BBR_UNIT - gain) * b->ecn_alpha) >> BBR_SCALE;
	alpha += (gain * ce_ratio) >> BBR_SCALE;
	b->ecn_alpha = min_t(u64, alpha, BBR_UNIT);
	b->alpha_last_delivered = tp->delivered;
	b->alpha_last_delivered_ce = tp->delivered_ce;
	check_ecn_too_high_in_startup(sk, b, ce_ratio);
}

/* tcp_bbr2.c:bbr2_adapt_lower_bounds: once per loss round when not probing,
 * cut inflight_lo (and v2alpha's bw_lo) for ECN by ecn_cut and for loss by
 * beta, the loss cut floored at the last round's delivery (difference 4)
 */
static void adapt_lower_bounds(struct sock *sk, struct l4sb *b)
{
	bool cut_bw_lo = !b->l4s && p_ecn_bw_lo;
	u32 ecn_inflight_lo = BBR_INF, ecn_bw_lo = BBR_INF;
	u32 cwnd = tcp_snd_cwnd(tcp_sk(sk));

	if (is_probing_bandwidth(b))
		return;
	if (b->ecn_in_round && b->ecn_eligible && min_t(u32, p_ecn_factor, 255)) {
		u64 cut = ecn_cut(b);

		if (cut_bw_lo && b->bw_lo == BBR_INF)
			b->bw_lo = max_bw(b);
		if (b->inflight_lo == BBR_INF)
			b->inflight_lo = cwnd;
		ecn_inflight_lo = ((u64)b->inflight_lo * cut) >> BBR_SCALE;
		if (cut_bw_lo)
			ecn_bw_lo = ((u64)b->bw_lo * cut) >> BBR_SCALE;
		b->n_ecn_cuts++;
		if (ecn_inflight_lo < b->inflight_lo)
			l4sb_log_once(sk, b, LOG_ECN_CUT, "ecn cut: alpha %u/256 inflight_lo %u -> %u cwnd %u",
				      b->ecn_alpha, b->inflight_lo, ecn_inflight_lo, cwnd);
	}
	if (b->loss_in_round) {
		u64 keep = BBR_UNIT - min_t(u32, p_beta, 255);

		if (b->bw_lo == BBR_INF)
			b->bw_lo = max_bw(b);
		if (b->inflight_lo == BBR_INF)
			b->inflight_lo = cwnd;
		b->bw_lo = max_t(u32, b->bw_latest, ((u64)b->bw_lo * keep) >> BBR_SCALE);
		b->inflight_lo = max_t(u32, b->inflight_latest, ((u64)b->inflight_lo * keep) >> BBR_SCALE);
		b->n_loss_cuts++;
		l4sb_log_once(sk, b, LOG_LOSS_CUT, "loss cut: inflight_lo %u cwnd %u", b->inflight_lo, cwnd);
	}
	b->inflight_lo = min(b->inflight_lo, ecn_inflight_lo);
	if (cut_bw_lo)
		b->bw_lo = min(b->bw_lo, ecn_bw_lo);
}

/* tcp_bbr2.c:bbr2_update_congestion_signals */
static void update_congestion_signals(struct sock *sk, struct l4sb *b,
				      const struct rate_sample *rs, u32 sample_bw)
{
	u32 delivered;

	b->loss_round_start = false;
	if (rs->interval_us <= 0 || !rs->acked_sacked)
		return;
	if (!rs->is_app_limited || sample_bw >= max_bw(b))
		b->max_bw[1] = max(b->max_bw[1], sample_bw);	/* bbr_take_max_bw_sample */
	b->loss_in_round |= rs->losses > 0;
	delivered = rs->delivered > 0 ? rs->delivered : 0;
	b->bw_latest = max(b->bw_latest, sample_bw);
	b->inflight_latest = max(b->inflight_latest, delivered);
	if (before(rs->prior_delivered, b->loss_round_delivered))
		return;
	b->loss_round_delivered = tcp_sk(sk)->delivered;
	b->loss_round_start = true;
	adapt_lower_bounds(sk, b);
	b->loss_in_round = false;
	b->ecn_in_round = false;
	b->bw_latest = sample_bw;
	b->inflight_latest = delivered;
}

/* tcp_bbr2.c:bbr2_handle_inflight_too_high: once per probe, inflight_hi <-
 * max(tx_in_flight, 0.7 target); v2alpha also cuts bw_hi by ECN (difference 5)
 */
static void handle_inflight_too_high(struct sock *sk, struct l4sb *b, const struct l4sb_sample *s)
{
	b->prev_probe_too_high = true;
	b->bw_probe_samples = false;
	b->n_too_high++;
	l4sb_log_once(sk, b, LOG_TOO_HIGH, "inflight too high: tx_in_flight %u lost %d delivered %d ce %d",
		      s->tx_in_flight, s->lost, s->delivered, s->delivered_ce);
	if (!s->is_app_limited) {
		u64 keep = BBR_UNIT - min_t(u32, p_beta, 255);

		b->inflight_hi = max_t(u32, s->tx_in_flight, ((u64)target_inflight(sk, b) * keep) >> BBR_SCALE);
		/* bbr2_handle_inflight_too_high_via_ecn (v2alpha only) */
		if (!b->l4s && p_ecn_bw_hi && b->ecn_eligible && !b->got_ok_bw_probe_sample) {
			if (b->bw_hi == BBR_INF)
				b->bw_hi = max_bw(b);
			b->bw_hi = ((u64)b->bw_hi * ecn_cut(b)) >> BBR_SCALE;
		}
	}
	if (b->mode == MODE_PROBE_BW && b->cycle_idx == PHASE_UP)
		start_bw_probe_down(sk, b);
}

/* tcp_bbr2.c:bbr2_probe_inflight_hi_upward */
static void probe_inflight_hi_upward(struct sock *sk, struct l4sb *b, const struct rate_sample *rs)
{
	const struct tcp_sock *tp = tcp_sk(sk);

	if (!tp->is_cwnd_limited || tcp_snd_cwnd(tp) < b->inflight_hi) {
		b->bw_probe_up_acks = 0;
		return;
	}
	b->bw_probe_up_acks += rs->acked_sacked;
	if (b->bw_probe_up_acks >= b->bw_probe_up_cnt) {
		u32 delta = b->bw_probe_up_acks / b->bw_probe_up_cnt;

		b->bw_probe_up_acks -= delta * b->bw_probe_up_cnt;
		b->inflight_hi = min_t(u64, (u64)b->inflight_hi + delta, BBR_INF);
	}
	if (b->round_start)
		raise_inflight_hi_slope(sk, b);
}

static void sample_of(struct l4sb_sample *s, const struct rate_sample *rs)
{
	s->tx_in_flight = rs->tx_in_flight;
	s->lost = rs->lost;
	s->delivered = rs->delivered;
	s->delivered_ce = rs->delivered_ce;
	s->is_app_limited = rs->is_app_limited;
}

/* The ACK-phase bookkeeping that starts bbr2_adapt_upper_bounds (model:
 * bbr_model.rs adapt_ack_phase); true if it started a refill
 */
static bool adapt_ack_phase(struct sock *sk, struct l4sb *b, const struct rate_sample *rs)
{
	if (b->ack_phase == ACK_PROBE_STARTING && b->round_start)
		b->ack_phase = ACK_PROBE_FEEDBACK;
	if (b->ack_phase == ACK_PROBE_STOPPING && b->round_start) {
		b->bw_probe_samples = false;
		b->ack_phase = ACK_INIT;
		/* bbr2_advance_max_bw_filter */
		if (b->mode == MODE_PROBE_BW && !rs->is_app_limited && b->max_bw[1]) {
			b->max_bw[0] = b->max_bw[1];
			b->max_bw[1] = 0;
		}
		if (b->mode == MODE_PROBE_BW && b->stopped_risky_probe && !b->prev_probe_too_high) {
			start_bw_probe_refill(sk, b, 0);
			return true;
		}
	}
	return false;
}

/* tcp_bbr2.c:bbr2_adapt_upper_bounds; true if it decided a transition */
static bool adapt_upper_bounds(struct sock *sk, struct l4sb *b, const struct rate_sample *rs, u32 sample_bw)
{
	struct l4sb_sample s;

	if (adapt_ack_phase(sk, b, rs))
		return true;
	sample_of(&s, rs);
	if (is_inflight_too_high(b, &s)) {
		if (b->bw_probe_samples)
			handle_inflight_too_high(sk, b, &s);
	} else {
		if (!b->l4s) {
			b->got_ok_bw_probe_sample |= b->bw_probe_samples;
			if (b->inflight_hi == BBR_INF && b->bw_hi == BBR_INF)
				return false;
		} else if (b->inflight_hi == BBR_INF) {
			return false;
		}
		if (rs->tx_in_flight > b->inflight_hi)
			b->inflight_hi = rs->tx_in_flight;
		if (!b->l4s && sample_bw > b->bw_hi)
			b->bw_hi = sample_bw;
		if (b->mode == MODE_PROBE_BW && b->cycle_idx == PHASE_UP)
			probe_inflight_hi_upward(sk, b, rs);
	}
	return false;
}

/* PROBE_BW's UP end (v2alpha: after a min RTT at bw_probe_pif_gain x BDP in
 * flight; L4STeam with bw_probe_exit = 1, difference 7: on a bw plateau)
 */
static bool probe_up_done(const struct sock *sk, struct l4sb *b, u32 inflight_now, u32 bw, u32 sample_bw)
{
	if (b->l4s && min_t(u32, p_bw_probe_exit, 1) == 1) {
		const struct tcp_sock *tp = tcp_sk(sk);

		if (tp->is_cwnd_limited && tcp_snd_cwnd(tp) >= b->inflight_hi) {
			restart_full_bw(b, sample_bw);
			return false;
		}
		return b->full_bw_now;
	}
	return has_elapsed_in_phase(sk, b, b->min_rtt_us) &&
	       inflight_now >= inflight(sk, b, bw, min_t(u32, p_bw_probe_pif_gain, 0x1ff));
}

/* tcp_bbr2.c:bbr2_update_cycle_phase */
static void update_cycle_phase(struct sock *sk, struct l4sb *b, const struct rate_sample *rs, u32 sample_bw)
{
	u32 inflight_now, bw;
	bool done;

	if (!b->full_bw_reached)
		return;
	if (adapt_upper_bounds(sk, b, rs, sample_bw))
		return;
	if (b->mode != MODE_PROBE_BW)
		return;
	inflight_now = packets_in_net_at_edt(sk, b, rs->prior_in_flight);
	bw = max_bw(b);
	switch (b->cycle_idx) {
	case PHASE_CRUISE:
		check_time_to_probe_bw(sk, b);
		break;
	case PHASE_REFILL:
		if (b->round_start) {
			b->bw_probe_samples = true;
			start_bw_probe_up(sk, b, sample_bw);
		}
		break;
	case PHASE_UP:
		if (b->prev_probe_too_high && inflight_now >= b->inflight_hi) {
			b->stopped_risky_probe = true;
			done = true;
		} else {
			done = probe_up_done(sk, b, inflight_now, bw, sample_bw);
		}
		if (done) {
			b->prev_probe_too_high = false;
			start_bw_probe_down(sk, b);
		}
		break;
	case PHASE_DOWN:
		if (check_time_to_probe_bw(sk, b))
			return;
		if (check_time_to_cruise(sk, b, inflight_now, bw))
			start_bw_probe_cruise(b);
		break;
	}
}

/* ------------------------------------------------------- STARTUP and DRAIN */

/* tcp_bbr2.c:bbr_check_full_bw_reached (v2alpha, difference 6): three rounds
 * without 25 % growth of max_bw in STARTUP
 */
static void check_full_bw_reached_v2alpha(struct l4sb *b, const struct rate_sample *rs)
{
	u32 thresh;

	if (b->full_bw_reached || !b->round_start || rs->is_app_limited)
		return;
	thresh = ((u64)b->full_bw * min_t(u32, p_full_bw_thresh, 0x3ff)) >> BBR_SCALE;
	if (max_bw(b) >= thresh) {
		b->full_bw = max_bw(b);
		b->full_bw_cnt = 0;
		return;
	}
	b->full_bw_cnt++;
	b->full_bw_reached = b->full_bw_cnt >= min_t(u32, p_full_bw_cnt, 7);
}

/* tcp_bbr2.c:bbr2_check_full_bw_reached (L4STeam, difference 6) */
static void check_full_bw_reached_l4s(struct l4sb *b, const struct rate_sample *rs, u32 sample_bw)
{
	u32 thresh, full_cnt, bw_thresh;

	if (b->full_bw_now || rs->is_app_limited)
		return;
	if (b->full_bw_reached) {
		thresh = min_t(u32, p_full_bw_thresh_up, 0x1ff);
		full_cnt = min_t(u32, p_full_bw_cnt_up, 3);
	} else {
		thresh = min_t(u32, p_full_bw_thresh, 0x3ff);
		full_cnt = min_t(u32, p_full_bw_cnt, 7);
	}
	bw_thresh = ((u64)b->full_bw * thresh) >> BBR_SCALE;
	if (sample_bw >= bw_thresh) {
		restart_full_bw(b, sample_bw);
		return;
	}
	if (!b->round_start)
		return;
	b->full_bw_cnt++;
	b->full_bw_now = b->full_bw_cnt >= full_cnt;
	b->full_bw_reached |= b->full_bw_now;
}

/* tcp_bbr2.c:bbr2_check_loss_too_high_in_startup */
static void check_loss_too_high_in_startup(struct sock *sk, struct l4sb *b, const struct rate_sample *rs)
{
	u32 full_loss_cnt = min_t(u32, p_full_loss_cnt, 15);
	struct l4sb_sample s;

	if (b->full_bw_reached)
		return;
	if (rs->losses > 0 && b->loss_events_in_round < 0xf)
		b->loss_events_in_round++;
	sample_of(&s, rs);
	if (full_loss_cnt && b->loss_round_start &&
	    inet_csk(sk)->icsk_ca_state == TCP_CA_Recovery &&
	    b->loss_events_in_round >= full_loss_cnt && is_inflight_too_high(b, &s)) {
		handle_queue_too_high_in_startup(sk, b);
		return;
	}
	if (b->loss_round_start)
		b->loss_events_in_round = 0;
}

/* tcp_bbr2.c:bbr_check_drain + bbr2_check_drain */
static void check_drain(struct sock *sk, struct l4sb *b)
{
	struct tcp_sock *tp = tcp_sk(sk);

	if (b->mode == MODE_STARTUP && b->full_bw_reached) {
		b->mode = MODE_DRAIN;
		tp->snd_ssthresh = inflight(sk, b, max_bw(b), BBR_UNIT);
		reset_congestion_signals(b);
	}
	if (b->mode == MODE_DRAIN &&
	    packets_in_net_at_edt(sk, b, tcp_packets_in_flight(tp)) <= inflight(sk, b, max_bw(b), BBR_UNIT)) {
		b->mode = MODE_PROBE_BW;
		start_bw_probe_down(sk, b);
	}
}

/* ---------------------------------------------------------------- PROBE_RTT */

/* tcp_bbr2.c:bbr2_exit_probe_rtt */
static void exit_probe_rtt(struct sock *sk, struct l4sb *b)
{
	reset_lower_bounds(b);
	if (b->full_bw_reached) {
		b->mode = MODE_PROBE_BW;
		start_bw_probe_down(sk, b);
		start_bw_probe_cruise(b);
	} else {
		b->mode = MODE_STARTUP;
	}
}

/* tcp_bbr2.c:bbr_check_probe_rtt_done */
static void check_probe_rtt_done(struct sock *sk, struct l4sb *b)
{
	struct tcp_sock *tp = tcp_sk(sk);

	if (!(b->probe_rtt_done_stamp && after(tcp_jiffies32, b->probe_rtt_done_stamp)))
		return;
	b->probe_rtt_min_stamp = tcp_jiffies32;
	tcp_snd_cwnd_set(tp, max(tcp_snd_cwnd(tp), b->prior_cwnd));
	exit_probe_rtt(sk, b);
}

/* tcp_bbr2.c:bbr_update_min_rtt: the PROBE_RTT and min_rtt filters, PROBE_RTT
 * entry and exit
 */
static void update_min_rtt(struct sock *sk, struct l4sb *b, const struct rate_sample *rs)
{
	struct tcp_sock *tp = tcp_sk(sk);
	u32 now = tcp_jiffies32;
	u32 win_sec = min_t(u32, p_min_rtt_win_sec, 0x1f);
	u32 probe_rtt_win_ms = min_t(u32, min_t(u32, p_probe_rtt_win_ms, win_sec * 1000), 0x3fff);
	bool probe_rtt_expired = after(now, b->probe_rtt_min_stamp + msecs_to_jiffies(probe_rtt_win_ms));
	bool min_rtt_expired;

	if (rs->rtt_us >= 0 &&
	    (rs->rtt_us <= b->probe_rtt_min_us || (probe_rtt_expired && !rs->is_ack_delayed))) {
		b->probe_rtt_min_us = min_t(long, rs->rtt_us, BBR_INF);
		b->probe_rtt_min_stamp = now;
	}
	min_rtt_expired = after(now, b->min_rtt_stamp + win_sec * HZ);
	if (b->probe_rtt_min_us <= b->min_rtt_us || min_rtt_expired) {
		b->min_rtt_us = b->probe_rtt_min_us;
		b->min_rtt_stamp = b->probe_rtt_min_stamp;
	}

	if (min_t(u32, p_probe_rtt_mode_ms, 0x1ff) > 0 && probe_rtt_expired &&
	    !b->idle_restart && b->mode != MODE_PROBE_RTT) {
		b->mode = MODE_PROBE_RTT;
		save_cwnd(sk, b);
		b->ack_phase = ACK_PROBE_STOPPING;
		b->next_rtt_delivered = tp->delivered;
		b->probe_rtt_done_stamp = 0;
	}

	if (b->mode == MODE_PROBE_RTT) {
		/* Ignore low rate samples during this mode */
		tp->app_limited = (tp->delivered + tcp_packets_in_flight(tp)) ? : 1;
		if (!b->probe_rtt_done_stamp && tcp_packets_in_flight(tp) <= probe_rtt_cwnd(b)) {
			b->probe_rtt_done_stamp = now + msecs_to_jiffies(min_t(u32, p_probe_rtt_mode_ms, 0x1ff));
			b->probe_rtt_round_done = false;
			b->next_rtt_delivered = tp->delivered;
		} else if (b->probe_rtt_done_stamp) {
			if (b->round_start)
				b->probe_rtt_round_done = true;
			if (b->probe_rtt_round_done)
				check_probe_rtt_done(sk, b);
		}
	}
	/* Restart after idle ends only once we process a new S/ACK for data */
	if (rs->delivered > 0)
		b->idle_restart = false;
}

/* ------------------------------------------------------------ the control */

/* tcp_bbr2.c:bbr_init_pacing_rate_from_rtt: high_gain * cwnd / srtt */
static void init_pacing_rate_from_rtt(struct sock *sk, struct l4sb *b)
{
	struct tcp_sock *tp = tcp_sk(sk);
	u64 bw;
	u32 rtt_us;

	if (tp->srtt_us) {
		rtt_us = max(tp->srtt_us >> 3, 1U);
		b->has_seen_rtt = true;
	} else {
		rtt_us = USEC_PER_MSEC;
	}
	bw = div_u64((u64)tcp_snd_cwnd(tp) * BW_UNIT, rtt_us);
	WRITE_ONCE(sk->sk_pacing_rate, bw_to_pacing_rate(sk, (u32)min_t(u64, bw, BBR_INF),
							 min_t(u32, p_high_gain, 0x7ff)));
}

/* tcp_bbr2.c:bbr_set_pacing_rate: never lower the rate before the pipe is full */
static void set_pacing_rate(struct sock *sk, struct l4sb *b, u32 bw, u32 gain)
{
	u64 rate = bw_to_pacing_rate(sk, bw, gain);

	if (unlikely(!b->has_seen_rtt && tcp_sk(sk)->srtt_us))
		init_pacing_rate_from_rtt(sk, b);
	if (b->full_bw_reached || rate > READ_ONCE(sk->sk_pacing_rate))
		WRITE_ONCE(sk->sk_pacing_rate, rate);
}

/* tcp_bbr2.c:bbr_ack_aggregation_cwnd */
static u32 ack_aggregation_cwnd(const struct l4sb *b)
{
	if (p_extra_acked_gain && (b->full_bw_reached || p_extra_acked_in_startup)) {
		u32 max_aggr = div_u64((u64)cur_bw(b) * p_extra_acked_max_us, BW_UNIT);
		u32 aggr = ((u64)p_extra_acked_gain * max(b->extra_acked[0], b->extra_acked[1])) >> BBR_SCALE;

		return min(aggr, max_aggr);
	}
	return 0;
}

/* tcp_bbr2.c:bbr_update_ack_aggregation */
static void update_ack_aggregation(struct sock *sk, struct l4sb *b, const struct rate_sample *rs)
{
	const struct tcp_sock *tp = tcp_sk(sk);
	u32 epoch_us, expected, extra, reset_thresh = p_ack_epoch_acked_reset_thresh;

	if (!p_extra_acked_gain || !rs->acked_sacked || rs->delivered < 0 || rs->interval_us <= 0)
		return;
	if (b->round_start) {
		u32 thresh = min_t(u32, p_extra_acked_win_rtts, 0x1f);

		b->extra_acked_win_rtts = min_t(u32, b->extra_acked_win_rtts + 1, 0x1f);
		if (p_extra_acked_in_startup && !b->full_bw_reached)
			thresh = 1;
		if (b->extra_acked_win_rtts >= thresh) {
			b->extra_acked_win_rtts = 0;
			b->extra_acked_win_idx ^= 1;
			b->extra_acked[b->extra_acked_win_idx] = 0;
		}
	}
	epoch_us = tcp_stamp_us_delta(tp->delivered_mstamp, b->ack_epoch_mstamp);
	expected = (u32)div_u64((u64)cur_bw(b) * epoch_us, BW_UNIT);
	if (b->ack_epoch_acked <= expected ||
	    (u64)b->ack_epoch_acked + rs->acked_sacked >= reset_thresh) {
		b->ack_epoch_acked = 0;
		b->ack_epoch_mstamp = tp->delivered_mstamp;
		expected = 0;
	}
	b->ack_epoch_acked = min_t(u32, b->ack_epoch_acked + rs->acked_sacked, 0xfffff);
	extra = min(b->ack_epoch_acked - expected, tcp_snd_cwnd(tp));
	if (extra > b->extra_acked[b->extra_acked_win_idx])
		b->extra_acked[b->extra_acked_win_idx] = extra;
}

/* tcp_bbr2.c:bbr_set_cwnd: grow toward the target (slow start below it), snap
 * down to it
 */
static void set_cwnd(struct sock *sk, struct l4sb *b, u32 acked, u32 bw, u32 gain)
{
	struct tcp_sock *tp = tcp_sk(sk);
	u32 cwnd = tcp_snd_cwnd(tp), target;

	if (acked) {
		target = bdp(b, bw, gain);
		target = min_t(u64, (u64)target + ack_aggregation_cwnd(b), BBR_INF);
		target = quantization_budget(sk, b, target);
		b->try_fast_path = false;
		if (b->full_bw_reached) {
			cwnd = min_t(u64, (u64)cwnd + acked, BBR_INF);
			if (cwnd >= target) {
				cwnd = target;
				b->try_fast_path = true;
			}
		} else if (cwnd < target || cwnd < 2 * b->init_cwnd) {
			cwnd = min_t(u64, (u64)cwnd + acked, BBR_INF);
		} else {
			b->try_fast_path = true;
		}
		if (p_usage_based_cwnd)
			cwnd = min(cwnd, max(2 * tp->max_packets_out, tcp_snd_cwnd(tp)));
		cwnd = max(cwnd, p_cwnd_min_target);
	}
	tcp_snd_cwnd_set(tp, min(cwnd, tp->snd_cwnd_clamp));
	if (b->mode == MODE_PROBE_RTT)
		tcp_snd_cwnd_set(tp, min(tcp_snd_cwnd(tp), probe_rtt_cwnd(b)));
}

/* tcp_bbr2.c:bbr2_bound_cwnd_for_inflight_model */
static void bound_cwnd_for_inflight_model(struct sock *sk, struct l4sb *b)
{
	struct tcp_sock *tp = tcp_sk(sk);
	u32 cap = BBR_INF;

	if (!b->initialized)
		return;
	if (b->mode == MODE_PROBE_BW && b->cycle_idx != PHASE_CRUISE)
		cap = b->inflight_hi;
	else if (b->mode == MODE_PROBE_RTT ||
		 (b->mode == MODE_PROBE_BW && b->cycle_idx == PHASE_CRUISE))
		cap = inflight_with_headroom(b);
	cap = min(cap, b->inflight_lo);
	cap = max(cap, p_cwnd_min_target);
	tcp_snd_cwnd_set(tp, min(tcp_snd_cwnd(tp), cap));
}

/* tcp_bbr2.c:bbr2_update_gains (difference 2: L4STeam raises the cwnd gain in UP) */
static void update_gains(struct l4sb *b)
{
	switch (b->mode) {
	case MODE_STARTUP:
		b->pacing_gain = min_t(u32, p_high_gain, 0x7ff);
		b->cwnd_gain = min_t(u32, p_startup_cwnd_gain, 0x7ff);
		break;
	case MODE_DRAIN:
		b->pacing_gain = min_t(u32, p_drain_gain, 0x3ff);
		b->cwnd_gain = min_t(u32, p_startup_cwnd_gain, 0x7ff);
		break;
	case MODE_PROBE_BW: {
		u32 g = BBR_UNIT;

		if (b->cycle_idx == PHASE_UP)
			g = p_gain_up;
		else if (b->cycle_idx == PHASE_DOWN)
			g = b->l4s ? p_l4s_gain_down : p_gain_down;
		b->pacing_gain = min_t(u32, g, 0x3ff);
		b->cwnd_gain = min_t(u32, p_cwnd_gain, 0x7ff);
		if (b->l4s && b->cycle_idx == PHASE_UP)
			b->cwnd_gain += min_t(u32, p_bw_probe_cwnd_gain, 3) * BBR_UNIT / 4;
		break;
	}
	case MODE_PROBE_RTT:
		b->pacing_gain = BBR_UNIT;
		b->cwnd_gain = BBR_UNIT;
		break;
	}
}

/* tcp_bbr2.c:bbr2_update_model */
static void update_model(struct sock *sk, struct l4sb *b, const struct rate_sample *rs, u32 sample_bw)
{
	update_congestion_signals(sk, b, rs, sample_bw);
	update_ack_aggregation(sk, b, rs);
	check_loss_too_high_in_startup(sk, b, rs);
	if (b->l4s)
		check_full_bw_reached_l4s(b, rs, sample_bw);
	else
		check_full_bw_reached_v2alpha(b, rs);
	check_drain(sk, b);
	update_cycle_phase(sk, b, rs, sample_bw);
	update_min_rtt(sk, b, rs);
}

/* tcp_bbr2.c:bbr2_fast_path: an app-limited ACK below max_bw without loss or
 * ECN in the round skips the model update. Returns true to skip the control
 * update too; *update_model tells whether the full model update is still due.
 */
static bool run_fast_path(struct sock *sk, struct l4sb *b, const struct rate_sample *rs,
			  u32 sample_bw, bool *do_update_model)
{
	*do_update_model = true;
	if (p_fast_path && b->try_fast_path && rs->is_app_limited && sample_bw < max_bw(b) &&
	    !b->loss_in_round && !b->ecn_in_round) {
		u8 prev_mode = b->mode;
		u32 prev_min_rtt_us = b->min_rtt_us;

		*do_update_model = false;
		check_drain(sk, b);
		update_cycle_phase(sk, b, rs, sample_bw);
		update_min_rtt(sk, b, rs);
		return b->mode == prev_mode && b->min_rtt_us == prev_min_rtt_us && b->try_fast_path;
	}
	return false;
}

/* tcp_bbr2.c:bbr2_main */
static void l4sb_main(struct sock *sk, u32 ack, int flag, const struct rate_sample *rs)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct l4sb *b = l4sb(sk);
	bool do_update_model;
	u32 sample_bw = 0, bw;

	if (unlikely(!b))
		return;
	/* bbr_update_round_start */
	b->round_start = false;
	if (rs->interval_us > 0 && !before(rs->prior_delivered, b->next_rtt_delivered)) {
		b->next_rtt_delivered = tp->delivered;
		b->round_start = true;
	}
	if (b->round_start) {
		b->rounds_since_probe = min_t(u32, b->rounds_since_probe + 1, 0xff);
		update_ecn_alpha(sk, b);
	}
	b->ecn_in_round |= rs->is_ece;
	/* bbr_calculate_bw_sample: delivered / interval, rounded up */
	if (rs->interval_us > 0 && rs->delivered >= 0)
		sample_bw = (u32)min_t(u64, DIV_ROUND_UP_ULL((u64)rs->delivered * BW_UNIT, rs->interval_us),
				       BBR_INF);
	if (!run_fast_path(sk, b, rs, sample_bw, &do_update_model)) {
		if (do_update_model)
			update_model(sk, b, rs, sample_bw);
		update_gains(b);
		bw = cur_bw(b);
		set_pacing_rate(sk, b, bw, b->pacing_gain);
		set_cwnd(sk, b, rs->acked_sacked, bw, b->cwnd_gain);
		bound_cwnd_for_inflight_model(sk, b);
	}
	b->prev_ca_state = inet_csk(sk)->icsk_ca_state;
	b->loss_in_cycle |= rs->lost > 0;
	b->ecn_in_cycle |= rs->delivered_ce > 0;
}

/* tcp_bbr2.c:bbr_init + bbr2_init */
static void l4sb_init(struct sock *sk)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct l4sb_priv *priv = inet_csk_ca(sk);
	struct l4sb *b;

	BUILD_BUG_ON(sizeof(struct l4sb_priv) > ICSK_CA_PRIV_SIZE);
	b = kzalloc(sizeof(*b), GFP_ATOMIC);
	priv->b = b;
	if (!b) {
		pr_warn_once("no memory for the BBRv2 state: the connection keeps its initial cwnd\n");
		return;
	}
	b->l4s = inet_csk(sk)->icsk_ca_ops == &l4sb_l4s;
	b->initialized = true;
	b->init_cwnd = min_t(u32, tcp_snd_cwnd(tp), 0x7f);
	b->prior_cwnd = tp->prior_cwnd;
	b->prev_ca_state = TCP_CA_Open;
	b->min_rtt_us = tcp_min_rtt(tp);
	b->probe_rtt_min_us = b->min_rtt_us;
	b->mode = MODE_STARTUP;
	b->cycle_idx = PHASE_UP;
	/* Start sampling ECN after the first full flight is ACKed */
	b->loss_round_delivered = tp->delivered + 1;
	b->bw_lo = BBR_INF;
	b->inflight_lo = BBR_INF;
	b->inflight_hi = BBR_INF;
	b->bw_probe_up_cnt = BBR_INF;
	b->ack_phase = ACK_INIT;
	b->ecn_alpha = min_t(u32, p_ecn_alpha_init, BBR_UNIT);
	b->next_rtt_delivered = 0;
	b->probe_rtt_min_stamp = tcp_jiffies32;
	b->min_rtt_stamp = tcp_jiffies32;
	tp->snd_ssthresh = TCP_INFINITE_SSTHRESH;
	init_pacing_rate_from_rtt(sk, b);
	b->ack_epoch_mstamp = tp->tcp_mstamp;
	b->prior_rcv_nxt = tp->rcv_nxt;
	b->bw_hi = BBR_INF;
	update_gains(b);
	cmpxchg(&sk->sk_pacing_status, SK_PACING_NONE, SK_PACING_NEEDED);
}

static const char *mode_name(const struct l4sb *b)
{
	static const char * const phases[] = { "UP", "DOWN", "CRUISE", "REFILL" };

	switch (b->mode) {
	case MODE_STARTUP: return "STARTUP";
	case MODE_DRAIN: return "DRAIN";
	case MODE_PROBE_RTT: return "PROBE_RTT";
	default: return phases[b->cycle_idx & 3];
	}
}

static void l4sb_release(struct sock *sk)
{
	struct l4sb_priv *priv = inet_csk_ca(sk);
	struct l4sb *b = priv->b;

	if (!b)
		return;
	if (p_debug && tcp_sk(sk)->data_segs_out)
		pr_info("%s port %u: mode %s ecn_eligible %d alpha %u/256 ecn cuts %u loss cuts %u too-high %u lost skbs %u inflight_hi %d inflight_lo %d bw_hi %d delivered %u ce %u lost %u\n",
			b->l4s ? "l4slab_bbr2_l4s" : "l4slab_bbr2", ntohs(inet_sk(sk)->inet_sport),
			mode_name(b), b->ecn_eligible, b->ecn_alpha, b->n_ecn_cuts, b->n_loss_cuts,
			b->n_too_high, b->n_lost_skbs,
			b->inflight_hi == BBR_INF ? -1 : (int)b->inflight_hi,
			b->inflight_lo == BBR_INF ? -1 : (int)b->inflight_lo,
			b->bw_hi == BBR_INF ? -1 : (int)b->bw_hi,
			tcp_sk(sk)->delivered, tcp_sk(sk)->delivered_ce, tcp_sk(sk)->lost);
	kfree(b);
	priv->b = NULL;
}

/* tcp_bbr2.c:bbr2_ssthresh: save what an undo restores; ssthresh unchanged */
static u32 l4sb_ssthresh(struct sock *sk)
{
	struct l4sb *b = l4sb(sk);

	if (b) {
		save_cwnd(sk, b);
		b->undo_bw_lo = b->bw_lo;
		b->undo_inflight_lo = b->inflight_lo;
		b->undo_inflight_hi = b->inflight_hi;
	}
	return tcp_sk(sk)->snd_ssthresh;
}

/* tcp_bbr2.c:bbr2_undo_cwnd */
static u32 l4sb_undo_cwnd(struct sock *sk)
{
	struct l4sb *b = l4sb(sk);

	if (!b)
		return tcp_snd_cwnd(tcp_sk(sk));
	if (b->l4s) {
		reset_full_bw(b);
	} else {
		b->full_bw = 0;
		b->full_bw_cnt = 0;
	}
	b->loss_in_round = false;
	if (!p_undo)
		return tcp_snd_cwnd(tcp_sk(sk));
	b->bw_lo = max(b->bw_lo, b->undo_bw_lo);
	b->inflight_lo = max(b->inflight_lo, b->undo_inflight_lo);
	b->inflight_hi = max(b->inflight_hi, b->undo_inflight_hi);
	return b->prior_cwnd;
}

/* tcp_bbr2.c:bbr2_set_state (difference 8 in the RTO branch) */
static void l4sb_set_state(struct sock *sk, u8 new_state)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct l4sb *b = l4sb(sk);

	if (!b)
		return;
	if (new_state == TCP_CA_Loss) {
		b->prev_ca_state = TCP_CA_Loss;
		if (b->l4s)
			reset_full_bw(b);
		else
			b->full_bw = 0;
		if (!is_probing_bandwidth(b) && b->inflight_lo == BBR_INF)
			b->inflight_lo = b->l4s ? max(tcp_snd_cwnd(tp), b->prior_cwnd) : b->prior_cwnd;
	} else if (b->prev_ca_state == TCP_CA_Loss) {
		tcp_snd_cwnd_set(tp, max(tcp_snd_cwnd(tp), b->prior_cwnd));
		b->try_fast_path = false;
	}
}

/* tcp_bbr2.c:bbr_cwnd_event, restart from idle */
static void l4sb_cwnd_event_tx_start(struct sock *sk)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct l4sb *b = l4sb(sk);

	if (!b || !tp->app_limited)
		return;
	b->idle_restart = true;
	b->ack_epoch_mstamp = tp->tcp_mstamp;
	b->ack_epoch_acked = 0;
	if (b->mode == MODE_PROBE_BW)
		set_pacing_rate(sk, b, cur_bw(b), BBR_UNIT);
	else if (b->mode == MODE_PROBE_RTT)
		check_probe_rtt_done(sk, b);
}

/* tcp_bbr2.c:bbr_cwnd_event on a receiving socket: the DCTCP-style CE echo
 * (ecn_enable and precise_ece_ack) and, with fast_ack_mode = 2, quick-ACK
 * mode on CE
 */
static void l4sb_cwnd_event(struct sock *sk, enum tcp_ca_event ev)
{
	struct l4sb *b = l4sb(sk);

	if (!b)
		return;
	if ((ev == CA_EVENT_ECN_IS_CE || ev == CA_EVENT_ECN_NO_CE) && ecn_enable(b) && p_precise_ece_ack) {
		dctcp_ece_ack_update(sk, ev, &b->prior_rcv_nxt, &b->ce_state);
		if (min_t(u32, p_fast_ack_mode, 2) == 2 && ev == CA_EVENT_ECN_IS_CE)
			inet_csk(sk)->icsk_ack.pending |= ICSK_ACK_NOW;
	}
}

/* tcp_bbr2.c:bbr2_skb_marked_lost: loss bookkeeping, and while a probe's
 * feedback arrives, the in-flight level at which loss became too high
 */
static void l4sb_skb_marked_lost(struct sock *sk, const struct sk_buff *skb)
{
	const struct tcp_sock *tp = tcp_sk(sk);
	const struct tcp_skb_cb *scb = TCP_SKB_CB(skb);
	struct l4sb *b = l4sb(sk);
	struct l4sb_sample s;

	if (!b)
		return;
	b->n_lost_skbs++;
	l4sb_log_once(sk, b, LOG_LOST_SKB, "skb marked lost: tx.in_flight %u lost since send %u",
		      scb->tx.in_flight, tp->lost - scb->tx.lost);
	if (!b->loss_in_round)
		b->loss_round_delivered = tp->delivered;
	b->loss_in_round = true;
	b->loss_in_cycle = true;
	if (!b->bw_probe_samples || !scb->tx.delivered_mstamp)
		return;
	s.tx_in_flight = scb->tx.in_flight;
	s.lost = tp->lost - scb->tx.lost;
	s.delivered = 0;
	/* difference 9: v2alpha's sample also carries the CE count */
	s.delivered_ce = b->l4s ? 0 : (s32)((tp->delivered_ce - scb->tx.delivered_ce) & TCPCB_DELIVERED_CE_MASK);
	s.is_app_limited = scb->tx.is_app_limited;
	if (is_inflight_too_high(b, &s)) {
		s.tx_in_flight = inflight_hi_from_lost_skb(&s, max_t(u32, tcp_skb_pcount(skb), 1));
		handle_inflight_too_high(sk, b, &s);
	}
}

/* tcp_bbr2.c:bbr_min_tso_segs */
static u32 l4sb_min_tso_segs(struct sock *sk)
{
	return min_tso_segs_of(sk);
}

/* tcp_bbr2.c:bbr_sndbuf_expand */
static u32 l4sb_sndbuf_expand(struct sock *sk)
{
	return 3;
}

/* tcp_bbr2.c:bbr2_get_info: as BBRv1's tcp_bbr_info (what ss and the kernel
 * backend's collector read)
 */
static size_t l4sb_get_info(struct sock *sk, u32 ext, int *attr, union tcp_cc_info *info)
{
	struct l4sb *b = l4sb(sk);

	if (b && (ext & (1 << (INET_DIAG_BBRINFO - 1)) || ext & (1 << (INET_DIAG_VEGASINFO - 1)))) {
		u64 bw = (u64)cur_bw(b) * tcp_sk(sk)->mss_cache * USEC_PER_SEC >> BW_SCALE;

		memset(&info->bbr, 0, sizeof(info->bbr));
		info->bbr.bbr_bw_lo = (u32)bw;
		info->bbr.bbr_bw_hi = (u32)(bw >> 32);
		info->bbr.bbr_min_rtt = b->min_rtt_us;
		info->bbr.bbr_pacing_gain = b->pacing_gain;
		info->bbr.bbr_cwnd_gain = b->cwnd_gain;
		*attr = INET_DIAG_BBRINFO;
		return sizeof(info->bbr);
	}
	return 0;
}

/* TCP_CONG_NON_RESTRICTED | TCP_CONG_WANTS_CE_EVENTS as both trees; the L4S
 * ops add TCP_CONG_ECT_1_DATA (ECT(1) iff AccECN, difference 11)
 */
static struct tcp_congestion_ops l4sb_v2alpha __read_mostly = {
	.flags		= TCP_CONG_NON_RESTRICTED | TCP_CONG_WANTS_CE_EVENTS,
	.name		= "l4slab_bbr2",
	.owner		= THIS_MODULE,
	.init		= l4sb_init,
	.release	= l4sb_release,
	.cong_control	= l4sb_main,
	.sndbuf_expand	= l4sb_sndbuf_expand,
	.skb_marked_lost = l4sb_skb_marked_lost,
	.undo_cwnd	= l4sb_undo_cwnd,
	.cwnd_event	= l4sb_cwnd_event,
	.cwnd_event_tx_start = l4sb_cwnd_event_tx_start,
	.ssthresh	= l4sb_ssthresh,
	.min_tso_segs	= l4sb_min_tso_segs,
	.get_info	= l4sb_get_info,
	.set_state	= l4sb_set_state,
};

static struct tcp_congestion_ops l4sb_l4s __read_mostly = {
	.flags		= TCP_CONG_NON_RESTRICTED | TCP_CONG_WANTS_CE_EVENTS | TCP_CONG_ECT_1_DATA,
	.name		= "l4slab_bbr2_l4s",
	.owner		= THIS_MODULE,
	.init		= l4sb_init,
	.release	= l4sb_release,
	.cong_control	= l4sb_main,
	.sndbuf_expand	= l4sb_sndbuf_expand,
	.skb_marked_lost = l4sb_skb_marked_lost,
	.undo_cwnd	= l4sb_undo_cwnd,
	.cwnd_event	= l4sb_cwnd_event,
	.cwnd_event_tx_start = l4sb_cwnd_event_tx_start,
	.ssthresh	= l4sb_ssthresh,
	.min_tso_segs	= l4sb_min_tso_segs,
	.get_info	= l4sb_get_info,
	.set_state	= l4sb_set_state,
};

static int __init l4sb_register(void)
{
	int ret = tcp_register_congestion_control(&l4sb_v2alpha);

	if (ret)
		return ret;
	ret = tcp_register_congestion_control(&l4sb_l4s);
	if (ret)
		tcp_unregister_congestion_control(&l4sb_v2alpha);
	return ret;
}

static void __exit l4sb_unregister(void)
{
	tcp_unregister_congestion_control(&l4sb_l4s);
	tcp_unregister_congestion_control(&l4sb_v2alpha);
}

module_init(l4sb_register);
module_exit(l4sb_unregister);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("l4slab's BBRv2 (google/bbr v2alpha and L4STeam flavours), a port of the engine's model");
