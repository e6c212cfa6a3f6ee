/* trace-report.c: one self-contained HTML page that shows a run at a glance: steps, GPU time, top operators and kernels, collectives, memory, and a flame graph of CPU time. */
#define _GNU_SOURCE /* qsort_r */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cli_stats.h"
#include "tracekit/stats.h"
#include "tracekit/tracekit.h"

enum { O_OUT = 'o', O_QUIET = 'q', O_LIMIT = 'n', O_FOLDED = 0x100, O_TITLE, O_TOP, O_STEPS, O_WINDOW, O_STRICT, O_THREADS,
       O_LIST, O_MEMORY, O_TMPDIR };

static const cli_opt opts[] = {
	{O_OUT, 'o', "output", "FILE", "write the page to FILE ('-' for standard output); required"},
	{O_FOLDED, 0, "folded", "FILE", "also write the CPU time's call paths as folded stacks to FILE\n"
	 "                             (flamegraph.pl, speedscope: 'outer;...;inner NS' per line)"},
	{O_TITLE, 0, "title", "TEXT", "the page's title (default: the first input's name)"},
	{O_LIMIT, 'n', "row-limit", "N", "operators, kernels and collectives drawn, and table rows shown\n"
	 "                             (default 20; -1 = all), as trace-stats' -n"},
	{O_TOP, 0, "top", "N", "the same as --row-limit (its former name)"},
	{O_STEPS, 0, "steps", "A[-B]", "only ProfilerStep#A..#B and the GPU work they launched\n"
	 "                             (docs/steps.md; reads each input twice)"},
	{O_WINDOW, 0, "window", "A:B", "only events starting in [A, B) of the trace clock (200ms, 1.5s;\n"
	 "                             a plain number is us; +A:+B from the first event)"},
	{O_MEMORY, 0, "memory", "SIZE", CLI_STATS_MEMORY_HELP},
	{O_TMPDIR, 0, "tmpdir", "DIR", CLI_STATS_TMPDIR_HELP},
	{O_THREADS, 0, "threads", "N", CLI_THREADS_HELP},
	{O_STRICT, 0, "strict", NULL, "treat a truncated input as an error instead of a warning"},
	{O_LIST, 0, "list", NULL, "list the traces the inputs stand for (archive members) and exit"},
	{O_QUIET, 'q', "quiet", NULL, "no progress output and no warnings"},
	{0, 0, NULL, NULL, NULL},
};

static const cli_tool tool = {
	"trace-report",
	"TRACE... -o REPORT.html [options]",
	"Write one HTML page that shows a run at a glance: the run in one line; step\n"
	"time per step and rank with the slowest marked; GPU time per step split into\n"
	"compute, communication, memory ops and idle time; the top operators and\n"
	"kernels; NCCL time, bus bandwidth and the ranks that start collectives late;\n"
	"memory over time per device with its peak; and a flame graph of CPU time from\n"
	"the operators' nesting and the Python frames of with_stack traces. Every chart\n"
	"has its table beside it, the same table trace-stats prints (the command is\n"
	"named under it). The page holds everything inline (SVG, no script, no font,\n"
	"nothing fetched): it opens from disk in any browser and can be mailed. Several\n"
	"traces are ranks, as for trace-stats; an archive stands for every trace in it.",
	opts,
	"exit status: 0 success, 1 data or I/O error (other inputs are still read), 2 usage error.\n\n"
	"examples:\n"
	"  trace-report rank0.pt.trace.json.gz -o report.html\n"
	"  trace-report logs/rank*.json.gz -o run.html --folded run.folded\n"
	"  flamegraph.pl run.folded > cpu.svg\n",
	0,
	0,
};

typedef struct report_opts {
	char **in;
	int n_in;
	const char *out, *folded, *title, *window;
	long step_a, step_b, row_limit;
	int quiet, list;
	tk_stats_opts sopts;
	tk_reader_opts ropts;
} report_opts;

/* ---- options ---- */

static int parse_one(report_opts *o, int c, const char *arg)
{
	switch (c) {
	case O_OUT: o->out = arg; return 0;
	case O_FOLDED: o->folded = arg; return 0;
	case O_TITLE: o->title = arg; return 0;
	case O_LIMIT:
	case O_TOP: return cli_parse_rows(&tool, c, arg, 1, &o->row_limit);
	case O_STEPS: return cli_parse_steps(&tool, c, arg, &o->step_a, &o->step_b);
	case O_WINDOW: o->window = arg; return cli_parse_window(&tool, arg, &o->sopts.window);
	case O_MEMORY: return cli_parse_memory(&tool, arg, &o->sopts.memory_bytes);
	case O_TMPDIR: return cli_parse_tmpdir(&tool, c, arg, &o->sopts.tmpdir);
	case O_THREADS: return cli_parse_threads(&tool, arg, &o->ropts.threads);
	case O_STRICT: o->ropts.strict = 1; return 0;
	case O_LIST: o->list = 1; return 0;
	case O_QUIET: o->quiet = 1; return 0;
	default: return 2;
	}
}

static int parse_args(int argc, char **argv, report_opts *o)
{
	const char *arg;
	int c, ind;
	memset(o, 0, sizeof *o);
	o->row_limit = 20;
	o->step_a = o->step_b = -1;
	o->sopts.flops = TK_FLOPS_TORCH;
	o->ropts.threads = cli_threads_default();
	while ((c = cli_next(&tool, argc, argv, &arg, &ind)) != -1)
		if ((c == -2 ? 2 : parse_one(o, c, arg)) != 0)
			return 2;
	if (ind >= argc) {
		cli_usage_error(&tool, "missing input trace");
		return 2;
	}
	o->in = argv + ind;
	o->n_in = argc - ind;
	if (o->list)
		return 0;
	if (!o->out) {
		cli_usage_error(&tool, "missing -o REPORT.html");
		return 2;
	}
	if (cli_refuse_output_input(&tool, "-o", o->out, o->in, (size_t)o->n_in) ||
	    (o->folded && cli_refuse_output_input(&tool, "--folded", o->folded, o->in, (size_t)o->n_in)))
		return 2;
	if (o->folded && strcmp(o->folded, o->out) == 0) {
		cli_usage_error(&tool, "--folded %s: the same file as -o", o->folded);
		return 2;
	}
	int twice = cli_reads_twice(o->step_a, &o->sopts);
	for (int i = 0; twice && i < o->n_in; i++)
		if (cli_need_rereadable(&tool, o->in[i], CLI_STATS_TWICE))
			return 2;
	return 0;
}

/* ---- writing text ---- */

static void esc(FILE *f, const char *s)
{
	for (; *s; s++) {
		switch (*s) {
		case '&': fputs("&amp;", f); break;
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '"': fputs("&quot;", f); break;
		default: fputc(*s, f);
		}
	}
}

/* At most n characters of s (a UTF-8 sequence is not cut), with "..." when cut. */
static void esc_short(FILE *f, const char *s, size_t n)
{
	size_t len = strlen(s);
	if (len <= n) {
		esc(f, s);
		return;
	}
	while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80)
		n--;
	char *t = malloc(n + 1);
	if (!t)
		return;
	memcpy(t, s, n);
	t[n] = 0;
	esc(f, t);
	fputs("...", f);
	free(t);
}

/* A time in ns as people read it: "850 ns", "12.3 us", "4.56 ms", "1.23 s". */
static void fmt_ns(char *b, size_t cap, double ns)
{
	double a = fabs(ns);
	if (a < 1e3)
		snprintf(b, cap, "%.0f ns", ns);
	else if (a < 1e6)
		snprintf(b, cap, "%.3g us", ns / 1e3);
	else if (a < 1e9)
		snprintf(b, cap, "%.3g ms", ns / 1e6);
	else
		snprintf(b, cap, "%.3g s", ns / 1e9);
}

static void fmt_bytes(char *b, size_t cap, double v)
{
	const char *u[] = {"B", "KiB", "MiB", "GiB", "TiB"};
	int k = 0;
	while (fabs(v) >= 1024 && k < 4) {
		v /= 1024;
		k++;
	}
	snprintf(b, cap, k ? "%.3g %s" : "%.0f %s", v, u[k]);
}

/* ---- the page's parts ---- */

static const char *const palette[] = {"#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948",
                                      "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"};
#define N_PALETTE (sizeof palette / sizeof palette[0])

typedef struct report {
	const report_opts *o;
	FILE *f;
	tk_stats **s;
	const char **labels;
	size_t n;
	size_t main_rank;  /* the tables' rank when there are many */
	size_t t_first, t_n; /* the stats objects the tables show */
	const char *cmd_in; /* the inputs as a shell gives them to trace-stats, for the commands shown */
	int64_t *nums;      /* the step numbers of every rank, sorted and distinct */
	size_t ns;
} report;

static void svg_open(FILE *f, int w, int h, const char *label)
{
	fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
	        "role=\"img\" aria-label=\"", w, h, w, h);
	esc(f, label);
	fputs("\">\n", f);
}

/* Table `which` (0 ops, TK_STATS_KERNEL, 4 steps, 5 launch, 6 memory, 7
 * collectives) as trace-stats prints it, and the command that does: -t
 * name, its rows limited to --row-limit (the steps: all), the ops sorted by self
 * CUDA time. */
static void table_of(report *R, int which, const char *name)
{
	tk_table_opts to = {0};
	to.format = TK_TABLE_HTML;
	to.row_limit = which == 4 ? 200 : R->o->row_limit; /* the steps: all but the longest runs */
	to.flops = 1;
	to.labels = R->labels + R->t_first;
	char *txt = NULL;
	size_t len = 0;
	tk_stats *const *s = R->s + R->t_first;
	int rc;
	switch (which) {
	case 0:
		to.sort_by = "self_cuda_time_total";
		rc = tk_stats_format_ops(s, R->t_n, &to, &txt, &len);
		break;
	case 4: rc = tk_stats_format_steps(s, R->t_n, &to, &txt, &len); break;
	case 5: rc = tk_stats_format_launch(s, R->t_n, &to, &txt, &len); break;
	case 6: rc = tk_stats_format_memory(s, R->t_n, &to, &txt, &len); break;
	case 7: rc = tk_stats_format_collectives(s, R->t_n, &to, &txt, &len); break;
	default: rc = tk_stats_format_sum(s, R->t_n, which, &to, &txt, &len); break;
	}
	if (rc) {
		fprintf(R->f, "<p class=\"note\">(the table could not be made: %s)</p>\n", tk_strerror(rc));
		return;
	}
	if (!len) {
		free(txt);
		return; /* no rows */
	}
	fputs("<div class=\"tbl\">\n", R->f);
	fwrite(txt, 1, len, R->f);
	fprintf(R->f, "</div>\n<p class=\"cmd\">%s: <code>trace-stats ", R->t_n < R->n ? "Every rank's" : "The same table");
	esc(R->f, R->cmd_in);
	fprintf(R->f, " -t %s -f md --row-limit %ld%s", name, to.row_limit,
	        which == 0 ? " --sort self_cuda_time_total" : "");
	if (R->o->window) {
		fputs(" --window ", R->f);
		esc(R->f, R->o->window);
	}
	if (R->o->step_a >= 0)
		fprintf(R->f, " --steps %ld-%ld", R->o->step_a, R->o->step_b);
	fputs("</code></p>\n", R->f);
	free(txt);
}

/* Horizontal bars: n rows of names and values (ns or bytes/s), largest first. */
typedef struct hbar {
	const char *name;
	double v;
	char tip[512];
} hbar;

static int cmp_hbar(const void *a, const void *b)
{
	const hbar *x = a, *y = b;
	return (x->v < y->v) - (x->v > y->v);
}

static void hbars(FILE *f, const char *label, hbar *b, size_t n, int bw)
{
	const int W = 1000, L = 380, row = 18, top = 6;
	double max = 0;
	for (size_t i = 0; i < n; i++)
		max = b[i].v > max ? b[i].v : max;
	svg_open(f, W, (int)n * row + top * 2, label);
	for (size_t i = 0; i < n; i++) {
		double w = max > 0 && b[i].v > 0 ? (W - L - 120) * b[i].v / max : 0; /* (v < 0: unknown, no bar) */
		int y = top + (int)i * row;
		char v[48];
		if (bw && b[i].v < 0)
			snprintf(v, sizeof v, "unknown");
		else if (bw)
			snprintf(v, sizeof v, "%.1f GB/s", b[i].v);
		else
			fmt_ns(v, sizeof v, b[i].v);
		fprintf(f, "<g><title>");
		esc(f, b[i].tip[0] ? b[i].tip : b[i].name);
		fprintf(f, "</title><text x=\"%d\" y=\"%d\" class=\"lbl\" text-anchor=\"end\">", L - 6, y + 13);
		esc_short(f, b[i].name, 58);
		fprintf(f, "</text><rect x=\"%d\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"%s\"/>"
		        "<text x=\"%.1f\" y=\"%d\" class=\"val\">%s</text></g>\n",
		        L, y + 2, w < 0.5 && b[i].v > 0 ? 0.5 : w, row - 4, palette[0], L + w + 4, y + 13, v);
	}
	fputs("</svg>\n", f);
}

/* A chart's value axis: four grid lines over the plot at (L, T), PW x PH,
 * up to max, labelled as times or bytes. */
static void y_axis(FILE *f, int L, int T, int PW, int PH, double max, int bytes)
{
	for (int g = 0; g <= 4; g++) {
		char t[48];
		if (bytes)
			fmt_bytes(t, sizeof t, max * g / 4);
		else
			fmt_ns(t, sizeof t, max * g / 4);
		int y = T + PH - PH * g / 4;
		fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" class=\"grid\"/><text x=\"%d\" y=\"%d\" "
		        "class=\"ax\" text-anchor=\"end\">%s</text>\n", L, y, L + PW, y, L - 4, y + 4, t);
	}
}

/* ---- the run ---- */

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

/* The distinct step numbers of the run, sorted. */
/* R->nums and R->ns: the step numbers of every rank, sorted and distinct
 * (none when out of memory). */
static void step_numbers(report *R)
{
	size_t n = 0;
	for (size_t i = 0; i < R->n; i++)
		n += tk_stats_step_count(R->s[i]);
	int64_t *v = malloc((n ? n : 1) * sizeof *v);
	R->nums = v;
	R->ns = 0;
	if (!v)
		return;
	size_t k = 0;
	for (size_t i = 0; i < R->n; i++)
		for (size_t j = 0; j < tk_stats_step_count(R->s[i]); j++)
			v[k++] = tk_stats_step_get(R->s[i], j)->num;
	qsort(v, k, sizeof *v, cmp_i64);
	size_t u = 0;
	for (size_t i = 0; i < k; i++)
		if (!u || v[u - 1] != v[i])
			v[u++] = v[i];
	R->ns = u;
}

/* The GPUs that ran work: the distinct processes of the GPU streams. */
static size_t gpus_of(const tk_stats *s)
{
	size_t n = 0;
	char seen[64][32];
	for (size_t k = 1; k < tk_stats_launch_count(s) && n < 64; k++) {
		const char *st = tk_stats_launch_get(s, k)->stream, *colon = strchr(st, ':');
		size_t len = colon ? (size_t)(colon - st) : strlen(st);
		if (len >= sizeof seen[0])
			continue;
		int dup = 0;
		for (size_t j = 0; j < n && !dup; j++)
			dup = strlen(seen[j]) == len && memcmp(seen[j], st, len) == 0;
		if (!dup) {
			memcpy(seen[n], st, len);
			seen[n++][len] = 0;
		}
	}
	return n;
}

static void sec_run(report *R)
{
	FILE *f = R->f;
	int64_t lo = INT64_MAX, hi = INT64_MIN, busy = 0, wall = 0;
	uint64_t events = 0, ops = 0, kernels = 0;
	size_t gpus = 0, step_rows = 0;
	for (size_t i = 0; i < R->n; i++) {
		const tk_stats_info *in = tk_stats_get_info(R->s[i]);
		events += in->events;
		ops += in->ops;
		if (in->events) {
			lo = in->ts_min < lo ? in->ts_min : lo;
			hi = in->ts_max > hi ? in->ts_max : hi;
		}
		gpus += gpus_of(R->s[i]);
		for (size_t k = 0; k < tk_stats_sum_count(R->s[i], TK_STATS_KERNEL); k++)
			kernels += tk_stats_sum_get(R->s[i], TK_STATS_KERNEL, k)->count;
		for (size_t k = 0; k < tk_stats_step_count(R->s[i]); k++, step_rows++) {
			busy += tk_stats_step_get(R->s[i], k)->busy;
			wall += tk_stats_step_get(R->s[i], k)->wall;
		}
	}
	size_t steps = R->ns;
	char span[48] = "-", avg[48] = "-";
	if (hi > lo)
		fmt_ns(span, sizeof span, (double)(hi - lo));
	if (step_rows)
		fmt_ns(avg, sizeof avg, (double)wall / (double)step_rows);
	fputs("<section id=\"run\"><h2>The run</h2>\n<p class=\"key\">", f);
	fprintf(f, "%zu %s, %zu GPU%s with work, %zu step%s, %s of trace, %llu events (%llu CPU ops, %llu "
	        "kernels)", R->n, R->n == 1 ? "trace" : "ranks", gpus, gpus == 1 ? "" : "s", steps, steps == 1 ? "" : "s",
	        span, (unsigned long long)events, (unsigned long long)ops, (unsigned long long)kernels);
	if (step_rows)
		fprintf(f, "; a step takes %s on average, the GPU busy %.1f%% of it", avg,
		        wall > 0 ? 100.0 * (double)busy / (double)wall : 0.0);
	fputs(".</p>\n<table class=\"tk\"><thead><tr><th>Rank</th><th class=\"n\">Events</th><th class=\"n\">GPUs</th>"
	      "<th class=\"n\">Steps</th><th class=\"n\">Trace time</th></tr></thead><tbody>\n", f);
	size_t shown = R->n > 64 ? 64 : R->n;
	for (size_t i = 0; i < shown; i++) {
		const tk_stats_info *in = tk_stats_get_info(R->s[i]);
		char t[48] = "-";
		if (in->events && in->ts_max > in->ts_min)
			fmt_ns(t, sizeof t, (double)(in->ts_max - in->ts_min));
		fputs("<tr><td>", f);
		esc(f, R->labels[i]);
		fprintf(f, "</td><td class=\"n\">%llu</td><td class=\"n\">%zu</td><td class=\"n\">%zu</td><td class=\"n\">%s</td></tr>\n",
		        (unsigned long long)in->events, gpus_of(R->s[i]), tk_stats_step_count(R->s[i]), t);
	}
	fputs("</tbody></table>\n", f);
	if (shown < R->n)
		fprintf(f, "<p class=\"note\">The first 64 of %zu ranks.</p>\n", R->n);
	if (R->t_n < R->n) {
		fputs("<p class=\"note\">The tables below are those of ", f);
		esc(f, R->labels[R->main_rank]);
		fprintf(f, ", the rank with the most kernel time of %zu; trace-stats prints every rank's.</p>\n", R->n);
	}
	fputs("</section>\n", f);
}

/* ---- step time ---- */

static void sec_steps(report *R)
{
	FILE *f = R->f;
	const int64_t *nums = R->nums;
	size_t ns = R->ns;
	if (!ns)
		return;
	/* wall[i * ns + k]: rank i's step nums[k], -1 when it has none */
	int64_t *wall = malloc(R->n * ns * sizeof *wall);
	if (!wall)
		return;
	int64_t max = 0, worst = -1;
	size_t worst_i = 0, worst_k = 0;
	for (size_t i = 0; i < R->n * ns; i++)
		wall[i] = -1;
	for (size_t i = 0; i < R->n; i++)
		for (size_t j = 0; j < tk_stats_step_count(R->s[i]); j++) {
			const tk_stats_step *st = tk_stats_step_get(R->s[i], j);
			const int64_t *p = bsearch(&st->num, nums, ns, sizeof *nums, cmp_i64);
			size_t k = (size_t)(p - nums);
			wall[i * ns + k] = st->wall;
			max = st->wall > max ? st->wall : max;
			if (st->wall > worst) {
				worst = st->wall;
				worst_i = i;
				worst_k = k;
			}
		}
	const int W = 1000, H = 300, L = 70, B = 36, T = 16, PW = W - L - 20, PH = H - B - T;
	fputs("<section id=\"steps\"><h2>Step time</h2>\n", f);
	fprintf(f, "<p>Wall time of each ProfilerStep%s; the slowest step is marked.</p>\n",
	        R->n > 16 ? ", per step the fastest and slowest rank (band) and the median rank (line)" : " per rank");
	svg_open(f, W, H, "step time per step and rank");
	y_axis(f, L, T, PW, PH, (double)max, 0);
	double dx = ns > 1 ? (double)PW / (double)(ns - 1) : 0;
#define SX(k) (L + (ns > 1 ? dx * (double)(k) : PW / 2.0))
#define SY(v) (T + PH - (max > 0 ? (double)PH * (double)(v) / (double)max : 0))
	size_t every = ns / 12 + 1;
	for (size_t k = 0; k < ns; k += every)
		fprintf(f, "<text x=\"%.1f\" y=\"%d\" class=\"ax\" text-anchor=\"middle\">%lld</text>\n", SX(k), T + PH + 16,
		        (long long)nums[k]);
	fprintf(f, "<text x=\"%d\" y=\"%d\" class=\"ax\" text-anchor=\"middle\">ProfilerStep</text>\n", L + PW / 2, H - 4);
	if (R->n <= 16) {
		for (size_t i = 0; i < R->n; i++) {
			const char *c = palette[i % N_PALETTE];
			fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\" points=\"", c);
			for (size_t k = 0; k < ns; k++)
				if (wall[i * ns + k] >= 0)
					fprintf(f, "%.1f,%.1f ", SX(k), SY(wall[i * ns + k]));
			fputs("\"/>\n", f);
			for (size_t k = 0; k < ns && ns <= 200; k++)
				if (wall[i * ns + k] >= 0) {
					char t[48];
					fmt_ns(t, sizeof t, (double)wall[i * ns + k]);
					fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"2.5\" fill=\"%s\"><title>", SX(k),
					        SY(wall[i * ns + k]), c);
					esc(f, R->labels[i]);
					fprintf(f, ", step %lld: %s</title></circle>\n", (long long)nums[k], t);
				}
		}
	} else {
		/* per step: min, median, max over the ranks that have it */
		int64_t *col = malloc(R->n * sizeof *col);
		double *mn = malloc(ns * sizeof *mn), *md = malloc(ns * sizeof *md), *mx = malloc(ns * sizeof *mx);
		if (col && mn && md && mx) {
			for (size_t k = 0; k < ns; k++) {
				size_t c = 0;
				for (size_t i = 0; i < R->n; i++)
					if (wall[i * ns + k] >= 0)
						col[c++] = wall[i * ns + k];
				qsort(col, c, sizeof *col, cmp_i64);
				mn[k] = c ? (double)col[0] : 0;
				mx[k] = c ? (double)col[c - 1] : 0;
				md[k] = c ? (double)col[(c - 1) / 2] : 0;
			}
			fputs("<polygon class=\"band\" points=\"", f);
			for (size_t k = 0; k < ns; k++)
				fprintf(f, "%.1f,%.1f ", SX(k), SY(mx[k]));
			for (size_t k = ns; k-- > 0;)
				fprintf(f, "%.1f,%.1f ", SX(k), SY(mn[k]));
			fprintf(f, "\"/>\n<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\" points=\"", palette[0]);
			for (size_t k = 0; k < ns; k++)
				fprintf(f, "%.1f,%.1f ", SX(k), SY(md[k]));
			fputs("\"/>\n", f);
		}
		free(col);
		free(mn);
		free(md);
		free(mx);
	}
	char t[48];
	fmt_ns(t, sizeof t, (double)worst);
	fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"5\" class=\"worst\"><title>slowest: ", SX(worst_k), SY(worst));
	esc(f, R->labels[worst_i]);
	fprintf(f, ", step %lld, %s</title></circle>\n<text x=\"%.1f\" y=\"%.1f\" class=\"worstl\" text-anchor=\"%s\">"
	        "slowest: step %lld", (long long)nums[worst_k], t, SX(worst_k) + (worst_k + 1 < ns ? 8 : -8),
	        SY(worst) + 4 < T + 10 ? T + 10 : SY(worst) + 4, worst_k + 1 < ns ? "start" : "end",
	        (long long)nums[worst_k]);
	if (R->n > 1) {
		fputs(", ", f);
		esc(f, R->labels[worst_i]);
	}
	fprintf(f, ", %s</text>\n</svg>\n", t);
#undef SX
#undef SY
	table_of(R, 4, "steps");
	fputs("</section>\n", f);
	free(wall);
}

/* ---- GPU time per step ---- */

enum { G_COMPUTE, G_COMM, G_OTHER, G_HOST, G_KWAIT, G_IDLE, N_G };
static const char *const g_names[N_G] = {"compute", "communication not under compute", "memory ops and other busy",
                                         "idle: host wait", "idle: kernel wait", "idle: other"};
static const char *const g_colors[N_G] = {"#4e79a7", "#e15759", "#f28e2b", "#bab0ac", "#76b7b2", "#dddddd"};

static void split_step(const tk_stats_step *st, double *v)
{
	double exposed = (double)(st->comm - st->overlap);
	v[G_COMPUTE] = (double)st->compute;
	v[G_COMM] = exposed > 0 ? exposed : 0;
	double other = (double)st->busy - v[G_COMPUTE] - v[G_COMM];
	v[G_OTHER] = other > 0 ? other : 0;
	v[G_HOST] = (double)st->host_wait;
	v[G_KWAIT] = (double)st->kernel_wait;
	v[G_IDLE] = (double)st->other_idle;
}

/* Stacked bars: n bars of N_G values each, labels under them. */
static void stacked(FILE *f, const char *label, double (*v)[N_G], char (*lab)[40], size_t n)
{
	const int W = 1000, H = 300, L = 70, B = 40, T = 28, PW = W - L - 20, PH = H - B - T;
	double max = 0;
	for (size_t i = 0; i < n; i++) {
		double s = 0;
		for (int g = 0; g < N_G; g++)
			s += v[i][g];
		max = s > max ? s : max;
	}
	svg_open(f, W, H, label);
	for (int g = 0, x = L; g < N_G; g++) {
		fprintf(f, "<rect x=\"%d\" y=\"4\" width=\"10\" height=\"10\" fill=\"%s\"/><text x=\"%d\" y=\"13\" "
		        "class=\"ax\">%s</text>\n", x, g_colors[g], x + 14, g_names[g]);
		x += 14 + (int)strlen(g_names[g]) * 6 + 18; /* about 6 px a character at 11 px */
	}
	y_axis(f, L, T, PW, PH, max, 0);
	double bw = n ? (double)PW / (double)n : 0, gap = bw > 6 ? bw * 0.15 : 0;
	size_t every = n / 16 + 1;
	for (size_t i = 0; i < n; i++) {
		double x = L + bw * (double)i + gap / 2, y = T + PH;
		fputs("<g><title>", f);
		esc(f, lab[i]);
		for (int g = 0; g < N_G; g++) {
			char t[48];
			fmt_ns(t, sizeof t, v[i][g]);
			fprintf(f, "&#10;%s: %s", g_names[g], t);
		}
		fputs("</title>", f);
		for (int g = 0; g < N_G; g++) {
			double h = max > 0 ? PH * v[i][g] / max : 0;
			if (h <= 0)
				continue;
			y -= h;
			fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\"/>", x, y,
			        bw - gap > 0.5 ? bw - gap : 0.5, h, g_colors[g]);
		}
		fputs("</g>\n", f);
		if (i % every == 0) {
			fprintf(f, "<text x=\"%.1f\" y=\"%d\" class=\"ax\" text-anchor=\"middle\">", x + (bw - gap) / 2, T + PH + 14);
			esc(f, lab[i]);
			fputs("</text>\n", f);
		}
	}
	fputs("</svg>\n", f);
}

static void sec_gpu(report *R)
{
	FILE *f = R->f;
	const int64_t *nums = R->nums;
	size_t ns = R->ns;
	if (!ns)
		return;
	/* per step, the mean over the ranks that have it */
	size_t nb = ns > 200 ? 200 : ns;
	double(*v)[N_G] = calloc(nb, sizeof *v);
	char(*lab)[40] = calloc(nb, sizeof *lab);
	size_t *cnt = calloc(nb, sizeof *cnt);
	/* per rank (in at most 128 groups of neighbours), the mean over its steps */
	size_t per = (R->n + 127) / 128, ng = (R->n + per - 1) / per;
	double(*rv)[N_G] = calloc(ng, sizeof *rv);
	char(*rlab)[40] = calloc(ng, sizeof *rlab);
	size_t *rcnt = calloc(ng, sizeof *rcnt);
	if (v && lab && cnt && rv && rlab && rcnt) {
		for (size_t i = 0; i < R->n; i++)
			for (size_t j = 0; j < tk_stats_step_count(R->s[i]); j++) {
				const tk_stats_step *st = tk_stats_step_get(R->s[i], j);
				const int64_t *p = bsearch(&st->num, nums, ns, sizeof *nums, cmp_i64);
				size_t k = (size_t)(p - nums);
				double x[N_G];
				split_step(st, x);
				for (int g = 0; g < N_G; g++) {
					if (k < nb)
						v[k][g] += x[g];
					rv[i / per][g] += x[g];
				}
				if (k < nb)
					cnt[k]++;
				rcnt[i / per]++;
			}
		for (size_t k = 0; k < nb; k++) {
			for (int g = 0; g < N_G && cnt[k]; g++)
				v[k][g] /= (double)cnt[k];
			snprintf(lab[k], sizeof lab[k], "%lld", (long long)nums[k]);
		}
		for (size_t r = 0; r < ng; r++) {
			for (int g = 0; g < N_G && rcnt[r]; g++)
				rv[r][g] /= (double)rcnt[r];
			if (per == 1)
				snprintf(rlab[r], sizeof rlab[r], "%.38s", R->labels[r]);
			else
				snprintf(rlab[r], sizeof rlab[r], "%zu-%zu", r * per, (r + 1) * per > R->n ? R->n - 1 : (r + 1) * per - 1);
		}
		fputs("<section id=\"gpu\"><h2>GPU time per step</h2>\n<p>What the GPUs did during each ProfilerStep, "
		      "GPU work counted in the step that launched it (docs/steps.md): compute kernels, communication not "
		      "hidden under compute, memory copies and sets, and idle time by cause", f);
		fputs(R->n > 1 ? ", the mean over the ranks per step, then per rank the mean over its steps.</p>\n"
		               : ".</p>\n", f);
		stacked(f, "GPU time per step", v, lab, nb);
		if (nb < ns)
			fprintf(f, "<p class=\"note\">The first 200 of %zu steps.</p>\n", ns);
		if (R->n > 1) {
			fprintf(f, "<h3>Per rank%s</h3>\n", per > 1 ? " (groups of neighbouring ranks)" : "");
			stacked(f, "GPU time per step, per rank", rv, rlab, ng);
		}
		fputs("<h3>Launch delays</h3>\n<p>From the end of each launch call to its op's start on the GPU, per GPU "
		      "stream.</p>\n", f);
		table_of(R, 5, "launch");
		fputs("</section>\n", f);
	}
	free(v);
	free(lab);
	free(cnt);
	free(rv);
	free(rlab);
	free(rcnt);
}

/* ---- top operators and kernels ---- */

/* The rows of every rank summed by name (rows keyed by shapes too fold into it). */
typedef struct named {
	const char *name;
	double a, b, c; /* sums: self device, self CPU, count (ops); total, count, - (kernels) */
} named;

static int cmp_named_name(const void *x, const void *y)
{
	return strcmp(((const named *)x)->name, ((const named *)y)->name);
}

/* rows sorted by name, equal names merged: the count */
static size_t merge_named(named *v, size_t n)
{
	qsort(v, n, sizeof *v, cmp_named_name);
	size_t u = 0;
	for (size_t i = 0; i < n; i++) {
		if (u && strcmp(v[u - 1].name, v[i].name) == 0) {
			v[u - 1].a += v[i].a;
			v[u - 1].b += v[i].b;
			v[u - 1].c += v[i].c;
		} else {
			v[u++] = v[i];
		}
	}
	return u;
}

static void sec_ops(report *R)
{
	FILE *f = R->f;
	size_t n = 0;
	for (size_t i = 0; i < R->n; i++)
		n += tk_stats_op_count(R->s[i]);
	if (!n)
		return;
	named *v = malloc(n * sizeof *v);
	if (!v)
		return;
	size_t k = 0;
	double dev = 0;
	for (size_t i = 0; i < R->n; i++)
		for (size_t j = 0; j < tk_stats_op_count(R->s[i]); j++) {
			const tk_stats_op *op = tk_stats_op_get(R->s[i], j);
			if (op->is_device)
				continue;
			v[k++] = (named){op->name, (double)op->self_dev, (double)op->self_cpu, (double)op->count};
			dev += (double)op->self_dev;
		}
	k = merge_named(v, k);
	/* by self GPU time when the ops launched any, else by self CPU time */
	for (size_t i = 0; i < k; i++)
		v[i].c = dev > 0 ? v[i].a : v[i].b;
	size_t nb = 0;
	for (size_t i = 0; i < k; i++)
		if (v[i].c > 0) {
			named t = v[nb];
			v[nb++] = v[i];
			v[i] = t;
		}
	hbar *all = calloc(nb ? nb : 1, sizeof *all);
	for (size_t i = 0; all && i < nb; i++) {
		all[i].name = v[i].name;
		all[i].v = v[i].c;
		char a[48], c[48];
		fmt_ns(a, sizeof a, v[i].a);
		fmt_ns(c, sizeof c, v[i].b);
		snprintf(all[i].tip, sizeof all[i].tip, "%.180s: self CUDA %s, self CPU %s", v[i].name, a, c);
	}
	if (all)
		qsort(all, nb, sizeof *all, cmp_hbar);
	size_t shown = nb < (size_t)R->o->row_limit ? nb : (size_t)R->o->row_limit;
	fprintf(f, "<section id=\"ops\"><h2>Top operators</h2>\n<p>The %zu operators with the most self %s time%s.</p>\n",
	        shown, dev > 0 ? "GPU (CUDA)" : "CPU", R->n > 1 ? ", all ranks together" : "");
	if (all && shown)
		hbars(f, "top operators", all, shown, 0);
	table_of(R, 0, "ops");
	fputs("</section>\n", f);
	free(all);
	free(v);
}

static void sec_kernels(report *R)
{
	FILE *f = R->f;
	size_t n = 0;
	for (size_t i = 0; i < R->n; i++)
		n += tk_stats_sum_count(R->s[i], TK_STATS_KERNEL);
	if (!n)
		return;
	named *v = malloc(n * sizeof *v);
	hbar *b = calloc(n, sizeof *b);
	if (!v || !b) {
		free(v);
		free(b);
		return;
	}
	size_t k = 0;
	for (size_t i = 0; i < R->n; i++)
		for (size_t j = 0; j < tk_stats_sum_count(R->s[i], TK_STATS_KERNEL); j++) {
			const tk_stats_sum *r = tk_stats_sum_get(R->s[i], TK_STATS_KERNEL, j);
			v[k++] = (named){r->name, (double)r->total, (double)r->count, 0};
		}
	k = merge_named(v, k);
	for (size_t i = 0; i < k; i++) {
		b[i].name = v[i].name;
		b[i].v = v[i].a;
		char t[48], a[48];
		fmt_ns(t, sizeof t, v[i].a);
		fmt_ns(a, sizeof a, v[i].b > 0 ? v[i].a / v[i].b : 0);
		snprintf(b[i].tip, sizeof b[i].tip, "%.150s: %s in %.0f instances, %s each", v[i].name, t, v[i].b, a);
	}
	qsort(b, k, sizeof *b, cmp_hbar);
	size_t shown = k < (size_t)R->o->row_limit ? k : (size_t)R->o->row_limit;
	fprintf(f, "<section id=\"kernels\"><h2>Top kernels</h2>\n<p>The %zu kernels with the most GPU time%s.</p>\n",
	        shown, R->n > 1 ? ", all ranks together" : "");
	hbars(f, "top kernels", b, shown, 0);
	table_of(R, TK_STATS_KERNEL, "kernels");
	fputs("</section>\n", f);
	free(v);
	free(b);
}

/* ---- collectives ---- */

static void sec_coll(report *R)
{
	FILE *f = R->f;
	/* the kinds, once each (kind, group) */
	typedef struct kind {
		const char *kind, *group;
		double time, bytes, count, busbw_w, sized; /* busbw weighted by the time of sized kernels */
	} kind;
	size_t nk = 0, cap = 0;
	kind *ks = NULL;
	for (size_t i = 0; i < R->n; i++)
		for (size_t j = 0; j < tk_stats_collective_count(R->s[i]); j++) {
			const tk_stats_collective *c = tk_stats_collective_get(R->s[i], j);
			size_t k = 0;
			while (k < nk && (strcmp(ks[k].kind, c->kind) || strcmp(ks[k].group, c->group)))
				k++;
			if (k == nk) {
				if (nk == cap) {
					cap = cap ? cap * 2 : 16;
					kind *nks = realloc(ks, cap * sizeof *nks);
					if (!nks) {
						free(ks);
						return;
					}
					ks = nks;
				}
				ks[nk++] = (kind){c->kind, c->group, 0, 0, 0, 0, 0};
			}
			ks[k].time += (double)c->time;
			ks[k].bytes += (double)c->bytes;
			ks[k].count += (double)c->count;
			if (c->bytes > 0 && c->ranks > 0) { /* no message size or group size recorded: no bus bandwidth */
				ks[k].busbw_w += c->busbw * (double)c->time;
				ks[k].sized += (double)c->time;
			}
		}
	if (!nk) {
		free(ks);
		return;
	}
	int any_sized = 0;
	hbar *bt = calloc(nk, sizeof *bt), *bb = calloc(nk, sizeof *bb);
	char(*names)[160] = calloc(nk, sizeof *names);
	if (!bt || !bb || !names)
		goto out;
	for (size_t k = 0; k < nk; k++) {
		snprintf(names[k], sizeof names[k], "%.100s%s%.50s", ks[k].kind, ks[k].group[0] ? " (" : "", ks[k].group);
		if (ks[k].group[0])
			strcat(names[k], ")");
		bt[k].name = bb[k].name = names[k];
		bt[k].v = ks[k].time;
		bb[k].v = ks[k].sized > 0 ? ks[k].busbw_w / ks[k].sized : -1;
		any_sized |= ks[k].sized > 0;
		char t[48], by[48];
		fmt_ns(t, sizeof t, ks[k].time);
		if (ks[k].bytes > 0)
			fmt_bytes(by, sizeof by, ks[k].bytes);
		else
			snprintf(by, sizeof by, "no message sizes recorded");
		snprintf(bt[k].tip, sizeof bt[k].tip, "%s: %.0f kernels, %s, %s", names[k], ks[k].count, t, by);
		if (bb[k].v >= 0)
			snprintf(bb[k].tip, sizeof bb[k].tip, "%s: bus bandwidth %.2f GB/s (time-weighted mean)", names[k],
			         bb[k].v);
		else
			snprintf(bb[k].tip, sizeof bb[k].tip, "%s: no bus bandwidth (the trace records no message sizes)",
			         names[k]);
	}
	qsort(bt, nk, sizeof *bt, cmp_hbar);
	qsort(bb, nk, sizeof *bb, cmp_hbar);
	size_t shown = nk < (size_t)R->o->row_limit ? nk : (size_t)R->o->row_limit;
	fputs("<section id=\"collectives\"><h2>Collectives</h2>\n<p>NCCL kernel time per kind and process group, "
	      "and bus bandwidth by the nccl-tests formulas (docs/steps.md).</p>\n<h3>Time</h3>\n", f);
	hbars(f, "collective time per kind", bt, shown, 0);
	fputs("<h3>Bus bandwidth</h3>\n", f);
	if (any_sized)
		hbars(f, "bus bandwidth per kind", bb, shown, 1);
	else
		fputs("<p class=\"note\">None: the traces record no message sizes (NCCL's In msg nelems), so no bandwidth "
		      "can be computed.</p>\n", f);
	if (R->n > 1) {
		/* the straggler view: ranks (in at most 64 groups) x kinds, by how
		 * late each starts the k-th collective of the kind on average */
		size_t per = (R->n + 63) / 64, ng = (R->n + per - 1) / per, nc = nk < 24 ? nk : 24;
		double *late = calloc(ng * nc, sizeof *late), *lastf = calloc(ng * nc, sizeof *lastf), max = 0;
		tk_stats_straggler *st = calloc(R->n, sizeof *st);
		if (late && lastf && st) {
			for (size_t k = 0; k < nc; k++) {
				uint64_t inst;
				int64_t skew;
				if (tk_stats_stragglers_of(R->s, R->n, ks[k].kind, ks[k].group, st, &inst, &skew))
					continue;
				for (size_t r = 0; r < ng; r++) {
					double lt = 0, in = 0, ls = 0;
					for (size_t i = r * per; i < (r + 1) * per && i < R->n; i++) {
						lt += (double)st[i].late_total;
						in += (double)st[i].instances;
						ls += (double)st[i].last;
					}
					late[r * nc + k] = in > 0 ? lt / in : 0;
					lastf[r * nc + k] = in > 0 ? ls / in : 0;
					max = late[r * nc + k] > max ? late[r * nc + k] : max;
				}
			}
			const int L = 120, T = 150, cw = nc ? (860 / (int)nc < 60 ? 860 / (int)nc : 60) : 60, ch = ng > 32 ? 8 : 18;
			fputs("<h3>Stragglers</h3>\n<p>How late each rank starts the collectives of a kind, on average, after "
			      "the first rank to start the same one (the k-th of the kind and group on every rank); darker is "
			      "later.</p>\n", f);
			svg_open(f, L + cw * (int)nc + 20, T + ch * (int)ng + 10, "straggler heat map");
			for (size_t k = 0; k < nc; k++) {
				fprintf(f, "<text transform=\"translate(%d,%d) rotate(-45)\" class=\"ax\">", L + cw * (int)k + cw / 2,
				        T - 6);
				esc_short(f, names[k], 24);
				fputs("</text>\n", f);
			}
			for (size_t r = 0; r < ng; r++) {
				char lab[48];
				if (per == 1)
					snprintf(lab, sizeof lab, "%.40s", R->labels[r]);
				else
					snprintf(lab, sizeof lab, "ranks %zu-%zu", r * per, (r + 1) * per > R->n ? R->n - 1 : (r + 1) * per - 1);
				if (ch >= 12 || r % 4 == 0) {
					fprintf(f, "<text x=\"%d\" y=\"%d\" class=\"ax\" text-anchor=\"end\">", L - 4,
					        T + ch * (int)r + ch - 2);
					esc(f, lab);
					fputs("</text>\n", f);
				}
				for (size_t k = 0; k < nc; k++) {
					double x = max > 0 ? late[r * nc + k] / max : 0;
					int c = 255 - (int)(x * 200);
					char t[48];
					fmt_ns(t, sizeof t, late[r * nc + k]);
					fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"rgb(255,%d,%d)\"><title>",
					        L + cw * (int)k, T + ch * (int)r, cw - 1, ch - 1, c, c);
					esc(f, lab);
					fputs(", ", f);
					esc(f, names[k]);
					fprintf(f, ": late by %s on average, last in %.0f%% of them</title></rect>\n", t,
					        100 * lastf[r * nc + k]);
				}
			}
			fputs("</svg>\n", f);
		}
		free(late);
		free(lastf);
		free(st);
	}
	table_of(R, 7, "collectives");
	fputs("</section>\n", f);
out:
	free(bt);
	free(bb);
	free(names);
	free(ks);
}

/* ---- memory ---- */

static void sec_memory(report *R)
{
	FILE *f = R->f;
	/* the series: (rank, device), the 8 with the highest peaks */
	typedef struct series {
		size_t rank, row;
		int64_t peak;
	} series;
	size_t n = 0;
	for (size_t i = 0; i < R->n; i++)
		n += tk_stats_memory_count(R->s[i]);
	if (!n)
		return;
	series *sv = malloc(n * sizeof *sv);
	if (!sv)
		return;
	size_t k = 0;
	int64_t t0 = INT64_MAX, t1 = INT64_MIN, top = 0;
	for (size_t i = 0; i < R->n; i++) {
		for (size_t j = 0; j < tk_stats_memory_count(R->s[i]); j++)
			sv[k++] = (series){i, j, tk_stats_memory_get(R->s[i], j)->peak_alloc};
		for (size_t p = 0; p < tk_stats_memory_points(R->s[i]); p++) {
			tk_stats_mem_point pt;
			if (tk_stats_memory_point(R->s[i], p, &pt))
				continue;
			t0 = pt.ts < t0 ? pt.ts : t0;
			t1 = pt.ts > t1 ? pt.ts : t1;
		}
	}
	for (size_t a = 1; a < k; a++) /* by peak, highest first (few series) */
		for (size_t b = a; b > 0 && sv[b].peak > sv[b - 1].peak; b--) {
			series t = sv[b];
			sv[b] = sv[b - 1];
			sv[b - 1] = t;
		}
	size_t ns = k < 8 ? k : 8;
	for (size_t i = 0; i < ns; i++)
		top = sv[i].peak > top ? sv[i].peak : top;
	const int W = 1000, H = 320, L = 80, T = 30, B = 36, PW = W - L - 30, PH = H - T - B;
	fputs("<section id=\"memory\"><h2>Memory</h2>\n<p>Allocated memory over time per device, from the [memory] "
	      "events of profile_memory=True, with each peak and the operator running at it (docs/steps.md).</p>\n", f);
	if (t1 > t0 && top > 0) {
		svg_open(f, W, H, "memory over time per device");
		y_axis(f, L, T, PW, PH, (double)top, 1);
		for (int g = 0; g <= 4; g++) {
			char t[48];
			fmt_ns(t, sizeof t, (double)(t1 - t0) * g / 4);
			fprintf(f, "<text x=\"%d\" y=\"%d\" class=\"ax\" text-anchor=\"middle\">+%s</text>\n", L + PW * g / 4,
			        T + PH + 16, t);
		}
		for (size_t si = 0; si < ns; si++) {
			const tk_stats *s = R->s[sv[si].rank];
			const tk_stats_memory *m = tk_stats_memory_get(s, sv[si].row);
			const char *c = palette[si % N_PALETTE];
			/* down-sampled: per pixel column the lowest and highest value, in order */
			fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.2\" points=\"", c);
			long col = -1;
			int64_t lo = 0, hi = 0, last = 0;
			for (size_t p = 0; p <= tk_stats_memory_points(s); p++) {
				tk_stats_mem_point pt;
				int have = p < tk_stats_memory_points(s) && tk_stats_memory_point(s, p, &pt) == 0 &&
				           strcmp(pt.device, m->device) == 0;
				long x = have ? (long)((double)PW * (double)(pt.ts - t0) / (double)(t1 - t0)) : -2;
				if (x != col && col >= 0) {
					fprintf(f, "%ld,%.1f %ld,%.1f ", L + col, T + PH - (double)PH * (double)lo / (double)top,
					        L + col, T + PH - (double)PH * (double)hi / (double)top);
					if (have) /* the step to the next column, from the last value */
						fprintf(f, "%ld,%.1f ", L + col, T + PH - (double)PH * (double)last / (double)top);
				}
				if (!have) {
					if (p < tk_stats_memory_points(s))
						continue;
					break;
				}
				if (x != col) {
					col = x;
					lo = hi = pt.allocated;
				}
				lo = pt.allocated < lo ? pt.allocated : lo;
				hi = pt.allocated > hi ? pt.allocated : hi;
				last = pt.allocated;
			}
			fputs("\"/>\n", f);
			double px = L + (double)PW * (double)(m->peak_ts - t0) / (double)(t1 - t0);
			double py = T + PH - (double)PH * (double)m->peak_alloc / (double)top;
			char b[48];
			fmt_bytes(b, sizeof b, (double)m->peak_alloc);
			fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4\" fill=\"%s\" class=\"peak\"><title>peak of ", px, py, c);
			esc(f, R->labels[sv[si].rank]);
			fputc(' ', f);
			esc(f, m->device);
			fprintf(f, ": %s%s", b, m->op_at_peak[0] ? " in " : "");
			esc(f, m->op_at_peak);
			fprintf(f, "</title></circle>\n<text x=\"%d\" y=\"%d\" class=\"ax\" fill=\"%s\">", L + 10 + (int)si * 110,
			        T - 10, c);
			if (R->n > 1) {
				esc_short(f, R->labels[sv[si].rank], 10);
				fputc(' ', f);
			}
			esc_short(f, m->device, 12);
			fputs("</text>\n", f);
			if (si == 0 && m->op_at_peak[0]) {
				fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" class=\"worstl\" text-anchor=\"%s\">peak %s: ", px + (px < L + PW * 0.7 ? 8 : -8),
				        py < T + 12 ? T + 12 : py, px < L + PW * 0.7 ? "start" : "end", b);
				esc_short(f, m->op_at_peak, 50);
				fputs("</text>\n", f);
			}
		}
		fputs("</svg>\n", f);
		if (ns < k)
			fprintf(f, "<p class=\"note\">The 8 devices with the highest peaks of %zu.</p>\n", k);
	}
	table_of(R, 6, "memory");
	fputs("</section>\n", f);
	free(sv);
}

/* ---- the flame graph ---- */

/* The call paths of every rank as one tree (tk_stats_frames_merge), with
 * each path's callees linked in name order, as flamegraph.pl draws them. */
typedef struct ftree {
	tk_stats_frame *v;
	size_t n;
	size_t *first_child, *next; /* SIZE_MAX: none; first_child[n]: the first outermost path */
} ftree;

static uint64_t name_hash(const char *name)
{
	uint64_t h = 1469598103934665603ull;
	for (const unsigned char *p = (const unsigned char *)name; *p; p++)
		h = (h ^ *p) * 1099511628211ull;
	return h;
}

static const int FL_W = 1100, FL_ROW = 17, FL_DEPTH = 48;
#define FL_MAX_NODES 2500

static void flame_color(const char *name, char *b, size_t cap)
{
	uint64_t h = name_hash(name);
	int py = strstr(name, ".py(") != NULL;
	int hue = py ? 190 + (int)(h % 40) : 10 + (int)(h % 40);
	snprintf(b, cap, "hsl(%d,%d%%,%d%%)", hue, 60 + (int)(h >> 8) % 25, 62 + (int)(h >> 16) % 14);
}

static void flame_node(FILE *f, const ftree *t, size_t i, double x, int depth, double scale, double thr,
                       size_t *drawn)
{
	const tk_stats_frame *nd = &t->v[i];
	double total = (double)nd->total_ns, w = total * scale;
	if (w < 1 || total < thr || depth >= FL_DEPTH || *drawn >= FL_MAX_NODES)
		return;
	(*drawn)++;
	char c[48], tt[48];
	flame_color(nd->name, c, sizeof c);
	fmt_ns(tt, sizeof tt, total);
	double y = 20 + depth * FL_ROW;
	fputs("<g><title>", f);
	esc_short(f, nd->name, 200);
	fprintf(f, ": %s (%.2f%%)</title><rect x=\"%.1f\" y=\"%.0f\" width=\"%.1f\" height=\"%d\" fill=\"%s\"/>", tt,
	        100.0 * total * scale / FL_W, x, y, w - 0.3, FL_ROW - 1, c);
	if (w > 40) {
		fprintf(f, "<text x=\"%.1f\" y=\"%.0f\" class=\"fl\">", x + 3, y + 12);
		esc_short(f, nd->name, (size_t)(w / 7));
		fputs("</text>", f);
	}
	fputs("</g>\n", f);
	for (size_t ch = t->first_child[i]; ch != SIZE_MAX; ch = t->next[ch]) {
		flame_node(f, t, ch, x, depth + 1, scale, thr, drawn);
		x += (double)t->v[ch].total_ns * scale;
	}
}

static int cmp_dbl_desc(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x < y) - (x > y);
}

/* paths by caller (the outermost last), then by name */
static int cmp_fchild(const void *a, const void *b, void *ctx)
{
	const tk_stats_frame *v = ctx, *x = &v[*(const size_t *)a], *y = &v[*(const size_t *)b];
	if (x->parent != y->parent)
		return (x->parent > y->parent) - (x->parent < y->parent);
	return strcmp(x->name, y->name);
}

/* t->first_child and t->next: 0, or -1 when out of memory. */
static int link_children(ftree *t)
{
	size_t n = t->n, *ord = malloc((n ? n : 1) * sizeof *ord);
	t->first_child = malloc((n + 1) * sizeof *t->first_child);
	t->next = malloc((n ? n : 1) * sizeof *t->next);
	if (!ord || !t->first_child || !t->next) {
		free(ord);
		return -1;
	}
	for (size_t i = 0; i < n; i++)
		ord[i] = i;
	qsort_r(ord, n, sizeof *ord, cmp_fchild, t->v);
	for (size_t i = 0; i <= n; i++)
		t->first_child[i] = SIZE_MAX;
	for (size_t k = 0; k < n; k++) {
		size_t p = t->v[ord[k]].parent;
		if (!k || t->v[ord[k - 1]].parent != p)
			t->first_child[p == SIZE_MAX ? n : p] = ord[k];
		t->next[ord[k]] = k + 1 < n && t->v[ord[k + 1]].parent == p ? ord[k + 1] : SIZE_MAX;
	}
	free(ord);
	return 0;
}

static void sec_flame(report *R)
{
	FILE *f = R->f;
	ftree t = {0};
	double all = 0;
	if (tk_stats_frames_merge(R->s, R->n, &t.v, &t.n) == 0)
		for (size_t i = 0; i < t.n; i++)
			if (t.v[i].parent == SIZE_MAX)
				all += (double)t.v[i].total_ns;
	size_t *dep = NULL;
	if (all > 0 && !link_children(&t) && (dep = malloc(t.n * sizeof *dep)) != NULL) {
		fputs("<section id=\"flame\"><h2>CPU time: flame graph</h2>\n<p>Where the CPU time went: each "
		      "bar is a call path (operators, runtime calls, and the Python frames of with_stack traces, "
		      "nested by time on their thread), as wide as its time; callers above what they call. "
		      "Hover for the time. ", f);
		char tt[48];
		fmt_ns(tt, sizeof tt, all);
		fprintf(f, "%s in all%s. <code>--folded FILE</code> writes the same paths for flamegraph.pl and "
		        "speedscope.</p>\n", tt, R->n > 1 ? ", every rank's together" : "");
		/* rows: a path's callers, at most FL_DEPTH (callers come first) */
		size_t depth = 0;
		for (size_t i = 0; i < t.n; i++) {
			size_t p = t.v[i].parent;
			dep[i] = p == SIZE_MAX ? 0 : dep[p] < (size_t)FL_DEPTH ? dep[p] + 1 : (size_t)FL_DEPTH;
			depth = dep[i] + 1 > depth ? dep[i] + 1 : depth;
		}
		svg_open(f, FL_W, 24 + (int)depth * FL_ROW, "flame graph of CPU time");
		double x = 0, scale = FL_W / all, thr = 0;
		/* the widest FL_MAX_NODES: a caller is never narrower than what it calls */
		double *tot = t.n > FL_MAX_NODES ? malloc(t.n * sizeof *tot) : NULL;
		if (tot) {
			for (size_t i = 0; i < t.n; i++)
				tot[i] = (double)t.v[i].total_ns;
			qsort(tot, t.n, sizeof *tot, cmp_dbl_desc);
			thr = tot[FL_MAX_NODES - 1];
			free(tot);
		}
		size_t drawn = 0;
		for (size_t r = t.first_child[t.n]; r != SIZE_MAX; r = t.next[r]) {
			flame_node(f, &t, r, x, 0, scale, thr, &drawn);
			x += (double)t.v[r].total_ns * scale;
		}
		fputs("</svg>\n", f);
		if (drawn < t.n)
			fprintf(f, "<p class=\"note\">%zu of %zu paths drawn, the widest (at least a pixel); the "
			        "folded stacks hold them all.</p>\n", drawn, t.n);
		fputs("</section>\n", f);
	}
	free(dep);
	free(t.v);
	free(t.first_child);
	free(t.next);
}

/* ---- the page ---- */

static const char css[] =
    "body{font:14px/1.45 system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;margin:0 auto;max-width:1140px;"
    "padding:0 16px 40px;color:#222;background:#fff}"
    "h1{font-size:22px;margin:18px 0 4px}h2{font-size:18px;margin:28px 0 6px;border-bottom:1px solid #ddd}"
    "h3{font-size:15px;margin:16px 0 4px}nav a{margin-right:12px}p.sub,p.note,p.cmd{color:#555;font-size:12px}"
    "p.key{font-size:15px}svg{display:block;margin:6px 0;max-width:100%;height:auto}"
    "svg text{font:11px system-ui,sans-serif;fill:#333}svg text.lbl{font-size:11px}svg text.val{fill:#555}"
    "svg text.fl{font-size:11px;fill:#111;pointer-events:none}svg text.worstl{fill:#c00;font-weight:600}"
    "line.grid{stroke:#e5e5e5}polygon.band{fill:#4e79a7;fill-opacity:.18}circle.worst{fill:none;stroke:#c00;"
    "stroke-width:2}div.tbl{overflow-x:auto}table.tk{border-collapse:collapse;font-size:12px;margin:6px 0}"
    "table.tk th,table.tk td{border-bottom:1px solid #eee;padding:2px 8px;text-align:left;white-space:nowrap}"
    "table.tk .n{text-align:right;font-variant-numeric:tabular-nums}table.tk thead th{border-bottom:2px solid #ccc}"
    "p.foot{font-size:12px;margin:2px 0;color:#444}code{font-size:12px;background:#f5f5f5;padding:1px 4px}"
    "div.said{border-left:4px solid #c60;background:#fff7ef;padding:4px 12px;margin:8px 0;font-size:13px}"
    "div.said ul{margin:4px 0;padding-left:18px}";

static void write_page(report *R)
{
	FILE *f = R->f;
	const char *title = R->o->title, *slash = strrchr(R->o->in[0], '/');
	char deft[320];
	if (!title) {
		snprintf(deft, sizeof deft, "%.250s%s", slash && slash[1] ? slash + 1 : R->o->in[0],
		         R->o->n_in > 1 ? " and more" : "");
		title = deft;
	}
	fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<meta name=\"viewport\" "
	      "content=\"width=device-width, initial-scale=1\">\n<meta name=\"generator\" content=\"tracekit ", f);
	esc(f, tk_version());
	fputs("\">\n<title>", f);
	esc(f, title);
	fprintf(f, " - trace report</title>\n<style>%s</style>\n</head>\n<body>\n<h1>", css);
	esc(f, title);
	fputs("</h1>\n<p class=\"sub\">", f);
	for (int i = 0; i < R->o->n_in && i < 8; i++) {
		if (i)
			fputs(", ", f);
		esc(f, R->o->in[i]);
	}
	if (R->o->n_in > 8)
		fprintf(f, " and %d more", R->o->n_in - 8);
	fputs("</p>\n", f);
	/* what was said while reading (a cut input, one that failed) goes with
	 * the page, which is read far from the terminal */
	int error;
	const char *msg;
	size_t n_said = 0;
	for (; (msg = cli_said(n_said, &error)); n_said++) {
		fputs(n_said ? "<li>" : "<div class=\"said\"><b>While reading the traces:</b><ul><li>", f);
		fputs(error ? "error: " : "warning: ", f);
		esc(f, msg);
		fputs("</li>\n", f);
	}
	if (n_said && cli_said_unkept())
		fprintf(f, "<li>and %zu more (on the terminal)</li>\n", cli_said_unkept());
	if (n_said)
		fputs("</ul></div>\n", f);
	fputs("<nav><a href=\"#run\">run</a><a href=\"#steps\">steps</a><a href=\"#gpu\">GPU time</a>"
	      "<a href=\"#ops\">operators</a><a href=\"#kernels\">kernels</a><a href=\"#collectives\">collectives</a>"
	      "<a href=\"#memory\">memory</a><a href=\"#flame\">flame graph</a></nav>\n",
	      f);
	sec_run(R);
	sec_steps(R);
	sec_gpu(R);
	sec_ops(R);
	sec_kernels(R);
	sec_coll(R);
	sec_memory(R);
	sec_flame(R);
	fprintf(f, "<p class=\"sub\">Written by trace-report (tracekit %s).</p>\n</body>\n</html>\n", tk_version());
}

/* The page and the folded stacks: both are written in full before either is
 * published, so that a --folded FILE that cannot be written leaves no page
 * (and a page that cannot be written no folded file) behind; one written in
 * place (standard output, a FIFO) is out as soon as it is written. 0, or 1
 * after an error that names the file. */
static int publish(report *R)
{
	char *txt = NULL;
	size_t len = 0;
	int rc;
	if (R->o->folded && (rc = tk_stats_format_folded(R->s, R->n, &txt, &len)) != 0) {
		cli_err(tool.name, "%s", tk_strerror(rc));
		return 1;
	}
	tk_outfile *page = NULL, *fold = NULL;
	FILE *ff = NULL;
	if (!(R->f = cli_out_open(tool.name, R->o->out, &page)) ||
	    (R->o->folded && !(ff = cli_out_open(tool.name, R->o->folded, &fold)))) {
		if (page)
			cli_err(tool.name, "%s: not written either",
			        strcmp(R->o->out, "-") == 0 ? "standard output" : R->o->out);
		cli_out_close(tool.name, page, 0);
		free(txt);
		return 1;
	}
	write_page(R);
	if (ff)
		fwrite(txt, 1, len, ff);
	free(txt);
	/* a stream that failed fails its close, which names the file; the other
	 * is dropped unpublished (cli_out_close with ok 0) */
	int page_ok = fflush(R->f) == 0 && !ferror(R->f);
	int fold_ok = !ff || (fflush(ff) == 0 && !ferror(ff));
	if (!page_ok || !fold_ok) {
		cli_out_close(tool.name, page, !page_ok);
		cli_out_close(tool.name, fold, fold && !fold_ok);
		const char *other = page_ok ? R->o->out : ff && fold_ok ? R->o->folded : NULL;
		if (other && !cli_out_in_place(other)) /* else it is out already */
			cli_err(tool.name, "%s: not written either", other);
		return 1;
	}
	if (fold && cli_out_close(tool.name, fold, 1)) {
		cli_out_close(tool.name, page, 0);
		if (!cli_out_in_place(R->o->out))
			cli_err(tool.name, "%s: not written either", R->o->out);
		return 1;
	}
	return cli_out_close(tool.name, page, 1);
}

static int run_report(const report_opts *o)
{
	if (o->list)
		return cli_list_traces(tool.name, o->in, (size_t)o->n_in);
	cli_stats_run run = {0};
	run.tool = tool.name;
	run.req = (cli_stats_req){o->sopts, o->step_a, o->step_b, o->window, o->quiet, 1, 1, o->ropts};
	run.req.sopts.step_table = run.req.sopts.launch_table = run.req.sopts.memory_table = 1;
	run.req.sopts.memory_series = run.req.sopts.collective_table = run.req.sopts.flame = 1;
	tk_reader_opts ro = o->ropts;
	cli_stats_notes(&ro, &o->sopts);
	int status = cli_each_trace(tool.name, o->in, (size_t)o->n_in, &ro, cli_stats_run_add, &run) ? 1 : 0;
	if (!run.n) {
		if (!status)
			cli_err(tool.name, "no trace to report on");
		cli_stats_run_free(&run);
		return 1;
	}
	const char **labels = calloc(run.n, sizeof *labels);
	if (!labels) {
		cli_err(tool.name, "out of memory");
		cli_stats_run_free(&run);
		return 1;
	}
	for (size_t i = 0; i < run.n; i++)
		labels[i] = run.labels[i];
	report R = {o, NULL, run.s, labels, run.n, 0, 0, run.n, NULL, NULL, 0};
	step_numbers(&R);
	if (run.n > 8) {
		/* the tables of one rank: the one with the most kernel time */
		double best = -1;
		for (size_t i = 0; i < run.n; i++) {
			double k = 0;
			for (size_t j = 0; j < tk_stats_sum_count(run.s[i], TK_STATS_KERNEL); j++)
				k += (double)tk_stats_sum_get(run.s[i], TK_STATS_KERNEL, j)->total;
			if (k > best) {
				best = k;
				R.main_rank = i;
			}
		}
		R.t_first = R.main_rank;
		R.t_n = 1;
	}
	/* the inputs, quoted as a shell takes them where they need it (more
	 * than 8 stand as TRACE...: the page lists them at its top) */
	size_t cap = 16;
	for (int i = 0; i < o->n_in; i++)
		cap += 4 * strlen(o->in[i]) + 3;
	char *owned = malloc(cap), *cmd = owned;
	for (int i = 0; cmd && i < o->n_in; i++) {
		const char *a = o->in[i];
		int plain = *a != 0;
		for (const char *p = a; *p && plain; p++)
			plain = strchr("/._-+:,=@%", *p) || (*p >= '0' && *p <= '9') || ((*p | 32) >= 'a' && (*p | 32) <= 'z');
		if (i)
			*cmd++ = ' ';
		if (!plain)
			*cmd++ = '\'';
		for (const char *p = a; *p; p++) {
			if (!plain && *p == '\'') {
				memcpy(cmd, "'\\''", 4);
				cmd += 4;
			} else {
				*cmd++ = *p;
			}
		}
		if (!plain)
			*cmd++ = '\'';
	}
	if (cmd)
		*cmd = 0;
	if (owned && o->n_in > 8)
		strcpy(owned, "TRACE...");
	R.cmd_in = owned ? owned : "";
	if (publish(&R))
		status = 1;
	free(owned);
	free(labels);
	free(R.nums);
	cli_stats_run_free(&run);
	return status;
}

int main(int argc, char **argv)
{
	report_opts o;
	cli_cleanup_on_signals();
	int rc = parse_args(argc, argv, &o);
	return rc ? rc : run_report(&o);
}
