/* gzip.c: the gzip filter: inflating input (one member after another, as `cat a.gz b.gz`), and output deflated in independent blocks that threads compress in parallel. */
#include <stdlib.h>

#include "formats/formats.h"

/* ---- input ---- */

#define TK__ZIN (256 * 1024)

typedef struct gz_in {
	z_stream z;
	unsigned char *zin;
	int eof_raw; /* the stream below has ended */
	int done;    /* inflate saw the end and no further member follows */
} gz_in;

static int gz_bid(const unsigned char *p, size_t n)
{
	return n >= 2 && p[0] == 0x1f && p[1] == 0x8b ? 100 : 0;
}

static void gz_close(void *st)
{
	gz_in *g = st;
	if (!g)
		return;
	inflateEnd(&g->z);
	free(g->zin);
	free(g);
}

static int gz_open(tk__src *s, int level)
{
	gz_in *g = calloc(1, sizeof *g);
	if (!g || !(g->zin = malloc(TK__ZIN))) {
		free(g);
		snprintf(s->err, sizeof s->err, "out of memory");
		return TK_ERR_NOMEM;
	}
	if (inflateInit2(&g->z, 16 + MAX_WBITS) != Z_OK) {
		free(g->zin);
		free(g);
		snprintf(s->err, sizeof s->err, "zlib init failed");
		return TK_ERR_NOMEM;
	}
	s->st[level].st = g;
	return 0;
}

/* Raw bytes into zin from the stage below; count, 0 at its end, <0 error. */
static long refill(tk__src *s, int level, gz_in *g, size_t keep)
{
	long n = tk__src_read_at(s, level - 1, g->zin + keep, TK__ZIN - keep);
	if (n == 0)
		g->eof_raw = 1;
	if (n >= 0) {
		g->z.next_in = g->zin;
		g->z.avail_in = (uInt)(keep + (size_t)n);
	}
	return n;
}

/* After one member ends: another may follow (as `cat a.gz b.gz`). */
static int next_member(tk__src *s, int level, gz_in *g)
{
	if (!g->z.avail_in && !g->eof_raw && refill(s, level, g, 0) < 0)
		return -1;
	if (!g->z.avail_in) {
		g->done = 1;
		return 0;
	}
	if (g->z.avail_in == 1 && !g->eof_raw && g->z.next_in[0] == 0x1f) {
		g->zin[0] = 0x1f; /* need the second magic byte */
		if (refill(s, level, g, 1) < 0)
			return -1;
	}
	if (g->z.avail_in >= 2 && g->z.next_in[0] == 0x1f && g->z.next_in[1] == 0x8b) {
		inflateReset(&g->z);
		return 0;
	}
	snprintf(s->err, sizeof s->err, "trailing bytes after the gzip data");
	return -1;
}

static long gz_read(tk__src *s, int level, unsigned char *dst, size_t cap)
{
	gz_in *g = s->st[level].st;
	g->z.next_out = dst;
	g->z.avail_out = (uInt)(cap > (1u << 30) ? (1u << 30) : cap);
	uInt want = g->z.avail_out;
	while (g->z.avail_out == want && !g->done) {
		if (!g->z.avail_in && !g->eof_raw && refill(s, level, g, 0) < 0)
			return -1;
		if (!g->z.avail_in && g->eof_raw) {
			s->cut = "gzip"; /* the stream stopped inside a member */
			g->done = 1;
			break;
		}
		int rc = inflate(&g->z, Z_NO_FLUSH);
		if (rc == Z_STREAM_END) {
			if (next_member(s, level, g))
				return -1;
		} else if (rc == Z_DATA_ERROR || rc == Z_NEED_DICT) {
			snprintf(s->err, sizeof s->err, "corrupt gzip data: %s",
			         g->z.msg ? g->z.msg : "invalid stream");
			return -1;
		} else if (rc == Z_MEM_ERROR) {
			snprintf(s->err, sizeof s->err, "out of memory in zlib");
			return -1;
		}
	}
	return (long)(want - g->z.avail_out);
}

const tk__ifilter tk__ifilter_gzip = {"gzip", 0, ".gz", gz_bid, gz_open, gz_read, gz_close};

/* ---- output ----
 * One gzip member: a header, then each block raw-deflated on its own with
 * the last 32 KiB before it as its dictionary and ended by a sync flush (so
 * blocks can be compressed in parallel and the size is exact after each),
 * then an empty final block and the trailer. The bytes do not depend on
 * how many threads compressed them. */

#define TK__DICT 32768

typedef struct gz_out {
	int level;
	unsigned char dict[TK__DICT]; /* the next block's dictionary: the last 32 KiB handed over */
	size_t dict_len;
	uint32_t crc; /* of the blocks written */
} gz_out;

typedef struct gz_ctx {
	unsigned char dict[TK__DICT];
	size_t dict_len;
	uint32_t crc; /* of the block's raw bytes */
} gz_ctx;

static void *gzo_open(int level, tk__buf *hdr, char *err)
{
	gz_out *g = calloc(1, sizeof *g);
	if (!g) {
		snprintf(err, TK__ERRLEN, "out of memory");
		return NULL;
	}
	g->level = level > 0 && level <= 9 ? level : 6;
	/* the header as zlib writes it: no name, no time, Unix */
	unsigned char h[10] = {0x1f, 0x8b, 8, 0, 0, 0, 0, 0, g->level == 9 ? 2 : g->level == 1 ? 4 : 0, 3};
	if (tk__buf_append(hdr, h, sizeof h)) {
		free(g);
		snprintf(err, TK__ERRLEN, "out of memory");
		return NULL;
	}
	return g;
}

static void gzo_close(void *st)
{
	free(st);
}

static void *gzo_enc_new(void *st, char *err)
{
	gz_out *g = st;
	z_stream *z = calloc(1, sizeof *z);
	if (!z || deflateInit2(z, g->level, Z_DEFLATED, -MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
		free(z);
		snprintf(err, TK__ERRLEN, "zlib deflate init failed");
		return NULL;
	}
	return z;
}

static void gzo_enc_free(void *enc)
{
	if (enc)
		deflateEnd(enc);
	free(enc);
}

/* The block takes the dictionary; the next one's is the last 32 KiB so far. */
static void gzo_prepare(void *st, void *ctx, const tk__buf *raw)
{
	gz_out *g = st;
	gz_ctx *c = ctx;
	memcpy(c->dict, g->dict, g->dict_len);
	c->dict_len = g->dict_len;
	if (raw->len >= TK__DICT) {
		memcpy(g->dict, raw->p + raw->len - TK__DICT, TK__DICT);
		g->dict_len = TK__DICT;
		return;
	}
	size_t keep = g->dict_len + raw->len > TK__DICT ? TK__DICT - raw->len : g->dict_len;
	memmove(g->dict, g->dict + g->dict_len - keep, keep);
	memcpy(g->dict + keep, raw->p, raw->len);
	g->dict_len = keep + raw->len;
}

static int gzo_encode(void *enc, void *ctx, const tk__buf *raw, tk__buf *out, char *err)
{
	z_stream *z = enc;
	gz_ctx *c = ctx;
	out->len = 0;
	if (deflateReset(z) != Z_OK ||
	    (c->dict_len && deflateSetDictionary(z, c->dict, (uInt)c->dict_len) != Z_OK)) {
		snprintf(err, TK__ERRLEN, "zlib deflate failed");
		return TK_ERR_IO;
	}
	if (tk__buf_reserve(out, deflateBound(z, (uLong)raw->len) + 64)) {
		snprintf(err, TK__ERRLEN, "out of memory");
		return TK_ERR_NOMEM;
	}
	z->next_in = (unsigned char *)raw->p;
	z->avail_in = (uInt)raw->len;
	for (;;) {
		z->next_out = (unsigned char *)out->p + out->len;
		z->avail_out = (uInt)(out->cap - out->len - 1);
		int rc = deflate(z, Z_SYNC_FLUSH);
		out->len = out->cap - 1 - z->avail_out;
		if (rc == Z_STREAM_ERROR) {
			snprintf(err, TK__ERRLEN, "zlib deflate failed");
			return TK_ERR_IO;
		}
		if (z->avail_out) /* all in, and the flush is complete */
			break;
		if (tk__buf_reserve(out, out->cap)) {
			snprintf(err, TK__ERRLEN, "out of memory");
			return TK_ERR_NOMEM;
		}
	}
	c->crc = (uint32_t)crc32(0, (const unsigned char *)raw->p, (uInt)raw->len);
	return 0;
}

static void gzo_written(void *st, const void *ctx, size_t raw_len)
{
	gz_out *g = st;
	g->crc = (uint32_t)crc32_combine(g->crc, ((const gz_ctx *)ctx)->crc, (z_off_t)raw_len);
}

/* An empty final block (the stream is byte-aligned after the sync
 * flushes), the crc and the size. */
static int gzo_finish(void *st, uint64_t raw_total, tk__buf *out, char *err)
{
	gz_out *g = st;
	unsigned char t[10] = {3, 0};
	for (int i = 0; i < 4; i++) {
		t[2 + i] = (unsigned char)(g->crc >> (8 * i));
		t[6 + i] = (unsigned char)(raw_total >> (8 * i));
	}
	if (tk__buf_append(out, t, sizeof t)) {
		snprintf(err, TK__ERRLEN, "out of memory");
		return TK_ERR_NOMEM;
	}
	return 0;
}

/* Deflate never picks a block coding larger than stored, and stored
 * blocks cost 5 bytes per 64 KiB; the constant covers a block's sync
 * flush, the final block and the 8-byte trailer. */
static uint64_t gzo_bound(uint64_t n)
{
	return n + (n >> 8) + 64;
}

const tk__ofilter tk__ofilter_gzip = {
	"gzip",      ".gz",       sizeof(gz_ctx), gzo_open,   gzo_close,  gzo_enc_new, gzo_enc_free,
	gzo_prepare, gzo_encode, gzo_written,    gzo_finish, gzo_bound};
