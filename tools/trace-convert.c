/* trace-convert.c: convert a trace between the formats tracekit reads and writes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "tracekit/stats.h"
#include "tracekit/tracekit.h"

enum { O_OUT = 'o', O_QUIET = 'q', O_FORMAT = 0x100, O_LEVEL, O_STRICT, O_COMPRESS, O_LIST, O_MEMORY,
       O_MEM_COUNTERS, O_THREADS, O_TMPDIR };

static const cli_opt opts[] = {
	{O_OUT, 'o', "output", "FILE", "write to FILE ('-' for standard output); required"},
	{O_FORMAT, 0, "to", "FORMAT", "output format (listed below; default: from FILE's name)"},
	{O_COMPRESS, 0, "compress", NULL, "tkb output: zlib-compress each chunk"},
	{O_LEVEL, 0, "gzip-level", "N", "compression level 1-9 (default: gzip 6, tkb chunks 1)"},
	{O_MEMORY, 0, "memory", "SIZE", "pftrace, sqlite output: memory to order events in (default 256M, sqlite 64M)"},
	{O_TMPDIR, 0, "tmpdir", "DIR", "pftrace, sqlite output: where sorted runs and SQLite's temporary\n"
	 "                             files go (default $TMPDIR or /tmp)"},
	{O_STRICT, 0, "strict", NULL, "treat a truncated input as an error instead of a warning"},
	{O_THREADS, 0, "threads", "N",
	 CLI_THREADS_HELP_OUT "; gzip output at\n"
	 "                             levels 4-8 shares them: half parse, half deflate"},
	{O_MEM_COUNTERS, 0, "memory-counters", NULL, "add a counter event after each [memory] event: the\n"
	 "                             device's allocated and reserved bytes (docs/steps.md)"},
	{O_LIST, 0, "list", NULL, "list the traces IN stands for (archive members) and exit"},
	{O_QUIET, 'q', "quiet", NULL, "no progress output and no warnings"},
	{0, 0, NULL, NULL, NULL},
};

static const cli_tool tool = {
	"trace-convert",
	"IN -o OUT [options]",
	"Convert a trace from IN to OUT. The input format (Chrome trace JSON, plain or\n"
	"gzip, the compact binary .tkb, or Perfetto's protobuf .pftrace) is detected\n"
	"from its bytes; IN '-' reads standard input, ARCHIVE//MEMBER a trace inside a\n"
	".tar, .tar.gz, .zip, ... (an archive alone: its one trace). The output format\n"
	"follows OUT's name (*.json, *.json.gz, *.tkb, *.pftrace, *.sqlite) unless --to\n"
	"is given; a name with another suffix needs --to ('-' and a device or FIFO such\n"
	"as /dev/null are JSON). Every event, argument and top-level metadata member\n"
	"is kept (a SQLite database: as tables, docs/sql.md). OUT is written under a\n"
	"temporary name and renamed when complete, so a failed run leaves no file;\n"
	"events that do not fit in --memory are ordered through --tmpdir.",
	opts,
	"exit status: 0 success (warnings may be printed), 1 data or I/O error, 2 usage error.\n\n"
	"examples:\n"
	"  trace-convert rank0.json -o rank0.json.gz\n"
	"  zcat big.json.gz | trace-convert - -o big.json\n"
	"  trace-convert rank0.json.gz -o rank0.tkb --compress\n"
	"  trace-convert rank0.json.gz -o rank0.pftrace   # for ui.perfetto.dev\n"
	"  trace-convert rank0.json.gz -o rank0.sqlite    # for sqlite3, DuckDB, pandas\n"
	"  trace-convert logs.tar.gz//run/rank3.pt.trace.json.gz -o rank3.json\n",
	0,
	1,
};

typedef struct convert_opts {
	const char *in, *out;
	tk_writer_opts wopts;
	tk_reader_opts ropts;
	int quiet;
	int compress;
	int list;
	int mem_counters;
} convert_opts;

/* --memory-counters: the running sum of Bytes per device, where the events
 * carry no Total Allocated (in input order: torch writes them in time
 * order on their thread). */
typedef struct mem_track {
	char device[48];
	int64_t sum;
} mem_track;

typedef struct mem_counters {
	mem_track *dev;
	size_t n;
	char name[64], args[96];
} mem_counters;

/* The counter event that follows a [memory] event: "Memory DEVICE" on its
 * process, {"allocated":A,"reserved":R}; 0 when ev is none. */
static int mem_counter(mem_counters *mc, const tk_event *ev, tk_event *out)
{
	tk_memory_info mi;
	if (!(ev->has & TK_HAS_TS) || !tk_memory_event(ev, &mi))
		return 0;
	mem_track *t = NULL;
	for (size_t i = 0; i < mc->n && !t; i++)
		if (strcmp(mc->dev[i].device, mi.device) == 0)
			t = &mc->dev[i];
	if (!t) {
		mem_track *nd = realloc(mc->dev, (mc->n + 1) * sizeof *nd);
		if (!nd)
			return -1;
		mc->dev = nd;
		t = &mc->dev[mc->n++];
		snprintf(t->device, sizeof t->device, "%s", mi.device);
		t->sum = 0;
	}
	if (__builtin_add_overflow(t->sum, mi.bytes, &t->sum))
		t->sum = mi.bytes < 0 ? INT64_MIN : INT64_MAX;
	int64_t alloc = mi.allocated != INT64_MIN ? mi.allocated : t->sum;
	snprintf(mc->name, sizeof mc->name, "Memory %s", mi.device);
	if (mi.reserved != INT64_MIN)
		snprintf(mc->args, sizeof mc->args, "{\"allocated\":%lld,\"reserved\":%lld}", (long long)alloc,
		         (long long)mi.reserved);
	else
		snprintf(mc->args, sizeof mc->args, "{\"allocated\":%lld}", (long long)alloc);
	memset(out, 0, sizeof *out);
	out->ph = 'C';
	out->has = TK_HAS_PH | TK_HAS_TS | TK_HAS_NAME | TK_HAS_CAT;
	out->ts = ev->ts;
	out->name = (tk_sv){mc->name, strlen(mc->name)};
	out->cat = (tk_sv){"memory_counter", 14};
	out->pid = ev->pid;
	out->args = (tk_sv){mc->args, strlen(mc->args)};
	return 1;
}

static void print_warnings(const convert_opts *o, tk_reader *r)
{
	if (o->quiet)
		return;
	for (size_t i = 0; tk_reader_warning(r, i); i++)
		cli_warn(tool.name, "%s", tk_reader_warning(r, i));
	const tk_reader_stats *st = tk_reader_get_stats(r);
	if (st->repaired_strings)
		cli_warn(tool.name, "%s: %llu strings held invalid UTF-8 and were repaired with U+FFFD",
		         tk_reader_name(r), (unsigned long long)st->repaired_strings);
}

static int copy_events(const convert_opts *o, tk_reader *r, tk_writer *w)
{
	size_t copied = 0;
	const tk_event *ev;
	cli_progress prog;
	cli_progress_init(&prog, o->quiet);
	int rc, werr = 0;
	mem_counters mc = {0};
	tk_event counter;
	while ((rc = tk_reader_next(r, &ev)) == TK_OK) {
		if (!copied && tk_copy_meta(w, r, &copied) && !copied)
			break;
		if ((werr = tk_writer_write_from(w, r, ev)) != 0)
			break;
		int c = o->mem_counters ? mem_counter(&mc, ev, &counter) : 0;
		if (c < 0 || (c > 0 && (werr = tk_writer_write(w, &counter)) != 0)) {
			werr = werr ? werr : TK_ERR_NOMEM;
			break;
		}
		const tk_reader_stats *st = tk_reader_get_stats(r);
		if ((st->events & 0xffff) == 0)
			cli_progress_update(&prog, o->in, st->bytes_in, st->events);
	}
	cli_progress_done(&prog);
	free(mc.dev);
	if (werr == TK_ERR_NOMEM && rc == TK_OK) {
		cli_err(tool.name, "out of memory");
		return 1;
	}
	if (rc < 0) {
		cli_err(tool.name, "%s", tk_reader_error(r));
		return 1;
	}
	if (rc == TK_EOF && tk_copy_meta(w, r, &copied) == 0 && tk_writer_close(w) == 0)
		return 0;
	cli_err(tool.name, "%s", tk_writer_error(w));
	return 1;
}

static int run_convert(const convert_opts *o)
{
	tk_reader *r = NULL;
	tk_writer *w = NULL;
	int status = 1;
	if (tk_reader_open_path(&r, o->in, &o->ropts)) {
		cli_err(tool.name, "%s", tk_reader_error(r));
		goto out;
	}
	if (tk_writer_open_path(&w, o->out, &o->wopts)) {
		cli_err(tool.name, "%s", tk_writer_error(w));
		goto out;
	}
	status = copy_events(o, r, w);
	print_warnings(o, r);
	if (!status && tk_writer_repaired_strings(w) && !o->quiet)
		cli_warn(tool.name, "%s: %llu strings held invalid UTF-8 and were repaired with U+FFFD",
		         o->out, (unsigned long long)tk_writer_repaired_strings(w));
out:
	tk_writer_free(w); /* removes the temporary file unless closed */
	tk_reader_free(r);
	return status;
}

/* .tkb compresses its chunks with zlib instead of a gzip layer. */
static int resolve_format(convert_opts *o)
{
	tk_writer_opts named = {.format = TK_FORMAT_AUTO, .gzip = -1};
	if (cli_check_output(&tool, o->out, &o->wopts, o->quiet) || cli_tkb_compress(&tool, o->out, &o->wopts, o->compress))
		return 2;
	/* JSON out (the default for a name of no format): the parse threads
	 * write each event's text too */
	named.format = TK_FORMAT_AUTO;
	o->ropts.render_json = o->wopts.format == TK_FORMAT_JSON ||
	                       (o->wopts.format == TK_FORMAT_AUTO &&
	                        (tk_format_from_name(o->out, &named) || named.format == TK_FORMAT_JSON));
	return 0;
}

/* Gzip JSON output at levels 4 to 8, where deflating costs about twice
 * what parsing and formatting do: the N threads are shared, the parse
 * taking half (rounded up, the main thread among them) and the deflate
 * the rest and one more. Measured on 16 cores, 8 and 8 threads wrote the
 * generated 1.07 GB trace at level 6 in 1.20 s, where 16 and 16 took
 * 1.64 s (docs/threads.md); on 2, 1 and 2 took 2% less time than 2 and 2.
 * The faster levels 1-3 and the slow level 9 keep N for each. The output
 * is the same bytes whatever the counts. */
static void share_threads(convert_opts *o)
{
	tk_writer_opts named = {.format = TK_FORMAT_AUTO, .gzip = -1};
	unsigned n = o->ropts.threads;
	int level = o->wopts.gzip_level ? o->wopts.gzip_level : 6;
	if (tk_format_from_name(o->out, &named)) /* no format's name: JSON, no gzip */
		named = (tk_writer_opts){.format = TK_FORMAT_JSON, .gzip = 0};
	int format = o->wopts.format != TK_FORMAT_AUTO ? o->wopts.format : named.format;
	int gz = o->wopts.gzip >= 0 ? o->wopts.gzip : named.gzip > 0;
	int json = format == TK_FORMAT_JSON || format == TK_FORMAT_AUTO;
	if (!json || !gz || level < 4 || level > 8 || n < 2)
		return;
	o->ropts.threads = (n + 1) / 2;
	o->wopts.threads = n - o->ropts.threads + 1;
}

static int parse_args(int argc, char **argv, convert_opts *o)
{
	const char *arg;
	int c, ind;
	memset(o, 0, sizeof *o);
	o->wopts.gzip = -1;
	o->ropts.threads = cli_threads_default();
	while ((c = cli_next(&tool, argc, argv, &arg, &ind)) != -1) {
		switch (c) {
		case O_OUT: o->out = arg; break;
		case O_QUIET: o->quiet = 1; break;
		case O_STRICT: o->ropts.strict = 1; break;
		case O_THREADS:
			if (cli_parse_threads(&tool, arg, &o->ropts.threads))
				return 2;
			break;
		case O_COMPRESS: o->compress = 1; break;
		case O_LEVEL:
			o->wopts.gzip_level = atoi(arg);
			if (o->wopts.gzip_level < 1 || o->wopts.gzip_level > 9)
				return cli_bad_value(&tool, c, arg, "1 to 9");
			break;
		case O_FORMAT:
			if (cli_parse_to(&tool, arg, &o->wopts))
				return 2;
			break;
		case O_LIST: o->list = 1; break;
		case O_MEM_COUNTERS: o->mem_counters = 1; break;
		case O_MEMORY:
			if (cli_parse_memory(&tool, arg, &o->wopts.memory_bytes))
				return 2;
			break;
		case O_TMPDIR:
			if (cli_parse_tmpdir(&tool, c, arg, &o->wopts.tmpdir))
				return 2;
			break;
		default: return 2;
		}
	}
	if (argc - ind != 1) {
		cli_usage_error(&tool, argc - ind ? "takes exactly one input" : "missing input file");
		return 2;
	}
	o->in = argv[ind];
	o->wopts.threads = o->ropts.threads; /* gzip output deflated on as many */
	if (o->list)
		return 0;
	if (!o->out) {
		cli_usage_error(&tool, "missing -o OUT");
		return 2;
	}
	if (cli_refuse_output_input(&tool, "-o", o->out, (char *const *)&o->in, 1))
		return 2;
	int rc = resolve_format(o);
	if (!rc)
		share_threads(o);
	return rc;
}

int main(int argc, char **argv)
{
	convert_opts o;
	cli_cleanup_on_signals();
	int rc = parse_args(argc, argv, &o);
	if (rc)
		return rc;
	if (o.list)
		return cli_list_traces(tool.name, (char *const *)&o.in, 1);
	return run_convert(&o);
}
