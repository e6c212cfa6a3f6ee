/* merge_int.h: private structures shared by merge.c and merge_align.c. */
#ifndef TK_MERGE_INT_H
#define TK_MERGE_INT_H

#include "internal.h"
#include "tracekit/merge.h"
#include "tracekit/sort.h"

/* Remapping scheme (documented in docs/trace-merge.1):
 *  - an integer pid or tid p of rank r becomes r * TK__RANK_SPAN + p when
 *    0 <= p < TK__RANK_SPAN; other values (and any value whose slot is taken)
 *    get the next free slot counting down from r * TK__RANK_SPAN + 999999, so
 *    a rank's numbers never leave its block and never collide;
 *  - a string pid s becomes "rank r s"; string tids are kept (a tid is scoped
 *    by its pid, which already names the rank);
 *  - the `id` of flow and async events: an integer i becomes i XOR (r << 40),
 *    a string s becomes "rank r s", so flows never join across ranks. Ids
 *    inside args ("correlation", "External id") are left alone: they are
 *    data, and pids keep them apart per rank. */
#define TK__RANK_SPAN 1000000
#define TK__ID_SHIFT 40
#define TK__SORT_GPU 1000  /* process_sort_index: r * 10000 + 0 host, 1000 + n GPU n, 9000 other */
#define TK__SORT_OTHER 9000
#define TK__SORT_RANK 10000

/* One process of one input: what its metadata events say. */
typedef struct tk__proc {
	tk_id pid;     /* original; str owned */
	tk_id newpid;  /* remapped; str owned */
	char *labels;  /* process_labels "labels", decoded; NULL if none */
	int gpu;       /* device index when labelled "GPU n" or sorted like one, else -1 */
	int seen_name, seen_labels, seen_sort;
} tk__proc;

/* One NCCL kernel: which collective (interned key) and when it ended. */
typedef struct tk__coll {
	int64_t end; /* raw ns, the input's own clock */
	uint32_t key;
} tk__coll;

typedef struct tk__input {
	char *path;
	int64_t rank;
	int rank_source;
	int skipped;
	uint64_t events_in, events_out;
	int64_t prov_shift;        /* added to ts when the events went into the sorter */
	int has_base;
	int64_t base;              /* baseTimeNanoseconds, when the input has one */
	int has_first;
	int64_t first;             /* smallest raw ts */
	int64_t offset, residual;  /* alignment */
	size_t matched;
	int64_t delta;             /* sorter ts -> output ts */
	tk__proc *procs;
	size_t n_procs;
	tk__map pidx;              /* int pid -> index in procs (tk__map_put_int) */
	tk__map tids;              /* int tid -> new tid (values filled at output time) */
	tk__coll *colls;
	size_t n_colls, colls_cap;
	char *dist_info;           /* distributedInfo JSON or NULL */
	char *dev_props;           /* deviceProperties JSON or NULL */
	tk__meta *meta;            /* other top-level members, owned */
	size_t n_meta;
	char idprefix[40];         /* "rank 3 " for string pids and ids */
} tk__input;

struct tk_merge {
	tk__err err; /* code: the sticky error */
	tk_merge_opts o;
	char *tmpdir;
	tk__input *in;
	size_t n_in, in_cap;
	int64_t *given_rank, *given_off;
	size_t n_given;
	tk_sorter *sorter;
	tk__strtab keys;           /* collective keys */
	uint64_t bytes_done;
	size_t n_bad; /* inputs that could not be read */
};

/* The sorter's part of --memory (tk__sorter_share). */
size_t tk__merge_sort_budget(const tk_merge *m);
tk__proc *tk__merge_find_proc(const tk__input *in, const tk_id *pid);
/* Record a kernel when it is an NCCL collective. */
int tk__merge_note_coll(tk_merge *m, tk__input *in, const tk_event *ev);
/* Set in->offset/residual/matched for every selected input. */
int tk__merge_align_collectives(tk_merge *m);

#endif
