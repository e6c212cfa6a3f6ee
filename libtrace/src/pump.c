/* pump.c: a reader on a thread of its own, handing events over in batches so that parsing overlaps with the caller's work. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdlib.h>

#include "core/workers.h"
#include "internal.h"
#include "pump.h"

#define BATCHES 4
#define BATCH_EVENTS 2048
#define BATCH_TEXT (512u << 10) /* a batch closes once its copied text passes this */

typedef struct batch {
	tk_event *ev;
	size_t n;
	tk__buf text;      /* args and extra of the events */
	uint64_t bytes_in; /* the reader's stats after the batch's last event */
	int rc;            /* after the events: TK_OK (more follow), TK_EOF or an error */
} batch;

struct tk__pump {
	tk_reader *r;
	tk__pump_want want;
	void *want_arg;
	uint64_t limit, taken; /* events the thread still may read; events handed over */
	tk__workers W; /* the thread (tk-read); its lock guards head, full, cur and ended */
	int started;
	batch b[BATCHES];
	/* batches in order: [head, head + full) are full; the caller owns cur */
	size_t head, full;
	size_t next; /* the batch the thread fills next */
	int ended;   /* the thread filled the last batch: the reader is no longer its */
	batch *cur;
	size_t cur_i;
	int final_rc; /* once the last batch is used up */
	/* the reader parses on threads of its own (par.c): its events are
	 * handed on as they come, with no thread and no copy here */
	int direct;
};

/* The event, its args and extra copied into the batch's text. */
static int copy_event(batch *b, const tk_event *ev)
{
	int rc = tk__batch_copy(&b->ev[b->n], ev, &b->text);
	b->n += !rc;
	return rc;
}

/* The event as the caller wants it: args canonicalized now, or left out. */
static int wanted(tk__pump *p, batch *b, const tk_event *ev)
{
	size_t clen;
	int want = p->want(p->want_arg, ev);
	int lazy = tk__reader_lazy_args(p->r, &clen);
	if (want) {
		int rc = lazy ? tk__reader_take_args(p->r) : 0;
		return rc ? rc : copy_event(b, ev);
	}
	if (!lazy && !ev->args.ptr)
		return copy_event(b, ev);
	/* args skipped, or parsed in full all the same (a unit at the edge of
	 * the reader's window is): left out alike */
	tk_event e = *ev;
	e.args = (tk_sv){NULL, lazy ? clen : ev->args.len};
	e.has |= TK__HAS_NO_ARGS;
	return copy_event(b, &e);
}

static int fill(tk__pump *p, batch *b)
{
	b->n = 0;
	b->text.len = 0;
	b->rc = TK_OK;
	while (b->n < BATCH_EVENTS && b->text.len < BATCH_TEXT) {
		const tk_event *ev;
		if (!p->limit) {
			b->rc = TK_EOF;
			break;
		}
		int rc = tk_reader_next(p->r, &ev);
		if (rc == TK_OK) {
			p->limit--;
			rc = p->want ? wanted(p, b, ev) : copy_event(b, ev);
			if (rc == TK_ERR_NOMEM) /* the reader is fine, the copy is not: report it as the reader's */
				rc = tk__err_set(&p->r->err, rc, "%s: out of memory", tk_reader_name(p->r));
		}
		if (rc) {
			b->rc = rc;
			break;
		}
	}
	tk__batch_fix(b->ev, b->n, &b->text);
	b->bytes_in = tk_reader_get_stats(p->r)->bytes_in;
	return b->rc;
}

/* The thread's step: the next batch filled, when one is free (neither
 * full nor the caller's). */
static int pump_step(void *owner, void *state)
{
	tk__pump *p = owner;
	(void)state;
	if (p->ended || p->full == BATCHES || (p->full == BATCHES - 1 && p->cur))
		return 0;
	batch *b = &p->b[p->next];
	pthread_mutex_unlock(&p->W.mu);
	int rc = fill(p, b);
	pthread_mutex_lock(&p->W.mu);
	p->full++;
	p->next = (p->next + 1) % BATCHES;
	p->ended = rc != 0;
	tk__workers_done(&p->W);
	return 1;
}

static const tk__workers_ops pump_ops = {0, NULL, NULL, pump_step};

int tk__pump_open(tk__pump **out, const char *path, const tk_reader_opts *o, uint64_t limit,
                  tk__pump_want want, void *want_arg)
{
	tk__pump *p = calloc(1, sizeof *p);
	*out = p;
	if (!p)
		return TK_ERR_NOMEM;
	p->limit = limit;
	tk__workers_init(&p->W, &pump_ops, p);
	int rc = tk_reader_open_path(&p->r, path, o);
	if (rc)
		return rc;
	p->want = want;
	p->want_arg = want_arg;
	tk__reader_set_lazy_args(p->r, want != NULL);
	if (want) /* the lazy pass stays on one thread (par.c): inflate ahead of it */
		tk__src_read_ahead(&p->r->src);
	if (!want && o && o->threads > 1 && !o->skip_args) {
		p->direct = 1;
		return 0;
	}
	for (int i = 0; i < BATCHES; i++)
		if (!(p->b[i].ev = malloc(BATCH_EVENTS * sizeof *p->b[i].ev)))
			return TK_ERR_NOMEM;
	/* without a thread the caller reads a batch whenever it needs one */
	p->started = tk__workers_start(&p->W, 1, "tk-read") == 1;
	return 0;
}

int tk__pump_next(tk__pump *p, const tk_event **ev)
{
	if (p->direct) {
		if (p->final_rc)
			return p->final_rc;
		int rc = p->limit ? tk_reader_next(p->r, ev) : TK_EOF;
		if (rc == TK_OK) {
			p->limit--;
			p->taken++;
		} else {
			p->final_rc = rc;
		}
		return rc;
	}
	for (;;) {
		if (p->cur && p->cur_i < p->cur->n) {
			*ev = &p->cur->ev[p->cur_i++];
			p->taken++;
			return TK_OK;
		}
		if (p->final_rc)
			return p->final_rc;
		if (!p->started) {
			p->cur = &p->b[0];
			p->cur_i = 0;
			p->final_rc = fill(p, p->cur);
			continue;
		}
		pthread_mutex_lock(&p->W.mu);
		if (p->cur) { /* give the used batch back */
			p->cur = NULL;
			p->head = (p->head + 1) % BATCHES;
			tk__workers_wake(&p->W);
		}
		while (!p->full)
			tk__workers_wait(&p->W);
		p->full--;
		p->cur = &p->b[p->head];
		p->cur_i = 0;
		pthread_mutex_unlock(&p->W.mu);
		if (p->cur->rc) {
			/* the thread filled no batch after this one: the reader is the caller's now */
			p->final_rc = p->cur->rc;
			tk__workers_stop(&p->W);
		}
	}
}

tk_reader *tk__pump_reader(tk__pump *p)
{
	return p && (p->final_rc || !p->started) ? p->r : NULL;
}

uint64_t tk__pump_bytes_in(const tk__pump *p)
{
	if (p->direct)
		return tk_reader_get_stats(p->r)->bytes_in;
	return p->cur ? p->cur->bytes_in : 0;
}

uint64_t tk__pump_events(const tk__pump *p)
{
	return p->taken;
}

void tk__pump_free(tk__pump *p)
{
	if (!p)
		return;
	tk__workers_stop(&p->W);
	for (int i = 0; i < BATCHES; i++) {
		free(p->b[i].ev);
		tk__buf_free(&p->b[i].text);
	}
	tk_reader_free(p->r);
	tk__workers_free(&p->W);
	free(p);
}
