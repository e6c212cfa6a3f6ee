/* event.c: owned event copies, event equality, and typed access to event arguments. */
#include <stdlib.h>

#include "internal.h"
#include "tracekit/stats.h"

static size_t sv_size(tk_sv s)
{
	return s.ptr ? s.len + 1 : 0;
}

static tk_sv sv_copy(char **dst, tk_sv s)
{
	if (!s.ptr)
		return s;
	char *d = *dst;
	memcpy(d, s.ptr, s.len);
	d[s.len] = 0;
	*dst += s.len + 1;
	return (tk_sv){d, s.len};
}

tk_event *tk_event_dup(const tk_event *ev)
{
	if (!ev)
		return NULL;
	size_t n = sizeof *ev + sv_size(ev->name) + sv_size(ev->cat) + sv_size(ev->args) +
	           sv_size(ev->extra);
	const tk_id *ids[3] = {&ev->pid, &ev->tid, &ev->id};
	for (int i = 0; i < 3; i++)
		if (ids[i]->kind == TK_ID_STR)
			n += sv_size(ids[i]->str);
	tk_event *d = malloc(n);
	if (!d)
		return NULL;
	*d = *ev;
	char *p = (char *)(d + 1);
	d->name = sv_copy(&p, ev->name);
	d->cat = sv_copy(&p, ev->cat);
	d->args = sv_copy(&p, ev->args);
	d->extra = sv_copy(&p, ev->extra);
	tk_id *dids[3] = {&d->pid, &d->tid, &d->id};
	for (int i = 0; i < 3; i++)
		if (dids[i]->kind == TK_ID_STR)
			dids[i]->str = sv_copy(&p, ids[i]->str);
	return d;
}

void tk_event_free(tk_event *ev)
{
	free(ev);
}

static int sv_eq(tk_sv a, tk_sv b)
{
	if (!a.ptr || !b.ptr)
		return !a.ptr == !b.ptr || (a.len == 0 && b.len == 0);
	return a.len == b.len && memcmp(a.ptr, b.ptr, a.len) == 0;
}

int tk__id_eq(const tk_id *a, const tk_id *b)
{
	if (a->kind != b->kind)
		return 0;
	if (a->kind == TK_ID_INT)
		return a->num == b->num;
	if (a->kind == TK_ID_STR)
		return sv_eq(a->str, b->str);
	return 1;
}

int tk_event_equal(const tk_event *a, const tk_event *b)
{
	unsigned mask = ~(unsigned)TK_HAS_VALID_JSON;
	if (!a || !b)
		return a == b;
	if ((a->has & mask) != (b->has & mask))
		return 0;
	if ((a->has & TK_HAS_PH) && a->ph != b->ph)
		return 0;
	if ((a->has & TK_HAS_TS) && a->ts != b->ts)
		return 0;
	if ((a->has & TK_HAS_DUR) && a->dur != b->dur)
		return 0;
	if ((a->has & TK_HAS_NAME) && !sv_eq(a->name, b->name))
		return 0;
	if ((a->has & TK_HAS_CAT) && !sv_eq(a->cat, b->cat))
		return 0;
	return tk__id_eq(&a->pid, &b->pid) && tk__id_eq(&a->tid, &b->tid) && tk__id_eq(&a->id, &b->id) &&
	       sv_eq(a->args, b->args) && sv_eq(a->extra, b->extra);
}

int tk_json_obj_find(tk_sv obj, const char *key, tk_sv *val)
{
	if (!key)
		return TK_ERR_ARG;
	return tk__js_find(obj, key, strlen(key), val);
}

int tk_args_find(const tk_event *ev, const char *key, tk_sv *val)
{
	if (!ev || !key)
		return TK_ERR_ARG;
	return tk_json_obj_find(ev->args, key, val);
}

int tk_args_get_int(const tk_event *ev, const char *key, int64_t *out)
{
	tk_sv v;
	int rc = tk_args_find(ev, key, &v);
	if (rc)
		return rc;
	return tk__js_int(v, out) ? TK_ERR_FORMAT : 0;
}

int tk_args_get_str(const tk_event *ev, const char *key, char *buf, size_t cap, size_t *len)
{
	tk_sv v;
	int rc = tk_args_find(ev, key, &v);
	return rc ? rc : tk__js_str(v, buf, cap, len);
}

int tk_args_get_dims(const tk_event *ev, const char *key, tk_dims *out)
{
	memset(out, 0, sizeof *out);
	tk_sv v;
	int rc = tk_args_find(ev, key, &v);
	return rc ? rc : tk__js_dims(v, out);
}

/* A string of an event appended to b (with a NUL), its pointer made the
 * offset there plus 1 (0 stays "absent"), until sv_unstash(). */
static int sv_stash(tk__buf *b, tk_sv *v)
{
	if (!v->ptr)
		return 0;
	size_t at = b->len;
	if (tk__buf_append(b, v->ptr, v->len) || tk__buf_putc(b, 0))
		return TK_ERR_NOMEM;
	v->ptr = (const char *)(uintptr_t)(at + 1);
	return 0;
}

static void sv_unstash(const char *base, tk_sv *v)
{
	if (v->ptr)
		v->ptr = base + ((uintptr_t)v->ptr - 1);
}

int tk__event_pack(tk__buf *b, const tk_event *ev, size_t *off)
{
	size_t at = (b->len + 7) & ~(size_t)7;
	if (tk__buf_reserve(b, at - b->len + sizeof *ev))
		return TK_ERR_NOMEM;
	b->len = at + sizeof *ev;
	tk_event d = *ev;
	tk_sv *sv[7] = {&d.name, &d.cat, &d.args, &d.extra, &d.pid.str, &d.tid.str, &d.id.str};
	const tk_id *ids[3] = {&d.pid, &d.tid, &d.id};
	for (int i = 0; i < 7; i++)
		if ((i < 4 || ids[i - 4]->kind == TK_ID_STR) && sv_stash(b, sv[i]))
			return TK_ERR_NOMEM;
	memcpy(b->p + at, &d, sizeof d);
	*off = at;
	return 0;
}

void tk__event_unpack(const tk__buf *b, size_t off, tk_event *out)
{
	memcpy(out, b->p + off, sizeof *out);
	tk_sv *sv[7] = {&out->name, &out->cat, &out->args, &out->extra, &out->pid.str, &out->tid.str, &out->id.str};
	const tk_id *ids[3] = {&out->pid, &out->tid, &out->id};
	for (int i = 0; i < 7; i++)
		if (i < 4 || ids[i - 4]->kind == TK_ID_STR)
			sv_unstash(b->p, sv[i]);
}

int tk__batch_copy(tk_event *dst, const tk_event *ev, tk__buf *text)
{
	*dst = *ev;
	return sv_stash(text, &dst->args) || sv_stash(text, &dst->extra) ? TK_ERR_NOMEM : 0;
}

void tk__batch_fix(tk_event *ev, size_t n, const tk__buf *text)
{
	for (size_t i = 0; i < n; i++) {
		sv_unstash(text->p, &ev[i].args);
		sv_unstash(text->p, &ev[i].extra);
	}
}

void tk__batch_notes(const tk_reader_opts *o, const tk_event *ev, size_t n, unsigned char **notes, size_t *cap,
                     tk__buf *summary)
{
	summary->len = 0;
	if (!o->note_fn)
		return;
	if (n > *cap) {
		free(*notes);
		*cap = 0;
		if ((*notes = malloc(n * o->note_size)) != NULL)
			*cap = n;
	}
	for (size_t i = 0; *notes && i < n; i++)
		o->note_fn(o->note_ctx, &ev[i], *notes + i * o->note_size);
	if (*notes && o->note_fn == tk_stats_note)
		tk__stats_batch(o->note_ctx, ev, n, *notes, summary);
}

int tk__render_always;

int tk__render_now(const tk_reader_opts *o, int on_caller, size_t done, size_t waiting)
{
	return o->render_json && (tk__render_always || (!on_caller && done >= 2 && !waiting));
}

void tk__batch_render(const tk_reader_opts *o, const tk_event *ev, size_t n, tk__buf *text, tk__rend **rend,
                      size_t *cap)
{
	if (!o->render_json)
		return;
	if (n > *cap) {
		free(*rend);
		*cap = 0;
		if ((*rend = malloc(n * sizeof **rend)) != NULL)
			*cap = n;
	}
	text->len = 0;
	for (size_t i = 0; *rend && i < n; i++) {
		tk__rend *x = &(*rend)[i];
		uint64_t repaired = 0;
		x->off = text->len;
		x->len = TK__NO_TEXT;
		x->repaired = 0;
		if (tk__json_event_text(text, &ev[i], &repaired) == 0 && text->len - x->off < TK__NO_TEXT &&
		    repaired < UINT32_MAX) {
			x->len = (uint32_t)(text->len - x->off);
			x->repaired = (uint32_t)repaired;
		} else {
			text->len = x->off;
		}
	}
}
