/* stats_steps.c: the GPU time line's tables: per ProfilerStep, busy time by kind, communication hidden under compute and idle time by cause; per stream, launch delays and queue length (docs/steps.md). Every launch and GPU op goes through sorters of bounded memory (tracekit/sort.h): by correlation id to join each op to its launch, then by GPU start for one pass along the time line. */
#include <stdlib.h>

#include "procs.h"
#include "stats_grid.h"
#include "steps_int.h"
#include "sort_int.h"

enum { IV_COMPUTE = 0, IV_COMM = 1, IV_MEM = 2 };

/* A gap no longer than this, with the next GPU op already queued, is the
 * GPU going from one op to the next: kernel wait. */
#define KERNEL_WAIT_NS 10000

/* The sorters' records travel as the bytes of an event's name, their sort
 * key as its ts. */

/* By correlation id (the key: the id with its lowest bit cleared, then 0
 * for a launch and 1 for an op, so that the launches of two neighbouring
 * ids come before their ops): a launch, or a GPU op that has an id. */
typedef struct jrec {
	int64_t corr, ts, end;
	int64_t seq;      /* the op's place among the GPU ops */
	const char *name; /* the op's, in the stats' strings (NULL without the launch table) */
	int32_t group;
	uint32_t stream;
	uint8_t is_op, kind;
} jrec;

/* By GPU start: an op with its launch (has) when the trace holds it. */
typedef struct trec {
	int64_t end, seq, lts, lend;
	const char *name;
	uint32_t stream;
	uint8_t kind, has;
} trec;

/* The sorters: the join; the ops by start; for the launch table, the
 * launches by start (tag: the stream) and the delays by value (tag: the
 * stream). Their shares of the memory, in eighths. */
enum { S_JOIN, S_TIME, S_LAUNCH, S_DELAY, N_SORTERS };
static const unsigned share[N_SORTERS] = {4, 2, 1, 1};
static const char *const sorter_what[N_SORTERS] = {
	"the GPU time line, joining the GPU ops to their launches", "the GPU time line, sorting the GPU ops by start",
	"the GPU time line, sorting the launches", "the GPU time line, sorting the launch delays"};

struct tk__tline {
	tk_sorter *so[N_SORTERS];
	int64_t n_ops; /* the GPU ops, each one's seq */
};

static int is_comm(tk_sv name)
{
	return name.len >= 4 && (memcmp(name.ptr, "nccl", 4) == 0 || memcmp(name.ptr, "rccl", 4) == 0);
}

static int sorter_fail(tk_stats *s, int which, int rc)
{
	return tk__stats_sort_fail(s, s->tl ? s->tl->so[which] : NULL, sorter_what[which], rc);
}

int tk__stats_steps_init(tk_stats *s, size_t total)
{
	if (tk_steps_new(&s->st_steps) || !(s->tl = calloc(1, sizeof *s->tl)))
		return tk__stats_nomem(s);
	tk__steps_keys_only(s->st_steps);
	for (int i = 0; i < N_SORTERS; i++) {
		tk_sorter_opts so = {total / 8 * share[i], s->opts.tmpdir};
		int rc = tk_sorter_new(&s->tl->so[i], &so);
		if (rc)
			return sorter_fail(s, i, rc);
	}
	return 0;
}

void tk__stats_free_steps(tk_stats *s)
{
	if (s->tl)
		for (int i = 0; i < N_SORTERS; i++)
			tk_sorter_free(s->tl->so[i]);
	free(s->tl);
	s->tl = NULL;
}

static int put(tk_stats *s, int which, int64_t key, const void *rec, size_t n, uint64_t tag)
{
	int rc = tk__sorter_add_rec(s->tl->so[which], key, rec, n, tag);
	return rc ? sorter_fail(s, which, rc) : 0;
}

/* The next record of a sorter (tk__sorter_next_rec): 1, 0 at the end, or
 * an error with its message. */
static int next(tk_stats *s, int which, int64_t *key, void *rec, size_t n, uint64_t *tag)
{
	int rc = tk__sorter_next_rec(s->tl->so[which], key, rec, n, tag);
	return rc < 0 ? sorter_fail(s, which, rc) : rc;
}

static int finish_sorter(tk_stats *s, int which)
{
	int rc = tk_sorter_finish(s->tl->so[which]);
	return rc ? sorter_fail(s, which, rc) : 0;
}

/* The index of ev's (pid, tid), named "PID:TID" when new. */
static int stream_of(tk_stats *s, const tk_event *ev, uint32_t *idx)
{
	if (!s->stream_index.esize)
		tk__map_init_int(&s->stream_index);
	uint64_t key = tk__mix64(tk__id_hash(&ev->pid) * 31 + tk__id_hash(&ev->tid));
	uint64_t *v = tk__map_get_int(&s->stream_index, key);
	if (v) {
		*idx = (uint32_t)(*v - 1);
		return 0;
	}
	if (s->n_streams >= UINT32_MAX - 1 || TK__GROW(s->stream_names, s->cap_streams, s->n_streams + 1))
		return TK_ERR_NOMEM;
	tk__buf b = {0};
	const tk_id *ids[2] = {&ev->pid, &ev->tid};
	int rc = 0;
	for (int i = 0; i < 2 && !rc; i++) {
		if (i)
			rc = tk__buf_putc(&b, ':');
		if (!rc && ids[i]->kind == TK_ID_INT)
			rc = tk__buf_i64(&b, ids[i]->num);
		else if (!rc && ids[i]->kind == TK_ID_STR)
			rc = tk__buf_append(&b, ids[i]->str.ptr, ids[i]->str.len);
	}
	if (rc || tk__buf_putc(&b, 0) || tk__map_put_int(&s->stream_index, key, s->n_streams + 1)) {
		tk__buf_free(&b);
		return TK_ERR_NOMEM;
	}
	s->stream_names[s->n_streams] = b.p;
	*idx = (uint32_t)s->n_streams++;
	return 0;
}

static int64_t join_key(int64_t corr, int is_op)
{
	return (int64_t)(((uint64_t)corr & ~(uint64_t)1) | (uint64_t)is_op);
}

/* The op r with its launch l (NULL: none) on to the time line, and for the
 * launch table its delay and its launch's start. */
static int joined(tk_stats *s, const jrec *r, const jrec *l)
{
	trec o;
	memset(&o, 0, sizeof o);
	o.end = r->end;
	o.seq = r->seq;
	o.name = r->name;
	o.stream = r->stream;
	o.kind = r->kind;
	if (l) {
		o.has = 1;
		o.lts = l->ts;
		o.lend = l->end;
	}
	int rc = put(s, S_TIME, r->ts, &o, sizeof o, 0);
	if (rc || !l || !s->opts.launch_table)
		return rc;
	rc = put(s, S_DELAY, tk__sat_sub(r->ts, l->end), NULL, 0, r->stream);
	if (!rc && l->ts <= r->ts)
		rc = put(s, S_LAUNCH, l->ts, NULL, 0, r->stream);
	return rc;
}

int tk__stats_steps_add(tk_stats *s, const tk_event *ev, int cls)
{
	/* the steps object classes events by the default categories, whatever
	 * --cat counts; without --cat, cls is that class already */
	int64_t corr = 0;
	int32_t group = 0;
	int kind = 0;
	int dcls = s->cats ? tk_stats_event_class(ev->cat, (ev->has & TK_HAS_CAT) != 0) : cls;
	if (tk__steps_add_key(s->st_steps, ev, dcls, &corr, &group, &kind))
		return tk__stats_nomem(s);
	jrec r;
	memset(&r, 0, sizeof r);
	r.corr = corr;
	r.group = group;
	if (kind == TK__STEPS_LAUNCH) {
		r.ts = ev->ts;
		r.end = tk__ev_end(ev->ts, (ev->has & TK_HAS_DUR) ? ev->dur : 0);
		return put(s, S_JOIN, join_key(corr, 0), &r, sizeof r, 0);
	}
	if (cls < TK_STATS_KERNEL || !(ev->has & TK_HAS_DUR) || ev->dur < 0)
		return 0;
	r.is_op = 1;
	r.ts = ev->ts;
	r.end = tk__ev_end(ev->ts, ev->dur);
	r.kind = cls == TK_STATS_KERNEL ? (is_comm(ev->name) ? IV_COMM : IV_COMPUTE) : IV_MEM;
	r.seq = s->tl->n_ops++;
	if (s->opts.launch_table) {
		tk_sv nm = tk__strtab_intern(&s->strs, ev->name.ptr ? ev->name.ptr : "", ev->name.len);
		if (!nm.ptr || stream_of(s, ev, &r.stream))
			return tk__stats_nomem(s);
		r.name = nm.ptr;
	}
	if (kind == TK__STEPS_GPU)
		return put(s, S_JOIN, join_key(corr, 1), &r, sizeof r, 0);
	return joined(s, &r, NULL); /* no id: no launch to join */
}

/* ---- the join ---- */

/* The launches of one block of the join (two neighbouring ids, of every
 * rank): the earliest call of each (group, id). */
typedef struct lblock {
	jrec *v;
	size_t n, cap;
} lblock;

/* The block's launch of r's (group, id), or NULL. */
static jrec *launch_of(const lblock *b, const jrec *r)
{
	for (size_t i = 0; i < b->n; i++)
		if (b->v[i].corr == r->corr && b->v[i].group == r->group)
			return &b->v[i];
	return NULL;
}

static int note(lblock *b, const jrec *l)
{
	jrec *had = launch_of(b, l);
	if (had) {
		if (l->ts < had->ts) /* the earliest call of an id launched it */
			*had = *l;
		return 0;
	}
	if (TK__GROW(b->v, b->cap, b->n + 1))
		return TK_ERR_NOMEM;
	b->v[b->n++] = *l;
	return 0;
}

static int join(tk_stats *s)
{
	lblock b = {0};
	int64_t key = 0;
	uint64_t block = 0;
	jrec r;
	int rc = finish_sorter(s, S_JOIN);
	while (!rc && (rc = next(s, S_JOIN, &key, &r, sizeof r, NULL)) == 1) {
		rc = 0;
		if ((uint64_t)key >> 1 != block)
			b.n = 0;
		block = (uint64_t)key >> 1;
		if (!r.is_op) {
			if (note(&b, &r))
				rc = tk__stats_nomem(s);
			continue;
		}
		rc = joined(s, &r, launch_of(&b, &r));
	}
	free(b.v);
	tk_sorter_free(s->tl->so[S_JOIN]);
	s->tl->so[S_JOIN] = NULL;
	return rc;
}

/* ---- the walk along the time line ---- */

static int64_t clip(int64_t a, int64_t b, int64_t lo, int64_t hi)
{
	a = a > lo ? a : lo;
	b = b < hi ? b : hi;
	return b > a ? tk__sat_sub(b, a) : 0;
}

/* A run of busy time [a, b) of one union of the ops, with the earliest
 * launch of the ops that start it. */
typedef struct run {
	int64_t a, b, launch;
	int has_launch, open;
} run;

/* The unions: every op (the runs and gaps of busy time), compute kernels,
 * communication kernels, all kernels (for the overlap: compute + comm -
 * kernels) and memory ops; each one's kinds. */
enum { U_ALL, U_COMP, U_COMM, U_KERN, U_MEM, N_UNIONS };
static const unsigned umask[N_UNIONS] = {7, 1u << IV_COMPUTE, 1u << IV_COMM, 3, 1u << IV_MEM};

/* The queue's length over time, point by point in time order. */
typedef struct queue {
	int64_t len, max, first, last;
	double area;
	size_t n;
} queue;

static void queue_at(queue *q, int64_t t, int d)
{
	if (q->n++)
		q->area += (double)q->len * (double)tk__sat_sub(t, q->last);
	else
		q->first = t;
	q->last = t;
	q->len += d;
	q->max = q->len > q->max ? q->len : q->max;
}

/* A launch row's running figures beside tk_stats_launch. */
typedef struct lrow {
	double sum;
	int64_t worst, worst_ts, worst_seq;
	int has_worst;
	queue q;
} lrow;

typedef struct walk {
	tk_stats *s;
	int64_t *hi;   /* each step's end */
	int64_t *pmax; /* the latest end of the steps up to each */
	int64_t *kern; /* each step's time of the union of kernels */
	run u[N_UNIONS];
	int64_t prev_end; /* the end of the last run of every op; INT64_MIN: none yet */
	lrow *lr;         /* per launch row */
	/* the next launch by start (the launch table's queue) */
	int64_t lnext;
	uint64_t lstream;
	int lhave;
} walk;

/* The steps whose span meets [a, b) are among [*i0, *i1): from the first
 * whose latest end so far passes a, to the last that starts before b. */
static void steps_meeting(const walk *w, int64_t a, int64_t b, size_t *i0, size_t *i1)
{
	size_t n = w->s->n_step_rows, lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (w->pmax[mid] <= a)
			lo = mid + 1;
		else
			hi = mid;
	}
	*i0 = lo;
	hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (w->s->step_rows[mid].ts < b)
			lo = mid + 1;
		else
			hi = mid;
	}
	*i1 = lo;
}

/* The gap of the union of every op from g0 to g1, before a run whose ops
 * were first queued at launch (has: known; g1 INT64_MAX: no run follows),
 * into each step it meets: until the launch the GPU had nothing queued
 * (host wait); the rest is kernel wait when the whole gap is short, else
 * other. */
static void gap(walk *w, int64_t g0, int64_t g1, int has, int64_t launch)
{
	int64_t q = g0; /* from here on the next op was queued */
	if (g1 == INT64_MAX)
		q = INT64_MAX; /* nothing ever comes */
	else if (has && launch > g0)
		q = launch < g1 ? launch : g1;
	int short_gap = g0 != INT64_MIN && g1 != INT64_MAX && tk__sat_sub(g1, g0) <= KERNEL_WAIT_NS;
	size_t i0, i1;
	steps_meeting(w, g0, g1, &i0, &i1);
	for (size_t i = i0; i < i1; i++) {
		tk_stats_step *r = &w->s->step_rows[i];
		int64_t lo = r->ts, hi = w->hi[i];
		r->host_wait = tk__sat_add(r->host_wait, clip(g0, q, lo, hi));
		if (short_gap)
			r->kernel_wait = tk__sat_add(r->kernel_wait, clip(q, g1, lo, hi));
		else
			r->other_idle = tk__sat_add(r->other_idle, clip(q, g1, lo, hi));
	}
}

/* Union k's run u, complete, into the steps it meets. */
static void close_run(walk *w, int k, const run *u)
{
	if (k == U_ALL) {
		gap(w, w->prev_end, u->a, u->has_launch, u->launch);
		w->prev_end = u->b;
	}
	size_t i0, i1;
	steps_meeting(w, u->a, u->b, &i0, &i1);
	for (size_t i = i0; i < i1; i++) {
		tk_stats_step *r = &w->s->step_rows[i];
		int64_t t = clip(u->a, u->b, r->ts, w->hi[i]);
		int64_t *to = k == U_ALL ? &r->busy : k == U_COMP ? &r->compute : k == U_COMM ? &r->comm
		              : k == U_KERN ? &w->kern[i] : &r->mem;
		*to = tk__sat_add(*to, t);
	}
}

/* The op [ts, o->end) into the unions of its kind. */
static void add_to_unions(walk *w, int64_t ts, const trec *o)
{
	for (int k = 0; k < N_UNIONS; k++) {
		if (!(umask[k] & (1u << o->kind)))
			continue;
		run *u = &w->u[k];
		if (u->open && ts <= u->b) {
			if (o->end > u->b)
				u->b = o->end;
			if (ts == u->a && o->has && (!u->has_launch || o->lts < u->launch)) {
				u->launch = o->lts;
				u->has_launch = 1;
			}
			continue;
		}
		if (u->open)
			close_run(w, k, u);
		*u = (run){ts, o->end, o->has ? o->lts : 0, o->has, 1};
	}
}

static size_t step_of(const tk_stats *s, int64_t t)
{
	size_t lo = 0, hi = s->n_step_rows; /* the last step starting at or before t */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (s->step_rows[mid].ts <= t)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? lo - 1 : SIZE_MAX;
}

/* Launches that start before t (every one left, with all) into the
 * queues. */
static int launches_before(walk *w, int64_t t, int all)
{
	while (w->lhave && (all || w->lnext < t)) {
		queue_at(&w->lr[0].q, w->lnext, 1);
		queue_at(&w->lr[1 + w->lstream].q, w->lnext, 1);
		int rc = next(w->s, S_LAUNCH, &w->lnext, NULL, 0, &w->lstream);
		if (rc < 0)
			return rc;
		w->lhave = rc == 1 && w->lstream < w->s->n_streams;
	}
	return 0;
}

/* The op into row r of the launch table. */
static void launch_add(walk *w, size_t k, int64_t ts, const trec *o)
{
	tk_stats_launch *r = &w->s->launch_rows[k];
	lrow *l = &w->lr[k];
	r->ops++;
	if (!o->has)
		return;
	r->launched++;
	int64_t d = tk__sat_sub(ts, o->lend);
	l->sum += (double)d;
	/* the longest delay; of equal ones the first op in time, then in the input */
	if (d > l->worst || (d == l->worst && l->has_worst && ts == l->worst_ts && o->seq < l->worst_seq)) {
		l->worst = d;
		l->worst_ts = ts;
		l->worst_seq = o->seq;
		l->has_worst = 1;
		r->worst = o->name ? o->name : "";
	}
	if (tk__sat_sub(o->end, ts) < tk__sat_sub(o->lend, o->lts)) {
		r->short_ops++;
		r->short_ns = tk__sat_add(r->short_ns, tk__sat_sub(o->end, ts));
	}
	if (o->lts <= ts)
		queue_at(&l->q, ts, -1);
}

static int walk_ops(walk *w)
{
	tk_stats *s = w->s;
	int lt = s->opts.launch_table;
	int64_t ts = 0;
	trec o;
	int rc = finish_sorter(s, S_TIME);
	if (!rc && lt && !(rc = finish_sorter(s, S_LAUNCH)) &&
	    (rc = next(s, S_LAUNCH, &w->lnext, NULL, 0, &w->lstream)) >= 0) {
		w->lhave = rc == 1 && w->lstream < s->n_streams;
		rc = 0;
	}
	while (!rc && (rc = next(s, S_TIME, &ts, &o, sizeof o, NULL)) == 1) {
		rc = 0;
		if (s->opts.step_table)
			add_to_unions(w, ts, &o);
		/* the GPU ops each step launched (docs/steps.md): by launch, else by start */
		int64_t t = o.has ? o.lts : ts;
		size_t k = s->n_step_rows ? step_of(s, t) : SIZE_MAX;
		if (k != SIZE_MAX && t <= w->hi[k])
			s->step_rows[k].launched++;
		if (!lt || o.stream >= s->n_streams)
			continue;
		if (o.has && o.lts <= ts)
			rc = launches_before(w, ts, 0);
		launch_add(w, 0, ts, &o);
		launch_add(w, 1 + o.stream, ts, &o);
	}
	if (!rc)
		rc = launches_before(w, 0, 1); /* launches at the last start's time */
	for (int k = 0; !rc && k < N_UNIONS; k++)
		if (w->u[k].open)
			close_run(w, k, &w->u[k]);
	if (!rc && s->opts.step_table)
		gap(w, w->prev_end, INT64_MAX, 0, 0);
	return rc;
}

/* The delays' percentiles, by nearest rank (the smallest value with at
 * least p% of them at or below it), from the delays in order; the mean
 * and the queue's figures. */
static int finish_launch_rows(walk *w)
{
	tk_stats *s = w->s;
	size_t n = s->n_streams + 1;
	uint64_t *seen = calloc(n, sizeof *seen);
	if (!seen)
		return tk__stats_nomem(s);
	int64_t d = 0;
	uint64_t st = 0;
	int rc = finish_sorter(s, S_DELAY);
	while (!rc && (rc = next(s, S_DELAY, &d, NULL, 0, &st)) == 1) {
		rc = 0;
		if (st >= s->n_streams)
			continue;
		size_t rows[2] = {0, 1 + (size_t)st};
		for (int j = 0; j < 2; j++) {
			tk_stats_launch *r = &s->launch_rows[rows[j]];
			uint64_t c = ++seen[rows[j]], nd = r->launched;
			if (c == 1)
				r->delay_min = d;
			if (c == (nd * 50 + 99) / 100)
				r->delay_p50 = d;
			if (c == (nd * 90 + 99) / 100)
				r->delay_p90 = d;
			if (c == (nd * 99 + 99) / 100)
				r->delay_p99 = d;
			if (c == nd)
				r->delay_max = d;
		}
	}
	free(seen);
	for (size_t k = 0; !rc && k < n; k++) {
		tk_stats_launch *r = &s->launch_rows[k];
		const queue *q = &w->lr[k].q;
		if (r->launched)
			r->delay_mean = w->lr[k].sum / (double)r->launched;
		int64_t span = tk__sat_sub(q->last, q->first);
		r->max_queue = q->max;
		r->mean_queue = q->n && span > 0 ? q->area / (double)span : 0;
	}
	return rc;
}

size_t tk_stats_launch_count(const tk_stats *s)
{
	return s && s->finished ? s->n_launch_rows : 0;
}

const tk_stats_launch *tk_stats_launch_get(const tk_stats *s, size_t i)
{
	return s && s->finished && i < s->n_launch_rows ? &s->launch_rows[i] : NULL;
}

/* ---- finishing ---- */

static int finish_tline(tk_stats *s)
{
	size_t n = s->n_step_rows ? s->n_step_rows : 1;
	walk w;
	memset(&w, 0, sizeof w);
	w.s = s;
	w.prev_end = INT64_MIN;
	w.hi = malloc(n * sizeof *w.hi);
	w.pmax = malloc(n * sizeof *w.pmax);
	w.kern = calloc(n, sizeof *w.kern);
	int lt = s->opts.launch_table;
	if (lt) {
		s->launch_rows = calloc(s->n_streams + 1, sizeof *s->launch_rows);
		w.lr = calloc(s->n_streams + 1, sizeof *w.lr);
	}
	int rc = !w.hi || !w.pmax || !w.kern || (lt && (!s->launch_rows || !w.lr)) ? tk__stats_nomem(s) : 0;
	for (size_t i = 0; !rc && i < s->n_step_rows; i++) {
		const tk_stats_step *r = &s->step_rows[i];
		w.hi[i] = tk__sat_add(r->ts, r->wall);
		w.pmax[i] = i && w.pmax[i - 1] > w.hi[i] ? w.pmax[i - 1] : w.hi[i];
	}
	for (size_t k = 0; !rc && lt && k <= s->n_streams; k++) {
		s->launch_rows[k].stream = k ? s->stream_names[k - 1] : "all";
		s->launch_rows[k].worst = "";
		w.lr[k].worst = INT64_MIN;
	}
	rc = rc ? rc : join(s);
	rc = rc ? rc : walk_ops(&w);
	for (size_t i = 0; !rc && i < s->n_step_rows; i++) {
		tk_stats_step *r = &s->step_rows[i];
		r->overlap = tk__sat_sub(tk__sat_add(r->compute, r->comm), w.kern[i]);
		r->idle = r->wall - r->busy;
	}
	if (!rc && lt) {
		rc = finish_launch_rows(&w);
		s->n_launch_rows = !rc && (s->tl->n_ops || s->n_streams) ? s->n_streams + 1 : 0;
	}
	free(w.hi);
	free(w.pmax);
	free(w.kern);
	free(w.lr);
	return rc;
}

int tk__stats_finish_steps(tk_stats *s)
{
	if (!s->st_steps)
		return 0;
	tk_steps_finish(s->st_steps);
	size_t n = tk_steps_count(s->st_steps);
	const tk_window *w = &s->opts.window;
	s->step_rows = calloc(n ? n : 1, sizeof *s->step_rows);
	if (!s->step_rows)
		return tk__stats_nomem(s);
	for (size_t i = 0; i < n && s->opts.step_table; i++) {
		const tk_step *st = tk_steps_get(s->st_steps, i);
		/* with a window, the steps that lie in it: --steps A-B's window ends
		 * just after step B, where the next step may start */
		if (w->set && (st->ts < w->lo || st->end > w->hi))
			continue;
		tk_stats_step *r = &s->step_rows[s->n_step_rows++];
		r->num = st->num;
		r->ts = st->ts;
		r->wall = tk__sat_sub(st->end, st->ts);
	}
	int rc = finish_tline(s);
	tk__stats_free_steps(s);
	return rc;
}

size_t tk_stats_step_count(const tk_stats *s)
{
	return s && s->finished ? s->n_step_rows : 0;
}

const tk_stats_step *tk_stats_step_get(const tk_stats *s, size_t i)
{
	return s && s->finished && i < s->n_step_rows ? &s->step_rows[i] : NULL;
}

/* ---- the table ---- */

static int set_pct(tk__grid *g, size_t col, int64_t part, int64_t whole)
{
	char raw[32];
	snprintf(raw, sizeof raw, "%.1f", whole > 0 ? 100.0 * (double)part / (double)whole : 0.0);
	return tk__grid_set(g, col, raw, raw);
}

/* The columns after Rank and Step, as (header, key) in the row's order. */
static const char *const heads[][2] = {
	{"Wall (ns)", "wall_ns"},           {"GPU busy (ns)", "busy_ns"},
	{"Busy (%)", "busy_pct"},           {"Compute (ns)", "compute_ns"},
	{"Comm (ns)", "comm_ns"},           {"Mem ops (ns)", "mem_ns"},
	{"Overlap (ns)", "overlap_ns"},     {"Idle (ns)", "idle_ns"},
	{"Host wait (ns)", "host_wait_ns"}, {"Kernel wait (ns)", "kernel_wait_ns"},
	{"Other idle (ns)", "other_idle_ns"}, {"GPU ops", "gpu_ops"},
};

static int step_line(tk__grid *g, const tk_stats_step *r, const char *label)
{
	size_t c = 0;
	int rc = tk__grid_row(g);
	char num[24]; /* a step's number is a name, not a count: no thousands separators */
	snprintf(num, sizeof num, "%lld", (long long)r->num);
	if (!rc && label)
		rc = tk__grid_set(g, c++, label, label);
	rc = rc || tk__grid_set(g, c++, num, num) || tk__grid_set_i64(g, c++, r->wall) || tk__grid_set_i64(g, c++, r->busy) ||
	     set_pct(g, c++, r->busy, r->wall) || tk__grid_set_i64(g, c++, r->compute) || tk__grid_set_i64(g, c++, r->comm) ||
	     tk__grid_set_i64(g, c++, r->mem) || tk__grid_set_i64(g, c++, r->overlap) || tk__grid_set_i64(g, c++, r->idle) ||
	     tk__grid_set_i64(g, c++, r->host_wait) || tk__grid_set_i64(g, c++, r->kernel_wait) || tk__grid_set_i64(g, c++, r->other_idle) ||
	     tk__grid_set_i64(g, c++, (int64_t)r->launched);
	return rc ? TK_ERR_NOMEM : 0;
}

/* Averages over every row, and the slowest step. */
static int step_footer(tk__grid *g, tk_stats *const *s, size_t n, const tk_table_opts *o)
{
	double sum[6] = {0};
	size_t rows = 0, best_i = 0;
	const tk_stats_step *best = NULL;
	for (size_t i = 0; i < n; i++)
		for (size_t k = 0; k < s[i]->n_step_rows; k++) {
			const tk_stats_step *r = &s[i]->step_rows[k];
			sum[0] += (double)r->wall;
			sum[1] += (double)r->busy;
			sum[2] += (double)r->comm;
			sum[3] += (double)r->overlap;
			sum[4] += (double)r->host_wait;
			sum[5] += (double)r->idle;
			rows++;
			if (!best || r->wall > best->wall) {
				best = r;
				best_i = i;
			}
		}
	if (!rows)
		return 0;
	char d[256], v[64];
	double a = 1.0 / (double)rows;
	snprintf(d, sizeof d, "Average of %zu steps: wall %.0f ns, GPU busy %.0f ns (%.1f%%), comm %.0f ns, overlap "
	         "%.0f ns, idle %.0f ns, host wait %.0f ns", rows, sum[0] * a, sum[1] * a,
	         sum[0] > 0 ? 100.0 * sum[1] / sum[0] : 0.0, sum[2] * a, sum[3] * a, sum[5] * a, sum[4] * a);
	snprintf(v, sizeof v, "%.0f", sum[0] * a);
	int rc = tk__grid_footer(g, d, "avg_wall_ns", v);
	snprintf(v, sizeof v, "%.0f", sum[1] * a);
	rc = rc || tk__grid_footer(g, NULL, "avg_busy_ns", v);
	snprintf(v, sizeof v, "%.0f", sum[5] * a);
	rc = rc || tk__grid_footer(g, NULL, "avg_idle_ns", v);
	char label[40];
	tk__grid_label(o, best_i, label, sizeof label);
	snprintf(d, sizeof d, "Slowest: ProfilerStep#%lld%s%s, wall %lld ns", (long long)best->num, n > 1 ? " of " : "",
	         n > 1 ? label : "", (long long)best->wall);
	snprintf(v, sizeof v, "%lld", (long long)best->num);
	rc = rc || tk__grid_footer(g, d, "slowest_step", v);
	snprintf(v, sizeof v, "%lld", (long long)best->wall);
	rc = rc || tk__grid_footer(g, NULL, "slowest_wall_ns", v);
	if (!rc && n > 1)
		rc = tk__grid_footer_str(g, "slowest_rank", label);
	return rc ? TK_ERR_NOMEM : 0;
}

int tk_stats_format_steps(tk_stats *const *s, size_t n, const tk_table_opts *o, char **out, size_t *len)
{
	*out = NULL;
	if (!s || !n || !o)
		return TK_ERR_ARG;
	tk__grid g = {0};
	int rc = n > 1 ? tk__grid_col(&g, "Rank", "rank", 0, 1, 0) : 0;
	rc = rc || tk__grid_col(&g, "Step", "step", 0, 0, 1);
	for (size_t i = 0; !rc && i < sizeof heads / sizeof heads[0]; i++)
		rc = tk__grid_col(&g, heads[i][0], heads[i][1], 0, 0, 1);
	size_t rows = 0;
	for (size_t i = 0; !rc && i < n; i++) {
		char l[40];
		tk__grid_label(o, i, l, sizeof l);
		for (size_t k = 0; !rc && k < s[i]->n_step_rows; k++, rows++)
			if (o->row_limit < 0 || rows < (size_t)o->row_limit)
				rc = step_line(&g, &s[i]->step_rows[k], n > 1 ? l : NULL);
	}
	rc = rc ? rc : step_footer(&g, s, n, o);
	return tk__grid_output(&g, rc, rows, o->format, out, len);
}

/* ---- the launch table's rendering ---- */

static const char *const launch_heads[][2] = {
	{"GPU ops", "gpu_ops"},           {"Launched", "launched"},
	{"Delay min (ns)", "delay_min_ns"}, {"Delay p50 (ns)", "delay_p50_ns"},
	{"Delay p90 (ns)", "delay_p90_ns"}, {"Delay p99 (ns)", "delay_p99_ns"},
	{"Delay max (ns)", "delay_max_ns"}, {"Delay mean (ns)", "delay_mean_ns"},
	{"Short ops", "short_ops"},       {"Short (ns)", "short_ns"},
	{"Max queue", "max_queue"},       {"Mean queue", "mean_queue"},
};

static int launch_line(tk__grid *g, const tk_stats_launch *r, const char *label)
{
	size_t c = 0;
	int rc = tk__grid_row(g);
	if (!rc && label)
		rc = tk__grid_set(g, c++, label, label);
	rc = rc || tk__grid_set(g, c++, r->stream, r->stream) || tk__grid_set_i64(g, c++, (int64_t)r->ops) ||
	     tk__grid_set_i64(g, c++, (int64_t)r->launched) || tk__grid_set_i64(g, c++, r->delay_min) || tk__grid_set_i64(g, c++, r->delay_p50) ||
	     tk__grid_set_i64(g, c++, r->delay_p90) || tk__grid_set_i64(g, c++, r->delay_p99) || tk__grid_set_i64(g, c++, r->delay_max) ||
	     tk__grid_set_num(g, c++, r->delay_mean, 1) || tk__grid_set_i64(g, c++, (int64_t)r->short_ops) ||
	     tk__grid_set_i64(g, c++, r->short_ns) || tk__grid_set_i64(g, c++, r->max_queue) || tk__grid_set_num(g, c++, r->mean_queue, 2);
	return rc ? TK_ERR_NOMEM : 0;
}

int tk_stats_format_launch(tk_stats *const *s, size_t n, const tk_table_opts *o, char **out, size_t *len)
{
	*out = NULL;
	if (!s || !n || !o)
		return TK_ERR_ARG;
	tk__grid g = {0};
	int rc = n > 1 ? tk__grid_col(&g, "Rank", "rank", 0, 1, 0) : 0;
	rc = rc || tk__grid_col(&g, "Stream", "stream", 0, 1, 0);
	for (size_t i = 0; !rc && i < sizeof launch_heads / sizeof launch_heads[0]; i++)
		rc = tk__grid_col(&g, launch_heads[i][0], launch_heads[i][1], 0, 0, 1);
	size_t rows = 0, best_i = 0;
	const tk_stats_launch *best = NULL;
	char l[40];
	for (size_t i = 0; !rc && i < n; i++) {
		tk__grid_label(o, i, l, sizeof l);
		for (size_t k = 0; !rc && k < s[i]->n_launch_rows; k++, rows++) {
			const tk_stats_launch *r = &s[i]->launch_rows[k];
			if (k == 0 && r->launched && (!best || r->delay_max > best->delay_max)) {
				best = r;
				best_i = i;
			}
			if (o->row_limit < 0 || rows < (size_t)o->row_limit)
				rc = launch_line(&g, r, n > 1 ? l : NULL);
		}
	}
	if (!rc && best) {
		char d[512], v[32];
		tk__grid_label(o, best_i, l, sizeof l);
		snprintf(d, sizeof d, "Longest delay%s%s%s: %lld ns, %.300s", n > 1 ? " (" : "", n > 1 ? l : "",
		         n > 1 ? ")" : "", (long long)best->delay_max, best->worst);
		snprintf(v, sizeof v, "%lld", (long long)best->delay_max);
		rc = tk__grid_footer(&g, d, "longest_delay_ns", v) || tk__grid_footer_str(&g, "longest_delay_op", best->worst);
	}
	return tk__grid_output(&g, rc, rows, o->format, out, len);
}
