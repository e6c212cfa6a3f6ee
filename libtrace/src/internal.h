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
#include "core/varint.h"

/* ---- sources: bytes from fd / memory, gzip layer detected from the bytes ---- */
typedef struct tk__src {
	int fd;
	int own_fd;
	const unsigned char *mem;
	size_t mem_len, mem_pos;
	int gz;      /* gzip layer active */
	int gz_done; /* inflate saw the end and no further member follows */
	int gz_truncated; /* the gzip stream stopped inside a member */
	z_stream z;
	unsigned char *zin;
	size_t zin_cap;
	int eof_raw;
	uint64_t bytes_in;
	char err[TK__ERRLEN];
} tk__src;
/* Reads up to cap decoded bytes: >0 bytes, 0 at end, <0 error (src->err). */
long tk__src_read(tk__src *s, unsigned char *dst, size_t cap);
void tk__src_close(tk__src *s);

/* ---- the generic reader, shared by all input formats ---- */
typedef struct tk__meta {
	tk_sv key;  /* interned */
	char *json; /* owned */
	size_t json_len;
	int after;
} tk__meta;

struct tk__fmt;

struct tk_reader {
	tk__err err; /* code: the sticky error */
	tk__src src;
	char *name;
	tk_reader_opts opts;
	const struct tk__fmt *fmt;
	void *fs; /* format state */
	char fmtname[16];

	/* decoded input window: buf[pos..end) unread, TK__PAD zero bytes after end */
	unsigned char *buf;
	size_t cap, pos, end;
	int eof;          /* source exhausted */
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

	tk_reader_stats stats;
};

typedef struct tk__fmt {
	const char *name;
	/* Bid on the first decoded bytes: higher wins, 0 = not this format. */
	int (*bid)(const unsigned char *p, size_t n);
	int (*open)(tk_reader *r);
	int (*next)(tk_reader *r, const tk_event **ev);
	void (*free)(tk_reader *r);
} tk__fmt;

extern const tk__fmt tk__fmt_json;
extern const tk__fmt tk__fmt_tkb;

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
/* Record an error "name:line:col: (byte N) message" for decoded offset `at`. */
int tk__reader_fail_at(tk_reader *r, int code, uint64_t at, const char *fmt, ...) TK__PRINTF(4, 5);
/* line and column (1-based) of decoded offset `at`, which must be >= base. */
void tk__reader_linecol(const tk_reader *r, uint64_t at, uint64_t *line, uint64_t *col);
int tk__reader_add_meta(tk_reader *r, const char *key, size_t klen, const char *json, size_t jlen,
                        int after);

/* Tests set this to make every thread the library starts fail to start,
 * so that the paths without one (the caller does the work) are exercised. */
extern int tk__no_threads;
int tk__thread_start(pthread_t *th, void *(*fn)(void *), void *arg);

/* ---- output sinks: file / fd, optional gzip; temp file + rename ---- */
typedef struct tk__sink {
	int fd;
	int own_fd;
	char *path;     /* final path (NULL for fd output) */
	char *tmppath;  /* temporary name while writing */
	int gz, level;
	tk__buf pend; /* bytes accepted, not yet handed over as a block */
	/* gzip (see sink.c): the caller's compressor when there are no threads,
	 * its output, the crc of what is written, the dictionary of the next
	 * block (the last 32 KiB handed over) */
	z_stream z;
	int z_init;
	tk__buf zbuf;
	uint32_t crc;
	unsigned char *dict;
	size_t dict_len;
	/* Bytes of output: exact for plain output; with gzip, exact only after
	 * tk__sink_sync() (synced_out). */
	uint64_t bytes_out;
	uint64_t synced_out; /* bytes_out when every block was last written */
	uint64_t raw_in;     /* uncompressed bytes accepted */
	uint64_t raw_synced; /* raw_in then */
	struct tk__aio *aio; /* threads that compress and write; NULL = the caller does */
	int may_aio;         /* start them with the first full block */
	char err[TK__ERRLEN];
} tk__sink;
int tk__sink_open_path(tk__sink *s, const char *path, int gz, int level);
int tk__sink_open_fd(tk__sink *s, int fd, const char *name, int gz, int level);
/* Move compression and write() to threads of the sink's own (gzip: one
 * per processor, at most 8), so that they overlap with the caller's work;
 * they start with the first block of 1 MiB, so small outputs never have
 * them. Without threads the caller compresses and writes, to the same
 * bytes: nothing fails. */
void tk__sink_async(tk__sink *s);
int tk__sink_write(tk__sink *s, const void *p, size_t n);
/* Appends b's bytes and takes its memory: b comes back empty, possibly
 * with the capacity of an earlier buffer. */
int tk__sink_give(tk__sink *s, tk__buf *b);
/* Hand over what is pending and wait until every block is written, so
 * that bytes_out and synced_out cover every byte accepted. */
int tk__sink_sync(tk__sink *s);
/* Finish compression, fsync-free close, rename into place. */
int tk__sink_finish(tk__sink *s);
/* Close and remove the temporary file if not finished. */
void tk__sink_discard(tk__sink *s);

/* ---- the generic writer ---- */
struct tk__wfmt;
struct tk_writer {
	tk__err err; /* code: the sticky error */
	tk__sink sink;
	const struct tk__wfmt *fmt;
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
#define TK__WSTATE_MAX 64
typedef struct tk__wfmt {
	const char *name;
	size_t state_size; /* bytes of w->fs, saved and restored to undo a refused write */
	int (*open)(tk_writer *w);
	int (*add_meta)(tk_writer *w, tk_sv key, tk_sv json, int after);
	/* bytes close() will still add (the budget reserves them) */
	uint64_t (*close_bytes)(const tk_writer *w);
	int (*write)(tk_writer *w, const tk_event *ev);
	int (*close)(tk_writer *w);
	void (*free)(tk_writer *w);
} tk__wfmt;
extern const tk__wfmt tk__wfmt_json;
extern const tk__wfmt tk__wfmt_tkb;
int tk__writer_flush(tk_writer *w);

/* 1 if both ids have the same kind and value. */
int tk__id_eq(const tk_id *a, const tk_id *b);

#endif
