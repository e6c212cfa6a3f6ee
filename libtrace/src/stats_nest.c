/* stats_nest.c: the CPU ops nested by time on their thread and the GPU time
 * attributed to the op that launched it, from records in arrival order
 * (tk__nrec); on a thread of its own beside the caller's when the stats
 * object was given threads, the same records in the same order either way. */
#include <stdlib.h>

#include "stats_internal.h"

/* Records per block handed to the nesting thread, and blocks at most (in
 * the caller's hands, queued and being processed): about 2 MiB. */
#define NBLK_RECS 8192
#define NBLK_MAX 5

struct tk__nblk {
	struct tk__nblk *next;
	size_t n;
	tk__nrec r[NBLK_RECS];
};

/* The message of an error that ends the processing: rc. Only the side that
 * processes writes it (the thread while it runs); n->rc is set after. */
static int fail(tk__nest *n, int rc, const char *msg)
{
	return tk__err_msg(&n->err, rc, "%s", msg);
}

/* An id map's page that could not be written or read back, else out of memory. */
static int map_fail(tk__nest *n, int rc)
{
	const tk__pool *p = n->ext_map.pool.err ? &n->ext_map.pool : n->corr_map.pool.err ? &n->corr_map.pool : NULL;
	return fail(n, rc, p && rc != TK_ERR_NOMEM ? p->msg : "out of memory");
}

static tk__nrow *row_at(tk__nest *n, uint32_t key)
{
	if (key > n->n_rows) {
		size_t old = n->cap_rows;
		if (tk__grow(&n->rows, &n->cap_rows, key, sizeof *n->rows, 64))
			return NULL;
		for (size_t i = old; i < n->cap_rows; i++)
			n->rows[i] = (tk__nrow){0, 0, 0, 0, 0, 0, INT64_MAX, 0};
		n->n_rows = key;
	}
	return &n->rows[key - 1];
}

void tk__first_seen(int64_t *first_ts, int64_t *first_end, int64_t ts, int64_t end)
{
	if (ts < *first_ts || (ts == *first_ts && end > *first_end)) {
		*first_ts = ts;
		*first_end = end;
	}
}

/* Chain id for (row, parent chain); 0 on allocation failure. */
static uint32_t chain_of(tk__nest *n, uint32_t row, uint32_t parent)
{
	uint64_t key = (uint64_t)row << 32 | parent;
	uint32_t c = (uint32_t)tk__map_get0(&n->chain_index, key);
	if (c)
		return c;
	size_t cap = n->cap_chains;
	if (tk__grow(&n->chain_key, &n->cap_chains, n->n_chains + 1, sizeof *n->chain_key, 16))
		return 0;
	if (cap != n->cap_chains) {
		uint32_t *np = realloc(n->chain_parent, n->cap_chains * sizeof *np);
		if (!np)
			return 0;
		n->chain_parent = np;
	}
	c = (uint32_t)n->n_chains++;
	n->chain_key[c] = row;
	n->chain_parent[c] = parent;
	return tk__map_put_int(&n->chain_index, key, c) ? 0 : c;
}

/* Attribute a GPU activity's time to the ops on call path `c`. */
static void attribute(tk__nest *n, uint32_t c, int64_t dur)
{
	n->rows[n->chain_key[c] - 1].self_dev += dur;
	for (; c; c = n->chain_parent[c])
		n->rows[n->chain_key[c] - 1].dev_total += dur;
}

/* Call path of the launching op: by External id when the trace links it
 * (some Kineto builds write External id == correlation, unlinked), else
 * through the runtime call with the same correlation. */
static uint32_t resolve(tk__nest *n, int64_t ext, int64_t corr)
{
	uint32_t c = 0;
	if (ext > 0 && ext != corr)
		c = tk__idmap_get(&n->ext_map, (uint64_t)ext);
	if (!c && corr > 0)
		c = tk__idmap_get(&n->corr_map, (uint64_t)corr);
	return c;
}

/* Retry deferred GPU activities; with `final`, the rest are unattributed. */
static void retry_deferred(tk__nest *n, int final)
{
	size_t k = 0;
	for (size_t i = 0; i < n->n_defer; i++) {
		tk__defer *d = &n->defer[i];
		uint32_t c = resolve(n, d->ext, d->corr);
		if (c)
			attribute(n, c, d->dur);
		else if (final)
			n->unattributed++;
		else
			n->defer[k++] = *d;
	}
	n->n_defer = k;
}

/* An API call processed after later ops: its op is found by External id. */
static tk__frame *late_api_parent(tk__nest *n, const tk__pend *p, tk__frame *tmp)
{
	uint32_t c = p->ext > 0 && p->ext != p->corr ? tk__idmap_get(&n->ext_map, (uint64_t)p->ext) : 0;
	if (!c)
		return NULL;
	*tmp = (tk__frame){0, 0, n->chain_key[c], c, 0};
	return tmp;
}

static int process_op(tk__nest *n, tk__thread *t, const tk__pend *p)
{
	int late = t->started && p->ts < t->frontier;
	tk__frame tmp, *par = tk__parent_frame(t, p, late);
	if (late && p->api && !par)
		par = late_api_parent(n, p, &tmp);
	tk__nrow *row = row_at(n, p->key);
	if (!row)
		return TK_ERR_NOMEM;
	row->count++;
	row->cpu_total += p->dur;
	row->self_cpu += p->dur;
	tk__first_seen(&row->first_ts, &row->first_end, p->ts, tk__sat_add(p->ts, p->dur));
	if (par)
		n->rows[par->key - 1].self_cpu -= p->dur;
	uint64_t fl = p->flops;
	int counted = par && par->counted;
	if (n->extended && counted)
		fl = 0; /* the outermost counted op has these FLOPs already */
	row->flops += fl;
	/* an API call adds no level: its kernels belong to the enclosing op */
	uint32_t chain = p->api ? (par ? par->chain : 0) : chain_of(n, p->key, par ? par->chain : 0);
	if (!p->api && !chain)
		return TK_ERR_NOMEM;
	int rc = 0;
	if (!p->api && p->ext > 0)
		rc = tk__idmap_put(&n->ext_map, (uint64_t)p->ext, chain);
	else if (p->api && chain && p->corr > 0)
		rc = tk__idmap_put(&n->corr_map, (uint64_t)p->corr, chain);
	if (rc)
		return rc;
	if (late) {
		n->late++;
		return 0;
	}
	t->started = 1;
	t->frontier = p->ts;
	if (tk__grow(&t->stack, &t->cap_stack, t->depth + 1, sizeof *t->stack, 16))
		return TK_ERR_NOMEM;
	t->stack[t->depth++] = (tk__frame){p->ts, tk__sat_add(p->ts, p->dur), p->key, chain, counted || fl > 0};
	return 0;
}

/* Sort a thread's pending events and process the first `k` of them. */
static int flush_thread(tk__nest *n, tk__thread *t, size_t k)
{
	int rc = tk__pend_sort(t->pend, t->n_pend, t->n_sorted);
	if (rc)
		return fail(n, rc, rc == TK_ERR_NOMEM ? "out of memory" : "too many pending events on one thread");
	for (size_t i = 0; i < k; i++) {
		if ((rc = process_op(n, t, &t->pend[i])) != 0)
			return map_fail(n, rc);
	}
	if (t->n_pend > k) /* (a thread with none has no array) */
		memmove(t->pend, t->pend + k, (t->n_pend - k) * sizeof *t->pend);
	t->n_pend -= k;
	t->n_sorted = t->n_pend;
	n->n_pending -= k;
	return 0;
}

/* Process every pending event; deferred GPU activities that still find no
 * op will not find one later (Kineto writes CPU events first). */
static int flush_all(tk__nest *n)
{
	for (size_t i = 0; i < n->n_threads; i++) {
		int rc = flush_thread(n, &n->threads[i], n->threads[i].n_pend);
		if (rc)
			return rc;
	}
	retry_deferred(n, 1);
	return 0;
}

/* Keep memory bounded: process the older half of the fullest thread, or
 * everything when deferred GPU activities fill the budget. */
static int over_budget(tk__nest *n, tk__thread *t)
{
	if (n->n_defer > n->max_pending / 2 || !t)
		return flush_all(n);
	int rc = flush_thread(n, t, t->n_pend / 2 + 1);
	retry_deferred(n, 0);
	return rc;
}

static int process(tk__nest *n, const tk__nrec *r)
{
	if (r->kind == TK__NREC_DEV) {
		uint32_t c = resolve(n, r->ext, r->corr);
		if (c) {
			attribute(n, c, r->dur);
		} else if (n->n_pending) {
			if (tk__grow(&n->defer, &n->cap_defer, n->n_defer + 1, sizeof *n->defer, 16))
				return fail(n, TK_ERR_NOMEM, "out of memory");
			n->defer[n->n_defer++] = (tk__defer){r->dur, r->ext, r->corr};
			if (n->n_pending + n->n_defer > n->max_pending)
				return over_budget(n, NULL);
		} else {
			n->unattributed++;
		}
		return 0;
	}
	if (r->thread >= n->n_threads) {
		size_t old = n->cap_threads;
		if (tk__grow(&n->threads, &n->cap_threads, (size_t)r->thread + 1, sizeof *n->threads, 16))
			return fail(n, TK_ERR_NOMEM, "out of memory");
		memset(n->threads + old, 0, (n->cap_threads - old) * sizeof *n->threads);
		n->n_threads = (size_t)r->thread + 1;
	}
	tk__thread *t = &n->threads[r->thread];
	if (tk__grow(&t->pend, &t->cap_pend, t->n_pend + 1, sizeof *t->pend, 16))
		return fail(n, TK_ERR_NOMEM, "out of memory");
	t->pend[t->n_pend++] = (tk__pend){r->ts, r->dur, r->ext, r->corr, r->flops, r->key, r->kind == TK__NREC_API};
	if (++n->n_pending + n->n_defer > n->max_pending)
		return over_budget(n, t);
	return 0;
}

/* ---- the nesting thread ---- */

/* The thread's step: the oldest block handed over processed. */
static int nest_step(void *owner, void *state)
{
	tk__nest *n = owner;
	(void)state;
	tk__nblk *b = n->queue;
	if (!b)
		return 0;
	n->queue = b->next;
	if (!n->queue)
		n->queue_tail = NULL;
	n->busy = 1;
	int rc = n->rc;
	pthread_mutex_unlock(&n->W.mu);
	/* after an error the rest is not processed: the caller stops */
	for (size_t i = 0; i < b->n && !rc; i++)
		rc = process(n, &b->r[i]);
	pthread_mutex_lock(&n->W.mu);
	if (rc && !n->rc)
		n->rc = rc;
	b->n = 0;
	b->next = n->spare;
	n->spare = b;
	n->busy = 0;
	tk__workers_done(&n->W);
	return 1;
}

static const tk__workers_ops nest_ops = {0, NULL, NULL, nest_step};

int tk__nest_init(tk__nest *n, const tk_stats_opts *o)
{
	memset(n, 0, sizeof *n);
	n->max_pending = o->max_pending;
	n->extended = o->flops == TK_FLOPS_EXTENDED;
	n->n_chains = 1; /* chain 0 = no op */
	if (tk__grow(&n->chain_key, &n->cap_chains, 1024, sizeof *n->chain_key, 16) ||
	    !(n->chain_parent = malloc(n->cap_chains * sizeof *n->chain_parent)))
		return TK_ERR_NOMEM;
	if (o->threads < 2)
		return 0;
	tk__workers_init(&n->W, &nest_ops, n);
	n->sync = 1;
	/* without the thread the caller processes each record as it comes */
	n->running = tk__workers_start(&n->W, 1, "tk-nest") == 1;
	return 0;
}

/* The caller's block, if it holds records, to the end of the queue (the lock held). */
static void push(tk__nest *n)
{
	if (!n->cur || !n->cur->n)
		return;
	n->cur->next = NULL;
	if (n->queue_tail)
		n->queue_tail->next = n->cur;
	else
		n->queue = n->cur;
	n->queue_tail = n->cur;
	n->cur = NULL;
	tk__workers_wake(&n->W);
}

/* Hands the caller's block to the thread and takes an empty one: 0, or the
 * thread's error, or TK_ERR_NOMEM. */
static int hand_over(tk__nest *n)
{
	pthread_mutex_lock(&n->W.mu);
	push(n);
	while (!n->cur && !n->rc) {
		if (n->spare) {
			n->cur = n->spare;
			n->spare = n->cur->next;
		} else if (n->n_blocks < NBLK_MAX) {
			if (!(n->cur = malloc(sizeof *n->cur)))
				break;
			n->n_blocks++;
		} else {
			tk__workers_wait(&n->W);
		}
	}
	int rc = n->rc;
	pthread_mutex_unlock(&n->W.mu);
	if (rc)
		return rc;
	if (!n->cur)
		return TK_ERR_NOMEM;
	n->cur->n = 0;
	return 0;
}

int tk__nest_add(tk__nest *n, const tk__nrec *r)
{
	if (!n->running) {
		if (!n->rc)
			n->rc = process(n, r);
		return n->rc;
	}
	if (n->cur && n->cur->n < NBLK_RECS) {
		n->cur->r[n->cur->n++] = *r;
		return 0;
	}
	int rc = hand_over(n);
	if (rc)
		return rc;
	n->cur->r[n->cur->n++] = *r;
	return 0;
}

/* Ends the thread once it has processed what it was handed (stop: at
 * once); the caller owns the state after. */
static void join(tk__nest *n, int stop)
{
	if (!n->running)
		return;
	pthread_mutex_lock(&n->W.mu);
	if (!stop && !n->rc) {
		push(n);
		while ((n->queue && !n->rc) || n->busy)
			tk__workers_wait(&n->W);
	}
	pthread_mutex_unlock(&n->W.mu);
	tk__workers_stop(&n->W);
	n->running = 0;
}

int tk__nest_finish(tk__nest *n)
{
	join(n, 0);
	if (!n->rc)
		n->rc = flush_all(n);
	if (!n->rc && (n->ext_map.pool.err || n->corr_map.pool.err)) /* a page that could not be read back */
		n->rc = map_fail(n, n->ext_map.pool.err ? n->ext_map.pool.err : n->corr_map.pool.err);
	return n->rc;
}

const char *tk__nest_error(const tk__nest *n)
{
	return n->rc ? n->err.msg : "out of memory";
}

void tk__nest_free(tk__nest *n)
{
	join(n, 1);
	free(n->cur);
	for (tk__nblk *b = n->queue, *nx; b; b = nx) {
		nx = b->next;
		free(b);
	}
	for (tk__nblk *b = n->spare, *nx; b; b = nx) {
		nx = b->next;
		free(b);
	}
	if (n->sync)
		tk__workers_free(&n->W);
	for (size_t i = 0; i < n->n_threads; i++) {
		free(n->threads[i].pend);
		free(n->threads[i].stack);
	}
	free(n->threads);
	free(n->defer);
	free(n->rows);
	free(n->chain_key);
	free(n->chain_parent);
	tk__map_free(&n->chain_index);
	tk__idmap_free(&n->ext_map);
	tk__idmap_free(&n->corr_map);
	tk__err_free(&n->err);
	memset(n, 0, sizeof *n);
}
