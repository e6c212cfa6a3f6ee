/* sort.c: the bounded-memory event sorter: sorted runs in memory, spilled to files, k-way merged. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"
#include "tracekit/sort.h"

/* Record layout, the same in memory and in run files (host byte order; the
 * files never leave the process that wrote them):
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
#define RUN_BUF (64u << 10)   /* read buffer per run while merging */
#define WRITE_BUF (1u << 20)  /* write buffer while spilling */
#define MAX_FANIN 256         /* runs merged at once; more need intermediate passes */
#define CHUNK_BYTES (4u << 20)

typedef struct entry {
	uint64_t key; /* ts mapped to an unsigned order */
	char *rec;
} entry;

typedef struct chunk {
	struct chunk *next;
	size_t used, cap;
	char data[];
} chunk;

/* One run being read back during a merge. */
typedef struct run_rd {
	int fd;
	char *buf;
	size_t cap, pos, end; /* buf[pos..end) unread */
	char *rec;            /* current record (in buf), NULL at end */
	int has_ts;
	uint64_t key;
} run_rd;

typedef struct merger {
	run_rd *rd;
	size_t n;
	size_t *heap; /* indices into rd */
	size_t n_heap;
	size_t last; /* run whose record was returned last; SIZE_MAX if none */
} merger;

struct tk_sorter {
	size_t budget;
	char *dir; /* private temporary directory, NULL until the first spill */
	const char *tmpdir;

	chunk *chunks, *cur;
	size_t chunk_bytes;
	entry *ents;
	size_t n_ents, ents_cap;

	char **runs; /* run file paths, in the order of their events */
	size_t n_runs, runs_cap, run_seq, spilled;

	int finished;
	size_t mem_pos; /* fast path: next in-memory entry */
	merger m;
	tk_event ev;
	int failed;
	char err[TK__ERRLEN];
};

static int fail(tk_sorter *s, int code, const char *fmt, ...) TK__PRINTF(3, 4);
static int fail(tk_sorter *s, int code, const char *fmt, ...)
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

static void rec_decode(const char *p, tk_event *ev, uint64_t *tag)
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

/* Order key: events without ts before all others (they carry has_ts 0 and
 * compare by input order alone), then ts as an unsigned number. */
static uint64_t ts_key(int64_t ts)
{
	return (uint64_t)ts ^ (1ull << 63);
}

static void rec_key(const char *rec, int *has_ts, uint64_t *key)
{
	int64_t ts;
	memcpy(&ts, rec + 8, 8);
	*has_ts = (get_u32(rec + 4) & TK_HAS_TS) != 0;
	*key = *has_ts ? ts_key(ts) : 0;
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
	if (cap < n)
		cap = n;
	chunk *c = malloc(sizeof *c + cap);
	if (!c)
		return NULL;
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

static void mem_clear(tk_sorter *s)
{
	for (chunk *c = s->chunks, *n; c; c = n) {
		n = c->next;
		free(c);
	}
	s->chunks = s->cur = NULL;
	s->chunk_bytes = 0;
	s->n_ents = 0;
}

/* Stable LSD radix sort on the key; bytes where every key agrees are skipped
 * (epoch timestamps share their high bytes). Events without ts were already
 * moved to the front and are left alone. */
static int sort_entries(tk_sorter *s)
{
	size_t lo = 0, n = s->n_ents;
	entry *a = s->ents;
	while (lo < n && a[lo].key == 0 && !(get_u32(a[lo].rec + 4) & TK_HAS_TS))
		lo++;
	if (n - lo < 2)
		return 0;
	entry *src = a + lo, *tmp = malloc((n - lo) * sizeof *tmp), *dst = tmp;
	if (!tmp)
		return fail(s, TK_ERR_NOMEM, "sorter: out of memory sorting %zu events", n - lo);
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
	free(tmp);
	return 0;
}

/* Move the events without ts to the front, keeping the order on both sides. */
static int partition_no_ts(tk_sorter *s)
{
	size_t n_no = 0;
	for (size_t i = 0; i < s->n_ents; i++)
		n_no += !(get_u32(s->ents[i].rec + 4) & TK_HAS_TS);
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

/* ---- run files ---- */

static int make_dir(tk_sorter *s)
{
	if (s->dir)
		return 0;
	const char *base = s->tmpdir;
	if (!base || !*base)
		base = getenv("TMPDIR");
	if (!base || !*base)
		base = "/tmp";
	size_t n = strlen(base) + 32;
	s->dir = malloc(n);
	if (!s->dir)
		return fail(s, TK_ERR_NOMEM, "sorter: out of memory");
	snprintf(s->dir, n, "%s/tksort-XXXXXX", base);
	if (!mkdtemp(s->dir)) {
		int e = errno;
		fail(s, TK_ERR_IO, "sorter: cannot create a temporary directory in %s: %s", base,
		     strerror(e));
		free(s->dir);
		s->dir = NULL;
		return s->failed;
	}
	return 0;
}

/* Create a new, empty run file for writing. */
static int run_create(tk_sorter *s, char **path_out, int *fd_out)
{
	int rc = make_dir(s);
	if (rc)
		return rc;
	size_t n = strlen(s->dir) + 32;
	char *path = malloc(n);
	if (!path)
		return fail(s, TK_ERR_NOMEM, "sorter: out of memory");
	snprintf(path, n, "%s/run-%06zu", s->dir, s->run_seq++);
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0) {
		int e = errno;
		fail(s, TK_ERR_IO, "sorter: cannot create %s: %s", path, strerror(e));
		free(path);
		return s->failed;
	}
	*path_out = path;
	*fd_out = fd;
	return 0;
}

static int write_all(tk_sorter *s, int fd, const char *path, const char *p, size_t n)
{
	while (n) {
		ssize_t k = write(fd, p, n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return fail(s, TK_ERR_IO, "sorter: cannot write %s: %s", path,
			            k < 0 ? strerror(errno) : "short write");
		p += k;
		n -= (size_t)k;
	}
	return 0;
}

/* Buffered record output to a run file. */
typedef struct run_wr {
	int fd;
	char *path;
	tk__buf b;
} run_wr;

static int wr_put(tk_sorter *s, run_wr *w, const char *rec)
{
	size_t n = get_u32(rec) + 4;
	if (w->b.len + n > WRITE_BUF && w->b.len) {
		if (write_all(s, w->fd, w->path, w->b.p, w->b.len))
			return s->failed;
		w->b.len = 0;
	}
	if (n >= WRITE_BUF)
		return write_all(s, w->fd, w->path, rec, n);
	if (tk__buf_append(&w->b, rec, n))
		return fail(s, TK_ERR_NOMEM, "sorter: out of memory");
	return 0;
}

static int wr_close(tk_sorter *s, run_wr *w)
{
	int rc = 0;
	if (w->b.len)
		rc = write_all(s, w->fd, w->path, w->b.p, w->b.len);
	if (close(w->fd) && !rc)
		rc = fail(s, TK_ERR_IO, "sorter: cannot write %s: %s", w->path, strerror(errno));
	tk__buf_free(&w->b);
	return rc;
}

static int add_run(tk_sorter *s, char *path)
{
	if (s->n_runs == s->runs_cap) {
		size_t cap = s->runs_cap ? s->runs_cap * 2 : 16;
		char **r = realloc(s->runs, cap * sizeof *r);
		if (!r)
			return fail(s, TK_ERR_NOMEM, "sorter: out of memory");
		s->runs = r;
		s->runs_cap = cap;
	}
	s->runs[s->n_runs++] = path;
	return 0;
}

/* Sort what is buffered and write it out as one run. */
static int spill(tk_sorter *s)
{
	if (!s->n_ents)
		return 0;
	int rc = sort_memory(s);
	run_wr w = {0};
	if (!rc)
		rc = run_create(s, &w.path, &w.fd);
	if (rc)
		return rc;
	for (size_t i = 0; i < s->n_ents && !rc; i++)
		rc = wr_put(s, &w, s->ents[i].rec);
	int rc2 = wr_close(s, &w);
	if (!rc)
		rc = rc2;
	if (!rc)
		rc = add_run(s, w.path);
	else {
		unlink(w.path);
		free(w.path);
	}
	mem_clear(s);
	s->spilled++;
	return rc;
}

/* ---- reading runs back ---- */

static int rd_fill(tk_sorter *s, run_rd *r, size_t need, const char *path)
{
	if (r->end - r->pos >= need)
		return 0;
	if (r->pos) {
		memmove(r->buf, r->buf + r->pos, r->end - r->pos);
		r->end -= r->pos;
		r->pos = 0;
	}
	if (r->cap > RUN_BUF && need <= RUN_BUF && r->end <= RUN_BUF) {
		char *nb = realloc(r->buf, RUN_BUF); /* back to size after a huge record */
		if (nb) {
			r->buf = nb;
			r->cap = RUN_BUF;
		}
	}
	if (need > r->cap) {
		char *nb = realloc(r->buf, need);
		if (!nb)
			return fail(s, TK_ERR_NOMEM, "sorter: out of memory");
		r->buf = nb;
		r->cap = need;
	}
	while (r->end < need) {
		ssize_t k = read(r->fd, r->buf + r->end, r->cap - r->end);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return fail(s, TK_ERR_IO, "sorter: cannot read %s: %s", path, strerror(errno));
		if (k == 0)
			return r->end == 0 ? TK_EOF
			                   : fail(s, TK_ERR_IO, "sorter: %s ends inside a record", path);
		r->end += (size_t)k;
	}
	return 0;
}

/* Advance r to its next record: 0, TK_EOF or an error. */
static int rd_next(tk_sorter *s, run_rd *r, const char *path)
{
	if (r->rec)
		r->pos += get_u32(r->rec) + 4;
	r->rec = NULL;
	int rc = rd_fill(s, r, 4, path);
	if (rc)
		return rc;
	size_t n = get_u32(r->buf + r->pos) + 4;
	if ((rc = rd_fill(s, r, n, path)) != 0)
		return rc == TK_EOF ? fail(s, TK_ERR_IO, "sorter: %s ends inside a record", path) : rc;
	r->rec = r->buf + r->pos;
	rec_key(r->rec, &r->has_ts, &r->key);
	return 0;
}

static int rd_less(const merger *m, size_t a, size_t b)
{
	const run_rd *x = &m->rd[a], *y = &m->rd[b];
	if (x->has_ts != y->has_ts)
		return x->has_ts < y->has_ts;
	if (x->key != y->key)
		return x->key < y->key;
	return a < b; /* runs hold events in the order they were added */
}

static void heap_down(merger *m, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, best = i;
		if (l < m->n_heap && rd_less(m, m->heap[l], m->heap[best]))
			best = l;
		if (r < m->n_heap && rd_less(m, m->heap[r], m->heap[best]))
			best = r;
		if (best == i)
			return;
		size_t t = m->heap[i];
		m->heap[i] = m->heap[best];
		m->heap[best] = t;
		i = best;
	}
}

static void merger_free(merger *m)
{
	for (size_t i = 0; i < m->n; i++) {
		if (m->rd[i].fd >= 0)
			close(m->rd[i].fd);
		free(m->rd[i].buf);
	}
	free(m->rd);
	free(m->heap);
	memset(m, 0, sizeof *m);
	m->last = SIZE_MAX;
}

/* Open runs[first .. first+n) for merging. */
static int merger_open(tk_sorter *s, merger *m, size_t first, size_t n)
{
	merger_free(m);
	m->rd = calloc(n, sizeof *m->rd);
	m->heap = malloc(n * sizeof *m->heap);
	if (!m->rd || !m->heap)
		return fail(s, TK_ERR_NOMEM, "sorter: out of memory");
	m->n = n;
	for (size_t i = 0; i < n; i++)
		m->rd[i].fd = -1;
	for (size_t i = 0; i < n; i++) {
		run_rd *r = &m->rd[i];
		const char *path = s->runs[first + i];
		r->fd = open(path, O_RDONLY | O_CLOEXEC);
		if (r->fd < 0)
			return fail(s, TK_ERR_IO, "sorter: cannot open %s: %s", path, strerror(errno));
		if (!(r->buf = malloc(RUN_BUF)))
			return fail(s, TK_ERR_NOMEM, "sorter: out of memory");
		r->cap = RUN_BUF;
		int rc = rd_next(s, r, path);
		if (rc < 0)
			return rc;
		if (rc == 0)
			m->heap[m->n_heap++] = i;
	}
	for (size_t i = m->n_heap / 2; i-- > 0;)
		heap_down(m, i);
	return 0;
}

/* Next record of the merge (valid until the next call), NULL at the end. */
static int merger_next(tk_sorter *s, merger *m, size_t first, const char **rec)
{
	if (m->last != SIZE_MAX) {
		int rc = rd_next(s, &m->rd[m->last], s->runs[first + m->last]);
		if (rc < 0)
			return rc;
		if (rc == TK_EOF)
			m->heap[0] = m->heap[--m->n_heap];
		if (m->n_heap)
			heap_down(m, 0);
		m->last = SIZE_MAX;
	}
	if (!m->n_heap) {
		*rec = NULL;
		return TK_EOF;
	}
	m->last = m->heap[0];
	*rec = m->rd[m->last].rec;
	return 0;
}

static void remove_runs(tk_sorter *s, size_t first, size_t n)
{
	for (size_t i = first; i < first + n; i++) {
		unlink(s->runs[i]);
		free(s->runs[i]);
		s->runs[i] = NULL;
	}
}

/* Merge runs[first .. first+n) into one new run file. */
static int merge_group(tk_sorter *s, size_t first, size_t n, char **out)
{
	run_wr w = {0};
	int rc = merger_open(s, &s->m, first, n);
	if (!rc)
		rc = run_create(s, &w.path, &w.fd);
	if (rc) {
		merger_free(&s->m);
		return rc;
	}
	const char *rec;
	while ((rc = merger_next(s, &s->m, first, &rec)) == 0)
		rc = wr_put(s, &w, rec);
	merger_free(&s->m);
	int rc2 = wr_close(s, &w);
	if (rc == TK_EOF)
		rc = rc2;
	if (rc) {
		unlink(w.path);
		free(w.path);
		return rc;
	}
	remove_runs(s, first, n);
	*out = w.path;
	return 0;
}

/* Intermediate passes until at most MAX_FANIN runs are left. */
static int reduce_runs(tk_sorter *s)
{
	while (s->n_runs > MAX_FANIN) {
		size_t n_out = 0;
		for (size_t first = 0; first < s->n_runs; first += MAX_FANIN) {
			size_t n = s->n_runs - first < MAX_FANIN ? s->n_runs - first : MAX_FANIN;
			char *path;
			if (n == 1) {
				path = s->runs[first];
				s->runs[first] = NULL;
			} else {
				int rc = merge_group(s, first, n, &path);
				if (rc)
					return rc;
			}
			s->runs[n_out++] = path; /* n_out <= first: never overwrites an unread run */
		}
		s->n_runs = n_out;
	}
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
	s->budget = opts && opts->memory_bytes ? opts->memory_bytes : (size_t)256 << 20;
	s->tmpdir = opts ? opts->tmpdir : NULL;
	if (s->tmpdir && !(s->tmpdir = tk__strdup(s->tmpdir)))
		return fail(s, TK_ERR_NOMEM, "sorter: out of memory");
	s->m.last = SIZE_MAX;
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
	s->ents[s->n_ents++] = (entry){(ev->has & TK_HAS_TS) ? ts_key(ev->ts) : 0, rec};
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
	 * the budget; then at most MAX_FANIN runs are merged at once */
	int rc = spill(s);
	free(s->ents);
	s->ents = NULL;
	s->ents_cap = 0;
	if (!rc)
		rc = reduce_runs(s);
	if (!rc)
		rc = merger_open(s, &s->m, 0, s->n_runs);
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
	const char *rec;
	uint64_t t;
	if (!s->n_runs) {
		if (s->mem_pos >= s->n_ents)
			return TK_EOF;
		rec = s->ents[s->mem_pos++].rec;
	} else {
		int rc = merger_next(s, &s->m, 0, &rec);
		if (rc)
			return rc;
	}
	rec_decode(rec, &s->ev, &t);
	*ev = &s->ev;
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
	merger_free(&s->m);
	mem_clear(s);
	free(s->ents);
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
