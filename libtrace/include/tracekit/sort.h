/* sort.h: events in time order in bounded memory (sorted runs spilled to disk, k-way merged). */
#ifndef TRACEKIT_SORT_H
#define TRACEKIT_SORT_H

#include "tracekit/tracekit.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tk_sorter tk_sorter;

typedef struct tk_sorter_opts {
	size_t memory_bytes; /* budget for buffered events; 0 = 256 MiB */
	const char *tmpdir;  /* where runs are spilled; NULL = $TMPDIR or /tmp (copied) */
} tk_sorter_opts;

/* Events come back ordered by ts (events without ts first, in input order),
 * ties in the order they were added. Each event carries the caller's `tag`
 * (an input index, a rank). Added events are copied into one of two halves
 * of the budget; a full half is sorted and spilled as a run by a thread of
 * the sorter's own while the other fills (an error there is returned by a
 * later call). */
TK_API int tk_sorter_new(tk_sorter **out, const tk_sorter_opts *opts);
TK_API int tk_sorter_add(tk_sorter *s, const tk_event *ev, uint64_t tag);
/* No more events: sorting/merging starts. */
TK_API int tk_sorter_finish(tk_sorter *s);
/* TK_OK with *ev (borrowed until the next call) and *tag, TK_EOF, or an error. */
TK_API int tk_sorter_next(tk_sorter *s, const tk_event **ev, uint64_t *tag);
TK_API const char *tk_sorter_error(const tk_sorter *s);
/* Runs spilled so far, and peak bytes buffered (for reports). */
TK_API size_t tk_sorter_runs(const tk_sorter *s);
/* Frees and removes any spilled runs. */
TK_API void tk_sorter_free(tk_sorter *s);

#ifdef __cplusplus
}
#endif
#endif
