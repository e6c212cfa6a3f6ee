/* buf.c: growable buffers and arrays, whole writes, decimal formatting, string copies. */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "internal.h"

int tk__buf_reserve(tk__buf *b, size_t extra)
{
	if (b->len + extra + 1 <= b->cap)
		return 0;
	size_t ncap = b->cap ? b->cap : 256;
	while (ncap < b->len + extra + 1) {
		if (ncap > SIZE_MAX / 2)
			return TK_ERR_NOMEM;
		ncap *= 2;
	}
	char *np = realloc(b->p, ncap);
	if (!np)
		return TK_ERR_NOMEM;
	b->p = np;
	b->cap = ncap;
	return 0;
}

void tk__buf_free(tk__buf *b)
{
	free(b->p);
	b->p = NULL;
	b->len = b->cap = 0;
}

int tk__grow(void *pp, size_t *cap, size_t need, size_t elem, size_t min)
{
	if (need <= *cap)
		return 0;
	size_t nc = *cap ? *cap : (min ? min : 1);
	while (nc < need) {
		if (nc > SIZE_MAX / 2 / elem)
			return TK_ERR_NOMEM;
		nc *= 2;
	}
	void **p = pp;
	void *np = realloc(*p, nc * elem);
	if (!np)
		return TK_ERR_NOMEM;
	*p = np;
	*cap = nc;
	return 0;
}

int tk__write_all(int fd, const void *buf, size_t n, uint64_t *count)
{
	const unsigned char *p = buf;
	while (n) {
		ssize_t k = write(fd, p, n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return errno ? errno : EIO;
		if (k == 0)
			return ENOSPC;
		p += k;
		n -= (size_t)k;
		if (count)
			*count += (uint64_t)k;
	}
	return 0;
}

static const char digits2[] = "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
                              "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
                              "8081828384858687888990919293949596979899";

int tk__buf_u64(tk__buf *b, uint64_t v)
{
	char t[24], *e = t + sizeof t, *q = tk__fmt_u64(e, v);
	return tk__buf_append(b, q, (size_t)(e - q));
}

int tk__buf_i64(tk__buf *b, int64_t v)
{
	char t[24], *e = t + sizeof t, *q = tk__fmt_u64(e, v < 0 ? 0 - (uint64_t)v : (uint64_t)v);
	if (v < 0)
		*--q = '-';
	return tk__buf_append(b, q, (size_t)(e - q));
}

/* The two digits of d (below 100) before `end`. */
static inline char *put2(char *end, unsigned d)
{
	end -= 2;
	memcpy(end, digits2 + 2 * d, 2);
	return end;
}

/* Decimal digits of v, written backwards ending at `end`. */
char *tk__fmt_u64(char *end, uint64_t v)
{
	/* eight digits at a time from the low end: one 64-bit division, then
	 * 32-bit work that does not wait on the next division */
	while (v >= 100000000) {
		uint32_t lo = (uint32_t)(v % 100000000), hi4 = lo / 10000, lo4 = lo % 10000;
		v /= 100000000;
		end = put2(end, lo4 % 100);
		end = put2(end, lo4 / 100);
		end = put2(end, hi4 % 100);
		end = put2(end, hi4 / 100);
	}
	uint32_t u = (uint32_t)v;
	while (u >= 100) {
		end = put2(end, u % 100);
		u /= 100;
	}
	if (u >= 10)
		return put2(end, u);
	*--end = (char)('0' + u);
	return end;
}

char *tk__strndup(const char *s, size_t n)
{
	char *d = malloc(n + 1);
	if (d) {
		memcpy(d, s, n);
		d[n] = 0;
	}
	return d;
}

char *tk__strdup(const char *s)
{
	return tk__strndup(s, strlen(s));
}
