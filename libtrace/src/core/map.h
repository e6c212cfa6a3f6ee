/* map.h: the library's one hash map (open addressing, linear probing, records kept in the slots) and its hash functions. */
#ifndef TK_CORE_MAP_H
#define TK_CORE_MAP_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Hash of a byte string; well mixed in every bit. */
uint64_t tk__hash(const void *p, size_t n);

/* A bijective mix of a 64-bit integer (murmur3's finalizer): integer keys
 * hash through it. */
static inline uint64_t tk__mix64(uint64_t k)
{
	k ^= k >> 33;
	k *= 0xff51afd7ed558ccdull;
	k ^= k >> 33;
	k *= 0xc4ceb9fe1a85ec53ull;
	k ^= k >> 33;
	return k;
}

/* Records of a fixed size `esize` live in the slots themselves. Each record
 * starts with a uint64_t: the hash of its key as the map stores it (never
 * 0; 0 marks an empty slot). The rest is the caller's: its key, if the hash
 * does not decide equality, and its value. Inserting may move every record:
 * a pointer to one is good until the next insert. Records are never
 * removed one by one. */
typedef struct tk__map {
	unsigned char *slots;
	size_t esize;   /* bytes per record, a multiple of 8, >= 8 */
	size_t n_slots; /* a power of two, or 0 before the first insert */
	size_t n;       /* records */
	unsigned load8; /* the table doubles before n exceeds n_slots * load8 / 8 */
} tk__map;

/* esize: bytes per record; load8: the highest load in eighths (1..7). */
void tk__map_init(tk__map *m, size_t esize, unsigned load8);
void tk__map_free(tk__map *m);
/* Empties the map and keeps its memory. */
void tk__map_clear(tk__map *m);

/* The hash as stored: any hash, with 0 moved out of the way. */
static inline uint64_t tk__map_h(uint64_t h)
{
	return h ? h : 0x9E3779B97F4A7C15ull;
}

static inline uint64_t tk__map_rec_h(const void *rec)
{
	uint64_t h;
	memcpy(&h, rec, 8);
	return h;
}

/* Compares a record with the key being looked up: 1 if they are equal. */
typedef int (*tk__map_eq)(const void *rec, const void *key);

/* The record of hash h whose key equals `key` by eq (eq NULL: the hash
 * alone decides), or NULL. Inline, so that a constant eq is inlined too. */
static inline void *tk__map_find(const tk__map *m, uint64_t h, tk__map_eq eq, const void *key)
{
	if (!m->n_slots)
		return NULL;
	h = tk__map_h(h);
	size_t mask = m->n_slots - 1;
	for (size_t i = h & mask;; i = (i + 1) & mask) {
		unsigned char *r = m->slots + i * m->esize;
		uint64_t rh = tk__map_rec_h(r);
		if (!rh)
			return NULL;
		if (rh == h && (!eq || eq(r, key)))
			return r;
	}
}

/* A new record for hash h, which the caller has looked for and not found:
 * zeroed but for its hash. NULL when out of memory. */
void *tk__map_insert(tk__map *m, uint64_t h);

/* Finds, or inserts when absent (*added = 1). NULL when out of memory. */
static inline void *tk__map_put(tk__map *m, uint64_t h, tk__map_eq eq, const void *key, int *added)
{
	void *r = tk__map_find(m, h, eq, key);
	*added = !r;
	return r ? r : tk__map_insert(m, h);
}

/* Visits the records: start with *i = 0; NULL after the last. */
static inline void *tk__map_next(const tk__map *m, size_t *i)
{
	for (; *i < m->n_slots; (*i)++) {
		unsigned char *r = m->slots + *i * m->esize;
		if (tk__map_rec_h(r)) {
			(*i)++;
			return r;
		}
	}
	return NULL;
}

/* ---- integer keys: 64-bit key -> 64-bit value ---- */

typedef struct tk__map_int {
	uint64_t h, key, val;
} tk__map_int;

/* A map for tk__map_get_int / tk__map_put_int. */
static inline void tk__map_init_int(tk__map *m)
{
	tk__map_init(m, sizeof(tk__map_int), 4);
}
static inline int tk__map_int_eq(const void *rec, const void *key)
{
	return ((const tk__map_int *)rec)->key == *(const uint64_t *)key;
}
/* The value of key, or NULL when absent. */
static inline uint64_t *tk__map_get_int(const tk__map *m, uint64_t key)
{
	tk__map_int *r = (tk__map_int *)tk__map_find(m, tk__mix64(key), tk__map_int_eq, &key);
	return r ? &r->val : NULL;
}
/* The value of key, or 0 when absent (for values that are never 0). */
static inline uint64_t tk__map_get0(const tk__map *m, uint64_t key)
{
	uint64_t *v = tk__map_get_int(m, key);
	return v ? *v : 0;
}
/* Sets key's value (a zeroed map becomes an integer map); 0 or
 * TK_ERR_NOMEM. */
int tk__map_put_int(tk__map *m, uint64_t key, uint64_t val);

#endif
