/* cli.c: option parsing from one declarative table, generated --help, progress output. */
#include "cli.h"

#include <getopt.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tracekit/tracekit.h"

enum { ID_HELP = 0x1001, ID_VERSION = 0x1002 };

void cli_help(const cli_tool *t, FILE *f)
{
	fprintf(f, "usage: %s %s\n\n%s\n\noptions:\n", t->name, t->synopsis, t->about);
	for (const cli_opt *o = t->opts; o->name; o++) {
		char left[64], sh[8] = "    ";
		if (o->short_name)
			snprintf(sh, sizeof sh, "-%c, ", o->short_name);
		snprintf(left, sizeof left, "%s--%s%s%s", sh, o->name, o->arg ? " " : "",
		         o->arg ? o->arg : "");
		fprintf(f, "  %-26s %s\n", left, o->help);
	}
	fprintf(f, "  %-26s %s\n", "-h, --help", "show this help and exit");
	fprintf(f, "  %-26s %s\n", "    --version", "show version information and exit");
	if (t->footer)
		fprintf(f, "\n%s", t->footer);
}

static void version(const cli_tool *t)
{
	printf("%s (tracekit) %s\nlibtracekit %s; %s\n", t->name, TK_VERSION_STRING, tk_version(),
	       tk_dependency_versions());
}

void cli_usage_error(const cli_tool *t, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "%s: ", t->name);
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\nsee '%s --help'\n", t->name);
	va_end(ap);
}

void cli_err(const char *tool, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "%s: error: ", tool);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

void cli_warn(const char *tool, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "%s: warning: ", tool);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

int cli_next(const cli_tool *t, int argc, char **argv, const char **arg, int *optind_out)
{
	static struct option lopts[64];
	static char sopts[160];
	static const cli_tool *built;
	if (built != t) {
		size_t n = 0, s = 0;
		if (t->in_order)
			sopts[s++] = '+';
		sopts[s++] = ':';
		for (const cli_opt *o = t->opts; o->name && n < 60; o++, n++) {
			lopts[n] = (struct option){o->name, o->arg ? required_argument : no_argument, NULL, o->id};
			if (o->short_name) {
				sopts[s++] = o->short_name;
				if (o->arg)
					sopts[s++] = ':';
			}
		}
		lopts[n++] = (struct option){"help", no_argument, NULL, ID_HELP};
		lopts[n++] = (struct option){"version", no_argument, NULL, ID_VERSION};
		lopts[n] = (struct option){0};
		sopts[s++] = 'h';
		sopts[s] = 0;
		built = t;
		optind = 1;
		opterr = 0;
	}
	/* GNU getopt permutes (options may follow positional arguments) unless
	 * the tool runs a command whose own options must stay its own */
	for (;;) {
		int c = getopt_long(argc, argv, sopts, lopts, NULL);
		*optind_out = optind;
		if (c == -1)
			return -1;
		if (c == 'h' || c == ID_HELP) {
			cli_help(t, stdout);
			exit(0);
		}
		if (c == ID_VERSION) {
			version(t);
			exit(0);
		}
		if (c == '?') {
			if (optopt)
				cli_usage_error(t, "unknown option '-%c'", optopt);
			else
				cli_usage_error(t, "unknown option '%s'", argv[optind - 1]);
			return -2;
		}
		if (c == ':') {
			cli_usage_error(t, "option '%s' needs an argument", argv[optind - 1]);
			return -2;
		}
		*arg = optarg;
		return c;
	}
}

int64_t cli_parse_size(const char *s)
{
	char *end;
	if (!s || !*s)
		return -1;
	double v = strtod(s, &end);
	if (end == s || v < 0)
		return -1;
	double mul = 1;
	switch (*end) {
	case 'k': case 'K': mul = 1024.0; end++; break;
	case 'm': case 'M': mul = 1024.0 * 1024; end++; break;
	case 'g': case 'G': mul = 1024.0 * 1024 * 1024; end++; break;
	case 't': case 'T': mul = 1024.0 * 1024 * 1024 * 1024; end++; break;
	default: break;
	}
	if (*end == 'i')
		end++;
	if (*end == 'B' || *end == 'b')
		end++;
	if (*end || v * mul > 9.0e18)
		return -1;
	return (int64_t)(v * mul);
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void cli_progress_init(cli_progress *p, int quiet)
{
	memset(p, 0, sizeof *p);
	p->enabled = !quiet && isatty(2);
	p->start = p->last = now();
}

void cli_progress_update(cli_progress *p, const char *what, uint64_t bytes, uint64_t events)
{
	if (!p->enabled)
		return;
	double t = now();
	if (t - p->last < 0.5 || t - p->start < 1.0)
		return;
	p->last = t;
	p->shown = 1;
	fprintf(stderr, "\r%s: %.1f MB, %llu events, %.0f MB/s   ", what, (double)bytes / 1e6,
	        (unsigned long long)events, (double)bytes / 1e6 / (t - p->start));
}

void cli_progress_done(cli_progress *p)
{
	if (p->shown)
		fputc('\n', stderr);
	p->shown = 0;
}
