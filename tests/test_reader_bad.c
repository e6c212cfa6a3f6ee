/* test_reader_bad.c: reader tests on broken input: cut-off files, garbage, bad escapes, limits, out-of-range numbers. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "shape.h"
#include "testutil.h"

static size_t count_below(const size_t *v, size_t n, size_t limit)
{
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		k += v[i] < limit;
	return k;
}

/* The message says how many events were kept: "K events" or "K complete events". */
static int mentions_count(const char *msg, size_t k)
{
	char num[24];
	int len = snprintf(num, sizeof num, "%zu ", k);
	for (const char *p = strstr(msg, num); p; p = strstr(p + 1, num)) {
		if (p > msg && p[-1] >= '0' && p[-1] <= '9')
			continue;
		const char *q = p + len;
		if (strncmp(q, "event", 5) == 0 || strncmp(q, "complete event", 14) == 0)
			return 1;
	}
	print_error("expected the count \"%zu events\" in \"%s\"\n", k, msg);
	return 0;
}

static int mentions_byte(const char *msg, size_t at)
{
	char a[48];
	snprintf(a, sizeof a, "byte %zu", at);
	return tu_contains(msg, a);
}

/* Where the input ended is named as "name:LINE:COL:" and "byte N". */
static int names_place(const char *msg, const char *name, const char *text, size_t at)
{
	unsigned long line, col;
	tu_linecol(text, at, &line, &col);
	char where[256];
	snprintf(where, sizeof where, "%s:%lu:%lu:", name, line, col);
	return tu_contains(msg, where) && mentions_byte(msg, at);
}

/* ---- a file cut off anywhere ---- */

typedef struct full_read {
	const char *name;
	const char *text;
	size_t len;
	shape sh;
	tu_events ev;
	tk_reader *r; /* kept for its metadata */
} full_read;

static void full_read_init(full_read *f, const char *name, const char *text, size_t len)
{
	memset(f, 0, sizeof *f);
	f->name = name;
	f->text = text;
	f->len = len;
	assert_int_equal(shape_scan(text, len, &f->sh), 0);
	f->r = tu_open_mem(text, len, name, NULL);
	assert_int_equal(tu_read_all(f->r, &f->ev), TK_EOF);
	assert_int_equal(f->ev.n, f->sh.n_events);
	assert_int_equal(tk_reader_meta_count(f->r), f->sh.n_members);
}

static void full_read_free(full_read *f)
{
	tu_events_free(&f->ev);
	tk_reader_free(f->r);
}

/* The metadata visible after a cut: between the members whose delimiter
 * made it in and those whose value is complete, each as in the full read. */
static void check_cut_meta(const full_read *f, tk_reader *r, size_t cut)
{
	size_t lo = count_below(f->sh.mem_delim, f->sh.n_members, cut);
	size_t hi = count_below(f->sh.mem_done, f->sh.n_members, cut);
	size_t n = tk_reader_meta_count(r);
	if (n < lo || n > hi)
		fail_msg("%s cut at %zu: %zu metadata members, want %zu..%zu", f->name, cut, n, lo, hi);
	for (size_t i = 0; i < n; i++) {
		tk_sv k1, v1, k2, v2;
		int a1, a2;
		assert_int_equal(tk_reader_meta_get(r, i, &k1, &v1, &a1), 0);
		assert_int_equal(tk_reader_meta_get(f->r, i, &k2, &v2, &a2), 0);
		assert_true(tu_sv_is(k1, k2.ptr) && tu_sv_is(v1, v2.ptr));
		assert_int_equal(a1, a2);
	}
}

enum { FROM_MEMORY, FROM_GZIP, FROM_TRICKLE };

/* Read text[0..cut) from memory, gzipped first, or one byte per read, and
 * check what comes back. */
static void check_cut(const full_read *f, size_t cut, int strict, int how)
{
	tk_reader_opts o = {0};
	o.strict = strict;
	size_t in_len = cut;
	unsigned char *z = how == FROM_GZIP ? tu_gzip(f->text, cut, &in_len) : NULL;
	tk_reader *r = NULL;
	tu_events ev = {0};
	int rc;
	if (how == FROM_TRICKLE) {
		rc = tu_read_trickled(f->text, cut, f->name, &o, &ev, &r);
	} else {
		r = tu_open_mem(z ? (const char *)z : f->text, in_len, f->name, &o);
		rc = tu_read_all(r, &ev);
	}
	size_t want = count_below(f->sh.ev_end, f->sh.n_events, cut);
	int truncated = cut <= f->sh.top_end;
	if (ev.n != want)
		fail_msg("%s cut at %zu%s: %zu events, want %zu (rc %d: %s)", f->name, cut,
		         how == FROM_GZIP ? " (gzip)" : how == FROM_TRICKLE ? " (byte by byte)" : "", ev.n,
		         want, rc, tk_reader_error(r));
	for (size_t i = 0; i < ev.n; i++)
		if (!tk_event_equal(ev.ev[i], f->ev.ev[i]))
			fail_msg("%s cut at %zu: event %zu differs from the full read", f->name, cut, i);
	const tk_reader_stats *st = tk_reader_get_stats(r);
	assert_int_equal(st->events, want);
	if (!truncated) {
		assert_int_equal(rc, TK_EOF);
		assert_null(tk_reader_warning(r, 0));
		assert_int_equal(st->truncated, 0);
	} else if (strict) {
		if (rc != TK_ERR_TRUNCATED)
			fail_msg("%s cut at %zu (strict): rc %d, want TK_ERR_TRUNCATED", f->name, cut, rc);
		assert_true(tu_contains(tk_reader_error(r), f->name));
	} else {
		if (rc != TK_EOF)
			fail_msg("%s cut at %zu: rc %d (%s), want TK_EOF", f->name, cut, rc, tk_reader_error(r));
		const char *w = tk_reader_warning(r, 0);
		assert_non_null(w);
		assert_null(tk_reader_warning(r, 1));
		assert_true(tu_contains(w, f->name));
		assert_true(mentions_byte(w, cut));
		assert_true(mentions_count(w, want));
		assert_int_equal(st->truncated, 1);
		/* inside the events: dropped = bytes after the last complete event */
		if (want && cut <= f->sh.events_close)
			assert_int_equal(st->dropped_bytes, cut - f->sh.ev_end[want - 1] - 1);
	}
	if (!strict || !truncated)
		check_cut_meta(f, r, cut);
	tu_events_free(&ev);
	tk_reader_free(r);
	free(z);
}

/* Cuts at every byte; with_gzip also through gzip, and every `trickle_step`
 * bytes (0: never) through a source that delivers one byte per read. */
static void cut_everywhere(const char *name, int with_gzip, size_t trickle_step)
{
	size_t n;
	char *t = tu_load(name, &n);
	full_read f;
	full_read_init(&f, name, t, n);
	for (size_t cut = 1; cut <= n; cut++) {
		check_cut(&f, cut, 0, FROM_MEMORY);
		check_cut(&f, cut, 1, FROM_MEMORY);
		if (with_gzip)
			check_cut(&f, cut, 0, FROM_GZIP);
		if (trickle_step && (cut % trickle_step == 0 || cut == n)) {
			check_cut(&f, cut, 0, FROM_TRICKLE);
			check_cut(&f, cut, 1, FROM_TRICKLE);
		}
	}
	/* cut before the first byte: an empty input */
	tk_reader *r = NULL;
	assert_int_equal(tk_reader_open_memory(&r, t, 0, name, NULL), TK_ERR_FORMAT);
	tk_reader_free(r);
	full_read_free(&f);
	free(t);
}

static void test_cut_kineto_every_byte(void **state)
{
	(void)state;
	cut_everywhere("kineto_small.json", 1, 53);
}

static void test_cut_other_dialects_every_byte(void **state)
{
	(void)state;
	cut_everywhere("array_2020.json", 0, 0);
	cut_everywhere("meta_after.json", 1, 31);
	cut_everywhere("legacy_torch1.json", 0, 0);
}

/* Read the gzip stream g cut at `cut` (from memory, or from a file:
 * strict 2); dn bytes of it inflate, as zlib reads it. */
static void check_gzip_cut(const full_read *f, const unsigned char *g, size_t gn, size_t cut,
                           size_t dn, int strict)
{
	size_t want = count_below(f->sh.ev_end, f->sh.n_events, dn);
	tk_reader_opts o = {0};
	o.strict = strict == 1;
	tk_reader *r = NULL;
	int rc;
	if (strict == 2) {
		tu_write_file(tu_path("cut.json.gz"), g, cut);
		rc = tk_reader_open_path(&r, tu_path("cut.json.gz"), &o);
	} else {
		rc = tk_reader_open_memory(&r, g, cut, f->name, &o);
	}
	strict = strict == 1;
	if (rc) {
		/* nothing inflated yet: an error is all there is to say */
		if (dn)
			fail_msg("gzip cut at %zu: open failed with %zu bytes inflated: %s", cut, dn,
			         tk_reader_error(r));
		tk_reader_free(r);
		return;
	}
	tu_events ev = {0};
	rc = tu_read_all(r, &ev);
	if (ev.n != want)
		fail_msg("gzip cut at %zu: %zu events, want %zu", cut, ev.n, want);
	if (strict) {
		if (rc != TK_ERR_TRUNCATED)
			fail_msg("gzip cut at %zu of %zu (strict): rc %d, want TK_ERR_TRUNCATED", cut, gn, rc);
	} else {
		if (rc != TK_EOF || !tk_reader_warning(r, 0))
			fail_msg("gzip cut at %zu of %zu (%zu of %zu bytes inflated): rc %d, warning: %s", cut,
			         gn, dn, f->len, rc, tk_reader_warning(r, 0) ? tk_reader_warning(r, 0) : "none");
		assert_null(tk_reader_warning(r, 1));
		assert_true(tu_contains(tk_reader_warning(r, 0), "gzip"));
		assert_true(mentions_count(tk_reader_warning(r, 0), want));
	}
	tu_events_free(&ev);
	tk_reader_free(r);
}

/* The gzip stream itself cut at every byte. `json_complete` picks the cuts
 * where the inflated bytes hold the whole JSON text (only the end of the
 * deflate data or the gzip trailer is missing) or those where they do not. */
static void cut_gzip_text(const char *t, size_t n, int json_complete, size_t stride, size_t via_file)
{
	size_t gn, tried = 0;
	full_read f;
	full_read_init(&f, "cut.json.gz", t, n);
	unsigned char *g = tu_gzip(t, n, &gn);
	for (size_t cut = 2; cut < gn; cut += stride) {
		size_t dn;
		free(tu_gunzip(g, cut, &dn));
		if ((dn > f.sh.top_end) != json_complete)
			continue;
		tried++;
		check_gzip_cut(&f, g, gn, cut, dn, 0);
		check_gzip_cut(&f, g, gn, cut, dn, 1);
		if (via_file && tried % via_file == 0)
			check_gzip_cut(&f, g, gn, cut, dn, 2);
	}
	assert_true(tried > 0);
	free(g);
	full_read_free(&f);
}

static void cut_gzip_everywhere(int json_complete)
{
	size_t n;
	char *t = tu_load("kineto_small.json", &n);
	cut_gzip_text(t, n, json_complete, 1, 7);
	free(t);
}

/* The events in the bytes that inflate come back, with one warning that
 * names gzip. */
static void test_cut_gzip_stream_every_byte(void **state)
{
	(void)state;
	cut_gzip_everywhere(0);
}

/* A .gz cut inside its last bytes still lost data the CRC would vouch for:
 * it is a cut-off file like any other. */
static void test_cut_gzip_trailer(void **state)
{
	(void)state;
	cut_gzip_everywhere(1);
}

/* A larger stream (dynamic Huffman blocks, about 40 KB of gzip) cut at
 * every 7th byte: ISA-L, where the build has it, decodes with lookahead
 * and must still give every byte that zlib gives (gzip.c's recover_tail). */
static void test_cut_gzip_large(void **state)
{
	(void)state;
	size_t cap = 500 * 256, len = 0;
	char *b = malloc(cap);
	assert_non_null(b);
	len += (size_t)snprintf(b, cap, "{\"traceEvents\":[\n");
	uint64_t x = 88172645463325252ull;
	for (int i = 0; i < 500; i++) { /* shape.h's SHAPE_MAX events at most */
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		len += (size_t)snprintf(b + len, cap - len,
		                 "%s{\"ph\":\"X\",\"name\":\"op_%llx\",\"pid\":%d,\"tid\":%d,\"ts\":%d.%03d,\"dur\":%u,\"args\":{\"s\":\"%016llx%016llx\"}}\n",
		                 i ? "," : "", (unsigned long long)(x % 100000), (int)(x >> 60), (int)(x >> 50 & 7),
		                 i * 10, (int)(x % 1000), (unsigned)(x >> 40 & 0xfff), (unsigned long long)x,
		                 (unsigned long long)(x * 0x9e3779b97f4a7c15ull));
		assert_true(len < cap - 8);
	}
	len += (size_t)snprintf(b + len, cap - len, "]}\n");
	cut_gzip_text(b, len, 0, 7, 50);
	free(b);
}

/* A stream cut where zlib's last call ran out of room in the middle of a
 * match (the reader's first read takes 512 bytes): the rest of the match
 * still comes out, as far as a one-shot inflate gives it (537 bytes). */
static void test_cut_gzip_pending(void **state)
{
	(void)state;
	static const unsigned char g[] = {
	    0x1f, 0x8b, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x03, 0xed, 0xcf, 0xb1, 0x6a, 0xdb, 0x50,
	    0x14, 0x06, 0xe0, 0xdd, 0x4f, 0x11, 0xce, 0x7c, 0x07, 0xa9, 0x10, 0x0a, 0x9a, 0x9b, 0xa1, 0x4b,
	    0xe7, 0x40, 0x30, 0xe5, 0x5a, 0x16, 0x8e, 0xa8, 0x2d, 0x0b, 0x45, 0x4e, 0x0a, 0x42, 0xef, 0xde,
	    0xeb, 0xb4, 0xcd, 0xd0, 0x29, 0xa5, 0x4b, 0x87, 0x8f, 0x6f, 0xb8, 0xf7, 0x97, 0x8e, 0xfe, 0x83,
	    0x96, 0x98, 0xa7, 0xdc, 0x76, 0x77, 0xcf, 0xdd, 0x30, 0x3f, 0x45, 0xf3, 0xb0, 0x59, 0x62, 0x7c,
	    0x96, 0x98};
	size_t gn = sizeof g, dn;
	free(tu_gunzip(g, gn, &dn));
	assert_int_equal(dn, 537);
	tk_reader *r = tu_open_mem(g, gn, "pending.json.gz", NULL);
	tu_events ev = {0};
	assert_int_equal(tu_read_all(r, &ev), TK_EOF);
	assert_true(tu_contains(tk_reader_warning(r, 0), "gzip stream is cut off"));
	assert_true(mentions_byte(tk_reader_warning(r, 0), dn));
	tu_events_free(&ev);
	tk_reader_free(r);
}

/* ---- garbage, with its place named ---- */

/* `in` is what the reader gets; `text` is it decoded, for the expected place. */
static void expect_error_in(const char *name, const void *in, size_t in_len, const char *text,
                            size_t n_good, int code, size_t at)
{
	tk_reader *r = tu_open_mem(in, in_len, name, NULL);
	tu_events ev = {0};
	int rc = tu_read_all(r, &ev);
	if (rc != code || ev.n != n_good)
		fail_msg("%s: rc %d after %zu events, want %d after %zu (%s)", name, rc, ev.n, code, n_good,
		         tk_reader_error(r));
	assert_true(names_place(tk_reader_error(r), name, text, at));
	/* the error sticks */
	const tk_event *e;
	assert_int_equal(tk_reader_next(r, &e), code);
	tu_events_free(&ev);
	tk_reader_free(r);
}

static void expect_error_at(const char *name, const char *text, size_t len, size_t n_good, int code,
                            size_t at)
{
	expect_error_in(name, text, len, text, n_good, code, at);
}

static void test_garbage_middle(void **state)
{
	(void)state;
	size_t n;
	char *t = tu_load("garbage_middle.json", &n);
	size_t at = (size_t)(strchr(t, '@') - t);
	unsigned long line, col;
	tu_linecol(t, at, &line, &col);
	assert_int_equal(line, 4); /* as the file's comment says */
	assert_int_equal(col, 3);
	expect_error_at("garbage_middle.json", t, n, 2, TK_ERR_FORMAT, at);
	/* the same through a file: the message names the path */
	tu_write_file(tu_path("garbage.json"), t, n);
	tk_reader *r = NULL;
	assert_int_equal(tk_reader_open_path(&r, tu_path("garbage.json"), NULL), 0);
	tu_events ev = {0};
	assert_int_equal(tu_read_all(r, &ev), TK_ERR_FORMAT);
	assert_true(names_place(tk_reader_error(r), tu_path("garbage.json"), t, at));
	tu_events_free(&ev);
	tk_reader_free(r);
	free(t);
}

/* Garbage several megabytes in, on a late line: the line count survives
 * the reader's buffer moving on; through gzip the offsets are decoded bytes. */
static void test_garbage_far(void **state)
{
	(void)state;
	size_t cap = 8u << 20, n = 0, k = 0;
	char *t = malloc(cap);
	n += (size_t)sprintf(t + n, "{\"traceEvents\": [\n");
	while (n < (3u << 20) + 12345)
		n += (size_t)sprintf(t + n, "%s{\"ph\": \"X\", \"name\": \"op%zu\",\n  \"ts\": %zu, \"dur\": 1},\n",
		                     k % 7 ? "" : "  ", k, k * 3), k++;
	size_t at = n + 4;
	n += (size_t)sprintf(t + n, "    #garbage\n{\"ph\": \"X\"}]}\n");
	expect_error_at("far.json", t, n, k, TK_ERR_FORMAT, at);
	size_t gn;
	unsigned char *g = tu_gzip(t, n, &gn);
	expect_error_in("far.json.gz", g, gn, t, k, TK_ERR_FORMAT, at);
	free(g);
	free(t);
}

static void test_unescaped_quote(void **state)
{
	(void)state;
	size_t n;
	char *t = tu_load("unescaped_quote.json", &n);
	size_t at = (size_t)(strstr(t, "\"forward") - t) + 1;
	expect_error_at("unescaped_quote.json", t, n, 1, TK_ERR_FORMAT, at);
	free(t);
}

static void test_invalid_escapes(void **state)
{
	(void)state;
	size_t n;
	char *t = tu_load("bad_escape.json", &n);
	expect_error_at("bad_escape.json", t, n, 1, TK_ERR_FORMAT, (size_t)(strstr(t, "\\x") - t));
	free(t);
	static const char *texts[] = {
		"[{\"ph\":\"X\"},{\"name\":\"a\\qb\"}]",             /* in a name */
		"[{\"ph\":\"X\"},{\"cat\":\"C:\\xtools\"}]",          /* in a category */
		"[{\"ph\":\"X\"},{\"args\":{\"C:\\qx\":1}}]",         /* in an args key */
		"[{\"ph\":\"X\"},{\"ph\":\"i\",\"k\\x\":1}]",        /* in an extra key */
		"[{\"ph\":\"X\"},{\"args\":{\"a\":\"\\u12G4\"}}]",   /* bad hex */
		"[{\"ph\":\"X\"},{\"name\":\"\\U0041\"}]",           /* capital U */
		"[{\"ph\":\"X\"},{\"pid\":\"a\\'b\"}]",              /* in a string pid */
	};
	for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++)
		expect_error_at("esc.json", texts[i], strlen(texts[i]), 1, TK_ERR_FORMAT,
		                (size_t)(strchr(texts[i], '\\') - texts[i]));
}

/* Structure errors: the text and a marker for where the error is. */
static void test_structure_errors(void **state)
{
	(void)state;
	static const struct {
		const char *text, *at; /* at: the text from the offending byte on */
	} cases[] = {
		{"{\"traceEvents\":[{\"ph\":\"X\"} {\"ph\":\"i\"}]}", "{\"ph\":\"i\"}]}"},
		{"{\"traceEvents\":[{\"ph\":\"X\"},1]}", "1]}"},
		{"{\"traceEvents\":[{\"ph\":\"X\"},[]]}", "[]]}"},
		{"{\"traceEvents\":{}}", "{}}"},
		{"{\"traceEvents\":[]} x", "x"},
		{"[] {}", "{}"},
		{"{\"traceEvents\" []}", "[]}"},
		{"{\"traceEvents\":[{\"ph\":\"X\",}]}", "}]}"},
		{"{\"traceEvents\":[{\"ph\":\"X\"},]}", "]}"},
		{"{\"traceEvents\":[{\"ph\":\"X\",\"args\":{\"a\":NaN}}]}", "NaN"},
		{"{\"traceEvents\":[{\"ph\":\"X\",\"args\":{\"a\":-Infinity}}]}", "-Infinity"},
		{"{\"traceEvents\":[{\"ph\":\"X\",\"args\":{\"a\":tru}}]}", "tru}"},
		{"{\"traceEvents\":[{\"ph\":\"X\",\"args\":{\"a\":[1,2}}]}", "}}]}"},
		{"{\"traceEvents\":[{\"ph\":\"X\",\"args\":{\"a\" 1}}]}", "1}}"},
		{"{\"traceEvents\":[{\"ph\":\"X\",\"args\":{a:1}}]}", "a:1"},
		{"{\"a\":1 \"traceEvents\":[]}", "\"traceEvents"},
		{"{\"traceEvents\":[{\"ph\":\"X\" \"ts\":1}]}", "\"ts\""},
		{"{\"traceEvents\":[{ph:\"X\"}]}", "ph:"},
		{"{\"traceEvents\":[{\"ph\":\"X\",\"ts\":1.}]}", "1.}"},
		{"{\"traceEvents\":[{\"ph\":\"X\",\"ts\":-}]}", "-}"},
		{"{\"traceEvents\":[{\"ph\":\"X\",\"ts\":+1}]}", "+1}"},
		{"{1:2}", "1:2}"},
		{"{\"traceEvents\":[],\"traceEvents\":[]}", NULL},
		{"{\"traceEvents\":[{\"ph\":\"X\",\"args\":{\"a\":01}}]}", NULL},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		const char *t = cases[i].text;
		tk_reader *r = NULL;
		tu_events ev = {0};
		int rc = tk_reader_open_memory(&r, t, strlen(t), "s.json", NULL);
		if (!rc)
			rc = tu_read_all(r, &ev);
		if (rc != TK_ERR_FORMAT)
			fail_msg("%s: rc %d, want TK_ERR_FORMAT", t, rc);
		if (cases[i].at) {
			const char *p = strstr(t, cases[i].at);
			assert_non_null(p);
			if (!names_place(tk_reader_error(r), "s.json", t, (size_t)(p - t)))
				fail_msg("case %s", t);
		} else {
			assert_true(tu_contains(tk_reader_error(r), "s.json:1:"));
		}
		tu_events_free(&ev);
		tk_reader_free(r);
	}
}

static void expect_fails(const char *name, const void *p, size_t n, int code, const char *needle)
{
	tk_reader *r = NULL;
	tu_events ev = {0};
	int rc = tk_reader_open_memory(&r, p, n, name, NULL);
	if (!rc)
		rc = tu_read_all(r, &ev);
	if (rc != code)
		fail_msg("%s: rc %d, want %d (%s)", name, rc, code, tk_reader_error(r));
	assert_int_equal(ev.n, 0);
	assert_true(tu_contains(tk_reader_error(r), name));
	if (needle)
		assert_true(tu_contains(tk_reader_error(r), needle));
	tu_events_free(&ev);
	tk_reader_free(r);
}

static void test_empty_and_not_json(void **state)
{
	(void)state;
	expect_fails("empty.json", "", 0, TK_ERR_FORMAT, "empty");
	expect_fails("blank.json", " \n\t\n", 4, TK_ERR_FORMAT, NULL);
	expect_fails("obj.json", "{}", 2, TK_ERR_FORMAT, "traceEvents");
	expect_fails("obj2.json", "{\"schemaVersion\":1}", 19, TK_ERR_FORMAT, "traceEvents");
	expect_fails("hello.txt", "hello", 5, TK_ERR_FORMAT, NULL);
	expect_fails("bin.dat", "\0\1\2\3", 4, TK_ERR_FORMAT, NULL);
	expect_fails("str.json", "\"traceEvents\"", 13, TK_ERR_FORMAT, NULL);
	/* an empty file on disk and an empty pipe */
	tu_write_file(tu_path("empty.json"), "", 0);
	tk_reader *r = NULL;
	assert_int_equal(tk_reader_open_path(&r, tu_path("empty.json"), NULL), TK_ERR_FORMAT);
	assert_true(tu_contains(tk_reader_error(r), tu_path("empty.json")));
	tk_reader_free(r);
	int p[2];
	assert_int_equal(pipe(p), 0);
	close(p[1]);
	r = NULL;
	assert_int_equal(tk_reader_open_fd(&r, p[0], "pipe", NULL), TK_ERR_FORMAT);
	assert_true(tu_contains(tk_reader_error(r), "pipe"));
	tk_reader_free(r);
	close(p[0]);
}

/* ---- nesting and size limits ---- */

/* head, then `open` depth times, mid, `close` depth times, tail */
static char *nested(const char *head, size_t depth, const char *open, const char *mid,
                    const char *close, const char *tail, size_t *len)
{
	size_t ho = strlen(head), oo = strlen(open), mo = strlen(mid), co = strlen(close),
	       to = strlen(tail);
	char *t = malloc(ho + depth * (oo + co) + mo + to + 1), *p = t;
	memcpy(p, head, ho), p += ho;
	for (size_t i = 0; i < depth; i++)
		memcpy(p, open, oo), p += oo;
	memcpy(p, mid, mo), p += mo;
	for (size_t i = 0; i < depth; i++)
		memcpy(p, close, co), p += co;
	memcpy(p, tail, to), p += to;
	*p = 0;
	*len = (size_t)(p - t);
	return t;
}

static void expect_limit(const char *text, size_t len, const tk_reader_opts *o, size_t n_good)
{
	tk_reader *r = NULL;
	tu_events ev = {0};
	int rc = tk_reader_open_memory(&r, text, len, "deep.json", o);
	if (!rc)
		rc = tu_read_all(r, &ev);
	if (rc != TK_ERR_LIMIT || ev.n != n_good)
		fail_msg("%.60s...: rc %d after %zu events, want TK_ERR_LIMIT after %zu (%s)", text, rc,
		         ev.n, n_good, tk_reader_error(r));
	assert_true(tu_contains(tk_reader_error(r), "deep.json:"));
	tu_events_free(&ev);
	tk_reader_free(r);
}

static void test_deep_nesting(void **state)
{
	(void)state;
	size_t n;
	const char *ev1 = "[{\"ph\":\"X\"},{\"ph\":\"X\",";
	char head[128];
	snprintf(head, sizeof head, "%s\"args\":{\"a\":", ev1);
	char *t = nested(head, 100000, "[", "", "]", "}}]", &n);
	expect_limit(t, n, NULL, 1);
	free(t);
	snprintf(head, sizeof head, "%s\"args\":", ev1);
	t = nested(head, 100000, "{\"a\":", "1", "}", "}]", &n);
	expect_limit(t, n, NULL, 1);
	free(t);
	snprintf(head, sizeof head, "%s\"args\":{\"a\":", ev1);
	t = nested(head, 100000, "{\"b\":[", "null", "]}", "}}]", &n);
	expect_limit(t, n, NULL, 1);
	free(t);
	snprintf(head, sizeof head, "%s\"other\":", ev1);
	t = nested(head, 100000, "[", "", "]", "}]", &n);
	expect_limit(t, n, NULL, 1);
	free(t);
	t = nested("{\"meta\":", 100000, "[", "", "]", ",\"traceEvents\":[]}", &n);
	expect_limit(t, n, NULL, 0);
	free(t);
	/* moderate nesting is fine, and max_depth is honoured */
	t = nested("[{\"ph\":\"X\",\"args\":{\"a\":", 100, "[", "", "]", "}}]", &n);
	tk_reader *r = tu_open_mem(t, n, "deep.json", NULL);
	tu_events ev = {0};
	assert_int_equal(tu_read_all(r, &ev), TK_EOF);
	assert_int_equal(ev.n, 1);
	tu_events_free(&ev);
	tk_reader_free(r);
	tk_reader_opts o = {0};
	o.max_depth = 20;
	expect_limit(t, n, &o, 0);
	free(t);
}

/* A string of `size` bytes at `where`, with one normal event before it. */
static char *big_string_trace(const char *where, size_t size, size_t *len)
{
	const char *pre, *post;
	if (strcmp(where, "args") == 0)
		pre = "[{\"ph\":\"X\"},{\"ph\":\"X\",\"args\":{\"s\":\"", post = "\"}}]";
	else if (strcmp(where, "name") == 0)
		pre = "[{\"ph\":\"X\"},{\"ph\":\"X\",\"name\":\"", post = "\"}]";
	else
		pre = "{\"meta\":\"", post = "\",\"traceEvents\":[{\"ph\":\"X\"}]}";
	size_t a = strlen(pre), b = strlen(post);
	char *t = malloc(a + size + b + 1);
	memcpy(t, pre, a);
	memset(t + a, 'x', size);
	memcpy(t + a + size, post, b + 1);
	*len = a + size + b;
	return t;
}

static void expect_too_big(const char *where, size_t size, const tk_reader_opts *o)
{
	size_t n;
	char *t = big_string_trace(where, size, &n);
	tk_reader *r = NULL;
	tu_events ev = {0};
	int rc = tk_reader_open_memory(&r, t, n, "big.json", o);
	if (!rc)
		rc = tu_read_all(r, &ev);
	if (rc != TK_ERR_LIMIT)
		fail_msg("%zu-byte string in %s, limit %zu: rc %d, want TK_ERR_LIMIT (%s)", size, where,
		         o->max_value_bytes, rc, tk_reader_error(r));
	assert_int_equal(ev.n, strcmp(where, "meta") ? 1 : 0);
	assert_true(tu_contains(tk_reader_error(r), "big.json"));
	tu_events_free(&ev);
	tk_reader_free(r);
	free(t);
}

/* 1 MiB limit: a 4 MiB string is refused, 900 KiB is read whole. */
static void test_value_limit(void **state)
{
	(void)state;
	tk_reader_opts o = {0};
	o.max_value_bytes = 1u << 20;
	static const char *wheres[] = {"args", "name", "meta"};
	for (size_t w = 0; w < 3; w++) {
		expect_too_big(wheres[w], 4u << 20, &o);
		/* below the limit it is read whole */
		size_t n;
		char *t = big_string_trace(wheres[w], 900u << 10, &n);
		tk_reader *r = tu_open_mem(t, n, "big.json", &o);
		tu_events ev = {0};
		assert_int_equal(tu_read_all(r, &ev), TK_EOF);
		assert_int_equal(ev.n, w < 2 ? 2 : 1);
		if (w == 0)
			assert_int_equal(ev.ev[1]->args.len, (900u << 10) + 8);
		else if (w == 1)
			assert_int_equal(ev.ev[1]->name.len, 900u << 10);
		else
			assert_int_equal(tk_reader_meta_find(r, "meta").len, (900u << 10) + 2);
		tu_events_free(&ev);
		tk_reader_free(r);
		free(t);
	}
	/* many small events add up to far more than the limit: fine */
	size_t cap = 6u << 20, n = 0, k = 0;
	char *t = malloc(cap);
	n += (size_t)sprintf(t, "[");
	while (n < (5u << 20))
		n += (size_t)sprintf(t + n, "%s{\"ph\":\"X\",\"ts\":%zu,\"args\":{\"i\":%zu}}", k ? "," : "", k, k), k++;
	n += (size_t)sprintf(t + n, "]");
	tk_reader *r = tu_open_mem(t, n, "many.json", &o);
	tu_events ev = {0};
	assert_int_equal(tu_read_all(r, &ev), TK_EOF);
	assert_int_equal(ev.n, k);
	tu_events_free(&ev);
	tk_reader_free(r);
	free(t);
}

/* The limit holds for a value just over it, not only for one several times its size. */
static void test_value_limit_exact(void **state)
{
	(void)state;
	tk_reader_opts o = {0};
	o.max_value_bytes = 1u << 20;
	expect_too_big("args", (3u << 20) / 2, &o);
	expect_too_big("name", (3u << 20) / 2, &o);
	expect_too_big("meta", (3u << 20) / 2, &o);
}

/* ---- numbers out of range ---- */

static void test_numbers_out_of_range(void **state)
{
	(void)state;
	static const char *bad[] = {
		"\"ts\":1e30", "\"ts\":-1e30", "\"dur\":1e30", "\"ts\":9223372036854775.808",
		"\"ts\":10000000000000000", "\"ts\":1e400",
		"\"pid\":99999999999999999999", "\"tid\":-99999999999999999999",
		"\"id\":18446744073709551616", "\"pid\":9223372036854775808",
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		char t[256];
		int pre = snprintf(t, sizeof t, "[{\"ph\":\"X\",\"ts\":1},\n{\"ph\":\"X\",");
		snprintf(t + pre, sizeof t - (size_t)pre, "%s}]", bad[i]);
		size_t at = (size_t)pre + (size_t)(strchr(bad[i], ':') - bad[i]) + 1;
		tk_reader *r = tu_open_mem(t, strlen(t), "num.json", NULL);
		tu_events ev = {0};
		int rc = tu_read_all(r, &ev);
		if ((rc != TK_ERR_FORMAT && rc != TK_ERR_LIMIT) || ev.n != 1)
			fail_msg("%s: rc %d after %zu events, want an error after 1", bad[i], rc, ev.n);
		if (!names_place(tk_reader_error(r), "num.json", t, at))
			fail_msg("case %s", bad[i]);
		tu_events_free(&ev);
		tk_reader_free(r);
	}
	/* inside args, any JSON number is kept as written */
	const char *t = "[{\"ph\":\"X\",\"args\":{\"big\":1e400,\"huge\":123456789012345678901234567890,"
	                "\"tiny\":-1e-400,\"frac\":0.1000000000000000000001}}]";
	tu_events ev = {0};
	assert_int_equal(tu_read_text(t, &ev), TK_EOF);
	assert_true(tu_sv_is(ev.ev[0]->args, "{\"big\":1e400,\"huge\":123456789012345678901234567890,"
	                                     "\"tiny\":-1e-400,\"frac\":0.1000000000000000000001}"));
	int64_t v;
	assert_int_equal(tk_args_get_int(ev.ev[0], "huge", &v), TK_ERR_FORMAT);
	tu_events_free(&ev);
}

static int teardown(void **state)
{
	(void)state;
	tu_cleanup();
	return 0;
}

#if defined(__SANITIZE_ADDRESS__)
#define TU_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TU_ASAN 1
#endif
#endif

/* Run out of memory at many places of a read: the reader says TK_ERR_NOMEM,
 * never that the input is malformed or unreadable. Each read runs in a
 * child with its address space capped a little above what it has. */
static void test_out_of_memory_is_nomem(void **state)
{
	(void)state;
#ifdef TU_ASAN
	skip(); /* AddressSanitizer reserves more address space than any cap */
#else
	size_t cap = 60000 * 256, len = 0;
	char *t = malloc(cap);
	assert_non_null(t);
	len += (size_t)snprintf(t, cap, "{\"traceEvents\":[");
	for (int i = 0; i < 60000; i++) /* distinct strings: the reader's memory grows with them */
		len += (size_t)snprintf(t + len, cap - len,
		                        "%s{\"ph\":\"X\",\"name\":\"op %d %064d\",\"ts\":%d,\"dur\":1,\"pid\":1,"
		                        "\"tid\":1,\"args\":{\"k %d\":\"v %d %064d\"}}",
		                        i ? "," : "", i, i, i, i, i, i);
	len += (size_t)snprintf(t + len, cap - len, "]}");
	assert_true(len < cap);
	int nomem = 0;
	for (unsigned threads = 1; threads <= 4; threads += 3)
		for (size_t mib = 1; mib <= 256; mib *= 2) {
			fflush(NULL);
			pid_t pid = fork();
			assert_true(pid >= 0);
			if (pid == 0) {
				long pages = 0;
				FILE *f = fopen("/proc/self/statm", "r");
				if (!f || fscanf(f, "%ld", &pages) != 1)
					_exit(3);
				fclose(f);
				rlim_t lim = (rlim_t)pages * (rlim_t)sysconf(_SC_PAGESIZE) + ((rlim_t)mib << 20);
				struct rlimit rl = {lim, lim};
				if (setrlimit(RLIMIT_AS, &rl))
					_exit(3);
				tk_reader_opts o = {0};
				o.threads = threads;
				tk_reader *r = NULL;
				int rc = tk_reader_open_memory(&r, t, len, "oom.json", &o);
				const tk_event *ev;
				while (!rc && (rc = tk_reader_next(r, &ev)) == TK_OK)
					;
				if (rc != TK_EOF && rc != TK_ERR_NOMEM)
					fprintf(stderr, "%u threads, %zu MiB: rc %d: %s\n", threads, mib, rc,
					        r ? tk_reader_error(r) : "");
				_exit(rc == TK_EOF ? 0 : rc == TK_ERR_NOMEM ? 1 : 2);
			}
			int st;
			assert_int_equal(waitpid(pid, &st, 0), pid);
			if (!WIFEXITED(st) || WEXITSTATUS(st) > 1)
				fail_msg("%u threads, %zu MiB more: status %d", threads, mib, st);
			nomem += WEXITSTATUS(st) == 1;
		}
	assert_true(nomem > 0); /* the caps did bite somewhere */
	free(t);
#endif
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cut_kineto_every_byte),
		cmocka_unit_test(test_cut_other_dialects_every_byte),
		cmocka_unit_test(test_cut_gzip_stream_every_byte),
		cmocka_unit_test(test_cut_gzip_trailer),
		cmocka_unit_test(test_cut_gzip_large),
		cmocka_unit_test(test_cut_gzip_pending),
		cmocka_unit_test(test_garbage_middle),
		cmocka_unit_test(test_garbage_far),
		cmocka_unit_test(test_unescaped_quote),
		cmocka_unit_test(test_invalid_escapes),
		cmocka_unit_test(test_structure_errors),
		cmocka_unit_test(test_empty_and_not_json),
		cmocka_unit_test(test_deep_nesting),
		cmocka_unit_test(test_value_limit),
		cmocka_unit_test(test_value_limit_exact),
		cmocka_unit_test(test_numbers_out_of_range),
		cmocka_unit_test(test_out_of_memory_is_nomem),
	};
	return cmocka_run_group_tests_name("reader_bad", tests, NULL, teardown);
}
