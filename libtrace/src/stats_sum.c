/* stats_sum.c: kernel, memcpy/memset and API summaries (nsys cuda_gpu_kern_sum shape). */
#define _GNU_SOURCE
#include <fnmatch.h>
#include <math.h>
#include <stdlib.h>

#include "stats_grid.h"

static int cmp_sum(const void *a, const void *b, void *ctx)
{
	const tk_stats *st = ctx;
	const tk_stats_sum *x = &st->sums[*(const size_t *)a].pub;
	const tk_stats_sum *y = &st->sums[*(const size_t *)b].pub;
	if (x->total != y->total)
		return x->total > y->total ? -1 : 1;
	return strcmp(x->name, y->name);
}

static int table_of(int cls)
{
	return cls == TK_STATS_MEMSET ? TK_STATS_MEMCPY : cls;
}

int tk__stats_finish_sums(tk_stats *s)
{
	for (size_t i = 0; i < s->n_sums; i++) {
		tk__sumrow *r = &s->sums[i];
		tk__durset set = {&s->dur_pool, &r->durs};
		int rc = tk__durs_describe(&set, 1, r->pub.total, &r->pub.med, &r->pub.stddev);
		if (rc)
			return tk__stats_map_fail(s, rc);
		r->pub.avg = r->pub.count ? (double)r->pub.total / (double)r->pub.count : 0;
		int t = table_of(r->cls);
		size_t *o = realloc(s->sum_order[t], (s->n_sum_order[t] + 1) * sizeof *o);
		if (!o)
			return tk__err_msg(&s->err, TK_ERR_NOMEM, "out of memory");
		s->sum_order[t] = o;
		o[s->n_sum_order[t]++] = i;
	}
	/* qsort_r: the comparison needs the table, and a global would not be
	 * safe in a library used from several threads */
	for (int t = 0; t < 6; t++)
		if (s->n_sum_order[t]) /* sum_order[t] is NULL when empty */
			qsort_r(s->sum_order[t], s->n_sum_order[t], sizeof(size_t), cmp_sum, s);
	return 0;
}

size_t tk_stats_sum_count(const tk_stats *s, int which)
{
	return s->finished && which >= 0 && which < 6 ? s->n_sum_order[which] : 0;
}

const tk_stats_sum *tk_stats_sum_get(const tk_stats *s, int which, size_t i)
{
	if (i >= tk_stats_sum_count(s, which))
		return NULL;
	return &s->sums[s->sum_order[which][i]].pub;
}

/* ---- several ranks: rows matched by name, durations pooled for the median ---- */

typedef struct srow {
	tk_stats_sum sum;
	const tk__sumrow **per; /* per rank */
} srow;

/* The rows of every rank together: their median and deviation. */
static int pool(srow *m, tk_stats *const *s, size_t n)
{
	size_t total = 0, ranks = 0, only = 0;
	for (size_t i = 0; i < n; i++) {
		total += m->per[i] ? m->per[i]->pub.count : 0;
		if (m->per[i])
			ranks++, only = i;
	}
	const tk_stats_sum *one = ranks == 1 ? &m->per[only]->pub : NULL;
	if (one && one->count == m->sum.count && one->total == m->sum.total) {
		/* the values tk_stats_finish described already */
		m->sum.avg = one->avg;
		m->sum.med = one->med;
		m->sum.stddev = one->stddev;
		return 0;
	}
	tk__durset *sets = malloc((n ? n : 1) * sizeof *sets);
	if (!sets)
		return TK_ERR_NOMEM;
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		if (m->per[i])
			sets[k++] = (tk__durset){&s[i]->dur_pool, &m->per[i]->durs};
	m->sum.avg = total ? (double)m->sum.total / (double)total : 0;
	int rc = tk__durs_describe(sets, k, m->sum.total, &m->sum.med, &m->sum.stddev);
	free(sets);
	return rc;
}

static void add_sum(tk_stats_sum *d, const tk_stats_sum *s)
{
	if (!d->count || s->min < d->min)
		d->min = s->min;
	if (!d->count || s->max > d->max)
		d->max = s->max;
	d->count += s->count;
	d->total += s->total;
	d->bytes += s->bytes;
}

static int merge_sums(srow **rows, size_t *n_rows, const tk__sumrow ***store,
                      tk_stats *const *s, size_t n, int which, const char *glob)
{
	size_t cap = 0;
	for (size_t i = 0; i < n; i++)
		cap += tk_stats_sum_count(s[i], which);
	*rows = calloc(cap ? cap : 1, sizeof **rows);
	*store = calloc((cap ? cap : 1) * n, sizeof **store);
	tk__strtab keys = {0};
	tk__map idx = {0};
	int rc = *rows && *store ? 0 : TK_ERR_NOMEM;
	*n_rows = 0;
	for (size_t i = 0; i < n && !rc; i++) {
		for (size_t j = 0; j < tk_stats_sum_count(s[i], which) && !rc; j++) {
			const tk__sumrow *r = &s[i]->sums[s[i]->sum_order[which][j]];
			if (glob && fnmatch(glob, r->pub.name, 0) != 0)
				continue;
			tk_sv k = tk__strtab_intern(&keys, r->pub.name, strlen(r->pub.name));
			uint32_t x = k.ptr ? (uint32_t)tk__map_get0(&idx, (uintptr_t)k.ptr) : 0;
			if (!k.ptr || (!x && tk__map_put_int(&idx, (uintptr_t)k.ptr, (uint32_t)*n_rows + 1))) {
				rc = TK_ERR_NOMEM;
				break;
			}
			srow *m = &(*rows)[x ? x - 1 : *n_rows];
			if (!x) {
				m->sum.name = r->pub.name;
				m->per = *store + (*n_rows)++ * n;
			}
			add_sum(&m->sum, &r->pub);
			m->per[i] = r;
		}
	}
	for (size_t i = 0; i < *n_rows && !rc; i++)
		rc = pool(&(*rows)[i], s, n);
	tk__strtab_free(&keys);
	tk__map_free(&idx);
	return rc;
}

static int cmp_srow(const void *a, const void *b)
{
	const srow *x = a, *y = b;
	if (x->sum.total != y->sum.total)
		return x->sum.total > y->sum.total ? -1 : 1;
	return strcmp(x->sum.name, y->sum.name);
}

/* ---- nsys number formats ---- */

void tk__thousands(char *b, size_t n, const char *digits)
{
	size_t len = strlen(digits), lead = digits[0] == '-', k = 0;
	const char *dot = strchr(digits, '.');
	size_t intlen = (dot ? (size_t)(dot - digits) : len) - lead;
	if (lead && k + 1 < n)
		b[k++] = '-';
	for (size_t i = 0; i < intlen && k + 2 < n; i++) {
		if (i && (intlen - i) % 3 == 0)
			b[k++] = ',';
		b[k++] = digits[lead + i];
	}
	for (const char *p = dot; p && *p && k + 1 < n; p++)
		b[k++] = *p;
	b[k] = 0;
}

static const char *const count_heads[] = {"", "", "Num Calls", "Instances", "Count", "Count"};
static const char *const name_heads[] = {"", "", "Name", "Name", "Operation", "Operation"};

static int sum_cols(tk__grid *g, int which, size_t n, const tk_table_opts *o)
{
	int rc = tk__grid_col(g, "Time (%)", "time_pct", 0, 0, 1) ||
	         tk__grid_col(g, "Total Time (ns)", "total_ns", 0, 0, 1) ||
	         tk__grid_col(g, count_heads[which], "count", 0, 0, 1) ||
	         tk__grid_col(g, "Avg (ns)", "avg_ns", 0, 0, 1) ||
	         tk__grid_col(g, "Med (ns)", "med_ns", 0, 0, 1) ||
	         tk__grid_col(g, "Min (ns)", "min_ns", 0, 0, 1) ||
	         tk__grid_col(g, "Max (ns)", "max_ns", 0, 0, 1) ||
	         tk__grid_col(g, "StdDev (ns)", "stddev_ns", 0, 0, 1);
	if (!rc && which == TK_STATS_MEMCPY)
		rc = tk__grid_col(g, "Total (MB)", "total_mb", 0, 0, 1) ||
		     tk__grid_col(g, "Avg (GB/s)", "avg_gb_per_s", 0, 0, 1);
	for (size_t i = 0; n > 1 && i < n && !rc; i++) {
		char l[40], h[64], id[64];
		if (o->labels)
			snprintf(l, sizeof l, "%s", o->labels[i]);
		else
			snprintf(l, sizeof l, "rank %zu", i);
		snprintf(id, sizeof id, "%s (ns):total_ns", l);
		snprintf(h, sizeof h, "%s Total (ns)", l); /* which metric, as the Total Time column */
		rc = tk__grid_col(g, h, id, 0, 0, 1);
	}
	if (!rc && n > 1)
		rc = tk__grid_col(g, "Max rank", "max_rank", 0, 0, 0);
	return rc ? rc : tk__grid_col(g, name_heads[which], "name", 0, 1, 0);
}

static int sum_line(tk__grid *g, const srow *m, int64_t all, int which, size_t n,
                    const tk_table_opts *o)
{
	const tk_stats_sum *r = &m->sum;
	size_t c = 0;
	int rc = tk__grid_row(g) ||
	         tk__grid_set_num(g, c++, all ? 100.0 * (double)r->total / (double)all : 0, 1) ||
	         tk__grid_set_num(g, c++, (double)r->total, 0) || tk__grid_set_num(g, c++, (double)r->count, 0) ||
	         tk__grid_set_num(g, c++, r->avg, 1) || tk__grid_set_num(g, c++, r->med, 1) ||
	         tk__grid_set_num(g, c++, (double)r->min, 0) || tk__grid_set_num(g, c++, (double)r->max, 0) ||
	         tk__grid_set_num(g, c++, r->stddev, 1);
	if (!rc && which == TK_STATS_MEMCPY)
		rc = tk__grid_set_num(g, c++, (double)r->bytes / 1e6, 3) ||
		     tk__grid_set_num(g, c++, r->total ? (double)r->bytes / (double)r->total : 0, 3);
	size_t arg = 0;
	for (size_t i = 0; n > 1 && i < n && !rc; i++) {
		int64_t v = m->per[i] ? m->per[i]->pub.total : 0;
		if (m->per[i] && (!m->per[arg] || v > m->per[arg]->pub.total))
			arg = i;
		rc = tk__grid_set_num(g, c++, (double)v, 0);
	}
	if (!rc && n > 1) {
		char d[64];
		if (o->labels)
			snprintf(d, sizeof d, "%s", o->labels[arg]);
		else
			snprintf(d, sizeof d, "rank %zu", arg);
		rc = tk__grid_set(g, c++, d, d);
	}
	return rc ? TK_ERR_NOMEM : tk__grid_set(g, c, r->name, r->name);
}

int tk_stats_format_sum(tk_stats *const *s, size_t n, int which, const tk_table_opts *o,
                        char **out, size_t *len)
{
	*out = NULL;
	if (!s || !n || !o || (which != TK_STATS_KERNEL && which != TK_STATS_MEMCPY &&
	                       which != TK_STATS_API))
		return TK_ERR_ARG;
	srow *rows = NULL;
	const tk__sumrow **store = NULL;
	size_t n_rows = 0;
	int rc = merge_sums(&rows, &n_rows, &store, s, n, which, o->name_glob);
	if (!rc)
		qsort(rows, n_rows, sizeof *rows, cmp_srow);
	int64_t all = 0;
	for (size_t i = 0; i < n_rows; i++)
		all += rows[i].sum.total;
	tk__grid g = {0};
	rc = rc ? rc : sum_cols(&g, which, n, o);
	size_t lim = o->row_limit < 0 ? n_rows : (size_t)o->row_limit;
	for (size_t i = 0; i < n_rows && i < lim && !rc; i++)
		rc = sum_line(&g, &rows[i], all, which, n, o);
	free(rows);
	free(store);
	return tk__grid_output(&g, rc, n_rows, o->format, out, len);
}
