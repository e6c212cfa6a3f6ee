/* test_split.c: the writer's byte budget (plain and gzip), all-or-nothing groups, metadata after the events, and tk_split on a small trace. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "tracekit/split.h"

static char dir[64];

static uint64_t rng = 88172645463325252ull;
static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static int setup(void **state)
{
	(void)state;
	strcpy(dir, "/tmp/tk_test_split_XXXXXX");
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	return system(cmd);
}

/* An event with a random name so that gzip has something to chew on. */
static tk_event make(int64_t ts, char *name, size_t n)
{
	for (size_t i = 0; i < n; i++)
		name[i] = (char)('a' + rnd() % (i % 3 ? 26 : 4));
	name[n] = 0;
	tk_event ev = {0};
	ev.ph = 'X';
	ev.has = TK_HAS_TS | TK_HAS_DUR | TK_HAS_NAME | TK_HAS_PH;
	ev.ts = ts;
	ev.dur = 1000;
	ev.name = (tk_sv){name, n};
	ev.pid = (tk_id){TK_ID_INT, 1, {NULL, 0}};
	ev.tid = (tk_id){TK_ID_INT, 2, {NULL, 0}};
	return ev;
}

static off_t file_size(const char *path)
{
	struct stat st;
	assert_int_equal(stat(path, &st), 0);
	return st.st_size;
}

/* Write until the budget refuses; the finished file is within it and close to it. */
static void budget_holds(int gz, uint64_t max)
{
	char path[128], name[200];
	snprintf(path, sizeof path, "%s/b%d.json%s", dir, gz, gz ? ".gz" : "");
	tk_writer *w = NULL;
	tk_writer_opts wo = {.format = TK_FORMAT_JSON, .gzip = gz};
	assert_int_equal(tk_writer_open_path(&w, path, &wo), TK_OK);
	assert_int_equal(tk_writer_add_meta_after(w, (tk_sv){"traceName", 9}, (tk_sv){"\"x\"", 3}), TK_OK);
	assert_int_equal(tk_writer_set_max_bytes(w, max), TK_OK);
	int rc;
	int64_t ts = 0;
	size_t written = 0;
	do {
		tk_event ev = make(ts += 1000, name, 20 + rnd() % 150);
		rc = tk_writer_write(w, &ev);
		written += rc == TK_OK;
	} while (rc == TK_OK);
	assert_int_equal(rc, TK_ERR_LIMIT);
	/* the writer stays usable: a refused event leaves no trace */
	assert_int_equal(tk_writer_close(w), TK_OK);
	uint64_t bytes = tk_writer_bytes(w);
	tk_writer_free(w);
	assert_true(written > 10);
	assert_int_equal((off_t)bytes, file_size(path));
	assert_true(bytes <= max);
	assert_true(bytes > max - max / 10); /* the bound is not wildly pessimistic */
	tk_reader *r = NULL;
	assert_int_equal(tk_reader_open_path(&r, path, NULL), TK_OK);
	const tk_event *ev;
	size_t n = 0;
	while ((rc = tk_reader_next(r, &ev)) == TK_OK)
		n++;
	assert_int_equal(rc, TK_EOF);
	assert_int_equal(n, written);
	int after = 0;
	assert_int_equal(tk_reader_meta_count(r), 1);
	tk_reader_meta_get(r, 0, NULL, NULL, &after);
	assert_int_equal(after, 1);
	tk_reader_free(r);
}

static void test_budget_plain(void **state)
{
	(void)state;
	budget_holds(0, 100000);
}

static void test_budget_gzip(void **state)
{
	(void)state;
	budget_holds(1, 60000);
}

static void test_group_all_or_nothing(void **state)
{
	(void)state;
	char path[128], n1[64], n2[64];
	snprintf(path, sizeof path, "%s/g.json", dir);
	tk_writer *w = NULL;
	assert_int_equal(tk_writer_open_path(&w, path, NULL), TK_OK);
	assert_int_equal(tk_writer_set_max_bytes(w, 200), TK_OK);
	tk_event a = make(1000, n1, 40), b = make(2000, n2, 40);
	assert_int_equal(tk_writer_write(w, &a), TK_OK); /* the first is never refused */
	const tk_event *g[2] = {&a, &b};
	assert_int_equal(tk_writer_write_group(w, g, 2), TK_ERR_LIMIT);
	assert_int_equal(tk_writer_close(w), TK_OK);
	tk_writer_free(w);
	tk_reader *r = NULL;
	const tk_event *ev;
	assert_int_equal(tk_reader_open_path(&r, path, NULL), TK_OK);
	assert_int_equal(tk_reader_next(r, &ev), TK_OK);
	assert_int_equal(tk_reader_next(r, &ev), TK_EOF);
	tk_reader_free(r);
	assert_true(file_size(path) <= 200);
}

static void test_split_by_size(void **state)
{
	(void)state;
	char in[128], out[128], name[200];
	snprintf(in, sizeof in, "%s/in.json", dir);
	snprintf(out, sizeof out, "%s/parts", dir);
	tk_writer *w = NULL;
	assert_int_equal(tk_writer_open_path(&w, in, NULL), TK_OK);
	tk_event m = {0};
	m.ph = 'M';
	m.has = TK_HAS_PH | TK_HAS_NAME;
	m.name = (tk_sv){"process_name", 12};
	m.pid = (tk_id){TK_ID_INT, 1, {NULL, 0}};
	m.args = (tk_sv){"{\"name\":\"p\"}", 12};
	assert_int_equal(tk_writer_write(w, &m), TK_OK);
	for (int i = 0; i < 2000; i++) {
		tk_event ev = make(1000000 + i * 1000, name, 30);
		assert_int_equal(tk_writer_write(w, &ev), TK_OK);
	}
	assert_int_equal(tk_writer_close(w), TK_OK);
	tk_writer_free(w);

	tk_split_opts o = {0};
	o.dir = out;
	o.max_bytes = 20000;
	o.wopts.gzip = -1;
	tk_split *s = NULL;
	assert_int_equal(tk_split_new(&s, &o), TK_OK);
	assert_int_equal(tk_split_run(s, in), TK_OK);
	size_t n = tk_split_part_count(s);
	assert_true(n >= 5);
	uint64_t events = 0;
	for (size_t i = 0; i < n; i++) {
		const tk_split_part *p = tk_split_get_part(s, i);
		char path[256];
		snprintf(path, sizeof path, "%s/%s", out, p->file);
		assert_true(p->bytes <= o.max_bytes);
		assert_int_equal((off_t)p->bytes, file_size(path));
		events += p->events - 1; /* the M event in each */
		if (i)
			assert_int_equal(p->start, tk_split_get_part(s, i - 1)->end);
	}
	assert_int_equal(events, 2000);
	assert_true(tk_split_get_stats(s)->input_sorted);
	assert_int_equal(access(tk_split_index_path(s), R_OK), 0);
	tk_split_free(s);
	tk_split_free(NULL);
}

static tk_event flow_end(char ph, int64_t ts, int64_t id)
{
	tk_event ev = {0};
	ev.ph = ph;
	ev.has = TK_HAS_PH | TK_HAS_NAME | TK_HAS_TS | TK_HAS_CAT;
	ev.name = (tk_sv){"fl", 2};
	ev.cat = (tk_sv){"ac2g", 4};
	ev.ts = ts;
	ev.pid = (tk_id){TK_ID_INT, 1, {NULL, 0}};
	ev.tid = (tk_id){TK_ID_INT, 1, {NULL, 0}};
	ev.id = (tk_id){TK_ID_INT, id, {NULL, 0}};
	return ev;
}

/* An input in order for its first half, then out of order: the first pass
 * hands it to the sorter at the first late event (reading the prefix again)
 * and the parts come from the sorter. Flows: a pair inside one part, a pair
 * across parts, a lone f (kept) and a lone s (kept). */
static void test_split_unsorted_tail(void **state)
{
	(void)state;
	char in[128], out[128], name[200];
	snprintf(in, sizeof in, "%s/late.json", dir);
	snprintf(out, sizeof out, "%s/late", dir);
	tk_writer *w = NULL;
	assert_int_equal(tk_writer_open_path(&w, in, NULL), TK_OK);
	for (int i = 0; i < 1000; i++) { /* ts 1e6, 1e6+2000, ...: the even slots */
		tk_event ev = make(1000000 + i * 2000, name, 30);
		assert_int_equal(tk_writer_write(w, &ev), TK_OK);
	}
	tk_event f[] = {flow_end('s', 1000100, 1), flow_end('f', 1000200, 1), /* one part */
	                flow_end('s', 1000300, 2), flow_end('f', 2990000, 2), /* across */
	                flow_end('f', 1500000, 3), flow_end('s', 1600000, 4)}; /* lone */
	for (size_t i = 0; i < sizeof f / sizeof *f; i++)
		assert_int_equal(tk_writer_write(w, &f[i]), TK_OK);
	for (int i = 0; i < 1000; i++) { /* the odd slots, late */
		tk_event ev = make(1001000 + i * 2000, name, 30);
		assert_int_equal(tk_writer_write(w, &ev), TK_OK);
	}
	assert_int_equal(tk_writer_close(w), TK_OK);
	tk_writer_free(w);

	tk_split_opts o = {0};
	o.dir = out;
	o.max_bytes = 30000;
	o.memory_bytes = 64 << 10; /* spills */
	o.wopts.gzip = -1;
	tk_split *s = NULL;
	assert_int_equal(tk_split_new(&s, &o), TK_OK);
	assert_int_equal(tk_split_run(s, in), TK_OK);
	const tk_split_stats *st = tk_split_get_stats(s);
	assert_false(st->input_sorted);
	assert_true(st->sorter_runs > 1);
	assert_int_equal(st->events_in, 2006);
	assert_int_equal(st->flows_cut, 1);
	assert_int_equal(st->flow_ends_removed, 2);
	assert_int_equal(st->orphan_flow_ends, 2);
	assert_int_equal(st->events_out, 2004);
	int64_t last = INT64_MIN;
	for (size_t i = 0; i < tk_split_part_count(s); i++) {
		const tk_split_part *p = tk_split_get_part(s, i);
		assert_true(p->bytes <= o.max_bytes);
		assert_true(p->first_ts >= last); /* parts follow each other in time */
		last = p->first_ts;
	}
	tk_split_free(s);
}

/* --parts N gives N parts of about equal size whatever the times: here an
 * event a little before the first one (Kineto writes events out of time
 * order) at a time that is a large power of two of microseconds, and one
 * event at 0, far from the rest. */
static void test_parts_outliers(void **state)
{
	(void)state;
	char in[128], out[128], name[200];
	snprintf(in, sizeof in, "%s/outliers.json", dir);
	snprintf(out, sizeof out, "%s/outliers", dir);
	tk_writer *w = NULL;
	assert_int_equal(tk_writer_open_path(&w, in, NULL), TK_OK);
	const int64_t t0 = (1ll << 40) * 1000, n = 4000;
	for (int64_t i = 0; i < n; i++) {
		int64_t ts = i == 1 ? t0 - 500 : i == n / 2 ? 0 : t0 + i * 1000;
		tk_event ev = make(ts, name, 30);
		assert_int_equal(tk_writer_write(w, &ev), TK_OK);
	}
	assert_int_equal(tk_writer_close(w), TK_OK);
	tk_writer_free(w);
	for (unsigned parts = 2; parts <= 16; parts *= 2) {
		snprintf(out, sizeof out, "%s/outliers%u", dir, parts);
		tk_split_opts o = {0};
		o.dir = out;
		o.n_parts = parts;
		o.wopts.gzip = -1;
		tk_split *s = NULL;
		assert_int_equal(tk_split_new(&s, &o), TK_OK);
		assert_int_equal(tk_split_run(s, in), TK_OK);
		assert_int_equal(tk_split_part_count(s), parts);
		uint64_t events = 0;
		for (size_t i = 0; i < parts; i++) {
			uint64_t e = tk_split_get_part(s, i)->events;
			if (e < (uint64_t)n / parts * 8 / 10 || e > (uint64_t)n / parts * 12 / 10)
				fail_msg("--parts %u: part %zu holds %llu of %lld events", parts, i, (unsigned long long)e,
				         (long long)n);
			events += e;
		}
		assert_int_equal(events, n);
		tk_split_free(s);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_budget_plain),
		cmocka_unit_test(test_budget_gzip),
		cmocka_unit_test(test_group_all_or_nothing),
		cmocka_unit_test(test_split_by_size),
		cmocka_unit_test(test_split_unsorted_tail),
		cmocka_unit_test(test_parts_outliers),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
