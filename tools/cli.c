/* cli.c: option parsing from one declarative table, generated --help, progress output. */
#define _GNU_SOURCE /* sched_getaffinity */
#include "cli.h"

#include <errno.h>
#include <getopt.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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
	if (t->writes)
		fprintf(f, "\noutput formats (--to, else from the output's name): %s\n", tk_format_names());
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

static const cli_opt *opt_by_id(const cli_tool *t, int id)
{
	for (const cli_opt *o = t->opts; o->name; o++)
		if (o->id == id)
			return o;
	return NULL;
}

static int id_of(const cli_tool *t, const char *name)
{
	for (const cli_opt *o = t->opts; o->name; o++)
		if (strcmp(o->name, name) == 0)
			return o->id;
	return -1;
}

const char *cli_opt_name(const cli_tool *t, int id)
{
	static char buf[2][80];
	static int k;
	const cli_opt *o = opt_by_id(t, id);
	char *b = buf[k++ & 1];
	if (!o)
		snprintf(b, sizeof buf[0], "option");
	else if (o->short_name)
		snprintf(b, sizeof buf[0], "-%c/--%s", o->short_name, o->name);
	else
		snprintf(b, sizeof buf[0], "--%s", o->name);
	return b;
}

int cli_bad_value(const cli_tool *t, int id, const char *value, const char *takes, ...)
{
	char what[512] = "";
	if (takes) {
		va_list ap;
		va_start(ap, takes);
		vsnprintf(what, sizeof what, takes, ap);
		va_end(ap);
	}
	cli_usage_error(t, "%s: bad value '%s'%s%s%s", cli_opt_name(t, id), value, *what ? " (" : "",
	                what, *what ? ")" : "");
	return 2;
}

/* "a, b, c" */
static void join(char *buf, size_t cap, const char *const *names)
{
	size_t k = 0;
	buf[0] = 0;
	for (size_t i = 0; names[i] && k < cap; i++)
		k += (size_t)snprintf(buf + k, cap - k, "%s%s", i ? ", " : "", names[i]);
}

static int index_of(const char *s, size_t n, const char *const *names)
{
	for (int i = 0; names[i]; i++)
		if (strlen(names[i]) == n && strncmp(s, names[i], n) == 0)
			return i;
	return -1;
}

int cli_parse_enum(const cli_tool *t, int id, const char *arg, const char *const *names)
{
	int i = index_of(arg, strlen(arg), names);
	if (i < 0) {
		char all[512];
		join(all, sizeof all, names);
		cli_bad_value(t, id, arg, "valid: %s", all);
	}
	return i;
}

long cli_parse_enum_list(const cli_tool *t, int id, const char *arg, const char *const *names)
{
	long bits = 0;
	for (const char *p = arg;; p++) {
		size_t n = strcspn(p, ",");
		int i = index_of(p, n, names);
		if (i < 0 || i >= 31) {
			char all[512], item[128];
			join(all, sizeof all, names);
			snprintf(item, sizeof item, "%.*s", (int)n, p);
			cli_bad_value(t, id, item, "valid: %s; several with commas", all);
			return -1;
		}
		bits |= 1L << i;
		p += n;
		if (!*p)
			return bits;
	}
}

int cli_tkb_compress(const cli_tool *t, const char *out, tk_writer_opts *wo, int compress)
{
	tk_writer_opts named = {.format = TK_FORMAT_AUTO, .gzip = -1};
	int tkb = wo->format == TK_FORMAT_TKB ||
	          (wo->format == TK_FORMAT_AUTO && out && !tk_format_from_name(out, &named) && named.format == TK_FORMAT_TKB);
	if (compress && !tkb) {
		cli_usage_error(t, "--compress applies to tkb output only (json: use a .gz name)");
		return 2;
	}
	if (tkb) {
		wo->format = TK_FORMAT_TKB;
		wo->gzip = compress;
	}
	return 0;
}

int cli_check_output(const cli_tool *t, const char *out, const tk_writer_opts *o, int quiet)
{
	tk_writer_opts named = {.format = TK_FORMAT_AUTO, .gzip = -1};
	const char *base = strrchr(out, '/') ? strrchr(out, '/') + 1 : out;
	struct stat st;
	size_t n = strlen(base);
	/* --to json asks for plain JSON: said when the name promises gzip */
	if (o->format == TK_FORMAT_JSON && o->gzip == 0 && n > 3 && strcmp(base + n - 3, ".gz") == 0 && !quiet)
		cli_warn(t->name, "-o %s: --to json writes plain JSON, not gzip (--to json.gz compresses)", out);
	if (o->format != TK_FORMAT_AUTO || strcmp(out, "-") == 0)
		return 0;
	if (strchr(base, '.') && !tk_format_from_name(out, &named)) /* a suffix, not a format's name */
		return 0;
	if (stat(out, &st) == 0 && (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode)))
		return 0; /* /dev/null, a pipe: written in place, JSON unless --to says otherwise */
	cli_usage_error(t, "-o %s: no output format has this suffix (%s); name the format with --to "
	                "(%s)", out, tk_format_suffixes(), tk_format_names());
	return 2;
}

void cli_window_kept(const char *tool, const char *name, const char *arg, uint64_t kept)
{
	if (kept || !arg)
		return;
	/* the same window with every end counted from the first event */
	char rel[256];
	const char *colon = strchr(arg, ':');
	int lo = colon && colon > arg && arg[0] != '+', hi = colon && colon[1] && colon[1] != '+';
	if (!lo && !hi) {
		cli_warn(tool, "%s: no event in --window %s", name, arg);
		return;
	}
	snprintf(rel, sizeof rel, "%s%.*s:%s%s", lo ? "+" : "", (int)(colon - arg), arg, hi ? "+" : "",
	         colon + 1);
	cli_warn(tool, "%s: no event in --window %s: its times are on the trace's clock, which seldom "
	         "starts at 0; '%s' counts from the first event", name, arg, rel);
}

/* What cli_err and cli_warn said, the first CLI_SAID_MAX of it. */
#define CLI_SAID_MAX 32
static struct {
	char *msg;
	int error;
} said[CLI_SAID_MAX];
static size_t n_said, n_unkept;

static void keep_said(int error, const char *msg)
{
	char *m = n_said < CLI_SAID_MAX ? strdup(msg) : NULL;
	if (m) {
		said[n_said].msg = m;
		said[n_said++].error = error;
	} else {
		n_unkept++;
	}
}

const char *cli_said(size_t i, int *error)
{
	if (i >= n_said)
		return NULL;
	*error = said[i].error;
	return said[i].msg;
}

size_t cli_said_unkept(void)
{
	return n_unkept;
}

void cli_err(const char *tool, const char *fmt, ...)
{
	/* the same error twice in a row (a damaged archive reported by the
	 * member being read and again by the listing) is said once */
	static char last[1024];
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (strcmp(msg, last) == 0)
		return;
	snprintf(last, sizeof last, "%s", msg);
	fprintf(stderr, "%s: error: %s\n", tool, msg);
	keep_said(1, msg);
}

void cli_warn(const char *tool, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (n >= (int)sizeof msg) { /* longer: printed whole, kept cut */
		fprintf(stderr, "%s: warning: ", tool);
		va_start(ap, fmt);
		vfprintf(stderr, fmt, ap);
		va_end(ap);
		fputc('\n', stderr);
	} else {
		fprintf(stderr, "%s: warning: %s\n", tool, msg);
	}
	keep_said(0, msg);
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
			/* getopt moved past a long option, not (yet) past a short
			 * option inside a cluster (-Zq): argv[optind - 1] is the
			 * long option only where its name gives getopt's optopt */
			const char *a = optind > 0 && optind <= argc ? argv[optind - 1] : "";
			const char *eq = strncmp(a, "--", 2) == 0 ? strchr(a, '=') : NULL;
			int named = 0;
			for (size_t i = 0; eq && optopt && lopts[i].name; i++)
				named |= lopts[i].val == optopt && strncmp(lopts[i].name, a + 2, (size_t)(eq - a - 2)) == 0;
			if (named) /* a known long option given a value */
				cli_usage_error(t, "option '%.*s' takes no value", (int)(eq - a), a);
			else if (optopt > 0 && optopt < 0x100)
				cli_usage_error(t, "unknown option '-%c'", optopt);
			else
				cli_usage_error(t, "unknown option '%s'", a);
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
	if (end == s || !(v >= 0) || v > 9.0e18) /* also NaN and infinity */
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
	if (*end || !(v * mul <= 9.0e18))
		return -1;
	return (int64_t)(v * mul);
}

int cli_parse_window(const cli_tool *t, const char *arg, tk_window *w)
{
	if (!tk_window_parse(arg, w))
		return 0;
	return cli_bad_value(t, id_of(t, "window"), arg, "A:B with times like 200ms, 1.5s or 1500 (us), "
	                     "'+' to count from the first event, either end left out for an open one");
}

int cli_parse_to(const cli_tool *t, const char *arg, tk_writer_opts *o)
{
	if (!tk_format_from_name(arg, o))
		return 0;
	return cli_bad_value(t, id_of(t, "to"), arg, "valid: %s", tk_format_names());
}

int cli_parse_memory(const cli_tool *t, const char *arg, size_t *bytes)
{
	int64_t v = cli_parse_size(arg);
	if (v >= (256 << 10)) {
		*bytes = (size_t)v;
		return 0;
	}
	return cli_bad_value(t, id_of(t, "memory"), arg, "a size of at least 256K, e.g. 256M");
}

unsigned cli_threads_default(void)
{
	cpu_set_t set;
	long n = 0;
	if (sched_getaffinity(0, sizeof set, &set) == 0)
		n = CPU_COUNT(&set);
	if (n <= 0)
		n = sysconf(_SC_NPROCESSORS_ONLN);
	return n < 1 ? 1 : n > CLI_THREADS_MAX ? CLI_THREADS_MAX : (unsigned)n;
}

int cli_parse_threads(const cli_tool *t, const char *arg, unsigned *n)
{
	char *end;
	long v = strtol(arg, &end, 10);
	if (end != arg && !*end && v >= 1 && v <= CLI_THREADS_MAX) {
		*n = (unsigned)v;
		return 0;
	}
	return cli_bad_value(t, id_of(t, "threads"), arg, "a count of threads from 1 to %d", CLI_THREADS_MAX);
}

int cli_parse_rows(const cli_tool *t, int id, const char *arg, long min, long *rows)
{
	char *end;
	errno = 0;
	long v = strtol(arg, &end, 10);
	if (end != arg && !*end && !errno && (v == -1 || v >= min)) {
		*rows = v;
		return 0;
	}
	if (min > 0)
		return cli_bad_value(t, id, arg, "a number of rows from %ld, -1 for all", min);
	return cli_bad_value(t, id, arg, "a number of rows, -1 for all");
}

int cli_parse_tmpdir(const cli_tool *t, int id, const char *arg, const char **dir)
{
	struct stat st;
	if (!*arg)
		return cli_bad_value(t, id, arg, "a directory");
	if (stat(arg, &st) != 0)
		return cli_bad_value(t, id, arg, "a directory: %s", strerror(errno));
	if (!S_ISDIR(st.st_mode))
		return cli_bad_value(t, id, arg, "a directory: this is not one");
	if (access(arg, W_OK | X_OK) != 0)
		return cli_bad_value(t, id, arg, "a directory to write in: %s", strerror(errno));
	*dir = arg;
	return 0;
}

FILE *cli_out_open(const char *tool, const char *path, tk_outfile **out)
{
	*out = NULL;
	if (tk_outfile_open(out, path) == 0)
		return tk_outfile_stream(*out);
	cli_err(tool, "%s", *out ? tk_outfile_error(*out) : "out of memory");
	tk_outfile_free(*out);
	*out = NULL;
	return NULL;
}

int cli_out_close(const char *tool, tk_outfile *out, int ok)
{
	int status = 0;
	if (ok && tk_outfile_close(out)) {
		cli_err(tool, "%s", tk_outfile_error(out));
		status = 1;
	}
	tk_outfile_free(out); /* unpublished unless closed */
	return status;
}

int cli_out_in_place(const char *path)
{
	struct stat st;
	return strcmp(path, "-") == 0 || (stat(path, &st) == 0 && !S_ISREG(st.st_mode));
}

static const char no_trace[] =
    "the archive holds no trace (no member named *.json, *.tkb or *.pftrace, plain or compressed)";

size_t cli_each_trace(const char *tool, char *const *paths, size_t n, const tk_reader_opts *ro,
                      cli_trace_fn fn, void *ctx)
{
	size_t failed = 0;
	for (size_t i = 0; i < n; i++) {
		tk_inputs *in = NULL;
		if (tk_inputs_open(&in, paths[i], ro)) {
			cli_err(tool, "%s", in ? tk_inputs_error(in) : "out of memory");
			tk_inputs_free(in);
			failed++;
			continue;
		}
		const char *name;
		tk_reader *r = NULL;
		int rc;
		size_t seen = 0;
		while ((rc = tk_inputs_next(in, fn ? &r : NULL, &name)) != TK_EOF) {
			seen++;
			if (rc != TK_OK) {
				cli_err(tool, "%s", r ? tk_reader_error(r) : tk_inputs_error(in));
				failed++;
			} else if (!fn) {
				printf("%s\n", name);
			} else if (fn(ctx, name, r)) {
				failed++;
			}
			tk_reader_free(r);
			r = NULL;
		}
		if (!seen) {
			cli_err(tool, "%s: %s", paths[i], no_trace);
			failed++;
		}
		tk_inputs_free(in);
	}
	return failed;
}

int cli_list_traces(const char *tool, char *const *paths, size_t n)
{
	size_t failed = cli_each_trace(tool, paths, n, NULL, NULL, NULL);
	return fflush(stdout) || failed ? 1 : 0;
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

int cli_need_rereadable(const cli_tool *t, const char *name, const char *why)
{
	if (tk_input_rereadable(name))
		return 0;
	int in = strcmp(name, "-") == 0;
	cli_usage_error(t, "%s: %s, and this is %s: save it to a file first", in ? "(stdin)" : name, why,
	                in ? "standard input" : "a pipe or FIFO");
	return 2;
}

int cli_refuse_output_input(const cli_tool *t, const char *opt, const char *out, char *const *in, size_t n)
{
	for (size_t i = 0; out && i < n; i++)
		if (tk_output_is_input(out, in[i])) {
			cli_usage_error(t, "%s %s is the input %s: the output would replace it; write to "
			                "another file", opt, out, in[i]);
			return 2;
		}
	return 0;
}

/* ---- signals ---- */

static void cleanup_and_die(int sig)
{
	tk_cleanup_temporaries();
	raise(sig); /* the default action now (SA_RESETHAND), delivered when the handler returns */
}

void cli_cleanup_on_signals(void)
{
	static const int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGPIPE};
	for (size_t i = 0; i < sizeof sigs / sizeof *sigs; i++) {
		struct sigaction old, sa;
		if (sigaction(sigs[i], NULL, &old) || old.sa_handler == SIG_IGN)
			continue;
		memset(&sa, 0, sizeof sa);
		sa.sa_handler = cleanup_and_die;
		sa.sa_flags = SA_RESETHAND;
		sigemptyset(&sa.sa_mask);
		sigaction(sigs[i], &sa, NULL);
	}
}
