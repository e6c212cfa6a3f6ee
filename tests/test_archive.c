/* test_archive.c: traces read straight from archives (tar, tar.gz, zip, 7z, ...): tk_inputs, ARCHIVE//MEMBER, errors, damaged archives. */
#define _GNU_SOURCE
#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"

/* Failures that do not stop a test, so that the cases after them still
 * run: the first few are kept, all are counted, and the test fails at
 * its end (deferred_check). */
static char deferred[4096];
static size_t deferred_len, deferred_n;

static void defer_fail(const char *fmt, ...)
{
	if (deferred_n++ >= 6)
		return;
	va_list ap;
	va_start(ap, fmt);
	int k = vsnprintf(deferred + deferred_len, sizeof deferred - deferred_len, fmt, ap);
	va_end(ap);
	if (k > 0)
		deferred_len += (size_t)k;
	if (deferred_len < sizeof deferred - 1)
		deferred[deferred_len++] = '\n';
	deferred_len = deferred_len < sizeof deferred ? deferred_len : sizeof deferred - 1;
	deferred[deferred_len] = 0;
}

static void deferred_reset(void)
{
	deferred_n = deferred_len = 0;
	deferred[0] = 0;
}

static void deferred_check(const char *what)
{
	size_t n = deferred_n;
	deferred_n = deferred_len = 0;
	if (n)
		fail_msg("%s: %zu failures, the first:\n%s", what, n, deferred);
}

/* ---- the members put into the archives ---- */

typedef struct member {
	const char *name; /* its path in the archive */
	int dir;          /* a directory entry */
	int trace;        /* named like a trace: tk_inputs lists it */
	unsigned char *data;
	size_t len;
	/* what reading data as a plain trace gives (traces only) */
	tk_reader *ref;
	tu_events ev;
	int ref_rc;
} member;

typedef struct mset {
	member *m;
	size_t n;
} mset;

/* A small trace in the Kineto dialect: metadata before and after the
 * events, fractional microseconds, escapes, string tids, flows, instants
 * and counters. Deterministic for a given rank and size. */
static char *gen_trace(int rank, size_t n, size_t *len)
{
	size_t cap = 1024 + n * 400, k = 0;
	char *p = malloc(cap);
	assert_non_null(p);
	k += (size_t)snprintf(p + k, cap - k,
	                      "{\n  \"schemaVersion\": 1,\n"
	                      "  \"distributedInfo\": {\"backend\": \"nccl\", \"rank\": %d, \"world_size\": 4},\n"
	                      "  \"deviceProperties\": [{\"id\": 0, \"name\": \"GPU \\u00e9 %d\"}],\n"
	                      "  \"traceEvents\": [\n"
	                      "  {\"ph\": \"M\", \"name\": \"process_name\", \"pid\": %d, \"tid\": 0, "
	                      "\"args\": {\"name\": \"python\"}}",
	                      rank, rank, 100 + rank);
	uint32_t s = 2654435761u * (uint32_t)(rank + 1);
	unsigned long long ts = 1700000000000ull + (unsigned long long)rank * 1000;
	for (size_t i = 0; i < n; i++) {
		s = s * 1103515245u + 12345u;
		unsigned r = s >> 8;
		ts += 1 + r % 50;
		unsigned frac = r % 1000, dur = 1 + r % 400;
		int pid = 100 + rank;
		switch (i % 5) {
		case 0:
			k += (size_t)snprintf(p + k, cap - k,
			                      ",\n  {\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::op%u \\\"q\\\" \\\\\", "
			                      "\"pid\": %d, \"tid\": %u, \"ts\": %llu.%03u, \"dur\": %u.%03u, "
			                      "\"args\": {\"External id\": %zu, \"Input Dims\": [[%u, %u], []], "
			                      "\"Sequence number\": %u}}",
			                      r % 17, pid, 1 + r % 3, ts, frac, dur, r % 1000, i, r % 64, r % 128, r);
			break;
		case 1:
			k += (size_t)snprintf(p + k, cap - k,
			                      ",\n  {\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"void k<%u>(float*)\", "
			                      "\"pid\": 0, \"tid\": \"stream 7\", \"ts\": %llu.%03u, \"dur\": %u, "
			                      "\"args\": {\"device\": 0, \"stream\": 7, \"correlation\": %zu, \"grid\": [%u, 1, 1]}}",
			                      r % 9, ts, frac, dur, i, 1 + r % 1024);
			break;
		case 2:
			k += (size_t)snprintf(p + k, cap - k,
			                      ",\n  {\"ph\": \"s\", \"id\": %zu, \"pid\": %d, \"tid\": 1, \"ts\": %llu.%03u, "
			                      "\"cat\": \"ac2g\", \"name\": \"ac2g\"}",
			                      i, pid, ts, frac);
			break;
		case 3:
			k += (size_t)snprintf(p + k, cap - k,
			                      ",\n  {\"ph\": \"f\", \"id\": %zu, \"pid\": 0, \"tid\": \"stream 7\", "
			                      "\"ts\": %llu.%03u, \"cat\": \"ac2g\", \"name\": \"ac2g\", \"bp\": \"e\"}",
			                      i - 1, ts, frac);
			break;
		default:
			if (r % 2)
				k += (size_t)snprintf(p + k, cap - k,
				                      ",\n  {\"ph\": \"i\", \"s\": \"t\", \"name\": \"mark \\u2603 %u\", "
				                      "\"pid\": %d, \"tid\": 2, \"ts\": %llu}",
				                      r % 5, pid, ts);
			else
				k += (size_t)snprintf(p + k, cap - k,
				                      ",\n  {\"ph\": \"C\", \"name\": \"memory\", \"pid\": %d, \"ts\": %llu.%03u, "
				                      "\"args\": {\"bytes\": %u}}",
				                      pid, ts, frac, r);
		}
		assert_true(k < cap);
	}
	k += (size_t)snprintf(p + k, cap - k,
	                      "\n  ],\n  \"traceName\": \"rank%d.json\",\n  \"displayTimeUnit\": \"ms\"\n}\n",
	                      rank);
	assert_true(k < cap);
	*len = k;
	return p;
}

/* The trace text converted to .tkb by the library's own writer. */
static unsigned char *to_tkb(const char *text, size_t n, size_t *out_len)
{
	tk_reader *r = tu_open_mem(text, n, "to_tkb.json", NULL);
	tk_writer_opts wo = {.format = TK_FORMAT_TKB};
	tk_writer *w = NULL;
	const char *path = tu_path("member.tkb");
	assert_int_equal(tk_writer_open_path(&w, path, &wo), TK_OK);
	size_t copied = 0;
	const tk_event *ev;
	int rc;
	while ((rc = tk_reader_next(r, &ev)) == TK_OK) {
		assert_int_equal(tk_copy_meta(w, r, &copied), TK_OK);
		assert_int_equal(tk_writer_write(w, ev), TK_OK);
	}
	assert_int_equal(rc, TK_EOF);
	assert_int_equal(tk_copy_meta(w, r, &copied), TK_OK);
	assert_int_equal(tk_writer_close(w), TK_OK);
	tk_writer_free(w);
	tk_reader_free(r);
	unsigned char *p = (unsigned char *)tu_read_file(path, out_len);
	unlink(path);
	return p;
}

static void member_data(member *m, const char *name, int trace, void *data, size_t len)
{
	memset(m, 0, sizeof *m);
	m->name = name;
	m->trace = trace;
	m->data = data;
	m->len = len;
}

static void member_dir(member *m, const char *name)
{
	memset(m, 0, sizeof *m);
	m->name = name;
	m->dir = 1;
}

static char *dupstr(const char *s)
{
	char *p = strdup(s);
	assert_non_null(p);
	return p;
}

/* The reference: the member's bytes read as a plain trace from memory. */
static void member_ref(member *m)
{
	if (!m->trace)
		return;
	assert_true(tk_is_trace_name(m->name));
	m->ref = tu_open_mem(m->data, m->len, "ref", NULL);
	m->ref_rc = tu_read_all(m->ref, &m->ev);
	assert_int_equal(m->ref_rc, TK_EOF);
	assert_true(m->ev.n > 0);
}

static void mset_free(mset *s)
{
	for (size_t i = 0; i < s->n; i++) {
		free(s->m[i].data);
		tu_events_free(&s->m[i].ev);
		tk_reader_free(s->m[i].ref);
	}
	free(s->m);
	memset(s, 0, sizeof *s);
}

/* The full set: traces of every kind among files that are not traces.
 * With big, one trace of more than 1 MiB (larger than every buffer). */
static void mset_full(mset *s, int big)
{
	s->n = big ? 11 : 10;
	s->m = calloc(s->n, sizeof *s->m);
	assert_non_null(s->m);
	size_t n, zn, tn;
	char path[4096];
	snprintf(path, sizeof path, "%s/example_kineto.json", TK_TESTDATA);
	char *example = tu_read_file(path, &n);
	member_data(&s->m[0], "run/example_kineto.json", 1, example, n);
	member_data(&s->m[1], "notes.txt", 0, dupstr("traces of the nightly run, rank by rank\n"), 39);
	member_dir(&s->m[2], "run/sub/");
	char *t1 = gen_trace(1, 300, &n);
	unsigned char *z1 = tu_gzip(t1, n, &zn);
	member_data(&s->m[3], "run/rank1.json.gz", 1, z1, zn);
	free(t1);
	/* JSON inside, but not named as a trace */
	member_data(&s->m[4], "config.yaml", 0, dupstr("{\"traceEvents\": []}\n"), 20);
	char *t2 = gen_trace(2, 40, &n);
	member_data(&s->m[5], "./dot/rank2.json", 1, t2, n);
	char *t3 = gen_trace(3, 200, &n);
	unsigned char *k3 = to_tkb(t3, n, &tn);
	member_data(&s->m[6], "rank3.tkb", 1, k3, tn);
	free(t3);
	char *after = tu_load("meta_after.json", &n);
	member_data(&s->m[7], "meta/after.json", 1, after, n);
	char *t4 = gen_trace(4, 30, &n);
	member_data(&s->m[8], "old/rank4.json.bak", 0, t4, n);
	member_dir(&s->m[9], "empty/");
	if (big) {
		char *t5 = gen_trace(5, 8000, &n);
		assert_true(n > (1u << 20));
		member_data(&s->m[10], "run/big.json", 1, t5, n);
	}
	for (size_t i = 0; i < s->n; i++)
		member_ref(&s->m[i]);
}

/* ---- writing archives with libarchive ---- */

typedef struct afmt {
	const char *suffix; /* of the file written */
	int (*format)(struct archive *);
	int (*filter)(struct archive *); /* NULL: none */
	const char *options;              /* NULL: the defaults */
	/* every byte of the data is under a checksum that libarchive checks:
	 * a flipped byte cannot pass as other data */
	int checked;
} afmt;

static const afmt formats[] = {
    {"tar", archive_write_set_format_pax_restricted, NULL, NULL, 0},
    {"ustar.tar", archive_write_set_format_ustar, NULL, NULL, 0},
    {"gnu.tar", archive_write_set_format_gnutar, NULL, NULL, 0},
    {"tar.gz", archive_write_set_format_pax_restricted, archive_write_add_filter_gzip, NULL, 1},
    {"tar.bz2", archive_write_set_format_pax_restricted, archive_write_add_filter_bzip2, NULL, 1},
    {"tar.xz", archive_write_set_format_pax_restricted, archive_write_add_filter_xz, NULL, 1},
    /* libarchive writes zstd frames without a content checksum */
    {"tar.zst", archive_write_set_format_pax_restricted, archive_write_add_filter_zstd, NULL, 0},
    {"stored.zip", archive_write_set_format_zip, NULL, "zip:compression=store", 1},
    {"deflated.zip", archive_write_set_format_zip, NULL, "zip:compression=deflate", 1},
    /* a CRC32 of every file in the header */
    {"7z", archive_write_set_format_7zip, NULL, NULL, 1},
    {"copy.7z", archive_write_set_format_7zip, NULL, "7zip:compression=copy", 1},
    {"newc.cpio", archive_write_set_format_cpio_newc, NULL, NULL, 0},
};
#define N_FORMATS (sizeof formats / sizeof formats[0])

static const afmt *format_named(const char *suffix)
{
	for (size_t i = 0; i < N_FORMATS; i++)
		if (strcmp(formats[i].suffix, suffix) == 0)
			return &formats[i];
	fail_msg("no format %s", suffix);
	return NULL;
}

/* Writes the members into `path`: 0, or -1 (said why) when this
 * libarchive cannot write the format. */
static int write_archive(const afmt *f, const member *ms, size_t n, const char *path)
{
	struct archive *a = archive_write_new();
	assert_non_null(a);
	if (f->format(a) != ARCHIVE_OK || (f->filter && f->filter(a) != ARCHIVE_OK) ||
	    (f->options && archive_write_set_options(a, f->options) != ARCHIVE_OK)) {
		print_message("skipped %s: this libarchive cannot write it here (%s)\n", f->suffix,
		              archive_error_string(a) ? archive_error_string(a) : "needs an external program");
		archive_write_free(a);
		return -1;
	}
	if (archive_write_open_filename(a, path) != ARCHIVE_OK)
		fail_msg("%s: %s", path, archive_error_string(a));
	for (size_t i = 0; i < n; i++) {
		const member *m = &ms[i];
		struct archive_entry *e = archive_entry_new();
		assert_non_null(e);
		archive_entry_set_pathname(e, m->name);
		archive_entry_set_filetype(e, m->dir ? AE_IFDIR : AE_IFREG);
		archive_entry_set_perm(e, m->dir ? 0755 : 0644);
		archive_entry_set_mtime(e, 1700000000, 0);
		archive_entry_set_size(e, m->dir ? 0 : (la_int64_t)m->len);
		if (archive_write_header(a, e) != ARCHIVE_OK)
			fail_msg("%s: header of %s: %s", path, m->name, archive_error_string(a));
		if (!m->dir && m->len && archive_write_data(a, m->data, m->len) != (la_ssize_t)m->len)
			fail_msg("%s: data of %s: %s", path, m->name, archive_error_string(a));
		archive_entry_free(e);
	}
	if (archive_write_close(a) != ARCHIVE_OK)
		fail_msg("%s: %s", path, archive_error_string(a));
	archive_write_free(a);
	return 0;
}

/* The members written as the archive named by fmt (a file in the test
 * directory): its path, to free; NULL when this libarchive cannot write the
 * format (write_archive said so). */
static char *written(const afmt *f, const member *ms, size_t n, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static char *written(const afmt *f, const member *ms, size_t n, const char *fmt, ...)
{
	char name[64];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(name, sizeof name, fmt, ap);
	va_end(ap);
	char *path = dupstr(tu_path(name));
	if (!write_archive(f, ms, n, path))
		return path;
	free(path);
	return NULL;
}

/* "./a/b" and "a/b" name the same member. */
static const char *strip_dot(const char *m)
{
	while (m[0] == '.' && m[1] == '/')
		m += 2;
	return m;
}

/* The traces of an archive as libarchive's own reader lists them, in its
 * order: "PATH//NAME" in names[i], the member in want[i]. Checks that every
 * entry is one of ms, in the order they were written. */
typedef struct listing {
	char **names;
	const member **want;
	size_t n;
} listing;

static void list_archive(const char *path, const mset *s, listing *out)
{
	memset(out, 0, sizeof *out);
	out->names = calloc(s->n, sizeof *out->names);
	out->want = calloc(s->n, sizeof *out->want);
	assert_true(out->names && out->want);
	struct archive *a = archive_read_new();
	archive_read_support_filter_all(a);
	archive_read_support_format_all(a);
	if (archive_read_open_filename(a, path, 65536) != ARCHIVE_OK)
		fail_msg("%s: %s", path, archive_error_string(a));
	struct archive_entry *e;
	size_t next = 0;
	int rc;
	while ((rc = archive_read_next_header(a, &e)) == ARCHIVE_OK) {
		const char *name = archive_entry_pathname(e);
		if (archive_entry_filetype(e) != AE_IFREG)
			continue;
		while (next < s->n && (s->m[next].dir || strcmp(strip_dot(s->m[next].name), strip_dot(name))))
			next++;
		if (next == s->n)
			fail_msg("%s: entry %s is not one written, or out of order", path, name);
		const member *m = &s->m[next++];
		if (!m->trace)
			continue;
		size_t k = strlen(path) + strlen(name) + 3;
		out->names[out->n] = malloc(k);
		assert_non_null(out->names[out->n]);
		snprintf(out->names[out->n], k, "%s//%s", path, name);
		out->want[out->n++] = m;
	}
	if (rc != ARCHIVE_EOF)
		fail_msg("%s: %s", path, archive_error_string(a));
	archive_read_free(a);
	size_t traces = 0;
	for (size_t i = 0; i < s->n; i++)
		traces += s->m[i].trace;
	assert_int_equal(out->n, traces);
}

static void listing_free(listing *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->names[i]);
	free(l->names);
	free(l->want);
}

/* ---- comparing with the reference ---- */

/* 1 if got[0..) equals want[0..got->n) (all of it when whole). */
static int same_events(const tu_events *got, const tu_events *want, int whole, const char *what)
{
	if (got->n > want->n || (whole && got->n != want->n)) {
		print_error("%s: %zu events, want %s%zu\n", what, got->n, whole ? "" : "at most ", want->n);
		return 0;
	}
	for (size_t i = 0; i < got->n; i++)
		if (!tk_event_equal(got->ev[i], want->ev[i])) {
			print_error("%s: event %zu differs from the plain read\n", what, i);
			return 0;
		}
	return 1;
}

static void assert_same_meta(const tk_reader *r, const tk_reader *ref, const char *what)
{
	size_t n = tk_reader_meta_count(ref);
	if (tk_reader_meta_count(r) != n)
		fail_msg("%s: %zu metadata members, want %zu", what, tk_reader_meta_count(r), n);
	for (size_t i = 0; i < n; i++) {
		tk_sv k1, v1, k2, v2;
		int a1, a2;
		assert_int_equal(tk_reader_meta_get(r, i, &k1, &v1, &a1), 0);
		assert_int_equal(tk_reader_meta_get(ref, i, &k2, &v2, &a2), 0);
		if (!tu_sv_is(k1, k2.ptr) || !tu_sv_is(v1, v2.ptr) || a1 != a2)
			fail_msg("%s: metadata member %zu differs from the plain read", what, i);
	}
}

/* A reader on a member read to its end: exactly what the plain read gave. */
static void assert_reads_as(tk_reader *r, const member *m, const char *name)
{
	tu_events ev = {0};
	int rc = tu_read_all(r, &ev);
	if (rc != TK_EOF)
		fail_msg("%s: rc %d: %s", name, rc, tk_reader_error(r));
	if (!same_events(&ev, &m->ev, 1, name))
		fail_msg("%s: events differ from the plain read of %s", name, m->name);
	assert_same_meta(r, m->ref, name);
	assert_string_equal(tk_reader_format(r), tk_reader_format(m->ref));
	assert_string_equal(tk_reader_name(r), name);
	assert_int_equal(tk_reader_get_stats(r)->events, m->ev.n);
	assert_int_equal(tk_reader_get_stats(r)->truncated, 0);
	assert_null(tk_reader_warning(r, 0));
	assert_string_equal(tk_reader_error(r), "");
	tu_events_free(&ev);
}

/* ---- every trace member, in order ---- */

static void check_inputs(const char *path, const listing *l)
{
	tk_inputs *in = NULL;
	int rc = tk_inputs_open(&in, path, NULL);
	if (rc)
		fail_msg("%s: %s", path, tk_inputs_error(in));
	const char *name;
	tk_reader *r, *last = NULL;
	size_t i = 0;
	while ((rc = tk_inputs_next(in, &r, &name)) == TK_OK) {
		assert_non_null(r);
		if (i >= l->n)
			fail_msg("%s: more traces than the %zu written (%s)", path, l->n, name);
		assert_string_equal(name, l->names[i]);
		assert_reads_as(r, l->want[i], l->names[i]);
		i++;
		tk_reader_free(last);
		last = r; /* freed after the next member is open, and the last after the tk_inputs */
	}
	if (rc != TK_EOF)
		fail_msg("%s: rc %d: %s", path, rc, tk_inputs_error(in));
	assert_int_equal(i, l->n);
	assert_null(r);
	assert_int_equal(tk_inputs_next(in, &r, &name), TK_EOF);
	tk_inputs_free(in);
	tk_reader_free(last);

	/* a listing names the same members */
	assert_int_equal(tk_inputs_open(&in, path, NULL), TK_OK);
	for (i = 0; (rc = tk_inputs_next(in, NULL, &name)) == TK_OK; i++) {
		assert_true(i < l->n);
		assert_string_equal(name, l->names[i]);
	}
	assert_int_equal(rc, TK_EOF);
	assert_int_equal(i, l->n);
	tk_inputs_free(in);
}

static void test_every_member_every_format(void **state)
{
	(void)state;
	mset s;
	mset_full(&s, 1);
	size_t written = 0;
	for (size_t f = 0; f < N_FORMATS; f++) {
		char name[64];
		snprintf(name, sizeof name, "all.%s", formats[f].suffix);
		char *path = dupstr(tu_path(name));
		if (write_archive(&formats[f], s.m, s.n, path) == 0) {
			listing l;
			list_archive(path, &s, &l);
			check_inputs(path, &l);
			listing_free(&l);
			unlink(path);
			written++;
		}
		free(path);
	}
	/* tar, zip and 7z are written by every libarchive build */
	assert_true(written >= 8);
	mset_free(&s);
}

/* A member's reader reads until the archive moves on: then it fails
 * cleanly, or (a member it holds whole) gives the rest of its events; it
 * never ends early as if the member were shorter. The next member is read
 * whole. */
static void check_moving_on(const char *path, const listing *l, int must_fail, const char *what)
{
	tk_inputs *in = NULL;
	assert_int_equal(tk_inputs_open(&in, path, NULL), TK_OK);
	const char *n;
	tk_reader *r1, *r2;
	assert_int_equal(tk_inputs_next(in, &r1, &n), TK_OK);
	const tk_event *ev;
	assert_int_equal(tk_reader_next(r1, &ev), TK_OK);
	assert_true(tk_event_equal(ev, l->want[0]->ev.ev[0]));
	assert_int_equal(tk_inputs_next(in, &r2, &n), TK_OK);
	assert_string_equal(n, l->names[1]);
	tu_events rest = {0};
	int rc = tu_read_all(r1, &rest);
	for (size_t i = 0; i < rest.n; i++)
		if (1 + i >= l->want[0]->ev.n || !tk_event_equal(rest.ev[i], l->want[0]->ev.ev[1 + i]))
			fail_msg("%s: event %zu after moving on is not the member's", what, 1 + i);
	if (rc >= 0 && (must_fail || 1 + rest.n != l->want[0]->ev.n))
		fail_msg("%s: the first reader ended cleanly after the archive moved on, with %zu of %zu "
		         "events",
		         what, 1 + rest.n, l->want[0]->ev.n);
	if (rc < 0)
		assert_true(tu_contains(tk_reader_error(r1), path));
	tu_events_free(&rest);
	assert_reads_as(r2, l->want[1], l->names[1]);
	tk_reader_free(r1);
	tk_inputs_free(in);
	tk_reader_free(r2); /* after its tk_inputs */
}

static void test_reader_after_moving_on(void **state)
{
	(void)state;
	mset s;
	mset_full(&s, 1);
	/* a small first trace, then a big one first (more than a reader holds) */
	member small[3] = {s.m[0], s.m[1], s.m[3]}, big[3] = {s.m[10], s.m[1], s.m[0]};
	mset ss = {small, 3}, bs = {big, 3};
	const char *fmts[] = {"tar", "tar.gz", "deflated.zip", "7z"};
	for (size_t f = 0; f < 4; f++) {
		for (int b = 0; b < 2; b++) {
			char *path = written(format_named(fmts[f]), b ? big : small, 3, "moved%d.%s", b, fmts[f]);
			if (!path)
				continue;
			const char *name = strrchr(path, '/') + 1;
			listing l;
			list_archive(path, b ? &bs : &ss, &l);
			check_moving_on(path, &l, b, name);
			listing_free(&l);
			unlink(path);
			free(path);
		}
	}
	mset_free(&s);
}

/* ---- ARCHIVE//MEMBER ---- */

static void check_open_member(const char *arg, const member *m, const char *want_name)
{
	tk_reader *r = NULL;
	int rc = tk_reader_open_path(&r, arg, NULL);
	if (rc)
		fail_msg("%s: rc %d: %s", arg, rc, tk_reader_error(r));
	assert_reads_as(r, m, want_name);
	tk_reader_free(r);

	/* tk_inputs: that member alone */
	tk_inputs *in = NULL;
	assert_int_equal(tk_inputs_open(&in, arg, NULL), TK_OK);
	const char *name;
	assert_int_equal(tk_inputs_next(in, &r, &name), TK_OK);
	assert_true(tu_contains(name, "//"));
	assert_true(tu_contains(name, strip_dot(m->name)));
	tu_events ev = {0};
	assert_int_equal(tu_read_all(r, &ev), TK_EOF);
	assert_true(same_events(&ev, &m->ev, 1, arg));
	tu_events_free(&ev);
	tk_reader_free(r);
	assert_int_equal(tk_inputs_next(in, &r, &name), TK_EOF);
	assert_null(r);
	tk_inputs_free(in);
}

static void test_member_selection(void **state)
{
	(void)state;
	mset s;
	mset_full(&s, 0);
	const char *fmts[] = {"tar", "tar.gz", "stored.zip", "deflated.zip", "7z", "newc.cpio"};
	for (size_t f = 0; f < 6; f++) {
		char *path = written(format_named(fmts[f]), s.m, s.n, "sel.%s", fmts[f]);
		if (!path)
			continue;
		const char *name = strrchr(path, '/') + 1;
		listing l;
		list_archive(path, &s, &l);
		char arg[4096];
		for (size_t i = 0; i < l.n; i++) {
			const char *stored = l.names[i] + strlen(path) + 2;
			/* as stored, without a leading "./", and with one */
			snprintf(arg, sizeof arg, "%s//%s", path, stored);
			check_open_member(arg, l.want[i], l.names[i]);
			snprintf(arg, sizeof arg, "%s//%s", path, strip_dot(stored));
			check_open_member(arg, l.want[i], l.names[i]);
			snprintf(arg, sizeof arg, "%s//./%s", path, strip_dot(stored));
			check_open_member(arg, l.want[i], l.names[i]);
		}
		/* a member named explicitly is read whatever its name: JSON with no events */
		snprintf(arg, sizeof arg, "%s//config.yaml", path);
		tk_reader *r = NULL;
		assert_int_equal(tk_reader_open_path(&r, arg, NULL), TK_OK);
		tu_events ev = {0};
		assert_int_equal(tu_read_all(r, &ev), TK_EOF);
		assert_int_equal(ev.n, 0);
		tk_reader_free(r);
		/* an archive in a directory named with a doubled slash */
		snprintf(arg, sizeof arg, "%s//%s//%s", tu_tmpdir(), name, l.names[1] + strlen(path) + 2);
		check_open_member(arg, l.want[1], arg);
		listing_free(&l);
		unlink(path);
		free(path);
	}
	mset_free(&s);
}

/* ---- what fails, and how it says so ---- */

/* Opens arg and reads it to the end: the error it fails with (a copy), or
 * NULL when it read cleanly. */
static char *read_error(const char *arg)
{
	tk_reader *r = NULL;
	int rc = tk_reader_open_path(&r, arg, NULL);
	if (!rc) {
		tu_events ev = {0};
		rc = tu_read_all(r, &ev);
		tu_events_free(&ev);
	}
	char *msg = rc < 0 ? dupstr(tk_reader_error(r)) : NULL;
	if (rc < 0 && !*msg)
		fail_msg("%s: rc %d with an empty message", arg, rc);
	tk_reader_free(r);
	return msg;
}

static void assert_fails_naming(const char *arg, const char *a, const char *b)
{
	char *msg = read_error(arg);
	if (!msg)
		fail_msg("%s: read without an error", arg);
	assert_true(tu_contains(msg, a));
	if (b)
		assert_true(tu_contains(msg, b));
	free(msg);
}

static void test_missing_member(void **state)
{
	(void)state;
	mset s;
	mset_full(&s, 0);
	const char *fmts[] = {"tar", "tar.gz", "deflated.zip", "7z"};
	char arg[4096];
	for (size_t f = 0; f < 4; f++) {
		char *path = written(format_named(fmts[f]), s.m, s.n, "miss.%s", fmts[f]);
		if (!path)
			continue;
		snprintf(arg, sizeof arg, "%s//nope/rank9.json", path);
		assert_fails_naming(arg, path, "nope/rank9.json");
		/* a directory is no member to read */
		snprintf(arg, sizeof arg, "%s//run/sub", path);
		assert_fails_naming(arg, path, "run/sub");
		/* a member that is not a trace, named explicitly: read, and it is not JSON */
		snprintf(arg, sizeof arg, "%s//notes.txt", path);
		assert_fails_naming(arg, path, "notes.txt");
		/* through tk_inputs: the name comes back, its reader fails */
		snprintf(arg, sizeof arg, "%s//nope/rank9.json", path);
		tk_inputs *in = NULL;
		int rc = tk_inputs_open(&in, arg, NULL);
		const char *n;
		tk_reader *r = NULL;
		if (!rc)
			rc = tk_inputs_next(in, &r, &n);
		if (!rc) {
			tu_events ev = {0};
			rc = tu_read_all(r, &ev);
			tu_events_free(&ev);
		}
		assert_true(rc < 0);
		assert_true(tu_contains(r ? tk_reader_error(r) : tk_inputs_error(in), "nope/rank9.json"));
		tk_reader_free(r);
		tk_inputs_free(in);
		unlink(path);
		free(path);
	}
	/* a plain trace has no members */
	char *plain = dupstr(tu_path("plain.json"));
	tu_write_file(plain, s.m[5].data, s.m[5].len);
	snprintf(arg, sizeof arg, "%s//rank2.json", plain);
	assert_fails_naming(arg, plain, "rank2.json");
	unlink(plain);
	free(plain);
	/* no such archive */
	snprintf(arg, sizeof arg, "%s//rank2.json", tu_path("absent.tar"));
	assert_fails_naming(arg, "absent.tar", NULL);
	mset_free(&s);
}

/* An archive of several traces opened without a member: the first trace's
 * events, then an error that says to name one. */
static void check_several(tk_reader *r, const char *name, const listing *l)
{
	tu_events ev = {0};
	int rc = tu_read_all(r, &ev);
	if (rc >= 0)
		fail_msg("%s: read without an error (%zu events)", name, ev.n);
	assert_true(same_events(&ev, &l->want[0]->ev, 1, name));
	const char *msg = tk_reader_error(r);
	assert_true(tu_contains(msg, "more than one trace"));
	assert_true(tu_contains(msg, name));
	assert_true(tu_contains(msg, "//MEMBER"));
	tu_events_free(&ev);
}

static void test_several_traces_without_member(void **state)
{
	(void)state;
	mset s;
	mset_full(&s, 0);
	const char *fmts[] = {"tar", "tar.gz", "stored.zip", "deflated.zip", "7z", "newc.cpio"};
	for (size_t f = 0; f < 6; f++) {
		char *path = written(format_named(fmts[f]), s.m, s.n, "several.%s", fmts[f]);
		if (!path)
			continue;
		listing l;
		list_archive(path, &s, &l);
		tk_reader *r = NULL;
		int rc = tk_reader_open_path(&r, path, NULL);
		if (rc)
			fail_msg("%s: %s", path, tk_reader_error(r));
		assert_string_equal(tk_reader_name(r), l.names[0]);
		check_several(r, path, &l);
		tk_reader_free(r);
		listing_free(&l);
		unlink(path);
		free(path);
	}
	mset_free(&s);
}

/* One trace among other files: read through the path, from memory and
 * one byte per read from a socket. A 7z archive is read through the
 * directory at its end, which a socket cannot reach: there, a clean error
 * that does not call the archive damaged. The failures of every format
 * are reported together. */
static void test_one_trace_archive(void **state)
{
	(void)state;
	deferred_reset();
	mset s;
	mset_full(&s, 0);
	member one[5];
	one[0] = s.m[1]; /* notes.txt */
	one[1] = s.m[2]; /* run/sub/ */
	one[2] = s.m[3]; /* run/rank1.json.gz */
	one[3] = s.m[4]; /* config.yaml */
	one[4] = s.m[9]; /* empty/ */
	mset os = {one, 5};
	for (size_t f = 0; f < N_FORMATS; f++) {
		char want[4096];
		char *path = written(&formats[f], one, 5, "one.%s", formats[f].suffix);
		if (!path)
			continue;
		const char *name = strrchr(path, '/') + 1;
		listing l;
		list_archive(path, &os, &l);
		assert_int_equal(l.n, 1);
		tk_reader *r = NULL;
		int rc = tk_reader_open_path(&r, path, NULL);
		if (rc)
			fail_msg("%s: %s", path, tk_reader_error(r));
		assert_reads_as(r, &s.m[3], l.names[0]);
		tk_reader_free(r);

		size_t n;
		char *bytes = tu_read_file(path, &n);
		snprintf(want, sizeof want, "mem.%s", formats[f].suffix);
		rc = tk_reader_open_memory(&r, bytes, n, want, NULL);
		tu_events ev = {0};
		if (!rc)
			rc = tu_read_all(r, &ev);
		snprintf(want + strlen(want), sizeof want - strlen(want), "//%s", l.names[0] + strlen(path) + 2);
		if (rc != TK_EOF) {
			defer_fail("%s from memory: rc %d: %s", name, rc, tk_reader_error(r));
		} else {
			assert_true(same_events(&ev, &s.m[3].ev, 1, want));
			assert_same_meta(r, s.m[3].ref, want);
			assert_string_equal(tk_reader_name(r), want);
		}
		tu_events_free(&ev);
		tk_reader_free(r);

		int seven = strstr(name, "7z") != NULL;
		rc = tu_read_trickled(bytes, n, "trickled", NULL, &ev, &r);
		if (seven && rc < 0) {
			const char *msg = tk_reader_error(r);
			assert_true(tu_contains(msg, "trickled"));
			if (strstr(msg, "damaged")) {
				defer_fail("%s from a socket: an intact archive called damaged: %s", name, msg);
			}
		} else {
			if (rc != TK_EOF)
				fail_msg("%s one byte per read: rc %d: %s", name, rc, tk_reader_error(r));
			assert_true(same_events(&ev, &s.m[3].ev, 1, name));
			assert_same_meta(r, s.m[3].ref, name);
		}
		tu_events_free(&ev);
		tk_reader_free(r);
		free(bytes);
		listing_free(&l);
		unlink(path);
		free(path);
	}
	mset_free(&s);
	deferred_check("one-trace archives");
}

static void test_no_trace(void **state)
{
	(void)state;
	mset s;
	mset_full(&s, 0);
	member none[4] = {s.m[1], s.m[2], s.m[4], s.m[8]}; /* notes, run/sub/, config.yaml, .json.bak */
	for (int empty = 0; empty < 2; empty++) {
		for (size_t f = 0; f < N_FORMATS; f++) {
			/* an empty tar is zeros only: nothing says it is an archive */
			if (empty && !strstr(formats[f].suffix, "zip") && !strstr(formats[f].suffix, "7z"))
				continue;
			char *path = written(&formats[f], none, empty ? 0 : 4, "%s.%s", empty ? "empty" : "none", formats[f].suffix);
			if (!path)
				continue;
			assert_fails_naming(path, path, "no trace");
			tk_inputs *in = NULL;
			if (tk_inputs_open(&in, path, NULL))
				fail_msg("%s: %s", path, tk_inputs_error(in));
			const char *n;
			tk_reader *r;
			int rc = tk_inputs_next(in, &r, &n);
			if (rc != TK_EOF)
				fail_msg("%s: rc %d (%s), want TK_EOF: no trace in it", path, rc,
				         rc ? tk_inputs_error(in) : n);
			assert_null(r);
			tk_inputs_free(in);
			unlink(path);
			free(path);
		}
	}
	mset_free(&s);
}

/* ---- a member that is not a good trace ---- */

/* msg with every "@REF@" replaced by name. */
static char *renamed(const char *msg, const char *name)
{
	size_t cap = strlen(msg) * 2 + strlen(name) * 8 + 1, k = 0;
	char *out = malloc(cap);
	assert_non_null(out);
	for (const char *p = msg; *p;) {
		const char *q = strstr(p, "@REF@");
		size_t n = q ? (size_t)(q - p) : strlen(p);
		assert_true(k + n + strlen(name) < cap);
		memcpy(out + k, p, n);
		k += n;
		p += n;
		if (q) {
			memcpy(out + k, name, strlen(name));
			k += strlen(name);
			p += 5;
		}
	}
	out[k] = 0;
	return out;
}

static const char bad_text[] =
    "{\"traceEvents\": [\n"
    "  {\"ph\": \"X\", \"name\": \"a\", \"ts\": 1, \"dur\": 2, \"pid\": 1, \"tid\": 1},\n"
    "  {\"ph\": \"X\", \"name\": \"b\", \"ts\": 2 \"dur\": 3}\n"
    "]}\n";

/* Each member read from the archive gives what its bytes give as a plain
 * trace: the same events, the same code, the same message under its
 * ARCHIVE//MEMBER name. */
static void check_like_plain(const char *path, const member *ms, size_t n, const tk_reader_opts *o)
{
	tk_inputs *in = NULL;
	assert_int_equal(tk_inputs_open(&in, path, o), TK_OK);
	const char *name;
	tk_reader *r;
	size_t i = 0;
	int rc;
	while ((rc = tk_inputs_next(in, &r, &name)) != TK_EOF) {
		/* a member that fails as it opens comes with its reader, and
		 * the tk_inputs says the same */
		if (rc != TK_OK && !r)
			fail_msg("%s: rc %d: %s", path, rc, tk_inputs_error(in));
		if (rc != TK_OK)
			assert_string_equal(tk_inputs_error(in), tk_reader_error(r));
		else /* a member before that failed is not this one's error */
			assert_string_equal(tk_inputs_error(in), "");
		while (i < n && !ms[i].trace)
			i++;
		assert_true(i < n);
		const member *m = &ms[i++];
		char want[4096];
		snprintf(want, sizeof want, "%s//%s", path, m->name);
		assert_string_equal(name, want);
		tk_reader *ref = NULL;
		tu_events ev = {0}, rev = {0};
		int rrc = tk_reader_open_memory(&ref, m->data, m->len, "@REF@", o);
		if (!rrc)
			rrc = tu_read_all(ref, &rev);
		int got = rc == TK_OK ? tu_read_all(r, &ev) : rc;
		if (got != rrc)
			fail_msg("%s: rc %d, the plain read gave %d", name, got, rrc);
		assert_true(same_events(&ev, &rev, 1, name));
		char *msg = renamed(tk_reader_error(ref), name);
		assert_string_equal(tk_reader_error(r), msg);
		free(msg);
		for (size_t w = 0; tk_reader_warning(ref, w); w++) {
			msg = renamed(tk_reader_warning(ref, w), name);
			assert_non_null(tk_reader_warning(r, w));
			assert_string_equal(tk_reader_warning(r, w), msg);
			free(msg);
		}
		if (rrc < 0 || tk_reader_warning(ref, 0))
			assert_true(tu_contains(tk_reader_error(r), want));
		tu_events_free(&ev);
		tu_events_free(&rev);
		tk_reader_free(ref);
		tk_reader_free(r);
	}
	assert_int_equal(rc, TK_EOF);
	tk_inputs_free(in);
}

static void test_bad_members(void **state)
{
	(void)state;
	member ms[8];
	size_t n, zn, tn;
	char *a = gen_trace(6, 20, &n);
	member_data(&ms[0], "good/a.json", 1, a, n);
	member_data(&ms[1], "bad/rank0.json", 1, dupstr(bad_text), strlen(bad_text));
	unsigned char *zbad = tu_gzip(bad_text, strlen(bad_text), &zn);
	member_data(&ms[2], "bad/rank1.json.gz", 1, zbad, zn);
	char *t = gen_trace(8, 60, &tn);
	member_data(&ms[3], "cut/rank2.json", 1, t, tn * 3 / 5); /* a trace cut off: a warning */
	member_data(&ms[4], "notes.txt", 0, dupstr("{ not json"), 10);
	member_data(&ms[5], "words.json", 1, dupstr("plain words"), 11); /* fails as it opens, a good one after */
	char *b = gen_trace(7, 20, &n);
	member_data(&ms[6], "good/b.json", 1, b, n);
	member_data(&ms[7], "empty.json", 1, dupstr(""), 0);
	const char *fmts[] = {"tar", "tar.gz", "stored.zip", "deflated.zip", "7z", "newc.cpio"};
	for (size_t f = 0; f < 6; f++) {
		char arg[4096];
		char *path = written(format_named(fmts[f]), ms, 8, "bad.%s", fmts[f]);
		if (!path)
			continue;
		check_like_plain(path, ms, 8, NULL);
		tk_reader_opts strict = {.strict = 1};
		check_like_plain(path, ms, 8, &strict);
		/* where the JSON goes wrong: line 3, at "dur" */
		unsigned long line, col;
		tu_linecol(bad_text, (size_t)(strstr(bad_text, "2 \"dur\"") + 2 - bad_text), &line, &col);
		char where[4200];
		snprintf(where, sizeof where, "%s//bad/rank0.json:%lu:%lu:", path, line, col);
		snprintf(arg, sizeof arg, "%s//bad/rank0.json", path);
		assert_fails_naming(arg, where, "byte ");
		snprintf(where, sizeof where, "%s//bad/rank1.json.gz:%lu:%lu:", path, line, col);
		snprintf(arg, sizeof arg, "%s//bad/rank1.json.gz", path);
		assert_fails_naming(arg, where, "byte ");
		unlink(path);
		free(path);
	}
	for (size_t i = 0; i < 8; i++)
		free(ms[i].data);
}

/* An archive held in a member is not opened: an error naming the member,
 * and the members after it are still read. */
static void test_archive_in_archive(void **state)
{
	(void)state;
	mset s;
	mset_full(&s, 0);
	member one[2] = {s.m[1], s.m[0]};
	const char *inner = tu_path("inner.zip");
	assert_int_equal(write_archive(format_named("deflated.zip"), one, 2, inner), 0);
	size_t zn, gn;
	unsigned char *zip = (unsigned char *)tu_read_file(inner, &zn);
	assert_int_equal(write_archive(format_named("tar"), one, 2, tu_path("inner.tar")), 0);
	char *tar = tu_read_file(tu_path("inner.tar"), &gn);
	unsigned char *tgz = tu_gzip(tar, gn, &gn);
	free(tar);
	member ms[3];
	member_data(&ms[0], "inner.json", 1, zip, zn);
	member_data(&ms[1], "inner.json.gz", 1, tgz, gn);
	ms[2] = s.m[0];
	const char *fmts[] = {"tar", "tar.gz", "deflated.zip"};
	for (size_t f = 0; f < 3; f++) {
		char name[64];
		snprintf(name, sizeof name, "outer.%s", fmts[f]);
		char *path = dupstr(tu_path(name));
		assert_int_equal(write_archive(format_named(fmts[f]), ms, 3, path), 0);
		tk_inputs *in = NULL;
		assert_int_equal(tk_inputs_open(&in, path, NULL), TK_OK);
		const char *n;
		tk_reader *r;
		for (size_t i = 0; i < 2; i++) {
			char want[4096];
			snprintf(want, sizeof want, "%s//%s", path, ms[i].name);
			int rc = tk_inputs_next(in, &r, &n);
			if (rc == TK_OK) {
				tu_events ev = {0};
				rc = tu_read_all(r, &ev);
				tu_events_free(&ev);
			}
			if (rc >= 0)
				fail_msg("%s: an archive in a member read as a trace", want);
			assert_true(tu_contains(r ? tk_reader_error(r) : tk_inputs_error(in), want));
			tk_reader_free(r);
		}
		char want[4096];
		snprintf(want, sizeof want, "%s//%s", path, ms[2].name);
		assert_int_equal(tk_inputs_next(in, &r, &n), TK_OK);
		assert_reads_as(r, &ms[2], want);
		tk_reader_free(r);
		assert_int_equal(tk_inputs_next(in, &r, &n), TK_EOF);
		tk_inputs_free(in);
		unlink(path);
		free(path);
	}
	free(zip);
	free(tgz);
	mset_free(&s);
}

/* A plain trace stands for itself. */
static void test_plain_inputs(void **state)
{
	(void)state;
	mset s;
	mset_full(&s, 0);
	const size_t which[] = {0, 3, 6}; /* .json, .json.gz, .tkb */
	const char *names[] = {"p.json", "p.json.gz", "p.tkb"};
	for (size_t i = 0; i < 3; i++) {
		char *path = dupstr(tu_path(names[i]));
		tu_write_file(path, s.m[which[i]].data, s.m[which[i]].len);
		tk_inputs *in = NULL;
		assert_int_equal(tk_inputs_open(&in, path, NULL), TK_OK);
		const char *n;
		tk_reader *r;
		assert_int_equal(tk_inputs_next(in, &r, &n), TK_OK);
		assert_string_equal(n, path);
		assert_reads_as(r, &s.m[which[i]], path);
		tk_reader_free(r);
		assert_int_equal(tk_inputs_next(in, &r, &n), TK_EOF);
		tk_inputs_free(in);
		unlink(path);
		free(path);
	}
	tk_inputs *in = NULL;
	assert_true(tk_inputs_open(&in, tu_tmpdir(), NULL) < 0);
	assert_true(tu_contains(tk_inputs_error(in), tu_tmpdir()));
	tk_inputs_free(in);
	/* a file that is not a trace: the tk_inputs names it too, not only
	 * its reader; the next call ends the listing */
	char *text = dupstr(tu_path("notes.json"));
	tu_write_file(text, "plain words", 11);
	assert_int_equal(tk_inputs_open(&in, text, NULL), TK_OK);
	const char *n;
	tk_reader *r = NULL;
	assert_true(tk_inputs_next(in, &r, &n) < 0);
	if (!tu_contains(tk_inputs_error(in), text))
		fail_msg("message: '%s'", tk_inputs_error(in));
	assert_string_equal(tk_inputs_error(in), tk_reader_error(r));
	tk_reader_free(r);
	assert_int_equal(tk_inputs_next(in, &r, &n), TK_EOF);
	assert_null(r);
	tk_inputs_free(in);
	unlink(text);
	free(text);
	mset_free(&s);
}

/* ---- damaged archives ---- */

/* The trace member a name "PATH//MEMBER" stands for, or NULL. */
static const member *member_named(const mset *s, const char *path, const char *name)
{
	size_t k = strlen(path);
	if (strncmp(name, path, k) != 0 || strncmp(name + k, "//", 2) != 0)
		return NULL;
	for (size_t i = 0; i < s->n; i++)
		if (s->m[i].trace && strcmp(strip_dot(s->m[i].name), strip_dot(name + k + 2)) == 0)
			return &s->m[i];
	return NULL;
}

/* An error about a damaged archive: it names the archive, and a byte
 * offset it gives lies within the file. */
static void check_damage_msg(const char *msg, const char *path, size_t len, const char *what)
{
	if (!msg || !*msg)
		fail_msg("%s: an error without a message", what);
	if (!strstr(msg, path))
		fail_msg("%s: the message does not name %s: %s", what, path, msg);
	const char *at = strstr(msg, "damaged archive at byte ");
	if (at) {
		unsigned long long b = strtoull(at + 24, NULL, 10);
		if (b > len)
			defer_fail("%s: byte %llu is past the end (%zu bytes): %s", what, b, len, msg);
	}
}

typedef struct clean_read {
	const member *m;
	tu_events ev;
} clean_read;

/* Reads every trace of the damaged archive at path (len bytes) and
 * checks the outcome. cut: the file is a prefix of a good archive, so
 * every member that comes back is one written, with a prefix of its
 * events, all of them when it read without an error. Otherwise (bytes
 * changed) and checked: when nothing at all failed, every member read
 * is one written, whole. Returns the number of errors. */
static int check_damaged(const char *path, size_t len, const mset *s, int cut, int checked,
                         const char *what)
{
	tk_inputs *in = NULL;
	int errors = 0;
	if (tk_inputs_open(&in, path, NULL)) {
		check_damage_msg(tk_inputs_error(in), path, len, what);
		tk_inputs_free(in);
		return 1;
	}
	clean_read clean[32];
	size_t n_clean = 0, n_names = 0;
	const char *name;
	tk_reader *r;
	int rc;
	while ((rc = tk_inputs_next(in, &r, &name)) != TK_EOF) {
		if (rc != TK_OK) {
			errors++;
			check_damage_msg(r ? tk_reader_error(r) : tk_inputs_error(in), path, len, what);
			tk_reader_free(r);
			if (!r)
				break;
			continue;
		}
		if (++n_names > 64)
			fail_msg("%s: more than 64 traces listed", what);
		const member *m = member_named(s, path, name);
		tu_events ev = {0};
		int rrc = tu_read_all(r, &ev);
		if (rrc < 0) {
			errors++;
			check_damage_msg(tk_reader_error(r), path, len, what);
		}
		if (cut) {
			if (!m && rrc >= 0)
				fail_msg("%s: %s read cleanly, but no such trace was written", what, name);
			if (m && !same_events(&ev, &m->ev, rrc >= 0, name))
				fail_msg("%s: %s: not the events written (rc %d, %s)", what, name, rrc,
				         tk_reader_error(r));
			tu_events_free(&ev);
		} else if (rrc >= 0 && n_clean < 32) {
			clean[n_clean].m = m;
			clean[n_clean++].ev = ev;
		} else {
			tu_events_free(&ev);
		}
		tk_reader_free(r);
	}
	tk_inputs_free(in);
	for (size_t i = 0; i < n_clean; i++) {
		if (checked && !errors) {
			int same = clean[i].m && same_events(&clean[i].ev, &clean[i].m->ev, 1, what);
			/* a changed name: the data is still one member's */
			for (size_t j = 0; !clean[i].m && !same && j < s->n; j++)
				same = s->m[j].trace && clean[i].ev.n == s->m[j].ev.n &&
				       same_events(&clean[i].ev, &s->m[j].ev, 1, what);
			if (!same)
				fail_msg("%s: trace %zu read without any error, but its events are not the "
				         "ones written",
				         what, i);
		}
		tu_events_free(&clean[i].ev);
	}
	return errors;
}

static void test_cut_archives(void **state)
{
	(void)state;
	deferred_reset();
	mset s;
	mset_full(&s, 0);
	const char *cutp = tu_path("cut.archive");
	for (size_t f = 0; f < N_FORMATS; f++) {
		char *path = written(&formats[f], s.m, s.n, "whole.%s", formats[f].suffix);
		if (!path)
			continue;
		const char *name = strrchr(path, '/') + 1;
		size_t len;
		char *bytes = tu_read_file(path, &len);
		size_t step = len / 200 + 1, tried = 0, failed = 0;
		for (size_t cut = 0; cut < len; cut++) {
			/* near the start, evenly through the file, and at every 512-byte
			 * block edge, where tar headers start */
			if (!(cut < 1100 && cut % 37 == 0) && cut % step && cut % 512 > 1)
				continue;
			tu_write_file(cutp, bytes, cut);
			char what[128];
			snprintf(what, sizeof what, "%s cut at %zu of %zu", name, cut, len);
			failed += check_damaged(cutp, cut, &s, 1, formats[f].checked, what) > 0;
			tried++;
		}
		/* most cuts leave a damaged archive, which must say so */
		if (failed * 2 < tried)
			fail_msg("%s: only %zu of %zu cuts failed", name, failed, tried);
		free(bytes);
		unlink(path);
		free(path);
	}
	unlink(cutp);
	mset_free(&s);
	deferred_check("cut archives");
}

static void test_flipped_bytes(void **state)
{
	(void)state;
	deferred_reset();
	mset s;
	mset_full(&s, 0);
	const char *flipp = tu_path("flipped.archive");
	static const unsigned char masks[] = {0x01, 0x80, 0xff, 0x20, 0x04};
	for (size_t f = 0; f < N_FORMATS; f++) {
		char *path = written(&formats[f], s.m, s.n, "whole.%s", formats[f].suffix);
		if (!path)
			continue;
		const char *name = strrchr(path, '/') + 1;
		size_t len;
		unsigned char *bytes = (unsigned char *)tu_read_file(path, &len);
		size_t step = len / 250 + 1, k = 0;
		for (size_t at = 0; at < len; at += (at < 600 ? 7 : step), k++) {
			unsigned char mask = masks[k % sizeof masks];
			bytes[at] ^= mask;
			tu_write_file(flipp, bytes, len);
			bytes[at] ^= mask;
			char what[128];
			snprintf(what, sizeof what, "%s with byte %zu of %zu ^ 0x%02x", name, at, len, mask);
			check_damaged(flipp, len, &s, 0, formats[f].checked, what);
		}
		free(bytes);
		unlink(path);
		free(path);
	}
	unlink(flipp);
	mset_free(&s);
	deferred_check("flipped bytes");
}

/* Damage inside a large member's data: the error names the archive, the
 * member and where the archive ended. */
static void test_damage_in_member(void **state)
{
	(void)state;
	deferred_reset();
	mset s;
	mset_full(&s, 1);
	member ms[3] = {s.m[1], s.m[10], s.m[3]}; /* notes.txt, run/big.json, run/rank1.json.gz */
	mset ss = {ms, 3};
	const char *fmts[] = {"tar", "tar.gz", "stored.zip", "deflated.zip", "tar.xz", "newc.cpio"};
	const char *dmg = tu_path("damaged.archive");
	for (size_t f = 0; f < 6; f++) {
		const afmt *af = format_named(fmts[f]);
		char *path = written(af, ms, 3, "big.%s", fmts[f]);
		if (!path)
			continue;
		const char *name = strrchr(path, '/') + 1;
		size_t len;
		unsigned char *bytes = (unsigned char *)tu_read_file(path, &len);
		/* cut in the middle: the big member is cut off */
		size_t cut = len / 2;
		tu_write_file(dmg, bytes, cut);
		tk_inputs *in = NULL;
		assert_int_equal(tk_inputs_open(&in, dmg, NULL), TK_OK);
		const char *n;
		tk_reader *r;
		char want[4096], what[128];
		snprintf(what, sizeof what, "%s cut at %zu of %zu", name, cut, len);
		/* the reader fails, when it opens (reading ahead) or later */
		tu_events ev = {0};
		int rc = tk_inputs_next(in, &r, &n);
		if (rc == TK_OK)
			rc = tu_read_all(r, &ev);
		else if (!r)
			fail_msg("%s: no reader on the member: %s", what, tk_inputs_error(in));
		snprintf(want, sizeof want, "%s//run/big.json", dmg);
		assert_string_equal(n, want);
		if (rc >= 0)
			fail_msg("%s: read without an error (%zu of %zu events)", what, ev.n, ms[1].ev.n);
		assert_true(same_events(&ev, &ms[1].ev, 0, what));
		const char *msg = tk_reader_error(r);
		check_damage_msg(msg, dmg, cut, what);
		snprintf(want, sizeof want, "%s//run/big.json: damaged archive at byte %zu", dmg, cut);
		if (!strstr(msg, want))
			fail_msg("%s: want \"%s\" in \"%s\"", what, want, msg);
		tu_events_free(&ev);
		tk_reader_free(r);
		/* nothing follows a damaged archive */
		rc = tk_inputs_next(in, &r, &n);
		assert_true(rc < 0);
		assert_null(r);
		assert_true(tu_contains(tk_inputs_error(in), dmg));
		tk_inputs_free(in);

		/* changed bytes inside the big member's data: caught by a checksum */
		for (size_t i = 0; i < 24 && af->checked; i++) {
			size_t at = len / 4 + i * (len / 2 / 24);
			unsigned char mask = (unsigned char)(1u << (i % 8));
			bytes[at] ^= mask;
			tu_write_file(dmg, bytes, len);
			bytes[at] ^= mask;
			snprintf(what, sizeof what, "%s with byte %zu of %zu ^ 0x%02x", name, at, len, mask);
			if (check_damaged(dmg, len, &ss, 0, 1, what) == 0)
				continue; /* read cleanly: the same events (checked there) */
			if (strstr(fmts[f], "zip")) {
				/* a member's checksum: the error comes with that member */
				assert_int_equal(tk_inputs_open(&in, dmg, NULL), TK_OK);
				rc = tk_inputs_next(in, &r, &n);
				if (rc == TK_OK)
					rc = tu_read_all(r, &ev);
				assert_non_null(r);
				if (rc >= 0)
					fail_msg("%s: run/big.json read without an error", what);
				/* the checksum at its end, or its JSON before that */
				assert_true(tu_contains(tk_reader_error(r), "run/big.json"));
				tu_events_free(&ev);
				tk_reader_free(r);
				tk_inputs_free(in);
			}
		}
		free(bytes);
		unlink(path);
		free(path);
	}
	unlink(dmg);
	mset_free(&s);
	deferred_check("damage in a member");
}

/* Where the damage lies after a member that was read whole (in the next
 * member's header): that member reads cleanly, and the error does not put
 * the damage in it. */
static void check_after_member(const char *path, size_t len, const member *a, const char *what)
{
	tk_inputs *in = NULL;
	assert_int_equal(tk_inputs_open(&in, path, NULL), TK_OK);
	const char *n;
	tk_reader *r;
	char want[4096];
	snprintf(want, sizeof want, "%s//%s", path, a->name);
	int rc = tk_inputs_next(in, &r, &n);
	if (rc != TK_OK)
		fail_msg("%s: the first member: %s", what, r ? tk_reader_error(r) : tk_inputs_error(in));
	assert_string_equal(n, want);
	assert_reads_as(r, a, want);
	tk_reader_free(r);
	rc = tk_inputs_next(in, &r, &n);
	const char *msg = r ? tk_reader_error(r) : tk_inputs_error(in);
	if (rc == TK_OK) {
		tu_events ev = {0};
		rc = tu_read_all(r, &ev);
		tu_events_free(&ev);
		msg = tk_reader_error(r);
	}
	if (rc >= 0) {
		defer_fail("%s: no error: the damaged member %s (rc %d)", what,
		           rc == TK_OK ? "read cleanly" : "was passed over", rc);
		tk_reader_free(r);
		tk_inputs_free(in);
		return;
	}
	check_damage_msg(msg, path, len, what);
	snprintf(want, sizeof want, "//%s: damaged", a->name);
	if (strstr(msg, want))
		defer_fail("%s: the damage is put in %s, which read whole: %s", what, a->name, msg);
	tk_reader_free(r);
	tk_inputs_free(in);
}

static void test_damage_between_members(void **state)
{
	(void)state;
	deferred_reset();
	mset s;
	mset_full(&s, 0);
	size_t n;
	char *b = gen_trace(9, 30, &n);
	member ms[2] = {s.m[0], {0}}; /* run/example_kineto.json, run/b.json */
	member_data(&ms[1], "run/b.json", 1, b, n);
	member_ref(&ms[1]);
	const char *path = tu_path("two.tar"), *dmg = tu_path("two-damaged.tar");
	assert_int_equal(write_archive(format_named("tar"), ms, 2, path), 0);
	size_t len;
	char *bytes = tu_read_file(path, &len);
	/* the second member's header: the 512-byte block that starts with its name */
	size_t hdr = 512;
	while (hdr < len && strcmp(bytes + hdr, "run/b.json") != 0)
		hdr += 512;
	assert_true(hdr < len);
	char what[128];
	tu_write_file(dmg, bytes, hdr + 100);
	snprintf(what, sizeof what, "two.tar cut at %zu, in the header of run/b.json", hdr + 100);
	check_after_member(dmg, hdr + 100, &ms[0], what);
	bytes[hdr + 148] ^= 0x04; /* its header checksum */
	tu_write_file(dmg, bytes, len);
	snprintf(what, sizeof what, "two.tar with the header checksum of run/b.json changed");
	check_after_member(dmg, len, &ms[0], what);
	free(bytes);

	/* zip: the central directory's offset of the second member's local header */
	path = tu_path("two.zip");
	assert_int_equal(write_archive(format_named("deflated.zip"), ms, 2, path), 0);
	bytes = tu_read_file(path, &len);
	size_t cd = len;
	for (size_t i = len - 4; i-- > 0;)
		if (memcmp(bytes + i, "PK\x01\x02", 4) == 0) {
			cd = i;
			break;
		}
	assert_true(cd < len && memcmp(bytes + cd + 46, "run/b.json", 10) == 0);
	bytes[cd + 42 + 2] ^= 0xff;
	tu_write_file(dmg, bytes, len);
	snprintf(what, sizeof what, "two.zip with the offset of run/b.json changed");
	check_after_member(dmg, len, &ms[0], what);
	free(bytes);
	free(b);
	tu_events_free(&ms[1].ev);
	tk_reader_free(ms[1].ref);
	mset_free(&s);
	deferred_check("damage between members");
}

/* A one-trace archive from memory, cut anywhere: the same rules, without
 * a file to seek in. */
static void test_cut_in_memory(void **state)
{
	(void)state;
	deferred_reset();
	mset s;
	mset_full(&s, 0);
	member one[3] = {s.m[1], s.m[3], s.m[4]}; /* notes.txt, run/rank1.json.gz, config.yaml */
	const char *fmts[] = {"tar", "tar.gz", "stored.zip", "deflated.zip", "tar.xz"};
	for (size_t f = 0; f < 5; f++) {
		const char *path = tu_path("mem.archive");
		if (write_archive(format_named(fmts[f]), one, 3, path))
			continue;
		size_t len;
		char *bytes = tu_read_file(path, &len);
		unlink(path);
		for (size_t cut = 0; cut <= len; cut += (cut % 5) + 3) {
			char what[128];
			snprintf(what, sizeof what, "%s in memory cut at %zu of %zu", fmts[f], cut, len);
			tk_reader *r = NULL;
			tu_events ev = {0};
			int rc = tk_reader_open_memory(&r, bytes, cut, "mem.archive", NULL);
			if (!rc)
				rc = tu_read_all(r, &ev);
			if (rc < 0) {
				check_damage_msg(tk_reader_error(r), "mem.archive", cut, what);
				if (!same_events(&ev, &s.m[3].ev, 0, what))
					fail_msg("%s: events that were not written", what);
			} else if (!same_events(&ev, &s.m[3].ev, 1, what)) {
				fail_msg("%s: read without an error, but not all the events", what);
			}
			tu_events_free(&ev);
			tk_reader_free(r);
		}
		free(bytes);
	}
	mset_free(&s);
	deferred_check("cut in memory");
}

/* Text that has "ustar" where a tar header has its magic is a trace, not
 * a tar: the header's checksum decides. */
static void test_ustar_in_text(void **state)
{
	(void)state;
	char text[1024];
	int n = snprintf(text, sizeof text, "{\"traceEvents\":[{\"ph\":\"X\",\"ts\":1,\"dur\":1,\"pid\":1,"
	                 "\"tid\":1,\"name\":\"%0300d\"}]}", 0);
	memcpy(text + 257, "ustar", 5); /* inside the name */
	tk_reader *r = NULL;
	assert_int_equal(tk_reader_open_memory(&r, text, (size_t)n, "ustar.json", NULL), TK_OK);
	tu_events ev = {0};
	assert_int_equal(tu_read_all(r, &ev), TK_EOF);
	assert_int_equal(ev.n, 1);
	assert_string_equal(tk_reader_format(r), "json");
	tu_events_free(&ev);
	tk_reader_free(r);
}

/* A tar header with a base-256 size field (GNU's, for members over 8 GiB). */
static void tar_header_b256(unsigned char *h, const char *name, uint64_t size)
{
	memset(h, 0, 512);
	memcpy(h, name, strlen(name));
	memcpy(h + 100, "0000644", 7);
	memcpy(h + 108, "0000000", 7);
	memcpy(h + 116, "0000000", 7);
	h[124] = 0x80;
	for (int i = 0; i < 8; i++)
		h[128 + i] = (unsigned char)(size >> (56 - 8 * i));
	memcpy(h + 136, "00000000000", 11);
	h[156] = '0';
	memcpy(h + 257, "ustar\0" "00", 8);
	memset(h + 148, ' ', 8);
	unsigned sum = 0;
	for (int i = 0; i < 512; i++)
		sum += h[i];
	snprintf((char *)h + 148, 8, "%06o", sum);
}

/* A member that is no trace, declaring a size near 2^63 (skipped by a seek
 * past the archive's end): an error naming the archive, computed without
 * overflow (the sanitized build stops at one). */
static void test_huge_declared_member(void **state)
{
	(void)state;
	static const uint64_t sizes[] = {((uint64_t)1 << 63) - 512, ((uint64_t)1 << 62), 1u << 20};
	for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
		unsigned char t[2048] = {0};
		tar_header_b256(t, "a.bin", sizes[i]);
		tk_reader *r = NULL;
		int rc = tk_reader_open_memory(&r, t, sizeof t, "huge.tar", NULL);
		if (rc == TK_OK || !tu_contains(tk_reader_error(r), "huge.tar"))
			fail_msg("a member of %llu bytes: rc %d (%s)", (unsigned long long)sizes[i], rc,
			         r ? tk_reader_error(r) : "");
		tk_reader_free(r);
	}
}

/* A tar handed over as an fd at an offset of a larger file (after other
 * bytes): the archive is what follows, read forward, not the whole file. */
static void test_archive_at_offset(void **state)
{
	(void)state;
	mset s;
	mset_full(&s, 0);
	member one[2] = {s.m[0], s.m[1]}; /* run/example_kineto.json, notes.txt */
	char *path = dupstr(tu_path("one.tar")), *off = dupstr(tu_path("offset.tar"));
	assert_int_equal(write_archive(format_named("tar"), one, 2, path), 0);
	size_t len;
	char *bytes = tu_read_file(path, &len);
	char *both = malloc(len + 100);
	assert_non_null(both);
	memset(both, 'x', 100);
	memcpy(both + 100, bytes, len);
	tu_write_file(off, both, len + 100);
	int fd = open(off, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(lseek(fd, 100, SEEK_SET), 100);
	tk_reader *r = NULL;
	assert_int_equal(tk_reader_open_fd(&r, fd, "offset.tar", NULL), TK_OK);
	tu_events ev = {0};
	int rc = tu_read_all(r, &ev);
	if (rc != TK_EOF)
		fail_msg("an archive at an offset: rc %d: %s", rc, tk_reader_error(r));
	assert_true(same_events(&ev, &s.m[0].ev, 0, "an archive at an offset"));
	tu_events_free(&ev);
	tk_reader_free(r);
	close(fd);
	/* a tar cut in its zero padding after the last member lost nothing; cut
	 * inside the next header, it did */
	size_t end = 0;
	for (size_t at = 0; at + 512 <= len && bytes[at]; at += 512 + (strtoull(bytes + at + 124, NULL, 8) + 511) / 512 * 512)
		end = at + 512 + (strtoull(bytes + at + 124, NULL, 8) + 511) / 512 * 512;
	const char *cutp = tu_path("cut.tar");
	for (int pad = 0; pad < 2; pad++) {
		/* pad: 300 bytes of the end-of-archive zeros; else a header's 300 bytes */
		char *c = malloc(end + 512);
		assert_non_null(c);
		memcpy(c, bytes, end);
		memset(c + end, 0, 512);
		if (!pad)
			memcpy(c + end, "run/next.json", 13);
		tu_write_file(cutp, c, end + 300);
		free(c);
		r = NULL;
		tu_events ev2 = {0};
		int rc2 = tk_reader_open_path(&r, cutp, NULL);
		if (!rc2)
			rc2 = tu_read_all(r, &ev2);
		if (pad && rc2 != TK_EOF)
			fail_msg("a tar cut in its padding: rc %d: %s", rc2, tk_reader_error(r));
		if (!pad && (rc2 >= 0 || !tu_contains(tk_reader_error(r), "cut off inside a member header")))
			fail_msg("a tar cut inside a header: rc %d: %s", rc2, tk_reader_error(r));
		tu_events_free(&ev2);
		tk_reader_free(r);
	}
	unlink(cutp);
	/* a listing names a member only when it is there */
	char arg[4096];
	const char *name;
	tk_inputs *in = NULL;
	snprintf(arg, sizeof arg, "%s//run/nope.json", path);
	assert_int_equal(tk_inputs_open(&in, arg, NULL), TK_OK);
	assert_true(tk_inputs_next(in, NULL, &name) < 0);
	assert_true(tu_contains(tk_inputs_error(in), "run/nope.json"));
	assert_int_equal(tk_inputs_next(in, NULL, &name), TK_EOF);
	tk_inputs_free(in);
	snprintf(arg, sizeof arg, "%s//run/example_kineto.json", path);
	assert_int_equal(tk_inputs_open(&in, arg, NULL), TK_OK);
	assert_int_equal(tk_inputs_next(in, NULL, &name), TK_OK);
	assert_string_equal(name, arg);
	tk_inputs_free(in);
	unlink(off);
	unlink(path);
	free(off);
	free(path);
	free(both);
	free(bytes);
	mset_free(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_every_member_every_format),
	    cmocka_unit_test(test_reader_after_moving_on),
	    cmocka_unit_test(test_member_selection),
	    cmocka_unit_test(test_missing_member),
	    cmocka_unit_test(test_several_traces_without_member),
	    cmocka_unit_test(test_one_trace_archive),
	    cmocka_unit_test(test_no_trace),
	    cmocka_unit_test(test_bad_members),
	    cmocka_unit_test(test_archive_in_archive),
	    cmocka_unit_test(test_plain_inputs),
	    cmocka_unit_test(test_cut_archives),
	    cmocka_unit_test(test_flipped_bytes),
	    cmocka_unit_test(test_damage_in_member),
	    cmocka_unit_test(test_damage_between_members),
	    cmocka_unit_test(test_cut_in_memory),
	    cmocka_unit_test(test_ustar_in_text),
	    cmocka_unit_test(test_archive_at_offset),
	    cmocka_unit_test(test_huge_declared_member),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	tu_cleanup();
	return rc;
}
