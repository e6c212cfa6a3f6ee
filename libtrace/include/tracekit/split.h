/* split.h: cut a trace into parts that are complete traces on their own, plus a JSON index. */
#ifndef TRACEKIT_SPLIT_H
#define TRACEKIT_SPLIT_H

#include "tracekit/tracekit.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Open ends of a time range. */
#define TK_SPLIT_OPEN_START INT64_MIN
#define TK_SPLIT_OPEN_END INT64_MAX

/* Where parts end. At most one time rule (every_ns, n_parts, by_step,
 * window, steps); max_bytes combines with any of them and alone cuts by
 * size. */
typedef struct tk_split_opts {
	/* Strings are borrowed: they must stay valid until tk_split_free(). */
	const char *dir;  /* output directory; created if missing */
	const char *name; /* base name of parts and index; NULL = the input's
	                     name without .json/.gz/.tkb */
	tk_reader_opts ropts;
	tk_writer_opts wopts; /* format JSON (gzip -1 = as the input) or TKB
	                         (gzip 1 = zlib chunks; no max_bytes) */

	uint64_t max_bytes;      /* per part, as written (compressed size with gzip); 0 = none */
	unsigned n_parts;        /* about N parts of equal size, cut at times */
	int64_t every_ns;        /* a part per window of this length from the first event */
	int by_step;             /* a part per ProfilerStep#N ... */
	unsigned steps_per_part; /* ... or per K of them (0 = 1) */
	tk_window window;        /* only the events starting in [lo, hi) */
	int steps;               /* only ProfilerStep#step_from to #step_to */
	int64_t step_from, step_to;
	int clip; /* cut slices at time boundaries instead of keeping them whole */

	/* memory for everything the split holds (0 = 128 MiB): ordering an
	 * unsorted input gets all but an eighth (at most 32 MiB) that readers,
	 * writer threads (gzip: wopts.threads, at most 8) and batches use; the
	 * flow table comes on top (32-64 bytes per distinct flow) */
	size_t memory_bytes;
	const char *tmpdir;  /* sorter spill directory; NULL = $TMPDIR or /tmp */

	/* called now and then with the pass ("scanning", "sorting", "writing") */
	tk_progress_fn progress;
	void *progress_ctx; /* borrowed */
} tk_split_opts;

/* One written part. Times are ns in the trace's own time base. */
typedef struct tk_split_part {
	const char *file;        /* file name inside dir (the split's: valid until the next run or tk_split_free()) */
	int64_t start, end;      /* the time range the part stands for; OPEN_* when open */
	int64_t first_ts;        /* earliest event start in the part */
	int64_t last_end;        /* latest event end (ts + dur) in the part */
	uint64_t events, bytes;  /* events written (M events included) and file size */
	int64_t step_first, step_last; /* ProfilerStep numbers starting inside, -1 if none */
} tk_split_part;

typedef struct tk_split_stats {
	uint64_t events_in;      /* events read, M events included */
	uint64_t events_out;     /* events written over all parts */
	uint64_t meta_events;    /* M events, repeated at the start of every part */
	uint64_t outside;        /* events outside range/steps, not written */
	uint64_t flows_cut;      /* flows whose two ends fell in different parts */
	uint64_t flow_ends_removed; /* their ends, removed from both parts */
	uint64_t orphan_flow_ends;  /* s or f ends with no partner in the input: kept */
	uint64_t clipped;        /* slices shortened at a part's end (clip) */
	uint64_t continued;      /* continuation pieces written (clip) */
	uint64_t over_budget;    /* parts over max_bytes (a single group did not fit) */
	uint64_t steps_found;    /* ProfilerStep numbers on the CPU side */
	/* step rules (by_step, steps) give GPU work to the part of the step
	 * that launched it (docs/steps.md): */
	uint64_t by_launch;      /* GPU work placed by its launch, not its start */
	uint64_t launch_late;    /* GPU work whose launch's part had closed
	                            (waiting took too much memory): by its start */
	uint64_t flow_table_bytes; /* memory of the flow table */
	int input_sorted;        /* the input was already in time order */
	size_t sorter_runs;      /* runs the sorter spilled (unsorted input) */
} tk_split_stats;

typedef struct tk_split tk_split;

/* Checks the options; on failure *out may hold a handle whose
 * tk_split_error() says why. */
TK_API int tk_split_new(tk_split **out, const tk_split_opts *opts);
/* Split the trace at `path` (a sorted input is read twice, an unsorted one
 * once plus its prefix in order: standard input cannot be split).
 * Parts are written under temporary names and renamed when all are
 * complete; the index is written last. A failed run leaves no file.
 * Reading, sorting and writing run on threads of the call's own, which
 * are done when it returns; progress is called on the caller's thread. */
TK_API int tk_split_run(tk_split *s, const char *path);
TK_API const char *tk_split_error(const tk_split *s);
/* Warnings (truncated input, repaired strings, over-budget parts); NULL past the end. */
TK_API const char *tk_split_warning(const tk_split *s, size_t i);
TK_API const tk_split_stats *tk_split_get_stats(const tk_split *s);
TK_API size_t tk_split_part_count(const tk_split *s);
TK_API const tk_split_part *tk_split_get_part(const tk_split *s, size_t i);
/* Path of the index file written by the last successful run. */
TK_API const char *tk_split_index_path(const tk_split *s);
TK_API void tk_split_free(tk_split *s);

#ifdef __cplusplus
}
#endif
#endif
