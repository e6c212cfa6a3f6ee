/* shape.h: an independent scan of a valid trace text: where each event, member and the whole trace end. */
#ifndef TK_SHAPE_H
#define TK_SHAPE_H

#include <stddef.h>

#define SHAPE_MAX 512

typedef struct shape {
	int bare_array;
	size_t n_events;
	size_t ev_end[SHAPE_MAX];     /* offset of each event's closing '}' */
	size_t events_close;          /* offset of the ']' that closes the events */
	size_t top_end;               /* offset of the last byte of the trace */
	size_t n_members;             /* top-level members other than traceEvents */
	size_t mem_done[SHAPE_MAX];   /* first offset by which the member's value is known complete */
	size_t mem_delim[SHAPE_MAX];  /* offset of the ',' or '}' after the member */
	int mem_after[SHAPE_MAX];     /* the member follows traceEvents */
} shape;

/* Scans a valid JSON trace (object or bare array). Returns 0, -1 if the text
 * is not shaped as this scanner expects. */
int shape_scan(const char *t, size_t n, shape *s);

#endif
