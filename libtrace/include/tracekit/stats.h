/* stats.h: operator, kernel and API summaries of a trace (torch key_averages, nsys *_sum). */
#ifndef TRACEKIT_STATS_H
#define TRACEKIT_STATS_H

#include <stdint.h>

#include "tracekit/steps.h"
#include "tracekit/tracekit.h"

#ifdef __cplusplus
extern "C" {
#endif

/* FLOP counting modes. TORCH counts exactly the ops torch's with_flops counts;
 * EXTENDED also counts linear, matmul, conv1d/3d/convolution, attention and
 * in-place variants, giving the FLOPs to the outermost counted op only
 * (docs/flops.md). */
enum { TK_FLOPS_NONE = 0, TK_FLOPS_TORCH = 1, TK_FLOPS_EXTENDED = 2 };

/* How an event takes part, decided from its category (tk_stats_event_class). */
enum {
	TK_STATS_SKIP = 0, /* not counted */
	TK_STATS_OP = 1,   /* CPU op or annotation: nests by time on its thread */
	TK_STATS_API = 2,  /* runtime/driver call: child of the op named by its External id */
	TK_STATS_KERNEL = 3,
	TK_STATS_MEMCPY = 4,
	TK_STATS_MEMSET = 5
};

typedef struct tk_stats_opts {
	int group_by_shapes; /* key rows by (name, Input Dims) as torch's group_by_input_shape */
	int flops;           /* TK_FLOPS_*; 0 = none */
	/* Categories to count, comma separated ("cpu_op,kernel"); NULL = the
	 * default set (see tk_stats_event_class). Copied by tk_stats_new(). */
	const char *cats;
	/* Only events starting in [lo, hi) of the trace's own clock count. Its
	 * ends must be absolute (tk_window_at() after finding the first event):
	 * tk_stats_new() refuses relative ones. */
	tk_window window;
	/* With a window: GPU work (kernels, memcpy, memset) is in it when its
	 * CPU launch starts in it, rather than when it starts itself
	 * (trace-stats --steps; docs/steps.md). A finished tk_steps of the
	 * same trace: tk_stats_new() gives it the parts {INT64_MIN, window.lo,
	 * window.hi} by tk_steps_parts() (window.lo twice for a window that
	 * ends before it starts; TK_ERR_ARG if it has other parts).
	 * Borrowed: it must live until the last tk_stats_add(). NULL = by start. */
	tk_steps *steps;
	/* Build the steps table (tk_stats_step_get, tk_stats_format_steps):
	 * the launches and GPU ops go through sorters of bounded memory
	 * (memory_bytes) until tk_stats_finish, which joins them and walks the
	 * GPU time line once. */
	int step_table;
	/* Build the launch table (tk_stats_launch_get, tk_stats_format_launch),
	 * with the same cost. */
	int launch_table;
	/* Build the memory table (tk_stats_memory_get, tk_stats_format_memory)
	 * from profile_memory's [memory] events: they go through a sorter of
	 * bounded memory (memory_bytes) until tk_stats_finish. */
	int memory_table;
	/* Build the collectives table (tk_stats_collective_get,
	 * tk_stats_format_collectives): the rows' sums as the kernels are
	 * read; their starts, for the stragglers, through a sorter of bounded
	 * memory (memory_bytes) until tk_stats_finish, then 8 bytes each in
	 * pages of 16 KiB that page out to an unnamed file under tmpdir past
	 * the first 4. */
	int collective_table;
	/* With memory_table: keep the allocation time line for
	 * tk_stats_memory_point() after tk_stats_finish (48 bytes per event). */
	int memory_series;
	/* Most CPU events held for sorting by time per stats object; 0 = 1<<19.
	 * Results are exact while every thread's ops fit (see docs). */
	size_t max_pending;
	/* Build the call paths of CPU time (tk_stats_frame_get,
	 * tk_stats_format_folded): ops, runtime calls and the Python frames of
	 * with_stack traces (category python_function), nested by time on
	 * their thread, each path with its self time. Held for sorting apart
	 * from the ops (max_pending more events), so the other tables are the
	 * same with it or without; memory grows with the distinct paths. */
	int flame;
	/* Memory for the sorting of the collectives' starts (1/16 of it when
	 * another sorted table is built too, else all), of the steps and
	 * launch tables (8/9 of the rest when the memory table is built too)
	 * and of the memory table (1/9 of the rest, or all); beyond it sorted runs are spilled to files under tmpdir (NULL
	 * = $TMPDIR or /tmp; copied) and merged at tk_stats_finish. 0 =
	 * TK_STATS_MEMORY_DEFAULT. On top of it, the ops table's two id maps
	 * (External id, correlation: 4 bytes per id) and the summaries'
	 * durations (4 bytes per instance) keep an eighth of it each in pages
	 * of 16 KiB in memory (at least 4 pages) and page the rest out to an
	 * unnamed file under tmpdir. Outside that: each row's last, partial
	 * page of durations (under 16 KiB a row), durations that do not fit
	 * 32 bits, and 16 bytes of bookkeeping per page. */
	size_t memory_bytes;
	const char *tmpdir;
	/* 0 or 1: every table is built on the thread that adds the events.
	 * 2 or more: the CPU ops' nesting by time and the GPU time attributed
	 * to the ops that launched it are built on a thread of the stats
	 * object's own, from records handed over in blocks (at most about
	 * 2 MiB in flight): the same tables, with less work on the caller's
	 * thread. An error found there (out of memory, an id map's page that
	 * could not be read back) is returned by a later tk_stats_add or by
	 * tk_stats_finish, with the same message. */
	unsigned threads;
} tk_stats_opts;

typedef struct tk_stats tk_stats;

/* tk_stats_opts.memory_bytes when 0. */
#define TK_STATS_MEMORY_DEFAULT ((size_t)128 << 20)

/* 0, or TK_ERR_ARG (a window with a relative end, a tk_steps that is not
 * finished) or TK_ERR_NOMEM, with *out NULL: there is no handle to ask. */
TK_API int tk_stats_new(tk_stats **out, const tk_stats_opts *opts);
/* Feed one event (borrowed; nothing is kept past the call). */
TK_API int tk_stats_add(tk_stats *s, const tk_event *ev);
/* Reading ahead on the parse threads: opened with tk_reader_opts.note_fn
 * = tk_stats_note, note_ctx = the tk_stats_opts the stats objects are
 * made with (its cats, flops and group_by_shapes count) and note_size =
 * tk_stats_note_size(), a reader has what tk_stats_add reads from each
 * event's args (External id, correlation, bytes, Input Dims, the FLOPs)
 * read on the thread that parsed the event. tk_stats_add_noted() takes
 * the event with its note (tk_reader_event_note()): the same as
 * tk_stats_add(), with less work on the caller's thread. A note written
 * for other options, or NULL, is not used. tk_stats_add_reader() uses
 * the notes of a reader opened so. */
TK_API void tk_stats_note(const void *opts, const tk_event *ev, void *out);
TK_API size_t tk_stats_note_size(void);
TK_API int tk_stats_add_noted(tk_stats *s, const tk_event *ev, const void *note);
/* ev, the event tk_reader_next(r) gave last, with its note: as
 * tk_stats_add_noted(). Where r's threads made the tables' part of a batch
 * of events as they parsed it (r opened with the notes above, and options
 * whose every table depends on each event alone and its rows: the ops,
 * kernels, memcpy/memset and API tables, by name or by input shape,
 * without a window or call paths), the batch is taken whole at its first event,
 * and the rest of its events, given in turn, add nothing more: the same
 * tables, with only the batch's records added on the caller's thread.
 * Every event r gives must come here, in order; an event of a batch taken
 * whole that is not the next one is TK_ERR_ARG. */
TK_API int tk_stats_add_from(tk_stats *s, const tk_reader *r, const tk_event *ev);
/* A merged trace's pid scheme rank*span+pid (tk_merge_pid_span), before
 * the first event: step attribution then keeps correlation ids per rank.
 * tk_stats_add_reader() sets it itself. */
TK_API void tk_stats_set_pid_span(tk_stats *s, int64_t span);
/* Read every event of `r` into `s`. Returns 0, or the reader's error code. */
TK_API int tk_stats_add_reader(tk_stats *s, tk_reader *r);
/* Finish: flush pending ops and build the sorted result rows. Call once. */
TK_API int tk_stats_finish(tk_stats *s);
TK_API const char *tk_stats_error(const tk_stats *s);
TK_API void tk_stats_free(tk_stats *s);
/* Classify a category for the default set: TK_STATS_* value. */
TK_API int tk_stats_event_class(tk_sv cat, int has_cat);

/* One operator row (torch FunctionEventAvg). Times in ns. */
/* Rows and their strings belong to the stats object: valid until
 * tk_stats_free(). */
typedef struct tk_stats_op {
	const char *name;   /* ProfilerStep#N already folded to ProfilerStep* */
	const char *shapes; /* torch's str(input_shapes), "" when not grouped */
	int is_device;      /* a GPU activity row (kernel, memcpy, memset) */
	uint64_t count;
	int64_t self_cpu, cpu_total, self_dev, dev_total;
	uint64_t flops;
	uint64_t first; /* order of first appearance by (start, -end) */
} tk_stats_op;

/* One summary row (nsys cuda_gpu_kern_sum / cuda_api_sum shape). */
typedef struct tk_stats_sum {
	const char *name;
	uint64_t count;
	int64_t total, min, max;
	double avg, med, stddev; /* stddev: sample (n-1), 0 for one instance */
	uint64_t bytes;          /* memcpy/memset: bytes moved */
} tk_stats_sum;

/* Which summary: TK_STATS_KERNEL, TK_STATS_MEMCPY (memcpy and memset rows),
 * TK_STATS_API. Rows are sorted by total time, largest first. */
TK_API size_t tk_stats_op_count(const tk_stats *s);
TK_API const tk_stats_op *tk_stats_op_get(const tk_stats *s, size_t i);
TK_API size_t tk_stats_sum_count(const tk_stats *s, int which);
TK_API const tk_stats_sum *tk_stats_sum_get(const tk_stats *s, int which, size_t i);

/* One ProfilerStep#N of the steps table (docs/steps.md). Times in ns;
 * the busy and idle times are of [ts, ts + wall) on the GPU time line,
 * all GPUs of the trace together (busy while any op runs). */
typedef struct tk_stats_step {
	int64_t num, ts, wall;
	int64_t busy;    /* union of kernels, memcpy and memset */
	int64_t compute; /* union of kernels other than communication */
	int64_t comm;    /* union of communication kernels (nccl*, rccl*) */
	int64_t mem;     /* union of memcpy and memset */
	int64_t overlap; /* communication under compute: both at once */
	int64_t idle;    /* wall - busy = host_wait + kernel_wait + other_idle */
	int64_t host_wait, kernel_wait, other_idle;
	uint64_t launched; /* GPU ops the step launched (by launch, else by start) */
} tk_stats_step;
/* The steps in time order (after tk_stats_finish, with opts.step_table;
 * with a window, the steps that lie in it, start and end). */
TK_API size_t tk_stats_step_count(const tk_stats *s);
TK_API const tk_stats_step *tk_stats_step_get(const tk_stats *s, size_t i);

/* The launch table: a trace's GPU ops per stream, and a row for all of
 * them, first (docs/steps.md). Delays in ns: from the end of the CPU
 * launch call to the op's GPU start; percentiles by nearest rank. */
typedef struct tk_stats_launch {
	const char *stream;  /* "PID:TID" of the GPU ops, or "all" */
	uint64_t ops;        /* GPU ops: kernels, memcpy, memset */
	uint64_t launched;   /* of them, with their launch in the trace */
	int64_t delay_min, delay_p50, delay_p90, delay_p99, delay_max;
	double delay_mean;
	uint64_t short_ops;  /* GPU time shorter than the launch call's */
	int64_t short_ns;    /* their GPU time */
	int64_t max_queue;   /* most ops launched and not yet started at once */
	double mean_queue;   /* over time, from the first launch to the last start */
	const char *worst;   /* the name of the op with the longest delay, or "" */
} tk_stats_launch;
TK_API size_t tk_stats_launch_count(const tk_stats *s);
TK_API const tk_stats_launch *tk_stats_launch_get(const tk_stats *s, size_t i);

/* The memory table: a row per device of a trace's [memory] events
 * (docs/steps.md). Bytes; times in ns on the trace's clock. */
typedef struct tk_stats_memory {
	const char *device; /* "cuda:0", "cpu", "type T:ID" */
	uint64_t events, allocs, frees;
	int64_t bytes_alloc, bytes_freed;
	int from_totals;     /* 1: torch's Total Allocated; 0: the sum of Bytes from 0 */
	int64_t peak_alloc, peak_ts;
	int64_t peak_reserved, reserved_ts; /* -1 when the events do not say */
	int64_t final_alloc;
	const char *op_at_peak; /* the innermost CPU op of the peak's thread running at the peak, or "" */
} tk_stats_memory;
TK_API size_t tk_stats_memory_count(const tk_stats *s);
TK_API const tk_stats_memory *tk_stats_memory_get(const tk_stats *s, size_t i);
/* The op at each peak is found while reading when, by the peak's [memory]
 * event, its thread has let go of no CPU op ending at or after the peak
 * (an op is let go when a later one starts after its end), and the peak
 * is known while reading: torch's Total Allocated in any order, the
 * running sum of Bytes in time order (docs/steps.md). Otherwise it needs a second read:
 * tk_stats_memory_ops_left() says for how many devices, after
 * tk_stats_finish; 0: none. */
TK_API size_t tk_stats_memory_ops_left(const tk_stats *s);
/* After tk_stats_finish: reads the trace again from r for the op at each
 * peak still left, until none is (the ops of a thread in time order: past
 * its peak) or r ends. */
TK_API int tk_stats_memory_ops(tk_stats *s, tk_reader *r);
/* The same, one event of that second read at a time. */
TK_API int tk_stats_memory_op(tk_stats *s, const tk_event *ev);
/* The allocation time line (opts.memory_series): every [memory] event,
 * device by device (in the table's order), in time order. allocated is
 * the row's own measure (torch's Total Allocated, else the running sum of
 * Bytes); reserved is -1 when the event does not say. */
typedef struct tk_stats_mem_point {
	const char *device;
	int64_t ts, bytes, allocated, reserved;
} tk_stats_mem_point;
TK_API size_t tk_stats_memory_points(const tk_stats *s);
TK_API int tk_stats_memory_point(const tk_stats *s, size_t i, tk_stats_mem_point *p);

/* The collectives table: a trace's NCCL kernels per kind (the "Collective
 * name" argument, else the kernel name up to its parameters) and process
 * group ("Process Group Name", "" when absent), in order of first
 * appearance (docs/steps.md). */
typedef struct tk_stats_collective {
	const char *kind, *group;
	uint64_t count;
	int64_t bytes;       /* nccl-tests' size: In msg nelems (Out for a gather) x the dtype's size; 0 unknown */
	int64_t time;        /* kernel time, ns */
	double avg;          /* ns per kernel */
	double algbw, busbw; /* GB/s: bytes over time, and times nccl-tests' factor for the group size */
	int64_t ranks;       /* the largest "Group size", 0 unknown */
} tk_stats_collective;
TK_API size_t tk_stats_collective_count(const tk_stats *s);
TK_API const tk_stats_collective *tk_stats_collective_get(const tk_stats *s, size_t i);
/* Across ranks (one stats object each): the k-th kernel of a kind and
 * group on every rank that has one is one collective; its start skew is
 * the latest start less the earliest. Per rank: how many it took part in,
 * how often it started last, and by how much it started after the first. */
typedef struct tk_stats_straggler {
	uint64_t instances, last;
	int64_t late_total, late_max; /* ns */
} tk_stats_straggler;
/* out: n records. *instances: collectives matched; *max_skew: ns. 0,
 * TK_ERR_NOMEM, or the error of a page of starts that could not be read
 * back (its message in that rank's tk_stats_error()). */
TK_API int tk_stats_stragglers(tk_stats *const *s, size_t n, tk_stats_straggler *out, uint64_t *instances,
                               int64_t *max_skew);
/* The same over the collectives of one kind (and group, NULL: any). */
TK_API int tk_stats_stragglers_of(tk_stats *const *s, size_t n, const char *kind, const char *group,
                                  tk_stats_straggler *out, uint64_t *instances, int64_t *max_skew);

/* One [memory] event of profile_memory: 1 with its fields in *m (an
 * absent total: INT64_MIN; the device named as the memory table names it),
 * 0 for any other event (or one without Bytes). */
typedef struct tk_memory_info {
	int64_t bytes, allocated, reserved;
	int64_t type, id; /* torch's Device Type and Device Id */
	char device[48];  /* "cuda:0", "cpu", ... */
} tk_memory_info;
TK_API int tk_memory_event(const tk_event *ev, tk_memory_info *m);

/* Counters a caller may want to warn about. */
typedef struct tk_stats_info {
	uint64_t events, ops, apis, device;
	/* these two are counted at tk_stats_finish: */
	uint64_t unattributed; /* GPU activities whose launching op was not found */
	uint64_t late;         /* ops that arrived after their time was processed */
	int64_t ts_min, ts_max;
} tk_stats_info;
TK_API const tk_stats_info *tk_stats_get_info(const tk_stats *s);

/* ---- call paths of CPU time (opts.flame) ---- */

/* A call path: its innermost frame's name, the path it was called from, and
 * the time spent in it but not in a frame it called. Paths come after their
 * callers. A name is a C string: an event name with a NUL byte is cut there,
 * and names the same up to it are one frame. */
typedef struct tk_stats_frame {
	const char *name;
	size_t parent;   /* index of the calling path; SIZE_MAX for an outermost frame */
	int64_t self_ns; /* >= 0 */
	int64_t total_ns; /* self_ns and the total of every path it calls */
} tk_stats_frame;
TK_API size_t tk_stats_frame_count(const tk_stats *s);
TK_API const tk_stats_frame *tk_stats_frame_get(const tk_stats *s, size_t i);
/* The paths of s[0..n) as one set, as tk_stats_frame_get gives them: a
 * path per distinct list of names from the outermost, its self and total
 * times summed over the stats objects, after its caller. *out (free() it)
 * holds *n_out paths whose names point into the stats objects, valid while
 * they are. 0, TK_ERR_NOMEM, or TK_ERR_LIMIT past 2^32 - 2 paths. */
TK_API int tk_stats_frames_merge(tk_stats *const *s, size_t n, tk_stats_frame **out, size_t *n_out);
/* The paths of s[0..n) as folded stacks, the input of flamegraph.pl and
 * speedscope: a line "outer;...;inner SELF_NS" per path with self time,
 * the same path of several stats objects summed, lines in byte order. A
 * ';' or a control character in a name is written as '_', and so is an
 * empty name. */
TK_API int tk_stats_format_folded(tk_stats *const *s, size_t n, char **out, size_t *len);

/* ---- FLOPs ---- */

/* FLOPs of one op from its Input Dims and (conv) Concrete Inputs; 0 when
 * the op is not counted in `mode` or its shapes do not fit. */
TK_API uint64_t tk_flops(const char *name, const tk_dims *dims, const tk_dims *concrete, int mode);
/* Same, reading "Input Dims" (or "Input dims") and "Concrete Inputs" from args. */
TK_API uint64_t tk_flops_event(const tk_event *ev, int mode);

/* ---- Tables ---- */

/* HTML: a <table class="tk"> (number cells class "n") and the footer lines
 * as <p class="foot">, the cells as text shows them: for a page of one's own. */
enum { TK_TABLE_TEXT = 0, TK_TABLE_CSV = 1, TK_TABLE_JSON = 2, TK_TABLE_MARKDOWN = 3, TK_TABLE_HTML = 4 };

/* Strings and arrays are borrowed for the call that renders a table. */
typedef struct tk_table_opts {
	int format;          /* TK_TABLE_* */
	const char *sort_by; /* torch attribute name; NULL = first appearance */
	long row_limit;      /* < 0 = all rows; torch's default is 100 */
	const char *time_unit; /* "s", "ms", "us", "ns" or NULL (auto, as torch) */
	const char *name_glob; /* only rows whose name matches (fnmatch); NULL = all */
	int flops;             /* show FLOP columns when any row has FLOPs */
	const char *const *labels; /* one label per stats object ("rank 0"); may be NULL */
} tk_table_opts;

/* The keys tk_table_opts.sort_by takes, NULL-terminated: torch's attribute
 * names, and "none" (first appearance, as NULL). */
TK_API const char *const *tk_table_sort_keys(void);

/* Render the operator table of one or several stats objects (several = ranks:
 * a combined table with per-rank columns and the rank that spent the most).
 * *out is malloc'd, NUL-terminated; free() it. */
TK_API int tk_stats_format_ops(tk_stats *const *s, size_t n, const tk_table_opts *o, char **out,
                               size_t *len);
/* Render the steps table: a row per step (and per stats object: a Rank
 * column when n > 1), averages and the slowest step at the foot. */
TK_API int tk_stats_format_steps(tk_stats *const *s, size_t n, const tk_table_opts *o, char **out,
                                 size_t *len);
/* Render the launch table: the rows of each stats object (a Rank column
 * when n > 1); the op with the longest delay at the foot. */
TK_API int tk_stats_format_launch(tk_stats *const *s, size_t n, const tk_table_opts *o, char **out,
                                  size_t *len);
/* Render the memory table: the rows of each stats object (a Rank column
 * when n > 1). */
TK_API int tk_stats_format_memory(tk_stats *const *s, size_t n, const tk_table_opts *o, char **out,
                                  size_t *len);
/* Two runs side by side (trace-diff): table `which` of base and of cur,
 * rows matched by name (and Input Shapes when grouped by them), each with
 * both sides' figures and their change, "new" or "gone" for a row of one
 * side only, sorted by the largest change of time (operators: self CPU or
 * CUDA total; summaries: total), the totals at the foot. which:
 * TK_STATS_OP, TK_STATS_KERNEL, TK_STATS_MEMCPY, TK_STATS_API, or
 * TK_DIFF_STEPS: the steps tables' averages per step, metric by metric
 * (both objects built with step_table). With o->labels, the two names go
 * into the JSON totals as "base" and "new". */
#define TK_DIFF_STEPS 16
TK_API int tk_stats_format_diff(const tk_stats *base, const tk_stats *cur, int which, const tk_table_opts *o,
                                char **out, size_t *len);
/* Render the collectives table: the rows of each stats object (a Rank
 * column when n > 1), and with several the stragglers at the foot. */
TK_API int tk_stats_format_collectives(tk_stats *const *s, size_t n, const tk_table_opts *o, char **out,
                                       size_t *len);
/* Render a summary table (TK_STATS_KERNEL, TK_STATS_MEMCPY, TK_STATS_API). */
TK_API int tk_stats_format_sum(tk_stats *const *s, size_t n, int which, const tk_table_opts *o,
                               char **out, size_t *len);

#ifdef __cplusplus
}
#endif
#endif
