/* stats_caller.c: the time trace-stats' tables take on the caller's thread, with and without the args members read ahead on the parse threads (tk_stats_note) and the ops' nesting on a thread of its own. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tracekit/stats.h"
#include "tracekit/tracekit.h"

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int usage(void)
{
	fputs("usage: stats_caller [--threads N] MODE FILE\n"
	      "Reads FILE on N threads (default 2) into the default tables of trace-stats\n"
	      "and prints the wall time and the seconds spent inside tk_stats_add on the\n"
	      "caller's thread: what bounds trace-stats when enough threads parse. MODE:\n"
	      "  read   the caller reads each event's args members itself (tk_stats_add)\n"
	      "  notes  the parse threads read them (tk_stats_note, tk_stats_add_noted)\n"
	      "  nest   as notes, with the ops' nesting on a thread of its own\n"
	      "         (tk_stats_opts.threads = N)\n"
	      "  batch  as nest, with the tables' part of each batch made on the\n"
	      "         parse threads (tk_stats_add_from), as the tools build them\n"
	      "  none   no tables: the cost of the timing alone, to subtract\n",
	      stderr);
	return 2;
}

int main(int argc, char **argv)
{
	unsigned threads = 2;
	int i = 1;
	if (i + 1 < argc && strcmp(argv[i], "--threads") == 0) {
		threads = (unsigned)strtoul(argv[i + 1], NULL, 10);
		i += 2;
	}
	if (argc - i != 2)
		return usage();
	const char *mode = argv[i], *path = argv[i + 1];
	int batch = strcmp(mode, "batch") == 0;
	int nest = batch || strcmp(mode, "nest") == 0;
	int notes = nest || strcmp(mode, "notes") == 0, none = strcmp(mode, "none") == 0;
	if (!notes && !none && strcmp(mode, "read") != 0)
		return usage();
	tk_stats_opts so = {0};
	so.flops = TK_FLOPS_TORCH;
	so.threads = nest ? threads : 0;
	tk_reader_opts ro = {0};
	ro.threads = threads;
	if (notes) {
		ro.note_fn = tk_stats_note;
		ro.note_ctx = &so;
		ro.note_size = tk_stats_note_size();
	}
	tk_reader *r = NULL;
	tk_stats *s = NULL;
	if (tk_reader_open_path(&r, path, &ro) || tk_stats_new(&s, &so)) {
		fprintf(stderr, "stats_caller: %s: %s\n", path, r ? tk_reader_error(r) : "out of memory");
		tk_reader_free(r);
		tk_stats_free(s);
		return 1;
	}
	const tk_event *ev;
	double in = 0, t0 = now();
	int rc;
	while ((rc = tk_reader_next(r, &ev)) == TK_OK) {
		double a = now();
		if (!none && (batch ? tk_stats_add_from(s, r, ev) : tk_stats_add_noted(s, ev, tk_reader_event_note(r))))
			break;
		in += now() - a;
	}
	int bad = rc != TK_EOF || tk_stats_finish(s);
	if (bad)
		fprintf(stderr, "stats_caller: %s: %s\n", path, rc != TK_EOF ? tk_reader_error(r) : tk_stats_error(s));
	printf("mode=%s threads=%u wall_s=%.3f in_add_s=%.3f\n", mode, threads, now() - t0, in);
	tk_reader_free(r);
	tk_stats_free(s);
	return bad;
}
