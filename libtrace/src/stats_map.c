/* stats_map.c: the compact maps (paged out to a file past their memory) and duration stores behind tk_stats. */
#define _GNU_SOURCE /* O_TMPFILE, mkostemp */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include "stats_internal.h"

#define TK__PAGE_BITS 12
#define TK__PAGE (1u << TK__PAGE_BITS)

static int page_fail(tk__idmap *m, int code, const char *what, int e)
{
	if (!m->err) {
		m->err = code;
		const char *dir = m->tmpdir && *m->tmpdir ? m->tmpdir : getenv("TMPDIR");
		if (code == TK_ERR_NOMEM)
			snprintf(m->msg, sizeof m->msg, "out of memory");
		else
			snprintf(m->msg, sizeof m->msg, "the GPU attribution's id map: %s in %s: %s", what,
			         dir && *dir ? dir : "/tmp", strerror(e));
	}
	return m->err;
}

/* The pages' file: made in tmpdir and unlinked at once, so that nothing is
 * left behind whatever happens to the process. */
static int pages_file(tk__idmap *m)
{
	const char *dir = m->tmpdir && *m->tmpdir ? m->tmpdir : getenv("TMPDIR");
	if (!dir || !*dir)
		dir = "/tmp";
	int fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (fd < 0 && errno != ENOENT && errno != ENOTDIR) { /* no O_TMPFILE there */
		size_t n = strlen(dir) + 32;
		char *path = malloc(n);
		if (!path)
			return page_fail(m, TK_ERR_NOMEM, "", 0);
		snprintf(path, n, "%s/tkids-XXXXXX", dir);
		fd = mkostemp(path, O_CLOEXEC);
		if (fd >= 0)
			unlink(path);
		free(path);
	}
	if (fd < 0)
		return page_fail(m, TK_ERR_IO, "cannot create a file", errno);
	m->fd = fd + 1;
	return 0;
}

/* A page's 16 KiB: a new one while under max_resident, else the one the
 * clock lets go of, written out first when it changed. NULL: m->err. */
static uint32_t *page_take(tk__idmap *m)
{
	if (!m->max_resident || m->resident < m->max_resident) {
		uint32_t *v = malloc(TK__PAGE * sizeof *v);
		if (!v)
			page_fail(m, TK_ERR_NOMEM, "", 0);
		else
			m->resident++;
		return v;
	}
	for (;;) {
		tk__idpage *g = &m->pages[m->hand];
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
				page_fail(m, TK_ERR_IO, "cannot write a page", w < 0 ? errno : ENOSPC);
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

/* The page of id, in memory (add: a new one when it has none). */
static tk__idpage *page_of(tk__idmap *m, uint64_t id, int add)
{
	if (m->err)
		return NULL;
	uint64_t p = tk__map_get0(&m->dir, id >> TK__PAGE_BITS);
	if (!p && !add)
		return NULL;
	if (!p) {
		if (TK__GROW(m->pages, m->pages_cap, m->n_pages + 1)) {
			page_fail(m, TK_ERR_NOMEM, "", 0);
			return NULL;
		}
		uint32_t *v = page_take(m);
		if (!v)
			return NULL;
		memset(v, 0, TK__PAGE * sizeof *v);
		m->pages[m->n_pages++] = (tk__idpage){v, 1, 0, 0};
		p = m->n_pages;
		if (tk__map_put_int(&m->dir, id >> TK__PAGE_BITS, p)) {
			page_fail(m, TK_ERR_NOMEM, "", 0);
			return NULL;
		}
		return &m->pages[p - 1];
	}
	tk__idpage *g = &m->pages[p - 1];
	if (!g->v) { /* back from the file */
		uint32_t *v = page_take(m);
		if (!v)
			return NULL;
		size_t bytes = TK__PAGE * sizeof *v;
		ssize_t r = pread(m->fd - 1, v, bytes, (off_t)(p - 1) * (off_t)bytes);
		if (r != (ssize_t)bytes) {
			free(v);
			m->resident--;
			page_fail(m, TK_ERR_IO, "cannot read a page back", r < 0 ? errno : EIO);
			return NULL;
		}
		g->v = v;
	}
	g->ref = 1;
	return g;
}

uint32_t tk__idmap_get(tk__idmap *m, uint64_t id)
{
	tk__idpage *g = page_of(m, id, 0);
	return g ? g->v[id & (TK__PAGE - 1)] : 0;
}

int tk__idmap_put(tk__idmap *m, uint64_t id, uint32_t val)
{
	tk__idpage *g = page_of(m, id, 1);
	if (!g)
		return m->err;
	g->v[id & (TK__PAGE - 1)] = val;
	g->dirty = 1;
	return 0;
}

size_t tk__idmap_pages(size_t bytes)
{
	size_t n = bytes / (TK__PAGE * sizeof(uint32_t));
	return n > 4 ? n : 4;
}

void tk__idmap_free(tk__idmap *m)
{
	for (size_t i = 0; i < m->n_pages; i++)
		free(m->pages[i].v);
	free(m->pages);
	tk__map_free(&m->dir);
	if (m->fd)
		close(m->fd - 1);
	memset(m, 0, sizeof *m);
}

int tk__durs_add(tk__durs *d, int64_t v)
{
	if (v >= 0 && v <= (int64_t)UINT32_MAX) {
		if (d->n_small == d->cap_small && TK__GROW(d->small, d->cap_small, d->n_small + 1))
			return TK_ERR_NOMEM;
		d->small[d->n_small++] = (uint32_t)v;
		return 0;
	}
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

int64_t *tk__durs_sorted(const tk__durs *d)
{
	size_t n = d->n_small + d->n_big, neg = 0;
	int64_t *v = malloc((n ? n : 1) * sizeof *v);
	uint32_t *tmp = malloc((d->n_small ? d->n_small : 1) * 2 * sizeof *tmp);
	if (!v || !tmp) {
		free(v);
		free(tmp);
		return NULL;
	}
	/* wide values are negative or above every u32: they go around the rest */
	if (d->n_big) {
		memcpy(v, d->big, d->n_big * sizeof *v);
		if (tk__sort_i64(v, d->n_big)) {
			free(v);
			free(tmp);
			return NULL;
		}
	}
	while (neg < d->n_big && v[neg] < 0)
		neg++;
	memmove(v + neg + d->n_small, v + neg, (d->n_big - neg) * sizeof *v);
	const uint32_t *sorted = tmp;
	if (d->n_small) {
		memcpy(tmp, d->small, d->n_small * sizeof *tmp);
		sorted = radix(tmp, tmp + d->n_small, d->n_small, sizeof *tmp, 4);
	}
	for (size_t i = 0; i < d->n_small; i++)
		v[neg + i] = sorted[i];
	free(tmp);
	return v;
}

void tk__durs_free(tk__durs *d)
{
	free(d->small);
	free(d->big);
	memset(d, 0, sizeof *d);
}
