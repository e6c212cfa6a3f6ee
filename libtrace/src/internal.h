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

#define TK__ERRLEN 512
#define TK__PAD 64 /* readable zero bytes kept after buffered data */

#if defined(__GNUC__)
#define TK__LIKELY(x) __builtin_expect(!!(x), 1)
#define TK__UNLIKELY(x) __builtin_expect(!!(x), 0)
#define TK__PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define TK__LIKELY(x) (x)
#define TK__UNLIKELY(x) (x)
#define TK__PRINTF(a, b)
#endif

/* ---- growable byte buffer ---- */
typedef struct tk__buf {
	char *p;
	size_t len, cap;
} tk__buf;
int tk__buf_reserve(tk__buf *b, size_t extra);
static inline int tk__buf_append(tk__buf *b, const void *s, size_t n)
{
	if (TK__UNLIKELY(b->len + n + 1 > b->cap) && tk__buf_reserve(b, n))
		return TK_ERR_NOMEM;
	if (TK__LIKELY(n)) /* s may be NULL for an empty buffer */
		memcpy(b->p + b->len, s, n);
	b->len += n;
	return 0;
}
static inline int tk__buf_putc(tk__buf *b, char c)
{
	if (TK__UNLIKELY(b->len + 1 >= b->cap) && tk__buf_reserve(b, 1))
		return TK_ERR_NOMEM;
	b->p[b->len++] = c;
	return 0;
}
void tk__buf_free(tk__buf *b);

/* ---- string interning: stable pointers, memory bounded by distinct strings ---- */
typedef struct tk__strtab {
	uint32_t *slots; /* index+1 into ents, 0 = empty */
	uint64_t *hashes;
	size_t n_slots, n;
	tk_sv *ents;
	size_t ents_cap;
	char **blocks;
	size_t n_blocks, blocks_cap;
	char *cur;
	size_t cur_left;
	size_t bytes;
} tk__strtab;
uint64_t tk__hash(const void *p, size_t n);
/* Interns s; returns the stable copy, or ptr NULL on allocation failure. */
tk_sv tk__strtab_intern(tk__strtab *t, const char *s, size_t n);
/* The same, and *id = the string's index in order of first sight. */
tk_sv tk__strtab_intern_id(tk__strtab *t, const char *s, size_t n, uint32_t *id);
void tk__strtab_free(tk__strtab *t);

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

	char **warnings;
	size_t n_warnings;
	tk_reader_stats stats;
	int failed; /* sticky error code */
	char err[TK__ERRLEN];
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
int tk__reader_fail(tk_reader *r, int code, const char *fmt, ...) TK__PRINTF(3, 4);
int tk__reader_warn(tk_reader *r, const char *fmt, ...) TK__PRINTF(2, 3);
/* line and column (1-based) of decoded offset `at`, which must be >= base. */
void tk__reader_linecol(const tk_reader *r, uint64_t at, uint64_t *line, uint64_t *col);
int tk__reader_add_meta(tk_reader *r, const char *key, size_t klen, const char *json, size_t jlen,
                        int after);

/* ---- JSON text helpers (json_text.c) ---- */
/* Result of scanning JSON text. */
enum { TK__J_OK = 0, TK__J_MORE = 1, TK__J_BAD = 2 };
typedef struct tk__jerr {
	const unsigned char *at; /* where the problem is */
	const char *msg;
	int repaired; /* strings repaired (invalid UTF-8, lone surrogates) */
} tk__jerr;
/* p points just after an opening quote. Appends the canonical form of the
 * string's contents (valid escapes kept, raw control characters escaped,
 * invalid UTF-8 -> \ufffd) to out and sets *endp after the closing quote. */
int tk__json_canon_string(const unsigned char *p, const unsigned char *e, tk__buf *out,
                          const unsigned char **endp, tk__jerr *je);
/* Decode a string (p after the opening quote) to UTF-8 bytes in out
 * (not NUL-terminated); invalid UTF-8 replaced. *plain = 1 when the text
 * needed no decoding (then out is untouched and the bytes are p..*endp-1). */
int tk__json_decode_string(const unsigned char *p, const unsigned char *e, tk__buf *out,
                           const unsigned char **endp, int *plain, tk__jerr *je);
/* Canonicalize one JSON value starting at p (after whitespace) into out. */
int tk__json_canon_value(const unsigned char *p, const unsigned char *e, tk__buf *out,
                         const unsigned char **endp, unsigned max_depth, tk__jerr *je);
/* First byte at or after p that is '"', '\\', a control character or >= 0x80
 * (e if none before e). Reads up to 15 bytes past e: callers keep TK__PAD
 * readable bytes there. */
static inline const unsigned char *tk__scan_special(const unsigned char *p, const unsigned char *e)
{
	const __m128i q = _mm_set1_epi8('"'), bs = _mm_set1_epi8('\\'), sp = _mm_set1_epi8(0x20);
	while (p < e) {
		__m128i v = _mm_loadu_si128((const __m128i *)(const void *)p);
		__m128i m = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, q), _mm_cmpeq_epi8(v, bs)),
		                         _mm_cmplt_epi8(v, sp));
		int mask = _mm_movemask_epi8(m);
		if (mask) {
			p += __builtin_ctz((unsigned)mask);
			return p < e ? p : e;
		}
		p += 16;
	}
	return e;
}
/* Skip JSON whitespace. */
#define TK__IS_WS(c) ((c) == ' ' || (c) == '\n' || (c) == '\r' || (c) == '\t')
static inline const unsigned char *tk__skip_ws(const unsigned char *p, const unsigned char *e)
{
	if (TK__LIKELY(p < e && *p > ' '))
		return p;
	/* one space, as after ':' and ',' in pretty-printed files (the byte
	 * after e is readable padding) */
	if (*p == ' ' && p[1] > ' ' && p + 1 < e)
		return p + 1;
	/* longer runs (newline and indentation): 16 bytes at a time */
	const __m128i sp = _mm_set1_epi8(' '), nl = _mm_set1_epi8('\n'), cr = _mm_set1_epi8('\r'),
	              tb = _mm_set1_epi8('\t');
	while (e - p >= 16) {
		__m128i v = _mm_loadu_si128((const __m128i *)(const void *)p);
		__m128i w = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, sp), _mm_cmpeq_epi8(v, nl)),
		                         _mm_or_si128(_mm_cmpeq_epi8(v, cr), _mm_cmpeq_epi8(v, tb)));
		unsigned m = (unsigned)_mm_movemask_epi8(w) ^ 0xffffu;
		if (m)
			return p + __builtin_ctz(m);
		p += 16;
	}
	while (p < e && TK__IS_WS(*p))
		p++;
	return p;
}
/* The extent of the object or array at p without canonicalizing it; see
 * json_text.c. TK__J_BAD (no message): canonicalize it instead. */
int tk__json_skip_value(const unsigned char *p, const unsigned char *e, const unsigned char **endp,
                        size_t *clen, unsigned max_depth);
/* Scan a JSON number; returns end pointer or NULL if malformed. */
const unsigned char *tk__json_scan_number(const unsigned char *p, const unsigned char *e);
/* Parse a decimal number of microseconds to integer nanoseconds. Returns 0,
 * 1 if rounding to a nanosecond was needed, -1 if out of range/malformed. */
int tk__parse_us_to_ns(const unsigned char *p, const unsigned char *e, int64_t *out);
/* Parse a JSON integer. Returns 0, -1 if not an integer or out of range. */
int tk__parse_int64(const unsigned char *p, const unsigned char *e, int64_t *out);
/* Append s escaped as a JSON string body (no quotes); invalid UTF-8 is
 * replaced. Returns the number of repairs (0 or 1), <0 on ENOMEM. */
int tk__json_escape(tk__buf *out, const char *s, size_t n);
/* 1 if s[0..n) is exactly the canonical compact JSON of its kind: 0 the
 * body of a string, 1 one value, 2 the members of an object. */
int tk__json_is_canonical(const char *s, size_t n, int kind);
/* 1 if the text is valid UTF-8. */
int tk__utf8_valid(const unsigned char *p, size_t n);

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
	tk__sink sink;
	const struct tk__wfmt *fmt;
	void *fs;
	tk__buf out; /* pending output, flushed to the sink in large blocks */
	int closed, failed;
	uint64_t repaired;
	uint64_t events;
	uint64_t max_bytes; /* budget for the finished output, 0 = none */
	tk__meta *meta;
	size_t n_meta, meta_cap;
	char err[TK__ERRLEN];
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
int tk__writer_fail(tk_writer *w, int code, const char *fmt, ...) TK__PRINTF(3, 4);

void tk__fmt_msg(char *dst, size_t cap, const char *fmt, va_list ap);
/* Decimal digits of v written backwards so that they end at `end`; returns the first. */
char *tk__fmt_u64(char *end, uint64_t v);
char *tk__strdup(const char *s);
/* 1 if both ids have the same kind and value. */
int tk__id_eq(const tk_id *a, const tk_id *b);
/* Append a copy of s to a growable list of strings (warnings). */
int tk__strlist_add(char ***list, size_t *n, const char *s);

#endif
