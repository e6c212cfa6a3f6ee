/* deflate_scan.h: the blocks of a raw deflate stream walked (every symbol decoded, nothing
 * written), to find where its final block starts and where the stream ends. */
#ifndef TK_DEFLATE_SCAN_H
#define TK_DEFLATE_SCAN_H

#include <stddef.h>
#include <stdint.h>

/* The walk's tables (about 260 KiB): one per thread, kept between calls. */
typedef struct tk__dscan tk__dscan;
tk__dscan *tk__dscan_new(void);
void tk__dscan_free(tk__dscan *s);

/* What a complete deflate stream at the start of p[0..n) is made of. */
typedef struct tk__dscan_result {
	uint64_t final_bit; /* the bit of the final block's BFINAL flag (bit b: p[b / 8], 1 << b % 8) */
	uint64_t end_bit;   /* the first bit after its end (the final block's end-of-block code) */
	uint64_t out_len;   /* the bytes it inflates to */
} tk__dscan_result;

/* 0 with *r set, or -1 where p[0..n) does not start with one complete deflate stream
 * that zlib inflates without a dictionary: the same streams zlib's raw inflate takes to
 * its end (fuzz_deflate checks the two against each other). */
int tk__dscan_stream(tk__dscan *s, const void *p, size_t n, tk__dscan_result *r);

#endif
