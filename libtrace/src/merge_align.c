/* merge_align.c: clock offsets between ranks from matched NCCL collectives. */
#include <stdlib.h>

#include "merge_int.h"

#define MAX_COLLS (1u << 16) /* kernels kept per input: the first ones are what we match */
#define MAX_PAIRS 64         /* matched collectives used per rank */

/* ---- collectives ---- */

int tk__merge_note_coll(tk_merge *m, tk__input *in, const tk_event *ev)
{
	char key[256];
	size_t len;
	if ((ev->has & (TK_HAS_TS | TK_HAS_PH)) != (TK_HAS_TS | TK_HAS_PH) || ev->ph != 'X' ||
	    in->n_colls >= MAX_COLLS || !tk__coll_key(ev, key, sizeof key, &len))
		return 0;
	if (tk__grow(&in->colls, &in->colls_cap, in->n_colls + 1, sizeof *in->colls, 64))
		return TK_ERR_NOMEM;
	uint32_t id;
	if (!tk__strtab_intern_id(&m->keys, key, len, &id).ptr)
		return TK_ERR_NOMEM;
	int64_t end = tk__sat_add(ev->ts, (ev->has & TK_HAS_DUR) ? ev->dur : 0);
	in->colls[in->n_colls++] = (tk__coll){end, id};
	return 0;
}

static int coll_cmp(const void *a, const void *b)
{
	const tk__coll *x = a, *y = b;
	if (x->end != y->end)
		return x->end < y->end ? -1 : 1;
	return x->key < y->key ? -1 : x->key > y->key;
}

static int i64_cmp(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return x < y ? -1 : x > y;
}

static int p2p(const tk_merge *m, uint32_t key)
{
	const char *s = m->keys.ents[key].ptr;
	return strstr(s, "SendRecv") || strstr(s, "Send") || strstr(s, "Recv") ||
	       strcmp(s, "send") == 0 || strcmp(s, "recv") == 0;
}

/* (key, occurrence) -> the reference rank's end time. */
static int index_ref(tk_merge *m, const tk__input *ref, tk__map *idx, int with_p2p)
{
	size_t n_keys = m->keys.n;
	uint32_t *occ = calloc(n_keys ? n_keys : 1, sizeof *occ);
	if (!occ)
		return TK_ERR_NOMEM;
	for (size_t i = 0; i < ref->n_colls; i++) {
		const tk__coll *c = &ref->colls[i];
		if (!with_p2p && p2p(m, c->key))
			continue;
		int64_t k = ((int64_t)c->key << 32) | occ[c->key]++;
		if (tk__map_put_int(idx, (uint64_t)k, (uint64_t)c->end)) {
			free(occ);
			return TK_ERR_NOMEM;
		}
	}
	free(occ);
	return 0;
}

/* Differences (reference end - this rank's end, in absolute ns) of the first
 * matched collectives. */
static size_t match(const tk_merge *m, const tk__input *ref, const tk__input *in,
                    const tk__map *idx, int with_p2p, int64_t *d)
{
	uint32_t *occ = calloc(m->keys.n ? m->keys.n : 1, sizeof *occ);
	size_t n = 0;
	if (!occ)
		return 0;
	for (size_t i = 0; i < in->n_colls && n < MAX_PAIRS; i++) {
		const tk__coll *c = &in->colls[i];
		if (!with_p2p && p2p(m, c->key))
			continue;
		const int64_t *ref_end = (const int64_t *)tk__map_get_int(idx, ((uint64_t)c->key << 32) | occ[c->key]++);
		if (ref_end)
			d[n++] = tk__sat_sub(tk__sat_add(*ref_end, ref->base), tk__sat_add(c->end, in->base));
	}
	free(occ);
	return n;
}

static void estimate(tk__input *in, int64_t *d, size_t n)
{
	qsort(d, n, sizeof *d, i64_cmp);
	in->offset = d[n / 2];
	for (size_t i = 0; i < n; i++)
		d[i] = d[i] > in->offset ? tk__sat_sub(d[i], in->offset) : tk__sat_sub(in->offset, d[i]);
	qsort(d, n, sizeof *d, i64_cmp);
	in->residual = d[n / 2];
	in->matched = n;
}

static int align_one(tk_merge *m, tk__input *ref, tk__input *in, tk__map idx[2])
{
	int64_t d[MAX_PAIRS];
	size_t n = 0;
	for (int with_p2p = 0; with_p2p < 2 && n == 0; with_p2p++) {
		if (!idx[with_p2p].esize && index_ref(m, ref, &idx[with_p2p], with_p2p))
			return TK_ERR_NOMEM;
		n = match(m, ref, in, &idx[with_p2p], with_p2p, d);
	}
	if (!n)
		return tk__err_warn(&m->err, "%s: rank %lld: no NCCL collective matched rank %lld; clock left as recorded",
		                      in->path, (long long)in->rank, (long long)ref->rank);
	estimate(in, d, n);
	return 0;
}

int tk__merge_align_collectives(tk_merge *m)
{
	tk__input *ref = NULL;
	for (size_t i = 0; i < m->n_in; i++) {
		tk__input *in = &m->in[i];
		if (in->skipped)
			continue;
		if (in->n_colls > 1)
			qsort(in->colls, in->n_colls, sizeof *in->colls, coll_cmp);
		if (!ref || in->rank < ref->rank)
			ref = in;
	}
	if (!ref)
		return 0;
	tk__map idx[2] = {{0}, {0}};
	int rc = 0;
	for (size_t i = 0; i < m->n_in && !rc; i++)
		if (!m->in[i].skipped && &m->in[i] != ref)
			rc = align_one(m, ref, &m->in[i], idx);
	ref->matched = ref->n_colls;
	tk__map_free(&idx[0]);
	tk__map_free(&idx[1]);
	return rc;
}
