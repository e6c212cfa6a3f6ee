/* par.c: the events of one trace parsed on several threads: the decoded input is cut into blocks where an event probably ends, each block is parsed by a worker into a batch, and the batches are handed out in file order; where a block does not start where the previous block's parse ended, the caller's reader parses on alone until an event of its own ends where a block starts. */
#define _GNU_SOURCE /* memrchr */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#include "core/workers.h"
#include "par.h"

#define BLOCK0 ((size_t)1 << 20)
#define MAX_THREADS 64
#define GROW_LIMIT 16 /* a block grows to this many times its size looking for a cut */
#define SPARES 16     /* blocks kept for reuse (at most max_blk) */
#define TAIL ((size_t)64 << 10) /* read first to find a block's cut (at most half a block) */

size_t tk__par_block_bytes;
void (*tk__par_fill_hook)(uint64_t off, size_t len);

/* B_FILL: cut, its bytes before the tail being read by the thread that cut it */
enum { B_FILL, B_READ, B_PARSING, B_DONE };

typedef struct blk {
	struct blk *next;
	unsigned char *p; /* len bytes, TK__PAD zero bytes after them */
	size_t len, cap;
	uint64_t off;      /* decoded offset of p[0] */
	uint64_t bytes_in; /* the source's input bytes once it was read */
	int last;          /* nothing follows: the source ended, or failed (src_rc) */
	int src_rc;
	int err_no;  /* src_rc < 0 from a read by offset: its errno (the message is written when it is met) */
	size_t fill; /* bytes p[0..fill) left to read by offset (B_FILL) */
	int status;
	int orphan; /* let go of while a worker parsed it: the worker recycles it */
	/* the worker's parse */
	tk_event *ev;
	size_t n, ev_cap;
	tk__buf text; /* the events' args and extra */
	unsigned char *notes; /* opts.note_fn: a note per event, NULL when they could not be had */
	size_t notes_cap;     /* events they have room for */
	tk__buf summary;      /* the stats tables' part of the batch (tk__stats_batch) */
	int render;           /* the texts are written (tk__render_now) */
	tk__buf rtext;        /* the events' JSON texts */
	tk__rend *rend;       /* where each is, NULL when that could not be had */
	size_t rend_cap;
	size_t stop;  /* where the parse stopped: len when it ended clean */
	uint64_t counts[TK__PAR_COUNTS];
	uint64_t nl;    /* newlines in p[0..len) */
	size_t last_nl; /* 1 + the offset of the last one, 0 if none */
} blk;

struct tk__par {
	tk_reader *r;
	const tk__par_fmt *f;
	tk__workers W; /* each worker's state: its tk_reader; the lock guards what follows */
	tk_reader *mainw; /* the caller's worker reader: it parses too while it waits */
	/* blocks in file order, head the oldest kept */
	blk *head, *tail, *spare;
	size_t n_blk, max_blk, n_spare;
	size_t block, max_block;
	int reading; /* a thread reads the next block */
	int src_end; /* the last block is read (or none could be: nomem) */
	int src_eof; /* the source ended before the threads started */
	int nomem;
	int finished;
	/* the bytes after the last cut: the next block's first */
	tk__buf carry;
	size_t carry_pos;
	uint64_t next_off;
	/* the source's bytes are read by offset (a file or memory without a
	 * filter; no carry: a block's bytes are read from its offset on): a
	 * block is cut from its tail alone, and the rest read outside `reading` */
	int pread;
	uint64_t tail_cuts; /* blocks cut from their tail (tests) */
	/* the caller's side */
	int seq;     /* the reader parses alone, fed by tk__par_read() */
	blk *cur;    /* the block whose events are handed out */
	size_t idx;  /* cur's next event */
	blk *feed;   /* the reader's next bytes: feed->p[feed_pos..] */
	size_t feed_pos;
	uint64_t line, line_at; /* at the start of the head block (handing out) */
	uint64_t bytes_in;
	uint64_t handed; /* events handed out from blocks */
	uint64_t resumed; /* times the threads took over again */
};

static void blk_free(blk *b)
{
	if (!b)
		return;
	free(b->p);
	free(b->ev);
	free(b->notes);
	tk__buf_free(&b->summary);
	free(b->rend);
	tk__buf_free(&b->rtext);
	tk__buf_free(&b->text);
	free(b);
}

/* A block for the next bytes (the lock held): a spare one, or a new one. */
static blk *blk_take(tk__par *P)
{
	blk *b = P->spare;
	if (b) {
		P->spare = b->next;
		P->n_spare--;
	} else if (!(b = calloc(1, sizeof *b))) {
		return NULL;
	}
	b->next = NULL;
	b->len = b->n = b->stop = 0;
	b->text.len = 0;
	b->last = b->src_rc = b->err_no = b->orphan = 0;
	b->fill = 0;
	b->status = B_READ;
	if (b->cap < P->block) {
		unsigned char *np = realloc(b->p, P->block + TK__PAD);
		if (!np) {
			blk_free(b);
			return NULL;
		}
		b->p = np;
		b->cap = P->block;
	}
	return b;
}

/* Keep b for reuse, or free it (the lock held). */
static void blk_recycle(tk__par *P, blk *b)
{
	if (P->n_spare >= SPARES || P->n_spare >= P->max_blk || b->cap > 2 * P->block || P->finished) {
		blk_free(b);
		return;
	}
	b->next = P->spare;
	P->spare = b;
	P->n_spare++;
}

/* The oldest block is done with (the lock held). */
static void release_head(tk__par *P)
{
	blk *b = P->head;
	P->head = b->next;
	if (!P->head)
		P->tail = NULL;
	P->n_blk--;
	if (P->cur == b)
		P->cur = NULL;
	if (P->feed == b)
		P->feed = NULL;
	if (b->status == B_PARSING || b->status == B_FILL)
		b->orphan = 1;
	else
		blk_recycle(P, b);
	tk__workers_wake(&P->W);
}

/* The source's next bytes for the block being read (`reading` held). */
static long src_get(tk__par *P, blk *b, unsigned char *dst, size_t cap)
{
	if (!P->pread)
		return tk__src_read(&P->r->src, dst, cap);
	long n = tk__src_pread_mt(&P->r->src, b->off + (uint64_t)(dst - b->p), dst, cap);
	if (n < 0)
		b->err_no = errno;
	return n;
}

/* Reading by offset: b cut from its tail alone, the bytes
 * before it left to fill (b->fill). 0 when no cut is in the tail, or the
 * source ends or fails in it: the block is read whole. */
static int tail_cut(tk__par *P, blk *b)
{
	size_t want = P->block, t = want / 2 < TAIL ? want / 2 : TAIL;
	long k = tk__src_pread_mt(&P->r->src, b->off + want - t, b->p + want - t, t);
	if (k != (long)t)
		return 0;
	size_t cut = P->f->cut(b->p + want - t, t);
	if (!cut)
		return 0;
	b->fill = want - t;
	b->len = want - t + cut;
	P->tail_cuts++;
	return 1;
}

/* Reads the next block into b, the carry first, then the source, and
 * cuts it where the format finds the end of an event (the thread holds
 * `reading`, not the lock: the carry, the source and next_off are the
 * reading thread's; next_off changes under the lock). When the source is read
 * by offset, the block may be only cut (b->fill: fill_block() reads the
 * rest). 0, or TK_ERR_NOMEM. */
static int read_block(tk__par *P, blk *b)
{
	tk__src *src = &P->r->src;
	b->off = P->next_off;
	if (P->pread && tail_cut(P, b)) {
		b->bytes_in = b->off + b->len;
		memset(b->p + b->len, 0, TK__PAD);
		return 0;
	}
	for (;;) {
		size_t k = P->carry.len - P->carry_pos;
		if (k > b->cap - b->len)
			k = b->cap - b->len;
		if (k)
			memcpy(b->p + b->len, P->carry.p + P->carry_pos, k);
		b->len += k;
		P->carry_pos += k;
		if (P->carry_pos == P->carry.len)
			P->carry.len = P->carry_pos = 0;
		while (b->len < b->cap && !b->last) {
			long n = P->src_eof ? 0 : src_get(P, b, b->p + b->len, b->cap - b->len);
			if (n <= 0) {
				b->last = 1;
				b->src_rc = (int)n;
			} else {
				b->len += (size_t)n;
			}
		}
		if (b->last)
			break;
		size_t cut = P->f->cut(b->p, b->len);
		if (!cut && b->cap >= P->max_block)
			cut = b->len; /* no end of an event in sight: the worker stops short, the reader goes on alone */
		if (cut) {
			/* the rest goes before what is left of the carry */
			size_t tail = b->len - cut, left = P->carry.len - P->carry_pos;
			if (tail && !P->pread) { /* by offset, the next block reads it again */
				tk__buf nc = {0};
				if (tk__buf_reserve(&nc, tail + left + 1))
					return TK_ERR_NOMEM;
				memcpy(nc.p, b->p + cut, tail);
				if (left)
					memcpy(nc.p + tail, P->carry.p + P->carry_pos, left);
				nc.len = tail + left;
				tk__buf_free(&P->carry);
				P->carry = nc;
				P->carry_pos = 0;
			}
			b->len = cut;
			break;
		}
		unsigned char *np = realloc(b->p, 2 * b->cap + TK__PAD);
		if (!np)
			return TK_ERR_NOMEM;
		b->p = np;
		b->cap *= 2;
	}
	b->bytes_in = P->pread ? b->off + b->len : tk__src_bytes_in(src);
	memset(b->p + b->len, 0, TK__PAD);
	return 0;
}

/* Reads b's bytes before its tail by offset (the lock not held: b is B_FILL,
 * only this thread's). Where the source ends or fails first, b ends
 * there: *len and *rc, else len stays; the errno in *err_no. */
static void fill_block(tk__par *P, blk *b, size_t *len, int *rc, int *err_no)
{
	size_t got = 0;
	while (got < b->fill) {
		long n = tk__src_pread_mt(&P->r->src, b->off + got, b->p + got, b->fill - got);
		if (n <= 0) {
			/* the file got shorter (the end a read would meet) or failed */
			*len = got;
			*rc = n < 0 ? -1 : 0;
			*err_no = n < 0 ? errno : 0;
			return;
		}
		got += (size_t)n;
	}
}

static int can_read(const tk__par *P)
{
	return !P->reading && !P->src_end && P->n_blk < P->max_blk && !P->W.quit;
}

/* Reads the next block and queues it (the lock held, let go of meanwhile). */
static void read_next(tk__par *P)
{
	blk *b = blk_take(P);
	if (!b) {
		P->nomem = P->src_end = 1;
		tk__workers_done(&P->W);
		return;
	}
	P->reading = 1;
	pthread_mutex_unlock(&P->W.mu);
	int rc = read_block(P, b);
	pthread_mutex_lock(&P->W.mu);
	P->reading = 0;
	if (rc) {
		blk_free(b);
		P->nomem = P->src_end = 1;
	} else {
		P->next_off = b->off + b->len;
		if (b->last)
			P->src_end = 1;
		if (P->tail)
			P->tail->next = b;
		else
			P->head = b;
		P->tail = b;
		P->n_blk++;
		b->status = b->fill ? B_FILL : B_READ;
	}
	tk__workers_wake(&P->W);
	tk__workers_done(&P->W);
	if (rc || !b->fill)
		return;
	/* the next block is read meanwhile */
	size_t len = b->len;
	int src_rc = 0, err_no = 0;
	pthread_mutex_unlock(&P->W.mu);
	if (tk__par_fill_hook)
		tk__par_fill_hook(b->off, b->fill);
	fill_block(P, b, &len, &src_rc, &err_no);
	pthread_mutex_lock(&P->W.mu);
	if (b->orphan) {
		blk_recycle(P, b);
		return;
	}
	if (len < b->len) {
		b->len = len;
		b->last = 1;
		b->src_rc = src_rc;
		b->err_no = err_no;
		b->bytes_in = b->off + len;
		memset(b->p + len, 0, TK__PAD);
	}
	b->fill = 0;
	b->status = B_READ;
	tk__workers_wake(&P->W);
	tk__workers_done(&P->W);
}

/* An event of the block's batch (tk__batch_copy). */
static int emit(void *ctx, const tk_event *ev)
{
	blk *b = ctx;
	if (tk__grow(&b->ev, &b->ev_cap, b->n + 1, sizeof *b->ev, 1024) || tk__batch_copy(&b->ev[b->n], ev, &b->text))
		return TK_ERR_NOMEM;
	b->n++;
	return 0;
}

static void parse_block(tk__par *P, tk_reader *w, blk *b)
{
	memset(b->counts, 0, sizeof b->counts);
	b->n = 0;
	b->text.len = 0;
	b->stop = P->f->parse(w, b->p, b->len, P->f->state, emit, b, b->counts);
	tk__batch_fix(b->ev, b->n, &b->text);
	/* the caller's notes on the events, here on the parsing thread (without
	 * room for them, the reader writes each as it hands the event out) */
	tk__batch_notes(&P->r->opts, b->ev, b->n, &b->notes, &b->notes_cap, &b->summary);
	if (b->render)
		tk__batch_render(&P->r->opts, b->ev, b->n, &b->rtext, &b->rend, &b->rend_cap);
	b->nl = tk__count_nl(b->p, b->len);
	const unsigned char *nl = b->nl ? memrchr(b->p, '\n', b->len) : NULL;
	b->last_nl = nl ? (size_t)(nl - b->p) + 1 : 0;
}

/* Parses b on this thread (the lock held, let go of meanwhile). */
static void parse_here(tk__par *P, tk_reader *w, blk *b)
{
	size_t done = 0, waiting = 0;
	for (const blk *x = P->head; x; x = x->next) {
		done += x->status == B_DONE;
		waiting += x->status == B_READ && x != b;
	}
	b->render = tk__render_now(&P->r->opts, w == P->mainw, done, waiting);
	b->status = B_PARSING;
	pthread_mutex_unlock(&P->W.mu);
	parse_block(P, w, b);
	pthread_mutex_lock(&P->W.mu);
	if (b->orphan)
		blk_recycle(P, b);
	else
		b->status = B_DONE;
	tk__workers_done(&P->W);
}

static blk *first_unparsed(const tk__par *P)
{
	blk *b = P->head;
	while (b && b->status != B_READ)
		b = b->next;
	return b;
}

/* The workers' step: the first block not parsed parsed with this thread's
 * reader (*w), else the next block read. */
static int step(void *owner, void *w)
{
	tk__par *P = owner;
	blk *b = first_unparsed(P);
	if (b)
		parse_here(P, *(tk_reader **)w, b);
	else if (can_read(P))
		read_next(P);
	else
		return 0;
	return 1;
}

static int reader_init(void *owner, void *w, unsigned i)
{
	(void)i;
	return !(*(tk_reader **)w = tk__reader_worker(((tk__par *)owner)->r));
}

static void reader_fini(void *owner, void *w)
{
	(void)owner;
	tk_reader_free(*(tk_reader **)w);
}

static const tk__workers_ops ops = {sizeof(tk_reader *), reader_init, reader_fini, step};

int tk__par_active(const tk__par *p)
{
	return p && !p->seq && !p->finished;
}

uint64_t tk__par_bytes_in(const tk__par *p)
{
	return p->bytes_in;
}

void tk__par_counts(const tk__par *p, uint64_t *handed, uint64_t *resumed)
{
	*handed = p ? p->handed : 0;
	*resumed = p ? p->resumed : 0;
}

uint64_t tk__par_tail_cuts(const tk__par *p)
{
	return p ? p->tail_cuts : 0;
}

/* The reader parses alone from the block's stop on (the lock held). */
static void enter_seq(tk__par *P, blk *b)
{
	tk_reader *r = P->r;
	uint64_t k = tk__count_nl(b->p, b->stop);
	r->line = P->line + k;
	r->line_at = P->line_at;
	if (k) {
		const unsigned char *nl = memrchr(b->p, '\n', b->stop);
		r->line_at = b->off + (uint64_t)(nl - b->p) + 1;
	}
	r->base = b->off + b->stop;
	r->pos = r->end = 0;
	r->eof = r->src_failed = 0; /* the blocks say it again */
	memset(r->buf, 0, TK__PAD);
	r->stats.bytes_decoded = r->base;
	P->seq = 1;
	P->cur = NULL;
	P->feed = b;
	P->feed_pos = b->stop;
}

static int nomem(tk_reader *r)
{
	return tk__err_set(&r->err, TK_ERR_NOMEM, "%s: out of memory", r->name);
}

int tk__par_next(tk_reader *r, const tk_event **ev)
{
	tk__par *P = r->par;
	for (;;) {
		blk *b = P->cur;
		if (b && P->idx < b->n) {
			if (b->notes)
				r->note_par = b->notes + P->idx * r->opts.note_size;
			if (b->render && b->rend) {
				r->rend_par = &b->rend[P->idx];
				r->rend_text = b->rtext.p;
			}
			*ev = &b->ev[P->idx++];
			P->handed++;
			return TK_OK;
		}
		pthread_mutex_lock(&P->W.mu);
		if (b) {
			/* its events are out */
			P->f->absorb(r, b->counts);
			r->stats.repaired_strings += b->counts[TK__PAR_COUNTS - 1];
			if (b->stop < b->len || b->last) {
				enter_seq(P, b);
				pthread_mutex_unlock(&P->W.mu);
				return TK__PAR_SEQ;
			}
			P->line += b->nl;
			if (b->last_nl)
				P->line_at = b->off + b->last_nl;
			r->stats.bytes_decoded = b->off + b->len;
			P->bytes_in = b->bytes_in;
			release_head(P);
		}
		/* the next block, parsed: here when no worker has taken it (the
		 * head's, or one ahead while a worker has the head), else read */
		for (;;) {
			b = P->head;
			if (b && b->status == B_DONE)
				break;
			if (!b && P->nomem) {
				pthread_mutex_unlock(&P->W.mu);
				return nomem(r);
			}
			tk__workers_help(&P->W, &P->mainw);
		}
		P->cur = b;
		P->idx = 0;
		pthread_mutex_unlock(&P->W.mu);
	}
}

long tk__par_read(tk_reader *r, unsigned char *dst, size_t cap)
{
	tk__par *P = r->par;
	if (P->finished || !P->seq)
		return tk__src_read(&r->src, dst, cap); /* not reached: the reader has ended */
	pthread_mutex_lock(&P->W.mu);
	for (;;) {
		blk *b = P->feed;
		if (b && b->status == B_FILL) {
			tk__workers_wait(&P->W);
			continue;
		}
		if (b && P->feed_pos < b->len) {
			/* to the end of the block at most: the reader asks again */
			size_t n = b->len - P->feed_pos;
			if (n > cap)
				n = cap;
			memcpy(dst, b->p + P->feed_pos, n);
			P->feed_pos += n;
			P->bytes_in = b->bytes_in;
			pthread_mutex_unlock(&P->W.mu);
			return (long)n;
		}
		if (b && b->last) {
			pthread_mutex_unlock(&P->W.mu);
			if (b->src_rc < 0 && b->err_no)
				tk__src_failed(r->src.err, b->err_no);
			if (b->src_rc < 0)
				return b->src_rc; /* the source's message is in r->src.err */
			return 0;
		}
		if (b && b->next) {
			P->feed = b->next;
			P->feed_pos = 0;
			continue;
		}
		if (P->nomem) {
			pthread_mutex_unlock(&P->W.mu);
			snprintf(r->src.err, sizeof r->src.err, "out of memory");
			r->src.err_nomem = 1;
			return TK_ERR_NOMEM;
		}
		/* the blocks before the feed are in the reader's window: room for the next */
		while (P->n_blk >= P->max_blk && P->head != b)
			release_head(P);
		if (can_read(P))
			read_next(P);
		else
			tk__workers_wait(&P->W);
	}
}

void tk__par_resume(tk_reader *r)
{
	tk__par *P = r->par;
	if (!P->seq || P->finished)
		return;
	uint64_t at = r->base + r->pos;
	pthread_mutex_lock(&P->W.mu);
	for (;;) {
		/* the blocks wholly behind the reader are done with */
		while (P->head && P->head != P->feed && P->head->off + P->head->len <= at && !P->head->last)
			release_head(P);
		blk *c = P->head;
		while (c && c->off + c->len <= at && !c->last)
			c = c->next;
		if (c && c->off == at) {
			/* the reader's event ended where c starts: c's parse is the
			 * reader's own from here */
			while (P->head != c)
				release_head(P);
			P->seq = 0;
			P->feed = NULL;
			P->cur = NULL;
			P->resumed++;
			tk__reader_lines_at(r, r->pos, &P->line, &P->line_at);
			r->pos = r->end;
			break;
		}
		/* it ended where the next block to read starts: read it (the
		 * threads lag behind the reader) and take over there */
		if (c || at != P->next_off || P->src_end || P->W.quit)
			break;
		if (can_read(P))
			read_next(P);
		else if (P->reading)
			tk__workers_wait(&P->W);
		else
			break; /* no room: the blocks ahead of the reader are kept */
	}
	pthread_mutex_unlock(&P->W.mu);
}

int tk__par_start(tk_reader *r, const tk__par_fmt *f)
{
	if (r->par_tried)
		return -1;
	r->par_tried = 1;
	unsigned nth = r->opts.threads > MAX_THREADS ? MAX_THREADS : r->opts.threads;
	size_t block = tk__par_block_bytes ? tk__par_block_bytes : BLOCK0;
	if (nth < 2 || r->src_failed || (r->eof && r->end - r->pos <= 2 * block))
		return -1; /* one thread, or the rest is in the window and small */
	tk__par *P = calloc(1, sizeof *P);
	if (!P)
		return -1;
	P->r = r;
	P->f = f;
	P->block = block;
	P->max_block = block * GROW_LIMIT;
	P->max_blk = (size_t)nth + 2;
	P->src_eof = r->eof;
	P->next_off = r->base + r->pos;
	P->bytes_in = tk__src_bytes_in(&r->src);
	/* by offset where the decoded bytes are the base's (no filter: the
	 * bytes a bid read ahead are the base's first); the window's unread
	 * bytes are read again from the source */
	const tk__src *src = &r->src;
	const tk__stage *st = &src->st[0];
	P->pread = !r->eof && src->n == 1 && !src->ahead && tk__src_can_pread(src) &&
	           tk__src_bytes_in(src) - (st->ahead_len - st->ahead_pos) == r->base + r->end;
	tk__reader_lines_at(r, r->pos, &P->line, &P->line_at);
	tk__workers_init(&P->W, &ops, P);
	P->mainw = tk__reader_worker(r);
	if (!P->mainw || (!P->pread && tk__buf_append(&P->carry, r->buf + r->pos, r->end - r->pos))) {
		tk__par_free(P);
		return -1;
	}
	/* the caller's thread is the last: it parses while it waits; without a
	 * worker it reads and parses the blocks itself, in the same order:
	 * slower, never different */
	tk__workers_start(&P->W, nth - 1, "tk-parse");
	r->pos = r->end;
	r->par = P;
	return 0;
}

void tk__par_finish(tk__par *P)
{
	if (!P || P->finished)
		return;
	tk__workers_stop(&P->W); /* the threads joined, their readers freed */
	P->finished = 1;
	while (P->head)
		release_head(P);
	while (P->spare) {
		blk *b = P->spare;
		P->spare = b->next;
		blk_free(b);
	}
	P->n_spare = 0;
	tk__buf_free(&P->carry);
	P->carry_pos = 0;
}

void tk__par_free(tk__par *P)
{
	if (!P)
		return;
	tk__par_finish(P);
	tk__workers_free(&P->W);
	tk_reader_free(P->mainw);
	free(P);
}
