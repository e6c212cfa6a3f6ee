/* test_realtraces.c: every trace in ../shared/realtraces converted by trace-convert, then both read and
 * compared; with --threads (threads_real), every trace, its .tkb and its .pftrace read on one thread and
 * on four in lockstep. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"
#include "../libtrace/src/internal.h"
#include "../libtrace/src/par.h"
#include "../libtrace/src/tkb_int.h"

extern char **environ;

#ifndef TK_REALTRACES_DIR
#define TK_REALTRACES_DIR "../shared/realtraces"
#endif

/* One row of index.tsv. */
typedef struct row {
	char path[512];
	char top_level[16];
	unsigned long long disk_bytes, uncompressed, events, input_dims;
	long rank; /* -1 if not given */
} row;

static const char *dir, *tool;

static int parse_row(char *line, row *r)
{
	char *f[16];
	int n = 0;
	for (char *s = strtok(line, "\t\n"); s && n < 16; s = strtok(NULL, "\t\n"))
		f[n++] = s;
	/* path compressed disk_bytes uncompressed_bytes top_level events rank
	 * world_size ts_format input_dims_events nccl_kernels; empty rank and
	 * world_size fields vanish under strtok, so count from the end */
	if (n < 9 || strcmp(f[0], "path") == 0)
		return -1;
	memset(r, 0, sizeof *r);
	snprintf(r->path, sizeof r->path, "%s", f[0]);
	r->disk_bytes = strtoull(f[2], NULL, 10);
	r->uncompressed = strtoull(f[3], NULL, 10);
	snprintf(r->top_level, sizeof r->top_level, "%s", f[4]);
	r->events = strtoull(f[5], NULL, 10);
	r->input_dims = strtoull(f[n - 2], NULL, 10);
	r->rank = n == 11 ? strtol(f[6], NULL, 10) : -1;
	return 0;
}

/* Runs the tool; returns its exit status; its stderr goes to errpath. */
static int convert(const char *in, const char *out, const char *errpath)
{
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 2, errpath, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	char *argv[] = {(char *)tool, (char *)in, "-o", (char *)out, NULL};
	pid_t pid;
	int rc = posix_spawn(&pid, tool, &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (rc)
		fail_msg("cannot run %s", tool);
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* The next top-level key of a compact JSON object at *p, copied raw. */
static int next_key(const char **p, const char *e, char *key, size_t cap)
{
	const char *s = *p;
	if (e - s >= 2 && s[0] == '{' && s[1] == '}')
		*p = s + 1; /* empty: stop at its '}' */
	if (s >= e || (*s != '{' && *s != ','))
		return 0;
	s++;
	if (s >= e || *s != '"')
		return 0;
	size_t n = 0;
	for (s++; s < e && *s != '"'; s++) {
		if (*s == '\\' && n + 1 < cap)
			key[n++] = *s++;
		if (n + 1 < cap)
			key[n++] = *s;
	}
	key[n] = 0;
	s += 2; /* '"' ':' */
	int depth = 0, in_str = 0;
	for (; s < e; s++) { /* skip the value */
		if (in_str) {
			if (*s == '\\')
				s++;
			else if (*s == '"')
				in_str = 0;
		} else if (*s == '"') {
			in_str = 1;
		} else if (*s == '{' || *s == '[') {
			depth++;
		} else if (*s == '}' || *s == ']') {
			if (depth-- == 0)
				break;
		} else if (*s == ',' && !depth) {
			break;
		}
	}
	*p = s;
	return 1;
}

/* Every argument of a has the same value in b, and b has no others. */
static void compare_args(const tk_event *a, const tk_event *b, const char *path, size_t idx)
{
	if (!a->args.ptr) {
		assert_null(b->args.ptr);
		return;
	}
	const char *p = a->args.ptr, *e = p + a->args.len;
	char key[1024];
	size_t n = 0;
	while (next_key(&p, e, key, sizeof key)) {
		tk_sv va, vb;
		if (tk_args_find(a, key, &va) != 0 || tk_args_find(b, key, &vb) != 0 || va.len != vb.len ||
		    memcmp(va.ptr, vb.ptr, va.len) != 0)
			fail_msg("%s: event %zu: argument \"%s\" differs", path, idx, key);
		n++;
	}
	assert_int_equal(*p, '}');
	/* b has exactly as many: count its keys the same way */
	p = b->args.ptr, e = p + b->args.len;
	size_t m = 0;
	while (next_key(&p, e, key, sizeof key))
		m++;
	assert_int_equal(m, n);
}

static void compare_meta(const tk_reader *a, const tk_reader *b, const char *path)
{
	size_t n = tk_reader_meta_count(a);
	if (tk_reader_meta_count(b) != n)
		fail_msg("%s: %zu metadata members, converted %zu", path, n, tk_reader_meta_count(b));
	for (size_t i = 0; i < n; i++) {
		tk_sv k1, v1, k2, v2;
		int a1, a2;
		assert_int_equal(tk_reader_meta_get(a, i, &k1, &v1, &a1), 0);
		assert_int_equal(tk_reader_meta_get(b, i, &k2, &v2, &a2), 0);
		if (k1.len != k2.len || memcmp(k1.ptr, k2.ptr, k1.len) || v1.len != v2.len ||
		    memcmp(v1.ptr, v2.ptr, v1.len) || a1 != a2)
			fail_msg("%s: metadata member %zu (%s) differs", path, i, k1.ptr);
	}
}

static void check_index_facts(const row *rw, tk_reader *r, size_t n_events, size_t n_dims)
{
	const tk_reader_stats *st = tk_reader_get_stats(r);
	if (n_events != rw->events)
		fail_msg("%s: %zu events, index.tsv says %llu", rw->path, n_events, rw->events);
	assert_int_equal(st->events, rw->events);
	assert_int_equal(st->bytes_decoded, rw->uncompressed);
	assert_int_equal(st->bytes_in, rw->disk_bytes);
	assert_int_equal(st->truncated, 0);
	assert_int_equal(tk_reader_is_bare_array(r), strcmp(rw->top_level, "array") == 0);
	assert_int_equal(n_dims, rw->input_dims);
	if (rw->rank >= 0) {
		tk_sv di = tk_reader_meta_find(r, "distributedInfo"), rank;
		assert_non_null(di.ptr);
		assert_int_equal(tk_json_obj_find(di, "rank", &rank), 0);
		assert_int_equal(strtol(rank.ptr, NULL, 10), rw->rank);
	}
}

static tk_reader *open_or_fail(const char *path)
{
	tk_reader *r = NULL;
	if (tk_reader_open_path(&r, path, NULL))
		fail_msg("%s: %s", path, tk_reader_error(r));
	return r;
}

/* Both readers in step: every event and argument equal. */
static void compare_traces(const row *rw, const char *in, const char *out)
{
	tk_reader *a = open_or_fail(in), *b = open_or_fail(out);
	const tk_event *ea, *eb;
	size_t n = 0, n_dims = 0;
	int ra, rb;
	for (;;) {
		ra = tk_reader_next(a, &ea);
		rb = tk_reader_next(b, &eb);
		if (ra != TK_OK || rb != TK_OK)
			break;
		if (!tk_event_equal(ea, eb))
			fail_msg("%s: event %zu differs after conversion", rw->path, n);
		compare_args(ea, eb, rw->path, n);
		tk_sv v;
		n_dims += tk_args_find(ea, "Input Dims", &v) == 0;
		n++;
	}
	if (ra != TK_EOF || rb != TK_EOF)
		fail_msg("%s: after %zu events: original %d (%s), converted %d (%s)", rw->path, n, ra,
		         tk_reader_error(a), rb, tk_reader_error(b));
	if (tk_reader_warning(a, 0) || tk_reader_warning(b, 0))
		fail_msg("%s: unexpected warning: %s", rw->path,
		         tk_reader_warning(a, 0) ? tk_reader_warning(a, 0) : tk_reader_warning(b, 0));
	check_index_facts(rw, a, n, n_dims);
	compare_meta(a, b, rw->path);
	assert_false(tk_reader_is_bare_array(b));
	tk_reader_free(a);
	tk_reader_free(b);
}

static void test_one(void **state)
{
	const row *rw = *state;
	char in[1024], err[1024];
	snprintf(in, sizeof in, "%s/%s", dir, rw->path);
	snprintf(err, sizeof err, "%s", tu_path("stderr.txt"));
	/* small traces also go through gzip output */
	int n_outs = rw->uncompressed < (16u << 20) ? 2 : 1;
	for (int o = 0; o < n_outs; o++) {
		char out[1024];
		snprintf(out, sizeof out, "%s", tu_path(o ? "converted.json.gz" : "converted.json"));
		int rc = convert(in, out, err);
		size_t n;
		char *msg = tu_read_file(err, &n);
		if (rc != 0 || n)
			fail_msg("%s: trace-convert exit %d: %s", rw->path, rc, msg);
		free(msg);
		compare_traces(rw, in, out);
		unlink(out);
	}
}

/* ---- --threads: one thread against four, on each trace and its conversions ---- */

/* What the threads did over every trace, for the checks at the end: JSON
 * events the parse threads handed out, .tkb chunks decoded on the threads
 * and batches cut at their size. */
static uint64_t par_handed, tkb_batched, tkb_cuts;

/* Reads path on one thread and on four in lockstep (tu_lockstep), with
 * the small blocks and batches set by the caller; the read must end well. */
static void lockstep(const row *rw, const char *path, const char *as)
{
	tk_reader_opts o1 = {0}, o4 = {0};
	o1.threads = 1;
	o4.threads = 4;
	tk_reader *a = NULL, *b = NULL;
	if (tk_reader_open_path(&a, path, &o1) || tk_reader_open_path(&b, path, &o4))
		fail_msg("%s (%s): %s | %s", rw->path, as, tk_reader_error(a), tk_reader_error(b));
	char what[700];
	snprintf(what, sizeof what, "%s (%s), one thread against four", rw->path, as);
	uint64_t n;
	if (tu_lockstep(a, b, what, &n) != TK_EOF)
		fail_msg("%s: %s", what, tk_reader_error(a));
	if (!strcmp(as, "as given") && n != rw->events)
		fail_msg("%s: %llu events, index.tsv says %llu", what, (unsigned long long)n, rw->events);
	uint64_t handed = 0, resumed = 0;
	if (b->par)
		tk__par_counts(b->par, &handed, &resumed);
	par_handed += handed;
	tkb_batched += tk__tkb_batched(b);
	tkb_cuts += tk__tkb_cut(b);
	tk_reader_free(a);
	tk_reader_free(b);
}

/* in, read on one thread, written to out in `format`, its metadata too. */
static void write_as(const row *rw, const char *in, const char *out, int format)
{
	tk_writer_opts wo = {0};
	wo.format = format;
	if (tu_convert(in, out, &wo, NULL))
		fail_msg("%s: not written to %s (the messages above)", rw->path, out);
}

/* The trace as given (JSON, gzip, an archive's member), its .tkb and its
 * .pftrace, each read on one thread and on four: the same events, counts,
 * metadata and messages. Blocks and batches are small here so that every
 * trace is cut at many places, the small ones too: JSON blocks of 16 KiB,
 * .tkb batches cut at 16 KiB, .pftrace blocks of 16 KiB with at most 8 KiB
 * of text rendered ahead in each. */
static void test_threads_one(void **state)
{
	const row *rw = *state;
	char in[1024];
	snprintf(in, sizeof in, "%s/%s", dir, rw->path);
	size_t par_block = tk__par_block_bytes, batch = tk__tkb_batch, pf_block = tk__pf_block_bytes,
	       pf_text = tk__pf_block_text;
	tk__par_block_bytes = 16u << 10;
	tk__tkb_batch = 16u << 10;
	tk__pf_block_bytes = 16u << 10;
	tk__pf_block_text = 8u << 10;
	lockstep(rw, in, "as given");
	const char *tkb = tu_path("t.tkb"), *pf = tu_path("t.pftrace");
	write_as(rw, in, tkb, TK_FORMAT_TKB);
	lockstep(rw, tkb, ".tkb");
	unlink(tkb);
	write_as(rw, in, pf, TK_FORMAT_PFTRACE);
	lockstep(rw, pf, ".pftrace");
	unlink(pf);
	tk__par_block_bytes = par_block;
	tk__tkb_batch = batch;
	tk__pf_block_bytes = pf_block;
	tk__pf_block_text = pf_text;
}

/* After every trace: the threads did the work on the real traces. */
static void test_threads_did_work(void **state)
{
	(void)state;
	printf("JSON events handed out by the parse threads: %llu; .tkb chunks decoded on the threads: %llu, "
	       "batches cut: %llu\n",
	       (unsigned long long)par_handed, (unsigned long long)tkb_batched, (unsigned long long)tkb_cuts);
	assert_true(par_handed > 0);
	assert_true(tkb_batched > 0);
	assert_true(tkb_cuts > 0);
}

static int teardown(void **state)
{
	(void)state;
	tu_cleanup();
	return 0;
}

int main(int argc, char **argv)
{
	int threads = argc == 2 && !strcmp(argv[1], "--threads");
	if (argc != 2) {
		fprintf(stderr, "usage: test_realtraces TRACE-CONVERT | --threads\n");
		return 2;
	}
	tool = argv[1];
	dir = getenv("TK_REALTRACES");
	if (!dir || !*dir)
		dir = TK_REALTRACES_DIR;
	char index[1024];
	snprintf(index, sizeof index, "%s/index.tsv", dir);
	FILE *f = fopen(index, "r");
	if (!f) {
		printf("skipped: ../shared/realtraces not found (looked for %s)\n", index);
		return 77;
	}
	row *rows = calloc(256, sizeof *rows);
	struct CMUnitTest *tests = calloc(257, sizeof *tests);
	size_t n = 0;
	char line[4096];
	while (n < 256 && fgets(line, sizeof line, f))
		if (parse_row(line, &rows[n]) == 0) {
			tests[n] = (struct CMUnitTest){rows[n].path, threads ? test_threads_one : test_one, NULL, NULL,
			                               &rows[n]};
			n++;
		}
	fclose(f);
	if (!n) {
		fprintf(stderr, "%s lists no traces\n", index);
		return 1;
	}
	if (threads)
		tests[n++] = (struct CMUnitTest){"the threads did the work", test_threads_did_work, NULL, NULL, NULL};
	int rc = _cmocka_run_group_tests(threads ? "threads_real" : "realtraces", tests, n, NULL, teardown);
	free(tests);
	free(rows);
	return rc;
}
