/* pump.h: a reader on a thread of its own (pump.c). */
#ifndef TK_PUMP_H
#define TK_PUMP_H

#include "tracekit/tracekit.h"

typedef struct tk__pump tk__pump;

/* Starts reading `path` on a thread, at most `limit` events (UINT64_MAX: all).
 * On failure *out may hold a pump whose tk__pump_reader() says why. */
int tk__pump_open(tk__pump **out, const char *path, const tk_reader_opts *o, uint64_t limit);
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
