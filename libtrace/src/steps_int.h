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
/* For segments that start at starts[0..n) (sorted; segment k is [starts[k],
 * starts[k+1])), last[k] = the latest start of GPU work launched in segment
 * k that starts in a later segment, or INT64_MIN when none does. */
void tk__steps_late_work(const tk_steps *s, const int64_t *starts, size_t n, int64_t *last);
/* tk_steps_add for a caller that knows the event's tk_stats_event_class()
 * (cls; -1 if not): *keyed = 1 with its key when ev is GPU work that a
 * launch may own. 0 or TK_ERR_NOMEM. */
int tk__steps_add_key(tk_steps *s, const tk_event *ev, int cls, int64_t *corr, int32_t *group, int *keyed);
/* 1 with the launch's start in *ts (and its end in *end, may be NULL)
 * when the key has a launch. */
int tk__steps_launch(const tk_steps *s, int64_t corr, int32_t group, int64_t *ts, int64_t *end);
/* Memory held, for reports. */
size_t tk__steps_bytes(const tk_steps *s);

#endif
