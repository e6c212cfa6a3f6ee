/* tkb_bench.c: .tkb size and speed against JSON: write and read events/s on one core, file sizes.
 *
 * usage: tkb_bench TRACE [REPEAT] [TMPDIR]
 * The trace's events are loaded into memory (REPEAT times, timestamps shifted
 * so the copies follow each other), then written as JSON, gzip JSON, .tkb and
 * zlib .tkb, and each file is read back. Best of three runs, timed in CPU
 * time (user + system) of the one thread doing the work. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "tracekit/tracekit.h"

typedef struct evs {
	tk_event **ev;
	size_t n, cap;
} evs;

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t); /* one thread: CPU time of one core */
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static uint64_t input_bytes;

static int load(const char *path, int repeat, evs *out)
{
	tk_reader *r;
	if (tk_reader_open_path(&r, path, NULL)) {
		fprintf(stderr, "tkb_bench: %s\n", tk_reader_error(r));
		return 1;
	}
	const tk_event *ev;
	int64_t span = 0;
	while (tk_reader_next(r, &ev) == TK_OK) {
		if (out->n == out->cap) {
			out->cap = out->cap ? out->cap * 2 : 1024;
			out->ev = realloc(out->ev, out->cap * sizeof *out->ev);
		}
		out->ev[out->n++] = tk_event_dup(ev);
		if ((ev->has & TK_HAS_TS) && ev->ts > span)
			span = ev->ts;
	}
	input_bytes = tk_reader_get_stats(r)->bytes_decoded * (uint64_t)repeat;
	tk_reader_free(r);
	size_t base = out->n;
	for (int k = 1; k < repeat; k++) {
		for (size_t i = 0; i < base; i++) {
			if (out->n == out->cap) {
				out->cap *= 2;
				out->ev = realloc(out->ev, out->cap * sizeof *out->ev);
			}
			tk_event *d = tk_event_dup(out->ev[i]);
			d->ts += span * k;
			out->ev[out->n++] = d;
		}
	}
	return 0;
}

static double write_file(const evs *e, const char *path, int format, int gz)
{
	double best = 1e30;
	for (int run = 0; run < 3; run++) {
		tk_writer *w;
		tk_writer_opts o = {.format = format, .gzip = gz}; /* default levels: gzip 6, tkb zlib chunks 1 */
		double t0 = now();
		if (tk_writer_open_path(&w, path, &o))
			return -1;
		for (size_t i = 0; i < e->n; i++)
			if (tk_writer_write(w, e->ev[i]))
				return -1;
		if (tk_writer_close(w))
			return -1;
		tk_writer_free(w);
		double t = now() - t0;
		best = t < best ? t : best;
	}
	return best;
}

static volatile uint64_t sink;

static double read_file(const char *path, uint64_t *n)
{
	double best = 1e30;
	for (int run = 0; run < 3; run++) {
		tk_reader *r;
		double t0 = now();
		if (tk_reader_open_path(&r, path, NULL))
			return -1;
		const tk_event *ev;
		uint64_t k = 0, sum = 0;
		while (tk_reader_next(r, &ev) == TK_OK)
			k++, sum += ev->args.len;
		tk_reader_free(r);
		double t = now() - t0;
		best = t < best ? t : best;
		sink += sum; /* the args were touched */
		*n = k;
	}
	return best;
}

static long long fsize(const char *p)
{
	struct stat st;
	return stat(p, &st) ? -1 : (long long)st.st_size;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: tkb_bench TRACE [REPEAT] [TMPDIR]\n");
		return 2;
	}
	int repeat = argc > 2 ? atoi(argv[2]) : 1;
	const char *dir = argc > 3 ? argv[3] : "/tmp";
	evs e = {0};
	if (load(argv[1], repeat < 1 ? 1 : repeat, &e))
		return 1;
	static const struct { const char *suffix; int format, gz; } outs[] = {
	    {"json", TK_FORMAT_JSON, 0}, {"json.gz", TK_FORMAT_JSON, 1},
	    {"tkb", TK_FORMAT_TKB, 0},   {"zlib.tkb", TK_FORMAT_TKB, 1}};
	long long json_size = 0;
	printf("%s x%d: %zu events, input JSON %llu bytes (uncompressed)\n", argv[1], repeat, e.n,
	       (unsigned long long)input_bytes);
	for (size_t i = 0; i < 4; i++) {
		char path[4096];
		snprintf(path, sizeof path, "%s/tkb_bench.%d.%s", dir, (int)getpid(), outs[i].suffix);
		double tw = write_file(&e, path, outs[i].format, outs[i].gz);
		uint64_t n = 0;
		double tr = read_file(path, &n);
		long long sz = fsize(path);
		if (i == 0)
			json_size = sz;
		printf("%-9s %11lld bytes %6.2f%% of input %6.2f%% of compact json  write %6.2f M events/s  read %6.2f M events/s%s\n",
		       outs[i].suffix, sz, 100.0 * (double)sz / (double)input_bytes,
		       100.0 * (double)sz / (double)json_size, (double)e.n / tw / 1e6,
		       (double)n / tr / 1e6, n == e.n ? "" : "  (EVENT COUNT DIFFERS)");
		unlink(path);
	}
	for (size_t i = 0; i < e.n; i++)
		tk_event_free(e.ev[i]);
	free(e.ev);
	return 0;
}
