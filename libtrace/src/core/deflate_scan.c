/* deflate_scan.c: a raw deflate stream (RFC 1951) walked block by block, every symbol
 * decoded and nothing written: where the final block starts, where the stream ends and
 * how long it inflates. The gzip writer uses it to continue a stream that a one-shot
 * compressor (libdeflate) ended with a final block. It takes the streams zlib's raw
 * inflate takes and refuses the rest (fuzz_deflate holds the two against each other). */
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "core/deflate_scan.h"

#define MAXBITS 15
enum { CODES, LENS, DISTS };

/* The decoding tables (literal/length, distance, code length): 1 << LROOT
 * (DROOT, CROOT) entries indexed by the next bits of the stream, then the
 * subtables of the codes longer than that, indexed by the bits after
 * those. An entry: bits 0-4 the bits its code takes (in a subtable, those
 * past the root), bits 5-7 its kind, then a literal's byte or a code length
 * code's symbol (bits 8-15); a length's or a distance's
 * extra bits (8-11) and base (16-31); a subtable's index bits (0-4) and
 * offset (16-31). E_BAD: a code for no length or distance (286, 287; 30,
 * 31), or with no bits taken, no code starting so. */
#define LROOT 10
#define DROOT 8
#define CROOT 7 /* the code length code's lengths are at most 7 bits: no subtables */
enum { E_BAD = 0, E_LIT = 1 << 5, E_LEN = 2 << 5, E_EOB = 3 << 5, E_SUB = 4 << 5, E_KIND = 7 << 5 };
/* The most entries a table of a complete code takes: a subtable of 1 << k
 * entries holds at least k + 1 codes, so at most 286 / 6 subtables of 32
 * past a root of 10 bits (1,525 entries), 30 / 8 of 128 past 8 (480). */
#define LIT_ENOUGH ((1 << LROOT) + 1536)
#define DIST_ENOUGH ((1 << DROOT) + 512)

struct tk__dscan {
	uint32_t lit[LIT_ENOUGH];
	uint32_t dist[DIST_ENOUGH];
	uint32_t codes[1 << CROOT]; /* the code length code: its symbols as E_LIT entries */
	uint32_t fixed_lit[1 << LROOT]; /* the fixed codes, built with the walk */
	uint32_t fixed_dist[1 << DROOT];
	uint16_t kraft[1 << 12]; /* four code length code lengths (3 bits each): their sum of 128 >> length */
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

/* The canonical code of lens[0..n): next[l] the first code of each length
 * up to *max, the longest (0 where there are no codes). The codes missing
 * from a complete set: 0, more where it is incomplete; -1 where it is
 * over-subscribed. */
static int canonical(const uint8_t *lens, unsigned n, unsigned next[MAXBITS + 1], unsigned *max)
{
	unsigned count[MAXBITS + 1] = {0};
	for (unsigned i = 0; i < n; i++)
		count[lens[i]]++;
	count[0] = 0;
	unsigned m = MAXBITS;
	while (m >= 1 && !count[m])
		m--;
	*max = m;
	int left = 1;
	for (unsigned l = 1; l <= MAXBITS; l++) {
		left = 2 * left - (int)count[l];
		if (left < 0)
			return -1;
	}
	unsigned code = 0;
	for (unsigned l = 1; l <= m; l++) {
		code = (code + count[l - 1]) << 1;
		next[l] = code;
	}
	return left;
}

/* Code c of l bits in the stream's order (its first bit lowest). */
static unsigned reversed(unsigned c, unsigned l)
{
	unsigned r = 0;
	for (unsigned k = 0; k < l; k++, c >>= 1)
		r = r << 1 | (c & 1);
	return r;
}

/* The entry of symbol sym of a code length, literal/length or distance code. */
static uint32_t entry(unsigned sym, int type)
{
	if (type == CODES)
		return E_LIT | sym << 8;
	if (type == DISTS)
		return sym < 30 ? E_LEN | (uint32_t)dist_extra[sym] << 8 | (uint32_t)dist_base[sym] << 16 : E_BAD;
	if (sym < 256)
		return E_LIT | sym << 8;
	if (sym == 256)
		return E_EOB;
	sym -= 257;
	return sym < 29 ? E_LEN | (uint32_t)len_extra[sym] << 8 | (uint32_t)len_base[sym] << 16 : E_BAD;
}

/* The code length (CODES), literal/length (LENS) or distance (DISTS) code
 * of lens[0..n) as a table of `root` bits and its subtables (cap entries in
 * all). zlib's rules: an over-subscribed set is refused, an incomplete one
 * too unless it is a single literal/length or distance code of one bit; a
 * set without codes decodes nothing. */
static int build(uint32_t *tab, size_t cap, const uint8_t *lens, unsigned n, int type, unsigned root)
{
	unsigned next[MAXBITS + 1], max;
	int left = canonical(lens, n, next, &max);
	unsigned rsize = 1u << root, rmask = rsize - 1;
	if (max == 0) {
		memset(tab, 0, rsize * sizeof *tab);
		return 0;
	}
	if (left < 0 || (left > 0 && (type == CODES || max != 1)))
		return -1;
	if (left > 0)
		memset(tab, 0, rsize * sizeof *tab);
	/* each code reversed (the stream's order); the longest code under each
	 * root entry that has a subtable */
	uint16_t rev[288];
	uint8_t sub[1 << LROOT];
	if (max > root)
		memset(sub, 0, rsize);
	for (unsigned sym = 0; sym < n; sym++) {
		unsigned l = lens[sym];
		if (!l)
			continue;
		unsigned r = reversed(next[l]++, l);
		rev[sym] = (uint16_t)r;
		if (l > root && sub[r & rmask] < l)
			sub[r & rmask] = (uint8_t)l;
	}
	if (max > root) {
		size_t off = rsize;
		for (unsigned k = 0; k < rsize; k++) {
			if (!sub[k])
				continue;
			unsigned sb = sub[k] - root;
			if (off + ((size_t)1 << sb) > cap)
				return -1; /* not for a complete code (LIT_ENOUGH) */
			tab[k] = E_SUB | sb | (uint32_t)off << 16;
			off += (size_t)1 << sb;
		}
	}
	for (unsigned sym = 0; sym < n; sym++) {
		unsigned l = lens[sym];
		if (!l)
			continue;
		uint32_t e = entry(sym, type);
		unsigned r = rev[sym];
		if (l <= root) {
			for (unsigned i = r; i < rsize; i += 1u << l)
				tab[i] = e | l;
		} else {
			uint32_t *st = tab + (tab[r & rmask] >> 16);
			unsigned sb = sub[r & rmask] - root;
			for (unsigned i = r >> root; i < 1u << sb; i += 1u << (l - root))
				st[i] = e | (l - root);
		}
	}
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

/* The next entry of a decoding table, its code's bits taken (none where
 * no code starts so). */
static inline uint32_t fdecode(bits *b, const uint32_t *tab, unsigned root)
{
	uint32_t e = tab[b->buf & ((1u << root) - 1)];
	if ((e & E_KIND) == E_SUB) {
		b->buf >>= root;
		b->cnt -= root;
		e = tab[(e >> 16) + (b->buf & ((1u << (e & 31)) - 1))];
	}
	unsigned l = e & 31;
	b->buf >>= l;
	b->cnt -= l;
	return e;
}

static uint64_t bit_pos(const bits *b)
{
	return (uint64_t)b->pos * 8 - b->cnt;
}

/* 1 where the bits read so far run past p[n) (zeros stood in for them). */
static inline int past_end(const bits *b)
{
	return b->pos > b->n && bit_pos(b) > (uint64_t)b->n * 8;
}

/* A coded block's symbols walked, nothing written, *out counting the bytes
 * they stand for (matches may reach back *out bytes): 0 at its end-of-block
 * code, -1 where the bits are not a block's or run past p[n). */
static int walk_symbols(bits *b, const uint32_t *lt, const uint32_t *dt, uint64_t *out)
{
	for (;;) {
		if (refill(b) || past_end(b)) /* a length and a distance take at most 48 bits */
			return -1;
		uint32_t e = fdecode(b, lt, LROOT);
		unsigned kind = e & E_KIND;
		if (kind == E_LIT) {
			++*out;
			continue;
		}
		if (kind == E_EOB)
			return past_end(b) ? -1 : 0;
		if (kind != E_LEN)
			return -1;
		unsigned len = (e >> 16) + take(b, (e >> 8) & 15);
		uint32_t d = fdecode(b, dt, DROOT);
		if ((d & E_KIND) != E_LEN || (d >> 16) + take(b, (d >> 8) & 15) > *out)
			return -1; /* a bad code, or a match before what came out (no dictionary) */
		*out += len;
	}
}

/* A dynamic block's header: its two tables. */
static int dynamic_tables(tk__dscan *s, bits *b)
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
	if (build(s->codes, 1 << CROOT, lens, 19, CODES, CROOT))
		return -1;
	for (unsigned i = 0; i < nlit + ndist;) {
		if (refill(b))
			return -1;
		uint32_t e = fdecode(b, s->codes, CROOT);
		if ((e & E_KIND) != E_LIT)
			return -1;
		unsigned sym = e >> 8 & 255;
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
	if (build(s->lit, LIT_ENOUGH, lens, nlit, LENS, LROOT) ||
	    build(s->dist, DIST_ENOUGH, lens + nlit, ndist, DISTS, DROOT))
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
	build(s->fixed_lit, 1 << LROOT, lens, 288, LENS, LROOT);
	memset(lens, 5, 32);
	build(s->fixed_dist, 1 << DROOT, lens, 32, DISTS, DROOT);
	for (unsigned v = 0; v < 1u << 12; v++)
		for (unsigned k = 0; k < 12; k += 3)
			s->kraft[v] = (uint16_t)(s->kraft[v] + (v >> k & 7 ? 128u >> (v >> k & 7) : 0));
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
			if (type == 1) {
				lt = s->fixed_lit;
				dt = s->fixed_dist;
			} else if (dynamic_tables(s, &b)) {
				return -1;
			}
			if (walk_symbols(&b, lt, dt, &out))
				return -1;
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

/* ---- a part of a stream inflated from a block's start ---- */

void tk__dpart_free(tk__dpart *d)
{
	free(d->marked);
	free(d->plain);
	memset(d, 0, sizeof *d);
}

/* Room for at least `need` more entries after `used` (tk__grow): a match
 * never needs more than its length and 16 of slack, a stored run its length
 * and 8. */
static int grow16(tk__dpart *d, size_t used, size_t need)
{
	return tk__grow(&d->marked, &d->cap_marked, used + need, sizeof *d->marked, TK__DWIN * 4);
}

static int grow8(tk__dpart *d, size_t used, size_t need)
{
	return tk__grow(&d->plain, &d->cap_plain, used + need, 1, TK__DWIN * 8);
}

/* The bits from bit `at` of p[0..n). */
static void bits_at(bits *b, const uint8_t *p, size_t n, uint64_t at)
{
	*b = (bits){p, n, (size_t)(at / 8), 0, 0};
	refill(b);
	take(b, (unsigned)(at % 8));
}

/* Where the bits are not a stream's: damage, or only the zeros read past p[n). */
static int fail_at(const bits *b)
{
	return past_end(b) ? TK__DP_SHORT : TK__DP_BAD;
}

/* A block's coded symbols: its tables, from its header (past BTYPE). */
static int block_tables(tk__dscan *s, bits *b, unsigned type, const uint32_t **lt, const uint32_t **dt)
{
	*lt = s->lit;
	*dt = s->dist;
	if (type == 1) {
		*lt = s->fixed_lit;
		*dt = s->fixed_dist;
		return 0;
	}
	return dynamic_tables(s, b);
}

/* A stored block's length, past its header, with b moved to its first
 * byte (at b->pos, b->cnt 0); -1 where LEN and NLEN disagree, -2 past p[n). */
static long stored_len(bits *b)
{
	take(b, b->cnt & 7);
	uint64_t at = bit_pos(b) / 8;
	if (at + 4 > b->n)
		return -2;
	const uint8_t *q = b->p + at;
	unsigned len = q[0] | (unsigned)q[1] << 8, nlen = q[2] | (unsigned)q[3] << 8;
	if (len != (~nlen & 0xffff))
		return -1;
	b->pos = (size_t)(at + 4);
	b->buf = 0;
	b->cnt = 0;
	return (long)len;
}

int tk__dpart_inflate(tk__dscan *s, const uint8_t *p, size_t n, uint64_t start_bit, uint64_t stop_bit,
                      const uint8_t *win, size_t win_len, size_t max_out, tk__dpart *d)
{
	d->end_bit = 0;
	d->final = 0;
	d->n_marked = d->n_plain = d->plain_at = 0;
	if (start_bit >= (uint64_t)n * 8)
		return TK__DP_SHORT;
	bits b;
	bits_at(&b, p, n, start_bit);
	/* o: the next entry of the buffer in use; base: where the output starts
	 * in it; clean: the entry after the last marker written (marked mode) */
	int marked = !win;
	size_t o, base, clean = TK__DWIN;
	if (marked) {
		if (grow16(d, 0, TK__DWIN + 1024))
			return TK__DP_NOMEM;
		for (unsigned i = 0; i < TK__DWIN; i++)
			d->marked[i] = (uint16_t)(TK__DMARK | i);
		o = base = TK__DWIN;
	} else {
		if (win_len > TK__DWIN) {
			win += win_len - TK__DWIN;
			win_len = TK__DWIN;
		}
		if (grow8(d, 0, win_len + 1024))
			return TK__DP_NOMEM;
		memcpy(d->plain, win, win_len);
		o = base = d->plain_at = win_len;
	}
	size_t before = 0; /* output of the marked mode, once it has ended */
	for (;;) {
		if (refill(&b) || past_end(&b))
			return TK__DP_SHORT;
		uint64_t hdr = bit_pos(&b);
		if (hdr >= stop_bit && hdr > start_bit) {
			d->end_bit = hdr;
			break;
		}
		unsigned final = take(&b, 1), type = take(&b, 2);
		if (type == 3)
			return fail_at(&b);
		if (type == 0) {
			long len = stored_len(&b);
			if (len == -1)
				return TK__DP_BAD;
			if (len < 0 || b.pos + (size_t)len > n)
				return TK__DP_SHORT;
			if (before + (o - base) + (size_t)len > max_out)
				return TK__DP_BIG;
			const uint8_t *q = p + b.pos;
			if (marked) {
				if (grow16(d, o, (size_t)len + 8))
					return TK__DP_NOMEM;
				for (long i = 0; i < len; i++)
					d->marked[o + (size_t)i] = q[i];
			} else {
				if (grow8(d, o, (size_t)len + 8))
					return TK__DP_NOMEM;
				memcpy(d->plain + o, q, (size_t)len);
			}
			o += (size_t)len;
			b.pos += (size_t)len;
		} else {
			const uint32_t *lt, *dt;
			bits t = b; /* b itself never has its address passed on: it stays in registers */
			int bad = block_tables(s, &t, type, &lt, &dt);
			b = t;
			if (bad)
				return fail_at(&b);
			for (;;) {
				if (refill(&b))
					return TK__DP_SHORT;
				if (marked && o - clean >= TK__DWIN) {
					/* 32 KiB without a marker: plain bytes from here */
					if (grow8(d, 0, TK__DWIN + 1024))
						return TK__DP_NOMEM;
					for (size_t i = 0; i < TK__DWIN; i++)
						d->plain[i] = (uint8_t)d->marked[o - TK__DWIN + i];
					d->n_marked = o - TK__DWIN;
					before = d->n_marked;
					marked = 0;
					o = base = d->plain_at = TK__DWIN;
				}
				/* room for the longest match and the copies' slack */
				if (marked ? d->cap_marked - o < 258 + 16 && grow16(d, o, 258 + 16)
				           : d->cap_plain - o < 258 + 16 && grow8(d, o, 258 + 16))
					return TK__DP_NOMEM;
				uint32_t e = fdecode(&b, lt, LROOT);
				unsigned kind = e & E_KIND;
				if (kind == E_LIT) {
					if (marked)
						d->marked[o++] = (uint16_t)(e >> 8 & 255);
					else
						d->plain[o++] = (uint8_t)(e >> 8);
					if (before + (o - base) > max_out)
						return TK__DP_BIG;
					continue;
				}
				if (kind == E_EOB)
					break;
				if (kind != E_LEN)
					return fail_at(&b);
				size_t len = (e >> 16) + take(&b, (e >> 8) & 15);
				uint32_t de = fdecode(&b, dt, DROOT);
				if ((de & E_KIND) != E_LEN)
					return fail_at(&b);
				size_t dist = (de >> 16) + take(&b, (de >> 8) & 15);
				if (past_end(&b))
					return TK__DP_SHORT;
				if (dist > o) /* before the window */
					return TK__DP_BAD;
				if (before + (o - base) + len > max_out)
					return TK__DP_BIG;
				if (marked) {
					uint16_t *m = d->marked + o;
					const uint16_t *from = m - dist;
					uint64_t any = 0;
					if (dist >= 8) {
						/* 8 entries at a time, each one's source written already; the
						 * last entries past the match may count as markers too, which
						 * only puts the plain bytes off */
						for (size_t i = 0; i < len; i += 8) {
							uint64_t w[2];
							memcpy(w, from + i, 16);
							memcpy(m + i, w, 16);
							any |= w[0] | w[1];
						}
					} else if (dist >= 4) {
						for (size_t i = 0; i < len; i += 4) {
							uint64_t w;
							memcpy(&w, from + i, 8);
							memcpy(m + i, &w, 8);
							any |= w;
						}
					} else {
						for (size_t i = 0; i < len; i++) {
							m[i] = from[i];
							any |= from[i];
						}
					}
					o += len;
					if (any & 0x8000800080008000ull)
						clean = o;
				} else {
					uint8_t *q = d->plain + o;
					const uint8_t *from = q - dist;
					if (dist >= 16) {
						/* 16 bytes at a time: each one's source is written already */
						for (size_t i = 0; i < len; i += 16)
							memcpy(q + i, from + i, 16);
					} else if (dist >= 8) {
						for (size_t i = 0; i < len; i += 8)
							memcpy(q + i, from + i, 8);
					} else if (dist == 1) {
						memset(q, from[0], len);
					} else {
						for (size_t i = 0; i < len; i++)
							q[i] = from[i];
					}
					o += len;
				}
			}
		}
		if (past_end(&b))
			return TK__DP_SHORT;
		if (final) {
			d->end_bit = bit_pos(&b);
			d->final = 1;
			break;
		}
	}
	if (marked)
		d->n_marked = o - TK__DWIN;
	else
		d->n_plain = o;
	return TK__DP_OK;
}

int tk__dpart_resolve(const tk__dpart *d, const uint8_t *win, size_t win_len, size_t from, size_t to, uint8_t *dst)
{
	if (win_len > TK__DWIN) {
		win += win_len - TK__DWIN;
		win_len = TK__DWIN;
	}
	size_t lost = TK__DWIN - win_len; /* markers below this stand for bytes before win */
	/* in place, dst[i .. i + 8) is written after entries i .. i + 8 are read, below where any later entry lies */
	const uint16_t *m = d->marked + TK__DWIN + from;
	uint8_t *map;
	if (!lost && to - from >= 16 * TK__DWIN && (map = malloc(TK__DMARK + TK__DWIN))) {
		/* every entry looked up, no branch: bytes 0-255 are themselves, markers
		 * their window's bytes (entries 256 to TK__DMARK - 1 never occur) */
		for (unsigned v = 0; v < 256; v++)
			map[v] = (uint8_t)v;
		memcpy(map + TK__DMARK, win, TK__DWIN);
		size_t n = to - from, i = 0;
		/* eight at a time into one word: about half again as fast as a byte at a time */
		for (; i + 8 <= n; i += 8) {
			uint64_t w = (uint64_t)map[m[i]] | (uint64_t)map[m[i + 1]] << 8 | (uint64_t)map[m[i + 2]] << 16 |
			             (uint64_t)map[m[i + 3]] << 24 | (uint64_t)map[m[i + 4]] << 32 |
			             (uint64_t)map[m[i + 5]] << 40 | (uint64_t)map[m[i + 6]] << 48 |
			             (uint64_t)map[m[i + 7]] << 56;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
			w = __builtin_bswap64(w);
#endif
			memcpy(dst + i, &w, 8);
		}
		for (; i < n; i++)
			dst[i] = map[m[i]];
		free(map);
		return 0;
	}
	for (size_t i = 0; i < to - from; i++) {
		uint16_t v = m[i];
		if (v & TK__DMARK) {
			size_t k = v & (TK__DWIN - 1);
			if (k < lost)
				return -1;
			dst[i] = win[k - lost];
		} else {
			dst[i] = (uint8_t)v;
		}
	}
	return 0;
}

/* Walks a block from its header at bit `at` as tk__dpart_inflate reads
 * it, with matches allowed up to TK__DWIN before it, writing nothing: 0
 * with *next the bit after it, -1 otherwise. Only a dynamic block, not
 * final, is taken (what tk__dscan_find looks for). */
static int walk_block(tk__dscan *s, const uint8_t *p, size_t n, uint64_t at, uint64_t *next)
{
	bits b;
	bits_at(&b, p, n, at);
	if (take(&b, 3) != 4) /* BFINAL 0, BTYPE 2 */
		return -1;
	const uint32_t *lt, *dt;
	if (block_tables(s, &b, 2, &lt, &dt))
		return -1;
	uint64_t out = TK__DWIN;
	if (walk_symbols(&b, lt, dt, &out))
		return -1;
	*next = bit_pos(&b);
	return 0;
}

/* 1 where a block's header could start at bit `at` (or p[n) ends first). */
static int header_fits(tk__dscan *s, const uint8_t *p, size_t n, uint64_t at)
{
	if (at + 3 > (uint64_t)n * 8)
		return 1;
	bits b;
	bits_at(&b, p, n, at);
	take(&b, 1);
	unsigned type = take(&b, 2);
	if (type == 3)
		return 0;
	if (type == 0)
		return stored_len(&b) != -1;
	if (type == 1)
		return 1;
	return dynamic_tables(s, &b) == 0 || past_end(&b);
}

/* At least 57 bits of p[0..n) from bit x, zeros past the end. */
static inline uint64_t bits57(const uint8_t *p, size_t n, uint64_t x)
{
	size_t i = (size_t)(x / 8);
	uint64_t w = 0;
	if (i + 8 <= n) {
		memcpy(&w, p + i, 8);
	} else {
		for (size_t k = 0; i + k < n; k++)
			w |= (uint64_t)p[i + k] << (8 * k);
	}
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	w = __builtin_bswap64(w);
#endif
	return w >> (x % 8);
}

/* The quick test of a block start at bit x, where most bits fail before a
 * table is built: not final, dynamic, at most 286 + 30 codes, and the code
 * length code's lengths make a complete code (zlib refuses any other). */
static int quick_header(const tk__dscan *s, const uint8_t *p, size_t n, uint64_t x)
{
	uint64_t w = bits57(p, n, x);
	if ((w & 7) != 4 || ((w >> 3) & 31) > 29 || ((w >> 8) & 31) > 29)
		return 0;
	unsigned nbits = ((unsigned)((w >> 13) & 15) + 4) * 3; /* the lengths' bits: 12 to 57 */
	/* the first 12 lengths (36 bits), then the rest (at most 21 bits) */
	uint64_t lo = w >> 17 & (((uint64_t)1 << (nbits < 36 ? nbits : 36)) - 1);
	uint64_t hi = nbits > 36 ? bits57(p, n, x + 17 + 36) & (((uint64_t)1 << (nbits - 36)) - 1) : 0;
	const uint16_t *k = s->kraft;
	unsigned sum = k[lo & 0xfff] + k[lo >> 12 & 0xfff] + k[lo >> 24] + k[hi & 0xfff] + k[hi >> 12];
	return sum == 128;
}

int tk__dscan_find(tk__dscan *s, const uint8_t *p, size_t n, uint64_t from, uint64_t to, uint64_t *at)
{
	if (to > (uint64_t)n * 8)
		to = (uint64_t)n * 8;
	for (uint64_t x = from; x + 17 < to; x += 32) {
		/* the 32 bits from x at once: where BFINAL 0 and BTYPE 2 (bits 0 0 1),
		 * HLIT and HDIST at most 29 (not 30 or 31: their top four bits set) */
		uint64_t w = bits57(p, n, x);
		uint64_t hlit = w >> 4 & w >> 5 & w >> 6 & w >> 7, hdist = w >> 9 & w >> 10 & w >> 11 & w >> 12;
		uint64_t cand = ~w & ~(w >> 1) & w >> 2 & ~hlit & ~hdist & 0xffffffffu;
		if (to - x < 32 + 17)
			cand &= ((uint64_t)1 << (to - x - 17)) - 1;
		for (; cand; cand &= cand - 1) {
			uint64_t y = x + (unsigned)__builtin_ctzll(cand), next;
			if (quick_header(s, p, n, y) && walk_block(s, p, n, y, &next) == 0 && header_fits(s, p, n, next)) {
				*at = y;
				return 1;
			}
		}
	}
	return 0;
}

/* The length of the gzip header at p[0..n), or 0 where it is not whole there. */
size_t tk__gzip_header_len(const unsigned char *p, size_t n)
{
	if (n < 10 || p[0] != 0x1f || p[1] != 0x8b || p[2] != 8)
		return 0;
	unsigned flg = p[3];
	size_t at = 10;
	if (flg & 4) {
		if (at + 2 > n)
			return 0;
		at += 2 + (p[at] | (size_t)p[at + 1] << 8);
	}
	for (unsigned f = 8; f <= 16; f <<= 1)
		if (flg & f) {
			while (at < n && p[at])
				at++;
			if (at++ >= n)
				return 0;
		}
	if (flg & 2)
		at += 2;
	return at < n ? at : 0;
}
