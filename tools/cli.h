/* cli.h: the option table, --help and message helpers the tools share. */
#ifndef TK_CLI_H
#define TK_CLI_H

#include <stdint.h>
#include <stdio.h>

#include "tracekit/tracekit.h"

typedef struct cli_opt {
	int id;           /* returned by cli_next; a printable char for a short option */
	char short_name;  /* 0 if none */
	const char *name; /* long name without "--" */
	const char *arg;  /* argument placeholder, NULL if the option takes none */
	const char *help;
} cli_opt;

typedef struct cli_tool {
	const char *name;     /* "trace-convert" */
	const char *synopsis; /* "IN -o OUT [options]" */
	const char *about;    /* one paragraph */
	const cli_opt *opts;
	const char *footer;   /* examples, may be NULL */
	int in_order;         /* stop at the first positional argument: it starts a command */
	int writes;           /* --help lists the output formats (--to) the library writes */
} cli_tool;

/* Parses argv; returns the option id, -1 at the end (positional arguments
 * are then argv[*optind_out..argc)), or -2 after printing a usage error.
 * --help and --version are handled (printed, exit 0). */
int cli_next(const cli_tool *t, int argc, char **argv, const char **arg, int *optind_out);
void cli_help(const cli_tool *t, FILE *f);
/* "trace-convert: msg\nsee 'trace-convert --help'" on stderr. */
void cli_usage_error(const cli_tool *t, const char *fmt, ...);
/* Option id as the user names it: "-t/--tables", "--to". */
const char *cli_opt_name(const cli_tool *t, int id);
/* Every tool's one message for a value an option does not take, a usage
 * error: "trace-stats: -t/--tables: bad value 'x' (valid: ops, kernels)".
 * The parenthesis says what the option takes (a printf format; NULL for
 * none). Returns 2, the exit status of a usage error. */
int cli_bad_value(const cli_tool *t, int id, const char *value, const char *takes, ...);
/* The index of arg among names (NULL-terminated), or -1 after
 * cli_bad_value listing them. */
int cli_parse_enum(const cli_tool *t, int id, const char *arg, const char *const *names);
/* A comma-separated list of names: bit i set for names[i]; -1 after
 * cli_bad_value naming the first item that is none of them. */
long cli_parse_enum_list(const cli_tool *t, int id, const char *arg, const char *const *names);
/* -o OUT written in o->format (--to) or, when that is TK_FORMAT_AUTO, in the
 * format OUT's suffix names: '-' and an existing device or FIFO are JSON
 * as before; any other name without a suffix a format has is a usage error
 * naming OUT, the suffixes and --to (2). 0 when OUT is fine. */
int cli_check_output(const cli_tool *t, const char *out, const tk_writer_opts *o, int quiet);
/* Every tool's one check of what --window ARG kept of NAME (the output, or
 * an input): a warning when kept, the events in the window (metadata not
 * counted), is 0, saying how to count from the first event. */
void cli_window_kept(const char *tool, const char *name, const char *arg, uint64_t kept);
void cli_err(const char *tool, const char *fmt, ...);
void cli_warn(const char *tool, const char *fmt, ...);
/* The i-th message cli_err (*error 1) or cli_warn (0) printed, the first
 * 32 of them (each up to 1023 bytes), for a page that must say them too;
 * NULL past the last. cli_said_unkept: how many more were printed. */
const char *cli_said(size_t i, int *error);
size_t cli_said_unkept(void);
/* "500M", "2G", "1024" -> bytes; -1 if malformed. */
int64_t cli_parse_size(const char *s);
/* --window A:B (tk_window_parse); a usage error and 2 when malformed. */
int cli_parse_window(const cli_tool *t, const char *arg, tk_window *w);
/* --compress: .tkb output (by --to or OUT's name) compresses its chunks
 * with zlib, and wo says so (format tkb, gzip 0 or 1); for another format
 * it is a usage error (2). 0 when fine, with or without compress. */
int cli_tkb_compress(const cli_tool *t, const char *out, tk_writer_opts *wo, int compress);
/* --to NAME (tk_format_from_name); a usage error and 2 when unknown. */
int cli_parse_to(const cli_tool *t, const char *arg, tk_writer_opts *o);
/* --memory SIZE: everything the operation holds, at least 256K. */
int cli_parse_memory(const cli_tool *t, const char *arg, size_t *bytes);

/* --threads N: the threads that parse one JSON trace or decode the chunks of
 * one .tkb (tk_reader_opts.threads).
 * Every tool that reads traces takes it, with this help line. */
#define CLI_THREADS_MAX 64
#define CLI_THREADS_HELP "threads that parse each JSON or .tkb trace (default: the\n" \
	"                             processors available, at most 64; 1: none besides the main one)"
/* The same, for the tools that write traces: gzip output is deflated, and
 * .pftrace output encoded, on N threads too (tk_writer_opts.threads). */
#define CLI_THREADS_HELP_OUT "threads that parse each JSON or .tkb trace, that deflate gzip\n" \
	"                             output, and that encode .pftrace output (the encoding on at\n" \
	"                             most 4) (default: the processors available, at most 64; 1:\n" \
	"                             parsing on the main thread alone)"
/* The processors this process may run on, 1 to CLI_THREADS_MAX. */
unsigned cli_threads_default(void);
/* --threads N: 0 with *n set, or 2 after a usage error. */
int cli_parse_threads(const cli_tool *t, const char *arg, unsigned *n);
/* -n, --row-limit N (option id): the rows a table shows, at least `min`, or
 * -1 for all; 0 with *rows set, or 2 after a usage error. */
int cli_parse_rows(const cli_tool *t, int id, const char *arg, long min, long *rows);
/* --tmpdir DIR (option id): a directory this process can make files in,
 * checked now rather than when the first run spills, late in a long job;
 * 0 with *dir set, or 2 after a usage error. */
int cli_parse_tmpdir(const cli_tool *t, int id, const char *arg, const char **dir);

/* The traces the arguments stand for: a trace file, and each member of an
 * archive that is a trace (tk_inputs). fn gets each with a reader open on
 * it (the reader is freed after the call) and returns nonzero when it
 * failed; with fn NULL each is only named on standard output. Inputs that
 * cannot be opened are reported, and after an error the others are still
 * read where the archive allows. Returns the number of failures. */
typedef int (*cli_trace_fn)(void *ctx, const char *name, tk_reader *r);
size_t cli_each_trace(const char *tool, char *const *paths, size_t n, const tk_reader_opts *ro,
                      cli_trace_fn fn, void *ctx);
/* --list: the traces each argument stands for, one per line on standard
 * output. The exit status. */
int cli_list_traces(const char *tool, char *const *paths, size_t n);

/* An output file as every tool writes one (tk_outfile: published whole on
 * close): its stream, or NULL after an error that names it. */
FILE *cli_out_open(const char *tool, const char *path, tk_outfile **out);
/* Publishes the file when ok (else nothing is published) and frees it: 0,
 * or 1 after an error that names it. */
int cli_out_close(const char *tool, tk_outfile *out, int ok);
/* 1 when an output at path is written in place as it goes (standard output
 * "-", a device, a FIFO) rather than published whole on close. */
int cli_out_in_place(const char *path);

/* An input read twice ("why": "trace-split reads its input twice"): 0, or
 * 2 after a usage error when it is standard input or a pipe, which cannot
 * be read again. */
int cli_need_rereadable(const cli_tool *t, const char *name, const char *why);
/* A usage error naming the option opt ("-o", "--folded") and 2 when the
 * output file out is one of the inputs (the same file, by
 * tk_output_is_input), else 0. */
int cli_refuse_output_input(const cli_tool *t, const char *opt, const char *out, char *const *in, size_t n);

/* On SIGINT, SIGTERM, SIGHUP and SIGPIPE: remove the library's temporary
 * files (tk_cleanup_temporaries), then end by the signal as before. A
 * signal that was ignored when the tool started stays ignored. */
void cli_cleanup_on_signals(void);

/* Progress on stderr, only when it is a terminal and the work is long. */
typedef struct cli_progress {
	int enabled;
	double start, last;
	int shown;
} cli_progress;
void cli_progress_init(cli_progress *p, int quiet);
void cli_progress_update(cli_progress *p, const char *what, uint64_t bytes, uint64_t events);
void cli_progress_done(cli_progress *p);

#endif
