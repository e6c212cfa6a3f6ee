/* split_scan.c: the splitter's first pass: metadata, M events, flow table, steps, bytes over time, order. */
#include <stdlib.h>

#include "pump.h"
#include "split_int.h"
#include "steps_int.h"
#include "tracekit/merge.h"
#include "tracekit/sort.h"

/* ---- flow table ---- */

int tk__flow_key(tk__flowtab *t, const tk_event *ev, int add, uint64_t *id, uint32_t *catk)
{
	if (ev->id.kind == TK_ID_NONE)
		return 0;
	tk_sv cat = (ev->has & TK_HAS_CAT) ? ev->cat : (tk_sv){"", 0};
	uint32_t ci;
	if (add) {
		if (t->cats.n >= (1u << 28) && !tk__strtab_find(&t->cats, cat.ptr, cat.len, &ci))
			return 0;
		if (!tk__strtab_intern_id(&t->cats, cat.ptr, cat.len, &ci).ptr)
			return -1;
	} else if (!tk__strtab_find(&t->cats, cat.ptr, cat.len, &ci)) {
		return 0;
	}
	*catk = (ci + 1) << 2 | (uint32_t)ev->id.kind;
	*id = ev->id.kind == TK_ID_INT ? (uint64_t)ev->id.num : tk__hash(ev->id.str.ptr, ev->id.str.len);
	return 1;
}

typedef struct flow_key {
	uint64_t id;
	uint32_t catk;
} flow_key;

static int flow_eq(const void *rec, const void *key)
{
	const tk__flow *f = rec;
	const flow_key *k = key;
	return f->id == k->id && f->catk == k->catk;
}

static uint64_t flow_hash(uint64_t id, uint32_t catk)
{
	return tk__mix64(id ^ ((uint64_t)catk << 40));
}

tk__flow *tk__flow_find(tk__flowtab *t, uint64_t id, uint32_t catk)
{
	flow_key k = {id, catk};
	return tk__map_find(&t->map, flow_hash(id, catk), flow_eq, &k);
}

tk__flow *tk__flow_add(tk__flowtab *t, uint64_t id, uint32_t catk)
{
	/* a load of 7/8 keeps the table at 32-64 bytes a flow */
	if (!t->map.esize)
		tk__map_init(&t->map, sizeof(tk__flow), 7);
	flow_key k = {id, catk};
	int added;
	tk__flow *f = tk__map_put(&t->map, flow_hash(id, catk), flow_eq, &k, &added);
	if (f && added) {
		f->id = id;
		f->catk = catk;
	}
	return f;
}

void tk__flowtab_free(tk__flowtab *t)
{
	tk__map_free(&t->map);
	tk__strtab_free(&t->cats);
}

/* ---- the input's bytes over time ---- */

void tk__quant_add(tk__quant *q, int64_t ts, uint64_t w)
{
	if (!q->every)
		q->every = 1;
	uint64_t end = q->pos + w < q->pos ? UINT64_MAX : q->pos + w;
	uint64_t k = end / q->every - q->pos / q->every;
	while (q->n + k > TK__QUANT_MAX) {
		/* sample i stands at byte (i + 1) * every: the odd ones stay */
		for (size_t i = 1; i < q->n; i += 2)
			q->ts[i / 2] = q->ts[i];
		q->n /= 2;
		q->every *= 2;
		k = end / q->every - q->pos / q->every;
	}
	for (; k; k--)
		q->ts[q->n++] = ts;
	q->pos = end;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

size_t tk__quant_cuts(tk__quant *q, unsigned n, int64_t *cuts)
{
	size_t k = 0;
	if (!q->n)
		return 0;
	qsort(q->ts, q->n, sizeof *q->ts, cmp_i64);
	for (unsigned i = 1; i < n; i++) {
		int64_t t = q->ts[(size_t)((uint64_t)i * q->n / n)];
		if (t > (k ? cuts[k - 1] : q->ts[0]))
			cuts[k++] = t;
	}
	return k;
}

/* ---- the pass ---- */

static int add_mev(tk__scan *sc, const tk_event *ev)
{
	if (tk__grow(&sc->mev, &sc->mev_cap, sc->n_mev + 1, sizeof *sc->mev, 64))
			return TK_ERR_NOMEM;
	return (sc->mev[sc->n_mev] = tk_event_dup(ev)) ? (sc->n_mev++, 0) : TK_ERR_NOMEM;
}

static int add_flow_end(tk__scan *sc, const tk_event *ev)
{
	uint64_t id;
	uint32_t catk;
	int rc = tk__flow_key(&sc->flows, ev, 1, &id, &catk);
	if (rc <= 0)
		return rc;
	tk__flow *f = tk__flow_add(&sc->flows, id, catk);
	if (!f)
		return TK_ERR_NOMEM;
	uint16_t *c = ev->ph == 's' ? &f->rem_s : &f->rem_f;
	if (*c < UINT16_MAX)
		(*c)++;
	return 0;
}

static int is_flow(const tk_event *ev)
{
	return ev->ph == 's' || ev->ph == 'f';
}

/* Remember a flow end that came before t_max; 0 when its id or category is
 * too long to keep (the input then counts as out of order). */
static int keep_pending(tk__order *o, const tk_event *ev)
{
	if (ev->cat.len > sizeof o->cat || (ev->id.kind == TK_ID_STR && ev->id.str.len > sizeof o->idbuf))
		return 0;
	o->pending = 1;
	o->ph = ev->ph;
	o->id = ev->id;
	if (ev->id.kind == TK_ID_STR) {
		memcpy(o->idbuf, ev->id.str.ptr, ev->id.str.len);
		o->id.str.ptr = o->idbuf;
	}
	o->cat_len = ev->cat.len;
	if (ev->cat.len)
		memcpy(o->cat, ev->cat.ptr, ev->cat.len);
	return 1;
}

static int is_partner(const tk__order *o, const tk_event *ev)
{
	return is_flow(ev) && ev->ph != o->ph && tk__id_eq(&ev->id, &o->id) && ev->cat.len == o->cat_len &&
	       (!o->cat_len || memcmp(ev->cat.ptr, o->cat, o->cat_len) == 0);
}

/* 1 when the input needs sorting at ev (not in time order). One flow end
 * may come before the latest time when its partner follows at once, in
 * order: trace-split writes a held flow's two ends together, and the
 * second pass takes the first one late into the partner's part. Any other
 * event out of order, a flow end included, makes the input unsorted.
 * Used by the scan and, on the reader's thread, by want_args, which must
 * agree event by event; order_end() at the end of the input. */
static int order_next(tk__order *o, const tk_event *ev)
{
	if (ev->ph == 'M')
		return 0;
	int has = (ev->has & TK_HAS_TS) != 0;
	if (o->pending) {
		o->pending = 0;
		if (!has || ev->ts < o->t_max || !is_partner(o, ev))
			return 1;
	}
	if (!has)
		return 0;
	if (o->have_t && ev->ts < o->t_max)
		return !is_flow(ev) || !keep_pending(o, ev);
	o->t_max = ev->ts;
	o->have_t = 1;
	return 0;
}

static int order_end(const tk__order *o)
{
	return o->pending;
}

static int scan_event(tk__scan *sc, const tk_event *ev, uint64_t weight)
{
	sc->events++;
	if (ev->ph == 'M')
		return add_mev(sc, ev);
	if ((ev->ph == 's' || ev->ph == 'f') && add_flow_end(sc, ev))
		return TK_ERR_NOMEM;
	if (order_next(&sc->ord, ev))
		sc->sorted = 0;
	if (!(ev->has & TK_HAS_TS))
		return 0;
	if (!sc->have_t || ev->ts < sc->t_min)
		sc->t_min = ev->ts;
	if (!sc->have_t || ev->ts > sc->t_max)
		sc->t_max = ev->ts;
	sc->have_t = 1;
	tk__quant_add(&sc->quant, ev->ts, weight);
	/* the steps always; the launches only when the parts follow the steps */
	int64_t num;
	return sc->attr || tk__step_number(ev, &num) ? tk_steps_add(sc->steps, ev) : 0;
}


static int keep_meta(tk__scan *sc, const tk_reader *r)
{
	size_t n = tk_reader_meta_count(r);
	sc->meta = calloc(n ? n : 1, sizeof *sc->meta);
	if (!sc->meta)
		return TK_ERR_NOMEM;
	for (size_t i = 0; i < n; i++) {
		tk_sv k, v;
		int after = 0;
		tk_reader_meta_get(r, i, &k, &v, &after);
		tk__meta *m = &sc->meta[sc->n_meta];
		m->key.ptr = malloc(k.len + 1);
		m->json = malloc(v.len + 1);
		if (!m->key.ptr || !m->json) {
			free((char *)m->key.ptr);
			free(m->json);
			return TK_ERR_NOMEM;
		}
		memcpy((char *)m->key.ptr, k.ptr, k.len + 1);
		memcpy(m->json, v.ptr, v.len + 1);
		m->key.len = k.len;
		m->json_len = v.len;
		m->after = after;
		sc->n_meta++;
	}
	return 0;
}

static void count_orphans(tk__scan *sc)
{
	size_t i = 0;
	for (tk__flow *f; (f = tk__map_next(&sc->flows.map, &i));) /* ends pair one to one: the rest have no partner */
		sc->orphan_ends += f->rem_s > f->rem_f ? f->rem_s - f->rem_f : f->rem_f - f->rem_s;
}

static int reader_warnings(tk_reader *r, tk__err *err)
{
	if (tk__err_take_warnings(err, &r->err))
		return TK_ERR_NOMEM;
	const tk_reader_stats *st = tk_reader_get_stats(r);
	if (st->repaired_strings &&
	    tk__err_warn(err, "%s: %llu strings held invalid UTF-8 and were repaired with U+FFFD",
	                 tk_reader_name(r), (unsigned long long)st->repaired_strings))
		return TK_ERR_NOMEM;
	return 0;
}

/* About the bytes the event takes when written (the reader decodes in
 * blocks, so its byte counts cannot be tied to one event). */
static uint64_t weight(const tk_event *ev)
{
	return 64 + ev->name.len + ev->cat.len + ev->args.len + ev->extra.len +
	       (ev->pid.kind == TK_ID_STR ? ev->pid.str.len : 0) +
	       (ev->tid.kind == TK_ID_STR ? ev->tid.str.len : 0);
}

/* Events [from, to) of the input, again, into the sorter. */
static int feed_prefix(tk_sorter *so, const char *path, const tk_split_opts *o, uint64_t from,
                       uint64_t to, tk__err *err)
{
	tk_reader *r = NULL;
	const tk_event *ev;
	int rc = tk_reader_open_path(&r, path, &o->ropts);
	for (uint64_t i = 0; !rc && i < to; i++) {
		if ((rc = tk_reader_next(r, &ev)) == TK_EOF)
			rc = TK_ERR_IO; /* the file changed under us */
		else if (!rc && i >= from && ev->ph != 'M' && (rc = tk_sorter_add(so, ev, 0)))
			tk__err_msg(err, 0, "%s: " TK__SPLIT_ORDERING ": %s", path, tk_sorter_error(so));
	}
	if (rc && !err->msg[0])
		tk__err_msg(err, 0, "%s: %s", path, r && *tk_reader_error(r) ? tk_reader_error(r) :
		         "the input changed while it was read");
	tk_reader_free(r);
	return rc;
}

/* --memory (0: 128 MiB), and with a step rule the quarter of it that
 * sorts the launches (the rest orders an unsorted input). */
static size_t memory_total(const tk_split_opts *o)
{
	return o->memory_bytes ? o->memory_bytes : (size_t)128 << 20;
}

static size_t launch_memory(const tk__scan *sc, const tk_split_opts *o)
{
	return sc->attr ? memory_total(o) / 4 : 0;
}

static int new_sorter(tk__scan *sc, const char *path, const tk_split_opts *o, tk__err *err)
{
	tk_sorter_opts so = {tk__sorter_share(memory_total(o) - launch_memory(sc, o)), o->tmpdir};
	int rc = tk_sorter_new(&sc->sorter, &so);
	if (rc)
		tk__err_msg(err, 0, "%s: " TK__SPLIT_ORDERING ": cannot start the sorter: %s", path,
		         sc->sorter ? tk_sorter_error(sc->sorter) : "out of memory");
	return rc;
}

/* Counts the events in the sorter's order from the start (ts events after
 * the others, ts never going back, flow ends included): the prefix that the
 * write can read again from the file instead of taking it from the sorter. */
static void strict_order(tk__scan *sc, const tk_event *ev, uint64_t idx)
{
	int has = (ev->has & TK_HAS_TS) != 0;
	if (ev->ph == 'M' || !sc->strict)
		return;
	if (sc->strict_has_ts && (!has || ev->ts < sc->strict_ts)) {
		sc->strict = 0;
		sc->n_prefix = idx;
		return;
	}
	if (has) {
		sc->strict_has_ts = 1;
		sc->strict_ts = ev->ts;
	}
}

/* The first event out of order starts the sorter. The events before it came
 * in order: those in the sorter's order from the start (n_prefix) are read
 * again by the write, merged with the sorter's output; the rest (flow ends
 * out of order, see scan_event) are read again now to feed the sorter. */
static int start_sorter(tk__scan *sc, const char *path, const tk_split_opts *o, uint64_t idx,
                        tk__err *err)
{
	int rc = new_sorter(sc, path, o, err);
	if (!rc && sc->n_prefix < idx)
		rc = feed_prefix(sc->sorter, path, o, sc->n_prefix, idx, err);
	return rc;
}

/* On the reader's thread: the args an event needs in this pass. M events
 * are kept whole; the others go to the sorter from the first event out of
 * order on (the test of scan_event); before that, the second pass reads
 * them again in full, so only their extent and length are needed here. */
static int want_args(void *arg, const tk_event *ev)
{
	tk__order *o = arg;
	if (ev->ph == 'M' || o->unsorted)
		return 1;
	return (o->unsorted = order_next(o, ev)) || (o->launch_args && tk__steps_wants_args(ev));
}

static int scan_loop(tk__scan *sc, tk__pump *p, const char *path, const tk_split_opts *o, tk__err *err)
{
	const tk_event *ev;
	int rc;
	while ((rc = tk__pump_next(p, &ev)) == TK_OK) {
		uint64_t n = tk__pump_events(p);
		int was_sorted = sc->sorted;
		strict_order(sc, ev, n - 1);
		if ((rc = scan_event(sc, ev, weight(ev))) != 0) {
			if (rc != TK_ERR_NOMEM)
				tk__err_msg(err, 0, "%s: %s", path, tk_steps_error(sc->steps));
			return rc;
		}
		if (was_sorted && !sc->sorted && (rc = start_sorter(sc, path, o, n - 1, err)))
			return rc;
		if (sc->sorter && ev->ph != 'M' && (ev->has & TK__HAS_NO_ARGS)) {
			tk__err_msg(err, 0, "%s: internal error: event %llu reached the sorter without "
			         "its args", path, (unsigned long long)n);
			return TK_ERR_ARG;
		}
		if (sc->sorter && ev->ph != 'M' && (rc = tk_sorter_add(sc->sorter, ev, 0))) {
			tk__err_msg(err, 0, "%s: " TK__SPLIT_ORDERING ": %s", path, tk_sorter_error(sc->sorter));
			return rc;
		}
		if (o->progress && (n & 0xffff) == 0)
			o->progress(o->progress_ctx, sc->sorted ? "scanning" : "sorting",
			            tk__pump_bytes_in(p), n);
	}
	return rc;
}

/* The steps, and with a step rule the launches (docs/steps.md). A merged
 * trace numbers correlation ids per rank: its pid scheme is in the
 * metadata before the first event (a reader's error is the pass's). */
static int steps_new(tk__scan *sc, const char *path, const tk_split_opts *o)
{
	sc->attr = o->by_step || o->steps;
	if (tk_steps_new(&sc->steps) || (sc->attr && tk_steps_set_memory(sc->steps, launch_memory(sc, o), o->tmpdir)))
		return TK_ERR_NOMEM;
	tk_reader *r = NULL;
	const tk_event *ev;
	int64_t span;
	if (sc->attr && tk_reader_open_path(&r, path, &o->ropts) == 0 && tk_reader_next(r, &ev) == TK_OK &&
	    tk_merge_pid_span(r, &span) == 0)
		tk_steps_set_pid_span(sc->steps, span);
	tk_reader_free(r);
	return 0;
}

int tk__split_scan(tk__scan *sc, const char *path, const tk_split_opts *o, tk__err *err)
{
	tk__pump *p = NULL;
	if (steps_new(sc, path, o))
		return tk__err_msg(err, TK_ERR_NOMEM, "%s: out of memory in the first pass", path);
	tk__order ord = {0};
	ord.launch_args = sc->attr;
	int rc = tk__pump_open(&p, path, &o->ropts, UINT64_MAX, want_args, &ord);
	sc->sorted = sc->strict = 1;
	if (!rc)
		rc = scan_loop(sc, p, path, o, err);
	tk_reader *r = tk__pump_reader(p); /* NULL when the loop stopped early */
	if (rc == TK_EOF && sc->sorted && order_end(&sc->ord)) {
		/* a flow end out of order was the last event: to the sorter with it */
		sc->sorted = 0;
		rc = start_sorter(sc, path, o, sc->events, err);
		rc = rc ? rc : TK_EOF;
	}
	if (rc == TK_EOF)
		rc = keep_meta(sc, r);
	if (rc == TK_ERR_NOMEM)
		tk__err_msg(err, 0, "%s: out of memory in the first pass", path);
	else if (rc && !err->msg[0])
		tk__err_msg(err, 0, "%s", r ? tk_reader_error(r) : "out of memory");
	if (!rc) {
		sc->gz_input = strchr(tk_reader_format(r), '.') != NULL; /* "json.gz": a filter under the format */
		tk_steps_finish(sc->steps);
		count_orphans(sc);
		rc = reader_warnings(r, err);
	}
	tk__pump_free(p);
	return rc;
}

void tk__scan_free(tk__scan *sc)
{
	for (size_t i = 0; i < sc->n_meta; i++) {
		free((char *)sc->meta[i].key.ptr);
		free(sc->meta[i].json);
	}
	free(sc->meta);
	for (size_t i = 0; i < sc->n_mev; i++)
		tk_event_free(sc->mev[i]);
	free(sc->mev);
	tk__flowtab_free(&sc->flows);
	tk_steps_free(sc->steps);
	tk_sorter_free(sc->sorter);
	memset(sc, 0, sizeof *sc);
}
