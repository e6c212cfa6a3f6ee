/* tracekit.h: public API of libtracekit (event model, readers, writers). */

/* Conventions of every handle (tk_reader, tk_writer, tk_inputs, tk_outfile,
 * and those of the other headers):
 * - A function that makes a handle and fails may still set *out to one
 *   whose *_error() says why: free it with its *_free(). Every *_free()
 *   takes NULL.
 * - One thread at a time uses a handle; separate handles may be used on
 *   separate threads at once. The threads a handle starts are its own.
 * - The text of *_error(), tk_reader_name() and the like lives until the
 *   handle's next call or its free; "" when there is nothing to say.
 * - The library never prints, never exits and never aborts. Writing to a
 *   pipe whose reader has gone raises SIGPIPE, as write(2) does, which ends
 *   the process unless the program ignores or handles it (then the write
 *   fails with TK_ERR_IO, "Broken pipe"); the writers' own threads inherit
 *   the signal mask of the thread that opened them. */
#ifndef TRACEKIT_H
#define TRACEKIT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TK_VERSION_MAJOR 0
#define TK_VERSION_MINOR 1
#define TK_VERSION_PATCH 0
#define TK_VERSION_STRING "0.1.0"

/* TK_STATIC_ONLY, defined before this header: the functions are declared
 * without the shared library's visibility attribute. */
#if defined(__GNUC__) && !defined(TK_STATIC_ONLY)
#define TK_API __attribute__((visibility("default")))
#else
#define TK_API
#endif

/* Return codes. Values are pinned: they never change between versions. */
enum {
	TK_OK = 0,
	TK_EOF = 1,            /* end of stream (tk_reader_next) */
	TK_ERR_IO = -1,        /* read/write/open failed; message names the file */
	TK_ERR_FORMAT = -2,    /* input is not valid for its format */
	TK_ERR_NOMEM = -3,     /* allocation failed */
	TK_ERR_TRUNCATED = -4, /* input ended early (strict mode only) */
	TK_ERR_ARG = -5,       /* bad argument from the caller */
	TK_ERR_LIMIT = -6,     /* a configured limit (size, depth) was exceeded */
	TK_ERR_UNSUPPORTED = -7
};

/* A string view: len bytes at ptr; ptr == NULL means "absent" (and len is
 * then 0). The strings of the events and metadata a reader hands out, and
 * of tk_event_dup() copies, are also NUL-terminated, with len smaller than
 * strlen() only when the string holds a NUL byte. Views into a JSON text
 * (tk_json_obj_find(), tk_args_find()) are not terminated: read len bytes. */
typedef struct tk_sv {
	const char *ptr;
	size_t len;
} tk_sv;

/* pid, tid and id values are numbers or strings in Chrome JSON. */
enum { TK_ID_NONE = 0, TK_ID_INT = 1, TK_ID_STR = 2 };
typedef struct tk_id {
	int kind;    /* TK_ID_NONE, TK_ID_INT or TK_ID_STR */
	int64_t num; /* TK_ID_INT */
	tk_sv str;   /* TK_ID_STR: interned, lives as long as its reader */
} tk_id;

/* Bits of tk_event.has: which optional fields are present. */
enum {
	TK_HAS_TS = 1u << 0,
	TK_HAS_DUR = 1u << 1,
	TK_HAS_NAME = 1u << 2,
	TK_HAS_CAT = 1u << 3,
	TK_HAS_PH = 1u << 4,
	/* set by tracekit readers: args and extra are known to be valid compact
	 * JSON, so writers copy them without checking. A caller that gives a
	 * read event other args or extra clears it, so that they are checked. */
	TK_HAS_VALID_JSON = 1u << 5
};

/* One trace event. Times are integer nanoseconds, parsed from the decimal
 * text of the input (Chrome JSON stores microseconds), never through a
 * double. Strings are interned by the reader (stable until the reader is
 * freed); `args` and `extra` point into per-event storage that lives until
 * the next tk_reader_next() call: use tk_event_dup() to keep an event. */
typedef struct tk_event {
	char ph;      /* phase: 'X', 'i', 's', 'f', 'M', 'C', 'B', 'E', ... */
	unsigned has; /* TK_HAS_* */
	int64_t ts;   /* ns */
	int64_t dur;  /* ns */
	tk_sv name;
	tk_sv cat;
	tk_id pid;
	tk_id tid;
	tk_id id; /* flow / async id */
	/* The "args" object as compact, valid JSON text including its braces
	 * (ptr NULL when the event has no args). Writers take the text of
	 * another JSON value too and write it as given; a JSON reader then
	 * keeps such an "args" among the extra members. */
	tk_sv args;
	/* Every other member of the event object, as compact JSON members
	 * without the surrounding braces: "s":"g","bp":"e" (ptr NULL if none). */
	tk_sv extra;
} tk_event;

/* ---- Input ---------------------------------------------------------- */

typedef struct tk_reader tk_reader;

/* Work a caller does on every event that depends on the event alone (and
 * ctx, which it must not change while the reader lives): it reads ev and
 * writes note_size bytes about it to out. See tk_reader_opts.note_fn. */
typedef void (*tk_event_note_fn)(const void *ctx, const tk_event *ev, void *out);

typedef struct tk_reader_opts {
	int strict;               /* truncated input is an error, not a warning */
	size_t max_value_bytes;   /* largest single event or metadata value; 0 = 256 MiB */
	unsigned max_depth;       /* deepest nesting accepted (JSON, .pftrace annotations); 0 = 1000; more than 4096 is 4096 */
	/* Threads that parse the events of one JSON trace (plain or gzip):
	 * 0 or 1 = the calling thread alone. With more, the decoded input is
	 * cut into blocks of a few MiB at event boundaries, parsed on that many
	 * threads of the reader's own and handed out in file order: the same
	 * events, metadata, warnings and errors as with one (docs/threads.md).
	 * Inputs of one window (1 MiB) and the lazy first pass of trace-split
	 * are parsed by the caller alone. More than 64 are taken as 64. */
	unsigned threads;
	/* JSON: events come without their args (args.ptr NULL): the objects
	 * are skipped over, matched brackets and strings, not parsed, which
	 * reads faster; for a pass that needs names, times and ids only. A
	 * damaged args object may go unnoticed. Other formats give args as
	 * usual. */
	int skip_args;
	/* A note on every event, given back by tk_reader_event_note() with
	 * the event: when the events are parsed on several threads, each
	 * thread writes the notes of the events it parsed, so that this work
	 * comes off the caller's thread; otherwise the reader calls note_fn
	 * itself when it hands the event out. note_fn may run on several
	 * threads at once. NULL: no notes. */
	tk_event_note_fn note_fn;
	const void *note_ctx;
	size_t note_size; /* bytes of a note, at most 4096 */
	/* JSON output: when the events are parsed on several threads (JSON,
	 * .tkb), the thread that parsed each event also writes its JSON text as
	 * the JSON writer would, and tk_writer_write_from() copies that text
	 * instead of formatting the event on the caller's thread: the same
	 * output, with the formatting spread over the threads. The texts take
	 * about as much memory as the blocks in flight. */
	int render_json;
} tk_reader_opts;

typedef struct tk_reader_stats {
	uint64_t events;           /* events returned so far */
	uint64_t bytes_in;         /* bytes read from the source (compressed) */
	uint64_t bytes_decoded;    /* bytes after decompression */
	uint64_t repaired_strings; /* strings with invalid UTF-8 replaced by U+FFFD */
	int truncated;             /* input ended early and was accepted (non-strict) */
	uint64_t dropped_bytes;    /* bytes after the last complete event when truncated */
	uint64_t window_bytes;     /* the largest input window held: at most max_value_bytes + 64 KiB
	                            * once a value grows past the starting window */
} tk_reader_stats;

/* Open a trace. `path` "-" is standard input; "ARCHIVE//MEMBER" is a
 * member of an archive (see tk_inputs), and an archive alone its one
 * trace. The format, any compression and any archive are detected from
 * the bytes, never from the name. On failure *out may still hold a reader
 * whose tk_reader_error() says why; free it. */
TK_API int tk_reader_open_path(tk_reader **out, const char *path, const tk_reader_opts *opts);
/* `name` is used in messages. The fd is not closed by the reader. */
TK_API int tk_reader_open_fd(tk_reader **out, int fd, const char *name, const tk_reader_opts *opts);
/* The buffer must stay valid for the reader's life. */
TK_API int tk_reader_open_memory(tk_reader **out, const void *buf, size_t len, const char *name,
                                 const tk_reader_opts *opts);

/* Next event: TK_OK and *ev set, TK_EOF at the end, or a negative error. */
TK_API int tk_reader_next(tk_reader *r, const tk_event **ev);
/* The note (tk_reader_opts.note_fn) of the event tk_reader_next() gave
 * last, valid as long as that event; NULL without note_fn. */
TK_API const void *tk_reader_event_note(const tk_reader *r);

/* The last error, or the last warning when no error occurred; "" if none. */
TK_API const char *tk_reader_error(const tk_reader *r);
/* Warnings (e.g. truncated input) accumulate; index from 0. NULL past the end. */
TK_API const char *tk_reader_warning(const tk_reader *r, size_t i);
TK_API const tk_reader_stats *tk_reader_get_stats(const tk_reader *r);
/* Name of the detected format: "json", "json.gz", ... (for a member of
 * an archive, the member's own: "json.gz" in a .tar.gz) */
TK_API const char *tk_reader_format(const tk_reader *r);
TK_API const char *tk_reader_name(const tk_reader *r);

/* Top-level metadata: every member of the top-level object other than
 * "traceEvents", in input order, values as compact JSON. Members that follow
 * the events become visible once they are reached (at the latest at
 * TK_EOF) and report *after_events = 1. */
TK_API size_t tk_reader_meta_count(const tk_reader *r);
TK_API int tk_reader_meta_get(const tk_reader *r, size_t i, tk_sv *key, tk_sv *json,
                              int *after_events);
/* Value of a metadata key, or ptr NULL. */
TK_API tk_sv tk_reader_meta_find(const tk_reader *r, const char *key);
/* 1 if the input was a bare JSON array (no top-level object). */
TK_API int tk_reader_is_bare_array(const tk_reader *r);

TK_API void tk_reader_free(tk_reader *r);

/* ---- Inputs: the traces a path stands for --------------------------- */

/* A trace file stands for itself. An archive (tar, tar.gz, zip, 7z, ...:
 * whatever libarchive reads) stands for each member that is a trace
 * (named *.json, *.json.gz, *.tkb, ...), in the archive's order, read as
 * the archive streams by: nothing is extracted to disk. "ARCHIVE//MEMBER"
 * stands for that member alone, as it does for tk_reader_open_path(); an
 * archive opened by tk_reader_open_path() without a member must hold
 * exactly one trace. */
typedef struct tk_inputs tk_inputs;

/* On failure *out may hold a handle whose tk_inputs_error() says why. */
TK_API int tk_inputs_open(tk_inputs **out, const char *path, const tk_reader_opts *opts);
/* The next trace: TK_OK with *name ("logs.tar.gz//rank3/trace.json", or
 * the path of a plain file; valid until the next call) and, when r is not
 * NULL, a new reader in *r that the caller frees. A member's reader reads
 * until the next call of tk_inputs_next() moves the archive on (it then
 * fails); it may be freed before or after the tk_inputs. With r NULL the
 * member is only named and skipped (a listing; a plain file is named
 * without being read). TK_EOF after the last, or an error, with the
 * archive, the member and the byte named in tk_inputs_error(). A trace that
 * does not open is such an error: *r may then hold its reader, with the
 * same message in tk_reader_error() and the warnings read so far, for the
 * caller to free. Each error is returned once, and the next call goes
 * on with the member after it where the archive allows (a damaged header
 * that the format can step over), or returns TK_EOF where it cannot (a
 * cut or corrupt stream). */
TK_API int tk_inputs_next(tk_inputs *in, tk_reader **r, const char **name);
TK_API const char *tk_inputs_error(const tk_inputs *in);
TK_API void tk_inputs_free(tk_inputs *in);

/* 1 when the trace at path (a file, or ARCHIVE//MEMBER) can be opened
 * again and read from its start, as operations that read their input twice
 * need; 0 for standard input ("-"), a pipe, a FIFO (also /dev/fd/N of a
 * shell's <(...)), a socket or a terminal. A path that cannot be examined
 * counts as 1: opening it says what is wrong. */
TK_API int tk_input_rereadable(const char *path);
/* 1 when writing a file at out would write over the file that the input
 * path (a file, or ARCHIVE//MEMBER) reads: the same file, by device and
 * inode, so links and other spellings of a name are found. 0 otherwise,
 * also when out does not exist yet or is not a regular file (a device or
 * FIFO is written in place, never replaced). */
TK_API int tk_output_is_input(const char *out, const char *path);

/* ---- Output --------------------------------------------------------- */

typedef struct tk_writer tk_writer;

/* Formats. Values are pinned: they never change between versions. */
enum { TK_FORMAT_AUTO = 0, TK_FORMAT_JSON = 1, TK_FORMAT_TKB = 2, TK_FORMAT_PFTRACE = 3, TK_FORMAT_SQLITE = 4 };

typedef struct tk_writer_opts {
	int format;     /* TK_FORMAT_*; AUTO picks from the path's name, else JSON */
	int gzip;       /* < 0 = from the name (".gz"), 0 = no, else yes; for TKB: zlib chunks; SQLite: ignored */
	int gzip_level; /* 1..9; 0 or any other value = the default (6; TKB's zlib chunks: 1) */
	/* pftrace, sqlite: the writer puts the events in time order (tracks
	 * need slices that nest), in this much memory, spilling sorted runs to
	 * tmpdir beyond it; 0 = 256 MiB (sqlite: 64 MiB, half of it SQLite's
	 * page cache) */
	size_t memory_bytes;
	/* gzip output: the threads that deflate its blocks of about 1 MiB;
	 * pftrace: the threads that encode its chunks of packets at close (the
	 * caller among them, at most 4). The same bytes with any count; 0 =
	 * one per processor; more than 64 are taken as 64. */
	unsigned threads;
	/* pftrace, sqlite: the directory where sorted runs are spilled, and
	 * (sqlite) SQLite's own temporary files, those of its index builds;
	 * each writer makes a directory of its own there, removed when it is
	 * freed. NULL: $TMPDIR, else /tmp. Read while the writer opens. */
	const char *tmpdir;
} tk_writer_opts;

/* The output a name stands for, as every tool's --to and -o read it: a
 * format's name, possibly with a compression suffix ("json", "json.gz",
 * "tkb"), or a file name ending in a format's suffix ("x.json.gz",
 * "x.tkb"). Sets o->format and o->gzip and leaves the rest of *o alone.
 * 0, or TK_ERR_UNSUPPORTED when no format is written under that name. */
TK_API int tk_format_from_name(const char *name, tk_writer_opts *o);
/* 1 if a file name looks like a trace tracekit reads: it ends in a
 * format's suffix (.json, .tkb), possibly compressed (.json.gz). What
 * directories and archives are searched for. */
TK_API int tk_is_trace_name(const char *name);
/* A format's name ("json"), or NULL for an unknown one. */
TK_API const char *tk_format_name(int format);
/* The names tk_format_from_name() takes, for messages: "json, json.gz,
 * tkb". A buffer of the calling thread's own. */
TK_API const char *tk_format_names(void);
/* The file name suffixes tk_format_from_name() knows, for messages:
 * ".json[.gz], .tkb, ...". A buffer of the calling thread's own. */
TK_API const char *tk_format_suffixes(void);

/* Write to `path` ("-" = standard output; "" is TK_ERR_ARG). A file is
 * written under a temporary name beside it and renamed on
 * tk_writer_close(); a writer freed without a successful close leaves
 * nothing behind. A file replaced keeps its permissions (not its owner or
 * its other hard links); a symbolic link to a file stays a link, and the
 * file it names is replaced; a link that leads nowhere is an error. From
 * the first MiB on, compression and write() run on threads of the writer's
 * own (gzip: opts->threads of them), in blocks of about 1 MiB, so they
 * overlap with the caller's work; an error there is returned by the next
 * call.
 *
 * An error is final: every later call returns it, and close publishes
 * nothing. Invalid JSON in an event's args or extra is such an error (the
 * output would lose the event). Refused without harm, the writer going on
 * as before: TK_ERR_LIMIT (a byte budget), TK_ERR_UNSUPPORTED from
 * tk_writer_set_max_bytes(), and TK_ERR_ARG for an event with a string of
 * length > 0 but no text, or (JSON output) a phase that is not printable
 * ASCII (a group is then refused whole), metadata named
 * "traceEvents", or any call after a successful close. */
TK_API int tk_writer_open_path(tk_writer **out, const char *path, const tk_writer_opts *opts);
/* Write to an fd that the writer does not close; `name` for messages. */
TK_API int tk_writer_open_fd(tk_writer **out, int fd, const char *name, const tk_writer_opts *opts);

/* Add a top-level metadata member. Added before the first event it is
 * written before "traceEvents", afterwards it is written after the events
 * (the order of the input is kept). `json` must be one JSON value; the key
 * may not be "traceEvents". */
TK_API int tk_writer_add_meta(tk_writer *w, tk_sv key, tk_sv json);
/* Add a top-level metadata member that is written after the events
 * whenever it is added (e.g. "traceName" in a Kineto file). */
TK_API int tk_writer_add_meta_after(tk_writer *w, tk_sv key, tk_sv json);
TK_API int tk_writer_write(tk_writer *w, const tk_event *ev);
/* Write n events together: under a byte budget (tk_writer_set_max_bytes)
 * either all of them are written or none. */
TK_API int tk_writer_write_group(tk_writer *w, const tk_event *const *evs, size_t n);
/* tk_writer_write(w, ev) for ev, the event tk_reader_next(r) gave last:
 * JSON output copies the text r's threads wrote for it ahead
 * (tk_reader_opts.render_json) where there is one. The same output, byte
 * for byte, and the same errors as tk_writer_write. */
TK_API int tk_writer_write_from(tk_writer *w, const tk_reader *r, const tk_event *ev);
/* JSON output only (other formats: TK_ERR_UNSUPPORTED, and they go on
 * without one). Byte budget for the finished output, measured as written (the compressed
 * size with gzip), closing bytes included. A write that could make the
 * finished output larger fails with TK_ERR_LIMIT, writes nothing and leaves
 * the writer usable (close it, or write something smaller). The first write
 * of events is never refused, so an output holds at least one group; compare
 * tk_writer_bytes() after close with the budget to detect that case.
 * With gzip the compressed size is only known as it is written: the writer
 * keeps an upper bound and, near the budget, ends the block being filled
 * (a sync flush) and waits for the blocks to be written to learn the exact
 * size. 0 removes the budget. */
TK_API int tk_writer_set_max_bytes(tk_writer *w, uint64_t max_bytes);
/* Bytes of output so far (with gzip: as far as compressed, which lags
 * behind what was written); after tk_writer_close() the size of the
 * finished file. */
TK_API uint64_t tk_writer_bytes(const tk_writer *w);
/* Finish the output (and rename it into place). */
TK_API int tk_writer_close(tk_writer *w);
TK_API const char *tk_writer_error(const tk_writer *w);
/* Strings whose invalid UTF-8 the writer replaced with U+FFFD. */
TK_API uint64_t tk_writer_repaired_strings(const tk_writer *w);
/* Frees; removes the temporary file if close did not succeed. */
TK_API void tk_writer_free(tk_writer *w);

/* Copy every metadata member the reader has made visible and that has not
 * yet been copied (track with *copied, start at 0). */
TK_API int tk_copy_meta(tk_writer *w, const tk_reader *r, size_t *copied);

/* Other output files (tables, reports), written the way trace outputs are:
 * under an unpredictable temporary name beside the path, synced and renamed
 * into place by tk_outfile_close(), so that a reader never sees half a file
 * and a failure leaves the old one. "-" is standard output (stdout is
 * flushed first, so that what the program printed before comes first); a
 * device or a FIFO (/dev/null, a pipe) is written in place, never
 * replaced; a file replaced is treated as tk_writer_open_path() says. */
typedef struct tk_outfile tk_outfile;
/* 0, or an error with tk_outfile_error() set (*out may still need a free). */
TK_API int tk_outfile_open(tk_outfile **out, const char *path);
/* The stream to write to (the caller does not close it). */
TK_API FILE *tk_outfile_stream(tk_outfile *o);
/* Flush, sync and publish: 0, or TK_ERR_IO with the file named in
 * tk_outfile_error() (a full disk, a write error of the stream). A second
 * close after a successful one returns 0. */
TK_API int tk_outfile_close(tk_outfile *o);
TK_API const char *tk_outfile_error(const tk_outfile *o);
/* Frees; without a successful close, nothing is published. */
TK_API void tk_outfile_free(tk_outfile *o);

/* ---- Events and arguments ------------------------------------------- */

/* A self-contained copy in one allocation; free with tk_event_free(). */
TK_API tk_event *tk_event_dup(const tk_event *ev);
TK_API void tk_event_free(tk_event *ev);
/* 1 if both events hold the same fields, strings, args and extra members
 * (two NULLs are equal, NULL and an event are not). */
TK_API int tk_event_equal(const tk_event *a, const tk_event *b);

/* Find a top-level member of a compact JSON object (`args`): its value's
 * text in *val (not NUL-terminated). Returns 0 if found, TK_EOF if absent,
 * TK_ERR_FORMAT if `obj` is not an object. The key is compared with the
 * member's name as written: a name written with escapes ("\u0061") is found
 * under that text. The getters below return the same codes, and
 * TK_ERR_FORMAT when the value is not of their type. */
TK_API int tk_json_obj_find(tk_sv obj, const char *key, tk_sv *val);
TK_API int tk_args_find(const tk_event *ev, const char *key, tk_sv *val);
/* Integer argument (a JSON integer that fits in int64_t). */
TK_API int tk_args_get_int(const tk_event *ev, const char *key, int64_t *out);
/* String argument, decoded into buf: NUL-terminated, cut to cap - 1 bytes
 * (possibly inside a UTF-8 sequence) and still 0; *len is the whole
 * decoded length, so *len >= cap means it was cut. */
TK_API int tk_args_get_str(const tk_event *ev, const char *key, char *buf, size_t cap, size_t *len);

/* Nested integer lists such as "Input Dims": [[8,1024],[],[1024,1024]].
 * Items that are not lists of integers (null, scalars, nested deeper) come
 * back as an item with n == -1. */
typedef struct tk_dims {
	size_t n_items;
	int *item_len;    /* per item: count of integers, or -1 if not a list */
	int64_t **items;  /* per item: pointer into values */
	int64_t *values;  /* backing store */
} tk_dims;
TK_API int tk_args_get_dims(const tk_event *ev, const char *key, tk_dims *out);
TK_API void tk_dims_free(tk_dims *d);

/* ---- Time windows and progress: one face for every operation -------- */

/* A time window on a trace's clock, in ns; each end absolute or counted
 * from the trace's first (earliest) event. What "in the window" means is
 * the operation's: tk_stats and tk_split take the events that start in
 * [lo, hi), tk_merge the events that overlap [lo, hi]. Zeroed = no
 * window. */
typedef struct tk_window {
	int set;            /* 0: no window, everything counts */
	int64_t lo, hi;     /* INT64_MIN / INT64_MAX: an open end */
	int lo_rel, hi_rel; /* 1: that end counts from the first event */
} tk_window;

/* "A:B" as every tool's --window takes it: A and B are times with a unit
 * (ns, us, ms, s, min; a plain number is microseconds, the unit of Chrome
 * trace timestamps), absolute on the trace's clock or, after a '+',
 * counted from the first event; either may be left out for an open end
 * (":2s", "+1s:"). 0, or TK_ERR_ARG with *w untouched. */
TK_API int tk_window_parse(const char *text, tk_window *w);
/* One time or duration in that syntax ("1.5s", "200ms", "1500"), without
 * the '+': ns in *ns. 0 or TK_ERR_ARG. */
TK_API int tk_time_parse(const char *text, int64_t *ns);
/* The window with its relative ends made absolute for a trace whose first
 * event is at first_ts (sums saturate at the open ends). */
TK_API tk_window tk_window_at(const tk_window *w, int64_t first_ts);

/* Progress of a long operation, called now and then on the caller's
 * thread: what it is doing ("reading", "sorting", "writing", or the input
 * being read), the input bytes read so far and the events handled so far. */
typedef void (*tk_progress_fn)(void *ctx, const char *what, uint64_t bytes, uint64_t events);

/* ---- Misc ----------------------------------------------------------- */

TK_API const char *tk_version(void);
/* "zlib 1.2.13" etc. for --version output. */
TK_API const char *tk_dependency_versions(void);
TK_API const char *tk_strerror(int code);
/* Remove every temporary file and directory the library holds at this
 * moment: the temporary names of outputs not yet complete, trace-split's
 * parts before they are published, the sorter's spill files. Only
 * async-signal-safe calls: meant for a SIGINT/SIGTERM handler, which then
 * ends the program (outputs being written are left unfinished). */
TK_API void tk_cleanup_temporaries(void);

#ifdef __cplusplus
}
#endif
#endif
