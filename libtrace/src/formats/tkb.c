/* tkb.c: the .tkb format: a reader (file header, chunk framing with CRC checks and resync, dictionaries, event records) and the tk_writer format on the encoder of tkb_enc.c. */
#define _GNU_SOURCE
#include <stdlib.h>

#include "formats/formats.h"
#include "tkb_int.h"

/* ---- reading ---- */

#define TK__TKB_HDR_MAX (1u << 20)  /* largest file header body accepted */
#define TK__TKB_GAP_MAX (1u << 22)  /* most dictionary ids a lost chunk may have held */

enum { ST_CHUNKS, ST_EVENTS, ST_END };

typedef struct tshape {
	uint32_t n, first; /* slots[first .. first+n) */
	uint32_t epoch;
	int missing; /* 1: uses a string of a lost chunk; 2: defined in one (types unknown) */
	int unsafe;  /* a key is not a canonical JSON string body */
} tshape;

/* What a string may stand for in JSON output without being checked again. */
enum { TK__OK_BODY = 1, TK__OK_VALUE = 2, TK__OK_MEMBERS = 4 };

typedef struct tslot {
	uint32_t pre_off, pre_len; /* "{\"key\":" or ",\"key\":" in prefixes */
	int type;
	int missing;
} tslot;

typedef struct tstate {
	int st;
	tk_tkb_info info;
	tk__buf chunk; /* payload of the current chunk, decompressed */
	const unsigned char *p, *e;
	uint32_t ev_left, chunk_no;
	uint64_t chunk_at;
	tk_sv *strs;
	unsigned char *sok; /* per string: TK__OK_* (checked once, when it is added) */
	size_t n_strs, strs_cap, sok_cap;
	int suspect; /* this event's args/extra use text that is not canonical JSON */
	tshape *shapes;
	size_t n_shapes, shapes_cap;
	tslot *slots;
	int64_t *prev;
	size_t n_slots, slots_cap;
	tk__buf prefixes;
	int64_t prev_ts, last_int[3];
	tk_id prev_ids[3];
	z_stream z;
	int z_init;
	uint64_t lost_strings; /* events dropped for a string of a lost chunk */
} tstate;

static int tkb_bid(const unsigned char *p, size_t n)
{
	size_t k = n < 8 ? n : 8;
	return k >= 4 && memcmp(p, TK__TKB_MAGIC, k) == 0 ? 100 : 0;
}

static void tkb_free(tk_reader *r)
{
	tstate *s = r->fs;
	if (!s)
		return;
	tk__buf_free(&s->chunk);
	tk__buf_free(&s->prefixes);
	free(s->strs);
	free(s->sok);
	free(s->shapes);
	free(s->slots);
	free(s->prev);
	if (s->z_init)
		inflateEnd(&s->z);
	free(s);
	r->fs = NULL;
}

static int nomem(tk_reader *r)
{
	return tk__err_set(&r->err, TK_ERR_NOMEM, "%s: out of memory", r->name);
}

/* The input stops early: keep what came before (non-strict) or fail. */
static int truncated(tk_reader *r, size_t tail, const char *where)
{
	tstate *s = r->fs;
	uint64_t at = r->base + r->pos;
	s->st = ST_END;
	if (r->opts.strict)
		return tk__err_set(&r->err, TK_ERR_TRUNCATED,
		                       "%s: input ends early %s at byte %llu; %llu events before that point",
		                       r->name, where, (unsigned long long)(at + tail),
		                       (unsigned long long)r->stats.events);
	r->stats.truncated = 1;
	r->stats.dropped_bytes = tail;
	if (tk__err_warn(&r->err,
	                    "%s: input ends early %s at byte %llu (the writer did not finish): kept %llu "
	                    "events of complete chunks, dropped the last %llu bytes",
	                    r->name, where, (unsigned long long)(at + tail),
	                    (unsigned long long)r->stats.events, (unsigned long long)tail))
		return TK_ERR_NOMEM;
	r->pos += tail;
	return TK_EOF;
}

/* ---- file header ---- */

static int header_field(tk_reader *r, uint64_t tag, const unsigned char *p, size_t n)
{
	tstate *s = r->fs;
	const unsigned char *e = p + n;
	int bad = 0;
	tk_tkb_info *in = &s->info;
	switch (tag) {
	case TK__H_PRODUCER:
	case TK__H_HOST: {
		tk_sv v = tk__strtab_intern(&r->strs, (const char *)p, n);
		if (!v.ptr)
			return nomem(r);
		*(tag == TK__H_HOST ? &in->host : &in->producer) = v;
		return 0;
	}
	case TK__H_PID: in->pid = (int64_t)tk__get_varint(&p, e, &bad); break;
	case TK__H_RANK: in->rank = (int64_t)tk__get_varint(&p, e, &bad); break;
	case TK__H_WORLD: in->world_size = (int64_t)tk__get_varint(&p, e, &bad); break;
	case TK__H_START:
		in->start.gpu_ns = tk__unzz(tk__get_varint(&p, e, &bad));
		in->start.realtime_ns = tk__unzz(tk__get_varint(&p, e, &bad));
		in->start.monotonic_ns = tk__unzz(tk__get_varint(&p, e, &bad));
		in->has_start = !bad;
		break;
	default: return 0; /* a field added by a later minor version */
	}
	return bad ? tk__reader_fail_at(r, TK_ERR_FORMAT, r->base + r->pos,
	                                "file header field %llu is malformed", (unsigned long long)tag)
	           : 0;
}

static int header_fields(tk_reader *r, const unsigned char *p, const unsigned char *e)
{
	while (p < e) {
		int bad = 0;
		uint64_t tag = tk__get_varint(&p, e, &bad);
		uint64_t n = tk__get_varint(&p, e, &bad);
		if (bad || n > (uint64_t)(e - p))
			return tk__reader_fail_at(r, TK_ERR_FORMAT, r->base + r->pos, "file header is malformed");
		int rc = header_field(r, tag, p, (size_t)n);
		if (rc)
			return rc;
		p += n;
	}
	return 0;
}

static int damaged_header(tk_reader *r)
{
	tstate *s = r->fs;
	if (r->opts.strict)
		return tk__reader_fail_at(r, TK_ERR_FORMAT, r->base + r->pos, "file header fails its CRC");
	s->info.bad_chunks++;
	r->pos += 8; /* the chunk scan starts after the magic */
	return tk__err_warn(&r->err, "%s: the file header fails its CRC: producer details are lost",
	                       r->name) ? TK_ERR_NOMEM : 0;
}

/* A CRC that fails its check. Fuzzing builds take every CRC as matching, so
 * that fuzzers reach the payload decoder behind it. */
#ifdef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
#define crc_differs(computed, stored) ((void)(stored), 0)
#else
#define crc_differs(computed, stored) ((computed) != (stored))
#endif

static int tkb_open(tk_reader *r)
{
	tstate *s = calloc(1, sizeof *s);
	if (!s)
		return nomem(r);
	r->fs = s;
	s->info.pid = s->info.rank = s->info.world_size = -1;
	int rc = tk__reader_fill(r, TK__TKB_FILEHDR);
	if (rc)
		return rc;
	if (r->end - r->pos < TK__TKB_FILEHDR)
		return truncated(r, r->end - r->pos, "inside the file header") == TK_EOF ? 0 : r->err.code;
	const unsigned char *p = r->buf + r->pos;
	s->info.version_major = p[8];
	s->info.version_minor = p[9];
	if (p[8] != TK__TKB_MAJOR)
		return tk__err_set(&r->err, TK_ERR_UNSUPPORTED, "%s: .tkb version %u.%u; this reader reads 1.x",
		                       r->name, p[8], p[9]);
	uint32_t blen = tk__get_le32(p + 12);
	if (blen > TK__TKB_HDR_MAX)
		return damaged_header(r);
	if ((rc = tk__reader_fill(r, TK__TKB_FILEHDR + blen + 4)))
		return rc;
	if (r->end - r->pos < TK__TKB_FILEHDR + blen + 4)
		return truncated(r, r->end - r->pos, "inside the file header") == TK_EOF ? 0 : r->err.code;
	p = r->buf + r->pos;
	if (crc_differs(crc32(0, p, TK__TKB_FILEHDR + blen), tk__get_le32(p + TK__TKB_FILEHDR + blen)))
		return damaged_header(r);
	if ((rc = header_fields(r, p + TK__TKB_FILEHDR, p + TK__TKB_FILEHDR + blen)))
		return rc;
	r->pos += TK__TKB_FILEHDR + blen + 4;
	return 0;
}

/* ---- chunk framing ---- */

static int header_ok(const unsigned char *h, size_t max)
{
	return memcmp(h, TK__TKB_SYNC, 4) == 0 && !crc_differs(crc32(0, h, 24), tk__get_le32(h + 24)) &&
	       tk__get_le32(h + 8) <= max && tk__get_le32(h + 12) <= max;
}

/* Scans from just after a damaged chunk header to the next valid one. */
static int resync(tk_reader *r)
{
	tstate *s = r->fs;
	uint64_t from = r->base + r->pos;
	if (r->opts.strict)
		return tk__reader_fail_at(r, TK_ERR_FORMAT, from, "chunk header is damaged");
	r->pos++;
	for (;;) {
		int rc = tk__reader_fill(r, TK__TKB_CHDR);
		if (rc)
			return rc;
		size_t avail = r->end - r->pos;
		const unsigned char *q = avail >= 4 ? memmem(r->buf + r->pos, avail, TK__TKB_SYNC, 4) : NULL;
		if (!q) {
			r->pos = avail > 3 && !r->eof ? r->end - 3 : r->eof ? r->end : r->pos;
			if (r->eof)
				break;
			if ((rc = tk__reader_more(r)) < 0)
				return rc;
			continue;
		}
		r->pos = (size_t)(q - r->buf);
		if ((rc = tk__reader_fill(r, TK__TKB_CHDR)))
			return rc;
		if (r->end - r->pos >= TK__TKB_CHDR && header_ok(r->buf + r->pos, r->opts.max_value_bytes))
			break;
		if (r->end - r->pos < TK__TKB_CHDR && r->eof)
			break; /* a partial header at the end: truncation */
		r->pos++;
	}
	uint64_t skipped = r->base + r->pos - from;
	s->info.bad_chunks++;
	s->info.skipped_bytes += skipped;
	return tk__err_warn(&r->err,
	                       "%s: chunk at byte %llu is damaged (bad chunk header): skipped %llu bytes "
	                       "to the next chunk; the events it held are lost",
	                       r->name, (unsigned long long)from, (unsigned long long)skipped)
	           ? TK_ERR_NOMEM
	           : 0;
}

static int bad_payload(tk_reader *r, const unsigned char *h, const char *why)
{
	tstate *s = r->fs;
	uint64_t at = r->base + r->pos;
	uint32_t count = h[4] == TK__C_EVENTS ? tk__get_le32(h + 16) : 0;
	size_t len = TK__TKB_CHDR + tk__get_le32(h + 8);
	if (r->opts.strict)
		return tk__reader_fail_at(r, TK_ERR_FORMAT, at, "chunk %s", why);
	s->info.bad_chunks++;
	s->info.skipped_bytes += len;
	s->info.lost_events += count;
	r->pos += len;
	return tk__err_warn(&r->err, "%s: chunk at byte %llu (type %u, %zu bytes) %s: skipped it, %lu events lost",
	                       r->name, (unsigned long long)at, h[4], len, why, (unsigned long)count)
	           ? TK_ERR_NOMEM
	           : 0;
}

/* Copies or inflates the payload of the chunk at pos into s->chunk. */
static int load_payload(tk_reader *r, const unsigned char *h)
{
	tstate *s = r->fs;
	uint32_t stored = tk__get_le32(h + 8), raw = tk__get_le32(h + 12);
	s->chunk.len = 0;
	if (tk__buf_reserve(&s->chunk, (size_t)raw + TK__PAD))
		return nomem(r);
	if (!(h[5] & TK__CF_ZLIB)) {
		if (raw != stored)
			return 1;
		memcpy(s->chunk.p, h + TK__TKB_CHDR, raw);
		s->chunk.len = raw;
		return 0;
	}
	if (!s->z_init) {
		if (inflateInit(&s->z) != Z_OK)
			return nomem(r);
		s->z_init = 1;
	} else if (inflateReset(&s->z) != Z_OK) {
		return nomem(r);
	}
	s->z.next_in = (unsigned char *)(uintptr_t)(h + TK__TKB_CHDR);
	s->z.avail_in = stored;
	s->z.next_out = (unsigned char *)s->chunk.p;
	s->z.avail_out = raw;
	int zr = inflate(&s->z, Z_FINISH);
	if (zr != Z_STREAM_END || s->z.avail_out || s->z.avail_in)
		return 1;
	s->chunk.len = raw;
	return 0;
}

static int chunk_bad(tk_reader *r, const char *what)
{
	tstate *s = r->fs;
	return tk__reader_fail_at(r, TK_ERR_FORMAT, s->chunk_at, "chunk is malformed: %s", what);
}

static int read_meta(tk_reader *r, uint32_t count)
{
	tstate *s = r->fs;
	const unsigned char *p = (unsigned char *)s->chunk.p, *e = p + s->chunk.len;
	for (uint32_t i = 0; i < count; i++) {
		int bad = p >= e;
		int after = bad ? 0 : *p++ & 1;
		uint64_t kl = tk__get_varint(&p, e, &bad);
		if (bad || kl > (uint64_t)(e - p))
			return chunk_bad(r, "metadata key");
		const unsigned char *k = p;
		p += kl;
		uint64_t vl = tk__get_varint(&p, e, &bad);
		if (bad || vl > (uint64_t)(e - p))
			return chunk_bad(r, "metadata value");
		if (tk__reader_add_meta(r, (const char *)k, kl, (const char *)p, vl, after))
			return r->err.code;
		p += vl;
	}
	return 0;
}

static int read_anchor(tk_reader *r)
{
	tstate *s = r->fs;
	const unsigned char *p = (unsigned char *)s->chunk.p, *e = p + s->chunk.len;
	int bad = p >= e;
	unsigned kind = bad ? 0 : *p++;
	tk_tkb_anchor a;
	a.gpu_ns = tk__unzz(tk__get_varint(&p, e, &bad));
	a.realtime_ns = tk__unzz(tk__get_varint(&p, e, &bad));
	a.monotonic_ns = tk__unzz(tk__get_varint(&p, e, &bad));
	if (bad)
		return chunk_bad(r, "anchor");
	if (kind == 2) {
		s->info.end = a;
		s->info.has_end = 1;
	} else if (kind == 1 && !s->info.has_start) {
		s->info.start = a;
		s->info.has_start = 1;
	}
	return 0;
}

static int read_end(tk_reader *r)
{
	tstate *s = r->fs;
	s->info.complete = 1;
	s->st = ST_END;
	int rc = tk__reader_fill(r, 1);
	if (rc || r->end == r->pos)
		return rc;
	while ((rc = tk__reader_more(r)) > 0)
		;
	if (rc < 0)
		return rc;
	if (tk__err_warn(&r->err, "%s: %llu bytes after the end chunk were ignored", r->name,
	                    (unsigned long long)(r->end - r->pos)))
		return TK_ERR_NOMEM;
	r->pos = r->end;
	return 0;
}

static int read_dicts(tk_reader *r);

/* Dispatches a verified chunk whose payload is in s->chunk. */
static int chunk_body(tk_reader *r, unsigned type, uint32_t count)
{
	tstate *s = r->fs;
	switch (type) {
	case TK__C_META: return read_meta(r, count);
	case TK__C_ANCHOR: return read_anchor(r);
	case TK__C_END: return read_end(r);
	case TK__C_EVENTS: {
		int rc = read_dicts(r);
		if (rc)
			return rc;
		int bad = 0;
		if (tk__get_varint(&s->p, s->e, &bad) != count || bad)
			return chunk_bad(r, "event count differs from the chunk header");
		s->ev_left = count;
		s->st = count ? ST_EVENTS : ST_CHUNKS;
		s->chunk_no++;
		s->prev_ts = 0;
		memset(s->last_int, 0, sizeof s->last_int);
		memset(s->prev_ids, 0, sizeof s->prev_ids);
		return 0;
	}
	default: return 0; /* a chunk type added by a later minor version */
	}
}

/* Reads the next chunk. Returns 0 (events may be ready), TK_EOF or an error. */
static int next_chunk(tk_reader *r)
{
	tstate *s = r->fs;
	for (;;) {
		int rc = tk__reader_fill(r, TK__TKB_CHDR);
		if (rc)
			return rc;
		size_t avail = r->end - r->pos;
		if (avail == 0)
			return truncated(r, 0, "without its end chunk");
		if (avail < TK__TKB_CHDR)
			return truncated(r, avail, "inside a chunk header");
		const unsigned char *h = r->buf + r->pos;
		if (!header_ok(h, r->opts.max_value_bytes)) {
			if ((rc = resync(r)))
				return rc;
			continue;
		}
		size_t len = TK__TKB_CHDR + tk__get_le32(h + 8);
		if ((rc = tk__reader_fill(r, len)))
			return rc;
		if (r->end - r->pos < len)
			return truncated(r, r->end - r->pos, "inside a chunk");
		h = r->buf + r->pos;
		if (crc_differs(crc32(0, h + TK__TKB_CHDR, (uInt)(len - TK__TKB_CHDR)), tk__get_le32(h + 20))) {
			if ((rc = bad_payload(r, h, "fails its CRC")))
				return rc;
			continue;
		}
		if ((rc = load_payload(r, h)) < 0)
			return rc;
		if (rc) {
			if ((rc = bad_payload(r, h, "does not decompress")))
				return rc;
			continue;
		}
		s->chunk_at = r->base + r->pos;
		unsigned type = h[4];
		uint32_t count = tk__get_le32(h + 16);
		r->pos += len;
		if ((rc = chunk_body(r, type, count)))
			return rc;
		if (s->st != ST_CHUNKS)
			return s->st == ST_END ? TK_EOF : 0;
	}
}

/* ---- dictionaries ---- */

static int grow(void **p, size_t *cap, size_t need, size_t size)
{
	if (need <= *cap)
		return 0;
	size_t nc = *cap ? *cap : 256;
	while (nc < need)
		nc *= 2;
	void *np = realloc(*p, nc * size);
	if (!np)
		return TK_ERR_NOMEM;
	*p = np;
	*cap = nc;
	return 0;
}

/* Ids below `first` that we never saw came in a lost chunk: mark them missing. */
static int fill_gap(tk_reader *r, size_t *n, uint64_t first, const char *what)
{
	if (first < *n)
		return chunk_bad(r, what);
	if (first - *n > TK__TKB_GAP_MAX)
		return chunk_bad(r, what);
	return 0;
}

static int read_strings(tk_reader *r)
{
	tstate *s = r->fs;
	int bad = 0;
	uint64_t first = tk__get_varint(&s->p, s->e, &bad), n = tk__get_varint(&s->p, s->e, &bad);
	if (bad || n > (uint64_t)(s->e - s->p) || fill_gap(r, &s->n_strs, first, "string ids out of order"))
		return r->err.code ? r->err.code : chunk_bad(r, "string table");
	if (grow((void **)&s->strs, &s->strs_cap, (size_t)(first + n), sizeof *s->strs) ||
	    grow((void **)&s->sok, &s->sok_cap, (size_t)(first + n), 1))
		return nomem(r);
	while (s->n_strs < first) {
		s->sok[s->n_strs] = 0;
		s->strs[s->n_strs++] = (tk_sv){NULL, 0};
	}
	for (uint64_t i = 0; i < n; i++) {
		uint64_t len = tk__get_varint(&s->p, s->e, &bad);
		if (bad || len > (uint64_t)(s->e - s->p))
			return chunk_bad(r, "string table entry");
		tk_sv v = tk__strtab_intern(&r->strs, (const char *)s->p, (size_t)len);
		if (!v.ptr)
			return nomem(r);
		/* a crafted file must not make the JSON writer emit invalid JSON */
		s->sok[s->n_strs] = (unsigned char)((tk__json_is_canonical(v.ptr, v.len, 0) ? TK__OK_BODY : 0) |
		                                    (tk__json_is_canonical(v.ptr, v.len, 1) ? TK__OK_VALUE : 0) |
		                                    (tk__json_is_canonical(v.ptr, v.len, 2) ? TK__OK_MEMBERS : 0));
		s->strs[s->n_strs++] = v;
		s->p += len;
	}
	return 0;
}

static int grow_slots(tstate *s, size_t need)
{
	size_t cap = s->slots_cap, pcap = s->slots_cap;
	if (grow((void **)&s->slots, &cap, need, sizeof *s->slots))
		return TK_ERR_NOMEM;
	if (grow((void **)&s->prev, &pcap, need, sizeof *s->prev))
		return TK_ERR_NOMEM;
	s->slots_cap = cap;
	return 0;
}

/* One slot of a new shape: its rendered key prefix and value type. */
static int add_slot(tk_reader *r, tshape *sh, uint32_t i, uint64_t key, unsigned type)
{
	tstate *s = r->fs;
	if (key >= s->n_strs || type > TK__V_MAX)
		return chunk_bad(r, "shape slot");
	tk_sv k = s->strs[key];
	tk__buf esc = {0};
	if (k.ptr && !(s->sok[key] & TK__OK_BODY)) {
		/* A key that is not the body of a JSON string (a raw quote, a NUL,
		 * invalid UTF-8) is escaped as text, as the JSON reader would have
		 * written it: it can never add a member to args, and it reads the same
		 * after a round trip. */
		if (tk__json_escape(&esc, k.ptr, k.len) < 0 || tk__buf_putc(&esc, 0)) {
			tk__buf_free(&esc);
			return nomem(r);
		}
		k = (tk_sv){esc.p, esc.len - 1};
		sh->unsafe = 1;
	}
	tslot *sl = &s->slots[sh->first + i];
	sl->type = (int)type;
	sl->pre_off = (uint32_t)s->prefixes.len;
	sl->pre_len = (uint32_t)(k.len + 4);
	if (!k.ptr) {
		sh->missing = 1;
		k.len = 0;
	}
	if (tk__buf_reserve(&s->prefixes, k.len + 4)) {
		tk__buf_free(&esc);
		return nomem(r);
	}
	char *d = s->prefixes.p + s->prefixes.len;
	d[0] = i ? ',' : '{';
	d[1] = '"';
	if (k.len)
		memcpy(d + 2, k.ptr, k.len);
	d[k.len + 2] = '"';
	d[k.len + 3] = ':';
	s->prefixes.len += k.len + 4;
	tk__buf_free(&esc);
	return 0;
}

static int read_shape(tk_reader *r)
{
	tstate *s = r->fs;
	int bad = 0;
	uint64_t n = tk__get_varint(&s->p, s->e, &bad);
	if (bad || n > (uint64_t)(s->e - s->p) / 2)
		return chunk_bad(r, "shape");
	if (grow_slots(s, s->n_slots + n))
		return nomem(r);
	tshape *sh = &s->shapes[s->n_shapes];
	*sh = (tshape){(uint32_t)n, (uint32_t)s->n_slots, UINT32_MAX, 0, 0};
	for (uint32_t i = 0; i < n; i++) {
		uint64_t key = tk__get_varint(&s->p, s->e, &bad);
		if (bad || s->p >= s->e)
			return chunk_bad(r, "shape slot");
		int rc = add_slot(r, sh, i, key, *s->p++);
		if (rc)
			return rc;
	}
	s->n_slots += n;
	s->n_shapes++;
	return 0;
}

static int read_dicts(tk_reader *r)
{
	tstate *s = r->fs;
	s->p = (unsigned char *)s->chunk.p;
	s->e = s->p + s->chunk.len;
	int rc = read_strings(r), bad = 0;
	if (rc)
		return rc;
	uint64_t first = tk__get_varint(&s->p, s->e, &bad), n = tk__get_varint(&s->p, s->e, &bad);
	if (bad || n > (uint64_t)(s->e - s->p) || fill_gap(r, &s->n_shapes, first, "shape ids out of order"))
		return r->err.code ? r->err.code : chunk_bad(r, "shape table");
	if (grow((void **)&s->shapes, &s->shapes_cap, (size_t)(first + n), sizeof *s->shapes))
		return nomem(r);
	while (s->n_shapes < first)
		s->shapes[s->n_shapes++] = (tshape){0, 0, 0, 2, 0};
	for (uint64_t i = 0; i < n; i++)
		if ((rc = read_shape(r)))
			return rc;
	return 0;
}

/* ---- events ---- */

enum { DEC_OK = 0, DEC_MISS = 1, DEC_REST = 2 };

/* String `id` of the dictionary; `kind` (TK__OK_*, 0 for none) is what the
 * string must be valid as when it goes into JSON text unchecked. */
static inline tk_sv str_ref(tstate *s, const unsigned char **p, int *bad, int *miss, int kind)
{
	uint64_t id = tk__get_varint(p, s->e, bad);
	if (id >= s->n_strs) {
		*bad = 1;
		return (tk_sv){"", 0};
	}
	if (kind && !(s->sok[id] & kind))
		s->suspect = 1;
	tk_sv v = s->strs[id];
	if (!v.ptr) {
		*miss = 1;
		v = (tk_sv){"", 0};
	}
	return v;
}

static inline tk_sv get_str(tstate *s, const unsigned char **p, int *bad, int *miss)
{
	return str_ref(s, p, bad, miss, 0);
}

static inline tk_sv get_json(tstate *s, const unsigned char **p, int *bad, int *miss, int kind)
{
	return str_ref(s, p, bad, miss, kind);
}

static void put_i64(tk__buf *o, int64_t v)
{
	char t[24], *e = t + sizeof t, *q = tk__fmt_u64(e, v < 0 ? 0 - (uint64_t)v : (uint64_t)v);
	if (v < 0)
		*--q = '-';
	memcpy(o->p + o->len, q, (size_t)(e - q));
	o->len += (size_t)(e - q);
}

static void put_dec(tk__buf *o, int64_t m, unsigned scale)
{
	char t[48], *e = t + sizeof t, *q = e;
	uint64_t u = m < 0 ? 0 - (uint64_t)m : (uint64_t)m;
	for (unsigned i = 0; i < scale; i++, u /= 10)
		*--q = (char)('0' + u % 10);
	*--q = '.';
	q = tk__fmt_u64(q, u);
	if (m < 0)
		*--q = '-';
	memcpy(o->p + o->len, q, (size_t)(e - q));
	o->len += (size_t)(e - q);
}

static int put_sv(tk__buf *o, tk_sv v, int quote)
{
	if (tk__buf_reserve(o, v.len + 2))
		return TK_ERR_NOMEM;
	char *d = o->p + o->len;
	if (quote)
		*d++ = '"';
	memcpy(d, v.ptr, v.len);
	d += v.len;
	if (quote)
		*d++ = '"';
	o->len = (size_t)(d - o->p);
	return 0;
}

/* One value of a shaped args object (after its key prefix). */
static int put_value(tstate *s, tk__buf *o, int type, int64_t *prev, const unsigned char **p,
                     int *bad, int *miss)
{
	switch (type) {
	case TK__V_INT:
		*prev = (int64_t)((uint64_t)*prev + (uint64_t)tk__unzz(tk__get_varint(p, s->e, bad)));
		put_i64(o, *prev);
		return 0;
	case TK__V_STR: {
		int was = s->suspect;
		s->suspect = 0;
		tk_sv v = get_json(s, p, bad, miss, TK__OK_BODY);
		int raw = s->suspect;
		s->suspect = was;
		if (!raw)
			return put_sv(o, v, 1);
		/* not the body of a JSON string (a crafted file): escaped as raw text,
		 * as keys are (7.5), so it stays one value and reads the same again */
		return tk__buf_putc(o, '"') || tk__json_escape(o, v.ptr, v.len) < 0 || tk__buf_putc(o, '"')
		           ? TK_ERR_NOMEM
		           : 0;
	}
	case TK__V_JSON:
		return put_sv(o, get_json(s, p, bad, miss, TK__OK_VALUE), 0);
	case TK__V_RAW: {
		s->suspect = 1; /* raw text is checked by whoever writes it as JSON */
		uint64_t n = tk__get_varint(p, s->e, bad);
		if (n > (uint64_t)(s->e - *p)) {
			*bad = 1;
			return 0;
		}
		*p += n;
		return put_sv(o, (tk_sv){(const char *)*p - n, (size_t)n}, 0);
	}
	case TK__V_DEC: {
		int64_t m = tk__unzz(tk__get_varint(p, s->e, bad));
		unsigned sc = *p < s->e ? *(*p)++ : 0;
		if (sc < 1 || sc > 18)
			*bad = 1;
		else
			put_dec(o, m, sc);
		return 0;
	}
	case TK__V_NULL: return put_sv(o, (tk_sv){"null", 4}, 0);
	case TK__V_TRUE: return put_sv(o, (tk_sv){"true", 4}, 0);
	default: return put_sv(o, (tk_sv){"false", 5}, 0);
	}
}

static int render_args(tk_reader *r, tshape *sh, const unsigned char **p, int *bad, int *miss)
{
	tstate *s = r->fs;
	tk__buf *o = &r->args;
	o->len = 0;
	if (!sh->n)
		return put_sv(o, (tk_sv){"{}", 2}, 0);
	int64_t *prev = s->prev + sh->first;
	if (sh->epoch != s->chunk_no) {
		memset(prev, 0, sh->n * sizeof *prev);
		sh->epoch = s->chunk_no;
	}
	*miss |= sh->missing;
	s->suspect |= sh->unsafe;
	const tslot *sl = s->slots + sh->first;
	for (uint32_t i = 0; i < sh->n && !*bad; i++) {
		if (tk__buf_reserve(o, sl[i].pre_len + 48))
			return TK_ERR_NOMEM;
		memcpy(o->p + o->len, s->prefixes.p + sl[i].pre_off, sl[i].pre_len);
		o->len += sl[i].pre_len;
		if (put_value(s, o, sl[i].type, &prev[i], p, bad, miss))
			return TK_ERR_NOMEM;
	}
	return tk__buf_putc(o, '}');
}

/* An event whose args or extra use text that is not canonical JSON (a
 * crafted or damaged file: invalid UTF-8, a raw value): both are made
 * canonical as the JSON reader would write them, so that the event reads
 * the same after it is written again; where one is not JSON at all it is
 * left as it is and the event stays without TK_HAS_VALID_JSON (a JSON
 * writer then refuses it with a message). Returns TK_ERR_NOMEM or 0. */
static int canon_event(tk_reader *r)
{
	tstate *s = r->fs;
	tk_event *ev = &r->ev;
	tk__buf *c = &r->scratch;
	size_t args_len = 0;
	c->len = 0;
	int rc = ev->args.ptr ? tk__json_canon_text(c, ev->args.ptr, ev->args.len, 0, NULL) : 0;
	if (rc == TK_ERR_NOMEM)
		return rc;
	if (rc)
		return 0;
	args_len = c->len;
	if (ev->extra.ptr && ev->extra.len && (rc = tk__json_canon_text(c, ev->extra.ptr, ev->extra.len, 1, NULL)))
		return rc == TK_ERR_NOMEM ? rc : 0;
	/* both canonical: args to r->args, extra to r->extra */
	if (ev->args.ptr) {
		r->args.len = 0;
		if (tk__buf_append(&r->args, c->p, args_len) || tk__buf_putc(&r->args, 0))
			return TK_ERR_NOMEM;
		ev->args = (tk_sv){r->args.p, args_len};
	}
	if (ev->extra.ptr && ev->extra.len) {
		r->extra.len = 0;
		if (tk__buf_append(&r->extra, c->p + args_len, c->len - args_len) || tk__buf_putc(&r->extra, 0))
			return TK_ERR_NOMEM;
		ev->extra = (tk_sv){r->extra.p, c->len - args_len};
	}
	s->suspect = 0;
	return 0;
}

static int decode_args(tk_reader *r, const unsigned char **p, int *bad, int *miss)
{
	tstate *s = r->fs;
	uint64_t ref = tk__get_varint(p, s->e, bad);
	int rc = 0;
	if (ref == 0) {
		s->suspect = 1;
		r->args.len = 0;
		uint64_t n = tk__get_varint(p, s->e, bad);
		if (n > (uint64_t)(s->e - *p)) {
			*bad = 1;
			return 0;
		}
		rc = tk__buf_append(&r->args, *p, (size_t)n);
		*p += n;
	} else if (ref > s->n_shapes) {
		*bad = 1;
	} else if (s->shapes[ref - 1].missing == 2) {
		return DEC_REST;
	} else {
		rc = render_args(r, &s->shapes[ref - 1], p, bad, miss);
	}
	if (rc || tk__buf_reserve(&r->args, 1))
		return TK_ERR_NOMEM;
	r->args.p[r->args.len] = 0;
	r->ev.args = (tk_sv){r->args.p, r->args.len};
	return 0;
}

static void decode_id(tstate *s, int i, unsigned mode, tk_id *id, const unsigned char **p, int *bad,
                      int *miss)
{
	tk_id *pv = &s->prev_ids[i];
	if (mode == TK__ID_SAME) {
		*bad |= pv->kind == TK_ID_NONE;
		*id = *pv;
	} else if (mode == TK__ID_INT) {
		s->last_int[i] =
		    (int64_t)((uint64_t)s->last_int[i] + (uint64_t)tk__unzz(tk__get_varint(p, s->e, bad)));
		*id = *pv = (tk_id){TK_ID_INT, s->last_int[i], {NULL, 0}};
	} else if (mode == TK__ID_STR) {
		*id = *pv = (tk_id){TK_ID_STR, 0, get_str(s, p, bad, miss)};
	} else {
		*id = (tk_id){TK_ID_NONE, 0, {NULL, 0}};
	}
}

/* Decodes one event record into r->ev: DEC_OK, DEC_MISS (it used a string
 * of a lost chunk), DEC_REST (the rest of the chunk cannot be decoded) or
 * an error. */
static int decode_event(tk_reader *r)
{
	tstate *s = r->fs;
	tk_event *ev = &r->ev;
	const unsigned char *p = s->p;
	int bad = 0, miss = 0, rc = 0;
	uint64_t f = tk__get_varint(&p, s->e, &bad);
	if (f >> 13)
		return chunk_bad(r, "unknown event flags");
	memset(ev, 0, sizeof *ev);
	s->suspect = 0;
	ev->has = (unsigned)(f & 31);
	if (f & TK__E_PH)
		ev->ph = p < s->e ? (char)*p++ : (bad = 1, 0);
	if (f & TK__E_TS)
		ev->ts = s->prev_ts =
		    (int64_t)((uint64_t)s->prev_ts + (uint64_t)tk__unzz(tk__get_varint(&p, s->e, &bad)));
	if (f & TK__E_DUR)
		ev->dur = tk__unzz(tk__get_varint(&p, s->e, &bad));
	if (f & TK__E_NAME)
		ev->name = get_str(s, &p, &bad, &miss);
	if (f & TK__E_CAT)
		ev->cat = get_str(s, &p, &bad, &miss);
	decode_id(s, 0, (f >> TK__E_PID) & 3, &ev->pid, &p, &bad, &miss);
	decode_id(s, 1, (f >> TK__E_TID) & 3, &ev->tid, &p, &bad, &miss);
	decode_id(s, 2, (f >> TK__E_ID) & 3, &ev->id, &p, &bad, &miss);
	if ((f & TK__E_ARGS) && !bad && (rc = decode_args(r, &p, &bad, &miss)) != 0)
		return rc < 0 ? nomem(r) : rc;
	if (f & TK__E_EXTRA)
		ev->extra = get_json(s, &p, &bad, &miss, TK__OK_MEMBERS);
	if (s->suspect && !bad && (rc = canon_event(r)) != 0)
		return nomem(r);
	if (!s->suspect)
		ev->has |= TK_HAS_VALID_JSON;
	if (bad)
		return chunk_bad(r, "event record");
	s->p = p;
	return miss ? DEC_MISS : DEC_OK;
}

static int finish(tk_reader *r)
{
	tstate *s = r->fs;
	if (s->lost_strings) {
		uint64_t n = s->lost_strings;
		s->lost_strings = 0;
		if (tk__err_warn(&r->err, "%s: %llu events used strings or args shapes of a damaged chunk "
		                       "and were dropped", r->name, (unsigned long long)n))
			return TK_ERR_NOMEM;
	}
	return TK_EOF;
}

static int tkb_next(tk_reader *r, const tk_event **ev)
{
	tstate *s = r->fs;
	for (;;) {
		if (s->st == ST_END)
			return finish(r);
		if (s->st == ST_CHUNKS) {
			int rc = next_chunk(r);
			if (rc < 0)
				return rc;
			continue;
		}
		int rc = decode_event(r);
		if (rc < 0)
			return rc;
		if (rc == DEC_REST) {
			s->lost_strings += s->ev_left;
			s->info.lost_events += s->ev_left;
			s->st = ST_CHUNKS;
			continue;
		}
		if (--s->ev_left == 0) {
			if (s->p != s->e)
				return chunk_bad(r, "bytes after the last event");
			s->st = ST_CHUNKS;
		}
		if (rc == DEC_MISS) {
			s->lost_strings++;
			s->info.lost_events++;
			continue;
		}
		*ev = &r->ev;
		return TK_OK;
	}
}

int tk_reader_tkb_info(const tk_reader *r, tk_tkb_info *out)
{
	if (!r || !out || r->fmt != &tk__format_tkb || !r->fs)
		return TK_ERR_ARG;
	*out = ((const tstate *)r->fs)->info;
	return 0;
}

static const tk__fmt tkb_rd = {tkb_bid, tkb_open, tkb_next, tkb_free};

/* ---- writing ---- */

static int tw_open(tk_writer *w)
{
	tk__tkb_enc *e = calloc(1, sizeof *e);
	if (!e)
		return TK_ERR_NOMEM;
	w->fs = e;
	tk_tkb_opts o = {w->opts.gzip > 0, w->opts.gzip_level, 0};
	if (tk__tkb_enc_init(e, &o))
		return TK_ERR_NOMEM;
	return tk__tkb_enc_header(e, &w->out, NULL);
}

static void tw_free(tk_writer *w)
{
	if (w->fs)
		tk__tkb_enc_free(w->fs);
	free(w->fs);
	w->fs = NULL;
}

static int tw_add_meta(tk_writer *w, tk_sv key, tk_sv json, int after)
{
	tk__tkb_enc *e = w->fs;
	after = after || e->events > 0;
	/* members after the events follow them in the file too */
	if (after && tk__tkb_enc_flush(e, &w->out))
		return tk__err_set(&w->err, TK_ERR_NOMEM, "out of memory");
	int rc = tk__tkb_enc_meta(e, key, json, after);
	if (rc == TK_ERR_ARG)
		return tk__err_set(&w->err, rc, "metadata value is not valid JSON");
	return rc ? tk__err_set(&w->err, rc, "out of memory") : 0;
}

static int tw_write(tk_writer *w, const tk_event *ev)
{
	tk__tkb_enc *e = w->fs;
	int rc = tk__tkb_enc_event(e, ev);
	if (!rc && tk__tkb_enc_chunk_full(e))
		rc = tk__tkb_enc_flush(e, &w->out);
	return rc ? tk__err_set(&w->err, rc, "%s", e->err ? e->err : "out of memory") : 0;
}

static int tw_close(tk_writer *w)
{
	return tk__tkb_enc_end(w->fs, &w->out);
}

/* state_size 0: the encoder's state cannot be rolled back, so byte budgets
 * (tk_writer_set_max_bytes) are refused for .tkb output */
static const tk__wfmt tkb_wr = {0, tw_open, tw_add_meta, NULL, tw_write, tw_close, tw_free};


static const char *const tkb_suffixes[] = {".tkb", NULL};

const tk__format tk__format_tkb = {TK_FORMAT_TKB, "tkb", tkb_suffixes, TK__FMT_BINARY, &tkb_rd, &tkb_wr};
