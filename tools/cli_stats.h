/* cli_stats.h: one trace's stats as trace-stats and trace-diff build them: --steps and a relative --window from a first pass, the op at the memory peak from a last one, the messages. */
#ifndef TK_CLI_STATS_H
#define TK_CLI_STATS_H

#include "cli.h"
#include "tracekit/stats.h"

/* The readers of a stats run read each event's args on their parse
 * threads (tk_stats_note): so, the options of every stats object made,
 * must live while they read. */
void cli_stats_notes(tk_reader_opts *ro, const tk_stats_opts *so);
/* --steps A[-B]: ProfilerStep numbers with A <= B into *a and *b; 0, or 2
 * after a usage error naming the option. */
int cli_parse_steps(const cli_tool *t, int id, const char *arg, long *a, long *b);
/* 1 when the tables need a first read of each input: --steps (step_a >= 0)
 * or a --window counted from the first event. */
int cli_reads_twice(long step_a, const tk_stats_opts *so);
/* What cli_need_rereadable says of an input --steps or a --window counted
 * from the first event reads twice. */
#define CLI_STATS_TWICE "--steps and a --window counted from the first event read each input twice"

/* --memory (default TK_STATS_MEMORY_DEFAULT): the sorting of the steps,
 * launch, memory and collectives tables per trace; the ranks of a trace-merge output
 * share it, with at least CLI_STATS_RANK_MIN each. */
#define CLI_STATS_RANK_MIN ((size_t)2 << 20)
#define CLI_STATS_MEMORY_HELP "memory for sorting the events of the steps, launch, memory and\n" \
	"                             collectives tables, per trace; a trace-merge output's ranks share it\n" \
	"                             (default 128M); with --steps, the launches of the first read"
#define CLI_STATS_TMPDIR_HELP "where that sorting spills runs, and the id maps and durations\n" \
	"                             their pages (default $TMPDIR or /tmp)"

typedef struct cli_stats_req {
	tk_stats_opts sopts; /* its window may count from the first event */
	long step_a, step_b; /* only ProfilerStep#A..#B (docs/steps.md); -1: all */
	const char *window;  /* --window as given, for the empty-window warning; NULL: none */
	int quiet;           /* no warnings */
	int per_rank;        /* a trace-merge output: a stats object per rank */
	int peak_op;         /* the memory table is shown: find the op at each peak */
	tk_reader_opts ropts; /* for the first and the last pass (--threads) */
} cli_stats_req;

/* What cli_stats_read gives: one stats object, or one per rank of a
 * merged trace (rank[i]; -1 for a trace that is not a merge output). */
typedef struct cli_stats_out {
	tk_stats **s;
	int64_t *rank;
	size_t n;
} cli_stats_out;

/* The finished stats of the trace name that r is open on (r is read to its
 * end; name is read again before it for --steps or a relative window, and
 * after it for the op at a memory peak). With per_rank, a trace-merge
 * output (its tracekitMerge pidScheme) gives a stats object per rank,
 * each event going to the rank of its pid. Errors and warnings go to
 * stderr with the tool's name. 0 with *out filled, or 1. */
int cli_stats_read(const char *tool, const char *name, tk_reader *r, const cli_stats_req *q, cli_stats_out *out);
void cli_stats_out_free(cli_stats_out *out);

/* The stats of every trace a run reads (cli_each_trace's function
 * cli_stats_run_add), each read with req, with their labels: "rank R" for
 * a rank of a trace-merge output and from distributedInfo.rank, else
 * "trace N"; two traces that say they are the same rank get " #2", with a
 * warning. Set tool and req, zero the rest. */
typedef struct cli_stats_run {
	const char *tool;
	cli_stats_req req;
	tk_stats **s;
	char (*labels)[32];
	size_t n, cap, seen;
} cli_stats_run;
int cli_stats_run_add(void *run, const char *name, tk_reader *r);
void cli_stats_run_free(cli_stats_run *run);

/* The tables of a run, written as every stats tool writes them: to -o
 * FILE (published whole, a device or FIFO written in place) or standard
 * output; JSON as one object with a member per table (keys), text and
 * Markdown with a title line above each (titles; NULL: none) after the
 * preface lines (NULL: none). CSV holds one table: several go to one file
 * each, FILE's name with ".KEY" before its ".csv" (x.csv: x.ops.csv,
 * x.kernels.csv); on standard output they follow one another, with a
 * warning that a CSV reader does not load them as one. render(ctx, t)
 * gives table t's text (malloc'd) or a TK_ERR code, whose message it has
 * printed. The exit status: 0, 1 (an error, said), 2 (a usage error). */
typedef struct cli_tables {
	const char *tool, *out;
	int format, quiet;
	const int *shown; /* the tables to write, n_shown of them */
	size_t n_shown;
	const char *const *titles, *const *keys;
	const char *preface;
	int (*render)(void *ctx, int t, char **txt, size_t *len);
	void *ctx;
} cli_tables;
int cli_write_tables(const cli_tables *w);

#endif
