/* tkc.h: private declarations of the CUPTI collector (libtkcollect). */
#ifndef TKC_H
#define TKC_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include <cupti.h>

#include "tracekit/tkb.h"
#include "tracekit/tracekit.h"

#define TKC_PRODUCER "tracekit-collector " TK_VERSION_STRING

/* ---- the CUPTI entry points, loaded with dlopen (tkc_cupti.c) ----------
 * libtkcollect does not link libcupti: a process whose libcupti is missing
 * or elsewhere still starts, and tracing is off with one line on stderr. */
typedef struct tkc_cupti {
	void *handle;
	char path[512]; /* the file that was loaded */
	CUptiResult (*Subscribe)(CUpti_SubscriberHandle *, CUpti_CallbackFunc, void *);
	CUptiResult (*Unsubscribe)(CUpti_SubscriberHandle);
	CUptiResult (*EnableCallback)(uint32_t, CUpti_SubscriberHandle, CUpti_CallbackDomain,
	                              CUpti_CallbackId);
	CUptiResult (*ActivityRegisterCallbacks)(CUpti_BuffersCallbackRequestFunc,
	                                         CUpti_BuffersCallbackCompleteFunc);
	CUptiResult (*ActivityEnable)(CUpti_ActivityKind);
	CUptiResult (*ActivityDisable)(CUpti_ActivityKind);
	CUptiResult (*ActivityFlushAll)(uint32_t);
	CUptiResult (*ActivityFlushPeriod)(uint32_t);
	CUptiResult (*ActivityGetNextRecord)(uint8_t *, size_t, CUpti_Activity **);
	CUptiResult (*ActivityGetNumDroppedRecords)(CUcontext, uint32_t, size_t *);
	CUptiResult (*GetTimestamp)(uint64_t *);
	CUptiResult (*GetCallbackName)(CUpti_CallbackDomain, uint32_t, const char **);
	CUptiResult (*GetResultString)(CUptiResult, const char **);
} tkc_cupti;

/* Loads libcupti: $TK_CUPTI_LIB, the build-time path, then the soname.
 * Returns 0, or -1 with a reason in err. */
int tkc_cupti_load(tkc_cupti *c, char *err, size_t err_size);
const char *tkc_cupti_strerror(const tkc_cupti *c, CUptiResult r);

/* ---- configuration from the environment (tkc_config.c) --------------- */
enum {
	TKC_A_KERNEL = 1u << 0,
	TKC_A_MEMCPY = 1u << 1,
	TKC_A_MEMSET = 1u << 2,
	TKC_A_RUNTIME = 1u << 3,
	TKC_A_DRIVER = 1u << 4,
	TKC_A_SYNC = 1u << 5,
	TKC_A_NVTX = 1u << 6,
	TKC_A_OVERHEAD = 1u << 7,
	/* driver API calls that put work on the GPU (cuLaunchKernel*, cuGraphLaunch*,
	 * cuMemcpy*, cuMemset*): how cuBLAS, Triton and other code that calls the
	 * driver launch. Each is the launch of its GPU op's correlation id. */
	TKC_A_DRIVER_LAUNCH = 1u << 8,
	TKC_A_DEFAULT = TKC_A_KERNEL | TKC_A_MEMCPY | TKC_A_MEMSET | TKC_A_RUNTIME | TKC_A_SYNC |
	                TKC_A_NVTX | TKC_A_OVERHEAD | TKC_A_DRIVER_LAUNCH,
	TKC_A_ALL = 0x1ffu
};

typedef struct tkc_schedule {
	int on; /* TK_SCHEDULE was given */
	int skip_first, wait, warmup, active, repeat;
} tkc_schedule;

enum { TKC_SCHED_NONE = 0, TKC_SCHED_WARMUP = 1, TKC_SCHED_RECORD = 2 };

typedef struct tkc_config {
	unsigned activities;   /* TKC_A_* */
	char out_dir[1024];    /* TK_OUTPUT_DIR, default "." */
	char host[256];
	int64_t pid;
	int64_t rank;          /* -1 when no rank variable is set */
	int64_t world_size;    /* -1 when unknown */
	int rank_selected;     /* 0: TK_RANKS excludes this rank */
	int capture_profiler_api; /* TK_CAPTURE=cudaProfilerApi */
	tkc_schedule sched;
	char step_range[256];  /* TK_STEP_RANGE, an fnmatch pattern */
	size_t buffer_size;    /* TK_BUFFER_SIZE, default 8 MiB */
	unsigned max_buffers;  /* TK_MAX_BUFFERS, default 16 */
	unsigned flush_ms;     /* TK_FLUSH_MS, default 1000; 0 = only at exit */
	int compress;          /* TK_COMPRESS, default 1 */
	int signals;           /* TK_SIGNALS, default 1 */
} tkc_config;

/* Reads the TK_* variables (and RANK, OMPI_COMM_WORLD_RANK, SLURM_PROCID,
 * WORLD_SIZE ...) from getenv-like `get`. Returns 0, or -1 with a message
 * in err for a malformed value (the value is then ignored, not fatal). */
int tkc_config_read(tkc_config *c, const char *(*get)(const char *), char *err, size_t err_size);
/* "kernel,memcpy" -> TKC_A_* bits; -1 for an unknown word (named in err). */
long tkc_parse_activities(const char *s, char *err, size_t err_size);
/* "skip_first=1,wait=1,warmup=1,active=3,repeat=2". */
int tkc_parse_schedule(const char *s, tkc_schedule *out, char *err, size_t err_size);
/* What the schedule does in step `step` (0-based): TKC_SCHED_*. */
int tkc_schedule_action(const tkc_schedule *s, uint64_t step);
/* 1 if `rank` is listed in "0,1,4-7". */
int tkc_rank_in_list(const char *list, int64_t rank);
/* "<dir>/<host>.<pid>.rank<R>.tkb" into out. */
int tkc_output_path(const tkc_config *c, char *out, size_t cap);

/* ---- record conversion: one CUPTI record -> one tk_event (tkc_convert.c) ----
 * A pure function of the record and the converter's state (context to
 * device map, open NVTX ranges); it runs on the writer thread only. */
typedef const char *(*tkc_api_name_fn)(void *ud, CUpti_CallbackDomain domain, uint32_t cbid);

typedef struct tkc_open_range {
	uint64_t key; /* marker id + 1; 0 = free slot */
	int64_t ts;
	const char *name, *domain;
	int64_t pid, tid;
} tkc_open_range;

typedef struct tkc_conv {
	tkc_api_name_fn api_name;
	void *api_ud;
	int64_t pid; /* this process, for records that carry none */
	uint32_t ctx_id[64], ctx_dev[64];
	unsigned n_ctx;
	tkc_open_range *open; /* open NVTX ranges, open-addressed */
	size_t open_cap, n_open;
	uint64_t unknown_kinds; /* records of kinds the collector does not convert */
	int driver_launch_only; /* keep only the driver records of calls that launch GPU work */
	char name[512];         /* built names: "Memcpy HtoD (Pinned -> Device)", NVTX names */
	char args[640];         /* the current event's args, compact JSON */
} tkc_conv;

int tkc_conv_init(tkc_conv *c, int64_t pid, tkc_api_name_fn api_name, void *api_ud);
void tkc_conv_free(tkc_conv *c);
/* 1 with *ev set (borrowing c's buffers until the next call), 0 when the
 * record makes no event (an NVTX range start, a context record, a kind
 * that is not converted, a driver call that launches nothing while
 * driver_launch_only is set). */
int tkc_convert(tkc_conv *c, const CUpti_Activity *rec, tk_event *ev);
/* 1 for the name of a driver call that puts work on the GPU (a kernel or
 * graph launch, a copy, a set). */
int tkc_driver_launches(const char *name);
/* NVTX ranges still open at the end, one 'B' event per call: 1, or 0 when
 * none are left. */
int tkc_conv_drain_open(tkc_conv *c, tk_event *ev);
/* An instant event saying that CUPTI dropped records. */
void tkc_conv_dropped(tkc_conv *c, int64_t ts, uint32_t stream, uint64_t n, tk_event *ev);
/* "cudaLaunchKernel_v7000" -> "cudaLaunchKernel" into buf. */
const char *tkc_strip_version(const char *name, char *buf, size_t cap);

/* ---- record windows: which timestamps are kept (tkc_gate.c) ----------
 * Written by the thread that opens or closes a window (a profiler API or
 * NVTX callback), read by the writer thread without a lock. */
#define TKC_MAX_WINDOWS 1024
typedef struct tkc_windows {
	_Atomic int64_t start[TKC_MAX_WINDOWS], end[TKC_MAX_WINDOWS];
	atomic_uint n;
	int open; /* a window without an end is last; changed under the gate's lock */
} tkc_windows;
void tkc_windows_open(tkc_windows *w, int64_t ts);
void tkc_windows_close(tkc_windows *w, int64_t ts);
int tkc_windows_keep(const tkc_windows *w, int64_t ts);

/* ---- buffer blocks, their pool and the hand-off queue (tkc_pool.c) ---- */
typedef struct tkc_block {
	struct tkc_block *next;
	uint8_t *data;
	size_t size;  /* capacity of data */
	size_t valid; /* bytes CUPTI filled */
	uint32_t stream;
	uint64_t dropped; /* records CUPTI dropped for this context/stream */
	int64_t done_ts;  /* when the block was completed */
} tkc_block;

typedef struct tkc_pool {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	size_t block_size;
	unsigned max_blocks, n_blocks;
	tkc_block *free_list;
	tkc_block *q_head, *q_tail; /* completed blocks, oldest first */
	atomic_uint_least64_t refused; /* requests answered with no buffer */
	atomic_uint_least64_t completed;
	int wake_fd; /* written once per completed block, -1 = none */
} tkc_pool;

int tkc_pool_init(tkc_pool *p, size_t block_size, unsigned max_blocks, unsigned prealloc);
void tkc_pool_free(tkc_pool *p);
/* A free block (reused, or allocated while under the cap), NULL if none. */
tkc_block *tkc_pool_get(tkc_pool *p);
void tkc_pool_put(tkc_pool *p, tkc_block *b);
/* The block whose data starts at `data`. */
tkc_block *tkc_block_of(uint8_t *data);
void tkc_pool_push_done(tkc_pool *p, tkc_block *b);
/* All completed blocks, oldest first, as a list (NULL if none). */
tkc_block *tkc_pool_take_done(tkc_pool *p);

/* ---- the sink the writer thread feeds (tkc_sink.c) --------------------- */
typedef struct tkc_sink tkc_sink;
struct tkc_sink {
	int (*event)(tkc_sink *s, const tk_event *ev);
	int (*batch_end)(tkc_sink *s); /* a CUPTI buffer was converted: hand the events on */
	int (*meta)(tkc_sink *s, const char *key, const char *json);
	int (*close)(tkc_sink *s, const tk_tkb_anchor *end);
	const char *(*error)(tkc_sink *s);
	void (*free)(tkc_sink *s);
};
/* A .tkb file through tk_tkb_writer, events batched in one tk_tkb_buf. */
tkc_sink *tkc_sink_tkb_open(const char *path, const tk_tkb_header *h, const tk_tkb_opts *o,
                            char *err, size_t err_size);

/* ---- the collector proper (tkcollect.c) -------------------------------- */
/* The writer side, usable without CUPTI callbacks (tests feed it blocks). */
typedef struct tkc_writer {
	tkc_conv conv;
	tkc_sink *sink;
	tkc_windows *win;
	uint64_t records, events, dropped, filtered;
} tkc_writer;
/* Converts every record of a completed block and hands them to the sink. */
void tkc_writer_block(tkc_writer *w, const tkc_cupti *api, tkc_block *b);

/* The session: pool, output file and writer thread. Opened by tkc_start
 * after CUPTI is subscribed; tests open it directly and feed buffers
 * through the two CUPTI buffer callbacks. */
int tkc_session_open(const tkc_config *cfg, const tkc_cupti *api, char *err, size_t err_size);
/* Flushes CUPTI (when subscribed), converts what is queued and closes the
 * file. Safe to call twice and from atexit. */
void tkc_session_close(void);
const char *tkc_session_path(void);
void CUPTIAPI tkc_buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records);
void CUPTIAPI tkc_buffer_completed(CUcontext ctx, uint32_t stream, uint8_t *buffer, size_t size,
                                   size_t valid);
/* Everything: configuration, libcupti, subscription, session, exit hooks.
 * Never fails the host: problems are one "tkcollect: ..." line on stderr.
 * Returns 1 when tracing is on. */
int tkc_start(const char *how);

#endif
