/* cli_stats.h: one trace's stats as trace-stats and trace-diff build them: --steps and a relative --window from a first pass, the op at the memory peak from a last one, the messages. */
#ifndef TK_CLI_STATS_H
#define TK_CLI_STATS_H

#include "tracekit/stats.h"

typedef struct cli_stats_req {
	tk_stats_opts sopts; /* its window may count from the first event */
	long step_a, step_b; /* only ProfilerStep#A..#B (docs/steps.md); -1: all */
	const char *window;  /* --window as given, for the empty-window warning; NULL: none */
	int quiet;           /* no warnings */
} cli_stats_req;

/* The finished stats of the trace name that r is open on (r is read to its
 * end; name is read again before it for --steps or a relative window, and
 * after it for the op at a memory peak). Errors and warnings go to stderr
 * with the tool's name. 0 with *out, or 1. */
int cli_stats_read(const char *tool, const char *name, tk_reader *r, const cli_stats_req *q, tk_stats **out);

#endif
