/* merge.h: merge per-rank traces into one time-ordered trace in bounded memory. */
#ifndef TRACEKIT_MERGE_H
#define TRACEKIT_MERGE_H

#include "tracekit/tracekit.h"

#ifdef __cplusplus
extern "C" {
#endif

/* How ranks' clocks are brought onto one time line (after each input's own
 * time base: baseTimeNanoseconds plus relative ts, or absolute ts). */
enum {
	TK_ALIGN_NONE = 0,        /* trust the recorded clocks */
	TK_ALIGN_START = 1,       /* every rank's first event at the earliest first event */
	TK_ALIGN_COLLECTIVES = 2, /* match the first NCCL collectives across ranks */
	TK_ALIGN_GIVEN = 3        /* offsets from tk_merge_set_offset() */
};

typedef struct tk_merge tk_merge;

typedef struct tk_merge_opts {
	/* memory for everything the merge holds (0 = 256 MiB): the sorters
	 * get all but an eighth (at most 32 MiB) that readers, the writer's
	 * threads (gzip: wopts.threads, at most 8) and the per-rank tables use */
	size_t memory_bytes;
	const char *tmpdir;  /* spilled runs; NULL = $TMPDIR or /tmp (copied) */
	int align;           /* TK_ALIGN_* */
	tk_reader_opts ropts;
	tk_writer_opts wopts;
	/* filters: NULL/0 = keep all. Metadata (ph 'M') events are always kept.
	 * The arrays and strings are borrowed: they must stay valid until
	 * tk_merge_free(). */
	const int64_t *ranks;
	size_t n_ranks;
	const char *const *cats;
	size_t n_cats;
	/* keep the events overlapping [lo, hi] of the output's time line
	 * (relative ends count from its first event) */
	tk_window window;
	/* called while inputs are read (with the input's name) and while the
	 * output is written ("writing") */
	tk_progress_fn progress;
	void *progress_ctx; /* borrowed */
} tk_merge_opts;

/* What happened to one input, for reports. */
typedef struct tk_merge_rank_info {
	const char *path; /* the merge's: valid until tk_merge_free() */
	int64_t rank;
	int rank_source;     /* 0 given, 1 from the input (distributedInfo.rank or a .tkb header), 2 input order */
	uint64_t events_in;  /* events read */
	uint64_t events_out; /* events written, metadata (ph 'M') not counted */
	int64_t offset_ns;   /* clock offset applied (alignment only) */
	int64_t residual_ns; /* collectives: median |deviation| of the matched pairs */
	size_t matched;      /* collectives: pairs used; 0 = none matched */
	int skipped;         /* 1: left out by the rank filter */
} tk_merge_rank_info;

TK_API int tk_merge_new(tk_merge **out, const tk_merge_opts *opts);
/* Offset in ns added to a rank's clock under TK_ALIGN_GIVEN. */
TK_API int tk_merge_set_offset(tk_merge *m, int64_t rank, int64_t offset_ns);
/* Ranks run from 0 to TK_MERGE_MAX_RANK: a rank's pids take the block
 * rank * 1000000 + 0..999999, and its flow ids are XORed with rank << 40.
 * A rank given or named by an input (distributedInfo.rank, a .tkb header)
 * outside that range is an error that names the input. */
#define TK_MERGE_MAX_RANK 8388607
/* A merged trace's pid block size (the 1000000 of "rank*1000000+pid"), from
 * the reader's tracekitMerge metadata: 0 with *span set, or TK_EOF when the
 * trace does not say (not a trace-merge output, or the metadata comes after
 * the events and was not read yet). */
TK_API int tk_merge_pid_span(const tk_reader *r, int64_t *span);
/* The rank a merged trace's pid stands for: pid / span for an integer pid
 * (span from tk_merge_pid_span), R for a string pid "rank R" or
 * "rank R ..." (what trace-merge makes of a string pid): 0 with *rank set,
 * or TK_EOF for another pid. */
TK_API int tk_merge_rank_of(const tk_id *pid, int64_t span, int64_t *rank);
/* The number of inputs a merged trace was made of (its ranks, skipped ones
 * included), from the same metadata: 0 with *n set, or TK_EOF. */
TK_API int tk_merge_rank_count(const tk_reader *r, size_t *n);

/* Read one input ("-" = standard input) completely. rank < 0: from its
 * distributedInfo.rank, else its position among the inputs. An input that
 * cannot be read is returned as an error, with its message in
 * tk_merge_error(); the next inputs can still be added (and their errors
 * learnt), but tk_merge_write() then writes nothing: a merge never leaves
 * a rank out unasked (tk_merge_opts.ranks does that). */
TK_API int tk_merge_add(tk_merge *m, const char *path, int64_t rank);
/* The same for a reader the caller opened (a member of an archive, say):
 * it is read to its end and stays the caller's to free. The input is named
 * by tk_reader_name(). */
TK_API int tk_merge_add_reader(tk_merge *m, tk_reader *r, int64_t rank);
/* Align, sort and write everything to `path` (temporary name, renamed when
 * complete). */
TK_API int tk_merge_write(tk_merge *m, const char *path);
TK_API const char *tk_merge_error(const tk_merge *m);
/* Warnings (unmatched collectives, truncated inputs); NULL past the end. */
TK_API const char *tk_merge_warning(const tk_merge *m, size_t i);
TK_API size_t tk_merge_inputs(const tk_merge *m);
TK_API int tk_merge_info(const tk_merge *m, size_t i, tk_merge_rank_info *info);
TK_API void tk_merge_free(tk_merge *m);

#ifdef __cplusplus
}
#endif
#endif
