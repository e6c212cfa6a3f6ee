/* map.c: the one hash map: growth, insertion, integer keys; the string hash. */
#include <stdlib.h>

#include "internal.h"

uint64_t tk__hash(const void *p, size_t n)
{
	const unsigned char *s = p;
	uint64_t h = 0x9E3779B97F4A7C15ull ^ (n * 0xff51afd7ed558ccdull);
	while (n >= 8) {
		uint64_t w;
		memcpy(&w, s, 8);
		h = (h ^ w) * 0xbf58476d1ce4e5b9ull;
		h ^= h >> 31;
		s += 8;
		n -= 8;
	}
	/* the last 0-7 bytes, without a call to memcpy of a variable size */
	uint64_t w = 0;
	if (n >= 4) {
		uint32_t a, z;
		memcpy(&a, s, 4);
		memcpy(&z, s + n - 4, 4);
		w = (uint64_t)a | (uint64_t)z << 32;
	} else if (n) {
		w = (uint64_t)s[0] | (uint64_t)s[n / 2] << 8 | (uint64_t)s[n - 1] << 16;
	}
	h = (h ^ w) * 0x94d049bb133111ebull;
	h ^= h >> 29;
	h *= 0xbf58476d1ce4e5b9ull;
	h ^= h >> 32;
	return h;
}

void tk__map_init(tk__map *m, size_t esize, unsigned load8)
{
	memset(m, 0, sizeof *m);
	m->esize = esize;
	m->load8 = load8 >= 1 && load8 <= 7 ? load8 : 4;
}

void tk__map_free(tk__map *m)
{
	free(m->slots);
	m->slots = NULL;
	m->n_slots = m->n = 0;
}

void tk__map_clear(tk__map *m)
{
	if (m->slots)
		memset(m->slots, 0, m->n_slots * m->esize);
	m->n = 0;
}

static int grow(tk__map *m)
{
	size_t ns = m->n_slots ? m->n_slots * 2 : 64;
	if (ns > SIZE_MAX / m->esize)
		return TK_ERR_NOMEM;
	unsigned char *slots = calloc(ns, m->esize);
	if (!slots)
		return TK_ERR_NOMEM;
	for (size_t i = 0; i < m->n_slots; i++) {
		const unsigned char *r = m->slots + i * m->esize;
		uint64_t h = tk__map_rec_h(r);
		if (!h)
			continue;
		size_t j = h & (ns - 1);
		while (tk__map_rec_h(slots + j * m->esize))
			j = (j + 1) & (ns - 1);
		memcpy(slots + j * m->esize, r, m->esize);
	}
	free(m->slots);
	m->slots = slots;
	m->n_slots = ns;
	return 0;
}

void *tk__map_insert(tk__map *m, uint64_t h)
{
	if ((m->n + 1) * 8 > m->n_slots * m->load8 && grow(m))
		return NULL;
	h = tk__map_h(h);
	size_t mask = m->n_slots - 1, i = h & mask;
	while (tk__map_rec_h(m->slots + i * m->esize))
		i = (i + 1) & mask;
	unsigned char *r = m->slots + i * m->esize;
	memcpy(r, &h, 8);
	m->n++;
	return r;
}

int tk__map_put_int(tk__map *m, uint64_t key, uint64_t val)
{
	int added;
	if (!m->esize)
		tk__map_init_int(m);
	tk__map_int *r = tk__map_put(m, tk__mix64(key), tk__map_int_eq, &key, &added);
	if (!r)
		return TK_ERR_NOMEM;
	r->key = key;
	r->val = val;
	return 0;
}
