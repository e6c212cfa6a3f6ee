/* stats_flame.c: the call paths of CPU time (tk_stats_opts.flame): ops, runtime calls and the Python frames of with_stack traces nested by time on their thread, each path with its self time; folded stacks for flame graphs. */
#include <stdlib.h>

#include "stats_internal.h"

/* The path of frame name `name` called from path `parent` (0: none): its
 * index, 0 when out of memory. Path 0 is none. */
static uint32_t path_of(tk_stats *s, uint32_t name, uint32_t parent)
{
	uint64_t key = (uint64_t)name << 32 | parent;
	uint32_t c = s->n_fl ? (uint32_t)tk__map_get0(&s->fl_index, key) : 0;
	if (c)
		return c;
	size_t need = s->n_fl ? s->n_fl + 1 : 2, cap = s->cap_fl;
	if (s->n_fl >= UINT32_MAX - 1 || tk__grow(&s->fl_name, &s->cap_fl, need, sizeof *s->fl_name, 64))
		return 0;
	if (cap != s->cap_fl) {
		uint32_t *np = realloc(s->fl_parent, s->cap_fl * sizeof *np);
		if (np)
			s->fl_parent = np;
		int64_t *ns = np ? realloc(s->fl_self, s->cap_fl * sizeof *ns) : NULL;
		if (!ns) {
			s->cap_fl = cap; /* the arrays keep their old size */
			return 0;
		}
		s->fl_self = ns;
	}
	if (!s->n_fl) {
		s->fl_name[0] = s->fl_parent[0] = 0;
		s->fl_self[0] = 0;
		s->n_fl = 1;
	}
	c = (uint32_t)s->n_fl;
	if (tk__map_put_int(&s->fl_index, key, c))
		return 0;
	s->fl_name[c] = name;
	s->fl_parent[c] = parent;
	s->fl_self[c] = 0;
	s->n_fl++;
	return c;
}

/* One event in time order: under the innermost open frame that encloses
 * it (torch's rule, as for the ops), its time its path's and not its
 * caller's own. */
static int process(tk_stats *s, tk__thread *t, const tk__pend *p)
{
	int late = t->started && p->ts < t->frontier;
	tk__frame *par = tk__parent_frame(t, p, late);
	uint32_t c = path_of(s, p->key, par ? par->chain : 0);
	if (!c)
		return TK_ERR_NOMEM;
	s->fl_self[c] = tk__sat_add(s->fl_self[c], p->dur);
	if (par)
		s->fl_self[par->chain] = tk__sat_sub(s->fl_self[par->chain], p->dur);
	if (late)
		return 0; /* under what is still open, never a caller itself */
	t->started = 1;
	t->frontier = p->ts;
	if (tk__grow(&t->stack, &t->cap_stack, t->depth + 1, sizeof *t->stack, 16))
		return TK_ERR_NOMEM;
	t->stack[t->depth++] = (tk__frame){p->ts, tk__sat_add(p->ts, p->dur), p->key, c, 0};
	return 0;
}

/* Sort a thread's pending events and process the first n of them. */
static int flush(tk_stats *s, tk__thread *t, size_t n)
{
	int rc = tk__pend_sort(t->pend, t->n_pend, t->n_sorted);
	for (size_t i = 0; !rc && i < n; i++)
		rc = process(s, t, &t->pend[i]);
	if (rc)
		return rc;
	if (t->n_pend > n)
		memmove(t->pend, t->pend + n, (t->n_pend - n) * sizeof *t->pend);
	t->n_pend -= n;
	t->n_sorted = t->n_pend;
	s->n_fpending -= n;
	return 0;
}

/* The index of name among the call paths' names, through *fl (or the
 * cache by the name's pointer): UINT32_MAX when out of memory. */
static uint32_t name_id(tk_stats *s, tk_sv name, uint32_t *fl)
{
	/* a frame's name is a C string: names that read the same up to a NUL
	 * byte are one frame */
	const char *z = name.len ? memchr(name.ptr, 0, name.len) : NULL;
	if (z)
		name.len = (size_t)(z - name.ptr);
	if (!fl) {
		size_t h = (size_t)(((uint64_t)(uintptr_t)name.ptr * 0x9e3779b97f4a7c15ull) >> 56);
		if (s->fl_cache[h].src == name.ptr && s->fl_cache[h].len == name.len && s->fl_cache[h].fl &&
		    memcmp(s->fl_names.ents[s->fl_cache[h].fl - 1].ptr, name.ptr, name.len) == 0)
			return s->fl_cache[h].fl - 1;
		s->fl_cache[h].src = name.ptr;
		s->fl_cache[h].len = name.len;
		s->fl_cache[h].fl = 0;
		fl = &s->fl_cache[h].fl;
	}
	uint32_t id;
	if (*fl)
		return *fl - 1;
	if (!tk__strtab_intern_id(&s->fl_names, name.ptr, name.len, &id).ptr || id == UINT32_MAX - 1)
		return UINT32_MAX;
	*fl = id + 1;
	return id;
}

int tk__stats_flame_add(tk_stats *s, const tk_event *ev, tk_sv name, uint32_t *fl)
{
	tk__thread *o = tk__stats_thread(s, ev);
	if (!o || (!o->fl && !(o->fl = calloc(1, sizeof *o->fl))))
		return TK_ERR_NOMEM;
	tk__thread *t = o->fl;
	uint32_t id = name_id(s, name, fl);
	if (id == UINT32_MAX || tk__grow(&t->pend, &t->cap_pend, t->n_pend + 1, sizeof *t->pend, 16))
		return TK_ERR_NOMEM;
	tk__pend *p = &t->pend[t->n_pend++];
	memset(p, 0, sizeof *p);
	p->ts = ev->ts;
	p->dur = (ev->has & TK_HAS_DUR) && ev->dur > 0 ? ev->dur : 0;
	p->key = id;
	/* memory bounded as for the ops: the older half of this thread */
	if (++s->n_fpending > s->opts.max_pending)
		return flush(s, t, t->n_pend / 2 + 1);
	return 0;
}

int tk__stats_finish_flame(tk_stats *s)
{
	if (!s->opts.flame)
		return 0;
	for (size_t i = 0; i < s->n_threads; i++) {
		tk__thread *t = s->threads[i].fl;
		int rc = t ? flush(s, t, t->n_pend) : 0;
		if (rc)
			return rc;
	}
	size_t n = s->n_fl ? s->n_fl - 1 : 0;
	s->frames = calloc(n ? n : 1, sizeof *s->frames);
	if (!s->frames)
		return TK_ERR_NOMEM;
	for (size_t i = 0; i < n; i++) {
		tk_stats_frame *f = &s->frames[i];
		f->name = s->fl_names.ents[s->fl_name[i + 1]].ptr;
		f->parent = s->fl_parent[i + 1] ? s->fl_parent[i + 1] - 1 : SIZE_MAX;
		/* children that overlap each other can leave less than nothing */
		f->self_ns = s->fl_self[i + 1] > 0 ? s->fl_self[i + 1] : 0;
		f->total_ns = f->self_ns;
	}
	for (size_t i = n; i-- > 0;) /* callers come first */
		if (s->frames[i].parent != SIZE_MAX)
			s->frames[s->frames[i].parent].total_ns =
			    tk__sat_add(s->frames[s->frames[i].parent].total_ns, s->frames[i].total_ns);
	tk__map_free(&s->fl_index);
	return 0;
}

void tk__stats_free_flame(tk_stats *s)
{
	for (size_t i = 0; i < s->n_threads; i++) {
		tk__thread *t = s->threads[i].fl;
		if (t) {
			free(t->pend);
			free(t->stack);
			free(t);
		}
	}
	tk__strtab_free(&s->fl_names);
	free(s->fl_name);
	free(s->fl_parent);
	free(s->fl_self);
	tk__map_free(&s->fl_index);
	free(s->frames);
}

size_t tk_stats_frame_count(const tk_stats *s)
{
	return s && s->finished && s->frames && s->n_fl ? s->n_fl - 1 : 0;
}

const tk_stats_frame *tk_stats_frame_get(const tk_stats *s, size_t i)
{
	return i < tk_stats_frame_count(s) ? &s->frames[i] : NULL;
}

/* ---- several stats objects' paths as one set ---- */

int tk_stats_frames_merge(tk_stats *const *s, size_t n, tk_stats_frame **out, size_t *n_out)
{
	if (!out || !n_out || (n && !s))
		return TK_ERR_ARG;
	*out = NULL;
	*n_out = 0;
	tk__strtab names = {0};
	tk__map index = {0}; /* (name id, merged parent + 1) -> merged index + 1 */
	tk_stats_frame *v = NULL;
	size_t *map = NULL, n_v = 0, cap_v = 0, cap_map = 0;
	int rc = 0;
	for (size_t k = 0; !rc && k < n; k++) {
		size_t nf = tk_stats_frame_count(s[k]);
		if ((rc = tk__grow(&map, &cap_map, nf, sizeof *map, 64)) != 0)
			break;
		for (size_t i = 0; !rc && i < nf; i++) { /* a path after its caller: the caller is mapped */
			const tk_stats_frame *f = &s[k]->frames[i];
			size_t parent = f->parent == SIZE_MAX ? SIZE_MAX : map[f->parent];
			uint32_t id;
			if (!tk__strtab_intern_id(&names, f->name, strlen(f->name), &id).ptr) {
				rc = TK_ERR_NOMEM;
				break;
			}
			if (n_v >= UINT32_MAX - 1) {
				rc = TK_ERR_LIMIT;
				break;
			}
			uint64_t key = (uint64_t)id << 32 | (parent == SIZE_MAX ? 0 : parent + 1);
			size_t c = (size_t)tk__map_get0(&index, key);
			if (!c) {
				if ((rc = tk__grow(&v, &cap_v, n_v + 1, sizeof *v, 256)) != 0 ||
				    (rc = tk__map_put_int(&index, key, n_v + 1)) != 0)
					break;
				v[n_v] = (tk_stats_frame){f->name, parent, 0, 0};
				c = ++n_v;
			}
			map[i] = c - 1;
			v[c - 1].self_ns = tk__sat_add(v[c - 1].self_ns, f->self_ns);
			v[c - 1].total_ns = tk__sat_add(v[c - 1].total_ns, f->total_ns);
		}
	}
	free(map);
	tk__map_free(&index);
	tk__strtab_free(&names);
	if (rc) {
		free(v);
		return rc == TK_ERR_LIMIT ? rc : TK_ERR_NOMEM;
	}
	*out = v;
	*n_out = n_v;
	return 0;
}

/* ---- folded stacks ---- */

typedef struct fline {
	size_t at, len; /* the path's text in the buffer */
	const char *p;  /* the same, once the buffer is complete */
	int64_t self;
} fline;

static int cmp_line(const void *a, const void *b)
{
	const fline *x = a, *y = b;
	size_t n = x->len < y->len ? x->len : y->len;
	int c = memcmp(x->p, y->p, n);
	return c ? c : (x->len > y->len) - (x->len < y->len);
}

/* A frame's name as folded stacks take it: ';' and control characters as
 * '_', and an empty name as '_' (a frame is never empty there). */
static int put_name(tk__buf *b, const char *name)
{
	if (!*name)
		return tk__buf_putc(b, '_');
	for (const char *p = name; *p; p++)
		if (tk__buf_putc(b, *p == ';' || (unsigned char)*p < 0x20 ? '_' : *p))
			return TK_ERR_NOMEM;
	return 0;
}

int tk_stats_format_folded(tk_stats *const *s, size_t n, char **out, size_t *len)
{
	*out = NULL;
	*len = 0;
	if (!s || !out)
		return TK_ERR_ARG;
	tk_stats_frame *fr;
	size_t nf;
	int rc = tk_stats_frames_merge(s, n, &fr, &nf);
	if (rc)
		return rc;
	tk__buf text = {0}, res = {0};
	fline *lines = nf ? malloc(nf * sizeof *lines) : NULL;
	size_t n_lines = 0;
	if (nf && !lines)
		rc = TK_ERR_NOMEM;
	/* each path's text is its caller's, ';', its name: callers first */
	for (size_t i = 0; !rc && i < nf; i++) {
		fline *l = &lines[n_lines++];
		l->at = text.len;
		l->self = fr[i].self_ns;
		if (fr[i].parent != SIZE_MAX) {
			fline *p = &lines[fr[i].parent];
			rc = tk__buf_reserve(&text, p->len + 1) || tk__buf_append(&text, text.p + p->at, p->len) ||
			     tk__buf_putc(&text, ';');
		}
		rc = rc || put_name(&text, fr[i].name);
		l->len = text.len - l->at;
	}
	free(fr);
	if (!rc && n_lines) {
		for (size_t i = 0; i < n_lines; i++)
			lines[i].p = text.p + lines[i].at;
		qsort(lines, n_lines, sizeof *lines, cmp_line);
	}
	for (size_t i = 0; !rc && i < n_lines;) {
		int64_t self = 0;
		size_t j = i;
		for (; j < n_lines && lines[j].len == lines[i].len && memcmp(lines[j].p, lines[i].p, lines[i].len) == 0; j++)
			self = tk__sat_add(self, lines[j].self);
		if (self > 0)
			rc = tk__buf_append(&res, lines[i].p, lines[i].len) || tk__buf_putc(&res, ' ') ||
			     tk__buf_i64(&res, self) || tk__buf_putc(&res, '\n');
		i = j;
	}
	free(lines);
	tk__buf_free(&text);
	if (rc || tk__buf_putc(&res, 0)) {
		tk__buf_free(&res);
		return TK_ERR_NOMEM;
	}
	*out = res.p;
	*len = res.len - 1;
	return 0;
}
