/* merge_write.c: the merge's second half: ranks and clocks fixed, ids remapped, sorted output written. */
#define _GNU_SOURCE /* memmem */
#include <stdlib.h>

#include "merge_int.h"

typedef struct out_ctx {
	tk_merge *m;
	tk_writer *w;
	tk__buf id, args, meta;
	int have_first;
	int64_t first; /* first output ts, for windows counted from it */
	uint64_t events;
} out_ctx;

static const char *align_name(int a)
{
	static const char *const n[] = {"none", "start", "collectives", "given"};
	return a >= 0 && a <= 3 ? n[a] : "?";
}

/* ---- ranks, clocks and id maps ---- */

static int check_ranks(tk_merge *m)
{
	for (size_t i = 0; i < m->n_in && m->o.ranks; i++) {
		tk__input *a = &m->in[i];
		a->skipped = 1;
		for (size_t k = 0; k < m->o.n_ranks; k++)
			if (m->o.ranks[k] == a->rank)
				a->skipped = 0;
	}
	for (size_t i = 0; i < m->n_in; i++)
		for (size_t j = i + 1; j < m->n_in; j++)
			if (!m->in[i].skipped && !m->in[j].skipped && m->in[i].rank == m->in[j].rank)
				return tk__err_set(&m->err, TK_ERR_ARG,
				                      "rank %lld appears twice: %s and %s (set ranks with --rank-from)",
				                      (long long)m->in[i].rank, m->in[i].path, m->in[j].path);
	return 0;
}

static void align_start(tk_merge *m)
{
	int have = 0;
	int64_t earliest = 0;
	for (size_t i = 0; i < m->n_in; i++) {
		tk__input *in = &m->in[i];
		int64_t t = tk__sat_add(in->first, in->base);
		if (!in->skipped && in->has_first && (!have || t < earliest))
			earliest = t, have = 1;
	}
	for (size_t i = 0; i < m->n_in; i++) {
		tk__input *in = &m->in[i];
		if (!in->skipped && in->has_first)
			in->offset = tk__sat_sub(earliest, tk__sat_add(in->first, in->base));
	}
}

static int set_offsets(tk_merge *m)
{
	for (size_t i = 0; i < m->n_in; i++) {
		tk__input *in = &m->in[i];
		if (!in->has_base)
			in->base = 0;
		in->offset = 0;
		for (size_t k = 0; k < m->n_given && m->o.align == TK_ALIGN_GIVEN; k++)
			if (m->given_rank[k] == in->rank)
				in->offset = m->given_off[k];
	}
	if (m->o.align == TK_ALIGN_START)
		align_start(m);
	if (m->o.align == TK_ALIGN_COLLECTIVES)
		return tk__merge_align_collectives(m);
	return 0;
}

/* Output time base: the smallest baseTimeNanoseconds among the inputs (ts
 * then count from it), or 0 when no input has one. Returns 1 when the
 * sorted order must be redone because ranks moved by different amounts. */
static int set_deltas(tk_merge *m, int64_t *tbase)
{
	int have = 0, resort = 0;
	*tbase = 0;
	for (size_t i = 0; i < m->n_in; i++)
		if (!m->in[i].skipped && m->in[i].has_base && (!have || m->in[i].base < *tbase))
			*tbase = m->in[i].base, have = 1;
	int64_t first = 0;
	have = 0;
	for (size_t i = 0; i < m->n_in; i++) {
		tk__input *in = &m->in[i];
		if (in->skipped)
			continue;
		in->delta = tk__sat_sub(tk__sat_sub(tk__sat_add(in->base, in->offset), *tbase), in->prov_shift);
		if (have && in->delta != first)
			resort = 1;
		first = in->delta, have = 1;
	}
	return resort;
}

/* rank * SPAN + v when that is free, else the highest free slot of the rank. */
static int remap_num(tk__map *taken, int64_t rank, int64_t v, int64_t *next_free, int64_t *out)
{
	int64_t base = rank * TK__RANK_SPAN, n = base + v;
	if (v < 0 || v >= TK__RANK_SPAN || tk__map_get_int(taken, (uint64_t)n)) {
		while (tk__map_get_int(taken, (uint64_t)*next_free))
			(*next_free)--;
		if (*next_free < base) /* the rank's block is full: never take another's */
			return TK_ERR_LIMIT;
		n = (*next_free)--;
	}
	*out = n;
	return tk__map_put_int(taken, (uint64_t)n, 1);
}

static int cmp_tid(const void *a, const void *b)
{
	int64_t x = (int64_t)(*(tk__map_int *const *)a)->key, y = (int64_t)(*(tk__map_int *const *)b)->key;
	return (x > y) - (x < y);
}

/* Small tids first, so that a large one never takes a small one's slot;
 * within each pass in increasing order, so the numbers do not depend on
 * the map's layout. */
static int map_tids(tk__input *in)
{
	tk__map taken = {0};
	int64_t next = in->rank * TK__RANK_SPAN + TK__RANK_SPAN - 1;
	tk__map_int **v = malloc((in->tids.n ? in->tids.n : 1) * sizeof *v);
	if (!v)
		return TK_ERR_NOMEM;
	size_t n = 0, it = 0;
	for (tk__map_int *r; (r = tk__map_next(&in->tids, &it));)
		v[n++] = r;
	qsort(v, n, sizeof *v, cmp_tid);
	int rc = 0;
	for (int pass = 0; pass < 2 && !rc; pass++)
		for (size_t i = 0; i < n && !rc; i++) {
			int64_t k = (int64_t)v[i]->key;
			int small = k >= 0 && k < TK__RANK_SPAN;
			if (small == (pass == 0))
				rc = remap_num(&taken, in->rank, k, &next, (int64_t *)&v[i]->val);
		}
	free(v);
	tk__map_free(&taken);
	return rc;
}

static int map_pids(tk__input *in)
{
	tk__map taken = {0};
	int64_t next = in->rank * TK__RANK_SPAN + TK__RANK_SPAN - 1;
	int rc = 0;
	for (int pass = 0; pass < 2 && !rc; pass++)
		for (size_t i = 0; i < in->n_procs && !rc; i++) {
			tk__proc *p = &in->procs[i];
			if (p->pid.kind == TK_ID_INT) {
				int small = p->pid.num >= 0 && p->pid.num < TK__RANK_SPAN;
				if (small != (pass == 0))
					continue;
				p->newpid.kind = TK_ID_INT;
				rc = remap_num(&taken, in->rank, p->pid.num, &next, &p->newpid.num);
			} else if (p->pid.kind == TK_ID_STR && pass == 0) {
				size_t n = strlen(in->idprefix) + p->pid.str.len;
				char *s = malloc(n + 1);
				if (!s)
					return TK_ERR_NOMEM;
				snprintf(s, n + 1, "%s%s", in->idprefix, p->pid.str.ptr);
				p->newpid = (tk_id){TK_ID_STR, 0, {s, n}};
			}
		}
	tk__map_free(&taken);
	return rc;
}

static int prepare(tk_merge *m, int64_t *tbase, int *resort)
{
	int rc = check_ranks(m);
	if (!rc)
		rc = set_offsets(m);
	if (rc)
		return rc;
	*resort = set_deltas(m, tbase);
	for (size_t i = 0; i < m->n_in; i++) {
		tk__input *in = &m->in[i];
		if (in->skipped)
			continue;
		snprintf(in->idprefix, sizeof in->idprefix, "rank %lld ", (long long)in->rank);
		rc = map_pids(in);
		if (!rc)
			rc = map_tids(in);
		if (rc)
			return tk__err_set(&m->err, rc, "%s: rank %lld: cannot remap pids and tids (%s)",
			                      in->path, (long long)in->rank, tk_strerror(rc));
	}
	return 0;
}

/* ---- metadata ---- */

static int put_str(tk__buf *b, const char *s)
{
	int rc = tk__buf_putc(b, '"');
	if (!rc && tk__json_escape(b, s, strlen(s)) < 0)
		rc = TK_ERR_NOMEM;
	return rc ? rc : tk__buf_putc(b, '"');
}

static int put_fmt(tk__buf *b, const char *fmt, ...) TK__PRINTF(2, 3);
static int put_fmt(tk__buf *b, const char *fmt, ...)
{
	char tmp[256];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
	va_end(ap);
	return tk__buf_append(b, tmp, n < 0 ? 0 : (size_t)n < sizeof tmp ? (size_t)n : sizeof tmp - 1);
}

static int add_meta(out_ctx *c, const char *key)
{
	int rc = tk_writer_add_meta(c->w, (tk_sv){key, strlen(key)}, (tk_sv){c->meta.p, c->meta.len});
	c->meta.len = 0;
	return rc;
}

/* Elements of a compact JSON array, appended to b unless already present. */
static int union_array(tk__buf *b, const char *arr, size_t *count)
{
	const char *p = arr + 1;
	while (*p && *p != ']') {
		const char *s = p;
		int depth = 0, instr = 0;
		for (; *p && (instr || depth || (*p != ',' && *p != ']')); p++) {
			if (instr) {
				if (*p == '\\')
					p++;
				else if (*p == '"')
					instr = 0;
			} else if (*p == '"') {
				instr = 1;
			} else if (*p == '{' || *p == '[') {
				depth++;
			} else if (*p == '}' || *p == ']') {
				depth--;
			}
		}
		size_t n = (size_t)(p - s);
		char *tmp = malloc(n + 1);
		if (!tmp)
			return TK_ERR_NOMEM;
		memcpy(tmp, s, n);
		tmp[n] = 0;
		int dup = b->p && memmem(b->p, b->len, tmp, n) != NULL;
		int rc = 0;
		if (!dup && (*count)++)
			rc = tk__buf_putc(b, ',');
		if (!dup && !rc)
			rc = tk__buf_append(b, tmp, n);
		free(tmp);
		if (rc)
			return rc;
		if (*p == ',')
			p++;
	}
	return 0;
}

static int meta_devices(out_ctx *c)
{
	size_t count = 0;
	int rc = tk__buf_putc(&c->meta, '[');
	for (size_t i = 0; i < c->m->n_in && !rc; i++) {
		const tk__input *in = &c->m->in[i];
		if (!in->skipped && in->dev_props && in->dev_props[0] == '[')
			rc = union_array(&c->meta, in->dev_props, &count);
	}
	if (!rc)
		rc = tk__buf_putc(&c->meta, ']');
	return rc ? rc : count ? add_meta(c, "deviceProperties") : (c->meta.len = 0, 0);
}

static const char *rank_from(int s)
{
	return s == 0 ? "given" : s == 1 ? "distributedInfo" : "order";
}

static int meta_ranks(out_ctx *c)
{
	tk__buf *b = &c->meta;
	int rc = tk__buf_putc(b, '{'), n = 0;
	for (size_t i = 0; i < c->m->n_in && !rc; i++) {
		const tk__input *in = &c->m->in[i];
		if (in->skipped)
			continue;
		rc = put_fmt(b, "%s\"%lld\":{\"file\":", n++ ? "," : "", (long long)in->rank);
		if (!rc)
			rc = put_str(b, in->path);
		if (!rc && in->dist_info)
			rc = put_fmt(b, ",\"distributedInfo\":") || tk__buf_append(b, in->dist_info, strlen(in->dist_info));
		if (!rc)
			rc = put_fmt(b, ",\"pidBase\":%lld}", (long long)in->rank * TK__RANK_SPAN);
	}
	if (!rc)
		rc = tk__buf_putc(b, '}');
	return rc ? rc : add_meta(c, "ranks");
}

int tk__merge_pid_span(tk_sv merge_meta, int64_t *span)
{
	tk_sv v;
	long long k;
	char tail;
	if (!merge_meta.ptr || tk__js_find(merge_meta, "pidScheme", 9, &v) || v.len > 64)
		return TK_EOF;
	char tmp[72];
	memcpy(tmp, v.ptr, v.len);
	tmp[v.len] = 0;
	if (sscanf(tmp, "\"rank*%lld+pid%c", &k, &tail) != 2 || tail != '"' || k <= 0)
		return TK_EOF;
	*span = k;
	return 0;
}

int tk_merge_pid_span(const tk_reader *r, int64_t *span)
{
	if (!r || !span)
		return TK_ERR_ARG;
	return tk__merge_pid_span(tk_reader_meta_find(r, "tracekitMerge"), span);
}

int tk_merge_rank_of(const tk_id *pid, int64_t span, int64_t *rank)
{
	if (!pid || !rank)
		return TK_ERR_ARG;
	if (pid->kind == TK_ID_INT) {
		if (span <= 0 || pid->num < 0)
			return TK_EOF;
		*rank = pid->num / span;
		return 0;
	}
	const char *p = pid->str.ptr, *e = p + pid->str.len;
	if (pid->kind != TK_ID_STR || pid->str.len < 6 || memcmp(p, "rank ", 5) != 0)
		return TK_EOF;
	int64_t r = 0;
	for (p += 5; p < e && *p >= '0' && *p <= '9'; p++)
		if ((r = r * 10 + (*p - '0')) > TK_MERGE_MAX_RANK)
			return TK_EOF;
	if (p == pid->str.ptr + 5 || (p < e && *p != ' '))
		return TK_EOF;
	*rank = r;
	return 0;
}

int tk_merge_rank_count(const tk_reader *r, size_t *n)
{
	if (!r || !n)
		return TK_ERR_ARG;
	tk_sv meta = tk_reader_meta_find(r, "tracekitMerge"), v;
	if (tk__merge_pid_span(meta, &(int64_t){0}) || tk__js_find(meta, "inputs", 6, &v))
		return TK_EOF;
	const char *p = tk__js_ws(v.ptr, v.ptr + v.len), *e = v.ptr + v.len;
	size_t k = 0;
	if (p >= e || *p++ != '[')
		return TK_EOF;
	for (;;) {
		p = tk__js_ws(p, e);
		if (p < e && *p == ']' && !k)
			break;
		if (!(p = tk__js_skip(p, e)))
			return TK_EOF;
		k++;
		p = tk__js_ws(p, e);
		if (p < e && *p == ',') {
			p++;
			continue;
		}
		if (p < e && *p == ']')
			break;
		return TK_EOF;
	}
	*n = k;
	return 0;
}

static int meta_merge(out_ctx *c, int64_t tbase)
{
	tk__buf *b = &c->meta;
	int rc = put_fmt(b, "{\"tool\":\"trace-merge\",\"version\":\"%s\",\"align\":\"%s\","
	                 "\"baseTimeNanoseconds\":%lld,\"pidScheme\":\"rank*%d+pid\",\"idScheme\":"
	                 "\"id^(rank<<%d)\",\"inputs\":[",
	                 TK_VERSION_STRING, align_name(c->m->o.align), (long long)tbase,
	                 TK__RANK_SPAN, TK__ID_SHIFT);
	for (size_t i = 0; i < c->m->n_in && !rc; i++) {
		const tk__input *in = &c->m->in[i];
		rc = put_fmt(b, "%s{\"file\":", i ? "," : "");
		if (!rc)
			rc = put_str(b, in->path);
		if (!rc)
			rc = put_fmt(b, ",\"rank\":%lld,\"rankFrom\":\"%s\",\"skipped\":%s,\"events\":%llu,",
			             (long long)in->rank, rank_from(in->rank_source),
			             in->skipped ? "true" : "false", (unsigned long long)in->events_in);
		if (!rc && in->has_base)
			rc = put_fmt(b, "\"baseTimeNanoseconds\":%lld,", (long long)in->base);
		if (!rc)
			rc = put_fmt(b, "\"offsetNs\":%lld", (long long)in->offset);
		if (!rc && c->m->o.align == TK_ALIGN_COLLECTIVES)
			rc = put_fmt(b, ",\"residualNs\":%lld,\"matchedCollectives\":%zu",
			             (long long)in->residual, in->matched);
		if (!rc)
			rc = tk__buf_putc(b, '}');
	}
	if (!rc)
		rc = put_fmt(b, "]}");
	return rc ? rc : add_meta(c, "tracekitMerge");
}

static int seen_key(const tk_merge *m, size_t upto_in, size_t upto_k, tk_sv key)
{
	for (size_t i = 0; i <= upto_in; i++) {
		const tk__input *in = &m->in[i];
		size_t lim = i == upto_in ? upto_k : in->n_meta;
		for (size_t k = 0; k < lim && !in->skipped; k++)
			if (in->meta[k].key.len == key.len && memcmp(in->meta[k].key.ptr, key.ptr, key.len) == 0)
				return 1;
	}
	return 0;
}

/* Other top-level members: the first input's value of each key wins. */
static int meta_others(out_ctx *c)
{
	for (size_t i = 0; i < c->m->n_in; i++) {
		const tk__input *in = &c->m->in[i];
		for (size_t k = 0; k < in->n_meta && !in->skipped; k++) {
			tk_sv key = in->meta[k].key;
			if ((key.len == 9 && memcmp(key.ptr, "traceName", 9) == 0) || seen_key(c->m, i, k, key))
				continue;
			int rc = tk_writer_add_meta(c->w, key, (tk_sv){in->meta[k].json, in->meta[k].json_len});
			if (rc)
				return rc;
		}
	}
	return 0;
}

static int write_meta(out_ctx *c, int64_t tbase)
{
	int rc = meta_devices(c);
	if (!rc)
		rc = meta_others(c);
	if (!rc)
		rc = meta_ranks(c);
	if (!rc)
		rc = meta_merge(c, tbase);
	if (!rc && tbase) {
		put_fmt(&c->meta, "%lld", (long long)tbase);
		rc = add_meta(c, "baseTimeNanoseconds");
	}
	return rc;
}

/* ---- process metadata events ---- */

static int proc_text(const tk__input *in, const tk__proc *p, int labels, tk__buf *b)
{
	char t[300];
	if (p->pid.kind == TK_ID_STR && p->pid.str.ptr[0]) /* "" (Kineto's "Record Window End"): "rank N" */
		snprintf(t, sizeof t, "rank %lld %s", (long long)in->rank, p->pid.str.ptr);
	else if (labels && p->labels)
		snprintf(t, sizeof t, "rank %lld %s", (long long)in->rank, p->labels);
	else if (p->gpu >= 0)
		snprintf(t, sizeof t, "rank %lld GPU %d", (long long)in->rank, p->gpu);
	else
		snprintf(t, sizeof t, "rank %lld", (long long)in->rank);
	b->len = 0;
	return put_fmt(b, "{\"%s\":", labels ? "labels" : "name") || put_str(b, t) || tk__buf_putc(b, '}');
}

static int64_t proc_sort(const tk__input *in, const tk__proc *p)
{
	int host = p->pid.kind == TK_ID_INT || (p->pid.kind == TK_ID_STR && strstr(p->pid.str.ptr, "CPU"));
	int64_t sub = p->gpu >= 0 ? TK__SORT_GPU + p->gpu : host ? 0 : TK__SORT_OTHER;
	return in->rank * TK__SORT_RANK + sub;
}

/* Args of a process_* metadata event, saying the rank; 0 if not one. */
static int proc_args(out_ctx *c, const tk__input *in, const tk__proc *p, const tk_event *ev)
{
	if (ev->name.len == 12 && memcmp(ev->name.ptr, "process_name", 12) == 0)
		return proc_text(in, p, 0, &c->args) ? TK_ERR_NOMEM : 1;
	if (ev->name.len == 14 && memcmp(ev->name.ptr, "process_labels", 14) == 0)
		return proc_text(in, p, 1, &c->args) ? TK_ERR_NOMEM : 1;
	if (ev->name.len == 18 && memcmp(ev->name.ptr, "process_sort_index", 18) == 0) {
		c->args.len = 0;
		return put_fmt(&c->args, "{\"sort_index\":%lld}", (long long)proc_sort(in, p)) ? TK_ERR_NOMEM : 1;
	}
	return 0;
}

/* Process metadata for processes whose input had none. */
static int synth_procs(out_ctx *c, const tk__input *in)
{
	static const char *const names[] = {"process_name", "process_labels", "process_sort_index"};
	for (size_t i = 0; i < in->n_procs; i++) {
		const tk__proc *p = &in->procs[i];
		int seen[3] = {p->seen_name, p->seen_labels, p->seen_sort};
		for (int k = 0; k < 3; k++) {
			if (seen[k])
				continue;
			tk_event ev = {0};
			ev.ph = 'M';
			ev.has = TK_HAS_PH | TK_HAS_NAME;
			ev.name = (tk_sv){names[k], strlen(names[k])};
			ev.pid = p->newpid;
			int rc = proc_args(c, in, p, &ev);
			if (rc < 0)
				return rc;
			ev.args = (tk_sv){c->args.p, c->args.len};
			if ((rc = tk_writer_write(c->w, &ev)) != 0)
				return rc;
		}
	}
	return 0;
}

/* ---- events ---- */

static int in_window(out_ctx *c, const tk_event *ev)
{
	const tk_merge_opts *o = &c->m->o;
	if (!o->window.set || ev->ph == 'M' || !(ev->has & TK_HAS_TS))
		return 1;
	if (!c->have_first)
		c->first = ev->ts, c->have_first = 1;
	tk_window w = tk_window_at(&o->window, c->first);
	int64_t lo = w.lo, hi = w.hi;
	int64_t end = tk__ev_end(ev->ts, (ev->has & TK_HAS_DUR) ? ev->dur : 0);
	return ev->ts <= hi && end >= lo;
}

static int remap(out_ctx *c, const tk__input *in, tk_event *e)
{
	const tk__proc *p = e->pid.kind != TK_ID_NONE ? tk__merge_find_proc(in, &e->pid) : NULL;
	if (p)
		e->pid = p->newpid;
	if (e->tid.kind == TK_ID_INT)
		e->tid.num = (int64_t)*tk__map_get_int(&in->tids, (uint64_t)e->tid.num);
	if (e->id.kind == TK_ID_INT) {
		e->id.num = (int64_t)((uint64_t)e->id.num ^ ((uint64_t)in->rank << TK__ID_SHIFT));
	} else if (e->id.kind == TK_ID_STR) {
		c->id.len = 0;
		if (tk__buf_append(&c->id, in->idprefix, strlen(in->idprefix)) ||
		    tk__buf_append(&c->id, e->id.str.ptr, e->id.str.len))
			return TK_ERR_NOMEM;
		c->id.p[c->id.len] = 0;
		e->id.str = (tk_sv){c->id.p, c->id.len};
	}
	if (e->ph == 'M' && p && e->name.ptr) {
		int rc = proc_args(c, in, p, e);
		if (rc < 0)
			return rc;
		if (rc) {
			e->args = (tk_sv){c->args.p, c->args.len};
			e->has &= ~(unsigned)TK_HAS_VALID_JSON;
		}
	}
	return 0;
}

static int emit(out_ctx *c, const tk_event *ev, tk__input *in)
{
	if (!in_window(c, ev))
		return 0;
	tk_event e = *ev;
	int rc = remap(c, in, &e);
	if (!rc)
		rc = tk_writer_write(c->w, &e);
	if (rc)
		return rc;
	in->events_out += ev->ph != 'M'; /* what the window kept: M events always pass */
	if ((++c->events & 0xffff) == 0 && c->m->o.progress)
		c->m->o.progress(c->m->o.progress_ctx, "writing", c->m->bytes_done, c->events);
	return 0;
}

/* Re-sort with every rank's final clock (second sorter), when ranks moved
 * by different amounts after their events were buffered. */
static int resort(tk_merge *m, tk_sorter **out)
{
	tk_sorter_opts so = {tk__merge_sort_budget(m) / 2, m->tmpdir};
	int rc = tk_sorter_new(out, &so);
	const tk_event *ev;
	uint64_t tag;
	if (rc)
		return tk__err_set(&m->err, rc, "merge: out of memory");
	while ((rc = tk_sorter_next(m->sorter, &ev, &tag)) == TK_OK) {
		tk__input *in = &m->in[tag];
		if (in->skipped)
			continue;
		tk_event e = *ev;
		if (e.has & TK_HAS_TS)
			e.ts = tk__sat_add(e.ts, in->delta);
		if ((rc = tk_sorter_add(*out, &e, tag)) != 0)
			return tk__err_set(&m->err, rc, "%s", tk_sorter_error(*out));
	}
	if (rc < 0)
		return tk__err_set(&m->err, rc, "%s", tk_sorter_error(m->sorter));
	tk_sorter_free(m->sorter); /* its runs are no longer needed */
	m->sorter = NULL;
	for (size_t i = 0; i < m->n_in; i++)
		m->in[i].delta = 0;
	if ((rc = tk_sorter_finish(*out)) != 0)
		return tk__err_set(&m->err, rc, "%s", tk_sorter_error(*out));
	return 0;
}

static int stream(out_ctx *c, tk_sorter *s)
{
	const tk_event *ev;
	uint64_t tag;
	int rc;
	while ((rc = tk_sorter_next(s, &ev, &tag)) == TK_OK) {
		tk__input *in = &c->m->in[tag];
		if (in->skipped)
			continue;
		if (in->delta && (ev->has & TK_HAS_TS)) {
			tk_event e = *ev;
			e.ts = tk__sat_add(e.ts, in->delta);
			rc = emit(c, &e, in);
		} else {
			rc = emit(c, ev, in);
		}
		if (rc)
			return tk__err_set(&c->m->err, rc, "%s", tk_writer_error(c->w));
	}
	return rc < 0 ? tk__err_set(&c->m->err, rc, "%s", tk_sorter_error(s)) : 0;
}

static int write_all(tk_merge *m, out_ctx *c, int64_t tbase, tk_sorter *s)
{
	int rc = write_meta(c, tbase);
	for (size_t i = 0; i < m->n_in && !rc; i++)
		if (!m->in[i].skipped)
			rc = synth_procs(c, &m->in[i]);
	if (rc)
		return tk__err_set(&m->err, rc < 0 ? rc : TK_ERR_NOMEM, "%s", tk_writer_error(c->w));
	if ((rc = stream(c, s)) != 0)
		return rc;
	if ((rc = tk_writer_close(c->w)) != 0)
		return tk__err_set(&m->err, rc, "%s", tk_writer_error(c->w));
	return 0;
}

int tk_merge_write(tk_merge *m, const char *path)
{
	if (!m || !path)
		return TK_ERR_ARG;
	if (m->err.code)
		return m->err.code;
	if (m->n_bad)
		return tk__err_set(&m->err, TK_ERR_IO, "%zu of %zu inputs could not be read; nothing written",
		                      m->n_bad, m->n_in);
	int64_t tbase;
	int need_resort, rc = prepare(m, &tbase, &need_resort);
	if (rc)
		return rc;
	if ((rc = tk_sorter_finish(m->sorter)) != 0)
		return tk__err_set(&m->err, rc, "%s", tk_sorter_error(m->sorter));
	tk_sorter *second = NULL;
	if (need_resort && (rc = resort(m, &second)) != 0) {
		tk_sorter_free(second);
		return rc;
	}
	out_ctx c = {m, NULL, {0}, {0}, {0}, 0, 0, 0};
	tk_writer_opts wo = m->o.wopts;
	wo.threads = tk__budget_writer_threads(wo.threads);
	if (!wo.tmpdir) /* a .pftrace or .sqlite output spills where the merge does */
		wo.tmpdir = m->o.tmpdir;
	if ((rc = tk_writer_open_path(&c.w, path, &wo)) != 0)
		rc = tk__err_set(&m->err, rc, "%s", c.w ? tk_writer_error(c.w) : tk_strerror(rc));
	else
		rc = write_all(m, &c, tbase, second ? second : m->sorter);
	tk_writer_free(c.w);
	tk_sorter_free(second);
	tk__buf_free(&c.id);
	tk__buf_free(&c.args);
	tk__buf_free(&c.meta);
	return rc;
}
