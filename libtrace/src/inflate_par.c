/* inflate_par.c: one raw deflate stream inflated on several threads. The compressed input
 * is cut into shares of a fixed size; a thread finds the first block start in a share and
 * inflates from there to the first block start at or after the next share's, with the 32 KiB
 * before it unknown (markers, core/deflate_scan.c). In order, the caller checks that each
 * part starts where the one before ended (a part that does not is inflated again from there,
 * its window known), passes each part the 32 KiB before it, a thread resolves its markers
 * and computes its CRC-32, and the caller gives its bytes out. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "core/deflate_scan.h"
#include "core/workers.h"
#include "inflate_par.h"
#include "internal.h"

size_t tk__ipar_part_bytes;
uint64_t tk__ipar_parts_out, tk__ipar_parts_redone;

#define EXTRA0 (128u * 1024)      /* read past the share at first: the block that crosses its end */
#define EXTRA_MAX (16u << 20)     /* at most: a block running further past the share fails the part */
#define PART_MAX_OUT (24u << 20)  /* a part's output beyond this (48 MiB marked) fails it: one thread
                                   * inflates the member (a trace makes about 6 MiB a part) */

enum { S_FREE, S_INFLATING, S_INFLATED, S_RESOLVABLE, S_RESOLVING, S_READY };

typedef struct part {
	uint64_t idx;
	int state;
	int found;          /* a block start was found in the share (part 0: the stream's start) */
	int skip;           /* no block starts in the share: the part before runs past it */
	int failed;         /* it cannot be given out: the stream goes back to one thread here */
	int eof;            /* its read reached the input's end */
	uint64_t start, end; /* bits from the stream's start: where it started, where it stopped */
	int final;
	tk__dpart d;
	unsigned char *in; /* the compressed bytes from the share's start */
	size_t in_len, in_cap;
	uint8_t win[TK__DWIN]; /* the 32 KiB before it, for resolving */
	size_t win_len;
	uint32_t crc;
} part;

struct tk__ipar {
	tk__ipar_pread rd;
	void *ctx;
	uint64_t base; /* the stream's first byte in the input */
	size_t pin;    /* compressed bytes per share */
	tk__workers W; /* its lock guards the parts' states and what the threads read below */
	part *ring;
	unsigned R;
	uint64_t head;    /* the part being given out */
	uint64_t valid;   /* the next part to check (>= head) */
	uint64_t next;    /* the next part for a thread to inflate */
	uint64_t limit;   /* no part at or past this one is inflated (the final one's next, the input's end) */
	tk__dscan *scan;   /* the caller's (each thread's: its state) */
	/* the caller's, under the lock where the threads read them */
	uint64_t expect;       /* the bit the part `valid` must start at */
	uint8_t win[TK__DWIN]; /* the 32 KiB before part `valid` */
	size_t win_len;
	size_t pos;         /* bytes of part `head` given out */
	int state;          /* 0 going on, 1 the final part given out, -1 failed */
	int stopped;        /* a part checked failed: none after it is checked */
	uint64_t total;     /* bytes given out */
	uint32_t crc;       /* of them */
	uint64_t end_off;   /* the input's offset after the trailer */
	uint64_t in_pos;    /* the input's offset the parts given out reach */
};

static part *slot(tk__ipar *P, uint64_t idx)
{
	return &P->ring[idx % P->R];
}

/* The share's bytes read (again, longer, where a part ran past them):
 * 0, or -1 on a read error or memory. */
static int read_share(tk__ipar *P, part *p, size_t want)
{
	if (p->in_cap < want) {
		unsigned char *q = realloc(p->in, want);
		if (!q)
			return -1;
		p->in = q;
		p->in_cap = want;
	}
	size_t got = 0;
	uint64_t off = P->base + p->idx * P->pin;
	while (got < want) {
		long n = P->rd(P->ctx, off + got, p->in + got, want - got);
		if (n < 0)
			return -1;
		if (n == 0)
			break;
		got += (size_t)n;
	}
	p->in_len = got;
	p->eof = got < want;
	return 0;
}

/* Inflates part p from `start` (bits from the stream's start; with `find`,
 * the first block start found in the share instead) to the first block start
 * at or after the next share's: with win (win_len bytes) known, or with
 * markers where win is NULL. Sets found, start, end, final; 0, or -1 where
 * it cannot be given out (failed). */
static int inflate_part(tk__ipar *P, tk__dscan *s, part *p, int find, uint64_t start, const uint8_t *win,
                        size_t win_len)
{
	uint64_t share = p->idx * P->pin * 8, stop = (uint64_t)P->pin * 8;
	size_t want = P->pin + EXTRA0;
	for (;;) {
		if (read_share(P, p, want))
			return -1;
		uint64_t at = find ? 0 : start - share;
		if (find) {
			p->found = p->idx == 0 || tk__dscan_find(s, p->in, p->in_len, 0, stop, &at);
			if (!p->found)
				return 0; /* checked in order: skipped, or inflated from where the part before ends */
			if (p->idx == 0)
				at = 0;
		}
		int rc = tk__dpart_inflate(s, p->in, p->in_len, at, stop, win, win_len, PART_MAX_OUT, &p->d);
		if (rc == TK__DP_SHORT && !p->eof && want < P->pin + EXTRA_MAX) {
			/* a block that crosses the share's end is longer than read */
			want = want * 4 < P->pin + EXTRA_MAX ? want * 4 : P->pin + EXTRA_MAX;
			continue;
		}
		if (rc != TK__DP_OK)
			return -1;
		p->start = share + at;
		p->end = share + p->d.end_bit;
		p->final = p->d.final;
		return 0;
	}
}

/* The part's markers replaced by its window's bytes, in place, and its CRC. */
static int resolve_part(part *p)
{
	uint8_t *out = (uint8_t *)p->d.marked;
	if (p->d.n_marked && tk__dpart_resolve(&p->d, p->win, p->win_len, 0, p->d.n_marked, out))
		return -1;
	p->crc = tk__crc32(0, out, p->d.n_marked);
	if (p->d.n_plain > p->d.plain_at)
		p->crc = tk__crc32(p->crc, p->d.plain + p->d.plain_at, p->d.n_plain - p->d.plain_at);
	return 0;
}

/* A thread's next job under the lock: a part to resolve, lowest first, else a
 * part to inflate. 0 when there is none. */
static int take_job(tk__ipar *P, part **out, int inflate_too)
{
	part *best = NULL;
	for (uint64_t i = P->head; i < P->valid; i++) {
		part *p = slot(P, i);
		if (p->state == S_RESOLVABLE) {
			best = p;
			break;
		}
	}
	if (best) {
		best->state = S_RESOLVING;
		*out = best;
		return 1;
	}
	if (inflate_too && P->next < P->head + P->R && P->next < P->limit) {
		part *p = slot(P, P->next);
		if (p->state != S_FREE)
			return 0;
		p->idx = P->next++;
		p->state = S_INFLATING;
		*out = p;
		return 2;
	}
	return 0;
}

/* Does a job taken by take_job (the lock let go of meanwhile). */
static void do_job(tk__ipar *P, tk__dscan *s, part *p, int job)
{
	pthread_mutex_unlock(&P->W.mu);
	int failed;
	if (job == 1) {
		failed = resolve_part(p);
	} else {
		p->found = p->skip = p->failed = p->final = 0;
		failed = inflate_part(P, s, p, 1, 0, p->idx ? NULL : (const uint8_t *)"", 0);
	}
	pthread_mutex_lock(&P->W.mu);
	if (failed)
		p->failed = 1;
	if (job == 2 && p->in_len < P->pin && p->idx + 1 < P->limit)
		P->limit = p->idx + 1; /* the input ends in this share: no part after it */
	p->state = job == 1 ? S_READY : S_INFLATED;
	tk__workers_done(&P->W);
}

/* The workers' step: a part to resolve, else (not the caller) one to inflate. */
static int step(void *owner, void *state)
{
	tk__ipar *P = owner;
	tk__dscan **s = state;
	part *p;
	int job = take_job(P, &p, s != &P->scan);
	if (job)
		do_job(P, *s, p, job);
	return job != 0;
}

static int scan_init(void *owner, void *state, unsigned i)
{
	(void)owner;
	(void)i;
	return !(*(tk__dscan **)state = tk__dscan_new());
}

static void scan_fini(void *owner, void *state)
{
	(void)owner;
	tk__dscan_free(*(tk__dscan **)state);
}

static const tk__workers_ops ops = {sizeof(tk__dscan *), scan_init, scan_fini, step};

tk__ipar *tk__ipar_start(tk__ipar_pread rd, void *ctx, uint64_t start, size_t share, unsigned threads)
{
	if (threads < 1)
		threads = 1;
	tk__ipar *P = calloc(1, sizeof *P);
	if (!P)
		return NULL;
	P->rd = rd;
	P->ctx = ctx;
	P->base = start;
	P->pin = tk__ipar_part_bytes ? tk__ipar_part_bytes : share ? share : 1;
	P->R = threads + 1; /* a part for each thread, and the one being given out */
	P->limit = UINT64_MAX;
	P->crc = (uint32_t)crc32(0, NULL, 0);
	P->in_pos = start;
	tk__workers_init(&P->W, &ops, P);
	P->ring = calloc(P->R, sizeof *P->ring);
	P->scan = tk__dscan_new();
	if (!P->ring || !P->scan || !tk__workers_start(&P->W, threads, "tk-inflate")) {
		tk__ipar_free(P);
		return NULL;
	}
	return P;
}

/* The window after part p (its output resolved at its end as far as the
 * last 32 KiB need), from the window before it (P->win): -1 where a marker
 * stands for a byte before the stream's start. */
static int next_window(tk__ipar *P, part *p)
{
	const tk__dpart *d = &p->d;
	size_t plain = d->n_plain - d->plain_at;
	uint8_t w[TK__DWIN];
	size_t k = 0;
	if (plain < TK__DWIN) {
		size_t want = TK__DWIN - plain;
		size_t from_m = d->n_marked < want ? d->n_marked : want;
		size_t from_w = want - from_m < P->win_len ? want - from_m : P->win_len;
		memcpy(w, P->win + P->win_len - from_w, from_w);
		k = from_w;
		if (from_m && tk__dpart_resolve(d, P->win, P->win_len, d->n_marked - from_m, d->n_marked, w + k))
			return -1;
		k += from_m;
		if (plain)
			memcpy(w + k, d->plain + d->plain_at, plain);
		k += plain;
	} else {
		memcpy(w, d->plain + d->n_plain - TK__DWIN, TK__DWIN);
		k = TK__DWIN;
	}
	memcpy(P->win, w, k);
	P->win_len = k;
	return 0;
}

/* Checks part `valid` under the lock (it is inflated): skipped, taken, inflated
 * again from where the part before ended, or failed; then hands it its
 * window to be resolved. */
static void check_part(tk__ipar *P)
{
	part *p = slot(P, P->valid);
	uint64_t share_end = (p->idx + 1) * P->pin * 8;
	P->valid++;
	if (p->failed && p->idx == 0) {
		P->stopped = 1; /* the stream's start does not inflate */
		return;
	}
	if (p->idx && P->expect >= share_end) {
		p->skip = 1; /* the part before ran past this share */
		p->state = S_READY;
		return;
	}
	if (p->idx && (!p->found || p->failed || p->start != P->expect)) {
		/* a start missed, or one that is not the stream's: from the end of the part before, the window known */
		__atomic_add_fetch(&tk__ipar_parts_redone, 1, __ATOMIC_RELAXED);
		pthread_mutex_unlock(&P->W.mu);
		p->failed = inflate_part(P, P->scan, p, 0, P->expect, P->win, P->win_len);
		pthread_mutex_lock(&P->W.mu);
		if (p->failed) {
			P->stopped = 1;
			return;
		}
	}
	memcpy(p->win, P->win, P->win_len);
	p->win_len = P->win_len;
	if (next_window(P, p)) {
		p->failed = P->stopped = 1;
		return;
	}
	P->expect = p->end;
	if (p->final)
		P->limit = P->valid; /* nothing after the final block */
	p->state = S_RESOLVABLE;
	tk__workers_wake(&P->W);
}

/* The trailer after the final block: its CRC-32 and length, as given out. */
static int trailer_ok(tk__ipar *P, const part *p)
{
	uint64_t at = P->base + (p->end + 7) / 8;
	unsigned char t[8];
	size_t got = 0;
	while (got < 8) {
		long n = P->rd(P->ctx, at + got, t + got, 8 - got);
		if (n <= 0)
			return 0;
		got += (size_t)n;
	}
	uint32_t crc = t[0] | (uint32_t)t[1] << 8 | (uint32_t)t[2] << 16 | (uint32_t)t[3] << 24;
	uint32_t len = t[4] | (uint32_t)t[5] << 8 | (uint32_t)t[6] << 16 | (uint32_t)t[7] << 24;
	if (crc != P->crc || len != (uint32_t)P->total)
		return 0;
	P->end_off = at + 8;
	return 1;
}

long tk__ipar_read(tk__ipar *P, unsigned char *dst, size_t cap)
{
	if (P->state)
		return P->state > 0 ? 0 : -1;
	size_t done = 0;
	pthread_mutex_lock(&P->W.mu);
	while (done < cap) {
		/* check the parts inflated, in order, as far as they go */
		while (!P->stopped && P->valid < P->next && P->valid < P->limit && slot(P, P->valid)->state == S_INFLATED)
			check_part(P);
		if (P->head >= P->limit) {
			P->state = -1; /* the input ended before the final block */
			break;
		}
		part *p = slot(P, P->head);
		if (P->head < P->valid && p->failed) {
			P->state = -1;
			break;
		}
		if (P->head < P->valid && p->state == S_READY) {
			if (p->skip) {
				p->state = S_FREE;
				P->head++;
				tk__workers_wake(&P->W);
				continue;
			}
			size_t n0 = p->d.n_marked, len = tk__dpart_len(&p->d);
			while (P->pos < len && done < cap) {
				const uint8_t *src;
				size_t k;
				if (P->pos < n0) {
					src = (const uint8_t *)p->d.marked + P->pos;
					k = n0 - P->pos;
				} else {
					src = p->d.plain + p->d.plain_at + (P->pos - n0);
					k = len - P->pos;
				}
				if (k > cap - done)
					k = cap - done;
				pthread_mutex_unlock(&P->W.mu);
				memcpy(dst + done, src, k);
				pthread_mutex_lock(&P->W.mu);
				done += k;
				P->pos += k;
			}
			if (P->pos < len)
				break;
			/* the part is given out */
			__atomic_add_fetch(&tk__ipar_parts_out, 1, __ATOMIC_RELAXED);
			P->crc = (uint32_t)crc32_combine(P->crc, p->crc, (z_off_t)len);
			P->total += len;
			P->in_pos = P->base + p->end / 8;
			P->pos = 0;
			if (p->final) {
				P->state = trailer_ok(P, p) ? 1 : -1;
				p->state = S_FREE;
				P->head++;
				break;
			}
			p->state = S_FREE;
			P->head++;
			tk__workers_wake(&P->W);
			continue;
		}
		/* waiting: resolve a part meanwhile, else sleep */
		tk__workers_help(&P->W, &P->scan);
	}
	pthread_mutex_unlock(&P->W.mu);
	if (done)
		return (long)done;
	return P->state > 0 ? 0 : -1;
}

uint64_t tk__ipar_end(const tk__ipar *P)
{
	return P->end_off;
}

uint64_t tk__ipar_in_pos(const tk__ipar *P)
{
	return P->in_pos;
}

void tk__ipar_free(tk__ipar *P)
{
	if (!P)
		return;
	tk__workers_free(&P->W);
	if (P->ring)
		for (unsigned i = 0; i < P->R; i++) {
			tk__dpart_free(&P->ring[i].d);
			free(P->ring[i].in);
		}
	free(P->ring);
	tk__dscan_free(P->scan);
	free(P);
}
