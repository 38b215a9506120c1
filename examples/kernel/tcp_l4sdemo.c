// SPDX-License-Identifier: GPL-2.0
/*
 * tcp_l4sdemo: a small scalable (L4S) congestion control, l4slab's example of bringing your
 * own congestion control to the kernel backend (docs/kernel.md, "Bring your own congestion
 * control"; examples/kernel/l4sdemo.toml runs it). A teaching example, not a production CC.
 *
 *  - It asks for AccECN and sends ECT(1) on its data (TCP_CONG_NEEDS_ACCECN,
 *    TCP_CONG_ECT_1_NEGOTIATION and l4slab's TCP_CONG_ECT_1_DATA), so DualPI2 queues it in
 *    its L queue and marks it at a shallow threshold.
 *  - Every round trip it measures the fraction of its delivered packets that came back
 *    CE-marked (tp->delivered_ce / tp->delivered, which AccECN's counters keep exact).
 *  - When the stack enters CWR on new marks (once per round trip at most), the new window is
 *    cwnd x (1 - frac / 2): a reduction in proportion to the marking, the scalable response
 *    of RFC 9331 section 4.3 (no moving average: the last round's fraction).
 *  - On loss it halves, as Reno; it grows as Reno (slow start, then one segment a round trip).
 */
#include <linux/module.h>
#include <net/tcp.h>

#define FRAC_SHIFT 10 /* frac is a fraction of 1 << FRAC_SHIFT */

struct l4sdemo {
	u32 round_end;     /* the round ends when this is acknowledged (snd_nxt at its start) */
	u32 delivered0;    /* tp->delivered at the round's start */
	u32 delivered_ce0; /* tp->delivered_ce at the round's start */
	u32 frac;          /* CE-marked fraction of the last round's deliveries */
};

static void l4sdemo_new_round(struct sock *sk)
{
	const struct tcp_sock *tp = tcp_sk(sk);
	struct l4sdemo *ca = inet_csk_ca(sk);

	ca->round_end = tp->snd_nxt;
	ca->delivered0 = tp->delivered;
	ca->delivered_ce0 = tp->delivered_ce;
}

static void l4sdemo_init(struct sock *sk)
{
	struct l4sdemo *ca = inet_csk_ca(sk);

	ca->frac = 0;
	l4sdemo_new_round(sk);
}

/* every ACK: at the end of a round, its marked fraction */
static void l4sdemo_in_ack_event(struct sock *sk, u32 flags)
{
	const struct tcp_sock *tp = tcp_sk(sk);
	struct l4sdemo *ca = inet_csk_ca(sk);
	u32 delivered, marked;

	if (before(tp->snd_una, ca->round_end))
		return;
	delivered = tp->delivered - ca->delivered0;
	marked = tp->delivered_ce - ca->delivered_ce0;
	if (delivered)
		ca->frac = min_t(u32, (u64)marked << FRAC_SHIFT, (u64)delivered << FRAC_SHIFT) / delivered;
	l4sdemo_new_round(sk);
}

/* the window after a congestion signal: CE marks reduce it by frac / 2 */
static u32 l4sdemo_ssthresh(struct sock *sk)
{
	const struct tcp_sock *tp = tcp_sk(sk);
	const struct l4sdemo *ca = inet_csk_ca(sk);
	u32 cwnd = tcp_snd_cwnd(tp);

	return max(cwnd - (u32)(((u64)cwnd * ca->frac) >> (FRAC_SHIFT + 1)), 2U);
}

/* a loss (Recovery or an RTO) halves the window instead: the stack asked ssthresh() first */
static void l4sdemo_set_state(struct sock *sk, u8 new_state)
{
	struct tcp_sock *tp = tcp_sk(sk);

	if ((new_state == TCP_CA_Recovery || new_state == TCP_CA_Loss) &&
	    new_state != inet_csk(sk)->icsk_ca_state)
		tp->snd_ssthresh = max(tcp_snd_cwnd(tp) >> 1U, 2U);
}

static struct tcp_congestion_ops l4sdemo __read_mostly = {
	.init		= l4sdemo_init,
	.in_ack_event	= l4sdemo_in_ack_event,
	.ssthresh	= l4sdemo_ssthresh,
	.set_state	= l4sdemo_set_state,
	.cong_avoid	= tcp_reno_cong_avoid,
	.undo_cwnd	= tcp_reno_undo_cwnd,
	.flags		= TCP_CONG_NEEDS_ECN | TCP_CONG_NEEDS_ACCECN | TCP_CONG_ECT_1_NEGOTIATION |
			  TCP_CONG_ECT_1_DATA,
	.owner		= THIS_MODULE,
	.name		= "l4sdemo",
};

static int __init l4sdemo_register(void)
{
	BUILD_BUG_ON(sizeof(struct l4sdemo) > ICSK_CA_PRIV_SIZE);
	return tcp_register_congestion_control(&l4sdemo);
}

static void __exit l4sdemo_unregister(void)
{
	tcp_unregister_congestion_control(&l4sdemo);
}

module_init(l4sdemo_register);
module_exit(l4sdemo_unregister);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("l4slab example: a small scalable congestion control (AccECN, ECT(1))");
