/* test_stats_batch.c: the tables' part of a batch made on the reader's parse threads (tk__stats_batch) and taken whole (tk_stats_add_from): the same tables as tk_stats_add on one thread. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "testutil.h"
#include "tracekit/stats.h"
#include "tracekit/tracekit.h"
#include "../libtrace/src/par.h"
#include "../libtrace/src/stats_internal.h"
#include "../libtrace/src/tkb_int.h"

typedef tu_bytes text;

/* printf onto t (tu_put), NUL kept after the text */
static void put(text *t, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int k = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	assert_true(k >= 0);
	char *tmp = malloc((size_t)k + 1);
	assert_non_null(tmp);
	va_start(ap, fmt);
	vsnprintf(tmp, (size_t)k + 1, fmt, ap);
	va_end(ap);
	tu_put(t, tmp, (size_t)k + 1);
	t->n--; /* the NUL stays after the text, not in it */
	free(tmp);
}

static uint64_t rnd(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

/* A Kineto-shaped trace of every kind of event the tables read or pass
 * over: ops nested on five CPU threads (one with a string tid) that
 * overlap in time, so that an op given to the wrong thread nests
 * otherwise; runtime calls launching kernels, memcpys and memsets by
 * correlation; the same name as op and kernel; a few hundred distinct
 * names; ProfilerStep#N; utility ops torch drops; ops with FLOPs; events
 * without args or duration; instants, metadata, flows, Python frames and
 * categories the tables skip; every 40th kernel moved before its launch. */
static char *make_trace(size_t steps, size_t *len)
{
	text t = {0};
	uint64_t x = 0x243f6a8885a308d3ull;
	put(&t, "{\"schemaVersion\": 1,\n\"traceEvents\": [\n");
	put(&t, "{\"ph\": \"M\", \"name\": \"process_name\", \"pid\": 1, \"tid\": 0, \"args\": {\"name\": \"python\"}}");
	int64_t corr = 1, ext = 1;
	for (size_t s = 0; s < steps; s++) {
		int64_t base = 1000000 + (int64_t)s * 100000;
		put(&t, ",\n{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"ProfilerStep#%zu\", \"pid\": 1, "
		        "\"tid\": 1, \"ts\": %lld, \"dur\": 99000, \"args\": {\"External id\": %lld}}",
		    s, (long long)base, (long long)ext++);
		text moved = {0}, step = {0};
		put(&step, "%s", "");
		for (int th = 0; th < 5; th++) {
			char tid[32];
			if (th == 4)
				snprintf(tid, sizeof tid, "\"stream %d\"", 7);
			else
				snprintf(tid, sizeof tid, "%d", th + 1);
			int64_t ts = base + 100 + th * 37;
			/* rows whose first events tie: their order is the order they
			 * were made in */
			put(&step, ",\n{\"ph\": \"X\", \"cat\": \"%s\", \"name\": \"tie_%d\", \"pid\": 1, \"tid\": %s, "
			        "\"ts\": %lld, \"dur\": 10, \"args\": {\"Input Dims\": [[%d]]}}",
			    th == 3 ? "kernel" : "cpu_op", (int)((s + (size_t)th) % 7), tid, (long long)base + 50,
			    (int)(s % 3));
			for (int k = 0; k < 4; k++, ts += 20000) {
				int64_t e = ext++;
				const char *cat = k == 3 ? "user_annotation" : "cpu_op";
				put(&step, ",\n{\"ph\": \"X\", \"cat\": \"%s\", \"name\": \"aten::linear\", \"pid\": 1, \"tid\": %s, "
				        "\"ts\": %lld.%03d, \"dur\": 15000, \"args\": {\"External id\": %lld}}",
				    cat, tid, (long long)ts, (int)(rnd(&x) % 1000), (long long)e);
				int64_t m = ext++;
				put(&step, ",\n{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::mm\", \"pid\": 1, \"tid\": %s, "
				        "\"ts\": %lld, \"dur\": 9000, \"args\": {\"External id\": %lld, \"Input Dims\": [[%d, 64], "
				        "[64, %d]], \"Input type\": [\"float\", \"float\"]}}",
				    tid, (long long)ts + 100, (long long)m, 8 << (rnd(&x) % 4), 16 << (rnd(&x) % 3));
				int64_t c = corr++;
				put(&step, ",\n{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", \"pid\": 1, "
				        "\"tid\": %s, \"ts\": %lld, \"dur\": 30, \"args\": {\"External id\": %lld, \"correlation\": %lld}}",
				    tid, (long long)ts + 200, (long long)m, (long long)c);
				text *kt = c % 40 == 0 ? &moved : &step;
				put(kt, ",\n{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"%s\", \"pid\": 0, \"tid\": 7, "
				        "\"ts\": %lld, \"dur\": %d, \"args\": {\"External id\": %lld, \"correlation\": %lld}}",
				    c % 3 ? "gemm_kernel" : "aten::add", (long long)ts + 500, 100 + (int)(rnd(&x) % 5000),
				    (long long)m, (long long)c);
				/* many names: past the name cache's slots */
				put(&step, ",\n{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"op_%d\", \"pid\": 1, \"tid\": %s, "
				        "\"ts\": %lld, \"dur\": 2000, \"args\": {\"External id\": %lld}}",
				    (int)(rnd(&x) % 1500), tid, (long long)ts + 9500, (long long)ext++);
				put(&step, ",\n{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::add\", \"pid\": 1, \"tid\": %s, "
				        "\"ts\": %lld, \"dur\": 1000, \"args\": {\"External id\": %lld%s}}",
				    tid, (long long)ts + 12000, (long long)ext++,
				    k == 1 ? ", \"Input dims\": [[4, 4], [4, 4], []]" : "");
				/* torch drops these */
				put(&step, ",\n{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::is_leaf\", \"pid\": 1, \"tid\": %s, "
				        "\"ts\": %lld, \"dur\": 10}",
				    tid, (long long)ts + 12100);
				/* no args; no duration */
				put(&step, ",\n{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::empty\", \"pid\": 1, \"tid\": %s, "
				        "\"ts\": %lld, \"dur\": 5}",
				    tid, (long long)ts + 13000);
				put(&step, ",\n{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::view\", \"pid\": 1, \"tid\": %s, "
				        "\"ts\": %lld, \"args\": {\"External id\": %lld}}",
				    tid, (long long)ts + 13100, (long long)ext++);
				if (k == 1) {
					int64_t c2 = corr++;
					put(&step, ",\n{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaMemcpyAsync\", \"pid\": 1, "
					        "\"tid\": %s, \"ts\": %lld, \"dur\": 40, \"args\": {\"correlation\": %lld}}",
					    tid, (long long)ts + 14000, (long long)c2);
					put(&step, ",\n{\"ph\": \"X\", \"cat\": \"gpu_memcpy\", \"name\": \"Memcpy HtoD (Pageable -> Device)\", "
					        "\"pid\": 0, \"tid\": 8, \"ts\": %lld, \"dur\": 700, \"args\": {\"correlation\": %lld, "
					        "\"bytes\": %d}}",
					    (long long)ts + 14100, (long long)c2, 4096 + (int)(rnd(&x) % 100000));
					put(&step, ",\n{\"ph\": \"X\", \"cat\": \"gpu_memset\", \"name\": \"Memset (Device)\", \"pid\": 0, "
					        "\"tid\": 8, \"ts\": %lld, \"dur\": 30, \"args\": {\"correlation\": %lld, \"bytes\": 512}}",
					    (long long)ts + 15000, (long long)corr++);
				}
				if (k == 2) {
					put(&step, ",\n{\"ph\": \"X\", \"cat\": \"python_function\", \"name\": \"train.py(12): step\", "
					        "\"pid\": 1, \"tid\": %s, \"ts\": %lld, \"dur\": 100}",
					    tid, (long long)ts + 16000);
					put(&step, ",\n{\"ph\": \"i\", \"cat\": \"cpu_instant_event\", \"name\": \"mark\", \"pid\": 1, "
					        "\"tid\": %s, \"ts\": %lld, \"s\": \"t\"}",
					    tid, (long long)ts + 16500);
					put(&step, ",\n{\"ph\": \"s\", \"id\": %lld, \"pid\": 1, \"tid\": %s, \"ts\": %lld, "
					        "\"cat\": \"ac2g\", \"name\": \"ac2g\"}",
					    (long long)c, tid, (long long)ts + 200);
					put(&step, ",\n{\"ph\": \"X\", \"cat\": \"Foo\", \"name\": \"foo_work\", \"pid\": 1, \"tid\": %s, "
					        "\"ts\": %lld, \"dur\": 300}",
					    tid, (long long)ts + 17000);
				}
			}
		}
		/* these kernels come before their launch */
		if (moved.n)
			put(&t, "%s", moved.p);
		put(&t, "%s", step.p);
		free(moved.p);
		free(step.p);
	}
	put(&t, "\n],\n\"traceName\": \"batch test\"}\n");
	*len = t.n;
	return (char *)t.p;
}

/* The tables as text (JSON), every row: what must be the same. */
static char *tables(tk_stats *s)
{
	tk_table_opts to = {0};
	to.row_limit = -1;
	to.format = TK_TABLE_JSON;
	char *ops = NULL;
	size_t len = 0;
	assert_int_equal(tk_stats_format_ops(&s, 1, &to, &ops, &len), 0);
	text t = {0};
	put(&t, "%s", ops);
	free(ops);
	static const int which[] = {TK_STATS_KERNEL, TK_STATS_MEMCPY, TK_STATS_API};
	for (int w = 0; w < 3; w++)
		for (size_t i = 0; i < tk_stats_sum_count(s, which[w]); i++) {
			const tk_stats_sum *r = tk_stats_sum_get(s, which[w], i);
			put(&t, "%d %s %llu %lld %lld %lld %.17g %.17g %.17g %llu\n", which[w], r->name,
			    (unsigned long long)r->count, (long long)r->total, (long long)r->min, (long long)r->max, r->avg, r->med,
			    r->stddev, (unsigned long long)r->bytes);
		}
	const tk_stats_info *in = tk_stats_get_info(s);
	put(&t, "%llu %llu %llu %llu %llu %llu %lld %lld\n", (unsigned long long)in->events, (unsigned long long)in->ops,
	    (unsigned long long)in->apis, (unsigned long long)in->device, (unsigned long long)in->unattributed,
	    (unsigned long long)in->late, (long long)in->ts_min, (long long)in->ts_max);
	for (size_t i = 0; i < tk_stats_op_count(s); i++) {
		const tk_stats_op *o = tk_stats_op_get(s, i);
		put(&t, "%s|%s|%d %llu %lld %lld %lld %lld %llu %llu\n", o->name, o->shapes ? o->shapes : "-", o->is_device,
		    (unsigned long long)o->count, (long long)o->self_cpu, (long long)o->cpu_total, (long long)o->self_dev,
		    (long long)o->dev_total, (unsigned long long)o->flops, (unsigned long long)o->first);
	}
	return (char *)t.p;
}

/* The trace on one thread, event by event (tk_stats_add). */
static char *tables_one(const char *path, const tk_stats_opts *so)
{
	tk_reader *r = NULL;
	tk_stats *s = NULL;
	assert_int_equal(tk_reader_open_path(&r, path, NULL), 0);
	assert_int_equal(tk_stats_new(&s, so), 0);
	const tk_event *ev;
	int rc;
	while ((rc = tk_reader_next(r, &ev)) == TK_OK)
		assert_int_equal(tk_stats_add(s, ev), 0);
	assert_int_equal(rc, TK_EOF);
	assert_int_equal(tk_stats_finish(s), 0);
	char *t = tables(s);
	tk_reader_free(r);
	tk_stats_free(s);
	return t;
}

/* The trace on `threads` threads with the notes (and batches) of the
 * options `note` into stats of options so (the nesting on its thread),
 * by tk_stats_add_from: the batches it took in *batches. */
static char *tables_par(const char *path, const tk_stats_opts *so, const tk_stats_opts *note, unsigned threads,
                        uint64_t *batches)
{
	tk_reader_opts ro = {0};
	ro.threads = threads;
	ro.note_fn = tk_stats_note;
	ro.note_ctx = note;
	ro.note_size = tk_stats_note_size();
	tk_stats_opts o = *so;
	o.threads = 2;
	tk_reader *r = NULL;
	tk_stats *s = NULL;
	assert_int_equal(tk_reader_open_path(&r, path, &ro), 0);
	assert_int_equal(tk_stats_new(&s, &o), 0);
	const tk_event *ev;
	int rc;
	while ((rc = tk_reader_next(r, &ev)) == TK_OK)
		assert_int_equal(tk_stats_add_from(s, r, ev), 0);
	assert_int_equal(rc, TK_EOF);
	assert_int_equal(tk_stats_finish(s), 0);
	*batches = tk__stats_batches(s);
	char *t = tables(s);
	tk_reader_free(r);
	tk_stats_free(s);
	return t;
}

/* Options with every FLOP mode, a category list and grouping by input
 * shapes, in blocks of 2 to 64 KiB on 2 to 8 threads, JSON and .tkb: the
 * batches were taken, and the tables are one thread's. */
static void test_batches_same(void **st)
{
	(void)st;
	size_t len;
	char *trace = make_trace(120, &len);
	char json[1024], tkb[1024];
	snprintf(json, sizeof json, "%s", tu_path("t.json"));
	snprintf(tkb, sizeof tkb, "%s", tu_path("t.tkb"));
	tu_write_file(json, trace, len);
	free(trace);
	tk_writer_opts wo = {.format = TK_FORMAT_TKB};
	assert_int_equal(tu_convert(json, tkb, &wo, NULL), 0);
	static const char *const cats[] = {NULL, "cpu_op,kernel,cuda_runtime,gpu_memcpy,Foo"};
	static const size_t blocks[] = {2048, 9000, 65536};
	static const unsigned threads[] = {2, 3, 8};
	size_t tkb_batch = tk__tkb_batch;
	uint64_t tkb_batches = 0;
	for (int flops = 0; flops < 3; flops++)
		for (int c = 0; c < 4; c++) {
			tk_stats_opts so = {0};
			so.flops = flops;
			so.cats = cats[c & 1];
			so.group_by_shapes = c >> 1;
			char *want = tables_one(json, &so);
			for (int k = 0; k < 3; k++) {
				uint64_t batches = 0;
				tk__par_block_bytes = blocks[k];
				char *got = tables_par(json, &so, &so, threads[k], &batches);
				tk__par_block_bytes = 0;
				assert_string_equal(got, want);
				free(got);
				if (batches < 10)
					fail_msg("JSON, %u threads: %llu batches taken", threads[k], (unsigned long long)batches);
				/* .tkb: whole chunks, and chunks cut, the caller decoding the rest */
				tk__tkb_batch = k == 1 ? (size_t)16 << 10 : tkb_batch;
				got = tables_par(tkb, &so, &so, threads[k], &batches);
				tk__tkb_batch = tkb_batch;
				assert_string_equal(got, want);
				free(got);
				tkb_batches += batches;
			}
			free(want);
		}
	/* a chunk no worker has taken when its turn comes is decoded by the
	 * caller, without a batch: at least some were the workers' */
	for (int round = 0; round < 50 && !tkb_batches; round++) {
		tk_stats_opts so = {0};
		uint64_t batches = 0;
		free(tables_par(tkb, &so, &so, 8, &batches));
		tkb_batches += batches;
	}
	if (!tkb_batches)
		fail_msg(".tkb: no batch taken");
	tu_cleanup();
}

/* Options the batches cannot serve (the call paths, a window, the tables
 * that follow every event in turn), or notes written for other options:
 * no batch is taken, the tables are one thread's. */
static void test_batches_declined(void **st)
{
	(void)st;
	size_t len;
	char *trace = make_trace(30, &len);
	char json[1024];
	snprintf(json, sizeof json, "%s", tu_path("t.json"));
	tu_write_file(json, trace, len);
	free(trace);
	for (int k = 1; k < 7; k++) {
		tk_stats_opts so = {0}, note = {0};
		so.flops = note.flops = TK_FLOPS_TORCH;
		switch (k) {
		case 1: so.flame = note.flame = 1; break;
		case 2:
			so.window = note.window = (tk_window){1, 1500000, 2500000, 0, 0};
			break;
		case 3: so.step_table = note.step_table = 1; break;
		case 4: so.memory_table = 1; break;              /* the notes' options would batch */
		case 5: note.flops = TK_FLOPS_EXTENDED; break; /* notes for other options */
		case 6: note.group_by_shapes = 1; break;
		}
		char *want = tables_one(json, &so);
		uint64_t batches = 1;
		tk__par_block_bytes = 4096;
		char *got = tables_par(json, &so, &note, 3, &batches);
		tk__par_block_bytes = 0;
		assert_string_equal(got, want);
		assert_int_equal(batches, 0);
		free(want);
		free(got);
	}
	tu_cleanup();
}

/* An event of a batch taken whole not given next is an error, not tables
 * that count events twice or never. */
static void test_batches_misuse(void **st)
{
	(void)st;
	size_t len;
	char *trace = make_trace(30, &len);
	tk_stats_opts so = {0};
	tk_reader_opts ro = {0};
	ro.threads = 3;
	ro.note_fn = tk_stats_note;
	ro.note_ctx = &so;
	ro.note_size = tk_stats_note_size();
	tk__par_block_bytes = 4096;
	tk_reader *r = tu_open_mem(trace, len, "t.json", &ro);
	tk_stats *s = NULL;
	assert_int_equal(tk_stats_new(&s, &so), 0);
	const tk_event *ev;
	int rc = 0, skipped = 0;
	while (tk_reader_next(r, &ev) == TK_OK) {
		uint64_t before = tk__stats_batches(s);
		if ((rc = tk_stats_add_from(s, r, ev)) != 0)
			break;
		if (tk__stats_batches(s) > before && tk__stats_batches(s) == 3) {
			/* the batch's next event, skipped */
			assert_int_equal(tk_reader_next(r, &ev), TK_OK);
			skipped = 1;
		}
	}
	tk__par_block_bytes = 0;
	assert_true(skipped);
	assert_int_equal(rc, TK_ERR_ARG);
	assert_non_null(strstr(tk_stats_error(s), "not given next"));
	tk_reader_free(r);
	tk_stats_free(s);
	free(trace);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_batches_same),
		cmocka_unit_test(test_batches_declined),
		cmocka_unit_test(test_batches_misuse),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
