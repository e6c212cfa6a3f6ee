/* procs.h: the processes and threads of a trace as the writers that need them see them (pftrace, sqlite): a record per pid and per (pid, tid), named, labelled and ordered by the M events; the ids of events; events in same-timestamp groups out of a sorter. */
#ifndef TK_PROCS_H
#define TK_PROCS_H

#include "internal.h"
#include "tracekit/sort.h"

/* The fields a writer's process and thread records start with: a writer
 * declares its records as `struct { TK__PROC_BASE; its own fields }`. */
#define TK__PROC_BASE \
	tk_id pid;        \
	char *name;       \
	char *labels;     \
	int64_t sort;     \
	int has_sort
#define TK__THR_BASE  \
	tk_id pid, tid;   \
	size_t proc;      \
	char *name;       \
	int64_t sort;     \
	int has_sort
typedef struct tk__proc {
	TK__PROC_BASE;
} tk__proc;
typedef struct tk__thr {
	TK__THR_BASE;
} tk__thr;

typedef struct tk__procs {
	tk__map proc_map, thr_map; /* id hash -> index */
	unsigned char *proc, *thr; /* records of proc_size and thr_size bytes */
	size_t proc_size, thr_size;
	size_t n_proc, proc_cap, n_thr, thr_cap;
	tk__buf scratch;
} tk__procs;

enum { TK__PROCS_NEW_THR = 1, TK__PROCS_NEW_PROC = 2 };

/* Records of the sizes given (at least the base's). */
void tk__procs_init(tk__procs *r, size_t proc_size, size_t thr_size);
/* Frees what the base fields hold; a writer frees its own fields first. */
void tk__procs_free(tk__procs *r);
static inline void *tk__procs_proc_at(const tk__procs *r, size_t i)
{
	return r->proc + i * r->proc_size;
}
static inline void *tk__procs_thr_at(const tk__procs *r, size_t i)
{
	return r->thr + i * r->thr_size;
}
/* The index of pid's process, added (zeroed but for pid) when new: 0 or
 * TK_ERR_NOMEM; *added (may be NULL) |= TK__PROCS_NEW_PROC then. Records
 * may move when one is added. */
int tk__procs_proc(tk__procs *r, const tk_id *pid, size_t *idx, int *added);
/* The same for (pid, tid): its process first, then the thread
 * (TK__PROCS_NEW_THR). */
int tk__procs_thr(tk__procs *r, const tk_id *pid, const tk_id *tid, size_t *idx, int *added);
/* An M event: process_name, process_labels, process_sort_index,
 * thread_name and thread_sort_index set the records' base fields (added
 * as needed, *added as above, with the process's index in *pi and the
 * thread's, or SIZE_MAX, in *ti); any other event is left alone. 0 or
 * TK_ERR_NOMEM. */
int tk__procs_meta(tk__procs *r, const tk_event *ev, int *added, size_t *pi, size_t *ti);

/* Event ids: a hash, an owned copy, its release. */
uint64_t tk__id_hash(const tk_id *id);
int tk__id_copy(tk_id *dst, const tk_id *src);
void tk__id_free(tk_id *id);
/* A hash of a Chrome v1 flow event's key (s, t, f): its category and id
 * (trace-split's flow table, split_int.h, keys them exactly). */
uint64_t tk__flow_hash(const tk_event *ev);

/* Drains a finished sorter in groups of events of one timestamp (at most
 * `max` together; events without ts are one group): each group is handed
 * to flush as owned copies in sorter order, freed after. 0, the first
 * error of flush, TK_ERR_NOMEM, or the sorter's error code (*sorter_err
 * set). */
int tk__sorter_groups(tk_sorter *s, size_t max, int (*flush)(void *ctx, tk_event **g, size_t n), void *ctx,
                      int *sorter_err);

#endif
