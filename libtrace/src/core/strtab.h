/* strtab.h: string interning with stable pointers, memory bounded by the distinct strings. */
#ifndef TK_CORE_STRTAB_H
#define TK_CORE_STRTAB_H

#include "map.h"
#include "tracekit/tracekit.h"

typedef struct tk__strtab {
	tk__map map; /* string -> index in ents */
	tk_sv *ents;
	size_t ents_cap, n;
	char **blocks;
	size_t n_blocks, blocks_cap;
	char *cur;
	size_t cur_left;
	size_t bytes;
} tk__strtab;
/* Interns s; returns the stable copy, or ptr NULL on allocation failure. */
tk_sv tk__strtab_intern(tk__strtab *t, const char *s, size_t n);
/* The same, and *id = the string's index in order of first sight. */
tk_sv tk__strtab_intern_id(tk__strtab *t, const char *s, size_t n, uint32_t *id);
/* 1 and *id when s is interned, else 0. */
int tk__strtab_find(const tk__strtab *t, const char *s, size_t n, uint32_t *id);
/* Forgets every string (their pointers go), keeping the table's index and
 * id array at their size for the strings to come. */
void tk__strtab_clear(tk__strtab *t);
void tk__strtab_free(tk__strtab *t);

#endif
