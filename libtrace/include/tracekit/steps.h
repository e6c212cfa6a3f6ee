/* steps.h: ProfilerStep#N spans, and step attribution by launch: GPU work belongs to the step whose CPU launch lies inside it. */
#ifndef TRACEKIT_STEPS_H
#define TRACEKIT_STEPS_H

#include "tracekit/tracekit.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One step number: the earliest start and latest end of the CPU-side
 * ProfilerStep#N slices of that number (threads and ranks may each have
 * one). Times in ns on the trace's clock. */
typedef struct tk_step {
	int64_t num;
	int64_t ts, end;
} tk_step;

/* What a first pass over a trace learns for step attribution (docs/steps.md):
 * the steps, and for every correlation id the start of its CPU launch (a
 * runtime or driver call: cuda_runtime, cuda_driver, ...) and the latest
 * start of the GPU work (kernel, memcpy, memset; an ac2g flow's GPU end)
 * that carries it. The launches go through a spilling sort (tk_sorter) in
 * bounded memory; once the caller's parts are known (tk_steps_parts), a
 * stretch of ids launched in one part is kept as one run of 16 bytes. */
#define TK_STEPS_MEMORY_DEFAULT ((size_t)64 << 20)
typedef struct tk_steps tk_steps;
TK_API int tk_steps_new(tk_steps **out);
/* Memory for sorting the launches (0: TK_STEPS_MEMORY_DEFAULT) and where
 * it spills (NULL: $TMPDIR or /tmp; copied). Before the first launch or
 * GPU event is added: TK_ERR_ARG after, and after tk_steps_finish. */
TK_API int tk_steps_set_memory(tk_steps *s, size_t bytes, const char *tmpdir);
/* A merged trace's pid scheme rank*span+pid (trace-merge's tracekitMerge
 * metadata): correlation ids are then per rank. Set before adding events;
 * tk_steps_add_reader() sets it from the reader's metadata. */
TK_API void tk_steps_set_pid_span(tk_steps *s, int64_t span);
/* First pass: every event of the trace, in any order (borrowed). 0,
 * TK_ERR_NOMEM, or the sorter's error when a spill fails (message:
 * tk_steps_error); TK_ERR_ARG after tk_steps_finish. */
TK_API int tk_steps_add(tk_steps *s, const tk_event *ev);
/* Every event of r, to its end: 0, TK_ERR_NOMEM, or the reader's error. */
TK_API int tk_steps_add_reader(tk_steps *s, tk_reader *r);
/* No more events: the steps are sorted by start. */
TK_API int tk_steps_finish(tk_steps *s);
TK_API size_t tk_steps_count(const tk_steps *s);
/* The i-th step in order of start (after tk_steps_finish), or NULL. */
TK_API const tk_step *tk_steps_get(const tk_steps *s, size_t i);
/* After tk_steps_finish, once: the parts GPU work is given to. Part k
 * holds the times t with starts[k] <= t < starts[k + 1] (part 0 also the
 * times before starts[0]); starts[0..n) ascending, n >= 1. The launches
 * are read back from their sort and kept as runs of ids of one part.
 * late[0..n) (may be NULL) = for each part, the latest start of GPU work
 * launched in it that starts in a later part, INT64_MIN when none does.
 * A second call with the same starts gives late again; with other starts
 * it is TK_ERR_ARG (the launches' times are gone). 0, TK_ERR_ARG,
 * TK_ERR_NOMEM or the sorter's error (tk_steps_error). */
TK_API int tk_steps_parts(tk_steps *s, const int64_t *starts, size_t n, int64_t *late);
/* The part an event goes to (after tk_steps_parts): for GPU work whose
 * launch was added, the part of the launch's start (*by_launch = 1, may be
 * NULL); for any other event with a time, the part of its own ts; -1 for
 * an event without a time, or before tk_steps_parts. The event must be one
 * of the trace that was added: ids it did not have fall in the run of
 * their neighbours. */
TK_API int64_t tk_steps_part(const tk_steps *s, const tk_event *ev, int *by_launch);
/* The last error's message, or "". */
TK_API const char *tk_steps_error(const tk_steps *s);
TK_API void tk_steps_free(tk_steps *s);

#ifdef __cplusplus
}
#endif
#endif
