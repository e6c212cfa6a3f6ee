/* procs.c: processes and threads of a trace for the writers that need them (pftrace, sqlite), event ids, events in same-timestamp groups out of a sorter. */
#include <stdlib.h>

#include "core/jscan.h"
#include "procs.h"

typedef struct pidx { /* map record: hash -> index */
	uint64_t h, idx;
} pidx;

uint64_t tk__id_hash(const tk_id *id)
{
	switch (id->kind) {
	case TK_ID_INT: return tk__mix64((uint64_t)id->num) ^ 0x51ed27a1u;
	case TK_ID_STR: return tk__hash(id->str.ptr, id->str.len) ^ 0xa3b1c2d3e4f5ull;
	default: return 0x7f4a7c15u;
	}
}

int tk__id_copy(tk_id *d, const tk_id *s)
{
	*d = *s;
	if (s->kind == TK_ID_STR && !(d->str.ptr = tk__strndup(s->str.ptr, s->str.len)))
		return TK_ERR_NOMEM;
	return 0;
}

void tk__id_free(tk_id *id)
{
	if (id->kind == TK_ID_STR)
		free((char *)id->str.ptr);
	id->kind = TK_ID_NONE;
}

uint64_t tk__flow_hash(const tk_event *ev)
{
	uint64_t h = ev->cat.ptr ? tk__hash(ev->cat.ptr, ev->cat.len) : 0x1234;
	return tk__mix64(h * 31 + tk__id_hash(&ev->id));
}

void tk__procs_init(tk__procs *r, size_t proc_size, size_t thr_size)
{
	memset(r, 0, sizeof *r);
	r->proc_size = proc_size > sizeof(tk__proc) ? proc_size : sizeof(tk__proc);
	r->thr_size = thr_size > sizeof(tk__thr) ? thr_size : sizeof(tk__thr);
	tk__map_init(&r->proc_map, sizeof(pidx), 4);
	tk__map_init(&r->thr_map, sizeof(pidx), 4);
}

void tk__procs_free(tk__procs *r)
{
	for (size_t i = 0; i < r->n_proc; i++) {
		tk__proc *p = tk__procs_proc_at(r, i);
		tk__id_free(&p->pid);
		free(p->name);
		free(p->labels);
	}
	for (size_t i = 0; i < r->n_thr; i++) {
		tk__thr *t = tk__procs_thr_at(r, i);
		tk__id_free(&t->pid);
		tk__id_free(&t->tid);
		free(t->name);
	}
	free(r->proc);
	free(r->thr);
	tk__map_free(&r->proc_map);
	tk__map_free(&r->thr_map);
	tk__buf_free(&r->scratch);
	memset(r, 0, sizeof *r);
}

/* Room for one more record of `size` bytes in *a. */
static int grow(unsigned char **a, size_t *cap, size_t n, size_t size)
{
	if (n < *cap)
		return 0;
	size_t nc = *cap ? *cap * 2 : 16;
	unsigned char *p = realloc(*a, nc * size);
	if (!p)
		return TK_ERR_NOMEM;
	*a = p;
	*cap = nc;
	return 0;
}

int tk__procs_proc(tk__procs *r, const tk_id *pid, size_t *idx, int *added)
{
	int fresh;
	/* room first, so that the map never holds an index past the end */
	if (grow(&r->proc, &r->proc_cap, r->n_proc, r->proc_size))
		return TK_ERR_NOMEM;
	pidx *x = tk__map_put(&r->proc_map, tk__id_hash(pid), NULL, NULL, &fresh);
	if (!x)
		return TK_ERR_NOMEM;
	if (!fresh) {
		*idx = (size_t)x->idx;
		return 0;
	}
	x->idx = *idx = r->n_proc;
	tk__proc *p = tk__procs_proc_at(r, r->n_proc++);
	memset(p, 0, r->proc_size);
	if (added)
		*added |= TK__PROCS_NEW_PROC;
	return tk__id_copy(&p->pid, pid);
}

int tk__procs_thr(tk__procs *r, const tk_id *pid, const tk_id *tid, size_t *idx, int *added)
{
	size_t pi;
	int rc = tk__procs_proc(r, pid, &pi, added);
	if (rc)
		return rc;
	int fresh;
	if (grow(&r->thr, &r->thr_cap, r->n_thr, r->thr_size))
		return TK_ERR_NOMEM;
	pidx *x = tk__map_put(&r->thr_map, tk__mix64(tk__id_hash(pid) * 31 + tk__id_hash(tid)), NULL, NULL, &fresh);
	if (!x)
		return TK_ERR_NOMEM;
	if (!fresh) {
		*idx = (size_t)x->idx;
		return 0;
	}
	x->idx = *idx = r->n_thr;
	tk__thr *t = tk__procs_thr_at(r, r->n_thr++);
	memset(t, 0, r->thr_size);
	t->proc = pi;
	if (added)
		*added |= TK__PROCS_NEW_THR;
	if (tk__id_copy(&t->pid, pid) || tk__id_copy(&t->tid, tid))
		return TK_ERR_NOMEM;
	return 0;
}

int tk__procs_meta(tk__procs *r, const tk_event *ev, int *added, size_t *pi, size_t *ti)
{
	*pi = *ti = SIZE_MAX;
	if (ev->ph != 'M' || !ev->args.ptr)
		return 0;
	int proc = ev->name.len > 8 && memcmp(ev->name.ptr, "process_", 8) == 0;
	int thr = ev->name.len > 7 && memcmp(ev->name.ptr, "thread_", 7) == 0;
	if (!proc && !thr)
		return 0;
	tk_sv what = proc ? (tk_sv){ev->name.ptr + 8, ev->name.len - 8} : (tk_sv){ev->name.ptr + 7, ev->name.len - 7};
#define IS(lit) (what.len == sizeof(lit) - 1 && memcmp(what.ptr, lit, what.len) == 0)
	const char *key = IS("name") ? "name" : IS("sort_index") ? "sort_index" : proc && IS("labels") ? "labels" : NULL;
#undef IS
	tk_sv v;
	if (!key || tk__js_find(ev->args, key, strlen(key), &v))
		return 0;
	size_t i;
	if (proc ? tk__procs_proc(r, &ev->pid, &i, added) : tk__procs_thr(r, &ev->pid, &ev->tid, &i, added))
		return TK_ERR_NOMEM;
	tk__proc *p = proc ? tk__procs_proc_at(r, i) : NULL;
	tk__thr *t = proc ? NULL : tk__procs_thr_at(r, i);
	*pi = proc ? i : t->proc;
	if (!proc)
		*ti = i;
	if (key[0] == 's') {
		int64_t n;
		if (tk__js_int(v, &n))
			return 0;
		*(p ? &p->sort : &t->sort) = n;
		*(p ? &p->has_sort : &t->has_sort) = 1;
		return 0;
	}
	if (v.len < 2 || v.ptr[0] != '"' || tk__js_str_buf(v, &r->scratch))
		return 0;
	char *c = tk__strndup(r->scratch.p ? r->scratch.p : "", r->scratch.len);
	if (!c)
		return TK_ERR_NOMEM;
	char **slot = t ? &t->name : key[0] == 'l' ? &p->labels : &p->name;
	free(*slot);
	*slot = c;
	return 0;
}

int tk__sorter_groups(tk_sorter *s, size_t max, int (*flush)(void *ctx, tk_event **g, size_t n), void *ctx,
                      int *sorter_err)
{
	tk_event **g = NULL;
	size_t n = 0, cap = 0;
	const tk_event *ev;
	uint64_t tag;
	int rc;
	*sorter_err = 0;
	for (;;) {
		rc = tk_sorter_next(s, &ev, &tag);
		if (rc != TK_OK) {
			*sorter_err = rc != TK_EOF;
			break;
		}
		if (n) {
			const tk_event *a = g[0];
			int same = (a->has & TK_HAS_TS) == (ev->has & TK_HAS_TS) && (!(ev->has & TK_HAS_TS) || a->ts == ev->ts);
			if (!same || n >= max) {
				rc = flush(ctx, g, n);
				for (size_t i = 0; i < n; i++)
					tk_event_free(g[i]);
				n = 0;
				if (rc)
					break;
			}
		}
		if (TK__GROW(g, cap, n + 1) || !(g[n] = tk_event_dup(ev))) {
			rc = TK_ERR_NOMEM;
			break;
		}
		n++;
	}
	if (rc == TK_EOF)
		rc = n ? flush(ctx, g, n) : 0;
	for (size_t i = 0; i < n; i++)
		tk_event_free(g[i]);
	free(g);
	return rc;
}
