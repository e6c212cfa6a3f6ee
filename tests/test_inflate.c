/* test_inflate.c: parts of a deflate stream inflated from a block's start, the 32 KiB
 * before them unknown (core/deflate_scan.c: tk__dscan_find, tk__dpart_inflate,
 * tk__dpart_resolve), held against zlib's raw inflate on streams zlib wrote. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "testutil.h"
#include "../libtrace/src/core/deflate_scan.h"
#include "../libtrace/src/inflate_par.h"
#include "../libtrace/src/internal.h"

/* JSON much like a Kineto trace's: events of a few names and categories,
 * growing timestamps, args with numbers that vary. */
static char *make_text(size_t want, unsigned seed, size_t *len)
{
	static const char *names[] = {"aten::mm", "aten::add_", "cudaLaunchKernel", "ampere_sgemm_128x64_nn",
	                              "ncclKernel_AllReduce_RING_LL_Sum_float", "aten::empty", "Memcpy HtoD"};
	static const char *cats[] = {"cpu_op", "cuda_runtime", "kernel", "gpu_memcpy"};
	char *p = malloc(want + 512);
	assert_non_null(p);
	size_t n = 0;
	uint64_t ts = 1700000000000ull, x = seed;
	n += (size_t)sprintf(p, "{\"traceEvents\": [\n");
	while (n < want) {
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		unsigned r = (unsigned)(x >> 33);
		ts += r % 5000;
		n += (size_t)sprintf(p + n,
		                     "  {\"ph\": \"X\", \"cat\": \"%s\", \"name\": \"%s\", \"pid\": %u, \"tid\": %u, "
		                     "\"ts\": %llu.%03u, \"dur\": %u.%03u, \"args\": {\"External id\": %u, "
		                     "\"correlation\": %u}},\n",
		                     cats[r % 4], names[(r >> 3) % 7], r % 3, 100 + (r >> 5) % 4,
		                     (unsigned long long)(ts / 1000), (unsigned)(ts % 1000), r % 900, (r >> 7) % 1000,
		                     (unsigned)(x >> 40) % 100000, (unsigned)(x >> 20) % 100000);
	}
	n += (size_t)sprintf(p + n, "  {}\n]}\n");
	*len = n;
	return p;
}

/* Text that repeats with a period of 24 KiB, one byte changed every 50:
 * matches reach far back all along, so a part's markers are copied on and
 * on and its output stays marked. */
static char *make_periodic(size_t n, unsigned seed)
{
	char *p = malloc(n);
	assert_non_null(p);
	unsigned x = seed;
	for (size_t i = 0; i < n; i++) {
		x = x * 1103515245u + 12345u;
		p[i] = i < 24576 ? (char)('a' + (x >> 16) % 26) : (i % 50 ? p[i - 24576] : (char)('A' + (x >> 16) % 26));
	}
	return p;
}

/* p[0..n) deflated raw by zlib at `level` with `strategy`, a sync flush
 * (an empty stored block) every `flush_every` bytes if not 0. */
static uint8_t *deflate_raw(const void *p, size_t n, int level, int strategy, size_t flush_every, size_t *out_len)
{
	z_stream z;
	memset(&z, 0, sizeof z);
	assert_int_equal(deflateInit2(&z, level, Z_DEFLATED, -MAX_WBITS, 8, strategy), Z_OK);
	size_t cap = deflateBound(&z, (uLong)n) + 5 * (n / (flush_every ? flush_every : n + 1) + 2);
	uint8_t *out = malloc(cap);
	assert_non_null(out);
	z.next_out = out;
	z.avail_out = (uInt)cap;
	size_t at = 0;
	for (;;) {
		size_t k = flush_every && n - at > flush_every ? flush_every : n - at;
		z.next_in = (Bytef *)p + at;
		z.avail_in = (uInt)k;
		at += k;
		int rc = deflate(&z, at == n ? Z_FINISH : Z_SYNC_FLUSH);
		if (at == n) {
			assert_int_equal(rc, Z_STREAM_END);
			break;
		}
		assert_int_equal(rc, Z_OK);
	}
	*out_len = cap - z.avail_out;
	deflateEnd(&z);
	return out;
}

/* zlib's block starts in a raw stream (Z_BLOCK stops at each), in order,
 * and the bytes it inflates to. */
typedef struct zblocks {
	uint64_t *bit;
	size_t n;
	uint8_t *out;
	size_t out_len;
	int ended;
} zblocks;

static zblocks z_blocks(const uint8_t *p, size_t n, size_t out_cap)
{
	zblocks r = {calloc(n * 8 / 16 + 16, sizeof(uint64_t)), 0, malloc(out_cap + 1), 0, 0};
	assert_non_null(r.bit);
	assert_non_null(r.out);
	z_stream z;
	memset(&z, 0, sizeof z);
	assert_int_equal(inflateInit2(&z, -MAX_WBITS), Z_OK);
	z.next_in = (Bytef *)p;
	z.avail_in = (uInt)n;
	z.next_out = r.out;
	z.avail_out = (uInt)out_cap + 1;
	r.bit[r.n++] = 0;
	for (;;) {
		int rc = inflate(&z, Z_BLOCK);
		if (rc == Z_STREAM_END) {
			r.ended = 1;
			break;
		}
		if (rc != Z_OK)
			break;
		uint64_t at = (uint64_t)(n - z.avail_in) * 8 - (z.data_type & 7);
		if ((z.data_type & 128) && !(z.data_type & 64) && at != r.bit[r.n - 1])
			r.bit[r.n++] = at;
	}
	r.out_len = (size_t)z.total_out;
	inflateEnd(&z);
	return r;
}

static int is_block_start(const zblocks *z, uint64_t bit)
{
	for (size_t i = 0; i < z->n; i++)
		if (z->bit[i] == bit)
			return 1;
	return 0;
}

static void zblocks_free(zblocks *z)
{
	free(z->bit);
	free(z->out);
}

/* The stream inflated in parts of about `part` compressed bytes, each but
 * the first from the block start found after its share begins, with
 * markers; checked against zlib's output. *marked and *plain count the
 * parts that had marked output and that went on in plain bytes. */
static void parts_match(const uint8_t *c, size_t cn, const zblocks *z, size_t part, int *marked, int *plain,
                        int *found)
{
	tk__dscan *s = tk__dscan_new();
	assert_non_null(s);
	size_t np = cn / part + 1;
	uint64_t *start = calloc(np + 1, sizeof *start);
	assert_non_null(start);
	size_t k = 0;
	start[k++] = 0;
	for (size_t i = 1; i < np; i++) {
		uint64_t at;
		if (tk__dscan_find(s, c, cn, (uint64_t)i * part * 8, (uint64_t)(i + 1) * part * 8, &at)) {
			/* never a bit where zlib's stream has no block starting */
			if (!is_block_start(z, at))
				fail_msg("found a block start at bit %llu where zlib has none", (unsigned long long)at);
			if (at > start[k - 1])
				start[k++] = at;
		}
	}
	*found = (int)k - 1;
	uint8_t *got = malloc(z->out_len + 1);
	assert_non_null(got);
	size_t have = 0;
	tk__dpart d = {0};
	for (size_t i = 0; i < k; i++) {
		uint64_t stop = i + 1 < k ? start[i + 1] : UINT64_MAX;
		int first = i == 0;
		int rc = tk__dpart_inflate(s, c, cn, start[i], stop, first ? (const uint8_t *)"" : NULL, 0, SIZE_MAX, &d);
		assert_int_equal(rc, TK__DP_OK);
		/* it stops where the next part starts, or at the stream's end */
		if (i + 1 < k) {
			assert_int_equal(d.final, 0);
			assert_true(d.end_bit == start[i + 1]);
		} else {
			assert_int_equal(d.final, 1);
		}
		size_t len = tk__dpart_len(&d);
		assert_true(have + len <= z->out_len);
		size_t w = have < TK__DWIN ? have : TK__DWIN;
		assert_int_equal(tk__dpart_resolve(&d, got + have - w, w, 0, d.n_marked, got + have), 0);
		memcpy(got + have + d.n_marked, d.plain + d.plain_at, d.n_plain - d.plain_at);
		if (!first) {
			*marked += d.n_marked > 0;
			*plain += d.plain_at > 0 && d.n_plain > d.plain_at;
			/* the same part inflated with its window known: the same bytes */
			tk__dpart e = {0};
			assert_int_equal(tk__dpart_inflate(s, c, cn, start[i], stop, got + have - w, w, SIZE_MAX, &e), TK__DP_OK);
			assert_int_equal(e.n_marked, 0);
			assert_int_equal(tk__dpart_len(&e), len);
			assert_memory_equal(e.plain + e.plain_at, got + have, len);
			tk__dpart_free(&e);
		}
		have += len;
	}
	assert_int_equal(have, z->out_len);
	assert_memory_equal(got, z->out, have);
	tk__dpart_free(&d);
	free(got);
	free(start);
	tk__dscan_free(s);
}

typedef struct scase {
	int level, strategy;
	size_t flush_every, part;
} scase;

static void test_parts(void **state)
{
	(void)state;
	size_t n;
	char *text = make_text(3u << 20, 7, &n);
	const scase cases[] = {
	    {6, Z_DEFAULT_STRATEGY, 0, 64 << 10},    {1, Z_DEFAULT_STRATEGY, 0, 48 << 10},
	    {9, Z_DEFAULT_STRATEGY, 0, 100 << 10},   {6, Z_DEFAULT_STRATEGY, 1 << 20, 32 << 10},
	    {6, Z_HUFFMAN_ONLY, 0, 256 << 10},       {6, Z_RLE, 0, 128 << 10},
	    {6, Z_DEFAULT_STRATEGY, 100000, 20 << 10},
	};
	int marked = 0, plain = 0;
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		size_t cn;
		uint8_t *c = deflate_raw(text, n, cases[i].level, cases[i].strategy, cases[i].flush_every, &cn);
		zblocks z = z_blocks(c, cn, n);
		assert_true(z.ended);
		assert_int_equal(z.out_len, n);
		int found = 0;
		parts_match(c, cn, &z, cases[i].part, &marked, &plain, &found);
		/* the finder misses a start only where the share has none, or it is stored or fixed */
		assert_true(found >= (int)(cn / cases[i].part) / 2);
		zblocks_free(&z);
		free(c);
	}
	/* both kinds of output were made: markers, then plain bytes after 32 KiB without one */
	assert_true(marked > 10);
	assert_true(plain > 10);
	free(text);

	/* markers copied on through whole parts */
	n = 6u << 20;
	text = make_periodic(n, 5);
	size_t cn;
	uint8_t *c = deflate_raw(text, n, 6, Z_DEFAULT_STRATEGY, 0, &cn);
	zblocks z = z_blocks(c, cn, n);
	assert_true(z.ended);
	int found = 0;
	marked = plain = 0;
	parts_match(c, cn, &z, 16 << 10, &marked, &plain, &found);
	assert_true(found > 10);
	assert_true(marked >= found - 1);
	zblocks_free(&z);
	free(c);
	free(text);
}

/* A symbol of 0 .. m - 1, each half as likely as the one before. */
static unsigned halving(uint64_t *x, unsigned m)
{
	*x = *x * 6364136223846793005ull + 1442695040888963407ull;
	unsigned r = (unsigned)(*x >> 32), k = 0;
	while (k + 1 < m && (r & 1)) {
		k++;
		r >>= 1;
	}
	return k;
}

/* Bytes whose literal codes (literals) or distance codes (!literals) run
 * long: literals each half as likely as the one before, which Z_HUFFMAN_ONLY
 * codes in up to 15 bits; or random bytes with copies of 8 earlier bytes
 * at distances whose codes are each half as likely as the one before. The
 * tables then need subtables past their first 10 (literal/length) and 8
 * (distance) bits. */
static uint8_t *make_skewed(size_t n, int literals, uint64_t seed)
{
	static const unsigned base[30] = {1,    2,    3,    4,    5,    7,     9,     13,    17,  25,
	                                  33,   49,   65,   97,   129,  193,   257,   385,   513, 769,
	                                  1025, 1537, 2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577};
	uint8_t *p = malloc(n + 8);
	assert_non_null(p);
	uint64_t x = seed;
	for (size_t i = 0; i < n;) {
		if (literals) {
			p[i++] = (uint8_t)(' ' + halving(&x, 40));
			continue;
		}
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		unsigned r = (unsigned)(x >> 33);
		if (i < 32768 || r % 2) {
			for (int k = 0; k < 4; k++) {
				x = x * 6364136223846793005ull + 1442695040888963407ull;
				p[i++] = (uint8_t)(x >> 56);
			}
			continue;
		}
		unsigned c = halving(&x, 30), span = c + 1 < 30 ? base[c + 1] - base[c] : 8192;
		size_t d = base[c] + (r >> 1) % span;
		for (int k = 0; k < 8; k++, i++)
			p[i] = p[i - d];
	}
	return p;
}

/* Streams whose codes are longer than the tables' first bits: inflated
 * whole, in parts and walked, they give zlib's bytes. */
static void test_long_codes(void **state)
{
	(void)state;
	tk__dscan *s = tk__dscan_new();
	assert_non_null(s);
	for (int literals = 1; literals >= 0; literals--) {
		size_t n = 3u << 20, cn;
		uint8_t *text = make_skewed(n, literals, 11);
		uint8_t *c = deflate_raw(text, n, 6, literals ? Z_HUFFMAN_ONLY : Z_DEFAULT_STRATEGY, 0, &cn);
		zblocks z = z_blocks(c, cn, n);
		assert_true(z.ended);
		assert_int_equal(z.out_len, n);
		assert_memory_equal(z.out, text, n);
		tk__dscan_result r;
		assert_int_equal(tk__dscan_stream(s, c, cn, &r), 0);
		assert_int_equal(r.out_len, n);
		tk__dpart d = {0};
		assert_int_equal(tk__dpart_inflate(s, c, cn, 0, UINT64_MAX, (const uint8_t *)"", 0, SIZE_MAX, &d), TK__DP_OK);
		assert_int_equal(tk__dpart_len(&d), n);
		assert_memory_equal(d.plain + d.plain_at, text, n);
		tk__dpart_free(&d);
		int marked = 0, plain = 0, found = 0;
		parts_match(c, cn, &z, 64 << 10, &marked, &plain, &found);
		assert_true(found > 4);
		zblocks_free(&z);
		free(c);
		free(text);
	}
	tk__dscan_free(s);
}

/* Fixed-code blocks (Z_FIXED) are not found; the part before goes on through them. */
static void test_fixed(void **state)
{
	(void)state;
	size_t n, cn;
	char *text = make_text(1u << 20, 3, &n);
	uint8_t *c = deflate_raw(text, n, 6, Z_FIXED, 0, &cn);
	tk__dscan *s = tk__dscan_new();
	uint64_t at;
	assert_int_equal(tk__dscan_find(s, c, cn, 8 * 1000, (uint64_t)cn * 8, &at), 0);
	tk__dpart d = {0};
	assert_int_equal(tk__dpart_inflate(s, c, cn, 0, UINT64_MAX, (const uint8_t *)"", 0, SIZE_MAX, &d), TK__DP_OK);
	assert_int_equal(tk__dpart_len(&d), n);
	assert_memory_equal(d.plain + d.plain_at, text, n);
	tk__dpart_free(&d);
	tk__dscan_free(s);
	free(c);
	free(text);
}

/* Short input, too much output, a window too short for a part's markers, damage. */
static void test_limits(void **state)
{
	(void)state;
	size_t n, cn;
	char *text = make_text(1u << 20, 11, &n);
	uint8_t *c = deflate_raw(text, n, 6, Z_DEFAULT_STRATEGY, 0, &cn);
	zblocks z = z_blocks(c, cn, n);
	tk__dscan *s = tk__dscan_new();
	tk__dpart d = {0};
	const uint8_t *none = (const uint8_t *)"";
	/* cut anywhere before the end: short, never a success or damage */
	for (size_t cut = 1; cut < cn; cut += cn / 37 + 1)
		assert_int_equal(tk__dpart_inflate(s, c, cut, 0, UINT64_MAX, none, 0, SIZE_MAX, &d), TK__DP_SHORT);
	assert_int_equal(tk__dpart_inflate(s, c, cn - 1, 0, UINT64_MAX, none, 0, SIZE_MAX, &d), TK__DP_SHORT);
	assert_int_equal(tk__dpart_inflate(s, c, cn, 0, UINT64_MAX, none, 0, n - 1, &d), TK__DP_BIG);
	assert_int_equal(tk__dpart_inflate(s, c, cn, 0, UINT64_MAX, none, 0, n, &d), TK__DP_OK);
	/* a part from the third block: its markers need more than 100 bytes before it */
	assert_true(z.n > 3);
	assert_int_equal(tk__dpart_inflate(s, c, cn, z.bit[2], z.bit[3], NULL, 0, SIZE_MAX, &d), TK__DP_OK);
	assert_true(d.n_marked > 0);
	uint8_t *dst = malloc(d.n_marked);
	assert_int_equal(tk__dpart_resolve(&d, (const uint8_t *)text, 100, 0, d.n_marked, dst), -1);
	/* the same part with a window known, but too short for its matches: damage */
	assert_int_equal(tk__dpart_inflate(s, c, cn, z.bit[2], z.bit[3], (const uint8_t *)text, 100, SIZE_MAX, &d),
	                 TK__DP_BAD);
	free(dst);
	/* bits flipped: where zlib inflates to the end, the same bytes; where it
	 * refuses, damage or short, never a success */
	uint8_t *bad = malloc(cn);
	unsigned x = 12345;
	int ok = 0, refused = 0;
	for (int i = 0; i < 300; i++) {
		memcpy(bad, c, cn);
		x = x * 1103515245u + 12345u;
		size_t at = (x >> 8) % (cn < 4000 ? cn : 4000); /* in the first blocks: the rest decodes for long */
		bad[at] ^= (uint8_t)(1u << (x % 8));
		zblocks zb = z_blocks(bad, cn, 2 * n);
		int rc = tk__dpart_inflate(s, bad, cn, 0, UINT64_MAX, none, 0, 2 * n, &d);
		if (zb.ended) {
			assert_int_equal(rc, TK__DP_OK);
			assert_int_equal(tk__dpart_len(&d), zb.out_len);
			assert_memory_equal(d.plain + d.plain_at, zb.out, zb.out_len);
			ok++;
		} else {
			assert_true(rc == TK__DP_BAD || rc == TK__DP_SHORT);
			refused++;
		}
		zblocks_free(&zb);
	}
	assert_true(refused > 50);
	(void)ok;
	free(bad);
	tk__dpart_free(&d);
	tk__dscan_free(s);
	zblocks_free(&z);
	free(c);
	free(text);
}

/* ---- a reader's gzip input inflated in parts on threads (inflate_par.c) ---- */

/* A gzip member of p[0..n) as gzip writes it: its name in the header, then
 * zlib's raw deflate at `level`, the CRC-32 and the length. */
static uint8_t *gzip_member(const void *p, size_t n, int level, int strategy, size_t flush_every, size_t *out_len)
{
	size_t cn;
	uint8_t *c = deflate_raw(p, n, level, strategy, flush_every, &cn);
	static const uint8_t hdr[] = {0x1f, 0x8b, 8, 8, 0, 0, 0, 0, 0, 3, 't', '.', 'j', 's', 'o', 'n', 0};
	uint8_t *g = malloc(sizeof hdr + cn + 8);
	assert_non_null(g);
	memcpy(g, hdr, sizeof hdr);
	memcpy(g + sizeof hdr, c, cn);
	uint32_t crc = (uint32_t)crc32(0, p, (uInt)n), len = (uint32_t)n;
	uint8_t *t = g + sizeof hdr + cn;
	for (int i = 0; i < 4; i++) {
		t[i] = (uint8_t)(crc >> 8 * i);
		t[4 + i] = (uint8_t)(len >> 8 * i);
	}
	*out_len = sizeof hdr + cn + 8;
	free(c);
	return g;
}

/* p[0..n) read on one thread and on 4 with the stream inflated in parts of
 * 16 KiB, in lockstep: from memory, then from a file. The parts given out. */
static uint64_t same_read(const void *p, size_t n, const char *what)
{
	uint64_t parts = __atomic_load_n(&tk__ipar_parts_out, __ATOMIC_RELAXED);
	tk__gz_par_min = 2;
	tk__ipar_part_bytes = 16 << 10;
	tk_reader_opts o1 = {0}, o4 = {0};
	o1.threads = 1;
	o4.threads = 4;
	for (int file = 0; file < 2; file++) {
		tk_reader *a = NULL, *b = NULL;
		int ra, rb;
		if (file) {
			const char *path = tu_path("par.json.gz");
			tu_write_file(path, p, n);
			ra = tk_reader_open_path(&a, path, &o1);
			rb = tk_reader_open_path(&b, path, &o4);
		} else {
			ra = tk_reader_open_memory(&a, p, n, "t.json.gz", &o1);
			rb = tk_reader_open_memory(&b, p, n, "t.json.gz", &o4);
		}
		assert_int_equal(ra, rb);
		char w[128];
		snprintf(w, sizeof w, "%s, %s", what, file ? "a file" : "memory");
		if (!ra) {
			tu_lockstep(a, b, w, NULL); /* at the end, the same bytes in and decoded too */
		} else {
			tu_same_end(a, b, ra);
		}
		tk_reader_free(a);
		tk_reader_free(b);
	}
	tk__gz_par_min = 0;
	tk__ipar_part_bytes = 0;
	return __atomic_load_n(&tk__ipar_parts_out, __ATOMIC_RELAXED) - parts;
}

static void test_reader(void **state)
{
	(void)state;
	size_t n, gn;
	char *text = make_text(4u << 20, 21, &n);
	/* whole, at three levels; with the same data's fixed codes (no start is found: each part is
	 * inflated again by the caller from where the one before ended); with an empty stored block
	 * every 20,000 bytes (the part before may end at one, where no start is looked for: the part
	 * found after it is inflated again from there) */
	const int levels[][3] = {{6, Z_DEFAULT_STRATEGY, 0}, {1, Z_DEFAULT_STRATEGY, 0}, {9, Z_DEFAULT_STRATEGY, 0},
	                         {6, Z_FIXED, 0}, {6, Z_DEFAULT_STRATEGY, 20000}};
	for (size_t i = 0; i < 5; i++) {
		uint64_t redone = __atomic_load_n(&tk__ipar_parts_redone, __ATOMIC_RELAXED);
		uint8_t *g = gzip_member(text, n, levels[i][0], levels[i][1], (size_t)levels[i][2], &gn);
		uint64_t parts = same_read(g, gn, "whole");
		redone = __atomic_load_n(&tk__ipar_parts_redone, __ATOMIC_RELAXED) - redone;
		/* the threads did the work: they found most shares' starts */
		assert_true(parts > 2 * (gn / (16 << 10)) / 3);
		if (i == 0) /* at most the part of the final block, which the finder does not look for, per read */
			assert_true(redone <= 2);
		if (i >= 3)
			assert_true(redone > 0);
		free(g);
	}
	uint8_t *g = gzip_member(text, n, 6, Z_DEFAULT_STRATEGY, 0, &gn);
	/* two members, the second read by ISA-L after the threads' */
	size_t hn;
	uint8_t *h = gzip_member("", 0, 6, Z_DEFAULT_STRATEGY, 0, &hn);
	uint8_t *two = malloc(gn + hn + 3);
	memcpy(two, g, gn);
	memcpy(two + gn, h, hn);
	assert_true(same_read(two, gn + hn, "two members") > 0);
	/* bytes after the member */
	memcpy(two + gn, "xyz", 3);
	same_read(two, gn + 3, "trailing bytes");
	free(h);
	free(two);
	/* cut at places through the stream, the trailer and the header */
	for (size_t cut = 5; cut < gn; cut += gn / 13)
		same_read(g, cut, "cut");
	same_read(g, gn - 1, "cut in the trailer");
	same_read(g, gn - 8, "no trailer");
	/* damage: a CRC or a length that does not match, bits flipped in the middle */
	uint8_t *bad = malloc(gn);
	for (size_t k = 0; k < 8; k++) {
		memcpy(bad, g, gn);
		bad[gn - 8 + k] ^= 0x10;
		same_read(bad, gn, "a bad trailer");
	}
	for (size_t k = 1; k < 12; k++) {
		memcpy(bad, g, gn);
		bad[gn * k / 12] ^= (uint8_t)(1u << (k % 8));
		same_read(bad, gn, "a flipped bit");
	}
	free(bad);
	free(g);
	free(text);
	tu_cleanup();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_parts),
	    cmocka_unit_test(test_long_codes),
	    cmocka_unit_test(test_fixed),
	    cmocka_unit_test(test_limits),
	    cmocka_unit_test(test_reader),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
