/* internal.h: private declarations shared by libtracekit's sources. */
#ifndef TK_INTERNAL_H
#define TK_INTERNAL_H

#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <emmintrin.h>
#include <zlib.h>

#include "tracekit/tracekit.h"

#include "core/buf.h"
#include "core/err.h"
#include "core/jscan.h"
#include "core/json_text.h"
#include "core/map.h"
#include "core/strtab.h"
#include "core/tmpreg.h"
#include "core/varint.h"

/* The deepest nesting any reader accepts, whatever tk_reader_opts.max_depth
 * asks: the JSON scanner's stack of open brackets, and the .pftrace reader's
 * recursion through nested annotations (about 1 MiB of C stack at this depth). */
#define TK__MAX_DEPTH 4096

/* ---- sources: bytes from an fd, memory or an archive member, decoded by
 * a stack of input filters (source.c; the filters in formats/) ---- */
#define TK__MAX_STAGES 4

struct tk__ifilter;
struct tk__arc;
/* A base other than an fd or memory (a member of an archive): read()
 * gives > 0 bytes, 0 at the end, < 0 with err set (TK__ERRLEN), and keeps
 * *bytes_in at the bytes read of what lies under it. */
typedef struct tk__base {
	long (*read)(void *ctx, unsigned char *dst, size_t cap, uint64_t *bytes_in, char *err);
	void (*close)(void *ctx);
	void *ctx;
} tk__base;
typedef struct tk__stage {
	const struct tk__ifilter *f; /* NULL: the base */
	void *st;                    /* the filter's state */
	unsigned char *ahead;        /* bytes read ahead for a bid, given out first */
	size_t ahead_len, ahead_pos, ahead_cap;
} tk__stage;

typedef struct tk__src {
	/* the base: an fd, memory, or another (base.read) */
	int fd, own_fd;
	int64_t fd_start; /* the fd's offset at the start: a regular file's, else -1 */
	const unsigned char *mem;
	size_t mem_len, mem_pos;
	tk__base base;
	uint64_t bytes_in; /* bytes read from the base (for a member: the archive's) */
	tk__stage st[TK__MAX_STAGES];
	int n;           /* stages in use, st[0] the base; 0 before init */
	const char *cut; /* a filter whose stream stopped inside a unit: its name */
	int err_named;   /* err names its input already (another base's failure) */
	int err_nomem;   /* err is an allocation's failure, not the input's */
	char err[TK__ERRLEN];
	struct tk__ahead *ahead; /* the thread that decodes ahead (tk__src_read_ahead) */
} tk__src;
void tk__src_init_fd(tk__src *s, int fd, int own);
/* A file opened for reading ("-": standard input, not closed): 0, or
 * TK_ERR_IO with the message in err (TK__ERRLEN) naming path. */
int tk__src_open_file(tk__src *s, const char *path, char *err);
void tk__src_init_mem(tk__src *s, const void *p, size_t n);
/* 1 when the base's bytes can be read again from any offset of its stream
 * (memory, a regular file), with tk__src_pread(). */
int tk__src_can_pread(const tk__src *s);
/* Up to cap bytes of the base's stream from offset off (0 = its first
 * byte): count, 0 at its end, <0 with s->err set. */
long tk__src_pread(tk__src *s, uint64_t off, unsigned char *dst, size_t cap);
/* The base's length where known (memory, a regular file, from where the
 * fd stood at the start), else UINT64_MAX. */
uint64_t tk__src_base_size(const tk__src *s);
/* The same without touching s (several threads at once): < 0 with errno set. */
long tk__src_pread_mt(const tk__src *s, uint64_t off, unsigned char *dst, size_t cap);
/* The message of a read that failed with errno e, into err (TK__ERRLEN). */
void tk__src_failed(char *err, int e);
/* Inflate the top filter's stream on `threads` threads where it can
 * (a gzip member over a file or memory, with at least tk__gz_par_min
 * threads asked): the same bytes, messages and end as on one. */
void tk__src_inflate_threads(tk__src *s, unsigned threads);
/* The threads asked from which a gzip input is inflated on threads
 * (0: TK_GZIP_PARTS from the environment, else 8); tests set it lower. */
extern unsigned tk__gz_par_min;
/* Another base (the source closes it). */
void tk__src_init_base(tk__src *s, const tk__base *b);
/* Reads up to cap decoded bytes of the top stage: >0 bytes, 0 at end, <0
 * error (s->err). */
long tk__src_read(tk__src *s, unsigned char *dst, size_t cap);
/* The same from stage `level` (filters read the stage below them). */
long tk__src_read_at(tk__src *s, int level, unsigned char *dst, size_t cap);
/* Decode on a thread of the source's own, ahead of tk__src_read(), when
 * a filter decodes (gzip) over a file, memory or a pipe: the caller then
 * parses while the next bytes inflate. The bytes, the end and the error
 * are the same as without it, and so are s->cut and s->err once
 * tk__src_read() has returned 0 or < 0. Without a thread (none starts)
 * the caller decodes, as before. Call once the source is in its final
 * place (a thread holds its address). */
void tk__src_read_ahead(tk__src *s);
/* No thread starts where fewer of the base's bytes than this are left to
 * read (memory, a regular file): 256 KiB; tests lower it. */
extern size_t tk__ahead_min;
/* Bytes read from the base for the bytes tk__src_read() has given out. */
uint64_t tk__src_bytes_in(const tk__src *s);
/* Stacks input filters while one bids on the top's first bytes. An
 * archive's bid stops the stacking: *archive says so (1), and the stack
 * is left as it is for tk__arc_open. 0 or <0 (s->err). */
int tk__src_detect(tk__src *s, int *archive);
/* The filters stacked, as name suffixes (".gz"), into buf. */
void tk__src_suffixes(const tk__src *s, char *buf, size_t cap);
void tk__src_close(tk__src *s);

/* ---- the generic reader, shared by all input formats ---- */
typedef struct tk__meta {
	tk_sv key;  /* interned */
	char *json; /* owned */
	size_t json_len;
	int after;
} tk__meta;

struct tk__format;

struct tk_reader {
	tk__err err; /* code: the sticky error */
	tk__src src;
	char *name; /* "rank0.json", "logs.tar.gz//rank3/trace.json" */
	tk_reader_opts opts;
	const struct tk__format *fmt;
	void *fs; /* format state */
	char fmtname[32];
	/* an archive's first trace, opened without naming the member: at the
	 * end, no other member of arc (a reference) may be a trace */
	int arc_only;
	struct tk__arc *arc;

	/* decoded input window: buf[pos..end) unread, TK__PAD zero bytes after end */
	unsigned char *buf;
	size_t cap, pos, end;
	int eof;          /* source exhausted */
	int src_failed;   /* the source failed after the window's last bytes: said at the next read */
	uint64_t base;    /* decoded offset of buf[0] */
	uint64_t line;    /* 1-based line number at buf[0] */
	uint64_t line_at; /* decoded offset just after the last newline before buf[0] */

	tk__strtab strs;
	tk_event ev;
	tk__buf args, extra, scratch;
	/* lazy args (tk__reader_set_lazy_args): the last event's args object was
	 * only skipped; it lies at lazy_at in buf until the next call */
	int lazy_args, lazy_pending, lazy_tried;
	const unsigned char *lazy_at;
	size_t lazy_clen;

	tk__meta *meta;
	size_t n_meta, meta_cap;
	int bare_array;

	/* the threads that parse ahead (par.c; opts.threads > 1), NULL when
	 * the caller parses alone */
	struct tk__par *par;
	int par_tried; /* started once, or found unable to start */
	/* opts.note_fn: the note of the event handed out last, a thread's
	 * (par.c sets note_par) or written here into note_buf */
	const void *note_par, *note;
	unsigned char *note_buf;
	/* opts.render_json: the text of the event handed out last, written on
	 * the thread that parsed it (par.c, tkb.c set both), else NULL */
	const struct tk__rend *rend_par;
	const char *rend_text;
	const tk_event *last_ev;

	tk_reader_stats stats;
};

/* A reader on an open source (taken: *src is left empty), named `name`;
 * archives are resolved (member: a member's path, or NULL for the first
 * trace). For tk_reader_open_* and tk_inputs. */
int tk__reader_open_src(tk_reader **out, tk__src *src, const char *name, const char *member,
                        const tk_reader_opts *opts);

/* JSON input: skip "args" objects instead of canonicalizing them; an event
 * whose args were skipped comes without them, and tk__reader_lazy_args()
 * tells so until the next event. For a first pass that reads the input
 * again in full later: the skipped text is not checked beyond its brackets
 * and strings. Any other format ignores the setting. */
void tk__reader_set_lazy_args(tk_reader *r, int on);
/* 1 if the last event's args were skipped; *clen: their canonical length. */
int tk__reader_lazy_args(const tk_reader *r, size_t *clen);
/* Canonicalize the skipped args of the last event into it (ev->args);
 * 0 or the reader's error. */
int tk__reader_take_args(tk_reader *r);

/* Make at least `need` unread bytes available (fewer only at end of input).
 * May move buf: callers keep offsets, not pointers. Returns 0 or error. */
int tk__reader_fill(tk_reader *r, size_t need);
/* Grow the window by reading more input; keeps buf[pos..end). Returns 1 if
 * bytes were added, 0 at end of input, <0 error. */
int tk__reader_more(tk_reader *r);
/* After a TK_ERR_FORMAT error of r: where a filter (gzip) decoded the text
 * and the rest of its stream is corrupt, the error says that first (the
 * rest is decoded, not parsed). Every path that returns such an error to
 * the caller calls it: tk_reader_next, the lazy args' tk__reader_take_args. */
void tk__reader_blame_filter(tk_reader *r);
/* Record an error "name:line:col: (byte N) message" for decoded offset `at`. */
int tk__reader_fail_at(tk_reader *r, int code, uint64_t at, const char *fmt, ...) TK__PRINTF(4, 5);
/* line and column (1-based) of decoded offset `at`, which must be >= base. */
void tk__reader_linecol(const tk_reader *r, uint64_t at, uint64_t *line, uint64_t *col);
int tk__reader_add_meta(tk_reader *r, const char *key, size_t klen, const char *json, size_t jlen,
                        int after);
/* Line accounting at buf[n] (n <= end): its 1-based line and the decoded
 * offset where that line starts. */
void tk__reader_lines_at(const tk_reader *r, size_t n, uint64_t *line, uint64_t *line_at);
/* The newlines in p[0..n). */
uint64_t tk__count_nl(const unsigned char *p, size_t n);
/* A reader of main's format, options and name with no source and no
 * window, for a thread that parses blocks of main's input (par.c); NULL
 * when out of memory. Free with tk_reader_free(). */
tk_reader *tk__reader_worker(const tk_reader *main);

/* The sorter's part of an operation's memory budget (--memory: everything
 * the operation holds): all but an eighth, at most 32 MiB, that readers,
 * writer threads, batches and tables use besides it. */
size_t tk__sorter_share(size_t total);

/* The reader's first input window (reader.c): tests and fuzzers make it
 * smaller, so that a small input is read past it; 0: 1 MiB. */
extern size_t tk__reader_window0;
/* Tests set this to make every thread the library starts fail to start,
 * so that the paths without one (the caller does the work) are exercised. */
extern int tk__no_threads;
/* The blocks the .pftrace reader reads ahead for its threads (pftrace.c):
 * tests make them smaller; 0: 1 MiB. */
extern size_t tk__pf_block_bytes;
/* The text the .pftrace reader's threads render for one block, at most,
 * about: tests make it smaller; 0: 16 MiB. tk__pftrace_left(): the
 * packets the threads met with their block's texts full and did not
 * render (with any the caller had taken already), once the threads have
 * ended (at the reader's end). */
extern size_t tk__pf_block_text;
uint64_t tk__pftrace_left(const tk_reader *r);
/* The most threads that reader uses (the caller's counted), whatever
 * opts.threads asks: tests allow more; 0: 4, at most 64. */
extern unsigned tk__pf_max_threads;
/* The ops (packets, about) of one chunk of the .pftrace writer, each
 * encoded from the sequence's state cleared: tests make them fewer, so
 * that a small trace has many; 0: 65,536 (and at most 8 MiB of events). */
extern size_t tk__pf_chunk_ops;
/* Tests: the encoding threads ("tk-encode", the caller not counted) that
 * the last .pftrace writer to close started. */
extern unsigned tk__pf_encoders;
/* pthread_create, unless tests set tk__no_threads (core/workers.c starts
 * every thread of the library through it); `name` (at most 15
 * characters) is the thread's, as top -H, perf and /proc show it:
 * tk-parse (a reader's parse threads), tk-input (the input read and
 * inflated ahead), tk-inflate (one gzip stream inflated in parts),
 * tk-read (events read ahead for a tool), tk-nest (the stats' nesting),
 * tk-sort, tk-write (output deflated and written), tk-encode (a .pftrace
 * output's chunks encoded). */
int tk__thread_start(pthread_t *th, void *(*fn)(void *), void *arg, const char *name);
/* Tests set this to make the gzip writer's walk of libdeflate's blocks
 * refuse every one, so that its way out (zlib deflates them) is exercised. */
extern int tk__gzip_no_walk;
/* Processors this process may run on (its affinity mask), at least 1. */
int tk__cpus(void);
/* The CRC-32 of gzip (zlib's crc32()) of p[0..n) after `crc`: ISA-L's where built in. */
uint32_t tk__crc32(uint32_t crc, const void *p, size_t n);

/* a + b and a - b held at INT64_MIN / INT64_MAX instead of overflowing:
 * times near the ends of int64 (an event's end, a rank's clock shift). */
static inline int64_t tk__sat_add(int64_t a, int64_t b)
{
	int64_t r;
	return __builtin_add_overflow(a, b, &r) ? (b > 0 ? INT64_MAX : INT64_MIN) : r;
}
static inline int64_t tk__sat_sub(int64_t a, int64_t b)
{
	int64_t r;
	return __builtin_sub_overflow(a, b, &r) ? (b < 0 ? INT64_MAX : INT64_MIN) : r;
}
/* memset(ev, 0, sizeof *ev) as plain 16-byte stores, for the readers that
 * clear an event for every one they decode: compilers make that memset a
 * `rep stos`, whose start costs more than the stores (about 6% of the JSON
 * parse). The empty asm keeps the loop from being made a memset again. */
static inline void tk__event_zero(tk_event *ev)
{
	unsigned char *d = (unsigned char *)ev;
	const __m128i z = _mm_setzero_si128();
	size_t i = 0;
	for (; i + 16 <= sizeof *ev; i += 16) {
		_mm_storeu_si128((__m128i *)(void *)(d + i), z);
		__asm__("" : : "r"(d) : "memory");
	}
	memset(d + i, 0, sizeof *ev - i);
}
/* The end of an event that starts at ts and lasts dur (a negative dur counts as 0). */
static inline int64_t tk__ev_end(int64_t ts, int64_t dur)
{
	return dur > 0 ? tk__sat_add(ts, dur) : ts;
}

/* ---- output sinks: a file (temporary name, renamed when complete) or an
 * fd, through an optional output filter (formats/), written in blocks by
 * threads of the sink's own (sink.c) ---- */
struct tk__ofilter;
typedef struct tk__sink {
	int fd;
	int own_fd;
	char *path;    /* final path (the name for fd output) */
	char *tmppath; /* temporary name while writing */
	int tmp_hold;  /* tmppath's handle in tmpreg.c (0: none) */
	const struct tk__ofilter *f; /* NULL: the bytes as they are */
	void *fst;                   /* the filter's state */
	void *enc;                   /* the caller's encoder when there are no threads */
	unsigned char *ctx;          /* the caller's block context then */
	tk__buf pend; /* bytes accepted, not yet handed over as a block */
	tk__buf fbuf; /* the caller's encoded block, header or trailer */
	/* Bytes of output: exact without a filter; with one, exact only after
	 * tk__sink_sync() (synced_out). */
	uint64_t bytes_out;
	uint64_t synced_out; /* bytes_out when every block was last written */
	uint64_t raw_in;     /* bytes accepted */
	uint64_t raw_synced; /* raw_in then */
	struct tk__aio *aio; /* threads that encode and write; NULL = the caller does */
	int may_aio;         /* start them with the first full block */
	unsigned threads;    /* how many (tk__sink_async) */
	char err[TK__ERRLEN];
} tk__sink;
/* f: an output filter or NULL; level: the filter's (0 = its default). */
int tk__sink_open_path(tk__sink *s, const char *path, const struct tk__ofilter *f, int level);
int tk__sink_open_fd(tk__sink *s, int fd, const char *name, const struct tk__ofilter *f, int level);
/* Move encoding and write() to threads of the sink's own (a filter:
 * `threads` of them, 0 = one per processor, at most TK__SINK_MAX_THREADS;
 * without one, a single thread), so that they overlap with the caller's
 * work; they start with the first block of 1 MiB, so small outputs never
 * have them. Without threads the caller encodes and writes, to the same
 * bytes: nothing fails. */
#define TK__SINK_MAX_THREADS 64
void tk__sink_async(tk__sink *s, unsigned threads);
/* The gzip threads (tk_writer_opts.threads, 0 = one per processor) of a
 * writer under a memory budget (tk_merge, tk_split): at most 8, so that
 * their blocks in flight (about 2.2 MiB a thread) stay within the budget's
 * reserve of at most 32 MiB. */
unsigned tk__budget_writer_threads(unsigned threads);
int tk__sink_write(tk__sink *s, const void *p, size_t n);
/* Appends b's bytes and takes its memory: b comes back empty, possibly
 * with the capacity of an earlier buffer. */
int tk__sink_give(tk__sink *s, tk__buf *b);
/* Hand over what is pending and wait until every block is written, so
 * that the size is exact (a filter's block ends there). */
int tk__sink_sync(tk__sink *s);
/* The most bytes the finished output can have if `extra` more bytes are
 * accepted: exact without a filter or right after a sync, else the
 * filter's bound. */
uint64_t tk__sink_bound(const tk__sink *s, uint64_t extra);
/* 1 when tk__sink_bound() is exact for what was accepted so far. */
int tk__sink_exact(const tk__sink *s);
/* Bytes of output so far (with a filter: as far as written). */
static inline uint64_t tk__sink_bytes(const tk__sink *s)
{
	return s->bytes_out;
}
/* Finish the filter, close, rename into place. */
int tk__sink_finish(tk__sink *s);
/* Close and remove the temporary file if not finished. */
void tk__sink_discard(tk__sink *s);

/* ---- the generic writer ---- */
struct tk_writer {
	tk__err err; /* code: the sticky error */
	tk__sink sink;
	const struct tk__format *fmt;
	void *fs;
	tk__buf out; /* pending output, flushed to the sink in large blocks */
	int closed;
	uint64_t repaired;
	uint64_t events;
	uint64_t max_bytes; /* budget for the finished output, 0 = none */
	tk__meta *meta;
	size_t n_meta, meta_cap;
	tk_writer_opts opts; /* as resolved by tk_writer_open_* */
};
int tk__writer_flush(tk_writer *w);

/* The key an NCCL collective kernel is known by (trace-merge's clock
 * alignment, trace-stats -t collectives): its "Collective name" argument
 * when it has one, else the kernel name up to its parameter list; 1 with
 * the key in buf (NUL-terminated, *len bytes), 0 for any other event
 * (stats_coll.c). */
int tk__coll_key(const tk_event *ev, char *buf, size_t cap, size_t *len);

/* ev copied into b, at an offset aligned for it (*off), every string of
 * it after it: kept there while b grows or moves, and read back, its
 * pointers into b, by tk__event_unpack() (pftrace.c's chunks). */
int tk__event_pack(tk__buf *b, const tk_event *ev, size_t *off);
void tk__event_unpack(const tk__buf *b, size_t off, tk_event *out);
/* Events copied into a batch for another thread (pump.c, par.c): *dst is
 * ev with its args and extra appended to text, their pointers offsets into
 * it (the text may move as it grows) until tk__batch_fix() makes them
 * pointers again. 0 or TK_ERR_NOMEM. */
int tk__batch_copy(tk_event *dst, const tk_event *ev, tk__buf *text);
void tk__batch_fix(tk_event *ev, size_t n, const tk__buf *text);
/* The reader's note (opts->note_fn) on each of a batch's n events, on the
 * thread that parsed them, into *notes (room for *cap events, grown as
 * needed). Without room (out of memory) *notes is NULL and the reader
 * writes each note as it hands the event out. */
void tk__batch_notes(const tk_reader_opts *o, const tk_event *ev, size_t n, unsigned char **notes, size_t *cap,
                     tk__buf *summary);
/* stats.c: with note_fn tk_stats_note, after the notes: the tables' part of
 * the batch's n events under the options ctx (a tk_stats_opts) into out,
 * the first event's note pointing at it (tk_stats_add_from takes it whole);
 * nothing where those options build a table that needs every event in
 * turn, or on failure. */
void tk__stats_batch(const void *ctx, const tk_event *ev, size_t n, unsigned char *notes, tk__buf *out);

/* An event's JSON text as the JSON writer writes it, written ahead on the
 * thread that parsed it (opts.render_json): at text + off, len bytes, with
 * `repaired` strings repaired; len TK__NO_TEXT where the writer formats
 * the event itself (an error to report at its place, out of memory). */
typedef struct tk__rend {
	uint64_t off;
	uint32_t len, repaired;
} tk__rend;
#define TK__NO_TEXT UINT32_MAX
/* The JSON members of ev as the JSON writer writes them, without braces
 * (formats/json.c), appended to o: 0, or an error (o as it was), where the
 * writer would stop or report; the strings repaired in *repaired. */
int tk__json_event_text(tk__buf *o, const tk_event *ev, uint64_t *repaired);
/* With opts->render_json, the texts of a batch's n events into *text
 * (emptied first) and (*rend)[0, n) (room for *cap, grown as needed).
 * Without room for the table (out of memory) *rend is NULL, and the
 * writer formats the events itself. */
void tk__batch_render(const tk_reader_opts *o, const tk_event *ev, size_t n, tk__buf *text, tk__rend **rend,
                      size_t *cap);
/* Whether a reader's thread writes the texts of the batch it starts on
 * (opts.render_json): only while the caller is behind, with `done` batches
 * parsed and not handed out yet, the current one counted (2 or more), and
 * the threads ahead, with no other batch waiting to be parsed (`waiting`
 * 0); never on the caller's own thread (it would only format them twice).
 * The output is the same either way. Tests set tk__render_always. */
int tk__render_now(const tk_reader_opts *o, int on_caller, size_t done, size_t waiting);
extern int tk__render_always;
/* The text written ahead for ev, the event r handed out last: 1 with it in
 * *t and *repaired, else 0. */
int tk__reader_text(const tk_reader *r, const tk_event *ev, tk_sv *t, uint32_t *repaired);

/* 1 if both ids have the same kind and value. */
int tk__id_eq(const tk_id *a, const tk_id *b);

/* The K of a merged trace's pid scheme "rank*K+pid", from the JSON of its
 * "tracekitMerge" metadata member (merge_write.c writes both): 0 with
 * *span = K, or TK_EOF when there is none. */
int tk__merge_pid_span(tk_sv merge_meta, int64_t *span);

#endif
