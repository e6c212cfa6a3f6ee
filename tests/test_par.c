/* test_par.c: one JSON trace parsed on several threads (par.c): the same events, metadata, warnings, errors and counts as on one thread, wherever the blocks are cut. */
#define _GNU_SOURCE
#include <archive.h>
#include <archive_entry.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "testutil.h"
#include "../libtrace/src/internal.h"
#include "../libtrace/src/par.h"

/* ---- traces ---- */

enum { L_KINETO, L_COMPACT, L_MINIFIED, L_BARE };

/* A trace of n events in one of the layouts, with args that hold what a
 * cut may be fooled by: "},\n{" and "},{" in strings (raw newlines, which
 * the reader takes), escaped quotes, nested objects in lists across lines. */
static char *make_trace(size_t n, int layout, size_t *len)
{
	tk__buf b = {0};
	const char *sep = layout == L_KINETO ? ",\n  " : layout == L_MINIFIED ? "," : ",\n";
	if (layout == L_BARE)
		assert_int_equal(tk__buf_puts(&b, "[\n"), 0);
	else
		assert_int_equal(tk__buf_puts(&b, layout == L_MINIFIED ? "{\"schemaVersion\":1,\"traceEvents\":["
		                                                       : "{\n  \"schemaVersion\": 1,\n  \"traceEvents\": [\n  "),
		                 0);
	for (size_t i = 0; i < n; i++) {
		char ev[512];
		const char *args;
		switch (i % 6) {
		case 0: args = "{\"External id\": 7, \"s\": \"a},\n{b\"}"; break;
		case 1: args = "{\"q\": \"x\\\"},{\\\"y\", \"Input Dims\": [[1, 2], []]}"; break;
		case 2: args = "{\"list\": [{\"a\": 1},\n  {\"b\": {\"c\": [1, {\"d\": 2}]}}\n]}"; break;
		case 3: args = "{\"raw\": \"},{\\\"ph\\\":\\\"X\\\"}\"}"; break;
		case 4: args = "{}"; break;
		default: args = "{\"n\": null, \"t\": true, \"f\": -1.5e3}"; break;
		}
		int k = snprintf(ev, sizeof ev,
		                 layout == L_KINETO ? "%s{\n    \"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"op%zu\",\n"
		                                      "    \"pid\": %zu, \"tid\": %zu, \"ts\": %zu.%03zu, \"dur\": 3,\n"
		                                      "    \"args\": %s\n  }"
		                                    : "%s{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"op%zu\",\"pid\":%zu,"
		                                      "\"tid\":%zu,\"ts\":%zu.%03zu,\"dur\":3,\"args\":%s}",
		                 i ? sep : "", i % 11, i % 3, i % 5, i * 7, i % 1000, args);
		assert_true(k > 0 && (size_t)k < sizeof ev);
		assert_int_equal(tk__buf_append(&b, ev, (size_t)k), 0);
	}
	assert_int_equal(tk__buf_puts(&b, layout == L_BARE ? "\n]\n"
	                                  : layout == L_MINIFIED ? "],\"traceName\":\"t\"}"
	                                                         : "\n  ],\n  \"traceName\": \"t\"\n}\n"),
	                 0);
	*len = b.len;
	return b.p;
}

/* ---- one thread against several ---- */

typedef struct outcome {
	uint64_t events;      /* read by both */
	int rc;               /* the last tk_reader_next() */
	int par;              /* the threads started */
	uint64_t handed;      /* events the threads handed out */
	uint64_t resumed;     /* times they took over again */
	uint64_t tail_cuts;   /* blocks cut from their tail alone (read by offset) */
} outcome;

/* Reads p[0..n) on one thread and on `threads` with blocks of `block`
 * bytes, in lockstep: every event, the end, the error, the warnings, the
 * counts and the metadata the same. */
static outcome both(const void *p, size_t n, unsigned threads, size_t block, const tk_reader_opts *base)
{
	tk_reader_opts o1 = base ? *base : (tk_reader_opts){0}, o2 = o1;
	o1.threads = 1;
	o2.threads = threads;
	tk__par_block_bytes = block;
	tk_reader *a = NULL, *b = NULL;
	int ra = tk_reader_open_memory(&a, p, n, "t.json", &o1);
	int rb = tk_reader_open_memory(&b, p, n, "t.json", &o2);
	assert_int_equal(ra, rb);
	outcome out = {0};
	char what[64];
	snprintf(what, sizeof what, "one thread against %u, blocks of %zu", threads, block);
	if (!ra)
		ra = tu_lockstep(a, b, what, &out.events);
	else
		tu_same_end(a, b, ra);
	out.rc = ra;
	out.par = b->par != NULL;
	tk__par_counts(b->par, &out.handed, &out.resumed);
	out.tail_cuts = tk__par_tail_cuts(b->par);
	tk_reader_free(a);
	tk_reader_free(b);
	tk__par_block_bytes = 0;
	return out;
}

/* ---- tests ---- */

/* Every layout, blocks of many sizes (cuts everywhere: inside strings that
 * hold "},{", inside nested args, at event ends), 2, 3 and 8 threads, and
 * the blocks read whole or cut from their tails. */
static void test_layouts_and_cuts(void **state)
{
	(void)state;
	for (int layout = L_KINETO; layout <= L_BARE; layout++) {
		size_t n;
		char *t = make_trace(60, layout, &n);
		uint64_t tails = 0;
		for (size_t block = 24; block < 700; block += 13) {
			unsigned threads = block % 3 == 0 ? 2 : block % 3 == 1 ? 3 : 8;
			/* every other with a first window smaller than the input: the
			 * rest is read by offset, blocks cut from their tails */
			tk__reader_window0 = block % 2 ? 100 + block % 157 : 0;
			outcome o = both(t, n, threads, block, NULL);
			tk__reader_window0 = 0;
			assert_int_equal(o.rc, TK_EOF);
			assert_int_equal(o.events, 60);
			assert_true(o.par); /* the input is many blocks long: the threads ran */
			tails += o.tail_cuts;
		}
		assert_true(tails > 0);
		free(t);
	}
}

/* Most events come from the threads even where some cuts are wrong: after
 * each wrong one the reader parses alone only until an event of its own
 * ends where a block starts. Every tenth event holds a fake "},\n{" early
 * in its args and a long string after it, so that a block's end often
 * falls behind a fake; blocks hold about twenty events of varied sizes. */
static void test_threads_take_over_again(void **state)
{
	(void)state;
	tk__buf b = {0};
	char pad[161];
	memset(pad, 'x', 160);
	pad[160] = 0;
	assert_int_equal(tk__buf_puts(&b, "{\n  \"traceEvents\": [\n  "), 0);
	for (int i = 0; i < 3000; i++) {
		char ev[512];
		int k = snprintf(ev, sizeof ev,
		                 "%s{\n    \"ph\": \"X\", \"name\": \"op%d\", \"pid\": 1, \"tid\": 2,\n"
		                 "    \"ts\": %d, \"dur\": 3,\n    \"args\": {\"s\": \"%s\", \"pad\": \"%s\"}\n  }",
		                 i ? ",\n  " : "", i, i, i % 3 ? "plain" : "a},\n{b", pad + (i * 37) % 150);
		assert_int_equal(tk__buf_append(&b, ev, (size_t)k), 0);
	}
	assert_int_equal(tk__buf_puts(&b, "\n  ]\n}\n"), 0);
	outcome o = both(b.p, b.len, 3, 4096, NULL);
	assert_int_equal(o.events, 3000);
	assert_true(o.resumed >= 3);
	assert_true(o.handed > 3000 * 8 / 10);
	tk__buf_free(&b);
}

/* A malformed byte and a cut input, at many places: the same events before
 * it, the same error or warning, at the same line and column. */
static void test_damage_everywhere(void **state)
{
	(void)state;
	size_t n;
	char *t = make_trace(40, L_KINETO, &n);
	char *d = malloc(n);
	for (size_t at = n / 8; at < n; at += n / 97) {
		memcpy(d, t, n);
		d[at] = '#';
		outcome o = both(d, n, 3, 96, NULL);
		assert_true(o.rc != TK_OK);
		o = both(t, at, 2, 64, NULL); /* cut: a warning and the events before */
		assert_int_equal(o.rc, TK_EOF);
		tk_reader_opts strict = {0};
		strict.strict = 1;
		o = both(t, at, 2, 64, &strict); /* an error when strict */
		assert_int_equal(o.rc, TK_ERR_TRUNCATED);
	}
	free(d);
	free(t);
}

/* gzip input, whole and cut: the inflated stream is cut into blocks alike. */
static void test_gzip(void **state)
{
	(void)state;
	size_t n, zn;
	char *t = make_trace(400, L_KINETO, &n);
	unsigned char *z = tu_gzip(t, n, &zn);
	outcome o = both(z, zn, 3, 512, NULL);
	assert_int_equal(o.events, 400);
	assert_true(o.par);
	o = both(z, zn * 2 / 3, 2, 512, NULL);
	assert_int_equal(o.rc, TK_EOF);
	assert_true(o.events < 400);
	free(z);
	free(t);
}

/* The counts behind warnings: time values rounded to a nanosecond, members
 * given twice, strings with invalid UTF-8; added once each, on any cut. */
static void test_counted_warnings(void **state)
{
	(void)state;
	tk__buf b = {0};
	assert_int_equal(tk__buf_puts(&b, "{\"traceEvents\":[\n"), 0);
	for (int i = 0; i < 200; i++) {
		char ev[200];
		int k = snprintf(ev, sizeof ev, "%s{\"ph\":\"X\",\"name\":\"n\xff%d\",\"ts\":%d.12345,\"dur\":1%s}",
		                 i ? ",\n" : "", i, i, i % 3 ? "" : ",\"ts\":5");
		assert_int_equal(tk__buf_append(&b, ev, (size_t)k), 0);
	}
	assert_int_equal(tk__buf_puts(&b, "\n]}\n"), 0);
	for (size_t block = 40; block < 400; block += 37) {
		outcome o = both(b.p, b.len, 3, block, NULL);
		assert_int_equal(o.events, 200);
	}
	/* the one-thread reader counts each rounded time once, however its
	 * window is cut (trickled a byte at a time) */
	tu_events ev = {0};
	tk_reader *r = NULL;
	assert_int_equal(tu_read_trickled(b.p, b.len, "t.json", NULL, &ev, &r), TK_EOF);
	int found = 0;
	for (size_t i = 0; tk_reader_warning(r, i); i++)
		found += strstr(tk_reader_warning(r, i), ": 200 time values had digits below a nanosecond") != NULL;
	assert_int_equal(found, 1);
	tk_reader_free(r);
	tu_events_free(&ev);
	tk__buf_free(&b);
}

/* An event longer than a block (the block grows, and past its limit is cut
 * anywhere) and one longer than max_value_bytes (the reader's error). */
static void test_big_events(void **state)
{
	(void)state;
	tk__buf b = {0};
	assert_int_equal(tk__buf_puts(&b, "{\"traceEvents\":[\n"), 0);
	for (int i = 0; i < 30; i++) {
		size_t big = i == 10 ? 9000 : i == 20 ? 3000 : 10;
		char head[100];
		int k = snprintf(head, sizeof head, "%s{\"ph\":\"i\",\"ts\":%d,\"args\":{\"s\":\"", i ? ",\n" : "", i);
		assert_int_equal(tk__buf_append(&b, head, (size_t)k), 0);
		for (size_t j = 0; j < big; j++)
			assert_int_equal(tk__buf_putc(&b, (char)('a' + j % 26)), 0);
		assert_int_equal(tk__buf_puts(&b, "\"}}"), 0);
	}
	assert_int_equal(tk__buf_puts(&b, "\n]}\n"), 0);
	for (size_t block = 64; block <= 1024; block *= 2) {
		outcome o = both(b.p, b.len, 2, block, NULL);
		assert_int_equal(o.events, 30);
		tk_reader_opts lim = {0};
		lim.max_value_bytes = 5000;
		o = both(b.p, b.len, 3, block, &lim);
		assert_int_equal(o.rc, TK_ERR_LIMIT);
		assert_int_equal(o.events, 10);
	}
	tk__buf_free(&b);
}

/* Without threads (none can start) the caller reads and parses the blocks
 * itself: the same again. */
static void test_no_threads(void **state)
{
	(void)state;
	size_t n;
	char *t = make_trace(200, L_COMPACT, &n);
	tk__no_threads = 1;
	outcome o = both(t, n, 4, 300, NULL);
	tk__no_threads = 0;
	assert_int_equal(o.events, 200);
	assert_true(o.par);
	assert_int_equal(o.handed, 199);
	free(t);
}

/* A source that delivers a byte per read (a pipe): blocks fill all the same. */
static void test_trickled_source(void **state)
{
	(void)state;
	size_t n;
	char *t = make_trace(80, L_KINETO, &n);
	tk_reader_opts o = {0};
	o.threads = 3;
	tk__par_block_bytes = 256;
	tu_events ev1 = {0}, ev2 = {0};
	tk_reader *r1 = NULL, *r2 = NULL;
	assert_int_equal(tu_read_trickled(t, n, "t.json", NULL, &ev1, &r1), TK_EOF);
	assert_int_equal(tu_read_trickled(t, n, "t.json", &o, &ev2, &r2), TK_EOF);
	tk__par_block_bytes = 0;
	assert_int_equal(ev1.n, ev2.n);
	for (size_t i = 0; i < ev1.n; i++)
		assert_true(tk_event_equal(ev1.ev[i], ev2.ev[i]));
	tu_same_end(r1, r2, TK_EOF);
	assert_non_null(r2->par);
	assert_int_equal(tk__par_tail_cuts(r2->par), 0); /* a pipe is read in order */
	tk_reader_free(r1);
	tk_reader_free(r2);
	tu_events_free(&ev1);
	tu_events_free(&ev2);
	free(t);
}

/* A file or memory without a filter is read by offset: a block is cut
 * from its tail alone and the thread that cut it reads the rest, while
 * the next is cut. From memory, and from a file whose fd stands past
 * other bytes at the start: the same as one thread. */
static void test_read_by_offset(void **state)
{
	(void)state;
	for (int layout = L_KINETO; layout <= L_BARE; layout++) {
		size_t n;
		char *t = make_trace(12000, layout, &n); /* past the reader's first window */
		outcome o = both(t, n, 3, 4096, NULL);
		assert_int_equal(o.rc, TK_EOF);
		assert_int_equal(o.events, 12000);
		assert_true(o.tail_cuts > 0);

		const char *path = tu_path("offset.json");
		tk__buf f = {0};
		assert_int_equal(tk__buf_puts(&f, "not the trace\n"), 0);
		assert_int_equal(tk__buf_append(&f, t, n), 0);
		tu_write_file(path, f.p, f.len);
		int fd = open(path, O_RDONLY);
		assert_true(fd >= 0);
		assert_int_equal(lseek(fd, 14, SEEK_SET), 14);
		tk_reader_opts o1 = {0}, o2 = {0};
		o1.threads = 1;
		o2.threads = 4;
		tk__par_block_bytes = 4096;
		tk_reader *a = NULL, *b = NULL;
		assert_int_equal(tk_reader_open_memory(&a, t, n, "t.json", &o1), 0);
		assert_int_equal(tk_reader_open_fd(&b, fd, "t.json", &o2), 0);
		uint64_t events = 0;
		assert_int_equal(tu_lockstep(a, b, "a file read by offset", &events), TK_EOF);
		assert_int_equal(events, 12000);
		assert_true(tk__par_tail_cuts(b->par) > 0);
		assert_int_equal(tk_reader_get_stats(b)->bytes_in, n);
		tk__par_block_bytes = 0;
		tk_reader_free(a);
		tk_reader_free(b);
		close(fd);
		tk__buf_free(&f);
		free(t);
	}
	/* events of every size, some longer than a block: blocks without an
	 * end in their tail are read whole, and the next is read by offset
	 * from that one's cut */
	tk__buf b = {0};
	assert_int_equal(tk__buf_puts(&b, "{\"traceEvents\":[\n"), 0);
	for (int i = 0; i < 6000; i++) {
		size_t big = i % 9 == 0 ? 500 + (size_t)i * 37 % 7000 : (size_t)i % 90;
		char head[100];
		int k = snprintf(head, sizeof head, "%s{\"ph\":\"i\",\"ts\":%d,\"args\":{\"s\":\"", i ? ",\n" : "", i);
		assert_int_equal(tk__buf_append(&b, head, (size_t)k), 0);
		for (size_t j = 0; j < big; j++)
			assert_int_equal(tk__buf_putc(&b, (char)('a' + j % 26)), 0);
		assert_int_equal(tk__buf_puts(&b, "\"}}"), 0);
	}
	assert_int_equal(tk__buf_puts(&b, "\n]}\n"), 0);
	assert_true(b.len > (2u << 20));
	for (size_t block = 4096; block <= 16384; block *= 2) {
		outcome o = both(b.p, b.len, 3, block, NULL);
		assert_int_equal(o.rc, TK_EOF);
		assert_int_equal(o.events, 6000);
		assert_true(o.tail_cuts > 0);
	}
	tk__buf_free(&b);
}

/* What happens to the file before a block cut from its tail is filled
 * (tk__par_fill_hook): once, for the first block at or past `from`. */
static struct {
	const char *path;
	int fd, dirfd; /* dirfd >= 0: it replaces fd (reads fail), else the file is cut */
	uint64_t from, at;
	int fired;
} hk;

static void fill_hook(uint64_t off, size_t len)
{
	(void)len;
	if (off < hk.from || __atomic_exchange_n(&hk.fired, 1, __ATOMIC_SEQ_CST))
		return;
	hk.at = off;
	if (hk.dirfd >= 0)
		assert_int_equal(dup2(hk.dirfd, hk.fd), hk.fd);
	else
		assert_int_equal(truncate(hk.path, (off_t)(off + 100)), 0);
}

/* Reads the trace at path (fd >= 0: from fd) on `threads` in blocks of
 * 4 KiB, the hook set for the blocks from `from` on (dirfd as in hk):
 * the events into *ev, the reader into *rp; the last tk_reader_next(). */
static int read_hooked(const char *path, int fd, int dirfd, uint64_t from, unsigned threads, tu_events *ev,
                       tk_reader **rp)
{
	hk = (__typeof__(hk)){path, fd, dirfd, from, 0, 0};
	tk__par_fill_hook = fill_hook;
	tk__par_block_bytes = 4096;
	tk_reader_opts o = {0};
	o.threads = threads;
	*rp = NULL;
	if (fd >= 0)
		assert_int_equal(tk_reader_open_fd(rp, fd, path, &o), 0);
	else
		assert_int_equal(tk_reader_open_path(rp, path, &o), 0);
	int rc = tu_read_all(*rp, ev);
	tk__par_block_bytes = 0;
	tk__par_fill_hook = NULL;
	assert_true(hk.fired);
	return rc;
}

/* A file cut short while the threads read it, between a block's cut and
 * the read of its bytes: the reader ends as one thread reading the
 * file's bytes up to the cut does, events, warnings and counts. */
static void test_file_shrinks(void **state)
{
	(void)state;
	size_t n;
	char *t = make_trace(12000, L_KINETO, &n);
	const char *path = tu_path("shrinks.json");
	for (int round = 0; round < 8; round++) {
		tu_write_file(path, t, n);
		tk_reader *b;
		tu_events eb = {0};
		int rc = read_hooked(path, -1, -1, n / 2 + (uint64_t)round * 9973, 2 + round % 3, &eb, &b);
		tk_reader *a = tu_open_mem(t, (size_t)hk.at + 100, path, NULL);
		tu_events ea = {0};
		assert_int_equal(tu_read_all(a, &ea), rc);
		assert_true(ea.n < 12000);
		assert_int_equal(ea.n, eb.n);
		for (size_t i = 0; i < ea.n; i++)
			assert_true(tk_event_equal(ea.ev[i], eb.ev[i]));
		tu_same_end(a, b, rc);
		tk_reader_free(a);
		tk_reader_free(b);
		tu_events_free(&ea);
		tu_events_free(&eb);
	}
	free(t);
}

/* A read by offset that fails while the threads read the file: the
 * events before it are handed out, in order, and the reader ends with the
 * read's error. */
static void test_file_read_fails(void **state)
{
	(void)state;
	size_t n;
	char *t = make_trace(12000, L_KINETO, &n);
	const char *path = tu_path("fails.json");
	tu_write_file(path, t, n);
	tk_reader *a = tu_open_mem(t, n, path, NULL);
	tu_events ea = {0};
	assert_int_equal(tu_read_all(a, &ea), TK_EOF);
	for (int round = 0; round < 8; round++) {
		int fd = open(path, O_RDONLY), dirfd = open(tu_tmpdir(), O_RDONLY | O_DIRECTORY);
		assert_true(fd >= 0 && dirfd >= 0);
		tk_reader *b;
		tu_events eb = {0};
		int rc = read_hooked(path, fd, dirfd, n / 2 + (uint64_t)round * 9973, 2 + round % 3, &eb, &b);
		assert_true(rc < 0);
		assert_true(tu_contains(tk_reader_error(b), "read failed: Is a directory"));
		assert_true(eb.n < ea.n);
		for (size_t i = 0; i < eb.n; i++)
			assert_true(tk_event_equal(ea.ev[i], eb.ev[i]));
		tk_reader_free(b);
		tu_events_free(&eb);
		close(fd);
		close(dirfd);
	}
	tk_reader_free(a);
	tu_events_free(&ea);
	free(t);
}

/* A small input stays on the caller's thread: no threads for one window. */
static void test_small_input_alone(void **state)
{
	(void)state;
	size_t n;
	char *t = make_trace(50, L_COMPACT, &n);
	outcome o = both(t, n, 8, 0, NULL);
	assert_int_equal(o.events, 50);
	assert_false(o.par);
	free(t);
}

/* skip_args: the events of a full read without their args, on one thread
 * and on several; a whole trace ends alike. */
static void test_skip_args(void **state)
{
	(void)state;
	for (int layout = L_KINETO; layout <= L_BARE; layout++) {
		size_t n;
		char *t = make_trace(400, layout, &n);
		for (unsigned threads = 1; threads <= 3; threads += 2) {
			tk__par_block_bytes = 512;
			tk_reader_opts full = {0}, skip = {0};
			skip.skip_args = 1;
			skip.threads = threads;
			tk_reader *a = tu_open_mem(t, n, "t.json", &full), *b = tu_open_mem(t, n, "t.json", &skip);
			const tk_event *ea, *eb;
			int ra, rb;
			size_t k = 0;
			while ((ra = tk_reader_next(a, &ea)) == TK_OK) {
				assert_int_equal(rb = tk_reader_next(b, &eb), TK_OK);
				assert_null(eb->args.ptr);
				tk_event e = *ea;
				e.args = (tk_sv){NULL, 0};
				tk_event f = *eb;
				f.args = (tk_sv){NULL, 0};
				assert_true(tk_event_equal(&e, &f));
				k++;
			}
			assert_int_equal(ra, TK_EOF);
			assert_int_equal(tk_reader_next(b, &eb), TK_EOF);
			assert_int_equal(k, 400);
			if (threads > 1)
				assert_non_null(b->par);
			tk_reader_free(a);
			tk_reader_free(b);
			tk__par_block_bytes = 0;
		}
		free(t);
	}
}

/* A tar of two traces: the first member's reader, parsing ahead on its
 * threads, is left behind when the caller moves on to the second; the
 * second reads whole and alike, the first ends with an error (the archive
 * has moved on), nothing races (the archive's calls are serialized). */
static void test_archive_moved_on(void **state)
{
	(void)state;
	size_t n;
	char *t = make_trace(15000, L_KINETO, &n); /* more than the reader's first window (1 MiB) */
	size_t cap = 2 * n + 65536, used = 0;
	char *tar = malloc(cap);
	struct archive *w = archive_write_new();
	archive_write_set_format_pax_restricted(w);
	assert_int_equal(archive_write_open_memory(w, tar, cap, &used), ARCHIVE_OK);
	for (int i = 0; i < 2; i++) {
		struct archive_entry *e = archive_entry_new();
		archive_entry_set_pathname(e, i ? "b.json" : "a.json");
		archive_entry_set_size(e, (la_int64_t)n);
		archive_entry_set_filetype(e, AE_IFREG);
		archive_entry_set_perm(e, 0644);
		assert_int_equal(archive_write_header(w, e), ARCHIVE_OK);
		assert_int_equal(archive_write_data(w, t, n), (la_ssize_t)n);
		archive_entry_free(e);
	}
	archive_write_close(w);
	archive_write_free(w);
	tu_write_file(tu_path("two.tar"), tar, used);
	free(tar);

	tk_reader_opts o = {0};
	o.threads = 3;
	tk__par_block_bytes = 4096;
	tk_inputs *in = NULL;
	tk_reader *ra = NULL, *rb = NULL;
	const char *name;
	const tk_event *ev;
	assert_int_equal(tk_inputs_open(&in, tu_path("two.tar"), &o), 0);
	assert_int_equal(tk_inputs_next(in, &ra, &name), TK_OK);
	for (int i = 0; i < 10; i++)
		assert_int_equal(tk_reader_next(ra, &ev), TK_OK);
	assert_int_equal(tk_inputs_next(in, &rb, &name), TK_OK);
	assert_string_equal(name, tu_path("two.tar//b.json"));
	int rc;
	uint64_t got = 0;
	while ((rc = tk_reader_next(rb, &ev)) == TK_OK)
		got++;
	assert_int_equal(rc, TK_EOF);
	assert_int_equal(got, 15000);
	assert_non_null(rb->par); /* a member is parsed on the threads too */
	while ((rc = tk_reader_next(ra, &ev)) == TK_OK)
		;
	assert_int_equal(rc, TK_ERR_IO);
	assert_true(strstr(tk_reader_error(ra), "moved on") != NULL);
	tk_reader_free(ra);
	tk_reader_free(rb);
	tk_inputs_free(in);
	tk__par_block_bytes = 0;
	free(t);
	tu_cleanup();
}

/* ---- notes (tk_reader_opts.note_fn) ---- */

typedef struct note {
	uint64_t digest; /* of the event's time, name and args */
	int off_main;    /* written on another thread than the caller's */
} note;

static pthread_t note_main;

static uint64_t ev_digest(const tk_event *ev)
{
	uint64_t h = (uint64_t)ev->ts * 0x9e3779b97f4a7c15ull;
	for (size_t i = 0; i < ev->name.len; i++)
		h = (h ^ (unsigned char)ev->name.ptr[i]) * 0x100000001b3ull;
	for (size_t i = 0; ev->args.ptr && i < ev->args.len; i++)
		h = (h ^ (unsigned char)ev->args.ptr[i]) * 0x100000001b3ull;
	return h;
}

static void note_fn(const void *ctx, const tk_event *ev, void *out)
{
	assert_ptr_equal(ctx, &note_main);
	note n = {ev_digest(ev), !pthread_equal(pthread_self(), note_main)};
	memcpy(out, &n, sizeof n);
}

/* Every event's note is the one its own event gives, on one thread and on
 * three; with three, every event the threads handed out comes with the
 * note its thread wrote (which thread parsed it is the scheduler's
 * choice), the others with one the reader wrote as it handed them out;
 * none without note_fn. */
static void test_notes(void **state)
{
	(void)state;
	note_main = pthread_self();
	tk__buf b = {0};
	assert_int_equal(tk__buf_puts(&b, "{\n  \"traceEvents\": [\n  "), 0);
	for (int i = 0; i < 3000; i++) {
		char ev[256];
		int k = snprintf(ev, sizeof ev,
		                 "%s{\n    \"ph\": \"X\", \"name\": \"op%d\", \"pid\": 1, \"tid\": 2,\n"
		                 "    \"ts\": %d, \"dur\": 3,\n    \"args\": {\"s\": \"%s\", \"n\": %d}\n  }",
		                 i ? ",\n  " : "", i % 17, i, i % 5 ? "plain" : "a},\n{b", i);
		assert_int_equal(tk__buf_append(&b, ev, (size_t)k), 0);
	}
	assert_int_equal(tk__buf_puts(&b, "\n  ]\n}\n"), 0);
	tk__par_block_bytes = 4096;
	for (unsigned threads = 1; threads <= 3; threads += 2) {
		tk_reader_opts o = {0};
		o.threads = threads;
		o.note_fn = note_fn;
		o.note_ctx = &note_main;
		o.note_size = sizeof(note);
		tk_reader *r = NULL;
		assert_int_equal(tk_reader_open_memory(&r, b.p, b.len, "n.json", &o), 0);
		const tk_event *ev;
		size_t n = 0, here = 0, off = 0;
		while (tk_reader_next(r, &ev) == TK_OK) {
			const note *nt = tk_reader_event_note(r);
			assert_non_null(nt);
			assert_true(nt->digest == ev_digest(ev));
			here += (const void *)nt == (const void *)r->note_buf;
			off += nt->off_main;
			n++;
		}
		assert_int_equal(n, 3000);
		uint64_t handed = 0, resumed = 0;
		tk__par_counts(r->par, &handed, &resumed);
		assert_int_equal(here, n - handed);
		if (threads == 1)
			assert_int_equal(off, 0);
		else
			assert_true(handed > 2000);
		tk_reader_free(r);
	}
	tk__par_block_bytes = 0;
	/* no note_fn: no notes; a size out of range: refused */
	tk_reader *r = NULL;
	const tk_event *ev;
	assert_int_equal(tk_reader_open_memory(&r, b.p, b.len, "n.json", NULL), 0);
	assert_int_equal(tk_reader_next(r, &ev), TK_OK);
	assert_null(tk_reader_event_note(r));
	tk_reader_free(r);
	tk_reader_opts bad = {0};
	bad.note_fn = note_fn;
	bad.note_size = 5000;
	r = NULL;
	assert_int_equal(tk_reader_open_memory(&r, b.p, b.len, "n.json", &bad), TK_ERR_ARG);
	assert_non_null(strstr(tk_reader_error(r), "5000"));
	tk_reader_free(r);
	tk__buf_free(&b);
}

/* ---- the events' JSON text written ahead (render_json) ---- */

/* The JSON written by w into fd, closed: its bytes (a NUL after). */
static char *memfd_text(int fd, size_t *len)
{
	off_t end = lseek(fd, 0, SEEK_END);
	assert_true(end >= 0);
	char *p = malloc((size_t)end + 1);
	assert_non_null(p);
	assert_int_equal(pread(fd, p, (size_t)end, 0), end);
	p[end] = 0;
	*len = (size_t)end;
	return p;
}

typedef struct wrote {
	char *text;
	size_t len;
	int rc;          /* the writer's last */
	char err[256];   /* its error */
	uint64_t events; /* written */
	uint64_t repaired;
	uint64_t ahead; /* events that had their text written ahead */
} wrote;

/* p[0..n) read on `threads` (render_json when ahead) and written as JSON
 * with tk_writer_write_from (ahead) or tk_writer_write. */
static wrote convert(const char *p, size_t n, unsigned threads, int ahead, uint64_t max_bytes)
{
	tk_reader_opts o = {0};
	o.threads = threads;
	o.render_json = ahead;
	tk_reader *r = NULL;
	assert_int_equal(tk_reader_open_memory(&r, p, n, "t.json", &o), 0);
	int fd = memfd_create("render", 0);
	assert_true(fd >= 0);
	tk_writer_opts wo = {.format = TK_FORMAT_JSON};
	tk_writer *w = NULL;
	assert_int_equal(tk_writer_open_fd(&w, fd, "out.json", &wo), 0);
	assert_int_equal(tk_writer_set_max_bytes(w, max_bytes), 0);
	wrote out = {0};
	const tk_event *ev;
	size_t copied = 0;
	while (!out.rc && tk_reader_next(r, &ev) == TK_OK) {
		if (!copied)
			assert_int_equal(tk_copy_meta(w, r, &copied), 0);
		tk_sv t;
		uint32_t rep;
		out.ahead += (uint64_t)tk__reader_text(r, ev, &t, &rep);
		out.rc = ahead ? tk_writer_write_from(w, r, ev) : tk_writer_write(w, ev);
		out.events += !out.rc;
	}
	snprintf(out.err, sizeof out.err, "%s", out.rc ? tk_writer_error(w) : "");
	/* a refused event leaves the writer to be closed, as trace-split does */
	int rc = !out.rc || out.rc == TK_ERR_LIMIT ? tk_writer_close(w) : out.rc;
	if (!out.rc)
		out.rc = rc;
	out.repaired = tk_writer_repaired_strings(w);
	if (!rc)
		out.text = memfd_text(fd, &out.len);
	tk_writer_free(w);
	tk_reader_free(r);
	close(fd);
	return out;
}

/* Kineto's layout with args that need care, a name with an escape and a
 * control character, an event with no args and one with no name: the
 * output written from the texts the threads wrote equals the writer's own,
 * byte for byte; under a byte budget both refuse the same event. */
static void test_render(void **state)
{
	(void)state;
	size_t n;
	char *p = make_trace(3000, L_KINETO, &n);
	/* a few events of other shapes in front of the closing bracket */
	char *close = strstr(p, "\n  ],\n  \"traceName\"");
	assert_non_null(close);
	tk__buf b = {0};
	assert_int_equal(tk__buf_append(&b, p, (size_t)(close - p)), 0);
	assert_int_equal(tk__buf_puts(&b, ",\n  {\"ph\": \"i\", \"name\": \"tab\\there \\u0001\", \"pid\": \"p\", \"ts\": 1, \"id\": 5}"
	                                  ",\n  {\"ph\": \"X\", \"ts\": 2.5, \"dur\": 0.001, \"s\": \"g\", \"args\": {\"a\": [1,2]}}"
	                                  ",\n  {\"ph\": \"C\", \"name\": \"c\", \"ts\": -3, \"tid\": -1}"),
	                 0);
	assert_int_equal(tk__buf_puts(&b, close), 0);
	tk__par_block_bytes = 4096;
	/* the threads write every block's texts (not only while the caller is
	 * behind, which is the scheduler's choice) */
	tk__render_always = 1;
	wrote a = convert(b.p, b.len, 1, 0, 0), c = convert(b.p, b.len, 3, 1, 0);
	assert_int_equal(a.rc, 0);
	assert_int_equal(c.rc, 0);
	assert_int_equal(a.events, 3003);
	assert_int_equal(c.events, 3003);
	assert_int_equal(a.len, c.len);
	assert_memory_equal(a.text, c.text, a.len);
	assert_int_equal(a.repaired, c.repaired);
	assert_int_equal(a.ahead, 0);
	assert_true(c.ahead > 2000); /* (which thread parsed a block is the scheduler's choice) */
	/* without render_json the threads write no text */
	wrote d = convert(b.p, b.len, 3, 0, 0);
	assert_int_equal(d.ahead, 0);
	assert_memory_equal(a.text, d.text, a.len);
	/* a budget of half the output: the same event refused, the same part */
	uint64_t half = a.len / 2;
	free(a.text);
	free(c.text);
	free(d.text);
	a = convert(b.p, b.len, 1, 0, half);
	c = convert(b.p, b.len, 3, 1, half);
	assert_int_equal(a.rc, TK_ERR_LIMIT);
	assert_int_equal(c.rc, TK_ERR_LIMIT);
	assert_true(a.events > 1000 && a.events < 3000);
	assert_int_equal(a.events, c.events);
	assert_int_equal(a.len, c.len);
	assert_memory_equal(a.text, c.text, a.len);
	assert_true(c.ahead > 500);
	free(a.text);
	free(c.text);
	/* as the tools run: texts only while the caller is behind, the same bytes */
	tk__render_always = 0;
	a = convert(b.p, b.len, 1, 0, 0);
	c = convert(b.p, b.len, 3, 1, 0);
	assert_int_equal(c.rc, 0);
	assert_int_equal(a.len, c.len);
	assert_memory_equal(a.text, c.text, a.len);
	free(a.text);
	free(c.text);
	tk__par_block_bytes = 0;
	tk__buf_free(&b);
	free(p);
}

/* Events the JSON reader does not give (strings that are not UTF-8, args
 * and extra members that are not canonical or not JSON, no member at all):
 * the texts a batch gets are the writer's bytes, or none where the writer
 * reports an error. */
static void test_render_odd_events(void **state)
{
	(void)state;
	tk_event ev[7];
	memset(ev, 0, sizeof ev);
	for (int i = 0; i < 6; i++) {
		ev[i].ph = 'X';
		ev[i].has = TK_HAS_PH | TK_HAS_NAME | TK_HAS_TS;
		ev[i].ts = 1000 * i + 7;
		ev[i].name = (tk_sv){"op", 2};
	}
	ev[0].name = (tk_sv){"bad\xff\xfeutf", 8};
	ev[1].args = (tk_sv){"{ \"b\" : [ 1 , 2 ] }", 19};   /* not canonical */
	ev[2].args = (tk_sv){"{\"b\": nope}", 11};            /* not JSON */
	ev[3].extra = (tk_sv){"\"x\" : 1", 7};                 /* members, not canonical */
	ev[3].args = (tk_sv){"{}", 2};
	ev[4].ph = 1;                                          /* a control character */
	ev[5].extra = (tk_sv){"\"args\":{\"a\":1}", 14};       /* args twice */
	ev[5].args = (tk_sv){"{\"z\":2}", 7};
	ev[5].has |= TK_HAS_VALID_JSON;
	/* ev[6]: no member at all, an empty text */
	tk_reader_opts o = {0};
	o.render_json = 1;
	tk__buf text = {0};
	tk__rend *rend = NULL;
	size_t cap = 0;
	tk__batch_render(&o, ev, 7, &text, &rend, &cap);
	assert_non_null(rend);
	assert_true(cap >= 7);
	assert_int_equal(rend[6].len, 0);
	for (int i = 0; i < 7; i++) {
		int fd = memfd_create("odd", 0);
		tk_writer_opts wo = {.format = TK_FORMAT_JSON};
		tk_writer *w = NULL;
		assert_int_equal(tk_writer_open_fd(&w, fd, "odd.json", &wo), 0);
		int rc = tk_writer_write(w, &ev[i]);
		if (i == 2 || i == 4) { /* the writer's error: no text */
			assert_true(rc < 0);
			assert_int_equal(rend[i].len, TK__NO_TEXT);
		} else {
			assert_int_equal(rc, 0);
			assert_int_equal(tk_writer_close(w), 0);
			size_t len;
			char *out = memfd_text(fd, &len);
			char *at = strstr(out, "[\n{");
			assert_non_null(at);
			at += 3;
			assert_true(rend[i].len != TK__NO_TEXT);
			assert_memory_equal(at, text.p + rend[i].off, rend[i].len);
			assert_memory_equal(at + rend[i].len, "}\n]", 3);
			assert_int_equal(rend[i].repaired, tk_writer_repaired_strings(w));
			if (i == 0)
				assert_int_equal(rend[i].repaired, 1);
			free(out);
		}
		tk_writer_free(w);
		close(fd);
	}
	free(rend);
	tk__buf_free(&text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_layouts_and_cuts),
		cmocka_unit_test(test_threads_take_over_again),
		cmocka_unit_test(test_damage_everywhere),
		cmocka_unit_test(test_gzip),
		cmocka_unit_test(test_counted_warnings),
		cmocka_unit_test(test_big_events),
		cmocka_unit_test(test_no_threads),
		cmocka_unit_test(test_trickled_source),
		cmocka_unit_test(test_read_by_offset),
		cmocka_unit_test(test_file_shrinks),
		cmocka_unit_test(test_file_read_fails),
		cmocka_unit_test(test_small_input_alone),
		cmocka_unit_test(test_archive_moved_on),
		cmocka_unit_test(test_skip_args),
		cmocka_unit_test(test_notes),
		cmocka_unit_test(test_render),
		cmocka_unit_test(test_render_odd_events),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
