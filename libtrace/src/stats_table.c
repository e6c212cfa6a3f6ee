/* stats_table.c: the operator table (torch key_averages().table()) over one or several ranks. */
#define _GNU_SOURCE
#include <fnmatch.h>
#include <math.h>
#include <stdlib.h>

#include "stats_grid.h"

/* A row of the combined table: sums over ranks, and each rank's own row. */
typedef struct mrow {
	tk_stats_op op;
	const tk_stats_op **per; /* n entries, NULL where a rank lacks the row */
} mrow;

typedef struct optable {
	mrow *rows;
	size_t n_rows;
	const tk_stats_op **per_store;
	size_t n_ranks;
	int64_t sum_self_cpu, sum_self_dev;
	int has_dev, has_shapes;
	uint64_t min_flops;
	int sort; /* index into sort_keys, -1 none */
} optable;

static const char *const sort_keys[] = {
	"self_cpu_time_total", "cpu_time_total", "self_cuda_time_total", "cuda_time_total",
	"self_device_time_total", "device_time_total", "count", "cpu_time", "cuda_time",
	"device_time", "flops", "none", NULL, /* "none": first appearance (-1) */
};

const char *const *tk_table_sort_keys(void)
{
	return sort_keys;
}

static double sort_value(const tk_stats_op *o, int k)
{
	double c = o->count ? (double)o->count : 1;
	switch (k) {
	case 0: return (double)o->self_cpu;
	case 1: return (double)o->cpu_total;
	case 2: case 4: return (double)o->self_dev;
	case 3: case 5: return (double)o->dev_total;
	case 6: return (double)o->count;
	case 7: return (double)o->cpu_total / c;
	case 8: case 9: return (double)o->dev_total / c;
	case 10: return (double)o->flops;
	default: return 0;
	}
}

static int cmp_rows(const void *a, const void *b, void *ctx)
{
	const mrow *x = a, *y = b;
	int sort = *(const int *)ctx;
	if (sort >= 0) {
		double vx = sort_value(&x->op, sort), vy = sort_value(&y->op, sort);
		if (vx != vy)
			return vx > vy ? -1 : 1;
	}
	return (x->op.first > y->op.first) - (x->op.first < y->op.first);
}

static void add_op(tk_stats_op *d, const tk_stats_op *s)
{
	d->count += s->count;
	d->self_cpu += s->self_cpu;
	d->cpu_total += s->cpu_total;
	d->self_dev += s->self_dev;
	d->dev_total += s->dev_total;
	d->flops += s->flops;
}

/* Match rows of every rank by (name, shapes, device); order by first rank seen. */
static int merge_rows(optable *t, tk_stats *const *s, size_t n)
{
	size_t cap = 0;
	for (size_t i = 0; i < n; i++)
		cap += tk_stats_op_count(s[i]);
	t->rows = calloc(cap ? cap : 1, sizeof *t->rows);
	t->per_store = calloc((cap ? cap : 1) * n, sizeof *t->per_store);
	tk__strtab keys = {0};
	tk__map idx = {0};
	tk__buf kb = {0};
	int rc = t->rows && t->per_store ? 0 : TK_ERR_NOMEM;
	for (size_t i = 0; i < n && !rc; i++) {
		for (size_t j = 0; j < tk_stats_op_count(s[i]) && !rc; j++) {
			const tk_stats_op *o = tk_stats_op_get(s[i], j);
			kb.len = 0;
			rc = tk__buf_append(&kb, o->name, strlen(o->name) + 1) ||
			     tk__buf_append(&kb, o->shapes, strlen(o->shapes) + 1) ||
			     tk__buf_putc(&kb, o->is_device ? 'd' : 'c');
			tk_sv k = rc ? (tk_sv){NULL, 0} : tk__strtab_intern(&keys, kb.p, kb.len);
			uint32_t r = k.ptr ? (uint32_t)tk__map_get0(&idx, (uintptr_t)k.ptr) : 0;
			if (!k.ptr || (!r && tk__map_put_int(&idx, (uintptr_t)k.ptr, (uint32_t)t->n_rows + 1))) {
				rc = TK_ERR_NOMEM;
				break;
			}
			mrow *m = &t->rows[r ? r - 1 : t->n_rows];
			if (!r) {
				m->op = *o;
				memset(&m->op.count, 0, sizeof *o - offsetof(tk_stats_op, count));
				m->op.first = t->n_rows;
				m->per = t->per_store + t->n_rows++ * n;
			}
			add_op(&m->op, o);
			m->per[i] = o;
		}
	}
	tk__strtab_free(&keys);
	tk__map_free(&idx);
	tk__buf_free(&kb);
	t->n_ranks = n;
	return rc ? TK_ERR_NOMEM : 0;
}

/* --name keeps matching rows; percentages still divide by every row's time. */
static void filter_rows(optable *t, const char *glob)
{
	size_t k = 0;
	for (size_t i = 0; glob && i < t->n_rows; i++)
		if (fnmatch(glob, t->rows[i].op.name, 0) == 0)
			t->rows[k++] = t->rows[i];
	if (glob)
		t->n_rows = k;
}

static void totals(optable *t)
{
	t->min_flops = 0;
	for (size_t i = 0; i < t->n_rows; i++) {
		const tk_stats_op *o = &t->rows[i].op;
		t->sum_self_cpu += o->self_cpu;
		if (o->is_device)
			t->sum_self_dev += o->self_dev;
		t->has_dev |= o->self_dev > 0;
		t->has_shapes |= o->shapes[0] && strcmp(o->shapes, "[]") != 0;
		if (o->flops && (!t->min_flops || o->flops < t->min_flops))
			t->min_flops = o->flops;
	}
}

/* ---- torch's number formats ---- */

static void fmt_time(char *b, size_t n, int64_t ns, const char *unit)
{
	double us = (double)ns / 1000.0;
	if (unit && strcmp(unit, "ns") == 0)
		snprintf(b, n, "%lldns", (long long)ns);
	else if ((unit && strcmp(unit, "s") == 0) || (!unit && us >= 1e6))
		snprintf(b, n, "%.3fs", us / 1e6);
	else if ((unit && strcmp(unit, "ms") == 0) || (!unit && us >= 1e3))
		snprintf(b, n, "%.3fms", us / 1e3);
	else
		snprintf(b, n, "%.3fus", us);
}

static void fmt_avg(char *b, size_t n, int64_t ns, uint64_t count, const char *unit)
{
	/* torch divides microseconds; keep the same double */
	double us = count ? (double)ns / 1000.0 / (double)count : 0.0;
	if (unit && strcmp(unit, "ns") == 0)
		snprintf(b, n, "%.0fns", us * 1000.0);
	else if ((unit && strcmp(unit, "s") == 0) || (!unit && us >= 1e6))
		snprintf(b, n, "%.3fs", us / 1e6);
	else if ((unit && strcmp(unit, "ms") == 0) || (!unit && us >= 1e3))
		snprintf(b, n, "%.3fms", us / 1e3);
	else
		snprintf(b, n, "%.3fus", us);
}

static void fmt_pct(char *b, size_t n, int64_t ns, int64_t total)
{
	if (!total)
		snprintf(b, n, "NaN");
	else
		snprintf(b, n, "%.2f%%", ((double)ns / 1000.0) * 100.0 / ((double)total / 1000.0));
}

/* torch's auto_scale_flops: the unit of the smallest non-zero count. */
static int flops_scale(uint64_t min, double *scale)
{
	double l = log10((double)min) / 3;
	l = l < 0 ? 0 : l > 5 ? 5 : l;
	*scale = pow(10, floor(l) * -3.0);
	return (int)l;
}

/* ---- building the grid ---- */

typedef struct colset {
	int name, self_pct, self_cpu, tot_pct, tot, avg, sdev, sdev_pct, dtot, davg, calls;
	int shapes, flops, tflops, rank0, max_rank, max_ratio;
	int metric; /* sort key index shown per rank */
	double fscale;
} colset;

static int name_width(const optable *t)
{
	size_t w = 0;
	for (size_t i = 0; i < t->n_rows; i++)
		if (strlen(t->rows[i].op.name) > w)
			w = strlen(t->rows[i].op.name);
	return (int)(w + 4 < 55 ? w + 4 : 55);
}

static int shapes_width(const optable *t)
{
	size_t w = 0;
	for (size_t i = 0; i < t->n_rows; i++)
		if (strlen(t->rows[i].op.shapes) > w)
			w = strlen(t->rows[i].op.shapes);
	return (int)(w + 4 < 80 ? w + 4 : 80);
}

static const char *const flop_heads[] = {"Total FLOPs", "Total KFLOPs", "Total MFLOPs",
                                         "Total GFLOPs", "Total TFLOPs", "Total PFLOPs"};

/* The FLOPs column: torch's 12, or its widest value (a count many times the
 * smallest, which sets the unit). */
static int flops_width(const optable *t, double scale)
{
	int w = 12;
	for (size_t i = 0; i < t->n_rows; i++) {
		char d[64];
		int n = snprintf(d, sizeof d, "%8.3f", (double)t->rows[i].op.flops * scale);
		w = n > w ? n : w;
	}
	return w;
}

/* What the per-rank columns show (a sort key's index), in the words of
 * the column that shows it for all ranks. */
static const char *metric_head(int k)
{
	switch (k) {
	case 0: return "Self CPU";
	case 1: return "CPU total";
	case 2: case 4: return "Self CUDA";
	case 3: case 5: return "CUDA total";
	case 7: return "CPU time avg";
	default: return "CUDA time avg";
	}
}

static int add_cols(tk__grid *g, const optable *t, const tk_table_opts *o, colset *c)
{
	int rc = 0, k = 0;
	memset(c, -1, sizeof *c);
#define COL(f, h, id, w, num) (c->f = k++, rc = rc ? rc : tk__grid_col(g, h, id, w, 0, num))
	COL(name, "Name", "name", name_width(t), 0);
	COL(self_pct, "Self CPU %", "self_cpu_pct", 12, 1);
	COL(self_cpu, "Self CPU", "self_cpu_ns", 12, 1);
	COL(tot_pct, "CPU total %", "cpu_total_pct", 12, 1);
	COL(tot, "CPU total", "cpu_total_ns", 12, 1);
	COL(avg, "CPU time avg", "cpu_time_avg_ns", 12, 1);
	if (t->has_dev) {
		COL(sdev, "Self CUDA", "self_cuda_ns", 12, 1);
		COL(sdev_pct, "Self CUDA %", "self_cuda_pct", 12, 1);
		COL(dtot, "CUDA total", "cuda_total_ns", 12, 1);
		COL(davg, "CUDA time avg", "cuda_time_avg_ns", 12, 1);
	}
	COL(calls, "# of Calls", "calls", 12, 1);
	if (t->has_shapes)
		COL(shapes, "Input Shapes", "input_shapes", shapes_width(t), 0);
	if (o->flops && t->min_flops) {
		int u = flops_scale(t->min_flops, &c->fscale);
		COL(flops, flop_heads[u], "flops", flops_width(t, c->fscale), 1);
		if (t->has_dev)
			COL(tflops, "TFLOP/s", "tflops_per_s", 12, 1);
	}
	if (t->n_ranks > 1) {
		c->metric = t->sort >= 0 && t->sort != 6 && t->sort != 10 ? t->sort : t->has_dev ? 3 : 1;
		for (size_t i = 0; i < t->n_ranks; i++) {
			char l[32], h[48], id[48];
			snprintf(l, sizeof l, "%s", o->labels ? o->labels[i] : "");
			if (!o->labels)
				snprintf(l, sizeof l, "rank %zu", i);
			/* "rank 3 CUDA total": which metric, whatever the sort key */
			int w = snprintf(h, sizeof h, "%s %s", l, metric_head(c->metric));
			snprintf(id, sizeof id, "%.20s:%.24s", l, sort_keys[c->metric]);
			rc = rc ? rc : tk__grid_col(g, h, id, w > 12 ? w : 12, 0, 1);
			if (!i)
				c->rank0 = k;
			k++;
		}
		COL(max_rank, "Max rank", "max_rank", 12, 0);
		COL(max_ratio, "Max/avg", "max_over_avg", 12, 1);
	}
#undef COL
	return rc;
}

static int set_time(tk__grid *g, int col, int64_t ns, const char *unit)
{
	char d[48], r[32];
	fmt_time(d, sizeof d, ns, unit);
	snprintf(r, sizeof r, "%lld", (long long)ns);
	return tk__grid_set(g, (size_t)col, d, r);
}

static int set_avg(tk__grid *g, int col, int64_t ns, uint64_t n, const char *unit)
{
	char d[48], r[48];
	fmt_avg(d, sizeof d, ns, n, unit);
	snprintf(r, sizeof r, "%.3f", n ? (double)ns / (double)n : 0.0);
	return tk__grid_set(g, (size_t)col, d, r);
}

static int set_pct(tk__grid *g, int col, int64_t ns, int64_t total)
{
	char d[32];
	fmt_pct(d, sizeof d, ns, total);
	char r[32];
	snprintf(r, sizeof r, "%.*s", (int)strcspn(d, "%"), d);
	return tk__grid_set(g, (size_t)col, d, strcmp(r, "NaN") ? r : "null");
}

static int set_name(tk__grid *g, int col, const char *name)
{
	char d[64];
	if (strlen(name) >= 52)
		snprintf(d, sizeof d, "%.52s...", name);
	else
		snprintf(d, sizeof d, "%s", name);
	return tk__grid_set(g, (size_t)col, d, name);
}

static int set_flops(tk__grid *g, const colset *c, const tk_stats_op *op)
{
	char d[48], r[32];
	snprintf(r, sizeof r, "%llu", (unsigned long long)op->flops);
	if (op->flops)
		snprintf(d, sizeof d, "%8.3f", (double)op->flops * c->fscale);
	int rc = tk__grid_set(g, (size_t)c->flops, op->flops ? d : "--", r);
	if (rc || c->tflops < 0)
		return rc;
	int ok = op->flops && op->dev_total > 0;
	double tf = ok ? (double)op->flops / ((double)op->dev_total * 1e-9) / 1e12 : 0;
	snprintf(d, sizeof d, "%.3f", tf);
	return tk__grid_set(g, (size_t)c->tflops, ok ? d : "--", ok ? d : "null");
}

static int set_ranks(tk__grid *g, const colset *c, const mrow *m, size_t n, const tk_table_opts *o)
{
	double mx = -1, sum = 0;
	size_t arg = 0;
	int rc = 0;
	for (size_t i = 0; i < n && !rc; i++) {
		double v = m->per[i] ? sort_value(m->per[i], c->metric) : 0;
		sum += v;
		if (v > mx)
			mx = v, arg = i;
		rc = set_time(g, c->rank0 + (int)i, (int64_t)v, o->time_unit);
	}
	char d[48], r[48];
	if (o->labels)
		snprintf(d, sizeof d, "%s", o->labels[arg]);
	else
		snprintf(d, sizeof d, "rank %zu", arg);
	rc = rc ? rc : tk__grid_set(g, (size_t)c->max_rank, d, d);
	snprintf(r, sizeof r, "%.3f", sum > 0 ? mx / (sum / (double)n) : 0.0);
	return rc ? rc : tk__grid_set(g, (size_t)c->max_ratio, r, r);
}

static int op_line(tk__grid *g, const optable *t, const colset *c, const mrow *m,
                   const tk_table_opts *o)
{
	const tk_stats_op *op = &m->op;
	const char *u = o->time_unit;
	char r[32];
	int rc = tk__grid_row(g) || set_name(g, c->name, op->name) ||
	         set_pct(g, c->self_pct, op->self_cpu, t->sum_self_cpu) ||
	         set_time(g, c->self_cpu, op->self_cpu, u) ||
	         set_pct(g, c->tot_pct, op->cpu_total, t->sum_self_cpu) ||
	         set_time(g, c->tot, op->cpu_total, u) || set_avg(g, c->avg, op->cpu_total, op->count, u);
	if (!rc && c->sdev >= 0)
		rc = set_time(g, c->sdev, op->self_dev, u) ||
		     set_pct(g, c->sdev_pct, op->self_dev, t->sum_self_dev) ||
		     set_time(g, c->dtot, op->dev_total, u) ||
		     set_avg(g, c->davg, op->dev_total, op->count, u);
	snprintf(r, sizeof r, "%llu", (unsigned long long)op->count);
	rc = rc ? rc : tk__grid_set(g, (size_t)c->calls, r, r);
	if (!rc && c->shapes >= 0) {
		char d[128];
		snprintf(d, sizeof d, "%.*s", c->shapes >= 0 ? (int)g->cols[c->shapes].width : 0,
		         op->shapes);
		rc = tk__grid_set(g, (size_t)c->shapes, d, op->shapes);
	}
	if (!rc && c->flops >= 0)
		rc = set_flops(g, c, op);
	if (!rc && t->n_ranks > 1)
		rc = set_ranks(g, c, m, t->n_ranks, o);
	return rc ? TK_ERR_NOMEM : 0;
}

static int op_footer(tk__grid *g, const optable *t, const tk_table_opts *o)
{
	char d[96], v[32], r[32];
	fmt_time(v, sizeof v, t->sum_self_cpu, o->time_unit);
	snprintf(d, sizeof d, "Self CPU time total: %s", v);
	snprintf(r, sizeof r, "%lld", (long long)t->sum_self_cpu);
	int rc = tk__grid_footer(g, d, "self_cpu_time_total_ns", r);
	if (rc || !t->has_dev)
		return rc;
	fmt_time(v, sizeof v, t->sum_self_dev, o->time_unit);
	snprintf(d, sizeof d, "Self CUDA time total: %s", v);
	snprintf(r, sizeof r, "%lld", (long long)t->sum_self_dev);
	return tk__grid_footer(g, d, "self_cuda_time_total_ns", r);
}

static int sort_index(const char *key)
{
	if (!key || !*key || strcmp(key, "none") == 0)
		return -1;
	for (size_t i = 0; sort_keys[i]; i++)
		if (strcmp(key, sort_keys[i]) == 0)
			return (int)i;
	return -2;
}

static int finish_out(tk__buf *b, int rc, char **out, size_t *len)
{
	if (!rc && tk__buf_putc(b, 0))
		rc = TK_ERR_NOMEM;
	if (rc) {
		tk__buf_free(b);
		return rc;
	}
	*out = b->p;
	if (len)
		*len = b->len - 1;
	return 0;
}

int tk_stats_format_ops(tk_stats *const *s, size_t n, const tk_table_opts *o, char **out,
                        size_t *len)
{
	*out = NULL;
	if (!s || !n || !o)
		return TK_ERR_ARG;
	optable t = {0};
	if ((t.sort = sort_index(o->sort_by)) == -2)
		return tk__err_msg(&s[0]->err, TK_ERR_ARG, "unknown sort key '%s'", o->sort_by);
	int rc = merge_rows(&t, s, n);
	totals(&t);
	filter_rows(&t, o->name_glob);
	if (!rc && t.n_rows) /* qsort_r: no global sort key, safe across threads */
		qsort_r(t.rows, t.n_rows, sizeof *t.rows, cmp_rows, &t.sort);
	tk__grid g = {0};
	g.torch = 1;
	colset c;
	rc = rc ? rc : add_cols(&g, &t, o, &c);
	size_t lim = o->row_limit < 0 ? t.n_rows : (size_t)o->row_limit;
	for (size_t i = 0; i < t.n_rows && i < lim && !rc; i++)
		rc = op_line(&g, &t, &c, &t.rows[i], o);
	rc = rc ? rc : op_footer(&g, &t, o);
	tk__buf b = {0};
	if (!rc && t.n_rows)
		rc = tk__grid_render(&g, o->format, &b);
	else if (!rc && o->format == TK_TABLE_JSON)
		rc = tk__buf_append(&b, "{\"rows\":[],\"totals\":{}}\n", 24);
	tk__grid_free(&g);
	free(t.rows);
	free(t.per_store);
	return finish_out(&b, rc, out, len);
}
