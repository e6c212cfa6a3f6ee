/* util.c: version strings, error texts, starting the library's threads. */
#define _GNU_SOURCE
#include <sched.h>
#include <unistd.h>
#include <zlib.h>
#ifdef TK_HAVE_ISAL
#include <isa-l/crc.h>
#endif

#include "internal.h"

uint32_t tk__crc32(uint32_t crc, const void *p, size_t n)
{
#ifdef TK_HAVE_ISAL
	return crc32_gzip_refl(crc, p, (uint64_t)n);
#else
	const unsigned char *q = p;
	while (n) {
		uInt k = n > (1u << 30) ? (1u << 30) : (uInt)n;
		crc = (uint32_t)crc32(crc, q, k);
		q += k;
		n -= k;
	}
	return crc;
#endif
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

/* pthread_create, or the failure that tests ask for (0 started); the
 * thread gets its name (what top -H, perf and /proc show). */
int tk__thread_start(pthread_t *th, void *(*fn)(void *), void *arg, const char *name)
{
	if (tk__no_threads)
		return -1;
	int rc = pthread_create(th, NULL, fn, arg);
	if (!rc)
		pthread_setname_np(*th, name); /* a name it could not take changes nothing else */
	return rc;
}

int tk__cpus(void)
{
	cpu_set_t set;
	if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
		return CPU_COUNT(&set);
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	return n > 0 ? (int)n : 1;
}
