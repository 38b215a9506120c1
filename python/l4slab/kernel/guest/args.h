// SPDX-License-Identifier: MIT
/*
 * What l4slab-probe (probe.c) and l4slab-flow (flow.c) check alike in their arguments:
 * a time with its unit and a network-namespace or device name. Each program words its
 * own one-line error around these (its option, the value, what is allowed).
 * Written for l4slab.
 */
#ifndef L4SLAB_GUEST_ARGS_H
#define L4SLAB_GUEST_ARGS_H

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#define NSEC 1000000000LL

/* A non-negative integer with the unit ns, us, ms or s (nothing after it) within
 * lo..hi ns: 1 and the time in *ns, else 0 (no overflow: v is checked against hi / unit
 * before it is multiplied). */
static inline int time_ns_in(const char *s, long long lo, long long hi, long long *ns)
{
	char *end;
	errno = 0;
	long long v = strtoll(s, &end, 10);
	long long mul = 0;
	if (end != s && !errno && v >= 0) {
		if (!strcmp(end, "ns"))
			mul = 1;
		else if (!strcmp(end, "us"))
			mul = 1000;
		else if (!strcmp(end, "ms"))
			mul = 1000000;
		else if (!strcmp(end, "s"))
			mul = NSEC;
	}
	if (!mul || v > hi / mul || v * mul < lo)
		return 0;
	*ns = v * mul;
	return 1;
}

/* 1..max characters of [A-Za-z0-9._-] and of `extra` (may be NULL), not "..": a name in
 * /run/netns (`ip netns add`) or a device name. "." passes: each caller says what it means. */
static inline int valid_name(const char *s, size_t max, const char *extra)
{
	size_t n = strlen(s);
	if (n == 0 || n > max)
		return 0;
	if (!strcmp(s, ".."))
		return 0;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
		      c == '.' || (extra && strchr(extra, c))))
			return 0;
	}
	return 1;
}

#endif
