/* par.h: the events of one trace parsed on several threads, handed out in file order (par.c). */
#ifndef TK_PAR_H
#define TK_PAR_H

#include "internal.h"

typedef struct tk__par tk__par;

/* What a format gives the threads (json.c). The decoded input is cut into
 * blocks at places where a unit probably ends (cut); a thread parses each
 * block from the state the format is in after a unit (parse). A block
 * whose parse starts where the previous block's clean parse ended is the
 * caller's own parse, unit for unit: everything else goes back to the
 * caller's reader (docs/threads.md). */
#define TK__PAR_COUNTS 4
typedef struct tk__par_fmt {
	/* A place in p[0..n) just after a probable end of a unit, searched from
	 * the end back to n / 2: its offset, or 0 when there is none. The bytes
	 * up to n are there to look at; TK__PAD readable bytes follow. */
	size_t (*cut)(const unsigned char *p, size_t n);
	/* Parse the units of p[0..n) on a worker reader (tk__reader_worker)
	 * in `state`, calling emit for each event (nonzero: stop before it);
	 * returns the offset where it stopped: n when every unit was an event
	 * and the last ended at n, else the start of the first unit that was
	 * not a whole event within the reader's limits. counts: the format's
	 * own counts over the events given to emit (added by absorb), and in
	 * counts[TK__PAR_COUNTS - 1] the strings repaired. */
	size_t (*parse)(tk_reader *w, const unsigned char *p, size_t n, int state,
	                int (*emit)(void *ctx, const tk_event *ev), void *ctx, uint64_t *counts);
	/* Adds a block's counts to the caller's reader as its events are handed out. */
	void (*absorb)(tk_reader *r, const uint64_t *counts);
	int state; /* the format's state after an event: where every block starts */
} tk__par_fmt;

/* tk__par_next() has handed everything it parsed out: the reader goes on
 * alone from r->base (its window empty, filled by tk__par_read()). */
#define TK__PAR_SEQ 2

/* Starts the threads on the rest of r's input: its unread window first,
 * then its source. For a reader just past an event (in f->state), with
 * opts.threads > 1. 0 when they run (r->par set: tk__par_next() gives the
 * events from now on); nonzero when none started, with r unchanged. */
int tk__par_start(tk_reader *r, const tk__par_fmt *f);
/* 1 while tk__par_next() gives the events, 0 while the reader parses them. */
int tk__par_active(const tk__par *p);
/* The next event in file order (TK_OK), TK__PAR_SEQ, or an error. */
int tk__par_next(tk_reader *r, const tk_event **ev);
/* While the reader parses alone: its next input bytes, as tk__src_read(). */
long tk__par_read(tk_reader *r, unsigned char *dst, size_t cap);
/* After the reader parsed an event alone, in f->state: when it ended where
 * a parsed block starts, the threads' events are handed out again from
 * there (the reader's window is dropped). */
void tk__par_resume(tk_reader *r);
/* Input bytes read by the time of the bytes handed out (progress). */
uint64_t tk__par_bytes_in(const tk__par *p);
/* The threads stop and the blocks go; the strings of the events handed
 * out stay until tk__par_free(). The reader goes on alone, if at all. */
void tk__par_finish(tk__par *p);
void tk__par_free(tk__par *p);

/* Tests: the events the threads parsed and handed out, and the times they
 * took over again after the reader parsed alone. */
void tk__par_counts(const tk__par *p, uint64_t *handed, uint64_t *resumed);
/* Tests: the blocks cut from their tail alone, their bytes before it
 * read by the thread that cut them (a file or memory without a filter). */
uint64_t tk__par_tail_cuts(const tk__par *p);

/* Tests: the size of a block (0: 1 MiB), so that small inputs are cut
 * into many blocks. */
extern size_t tk__par_block_bytes;
/* Tests: called before a block cut from its tail is filled, with the
 * decoded offset and length of what is read then (on the filling thread). */
extern void (*tk__par_fill_hook)(uint64_t off, size_t len);

#endif
