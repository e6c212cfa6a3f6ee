/* json_text.c: JSON lexical work: string scanning, canonical compact values, numbers. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static const char hexd[] = "0123456789abcdef";

#define scan_special tk__scan_special

/* Length of the valid UTF-8 sequence at p (lead byte >= 0x80): 2..4, 0 if
 * invalid, -1 if it runs past e. */
static int utf8_seq(const unsigned char *p, const unsigned char *e)
{
	unsigned c = p[0];
	int n;
	unsigned lo = 0x80, hi = 0xBF;
	if (c < 0xC2)
		return 0;
	else if (c < 0xE0)
		n = 2;
	else if (c < 0xF0) {
		n = 3;
		if (c == 0xE0)
			lo = 0xA0;
		if (c == 0xED)
			hi = 0x9F;
	} else if (c < 0xF5) {
		n = 4;
		if (c == 0xF0)
			lo = 0x90;
		if (c == 0xF4)
			hi = 0x8F;
	} else
		return 0;
	for (int i = 1; i < n; i++) {
		if (p + i >= e)
			return -1;
		unsigned b = p[i];
		if (i == 1 ? (b < lo || b > hi) : (b & 0xC0) != 0x80)
			return 0;
	}
	return n;
}

int tk__utf8_valid(const unsigned char *p, size_t n)
{
	const unsigned char *e = p + n;
	while (p < e) {
		if (*p < 0x80) {
			p++;
			continue;
		}
		int k = utf8_seq(p, e);
		if (k <= 0)
			return 0;
		p += k;
	}
	return 1;
}

static int hexval(unsigned c)
{
	if (c - '0' < 10)
		return (int)(c - '0');
	c |= 0x20;
	if (c - 'a' < 6)
		return (int)(c - 'a' + 10);
	return -1;
}

/* Parse \uXXXX at p (p[0] == '\\', p[1] == 'u'). -1 bad, -2 needs more. */
static long parse_u(const unsigned char *p, const unsigned char *e)
{
	if (p + 6 > e)
		return -2;
	long v = 0;
	for (int i = 2; i < 6; i++) {
		int h = hexval(p[i]);
		if (h < 0)
			return -1;
		v = v * 16 + h;
	}
	return v;
}

static int bad(tk__jerr *je, const unsigned char *at, const char *msg)
{
	je->at = at;
	je->msg = msg;
	return TK__J_BAD;
}

/* Handle a backslash escape at p. Sets *cp to the code point (or -1 for a
 * simple escape kept as is, with *simple its decoded byte), *len to the bytes
 * consumed. Lone surrogates become U+FFFD with *repaired set. */
int tk__json_escape_at(const unsigned char *p, const unsigned char *e, long *cp, char *simple,
                     int *len, int *repaired, tk__jerr *je)
{
	if (p + 2 > e)
		return TK__J_MORE;
	*cp = -1;
	*len = 2;
	switch (p[1]) {
	case '"': *simple = '"'; return TK__J_OK;
	case '\\': *simple = '\\'; return TK__J_OK;
	case '/': *simple = '/'; return TK__J_OK;
	case 'b': *simple = '\b'; return TK__J_OK;
	case 'f': *simple = '\f'; return TK__J_OK;
	case 'n': *simple = '\n'; return TK__J_OK;
	case 'r': *simple = '\r'; return TK__J_OK;
	case 't': *simple = '\t'; return TK__J_OK;
	case 'u': break;
	default: return bad(je, p, "invalid escape in string (a backslash must be followed by one of \"\\/bfnrtu)");
	}
	long v = parse_u(p, e);
	if (v == -2)
		return TK__J_MORE;
	if (v < 0)
		return bad(je, p, "invalid \\u escape in string (needs four hex digits)");
	*len = 6;
	if (v >= 0xD800 && v <= 0xDBFF) {
		/* wait for more input only while what follows could still be "\\uD" */
		const unsigned char *n = p + 6;
		if (p + 12 > e && (n >= e || (n[0] == '\\' && (n + 1 >= e || (n[1] == 'u' &&
		                                                              (n + 2 >= e || (n[2] | 0x20) == 'd'))))))
			return TK__J_MORE;
		long lo = (p + 12 <= e && p[6] == '\\' && p[7] == 'u') ? parse_u(p + 6, e) : -1;
		if (lo >= 0xDC00 && lo <= 0xDFFF) {
			*len = 12;
			v = 0x10000 + ((v - 0xD800) << 10) + (lo - 0xDC00);
		} else {
			v = 0xFFFD;
			*repaired = 1;
		}
	} else if (v >= 0xDC00 && v <= 0xDFFF) {
		v = 0xFFFD;
		*repaired = 1;
	}
	*cp = v;
	return TK__J_OK;
}

size_t tk__utf8_put(char *d, long v)
{
	if (v < 0x80) {
		d[0] = (char)v;
		return 1;
	}
	if (v < 0x800) {
		d[0] = (char)(0xC0 | (v >> 6));
		d[1] = (char)(0x80 | (v & 0x3F));
		return 2;
	}
	if (v < 0x10000) {
		d[0] = (char)(0xE0 | (v >> 12));
		d[1] = (char)(0x80 | ((v >> 6) & 0x3F));
		d[2] = (char)(0x80 | (v & 0x3F));
		return 3;
	}
	d[0] = (char)(0xF0 | (v >> 18));
	d[1] = (char)(0x80 | ((v >> 12) & 0x3F));
	d[2] = (char)(0x80 | ((v >> 6) & 0x3F));
	d[3] = (char)(0x80 | (v & 0x3F));
	return 4;
}


/* Output cursor for canonicalization. Compact output is never longer than
 * the input it comes from, except where a control character or invalid
 * UTF-8 is expanded: so after wo_start() plain copies need no checks, and the
 * expanding paths call wo_room() first. */
typedef struct wout {
	char *o, *lim;
	tk__buf *b;
} wout;

static int wo_start(wout *w, tk__buf *b, size_t need)
{
	if (tk__buf_reserve(b, need + 64))
		return -1;
	w->b = b;
	w->o = b->p + b->len;
	w->lim = b->p + b->cap - 1;
	return 0;
}

static void wo_end(wout *w)
{
	w->b->len = (size_t)(w->o - w->b->p);
}

/* Room for n bytes now plus `rest` input bytes still to copy, keeping the
 * 64 bytes of slack that the 16-byte stores rely on. */
static int wo_room(wout *w, size_t n, size_t rest)
{
	if ((size_t)(w->lim - w->o) >= n + rest + 64)
		return 0;
	wo_end(w);
	return wo_start(w, w->b, n + rest);
}

static int ctl_escape(char *d, unsigned c)
{
	d[0] = '\\';
	switch (c) {
	case '\n': d[1] = 'n'; return 2;
	case '\r': d[1] = 'r'; return 2;
	case '\t': d[1] = 't'; return 2;
	case '\b': d[1] = 'b'; return 2;
	case '\f': d[1] = 'f'; return 2;
	default:
		memcpy(d + 1, "u00", 3);
		d[4] = hexd[c >> 4];
		d[5] = hexd[c & 15];
		return 6;
	}
}


#define TK__FFFD "\xEF\xBF\xBD"

/* The string body at p (after the opening quote) to w, closing quote
 * included. Inlined where it is called, so that its vector constants stay in
 * registers while an object's keys and strings are copied. */
static inline __attribute__((always_inline)) int
canon_str(const unsigned char *p, const unsigned char *e, wout *w, const unsigned char **endp,
          tk__jerr *je)
{
	int repaired = 0;
	const __m128i vq = _mm_set1_epi8('"'), vb = _mm_set1_epi8('\\'), vs = _mm_set1_epi8(0x20);
	for (;;) {
		/* copy 16 bytes while looking for the first special one: the input
		 * has readable padding and the output 64 bytes of slack */
		__m128i v = _mm_loadu_si128((const __m128i *)(const void *)p);
		_mm_storeu_si128((__m128i *)(void *)w->o, v);
		unsigned m = (unsigned)_mm_movemask_epi8(_mm_or_si128(
		    _mm_or_si128(_mm_cmpeq_epi8(v, vq), _mm_cmpeq_epi8(v, vb)), _mm_cmplt_epi8(v, vs)));
		if (!m) {
			p += 16;
			w->o += 16;
			if (p >= e)
				return TK__J_MORE;
			continue;
		}
		unsigned k = (unsigned)__builtin_ctz(m);
		p += k;
		w->o += k;
		if (p >= e)
			return TK__J_MORE;
		unsigned c = *p;
		if (c == '"') {
			*w->o++ = '"';
			*endp = p + 1;
			je->repaired += repaired;
			return TK__J_OK;
		}
		if (c == '\\') {
			long cp;
			char simple;
			int len, rep = 0, rc = tk__json_escape_at(p, e, &cp, &simple, &len, &rep, je);
			if (rc)
				return rc;
			if (rep) {
				repaired = 1;
				memcpy(w->o, "\\ufffd", 6);
				w->o += 6;
			} else {
				memcpy(w->o, p, (size_t)len);
				w->o += len;
			}
			p += len;
		} else if (c < 0x20) {
			if (wo_room(w, 6, (size_t)(e - p)))
				return bad(je, p, "out of memory");
			w->o += ctl_escape(w->o, c);
			p++;
		} else {
			int n = utf8_seq(p, e);
			if (n < 0)
				return TK__J_MORE;
			if (n == 0) {
				repaired = 1;
				if (wo_room(w, 3, (size_t)(e - p)))
					return bad(je, p, "out of memory");
				memcpy(w->o, TK__FFFD, 3);
				w->o += 3;
				p++;
			} else {
				memcpy(w->o, p, (size_t)n);
				w->o += n;
				p += n;
			}
		}
	}
}

int tk__json_canon_string(const unsigned char *p, const unsigned char *e, tk__buf *out,
                          const unsigned char **endp, tk__jerr *je)
{
	wout w;
	if (wo_start(&w, out, (size_t)(e - p)))
		return bad(je, p, "out of memory");
	int rc = canon_str(p, e, &w, endp, je);
	if (rc == TK__J_OK)
		w.o--; /* callers add the closing quote themselves */
	wo_end(&w);
	return rc;
}

int tk__json_decode_string(const unsigned char *p, const unsigned char *e, tk__buf *out,
                           const unsigned char **endp, int *plain, tk__jerr *je)
{
	const unsigned char *start = p;
	int repaired = 0, copied = 0;
	*plain = 0;
	for (;;) {
		const unsigned char *q = scan_special(p, e);
		if (q >= e)
			return TK__J_MORE;
		unsigned c = *q;
		if (c == '"' && !copied) {
			*plain = 1;
			*endp = q + 1;
			return TK__J_OK;
		}
		if (!copied) {
			out->len = 0;
			copied = 1;
			if (tk__buf_append(out, start, (size_t)(q - start)))
				return bad(je, q, "out of memory");
		} else if (q > p && tk__buf_append(out, p, (size_t)(q - p))) {
			return bad(je, q, "out of memory");
		}
		p = q;
		if (c == '"') {
			*endp = p + 1;
			je->repaired += repaired;
			return TK__J_OK;
		}
		char tmp[4];
		size_t tn;
		if (c == '\\') {
			long cp;
			char simple;
			int len, rc = tk__json_escape_at(p, e, &cp, &simple, &len, &repaired, je);
			if (rc)
				return rc;
			if (cp < 0) {
				tmp[0] = simple;
				tn = 1;
			} else {
				tn = tk__utf8_put(tmp, cp);
			}
			p += len;
		} else if (c < 0x20) {
			tmp[0] = (char)c;
			tn = 1;
			p++;
		} else {
			int n = utf8_seq(p, e);
			if (n < 0)
				return TK__J_MORE;
			if (n == 0) {
				repaired = 1;
				memcpy(tmp, TK__FFFD, 3);
				tn = 3;
				p++;
			} else {
				memcpy(tmp, p, (size_t)n);
				tn = (size_t)n;
				p += n;
			}
		}
		if (tk__buf_append(out, tmp, tn))
			return bad(je, p, "out of memory");
	}
}

static inline __attribute__((always_inline)) const unsigned char *
scan_number(const unsigned char *p, const unsigned char *e)
{
	/* reaching e returns e: the number may go on in bytes not read yet */
	if (p < e && *p == '-')
		p++;
	if (p >= e)
		return e;
	if (*p == '0')
		p++;
	else if (*p >= '1' && *p <= '9')
		while (p < e && *p >= '0' && *p <= '9')
			p++;
	else
		return NULL;
	if (p < e && *p == '.') {
		p++;
		if (p >= e)
			return e;
		if (*p < '0' || *p > '9')
			return NULL;
		while (p < e && *p >= '0' && *p <= '9')
			p++;
	}
	if (p < e && (*p == 'e' || *p == 'E')) {
		p++;
		if (p < e && (*p == '+' || *p == '-'))
			p++;
		if (p >= e)
			return e;
		if (*p < '0' || *p > '9')
			return NULL;
		while (p < e && *p >= '0' && *p <= '9')
			p++;
	}
	return p;
}

const unsigned char *tk__json_scan_number(const unsigned char *p, const unsigned char *e)
{
	return scan_number(p, e);
}

/* Copy a literal, or say it needs more / is bad. */
static int literal(const unsigned char *p, const unsigned char *e, const char *lit, size_t n,
                   wout *w, const unsigned char **endp, tk__jerr *je)
{
	size_t have = (size_t)(e - p) < n ? (size_t)(e - p) : n;
	if (memcmp(p, lit, have) != 0)
		return bad(je, p, "expected a JSON value (string, number, object, array, true, false or null)");
	if (have < n)
		return TK__J_MORE;
	memcpy(w->o, lit, n);
	w->o += n;
	*endp = p + n;
	return TK__J_OK;
}

static int scalar(const unsigned char *p, const unsigned char *e, wout *w,
                  const unsigned char **endp, tk__jerr *je)
{
	switch (*p) {
	case '"':
		*w->o++ = '"';
		return canon_str(p + 1, e, w, endp, je);
	case 't': return literal(p, e, "true", 4, w, endp, je);
	case 'f': return literal(p, e, "false", 5, w, endp, je);
	case 'n': return literal(p, e, "null", 4, w, endp, je);
	default: break;
	}
	const unsigned char *q = scan_number(p, e);
	if (q == e)
		return TK__J_MORE;
	if (!q || q == p) {
		if (*p == 'N' || *p == 'I' || (*p == '-' && p + 1 < e && p[1] == 'I'))
			return bad(je, p, "NaN and Infinity are not valid JSON numbers");
		return bad(je, p, "expected a JSON value (string, number, object, array, true, false or null)");
	}
	if (q - p <= 16) /* the input's padding and the output's slack take it */
		_mm_storeu_si128((__m128i *)(void *)w->o, _mm_loadu_si128((const __m128i *)(const void *)p));
	else
		memcpy(w->o, p, (size_t)(q - p));
	w->o += q - p;
	*endp = q;
	return TK__J_OK;
}

/* Iterative, so nesting depth costs no C stack: the labels below are the
 * states of one loop (value, after a value, object key). */
static int canon_value(const unsigned char *p, const unsigned char *e, wout *w,
                       const unsigned char **endp, unsigned max_depth, tk__jerr *je)
{
	unsigned char stack[TK__MAX_DEPTH];
	unsigned depth = 0;
	if (max_depth > TK__MAX_DEPTH)
		max_depth = TK__MAX_DEPTH;
	int rc;
value:
	p = tk__skip_ws(p, e);
	if (p >= e)
		return TK__J_MORE;
	if (*p == '{' || *p == '[') {
		if (depth >= max_depth)
			return bad(je, p, "JSON nested deeper than the limit");
		int is_obj = *p == '{';
		stack[depth++] = (unsigned char)is_obj;
		*w->o++ = (char)*p;
		p = tk__skip_ws(p + 1, e);
		if (p >= e)
			return TK__J_MORE;
		if (*p == (is_obj ? '}' : ']')) {
			depth--;
			*w->o++ = (char)*p++;
			goto after;
		}
		if (is_obj)
			goto key;
		goto value;
	}
	rc = scalar(p, e, w, &p, je);
	if (rc)
		return rc;
after:
	if (!depth) {
		*endp = p;
		return TK__J_OK;
	}
	p = tk__skip_ws(p, e);
	if (p >= e)
		return TK__J_MORE;
	if (*p == ',') {
		*w->o++ = ',';
		p++;
		if (stack[depth - 1])
			goto key;
		goto value;
	}
	if (*p == (stack[depth - 1] ? '}' : ']')) {
		depth--;
		*w->o++ = (char)*p++;
		goto after;
	}
	return bad(je, p, stack[depth - 1] ? "expected ',' or '}' after an object member"
	                                   : "expected ',' or ']' after an array element");
key:
	p = tk__skip_ws(p, e);
	if (p >= e)
		return TK__J_MORE;
	if (*p != '"')
		return bad(je, p, "expected a string key in object");
	*w->o++ = '"';
	rc = canon_str(p + 1, e, w, &p, je);
	if (rc)
		return rc;
	p = tk__skip_ws(p, e);
	if (p >= e)
		return TK__J_MORE;
	if (*p != ':')
		return bad(je, p, "expected ':' after object key");
	*w->o++ = ':';
	p++;
	goto value;
}

int tk__json_canon_value(const unsigned char *p, const unsigned char *e, tk__buf *out,
                         const unsigned char **endp, unsigned max_depth, tk__jerr *je)
{
	wout w;
	if (wo_start(&w, out, (size_t)(e - p)))
		return bad(je, p, "out of memory");
	int rc = canon_value(p, e, &w, endp, max_depth, je);
	wo_end(&w);
	return rc;
}

/* Bit masks of 64 bytes of text (bit i: byte i). */
typedef struct blk64 {
	uint64_t quote, bslash, ctl, ws, open, close, obj;
} blk64;

static inline void blk64_load(const unsigned char *p, blk64 *b)
{
	const __m128i q = _mm_set1_epi8('"'), bs = _mm_set1_epi8('\\'), lo = _mm_set1_epi8(0x20),
	              sp = _mm_set1_epi8(' '), nl = _mm_set1_epi8('\n'), cr = _mm_set1_epi8('\r'),
	              tb = _mm_set1_epi8('\t'), lb = _mm_set1_epi8('['), rb = _mm_set1_epi8(']'),
	              lc = _mm_set1_epi8('{'), rc = _mm_set1_epi8('}');
	memset(b, 0, sizeof *b);
	for (int j = 0; j < 4; j++) {
		__m128i v = _mm_loadu_si128((const __m128i *)(const void *)(p + 16 * j));
		__m128i ocb = _mm_cmpeq_epi8(v, lc), ccb = _mm_cmpeq_epi8(v, rc);
		unsigned sh = 16u * (unsigned)j;
#define M(x) ((uint64_t)(unsigned)_mm_movemask_epi8(x) << sh)
		b->quote |= M(_mm_cmpeq_epi8(v, q));
		b->bslash |= M(_mm_cmpeq_epi8(v, bs));
		b->ctl |= M(_mm_cmplt_epi8(v, lo)); /* < 0x20, and >= 0x80 (signed) */
		b->ws |= M(_mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, sp), _mm_cmpeq_epi8(v, nl)),
		                        _mm_or_si128(_mm_cmpeq_epi8(v, cr), _mm_cmpeq_epi8(v, tb))));
		b->open |= M(_mm_or_si128(ocb, _mm_cmpeq_epi8(v, lb)));
		b->close |= M(_mm_or_si128(ccb, _mm_cmpeq_epi8(v, rb)));
		b->obj |= M(_mm_or_si128(ocb, ccb));
#undef M
	}
}

/* Set bits; without -mpopcnt __builtin_popcountll is a call into libgcc. */
static inline size_t popcount64(uint64_t x)
{
	x -= (x >> 1) & 0x5555555555555555ull;
	x = (x & 0x3333333333333333ull) + ((x >> 2) & 0x3333333333333333ull);
	x = (x + (x >> 4)) & 0x0f0f0f0f0f0f0f0full;
	return (size_t)((x * 0x0101010101010101ull) >> 56);
}

static inline uint64_t prefix_xor(uint64_t x)
{
	x ^= x << 1;
	x ^= x << 2;
	x ^= x << 4;
	x ^= x << 8;
	x ^= x << 16;
	x ^= x << 32;
	return x;
}

/* Structural skip of an object or array for a first pass that needs only
 * its extent: brackets are matched and strings followed, nothing else is
 * checked (a later full parse does that). Text with a backslash, a control
 * character or a byte >= 0x80 could change when canonicalized: that, and
 * anything odd, gives TK__J_BAD with no message, meaning "canonicalize
 * instead". *clen is the length of the canonical form: the text less its
 * whitespace outside strings. 64 bytes at a time; reads up to 63 bytes past
 * e (the callers' padding is 64). */
int tk__json_skip_value(const unsigned char *p, const unsigned char *e, const unsigned char **endp,
                        size_t *clen, unsigned max_depth)
{
	const unsigned char *start = p;
	uint64_t in_str = 0; /* all ones when a string continues into the block */
	uint64_t kinds = 0;  /* bit d: level d is an object */
	unsigned depth = 0;
	size_t ws = 0;
	if (max_depth > 64)
		max_depth = 64;
	for (; p < e; p += 64) {
		blk64 b;
		blk64_load(p, &b);
		uint64_t valid = e - p >= 64 ? ~0ull : (1ull << (e - p)) - 1;
		uint64_t str = prefix_xor(b.quote) ^ in_str; /* an opening quote and what follows it */
		in_str = (uint64_t)((int64_t)str >> 63);
		uint64_t br = (b.open | b.close) & ~str & valid, upto = valid;
		int done = 0;
		while (br) {
			unsigned k = (unsigned)__builtin_ctzll(br);
			uint64_t bit = 1ull << k;
			int obj = (b.obj & bit) != 0;
			if (b.open & bit) {
				if (depth >= max_depth)
					return TK__J_BAD;
				kinds = (kinds & ~(1ull << depth)) | (uint64_t)obj << depth;
				depth++;
			} else if (!depth || ((kinds >> (depth - 1)) & 1) != (uint64_t)obj) {
				return TK__J_BAD;
			} else if (!--depth) {
				upto = k == 63 ? ~0ull : (bit << 1) - 1;
				done = 1;
				break;
			}
			br &= br - 1;
		}
		/* tabs, newlines and carriage returns are whitespace outside strings only */
		uint64_t blank = b.ws & b.ctl;
		if ((b.bslash | (b.ctl & (str | ~blank))) & upto)
			return TK__J_BAD;
		ws += popcount64(b.ws & ~str & upto);
		if (done) {
			*endp = p + 64 - __builtin_clzll(upto);
			*clen = (size_t)(*endp - start) - ws;
			return TK__J_OK;
		}
	}
	return TK__J_MORE;
}

static const uint64_t pow10u[] = {1ull, 10ull, 100ull, 1000ull, 10000ull, 100000ull, 1000000ull,
                                  10000000ull, 100000000ull, 1000000000ull, 10000000000ull,
                                  100000000000ull, 1000000000000ull, 10000000000000ull,
                                  100000000000000ull, 1000000000000000ull, 10000000000000000ull,
                                  100000000000000000ull, 1000000000000000000ull};

int tk__parse_us_to_ns(const unsigned char *p, const unsigned char *e, int64_t *out)
{
	int neg = 0, inexact = 0;
	uint64_t m = 0;
	long ex = 3; /* microseconds -> nanoseconds */
	if (p < e && *p == '-') {
		neg = 1;
		p++;
	}
	const unsigned char *d0 = p;
	for (; p < e && *p >= '0' && *p <= '9'; p++) {
		if (m < UINT64_MAX / 10 - 1)
			m = m * 10 + (uint64_t)(*p - '0');
		else
			ex++;
	}
	if (p == d0)
		return -1;
	if (p < e && *p == '.') {
		p++;
		const unsigned char *f0 = p;
		for (; p < e && *p >= '0' && *p <= '9'; p++) {
			if (m < UINT64_MAX / 10 - 1) {
				m = m * 10 + (uint64_t)(*p - '0');
				ex--;
			} else if (*p != '0') {
				inexact = 1;
			}
		}
		if (p == f0)
			return -1;
	}
	if (p < e && (*p == 'e' || *p == 'E')) {
		p++;
		int eneg = 0;
		long ev = 0;
		if (p < e && (*p == '+' || *p == '-'))
			eneg = *p++ == '-';
		const unsigned char *x0 = p;
		for (; p < e && *p >= '0' && *p <= '9'; p++)
			if (ev < 100000)
				ev = ev * 10 + (*p - '0');
		if (p == x0)
			return -1;
		ex += eneg ? -ev : ev;
	}
	if (p != e)
		return -1;
	if (m == 0) {
		*out = 0;
		return 0;
	}
	if (ex >= 0) {
		if (ex > 18)
			return -1;
		uint64_t f = pow10u[ex];
		if (m > ((uint64_t)INT64_MAX + (uint64_t)neg) / f)
			return -1;
		m *= f;
	} else {
		if (ex < -18) {
			*out = 0;
			return 1;
		}
		uint64_t f = pow10u[-ex], q = m / f, r = m % f;
		if (r)
			inexact = 1;
		if (r * 2 >= f)
			q++;
		m = q;
	}
	if (m > (uint64_t)INT64_MAX + (uint64_t)neg)
		return -1;
	*out = neg ? (int64_t)(0 - m) : (int64_t)m;
	return inexact;
}

int tk__parse_int64(const unsigned char *p, const unsigned char *e, int64_t *out)
{
	int neg = 0;
	uint64_t v = 0;
	if (p < e && *p == '-') {
		neg = 1;
		p++;
	}
	if (p >= e)
		return -1;
	if (e - p <= 18) { /* cannot overflow: no check per digit */
		for (; p < e; p++) {
			if ((unsigned)(*p - '0') > 9)
				return -1;
			v = v * 10 + (unsigned)(*p - '0');
		}
		*out = neg ? -(int64_t)v : (int64_t)v;
		return 0;
	}
	for (; p < e; p++) {
		if (*p < '0' || *p > '9')
			return -1;
		unsigned d = *p - '0';
		if (v > (UINT64_MAX - d) / 10)
			return -1;
		v = v * 10 + d;
	}
	if (neg ? v > (uint64_t)INT64_MAX + 1 : v > (uint64_t)INT64_MAX)
		return -1;
	*out = neg ? (int64_t)(0 - v) : (int64_t)v;
	return 0;
}

/* The %.15g text of d where d is a decimal of at most 15 significant
 * digits between 1e-4 and 1e15 (most doubles in traces: "17.818182"), as
 * digits and a point: the decimal m / 10^k for the smallest k, found by
 * dividing, which IEEE rounds exactly as strtod reads the text back. 0
 * where d is not such a decimal. */
static size_t short_decimal(double d, char *out)
{
	static const double p10[] = {1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8,
	                             1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18};
	double a = d < 0 ? -d : d;
	if (!(a >= 1e-4 && a < 1e15))
		return 0;
	for (unsigned k = 0; k < sizeof p10 / sizeof p10[0]; k++) {
		double m = a * p10[k];
		if (m >= 1e15)
			return 0;
		double r = (double)(int64_t)(m + 0.5);
		if (r / p10[k] != a)
			continue;
		char t[24], *e = t + sizeof t, *q = tk__fmt_u64(e, (uint64_t)r), *o = out;
		size_t nd = (size_t)(e - q);
		if (d < 0)
			*o++ = '-';
		if (!k) {
			memcpy(o, q, nd);
			memcpy(o + nd, ".0", 2);
			return (size_t)(o + nd + 2 - out);
		}
		if (nd <= k) { /* 0.000ddd */
			memcpy(o, "0.", 2);
			memset(o + 2, '0', k - nd);
			memcpy(o + 2 + k - nd, q, nd);
			return (size_t)(o + 2 + k - out);
		}
		memcpy(o, q, nd - k);
		o[nd - k] = '.';
		memcpy(o + nd - k + 1, q + nd - k, k);
		return (size_t)(o + nd + 1 - out);
	}
	return 0;
}

int tk__json_double(tk__buf *out, double d)
{
	char num[40];
	if (!isfinite(d))
		return tk__buf_puts(out, "null");
	size_t n = short_decimal(d, num);
	if (n)
		return tk__buf_append(out, num, n);
	for (int prec = 15; prec <= 17; prec++) {
		snprintf(num, sizeof num, "%.*g", prec, d);
		if (strtod(num, NULL) == d)
			break;
	}
	if (!strpbrk(num, ".eEn"))
		strcat(num, ".0");
	return tk__buf_puts(out, num);
}

int tk__json_escape(tk__buf *out, const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s, *e = p + n;
	const __m128i vq = _mm_set1_epi8('"'), vb = _mm_set1_epi8('\\'), vs = _mm_set1_epi8(0x20);
	int repaired = 0;
	wout w;
	if (wo_start(&w, out, n + 16))
		return TK_ERR_NOMEM;
	while (p < e) {
		/* 16 bytes at a time; a short tail is scanned from a padded copy,
		 * since the caller's string may end at the end of a page */
		__m128i v;
		if (e - p >= 16) {
			v = _mm_loadu_si128((const __m128i *)(const void *)p);
		} else {
			unsigned char t[16];
			memset(t, 'a', sizeof t);
			memcpy(t, p, (size_t)(e - p));
			v = _mm_loadu_si128((const __m128i *)(const void *)t);
		}
		_mm_storeu_si128((__m128i *)(void *)w.o, v);
		unsigned m = (unsigned)_mm_movemask_epi8(_mm_or_si128(
		    _mm_or_si128(_mm_cmpeq_epi8(v, vq), _mm_cmpeq_epi8(v, vb)), _mm_cmplt_epi8(v, vs)));
		unsigned k = m ? (unsigned)__builtin_ctz(m) : 16;
		if (k >= (size_t)(e - p)) {
			w.o += e - p;
			break;
		}
		p += k;
		w.o += k;
		if (!m)
			continue;
		unsigned c = *p;
		if (wo_room(&w, 6, (size_t)(e - p) + 16)) /* wo_end/wo_start keep w.o */
			return TK_ERR_NOMEM;
		if (c == '"' || c == '\\') {
			w.o[0] = '\\';
			w.o[1] = (char)c;
			w.o += 2;
			p++;
		} else if (c < 0x20) {
			w.o += ctl_escape(w.o, c);
			p++;
		} else {
			int q = utf8_seq(p, e);
			if (q <= 0) {
				repaired = 1;
				memcpy(w.o, TK__FFFD, 3);
				w.o += 3;
				p++;
			} else {
				memcpy(w.o, p, (size_t)q);
				w.o += q;
				p += q;
			}
		}
	}
	wo_end(&w);
	return repaired;
}

int tk__json_put_str(tk__buf *out, const char *s, size_t n)
{
	return tk__buf_putc(out, '"') || tk__json_escape(out, s, n) < 0 || tk__buf_putc(out, '"') ? TK_ERR_NOMEM : 0;
}

int tk__json_is_canonical(const char *s, size_t n, int kind)
{
	/* canonicalize a padded copy and compare: canonical text maps to itself */
	tk__buf in = {0}, out = {0};
	int ok = 0;
	if (tk__buf_reserve(&in, n + 4 + TK__PAD))
		return 0;
	if (kind == 2)
		in.p[in.len++] = '{';
	memcpy(in.p + in.len, s, n);
	in.len += n;
	if (kind == 2)
		in.p[in.len++] = '}';
	in.p[in.len] = kind == 0 ? '"' : ' ';
	memset(in.p + in.len + 1, 0, TK__PAD);
	const unsigned char *p = (const unsigned char *)in.p, *e = p + in.len + 1, *end;
	tk__jerr je = {0};
	int rc = kind == 0 ? tk__json_canon_string(p, e, &out, &end, &je)
	                   : tk__json_canon_value(p, e, &out, &end, 1000, &je);
	if (rc == TK__J_OK && !je.repaired && end == e - (kind == 0 ? 0 : 1) && out.len == in.len &&
	    memcmp(out.p, in.p, in.len) == 0)
		ok = 1;
	tk__buf_free(&in);
	tk__buf_free(&out);
	return ok;
}

int tk__json_canon_text(tk__buf *out, const char *s, size_t n, int members, int *repaired)
{
	return tk__json_canon_text_at(out, s, n, members, repaired, NULL, NULL);
}

int tk__json_canon_text_at(tk__buf *out, const char *s, size_t n, int members, int *repaired,
                           size_t *bad_at, const char **why)
{
	/* the scanner reads a little past its end: work on a padded copy */
	tk__buf t = {0};
	if (tk__buf_reserve(&t, n + 2 + TK__PAD))
		return TK_ERR_NOMEM;
	if (members)
		t.p[t.len++] = '{';
	if (n)
		memcpy(t.p + t.len, s, n);
	t.len += n;
	if (members)
		t.p[t.len++] = '}';
	memset(t.p + t.len, 0, TK__PAD);
	t.p[t.len] = ' '; /* a number that ends the text must not read as cut off */
	const unsigned char *p = (const unsigned char *)t.p, *e = p + t.len + 1, *end = p;
	tk__jerr je = {0};
	size_t mark = out->len, at = 0;
	int rc = tk__json_canon_value(p, e, out, &end, 1000, &je);
	if (rc == TK__J_OK && tk__skip_ws(end, e) != e) {
		rc = TK__J_BAD;
		je.msg = "text after the value";
		je.at = tk__skip_ws(end, e);
	}
	if (rc == TK__J_MORE || (rc && !je.msg && !je.at)) { /* ran into the end ("[1,", "") */
		je.msg = "the text ends inside the value";
		je.at = p + t.len - (size_t)members;
	}
	if (rc && je.at >= p && je.at < e)
		at = (size_t)(je.at - p);
	tk__buf_free(&t);
	if (repaired)
		*repaired = je.repaired;
	if (rc) {
		out->len = mark;
		if (bad_at) /* an offset in s: past the brace put in front of members */
			*bad_at = at > n + (size_t)members ? n : at > (size_t)members ? at - (size_t)members : 0;
		if (why)
			*why = je.msg ? je.msg : "unexpected text";
		return je.msg && strcmp(je.msg, "out of memory") == 0 ? TK_ERR_NOMEM : TK_ERR_ARG;
	}
	if (members) { /* strip the braces */
		memmove(out->p + mark, out->p + mark + 1, out->len - mark - 2);
		out->len -= 2;
	}
	return 0;
}
