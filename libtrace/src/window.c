/* window.c: time windows and times as every tool's --window takes them. */
#include "internal.h"

/* "1.5s", "200ms", "30us", "12ns", "2min", "1500" (microseconds): exact
 * integer arithmetic on the decimal digits, no double in between. */
static int parse_time(const char *s, const char *end, int64_t *ns)
{
	int neg = 0;
	if (s < end && *s == '-')
		neg = 1, s++;
	int64_t ip = 0, frac = 0, fscale = 1;
	const char *p = s;
	for (; p < end && *p >= '0' && *p <= '9'; p++)
		if (__builtin_mul_overflow(ip, 10, &ip) || __builtin_add_overflow(ip, *p - '0', &ip))
			return TK_ERR_ARG;
	int digits = p > s;
	if (p < end && *p == '.')
		for (p++; p < end && *p >= '0' && *p <= '9'; p++, digits = 1)
			if (fscale < 1000000000000LL)
				frac = frac * 10 + (*p - '0'), fscale *= 10;
	if (!digits)
		return TK_ERR_ARG;
	static const struct {
		const char *u;
		int64_t mul;
	} units[] = {{"ns", 1}, {"us", 1000}, {"ms", 1000000}, {"s", 1000000000}, {"min", 60000000000}, {"", 1000}};
	size_t ul = (size_t)(end - p);
	for (size_t i = 0; i < sizeof units / sizeof *units; i++) {
		if (strlen(units[i].u) != ul || strncmp(p, units[i].u, ul))
			continue;
		int64_t v;
		if (__builtin_mul_overflow(ip, units[i].mul, &v) ||
		    __builtin_add_overflow(v, (int64_t)((__int128)frac * units[i].mul / fscale), &v))
			return TK_ERR_ARG;
		*ns = neg ? -v : v;
		return 0;
	}
	return TK_ERR_ARG;
}

int tk_time_parse(const char *text, int64_t *ns)
{
	if (!text || !ns)
		return TK_ERR_ARG;
	return parse_time(text, text + strlen(text), ns);
}

/* One end, "" for open; *rel from a leading '+'. */
static int parse_end(const char *s, const char *e, int64_t open, int64_t *v, int *rel)
{
	*rel = 0;
	*v = open;
	if (s == e)
		return 0;
	if (*s == '+')
		*rel = 1, s++;
	return parse_time(s, e, v);
}

int tk_window_parse(const char *text, tk_window *w)
{
	if (!text || !w)
		return TK_ERR_ARG;
	const char *colon = strchr(text, ':'), *e = text + strlen(text);
	if (!colon || strchr(colon + 1, ':'))
		return TK_ERR_ARG;
	tk_window n = {1, 0, 0, 0, 0};
	if (parse_end(text, colon, INT64_MIN, &n.lo, &n.lo_rel) ||
	    parse_end(colon + 1, e, INT64_MAX, &n.hi, &n.hi_rel))
		return TK_ERR_ARG;
	if (n.lo_rel == n.hi_rel && n.lo > n.hi)
		return TK_ERR_ARG;
	*w = n;
	return 0;
}

tk_window tk_window_at(const tk_window *w, int64_t first_ts)
{
	tk_window r = *w;
	if (r.lo_rel && r.lo != INT64_MIN)
		r.lo = tk__sat_add(first_ts, r.lo);
	if (r.hi_rel && r.hi != INT64_MAX)
		r.hi = tk__sat_add(first_ts, r.hi);
	r.lo_rel = r.hi_rel = 0;
	return r;
}
