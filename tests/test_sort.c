/* test_sort.c: the bounded-memory sorter: order, stability, every event back exactly once. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <unistd.h>

#include <cmocka.h>

#include "tracekit/sort.h"

static uint64_t rng_state;
static uint64_t rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

static char strpool[1 << 16];
static size_t strpool_used;

static tk_sv rnd_str(size_t max)
{
	size_t n = rnd() % (max + 1);
	char *p = strpool + strpool_used;
	assert_true(strpool_used + n + 1 < sizeof strpool);
	for (size_t i = 0; i < n; i++)
		p[i] = (char)('a' + rnd() % 26);
	p[n] = 0;
	strpool_used += n + 1;
	return (tk_sv){p, n};
}

static tk_id rnd_id(void)
{
	tk_id id = {0};
	switch (rnd() % 3) {
	case 0: break;
	case 1:
		id.kind = TK_ID_INT;
		id.num = (int64_t)(rnd() % 100000) - 50;
		break;
	default:
		id.kind = TK_ID_STR;
		id.str = rnd_str(12);
		break;
	}
	return id;
}

/* Event i of a random set: the input index goes into tag; timestamps repeat
 * often so that stability is tested. */
static tk_event *make_event(size_t i, int ts_range)
{
	tk_event ev = {0};
	strpool_used = 0; /* tk_event_dup copies the strings */
	ev.ph = "XifsM"[rnd() % 5];
	ev.has = TK_HAS_PH | TK_HAS_NAME;
	if (rnd() % 10) {
		ev.has |= TK_HAS_TS;
		ev.ts = (int64_t)(rnd() % (uint64_t)ts_range) - ts_range / 3;
		if (rnd() % 50 == 0)
			ev.ts = (rnd() & 1) ? INT64_MIN : INT64_MAX;
	}
	if (rnd() & 1) {
		ev.has |= TK_HAS_DUR;
		ev.dur = (int64_t)(rnd() % 100000);
	}
	ev.name = rnd_str(40);
	if (rnd() & 1) {
		ev.has |= TK_HAS_CAT;
		ev.cat = rnd_str(10);
	}
	ev.pid = rnd_id();
	ev.tid = rnd_id();
	ev.id = rnd_id();
	if (rnd() & 1) {
		char buf[64];
		int n = snprintf(buf, sizeof buf, "{\"i\":%zu}", i);
		ev.args = (tk_sv){buf, (size_t)n};
		tk_event *d = tk_event_dup(&ev);
		return d;
	}
	if (rnd() % 4 == 0)
		ev.extra = (tk_sv){"\"s\":\"g\"", 7};
	return tk_event_dup(&ev);
}

static int before(const tk_event *a, const tk_event *b)
{
	int ha = (a->has & TK_HAS_TS) != 0, hb = (b->has & TK_HAS_TS) != 0;
	if (ha != hb)
		return ha < hb;
	return ha && a->ts < b->ts;
}

static size_t count_files(const char *dir)
{
	DIR *d = opendir(dir);
	size_t n = 0;
	if (!d)
		return 0;
	for (struct dirent *e; (e = readdir(d));)
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

/* min_runs 0: everything must stay in memory; otherwise at least that many runs */
static void run_case(size_t n, size_t budget, int ts_range, size_t min_runs)
{
	char dir[] = "/tmp/tktest-sort-XXXXXX";
	assert_non_null(mkdtemp(dir));
	tk_event **in = malloc(n * sizeof *in);
	assert_non_null(in);
	tk_sorter *s;
	tk_sorter_opts o = {budget, dir};
	assert_int_equal(tk_sorter_new(&s, &o), 0);
	for (size_t i = 0; i < n; i++) {
		in[i] = make_event(i, ts_range);
		assert_int_equal(tk_sorter_add(s, in[i], i), 0);
	}
	assert_int_equal(tk_sorter_finish(s), 0);
	if (min_runs)
		assert_true(tk_sorter_runs(s) >= min_runs);
	else
		assert_int_equal(tk_sorter_runs(s), 0);
	unsigned char *seen = calloc(n, 1);
	const tk_event *ev, *prev = NULL;
	uint64_t tag, prev_tag = 0;
	size_t got = 0;
	int rc;
	while ((rc = tk_sorter_next(s, &ev, &tag)) == TK_OK) {
		assert_true(tag < n);
		assert_false(seen[tag]);
		seen[tag] = 1;
		assert_true(tk_event_equal(ev, in[tag]));
		if (prev) {
			assert_false(before(ev, prev));
			if (!before(prev, ev))
				assert_true(prev_tag < tag); /* ties keep the input order */
		}
		prev = in[tag];
		prev_tag = tag;
		got++;
	}
	assert_int_equal(rc, TK_EOF);
	assert_int_equal(got, n);
	assert_int_equal(tk_sorter_next(s, &ev, &tag), TK_EOF);
	tk_sorter_free(s);
	assert_int_equal(count_files(dir), 0); /* runs and their directory removed */
	rmdir(dir);
	for (size_t i = 0; i < n; i++)
		tk_event_free(in[i]);
	free(in);
	free(seen);
}

static void test_in_memory(void **state)
{
	(void)state;
	rng_state = 88172645463325252ull;
	run_case(5000, 64 << 20, 1000, 0);
}

static void test_many_runs(void **state)
{
	(void)state;
	rng_state = 1234567;
	run_case(3000, 1200, 200, 300); /* more runs than one merge pass takes */
}

static void test_wide_ts(void **state)
{
	(void)state;
	rng_state = 99;
	run_case(4000, 32 << 10, 1 << 30, 4);
}

/* Texts that exercise the run format's number templates: leading zeros,
 * digit runs too long for a number, signs, exponents, the template marker
 * byte itself, empty text. */
static const char *const tricky_args[] = {
	"{\"External id\":3728,\"Record function id\":0,\"Ev Idx\":12}",
	"{\"a\":007,\"b\":\"0000012\",\"c\":00,\"d\":0}",
	"{\"big\":123456789012345678901234567890,\"e\":1.05e-07,\"n\":-0.5}",
	"{\"max\":18446744073709551615,\"u\":999999999999999999,\"v\":1000000000000000000}",
	"{\"dims\":[[32, 1000], [32], [], []],\"s\":\"\x01\"}",
	"",
	"{}",
	"{\"x\":\"no digits here\"}",
	"9",
	"0001234x000",
};

static tk_sv tricky_text(size_t i)
{
	const char *t = tricky_args[i % (sizeof tricky_args / sizeof *tricky_args)];
	return (tk_sv){t, strlen(t)};
}

/* Event i with the fields the run format treats specially: every has bit
 * (TK_HAS_VALID_JSON too), ts and dur without their bits, long and empty
 * strings, many distinct names so that the run dictionaries fill up. */
static tk_event *make_tricky_event(size_t i, int ts_range)
{
	static char longname[6000];
	tk_event *base = make_event(i, ts_range), ev = *base;
	char name[32];
	ev.has ^= (unsigned)(rnd() & (TK_HAS_NAME | TK_HAS_CAT | TK_HAS_VALID_JSON | TK_HAS_PH));
	if (!(ev.has & TK_HAS_TS) && rnd() % 3 == 0)
		ev.ts = (int64_t)rnd();
	if (rnd() % 5 == 0)
		ev.dur = -(int64_t)(rnd() % 1000);
	switch (rnd() % 4) {
	case 0: {
		int n = snprintf(name, sizeof name, "op%zu_%u", i, (unsigned)(rnd() % 1000));
		ev.name = (tk_sv){name, (size_t)n};
		break;
	}
	case 1:
		memset(longname, 'k', sizeof longname);
		ev.name = (tk_sv){longname, 4000 + rnd() % 2000};
		break;
	case 2: ev.name = (tk_sv){"", 0}; break;
	default: break;
	}
	if (rnd() % 3 == 0)
		ev.args = tricky_text(rnd());
	if (rnd() % 3 == 0)
		ev.extra = tricky_text(rnd());
	if (ev.id.kind == TK_ID_INT && rnd() % 4 == 0)
		ev.id.num = (rnd() & 1) ? INT64_MIN : INT64_MAX;
	tk_event *d = tk_event_dup(&ev);
	tk_event_free(base);
	return d;
}

static void assert_same_sv(tk_sv a, tk_sv b)
{
	assert_int_equal(a.ptr == NULL, b.ptr == NULL);
	assert_int_equal(a.len, b.len);
	if (a.len)
		assert_memory_equal(a.ptr, b.ptr, a.len);
}

/* Field by field, stricter than tk_event_equal: every has bit, ts and dur
 * even without their bits, absent versus empty strings. */
static void assert_same_event(const tk_event *a, const tk_event *b)
{
	assert_true(tk_event_equal(a, b));
	assert_int_equal(a->has, b->has);
	assert_int_equal(a->ph, b->ph);
	assert_true(a->ts == b->ts && a->dur == b->dur);
	assert_same_sv(a->name, b->name);
	assert_same_sv(a->cat, b->cat);
	assert_same_sv(a->args, b->args);
	assert_same_sv(a->extra, b->extra);
	const tk_id *x[3] = {&a->pid, &a->tid, &a->id}, *y[3] = {&b->pid, &b->tid, &b->id};
	for (int k = 0; k < 3; k++) {
		assert_int_equal(x[k]->kind, y[k]->kind);
		if (x[k]->kind == TK_ID_INT)
			assert_true(x[k]->num == y[k]->num);
		if (x[k]->kind == TK_ID_STR)
			assert_same_sv(x[k]->str, y[k]->str);
	}
}

/* Spilled runs give every event back exactly, with its full 64-bit tag, in
 * order and stable, through several merge passes. */
static void test_runs_exact(void **state)
{
	(void)state;
	rng_state = 4242;
	enum { N = 3000 };
	char dir[] = "/tmp/tktest-sort-XXXXXX";
	assert_non_null(mkdtemp(dir));
	tk_event **in = malloc(N * sizeof *in);
	assert_non_null(in);
	tk_sorter *s;
	tk_sorter_opts o = {96 << 10, dir};
	assert_int_equal(tk_sorter_new(&s, &o), 0);
	for (size_t i = 0; i < N; i++) {
		in[i] = make_tricky_event(i, 500);
		assert_int_equal(tk_sorter_add(s, in[i], UINT64_MAX - i), 0);
	}
	assert_int_equal(tk_sorter_finish(s), 0);
	assert_true(tk_sorter_runs(s) >= 20);
	unsigned char seen[N] = {0};
	const tk_event *ev, *prev = NULL;
	uint64_t tag;
	size_t got = 0, prev_i = 0;
	while (tk_sorter_next(s, &ev, &tag) == TK_OK) {
		size_t i = (size_t)(UINT64_MAX - tag);
		assert_true(i < N);
		assert_false(seen[i]);
		seen[i] = 1;
		assert_same_event(ev, in[i]);
		if (prev) {
			assert_false(before(in[i], prev));
			if (!before(prev, in[i]))
				assert_true(prev_i < i);
		}
		prev = in[i];
		prev_i = i;
		got++;
	}
	assert_int_equal(got, N);
	tk_sorter_free(s);
	assert_int_equal(count_files(dir), 0);
	rmdir(dir);
	for (size_t i = 0; i < N; i++)
		tk_event_free(in[i]);
	free(in);
}

static void test_empty_and_misuse(void **state)
{
	(void)state;
	tk_sorter *s;
	const tk_event *ev;
	uint64_t tag;
	assert_int_equal(tk_sorter_new(&s, NULL), 0);
	assert_int_equal(tk_sorter_next(s, &ev, &tag), TK_ERR_ARG);
	tk_sorter_free(s);
	assert_int_equal(tk_sorter_new(&s, NULL), 0);
	assert_int_equal(tk_sorter_finish(s), 0);
	assert_int_equal(tk_sorter_next(s, &ev, &tag), TK_EOF);
	tk_event e = {0};
	assert_int_equal(tk_sorter_add(s, &e, 0), TK_ERR_ARG);
	assert_true(strlen(tk_sorter_error(s)) > 0);
	tk_sorter_free(s);
	tk_sorter_free(NULL);
}

static void test_bad_tmpdir(void **state)
{
	(void)state;
	tk_sorter *s;
	tk_sorter_opts o = {512, "/nonexistent/dir"};
	assert_int_equal(tk_sorter_new(&s, &o), 0);
	tk_event e = {0};
	e.has = TK_HAS_TS | TK_HAS_NAME;
	e.name = (tk_sv){"abcdefghijklmnopqrstuvwxyz", 26};
	int rc = 0;
	for (int i = 0; i < 100 && !rc; i++)
		rc = tk_sorter_add(s, &e, (uint64_t)i);
	assert_int_equal(rc, TK_ERR_IO);
	assert_non_null(strstr(tk_sorter_error(s), "/nonexistent/dir"));
	tk_sorter_free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_in_memory),
		cmocka_unit_test(test_many_runs),
		cmocka_unit_test(test_wide_ts),
		cmocka_unit_test(test_runs_exact),
		cmocka_unit_test(test_empty_and_misuse),
		cmocka_unit_test(test_bad_tmpdir),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
