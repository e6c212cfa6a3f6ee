/* tkb.c: the .tkb format: a reader (file header, chunk framing with CRC checks and resync, dictionaries, event records; with opts.threads > 1 the compressed chunks read ahead are inflated, and the event records of the chunks decoded, on other threads and handed out in file order) and the tk_writer format on the encoder of tkb_enc.c. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdlib.h>

#include "core/workers.h"
#include "formats/formats.h"
#include "tkb_int.h"

/* ---- reading ---- */

#define TK__TKB_HDR_MAX (1u << 20)  /* largest file header body accepted */
#define TK__TKB_THREADS 64          /* most decoding threads */
#define TK__TKB_AHEAD (1u << 20)    /* payload bytes read ahead per thread, past the first chunk */

enum { ST_CHUNKS, ST_EVENTS, ST_END };

typedef struct tshape {
	uint32_t n, first; /* slots[first .. first+n) */
	int missing; /* uses a string of a lost chunk */
	int unsafe;  /* a key is not a canonical JSON string body */
} tshape;

/* What a string may stand for in JSON output without being checked again. */
enum { TK__OK_BODY = 1, TK__OK_VALUE = 2, TK__OK_MEMBERS = 4 };

typedef struct tslot {
	const char *key; /* the key as JSON string body: in the reader's string table */
	uint32_t key_len;
	int type;
} tslot;

/* Where a dictionary's ids stand in its array once chunks were lost: the
 * ids from `id` on are at the array's index `at` on, up to the next
 * range's `at` (or the array's end); the ids between one range's last and
 * the next one's `id` were added by lost chunks (missing). A dictionary
 * that lost none has no ranges and an id is its index. A gap costs one
 * range however many ids it spans. */
typedef struct trange {
	uint64_t id;
	size_t at;
} trange;

/* One dictionary's ids as a chunk sees them. */
typedef struct tids {
	const trange *rg;
	size_t n_rg;
	uint64_t n_ids; /* ids given out: the next chunk's first */
	size_t n;       /* entries in the array */
} tids;

/* The dictionaries as a chunk's events see them: the entries below the
 * counts never change, and the arrays stay where they are (an array that
 * grows is copied, the old one kept until the reader is freed), so a
 * decoder on another thread reads them while later chunks add entries. */
typedef struct tdict {
	const tk_sv *strs;
	const unsigned char *sok; /* per string: TK__OK_* (checked once, when it is added) */
	tids str_ids;
	const tshape *shapes;
	tids shape_ids;
	const tslot *slots;
	size_t n_slots;
	size_t max_args; /* an event's args text at most (max_value_bytes) */
} tdict;

/* A decoder of one chunk's event records: the delta state, the buffers of
 * the event it gives, the args values of each shape in this chunk. */
typedef struct tdec {
	tdict d;
	const unsigned char *p, *e;
	uint32_t chunk_no;
	int64_t prev_ts, last_int[3];
	tk_id prev_ids[3];
	int suspect; /* this event's args/extra use text that is not canonical JSON */
	uint32_t *epoch; /* per shape: the chunk its values in prev belong to */
	size_t epoch_cap;
	int64_t *prev; /* per slot */
	size_t prev_cap;
	tk_event ev;
	/* args text: of this event from abase on; in a batch (append) the
	 * events' text, one after another */
	tk__buf args, extra, scratch;
	size_t abase;
	int append;
	const char *bad; /* DEC_BAD: what */
} tdec;

enum { DEC_OK = 0, DEC_MISS = 1, DEC_REST = 2, DEC_BAD = 3, DEC_DONE = 4 };

/* A chunk read (framed, checked, inflated, its dictionaries added), or
 * what was found instead, waiting to be handed out in file order. */
enum { J_EVENTS, J_META, J_ANCHOR, J_END, J_TRUNC, J_FAIL };
enum { J_READ, J_TAKEN, J_DONE };
enum { Z_NONE, Z_WAIT, Z_TAKEN, Z_DONE }; /* a compressed events chunk's inflating */
typedef struct tjob {
	struct tjob *next;
	int kind;
	tk__buf pay; /* the payload */
	/* J_EVENTS: its dictionaries are read, in file order, once its payload
	 * is there (settled); with threads, a compressed one is read as it is
	 * stored (zin) and inflated into pay by whichever thread is free */
	int settled, zst, zok;
	tk__buf zin;
	uint32_t raw;   /* the payload's length inflated */
	size_t clen;    /* the chunk's length in the file */
	size_t counted_ahead; /* its bytes in tstate.ahead */
	size_t ev_off; /* J_EVENTS: where the event records start in pay */
	uint32_t count, chunk_no;
	uint64_t at; /* the chunk's offset; J_TRUNC: where the input ends */
	tdict d;
	tk__err err; /* the warnings found reading it; J_FAIL: the error */
	uint64_t bad_chunks, skipped_bytes, lost_events; /* found reading it */
	size_t tail; /* J_TRUNC: the bytes dropped */
	const char *where;
	/* J_EVENTS decoded on a thread (batch): the events, their args and
	 * extra text, their notes, and how the chunk ended */
	int status, batch;
	tk_event *ev;
	size_t n, ev_cap, idx;
	tk__buf text;
	unsigned char *notes;
	size_t notes_cap;
	tk__buf summary; /* the stats tables' part of the batch (tk__stats_batch) */
	int render;    /* the events' JSON texts are written (tk__render_now) */
	tk__buf rtext; /* the texts, and where each is */
	tk__rend *rend;
	size_t rend_cap;
	int end;          /* DEC_OK (every record read), DEC_REST, DEC_BAD or TK_ERR_NOMEM */
	const char *bad;  /* DEC_BAD: what */
	uint64_t missed;  /* events dropped for a string of a lost chunk */
	uint32_t *before; /* per event kept: the events dropped before it */
	size_t before_cap;
	uint64_t counted; /* of missed, those counted as the events were handed out */
	int complete;     /* the END chunk was read (J_END, or J_FAIL after it) */
	uint32_t rest;    /* DEC_REST: the events left, that one included */
	/* a batch cut at tk__tkb_batch (cut): the decoder as it stopped, at
	 * record more_at, for the caller to decode the rest with; else a
	 * spare decoder, kept with the job */
	int cut;
	size_t more_at;
	tdec *more;
} tjob;

typedef struct tpool tpool;

/* What one thread decodes and inflates with: the caller's, and each of the pool's. */
typedef struct tthr {
	tdec dec;
	z_stream z;
	int z_init;
} tthr;

typedef struct tstate {
	int st;
	tk_tkb_info info;
	tk__buf chunk; /* payload of the chunk being read, decompressed */
	const unsigned char *p, *e; /* the dictionaries' reading */
	uint32_t chunk_no;
	/* the dictionaries (tdict) */
	tk_sv *strs;
	unsigned char *sok;
	size_t n_strs, strs_cap, sok_cap;
	tshape *shapes;
	size_t n_shapes, shapes_cap;
	trange *srg, *hrg; /* the strings' and the shapes' ranges (trange) */
	size_t n_srg, srg_cap, n_hrg, hrg_cap;
	uint64_t str_ids, shape_ids; /* ids given out */
	tslot *slots;
	size_t n_slots, slots_cap;
	void **old; /* the arrays' earlier copies */
	size_t n_old, old_cap;
	uint64_t lost_strings; /* events dropped for a string of a lost chunk */
	/* reading ahead: jobs in file order, the counts found since the last */
	tjob *head, *tail, *spare;
	size_t n_jobs, max_jobs;
	size_t ahead, max_ahead; /* the queued chunks' payload bytes, and their most */
	int rd_end; /* the last job is read */
	uint64_t pend_bad, pend_skipped, pend_lost;
	tjob *cur;  /* the J_EVENTS job being handed out */
	tthr me;    /* the caller's decoder and z_stream */
	tpool *pool; /* the decoding threads, NULL when none */
	int pool_tried;
	uint64_t batched, cut; /* chunks handed out that a thread decoded, of them cut (tests) */
} tstate;

static int tkb_bid(const unsigned char *p, size_t n)
{
	size_t k = n < 8 ? n : 8;
	return k >= 4 && memcmp(p, TK__TKB_MAGIC, k) == 0 ? 100 : 0;
}

static void dec_free(tdec *d)
{
	free(d->epoch);
	free(d->prev);
	tk__buf_free(&d->args);
	tk__buf_free(&d->extra);
	tk__buf_free(&d->scratch);
	memset(d, 0, sizeof *d);
}

static void thr_free(tthr *t)
{
	dec_free(&t->dec);
	if (t->z_init)
		inflateEnd(&t->z);
	t->z_init = 0;
}

static void job_free(tjob *j)
{
	if (!j)
		return;
	tk__buf_free(&j->pay);
	tk__buf_free(&j->zin);
	tk__err_free(&j->err);
	free(j->ev);
	tk__buf_free(&j->text);
	free(j->notes);
	tk__buf_free(&j->summary);
	tk__buf_free(&j->rtext);
	free(j->rend);
	free(j->before);
	if (j->more)
		dec_free(j->more);
	free(j->more);
	free(j);
}

static void pool_free(tstate *s);

static void tkb_free(tk_reader *r)
{
	tstate *s = r->fs;
	if (!s)
		return;
	pool_free(s);
	while (s->head) {
		tjob *j = s->head;
		s->head = j->next;
		job_free(j);
	}
	while (s->spare) {
		tjob *j = s->spare;
		s->spare = j->next;
		job_free(j);
	}
	job_free(s->cur);
	thr_free(&s->me);
	tk__buf_free(&s->chunk);
	free(s->strs);
	free(s->sok);
	free(s->shapes);
	free(s->slots);
	free(s->srg);
	free(s->hrg);
	for (size_t i = 0; i < s->n_old; i++)
		free(s->old[i]);
	free(s->old);
	free(s);
	r->fs = NULL;
}

static int nomem(tk_reader *r)
{
	return tk__err_set(&r->err, TK_ERR_NOMEM, "%s: out of memory", r->name);
}

/* The input stops early: keep what came before (non-strict) or fail. */
static int truncated_at(tk_reader *r, uint64_t at, size_t tail, const char *where)
{
	tstate *s = r->fs;
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
	return TK_EOF;
}

static int truncated(tk_reader *r, size_t tail, const char *where)
{
	int rc = truncated_at(r, r->base + r->pos, tail, where);
	if (rc == TK_EOF)
		r->pos += tail;
	return rc;
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
	s->pend_bad++;
	s->pend_skipped += skipped;
	return tk__err_warn(&r->err,
	                       "%s: chunk at byte %llu is damaged (bad chunk header): skipped %llu bytes "
	                       "to the next chunk; the events it held are lost",
	                       r->name, (unsigned long long)from, (unsigned long long)skipped)
	           ? TK_ERR_NOMEM
	           : 0;
}

/* A chunk whose payload is bad (at: its offset; len: its bytes): an
 * error when strict, else a warning, its bytes and events counted lost. */
static int skip_chunk(tk_reader *r, uint64_t at, unsigned type, uint32_t count, size_t len, const char *why)
{
	tstate *s = r->fs;
	if (r->opts.strict)
		return tk__reader_fail_at(r, TK_ERR_FORMAT, at, "chunk %s", why);
	s->pend_bad++;
	s->pend_skipped += len;
	s->pend_lost += count;
	return tk__err_warn(&r->err, "%s: chunk at byte %llu (type %u, %zu bytes) %s: skipped it, %lu events lost",
	                       r->name, (unsigned long long)at, type, len, why, (unsigned long)count)
	           ? TK_ERR_NOMEM
	           : 0;
}

static int bad_payload(tk_reader *r, const unsigned char *h, const char *why)
{
	uint32_t count = h[4] == TK__C_EVENTS ? tk__get_le32(h + 16) : 0;
	size_t len = TK__TKB_CHDR + tk__get_le32(h + 8);
	int rc = skip_chunk(r, r->base + r->pos, h[4], count, len, why);
	if (!r->opts.strict)
		r->pos += len;
	return rc;
}

/* Inflates a chunk's stored payload (zlib) of raw bytes into out: 0, 1
 * where it does not inflate to exactly that, TK_ERR_NOMEM. */
static int inflate_payload(z_stream *z, int *z_init, const unsigned char *in, size_t stored, tk__buf *out,
                           uint32_t raw)
{
	out->len = 0;
	if (tk__buf_reserve(out, (size_t)raw + TK__PAD))
		return TK_ERR_NOMEM;
	if (!*z_init) {
		if (inflateInit(z) != Z_OK)
			return TK_ERR_NOMEM;
		*z_init = 1;
	} else if (inflateReset(z) != Z_OK) {
		return TK_ERR_NOMEM;
	}
	z->next_in = (unsigned char *)(uintptr_t)in;
	z->avail_in = (uInt)stored;
	z->next_out = (unsigned char *)out->p;
	z->avail_out = raw;
	int zr = inflate(z, Z_FINISH);
	if (zr != Z_STREAM_END || z->avail_out || z->avail_in)
		return 1;
	out->len = raw;
	return 0;
}

/* Copies or inflates the payload of the chunk at pos into s->chunk. */
static int load_payload(tk_reader *r, const unsigned char *h)
{
	tstate *s = r->fs;
	uint32_t stored = tk__get_le32(h + 8), raw = tk__get_le32(h + 12);
	if (!(h[5] & TK__CF_ZLIB)) {
		s->chunk.len = 0;
		if (raw != stored)
			return 1;
		if (tk__buf_reserve(&s->chunk, (size_t)raw + TK__PAD))
			return nomem(r);
		memcpy(s->chunk.p, h + TK__TKB_CHDR, raw);
		s->chunk.len = raw;
		return 0;
	}
	int rc = inflate_payload(&s->me.z, &s->me.z_init, h + TK__TKB_CHDR, stored, &s->chunk, raw);
	return rc < 0 ? nomem(r) : rc;
}

static int chunk_bad(tk_reader *r, uint64_t at, const char *what)
{
	return tk__reader_fail_at(r, TK_ERR_FORMAT, at, "chunk is malformed: %s", what);
}

static int read_meta(tk_reader *r, const tjob *j)
{
	const unsigned char *p = (unsigned char *)j->pay.p, *e = p + j->pay.len;
	for (uint32_t i = 0; i < j->count; i++) {
		int bad = p >= e;
		int after = bad ? 0 : *p++ & 1;
		uint64_t kl = tk__get_varint(&p, e, &bad);
		if (bad || kl > (uint64_t)(e - p))
			return chunk_bad(r, j->at, "metadata key");
		const unsigned char *k = p;
		p += kl;
		uint64_t vl = tk__get_varint(&p, e, &bad);
		if (bad || vl > (uint64_t)(e - p))
			return chunk_bad(r, j->at, "metadata value");
		if (tk__reader_add_meta(r, (const char *)k, kl, (const char *)p, vl, after))
			return r->err.code;
		p += vl;
	}
	return 0;
}

static int read_anchor(tk_reader *r, const tjob *j)
{
	tstate *s = r->fs;
	const unsigned char *p = (unsigned char *)j->pay.p, *e = p + j->pay.len;
	int bad = p >= e;
	unsigned kind = bad ? 0 : *p++;
	tk_tkb_anchor a;
	a.gpu_ns = tk__unzz(tk__get_varint(&p, e, &bad));
	a.realtime_ns = tk__unzz(tk__get_varint(&p, e, &bad));
	a.monotonic_ns = tk__unzz(tk__get_varint(&p, e, &bad));
	if (bad)
		return chunk_bad(r, j->at, "anchor");
	if (kind == 2) {
		s->info.end = a;
		s->info.has_end = 1;
	} else if (kind == 1 && !s->info.has_start) {
		s->info.start = a;
		s->info.has_start = 1;
	}
	return 0;
}

/* After the end chunk: the bytes that follow are ignored, with a warning. */
static int after_end(tk_reader *r)
{
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

static int read_dicts(tk_reader *r, uint64_t at, const tk__buf *pay);

/* The input ends early: a job that says so when it is handed out. */
static int trunc_job(tk_reader *r, tjob *j, size_t tail, const char *where)
{
	j->kind = J_TRUNC;
	j->at = r->base + r->pos;
	j->tail = tail;
	j->where = where;
	if (!r->opts.strict)
		r->pos += tail;
	return 0;
}

/* Reads the next chunk into j: 0 with j->kind set, or an error. */
static int next_chunk(tk_reader *r, tjob *j)
{
	tstate *s = r->fs;
	for (;;) {
		int rc = tk__reader_fill(r, TK__TKB_CHDR);
		if (rc)
			return rc;
		size_t avail = r->end - r->pos;
		if (avail == 0)
			return trunc_job(r, j, 0, "without its end chunk");
		if (avail < TK__TKB_CHDR)
			return trunc_job(r, j, avail, "inside a chunk header");
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
			return trunc_job(r, j, r->end - r->pos, "inside a chunk");
		h = r->buf + r->pos;
		if (crc_differs(crc32(0, h + TK__TKB_CHDR, (uInt)(len - TK__TKB_CHDR)), tk__get_le32(h + 20))) {
			if ((rc = bad_payload(r, h, "fails its CRC")))
				return rc;
			continue;
		}
		j->clen = len;
		if (h[4] == TK__C_EVENTS && (h[5] & TK__CF_ZLIB) && s->pool) {
			/* inflated by whichever thread is free, settled in order */
			size_t stored = len - TK__TKB_CHDR;
			j->zin.len = 0;
			if (tk__buf_reserve(&j->zin, stored))
				return nomem(r);
			memcpy(j->zin.p, h + TK__TKB_CHDR, stored);
			j->zin.len = stored;
			j->raw = tk__get_le32(h + 12);
			j->zst = Z_WAIT;
			j->kind = J_EVENTS;
			j->at = r->base + r->pos;
			j->count = tk__get_le32(h + 16);
			r->pos += len;
			return 0;
		}
		if ((rc = load_payload(r, h)) < 0)
			return rc;
		if (rc) {
			if ((rc = bad_payload(r, h, "does not decompress")))
				return rc;
			continue;
		}
		unsigned type = h[4];
		j->at = r->base + r->pos;
		j->count = tk__get_le32(h + 16);
		r->pos += len;
		switch (type) {
		case TK__C_META: j->kind = J_META; break;
		case TK__C_ANCHOR: j->kind = J_ANCHOR; break;
		case TK__C_END:
			j->kind = J_END;
			j->complete = 1;
			return after_end(r);
		case TK__C_EVENTS: j->kind = J_EVENTS; break; /* its dictionaries: settle() */
		default: continue; /* a chunk type added by a later minor version */
		}
		/* the payload goes with the job; its old buffer serves the next chunk */
		tk__buf t = j->pay;
		j->pay = s->chunk;
		s->chunk = t;
		return 0;
	}
}

/* ---- dictionaries ---- */

/* Room for need elements in *p: a larger array holds a copy, the old one
 * is kept (tdict). */
static int grow(tstate *s, void **p, size_t *cap, size_t need, size_t size)
{
	if (need <= *cap)
		return 0;
	size_t nc = *cap ? *cap : 256;
	while (nc < need)
		nc *= 2;
	if (s->n_old == s->old_cap) {
		size_t oc = s->old_cap ? 2 * s->old_cap : 16;
		void **no = realloc(s->old, oc * sizeof *no);
		if (!no)
			return TK_ERR_NOMEM;
		s->old = no;
		s->old_cap = oc;
	}
	void *np = malloc(nc * size);
	if (!np)
		return TK_ERR_NOMEM;
	if (*p)
		memcpy(np, *p, *cap * size);
	s->old[s->n_old++] = *p;
	*p = np;
	*cap = nc;
	return 0;
}

/* Index of `id` (below ids->n_ids) in its dictionary's array, or SIZE_MAX
 * when a lost chunk added it. */
static inline size_t id_at(const tids *ids, uint64_t id)
{
	if (!ids->n_rg)
		return (size_t)id;
	size_t lo = 0, hi = ids->n_rg; /* the last range starting at or before id (rg[0].id is 0) */
	while (hi - lo > 1) {
		size_t m = lo + (hi - lo) / 2;
		if (ids->rg[m].id <= id)
			lo = m;
		else
			hi = m;
	}
	size_t end = lo + 1 < ids->n_rg ? ids->rg[lo + 1].at : ids->n;
	uint64_t k = id - ids->rg[lo].id;
	return k < end - ids->rg[lo].at ? ids->rg[lo].at + (size_t)k : SIZE_MAX;
}

/* A chunk adds ids from `first` on to a dictionary of *n_ids ids and n
 * entries: the ids from *n_ids up to `first` were added by lost chunks,
 * and are kept as a range, not as entries. The caller counts each entry
 * it adds in *n_ids and its n, so that a chunk found bad half-way leaves
 * the ids it did not add missing. */
static int add_ids(tk_reader *r, uint64_t at, trange **rg, size_t *n_rg, size_t *cap, uint64_t *n_ids, size_t n,
                   uint64_t first, const char *what)
{
	tstate *s = r->fs;
	if (first < *n_ids || first > (UINT64_MAX >> 2))
		return chunk_bad(r, at, what);
	if (first > *n_ids) {
		if (grow(s, (void **)rg, cap, *n_rg + 2, sizeof **rg))
			return nomem(r);
		if (!*n_rg)
			(*rg)[(*n_rg)++] = (trange){0, 0};
		(*rg)[(*n_rg)++] = (trange){first, n};
	}
	*n_ids = first;
	return 0;
}

static int read_strings(tk_reader *r, uint64_t at)
{
	tstate *s = r->fs;
	int bad = 0;
	uint64_t first = tk__get_varint(&s->p, s->e, &bad), n = tk__get_varint(&s->p, s->e, &bad);
	if (bad || n > (uint64_t)(s->e - s->p))
		return chunk_bad(r, at, "string table");
	int rc = add_ids(r, at, &s->srg, &s->n_srg, &s->srg_cap, &s->str_ids, s->n_strs, first, "string ids out of order");
	if (rc)
		return rc;
	if (grow(s, (void **)&s->strs, &s->strs_cap, s->n_strs + (size_t)n, sizeof *s->strs) ||
	    grow(s, (void **)&s->sok, &s->sok_cap, s->n_strs + (size_t)n, 1))
		return nomem(r);
	for (uint64_t i = 0; i < n; i++) {
		uint64_t len = tk__get_varint(&s->p, s->e, &bad);
		if (bad || len > (uint64_t)(s->e - s->p))
			return chunk_bad(r, at, "string table entry");
		tk_sv v = tk__strtab_intern(&r->strs, (const char *)s->p, (size_t)len);
		if (!v.ptr)
			return nomem(r);
		/* a crafted file must not make the JSON writer emit invalid JSON */
		s->sok[s->n_strs] = (unsigned char)((tk__json_is_canonical(v.ptr, v.len, 0) ? TK__OK_BODY : 0) |
		                                    (tk__json_is_canonical(v.ptr, v.len, 1) ? TK__OK_VALUE : 0) |
		                                    (tk__json_is_canonical(v.ptr, v.len, 2) ? TK__OK_MEMBERS : 0));
		s->strs[s->n_strs++] = v;
		s->str_ids++;
		s->p += len;
	}
	return 0;
}

/* One slot of a new shape: its key (a string of the table, not copied:
 * a shape of many slots names a long key in a byte or two each) and value
 * type. */
static int add_slot(tk_reader *r, uint64_t at, tshape *sh, uint32_t i, uint64_t key, unsigned type)
{
	tstate *s = r->fs;
	if (key >= s->str_ids || type > TK__V_MAX)
		return chunk_bad(r, at, "shape slot");
	tids ids = {s->srg, s->n_srg, s->str_ids, s->n_strs};
	size_t ki = id_at(&ids, key);
	tk_sv k = ki == SIZE_MAX ? (tk_sv){NULL, 0} : s->strs[ki];
	if (k.ptr && !(s->sok[ki] & TK__OK_BODY)) {
		/* A key that is not the body of a JSON string (a raw quote, a NUL,
		 * invalid UTF-8) is escaped as text, as the JSON reader would have
		 * written it: it can never add a member to args, and it reads the same
		 * after a round trip. Interned, the escaped text is kept once. */
		tk__buf esc = {0};
		if (tk__json_escape(&esc, k.ptr, k.len) < 0) {
			tk__buf_free(&esc);
			return nomem(r);
		}
		k = tk__strtab_intern(&r->strs, esc.p ? esc.p : "", esc.len);
		tk__buf_free(&esc);
		if (!k.ptr)
			return nomem(r);
		sh->unsafe = 1;
	}
	if (k.len > UINT32_MAX)
		return chunk_bad(r, at, "shape slot");
	tslot *sl = &s->slots[sh->first + i];
	sl->type = (int)type;
	sl->key = k.ptr ? k.ptr : "";
	sl->key_len = (uint32_t)k.len;
	if (!k.ptr)
		sh->missing = 1;
	return 0;
}

static int read_shape(tk_reader *r, uint64_t at)
{
	tstate *s = r->fs;
	int bad = 0;
	uint64_t n = tk__get_varint(&s->p, s->e, &bad);
	if (bad || n > (uint64_t)(s->e - s->p) / 2)
		return chunk_bad(r, at, "shape");
	if (grow(s, (void **)&s->slots, &s->slots_cap, s->n_slots + n, sizeof *s->slots))
		return nomem(r);
	tshape *sh = &s->shapes[s->n_shapes];
	*sh = (tshape){(uint32_t)n, (uint32_t)s->n_slots, 0, 0};
	for (uint32_t i = 0; i < n; i++) {
		uint64_t key = tk__get_varint(&s->p, s->e, &bad);
		if (bad || s->p >= s->e)
			return chunk_bad(r, at, "shape slot");
		int rc = add_slot(r, at, sh, i, key, *s->p++);
		if (rc)
			return rc;
	}
	s->n_slots += n;
	s->n_shapes++;
	s->shape_ids++;
	return 0;
}

static int read_dicts(tk_reader *r, uint64_t at, const tk__buf *pay)
{
	tstate *s = r->fs;
	s->p = (unsigned char *)pay->p;
	s->e = s->p + pay->len;
	int rc = read_strings(r, at), bad = 0;
	if (rc)
		return rc;
	uint64_t first = tk__get_varint(&s->p, s->e, &bad), n = tk__get_varint(&s->p, s->e, &bad);
	if (bad || n > (uint64_t)(s->e - s->p))
		return chunk_bad(r, at, "shape table");
	if ((rc = add_ids(r, at, &s->hrg, &s->n_hrg, &s->hrg_cap, &s->shape_ids, s->n_shapes, first, "shape ids out of order")))
		return rc;
	if (grow(s, (void **)&s->shapes, &s->shapes_cap, s->n_shapes + (size_t)n, sizeof *s->shapes))
		return nomem(r);
	for (uint64_t i = 0; i < n; i++)
		if ((rc = read_shape(r, at)))
			return rc;
	return 0;
}

/* An events chunk's dictionaries, read in file order, and what its
 * events will see of them. */
static int settle_events(tk_reader *r, tjob *j)
{
	tstate *s = r->fs;
	int rc = read_dicts(r, j->at, &j->pay), bad = 0;
	if (rc)
		return rc;
	if (tk__get_varint(&s->p, s->e, &bad) != j->count || bad)
		return chunk_bad(r, j->at, "event count differs from the chunk header");
	j->chunk_no = ++s->chunk_no;
	j->ev_off = (size_t)(s->p - (const unsigned char *)j->pay.p);
	j->d = (tdict){s->strs,
	               s->sok,
	               {s->srg, s->n_srg, s->str_ids, s->n_strs},
	               s->shapes,
	               {s->hrg, s->n_hrg, s->shape_ids, s->n_shapes},
	               s->slots,
	               s->n_slots,
	               r->opts.max_value_bytes};
	return 0;
}

/* Settles an events job (its payload there) on the caller's thread: a
 * payload that did not inflate is skipped as reading it would have (the
 * job keeps no events, only the warning and the counts); what goes wrong
 * goes with the job, after the warnings found reading it. The caller sets
 * j->settled. */
static void settle(tk_reader *r, tjob *j)
{
	tstate *s = r->fs;
	tk__err keep = r->err;
	r->err = j->err;
	int rc;
	if (j->zst && j->zok < 0) {
		rc = nomem(r);
	} else if (j->zst && j->zok) {
		rc = skip_chunk(r, j->at, TK__C_EVENTS, j->count, j->clen, "does not decompress");
		j->bad_chunks += s->pend_bad;
		j->skipped_bytes += s->pend_skipped;
		j->lost_events += s->pend_lost;
		s->pend_bad = s->pend_skipped = s->pend_lost = 0;
		j->count = 0;
	} else {
		rc = settle_events(r, j);
	}
	if (rc < 0) {
		if (!r->err.code)
			tk__err_set(&r->err, rc, "%s: %s", r->name, tk_strerror(rc));
		j->kind = J_FAIL;
		s->rd_end = 1;
	}
	j->err = r->err;
	r->err = keep;
}

/* ---- events ---- */

/* String `id` of the dictionary; `kind` (TK__OK_*, 0 for none) is what the
 * string must be valid as when it goes into JSON text unchecked. */
static inline tk_sv str_ref(tdec *d, const unsigned char **p, int *bad, int *miss, int kind)
{
	uint64_t id = tk__get_varint(p, d->e, bad);
	if (id >= d->d.str_ids.n_ids) {
		*bad = 1;
		return (tk_sv){"", 0};
	}
	size_t i = id_at(&d->d.str_ids, id);
	if (i == SIZE_MAX) {
		*miss = 1;
		return (tk_sv){"", 0};
	}
	if (kind && !(d->d.sok[i] & kind))
		d->suspect = 1;
	return d->d.strs[i];
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
static int put_value(tdec *d, tk__buf *o, int type, int64_t *prev, const unsigned char **p, int *bad, int *miss)
{
	switch (type) {
	case TK__V_INT:
		*prev = (int64_t)((uint64_t)*prev + (uint64_t)tk__unzz(tk__get_varint(p, d->e, bad)));
		put_i64(o, *prev);
		return 0;
	case TK__V_STR: {
		int was = d->suspect;
		d->suspect = 0;
		tk_sv v = str_ref(d, p, bad, miss, TK__OK_BODY);
		int raw = d->suspect;
		d->suspect = was;
		if (!raw)
			return put_sv(o, v, 1);
		/* not the body of a JSON string (a crafted file): escaped as raw text,
		 * as keys are (7.5), so it stays one value and reads the same again */
		return tk__json_put_str(o, v.ptr, v.len);
	}
	case TK__V_JSON:
		return put_sv(o, str_ref(d, p, bad, miss, TK__OK_VALUE), 0);
	case TK__V_RAW: {
		d->suspect = 1; /* raw text is checked by whoever writes it as JSON */
		uint64_t n = tk__get_varint(p, d->e, bad);
		if (n > (uint64_t)(d->e - *p)) {
			*bad = 1;
			return 0;
		}
		*p += n;
		return put_sv(o, (tk_sv){(const char *)*p - n, (size_t)n}, 0);
	}
	case TK__V_DEC: {
		int64_t m = tk__unzz(tk__get_varint(p, d->e, bad));
		unsigned sc = *p < d->e ? *(*p)++ : 0;
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

static int render_args(tdec *d, size_t shape, const unsigned char **p, int *bad, int *miss)
{
	const tshape *sh = &d->d.shapes[shape];
	tk__buf *o = &d->args;
	o->len = d->abase;
	if (!sh->n)
		return put_sv(o, (tk_sv){"{}", 2}, 0);
	int64_t *prev = d->prev + sh->first;
	if (d->epoch[shape] != d->chunk_no) { /* the values of the chunk's first use start at 0 */
		memset(prev, 0, sh->n * sizeof *prev);
		d->epoch[shape] = d->chunk_no;
	}
	*miss |= sh->missing;
	d->suspect |= sh->unsafe;
	const tslot *sl = d->d.slots + sh->first;
	for (uint32_t i = 0; i < sh->n && !*bad; i++) {
		if (tk__buf_reserve(o, (size_t)sl[i].key_len + 4 + 48))
			return TK_ERR_NOMEM;
		char *w = o->p + o->len;
		w[0] = i ? ',' : '{';
		w[1] = '"';
		memcpy(w + 2, sl[i].key, sl[i].key_len);
		w[sl[i].key_len + 2] = '"';
		w[sl[i].key_len + 3] = ':';
		o->len += (size_t)sl[i].key_len + 4;
		if (put_value(d, o, sl[i].type, &prev[i], p, bad, miss))
			return TK_ERR_NOMEM;
		/* keys and strings named in a byte or two each: no more text than
		 * the limit on one value (the event is malformed past it) */
		if (o->len - d->abase > d->d.max_args)
			*bad = 1;
	}
	return tk__buf_putc(o, '}');
}

/* An event whose args or extra use text that is not canonical JSON (a
 * crafted or damaged file: invalid UTF-8, a raw value): both are made
 * canonical as the JSON reader would write them, so that the event reads
 * the same after it is written again; where one is not JSON at all it is
 * left as it is and the event stays without TK_HAS_VALID_JSON (a JSON
 * writer then refuses it with a message). Returns TK_ERR_NOMEM or 0. */
static int canon_event(tdec *d)
{
	tk_event *ev = &d->ev;
	tk__buf *c = &d->scratch;
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
	/* both canonical: args to d->args, extra to d->extra */
	if (ev->args.ptr) {
		d->args.len = d->abase;
		if (tk__buf_append(&d->args, c->p, args_len) || tk__buf_putc(&d->args, 0))
			return TK_ERR_NOMEM;
		ev->args = (tk_sv){d->args.p + d->abase, args_len};
	}
	if (ev->extra.ptr && ev->extra.len) {
		d->extra.len = 0;
		if (tk__buf_append(&d->extra, c->p + args_len, c->len - args_len) || tk__buf_putc(&d->extra, 0))
			return TK_ERR_NOMEM;
		ev->extra = (tk_sv){d->extra.p, c->len - args_len};
	}
	d->suspect = 0;
	return 0;
}

static int decode_args(tdec *d, const unsigned char **p, int *bad, int *miss)
{
	uint64_t ref = tk__get_varint(p, d->e, bad);
	int rc = 0;
	if (ref == 0) {
		d->suspect = 1;
		d->args.len = d->abase;
		uint64_t n = tk__get_varint(p, d->e, bad);
		if (n > (uint64_t)(d->e - *p)) {
			*bad = 1;
			return 0;
		}
		rc = tk__buf_append(&d->args, *p, (size_t)n);
		*p += n;
	} else if (ref > d->d.shape_ids.n_ids) {
		*bad = 1;
	} else {
		size_t i = id_at(&d->d.shape_ids, ref - 1);
		if (i == SIZE_MAX) /* a lost chunk added it: its value types are unknown */
			return DEC_REST;
		rc = render_args(d, i, p, bad, miss);
	}
	if (rc || tk__buf_reserve(&d->args, 1))
		return TK_ERR_NOMEM;
	d->args.p[d->args.len] = 0;
	d->ev.args = (tk_sv){d->args.p + d->abase, d->args.len - d->abase};
	return 0;
}

static void decode_id(tdec *d, int i, unsigned mode, tk_id *id, const unsigned char **p, int *bad, int *miss)
{
	tk_id *pv = &d->prev_ids[i];
	if (mode == TK__ID_SAME) {
		*bad |= pv->kind == TK_ID_NONE;
		*id = *pv;
	} else if (mode == TK__ID_INT) {
		d->last_int[i] =
		    (int64_t)((uint64_t)d->last_int[i] + (uint64_t)tk__unzz(tk__get_varint(p, d->e, bad)));
		*id = *pv = (tk_id){TK_ID_INT, d->last_int[i], {NULL, 0}};
	} else if (mode == TK__ID_STR) {
		*id = *pv = (tk_id){TK_ID_STR, 0, str_ref(d, p, bad, miss, 0)};
	} else {
		*id = (tk_id){TK_ID_NONE, 0, {NULL, 0}};
	}
}

/* Decodes one event record into d->ev: DEC_OK, DEC_MISS (it used a string
 * of a lost chunk), DEC_REST (the rest of the chunk cannot be decoded),
 * DEC_BAD (d->bad says what) or TK_ERR_NOMEM. */
static int decode_event(tdec *d)
{
	tk_event *ev = &d->ev;
	const unsigned char *p = d->p;
	int bad = 0, miss = 0, rc = 0;
	uint64_t f = tk__get_varint(&p, d->e, &bad);
	if (f >> 13) {
		d->bad = "unknown event flags";
		return DEC_BAD;
	}
	tk__event_zero(ev);
	d->suspect = 0;
	d->abase = d->append ? d->args.len : 0;
	ev->has = (unsigned)(f & 31);
	if (f & TK__E_PH)
		ev->ph = p < d->e ? (char)*p++ : (bad = 1, 0);
	if (f & TK__E_TS)
		ev->ts = d->prev_ts =
		    (int64_t)((uint64_t)d->prev_ts + (uint64_t)tk__unzz(tk__get_varint(&p, d->e, &bad)));
	if (f & TK__E_DUR)
		ev->dur = tk__unzz(tk__get_varint(&p, d->e, &bad));
	if (f & TK__E_NAME)
		ev->name = str_ref(d, &p, &bad, &miss, 0);
	if (f & TK__E_CAT)
		ev->cat = str_ref(d, &p, &bad, &miss, 0);
	decode_id(d, 0, (f >> TK__E_PID) & 3, &ev->pid, &p, &bad, &miss);
	decode_id(d, 1, (f >> TK__E_TID) & 3, &ev->tid, &p, &bad, &miss);
	decode_id(d, 2, (f >> TK__E_ID) & 3, &ev->id, &p, &bad, &miss);
	if ((f & TK__E_ARGS) && !bad && (rc = decode_args(d, &p, &bad, &miss)) != 0)
		return rc;
	if (f & TK__E_EXTRA)
		ev->extra = str_ref(d, &p, &bad, &miss, TK__OK_MEMBERS);
	if (d->suspect && !bad && canon_event(d))
		return TK_ERR_NOMEM;
	if (!d->suspect)
		ev->has |= TK_HAS_VALID_JSON;
	if (bad) {
		d->bad = "event record";
		return DEC_BAD;
	}
	d->p = p;
	return miss ? DEC_MISS : DEC_OK;
}

/* The decoder at the start of job j's event records: 0 or TK_ERR_NOMEM. */
static int dec_start(tdec *d, const tjob *j)
{
	if (d->epoch_cap < j->d.shape_ids.n) {
		size_t nc = j->d.shape_ids.n + j->d.shape_ids.n / 2 + 16;
		uint32_t *ne = realloc(d->epoch, nc * sizeof *ne);
		if (!ne)
			return TK_ERR_NOMEM;
		memset(ne + d->epoch_cap, 0, (nc - d->epoch_cap) * sizeof *ne); /* 0: no chunk */
		d->epoch = ne;
		d->epoch_cap = nc;
	}
	if (d->prev_cap < j->d.n_slots) {
		size_t nc = j->d.n_slots + j->d.n_slots / 2 + 16;
		int64_t *np = realloc(d->prev, nc * sizeof *np);
		if (!np)
			return TK_ERR_NOMEM;
		d->prev = np;
		d->prev_cap = nc;
	}
	d->d = j->d;
	d->p = (const unsigned char *)j->pay.p + j->ev_off;
	d->e = (const unsigned char *)j->pay.p + j->pay.len;
	d->chunk_no = j->chunk_no;
	d->prev_ts = 0;
	memset(d->last_int, 0, sizeof d->last_int);
	memset(d->prev_ids, 0, sizeof d->prev_ids);
	return 0;
}

/* Decodes the next event of j (at j->idx of j->count) into d->ev: DEC_OK,
 * DEC_MISS (dropped), DEC_DONE when the chunk is done (DEC_REST: j->rest set),
 * DEC_BAD or TK_ERR_NOMEM. The same steps whoever decodes. */
static int dec_next(tdec *d, tjob *j)
{
	if (j->idx == j->count)
		return DEC_DONE;
	int rc = decode_event(d);
	if (rc < 0 || rc == DEC_BAD)
		return rc;
	if (rc == DEC_REST) {
		j->rest = j->count - (uint32_t)j->idx;
		j->idx = j->count;
		j->end = DEC_REST;
		return DEC_DONE;
	}
	if (++j->idx == j->count && d->p != d->e) {
		d->bad = "bytes after the last event";
		return DEC_BAD;
	}
	return rc;
}

/* An event decoded in a batch: its args stay where they were rendered in
 * the batch's text, its extra is copied after them; both as offsets until
 * tk__batch_fix(). */
static int batch_keep(tdec *d, tjob *j)
{
	tk_event *ev = &d->ev;
	tk__buf *t = &d->args;
	if (tk__grow(&j->ev, &j->ev_cap, j->n + 1, sizeof *j->ev, 1024) ||
	    tk__grow(&j->before, &j->before_cap, j->n + 1, sizeof *j->before, 1024))
		return TK_ERR_NOMEM;
	j->before[j->n] = (uint32_t)j->missed;
	if (ev->args.ptr) {
		t->len = d->abase + ev->args.len + 1; /* and its NUL */
		ev->args.ptr = (const char *)(uintptr_t)(d->abase + 1);
	} else {
		t->len = d->abase;
	}
	if (ev->extra.ptr) {
		size_t at = t->len;
		if (tk__buf_append(t, ev->extra.ptr, ev->extra.len) || tk__buf_putc(t, 0))
			return TK_ERR_NOMEM;
		ev->extra.ptr = (const char *)(uintptr_t)(at + 1);
	}
	j->ev[j->n++] = *ev;
	return 0;
}

size_t tk__tkb_batch = 8u << 20;
int tk__tkb_batch_all;

/* Decodes j into its batch (a thread's work), notes included: all of it,
 * or as far as the batch's events and text reach tk__tkb_batch bytes (a
 * chunk can make far more of them than its bytes), the decoder then going
 * with j for the caller to decode the rest. */
static void decode_batch(tdec *d, tjob *j, const tk_reader_opts *o)
{
	j->n = j->idx = 0;
	j->missed = 0;
	j->end = DEC_OK;
	/* the decoder renders the args into the batch's text */
	tk__buf own = d->args;
	d->args = j->text;
	d->args.len = 0;
	d->append = 1;
	int rc = dec_start(d, j), cut = 0;
	size_t per = sizeof *j->ev + sizeof *j->before + o->note_size;
	while (!rc) {
		if (j->n && j->idx < j->count && j->n * per + d->args.len >= tk__tkb_batch) {
			cut = 1;
			break;
		}
		rc = dec_next(d, j);
		if (rc == DEC_MISS) {
			d->args.len = d->abase;
			j->missed++;
			rc = 0;
		} else if (rc == DEC_OK) {
			rc = batch_keep(d, j);
		}
	}
	if (rc != DEC_DONE && !cut) {
		j->end = rc;
		j->bad = d->bad;
	}
	j->text = d->args;
	d->args = own;
	d->append = 0;
	if (cut && !j->more && !(j->more = calloc(1, sizeof *j->more))) {
		j->end = TK_ERR_NOMEM;
	} else if (cut) { /* this thread goes on with the job's spare decoder */
		tdec t = *j->more;
		*j->more = *d;
		*d = t;
		j->more_at = j->idx;
		j->cut = 1;
	}
	tk__batch_fix(j->ev, j->n, &j->text);
	tk__batch_notes(o, j->ev, j->n, &j->notes, &j->notes_cap, &j->summary);
	if (j->render)
		tk__batch_render(o, j->ev, j->n, &j->rtext, &j->rend, &j->rend_cap);
	j->idx = 0;
	j->batch = 1;
}

/* ---- the jobs, in file order, and the threads that decode them ---- */

struct tpool {
	tk__workers W; /* its lock guards the jobs' states */
	tstate *s;
	const tk_reader_opts *o;
};

/* A settled events job whose records no thread has taken (P->W.mu held). */
static int decodable(const tjob *j)
{
	return j->settled && j->kind == J_EVENTS && j->count && j->status == J_READ;
}

/* The first job in file order with work no thread has taken: a payload
 * to inflate, or records to decode (P->W.mu held). */
static tjob *first_work(tstate *s)
{
	for (tjob *j = s->head; j; j = j->next)
		if (j->zst == Z_WAIT || decodable(j))
			return j;
	return NULL;
}

/* Inflates j's payload here (P->W.mu held, let go of meanwhile). */
static void inflate_here(tpool *P, tthr *t, tjob *j)
{
	j->zst = Z_TAKEN;
	pthread_mutex_unlock(&P->W.mu);
	int rc = inflate_payload(&t->z, &t->z_init, (const unsigned char *)j->zin.p, j->zin.len, &j->pay, j->raw);
	pthread_mutex_lock(&P->W.mu);
	j->zok = rc;
	j->zst = Z_DONE;
	tk__workers_done(&P->W);
}

/* Decodes j into its batch here (P->W.mu held, let go of meanwhile). */
static void decode_here(tpool *P, tthr *t, tjob *j)
{
	size_t done = 0, waiting = 0;
	for (const tjob *x = P->s->head; x; x = x->next) {
		done += x->status == J_DONE;
		waiting += decodable(x) && x != j;
	}
	j->render = tk__render_now(P->o, t == &P->s->me, done, waiting);
	j->status = J_TAKEN;
	pthread_mutex_unlock(&P->W.mu);
	decode_batch(&t->dec, j, P->o);
	pthread_mutex_lock(&P->W.mu);
	j->status = J_DONE;
	tk__workers_done(&P->W);
}

/* The pool's step: the first work in file order (a payload to inflate,
 * records to decode) with this thread's decoder and z_stream. */
static int pool_step(void *owner, void *t)
{
	tpool *P = owner;
	tjob *j = first_work(P->s);
	if (j && j->zst == Z_WAIT)
		inflate_here(P, t, j);
	else if (j)
		decode_here(P, t, j);
	return j != NULL;
}

static void pool_thr_fini(void *owner, void *t)
{
	(void)owner;
	thr_free(t);
}

static const tk__workers_ops pool_ops = {sizeof(tthr), NULL, pool_thr_fini, pool_step};

static void pool_free(tstate *s)
{
	tpool *P = s->pool;
	if (!P)
		return;
	tk__workers_free(&P->W);
	free(P);
	s->pool = NULL;
}

/* With opts.threads > 1: threads - 1 threads decode the chunks read ahead
 * while the caller hands events out (and decodes too while it waits).
 * None started: the caller decodes every chunk itself, in the same order. */
static void pool_start(tk_reader *r)
{
	tstate *s = r->fs;
	s->pool_tried = 1;
	s->max_jobs = 1;
	unsigned nth = r->opts.threads > TK__TKB_THREADS ? TK__TKB_THREADS : r->opts.threads;
	if (nth < 2)
		return;
	tpool *P = calloc(1, sizeof *P);
	if (!P)
		return;
	P->s = s;
	P->o = &r->opts;
	tk__workers_init(&P->W, &pool_ops, P);
	if (!tk__workers_start(&P->W, nth - 1, "tk-parse")) {
		tk__workers_free(&P->W);
		free(P);
		return;
	}
	s->pool = P;
	s->max_jobs = nth + 2;
	s->max_ahead = (size_t)nth * TK__TKB_AHEAD;
}

/* A job to read into: a spare one, or a new one. */
static tjob *job_take(tstate *s)
{
	tjob *j = s->spare;
	if (j)
		s->spare = j->next;
	else if (!(j = calloc(1, sizeof *j)))
		return NULL;
	j->next = NULL;
	j->pay.len = 0;
	j->settled = j->zok = 0;
	j->zst = Z_NONE;
	j->status = J_READ;
	j->batch = j->cut = 0;
	j->n = j->idx = 0;
	j->end = DEC_OK;
	j->missed = j->rest = j->counted = 0;
	j->complete = 0;
	j->bad_chunks = j->skipped_bytes = j->lost_events = 0;
	return j;
}

/* Done with j: kept for the next, or freed. */
static void job_recycle(tstate *s, tjob *j)
{
	tk__err_free(&j->err);
	size_t n = 0;
	for (tjob *k = s->spare; k; k = k->next)
		n++;
	if (n >= 2) {
		job_free(j);
		return;
	}
	j->next = s->spare;
	s->spare = j;
}

/* Reads the next chunk into j on the caller's thread. The warnings found
 * on the way, an error, and the counts of damaged chunks go with j: they
 * are the reader's when j is handed out, in file order. */
static void read_job(tk_reader *r, tjob *j)
{
	tstate *s = r->fs;
	tk__err keep = r->err;
	memset(&r->err, 0, sizeof r->err);
	int rc = next_chunk(r, j);
	if (rc < 0) {
		if (!r->err.code)
			tk__err_set(&r->err, rc, "%s: %s", r->name, tk_strerror(rc));
		j->kind = J_FAIL;
	}
	j->err = r->err;
	r->err = keep;
	j->bad_chunks = s->pend_bad;
	j->skipped_bytes = s->pend_skipped;
	j->lost_events = s->pend_lost;
	s->pend_bad = s->pend_skipped = s->pend_lost = 0;
	if (j->kind == J_FAIL || j->kind == J_END || j->kind == J_TRUNC)
		s->rd_end = 1;
}

/* Settles the queued jobs in file order, as far as the first whose
 * payload is still being inflated (P->W.mu held where there are threads,
 * let go of meanwhile). Only the caller's thread settles: the
 * dictionaries grow in file order. */
static void settle_ready(tk_reader *r)
{
	tstate *s = r->fs;
	tpool *P = s->pool;
	for (tjob *j = s->head; j; j = j->next) {
		if (j->kind == J_FAIL)
			return; /* the reader ends there: nothing after it is settled */
		if (j->kind != J_EVENTS || j->settled)
			continue;
		if (j->zst == Z_WAIT || j->zst == Z_TAKEN)
			return;
		if (P)
			pthread_mutex_unlock(&P->W.mu);
		settle(r, j);
		if (P)
			pthread_mutex_lock(&P->W.mu);
		j->settled = 1;
		if (P)
			tk__workers_wake(&P->W);
		if (j->kind == J_FAIL)
			return; /* settling it failed: the jobs after it are never handed out */
	}
}

/* The next job in file order, taken off the queue, after reading ahead
 * to fill it and settling it. A compressed chunk is inflated by a thread
 * (the caller's too, while it waits). A J_EVENTS job that no thread took
 * is the caller's to decode as it hands the events out; one a thread took
 * is waited for, while the caller inflates or decodes another. NULL: out
 * of memory. */
static tjob *next_job(tk_reader *r)
{
	tstate *s = r->fs;
	tpool *P = s->pool;
	if (P)
		pthread_mutex_lock(&P->W.mu);
	while (!s->rd_end && s->n_jobs < s->max_jobs && (!s->n_jobs || s->ahead < s->max_ahead)) {
		tjob *j = job_take(s);
		if (!j)
			break;
		if (P)
			pthread_mutex_unlock(&P->W.mu);
		read_job(r, j);
		if (P)
			pthread_mutex_lock(&P->W.mu);
		if (s->tail)
			s->tail->next = j;
		else
			s->head = j;
		s->tail = j;
		s->n_jobs++;
		j->counted_ahead = j->zst ? j->raw : j->pay.len;
		s->ahead += j->counted_ahead;
		if (P)
			tk__workers_wake(&P->W);
	}
	tjob *j = s->head;
	for (;;) {
		settle_ready(r);
		if (!P || !j || j->kind != J_EVENTS || j->settled)
			break;
		/* the first job's payload is still to be inflated */
		tk__workers_help(&P->W, &s->me);
	}
	if (P && j && tk__tkb_batch_all && decodable(j))
		decode_here(P, &s->me, j); /* as a thread would */
	while (P && j && j->status == J_TAKEN)
		tk__workers_help(&P->W, &s->me);
	if (j) {
		if (j->status == J_READ)
			j->status = J_TAKEN; /* the caller's */
		s->head = j->next;
		if (!s->head)
			s->tail = NULL;
		s->n_jobs--;
		s->ahead -= j->counted_ahead;
	}
	if (P)
		pthread_mutex_unlock(&P->W.mu);
	return j;
}

/* A job's turn: what was found reading it becomes the reader's; then what
 * it is. 0: events follow (s->cur) or the next job; else TK_EOF or an
 * error. */
static int begin_job(tk_reader *r, tjob *j)
{
	tstate *s = r->fs;
	if (tk__err_take_warnings(&r->err, &j->err))
		return nomem(r);
	s->info.bad_chunks += j->bad_chunks;
	s->info.skipped_bytes += j->skipped_bytes;
	s->info.lost_events += j->lost_events;
	if (j->complete) /* an error after the end chunk leaves the file complete */
		s->info.complete = 1;
	switch (j->kind) {
	case J_FAIL: return tk__err_copy(&r->err, &j->err);
	case J_TRUNC: return truncated_at(r, j->at, j->tail, j->where);
	case J_END:
		s->st = ST_END;
		return 0;
	case J_META: return read_meta(r, j);
	case J_ANCHOR: return read_anchor(r, j);
	default: break;
	}
	if (!j->count)
		return 0;
	s->batched += (uint64_t)j->batch;
	s->cur = j;
	s->st = ST_EVENTS;
	if (!j->batch && dec_start(&s->me.dec, j))
		return nomem(r);
	return 0;
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

/* The next event of the job being handed out: TK_OK, DEC_DONE, or an error. */
static int job_event(tk_reader *r, tjob *j, const tk_event **ev)
{
	tstate *s = r->fs;
	if (j->batch) {
		/* the events dropped before each kept one are counted as it is
		 * handed out, as on one thread */
		uint64_t upto = j->idx < j->n ? j->before[j->idx] : j->missed;
		s->lost_strings += upto - j->counted;
		s->info.lost_events += upto - j->counted;
		j->counted = upto;
		if (j->idx < j->n) {
			if (j->notes)
				r->note_par = j->notes + j->idx * r->opts.note_size;
			if (j->render && j->rend) {
				r->rend_par = &j->rend[j->idx];
				r->rend_text = j->rtext.p;
			}
			*ev = &j->ev[j->idx++];
			return TK_OK;
		}
		if (j->cut) {
			/* the batch stopped at its size: the rest is decoded here, by
			 * the decoder where it stopped (the caller's own is kept with
			 * the job) */
			tdec t = s->me.dec;
			s->me.dec = *j->more;
			*j->more = t;
			j->idx = j->more_at;
			j->batch = j->cut = 0;
			s->cut++;
		}
	}
	if (!j->batch) {
		for (;;) {
			int rc = dec_next(&s->me.dec, j);
			if (rc == DEC_OK) {
				*ev = &s->me.dec.ev;
				return TK_OK;
			}
			if (rc != DEC_MISS) {
				if (rc != DEC_DONE)
					j->end = rc, j->bad = s->me.dec.bad;
				break;
			}
			s->lost_strings++;
			s->info.lost_events++;
		}
	}
	if (j->end == DEC_REST) {
		s->lost_strings += j->rest;
		s->info.lost_events += j->rest;
	} else if (j->end == DEC_BAD) {
		return chunk_bad(r, j->at, j->bad);
	} else if (j->end < 0) {
		return nomem(r);
	}
	return DEC_DONE;
}

static int tkb_next1(tk_reader *r, const tk_event **ev);

static int tkb_next(tk_reader *r, const tk_event **ev)
{
	int rc = tkb_next1(r, ev);
	if (rc != TK_OK)
		pool_free(r->fs); /* the reader has ended: its threads too */
	return rc;
}

static int tkb_next1(tk_reader *r, const tk_event **ev)
{
	tstate *s = r->fs;
	if (!s->pool_tried && s->st != ST_END)
		pool_start(r);
	for (;;) {
		if (s->st == ST_END)
			return finish(r);
		if (s->cur) {
			int rc = job_event(r, s->cur, ev);
			if (rc != DEC_DONE)
				return rc;
			job_recycle(s, s->cur);
			s->cur = NULL;
			s->st = ST_CHUNKS;
			continue;
		}
		tjob *j = next_job(r);
		if (!j)
			return nomem(r);
		int rc = begin_job(r, j);
		if (j != s->cur)
			job_recycle(s, j);
		if (rc && rc != TK_EOF) /* at TK_EOF the reader has ended (finish) */
			return rc;
	}
}

int tk_reader_tkb_info(const tk_reader *r, tk_tkb_info *out)
{
	if (!r || !out || r->fmt != &tk__format_tkb || !r->fs)
		return TK_ERR_ARG;
	*out = ((const tstate *)r->fs)->info;
	return 0;
}

uint64_t tk__tkb_batched(const tk_reader *r)
{
	return r && r->fmt == &tk__format_tkb && r->fs ? ((const tstate *)r->fs)->batched : 0;
}

uint64_t tk__tkb_cut(const tk_reader *r)
{
	return r && r->fmt == &tk__format_tkb && r->fs ? ((const tstate *)r->fs)->cut : 0;
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
	uint64_t repaired = e->repaired;
	int rc = tk__tkb_enc_event(e, ev);
	w->repaired += e->repaired - repaired;
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
static const tk__wfmt tkb_wr = {0, tw_open, tw_add_meta, NULL, tw_write, tw_close, tw_free, NULL};


static const char *const tkb_suffixes[] = {".tkb", NULL};

const tk__format tk__format_tkb = {TK_FORMAT_TKB, "tkb", tkb_suffixes, TK__FMT_BINARY, &tkb_rd, &tkb_wr};
