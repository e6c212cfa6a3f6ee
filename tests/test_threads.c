/* test_threads.c: the write-behind thread of the writers, the parse-ahead pump, and the lazy args skip of trace-split's first pass. */
#define _GNU_SOURCE /* memmem */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/stat.h>

#include "testutil.h"
#include "../libtrace/src/internal.h"
#include "../libtrace/src/pump.h"
#include "tracekit/split.h"

#define TK__BLOCK_TEST (1024 * 1024) /* the sink's block */

/* A trace of n events with varied args, as text. */
static char *make_trace(size_t n, size_t *len)
{
	tk__buf b = {0};
	char line[512];
	assert_int_equal(tk__buf_append(&b, "{\"traceEvents\":[\n", 17), 0);
	for (size_t i = 0; i < n; i++) {
		int k = snprintf(line, sizeof line,
		                 "%s{\"ph\": \"X\", \"name\": \"op%zu\", \"pid\": 1, \"tid\": %zu, \"ts\": %zu.%03zu, "
		                 "\"dur\": 3, \"args\": {\"External id\": %zu, \"Input Dims\": [[%zu, 3], []], "
		                 "\"s\": \"a [b] {c}\", \"f\": [true, null, -1.5e3]}}\n",
		                 i ? "," : "", i % 7, i % 3, i, i % 1000, i, i % 97);
		assert_int_equal(tk__buf_append(&b, line, (size_t)k), 0);
	}
	assert_int_equal(tk__buf_append(&b, "]}\n", 4), 0); /* with its NUL */
	*len = b.len - 1;
	return b.p;
}

/* The events of make_trace(n). */
static tu_events trace_events(size_t n)
{
	size_t len;
	char *text = make_trace(n, &len);
	tu_events in = {0};
	assert_int_equal(tu_read_text(text, &in), TK_EOF);
	free(text);
	return in;
}

/* make_trace(n) written to tu_path(name) (returned) and its events in *in. */
static const char *trace_file(size_t n, const char *name, tu_events *in)
{
	size_t len;
	char *text = make_trace(n, &len);
	const char *path = tu_path(name);
	tu_write_file(path, text, len);
	*in = (tu_events){0};
	assert_int_equal(tu_read_text(text, in), TK_EOF);
	free(text);
	return path;
}

/* Reads a file and checks that it holds exactly the first n events of want. */
static void expect_file_events(const char *path, const tu_events *want, size_t n)
{
	tk_reader *r = NULL;
	tu_events got = {0};
	assert_int_equal(tk_reader_open_path(&r, path, NULL), 0);
	assert_int_equal(tu_read_all(r, &got), TK_EOF);
	tk_reader_free(r);
	assert_int_equal(got.n, n);
	for (size_t i = 0; i < n; i++)
		assert_true(tk_event_equal(want->ev[i], got.ev[i]));
	tu_events_free(&got);
}

/* ---- the writer's thread ---- */

/* The events written to path (gzip level 6 for a .gz name), and
 * read back as bytes; the size the writer reports is the file's. */
static char *written_file(const tu_events *in, const char *path, size_t *n)
{
	tk_writer *w = NULL;
	assert_int_equal(tk_writer_open_path(&w, path, NULL), 0);
	for (size_t i = 0; i < in->n; i++)
		assert_int_equal(tk_writer_write(w, in->ev[i]), 0);
	assert_int_equal(tk_writer_close(w), 0);
	char *file = tu_read_file(path, n);
	assert_int_equal(tk_writer_bytes(w), *n);
	tk_writer_free(w);
	return file;
}

/* Several MiB through the thread, plain and gzip: every event comes back,
 * and tk_writer_bytes() after close is the file's size. */
static void test_large_output_through_thread(void **state)
{
	(void)state;
	tu_events in = trace_events(40000);
	for (int gz = 0; gz < 2; gz++) {
		const char *path = tu_path(gz ? "big.json.gz" : "big.json");
		size_t n;
		free(written_file(&in, path, &n));
		expect_file_events(path, &in, in.n);
	}
	tu_events_free(&in);
}

/* gzip under a byte budget of more than a MiB: the compressor is flushed
 * through the thread to learn the exact size; the budget holds and the size
 * that the writer reports is the file's. */
static void test_gzip_budget_through_thread(void **state)
{
	(void)state;
	tu_events in = trace_events(150000);
	const uint64_t budget = 1200 << 10;
	const char *path = tu_path("budget.json.gz");
	tk_writer *w = NULL;
	assert_int_equal(tk_writer_open_path(&w, path, NULL), 0);
	assert_int_equal(tk_writer_set_max_bytes(w, budget), 0);
	size_t n = 0;
	int rc;
	while (n < in.n && (rc = tk_writer_write(w, in.ev[n])) == 0)
		n++;
	assert_true(n < in.n); /* the budget ran out */
	assert_int_equal(rc, TK_ERR_LIMIT);
	assert_true(n > 40000); /* several MiB of text: the thread ran */
	assert_int_equal(tk_writer_close(w), 0);
	size_t size;
	char *file = tu_read_file(path, &size);
	assert_int_equal(tk_writer_bytes(w), size);
	assert_true(size <= budget);
	assert_true(size > budget - 4096);
	free(file);
	tk_writer_free(w);
	expect_file_events(path, &in, n);
	tu_events_free(&in);
}

/* Several MiB of gzip written by the threads and by the caller alone are
 * the same bytes, and a valid gzip member that zlib reads back. */
static void test_gzip_same_bytes_without_threads(void **state)
{
	(void)state;
	tu_events in = trace_events(60000);
	char *file[2];
	size_t size[2];
	for (int off = 0; off < 2; off++) {
		const char *path = tu_path(off ? "nothreads.json.gz" : "threads.json.gz");
		tk__no_threads = off;
		file[off] = written_file(&in, path, &size[off]);
		tk__no_threads = 0;
		expect_file_events(path, &in, in.n);
	}
	assert_int_equal(size[0], size[1]);
	assert_memory_equal(file[0], file[1], size[0]);
	size_t n;
	char *text = tu_gunzip(file[0], size[0], &n);
	assert_true(n > 4 * TK__BLOCK_TEST);
	free(text);
	free(file[0]);
	free(file[1]);
	tu_events_free(&in);
}

/* gzip level 6 through libdeflate where it is built in (docs/gzip.md):
 * other bytes than zlib's, the same text, about the same size; where the
 * walk of its blocks refuses them, zlib deflates each, to zlib's own
 * bytes. Without libdeflate, the three are zlib's. */
static void test_gzip_libdeflate(void **state)
{
	(void)state;
	tu_events in = trace_events(60000);
	int ld = strstr(tk_dependency_versions(), "libdeflate") != NULL;
	const char *env = getenv("TK_GZIP");
	char *keep = env ? strdup(env) : NULL;
	size_t n_best, n_walk, n_zlib, t_best, t_zlib;
	unsetenv("TK_GZIP");
	char *best = written_file(&in, tu_path("best.json.gz"), &n_best);
	tk__gzip_no_walk = 1;
	char *nowalk = written_file(&in, tu_path("nowalk.json.gz"), &n_walk);
	tk__gzip_no_walk = 0;
	setenv("TK_GZIP", "zlib", 1);
	char *zl = written_file(&in, tu_path("zlib.json.gz"), &n_zlib);
	if (keep)
		setenv("TK_GZIP", keep, 1);
	else
		unsetenv("TK_GZIP");
	free(keep);
	assert_int_equal(n_walk, n_zlib);
	assert_memory_equal(nowalk, zl, n_zlib);
	if (ld) {
		assert_true(n_best != n_zlib || memcmp(best, zl, n_zlib) != 0);
		assert_true(n_best < n_zlib + n_zlib / 10 && n_zlib < n_best + n_best / 10);
	} else {
		assert_int_equal(n_best, n_zlib);
		assert_memory_equal(best, zl, n_zlib);
	}
	char *text_best = tu_gunzip(best, n_best, &t_best), *text_zlib = tu_gunzip(zl, n_zlib, &t_zlib);
	assert_true(t_zlib > 4 * TK__BLOCK_TEST);
	assert_int_equal(t_best, t_zlib);
	assert_memory_equal(text_best, text_zlib, t_zlib);
	expect_file_events(tu_path("best.json.gz"), &in, in.n);
	free(text_best);
	free(text_zlib);
	free(best);
	free(nowalk);
	free(zl);
	tu_events_free(&in);
}

/* The threads of this process named `name`, or all of them with NULL
 * (Linux: /proc/self/task). */
static int task_count(const char *name)
{
	DIR *d = opendir("/proc/self/task");
	assert_non_null(d);
	int n = 0;
	for (struct dirent *e; (e = readdir(d));) {
		if (e->d_name[0] == '.')
			continue;
		char path[300], comm[64] = "";
		snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
		FILE *f = fopen(path, "r");
		if (f) {
			if (!fgets(comm, sizeof comm, f))
				comm[0] = 0;
			fclose(f);
		}
		comm[strcspn(comm, "\n")] = 0;
		n += !name || !strcmp(comm, name);
	}
	closedir(d);
	return n;
}

/* The library's threads carry their names (what top -H, perf and bench's
 * rss_run --threads-cpu show): a reader's parse threads, gzip output's. */
static void test_thread_names(void **state)
{
	(void)state;
	size_t len;
	char *text = make_trace(60000, &len);
	assert_int_equal(task_count("tk-parse"), 0);
	tk_reader_opts o = {0};
	o.threads = 3;
	tk_reader *r = tu_open_mem(text, len, "names.json", &o);
	const tk_event *ev;
	assert_int_equal(tk_reader_next(r, &ev), TK_OK);
	assert_int_equal(task_count("tk-parse"), 2); /* the caller parses too */
	tk_reader_free(r);
	assert_int_equal(task_count("tk-parse"), 0);
	free(text);
}

/* gzip output deflated on the threads asked for (tk_writer_opts.threads;
 * 0: one per processor) is the same bytes with any count. */
static void test_gzip_threads_asked(void **state)
{
	(void)state;
	tu_events in = trace_events(60000);
	const unsigned asked[] = {1, 3, 0};
	char *first = NULL;
	size_t first_n = 0;
	int base = task_count(NULL);
	for (size_t k = 0; k < sizeof asked / sizeof *asked; k++) {
		const char *path = tu_path("asked.json.gz");
		tk_writer_opts o = {.format = TK_FORMAT_AUTO, .gzip = -1, .threads = asked[k]};
		tk_writer *w = NULL;
		assert_int_equal(tk_writer_open_path(&w, path, &o), 0);
		for (size_t i = 0; i < in.n; i++)
			assert_int_equal(tk_writer_write(w, in.ev[i]), 0);
		int cpus = tk__cpus() > TK__SINK_MAX_THREADS ? TK__SINK_MAX_THREADS : tk__cpus();
		assert_int_equal(task_count(NULL) - base, asked[k] ? (int)asked[k] : cpus);
		assert_int_equal(task_count("tk-write"), asked[k] ? (int)asked[k] : cpus);
		assert_int_equal(tk_writer_close(w), 0);
		tk_writer_free(w);
		assert_int_equal(task_count(NULL), base);
		size_t n;
		char *file = tu_read_file(path, &n);
		if (!first) {
			first = file;
			first_n = n;
			expect_file_events(path, &in, in.n);
			continue;
		}
		assert_int_equal(n, first_n);
		assert_memory_equal(file, first, n);
		free(file);
	}
	free(first);
	tu_events_free(&in);
}

/* gzip input decoded ahead on the source's thread gives the events, the
 * byte counts and, for a cut file, the warning of the caller's own
 * decoding; a reader freed halfway stops the thread. */
static void test_gzip_read_ahead(void **state)
{
	(void)state;
	tu_events in = trace_events(60000);
	const char *path = tu_path("ahead.json.gz");
	tk_writer *w = NULL;
	assert_int_equal(tk_writer_open_path(&w, path, NULL), 0);
	for (size_t i = 0; i < in.n; i++)
		assert_int_equal(tk_writer_write(w, in.ev[i]), 0);
	assert_int_equal(tk_writer_close(w), 0);
	tk_writer_free(w);
	size_t gn;
	char *g = tu_read_file(path, &gn);
	size_t cuts[] = {gn, gn - 5, gn / 2 + 3, gn / 7};
	/* a thread for every cut, the shortest too (tk__ahead_min) */
	size_t min_was = tk__ahead_min;
	tk__ahead_min = 0;
	for (size_t c = 0; c < sizeof cuts / sizeof cuts[0]; c++) {
		tu_write_file(path, g, cuts[c]);
		tu_events ev[2] = {{0}, {0}};
		tk_reader_stats st[2];
		char warn[2][512];
		for (int off = 0; off < 2; off++) {
			tk__no_threads = off;
			tk_reader *r = NULL;
			assert_int_equal(tk_reader_open_path(&r, path, NULL), 0);
			tk__no_threads = 0;
			/* (on one processor no thread starts: tk__src_read_ahead) */
			assert_true((r->src.ahead != NULL) == (!off && tk__cpus() > 1));
			assert_int_equal(tu_read_all(r, &ev[off]), TK_EOF);
			st[off] = *tk_reader_get_stats(r);
			snprintf(warn[off], sizeof warn[off], "%s", tk_reader_warning(r, 0) ? tk_reader_warning(r, 0) : "");
			tk_reader_free(r);
		}
		assert_int_equal(ev[0].n, ev[1].n);
		for (size_t i = 0; i < ev[0].n; i++)
			assert_true(tk_event_equal(ev[0].ev[i], ev[1].ev[i]));
		/* the whole text is in the first two (the second lacks part of the trailer) */
		assert_true(c < 2 ? ev[0].n == in.n : ev[0].n < in.n);
		assert_int_equal(st[0].bytes_in, cuts[c]);
		assert_int_equal(st[0].bytes_in, st[1].bytes_in);
		assert_int_equal(st[0].bytes_decoded, st[1].bytes_decoded);
		assert_string_equal(warn[0], warn[1]);
		assert_true(c == 0 ? !warn[0][0] : tu_contains(warn[0], "gzip stream is cut off"));
		tu_events_free(&ev[0]);
		tu_events_free(&ev[1]);
	}
	tk__ahead_min = min_was;
	/* a small input decodes on the caller's thread: below tk__ahead_min, in
	 * memory and in a file, with the same events */
	size_t small = tk__ahead_min - 1;
	assert_true(small < gn);
	for (int from_file = 0; from_file < 2; from_file++) {
		tk_reader *r = NULL;
		if (from_file) {
			tu_write_file(path, g, small);
			assert_int_equal(tk_reader_open_path(&r, path, NULL), 0);
		} else {
			assert_int_equal(tk_reader_open_memory(&r, g, small, "small.json.gz", NULL), 0);
		}
		assert_null(r->src.ahead);
		tu_events ev = {0};
		assert_int_equal(tu_read_all(r, &ev), TK_EOF);
		assert_true(ev.n > 0 && ev.n < in.n);
		for (size_t i = 0; i < ev.n; i++)
			assert_true(tk_event_equal(ev.ev[i], in.ev[i]));
		tu_events_free(&ev);
		tk_reader_free(r);
	}
	/* many readers at once (a merge of many ranks): threads for a few, the
	 * rest decode themselves, and every one reads everything */
	tu_write_file(path, g, gn);
	enum { MANY = 12 };
	tk_reader *many[MANY];
	size_t got[MANY] = {0};
	for (int i = 0; i < MANY; i++)
		assert_int_equal(tk_reader_open_path(&many[i], path, NULL), 0);
	for (int live = MANY; live;) {
		live = 0;
		for (int i = 0; i < MANY; i++) {
			const tk_event *e;
			for (int k = 0; k < 1000 && many[i]; k++) {
				int rc = tk_reader_next(many[i], &e);
				if (rc != TK_OK) {
					assert_int_equal(rc, TK_EOF);
					assert_int_equal(got[i], in.n);
					tk_reader_free(many[i]);
					many[i] = NULL;
					break;
				}
				assert_true(tk_event_equal(e, in.ev[got[i]++]));
			}
			live += many[i] != NULL;
		}
	}
	/* freed after a few events, with the thread still decoding */
	tk_reader *r = NULL;
	assert_int_equal(tk_reader_open_path(&r, path, NULL), 0);
	const tk_event *e;
	for (int i = 0; i < 10; i++)
		assert_int_equal(tk_reader_next(r, &e), TK_OK);
	tk_reader_free(r);
	free(g);
	tu_events_free(&in);
}

/* A write that fails on the thread (a full device) is returned by a later
 * call, with the device named, and close fails. */
/* A .pftrace of n events of every kind the reader makes: slices whole and
 * begun and ended, counters, instants with string ids, flows, metadata;
 * args nested, escaped, interned and not. */
static char *make_pftrace(size_t n, size_t *len)
{
	tk__buf b = {0};
	char line[768];
	assert_int_equal(tk__buf_puts(&b, "{\"traceEvents\":[\n{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":1,"
	                                  "\"args\":{\"name\":\"w\\u00e9 \\\"q\\\"\"}}"),
	                 0);
	for (size_t i = 0; i < n; i++) {
		int k;
		switch (i % 6) {
		case 0:
			k = snprintf(line, sizeof line,
			             ",\n{\"ph\":\"X\",\"name\":\"op%zu\",\"cat\":\"cpu_op\",\"pid\":1,\"tid\":%zu,\"ts\":%zu,"
			             "\"dur\":3,\"args\":{\"External id\":%zu,\"Input Dims\":[[%zu,3],[]],\"s\":\"a\\\"b\\\\%zu\\t\","
			             "\"d\":{\"x\":[true,null,-1.5e3,%zu.25],\"k%zu\":\"v\"}}}",
			             i % 11, i % 3, i, i, i % 97, i % 5, i, i % 13);
			break;
		case 1:
			k = snprintf(line, sizeof line,
			             ",\n{\"ph\":\"B\",\"name\":\"step%zu\",\"pid\":1,\"tid\":9,\"ts\":%zu,\"args\":{\"n\":%zu}}", i % 4,
			             i, i);
			break;
		case 2:
			k = snprintf(line, sizeof line, ",\n{\"ph\":\"E\",\"pid\":1,\"tid\":9,\"ts\":%zu}", i + 1);
			break;
		case 3:
			k = snprintf(line, sizeof line,
			             ",\n{\"ph\":\"C\",\"name\":\"mem\",\"pid\":1,\"ts\":%zu,\"args\":{\"a\":%zu,\"b\":%zu.5}}", i,
			             i * 7, i % 9);
			break;
		case 4:
			k = snprintf(line, sizeof line,
			             ",\n{\"ph\":\"i\",\"s\":\"t\",\"name\":\"mark\",\"pid\":2,\"tid\":4,\"ts\":%zu,\"id\":\"m%zu\","
			             "\"args\":{\"u\":\"\\u00fc%zu\"}}",
			             i, i % 17, i % 3);
			break;
		default:
			k = snprintf(line, sizeof line,
			             ",\n{\"ph\":\"%s\",\"name\":\"fl\",\"cat\":\"ac2g\",\"id\":%zu,\"pid\":1,\"tid\":%zu,\"ts\":%zu%s}",
			             i % 12 == 5 ? "s" : "f", i / 12, i % 3, i, i % 12 == 5 ? "" : ",\"bp\":\"e\"");
			break;
		}
		assert_true(k > 0 && (size_t)k < sizeof line);
		assert_int_equal(tk__buf_append(&b, line, (size_t)k), 0);
	}
	assert_int_equal(tk__buf_puts(&b, "\n]}\n"), 0);
	tu_write_file(tu_path("pf_in.json"), b.p, b.len);
	tk__buf_free(&b);
	tk_reader *r = NULL;
	tk_writer *w = NULL;
	tk_writer_opts wo = {.format = TK_FORMAT_PFTRACE};
	assert_int_equal(tk_reader_open_path(&r, tu_path("pf_in.json"), NULL), TK_OK);
	assert_int_equal(tk_writer_open_path(&w, tu_path("pf.pftrace"), &wo), TK_OK);
	const tk_event *ev;
	int rc;
	while ((rc = tk_reader_next(r, &ev)) == TK_OK)
		assert_int_equal(tk_writer_write(w, ev), TK_OK);
	assert_int_equal(rc, TK_EOF);
	assert_int_equal(tk_writer_close(w), TK_OK);
	tk_writer_free(w);
	tk_reader_free(r);
	return tu_read_file(tu_path("pf.pftrace"), len);
}

/* Reads p[0..n) with one thread and with `threads`, and checks that both
 * give the same events, end, error, warnings, metadata and counts (the
 * input bytes read too, at the end). Returns the packets the threads left
 * to the caller, their block's texts full. */
static uint64_t pf_same(const void *p, size_t n, unsigned threads, int strict)
{
	tk_reader_opts o1 = {0}, o2 = {0};
	o1.threads = 1;
	o2.threads = threads;
	o1.strict = o2.strict = strict;
	tk_reader *a = tu_open_mem(p, n, "t.pftrace", &o1), *b = tu_open_mem(p, n, "t.pftrace", &o2);
	char what[64];
	snprintf(what, sizeof what, "threads %u, %zu bytes", threads, n);
	tu_lockstep(a, b, what, NULL);
	uint64_t left = tk__pftrace_left(b);
	tk_reader_free(a);
	tk_reader_free(b);
	return left;
}

/* The .pftrace reader on threads (blocks read ahead, annotations rendered
 * by the threads) against one thread: whole, cut at many places, and
 * damaged; with blocks of a few packets and of many, and with no thread
 * able to start. */
static void test_pftrace_threads(void **state)
{
	(void)state;
	size_t len;
	char *pf = make_pftrace(6000, &len);
	assert_true(len > 100000);
	static const size_t blocks[] = {64, 700, 9000, 0};
	tk__pf_max_threads = 64; /* 5 and 8 threads start (at most 4 otherwise) */
	for (size_t bi = 0; bi < sizeof blocks / sizeof blocks[0]; bi++) {
		tk__pf_block_bytes = blocks[bi];
		/* 2, 5 and 8 threads on the smallest blocks, 3 on the others */
		for (unsigned th = bi ? 3 : 2; th <= (bi ? 3u : 8u); th += 3) {
			pf_same(pf, len, th, 0);
			for (size_t cut = 1; cut < 8; cut += bi ? 2 : 1) {
				pf_same(pf, len * cut / 8 + bi, th, 0);
				pf_same(pf, len * cut / 8 + bi, th, 1);
			}
			/* damaged: a byte changed in the middle */
			for (size_t at = len / 3; at < len; at += len / 5 + 7) {
				char keep = pf[at];
				pf[at] = (char)(keep ^ 0x5a);
				pf_same(pf, len, th, 0);
				pf[at] = (char)0x0a;
				pf_same(pf, len, th, 1);
				pf[at] = keep;
			}
		}
		tk__no_threads = 1; /* none starts: the caller reads the blocks alone */
		pf_same(pf, len, 4, 0);
		pf_same(pf, len * 5 / 8, 4, 0);
		tk__no_threads = 0;
	}
	tk__pf_max_threads = 0;
	/* a block's texts held to tk__pf_block_text (16 MiB; here 3,000 bytes,
	 * a few events' annotations): the caller renders the rest of the block
	 * itself; tried until the threads were ahead of the caller */
	tk__pf_block_bytes = 9000;
	tk__pf_block_text = 3000;
	uint64_t left = 0;
	for (int i = 0; i < 20 && !left; i++)
		left += pf_same(pf, len, 3, 0) + pf_same(pf, len * 5 / 8, 4, 1);
	assert_true(left > 0);
	tk__pf_block_text = 0;
	/* 16 threads asked for, 4 used */
	tk__pf_block_bytes = 64;
	pf_same(pf, len, 16, 0);
	pf_same(pf, len / 2, 16, 1);
	/* read as another tool's trace (no "tk.events" mark): the reserved
	 * annotations are args, flows come from the events' flow ids */
	char *mark = memmem(pf, len, "tk.events", 9);
	assert_non_null(mark);
	mark[8] = 'x';
	for (size_t bi = 0; bi < 2; bi++) {
		tk__pf_block_bytes = blocks[bi];
		pf_same(pf, len, 3, 0);
		pf_same(pf, len / 2, 3, 0);
	}
	mark[8] = 's';
	tk__pf_block_bytes = 0;
	/* what the threads gave is what the trace holds */
	tk_reader_opts o = {0};
	o.threads = 4;
	tk__pf_block_bytes = 512;
	tk_reader *r = tu_open_mem(pf, len, "t.pftrace", &o);
	tu_events ev = {0};
	assert_int_equal(tu_read_all(r, &ev), TK_EOF);
	size_t esc = 0, ids = 0;
	for (size_t i = 0; i < ev.n; i++) {
		const tk_event *e = ev.ev[i];
		esc += e->args.ptr && memmem(e->args.ptr, e->args.len, "\"a\\\"b\\\\", 7) != NULL;
		ids += e->id.kind == TK_ID_STR && e->id.str.len >= 2 && e->id.str.ptr[0] == 'm';
	}
	assert_int_equal(esc, 1000);
	assert_int_equal(ids, 1000);
	tu_events_free(&ev);
	tk_reader_free(r);
	tk__pf_block_bytes = 0;
	free(pf);
}

/* Events written to a .pftrace with `threads`, its chunks of at most
 * tk__pf_chunk_ops ops; the file's bytes (free them) and close's status.
 * *workers (may be NULL): the encoding threads the close started. */
static char *pf_write_events(const tk_event *const *ev, size_t n, unsigned threads, size_t *len, int *rc,
                             char *msg, size_t cap, int *workers)
{
	tk_writer *w = NULL;
	tk_writer_opts wo = {.format = TK_FORMAT_PFTRACE, .threads = threads};
	assert_int_equal(tk_writer_open_path(&w, tu_path("pfw.pftrace"), &wo), TK_OK);
	for (size_t i = 0; i < n; i++)
		assert_int_equal(tk_writer_write(w, ev[i]), TK_OK);
	*rc = tk_writer_close(w);
	if (workers)
		*workers = (int)tk__pf_encoders;
	assert_int_equal(task_count("tk-encode"), 0); /* joined by the close */
	snprintf(msg, cap, "%s", tk_writer_error(w));
	tk_writer_free(w);
	return *rc ? NULL : tu_read_file(tu_path("pfw.pftrace"), len);
}

/* The .pftrace writer's chunks, each encoded from the sequence's state
 * cleared, on threads: the same bytes with any count of threads (and with
 * none able to start), the same events as the trace written in one chunk,
 * and an error in a late chunk the one a single thread gives. */
static void test_pftrace_write_threads(void **state)
{
	(void)state;
	size_t one_len;
	char *one = make_pftrace(6000, &one_len); /* one chunk: 6,000 events */
	tu_events in = {0};
	tk_reader *r = NULL;
	assert_int_equal(tk_reader_open_path(&r, tu_path("pf_in.json"), NULL), TK_OK);
	assert_int_equal(tu_read_all(r, &in), TK_EOF);
	tk_reader_free(r);
	tk__pf_chunk_ops = 97;
	static const unsigned threads[] = {1, 2, 5, 8, 4};
	char *many = NULL;
	size_t many_len = 0;
	for (size_t i = 0; i < sizeof threads / sizeof threads[0]; i++) {
		tk__no_threads = i == 4; /* 4 asked for, none starts: the caller encodes */
		size_t len;
		int rc;
		char msg[256];
		int workers;
		char *p = pf_write_events((const tk_event *const *)in.ev, in.n, threads[i], &len, &rc, msg, sizeof msg,
		                          &workers);
		tk__no_threads = 0;
		assert_int_equal(rc, TK_OK);
		/* the caller and the others, 4 at most in all; none on one thread */
		unsigned want = i == 4 ? 0 : (threads[i] < 4 ? threads[i] : 4) - 1;
		assert_int_equal(workers, want);
		if (!many) {
			many = p;
			many_len = len;
			continue;
		}
		assert_int_equal(len, many_len);
		assert_memory_equal(p, many, len);
		free(p);
	}
	/* every chunk interns its strings again */
	assert_true(many_len > one_len + 6000 / 97 * 20);
	tu_events a = {0}, b = {0};
	r = tu_open_mem(one, one_len, "one.pftrace", NULL);
	assert_int_equal(tu_read_all(r, &a), TK_EOF);
	tk_reader_free(r);
	r = tu_open_mem(many, many_len, "many.pftrace", NULL);
	assert_int_equal(tu_read_all(r, &b), TK_EOF);
	tk_reader_free(r);
	assert_true(a.n >= 6000);
	assert_int_equal(a.n, b.n);
	for (size_t i = 0; i < a.n; i++)
		assert_true(tk_event_equal(a.ev[i], b.ev[i]));
	tu_events_free(&a);
	tu_events_free(&b);
	/* an event whose args are not JSON, late in the trace: the same error
	 * on one thread and on four, where chunks after it are encoded too */
	size_t at = in.n * 3 / 4;
	while (in.ev[at]->ph != 'X')
		at++;
	tk_event *bad = in.ev[at];
	tk_sv keep = bad->args;
	bad->args = (tk_sv){"{\"a\":[1,", 8};
	int rc1, rc4;
	char m1[256], m4[256];
	size_t len;
	assert_null(pf_write_events((const tk_event *const *)in.ev, in.n, 1, &len, &rc1, m1, sizeof m1, NULL));
	assert_null(pf_write_events((const tk_event *const *)in.ev, in.n, 4, &len, &rc4, m4, sizeof m4, NULL));
	bad->args = keep;
	assert_int_equal(rc1, TK_ERR_FORMAT);
	assert_int_equal(rc4, rc1);
	assert_string_equal(m4, m1);
	assert_true(tu_contains(m1, "args are not valid JSON"));
	tk__pf_chunk_ops = 0;
	tu_events_free(&in);
	free(many);
	free(one);
}

/* A thread adding files to a held directory while a signal's cleanup runs. */
typedef struct {
	const char *dir;
	int made, stopped;
} adder;

static void *add_files(void *arg)
{
	adder *a = arg;
	char path[512];
	for (int i = 0; i < 200000; i++) {
		snprintf(path, sizeof path, "%s/run-%06d", a->dir, i);
		int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		if (fd < 0) {
			a->stopped = errno == ENOENT; /* the directory is gone */
			break;
		}
		(void)write(fd, "x", 1);
		close(fd);
		__atomic_store_n(&a->made, i + 1, __ATOMIC_RELEASE);
		usleep(20);
	}
	return NULL;
}

/* tk__tmp_create: a directory and a file held from before they exist, with
 * names not taken; tk_cleanup_temporaries removes them, and a directory
 * another thread keeps adding files to. */
static void test_tmp_create(void **state)
{
	(void)state;
	char d[512], f[512];
	snprintf(d, sizeof d, "%s/tkdir-XXXXXX", tu_path(""));
	snprintf(f, sizeof f, "%s/tkfile.json.tmp-XXXXXX", tu_path(""));
	int hd, hf;
	assert_int_equal(tk__tmp_create(d, 1, &hd), 0);
	int fd = tk__tmp_create(f, 0, &hf);
	assert_true(fd >= 0 && hd > 0 && hf > 0);
	assert_null(strstr(d, "XXXXXX"));
	assert_null(strstr(f, "XXXXXX"));
	struct stat st;
	assert_int_equal(stat(d, &st), 0);
	assert_true(S_ISDIR(st.st_mode) && (st.st_mode & 0777) == 0700);
	assert_int_equal(write(fd, "{}", 2), 2);
	close(fd);
	/* a template without XXXXXX is refused */
	char bad[] = "/tmp/tk-no-template";
	int hb = 1;
	assert_int_equal(tk__tmp_create(bad, 1, &hb), -1);
	assert_int_equal(hb, 0);

	adder a = {d, 0, 0};
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, add_files, &a), 0);
	while (__atomic_load_n(&a.made, __ATOMIC_ACQUIRE) < 50)
		usleep(100);
	tk_cleanup_temporaries();
	assert_int_equal(stat(d, &st), -1); /* gone while the thread still adds */
	assert_int_equal(stat(f, &st), -1);
	pthread_join(th, NULL);
	assert_true(a.stopped);
	tk__tmp_release(hd);
	tk__tmp_release(hf);
}

static void test_thread_write_error(void **state)
{
	(void)state;
	if (access("/dev/full", W_OK) != 0)
		skip();
	tu_events in = trace_events(20000);
	tk_writer *w = NULL;
	assert_int_equal(tk_writer_open_path(&w, "/dev/full", NULL), 0);
	int rc = 0;
	for (size_t i = 0; i < in.n && !rc; i++)
		rc = tk_writer_write(w, in.ev[i]);
	if (!rc)
		rc = tk_writer_close(w);
	assert_int_equal(rc, TK_ERR_IO);
	assert_true(tu_contains(tk_writer_error(w), "/dev/full: write failed"));
	assert_int_not_equal(tk_writer_close(w), 0);
	tk_writer_free(w);
	tu_events_free(&in);
}

/* A writer freed before close stops its thread and leaves no file. */
static void test_free_without_close(void **state)
{
	(void)state;
	tu_events in = trace_events(20000);
	for (int gz = 0; gz < 2; gz++) {
		tk_writer *w = NULL;
		assert_int_equal(tk_writer_open_path(&w, tu_path(gz ? "gone.json.gz" : "gone.json"), NULL), 0);
		for (size_t i = 0; i < in.n; i++)
			assert_int_equal(tk_writer_write(w, in.ev[i]), 0);
		tk_writer_free(w);
	}
	assert_int_equal(tu_count_prefix(tu_tmpdir(), "gone"), 0);
	tu_events_free(&in);
}

/* ---- the pump ---- */

static void test_pump_equals_reader(void **state)
{
	(void)state;
	tu_events in;
	const char *path = trace_file(30000, "pump.json", &in);
	uint64_t limits[] = {UINT64_MAX, 0, 1, 2047, 2048, 2049, 29999, 30000, 30001};
	for (size_t l = 0; l < sizeof limits / sizeof *limits; l++) {
		tk__pump *p = NULL;
		assert_int_equal(tk__pump_open(&p, path, NULL, limits[l], NULL, NULL), 0);
		assert_null(tk__pump_reader(p)); /* the thread owns it */
		const tk_event *ev;
		size_t i = 0;
		int rc;
		while ((rc = tk__pump_next(p, &ev)) == TK_OK) {
			assert_true(i < in.n);
			assert_true(tk_event_equal(ev, in.ev[i]));
			i++;
		}
		assert_int_equal(rc, TK_EOF);
		assert_int_equal(i, limits[l] < in.n ? limits[l] : in.n);
		assert_int_equal(tk__pump_events(p), i);
		assert_non_null(tk__pump_reader(p));
		assert_int_equal(tk__pump_next(p, &ev), TK_EOF); /* stays at the end */
		tk__pump_free(p);
	}
	/* freed in the middle: the thread stops */
	tk__pump *p = NULL;
	const tk_event *ev;
	assert_int_equal(tk__pump_open(&p, path, NULL, UINT64_MAX, NULL, NULL), 0);
	assert_int_equal(tk__pump_next(p, &ev), TK_OK);
	tk__pump_free(p);
	tu_events_free(&in);
}

static void test_pump_errors(void **state)
{
	(void)state;
	tk__pump *p = NULL;
	assert_int_not_equal(tk__pump_open(&p, tu_path("missing.json"), NULL, UINT64_MAX, NULL, NULL), 0);
	assert_non_null(tk__pump_reader(p));
	assert_true(tu_contains(tk_reader_error(tk__pump_reader(p)), "missing.json"));
	tk__pump_free(p);

	/* an error after some events: the events first, then the reader's error */
	const char *bad = "{\"traceEvents\":[{\"ph\":\"X\",\"ts\":1},{\"ph\":\"X\",\"ts\":2},{\"ph\" 1}]}";
	const char *path = tu_path("bad.json");
	tu_write_file(path, bad, strlen(bad));
	assert_int_equal(tk__pump_open(&p, path, NULL, UINT64_MAX, NULL, NULL), 0);
	const tk_event *ev;
	assert_int_equal(tk__pump_next(p, &ev), TK_OK);
	assert_int_equal(tk__pump_next(p, &ev), TK_OK);
	assert_int_equal(tk__pump_next(p, &ev), TK_ERR_FORMAT);
	assert_true(tu_contains(tk_reader_error(tk__pump_reader(p)), "bad.json:1:"));
	tk__pump_free(p);
}

/* want_args: every third event */
static int every_third(void *arg, const tk_event *ev)
{
	(void)ev;
	return (*(unsigned *)arg)++ % 3 == 0;
}

/* With a want function, the wanted events come whole and the others
 * without args but with their canonical length. */
static void test_pump_want(void **state)
{
	(void)state;
	tu_events in;
	const char *path = trace_file(10000, "want.json", &in);
	unsigned k = 0;
	tk__pump *p = NULL;
	assert_int_equal(tk__pump_open(&p, path, NULL, UINT64_MAX, every_third, &k), 0);
	const tk_event *ev;
	size_t i = 0;
	while (tk__pump_next(p, &ev) == TK_OK) {
		const tk_event *want = in.ev[i];
		if (i % 3 == 0) {
			assert_true(tk_event_equal(ev, want));
			assert_false(ev->has & TK__HAS_NO_ARGS);
		} else {
			assert_true(ev->has & TK__HAS_NO_ARGS);
			assert_null(ev->args.ptr);
			assert_int_equal(ev->args.len, want->args.len);
			assert_int_equal(ev->ts, want->ts);
			assert_true(tu_sv_is(ev->name, want->name.ptr));
		}
		i++;
	}
	assert_int_equal(i, in.n);
	tk__pump_free(p);
	tu_events_free(&in);
}

/* ---- the lazy args skip ---- */

typedef struct lazy_case {
	const char *args;
	int skipped; /* 1: skipped, 0: canonicalized at once (escapes, UTF-8, controls, odd text) */
} lazy_case;

static void test_lazy_skip_cases(void **state)
{
	(void)state;
	static const lazy_case cases[] = {
		{"{}", 1},
		{"{ }", 1},
		{"{\"a\": 1}", 1},
		{"{\"a\" :\n\t[ 1 , 2 ,[3,[4, {\"b\": {}}]]]\r\n}", 1},
		{"{\"}\": \"]\", \"[\": \"{\"}", 1},
		{"{\"a\": \"   spaces   inside   \"}", 1},
		{"{\"long\": \"0123456789012345678901234567890123456789012345678901234567890123456789\", "
		 "\"n\": [1.5e-3, -0, true, false, null]}",
		 1},
		{"{\"q\": \"a \\\"quoted\\\" word\"}", 0},
		{"{\"u\": \"caf\xc3\xa9\"}", 0},
		{"{\"bad\": \"\xff\"}", 0},
		{"{\"ctl\": \"a\tb\"}", 0},
		{"{\"esc\": \"\\u00e9\"}", 0},
	};
	for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
		/* the args object at several offsets, so that it crosses the 64-byte blocks */
		for (int pad = 0; pad < 70; pad += 7) {
			char text[1024];
			snprintf(text, sizeof text, "{\"traceEvents\":[{\"name\":\"%.*s\",\"ph\":\"X\",\"ts\":1,\"args\": %s,\"dur\":2}]}",
			         pad, "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
			         cases[c].args);
			tu_events full = {0};
			assert_int_equal(tu_read_text(text, &full), TK_EOF);
			tk_reader *r = tu_open_mem(text, strlen(text), "lazy", NULL);
			tk__reader_set_lazy_args(r, 1);
			const tk_event *ev;
			assert_int_equal(tk_reader_next(r, &ev), TK_OK);
			size_t clen;
			int lazy = tk__reader_lazy_args(r, &clen);
			if (lazy != cases[c].skipped)
				fail_msg("case %zu (%s): skipped %d", c, cases[c].args, lazy);
			if (lazy) {
				assert_null(ev->args.ptr);
				assert_int_equal(clen, full.ev[0]->args.len);
				assert_int_equal(tk__reader_take_args(r), 0);
				assert_int_equal(tk__reader_lazy_args(r, &clen), 0);
			}
			assert_true(tk_event_equal(ev, full.ev[0]));
			assert_int_equal(ev->dur, 2000);
			assert_int_equal(tk_reader_next(r, &ev), TK_EOF);
			tk_reader_free(r);
			tu_events_free(&full);
		}
	}
}

/* Malformed args that the skip lets through fail when canonicalized, with
 * the full reader's message; brackets that do not match are not skipped. */
static void test_lazy_malformed(void **state)
{
	(void)state;
	static const char *bad[] = {
		"{\"a\": tru}", "{\"a\" 1}", "{\"a\": [1 2]}", "{\"a\": 01}", "{\"a\": [1,]}",
		"{\"a\": [1}", "{\"a\": {]}",
		/* a second args member: the first, skipped, is checked all the same */
		"{\"a\": : 1},\"args\":{\"b\":2}",
	};
	for (size_t c = 0; c < sizeof bad / sizeof *bad; c++) {
		char text[256];
		snprintf(text, sizeof text, "{\"traceEvents\":[{\"ph\":\"X\",\"ts\":1,\"args\":%s}]}", bad[c]);
		tk_reader *full = tu_open_mem(text, strlen(text), "t", NULL);
		tk_reader *lazy = tu_open_mem(text, strlen(text), "t", NULL);
		tk__reader_set_lazy_args(lazy, 1);
		const tk_event *ev;
		int rf = tk_reader_next(full, &ev);
		assert_true(rf < 0);
		int rl = tk_reader_next(lazy, &ev);
		size_t clen;
		if (rl == TK_OK) {
			assert_true(tk__reader_lazy_args(lazy, &clen));
			rl = tk__reader_take_args(lazy);
		}
		assert_int_equal(rl, rf);
		assert_string_equal(tk_reader_error(lazy), tk_reader_error(full));
		tk_reader_free(full);
		tk_reader_free(lazy);
	}
}

/* "args" twice: the first is the args, the second an extra member, as in the full reader. */
static void test_lazy_args_twice(void **state)
{
	(void)state;
	const char *text = "{\"traceEvents\":[{\"ph\":\"X\",\"ts\":1,\"args\":{\"a\": 1},\"args\":{\"b\": [2]}}]}";
	tu_events full = {0};
	assert_int_equal(tu_read_text(text, &full), TK_EOF);
	tk_reader *r = tu_open_mem(text, strlen(text), "t", NULL);
	tk__reader_set_lazy_args(r, 1);
	const tk_event *ev;
	size_t clen;
	assert_int_equal(tk_reader_next(r, &ev), TK_OK);
	if (tk__reader_lazy_args(r, &clen))
		assert_int_equal(tk__reader_take_args(r), 0);
	assert_true(tu_sv_is(ev->args, "{\"a\":1}"));
	assert_true(tu_sv_is(ev->extra, "\"args\":{\"b\":[2]}"));
	assert_true(tk_event_equal(ev, full.ev[0]));
	tk_reader_free(r);
	tu_events_free(&full);
}

/* Cut inside a skipped args object: the event is dropped as by the full reader. */
static void test_lazy_truncated(void **state)
{
	(void)state;
	size_t len;
	char *text = make_trace(50, &len);
	for (size_t cut = len / 2; cut < len; cut += 13) {
		tu_events full = {0};
		tk_reader *a = tu_open_mem(text, cut, "cut", NULL);
		int ra = tu_read_all(a, &full);
		tk_reader *b = tu_open_mem(text, cut, "cut", NULL);
		tk__reader_set_lazy_args(b, 1);
		const tk_event *ev;
		size_t n = 0;
		int rb;
		while ((rb = tk_reader_next(b, &ev)) == TK_OK)
			n++;
		assert_int_equal(rb, ra);
		assert_int_equal(n, full.n);
		assert_string_equal(tk_reader_warning(b, 0), tk_reader_warning(a, 0));
		tk_reader_free(a);
		tk_reader_free(b);
		tu_events_free(&full);
	}
	free(text);
}

/* ---- without threads ---- */

/* An unsorted trace: X slices at times scattered over the trace, flow
 * pairs, M events at the end. */
static const char *unsorted_file(size_t n, const char *name)
{
	tk__buf b = {0};
	char line[512];
	assert_int_equal(tk__buf_append(&b, "{\"traceEvents\":[\n", 17), 0);
	for (size_t i = 0; i < n; i++) {
		size_t t = (i * 7919) % n;
		int k = snprintf(line, sizeof line,
		                 "{\"ph\":\"X\",\"name\":\"op%zu\",\"pid\":1,\"tid\":%zu,\"ts\":%zu,\"dur\":2,"
		                 "\"args\":{\"External id\":%zu,\"Input Dims\":[[%zu,3]]}},\n"
		                 "{\"ph\":\"%c\",\"id\":%zu,\"cat\":\"ac2g\",\"name\":\"f\",\"pid\":1,\"tid\":1,\"ts\":%zu},\n",
		                 i % 9, i % 4, t * 10, i, i % 31, i % 2 ? 'f' : 's', i / 2, t * 10);
		assert_int_equal(tk__buf_append(&b, line, (size_t)k), 0);
	}
	const char *tail = "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":1,\"args\":{\"name\":\"p\"}}]}\n";
	assert_int_equal(tk__buf_append(&b, tail, strlen(tail)), 0);
	const char *path = tu_path(name);
	tu_write_file(path, b.p, b.len);
	tk__buf_free(&b);
	return path;
}

/* Runs a split into dir; returns the number of parts. */
static size_t split_into(const char *in, const char *dir, int gz)
{
	tk_split_opts o = {0};
	o.dir = dir;
	o.name = "p";
	o.wopts.gzip = gz;
	o.max_bytes = gz ? 1100 << 10 : 1536 << 10; /* above a MiB: the threads start */
	o.memory_bytes = 1 << 20; /* the sorter spills many runs */
	tk_split *s = NULL;
	assert_int_equal(tk_split_new(&s, &o), 0);
	if (tk_split_run(s, in))
		fail_msg("%s", tk_split_error(s));
	assert_false(tk_split_get_stats(s)->input_sorted);
	assert_true(tk_split_get_stats(s)->sorter_runs > 2);
	size_t n = tk_split_part_count(s);
	tk_split_free(s);
	return n;
}

/* With no thread able to start, every part comes out byte for byte as with
 * threads: the writers write, the sorter spills and the pump reads on the
 * caller's thread. */
static void test_split_without_threads(void **state)
{
	(void)state;
	char in[512], a[512], b[512];
	snprintf(in, sizeof in, "%s", unsorted_file(150000, "unsorted.json"));
	for (int gz = 0; gz < 2; gz++) {
		snprintf(a, sizeof a, "%s", tu_path(gz ? "threads-gz" : "threads"));
		snprintf(b, sizeof b, "%s", tu_path(gz ? "none-gz" : "none"));
		size_t na = split_into(in, a, gz);
		tk__no_threads = 1;
		size_t nb = split_into(in, b, gz);
		tk__no_threads = 0;
		assert_int_equal(na, nb);
		assert_true(na > 2);
		for (size_t i = 0; i < na; i++) {
			char pa[600], pb[600];
			snprintf(pa, sizeof pa, "%s/p.part-%04zu.json%s", a, i, gz ? ".gz" : "");
			snprintf(pb, sizeof pb, "%s/p.part-%04zu.json%s", b, i, gz ? ".gz" : "");
			size_t la, lb;
			char *fa = tu_read_file(pa, &la), *fb = tu_read_file(pb, &lb);
			assert_int_equal(la, lb);
			assert_memory_equal(fa, fb, la);
			free(fa);
			free(fb);
		}
	}
}

/* The most threads of this process seen while a split writes. */
typedef struct seen_tasks {
	int base, most;
} seen_tasks;

static void count_tasks(void *ctx, const char *pass, uint64_t bytes, uint64_t events)
{
	(void)bytes;
	(void)events;
	seen_tasks *t = ctx;
	int n = task_count(NULL) - t->base;
	if (strcmp(pass, "writing") == 0 && n > t->most)
		t->most = n;
}

/* A split's gzip parts, asked for 16 threads, are deflated on 8: the
 * writer's blocks stay within the memory reserve (tk__budget_writer_threads),
 * besides the one thread that reads ahead. */
static void test_split_gzip_threads_capped(void **state)
{
	(void)state;
	tu_events in;
	char path[512];
	snprintf(path, sizeof path, "%s", trace_file(200000, "capped.json", &in));
	tu_events_free(&in);
	seen_tasks t = {task_count(NULL), 0};
	tk_split_opts o = {0};
	o.dir = tu_path("capped");
	o.name = "p";
	o.wopts.gzip = 1;
	o.wopts.threads = 16;
	o.ropts.threads = 1;
	o.n_parts = 2; /* parts of several MiB of JSON: the writer's threads start */
	o.progress = count_tasks;
	o.progress_ctx = &t;
	tk_split *s = NULL;
	assert_int_equal(tk_split_new(&s, &o), 0);
	if (tk_split_run(s, path))
		fail_msg("%s", tk_split_error(s));
	assert_true(tk_split_get_stats(s)->input_sorted);
	tk_split_free(s);
	assert_in_range(t.most, 8, 9);
}

static int teardown(void **state)
{
	(void)state;
	tu_cleanup();
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_large_output_through_thread),
		cmocka_unit_test(test_gzip_budget_through_thread),
		cmocka_unit_test(test_gzip_same_bytes_without_threads),
		cmocka_unit_test(test_gzip_threads_asked),
		cmocka_unit_test(test_thread_names),
		cmocka_unit_test(test_gzip_libdeflate),
		cmocka_unit_test(test_gzip_read_ahead),
		cmocka_unit_test(test_pftrace_threads),
		cmocka_unit_test(test_pftrace_write_threads),
		cmocka_unit_test(test_tmp_create),
		cmocka_unit_test(test_thread_write_error),
		cmocka_unit_test(test_free_without_close),
		cmocka_unit_test(test_pump_equals_reader),
		cmocka_unit_test(test_pump_errors),
		cmocka_unit_test(test_pump_want),
		cmocka_unit_test(test_lazy_skip_cases),
		cmocka_unit_test(test_lazy_malformed),
		cmocka_unit_test(test_lazy_args_twice),
		cmocka_unit_test(test_lazy_truncated),
		cmocka_unit_test(test_split_without_threads),
		cmocka_unit_test(test_split_gzip_threads_capped),
	};
	return cmocka_run_group_tests(tests, NULL, teardown);
}
