// SPDX-License-Identifier: MIT
/*
 * l4slab-probe: the kernel backend guest's sampler. One static program, no fork/exec.
 *
 * On an absolute CLOCK_MONOTONIC schedule (clock_nanosleep TIMER_ABSTIME) it samples, in
 * named network namespaces (/run/netns/NAME, as made by `ip netns add`):
 *   - every IPv4 TCP socket in ESTABLISHED or a closing-after-data state, through
 *     NETLINK_SOCK_DIAG (inet_diag_req_v2): struct tcp_info (every field of the uapi this
 *     file is compiled against, as far as the kernel's attribute covers it), the congestion
 *     control name, and tcp_cc_info (vegas / dctcp / bbr layouts);
 *   - every qdisc of the named devices (RTM_GETQDISC dump) and, when one of them is a
 *     classful scheduler such as htb, every class (RTM_GETTCLASS dump): basic and queue
 *     statistics and the kind's xstats (dualpi2, fq_codel, codel, pie, fq, htb decoded;
 *     other kinds as hex).
 * and writes JSON Lines, one write(2) per tick, so a killed guest leaves complete lines.
 * Every record of a tick carries the tick's CLOCK_MONOTONIC time (t_ns) and index (tick).
 *
 * Output (one JSON object per line):
 *   {"kind":"start","t_ns","interval_ns","version":1,"duration_ns","ticks_planned",
 *    "tcpi_size","tcp_ns":[..],"qdisc":["NS:DEV",..]}
 *   {"t_ns","tick","kind":"tcp","ns","src","sport","dst","dport","state","cookie","cc",
 *    "info_len","info":{tcp_info fields without tcpi_}|null,"cc_info":{"attr":"dctcp"|"bbr"|"vegas",..}|null}
 *   {"t_ns","tick","kind":"qdisc"|"class","ns","dev","type","handle","parent","bytes","packets",
 *    "qlen","backlog","drops","requeues","overlimits","xstats":{..}|{"hex":".."}|null}
 *   {"t_ns","tick","kind":"error","ns",["dev",]"what","errno","msg"}  (once per new error)
 *   {"kind":"end","t_ns","ticks","skipped","records","errors","dropped","reason":"done"|"signal"|"write_error"[,"signal"]}
 * Units are the kernel's: tcp_info times in us (rto, rtt, ...), dualpi2 delay_c/delay_l in
 * us and prob as a fraction of 2^32-1 (MAX_PROB), htb tokens in psched ticks (64 ns).
 *
 * Build: gcc -O2 -static -Wall -Wextra -I<uapi include dir of Linux >= 7.0> probe.c -o l4slab-probe
 * (args.h beside it; the uapi dir is `make headers_install` output; the host's older headers lack
 * tc_dualpi2_xstats and the AccECN tcp_info fields).
 *
 * Sockets: a netlink socket belongs to the network namespace it was created in, so the
 * probe enters each namespace once (setns) to create its two netlink sockets and returns
 * to its own namespace; sampling needs no further setns. A namespace that does not exist
 * yet is retried at every tick.
 *
 * Request layout and the idea of asking for INET_DIAG_VEGASINFO to receive the dctcp/bbr
 * info (idiag_ext is 8 bits wide, INET_DIAG_DCTCPINFO/BBRINFO do not fit) follow
 * iproute2's misc/ss.c (inet_show_netlink / tcp_show_info) and the kernel's
 * net/ipv4/inet_diag.c and tcp_dctcp.c (dctcp_get_info); statistics nesting follows
 * net/core/gen_stats.c (TCA_STATS_PKT64 when packets exceed 32 bits). Written for l4slab.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <linux/if.h>
#include <linux/sockios.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/gen_stats.h>
#include <linux/pkt_sched.h>
#include <linux/sock_diag.h>
#include <linux/inet_diag.h>
#include <linux/tcp.h>

#include "args.h"

#if !defined(TCPI_ECN_MODE_ACCECN) || !defined(TCA_DUALPI2_MAX)
#error "l4slab-probe needs Linux >= 7.0 uapi headers (tcpi_ecn_mode, tc_dualpi2_xstats): -I<headers_install dir>/include"
#endif

#define PROBE_VERSION 1
#define MAX_NS 32
#define MAX_DEVS 32
#define NL_BUF 65536               /* a dump skb is at most 32 KiB (netlink_recvmsg) */
#define MAX_RECVS 4096             /* recv calls per dump */
#define MAX_MSGS 200000            /* messages per dump */
#define MAX_TICK_BYTES (64u << 20) /* output of one tick */
#define MAX_TICKS 10000000ull

/* include/net/tcp_states.h (not uapi): the states sampled */
enum { ST_ESTABLISHED = 1, ST_FIN_WAIT1 = 4, ST_FIN_WAIT2 = 5, ST_CLOSE_WAIT = 8, ST_LAST_ACK = 9, ST_CLOSING = 11 };
#define TCP_STATE_MASK                                                                                  \
	((1u << ST_ESTABLISHED) | (1u << ST_FIN_WAIT1) | (1u << ST_FIN_WAIT2) | (1u << ST_CLOSE_WAIT) | \
	 (1u << ST_LAST_ACK) | (1u << ST_CLOSING))

/* ------------------------------------------------------------------ output buffer */

static struct {
	char *p;
	size_t len, cap, mark;
	int overflow;
	unsigned long long dropped; /* records dropped because one tick exceeded MAX_TICK_BYTES */
	int comma;                  /* a value precedes: the next key needs a comma */
} ob;

static void ob_reserve(size_t need)
{
	if (ob.overflow || ob.len + need + 1 <= ob.cap)
		return;
	size_t cap = ob.cap ? ob.cap : 65536;
	while (cap < ob.len + need + 1)
		cap *= 2;
	if (cap > MAX_TICK_BYTES) {
		ob.overflow = 1;
		return;
	}
	char *p = realloc(ob.p, cap);
	if (!p) {
		ob.overflow = 1;
		return;
	}
	ob.p = p;
	ob.cap = cap;
}

__attribute__((format(printf, 1, 2))) static void ob_printf(const char *fmt, ...)
{
	va_list ap;
	for (int attempt = 0; attempt < 2 && !ob.overflow; attempt++) {
		size_t room = ob.cap > ob.len ? ob.cap - ob.len : 0;
		va_start(ap, fmt);
		int n = vsnprintf(room ? ob.p + ob.len : NULL, room, fmt, ap);
		va_end(ap);
		if (n < 0) {
			ob.overflow = 1;
			return;
		}
		if ((size_t)n < room) {
			ob.len += (size_t)n;
			return;
		}
		ob_reserve((size_t)n);
	}
}

/* Append n bytes (the hot path: no format parsing; a tick formats about a thousand fields). */
static void ob_put(const char *s, size_t n)
{
	ob_reserve(n);
	if (ob.overflow)
		return;
	memcpy(ob.p + ob.len, s, n);
	ob.len += n;
}

static void ob_raw(const char *s) { ob_put(s, strlen(s)); }

static void ob_u64(unsigned long long v)
{
	char tmp[24];
	int i = (int)sizeof(tmp);
	do {
		tmp[--i] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	ob_put(tmp + i, sizeof(tmp) - (size_t)i);
}

static void ob_s64(long long v)
{
	if (v < 0) {
		ob_put("-", 1);
		ob_u64(0ull - (unsigned long long)v);
	} else {
		ob_u64((unsigned long long)v);
	}
}

static void rec_begin(void)
{
	ob.mark = ob.len;
	ob.overflow = 0;
	ob.comma = 0;
	ob_raw("{");
}

static void rec_end(void)
{
	ob_raw("}\n");
	if (ob.overflow) { /* drop the partial record, keep the complete ones */
		ob.len = ob.mark;
		ob.overflow = 0;
		ob.dropped++;
	}
}

static void j_key(const char *k)
{
	if (ob.comma)
		ob_put(",", 1);
	ob_put("\"", 1);
	ob_raw(k);
	ob_put("\":", 2);
	ob.comma = 1;
}

static void j_u64(const char *k, unsigned long long v)
{
	j_key(k);
	ob_u64(v);
}

static void j_s64(const char *k, long long v)
{
	j_key(k);
	ob_s64(v);
}

static void j_str(const char *k, const char *s, size_t maxlen)
{
	j_key(k);
	ob_raw("\"");
	for (size_t i = 0; i < maxlen && s[i]; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c == '"' || c == '\\')
			ob_printf("\\%c", c);
		else if (c < 0x20 || c >= 0x7f)
			ob_printf("\\u%04x", c);
		else
			ob_put((const char *)&s[i], 1);
	}
	ob_raw("\"");
}

static void j_null(const char *k)
{
	j_key(k);
	ob_raw("null");
}

static void j_obj_begin(const char *k)
{
	j_key(k);
	ob_raw("{");
	ob.comma = 0;
}

static void j_obj_end(void)
{
	ob_raw("}");
	ob.comma = 1;
}

static void j_hex(const char *k, const unsigned char *p, size_t n)
{
	j_key(k);
	ob_raw("\"");
	for (size_t i = 0; i < n; i++)
		ob_printf("%02x", p[i]);
	ob_raw("\"");
}

static int g_out = 1;
static int g_write_failed;

static void ob_flush(void)
{
	size_t off = 0;
	for (int i = 0; i < 1000 && off < ob.len; i++) {
		ssize_t n = write(g_out, ob.p + off, ob.len - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			g_write_failed = errno ? errno : EIO;
			break;
		}
		off += (size_t)n;
	}
	if (off < ob.len && !g_write_failed)
		g_write_failed = EIO;
	ob.len = 0;
}

/* ------------------------------------------------------------------ struct field tables */

struct fld {
	const char *name;
	unsigned short off, size; /* size of the whole member (an array: all elements) */
	unsigned char elem, sign; /* element size, signed */
};

#define IS_SIGNED(x) _Generic((x), signed char: 1, short: 1, int: 1, long: 1, long long: 1, default: 0)
#define F(T, m, n) { n, offsetof(T, m), sizeof(((T *)0)->m), sizeof(((T *)0)->m), IS_SIGNED(((T *)0)->m) }
#define FA(T, m, n) { n, offsetof(T, m), sizeof(((T *)0)->m), sizeof(((T *)0)->m[0]), IS_SIGNED(((T *)0)->m[0]) }
#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

static unsigned long long load_u(const unsigned char *p, unsigned size, int sign)
{
	switch (size) {
	case 1: { uint8_t v; memcpy(&v, p, 1); return sign ? (unsigned long long)(long long)(int8_t)v : v; }
	case 2: { uint16_t v; memcpy(&v, p, 2); return sign ? (unsigned long long)(long long)(int16_t)v : v; }
	case 4: { uint32_t v; memcpy(&v, p, 4); return sign ? (unsigned long long)(long long)(int32_t)v : v; }
	default: { uint64_t v; memcpy(&v, p, 8); return v; }
	}
}

/* Emit the fields of tbl that lie entirely within the first len bytes of base. */
static void emit_fields(const struct fld *tbl, size_t n, const unsigned char *base, size_t len)
{
	for (size_t i = 0; i < n; i++) {
		const struct fld *f = &tbl[i];
		if ((size_t)f->off + f->size > len)
			continue;
		unsigned count = f->size / f->elem;
		if (count == 1) {
			unsigned long long v = load_u(base + f->off, f->elem, f->sign);
			if (f->sign)
				j_s64(f->name, (long long)v);
			else
				j_u64(f->name, v);
			continue;
		}
		j_key(f->name);
		ob_raw("[");
		for (unsigned e = 0; e < count; e++) {
			unsigned long long v = load_u(base + f->off + e * f->elem, f->elem, f->sign);
			if (e)
				ob_put(",", 1);
			if (f->sign)
				ob_s64((long long)v);
			else
				ob_u64(v);
		}
		ob_raw("]");
	}
}

/* struct tcp_info, in declaration order, split around its bit fields. */
#define TI(m) F(struct tcp_info, tcpi_##m, #m)
static const struct fld tcpi_head[] = { TI(state), TI(ca_state), TI(retransmits), TI(probes), TI(backoff),
					TI(options) };
static const struct fld tcpi_body[] = {
	TI(rto), TI(ato), TI(snd_mss), TI(rcv_mss), TI(unacked), TI(sacked), TI(lost), TI(retrans),
	TI(fackets), TI(last_data_sent), TI(last_ack_sent), TI(last_data_recv), TI(last_ack_recv), TI(pmtu),
	TI(rcv_ssthresh), TI(rtt), TI(rttvar), TI(snd_ssthresh), TI(snd_cwnd), TI(advmss), TI(reordering),
	TI(rcv_rtt), TI(rcv_space), TI(total_retrans), TI(pacing_rate), TI(max_pacing_rate), TI(bytes_acked),
	TI(bytes_received), TI(segs_out), TI(segs_in), TI(notsent_bytes), TI(min_rtt), TI(data_segs_in),
	TI(data_segs_out), TI(delivery_rate), TI(busy_time), TI(rwnd_limited), TI(sndbuf_limited),
	TI(delivered), TI(delivered_ce), TI(bytes_sent), TI(bytes_retrans), TI(dsack_dups), TI(reord_seen),
	TI(rcv_ooopack), TI(snd_wnd), TI(rcv_wnd), TI(rehash), TI(total_rto), TI(total_rto_recoveries),
	TI(total_rto_time), TI(received_ce), TI(delivered_e1_bytes), TI(delivered_e0_bytes),
	TI(delivered_ce_bytes), TI(received_e1_bytes), TI(received_e0_bytes), TI(received_ce_bytes),
};
/* the two bytes of bit fields after tcpi_options, and the 32-bit word of bit fields at the end */
#define TCPI_BITS1_OFF (offsetof(struct tcp_info, tcpi_options) + 1)
#define TCPI_ECNW_OFF (offsetof(struct tcp_info, tcpi_received_ce_bytes) + 4)
_Static_assert(offsetof(struct tcp_info, tcpi_rto) == TCPI_BITS1_OFF + 2, "tcp_info: unexpected layout after tcpi_options");
_Static_assert(sizeof(struct tcp_info) == TCPI_ECNW_OFF + 4, "tcp_info: fields after the AccECN bit-field word; update the tables");

static void emit_tcp_info(const unsigned char *raw, size_t len)
{
	struct tcp_info ti;
	memset(&ti, 0, sizeof(ti));
	memcpy(&ti, raw, len < sizeof(ti) ? len : sizeof(ti));
	emit_fields(tcpi_head, NELEM(tcpi_head), raw, len);
	if (len >= TCPI_BITS1_OFF + 1) {
		j_u64("snd_wscale", ti.tcpi_snd_wscale);
		j_u64("rcv_wscale", ti.tcpi_rcv_wscale);
	}
	if (len >= TCPI_BITS1_OFF + 2) {
		j_u64("delivery_rate_app_limited", ti.tcpi_delivery_rate_app_limited);
		j_u64("fastopen_client_fail", ti.tcpi_fastopen_client_fail);
	}
	emit_fields(tcpi_body, NELEM(tcpi_body), raw, len);
	if (len >= TCPI_ECNW_OFF + 4) {
		j_u64("ecn_mode", ti.tcpi_ecn_mode);
		j_u64("accecn_opt_seen", ti.tcpi_accecn_opt_seen);
		j_u64("accecn_fail_mode", ti.tcpi_accecn_fail_mode);
		j_u64("options2", ti.tcpi_options2);
	}
}

static const struct fld vegas_tbl[] = { F(struct tcpvegas_info, tcpv_enabled, "enabled"),
					F(struct tcpvegas_info, tcpv_rttcnt, "rttcnt"),
					F(struct tcpvegas_info, tcpv_rtt, "rtt"),
					F(struct tcpvegas_info, tcpv_minrtt, "minrtt") };
static const struct fld dctcp_tbl[] = { F(struct tcp_dctcp_info, dctcp_enabled, "enabled"),
					F(struct tcp_dctcp_info, dctcp_ce_state, "ce_state"),
					F(struct tcp_dctcp_info, dctcp_alpha, "alpha"),
					F(struct tcp_dctcp_info, dctcp_ab_ecn, "ab_ecn"),
					F(struct tcp_dctcp_info, dctcp_ab_tot, "ab_tot") };

#define DQ(m) F(struct tc_dualpi2_xstats, m, #m)
static const struct fld dualpi2_tbl[] = { DQ(prob), DQ(delay_c), DQ(delay_l), DQ(packets_in_c), DQ(packets_in_l),
					  DQ(maxq), DQ(ecn_mark), DQ(step_marks), DQ(credit), DQ(memory_used),
					  DQ(max_memory_used), DQ(memory_limit) };
#define FCQ(m) F(struct tc_fq_codel_xstats, qdisc_stats.m, #m)
static const struct fld fq_codel_qd_tbl[] = { FCQ(maxpacket), FCQ(drop_overlimit), FCQ(ecn_mark), FCQ(new_flow_count),
					      FCQ(new_flows_len), FCQ(old_flows_len), FCQ(ce_mark), FCQ(memory_usage),
					      FCQ(drop_overmemory) };
#define FCC(m) F(struct tc_fq_codel_xstats, class_stats.m, #m)
static const struct fld fq_codel_cl_tbl[] = { FCC(deficit), FCC(ldelay), FCC(count), FCC(lastcount), FCC(dropping),
					      FCC(drop_next) };
#define CQ(m) F(struct tc_codel_xstats, m, #m)
static const struct fld codel_tbl[] = { CQ(maxpacket), CQ(count), CQ(lastcount), CQ(ldelay), CQ(drop_next),
					CQ(drop_overlimit), CQ(ecn_mark), CQ(dropping), CQ(ce_mark) };
#define PQ(m) F(struct tc_pie_xstats, m, #m)
static const struct fld pie_tbl[] = { PQ(prob), PQ(delay), PQ(avg_dq_rate), PQ(dq_rate_estimating), PQ(packets_in),
				      PQ(dropped), PQ(overlimit), PQ(maxq), PQ(ecn_mark) };
#define FQ(m) F(struct tc_fq_qd_stats, m, #m)
static const struct fld fq_tbl[] = {
	FQ(gc_flows), FQ(highprio_packets), FQ(tcp_retrans), FQ(throttled), FQ(flows_plimit), FQ(pkts_too_long),
	FQ(allocation_errors), FQ(time_next_delayed_flow), FQ(flows), FQ(inactive_flows), FQ(throttled_flows),
	FQ(unthrottle_latency_ns), FQ(ce_mark), FQ(horizon_drops), FQ(horizon_caps), FQ(fastpath_packets),
	FA(struct tc_fq_qd_stats, band_drops, "band_drops"), FA(struct tc_fq_qd_stats, band_pkt_count, "band_pkt_count"),
};
#define HQ(m) F(struct tc_htb_xstats, m, #m)
static const struct fld htb_tbl[] = { HQ(lends), HQ(borrows), HQ(giants), HQ(tokens), HQ(ctokens) };

/* ------------------------------------------------------------------ time, signals */

static long long now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * NSEC + ts.tv_nsec;
}

static sigjmp_buf g_jb;
static volatile sig_atomic_t g_stop, g_armed;

static void on_signal(int sig)
{
	g_stop = sig;
	if (g_armed) { /* interrupt the sleep even if the signal came just before it began */
		g_armed = 0;
		siglongjmp(g_jb, 1);
	}
}

static void sleep_until(long long deadline)
{
	static struct timespec ts;
	ts.tv_sec = (time_t)(deadline / NSEC);
	ts.tv_nsec = (long)(deadline % NSEC);
	if (sigsetjmp(g_jb, 1))
		return;
	g_armed = 1;
	for (int i = 0; i < 1000 && !g_stop; i++)
		if (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) != EINTR)
			break;
	g_armed = 0;
}

/* ------------------------------------------------------------------ netlink */

static unsigned char g_buf[NL_BUF] __attribute__((aligned(8)));
static unsigned g_seq;

typedef void (*msg_fn)(const struct nlmsghdr *h, void *ctx);

/* Send a dump request, pass each reply to fn. 0, or -errno; -EOVERFLOW when a bound was hit
 * (the socket then holds an unfinished dump and must be replaced). */
static int nl_dump(int fd, struct nlmsghdr *req, msg_fn fn, void *ctx)
{
	struct sockaddr_nl kernel = { .nl_family = AF_NETLINK };
	req->nlmsg_seq = ++g_seq;
	req->nlmsg_pid = 0;
	ssize_t s;
	for (int i = 0; i < 100; i++) {
		s = sendto(fd, req, req->nlmsg_len, 0, (struct sockaddr *)&kernel, sizeof(kernel));
		if (s >= 0 || errno != EINTR)
			break;
	}
	if (s < 0)
		return -errno;
	long msgs = 0;
	for (int r = 0; r < MAX_RECVS; r++) {
		struct iovec iov = { g_buf, sizeof(g_buf) };
		struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
		ssize_t n = recvmsg(fd, &mh, 0);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return errno == EAGAIN ? -ETIMEDOUT : -errno;
		}
		if (mh.msg_flags & MSG_TRUNC)
			return -EMSGSIZE;
		if (n == 0)
			return -EPIPE;
		long len = (long)n;
		for (const struct nlmsghdr *h = (const struct nlmsghdr *)g_buf; NLMSG_OK(h, len); h = NLMSG_NEXT(h, len)) {
			if (h->nlmsg_seq != req->nlmsg_seq)
				continue; /* a stale reply */
			if (h->nlmsg_type == NLMSG_DONE)
				return 0;
			if (h->nlmsg_type == NLMSG_ERROR) {
				const struct nlmsgerr *e = NLMSG_DATA(h);
				if (h->nlmsg_len < NLMSG_LENGTH(sizeof(*e)))
					return -EPROTO;
				if (e->error)
					return e->error;
				continue;
			}
			if (++msgs > MAX_MSGS)
				return -EOVERFLOW;
			fn(h, ctx);
		}
	}
	return -EOVERFLOW;
}

static int nl_socket(int proto)
{
	int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, proto);
	if (fd < 0)
		return -errno;
	struct timeval tv = { 5, 0 }; /* a dump answers at once; never block for long */
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	struct sockaddr_nl local = { .nl_family = AF_NETLINK };
	if (bind(fd, (struct sockaddr *)&local, sizeof(local)) < 0) {
		int e = errno;
		close(fd);
		return -e;
	}
	return fd;
}

#define ATTR_TYPE(a) ((a)->rta_type & NLA_TYPE_MASK)

/* ------------------------------------------------------------------ namespaces, devices */

struct netns {
	char name[64];
	int fd;             /* /run/netns/NAME, or -1 before it exists */
	int diag, rt;       /* netlink sockets created inside it, or -1 */
	int tcp;            /* sampled for TCP */
	int last_err;       /* last reported error (0: none pending) */
};

struct qdev {
	int ns;             /* index into g_ns */
	char dev[IFNAMSIZ];
	int ifindex;        /* 0: not resolved */
	int last_err;
};

static struct netns g_ns[MAX_NS];
static int g_nns;
static struct qdev g_dev[MAX_DEVS];
static int g_ndev;
static int g_self_ns = -1;
static unsigned long long g_tick, g_errors, g_records;
static long long g_t; /* CLOCK_MONOTONIC at the start of the current tick: every record's t_ns */
static int g_filter_dport = -1, g_filter_port = -1;

static void emit_error(long long t, const char *ns, const char *dev, const char *what, int err, int *last)
{
	g_errors++;
	if (*last == err)
		return; /* reported already */
	*last = err;
	rec_begin();
	j_u64("t_ns", (unsigned long long)t);
	j_u64("tick", g_tick);
	j_str("kind", "error", 16);
	j_str("ns", ns, 64);
	if (dev)
		j_str("dev", dev, IFNAMSIZ);
	j_str("what", what, 32);
	j_s64("errno", err);
	j_str("msg", strerror(err), 128);
	rec_end();
}

static int find_ns(const char *name)
{
	for (int i = 0; i < g_nns; i++)
		if (!strcmp(g_ns[i].name, name))
			return i;
	if (g_nns >= MAX_NS)
		return -1;
	struct netns *n = &g_ns[g_nns];
	snprintf(n->name, sizeof(n->name), "%s", name);
	n->fd = n->diag = n->rt = -1;
	return g_nns++;
}

/* Open the namespace and its netlink sockets if not yet done. 0 or an errno. */
static int ns_ready(struct netns *n)
{
	if (n->diag >= 0 && n->rt >= 0)
		return 0;
	int own = !strcmp(n->name, ".");
	if (n->fd < 0 && !own) {
		char path[96];
		snprintf(path, sizeof(path), "/run/netns/%s", n->name);
		n->fd = open(path, O_RDONLY | O_CLOEXEC);
		if (n->fd < 0)
			return errno;
	}
	if (!own && setns(n->fd, CLONE_NEWNET) < 0)
		return errno;
	int err = 0;
	if (n->diag < 0) {
		n->diag = nl_socket(NETLINK_SOCK_DIAG);
		if (n->diag < 0) {
			err = -n->diag;
			n->diag = -1;
		}
	}
	if (n->rt < 0 && !err) {
		n->rt = nl_socket(NETLINK_ROUTE);
		if (n->rt < 0) {
			err = -n->rt;
			n->rt = -1;
		}
	}
	if (!own && setns(g_self_ns, CLONE_NEWNET) < 0) {
		/* cannot return to our own namespace: later namespaces would be opened relative to
		 * this one; names in /run/netns are absolute, so this is harmless but reported */
		err = err ? err : errno;
	}
	return err;
}

static void drop_socket(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

/* ------------------------------------------------------------------ TCP */

struct tcp_ctx {
	const char *ns;
	long long t;
};

static void ip4(char *out, size_t n, const __be32 *a)
{
	const unsigned char *b = (const unsigned char *)a;
	snprintf(out, n, "%u.%u.%u.%u", b[0], b[1], b[2], b[3]);
}

static unsigned be16(__be16 v)
{
	const unsigned char *b = (const unsigned char *)&v;
	return (unsigned)b[0] << 8 | b[1];
}

static void on_tcp(const struct nlmsghdr *h, void *vctx)
{
	const struct tcp_ctx *c = vctx;
	if (h->nlmsg_type != SOCK_DIAG_BY_FAMILY || h->nlmsg_len < NLMSG_LENGTH(sizeof(struct inet_diag_msg)))
		return;
	const struct inet_diag_msg *m = NLMSG_DATA(h);
	if (m->idiag_family != AF_INET)
		return;
	unsigned sport = be16(m->id.idiag_sport), dport = be16(m->id.idiag_dport);
	if (g_filter_dport >= 0 || g_filter_port >= 0) { /* both given: either matches */
		int keep = (int)dport == g_filter_dport || (g_filter_port >= 0 && ((int)dport == g_filter_port ||
										  (int)sport == g_filter_port));
		if (!keep)
			return;
	}
	const unsigned char *info = NULL, *cc_info = NULL;
	size_t info_len = 0, cc_len = 0;
	int cc_type = 0;
	const char *cc = NULL;
	size_t cc_name_len = 0;
	int alen = (int)h->nlmsg_len - (int)NLMSG_LENGTH(sizeof(*m));
	for (const struct rtattr *a = (const struct rtattr *)(m + 1); RTA_OK(a, alen); a = RTA_NEXT(a, alen)) {
		switch (ATTR_TYPE(a)) {
		case INET_DIAG_INFO:
			info = RTA_DATA(a);
			info_len = RTA_PAYLOAD(a);
			break;
		case INET_DIAG_CONG:
			cc = RTA_DATA(a);
			cc_name_len = RTA_PAYLOAD(a);
			break;
		case INET_DIAG_VEGASINFO:
		case INET_DIAG_DCTCPINFO:
		case INET_DIAG_BBRINFO:
			cc_type = ATTR_TYPE(a);
			cc_info = RTA_DATA(a);
			cc_len = RTA_PAYLOAD(a);
			break;
		}
	}
	char src[16], dst[16];
	ip4(src, sizeof(src), m->id.idiag_src);
	ip4(dst, sizeof(dst), m->id.idiag_dst);
	rec_begin();
	j_u64("t_ns", (unsigned long long)c->t);
	j_u64("tick", g_tick);
	j_str("kind", "tcp", 8);
	j_str("ns", c->ns, 64);
	j_str("src", src, sizeof(src));
	j_u64("sport", sport);
	j_str("dst", dst, sizeof(dst));
	j_u64("dport", dport);
	j_u64("state", m->idiag_state);
	j_u64("cookie", (unsigned long long)m->id.idiag_cookie[0] | (unsigned long long)m->id.idiag_cookie[1] << 32);
	if (cc)
		j_str("cc", cc, cc_name_len);
	else
		j_null("cc");
	j_u64("info_len", info_len);
	if (info) {
		j_obj_begin("info");
		emit_tcp_info(info, info_len);
		j_obj_end();
	} else {
		j_null("info");
	}
	if (!cc_info) {
		j_null("cc_info");
	} else {
		j_obj_begin("cc_info");
		if (cc_type == INET_DIAG_DCTCPINFO) {
			j_str("attr", "dctcp", 8);
			emit_fields(dctcp_tbl, NELEM(dctcp_tbl), cc_info, cc_len);
		} else if (cc_type == INET_DIAG_BBRINFO) {
			j_str("attr", "bbr", 8);
			struct tcp_bbr_info b;
			memset(&b, 0, sizeof(b));
			memcpy(&b, cc_info, cc_len < sizeof(b) ? cc_len : sizeof(b));
			if (cc_len >= offsetof(struct tcp_bbr_info, bbr_bw_hi) + 4)
				j_u64("bw", (unsigned long long)b.bbr_bw_hi << 32 | b.bbr_bw_lo);
			if (cc_len >= offsetof(struct tcp_bbr_info, bbr_min_rtt) + 4)
				j_u64("min_rtt", b.bbr_min_rtt);
			if (cc_len >= offsetof(struct tcp_bbr_info, bbr_pacing_gain) + 4)
				j_u64("pacing_gain", b.bbr_pacing_gain);
			if (cc_len >= offsetof(struct tcp_bbr_info, bbr_cwnd_gain) + 4)
				j_u64("cwnd_gain", b.bbr_cwnd_gain);
		} else {
			j_str("attr", "vegas", 8);
			emit_fields(vegas_tbl, NELEM(vegas_tbl), cc_info, cc_len);
		}
		j_obj_end();
	}
	rec_end();
	g_records++;
}

static void sample_tcp(struct netns *n)
{
	struct {
		struct nlmsghdr nlh;
		struct inet_diag_req_v2 r;
	} req;
	memset(&req, 0, sizeof(req));
	req.nlh.nlmsg_len = sizeof(req);
	req.nlh.nlmsg_type = SOCK_DIAG_BY_FAMILY;
	req.nlh.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
	req.r.sdiag_family = AF_INET;
	req.r.sdiag_protocol = IPPROTO_TCP;
	req.r.idiag_states = TCP_STATE_MASK;
	req.r.idiag_ext = (1 << (INET_DIAG_INFO - 1)) | (1 << (INET_DIAG_VEGASINFO - 1)) | (1 << (INET_DIAG_CONG - 1));
	struct tcp_ctx c = { n->name, g_t };
	int err = nl_dump(n->diag, &req.nlh, on_tcp, &c);
	if (err) {
		emit_error(c.t, n->name, NULL, "tcp_dump", -err, &n->last_err);
		if (err == -EOVERFLOW || err == -ETIMEDOUT || err == -EMSGSIZE)
			drop_socket(&n->diag); /* an unfinished dump: replace the socket next tick */
	} else {
		n->last_err = 0;
	}
}

/* ------------------------------------------------------------------ qdiscs, classes */

struct tc_ctx {
	const char *ns, *dev;
	int ifindex;
	long long t;
	int qdiscs;    /* qdisc records of this device in this dump */
	int classful;  /* one of them has classes with statistics of their own */
};

/* qdiscs whose classes are worth a RTM_GETTCLASS dump (classes with their own statistics;
 * netem/tbf classes only mirror their child, dualpi2's have none) */
static int classful_kind(const char *kind)
{
	static const char *const kinds[] = { "htb", "hfsc", "drr", "qfq", "ets", "prio", "multiq", "mqprio" };
	for (size_t i = 0; i < NELEM(kinds); i++)
		if (!strcmp(kind, kinds[i]))
			return 1;
	return 0;
}

static void fmt_handle(char *out, size_t n, unsigned h)
{
	if (h == TC_H_ROOT)
		snprintf(out, n, "root");
	else if (h == TC_H_INGRESS)
		snprintf(out, n, "ingress");
	else if (TC_H_MIN(h))
		snprintf(out, n, "%x:%x", TC_H_MAJ(h) >> 16, TC_H_MIN(h));
	else
		snprintf(out, n, "%x:", TC_H_MAJ(h) >> 16);
}

static void emit_xstats(const char *kind, int is_class, const unsigned char *x, size_t len)
{
	const struct fld *tbl = NULL;
	size_t n = 0;
	j_obj_begin("xstats");
	if (!strcmp(kind, "dualpi2") && !is_class) {
		tbl = dualpi2_tbl, n = NELEM(dualpi2_tbl);
	} else if (!strcmp(kind, "fq_codel") && len >= 4) {
		uint32_t type;
		memcpy(&type, x, 4);
		j_u64("type", type);
		if (type == TCA_FQ_CODEL_XSTATS_QDISC)
			tbl = fq_codel_qd_tbl, n = NELEM(fq_codel_qd_tbl);
		else if (type == TCA_FQ_CODEL_XSTATS_CLASS)
			tbl = fq_codel_cl_tbl, n = NELEM(fq_codel_cl_tbl);
	} else if (!strcmp(kind, "codel") && !is_class) {
		tbl = codel_tbl, n = NELEM(codel_tbl);
	} else if (!strcmp(kind, "pie") && !is_class) {
		tbl = pie_tbl, n = NELEM(pie_tbl);
	} else if (!strcmp(kind, "fq") && !is_class) {
		tbl = fq_tbl, n = NELEM(fq_tbl);
	} else if (!strcmp(kind, "htb") && is_class) {
		tbl = htb_tbl, n = NELEM(htb_tbl);
	}
	if (tbl)
		emit_fields(tbl, n, x, len);
	else
		j_hex("hex", x, len);
	j_obj_end();
}

static void on_tc(const struct nlmsghdr *h, void *vctx)
{
	struct tc_ctx *c = vctx;
	int is_class;
	if (h->nlmsg_type == RTM_NEWQDISC)
		is_class = 0;
	else if (h->nlmsg_type == RTM_NEWTCLASS)
		is_class = 1;
	else
		return;
	if (h->nlmsg_len < NLMSG_LENGTH(sizeof(struct tcmsg)))
		return;
	const struct tcmsg *t = NLMSG_DATA(h);
	if (t->tcm_ifindex != c->ifindex)
		return;
	/* A class whose handle is its qdisc's handle comes from class ops without a .dump
	 * (dualpi2's two filter-only classes, net/sched/sch_api.c tc_fill_tclass): no data. */
	if (is_class && t->tcm_handle == t->tcm_parent)
		return;
	char kind[IFNAMSIZ * 2] = "";
	const unsigned char *app = NULL, *legacy_x = NULL;
	size_t app_len = 0, legacy_x_len = 0;
	struct gnet_stats_basic basic;
	struct gnet_stats_queue queue;
	struct tc_stats old;
	int have_basic = 0, have_queue = 0, have_old = 0;
	unsigned long long pkt64 = 0;
	int have_pkt64 = 0;
	memset(&basic, 0, sizeof(basic));
	memset(&queue, 0, sizeof(queue));
	memset(&old, 0, sizeof(old));
	int alen = (int)h->nlmsg_len - (int)NLMSG_LENGTH(sizeof(*t));
	for (const struct rtattr *a = (const struct rtattr *)(t + 1); RTA_OK(a, alen); a = RTA_NEXT(a, alen)) {
		size_t pl = RTA_PAYLOAD(a);
		switch (ATTR_TYPE(a)) {
		case TCA_KIND:
			snprintf(kind, sizeof(kind), "%.*s", (int)(pl < sizeof(kind) ? pl : sizeof(kind) - 1),
				 (const char *)RTA_DATA(a));
			break;
		case TCA_XSTATS:
			legacy_x = RTA_DATA(a), legacy_x_len = pl;
			break;
		case TCA_STATS:
			memcpy(&old, RTA_DATA(a), pl < sizeof(old) ? pl : sizeof(old));
			have_old = 1;
			break;
		case TCA_STATS2: {
			int nlen = (int)pl;
			for (const struct rtattr *s = RTA_DATA(a); RTA_OK(s, nlen); s = RTA_NEXT(s, nlen)) {
				size_t sl = RTA_PAYLOAD(s);
				switch (ATTR_TYPE(s)) {
				case TCA_STATS_BASIC:
					memcpy(&basic, RTA_DATA(s), sl < sizeof(basic) ? sl : sizeof(basic));
					have_basic = 1;
					break;
				case TCA_STATS_PKT64:
					if (sl >= 8) {
						memcpy(&pkt64, RTA_DATA(s), 8);
						have_pkt64 = 1;
					}
					break;
				case TCA_STATS_QUEUE:
					memcpy(&queue, RTA_DATA(s), sl < sizeof(queue) ? sl : sizeof(queue));
					have_queue = 1;
					break;
				case TCA_STATS_APP:
					app = RTA_DATA(s), app_len = sl;
					break;
				}
			}
			break;
		}
		}
	}
	if (!have_basic && have_old) {
		basic.bytes = old.bytes;
		basic.packets = old.packets;
		have_basic = 1;
	}
	if (!have_queue && have_old) {
		queue.qlen = old.qlen;
		queue.backlog = old.backlog;
		queue.drops = old.drops;
		queue.overlimits = old.overlimits;
		have_queue = 1;
	}
	if (!app)
		app = legacy_x, app_len = legacy_x_len;
	if (!is_class) {
		c->qdiscs++;
		c->classful |= classful_kind(kind);
	}
	char handle[24], parent[24];
	fmt_handle(handle, sizeof(handle), t->tcm_handle);
	fmt_handle(parent, sizeof(parent), t->tcm_parent);
	rec_begin();
	j_u64("t_ns", (unsigned long long)c->t);
	j_u64("tick", g_tick);
	j_str("kind", is_class ? "class" : "qdisc", 8);
	j_str("ns", c->ns, 64);
	j_str("dev", c->dev, IFNAMSIZ);
	j_str("type", kind, sizeof(kind));
	j_str("handle", handle, sizeof(handle));
	j_str("parent", parent, sizeof(parent));
	if (have_basic) {
		j_u64("bytes", basic.bytes);
		j_u64("packets", have_pkt64 ? pkt64 : basic.packets);
	}
	if (have_queue) {
		j_u64("qlen", queue.qlen);
		j_u64("backlog", queue.backlog);
		j_u64("drops", queue.drops);
		j_u64("requeues", queue.requeues);
		j_u64("overlimits", queue.overlimits);
	}
	if (app)
		emit_xstats(kind, is_class, app, app_len);
	else
		j_null("xstats");
	rec_end();
	g_records++;
}

static int dump_tc(struct netns *n, struct qdev *d, struct tc_ctx *c, int type)
{
	struct {
		struct nlmsghdr nlh;
		struct tcmsg t;
	} req;
	memset(&req, 0, sizeof(req));
	req.nlh.nlmsg_len = sizeof(req);
	req.nlh.nlmsg_type = (unsigned short)type;
	req.nlh.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
	req.t.tcm_family = AF_UNSPEC;
	req.t.tcm_ifindex = c->ifindex; /* the kernel dumps only this device (tc_dump_qdisc, tc_dump_tclass) */
	int err = nl_dump(n->rt, &req.nlh, on_tc, c);
	if (err) {
		emit_error(c->t, n->name, d->dev, type == RTM_GETQDISC ? "qdisc_dump" : "class_dump", -err, &d->last_err);
		if (err == -EOVERFLOW || err == -ETIMEDOUT || err == -EMSGSIZE)
			drop_socket(&n->rt);
	}
	return err;
}

static int resolve_ifindex(struct netns *n, struct qdev *d)
{
	struct ifreq ifr;
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", d->dev);
	if (ioctl(n->rt, SIOCGIFINDEX, &ifr) < 0) {
		emit_error(g_t, n->name, d->dev, "ifindex", errno, &d->last_err);
		d->ifindex = 0;
		return -1;
	}
	d->ifindex = ifr.ifr_ifindex;
	return 0;
}

static void sample_dev(struct qdev *d)
{
	struct netns *n = &g_ns[d->ns];
	struct tc_ctx c = { n->name, d->dev, 0, g_t, 0, 0 };
	/* The ifindex is cached. Every device has a root qdisc (at least noqueue), so a dump
	 * without records means the device was replaced or removed: resolve its name again
	 * (a device created after the probe started is found the same way). */
	for (int attempt = 0; attempt < 2; attempt++) {
		if (!d->ifindex && resolve_ifindex(n, d) < 0)
			return;
		c.ifindex = d->ifindex;
		c.qdiscs = c.classful = 0;
		if (dump_tc(n, d, &c, RTM_GETQDISC))
			return;
		if (c.qdiscs)
			break;
		d->ifindex = 0;
	}
	if (!c.qdiscs)
		return;
	if (c.classful && dump_tc(n, d, &c, RTM_GETTCLASS))
		return;
	d->last_err = 0;
}

/* ------------------------------------------------------------------ one tick */

static void sample_tick(void)
{
	for (int i = 0; i < g_nns; i++) {
		struct netns *n = &g_ns[i];
		int err = ns_ready(n);
		if (err) {
			emit_error(g_t, n->name, NULL, "open_netns", err, &n->last_err);
			continue;
		}
		if (n->tcp)
			sample_tcp(n);
	}
	for (int i = 0; i < g_ndev; i++)
		if (g_ns[g_dev[i].ns].rt >= 0)
			sample_dev(&g_dev[i]);
}

/* ------------------------------------------------------------------ arguments */

static const char *g_prog = "l4slab-probe";

__attribute__((noreturn, format(printf, 1, 2))) static void usage_error(const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "%s: ", g_prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
	exit(2);
}

static void usage(void)
{
	printf("usage: %s --out FILE|- (--duration D [--interval I] | --once)\n"
	       "          [--tcp-ns NS[,NS...]]... [--qdisc NS:DEV]... [--qdisc-ns NS --qdisc-dev DEV]\n"
	       "          [--filter-dport N|none] [--filter-port N|none]\n"
	       "  D, I: integer with unit ns|us|ms|s (I: 1ms..3600s, default 100ms; D: 0..7d)\n"
	       "  NS: a name in /run/netns ([A-Za-z0-9._-], max 63), or '.' for the probe's own namespace\n"
	       "  --filter-dport: only sockets whose remote port is N; --filter-port: local or remote port N\n",
	       g_prog);
}

static long long parse_time(const char *opt, const char *s, long long lo, long long hi, const char *allowed)
{
	long long ns;
	if (!time_ns_in(s, lo, hi, &ns))
		usage_error("%s '%s': allowed %s", opt, s, allowed);
	return ns;
}

static int parse_port(const char *opt, const char *s)
{
	if (!strcmp(s, "none"))
		return -1;
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (end == s || *end || errno || v < 1 || v > 65535)
		usage_error("%s '%s': allowed a port 1..65535 or 'none'", opt, s);
	return (int)v;
}

static void add_dev(const char *opt, const char *ns, const char *dev)
{
	if (!valid_name(ns, 63, NULL))
		usage_error("%s: namespace '%s': allowed [A-Za-z0-9._-], 1..63 characters, or '.'", opt, ns);
	if (!valid_name(dev, IFNAMSIZ - 1, "@") || !strcmp(dev, "."))
		usage_error("%s: device '%s': allowed [A-Za-z0-9._@-], 1..%d characters", opt, dev, IFNAMSIZ - 1);
	int k = find_ns(ns);
	if (k < 0)
		usage_error("%s: at most %d namespaces in all", opt, MAX_NS);
	for (int i = 0; i < g_ndev; i++)
		if (g_dev[i].ns == k && !strcmp(g_dev[i].dev, dev))
			return;
	if (g_ndev >= MAX_DEVS)
		usage_error("%s: at most %d devices", opt, MAX_DEVS);
	g_dev[g_ndev].ns = k;
	snprintf(g_dev[g_ndev].dev, IFNAMSIZ, "%s", dev);
	g_ndev++;
}

int main(int argc, char **argv)
{
	const char *out = NULL, *qns = NULL, *qdev = NULL;
	long long interval = 100 * 1000000LL, duration = -1;
	int once = 0;
	if (argc > 0 && argv[0] && argv[0][0])
		g_prog = argv[0];
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage();
			return 0;
		}
		if (!strcmp(a, "--once")) {
			once = 1;
			continue;
		}
		static const char *const with_value[] = { "--out", "--interval", "--duration", "--tcp-ns", "--qdisc",
							  "--qdisc-ns", "--qdisc-dev", "--filter-dport", "--filter-port" };
		int known = 0;
		for (size_t k = 0; k < NELEM(with_value); k++)
			known |= !strcmp(a, with_value[k]);
		if (!known)
			usage_error("unknown argument '%s': allowed --out, --interval, --duration, --once, --tcp-ns, --qdisc, "
				    "--qdisc-ns, --qdisc-dev, --filter-dport, --filter-port, --help",
				    a);
		if (i + 1 >= argc)
			usage_error("%s needs a value", a);
		const char *v = argv[++i];
		if (!strcmp(a, "--out")) {
			if (!*v)
				usage_error("--out '': allowed a file path or '-' (standard output)");
			out = v;
		} else if (!strcmp(a, "--interval")) {
			interval = parse_time(a, v, 1000000LL, 3600 * NSEC, "1ms..3600s as an integer with unit ns|us|ms|s");
		} else if (!strcmp(a, "--duration")) {
			duration = parse_time(a, v, 0, 7 * 86400 * NSEC, "0..7 days as an integer with unit ns|us|ms|s");
		} else if (!strcmp(a, "--tcp-ns")) {
			char list[1024];
			if (strlen(v) >= sizeof(list))
				usage_error("--tcp-ns: list too long (allowed up to %zu characters)", sizeof(list) - 1);
			snprintf(list, sizeof(list), "%s", v);
			char *save = NULL;
			int any = 0;
			for (char *tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
				if (!valid_name(tok, 63, NULL))
					usage_error("--tcp-ns: namespace '%s': allowed [A-Za-z0-9._-], 1..63 characters, or '.'", tok);
				int k = find_ns(tok);
				if (k < 0)
					usage_error("--tcp-ns: at most %d namespaces in all", MAX_NS);
				g_ns[k].tcp = 1;
				any = 1;
			}
			if (!any)
				usage_error("--tcp-ns '%s': allowed a comma-separated list of namespace names", v);
		} else if (!strcmp(a, "--qdisc")) {
			char pair[128];
			const char *colon = strchr(v, ':');
			if (!colon || strlen(v) >= sizeof(pair))
				usage_error("--qdisc '%s': allowed NS:DEV (namespace name, colon, device name)", v);
			snprintf(pair, sizeof(pair), "%s", v);
			pair[colon - v] = 0;
			add_dev(a, pair, pair + (colon - v) + 1);
		} else if (!strcmp(a, "--qdisc-ns")) {
			if (qns)
				usage_error("--qdisc-ns given twice: allowed once (use --qdisc NS:DEV for more)");
			qns = v;
		} else if (!strcmp(a, "--qdisc-dev")) {
			if (qdev)
				usage_error("--qdisc-dev given twice: allowed once (use --qdisc NS:DEV for more)");
			qdev = v;
		} else if (!strcmp(a, "--filter-dport")) {
			g_filter_dport = parse_port(a, v);
		} else if (!strcmp(a, "--filter-port")) {
			g_filter_port = parse_port(a, v);
		}
	}
	if (!!qns != !!qdev)
		usage_error("%s: allowed only together with %s", qns ? "--qdisc-ns" : "--qdisc-dev",
			    qns ? "--qdisc-dev" : "--qdisc-ns");
	if (qns)
		add_dev("--qdisc-ns/--qdisc-dev", qns, qdev);
	if (!out)
		usage_error("--out is required: allowed a file path or '-' (standard output)");
	if (once && duration >= 0)
		usage_error("--once: allowed without --duration (one sample)");
	if (!once && duration < 0)
		usage_error("--duration is required (or --once): allowed 0..7 days as an integer with unit ns|us|ms|s");
	if (g_nns == 0)
		usage_error("nothing to sample: allowed --tcp-ns NS[,NS...] and/or --qdisc NS:DEV");
	unsigned long long n_ticks = once ? 1 : (unsigned long long)(duration / interval) + 1;
	if (n_ticks > MAX_TICKS)
		usage_error("--duration/--interval: %llu ticks, allowed at most %llu", n_ticks, MAX_TICKS);

	if (strcmp(out, "-")) {
		g_out = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (g_out < 0) {
			fprintf(stderr, "%s: --out '%s': %s\n", g_prog, out, strerror(errno));
			return 1;
		}
	}
	g_self_ns = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	if (g_self_ns < 0) {
		fprintf(stderr, "%s: /proc/self/ns/net: %s\n", g_prog, strerror(errno));
		return 1;
	}
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sa.sa_flags = SA_RESTART; /* netlink and write calls resume; clock_nanosleep never does */
	sigemptyset(&sa.sa_mask);
	sigaddset(&sa.sa_mask, SIGTERM);
	sigaddset(&sa.sa_mask, SIGINT);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	/* wake at the deadline itself, not up to the default 50 us timer slack later */
	prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);

	long long start = now_ns();
	rec_begin();
	j_str("kind", "start", 8);
	j_u64("t_ns", (unsigned long long)start);
	j_u64("interval_ns", (unsigned long long)interval);
	j_u64("version", PROBE_VERSION);
	j_u64("duration_ns", once ? 0 : (unsigned long long)duration);
	j_u64("ticks_planned", n_ticks);
	j_u64("tcpi_size", sizeof(struct tcp_info));
	j_key("tcp_ns");
	ob_raw("[");
	for (int i = 0, first = 1; i < g_nns; i++)
		if (g_ns[i].tcp) {
			ob_printf("%s\"%s\"", first ? "" : ",", g_ns[i].name);
			first = 0;
		}
	ob_raw("]");
	j_key("qdisc");
	ob_raw("[");
	for (int i = 0; i < g_ndev; i++)
		ob_printf("%s\"%s:%s\"", i ? "," : "", g_ns[g_dev[i].ns].name, g_dev[i].dev);
	ob_raw("]");
	rec_end();
	ob_flush();

	unsigned long long i = 0, done = 0, skipped = 0;
	while (i < n_ticks && !g_stop && !g_write_failed) {
		g_tick = i;
		g_t = now_ns();
		sample_tick();
		ob_flush();
		done++;
		if (++i >= n_ticks || g_stop || g_write_failed)
			break;
		long long deadline = start + (long long)i * interval;
		long long t = now_ns();
		if (t > deadline) { /* overran: resume at the next deadline in the future */
			unsigned long long j = (unsigned long long)((t - start) / interval) + 1;
			if (j > n_ticks)
				j = n_ticks;
			skipped += j - i;
			i = j;
			if (i >= n_ticks)
				break;
			deadline = start + (long long)i * interval;
		}
		sleep_until(deadline);
	}
	const char *reason = g_write_failed ? "write_error" : g_stop ? "signal" : "done";
	rec_begin();
	j_str("kind", "end", 8);
	j_u64("t_ns", (unsigned long long)now_ns());
	j_u64("ticks", done);
	j_u64("skipped", skipped);
	j_u64("records", g_records);
	j_u64("errors", g_errors);
	j_u64("dropped", ob.dropped);
	j_str("reason", reason, 16);
	if (g_stop)
		j_s64("signal", g_stop);
	rec_end();
	ob_flush();
	if (g_out != 1)
		close(g_out);
	return g_write_failed ? 1 : 0;
}
