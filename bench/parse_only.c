/* parse_only.c: read a trace with libtracekit and report events, decoded bytes and speed. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <tracekit/tracekit.h>

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Reads every event; returns the last tk_reader_next() code (TK_EOF on success). */
static int drain(tk_reader *r)
{
	const tk_event *ev = NULL;
	int rc;
	while ((rc = tk_reader_next(r, &ev)) == TK_OK)
		;
	return rc;
}

static void report(const tk_reader *r, double secs)
{
	const tk_reader_stats *st = tk_reader_get_stats(r);
	double mb = (double)st->bytes_decoded / 1e6;
	printf("events=%llu bytes_in=%llu bytes_decoded=%llu seconds=%.3f mb_per_s=%.1f\n",
	       (unsigned long long)st->events, (unsigned long long)st->bytes_in,
	       (unsigned long long)st->bytes_decoded, secs, secs > 0 ? mb / secs : 0.0);
}

int main(int argc, char **argv)
{
	tk_reader_opts o = {0};
	int a = 1;
	if (argc == 4 && strcmp(argv[1], "--threads") == 0) {
		o.threads = (unsigned)atoi(argv[2]);
		a = 3;
	}
	if (argc != a + 1 || strcmp(argv[a], "--help") == 0) {
		fprintf(stderr, "usage: parse_only [--threads N] FILE|-\n"
		                "Parses every event of a trace (JSON or gzip-compressed JSON) and prints\n"
		                "the event count, bytes read, bytes decoded and elapsed seconds; with\n"
		                "--threads N on N threads (tk_reader_opts.threads; default 1).\n");
		return argc == 2 && strcmp(argv[1], "--help") == 0 ? 0 : 2;
	}
	double t0 = now_s();
	tk_reader *r = NULL;
	int rc = tk_reader_open_path(&r, argv[a], &o);
	if (rc != TK_OK) {
		fprintf(stderr, "parse_only: %s\n", r ? tk_reader_error(r) : tk_strerror(rc));
		if (r)
			tk_reader_free(r);
		return 1;
	}
	rc = drain(r);
	double secs = now_s() - t0;
	if (rc != TK_EOF) {
		fprintf(stderr, "parse_only: %s\n", tk_reader_error(r));
		tk_reader_free(r);
		return 1;
	}
	report(r, secs);
	tk_reader_free(r);
	return 0;
}
