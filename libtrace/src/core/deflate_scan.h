/* deflate_scan.h: the blocks of a raw deflate stream walked (every symbol decoded, nothing
 * written), to find where its final block starts and where the stream ends; and a part of a
 * stream inflated from a block's start with the 32 KiB before it not known yet (parallel
 * inflate). */
#ifndef TK_DEFLATE_SCAN_H
#define TK_DEFLATE_SCAN_H

#include <stddef.h>
#include <stdint.h>

/* The walk's tables (about 27 KiB): one per thread, kept between calls. */
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

/* ---- a part of a stream inflated from a block's start (parallel inflate) ----
 *
 * A deflate stream is cut into parts that threads inflate at once: a part
 * starts at a block's start (found by tk__dscan_find, or where the part
 * before ended) and runs to the first block start at or after a stop bit.
 * Its matches may reach up to 32 KiB back, before its start, into bytes
 * that the part before has not given yet: those come out as markers,
 * resolved once that part is done. After 32 KiB of output without a
 * marker the rest is plain bytes. */
#define TK__DWIN 32768
/* In a part's marked output, TK__DMARK | i stands for byte i of the 32 KiB
 * before the part's start (0 the oldest); 0-255 are the bytes themselves. */
#define TK__DMARK 0x8000u

typedef struct tk__dpart {
	uint64_t end_bit; /* where it stopped: a block's start at or after the stop bit, or the stream's end */
	int final;        /* 1: it stopped at the end of the final block */
	/* its output: marked[TK__DWIN .. TK__DWIN + n_marked) (marked[0 .. TK__DWIN)
	 * holds the markers themselves), then plain[plain_at .. n_plain)
	 * (plain[0 .. plain_at) is the window before them) */
	uint16_t *marked;
	size_t n_marked, cap_marked;
	uint8_t *plain;
	size_t plain_at, n_plain, cap_plain;
} tk__dpart;

enum { TK__DP_OK = 0, TK__DP_BAD = -1, TK__DP_SHORT = -2, TK__DP_BIG = -3, TK__DP_NOMEM = -4 };

/* Inflates p[0..n) from start_bit (a block's header) to the first block
 * start at or after stop_bit, or to the end of the final block. win: the
 * win_len (at most TK__DWIN) bytes before start_bit, or NULL where they
 * are not known (markers). TK__DP_OK; TK__DP_BAD where the bits are not a
 * stream zlib would inflate from there (a bad code, a match before the
 * window); TK__DP_SHORT where it ran past p[n) first; TK__DP_BIG where its
 * output would pass max_out bytes; TK__DP_NOMEM. d's buffers are reused
 * from call to call. */
int tk__dpart_inflate(tk__dscan *s, const uint8_t *p, size_t n, uint64_t start_bit, uint64_t stop_bit,
                      const uint8_t *win, size_t win_len, size_t max_out, tk__dpart *d);
/* The bytes a part inflated to. */
static inline size_t tk__dpart_len(const tk__dpart *d)
{
	return d->n_marked + d->n_plain - d->plain_at;
}
/* The part's marked output [from, to) written to dst (to - from bytes), each
 * marker replaced by its byte of win, the win_len (at most TK__DWIN) bytes
 * before the part; -1 where a marker stands for a byte before win. dst may
 * be (uint8_t *)d->marked: the bytes then take the entries' place. */
int tk__dpart_resolve(const tk__dpart *d, const uint8_t *win, size_t win_len, size_t from, size_t to, uint8_t *dst);
void tk__dpart_free(tk__dpart *d);

/* The first bit in [from, to) of p[0..n) where a block could start: a
 * dynamic block, not final, whose header and codes are valid and that
 * decodes to its end-of-block code with matches reaching at most 32 KiB
 * before it, followed by what could be a block's header. 1 with *at set,
 * or 0. A block that starts there in the stream is found unless an earlier
 * bit passes too, or it is stored or fixed, or it runs past p[n). */
int tk__dscan_find(tk__dscan *s, const uint8_t *p, size_t n, uint64_t from, uint64_t to, uint64_t *at);

/* The length of a gzip member's header at p[0..n) (its name, comment, extra
 * field and header CRC included), or 0 where it is not a whole one there. */
size_t tk__gzip_header_len(const unsigned char *p, size_t n);

#endif
