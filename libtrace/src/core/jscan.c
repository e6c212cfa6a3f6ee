/* jscan.c: scanning JSON text without padding: values, members, integers, dims lists, strings. */
#include <stdlib.h>

#include "internal.h"

const char *tk__js_string_end(const char *p, const char *e)
{
	for (const char *s = p;;) {
		const char *q = p < e ? memchr(p, '"', (size_t)(e - p)) : NULL;
		if (!q)
			return NULL;
		size_t bs = 0; /* an odd run of backslashes escapes the quote */
		while (q - bs > s && q[-1 - (ptrdiff_t)bs] == '\\')
			bs++;
		if (!(bs & 1))
			return q + 1;
		p = q + 1;
	}
}

static int is_scalar_end(char c)
{
	return c == ',' || c == '}' || c == ']' || c == ':' || c == ' ' || c == '\n' || c == '\r' ||
	       c == '\t';
}

const char *tk__js_skip(const char *p, const char *e)
{
	if (p >= e)
		return NULL;
	if (*p == '"')
		return tk__js_string_end(p + 1, e);
	if (*p != '[' && *p != '{') {
		const char *s = p;
		while (p < e && !is_scalar_end(*p))
			p++;
		return p > s ? p : NULL;
	}
	for (int depth = 0; p < e;) {
		char c = *p++;
		if (c == '"') {
			if (!(p = tk__js_string_end(p, e)))
				return NULL;
		} else if (c == '[' || c == '{') {
			depth++;
		} else if ((c == ']' || c == '}') && --depth == 0) {
			return p;
		}
	}
	return NULL;
}

int tk__js_obj(tk__js_iter *it, tk_sv obj)
{
	it->e = obj.ptr ? obj.ptr + obj.len : NULL;
	it->p = obj.ptr ? tk__js_ws(obj.ptr, it->e) : NULL;
	it->n = 0;
	if (!it->p || it->p >= it->e || *it->p != '{')
		return TK_ERR_FORMAT;
	it->p++;
	return 0;
}

int tk__js_member(tk__js_iter *it, tk_sv *key, tk_sv *val)
{
	const char *p = tk__js_ws(it->p, it->e), *e = it->e;
	if (p < e && *p == '}') {
		it->p = p;
		return 0;
	}
	if (it->n) {
		if (p >= e || *p != ',')
			return TK_ERR_FORMAT;
		p = tk__js_ws(p + 1, e);
	}
	if (p >= e || *p != '"')
		return TK_ERR_FORMAT;
	const char *ks = p + 1, *ke = tk__js_string_end(ks, e);
	if (!ke)
		return TK_ERR_FORMAT;
	p = tk__js_ws(ke, e);
	if (p >= e || *p != ':')
		return TK_ERR_FORMAT;
	const char *vs = tk__js_ws(p + 1, e), *ve = tk__js_skip(vs, e);
	if (!ve)
		return TK_ERR_FORMAT;
	*key = (tk_sv){ks, (size_t)(ke - 1 - ks)};
	*val = (tk_sv){vs, (size_t)(ve - vs)};
	it->p = ve;
	it->n++;
	return 1;
}

int tk__js_find(tk_sv obj, const char *key, size_t klen, tk_sv *val)
{
	if (!obj.ptr)
		return TK_EOF;
	tk__js_iter it;
	if (tk__js_obj(&it, obj))
		return TK_ERR_FORMAT;
	tk_sv k, v;
	int rc;
	while ((rc = tk__js_member(&it, &k, &v)) == 1) {
		if (k.len == klen && memcmp(k.ptr, key, klen) == 0) {
			if (val)
				*val = v;
			return 0;
		}
	}
	return rc == 0 ? TK_EOF : TK_ERR_FORMAT;
}

int tk__js_int(tk_sv v, int64_t *out)
{
	const unsigned char *p = (const unsigned char *)v.ptr;
	return p ? tk__parse_int64(p, p + v.len, out) : -1;
}

/* One item of a dims list: a list of integers (*len its count), or
 * anything else (*len -1). Returns the item's end, or NULL. */
static const char *dims_item(const char *p, const char *e, int64_t *vals, size_t *nv, int *len)
{
	const char *end = tk__js_skip(p, e);
	if (!end)
		return NULL;
	*len = -1;
	if (*p != '[')
		return end;
	size_t start = *nv;
	p = tk__js_ws(p + 1, e);
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
		p = tk__js_ws(q, end);
		if (p < end && *p == ',')
			p = tk__js_ws(p + 1, end);
		else
			break;
	}
	*len = (int)(*nv - start);
	return end;
}

int tk__dims_alloc(tk_dims *d, size_t cap)
{
	d->item_len = malloc(cap * sizeof *d->item_len);
	d->items = malloc(cap * sizeof *d->items);
	d->values = malloc(cap * sizeof *d->values);
	if (d->item_len && d->items && d->values)
		return 0;
	tk_dims_free(d);
	return TK_ERR_NOMEM;
}

int tk__js_dims(tk_sv v, tk_dims *out)
{
	memset(out, 0, sizeof *out);
	const char *p = v.ptr, *e = v.ptr + v.len;
	if (!p || p >= e || *p != '[')
		return TK_ERR_FORMAT;
	/* upper bounds, as items and values are apart from commas (checked
	 * below): items <= commas + 1, values <= commas + 1 */
	size_t commas = 1;
	for (const char *q = p; q < e; q++)
		commas += *q == ',';
	if (tk__dims_alloc(out, commas))
		return TK_ERR_NOMEM;
	size_t nv = 0;
	p = tk__js_ws(p + 1, e);
	while (p < e && *p != ']') {
		size_t before = nv;
		int len;
		p = dims_item(p, e, out->values, &nv, &len);
		if (!p) {
			tk_dims_free(out);
			return TK_ERR_FORMAT;
		}
		out->item_len[out->n_items] = len;
		out->items[out->n_items] = (int64_t *)(uintptr_t)before; /* fixed up below */
		out->n_items++;
		p = tk__js_ws(p, e);
		if (p < e && *p == ',')
			p = tk__js_ws(p + 1, e);
		else if (p >= e || *p != ']') { /* items apart from commas: not a list (nor room for them) */
			tk_dims_free(out);
			return TK_ERR_FORMAT;
		}
	}
	for (size_t i = 0; i < out->n_items; i++)
		out->items[i] = out->values + (uintptr_t)out->items[i];
	return 0;
}

static void put(char *buf, size_t cap, size_t *n, const char *s, size_t k)
{
	for (size_t i = 0; i < k; i++, (*n)++)
		if (*n + 1 < cap)
			buf[*n] = s[i];
}

int tk__js_str(tk_sv v, char *buf, size_t cap, size_t *len)
{
	const unsigned char *p = (const unsigned char *)v.ptr, *e = p + v.len;
	if (!p || p >= e || *p != '"')
		return TK_ERR_FORMAT;
	size_t n = 0;
	for (p++; p < e && *p != '"';) {
		if (*p != '\\') {
			put(buf, cap, &n, (const char *)p++, 1);
			continue;
		}
		long cp;
		char simple, t[4];
		int k, repaired = 0;
		tk__jerr je = {0};
		if (tk__json_escape_at(p, e, &cp, &simple, &k, &repaired, &je) != TK__J_OK)
			return TK_ERR_FORMAT;
		if (cp < 0)
			put(buf, cap, &n, &simple, 1);
		else
			put(buf, cap, &n, t, tk__utf8_put(t, cp));
		p += k;
	}
	if (p >= e)
		return TK_ERR_FORMAT;
	if (cap)
		buf[n < cap ? n : cap - 1] = 0;
	if (len)
		*len = n;
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

int tk__js_str_buf(tk_sv v, tk__buf *b)
{
	b->len = 0;
	const unsigned char *p = (const unsigned char *)v.ptr + 1, *e = (const unsigned char *)v.ptr + v.len - 1;
	while (p < e) {
		const unsigned char *q = memchr(p, '\\', (size_t)(e - p));
		if (!q)
			q = e;
		if (tk__buf_append(b, p, (size_t)(q - p)))
			return TK_ERR_NOMEM;
		p = q;
		if (p >= e)
			break;
		long cp;
		char simple;
		int len, rep = 0;
		tk__jerr je = {0};
		if (tk__json_escape_at(p, e, &cp, &simple, &len, &rep, &je) != TK__J_OK)
			return TK_ERR_FORMAT;
		if (cp >= 0) {
			char u[4];
			if (tk__buf_append(b, u, tk__utf8_put(u, cp)))
				return TK_ERR_NOMEM;
		} else if (tk__buf_putc(b, simple)) {
			return TK_ERR_NOMEM;
		}
		p += len;
	}
	return 0;
}
