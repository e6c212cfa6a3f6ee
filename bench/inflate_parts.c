/* inflate_parts.c: one gzip member inflated whole (zlib, ISA-L where built in, tracekit's
 * own inflater) and in parts from block starts found in the stream, on one thread and on
 * N (core/deflate_scan.c), each timed, with the output's CRC-32 checked against zlib's.
 *
 *   inflate_parts [--threads N] [--part BYTES] FILE.gz
 *
 * The parts are found (tk__dscan_find), inflated with the 32 KiB before them unknown
 * (tk__dpart_inflate), then their markers resolved in order (tk__dpart_resolve): what a
 * reader would do to inflate one stream on N threads. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zlib.h>
#ifdef TK_HAVE_ISAL
#include <isa-l/igzip_lib.h>
#endif

#include "core/deflate_scan.h"

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void die(const char *m)
{
	fprintf(stderr, "inflate_parts: %s\n", m);
	exit(1);
}

typedef struct job {
	const uint8_t *c;
	size_t cn, part, np;
	uint64_t *start; /* per part: its block start, or UINT64_MAX where none was found */
	tk__dpart *d;
	int *rc;
	atomic_size_t next;
} job;

static void *find_main(void *arg)
{
	job *J = arg;
	tk__dscan *s = tk__dscan_new();
	for (size_t i; (i = atomic_fetch_add(&J->next, 1)) < J->np;) {
		uint64_t at = 0;
		if (i && !tk__dscan_find(s, J->c, J->cn, (uint64_t)i * J->part * 8, (uint64_t)(i + 1) * J->part * 8, &at))
			at = UINT64_MAX;
		J->start[i] = at;
	}
	tk__dscan_free(s);
	return NULL;
}

/* starts[] compacted to the parts found, then each inflated to the next one's start */
static void *inflate_main(void *arg)
{
	job *J = arg;
	tk__dscan *s = tk__dscan_new();
	for (size_t i; (i = atomic_fetch_add(&J->next, 1)) < J->np;) {
		uint64_t stop = i + 1 < J->np ? J->start[i + 1] : UINT64_MAX;
		J->rc[i] = tk__dpart_inflate(s, J->c, J->cn, J->start[i], stop, i ? NULL : (const uint8_t *)"", 0,
		                             (size_t)1 << 30, &J->d[i]);
	}
	tk__dscan_free(s);
	return NULL;
}

static void run_threads(int nth, void *(*fn)(void *), job *J)
{
	pthread_t th[256];
	atomic_store(&J->next, 0);
	for (int i = 1; i < nth; i++)
		if (pthread_create(&th[i], NULL, fn, J))
			die("pthread_create failed");
	fn(J);
	for (int i = 1; i < nth; i++)
		pthread_join(th[i], NULL);
}

/* Parts on nth threads; the CRC of the output, its length and the seconds.
 * The parts are inflated into pool[] (cn / part + 1 of them) and resolved
 * into *buf, both kept from call to call, as the reader keeps its parts'
 * buffers. */
static void parts(const uint8_t *c, size_t cn, size_t part, int nth, tk__dpart *pool, uint8_t **bufp, size_t *capp,
                  uint32_t *crc, uint64_t *len, double *t_find, double *t_inf, double *t_res, size_t *nparts,
                  uint64_t *marked)
{
	job J = {.c = c, .cn = cn, .part = part, .np = cn / part + 1};
	J.start = malloc(J.np * sizeof *J.start);
	double t0 = now();
	run_threads(nth, find_main, &J);
	size_t k = 0;
	for (size_t i = 0; i < J.np; i++)
		if (J.start[i] != UINT64_MAX && (!k || J.start[i] > J.start[k - 1]))
			J.start[k++] = J.start[i];
	J.np = k;
	J.d = pool;
	J.rc = calloc(k, sizeof *J.rc);
	double t1 = now();
	run_threads(nth, inflate_main, &J);
	double t2 = now();
	uint8_t win[TK__DWIN];
	size_t w = 0;
	uint8_t *buf = *bufp;
	size_t cap = *capp;
	*crc = (uint32_t)crc32(0, NULL, 0);
	*len = 0;
	*marked = 0;
	for (size_t i = 0; i < k; i++) {
		tk__dpart *d = &J.d[i];
		if (J.rc[i] != TK__DP_OK)
			die("a part did not inflate");
		if (i + 1 < k && d->end_bit != J.start[i + 1])
			die("a part did not end where the next one starts");
		size_t n = tk__dpart_len(d);
		if (n > cap && !(buf = realloc(buf, cap = n)))
			die("out of memory");
		if (tk__dpart_resolve(d, win, w, 0, d->n_marked, buf))
			die("a marker before the stream's start");
		memcpy(buf + d->n_marked, d->plain + d->plain_at, d->n_plain - d->plain_at);
		*crc = (uint32_t)crc32(*crc, buf, (uInt)n);
		*len += n;
		*marked += d->n_marked;
		/* the window: the last 32 KiB so far */
		if (n >= TK__DWIN) {
			memcpy(win, buf + n - TK__DWIN, TK__DWIN);
			w = TK__DWIN;
		} else {
			size_t keep = w + n > TK__DWIN ? TK__DWIN - n : w;
			memmove(win, win + w - keep, keep);
			memcpy(win + keep, buf, n);
			w = keep + n;
		}
	}
	double t3 = now();
	*t_find = t1 - t0;
	*t_inf = t2 - t1;
	*t_res = t3 - t2;
	*nparts = k;
	*bufp = buf;
	*capp = cap;
	free(J.rc);
	free(J.start);
}

int main(int argc, char **argv)
{
	int nth = 2;
	size_t part = 1 << 20;
	const char *path = NULL;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--threads") && i + 1 < argc)
			nth = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--part") && i + 1 < argc)
			part = (size_t)atol(argv[++i]);
		else if (argv[i][0] != '-' && !path)
			path = argv[i];
		else
			die("usage: inflate_parts [--threads N] [--part BYTES] FILE.gz");
	}
	if (!path || nth < 1 || nth > 256 || part < 1024)
		die("usage: inflate_parts [--threads N] [--part BYTES] FILE.gz");
	FILE *f = fopen(path, "rb");
	if (!f)
		die("cannot open the file");
	fseek(f, 0, SEEK_END);
	size_t n = (size_t)ftell(f);
	fseek(f, 0, SEEK_SET);
	uint8_t *p = malloc(n);
	if (!p || fread(p, 1, n, f) != n)
		die("cannot read the file");
	fclose(f);
	size_t at = tk__gzip_header_len(p, n);
	if (!at)
		die("not a gzip file");
	const uint8_t *c = p + at;
	size_t cn = n - at;

	/* zlib, one thread: the reference */
	z_stream z;
	memset(&z, 0, sizeof z);
	inflateInit2(&z, -MAX_WBITS);
	static uint8_t out[1 << 20];
	uint32_t zcrc = (uint32_t)crc32(0, NULL, 0);
	double t0 = now();
	z.next_in = (Bytef *)c;
	z.avail_in = (uInt)cn;
	int rc;
	do {
		z.next_out = out;
		z.avail_out = sizeof out;
		rc = inflate(&z, Z_NO_FLUSH);
		zcrc = (uint32_t)crc32(zcrc, out, (uInt)(sizeof out - z.avail_out));
	} while (rc == Z_OK);
	double tz = now() - t0;
	if (rc != Z_STREAM_END)
		die("zlib does not inflate the first member to its end");
	uint64_t zlen = z.total_out;
	inflateEnd(&z);
	printf("input: %s, %zu bytes of deflate, %llu bytes out\n", path, cn, (unsigned long long)zlen);
	printf("zlib, 1 thread (CRC included):      %.3f s  %6.0f MB/s\n", tz, (double)zlen / tz / 1e6);
#ifdef TK_HAVE_ISAL
	struct inflate_state *is = malloc(sizeof *is);
	isal_inflate_init(is);
	t0 = now();
	is->next_in = (uint8_t *)c;
	is->avail_in = (uint32_t)cn;
	do {
		is->next_out = out;
		is->avail_out = sizeof out;
		rc = isal_inflate(is);
	} while (rc == ISAL_DECOMP_OK && is->block_state != ISAL_BLOCK_FINISH);
	double ti = now() - t0;
	printf("ISA-L, 1 thread (no CRC):           %.3f s  %6.0f MB/s\n", ti, (double)zlen / ti / 1e6);
	free(is);
#endif
	tk__dscan *s = tk__dscan_new();
	tk__dpart d = {0};
	double tw = 0, tm = 0;
	/* twice, the second into buffers already touched (the first pays for page faults) */
	for (int k = 0; k < 2; k++) {
		t0 = now();
		if (tk__dpart_inflate(s, c, cn, 0, UINT64_MAX, (const uint8_t *)"", 0, SIZE_MAX, &d) != TK__DP_OK)
			die("tk__dpart_inflate does not take the stream");
		tw = now() - t0;
	}
	/* the same with the window unknown: marked output to its end where markers go on being copied */
	tk__dpart dm = {0};
	uint64_t from = 0;
	if (!tk__dscan_find(s, c, cn, (uint64_t)cn * 8 / 4, (uint64_t)cn * 8, &from))
		die("no block start found in the stream's last three quarters");
	for (int k = 0; k < 2; k++) {
		t0 = now();
		if (tk__dpart_inflate(s, c, cn, from, UINT64_MAX, NULL, 0, SIZE_MAX, &dm) != TK__DP_OK)
			die("tk__dpart_inflate does not take the stream");
		tm = now() - t0;
	}
	size_t mlen = tk__dpart_len(&dm);
	printf("tracekit, the last 3/4 from a block start, window unknown, 1 thread: %.3f s  %6.0f MB/s  (%.1f%% "
	       "marked)\n",
	       tm, (double)mlen / tm / 1e6, 100.0 * (double)dm.n_marked / (double)mlen);
	tk__dpart_free(&dm);
	if (tk__dpart_len(&d) != zlen || (uint32_t)crc32(crc32(0, NULL, 0), d.plain, (uInt)d.n_plain) != zcrc)
		die("tk__dpart_inflate's output is not zlib's");
	printf("tracekit whole, 1 thread (no CRC):  %.3f s  %6.0f MB/s\n", tw, (double)zlen / tw / 1e6);
	tk__dpart_free(&d);
	tk__dscan_free(s);
	int counts[] = {1, nth};
	size_t pool_n = cn / part + 1;
	tk__dpart *pool = calloc(pool_n, sizeof *pool);
	uint8_t *buf = NULL;
	size_t cap = 0;
	if (!pool)
		die("out of memory");
	for (int i = 0; i < (nth > 1 ? 2 : 1); i++) {
		uint32_t crc;
		uint64_t len, marked;
		double tf, tinf, tres;
		size_t np;
		/* twice, timing the second, into the buffers of the first */
		for (int k = 0; k < 2; k++) {
			parts(c, cn, part, counts[i], pool, &buf, &cap, &crc, &len, &tf, &tinf, &tres, &np, &marked);
			if (len != zlen || crc != zcrc)
				die("the parts' output is not zlib's");
		}
		double t = tf + tinf + tres;
		printf("parts of %zu, %d thread%s: %.3f s  %6.0f MB/s  (find %.3f, inflate %.3f, resolve+CRC %.3f; "
		       "%zu parts, %.1f%% marked)\n",
		       part, counts[i], counts[i] > 1 ? "s" : " ", t, (double)zlen / t / 1e6, tf, tinf, tres, np,
		       100.0 * (double)marked / (double)zlen);
	}
	for (size_t i = 0; i < pool_n; i++)
		tk__dpart_free(&pool[i]);
	free(pool);
	free(buf);
	free(p);
	return 0;
}
