/* sort.c: the bounded-memory event sorter: sorted runs in memory, spilled to files, k-way merged. */
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
#define CHUNK_BYTES (4u << 20)
#define fail tk__sort_fail

int tk__sort_fail(tk_sorter *s, int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	tk__fmt_msg(s->err, sizeof s->err, fmt, ap);
	va_end(ap);
	s->failed = code;
	return code;
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
	memset(ev, 0, sizeof *ev);
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

/* ---- the in-memory buffer ---- */

static size_t mem_used(const tk_sorter *s)
{
	/* entries are sorted with a scratch array of the same size */
	return s->chunk_bytes + s->ents_cap * sizeof(entry) + s->n_ents * sizeof(entry);
}

static char *mem_alloc(tk_sorter *s, size_t n)
{
	if (s->cur && s->cur->cap - s->cur->used >= n) {
		char *p = s->cur->data + s->cur->used;
		s->cur->used += n;
		return p;
	}
	size_t cap = s->budget / 8 < CHUNK_BYTES ? s->budget / 8 : CHUNK_BYTES;
	chunk *c = NULL;
	if (s->spare && n <= s->spare->cap) { /* a chunk of an earlier run, its pages already mapped */
		c = s->spare;
		s->spare = c->next;
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
	if (s->cur)
		s->cur->next = c;
	else
		s->chunks = c;
	s->cur = c;
	s->chunk_bytes += sizeof *c + cap;
	return c->data;
}

/* Empties the buffer; `keep`: its chunks of the usual size stay for the
 * next run (freeing and mapping them again costs a page fault per page). */
static void mem_clear(tk_sorter *s, int keep)
{
	size_t usual = s->budget / 8 < CHUNK_BYTES ? s->budget / 8 : CHUNK_BYTES;
	for (chunk *c = s->chunks, *n; c; c = n) {
		n = c->next;
		if (keep && c->cap == usual) {
			c->next = s->spare;
			s->spare = c;
		} else {
			free(c);
		}
	}
	for (chunk *c = keep ? NULL : s->spare, *n; c; c = n) {
		n = c->next;
		free(c);
	}
	if (!keep)
		s->spare = NULL;
	s->chunks = s->cur = NULL;
	s->chunk_bytes = 0;
	s->n_ents = s->n_no_ts = 0;
}

/* Stable LSD radix sort on the key; bytes where every key agrees are skipped
 * (epoch timestamps share their high bytes). Events without ts were already
 * moved to the front and are left alone. */
static int sort_entries(tk_sorter *s)
{
	size_t lo = s->n_no_ts, n = s->n_ents;
	entry *a = s->ents;
	if (n - lo < 2)
		return 0;
	if (s->scratch_cap < n - lo) {
		free(s->scratch);
		s->scratch_cap = 0;
		if (!(s->scratch = malloc((n - lo) * sizeof *s->scratch)))
			return fail(s, TK_ERR_NOMEM, "sorter: out of memory sorting %zu events", n - lo);
		s->scratch_cap = n - lo;
	}
	entry *src = a + lo, *tmp = s->scratch, *dst = tmp;
	size_t m = n - lo;
	for (int shift = 0; shift < 64; shift += 8) {
		size_t cnt[256] = {0};
		for (size_t i = 0; i < m; i++)
			cnt[(src[i].key >> shift) & 255]++;
		if (cnt[(src[0].key >> shift) & 255] == m)
			continue;
		size_t sum = 0;
		for (int b = 0; b < 256; b++) {
			size_t c = cnt[b];
			cnt[b] = sum;
			sum += c;
		}
		for (size_t i = 0; i < m; i++)
			dst[cnt[(src[i].key >> shift) & 255]++] = src[i];
		entry *t = src;
		src = dst;
		dst = t;
	}
	if (src != a + lo)
		memcpy(a + lo, src, m * sizeof *src);
	return 0;
}

/* Move the events without ts to the front, keeping the order on both sides. */
static int partition_no_ts(tk_sorter *s)
{
	size_t n_no = s->n_no_ts;
	if (!n_no || n_no == s->n_ents)
		return 0;
	entry *tmp = malloc(s->n_ents * sizeof *tmp);
	if (!tmp)
		return fail(s, TK_ERR_NOMEM, "sorter: out of memory");
	size_t a = 0, b = n_no;
	for (size_t i = 0; i < s->n_ents; i++) {
		int has = (get_u32(s->ents[i].rec + 4) & TK_HAS_TS) != 0;
		tmp[has ? b++ : a++] = s->ents[i];
	}
	memcpy(s->ents, tmp, s->n_ents * sizeof *tmp);
	free(tmp);
	return 0;
}

static int sort_memory(tk_sorter *s)
{
	int rc = partition_no_ts(s);
	return rc ? rc : sort_entries(s);
}

/* Sort what is buffered and write it out as one run. */
static int spill(tk_sorter *s)
{
	if (!s->n_ents)
		return 0;
	int rc = sort_memory(s);
	if (!rc)
		rc = tk__sort_write_run(s);
	mem_clear(s, !s->finished);
	s->spilled++;
	return rc;
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

static int grow_entries(tk_sorter *s)
{
	size_t cap = s->ents_cap ? s->ents_cap * 2 : 64;
	entry *e = realloc(s->ents, cap * sizeof *e);
	if (!e)
		return fail(s, TK_ERR_NOMEM, "sorter: out of memory");
	s->ents = e;
	s->ents_cap = cap;
	return 0;
}

int tk_sorter_add(tk_sorter *s, const tk_event *ev, uint64_t tag)
{
	if (!s || !ev)
		return TK_ERR_ARG;
	if (s->failed)
		return s->failed;
	if (s->finished)
		return fail(s, TK_ERR_ARG, "sorter: event added after tk_sorter_finish()");
	size_t n = rec_size(ev);
	if (n > UINT32_MAX - 8)
		return fail(s, TK_ERR_LIMIT, "sorter: event of %zu bytes is too large", n);
	/* spill when this event would push the buffer past the budget */
	size_t extra = n + 2 * sizeof(entry) + (s->n_ents == s->ents_cap ? s->ents_cap * sizeof(entry) : 0);
	if (s->n_ents && mem_used(s) + extra > s->budget) {
		int rc = spill(s);
		if (rc)
			return rc;
	}
	if (s->n_ents == s->ents_cap && grow_entries(s))
		return s->failed;
	char *rec = mem_alloc(s, n);
	if (!rec)
		return fail(s, TK_ERR_NOMEM, "sorter: out of memory buffering an event of %zu bytes", n);
	rec_encode(rec, n, ev, tag);
	s->ents[s->n_ents++] = (entry){(ev->has & TK_HAS_TS) ? tk__sort_key(ev->ts) : 0, rec};
	s->n_no_ts += !(ev->has & TK_HAS_TS);
	return 0;
}

int tk_sorter_finish(tk_sorter *s)
{
	if (!s)
		return TK_ERR_ARG;
	if (s->failed)
		return s->failed;
	if (s->finished)
		return 0;
	s->finished = 1;
	if (!s->n_runs) /* fast path: everything fits in memory */
		return sort_memory(s);
	/* the in-memory tail becomes the last run so that the merge runs within
	 * the budget; then at most fanin runs are merged at once */
	int rc = spill(s);
	free(s->ents);
	s->ents = NULL;
	s->ents_cap = 0;
	free(s->scratch);
	s->scratch = NULL;
	s->scratch_cap = 0;
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
	if (s->failed)
		return s->failed;
	if (!s->finished)
		return fail(s, TK_ERR_ARG, "sorter: tk_sorter_next() before tk_sorter_finish()");
	uint64_t t;
	if (s->n_runs) {
		int rc = tk__sort_merger_next(s, &s->m, ev, &t);
		if (rc)
			return rc;
	} else {
		if (s->mem_pos >= s->n_ents)
			return TK_EOF;
		tk__sort_rec_decode(s->ents[s->mem_pos++].rec, &s->ev, &t);
		*ev = &s->ev;
	}
	if (tag)
		*tag = t;
	return 0;
}

const char *tk_sorter_error(const tk_sorter *s)
{
	return s ? s->err : "no sorter";
}

size_t tk_sorter_runs(const tk_sorter *s)
{
	return s ? s->spilled : 0;
}

void tk_sorter_free(tk_sorter *s)
{
	if (!s)
		return;
	tk__sort_merger_free(&s->m);
	mem_clear(s, 0);
	free(s->ents);
	free(s->scratch);
	if (s->runs)
		for (size_t i = 0; i < s->n_runs; i++)
			if (s->runs[i]) {
				unlink(s->runs[i]);
				free(s->runs[i]);
			}
	free(s->runs);
	if (s->dir) {
		rmdir(s->dir);
		free(s->dir);
	}
	free((char *)s->tmpdir);
	free(s);
}
