/* stats_diff.c: two runs' tables side by side (trace-diff): rows matched by name, both sides' figures and the change, sorted by the time that changed most. */
#define _GNU_SOURCE
#include <fnmatch.h>
#include <stdlib.h>

#include "stats_grid.h"

/* One row of either side, or of both. */
typedef struct drow {
	const char *name, *shapes;
	int64_t v[2][4]; /* [side][field]: ops: calls, self CPU, CUDA total, self CUDA (of GPU activity rows only:
	                  * an op's is its kernels', which have rows of their own); sums: count, total; 0 when absent */
	int has[2];
	int64_t key; /* the sort key: the largest time change */
} drow;

static int64_t abs64(int64_t x)
{
	return x < 0 ? (x == INT64_MIN ? INT64_MAX : -x) : x;
}

static int cmp_name(const void *a, const void *b)
{
	const drow *x = a, *y = b;
	int c = strcmp(x->name, y->name);
	return c ? c : strcmp(x->shapes ? x->shapes : "", y->shapes ? y->shapes : "");
}

static int cmp_change(const void *a, const void *b)
{
	const drow *x = a, *y = b;
	if (x->key != y->key)
		return x->key > y->key ? -1 : 1;
	return cmp_name(a, b);
}

/* The rows of one side, sorted by name. */
static int side_rows(const tk_stats *s, int which, int side, const char *glob, drow **out, size_t *n)
{
	size_t cnt = which == TK_STATS_OP ? tk_stats_op_count(s) : tk_stats_sum_count(s, which);
	drow *v = calloc(cnt ? cnt : 1, sizeof *v);
	if (!v)
		return TK_ERR_NOMEM;
	size_t k = 0;
	for (size_t i = 0; i < cnt; i++) {
		drow *r = &v[k];
		if (which == TK_STATS_OP) {
			const tk_stats_op *op = tk_stats_op_get(s, i);
			r->name = op->name;
			r->shapes = op->shapes;
			r->v[side][0] = (int64_t)op->count;
			r->v[side][1] = op->self_cpu;
			r->v[side][2] = op->dev_total;
			r->v[side][3] = op->is_device ? op->self_dev : 0; /* counted once, as trace-stats's total */
		} else {
			const tk_stats_sum *sm = tk_stats_sum_get(s, which, i);
			r->name = sm->name;
			r->v[side][0] = (int64_t)sm->count;
			r->v[side][1] = sm->total;
		}
		r->has[side] = 1;
		if (!glob || fnmatch(glob, r->name, 0) == 0)
			k++;
	}
	if (k)
		qsort(v, k, sizeof *v, cmp_name);
	*out = v;
	*n = k;
	return 0;
}

/* Both sides merged by name. */
static int merge_sides(const tk_stats *a, const tk_stats *b, int which, const char *glob, drow **out, size_t *n)
{
	drow *x = NULL, *y = NULL;
	size_t nx = 0, ny = 0;
	int rc = side_rows(a, which, 0, glob, &x, &nx);
	rc = rc ? rc : side_rows(b, which, 1, glob, &y, &ny);
	drow *m = rc ? NULL : calloc(nx + ny + 1, sizeof *m);
	if (!m) {
		free(x);
		free(y);
		return TK_ERR_NOMEM;
	}
	size_t i = 0, j = 0, k = 0;
	while (i < nx || j < ny) {
		int c = i == nx ? 1 : j == ny ? -1 : cmp_name(&x[i], &y[j]);
		drow *r = &m[k++];
		*r = c <= 0 ? x[i] : y[j];
		if (c == 0) {
			memcpy(r->v[1], y[j].v[1], sizeof r->v[1]);
			r->has[1] = 1;
		}
		i += c <= 0;
		j += c >= 0;
		int64_t d1 = abs64(tk__sat_sub(r->v[1][1], r->v[0][1]));
		int64_t d2 = which == TK_STATS_OP ? abs64(tk__sat_sub(r->v[1][2], r->v[0][2])) : 0;
		r->key = d1 > d2 ? d1 : d2;
	}
	free(x);
	free(y);
	if (k)
		qsort(m, k, sizeof *m, cmp_change);
	*out = m;
	*n = k;
	return 0;
}

/* The change in percent of the base: "new" for a row only the new side
 * has, "-" (null) from a base of 0 that is there. */
static int set_pct(tk__grid *g, size_t col, int64_t base, int64_t cur, int is_new)
{
	char raw[48];
	if (base == 0 && cur == 0)
		snprintf(raw, sizeof raw, "0.0");
	else if (base == 0)
		return tk__grid_set(g, col, is_new ? "new" : "-", "null");
	else
		snprintf(raw, sizeof raw, "%.1f", 100.0 * ((double)cur - (double)base) / (double)abs64(base));
	return tk__grid_set(g, col, raw, raw);
}

/* Three columns: base, new, change ("Total base (ns)"). */
static int cols3(tk__grid *g, const char *what, const char *unit, const char *id)
{
	char h[3][64], k[3][64];
	snprintf(h[0], sizeof h[0], "%s base%s", what, unit);
	snprintf(h[1], sizeof h[1], "%s new%s", what, unit);
	snprintf(h[2], sizeof h[2], "%s change%s", what, unit);
	snprintf(k[0], sizeof k[0], "%s_base", id);
	snprintf(k[1], sizeof k[1], "%s_new", id);
	snprintf(k[2], sizeof k[2], "%s_change", id);
	int rc = 0;
	for (int i = 0; i < 3 && !rc; i++)
		rc = tk__grid_col(g, h[i], k[i], 0, 0, 1);
	return rc;
}

static int set3(tk__grid *g, size_t *c, int64_t base, int64_t cur)
{
	int rc = tk__grid_set_i64(g, (*c)++, base) || tk__grid_set_i64(g, (*c)++, cur) || tk__grid_set_i64(g, (*c)++, tk__sat_sub(cur, base));
	return rc ? TK_ERR_NOMEM : 0;
}

static const char *status_of(const drow *r)
{
	return !r->has[0] ? "new" : !r->has[1] ? "gone" : "";
}

static int table_rows(tk__grid *g, int which, const drow *m, size_t n, const tk_table_opts *o, int shapes)
{
	int op = which == TK_STATS_OP;
	int rc = cols3(g, op ? "Calls" : "Count", "", op ? "calls" : "count") ||
	         cols3(g, op ? "Self CPU" : "Total", " (ns)", op ? "self_cpu_ns" : "total_ns");
	if (!rc && op)
		rc = cols3(g, "CUDA total", " (ns)", "cuda_total_ns");
	rc = rc || tk__grid_col(g, op ? "CUDA change (%)" : "Change (%)", "change_pct", 0, 0, 1) ||
	     tk__grid_col(g, "Status", "status", 0, 1, 0) || tk__grid_col(g, "Name", "name", 0, 1, 0);
	if (!rc && shapes)
		rc = tk__grid_col(g, "Input Shapes", "input_shapes", 0, 1, 0);
	size_t lim = o->row_limit < 0 ? n : (size_t)o->row_limit;
	for (size_t i = 0; i < n && i < lim && !rc; i++) {
		const drow *r = &m[i];
		size_t c = 0;
		rc = tk__grid_row(g) || set3(g, &c, r->v[0][0], r->v[1][0]) || set3(g, &c, r->v[0][1], r->v[1][1]);
		if (!rc && op)
			rc = set3(g, &c, r->v[0][2], r->v[1][2]);
		int f = op ? 2 : 1;
		rc = rc || set_pct(g, c++, r->v[0][f], r->v[1][f], !r->has[0]) ||
		     tk__grid_set(g, c++, status_of(r), status_of(r)) ||
		     tk__grid_set(g, c++, r->name, r->name);
		if (!rc && shapes)
			rc = tk__grid_set(g, c++, r->shapes ? r->shapes : "", r->shapes ? r->shapes : "");
	}
	return rc ? TK_ERR_NOMEM : 0;
}

/* The totals of field f over the rows, at the foot. */
static int foot_total(tk__grid *g, const drow *m, size_t n, int f, const char *what, const char *key)
{
	int64_t t[2] = {0, 0};
	size_t gone = 0, fresh = 0;
	for (size_t i = 0; i < n; i++) {
		t[0] = tk__sat_add(t[0], m[i].v[0][f]);
		t[1] = tk__sat_add(t[1], m[i].v[1][f]);
		gone += !m[i].has[1];
		fresh += !m[i].has[0];
	}
	char d[256], v[160];
	snprintf(d, sizeof d, "%s: base %lld ns, new %lld ns, change %lld ns (%s%.1f%%); %zu rows new, %zu gone", what,
	         (long long)t[0], (long long)t[1], (long long)tk__sat_sub(t[1], t[0]), t[1] >= t[0] ? "+" : "",
	         t[0] ? 100.0 * ((double)t[1] - (double)t[0]) / (double)t[0] : 0.0, fresh, gone);
	snprintf(v, sizeof v, "{\"base\":%lld,\"new\":%lld,\"change\":%lld,\"rows_new\":%zu,\"rows_gone\":%zu}",
	         (long long)t[0], (long long)t[1], (long long)tk__sat_sub(t[1], t[0]), fresh, gone);
	return tk__grid_footer(g, d, key, v);
}

/* The steps tables' averages, metric by metric. */
static int steps_rows(tk__grid *g, const tk_stats *const s[2])
{
	static const char *const names[][2] = {
		{"Wall (ns)", "wall_ns"},           {"GPU busy (ns)", "busy_ns"},         {"Compute (ns)", "compute_ns"},
		{"Comm (ns)", "comm_ns"},           {"Mem ops (ns)", "mem_ns"},           {"Overlap (ns)", "overlap_ns"},
		{"Idle (ns)", "idle_ns"},           {"Host wait (ns)", "host_wait_ns"},   {"Kernel wait (ns)", "kernel_wait_ns"},
		{"Other idle (ns)", "other_idle_ns"}, {"GPU ops", "gpu_ops"},
	};
	int64_t avg[2][11] = {{0}};
	size_t n[2] = {tk_stats_step_count(s[0]), tk_stats_step_count(s[1])};
	for (int side = 0; side < 2; side++) {
		double sum[11] = {0};
		for (size_t i = 0; i < n[side]; i++) {
			const tk_stats_step *r = tk_stats_step_get(s[side], i);
			double f[11] = {(double)r->wall,    (double)r->busy,        (double)r->compute,
			                (double)r->comm,    (double)r->mem,         (double)r->overlap,
			                (double)r->idle,    (double)r->host_wait,   (double)r->kernel_wait,
			                (double)r->other_idle, (double)r->launched};
			for (int k = 0; k < 11; k++)
				sum[k] += f[k];
		}
		for (int k = 0; k < 11 && n[side]; k++)
			avg[side][k] = (int64_t)(sum[k] / (double)n[side] + 0.5);
	}
	int rc = tk__grid_col(g, "Average per step", "metric", 0, 1, 0) || cols3(g, "Value", "", "value") ||
	         tk__grid_col(g, "Change (%)", "change_pct", 0, 0, 1);
	for (int k = 0; k < 11 && !rc; k++) {
		size_t c = 0;
		rc = tk__grid_row(g) || tk__grid_set(g, c++, names[k][0], names[k][1]) ||
		     set3(g, &c, avg[0][k], avg[1][k]) || set_pct(g, c++, avg[0][k], avg[1][k], 0);
	}
	char d[128], v[32];
	snprintf(d, sizeof d, "Steps: base %zu, new %zu", n[0], n[1]);
	snprintf(v, sizeof v, "[%zu,%zu]", n[0], n[1]);
	return rc ? TK_ERR_NOMEM : tk__grid_footer(g, d, "steps", v);
}

int tk_stats_format_diff(const tk_stats *base, const tk_stats *cur, int which, const tk_table_opts *o, char **out,
                         size_t *len)
{
	*out = NULL;
	if (!base || !cur || !o ||
	    (which != TK_STATS_OP && which != TK_STATS_KERNEL && which != TK_STATS_MEMCPY && which != TK_STATS_API &&
	     which != TK_DIFF_STEPS))
		return TK_ERR_ARG;
	tk__grid g = {0};
	drow *m = NULL;
	size_t n = 0;
	int rc;
	if (which == TK_DIFF_STEPS) {
		const tk_stats *s[2] = {base, cur};
		rc = steps_rows(&g, s);
		n = tk_stats_step_count(base) + tk_stats_step_count(cur);
	} else {
		rc = merge_sides(base, cur, which, o->name_glob, &m, &n);
		int shapes = 0;
		for (size_t i = 0; i < n && !rc; i++)
			shapes |= m[i].shapes && *m[i].shapes;
		rc = rc ? rc : table_rows(&g, which, m, n, o, shapes);
		if (!rc && which == TK_STATS_OP)
			rc = foot_total(&g, m, n, 1, "Self CPU time", "self_cpu_ns") ||
			     foot_total(&g, m, n, 3, "Self CUDA time", "self_cuda_ns");
		else if (!rc)
			rc = foot_total(&g, m, n, 1, "Total time", "total_ns");
	}
	for (int i = 0; i < 2 && !rc && o->labels; i++)
		rc = tk__grid_footer_str(&g, i ? "new" : "base", o->labels[i] ? o->labels[i] : "");
	free(m);
	return tk__grid_output(&g, rc, n, o->format, out, len);
}
