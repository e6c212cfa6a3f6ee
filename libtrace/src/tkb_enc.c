/* tkb_enc.c: .tkb encoder: string and args-shape dictionaries, event records, chunk framing. */
#include <stdlib.h>

#include "tkb_int.h"

#define TK__TKB_CHUNK0 (256 * 1024)
#define TK__TKB_JSON_MAX 512 /* longer array/object values are stored inline, not interned */

int tk__tkb_enc_init(tk__tkb_enc *e, const tk_tkb_opts *o)
{
	memset(e, 0, sizeof *e);
	e->chunk_bytes = o && o->chunk_bytes ? o->chunk_bytes : TK__TKB_CHUNK0;
	e->compress = o ? o->compress : 0;
	e->level = o && o->level > 0 && o->level <= 9 ? o->level : 1;
	if (e->compress) {
		if (deflateInit(&e->z, e->level) != Z_OK)
			return TK_ERR_NOMEM;
		e->z_init = 1;
	}
	return 0;
}

void tk__tkb_enc_free(tk__tkb_enc *e)
{
	tk__strtab_free(&e->strs);
	tk__strtab_free(&e->shapes);
	tk__buf_free(&e->defs);
	free(e->def_off);
	free(e->prev_off);
	free(e->epoch);
	free(e->prev);
	free(e->slots);
	tk__buf_free(&e->ev);
	tk__buf_free(&e->payload);
	tk__buf_free(&e->zbuf);
	tk__buf_free(&e->tmp);
	tk__buf_free(&e->meta);
	tk__buf_free(&e->cargs);
	tk__buf_free(&e->cextra);
	if (e->z_init)
		deflateEnd(&e->z);
	memset(e, 0, sizeof *e);
}

#define put_v tk__buf_varint

static int put_bytes(tk__buf *b, const void *p, size_t n)
{
	return put_v(b, n) || tk__buf_append(b, p, n) ? TK_ERR_NOMEM : 0;
}

static int put_tlv(tk__buf *b, unsigned tag, const void *p, size_t n)
{
	return put_v(b, tag) || put_bytes(b, p, n) ? TK_ERR_NOMEM : 0;
}

static int put_tlv_num(tk__buf *b, unsigned tag, int64_t v)
{
	if (v < 0)
		return 0;
	unsigned char t[TK__VARINT_MAX];
	return put_tlv(b, tag, t, (size_t)(tk__varint_at(t, (uint64_t)v) - t));
}

static int put_anchor(tk__buf *b, const tk_tkb_anchor *a)
{
	return put_v(b, tk__zz(a->gpu_ns)) || put_v(b, tk__zz(a->realtime_ns)) ||
	       put_v(b, tk__zz(a->monotonic_ns));
}

int tk__tkb_enc_header(tk__tkb_enc *e, tk__buf *out, const tk_tkb_header *h)
{
	tk__buf *body = &e->tmp;
	body->len = 0;
	const char *prod = h && h->producer ? h->producer : "libtracekit " TK_VERSION_STRING;
	int rc = put_tlv(body, TK__H_PRODUCER, prod, strlen(prod));
	if (!rc && h && h->host)
		rc = put_tlv(body, TK__H_HOST, h->host, strlen(h->host));
	if (!rc && h)
		rc = put_tlv_num(body, TK__H_PID, h->pid) || put_tlv_num(body, TK__H_RANK, h->rank) ||
		     put_tlv_num(body, TK__H_WORLD, h->world_size);
	if (!rc && h && h->start) {
		unsigned char t[40];
		tk__buf tb = {(char *)t, 0, sizeof t};
		put_anchor(&tb, h->start);
		rc = put_tlv(body, TK__H_START, t, tb.len);
	}
	if (rc || tk__buf_reserve(out, TK__TKB_FILEHDR + body->len + 4))
		return TK_ERR_NOMEM;
	unsigned char *p = (unsigned char *)out->p + out->len;
	memcpy(p, TK__TKB_MAGIC, 8);
	p[8] = TK__TKB_MAJOR;
	p[9] = TK__TKB_MINOR;
	p[10] = p[11] = 0;
	tk__put_le32(p + 12, (uint32_t)body->len);
	memcpy(p + 16, body->p, body->len);
	size_t n = TK__TKB_FILEHDR + body->len;
	tk__put_le32(p + n, (uint32_t)crc32(0, p, (uInt)n));
	out->len += n + 4;
	return 0;
}

/* ---- chunk framing ---- */

static int deflate_payload(tk__tkb_enc *e, const unsigned char *p, size_t n)
{
	uLong bound = deflateBound(&e->z, (uLong)n);
	e->zbuf.len = 0;
	if (tk__buf_reserve(&e->zbuf, bound) || deflateReset(&e->z) != Z_OK)
		return TK_ERR_NOMEM;
	e->z.next_in = (unsigned char *)(uintptr_t)p;
	e->z.avail_in = (uInt)n;
	e->z.next_out = (unsigned char *)e->zbuf.p;
	e->z.avail_out = (uInt)bound;
	if (deflate(&e->z, Z_FINISH) != Z_STREAM_END)
		return TK_ERR_NOMEM;
	e->zbuf.len = bound - e->z.avail_out;
	return 0;
}

static int write_chunk(tk__tkb_enc *e, tk__buf *out, int type, uint32_t count,
                       const unsigned char *p, size_t n)
{
	const unsigned char *data = p;
	size_t dlen = n;
	int flags = 0;
	if (e->compress && n > 64) {
		if (deflate_payload(e, p, n))
			return TK_ERR_NOMEM;
		if (e->zbuf.len < n) {
			data = (const unsigned char *)e->zbuf.p;
			dlen = e->zbuf.len;
			flags = TK__CF_ZLIB;
		}
	}
	if (n > UINT32_MAX || tk__buf_reserve(out, TK__TKB_CHDR + dlen))
		return TK_ERR_NOMEM;
	unsigned char *h = (unsigned char *)out->p + out->len;
	memcpy(h, TK__TKB_SYNC, 4);
	h[4] = (unsigned char)type;
	h[5] = (unsigned char)flags;
	h[6] = h[7] = 0;
	tk__put_le32(h + 8, (uint32_t)dlen);
	tk__put_le32(h + 12, (uint32_t)n);
	tk__put_le32(h + 16, count);
	tk__put_le32(h + 20, (uint32_t)crc32(0, data, (uInt)dlen));
	tk__put_le32(h + 24, (uint32_t)crc32(0, h, 24));
	memcpy(h + TK__TKB_CHDR, data, dlen);
	out->len += TK__TKB_CHDR + dlen;
	return 0;
}

static int flush_meta(tk__tkb_enc *e, tk__buf *out)
{
	if (!e->n_meta)
		return 0;
	int rc = write_chunk(e, out, TK__C_META, e->n_meta, (unsigned char *)e->meta.p, e->meta.len);
	e->meta.len = 0;
	e->n_meta = 0;
	return rc;
}

static void reset_chunk_state(tk__tkb_enc *e)
{
	e->ev.len = 0;
	e->n_ev = 0;
	e->str_first = (uint32_t)e->strs.n;
	e->shape_first = (uint32_t)e->shapes.n;
	e->chunk_no++;
	e->prev_ts = 0;
	memset(e->last_int, 0, sizeof e->last_int);
	memset(e->prev_ids, 0, sizeof e->prev_ids);
}

static int flush_events(tk__tkb_enc *e, tk__buf *out)
{
	if (!e->n_ev)
		return 0;
	tk__buf *pl = &e->payload;
	pl->len = 0;
	int rc = put_v(pl, e->str_first) || put_v(pl, e->strs.n - e->str_first);
	for (size_t i = e->str_first; !rc && i < e->strs.n; i++)
		rc = put_bytes(pl, e->strs.ents[i].ptr, e->strs.ents[i].len);
	size_t d0 = e->def_off ? e->def_off[e->shape_first] : 0;
	rc = rc || put_v(pl, e->shape_first) || put_v(pl, e->shapes.n - e->shape_first) ||
	     (e->defs.len > d0 && tk__buf_append(pl, e->defs.p + d0, e->defs.len - d0)) || /* p may be NULL */
	     put_v(pl, e->n_ev) ||
	     tk__buf_append(pl, e->ev.p, e->ev.len);
	if (!rc)
		rc = write_chunk(e, out, TK__C_EVENTS, e->n_ev, (unsigned char *)pl->p, pl->len);
	reset_chunk_state(e);
	return rc ? TK_ERR_NOMEM : 0;
}

int tk__tkb_enc_flush(tk__tkb_enc *e, tk__buf *out)
{
	int rc = flush_meta(e, out);
	return rc ? rc : flush_events(e, out);
}

int tk__tkb_enc_anchor(tk__tkb_enc *e, tk__buf *out, int kind, const tk_tkb_anchor *a)
{
	tk__buf *pl = &e->payload;
	pl->len = 0;
	if (tk__buf_putc(pl, (char)kind) || put_anchor(pl, a))
		return TK_ERR_NOMEM;
	return write_chunk(e, out, TK__C_ANCHOR, 1, (unsigned char *)pl->p, pl->len);
}

int tk__tkb_enc_end(tk__tkb_enc *e, tk__buf *out)
{
	int rc = tk__tkb_enc_flush(e, out);
	if (rc)
		return rc;
	tk__buf *pl = &e->payload;
	pl->len = 0;
	if (put_v(pl, e->events) || put_v(pl, e->chunk_no))
		return TK_ERR_NOMEM;
	return write_chunk(e, out, TK__C_END, 0, (unsigned char *)pl->p, pl->len);
}

int tk__tkb_enc_meta(tk__tkb_enc *e, tk_sv key, tk_sv json, int after)
{
	tk__buf *m = &e->meta;
	size_t mark = m->len;
	e->tmp.len = 0;
	int rc = tk__json_canon_text(&e->tmp, json.ptr, json.len, 0, NULL);
	if (rc)
		return rc;
	if (tk__buf_putc(m, after ? 1 : 0) || put_bytes(m, key.ptr, key.len) ||
	    put_bytes(m, e->tmp.p, e->tmp.len)) {
		m->len = mark;
		return TK_ERR_NOMEM;
	}
	e->n_meta++;
	return 0;
}

/* ---- strings and args shapes ---- */

static int sid(tk__tkb_enc *e, const char *s, size_t n, uint32_t *id)
{
	if (!tk__strtab_intern_id(&e->strs, s ? s : "", s ? n : 0, id).ptr)
		return TK_ERR_NOMEM;
	return 0;
}

/* sid() for strings that readers intern (names, categories): the same
 * pointer usually comes back, and comparing bytes is cheaper than hashing
 * them. The cache only saves work; the bytes are always compared. */
static int sid_cached(tk__tkb_enc *e, const char *s, size_t n, uint32_t *id)
{
	size_t h = (((uintptr_t)s >> 4) ^ n) & (TK__TKB_IDCACHE - 1);
	tk__tkb_idc *c = &e->idcache[h];
	if (s && c->ptr == s && c->len == n) {
		tk_sv v = e->strs.ents[c->id];
		if (v.len == n && memcmp(v.ptr, s, n) == 0) {
			*id = c->id;
			return 0;
		}
	}
	if (sid(e, s, n, id))
		return TK_ERR_NOMEM;
	*c = (tk__tkb_idc){s, n, *id};
	return 0;
}

/* Canonical integer text (no leading zeros, no "-0") that fits int64. */
static int parse_canon_int(const char *p, const char *e, int64_t *out)
{
	int neg = p < e && *p == '-';
	p += neg;
	if (p >= e || e - p > 19 || *p < '0' || *p > '9' || (*p == '0' && e - p > 1))
		return -1;
	uint64_t v = 0;
	for (; p < e; p++) {
		if (*p < '0' || *p > '9')
			return -1;
		v = v * 10 + (uint64_t)(*p - '0');
	}
	if (v > (uint64_t)INT64_MAX || (neg && v == 0))
		return -1;
	*out = neg ? -(int64_t)v : (int64_t)v;
	return 0;
}

/* "-12.0340" -> mantissa -120340, scale 4; at most 18 digits, no exponent. */
static int parse_dec(const char *p, const char *e, int64_t *m, int *scale)
{
	const char *dot = memchr(p, '.', (size_t)(e - p));
	int64_t ip;
	if (!dot || dot + 1 >= e || e - dot - 1 > 18 || parse_canon_int(p, dot, &ip) < 0) {
		if (!dot || dot - p != 2 || memcmp(p, "-0", 2))
			return -1;
		ip = 0; /* "-0.5" */
	}
	int neg = *p == '-';
	uint64_t v = (uint64_t)(ip < 0 ? -ip : ip);
	for (const char *q = dot + 1; q < e; q++) {
		if (*q < '0' || *q > '9' || v > ((uint64_t)1 << 59))
			return -1;
		v = v * 10 + (uint64_t)(*q - '0');
	}
	if (v > ((uint64_t)1 << 62) || (neg && v == 0))
		return -1;
	*m = neg ? -(int64_t)v : (int64_t)v;
	*scale = (int)(e - dot - 1);
	return 0;
}

static int classify(tk__tkb_slot *s)
{
	const char *p = s->val, *e = p + s->vlen;
	switch (*p) {
	case '"': return TK__V_STR;
	case '{':
	case '[': return s->vlen <= TK__TKB_JSON_MAX ? TK__V_JSON : TK__V_RAW;
	case 'n': return s->vlen == 4 && !memcmp(p, "null", 4) ? TK__V_NULL : TK__V_RAW;
	case 't': return s->vlen == 4 && !memcmp(p, "true", 4) ? TK__V_TRUE : TK__V_RAW;
	case 'f': return s->vlen == 5 && !memcmp(p, "false", 5) ? TK__V_FALSE : TK__V_RAW;
	default: break;
	}
	if (parse_canon_int(p, e, &s->num) == 0)
		return TK__V_INT;
	if (parse_dec(p, e, &s->num, &s->scale) == 0)
		return TK__V_DEC;
	return TK__V_RAW;
}

/* Splits compact args text into e->slots; returns the count, or -1 if the
 * text is not an object whose members are all kept as slots (it is then
 * stored raw). */
static long split_args(tk__tkb_enc *e, const char *p, size_t n)
{
	tk__js_iter it;
	if (tk__js_obj(&it, (tk_sv){p, n}))
		return -1;
	long k = 0;
	tk_sv key, val;
	int rc;
	const char *at = p + 1; /* compact text: each member right after '{' or ',' */
	while ((rc = tk__js_member(&it, &key, &val)) == 1) {
		if (key.ptr != at + 1 + (k > 0) || val.ptr != key.ptr + key.len + 2)
			return -1;
		at = val.ptr + val.len;
		if (TK__GROW(e->slots, e->slots_cap, (size_t)k + 1))
			return -2;
		tk__tkb_slot *s = &e->slots[k++];
		s->key = key.ptr;
		s->klen = key.len;
		s->val = val.ptr;
		s->vlen = val.len;
		s->type = classify(s);
	}
	/* compact text only: nothing around the closing brace */
	return rc == 0 && it.p == at && it.p + 1 == p + n ? k : -1;
}

static int grow_shapes(tk__tkb_enc *e, size_t need)
{
	if (need < e->shapes_cap)
		return 0;
	size_t nc = e->shapes_cap ? e->shapes_cap * 2 : 256;
	size_t *d = realloc(e->def_off, (nc + 1) * sizeof *d);
	if (d)
		e->def_off = d;
	uint32_t *po = realloc(e->prev_off, nc * sizeof *po);
	if (po)
		e->prev_off = po;
	uint32_t *ep = realloc(e->epoch, nc * sizeof *ep);
	if (ep)
		e->epoch = ep;
	if (!d || !po || !ep)
		return TK_ERR_NOMEM;
	e->shapes_cap = nc;
	return 0;
}

/* A shape seen for the first time: its definition and its slot memory. */
static int new_shape(tk__tkb_enc *e, uint32_t id, size_t n)
{
	if (grow_shapes(e, id + 1))
		return TK_ERR_NOMEM;
	if (tk__grow(&e->prev, &e->prev_cap, e->n_prev + n, sizeof *e->prev, 1024))
		return TK_ERR_NOMEM;
	e->def_off[id] = e->defs.len;
	if (put_v(&e->defs, n))
		return TK_ERR_NOMEM;
	for (size_t i = 0; i < n; i++) {
		uint32_t k;
		if (sid(e, e->slots[i].key, e->slots[i].klen, &k) || put_v(&e->defs, k) ||
		    tk__buf_putc(&e->defs, (char)e->slots[i].type))
			return TK_ERR_NOMEM;
	}
	e->def_off[id + 1] = e->defs.len;
	e->prev_off[id] = (uint32_t)e->n_prev;
	e->epoch[id] = UINT32_MAX;
	e->n_prev += n;
	return 0;
}

static int find_shape(tk__tkb_enc *e, size_t n, uint32_t *id)
{
	tk__buf *t = &e->tmp;
	t->len = 0;
	for (size_t i = 0; i < n; i++) {
		if (tk__buf_reserve(t, e->slots[i].klen + 2))
			return TK_ERR_NOMEM;
		memcpy(t->p + t->len, e->slots[i].key, e->slots[i].klen);
		t->len += e->slots[i].klen;
		t->p[t->len++] = 0;
		t->p[t->len++] = (char)('0' + e->slots[i].type);
	}
	size_t before = e->shapes.n;
	if (!tk__strtab_intern_id(&e->shapes, t->p ? t->p : "", t->len, id).ptr)
		return TK_ERR_NOMEM;
	return e->shapes.n > before ? new_shape(e, *id, n) : 0;
}

static int put_value(tk__tkb_enc *e, const tk__tkb_slot *s, int64_t *prev)
{
	tk__buf *o = &e->ev;
	uint32_t k;
	switch (s->type) {
	case TK__V_INT: {
		int64_t d = (int64_t)((uint64_t)s->num - (uint64_t)*prev);
		*prev = s->num;
		return put_v(o, tk__zz(d));
	}
	case TK__V_STR: return sid(e, s->val + 1, s->vlen - 2, &k) || put_v(o, k);
	case TK__V_JSON: return sid(e, s->val, s->vlen, &k) || put_v(o, k);
	case TK__V_RAW: return put_bytes(o, s->val, s->vlen);
	case TK__V_DEC: return put_v(o, tk__zz(s->num)) || tk__buf_putc(o, (char)s->scale);
	default: return 0;
	}
}

static int put_args(tk__tkb_enc *e, const char *p, size_t n)
{
	long k = split_args(e, p, n);
	if (k == -2)
		return TK_ERR_NOMEM;
	if (k < 0)
		return put_v(&e->ev, 0) || put_bytes(&e->ev, p, n);
	uint32_t id;
	if (find_shape(e, (size_t)k, &id) || put_v(&e->ev, (uint64_t)id + 1))
		return TK_ERR_NOMEM;
	if (!k)
		return 0;
	int64_t *prev = e->prev + e->prev_off[id];
	if (e->epoch[id] != e->chunk_no) {
		memset(prev, 0, (size_t)k * sizeof *prev);
		e->epoch[id] = e->chunk_no;
	}
	for (long i = 0; i < k; i++)
		if (put_value(e, &e->slots[i], &prev[i]))
			return TK_ERR_NOMEM;
	return 0;
}

/* ---- events ---- */

/* Mode of pid (0), tid (1) or id (2) relative to the last event, and the
 * number put_ids() writes in e->idval[i]. Returns -1 when out of memory. */
static int id_mode(tk__tkb_enc *e, int i, const tk_id *v)
{
	tk_id *pv = &e->prev_ids[i];
	if (v->kind == TK_ID_INT) {
		if (pv->kind == TK_ID_INT && pv->num == v->num)
			return TK__ID_SAME;
		e->idval[i] = tk__zz((int64_t)((uint64_t)v->num - (uint64_t)e->last_int[i]));
		e->last_int[i] = v->num;
		*pv = (tk_id){TK_ID_INT, v->num, {NULL, 0}};
		return TK__ID_INT;
	}
	if (v->kind != TK_ID_STR)
		return TK__ID_ABSENT;
	uint32_t k;
	if (sid_cached(e, v->str.ptr, v->str.len, &k))
		return -1;
	if (pv->kind == TK_ID_STR && (uint32_t)pv->num == k)
		return TK__ID_SAME;
	e->idval[i] = k;
	*pv = (tk_id){TK_ID_STR, k, {NULL, 0}};
	return TK__ID_STR;
}

static unsigned event_flags(const tk_event *ev)
{
	unsigned f = 0;
	f |= ev->has & TK_HAS_TS ? TK__E_TS : 0;
	f |= ev->has & TK_HAS_DUR ? TK__E_DUR : 0;
	f |= ev->has & TK_HAS_NAME ? TK__E_NAME : 0;
	f |= ev->has & TK_HAS_CAT ? TK__E_CAT : 0;
	f |= ev->has & TK_HAS_PH ? TK__E_PH : 0;
	f |= ev->args.ptr ? TK__E_ARGS : 0;
	f |= ev->extra.ptr && ev->extra.len ? TK__E_EXTRA : 0;
	return f;
}

/* Args and extra as canonical compact JSON: as given when the event says
 * they are, else canonicalized into e->cargs / e->cextra. */
static int canon_parts(tk__tkb_enc *e, const tk_event *ev, tk_sv *args, tk_sv *extra)
{
	*args = ev->args;
	*extra = ev->extra;
	if (ev->has & TK_HAS_VALID_JSON)
		return 0;
	e->cargs.len = e->cextra.len = 0;
	int ra = 0, rx = 0;
	if (args->ptr && tk__json_canon_text(&e->cargs, args->ptr, args->len, 0, &ra))
		return TK_ERR_ARG;
	if (extra->ptr && extra->len && tk__json_canon_text(&e->cextra, extra->ptr, extra->len, 1, &rx))
		return TK_ERR_ARG;
	e->repaired += (uint64_t)ra + (uint64_t)rx;
	if (args->ptr)
		*args = (tk_sv){e->cargs.p ? e->cargs.p : "", e->cargs.len};
	if (extra->ptr && extra->len)
		*extra = (tk_sv){e->cextra.p ? e->cextra.p : "", e->cextra.len};
	return 0;
}

static int put_ids(tk__tkb_enc *e, unsigned f)
{
	for (int i = 0; i < 3; i++) {
		unsigned m = (f >> (TK__E_PID + 2 * i)) & 3;
		if ((m == TK__ID_INT || m == TK__ID_STR) && put_v(&e->ev, e->idval[i]))
			return TK_ERR_NOMEM;
	}
	return 0;
}

/* Encodes one event. Only TK_ERR_ARG leaves the encoder usable: after an
 * allocation failure the delta state may be out of step, so it stays failed. */
int tk__tkb_enc_event(tk__tkb_enc *e, const tk_event *ev)
{
	tk_sv args, extra;
	if (e->broken)
		return TK_ERR_NOMEM;
	if (canon_parts(e, ev, &args, &extra)) {
		e->err = "event args or extra members are not valid JSON";
		return TK_ERR_ARG;
	}
	unsigned f = event_flags(ev);
	const tk_id *ids[3] = {&ev->pid, &ev->tid, &ev->id};
	uint32_t nm = 0, ct = 0, xs = 0;
	int rc = 0;
	for (int i = 0; !rc && i < 3; i++) {
		int m = id_mode(e, i, ids[i]);
		rc = m < 0;
		f |= (unsigned)m << (TK__E_PID + 2 * i);
	}
	rc = rc || ((f & TK__E_NAME) && sid_cached(e, ev->name.ptr, ev->name.len, &nm));
	rc = rc || ((f & TK__E_CAT) && sid_cached(e, ev->cat.ptr, ev->cat.len, &ct));
	rc = rc || ((f & TK__E_EXTRA) && sid_cached(e, extra.ptr, extra.len, &xs));
	tk__buf *o = &e->ev;
	rc = rc || put_v(o, f) || ((f & TK__E_PH) && tk__buf_putc(o, ev->ph));
	if (!rc && (f & TK__E_TS)) {
		rc = put_v(o, tk__zz((int64_t)((uint64_t)ev->ts - (uint64_t)e->prev_ts)));
		e->prev_ts = ev->ts;
	}
	rc = rc || ((f & TK__E_DUR) && put_v(o, tk__zz(ev->dur)));
	rc = rc || ((f & TK__E_NAME) && put_v(o, nm)) || ((f & TK__E_CAT) && put_v(o, ct));
	rc = rc || put_ids(e, f);
	rc = rc || ((f & TK__E_ARGS) && put_args(e, args.ptr, args.len));
	rc = rc || ((f & TK__E_EXTRA) && put_v(o, xs));
	if (rc) {
		e->broken = 1;
		e->err = "out of memory";
		return TK_ERR_NOMEM;
	}
	e->n_ev++;
	e->events++;
	return 0;
}
