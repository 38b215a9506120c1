// SPDX-License-Identifier: MIT
/*
 * l4slab-flow: the kernel backend guest's bulk TCP sender and receiver. One static program,
 * no fork/exec, written for l4slab.
 *
 *   l4slab-flow now
 *       print CLOCK_MONOTONIC in ns (the clock of --at and of every *_ns below)
 *   l4slab-flow clocks
 *       print CLOCK_MONOTONIC and CLOCK_REALTIME in ns, read together (a capture's clock)
 *   l4slab-flow recv --bind ADDR:PORT [--count N] [--netns NS] [--timeout D]
 *       listen on ADDR:PORT; accept N connections (default 1) one after another, read each
 *       until the peer's FIN (or a reset), count its bytes, close it; one JSON line per
 *       connection on stdout
 *   l4slab-flow send --to ADDR:PORT --cc NAME [--bytes N | --duration D] [--at T_NS]
 *                    [--netns NS] [--timeout D]
 *       set TCP_CONGESTION, sleep until the absolute CLOCK_MONOTONIC time T_NS
 *       (clock_nanosleep TIMER_ABSTIME; at once if it has passed), connect (the SYN leaves
 *       then) and write 256 KiB buffers:
 *         --bytes N     N bytes, then shutdown(SHUT_WR) (a FIN after the data) and wait for
 *                       the peer's close;
 *         --duration D  until T_NS + D, then abort the connection (SO_LINGER 0: a reset, the
 *                       unsent rest of the send buffer discarded, as an application that
 *                       stops sending and closes); with --bytes, whichever comes first (a
 *                       transfer not acknowledged by then is aborted);
 *         neither       until SIGTERM/SIGINT (or SIGKILL);
 *       one JSON line with its timings on stdout at the end.
 *
 * The receiver reads with MSG_TRUNC: tcp_recvmsg does everything it does for a read (the
 * sequence space is consumed, receive-buffer autotuning and window updates run) except
 * the copy into user memory. The sender writes without a user-space source (a zeroed
 * static buffer). Nothing here changes what TCP does: socket options other than
 * TCP_CONGESTION (and SO_REUSEADDR on the listener, SO_LINGER at a --duration end) are left
 * at the namespace's defaults.
 *
 * Both sides block in the kernel (read with MSG_WAITALL, write 256 KiB): a process returns
 * to user space once per buffer, not once per segment, which in User-Mode Linux saves two
 * host context switches a packet; what TCP sees is the same reader and writer (see recv).
 *
 * Bounds: every number is range-checked; waits (accept, connect, the peer's close, a
 * blocked read or write) end after --timeout (default 1 day: SO_RCVTIMEO/SO_SNDTIMEO);
 * --at at most 1 day ahead; --count at most 1024. Errors are one line on stderr ("l4slab-flow send: connect 10.2.0.1:5201:
 * Connection refused"), exit 2 for a usage error, 1 for a failure; the JSON line is still
 * written for a failed transfer ("end":"error").
 *
 * Build: gcc -O2 -static -Wall -Wextra flow.c -o l4slab-flow (args.h beside it)
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "args.h"

#define WRITE_CHUNK (256 * 1024)
#define READ_CHUNK (1024 * 1024)
#define MAX_BYTES (1LL << 50)         /* 1 PiB */
#define MAX_DURATION (7LL * 86400 * NSEC)
#define MAX_AHEAD (86400LL * NSEC)    /* --at at most a day ahead */
#define MAX_COUNT 1024
#define DEFAULT_TIMEOUT (86400LL * NSEC)
#define CC_NAME_MAX 16                /* TCP_CA_NAME_MAX */

static const char *g_role = "";
static volatile sig_atomic_t g_signal;
static char g_wbuf[WRITE_CHUNK];
static char g_rbuf[READ_CHUNK];       /* MSG_TRUNC: the kernel copies nothing into it */

static void on_signal(int sig) { g_signal = sig; }

__attribute__((noreturn, format(printf, 1, 2))) static void usage_error(const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "l4slab-flow%s%s: ", *g_role ? " " : "", g_role);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
	exit(2);
}

__attribute__((format(printf, 1, 2))) static void say_error(const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "l4slab-flow %s: ", g_role);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
}

static long long now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * NSEC + ts.tv_nsec;
}

static struct timespec to_ts(long long ns)
{
	struct timespec ts = {.tv_sec = ns / NSEC, .tv_nsec = ns % NSEC};
	return ts;
}

/* --- arguments ------------------------------------------------------------------------ */

static long long parse_int(const char *opt, const char *s, long long lo, long long hi)
{
	char *end;
	errno = 0;
	long long v = strtoll(s, &end, 10);
	if (end == s || *end || errno || v < lo || v > hi)
		usage_error("%s '%s': allowed an integer %lld..%lld", opt, s, lo, hi);
	return v;
}

static long long parse_time(const char *opt, const char *s, long long lo, long long hi)
{
	long long ns;
	if (!time_ns_in(s, lo, hi, &ns))
		usage_error("%s '%s': allowed an integer with unit ns|us|ms|s, %lldns..%llds", opt, s, lo, hi / NSEC);
	return ns;
}

static struct sockaddr_in parse_addr(const char *opt, const char *s)
{
	char host[64];
	const char *colon = strrchr(s, ':');
	struct sockaddr_in sa = {.sin_family = AF_INET};
	if (!colon || (size_t)(colon - s) >= sizeof(host) || colon == s)
		usage_error("%s '%s': allowed IPV4ADDR:PORT, e.g. 10.2.0.1:5201", opt, s);
	memcpy(host, s, (size_t)(colon - s));
	host[colon - s] = 0;
	if (inet_pton(AF_INET, host, &sa.sin_addr) != 1)
		usage_error("%s '%s': '%s' is not an IPv4 address", opt, s, host);
	sa.sin_port = htons((uint16_t)parse_int(opt, colon + 1, 1, 65535));
	return sa;
}

static void enter_netns(const char *name)
{
	char path[128];
	if (!valid_name(name, 63, NULL) || !strcmp(name, "."))
		usage_error("--netns '%s': allowed a name in /run/netns ([A-Za-z0-9._-], 1..63 characters)", name);
	snprintf(path, sizeof(path), "/run/netns/%s", name);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || setns(fd, CLONE_NEWNET) < 0) {
		say_error("--netns %s: %s: %s", name, fd < 0 ? "open" : "setns", strerror(errno));
		exit(1);
	}
	close(fd);
}

/* --- signals and timeouts ------------------------------------------------------------ */

static volatile sig_atomic_t g_deadline;

static void on_deadline(int sig)
{
	(void)sig;
	g_deadline = 1;
}

/* SIGTERM/SIGINT end a transfer (the JSON line is still written), SIGALRM marks a --duration
 * deadline; none restarts a system call, so a blocked read, write or connect returns. In the
 * guest's virtual time (time-travel=inf-cpu) no timer fires while a process runs, so a signal
 * always finds it blocked in the kernel. */
static void setup_signals(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal; /* no SA_RESTART */
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sa.sa_handler = on_deadline;
	sigaction(SIGALRM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
}

static void set_timeout(int fd, int opt, long long ns)
{
	if (ns < 1000000)
		ns = 1000000; /* SO_*TIMEO: a zero timeout would mean none */
	struct timeval tv = {.tv_sec = ns / NSEC, .tv_usec = (ns % NSEC) / 1000};
	setsockopt(fd, SOL_SOCKET, opt, &tv, sizeof(tv));
}

/* --- JSON ---------------------------------------------------------------------------------- */

static void j_time(const char *key, long long v)
{
	if (v)
		printf(",\"%s\":%lld", key, v);
	else
		printf(",\"%s\":null", key);
}

static const char *end_of(int err)
{
	if (g_signal)
		return "signal";
	if (err == EAGAIN || err == EWOULDBLOCK || err == EINPROGRESS)
		return "timeout";
	if (err == ECONNRESET || err == EPIPE)
		return "reset";
	return "error";
}

/* --- recv ---------------------------------------------------------------------------------- */

static int cmd_recv(int argc, char **argv)
{
	const char *bind_s = NULL, *netns = NULL;
	long long count = 1, timeout = DEFAULT_TIMEOUT;
	for (int i = 0; i < argc; i++) {
		const char *a = argv[i];
		if (i + 1 >= argc)
			usage_error("%s: needs a value (allowed --bind, --count, --netns, --timeout)", a);
		const char *v = argv[++i];
		if (!strcmp(a, "--bind"))
			bind_s = v;
		else if (!strcmp(a, "--count"))
			count = parse_int(a, v, 1, MAX_COUNT);
		else if (!strcmp(a, "--netns"))
			netns = v;
		else if (!strcmp(a, "--timeout"))
			timeout = parse_time(a, v, 1000000, MAX_DURATION);
		else
			usage_error("unknown argument '%s': allowed --bind, --count, --netns, --timeout", a);
	}
	if (!bind_s)
		usage_error("--bind ADDR:PORT is required");
	struct sockaddr_in sa = parse_addr("--bind", bind_s);
	setup_signals();
	if (netns)
		enter_netns(netns);
	int ls = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int one = 1;
	if (ls < 0 || setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    bind(ls, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(ls, (int)count) < 0) {
		say_error("listen on %s: %s", bind_s, strerror(errno));
		return 1;
	}
	set_timeout(ls, SO_RCVTIMEO, timeout); /* accept's bound */
	int rc = 0;
	for (long long k = 0; k < count; k++) {
		long long t_accept = 0, t_first = 0, t_last = 0, t_end = 0, bytes = 0, reads = 0;
		const char *end = "eof";
		int err = 0;
		int fd = accept4(ls, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0) {
			err = errno;
			end = end_of(err);
		} else {
			t_accept = now_ns();
			set_timeout(fd, SO_RCVTIMEO, timeout);
			/* MSG_WAITALL: the process stays in tcp_recvmsg, which consumes every segment as
			 * it arrives (tcp_rcv_space_adjust, tcp_cleanup_rbuf before each wait) and returns
			 * to user space once per READ_CHUNK, at the FIN or at a reset; MSG_TRUNC: no copy */
			for (;;) {
				ssize_t n = recv(fd, g_rbuf, READ_CHUNK, MSG_TRUNC | MSG_WAITALL);
				if (n > 0) {
					long long t = now_ns();
					if (!t_first)
						t_first = t;
					t_last = t;
					bytes += n;
					reads++;
					if (!g_signal)
						continue;
				}
				t_end = now_ns();
				if (n == 0)
					break;
				err = n < 0 ? errno : EINTR;
				end = end_of(err);
				break;
			}
			close(fd);
		}
		if (!strcmp(end, "reset") || !strcmp(end, "signal"))
			err = 0;
		printf("{\"role\":\"recv\",\"bind\":\"%s\",\"conn\":%lld", bind_s, k);
		j_time("accept_ns", t_accept);
		j_time("first_read_ns", t_first);
		j_time("last_read_ns", t_last);
		j_time("end_ns", t_end);
		printf(",\"bytes\":%lld,\"reads\":%lld,\"end\":\"%s\"", bytes, reads, end);
		if (err)
			printf(",\"error\":\"%s\"", strerror(err));
		printf("}\n");
		fflush(stdout);
		if (!strcmp(end, "signal"))
			break;
		if (err) {
			say_error("%s %s: %s", t_accept ? "read" : "accept", bind_s,
				  !strcmp(end, "timeout") ? "no progress within --timeout" : strerror(err));
			rc = 1;
			break;
		}
	}
	close(ls);
	return rc;
}

/* --- send ---------------------------------------------------------------------------------- */

static int cmd_send(int argc, char **argv)
{
	const char *to_s = NULL, *cc = NULL, *netns = NULL;
	long long bytes = -1, duration = -1, at = 0, timeout = DEFAULT_TIMEOUT;
	int have_at = 0;
	for (int i = 0; i < argc; i++) {
		const char *a = argv[i];
		if (i + 1 >= argc)
			usage_error("%s: needs a value (allowed --to, --cc, --bytes, --duration, --at, --netns, --timeout)", a);
		const char *v = argv[++i];
		if (!strcmp(a, "--to"))
			to_s = v;
		else if (!strcmp(a, "--cc"))
			cc = v;
		else if (!strcmp(a, "--bytes"))
			bytes = parse_int(a, v, 1, MAX_BYTES);
		else if (!strcmp(a, "--duration"))
			duration = parse_time(a, v, 1, MAX_DURATION);
		else if (!strcmp(a, "--at")) {
			at = parse_int(a, v, 0, INT64_MAX / 4);
			have_at = 1;
		} else if (!strcmp(a, "--netns"))
			netns = v;
		else if (!strcmp(a, "--timeout"))
			timeout = parse_time(a, v, 1000000, MAX_DURATION);
		else
			usage_error("unknown argument '%s': allowed --to, --cc, --bytes, --duration, --at, --netns, --timeout", a);
	}
	if (!to_s)
		usage_error("--to ADDR:PORT is required");
	if (!cc || !*cc || strlen(cc) >= CC_NAME_MAX)
		usage_error("--cc NAME is required (a congestion control name, 1..%d characters)", CC_NAME_MAX - 1);
	struct sockaddr_in sa = parse_addr("--to", to_s);
	long long t_start = now_ns();
	if (!have_at)
		at = t_start;
	if (at > t_start + MAX_AHEAD)
		usage_error("--at %lld: more than a day after now (%lld); allowed CLOCK_MONOTONIC ns", at, t_start);
	setup_signals();
	if (netns)
		enter_netns(netns);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		say_error("socket: %s", strerror(errno));
		return 1;
	}
	if (setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, cc, (socklen_t)strlen(cc)) < 0) {
		say_error("--cc %s: setsockopt TCP_CONGESTION: %s%s", cc, strerror(errno),
			  errno == ENOENT ? " (no such congestion control in this kernel)" : "");
		return 1;
	}
	long long deadline = duration >= 0 ? at + duration : 0;
	if (deadline) {
		/* the stop: SIGALRM at the absolute deadline interrupts whatever waits */
		timer_t timer;
		struct sigevent ev = {.sigev_notify = SIGEV_SIGNAL, .sigev_signo = SIGALRM};
		struct itimerspec its = {.it_value = to_ts(deadline)};
		if (timer_create(CLOCK_MONOTONIC, &ev, &timer) < 0 || timer_settime(timer, TIMER_ABSTIME, &its, NULL) < 0) {
			say_error("timer_create: %s", strerror(errno));
			return 1;
		}
	}
	long long t_connect = 0, t_established = 0, t_last_write = 0, t_shutdown = 0, t_peer_close = 0, t_end = 0;
	long long sent = 0, writes = 0;
	const char *end = "done";
	int err = 0;
	const char *what = "";
	/* the launch: an absolute time, so every sender of a testbed starts on one clock */
	struct timespec ts = to_ts(at);
	for (;;) {
		int r = clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
		if (r == 0)
			break;
		if (g_signal || g_deadline) {
			end = g_signal ? "signal" : "duration";
			goto out;
		}
		if (r != EINTR) {
			err = r;
			what = "clock_nanosleep";
			end = "error";
			goto out;
		}
	}
	t_connect = now_ns();
	set_timeout(fd, SO_SNDTIMEO, timeout); /* connect's and each write's bound */
	set_timeout(fd, SO_RCVTIMEO, timeout);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		err = errno;
		what = "connect";
		if (err == EINTR && g_deadline) {
			err = 0;
			end = "duration";
			goto abort;
		}
		end = end_of(err);
		goto out;
	}
	t_established = now_ns();
	/* blocking writes: the process sleeps in tcp_sendmsg while the send buffer is full and
	 * returns to user space once per WRITE_CHUNK */
	while (!(bytes >= 0 && sent >= bytes)) {
		if (g_deadline) {
			end = "duration";
			goto abort;
		}
		if (g_signal) {
			end = "signal";
			goto out;
		}
		size_t chunk = WRITE_CHUNK;
		if (bytes >= 0 && bytes - sent < (long long)chunk)
			chunk = (size_t)(bytes - sent);
		ssize_t n = write(fd, g_wbuf, chunk);
		if (n > 0) {
			sent += n;
			writes++;
			t_last_write = now_ns();
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue; /* a signal: the checks above */
		err = n < 0 ? errno : EIO;
		what = "write";
		end = end_of(err);
		goto out;
	}
	/* --bytes: a FIN after the data, then the peer's close (its FIN: it read everything) */
	if (shutdown(fd, SHUT_WR) < 0) {
		err = errno;
		what = "shutdown";
		end = "error";
		goto out;
	}
	t_shutdown = now_ns();
	for (;;) {
		ssize_t n = recv(fd, g_rbuf, sizeof(g_rbuf), MSG_TRUNC);
		if (n == 0) {
			t_peer_close = now_ns();
			break;
		}
		if (n > 0)
			continue;
		if (errno == EINTR && g_deadline) {
			end = "duration";
			goto abort;
		}
		if (errno == EINTR && !g_signal)
			continue;
		err = errno;
		what = "waiting for the peer's close";
		end = end_of(err);
		goto out;
	}
	goto out;
abort:
	/* the stop (--duration): a reset now, the rest of the send buffer discarded */
	{
		struct linger lg = {.l_onoff = 1, .l_linger = 0};
		setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
		t_end = now_ns();
		close(fd);
		fd = -1;
	}
out:
	if (!t_end)
		t_end = now_ns();
	if (fd >= 0)
		close(fd);
	if (!strcmp(end, "signal") || !strcmp(end, "reset"))
		err = err == ECONNRESET || err == EPIPE || err == EINTR ? 0 : err;
	printf("{\"role\":\"send\",\"to\":\"%s\",\"cc\":\"%s\",\"at_ns\":%lld", to_s, cc, at);
	j_time("connect_ns", t_connect);
	j_time("established_ns", t_established);
	j_time("last_write_ns", t_last_write);
	j_time("shutdown_ns", t_shutdown);
	j_time("peer_close_ns", t_peer_close);
	j_time("end_ns", t_end);
	printf(",\"bytes\":%lld,\"writes\":%lld,\"end\":\"%s\"", sent, writes, end);
	if (err)
		printf(",\"error\":\"%s: %s\"", what, !strcmp(end, "timeout") ? "no progress within --timeout" : strerror(err));
	printf("}\n");
	fflush(stdout);
	if (err) {
		say_error("%s %s: %s", what, to_s, !strcmp(end, "timeout") ? "no progress within --timeout" : strerror(err));
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	/* wake at the exact --at and --duration times: no timer slack (default 50 us) */
	prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
	if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		printf("usage: l4slab-flow now\n"
		       "       l4slab-flow clocks\n"
		       "       l4slab-flow recv --bind ADDR:PORT [--count N] [--netns NS] [--timeout D]\n"
		       "       l4slab-flow send --to ADDR:PORT --cc NAME [--bytes N | --duration D] [--at T_NS]\n"
		       "                        [--netns NS] [--timeout D]\n"
		       "  T_NS: CLOCK_MONOTONIC ns (l4slab-flow now); D: integer with unit ns|us|ms|s\n");
		return argc < 2 ? 2 : 0;
	}
	if (!strcmp(argv[1], "now")) {
		if (argc != 2)
			usage_error("now takes no arguments");
		printf("%lld\n", now_ns());
		return 0;
	}
	if (!strcmp(argv[1], "clocks")) {
		/* CLOCK_MONOTONIC and CLOCK_REALTIME read together: a packet capture's
		 * timestamps (CLOCK_REALTIME) on the probe's clock. Under time travel
		 * (inf-cpu) no time passes between the two reads. */
		struct timespec real;

		if (argc != 2)
			usage_error("clocks takes no arguments");
		long long mono = now_ns();
		clock_gettime(CLOCK_REALTIME, &real);
		printf("%lld %lld\n", mono, (long long)real.tv_sec * NSEC + real.tv_nsec);
		return 0;
	}
	if (!strcmp(argv[1], "recv")) {
		g_role = "recv";
		return cmd_recv(argc - 2, argv + 2);
	}
	if (!strcmp(argv[1], "send")) {
		g_role = "send";
		return cmd_send(argc - 2, argv + 2);
	}
	usage_error("unknown command '%s': allowed now, clocks, recv, send", argv[1]);
}
