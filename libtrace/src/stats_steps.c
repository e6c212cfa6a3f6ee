/* stats_steps.c: the GPU time line's tables: per ProfilerStep, busy time by kind, communication hidden under compute and idle time by cause; per stream, launch delays and queue length (docs/steps.md). */
#include <stdlib.h>

#include "procs.h"
#include "stats_grid.h"
#include "steps_int.h"

enum { IV_COMPUTE = 0, IV_COMM = 1, IV_MEM = 2 };

/* A gap no longer than this, with the next GPU op already queued, is the
 * GPU going from one op to the next: kernel wait. */
#define KERNEL_WAIT_NS 10000

/* One GPU op: 48 bytes. */
typedef struct tk__gpuiv {
	int64_t ts, end, corr;
	const char *name; /* in the stats' strings */
	int32_t group;
	uint32_t stream;  /* index into the streams */
	uint8_t kind, keyed;
} tk__gpuiv;

/* A run of busy time [a, b): of the union of the ops (with the launch of
 * the op that opens it), or of one kind's. */
typedef struct run {
	int64_t a, b, launch;
	int has_launch;
} run;

typedef struct runs {
	run *v;
	size_t n, cap;
} runs;

static int is_comm(tk_sv name)
{
	return name.len >= 4 && (memcmp(name.ptr, "nccl", 4) == 0 || memcmp(name.ptr, "rccl", 4) == 0);
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

int tk__stats_steps_add(tk_stats *s, const tk_event *ev, int cls)
{
	if (!s->st_steps && tk_steps_new(&s->st_steps))
		return TK_ERR_NOMEM;
	/* the steps object classes events by the default categories, whatever
	 * --cat counts; without --cat, cls is that class already */
	int64_t corr = 0;
	int32_t group = 0;
	int keyed = 0;
	int dcls = s->cats ? tk_stats_event_class(ev->cat, (ev->has & TK_HAS_CAT) != 0) : cls;
	if (tk__steps_add_key(s->st_steps, ev, dcls, &corr, &group, &keyed))
		return TK_ERR_NOMEM;
	if (cls < TK_STATS_KERNEL || !(ev->has & TK_HAS_DUR) || ev->dur < 0)
		return 0;
	if (TK__GROW(s->iv, s->cap_iv, s->n_iv + 1))
		return TK_ERR_NOMEM;
	tk__gpuiv *v = &s->iv[s->n_iv++];
	memset(v, 0, sizeof *v);
	v->ts = ev->ts;
	v->end = tk__ev_end(ev->ts, ev->dur);
	v->kind = cls == TK_STATS_KERNEL ? (is_comm(ev->name) ? IV_COMM : IV_COMPUTE) : IV_MEM;
	v->keyed = (uint8_t)keyed;
	v->corr = corr;
	v->group = group;
	if (!s->opts.launch_table)
		return 0;
	tk_sv nm = tk__strtab_intern(&s->strs, ev->name.ptr ? ev->name.ptr : "", ev->name.len);
	if (!nm.ptr)
		return TK_ERR_NOMEM;
	v->name = nm.ptr;
	return stream_of(s, ev, &v->stream);
}

/* The GPU ops in time order, those at the same time as they came: a radix
 * sort of their starts, then each op moved along the cycles of that order.
 * 0 or TK_ERR_NOMEM. */
static int sort_iv(tk_stats *s)
{
	size_t n = s->n_iv, i = 1;
	while (i < n && s->iv[i - 1].ts <= s->iv[i].ts)
		i++;
	if (i >= n)
		return 0;
	tk__kv *kv = malloc(n * sizeof *kv);
	if (!kv)
		return TK_ERR_NOMEM;
	for (i = 0; i < n; i++)
		kv[i] = (tk__kv){s->iv[i].ts, i};
	if (tk__sort_kv(kv, n)) {
		free(kv);
		return TK_ERR_NOMEM;
	}
	/* place j takes the op at kv[j].val; a place done points at itself */
	for (size_t j = 0; j < n; j++) {
		if (kv[j].val == j)
			continue;
		tk__gpuiv first = s->iv[j];
		size_t at = j;
		for (;;) {
			size_t from = (size_t)kv[at].val;
			kv[at].val = at;
			if (from == j) {
				s->iv[at] = first;
				break;
			}
			s->iv[at] = s->iv[from];
			at = from;
		}
	}
	free(kv);
	return 0;
}

/* Each op's launch, looked up once for the passes over the ops (at
 * tk_stats_finish, in the ops' order): has[i], its start and end. */
typedef struct launches {
	int64_t *ts, *end;
	unsigned char *has;
} launches;

static int launches_of(const tk_stats *s, launches *L)
{
	size_t n = s->n_iv ? s->n_iv : 1;
	L->ts = malloc(n * sizeof *L->ts);
	L->end = malloc(n * sizeof *L->end);
	L->has = malloc(n);
	if (!L->ts || !L->end || !L->has)
		return TK_ERR_NOMEM;
	for (size_t i = 0; i < s->n_iv; i++) {
		const tk__gpuiv *v = &s->iv[i];
		L->has[i] = v->keyed && tk__steps_launch(s->st_steps, v->corr, v->group, &L->ts[i], &L->end[i]);
	}
	return 0;
}

static void launches_free(launches *L)
{
	free(L->ts);
	free(L->end);
	free(L->has);
}

/* The union of the ops of the kinds in mask, as sorted disjoint runs; each
 * run of the whole union (mask 7) with the earliest launch of the ops that
 * start it. */
static int union_of(const tk_stats *s, const launches *L, unsigned mask, runs *u)
{
	for (size_t i = 0; i < s->n_iv; i++) {
		const tk__gpuiv *v = &s->iv[i];
		if (!(mask & (1u << v->kind)))
			continue;
		int64_t l = L->ts[i];
		int has = L->has[i];
		run *last = u->n ? &u->v[u->n - 1] : NULL;
		if (last && v->ts <= last->b) {
			if (v->end > last->b)
				last->b = v->end;
			if (v->ts == last->a && has && (!last->has_launch || l < last->launch)) {
				last->launch = l;
				last->has_launch = 1;
			}
			continue;
		}
		if (TK__GROW(u->v, u->cap, u->n + 1))
			return TK_ERR_NOMEM;
		u->v[u->n++] = (run){v->ts, v->end, has ? l : 0, has};
	}
	return 0;
}

/* x and y, both sorted and disjoint: their common time. */
static int intersect(const runs *x, const runs *y, runs *out)
{
	size_t i = 0, j = 0;
	while (i < x->n && j < y->n) {
		int64_t a = x->v[i].a > y->v[j].a ? x->v[i].a : y->v[j].a;
		int64_t b = x->v[i].b < y->v[j].b ? x->v[i].b : y->v[j].b;
		if (a < b) {
			if (TK__GROW(out->v, out->cap, out->n + 1))
				return TK_ERR_NOMEM;
			out->v[out->n++] = (run){a, b, 0, 0};
		}
		if (x->v[i].b < y->v[j].b)
			i++;
		else
			j++;
	}
	return 0;
}

/* The first run that ends after t. */
static size_t first_after(const runs *u, int64_t t)
{
	size_t lo = 0, hi = u->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (u->v[mid].b <= t)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static int64_t clip(int64_t a, int64_t b, int64_t lo, int64_t hi)
{
	a = a > lo ? a : lo;
	b = b < hi ? b : hi;
	return b > a ? tk__sat_sub(b, a) : 0;
}

/* Busy time of u inside [lo, hi). */
static int64_t measure(const runs *u, int64_t lo, int64_t hi)
{
	int64_t t = 0;
	for (size_t k = first_after(u, lo); k < u->n && u->v[k].a < hi; k++)
		t = tk__sat_add(t, clip(u->v[k].a, u->v[k].b, lo, hi));
	return t;
}

/* The idle time of [lo, hi) by cause: each gap of the union runs from the
 * end of one run to the start of the next; until the next op's launch the
 * GPU had nothing queued (host wait); the rest of the gap, the next op
 * queued, is kernel wait when the whole gap is short, else other. */
static void idle_of(const runs *u, int64_t lo, int64_t hi, tk_stats_step *r)
{
	size_t k = first_after(u, lo);
	for (;; k++) {
		int64_t g0 = k ? u->v[k - 1].b : INT64_MIN, g1 = k < u->n ? u->v[k].a : INT64_MAX;
		if (g0 >= hi)
			break;
		int64_t q = g0; /* from here on the next op was queued */
		if (k == u->n)
			q = INT64_MAX; /* nothing ever comes */
		else if (u->v[k].has_launch && u->v[k].launch > g0)
			q = u->v[k].launch < g1 ? u->v[k].launch : g1;
		r->host_wait = tk__sat_add(r->host_wait, clip(g0, q, lo, hi));
		int short_gap = g0 != INT64_MIN && g1 != INT64_MAX && tk__sat_sub(g1, g0) <= KERNEL_WAIT_NS;
		if (short_gap)
			r->kernel_wait = tk__sat_add(r->kernel_wait, clip(q, g1, lo, hi));
		else
			r->other_idle = tk__sat_add(r->other_idle, clip(q, g1, lo, hi));
		if (k == u->n)
			break;
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

/* ---- the launch table ---- */

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

/* Row r over the ops of stream st (UINT32_MAX: all): delays[] and lts[]
 * are scratch for every op. The ops are in time order. 0 or
 * TK_ERR_NOMEM. */
static int launch_row(const tk_stats *s, const launches *L, uint32_t st, tk_stats_launch *r, int64_t *delays,
                      int64_t *lts)
{
	size_t nd = 0, nq = 0;
	double sum = 0;
	int64_t worst = INT64_MIN;
	r->worst = "";
	for (size_t i = 0; i < s->n_iv; i++) {
		const tk__gpuiv *v = &s->iv[i];
		if (st != UINT32_MAX && v->stream != st)
			continue;
		r->ops++;
		if (!L->has[i])
			continue;
		int64_t lt = L->ts[i], lend = L->end[i];
		r->launched++;
		int64_t d = tk__sat_sub(v->ts, lend);
		delays[nd++] = d;
		sum += (double)d;
		if (d > worst) {
			worst = d;
			r->worst = v->name ? v->name : "";
		}
		if (tk__sat_sub(v->end, v->ts) < tk__sat_sub(lend, lt)) {
			r->short_ops++;
			r->short_ns = tk__sat_add(r->short_ns, tk__sat_sub(v->end, v->ts));
		}
		if (lt <= v->ts)
			lts[nq++] = lt;
	}
	if (nd) {
		if (tk__sort_i64(delays, nd))
			return TK_ERR_NOMEM;
		/* nearest rank: the smallest value with at least p% of them at or below it */
		r->delay_min = delays[0];
		r->delay_p50 = delays[(nd * 50 + 99) / 100 - 1];
		r->delay_p90 = delays[(nd * 90 + 99) / 100 - 1];
		r->delay_p99 = delays[(nd * 99 + 99) / 100 - 1];
		r->delay_max = delays[nd - 1];
		r->delay_mean = sum / (double)nd;
	}
	if (!nq)
		return 0;
	/* the queue: +1 at each launch, -1 at its op's GPU start (the ops in
	 * time order give the starts in order), a start before a launch at
	 * the same time */
	if (tk__sort_i64(lts, nq))
		return TK_ERR_NOMEM;
	queue q = {0};
	size_t a = 0;
	for (size_t i = 0; i < s->n_iv; i++) {
		const tk__gpuiv *v = &s->iv[i];
		if ((st != UINT32_MAX && v->stream != st) || !L->has[i] || L->ts[i] > v->ts)
			continue;
		while (a < nq && lts[a] < v->ts)
			queue_at(&q, lts[a++], 1);
		queue_at(&q, v->ts, -1);
	}
	while (a < nq) /* launches at the last start's time */
		queue_at(&q, lts[a++], 1);
	int64_t span = tk__sat_sub(q.last, q.first);
	r->max_queue = q.max;
	r->mean_queue = span > 0 ? q.area / (double)span : 0;
	return 0;
}

static int finish_launch(tk_stats *s, const launches *L)
{
	s->launch_rows = calloc(s->n_streams + 1, sizeof *s->launch_rows);
	int64_t *delays = malloc((s->n_iv ? s->n_iv : 1) * sizeof *delays);
	int64_t *lts = malloc((s->n_iv ? s->n_iv : 1) * sizeof *lts);
	int rc = !s->launch_rows || !delays || !lts ? TK_ERR_NOMEM : 0;
	if (!rc) {
		s->launch_rows[0].stream = "all";
		rc = launch_row(s, L, UINT32_MAX, &s->launch_rows[0], delays, lts);
	}
	for (uint32_t k = 0; !rc && k < s->n_streams; k++) {
		s->launch_rows[k + 1].stream = s->stream_names[k];
		rc = launch_row(s, L, k, &s->launch_rows[k + 1], delays, lts);
	}
	s->n_launch_rows = !rc && (s->n_iv || s->n_streams) ? s->n_streams + 1 : 0;
	free(delays);
	free(lts);
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

int tk__stats_finish_steps(tk_stats *s)
{
	if (!s->st_steps)
		return 0;
	tk_steps_finish(s->st_steps);
	size_t n = tk_steps_count(s->st_steps);
	const tk_window *w = &s->opts.window;
	s->step_rows = calloc(n ? n : 1, sizeof *s->step_rows);
	if (!s->step_rows)
		return TK_ERR_NOMEM;
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
	runs all = {0}, comp = {0}, comm = {0}, mem = {0}, ov = {0};
	launches L = {0};
	int rc = sort_iv(s) || launches_of(s, &L);
	rc = rc || (s->opts.step_table &&
	            (union_of(s, &L, 7, &all) || union_of(s, &L, 1u << IV_COMPUTE, &comp) ||
	             union_of(s, &L, 1u << IV_COMM, &comm) || union_of(s, &L, 1u << IV_MEM, &mem) ||
	             intersect(&comp, &comm, &ov)));
	for (size_t i = 0; !rc && i < s->n_step_rows; i++) {
		tk_stats_step *r = &s->step_rows[i];
		int64_t lo = r->ts, hi = tk__sat_add(r->ts, r->wall);
		r->busy = measure(&all, lo, hi);
		r->compute = measure(&comp, lo, hi);
		r->comm = measure(&comm, lo, hi);
		r->mem = measure(&mem, lo, hi);
		r->overlap = measure(&ov, lo, hi);
		r->idle = r->wall - r->busy;
		idle_of(&all, lo, hi, r);
	}
	/* the GPU ops each step launched (docs/steps.md): by launch, else by start */
	for (size_t i = 0; !rc && s->n_step_rows && i < s->n_iv; i++) {
		int64_t t = L.has[i] ? L.ts[i] : s->iv[i].ts;
		size_t k = step_of(s, t);
		if (k != SIZE_MAX && t <= tk__sat_add(s->step_rows[k].ts, s->step_rows[k].wall))
			s->step_rows[k].launched++;
	}
	free(all.v);
	free(comp.v);
	free(comm.v);
	free(mem.v);
	free(ov.v);
	if (!rc && s->opts.launch_table)
		rc = finish_launch(s, &L);
	launches_free(&L);
	free(s->iv);
	s->iv = NULL;
	s->n_iv = s->cap_iv = 0;
	return rc ? TK_ERR_NOMEM : 0;
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
	if (!rc && label)
		rc = tk__grid_set(g, c++, label, label);
	rc = rc || tk__grid_set_i64(g, c++, r->num) || tk__grid_set_i64(g, c++, r->wall) || tk__grid_set_i64(g, c++, r->busy) ||
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
