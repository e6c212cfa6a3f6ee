/* stats_map.c: the compact maps (paged out to a file past their memory) and duration stores behind tk_stats. */
#define _GNU_SOURCE /* O_TMPFILE */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <unistd.h>

#include "stats_internal.h"

static int pool_fail(tk__pool *m, int code, const char *what, int e)
{
	if (!m->err) {
		m->err = code;
		if (code == TK_ERR_NOMEM)
			snprintf(m->msg, sizeof m->msg, "out of memory");
		else
			snprintf(m->msg, sizeof m->msg, "%s: %s in %s%s: %s", m->what ? m->what : "pages", what,
			         tk__tmp_base(m->tmpdir), tk__tmp_from(m->tmpdir), strerror(e));
	}
	return m->err;
}

/* The pages' file: made in tmpdir and unlinked at once, so that nothing is
 * left behind whatever happens to the process. */
static int pages_file(tk__pool *m)
{
	const char *dir = tk__tmp_base(m->tmpdir);
	int fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (fd < 0 && errno != ENOENT && errno != ENOTDIR) { /* no O_TMPFILE there */
		size_t n = strlen(dir) + 32;
		char *path = malloc(n);
		if (!path)
			return pool_fail(m, TK_ERR_NOMEM, "", 0);
		snprintf(path, n, "%s/tkpages-XXXXXX", dir);
		int hold;
		fd = tk__tmp_create(path, 0, &hold); /* held: a signal before the unlink removes it too */
		if (fd >= 0)
			unlink(path);
		tk__tmp_release(hold);
		free(path);
	}
	if (fd < 0)
		return pool_fail(m, TK_ERR_IO, "cannot create a file", errno);
	m->fd = fd + 1;
	return 0;
}

/* A page's 16 KiB: a new one while under max_resident, else the one the
 * clock lets go of, written out first when it changed. NULL: m->err. */
static uint32_t *page_take(tk__pool *m)
{
	if (!m->max_resident || m->resident < m->max_resident) {
		uint32_t *v = malloc(TK__PAGE * sizeof *v);
		if (!v)
			pool_fail(m, TK_ERR_NOMEM, "", 0);
		else
			m->resident++;
		return v;
	}
	for (;;) {
		tk__page *g = &m->pages[m->hand];
		m->hand = (m->hand + 1) % m->n_pages;
		if (!g->v)
			continue;
		if (g->ref) { /* a second chance */
			g->ref = 0;
			continue;
		}
		if (g->dirty || !g->saved) {
			if (!m->fd && pages_file(m))
				return NULL;
			size_t bytes = TK__PAGE * sizeof *g->v;
			off_t at = (off_t)(g - m->pages) * (off_t)bytes;
			ssize_t w = pwrite(m->fd - 1, g->v, bytes, at);
			if (w != (ssize_t)bytes) {
				pool_fail(m, TK_ERR_IO, "cannot write a page", w < 0 ? errno : ENOSPC);
				return NULL;
			}
			g->saved = 1;
			g->dirty = 0;
			m->out++;
		}
		uint32_t *v = g->v;
		g->v = NULL;
		return v;
	}
}

uint32_t tk__pool_new(tk__pool *m)
{
	if (m->err || m->n_pages >= UINT32_MAX || TK__GROW(m->pages, m->pages_cap, m->n_pages + 1)) {
		pool_fail(m, TK_ERR_NOMEM, "", 0);
		return 0;
	}
	uint32_t *v = page_take(m);
	if (!v)
		return 0;
	memset(v, 0, TK__PAGE * sizeof *v);
	m->pages[m->n_pages++] = (tk__page){v, 1, 0, 0};
	return (uint32_t)m->n_pages;
}

uint32_t *tk__pool_at(tk__pool *m, uint32_t n, int write)
{
	if (m->err)
		return NULL;
	tk__page *g = &m->pages[n - 1];
	if (!g->v) { /* back from the file */
		uint32_t *v = page_take(m);
		if (!v)
			return NULL;
		size_t bytes = TK__PAGE * sizeof *v;
		ssize_t r = pread(m->fd - 1, v, bytes, (off_t)(n - 1) * (off_t)bytes);
		if (r != (ssize_t)bytes) {
			free(v);
			m->resident--;
			pool_fail(m, TK_ERR_IO, "cannot read a page back", r < 0 ? errno : EIO);
			return NULL;
		}
		g->v = v;
	}
	g->ref = 1;
	g->dirty |= (unsigned char)(write != 0);
	return g->v;
}

size_t tk__pool_pages(size_t bytes)
{
	size_t n = bytes / (TK__PAGE * sizeof(uint32_t));
	return n > 4 ? n : 4;
}

void tk__pool_free(tk__pool *m)
{
	for (size_t i = 0; i < m->n_pages; i++)
		free(m->pages[i].v);
	free(m->pages);
	if (m->fd)
		close(m->fd - 1);
	/* empty, with its settings */
	tk__pool keep = {.max_resident = m->max_resident, .tmpdir = m->tmpdir, .what = m->what};
	*m = keep;
}

/* The page of id in memory (add: a new one when it has none). */
static uint32_t *idmap_page(tk__idmap *m, uint64_t id, int add)
{
	if (m->pool.err)
		return NULL;
	uint64_t p = tk__map_get0(&m->dir, id >> TK__PAGE_BITS);
	if (!p && !add)
		return NULL;
	if (!p) {
		if (!(p = tk__pool_new(&m->pool)))
			return NULL;
		if (tk__map_put_int(&m->dir, id >> TK__PAGE_BITS, p)) {
			pool_fail(&m->pool, TK_ERR_NOMEM, "", 0);
			return NULL;
		}
	}
	return tk__pool_at(&m->pool, (uint32_t)p, add);
}

uint32_t tk__idmap_get(tk__idmap *m, uint64_t id)
{
	uint32_t *v = idmap_page(m, id, 0);
	return v ? v[id & (TK__PAGE - 1)] : 0;
}

int tk__idmap_put(tk__idmap *m, uint64_t id, uint32_t val)
{
	uint32_t *v = idmap_page(m, id, 1);
	if (!v)
		return m->pool.err;
	v[id & (TK__PAGE - 1)] = val;
	return 0;
}

void tk__idmap_free(tk__idmap *m)
{
	tk__pool_free(&m->pool);
	tk__map_free(&m->dir);
}

int tk__u32s_add(tk__pool *p, tk__u32s *l, uint32_t v)
{
	if (l->n_tail == TK__PAGE) { /* a full page goes to the pool */
		uint32_t n;
		uint32_t *page;
		if (l->n_pg == l->cap_pg && TK__GROW(l->pg, l->cap_pg, l->n_pg + 1))
			return TK_ERR_NOMEM;
		if (!(n = tk__pool_new(p)) || !(page = tk__pool_at(p, n, 1)))
			return p->err;
		memcpy(page, l->tail, TK__PAGE * sizeof *page);
		l->pg[l->n_pg++] = n;
		l->n_tail = 0;
	}
	if (l->n_tail == l->cap_tail && TK__GROW(l->tail, l->cap_tail, l->n_tail + 1))
		return TK_ERR_NOMEM;
	l->tail[l->n_tail++] = v;
	l->n++;
	return 0;
}

int tk__u32s_get(tk__pool *p, const tk__u32s *l, size_t i, uint32_t *v)
{
	size_t g = i >> TK__PAGE_BITS;
	if (g == l->n_pg) {
		*v = l->tail[i & (TK__PAGE - 1)];
		return 0;
	}
	const uint32_t *page = tk__pool_at(p, l->pg[g], 0);
	if (!page)
		return p->err;
	*v = page[i & (TK__PAGE - 1)];
	return 0;
}

void tk__u32s_free(tk__u32s *l)
{
	free(l->pg);
	free(l->tail);
	memset(l, 0, sizeof *l);
}

int tk__durs_add(tk__pool *p, tk__durs *d, int64_t v)
{
	if (v >= 0 && v <= (int64_t)UINT32_MAX)
		return tk__u32s_add(p, &d->small, (uint32_t)v);
	if (d->n_big == d->cap_big && TK__GROW(d->big, d->cap_big, d->n_big + 1))
		return TK_ERR_NOMEM;
	d->big[d->n_big++] = v;
	return 0;
}

/* LSD radix sort, stable, of n elements of size 4 or 8 by their first
 * kbytes (4 or 8) bytes as an unsigned number, a byte at a time, skipping a
 * byte all keys share; the result is in v or tmp, returned. */
static uint64_t key_at(const char *e, int kbytes)
{
	if (kbytes == 4) {
		uint32_t k;
		memcpy(&k, e, 4);
		return k;
	}
	uint64_t k;
	memcpy(&k, e, 8);
	return k;
}

static void *radix(void *v, void *tmp, size_t n, size_t size, int kbytes)
{
	size_t count[8][256] = {{0}};
	for (size_t i = 0; i < n; i++) {
		uint64_t k = key_at((char *)v + i * size, kbytes);
		for (int b = 0; b < kbytes; b++)
			count[b][k >> (8 * b) & 255]++;
	}
	uint64_t k0 = key_at(v, kbytes);
	for (int b = 0; b < kbytes; b++) {
		if (count[b][k0 >> (8 * b) & 255] == n)
			continue;
		size_t pos = 0;
		for (int d = 0; d < 256; d++) {
			size_t c = count[b][d];
			count[b][d] = pos;
			pos += c;
		}
		for (size_t i = 0; i < n; i++) {
			const char *e = (char *)v + i * size;
			char *to = (char *)tmp + count[b][key_at(e, kbytes) >> (8 * b) & 255]++ * size;
			if (size == 8)
				memcpy(to, e, 8);
			else
				memcpy(to, e, 4);
		}
		void *t = v;
		v = tmp;
		tmp = t;
	}
	return v;
}

/* v's keys as u64 in the order of int64: the sign bit flipped (again: back). */
static void flip_keys(void *v, size_t n, size_t size)
{
	for (size_t i = 0; i < n; i++) {
		uint64_t k;
		memcpy(&k, (char *)v + i * size, 8);
		k ^= UINT64_C(1) << 63;
		memcpy((char *)v + i * size, &k, 8);
	}
}

static int sort_by_key(void *v, size_t n, size_t size)
{
	if (n < 2)
		return 0;
	void *tmp = malloc(n * size);
	if (!tmp)
		return TK_ERR_NOMEM;
	flip_keys(v, n, size);
	void *r = radix(v, tmp, n, size, 8);
	if (r != v)
		memcpy(v, r, n * size);
	flip_keys(v, n, size);
	free(tmp);
	return 0;
}

int tk__sort_i64(int64_t *v, size_t n)
{
	return sort_by_key(v, n, sizeof *v);
}

/* Up to this many values a row is sorted in memory (16 bytes each while
 * sorting); past it the median is selected by counting. */
size_t tk__durs_sort_max = (size_t)1 << 20;

/* Exact median and sample standard deviation from every duration, sorted. */
static void describe_sorted(const int64_t *v, size_t n, int64_t total, double *med, double *sd)
{
	*med = n % 2 ? (double)v[n / 2] : ((double)v[n / 2 - 1] + (double)v[n / 2]) / 2.0;
	double mean = (double)total / (double)n, acc = 0;
	for (size_t i = 0; i < n && n > 1; i++)
		acc += ((double)v[i] - mean) * ((double)v[i] - mean);
	*sd = n > 1 ? sqrt(acc / (double)(n - 1)) : 0;
}

/* Calls fn for each page of u32 values of the sets, with its count. */
static int each_page(const tk__durset *sets, size_t n, void (*fn)(void *ctx, const uint32_t *v, size_t k),
                     void *ctx)
{
	for (size_t i = 0; i < n; i++) {
		const tk__u32s *d = &sets[i].d->small;
		for (size_t j = 0; j < d->n_pg; j++) {
			const uint32_t *v = tk__pool_at(sets[i].pool, d->pg[j], 0);
			if (!v)
				return sets[i].pool->err;
			fn(ctx, v, TK__PAGE);
		}
		if (d->n_tail)
			fn(ctx, d->tail, d->n_tail);
	}
	return 0;
}

/* The wide values of the sets, sorted (NULL with *nb 0 when none). */
static int wide_sorted(const tk__durset *sets, size_t n, int64_t **out, size_t *nb, size_t *neg)
{
	size_t c = 0;
	for (size_t i = 0; i < n; i++)
		c += sets[i].d->n_big;
	*out = NULL;
	*nb = *neg = 0;
	if (!c)
		return 0;
	int64_t *w = malloc(c * sizeof *w);
	if (!w)
		return TK_ERR_NOMEM;
	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < sets[i].d->n_big; j++)
			w[(*nb)++] = sets[i].d->big[j];
	if (tk__sort_i64(w, c)) {
		free(w);
		return TK_ERR_NOMEM;
	}
	while (*neg < c && w[*neg] < 0)
		++*neg;
	*out = w;
	return 0;
}

typedef struct gather {
	uint32_t *v;
	size_t n;
} gather;

static void gather_page(void *ctx, const uint32_t *v, size_t k)
{
	gather *g = ctx;
	memcpy(g->v + g->n, v, k * sizeof *v);
	g->n += k;
}

/* Every value sorted, in memory: wide negatives, the u32 values, wide
 * positives. */
static int describe_sort(const tk__durset *sets, size_t n, size_t count, size_t small, int64_t total,
                         double *med, double *sd)
{
	int64_t *w = NULL, *v = malloc(count * sizeof *v);
	uint32_t *tmp = malloc((small ? small : 1) * 2 * sizeof *tmp);
	size_t nb = 0, neg = 0;
	int rc = v && tmp ? wide_sorted(sets, n, &w, &nb, &neg) : TK_ERR_NOMEM;
	gather g = {tmp, 0};
	if (!rc)
		rc = each_page(sets, n, gather_page, &g);
	if (!rc) {
		const uint32_t *sorted = small ? radix(tmp, tmp + small, small, sizeof *tmp, 4) : tmp;
		for (size_t i = 0; i < neg; i++)
			v[i] = w[i];
		for (size_t i = 0; i < small; i++)
			v[neg + i] = sorted[i];
		for (size_t i = neg; i < nb; i++)
			v[small + i] = w[i];
		describe_sorted(v, count, total, med, sd);
	}
	free(w);
	free(v);
	free(tmp);
	return rc;
}

/* Counting: the values' top 16 bits, then the low 16 of those in one bin. */
typedef struct counting {
	uint64_t *bin; /* 65536 */
	int second;
	uint32_t top;
	double mean, acc;
} counting;

static void count_page(void *ctx, const uint32_t *v, size_t k)
{
	counting *c = ctx;
	if (!c->second) {
		for (size_t i = 0; i < k; i++)
			c->bin[v[i] >> 16]++;
		return;
	}
	for (size_t i = 0; i < k; i++)
		if (v[i] >> 16 == c->top)
			c->bin[v[i] & 0xffff]++;
}

/* The k-th smallest of the sets' u32 values (k below their count). */
static int select_small(const tk__durset *sets, size_t n, uint64_t k, counting *c, uint32_t *out)
{
	uint32_t part[2];
	for (int pass = 0; pass < 2; pass++) {
		memset(c->bin, 0, 65536 * sizeof *c->bin);
		c->second = pass;
		int rc = each_page(sets, n, count_page, c);
		if (rc)
			return rc;
		uint32_t b = 0;
		while (k >= c->bin[b])
			k -= c->bin[b++];
		part[pass] = b;
		c->top = b;
	}
	*out = part[0] << 16 | part[1];
	return 0;
}

static void square_page(void *ctx, const uint32_t *v, size_t k)
{
	counting *c = ctx;
	for (size_t i = 0; i < k; i++)
		c->acc += ((double)v[i] - c->mean) * ((double)v[i] - c->mean);
}

/* Past tk__durs_sort_max: the two middle values selected by counting
 * passes over the pages, the deviation summed in the pages' order. */
static int describe_count(const tk__durset *sets, size_t n, size_t count, size_t small, int64_t total,
                          double *med, double *sd)
{
	int64_t *w = NULL;
	size_t nb = 0, neg = 0;
	counting c = {calloc(65536, sizeof(uint64_t)), 0, 0, (double)total / (double)count, 0};
	int rc = c.bin ? wide_sorted(sets, n, &w, &nb, &neg) : TK_ERR_NOMEM;
	double mid[2];
	for (int i = 0; i < 1 + (count % 2 == 0) && !rc; i++) {
		size_t k = i ? count / 2 : (count - 1) / 2;
		uint32_t x;
		if (k < neg)
			mid[i] = (double)w[k];
		else if (k - neg >= small)
			mid[i] = (double)w[k - small];
		else if (!(rc = select_small(sets, n, k - neg, &c, &x)))
			mid[i] = (double)x;
	}
	if (!rc) {
		*med = count % 2 ? mid[0] : (mid[0] + mid[1]) / 2.0;
		for (size_t i = 0; i < nb; i++)
			c.acc += ((double)w[i] - c.mean) * ((double)w[i] - c.mean);
		rc = each_page(sets, n, square_page, &c);
		*sd = count > 1 ? sqrt(c.acc / (double)(count - 1)) : 0;
	}
	free(w);
	free(c.bin);
	return rc;
}

int tk__durs_describe(const tk__durset *sets, size_t n, int64_t total, double *med, double *sd)
{
	size_t count = 0, small = 0;
	for (size_t i = 0; i < n; i++) {
		count += sets[i].d->small.n + sets[i].d->n_big;
		small += sets[i].d->small.n;
	}
	*med = *sd = 0;
	if (!count)
		return 0;
	if (count <= tk__durs_sort_max)
		return describe_sort(sets, n, count, small, total, med, sd);
	return describe_count(sets, n, count, small, total, med, sd);
}

void tk__durs_free(tk__durs *d)
{
	tk__u32s_free(&d->small);
	free(d->big);
	memset(d, 0, sizeof *d);
}
