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
		cmocka_unit_test(test_empty_and_misuse),
		cmocka_unit_test(test_bad_tmpdir),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
