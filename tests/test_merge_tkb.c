/* test_merge_tkb.c: trace-merge's library places .tkb inputs by their clock anchors and header ranks. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "tracekit/merge.h"
#include "tracekit/tkb.h"
#include "tracekit/tracekit.h"

static char dir[] = "/tmp/tkmergetkb-XXXXXX";

/* One .tkb file of rank `rank` with three kernels at CUPTI times t0, t0+1000, t0+2000
 * and a start anchor saying CLOCK_REALTIME = CUPTI clock + shift. */
static void write_rank(const char *path, int64_t rank, int64_t t0, int64_t shift)
{
	tk_tkb_anchor a = {5000000, 5000000 + shift, 77};
	tk_tkb_header h = {"test", "host", 100 + rank, rank, 2, &a};
	tk_tkb_writer *w = NULL;
	assert_int_equal(tk_tkb_writer_open(&w, path, &h, NULL), 0);
	tk_tkb_buf *b = tk_tkb_buf_new(16, 4096);
	assert_non_null(b);
	for (int i = 0; i < 3; i++) {
		tk_event ev = {0};
		ev.ph = 'X';
		ev.has = TK_HAS_PH | TK_HAS_TS | TK_HAS_DUR | TK_HAS_NAME | TK_HAS_CAT;
		ev.ts = t0 + i * 1000;
		ev.dur = 500;
		ev.name = (tk_sv){"ncclKernel_AllReduce", 20};
		ev.cat = (tk_sv){"kernel", 6};
		ev.pid = (tk_id){TK_ID_INT, 0, {NULL, 0}};
		ev.tid = (tk_id){TK_ID_INT, 7, {NULL, 0}};
		assert_int_equal(tk_tkb_buf_append(b, &ev), 0);
	}
	assert_int_equal(tk_tkb_writer_submit(w, b), 0);
	assert_int_equal(tk_tkb_writer_close(w, NULL), 0);
	tk_tkb_writer_free(w);
	tk_tkb_buf_free(b);
}

static void test_anchors_and_ranks(void **state)
{
	(void)state;
	char p0[256], p1[256], out[256];
	snprintf(p0, sizeof p0, "%s/a.tkb", dir);
	snprintf(p1, sizeof p1, "%s/b.tkb", dir);
	snprintf(out, sizeof out, "%s/all.json", dir);
	/* rank 1 is listed first; its CUPTI clock runs 3 ms behind the wall
	 * clock, rank 0's 1 ms behind: on the wall clock both start at 10 ms */
	write_rank(p0, 1, 7000000, 3000000);
	write_rank(p1, 0, 9000000, 1000000);
	tk_merge_opts o = {0};
	tk_merge *m = NULL;
	assert_int_equal(tk_merge_new(&m, &o), 0);
	assert_int_equal(tk_merge_add(m, p0, -1), 0);
	assert_int_equal(tk_merge_add(m, p1, -1), 0);
	if (tk_merge_write(m, out))
		fail_msg("%s", tk_merge_error(m));
	tk_merge_rank_info info;
	assert_int_equal(tk_merge_info(m, 0, &info), 0);
	assert_int_equal(info.rank, 1);
	assert_int_equal(info.rank_source, 1);
	assert_int_equal(tk_merge_info(m, 1, &info), 0);
	assert_int_equal(info.rank, 0);
	tk_merge_free(m);

	/* read back: the kernels of both ranks pair up at the same times */
	tk_reader *r = NULL;
	assert_int_equal(tk_reader_open_path(&r, out, NULL), 0);
	const tk_event *ev;
	int64_t ts[2][3];
	int n[2] = {0, 0};
	while (tk_reader_next(r, &ev) == TK_OK) {
		if (ev->ph != 'X' || !ev->name.ptr || strcmp(ev->name.ptr, "ncclKernel_AllReduce") != 0)
			continue;
		/* pids are remapped per rank: rank r owns r*1000000 + pid */
		int rank = (int)(ev->pid.num / 1000000);
		assert_true(rank == 0 || rank == 1);
		assert_true(n[rank] < 3);
		ts[rank][n[rank]++] = ev->ts;
	}
	tk_sv base = tk_reader_meta_find(r, "baseTimeNanoseconds");
	assert_non_null(base.ptr);
	int64_t b = strtoll(base.ptr, NULL, 10);
	/* the metadata says the pid scheme and how many inputs made it */
	int64_t span = 0;
	size_t ranks = 0;
	assert_int_equal(tk_merge_pid_span(r, &span), 0);
	assert_int_equal(span, 1000000);
	assert_int_equal(tk_merge_rank_count(r, &ranks), 0);
	assert_int_equal(ranks, 2);
	tk_reader_free(r);
	r = NULL;
	assert_int_equal(tk_reader_open_path(&r, p0, NULL), 0);
	while (tk_reader_next(r, &ev) == TK_OK)
		;
	assert_int_equal(tk_merge_rank_count(r, &ranks), TK_EOF); /* not a merge output */
	tk_reader_free(r);
	assert_int_equal(n[0], 3);
	assert_int_equal(n[1], 3);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(ts[0][i], ts[1][i]);
		assert_int_equal(b + ts[0][i], 10000000 + i * 1000);
	}
	unlink(p0);
	unlink(p1);
	unlink(out);
}

/* tk_merge_rank_of: a merged pid's rank, from its block or its "rank R"
 * prefix; anything else is not a rank. */
static void test_rank_of(void **state)
{
	(void)state;
	static const struct {
		const char *str; /* NULL: the integer pid */
		int64_t num, span;
		int rc;
		int64_t rank;
	} c[] = {
		{NULL, 3000017, 1000000, 0, 3},   {NULL, 999999, 1000000, 0, 0},     {NULL, -5, 1000000, TK_EOF, 0},
		{NULL, 17, 0, TK_EOF, 0},          {"rank 12 Spans", 0, 0, 0, 12},    {"rank 0", 0, 0, 0, 0},
		{"rank 7 ", 0, 0, 0, 7},           {"rank 12x", 0, 0, TK_EOF, 0},     {"rank ", 0, 0, TK_EOF, 0},
		{"ranks 1", 0, 0, TK_EOF, 0},      {"Rank 1", 0, 0, TK_EOF, 0},       {"rank -1", 0, 0, TK_EOF, 0},
		{"rank 8388607", 0, 0, 0, 8388607}, {"rank 8388608", 0, 0, TK_EOF, 0}, {"rank 99999999999999999999 x", 0, 0, TK_EOF, 0},
	};
	for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
		tk_id pid = c[i].str ? (tk_id){TK_ID_STR, 0, {c[i].str, strlen(c[i].str)}} : (tk_id){TK_ID_INT, c[i].num, {NULL, 0}};
		int64_t rank = -1;
		int rc = tk_merge_rank_of(&pid, c[i].span, &rank);
		if (rc != c[i].rc || (rc == 0 && rank != c[i].rank))
			fail_msg("case %zu (%s): rc %d rank %lld, want %d %lld", i, c[i].str ? c[i].str : "int", rc,
			         (long long)rank, c[i].rc, (long long)c[i].rank);
	}
	tk_id none = {0};
	int64_t r;
	assert_int_equal(tk_merge_rank_of(&none, 1000000, &r), TK_EOF);
	assert_int_equal(tk_merge_rank_of(NULL, 1000000, &r), TK_ERR_ARG);
}

int main(void)
{
	if (!mkdtemp(dir))
		return 1;
	const struct CMUnitTest tests[] = {cmocka_unit_test(test_anchors_and_ranks), cmocka_unit_test(test_rank_of)};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	rmdir(dir);
	return rc;
}
