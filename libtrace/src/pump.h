/* pump.h: a reader on a thread of its own (pump.c). */
#ifndef TK_PUMP_H
#define TK_PUMP_H

#include "tracekit/tracekit.h"

typedef struct tk__pump tk__pump;

/* Called on the pump's thread after each event: 1 if the caller needs the
 * event's args. With it, JSON args are only skipped while parsing
 * (tk__reader_set_lazy_args) and canonicalized for the events it wants; the
 * others arrive with args.ptr NULL, args.len their canonical length and
 * TK__HAS_NO_ARGS in has. The function sees every event in order. */
typedef int (*tk__pump_want)(void *arg, const tk_event *ev);
#define TK__HAS_NO_ARGS (1u << 30)

/* Starts reading `path` on a thread, at most `limit` events (UINT64_MAX: all);
 * want may be NULL (every event whole). On failure *out may hold a pump whose
 * tk__pump_reader() says why. */
int tk__pump_open(tk__pump **out, const char *path, const tk_reader_opts *o, uint64_t limit,
                  tk__pump_want want, void *want_arg);
/* As tk_reader_next(); the event lives until the next call. The limit
 * reached reads as TK_EOF. */
int tk__pump_next(tk__pump *p, const tk_event **ev);
/* The reader, for its error, warnings, stats and metadata: NULL until
 * tk__pump_next() has returned something other than TK_OK (the thread is
 * done then). */
tk_reader *tk__pump_reader(tk__pump *p);
/* Input bytes read by the time of the last event handed over (for progress). */
uint64_t tk__pump_bytes_in(const tk__pump *p);
/* Events handed over. */
uint64_t tk__pump_events(const tk__pump *p);
void tk__pump_free(tk__pump *p);

#endif
