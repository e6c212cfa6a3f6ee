/* steps.c: ProfilerStep#N spans, and the launch of every correlation id sorted in bounded memory into runs of ids launched in one part, for giving GPU work to the part of the step that launched it. */
#include <stdlib.h>

#include "merge_int.h"
#include "sort_int.h"
#include "steps_int.h"
#include "tracekit/merge.h"
#include "tracekit/stats.h"
#include "tracekit/steps.h"

/* The launches: through a sorter by correlation id until the parts are
 * known, then a stretch of ids launched in one part as one run. */
typedef struct run {
	int64_t corr; /* the first id of the stretch */
	int64_t part; /* the part of its launches; -1: ids without a launch */
} run;

typedef struct grp {
	int32_t group; /* the rank of a merged trace, else 0 */
	run *runs;     /* ascending corr */
	size_t n, cap;
} grp;

struct tk_steps {
	int64_t span; /* pid scheme rank*span+pid, 0 = none */
	tk_step *steps;
	size_t n_steps, cap;
	int finished;
	int keys_only; /* launches are the caller's to record (tk__steps_keys_only) */
	/* before tk_steps_parts: every launch and GPU start, by correlation id */
	tk_sorter *so;
	size_t memory;
	char *tmpdir;
	/* after: the runs of each group (sorted by group), the parts' starts */
	grp *grps;
	size_t n_grps, grps_cap;
	int64_t *starts, *late;
	size_t n_starts;
	size_t n_runs;
	tk__err err;
};

int tk_steps_new(tk_steps **out)
{
	if (!out)
		return TK_ERR_ARG;
	*out = calloc(1, sizeof **out);
	return *out ? 0 : TK_ERR_NOMEM;
}

int tk_steps_set_memory(tk_steps *s, size_t bytes, const char *tmpdir)
{
	if (!s || s->so || s->finished)
		return TK_ERR_ARG;
	char *t = tmpdir ? strdup(tmpdir) : NULL;
	if (tmpdir && !t)
		return TK_ERR_NOMEM;
	free(s->tmpdir);
	s->tmpdir = t;
	s->memory = bytes;
	return 0;
}

void tk_steps_set_pid_span(tk_steps *s, int64_t span)
{
	if (s && !s->so)
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

/* Kineto's flow from a launch to its GPU work: "ac2g", or, in the traces
 * of 2021 and before, "async" named "launch". */
static int is_launch_flow(const tk_event *ev)
{
	if (!(ev->has & TK_HAS_CAT))
		return 0;
	if (ev->cat.len == 4 && memcmp(ev->cat.ptr, "ac2g", 4) == 0)
		return 1;
	return ev->cat.len == 5 && memcmp(ev->cat.ptr, "async", 5) == 0 && (ev->has & TK_HAS_NAME) &&
	       ev->name.len == 6 && memcmp(ev->name.ptr, "launch", 6) == 0;
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
	if (ev->ph == 'f' && is_launch_flow(ev) && ev->id.kind == TK_ID_INT) {
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

/* The sorter's record of a launch or a GPU start: the key is the
 * correlation id, the tag the group and the kind, the record the time. */
static uint64_t rec_tag(int32_t group, int kind)
{
	return (uint64_t)(uint32_t)group << 1 | (kind == GPU);
}

static int sort_fail(tk_steps *s, int rc)
{
	rc = rc < 0 ? rc : TK_ERR_IO;
	const char *m = s->so ? tk_sorter_error(s->so) : "";
	return tk__err_set(&s->err, rc, "the launches of the steps: %s", *m ? m : tk_strerror(rc));
}

static int note_launch(tk_steps *s, const tk_event *ev, int kind, int64_t corr, int32_t group)
{
	if (s->err.code)
		return s->err.code;
	if (!s->so) {
		tk_sorter_opts o = {s->memory ? s->memory : TK_STEPS_MEMORY_DEFAULT, s->tmpdir};
		int rc = tk_sorter_new(&s->so, &o);
		if (rc)
			return sort_fail(s, rc);
	}
	int64_t ts = ev->ts;
	int rc = tk__sorter_add_rec(s->so, corr, &ts, sizeof ts, rec_tag(group, kind));
	return rc ? sort_fail(s, rc) : 0;
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

/* The first group >= group among s->grps. */
static size_t grp_at(const tk_steps *s, int32_t group)
{
	size_t lo = 0, hi = s->n_grps;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (s->grps[mid].group < group)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static grp *grp_add(tk_steps *s, int32_t group)
{
	size_t at = grp_at(s, group);
	if (at < s->n_grps && s->grps[at].group == group)
		return &s->grps[at];
	if (TK__GROW(s->grps, s->grps_cap, s->n_grps + 1))
		return NULL;
	memmove(&s->grps[at + 1], &s->grps[at], (s->n_grps - at) * sizeof *s->grps);
	s->n_grps++;
	s->grps[at] = (grp){group, NULL, 0, 0};
	return &s->grps[at];
}

/* One correlation id of one group, from its records: its launch (the
 * earliest call) and the latest start of its GPU work. */
typedef struct one {
	int32_t group;
	int flags;
	int64_t launch, gpu;
} one;
enum { HAVE_LAUNCH = 1, HAVE_GPU = 2 };

/* The ids of one key are done: each starts a run where its part differs
 * from the part of the group's previous id. */
static int place_key(tk_steps *s, int64_t corr, const one *o, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		int64_t part = -1;
		if (o[i].flags & HAVE_LAUNCH) {
			size_t k = seg_of(s->starts, s->n_starts, o[i].launch);
			part = (int64_t)k;
			if ((o[i].flags & HAVE_GPU) && seg_of(s->starts, s->n_starts, o[i].gpu) > k &&
			    o[i].gpu > s->late[k])
				s->late[k] = o[i].gpu;
		}
		grp *g = grp_add(s, o[i].group);
		if (!g)
			return TK_ERR_NOMEM;
		if (g->n && g->runs[g->n - 1].part == part)
			continue;
		if (TK__GROW(g->runs, g->cap, g->n + 1))
			return TK_ERR_NOMEM;
		g->runs[g->n++] = (run){corr, part};
		s->n_runs++;
	}
	return 0;
}

/* Reads the sorter back in order of correlation id. */
static int place_all(tk_steps *s)
{
	int rc = tk_sorter_finish(s->so);
	if (rc)
		return sort_fail(s, rc);
	one *o = NULL;
	size_t n = 0, cap = 0;
	int64_t key = 0, corr;
	uint64_t tag, stamp = 1;
	int64_t ts;
	/* a key's groups: the first FEW found by looking, the others (the
	 * ranks of a merged trace) through gx: group -> stamp << 24 | index,
	 * stamp counting the keys so that gx is never cleared */
	enum { FEW = 8 };
	tk__map gx = {0};
	while ((rc = tk__sorter_next_rec(s->so, &corr, &ts, sizeof ts, &tag)) == 1) {
		if (n && corr != key) {
			if ((rc = place_key(s, key, o, n)) != 0)
				break;
			n = 0;
			stamp++;
		}
		key = corr;
		int32_t group = (int32_t)(uint32_t)(tag >> 1);
		size_t i = 0, few = n < FEW ? n : FEW;
		while (i < few && o[i].group != group)
			i++;
		if (i == few) { /* not among the first few */
			i = n;
			uint64_t *x = n > FEW ? tk__map_get_int(&gx, (uint32_t)group) : NULL;
			if (x && *x >> 24 == stamp)
				i = (size_t)(*x & 0xffffff);
		}
		if (i == n) { /* the key's first record of this group */
			if (n >= 0xffffff || TK__GROW(o, cap, n + 1) ||
			    (n >= FEW && tk__map_put_int(&gx, (uint32_t)group, stamp << 24 | n))) {
				rc = TK_ERR_NOMEM;
				break;
			}
			o[n++] = (one){group, 0, 0, 0};
		}
		if (tag & 1) {
			if (!(o[i].flags & HAVE_GPU) || ts > o[i].gpu)
				o[i].gpu = ts;
			o[i].flags |= HAVE_GPU;
		} else {
			if (!(o[i].flags & HAVE_LAUNCH) || ts < o[i].launch)
				o[i].launch = ts;
			o[i].flags |= HAVE_LAUNCH;
		}
	}
	if (rc == 0 && n)
		rc = place_key(s, key, o, n);
	free(o);
	tk__map_free(&gx);
	if (rc == TK_ERR_NOMEM)
		return tk__err_set(&s->err, rc, "the launches of the steps: out of memory");
	return rc ? sort_fail(s, rc) : 0;
}

int tk_steps_parts(tk_steps *s, const int64_t *starts, size_t n, int64_t *late)
{
	if (!s || !s->finished || !starts || !n)
		return TK_ERR_ARG;
	for (size_t i = 1; i < n; i++)
		if (starts[i] < starts[i - 1])
			return TK_ERR_ARG;
	if (s->err.code) /* the launches were lost: no answer, now or later */
		return s->err.code;
	if (s->starts) {
		/* once: the runs are the launches' only record */
		if (n != s->n_starts || memcmp(starts, s->starts, n * sizeof *starts) != 0)
			return TK_ERR_ARG;
	} else {
		s->starts = malloc(n * sizeof *s->starts);
		s->late = malloc(n * sizeof *s->late);
		if (!s->starts || !s->late) {
			free(s->starts);
			free(s->late);
			s->starts = s->late = NULL;
			return TK_ERR_NOMEM;
		}
		memcpy(s->starts, starts, n * sizeof *starts);
		s->n_starts = n;
		for (size_t k = 0; k < n; k++)
			s->late[k] = INT64_MIN;
		int rc = s->so ? place_all(s) : 0;
		tk_sorter_free(s->so);
		s->so = NULL;
		if (rc)
			return rc;
	}
	if (late)
		memcpy(late, s->late, n * sizeof *late);
	return 0;
}

int64_t tk_steps_part(const tk_steps *s, const tk_event *ev, int *by_launch)
{
	if (by_launch)
		*by_launch = 0;
	if (!s || !s->starts || !ev || !(ev->has & TK_HAS_TS))
		return -1;
	int64_t corr;
	int32_t group;
	if (kind_of(s, ev, -1, &corr, &group) == GPU) {
		size_t at = grp_at(s, group);
		const grp *g = at < s->n_grps && s->grps[at].group == group ? &s->grps[at] : NULL;
		size_t lo = 0, hi = g ? g->n : 0; /* the runs whose first id <= corr */
		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;
			if (g->runs[mid].corr <= corr)
				lo = mid + 1;
			else
				hi = mid;
		}
		if (lo && g->runs[lo - 1].part >= 0) {
			if (by_launch)
				*by_launch = 1;
			return g->runs[lo - 1].part;
		}
	}
	return (int64_t)seg_of(s->starts, s->n_starts, ev->ts);
}

size_t tk__steps_runs(const tk_steps *s)
{
	return s ? s->n_runs : 0;
}

const char *tk_steps_error(const tk_steps *s)
{
	return s ? s->err.msg : "";
}

void tk_steps_free(tk_steps *s)
{
	if (!s)
		return;
	tk_sorter_free(s->so);
	free(s->tmpdir);
	for (size_t i = 0; i < s->n_grps; i++)
		free(s->grps[i].runs);
	free(s->grps);
	free(s->starts);
	free(s->late);
	tk__err_free(&s->err);
	free(s->steps);
	free(s);
}
