/* json_text.h: JSON lexical work on padded input: canonical compact values, string decoding, numbers, structural skips. */
#ifndef TK_CORE_JSON_TEXT_H
#define TK_CORE_JSON_TEXT_H

#include <emmintrin.h>
#include <stdint.h>

#include "buf.h"

/* Result of scanning JSON text. */
enum { TK__J_OK = 0, TK__J_MORE = 1, TK__J_BAD = 2 };
typedef struct tk__jerr {
	const unsigned char *at; /* where the problem is */
	const char *msg;
	int repaired; /* strings repaired (invalid UTF-8, lone surrogates) */
} tk__jerr;
/* p points just after an opening quote. Appends the canonical form of the
 * string's contents (valid escapes kept, raw control characters escaped,
 * invalid UTF-8 -> \ufffd) to out and sets *endp after the closing quote. */
int tk__json_canon_string(const unsigned char *p, const unsigned char *e, tk__buf *out,
                          const unsigned char **endp, tk__jerr *je);
/* Decode a string (p after the opening quote) to UTF-8 bytes in out
 * (not NUL-terminated); invalid UTF-8 replaced. *plain = 1 when the text
 * needed no decoding (then out is untouched and the bytes are p..*endp-1). */
int tk__json_decode_string(const unsigned char *p, const unsigned char *e, tk__buf *out,
                           const unsigned char **endp, int *plain, tk__jerr *je);
/* Canonicalize one JSON value starting at p (after whitespace) into out. */
int tk__json_canon_value(const unsigned char *p, const unsigned char *e, tk__buf *out,
                         const unsigned char **endp, unsigned max_depth, tk__jerr *je);
/* First byte at or after p that is '"', '\\', a control character or >= 0x80
 * (e if none before e). Reads up to 15 bytes past e: callers keep TK__PAD
 * readable bytes there. */
static inline const unsigned char *tk__scan_special(const unsigned char *p, const unsigned char *e)
{
	const __m128i q = _mm_set1_epi8('"'), bs = _mm_set1_epi8('\\'), sp = _mm_set1_epi8(0x20);
	while (p < e) {
		__m128i v = _mm_loadu_si128((const __m128i *)(const void *)p);
		__m128i m = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, q), _mm_cmpeq_epi8(v, bs)),
		                         _mm_cmplt_epi8(v, sp));
		int mask = _mm_movemask_epi8(m);
		if (mask) {
			p += __builtin_ctz((unsigned)mask);
			return p < e ? p : e;
		}
		p += 16;
	}
	return e;
}
/* Skip JSON whitespace. */
#define TK__IS_WS(c) ((c) == ' ' || (c) == '\n' || (c) == '\r' || (c) == '\t')
/* A phase Chrome JSON holds as one character: printable ASCII that needs
 * no escape. The JSON reader takes only these as "ph"; its writer writes
 * only these. */
static inline int tk__json_ph_ok(unsigned char c)
{
	return c >= 0x20 && c < 0x7f && c != '"' && c != '\\';
}
static inline const unsigned char *tk__skip_ws(const unsigned char *p, const unsigned char *e)
{
	if (TK__LIKELY(p < e && *p > ' '))
		return p;
	/* one space, as after ':' and ',' in pretty-printed files (the byte
	 * after e is readable padding) */
	if (*p == ' ' && p[1] > ' ' && p + 1 < e)
		return p + 1;
	/* longer runs (newline and indentation): 16 bytes at a time */
	const __m128i sp = _mm_set1_epi8(' '), nl = _mm_set1_epi8('\n'), cr = _mm_set1_epi8('\r'),
	              tb = _mm_set1_epi8('\t');
	while (e - p >= 16) {
		__m128i v = _mm_loadu_si128((const __m128i *)(const void *)p);
		__m128i w = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, sp), _mm_cmpeq_epi8(v, nl)),
		                         _mm_or_si128(_mm_cmpeq_epi8(v, cr), _mm_cmpeq_epi8(v, tb)));
		unsigned m = (unsigned)_mm_movemask_epi8(w) ^ 0xffffu;
		if (m)
			return p + __builtin_ctz(m);
		p += 16;
	}
	while (p < e && TK__IS_WS(*p))
		p++;
	return p;
}
/* The extent of the object or array at p without canonicalizing it; see
 * json_text.c. TK__J_BAD (no message): canonicalize it instead. */
int tk__json_skip_value(const unsigned char *p, const unsigned char *e, const unsigned char **endp,
                        size_t *clen, unsigned max_depth);
/* Scan a JSON number; returns end pointer or NULL if malformed. */
const unsigned char *tk__json_scan_number(const unsigned char *p, const unsigned char *e);
/* Parse a decimal number of microseconds to integer nanoseconds. Returns 0,
 * 1 if rounding to a nanosecond was needed, -1 if out of range/malformed. */
int tk__parse_us_to_ns(const unsigned char *p, const unsigned char *e, int64_t *out);
/* Parse a JSON integer. Returns 0, -1 if not an integer or out of range. */
int tk__parse_int64(const unsigned char *p, const unsigned char *e, int64_t *out);
/* Appends d as a JSON number: the shortest of its %.15g, %.16g and %.17g
 * that reads back as d, with ".0" after one that would read as an integer;
 * "null" for infinities and NaN. 0 or TK_ERR_NOMEM. */
int tk__json_double(tk__buf *out, double d);
/* Append s escaped as a JSON string body (no quotes); invalid UTF-8 is
 * replaced. Returns the number of repairs (0 or 1), <0 on ENOMEM. */
int tk__json_escape(tk__buf *out, const char *s, size_t n);
/* The same between quotes: a whole JSON string. 0 or TK_ERR_NOMEM. */
int tk__json_put_str(tk__buf *out, const char *s, size_t n);
/* 1 if s[0..n) is exactly the canonical compact JSON of its kind: 0 the
 * body of a string, 1 one value, 2 the members of an object. */
int tk__json_is_canonical(const char *s, size_t n, int kind);
/* 1 if the text is valid UTF-8. */
int tk__utf8_valid(const unsigned char *p, size_t n);

/* A backslash escape at p (p[0] == '\\'): *cp the code point, or -1 for
 * a simple escape with *simple its byte; *len the bytes it takes. Lone
 * surrogates become U+FFFD with *repaired set. TK__J_OK, TK__J_MORE when
 * it runs past e, TK__J_BAD. */
int tk__json_escape_at(const unsigned char *p, const unsigned char *e, long *cp, char *simple,
                       int *len, int *repaired, tk__jerr *je);
/* Appends the canonical compact JSON of caller-supplied text (no padding
 * needed): one value, or with `members` the members of an object without
 * its braces (`"a":1,"b":2`). 0, TK_ERR_ARG when it is not valid JSON
 * (out unchanged), or TK_ERR_NOMEM; *repaired (may be NULL): strings whose
 * invalid UTF-8 was replaced. */
int tk__json_canon_text(tk__buf *out, const char *s, size_t n, int members, int *repaired);
/* The same; where the text is not valid JSON, *bad_at (may be NULL) is the
 * offset in s of the problem and *why (may be NULL) says what it is. */
int tk__json_canon_text_at(tk__buf *out, const char *s, size_t n, int members, int *repaired,
                           size_t *bad_at, const char **why);
/* UTF-8 of code point v into d (4 bytes of room); returns the length. */
size_t tk__utf8_put(char *d, long v);

#endif
