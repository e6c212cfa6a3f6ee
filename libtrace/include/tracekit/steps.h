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
 * that carries it. About 40-80 bytes per correlation id. */
typedef struct tk_steps tk_steps;

TK_API int tk_steps_new(tk_steps **out);
/* A merged trace's pid scheme rank*span+pid (trace-merge's tracekitMerge
 * metadata): correlation ids are then per rank. Set before adding events;
 * tk_steps_add_reader() sets it from the reader's metadata. */
TK_API void tk_steps_set_pid_span(tk_steps *s, int64_t span);
/* First pass: every event of the trace, in any order (borrowed). 0 or
 * TK_ERR_NOMEM (TK_ERR_ARG after tk_steps_finish). */
TK_API int tk_steps_add(tk_steps *s, const tk_event *ev);
/* Every event of r, to its end: 0, TK_ERR_NOMEM, or the reader's error. */
TK_API int tk_steps_add_reader(tk_steps *s, tk_reader *r);
/* No more events: the steps are sorted by start. */
TK_API int tk_steps_finish(tk_steps *s);
TK_API size_t tk_steps_count(const tk_steps *s);
/* The i-th step in order of start (after tk_steps_finish), or NULL. */
TK_API const tk_step *tk_steps_get(const tk_steps *s, size_t i);
/* The time an event counts at when events are given to steps: for GPU work
 * whose launch was added, the launch's start; for any other event its own
 * ts. *by_launch (may be NULL) = 1 when the launch decided. */
TK_API int64_t tk_steps_time(const tk_steps *s, const tk_event *ev, int *by_launch);
TK_API void tk_steps_free(tk_steps *s);

#ifdef __cplusplus
}
#endif
#endif
