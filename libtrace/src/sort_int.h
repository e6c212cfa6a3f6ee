/* sort_int.h: private structures shared by sort.c (buffering, sorting) and sort_run.c (run files). */
#ifndef TK_SORT_INT_H
#define TK_SORT_INT_H

#include <pthread.h>

#include "core/workers.h"
#include "internal.h"
#include "tracekit/sort.h"

#define RUN_BUF (64u << 10)  /* read buffer per run while merging */
#define MAX_FANIN 256        /* runs merged at once; more need intermediate passes */
#define DICT_MIN (16u << 10) /* per-run dictionary bytes: budget / 64 within these */
#define DICT_MAX (2u << 20)

typedef struct tk__sort_entry {
	uint64_t key; /* ts mapped to an unsigned order */
	char *rec;
} tk__sort_entry;

typedef struct tk__sort_chunk {
	struct tk__sort_chunk *next;
	size_t used, cap;
	char data[];
} tk__sort_chunk;

/* Buffered events: records in chunks, entries pointing at them. */
typedef struct tk__sortbuf {
	tk__sort_chunk *chunks, *cur;
	tk__sort_chunk *spare; /* emptied chunks kept for the next run */
	size_t chunk_bytes;
	tk__sort_entry *ents;
	size_t n_ents, ents_cap;
	size_t n_no_ts; /* buffered events without ts */
	tk__sort_entry *scratch; /* the radix sort's second array, kept between runs */
	size_t scratch_cap;
} tk__sortbuf;

typedef struct tk__run_rd tk__run_rd;

typedef struct tk__merger {
	tk__run_rd *rd;
	size_t n;
	size_t *heap; /* indices into rd */
	size_t n_heap;
	size_t last; /* run whose record was returned last; SIZE_MAX if none */
} tk__merger;

struct tk_sorter {
	size_t budget;
	char *dir; /* private temporary directory, NULL until the first spill */
	int dir_hold; /* its handle in tmpreg.c */
	const char *tmpdir;

	/* Two halves of the budget: one is filled while a thread of the
	 * sorter's own sorts and spills the other, so that adding events waits
	 * only when the thread is still busy with the last half. */
	tk__sortbuf buf[2];
	int fill; /* the half being filled */
	tk__workers bg; /* the thread (one, "tk-sort"), started at the first spill; its lock guards bg_busy */
	int bg_busy;    /* the other half is the thread's */
	tk__err bg_err; /* the thread's error */

	size_t dict_cap; /* bytes of dictionary per run */
	size_t fanin;    /* runs merged at once */
	char **runs; /* run file paths, in the order of their events */
	size_t n_runs, runs_cap, run_seq, spilled;

	int finished;
	size_t mem_pos; /* fast path: next in-memory entry */
	tk__merger m;
	tk_event ev;
	tk__err err; /* code: the sticky error */
};

/* Where an error goes: the thread's own object on the spill thread (read
 * under the lock once the thread is idle), the sorter's elsewhere. */
tk__err *tk__sort_err(tk_sorter *s);

/* Order key: events without ts before all others (they carry has_ts 0 and
 * compare by input order alone), then ts as an unsigned number. */
static inline uint64_t tk__sort_key(int64_t ts)
{
	return (uint64_t)ts ^ (1ull << 63);
}

/* sort.c: an in-memory record back into an event pointing into it. */
void tk__sort_rec_decode(const char *p, tk_event *ev, uint64_t *tag);

/* sort_run.c: the buffered entries (already sorted) become one run file. */
int tk__sort_write_run(tk_sorter *s, const tk__sortbuf *b);
/* Intermediate merge passes until at most s->fanin runs are left. */
int tk__sort_reduce_runs(tk_sorter *s);
/* Opens runs[first .. first+n) for merging. */
int tk__sort_merger_open(tk_sorter *s, tk__merger *m, size_t first, size_t n);
/* The next event of the merge (valid until the next call): 0, TK_EOF or an error. */
int tk__sort_merger_next(tk_sorter *s, tk__merger *m, const tk_event **ev, uint64_t *tag);
void tk__sort_merger_free(tk__merger *m);

/* Fixed records through a sorter, for those that sort their own records
 * (the steps, launch and memory tables, tk_steps' launches): rec's n
 * bytes travel as an event's name, in the order of key (ties in the order
 * added). 0 or the sorter's error. */
int tk__sorter_add_rec(tk_sorter *s, int64_t key, const void *rec, size_t n, uint64_t tag);
/* The next record of a finished sorter into rec (n bytes, zero-filled
 * past a shorter one; n 0: none): 1 with *key and *tag (may be NULL), 0
 * at the end, or the sorter's error (negative). */
int tk__sorter_next_rec(tk_sorter *s, int64_t *key, void *rec, size_t n, uint64_t *tag);

#endif
