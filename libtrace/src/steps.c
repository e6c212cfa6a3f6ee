/* steps.c: ProfilerStep#N spans and the launch of every correlation id, for giving GPU work to the step that launched it. */
#include <stdlib.h>

#include "merge_int.h"
#include "steps_int.h"
#include "tracekit/merge.h"
#include "tracekit/stats.h"
#include "tracekit/steps.h"

/* One correlation id (of one rank in a merged trace). */
typedef struct launch {
	uint64_t h;
	int64_t corr;
	int32_t group;  /* the rank of a merged trace, else 0 */
	uint32_t flags; /* HAVE_LAUNCH, HAVE_GPU */
	int64_t ts;     /* the launch's start */
	int64_t gpu;    /* the latest start of its GPU work */
} launch;
enum { HAVE_LAUNCH = 1, HAVE_GPU = 2 };

struct tk_steps {
	tk__map launches; /* launch records */
	int64_t span;     /* pid scheme rank*span+pid, 0 = none */
	tk_step *steps;
	size_t n_steps, cap;
	int finished;
	int keys_only; /* launches are the caller's to record (tk__steps_keys_only) */
};

int tk_steps_new(tk_steps **out)
{
	if (!out)
		return TK_ERR_ARG;
	*out = calloc(1, sizeof **out);
	if (!*out)
		return TK_ERR_NOMEM;
	/* 7/8: 40-80 bytes a correlation id */
	tk__map_init(&(*out)->launches, sizeof(launch), 7);
	return 0;
}

void tk_steps_set_pid_span(tk_steps *s, int64_t span)
{
	if (s && !s->launches.n)
		s->span = span > 0 ? span : 0;
}

int tk__step_number(const tk_event *ev, int64_t *num)
{
	static const char pfx[] = "ProfilerStep#";
	if (ev->ph != 'X' || !(ev->has & TK_HAS_TS) || ev->name.len <= sizeof pfx - 1 ||
	    memcmp(ev->name.ptr, pfx, sizeof pfx - 1) != 0)
		return 0;
	/* the GPU copy of the annotation is not the step */
	if ((ev->has & TK_HAS_CAT) && ev->cat.len == 19 && memcmp(ev->cat.ptr, "gpu_user_annotation", 19) == 0)
		return 0;
	int64_t n = 0;
	for (size_t i = sizeof pfx - 1; i < ev->name.len; i++) {
		if (ev->name.ptr[i] < '0' || ev->name.ptr[i] > '9' || n > INT64_MAX / 20)
			return 0;
		n = n * 10 + (ev->name.ptr[i] - '0');
	}
	*num = n;
	return 1;
}

static int is_ac2g(const tk_event *ev)
{
	return (ev->has & TK_HAS_CAT) && ev->cat.len == 4 && memcmp(ev->cat.ptr, "ac2g", 4) == 0;
}

int tk__steps_wants_args(const tk_event *ev)
{
	if (ev->ph != 'X' || !(ev->has & TK_HAS_CAT))
		return 0;
	int cls = tk_stats_event_class(ev->cat, 1);
	return cls >= TK_STATS_API;
}

/* LAUNCH for a CPU launch, GPU for GPU work, 0 for anything else; the
 * correlation id and the rank group in *corr and *group. cls: the event's
 * tk_stats_event_class() when the caller has it, else -1. */
enum { LAUNCH = 1, GPU = 2 };
static int kind_of(const tk_steps *s, const tk_event *ev, int cls, int64_t *corr, int32_t *group)
{
	int kind = 0;
	*group = 0;
	if (s->span && ev->pid.kind == TK_ID_INT && ev->pid.num >= 0)
		*group = (int32_t)(ev->pid.num / s->span);
	if (ev->ph == 'f' && is_ac2g(ev) && ev->id.kind == TK_ID_INT) {
		/* Kineto's flow from a launch to its kernel: its id is the
		 * correlation id (with the rank in its high bits after trace-merge) */
		*corr = s->span ? ev->id.num ^ ((int64_t)*group << TK__ID_SHIFT) : ev->id.num;
		return GPU;
	}
	if (ev->ph != 'X' || !(ev->has & TK_HAS_CAT) || !(ev->has & TK_HAS_TS) || !ev->args.ptr)
		return 0;
	if (cls < 0)
		cls = tk_stats_event_class(ev->cat, 1);
	if (cls < TK_STATS_API)
		return 0;
	kind = cls == TK_STATS_API ? LAUNCH : GPU;
	tk_sv v;
	if (tk__js_find(ev->args, "correlation", 11, &v) || tk__js_int(v, corr))
		return 0;
	return kind;
}

static int launch_eq(const void *rec, const void *key)
{
	const launch *a = rec, *b = key;
	return a->corr == b->corr && a->group == b->group;
}

static uint64_t launch_hash(int64_t corr, int32_t group)
{
	return tk__mix64((uint64_t)corr ^ ((uint64_t)(uint32_t)group << 41));
}

static int add_step(tk_steps *s, int64_t num, const tk_event *ev)
{
	int64_t end = tk__ev_end(ev->ts, (ev->has & TK_HAS_DUR) ? ev->dur : 0);
	/* threads and ranks repeat a number: one record, over all of them (a
	 * trace has few steps, and they mostly come in order) */
	for (size_t i = s->n_steps; i-- > 0;)
		if (s->steps[i].num == num) {
			if (ev->ts < s->steps[i].ts)
				s->steps[i].ts = ev->ts;
			if (end > s->steps[i].end)
				s->steps[i].end = end;
			return 0;
		}
	if (TK__GROW(s->steps, s->cap, s->n_steps + 1))
		return TK_ERR_NOMEM;
	s->steps[s->n_steps++] = (tk_step){num, ev->ts, end};
	return 0;
}

static int note_launch(tk_steps *s, const tk_event *ev, int kind, int64_t corr, int32_t group);

/* tk_steps_add, with the event's class (-1: not known) and its key out
 * (*kind: LAUNCH, GPU or 0). */
static int add_event(tk_steps *s, const tk_event *ev, int cls, int *kind, int64_t *corr, int32_t *group)
{
	int64_t num;
	*kind = 0;
	if (tk__step_number(ev, &num))
		return add_step(s, num, ev);
	*kind = kind_of(s, ev, cls, corr, group);
	if (!*kind || !(ev->has & TK_HAS_TS) || s->keys_only)
		return 0;
	return note_launch(s, ev, *kind, *corr, *group);
}

int tk_steps_add(tk_steps *s, const tk_event *ev)
{
	if (!s || !ev || s->finished)
		return TK_ERR_ARG;
	int kind;
	int64_t corr;
	int32_t group;
	return add_event(s, ev, -1, &kind, &corr, &group);
}

int tk__steps_add_key(tk_steps *s, const tk_event *ev, int cls, int64_t *corr, int32_t *group, int *kind)
{
	int k, rc = add_event(s, ev, cls, &k, corr, group);
	*kind = !(ev->has & TK_HAS_TS) ? 0 : k == LAUNCH ? TK__STEPS_LAUNCH : k == GPU ? TK__STEPS_GPU : 0;
	return rc;
}

void tk__steps_keys_only(tk_steps *s)
{
	s->keys_only = 1;
}

static int note_launch(tk_steps *s, const tk_event *ev, int kind, int64_t corr, int32_t group)
{
	launch key = {0, corr, group, 0, 0, 0};
	int added;
	launch *l = tk__map_put(&s->launches, launch_hash(corr, group), launch_eq, &key, &added);
	if (!l)
		return TK_ERR_NOMEM;
	if (added) {
		l->corr = corr;
		l->group = group;
	}
	if (kind == LAUNCH && (!(l->flags & HAVE_LAUNCH) || ev->ts < l->ts)) {
		l->flags |= HAVE_LAUNCH;
		l->ts = ev->ts; /* the earliest call of an id launched it */
	} else if (kind == GPU && (!(l->flags & HAVE_GPU) || ev->ts > l->gpu)) {
		l->flags |= HAVE_GPU;
		l->gpu = ev->ts;
	}
	return 0;
}

int tk_steps_add_reader(tk_steps *s, tk_reader *r)
{
	if (!s || !r)
		return TK_ERR_ARG;
	const tk_event *ev;
	int64_t span;
	int rc, first = 1;
	while ((rc = tk_reader_next(r, &ev)) == TK_OK) {
		if (first && tk_merge_pid_span(r, &span) == 0)
			tk_steps_set_pid_span(s, span);
		first = 0;
		if ((rc = tk_steps_add(s, ev)) != 0)
			return rc;
	}
	return rc == TK_EOF ? 0 : rc;
}

static int cmp_step(const void *a, const void *b)
{
	const tk_step *x = a, *y = b;
	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	return (x->num > y->num) - (x->num < y->num);
}

int tk_steps_finish(tk_steps *s)
{
	if (!s || s->finished)
		return TK_ERR_ARG;
	s->finished = 1;
	if (s->n_steps)
		qsort(s->steps, s->n_steps, sizeof *s->steps, cmp_step);
	return 0;
}

size_t tk_steps_count(const tk_steps *s)
{
	return s && s->finished ? s->n_steps : 0;
}

const tk_step *tk_steps_get(const tk_steps *s, size_t i)
{
	return s && s->finished && i < s->n_steps ? &s->steps[i] : NULL;
}

int64_t tk_steps_time(const tk_steps *s, const tk_event *ev, int *by_launch)
{
	if (by_launch)
		*by_launch = 0;
	int64_t corr;
	int32_t group;
	if (!s || kind_of(s, ev, -1, &corr, &group) != GPU)
		return ev->ts;
	launch key = {0, corr, group, 0, 0, 0};
	const launch *l = tk__map_find(&s->launches, launch_hash(corr, group), launch_eq, &key);
	if (!l || !(l->flags & HAVE_LAUNCH))
		return ev->ts;
	if (by_launch)
		*by_launch = 1;
	return l->ts;
}

/* The segment of t among starts[0..n): the last whose start <= t (0 before the first). */
static size_t seg_of(const int64_t *starts, size_t n, int64_t t)
{
	size_t lo = 0, hi = n;
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;
		if (starts[mid] <= t)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

void tk__steps_late_work(const tk_steps *s, const int64_t *starts, size_t n, int64_t *last)
{
	for (size_t k = 0; k < n; k++)
		last[k] = INT64_MIN;
	if (!s || !n)
		return;
	size_t i = 0;
	const launch *l;
	while ((l = tk__map_next(&s->launches, &i)) != NULL) {
		if ((l->flags & (HAVE_LAUNCH | HAVE_GPU)) != (HAVE_LAUNCH | HAVE_GPU))
			continue;
		size_t k = seg_of(starts, n, l->ts);
		if (seg_of(starts, n, l->gpu) > k && l->gpu > last[k])
			last[k] = l->gpu;
	}
}

size_t tk__steps_bytes(const tk_steps *s)
{
	return s ? s->launches.n_slots * s->launches.esize + s->cap * sizeof *s->steps : 0;
}

void tk_steps_free(tk_steps *s)
{
	if (!s)
		return;
	tk__map_free(&s->launches);
	free(s->steps);
	free(s);
}
