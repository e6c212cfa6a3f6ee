/* json_write.c: Chrome Trace Event JSON writer (object form, compact, always strict JSON). */
#include <stdlib.h>

#include "internal.h"

typedef struct jw {
	int header_done;
	int n_written;
} jw;

static int jw_open(tk_writer *w)
{
	w->fs = calloc(1, sizeof(jw));
	return w->fs ? 0 : TK_ERR_NOMEM;
}

static void jw_free(tk_writer *w)
{
	free(w->fs);
	w->fs = NULL;
}

static int put_str(tk_writer *w, tk__buf *o, const char *s, size_t n)
{
	if (tk__buf_putc(o, '"'))
		return TK_ERR_NOMEM;
	int rc = tk__json_escape(o, s, n);
	if (rc < 0)
		return rc;
	w->repaired += (uint64_t)rc;
	return tk__buf_putc(o, '"');
}

/* Canonicalize caller-supplied JSON text; returns 0 or an error. */
static int canon(tk_writer *w, tk__buf *o, const char *s, size_t n, const char *what)
{
	const unsigned char *p = (const unsigned char *)s, *e = p + n, *end;
	tk__jerr je = {0};
	/* the scanner reads a little past e: work on a padded copy */
	tk__buf t = {0};
	if (tk__buf_reserve(&t, n + TK__PAD))
		return TK_ERR_NOMEM;
	memcpy(t.p, s, n);
	memset(t.p + n, 0, TK__PAD);
	t.p[n] = ' '; /* a number that ends the text must not read as cut off */
	p = (const unsigned char *)t.p;
	e = p + n + 1;
	int rc = tk__json_canon_value(p, e, o, &end, 1000, &je);
	if (rc == TK__J_OK && tk__skip_ws(end, e) != e)
		rc = TK__J_BAD;
	tk__buf_free(&t);
	w->repaired += (uint64_t)je.repaired;
	if (rc)
		return tk__err_set(&w->err, TK_ERR_ARG, "%s is not valid JSON", what);
	return 0;
}

static int jw_add_meta(tk_writer *w, tk_sv key, tk_sv json, int after)
{
	tk__buf b = {0};
	int rc = put_str(w, &b, key.ptr, key.len);
	if (!rc)
		rc = tk__buf_putc(&b, ':');
	if (!rc)
		rc = canon(w, &b, json.ptr, json.len, "metadata value");
	if (rc) {
		tk__buf_free(&b);
		return rc;
	}
	if (w->n_meta == w->meta_cap) {
		size_t nc = w->meta_cap ? w->meta_cap * 2 : 16;
		tk__meta *nm = realloc(w->meta, nc * sizeof *nm);
		if (!nm) {
			tk__buf_free(&b);
			return TK_ERR_NOMEM;
		}
		w->meta = nm;
		w->meta_cap = nc;
	}
	jw *s = w->fs;
	w->meta[w->n_meta++] = (tk__meta){{NULL, 0}, b.p, b.len, s->header_done || after};
	return 0;
}

static int header(tk_writer *w)
{
	jw *s = w->fs;
	tk__buf *o = &w->out;
	s->header_done = 1;
	if (tk__buf_putc(o, '{'))
		return TK_ERR_NOMEM;
	for (size_t i = 0; i < w->n_meta; i++) {
		if (w->meta[i].after)
			continue; /* written by close */
		if (tk__buf_append(o, w->meta[i].json, w->meta[i].json_len) || tk__buf_append(o, ",\n", 2))
			return TK_ERR_NOMEM;
		w->meta[i].after = 2; /* written */
	}
	return tk__buf_append(o, "\"traceEvents\":[", 15);
}

static int put_int(tk__buf *o, int64_t v)
{
	char t[24], *e = t + sizeof t, *p;
	uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
	p = tk__fmt_u64(e, u);
	if (v < 0)
		*--p = '-';
	return tk__buf_append(o, p, (size_t)(e - p));
}

/* Nanoseconds as decimal microseconds: integer when whole, else three decimals. */
static int put_us(tk__buf *o, int64_t ns)
{
	char t[32], *e = t + sizeof t, *p = e;
	uint64_t u = ns < 0 ? 0 - (uint64_t)ns : (uint64_t)ns;
	unsigned frac = (unsigned)(u % 1000);
	if (frac) {
		*--p = (char)('0' + frac % 10);
		*--p = (char)('0' + frac / 10 % 10);
		*--p = (char)('0' + frac / 100);
		*--p = '.';
	}
	p = tk__fmt_u64(p, u / 1000);
	if (ns < 0)
		*--p = '-';
	return tk__buf_append(o, p, (size_t)(e - p));
}

static int put_id(tk_writer *w, tk__buf *o, const char *key, size_t kn, const tk_id *id)
{
	if (id->kind == TK_ID_NONE)
		return 0;
	if (tk__buf_append(o, key, kn))
		return TK_ERR_NOMEM;
	if (id->kind == TK_ID_INT)
		return put_int(o, id->num);
	return put_str(w, o, id->str.ptr ? id->str.ptr : "", id->str.ptr ? id->str.len : 0);
}

/* Appends the event's members; `first` tracks the comma. */
static int members(tk_writer *w, tk__buf *o, const tk_event *ev)
{
	int rc = 0;
	if (ev->has & TK_HAS_PH) {
		char ph[8] = {'"', 'p', 'h', '"', ':', '"', ev->ph, '"'};
		if (ev->ph == '"' || ev->ph == '\\' || (unsigned char)ev->ph < 0x20 ||
		    (unsigned char)ev->ph >= 0x80)
			return tk__err_set(&w->err, TK_ERR_ARG, "event phase must be a printable ASCII character");
		rc = tk__buf_append(o, ph, 8) || tk__buf_putc(o, ',');
	}
	if (!rc && (ev->has & TK_HAS_CAT))
		rc = tk__buf_append(o, "\"cat\":", 6) || put_str(w, o, ev->cat.ptr, ev->cat.len) ||
		     tk__buf_putc(o, ',');
	if (!rc && (ev->has & TK_HAS_NAME))
		rc = tk__buf_append(o, "\"name\":", 7) || put_str(w, o, ev->name.ptr, ev->name.len) ||
		     tk__buf_putc(o, ',');
	if (!rc && ev->pid.kind)
		rc = put_id(w, o, "\"pid\":", 6, &ev->pid) || tk__buf_putc(o, ',');
	if (!rc && ev->tid.kind)
		rc = put_id(w, o, "\"tid\":", 6, &ev->tid) || tk__buf_putc(o, ',');
	if (!rc && (ev->has & TK_HAS_TS))
		rc = tk__buf_append(o, "\"ts\":", 5) || put_us(o, ev->ts) || tk__buf_putc(o, ',');
	if (!rc && (ev->has & TK_HAS_DUR))
		rc = tk__buf_append(o, "\"dur\":", 6) || put_us(o, ev->dur) || tk__buf_putc(o, ',');
	if (!rc && ev->id.kind)
		rc = put_id(w, o, "\"id\":", 5, &ev->id) || tk__buf_putc(o, ',');
	if (rc)
		return TK_ERR_NOMEM;
	if (ev->extra.ptr && ev->extra.len) {
		if (ev->has & TK_HAS_VALID_JSON) {
			rc = tk__buf_append(o, ev->extra.ptr, ev->extra.len);
		} else {
			/* validate the members by wrapping them into an object */
			tk__buf t = {0};
			rc = tk__buf_putc(&t, '{') || tk__buf_append(&t, ev->extra.ptr, ev->extra.len) ||
			     tk__buf_putc(&t, '}');
			size_t mark = o->len;
			if (!rc)
				rc = canon(w, o, t.p, t.len, "event extra members");
			tk__buf_free(&t);
			if (rc)
				return rc;
			/* strip the braces canon() wrote */
			memmove(o->p + mark, o->p + mark + 1, o->len - mark - 2);
			o->len -= 2;
		}
		if (rc || tk__buf_putc(o, ','))
			return rc ? rc : TK_ERR_NOMEM;
	}
	if (ev->args.ptr) {
		if (tk__buf_append(o, "\"args\":", 7))
			return TK_ERR_NOMEM;
		if (ev->has & TK_HAS_VALID_JSON)
			rc = tk__buf_append(o, ev->args.ptr, ev->args.len);
		else
			rc = canon(w, o, ev->args.ptr, ev->args.len, "event args");
		if (rc || tk__buf_putc(o, ','))
			return rc ? rc : TK_ERR_NOMEM;
	}
	return 0;
}

static int jw_write(tk_writer *w, const tk_event *ev)
{
	jw *s = w->fs;
	tk__buf *o = &w->out;
	if (!s->header_done && header(w))
		return TK_ERR_NOMEM;
	if (tk__buf_append(o, s->n_written ? ",\n{" : "\n{", s->n_written ? 3 : 2))
		return TK_ERR_NOMEM;
	size_t start = o->len;
	int rc = members(w, o, ev);
	if (rc) {
		o->len = start;
		return rc;
	}
	if (o->len > start)
		o->len--; /* the last comma */
	s->n_written++;
	return tk__buf_putc(o, '}');
}

static int jw_close(tk_writer *w)
{
	jw *s = w->fs;
	tk__buf *o = &w->out;
	if (!s->header_done && header(w))
		return TK_ERR_NOMEM;
	if (tk__buf_append(o, "\n]", 2))
		return TK_ERR_NOMEM;
	for (size_t i = 0; i < w->n_meta; i++) {
		if (w->meta[i].after == 2)
			continue;
		if (tk__buf_append(o, ",\n", 2) || tk__buf_append(o, w->meta[i].json, w->meta[i].json_len))
			return TK_ERR_NOMEM;
	}
	return tk__buf_append(o, "}\n", 2);
}

/* What jw_close() appends, for the byte budget. */
static uint64_t jw_close_bytes(const tk_writer *w)
{
	uint64_t n = 2 + 2; /* "\n]" and "}\n" */
	for (size_t i = 0; i < w->n_meta; i++)
		if (w->meta[i].after != 2)
			n += 2 + w->meta[i].json_len;
	return n;
}

const tk__wfmt tk__wfmt_json = {"json",      sizeof(jw),   jw_open, jw_add_meta,
                                jw_close_bytes, jw_write, jw_close, jw_free};
