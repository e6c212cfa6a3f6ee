/* trace-diff.c: two runs (or two ranks, or two step ranges) side by side: operators, kernels, memory ops, API calls and the steps table, by how much their time changed. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cli_stats.h"
#include "tracekit/stats.h"
#include "tracekit/tracekit.h"

enum { O_OUT = 'o', O_QUIET = 'q', O_LIMIT = 'n', O_FORMAT = 'f', O_TABLES = 't',
       O_SHAPES = 0x100, O_CAT, O_NAME, O_WINDOW, O_STEPS, O_BASE_STEPS, O_NEW_STEPS, O_PENDING,
       O_STRICT, O_THREADS, O_MEMORY, O_TMPDIR, O_LIST };

static const cli_opt opts[] = {
	{O_TABLES, 't', "tables", "LIST", "ops,kernels,memcpy,api,steps (default: ops,kernels,memcpy,api,\n"
	 "                             those that have rows)"},
	{O_LIMIT, 'n', "row-limit", "N", "print at most N rows per table (default 50; -1 = all)"},
	{O_FORMAT, 'f', "format", "FMT", "text (default), csv, json or md"},
	{O_STEPS, 0, "steps", "A[-B]", "both sides: only ProfilerStep#A..#B and the GPU work they launched\n"
	 "                             (docs/steps.md; reads each input twice)"},
	{O_BASE_STEPS, 0, "base-steps", "A[-B]", "the same for BASE alone"},
	{O_NEW_STEPS, 0, "new-steps", "A[-B]", "the same for NEW alone"},
	{O_WINDOW, 0, "window", "A:B", "both sides: only events starting in [A, B) of the trace clock\n"
	 "                             (+A:+B from each trace's first event)"},
	{O_SHAPES, 0, "group-by-input-shape", NULL, "match operators by (name, Input Dims)"},
	{O_CAT, 0, "cat", "LIST", "count only these categories (comma separated)"},
	{O_NAME, 0, "name", "GLOB", "show only rows whose name matches GLOB"},
	{O_PENDING, 0, "max-pending", "N", "CPU events held per thread for sorting (as trace-stats)"},
	{O_MEMORY, 0, "memory", "SIZE", CLI_STATS_MEMORY_HELP},
	{O_TMPDIR, 0, "tmpdir", "DIR", CLI_STATS_TMPDIR_HELP},
	{O_OUT, 'o', "output", "FILE", "write the tables to FILE (default: standard output)"},
	{O_THREADS, 0, "threads", "N", CLI_THREADS_HELP},
	{O_STRICT, 0, "strict", NULL, "treat a truncated input as an error instead of a warning"},
	{O_LIST, 0, "list", NULL, "list the traces the inputs stand for (archive members) and exit"},
	{O_QUIET, 'q', "quiet", NULL, "no progress output and no warnings"},
	{0, 0, NULL, NULL, NULL},
};

static const cli_tool tool = {
	"trace-diff",
	"BASE NEW [options]",
	"Compare two traces: two runs, two ranks (two rank files), or two step ranges of\n"
	"one trace (the same file twice with --base-steps and --new-steps). The tables of\n"
	"trace-stats are built for each side, their rows matched by name, and printed with\n"
	"both sides' figures and the change, rows of one side only marked new or gone,\n"
	"sorted by how much their time changed; the steps table compares the averages per\n"
	"step. BASE and NEW are each one trace (a file, or ARCHIVE//MEMBER).",
	opts,
	"exit status: 0 success, 1 data or I/O error, 2 usage error.\n\n"
	"examples:\n"
	"  trace-diff before.json.gz after.json.gz\n"
	"  trace-diff rank0.json rank3.json -t kernels -n 20\n"
	"  trace-diff run.json run.json --base-steps 10 --new-steps 20 -t ops,steps -f md\n",
	0,
	0,
};

enum { T_OPS, T_KERNELS, T_MEMCPY, T_API, T_STEPS, N_TABLES };

typedef struct diff_opts {
	char *in[2];
	const char *out;
	tk_stats_opts sopts;
	tk_table_opts topts;
	int tables, tables_given;
	long steps[2][2]; /* [side][A, B]; -1: all */
	const char *window;
	int quiet, list;
	char **inputs; /* --list: every argument */
	int n_inputs;
	tk_reader_opts ropts; /* --threads */
} diff_opts;

/* ---- options ---- */

static int parse_one(diff_opts *o, int c, const char *arg)
{
	static const char *const fmts[] = {"text", "csv", "json", "md", NULL}; /* TK_TABLE_* */
	static const char *const tables[] = {"ops", "kernels", "memcpy", "api", "steps", NULL};
	char *end;
	switch (c) {
	case O_LIMIT: return cli_parse_rows(&tool, c, arg, 0, &o->topts.row_limit);
	case O_FORMAT:
		o->topts.format = cli_parse_enum(&tool, c, arg, fmts);
		return o->topts.format < 0 ? 2 : 0;
	case O_TABLES:
		o->tables = (int)cli_parse_enum_list(&tool, c, arg, tables);
		o->tables_given = 1;
		return o->tables < 0 ? 2 : 0;
	case O_STEPS:
		if (cli_parse_steps(&tool, c, arg, &o->steps[0][0], &o->steps[0][1]))
			return 2;
		o->steps[1][0] = o->steps[0][0];
		o->steps[1][1] = o->steps[0][1];
		return 0;
	case O_BASE_STEPS: return cli_parse_steps(&tool, c, arg, &o->steps[0][0], &o->steps[0][1]);
	case O_NEW_STEPS: return cli_parse_steps(&tool, c, arg, &o->steps[1][0], &o->steps[1][1]);
	case O_WINDOW: o->window = arg; return cli_parse_window(&tool, arg, &o->sopts.window);
	case O_SHAPES: o->sopts.group_by_shapes = 1; return 0;
	case O_CAT: o->sopts.cats = arg; return 0;
	case O_NAME: o->topts.name_glob = arg; return 0;
	case O_PENDING:
		o->sopts.max_pending = strtoul(arg, &end, 10);
		return *end || end == arg || arg[0] == '-' ? cli_bad_value(&tool, c, arg, "a count of ops") : 0;
	case O_OUT: o->out = arg; return 0;
	case O_QUIET: o->quiet = 1; return 0;
	case O_MEMORY: return cli_parse_memory(&tool, arg, &o->sopts.memory_bytes);
	case O_TMPDIR: return cli_parse_tmpdir(&tool, c, arg, &o->sopts.tmpdir);
	case O_THREADS: return cli_parse_threads(&tool, arg, &o->ropts.threads);
	case O_STRICT: o->ropts.strict = 1; return 0;
	case O_LIST: o->list = 1; return 0;
	default: return 2;
	}
}

static int parse_args(int argc, char **argv, diff_opts *o)
{
	const char *arg;
	int c, ind;
	memset(o, 0, sizeof *o);
	o->topts.row_limit = 50;
	o->ropts.threads = cli_threads_default();
	o->sopts.flops = TK_FLOPS_NONE;
	o->tables = (1 << T_OPS) | (1 << T_KERNELS) | (1 << T_MEMCPY) | (1 << T_API);
	o->steps[0][0] = o->steps[0][1] = o->steps[1][0] = o->steps[1][1] = -1;
	while ((c = cli_next(&tool, argc, argv, &arg, &ind)) != -1)
		if ((c == -2 ? 2 : parse_one(o, c, arg)) != 0)
			return 2;
	if (o->list) { /* any number of inputs, named and not read */
		if (argc == ind) {
			cli_usage_error(&tool, "--list needs a trace or an archive");
			return 2;
		}
		o->inputs = argv + ind;
		o->n_inputs = argc - ind;
		return 0;
	}
	if (argc - ind != 2) {
		cli_usage_error(&tool, argc - ind < 2 ? "two traces to compare are needed: BASE NEW"
		                                      : "two traces only: BASE NEW (%d given)", argc - ind);
		return 2;
	}
	o->in[0] = argv[ind];
	o->in[1] = argv[ind + 1];
	if (cli_refuse_output_input(&tool, "-o", o->out, o->in, 2))
		return 2;
	for (int i = 0; i < 2; i++)
		if (cli_reads_twice(o->steps[i][0], &o->sopts) && cli_need_rereadable(&tool, o->in[i], CLI_STATS_TWICE))
			return 2;
	if (!strcmp(o->in[0], "-") && !strcmp(o->in[1], "-")) {
		cli_usage_error(&tool, "BASE and NEW cannot both be standard input");
		return 2;
	}
	return 0;
}

/* ---- reading ---- */

typedef struct side {
	const diff_opts *o;
	int i;           /* 0 BASE, 1 NEW */
	size_t traces;   /* traces the argument stood for */
	tk_stats *st;
} side;

static int read_side(void *ctx, const char *name, tk_reader *r)
{
	side *sd = ctx;
	const diff_opts *o = sd->o;
	if (sd->traces++) { /* the argument, not its second member: it is what needs changing */
		cli_err(tool.name, "%s: %s stands for more than one trace (%s is the second); name one (ARCHIVE//MEMBER)",
		        o->in[sd->i], sd->i ? "NEW" : "BASE", name);
		return 1;
	}
	/* a trace-merge output is compared whole */
	cli_stats_req q = {o->sopts, o->steps[sd->i][0], o->steps[sd->i][1], o->window, o->quiet, 0, 0, o->ropts};
	q.sopts.step_table = (o->tables & (1 << T_STEPS)) != 0;
	cli_stats_out got;
	if (cli_stats_read(tool.name, name, r, &q, &got))
		return 1;
	sd->st = got.s[0];
	got.s[0] = NULL;
	cli_stats_out_free(&got);
	return 0;
}

/* ---- output ---- */

static const char *const titles[] = {"Operators (torch's key_averages):", "CUDA GPU Kernels:",
                                     "CUDA GPU MemOps:", "CUDA API:", "GPU Time per ProfilerStep:"};
static const char *const json_keys[] = {"ops", "kernels", "memcpy", "api", "steps"};
static const int which[] = {TK_STATS_OP, TK_STATS_KERNEL, TK_STATS_MEMCPY, TK_STATS_API, TK_DIFF_STEPS};

static int has_rows(tk_stats *const *s, int t)
{
	for (int i = 0; i < 2; i++)
		if (t == T_STEPS ? tk_stats_step_count(s[i])
		    : t == T_OPS ? tk_stats_op_count(s[i])
		                 : tk_stats_sum_count(s[i], which[t]))
			return 1;
	return 0;
}

typedef struct render_ctx {
	const diff_opts *o;
	tk_stats *const *s;
} render_ctx;

static int render(void *ctx, int t, char **txt, size_t *len)
{
	const render_ctx *c = ctx;
	int rc = tk_stats_format_diff(c->s[0], c->s[1], which[t], &c->o->topts, txt, len);
	if (rc)
		cli_err(tool.name, "%s", tk_strerror(rc));
	return rc;
}

/* The tables to -o FILE or standard output (cli_write_tables); the status. */
static int write_out(const diff_opts *o, tk_stats *const *s)
{
	int shown[N_TABLES];
	size_t k = 0;
	for (int t = 0; t < N_TABLES; t++)
		if ((o->tables & (1 << t)) && (o->tables_given || has_rows(s, t)))
			shown[k++] = t;
	char preface[1024];
	snprintf(preface, sizeof preface, "base: %s\nnew:  %s\n", o->in[0], o->in[1]);
	render_ctx c = {o, s};
	cli_tables w = {tool.name, o->out, o->topts.format, o->quiet, shown, k, titles, json_keys, preface, render, &c};
	return cli_write_tables(&w);
}

int main(int argc, char **argv)
{
	diff_opts o;
	cli_cleanup_on_signals();
	int rc = parse_args(argc, argv, &o);
	if (rc)
		return rc;
	if (o.list)
		return cli_list_traces(tool.name, o.inputs, (size_t)o.n_inputs);
	side sd[2] = {{&o, 0, 0, NULL}, {&o, 1, 0, NULL}};
	int status = 0;
	cli_stats_notes(&o.ropts, &o.sopts);
	for (int i = 0; i < 2; i++) {
		if (cli_each_trace(tool.name, &o.in[i], 1, &o.ropts, read_side, &sd[i]) || !sd[i].st) {
			if (!sd[i].traces)
				cli_err(tool.name, "%s: no trace to compare", o.in[i]);
			status = 1;
		}
	}
	tk_stats *s[2] = {sd[0].st, sd[1].st};
	const char *labels[2] = {o.in[0], o.in[1]};
	o.topts.labels = labels; /* in each JSON table's totals */
	if (!status)
		status = write_out(&o, s);
	tk_stats_free(s[0]);
	tk_stats_free(s[1]);
	return status;
}
