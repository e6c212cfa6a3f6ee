/* formats.h: the formats layer: trace formats (a reader and a writer each), input filters that decode the bytes under a reader, output filters that encode a writer's bytes, and the tables that list them (table.c). docs/formats.md says how to add one. */
#ifndef TK_FORMATS_H
#define TK_FORMATS_H

#include "internal.h"

/* ---- trace formats ----------------------------------------------------
 * One file per format (json.c, tkb.c, ...) defines a tk__format and adds
 * one line to the table in table.c. Readers bid on the first decoded bytes
 * of their input; writers are chosen by tk_format_from_name(). */

typedef struct tk__fmt {
	/* Bid on the first decoded bytes (at least TK__BID_BYTES when the input
	 * has them): higher wins, 0 = not this format. */
	int (*bid)(const unsigned char *p, size_t n);
	int (*open)(tk_reader *r);
	int (*next)(tk_reader *r, const tk_event **ev);
	void (*free)(tk_reader *r);
} tk__fmt;

#define TK__WSTATE_MAX 64
typedef struct tk__wfmt {
	size_t state_size; /* bytes of w->fs, saved and restored to undo a refused write; 0 = no byte budget */
	int (*open)(tk_writer *w);
	int (*add_meta)(tk_writer *w, tk_sv key, tk_sv json, int after);
	/* bytes close() will still add (the budget reserves them) */
	uint64_t (*close_bytes)(const tk_writer *w);
	int (*write)(tk_writer *w, const tk_event *ev);
	int (*close)(tk_writer *w);
	void (*free)(tk_writer *w);
	/* an event as its text was written ahead (tk__json_event_text, on a
	 * reader's thread), with the strings repaired on the way; NULL: the
	 * format has no such text */
	int (*write_text)(tk_writer *w, const char *p, size_t n, uint64_t repaired);
} tk__wfmt;

enum {
	TK__FMT_WHOLE_GZIP = 1, /* its output may be gzip-compressed as a whole (.gz) */
	TK__FMT_BINARY = 2      /* not text: errors name a byte, not a line and column */
};

typedef struct tk__format {
	int id;           /* TK_FORMAT_*: pinned, never reused */
	const char *name; /* "json": --to NAME, tk_reader_format() */
	/* file name endings of the format, longest first ("x.json"); a name
	 * ending in one (with a filter's suffix after it: "x.json.gz") is a
	 * trace in an archive and picks the format for output */
	const char *const *suffixes;
	unsigned flags;     /* TK__FMT_* */
	const tk__fmt *rd;  /* NULL: not read */
	const tk__wfmt *wr; /* NULL: not written */
} tk__format;

/* The formats whose files look at their own descriptor (to tell their
 * reader from another's). */
extern const tk__format tk__format_json, tk__format_tkb;

/* The formats, in the order of the table; NULL past the end. */
const tk__format *tk__format_at(size_t i);
const tk__format *tk__format_by_id(int id);
struct tk__ofilter;
/* The written format a file name stands for: its ending is a format's
 * suffix, after an output filter's suffix is taken off. *of: the filter
 * whose suffix ends the name, else NULL. NULL when no format matches. */
const tk__format *tk__format_for_output(const char *name, const struct tk__ofilter **of);
/* 1 if a member name looks like a trace: it ends in a read format's
 * suffix, possibly followed by an input filter's suffix. */
int tk__is_trace_name(const char *name);
/* The length of a file name without its trace suffixes ("x.json.gz" -> 1). */
size_t tk__name_stem(const char *name);

/* ---- input filters ----------------------------------------------------
 * A filter decodes the stream of the stage below it (see source.c): gzip.c
 * inflates; archive.c is a filter of its own kind, bidding here too but
 * opening members instead of stacking (tk__arc). */

#define TK__BID_BYTES 512 /* bytes offered to a bid when the stream has them */

typedef struct tk__ifilter {
	const char *name;   /* "gzip": in messages ("the gzip stream is cut off") */
	int archive;        /* 1: an archive (archive.c): its members are opened, not stacked */
	const char *suffix; /* ".gz": a member name ending in it is decoded by it */
	/* Bid on the first bytes of the stream: > 0 if this filter decodes it. */
	int (*bid)(const unsigned char *p, size_t n);
	/* Set up stage `level` of s (its state in s->st[level].st). */
	int (*open)(tk__src *s, int level);
	/* Up to cap decoded bytes, read from stage level - 1 with
	 * tk__src_read_at(): > 0 bytes, 0 at the end, < 0 error (s->err). At the
	 * end of a stream that stopped inside one of its units, it sets
	 * s->cut to its name. */
	long (*read)(tk__src *s, int level, unsigned char *dst, size_t cap);
	void (*close)(void *st);
	/* Optional: decode on `threads` threads from here on where it can
	 * (tk__src_inflate_threads), with the same bytes, end and errors. */
	void (*threads)(tk__src *s, int level, unsigned threads);
} tk__ifilter;

/* The input filters, in the order of the table; NULL past the end. */
const tk__ifilter *tk__ifilter_at(size_t i);

/* ---- output filters ---------------------------------------------------
 * An output filter encodes a writer's output block by block on the sink's
 * threads (sink.c): each block of about 1 MiB is prepared in order on the
 * caller's thread (prepare), encoded on any thread (encode), and accounted
 * in order once written (written). */

typedef struct tk__ofilter {
	const char *name;   /* "gzip" */
	const char *suffix; /* ".gz" */
	size_t ctx_size;    /* bytes of a block's context (prepare -> encode -> written) */
	/* The filter's state for one output (level 0 = its default); the
	 * header bytes go to hdr. NULL with err set on failure. */
	void *(*open)(int level, tk__buf *hdr, char *err);
	void (*close)(void *st);
	/* Per thread: an encoder (NULL with err set on failure). */
	void *(*enc_new)(void *st, char *err);
	void (*enc_free)(void *enc);
	/* In order, on the caller's thread, before the block is handed over. */
	void (*prepare)(void *st, void *ctx, const tk__buf *raw);
	/* raw -> out (out is the encoder's to fill); 0 or an error with err set. */
	int (*encode)(void *enc, void *ctx, const tk__buf *raw, tk__buf *out, char *err);
	/* In order, after the block is written. */
	void (*written)(void *st, const void *ctx, size_t raw_len);
	/* The end of the output after every block is written: trailer bytes. */
	int (*finish)(void *st, uint64_t raw_total, tk__buf *out, char *err);
	/* The most bytes that n more input bytes and the end can add after a
	 * point where every block is written (the byte budget's bound). */
	uint64_t (*bound)(uint64_t n);
} tk__ofilter;

const tk__ofilter *tk__ofilter_at(size_t i);
const tk__ofilter *tk__ofilter_by_name(const char *name);

#endif
