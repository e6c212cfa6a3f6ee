/* trace-merge.c: merge per-rank traces into one time-ordered trace with a process group per rank. */
#define _GNU_SOURCE /* strverscmp */
#include <dirent.h>
#include <errno.h>
#include <glob.h>
#include <regex.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "tracekit/merge.h"
#include "tracekit/tracekit.h"

enum {
	O_OUT = 'o',
	O_QUIET = 'q',
	O_RANK_FROM = 0x100,
	O_ALIGN,
	O_MEMORY,
	O_TMPDIR,
	O_RANKS,
	O_WINDOW,
	O_CAT,
	O_LEVEL,
	O_STRICT,
	O_LIST,
	O_FORMAT,
	O_COMPRESS,
	O_THREADS
};

static const cli_opt opts[] = {
	{O_OUT, 'o', "output", "FILE", "write to FILE ('-' for standard output); required"},
	{O_RANK_FROM, 0, "rank-from", "REGEX", "rank = first capture group of REGEX on each file name"},
	{O_ALIGN, 0, "align", "HOW", "none (default), start, collectives, or a FILE of 'rank offset_ns' lines"},
	{O_MEMORY, 0, "memory", "SIZE", "memory for the whole run, sorting included (default 256M)"},
	{O_TMPDIR, 0, "tmpdir", "DIR", "where sorted runs are spilled (default $TMPDIR or /tmp)"},
	{O_RANKS, 0, "ranks", "LIST", "keep only these ranks, e.g. 0,3-5"},
	{O_WINDOW, 0, "window", "A:B", "keep events overlapping A..B of the output's time line (200ms,\n"
	 "                             1.5s; a plain number is us; +A:+B from the first event)"},
	{O_CAT, 0, "cat", "LIST", "keep only these categories, e.g. kernel,cpu_op"},
	{O_FORMAT, 0, "to", "FORMAT", "output format (listed below; default: from OUT's name)"},
	{O_COMPRESS, 0, "compress", NULL, "tkb output: zlib-compress each chunk"},
	{O_LEVEL, 0, "gzip-level", "N", "compression level 1-9 (default: gzip 6, tkb chunks 1)"},
	{O_STRICT, 0, "strict", NULL, "treat a truncated input as an error instead of a warning"},
	{O_THREADS, 0, "threads", "N", CLI_THREADS_HELP_OUT},
	{O_LIST, 0, "list", NULL, "list the traces the inputs stand for (archive members) and exit"},
	{O_QUIET, 'q', "quiet", NULL, "no progress, no offset report, no warnings"},
	{0, 0, NULL, NULL, NULL},
};

static const cli_tool tool = {
	"trace-merge",
	"INPUT... -o OUT [options]",
	"Merge the traces of the ranks of a distributed job into one trace, sorted by\n"
	"time, in bounded memory. INPUTs are files, directories (every *.json,\n"
	"*.json.gz and *.tkb in them), glob patterns, archives (.tar, .tar.gz, .zip,\n"
	"...: every trace in them; ARCHIVE//MEMBER for one), or '-' for standard input. A\n"
	"rank's number comes from --rank-from, else from its distributedInfo.rank (a\n"
	".tkb file: its header), else from its position among the inputs. Each rank\n"
	"becomes its own process group: pids and tids are renumbered to\n"
	"rank*1000000+pid, processes are named 'rank N' / 'rank N GPU n', flow ids are\n"
	"kept apart per rank. OUT's format follows its name (*.json, *.json.gz, *.tkb,\n"
	"...; another suffix needs --to). OUT is written under a temporary name and\n"
	"renamed when complete.",
	opts,
	"exit status: 0 success (warnings may be printed), 1 data or I/O error, 2 usage error.\n\n"
	"examples:\n"
	"  trace-merge traces/ -o all.json.gz\n"
	"  trace-merge 'rank*.json.gz' --rank-from 'rank([0-9]+)' --align collectives -o all.json\n"
	"  trace-merge traces/ --ranks 0-3 --window +1s:+1.5s --cat kernel -o part.json\n"
	"  trace-merge logs_to_share.tar.gz -o all.json.gz\n",
	0,
	1,
};

typedef struct merge_cli {
	char **inputs;
	size_t n_inputs, cap;
	const char *out, *rank_from, *align_file, *window;
	regex_t re;
	int have_re, quiet, list, compress;
	tk_merge_opts mo;
	int64_t *ranks;
	size_t n_ranks;
	char **cats;
	size_t n_cats;
} merge_cli;

/* ---- inputs ---- */

static int push(merge_cli *o, const char *s)
{
	if (o->n_inputs == o->cap) {
		o->cap = o->cap ? o->cap * 2 : 16;
		char **n = realloc(o->inputs, o->cap * sizeof *n);
		if (!n)
			return -1;
		o->inputs = n;
	}
	return (o->inputs[o->n_inputs++] = strdup(s)) ? 0 : -1;
}

static int cmp_names(const void *a, const void *b)
{
	return strverscmp(*(char *const *)a, *(char *const *)b);
}

static int add_dir(merge_cli *o, const char *dir)
{
	DIR *d = opendir(dir);
	if (!d) {
		cli_err(tool.name, "%s: %s", dir, strerror(errno));
		return 1;
	}
	size_t first = o->n_inputs;
	size_t dl = strlen(dir);
	while (dl > 1 && dir[dl - 1] == '/') /* "logs/" names its files logs/x.json */
		dl--;
	for (struct dirent *e; (e = readdir(d));) {
		char path[4096];
		struct stat st;
		snprintf(path, sizeof path, "%.*s%s%s", (int)dl, dir, dir[dl - 1] == '/' ? "" : "/", e->d_name);
		if (e->d_name[0] != '.' && tk_is_trace_name(e->d_name) && stat(path, &st) == 0 &&
		    S_ISREG(st.st_mode) && push(o, path))
			break;
	}
	closedir(d);
	if (o->n_inputs > first) /* inputs is NULL while there are none */
		qsort(o->inputs + first, o->n_inputs - first, sizeof *o->inputs, cmp_names);
	if (o->n_inputs == first)
		cli_warn(tool.name, "%s: no trace files (*.json, *.json.gz, *.tkb) in this directory", dir);
	return 0;
}

/* A file, a directory, or a pattern the shell did not expand. */
static int expand(merge_cli *o, const char *arg)
{
	struct stat st;
	if (strcmp(arg, "-") == 0 || stat(arg, &st) == 0)
		return strcmp(arg, "-") && S_ISDIR(st.st_mode) ? add_dir(o, arg) : push(o, arg) ? 1 : 0;
	if (!strpbrk(arg, "*?["))
		return push(o, arg) ? 1 : 0; /* the reader will say what is wrong with it */
	glob_t g;
	int rc = glob(arg, 0, NULL, &g);
	if (rc == GLOB_NOMATCH) {
		cli_err(tool.name, "%s: no file matches this pattern", arg);
		return 1;
	}
	for (size_t i = 0; rc == 0 && i < g.gl_pathc; i++)
		rc = expand(o, g.gl_pathv[i]);
	globfree(&g);
	return rc ? 1 : 0;
}

static int rank_of(merge_cli *o, const char *path, int64_t *rank)
{
	*rank = -1;
	if (!o->have_re)
		return 0;
	const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
	regmatch_t mt[2];
	if (regexec(&o->re, base, 2, mt, 0) != 0 || mt[1].rm_so < 0) {
		cli_err(tool.name, "%s: --rank-from '%s' does not match this file name", path, o->rank_from);
		return 1;
	}
	char num[32] = {0}, *end;
	size_t n = (size_t)(mt[1].rm_eo - mt[1].rm_so);
	memcpy(num, base + mt[1].rm_so, n < sizeof num - 1 ? n : sizeof num - 1);
	*rank = strtoll(num, &end, 10);
	if (!num[0] || *end || *rank < 0) {
		cli_err(tool.name, "%s: --rank-from matched '%s', which is not a rank number", path, num);
		return 1;
	}
	return 0;
}

/* ---- option values ---- */

static int parse_ranks(merge_cli *o, const char *arg)
{
	for (const char *p = arg; *p;) {
		char *end;
		long long a = strtoll(p, &end, 10), b = a;
		if (end == p || a < 0)
			return -1;
		if (*end == '-') {
			p = end + 1;
			b = strtoll(p, &end, 10);
			if (end == p || b < a || b - a > 1000000)
				return -1;
		}
		for (long long r = a; r <= b; r++) {
			int64_t *n = realloc(o->ranks, (o->n_ranks + 1) * sizeof *n);
			if (!n)
				return -1;
			o->ranks = n;
			o->ranks[o->n_ranks++] = r;
		}
		if (*end && *end != ',')
			return -1;
		p = *end ? end + 1 : end;
	}
	return o->n_ranks ? 0 : -1;
}

static int parse_cats(merge_cli *o, const char *arg)
{
	char *copy = strdup(arg), *save = NULL;
	if (!copy)
		return -1;
	for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		char **n = realloc(o->cats, (o->n_cats + 1) * sizeof *n);
		if (!n || !(n[o->n_cats] = strdup(t)))
			return -1;
		o->cats = n;
		o->n_cats++;
	}
	free(copy);
	return o->n_cats ? 0 : -1;
}

/* The offsets file: "rank offset" per line, offset in ns unless it has a
 * unit; '#' starts a comment. */
static int read_offsets(const merge_cli *o, tk_merge *m)
{
	FILE *f = fopen(o->align_file, "r");
	if (!f) {
		cli_err(tool.name, "%s: %s", o->align_file, strerror(errno));
		return 1;
	}
	char *line = NULL;
	size_t cap = 0;
	int ln = 0, bad = 0;
	/* lines of any length; a line is 'RANK OFFSET', blank, or a comment from '#' */
	while (!bad && getline(&line, &cap, f) >= 0) {
		ln++;
		char *h = strchr(line, '#'), *word[3], *save = NULL;
		if (h)
			*h = 0;
		int n = 0;
		for (char *w = strtok_r(line, " \t\n\v\f\r", &save); w && n < 3; w = strtok_r(NULL, " \t\n\v\f\r", &save))
			word[n++] = w;
		if (n == 0)
			continue;
		if (n != 2) {
			bad = ln;
			break;
		}
		char *end, *rk = word[0], *off = word[1];
		errno = 0;
		long long r = strtoll(rk, &end, 10);
		int64_t ns;
		size_t ol = strlen(off);
		int has_unit = off[ol - 1] == 's';
		if (*end || r < 0 || errno == ERANGE ||
		    (has_unit ? tk_time_parse(off + (off[0] == '+'), &ns)
		              : (errno = 0, ns = strtoll(off, &end, 10), *end != 0 || errno == ERANGE)))
			bad = ln;
		else
			tk_merge_set_offset(m, r, ns);
	}
	free(line);
	fclose(f);
	if (bad)
		cli_err(tool.name, "%s:%d: expected 'rank offset_ns'", o->align_file, bad);
	return bad ? 1 : 0;
}

/* ---- running ---- */

static void on_progress(void *ctx, const char *what, uint64_t bytes, uint64_t events)
{
	cli_progress_update(ctx, what, bytes, events);
}

static void report(const merge_cli *o, const tk_merge *m)
{
	if (o->quiet)
		return;
	for (size_t i = 0; tk_merge_warning(m, i); i++)
		cli_warn(tool.name, "%s", tk_merge_warning(m, i));
	if (o->mo.align != TK_ALIGN_COLLECTIVES && o->mo.align != TK_ALIGN_START)
		return;
	for (size_t i = 0; i < tk_merge_inputs(m); i++) {
		tk_merge_rank_info in;
		tk_merge_info(m, i, &in);
		if (in.skipped)
			continue;
		if (o->mo.align == TK_ALIGN_START)
			fprintf(stderr, "%s: rank %lld: offset %+lld ns\n", tool.name, (long long)in.rank,
			        (long long)in.offset_ns);
		else if (in.matched)
			fprintf(stderr, "%s: rank %lld: offset %+lld ns, residual %lld ns (%zu collectives)\n",
			        tool.name, (long long)in.rank, (long long)in.offset_ns,
			        (long long)in.residual_ns, in.matched);
	}
}

/* The events written, metadata not counted. */
static uint64_t events_kept(const tk_merge *m)
{
	uint64_t n = 0;
	for (size_t i = 0; i < tk_merge_inputs(m); i++) {
		tk_merge_rank_info in;
		if (!tk_merge_info(m, i, &in))
			n += in.events_out;
	}
	return n;
}

typedef struct merge_run {
	merge_cli *o;
	tk_merge *m;
	cli_progress *prog;
} merge_run;

/* One trace: its rank from --rank-from, read into the merge. A bad input
 * does not stop the others from being read, so that every failure is
 * reported. */
static int add_trace(void *ctx, const char *name, tk_reader *r)
{
	merge_run *run = ctx;
	int64_t rank;
	if (rank_of(run->o, name, &rank))
		return 1;
	if (!tk_merge_add_reader(run->m, r, rank))
		return 0;
	cli_progress_done(run->prog);
	cli_err(tool.name, "%s", tk_merge_error(run->m));
	return 1;
}

static int run_merge(merge_cli *o)
{
	if (o->list)
		return cli_list_traces(tool.name, o->inputs, o->n_inputs);
	tk_merge *m = NULL;
	cli_progress prog;
	cli_progress_init(&prog, o->quiet);
	o->mo.progress = on_progress;
	o->mo.progress_ctx = &prog;
	int status = 0;
	if (tk_merge_new(&m, &o->mo)) {
		cli_err(tool.name, "%s", m ? tk_merge_error(m) : "out of memory");
		tk_merge_free(m);
		return 1;
	}
	if (o->align_file && read_offsets(o, m))
		status = 1;
	merge_run run = {o, m, &prog};
	if (!status && cli_each_trace(tool.name, o->inputs, o->n_inputs, &o->mo.ropts, add_trace, &run))
		status = 1;
	if (!status && !tk_merge_inputs(m)) {
		cli_err(tool.name, "no traces in the inputs");
		status = 1;
	}
	if (!status && tk_merge_write(m, o->out)) {
		cli_progress_done(&prog);
		cli_err(tool.name, "%s", tk_merge_error(m));
		status = 1;
	}
	cli_progress_done(&prog);
	if (!status && !o->quiet)
		cli_window_kept(tool.name, strcmp(o->out, "-") ? o->out : "(standard output)", o->window,
		                events_kept(m));
	report(o, m);
	tk_merge_free(m);
	return status;
}

static int set_align(merge_cli *o, const char *arg)
{
	static const char *const names[] = {"none", "start", "collectives"};
	for (int i = 0; i < 3; i++)
		if (strcmp(arg, names[i]) == 0) {
			o->mo.align = i;
			return 0;
		}
	struct stat st;
	if (stat(arg, &st) != 0)
		return -1;
	o->mo.align = TK_ALIGN_GIVEN;
	o->align_file = arg;
	return 0;
}

static int set_opt(merge_cli *o, int c, const char *arg)
{
	switch (c) {
	case O_OUT: o->out = arg; return 0;
	case O_QUIET: o->quiet = 1; return 0;
	case O_STRICT: o->mo.ropts.strict = 1; return 0;
	case O_THREADS: return cli_parse_threads(&tool, arg, &o->mo.ropts.threads);
	case O_TMPDIR: return cli_parse_tmpdir(&tool, c, arg, &o->mo.tmpdir);
	case O_RANK_FROM:
		if (o->have_re) /* given again: the last one counts */
			regfree(&o->re);
		o->rank_from = arg;
		o->have_re = regcomp(&o->re, arg, REG_EXTENDED) == 0;
		if (!o->have_re || o->re.re_nsub < 1)
			return cli_bad_value(&tool, c, arg, "a regular expression with a (group) around the rank");
		return 0;
	case O_ALIGN:
		return set_align(o, arg) ? cli_bad_value(&tool, c, arg, "valid: none, start, collectives, or "
		                                         "an existing FILE of 'rank offset_ns' lines") : 0;
	case O_MEMORY: /* the merge's sort, and the one a .pftrace output makes */
		if (cli_parse_memory(&tool, arg, &o->mo.memory_bytes))
			return 2;
		o->mo.wopts.memory_bytes = o->mo.memory_bytes;
		return 0;
	case O_LIST: o->list = 1; return 0;
	case O_FORMAT: return cli_parse_to(&tool, arg, &o->mo.wopts);
	case O_COMPRESS: o->compress = 1; return 0;
	case O_RANKS:
		return parse_ranks(o, arg) ? cli_bad_value(&tool, c, arg, "a list of ranks like 0,3-5") : 0;
	case O_WINDOW: o->window = arg; return cli_parse_window(&tool, arg, &o->mo.window);
	case O_CAT:
		return parse_cats(o, arg) ? cli_bad_value(&tool, c, arg, "a list of categories like kernel,cpu_op") : 0;
	case O_LEVEL:
		o->mo.wopts.gzip_level = atoi(arg);
		if (o->mo.wopts.gzip_level < 1 || o->mo.wopts.gzip_level > 9)
			return cli_bad_value(&tool, c, arg, "1 to 9");
		return 0;
	default: return 2;
	}
}

static int parse_args(int argc, char **argv, merge_cli *o)
{
	const char *arg;
	int c, ind, rc;
	memset(o, 0, sizeof *o);
	o->mo.wopts.gzip = -1;
	o->mo.ropts.threads = cli_threads_default();
	while ((c = cli_next(&tool, argc, argv, &arg, &ind)) != -1)
		if ((rc = set_opt(o, c, arg)) != 0)
			return 2;
	if (ind >= argc) {
		cli_usage_error(&tool, "missing input files");
		return 2;
	}
	if (!o->out && !o->list) {
		cli_usage_error(&tool, "missing -o OUT");
		return 2;
	}
	if (!o->list && (cli_check_output(&tool, o->out, &o->mo.wopts, o->quiet) ||
	                 cli_tkb_compress(&tool, o->out, &o->mo.wopts, o->compress)))
		return 2;
	o->mo.wopts.threads = o->mo.ropts.threads; /* gzip output deflated on as many */
	for (int i = ind; i < argc; i++)
		if (expand(o, argv[i]))
			return 1;
	if (!o->n_inputs) {
		cli_err(tool.name, "no input files");
		return 1;
	}
	if (cli_refuse_output_input(&tool, "-o", o->out, o->inputs, o->n_inputs))
		return 2;
	o->mo.ranks = o->ranks;
	o->mo.n_ranks = o->n_ranks;
	o->mo.cats = (const char *const *)o->cats;
	o->mo.n_cats = o->n_cats;
	return 0;
}

static void free_cli(merge_cli *o)
{
	for (size_t i = 0; i < o->n_inputs; i++)
		free(o->inputs[i]);
	for (size_t i = 0; i < o->n_cats; i++)
		free(o->cats[i]);
	free(o->inputs);
	free(o->cats);
	free(o->ranks);
	if (o->have_re)
		regfree(&o->re);
}

int main(int argc, char **argv)
{
	merge_cli o;
	cli_cleanup_on_signals();
	int rc = parse_args(argc, argv, &o);
	if (!rc)
		rc = run_merge(&o);
	free_cli(&o);
	return rc;
}
