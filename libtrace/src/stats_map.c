/* stats_map.c: the compact maps and duration stores behind tk_stats. */
#include <stdlib.h>

#include "stats_internal.h"

#define TK__PAGE_BITS 12
#define TK__PAGE (1u << TK__PAGE_BITS)

uint32_t tk__idmap_get(const tk__idmap *m, uint64_t id)
{
	uint64_t p = tk__map_get0(&m->dir, id >> TK__PAGE_BITS);
	return p ? m->pages[p - 1][id & (TK__PAGE - 1)] : 0;
}

int tk__idmap_put(tk__idmap *m, uint64_t id, uint32_t val)
{
	uint64_t p = tk__map_get0(&m->dir, id >> TK__PAGE_BITS);
	if (!p) {
		if (TK__GROW(m->pages, m->pages_cap, m->n_pages + 1))
			return TK_ERR_NOMEM;
		uint32_t *page = calloc(TK__PAGE, sizeof *page);
		if (!page)
			return TK_ERR_NOMEM;
		m->pages[m->n_pages++] = page;
		p = (uint32_t)m->n_pages;
		if (tk__map_put_int(&m->dir, id >> TK__PAGE_BITS, p))
			return TK_ERR_NOMEM;
	}
	m->pages[p - 1][id & (TK__PAGE - 1)] = val;
	return 0;
}

void tk__idmap_free(tk__idmap *m)
{
	for (size_t i = 0; i < m->n_pages; i++)
		free(m->pages[i]);
	free(m->pages);
	tk__map_free(&m->dir);
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
