/* merge.c: per-rank traces into one time-ordered trace: ranks, id namespaces, clocks, metadata. */
#include <stdlib.h>

#include "merge_int.h"
#include "tracekit/tkb.h"

#define TK__KINETO_GPU_SORT 16777216 /* Kineto's process_sort_index of GPU 0 */

size_t tk__merge_sort_budget(const tk_merge *m)
{
	return tk__sorter_share(m->o.memory_bytes);
}

int tk_merge_new(tk_merge **out, const tk_merge_opts *opts)
{
	if (!out || !opts)
		return TK_ERR_ARG;
	tk_merge *m = calloc(1, sizeof *m);
	*out = m;
	if (!m)
		return TK_ERR_NOMEM;
	m->o = *opts;
	if (opts->align < TK_ALIGN_NONE || opts->align > TK_ALIGN_GIVEN)
		return tk__err_set(&m->err, TK_ERR_ARG, "merge: unknown alignment %d", opts->align);
	if (!m->o.memory_bytes)
		m->o.memory_bytes = (size_t)256 << 20;
	if (opts->tmpdir && !(m->tmpdir = tk__strdup(opts->tmpdir)))
		return tk__err_set(&m->err, TK_ERR_NOMEM, "merge: out of memory");
	m->o.tmpdir = m->tmpdir;
	m->o.ranks = m->o.n_ranks ? m->o.ranks : NULL;
	/* the pointers in opts (ranks, cats) must outlive the merge */
	/* start and collectives almost always re-sort: leave half for the second sorter */
	tk_sorter_opts so = {tk__merge_sort_budget(m), m->tmpdir};
	if (m->o.align == TK_ALIGN_START || m->o.align == TK_ALIGN_COLLECTIVES)
		so.memory_bytes /= 2;
	if (tk_sorter_new(&m->sorter, &so))
		return tk__err_set(&m->err, TK_ERR_NOMEM, "merge: out of memory");
	return 0;
}

int tk_merge_set_offset(tk_merge *m, int64_t rank, int64_t offset_ns)
{
	if (!m)
		return TK_ERR_ARG;
	int64_t *r = realloc(m->given_rank, (m->n_given + 1) * sizeof *r);
	if (r)
		m->given_rank = r;
	int64_t *o = realloc(m->given_off, (m->n_given + 1) * sizeof *o);
	if (o)
		m->given_off = o;
	if (!r || !o)
		return tk__err_set(&m->err, TK_ERR_NOMEM, "merge: out of memory");
	m->given_rank[m->n_given] = rank;
	m->given_off[m->n_given++] = offset_ns;
	return 0;
}

static int rank_selected(const tk_merge *m, int64_t rank)
{
	if (!m->o.ranks)
		return 1;
	for (size_t i = 0; i < m->o.n_ranks; i++)
		if (m->o.ranks[i] == rank)
			return 1;
	return 0;
}

static int cat_selected(const tk_merge *m, const tk_event *ev)
{
	if (!m->o.cats || ev->ph == 'M')
		return 1;
	if (!ev->cat.ptr)
		return 0;
	for (size_t i = 0; i < m->o.n_cats; i++)
		if (strlen(m->o.cats[i]) == ev->cat.len && memcmp(m->o.cats[i], ev->cat.ptr, ev->cat.len) == 0)
			return 1;
	return 0;
}

/* ---- reading one input ---- */

static int parse_i64(tk_sv v, int64_t *out)
{
	if (!v.ptr)
		return -1;
	const unsigned char *p = (const unsigned char *)v.ptr;
	return tk__parse_int64(p, p + v.len, out);
}

tk__proc *tk__merge_find_proc(const tk__input *in, const tk_id *pid)
{
	if (pid->kind == TK_ID_INT) {
		const uint64_t *i = tk__map_get_int(&in->pidx, (uint64_t)pid->num);
		return i ? &in->procs[*i] : NULL;
	}
	for (size_t i = 0; i < in->n_procs; i++)
		if (tk__id_eq(&in->procs[i].pid, pid))
			return &in->procs[i];
	return NULL;
}

static tk__proc *note_proc(tk__input *in, const tk_id *pid)
{
	tk__proc *p = tk__merge_find_proc(in, pid);
	if (p)
		return p;
	p = realloc(in->procs, (in->n_procs + 1) * sizeof *p);
	if (!p)
		return NULL;
	in->procs = p;
	p += in->n_procs;
	memset(p, 0, sizeof *p);
	p->pid = *pid;
	p->gpu = -1;
	if (pid->kind == TK_ID_STR) {
		char *s = malloc(pid->str.len + 1);
		if (!s)
			return NULL;
		memcpy(s, pid->str.ptr, pid->str.len);
		s[pid->str.len] = 0;
		p->pid.str.ptr = s;
	} else if (pid->kind == TK_ID_INT && tk__map_put_int(&in->pidx, (uint64_t)pid->num, in->n_procs)) {
		return NULL;
	}
	in->n_procs++;
	return p;
}

static int name_is(const tk_event *ev, const char *s)
{
	size_t n = strlen(s);
	return ev->name.ptr && ev->name.len == n && memcmp(ev->name.ptr, s, n) == 0;
}

/* What the process metadata events say about a process. */
static int note_meta_event(tk__input *in, tk__proc *p, const tk_event *ev)
{
	char buf[256];
	size_t len;
	int64_t v;
	if (name_is(ev, "process_name")) {
		p->seen_name = 1;
	} else if (name_is(ev, "process_labels")) {
		p->seen_labels = 1;
		if (tk_args_get_str(ev, "labels", buf, sizeof buf, &len) == 0 && !p->labels) {
			if (!(p->labels = tk__strdup(buf)))
				return TK_ERR_NOMEM;
			if (strncmp(buf, "GPU ", 4) == 0)
				p->gpu = atoi(buf + 4);
		}
	} else if (name_is(ev, "process_sort_index")) {
		p->seen_sort = 1;
		if (tk_args_get_int(ev, "sort_index", &v) == 0 && v >= TK__KINETO_GPU_SORT &&
		    v < TK__KINETO_GPU_SORT + 1000 && p->gpu < 0)
			p->gpu = (int)(v - TK__KINETO_GPU_SORT);
	}
	(void)in;
	return 0;
}

/* Everything pass one learns from an event besides buffering it. */
static int note_event(tk_merge *m, tk__input *in, const tk_event *ev)
{
	if ((ev->has & TK_HAS_TS) && (!in->has_first || ev->ts < in->first)) {
		in->first = ev->ts;
		in->has_first = 1;
	}
	if (ev->tid.kind == TK_ID_INT && !tk__map_get_int(&in->tids, (uint64_t)ev->tid.num) &&
	    tk__map_put_int(&in->tids, (uint64_t)ev->tid.num, 0))
		return TK_ERR_NOMEM;
	if (ev->pid.kind != TK_ID_NONE) {
		tk__proc *p = note_proc(in, &ev->pid);
		if (!p)
			return TK_ERR_NOMEM;
		if (ev->ph == 'M' && note_meta_event(in, p, ev))
			return TK_ERR_NOMEM;
	}
	return m->o.align == TK_ALIGN_COLLECTIVES ? tk__merge_note_coll(m, in, ev) : 0;
}

static char *sv_dup(tk_sv v)
{
	if (!v.ptr)
		return NULL;
	char *s = malloc(v.len + 1);
	if (s) {
		memcpy(s, v.ptr, v.len);
		s[v.len] = 0;
	}
	return s;
}

/* Keep the metadata members the output needs, once the input is read. */
static int save_meta(tk_merge *m, tk__input *in, const tk_reader *r)
{
	size_t n = tk_reader_meta_count(r);
	if (!(in->meta = calloc(n ? n : 1, sizeof *in->meta)))
		return TK_ERR_NOMEM;
	for (size_t i = 0; i < n; i++) {
		tk_sv k, v;
		tk_reader_meta_get(r, i, &k, &v, NULL);
		if (k.len == 15 && memcmp(k.ptr, "distributedInfo", 15) == 0) {
			if (!in->dist_info && !(in->dist_info = sv_dup(v)))
				return TK_ERR_NOMEM;
		} else if (k.len == 16 && memcmp(k.ptr, "deviceProperties", 16) == 0) {
			if (!in->dev_props && !(in->dev_props = sv_dup(v)))
				return TK_ERR_NOMEM;
		} else if (k.len == 19 && memcmp(k.ptr, "baseTimeNanoseconds", 19) == 0) {
			if (parse_i64(v, &in->base) == 0)
				in->has_base = 1;
		} else {
			tk__meta *d = &in->meta[in->n_meta];
			d->key = (tk_sv){sv_dup(k), k.len};
			d->json = sv_dup(v);
			d->json_len = v.len;
			if (!d->key.ptr || !d->json)
				return TK_ERR_NOMEM;
			in->n_meta++;
		}
	}
	(void)m;
	return 0;
}

/* The rank an input names: distributedInfo.rank, or the rank in a .tkb header. */
static int meta_rank(const tk_reader *r, int64_t *rank)
{
	tk_sv di = tk_reader_meta_find(r, "distributedInfo"), v;
	if (di.ptr && tk_json_obj_find(di, "rank", &v) == 0 && parse_i64(v, rank) == 0)
		return 0;
	tk_tkb_info ti;
	if (tk_reader_tkb_info(r, &ti) == 0 && ti.rank >= 0) {
		*rank = ti.rank;
		return 0;
	}
	return -1;
}

/* The input's time base in ns: baseTimeNanoseconds, or for a .tkb file from
 * the collector its start clock anchor (CLOCK_REALTIME minus the CUPTI
 * clock, read together), which puts CUPTI timestamps on the wall clock. */
static int input_base(const tk_reader *r, int64_t *base)
{
	if (parse_i64(tk_reader_meta_find(r, "baseTimeNanoseconds"), base) == 0)
		return 0;
	tk_tkb_info ti;
	if (tk_reader_tkb_info(r, &ti) == 0 && ti.has_start) {
		*base = ti.start.realtime_ns - ti.start.gpu_ns;
		return 0;
	}
	return -1;
}

static int rank_out_of_range(tk_merge *m, const char *path, int64_t rank, const char *from)
{
	return tk__err_set(&m->err, TK_ERR_FORMAT, "%s: rank %lld%s is out of range (0..%d): set ranks "
	                   "with --rank-from or the input order", path, (long long)rank, from, TK_MERGE_MAX_RANK);
}

/* The rank the input names, when it names one and it is not given: 1 if
 * it does, 0 if not, < 0 when it is out of range (the error is set). */
static int named_rank(tk_merge *m, tk__input *in, const tk_reader *r)
{
	int64_t rank;
	if (in->rank_source == 0 || meta_rank(r, &rank))
		return 0;
	if (rank < 0 || rank > TK_MERGE_MAX_RANK)
		return rank_out_of_range(m, in->path, rank, " (distributedInfo.rank or the .tkb header)");
	in->rank = rank, in->rank_source = 1;
	return 1;
}

/* Decided at the first event: the provisional clock shift, and whether the
 * rank filter drops this input without reading on. */
static int first_event(tk_merge *m, tk__input *in, const tk_reader *r)
{
	int64_t base;
	if (input_base(r, &base) == 0)
		in->prov_shift = base;
	int named = named_rank(m, in, r);
	if (named < 0)
		return named;
	if (in->rank_source == 0 || named) {
		if (!rank_selected(m, in->rank))
			in->skipped = 1;
		for (size_t i = 0; i < m->n_given && m->o.align == TK_ALIGN_GIVEN; i++)
			if (m->given_rank[i] == in->rank)
				in->prov_shift = tk__sat_add(in->prov_shift, m->given_off[i]);
	}
	return 0;
}

static int read_input(tk_merge *m, tk__input *in, tk_reader *r, uint64_t tag)
{
	const tk_event *ev;
	int rc;
	uint64_t bytes0 = m->bytes_done;
	while ((rc = tk_reader_next(r, &ev)) == TK_OK) {
		if (!in->events_in++) {
			if ((rc = first_event(m, in, r)) != 0)
				return rc;
			if (in->skipped)
				return 0;
		}
		if (note_event(m, in, ev))
			return tk__err_set(&m->err, TK_ERR_NOMEM, "merge: out of memory");
		if (!cat_selected(m, ev))
			continue;
		tk_event e = *ev;
		if (e.has & TK_HAS_TS)
			e.ts = tk__sat_add(e.ts, in->prov_shift);
		if ((rc = tk_sorter_add(m->sorter, &e, tag)) != 0)
			return tk__err_set(&m->err, rc, "%s", tk_sorter_error(m->sorter));
		if ((in->events_in & 0xffff) == 0 && m->o.progress) {
			m->bytes_done = bytes0 + tk_reader_get_stats(r)->bytes_in;
			m->o.progress(m->o.progress_ctx, in->path, m->bytes_done, in->events_in);
		}
	}
	m->bytes_done = bytes0 + tk_reader_get_stats(r)->bytes_in;
	if (rc < 0)
		return tk__err_set(&m->err, rc, "%s", tk_reader_error(r));
	for (size_t i = 0; tk_reader_warning(r, i); i++)
		tk__err_warn(&m->err, "%s", tk_reader_warning(r, i));
	if (save_meta(m, in, r))
		return tk__err_set(&m->err, TK_ERR_NOMEM, "merge: out of memory");
	if (!in->has_base && input_base(r, &in->base) == 0)
		in->has_base = 1;
	return named_rank(m, in, r) < 0 ? m->err.code : 0;
}

/* A new input slot named `name`; NULL (the merge's error set) when out of memory. */
static tk__input *new_input(tk_merge *m, const char *name, int64_t rank)
{
	if (TK__GROW(m->in, m->in_cap, m->n_in + 1)) {
		tk__err_set(&m->err, TK_ERR_NOMEM, "merge: out of memory");
		return NULL;
	}
	tk__input *in = &m->in[m->n_in];
	memset(in, 0, sizeof *in);
	if (!(in->path = tk__strdup(name))) {
		tk__err_set(&m->err, TK_ERR_NOMEM, "merge: out of memory");
		return NULL;
	}
	in->rank = rank >= 0 ? rank : (int64_t)m->n_in;
	in->rank_source = rank >= 0 ? 0 : 2;
	m->n_in++;
	if (in->rank > TK_MERGE_MAX_RANK) {
		rank_out_of_range(m, name, in->rank, "");
		return NULL;
	}
	return in;
}

/* After an input failed: later inputs are still read so that each failure
 * is reported, but no output will be written. */
static int input_done(tk_merge *m, int rc)
{
	if (rc && rc != TK_ERR_NOMEM && tk_sorter_error(m->sorter)[0] == 0) {
		m->n_bad++;
		m->err.code = 0;
	}
	return rc;
}

int tk_merge_add(tk_merge *m, const char *path, int64_t rank)
{
	if (!m || !path)
		return TK_ERR_ARG;
	if (m->err.code)
		return m->err.code;
	tk__input *in = new_input(m, path, rank);
	if (!in)
		return m->err.code;
	tk_reader *r = NULL;
	int rc = tk_reader_open_path(&r, path, &m->o.ropts);
	if (rc)
		rc = tk__err_set(&m->err, rc, "%s", r ? tk_reader_error(r) : tk_strerror(rc));
	else
		rc = read_input(m, in, r, (uint64_t)(m->n_in - 1));
	tk_reader_free(r);
	return input_done(m, rc);
}

int tk_merge_add_reader(tk_merge *m, tk_reader *r, int64_t rank)
{
	if (!m || !r)
		return TK_ERR_ARG;
	if (m->err.code)
		return m->err.code;
	tk__input *in = new_input(m, tk_reader_name(r), rank);
	if (!in)
		return m->err.code;
	return input_done(m, read_input(m, in, r, (uint64_t)(m->n_in - 1)));
}

const char *tk_merge_error(const tk_merge *m)
{
	return m ? m->err.msg : "no merge";
}

const char *tk_merge_warning(const tk_merge *m, size_t i)
{
	return m ? tk__err_warning(&m->err, i) : NULL;
}

size_t tk_merge_inputs(const tk_merge *m)
{
	return m ? m->n_in : 0;
}

int tk_merge_info(const tk_merge *m, size_t i, tk_merge_rank_info *info)
{
	if (!m || i >= m->n_in || !info)
		return TK_ERR_ARG;
	const tk__input *in = &m->in[i];
	*info = (tk_merge_rank_info){in->path,       in->rank,   in->rank_source, in->events_in,
	                             in->events_out, in->offset, in->residual,    in->matched,
	                             in->skipped};
	return 0;
}

static void input_free(tk__input *in)
{
	free(in->path);
	for (size_t i = 0; i < in->n_procs; i++) {
		if (in->procs[i].pid.kind == TK_ID_STR)
			free((char *)in->procs[i].pid.str.ptr);
		if (in->procs[i].newpid.kind == TK_ID_STR)
			free((char *)in->procs[i].newpid.str.ptr);
		free(in->procs[i].labels);
	}
	free(in->procs);
	tk__map_free(&in->pidx);
	tk__map_free(&in->tids);
	free(in->colls);
	free(in->dist_info);
	free(in->dev_props);
	for (size_t i = 0; i < in->n_meta; i++) {
		free((char *)in->meta[i].key.ptr);
		free(in->meta[i].json);
	}
	free(in->meta);
}

void tk_merge_free(tk_merge *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->n_in; i++)
		input_free(&m->in[i]);
	free(m->in);
	free(m->given_rank);
	free(m->given_off);
	tk_sorter_free(m->sorter);
	tk__strtab_free(&m->keys);
	tk__err_free(&m->err);
	free(m->tmpdir);
	free(m);
}
