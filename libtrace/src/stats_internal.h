/* stats_internal.h: private structures shared by the stats_*.c sources. */
#ifndef TK_STATS_INTERNAL_H
#define TK_STATS_INTERNAL_H

#include "core/workers.h"
#include "internal.h"
#include "tracekit/stats.h"

/* ---- small maps (stats_map.c) ---- */

/* Pages of 4096 u32 values (16 KiB). Past max_resident pages in memory,
 * the least recently used (a clock) go to a file in tmpdir that has no
 * name, and come back when they are used. */
#define TK__PAGE_BITS 12
#define TK__PAGE (1u << TK__PAGE_BITS)
typedef struct tk__page {
	uint32_t *v;   /* NULL while the page is in the file only */
	unsigned char ref, dirty, saved;
} tk__page;
typedef struct tk__pool {
	tk__page *pages;
	size_t n_pages, pages_cap;
	size_t resident, max_resident; /* max 0: no limit */
	size_t hand;                   /* the clock's */
	int fd;                        /* the pages' file, 0 until the first one goes */
	const char *tmpdir;            /* borrowed; NULL: $TMPDIR or /tmp */
	const char *what;              /* whose pages, for messages */
	uint64_t out;                  /* pages written out (tests) */
	int err;                       /* sticky: TK_ERR_IO or TK_ERR_NOMEM, msg says why */
	char msg[TK__ERRLEN];
} tk__pool;
/* A new page of zeros: its number + 1, 0 on failure (p->err). */
uint32_t tk__pool_new(tk__pool *p);
/* Page n - 1's values in memory (write: they change), valid until the
 * next call on p; NULL on failure (p->err). */
uint32_t *tk__pool_at(tk__pool *p, uint32_t n, int write);
/* The pages of 16 KiB that fit in bytes, at least 4. */
size_t tk__pool_pages(size_t bytes);
void tk__pool_free(tk__pool *p);

/* Dense ids (External id, correlation) -> u32, in pages of a pool: 4
 * bytes per id when ids are dense, as Kineto's are. */
typedef struct tk__idmap {
	tk__map dir; /* page number -> pool page number */
	tk__pool pool;
} tk__idmap;
/* The value of id, 0 when it has none, or when its page could not be read
 * back (m->pool.err is then set: check it before the tables are used). */
uint32_t tk__idmap_get(tk__idmap *m, uint64_t id);
/* 0, or m->pool.err. */
int tk__idmap_put(tk__idmap *m, uint64_t id, uint32_t val);
void tk__idmap_free(tk__idmap *m);

/* An ordered list of u32 values: each full 4096 in a page of a pool that
 * several lists may share, the rest in memory (under 16 KiB). */
typedef struct tk__u32s {
	uint32_t *pg; /* pool page numbers, 4096 values each */
	size_t n_pg, cap_pg;
	uint32_t *tail; /* the values after the pages' */
	size_t n_tail, cap_tail;
	size_t n; /* n_pg * 4096 + n_tail */
} tk__u32s;
/* 0, TK_ERR_NOMEM or the pool's error. */
int tk__u32s_add(tk__pool *p, tk__u32s *l, uint32_t v);
/* Value i (below l->n) into *v: 0 or the pool's error. */
int tk__u32s_get(tk__pool *p, const tk__u32s *l, size_t i, uint32_t *v);
void tk__u32s_free(tk__u32s *l);

/* Durations kept exactly for medians: u32 ns in a list of a pool that the
 * rows share; wider values apart in memory. */
typedef struct tk__durs {
	tk__u32s small;
	int64_t *big;
	size_t n_big, cap_big;
} tk__durs;
/* 0, TK_ERR_NOMEM or the pool's error. */
int tk__durs_add(tk__pool *p, tk__durs *d, int64_t v);
void tk__durs_free(tk__durs *d);
/* One row's durations in its pool (a rank's row, when rows are pooled). */
typedef struct tk__durset {
	tk__pool *pool;
	const tk__durs *d;
} tk__durset;
/* The exact median and the sample standard deviation of the values of
 * sets[0..n) together (total: their sum). Up to tk__durs_sort_max values
 * they are sorted in memory; past it the median is selected by counting
 * passes over the pages, in bounded memory. 0, TK_ERR_NOMEM, or a pool's
 * error. */
int tk__durs_describe(const tk__durset *sets, size_t n, int64_t total, double *med, double *sd);
extern size_t tk__durs_sort_max;

/* Sorting signed 64-bit values (a radix sort: stats_map.c): 0, or
 * TK_ERR_NOMEM (v is then as it was). */
int tk__sort_i64(int64_t *v, size_t n);

/* ---- the args members the stats read (stats_args in stats.c) ---- */

/* Value texts, ptr NULL when absent; the first of duplicate keys wins, as in
 * tk_args_find. */
typedef struct tk__sargs {
	tk_sv ext, ext_alt;   /* "External id", "external id" */
	tk_sv corr, bytes;    /* "correlation", "bytes" */
	tk_sv dims, dims_alt; /* "Input Dims", "Input dims" */
	tk_sv conc;           /* "Concrete Inputs" */
	/* as tk_args_get_int reads them, 0 when absent or not an integer:
	 * External id (else external id), correlation, bytes */
	int64_t ext_id, corr_id, n_bytes;
	unsigned char ext_int, corr_int; /* ext_id, corr_id known while scanning */
} tk__sargs;
/* What a caller reads: the scan stops once these are settled, members after
 * them cannot change what the caller sees (TK__NEED_EXT: External id, else
 * external id; TK__NEED_DIMS: Input Dims, else Input dims). */
enum {
	TK__NEED_EXT = 1,
	TK__NEED_CORR = 2,
	TK__NEED_BYTES = 4,
	TK__NEED_DIMS = 8,
	TK__NEED_CONC = 16
};
void tk__sargs_read(const tk_event *ev, unsigned need, tk__sargs *a);
/* The members tk__flops_args reads for an op of this name: TK__NEED_*. */
unsigned tk__flops_needs(tk_sv name, int mode);
/* tk_flops_event from members already found. */
uint64_t tk__flops_args(tk_sv name, const tk__sargs *a, int mode);

/* What tk_stats_add takes from an event's args (stats.c read_members). */
typedef struct tk__sread {
	int64_t ext_id, corr_id, n_bytes; /* as tk__sargs has them */
	tk_sv dims;     /* Input Dims, else Input dims, else "[]" */
	uint64_t flops; /* the op's FLOPs when its formula's members were asked for */
} tk__sread;

/* The same, read ahead on a reader's thread (tk_stats_note): 64 bytes. */
typedef struct tk__snote {
	uint32_t fp;   /* the options it was written for */
	unsigned need; /* the members read (TK__NEED_*); 0: none */
	/* on the first event of a batch whose tables were made on the
	 * reader's thread (tk__stats_batch): them; else NULL */
	const struct tk__sbatch *batch;
	tk__sread m;
} tk__snote;

/* ---- a batch's part of the tables, made on a reader's thread ---- */

/* An event's part of the tables (stats.c event_rec): a CPU op, an API call
 * or a GPU activity (kind TK__NREC_*); by their index in the batch
 * (tk__sbatch), its name, the key of its op row (its name's, or with
 * group_by_shapes a CPU event's name and shapes) and its thread. */
typedef struct tk__sbrec {
	int64_t ts, dur, ext, corr;
	uint64_t val; /* op, API call: FLOPs; GPU activity: bytes */
	uint32_t name, key, thread;
	int kind;
} tk__sbrec;
/* A key of the batch's rows: an event's row name and class (the reader's
 * string, alive as long as the batch's events), and for a CPU event
 * grouped by shapes its shapes text (shapes_len bytes at shapes_off in the
 * batch's text; has_shapes 0 for a name's own rows). */
typedef struct tk__sbname {
	tk_sv name;
	int cls, has_shapes;
	size_t shapes_off, shapes_len;
} tk__sbname;
/* The trace thread of CPU events (the reader's strings). */
typedef struct tk__sbthread {
	tk_id pid, tid;
} tk__sbthread;
/* In one buffer: this, then n_recs records, n_names keys, n_threads
 * threads, in the order of the events' first appearance in the batch (a
 * name's key before its shapes'), then the shapes' text. */
typedef struct tk__sbatch {
	uint32_t fp; /* the options (as a note's) */
	uint32_t n;  /* the batch's events, all of which it holds */
	uint64_t events; /* tk_stats_info.events */
	int64_t ts_min, ts_max;
	size_t n_recs, n_names, n_threads, n_text;
} tk__sbatch;

/* ---- the stats object (stats.c) ---- */

typedef struct tk__oprow {
	tk_stats_op pub;
	int64_t first_ts, first_end; /* earliest (start, -end) seen */
} tk__oprow;

typedef struct tk__sumrow {
	tk_stats_sum pub;
	int cls;
	tk__durs durs;
} tk__sumrow;

/* A CPU op or API call waiting to be sorted by time on its thread. */
typedef struct tk__pend {
	int64_t ts, dur, ext, corr;
	uint64_t flops;
	uint32_t key;
	int api;
} tk__pend;

/* A GPU activity whose launching op is not known yet. */
typedef struct tk__defer {
	int64_t dur, ext, corr;
} tk__defer;

/* An op open on a thread's stack. */
typedef struct tk__frame {
	int64_t start, end;
	uint32_t key, chain;
	int counted; /* it or an ancestor counts FLOPs (extended mode) */
} tk__frame;

typedef struct tk__thread {
	tk__pend *pend;
	size_t n_pend, cap_pend;
	size_t n_sorted; /* pend[0, n_sorted) is in time order */
	tk__frame *stack;
	size_t depth, cap_stack;
	int64_t frontier; /* start of the last op processed */
	int started;
	struct tk__thread *fl; /* the call paths' own (stats_flame.c), NULL until used */
} tk__thread;

/* ---- the ops' nesting and the GPU attribution (stats_nest.c) ---- */

/* What the nesting takes of an event, in arrival order: a CPU op or API
 * call (key: its op row + 1, thread: its trace thread's index), or a GPU
 * activity (dur, ext, corr). */
enum { TK__NREC_OP, TK__NREC_API, TK__NREC_DEV };
typedef struct tk__nrec {
	int64_t ts, dur, ext, corr;
	uint64_t flops;
	uint32_t key, thread;
	int kind;
} tk__nrec;

/* What the nesting adds to an op row (by key - 1), summed into the rows at
 * tk_stats_finish. */
typedef struct tk__nrow {
	uint64_t count, flops;
	int64_t self_cpu, cpu_total, self_dev, dev_total;
	int64_t first_ts, first_end; /* INT64_MAX, 0 until an op is seen */
} tk__nrow;

typedef struct tk__nblk tk__nblk;
typedef struct tk__nest {
	size_t max_pending;
	int extended; /* TK_FLOPS_EXTENDED */
	tk__nrow *rows;
	size_t n_rows, cap_rows;
	/* call paths: chain i = (chain_key[i], chain_parent[i]); 0 = none */
	uint32_t *chain_key, *chain_parent;
	size_t n_chains, cap_chains;
	tk__map chain_index;
	tk__idmap ext_map, corr_map;
	tk__thread *threads; /* by the trace thread's index */
	size_t n_threads, cap_threads;
	size_t n_pending;
	tk__defer *defer;
	size_t n_defer, cap_defer;
	uint64_t late, unattributed;
	int rc; /* the error that ended the processing, its message in err */
	tk__err err;
	/* the thread (tk-nest), when running: blocks of records handed over
	 * in order; the workers' lock guards the queue, spare, busy and rc */
	int sync, running, busy; /* sync: W is initialised; busy: the thread holds a block */
	tk__workers W;
	tk__nblk *cur, *queue, *queue_tail, *spare;
	size_t n_blocks;
} tk__nest;
/* 0 or TK_ERR_NOMEM; o->max_pending set (its default applied); with
 * o->threads >= 2 a thread of its own processes the records (the caller
 * does when it cannot start). */
int tk__nest_init(tk__nest *n, const tk_stats_opts *o);
/* 0, or the error that ended the processing (tk__nest_error), which on a
 * thread may come some records after the one it was found at. */
int tk__nest_add(tk__nest *n, const tk__nrec *r);
/* Processes the rest, the thread ended: 0 or the error. */
int tk__nest_finish(tk__nest *n);
const char *tk__nest_error(const tk__nest *n);
void tk__nest_free(tk__nest *n);
/* Keeps the earliest (start, -end). */
void tk__first_seen(int64_t *first_ts, int64_t *first_end, int64_t ts, int64_t end);

/* A name's rows, cached by the event's name pointer (stats.c name_of). */
typedef struct tk__namec {
	const char *src, *name; /* the event's pointer; the interned copy */
	size_t len;
	int cls;
	unsigned flops;   /* TK__NEED_* of its FLOP formula */
	uint32_t row, sum; /* op row + 1 (0 when keyed by shapes), summary row + 1 */
	uint32_t fl;       /* its call-path name + 1 (stats_flame.c), 0 until known */
} tk__namec;
#define TK__NAMEC_BITS 10

struct tk_stats {
	tk_stats_opts opts;
	char *cats; /* owned copy of opts.cats, "a,b" */
	char *tmpdir; /* owned copy of opts.tmpdir, for the id maps */
	tk__strtab strs;
	tk__oprow *ops;
	size_t n_ops, cap_ops;
	tk__map op_index;
	tk__sumrow *sums;
	size_t n_sums, cap_sums;
	tk__map sum_index;
	tk__nest nest; /* the ops' nesting and the GPU attribution */
	tk__pool dur_pool; /* the summaries' durations */
	tk__thread *threads; /* the call paths' (fl) */
	size_t n_threads, cap_threads;
	tk__map thread_index;
	tk_id last_pid, last_tid; /* strings held in strs */
	size_t last_thread;       /* index + 1 of the thread of the last CPU event */
	/* the steps and launch tables (stats_steps.c): the steps; the launches
	 * and GPU ops, in sorters until tk_stats_finish */
	struct tk_steps *st_steps;
	struct tk__tline *tl;
	tk_stats_step *step_rows;
	size_t n_step_rows;
	tk__map stream_index; /* the GPU ops' (pid, tid): hash -> index + 1 */
	char **stream_names;
	size_t n_streams, cap_streams;
	tk_stats_launch *launch_rows; /* "all", then a row per stream */
	size_t n_launch_rows;
	/* the memory table (stats_memory.c): the [memory] events in a sorter
	 * until tk_stats_finish; with memory_series, their time line after */
	struct tk_sorter *mem_sort;
	struct tk__memev *mev;
	size_t n_mev;
	tk_stats_memory *mem_rows;
	size_t n_mem_rows, cap_mem_rows;
	uint64_t *peak_thread; /* per device: the peak event's (pid, tid) hash */
	int64_t *peak_best;    /* per device: the innermost op at the peak so far (its duration) */
	/* the op at each peak, found while reading where the order allows
	 * (stats_memory.c): per device, the peaks so far; per thread, its ops */
	struct tk__mlive *mlive;
	size_t cap_mlive;
	struct tk__mthread *mthreads;
	size_t n_mthreads, cap_mthreads;
	tk__map mthread_index;   /* thread hash -> index + 1 */
	unsigned char *peak_done; /* per device: the op at the peak is known */
	size_t peak_left;        /* devices with events whose op is not known yet */
	/* the collectives table (stats_coll.c): the kernels' starts in a
	 * sorter until tk_stats_finish, then per row in time order (two u32
	 * each: high, low) in pages of coll_pool */
	struct tk_sorter *coll_sort;
	uint64_t n_coll;
	tk__pool coll_pool;
	tk_stats_collective *coll_rows;
	size_t n_coll_rows, cap_coll_rows;
	tk__u32s *coll_ts; /* per row */
	size_t cap_coll_ts;
	/* the call paths of CPU time (stats_flame.c): path i = (fl_name[i],
	 * fl_parent[i]), 0 none; its self time */
	tk__strtab fl_names;
	uint32_t *fl_name, *fl_parent;
	int64_t *fl_self;
	size_t n_fl, cap_fl;
	tk__map fl_index;
	size_t n_fpending;
	struct { const char *src; size_t len; uint32_t fl; } fl_cache[256]; /* Python frames' names, by pointer */
	tk_stats_frame *frames; /* results */
	/* results, built by tk_stats_finish */
	int finished;
	size_t *sum_order[6];
	size_t n_sum_order[6];
	tk_stats_info info;
	tk__buf scratch, shapes;
	tk__namec names[1u << TK__NAMEC_BITS];
	/* the note of the event being added (tk_stats_add_noted), and the
	 * options a note must have been written for */
	const struct tk__snote *note;
	uint32_t note_fp;
	/* tk_stats_add_from: the batches' tables are taken (opts allow it); a
	 * batch taken whole, its events still to come (cover_left), the next
	 * expected (cover_next, of cover_r); batches taken */
	int batches_ok;
	size_t cover_left;
	const tk_event *cover_next;
	const struct tk_reader *cover_r;
	uint64_t batches;
	/* a batch's names and threads as rows: op row + 1, summary row + 1;
	 * thread index */
	uint32_t *bmap;
	size_t cap_bmap;
	tk__err err;
};

/* A thread's CPU events in time order (stats.c): sort pend[0, n), of which
 * [0, n_sorted) are sorted already. 0, TK_ERR_NOMEM or TK_ERR_LIMIT. */
int tk__pend_sort(tk__pend *v, size_t n, size_t n_sorted);
/* The innermost open frame of t that encloses p; torch's rule pops the
 * frames that cannot (not for a late event). */
tk__frame *tk__parent_frame(tk__thread *t, const tk__pend *p, int late);
/* The thread of ev's (pid, tid); NULL when out of memory. */
tk__thread *tk__stats_thread(tk_stats *s, const tk_event *ev);
/* A CPU event for the call paths (opts.flame), under name; *fl caches
 * the name's index + 1 (0: not known yet; NULL: the event's name pointer
 * is the key of a cache of the call paths' own). 0 or an error. */
int tk__stats_flame_add(tk_stats *s, const tk_event *ev, tk_sv name, uint32_t *fl);
int tk__stats_finish_flame(tk_stats *s);
void tk__stats_free_flame(tk_stats *s);

/* Python's repr of the Input Dims list: "[[8, 1024], [], [1024, 1024]]". */
int tk__shapes_repr(tk_sv dims_json, tk__buf *out);
int tk__stats_finish_sums(tk_stats *s);
/* The batches tk_stats_add_from took whole (tests). */
uint64_t tk__stats_batches(const tk_stats *s);
/* s's error "out of memory": TK_ERR_NOMEM. */
static inline int tk__stats_nomem(tk_stats *s)
{
	return tk__err_msg(&s->err, TK_ERR_NOMEM, "out of memory");
}
/* s's error for a sorter of its tables that failed with rc, doing what
 * (so may be NULL): rc, or TK_ERR_IO for a code that is not an error. */
int tk__stats_sort_fail(tk_stats *s, const struct tk_sorter *so, const char *what, int rc);
/* s's error for rc from a page pool (the id maps, the durations: a page
 * that could not be written or read back), or out of memory. */
int tk__stats_map_fail(tk_stats *s, int rc);
/* The steps object and the sorters of the steps and launch tables, with
 * bytes of memory among them: 0 or an error, its message in s->err. */
int tk__stats_steps_init(tk_stats *s, size_t bytes);
/* Every X event, of its class, when opts.step_table or launch_table: 0 or
 * an error (TK_ERR_NOMEM, or a sorter's: a run it could not spill), its
 * message in s->err. */
int tk__stats_steps_add(tk_stats *s, const tk_event *ev, int cls);
/* 0 or an error, its message in s->err. */
int tk__stats_finish_steps(tk_stats *s);
void tk__stats_free_steps(tk_stats *s);
/* The memory table's sorter, with bytes of memory: 0 or an error, its
 * message in s->err. */
int tk__stats_memory_init(tk_stats *s, size_t bytes);
/* A [memory] event, when opts.memory_table: 0 or an error (TK_ERR_NOMEM,
 * a sorter's), its message in s->err. */
int tk__stats_memory_add(tk_stats *s, const tk_event *ev);
/* An 'X' event with a time and a name, when opts.memory_table, in the
 * window or not: a CPU op is kept while it may run at a peak to come. */
int tk__stats_memory_cpu(tk_stats *s, const tk_event *ev);
void tk__stats_free_memory(tk_stats *s);
/* 0 or an error, its message in s->err. */
int tk__stats_finish_memory(tk_stats *s);
/* The collectives' sorter, with bytes of memory: 0 or an error, its
 * message in s->err. */
int tk__stats_coll_init(tk_stats *s, size_t bytes);
/* An NCCL kernel, when opts.collective_table: 0 or an error (TK_ERR_NOMEM,
 * or the sorter's), its message in s->err. */
int tk__stats_coll_add(tk_stats *s, const tk_event *ev);
/* 0 or an error, its message in s->err. */
int tk__stats_finish_coll(tk_stats *s);
void tk__stats_free_coll(tk_stats *s);

#endif
