// SPDX-License-Identifier: GPL-2.0
/* An unresponsive ECT(1) sender for a kernel-backend measurement: a fixed window and a
 * fixed pacing rate of 140 Mbit/s of Ethernet frames (1514 B per 1500-B IP packet); it
 * ignores CE and loss. */
#include <linux/module.h>
#include <net/tcp.h>

#define CBR_RATE ((u64)140 * 1000000ULL / 8ULL * 1500ULL / 1514ULL)

static void cbr140_set(struct sock *sk)
{
	struct tcp_sock *tp = tcp_sk(sk);

	tcp_snd_cwnd_set(tp, 20000);
	tp->snd_ssthresh = 20000;
	WRITE_ONCE(sk->sk_pacing_rate, CBR_RATE);
}

static void cbr140_init(struct sock *sk)
{
	cmpxchg(&sk->sk_pacing_status, SK_PACING_NONE, SK_PACING_NEEDED);
	cbr140_set(sk);
}

static void cbr140_cong_control(struct sock *sk, u32 ack, int flag, const struct rate_sample *rs)
{
	cbr140_set(sk);
}

static u32 cbr140_ssthresh(struct sock *sk)
{
	return 20000;
}

static u32 cbr140_undo(struct sock *sk)
{
	return 20000;
}

static struct tcp_congestion_ops cbr140 __read_mostly = {
	.init		= cbr140_init,
	.cong_control	= cbr140_cong_control,
	.ssthresh	= cbr140_ssthresh,
	.undo_cwnd	= cbr140_undo,
	.flags		= TCP_CONG_NEEDS_ACCECN | TCP_CONG_ECT_1_NEGOTIATION | TCP_CONG_ECT_1_DATA,
	.owner		= THIS_MODULE,
	.name		= "cbr140",
};

static int __init cbr140_register(void)
{
	return tcp_register_congestion_control(&cbr140);
}
module_init(cbr140_register);
MODULE_LICENSE("GPL");
