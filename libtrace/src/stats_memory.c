/* stats_memory.c: the memory table: per device, the allocations and frees of profile_memory's [memory] events, the peak allocated and reserved bytes, when, and the operator running at the peak (docs/steps.md). */
#include <stdlib.h>

#include "procs.h"
#include "stats_grid.h"
#include "sort_int.h"

/* One [memory] event: 48 bytes, in the sorter by time until
 * tk_stats_finish (as the bytes of an event's name), and in the time line
 * kept for memory_series after it. */
typedef struct tk__memev {
	int64_t ts, bytes, alloc, reserved; /* alloc, reserved: INT64_MIN when absent */
	uint64_t thread;                    /* hash of (pid, tid) */
	uint32_t dev, seq;
} tk__memev;

/* The op at a peak is found while reading when the order allows: each
 * thread keeps its CPU ops that may still run at a peak to come (an op
 * leaves when one starts after its end), so a new peak takes its op from
 * its thread's open ops, and the ops after it are held against it as they
 * come. An op not kept (more than MAX_OPEN open, a name longer than
 * MAX_NAME) counts as let go at once; a thread that let go of an op ending
 * at or after the peak leaves that peak to the second read. */
#define MAX_OPEN 256
#define MAX_NAME 1024

typedef struct tk__openop {
	int64_t ts, end, dur;
	char *name;
	size_t len, cap;
} tk__openop;

typedef struct tk__mthread {
	uint64_t key;
	int64_t last_ts;    /* the latest op's start */
	int64_t popped_end; /* the latest end of an op let go; INT64_MIN none */
	int unordered;      /* an op started before the one read before it */
	tk__openop *open;
	size_t n_open, cap_open;
} tk__mthread;

/* A device's peaks so far, by Total Allocated [0] and by the running sum
 * of Bytes [1] (the table takes one at the end), with the innermost op
 * at each: known when the thread kept every op that may run at it. The
 * running sum's peak is the table's only when the device's events came
 * in time order (not unordered). */
typedef struct tk__mlive {
	int64_t peak[2], ts[2], best[2];
	uint64_t thread[2];
	const char *op[2];
	int known[2];
	int64_t run, last_ts;
	int seen, unordered, totals; /* totals: every event had Total Allocated */
} tk__mlive;

static int sorter_fail(tk_stats *s, int rc)
{
	return tk__stats_sort_fail(s, s->mem_sort, "the memory table, sorting the [memory] events", rc);
}

int tk__stats_memory_init(tk_stats *s, size_t bytes)
{
	tk_sorter_opts so = {bytes, s->opts.tmpdir};
	int rc = tk_sorter_new(&s->mem_sort, &so);
	return rc ? sorter_fail(s, rc) : 0;
}

/* The record of thread th (thread_key), or NULL when none of its ops was read. */
static tk__mthread *mthread_of(const tk_stats *s, uint64_t th)
{
	uint64_t *i = s->mthread_index.esize ? tk__map_get_int(&s->mthread_index, th) : NULL;
	return i ? &s->mthreads[*i - 1] : NULL;
}

enum { M_BYTES = 1, M_ALLOC = 2, M_RESERVED = 4, M_TYPE = 8, M_ID = 16 };

/* An id's hash, a decimal string counted as its number: Kineto writes the
 * same thread as "tid": 25738 on [memory] events and "tid": "25738" on ops. */
static uint64_t id_key(const tk_id *id)
{
	tk_id n = *id;
	int64_t v;
	if (id->kind == TK_ID_STR && id->str.len && id->str.len < 20 &&
	    tk__js_int((tk_sv){id->str.ptr, id->str.len}, &v) == 0)
		n = (tk_id){TK_ID_INT, v, {NULL, 0}};
	return tk__id_hash(&n);
}

static uint64_t thread_key(const tk_event *ev)
{
	return tk__mix64(id_key(&ev->pid) * 31 + id_key(&ev->tid));
}

/* "cpu", "cuda:0", "hip:0" (torch's DeviceType numbers), or "type T:ID". */
static int dev_label(char *b, size_t n, int64_t type, int64_t id)
{
	static const struct { int64_t type; const char *name; } names[] = {
		{1, "cuda"}, {6, "hip"}, {12, "xpu"}, {13, "mps"}, {19, "mtia"}};
	if (type == 0)
		return snprintf(b, n, "cpu");
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
		if (names[i].type == type)
			return snprintf(b, n, "%s:%lld", names[i].name, (long long)id);
	return snprintf(b, n, "type %lld:%lld", (long long)type, (long long)id);
}

static int dev_index(tk_stats *s, const char *l, uint32_t *idx)
{
	for (size_t i = 0; i < s->n_mem_rows; i++)
		if (strcmp(s->mem_rows[i].device, l) == 0) {
			*idx = (uint32_t)i;
			return 0;
		}
	if (s->n_mem_rows >= 4096 || TK__GROW(s->mem_rows, s->cap_mem_rows, s->n_mem_rows + 1) ||
	    TK__GROW(s->mlive, s->cap_mlive, s->n_mem_rows + 1))
		return TK_ERR_NOMEM;
	memset(&s->mlive[s->n_mem_rows], 0, sizeof *s->mlive);
	tk_sv d = tk__strtab_intern(&s->strs, l, strlen(l));
	if (!d.ptr)
		return TK_ERR_NOMEM;
	tk_stats_memory *r = &s->mem_rows[s->n_mem_rows];
	memset(r, 0, sizeof *r);
	r->device = d.ptr;
	r->op_at_peak = "";
	*idx = (uint32_t)s->n_mem_rows++;
	return 0;
}

int tk_memory_event(const tk_event *ev, tk_memory_info *m)
{
	static const char name[] = "[memory]";
	if (!ev || !m || ev->name.len != sizeof name - 1 || memcmp(ev->name.ptr, name, sizeof name - 1) != 0 ||
	    !ev->args.ptr)
		return 0;
	tk__js_iter it;
	tk_sv k, v;
	int64_t x;
	unsigned got = 0;
	*m = (tk_memory_info){0, INT64_MIN, INT64_MIN, 0, -1, ""};
	if (tk__js_obj(&it, ev->args))
		return 0;
	while (tk__js_member(&it, &k, &v) == 1) {
		if (tk__js_int(v, &x))
			continue;
#define KEY(lit) (k.len == sizeof(lit) - 1 && memcmp(k.ptr, lit, k.len) == 0)
		if (KEY("Bytes") && !(got & M_BYTES))
			m->bytes = x, got |= M_BYTES;
		else if (KEY("Total Allocated") && !(got & M_ALLOC))
			m->allocated = x, got |= M_ALLOC;
		else if (KEY("Total Reserved") && !(got & M_RESERVED))
			m->reserved = x, got |= M_RESERVED;
		else if (KEY("Device Type") && !(got & M_TYPE))
			m->type = x, got |= M_TYPE;
		else if (KEY("Device Id") && !(got & M_ID))
			m->id = x, got |= M_ID;
#undef KEY
	}
	if (!(got & M_BYTES))
		return 0;
	dev_label(m->device, sizeof m->device, m->type, m->id);
	return 1;
}

int tk__stats_memory_add(tk_stats *s, const tk_event *ev)
{
	tk_memory_info mi;
	if (!(ev->has & TK_HAS_TS) || !tk_memory_event(ev, &mi))
		return 0;
	uint32_t dev;
	if (dev_index(s, mi.device, &dev) || s->n_mev >= UINT32_MAX)
		return tk__stats_nomem(s);
	uint64_t th = thread_key(ev);
	tk__memev m = {ev->ts, mi.bytes, mi.allocated, mi.reserved, th, dev, (uint32_t)s->n_mev};
	int rc = tk__sorter_add_rec(s->mem_sort, ev->ts, &m, sizeof m, 0);
	if (rc)
		return sorter_fail(s, rc);
	s->n_mev++;
	tk__mlive *L = &s->mlive[dev];
	if (!L->seen) {
		L->seen = L->totals = 1;
		L->peak[0] = L->peak[1] = INT64_MIN;
	} else if (ev->ts < L->last_ts) {
		L->unordered = 1; /* the table's time order is not this one */
	}
	L->last_ts = ev->ts;
	L->totals &= mi.allocated != INT64_MIN;
	L->run = tk__sat_add(L->run, mi.bytes);
	int64_t a[2] = {mi.allocated, L->run};
	for (int v = 0; v < 2; v++) {
		/* torch's totals need no order: the highest, the earliest of equal
		 * ones; the running sum is the table's only in time order */
		int higher = a[v] > L->peak[v] || (v == 0 && a[v] == L->peak[v] && ev->ts < L->ts[v]);
		if ((v == 0 && !L->totals) || !higher)
			continue;
		L->peak[v] = a[v];
		L->ts[v] = ev->ts;
		L->thread[v] = th;
		L->best[v] = INT64_MAX;
		L->op[v] = NULL;
		const tk__mthread *t = mthread_of(s, th);
		L->known[v] = !t || t->popped_end < ev->ts;
		for (size_t k = 0; t && L->known[v] && k < t->n_open; k++) {
			const tk__openop *o = &t->open[k];
			if (o->ts > ev->ts || o->end < ev->ts || o->dur >= L->best[v])
				continue;
			tk_sv nm = tk__strtab_intern(&s->strs, o->name, o->len);
			if (!nm.ptr)
				return tk__stats_nomem(s);
			L->best[v] = o->dur;
			L->op[v] = nm.ptr;
		}
	}
	return 0;
}

static int is_cpu_op(const tk_event *ev)
{
	return ev->ph == 'X' && (ev->has & TK_HAS_TS) && ev->name.ptr &&
	       tk_stats_event_class(ev->cat, (ev->has & TK_HAS_CAT) != 0) == TK_STATS_OP;
}

static int64_t op_dur(const tk_event *ev)
{
	return (ev->has & TK_HAS_DUR) && ev->dur > 0 ? ev->dur : 0;
}

int tk__stats_memory_cpu(tk_stats *s, const tk_event *ev)
{
	if (!is_cpu_op(ev))
		return 0;
	int64_t dur = op_dur(ev), end = tk__ev_end(ev->ts, dur);
	uint64_t th = thread_key(ev);
	/* the peaks so far on this thread that it runs at */
	for (size_t d = 0; d < s->n_mem_rows; d++) {
		tk__mlive *L = &s->mlive[d];
		for (int v = 0; v < 2 && L->seen; v++) {
			if (L->peak[v] == INT64_MIN || L->thread[v] != th || ev->ts > L->ts[v] || end < L->ts[v] ||
			    dur >= L->best[v])
				continue;
			tk_sv nm = tk__strtab_intern(&s->strs, ev->name.ptr, ev->name.len);
			if (!nm.ptr)
				return TK_ERR_NOMEM;
			L->best[v] = dur;
			L->op[v] = nm.ptr;
		}
	}
	/* the thread's open ops, for the peaks to come */
	tk__mthread *t = mthread_of(s, th);
	if (!t) {
		if (!s->mthread_index.esize)
			tk__map_init_int(&s->mthread_index);
		if (TK__GROW(s->mthreads, s->cap_mthreads, s->n_mthreads + 1) ||
		    tk__map_put_int(&s->mthread_index, th, s->n_mthreads + 1))
			return TK_ERR_NOMEM;
		t = &s->mthreads[s->n_mthreads++];
		*t = (tk__mthread){th, ev->ts, INT64_MIN, 0, NULL, 0, 0};
	}
	if (ev->ts < t->last_ts)
		t->unordered = 1;
	else
		t->last_ts = ev->ts;
	while (t->n_open && t->open[t->n_open - 1].end < ev->ts) {
		int64_t e = t->open[--t->n_open].end;
		t->popped_end = e > t->popped_end ? e : t->popped_end;
	}
	if (t->n_open >= MAX_OPEN || ev->name.len > MAX_NAME) {
		t->popped_end = end > t->popped_end ? end : t->popped_end;
		return 0;
	}
	if (t->n_open == t->cap_open) {
		size_t old = t->cap_open;
		if (TK__GROW(t->open, t->cap_open, t->n_open + 1))
			return TK_ERR_NOMEM;
		memset(t->open + old, 0, (t->cap_open - old) * sizeof *t->open);
	}
	tk__openop *o = &t->open[t->n_open];
	if (o->cap < ev->name.len + 1) {
		char *p = realloc(o->name, ev->name.len + 1);
		if (!p)
			return TK_ERR_NOMEM;
		o->name = p;
		o->cap = ev->name.len + 1;
	}
	memcpy(o->name, ev->name.ptr, ev->name.len);
	o->len = ev->name.len;
	o->ts = ev->ts;
	o->end = end;
	o->dur = dur;
	t->n_open++;
	return 0;
}

/* The threads' open ops go (at the end of the first read). */
static void drop_open(tk_stats *s)
{
	for (size_t i = 0; i < s->n_mthreads; i++) {
		tk__mthread *t = &s->mthreads[i];
		for (size_t k = 0; k < t->cap_open; k++)
			free(t->open[k].name);
		free(t->open);
		t->open = NULL;
		t->n_open = t->cap_open = 0;
	}
}

void tk__stats_free_memory(tk_stats *s)
{
	tk_sorter_free(s->mem_sort);
	s->mem_sort = NULL;
	free(s->mev);
	free(s->mem_rows);
	free(s->peak_thread);
	free(s->peak_best);
	free(s->peak_done);
	free(s->mlive);
	drop_open(s);
	free(s->mthreads);
	tk__map_free(&s->mthread_index);
}

static int cmp_mev(const void *a, const void *b)
{
	const tk__memev *x = a, *y = b;
	if (x->dev != y->dev)
		return x->dev < y->dev ? -1 : 1;
	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	return (x->seq > y->seq) - (x->seq < y->seq);
}

int tk__stats_finish_memory(tk_stats *s)
{
	drop_open(s); /* the second read needs only each thread's order */
	if (!s->mem_sort)
		return 0;
	int rc = s->n_mev ? tk_sorter_finish(s->mem_sort) : 0;
	if (rc)
		return sorter_fail(s, rc);
	size_t nd = s->n_mem_rows ? s->n_mem_rows : 1;
	int64_t *run = calloc(nd, sizeof *run);
	s->peak_thread = calloc(nd, sizeof *s->peak_thread);
	s->peak_done = calloc(nd, 1);
	if (!run || !s->peak_thread || !s->peak_done ||
	    (s->opts.memory_series && s->n_mev && !(s->mev = malloc(s->n_mev * sizeof *s->mev)))) {
		free(run);
		return tk__stats_nomem(s);
	}
	for (size_t d = 0; d < s->n_mem_rows; d++) {
		tk_stats_memory *r = &s->mem_rows[d];
		/* torch's own totals when every event has them, else the sum of
		 * Bytes from 0 at the first event */
		r->from_totals = s->mlive[d].totals;
		r->peak_alloc = r->peak_reserved = INT64_MIN;
	}
	/* every device's events at once, in time order (those at the same
	 * time in the order they came) */
	size_t n = 0;
	int64_t key;
	tk__memev m;
	while (s->n_mev && (rc = tk__sorter_next_rec(s->mem_sort, &key, &m, sizeof m, NULL)) == 1) {
		if (m.dev >= s->n_mem_rows)
			continue;
		tk_stats_memory *r = &s->mem_rows[m.dev];
		r->events++;
		if (m.bytes > 0) {
			r->allocs++;
			r->bytes_alloc = tk__sat_add(r->bytes_alloc, m.bytes);
		} else if (m.bytes < 0) {
			r->frees++;
			r->bytes_freed = tk__sat_add(r->bytes_freed, m.bytes == INT64_MIN ? INT64_MAX : -m.bytes);
		}
		run[m.dev] = tk__sat_add(run[m.dev], m.bytes);
		int64_t a = r->from_totals ? m.alloc : run[m.dev];
		if (a > r->peak_alloc) {
			r->peak_alloc = a;
			r->peak_ts = m.ts;
			s->peak_thread[m.dev] = m.thread;
		}
		if (m.reserved != INT64_MIN && m.reserved > r->peak_reserved) {
			r->peak_reserved = m.reserved;
			r->reserved_ts = m.ts;
		}
		r->final_alloc = a;
		if (s->mev && n < s->n_mev) {
			m.alloc = a; /* the time line's value (memory_series) */
			s->mev[n++] = m;
		}
	}
	free(run);
	if (rc < 0)
		return sorter_fail(s, rc);
	tk_sorter_free(s->mem_sort);
	s->mem_sort = NULL;
	for (size_t d = 0; d < s->n_mem_rows; d++) {
		tk_stats_memory *r = &s->mem_rows[d];
		if (r->peak_reserved == INT64_MIN)
			r->peak_reserved = -1;
		/* the op at the peak when it was found while reading: the same
		 * peak (the running sum's: the events came in time order) and the
		 * thread kept its ops */
		const tk__mlive *L = &s->mlive[d];
		int v = r->from_totals ? 0 : 1;
		if ((v == 0 || !L->unordered) && L->known[v] && L->peak[v] == r->peak_alloc && L->ts[v] == r->peak_ts &&
		    L->thread[v] == s->peak_thread[d]) {
			r->op_at_peak = L->op[v] ? L->op[v] : "";
			s->peak_done[d] = 1;
		} else {
			s->peak_left++;
		}
	}
	/* the time line, kept for tk_stats_memory_point() when asked, device
	 * by device */
	if (s->mev)
		qsort(s->mev, n, sizeof *s->mev, cmp_mev);
	s->n_mev = n;
	return 0;
}

size_t tk_stats_memory_points(const tk_stats *s)
{
	return s && s->finished && s->opts.memory_series ? s->n_mev : 0;
}

int tk_stats_memory_point(const tk_stats *s, size_t i, tk_stats_mem_point *p)
{
	if (!p || i >= tk_stats_memory_points(s))
		return TK_ERR_ARG;
	const tk__memev *m = &s->mev[i];
	*p = (tk_stats_mem_point){s->mem_rows[m->dev].device, m->ts, m->bytes, m->alloc,
	                          m->reserved == INT64_MIN ? -1 : m->reserved};
	return 0;
}

size_t tk_stats_memory_count(const tk_stats *s)
{
	return s && s->finished ? s->n_mem_rows : 0;
}

const tk_stats_memory *tk_stats_memory_get(const tk_stats *s, size_t i)
{
	return s && s->finished && i < s->n_mem_rows ? &s->mem_rows[i] : NULL;
}

int tk_stats_memory_op(tk_stats *s, const tk_event *ev)
{
	if (!s || !ev || !s->finished)
		return TK_ERR_ARG;
	size_t n = s->n_mem_rows;
	if (!s->peak_left || !is_cpu_op(ev))
		return 0;
	if (!s->peak_best) { /* the innermost op's duration so far, per device */
		if (!(s->peak_best = malloc(n * sizeof *s->peak_best)))
			return tk__err_msg(&s->err, TK_ERR_NOMEM, "out of memory");
		for (size_t i = 0; i < n; i++)
			s->peak_best[i] = INT64_MAX;
	}
	int64_t dur = op_dur(ev), end = tk__ev_end(ev->ts, dur);
	uint64_t th = thread_key(ev);
	for (size_t i = 0; i < n; i++) {
		tk_stats_memory *m = &s->mem_rows[i];
		if (!m->events || s->peak_done[i] || th != s->peak_thread[i])
			continue;
		if (ev->ts > m->peak_ts) {
			/* the thread's ops came in time order: none after this one
			 * runs at the peak */
			const tk__mthread *t = mthread_of(s, th);
			if (t && !t->unordered) {
				s->peak_done[i] = 1;
				s->peak_left--;
			}
			continue;
		}
		if (end < m->peak_ts || dur >= s->peak_best[i])
			continue;
		tk_sv nm = tk__strtab_intern(&s->strs, ev->name.ptr, ev->name.len);
		if (!nm.ptr)
			return tk__err_msg(&s->err, TK_ERR_NOMEM, "out of memory");
		s->peak_best[i] = dur;
		m->op_at_peak = nm.ptr;
	}
	return 0;
}

size_t tk_stats_memory_ops_left(const tk_stats *s)
{
	return s && s->finished ? s->peak_left : 0;
}

int tk_stats_memory_ops(tk_stats *s, tk_reader *r)
{
	if (!s || !r || !s->finished)
		return TK_ERR_ARG;
	const tk_event *ev;
	int rc = 0;
	while (s->peak_left && (rc = tk_reader_next(r, &ev)) == TK_OK)
		if ((rc = tk_stats_memory_op(s, ev)) != 0)
			return rc;
	if (rc < 0)
		return tk__err_msg(&s->err, rc, "%s", tk_reader_error(r));
	return 0;
}

/* ---- the table ---- */

static const char *const mem_heads[][2] = {
	{"Events", "events"},
	{"Allocs", "allocs"},
	{"Frees", "frees"},
	{"Allocated (B)", "bytes_allocated"},
	{"Freed (B)", "bytes_freed"},
	{"Peak allocated (B)", "peak_allocated"},
	{"Peak at (ns)", "peak_ts_ns"},
	{"Peak reserved (B)", "peak_reserved"},
	{"Reserved peak at (ns)", "reserved_ts_ns"},
	{"Final allocated (B)", "final_allocated"},
	{"From", "from"},
	{"Op at peak", "op_at_peak"},
};

static int mem_line(tk__grid *g, const tk_stats_memory *r, const char *label)
{
	size_t c = 0;
	const char *from = r->from_totals ? "Total Allocated" : "sum of Bytes";
	int rc = tk__grid_row(g);
	if (!rc && label)
		rc = tk__grid_set(g, c++, label, label);
	rc = rc || tk__grid_set(g, c++, r->device, r->device) || tk__grid_set_i64(g, c++, (int64_t)r->events) ||
	     tk__grid_set_i64(g, c++, (int64_t)r->allocs) || tk__grid_set_i64(g, c++, (int64_t)r->frees) ||
	     tk__grid_set_i64(g, c++, r->bytes_alloc) || tk__grid_set_i64(g, c++, r->bytes_freed) || tk__grid_set_i64(g, c++, r->peak_alloc) ||
	     tk__grid_set_i64(g, c++, r->peak_ts);
	if (!rc && r->peak_reserved < 0)
		rc = tk__grid_set(g, c++, "-", "null") || tk__grid_set(g, c++, "-", "null");
	else if (!rc)
		rc = tk__grid_set_i64(g, c++, r->peak_reserved) || tk__grid_set_i64(g, c++, r->reserved_ts);
	rc = rc || tk__grid_set_i64(g, c++, r->final_alloc) || tk__grid_set(g, c++, from, from) ||
	     tk__grid_set(g, c++, r->op_at_peak, r->op_at_peak);
	return rc ? TK_ERR_NOMEM : 0;
}

int tk_stats_format_memory(tk_stats *const *s, size_t n, const tk_table_opts *o, char **out, size_t *len)
{
	*out = NULL;
	if (!s || !n || !o)
		return TK_ERR_ARG;
	tk__grid g = {0};
	int rc = n > 1 ? tk__grid_col(&g, "Rank", "rank", 0, 1, 0) : 0;
	rc = rc || tk__grid_col(&g, "Device", "device", 0, 1, 0);
	for (size_t i = 0; !rc && i < sizeof mem_heads / sizeof mem_heads[0]; i++) {
		int text = i >= sizeof mem_heads / sizeof mem_heads[0] - 2;
		rc = tk__grid_col(&g, mem_heads[i][0], mem_heads[i][1], 0, text, !text);
	}
	size_t rows = 0;
	char l[40];
	for (size_t i = 0; !rc && i < n; i++) {
		tk__grid_label(o, i, l, sizeof l);
		for (size_t k = 0; !rc && k < s[i]->n_mem_rows; k++, rows++)
			if (o->row_limit < 0 || rows < (size_t)o->row_limit)
				rc = mem_line(&g, &s[i]->mem_rows[k], n > 1 ? l : NULL);
	}
	return tk__grid_output(&g, rc, rows, o->format, out, len);
}
