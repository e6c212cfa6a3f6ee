/* fuzz_cli.c: fuzz harness for the tools' option values and trace-merge's --align FILE (libFuzzer, or a plain main() over files).
 *
 * The input's first byte picks the parser, the rest is its text:
 *   's' cli_parse_size (--memory, --max-size), 't' tk_time_parse,
 *   'w' tk_window_parse and tk_window_at (--window), 'f' tk_format_from_name
 *   (--to, -o), 'r' trace-merge's --ranks list, 'a' trace-merge's --align
 *   offsets file; any other byte runs the text through every one but the
 *   file.
 * cli_next() itself prints and exits by design (--help, usage errors), so
 * the pure parsers behind the options are fuzzed; trace-merge's --ranks
 * and --align parsers are static in tools/trace-merge.c, which is compiled
 * into this harness (its main renamed, its error messages silenced).
 *
 * Invariants: a size is -1 or at least 0, and an accepted one written
 * back in bytes (and in K when it is whole kibibytes) reads the same; an
 * accepted time written back in ns reads the same, and a plain number
 * reads as the same number with "us"; an accepted window written back with
 * its ends in ns (a '+' where relative, nothing where open) reads the same,
 * and tk_window_at() makes its relative ends absolute, saturating; an
 * accepted format name's canonical name reads as the same format; an
 * accepted --ranks list is of ranks of 0 or more and written back as
 * ranges reads the same; an offsets file is accepted exactly when every
 * line is, as trace-merge(1) describes it, blank or a comment or a rank
 * (an integer of 0 or more) and an offset (an integer in ns, or a time
 * with a unit), '#' starting a comment, and then gives the same offsets
 * in the same order. */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>

#include "fuzz_events.h"
#include "merge_int.h"
#include "../tools/cli.h"

#define WHO "fuzz_cli"

/* trace-merge.c, with its messages silenced and its main out of the way */
static void silent_err(const char *tool, const char *fmt, ...)
{
	(void)tool;
	(void)fmt;
}
#define cli_err silent_err
#define main trace_merge_main
#include "../tools/trace-merge.c"
#undef main
#undef cli_err

static void sizes(const char *s)
{
	int64_t v = cli_parse_size(s);
	FZ_CHECK(WHO, v >= -1, "size '%s' reads as %lld", s, (long long)v);
	if (v < 0)
		return;
	char t[64];
	snprintf(t, sizeof t, "%lld", (long long)v);
	FZ_CHECK(WHO, cli_parse_size(t) == v, "size '%s' reads as %lld, which reads as %lld", s, (long long)v,
	         (long long)cli_parse_size(t));
	if (v % 1024 == 0) {
		snprintf(t, sizeof t, "%lldK", (long long)(v / 1024));
		FZ_CHECK(WHO, cli_parse_size(t) == v, "size '%s' reads as %lld, '%s' as %lld", s, (long long)v, t,
		         (long long)cli_parse_size(t));
	}
}

static void times(const char *s)
{
	int64_t ns = 0, back = 0;
	if (tk_time_parse(s, &ns))
		return;
	char t[64];
	snprintf(t, sizeof t, "%lldns", (long long)ns);
	FZ_CHECK(WHO, tk_time_parse(t, &back) == 0 && back == ns, "time '%s' is %lld ns, '%s' reads as %lld", s,
	         (long long)ns, t, (long long)back);
	size_t n = strlen(s);
	if (n && n < 200 && strspn(s, "-0123456789.") == n) { /* a plain number is microseconds */
		char u[256];
		snprintf(u, sizeof u, "%sus", s);
		FZ_CHECK(WHO, tk_time_parse(u, &back) == 0 && back == ns, "'%s' is %lld ns, '%s' %lld", s, (long long)ns, u,
		         (long long)back);
	}
}

static void put_end(char *t, size_t cap, int64_t v, int rel, int64_t open)
{
	if (v == open && !rel)
		t[0] = 0;
	else
		snprintf(t, cap, "%s%lldns", rel ? "+" : "", (long long)v);
}

static int64_t sat(int64_t a, int64_t b)
{
	int64_t r;
	return __builtin_add_overflow(a, b, &r) ? (b > 0 ? INT64_MAX : INT64_MIN) : r;
}

static void windows(const char *s)
{
	tk_window w = {0}, back = {0};
	if (tk_window_parse(s, &w))
		return;
	FZ_CHECK(WHO, w.set && (w.lo_rel != w.hi_rel || w.lo <= w.hi), "window '%s' is [%lld, %lld]", s, (long long)w.lo,
	         (long long)w.hi);
	char lo[64], hi[64], t[160];
	put_end(lo, sizeof lo, w.lo, w.lo_rel, INT64_MIN);
	put_end(hi, sizeof hi, w.hi, w.hi_rel, INT64_MAX);
	snprintf(t, sizeof t, "%s:%s", lo, hi);
	FZ_CHECK(WHO, tk_window_parse(t, &back) == 0 && memcmp(&w, &back, sizeof w) == 0,
	         "window '%s' written back as '%s' reads differently", s, t);
	static const int64_t firsts[] = {0, 1700000000000000000, -5, INT64_MAX, INT64_MIN};
	for (size_t i = 0; i < sizeof firsts / sizeof *firsts; i++) {
		tk_window a = tk_window_at(&w, firsts[i]);
		int64_t want_lo = w.lo_rel && w.lo != INT64_MIN ? sat(firsts[i], w.lo) : w.lo;
		int64_t want_hi = w.hi_rel && w.hi != INT64_MAX ? sat(firsts[i], w.hi) : w.hi;
		FZ_CHECK(WHO, a.set && !a.lo_rel && !a.hi_rel && a.lo == want_lo && a.hi == want_hi,
		         "window '%s' at %lld is [%lld, %lld]", s, (long long)firsts[i], (long long)a.lo, (long long)a.hi);
	}
}

static void formats(const char *s)
{
	tk_writer_opts o = {0}, back = {0};
	tk_is_trace_name(s);
	if (tk_format_from_name(s, &o))
		return;
	const char *name = tk_format_name(o.format);
	FZ_CHECK(WHO, name && (o.gzip == 0 || o.gzip == 1), "'%s' reads as format %d, gzip %d", s, o.format, o.gzip);
	char t[64];
	snprintf(t, sizeof t, "%s%s", name, o.gzip ? ".gz" : "");
	FZ_CHECK(WHO, tk_format_from_name(t, &back) == 0 && back.format == o.format && back.gzip == o.gzip,
	         "'%s' reads as %s, gzip %d; '%s' as %d, gzip %d", s, name, o.gzip, t, back.format, back.gzip);
}

/* --ranks: short lists only (a range of a million ranks is taken one rank at a time) */
static void ranks(const char *s)
{
	size_t n = strlen(s), run = 0;
	if (n > 40)
		return;
	for (size_t i = 0; i < n; i++) {
		run = isdigit((unsigned char)s[i]) ? run + 1 : 0;
		if (run > 3)
			return;
	}
	merge_cli o, back;
	memset(&o, 0, sizeof o);
	memset(&back, 0, sizeof back);
	if (parse_ranks(&o, s) == 0) {
		char t[8192];
		size_t len = 0;
		for (size_t i = 0; i < o.n_ranks && len < sizeof t - 64; i++) {
			FZ_CHECK(WHO, o.ranks[i] >= 0, "--ranks '%s' gives rank %lld", s, (long long)o.ranks[i]);
			size_t j = i;
			while (j + 1 < o.n_ranks && o.ranks[j + 1] == o.ranks[j] + 1)
				j++;
			len += (size_t)snprintf(t + len, sizeof t - len, "%s%lld", len ? "," : "", (long long)o.ranks[i]);
			if (j > i)
				len += (size_t)snprintf(t + len, sizeof t - len, "-%lld", (long long)o.ranks[j]);
			i = j;
		}
		if (len < sizeof t - 64) {
			FZ_CHECK(WHO, parse_ranks(&back, t) == 0 && back.n_ranks == o.n_ranks &&
			         memcmp(back.ranks, o.ranks, o.n_ranks * sizeof *o.ranks) == 0,
			         "--ranks '%s' written back as '%s' reads differently", s, t);
		}
	}
	free(o.ranks);
	free(back.ranks);
}

/* ---- --align FILE ---- */

/* The file as trace-merge(1) describes it: 0 and the offsets, or the
 * 1-based number of the first bad line. Each line's text ends at a NUL
 * (the file is text). */
static int oracle_offsets(const char *p, size_t n, int64_t *rk, int64_t *off, size_t *count, size_t cap)
{
	*count = 0;
	int ln = 0;
	for (size_t i = 0; i < n;) {
		size_t e = i;
		while (e < n && p[e] != '\n')
			e++;
		ln++;
		char *line = malloc(e - i + 1);
		if (!line)
			return -1;
		memcpy(line, p + i, e - i);
		line[e - i] = 0;
		i = e + 1;
		char *h = strchr(line, '#');
		if (h)
			*h = 0;
		char *tok[3];
		int nt = 0;
		for (char *q = line; *q && nt < 3;) {
			while (*q && isspace((unsigned char)*q))
				q++;
			if (!*q)
				break;
			tok[nt++] = q;
			while (*q && !isspace((unsigned char)*q))
				q++;
			if (*q)
				*q++ = 0;
		}
		int bad = nt != 0 && nt != 2;
		if (nt == 2) {
			char *end;
			errno = 0;
			long long r = strtoll(tok[0], &end, 10);
			bad = *end || errno || r < 0;
			int64_t ns = 0;
			size_t ol = strlen(tok[1]);
			if (!bad && tok[1][ol - 1] == 's') {
				bad = tk_time_parse(tok[1] + (tok[1][0] == '+'), &ns) != 0;
			} else if (!bad) {
				errno = 0;
				ns = strtoll(tok[1], &end, 10);
				bad = *end || errno;
			}
			if (!bad && *count < cap) {
				rk[*count] = r;
				off[(*count)++] = ns;
			}
		}
		free(line);
		if (bad)
			return ln;
	}
	return 0;
}

static void offsets(const uint8_t *data, size_t size)
{
	int fd = fz_memfd(WHO, data, size);
	if (fd < 0)
		return;
	char path[64];
	snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
	merge_cli o;
	memset(&o, 0, sizeof o);
	o.align_file = path;
	tk_merge_opts mo = {0};
	tk_merge *m = NULL;
	if (tk_merge_new(&m, &mo) == TK_OK) {
		int bad = read_offsets(&o, m);
		size_t cap = size / 2 + 1, n = 0;
		int64_t *rk = malloc(cap * sizeof *rk), *off = malloc(cap * sizeof *off);
		int want = rk && off ? oracle_offsets((const char *)data, size, rk, off, &n, cap) : -1;
		if (want >= 0) {
			FZ_CHECK(WHO, bad == (want != 0), "the offsets file is %s by trace-merge, its line %d is %s",
			         bad ? "refused" : "accepted", want, want ? "bad" : "fine (all are)");
			if (!want)
				FZ_CHECK(WHO, m->n_given == n && (!n || (memcmp(m->given_rank, rk, n * sizeof *rk) == 0 &&
				                                         memcmp(m->given_off, off, n * sizeof *off) == 0)),
				         "trace-merge reads %zu offsets from the file, not its %zu (or other values)", m->n_given, n);
		}
		free(rk);
		free(off);
	}
	tk_merge_free(m);
	close(fd);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!size)
		return 0;
	if (data[0] == 'a') {
		offsets(data + 1, size - 1);
		return 0;
	}
	char *s = malloc(size);
	if (!s)
		return 0;
	memcpy(s, data + 1, size - 1);
	s[size - 1] = 0;
	switch (data[0]) {
	case 's': sizes(s); break;
	case 't': times(s); break;
	case 'w': windows(s); break;
	case 'f': formats(s); break;
	case 'r': ranks(s); break;
	default:
		sizes(s);
		times(s);
		windows(s);
		formats(s);
		ranks(s);
		break;
	}
	free(s);
	return 0;
}

#ifndef TK_LIBFUZZER
#include "fuzz_files.h"

int main(int argc, char **argv)
{
	int rc = tk_fuzz_files(argc, argv, NULL);
	printf(WHO ": %d inputs ran\n", argc - 1);
	return rc;
}
#endif
