/* trace-stats.c: torch's operator table, nsys-style kernel/memcpy/API summaries and FLOPs. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "cli_stats.h"
#include "tracekit/stats.h"
#include "tracekit/tracekit.h"

enum { O_OUT = 'o', O_QUIET = 'q', O_SORT = 's', O_LIMIT = 'n', O_FORMAT = 'f', O_TABLES = 't',
       O_SHAPES = 0x100, O_UNIT, O_CAT, O_NAME, O_WINDOW, O_STEPS, O_FLOPS, O_PENDING, O_LIST, O_MEM_SERIES, O_STRICT, O_THREADS,
       O_MEMORY, O_TMPDIR };

static const cli_opt opts[] = {
	{O_SORT, 's', "sort", "KEY", "sort rows by a torch key: self_cpu_time_total, cpu_time_total,\n"
	 "                             self_cuda_time_total, cuda_time_total, count, flops, cpu_time,\n"
	 "                             cuda_time, none (default: none, first appearance, as torch)"},
	{O_LIMIT, 'n', "row-limit", "N", "print at most N rows per table (default 100; -1 = all)"},
	{O_SHAPES, 0, "group-by-input-shape", NULL, "one row per (name, Input Dims), with Input Shapes"},
	{O_UNIT, 0, "time-unit", "UNIT", "the operators table's times in s, ms, us or ns (default:\n                             torch's choice; the other tables are in ns, as nsys')"},
	{O_CAT, 0, "cat", "LIST", "count only these categories (comma separated)"},
	{O_NAME, 0, "name", "GLOB", "show only rows whose name matches GLOB"},
	{O_WINDOW, 0, "window", "A:B", "only events starting in [A, B) of the trace clock (200ms, 1.5s;\n"
	 "                             a plain number is us; +A:+B from the first event)"},
	{O_STEPS, 0, "steps", "A[-B]", "only events inside ProfilerStep#A..#B and the GPU work they\n"
	 "                             launched (docs/steps.md; reads each input twice)"},
	{O_FLOPS, 0, "flops", "MODE", "torch (default), extended or none (see docs/flops.md)"},
	{O_MEM_SERIES, 0, "memory-series", "FILE", "also write the allocation time line of the [memory]\n"
	 "                             events to FILE.csv or FILE.json (docs/steps.md)"},
	{O_FORMAT, 'f', "format", "FMT", "text (default), csv, json or md"},
	{O_TABLES, 't', "tables", "LIST", "ops,kernels,memcpy,api,steps,launch,memory,collectives (default:\n"
	 "                             all that have rows but steps, GPU busy, idle and overlap per\n"
	 "                             ProfilerStep; launch, launch delays and queue length per GPU\n"
	 "                             stream; memory, peak memory per device from [memory] events;\n"
	 "                             collectives, NCCL bandwidths and, across ranks, stragglers)"},
	{O_PENDING, 0, "max-pending", "N", "CPU ops held for time sorting (default 524288)"},
	{O_MEMORY, 0, "memory", "SIZE", CLI_STATS_MEMORY_HELP},
	{O_TMPDIR, 0, "tmpdir", "DIR", CLI_STATS_TMPDIR_HELP},
	{O_OUT, 'o', "output", "FILE", "write to FILE instead of standard output"},
	{O_LIST, 0, "list", NULL, "list the traces the inputs stand for (archive members) and exit"},
	{O_THREADS, 0, "threads", "N", CLI_THREADS_HELP},
	{O_STRICT, 0, "strict", NULL, "treat a truncated input as an error instead of a warning"},
	{O_QUIET, 'q', "quiet", NULL, "no progress output and no warnings"},
	{0, 0, NULL, NULL, NULL},
};

static const cli_tool tool = {
	"trace-stats",
	"TRACE... [options]",
	"Summarise PyTorch profiler traces without Python: the operator table that\n"
	"prof.key_averages().table() prints (self and total CPU and CUDA time, calls,\n"
	"FLOPs), then kernel, memcpy/memset and runtime API summaries in the shape of\n"
	"nsys cuda_gpu_kern_sum; with -t steps, GPU busy, idle and overlap per step;\n"
	"with -t launch, launch delays and queue length per GPU stream; with -t memory,\n"
	"the peak allocated and reserved memory per device and the op at the peak; with\n"
	"-t collectives, NCCL bytes and bandwidths per kind and the ranks that start late.\n"
	"Several traces are treated as ranks: the tables are\n"
	"combined and get one column per rank ('rank 3 CUDA total': its name, from\n"
	"distributedInfo.rank, and what it shows) and the rank that spent the most. An\n"
	"archive (.tar, .tar.gz, .zip, ...) stands for every trace in it, each a rank;\n"
	"ARCHIVE//MEMBER for one.",
	opts,
	"exit status: 0 success, 1 data or I/O error (other inputs are still read), 2 usage error.\n\n"
	"examples:\n"
	"  trace-stats rank0.json.gz --sort self_cuda_time_total --row-limit 10\n"
	"  trace-stats --group-by-input-shape --flops extended -t ops trace.json\n"
	"  trace-stats worker*.json --sort cuda_time_total -f md > summary.md\n"
	"  trace-stats -t steps worker*.json\n"
	"  trace-stats logs.tar.gz -t kernels\n",
	0,
	0,
};

/* the tables: ops, kernels, memcpy, api, steps, launch, memory, collectives */
enum { T_STEPS = 4, T_LAUNCH = 5, T_MEMORY = 6, T_COLL = 7, N_TABLES = 8 };

typedef struct stats_opts {
	char **in;
	int n_in;
	const char *out;
	tk_stats_opts sopts;
	tk_table_opts topts;
	int tables; /* bits: 1 << T_*: 1 ops, 2 kernels, 4 memcpy, 8 api, 16 steps, 32 launch, 64 memory,
	             * 128 collectives */
	int tables_given;
	long step_a, step_b; /* -1 = no step filter */
	const char *window;  /* --window as given */
	const char *series;  /* --memory-series FILE */
	int series_json;
	int quiet, list;
	tk_reader_opts ropts; /* --threads */
} stats_opts;

/* ---- options ---- */

/* Each option's value; 0, or 2 after a usage error naming the option. */
static int parse_one(stats_opts *o, int c, const char *arg)
{
	static const char *const flops[] = {"none", "torch", "extended", NULL}; /* TK_FLOPS_* */
	static const char *const fmts[] = {"text", "csv", "json", "md", NULL};  /* TK_TABLE_* */
	static const char *const units[] = {"s", "ms", "us", "ns", NULL};
	static const char *const tables[] = {"ops",    "kernels", "memcpy",      "api", "steps",
	                                     "launch", "memory",  "collectives", NULL};
	char *end;
	switch (c) {
	case O_SORT: /* checked here, before the inputs are read */
		o->topts.sort_by = arg;
		return cli_parse_enum(&tool, c, arg, tk_table_sort_keys()) < 0 ? 2 : 0;
	case O_LIMIT: return cli_parse_rows(&tool, c, arg, 0, &o->topts.row_limit);
	case O_SHAPES: o->sopts.group_by_shapes = 1; return 0;
	case O_UNIT: o->topts.time_unit = arg; return cli_parse_enum(&tool, c, arg, units) < 0 ? 2 : 0;
	case O_CAT: o->sopts.cats = arg; return 0;
	case O_NAME: o->topts.name_glob = arg; return 0;
	case O_WINDOW: o->window = arg; return cli_parse_window(&tool, arg, &o->sopts.window);
	case O_LIST: o->list = 1; return 0;
	case O_STEPS: return cli_parse_steps(&tool, c, arg, &o->step_a, &o->step_b);
	case O_FLOPS:
		o->sopts.flops = cli_parse_enum(&tool, c, arg, flops);
		return o->sopts.flops < 0 ? 2 : 0;
	case O_FORMAT:
		o->topts.format = cli_parse_enum(&tool, c, arg, fmts);
		return o->topts.format < 0 ? 2 : 0;
	case O_TABLES:
		o->tables = (int)cli_parse_enum_list(&tool, c, arg, tables);
		o->tables_given = 1;
		return o->tables < 0 ? 2 : 0;
	case O_PENDING:
		o->sopts.max_pending = strtoul(arg, &end, 10);
		return *end || end == arg || arg[0] == '-' ? cli_bad_value(&tool, c, arg, "a count of ops") : 0;
	case O_MEM_SERIES: {
		size_t n = strlen(arg);
		o->series = arg;
		o->series_json = n > 5 && strcmp(arg + n - 5, ".json") == 0;
		if (!o->series_json && !(n > 4 && strcmp(arg + n - 4, ".csv") == 0))
			return cli_bad_value(&tool, c, arg, "a file name ending in .csv or .json");
		return 0;
	}
	case O_OUT: o->out = arg; return 0;
	case O_QUIET: o->quiet = 1; return 0;
	case O_MEMORY: return cli_parse_memory(&tool, arg, &o->sopts.memory_bytes);
	case O_TMPDIR: return cli_parse_tmpdir(&tool, c, arg, &o->sopts.tmpdir);
	case O_THREADS: return cli_parse_threads(&tool, arg, &o->ropts.threads);
	case O_STRICT: o->ropts.strict = 1; return 0;
	default: return 2;
	}
}

static int parse_args(int argc, char **argv, stats_opts *o)
{
	const char *arg;
	int c, ind;
	memset(o, 0, sizeof *o);
	o->topts.row_limit = 100;
	o->ropts.threads = cli_threads_default();
	o->sopts.flops = TK_FLOPS_TORCH;
	o->topts.flops = 1;
	/* steps and launch only when asked: they keep every GPU op until the end;
	 * memory too: the op at the peak takes a second pass */
	o->tables = 15;
	o->step_a = o->step_b = -1;
	while ((c = cli_next(&tool, argc, argv, &arg, &ind)) != -1) {
		if ((c == -2 ? 2 : parse_one(o, c, arg)) != 0)
			return 2;
	}
	if (ind >= argc) {
		cli_usage_error(&tool, "missing input trace");
		return 2;
	}
	o->in = argv + ind;
	o->n_in = argc - ind;
	if (cli_refuse_output_input(&tool, "-o", o->out, o->in, (size_t)o->n_in) ||
	    cli_refuse_output_input(&tool, "--memory-series", o->series, o->in, (size_t)o->n_in))
		return 2;
	int twice = cli_reads_twice(o->step_a, &o->sopts);
	for (int i = 0; i < o->n_in && twice; i++)
		if (cli_need_rereadable(&tool, o->in[i], CLI_STATS_TWICE))
			return 2;
	return 0;
}

/* ---- reading ---- */

/* The request of every trace of the run (cli_stats_run). */
static cli_stats_req request(const stats_opts *o)
{
	/* a trace-merge output: each rank as an input of its own */
	cli_stats_req q = {o->sopts, o->step_a, o->step_b, o->window, o->quiet, 1, (o->tables & (1 << T_MEMORY)) != 0,
	                   o->ropts};
	q.sopts.step_table = (o->tables & (1 << T_STEPS)) != 0;
	q.sopts.launch_table = (o->tables & (1 << T_LAUNCH)) != 0;
	q.sopts.memory_table = (o->tables & (1 << T_MEMORY)) != 0 || o->series;
	q.sopts.memory_series = o->series != NULL;
	q.sopts.collective_table = (o->tables & (1 << T_COLL)) != 0;
	return q;
}

/* ---- output ---- */

static const char *const titles[] = {
	NULL, "CUDA GPU Kernel Summary (cuda_gpu_kern_sum):",
	"CUDA GPU MemOps Summary (cuda_gpu_mem_time_sum, with bytes):",
	"CUDA API Summary (cuda_api_sum):",
	"GPU Time per ProfilerStep (docs/steps.md):",
	"GPU Launch Delays and Queue per Stream (docs/steps.md):",
	"Memory per Device, from [memory] events (docs/steps.md):",
	"NCCL Collectives per Kind and Group (docs/steps.md):"};
static const char *const json_keys[] = {"ops", "kernels", "memcpy", "api", "steps", "launch", "memory", "collectives"};
static const int which[] = {0, TK_STATS_KERNEL, TK_STATS_MEMCPY, TK_STATS_API, 0, 0, 0, 0};

static int has_rows(tk_stats *const *s, size_t n, int t)
{
	for (size_t i = 0; i < n; i++)
		if (t == T_STEPS    ? tk_stats_step_count(s[i])
		    : t == T_LAUNCH ? tk_stats_launch_count(s[i])
		    : t == T_MEMORY ? tk_stats_memory_count(s[i])
		    : t == T_COLL   ? tk_stats_collective_count(s[i])
		    : t             ? tk_stats_sum_count(s[i], which[t])
		                    : tk_stats_op_count(s[i]))
			return 1;
	return 0;
}

/* Table t of the run, for cli_write_tables. */
typedef struct render_ctx {
	const stats_opts *o;
	tk_stats *const *s;
	size_t n;
} render_ctx;

static int render(void *ctx, int t, char **txt, size_t *len)
{
	const render_ctx *c = ctx;
	const tk_table_opts *to = &c->o->topts;
	int rc = t == T_STEPS    ? tk_stats_format_steps(c->s, c->n, to, txt, len)
	         : t == T_LAUNCH ? tk_stats_format_launch(c->s, c->n, to, txt, len)
	         : t == T_MEMORY ? tk_stats_format_memory(c->s, c->n, to, txt, len)
	         : t == T_COLL   ? tk_stats_format_collectives(c->s, c->n, to, txt, len)
	         : t             ? tk_stats_format_sum(c->s, c->n, which[t], to, txt, len)
	                         : tk_stats_format_ops(c->s, c->n, to, txt, len);
	if (rc)
		cli_err(tool.name, "%s", rc == TK_ERR_ARG ? tk_stats_error(c->s[0]) : tk_strerror(rc));
	return rc;
}

/* The tables to -o FILE or standard output (cli_write_tables); the status. */
static int write_out(const stats_opts *o, tk_stats *const *s, size_t n)
{
	int shown[N_TABLES];
	size_t k = 0;
	for (int t = 0; t < N_TABLES; t++)
		if ((o->tables & (1 << t)) && (o->tables_given || has_rows(s, n, t)))
			shown[k++] = t;
	render_ctx c = {o, s, n};
	cli_tables w = {tool.name, o->out, o->topts.format, o->quiet, shown, k, titles, json_keys, NULL, render, &c};
	return cli_write_tables(&w);
}

/* --memory-series: every [memory] event's point of the time line, rank by
 * rank, device by device, in time order. */
static int write_series(const stats_opts *o, tk_stats *const *s, char (*labels)[32], size_t n)
{
	tk_outfile *out;
	FILE *f = cli_out_open(tool.name, o->series, &out);
	if (!f)
		return 1;
	fputs(o->series_json ? "{\"memory_series\":[" : "rank,device,ts_ns,bytes,allocated,reserved\n", f);
	int first = 1;
	for (size_t i = 0; i < n; i++)
		for (size_t k = 0; k < tk_stats_memory_points(s[i]); k++) {
			tk_stats_mem_point p;
			tk_stats_memory_point(s[i], k, &p);
			char res[32] = "";
			if (p.reserved >= 0)
				snprintf(res, sizeof res, "%lld", (long long)p.reserved);
			if (o->series_json)
				fprintf(f, "%s\n{\"rank\":\"%s\",\"device\":\"%s\",\"ts_ns\":%lld,\"bytes\":%lld,\"allocated\":%lld,"
				        "\"reserved\":%s}", first ? "" : ",", labels[i], p.device, (long long)p.ts, (long long)p.bytes,
				        (long long)p.allocated, *res ? res : "null");
			else
				fprintf(f, "%s,%s,%lld,%lld,%lld,%s\n", labels[i], p.device, (long long)p.ts, (long long)p.bytes,
				        (long long)p.allocated, res);
			first = 0;
		}
	if (o->series_json)
		fputs("\n]}\n", f);
	return cli_out_close(tool.name, out, 1);
}

static int run_stats(const stats_opts *o)
{
	if (o->list)
		return cli_list_traces(tool.name, o->in, (size_t)o->n_in);
	cli_stats_run run = {0};
	run.tool = tool.name;
	run.req = request(o);
	tk_reader_opts ro = o->ropts;
	cli_stats_notes(&ro, &o->sopts);
	int status = cli_each_trace(tool.name, o->in, (size_t)o->n_in, &ro, cli_stats_run_add, &run) ? 1 : 0;
	const char **lp = calloc(run.n ? run.n : 1, sizeof *lp);
	for (size_t i = 0; lp && i < run.n; i++)
		lp[i] = run.labels[i];
	stats_opts oo = *o;
	oo.topts.labels = lp;
	if (!lp)
		status = 1;
	else if (run.n) {
		int rc = write_out(&oo, run.s, run.n);
		status = rc ? rc : status;
		if (!rc && o->series && (rc = write_series(o, run.s, run.labels, run.n)) != 0)
			status = rc;
	}
	cli_stats_run_free(&run);
	free(lp);
	return status;
}

int main(int argc, char **argv)
{
	stats_opts o;
	cli_cleanup_on_signals();
	int rc = parse_args(argc, argv, &o);
	return rc ? rc : run_stats(&o);
}
