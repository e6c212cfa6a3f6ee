/* event.c: owned event copies, event equality, and typed access to event arguments. */
#include <stdlib.h>

#include "internal.h"

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

/* ---- a small scanner over JSON text that needs no padding ---- */

static const char *ws(const char *p, const char *e)
{
	while (p < e && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t'))
		p++;
	return p;
}

/* p at '"': returns just past the closing quote, or NULL. */
static const char *skip_string(const char *p, const char *e)
{
	for (p++; p < e; p++) {
		if (*p == '\\')
			p++;
		else if (*p == '"')
			return p + 1;
	}
	return NULL;
}

static const char *skip_value(const char *p, const char *e)
{
	int depth = 0;
	p = ws(p, e);
	do {
		if (p >= e)
			return NULL;
		if (*p == '"') {
			if (!(p = skip_string(p, e)))
				return NULL;
		} else if (*p == '{' || *p == '[') {
			depth++;
			p++;
		} else if (*p == '}' || *p == ']') {
			if (--depth < 0)
				return NULL;
			p++;
		} else if (*p == ',' || *p == ':' || *p == ' ' || *p == '\n' || *p == '\r' ||
		           *p == '\t') {
			if (!depth)
				return NULL;
			p++;
		} else {
			while (p < e && *p != ',' && *p != '}' && *p != ']' && *p != ' ' && *p != '\n' &&
			       *p != '\r' && *p != '\t' && *p != ':')
				p++;
		}
	} while (depth);
	return p;
}

int tk_json_obj_find(tk_sv obj, const char *key, tk_sv *val)
{
	if (!obj.ptr)
		return TK_EOF;
	const char *p = ws(obj.ptr, obj.ptr + obj.len), *e = obj.ptr + obj.len;
	size_t kl = strlen(key);
	if (p >= e || *p != '{')
		return TK_ERR_FORMAT;
	p = ws(p + 1, e);
	if (p < e && *p == '}')
		return TK_EOF;
	while (p < e && *p == '"') {
		const char *ks = p + 1, *ke = skip_string(p, e);
		if (!ke)
			return TK_ERR_FORMAT;
		int match = (size_t)(ke - 1 - ks) == kl && memcmp(ks, key, kl) == 0;
		p = ws(ke, e);
		if (p >= e || *p != ':')
			return TK_ERR_FORMAT;
		const char *vs = ws(p + 1, e), *ve = skip_value(vs, e);
		if (!ve)
			return TK_ERR_FORMAT;
		if (match) {
			if (val)
				*val = (tk_sv){vs, (size_t)(ve - vs)};
			return 0;
		}
		p = ws(ve, e);
		if (p < e && *p == ',')
			p = ws(p + 1, e);
		else
			break;
	}
	return p < e && *p == '}' ? TK_EOF : TK_ERR_FORMAT;
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
	const unsigned char *p = (const unsigned char *)v.ptr;
	return tk__parse_int64(p, p + v.len, out) ? TK_ERR_FORMAT : 0;
}

static int hexv(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c |= 0x20;
	return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

static long read_u(const char *p, const char *e)
{
	if (e - p < 6 || p[1] != 'u')
		return -1;
	long v = 0;
	for (int i = 2; i < 6; i++) {
		int h = hexv(p[i]);
		if (h < 0)
			return -1;
		v = v * 16 + h;
	}
	return v;
}

static void put(char *buf, size_t cap, size_t *n, const char *s, size_t k)
{
	for (size_t i = 0; i < k; i++, (*n)++)
		if (*n + 1 < cap)
			buf[*n] = s[i];
}

int tk_args_get_str(const tk_event *ev, const char *key, char *buf, size_t cap, size_t *len)
{
	tk_sv v;
	int rc = tk_args_find(ev, key, &v);
	if (rc)
		return rc;
	const char *p = v.ptr, *e = v.ptr + v.len;
	if (p >= e || *p != '"')
		return TK_ERR_FORMAT;
	size_t n = 0;
	for (p++; p < e && *p != '"'; p++) {
		if (*p != '\\') {
			put(buf, cap, &n, p, 1);
			continue;
		}
		if (p + 1 >= e)
			return TK_ERR_FORMAT;
		char c = p[1], t[4];
		const char *map = "\"\"\\\\//b\bf\fn\nr\rt\t";
		const char *m = strchr(map, c);
		if (c && c != 'u' && m && ((m - map) % 2) == 0) {
			put(buf, cap, &n, m + 1, 1);
			p++;
			continue;
		}
		long cp = read_u(p, e);
		if (cp < 0)
			return TK_ERR_FORMAT;
		p += 5;
		if (cp >= 0xD800 && cp <= 0xDBFF) {
			long lo = read_u(p + 1, e);
			if (lo >= 0xDC00 && lo <= 0xDFFF) {
				cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
				p += 6;
			} else {
				cp = 0xFFFD;
			}
		} else if (cp >= 0xDC00 && cp <= 0xDFFF) {
			cp = 0xFFFD;
		}
		size_t k;
		if (cp < 0x80)
			t[0] = (char)cp, k = 1;
		else if (cp < 0x800)
			t[0] = (char)(0xC0 | (cp >> 6)), t[1] = (char)(0x80 | (cp & 63)), k = 2;
		else if (cp < 0x10000)
			t[0] = (char)(0xE0 | (cp >> 12)), t[1] = (char)(0x80 | ((cp >> 6) & 63)),
			t[2] = (char)(0x80 | (cp & 63)), k = 3;
		else
			t[0] = (char)(0xF0 | (cp >> 18)), t[1] = (char)(0x80 | ((cp >> 12) & 63)),
			t[2] = (char)(0x80 | ((cp >> 6) & 63)), t[3] = (char)(0x80 | (cp & 63)), k = 4;
		put(buf, cap, &n, t, k);
	}
	if (p >= e)
		return TK_ERR_FORMAT;
	if (cap)
		buf[n < cap ? n : cap - 1] = 0;
	if (len)
		*len = n;
	return 0;
}

/* One item of a dims list: a list of integers, or anything else (-1). */
static const char *dims_item(const char *p, const char *e, tk_dims *d, int64_t *vals, size_t *nv,
                             int *len)
{
	const char *end = skip_value(p, e);
	if (!end)
		return NULL;
	*len = -1;
	if (*p != '[')
		return end;
	size_t start = *nv;
	p = ws(p + 1, e);
	if (p < end && *p == ']') {
		*len = 0;
		return end;
	}
	while (p < end) {
		const char *q = p;
		while (q < end && *q != ',' && *q != ']' && *q != ' ')
			q++;
		int64_t v;
		if (tk__parse_int64((const unsigned char *)p, (const unsigned char *)q, &v)) {
			*nv = start;
			return end;
		}
		vals[(*nv)++] = v;
		p = ws(q, end);
		if (p < end && *p == ',')
			p = ws(p + 1, end);
		else
			break;
	}
	*len = (int)(*nv - start);
	(void)d;
	return end;
}

int tk_args_get_dims(const tk_event *ev, const char *key, tk_dims *out)
{
	memset(out, 0, sizeof *out);
	tk_sv v;
	int rc = tk_args_find(ev, key, &v);
	if (rc)
		return rc;
	const char *p = v.ptr, *e = v.ptr + v.len;
	if (*p != '[')
		return TK_ERR_FORMAT;
	/* upper bounds: items <= commas + 1, values <= commas + 1 */
	size_t commas = 1;
	for (const char *q = p; q < e; q++)
		commas += *q == ',';
	out->item_len = malloc(commas * sizeof *out->item_len);
	out->items = malloc(commas * sizeof *out->items);
	out->values = malloc(commas * sizeof *out->values);
	if (!out->item_len || !out->items || !out->values) {
		tk_dims_free(out);
		return TK_ERR_NOMEM;
	}
	size_t nv = 0;
	p = ws(p + 1, e);
	while (p < e && *p != ']') {
		size_t before = nv;
		int len;
		p = dims_item(p, e, out, out->values, &nv, &len);
		if (!p) {
			tk_dims_free(out);
			return TK_ERR_FORMAT;
		}
		out->item_len[out->n_items] = len;
		out->items[out->n_items] = (int64_t *)(uintptr_t)before; /* fixed up below */
		out->n_items++;
		p = ws(p, e);
		if (p < e && *p == ',')
			p = ws(p + 1, e);
	}
	for (size_t i = 0; i < out->n_items; i++)
		out->items[i] = out->values + (uintptr_t)out->items[i];
	return 0;
}

void tk_dims_free(tk_dims *d)
{
	if (!d)
		return;
	free(d->item_len);
	free(d->items);
	free(d->values);
	memset(d, 0, sizeof *d);
}
