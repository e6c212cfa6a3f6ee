/* sort.c: the bounded-memory event sorter: sorted runs in memory, spilled to files, k-way merged; fixed records through it. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <unistd.h>

#include "sort_int.h"

/* Record layout in memory (host byte order); spilled runs use the compact
 * format of sort_run.c:
 *
 *   u32 len     bytes that follow this field
 *   u32 has     TK_HAS_* bits
 *   i64 ts, i64 dur
 *   u64 tag
 *   u8  ph, u8 pid kind, u8 tid kind, u8 id kind
 *   per id (pid, tid, id): TK_ID_INT -> i64; TK_ID_STR -> u32 n, n bytes, NUL
 *   name, cat, args, extra: u32 n+1 (0 = absent), then n bytes and a NUL
 *
 * Strings keep their NUL so that a decoded event points straight into the
 * record. The fixed part ends at REC_FIXED. */
#define REC_FIXED 36
#define CHUNK_BYTES (4u << 20) /* at most; budget / 16 below 64 MiB */
#define fail(s, ...) tk__err_set(tk__sort_err(s), __VA_ARGS__)

static int on_bg_thread(const tk_sorter *s);

size_t tk__sorter_share(size_t total)
{
	size_t reserve = total / 8;
	if (reserve > (32u << 20))
		reserve = 32u << 20;
	return total - reserve;
}

tk__err *tk__sort_err(tk_sorter *s)
{
	return on_bg_thread(s) ? &s->bg_err : &s->err;
}

/* ---- record encoding ---- */

static size_t sv_rec_size(tk_sv v)
{
	return 4 + (v.ptr ? v.len + 1 : 0);
}

static size_t id_rec_size(const tk_id *id)
{
	if (id->kind == TK_ID_INT)
		return 8;
	if (id->kind == TK_ID_STR)
		return 4 + id->str.len + 1;
	return 0;
}

static size_t rec_size(const tk_event *ev)
{
	return REC_FIXED + id_rec_size(&ev->pid) + id_rec_size(&ev->tid) + id_rec_size(&ev->id) +
	       sv_rec_size(ev->name) + sv_rec_size(ev->cat) + sv_rec_size(ev->args) +
	       sv_rec_size(ev->extra);
}

static char *put_u32(char *p, uint32_t v)
{
	memcpy(p, &v, 4);
	return p + 4;
}

static char *put_bytes(char *p, const char *s, size_t n)
{
	if (n)
		memcpy(p, s, n);
	p[n] = 0;
	return p + n + 1;
}

static char *put_sv(char *p, tk_sv v)
{
	if (!v.ptr)
		return put_u32(p, 0);
	p = put_u32(p, (uint32_t)v.len + 1);
	return put_bytes(p, v.ptr, v.len);
}

static char *put_id(char *p, const tk_id *id)
{
	if (id->kind == TK_ID_INT) {
		memcpy(p, &id->num, 8);
		return p + 8;
	}
	if (id->kind == TK_ID_STR) {
		p = put_u32(p, (uint32_t)id->str.len);
		return put_bytes(p, id->str.ptr ? id->str.ptr : "", id->str.len);
	}
	return p;
}

static void rec_encode(char *p, size_t size, const tk_event *ev, uint64_t tag)
{
	uint32_t has = ev->has;
	p = put_u32(p, (uint32_t)(size - 4));
	p = put_u32(p, has);
	memcpy(p, &ev->ts, 8);
	memcpy(p + 8, &ev->dur, 8);
	memcpy(p + 16, &tag, 8);
	p += 24;
	*p++ = ev->ph;
	*p++ = (char)ev->pid.kind;
	*p++ = (char)ev->tid.kind;
	*p++ = (char)ev->id.kind;
	p = put_id(p, &ev->pid);
	p = put_id(p, &ev->tid);
	p = put_id(p, &ev->id);
	p = put_sv(p, ev->name);
	p = put_sv(p, ev->cat);
	p = put_sv(p, ev->args);
	put_sv(p, ev->extra);
}

static uint32_t get_u32(const char *p)
{
	uint32_t v;
	memcpy(&v, p, 4);
	return v;
}

static const char *get_sv(const char *p, tk_sv *v)
{
	uint32_t n = get_u32(p);
	p += 4;
	if (!n) {
		*v = (tk_sv){NULL, 0};
		return p;
	}
	*v = (tk_sv){p, n - 1};
	return p + n;
}

static const char *get_id(const char *p, int kind, tk_id *id)
{
	memset(id, 0, sizeof *id);
	id->kind = kind;
	if (kind == TK_ID_INT) {
		memcpy(&id->num, p, 8);
		return p + 8;
	}
	if (kind == TK_ID_STR) {
		uint32_t n = get_u32(p);
		id->str = (tk_sv){p + 4, n};
		return p + 4 + n + 1;
	}
	return p;
}

void tk__sort_rec_decode(const char *p, tk_event *ev, uint64_t *tag)
{
	tk__event_zero(ev);
	ev->has = get_u32(p + 4);
	memcpy(&ev->ts, p + 8, 8);
	memcpy(&ev->dur, p + 16, 8);
	memcpy(tag, p + 24, 8);
	ev->ph = p[32];
	int kp = (unsigned char)p[33], kt = (unsigned char)p[34], ki = (unsigned char)p[35];
	p += REC_FIXED;
	p = get_id(p, kp, &ev->pid);
	p = get_id(p, kt, &ev->tid);
	p = get_id(p, ki, &ev->id);
	p = get_sv(p, &ev->name);
	p = get_sv(p, &ev->cat);
	p = get_sv(p, &ev->args);
	get_sv(p, &ev->extra);
}

/* ---- the in-memory buffers ---- */

/* Each half of the budget holds its records and entries; entries are
 * sorted with a scratch array of the same size. */
static size_t mem_used(const tk__sortbuf *b)
{
	return b->chunk_bytes + b->ents_cap * sizeof(tk__sort_entry) + b->n_ents * sizeof(tk__sort_entry);
}

static size_t chunk_size(const tk_sorter *s)
{
	return s->budget / 16 < CHUNK_BYTES ? s->budget / 16 : CHUNK_BYTES;
}

static char *mem_alloc(const tk_sorter *s, tk__sortbuf *b, size_t n)
{
	if (b->cur && b->cur->cap - b->cur->used >= n) {
		char *p = b->cur->data + b->cur->used;
		b->cur->used += n;
		return p;
	}
	size_t cap = chunk_size(s);
	tk__sort_chunk *c = NULL;
	if (b->spare && n <= b->spare->cap) { /* a chunk of an earlier run, its pages already mapped */
		c = b->spare;
		b->spare = c->next;
		cap = c->cap;
	} else {
		if (cap < n)
			cap = n;
		if (!(c = malloc(sizeof *c + cap)))
			return NULL;
	}
	c->next = NULL;
	c->used = n;
	c->cap = cap;
	if (b->cur)
		b->cur->next = c;
	else
		b->chunks = c;
	b->cur = c;
	b->chunk_bytes += sizeof *c + cap;
	return c->data;
}

/* Empties a buffer; `keep`: its chunks of the usual size stay for the next
 * run (freeing and mapping them again costs a page fault per page). */
static void mem_clear(const tk_sorter *s, tk__sortbuf *b, int keep)
{
	size_t usual = chunk_size(s);
	for (tk__sort_chunk *c = b->chunks, *n; c; c = n) {
		n = c->next;
		if (keep && c->cap == usual) {
			c->next = b->spare;
			b->spare = c;
		} else {
			free(c);
		}
	}
	for (tk__sort_chunk *c = keep ? NULL : b->spare, *n; c; c = n) {
		n = c->next;
		free(c);
	}
	if (!keep)
		b->spare = NULL;
	b->chunks = b->cur = NULL;
	b->chunk_bytes = 0;
	b->n_ents = b->n_no_ts = 0;
}

static void buf_free(const tk_sorter *s, tk__sortbuf *b)
{
	mem_clear(s, b, 0);
	free(b->ents);
	free(b->scratch);
	memset(b, 0, sizeof *b);
}

/* Stable LSD radix sort on the key; bytes where every key agrees are skipped
 * (epoch timestamps share their high bytes). Events without ts were already
 * moved to the front and are left alone. */
static int sort_entries(tk_sorter *s, tk__sortbuf *b)
{
	size_t lo = b->n_no_ts, n = b->n_ents;
	tk__sort_entry *a = b->ents;
	if (n - lo < 2)
		return 0;
	if (b->scratch_cap < n - lo) {
		free(b->scratch);
		b->scratch_cap = 0;
		if (!(b->scratch = malloc((n - lo) * sizeof *b->scratch)))
			return fail(s, TK_ERR_NOMEM, "sorter: out of memory sorting %zu events", n - lo);
		b->scratch_cap = n - lo;
	}
	tk__sort_entry *src = a + lo, *tmp = b->scratch, *dst = tmp;
	size_t m = n - lo;
	for (int shift = 0; shift < 64; shift += 8) {
		size_t cnt[256] = {0};
		for (size_t i = 0; i < m; i++)
			cnt[(src[i].key >> shift) & 255]++;
		if (cnt[(src[0].key >> shift) & 255] == m)
			continue;
		size_t sum = 0;
		for (int k = 0; k < 256; k++) {
			size_t c = cnt[k];
			cnt[k] = sum;
			sum += c;
		}
		for (size_t i = 0; i < m; i++)
			dst[cnt[(src[i].key >> shift) & 255]++] = src[i];
		tk__sort_entry *t = src;
		src = dst;
		dst = t;
	}
	if (src != a + lo)
		memcpy(a + lo, src, m * sizeof *src);
	return 0;
}

/* Move the events without ts to the front, keeping the order on both sides. */
static int partition_no_ts(tk_sorter *s, tk__sortbuf *b)
{
	size_t n_no = b->n_no_ts;
	if (!n_no || n_no == b->n_ents)
		return 0;
	tk__sort_entry *tmp = malloc(b->n_ents * sizeof *tmp);
	if (!tmp)
		return fail(s, TK_ERR_NOMEM, "sorter: out of memory");
	size_t lo = 0, hi = n_no;
	for (size_t i = 0; i < b->n_ents; i++) {
		int has = (get_u32(b->ents[i].rec + 4) & TK_HAS_TS) != 0;
		tmp[has ? hi++ : lo++] = b->ents[i];
	}
	memcpy(b->ents, tmp, b->n_ents * sizeof *tmp);
	free(tmp);
	return 0;
}

static int sort_memory(tk_sorter *s, tk__sortbuf *b)
{
	int rc = partition_no_ts(s, b);
	return rc ? rc : sort_entries(s, b);
}

/* Sort a buffer and write it out as one run. */
static int spill(tk_sorter *s, tk__sortbuf *b)
{
	if (!b->n_ents)
		return 0;
	int rc = sort_memory(s, b);
	if (!rc)
		rc = tk__sort_write_run(s, b);
	mem_clear(s, b, !s->finished);
	s->spilled++;
	return rc;
}

/* ---- the spill thread ---- */

/* Errors of the thread go to s->bg_err (see tk__sort_err), and reach the
 * caller when it next waits for the thread. */
static int on_bg_thread(const tk_sorter *s)
{
	return s->bg.n && pthread_equal(pthread_self(), s->bg.th[0].th);
}

/* The thread's step: the half handed to it sorted and spilled. */
static int bg_step(void *owner, void *state)
{
	tk_sorter *s = owner;
	(void)state;
	if (!s->bg_busy)
		return 0;
	tk__sortbuf *b = &s->buf[!s->fill];
	int failed = s->bg_err.code;
	pthread_mutex_unlock(&s->bg.mu);
	if (!failed)
		spill(s, b);
	else
		mem_clear(s, b, 1);
	pthread_mutex_lock(&s->bg.mu);
	s->bg_busy = 0;
	tk__workers_done(&s->bg);
	return 1;
}

static const tk__workers_ops bg_ops = {0, NULL, NULL, bg_step};

/* Waits until the thread is idle; its error, if any, becomes the sorter's. */
static int bg_wait(tk_sorter *s)
{
	if (!s->bg.n)
		return 0;
	pthread_mutex_lock(&s->bg.mu);
	while (s->bg_busy)
		tk__workers_wait(&s->bg);
	int rc = s->bg_err.code;
	pthread_mutex_unlock(&s->bg.mu);
	if (rc && !s->err.code) {
		tk__err_copy(&s->err, &s->bg_err);
	}
	return rc;
}

static void bg_stop(tk_sorter *s)
{
	bg_wait(s);
	tk__workers_stop(&s->bg);
}

/* The full half goes to the thread (started the first time), and adding
 * goes on in the other half once the thread is done with it. Without a
 * thread the half is spilled here. */
static int spill_half(tk_sorter *s)
{
	int rc = bg_wait(s);
	if (rc)
		return rc;
	if (!s->bg.n)
		tk__workers_start(&s->bg, 1, "tk-sort");
	if (!s->bg.n)
		return spill(s, &s->buf[s->fill]);
	pthread_mutex_lock(&s->bg.mu);
	s->fill = !s->fill;
	s->bg_busy = 1;
	tk__workers_wake(&s->bg);
	pthread_mutex_unlock(&s->bg.mu);
	return 0;
}

/* ---- public API ---- */

int tk_sorter_new(tk_sorter **out, const tk_sorter_opts *opts)
{
	if (!out)
		return TK_ERR_ARG;
	tk_sorter *s = calloc(1, sizeof *s);
	*out = s;
	if (!s)
		return TK_ERR_NOMEM;
	tk__workers_init(&s->bg, &bg_ops, s);
	s->budget = opts && opts->memory_bytes ? opts->memory_bytes : (size_t)256 << 20;
	s->tmpdir = opts ? opts->tmpdir : NULL;
	if (s->tmpdir && !(s->tmpdir = tk__strdup(s->tmpdir)))
		return fail(s, TK_ERR_NOMEM, "sorter: out of memory");
	s->m.last = SIZE_MAX;
	/* while merging, each run holds a read buffer and its dictionary; the
	 * runs merged at once take at most half the budget */
	s->dict_cap = s->budget / 64;
	if (s->dict_cap < DICT_MIN)
		s->dict_cap = DICT_MIN;
	if (s->dict_cap > DICT_MAX)
		s->dict_cap = DICT_MAX;
	s->fanin = s->budget / 2 / (RUN_BUF + s->dict_cap);
	if (s->fanin < 2)
		s->fanin = 2;
	if (s->fanin > MAX_FANIN)
		s->fanin = MAX_FANIN;
	return 0;
}

static int grow_entries(tk_sorter *s, tk__sortbuf *b)
{
	if (tk__grow(&b->ents, &b->ents_cap, b->ents_cap + 1, sizeof *b->ents, 64))
		return fail(s, TK_ERR_NOMEM, "sorter: out of memory");
	return 0;
}

int tk_sorter_add(tk_sorter *s, const tk_event *ev, uint64_t tag)
{
	if (!s || !ev)
		return TK_ERR_ARG;
	if (s->err.code)
		return s->err.code;
	if (s->finished)
		return fail(s, TK_ERR_ARG, "sorter: event added after tk_sorter_finish()");
	size_t n = rec_size(ev);
	if (n > UINT32_MAX - 8)
		return fail(s, TK_ERR_LIMIT, "sorter: event of %zu bytes is too large", n);
	/* spill when this event would push its half past half the budget */
	tk__sortbuf *b = &s->buf[s->fill];
	size_t extra = n + 2 * sizeof(tk__sort_entry) + (b->n_ents == b->ents_cap ? b->ents_cap * sizeof(tk__sort_entry) : 0);
	if (b->n_ents && mem_used(b) + extra > s->budget / 2) {
		int rc = spill_half(s);
		if (rc)
			return rc;
		b = &s->buf[s->fill];
	}
	if (b->n_ents == b->ents_cap && grow_entries(s, b))
		return s->err.code;
	char *rec = mem_alloc(s, b, n);
	if (!rec)
		return fail(s, TK_ERR_NOMEM, "sorter: out of memory buffering an event of %zu bytes", n);
	rec_encode(rec, n, ev, tag);
	b->ents[b->n_ents++] = (tk__sort_entry){(ev->has & TK_HAS_TS) ? tk__sort_key(ev->ts) : 0, rec};
	b->n_no_ts += !(ev->has & TK_HAS_TS);
	return 0;
}

int tk_sorter_finish(tk_sorter *s)
{
	if (!s)
		return TK_ERR_ARG;
	if (s->err.code)
		return s->err.code;
	if (s->finished)
		return 0;
	int rc = bg_wait(s);
	bg_stop(s);
	s->finished = 1;
	if (rc)
		return rc;
	tk__sortbuf *b = &s->buf[s->fill];
	buf_free(s, &s->buf[!s->fill]);
	if (!s->n_runs) /* fast path: everything fits in memory */
		return sort_memory(s, b);
	/* the in-memory tail becomes the last run so that the merge runs within
	 * the budget; then at most fanin runs are merged at once */
	rc = spill(s, b);
	buf_free(s, b);
	if (!rc)
		rc = tk__sort_reduce_runs(s);
	if (!rc)
		rc = tk__sort_merger_open(s, &s->m, 0, s->n_runs);
	return rc;
}

int tk_sorter_next(tk_sorter *s, const tk_event **ev, uint64_t *tag)
{
	if (!s || !ev)
		return TK_ERR_ARG;
	if (s->err.code)
		return s->err.code;
	if (!s->finished)
		return fail(s, TK_ERR_ARG, "sorter: tk_sorter_next() before tk_sorter_finish()");
	uint64_t t;
	if (s->n_runs) {
		int rc = tk__sort_merger_next(s, &s->m, ev, &t);
		if (rc)
			return rc;
	} else {
		const tk__sortbuf *b = &s->buf[s->fill];
		if (s->mem_pos >= b->n_ents)
			return TK_EOF;
		tk__sort_rec_decode(b->ents[s->mem_pos++].rec, &s->ev, &t);
		*ev = &s->ev;
	}
	if (tag)
		*tag = t;
	return 0;
}

const char *tk_sorter_error(const tk_sorter *s)
{
	return s ? s->err.msg : "no sorter";
}

size_t tk_sorter_runs(const tk_sorter *s)
{
	return s ? s->spilled : 0;
}

void tk_sorter_free(tk_sorter *s)
{
	if (!s)
		return;
	bg_stop(s);
	tk__sort_merger_free(&s->m);
	buf_free(s, &s->buf[0]);
	buf_free(s, &s->buf[1]);
	if (s->runs)
		for (size_t i = 0; i < s->n_runs; i++)
			if (s->runs[i]) {
				unlink(s->runs[i]);
				free(s->runs[i]);
			}
	free(s->runs);
	tk__tmp_dir_free(s->dir, s->dir_hold);
	free((char *)s->tmpdir);
	tk__workers_free(&s->bg);
	free(s);
}

int tk__sorter_add_rec(tk_sorter *s, int64_t key, const void *rec, size_t n, uint64_t tag)
{
	tk_event e;
	memset(&e, 0, sizeof e);
	e.ph = 'R';
	e.has = TK_HAS_TS;
	e.ts = key;
	e.name = (tk_sv){rec, n};
	return tk_sorter_add(s, &e, tag);
}

int tk__sorter_next_rec(tk_sorter *s, int64_t *key, void *rec, size_t n, uint64_t *tag)
{
	const tk_event *ev;
	uint64_t t;
	int rc = tk_sorter_next(s, &ev, &t);
	if (rc == TK_EOF)
		return 0;
	if (rc)
		return rc < 0 ? rc : TK_ERR_IO;
	if (n) {
		memset(rec, 0, n);
		memcpy(rec, ev->name.ptr, ev->name.len < n ? ev->name.len : n);
	}
	*key = ev->ts;
	if (tag)
		*tag = t;
	return 1;
}
