/* sort_run.c: the sorter's compact run files: writing them, reading them back, k-way merging. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sort_int.h"
#include "tkb_int.h"

#define WRITE_BUF (1u << 20) /* write buffer while spilling */
#define fail(s, ...) tk__err_set(tk__sort_err(s), __VA_ARGS__)

static int make_dir(tk_sorter *s)
{
	if (s->dir)
		return 0;
	char msg[TK__ERRLEN];
	int rc = tk__tmp_dir(s->tmpdir, "tksort", &s->dir, &s->dir_hold, msg, sizeof msg);
	return rc ? fail(s, rc, "sorter: %s", msg) : 0;
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
		rc = fail(s, TK_ERR_IO, "sorter: cannot create %s: %s", path, strerror(e));
		free(path);
		return rc;
	}
	*path_out = path;
	*fd_out = fd;
	return 0;
}

/* ---- compact run files ----
 *
 * Spilled runs use their own record format, much smaller than the in-memory
 * one: the spill is bound by the bytes written and read back. Each run has a
 * dictionary that starts empty and grows as strings are first used; the
 * writer stops adding to it at dict_cap bytes, so the reader's copy (which
 * only follows the writer) is bounded too. A record:
 *
 *   varint n     bytes that follow
 *   varint has   TK_HAS_* bits
 *   u8 ph
 *   u8 kinds     pid kind | tid kind << 2 | id kind << 4 (TK_ID_*)
 *   u8 modes     ts stored | dur stored << 1 | args mode << 2 | extra mode << 4
 *   ts:  varint zz(ts - the last ts stored in this run), when stored
 *   dur: varint zz(dur), when stored
 *   varint tag
 *   per id: TK_ID_INT -> varint zz(num - the last num of that id); TK_ID_STR -> ref
 *   name, cat: ref
 *   args, extra: mode 0 absent; 1 a ref; 2 a ref to a template (the text with
 *                each number replaced by TMPL_NUM) and one varint per number
 *
 * A ref is a varint r: 0 absent (NULL); r & 1: dictionary entry r >> 1;
 * r & 3 == 2: r >> 2 bytes follow and become the next dictionary entry;
 * otherwise (r >> 2) - 1 bytes follow and are not kept. A number is a run of
 * digits with at most 3 leading zeros and at most 18 digits after them,
 * stored as value * 4 + leading zeros; other digits stay in the template.
 * Zig-zag deltas wrap around in 64 bits. */
#define TMPL_NUM '\x01'
#define DICT_ENTRY 32      /* bytes counted per dictionary entry beside its text */
#define DICT_MAX_STR 4096  /* longer strings are never kept in a dictionary */

#define put_vu tk__varint_at

/* The writer's dictionary: entries back to back in one buffer, found
 * through the map (hash -> entry). */
typedef struct dict_wr {
	tk__buf text; /* entries back to back */
	size_t *off;  /* entry i is text[off[i] .. off[i+1]) */
	tk__map map;  /* records {hash, entry} */
	size_t n, n_cap, used, cap;
} dict_wr;

typedef struct dict_rec {
	uint64_t h;
	uint32_t idx; /* the entry's index */
} dict_rec;

typedef struct dict_key {
	const dict_wr *d;
	const char *s;
	size_t n;
} dict_key;

static void dict_wr_free(dict_wr *d)
{
	tk__buf_free(&d->text);
	free(d->off);
	tk__map_free(&d->map);
	memset(d, 0, sizeof *d);
}

static int dict_eq(const void *rec, const void *key)
{
	const dict_key *k = key;
	size_t i = ((const dict_rec *)rec)->idx;
	return k->d->off[i + 1] - k->d->off[i] == k->n && memcmp(k->d->text.p + k->d->off[i], k->s, k->n) == 0;
}

/* *id = the entry of s: 0 found, 1 added, 2 not kept (full or too long), or an error. */
static int dict_wr_find(dict_wr *d, const char *s, size_t n, uint32_t *id)
{
	if (!d->map.esize)
		tk__map_init(&d->map, sizeof(dict_rec), 4);
	uint64_t h = tk__hash(s, n);
	dict_key k = {d, s, n};
	const dict_rec *r = tk__map_find(&d->map, h, dict_eq, &k);
	if (r) {
		*id = r->idx;
		return 0;
	}
	if (n > DICT_MAX_STR || d->used + n + DICT_ENTRY > d->cap)
		return 2;
	if (tk__grow(&d->off, &d->n_cap, d->n + 2, sizeof *d->off, 256))
		return TK_ERR_NOMEM;
	if (!d->n)
		d->off[0] = 0;
	dict_rec *nr;
	if (tk__buf_append(&d->text, s, n) || !(nr = tk__map_insert(&d->map, h)))
		return TK_ERR_NOMEM;
	nr->idx = (uint32_t)d->n;
	d->off[d->n + 1] = d->text.len;
	d->used += n + DICT_ENTRY;
	*id = (uint32_t)d->n++;
	return 1;
}

/* Buffered output of compact records to a run file. */
typedef struct run_wr {
	int fd;
	char *path;
	tk__buf b;          /* pending output */
	tk__buf rec, tmpl, nums; /* scratch: a record, a template, its numbers */
	dict_wr dict;
	int64_t last_ts, last_int[3];
} run_wr;

static int write_all(tk_sorter *s, int fd, const char *path, const char *p, size_t n)
{
	int e = tk__write_all(fd, p, n, NULL);
	return e ? fail(s, TK_ERR_IO, "sorter: cannot write %s: %s", path, strerror(e)) : 0;
}

/* A ref to s (NULL: absent); the record has room for n + 10 bytes. */
static unsigned char *put_ref(run_wr *w, unsigned char *p, const char *s, size_t n, int *err)
{
	if (!s) {
		*p++ = 0;
		return p;
	}
	uint32_t id;
	int rc = dict_wr_find(&w->dict, s, n, &id);
	if (rc < 0) {
		*err = rc;
		return p;
	}
	if (rc == 0)
		return put_vu(p, (uint64_t)id * 2 + 1);
	p = put_vu(p, rc == 1 ? (uint64_t)n * 4 + 2 : ((uint64_t)n + 1) * 4);
	memcpy(p, s, n);
	return p + n;
}

/* Bit i set where byte i of the 16 at p is a digit; *mark: where it is TMPL_NUM. */
static inline unsigned digit_mask(const char *p, unsigned *mark)
{
	__m128i v = _mm_loadu_si128((const __m128i *)p);
	/* '0'..'9' become the 10 smallest signed bytes */
	__m128i d = _mm_sub_epi8(v, _mm_set1_epi8((char)('0' ^ 0x80)));
	__m128i dig = _mm_cmplt_epi8(d, _mm_set1_epi8((char)(-128 + 10)));
	*mark = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_set1_epi8(TMPL_NUM)));
	return (unsigned)_mm_movemask_epi8(dig);
}

static inline int is_digit(char c)
{
	return (unsigned)(unsigned char)c - '0' <= 9;
}

/* The digits at s[i..]: a number into *q, or kept in the template; returns their end. */
static size_t split_number(const char *s, size_t n, size_t i, char **t, unsigned char **q)
{
	uint64_t v = (unsigned)(s[i] - '0');
	size_t j = i + 1;
	if (v) { /* the common case: no leading zero */
		while (j < n && is_digit(s[j]) && j - i < 18)
			v = v * 10 + (unsigned)(s[j++] - '0');
		if (j == n || !is_digit(s[j])) {
			*q = put_vu(*q, v * 4);
			*(*t)++ = TMPL_NUM;
			return j;
		}
	}
	while (j < n && is_digit(s[j]))
		j++;
	size_t lz = 0;
	while (i + lz + 1 < j && s[i + lz] == '0')
		lz++;
	if (lz > 3 || j - i - lz > 18) {
		memcpy(*t, s + i, j - i);
		*t += j - i;
		return j;
	}
	v = 0;
	for (size_t k = i + lz; k < j; k++)
		v = v * 10 + (unsigned)(s[k] - '0');
	*q = put_vu(*q, v * 4 + lz);
	*(*t)++ = TMPL_NUM;
	return j;
}

/* Splits text into w->tmpl (numbers replaced by TMPL_NUM) and their varints
 * in w->nums; 0, or 1 when the text holds TMPL_NUM itself. The text is
 * scanned 16 bytes at a time: the spill runs at the speed of this loop. */
static int tmpl_split(run_wr *w, const char *s, size_t n)
{
	char *t = w->tmpl.p;
	unsigned char *q = (unsigned char *)w->nums.p;
	size_t i = 0;
	for (;;) {
		if (i + 16 <= n) {
			unsigned mark, m = digit_mask(s + i, &mark);
			if (mark)
				return 1;
			memcpy(t, s + i, 16); /* the template has room for n + 16 bytes */
			if (!m) {
				t += 16;
				i += 16;
				continue;
			}
			unsigned k = (unsigned)__builtin_ctz(m);
			unsigned len = (unsigned)__builtin_ctz(~(m >> k)); /* digits from s[i + k] */
			t += k;
			i += k;
			if (k + len < 16 && (len == 1 || s[i] != '0')) {
				/* the number ends inside this block and has no leading zero */
				uint64_t v = 0;
				for (const char *d = s + i, *e = d + len; d < e; d++)
					v = v * 10 + (unsigned)(*d - '0');
				q = put_vu(q, v * 4);
				*t++ = TMPL_NUM;
				i += len;
				continue;
			}
		} else {
			while (i < n && !is_digit(s[i]) && s[i] != TMPL_NUM)
				*t++ = s[i++];
			if (i == n)
				break;
		}
		if (s[i] == TMPL_NUM)
			return 1;
		i = split_number(s, n, i, &t, &q);
	}
	w->tmpl.len = (size_t)(t - w->tmpl.p);
	w->nums.len = (size_t)((char *)q - w->nums.p);
	return 0;
}

/* args or extra: returns the mode; the record has room for 11 * len + 20 bytes. */
static unsigned char *put_text(run_wr *w, unsigned char *p, tk_sv v, unsigned *mode, int *err)
{
	*mode = 0;
	if (!v.ptr)
		return p;
	w->tmpl.len = w->nums.len = 0;
	if ((w->tmpl.cap <= v.len + 16 && tk__buf_reserve(&w->tmpl, v.len + 16)) ||
	    (w->nums.cap <= 10 * v.len && tk__buf_reserve(&w->nums, 10 * v.len))) {
		*err = TK_ERR_NOMEM;
		return p;
	}
	/* a text without numbers is stored as itself: decoding it copies nothing */
	if (tmpl_split(w, v.ptr, v.len) || !w->nums.len) {
		*mode = 1;
		return put_ref(w, p, v.ptr, v.len, err);
	}
	*mode = 2;
	p = put_ref(w, p, w->tmpl.p, w->tmpl.len, err);
	memcpy(p, w->nums.p, w->nums.len);
	return p + w->nums.len;
}

static size_t id_str_len(const tk_id *id)
{
	return id->kind == TK_ID_STR ? id->str.len : 0;
}

static unsigned char *put_run_id(run_wr *w, unsigned char *p, const tk_id *id, int k, int *err)
{
	if (id->kind == TK_ID_INT) {
		p = put_vu(p, tk__zz((int64_t)((uint64_t)id->num - (uint64_t)w->last_int[k])));
		w->last_int[k] = id->num;
	} else if (id->kind == TK_ID_STR) {
		p = put_ref(w, p, id->str.ptr, id->str.len, err);
	}
	return p;
}

/* Encodes one event into w->rec (without its length). */
static int rec_put(run_wr *w, const tk_event *ev, uint64_t tag)
{
	size_t bound = 96 + ev->name.len + ev->cat.len + id_str_len(&ev->pid) + id_str_len(&ev->tid) +
	               id_str_len(&ev->id) + 11 * (ev->args.len + ev->extra.len);
	w->rec.len = 0;
	if (tk__buf_reserve(&w->rec, bound))
		return TK_ERR_NOMEM;
	unsigned char *p0 = (unsigned char *)w->rec.p, *p = put_vu(p0, ev->has);
	int store_ts = (ev->has & TK_HAS_TS) || ev->ts, store_dur = (ev->has & TK_HAS_DUR) || ev->dur;
	p[0] = (unsigned char)ev->ph;
	p[1] = (unsigned char)((ev->pid.kind & 3) | (ev->tid.kind & 3) << 2 | (ev->id.kind & 3) << 4);
	unsigned char *modes = p + 2;
	p += 3;
	if (store_ts) {
		p = put_vu(p, tk__zz((int64_t)((uint64_t)ev->ts - (uint64_t)w->last_ts)));
		w->last_ts = ev->ts;
	}
	if (store_dur)
		p = put_vu(p, tk__zz(ev->dur));
	p = put_vu(p, tag);
	int err = 0;
	unsigned ma, me;
	p = put_run_id(w, p, &ev->pid, 0, &err);
	p = put_run_id(w, p, &ev->tid, 1, &err);
	p = put_run_id(w, p, &ev->id, 2, &err);
	p = put_ref(w, p, ev->name.ptr, ev->name.len, &err);
	p = put_ref(w, p, ev->cat.ptr, ev->cat.len, &err);
	p = put_text(w, p, ev->args, &ma, &err);
	p = put_text(w, p, ev->extra, &me, &err);
	*modes = (unsigned char)(store_ts | store_dur << 1 | ma << 2 | me << 4);
	w->rec.len = (size_t)(p - p0);
	return err;
}

static int wr_put(tk_sorter *s, run_wr *w, const tk_event *ev, uint64_t tag)
{
	if (rec_put(w, ev, tag) || tk__buf_reserve(&w->b, w->rec.len + 10))
		return fail(s, TK_ERR_NOMEM, "sorter: out of memory");
	unsigned char *p = put_vu((unsigned char *)w->b.p + w->b.len, w->rec.len);
	memcpy(p, w->rec.p, w->rec.len);
	w->b.len = (size_t)(p + w->rec.len - (unsigned char *)w->b.p);
	if (w->b.len >= WRITE_BUF) {
		int rc = write_all(s, w->fd, w->path, w->b.p, w->b.len);
		if (rc)
			return rc;
		w->b.len = 0;
	}
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
	tk__buf_free(&w->rec);
	tk__buf_free(&w->tmpl);
	tk__buf_free(&w->nums);
	dict_wr_free(&w->dict);
	return rc;
}

static int add_run(tk_sorter *s, char *path)
{
	if (tk__grow(&s->runs, &s->runs_cap, s->n_runs + 1, sizeof *s->runs, 16))
			return fail(s, TK_ERR_NOMEM, "sorter: out of memory");
	s->runs[s->n_runs++] = path;
	return 0;
}

int tk__sort_write_run(tk_sorter *s, const tk__sortbuf *b)
{
	run_wr w = {0};
	int rc = run_create(s, &w.path, &w.fd);
	if (rc)
		return rc;
	w.dict.cap = s->dict_cap;
	for (size_t i = 0; i < b->n_ents && !rc; i++) {
		tk_event ev;
		uint64_t tag;
		tk__sort_rec_decode(b->ents[i].rec, &ev, &tag);
		rc = wr_put(s, &w, &ev, tag);
	}
	int rc2 = wr_close(s, &w);
	if (!rc)
		rc = rc2;
	if (!rc)
		return add_run(s, w.path);
	unlink(w.path);
	free(w.path);
	return rc;
}

/* ---- reading runs back ---- */

/* One run being read back during a merge; ev is its current event. */
typedef struct tk__run_rd {
	int fd, eof;
	const char *path;
	char *buf;
	size_t cap, pos, end; /* buf[pos..end) unread */
	size_t rec_len;       /* bytes of the current record at buf[pos] */
	tk__buf dict;         /* the run's dictionary entries, each followed by a NUL */
	size_t *off;          /* entry i starts at dict.p + off[i]; off[n_dict] = dict.len */
	size_t n_dict, off_cap;
	tk__buf evb;          /* the current event's expanded texts and unkept strings */
	int64_t last_ts, last_int[3];
	tk_event ev;
	uint64_t tag;
	int has_ts;
	uint64_t key;
} tk__run_rd;

/* Ensures need bytes at buf[pos]: 0, TK_EOF when the file ends first, or an error. */
static int rd_fill(tk_sorter *s, tk__run_rd *r, size_t need)
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
		/* a record longer than what is left of the file (a damaged run) ends it
		 * here, before a buffer of the size it claims is asked for */
		struct stat st;
		off_t at = lseek(r->fd, 0, SEEK_CUR);
		if (fstat(r->fd, &st) == 0 && S_ISREG(st.st_mode) && at >= 0 && st.st_size >= at &&
		    need - r->end > (size_t)(st.st_size - at))
			return TK_EOF;
		char *nb = realloc(r->buf, need);
		if (!nb)
			return fail(s, TK_ERR_NOMEM, "sorter: out of memory");
		r->buf = nb;
		r->cap = need;
	}
	while (r->end < need && !r->eof) {
		ssize_t k = read(r->fd, r->buf + r->end, r->cap - r->end);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return fail(s, TK_ERR_IO, "sorter: cannot read %s: %s", r->path, strerror(errno));
		r->eof = k == 0;
		r->end += (size_t)k;
	}
	return r->end < need ? TK_EOF : 0;
}

/* A string decoded from a record: where 0 absent, 1 in dict, 2 in evb, 3 at ptr. */
typedef struct sref {
	int where;
	size_t off, len;
	const char *ptr;
} sref;

typedef struct cur {
	const unsigned char *p, *e;
	int bad;
} cur;

static uint64_t get_vu(cur *c)
{
	return tk__get_varint(&c->p, c->e, &c->bad);
}

static int dict_rd_add(tk__run_rd *r, const unsigned char *p, size_t n)
{
	if (r->n_dict + 1 >= r->off_cap) {
		if (tk__grow(&r->off, &r->off_cap, r->n_dict + 2, sizeof *r->off, 256))
			return TK_ERR_NOMEM;
		r->off[0] = 0;
	}
	if (tk__buf_append(&r->dict, p, n) || tk__buf_putc(&r->dict, 0))
		return TK_ERR_NOMEM;
	r->off[++r->n_dict] = r->dict.len;
	return 0;
}

/* A ref; unkept strings are copied to evb when copy, else left in the record. */
static int get_ref(tk__run_rd *r, cur *c, sref *out, int copy)
{
	uint64_t v = get_vu(c);
	out->where = 0;
	if (!v || c->bad)
		return 0;
	if (v & 1) {
		uint64_t i = v >> 1;
		if (i >= r->n_dict)
			return c->bad = 1, 0;
		*out = (sref){1, r->off[i], r->off[i + 1] - r->off[i] - 1, NULL};
		return 0;
	}
	uint64_t n = (v & 2) ? v >> 2 : (v >> 2) - 1;
	if (n > (uint64_t)(c->e - c->p))
		return c->bad = 1, 0;
	const unsigned char *p = c->p;
	c->p += n;
	if (v & 2) {
		*out = (sref){1, r->dict.len, (size_t)n, NULL};
		return dict_rd_add(r, p, (size_t)n);
	}
	if (!copy) {
		*out = (sref){3, 0, (size_t)n, (const char *)p};
		return 0;
	}
	*out = (sref){2, r->evb.len, (size_t)n, NULL};
	return tk__buf_append(&r->evb, p, (size_t)n) || tk__buf_putc(&r->evb, 0) ? TK_ERR_NOMEM : 0;
}

static const char *sref_ptr(const tk__run_rd *r, const sref *x)
{
	return x->where == 1 ? r->dict.p + x->off : x->where == 2 ? r->evb.p + x->off : x->ptr;
}

static tk_sv sref_sv(const tk__run_rd *r, const sref *x)
{
	return x->where ? (tk_sv){sref_ptr(r, x), x->len} : (tk_sv){NULL, 0};
}

static const char digits2[] = "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
                              "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
                              "8081828384858687888990919293949596979899";

/* Writes value v with lz (< 4) leading zeros in decimal at p; returns the
 * end. Most numbers in args are short: those skip the general formatter. */
static inline char *put_num(char *p, uint64_t v, unsigned lz)
{
	memcpy(p, "000", 3);
	p += lz;
	if (v < 10) {
		*p = (char)('0' + v);
		return p + 1;
	}
	if (v < 100) {
		memcpy(p, digits2 + 2 * v, 2);
		return p + 2;
	}
	if (v < 1000) {
		*p = (char)('0' + v / 100);
		memcpy(p + 1, digits2 + 2 * (v % 100), 2);
		return p + 3;
	}
	char t[24], *e = t + sizeof t, *d = tk__fmt_u64(e, v);
	memcpy(p, d, (size_t)(e - d));
	return p + (e - d);
}

/* Expands a template into evb: the numbers come from the record. Each
 * number takes at least one record byte and at most 24 output bytes, so
 * the reserve below leaves room for the 16-byte stores of the literal copy. */
static int expand(tk__run_rd *r, cur *c, const char *t, size_t n, sref *out)
{
	tk__buf *b = &r->evb;
	size_t start = b->len;
	if (tk__buf_reserve(b, n + 24 * (size_t)(c->e - c->p) + 24))
		return TK_ERR_NOMEM;
	char *o = b->p + b->len;
	const __m128i mark = _mm_set1_epi8(TMPL_NUM);
	for (const char *e = t + n;;) {
		while (e - t >= 16) {
			__m128i x = _mm_loadu_si128((const __m128i *)t);
			_mm_storeu_si128((__m128i *)o, x);
			unsigned m = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(x, mark));
			if (m) {
				unsigned k = (unsigned)__builtin_ctz(m);
				t += k;
				o += k;
				break;
			}
			t += 16;
			o += 16;
		}
		while (t < e && *t != TMPL_NUM)
			*o++ = *t++;
		if (t == e)
			break;
		uint64_t v = get_vu(c);
		if (c->bad)
			break;
		o = put_num(o, v >> 2, (unsigned)(v & 3));
		t++;
	}
	*o = 0;
	b->len = (size_t)(o - b->p);
	*out = (sref){2, start, b->len - start, NULL};
	return 0;
}

static int get_text(tk__run_rd *r, cur *c, unsigned mode, sref *out)
{
	out->where = 0;
	if (mode == 1)
		return get_ref(r, c, out, 1);
	if (mode != 2)
		return mode ? (c->bad = 1, 0) : 0;
	sref t;
	int rc = get_ref(r, c, &t, 0);
	if (rc || c->bad)
		return rc;
	if (!t.where)
		return c->bad = 1, 0;
	/* dict does not move while expanding: only evb grows */
	return expand(r, c, sref_ptr(r, &t), t.len, out);
}

static int get_run_id(tk__run_rd *r, cur *c, int kind, int k, tk_id *id, sref *str)
{
	id->kind = kind;
	str->where = 0;
	if (kind == TK_ID_INT) {
		id->num = (int64_t)((uint64_t)r->last_int[k] + (uint64_t)tk__unzz(get_vu(c)));
		r->last_int[k] = id->num;
	} else if (kind == TK_ID_STR) {
		return get_ref(r, c, str, 1);
	} else if (kind != TK_ID_NONE) {
		c->bad = 1;
	}
	return 0;
}

/* Decodes the record at buf[pos + hdr .. pos + rec_len) into r->ev. */
static int rec_get(tk_sorter *s, tk__run_rd *r, size_t hdr)
{
	const unsigned char *b = (const unsigned char *)r->buf + r->pos;
	cur c = {b + hdr, b + r->rec_len, 0};
	tk_event *ev = &r->ev;
	tk__event_zero(ev);
	r->evb.len = 0;
	ev->has = (unsigned)get_vu(&c);
	if (c.e - c.p < 3)
		return fail(s, TK_ERR_IO, "sorter: %s: corrupt record", r->path);
	ev->ph = (char)c.p[0];
	unsigned kinds = c.p[1], modes = c.p[2];
	c.p += 3;
	if (modes & 1) {
		ev->ts = (int64_t)((uint64_t)r->last_ts + (uint64_t)tk__unzz(get_vu(&c)));
		r->last_ts = ev->ts;
	}
	if (modes & 2)
		ev->dur = tk__unzz(get_vu(&c));
	r->tag = get_vu(&c);
	sref sp, st, si, sn, sc, sa, sx;
	int rc = get_run_id(r, &c, kinds & 3, 0, &ev->pid, &sp) ||
	         get_run_id(r, &c, kinds >> 2 & 3, 1, &ev->tid, &st) ||
	         get_run_id(r, &c, kinds >> 4 & 3, 2, &ev->id, &si) || get_ref(r, &c, &sn, 1) ||
	         get_ref(r, &c, &sc, 1) || get_text(r, &c, modes >> 2 & 3, &sa) ||
	         get_text(r, &c, modes >> 4 & 3, &sx);
	if (rc)
		return fail(s, TK_ERR_NOMEM, "sorter: out of memory");
	if (c.bad || c.p != c.e || kinds >> 6 || modes >> 6)
		return fail(s, TK_ERR_IO, "sorter: %s: corrupt record", r->path);
	if (ev->pid.kind == TK_ID_STR)
		ev->pid.str = sref_sv(r, &sp);
	if (ev->tid.kind == TK_ID_STR)
		ev->tid.str = sref_sv(r, &st);
	if (ev->id.kind == TK_ID_STR)
		ev->id.str = sref_sv(r, &si);
	ev->name = sref_sv(r, &sn);
	ev->cat = sref_sv(r, &sc);
	ev->args = sref_sv(r, &sa);
	ev->extra = sref_sv(r, &sx);
	r->has_ts = (ev->has & TK_HAS_TS) != 0;
	r->key = r->has_ts ? tk__sort_key(ev->ts) : 0;
	return 0;
}

/* Advance r to its next event: 0, TK_EOF or an error. */
static int rd_next(tk_sorter *s, tk__run_rd *r)
{
	r->pos += r->rec_len;
	r->rec_len = 0;
	int rc = rd_fill(s, r, 10);
	if (rc < 0)
		return rc;
	if (r->end == r->pos)
		return TK_EOF;
	const unsigned char *b = (const unsigned char *)r->buf + r->pos;
	cur c = {b, (const unsigned char *)r->buf + r->end, 0};
	uint64_t n = get_vu(&c);
	size_t hdr = (size_t)(c.p - b);
	if (c.bad || n > UINT32_MAX)
		return fail(s, TK_ERR_IO, "sorter: %s: corrupt record", r->path);
	if ((rc = rd_fill(s, r, hdr + (size_t)n)) != 0)
		return rc == TK_EOF ? fail(s, TK_ERR_IO, "sorter: %s ends inside a record", r->path) : rc;
	r->rec_len = hdr + (size_t)n;
	return rec_get(s, r, hdr);
}

static int rd_less(const tk__merger *m, size_t a, size_t b)
{
	const tk__run_rd *x = &m->rd[a], *y = &m->rd[b];
	if (x->has_ts != y->has_ts)
		return x->has_ts < y->has_ts;
	if (x->key != y->key)
		return x->key < y->key;
	return a < b; /* runs hold events in the order they were added */
}

static void heap_down(tk__merger *m, size_t i)
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

void tk__sort_merger_free(tk__merger *m)
{
	for (size_t i = 0; i < m->n; i++) {
		tk__run_rd *r = &m->rd[i];
		if (r->fd >= 0)
			close(r->fd);
		free(r->buf);
		tk__buf_free(&r->dict);
		free(r->off);
		tk__buf_free(&r->evb);
	}
	free(m->rd);
	free(m->heap);
	memset(m, 0, sizeof *m);
	m->last = SIZE_MAX;
}

int tk__sort_merger_open(tk_sorter *s, tk__merger *m, size_t first, size_t n)
{
	tk__sort_merger_free(m);
	m->rd = calloc(n, sizeof *m->rd);
	m->heap = malloc(n * sizeof *m->heap);
	if (!m->rd || !m->heap)
		return fail(s, TK_ERR_NOMEM, "sorter: out of memory");
	m->n = n;
	for (size_t i = 0; i < n; i++)
		m->rd[i].fd = -1;
	for (size_t i = 0; i < n; i++) {
		tk__run_rd *r = &m->rd[i];
		r->path = s->runs[first + i];
		r->fd = open(r->path, O_RDONLY | O_CLOEXEC);
		if (r->fd < 0)
			return fail(s, TK_ERR_IO, "sorter: cannot open %s: %s", r->path, strerror(errno));
		if (!(r->buf = malloc(RUN_BUF)))
			return fail(s, TK_ERR_NOMEM, "sorter: out of memory");
		r->cap = RUN_BUF;
		int rc = rd_next(s, r);
		if (rc < 0)
			return rc;
		if (rc == 0)
			m->heap[m->n_heap++] = i;
	}
	for (size_t i = m->n_heap / 2; i-- > 0;)
		heap_down(m, i);
	return 0;
}

/* The run holding the next event of the merge (valid until the next call). */
static int merger_next(tk_sorter *s, tk__merger *m, tk__run_rd **out)
{
	if (m->last != SIZE_MAX) {
		int rc = rd_next(s, &m->rd[m->last]);
		if (rc < 0)
			return rc;
		if (rc == TK_EOF)
			m->heap[0] = m->heap[--m->n_heap];
		if (m->n_heap)
			heap_down(m, 0);
		m->last = SIZE_MAX;
	}
	if (!m->n_heap) {
		*out = NULL;
		return TK_EOF;
	}
	m->last = m->heap[0];
	*out = &m->rd[m->last];
	return 0;
}

int tk__sort_merger_next(tk_sorter *s, tk__merger *m, const tk_event **ev, uint64_t *tag)
{
	tk__run_rd *r;
	int rc = merger_next(s, m, &r);
	if (rc)
		return rc;
	*ev = &r->ev;
	*tag = r->tag;
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
	int rc = tk__sort_merger_open(s, &s->m, first, n);
	if (!rc)
		rc = run_create(s, &w.path, &w.fd);
	if (rc) {
		tk__sort_merger_free(&s->m);
		return rc;
	}
	w.dict.cap = s->dict_cap;
	tk__run_rd *r;
	while ((rc = merger_next(s, &s->m, &r)) == 0 && (rc = wr_put(s, &w, &r->ev, r->tag)) == 0)
		;
	tk__sort_merger_free(&s->m);
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

int tk__sort_reduce_runs(tk_sorter *s)
{
	size_t fan = s->fanin;
	while (s->n_runs > fan) {
		size_t n_out = 0;
		for (size_t first = 0; first < s->n_runs; first += fan) {
			size_t n = s->n_runs - first < fan ? s->n_runs - first : fan;
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
