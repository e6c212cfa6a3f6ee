/* deflate_scan.c: a raw deflate stream (RFC 1951) walked block by block, every symbol
 * decoded and nothing written: where the final block starts, where the stream ends and
 * how long it inflates. The gzip writer uses it to continue a stream that a one-shot
 * compressor (libdeflate) ended with a final block. It takes the streams zlib's raw
 * inflate takes and refuses the rest (fuzz_deflate holds the two against each other). */
#include <stdlib.h>
#include <string.h>

#include "core/deflate_scan.h"

#define MAXBITS 15
enum { CODES, LENS, DISTS };

/* A decoding table of 1 << bits entries, indexed by the next bits of the
 * stream: sym << 4 | length of its code, 0 where no code starts so. */
struct tk__dscan {
	uint32_t lit[1 << MAXBITS];
	uint32_t dist[1 << MAXBITS];
	uint32_t codes[1 << 7];
	uint32_t fixed_lit[1 << 9]; /* the fixed codes, built with the walk */
	uint32_t fixed_dist[1 << 5];
};

static const uint16_t len_base[29] = {3,  4,  5,  6,  7,  8,  9,  10, 11,  13,  15,  17,  19,  23, 27,
                                      31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258};
static const uint8_t len_extra[29] = {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2,
                                      2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0};
static const uint16_t dist_base[30] = {1,   2,   3,   4,   5,   7,    9,    13,   17,   25,
                                       33,  49,  65,  97,  129, 193,  257,  385,  513,  769,
                                       1025, 1537, 2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577};
static const uint8_t dist_extra[30] = {0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6,
                                       6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13};
/* the order in which the code length code's lengths come */
static const uint8_t cl_order[19] = {16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15};

/* The canonical code of lens[0..n) as a table; *bits its longest code.
 * zlib's rules: an over-subscribed set is refused, an incomplete one too
 * unless it is a single code of one bit (literal/length and distance
 * codes); a set without codes decodes nothing. */
static int build(uint32_t *tab, unsigned *bits, const uint8_t *lens, unsigned n, int type)
{
	unsigned count[MAXBITS + 1] = {0};
	for (unsigned i = 0; i < n; i++)
		count[lens[i]]++;
	count[0] = 0;
	unsigned max = MAXBITS;
	while (max >= 1 && !count[max])
		max--;
	if (max == 0) {
		tab[0] = tab[1] = 0;
		*bits = 1;
		return 0;
	}
	int left = 1;
	for (unsigned l = 1; l <= MAXBITS; l++) {
		left = 2 * left - (int)count[l];
		if (left < 0)
			return -1;
	}
	if (left > 0 && (type == CODES || max != 1))
		return -1;
	unsigned size = 1u << max;
	if (left > 0)
		memset(tab, 0, size * sizeof *tab);
	unsigned next[MAXBITS + 1], code = 0;
	for (unsigned l = 1; l <= max; l++) {
		code = (code + count[l - 1]) << 1;
		next[l] = code;
	}
	for (unsigned sym = 0; sym < n; sym++) {
		unsigned l = lens[sym];
		if (!l)
			continue;
		unsigned c = next[l]++, r = 0;
		for (unsigned k = 0; k < l; k++, c >>= 1)
			r = r << 1 | (c & 1);
		for (unsigned i = r; i < size; i += 1u << l)
			tab[i] = sym << 4 | l;
	}
	*bits = max;
	return 0;
}

/* The stream's bits, least significant first: buf holds cnt of them. Past
 * the end it reads zeros, at most 8 bytes' worth: the walk then fails. */
typedef struct bits {
	const uint8_t *p;
	size_t n, pos;
	uint64_t buf;
	unsigned cnt;
} bits;

/* At least 56 bits in buf; -1 past the end by more than 8 bytes. */
static inline int refill(bits *b)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	if (b->pos + 8 <= b->n) {
		/* the bits above cnt that this loads again are the same bits */
		uint64_t w;
		memcpy(&w, b->p + b->pos, 8);
		b->buf |= w << b->cnt;
		b->pos += (63 ^ b->cnt) >> 3;
		b->cnt |= 56;
		return 0;
	}
#endif
	while (b->cnt < 56) {
		if (b->pos >= b->n + 8)
			return -1;
		uint64_t c = b->pos < b->n ? b->p[b->pos] : 0;
		b->buf |= c << b->cnt;
		b->pos++;
		b->cnt += 8;
	}
	return 0;
}

static inline unsigned take(bits *b, unsigned k)
{
	unsigned v = (unsigned)(b->buf & ((1u << k) - 1));
	b->buf >>= k;
	b->cnt -= k;
	return v;
}

/* The next symbol of a table, or -1 where no code starts with these bits. */
static inline int decode(bits *b, const uint32_t *tab, unsigned tbits)
{
	uint32_t e = tab[b->buf & ((1u << tbits) - 1)];
	unsigned l = e & 15;
	if (!l)
		return -1;
	b->buf >>= l;
	b->cnt -= l;
	return (int)(e >> 4);
}

static uint64_t bit_pos(const bits *b)
{
	return (uint64_t)b->pos * 8 - b->cnt;
}

/* A dynamic block's header: its two tables. */
static int dynamic_tables(tk__dscan *s, bits *b, unsigned *lbits, unsigned *dbits)
{
	if (refill(b))
		return -1;
	unsigned nlit = take(b, 5) + 257, ndist = take(b, 5) + 1, ncl = take(b, 4) + 4;
	if (nlit > 286 || ndist > 30)
		return -1;
	uint8_t lens[286 + 30];
	memset(lens, 0, 19);
	for (unsigned i = 0; i < ncl; i++) {
		if (refill(b))
			return -1;
		lens[cl_order[i]] = (uint8_t)take(b, 3);
	}
	unsigned cbits;
	if (build(s->codes, &cbits, lens, 19, CODES))
		return -1;
	for (unsigned i = 0; i < nlit + ndist;) {
		if (refill(b))
			return -1;
		int sym = decode(b, s->codes, cbits);
		if (sym < 0)
			return -1;
		if (sym < 16) {
			lens[i++] = (uint8_t)sym;
			continue;
		}
		unsigned rep;
		uint8_t val = 0;
		if (sym == 16) {
			if (!i)
				return -1;
			val = lens[i - 1];
			rep = 3 + take(b, 2);
		} else if (sym == 17) {
			rep = 3 + take(b, 3);
		} else {
			rep = 11 + take(b, 7);
		}
		if (i + rep > nlit + ndist)
			return -1;
		memset(lens + i, val, rep);
		i += rep;
	}
	if (!lens[256]) /* no end-of-block code */
		return -1;
	if (build(s->lit, lbits, lens, nlit, LENS) || build(s->dist, dbits, lens + nlit, ndist, DISTS))
		return -1;
	return 0;
}

tk__dscan *tk__dscan_new(void)
{
	tk__dscan *s = calloc(1, sizeof *s);
	if (!s)
		return NULL;
	uint8_t lens[288];
	memset(lens, 8, 144);
	memset(lens + 144, 9, 112);
	memset(lens + 256, 7, 24);
	memset(lens + 280, 8, 8);
	unsigned tbits;
	build(s->fixed_lit, &tbits, lens, 288, LENS);
	memset(lens, 5, 32);
	build(s->fixed_dist, &tbits, lens, 32, DISTS);
	return s;
}

void tk__dscan_free(tk__dscan *s)
{
	free(s);
}

int tk__dscan_stream(tk__dscan *s, const void *p, size_t n, tk__dscan_result *r)
{
	bits b = {p, n, 0, 0, 0};
	uint64_t out = 0;
	for (;;) {
		if (refill(&b))
			return -1;
		uint64_t hdr = bit_pos(&b);
		unsigned final = take(&b, 1), type = take(&b, 2);
		if (type == 0) { /* stored: to the byte, LEN, NLEN, the bytes */
			take(&b, b.cnt & 7);
			uint64_t at = bit_pos(&b) / 8;
			if (at + 4 > n)
				return -1;
			const uint8_t *q = b.p + at;
			unsigned len = q[0] | (unsigned)q[1] << 8, nlen = q[2] | (unsigned)q[3] << 8;
			if (len != (~nlen & 0xffff) || at + 4 + len > n)
				return -1;
			out += len;
			b.pos = (size_t)(at + 4 + len);
			b.buf = 0;
			b.cnt = 0;
		} else if (type == 3) {
			return -1;
		} else {
			const uint32_t *lt = s->lit, *dt = s->dist;
			unsigned lbits = 9, dbits = 5;
			if (type == 1) {
				lt = s->fixed_lit;
				dt = s->fixed_dist;
			} else if (dynamic_tables(s, &b, &lbits, &dbits)) {
				return -1;
			}
			for (;;) {
				if (refill(&b)) /* a length and a distance take at most 48 bits */
					return -1;
				int sym = decode(&b, lt, lbits);
				if (sym < 256) {
					if (sym < 0)
						return -1;
					out++;
					continue;
				}
				if (sym == 256)
					break;
				sym -= 257;
				if (sym >= 29)
					return -1;
				unsigned len = len_base[sym] + take(&b, len_extra[sym]);
				int d = decode(&b, dt, dbits);
				if (d < 0 || d >= 30)
					return -1;
				uint64_t dist = dist_base[d] + take(&b, dist_extra[d]);
				if (dist > out) /* before the stream's first byte: no dictionary */
					return -1;
				out += len;
			}
		}
		if (final) {
			uint64_t end = bit_pos(&b);
			if (end > (uint64_t)n * 8)
				return -1;
			*r = (tk__dscan_result){hdr, end, out};
			return 0;
		}
	}
}
