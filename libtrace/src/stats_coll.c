/* stats_coll.c: the collectives table: NCCL collectives per kind and process group with bytes and the nccl-tests bandwidths, and across ranks the start skew of each matched collective and which ranks arrive last (docs/steps.md). */
#include <ctype.h>
#include <stdlib.h>

#include "sort_int.h"
#include "stats_grid.h"

static int starts(tk_sv s, const char *p)
{
	size_t n = strlen(p);
	return s.ptr && s.len >= n && memcmp(s.ptr, p, n) == 0;
}

int tk__coll_key(const tk_event *ev, char *buf, size_t cap, size_t *len)
{
	int nccl = starts(ev->name, "ncclKernel_") || starts(ev->name, "ncclDevKernel_");
	int kernel = ev->cat.ptr && ev->cat.len == 6 && memcmp(ev->cat.ptr, "kernel", 6) == 0;
	if (!nccl && !kernel)
		return 0;
	if (ev->args.ptr && tk_args_get_str(ev, "Collective name", buf, cap, len) == 0 && *len && *len < cap)
		return 1;
	if (!nccl)
		return 0;
	const char *paren = memchr(ev->name.ptr, '(', ev->name.len);
	*len = paren ? (size_t)(paren - ev->name.ptr) : ev->name.len;
	if (*len >= cap)
		*len = cap - 1;
	memcpy(buf, ev->name.ptr, *len);
	buf[*len] = 0;
	return 1;
}

/* Bytes per element of torch's dtype names as the profiler writes them. */
static int64_t dtype_size(const char *d)
{
	static const struct { const char *name; int size; } t[] = {
		{"Float", 4}, {"float", 4}, {"Double", 8}, {"double", 8}, {"Half", 2}, {"BFloat16", 2},
		{"Int", 4}, {"int", 4}, {"Long", 8}, {"long", 8}, {"Short", 2}, {"Char", 1}, {"Byte", 1},
		{"Bool", 1}, {"ComplexFloat", 8}, {"ComplexDouble", 16}, {"Float8_e4m3fn", 1}, {"Float8_e5m2", 1}};
	for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
		if (strcmp(d, t[i].name) == 0)
			return t[i].size;
	return 0;
}

/* A key's kind for the bandwidth formulas (nccl-tests): the key lowercased,
 * without '_', searched for the collective's name. */
enum { K_OTHER, K_ALLREDUCE, K_ALLGATHER, K_REDUCESCATTER, K_ALLTOALL, K_BROADCAST, K_REDUCE, K_SENDRECV };
static int kind_of(const char *key)
{
	char b[256];
	size_t n = 0;
	for (const char *p = key; *p && n + 1 < sizeof b; p++)
		if (*p != '_' && *p != ' ')
			b[n++] = (char)tolower((unsigned char)*p);
	b[n] = 0;
	if (strstr(b, "allreduce"))
		return K_ALLREDUCE;
	if (strstr(b, "allgather"))
		return K_ALLGATHER;
	if (strstr(b, "reducescatter"))
		return K_REDUCESCATTER;
	if (strstr(b, "alltoall"))
		return K_ALLTOALL;
	if (strstr(b, "broadcast"))
		return K_BROADCAST;
	if (strstr(b, "sendrecv") || strstr(b, "send") || strstr(b, "recv"))
		return K_SENDRECV;
	if (strstr(b, "reduce"))
		return K_REDUCE;
	return K_OTHER;
}

/* nccl-tests' bus bandwidth factor for n ranks. */
static double bus_factor(int kind, uint32_t n)
{
	if (n < 1)
		return 1;
	switch (kind) {
	case K_ALLREDUCE: return 2.0 * (n - 1) / n;
	case K_ALLGATHER:
	case K_REDUCESCATTER:
	case K_ALLTOALL: return (double)(n - 1) / n;
	default: return 1;
	}
}

static int row_of(tk_stats *s, const char *key, size_t klen, const char *pg, uint32_t *idx)
{
	for (size_t i = 0; i < s->n_coll_rows; i++)
		if (strlen(s->coll_rows[i].kind) == klen && memcmp(s->coll_rows[i].kind, key, klen) == 0 &&
		    strcmp(s->coll_rows[i].group, pg) == 0) {
			*idx = (uint32_t)i;
			return 0;
		}
	if (s->n_coll_rows >= 65536 || TK__GROW(s->coll_rows, s->cap_coll_rows, s->n_coll_rows + 1) ||
	    TK__GROW(s->coll_ts, s->cap_coll_ts, s->n_coll_rows + 1))
		return TK_ERR_NOMEM;
	tk_sv k = tk__strtab_intern(&s->strs, key, klen), g = tk__strtab_intern(&s->strs, pg, strlen(pg));
	if (!k.ptr || !g.ptr)
		return TK_ERR_NOMEM;
	tk_stats_collective *r = &s->coll_rows[s->n_coll_rows];
	memset(r, 0, sizeof *r);
	memset(&s->coll_ts[s->n_coll_rows], 0, sizeof *s->coll_ts);
	r->kind = k.ptr;
	r->group = g.ptr;
	*idx = (uint32_t)s->n_coll_rows++;
	return 0;
}

static const char coll_what[] = "the collectives table, sorting the NCCL kernels";

int tk__stats_coll_init(tk_stats *s, size_t bytes)
{
	tk_sorter_opts so = {bytes, s->opts.tmpdir};
	int rc = tk_sorter_new(&s->coll_sort, &so);
	return rc ? tk__stats_sort_fail(s, s->coll_sort, coll_what, rc) : 0;
}

void tk__stats_free_coll(tk_stats *s)
{
	tk_sorter_free(s->coll_sort);
	s->coll_sort = NULL;
	for (size_t i = 0; i < s->n_coll_rows; i++)
		tk__u32s_free(&s->coll_ts[i]);
	free(s->coll_ts);
	s->coll_ts = NULL;
	tk__pool_free(&s->coll_pool);
	free(s->coll_rows);
	s->coll_rows = NULL;
	s->n_coll_rows = s->cap_coll_rows = s->cap_coll_ts = 0;
}

int tk__stats_coll_add(tk_stats *s, const tk_event *ev)
{
	char key[256], pg[128] = "", dt[32] = "";
	size_t len, l2;
	if (ev->ph != 'X' || !(ev->has & TK_HAS_TS) || !tk__coll_key(ev, key, sizeof key, &len))
		return 0;
	int64_t in = 0, out = 0, gs = 0;
	if (ev->args.ptr) {
		if (tk_args_get_str(ev, "Process Group Name", pg, sizeof pg, &l2) != 0 || l2 >= sizeof pg)
			pg[0] = 0;
		if (tk_args_get_str(ev, "dtype", dt, sizeof dt, &l2) != 0 || l2 >= sizeof dt)
			dt[0] = 0;
		if (tk_args_get_int(ev, "In msg nelems", &in) || in < 0)
			in = 0;
		if (tk_args_get_int(ev, "Out msg nelems", &out) || out < 0)
			out = 0;
		if (tk_args_get_int(ev, "Group size", &gs) || gs < 0 || gs > UINT32_MAX)
			gs = 0;
	}
	uint32_t row;
	if (row_of(s, key, len, pg, &row))
		return tk__err_msg(&s->err, TK_ERR_NOMEM, "out of memory");
	int kind = kind_of(key);
	/* nccl-tests' size: the output of a gather, the input of the others */
	int64_t n = kind == K_ALLGATHER ? out : in, b;
	if (__builtin_mul_overflow(n, dtype_size(dt), &b))
		b = INT64_MAX;
	/* the sums do not depend on the order (saturating, of values >= 0) */
	tk_stats_collective *r = &s->coll_rows[row];
	r->count++;
	r->bytes = tk__sat_add(r->bytes, b);
	r->time = tk__sat_add(r->time, (ev->has & TK_HAS_DUR) && ev->dur > 0 ? ev->dur : 0);
	if ((uint32_t)gs > r->ranks)
		r->ranks = (uint32_t)gs;
	/* the start, for the straggler view: by time, ties in the order read */
	int rc = tk__sorter_add_rec(s->coll_sort, ev->ts, &row, sizeof row, 0);
	if (rc)
		return tk__stats_sort_fail(s, s->coll_sort, coll_what, rc);
	s->n_coll++;
	return 0;
}

/* Each row's starts in time order, from the sorter into the pages. */
int tk__stats_finish_coll(tk_stats *s)
{
	int rc = s->n_coll ? tk_sorter_finish(s->coll_sort) : 0;
	int64_t ts;
	uint32_t row;
	while (!rc && s->n_coll && (rc = tk__sorter_next_rec(s->coll_sort, &ts, &row, sizeof row, NULL)) == 1) {
		if (row >= s->n_coll_rows)
			return tk__err_msg(&s->err, TK_ERR_IO, "%s: a record read back is damaged", coll_what);
		tk__u32s *l = &s->coll_ts[row];
		if ((rc = tk__u32s_add(&s->coll_pool, l, (uint32_t)((uint64_t)ts >> 32))) == 0)
			rc = tk__u32s_add(&s->coll_pool, l, (uint32_t)ts);
		if (rc)
			return tk__err_msg(&s->err, rc, "%s", rc == TK_ERR_NOMEM ? "out of memory" : s->coll_pool.msg);
		rc = 0;
	}
	if (rc)
		return tk__stats_sort_fail(s, s->coll_sort, coll_what, rc);
	tk_sorter_free(s->coll_sort);
	s->coll_sort = NULL;
	for (size_t i = 0; i < s->n_coll_rows; i++) {
		tk_stats_collective *r = &s->coll_rows[i];
		r->avg = r->count ? (double)r->time / (double)r->count : 0;
		r->algbw = r->time > 0 ? (double)r->bytes / (double)r->time : 0; /* bytes per ns = GB/s */
		r->busbw = r->algbw * bus_factor(kind_of(r->kind), r->ranks);
	}
	return 0;
}

size_t tk_stats_collective_count(const tk_stats *s)
{
	return s && s->finished ? s->n_coll_rows : 0;
}

const tk_stats_collective *tk_stats_collective_get(const tk_stats *s, size_t i)
{
	return s && s->finished && i < s->n_coll_rows ? &s->coll_rows[i] : NULL;
}

/* ---- across ranks ---- */

/* The row of (kind, group) of one rank, or -1. */
static long row_named(const tk_stats *s, const char *kind, const char *group)
{
	for (size_t i = 0; i < s->n_coll_rows; i++)
		if (strcmp(s->coll_rows[i].kind, kind) == 0 && strcmp(s->coll_rows[i].group, group) == 0)
			return (long)i;
	return -1;
}

/* The j-th start in time order of row r of rank s: 0 or an error, its
 * message in s->err. */
static int start_at(tk_stats *s, long r, size_t j, int64_t *ts)
{
	uint32_t hi, lo;
	int rc = tk__u32s_get(&s->coll_pool, &s->coll_ts[r], 2 * j, &hi);
	if (!rc)
		rc = tk__u32s_get(&s->coll_pool, &s->coll_ts[r], 2 * j + 1, &lo);
	if (rc)
		return tk__err_msg(&s->err, rc, "%s", rc == TK_ERR_NOMEM ? "out of memory" : s->coll_pool.msg);
	*ts = (int64_t)((uint64_t)hi << 32 | lo);
	return 0;
}

int tk_stats_stragglers(tk_stats *const *s, size_t n, tk_stats_straggler *out, uint64_t *instances,
                        int64_t *max_skew)
{
	return tk_stats_stragglers_of(s, n, NULL, NULL, out, instances, max_skew);
}

int tk_stats_stragglers_of(tk_stats *const *s, size_t n, const char *kind, const char *group,
                           tk_stats_straggler *out, uint64_t *instances, int64_t *max_skew)
{
	if (!s || !out || !instances || !max_skew)
		return TK_ERR_ARG;
	memset(out, 0, n * sizeof *out);
	*instances = 0;
	*max_skew = 0;
	long *rows = calloc(n ? n : 1, sizeof *rows);
	size_t *lens = calloc(n ? n : 1, sizeof *lens);
	int64_t *at = calloc(n ? n : 1, sizeof *at);
	int rc = rows && lens && at ? 0 : TK_ERR_NOMEM;
	/* every (kind, group) of any rank, once: the first rank that has it */
	for (size_t a = 0; a < n && !rc; a++)
		for (size_t k = 0; k < s[a]->n_coll_rows && !rc; k++) {
			const tk_stats_collective *row = &s[a]->coll_rows[k];
			if ((kind && strcmp(row->kind, kind) != 0) || (group && strcmp(row->group, group) != 0))
				continue;
			int seen = 0;
			for (size_t b = 0; b < a && !seen; b++)
				seen = row_named(s[b], row->kind, row->group) >= 0;
			if (seen)
				continue;
			size_t most = 0, ranks = 0;
			for (size_t b = 0; b < n; b++) {
				rows[b] = row_named(s[b], row->kind, row->group);
				lens[b] = rows[b] >= 0 ? s[b]->coll_ts[rows[b]].n / 2 : 0;
				most = lens[b] > most ? lens[b] : most;
				ranks += lens[b] > 0;
			}
			if (ranks < 2)
				continue;
			/* the j-th of each rank that has one is one instance */
			for (size_t j = 0; j < most && !rc; j++) {
				int64_t lo = INT64_MAX, hi = INT64_MIN;
				size_t last = 0, have = 0;
				for (size_t b = 0; b < n && !rc; b++) {
					if (j >= lens[b] || (rc = start_at(s[b], rows[b], j, &at[b])) != 0)
						continue;
					int64_t t = at[b];
					have++;
					lo = t < lo ? t : lo;
					if (t > hi) {
						hi = t;
						last = b;
					}
				}
				if (rc || have < 2)
					continue;
				(*instances)++;
				int64_t skew = tk__sat_sub(hi, lo);
				*max_skew = skew > *max_skew ? skew : *max_skew;
				out[last].last++;
				for (size_t b = 0; b < n; b++) {
					if (j >= lens[b])
						continue;
					int64_t late = tk__sat_sub(at[b], lo);
					out[b].instances++;
					out[b].late_total = tk__sat_add(out[b].late_total, late);
					out[b].late_max = late > out[b].late_max ? late : out[b].late_max;
				}
			}
		}
	free(rows);
	free(lens);
	free(at);
	return rc;
}

/* ---- the tables ---- */

int tk_stats_format_collectives(tk_stats *const *s, size_t n, const tk_table_opts *o, char **out, size_t *len)
{
	*out = NULL;
	if (!s || !n || !o)
		return TK_ERR_ARG;
	tk__grid g = {0};
	static const char *const heads[][2] = {
		{"Count", "count"},           {"Bytes", "bytes"},         {"Total (ns)", "total_ns"},
		{"Avg (ns)", "avg_ns"},       {"Algbw (GB/s)", "algbw_gb_per_s"}, {"Busbw (GB/s)", "busbw_gb_per_s"},
		{"Ranks", "group_size"},
	};
	int rc = n > 1 ? tk__grid_col(&g, "Rank", "rank", 0, 1, 0) : 0;
	rc = rc || tk__grid_col(&g, "Collective", "collective", 0, 1, 0) || tk__grid_col(&g, "Group", "group", 0, 1, 0);
	for (size_t i = 0; !rc && i < sizeof heads / sizeof heads[0]; i++)
		rc = tk__grid_col(&g, heads[i][0], heads[i][1], 0, 0, 1);
	size_t rows = 0;
	char l[40];
	for (size_t i = 0; !rc && i < n; i++) {
		tk__grid_label(o, i, l, sizeof l);
		for (size_t k = 0; !rc && k < s[i]->n_coll_rows; k++, rows++) {
			if (o->row_limit >= 0 && rows >= (size_t)o->row_limit)
				continue;
			const tk_stats_collective *r = &s[i]->coll_rows[k];
			size_t c = 0;
			rc = tk__grid_row(&g);
			if (!rc && n > 1)
				rc = tk__grid_set(&g, c++, l, l);
			/* no message size recorded (older NCCL, no In msg nelems): no
			 * bytes and no bandwidth, "-" (null), not a measured 0 */
			int sized = r->bytes > 0;
			rc = rc || tk__grid_set(&g, c++, r->kind, r->kind) || tk__grid_set(&g, c++, r->group, r->group) ||
			     tk__grid_set_i64(&g, c++, (int64_t)r->count) ||
			     (sized ? tk__grid_set_i64(&g, c++, r->bytes) : tk__grid_set(&g, c++, "-", "null")) ||
			     tk__grid_set_i64(&g, c++, r->time) || tk__grid_set_num(&g, c++, r->avg, 1) ||
			     (sized ? tk__grid_set_num(&g, c++, r->algbw, 3) : tk__grid_set(&g, c++, "-", "null")) ||
			     /* the bus factor needs the group size */
			     (sized && r->ranks > 0 ? tk__grid_set_num(&g, c++, r->busbw, 3) : tk__grid_set(&g, c++, "-", "null")) ||
			     (r->ranks > 0 ? tk__grid_set_i64(&g, c++, r->ranks) : tk__grid_set(&g, c++, "-", "null"));
		}
	}
	/* across ranks: the stragglers */
	tk_stats_straggler *st = n > 1 && !rc ? calloc(n, sizeof *st) : NULL;
	uint64_t inst = 0;
	int64_t skew = 0;
	if (st && !(rc = tk_stats_stragglers(s, n, st, &inst, &skew)) && inst) {
		size_t worst = 0;
		for (size_t i = 1; i < n; i++)
			if (st[i].last > st[worst].last)
				worst = i;
		for (size_t i = 0; i < n && !rc; i++) {
			char d[256], v[160];
			tk__grid_label(o, i, l, sizeof l);
			double mean = st[i].instances ? (double)st[i].late_total / (double)st[i].instances : 0;
			snprintf(d, sizeof d, "%s: last in %llu of %llu collectives, late by %.0f ns on average, %lld at most", l,
			         (unsigned long long)st[i].last, (unsigned long long)st[i].instances, mean,
			         (long long)st[i].late_max);
			snprintf(v, sizeof v, "{\"last\":%llu,\"instances\":%llu,\"late_mean_ns\":%.0f,\"late_max_ns\":%lld}",
			         (unsigned long long)st[i].last, (unsigned long long)st[i].instances, mean,
			         (long long)st[i].late_max);
			char key[64]; /* the footer escapes it */
			snprintf(key, sizeof key, "late:%s", l);
			rc = tk__grid_footer(&g, d, key, v);
		}
		char d[256], v[64];
		tk__grid_label(o, worst, l, sizeof l);
		snprintf(d, sizeof d, "%llu collectives matched across ranks (the k-th of a kind and group on each); start "
		         "skew at most %lld ns; most often last: %s", (unsigned long long)inst, (long long)skew, l);
		snprintf(v, sizeof v, "%llu", (unsigned long long)inst);
		rc = rc || tk__grid_footer(&g, d, "matched", v);
		snprintf(v, sizeof v, "%lld", (long long)skew);
		rc = rc || tk__grid_footer(&g, NULL, "max_skew_ns", v);
	} else if (n > 1 && !st && !rc) {
		rc = TK_ERR_NOMEM;
	}
	free(st);
	return tk__grid_output(&g, rc, rows, o->format, out, len);
}
