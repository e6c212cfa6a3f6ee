/* test_tkb.c: the .tkb format: round trips, files cut anywhere, damaged chunks, the collector API. */
#define _GNU_SOURCE
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
#include <pthread.h>
#include <zlib.h>
#include <zlib.h>

#include "tracekit/tkb.h"
#include "tracekit/tracekit.h"
#include "../libtrace/src/tkb_int.h"
#include "testutil.h"

#ifndef TK_REALTRACES_DIR
#define TK_REALTRACES_DIR "../shared/realtraces"
#endif

/* ---- helpers ---- */

static char tmpdir[256];

static const char *tpath(const char *name)
{
	static char p[512];
	if (!tmpdir[0]) {
		snprintf(tmpdir, sizeof tmpdir, "/tmp/test_tkb.XXXXXX");
		assert_non_null(mkdtemp(tmpdir));
	}
	snprintf(p, sizeof p, "%s/%s", tmpdir, name);
	return p;
}

static unsigned char *slurp(const char *path, size_t *n)
{
	FILE *f = fopen(path, "rb");
	assert_non_null(f);
	fseek(f, 0, SEEK_END);
	long len = ftell(f);
	fseek(f, 0, SEEK_SET);
	unsigned char *p = malloc((size_t)len + 1);
	assert_non_null(p);
	assert_int_equal(fread(p, 1, (size_t)len, f), (size_t)len);
	fclose(f);
	*n = (size_t)len;
	return p;
}

static tk_sv sv(const char *s)
{
	return (tk_sv){s, strlen(s)};
}

/* Owned events. */
typedef struct evlist {
	tk_event **ev;
	size_t n, cap;
} evlist;

static void ev_push(evlist *l, const tk_event *ev)
{
	if (l->n == l->cap) {
		l->cap = l->cap ? l->cap * 2 : 64;
		l->ev = realloc(l->ev, l->cap * sizeof *l->ev);
		assert_non_null(l->ev);
	}
	l->ev[l->n] = tk_event_dup(ev);
	assert_non_null(l->ev[l->n]);
	l->n++;
}

static void ev_free(evlist *l)
{
	for (size_t i = 0; i < l->n; i++)
		tk_event_free(l->ev[i]);
	free(l->ev);
	memset(l, 0, sizeof *l);
}

/* Reads everything; returns the last code. */
static int read_all(tk_reader *r, evlist *out)
{
	const tk_event *ev;
	int rc;
	while ((rc = tk_reader_next(r, &ev)) == TK_OK)
		ev_push(out, ev);
	return rc;
}

static int has_warning(tk_reader *r, const char *needle)
{
	for (size_t i = 0; tk_reader_warning(r, i); i++)
		if (strstr(tk_reader_warning(r, i), needle))
			return 1;
	return 0;
}

/* ---- a seeded generator of varied events ---- */

static uint64_t rng = 88172645463325252ull;
static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static const char *names[] = {"aten::mm", "cudaLaunchKernel", "void gemm<128>(float*)", "",
                              "ProfilerStep#1", "caf\xc3\xa9 \"quoted\""};
static const char *cats[] = {"cpu_op", "kernel", "cuda_runtime", "ac2g"};
static const char *strpool[] = {"\"float\"", "\"\"", "\"a\\\"b\\\\c\\n\"", "\"\\u00e9t\\u00e9\"",
                                "\"c10::BFloat16\""};
static const char *arrpool[] = {"[1,1,1]", "[[8,1024],[],[1024,1024]]", "[\"long int\",\"\"]",
                                "{\"a\":{\"b\":[true,null]}}"};
static const char *extras[] = {"\"s\":\"t\"", "\"bp\":\"e\"", "\"s\":\"g\",\"x\":[1,{\"y\":2}]"};
/* Args templates: key and value kind (i int, d decimal, s string, a array, l literal, r raw number). */
static const char *tmpl[][6] = {
    {"External id:i", "Record function id:i", "Ev Idx:i", NULL},
    {"correlation:i", "device:i", "grid:a", "blocks per SM:d", "stream:i", NULL},
    {"Input type:a", "name:s", "flag:l", NULL},
    {"bytes:i", "memory bandwidth (GB/s):d", "exp:r", "k\\u0001ey:s", NULL},
    {NULL},
};
#define N_TMPL 5

static void gen_value(char *d, size_t cap, char kind, uint64_t pick, int vary)
{
	static const char *lits[] = {"null", "true", "false"};
	static const char *decs[] = {"0.5", "-0.125", "15.270079512247216", "100.00", "-0.5", "0.0"};
	switch (kind) {
	case 'i':
		snprintf(d, cap, "%lld", vary ? (long long)(rnd() % 2000000) - 1000000 : (long long)pick);
		break;
	case 'd': snprintf(d, cap, "%s", decs[pick % 6]); break;
	case 's': snprintf(d, cap, "%s", strpool[pick % 5]); break;
	case 'a': snprintf(d, cap, "%s", arrpool[pick % 4]); break;
	case 'l': snprintf(d, cap, "%s", lits[pick % 3]); break;
	default: snprintf(d, cap, "%s", pick % 2 ? "1.5e-3" : "-0"); break;
	}
}

/* Compact args text for template t; `pick` chooses pooled values. */
static void gen_args(char *d, size_t cap, int t, uint64_t pick, int vary)
{
	size_t n = 0;
	n += (size_t)snprintf(d + n, cap - n, "{");
	for (int i = 0; tmpl[t][i]; i++) {
		const char *c = strrchr(tmpl[t][i], ':');
		char v[128];
		gen_value(v, sizeof v, c[1], pick + (uint64_t)i, vary);
		n += (size_t)snprintf(d + n, cap - n, "%s\"%.*s\":%s", i ? "," : "", (int)(c - tmpl[t][i]),
		                      tmpl[t][i], v);
	}
	snprintf(d + n, cap - n, "}");
}

/* Event i; for i < 60 every pooled string and template is used in turn. */
static void gen_event(tk_event *ev, char *args, size_t cap, uint64_t i, int64_t *ts)
{
	int warm = i < 60;
	uint64_t k = warm ? i : rnd();
	memset(ev, 0, sizeof *ev);
	static const char phs[] = "XifsMC";
	ev->has = TK_HAS_TS;
	if (k % 11 != 3) {
		ev->ph = phs[k % 6];
		ev->has |= TK_HAS_PH;
	}
	*ts += warm ? 1000 : (int64_t)(rnd() % 5000000) - 1000000;
	ev->ts = *ts;
	if (k % 3) {
		ev->has |= TK_HAS_DUR;
		ev->dur = (int64_t)(k % 977) * 1001;
	}
	if (k % 7 != 5) {
		ev->has |= TK_HAS_NAME;
		ev->name = sv(names[k % 6]);
	}
	if (k % 5 != 4) {
		ev->has |= TK_HAS_CAT;
		ev->cat = sv(cats[k % 4]);
	}
	ev->pid = k % 9 == 1 ? (tk_id){TK_ID_STR, 0, sv("Spans")} : (tk_id){TK_ID_INT, (int64_t)(k % 3) * 1000, {0}};
	ev->tid = k % 8 == 2 ? (tk_id){TK_ID_STR, 0, sv("stream 7")} : (tk_id){TK_ID_INT, (int64_t)(k % 4), {0}};
	if (k % 4 == 1)
		ev->id = (tk_id){TK_ID_INT, (int64_t)(i * 3 + 100000), {0}};
	else if (k % 13 == 2)
		ev->id = (tk_id){TK_ID_STR, 0, sv("0x7f")};
	int t = (int)(k % (N_TMPL + 1));
	if (t < N_TMPL) {
		gen_args(args, cap, t, warm ? i / N_TMPL : rnd(), !warm);
		ev->args = sv(args);
	}
	if (k % 6 == 1 || k % 6 == 2 || (warm && i == 59))
		ev->extra = sv(extras[warm && i == 59 ? 2 : k % 6 == 1 ? 0 : 1]);
}

/* ---- writing test files with the collector API ---- */

typedef struct tfile {
	unsigned char *p;
	size_t n;
	size_t bounds[512]; /* end offset of the header, then of each chunk */
	size_t n_bounds;
	size_t ev_end[512]; /* events in the file up to each bound */
	evlist evs;         /* what was written */
} tfile;

/* Walks the chunk layout as docs/tkb-format.md describes it. */
static void walk(tfile *f)
{
	uint32_t blen = (uint32_t)f->p[12] | (uint32_t)f->p[13] << 8 | (uint32_t)f->p[14] << 16 |
	                (uint32_t)f->p[15] << 24;
	size_t at = 16 + blen + 4, evs = 0;
	f->n_bounds = 0;
	f->bounds[f->n_bounds] = at;
	f->ev_end[f->n_bounds++] = 0;
	while (at < f->n) {
		const unsigned char *h = f->p + at;
		assert_memory_equal(h, "\xd7TKc", 4);
		uint32_t len = (uint32_t)h[8] | (uint32_t)h[9] << 8 | (uint32_t)h[10] << 16 | (uint32_t)h[11] << 24;
		uint32_t cnt = (uint32_t)h[16] | (uint32_t)h[17] << 8 | (uint32_t)h[18] << 16 | (uint32_t)h[19] << 24;
		if (h[4] == 2)
			evs += cnt;
		at += 28 + len;
		assert_true(f->n_bounds < 512);
		f->bounds[f->n_bounds] = at;
		f->ev_end[f->n_bounds++] = evs;
	}
	assert_int_equal(at, f->n);
}

/* n events in buffers of `per` events: one events chunk per buffer. */
static void make_file(tfile *f, size_t n, size_t per, int compress, void (*tweak)(tk_event *, size_t))
{
	memset(f, 0, sizeof *f);
	rng = 88172645463325252ull;
	tk_tkb_anchor a = {111, 1700000000000000000ll, 5000};
	tk_tkb_header h = {"test_tkb", "node-1", 4242, 3, 8, &a};
	tk_tkb_opts o = {compress, 0, 1 << 30};
	tk_tkb_writer *w;
	const char *path = tpath("gen.tkb");
	assert_int_equal(tk_tkb_writer_open(&w, path, &h, &o), TK_OK);
	assert_int_equal(tk_tkb_writer_add_meta(w, sv("schemaVersion"), sv("1"), 0), TK_OK);
	tk_tkb_buf *b = tk_tkb_buf_new(per, 1 << 20);
	int64_t ts = 1000000;
	for (size_t i = 0; i < n; i++) {
		tk_event ev;
		char args[1024];
		gen_event(&ev, args, sizeof args, i, &ts);
		if (tweak)
			tweak(&ev, i);
		assert_int_equal(tk_tkb_buf_append(b, &ev), TK_OK);
		ev_push(&f->evs, &ev);
		if (tk_tkb_buf_count(b) == per)
			assert_int_equal(tk_tkb_writer_submit(w, b), TK_OK);
	}
	assert_int_equal(tk_tkb_writer_submit(w, b), TK_OK);
	assert_int_equal(tk_tkb_writer_add_meta(w, sv("traceName"), sv("\"t\""), 1), TK_OK);
	tk_tkb_anchor end = {999, 1700000000000009999ll, 9999};
	assert_int_equal(tk_tkb_writer_close(w, &end), TK_OK);
	tk_tkb_writer_free(w);
	tk_tkb_buf_free(b);
	f->p = slurp(path, &f->n);
	walk(f);
}

static void free_file(tfile *f)
{
	free(f->p);
	ev_free(&f->evs);
}

/* The events read from p[0..n) must be exactly want[idx[0..k)]. */
static void expect_events(const evlist *got, const evlist *want, const size_t *idx, size_t k)
{
	assert_int_equal(got->n, k);
	for (size_t i = 0; i < k; i++)
		if (!tk_event_equal(got->ev[i], want->ev[idx ? idx[i] : i]))
			fail_msg("event %zu differs from written event %zu", i, idx ? idx[i] : i);
}

/* ---- tests ---- */

static void test_generated_roundtrip(void **state)
{
	(void)state;
	for (int c = 0; c < 2; c++) {
		tfile f;
		make_file(&f, 3000, 250, c, NULL);
		tk_reader *r;
		assert_int_equal(tk_reader_open_memory(&r, f.p, f.n, "gen.tkb", NULL), TK_OK);
		assert_string_equal(tk_reader_format(r), "tkb");
		evlist got = {0};
		assert_int_equal(read_all(r, &got), TK_EOF);
		expect_events(&got, &f.evs, NULL, f.evs.n);
		assert_null(tk_reader_warning(r, 0));
		assert_int_equal(tk_reader_get_stats(r)->truncated, 0);
		tk_tkb_info in;
		assert_int_equal(tk_reader_tkb_info(r, &in), TK_OK);
		assert_true(in.complete && in.has_start && in.has_end);
		assert_int_equal(in.pid, 4242);
		assert_int_equal(in.rank, 3);
		assert_int_equal(in.world_size, 8);
		assert_int_equal(in.start.realtime_ns, 1700000000000000000ll);
		assert_int_equal(in.end.monotonic_ns, 9999);
		assert_memory_equal(in.host.ptr, "node-1", 7);
		assert_memory_equal(in.producer.ptr, "test_tkb", 9);
		tk_sv key, json;
		int after;
		assert_int_equal(tk_reader_meta_count(r), 2);
		tk_reader_meta_get(r, 1, &key, &json, &after);
		assert_memory_equal(key.ptr, "traceName", 9);
		assert_memory_equal(json.ptr, "\"t\"", 3);
		assert_int_equal(after, 1);
		ev_free(&got);
		tk_reader_free(r);
		free_file(&f);
	}
}

/* Every prefix of a small file: exactly the events of its complete chunks. */
static void test_cut_everywhere(void **state)
{
	(void)state;
	tfile f;
	make_file(&f, 300, 40, 0, NULL);
	size_t bi = 0;
	for (size_t cut = 0; cut <= f.n; cut++) {
		while (bi + 1 < f.n_bounds && f.bounds[bi + 1] <= cut)
			bi++;
		tk_reader *r;
		int rc = tk_reader_open_memory(&r, f.p, cut, "cut.tkb", NULL);
		evlist got = {0};
		if (cut < 4) {
			assert_int_equal(rc, TK_ERR_FORMAT); /* too short to tell the format */
			tk_reader_free(r);
			continue;
		}
		assert_int_equal(rc, TK_OK);
		assert_int_equal(read_all(r, &got), TK_EOF);
		size_t want = cut < f.bounds[0] ? 0 : f.ev_end[bi];
		expect_events(&got, &f.evs, NULL, want);
		const tk_reader_stats *st = tk_reader_get_stats(r);
		assert_int_equal(st->truncated, cut < f.n);
		if (cut < f.n && cut >= f.bounds[0]) {
			assert_int_equal(st->dropped_bytes, cut - f.bounds[bi]);
			assert_true(has_warning(r, "input ends early"));
		}
		ev_free(&got);
		tk_reader_free(r);
		tk_reader_opts strict = {.strict = 1};
		rc = tk_reader_open_memory(&r, f.p, cut, "cut.tkb", &strict);
		if (rc == TK_OK)
			rc = read_all(r, &got);
		assert_int_equal(rc, cut < f.n ? TK_ERR_TRUNCATED : TK_EOF);
		ev_free(&got);
		tk_reader_free(r);
	}
	free_file(&f);
}

/* Random cuts of a larger compressed file. */
static void test_cut_random(void **state)
{
	(void)state;
	tfile f;
	make_file(&f, 20000, 700, 1, NULL);
	uint64_t seed = 12345;
	for (int k = 0; k < 300; k++) {
		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		size_t cut = f.bounds[0] + (size_t)(seed >> 33) % (f.n - f.bounds[0]);
		size_t bi = 0;
		while (bi + 1 < f.n_bounds && f.bounds[bi + 1] <= cut)
			bi++;
		tk_reader *r;
		assert_int_equal(tk_reader_open_memory(&r, f.p, cut, "cut.tkb", NULL), TK_OK);
		evlist got = {0};
		assert_int_equal(read_all(r, &got), TK_EOF);
		expect_events(&got, &f.evs, NULL, f.ev_end[bi]);
		assert_int_equal(tk_reader_get_stats(r)->dropped_bytes, cut - f.bounds[bi]);
		ev_free(&got);
		tk_reader_free(r);
	}
	free_file(&f);
}

/* Reads a copy of f with byte `at` flipped; checks which events come back. */
static void flip_check(const tfile *f, size_t at, size_t lost_chunk, int header)
{
	unsigned char *p = malloc(f->n);
	memcpy(p, f->p, f->n);
	p[at] ^= 0x5a;
	tk_reader *r;
	assert_int_equal(tk_reader_open_memory(&r, p, f->n, "flip.tkb", NULL), TK_OK);
	evlist got = {0};
	assert_int_equal(read_all(r, &got), TK_EOF);
	size_t lo = f->ev_end[lost_chunk - 1], hi = f->ev_end[lost_chunk], k = 0;
	size_t *idx = malloc(f->evs.n * sizeof *idx);
	for (size_t i = 0; i < f->evs.n; i++)
		if (i < lo || i >= hi)
			idx[k++] = i;
	expect_events(&got, &f->evs, idx, k);
	assert_true(has_warning(r, header ? "bad chunk header" : "fails its CRC"));
	tk_tkb_info in;
	tk_reader_tkb_info(r, &in);
	assert_int_equal(in.bad_chunks, 1);
	assert_true(in.complete);
	if (!header)
		assert_int_equal(in.lost_events, hi - lo);
	ev_free(&got);
	tk_reader_free(r);
	tk_reader_opts strict = {.strict = 1};
	assert_int_equal(tk_reader_open_memory(&r, p, f->n, "flip.tkb", &strict), TK_OK);
	assert_int_equal(read_all(r, &got), TK_ERR_FORMAT);
	ev_free(&got);
	tk_reader_free(r);
	free(idx);
	free(p);
}

/* A flipped byte in any events chunk after the first (whose dictionary the
 * others use) loses exactly that chunk's events. */
static void test_flipped_bytes(void **state)
{
	(void)state;
	for (int c = 0; c < 2; c++) {
		tfile f;
		make_file(&f, 2000, 60, c, NULL);
		/* bounds[1] ends the META chunk, bounds[2] the first events chunk */
		for (size_t ci = 3; ci + 2 < f.n_bounds; ci++) {
			size_t start = f.bounds[ci - 1], len = f.bounds[ci] - start;
			flip_check(&f, start + 28 + (len - 28) / 2, ci, 0); /* payload */
			flip_check(&f, start + 1 + ci % 27, ci, 1);         /* header */
		}
		free_file(&f);
	}
}

/* Events 120..179 bring a new name and a new args shape in their own
 * chunk; later events use them too. */
static void tweak_new_dict(tk_event *ev, size_t i)
{
	static char args[64];
	if (i >= 120 && i < 180 && i % 2 == 0)
		ev->name = sv("only-in-chunk-3"), ev->has |= TK_HAS_NAME;
	if (i >= 120 && i % 10 == 5) {
		snprintf(args, sizeof args, "{\"new shape\":%zu}", i);
		ev->args = sv(args);
	}
	if (i >= 180 && i % 60 == 2)
		ev->name = sv("only-in-chunk-3"), ev->has |= TK_HAS_NAME;
}

/* Losing a chunk that added strings and shapes also loses the later events
 * that use them; everything else comes back. */
static void test_lost_dictionary(void **state)
{
	(void)state;
	tfile f;
	make_file(&f, 600, 60, 0, tweak_new_dict);
	size_t start = f.bounds[3], len = f.bounds[4] - start; /* events 120..179 */
	assert_int_equal(f.ev_end[3], 120);
	unsigned char *p = malloc(f.n);
	memcpy(p, f.p, f.n);
	p[start + 28 + len / 2] ^= 1;
	tk_reader *r;
	assert_int_equal(tk_reader_open_memory(&r, p, f.n, "lost.tkb", NULL), TK_OK);
	evlist got = {0};
	assert_int_equal(read_all(r, &got), TK_EOF);
	size_t *idx = malloc(f.evs.n * sizeof *idx), k = 0;
	for (size_t i = 0; i < f.evs.n; i++) {
		size_t chunk_start = i / 60 * 60;
		int uses_name = i >= 180 && i % 60 == 2;
		/* after a use of the lost shape the rest of its chunk is undecodable */
		int after_shape = i >= 180 && (i - chunk_start) >= 5;
		if ((i < 120 || i >= 180) && !uses_name && !after_shape)
			idx[k++] = i;
	}
	expect_events(&got, &f.evs, idx, k);
	assert_true(has_warning(r, "were dropped"));
	tk_tkb_info in;
	tk_reader_tkb_info(r, &in);
	assert_int_equal(in.lost_events, f.evs.n - k);
	ev_free(&got);
	tk_reader_free(r);
	/* cut inside the last events chunk as well: both are said */
	assert_int_equal(tk_reader_open_memory(&r, p, f.bounds[f.n_bounds - 4] + 40, "lost.tkb", NULL), TK_OK);
	assert_int_equal(read_all(r, &got), TK_EOF);
	assert_true(has_warning(r, "were dropped"));
	assert_true(has_warning(r, "input ends early"));
	ev_free(&got);
	tk_reader_free(r);
	free(idx);
	free(p);
	free_file(&f);
}

/* Garbage between chunks and a damaged sync marker are skipped by scanning. */
static void test_resync_garbage(void **state)
{
	(void)state;
	tfile f;
	make_file(&f, 500, 50, 1, NULL);
	size_t at = f.bounds[4];
	unsigned char *p = malloc(f.n + 1000);
	memcpy(p, f.p, at);
	for (int i = 0; i < 1000; i++)
		p[at + (size_t)i] = (unsigned char)(i % 7 ? i * 31 : 0xd7);
	memcpy(p + at + 1000, f.p + at, f.n - at);
	tk_reader *r;
	assert_int_equal(tk_reader_open_memory(&r, p, f.n + 1000, "garbage.tkb", NULL), TK_OK);
	evlist got = {0};
	assert_int_equal(read_all(r, &got), TK_EOF);
	expect_events(&got, &f.evs, NULL, f.evs.n);
	tk_tkb_info in;
	tk_reader_tkb_info(r, &in);
	assert_int_equal(in.skipped_bytes, 1000);
	ev_free(&got);
	tk_reader_free(r);
	free(p);
	free_file(&f);
}

/* tk_writer: JSON-style metadata order and after flags, args given as
 * non-canonical JSON, and the .tkb name picking the format. */
static void test_writer_meta(void **state)
{
	(void)state;
	const char *path = tpath("w.tkb");
	tk_writer *w;
	assert_int_equal(tk_writer_open_path(&w, path, NULL), TK_OK);
	assert_int_equal(tk_writer_add_meta(w, sv("schemaVersion"), sv("1")), TK_OK);
	assert_int_equal(tk_writer_add_meta(w, sv("deviceProperties"), sv("[ {\"id\" : 0} ]")), TK_OK);
	tk_event ev = {0};
	ev.ph = 'X';
	ev.has = TK_HAS_PH | TK_HAS_TS | TK_HAS_NAME;
	ev.ts = -5;
	ev.name = sv("n");
	ev.args = sv("{ \"a\" : [1, 2],\n \"b\":\"x\" }");
	ev.extra = sv("\"s\" : \"g\"");
	assert_int_equal(tk_writer_write(w, &ev), TK_OK);
	ev.args = sv("[1]"); /* not an object: stored as text */
	assert_int_equal(tk_writer_write(w, &ev), TK_OK);
	assert_int_equal(tk_writer_add_meta(w, sv("traceName"), sv("\"x\"")), TK_OK);
	assert_int_equal(tk_writer_close(w), TK_OK);
	tk_writer_free(w);
	tk_reader *r;
	assert_int_equal(tk_reader_open_path(&r, path, NULL), TK_OK);
	const tk_event *e;
	assert_int_equal(tk_reader_next(r, &e), TK_OK);
	assert_string_equal(e->args.ptr, "{\"a\":[1,2],\"b\":\"x\"}");
	assert_string_equal(e->extra.ptr, "\"s\":\"g\"");
	assert_int_equal(e->ts, -5);
	assert_int_equal(tk_reader_next(r, &e), TK_OK);
	assert_string_equal(e->args.ptr, "[1]");
	assert_int_equal(tk_reader_next(r, &e), TK_EOF);
	const char *keys[] = {"schemaVersion", "deviceProperties", "traceName"};
	const char *vals[] = {"1", "[{\"id\":0}]", "\"x\""};
	assert_int_equal(tk_reader_meta_count(r), 3);
	for (size_t i = 0; i < 3; i++) {
		tk_sv k, v;
		int after;
		tk_reader_meta_get(r, i, &k, &v, &after);
		assert_string_equal(k.ptr, keys[i]);
		assert_string_equal(v.ptr, vals[i]);
		assert_int_equal(after, i == 2);
	}
	tk_reader_free(r);
	unlink(path);
}

/* Exact text of awkward args values survives. */
static void test_args_values(void **state)
{
	(void)state;
	static const char *args[] = {
	    "{}", "{\"a\":-0}", "{\"a\":0.10,\"b\":-0.0,\"c\":1e5,\"d\":-0.5}",
	    "{\"x\":9223372036854775807,\"y\":-9223372036854775808,\"z\":99999999999999999999}",
	    "{\"a\":0.123456789012345678,\"b\":1234567890123456789.5}",
	    "{\"k\":\"\\u0000\",\"k\":\"dup\"}", "{\"\":{}}", "{\"a\":[]}",
	    "{\"a\":1,\"a\":\"1\"}", "{\"a\":1}",
	};
	const char *path = tpath("v.tkb");
	tk_writer *w;
	assert_int_equal(tk_writer_open_path(&w, path, NULL), TK_OK);
	tk_event ev = {0};
	ev.has = TK_HAS_VALID_JSON;
	for (size_t i = 0; i < sizeof args / sizeof *args; i++) {
		ev.args = sv(args[i]);
		assert_int_equal(tk_writer_write(w, &ev), TK_OK);
	}
	assert_int_equal(tk_writer_close(w), TK_OK);
	tk_writer_free(w);
	tk_reader *r;
	assert_int_equal(tk_reader_open_path(&r, path, NULL), TK_OK);
	const tk_event *e;
	for (size_t i = 0; i < sizeof args / sizeof *args; i++) {
		assert_int_equal(tk_reader_next(r, &e), TK_OK);
		assert_string_equal(e->args.ptr, args[i]);
		assert_int_equal(e->pid.kind, TK_ID_NONE);
	}
	assert_int_equal(tk_reader_next(r, &e), TK_EOF);
	tk_reader_free(r);
	unlink(path);
}

/* Args keys in a crafted file that are not JSON string bodies (a raw quote
 * that would add a member, a NUL, invalid UTF-8) are escaped as the JSON
 * reader would escape them: args keep one member per slot, and the events
 * read the same after a .tkb round trip. The file is written with
 * placeholder keys of the same lengths, patched, and its CRC mended. */
static void test_crafted_keys(void **state)
{
	(void)state;
	static const char *place[] = {"kxxxxxevil", "nulxkey", "utfxxkey", "vxxxxxxxx"};
	static const char bad[][16] = {"k\":1,\"evil", "nul\0key", "utf\xff\xfekey", "v\",\"x\":\"y"};
	static const char *want[] = {"{\"k\\\":1,\\\"evil\":7}", "{\"nul\\u0000key\":7}",
	                             "{\"utf\xef\xbf\xbd\xef\xbf\xbdkey\":7}",
	                             "{\"s\":\"v\\\",\\\"x\\\":\\\"y\"}"};
	const char *path = tpath("keys.tkb");
	tk_writer *w;
	assert_int_equal(tk_writer_open_path(&w, path, NULL), TK_OK);
	char text[64];
	for (size_t i = 0; i < 4; i++) {
		tk_event ev = {0};
		ev.has = TK_HAS_VALID_JSON;
		if (i < 3)
			snprintf(text, sizeof text, "{\"%s\":7}", place[i]);
		else /* a string value */
			snprintf(text, sizeof text, "{\"s\":\"%s\"}", place[i]);
		ev.args = sv(text);
		assert_int_equal(tk_writer_write(w, &ev), TK_OK);
	}
	assert_int_equal(tk_writer_close(w), TK_OK);
	tk_writer_free(w);
	size_t n;
	unsigned char *f = slurp(path, &n);
	for (size_t i = 0; i < 4; i++) {
		size_t k = strlen(place[i]);
		unsigned char *at = memmem(f, n, place[i], k);
		assert_non_null(at);
		memcpy(at, bad[i], k);
		unsigned char *h = at; /* the chunk holding it: its header's sync marker */
		while (h > f && memcmp(h, "\xd7TKc", 4) != 0)
			h--;
		assert_memory_equal(h, "\xd7TKc", 4);
		uint32_t stored = (uint32_t)h[8] | (uint32_t)h[9] << 8 | (uint32_t)h[10] << 16 | (uint32_t)h[11] << 24;
		assert_int_equal(h[5] & 1, 0); /* not compressed */
		uLong crc = crc32(0, h + 28, stored);
		for (int b = 0; b < 4; b++)
			h[20 + b] = (unsigned char)(crc >> (8 * b));
		crc = crc32(0, h, 24); /* the header's CRC covers the payload's */
		for (int b = 0; b < 4; b++)
			h[24 + b] = (unsigned char)(crc >> (8 * b));
	}
	FILE *o = fopen(path, "wb");
	assert_non_null(o);
	assert_int_equal(fwrite(f, 1, n, o), n);
	fclose(o);
	free(f);
	for (int pass = 0; pass < 2; pass++) {
		tk_reader *r;
		evlist got = {0};
		assert_int_equal(tk_reader_open_path(&r, path, NULL), TK_OK);
		assert_int_equal(read_all(r, &got), TK_EOF);
		if (tk_reader_warning(r, 0)) /* the CRCs were mended: nothing is damaged */
			fail_msg("pass %d: %s", pass, tk_reader_warning(r, 0));
		assert_int_equal(got.n, 4);
		for (size_t i = 0; i < 4; i++)
			assert_string_equal(got.ev[i]->args.ptr, want[i]);
		if (pass == 0) { /* write what was read, then read that */
			const char *p2 = tpath("keys2.tkb");
			assert_int_equal(tk_writer_open_path(&w, p2, NULL), TK_OK);
			for (size_t i = 0; i < got.n; i++)
				assert_int_equal(tk_writer_write(w, got.ev[i]), TK_OK);
			assert_int_equal(tk_writer_close(w), TK_OK);
			tk_writer_free(w);
			assert_int_equal(rename(p2, path), 0);
		}
		ev_free(&got);
		tk_reader_free(r);
	}
	unlink(path);
}

typedef struct tharg {
	tk_tkb_writer *w;
	int t;
} tharg;

static void *producer(void *p)
{
	tharg *a = p;
	tk_tkb_buf *b = tk_tkb_buf_new(64, 4096);
	char name[32];
	for (int i = 0; i < 5000; i++) {
		tk_event ev = {0};
		ev.ph = 'X';
		ev.has = TK_HAS_PH | TK_HAS_TS | TK_HAS_NAME | TK_HAS_VALID_JSON;
		ev.ts = i;
		snprintf(name, sizeof name, "k%d", i % 17);
		ev.name = sv(name);
		ev.tid = (tk_id){TK_ID_INT, a->t, {0}};
		ev.args = sv("{\"correlation\":1}");
		if (tk_tkb_buf_append(b, &ev) == TK_ERR_LIMIT) {
			tk_tkb_writer_submit(a->w, b);
			tk_tkb_buf_append(b, &ev);
		}
	}
	tk_tkb_writer_submit(a->w, b);
	tk_tkb_buf_free(b);
	return NULL;
}

/* Four threads fill their own buffers and submit them to one writer. */
static void test_threads(void **state)
{
	(void)state;
	const char *path = tpath("thr.tkb");
	tk_tkb_writer *w;
	tk_tkb_opts o = {1, 1, 0};
	assert_int_equal(tk_tkb_writer_open(&w, path, NULL, &o), TK_OK);
	pthread_t th[4];
	tharg a[4];
	for (int i = 0; i < 4; i++) {
		a[i] = (tharg){w, i};
		pthread_create(&th[i], NULL, producer, &a[i]);
	}
	for (int i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
	assert_int_equal(tk_tkb_writer_close(w, NULL), TK_OK);
	assert_int_equal(tk_tkb_writer_events(w), 20000);
	tk_tkb_writer_free(w);
	tk_reader *r;
	assert_int_equal(tk_reader_open_path(&r, path, NULL), TK_OK);
	const tk_event *e;
	int64_t next[4] = {0, 0, 0, 0};
	while (tk_reader_next(r, &e) == TK_OK) {
		assert_true(e->tid.kind == TK_ID_INT && e->tid.num >= 0 && e->tid.num < 4);
		assert_int_equal(e->ts, next[e->tid.num]++);
	}
	for (int i = 0; i < 4; i++)
		assert_int_equal(next[i], 5000);
	tk_reader_free(r);
	unlink(path);
}

/* A file that cannot be made: the message says so, and why. */
static void test_writer_open_fails(void **state)
{
	(void)state;
	char path[600];
	snprintf(path, sizeof path, "%s", tpath("nodir/x.tkb"));
	const char *why[2] = {"No such file or directory", "Is a directory"};
	for (int i = 0; i < 2; i++) {
		if (i == 1) { /* the directory itself */
			snprintf(path, sizeof path, "%s", tpath("adir"));
			assert_int_equal(mkdir(path, 0700), 0);
		}
		tk_tkb_writer *w = NULL;
		assert_int_equal(tk_tkb_writer_open(&w, path, NULL, NULL), TK_ERR_IO);
		const char *msg = tk_tkb_writer_error(w);
		if (!tu_contains(msg, path) || !tu_contains(msg, "cannot create") || !tu_contains(msg, why[i]))
			fail_msg("message: %s", msg);
		tk_tkb_writer_free(w);
	}
	rmdir(path);
}

static void test_buf_limits(void **state)
{
	(void)state;
	tk_tkb_buf *b = tk_tkb_buf_new(2, 16);
	tk_event ev = {0};
	ev.name = sv("0123456789");
	assert_int_equal(tk_tkb_buf_append(b, &ev), TK_OK);
	assert_int_equal(tk_tkb_buf_append(b, &ev), TK_ERR_LIMIT); /* arena */
	ev.name = sv("x");
	assert_int_equal(tk_tkb_buf_append(b, &ev), TK_OK);
	assert_int_equal(tk_tkb_buf_append(b, &ev), TK_ERR_LIMIT); /* slots */
	assert_int_equal(tk_tkb_buf_count(b), 2);
	tk_tkb_buf_reset(b);
	assert_int_equal(tk_tkb_buf_count(b), 0);
	assert_int_equal(tk_tkb_buf_append(NULL, &ev), TK_ERR_ARG);
	tk_tkb_buf_free(b);
	tk_tkb_buf_free(NULL);
	tk_tkb_writer_free(NULL);
}

/* ---- one thread against several ---- */

static uint64_t cuts; /* of the batches both() read on threads, those cut at their size */

/* Reads p[0..n) on one thread and on `threads` in lockstep: every event,
 * the end, the error, the warnings, the counts, the metadata and the
 * file's details the same. Returns the chunks decoded on other threads. */
static uint64_t both(const unsigned char *p, size_t n, unsigned threads, int strict)
{
	tk_reader_opts o1 = {.strict = strict, .threads = 1}, o2 = o1;
	o2.threads = threads;
	tk_reader *a = NULL, *b = NULL;
	int ra = tk_reader_open_memory(&a, p, n, "t.tkb", &o1);
	int rb = tk_reader_open_memory(&b, p, n, "t.tkb", &o2);
	assert_int_equal(ra, rb);
	uint64_t k = 0;
	while (!ra) {
		const tk_event *ea, *eb;
		ra = tk_reader_next(a, &ea);
		rb = tk_reader_next(b, &eb);
		if (ra != rb)
			fail_msg("event %llu: %d on one thread, %d on %u (%s | %s)", (unsigned long long)k, ra, rb, threads,
			         tk_reader_error(a), tk_reader_error(b));
		if (ra != TK_OK)
			break;
		if (!tk_event_equal(ea, eb))
			fail_msg("event %llu differs on %u threads", (unsigned long long)k, threads);
		/* the counters and the warnings grow at the same events */
		tk_tkb_info ia = {0}, ib = {0};
		tk_reader_tkb_info(a, &ia);
		tk_reader_tkb_info(b, &ib);
		size_t wa = 0, wb = 0;
		while (tk_reader_warning(a, wa))
			wa++;
		while (tk_reader_warning(b, wb))
			wb++;
		if (ia.lost_events != ib.lost_events || ia.bad_chunks != ib.bad_chunks ||
		    ia.skipped_bytes != ib.skipped_bytes || wa != wb)
			fail_msg("event %llu: counters or warnings differ on %u threads (lost %llu/%llu, warnings %zu/%zu)",
			         (unsigned long long)k, threads, (unsigned long long)ia.lost_events,
			         (unsigned long long)ib.lost_events, wa, wb);
		k++;
	}
	uint64_t batched = 0;
	if (a && b) {
		tu_same_end(a, b, ra);
		tk_tkb_info ia = {0}, ib = {0}; /* a damaged magic is no .tkb */
		assert_int_equal(tk_reader_tkb_info(a, &ia), tk_reader_tkb_info(b, &ib));
		assert_int_equal(ia.bad_chunks, ib.bad_chunks);
		assert_int_equal(ia.skipped_bytes, ib.skipped_bytes);
		assert_int_equal(ia.lost_events, ib.lost_events);
		assert_int_equal(ia.complete, ib.complete);
		assert_int_equal(ia.has_end, ib.has_end);
		assert_int_equal(ia.end.gpu_ns, ib.end.gpu_ns);
		assert_int_equal(tk__tkb_batched(a), 0);
		batched = tk__tkb_batched(b);
		cuts += tk__tkb_cut(b);
	}
	tk_reader_free(a);
	tk_reader_free(b);
	return batched;
}

/* The chunks decoded on 2, 3 and 8 threads and handed out in order: whole
 * files (plain, compressed, with a lost dictionary), cut and damaged at
 * many places, strict and not, read the same as on one thread. */
static void test_threads_lockstep(void **state)
{
	(void)state;
	uint64_t batched = 0;
	for (int c = 0; c < 3; c++) {
		tfile f;
		make_file(&f, 3000, 60, c == 1, c == 2 ? tweak_new_dict : NULL);
		unsigned char *p = malloc(f.n);
		static const unsigned th[] = {2, 3, 8};
		for (int t = 0; t < 3; t++)
			batched += both(f.p, f.n, th[t], 0);
		for (size_t at = 0; at < f.n; at += 97 + at % 13) {
			unsigned th1 = th[at % 3];
			int strict = (at / 97) % 4 == 0;
			batched += both(f.p, at, th1, strict); /* cut */
			memcpy(p, f.p, f.n);
			p[at] ^= (unsigned char)(0x5a + at % 5); /* damaged */
			batched += both(p, f.n, th1, strict);
		}
		for (size_t bi = 0; bi < f.n_bounds; bi++) /* at and next to chunk ends */
			for (size_t d = 0; d < 3; d++)
				if (f.bounds[bi] + d >= 1 && f.bounds[bi] + d - 1 <= f.n)
					batched += both(f.p, f.bounds[bi] + d - 1, 2 + (unsigned)d, (int)(bi & 1));
		free(p);
		free_file(&f);
	}
	assert_true(batched > 1000); /* the threads did decode */
	/* an error after the end chunk (the bytes after it are over the value
	 * limit) leaves the file complete, on any number of threads */
	tfile f;
	make_file(&f, 500, 60, 0, NULL);
	size_t n = f.n + (3u << 20);
	unsigned char *p = calloc(1, n);
	memcpy(p, f.p, f.n);
	for (unsigned t = 1; t <= 3; t += 2) {
		tk_reader_opts o = {.threads = t, .max_value_bytes = 1u << 20};
		tk_reader *r;
		assert_int_equal(tk_reader_open_memory(&r, p, n, "tail.tkb", &o), TK_OK);
		evlist got = {0};
		assert_true(read_all(r, &got) < 0);
		assert_int_equal(got.n, 500);
		tk_tkb_info in;
		assert_int_equal(tk_reader_tkb_info(r, &in), 0);
		assert_true(in.complete);
		ev_free(&got);
		tk_reader_free(r);
	}
	free(p);
	free_file(&f);
}

static void put_le32(unsigned char *p, uint32_t v)
{
	p[0] = (unsigned char)v;
	p[1] = (unsigned char)(v >> 8);
	p[2] = (unsigned char)(v >> 16);
	p[3] = (unsigned char)(v >> 24);
}

/* A chunk of `type` (stored) with payload pay[0..n) at the end of b. */
static void put_chunk(tu_bytes *b, unsigned type, uint32_t count, const unsigned char *pay, size_t n)
{
	unsigned char h[28] = {0xd7, 'T', 'K', 'c', (unsigned char)type, 0, 0, 0};
	put_le32(h + 8, (uint32_t)n);
	put_le32(h + 12, (uint32_t)n);
	put_le32(h + 16, count);
	put_le32(h + 20, (uint32_t)crc32(0, pay, (uInt)n));
	put_le32(h + 24, (uint32_t)crc32(0, h, 24));
	tu_put(b, h, sizeof h);
	tu_put(b, pay, n);
}

/* The .tkb file header, version 1, at the start of f. */
static void put_header(tu_bytes *f)
{
	unsigned char h[20] = {0x89, 'T', 'K', 'B', '\r', '\n', 0x1a, '\n', 1, 0, 0, 0};
	put_le32(h + 16, (uint32_t)crc32(0, h, 16));
	tu_put(f, h, sizeof h);
}

/* A file of one string `key` and one shape of `slots` slots naming it,
 * all null, and one event of that shape. */
static tu_bytes key_file(const char *key, size_t key_len, size_t slots)
{
	tu_bytes f = {0}, p = {0};
	put_header(&f);
	tu_put_varint(&p, 0); /* strings from id 0: one */
	tu_put_varint(&p, 1);
	tu_put_varint(&p, key_len);
	tu_put(&p, key, key_len);
	tu_put_varint(&p, 0); /* shapes from id 0: one */
	tu_put_varint(&p, 1);
	tu_put_varint(&p, slots);
	for (size_t i = 0; i < slots; i++) {
		tu_put_varint(&p, 0);
		unsigned char null_type = 5;
		tu_put(&p, &null_type, 1);
	}
	tu_put_varint(&p, 1);      /* one event: */
	tu_put_varint(&p, 1u << 5); /* args, */
	tu_put_varint(&p, 1);      /* of shape 0 */
	put_chunk(&f, 2, 1, p.p, p.n);
	free(p.p);
	p = (tu_bytes){0};
	tu_put_varint(&p, 1); /* the end: one event, one chunk */
	tu_put_varint(&p, 1);
	put_chunk(&f, 4, 0, p.p, p.n);
	free(p.p);
	return f;
}

/* A shape of one slot: key (a string id) and value type. */
static void put_shape1(tu_bytes *b, uint64_t key, unsigned type)
{
	unsigned char t = (unsigned char)type;
	tu_put_varint(b, 1);
	tu_put_varint(b, key);
	tu_put(b, &t, 1);
}

/* An EVENTS chunk (stored) adding strings strs[0..ns) from id sfirst and
 * the nh shapes written in sh from id hfirst, then n event records ev. */
static void dict_chunk(tu_bytes *f, uint64_t sfirst, const char *const *strs, size_t ns, uint64_t hfirst,
                       const tu_bytes *sh, size_t nh, const tu_bytes *ev, uint32_t n)
{
	tu_bytes p = {0};
	tu_put_varint(&p, sfirst);
	tu_put_varint(&p, ns);
	for (size_t i = 0; i < ns; i++) {
		tu_put_varint(&p, strlen(strs[i]));
		tu_put(&p, strs[i], strlen(strs[i]));
	}
	tu_put_varint(&p, hfirst);
	tu_put_varint(&p, nh);
	tu_put(&p, sh->p, sh->n);
	tu_put_varint(&p, n);
	tu_put(&p, ev->p, ev->n);
	put_chunk(f, 2, n, p.p, p.n);
	free(p.p);
}

/* An 'i' event record named by string `name`, with args of shape id
 * shape - 1 where shape is not 0. */
static void put_named(tu_bytes *e, uint64_t name, uint64_t shape)
{
	tu_put_varint(e, 1u << 4 | 1u << 2 | (shape ? 1u << 5 : 0));
	tu_put(e, "i", 1);
	tu_put_varint(e, name);
	if (shape)
		tu_put_varint(e, shape);
}

/* Dictionary ids skipped by a chunk's first ids were added by lost
 * chunks: kept as one range per gap, not an entry per id, so that any
 * gap reads (here 2^40 ids, then 2^41) and 39-byte chunks that each skip
 * 4M ids cost no memory per id (they held 130 MB each before); events
 * that use an id in a gap are dropped and counted, on any number of
 * threads alike. */
static void test_dictionary_gaps(void **state)
{
	(void)state;
	const uint64_t G = (uint64_t)1 << 40, S = 4000000;
	const size_t skips = 1000;
	tu_bytes f = {0}, e = {0}, h = {0};
	put_header(&f);
	const char *a[] = {"a"}, *b[] = {"b"}, *c[] = {"c"};
	put_named(&e, 0, 1);
	put_shape1(&h, 0, TK__V_NULL);
	dict_chunk(&f, 0, a, 1, 0, &h, 1, &e, 1);
	e.n = 0;
	put_named(&e, G, G + 1); /* kept: b {"b":null} */
	put_named(&e, 7, 0);     /* a lost string: dropped */
	put_named(&e, 0, 1);     /* kept: a {"a":null} */
	put_named(&e, 0, 6);     /* a lost shape: it and the rest dropped */
	put_named(&e, 0, 0);
	h.n = 0;
	put_shape1(&h, G, TK__V_NULL);
	dict_chunk(&f, G, b, 1, G, &h, 1, &e, 5);
	e.n = 0;
	put_named(&e, 3 * G, G + 2); /* kept: c {"c":null} */
	put_named(&e, 0, G + 3);     /* its shape's key was lost: dropped */
	put_named(&e, G, 0);         /* kept: b */
	h.n = 0;
	put_shape1(&h, 3 * G, TK__V_NULL);
	put_shape1(&h, 5, TK__V_NULL);
	dict_chunk(&f, 3 * G, c, 1, G + 1, &h, 2, &e, 3);
	uint64_t sid = 3 * G + 1, hid = G + 3;
	h.n = 0;
	for (size_t i = 0; i < skips; i++) {
		sid += S;
		hid += S;
		e.n = 0;
		put_named(&e, sid, 0);
		dict_chunk(&f, sid, c, 1, hid, &h, 0, &e, 1);
		sid++;
	}
	e.n = 0;
	tu_put_varint(&e, 9 + skips);
	tu_put_varint(&e, 3 + skips);
	put_chunk(&f, 4, 0, e.p, e.n);
	free(e.p);
	free(h.p);
	static const char *want[][2] = {{"a", "{\"a\":null}"}, {"b", "{\"b\":null}"}, {"a", "{\"a\":null}"},
	                                {"c", "{\"c\":null}"}, {"b", NULL}};
	tk_reader *r1 = NULL;
	for (unsigned threads = 1; threads <= 4; threads += 3) {
		tk_reader_opts o = {.threads = threads};
		tk_reader *r = tu_open_mem(f.p, f.n, "gaps.tkb", &o);
		tu_events ev = {0};
		int rc = tu_read_all(r, &ev);
		if (rc != TK_EOF || ev.n != 5 + skips)
			fail_msg("%u threads: rc %d after %zu events, want %zu: %s", threads, rc, ev.n, 5 + skips,
			         tk_reader_error(r));
		for (size_t i = 0; i < 5; i++) {
			assert_true(tu_sv_is(ev.ev[i]->name, want[i][0]));
			if (want[i][1])
				assert_true(tu_sv_is(ev.ev[i]->args, want[i][1]));
			else
				assert_int_equal(ev.ev[i]->args.len, 0);
		}
		for (size_t i = 5; i < ev.n; i++)
			assert_true(tu_sv_is(ev.ev[i]->name, "c"));
		tk_tkb_info in;
		assert_int_equal(tk_reader_tkb_info(r, &in), 0);
		assert_int_equal(in.lost_events, 4);
		assert_true(has_warning(r, "were dropped"));
		tu_events_free(&ev);
		if (r1) {
			tu_same_end(r1, r, rc);
			tk_reader_free(r);
		} else {
			r1 = r;
		}
	}
	tk_reader_free(r1);
	free(f.p);
}

/* Chunk c (0..3) of the cut test: n events named "ev", of shape 0 (an
 * INT slot and a STR of 1,000 bytes), with ts and pid deltas; chunk 1
 * has an event naming a string of a lost chunk at 1,100, chunk 2 an
 * event of a lost shape at 1,250, chunk 3 a bad record at 1,375. */
static void cut_chunk(tu_bytes *f, int c, uint32_t n)
{
	tu_bytes e = {0}, h = {0};
	const unsigned flags = TK__E_PH | TK__E_TS | TK__E_NAME | TK__E_ARGS | TK__ID_INT << TK__E_PID;
	for (uint32_t i = 0; i < n; i++) {
		if (c == 3 && i == 1375) {
			tu_put_varint(&e, 1u << 13);
			continue;
		}
		tu_put_varint(&e, flags);
		tu_put(&e, "i", 1);
		tu_put_varint(&e, 2 * (1 + i % 7));             /* ts delta */
		tu_put_varint(&e, c == 1 && i == 1100 ? 7 : 0); /* name */
		tu_put_varint(&e, i % 3);                       /* pid delta, zigzag */
		tu_put_varint(&e, c == 2 && i == 1250 ? 3 : 1); /* shape */
		tu_put_varint(&e, 2 * (i % 5));                 /* k */
		tu_put_varint(&e, 1 + i % 2);                   /* n */
	}
	char *x = malloc(1001), *y = malloc(1001);
	memset(x, 'x', 1000);
	memset(y, 'y', 1000);
	x[1000] = y[1000] = 0;
	const char *strs[] = {"ev", x, y, "k", "n"}, *z[] = {"z"};
	if (c == 0) {
		tu_put_varint(&h, 2);
		tu_put_varint(&h, 3);
		tu_put(&h, "\0", 1);
		tu_put_varint(&h, 4);
		tu_put(&h, "\1", 1);
		dict_chunk(f, 0, strs, 5, 0, &h, 1, &e, n);
	} else if (c == 1) {
		dict_chunk(f, 10, z, 1, 1, &h, 0, &e, n);
	} else if (c == 2) {
		put_shape1(&h, 0, TK__V_NULL);
		dict_chunk(f, 11, NULL, 0, 5, &h, 1, &e, n);
	} else {
		dict_chunk(f, 11, NULL, 0, 6, &h, 0, &e, n);
	}
	free(x);
	free(y);
	free(e.p);
	free(h.p);
}

/* A chunk whose events and text are more than a batch holds (8 MiB; here
 * 256 KiB, about 220 of these events) is decoded by a thread as far as
 * that, the caller decoding the rest with the decoder where the thread
 * stopped (a few bytes of records could otherwise make a thread hold far
 * more than the file: 49 KB took 1 GiB on four threads): the same events,
 * drops, errors and warnings as on one thread, the delta state (ts, pid,
 * INT slots) carried over the cut. */
static void test_batch_cut(void **state)
{
	(void)state;
	const uint32_t n = 1500;
	size_t batch = tk__tkb_batch;
	tk__tkb_batch = (size_t)256 << 10;
	tu_bytes f = {0}, e = {0};
	put_header(&f);
	size_t ends[4];
	for (int c = 0; c < 4; c++) {
		cut_chunk(&f, c, n);
		ends[c] = f.n;
	}
	tu_put_varint(&e, 4 * n);
	tu_put_varint(&e, 4);
	put_chunk(&f, 4, 0, e.p, e.n);
	free(e.p);
	cuts = 0;
	uint64_t batched = 0;
	/* twice as the threads happen to run, then with every chunk decoded
	 * into a batch (on a busy machine the caller may get to them all first) */
	for (int round = 0; round < 3; round++) {
		tk__tkb_batch_all = round == 2;
		for (unsigned t = 2; t <= 8; t += 3)
			for (int strict = 0; strict < 2; strict++)
				batched += both(f.p, f.n, t, strict);
		batched += both(f.p, ends[2] + 1000, 4, 0); /* cut inside the last events chunk */
		batched += both(f.p, ends[3] - 5, 4, 0);
	}
	tk__tkb_batch_all = 0;
	tk__tkb_batch = batch;
	if (!cuts || cuts > batched)
		fail_msg("%llu batches cut of %llu", (unsigned long long)cuts, (unsigned long long)batched);
	/* what one thread gives: an event of chunk 1 dropped, chunk 2 from
	 * its lost shape on, and the bad record of chunk 3 an error */
	tk_reader *r = tu_open_mem(f.p, f.n, "cut.tkb", NULL);
	tu_events ev = {0};
	assert_int_equal(tu_read_all(r, &ev), TK_ERR_FORMAT);
	assert_true(tu_contains(tk_reader_error(r), "unknown event flags"));
	assert_int_equal(ev.n, n + n - 1 + 1250 + 1375);
	tk_tkb_info in;
	assert_int_equal(tk_reader_tkb_info(r, &in), 0);
	assert_int_equal(in.lost_events, 1 + n - 1250);
	/* chunk 0's events, as the deltas make them */
	int64_t ts = 0, pid = 0, k = 0;
	char *want = malloc(1100);
	for (uint32_t i = 0; i < n; i++) {
		const tk_event *x = ev.ev[i];
		ts += 1 + i % 7;
		pid += i % 3 == 1 ? -1 : i % 3 == 2 ? 1 : 0;
		k += i % 5;
		snprintf(want, 1100, "{\"k\":%lld,\"n\":\"%s\"}", (long long)k, i % 2 ? "y" : "x");
		if (x->ts != ts || x->pid.num != pid || !tu_sv_is(x->name, "ev") || x->args.len != strlen(want) + 999 ||
		    memcmp(x->args.ptr, want, strlen(want) - 2))
			fail_msg("chunk 0, event %u: ts %lld pid %lld args %zu %.40s", i, (long long)x->ts,
			         (long long)x->pid.num, x->args.len, x->args.ptr);
	}
	free(want);
	tu_events_free(&ev);
	tk_reader_free(r);
	free(f.p);
}

/* A shape of many slots naming one long key, a byte or two each: the key
 * is not copied per slot, and an event's args past max_value_bytes make
 * the chunk malformed (a 64 KiB key in 2,048 slots made 134 MB of args
 * and held as much again); keys are written as they were, escaped where
 * they are no JSON string body. */
static void test_long_keys(void **state)
{
	(void)state;
	size_t len = 65536;
	char *key = malloc(len);
	memset(key, 'k', len);
	tu_bytes f = key_file(key, len, 2048);
	tk_reader_opts o = {.max_value_bytes = 1u << 20};
	tk_reader *r = tu_open_mem(f.p, f.n, "keys.tkb", &o);
	tu_events ev = {0};
	int rc = tu_read_all(r, &ev);
	if (rc != TK_ERR_FORMAT || ev.n)
		fail_msg("a 64 KiB key in 2048 slots: rc %d after %zu events: %s", rc, ev.n, tk_reader_error(r));
	tu_events_free(&ev);
	tk_reader_free(r);
	free(f.p);
	free(key);
	static const struct {
		const char *key, *args;
	} c[] = {{"kk", "{\"kk\":null,\"kk\":null,\"kk\":null}"}, {"a\"b", "{\"a\\\"b\":null,\"a\\\"b\":null,\"a\\\"b\":null}"}};
	for (size_t i = 0; i < 2; i++) {
		f = key_file(c[i].key, strlen(c[i].key), 3);
		r = tu_open_mem(f.p, f.n, "keys.tkb", NULL);
		rc = tu_read_all(r, &ev);
		if (rc != TK_EOF || ev.n != 1)
			fail_msg("key %s: rc %d after %zu events: %s", c[i].key, rc, ev.n, tk_reader_error(r));
		if (!tu_sv_is(ev.ev[0]->args, c[i].args))
			fail_msg("key %s: args %.*s, want %s", c[i].key, (int)ev.ev[0]->args.len, ev.ev[0]->args.ptr, c[i].args);
		tu_events_free(&ev);
		tk_reader_free(r);
		free(f.p);
	}
}

/* Compressed events chunks whose CRCs hold but whose payload does not
 * inflate (inflated on the threads, settled in file order on the
 * caller's): skipped with the same warning, counts and events on any
 * number of threads; an error when strict. One such chunk, two in a row,
 * the last events chunk, and every fifth; then one whose event count is
 * wrong. */
static void test_threads_bad_inflate(void **state)
{
	(void)state;
	tfile f;
	make_file(&f, 3000, 60, 1, NULL);
	size_t ev_chunks[512], n_ev = 0;
	for (size_t i = 1; i < f.n_bounds; i++) {
		const unsigned char *h = f.p + f.bounds[i - 1];
		if (h[4] == 2 && (h[5] & 1))
			ev_chunks[n_ev++] = i;
	}
	assert_true(n_ev >= 40);
	unsigned char *p = malloc(f.n);
	const size_t plans[][3] = {{1, 0, 0}, {7, 8, 0}, {n_ev - 1, 0, 0}, {5, 10, 15}};
	for (size_t k = 0; k < sizeof plans / sizeof plans[0]; k++) {
		memcpy(p, f.p, f.n);
		uint64_t lost = 0;
		for (int c = 0; c < 3; c++) {
			if (c && !plans[k][c])
				break;
			unsigned char *h = p + f.bounds[ev_chunks[plans[k][c]] - 1];
			uint32_t stored = (uint32_t)h[8] | (uint32_t)h[9] << 8 | (uint32_t)h[10] << 16 | (uint32_t)h[11] << 24;
			lost += (uint32_t)h[16] | (uint32_t)h[17] << 8 | (uint32_t)h[18] << 16 | (uint32_t)h[19] << 24;
			h[28] ^= 0xff; /* zlib's header: it no longer inflates */
			put_le32(h + 20, (uint32_t)crc32(0, h + 28, stored));
			put_le32(h + 24, (uint32_t)crc32(0, h, 24));
		}
		for (int strict = 0; strict < 2; strict++) {
			static const unsigned th[] = {2, 3, 8};
			for (int t = 0; t < 3; t++)
				both(p, f.n, th[t], strict);
		}
		/* what one thread finds, which both() holds the others to */
		tk_reader_opts o = {.threads = 3};
		tk_reader *r;
		assert_int_equal(tk_reader_open_memory(&r, p, f.n, "bad.tkb", &o), TK_OK);
		evlist got = {0};
		assert_int_equal(read_all(r, &got), TK_EOF);
		assert_true(has_warning(r, "does not decompress"));
		tk_tkb_info in;
		assert_int_equal(tk_reader_tkb_info(r, &in), 0);
		assert_int_equal(in.lost_events, lost);
		assert_int_equal(got.n + lost, 3000);
		ev_free(&got);
		tk_reader_free(r);
		o.strict = 1;
		assert_int_equal(tk_reader_open_memory(&r, p, f.n, "bad.tkb", &o), TK_OK);
		assert_true(read_all(r, &got) < 0);
		assert_non_null(strstr(tk_reader_error(r), "does not decompress"));
		ev_free(&got);
		tk_reader_free(r);
	}
	/* a compressed chunk whose header counts one event more than its
	 * payload holds: found as the caller settles it, after the chunks
	 * before it were handed out, an error on any number of threads */
	memcpy(p, f.p, f.n);
	unsigned char *h = p + f.bounds[ev_chunks[3] - 1];
	put_le32(h + 16, ((uint32_t)h[16] | (uint32_t)h[17] << 8 | (uint32_t)h[18] << 16 | (uint32_t)h[19] << 24) + 1);
	put_le32(h + 24, (uint32_t)crc32(0, h, 24));
	for (int strict = 0; strict < 2; strict++)
		for (unsigned t = 2; t <= 8; t *= 2)
			both(p, f.n, t, strict);
	tk_reader_opts o = {.threads = 4};
	tk_reader *r;
	assert_int_equal(tk_reader_open_memory(&r, p, f.n, "count.tkb", &o), TK_OK);
	evlist got = {0};
	assert_true(read_all(r, &got) < 0);
	assert_non_null(strstr(tk_reader_error(r), "event count differs"));
	assert_int_equal(got.n, f.ev_end[ev_chunks[3] - 1]);
	ev_free(&got);
	tk_reader_free(r);
	free(p);
	free_file(&f);
}

/* ---- the real traces (--real): JSON -> .tkb -> events, compared in lockstep ---- */

static int compare_readers(tk_reader *a, tk_reader *b, const char *f)
{
	const tk_event *ea, *eb;
	int ra, rb;
	uint64_t n = 0;
	while ((ra = tk_reader_next(a, &ea)) == TK_OK) {
		rb = tk_reader_next(b, &eb);
		if (rb != TK_OK || !tk_event_equal(ea, eb) ||
		    (ea->args.ptr && strcmp(ea->args.ptr, eb->args.ptr))) {
			fprintf(stderr, "%s: event %llu differs\n", f, (unsigned long long)n);
			return 1;
		}
		n++;
	}
	if (ra != TK_EOF || tk_reader_next(b, &eb) != TK_EOF)
		return fprintf(stderr, "%s: %s / %s\n", f, tk_reader_error(a), tk_reader_error(b)), 1;
	if (tk_reader_meta_count(a) != tk_reader_meta_count(b))
		return fprintf(stderr, "%s: metadata count differs\n", f), 1;
	for (size_t i = 0; i < tk_reader_meta_count(a); i++) {
		tk_sv ka, va, kb, vb;
		int aa, ab;
		tk_reader_meta_get(a, i, &ka, &va, &aa);
		tk_reader_meta_get(b, i, &kb, &vb, &ab);
		if (strcmp(ka.ptr, kb.ptr) || va.len != vb.len || memcmp(va.ptr, vb.ptr, va.len) || aa != ab)
			return fprintf(stderr, "%s: metadata %zu differs\n", f, i), 1;
	}
	return 0;
}

static int real_one(const char *dir, const char *rel, int compress)
{
	char in[8192];
	snprintf(in, sizeof in, "%s/%s", dir, rel);
	const char *out = tpath("real.tkb");
	uint64_t json_bytes;
	tk_writer_opts wo = {.format = TK_FORMAT_TKB, .gzip = compress};
	if (tu_convert(in, out, &wo, &json_bytes))
		return 1;
	tk_reader *a = NULL, *b = NULL;
	int bad = tk_reader_open_path(&a, in, NULL) || tk_reader_open_path(&b, out, NULL) ||
	          compare_readers(a, b, rel);
	size_t n;
	free(slurp(out, &n));
	printf("%-90s %s json %12llu  tkb %10zu  %5.2f%%\n", rel, compress ? "zlib" : "raw ",
	       (unsigned long long)json_bytes, n, 100.0 * (double)n / (double)json_bytes);
	tk_reader_free(a);
	tk_reader_free(b);
	unlink(out);
	return bad;
}

static int run_real(void)
{
	const char *dir = getenv("TK_REALTRACES");
	if (!dir || !*dir)
		dir = TK_REALTRACES_DIR;
	char idx[1024];
	snprintf(idx, sizeof idx, "%s/index.tsv", dir);
	FILE *f = fopen(idx, "r");
	if (!f) {
		printf("skipped: no real traces at %s (set TK_REALTRACES)\n", dir);
		return 77;
	}
	char line[4096];
	int bad = 0, n = 0;
	while (fgets(line, sizeof line, f)) {
		char *tab = strchr(line, '\t');
		if (!tab || !strncmp(line, "path\t", 5))
			continue;
		*tab = 0;
		bad += real_one(dir, line, n % 2);
		n++;
	}
	fclose(f);
	printf("%d real traces, %d failed\n", n, bad);
	return bad ? 1 : 0;
}

int main(int argc, char **argv)
{
	int rc;
	if (argc > 1 && strcmp(argv[1], "--real") == 0) {
		rc = run_real();
	} else {
		const struct CMUnitTest tests[] = {
		    cmocka_unit_test(test_generated_roundtrip), cmocka_unit_test(test_cut_everywhere),
		    cmocka_unit_test(test_cut_random),          cmocka_unit_test(test_flipped_bytes),
		    cmocka_unit_test(test_lost_dictionary),     cmocka_unit_test(test_resync_garbage),
		    cmocka_unit_test(test_writer_meta),         cmocka_unit_test(test_args_values), cmocka_unit_test(test_crafted_keys),
		    cmocka_unit_test(test_threads),             cmocka_unit_test(test_buf_limits),
		    cmocka_unit_test(test_writer_open_fails),
		    cmocka_unit_test(test_threads_lockstep),
		    cmocka_unit_test(test_threads_bad_inflate), cmocka_unit_test(test_long_keys),
		    cmocka_unit_test(test_dictionary_gaps),      cmocka_unit_test(test_batch_cut),
		};
		rc = cmocka_run_group_tests(tests, NULL, NULL);
	}
	if (tmpdir[0])
		rmdir(tmpdir);
	return rc;
}
