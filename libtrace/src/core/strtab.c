/* strtab.c: string interning with stable pointers (names, categories, string ids). */
#include <stdlib.h>

#include "internal.h"

#define TK__BLOCK (64 * 1024)

typedef struct srec {
	uint64_t h;
	uint32_t idx;
} srec;

typedef struct skey {
	const tk__strtab *t;
	const char *s;
	size_t n;
} skey;

static int str_eq(const void *rec, const void *key)
{
	const skey *k = key;
	const tk_sv *e = &k->t->ents[((const srec *)rec)->idx];
	return e->len == k->n && memcmp(e->ptr, k->s, k->n) == 0;
}

static char *store(tk__strtab *t, const char *s, size_t n)
{
	if (n + 1 > t->cur_left) {
		size_t sz = n + 1 > TK__BLOCK / 4 ? n + 1 : TK__BLOCK;
		if (TK__GROW(t->blocks, t->blocks_cap, t->n_blocks + 1))
			return NULL;
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
	if (!t->map.esize)
		tk__map_init(&t->map, sizeof(srec), 4);
	uint64_t h = tk__hash(s, n);
	skey k = {t, s, n};
	const srec *r = tk__map_find(&t->map, h, str_eq, &k);
	if (r) {
		*id = r->idx;
		return t->ents[r->idx];
	}
	if (t->n == t->ents_cap && tk__grow(&t->ents, &t->ents_cap, t->n + 1, sizeof *t->ents, 1024))
		return none;
	char *d = store(t, s, n);
	srec *nr = d ? tk__map_insert(&t->map, h) : NULL;
	if (!nr)
		return none;
	nr->idx = (uint32_t)t->n;
	t->ents[t->n] = (tk_sv){d, n};
	*id = (uint32_t)t->n++;
	return t->ents[*id];
}

int tk__strtab_find(const tk__strtab *t, const char *s, size_t n, uint32_t *id)
{
	skey k = {t, s, n};
	const srec *r = tk__map_find(&t->map, tk__hash(s, n), str_eq, &k);
	if (r)
		*id = r->idx;
	return r != NULL;
}

tk_sv tk__strtab_intern(tk__strtab *t, const char *s, size_t n)
{
	uint32_t id;
	return tk__strtab_intern_id(t, s, n, &id);
}

void tk__strtab_clear(tk__strtab *t)
{
	for (size_t i = 0; i < t->n_blocks; i++)
		free(t->blocks[i]);
	t->n_blocks = 0;
	t->cur = NULL;
	t->cur_left = 0;
	t->bytes = 0;
	t->n = 0;
	tk__map_clear(&t->map);
}

void tk__strtab_free(tk__strtab *t)
{
	for (size_t i = 0; i < t->n_blocks; i++)
		free(t->blocks[i]);
	free(t->blocks);
	tk__map_free(&t->map);
	free(t->ents);
	memset(t, 0, sizeof *t);
}
