/* stats.c: streaming accumulation of operator rows, call paths and GPU attribution. */
#include <stdlib.h>

#include "stats_internal.h"
#include "tracekit/merge.h"
#include "tracekit/sort.h"

#define TK__DEFAULT_PENDING (1u << 19)

/* ---- classification ---- */

static int sv_is(tk_sv s, const char *lit)
{
	size_t n = strlen(lit);
	return s.len == n && memcmp(s.ptr, lit, n) == 0;
}

int tk_stats_event_class(tk_sv cat, int has_cat)
{
	static const struct { const char *cat; int cls; } tab[] = {
		{"cpu_op", TK_STATS_OP}, {"Operator", TK_STATS_OP}, {"user_annotation", TK_STATS_OP},
		{"cuda_runtime", TK_STATS_API}, {"Runtime", TK_STATS_API}, {"cuda_driver", TK_STATS_API},
		{"mtia_runtime", TK_STATS_API}, {"privateuse1_runtime", TK_STATS_API},
		{"kernel", TK_STATS_KERNEL}, {"Kernel", TK_STATS_KERNEL},
		{"mtia_ccp_events", TK_STATS_KERNEL},
		{"gpu_memcpy", TK_STATS_MEMCPY}, {"Memcpy", TK_STATS_MEMCPY},
		{"gpu_memset", TK_STATS_MEMSET}, {"Memset", TK_STATS_MEMSET},
	};
	if (!has_cat || !cat.ptr)
		return TK_STATS_OP; /* the legacy autograd exporter writes no categories */
	for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++)
		if (sv_is(cat, tab[i].cat))
			return tab[i].cls;
	return TK_STATS_SKIP;
}

/* ev's class under a --cat list ("a,b"; NULL: the default set): listed
 * categories keep their class, unknown ones are ops. */
static int classify_in(const char *cats, const tk_event *ev)
{
	int has = (ev->has & TK_HAS_CAT) != 0;
	int cls = tk_stats_event_class(ev->cat, has);
	if (!cats)
		return cls;
	if (!has || ev->cat.len + 3 > 128)
		return TK_STATS_SKIP;
	for (const char *p = cats;;) {
		const char *e = strchr(p, ',');
		size_t n = e ? (size_t)(e - p) : strlen(p);
		if (n == ev->cat.len && memcmp(p, ev->cat.ptr, n) == 0)
			return cls ? cls : TK_STATS_OP;
		if (!e)
			return TK_STATS_SKIP;
		p = e + 1;
	}
}

static int classify(const tk_stats *s, const tk_event *ev)
{
	return classify_in(s->cats, ev);
}

/* ---- notes: the args members read on the reader's threads ---- */

/* The options a note depends on. */
static uint32_t note_fp(const char *cats, int flops, int shapes)
{
	uint64_t h = cats ? tk__hash(cats, strlen(cats)) : 0x6e6f7465u;
	return (uint32_t)tk__mix64(h ^ ((uint64_t)(unsigned)flops << 1 | (shapes != 0)));
}

/* Options under which an event's part of the tables depends on the event
 * alone and on the rows of its name (and shapes) and thread, so that a
 * batch's part can be made on a reader's thread (tk__stats_batch) and taken
 * whole: none of the tables that follow every event in turn, and no
 * window. */
static int batch_opts_ok(const tk_stats_opts *o)
{
	return !o->memory_table && !o->collective_table && !o->step_table && !o->launch_table && !o->flame &&
	       !o->window.set;
}

size_t tk_stats_note_size(void)
{
	return sizeof(tk__snote);
}

/* torch's _filter_name: utility ops dropped before the tree is built. */
static int filtered_name(tk_sv n)
{
	static const char *const names[] = {
		"[memory]", "[OutOfMemory]", "profiler::_record_function_enter",
		"profiler::_record_function_enter_new", "profiler::_record_function_exit",
		"profiler::_call_end_callbacks_on_jit_fut", "aten::is_leaf", "aten::output_nr",
		"aten::_version",
	};
	if (!n.len || (n.ptr[0] != '[' && n.ptr[0] != 'p' && n.ptr[0] != 'a'))
		return 0;
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
		if (sv_is(n, names[i]))
			return 1;
	return 0;
}

/* ---- lifecycle ---- */

int tk_stats_new(tk_stats **out, const tk_stats_opts *opts)
{
	*out = NULL;
	if (opts && opts->window.set && (opts->window.lo_rel || opts->window.hi_rel))
		return TK_ERR_ARG; /* a relative window needs the first event: tk_window_at() */
	tk_stats *s = calloc(1, sizeof *s);
	if (!s)
		return TK_ERR_NOMEM;
	if (opts)
		s->opts = *opts;
	if (!s->opts.max_pending)
		s->opts.max_pending = TK__DEFAULT_PENDING;
	s->note_fp = note_fp(s->opts.cats, s->opts.flops, s->opts.group_by_shapes);
	s->batches_ok = batch_opts_ok(&s->opts);
	if (s->opts.cats) {
		if (!(s->cats = tk__strdup(s->opts.cats))) {
			free(s);
			return TK_ERR_NOMEM;
		}
		s->opts.cats = NULL;
	}
	if (tk__nest_init(&s->nest, &s->opts)) {
		tk_stats_free(s);
		return TK_ERR_NOMEM;
	}
	s->info.ts_min = INT64_MAX;
	s->info.ts_max = INT64_MIN;
	/* GPU work in the window by its launch: part 1 of the steps' parts */
	int rc0 = 0;
	if (s->opts.steps && s->opts.window.set) {
		/* a window that ends before it starts holds nothing, by launch or not */
		tk_window w = s->opts.window;
		int64_t parts[3] = {INT64_MIN, w.lo, w.hi < w.lo ? w.lo : w.hi};
		rc0 = tk_steps_parts(s->opts.steps, parts, 3, NULL);
	}
	if (rc0) {
		tk_stats_free(s);
		return rc0;
	}
	/* the sorters' memory: the collectives' a sixteenth when others are
	 * built too, then the GPU time line's 8 ninths of the rest and the
	 * memory table's one when both are built */
	size_t total = s->opts.memory_bytes ? s->opts.memory_bytes : TK_STATS_MEMORY_DEFAULT;
	int tl = s->opts.step_table || s->opts.launch_table, mem = s->opts.memory_table;
	int coll = s->opts.collective_table;
	size_t rest = coll && (tl || mem) ? total - total / 16 : total;
	int rc = coll ? tk__stats_coll_init(s, tl || mem ? total / 16 : total) : 0;
	if (!rc && tl)
		rc = tk__stats_steps_init(s, mem ? rest / 9 * 8 : rest);
	if (!rc && mem)
		rc = tk__stats_memory_init(s, tl ? rest / 9 : rest);
	/* the id maps of the GPU attribution and the summaries' durations:
	 * an eighth of the memory each, at least 4 pages, the rest paged out */
	if (!rc && s->opts.tmpdir && !(s->tmpdir = tk__strdup(s->opts.tmpdir)))
		rc = TK_ERR_NOMEM;
	tk__pool *pools[4] = {&s->nest.ext_map.pool, &s->nest.corr_map.pool, &s->dur_pool, &s->coll_pool};
	static const char *const whose[4] = {"the GPU attribution's id map", "the GPU attribution's id map",
	                                     "the durations of the summaries", "the starts of the collectives"};
	for (int i = 0; i < 4; i++) {
		/* the collectives' starts are read in order: a few pages do */
		pools[i]->max_resident = tk__pool_pages(i == 3 ? 0 : total / 8);
		pools[i]->tmpdir = s->tmpdir;
		pools[i]->what = whose[i];
	}
	s->opts.tmpdir = NULL; /* the sorters and the maps have their copies */
	if (rc) {
		tk_stats_free(s);
		return rc;
	}
	*out = s;
	return 0;
}

void tk_stats_free(tk_stats *s)
{
	if (!s)
		return;
	free(s->cats);
	free(s->tmpdir);
	tk__strtab_free(&s->strs);
	free(s->ops);
	tk__map_free(&s->op_index);
	for (size_t i = 0; i < s->n_sums; i++)
		tk__durs_free(&s->sums[i].durs);
	free(s->sums);
	tk__pool_free(&s->dur_pool);
	tk__map_free(&s->sum_index);
	tk__nest_free(&s->nest);
	tk__stats_free_flame(s);
	free(s->threads);
	tk__map_free(&s->thread_index);
	free(s->bmap);
	tk_steps_free(s->st_steps);
	tk__stats_free_steps(s);
	free(s->step_rows);
	tk__map_free(&s->stream_index);
	for (size_t i = 0; i < s->n_streams; i++)
		free(s->stream_names[i]);
	free(s->stream_names);
	free(s->launch_rows);
	tk__stats_free_memory(s);
	tk__stats_free_coll(s);
	for (int i = 0; i < 6; i++)
		free(s->sum_order[i]);
	tk__buf_free(&s->scratch);
	tk__buf_free(&s->shapes);
	tk__err_free(&s->err);
	free(s);
}

const char *tk_stats_error(const tk_stats *s)
{
	return s ? s->err.msg : "out of memory";
}

const tk_stats_info *tk_stats_get_info(const tk_stats *s)
{
	return &s->info;
}

/* ---- rows, summaries and call paths ---- */

static tk_sv intern(tk_stats *s, const char *p, size_t n)
{
	return tk__strtab_intern(&s->strs, p, n);
}

/* Row index + 1 for (name, shapes, device); 0 on allocation failure. */
static uint32_t op_row(tk_stats *s, tk_sv name, tk_sv shapes, int dev)
{
	tk_sv nm = intern(s, name.ptr, name.len);
	if (!nm.ptr)
		return 0;
	uint64_t key = (uint64_t)(uintptr_t)nm.ptr;
	tk_sv sh = {"", 0};
	if (shapes.ptr) {
		tk__buf *b = &s->scratch;
		b->len = 0;
		if (tk__buf_append(b, name.ptr, name.len) || tk__buf_putc(b, '\x1f') ||
		    tk__buf_append(b, shapes.ptr, shapes.len))
			return 0;
		tk_sv both = intern(s, b->p, b->len);
		if (!both.ptr)
			return 0;
		key = (uint64_t)(uintptr_t)both.ptr;
		sh = (tk_sv){both.ptr + name.len + 1, shapes.len};
	}
	key = key * 2 + (dev != 0);
	uint32_t r = (uint32_t)tk__map_get0(&s->op_index, key);
	if (r)
		return r;
	if (tk__grow(&s->ops, &s->cap_ops, s->n_ops + 1, sizeof *s->ops, 16))
		return 0;
	tk__oprow *row = &s->ops[s->n_ops++];
	memset(row, 0, sizeof *row);
	row->pub.name = nm.ptr;
	row->pub.shapes = sh.ptr;
	row->pub.is_device = dev;
	row->first_ts = INT64_MAX;
	if (tk__map_put_int(&s->op_index, key, (uint32_t)s->n_ops))
		return 0;
	return (uint32_t)s->n_ops;
}

static tk__sumrow *sum_row(tk_stats *s, tk_sv name, int cls)
{
	tk_sv nm = intern(s, name.ptr, name.len);
	if (!nm.ptr)
		return NULL;
	uint64_t key = (uint64_t)(uintptr_t)nm.ptr * 8 + (unsigned)cls;
	uint32_t r = (uint32_t)tk__map_get0(&s->sum_index, key);
	if (r)
		return &s->sums[r - 1];
	if (tk__grow(&s->sums, &s->cap_sums, s->n_sums + 1, sizeof *s->sums, 16))
		return NULL;
	tk__sumrow *row = &s->sums[s->n_sums++];
	memset(row, 0, sizeof *row);
	row->pub.name = nm.ptr;
	row->pub.min = INT64_MAX;
	row->pub.max = INT64_MIN;
	row->cls = cls;
	if (tk__map_put_int(&s->sum_index, key, (uint32_t)s->n_sums))
		return NULL;
	return row;
}

static int sum_add(tk_stats *s, uint32_t sum, int64_t dur, uint64_t bytes)
{
	tk__sumrow *r = &s->sums[sum - 1];
	r->pub.count++;
	r->pub.total += dur;
	r->pub.bytes += bytes;
	if (dur < r->pub.min)
		r->pub.min = dur;
	if (dur > r->pub.max)
		r->pub.max = dur;
	return tk__durs_add(&s->dur_pool, &r->durs, dur);
}

/* ---- CPU ops: per-thread time order and nesting ---- */

static int same_id(const tk_id *a, const tk_id *b)
{
	if (a->kind != b->kind || a->num != b->num)
		return 0;
	return a->kind != TK_ID_STR ||
	       (a->str.len == b->str.len && memcmp(a->str.ptr, b->str.ptr, a->str.len) == 0);
}

static int keep_id(tk_stats *s, tk_id *dst, const tk_id *src)
{
	*dst = *src;
	if (src->kind == TK_ID_STR && !(dst->str = intern(s, src->str.ptr, src->str.len)).ptr)
		return TK_ERR_NOMEM;
	return 0;
}

static tk__thread *thread_lookup(tk_stats *s, const tk_id *pid, const tk_id *tid);

/* Consecutive events mostly share a thread: compare before building a key. */
static tk__thread *thread_of(tk_stats *s, const tk_event *ev);

tk__thread *tk__stats_thread(tk_stats *s, const tk_event *ev)
{
	return thread_of(s, ev);
}

static tk__thread *thread_of(tk_stats *s, const tk_event *ev)
{
	if (s->last_thread && same_id(&s->last_pid, &ev->pid) && same_id(&s->last_tid, &ev->tid))
		return &s->threads[s->last_thread - 1];
	tk__thread *t = thread_lookup(s, &ev->pid, &ev->tid);
	if (!t || keep_id(s, &s->last_pid, &ev->pid) || keep_id(s, &s->last_tid, &ev->tid))
		return NULL;
	s->last_thread = (size_t)(t - s->threads) + 1;
	return t;
}

static tk__thread *thread_lookup(tk_stats *s, const tk_id *pid, const tk_id *tid)
{
	/* pid/tid strings are interned by the reader, but a stats object may
	 * outlive readers: the key is built from the text. */
	tk__buf *b = &s->scratch;
	b->len = 0;
	char tmp[48];
	const tk_id *ids[2] = {pid, tid};
	for (int i = 0; i < 2; i++) {
		int n = snprintf(tmp, sizeof tmp, "%d:%lld:", ids[i]->kind, (long long)ids[i]->num);
		if (tk__buf_append(b, tmp, (size_t)n) ||
		    (ids[i]->kind == TK_ID_STR && tk__buf_append(b, ids[i]->str.ptr, ids[i]->str.len)) ||
		    tk__buf_putc(b, '\x1f'))
			return NULL;
	}
	tk_sv k = intern(s, b->p, b->len);
	if (!k.ptr)
		return NULL;
	uint32_t t = (uint32_t)tk__map_get0(&s->thread_index, (uintptr_t)k.ptr);
	if (t)
		return &s->threads[t - 1];
	if (tk__grow(&s->threads, &s->cap_threads, s->n_threads + 1, sizeof *s->threads, 16))
		return NULL;
	tk__thread *th = &s->threads[s->n_threads++];
	memset(th, 0, sizeof *th);
	if (tk__map_put_int(&s->thread_index, (uintptr_t)k.ptr, (uint32_t)s->n_threads))
		return NULL;
	return th;
}

/* By start, the longer (outer) op first. */
static int pend_before(const tk__pend *x, const tk__pend *y)
{
	return x->ts < y->ts || (x->ts == y->ts && x->dur > y->dur);
}

/* Merges the sorted index runs ix[0, h) and ix[h, n); tmp holds h. Ties
 * take the first run's first: the order of arrival. */
static void pend_merge(const tk__pend *v, uint32_t *ix, size_t h, size_t n, uint32_t *tmp)
{
	size_t i = 0, j = h, k = 0;
	if (!h || h == n || !pend_before(&v[ix[h]], &v[ix[h - 1]]))
		return; /* already in order: a thread's events mostly are */
	memcpy(tmp, ix, h * sizeof *ix);
	while (i < h && j < n)
		ix[k++] = pend_before(&v[ix[j]], &v[tmp[i]]) ? ix[j++] : tmp[i++];
	memcpy(ix + k, tmp + i, (h - i) * sizeof *ix);
}

/* Stable merge sort of indexes into v: ops with equal (start, duration) keep
 * their arrival order, which decides which one nests in the other. tmp holds
 * n / 2. */
static void pend_sort_ix(const tk__pend *v, uint32_t *ix, size_t n, uint32_t *tmp)
{
	if (n <= 16) {
		for (size_t i = 1; i < n; i++) {
			uint32_t x = ix[i];
			size_t j = i;
			for (; j && pend_before(&v[x], &v[ix[j - 1]]); j--)
				ix[j] = ix[j - 1];
			ix[j] = x;
		}
		return;
	}
	pend_sort_ix(v, ix, n / 2, tmp);
	pend_sort_ix(v, ix + n / 2, n - n / 2, tmp);
	pend_merge(v, ix, n / 2, n, tmp);
}

/* Sort a thread's pending events by time, v[0, n_sorted) being sorted
 * already (what the last flush left): the events since are sorted and
 * merged in. Sorting 4-byte indexes, then moving each event once, keeps the
 * extra memory well under the events' own. */
int tk__pend_sort(tk__pend *v, size_t n, size_t n_sorted)
{
	if (n < 2 || n_sorted >= n)
		return 0;
	/* a thread's events mostly come in time order: the sorted prefix is
	 * extended over them, and when it covers all nothing moves */
	if (!n_sorted)
		n_sorted = 1;
	while (n_sorted < n && !pend_before(&v[n_sorted], &v[n_sorted - 1]))
		n_sorted++;
	if (n_sorted == n)
		return 0;
	size_t n_new = n - n_sorted, n_tmp = n_sorted > n_new / 2 ? n_sorted : n_new / 2;
	if (n > UINT32_MAX)
		return TK_ERR_LIMIT;
	uint32_t *ix = malloc((n + n_tmp) * sizeof *ix);
	if (!ix)
		return TK_ERR_NOMEM;
	for (size_t i = 0; i < n; i++)
		ix[i] = (uint32_t)i;
	pend_sort_ix(v, ix + n_sorted, n_new, ix + n);
	pend_merge(v, ix, n_sorted, n, ix + n);
	/* v[i] = v[ix[i]], one cycle of the permutation at a time */
	for (size_t i = 0; i < n; i++) {
		if (ix[i] == i)
			continue;
		tk__pend x = v[i];
		size_t j = i;
		for (size_t k; (k = ix[j]) != i; j = k) {
			v[j] = v[k];
			ix[j] = (uint32_t)j;
		}
		v[j] = x;
		ix[j] = (uint32_t)j;
	}
	free(ix);
	return 0;
}

/* Innermost open op that encloses [ts, end); pops ops that cannot (torch's rule). */
tk__frame *tk__parent_frame(tk__thread *t, const tk__pend *p, int late)
{
	int64_t end = tk__sat_add(p->ts, p->dur);
	if (late) {
		for (size_t i = t->depth; i-- > 0;)
			if (t->stack[i].start <= p->ts && p->ts < t->stack[i].end && end <= t->stack[i].end)
				return &t->stack[i];
		return NULL;
	}
	while (t->depth) {
		tk__frame *top = &t->stack[t->depth - 1];
		if (p->ts >= top->end || end > top->end)
			t->depth--;
		else
			return top;
	}
	return NULL;
}

/* ---- args: one pass over the object for every member the stats read ---- */

static tk_sv *sargs_slot(tk__sargs *a, const char *k, size_t n)
{
	switch (n) {
	case 5: return memcmp(k, "bytes", 5) ? NULL : &a->bytes;
	case 10:
		if (!memcmp(k, "Input Dims", 10))
			return &a->dims;
		return memcmp(k, "Input dims", 10) ? NULL : &a->dims_alt;
	case 11:
		if (!memcmp(k, "External id", 11))
			return &a->ext;
		if (!memcmp(k, "correlation", 11))
			return &a->corr;
		return memcmp(k, "external id", 11) ? NULL : &a->ext_alt;
	case 15: return memcmp(k, "Concrete Inputs", 15) ? NULL : &a->conc;
	default: return NULL;
	}
}

/* tk_args_get_int on a found member, else on `alt`; 0 when neither parses. */
static int64_t sargs_int(tk_sv v, tk_sv alt)
{
	int64_t x;
	if (v.ptr && !tk__js_int(v, &x))
		return x;
	if (alt.ptr && !tk__js_int(alt, &x))
		return x;
	return 0;
}

/* Whether members not seen yet can still change what a caller reads. */
static int sargs_settled(const tk__sargs *a, unsigned need)
{
	if ((need & TK__NEED_EXT) && !(a->ext.ptr && (a->ext_int || a->ext_alt.ptr)))
		return 0;
	if ((need & TK__NEED_CORR) && !a->corr.ptr)
		return 0;
	if ((need & TK__NEED_BYTES) && !a->bytes.ptr)
		return 0;
	if ((need & TK__NEED_DIMS) && !(a->dims.ptr && (a->dims.ptr[0] == '[' || a->dims_alt.ptr)))
		return 0;
	return !(need & TK__NEED_CONC) || a->conc.ptr;
}

/* One pass over the members, stopping once the caller's are settled.
 * Members are found as tk_args_find finds them: the first of a key wins,
 * and what stands before malformed text is found. */
void tk__sargs_read(const tk_event *ev, unsigned need, tk__sargs *a)
{
	memset(a, 0, sizeof *a);
	tk__js_iter it;
	if (!need || !ev->args.ptr || tk__js_obj(&it, ev->args))
		return;
	tk_sv k, v;
	while (tk__js_member(&it, &k, &v) == 1) {
		tk_sv *slot = sargs_slot(a, k.ptr, k.len);
		if (!slot || slot->ptr)
			continue;
		*slot = v;
		if (slot == &a->ext && !tk__js_int(v, &a->ext_id))
			a->ext_int = 1;
		else if (slot == &a->corr && !tk__js_int(v, &a->corr_id))
			a->corr_int = 1;
		if (sargs_settled(a, need))
			break;
	}
	if (!a->ext_int)
		a->ext_id = sargs_int(a->ext, a->ext_alt);
	if (!a->corr_int)
		a->corr_id = sargs_int(a->corr, (tk_sv){NULL, 0});
	a->n_bytes = sargs_int(a->bytes, (tk_sv){NULL, 0});
}

/* ---- names: rows found by the event's name pointer ---- */

/* The rows of a name of class cls, made at its first event: its op row + 1
 * (0 when ops are keyed by shapes too: op_key) and summary row + 1 (0 for
 * CPU ops). 0 or TK_ERR_NOMEM. */
static int name_rows(tk_stats *s, tk_sv name, int cls, uint32_t *row, uint32_t *sum)
{
	int by_shapes = s->opts.group_by_shapes && cls <= TK_STATS_API;
	*row = by_shapes ? 0 : op_row(s, name, (tk_sv){NULL, 0}, cls >= TK_STATS_KERNEL);
	tk__sumrow *sr = cls == TK_STATS_OP ? NULL : sum_row(s, name, cls);
	*sum = sr ? (uint32_t)(sr - s->sums) + 1 : 0;
	return (!by_shapes && !*row) || (cls != TK_STATS_OP && !sr) ? TK_ERR_NOMEM : 0;
}

/* Events mostly repeat names the reader interned: a direct-mapped cache by
 * pointer finds the rows with one memcmp instead of hashing the text. The
 * text is compared, so a pointer that a later reader reuses for another
 * name is only a miss. */
static tk__namec *name_of(tk_stats *s, tk_sv name, int cls)
{
	uint64_t h = ((uint64_t)(uintptr_t)name.ptr ^ (uint64_t)cls) * 0x9e3779b97f4a7c15ull;
	tk__namec *c = &s->names[h >> (64 - TK__NAMEC_BITS)];
	if (c->src == name.ptr && c->len == name.len && c->cls == cls &&
	    memcmp(c->name, name.ptr, name.len) == 0)
		return c;
	c->src = NULL;
	tk_sv nm = intern(s, name.ptr, name.len);
	uint32_t row, sum;
	if (!nm.ptr || name_rows(s, name, cls, &row, &sum))
		return NULL;
	*c = (tk__namec){name.ptr, nm.ptr, name.len, cls, 0, row, sum, 0};
	if (cls == TK_STATS_OP && s->opts.flops)
		c->flops = tk__flops_needs(name, s->opts.flops);
	return c;
}

/* Row of an op, keyed by name and, when grouping, torch's shapes text. */
static uint32_t op_key(tk_stats *s, tk_sv dims, const tk__namec *c)
{
	if (c->row)
		return c->row;
	tk_sv name = {c->name, c->len};
	s->shapes.len = 0; /* op_row uses scratch */
	if (tk__shapes_repr(dims, &s->shapes))
		return 0;
	return op_row(s, name, (tk_sv){s->shapes.p, s->shapes.len}, 0);
}

/* The name an op's rows go by: every ProfilerStep#N is "ProfilerStep*". */
static tk_sv row_name(tk_sv name, int cls)
{
	if (cls == TK_STATS_OP && name.len > 13 && memcmp(name.ptr, "ProfilerStep#", 13) == 0)
		return (tk_sv){"ProfilerStep*", 13};
	return name;
}

/* The args members an event of class cls needs (fl: its FLOP formula's). */
static unsigned need_of(int cls, int shapes, unsigned fl)
{
	if (cls <= TK_STATS_API)
		return TK__NEED_EXT | (cls == TK_STATS_API ? TK__NEED_CORR : 0) | (shapes ? TK__NEED_DIMS : 0) | fl;
	return TK__NEED_EXT | TK__NEED_CORR | (cls != TK_STATS_KERNEL ? TK__NEED_BYTES : 0);
}

/* The members in need (with fl, the FLOP formula's) of ev's args. */
static void read_members(const tk_event *ev, unsigned need, unsigned fl, int mode, tk__sread *m)
{
	tk__sargs a;
	tk__sargs_read(ev, need, &a);
	m->ext_id = a.ext_id;
	m->corr_id = a.corr_id;
	m->n_bytes = a.n_bytes;
	m->dims = a.dims.ptr ? a.dims : a.dims_alt.ptr ? a.dims_alt : (tk_sv){"[]", 2};
	m->flops = fl ? tk__flops_args(ev->name, &a, mode) : 0;
}

/* The members of ev in need: its note n's, when the note was written for
 * these options (fp) and read them, else read here. */
static void members(const tk__snote *n, uint32_t fp, int flops, const tk_event *ev, unsigned need, unsigned fl,
                    tk__sread *m)
{
	if (n && n->fp == fp && n->need == need)
		*m = n->m;
	else
		read_members(ev, need, fl, flops, m);
}

/* Whether ev is an 'X' event with a time and a name: the only kind the
 * rows take. */
static int timed_x(const tk_event *ev)
{
	return ev->ph == 'X' && (ev->has & TK_HAS_TS) && ev->name.ptr;
}

/* Whether ev (timed_x, of class cls) is one the rows count (not a utility
 * op torch drops). */
static int counted(const tk_event *ev, int cls)
{
	return cls != TK_STATS_SKIP && !filtered_name(ev->name);
}

/* ev's start and end into the trace's span. */
static void span_add(int64_t *lo, int64_t *hi, const tk_event *ev)
{
	if (ev->ts < *lo)
		*lo = ev->ts;
	if (tk__sat_add(ev->ts, ev->dur) > *hi)
		*hi = tk__sat_add(ev->ts, ev->dur);
}

/* The part of the tables of ev, of class cls (counted), its members a:
 * all but its rows and thread. */
static void event_rec(const tk_event *ev, int cls, const tk__sread *a, tk__sbrec *e)
{
	int64_t dur = ev->has & TK_HAS_DUR ? ev->dur : 0;
	*e = (tk__sbrec){ev->ts, dur, a->ext_id, 0, a->flops, 0, 0, 0, TK__NREC_OP};
	if (cls == TK_STATS_API) {
		e->kind = TK__NREC_API;
		e->corr = a->corr_id; /* ops are found by External id */
	} else if (cls >= TK_STATS_KERNEL) {
		int64_t bytes = cls != TK_STATS_KERNEL ? a->n_bytes : 0;
		e->kind = TK__NREC_DEV;
		e->corr = a->corr_id;
		e->val = bytes > 0 ? (uint64_t)bytes : 0;
	}
}

/* The record to the nesting: 0 or its error, in s->err. */
static int nest_add(tk_stats *s, const tk__nrec *r)
{
	int rc = tk__nest_add(&s->nest, r);
	return rc ? tk__err_msg(&s->err, rc, "%s", tk__nest_error(&s->nest)) : 0;
}

/* What the nesting added to the rows, and its counts. */
static void merge_nest(tk_stats *s)
{
	const tk__nest *n = &s->nest;
	for (size_t i = 0; i < n->n_rows && i < s->n_ops; i++) {
		const tk__nrow *d = &n->rows[i];
		tk_stats_op *o = &s->ops[i].pub;
		o->count += d->count;
		o->flops += d->flops;
		o->self_cpu += d->self_cpu;
		o->cpu_total += d->cpu_total;
		o->self_dev += d->self_dev;
		o->dev_total += d->dev_total;
		tk__first_seen(&s->ops[i].first_ts, &s->ops[i].first_end, d->first_ts, d->first_end);
	}
	s->info.late += n->late;
	s->info.unattributed += n->unattributed;
}

/* An event's part e of the tables, its rows known (row: op row + 1; sum:
 * summary row + 1; thread: a CPU event's trace thread). CPU ops and API
 * calls wait on their thread to be nested by time; a GPU activity counts
 * in its row at once, and its time goes to the op that launched it. */
static int apply(tk_stats *s, const tk__sbrec *e, uint32_t row, uint32_t sum, uint32_t thread)
{
	int rc;
	if (e->kind == TK__NREC_DEV) {
		tk__oprow *o = &s->ops[row - 1];
		o->pub.count++;
		o->pub.self_dev += e->dur;
		o->pub.dev_total += e->dur;
		tk__first_seen(&o->first_ts, &o->first_end, e->ts, tk__sat_add(e->ts, e->dur));
		s->info.device++;
		tk__nrec r = {e->ts, e->dur, e->ext, e->corr, 0, 0, 0, TK__NREC_DEV};
		if ((rc = nest_add(s, &r)) != 0)
			return rc;
		rc = sum_add(s, sum, e->dur, e->val);
		return rc ? tk__stats_map_fail(s, rc) : 0;
	}
	if (e->kind == TK__NREC_API) {
		s->info.apis++;
		if ((rc = sum_add(s, sum, e->dur, 0)) != 0)
			return tk__stats_map_fail(s, rc);
	} else {
		s->info.ops++;
	}
	tk__nrec r = {e->ts, e->dur, e->ext, e->corr, e->val, row, thread, e->kind};
	return nest_add(s, &r);
}

int tk_stats_add(tk_stats *s, const tk_event *ev)
{
	if (!s || !ev || s->finished)
		return TK_ERR_ARG;
	/* profile_memory's [memory] events are instants */
	int rc;
	if (s->opts.memory_table && ev->name.ptr && (rc = tk__stats_memory_add(s, ev)) != 0)
		return rc;
	if (!timed_x(ev))
		return 0;
	if (s->opts.memory_table && tk__stats_memory_cpu(s, ev))
		return tk__err_msg(&s->err, TK_ERR_NOMEM, "out of memory");
	if (s->opts.collective_table && (rc = tk__stats_coll_add(s, ev)) != 0)
		return rc;
	int cls = classify(s, ev);
	/* the steps table sees every step and launch, and the GPU ops of the
	 * categories counted, in the window or not */
	if ((s->opts.step_table || s->opts.launch_table) && (rc = tk__stats_steps_add(s, ev, cls)) != 0)
		return rc;
	/* the call paths take the Python frames of with_stack traces too */
	int py = cls == TK_STATS_SKIP && s->opts.flame && (ev->has & TK_HAS_CAT) && sv_is(ev->cat, "python_function");
	if ((cls == TK_STATS_SKIP && !py) || filtered_name(ev->name))
		return 0;
	if (s->opts.window.set) {
		int by = 0;
		int64_t part = s->opts.steps && cls >= TK_STATS_KERNEL ? tk_steps_part(s->opts.steps, ev, &by) : 0;
		if (by ? part != 1 : ev->ts < s->opts.window.lo || ev->ts >= s->opts.window.hi)
			return 0;
	}
	if (py) /* not an op: the call paths' alone */
		return tk__stats_flame_add(s, ev, ev->name, NULL) ? tk__err_msg(&s->err, TK_ERR_NOMEM, "out of memory") : 0;
	s->info.events++;
	span_add(&s->info.ts_min, &s->info.ts_max, ev);
	tk_sv name = row_name(ev->name, cls);
	tk__namec *c = name_of(s, name, cls);
	if (!c || (s->opts.flame && cls <= TK_STATS_API && tk__stats_flame_add(s, ev, name, &c->fl)))
		return tk__err_msg(&s->err, TK_ERR_NOMEM, "out of memory");
	tk__sread a;
	members(s->note, s->note_fp, s->opts.flops, ev, need_of(cls, s->opts.group_by_shapes, c->flops), c->flops, &a);
	tk__sbrec e;
	event_rec(ev, cls, &a, &e);
	uint32_t row = c->row, thread = 0;
	if (cls <= TK_STATS_API) {
		row = op_key(s, a.dims, c);
		tk__thread *t = row ? thread_of(s, ev) : NULL;
		if (!t)
			return tk__stats_nomem(s);
		thread = (uint32_t)(t - s->threads);
	}
	return apply(s, &e, row, c->sum, thread);
}

void tk_stats_set_pid_span(tk_stats *s, int64_t span)
{
	if (!s || span <= 0 || !s->st_steps)
		return;
	tk_steps_set_pid_span(s->st_steps, span);
}

void tk_stats_note(const void *ctx, const tk_event *ev, void *out)
{
	const tk_stats_opts *o = ctx;
	tk__snote *n = out;
	n->fp = note_fp(o->cats, o->flops, o->group_by_shapes);
	n->need = 0;
	n->batch = NULL;
	if (!timed_x(ev) || !ev->args.ptr)
		return;
	/* the members add_cpu and add_device ask for */
	int cls = classify_in(o->cats, ev);
	if (!counted(ev, cls))
		return;
	unsigned fl = cls == TK_STATS_OP && o->flops ? tk__flops_needs(row_name(ev->name, cls), o->flops) : 0;
	n->need = need_of(cls, o->group_by_shapes, fl);
	read_members(ev, n->need, fl, o->flops, &n->m);
}

int tk_stats_add_noted(tk_stats *s, const tk_event *ev, const void *note)
{
	if (!s)
		return TK_ERR_ARG;
	s->note = note;
	int rc = tk_stats_add(s, ev);
	s->note = NULL;
	return rc;
}

/* ---- a batch's part of the tables, made on a reader's thread ---- */

#define BATCH_THREADS 256 /* a batch of more trace threads is added event by event */

/* The batch's keys as they are made (tk__stats_batch). */
typedef struct bkeys {
	struct bkey {
		tk__sbname pub;
		unsigned fl; /* a name's FLOP formula's members */
	} *v;
	size_t n, cap;
	tk__map index; /* name: pointer * 8 + class; shapes: the text's hash with the name's */
	tk__buf text;  /* the shapes */
} bkeys;

/* The index + 1 of a name's key, made on its first event; 0 when out of
 * memory, or where one pointer has two texts (left to tk_stats_add). */
static size_t bkey_name(bkeys *k, tk_sv name, int cls, int flops)
{
	uint64_t key = (uint64_t)(uintptr_t)name.ptr * 8 + (unsigned)cls;
	size_t i = (size_t)tk__map_get0(&k->index, key);
	if (i)
		return k->v[i - 1].pub.name.len == name.len ? i : 0;
	if (tk__grow(&k->v, &k->cap, k->n + 1, sizeof *k->v, 64))
		return 0;
	k->v[k->n] = (struct bkey){{name, cls, 0, 0, 0}, cls == TK_STATS_OP && flops ? tk__flops_needs(name, flops) : 0};
	return tk__map_put_int(&k->index, key, k->n + 1) ? 0 : ++k->n;
}

/* The index + 1 of the key of a CPU event's name (key nk + 1) grouped by
 * the shapes of dims, made on its first event; 0 when out of memory, or
 * where two such keys share a hash. */
static size_t bkey_shapes(bkeys *k, size_t nk, tk_sv dims)
{
	size_t off = k->text.len;
	if (tk__shapes_repr(dims, &k->text))
		return 0;
	/* a copy: the keys may move as they grow */
	const tk__sbname nm = k->v[nk - 1].pub;
	size_t len = k->text.len - off;
	/* apart from the names' keys, whose top bit is 0 */
	uint64_t key = tk__mix64(tk__hash(k->text.p + off, len) ^ (uint64_t)(uintptr_t)nm.name.ptr) | (uint64_t)1 << 63;
	size_t i = (size_t)tk__map_get0(&k->index, key);
	if (i) {
		const tk__sbname *x = &k->v[i - 1].pub;
		k->text.len = off;
		return x->name.ptr == nm.name.ptr && x->cls == nm.cls && x->shapes_len == len &&
		               memcmp(k->text.p + x->shapes_off, k->text.p + off, len) == 0
		           ? i
		           : 0;
	}
	if (tk__grow(&k->v, &k->cap, k->n + 1, sizeof *k->v, 64))
		return 0;
	k->v[k->n] = (struct bkey){{nm.name, nm.cls, 1, off, len}, 0};
	return tk__map_put_int(&k->index, key, k->n + 1) ? 0 : ++k->n;
}

void tk__stats_batch(const void *ctx, const tk_event *ev, size_t n, unsigned char *notes, tk__buf *out)
{
	const tk_stats_opts *o = ctx;
	tk__snote *nt = (tk__snote *)(void *)notes;
	out->len = 0;
	if (!n || n > UINT32_MAX || !batch_opts_ok(o))
		return;
	int shapes = o->group_by_shapes != 0;
	tk__sbatch h = {note_fp(o->cats, o->flops, shapes), (uint32_t)n, 0, INT64_MAX, INT64_MIN, 0, 0, 0, 0};
	bkeys keys = {0};
	size_t n_threads = 0, cap_threads = 0, last = 0;
	tk__sbthread *threads = NULL;
	int ok = tk__buf_append(out, &h, sizeof h) == 0;
	for (size_t i = 0; ok && i < n; i++) {
		const tk_event *e = &ev[i];
		if (!timed_x(e))
			continue;
		int cls = classify_in(o->cats, e);
		if (!counted(e, cls))
			continue;
		h.events++;
		span_add(&h.ts_min, &h.ts_max, e);
		/* the batch's names by pointer: the same text at two pointers is two
		 * keys of one row */
		size_t k = bkey_name(&keys, row_name(e->name, cls), cls, o->flops);
		if (!k) {
			ok = 0;
			break;
		}
		unsigned fl = keys.v[k - 1].fl;
		tk__sread a;
		members(&nt[i], h.fp, o->flops, e, need_of(cls, shapes, fl), fl, &a);
		tk__sbrec r;
		event_rec(e, cls, &a, &r);
		r.name = r.key = (uint32_t)(k - 1);
		if (cls <= TK_STATS_API) {
			size_t sk = shapes ? bkey_shapes(&keys, k, a.dims) : k;
			if (!sk) {
				ok = 0;
				break;
			}
			r.key = (uint32_t)(sk - 1);
			/* consecutive events mostly share a thread */
			size_t t = last;
			if (t >= n_threads || !same_id(&threads[t].pid, &e->pid) || !same_id(&threads[t].tid, &e->tid)) {
				for (t = 0; t < n_threads; t++)
					if (same_id(&threads[t].pid, &e->pid) && same_id(&threads[t].tid, &e->tid))
						break;
				if (t == n_threads) {
					if (n_threads == BATCH_THREADS ||
					    tk__grow(&threads, &cap_threads, n_threads + 1, sizeof *threads, 16)) {
						ok = 0;
						break;
					}
					threads[n_threads++] = (tk__sbthread){e->pid, e->tid};
				}
				last = t;
			}
			r.thread = (uint32_t)t;
		}
		ok = tk__buf_append(out, &r, sizeof r) == 0;
		h.n_recs++;
	}
	for (size_t i = 0; ok && i < keys.n; i++)
		ok = tk__buf_append(out, &keys.v[i].pub, sizeof keys.v[i].pub) == 0;
	ok = ok && (n_threads == 0 || tk__buf_append(out, threads, n_threads * sizeof *threads) == 0);
	ok = ok && (keys.text.len == 0 || tk__buf_append(out, keys.text.p, keys.text.len) == 0);
	if (ok) {
		h.n_names = keys.n;
		h.n_threads = n_threads;
		h.n_text = keys.text.len;
		memcpy(out->p, &h, sizeof h);
		nt[0].batch = (const tk__sbatch *)(void *)out->p;
	} else {
		out->len = 0;
	}
	free(keys.v);
	tk__map_free(&keys.index);
	tk__buf_free(&keys.text);
	free(threads);
}

/* Batch b's part of the tables: the rows of its keys and its threads found,
 * or made in the order their first events would make them, then its
 * records added in order, as tk_stats_add would add its events. */
static int take_batch(tk_stats *s, const tk__sbatch *b)
{
	const tk__sbrec *rec = (const tk__sbrec *)(const void *)(b + 1);
	const tk__sbname *nm = (const tk__sbname *)(const void *)(rec + b->n_recs);
	const tk__sbthread *th = (const tk__sbthread *)(const void *)(nm + b->n_names);
	const char *text = (const char *)(th + b->n_threads);
	if (tk__grow(&s->bmap, &s->cap_bmap, 2 * b->n_names + b->n_threads + 1, sizeof *s->bmap, 64))
		return tk__stats_nomem(s);
	uint32_t *rows = s->bmap, *sums = rows + b->n_names, *ths = sums + b->n_names;
	s->info.events += b->events;
	if (b->ts_min < s->info.ts_min)
		s->info.ts_min = b->ts_min;
	if (b->ts_max > s->info.ts_max)
		s->info.ts_max = b->ts_max;
	for (size_t i = 0; i < b->n_names; i++) {
		const tk__sbname *k = &nm[i];
		int bad;
		if (k->has_shapes) {
			sums[i] = 0;
			bad = !(rows[i] = op_row(s, k->name, (tk_sv){text + k->shapes_off, k->shapes_len}, 0));
		} else {
			bad = name_rows(s, k->name, k->cls, &rows[i], &sums[i]) != 0;
		}
		if (bad)
			return tk__stats_nomem(s);
	}
	for (size_t i = 0; i < b->n_threads; i++) {
		tk__thread *t = thread_lookup(s, &th[i].pid, &th[i].tid);
		if (!t)
			return tk__stats_nomem(s);
		ths[i] = (uint32_t)(t - s->threads);
	}
	for (size_t i = 0; i < b->n_recs; i++) {
		const tk__sbrec *e = &rec[i];
		int rc = apply(s, e, rows[e->key], sums[e->name], e->kind == TK__NREC_DEV ? 0 : ths[e->thread]);
		if (rc)
			return rc;
	}
	s->batches++;
	return 0;
}

int tk_stats_add_from(tk_stats *s, const tk_reader *r, const tk_event *ev)
{
	if (!s || !r || !ev || s->finished)
		return TK_ERR_ARG;
	if (s->cover_left) {
		/* an event of the batch taken whole */
		if (r != s->cover_r || ev != s->cover_next)
			return tk__err_msg(&s->err, TK_ERR_ARG, "an event of a batch taken whole was not given next: "
			                                       "tk_stats_add_from takes every event of its reader in turn");
		s->cover_left--;
		s->cover_next++;
		return 0;
	}
	const tk__snote *n = r->opts.note_fn == tk_stats_note ? tk_reader_event_note(r) : NULL;
	const tk__sbatch *b = n ? n->batch : NULL;
	if (b && s->batches_ok && b->fp == s->note_fp) {
		int rc = take_batch(s, b);
		if (rc)
			return rc;
		s->cover_left = b->n - 1;
		s->cover_next = ev + 1;
		s->cover_r = r;
		return 0;
	}
	return tk_stats_add_noted(s, ev, n);
}

uint64_t tk__stats_batches(const tk_stats *s)
{
	return s->batches;
}

int tk__stats_map_fail(tk_stats *s, int rc)
{
	const tk__pool *p = s->dur_pool.err ? &s->dur_pool : NULL;
	return tk__err_msg(&s->err, rc, "%s", p && rc != TK_ERR_NOMEM ? p->msg : "out of memory");
}

int tk__stats_sort_fail(tk_stats *s, const tk_sorter *so, const char *what, int rc)
{
	rc = rc < 0 ? rc : TK_ERR_IO;
	const char *m = so ? tk_sorter_error(so) : "";
	return tk__err_msg(&s->err, rc, "%s: %s", what, *m ? m : tk_strerror(rc));
}

int tk_stats_add_reader(tk_stats *s, tk_reader *r)
{
	const tk_event *ev;
	int rc, first = 1;
	int64_t span;
	while ((rc = tk_reader_next(r, &ev)) == TK_OK) {
		/* a merged trace keeps correlation ids per rank */
		if (first && s->st_steps && tk_merge_pid_span(r, &span) == 0)
			tk_steps_set_pid_span(s->st_steps, span);
		first = 0;
		/* a reader opened with tk_stats_note has read the args ahead,
		 * and made the tables' part of its batches */
		if ((rc = tk_stats_add_from(s, r, ev)) != 0)
			return rc;
	}
	if (rc < 0)
		return tk__err_msg(&s->err, rc, "%s", tk_reader_error(r));
	return 0;
}

static int cmp_first(const void *a, const void *b)
{
	const tk__oprow *x = a, *y = b;
	if (x->first_ts != y->first_ts)
		return x->first_ts < y->first_ts ? -1 : 1;
	return (x->first_end < y->first_end) - (x->first_end > y->first_end);
}

int tk_stats_finish(tk_stats *s)
{
	if (!s || s->finished)
		return TK_ERR_ARG;
	int rc = tk__nest_finish(&s->nest);
	if (rc)
		return tk__err_msg(&s->err, rc, "%s", tk__nest_error(&s->nest));
	merge_nest(s);
	if ((rc = tk__stats_finish_steps(s)) != 0 || (rc = tk__stats_finish_memory(s)) != 0)
		return rc;
	if ((rc = tk__stats_finish_coll(s)) != 0)
		return rc;
	if (tk__stats_finish_flame(s))
		return tk__err_msg(&s->err, TK_ERR_NOMEM, "out of memory");
	s->finished = 1;
	/* rows in torch's order: by the first event's (start, -end); the
	 * indexes into ops change, so the key index is dropped */
	if (s->n_ops)
		qsort(s->ops, s->n_ops, sizeof *s->ops, cmp_first);
	for (size_t i = 0; i < s->n_ops; i++)
		s->ops[i].pub.first = i;
	tk__map_free(&s->op_index);
	tk__nest_free(&s->nest);
	return tk__stats_finish_sums(s);
}

size_t tk_stats_op_count(const tk_stats *s)
{
	return s->finished ? s->n_ops : 0;
}

const tk_stats_op *tk_stats_op_get(const tk_stats *s, size_t i)
{
	return s->finished && i < s->n_ops ? &s->ops[i].pub : NULL;
}
