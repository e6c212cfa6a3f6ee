/* stats_flops.c: FLOP formulas from Input Dims, torch's set and the extended set (docs/flops.md). */
#include <stdlib.h>

#include "stats_internal.h"

/* A padding given as a string ('same') in Concrete Inputs. */
#define TK__PAD_SAME (-2)

static int64_t item_len(const tk_dims *d, size_t i)
{
	return d && i < d->n_items ? d->item_len[i] : -1;
}

static const int64_t *item(const tk_dims *d, size_t i)
{
	return d->items[i];
}

static uint64_t numel(const int64_t *v, int64_t n)
{
	uint64_t p = 1;
	for (int64_t i = 0; i < n; i++)
		p *= v[i] > 0 ? (uint64_t)v[i] : 0;
	return p;
}

/* mm/addmm: [M,K] x [K,N] from items a and b. */
static uint64_t gemm(const tk_dims *d, size_t a, size_t b)
{
	if (item_len(d, a) != 2 || item_len(d, b) != 2)
		return 0;
	const int64_t *x = item(d, a), *y = item(d, b);
	return 2 * numel(x, 2) * (y[1] > 0 ? (uint64_t)y[1] : 0);
}

/* bmm/baddbmm: [B,M,K] x [B,K,N]. */
static uint64_t bgemm(const tk_dims *d, size_t a, size_t b)
{
	if (item_len(d, a) != 3 || item_len(d, b) != 3)
		return 0;
	const int64_t *x = item(d, a), *y = item(d, b);
	return 2 * numel(x, 3) * (y[2] > 0 ? (uint64_t)y[2] : 0);
}

static uint64_t elementwise(const tk_dims *d)
{
	return item_len(d, 0) >= 0 ? numel(item(d, 0), item_len(d, 0)) : 0;
}

/* A conv parameter list of `n` spatial values from Concrete Inputs item i,
 * broadcasting a single value; `def` when absent. Returns 0 if unusable. */
static int conv_param(const tk_dims *c, size_t i, int n, int64_t def, int64_t *out)
{
	int64_t len = item_len(c, i);
	for (int k = 0; k < n; k++)
		out[k] = def;
	if (len == -1 || len == 0)
		return 1;
	if (len == TK__PAD_SAME)
		return 0;
	if (len != 1 && len != n)
		return 0;
	for (int k = 0; k < n; k++)
		out[k] = item(c, i)[len == 1 ? 0 : k];
	return 1;
}

typedef struct conv_args {
	int stride, padding, dilation, transposed, groups; /* Concrete Inputs indexes, -1 none */
} conv_args;

/* 2·N·prod(out)·prod(k)·Cin·Cout/groups (torch's conv2d formula in n-d);
 * transposed: 2·N·prod(in)·prod(k)·Cin·(Cout/groups). */
static uint64_t conv(const tk_dims *d, const tk_dims *c, int nsp, conv_args a)
{
	int64_t st[3], pad[3], dil[3], groups = 1;
	if (nsp < 1 || nsp > 3 || item_len(d, 0) != nsp + 2 || item_len(d, 1) != nsp + 2)
		return 0;
	if (!conv_param(c, (size_t)a.stride, nsp, 1, st) ||
	    !conv_param(c, (size_t)a.padding, nsp, 0, pad) ||
	    !conv_param(c, (size_t)a.dilation, nsp, 1, dil))
		return 0;
	if (a.groups >= 0 && item_len(c, (size_t)a.groups) == 1)
		groups = item(c, (size_t)a.groups)[0];
	int transposed = a.transposed >= 0 && item_len(c, (size_t)a.transposed) == 1 &&
	                 item(c, (size_t)a.transposed)[0];
	const int64_t *in = item(d, 0), *w = item(d, 1);
	if (groups <= 0)
		return 0;
	uint64_t f = 2 * (uint64_t)(in[0] > 0 ? in[0] : 0) * numel(w + 2, nsp);
	if (transposed)
		return f * numel(in + 2, nsp) * numel(in + 1, 1) * numel(w + 1, 1);
	for (int k = 0; k < nsp; k++) {
		if (st[k] <= 0)
			return 0;
		int64_t o = (in[2 + k] + 2 * pad[k] - dil[k] * (w[2 + k] - 1) - 1) / st[k] + 1;
		f *= o > 0 ? (uint64_t)o : 0;
	}
	return f * numel(in + 1, 1) * numel(w, 1) / (uint64_t)groups;
}

/* linear: input [..., K], weight [N, K]: 2·numel(input)·N. */
static uint64_t linear(const tk_dims *d)
{
	if (item_len(d, 0) < 1 || item_len(d, 1) != 2)
		return 0;
	return 2 * numel(item(d, 0), item_len(d, 0)) * numel(item(d, 1), 1);
}

/* matmul with torch's broadcasting: 1-d operands are vectors. */
static uint64_t matmul(const tk_dims *d)
{
	int64_t na = item_len(d, 0), nb = item_len(d, 1);
	if (na < 1 || nb < 1)
		return 0;
	const int64_t *a = item(d, 0), *b = item(d, 1);
	if (nb == 1)
		return 2 * numel(a, na);
	if (na == 1)
		return 2 * numel(b, nb);
	uint64_t batch = 1;
	int64_t nbatch = (na > nb ? na : nb) - 2;
	for (int64_t i = 0; i < nbatch; i++) {
		int64_t ia = na - 3 - i, ib = nb - 3 - i;
		int64_t x = ia >= 0 ? a[ia] : 1, y = ib >= 0 ? b[ib] : 1;
		batch *= (uint64_t)(x > y ? x : y);
	}
	return 2 * batch * numel(a + na - 2, 2) * numel(b + nb - 1, 1);
}

/* Attention with q [..., L, E], k [..., S, E], v [..., S, Ev] starting at
 * item `q`: forward 2·B·L·S·(E + Ev); backward 2·B·L·S·(3E + 2Ev). */
static uint64_t attention(const tk_dims *d, size_t q, int backward)
{
	int64_t n = item_len(d, q);
	if (n < 2 || item_len(d, q + 1) != n || item_len(d, q + 2) != n)
		return 0;
	const int64_t *Q = item(d, q), *K = item(d, q + 1), *V = item(d, q + 2);
	uint64_t b = numel(Q, n - 2), l = numel(Q + n - 2, 1), s = numel(K + n - 2, 1);
	uint64_t e = numel(Q + n - 1, 1), ev = numel(V + n - 1, 1);
	return 2 * b * l * s * (backward ? 3 * e + 2 * ev : e + ev);
}

enum { F_MM, F_ADDMM, F_BMM, F_BADDBMM, F_CONV2D, F_ELEM, F_LINEAR, F_MATMUL, F_CONV1D,
       F_CONV3D, F_CONVOLUTION, F_ATTN, F_ATTN_BWD };

#define OP(name, kind, extended) {name, sizeof name - 1, kind, extended}
static const struct { const char *name; size_t len; int kind, extended; } ops[] = {
	OP("aten::mm", F_MM, 0), OP("aten::addmm", F_ADDMM, 0), OP("aten::bmm", F_BMM, 0),
	OP("aten::baddbmm", F_BADDBMM, 0), OP("aten::conv2d", F_CONV2D, 0),
	OP("aten::mul", F_ELEM, 0), OP("aten::add", F_ELEM, 0),
	OP("aten::mul_", F_ELEM, 1), OP("aten::add_", F_ELEM, 1), OP("aten::addmm_", F_ADDMM, 1),
	OP("aten::baddbmm_", F_BADDBMM, 1), OP("aten::linear", F_LINEAR, 1),
	OP("aten::matmul", F_MATMUL, 1), OP("aten::conv1d", F_CONV1D, 1),
	OP("aten::conv3d", F_CONV3D, 1), OP("aten::convolution", F_CONVOLUTION, 1),
	OP("aten::_convolution", F_CONVOLUTION, 1),
	OP("aten::scaled_dot_product_attention", F_ATTN, 1),
	OP("aten::_scaled_dot_product_flash_attention", F_ATTN, 1),
	OP("aten::_scaled_dot_product_efficient_attention", F_ATTN, 1),
	OP("aten::_scaled_dot_product_cudnn_attention", F_ATTN, 1),
	OP("aten::_scaled_dot_product_attention_math", F_ATTN, 1),
	OP("aten::_scaled_dot_product_flash_attention_backward", F_ATTN_BWD, 1),
	OP("aten::_scaled_dot_product_efficient_attention_backward", F_ATTN_BWD, 1),
	OP("aten::_scaled_dot_product_cudnn_attention_backward", F_ATTN_BWD, 1),
};
#undef OP

static int op_kind(const char *name, size_t len, int mode)
{
	if (mode == TK_FLOPS_NONE || len < 8 || memcmp(name, "aten::", 6) != 0)
		return -1;
	for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
		if ((mode == TK_FLOPS_EXTENDED || !ops[i].extended) && ops[i].len == len &&
		    memcmp(ops[i].name, name, len) == 0)
			return ops[i].kind;
	return -1;
}

static uint64_t by_kind(int kind, const tk_dims *d, const tk_dims *c)
{
	switch (kind) {
	case F_MM: return gemm(d, 0, 1);
	case F_ADDMM: return gemm(d, 1, 2);
	case F_BMM: return bgemm(d, 0, 1);
	case F_BADDBMM: return bgemm(d, 1, 2);
	case F_CONV2D: return conv(d, c, 2, (conv_args){3, 4, 5, -1, 6});
	case F_ELEM: return elementwise(d);
	case F_LINEAR: return linear(d);
	case F_MATMUL: return matmul(d);
	case F_CONV1D: return conv(d, c, 1, (conv_args){3, 4, 5, -1, 6});
	case F_CONV3D: return conv(d, c, 3, (conv_args){3, 4, 5, -1, 6});
	case F_CONVOLUTION:
		return conv(d, c, (int)item_len(d, 0) - 2, (conv_args){3, 4, 5, 6, 8});
	case F_ATTN: return attention(d, 0, 0);
	case F_ATTN_BWD: return attention(d, 1, 1);
	default: return 0;
	}
}

uint64_t tk_flops(const char *name, const tk_dims *dims, const tk_dims *concrete, int mode)
{
	if (!name || !dims)
		return 0;
	int kind = op_kind(name, strlen(name), mode);
	return kind < 0 ? 0 : by_kind(kind, dims, concrete);
}

static int lit(const char *p, const char *e, const char *s)
{
	size_t n = strlen(s);
	return (size_t)(e - p) == n && memcmp(p, s, n) == 0;
}

/* One Concrete Inputs string (quotes included): "" absent, "[1, 1]" a list,
 * "3" or "True" one value, "same" padding, "valid" no padding. */
static void concrete_item(const char *p, const char *e, int *len, int64_t *vals, size_t *nv)
{
	*len = -1;
	if (lit(p, e, "\"same\"")) {
		*len = TK__PAD_SAME;
		return;
	}
	if (lit(p, e, "\"valid\"")) {
		*len = 0;
		return;
	}
	if (lit(p, e, "\"False\"") || lit(p, e, "\"True\"")) {
		vals[(*nv)++] = p[1] == 'T';
		*len = 1;
		return;
	}
	size_t start = *nv;
	for (const char *q = p + 1; q < e - 1;) {
		char *end;
		long long v = strtoll(q, &end, 10);
		if (end == q) {
			q++;
			continue;
		}
		vals[(*nv)++] = v;
		q = end;
	}
	if (*nv > start)
		*len = (int)(*nv - start);
}

/* Concrete Inputs (a list of strings) as dims; nonzero if absent or not a list. */
static int concrete_dims(tk_sv v, tk_dims *out)
{
	memset(out, 0, sizeof *out);
	if (!v.ptr || v.len < 2 || v.ptr[0] != '[')
		return TK_ERR_FORMAT;
	if (tk__dims_alloc(out, v.len)) /* more than enough items and values */
		return TK_ERR_NOMEM;
	size_t nv = 0;
	const char *p = tk__js_ws(v.ptr + 1, v.ptr + v.len), *e = v.ptr + v.len;
	while (p < e && *p == '"') {
		const char *q = tk__js_string_end(p + 1, e);
		if (!q)
			break;
		size_t before = nv;
		concrete_item(p, q, &out->item_len[out->n_items], out->values, &nv);
		out->items[out->n_items++] = out->values + before;
		p = tk__js_ws(q, e);
		if (p < e && *p == ',')
			p = tk__js_ws(p + 1, e);
	}
	return 0;
}

/* tk_args_get_dims on a member's value found already. */
static int dims_of(tk_sv v, tk_dims *out)
{
	memset(out, 0, sizeof *out);
	return v.ptr ? tk__js_dims(v, out) : TK_EOF;
}

static int has_concrete(int kind)
{
	return kind == F_CONV2D || kind == F_CONV1D || kind == F_CONV3D || kind == F_CONVOLUTION;
}

uint64_t tk__flops_args(tk_sv name, const tk__sargs *a, int mode)
{
	int kind = name.ptr ? op_kind(name.ptr, name.len, mode) : -1;
	if (kind < 0)
		return 0;
	tk_dims d, c;
	if (dims_of(a->dims, &d) && dims_of(a->dims_alt, &d))
		return 0;
	int has_c = has_concrete(kind);
	if (has_c && concrete_dims(a->conc, &c))
		memset(&c, 0, sizeof c);
	uint64_t f = by_kind(kind, &d, has_c ? &c : NULL);
	tk_dims_free(&d);
	if (has_c)
		tk_dims_free(&c);
	return f;
}

unsigned tk__flops_needs(tk_sv name, int mode)
{
	int kind = name.ptr ? op_kind(name.ptr, name.len, mode) : -1;
	if (kind < 0)
		return 0;
	return TK__NEED_DIMS | (has_concrete(kind) ? TK__NEED_CONC : 0);
}

uint64_t tk_flops_event(const tk_event *ev, int mode)
{
	unsigned need = ev ? tk__flops_needs(ev->name, mode) : 0;
	if (!need)
		return 0;
	tk__sargs a;
	tk__sargs_read(ev, need, &a);
	return tk__flops_args(ev->name, &a, mode);
}

int tk__shapes_repr(tk_sv dims, tk__buf *out)
{
	for (size_t i = 0; i < dims.len; i++) {
		if (tk__buf_putc(out, dims.ptr[i]))
			return TK_ERR_NOMEM;
		if (dims.ptr[i] == ',' && tk__buf_putc(out, ' '))
			return TK_ERR_NOMEM;
	}
	return tk__buf_putc(out, 0) ? TK_ERR_NOMEM : (out->len--, 0);
}
