/* tkb.h: the compact binary event stream (.tkb): collector-side writer and file information. */
#ifndef TRACEKIT_TKB_H
#define TRACEKIT_TKB_H

#include "tracekit/tracekit.h"

#ifdef __cplusplus
extern "C" {
#endif

/* docs/tkb-format.md describes the bytes. Any tk_reader reads a .tkb file
 * (detected by its magic); tk_writer writes one for TK_FORMAT_TKB, where
 * tk_writer_opts.gzip = 1 asks for zlib-compressed chunks instead of a
 * gzip layer. The API below is for producers inside a traced process. */

/* Clock readings taken together: the GPU/CUPTI timestamp (cuptiGetTimestamp),
 * CLOCK_REALTIME and CLOCK_MONOTONIC, all in nanoseconds. */
typedef struct tk_tkb_anchor {
	int64_t gpu_ns;
	int64_t realtime_ns;
	int64_t monotonic_ns;
} tk_tkb_anchor;

/* Reads CLOCK_REALTIME and CLOCK_MONOTONIC into *a next to `gpu_ns`. */
TK_API void tk_tkb_anchor_now(tk_tkb_anchor *a, int64_t gpu_ns);

/* What the file header says about its producer. */
typedef struct tk_tkb_header {
	/* Strings and the anchor are read while the writer opens (copied into
	 * the file header). */
	const char *producer; /* e.g. "tracekit-collector 0.1"; NULL = "libtracekit <version>" */
	const char *host;     /* NULL = unknown */
	int64_t pid;          /* -1 = unknown */
	int64_t rank;         /* -1 = unknown */
	int64_t world_size;   /* -1 = unknown */
	const tk_tkb_anchor *start; /* clocks at the start; NULL = none */
} tk_tkb_header;

typedef struct tk_tkb_opts {
	int compress;       /* 1 = zlib-compress each chunk */
	int level;          /* zlib level 1..9, 0 = 1 (fast; level 6 saves about 10% more) */
	size_t chunk_bytes; /* events are cut into chunks of about this many encoded bytes; 0 = 256 KiB */
} tk_tkb_opts;

/* ---- per-thread event buffers ----------------------------------------
 * A buffer holds up to `max_events` events and an arena of `arena_bytes`
 * for their strings, args and extra text, all allocated by tk_tkb_buf_new.
 * tk_tkb_buf_append copies the event into the buffer: it allocates nothing,
 * takes no lock and makes no system call, so it may run on the hot path of
 * any thread as long as each thread appends to its own buffer. A full
 * buffer is handed to tk_tkb_writer_submit (from any thread), which empties
 * it for reuse. */
typedef struct tk_tkb_buf tk_tkb_buf;

TK_API tk_tkb_buf *tk_tkb_buf_new(size_t max_events, size_t arena_bytes);
/* TK_OK, or TK_ERR_LIMIT when the event does not fit (the buffer is then
 * unchanged: submit it and append again; an event larger than the whole
 * arena never fits), TK_ERR_ARG for a NULL argument. */
TK_API int tk_tkb_buf_append(tk_tkb_buf *b, const tk_event *ev);
TK_API size_t tk_tkb_buf_count(const tk_tkb_buf *b);
TK_API void tk_tkb_buf_reset(tk_tkb_buf *b);
TK_API void tk_tkb_buf_free(tk_tkb_buf *b);

/* ---- the writer that turns buffers into chunks ------------------------
 * The file is created (truncated) under its real name and only ever
 * appended to: each submit ends with whole chunks written by write(2), so
 * a process that dies at any moment leaves a file that reads up to its
 * last complete chunk. All functions are thread-safe (one mutex per
 * writer); none prints or aborts. Use from a CUPTI bufferCompleted
 * callback: convert the activity records into a tk_tkb_buf, then submit. */
typedef struct tk_tkb_writer tk_tkb_writer;

TK_API int tk_tkb_writer_open(tk_tkb_writer **out, const char *path, const tk_tkb_header *h,
                              const tk_tkb_opts *opts);
/* Writes to fd, which the writer does not close. */
TK_API int tk_tkb_writer_open_fd(tk_tkb_writer **out, int fd, const char *name,
                                 const tk_tkb_header *h, const tk_tkb_opts *opts);
/* A top-level metadata member (`json` is one JSON value), written with the
 * next chunk. after_events: 1 if it belongs after "traceEvents" in JSON. */
TK_API int tk_tkb_writer_add_meta(tk_tkb_writer *w, tk_sv key, tk_sv json, int after_events);
/* Encodes the buffer's events into chunks, appends them to the file and
 * empties the buffer (also on failure, so the caller can go on). */
TK_API int tk_tkb_writer_submit(tk_tkb_writer *w, tk_tkb_buf *b);
/* Records clock anchors taken during the run (written as an anchor chunk). */
TK_API int tk_tkb_writer_anchor(tk_tkb_writer *w, const tk_tkb_anchor *a);
/* Writes the end anchors (may be NULL) and the end chunk, closes the file. */
TK_API int tk_tkb_writer_close(tk_tkb_writer *w, const tk_tkb_anchor *end);
TK_API const char *tk_tkb_writer_error(const tk_tkb_writer *w);
TK_API uint64_t tk_tkb_writer_events(const tk_tkb_writer *w);
TK_API void tk_tkb_writer_free(tk_tkb_writer *w);

/* ---- what a reader learned from a .tkb file -------------------------- */
typedef struct tk_tkb_info {
	unsigned version_major, version_minor;
	tk_sv producer, host; /* ptr NULL when absent */
	int64_t pid, rank, world_size; /* -1 when absent */
	int has_start, has_end;
	tk_tkb_anchor start, end; /* end: from the end anchor chunk, once read */
	int complete;          /* the end chunk was read: the writer finished */
	uint64_t bad_chunks;   /* chunks skipped for a CRC failure or damage */
	uint64_t skipped_bytes; /* bytes skipped while resynchronising */
	uint64_t lost_events;  /* events in skipped chunks, plus events that used
	                          strings from a skipped chunk */
} tk_tkb_info;

/* TK_OK, or TK_ERR_ARG when r is not reading a .tkb file. The strings live
 * as long as the reader; the counters grow as reading proceeds. */
TK_API int tk_reader_tkb_info(const tk_reader *r, tk_tkb_info *out);

#ifdef __cplusplus
}
#endif
#endif
