/* stats_map.c: the compact maps and duration stores behind tk_stats. */
#include <stdlib.h>

#include "stats_internal.h"

#define TK__PAGE_BITS 12
#define TK__PAGE (1u << TK__PAGE_BITS)

static uint64_t mix(uint64_t k)
{
	k ^= k >> 33;
	k *= 0xff51afd7ed558ccdull;
	k ^= k >> 33;
	k *= 0xc4ceb9fe1a85ec53ull;
	k ^= k >> 33;
	return k;
}

static int hmap_grow(tk__hmap *m)
{
	size_t ns = m->n_slots ? m->n_slots * 2 : 256;
	uint64_t *keys = malloc(ns * sizeof *keys);
	uint32_t *vals = calloc(ns, sizeof *vals);
	if (!keys || !vals) {
		free(keys);
		free(vals);
		return TK_ERR_NOMEM;
	}
	for (size_t i = 0; i < m->n_slots; i++) {
		if (!m->vals[i])
			continue;
		size_t j = mix(m->keys[i]) & (ns - 1);
		while (vals[j])
			j = (j + 1) & (ns - 1);
		keys[j] = m->keys[i];
		vals[j] = m->vals[i];
	}
	free(m->keys);
	free(m->vals);
	m->keys = keys;
	m->vals = vals;
	m->n_slots = ns;
	return 0;
}

/* Values are never 0 (callers store index + 1): a 0 value marks an empty slot. */
uint32_t tk__hmap_get(const tk__hmap *m, uint64_t key)
{
	if (!m->n_slots)
		return 0;
	size_t mask = m->n_slots - 1;
	for (size_t j = mix(key) & mask; m->vals[j]; j = (j + 1) & mask)
		if (m->keys[j] == key)
			return m->vals[j];
	return 0;
}

int tk__hmap_put(tk__hmap *m, uint64_t key, uint32_t val)
{
	if ((m->n + 1) * 4 > m->n_slots * 3 && hmap_grow(m))
		return TK_ERR_NOMEM;
	size_t mask = m->n_slots - 1, j = mix(key) & mask;
	while (m->vals[j] && m->keys[j] != key)
		j = (j + 1) & mask;
	if (!m->vals[j])
		m->n++;
	m->keys[j] = key;
	m->vals[j] = val;
	return 0;
}

void tk__hmap_free(tk__hmap *m)
{
	free(m->keys);
	free(m->vals);
	memset(m, 0, sizeof *m);
}

uint32_t tk__idmap_get(const tk__idmap *m, uint64_t id)
{
	uint32_t p = tk__hmap_get(&m->dir, id >> TK__PAGE_BITS);
	return p ? m->pages[p - 1][id & (TK__PAGE - 1)] : 0;
}

int tk__idmap_put(tk__idmap *m, uint64_t id, uint32_t val)
{
	uint32_t p = tk__hmap_get(&m->dir, id >> TK__PAGE_BITS);
	if (!p) {
		if (m->n_pages == m->pages_cap) {
			size_t nc = m->pages_cap ? m->pages_cap * 2 : 16;
			uint32_t **np = realloc(m->pages, nc * sizeof *np);
			if (!np)
				return TK_ERR_NOMEM;
			m->pages = np;
			m->pages_cap = nc;
		}
		uint32_t *page = calloc(TK__PAGE, sizeof *page);
		if (!page)
			return TK_ERR_NOMEM;
		m->pages[m->n_pages++] = page;
		p = (uint32_t)m->n_pages;
		if (tk__hmap_put(&m->dir, id >> TK__PAGE_BITS, p))
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
	tk__hmap_free(&m->dir);
	memset(m, 0, sizeof *m);
}

static int grow(void **p, size_t *cap, size_t elem)
{
	size_t nc = *cap ? *cap * 2 : 16;
	void *np = realloc(*p, nc * elem);
	if (!np)
		return TK_ERR_NOMEM;
	*p = np;
	*cap = nc;
	return 0;
}

int tk__durs_add(tk__durs *d, int64_t v)
{
	if (v >= 0 && v <= (int64_t)UINT32_MAX) {
		if (d->n_small == d->cap_small && grow((void **)&d->small, &d->cap_small, sizeof *d->small))
			return TK_ERR_NOMEM;
		d->small[d->n_small++] = (uint32_t)v;
		return 0;
	}
	if (d->n_big == d->cap_big && grow((void **)&d->big, &d->cap_big, sizeof *d->big))
		return TK_ERR_NOMEM;
	d->big[d->n_big++] = v;
	return 0;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

/* LSD radix sort of u32 by bytes, skipping a byte all values share; the
 * result is in v or tmp, returned. */
static uint32_t *radix_u32(uint32_t *v, uint32_t *tmp, size_t n)
{
	size_t count[4][256] = {{0}};
	for (size_t i = 0; i < n; i++)
		for (int b = 0; b < 4; b++)
			count[b][v[i] >> (8 * b) & 255]++;
	for (int b = 0; b < 4; b++) {
		if (count[b][v[0] >> (8 * b) & 255] == n)
			continue;
		size_t pos = 0;
		for (int k = 0; k < 256; k++) {
			size_t c = count[b][k];
			count[b][k] = pos;
			pos += c;
		}
		for (size_t i = 0; i < n; i++)
			tmp[count[b][v[i] >> (8 * b) & 255]++] = v[i];
		uint32_t *t = v;
		v = tmp;
		tmp = t;
	}
	return v;
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
		qsort(v, d->n_big, sizeof *v, cmp_i64);
	}
	while (neg < d->n_big && v[neg] < 0)
		neg++;
	memmove(v + neg + d->n_small, v + neg, (d->n_big - neg) * sizeof *v);
	const uint32_t *sorted = tmp;
	if (d->n_small) {
		memcpy(tmp, d->small, d->n_small * sizeof *tmp);
		sorted = radix_u32(tmp, tmp + d->n_small, d->n_small);
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
