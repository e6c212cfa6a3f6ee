/* fuzz_stats.c: fuzz harness for trace-stats' tables (libFuzzer, or a plain main() over files).
 *
 * Each input is read as a trace (any format tracekit detects; the corpus
 * holds Kineto-shaped JSON). Its events (at most MAX_EVENTS) go into three
 * stats objects, with the options trace-stats offers drawn from the
 * input's hash (group by input shape, FLOP mode, a category list):
 *
 *   S1  straight from the reader (the stats see the reader's own strings),
 *       with the args members read ahead as the reader's notes
 *       (tk_stats_note, tk_stats_add_noted);
 *   S2  from the same events written as .tkb into a memory file and read
 *       back (other string pointers, other interning), with the CPU ops'
 *       nesting and the GPU attribution on a thread of its own
 *       (tk_stats_opts.threads);
 *   S3  from copies of the events with a pending budget of 1 to 4 CPU ops,
 *       so that every thread is flushed over and over, and 16 KiB for
 *       the sorting of the steps and launch tables, which spill runs.
 *
 * The invariants:
 *  - S1 and S2 are the same: every operator row and every kernel,
 *    memcpy/memset and API summary row, field by field, the counters, and
 *    every table rendered, byte for byte, in JSON and in one other format
 *    (text, CSV or Markdown, as the options say);
 *  - S3 (whose steps and launch tables also spill their sorting to
 *    files) differs from S1 only where the budget decides (docs: results are
 *    exact while a thread's ops fit): the same rows in the same order
 *    with the same counts, CPU totals and first appearance, the same
 *    device rows and summaries, the same FLOPs unless FLOPs go to the
 *    outermost counted op (extended mode), the same event counters;
 *  - the tables account for every event counted: operator rows count
 *    ops + API calls, device rows and the kernel plus memcpy/memset
 *    summaries count the GPU activities, the API summary the API calls;
 *    a device row's self and total device time are equal, its CPU times
 *    and FLOPs 0, and their sum is the summaries' total; a summary row's
 *    median lies between its minimum and maximum; no more activities are
 *    unattributed than there are;
 *  - the steps table (docs/steps.md) is the same in S1, S2 and S3, and
 *    each row adds up: busy + idle = wall, host wait + kernel wait +
 *    other = idle, compute, communication and memory ops each within
 *    busy and busy within their sum, overlap within compute and within
 *    communication, nothing negative;
 *  - the launch table is the same in S1, S2 and S3; in each row the
 *    delays are in order (min <= p50 <= p90 <= p99 <= max, the mean
 *    between min and max), no more ops launched than ops and no more short
 *    ones than launched, the queue's mean within its maximum; the stream
 *    rows add up to the trace's row;
 *  - the memory table is the same in S1, S2 and S3; in each row no more
 *    allocations and frees than events, no negative byte sums, the peak at
 *    least the final total; the peak and the op at it, after a second read
 *    that stops where the library says no op is left to find, equal to
 *    those worked out in the harness from the events; the same with the
 *    [memory] events moved to the end;
 *  - every table renders, alone and with S1 and S3 side by side as two
 *    ranks, and the JSON renderings are JSON in valid UTF-8;
 *  - the collectives table is the same in S1, S2 and S3, with nothing
 *    negative; S1 against itself as two ranks: every collective matched,
 *    no skew, each counted last once;
 *  - trace-diff's rendering of S1 against S2 (the same figures) is JSON,
 *    every change in it 0 and no row new or gone;
 *  - with the options whose tables depend on each event alone (no steps,
 *    launch, memory or collectives tables, no call paths), the
 *    input and its .tkb copy read on 2 to 4 threads in blocks of 64 bytes
 *    to 4 KiB, the tables' part of each batch made on the parse threads
 *    and taken whole (tk_stats_add_from), give the tables of the same
 *    events added one by one on one thread, field by field. */
#define _GNU_SOURCE
#include "fuzz_events.h"
#include "tracekit/stats.h"
#include "core/buf.h"
#include "core/json_text.h"
#include "internal.h"
#include "par.h"
#include "tkb_int.h"

#define WHO "fuzz_stats"
#define MAX_EVENTS 2048

static const int sum_tables[3] = {TK_STATS_KERNEL, TK_STATS_MEMCPY, TK_STATS_API};

/* The steps tables of a and b, row by row, and each row's sums. */
static void steps_check(const char *what, const tk_stats *a, const tk_stats *b)
{
	size_t n = tk_stats_step_count(a);
	FZ_CHECK(WHO, n == tk_stats_step_count(b), "%s: %zu steps, then %zu", what, n, tk_stats_step_count(b));
	for (size_t i = 0; i < n; i++) {
		const tk_stats_step *x = tk_stats_step_get(a, i), *y = tk_stats_step_get(b, i);
		FZ_CHECK(WHO, memcmp(x, y, sizeof *x) == 0, "%s: step row %zu differs (busy %lld, then %lld)", what, i,
		         (long long)x->busy, (long long)y->busy);
		int64_t parts = x->compute, idle = x->host_wait;
		int sat = 0;
		sat |= (int)__builtin_add_overflow(parts, x->comm, &parts);
		sat |= (int)__builtin_add_overflow(parts, x->mem, &parts);
		sat |= (int)__builtin_add_overflow(idle, x->kernel_wait, &idle);
		sat |= (int)__builtin_add_overflow(idle, x->other_idle, &idle);
		FZ_CHECK(WHO, x->wall >= 0 && x->busy >= 0 && x->idle >= 0 && x->compute >= 0 && x->comm >= 0 &&
		                  x->mem >= 0 && x->overlap >= 0 && x->host_wait >= 0 && x->kernel_wait >= 0 &&
		                  x->other_idle >= 0,
		         "step %lld has a negative time", (long long)x->num);
		if (x->wall == INT64_MAX || sat)
			continue; /* saturated: the sums no longer hold */
		FZ_CHECK(WHO, x->busy + x->idle == x->wall, "step %lld: busy %lld + idle %lld != wall %lld",
		         (long long)x->num, (long long)x->busy, (long long)x->idle, (long long)x->wall);
		FZ_CHECK(WHO, idle == x->idle, "step %lld: host %lld + kernel %lld + other %lld != idle %lld",
		         (long long)x->num, (long long)x->host_wait, (long long)x->kernel_wait, (long long)x->other_idle,
		         (long long)x->idle);
		FZ_CHECK(WHO, x->compute <= x->busy && x->comm <= x->busy && x->mem <= x->busy && x->busy <= parts,
		         "step %lld: busy %lld against compute %lld, comm %lld, memory %lld", (long long)x->num,
		         (long long)x->busy, (long long)x->compute, (long long)x->comm, (long long)x->mem);
		FZ_CHECK(WHO, x->overlap <= x->compute && x->overlap <= x->comm, "step %lld: overlap %lld is more than "
		         "compute %lld or comm %lld", (long long)x->num, (long long)x->overlap, (long long)x->compute,
		         (long long)x->comm);
	}
}

static int str_eq(const char *a, const char *b);
static int dbl_same(double a, double b);

/* The launch tables of a and b, row by row, and each row's order. */
static void launch_check(const char *what, const tk_stats *a, const tk_stats *b)
{
	size_t n = tk_stats_launch_count(a);
	FZ_CHECK(WHO, n == tk_stats_launch_count(b), "%s: %zu launch rows, then %zu", what, n,
	         tk_stats_launch_count(b));
	uint64_t ops = 0, launched = 0;
	for (size_t i = 0; i < n; i++) {
		const tk_stats_launch *x = tk_stats_launch_get(a, i), *y = tk_stats_launch_get(b, i);
		FZ_CHECK(WHO, str_eq(x->stream, y->stream) && str_eq(x->worst, y->worst) && x->ops == y->ops &&
		                  x->launched == y->launched && x->delay_min == y->delay_min &&
		                  x->delay_p50 == y->delay_p50 && x->delay_p90 == y->delay_p90 &&
		                  x->delay_p99 == y->delay_p99 && x->delay_max == y->delay_max &&
		                  dbl_same(x->delay_mean, y->delay_mean) && x->short_ops == y->short_ops &&
		                  x->short_ns == y->short_ns && x->max_queue == y->max_queue &&
		                  dbl_same(x->mean_queue, y->mean_queue),
		         "%s: launch row %zu (%s) differs", what, i, x->stream);
		FZ_CHECK(WHO, x->launched <= x->ops && x->short_ops <= x->launched && x->short_ns >= 0,
		         "launch row %s: %llu ops, %llu launched, %llu short", x->stream, (unsigned long long)x->ops,
		         (unsigned long long)x->launched, (unsigned long long)x->short_ops);
		FZ_CHECK(WHO, !x->launched || (x->delay_min <= x->delay_p50 && x->delay_p50 <= x->delay_p90 &&
		                               x->delay_p90 <= x->delay_p99 && x->delay_p99 <= x->delay_max &&
		                               x->delay_mean >= (double)x->delay_min - 1 &&
		                               x->delay_mean <= (double)x->delay_max + 1),
		         "launch row %s: delays out of order", x->stream);
		FZ_CHECK(WHO, x->max_queue >= 0 && x->mean_queue >= 0 && x->mean_queue <= (double)x->max_queue + 1e-9,
		         "launch row %s: mean queue %g over its maximum %lld", x->stream, x->mean_queue,
		         (long long)x->max_queue);
		if (i) {
			ops += x->ops;
			launched += x->launched;
		}
	}
	if (n)
		FZ_CHECK(WHO, ops == tk_stats_launch_get(a, 0)->ops && launched == tk_stats_launch_get(a, 0)->launched,
		         "the streams hold %llu ops (%llu launched), the trace's row %llu", (unsigned long long)ops,
		         (unsigned long long)launched, (unsigned long long)tk_stats_launch_get(a, 0)->ops);
}

/* The memory tables of a and b, row by row, and each row's sense. */
static void memory_check(const char *what, const tk_stats *a, const tk_stats *b)
{
	size_t n = tk_stats_memory_count(a);
	FZ_CHECK(WHO, n == tk_stats_memory_count(b), "%s: %zu memory rows, then %zu", what, n,
	         tk_stats_memory_count(b));
	for (size_t i = 0; i < n; i++) {
		const tk_stats_memory *x = tk_stats_memory_get(a, i), *y = tk_stats_memory_get(b, i);
		FZ_CHECK(WHO, str_eq(x->device, y->device) && str_eq(x->op_at_peak, y->op_at_peak) &&
		                  x->events == y->events && x->allocs == y->allocs && x->frees == y->frees &&
		                  x->bytes_alloc == y->bytes_alloc && x->bytes_freed == y->bytes_freed &&
		                  x->from_totals == y->from_totals && x->peak_alloc == y->peak_alloc &&
		                  x->peak_ts == y->peak_ts && x->peak_reserved == y->peak_reserved &&
		                  x->reserved_ts == y->reserved_ts && x->final_alloc == y->final_alloc,
		         "%s: memory row %zu (%s) differs", what, i, x->device);
		FZ_CHECK(WHO, x->allocs + x->frees <= x->events && x->events > 0 && x->bytes_alloc >= 0 &&
		                  x->bytes_freed >= 0 && x->peak_alloc >= x->final_alloc && x->peak_reserved >= -1,
		         "memory row %s: %llu events, %llu allocs, %llu frees, peak %lld, final %lld", x->device,
		         (unsigned long long)x->events, (unsigned long long)x->allocs, (unsigned long long)x->frees,
		         (long long)x->peak_alloc, (long long)x->final_alloc);
	}
}

/* ---- the op at each memory peak, worked out here from the events ---- */

/* A thread id as the memory table matches them: a decimal string is its number. */
static int id_same(const tk_id *a, const tk_id *b)
{
	tk_id x[2] = {*a, *b};
	for (int i = 0; i < 2; i++) {
		int64_t v;
		if (x[i].kind == TK_ID_STR && x[i].str.len && x[i].str.len < 20 &&
		    tk__js_int((tk_sv){x[i].str.ptr, x[i].str.len}, &v) == 0)
			x[i] = (tk_id){TK_ID_INT, v, {NULL, 0}};
	}
	if (x[0].kind != x[1].kind)
		return 0;
	if (x[0].kind == TK_ID_INT)
		return x[0].num == x[1].num;
	return x[0].kind != TK_ID_STR ||
	       (x[0].str.len == x[1].str.len && memcmp(x[0].str.ptr, x[1].str.ptr, x[0].str.len) == 0);
}

/* Device dev's peak as the table defines it (docs/steps.md): its [memory]
 * events in time order, torch's totals or the running sum of Bytes, the
 * first highest; then the innermost CPU op of that event's thread running
 * at it, the first of the shortest. NULL: no op; "?": no event. */
static const char *peak_op_of(const fz_events *evs, const tk_stats_memory *row, char *buf, size_t n)
{
	size_t *ix = malloc((evs->n + 1) * sizeof *ix), m = 0;
	FZ_CHECK(WHO, ix != NULL, "out of memory");
	tk_memory_info mi;
	for (size_t i = 0; i < evs->n; i++)
		if ((evs->v[i]->has & TK_HAS_TS) && tk_memory_event(evs->v[i], &mi) && strcmp(mi.device, row->device) == 0)
			ix[m++] = i;
	for (size_t i = 1; i < m; i++) /* stable, by time */
		for (size_t j = i; j > 0 && evs->v[ix[j - 1]]->ts > evs->v[ix[j]]->ts; j--) {
			size_t t = ix[j];
			ix[j] = ix[j - 1];
			ix[j - 1] = t;
		}
	int64_t run = 0, best = INT64_MIN;
	const tk_event *pk = NULL;
	for (size_t k = 0; k < m; k++) {
		tk_memory_event(evs->v[ix[k]], &mi);
		run = tk__sat_add(run, mi.bytes);
		int64_t a = row->from_totals ? mi.allocated : run;
		if (a > best) {
			best = a;
			pk = evs->v[ix[k]];
		}
	}
	free(ix);
	if (!pk)
		return "?";
	FZ_CHECK(WHO, best == row->peak_alloc && pk->ts == row->peak_ts, "memory row %s: peak %lld at %lld, worked out %lld at %lld",
	         row->device, (long long)row->peak_alloc, (long long)row->peak_ts, (long long)best, (long long)pk->ts);
	const tk_event *op = NULL;
	int64_t od = INT64_MAX;
	for (size_t i = 0; i < evs->n; i++) {
		const tk_event *e = evs->v[i];
		if (e->ph != 'X' || !(e->has & TK_HAS_TS) || !e->name.ptr ||
		    tk_stats_event_class(e->cat, (e->has & TK_HAS_CAT) != 0) != TK_STATS_OP || !id_same(&e->pid, &pk->pid) ||
		    !id_same(&e->tid, &pk->tid))
			continue;
		int64_t d = (e->has & TK_HAS_DUR) && e->dur > 0 ? e->dur : 0;
		if (e->ts <= pk->ts && tk__ev_end(e->ts, d) >= pk->ts && d < od) {
			od = d;
			op = e;
		}
	}
	if (!op)
		return NULL;
	snprintf(buf, n, "%.*s", (int)(op->name.len < n - 1 ? op->name.len : n - 1), op->name.ptr);
	return buf;
}

/* s's op at each peak, after the first read and the second (fed until no
 * op is left to find), against the one worked out from the events. */
static void peak_ops_check(const char *what, tk_stats *s, const fz_events *evs)
{
	for (size_t i = 0; i < evs->n && tk_stats_memory_ops_left(s); i++)
		FZ_CHECK(WHO, tk_stats_memory_op(s, evs->v[i]) == TK_OK, "%s: the second read fails", what);
	char buf[256];
	for (size_t i = 0; i < tk_stats_memory_count(s); i++) {
		const tk_stats_memory *row = tk_stats_memory_get(s, i);
		const char *want = peak_op_of(evs, row, buf, sizeof buf);
		if (want && strcmp(want, "?") == 0)
			continue;
		FZ_CHECK(WHO, strncmp(row->op_at_peak, want ? want : "", sizeof buf - 1) == 0,
		         "%s: memory row %s: the op at the peak is '%s', worked out '%s'", what, row->device, row->op_at_peak,
		         want ? want : "");
	}
}

/* The collectives tables of a and b, and a against itself as two ranks. */
static void coll_check(const char *what, tk_stats *a, const tk_stats *b)
{
	size_t n = tk_stats_collective_count(a);
	FZ_CHECK(WHO, n == tk_stats_collective_count(b), "%s: %zu collective rows, then %zu", what, n,
	         tk_stats_collective_count(b));
	uint64_t kernels = 0;
	for (size_t i = 0; i < n; i++) {
		const tk_stats_collective *x = tk_stats_collective_get(a, i), *y = tk_stats_collective_get(b, i);
		FZ_CHECK(WHO, str_eq(x->kind, y->kind) && str_eq(x->group, y->group) && x->count == y->count &&
		                  x->bytes == y->bytes && x->time == y->time && dbl_same(x->algbw, y->algbw) &&
		                  dbl_same(x->busbw, y->busbw) && x->ranks == y->ranks,
		         "%s: collective row %zu (%s) differs", what, i, x->kind);
		FZ_CHECK(WHO, x->count > 0 && x->bytes >= 0 && x->time >= 0 && x->algbw >= 0 && x->busbw >= 0,
		         "collective row %s: a negative figure", x->kind);
		kernels += x->count;
	}
	tk_stats *two[2] = {a, a};
	tk_stats_straggler st[2];
	uint64_t inst = 0;
	int64_t skew = -1;
	int rc = tk_stats_stragglers(two, 2, st, &inst, &skew);
	FZ_CHECK(WHO, rc == TK_OK || rc == TK_ERR_NOMEM, "stragglers fail: %s", tk_strerror(rc));
	if (rc == TK_OK)
		FZ_CHECK(WHO, inst == kernels && skew == 0 && st[0].last + st[1].last == inst &&
		                  st[0].instances == inst && st[1].instances == inst && st[0].late_total == 0 &&
		                  st[1].late_total == 0,
		         "a trace against itself: %llu of %llu collectives matched, skew %lld", (unsigned long long)inst,
		         (unsigned long long)kernels, (long long)skew);
}

/* The call paths (opts.flame): callers first, self times not below 0, each
 * total its self and its callees' totals; the folded lines' counts add up to
 * the self times; the same paths after a .tkb round trip, and merged with
 * them, the same paths with the times summed. */
static void flame_check(const char *what, tk_stats *a, const tk_stats *b)
{
	size_t n = tk_stats_frame_count(a);
	int64_t *sum = calloc(n ? n : 1, sizeof *sum), self = 0;
	FZ_CHECK(WHO, sum != NULL, "out of memory");
	for (size_t i = 0; i < n; i++) {
		const tk_stats_frame *f = tk_stats_frame_get(a, i);
		FZ_CHECK(WHO, f->parent == SIZE_MAX || f->parent < i, "path %zu comes before its caller", i);
		FZ_CHECK(WHO, f->self_ns >= 0, "path %zu's self time is below 0", i);
		self = tk__sat_add(self, f->self_ns);
	}
	for (size_t i = n; i-- > 0;) {
		const tk_stats_frame *f = tk_stats_frame_get(a, i);
		FZ_CHECK(WHO, f->total_ns == tk__sat_add(f->self_ns, sum[i]), "path %zu's total is not its self and its callees'", i);
		if (f->parent != SIZE_MAX)
			sum[f->parent] = tk__sat_add(sum[f->parent], f->total_ns);
	}
	free(sum);
	char *txt = NULL;
	size_t len = 0;
	FZ_CHECK(WHO, tk_stats_format_folded(&a, 1, &txt, &len) == 0, "no folded stacks");
	int64_t folded = 0;
	for (char *line = txt; line < txt + len;) {
		char *nl = memchr(line, '\n', (size_t)(txt + len - line)), *sp = NULL;
		FZ_CHECK(WHO, nl != NULL, "a folded line without its end");
		for (char *p = line; p < nl; p++)
			if (*p == ' ')
				sp = p;
		FZ_CHECK(WHO, sp && sp > line && sp + 1 < nl, "a folded line without a path and a count");
		long long c = strtoll(sp + 1, NULL, 10);
		FZ_CHECK(WHO, c > 0, "a folded count of 0 or less");
		folded = tk__sat_add(folded, c);
		line = nl + 1;
	}
	FZ_CHECK(WHO, folded == self, "the folded counts (%lld) are not the self times (%lld)", (long long)folded,
	         (long long)self);
	free(txt);
	FZ_CHECK(WHO, tk_stats_frame_count(b) == n, "%s: %zu paths, not %zu", what, tk_stats_frame_count(b), n);
	for (size_t i = 0; i < n; i++) {
		const tk_stats_frame *x = tk_stats_frame_get(a, i), *y = tk_stats_frame_get(b, i);
		FZ_CHECK(WHO, strcmp(x->name, y->name) == 0 && x->parent == y->parent && x->self_ns == y->self_ns,
		         "%s: path %zu differs", what, i);
	}
	/* the two as one set: the same paths, in the same order, times summed */
	tk_stats *ab[2] = {a, (tk_stats *)b};
	tk_stats_frame *m = NULL;
	size_t nm = 0;
	FZ_CHECK(WHO, tk_stats_frames_merge(ab, 2, &m, &nm) == 0, "no merged paths");
	FZ_CHECK(WHO, nm == n, "%s: merged with itself, %zu paths, not %zu", what, nm, n);
	for (size_t i = 0; i < n; i++) {
		const tk_stats_frame *x = tk_stats_frame_get(a, i), *y = tk_stats_frame_get(b, i);
		FZ_CHECK(WHO, strcmp(m[i].name, x->name) == 0 && m[i].parent == x->parent &&
		                  m[i].self_ns == tk__sat_add(x->self_ns, y->self_ns) &&
		                  m[i].total_ns == tk__sat_add(x->total_ns, y->total_ns),
		         "%s: merged path %zu is not the sum of its two", what, i);
	}
	free(m);
}

static int str_eq(const char *a, const char *b)
{
	return strcmp(a ? a : "", b ? b : "") == 0;
}

static int dbl_same(double a, double b)
{
	return memcmp(&a, &b, sizeof a) == 0;
}

/* What the pending budget cannot change in an operator row. */
static int op_same_shape(const tk_stats_op *a, const tk_stats_op *b, int flops)
{
	return str_eq(a->name, b->name) && str_eq(a->shapes, b->shapes) && a->is_device == b->is_device &&
	       a->count == b->count && a->cpu_total == b->cpu_total && a->first == b->first &&
	       (!flops || a->flops == b->flops);
}

static int op_same(const tk_stats_op *a, const tk_stats_op *b)
{
	return op_same_shape(a, b, 1) && a->self_cpu == b->self_cpu && a->self_dev == b->self_dev &&
	       a->dev_total == b->dev_total;
}

static int sum_same(const tk_stats_sum *a, const tk_stats_sum *b)
{
	return str_eq(a->name, b->name) && a->count == b->count && a->total == b->total && a->min == b->min &&
	       a->max == b->max && dbl_same(a->avg, b->avg) && dbl_same(a->med, b->med) &&
	       dbl_same(a->stddev, b->stddev) && a->bytes == b->bytes;
}

/* S3 against S1: exact == 0 where the budget may decide. */
static void compare(const char *what, const tk_stats *a, const tk_stats *b, int exact, int flops_fixed)
{
	size_t n = tk_stats_op_count(a);
	FZ_CHECK(WHO, n == tk_stats_op_count(b), "%s: %zu operator rows against %zu", what, n, tk_stats_op_count(b));
	for (size_t i = 0; i < n; i++) {
		const tk_stats_op *x = tk_stats_op_get(a, i), *y = tk_stats_op_get(b, i);
		int same = exact || x->is_device ? op_same(x, y) : op_same_shape(x, y, flops_fixed);
		FZ_CHECK(WHO, same, "%s: operator row %zu ('%s') differs", what, i, x->name);
	}
	for (int t = 0; t < 3; t++) {
		size_t k = tk_stats_sum_count(a, sum_tables[t]);
		FZ_CHECK(WHO, k == tk_stats_sum_count(b, sum_tables[t]), "%s: summary %d has %zu rows against %zu",
		         what, sum_tables[t], k, tk_stats_sum_count(b, sum_tables[t]));
		for (size_t i = 0; i < k; i++)
			FZ_CHECK(WHO, sum_same(tk_stats_sum_get(a, sum_tables[t], i), tk_stats_sum_get(b, sum_tables[t], i)),
			         "%s: summary %d row %zu ('%s') differs", what, sum_tables[t], i,
			         tk_stats_sum_get(a, sum_tables[t], i)->name);
	}
	const tk_stats_info *p = tk_stats_get_info(a), *q = tk_stats_get_info(b);
	FZ_CHECK(WHO, p->events == q->events && p->ops == q->ops && p->apis == q->apis && p->device == q->device &&
	         p->ts_min == q->ts_min && p->ts_max == q->ts_max,
	         "%s: the counters differ", what);
	if (exact)
		FZ_CHECK(WHO, p->unattributed == q->unattributed && p->late == q->late, "%s: the counters differ", what);
}

/* Every event counted is in the tables once (sums wrap as the library's do). */
static void accounting(const tk_stats *s)
{
	const tk_stats_info *in = tk_stats_get_info(s);
	uint64_t cpu_count = 0, dev_count = 0, dev_self = 0, dev_total = 0, sum_dev_count = 0, sum_dev_total = 0;
	for (size_t i = 0; i < tk_stats_op_count(s); i++) {
		const tk_stats_op *o = tk_stats_op_get(s, i);
		FZ_CHECK(WHO, o->count > 0 && o->name, "operator row %zu is empty", i);
		if (o->is_device) {
			FZ_CHECK(WHO, o->self_dev == o->dev_total && !o->self_cpu && !o->cpu_total && !o->flops,
			         "device row '%s': self %lld, total %lld device time, cpu %lld/%lld, flops %llu", o->name,
			         (long long)o->self_dev, (long long)o->dev_total, (long long)o->self_cpu,
			         (long long)o->cpu_total, (unsigned long long)o->flops);
			dev_count += o->count;
			dev_self += (uint64_t)o->self_dev;
			dev_total += (uint64_t)o->dev_total;
		} else {
			cpu_count += o->count;
		}
	}
	FZ_CHECK(WHO, cpu_count == in->ops + in->apis, "operator rows count %llu, ops + API calls are %llu",
	         (unsigned long long)cpu_count, (unsigned long long)(in->ops + in->apis));
	FZ_CHECK(WHO, dev_count == in->device, "device rows count %llu, GPU activities are %llu",
	         (unsigned long long)dev_count, (unsigned long long)in->device);
	uint64_t api_count = 0;
	for (int t = 0; t < 3; t++)
		for (size_t i = 0; i < tk_stats_sum_count(s, sum_tables[t]); i++) {
			const tk_stats_sum *r = tk_stats_sum_get(s, sum_tables[t], i);
			FZ_CHECK(WHO, r->count > 0 && r->name && r->min <= r->max, "summary row '%s': count %llu, min %lld, max %lld",
			         r->name, (unsigned long long)r->count, (long long)r->min, (long long)r->max);
			FZ_CHECK(WHO, r->med >= (double)r->min && r->med <= (double)r->max,
			         "summary row '%s': median %g outside [%lld, %lld]", r->name, r->med, (long long)r->min,
			         (long long)r->max);
			if (sum_tables[t] == TK_STATS_API) {
				api_count += r->count;
			} else {
				sum_dev_count += r->count;
				sum_dev_total += (uint64_t)r->total;
			}
		}
	FZ_CHECK(WHO, api_count == in->apis, "the API summary counts %llu calls of %llu",
	         (unsigned long long)api_count, (unsigned long long)in->apis);
	FZ_CHECK(WHO, sum_dev_count == in->device, "the kernel and memcpy summaries count %llu of %llu activities",
	         (unsigned long long)sum_dev_count, (unsigned long long)in->device);
	FZ_CHECK(WHO, dev_self == sum_dev_total && dev_total == sum_dev_total,
	         "device rows hold %llu ns, the summaries %llu", (unsigned long long)dev_self,
	         (unsigned long long)sum_dev_total);
	FZ_CHECK(WHO, in->unattributed <= in->device, "%llu of %llu activities unattributed",
	         (unsigned long long)in->unattributed, (unsigned long long)in->device);
}

/* The JSON rendering is one JSON value, valid UTF-8 (trailing white space aside). */
static void check_json(const char *what, const char *txt, size_t len)
{
	tk__buf c = {0};
	int repaired = 0;
	size_t n = len;
	while (n && (txt[n - 1] == '\n' || txt[n - 1] == ' '))
		n--;
	int rc = tk__json_canon_text(&c, txt, n, 0, &repaired);
	FZ_CHECK(WHO, rc == TK_ERR_NOMEM || (rc == TK_OK && !repaired), "%s: the JSON table is not JSON (%s): %.*s",
	         what, repaired ? "invalid UTF-8" : tk_strerror(rc), (int)(len > 400 ? 400 : len), txt);
	tk__buf_free(&c);
}

/* Table t (-1: operators) of the n objects in format o->format; NULL when
 * the library refused it (out of memory only: that is checked). */
static char *render(tk_stats *const *s, size_t n, int t, const tk_table_opts *o, size_t *len)
{
	char *txt = NULL;
	int rc = t < 0 ? tk_stats_format_ops(s, n, o, &txt, len)
	         : t == 3 ? tk_stats_format_steps(s, n, o, &txt, len)
	         : t == 4 ? tk_stats_format_launch(s, n, o, &txt, len)
	         : t == 5 ? tk_stats_format_memory(s, n, o, &txt, len)
	         : t == 6 ? tk_stats_format_collectives(s, n, o, &txt, len)
	                  : tk_stats_format_sum(s, n, sum_tables[t], o, &txt, len);
	FZ_CHECK(WHO, rc == TK_OK || rc == TK_ERR_NOMEM, "table %d of %zu objects fails to render: %s", t, n,
	         tk_strerror(rc));
	if (rc == TK_OK && o->format == TK_TABLE_JSON)
		check_json(n > 1 ? "ranks" : "one", txt, *len);
	return rc == TK_OK ? txt : NULL;
}

/* The diff of two stats objects with the same figures: nothing changed. */
static void diff_same(tk_stats *s1, tk_stats *s2)
{
	static const int whiches[] = {TK_STATS_OP, TK_STATS_KERNEL, TK_STATS_MEMCPY, TK_STATS_API, TK_DIFF_STEPS};
	static const char *const labels[] = {"base", "new"};
	tk_table_opts o = {TK_TABLE_JSON, NULL, -1, NULL, NULL, 0, labels};
	for (size_t w = 0; w < sizeof whiches / sizeof whiches[0]; w++) {
		char *txt = NULL;
		size_t len = 0;
		int rc = tk_stats_format_diff(s1, s2, whiches[w], &o, &txt, &len);
		FZ_CHECK(WHO, rc == TK_OK || rc == TK_ERR_NOMEM, "diff %d fails to render: %s", whiches[w], tk_strerror(rc));
		if (rc)
			continue;
		check_json("diff", txt, len);
		FZ_CHECK(WHO, !strstr(txt, "\"status\":\"new\"") && !strstr(txt, "\"status\":\"gone\""),
		         "diff %d of equal stats has a row on one side only", whiches[w]);
		for (const char *p = strstr(txt, "_change\":"); p; p = strstr(p + 1, "_change\":")) {
			const char *v = p + 9;
			FZ_CHECK(WHO, v[0] == '0' && !(v[1] >= '0' && v[1] <= '9'), "diff %d of equal stats changes: %.40s",
			         whiches[w], p);
		}
		free(txt);
	}
}

static void tables(tk_stats *s1, tk_stats *s2, tk_stats *s3, unsigned b)
{
	static const char *const sorts[] = {NULL, "self_cpu_time_total", "cpu_time_total", "self_cuda_time_total",
	                                    "cuda_time_total", "count", "flops", "cpu_time", "cuda_time", "none"};
	static const char *const units[] = {NULL, "s", "ms", "us", "ns"};
	static const char *const labels[] = {"rank 0", "rank \"1\"\n"};
	tk_table_opts o = {0, sorts[b % 10], (b >> 4) & 1 ? 3 : -1, units[(b >> 5) % 5], NULL, 1, NULL};
	/* one format per input (the options pick it), JSON every time */
	int formats[2] = {(int)((b >> 8) & 3), TK_TABLE_JSON};
	for (int k = formats[0] == TK_TABLE_JSON; k < 2; k++) {
		int f = formats[k];
		o.format = f;
		for (int t = -1; t < 7; t++) { /* 3: steps, 4: launch, 5: memory, 6: collectives */
			size_t l1 = 0, l2 = 0, l3 = 0;
			o.labels = NULL;
			char *a = render(&s1, 1, t, &o, &l1), *c = render(&s2, 1, t, &o, &l2);
			FZ_CHECK(WHO, !a || !c || (l1 == l2 && memcmp(a, c, l1) == 0),
			         "table %d in format %d differs after a .tkb round trip:\n%s\n--\n%s", t, f, a, c);
			free(a);
			free(c);
			tk_stats *both[2] = {s1, s3};
			o.labels = labels;
			free(render(both, 2, t, &o, &l3));
		}
	}
}

static tk_stats *new_stats(const tk_stats_opts *so)
{
	tk_stats *s = NULL;
	if (tk_stats_new(&s, so) != TK_OK) {
		tk_stats_free(s);
		return NULL;
	}
	return s;
}

/* The events with the [memory] ones moved to the end, as the Kineto traces
 * at hand write them: the same peaks, and the same op at each (the ops'
 * order is the same), found by the second read. */
static void memory_late(const tk_stats_opts *so, const fz_events *evs, const tk_stats *s1)
{
	fz_events late = {0};
	tk_memory_info mi;
	late.v = malloc((evs->n + 1) * sizeof *late.v);
	FZ_CHECK(WHO, late.v != NULL, "out of memory");
	for (int pass = 0; pass < 2; pass++)
		for (size_t i = 0; i < evs->n; i++)
			if ((tk_memory_event(evs->v[i], &mi) != 0) == pass)
				late.v[late.n++] = evs->v[i];
	tk_stats *s = new_stats(so);
	int ok = s != NULL;
	for (size_t i = 0; ok && i < late.n; i++)
		ok = tk_stats_add(s, late.v[i]) == TK_OK;
	if (ok && tk_stats_finish(s) == TK_OK) {
		peak_ops_check("with the [memory] events last", s, &late);
		memory_check("with the [memory] events last", s1, s);
	}
	tk_stats_free(s);
	free(late.v);
}

/* The tables of the reader opened by open (on one thread, event by
 * event, or on `threads` with the batches taken whole) into s: 0 or -1. */
static int read_into(tk_stats *s, tk_reader *r, int whole)
{
	const tk_event *ev;
	int rc;
	while ((rc = tk_reader_next(r, &ev)) == TK_OK) {
		int arc = whole ? tk_stats_add_from(s, r, ev) : tk_stats_add(s, ev);
		FZ_CHECK(WHO, arc != TK_ERR_ARG, "a batch's event was refused: %s", tk_stats_error(s));
		if (arc)
			return -1;
	}
	return tk_stats_finish(s) == TK_OK ? 0 : -1;
}

/* S5 (data read on threads, or the .tkb at fd) against S6 (one thread,
 * event by event), with the options the batches serve. */
static void batches_check(const char *what, const uint8_t *data, size_t size, int fd, const tk_stats_opts *so0,
                          unsigned b)
{
	tk_stats_opts so = {0};
	so.flops = so0->flops;
	so.cats = so0->cats;
	so.group_by_shapes = so0->group_by_shapes;
	so.threads = 2;
	tk_reader_opts ro = {.max_value_bytes = 1 << 20, .max_depth = 64};
	tk_reader_opts rt = ro;
	rt.threads = 2 + b % 3;
	rt.note_fn = tk_stats_note;
	rt.note_ctx = &so;
	rt.note_size = tk_stats_note_size();
	tk__par_block_bytes = (size_t)64 << (b / 3 % 7);
	tk__tkb_batch = (size_t)256 << (b / 21 % 8);
	tk_reader *r5 = NULL, *r6 = NULL;
	tk_stats *s5 = NULL, *s6 = NULL;
	int ok;
	size_t tkb_batch = tk__tkb_batch;
	if (fd >= 0) {
		/* one reader after the other from the start of the file */
		lseek(fd, 0, SEEK_SET);
		ok = tk_reader_open_fd(&r6, fd, "(tkb)", &ro) == TK_OK && (s6 = new_stats(&so)) && read_into(s6, r6, 0) == 0;
		lseek(fd, 0, SEEK_SET);
		ok = ok && tk_reader_open_fd(&r5, fd, "(tkb)", &rt) == TK_OK && (s5 = new_stats(&so)) &&
		     read_into(s5, r5, 1) == 0;
	} else {
		ok = tk_reader_open_memory(&r6, data, size, "(fuzz)", &ro) == TK_OK &&
		     tk_reader_open_memory(&r5, data, size, "(fuzz)", &rt) == TK_OK && (s5 = new_stats(&so)) &&
		     (s6 = new_stats(&so)) && read_into(s6, r6, 0) == 0 && read_into(s5, r5, 1) == 0;
	}
	tk__par_block_bytes = 0;
	tk__tkb_batch = tkb_batch;
	if (ok)
		compare(what, s6, s5, 1, 1);
	tk_stats_free(s5);
	tk_stats_free(s6);
	tk_reader_free(r5);
	tk_reader_free(r6);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fz_opts fo = fz_opts_of(data, size);
	unsigned b = fz_byte(&fo), b2 = fz_byte(&fo);
	static const char *const cats[] = {NULL, "cpu_op,kernel,cuda_runtime,gpu_memcpy,gpu_memset,user_annotation,Foo"};
	tk_stats_opts so = {0};
	so.group_by_shapes = b & 1;
	so.flops = (int)((b >> 1) % 3);
	so.cats = cats[(b >> 3) & 1];
	so.step_table = 1;
	so.launch_table = 1;
	so.memory_table = 1;
	so.collective_table = 1;
	so.flame = (b >> 4) & 1;
	tk_reader_opts ro = {.max_value_bytes = 1 << 20, .max_depth = 64};
	/* S1 takes the args members read ahead (tk_stats_note); S2 and S3 read them */
	tk_reader_opts ro1 = ro;
	ro1.note_fn = tk_stats_note;
	ro1.note_ctx = &so;
	ro1.note_size = tk_stats_note_size();
	tk_reader *r = NULL;
	tk_stats *s1 = NULL, *s2 = NULL, *s3 = NULL;
	tk_writer *w = NULL;
	fz_events evs = {0};
	int fd = memfd_create(WHO, 0), ok = fd >= 0;
	tk_writer_opts wo = {.format = TK_FORMAT_TKB};
	ok = ok && tk_reader_open_memory(&r, data, size, "(fuzz)", &ro1) == TK_OK;
	ok = ok && (s1 = new_stats(&so)) && tk_writer_open_fd(&w, fd, "(memfd)", &wo) == TK_OK;
	const tk_event *ev;
	while (ok && evs.n < MAX_EVENTS && tk_reader_next(r, &ev) == TK_OK) {
		ok = tk_stats_add_noted(s1, ev, tk_reader_event_note(r)) == TK_OK && fz_events_push(&evs, ev) == 0 &&
		     tk_writer_write(w, ev) == TK_OK;
	}
	ok = ok && tk_writer_close(w) == TK_OK;
	/* S2: the .tkb read back, the nesting on its thread */
	tk_stats_opts so2 = so;
	so2.threads = 2;
	if (ok && (s2 = new_stats(&so2))) {
		tk_reader *r2 = NULL;
		lseek(fd, 0, SEEK_SET);
		FZ_CHECK(WHO, tk_reader_open_fd(&r2, fd, "(tkb)", &ro) == TK_OK, "the .tkb copy does not open");
		int rc = tk_stats_add_reader(s2, r2);
		FZ_CHECK(WHO, rc == TK_OK || rc == TK_ERR_NOMEM, "the .tkb copy fails: %s", tk_stats_error(s2));
		ok = rc == TK_OK;
		tk_reader_free(r2);
	}
	/* S3: a pending budget of a few ops, and 16 KiB for the steps and
	 * launch tables' sorters: a few dozen records, then runs spilled and
	 * merged */
	tk_stats_opts so3 = so;
	so3.max_pending = 1 + (b2 & 3);
	so3.memory_bytes = 16 << 10;
	ok = ok && s2 && (s3 = new_stats(&so3));
	for (size_t i = 0; ok && i < evs.n; i++)
		ok = tk_stats_add(s3, evs.v[i]) == TK_OK;
	ok = ok && tk_stats_finish(s1) == TK_OK && tk_stats_finish(s2) == TK_OK && tk_stats_finish(s3) == TK_OK;
	if (ok) {
		compare("after a .tkb round trip", s1, s2, 1, 1);
		compare("with a pending budget of a few ops", s1, s3, 0, so.flops != TK_FLOPS_EXTENDED);
		steps_check("after a .tkb round trip", s1, s2);
		steps_check("with a pending budget of a few ops", s1, s3);
		launch_check("after a .tkb round trip", s1, s2);
		launch_check("with a pending budget of a few ops", s1, s3);
		memory_check("after a .tkb round trip", s1, s2);
		memory_check("with a pending budget of a few ops", s1, s3);
		peak_ops_check("in file order", s1, &evs);
		peak_ops_check("in file order, from the .tkb copy", s2, &evs);
		memory_late(&so, &evs, s1);
		coll_check("after a .tkb round trip", s1, s2);
		coll_check("with a pending budget of a few ops", s1, s3);
		accounting(s1);
		accounting(s3);
		tables(s1, s2, s3, b2 >> 2 | fz_byte(&fo) << 8);
		diff_same(s1, s2);
		batches_check("with the batches taken whole", data, size, -1, &so, b2);
		batches_check("with the .tkb copy's batches taken whole", NULL, 0, fd, &so, b2 >> 1);
		if (so.flame) {
			flame_check("after a .tkb round trip", s1, s2);
			/* the other tables are the same without the paths */
			tk_stats_opts so4 = so;
			so4.flame = 0;
			tk_stats *s4 = new_stats(&so4);
			int ok4 = s4 != NULL;
			for (size_t i = 0; ok4 && i < evs.n; i++)
				ok4 = tk_stats_add(s4, evs.v[i]) == TK_OK;
			if (ok4 && tk_stats_finish(s4) == TK_OK) {
				compare("without the call paths", s1, s4, 1, 1);
				steps_check("without the call paths", s1, s4);
			}
			tk_stats_free(s4);
		}
	}
	tk_stats_free(s1);
	tk_stats_free(s2);
	tk_stats_free(s3);
	tk_writer_free(w);
	tk_reader_free(r);
	fz_events_free(&evs);
	if (fd >= 0)
		close(fd);
	return 0;
}

#ifndef TK_LIBFUZZER
#include "fuzz_files.h"

int main(int argc, char **argv)
{
	int rc = tk_fuzz_files(argc, argv, NULL);
	printf(WHO ": %d inputs ran\n", argc - 1);
	return rc;
}
#endif
