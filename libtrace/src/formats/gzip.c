/* gzip.c: the gzip filter: inflating input (one member after another, as `cat a.gz b.gz`), and output deflated in independent blocks that threads compress in parallel. Built with ISA-L (TK_HAVE_ISAL), inflating and the fast levels 1-3 go through it; built with libdeflate (TK_HAVE_LIBDEFLATE), levels 4-9 go through it; the rest through zlib. TK_GZIP=zlib in the environment picks zlib for everything. */
#include <stdlib.h>

#include "formats/formats.h"
#include "inflate_par.h"

#ifdef TK_HAVE_ISAL
#include <isa-l/crc.h>
#include <isa-l/igzip_lib.h>
#endif
#ifdef TK_HAVE_LIBDEFLATE
#include <libdeflate.h>
#endif

#include "core/deflate_scan.h"

/* 1 unless TK_GZIP is "zlib" (read at each open: tests and users compare
 * the libraries): zlib for everything, no other inflater nor deflater. */
static int fast_libs(void)
{
	const char *e = getenv("TK_GZIP");
	return !(e && strcmp(e, "zlib") == 0);
}

/* 1 when ISA-L does the work it can: built with it, and TK_GZIP allows. */
static int use_isal(void)
{
#ifdef TK_HAVE_ISAL
	return fast_libs();
#else
	return 0;
#endif
}


/* ---- input ---- */

#define TK__ZIN (256 * 1024)
#define GZ_ENDS 4

typedef struct gz_in {
	z_stream z; /* zlib's inflater, or only next_in/avail_in with ISA-L's */
#ifdef TK_HAVE_ISAL
	struct inflate_state *is; /* ISA-L's inflater; NULL: zlib's */
#endif
	unsigned char *zin;
	int eof_raw; /* the stream below has ended */
	int done;    /* inflate saw the end and no further member follows */
	int failed;  /* an error (in s->err) waits behind the bytes given out before it */
	uint64_t raw_got;      /* bytes read from the stage below */
	uint64_t member_start; /* the current member's offset in them */
	uint64_t member_out;   /* bytes of it given out */
	/* after switch_to_zlib(): bytes [replay_off, replay_end) of the stage
	 * below are read again, and the first `skip` bytes inflated dropped;
	 * once a member was inflated on threads, replay_end is UINT64_MAX: the
	 * rest of the input is read from there on with pread */
	uint64_t replay_off, replay_end, skip;
	tk__ipar *par; /* the member inflated on threads (gz_threads) */
	/* where the reads from the stage below ended before it (ISA-L, on
	 * damage, gives bytes up to where its input ran out: read again, the
	 * input comes in the same pieces); more than GZ_ENDS: no threads */
	uint64_t ends[GZ_ENDS];
	int n_ends;
} gz_in;

unsigned tk__gz_par_min;

static int gz_bid(const unsigned char *p, size_t n)
{
	return n >= 2 && p[0] == 0x1f && p[1] == 0x8b ? 100 : 0;
}

static void gz_close(void *st)
{
	gz_in *g = st;
	if (!g)
		return;
	tk__ipar_free(g->par);
#ifdef TK_HAVE_ISAL
	if (g->is)
		free(g->is);
	else
#endif
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
		s->err_nomem = 1;
		return TK_ERR_NOMEM;
	}
#ifdef TK_HAVE_ISAL
	/* ISA-L where a member can be read again (switch_to_zlib) */
	if (use_isal() && level == 1 && tk__src_can_pread(s)) {
		if (!(g->is = malloc(sizeof *g->is))) {
			free(g->zin);
			free(g);
			snprintf(s->err, sizeof s->err, "out of memory");
			s->err_nomem = 1;
			return TK_ERR_NOMEM;
		}
		isal_inflate_init(g->is);
		g->is->crc_flag = ISAL_GZIP;
		s->st[level].st = g;
		return 0;
	}
#endif
	if (inflateInit2(&g->z, 16 + MAX_WBITS) != Z_OK) {
		free(g->zin);
		free(g);
		snprintf(s->err, sizeof s->err, "zlib init failed");
		return TK_ERR_NOMEM;
	}
	s->st[level].st = g;
	return 0;
}

/* Raw bytes into zin from the stage below (or again, while replaying);
 * count, 0 at its end, <0 error. */
static long refill(tk__src *s, int level, gz_in *g, size_t keep)
{
	long n;
	if (g->replay_off < g->replay_end) {
		uint64_t left = g->replay_end - g->replay_off;
		if (g->replay_end == UINT64_MAX) {
			/* after the threads: in the pieces the stage below gave, then
			 * would have given (TK__ZIN each) */
			uint64_t b = 0, last = g->n_ends ? g->ends[g->n_ends - 1] : 0;
			for (int i = 0; i < g->n_ends && !b; i++)
				if (g->ends[i] > g->replay_off)
					b = g->ends[i];
			if (!b)
				b = last + ((g->replay_off - last) / TK__ZIN + 1) * TK__ZIN;
			left = b - g->replay_off;
		}
		n = tk__src_pread(s, g->replay_off, g->zin + keep, left < TK__ZIN - keep ? (size_t)left : TK__ZIN - keep);
		if (n == 0 && g->replay_end == UINT64_MAX) {
			g->eof_raw = 1; /* read with pread to the end */
		} else if (n == 0) {
			snprintf(s->err, sizeof s->err, "the file became shorter while it was read");
			return -1;
		}
		if (n > 0) {
			g->replay_off += (uint64_t)n;
			if (g->replay_off > g->raw_got) { /* new bytes: counted as read */
				s->bytes_in += g->replay_off - g->raw_got;
				g->raw_got = g->replay_off;
			}
		}
	} else {
		n = tk__src_read_at(s, level - 1, g->zin + keep, TK__ZIN - keep);
		if (n == 0)
			g->eof_raw = 1;
		if (n > 0) {
			g->raw_got += (uint64_t)n;
			if (g->n_ends < GZ_ENDS)
				g->ends[g->n_ends] = g->raw_got;
			if (g->n_ends <= GZ_ENDS)
				g->n_ends++;
		}
	}
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
		g->member_start = (g->replay_off < g->replay_end ? g->replay_off : g->raw_got) - g->z.avail_in;
		g->member_out = 0;
		g->skip = 0;
#ifdef TK_HAVE_ISAL
		if (g->is) {
			isal_inflate_reset(g->is);
			g->is->crc_flag = ISAL_GZIP;
			return 0;
		}
#endif
		inflateReset(&g->z);
		return 0;
	}
	snprintf(s->err, sizeof s->err, "trailing bytes after the gzip data");
	return -1;
}

enum { STEP_MORE, STEP_END, STEP_FAIL };

/* One call of the inflater on what g->z holds, into *next_out (*avail_out bytes free). */
static int inflate_step(tk__src *s, gz_in *g, unsigned char **next_out, uInt *avail_out)
{
#ifdef TK_HAVE_ISAL
	if (g->is) {
		struct inflate_state *is = g->is;
		is->next_in = g->z.next_in;
		is->avail_in = g->z.avail_in;
		is->next_out = *next_out;
		is->avail_out = *avail_out;
		int rc = isal_inflate(is);
		g->z.next_in = is->next_in;
		g->z.avail_in = is->avail_in;
		*next_out = is->next_out;
		*avail_out = is->avail_out;
		if (rc < 0 || rc == ISAL_NEED_DICT)
			return STEP_FAIL; /* gz_read hands the member to zlib, which names the damage */
		return is->block_state == ISAL_BLOCK_FINISH ? STEP_END : STEP_MORE;
	}
#endif
	g->z.next_out = *next_out;
	g->z.avail_out = *avail_out;
	int rc = inflate(&g->z, Z_NO_FLUSH);
	*next_out = g->z.next_out;
	*avail_out = g->z.avail_out;
	if (rc == Z_STREAM_END)
		return STEP_END;
	if (rc == Z_DATA_ERROR || rc == Z_NEED_DICT) {
		snprintf(s->err, sizeof s->err, "corrupt gzip data: %s",
		         g->z.msg ? g->z.msg : "invalid stream");
		return STEP_FAIL;
	}
	if (rc == Z_MEM_ERROR) {
		snprintf(s->err, sizeof s->err, "out of memory in zlib");
		s->err_nomem = 1;
		return STEP_FAIL;
	}
	return STEP_MORE;
}

#ifdef TK_HAVE_ISAL
/* Where ISA-L stops short of zlib (a stream that ends inside a member:
 * ISA-L decodes with lookahead and holds back the last symbol or so that
 * zlib still gives) or fails (damage, which zlib names more closely), zlib
 * takes over: it inflates the member again from its start, read again
 * from the stage below, drops the bytes already given out and goes on.
 * From there the bytes, the warnings and the errors are zlib's. (ISA-L
 * accepts some Huffman tables that zlib refuses: on such damage it gives
 * bytes zlib does not until the CRC or the end hands the member over.) */
static int switch_to_zlib(tk__src *s, gz_in *g)
{
	free(g->is);
	g->is = NULL;
	memset(&g->z, 0, sizeof g->z);
	if (inflateInit2(&g->z, 16 + MAX_WBITS) != Z_OK) {
		snprintf(s->err, sizeof s->err, "zlib init failed");
		return -1;
	}
	g->replay_off = g->member_start;
	if (g->replay_end != UINT64_MAX)
		g->replay_end = g->raw_got;
	g->skip = g->member_out;
	g->eof_raw = 0;
	return 0;
}
#endif

/* ---- one member inflated on threads (inflate_par.c) ---- */

static long par_pread(void *ctx, uint64_t off, unsigned char *dst, size_t cap)
{
	return tk__src_pread_mt(ctx, off, dst, cap);
}

/* From here on the member is inflated by tk__ipar on threads, where the
 * input can be read again (a file or memory, with pread), it is the first
 * member and large enough, and TK_GZIP does not ask for zlib alone: the
 * bytes given out so far are dropped from the threads' output. The rest of
 * the input is then read with pread. */
static void gz_threads(tk__src *s, int level, unsigned threads)
{
	gz_in *g = s->st[level].st;
	/* from 8 threads asked; TK_GZIP_PARTS=N in the environment: from N (0: never) */
	const char *e = getenv("TK_GZIP_PARTS");
	unsigned min = tk__gz_par_min ? tk__gz_par_min : e && *e ? (unsigned)strtoul(e, NULL, 10) : 8;
	if (!min || level != 1 || !tk__src_can_pread(s) || !fast_libs() || g->par || g->done || g->failed ||
	    g->member_start || threads < min || g->replay_off < g->replay_end || g->n_ends > GZ_ENDS)
		return;
	unsigned char hdr[4096], t[4];
	long n = tk__src_pread(s, 0, hdr, sizeof hdr);
	size_t h = n > 0 ? tk__gzip_header_len(hdr, (size_t)n) : 0;
	uint64_t size = tk__src_base_size(s);
	if (!h || size == UINT64_MAX || size < h + 8 || tk__src_pread(s, size - 4, t, 4) != 4)
		return; /* a header of over 4 KiB, or no room for the trailer */
	/* parts of about 6 MiB of output, by the ratio of the last member's
	 * length (its trailer's, which is the length modulo 4 GiB: where that
	 * is not plausible, 512 KiB), 32 KiB to 1 MiB of gzip each */
	uint64_t in = size - h - 8, out = t[0] | (uint64_t)t[1] << 8 | (uint64_t)t[2] << 16 | (uint64_t)t[3] << 24;
	size_t part = 512 * 1024;
	if (out > in) {
		double p = 6.0 * 1024 * 1024 * (double)in / (double)out;
		part = p < 32 * 1024 ? 32 * 1024 : p > 1024 * 1024 ? 1024 * 1024 : (size_t)p;
	}
	if (tk__ipar_part_bytes)
		part = tk__ipar_part_bytes;
	if (in < 4 * (uint64_t)part)
		return; /* under 4 parts' worth: one thread */
	/* the threads inflate as much as the parse takes on about half the processors */
	tk__ipar *P = tk__ipar_start(par_pread, s, h, part, threads / 2 > 2 ? threads / 2 : 2);
	if (!P)
		return;
	g->par = P;
	g->skip = g->member_out;
	g->replay_off = g->raw_got;
	g->replay_end = UINT64_MAX;
	g->z.avail_in = 0;
}

/* The member's bytes from the threads; at its end the input goes on (with
 * pread) after its trailer, and where they cannot go on, the reader's own
 * inflater (ISA-L or zlib) inflates the member again from its start,
 * dropping the bytes given out. > 0, or 0 with g->par gone: go on as
 * without it. */
static long par_read(tk__src *s, int level, gz_in *g, unsigned char *dst, size_t cap)
{
	for (;;) {
		long n = tk__ipar_read(g->par, dst, cap);
		uint64_t at = tk__ipar_in_pos(g->par);
		if (at > g->raw_got) { /* progress: the input the parts given out reach */
			s->bytes_in += at - g->raw_got;
			g->raw_got = at;
		}
		if (n > 0 && g->skip) {
			size_t k = g->skip < (uint64_t)n ? (size_t)g->skip : (size_t)n;
			memmove(dst, dst + k, (size_t)n - k);
			g->skip -= k;
			n -= (long)k;
			if (!n)
				continue;
		}
		if (n > 0) {
			g->member_out += (uint64_t)n;
			return n;
		}
		if (n == 0) {
			g->replay_off = tk__ipar_end(g->par); /* the member ended, its trailer checked */
			if (g->replay_off > g->raw_got) {
				s->bytes_in += g->replay_off - g->raw_got;
				g->raw_got = g->replay_off;
			}
		} else {
			/* from the member's start on one thread, which meets the problem */
			g->replay_off = g->member_start;
			g->skip = g->member_out;
		}
#ifdef TK_HAVE_ISAL
		if (g->is) {
			isal_inflate_reset(g->is);
			g->is->crc_flag = ISAL_GZIP;
		} else
#endif
			inflateReset(&g->z);
		tk__ipar_free(g->par);
		g->par = NULL;
		g->z.avail_in = 0;
		g->eof_raw = 0;
		if (n == 0 && next_member(s, level, g))
			return -1;
		return 0;
	}
}

static long gz_read(tk__src *s, int level, unsigned char *dst, size_t cap)
{
	gz_in *g = s->st[level].st;
	if (g->failed)
		return -1;
	if (g->par) {
		long n = par_read(s, level, g, dst, cap);
		if (n)
			return n < 0 ? (g->failed = 1, -1) : n;
	}
	unsigned char *next_out = dst;
	uInt want = (uInt)(cap > (1u << 30) ? (1u << 30) : cap), avail_out = want;
	while (avail_out == want && !g->done) {
		if (!g->z.avail_in && !g->eof_raw && refill(s, level, g, 0) < 0)
			return -1;
		int at_end = !g->z.avail_in && g->eof_raw;
#ifdef TK_HAVE_ISAL
		if (at_end && g->is) {
			if (switch_to_zlib(s, g))
				return -1;
			continue;
		}
#endif
		uInt before = avail_out;
		/* at the end of the input too: zlib may still hold output (the
		 * rest of a match that did not fit the last call's room) */
		int rc = inflate_step(s, g, &next_out, &avail_out);
		if (at_end && rc == STEP_MORE && avail_out == before) {
			s->cut = "gzip"; /* the stream stopped inside a member */
			g->done = 1;
			break;
		}
#ifdef TK_HAVE_ISAL
		if (rc == STEP_FAIL && g->is) {
			next_out -= before - avail_out; /* zlib says how far the data is good */
			avail_out = before;
			if (switch_to_zlib(s, g))
				return -1;
			continue;
		}
#endif
		size_t got = before - avail_out;
		if (g->skip && got) {
			size_t k = g->skip < got ? (size_t)g->skip : got;
			memmove(next_out - got, next_out - got + k, got - k);
			next_out -= k;
			avail_out += (uInt)k;
			g->skip -= k;
			got -= k;
		}
		g->member_out += got;
		if (rc == STEP_FAIL || (rc == STEP_END && next_member(s, level, g))) {
			/* the bytes before the error first: the same however large the reads */
			g->failed = 1;
			return avail_out < want ? (long)(want - avail_out) : -1;
		}
	}
	return (long)(want - avail_out);
}

const tk__ifilter tk__ifilter_gzip = {"gzip", 0, ".gz", gz_bid, gz_open, gz_read, gz_close, gz_threads};

/* ---- output ----
 * One gzip member: a header, then each block raw-deflated on its own with
 * the last 32 KiB before it as its dictionary and ended by a sync flush (so
 * blocks can be compressed in parallel and the size is exact after each),
 * then an empty final block and the trailer. The bytes do not depend on
 * how many threads compressed them. */

#define TK__DICT 32768

typedef struct gz_out {
	int level;
	int isal; /* blocks go through ISA-L (levels 1-3 where it is built in) */
	int ld;   /* blocks go through libdeflate (levels 4-9 where it is built in) */
	unsigned char dict[TK__DICT]; /* the next block's dictionary: the last 32 KiB handed over */
	size_t dict_len;
	uint32_t crc; /* of the blocks written */
} gz_out;

typedef struct gz_ctx {
	unsigned char dict[TK__DICT];
	size_t dict_len;
	uint32_t crc; /* of the block's raw bytes */
} gz_ctx;

/* One thread's encoder. */
typedef struct gz_enc {
	int level;
	z_stream z; /* zlib's, initialized when z_ready */
	int z_ready;
#ifdef TK_HAVE_LIBDEFLATE
	struct libdeflate_compressor *ld;
	tk__dscan *scan;
#endif
#ifdef TK_HAVE_ISAL
	struct isal_zstream *isal;
	unsigned char *lvl_buf;
	size_t lvl_len;
	int isal_level;
#endif
} gz_enc;

static void *gzo_open(int level, tk__buf *hdr, char *err)
{
	gz_out *g = calloc(1, sizeof *g);
	if (!g) {
		snprintf(err, TK__ERRLEN, "out of memory");
		return NULL;
	}
	g->level = level > 0 && level <= 9 ? level : 6;
	g->isal = g->level <= 3 && use_isal();
#ifdef TK_HAVE_LIBDEFLATE
	g->ld = g->level >= 4 && fast_libs();
#endif
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

static void gzo_enc_free(void *enc)
{
	gz_enc *e = enc;
	if (!e)
		return;
#ifdef TK_HAVE_ISAL
	free(e->isal);
	free(e->lvl_buf);
#endif
#ifdef TK_HAVE_LIBDEFLATE
	if (e->ld)
		libdeflate_free_compressor(e->ld);
	tk__dscan_free(e->scan);
#endif
	if (e->z_ready)
		deflateEnd(&e->z);
	free(e);
}

/* zlib's deflate for the encoder (libdeflate's encoders start it when a
 * block needs it). */
static int z_start(gz_enc *e, char *err)
{
	if (e->z_ready)
		return 0;
	if (deflateInit2(&e->z, e->level, Z_DEFLATED, -MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
		snprintf(err, TK__ERRLEN, "zlib deflate init failed");
		return TK_ERR_NOMEM;
	}
	e->z_ready = 1;
	return 0;
}

static void *gzo_enc_new(void *st, char *err)
{
	gz_out *g = st;
	gz_enc *e = calloc(1, sizeof *e);
	if (!e) {
		snprintf(err, TK__ERRLEN, "out of memory");
		return NULL;
	}
	e->level = g->level;
#ifdef TK_HAVE_LIBDEFLATE
	if (g->ld) {
		if (!(e->ld = libdeflate_alloc_compressor(g->level)) || !(e->scan = tk__dscan_new())) {
			gzo_enc_free(e);
			snprintf(err, TK__ERRLEN, "out of memory");
			return NULL;
		}
		return e;
	}
#endif
#ifdef TK_HAVE_ISAL
	if (g->isal) {
		static const size_t lvl[] = {ISAL_DEF_LVL1_DEFAULT, ISAL_DEF_LVL2_DEFAULT, ISAL_DEF_LVL3_DEFAULT};
		e->lvl_len = lvl[g->level - 1];
		e->isal_level = g->level;
		if (!(e->isal = malloc(sizeof *e->isal)) || !(e->lvl_buf = malloc(e->lvl_len))) {
			free(e->isal);
			free(e);
			snprintf(err, TK__ERRLEN, "out of memory");
			return NULL;
		}
		return e;
	}
#endif
	if (z_start(e, err)) {
		free(e);
		return NULL;
	}
	return e;
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

#if defined(TK_HAVE_ISAL) || defined(TK_HAVE_LIBDEFLATE)
/* raw as stored blocks (not final): what a block that would not compress
 * becomes, so that it never grows past gzo_bound(). */
static int put_stored(const tk__buf *raw, tk__buf *out, char *err)
{
	out->len = 0;
	size_t n = raw->len;
	if (tk__buf_reserve(out, n + 5 * (n / 65535 + 1))) {
		snprintf(err, TK__ERRLEN, "out of memory");
		return TK_ERR_NOMEM;
	}
	const char *p = raw->p;
	do {
		size_t k = n > 65535 ? 65535 : n;
		unsigned char h[5] = {0, (unsigned char)k, (unsigned char)(k >> 8), (unsigned char)~k,
		                      (unsigned char)(~k >> 8)};
		memcpy(out->p + out->len, h, 5);
		memcpy(out->p + out->len + 5, p, k);
		out->len += 5 + k;
		p += k;
		n -= k;
	} while (n);
	return 0;
}

/* The bytes of raw stored, with the 5 bytes of each stored block's header. */
static size_t stored_size(const tk__buf *raw)
{
	return raw->len + 5 * (raw->len / 65535 + 1);
}
#endif

int tk__gzip_no_walk;

#ifdef TK_HAVE_LIBDEFLATE
/* libdeflate: the block deflated on its own (libdeflate takes no
 * dictionary) into one whole stream, which ends with a final block. A walk
 * of that stream finds the final block's flag, which is cleared, and the
 * stream's end, where an empty stored block follows: the sync flush zlib
 * writes. 1 where the walk does not confirm the stream, or the block's
 * length (never seen): the caller deflates the block with zlib instead. */
static int ld_encode(gz_enc *e, const tk__buf *raw, tk__buf *out, char *err)
{
	out->len = 0;
	size_t bound = libdeflate_deflate_compress_bound(e->ld, raw->len);
	if (tk__buf_reserve(out, bound + 8)) {
		snprintf(err, TK__ERRLEN, "out of memory");
		return TK_ERR_NOMEM;
	}
	unsigned char *q = (unsigned char *)out->p;
	size_t k = libdeflate_deflate_compress(e->ld, raw->p, raw->len, q, bound);
	tk__dscan_result r;
	if (!k || tk__gzip_no_walk || tk__dscan_stream(e->scan, q, k, &r) || r.out_len != raw->len)
		return 1;
	q[r.final_bit / 8] &= (unsigned char)~(1u << (r.final_bit % 8));
	/* from the end: three zero bits (not final, stored), zeros to the
	 * byte, LEN 0 and NLEN 0xffff */
	size_t at = (size_t)(r.end_bit / 8), end = (size_t)((r.end_bit + 3 + 7) / 8);
	q[at] &= (unsigned char)((1u << (r.end_bit % 8)) - 1);
	for (size_t i = at + 1; i < end; i++)
		q[i] = 0;
	memcpy(q + end, "\0\0\xff\xff", 4);
	out->len = end + 4;
	return out->len > stored_size(raw) ? put_stored(raw, out, err) : 0;
}
#endif

#ifdef TK_HAVE_ISAL
/* ISA-L: the block deflated after the dictionary, ended by a sync flush. */
static int isal_encode(gz_enc *e, int level, gz_ctx *c, const tk__buf *raw, tk__buf *out, char *err)
{
	struct isal_zstream *z = e->isal;
	isal_deflate_init(z);
	z->level = (uint32_t)level;
	z->level_buf = e->lvl_buf;
	z->level_buf_size = (uint32_t)e->lvl_len;
	z->gzip_flag = IGZIP_DEFLATE;
	z->flush = SYNC_FLUSH;
	z->end_of_stream = 0;
	if (c->dict_len && isal_deflate_set_dict(z, c->dict, (uint32_t)c->dict_len) != COMP_OK) {
		snprintf(err, TK__ERRLEN, "ISA-L deflate failed to take its dictionary");
		return TK_ERR_IO;
	}
	out->len = 0;
	size_t stored = stored_size(raw);
	if (tk__buf_reserve(out, stored + 1024)) {
		snprintf(err, TK__ERRLEN, "out of memory");
		return TK_ERR_NOMEM;
	}
	z->next_in = (uint8_t *)raw->p;
	z->avail_in = (uint32_t)raw->len;
	for (;;) {
		z->next_out = (uint8_t *)out->p + out->len;
		z->avail_out = (uint32_t)(out->cap - out->len - 1);
		int rc = isal_deflate(z);
		out->len = (size_t)(z->next_out - (uint8_t *)out->p);
		if (rc != COMP_OK) {
			snprintf(err, TK__ERRLEN, "ISA-L deflate failed (%d)", rc);
			return TK_ERR_IO;
		}
		if (!z->avail_in && z->avail_out)
			break; /* all in, and the flush is complete (ISA-L's rule) */
		if (tk__buf_reserve(out, out->cap)) {
			snprintf(err, TK__ERRLEN, "out of memory");
			return TK_ERR_NOMEM;
		}
	}
	return out->len > stored ? put_stored(raw, out, err) : 0;
}
#endif

static int gzo_encode(void *enc, void *ctx, const tk__buf *raw, tk__buf *out, char *err)
{
	gz_enc *e = enc;
	gz_ctx *c = ctx;
	c->crc = tk__crc32(0, raw->p, raw->len);
#ifdef TK_HAVE_ISAL
	if (e->isal)
		return isal_encode(e, e->isal_level, c, raw, out, err);
#endif
#ifdef TK_HAVE_LIBDEFLATE
	if (e->ld) {
		int rc = ld_encode(e, raw, out, err);
		if (rc <= 0)
			return rc;
		if ((rc = z_start(e, err)) != 0)
			return rc;
	}
#endif
	z_stream *z = &e->z;
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
