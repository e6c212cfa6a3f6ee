/* steps_int.h: the step attribution's pieces for the library's own passes (trace-split's scan and writer). */
#ifndef TK_STEPS_INT_H
#define TK_STEPS_INT_H

#include "internal.h"
#include "tracekit/steps.h"

/* 1 with *num for a CPU-side ProfilerStep#N slice (an X event; the GPU
 * copy, gpu_user_annotation, is not a step), else 0. */
int tk__step_number(const tk_event *ev, int64_t *num);
/* 1 when tk_steps_add needs ev's args (a launch or GPU work by its
 * category): for readers that skip the args of the other events. */
int tk__steps_wants_args(const tk_event *ev);
/* tk_steps_add for a caller that knows the event's tk_stats_event_class()
 * (cls; -1 if not). *kind: TK__STEPS_LAUNCH for a CPU launch (an event
 * with a time), TK__STEPS_GPU for GPU work that a launch may own, each with
 * its key (*corr, *group), else 0. 0 or TK_ERR_NOMEM. */
enum { TK__STEPS_LAUNCH = 1, TK__STEPS_GPU = 2 };
int tk__steps_add_key(tk_steps *s, const tk_event *ev, int cls, int64_t *corr, int32_t *group, int *kind);
/* From now on s keeps the steps alone, not the launches: for a caller
 * that joins launches and GPU work itself (the steps and launch tables
 * sort them in bounded memory). tk_steps_part() then knows no launch. */
void tk__steps_keys_only(tk_steps *s);
/* The runs kept after tk_steps_parts (tests, reports). */
size_t tk__steps_runs(const tk_steps *s);

#endif
