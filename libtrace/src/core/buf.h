/* buf.h: growable byte buffers and arrays, writing a whole buffer to an fd, small string helpers. */
#ifndef TK_CORE_BUF_H
#define TK_CORE_BUF_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "tracekit/tracekit.h"

#if defined(__GNUC__)
#define TK__LIKELY(x) __builtin_expect(!!(x), 1)
#define TK__UNLIKELY(x) __builtin_expect(!!(x), 0)
#else
#define TK__LIKELY(x) (x)
#define TK__UNLIKELY(x) (x)
#endif

#define TK__PAD 64 /* readable zero bytes kept after buffered data */

/* A growable byte buffer; p[len] is always writable (one byte of room is
 * kept for a NUL). Zeroed memory is an empty buffer. */
typedef struct tk__buf {
	char *p;
	size_t len, cap;
} tk__buf;
/* Room for `extra` more bytes (and the NUL); 0 or TK_ERR_NOMEM. */
int tk__buf_reserve(tk__buf *b, size_t extra);
static inline int tk__buf_append(tk__buf *b, const void *s, size_t n)
{
	if (TK__UNLIKELY(b->len + n + 1 > b->cap) && tk__buf_reserve(b, n))
		return TK_ERR_NOMEM;
	if (TK__LIKELY(n)) /* s may be NULL for an empty buffer */
		memcpy(b->p + b->len, s, n);
	b->len += n;
	return 0;
}
static inline int tk__buf_putc(tk__buf *b, char c)
{
	if (TK__UNLIKELY(b->len + 1 >= b->cap) && tk__buf_reserve(b, 1))
		return TK_ERR_NOMEM;
	b->p[b->len++] = c;
	return 0;
}
static inline int tk__buf_puts(tk__buf *b, const char *s)
{
	return tk__buf_append(b, s, strlen(s));
}
void tk__buf_free(tk__buf *b);

/* Room for `need` elements of `elem` bytes in the array *(void **)pp of
 * *cap elements: the capacity doubles from at least `min`. 0, or
 * TK_ERR_NOMEM with the array as it was. */
int tk__grow(void *pp, size_t *cap, size_t need, size_t elem, size_t min);
/* tk__grow for an array `a` with capacity `cap` (lvalues). */
#define TK__GROW(a, cap, need) tk__grow(&(a), &(cap), (need), sizeof *(a), 16)

/* Writes all n bytes to fd, retrying after EINTR and short writes; *count
 * (may be NULL) grows by the bytes written. 0, or the errno of the failure
 * (ENOSPC for a write that wrote nothing). */
int tk__write_all(int fd, const void *p, size_t n, uint64_t *count);

/* Decimal digits of v written backwards so that they end at `end`; returns the first. */
char *tk__fmt_u64(char *end, uint64_t v);
/* Appends v in decimal; 0 or TK_ERR_NOMEM. */
int tk__buf_u64(tk__buf *b, uint64_t v);
int tk__buf_i64(tk__buf *b, int64_t v);
/* A malloc'd copy, or NULL. */
char *tk__strdup(const char *s);
char *tk__strndup(const char *s, size_t n);

#endif
