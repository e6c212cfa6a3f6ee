/* fuzz_merge.c: fuzz harness for trace-merge's merge and the sorter's spilled runs (libFuzzer, or a plain main() over files).
 *
 * An input that starts with "TKRUN\n" is the rest of it taken as one run
 * file of the sorter (the compact format sort_run.c spills, read back as
 * tk_sorter_finish() reads it): its events are decoded, then sorted again
 * through a sorter whose budget is a few events, which spills them into
 * runs of its own and merges those back. Invariants: a run that fails to
 * decode says why; what a run decodes to comes back from the second
 * sorter complete, each event equal with its tag, in the sorter's
 * documented order (events without ts first, then by ts, ties in the
 * order they were added).
 *
 * Any other input is read as a trace (any format tracekit detects); its
 * events (at most MAX_EVENTS), dealt to 2 or 3 ranks, are each written as
 * a .tkb memory file, and merged with tk_merge in a few KiB of memory, so
 * that the sorter spills runs, merges them in several passes and, for the
 * alignments that move ranks (start, collectives, a given offset), sorts
 * a second time. The options come from a hash of the input (fuzz_events.h): ranks,
 * alignment, memory, output format (.tkb or JSON), whether rank 0 carries
 * the input's metadata. Invariants:
 *  - every input is read and the merge written without error;
 *  - each rank's events_in are the events it was given, its events_out
 *    those that are not metadata;
 *  - the output reads without error, and without warning unless an event
 *    gives a member twice (as its input did), and its events other than
 *    metadata (ph M, whose args the merge rewrites) are the inputs' as a
 *    multiset, compared without pid, tid and id (which the merge renumbers
 *    per rank) and, where ranks may move, without ts;
 *  - the output's events with a ts are in time order;
 *  - nothing is left in the temporary directory. */
#define _GNU_SOURCE
#include <fcntl.h>

#include "fuzz_events.h"
#include "sort_int.h"
#include "tracekit/merge.h"
#include "tracekit/sort.h"
#include "merge_int.h"

#define WHO "fuzz_merge"
#define MAX_EVENTS 512
#define RUN_MAGIC "TKRUN\n"

static unsigned long n_spilled, n_merged, n_runs; /* for main()'s summary */

/* ---- a run file of the sorter ---- */

/* Decodes the run at path with a sorter that took it as its only run. */
static int decode_run(const char *path, fz_events *evs, uint64_t **tags)
{
	tk_sorter_opts so = {0, fz_scratch()};
	tk_sorter *s = NULL;
	int rc = tk_sorter_new(&s, &so);
	char **runs = malloc(sizeof *runs);
	if (rc || !runs || !(runs[0] = strdup(path))) {
		free(runs);
		tk_sorter_free(s);
		return -1;
	}
	s->runs = runs;
	s->n_runs = s->runs_cap = 1;
	s->finished = 1;
	rc = tk__sort_merger_open(s, &s->m, 0, 1);
	const tk_event *ev;
	uint64_t tag;
	size_t cap = 0;
	while (!rc && evs->n < MAX_EVENTS && (rc = tk_sorter_next(s, &ev, &tag)) == TK_OK) {
		if (evs->n == cap) {
			uint64_t *t = realloc(*tags, (cap = cap ? 2 * cap : 64) * sizeof *t);
			if (!t)
				break;
			*tags = t;
		}
		if (fz_events_push(evs, ev))
			break;
		(*tags)[evs->n - 1] = tag;
	}
	FZ_CHECK(WHO, rc == TK_OK || rc == TK_EOF || tk_sorter_error(s)[0], "a run fails (%d) without a message", rc);
	tk_sorter_free(s); /* removes the run file */
	return 0;
}

/* Events without ts first, then by ts; ties keep the order of i, j. */
static int sorts_before(const tk_event *a, const tk_event *b)
{
	int ta = (a->has & TK_HAS_TS) != 0, tb = (b->has & TK_HAS_TS) != 0;
	if (ta != tb)
		return ta < tb;
	return ta && a->ts < b->ts;
}

static void run_file(const uint8_t *data, size_t size)
{
	const char *dir = fz_scratch();
	if (!dir)
		return;
	char path[512];
	snprintf(path, sizeof path, "%s/fuzzed-run", dir);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd < 0)
		return;
	int ok = write(fd, data, size) == (ssize_t)size;
	close(fd);
	fz_events evs = {0};
	uint64_t *tags = NULL;
	if (!ok || decode_run(path, &evs, &tags)) {
		unlink(path);
		free(tags);
		return;
	}
	n_runs++;
	/* the decoded events, stably sorted as the sorter orders them */
	size_t n = evs.n, *ord = malloc((n ? n : 1) * sizeof *ord);
	if (!ord) {
		fz_events_free(&evs);
		free(tags);
		return;
	}
	for (size_t i = 0; i < n; i++) {
		size_t j = i;
		for (; j && sorts_before(evs.v[i], evs.v[ord[j - 1]]); j--)
			ord[j] = ord[j - 1];
		ord[j] = i;
	}
	tk_sorter_opts so = {2048, dir};
	tk_sorter *s = NULL;
	const tk_event *ev;
	uint64_t tag;
	size_t got = 0;
	ok = tk_sorter_new(&s, &so) == TK_OK;
	for (size_t i = 0; ok && i < n; i++) {
		int rc = tk_sorter_add(s, evs.v[i], tags[i]);
		FZ_CHECK(WHO, rc == TK_OK || rc == TK_ERR_NOMEM, "sorting decoded events fails: %s", tk_sorter_error(s));
		ok = rc == TK_OK;
	}
	if (ok) {
		int rc = tk_sorter_finish(s);
		while (rc == TK_OK && (rc = tk_sorter_next(s, &ev, &tag)) == TK_OK) {
			FZ_CHECK(WHO, got < n, "the sorter returns more events than it was given");
			FZ_CHECK(WHO, tk_event_equal(ev, evs.v[ord[got]]) && tag == tags[ord[got]],
			         "event %zu of the sorted run differs (event %zu decoded, tag %llu)", got, ord[got],
			         (unsigned long long)tags[ord[got]]);
			got++;
		}
		FZ_CHECK(WHO, rc == TK_EOF || rc == TK_ERR_NOMEM, "sorting the decoded events fails: %s",
		         tk_sorter_error(s));
		FZ_CHECK(WHO, rc != TK_EOF || got == n, "the sorter returned %zu of %zu events", got, n);
		n_spilled += tk_sorter_runs(s) > 0;
	}
	tk_sorter_free(s);
	free(ord);
	free(tags);
	fz_events_free(&evs);
	FZ_CHECK(WHO, fz_clear_dir(dir, 0) == 0, "the sorter left files in its temporary directory");
}

/* ---- the merge ---- */

/* An event as the merge may change it: no ids, and no ts where ranks move. */
static int push_view(fz_events *l, const tk_event *ev, int keep_ts)
{
	tk_event e = *ev;
	e.pid = e.tid = e.id = (tk_id){0};
	if (!keep_ts)
		e.ts = 0;
	return fz_events_push(l, &e);
}

static void merge(const uint8_t *data, size_t size)
{
	const char *dir = fz_scratch();
	if (!dir)
		return;
	fz_opts fo = fz_opts_of(data, size);
	unsigned b = fz_byte(&fo), b2 = fz_byte(&fo);
	size_t k = 2 + (b & 1);
	int align = (int)((b >> 1) & 3), meta = (b >> 3) & 1, json_out = (b >> 4) & 1;
	size_t memory = (size_t)4096 << ((b >> 5) & 3);
	int keep_ts = align == TK_ALIGN_NONE && !meta;

	tk_reader_opts ro = {.max_value_bytes = 1 << 20, .max_depth = 64};
	tk_reader *r = NULL;
	int fds[3] = {-1, -1, -1}, ok = tk_reader_open_memory(&r, data, size, "(fuzz)", &ro) == TK_OK;
	tk_writer *w[3] = {NULL, NULL, NULL};
	tk_writer_opts wo = {.format = TK_FORMAT_TKB};
	uint64_t given[3] = {0, 0, 0}, given_meta[3] = {0, 0, 0};
	fz_events in = {0}, out = {0};
	int dups = 0; /* an event gives a member twice: the output warns as its input did */
	for (size_t i = 0; ok && i < k; i++)
		ok = (fds[i] = memfd_create(WHO, 0)) >= 0 && tk_writer_open_fd(&w[i], fds[i], "(memfd)", &wo) == TK_OK;
	const tk_event *ev;
	size_t n = 0, copied = 0;
	while (ok && n < MAX_EVENTS && tk_reader_next(r, &ev) == TK_OK) {
		size_t to = (n + b2) % k;
		ok = tk_writer_write(w[to], ev) == TK_OK && (ev->ph == 'M' || push_view(&in, ev, keep_ts) == 0);
		dups |= fz_event_dup_members(ev);
		given[to]++;
		given_meta[to] += ev->ph == 'M';
		n++;
	}
	if (ok && meta)
		ok = tk_copy_meta(w[0], r, &copied) == TK_OK;
	for (size_t i = 0; ok && i < k; i++)
		ok = tk_writer_close(w[i]) == TK_OK;
	if (!ok)
		goto done;

	tk_merge_opts mo = {0};
	mo.memory_bytes = memory;
	mo.tmpdir = dir;
	mo.align = align;
	mo.ropts = ro;
	mo.wopts.format = json_out ? TK_FORMAT_JSON : TK_FORMAT_TKB;
	tk_merge *m = NULL;
	int rc = tk_merge_new(&m, &mo);
	FZ_CHECK(WHO, rc == TK_OK, "tk_merge_new fails: %s", tk_merge_error(m));
	if (align == TK_ALIGN_GIVEN)
		for (size_t i = 0; i < k; i++)
			tk_merge_set_offset(m, (int64_t)i, ((int64_t)(signed char)fz_byte(&fo)) * 997);
	for (size_t i = 0; i < k && rc == TK_OK; i++) {
		tk_reader *ri = NULL;
		lseek(fds[i], 0, SEEK_SET);
		FZ_CHECK(WHO, tk_reader_open_fd(&ri, fds[i], "(rank)", &ro) == TK_OK, "rank %zu's .tkb does not open", i);
		rc = tk_merge_add_reader(m, ri, (int64_t)i);
		FZ_CHECK(WHO, rc == TK_OK || rc == TK_ERR_NOMEM, "rank %zu is refused: %s", i, tk_merge_error(m));
		tk_reader_free(ri);
	}
	char path[512];
	snprintf(path, sizeof path, "%s/merged.%s", dir, json_out ? "json" : "tkb");
	int spilled = m->sorter && tk_sorter_runs(m->sorter) > 0;
	if (rc == TK_OK) {
		rc = tk_merge_write(m, path);
		FZ_CHECK(WHO, rc == TK_OK || rc == TK_ERR_NOMEM, "the merge is not written: %s", tk_merge_error(m));
	}
	for (size_t i = 0; rc == TK_OK && i < k; i++) {
		tk_merge_rank_info info;
		FZ_CHECK(WHO, tk_merge_info(m, i, &info) == TK_OK && info.events_in == given[i] &&
		         info.events_out == given[i] - given_meta[i] && !info.skipped,
		         "rank %zu: %llu events given (%llu metadata), %llu read, %llu written", i,
		         (unsigned long long)given[i], (unsigned long long)given_meta[i], (unsigned long long)info.events_in,
		         (unsigned long long)info.events_out);
	}
	tk_merge_free(m);
	if (rc == TK_OK) {
		n_merged++;
		n_spilled += spilled;
		tk_reader *ro2 = NULL;
		FZ_CHECK(WHO, tk_reader_open_path(&ro2, path, &ro) == TK_OK, "the merged file does not open: %s",
		         ro2 ? tk_reader_error(ro2) : "");
		int have_last = 0;
		int64_t last = 0;
		size_t i = 0;
		while ((rc = tk_reader_next(ro2, &ev)) == TK_OK) {
			if (ev->has & TK_HAS_TS) {
				FZ_CHECK(WHO, !have_last || ev->ts >= last, "merged event %zu at %lld comes after %lld", i,
				         (long long)ev->ts, (long long)last);
				last = ev->ts;
				have_last = 1;
			}
			if (ev->ph != 'M' && push_view(&out, ev, keep_ts))
				break;
			i++;
		}
		FZ_CHECK(WHO, rc == TK_EOF || rc == TK_ERR_NOMEM, "the merged file fails: %s", tk_reader_error(ro2));
		FZ_CHECK(WHO, rc != TK_EOF || dups || !tk_reader_warning(ro2, 0), "the merged file reads with a warning: %s",
		         tk_reader_warning(ro2, 0));
		tk_reader_free(ro2);
		if (rc == TK_EOF)
			FZ_CHECK(WHO, fz_events_same_multiset(&in, &out),
			         "the merged events are not the inputs' (%zu events in, %zu out)", in.n, out.n);
		unlink(path);
	}
	FZ_CHECK(WHO, fz_clear_dir(dir, 0) == 0, "the merge left files in its temporary directory");
done:
	for (size_t i = 0; i < 3; i++) {
		tk_writer_free(w[i]);
		if (fds[i] >= 0)
			close(fds[i]);
	}
	tk_reader_free(r);
	fz_events_free(&in);
	fz_events_free(&out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size >= sizeof RUN_MAGIC - 1 && memcmp(data, RUN_MAGIC, sizeof RUN_MAGIC - 1) == 0)
		run_file(data + sizeof RUN_MAGIC - 1, size - (sizeof RUN_MAGIC - 1));
	else
		merge(data, size);
	return 0;
}

#ifndef TK_LIBFUZZER
#include "fuzz_files.h"

/* fuzz_merge --make-run TRACE OUT: a seed for the run reader, the first
 * run a sorter spills from TRACE's events, with RUN_MAGIC before it. */
static int make_run(const char *trace, const char *outp)
{
	tk_reader *r = NULL;
	tk_sorter *s = NULL;
	const char *dir = fz_scratch();
	tk_sorter_opts so = {2048, dir};
	const tk_event *ev;
	int rc = dir ? tk_reader_open_path(&r, trace, NULL) : TK_ERR_IO;
	if (!rc)
		rc = tk_sorter_new(&s, &so);
	for (uint64_t i = 0; !rc && (rc = tk_reader_next(r, &ev)) == TK_OK;)
		rc = tk_sorter_add(s, ev, i++);
	if (rc == TK_EOF)
		rc = tk_sorter_finish(s); /* the tail becomes the last run, runs are merged down to a few */
	if (!rc && !s->n_runs)
		rc = TK_ERR_ARG; /* everything fitted in memory */
	if (!rc) {
		FILE *in = fopen(s->runs[0], "rb"), *out = fopen(outp, "wb");
		char buf[4096];
		size_t k;
		if (!in || !out)
			rc = TK_ERR_IO;
		else
			fputs(RUN_MAGIC, out);
		while (!rc && (k = fread(buf, 1, sizeof buf, in)) > 0)
			fwrite(buf, 1, k, out);
		if (in)
			fclose(in);
		if (out && fclose(out))
			rc = TK_ERR_IO;
	}
	if (rc)
		fprintf(stderr, "%s: no run made (%s)\n", trace, r ? tk_reader_error(r) : tk_strerror(rc));
	tk_sorter_free(s);
	tk_reader_free(r);
	return rc ? 1 : 0;
}

int main(int argc, char **argv)
{
	if (argc == 4 && strcmp(argv[1], "--make-run") == 0)
		return make_run(argv[2], argv[3]);
	int rc = tk_fuzz_files(argc, argv, NULL);
	printf(WHO ": %d inputs ran: %lu merged, %lu run files decoded, %lu spilled\n", argc - 1, n_merged, n_runs,
	       n_spilled);
	return rc;
}
#endif
