/* trace-split.c: cut a trace into parts that every viewer opens, each a complete trace, plus an index. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "tracekit/split.h"

enum {
	O_OUT = 'o',
	O_QUIET = 'q',
	O_NAME = 0x100,
	O_MAX_SIZE,
	O_PARTS,
	O_WINDOW,
	O_BY_STEP,
	O_STEPS_PER_PART,
	O_RANGE,
	O_STEP,
	O_STEP_OLD,
	O_CLIP,
	O_FORMAT,
	O_LEVEL,
	O_MEMORY,
	O_TMPDIR,
	O_STRICT,
	O_COMPRESS,
	O_EVERY,
	O_LIST,
	O_THREADS
};

static const cli_opt opts[] = {
	{O_OUT, 'o', "output", "DIR", "write the parts and the index into DIR (created if missing); required"},
	{O_NAME, 0, "name", "NAME", "base name of the files (default: IN's name without .json/.gz)"},
	{O_MAX_SIZE, 0, "max-size", "SIZE", "every part at most SIZE bytes as written (500M, 2G)"},
	{O_PARTS, 0, "parts", "N", "about N parts of equal size, cut at times"},
	{O_EVERY, 0, "every", "DUR", "a part per time window of DUR (200ms, 1s, 500us); '--window DUR'\n"
	 "                             says the same"},
	{O_BY_STEP, 0, "by-step", NULL, "a part per ProfilerStep#N; GPU work goes with the step that\n"
	 "                             launched it (docs/steps.md)"},
	{O_STEPS_PER_PART, 0, "steps-per-part", "K", "with --by-step: K steps in each part"},
	{O_WINDOW, 0, "window", "A:B", "only the events starting in [A, B) of the trace clock (+A:+B from\n"
	 "                             the first event)"},
	{O_RANGE, 0, "range", "A:B", "the same as --window +A:+B"},
	{O_STEP, 0, "steps", "A[-B]", "only ProfilerStep#A to #B (to the start of the next step), with\n"
	 "                             the GPU work they launched"},
	{O_STEP_OLD, 0, "step", "A[-B]", "the same as --steps (its former name)"},
	{O_CLIP, 0, "clip", NULL, "cut slices at time boundaries; the rest continues in the next part"},
	{O_FORMAT, 0, "to", "FORMAT", "parts' format (listed below; default: json.gz when IN was gzip,\n"
	 "                             else json)"},
	{O_COMPRESS, 0, "compress", NULL, "tkb parts: zlib-compress each chunk"},
	{O_LEVEL, 0, "gzip-level", "N", "compression level 1-9 (default: gzip 6, tkb chunks 1)"},
	{O_MEMORY, 0, "memory", "SIZE", "memory for the whole run, ordering an unsorted input included\n"
	 "                             (default 128M)"},
	{O_TMPDIR, 0, "tmpdir", "DIR", "where ordering, and pftrace and sqlite parts, spill runs\n"
	 "                             (default $TMPDIR or /tmp)"},
	{O_STRICT, 0, "strict", NULL, "treat a truncated input as an error instead of a warning"},
	{O_THREADS, 0, "threads", "N", CLI_THREADS_HELP_OUT},
	{O_LIST, 0, "list", NULL, "list the traces IN stands for (archive members) and exit"},
	{O_QUIET, 'q', "quiet", NULL, "no progress, warnings or summary"},
	{0, 0, NULL, NULL, NULL},
};

static const cli_tool tool = {
	"trace-split",
	"IN -o DIR (--max-size SIZE | --parts N | --every DUR | --by-step | --window A:B | --steps A-B) [options]",
	"Split a large trace into parts that viewers can open (chrome://tracing stops near\n"
	"256 MB, TensorBoard near 500 MB, the Perfetto UI near 2 GB). Every part is a complete\n"
	"trace: all top-level metadata and the M events (process and thread names) are\n"
	"repeated in each. A slice belongs to the part where it starts (under --by-step and\n"
	"--steps, GPU work to the part of the step that launched it) and is kept whole\n"
	"unless --clip is given. A flow whose two ends fall in different parts is removed\n"
	"from both and counted. Parts are named DIR/NAME.part-0000.json[.gz] (or, with\n"
	"--to, .tkb, .pftrace[.gz] or .sqlite); DIR/NAME.index.json lists each part's time\n"
	"range, events and bytes. --max-size combines with one of the other rules (JSON\n"
	"parts only: the others are cut by time, count or steps). IN is read more than\n"
	"once (standard input cannot be split); an input not in time order is ordered in\n"
	"bounded memory (--memory). IN may be a member of an archive (ARCHIVE//MEMBER), or\n"
	"an archive holding one trace. A failed run leaves no file.",
	opts,
	"DUR takes ns, us, ms, s or min (a plain number is microseconds); A and B in --window\n"
	"are times on the trace clock, or count from the first event after a '+', and may be\n"
	"left out (':2s', '+1s:').\n\n"
	"exit status: 0 success (warnings may be printed), 1 data or I/O error, 2 usage error.\n\n"
	"examples:\n"
	"  trace-split big.json.gz -o parts/ --max-size 500M\n"
	"  trace-split big.json.gz -o parts/ --by-step --steps-per-part 4\n"
	"  trace-split big.json.gz -o steps/ --steps 12-15\n"
	"  trace-split big.json.gz -o win/ --every 200ms --clip --to json\n"
	"  trace-split big.json.gz -o cut/ --window +2s:+3s\n"
	"  trace-split big.json.gz -o steps/ --by-step --to tkb --compress\n",
	0,
	1,
};

typedef struct split_args {
	const char *in;
	tk_split_opts so;
	int quiet, compress, list;
	char window[160]; /* --window A:B as given, --range A:B as +A:+B; "" for none */
} split_args;

/* "200ms", "1.5s", "250" (microseconds) -> ns; 0 on success. */
/* --range A:B: both ends count from the first event; text: as --window +A:+B. */
static int parse_range(const char *arg, tk_split_opts *o, char *text, size_t cap)
{
	if (tk_window_parse(arg, &o->window) || o->window.lo_rel || o->window.hi_rel)
		return -1;
	o->window.lo_rel = o->window.hi_rel = 1;
	const char *colon = strchr(arg, ':');
	snprintf(text, cap, "%s%.*s:%s%s", colon > arg ? "+" : "", (int)(colon - arg), arg,
	         colon[1] ? "+" : "", colon + 1);
	return 0;
}

static int parse_steps(const char *arg, tk_split_opts *o)
{
	char *end;
	o->step_from = strtoll(arg, &end, 10);
	o->step_to = o->step_from;
	if (end == arg || o->step_from < 0)
		return -1;
	if (*end == '-') {
		const char *b = end + 1;
		o->step_to = strtoll(b, &end, 10);
		if (end == b)
			return -1;
	}
	o->steps = 1;
	return *end ? -1 : 0;
}

static int parse_count(const char *arg, unsigned *out)
{
	char *end;
	long v = strtol(arg, &end, 10);
	if (end == arg || *end || v < 1 || v > 1000000)
		return -1;
	*out = (unsigned)v;
	return 0;
}

/* One option; 0 or a usage error already printed (2). */
static int take_opt(split_args *a, int c, const char *arg)
{
	tk_split_opts *o = &a->so;
	int64_t v;
	switch (c) {
	case O_OUT: o->dir = arg; return 0;
	case O_NAME: o->name = arg; return 0;
	case O_QUIET: a->quiet = 1; return 0;
	case O_STRICT: o->ropts.strict = 1; return 0;
	case O_THREADS: return cli_parse_threads(&tool, arg, &o->ropts.threads);
	case O_CLIP: o->clip = 1; return 0;
	case O_COMPRESS: a->compress = 1; return 0;
	case O_BY_STEP: o->by_step = 1; return 0;
	case O_TMPDIR: return cli_parse_tmpdir(&tool, c, arg, &o->tmpdir);
	case O_MAX_SIZE:
		if ((v = cli_parse_size(arg)) <= 0)
			break;
		o->max_bytes = (uint64_t)v;
		return 0;
	case O_MEMORY:
		if (cli_parse_memory(&tool, arg, &o->memory_bytes))
			return 2;
		a->so.wopts.memory_bytes = o->memory_bytes; /* each .pftrace part's own ordering */
		return 0;
	case O_LIST: a->list = 1; return 0;
	case O_PARTS: return parse_count(arg, &o->n_parts) ? 3 : 0;
	case O_STEPS_PER_PART:
		o->by_step = 1;
		return parse_count(arg, &o->steps_per_part) ? 3 : 0;
	case O_WINDOW:
		if (strchr(arg, ':')) { /* A:B, as in every tool */
			snprintf(a->window, sizeof a->window, "%s", arg);
			return cli_parse_window(&tool, arg, &o->window);
		}
		return tk_time_parse(arg, &o->every_ns) || o->every_ns <= 0 ? 3 : 0; /* --every DUR */
	case O_EVERY: return tk_time_parse(arg, &o->every_ns) || o->every_ns <= 0 ? 3 : 0;
	case O_RANGE: return parse_range(arg, o, a->window, sizeof a->window) ? 3 : 0;
	case O_STEP:
	case O_STEP_OLD: return parse_steps(arg, o) ? 3 : 0;
	case O_FORMAT: return cli_parse_to(&tool, arg, &o->wopts);
	case O_LEVEL:
		o->wopts.gzip_level = atoi(arg);
		if (o->wopts.gzip_level >= 1 && o->wopts.gzip_level <= 9)
			return 0;
		break;
	default: return 2;
	}
	return 3;
}

/* What option c takes, for its bad-value message. */
static const char *takes(int c)
{
	switch (c) {
	case O_MAX_SIZE: return "a size like 500M or 2G";
	case O_PARTS: case O_STEPS_PER_PART: return "a count from 1 to 1000000";
	case O_WINDOW: return "A:B, or a duration like 200ms, 1s or 500us as --every takes";
	case O_EVERY: return "a duration like 200ms, 1s or 500us";
	case O_RANGE: return "A:B, times from the first event without '+', e.g. 1s:1.5s";
	case O_STEP:
	case O_STEP_OLD: return "A or A-B, ProfilerStep numbers";
	case O_LEVEL: return "1 to 9";
	default: return NULL;
	}
}

/* .tkb parts: zlib chunks with --compress; a byte budget for JSON parts only. */
static int check_format(split_args *a)
{
	int tkb = a->so.wopts.format == TK_FORMAT_TKB;
	if (a->compress && !tkb) {
		cli_usage_error(&tool, "--compress applies to --to tkb only (JSON parts: --to json.gz)");
		return 2;
	}
	int fmt = a->so.wopts.format;
	if (a->so.max_bytes && fmt != TK_FORMAT_AUTO && fmt != TK_FORMAT_JSON) {
		cli_usage_error(&tool, "--max-size needs JSON parts (the viewers' limits are on JSON); "
		                "cut %s parts with --parts, --every, --by-step, --window or --steps",
		                fmt == TK_FORMAT_TKB ? ".tkb" : fmt == TK_FORMAT_PFTRACE ? ".pftrace" : ".sqlite");
		return 2;
	}
	if (tkb)
		a->so.wopts.gzip = a->compress;
	return 0;
}

static int parse_args(int argc, char **argv, split_args *a)
{
	const char *arg;
	int c, ind;
	memset(a, 0, sizeof *a);
	a->so.wopts.gzip = -1;
	a->so.ropts.threads = cli_threads_default();
	while ((c = cli_next(&tool, argc, argv, &arg, &ind)) != -1) {
		int rc = c == -2 ? 2 : take_opt(a, c, arg);
		if (rc == 3)
			cli_bad_value(&tool, c, arg, takes(c) ? "%s" : NULL, takes(c));
		if (rc)
			return 2;
	}
	if (argc - ind != 1) {
		cli_usage_error(&tool, argc - ind ? "takes exactly one input" : "missing input file");
		return 2;
	}
	a->in = argv[ind];
	a->so.wopts.threads = a->so.ropts.threads; /* gzip parts deflated on as many */
	if (a->list)
		return 0;
	if (!a->so.dir) {
		cli_usage_error(&tool, "missing -o DIR");
		return 2;
	}
	int rules = !!a->so.n_parts + !!a->so.every_ns + a->so.by_step + a->so.window.set + a->so.steps;
	if (rules > 1) {
		cli_usage_error(&tool, "--parts, --every, --by-step, --window (--range) and --steps exclude each other");
		return 2;
	}
	if (!rules && !a->so.max_bytes) {
		cli_usage_error(&tool, "say where to split: --max-size, --parts, --every, --by-step, "
		                "--window or --steps");
		return 2;
	}
	return check_format(a);
}

static void on_progress(void *arg, const char *pass, uint64_t bytes, uint64_t events)
{
	char what[96];
	snprintf(what, sizeof what, "trace-split: %s", pass);
	cli_progress_update(arg, what, bytes, events);
}

static void report(const split_args *a, const tk_split *s)
{
	for (size_t i = 0; tk_split_warning(s, i); i++)
		cli_warn(tool.name, "%s", tk_split_warning(s, i));
	const tk_split_stats *st = tk_split_get_stats(s);
	size_t parts = tk_split_part_count(s);
	uint64_t meta = parts * st->meta_events; /* repeated in every part */
	cli_window_kept(tool.name, a->in, a->window[0] ? a->window : NULL,
	                st->events_out > meta ? st->events_out - meta : 0);
	fprintf(stderr, "%s: %s: %zu part%s, %llu event%s, index %s\n", tool.name, a->in, parts,
	        parts == 1 ? "" : "s", (unsigned long long)st->events_out, st->events_out == 1 ? "" : "s",
	        tk_split_index_path(s));
	if (st->flows_cut)
		fprintf(stderr, "%s: %llu flows crossed a part boundary: %llu flow ends removed\n",
		        tool.name, (unsigned long long)st->flows_cut,
		        (unsigned long long)st->flow_ends_removed);
	if (st->clipped)
		fprintf(stderr, "%s: %llu slices clipped at a boundary, %llu continuation pieces\n",
		        tool.name, (unsigned long long)st->clipped, (unsigned long long)st->continued);
	if (st->outside)
		fprintf(stderr, "%s: %llu events outside the range left out\n", tool.name,
		        (unsigned long long)st->outside);
}

static int run_split(split_args *a)
{
	tk_split *s = NULL;
	cli_progress prog;
	cli_progress_init(&prog, a->quiet);
	a->so.progress = on_progress;
	a->so.progress_ctx = &prog;
	int status = 1;
	if (tk_split_new(&s, &a->so)) {
		cli_err(tool.name, "%s", tk_split_error(s));
		status = 2;
	} else if (tk_split_run(s, a->in)) {
		cli_progress_done(&prog);
		cli_err(tool.name, "%s", tk_split_error(s));
	} else {
		cli_progress_done(&prog);
		if (!a->quiet)
			report(a, s);
		status = 0;
	}
	tk_split_free(s);
	return status;
}

int main(int argc, char **argv)
{
	split_args a;
	cli_cleanup_on_signals();
	int rc = parse_args(argc, argv, &a);
	if (rc)
		return rc;
	if (a.list)
		return cli_list_traces(tool.name, (char *const *)&a.in, 1);
	if (cli_need_rereadable(&tool, a.in, "trace-split reads its input twice"))
		return 2;
	return run_split(&a);
}
