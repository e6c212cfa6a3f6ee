/* fuzz_deflate.c: fuzz harness for the deflate walk and the inflating of a stream in parts (core/deflate_scan.c), held against zlib's raw inflate (libFuzzer, or a plain main() over files).
 *
 * The gzip writer trusts the walk to find where a libdeflate stream's final
 * block starts and where the stream ends, and continues the stream there.
 * The invariant, on any bytes:
 *
 *  - the walk takes them exactly when zlib's raw inflate (no dictionary)
 *    reaches the end of a stream within them;
 *  - then the walk's end is where zlib stopped (its bytes used, to the bit:
 *    Z_BLOCK's count of unused bits), its final block starts where zlib's
 *    last block boundary before the end is, and its length is zlib's;
 *  - the stream with the final flag cleared, then an empty stored block
 *    from the end (what the writer appends) and an empty final block,
 *    inflates with zlib to the same bytes (length and CRC-32).
 *
 * The inflating in parts (tk__dpart_inflate, tk__dscan_find), on the same bytes:
 *
 *  - inflated whole from the first bit, it succeeds exactly when zlib reaches
 *    the end of a stream, with zlib's bytes, and ends where zlib does;
 *  - from every block start zlib passes, with the 32 KiB before it unknown
 *    (markers), it succeeds there too, and its markers resolved with zlib's
 *    bytes before that start give zlib's bytes from there;
 *  - where the finder says a block starts, that block inflates (with markers).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "core/deflate_scan.h"

#define MAX_IN (64 * 1024)

static void fail(const char *what)
{
	fprintf(stderr, "fuzz_deflate: %s\n", what);
	abort();
}

/* zlib's reading of p[0..n): 1 at the stream's end, 0 otherwise; with the
 * bits used, the output's length and CRC-32, and the bit where the last
 * block started (Z_BLOCK stops at each block's header). */
typedef struct zread {
	int ended;
	uint64_t end_bit, last_hdr, out_len;
	uint32_t crc;
} zread;

static zread z_inflate(const uint8_t *p, size_t n)
{
	zread r = {0, 0, 0, 0, (uint32_t)crc32(0, NULL, 0)};
	z_stream z;
	memset(&z, 0, sizeof z);
	if (inflateInit2(&z, -MAX_WBITS) != Z_OK)
		fail("zlib inflateInit2 failed");
	static uint8_t out[1 << 16];
	z.next_in = (uint8_t *)p;
	z.avail_in = (uInt)n;
	for (;;) {
		z.next_out = out;
		z.avail_out = sizeof out;
		int rc = inflate(&z, Z_BLOCK);
		size_t got = sizeof out - z.avail_out;
		r.crc = (uint32_t)crc32(r.crc, out, (uInt)got);
		r.out_len += got;
		if (rc == Z_STREAM_END) {
			r.ended = 1;
			break;
		}
		if (rc != Z_OK)
			break; /* an error, or no more input (Z_BUF_ERROR) */
		/* after a block (Z_BLOCK): the next one's header, or the end of
		 * the final one, to the bit (the end as Z_STREAM_END gives it
		 * is rounded up to the byte) */
		uint64_t at = (uint64_t)(n - z.avail_in) * 8 - (z.data_type & 7);
		if ((z.data_type & 128) && (z.data_type & 64))
			r.end_bit = at;
		else if (z.data_type & 128)
			r.last_hdr = at;
	}
	inflateEnd(&z);
	return r;
}

#define MAX_OUT (8u << 20)
#define MAX_STARTS 64

/* zlib's output of p[0..n) (up to MAX_OUT bytes) and its block starts, each with
 * the bytes out before it. */
typedef struct zparts {
	uint8_t *out;
	size_t out_len;
	int ended, big;
	uint64_t start[MAX_STARTS], start_out[MAX_STARTS];
	int n_start;
} zparts;

static void z_parts(const uint8_t *p, size_t n, zparts *r)
{
	z_stream z;
	memset(&z, 0, sizeof z);
	if (inflateInit2(&z, -MAX_WBITS) != Z_OK)
		fail("zlib inflateInit2 failed");
	z.next_in = (uint8_t *)p;
	z.avail_in = (uInt)n;
	z.next_out = r->out;
	z.avail_out = MAX_OUT;
	for (;;) {
		int rc = inflate(&z, Z_BLOCK);
		if (rc == Z_STREAM_END) {
			r->ended = 1;
			break;
		}
		if (rc != Z_OK || !z.avail_out) {
			r->big = !z.avail_out;
			break;
		}
		uint64_t at = (uint64_t)(n - z.avail_in) * 8 - (z.data_type & 7);
		if ((z.data_type & 128) && !(z.data_type & 64) && at && r->n_start < MAX_STARTS &&
		    (!r->n_start || r->start[r->n_start - 1] != at)) {
			r->start[r->n_start] = at;
			r->start_out[r->n_start++] = z.total_out;
		}
	}
	r->out_len = (size_t)z.total_out;
	inflateEnd(&z);
}

static void check_parts(tk__dscan *s, const uint8_t *data, size_t size)
{
	static zparts z;
	static tk__dpart d;
	static uint8_t *res;
	if (!z.out && !(z.out = malloc(MAX_OUT)))
		return;
	if (!res && !(res = malloc(MAX_OUT)))
		return;
	z.ended = z.big = z.n_start = 0;
	z_parts(data, size, &z);
	if (z.big)
		return;
	int rc = tk__dpart_inflate(s, data, size, 0, UINT64_MAX, (const uint8_t *)"", 0, MAX_OUT, &d);
	if ((rc == TK__DP_OK) != z.ended) {
		fprintf(stderr, "part inflate %d, zlib %s\n", rc, z.ended ? "ends" : "does not end");
		fail("inflating whole and zlib disagree on whether a stream ends here");
	}
	if (rc == TK__DP_OK &&
	    (!d.final || tk__dpart_len(&d) != z.out_len || memcmp(d.plain + d.plain_at, z.out, z.out_len)))
		fail("inflated whole, the stream is not zlib's bytes");
	if (!z.ended)
		return;
	for (int i = 0; i < z.n_start; i++) {
		if (tk__dpart_inflate(s, data, size, z.start[i], UINT64_MAX, NULL, 0, MAX_OUT, &d) != TK__DP_OK)
			fail("a part from a block start zlib passes does not inflate");
		size_t before = (size_t)z.start_out[i], len = tk__dpart_len(&d);
		size_t w = before < TK__DWIN ? before : TK__DWIN;
		if (!d.final || before + len != z.out_len || tk__dpart_resolve(&d, z.out + before - w, w, 0, d.n_marked, res) ||
		    memcmp(res, z.out + before, d.n_marked) ||
		    memcmp(d.plain + d.plain_at, z.out + before + d.n_marked, len - d.n_marked))
			fail("a part from a block start, resolved, is not zlib's bytes from there");
	}
	uint64_t at;
	if (tk__dscan_find(s, data, size, 0, (uint64_t)size * 8, &at) &&
	    tk__dpart_inflate(s, data, size, at, at + 1, NULL, 0, MAX_OUT, &d) != TK__DP_OK)
		fail("the block the finder found does not inflate");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > MAX_IN)
		return 0;
	static tk__dscan *s;
	if (!s && !(s = tk__dscan_new()))
		return 0;
	check_parts(s, data, size);
	tk__dscan_result r;
	int ok = tk__dscan_stream(s, data, size, &r) == 0;
	zread z = z_inflate(data, size);
	if (ok != z.ended) {
		fprintf(stderr, "walk %s, zlib %s\n", ok ? "takes it" : "refuses it", z.ended ? "ends" : "does not end");
		fail("the walk and zlib disagree on whether a stream ends here");
	}
	if (!ok)
		return 0;
	if (r.end_bit != z.end_bit || r.out_len != z.out_len || r.final_bit != z.last_hdr) {
		fprintf(stderr, "walk: end %llu, final %llu, %llu bytes; zlib: end %llu, final %llu, %llu bytes\n",
		        (unsigned long long)r.end_bit, (unsigned long long)r.final_bit, (unsigned long long)r.out_len,
		        (unsigned long long)z.end_bit, (unsigned long long)z.last_hdr, (unsigned long long)z.out_len);
		fail("the walk's stream is not zlib's");
	}
	/* continued as the writer does, then ended */
	size_t end = (size_t)((r.end_bit + 3 + 7) / 8);
	uint8_t *q = calloc(end + 6, 1);
	if (!q)
		return 0;
	memcpy(q, data, (size_t)((r.end_bit + 7) / 8));
	q[r.final_bit / 8] &= (uint8_t)~(1u << (r.final_bit % 8));
	q[r.end_bit / 8] &= (uint8_t)((1u << (r.end_bit % 8)) - 1);
	memcpy(q + end, "\0\0\xff\xff\x03\x00", 6);
	zread c = z_inflate(q, end + 6);
	free(q);
	if (!c.ended || c.out_len != z.out_len || c.crc != z.crc || c.end_bit != (uint64_t)(end + 6) * 8 - 6)
		fail("the stream continued after its final block does not inflate to the same bytes");
	return 0;
}

#ifndef TK_LIBFUZZER
#include "fuzz_files.h"

int main(int argc, char **argv)
{
	int rc = tk_fuzz_files(argc, argv, NULL);
	printf("fuzz_deflate: %d inputs ran\n", argc - 1);
	return rc;
}
#endif
