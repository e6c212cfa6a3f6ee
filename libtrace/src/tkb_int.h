/* tkb_int.h: private constants and the chunk encoder of the .tkb format (varints: core/varint.h). */
#ifndef TK_TKB_INT_H
#define TK_TKB_INT_H

#include "internal.h"
#include "tracekit/tkb.h"

/* Layout constants; docs/tkb-format.md is the reference. */
#define TK__TKB_MAGIC "\x89TKB\r\n\x1a\n"
#define TK__TKB_SYNC "\xd7TKc"
enum {
	TK__TKB_MAJOR = 1,
	TK__TKB_MINOR = 0,
	TK__TKB_FILEHDR = 16, /* magic, version, flags, body length */
	TK__TKB_CHDR = 28     /* chunk header */
};
enum { TK__C_META = 1, TK__C_EVENTS = 2, TK__C_ANCHOR = 3, TK__C_END = 4 };
enum { TK__CF_ZLIB = 1 };
enum { TK__H_PRODUCER = 1, TK__H_HOST = 2, TK__H_PID = 3, TK__H_RANK = 4, TK__H_WORLD = 5,
       TK__H_START = 6 };
/* event flag bits */
enum {
	TK__E_TS = 1u << 0,
	TK__E_DUR = 1u << 1,
	TK__E_NAME = 1u << 2,
	TK__E_CAT = 1u << 3,
	TK__E_PH = 1u << 4,
	TK__E_ARGS = 1u << 5,
	TK__E_EXTRA = 1u << 6,
	TK__E_PID = 7, /* shift of the 2-bit pid mode; tid at 9, id at 11 */
	TK__E_TID = 9,
	TK__E_ID = 11
};
enum { TK__ID_ABSENT = 0, TK__ID_SAME = 1, TK__ID_INT = 2, TK__ID_STR = 3 };
/* args value types, stored in shapes */
enum { TK__V_INT = 0, TK__V_STR = 1, TK__V_JSON = 2, TK__V_RAW = 3, TK__V_DEC = 4,
       TK__V_NULL = 5, TK__V_TRUE = 6, TK__V_FALSE = 7, TK__V_MAX = 7 };

/* Tests: the chunks of a reader's events decoded on another thread
 * (tk_reader_opts.threads > 1) and handed out so far. */
uint64_t tk__tkb_batched(const tk_reader *r);
/* Tests: of those, the ones whose batch stopped at its size, the rest
 * decoded on the caller's thread. */
uint64_t tk__tkb_cut(const tk_reader *r);
/* The most events and text a thread decodes of one chunk before the
 * caller takes the rest (about; 8 MiB). Fuzzing sets it small, so that
 * small inputs are cut too. */
extern size_t tk__tkb_batch;
/* Tests: every events chunk decoded into a batch, on the caller's thread
 * where no thread took it first, so that batches are made however the
 * threads are scheduled (on a busy machine the caller gets to most
 * chunks first). */
extern int tk__tkb_batch_all;

/* ---- the encoder: dictionaries, events, chunk framing (tkb_enc.c) ---- */
typedef struct tk__tkb_slot {
	const char *key, *val;
	size_t klen, vlen;
	int type;
	int64_t num; /* TK__V_INT and TK__V_DEC mantissa */
	int scale;   /* TK__V_DEC */
} tk__tkb_slot;

#define TK__TKB_IDCACHE 256
typedef struct tk__tkb_idc {
	const char *ptr;
	size_t len;
	uint32_t id;
} tk__tkb_idc;

typedef struct tk__tkb_enc {
	tk__strtab strs;   /* string id = index */
	tk__strtab shapes; /* shape key text (keys and types) -> shape id */
	tk__buf defs;      /* on-disk shape definitions, back to back */
	size_t *def_off;   /* per shape: offset in defs; def_off[n] = defs.len */
	uint32_t *prev_off, *epoch; /* per shape: slot values in prev; chunk of last use */
	size_t shapes_cap;
	int64_t *prev;
	size_t n_prev, prev_cap;
	uint32_t str_first, shape_first; /* first ids not yet written out */
	tk__tkb_slot *slots;
	size_t slots_cap;
	tk__buf ev, payload, zbuf, tmp, meta;
	uint32_t n_ev, n_meta, chunk_no;
	int64_t prev_ts, last_int[3]; /* delta bases, reset per chunk */
	tk_id prev_ids[3];            /* last pid/tid/id; num = string id for strings */
	uint64_t idval[3];
	tk__buf cargs, cextra;        /* canonicalized args/extra of the current event */
	int broken;
	tk__tkb_idc idcache[TK__TKB_IDCACHE]; /* string pointer -> id, checked */
	int compress, level, z_init;
	z_stream z;
	size_t chunk_bytes;
	uint64_t events;
	uint64_t repaired; /* strings of args and extra whose invalid UTF-8 was replaced */
	const char *err;   /* static text of the last failure */
} tk__tkb_enc;

int tk__tkb_enc_init(tk__tkb_enc *e, const tk_tkb_opts *o);
void tk__tkb_enc_free(tk__tkb_enc *e);
/* File header bytes into out. */
int tk__tkb_enc_header(tk__tkb_enc *e, tk__buf *out, const tk_tkb_header *h);
/* Adds one event to the open chunk; the caller flushes when chunk_full. */
int tk__tkb_enc_event(tk__tkb_enc *e, const tk_event *ev);
static inline int tk__tkb_enc_chunk_full(const tk__tkb_enc *e)
{
	return e->ev.len >= e->chunk_bytes;
}
/* Queues a metadata member for the next META chunk. */
int tk__tkb_enc_meta(tk__tkb_enc *e, tk_sv key, tk_sv json, int after);
/* Appends the pending META chunk, then the open EVENTS chunk, to out. */
int tk__tkb_enc_flush(tk__tkb_enc *e, tk__buf *out);
int tk__tkb_enc_anchor(tk__tkb_enc *e, tk__buf *out, int kind, const tk_tkb_anchor *a);
int tk__tkb_enc_end(tk__tkb_enc *e, tk__buf *out);

#endif
