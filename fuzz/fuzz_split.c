/* fuzz_split.c: fuzz harness for trace-split (libFuzzer, or a plain main() over files).
 *
 * Each input is written to a file and split with tk_split into small
 * parts: by size (a few hundred bytes to a few KiB of JSON or gzip JSON),
 * into 2 to 5 parts, by windows of 1 us to 33 ms, or by ProfilerStep
 * (1 or 2 steps a part), as JSON, gzip JSON or .tkb, in 16 to 64 KiB of
 * memory, so that an unsorted input is ordered through a sorter that
 * spills; the choice comes from a hash of the input. Inputs of
 * more than MAX_EVENTS events are skipped. The invariants:
 *  - a split that fails says why and leaves no file behind;
 *  - a split that succeeds: every part reads without error or warning
 *    (unless an event gives a member twice, as in its input) and
 *    holds the events, file size and time range the split reports for
 *    it (first start and last end of its events other than metadata);
 *    the parts hold events_out events;
 *  - every event of the input other than metadata (ph M) lands in exactly
 *    one part, unchanged, except the flow ends (s, f) of flows cut
 *    between parts, which are removed, as many as flow_ends_removed
 *    counts; every part starts with the input's metadata events;
 *  - where parts cover time ranges, each event starts inside its part's;
 *  - a part over the byte budget is counted in over_budget;
 *  - by ProfilerStep, GPU work (kernel, memcpy, memset) lies in the part of
 *    the earliest runtime call with its correlation id, when the input has
 *    one (docs/steps.md), and none went late;
 *  - the index is JSON. */
#define _GNU_SOURCE
#include <fcntl.h>

#include "fuzz_events.h"
#include "tracekit/split.h"
#include "tracekit/stats.h"
#include "core/buf.h"
#include "core/json_text.h"

#define WHO "fuzz_split"
#define MAX_EVENTS 1024

static unsigned long n_split, n_parts; /* for main()'s summary */

/* Launches and GPU work by correlation id, with the part each landed in. */
typedef struct corr_at {
	int64_t corr, ts;
	size_t part;
	int launch;
} corr_at;
static corr_at cas[MAX_EVENTS];
static size_t n_cas;

static void note_corr(const tk_event *ev, size_t part)
{
	int64_t c;
	if (ev->ph != 'X' || !(ev->has & TK_HAS_TS) || !(ev->has & TK_HAS_CAT) || n_cas == MAX_EVENTS)
		return;
	int cls = tk_stats_event_class(ev->cat, 1);
	if (cls >= TK_STATS_API && tk_args_get_int(ev, "correlation", &c) == 0)
		cas[n_cas++] = (corr_at){c, ev->ts, part, cls == TK_STATS_API};
}

/* Each GPU op in the part of its launch: the earliest call of its id. */
static void check_by_launch(void)
{
	for (size_t i = 0; i < n_cas; i++) {
		const corr_at *l = NULL;
		for (size_t j = 0; j < n_cas && !cas[i].launch; j++)
			if (cas[j].launch && cas[j].corr == cas[i].corr && (!l || cas[j].ts < l->ts))
				l = &cas[j];
		FZ_CHECK(WHO, !l || l->part == cas[i].part,
		         "GPU work of correlation id %lld is in part %zu, its launch in part %zu", (long long)cas[i].corr,
		         cas[i].part, l ? l->part : 0);
	}
}

/* The input's events, metadata apart: 0 when read to its end, 1 when it
 * has more than MAX_EVENTS, -1 when it fails. */
static int read_all(const uint8_t *data, size_t size, const tk_reader_opts *ro, fz_events *evs, fz_events *meta,
                    int *merged)
{
	tk_reader *r = NULL;
	const tk_event *ev;
	int rc = tk_reader_open_memory(&r, data, size, "(fuzz)", ro);
	size_t n = 0;
	while (rc == TK_OK && (rc = tk_reader_next(r, &ev)) == TK_OK) {
		if (++n > MAX_EVENTS || fz_events_push(ev->ph == 'M' ? meta : evs, ev)) {
			rc = 1;
			break;
		}
	}
	*merged = r && tk_reader_meta_find(r, "tracekitMerge").ptr != NULL; /* ids per rank there */
	tk_reader_free(r);
	return rc == TK_EOF ? 0 : rc == 1 ? 1 : -1;
}

/* The index file is one JSON value, valid UTF-8. */
static void check_index(const char *path)
{
	FILE *f = fopen(path, "rb");
	FZ_CHECK(WHO, f != NULL, "the index %s is missing", path);
	tk__buf text = {0}, c = {0};
	char chunk[4096];
	size_t k;
	int rc = 0, repaired = 0;
	while (!rc && (k = fread(chunk, 1, sizeof chunk, f)) > 0)
		rc = tk__buf_append(&text, chunk, k);
	fclose(f);
	while (!rc && text.len && (text.p[text.len - 1] == '\n' || text.p[text.len - 1] == ' '))
		text.len--;
	if (!rc)
		rc = tk__json_canon_text(&c, text.p ? text.p : "", text.len, 0, &repaired);
	FZ_CHECK(WHO, rc == TK_ERR_NOMEM || (rc == TK_OK && !repaired), "the index is not JSON (%s)",
	         repaired ? "invalid UTF-8" : tk_strerror(rc));
	tk__buf_free(&text);
	tk__buf_free(&c);
}

/* One part: its events against what the split says of it; its non-M
 * events appended to out. */
static void check_part(const tk_split *s, size_t i, const char *dir, const tk_reader_opts *ro, int timed,
                       const fz_events *meta, fz_events *out, int dups)
{
	const tk_split_part *p = tk_split_get_part(s, i);
	char path[1024];
	snprintf(path, sizeof path, "%s/%s", dir, p->file);
	struct stat st;
	FZ_CHECK(WHO, stat(path, &st) == 0 && (uint64_t)st.st_size == p->bytes, "part %zu (%s) is not %llu bytes", i,
	         p->file, (unsigned long long)p->bytes);
	tk_reader *r = NULL;
	const tk_event *ev;
	int rc = tk_reader_open_path(&r, path, ro);
	fz_events pm = {0};
	uint64_t n = 0;
	int64_t first = INT64_MAX, last = INT64_MIN;
	while (rc == TK_OK && (rc = tk_reader_next(r, &ev)) == TK_OK) {
		n++;
		if ((ev->has & TK_HAS_TS) && ev->ph != 'M') { /* metadata repeated in every part is not "in" it */
			int64_t end = ev->ts;
			if ((ev->has & TK_HAS_DUR) && ev->dur > 0 && __builtin_add_overflow(ev->ts, ev->dur, &end))
				end = INT64_MAX;
			first = ev->ts < first ? ev->ts : first;
			last = end > last ? end : last;
		}
		if (ev->ph == 'M') {
			if (fz_events_push(&pm, ev))
				break;
			continue;
		}
		if (timed && (ev->has & TK_HAS_TS))
			FZ_CHECK(WHO, ev->ts >= p->start && (p->end == TK_SPLIT_OPEN_END || ev->ts < p->end),
			         "part %zu [%lld, %lld) holds an event at %lld", i, (long long)p->start, (long long)p->end,
			         (long long)ev->ts);
		note_corr(ev, i);
		if (fz_events_push(out, ev))
			break;
	}
	FZ_CHECK(WHO, rc == TK_EOF || rc == TK_ERR_NOMEM, "part %zu (%s) fails: %s", i, p->file,
	         r ? tk_reader_error(r) : tk_strerror(rc));
	FZ_CHECK(WHO, rc != TK_EOF || dups || !tk_reader_warning(r, 0), "part %zu reads with a warning: %s", i,
	         tk_reader_warning(r, 0));
	tk_reader_free(r);
	if (rc == TK_EOF) {
		FZ_CHECK(WHO, n == p->events, "part %zu holds %llu events, the split says %llu", i, (unsigned long long)n,
		         (unsigned long long)p->events);
		FZ_CHECK(WHO, first == INT64_MAX || (first == p->first_ts && last == p->last_end),
		         "part %zu spans [%lld, %lld], the split says [%lld, %lld]", i, (long long)first, (long long)last,
		         (long long)p->first_ts, (long long)p->last_end);
		fz_events want = {0};
		for (size_t j = 0; j < meta->n; j++)
			if (fz_events_push(&want, meta->v[j]))
				break;
		if (want.n == meta->n)
			FZ_CHECK(WHO, fz_events_same_multiset(&want, &pm),
			         "part %zu has %zu metadata events, not the input's %zu", i, pm.n, meta->n);
		fz_events_free(&want);
	}
	fz_events_free(&pm);
}

/* in minus out, both sorted: out must be within in, and what is missing
 * must be flow ends, as many as removed. */
static void check_union(fz_events *in, fz_events *out, uint64_t removed)
{
	if (in->n)
		qsort(in->v, in->n, sizeof *in->v, fz_event_qcmp);
	if (out->n)
		qsort(out->v, out->n, sizeof *out->v, fz_event_qcmp);
	size_t i = 0, j = 0, missing = 0;
	while (j < out->n) {
		FZ_CHECK(WHO, i < in->n, "the parts hold an event the input does not (%.*s)", (int)out->v[j]->name.len,
		         out->v[j]->name.ptr ? out->v[j]->name.ptr : "");
		int c = fz_event_cmp(in->v[i], out->v[j]);
		FZ_CHECK(WHO, c <= 0, "the parts hold an event the input does not, or holds it twice (%.*s)",
		         (int)out->v[j]->name.len, out->v[j]->name.ptr ? out->v[j]->name.ptr : "");
		if (c < 0) {
			FZ_CHECK(WHO, in->v[i]->ph == 's' || in->v[i]->ph == 'f', "an event '%c' %.*s is in no part",
			         in->v[i]->ph, (int)in->v[i]->name.len, in->v[i]->name.ptr ? in->v[i]->name.ptr : "");
			missing++;
			i++;
		} else {
			i++;
			j++;
		}
	}
	for (; i < in->n; i++) {
		FZ_CHECK(WHO, in->v[i]->ph == 's' || in->v[i]->ph == 'f', "an event '%c' %.*s is in no part", in->v[i]->ph,
		         (int)in->v[i]->name.len, in->v[i]->name.ptr ? in->v[i]->name.ptr : "");
		missing++;
	}
	FZ_CHECK(WHO, missing == removed, "%zu flow ends are in no part, the split says %llu were removed", missing,
	         (unsigned long long)removed);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *scratch = fz_scratch();
	if (!scratch)
		return 0;
	fz_opts fo = fz_opts_of(data, size);
	unsigned b = fz_byte(&fo), b2 = fz_byte(&fo);
	tk_reader_opts ro = {.max_value_bytes = 1 << 20, .max_depth = 64};
	fz_events in = {0}, meta = {0}, out = {0};
	int merged = 0, readable = read_all(data, size, &ro, &in, &meta, &merged), dups = 0;
	n_cas = 0;
	for (size_t i = 0; i < in.n; i++)
		dups |= fz_event_dup_members(in.v[i]);
	for (size_t i = 0; i < meta.n; i++)
		dups |= fz_event_dup_members(meta.v[i]);
	if (readable > 0) {
		fz_events_free(&in);
		fz_events_free(&meta);
		return 0;
	}
	char inpath[512], dir[512];
	snprintf(inpath, sizeof inpath, "%s/input", scratch);
	snprintf(dir, sizeof dir, "%s/parts", scratch);
	int fd = open(inpath, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd < 0)
		return 0;
	int ok = write(fd, data, size) == (ssize_t)size;
	close(fd);

	tk_split_opts so = {0};
	so.dir = dir;
	so.name = "part";
	so.ropts = ro;
	so.memory_bytes = (size_t)16384 << ((b >> 6) & 3);
	so.tmpdir = scratch;
	static const int formats[3][2] = {{TK_FORMAT_JSON, 0}, {TK_FORMAT_JSON, 1}, {TK_FORMAT_TKB, 0}};
	int rule = (int)(b & 3), fmt = (int)((b >> 2) % 3), timed = 0;
	if (rule == 0 && fmt == 2)
		fmt = 0; /* a byte budget needs JSON parts */
	so.wopts.format = formats[fmt][0];
	so.wopts.gzip = formats[fmt][1];
	so.wopts.gzip_level = 1;
	switch (rule) {
	case 0: so.max_bytes = (uint64_t)200 << (b2 % 6); break;
	case 1: so.n_parts = 2 + b2 % 4; timed = 1; break;
	case 2: so.every_ns = (int64_t)1000 << (b2 % 16); timed = 1; break;
	default: so.by_step = 1; so.steps_per_part = 1 + (b2 & 1); break;
	}
	tk_split *s = NULL;
	int rc = ok ? tk_split_new(&s, &so) : TK_ERR_IO;
	FZ_CHECK(WHO, !ok || rc == TK_OK, "the options are refused: %s", tk_split_error(s));
	if (ok) {
		rc = tk_split_run(s, inpath);
		FZ_CHECK(WHO, rc != TK_OK || readable == 0, "the split succeeds on an input the reader fails on");
		if (rc != TK_OK) {
			FZ_CHECK(WHO, tk_split_error(s)[0], "the split fails (%s) without a message", tk_strerror(rc));
			FZ_CHECK(WHO, fz_clear_dir(dir, 1) == 0, "a failed split leaves files behind");
		} else {
			const tk_split_stats *st = tk_split_get_stats(s);
			size_t np = tk_split_part_count(s);
			uint64_t events = 0, over = 0;
			for (size_t i = 0; i < np; i++) {
				const tk_split_part *p = tk_split_get_part(s, i);
				check_part(s, i, dir, &ro, timed, &meta, &out, dups);
				events += p->events;
				over += so.max_bytes && p->bytes > so.max_bytes;
			}
			FZ_CHECK(WHO, events == st->events_out, "the parts hold %llu events, events_out is %llu",
			         (unsigned long long)events, (unsigned long long)st->events_out);
			FZ_CHECK(WHO, st->events_in == in.n + meta.n, "events_in is %llu, the input has %zu",
			         (unsigned long long)st->events_in, in.n + meta.n);
			FZ_CHECK(WHO, over == st->over_budget, "%llu parts are over the budget, over_budget says %llu",
			         (unsigned long long)over, (unsigned long long)st->over_budget);
			check_union(&in, &out, st->flow_ends_removed);
			if (so.by_step) {
				FZ_CHECK(WHO, st->launch_late == 0, "%llu GPU ops went late in a tiny input",
				         (unsigned long long)st->launch_late);
				if (!merged)
					check_by_launch();
			}
			if (tk_split_index_path(s))
				check_index(tk_split_index_path(s));
			n_split++;
			n_parts += np;
		}
	}
	tk_split_free(s);
	fz_clear_dir(dir, 1);
	unlink(inpath);
	fz_events_free(&in);
	fz_events_free(&meta);
	fz_events_free(&out);
	FZ_CHECK(WHO, fz_clear_dir(scratch, 0) == 0, "the split left files in the temporary directory");
	return 0;
}

#ifndef TK_LIBFUZZER
#include "fuzz_files.h"

int main(int argc, char **argv)
{
	int rc = tk_fuzz_files(argc, argv, NULL);
	printf(WHO ": %d inputs ran, %lu split into %lu parts\n", argc - 1, n_split, n_parts);
	return rc;
}
#endif
