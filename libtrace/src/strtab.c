/* strtab.c: string interning with stable pointers (names, categories, string ids). */
#include <stdlib.h>

#include "internal.h"

#define TK__BLOCK (64 * 1024)

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
	uint64_t w = 0;
	memcpy(&w, s, n);
	h = (h ^ w) * 0x94d049bb133111ebull;
	h ^= h >> 29;
	h *= 0xbf58476d1ce4e5b9ull;
	h ^= h >> 32;
	return h;
}

static int grow(tk__strtab *t)
{
	size_t ns = t->n_slots ? t->n_slots * 2 : 1024;
	uint32_t *slots = calloc(ns, sizeof *slots);
	uint64_t *hashes = calloc(ns, sizeof *hashes);
	if (!slots || !hashes) {
		free(slots);
		free(hashes);
		return TK_ERR_NOMEM;
	}
	for (size_t i = 0; i < t->n_slots; i++) {
		if (!t->slots[i])
			continue;
		size_t j = t->hashes[i] & (ns - 1);
		while (slots[j])
			j = (j + 1) & (ns - 1);
		slots[j] = t->slots[i];
		hashes[j] = t->hashes[i];
	}
	free(t->slots);
	free(t->hashes);
	t->slots = slots;
	t->hashes = hashes;
	t->n_slots = ns;
	return 0;
}

static char *store(tk__strtab *t, const char *s, size_t n)
{
	if (n + 1 > t->cur_left) {
		size_t sz = n + 1 > TK__BLOCK / 4 ? n + 1 : TK__BLOCK;
		if (t->n_blocks == t->blocks_cap) {
			size_t nc = t->blocks_cap ? t->blocks_cap * 2 : 16;
			char **nb = realloc(t->blocks, nc * sizeof *nb);
			if (!nb)
				return NULL;
			t->blocks = nb;
			t->blocks_cap = nc;
		}
		char *blk = malloc(sz);
		if (!blk)
			return NULL;
		t->blocks[t->n_blocks++] = blk;
		t->cur = blk; /* the rest of the old block is given up */
		t->cur_left = sz;
	}
	char *d = t->cur;
	memcpy(d, s, n);
	d[n] = 0;
	t->cur += n + 1;
	t->cur_left -= n + 1;
	t->bytes += n + 1;
	return d;
}

/* Interns s and stores its index (0, 1, 2... in order of first sight) in *id. */
tk_sv tk__strtab_intern_id(tk__strtab *t, const char *s, size_t n, uint32_t *id)
{
	tk_sv none = {NULL, 0};
	if (t->n * 2 >= t->n_slots && grow(t))
		return none;
	uint64_t h = tk__hash(s, n);
	size_t mask = t->n_slots - 1, j = h & mask;
	while (t->slots[j]) {
		if (t->hashes[j] == h) {
			tk_sv *e = &t->ents[t->slots[j] - 1];
			if (e->len == n && memcmp(e->ptr, s, n) == 0) {
				*id = t->slots[j] - 1;
				return *e;
			}
		}
		j = (j + 1) & mask;
	}
	if (t->n == t->ents_cap) {
		size_t nc = t->ents_cap ? t->ents_cap * 2 : 1024;
		tk_sv *ne = realloc(t->ents, nc * sizeof *ne);
		if (!ne)
			return none;
		t->ents = ne;
		t->ents_cap = nc;
	}
	char *d = store(t, s, n);
	if (!d)
		return none;
	t->ents[t->n] = (tk_sv){d, n};
	t->slots[j] = (uint32_t)(++t->n);
	t->hashes[j] = h;
	*id = (uint32_t)(t->n - 1);
	return t->ents[t->n - 1];
}

tk_sv tk__strtab_intern(tk__strtab *t, const char *s, size_t n)
{
	uint32_t id;
	return tk__strtab_intern_id(t, s, n, &id);
}

void tk__strtab_free(tk__strtab *t)
{
	for (size_t i = 0; i < t->n_blocks; i++)
		free(t->blocks[i]);
	free(t->blocks);
	free(t->slots);
	free(t->hashes);
	free(t->ents);
	memset(t, 0, sizeof *t);
}
