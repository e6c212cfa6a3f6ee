/* pftrace.c: Perfetto's protobuf trace (.pftrace): a writer of Trace/TracePacket (track descriptors, TrackEvents with interned names, metadata) from events put in time order by the sorter, and a reader of TrackEvent traces into the event model. The mapping is in docs/perfetto.md. */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stddef.h>
#include <stdlib.h>

#include "core/workers.h"
#include "formats/formats.h"
#include "formats/pb.h"
#include "procs.h"
#include "tracekit/merge.h"
#include "tracekit/sort.h"

/* Field numbers, from Perfetto's perfetto_trace.proto. */
enum {
	F_TRACE_PACKET = 1,
	/* TracePacket */
	F_PKT_CHROME_EVENTS = 5, F_PKT_CLOCK_SNAPSHOT = 6, F_PKT_TIMESTAMP = 8, F_PKT_SEQ_ID = 10, F_PKT_TRACK_EVENT = 11,
	F_PKT_INTERNED = 12, F_PKT_SEQ_FLAGS = 13, F_PKT_CLOCK_ID = 58, F_PKT_DEFAULTS = 59,
	F_PKT_TRACK_DESC = 60,
	/* TracePacketDefaults */
	F_DEF_CLOCK_ID = 58, F_DEF_TRACK_EVENT = 11, F_TEDEF_TRACK_UUID = 11,
	/* ClockSnapshot, ClockSnapshot.Clock */
	F_CS_CLOCKS = 1, F_CS_PRIMARY = 2, F_CLK_ID = 1, F_CLK_TS = 2, F_CLK_INCR = 3, F_CLK_UNIT = 4,
	/* InternedData */
	F_INT_CATS = 1, F_INT_NAMES = 2, F_INT_ANN_NAMES = 3, F_INT_STRINGS = 29,
	/* TrackDescriptor, ProcessDescriptor, ThreadDescriptor */
	F_TD_UUID = 1, F_TD_NAME = 2, F_TD_PROCESS = 3, F_TD_THREAD = 4, F_TD_PARENT = 5,
	F_TD_COUNTER = 8, F_TD_CHILD_ORDER = 11, F_TD_SIBLING_RANK = 12, F_TD_MERGE = 15,
	F_TD_PROC_ORDER = 19, F_TD_THREAD_ORDER = 20,
	F_PD_PID = 1, F_PD_SORT = 3, F_PD_NAME = 6, F_PD_LABELS = 8,
	F_THD_PID = 1, F_THD_TID = 2, F_THD_SORT = 3, F_THD_NAME = 5,
	/* TrackEvent */
	F_TE_CAT_IIDS = 3, F_TE_ANNOTATIONS = 4, F_TE_TYPE = 9, F_TE_NAME_IID = 10, F_TE_TRACK = 11,
	F_TE_EXTRA_CTR_VALUES = 12, F_TE_CATS = 22, F_TE_NAME = 23, F_TE_CTR_VALUE = 30,
	F_TE_EXTRA_CTR_TRACKS = 31, F_TE_DCTR_VALUE = 44, F_TE_EXTRA_DCTR_TRACKS = 45,
	F_TE_EXTRA_DCTR_VALUES = 46, F_TE_FLOWS = 47, F_TE_TERM_FLOWS = 48,
	/* DebugAnnotation */
	F_DA_NAME_IID = 1, F_DA_BOOL = 2, F_DA_UINT = 3, F_DA_INT = 4, F_DA_DOUBLE = 5,
	F_DA_STRING = 6, F_DA_POINTER = 7, F_DA_NESTED = 8, F_DA_JSON = 9, F_DA_NAME = 10,
	F_DA_DICT = 11, F_DA_ARRAY = 12, F_DA_STRING_IID = 17,
	/* ChromeEventBundle, ChromeMetadata, ChromeTraceEvent (and its Arg) */
	F_CEB_EVENTS = 1, F_CEB_METADATA = 2,
	F_CM_NAME = 1, F_CM_STRING = 2, F_CM_BOOL = 3, F_CM_INT = 4, F_CM_JSON = 5,
	F_CTE_NAME = 1, F_CTE_TS = 2, F_CTE_PHASE = 3, F_CTE_TID = 4, F_CTE_CAT = 10, F_CTE_PID = 11,
	F_CTE_ARGS = 14,
	F_ARG_NAME = 1, F_ARG_BOOL = 2, F_ARG_UINT = 3, F_ARG_INT = 4, F_ARG_DOUBLE = 5,
	F_ARG_STRING = 6, F_ARG_POINTER = 7, F_ARG_JSON = 8
};
enum { TYPE_SLICE_BEGIN = 1, TYPE_SLICE_END = 2, TYPE_INSTANT = 3, TYPE_COUNTER = 4 };
enum { SEQ_CLEARED = 1, SEQ_NEEDS = 2 };

#define SEQ_ID 1
/* Packets are timed on the sequence's own incremental clock: each
 * timestamp is the distance from the one before (docs/perfetto.md). */
#define CLOCK_BOOT 6  /* BUILTIN_CLOCK_BOOTTIME */
#define CLOCK_SEQ 64  /* the first of the sequence-scoped clock ids */
/* The names tracekit gives what Perfetto has no field for (docs/perfetto.md).
 * An argument of the trace whose name starts with "tk." is written with
 * one more "tk." in front, so that the two never meet. */
#define RESERVED "tk."
/* metadata entry that stands where "traceEvents" stood */
#define META_EVENTS "tk.events"

/* ---- writing ---------------------------------------------------------- */

#define INTERN_MAX_BYTES (64u << 20) /* interning tables are cleared beyond these */
#define INTERN_MAX_N (1u << 20)
#define STR_INTERN_MAX 256 /* longer argument strings are written inline */
#define GROUP_MAX 4096     /* events of one timestamp put in order before writing */
#define BUNDLE_MAX (64u << 10)

enum { K_CAT, K_NAME, K_ANN, K_STR, K_N };
static const unsigned intern_field[K_N] = {F_INT_CATS, F_INT_NAMES, F_INT_ANN_NAMES, F_INT_STRINGS};

typedef struct plane { /* one track of a thread's slices: a stack of open ones */
	uint64_t uuid;
	int64_t *ends;
	uint64_t *seqs; /* each slice's number, to match the heap's entries */
	size_t n, cap;
} plane;

typedef struct pthr {
	TK__THR_BASE; /* pid, tid, proc, name, sort index (procs.h) */
	uint64_t uuid;
	int native; /* a ThreadDescriptor holds pid and tid exactly */
	plane *lanes; /* lanes[0] is the thread's own track; more are declared when used */
	size_t n_lanes, lanes_cap;
	uint64_t be_uuid; /* B/E slices, declared when used */
	size_t be_open;
	int64_t be_last;
} pthr;

typedef struct pproc {
	TK__PROC_BASE; /* pid, name, labels, sort index (procs.h) */
	uint64_t uuid;
	int native;
	int64_t rank;
	int gpu;
} pproc;

typedef struct pidx { /* map record: hash -> index */
	uint64_t h, idx;
} pidx;

typedef struct pflow { /* map record: a flow's key -> what is left of it */
	uint64_t h;
	uint32_t f_left; /* its "f" events not yet written */
	uint32_t open;
} pflow;

typedef struct pheap { /* an open slice's end, written when time passes it */
	int64_t end;
	uint64_t seq;
	uint32_t thr, lane;
} pheap;

typedef struct pmeta {
	char *key, *json;
	int after;
} pmeta;

/* Pass 2 decides, in time order, what each packet is (its track, type,
 * flags, the descriptors and slice ends around it): the ops of a chunk.
 * Encoding them (names and arguments interned, annotations from the args'
 * JSON) is most of the work; each chunk starts with the sequence's state
 * cleared, so chunks are encoded on threads and written in order, to the
 * same bytes whatever the threads (docs/perfetto.md). */
#define CHUNK_OPS 65536
#define CHUNK_BYTES (8u << 20) /* the events' bytes a chunk holds at most, about */
#define ENC_MAX_THREADS 4 /* the caller among them: its own part keeps about 2 busy */

enum { OP_RAW, OP_EVENT, OP_COUNTER };

typedef struct pop {
	size_t ev; /* the event's offset in the arena, plus 1; 0: none, a packet of
	            * nothing but its track and the flags' annotations */
	uint64_t track, flow;
	int64_t ts;
	size_t off, len; /* OP_RAW: its body in the arena; OP_COUNTER: its tracks' uuids */
	unsigned fl, field;
	unsigned char kind, type, ints;
} pop;

enum { C_OPEN, C_QUEUED, C_BUSY, C_DONE };

typedef struct pchunk {
	pop *ops;
	size_t n, cap;
	tk__buf arena;
	tk__buf out; /* the packets, once encoded */
	int first;   /* the trace's first: its clock snapshot names the primary clock */
	int64_t clk; /* the sequence clock where it starts: the packets' latest time before it */
	int state;   /* C_* (the pool's lock) */
	tk__err err; /* encoding failed: the code and message */
} pchunk;

typedef struct penc { /* the sequence's incremental state, from a chunk's start */
	tk__strtab tab[K_N];
	size_t intern_bytes, intern_n; /* of the four tables */
	int clear_next, snapshots;
	int64_t clk; /* the sequence clock's last value */
	tk__buf te, intern, scratch;
	tk__buf name; /* a member's name decoded (members) */
	tk__buf *out;
	tk__err *err;
} penc;

typedef struct penc_pool {
	tk__workers W; /* its lock guards the ring and the chunks' states */
	pchunk **ring; /* chunks in file order, the oldest at head */
	size_t cap, head, n;
} penc_pool;

typedef struct pw {
	tk_sorter *sorter;
	penc enc;         /* the caller's encoder */
	penc_pool *pool;  /* NULL: the caller encodes each packet as it is decided */
	pchunk *cur;      /* the chunk being filled */
	size_t n_chunks;
	int64_t clk;      /* the latest packet time so far (penc.clk, in order) */
	size_t n_ops, n_bytes; /* in the chunk being filled, encoded or not */
	pchunk **spare; /* chunks written out, for reuse */
	size_t n_spare, spare_cap;
	tk__buf scratch, bundle;
	tk__buf name; /* a member's name decoded (bundle_add) */
	size_t n_bundle;
	tk__procs pt; /* processes (pproc) and threads (pthr) */
	tk__map ctr_map, flow_map;
	pheap *heap;
	size_t n_heap, heap_cap;
	uint64_t seq, next_uuid;
	int64_t base, max_ts;
	int has_max;
	pmeta *meta;
	size_t n_meta, meta_cap;
	int events_seen;
} pw;

#define THR(s, i) ((pthr *)tk__procs_thr_at(&(s)->pt, (i)))
#define PROC(s, i) ((pproc *)tk__procs_proc_at(&(s)->pt, (i)))

static int fits_i32(const tk_id *id)
{
	return id->kind == TK_ID_INT && id->num >= INT32_MIN && id->num <= INT32_MAX;
}

/* ---- interning ---- */

static int intern(penc *s, int kind, const char *p, size_t n, uint64_t *iid)
{
	tk__strtab *t = &s->tab[kind];
	size_t before = t->n;
	uint32_t id;
	tk_sv v = tk__strtab_intern_id(t, p ? p : "", n, &id);
	if (!v.ptr)
		return TK_ERR_NOMEM;
	*iid = (uint64_t)id + 1;
	if (t->n != before) {
		s->intern_bytes += n + 16;
		s->intern_n++;
		if (tk__pb_room(&s->intern, 2 * TK__PB_ROOM))
			return TK_ERR_NOMEM;
		size_t m = tk__pb_begin(&s->intern, intern_field[kind]);
		tk__pb_uint(&s->intern, 1, *iid);
		if (tk__pb_bytes(&s->intern, 2, v.ptr, n) || tk__pb_end(&s->intern, m))
			return TK_ERR_NOMEM;
	}
	return 0;
}

static void intern_clear(penc *s)
{
	for (int k = 0; k < K_N; k++)
		tk__strtab_clear(&s->tab[k]);
	s->intern_bytes = s->intern_n = 0;
	s->clear_next = 1;
}

/* Clears the interning tables when they grew past their bounds: the next
 * packet tells readers to forget theirs. */
static void intern_bound(penc *s)
{
	if (s->intern_bytes >= INTERN_MAX_BYTES || s->intern_n >= INTERN_MAX_N)
		intern_clear(s);
}

/* ---- packets ---- */

/* The packet that clears the sequence's incremental state: it defines the
 * sequence clock as BOOTTIME at `at` and makes it the packets' default. */
static void put_reset(penc *s, int64_t at)
{
	tk__buf *o = s->out;
	size_t m = tk__pb_begin(o, F_TRACE_PACKET), c, k, d;
	tk__pb_uint(o, F_PKT_TIMESTAMP, (uint64_t)at);
	tk__pb_uint(o, F_PKT_CLOCK_ID, CLOCK_BOOT);
	tk__pb_uint(o, F_PKT_SEQ_ID, SEQ_ID);
	tk__pb_uint(o, F_PKT_SEQ_FLAGS, SEQ_CLEARED);
	c = tk__pb_begin(o, F_PKT_CLOCK_SNAPSHOT);
	k = tk__pb_begin(o, F_CS_CLOCKS);
	tk__pb_uint(o, F_CLK_ID, CLOCK_SEQ);
	tk__pb_uint(o, F_CLK_TS, (uint64_t)at);
	tk__pb_uint(o, F_CLK_INCR, 1);
	tk__pb_end(o, k);
	k = tk__pb_begin(o, F_CS_CLOCKS);
	tk__pb_uint(o, F_CLK_ID, CLOCK_BOOT);
	tk__pb_uint(o, F_CLK_TS, (uint64_t)at);
	tk__pb_end(o, k);
	if (!s->snapshots++) /* trace time is BOOTTIME, as in traces without snapshots */
		tk__pb_uint(o, F_CS_PRIMARY, CLOCK_BOOT);
	tk__pb_end(o, c);
	d = tk__pb_begin(o, F_PKT_DEFAULTS);
	tk__pb_uint(o, F_DEF_CLOCK_ID, CLOCK_SEQ);
	tk__pb_end(o, d);
	tk__pb_end(o, m);
	s->clk = at;
	s->clear_next = 0;
}

/* Appends a packet to s->out: its timestamp (ts >= 0: on the sequence
 * clock when it does not go back, else on BOOTTIME), the sequence, the
 * interned data gathered in s->intern, then `body` as field `field`. */
static int put_packet(penc *s, int64_t ts, unsigned field, const char *body, size_t len, int flags)
{
	tk__buf *o = s->out;
	if (tk__pb_room(o, s->intern.len + len + 24 * TK__PB_ROOM))
		return TK_ERR_NOMEM;
	if (s->clear_next)
		put_reset(s, ts >= 0 ? ts : s->clk);
	size_t m = tk__pb_begin(o, F_TRACE_PACKET);
	if (ts >= s->clk) {
		tk__pb_uint(o, F_PKT_TIMESTAMP, (uint64_t)(ts - s->clk));
		s->clk = ts;
	} else if (ts >= 0) {
		tk__pb_uint(o, F_PKT_TIMESTAMP, (uint64_t)ts);
		tk__pb_uint(o, F_PKT_CLOCK_ID, CLOCK_BOOT);
	}
	tk__pb_uint(o, F_PKT_SEQ_ID, SEQ_ID);
	if (s->intern.len || field == F_PKT_TRACK_EVENT) /* events use interned names */
		flags |= SEQ_NEEDS;
	if (flags)
		tk__pb_uint(o, F_PKT_SEQ_FLAGS, (uint64_t)flags);
	if (s->intern.len) {
		tk__pb_key(o, F_PKT_INTERNED, TK__PB_LEN);
		tk__put_varint(o, s->intern.len);
		memcpy(o->p + o->len, s->intern.p, s->intern.len);
		o->len += s->intern.len;
		s->intern.len = 0;
	}
	tk__pb_key(o, field, TK__PB_LEN);
	tk__put_varint(o, len);
	if (len)
		memcpy(o->p + o->len, body, len);
	o->len += len;
	int rc = tk__pb_end(o, m);
	if (rc)
		return tk__err_set(s->err, rc, "a packet of 256 MiB or more cannot be written");
	return 0;
}

/* ---- ops: what pass 2 decided, in order, for the chunks' encoders ---- */

size_t tk__pf_chunk_ops; /* tests make the chunks smaller; 0: CHUNK_OPS */
unsigned tk__pf_encoders;

static int chunk_submit(tk_writer *w);
static void enc_pool_stop(pw *s);
static void enc_free(penc *e);

static pchunk *chunk_get(pw *s)
{
	return s->n_spare ? s->spare[--s->n_spare] : calloc(1, sizeof(pchunk));
}

static void chunk_clear(pchunk *c)
{
	c->n = 0;
	c->arena.len = c->out.len = 0;
	tk__err_free(&c->err);
	c->state = C_OPEN;
}

static void chunk_free(pchunk *c)
{
	if (!c)
		return;
	chunk_clear(c);
	free(c->ops);
	tk__buf_free(&c->arena);
	tk__buf_free(&c->out);
	free(c);
}

/* A chunk written out or dropped: kept for the next one. */
static void chunk_recycle(pw *s, pchunk *c)
{
	chunk_clear(c);
	if (TK__GROW(s->spare, s->spare_cap, s->n_spare + 1))
		chunk_free(c);
	else
		s->spare[s->n_spare++] = c;
}

static void enc_start(penc *e, int first, int64_t clk, tk__buf *out, tk__err *err);
static int op_encode(penc *e, const pop *o, const char *data, const tk_event *ev);

/* Op o, with `len` bytes of data and the event ev (NULL: none): in the
 * chunk being filled (a new one when it is full), or without threads
 * encoded at once, to the same bytes. */
static int op_add(tk_writer *w, pop *o, const tk_event *ev, const void *data, size_t len)
{
	pw *s = w->fs;
	int rc;
	size_t max = tk__pf_chunk_ops ? tk__pf_chunk_ops : CHUNK_OPS;
	if (s->n_ops && (s->n_ops >= max || s->n_bytes >= CHUNK_BYTES)) {
		if ((rc = chunk_submit(w)))
			return rc;
		s->n_ops = s->n_bytes = 0;
	}
	int start = !s->n_ops, first = start && !s->n_chunks;
	int64_t clk = s->clk;
	s->n_chunks += start;
	s->n_ops++;
	o->len = len;
	s->n_bytes += sizeof *o + len;
	if (ev)
		s->n_bytes += sizeof *ev + ev->name.len + ev->cat.len + ev->args.len + ev->extra.len;
	if (o->ts > s->clk)
		s->clk = o->ts;
	if (!s->pool) {
		if (start)
			enc_start(&s->enc, first, clk, &w->out, &w->err);
		rc = op_encode(&s->enc, o, data, ev);
		return rc || w->out.len < (1u << 20) ? rc : tk__writer_flush(w);
	}
	if (!s->cur && !(s->cur = chunk_get(s)))
		return TK_ERR_NOMEM;
	pchunk *c = s->cur;
	if (start) {
		c->first = first;
		c->clk = clk;
	}
	size_t at = c->arena.len, eo = 0;
	if (TK__GROW(c->ops, c->cap, c->n + 1) || (len && tk__buf_append(&c->arena, data, len)) ||
	    (ev && tk__event_pack(&c->arena, ev, &eo)))
		return TK_ERR_NOMEM;
	pop *d = &c->ops[c->n++];
	*d = *o;
	d->off = at;
	d->ev = ev ? eo + 1 : 0;
	return 0;
}

/* A packet whose body is made already (descriptors, metadata, M events). */
static int op_raw(tk_writer *w, unsigned field, const tk__buf *body)
{
	pop o = {.kind = OP_RAW, .field = field, .ts = -1};
	return op_add(w, &o, NULL, body->p, body->len);
}

/* A TrackEvent of the event ev, or with ev NULL of nothing but its track
 * and the reserved annotations fl asks for. */
static int put_event(tk_writer *w, const tk_event *ev, int type, uint64_t track, unsigned fl, uint64_t flow,
                     int64_t ts)
{
	pop o = {.kind = OP_EVENT, .type = (unsigned char)type, .track = track, .fl = fl, .flow = flow, .ts = ts};
	return op_add(w, &o, ev, NULL, 0);
}

/* ---- track descriptors ---- */

static int put_track(tk_writer *w, uint64_t uuid, uint64_t parent, const char *name, size_t nlen, int counter)
{
	pw *s = w->fs;
	tk__buf *b = &s->scratch;
	b->len = 0;
	if (tk__pb_room(b, 2 * TK__PB_ROOM))
		return TK_ERR_NOMEM;
	tk__pb_uint(b, F_TD_UUID, uuid);
	tk__pb_uint(b, F_TD_PARENT, parent);
	/* overlapping slices each keep a track of their own */
	tk__pb_uint(b, F_TD_MERGE, 2);
	if (counter) {
		tk__pb_key(b, F_TD_COUNTER, TK__PB_LEN);
		tk__put_varint(b, 0);
	}
	if (name && tk__pb_bytes(b, F_TD_NAME, name, nlen))
		return TK_ERR_NOMEM;
	return op_raw(w, F_PKT_TRACK_DESC, b);
}

static int id_text(tk__buf *b, const tk_id *id)
{
	switch (id->kind) {
	case TK_ID_INT:
		return tk__buf_i64(b, id->num);
	case TK_ID_STR: return tk__buf_append(b, id->str.ptr, id->str.len);
	default: return 0;
	}
}

/* A track's name: the name the M events gave, else the id's text, else
 * `none` (an absent id). */
static int track_label(tk__buf *n, const char *name, const tk_id *id, const char *none)
{
	n->len = 0;
	if (name)
		return tk__buf_puts(n, name);
	return id->kind == TK_ID_NONE ? tk__buf_puts(n, none) : id_text(n, id);
}

/* Kineto names a GPU's process "GPU N" (labels "GPU N" too). */
static int is_gpu(const pproc *p)
{
	return (p->name && strncasecmp(p->name, "gpu", 3) == 0) || (p->labels && strncasecmp(p->labels, "gpu", 3) == 0) ||
	       (p->name && strstr(p->name, "(GPU"));
}

static int proc_cmp(const void *a, const void *b)
{
	const pproc *x = *(pproc *const *)a, *y = *(pproc *const *)b;
	if (x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	if (x->gpu != y->gpu)
		return x->gpu - y->gpu;
	if (x->has_sort != y->has_sort)
		return y->has_sort - x->has_sort;
	if (x->has_sort && x->sort != y->sort)
		return x->sort < y->sort ? -1 : 1;
	if (x->pid.kind != y->pid.kind)
		return x->pid.kind - y->pid.kind;
	if (x->pid.kind == TK_ID_INT && x->pid.num != y->pid.num)
		return x->pid.num < y->pid.num ? -1 : 1;
	return x < y ? -1 : x > y;
}

static int thr_cmp(const void *a, const void *b)
{
	const pthr *x = *(pthr *const *)a, *y = *(pthr *const *)b;
	if (x->has_sort != y->has_sort)
		return y->has_sort - x->has_sort;
	if (x->has_sort && x->sort != y->sort)
		return x->sort < y->sort ? -1 : 1;
	if (x->tid.kind != y->tid.kind)
		return x->tid.kind - y->tid.kind;
	if (x->tid.kind == TK_ID_INT && x->tid.num != y->tid.num)
		return x->tid.num < y->tid.num ? -1 : 1;
	return x < y ? -1 : x > y;
}

static int put_process(tk_writer *w, const pproc *p, int32_t rank)
{
	pw *s = w->fs;
	tk__buf *b = &s->scratch;
	b->len = 0;
	if (tk__pb_room(b, 4 * TK__PB_ROOM))
		return TK_ERR_NOMEM;
	tk__pb_uint(b, F_TD_UUID, p->uuid);
	tk__pb_uint(b, F_TD_SIBLING_RANK, (uint64_t)(int64_t)rank);
	tk__pb_uint(b, F_TD_CHILD_ORDER, 3); /* EXPLICIT: threads by sibling_order_rank */
	int rc = 0;
	if (p->native) {
		size_t m = tk__pb_begin(b, F_TD_PROCESS);
		tk__pb_uint(b, F_PD_PID, (uint64_t)(int64_t)p->pid.num);
		if (p->has_sort && p->sort >= INT32_MIN && p->sort <= INT32_MAX)
			tk__pb_uint(b, F_PD_SORT, (uint64_t)p->sort);
		if (p->name)
			rc |= tk__pb_bytes(b, F_PD_NAME, p->name, strlen(p->name));
		if (p->labels)
			rc |= tk__pb_bytes(b, F_PD_LABELS, p->labels, strlen(p->labels));
		rc |= tk__pb_end(b, m);
	} else {
		tk__buf n = {0};
		rc |= track_label(&n, p->name, &p->pid, "(no pid)");
		if (!rc)
			rc |= tk__pb_bytes(b, F_TD_NAME, n.p ? n.p : "", n.len);
		tk__buf_free(&n);
	}
	return rc ? TK_ERR_NOMEM : op_raw(w, F_PKT_TRACK_DESC, b);
}

static int put_thread(tk_writer *w, const pthr *t, int32_t rank)
{
	pw *s = w->fs;
	tk__buf *b = &s->scratch;
	b->len = 0;
	if (tk__pb_room(b, 4 * TK__PB_ROOM))
		return TK_ERR_NOMEM;
	tk__pb_uint(b, F_TD_UUID, t->uuid);
	if (!t->native) /* a thread's own descriptor names its process */
		tk__pb_uint(b, F_TD_PARENT, PROC(s, t->proc)->uuid);
	tk__pb_uint(b, F_TD_SIBLING_RANK, (uint64_t)(int64_t)rank);
	tk__pb_uint(b, F_TD_CHILD_ORDER, 3);
	int rc = 0;
	if (t->native) {
		size_t m = tk__pb_begin(b, F_TD_THREAD);
		tk__pb_uint(b, F_THD_PID, (uint64_t)(int64_t)t->pid.num);
		tk__pb_uint(b, F_THD_TID, (uint64_t)t->tid.num);
		if (t->has_sort && t->sort >= INT32_MIN && t->sort <= INT32_MAX)
			tk__pb_uint(b, F_THD_SORT, (uint64_t)t->sort);
		if (t->name)
			rc |= tk__pb_bytes(b, F_THD_NAME, t->name, strlen(t->name));
		rc |= tk__pb_end(b, m);
	} else {
		tk__buf n = {0};
		rc |= track_label(&n, t->name, &t->tid, "(no tid)");
		if (!rc)
			rc |= tk__pb_bytes(b, F_TD_NAME, n.p ? n.p : "", n.len);
		tk__buf_free(&n);
	}
	return rc ? TK_ERR_NOMEM : op_raw(w, F_PKT_TRACK_DESC, b);
}

/* A child track of a thread: its overlap lane k (k >= 1), or its B/E track. */
static int put_child(tk_writer *w, pthr *t, uint64_t uuid, const char *what)
{
	tk__buf n = {0};
	int rc = track_label(&n, t->name, &t->tid, "(no tid)");
	if (!rc)
		rc = tk__buf_puts(&n, what);
	if (!rc)
		rc = put_track(w, uuid, t->uuid, n.p, n.len, 0);
	tk__buf_free(&n);
	return rc;
}

/* ---- pass 1: processes, threads, names, flows ---- */

/* A process or thread just added: its uuid, and whether its descriptor
 * can hold its ids. */
static void take_added(pw *s, int added, size_t pi, size_t ti)
{
	if (added & TK__PROCS_NEW_PROC) {
		pproc *p = PROC(s, pi);
		p->uuid = ++s->next_uuid;
		p->native = fits_i32(&p->pid);
	}
	if (added & TK__PROCS_NEW_THR) {
		pthr *t = THR(s, ti);
		t->uuid = ++s->next_uuid;
		t->native = PROC(s, t->proc)->native && t->tid.kind == TK_ID_INT;
	}
}

static int proc_of(pw *s, const tk_id *pid, size_t *out)
{
	int added = 0;
	if (tk__procs_proc(&s->pt, pid, out, &added))
		return TK_ERR_NOMEM;
	take_added(s, added, *out, 0);
	return 0;
}

static int thr_of(pw *s, const tk_id *pid, const tk_id *tid, size_t *out)
{
	int added = 0;
	if (tk__procs_thr(&s->pt, pid, tid, out, &added))
		return TK_ERR_NOMEM;
	take_added(s, added, THR(s, *out)->proc, *out);
	return 0;
}

/* An M event names a process or a thread, or orders them. */
static int take_meta_event(pw *s, const tk_event *ev)
{
	int added = 0;
	size_t pi, ti;
	if (tk__procs_meta(&s->pt, ev, &added, &pi, &ti))
		return TK_ERR_NOMEM;
	take_added(s, added, pi, ti);
	return 0;
}

static int is_flow(char ph)
{
	return ph == 's' || ph == 't' || ph == 'f';
}

static int pw_write(tk_writer *w, const tk_event *ev)
{
	pw *s = w->fs;
	int rc = 0;
	size_t ti;
	s->events_seen = 1;
	if (ev->ph == 'M') {
		rc = take_meta_event(s, ev);
	} else if (!(ev->ph == 'C' && ev->tid.kind == TK_ID_NONE)) {
		rc = thr_of(s, &ev->pid, &ev->tid, &ti);
	} else {
		rc = proc_of(s, &ev->pid, &ti);
	}
	if (!rc && is_flow(ev->ph) && ev->id.kind != TK_ID_NONE) {
		int added;
		pflow *f = tk__map_put(&s->flow_map, tk__flow_hash(ev), NULL, NULL, &added);
		if (!f)
			rc = TK_ERR_NOMEM;
		else if (ev->ph == 'f')
			f->f_left++;
	}
	if (!rc)
		rc = tk_sorter_add(s->sorter, ev, 0);
	if (rc)
		return tk__err_set(&w->err, rc, "%s", rc == TK_ERR_NOMEM ? "out of memory" : tk_sorter_error(s->sorter));
	return 0;
}

static int pw_add_meta(tk_writer *w, tk_sv key, tk_sv json, int after)
{
	pw *s = w->fs;
	tk__buf c = {0};
	int rc = tk__json_canon_text(&c, json.ptr, json.len, 0, NULL);
	if (rc == TK_ERR_ARG) {
		tk__buf_free(&c);
		return tk__err_set(&w->err, rc, "metadata value is not valid JSON");
	}
	if (rc || TK__GROW(s->meta, s->meta_cap, s->n_meta + 1)) {
		tk__buf_free(&c);
		return tk__err_set(&w->err, TK_ERR_NOMEM, "out of memory");
	}
	c.p[c.len] = 0; /* a value is never empty: c.p is set */
	pmeta *m = &s->meta[s->n_meta];
	m->key = tk__strndup(key.ptr, key.len);
	m->json = c.p;
	m->after = after || s->events_seen;
	if (!m->key || !m->json) {
		free(m->key);
		free(m->json);
		return tk__err_set(&w->err, TK_ERR_NOMEM, "out of memory");
	}
	s->n_meta++;
	return 0;
}

static int pw_open(tk_writer *w)
{
	pw *s = calloc(1, sizeof *s);
	if (!s)
		return TK_ERR_NOMEM;
	w->fs = s;
	tk_sorter_opts so = {w->opts.memory_bytes, w->opts.tmpdir};
	int rc = tk_sorter_new(&s->sorter, &so);
	if (rc)
		return rc;
	tk__procs_init(&s->pt, sizeof(pproc), sizeof(pthr));
	tk__map_init(&s->ctr_map, sizeof(pidx), 4);
	tk__map_init(&s->flow_map, sizeof(pflow), 4);
	return 0;
}

static void pw_free(tk_writer *w)
{
	pw *s = w->fs;
	if (!s)
		return;
	enc_pool_stop(s);
	chunk_free(s->cur);
	for (size_t i = 0; i < s->n_spare; i++)
		chunk_free(s->spare[i]);
	free(s->spare);
	enc_free(&s->enc);
	tk_sorter_free(s->sorter);
	tk__buf_free(&s->scratch);
	tk__buf_free(&s->name);
	tk__buf_free(&s->bundle);
	for (size_t i = 0; i < s->pt.n_thr; i++) {
		pthr *t = THR(s, i);
		for (size_t k = 0; k < t->n_lanes; k++) {
			free(t->lanes[k].ends);
			free(t->lanes[k].seqs);
		}
		free(t->lanes);
	}
	tk__procs_free(&s->pt);
	tk__map_free(&s->ctr_map);
	tk__map_free(&s->flow_map);
	free(s->heap);
	for (size_t i = 0; i < s->n_meta; i++) {
		free(s->meta[i].key);
		free(s->meta[i].json);
	}
	free(s->meta);
	free(s);
	w->fs = NULL;
}

/* ---- debug annotations from JSON text ---- */

static int ann_value(penc *s, tk__buf *b, tk_sv v, unsigned depth);

/* A DebugAnnotation as field `field` of b: a name (NULL: none), the value v. */
static int ann(penc *s, tk__buf *b, unsigned field, const char *name, size_t nlen, tk_sv v, unsigned depth)
{
	if (tk__pb_room(b, 2 * TK__PB_ROOM))
		return TK_ERR_NOMEM;
	size_t m = tk__pb_begin_small(b, field);
	if (name) {
		uint64_t iid;
		if (intern(s, K_ANN, name, nlen, &iid))
			return TK_ERR_NOMEM;
		tk__pb_uint(b, F_DA_NAME_IID, iid);
	}
	int rc = ann_value(s, b, v, depth);
	return rc ? rc : tk__pb_end_small(b, m);
}

/* A member's name (raw JSON text between quotes) decoded, with one more
 * "tk." in front at the top level when it starts with "tk.": *name, the
 * key itself where it needs neither, else decoded into out. */
static int member_name(tk_sv key, int top, tk__buf *out, tk_sv *name)
{
	int prefix = top && key.len >= 3 && memcmp(key.ptr, RESERVED, 3) == 0;
	int escaped = memchr(key.ptr, '\\', key.len) != NULL;
	if (!prefix && !escaped) {
		*name = key;
		return 0;
	}
	out->len = 0;
	if (prefix && tk__buf_puts(out, RESERVED))
		return TK_ERR_NOMEM;
	int rc;
	if (!escaped) {
		rc = tk__buf_append(out, key.ptr, key.len);
	} else {
		tk__buf d = {0};
		rc = tk__js_str_buf((tk_sv){key.ptr - 1, key.len + 2}, &d);
		if (!rc)
			rc = tk__buf_append(out, d.p, d.len);
		tk__buf_free(&d);
	}
	*name = (tk_sv){out->p ? out->p : "", out->len};
	return rc;
}

static int members(penc *s, tk__buf *b, unsigned field, tk_sv obj, unsigned depth, int top)
{
	tk__js_iter it;
	tk_sv k, v;
	int rc;
	if (tk__js_obj(&it, obj))
		return TK_ERR_FORMAT;
	while ((rc = tk__js_member(&it, &k, &v)) == 1) {
		/* s->name: ann() is done with it (interned) before nested values */
		tk_sv name;
		rc = member_name(k, top, &s->name, &name);
		if (!rc)
			rc = ann(s, b, field, name.ptr, name.len, v, depth + 1);
		if (rc)
			break;
	}
	return rc < 0 ? rc : 0;
}

static int put_double(tk__buf *b, unsigned field, double d)
{
	uint64_t u;
	memcpy(&u, &d, 8);
	tk__pb_fixed64(b, field, u);
	return 0;
}

/* 1 if v is a JSON integer's text. */
static int int_text(tk_sv v)
{
	size_t i = v.len && v.ptr[0] == '-';
	if (i == v.len)
		return 0;
	for (; i < v.len; i++)
		if (v.ptr[i] < '0' || v.ptr[i] > '9')
			return 0;
	return 1;
}

/* A JSON number as an annotation's int, uint or double field; 0 when it
 * is none of them exactly enough (too long, out of range). */
static int number_field(tk__buf *b, tk_sv v, unsigned f_int, unsigned f_uint, unsigned f_double)
{
	char tmp[64];
	if (v.len >= sizeof tmp)
		return 0;
	memcpy(tmp, v.ptr, v.len);
	tmp[v.len] = 0;
	if (int_text(v)) {
		int64_t n;
		if (tk__js_int(v, &n) == 0) {
			tk__pb_uint(b, f_int, (uint64_t)n);
			return 1;
		}
		if (v.ptr[0] != '-') {
			errno = 0;
			unsigned long long u = strtoull(tmp, NULL, 10);
			if (!errno) {
				tk__pb_uint(b, f_uint, u);
				return 1;
			}
		}
		return 0;
	}
	char *end;
	double d = strtod(tmp, &end);
	if (*end || !isfinite(d))
		return 0;
	put_double(b, f_double, d);
	return 1;
}

static int ann_value(penc *s, tk__buf *b, tk_sv v, unsigned depth)
{
	if (!v.len)
		return TK_ERR_FORMAT;
	if (tk__pb_room(b, 2 * TK__PB_ROOM))
		return TK_ERR_NOMEM;
	switch (v.ptr[0]) {
	case '"': {
		if (tk__js_str_buf(v, &s->scratch))
			return TK_ERR_FORMAT;
		if (s->scratch.len <= STR_INTERN_MAX) {
			uint64_t iid;
			tk__buf tmp = s->scratch; /* intern copies it */
			if (intern(s, K_STR, tmp.p ? tmp.p : "", tmp.len, &iid))
				return TK_ERR_NOMEM;
			tk__pb_uint(b, F_DA_STRING_IID, iid);
			return 0;
		}
		return tk__pb_bytes(b, F_DA_STRING, s->scratch.p, s->scratch.len);
	}
	case 't':
	case 'f':
		tk__pb_uint(b, F_DA_BOOL, v.ptr[0] == 't');
		return 0;
	case '{':
		if (v.len > 2 && depth < 1000)
			return members(s, b, F_DA_DICT, v, depth, 0);
		break;
	case '[':
		if (v.len > 2 && depth < 1000) {
			const char *p = v.ptr + 1, *e = v.ptr + v.len - 1;
			while (p < e) {
				const char *q = tk__js_skip(p, e);
				if (!q || q == p)
					return TK_ERR_FORMAT;
				int rc = ann(s, b, F_DA_ARRAY, NULL, 0, (tk_sv){p, (size_t)(q - p)}, depth + 1);
				if (rc)
					return rc;
				p = q < e && *q == ',' ? q + 1 : q;
			}
			return 0;
		}
		break;
	case 'n':
		break;
	default:
		if (number_field(b, v, F_DA_INT, F_DA_UINT, F_DA_DOUBLE))
			return 0;
	}
	/* null, {}, [], deep values and numbers no other field holds exactly */
	return tk__pb_bytes(b, F_DA_JSON, v.ptr, v.len);
}

/* ---- reserved annotations ---- */

static int res_name(penc *s, tk__buf *b, const char *name, size_t *m)
{
	uint64_t iid;
	if (tk__pb_room(b, 3 * TK__PB_ROOM) || intern(s, K_ANN, name, strlen(name), &iid))
		return TK_ERR_NOMEM;
	*m = tk__pb_begin(b, F_TE_ANNOTATIONS);
	tk__pb_uint(b, F_DA_NAME_IID, iid);
	return 0;
}

static int res_str(penc *s, tk__buf *b, const char *name, const char *p, size_t n)
{
	size_t m;
	if (res_name(s, b, name, &m))
		return TK_ERR_NOMEM;
	if (n <= STR_INTERN_MAX) {
		uint64_t iid;
		if (intern(s, K_STR, p, n, &iid))
			return TK_ERR_NOMEM;
		tk__pb_uint(b, F_DA_STRING_IID, iid);
	} else if (tk__pb_bytes(b, F_DA_STRING, p, n)) {
		return TK_ERR_NOMEM;
	}
	return tk__pb_end(b, m);
}

static int res_int(penc *s, tk__buf *b, const char *name, int64_t v)
{
	size_t m;
	if (res_name(s, b, name, &m))
		return TK_ERR_NOMEM;
	tk__pb_uint(b, F_DA_INT, (uint64_t)v);
	return tk__pb_end(b, m);
}

static int res_json(penc *s, tk__buf *b, const char *name, const char *p, size_t n)
{
	size_t m;
	if (res_name(s, b, name, &m) || tk__pb_bytes(b, F_DA_JSON, p, n))
		return TK_ERR_NOMEM;
	return tk__pb_end(b, m);
}

static int res_id(penc *s, tk__buf *b, const char *name, const tk_id *id)
{
	switch (id->kind) {
	case TK_ID_INT: return res_int(s, b, name, id->num);
	case TK_ID_STR: return res_str(s, b, name, id->str.ptr, id->str.len);
	default: return res_json(s, b, name, "null", 4);
	}
}

/* ---- events ---- */

enum {
	FL_PH = 1,        /* ph is not the type's own: tk.ph */
	FL_FLOW_OUT = 2,  /* flow_ids = flow */
	FL_FLOW_END = 4,  /* terminating_flow_ids = flow */
	FL_OPEN = 8,      /* an END that closes a B without an E: tk.open */
	FL_DUR = 16,      /* dur is not the slice's: tk.dur */
	FL_TS = 32,       /* ts lies before the time base: tk.ts */
	FL_PID = 64,      /* the track does not say pid: tk.pid */
	FL_TID = 128,     /* nor tid: tk.tid */
	FL_BARE = 256     /* an END of an X: nothing but its track */
};

/* The TrackEvent of ev in s->te: type, track, name, category, arguments,
 * the reserved annotations `fl` asks for, flows. */
static int ev_body(penc *s, const tk_event *ev, int type, uint64_t track, unsigned fl, uint64_t flow)
{
	tk__buf *b = &s->te;
	b->len = 0;
	if (tk__pb_room(b, 4 * TK__PB_ROOM))
		return TK_ERR_NOMEM;
	tk__pb_uint(b, F_TE_TYPE, (uint64_t)type);
	tk__pb_uint(b, F_TE_TRACK, track);
	if (fl & FL_BARE)
		return 0;
	uint64_t iid;
	if (ev->has & TK_HAS_NAME) {
		if (intern(s, K_NAME, ev->name.ptr, ev->name.len, &iid))
			return TK_ERR_NOMEM;
		tk__pb_uint(b, F_TE_NAME_IID, iid);
	}
	if (ev->has & TK_HAS_CAT) {
		if (intern(s, K_CAT, ev->cat.ptr, ev->cat.len, &iid))
			return TK_ERR_NOMEM;
		tk__pb_uint(b, F_TE_CAT_IIDS, iid);
	}
	int rc = 0;
	if (type != TYPE_COUNTER && ev->args.ptr) {
		if (ev->args.len > 2 && ev->args.ptr[0] == '{')
			rc = members(s, b, F_TE_ANNOTATIONS, ev->args, 0, 1);
		else
			rc = res_json(s, b, "tk.args", ev->args.ptr, ev->args.len);
	}
	if (!rc && (fl & FL_PH) && !(ev->has & TK_HAS_PH)) {
		rc = res_json(s, b, "tk.ph", "null", 4); /* no phase at all */
	} else if (!rc && (fl & FL_PH)) {
		char ph = ev->ph;
		rc = res_str(s, b, "tk.ph", &ph, 1);
	}
	if (!rc && ev->extra.ptr)
		rc = res_str(s, b, "tk.extra", ev->extra.ptr, ev->extra.len);
	if (!rc && ev->id.kind != TK_ID_NONE)
		rc = res_id(s, b, "tk.id", &ev->id);
	if (!rc && (fl & FL_PID))
		rc = res_id(s, b, "tk.pid", &ev->pid);
	if (!rc && (fl & FL_TID))
		rc = res_id(s, b, "tk.tid", &ev->tid);
	if (!rc && (fl & FL_DUR) && (ev->has & TK_HAS_DUR))
		rc = res_int(s, b, "tk.dur", ev->dur);
	if (!rc && (fl & FL_TS))
		rc = (ev->has & TK_HAS_TS) ? res_int(s, b, "tk.ts", ev->ts) : res_json(s, b, "tk.ts", "null", 4);
	if (!rc && (fl & FL_OPEN))
		rc = res_json(s, b, "tk.open", "true", 4);
	if (rc)
		return rc;
	if (tk__pb_room(b, 2 * TK__PB_ROOM))
		return TK_ERR_NOMEM;
	if (fl & FL_FLOW_OUT)
		tk__pb_fixed64(b, F_TE_FLOWS, flow);
	if (fl & FL_FLOW_END)
		tk__pb_fixed64(b, F_TE_TERM_FLOWS, flow);
	return 0;
}

/* The packet timestamp of ts: 0 with *fl |= FL_TS when it is before the
 * time base or has none. */
static int64_t pkt_ts(const pw *s, const tk_event *ev, unsigned *fl)
{
	int64_t t;
	if (!(ev->has & TK_HAS_TS) || __builtin_add_overflow(ev->ts, s->base, &t) || t < 0) {
		*fl |= FL_TS;
		return 0;
	}
	return t;
}

/* A thread's own descriptor holds its pid and tid, else the event does. */
static unsigned id_flags(const pthr *t)
{
	return t->native ? 0 : FL_PID | FL_TID;
}

/* ---- slices: lanes, and the heap of their ends ---- */

static void heap_push(pw *s, pheap h)
{
	size_t i = s->n_heap++;
	while (i) {
		size_t p = (i - 1) / 2;
		const pheap *q = &s->heap[p];
		if (q->end < h.end || (q->end == h.end && q->seq > h.seq))
			break;
		s->heap[i] = *q;
		i = p;
	}
	s->heap[i] = h;
}

static pheap heap_pop(pw *s)
{
	pheap top = s->heap[0], last = s->heap[--s->n_heap];
	size_t i = 0, n = s->n_heap;
	for (;;) {
		size_t c = 2 * i + 1;
		if (c >= n)
			break;
		if (c + 1 < n && (s->heap[c + 1].end < s->heap[c].end ||
		                  (s->heap[c + 1].end == s->heap[c].end && s->heap[c + 1].seq > s->heap[c].seq)))
			c++;
		if (last.end < s->heap[c].end || (last.end == s->heap[c].end && last.seq > s->heap[c].seq))
			break;
		s->heap[i] = s->heap[c];
		i = c;
	}
	if (n)
		s->heap[i] = last;
	return top;
}

static int put_end(tk_writer *w, uint64_t track, int64_t end)
{
	pw *s = w->fs;
	return put_event(w, NULL, TYPE_SLICE_END, track, FL_BARE, 0, end + s->base);
}

/* Ends the slices whose end lies before `t` (all with t = INT64_MAX). */
static int ends_before(tk_writer *w, int64_t t, int all)
{
	pw *s = w->fs;
	while (s->n_heap && (all || s->heap[0].end < t)) {
		pheap h = heap_pop(s);
		plane *l = &THR(s, h.thr)->lanes[h.lane];
		if (l->n && l->seqs[l->n - 1] == h.seq) {
			l->n--;
			int rc = put_end(w, l->uuid, h.end);
			if (rc)
				return rc;
		}
	}
	return 0;
}

static int put_slice(tk_writer *w, const tk_event *ev, size_t ti)
{
	pw *s = w->fs;
	pthr *t = THR(s, ti);
	int64_t b = ev->ts, e = tk__sat_add(ev->ts, ev->dur);
	size_t k;
	for (k = 0; k < t->n_lanes; k++) {
		plane *l = &t->lanes[k];
		while (l->n && l->ends[l->n - 1] <= b) {
			l->n--;
			int rc = put_end(w, l->uuid, l->ends[l->n]);
			if (rc)
				return rc;
		}
		if (!l->n || l->ends[l->n - 1] >= e)
			break;
	}
	if (k == t->n_lanes) {
		if (TK__GROW(t->lanes, t->lanes_cap, k + 1))
			return TK_ERR_NOMEM;
		t = THR(s, ti);
		memset(&t->lanes[k], 0, sizeof t->lanes[k]);
		t->n_lanes++;
		if (k == 0) {
			t->lanes[0].uuid = t->uuid;
		} else {
			char what[48];
			snprintf(what, sizeof what, " (overlap %zu)", k);
			t->lanes[k].uuid = ++s->next_uuid;
			int rc = put_child(w, t, t->lanes[k].uuid, what);
			if (rc)
				return rc;
		}
	}
	plane *l = &t->lanes[k];
	if (l->n == l->cap) {
		size_t cap = l->cap;
		if (TK__GROW(l->ends, cap, l->n + 1))
			return TK_ERR_NOMEM;
		cap = l->cap;
		if (TK__GROW(l->seqs, cap, l->n + 1))
			return TK_ERR_NOMEM;
		l->cap = cap;
	}
	if (TK__GROW(s->heap, s->heap_cap, s->n_heap + 1))
		return TK_ERR_NOMEM;
	uint64_t seq = ++s->seq;
	l->ends[l->n] = e;
	l->seqs[l->n] = seq;
	l->n++;
	heap_push(s, (pheap){e, seq, (uint32_t)ti, (uint32_t)k});
	/* the duration rides with the beginning too, so that a reader returns
	 * the slice in the order of the beginnings, as the JSON had it */
	unsigned fl = id_flags(t) | FL_DUR;
	return put_event(w, ev, TYPE_SLICE_BEGIN, l->uuid, fl, 0, b + s->base);
}

/* ---- counters ---- */

static int ctr_track(tk_writer *w, size_t pi, const tk_event *ev, const char *key, size_t klen, uint64_t *uuid)
{
	pw *s = w->fs;
	uint64_t h = tk__id_hash(&PROC(s, pi)->pid);
	h = tk__mix64(h * 31 + tk__hash(ev->name.ptr ? ev->name.ptr : "", ev->name.len));
	h = tk__mix64(h * 31 + tk__hash(key, klen));
	int added;
	pidx *r = tk__map_put(&s->ctr_map, h, NULL, NULL, &added);
	if (!r)
		return TK_ERR_NOMEM;
	if (!added) {
		*uuid = r->idx;
		return 0;
	}
	r->idx = *uuid = ++s->next_uuid;
	tk__buf n = {0};
	int rc = tk__buf_append(&n, ev->name.ptr ? ev->name.ptr : "", ev->name.len);
	rc |= tk__buf_putc(&n, ' ');
	rc |= tk__buf_append(&n, key, klen);
	if (!rc)
		rc = put_track(w, *uuid, PROC(s, pi)->uuid, n.p, n.len, 1);
	tk__buf_free(&n);
	return rc;
}

/* A C event whose args are all numbers: one COUNTER event, its first
 * series on the event's track and the others as extra counter values.
 * 0 with *done = 0 when the args are not all numbers. */
static int put_counter(tk_writer *w, const tk_event *ev, size_t pi, int64_t ts, unsigned fl, int *done)
{
	pw *s = w->fs;
	*done = 0;
	tk__js_iter it;
	tk_sv k, v;
	int rc, n = 0, ints = 1;
	if (!ev->args.ptr || ev->args.len <= 2 || tk__js_obj(&it, ev->args))
		return 0;
	while ((rc = tk__js_member(&it, &k, &v)) == 1) {
		if (memchr(k.ptr, '\\', k.len) || !v.len || !(v.ptr[0] == '-' || (v.ptr[0] >= '0' && v.ptr[0] <= '9')))
			return 0;
		/* which field the number takes, written to the side */
		tk__buf *t = &s->scratch;
		t->len = 0;
		if (tk__pb_room(t, TK__PB_ROOM))
			return TK_ERR_NOMEM;
		if (!number_field(t, v, 1, 2, 3))
			return 0;
		if (t->p[0] != (1 << 3))
			ints = 0;
		n++;
	}
	if (rc < 0 || !n)
		return 0;
	/* the tracks first: each is declared before the event uses it */
	uint64_t *uu = calloc((size_t)n, sizeof *uu);
	if (!uu)
		return TK_ERR_NOMEM;
	int i = 0;
	tk__js_obj(&it, ev->args);
	while (!rc && tk__js_member(&it, &k, &v) == 1)
		rc = ctr_track(w, pi, ev, k.ptr, k.len, &uu[i++]);
	pop o = {.kind = OP_COUNTER, .fl = fl, .ts = ts, .ints = (unsigned char)ints};
	if (!rc)
		rc = op_add(w, &o, ev, uu, (size_t)n * sizeof *uu);
	free(uu);
	*done = !rc;
	return rc;
}

/* The COUNTER event put_counter() decided: its values from the args. */
static int ctr_encode(penc *s, const pop *o, const char *uu, const tk_event *ev)
{
	uint64_t u;
	memcpy(&u, uu, sizeof u);
	int rc = ev_body(s, ev, TYPE_COUNTER, u, o->fl, 0);
	tk__buf *b = &s->te;
	tk__js_iter it;
	tk_sv k, v;
	size_t i = 0;
	tk__js_obj(&it, ev->args);
	while (!rc && tk__js_member(&it, &k, &v) == 1) {
		if (tk__pb_room(b, 2 * TK__PB_ROOM))
			return TK_ERR_NOMEM;
		char tmp[64];
		memcpy(tmp, v.ptr, v.len); /* number_field took it: shorter than 64 */
		tmp[v.len] = 0;
		if (i > 0) {
			memcpy(&u, uu + i * sizeof u, sizeof u);
			tk__pb_uint(b, o->ints ? F_TE_EXTRA_CTR_TRACKS : F_TE_EXTRA_DCTR_TRACKS, u);
		}
		if (o->ints)
			tk__pb_uint(b, i ? F_TE_EXTRA_CTR_VALUES : F_TE_CTR_VALUE, (uint64_t)strtoll(tmp, NULL, 10));
		else
			put_double(b, i ? F_TE_EXTRA_DCTR_VALUES : F_TE_DCTR_VALUE, strtod(tmp, NULL));
		i++;
	}
	return rc ? rc : put_packet(s, o->ts, F_PKT_TRACK_EVENT, b->p, b->len, 0);
}

/* ---- M events and top-level metadata: ChromeEventBundle ---- */

static int arg_json(tk__buf *b, const char *name, size_t nlen, unsigned vfield, const char *p, size_t n)
{
	if (tk__pb_room(b, 2 * TK__PB_ROOM))
		return TK_ERR_NOMEM;
	size_t m = tk__pb_begin(b, F_CTE_ARGS);
	if (tk__pb_bytes(b, F_ARG_NAME, name, nlen) || tk__pb_bytes(b, vfield, p, n))
		return TK_ERR_NOMEM;
	return tk__pb_end(b, m);
}

static int arg_id(tk__buf *b, const char *name, const tk_id *id)
{
	tk__buf t = {0};
	int rc = 0;
	if (id->kind == TK_ID_INT)
		rc = id_text(&t, id);
	else if (id->kind == TK_ID_STR)
		rc = tk__json_put_str(&t, id->str.ptr, id->str.len);
	else
		rc = tk__buf_puts(&t, "null");
	if (!rc)
		rc = arg_json(b, name, strlen(name), F_ARG_JSON, t.p, t.len);
	tk__buf_free(&t);
	return rc ? TK_ERR_NOMEM : 0;
}

/* An M event as a ChromeTraceEvent of the bundle being gathered. */
static int bundle_add(tk_writer *w, const tk_event *ev)
{
	pw *s = w->fs;
	tk__buf *b = &s->bundle;
	int rc = 0;
	if (tk__pb_room(b, 4 * TK__PB_ROOM))
		return TK_ERR_NOMEM;
	size_t m = tk__pb_begin(b, F_CEB_EVENTS);
	if (ev->has & TK_HAS_NAME)
		rc |= tk__pb_bytes(b, F_CTE_NAME, ev->name.ptr, ev->name.len);
	if (tk__pb_room(b, 4 * TK__PB_ROOM))
		return TK_ERR_NOMEM;
	if (ev->has & TK_HAS_TS)
		tk__pb_uint(b, F_CTE_TS, (uint64_t)ev->ts);
	tk__pb_uint(b, F_CTE_PHASE, (uint64_t)(unsigned char)ev->ph);
	if (fits_i32(&ev->tid))
		tk__pb_uint(b, F_CTE_TID, (uint64_t)ev->tid.num);
	else
		rc |= arg_id(b, "tk.tid", &ev->tid);
	if (fits_i32(&ev->pid)) {
		if (tk__pb_room(b, TK__PB_ROOM))
			return TK_ERR_NOMEM;
		tk__pb_uint(b, F_CTE_PID, (uint64_t)ev->pid.num);
	} else {
		rc |= arg_id(b, "tk.pid", &ev->pid);
	}
	if (ev->has & TK_HAS_CAT)
		rc |= tk__pb_bytes(b, F_CTE_CAT, ev->cat.ptr, ev->cat.len);
	if (ev->args.ptr && ev->args.len > 2 && ev->args.ptr[0] == '{') {
		tk__js_iter it;
		tk_sv k, v, name;
		int r2 = tk__js_obj(&it, ev->args);
		while (!rc && !r2 && (r2 = tk__js_member(&it, &k, &v)) == 1) {
			rc |= member_name(k, 1, &s->name, &name);
			if (!rc)
				rc |= arg_json(b, name.ptr, name.len, F_ARG_JSON, v.ptr, v.len);
			r2 = 0;
		}
		if (r2 < 0)
			rc |= r2;
	} else if (ev->args.ptr) {
		rc |= arg_json(b, "tk.args", 7, F_ARG_JSON, ev->args.ptr, ev->args.len);
	}
	if (ev->extra.ptr)
		rc |= arg_json(b, "tk.extra", 8, F_ARG_STRING, ev->extra.ptr, ev->extra.len);
	if (ev->id.kind != TK_ID_NONE)
		rc |= arg_id(b, "tk.id", &ev->id);
	if (ev->has & TK_HAS_DUR) {
		char num[32];
		int n = snprintf(num, sizeof num, "%lld", (long long)ev->dur);
		rc |= arg_json(b, "tk.dur", 6, F_ARG_JSON, num, (size_t)n);
	}
	if (rc)
		return rc < 0 ? rc : TK_ERR_NOMEM;
	s->n_bundle++;
	return tk__pb_end(b, m);
}

static int bundle_flush(tk_writer *w)
{
	pw *s = w->fs;
	if (!s->n_bundle)
		return 0;
	int rc = op_raw(w, F_PKT_CHROME_EVENTS, &s->bundle);
	s->bundle.len = 0;
	s->n_bundle = 0;
	return rc;
}

/* The first packet: the sequence's state cleared, and every top-level
 * metadata member in order, with a mark where "traceEvents" stood. */
static int put_metadata(tk_writer *w)
{
	pw *s = w->fs;
	tk__buf *b = &s->scratch;
	b->len = 0;
	int rc = 0, marked = 0;
	for (size_t i = 0; i <= s->n_meta && !rc; i++) {
		if (tk__pb_room(b, 4 * TK__PB_ROOM))
			return TK_ERR_NOMEM;
		if (!marked && (i == s->n_meta || s->meta[i].after)) {
			size_t m = tk__pb_begin(b, F_CEB_METADATA);
			rc |= tk__pb_bytes(b, F_CM_NAME, META_EVENTS, strlen(META_EVENTS));
			tk__pb_uint(b, F_CM_BOOL, 1);
			rc |= tk__pb_end(b, m);
			marked = 1;
		}
		if (i == s->n_meta)
			break;
		const pmeta *mt = &s->meta[i];
		size_t m = tk__pb_begin(b, F_CEB_METADATA);
		if (strncmp(mt->key, RESERVED, 3) == 0)
			rc |= tk__buf_varint(b, (uint64_t)F_CM_NAME << 3 | TK__PB_LEN) ||
			      tk__buf_varint(b, strlen(mt->key) + 3) || tk__buf_puts(b, RESERVED) ||
			      tk__buf_puts(b, mt->key);
		else
			rc |= tk__pb_bytes(b, F_CM_NAME, mt->key, strlen(mt->key));
		rc |= tk__pb_bytes(b, F_CM_JSON, mt->json, strlen(mt->json));
		rc |= tk__pb_end(b, m);
	}
	return rc ? TK_ERR_NOMEM : op_raw(w, F_PKT_CHROME_EVENTS, b);
}

static const char *meta_json(const pw *s, const char *key)
{
	for (size_t i = 0; i < s->n_meta; i++)
		if (strcmp(s->meta[i].key, key) == 0)
			return s->meta[i].json;
	return NULL;
}

/* The root track orders processes and threads; then the processes (by
 * rank of a merged trace, CPU before GPU, sort index, pid) and threads. */
static int put_tracks(tk_writer *w)
{
	pw *s = w->fs;
	const char *merge = meta_json(s, "tracekitMerge");
	int64_t k = 0;
	if (!merge || tk__merge_pid_span((tk_sv){merge, strlen(merge)}, &k))
		k = 0;
	tk__buf *b = &s->scratch;
	b->len = 0;
	if (tk__pb_room(b, TK__PB_ROOM))
		return TK_ERR_NOMEM;
	tk__pb_uint(b, F_TD_UUID, 0);
	tk__pb_uint(b, F_TD_PROC_ORDER, 1);
	tk__pb_uint(b, F_TD_THREAD_ORDER, 1);
	int rc = op_raw(w, F_PKT_TRACK_DESC, b);
	pproc **po = malloc((s->pt.n_proc + 1) * sizeof *po);
	pthr **to = malloc((s->pt.n_thr + 1) * sizeof *to);
	if (!po || !to)
		rc = TK_ERR_NOMEM;
	for (size_t i = 0; !rc && i < s->pt.n_proc; i++) {
		pproc *p = PROC(s, i);
		int64_t rank; /* a string pid ("rank 3 Spans") has its rank too */
		p->rank = k && tk_merge_rank_of(&p->pid, k, &rank) == 0 ? rank : 0;
		p->gpu = is_gpu(p);
		po[i] = p;
	}
	if (!rc)
		qsort(po, s->pt.n_proc, sizeof *po, proc_cmp);
	for (size_t i = 0; !rc && i < s->pt.n_proc; i++)
		rc = put_process(w, po[i], (int32_t)i);
	for (size_t i = 0; !rc && i < s->pt.n_thr; i++)
		to[i] = THR(s, i);
	if (!rc)
		qsort(to, s->pt.n_thr, sizeof *to, thr_cmp);
	for (size_t i = 0; !rc && i < s->pt.n_thr; i++)
		rc = put_thread(w, to[i], (int32_t)i);
	free(po);
	free(to);
	return rc;
}

/* ---- encoding the chunks, on threads ---- */

static void enc_free(penc *e)
{
	for (int k = 0; k < K_N; k++)
		tk__strtab_free(&e->tab[k]);
	tk__buf_free(&e->te);
	tk__buf_free(&e->intern);
	tk__buf_free(&e->scratch);
	tk__buf_free(&e->name);
}

/* The packet of op o: data, its body or its tracks; ev, its event (NULL:
 * none). */
static int op_encode(penc *e, const pop *o, const char *data, const tk_event *ev)
{
	static const tk_event none;
	intern_bound(e);
	if (o->kind == OP_RAW)
		return put_packet(e, o->ts, o->field, data, o->len, 0);
	if (!ev)
		ev = &none;
	if (o->kind == OP_COUNTER)
		return ctr_encode(e, o, data, ev);
	int rc = ev_body(e, ev, o->type, o->track, o->fl, o->flow);
	if (rc)
		return rc == TK_ERR_NOMEM ? rc : tk__err_set(e->err, rc, "an event's args are not valid JSON");
	return put_packet(e, o->ts, F_PKT_TRACK_EVENT, e->te.p, e->te.len, 0);
}

/* A chunk's start: the sequence's state cleared, its clock at clk (the
 * latest packet time before it, so that no snapshot goes back), the
 * primary clock named in the trace's first. */
static void enc_start(penc *e, int first, int64_t clk, tk__buf *out, tk__err *err)
{
	intern_clear(e);
	e->snapshots = !first;
	e->clk = clk;
	e->intern.len = 0;
	e->out = out;
	e->err = err;
}

/* The chunk's packets into c->out; an error into c->err. */
static void chunk_encode(penc *e, pchunk *c)
{
	enc_start(e, c->first, c->clk, &c->out, &c->err);
	for (size_t i = 0; i < c->n; i++) {
		const pop *o = &c->ops[i];
		tk_event ev;
		if (o->ev)
			tk__event_unpack(&c->arena, o->ev - 1, &ev);
		int rc = op_encode(e, o, o->len ? c->arena.p + o->off : NULL, o->ev ? &ev : NULL);
		if (rc) {
			if (!c->err.code)
				tk__err_set(&c->err, rc, "out of memory");
			break;
		}
	}
}

/* An encoded chunk to the output. */
static int chunk_out(tk_writer *w, pchunk *c)
{
	if (c->err.code)
		return tk__err_copy(&w->err, &c->err);
	int rc = tk__writer_flush(w);
	if (!rc && c->out.len && (rc = tk__sink_give(&w->sink, &c->out)))
		rc = tk__err_set(&w->err, rc, "%s", w->sink.err);
	return rc;
}

/* The first chunk of the ring that waits for an encoder (lock held). */
static pchunk *ring_queued(penc_pool *P)
{
	for (size_t i = 0; i < P->n; i++) {
		pchunk *c = P->ring[(P->head + i) % P->cap];
		if (c->state == C_QUEUED)
			return c;
	}
	return NULL;
}

/* The pool's step: the first chunk that waits encoded with encoder e. */
static int enc_step(void *owner, void *e)
{
	penc_pool *P = owner;
	pchunk *c = ring_queued(P);
	if (!c)
		return 0;
	c->state = C_BUSY;
	pthread_mutex_unlock(&P->W.mu);
	chunk_encode(e, c);
	pthread_mutex_lock(&P->W.mu);
	c->state = C_DONE;
	tk__workers_done(&P->W);
	return 1;
}

static void enc_fini(void *owner, void *e)
{
	(void)owner;
	enc_free(e);
}

static const tk__workers_ops enc_ops = {sizeof(penc), NULL, enc_fini, enc_step};

/* Threads for the chunks (tk_writer_opts.threads, 0 = one per processor:
 * the caller and the others), when there are two or more. */
static void enc_pool_start(tk_writer *w)
{
	pw *s = w->fs;
	unsigned n = w->opts.threads ? w->opts.threads : (unsigned)tk__cpus();
	__atomic_store_n(&tk__pf_encoders, 0, __ATOMIC_RELAXED);
	if (n > ENC_MAX_THREADS)
		n = ENC_MAX_THREADS;
	if (n < 2)
		return;
	penc_pool *P = calloc(1, sizeof *P);
	if (!P)
		return; /* the caller encodes: the same bytes */
	P->cap = n; /* one for each encoder, the caller's too */
	P->ring = calloc(P->cap, sizeof *P->ring);
	if (!P->ring) {
		free(P);
		return;
	}
	tk__workers_init(&P->W, &enc_ops, P);
	s->pool = P;
	unsigned started = tk__workers_start(&P->W, n - 1, "tk-encode");
	__atomic_store_n(&tk__pf_encoders, started, __ATOMIC_RELAXED);
	if (!started)
		enc_pool_stop(s);
}

/* The threads stop, and the chunks they had go. */
static void enc_pool_stop(pw *s)
{
	penc_pool *P = s->pool;
	if (!P)
		return;
	tk__workers_free(&P->W);
	for (size_t i = 0; i < P->n; i++)
		chunk_free(P->ring[(P->head + i) % P->cap]);
	free(P->ring);
	free(P);
	s->pool = NULL;
}

/* The oldest chunk of the ring written out. While it is being encoded,
 * the caller encodes any chunk that waits. */
static int ring_pop(tk_writer *w)
{
	pw *s = w->fs;
	penc_pool *P = s->pool;
	pthread_mutex_lock(&P->W.mu);
	pchunk *c = P->ring[P->head];
	while (c->state != C_DONE)
		tk__workers_help(&P->W, &s->enc);
	P->head = (P->head + 1) % P->cap;
	P->n--;
	pthread_mutex_unlock(&P->W.mu);
	int rc = chunk_out(w, c);
	chunk_recycle(s, c);
	return rc;
}

/* The chunk being filled (there is one only with threads: without, each
 * packet is encoded as it is decided) to the ring, the oldest chunk
 * written out first when the ring is full. */
static int chunk_submit(tk_writer *w)
{
	pw *s = w->fs;
	pchunk *c = s->cur;
	penc_pool *P = s->pool;
	int rc;
	s->cur = NULL;
	if (!c)
		return 0;
	if (P->n == P->cap && (rc = ring_pop(w))) {
		chunk_recycle(s, c);
		return rc;
	}
	pthread_mutex_lock(&P->W.mu);
	c->state = C_QUEUED;
	P->ring[(P->head + P->n) % P->cap] = c;
	P->n++;
	tk__workers_wake(&P->W);
	pthread_mutex_unlock(&P->W.mu);
	return 0;
}

/* Every chunk encoded and written out, in order. */
static int chunks_finish(tk_writer *w)
{
	pw *s = w->fs;
	int rc = chunk_submit(w);
	while (!rc && s->pool && s->pool->n)
		rc = ring_pop(w);
	return rc;
}

/* ---- pass 2: the events in time order ---- */

static int put_one(tk_writer *w, const tk_event *ev)
{
	pw *s = w->fs;
	int rc;
	if (ev->ph == 'M')
		return s->bundle.len >= BUNDLE_MAX && (rc = bundle_flush(w)) ? rc : bundle_add(w, ev);
	if ((rc = bundle_flush(w)))
		return rc;
	unsigned fl = 0;
	int64_t ts = pkt_ts(s, ev, &fl);
	if (ev->has & TK_HAS_TS) {
		int64_t end = ev->ts, e2;
		if ((ev->has & TK_HAS_DUR) && ev->dur > 0 && !__builtin_add_overflow(ev->ts, ev->dur, &e2))
			end = e2;
		if (!s->has_max || end > s->max_ts)
			s->max_ts = end;
		s->has_max = 1;
	}
	if (ev->ph == 'C' && ev->tid.kind == TK_ID_NONE) {
		size_t pi;
		if ((rc = proc_of(s, &ev->pid, &pi)))
			return rc;
		int done;
		fl |= PROC(s, pi)->native ? 0 : FL_PID;
		if ((rc = put_counter(w, ev, pi, ts, fl, &done)) || done)
			return rc;
		/* not all numbers: an instant on the process's own track */
		return put_event(w, ev, TYPE_INSTANT, PROC(s, pi)->uuid, fl | FL_PH | FL_PID | FL_TID | FL_DUR, 0, ts);
	}
	size_t ti;
	if ((rc = thr_of(s, &ev->pid, &ev->tid, &ti)))
		return rc;
	pthr *t = THR(s, ti);
	fl |= id_flags(t);
	int64_t end;
	if (ev->ph == 'X' && !(fl & FL_TS) && (ev->has & TK_HAS_DUR) && ev->dur >= 0 &&
	    !__builtin_add_overflow(ev->ts, ev->dur, &end) && !__builtin_add_overflow(end, s->base, &end))
		return put_slice(w, ev, ti);
	if (ev->ph == 'C' && t->native) {
		int done;
		if ((rc = put_counter(w, ev, t->proc, ts, fl | FL_TID, &done)) || done)
			return rc;
	}
	if (ev->ph == 'B' && !(fl & FL_TS)) {
		if (!t->be_uuid) {
			t->be_uuid = ++s->next_uuid;
			if ((rc = put_child(w, t, t->be_uuid, " (B/E)")))
				return rc;
		}
		t->be_open++;
		return put_event(w, ev, TYPE_SLICE_BEGIN, t->be_uuid, fl | FL_PH | FL_DUR, 0, ts);
	}
	if (ev->ph == 'E' && !(fl & FL_TS) && t->be_open) {
		t->be_open--;
		return put_event(w, ev, TYPE_SLICE_END, t->be_uuid, fl | FL_PH | FL_DUR, 0, ts);
	}
	/* an instant: "i" as it is, anything else with its phase */
	fl |= FL_DUR | (ev->ph != 'i' || !(ev->has & TK_HAS_PH) ? FL_PH : 0);
	uint64_t flow = 0;
	if (is_flow(ev->ph) && ev->id.kind != TK_ID_NONE) {
		flow = tk__flow_hash(ev);
		pflow *f = tk__map_find(&s->flow_map, flow, NULL, NULL);
		if (f && ev->ph == 'f') {
			if (f->open) {
				fl |= FL_FLOW_END;
				f->open = 0;
			}
			f->f_left--;
		} else if (f && (f->open || (ev->ph == 's' && f->f_left))) {
			fl |= FL_FLOW_OUT;
			f->open = 1;
		}
	}
	return put_event(w, ev, TYPE_INSTANT, t->uuid, fl, flow, ts);
}

static int is_slice(const tk_event *e)
{
	return e->ph == 'X' && (e->has & TK_HAS_DUR) && e->dur >= 0;
}

/* Events of one timestamp keep their order (across threads and ranks it
 * decides nothing here, but what reads the trace back may care), except
 * the slices of one thread: those go longest first, a parent before the
 * children that start with it, in the places the thread's slices had. An
 * insertion sort along each thread's slices: stable, and groups are small. */
static void group_order(tk_event **g, size_t n)
{
	for (size_t i = 1; i < n; i++) {
		if (!is_slice(g[i]))
			continue;
		size_t j = i;
		for (size_t k = i; k-- > 0;) {
			if (!is_slice(g[k]) || !tk__id_eq(&g[k]->pid, &g[j]->pid) || !tk__id_eq(&g[k]->tid, &g[j]->tid))
				continue;
			if (g[k]->dur >= g[j]->dur)
				break;
			tk_event *t = g[k];
			g[k] = g[j];
			g[j] = t;
			j = k;
		}
	}
}

static int group_flush(void *ctx, tk_event **g, size_t n)
{
	tk_writer *w = ctx;
	int rc = 0;
	if ((g[0]->has & TK_HAS_TS) && (rc = ends_before(w, g[0]->ts, 0)))
		return rc;
	group_order(g, n);
	for (size_t i = 0; i < n && !rc; i++)
		rc = put_one(w, g[i]);
	return rc;
}

static int pw_close(tk_writer *w)
{
	pw *s = w->fs;
	int rc = tk_sorter_finish(s->sorter);
	if (rc)
		return tk__err_set(&w->err, rc, "%s", tk_sorter_error(s->sorter));
	enc_pool_start(w);
	/* the first member of the name, when it is an integer (the reader's rule) */
	const char *base = meta_json(s, "baseTimeNanoseconds");
	int64_t bv;
	if (base && tk__js_int((tk_sv){base, strlen(base)}, &bv) == 0)
		s->base = bv;
	int from_sorter = 0;
	if (!(rc = put_metadata(w)) && !(rc = put_tracks(w))) {
		rc = tk__sorter_groups(s->sorter, GROUP_MAX, group_flush, w, &from_sorter);
		if (rc && from_sorter)
			tk__err_set(&w->err, rc, "%s", tk_sorter_error(s->sorter));
	}
	if (!rc && !(rc = bundle_flush(w)) && !(rc = ends_before(w, 0, 1))) {
		/* B events without their E: ended at the last time of the trace */
		for (size_t i = 0; i < s->pt.n_thr && !rc; i++)
			for (pthr *t = THR(s, i); t->be_open && !rc; t->be_open--)
				rc = put_event(w, NULL, TYPE_SLICE_END, t->be_uuid, FL_OPEN, 0, s->max_ts + s->base);
	}
	if (!rc)
		rc = chunks_finish(w);
	enc_pool_stop(s); /* the threads end with the writing */
	if (rc)
		return w->err.code ? w->err.code : tk__err_set(&w->err, rc, "out of memory");
	return 0;
}

static const tk__wfmt pftrace_wr = {0, pw_open, pw_add_meta, NULL, pw_write, pw_close, pw_free, NULL};

/* ---- reading ---------------------------------------------------------- */

enum { RT_OTHER, RT_PROCESS, RT_THREAD, RT_COUNTER };

typedef struct rhold { /* a slice begun and not yet ended */
	int b; /* 1: a B event, 2: a whole X (both already returned): only its place */
	int64_t ts;
	unsigned has;
	tk_sv name, cat;
	tk_id pid, tid, id;
	tk__buf args, extra;
	int has_args, has_extra;
} rhold;

typedef struct rtrack {
	uint64_t uuid, parent;
	int kind;
	tk_id pid, tid; /* strings interned */
	tk_sv name;
	rhold *stack;
	size_t n, cap;
} rtrack;

#define SEQ_CLOCKS 8 /* sequence-scoped clocks one sequence may define */

typedef struct rclock { /* a sequence-scoped clock, from a ClockSnapshot */
	uint64_t id;
	int incr;          /* each timestamp adds to the last */
	int64_t mult;      /* nanoseconds per unit */
	int64_t last;      /* its last value, ns */
	int64_t ref_seq;   /* its value at the snapshot, ns */
	int64_t ref_trace; /* the trace clock's value at the snapshot, ns */
} rclock;

/* An interned string of a sequence, by iid: its text in r->strs, and
 * whether it goes into JSON between quotes as it is (printable ASCII, no
 * quote or backslash), found once when it is interned. */
typedef struct rsent {
	const char *p; /* NULL: no such iid here */
	uint32_t len;
	uint32_t plain;
} rsent;

typedef struct rdense { /* iids 0 .. n-1 of one kind, the usual dense ones */
	rsent *v;
	size_t n, cap, used;
} rdense;

typedef struct rseq {
	uint64_t id;
	rdense d[K_N];   /* small iids, looked up by index */
	tk__map m[K_N]; /* the others: iid -> string's id in r->strs, plus one */
	uint64_t default_track;
	int has_default;
	uint64_t default_clock; /* TracePacketDefaults.timestamp_clock_id, 0: none */
	rclock clk[SEQ_CLOCKS];
	int n_clk;
} rseq;

typedef struct pr {
	rtrack *tracks;
	size_t n_tracks, tracks_cap;
	tk__map track_map; /* uuid -> index + 1 */
	rseq *seqs;
	size_t n_seqs, seqs_cap;
	tk__map seq_map; /* trusted_packet_sequence_id -> index + 1 */
	int ours;  /* written by tracekit: the tk.* names are its own */
	int after; /* metadata past the "traceEvents" mark */
	int64_t base;
	int base_seen;
	tk__buf pkt, val, tmp;
	/* events waiting to be returned: M events of a bundle, slices left open */
	tk_event **q;
	size_t qn, qi, q_cap;
	tk_event *cur; /* the queued event returned last */
	int done;
	uint64_t stray_ends, unsupported;
	uint64_t at; /* the decoded offset just past the packet being read: where its errors are */
	struct rscan *scan;     /* te_scan's room */
	const struct pres *pre; /* its annotations as a thread rendered them, NULL: none */
	struct ppool *pool;     /* the threads that render ahead, NULL when none */
	int pool_tried;
	uint64_t left; /* a thread: packets met with its block's texts full (some the caller took already); the caller: all (tests) */
} pr;

/* Packets (field 1 of Trace) whose fields parse, as far as the bytes
 * offered go: a whole one outbids JSON (a file that starts with a newline
 * and a brace could be either); only the start of a long one bids low. */
static int pf_bid(const unsigned char *p, size_t n)
{
	size_t at = 0;
	int whole = 0;
	while (at < n && whole < 8) {
		const unsigned char *q = p + at;
		int bad = 0, k;
		if (*q++ != 0x0a)
			return 0;
		uint64_t len = tk__get_varint(&q, p + n, &bad);
		if (bad)
			break; /* the offer ends inside the length */
		size_t avail = (size_t)(p + n - q);
		tk__pb in = tk__pb_of(q, len < avail ? (size_t)len : avail);
		tk__pb_field f;
		while ((k = tk__pb_next(&in, &f)) > 0)
			if (f.num > 1000)
				return 0;
		if (len > avail)
			break; /* a field cut by the end of the offer is fine */
		if (k < 0)
			return 0;
		whole++;
		at = (size_t)(q - p) + (size_t)len;
	}
	return whole ? 20 : at == 0 && n > 2 ? 6 : 0;
}

static int nomem(tk_reader *r)
{
	return tk__err_set(&r->err, TK_ERR_NOMEM, "out of memory");
}

static int pf_open(tk_reader *r)
{
	pr *s = calloc(1, sizeof *s);
	if (!s)
		return nomem(r);
	r->fs = s;
	tk__map_init_int(&s->track_map);
	tk__map_init_int(&s->seq_map);
	return 0;
}

static void pool_free(pr *s);
static void scan_free(struct rscan *sc);

static void hold_free(rhold *h)
{
	tk__buf_free(&h->args);
	tk__buf_free(&h->extra);
}

static void pf_free(tk_reader *r)
{
	pr *s = r->fs;
	if (!s)
		return;
	pool_free(s);
	scan_free(s->scan);
	for (size_t i = 0; i < s->n_tracks; i++) {
		for (size_t k = 0; k < s->tracks[i].cap; k++)
			hold_free(&s->tracks[i].stack[k]);
		free(s->tracks[i].stack);
	}
	free(s->tracks);
	tk__map_free(&s->track_map);
	for (size_t i = 0; i < s->n_seqs; i++)
		for (int k = 0; k < K_N; k++) {
			tk__map_free(&s->seqs[i].m[k]);
			free(s->seqs[i].d[k].v);
		}
	free(s->seqs);
	tk__map_free(&s->seq_map);
	tk__buf_free(&s->pkt);
	tk__buf_free(&s->val);
	tk__buf_free(&s->tmp);
	for (size_t i = s->qi; i < s->qn; i++)
		tk_event_free(s->q[i]);
	tk_event_free(s->cur);
	free(s->q);
	free(s);
	r->fs = NULL;
}

static int bad_pkt(tk_reader *r, const char *what)
{
	return tk__reader_fail_at(r, TK_ERR_FORMAT, ((pr *)r->fs)->at, "%s", what);
}

/* The state of packet sequence `id`, made at its first packet; NULL with
 * *rc set: TK_ERR_NOMEM, or TK_ERR_LIMIT past SEQ_MAX sequences (each
 * holds its interned strings, clocks and defaults: a few bytes of input
 * per sequence must not cost a kilobyte each without end). */
#define SEQ_MAX 65536
static rseq *seq_of(pr *s, uint64_t id, int *rc)
{
	uint64_t i = tk__map_get0(&s->seq_map, id);
	if (i)
		return &s->seqs[i - 1];
	if (s->n_seqs >= SEQ_MAX) {
		*rc = TK_ERR_LIMIT;
		return NULL;
	}
	if (TK__GROW(s->seqs, s->seqs_cap, s->n_seqs + 1) || tk__map_put_int(&s->seq_map, id, s->n_seqs + 1)) {
		*rc = TK_ERR_NOMEM;
		return NULL;
	}
	rseq *q = &s->seqs[s->n_seqs++];
	memset(q, 0, sizeof *q);
	q->id = id;
	for (int k = 0; k < K_N; k++)
		tk__map_init_int(&q->m[k]);
	return q;
}

static int seq_fail(tk_reader *r, int rc)
{
	if (rc == TK_ERR_LIMIT)
		return tk__reader_fail_at(r, TK_ERR_LIMIT, ((pr *)r->fs)->at,
		                          "more than %d packet sequences (trusted_packet_sequence_id)", SEQ_MAX);
	return nomem(r);
}

static int plain_text(const unsigned char *u, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (u[i] < 0x20 || u[i] >= 0x7f || u[i] == '"' || u[i] == '\\')
			return 0;
	return 1;
}

/* The string interned as iid of a kind; *plain (when not NULL) 1 where it
 * needs no escaping in JSON, 0 where that is unknown or it does. */
static tk_sv interned(tk_reader *r, const rseq *q, int kind, uint64_t iid, int *plain)
{
	tk_sv none = {NULL, 0};
	if (plain)
		*plain = 0;
	if (!q)
		return none;
	const rdense *d = &q->d[kind];
	if (iid < d->n && d->v[iid].p) {
		if (plain)
			*plain = (int)d->v[iid].plain;
		return (tk_sv){d->v[iid].p, d->v[iid].len};
	}
	uint64_t v = tk__map_get0(&q->m[kind], iid);
	return v ? r->strs.ents[v - 1] : none;
}

/* Keeps iid -> v in the dense table where iid is within it or close to
 * the number it holds (so that it stays at most about twice that, plus 64
 * slots: a sequence's first iids are 1, 2, ...; one entry at a large iid
 * must not make every sequence's table large): 1 kept,
 * 0 not (the map's then), TK_ERR_NOMEM. An iid within the table is always
 * kept there, so that it hides no later entry of the map. */
static int dense_put(rdense *d, uint64_t iid, tk_sv v)
{
	if (v.len > UINT32_MAX || (iid >= d->n && iid >= 2 * (uint64_t)d->used + 64))
		return 0;
	if (iid >= d->n) {
		size_t cap = d->cap;
		if (TK__GROW(d->v, cap, (size_t)iid + 1))
			return TK_ERR_NOMEM;
		memset(d->v + d->cap, 0, (cap - d->cap) * sizeof *d->v);
		d->cap = cap;
		d->n = (size_t)iid + 1;
	}
	rsent *e = &d->v[iid];
	if (!e->p)
		d->used++;
	e->p = v.ptr;
	e->len = (uint32_t)v.len;
	e->plain = (uint32_t)plain_text((const unsigned char *)v.ptr, v.len);
	return 1;
}

static void dense_clear(rdense *d)
{
	if (d->v)
		memset(d->v, 0, d->n * sizeof *d->v);
	d->n = d->used = 0;
}

/* Text of a protobuf string interned in r->strs, invalid UTF-8 replaced
 * as JSON input's is. 0 or TK_ERR_NOMEM. */
static int intern_text(tk_reader *r, const unsigned char *p, size_t n, tk_sv *out, uint32_t *id)
{
	uint32_t tmp;
	tk_sv v;
	if (tk__utf8_valid(p, n)) {
		v = tk__strtab_intern_id(&r->strs, n ? (const char *)p : "", n, id ? id : &tmp);
	} else {
		tk__buf t = {0};
		int rc = tk__json_put_str(&t, (const char *)p, n) || tk__js_str_buf((tk_sv){t.p, t.len}, &r->scratch);
		tk__buf_free(&t);
		if (rc)
			return TK_ERR_NOMEM;
		v = tk__strtab_intern_id(&r->strs, r->scratch.p ? r->scratch.p : "", r->scratch.len, id ? id : &tmp);
	}
	if (!v.ptr)
		return TK_ERR_NOMEM;
	if (out)
		*out = v;
	return 0;
}

/* The strings a packet interns, of the kinds in `kinds` (a bit per K_*). */
static int take_interned(tk_reader *r, rseq *q, const unsigned char *p, size_t n, unsigned kinds)
{
	tk__pb c = tk__pb_of(p, n);
	tk__pb_field f;
	int k;
	while ((k = tk__pb_next(&c, &f)) > 0) {
		int kind = f.num == F_INT_CATS ? K_CAT : f.num == F_INT_NAMES ? K_NAME : f.num == F_INT_ANN_NAMES ? K_ANN
		         : f.num == F_INT_STRINGS ? K_STR : -1;
		if (kind < 0 || f.wt != TK__PB_LEN || !(kinds >> kind & 1))
			continue;
		tk__pb e = tk__pb_of(f.data, f.len);
		tk__pb_field g;
		uint64_t iid = 0;
		const unsigned char *str = (const unsigned char *)"";
		size_t len = 0;
		while ((k = tk__pb_next(&e, &g)) > 0) {
			if (g.num == 1 && g.wt == TK__PB_VARINT)
				iid = g.v;
			else if (g.num == 2 && g.wt == TK__PB_LEN)
				str = g.data, len = g.len;
		}
		if (k < 0)
			return bad_pkt(r, "damaged interned data");
		uint32_t id;
		tk_sv v;
		if (intern_text(r, str, len, &v, &id))
			return nomem(r);
		int kept = dense_put(&q->d[kind], iid, v);
		if (kept < 0 || (!kept && tk__map_put_int(&q->m[kind], iid, (uint64_t)id + 1)))
			return nomem(r);
	}
	return k < 0 ? bad_pkt(r, "damaged interned data") : 0;
}

/* ---- tracks ---- */

static rtrack *track_get(pr *s, uint64_t uuid)
{
	uint64_t i = tk__map_get0(&s->track_map, uuid);
	return i ? &s->tracks[i - 1] : NULL;
}

static int take_track(tk_reader *r, const unsigned char *p, size_t n)
{
	pr *s = r->fs;
	tk__pb c = tk__pb_of(p, n), d;
	tk__pb_field f, g;
	uint64_t uuid = 0, parent = 0;
	int kind = RT_OTHER, k;
	tk_id pid = {0}, tid = {0};
	tk_sv name = {NULL, 0}, pname = {NULL, 0};
	while ((k = tk__pb_next(&c, &f)) > 0) {
		if (f.num == F_TD_UUID && f.wt == TK__PB_VARINT) {
			uuid = f.v;
		} else if (f.num == F_TD_PARENT && f.wt == TK__PB_VARINT) {
			parent = f.v;
		} else if (f.num == F_TD_NAME && f.wt == TK__PB_LEN) {
			if (intern_text(r, f.data, f.len, &name, NULL))
				return nomem(r);
		} else if (f.num == F_TD_COUNTER && f.wt == TK__PB_LEN) {
			kind = RT_COUNTER;
		} else if ((f.num == F_TD_PROCESS || f.num == F_TD_THREAD) && f.wt == TK__PB_LEN) {
			kind = f.num == F_TD_PROCESS ? RT_PROCESS : RT_THREAD;
			d = tk__pb_of(f.data, f.len);
			while ((k = tk__pb_next(&d, &g)) > 0) {
				if (g.num == 1 && g.wt == TK__PB_VARINT)
					pid = (tk_id){TK_ID_INT, (int32_t)g.v, {NULL, 0}};
				else if (kind == RT_THREAD && g.num == F_THD_TID && g.wt == TK__PB_VARINT)
					tid = (tk_id){TK_ID_INT, (int64_t)g.v, {NULL, 0}};
				else if (g.wt == TK__PB_LEN && g.num == (kind == RT_THREAD ? F_THD_NAME : F_PD_NAME) &&
				         intern_text(r, g.data, g.len, &pname, NULL))
					return nomem(r);
			}
			if (k < 0)
				break;
		}
	}
	if (k < 0)
		return bad_pkt(r, "damaged track descriptor");
	rtrack *t = track_get(s, uuid);
	if (!t) {
		if (TK__GROW(s->tracks, s->tracks_cap, s->n_tracks + 1) ||
		    tk__map_put_int(&s->track_map, uuid, s->n_tracks + 1))
			return nomem(r);
		t = &s->tracks[s->n_tracks++];
		memset(t, 0, sizeof *t);
		t->uuid = uuid;
	}
	t->parent = parent;
	t->kind = kind;
	t->pid = pid;
	t->tid = tid;
	t->name = name.ptr ? name : pname;
	return 0;
}

/* The pid and tid a track stands for: its own, or its parents'. */
static void track_ids(pr *s, const rtrack *t, tk_id *pid, tk_id *tid)
{
	*pid = *tid = (tk_id){0};
	for (int hops = 0; t && hops < 16; hops++) {
		if (t->kind == RT_THREAD) {
			*pid = t->pid;
			*tid = t->tid;
			return;
		}
		if (t->kind == RT_PROCESS) {
			*pid = t->pid;
			return;
		}
		if (!t->parent)
			return;
		t = track_get(s, t->parent);
	}
}

/* ---- debug annotations to JSON ---- */

static int put_json_str(tk__buf *o, const void *p, size_t n)
{
	const unsigned char *u = p;
	size_t i = 0;
	if (n <= 64) /* short plain ASCII (most names and values) goes as it is */
		while (i < n && u[i] >= 0x20 && u[i] < 0x7f && u[i] != '"' && u[i] != '\\')
			i++;
	if (i == n && n) {
		if (tk__buf_reserve(o, n + 2))
			return TK_ERR_NOMEM;
		o->p[o->len] = '"';
		memcpy(o->p + o->len + 1, p, n);
		o->p[o->len + n + 1] = '"';
		o->len += n + 2;
		return 0;
	}
	return tk__json_put_str(o, p, n);
}

/* put_json_str of a string known to need no escaping where plain is 1. */
static int put_json_known(tk__buf *o, tk_sv v, int plain)
{
	if (!plain)
		return put_json_str(o, v.ptr, v.len);
	if (tk__buf_reserve(o, v.len + 2))
		return TK_ERR_NOMEM;
	char *w = o->p + o->len;
	w[0] = '"';
	memcpy(w + 1, v.ptr, v.len);
	w[v.len + 1] = '"';
	o->len += v.len + 2;
	return 0;
}

/* The name of a DebugAnnotation (a dict entry) as ann_json takes it: the
 * last name or name_iid among its own fields. 0 or TK_ERR_NOMEM. */
static int ann_name(tk_reader *r, const rseq *q, const unsigned char *p, size_t n, tk_sv *name, int *plain)
{
	tk__pb c = tk__pb_of(p, n);
	tk__pb_field f;
	name->ptr = NULL;
	name->len = 0;
	*plain = 0;
	while (tk__pb_next(&c, &f) > 0) {
		if (f.num == F_DA_NAME_IID && f.wt == TK__PB_VARINT) {
			*name = interned(r, q, K_ANN, f.v, plain);
		} else if (f.num == F_DA_NAME) {
			if (f.wt == TK__PB_LEN && intern_text(r, f.data, f.len, name, NULL))
				return TK_ERR_NOMEM;
			*plain = 0;
		}
	}
	return 0;
}

/* An event's annotations written as JSON past the limit on one value:
 * interned strings, referred to in a few bytes each, would otherwise
 * copy out far more than the input holds. */
static int args_over(tk_reader *r)
{
	return tk__reader_fail_at(r, TK_ERR_LIMIT, ((pr *)r->fs)->at,
	                          "an event's annotations are larger than the limit of %zu bytes as JSON",
	                          r->opts.max_value_bytes);
}

/* The commonest DebugAnnotations, read without the general walk of
 * ann_json: an optional name_iid (name not NULL), then one integer, boolean
 * or interned string and nothing else, as Kineto's args and the elements of
 * their arrays are. 1: the value is written to o as ann_json writes it (and
 * *name, *plain set); 0: another shape, or one that ann_json reports on (an
 * unknown string id, a value past the limit): nothing written;
 * TK_ERR_NOMEM. */
static int ann_fast(tk_reader *r, const rseq *q, const unsigned char *p, size_t n, tk__buf *o, tk_sv *name,
                    int *plain)
{
	const unsigned char *e = p + n;
	uint64_t iid = 0, v;
	int bad = 0, rc;
	if (name) {
		if (n < 4 || *p++ != (F_DA_NAME_IID << 3 | TK__PB_VARINT))
			return 0;
		iid = tk__get_varint(&p, e, &bad);
	}
	if (bad || e - p < 2)
		return 0;
	unsigned key = *p++;
	_Static_assert(F_DA_STRING_IID == 17, "string_iid is field 17");
	if (key == 0x88 && *p++ == 0x01) /* the key of string_iid (17, varint) takes two bytes */
		key = F_DA_STRING_IID;
	else if (key == (F_DA_INT << 3 | TK__PB_VARINT) || key == (F_DA_UINT << 3 | TK__PB_VARINT) ||
	         key == (F_DA_BOOL << 3 | TK__PB_VARINT))
		key >>= 3;
	else
		return 0;
	v = tk__get_varint(&p, e, &bad);
	if (bad || p != e)
		return 0;
	size_t start = o->len;
	switch (key) {
	case F_DA_INT: rc = tk__buf_i64(o, (int64_t)v); break;
	case F_DA_UINT: rc = tk__buf_u64(o, v); break;
	case F_DA_BOOL: rc = tk__buf_puts(o, v ? "true" : "false"); break;
	default: {
		int sp;
		tk_sv str = interned(r, q, K_STR, v, &sp);
		if (!str.ptr)
			return 0;
		rc = put_json_known(o, str, sp);
	}
	}
	if (rc)
		return nomem(r);
	if (o->len - start > r->opts.max_value_bytes) {
		o->len = start;
		return 0;
	}
	if (name)
		*name = interned(r, q, K_ANN, iid, plain);
	return 1;
}

/* A DebugAnnotation (or a ChromeTraceEvent Arg, arg = 1) as JSON: its value
 * into o, its name into *name (*name_plain 1: it needs no escaping). */
static int ann_json(tk_reader *r, const rseq *q, const unsigned char *p, size_t n, tk__buf *o, tk_sv *name,
                    int *name_plain, unsigned depth, int arg)
{
	tk__pb c = tk__pb_of(p, n);
	tk__pb_field f;
	int k, kind = 0; /* 0 none yet, 1 value, 2 dict, 3 array */
	char num[32];
	name->ptr = NULL;
	name->len = 0;
	*name_plain = 0;
	if (depth > r->opts.max_depth)
		return tk__reader_fail_at(r, TK_ERR_LIMIT, ((pr *)r->fs)->at, "annotations nested deeper than %u",
		                          r->opts.max_depth);
	size_t start = o->len;
	while ((k = tk__pb_next(&c, &f)) > 0) {
		int rc = 0;
		unsigned num_f = f.num;
		if (o->len - start > r->opts.max_value_bytes)
			return args_over(r);
		if (arg) /* Arg: name 1, bool 2, uint 3, int 4, double 5, string 6, pointer 7, json 8 */
			num_f = f.num == F_ARG_NAME ? F_DA_NAME : f.num == F_ARG_JSON ? F_DA_JSON : f.num <= 7 ? f.num : 0;
		switch (num_f) {
		case F_DA_NAME_IID:
			if (f.wt == TK__PB_VARINT)
				*name = interned(r, q, K_ANN, f.v, name_plain);
			continue;
		case F_DA_NAME:
			if (f.wt == TK__PB_LEN && intern_text(r, f.data, f.len, name, NULL))
				return nomem(r);
			*name_plain = 0;
			continue;
		case F_DA_DICT:
		case F_DA_ARRAY: {
			if (f.wt != TK__PB_LEN)
				continue;
			int want = num_f == F_DA_DICT ? 2 : 3;
			if (kind == 1)
				continue;
			if (kind && kind != want) /* both: the first kind wins */
				continue;
			rc = tk__buf_putc(o, kind ? ',' : want == 2 ? '{' : '[');
			kind = want;
			tk_sv sub;
			int sub_plain;
			if (!rc && want == 2) {
				/* the key, then the value (the key found first, so that
				 * the value written is never moved: nested entries
				 * would move it once per level) */
				if (ann_name(r, q, f.data, f.len, &sub, &sub_plain))
					return nomem(r);
				if (!sub.ptr)
					sub = (tk_sv){"", 0};
				if (put_json_known(o, sub, sub_plain) || tk__buf_putc(o, ':'))
					return nomem(r);
				rc = depth < r->opts.max_depth ? ann_fast(r, q, f.data, f.len, o, &sub, &sub_plain) : 0;
				if (!rc)
					rc = ann_json(r, q, f.data, f.len, o, &sub, &sub_plain, depth + 1, 0);
				if (rc < 0)
					return rc;
				rc = 0;
			} else if (!rc) {
				rc = depth < r->opts.max_depth ? ann_fast(r, q, f.data, f.len, o, NULL, NULL) : 0;
				if (!rc)
					rc = ann_json(r, q, f.data, f.len, o, &sub, &sub_plain, depth + 1, 0);
				else if (rc > 0)
					rc = 0;
			}
			if (rc)
				return rc < 0 ? rc : nomem(r);
			continue;
		}
		default:
			break;
		}
		if (kind) /* one value only: the first */
			continue;
		switch (num_f) {
		case F_DA_BOOL:
			rc = tk__buf_puts(o, f.v ? "true" : "false");
			break;
		case F_DA_UINT:
			rc = tk__buf_u64(o, f.v);
			break;
		case F_DA_POINTER:
			snprintf(num, sizeof num, "\"0x%llx\"", (unsigned long long)f.v);
			rc = tk__buf_puts(o, num);
			break;
		case F_DA_INT:
			rc = tk__buf_i64(o, (int64_t)f.v);
			break;
		case F_DA_DOUBLE: {
			double d;
			memcpy(&d, &f.v, 8);
			rc = f.wt == TK__PB_I64 ? tk__json_double(o, d) : tk__buf_puts(o, "null");
			break;
		}
		case F_DA_STRING:
			if (f.wt != TK__PB_LEN)
				continue; /* not a string: no value (it wrote nothing: an array got "[1,]") */
			rc = put_json_str(o, f.data, f.len);
			break;
		case F_DA_STRING_IID: {
			int plain;
			tk_sv v = interned(r, q, K_STR, f.v, &plain);
			if (!v.ptr)
				return bad_pkt(r, "an annotation's string refers to an unknown interned id");
			rc = put_json_known(o, v, plain);
			break;
		}
		case F_DA_JSON: {
			if (f.wt != TK__PB_LEN)
				continue;
			int c2 = tk__json_canon_text(o, (const char *)f.data, f.len, 0, NULL);
			if (c2 == TK_ERR_ARG) /* not JSON after all: kept as a string */
				rc = put_json_str(o, f.data, f.len);
			else
				rc = c2;
			break;
		}
		default:
			continue; /* nested_value, proto values: not kept */
		}
		if (rc)
			return nomem(r);
		kind = 1;
	}
	if (k < 0)
		return bad_pkt(r, "damaged debug annotation");
	if (o->len - start > r->opts.max_value_bytes)
		return args_over(r);
	if (kind >= 2)
		return tk__buf_putc(o, kind == 2 ? '}' : ']') ? nomem(r) : 0;
	if (!kind && o->len == start)
		return tk__buf_puts(o, "null") ? nomem(r) : 0;
	return 0;
}

/* ---- events ---- */

typedef struct rextra { /* a TrackEvent's extra counter series */
	uint64_t tracks[2][64];
	int64_t i[64];
	double d[64];
	int n_tracks[2], n_i, n_d;
} rextra;

static const rextra rextra_none; /* no extra series */

enum { REF_NAME_IID, REF_NAME, REF_CAT_IID, REF_CAT };

typedef struct rref { /* a name or category of a TrackEvent, in field order */
	int kind;                /* REF_* */
	uint64_t iid;            /* *_IID */
	const unsigned char *p;  /* the others: the text, in the packet */
	size_t n;
} rref;

typedef struct rev { /* what a TrackEvent holds (te_scan, then te_resolve) */
	int type;
	uint64_t track;
	int has_track;
	tk_sv name, cat; /* te_resolve's */
	int64_t ctr_i;
	double ctr_d;
	int ctr; /* 0 none, 1 int, 2 double */
	uint64_t flow_out, flow_end;
	int n_flow_out, n_flow_end;
	int bad;          /* the fields end damaged after these */
	const rref *refs; /* its names and categories, in field order */
	size_t n_refs;
	const rextra *x;  /* its extra counter series */
} rev;

/* A reader's room for te_scan: the refs and extra series of one event. */
typedef struct rscan {
	rref *refs;
	size_t cap;
	rextra x;
} rscan;

static void scan_free(rscan *sc)
{
	if (sc)
		free(sc->refs);
	free(sc);
}

/* A TrackEvent's fields into *e, without the state they refer to (that is
 * te_resolve's): 0, or TK_ERR_NOMEM. Its refs and extra series are in sc. */
static int te_scan(const unsigned char *p, size_t n, rev *e, rscan *sc)
{
	tk__pb c = tk__pb_of(p, n);
	tk__pb_field f;
	int k;
	size_t nr = 0;
	rextra *x = &sc->x;
	memset(e, 0, sizeof *e);
	x->n_tracks[0] = x->n_tracks[1] = x->n_i = x->n_d = 0;
	while ((k = tk__pb_next(&c, &f)) > 0) {
		rref ref = {-1, 0, NULL, 0};
		switch (f.num) {
		case F_TE_TYPE: e->type = (int)f.v; break;
		case F_TE_TRACK: e->track = f.v; e->has_track = 1; break;
		case F_TE_NAME_IID: ref = (rref){REF_NAME_IID, f.v, NULL, 0}; break;
		case F_TE_NAME:
			if (f.wt == TK__PB_LEN)
				ref = (rref){REF_NAME, 0, f.data, f.len};
			break;
		case F_TE_CAT_IIDS:
		case F_TE_CATS:
			if (f.num == F_TE_CATS && f.wt == TK__PB_LEN)
				ref = (rref){REF_CAT, 0, f.data, f.len};
			else if (f.wt == TK__PB_VARINT)
				ref = (rref){REF_CAT_IID, f.v, NULL, 0};
			break;
		case F_TE_CTR_VALUE: e->ctr = 1; e->ctr_i = (int64_t)f.v; break;
		case F_TE_DCTR_VALUE: e->ctr = 2; memcpy(&e->ctr_d, &f.v, 8); break;
		case F_TE_FLOWS: e->flow_out = f.v; e->n_flow_out++; break;
		case F_TE_TERM_FLOWS: e->flow_end = f.v; e->n_flow_end++; break;
		case F_TE_EXTRA_CTR_TRACKS:
		case F_TE_EXTRA_DCTR_TRACKS: {
			int d = f.num == F_TE_EXTRA_DCTR_TRACKS;
			if (f.wt == TK__PB_VARINT && x->n_tracks[d] < 64)
				x->tracks[d][x->n_tracks[d]++] = f.v;
			break;
		}
		case F_TE_EXTRA_CTR_VALUES:
			if (f.wt == TK__PB_VARINT && x->n_i < 64)
				x->i[x->n_i++] = (int64_t)f.v;
			break;
		case F_TE_EXTRA_DCTR_VALUES:
			if (f.wt == TK__PB_I64 && x->n_d < 64)
				memcpy(&x->d[x->n_d++], &f.v, 8);
			break;
		default: break;
		}
		if (ref.kind >= 0) {
			if (TK__GROW(sc->refs, sc->cap, nr + 1))
				return TK_ERR_NOMEM;
			sc->refs[nr++] = ref;
		}
	}
	e->bad = k < 0;
	e->refs = sc->refs;
	e->n_refs = nr;
	e->x = x;
	return 0;
}

/* The names and categories of a scanned TrackEvent, in field order, from
 * the sequence's interned strings; then whether its fields are damaged. */
static int te_refs(tk_reader *r, const rseq *q, rev *e, tk__buf *cats)
{
	size_t n_cats = 0;
	for (size_t i = 0; i < e->n_refs; i++) {
		const rref *f = &e->refs[i];
		tk_sv v = {NULL, 0};
		switch (f->kind) {
		case REF_NAME_IID:
			e->name = interned(r, q, K_NAME, f->iid, NULL);
			if (!e->name.ptr)
				return bad_pkt(r, "an event's name refers to an unknown interned id");
			continue;
		case REF_NAME:
			if (intern_text(r, f->p, f->n, &e->name, NULL))
				return nomem(r);
			continue;
		case REF_CAT:
			if (intern_text(r, f->p, f->n, &v, NULL))
				return nomem(r);
			break;
		default:
			v = interned(r, q, K_CAT, f->iid, NULL);
			if (!v.ptr)
				return bad_pkt(r, "an event's category refers to an unknown interned id");
			break;
		}
		/* several categories: "a,b", interned once they are all joined */
		if (n_cats++ == 1 && tk__buf_append(cats, e->cat.ptr, e->cat.len))
			return nomem(r);
		if (n_cats > 1 && (tk__buf_putc(cats, ',') || tk__buf_append(cats, v.ptr, v.len)))
			return nomem(r);
		if (cats->len > r->opts.max_value_bytes)
			return tk__reader_fail_at(r, TK_ERR_LIMIT, ((pr *)r->fs)->at,
			                          "an event's categories are longer than the limit of %zu bytes",
			                          r->opts.max_value_bytes);
		e->cat = v;
	}
	if (n_cats > 1 && !(e->cat = tk__strtab_intern(&r->strs, cats->p, cats->len)).ptr)
		return nomem(r);
	return e->bad ? bad_pkt(r, "damaged track event") : 0;
}

static int te_resolve(tk_reader *r, const rseq *q, rev *e)
{
	tk__buf cats = {0};
	int rc = te_refs(r, q, e, &cats);
	tk__buf_free(&cats);
	return rc;
}

/* Reserved annotations read back. */
typedef struct rres {
	char ph;
	int has_id, has_pid, has_tid, open, no_ts, has_ts, has_dur;
	int no_ph; /* tk.ph null: the event had no phase */
	tk_id id, pid, tid;
	int64_t ts, dur;
	int has_extra, has_args;
	tk_sv extra, args; /* in s->tmp */
	tk_sv obj;         /* the arguments' object (set_event's `any`): in r->args */
} rres;

/* A JSON value (text of ann_json) as an id: number, string or null. */
static int json_id(tk_reader *r, tk_sv v, tk_id *id)
{
	int64_t n;
	if (v.len && v.ptr[0] == '"') {
		if (tk__js_str_buf(v, &r->scratch))
			return -1;
		id->kind = TK_ID_STR;
		id->str = tk__strtab_intern(&r->strs, r->scratch.p ? r->scratch.p : "", r->scratch.len);
		return id->str.ptr ? 0 : TK_ERR_NOMEM;
	}
	if (tk__js_int(v, &n) == 0) {
		*id = (tk_id){TK_ID_INT, n, {NULL, 0}};
		return 0;
	}
	*id = (tk_id){0};
	return 0;
}

/* Walks a TrackEvent's (or an Arg list's) annotations: arguments into
 * r->args as an object, reserved ones into *rr. */
static int annotations(tk_reader *r, const rseq *q, const unsigned char *p, size_t n, unsigned field, int arg,
                       rres *rr)
{
	pr *s = r->fs;
	tk__pb c = tk__pb_of(p, n);
	tk__pb_field f;
	int k, any = 0;
	r->args.len = 0;
	s->tmp.len = 0;
	while ((k = tk__pb_next(&c, &f)) > 0) {
		if (f.num != field || f.wt != TK__PB_LEN)
			continue;
		tk_sv name;
		int plain;
		size_t at = s->val.len = 0;
		int rc = arg ? 0 : ann_fast(r, q, f.data, f.len, &s->val, &name, &plain);
		if (!rc)
			rc = ann_json(r, q, f.data, f.len, &s->val, &name, &plain, 1, arg);
		else if (rc > 0)
			rc = 0;
		if (rc)
			return rc;
		tk_sv v = {s->val.p, s->val.len - at};
		if (!name.ptr)
			name = (tk_sv){"", 0};
		int reserved = s->ours && name.len >= 3 && memcmp(name.ptr, RESERVED, 3) == 0 &&
		               !(name.len >= 6 && memcmp(name.ptr, "tk.tk.", 6) == 0);
		if (reserved) {
			const char *nm = name.ptr + 3;
			size_t nl = name.len - 3;
#define IS(lit) (nl == sizeof(lit) - 1 && memcmp(nm, lit, nl) == 0)
			int64_t num;
			if (IS("ph") && v.len == 4 && memcmp(v.ptr, "null", 4) == 0) {
				rr->no_ph = 1;
			} else if (IS("ph") && v.len >= 3 && v.ptr[0] == '"') {
				/* one character, escaped in JSON when it is '"', '\\' or a control */
				char ph[8];
				size_t len = 0;
				if (tk__js_str(v, ph, sizeof ph, &len) == 0 && len == 1)
					rr->ph = ph[0];
			} else if (IS("id") || IS("pid") || IS("tid")) {
				tk_id *id = IS("id") ? &rr->id : IS("pid") ? &rr->pid : &rr->tid;
				*(IS("id") ? &rr->has_id : IS("pid") ? &rr->has_pid : &rr->has_tid) = 1;
				if (json_id(r, v, id))
					return nomem(r);
			} else if (IS("dur") && tk__js_int(v, &num) == 0) {
				rr->dur = num;
				rr->has_dur = 1;
			} else if (IS("ts")) {
				rr->has_ts = tk__js_int(v, &num) == 0;
				rr->no_ts = !rr->has_ts;
				rr->ts = num;
			} else if (IS("open")) {
				rr->open = 1;
			} else if (IS("args") || IS("extra")) {
				size_t off = s->tmp.len;
				if (IS("args")) {
					if (tk__buf_append(&s->tmp, v.ptr, v.len))
						return nomem(r);
				} else {
					/* the members text, as a JSON string */
					if (v.len < 2 || v.ptr[0] != '"' || tk__js_str_buf(v, &r->scratch))
						continue;
					int c2 = tk__json_canon_text(&s->tmp, r->scratch.p ? r->scratch.p : "", r->scratch.len, 1, NULL);
					if (c2 == TK_ERR_NOMEM)
						return nomem(r);
					if (c2)
						continue;
				}
				tk_sv *dst = IS("args") ? &rr->args : &rr->extra;
				*(IS("args") ? &rr->has_args : &rr->has_extra) = 1;
				dst->ptr = (const char *)(uintptr_t)off; /* an offset until s->tmp stops growing */
				dst->len = s->tmp.len - off;
				if (s->tmp.len > r->opts.max_value_bytes)
					return args_over(r);
			}
#undef IS
			continue;
		}
		if (s->ours && name.len >= 6 && memcmp(name.ptr, "tk.tk.", 6) == 0)
			name = (tk_sv){name.ptr + 3, name.len - 3};
		if (tk__buf_putc(&r->args, any ? ',' : '{') || put_json_known(&r->args, name, plain) ||
		    tk__buf_putc(&r->args, ':') || tk__buf_append(&r->args, v.ptr, v.len))
			return nomem(r);
		any = 1;
		if (r->args.len > r->opts.max_value_bytes)
			return args_over(r);
	}
	if (k < 0)
		return bad_pkt(r, "damaged track event");
	if (any && tk__buf_putc(&r->args, '}'))
		return nomem(r);
	if (any)
		rr->obj = (tk_sv){r->args.p, r->args.len};
	if (rr->has_args)
		rr->args.ptr = s->tmp.p + (uintptr_t)rr->args.ptr;
	if (rr->has_extra)
		rr->extra.ptr = s->tmp.p + (uintptr_t)rr->extra.ptr;
	return any;
}

/* A TrackEvent's annotations as a thread rendered them (reading on
 * threads, below): what annotations() gave there, from the same bytes and
 * a copy of the same interned strings. */
typedef struct pres {
	int state;      /* PRE_* (atomic: a thread renders while the caller reads) */
	int any;        /* annotations()'s result, 0 or 1 */
	const rres *rr; /* in the block's text, as are its obj, args and extra */
	const struct rev *ev; /* te_scan's, there too */
} pres;

/* free: neither has it; then a thread renders it, has, could not (the
 * caller renders it), or the caller took it first */
enum { PRE_FREE, PRE_BUSY, PRE_DONE, PRE_FAILED, PRE_CALLER };

static int pre_id(tk_reader *r, tk_id *id)
{
	if (id->kind != TK_ID_STR)
		return 0;
	id->str = tk__strtab_intern(&r->strs, id->str.ptr ? id->str.ptr : "", id->str.len);
	return id->str.ptr ? 0 : nomem(r);
}

/* annotations() of the packet read now, from what a thread rendered:
 * its texts in the block, its string ids in the reader's own table. */
static int pre_take(tk_reader *r, rres *rr)
{
	pr *s = r->fs;
	const pres *x = s->pre;
	*rr = *x->rr;
	if ((rr->has_id && pre_id(r, &rr->id)) || (rr->has_pid && pre_id(r, &rr->pid)) ||
	    (rr->has_tid && pre_id(r, &rr->tid)))
		return TK_ERR_NOMEM;
	return x->any;
}

/* r->ev from the parts: ids, ph, ts; args in r->args (any: an object was
 * built), or the reserved tk.args. */
static void set_event(tk_reader *r, char ph, int64_t ts, int has_ts, const tk_sv *name, const tk_sv *cat,
                      const tk_id *pid, const tk_id *tid, const rres *rr, int any)
{
	tk_event *e = &r->ev;
	memset(e, 0, sizeof *e);
	e->ph = rr->no_ph ? 0 : rr->ph ? rr->ph : ph;
	e->has = (rr->no_ph ? 0 : TK_HAS_PH) | TK_HAS_VALID_JSON;
	if (rr->has_ts) {
		ts = rr->ts;
		has_ts = 1;
	}
	if (has_ts && !rr->no_ts) {
		e->ts = ts;
		e->has |= TK_HAS_TS;
	}
	if (rr->has_dur) {
		e->dur = rr->dur;
		e->has |= TK_HAS_DUR;
	}
	if (name && name->ptr) {
		e->name = *name;
		e->has |= TK_HAS_NAME;
	}
	if (cat && cat->ptr) {
		e->cat = *cat;
		e->has |= TK_HAS_CAT;
	}
	e->pid = rr->has_pid ? rr->pid : *pid;
	e->tid = rr->has_tid ? rr->tid : *tid;
	if (rr->has_id)
		e->id = rr->id;
	if (any)
		e->args = rr->obj;
	else if (rr->has_args)
		e->args = rr->args;
	if (rr->has_extra)
		e->extra = rr->extra;
}

static int queue(tk_reader *r, const tk_event *ev)
{
	pr *s = r->fs;
	if (s->qi == s->qn)
		s->qi = s->qn = 0;
	tk_event *d = tk_event_dup(ev);
	if (!d || TK__GROW(s->q, s->q_cap, s->qn + 1)) {
		free(d);
		return nomem(r);
	}
	s->q[s->qn++] = d;
	return 0;
}

static int hold_push(tk_reader *r, rtrack *t, const tk_event *ev, int b)
{
	if (t->n == t->cap) {
		size_t cap = t->cap;
		if (TK__GROW(t->stack, cap, t->n + 1))
			return nomem(r);
		memset(t->stack + t->cap, 0, (cap - t->cap) * sizeof *t->stack);
		t->cap = cap;
	}
	rhold *h = &t->stack[t->n++];
	h->b = b;
	if (b)
		return 0;
	h->ts = ev->ts;
	h->has = ev->has;
	h->name = ev->name;
	h->cat = ev->cat;
	h->pid = ev->pid;
	h->tid = ev->tid;
	h->id = ev->id;
	h->args.len = h->extra.len = 0;
	h->has_args = ev->args.ptr != NULL;
	h->has_extra = ev->extra.ptr != NULL;
	if ((h->has_args && tk__buf_append(&h->args, ev->args.ptr, ev->args.len)) ||
	    (h->has_extra && tk__buf_append(&h->extra, ev->extra.ptr, ev->extra.len)))
		return nomem(r);
	return 0;
}

/* r->ev from a held slice: an X ending at `end`, or (end < 0 with
 * at_end) a B left open. */
static void hold_event(tk_reader *r, rhold *h, int64_t end, int closed)
{
	tk_event *e = &r->ev;
	memset(e, 0, sizeof *e);
	e->ph = closed ? 'X' : 'B';
	e->has = (h->has & ~(unsigned)TK_HAS_DUR) | TK_HAS_PH | TK_HAS_VALID_JSON;
	e->ts = h->ts;
	if (closed) {
		e->dur = end - h->ts;
		e->has |= TK_HAS_DUR;
	}
	e->name = h->name;
	e->cat = h->cat;
	e->pid = h->pid;
	e->tid = h->tid;
	e->id = h->id;
	if (h->has_args)
		e->args = (tk_sv){h->args.p ? h->args.p : "", h->args.len};
	if (h->has_extra)
		e->extra = (tk_sv){h->extra.p ? h->extra.p : "", h->extra.len};
}

/* A TrackEvent: 1 with r->ev set, 0 when it gives no event now. */
static int track_event(tk_reader *r, rseq *q, const unsigned char *p, size_t n, int64_t ts, int has_ts)
{
	pr *s = r->fs;
	rev e;
	int rc;
	if (s->pre) { /* a thread scanned it */
		e = *s->pre->ev;
	} else if ((!s->scan && !(s->scan = calloc(1, sizeof *s->scan))) || te_scan(p, n, &e, s->scan)) {
		return nomem(r);
	}
	if ((rc = te_resolve(r, q, &e)))
		return rc;
	const rextra *x = e.x;
	if (!e.has_track && q && q->has_default) {
		e.track = q->default_track;
		e.has_track = 1;
	}
	rtrack *t = e.has_track ? track_get(s, e.track) : NULL;
	tk_id pid, tid;
	track_ids(s, t, &pid, &tid);
	if (__builtin_sub_overflow(ts, s->base, &ts))
		return bad_pkt(r, "a timestamp out of range after baseTimeNanoseconds");
	rres rr;
	memset(&rr, 0, sizeof rr);
	int any = s->pre ? pre_take(r, &rr) : annotations(r, q, p, n, F_TE_ANNOTATIONS, 0, &rr);
	if (any < 0)
		return any;
	switch (e.type) {
	case TYPE_SLICE_BEGIN:
		if (!t) {
			s->unsupported++;
			return 0;
		}
		set_event(r, 'X', ts, has_ts, &e.name, &e.cat, &pid, &tid, &rr, any);
		if (rr.ph == 'B') {
			if ((rc = hold_push(r, t, NULL, 1)))
				return rc;
			break;
		}
		if (s->ours && rr.has_dur) { /* tracekit's: the slice is whole here */
			if ((rc = hold_push(r, t, NULL, 2)))
				return rc;
			return 1;
		}
		if ((rc = hold_push(r, t, &r->ev, 0)))
			return rc;
		if (!s->ours && e.n_flow_out)
			break; /* a flow out of it: below */
		return 0;
	case TYPE_SLICE_END:
		if (!t || !t->n) {
			s->stray_ends++;
			return 0;
		}
		t->n--;
		if (t->stack[t->n].b == 2)
			return 0;
		if (t->stack[t->n].b) {
			if (rr.open)
				return 0;
			set_event(r, 'E', ts, has_ts, &e.name, &e.cat, &pid, &tid, &rr, any);
			break;
		}
		int64_t dur;
		if (__builtin_sub_overflow(ts, t->stack[t->n].ts, &dur))
			return bad_pkt(r, "a slice's end is out of range of its start");
		hold_event(r, &t->stack[t->n], ts, 1);
		return 1;
	case TYPE_COUNTER: {
		/* the series: this track's, then the extra ones; named by the
		 * track's name after the event's name and a space */
		tk__buf *o = &r->args;
		o->len = 0;
		/* tracekit names a series' track "NAME KEY"; another tool's counter
		 * is named by its track */
		tk_sv nm = e.name.ptr || s->ours ? e.name : t ? t->name : (tk_sv){NULL, 0};
		int nx = e.ctr == 2 || x->n_d ? 1 : 0;
		int series = 1 + x->n_tracks[nx];
		for (int i = 0; i < series; i++) {
			const rtrack *ct = i ? track_get(s, x->tracks[nx][i - 1]) : t;
			tk_sv key = ct && ct->name.ptr ? ct->name : (tk_sv){"value", 5};
			if (s->ours && key.len > nm.len && (!nm.len || memcmp(key.ptr, nm.ptr, nm.len) == 0) &&
			    key.ptr[nm.len] == ' ')
				key = (tk_sv){key.ptr + nm.len + 1, key.len - nm.len - 1};
			else if (!s->ours && !i)
				key = (tk_sv){"value", 5};
			if (tk__buf_putc(o, i ? ',' : '{') || put_json_str(o, key.ptr, key.len) || tk__buf_putc(o, ':'))
				return nomem(r);
			if (i == 0 && e.ctr == 1) {
				rc = tk__buf_i64(o, e.ctr_i);
			} else if (i == 0) {
				rc = tk__json_double(o, e.ctr_d);
			} else if (nx) {
				rc = i - 1 < x->n_d ? tk__json_double(o, x->d[i - 1]) : tk__buf_puts(o, "null");
			} else {
				rc = tk__buf_i64(o, i - 1 < x->n_i ? x->i[i - 1] : 0);
			}
			if (rc)
				return nomem(r);
		}
		if (tk__buf_putc(o, '}'))
			return nomem(r);
		rr.obj = (tk_sv){o->p, o->len};
		set_event(r, 'C', ts, has_ts, &nm, &e.cat, &pid, &tid, &rr, 1);
		return 1;
	}
	default: /* an instant, or a type this reader does not know */
		set_event(r, 'i', ts, has_ts, &e.name, &e.cat, &pid, &tid, &rr, any);
		break;
	}
	/* another tool's flows: "s" and "f" events beside the slice */
	if (!s->ours && (e.n_flow_out || e.n_flow_end)) {
		int slice = e.type == TYPE_SLICE_BEGIN;
		if (!slice && (rc = queue(r, &r->ev)))
			return rc;
		for (int i = 0; i < 2; i++) {
			if (!(i ? e.n_flow_end : e.n_flow_out))
				continue;
			tk_event fe;
			memset(&fe, 0, sizeof fe);
			fe.ph = i ? 'f' : 's';
			fe.has = TK_HAS_PH | TK_HAS_TS | TK_HAS_NAME | TK_HAS_CAT | TK_HAS_VALID_JSON;
			fe.ts = ts;
			fe.name = fe.cat = (tk_sv){"flow", 4};
			fe.pid = pid;
			fe.tid = tid;
			fe.id = (tk_id){TK_ID_INT, (int64_t)(i ? e.flow_end : e.flow_out), {NULL, 0}};
			if (i)
				fe.extra = (tk_sv){"\"bp\":\"e\"", 8};
			if ((rc = queue(r, &fe)))
				return rc;
		}
		return 0;
	}
	return 1;
}

/* ---- ChromeEventBundle: metadata and M events ---- */

/* A metadata entry's name (the last one) and value (the first of a kind
 * the reader takes: *have 1): 0, or 1 where its fields end damaged. */
static int meta_scan(const unsigned char *p, size_t n, const unsigned char **name, size_t *nlen, tk__pb_field *v,
                     int *have)
{
	tk__pb c = tk__pb_of(p, n);
	tk__pb_field f;
	int k;
	*name = NULL;
	*nlen = 0;
	*have = 0;
	while ((k = tk__pb_next(&c, &f)) > 0) {
		if (f.num == F_CM_NAME && f.wt == TK__PB_LEN) {
			*name = f.data;
			*nlen = f.len;
		} else if (!*have && (((f.num == F_CM_STRING || f.num == F_CM_JSON) && f.wt == TK__PB_LEN) ||
		                      ((f.num == F_CM_BOOL || f.num == F_CM_INT) && f.wt == TK__PB_VARINT))) {
			*v = f;
			*have = 1;
		}
	}
	return k < 0;
}

/* The entry that marks a trace as tracekit's (META_EVENTS, with a value). */
static int meta_mark(const unsigned char *name, size_t nlen, int have)
{
	return name && have && nlen == strlen(META_EVENTS) && memcmp(name, META_EVENTS, nlen) == 0;
}

static int take_metadata(tk_reader *r, const unsigned char *p, size_t n)
{
	pr *s = r->fs;
	tk__pb_field f;
	const unsigned char *name;
	size_t nlen;
	int have, rc = 0;
	tk__buf *o = &s->val;
	o->len = 0;
	if (meta_scan(p, n, &name, &nlen, &f, &have))
		return bad_pkt(r, "damaged metadata");
	if (!name || !have)
		return 0;
	if (f.num == F_CM_STRING) {
		rc = put_json_str(o, f.data, f.len);
	} else if (f.num == F_CM_BOOL) {
		rc = tk__buf_puts(o, f.v ? "true" : "false");
	} else if (f.num == F_CM_INT) {
		rc = tk__buf_i64(o, (int64_t)f.v);
	} else {
		rc = tk__json_canon_text(o, (const char *)f.data, f.len, 0, NULL);
		if (rc == TK_ERR_ARG)
			rc = put_json_str(o, f.data, f.len);
	}
	if (rc)
		return nomem(r);
	if (meta_mark(name, nlen, have)) {
		s->ours = 1;
		s->after = 1;
		return 0;
	}
	if (s->ours && nlen >= 6 && memcmp(name, "tk.tk.", 6) == 0) {
		name += 3;
		nlen -= 3;
	}
	tk_sv key;
	if (intern_text(r, name, nlen, &key, NULL))
		return nomem(r);
	if (key.len == 19 && memcmp(key.ptr, "baseTimeNanoseconds", 19) == 0 && !s->base_seen) {
		int64_t b;
		s->base_seen = 1; /* the first member of the name, as the writer takes it */
		if (tk__js_int((tk_sv){o->p, o->len}, &b) == 0)
			s->base = b;
	}
	return tk__reader_add_meta(r, key.ptr, key.len, o->p, o->len, s->after);
}

/* An M event (a ChromeTraceEvent) into the queue. */
static int take_chrome_event(tk_reader *r, const unsigned char *p, size_t n)
{
	tk__pb c = tk__pb_of(p, n);
	tk__pb_field f;
	int k;
	tk_sv name = {NULL, 0}, cat = {NULL, 0};
	tk_id pid = {0}, tid = {0};
	int64_t ts = 0;
	int has_ts = 0, ph = 'M';
	while ((k = tk__pb_next(&c, &f)) > 0) {
		if (f.num == F_CTE_NAME && f.wt == TK__PB_LEN) {
			if (intern_text(r, f.data, f.len, &name, NULL))
				return nomem(r);
		} else if (f.num == F_CTE_CAT && f.wt == TK__PB_LEN) {
			if (intern_text(r, f.data, f.len, &cat, NULL))
				return nomem(r);
		} else if (f.num == F_CTE_TS && f.wt == TK__PB_VARINT) {
			ts = (int64_t)f.v;
			has_ts = 1;
		} else if (f.num == F_CTE_PHASE && f.wt == TK__PB_VARINT) {
			ph = f.v > 32 && f.v < 127 ? (int)f.v : '?';
		} else if ((f.num == F_CTE_PID || f.num == F_CTE_TID) && f.wt == TK__PB_VARINT) {
			*(f.num == F_CTE_PID ? &pid : &tid) = (tk_id){TK_ID_INT, (int32_t)f.v, {NULL, 0}};
		}
	}
	if (k < 0)
		return bad_pkt(r, "damaged event in a bundle");
	rres rr;
	memset(&rr, 0, sizeof rr);
	int any = annotations(r, NULL, p, n, F_CTE_ARGS, 1, &rr);
	if (any < 0)
		return any;
	rr.ph = (char)ph;
	set_event(r, (char)ph, ts, has_ts, &name, &cat, &pid, &tid, &rr, any);
	return queue(r, &r->ev);
}

static int take_bundle(tk_reader *r, const unsigned char *p, size_t n)
{
	tk__pb c = tk__pb_of(p, n);
	tk__pb_field f;
	int k, rc = 0;
	while (!rc && (k = tk__pb_next(&c, &f)) > 0) {
		if (f.wt != TK__PB_LEN)
			continue;
		if (f.num == F_CEB_METADATA)
			rc = take_metadata(r, f.data, f.len);
		else if (f.num == F_CEB_EVENTS)
			rc = take_chrome_event(r, f.data, f.len);
	}
	if (!rc && k < 0)
		return bad_pkt(r, "damaged event bundle");
	return rc;
}

/* ---- packets ---- */

/* A ClockSnapshot: the sequence-scoped clocks it defines (ids 64 to 127)
 * against the trace clock (BOOTTIME, else the first built-in clock it
 * names; the trace's built-in clocks are taken as one). Snapshots of
 * built-in clocks alone change nothing. */
static int take_snapshot(tk_reader *r, rseq *q, const unsigned char *p, size_t n)
{
	struct sclk {
		uint64_t id, ts, mult;
		int incr;
	} c[16];
	size_t nc = 0;
	tk__pb cur = tk__pb_of(p, n), d;
	tk__pb_field f, g;
	int k;
	while ((k = tk__pb_next(&cur, &f)) > 0) {
		if (f.num != F_CS_CLOCKS || f.wt != TK__PB_LEN)
			continue;
		if (nc == sizeof c / sizeof c[0])
			return bad_pkt(r, "a clock snapshot of more than 16 clocks");
		struct sclk *x = &c[nc++];
		memset(x, 0, sizeof *x);
		d = tk__pb_of(f.data, f.len);
		while ((k = tk__pb_next(&d, &g)) > 0)
			if (g.wt == TK__PB_VARINT) {
				if (g.num == F_CLK_ID)
					x->id = g.v;
				else if (g.num == F_CLK_TS)
					x->ts = g.v;
				else if (g.num == F_CLK_INCR)
					x->incr = g.v != 0;
				else if (g.num == F_CLK_UNIT)
					x->mult = g.v;
			}
		if (k < 0)
			break;
	}
	if (k < 0)
		return bad_pkt(r, "damaged clock snapshot");
	const struct sclk *ref = NULL;
	for (size_t i = 0; i < nc; i++)
		if (c[i].id >= 1 && c[i].id < CLOCK_SEQ && (!ref || c[i].id == CLOCK_BOOT) &&
		    !(ref && ref->id == CLOCK_BOOT))
			ref = &c[i];
	for (size_t i = 0; i < nc; i++) {
		if (c[i].id < CLOCK_SEQ || c[i].id >= 2 * CLOCK_SEQ)
			continue;
		int64_t mult = c[i].mult ? (int64_t)c[i].mult : 1, ns, tr;
		uint64_t rmult = ref && ref->mult ? ref->mult : 1;
		if (c[i].mult > INT64_MAX || c[i].ts > INT64_MAX || __builtin_mul_overflow((int64_t)c[i].ts, mult, &ns) ||
		    (ref && (ref->ts > INT64_MAX || rmult > INT64_MAX ||
		             __builtin_mul_overflow((int64_t)ref->ts, (int64_t)rmult, &tr))))
			return bad_pkt(r, "a clock snapshot beyond 2^63 ns");
		if (!ref)
			tr = ns; /* nothing to relate it to: the same time line */
		rclock *x = NULL;
		for (int j = 0; j < q->n_clk; j++)
			if (q->clk[j].id == c[i].id)
				x = &q->clk[j];
		if (!x) {
			if (q->n_clk == SEQ_CLOCKS)
				return tk__reader_fail_at(r, TK_ERR_LIMIT, ((pr *)r->fs)->at,
				                          "more than %d sequence-scoped clocks on one sequence", SEQ_CLOCKS);
			x = &q->clk[q->n_clk++];
		}
		*x = (rclock){c[i].id, c[i].incr, mult, ns, ns, tr};
	}
	return 0;
}

/* A packet timestamp `v` on the sequence-scoped clock `id`, on the trace
 * clock. */
static int seq_time(tk_reader *r, rseq *q, uint64_t id, uint64_t v, int64_t *ts)
{
	rclock *c = NULL;
	for (int i = 0; i < q->n_clk; i++)
		if (q->clk[i].id == id)
			c = &q->clk[i];
	if (!c)
		return tk__reader_fail_at(r, TK_ERR_FORMAT, ((pr *)r->fs)->at,
		                          "a timestamp on clock %llu, which no clock snapshot of its sequence defines",
		                          (unsigned long long)id);
	int64_t ns, t;
	if (v > INT64_MAX || __builtin_mul_overflow((int64_t)v, c->mult, &ns) ||
	    (c->incr && __builtin_add_overflow(c->last, ns, &ns)) || __builtin_sub_overflow(ns, c->ref_seq, &t) ||
	    __builtin_add_overflow(t, c->ref_trace, &t))
		return bad_pkt(r, "a timestamp beyond 2^63 ns");
	if (c->incr)
		c->last = ns;
	*ts = t;
	return 0;
}

static int take_defaults(tk_reader *r, rseq *q, const unsigned char *p, size_t n)
{
	tk__pb c = tk__pb_of(p, n), d;
	tk__pb_field f, g;
	int k;
	while ((k = tk__pb_next(&c, &f)) > 0) {
		if (f.num == F_DEF_CLOCK_ID && f.wt == TK__PB_VARINT)
			q->default_clock = f.v;
		if (f.num == F_DEF_TRACK_EVENT && f.wt == TK__PB_LEN) {
			d = tk__pb_of(f.data, f.len);
			while (tk__pb_next(&d, &g) > 0)
				if (g.num == F_TEDEF_TRACK_UUID && g.wt == TK__PB_VARINT) {
					q->default_track = g.v;
					q->has_default = 1;
				}
		}
	}
	return k < 0 ? bad_pkt(r, "damaged packet defaults") : 0;
}

/* The fields of a TracePacket that take_packet() reads, the last of each. */
typedef struct pkf {
	uint64_t seq_id, flags, raw_ts, clock_id;
	int has_ts, has_clock;
	const unsigned char *te, *interned, *defaults, *snap;
	size_t te_n, interned_n, defaults_n, snap_n;
} pkf;

/* Its track descriptors and event bundles, which change the state as they
 * come: 0, or an error that stops the packet there. */
typedef int (*pk_inline)(void *ctx, unsigned field, const unsigned char *p, size_t n);

/* A TracePacket's fields into *o, its descriptors and bundles through fn
 * in field order: 0, 1 where the fields end damaged, or fn's error. The
 * caller's reader and the threads' walks read packets through this one. */
static int pkt_scan(const unsigned char *p, size_t n, pkf *o, pk_inline fn, void *ctx)
{
	tk__pb c = tk__pb_of(p, n);
	tk__pb_field f;
	int k, rc;
	memset(o, 0, sizeof *o);
	while ((k = tk__pb_next(&c, &f)) > 0) {
		switch (f.num) {
		case F_PKT_TIMESTAMP: o->raw_ts = f.v; o->has_ts = 1; break;
		case F_PKT_SEQ_ID: o->seq_id = f.v; break;
		case F_PKT_SEQ_FLAGS: o->flags = f.v; break;
		case 41: /* incremental_state_cleared */ if (f.v) o->flags |= SEQ_CLEARED; break;
		case F_PKT_CLOCK_ID:
			if (f.wt == TK__PB_VARINT) {
				o->clock_id = f.v;
				o->has_clock = 1;
			}
			break;
		case F_PKT_CLOCK_SNAPSHOT:
			if (f.wt == TK__PB_LEN) {
				o->snap = f.data;
				o->snap_n = f.len;
			}
			break;
		case F_PKT_INTERNED: o->interned = f.data; o->interned_n = f.len; break;
		case F_PKT_DEFAULTS: o->defaults = f.data; o->defaults_n = f.len; break;
		case F_PKT_TRACK_EVENT: o->te = f.data; o->te_n = f.len; break;
		case F_PKT_TRACK_DESC:
		case F_PKT_CHROME_EVENTS:
			if (f.wt == TK__PB_LEN && (rc = fn(ctx, f.num, f.data, f.len)))
				return rc;
			break;
		default: break;
		}
	}
	return k < 0;
}

static int take_inline(void *ctx, unsigned field, const unsigned char *p, size_t n)
{
	tk_reader *r = ctx;
	return field == F_PKT_TRACK_DESC ? take_track(r, p, n) : take_bundle(r, p, n);
}

/* The sequence's incremental state cleared (SEQ_CLEARED). */
static void seq_clear(rseq *q)
{
	for (int i = 0; i < K_N; i++) {
		tk__map_clear(&q->m[i]);
		dense_clear(&q->d[i]);
	}
	q->has_default = 0;
	q->default_clock = 0;
}

/* One TracePacket: 1 with r->ev set, 0 for none (the queue may have some). */
static int take_packet(tk_reader *r, const unsigned char *p, size_t n)
{
	pr *s = r->fs;
	pkf k;
	int64_t ts = 0;
	int rc = pkt_scan(p, n, &k, take_inline, r);
	if (rc < 0)
		return rc;
	if (rc)
		return bad_pkt(r, "damaged trace packet");
	rseq *q = NULL;
	if (k.interned || k.te || k.defaults || k.snap || k.has_ts || (k.flags & SEQ_CLEARED)) {
		if (!(q = seq_of(s, k.seq_id, &rc)))
			return seq_fail(r, rc);
		if (k.flags & SEQ_CLEARED)
			seq_clear(q);
	}
	if (k.defaults && (rc = take_defaults(r, q, k.defaults, k.defaults_n)))
		return rc;
	if (k.snap && (rc = take_snapshot(r, q, k.snap, k.snap_n)))
		return rc;
	if (k.has_ts) {
		uint64_t id = k.has_clock ? k.clock_id : q->default_clock;
		if (id >= CLOCK_SEQ)
			rc = seq_time(r, q, id, k.raw_ts, &ts);
		else if (k.raw_ts > INT64_MAX)
			rc = bad_pkt(r, "a timestamp beyond 2^63 ns");
		else
			ts = (int64_t)k.raw_ts;
		if (rc)
			return rc;
	}
	if (k.interned && (rc = take_interned(r, q, k.interned, k.interned_n, (1u << K_N) - 1)))
		return rc;
	return k.te ? track_event(r, q, k.te, k.te_n, ts, k.has_ts) : 0;
}

/* The end: slices still open come out as B events. */
static int pf_end(tk_reader *r)
{
	pr *s = r->fs;
	int rc;
	s->done = 1;
	for (size_t i = 0; i < s->n_tracks; i++) {
		rtrack *t = &s->tracks[i];
		for (size_t k = 0; k < t->n; k++)
			if (!t->stack[k].b) {
				hold_event(r, &t->stack[k], 0, 0);
				if ((rc = queue(r, &r->ev)))
					return rc;
			}
		t->n = 0;
	}
	if (s->stray_ends)
		tk__err_warn(&r->err, "%s: %llu slice ends without a beginning on their track were dropped", r->name,
		             (unsigned long long)s->stray_ends);
	if (s->unsupported)
		tk__err_warn(&r->err, "%s: %llu events on tracks without a descriptor were dropped", r->name,
		             (unsigned long long)s->unsupported);
	return 0;
}

static int cut(tk_reader *r, uint64_t need)
{
	uint64_t at = r->base + r->pos;
	char gz[64] = "";
	if (r->src.cut)
		snprintf(gz, sizeof gz, " (the %s stream is cut off)", r->src.cut);
	if (r->opts.strict)
		return tk__err_set(&r->err, TK_ERR_TRUNCATED,
		                   "%s: input ends early%s inside a packet at byte %llu (%llu more bytes needed); %llu "
		                   "complete events before that point",
		                   r->name, gz, (unsigned long long)at, (unsigned long long)need,
		                   (unsigned long long)r->stats.events);
	r->stats.truncated = 1;
	r->stats.dropped_bytes = r->stats.bytes_decoded - at;
	if (tk__err_warn(&r->err, "%s: input ends early%s inside a packet at byte %llu: kept %llu complete events, "
	                          "dropped the last %llu bytes",
	                 r->name, gz, (unsigned long long)at, (unsigned long long)r->stats.events,
	                 (unsigned long long)r->stats.dropped_bytes))
		return nomem(r);
	r->pos = r->end;
	return 0;
}

/* ---- reading on threads ----
 *
 * With opts.threads > 1 the caller's thread reads the packets ahead into
 * blocks of about 1 MiB. Every thread walks every block in file order and
 * keeps its own copy of the state a TrackEvent's annotations are read
 * against: the interned annotation names and strings of each sequence,
 * their clears, and whether the trace is tracekit's. A thread that reaches
 * a block no one has taken takes it and, walking it, scans each
 * TrackEvent's fields (te_scan) and renders its annotations (args text and
 * reserved values) as annotations() would there. The caller reads every
 * packet itself, in order, as with one thread (clocks, tracks, names and
 * categories by id, slices, events), and takes those instead of making
 * them; a block no thread took when the caller reaches it, a packet the
 * thread has not reached, or one it could not render, the caller does
 * itself.
 * What stops the reading ahead (the end of the input, a cut, a damaged
 * field, a packet over the limit, a failed read) is left where it is: once
 * the blocks are read, the caller reads on from its window alone, to the
 * same events, warnings and errors as one thread. */

/* The caller's thread and at most three more, whatever opts.threads asks:
 * the caller reads every packet and bounds the speed at about three times
 * one thread's, while every thread walks every block, so more threads only
 * add memory and traffic between cores. On 16 cores, trace-stats on
 * 16 threads against 4 took 2.10 s against 1.40 s (medians of 5) and
 * peaked at 222 MiB against 107 (docs/threads.md). */
#define PF_THREADS 4
#define PF_THREADS_MAX 64 /* what tk__pf_max_threads may allow */
#define PF_BLOCK ((size_t)1 << 20)
#define PF_FIELD_HDR_MAX (2 * TK__VARINT_MAX) /* a top-level field's key and length, each a varint */
/* The most text a thread renders for one block, about: the generated
 * trace makes 8 MB a block, the largest real ones 0.7 to 7.3 MB; a few
 * bytes of a crafted packet can make up to max_value_bytes, so past this
 * the caller renders the block's rest as it reads it. */
#define PF_BLOCK_TEXT ((size_t)16 << 20)
#define PF_TAKE 2048 /* packets the caller takes when it catches up with a thread */

size_t tk__pf_block_bytes;  /* tests make the blocks smaller; 0: PF_BLOCK */
size_t tk__pf_block_text;   /* tests make the texts' room smaller; 0: PF_BLOCK_TEXT */
unsigned tk__pf_max_threads; /* tests allow more threads; 0: PF_THREADS */

typedef struct ppk {
	size_t off, len; /* in the block's data */
	uint64_t at;     /* the decoded offset just past the packet */
} ppk;

typedef struct ptext { /* results' texts: a chunk never moves */
	struct ptext *next;
	size_t len, cap;
	_Alignas(max_align_t) char p[];
} ptext;

typedef struct pblk {
	struct pblk *next;
	uint64_t seq; /* 0, 1, 2 ... in file order */
	tk__buf data; /* the packets' bytes, back to back */
	ppk *pk;
	size_t n, cap;
	int claimed; /* 1: a thread renders what the caller has not reached, 2: the caller renders it */
	pres *res;   /* with claimed 1: a result per packet */
	size_t res_cap;
	ptext *text, *text_spare; /* the results' texts, the newest chunk first; chunks to reuse */
	size_t text_bytes;        /* in text */
} pblk;

/* Room for n bytes of a result's text in b's chunks, NULL: out of memory. */
static char *text_room(pblk *b, size_t n)
{
	ptext *c = b->text;
	n += (size_t)-n % _Alignof(max_align_t); /* the next one starts aligned */
	if (!c || c->cap - c->len < n) {
		size_t cap = n > ((size_t)64 << 10) ? n : (size_t)64 << 10;
		if (b->text_spare && b->text_spare->cap >= n) {
			c = b->text_spare;
			b->text_spare = c->next;
		} else if ((c = malloc(sizeof *c + cap)) != NULL) {
			c->cap = cap;
		} else {
			return NULL;
		}
		c->next = b->text;
		c->len = 0;
		b->text = c;
	}
	c->len += n;
	b->text_bytes += n;
	return c->p + c->len - n;
}

/* The chunks kept for the block's next use (all = 0), or freed. */
static void text_free(pblk *b, int all)
{
	for (ptext *c = b->text, *nx; c; c = nx) {
		nx = c->next;
		c->next = b->text_spare;
		b->text_spare = c;
	}
	b->text = NULL;
	b->text_bytes = 0;
	for (ptext *c = all ? b->text_spare : NULL, *nx; c; c = nx) {
		nx = c->next;
		free(c);
	}
	if (all)
		b->text_spare = NULL;
}

typedef struct pwk { /* a walking thread's state */
	tk_reader *w; /* this thread's reader: its copy of the state */
	uint64_t pos; /* the block it walks or waits for; UINT64_MAX when gone */
} pwk;

typedef struct ppool {
	/* the walking threads: their lock guards what follows; they wait for
	 * a block read, the caller for one rendered or let go of */
	tk__workers W;
	tk_reader *r; /* the caller's */
	uint64_t left; /* the threads' tk__pftrace_left(), once they ended */
	pblk *head, *tail, *spare; /* blocks kept, in file order */
	size_t n_blk, max_blk;
	uint64_t next_seq;
	int ended; /* no more blocks: the caller reads on from its window */
	unsigned nth;  /* the threads wanted, the caller's counted */
	int started;   /* threads started, when the input is more than a block */
	pblk *cur; /* the caller's block */
	size_t cur_i;
	int err_code; /* what a failed read ahead set on the reader, put back where it read up to */
	char err_msg[TK__ERRLEN];
} ppool;

/* A bundle's metadata, for the mark alone (take_metadata() on the caller's
 * thread adds the entries): -1 where it is damaged. */
static int bundle_ours(pr *s, const unsigned char *p, size_t n)
{
	tk__pb c = tk__pb_of(p, n);
	tk__pb_field f, v;
	const unsigned char *name;
	size_t nlen;
	int k, have;
	while ((k = tk__pb_next(&c, &f)) > 0) {
		if (f.num != F_CEB_METADATA || f.wt != TK__PB_LEN)
			continue;
		if (meta_scan(f.data, f.len, &name, &nlen, &v, &have))
			return -1;
		if (meta_mark(name, nlen, have))
			s->ours = 1;
	}
	return k < 0 ? -1 : 0;
}

/* A thread's walk over one packet: what take_packet() changes of the state
 * annotations are read against; with res, a TrackEvent's annotations
 * rendered into *res and text. < 0 where this thread's state can no longer
 * be the caller's (the caller stops at that packet, or ran out of memory
 * where this thread did not). */
static int walk_inline(void *ctx, unsigned field, const unsigned char *p, size_t n)
{
	return field == F_PKT_CHROME_EVENTS ? bundle_ours(ctx, p, n) : 0;
}

static int walk_packet(tk_reader *w, const unsigned char *p, size_t n, pres *res, pblk *b)
{
	pr *s = w->fs;
	pkf k;
	if (pkt_scan(p, n, &k, walk_inline, s))
		return -1;
	const unsigned char *te = k.te;
	size_t te_n = k.te_n;
	rseq *q = NULL;
	if (k.interned || te || (k.flags & SEQ_CLEARED)) {
		int rc;
		if (!(q = seq_of(s, k.seq_id, &rc)))
			return -1;
		if (k.flags & SEQ_CLEARED)
			seq_clear(q);
	}
	if (k.interned && take_interned(w, q, k.interned, k.interned_n, 1u << K_ANN | 1u << K_STR))
		return -1;
	int st = PRE_FREE;
	if (!res || !te)
		return 0; /* nothing to render */
	if (b->text_bytes >= (tk__pf_block_text ? tk__pf_block_text : PF_BLOCK_TEXT)) {
		s->left++; /* the block's texts are full: the caller renders it */
		return 0;
	}
	if (!__atomic_compare_exchange_n(&res->state, &st, PRE_BUSY, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		return 0; /* the caller has come this far */
	rres rr;
	rev ev;
	memset(&rr, 0, sizeof rr);
	int any = -1;
	if ((s->scan || (s->scan = calloc(1, sizeof *s->scan))) && te_scan(te, te_n, &ev, s->scan) == 0)
		any = annotations(w, q, te, te_n, F_TE_ANNOTATIONS, 0, &rr);
	char *t = NULL;
	/* the texts, then (aligned) the rres, the rev, its refs and extra series */
	size_t nt = s->tmp.len, na = any > 0 ? w->args.len : 0, pad = (size_t)-(nt + na) % _Alignof(max_align_t);
	size_t nx = any >= 0 && (ev.x->n_tracks[0] || ev.x->n_tracks[1] || ev.x->n_i || ev.x->n_d) ? sizeof(rextra) : 0;
	size_t nrefs = any >= 0 ? ev.n_refs * sizeof(rref) : 0;
	if (any >= 0 && (t = text_room(b, nt + na + pad + sizeof rr + sizeof ev + nrefs + nx)) != NULL) {
		rres *out = (rres *)(void *)(t + nt + na + pad);
		rev *oe = (rev *)(void *)(out + 1);
		rref *orefs = (rref *)(void *)(oe + 1);
		rextra *ox = (rextra *)(void *)((char *)orefs + nrefs);
		if (nrefs)
			memcpy(orefs, ev.refs, nrefs);
		if (nx)
			memcpy(ox, ev.x, nx);
		*oe = ev;
		oe->refs = orefs;
		oe->x = nx ? ox : &rextra_none;
		res->ev = oe;
		if (nt)
			memcpy(t, s->tmp.p, nt);
		if (rr.has_args)
			rr.args.ptr = t + (rr.args.ptr - s->tmp.p);
		if (rr.has_extra)
			rr.extra.ptr = t + (rr.extra.ptr - s->tmp.p);
		if (any) {
			memcpy(t + nt, w->args.p, na);
			rr.obj = (tk_sv){t + nt, na};
		}
		*out = rr;
		res->rr = out;
		res->any = any;
	}
	w->err.code = 0; /* an error the caller meets itself, rendering it */
	__atomic_store_n(&res->state, t ? PRE_DONE : PRE_FAILED, __ATOMIC_RELEASE);
	return 0;
}

/* The block of sequence number `seq` (the lock held), NULL when it is not read yet. */
static pblk *blk_at(ppool *P, uint64_t seq)
{
	pblk *b = P->head;
	while (b && b->seq != seq)
		b = b->next;
	return b;
}

/* The walking threads' step: every block, in order, walked with this
 * thread's reader k->w; the ones no other thread claimed rendered. */
static int walk_step(void *owner, void *state)
{
	ppool *P = owner;
	pwk *k = state;
	pblk *b = k->pos == UINT64_MAX ? NULL : blk_at(P, k->pos);
	if (!b) {
		if (!P->ended || k->pos == UINT64_MAX)
			return 0;
		k->pos = UINT64_MAX; /* the blocks are through: gone */
		tk__workers_done(&P->W);
		return 0;
	}
	int mine = !b->claimed, ok = 1;
	if (mine)
		b->claimed = 1;
	pthread_mutex_unlock(&P->W.mu);
	for (size_t i = 0; i < b->n && ok; i++) {
		const ppk *x = &b->pk[i];
		ok = walk_packet(k->w, (const unsigned char *)b->data.p + x->off, x->len, mine ? &b->res[i] : NULL, b) ==
		     0;
	}
	pthread_mutex_lock(&P->W.mu);
	k->pos = ok ? k->pos + 1 : UINT64_MAX; /* a walk that failed: gone */
	tk__workers_done(&P->W); /* a block rendered, or one the caller may let go of */
	return 1;
}

static int walk_init(void *owner, void *state, unsigned i)
{
	(void)i;
	return !(((pwk *)state)->w = tk__reader_worker(((ppool *)owner)->r));
}

static void walk_fini(void *owner, void *state)
{
	pwk *k = state;
	if (!k->w)
		return; /* its reader could not be made */
	((ppool *)owner)->left += ((pr *)k->w->fs)->left;
	tk_reader_free(k->w);
}

static const tk__workers_ops walk_ops = {sizeof(pwk), walk_init, walk_fini, walk_step};

static void blk_free(pblk *b)
{
	tk__buf_free(&b->data);
	text_free(b, 1);
	free(b->pk);
	free(b->res);
	free(b);
}

static void pool_free(pr *s)
{
	ppool *P = s->pool;
	if (!P)
		return;
	tk__workers_free(&P->W);
	s->left += P->left;
	for (pblk *b = P->head, *nx; b; b = nx) {
		nx = b->next;
		blk_free(b);
	}
	for (pblk *b = P->spare, *nx; b; b = nx) {
		nx = b->next;
		blk_free(b);
	}
	free(P);
	s->pool = NULL;
}

/* Reads the next block of whole packets from the window (the caller's
 * thread, the lock not held) into the list; sets P->ended where the reading
 * ahead stops (nothing more, or something the caller reads on alone from
 * r->pos). */
static void pool_read(tk_reader *r, ppool *P)
{
	size_t want = tk__pf_block_bytes ? tk__pf_block_bytes : PF_BLOCK;
	pblk *b = P->spare;
	if (b)
		P->spare = b->next;
	else if (!(b = calloc(1, sizeof *b))) {
		pthread_mutex_lock(&P->W.mu);
		P->ended = 1;
		pthread_mutex_unlock(&P->W.mu);
		return;
	}
	b->next = NULL;
	b->n = b->data.len = 0;
	b->claimed = 0;
	text_free(b, 0);
	int stop = 0;
	while (b->data.len < want) {
		int rc = tk__reader_fill(r, PF_FIELD_HDR_MAX);
		if (rc < 0 || r->pos == r->end)
			break;
		const unsigned char *p = r->buf + r->pos, *e = r->buf + r->end;
		int bad = 0;
		uint64_t key = tk__get_varint(&p, e, &bad), len = 0;
		unsigned wt = key & 7;
		if (bad || (wt != TK__PB_LEN && wt != TK__PB_VARINT && wt != TK__PB_I64 && wt != TK__PB_I32))
			break;
		if (wt == TK__PB_LEN)
			len = tk__get_varint(&p, e, &bad);
		else if (wt == TK__PB_VARINT)
			tk__get_varint(&p, e, &bad);
		else
			len = wt == TK__PB_I64 ? 8 : 4;
		size_t hdr = (size_t)(p - (r->buf + r->pos));
		if (bad || len > r->opts.max_value_bytes || tk__reader_fill(r, hdr + (size_t)len) < 0 ||
		    r->end - r->pos < hdr + len)
			break;
		if (key == ((uint64_t)F_TRACE_PACKET << 3 | TK__PB_LEN)) {
			if (TK__GROW(b->pk, b->cap, b->n + 1) || TK__GROW(b->res, b->res_cap, b->n + 1) ||
			    tk__buf_append(&b->data, r->buf + r->pos + hdr, (size_t)len)) {
				nomem(r); /* the caller meets it after the packets before */
				break;
			}
			b->res[b->n].state = PRE_FREE;
			b->pk[b->n++] = (ppk){b->data.len - (size_t)len, (size_t)len, r->base + r->pos + hdr + len};
		}
		r->pos += hdr + (size_t)len;
	}
	if (r->err.code) { /* set where one thread would meet it: after these packets */
		P->err_code = r->err.code;
		memcpy(P->err_msg, r->err.msg, sizeof P->err_msg);
		r->err.code = 0;
		stop = 1;
	}
	if (b->data.len < want)
		stop = 1; /* the end, or what the caller reads alone */
	pthread_mutex_lock(&P->W.mu);
	if (b->n) {
		b->seq = P->next_seq++;
		if (P->tail)
			P->tail->next = b;
		else
			P->head = b;
		P->tail = b;
		P->n_blk++;
	} else {
		b->next = P->spare;
		P->spare = b;
	}
	if (stop)
		P->ended = 1;
	tk__workers_wake(&P->W);
	pthread_mutex_unlock(&P->W.mu);
}

/* With opts.threads > 1 the packets are read ahead in blocks, and
 * threads - 1 threads start once there is more than one (pool_threads). */
static void pool_start(tk_reader *r)
{
	pr *s = r->fs;
	s->pool_tried = 1;
	unsigned most = tk__pf_max_threads ? tk__pf_max_threads : PF_THREADS;
	if (most > PF_THREADS_MAX)
		most = PF_THREADS_MAX;
	unsigned nth = r->opts.threads > most ? most : r->opts.threads;
	if (nth < 2)
		return;
	ppool *P = calloc(1, sizeof *P);
	if (!P)
		return;
	tk__workers_init(&P->W, &walk_ops, P);
	P->r = r;
	P->nth = nth;
	P->max_blk = (size_t)nth + 2;
	s->pool = P;
}

/* The threads, from the first block on (the lock not held): counted as
 * they start, so that block 0 is kept for them; none started: the caller
 * renders every block itself. */
static void pool_threads(ppool *P)
{
	tk__workers_start(&P->W, P->nth - 1, "tk-parse");
}

/* The next packet from the blocks read ahead (s->at and s->pre set for
 * it): 1, or 0 when they are through (the caller reads on from its
 * window, alone). */
static int pool_next(tk_reader *r, const unsigned char **p, size_t *n)
{
	pr *s = r->fs;
	ppool *P = s->pool;
	pblk *b = P->cur;
	if (!b || P->cur_i == b->n) {
		uint64_t want = b ? b->seq + 1 : 0;
		pthread_mutex_lock(&P->W.mu);
		for (;;) {
			/* the blocks every thread and the caller are through with */
			uint64_t lo = want;
			for (unsigned i = 0; i < P->W.n; i++) {
				const pwk *k = tk__workers_state(&P->W, i);
				if (k->pos < lo)
					lo = k->pos;
			}
			while (P->head && P->head->seq < lo) {
				pblk *x = P->head;
				P->head = x->next;
				if (!P->head)
					P->tail = NULL;
				P->n_blk--;
				x->next = P->spare;
				P->spare = x;
			}
			b = blk_at(P, want);
			int more = !P->ended && P->n_blk < P->max_blk;
			if (!more && (b || P->ended))
				break;
			if (!more) { /* full: a thread is still walking the oldest */
				tk__workers_wait(&P->W);
				continue;
			}
			pthread_mutex_unlock(&P->W.mu);
			pool_read(r, P);
			pthread_mutex_lock(&P->W.mu);
		}
		if (b && !b->claimed)
			b->claimed = 2;
		int start = !P->started && P->next_seq > 1;
		P->started = 1;
		pthread_mutex_unlock(&P->W.mu);
		if (start)
			pool_threads(P);
		P->cur = b;
		P->cur_i = 0;
		if (!b) {
			if (P->err_code) { /* where one thread meets it */
				r->err.code = P->err_code;
				memcpy(r->err.msg, P->err_msg, sizeof r->err.msg);
			}
			pool_free(s);
			return 0;
		}
	}
	const ppk *x = &b->pk[P->cur_i];
	s->pre = NULL;
	if (b->claimed == 1) { /* what the thread has rendered, or the caller takes it */
		pres *e = &b->res[P->cur_i];
		int st = __atomic_load_n(&e->state, __ATOMIC_ACQUIRE);
		if (st != PRE_FREE ||
		    !__atomic_compare_exchange_n(&e->state, &st, PRE_CALLER, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
			if (st == PRE_BUSY) {
				/* caught up with the thread: it renders this one; the next
				 * ones the caller takes, while the thread walks on ahead */
				for (size_t j = P->cur_i + 1; j < b->n && j <= P->cur_i + PF_TAKE; j++) {
					int f = PRE_FREE;
					__atomic_compare_exchange_n(&b->res[j].state, &f, PRE_CALLER, 0, __ATOMIC_ACQ_REL,
					                            __ATOMIC_ACQUIRE);
				}
				for (int spin = 0; (st = __atomic_load_n(&e->state, __ATOMIC_ACQUIRE)) == PRE_BUSY; spin++)
					if (spin > 64)
						sched_yield();
			}
			if (st == PRE_DONE)
				s->pre = e;
		}
	}
	s->at = x->at;
	*p = (const unsigned char *)b->data.p + x->off;
	*n = x->len;
	P->cur_i++;
	return 1;
}

static int pf_next(tk_reader *r, const tk_event **ev)
{
	pr *s = r->fs;
	for (;;) {
		tk_event_free(s->cur); /* a queued event lives until the next call */
		s->cur = NULL;
		if (s->qi < s->qn) {
			s->cur = s->q[s->qi++];
			r->ev = *s->cur;
			*ev = &r->ev;
			return TK_OK;
		}
		if (s->done)
			return TK_EOF;
		if (!s->pool_tried)
			pool_start(r);
		int rc;
		if (s->pool) {
			const unsigned char *pk;
			size_t pn;
			if (pool_next(r, &pk, &pn)) {
				rc = take_packet(r, pk, pn);
				s->pre = NULL;
				if (rc < 0)
					return rc;
				if (rc == 1) {
					*ev = &r->ev;
					return TK_OK;
				}
				continue;
			}
		}
		rc = tk__reader_fill(r, PF_FIELD_HDR_MAX);
		if (rc)
			return rc;
		if (r->pos == r->end) {
			if ((rc = pf_end(r)))
				return rc;
			continue;
		}
		const unsigned char *p = r->buf + r->pos, *e = r->buf + r->end;
		int bad = 0;
		s->at = r->base + r->pos;
		uint64_t key = tk__get_varint(&p, e, &bad), len = 0;
		if (!bad) {
			unsigned wt = key & 7;
			if (wt == TK__PB_LEN)
				len = tk__get_varint(&p, e, &bad);
			else if (wt == TK__PB_VARINT)
				tk__get_varint(&p, e, &bad);
			else if (wt == TK__PB_I64 || wt == TK__PB_I32)
				len = wt == TK__PB_I64 ? 8 : 4;
			else
				return bad_pkt(r, "not a Perfetto trace: a field of an unknown wire type");
		}
		if (bad) {
			if (r->eof && (rc = cut(r, 1)) == 0)
				continue;
			return rc ? rc : bad_pkt(r, "damaged field header");
		}
		size_t hdr = (size_t)(p - (r->buf + r->pos));
		if (len > r->opts.max_value_bytes)
			return tk__reader_fail_at(r, TK_ERR_LIMIT, r->base + r->pos,
			                          "a packet of %llu bytes is larger than the limit of %zu",
			                          (unsigned long long)len, r->opts.max_value_bytes);
		if ((rc = tk__reader_fill(r, hdr + (size_t)len)))
			return rc;
		if (r->end - r->pos < hdr + len) {
			if ((rc = cut(r, hdr + len - (r->end - r->pos))))
				return rc;
			continue;
		}
		const unsigned char *body = r->buf + r->pos + hdr;
		int is_packet = key == ((uint64_t)F_TRACE_PACKET << 3 | TK__PB_LEN);
		/* the packet is copied: the window may move while events are made */
		s->pkt.len = 0;
		if (is_packet && tk__buf_append(&s->pkt, body, (size_t)len))
			return nomem(r);
		r->pos += hdr + (size_t)len;
		if (!is_packet)
			continue;
		s->at = r->base + r->pos;
		rc = take_packet(r, (const unsigned char *)s->pkt.p, s->pkt.len);
		if (rc < 0)
			return rc;
		if (rc == 1) {
			*ev = &r->ev;
			return TK_OK;
		}
	}
}

static const tk__fmt pftrace_rd = {pf_bid, pf_open, pf_next, pf_free};

static const char *const pftrace_suffixes[] = {".pftrace", ".perfetto-trace", NULL};

const tk__format tk__format_pftrace = {TK_FORMAT_PFTRACE, "pftrace", pftrace_suffixes, TK__FMT_WHOLE_GZIP | TK__FMT_BINARY,
                                       &pftrace_rd, &pftrace_wr};

uint64_t tk__pftrace_left(const tk_reader *r)
{
	return r && r->fmt == &tk__format_pftrace && r->fs ? ((const pr *)r->fs)->left : 0;
}
