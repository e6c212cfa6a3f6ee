/* util.c: growable buffers, message formatting, version strings. */
#include <errno.h>
#include <stdlib.h>

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

static const char digits2[] = "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
                              "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
                              "8081828384858687888990919293949596979899";

/* Decimal digits of v, written backwards ending at `end`; two at a time. */
char *tk__fmt_u64(char *end, uint64_t v)
{
	while (v >= 100) {
		unsigned d = (unsigned)(v % 100) * 2;
		v /= 100;
		*--end = digits2[d + 1];
		*--end = digits2[d];
	}
	if (v >= 10) {
		*--end = digits2[v * 2 + 1];
		*--end = digits2[v * 2];
	} else {
		*--end = (char)('0' + v);
	}
	return end;
}

void tk__fmt_msg(char *dst, size_t cap, const char *fmt, va_list ap)
{
	int n = vsnprintf(dst, cap, fmt, ap);
	if (n < 0)
		snprintf(dst, cap, "(message formatting failed)");
}

char *tk__strdup(const char *s)
{
	size_t n = strlen(s) + 1;
	char *d = malloc(n);
	if (d)
		memcpy(d, s, n);
	return d;
}

int tk__strlist_add(char ***list, size_t *n, const char *s)
{
	char **nl = realloc(*list, (*n + 1) * sizeof *nl);
	if (!nl)
		return TK_ERR_NOMEM;
	*list = nl;
	if (!(nl[*n] = tk__strdup(s)))
		return TK_ERR_NOMEM;
	(*n)++;
	return 0;
}

const char *tk_version(void)
{
	return TK_VERSION_STRING;
}

const char *tk_strerror(int code)
{
	switch (code) {
	case TK_OK: return "success";
	case TK_EOF: return "end of stream";
	case TK_ERR_IO: return "input/output error";
	case TK_ERR_FORMAT: return "invalid input";
	case TK_ERR_NOMEM: return "out of memory";
	case TK_ERR_TRUNCATED: return "input ended early";
	case TK_ERR_ARG: return "invalid argument";
	case TK_ERR_LIMIT: return "limit exceeded";
	case TK_ERR_UNSUPPORTED: return "unsupported";
	default: return "unknown error";
	}
}

int tk__no_threads;

/* pthread_create, or the failure that tests ask for (0 started). */
int tk__thread_start(pthread_t *th, void *(*fn)(void *), void *arg)
{
	return tk__no_threads ? -1 : pthread_create(th, NULL, fn, arg);
}
