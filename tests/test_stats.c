/* test_stats.c: FLOP formulas, self/total times and GPU attribution of libtracekit's stats. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tracekit/stats.h"
#include "../libtrace/src/stats_internal.h"
#include "../libtrace/src/steps_int.h"

/* Build dims from a literal list: n items, each "len, v0, v1, ..." (-1 = not a list). */
static tk_dims mk(int n, ...)
{
	static int64_t vals_[4][64];
	static int64_t *items_[4][16];
	static int lens_[4][16];
	static int slot; /* a few dims may be alive at once */
	int64_t *vals = vals_[slot], **items = items_[slot];
	int *lens = lens_[slot];
	slot = (slot + 1) % 4;
	va_list ap;
	va_start(ap, n);
	size_t nv = 0;
	for (int i = 0; i < n; i++) {
		lens[i] = va_arg(ap, int);
		items[i] = vals + nv;
		for (int k = 0; k < lens[i]; k++)
			vals[nv++] = va_arg(ap, int);
	}
	va_end(ap);
	return (tk_dims){(size_t)n, lens, items, vals};
}

static uint64_t fl(const char *name, tk_dims d, int mode)
{
	return tk_flops(name, &d, NULL, mode);
}

static void test_flops_torch_set(void **st)
{
	(void)st;
	/* mm [3,5]x[5,7]: 2*3*5*7 = 210 */
	assert_int_equal(fl("aten::mm", mk(2, 2, 3, 5, 2, 5, 7), TK_FLOPS_TORCH), 210);
	/* addmm bias ignored, inputs 1 and 2: 2*4*8*16 = 1024 */
	assert_int_equal(fl("aten::addmm", mk(3, 1, 16, 2, 4, 8, 2, 8, 16), TK_FLOPS_TORCH), 1024);
	/* bmm [2,3,5]x[2,5,7]: 2*2*3*5*7 = 420 */
	assert_int_equal(fl("aten::bmm", mk(2, 3, 2, 3, 5, 3, 2, 5, 7), TK_FLOPS_TORCH), 420);
	/* baddbmm inputs 1 and 2 */
	assert_int_equal(fl("aten::baddbmm", mk(3, 3, 2, 3, 7, 3, 2, 3, 5, 3, 2, 5, 7), TK_FLOPS_TORCH), 420);
	/* mul/add: numel of input 0 = 4*16 = 64; a 0-d tensor counts 1 */
	assert_int_equal(fl("aten::mul", mk(2, 2, 4, 16, 2, 4, 16), TK_FLOPS_TORCH), 64);
	assert_int_equal(fl("aten::add", mk(2, 0, 0), TK_FLOPS_TORCH), 1);
	/* shapes that do not fit and ops torch does not count give 0 */
	assert_int_equal(fl("aten::mm", mk(2, 3, 1, 3, 5, 2, 5, 7), TK_FLOPS_TORCH), 0);
	assert_int_equal(fl("aten::linear", mk(2, 2, 4, 8, 2, 16, 8), TK_FLOPS_TORCH), 0);
	assert_int_equal(fl("aten::mul_", mk(1, 1, 10), TK_FLOPS_TORCH), 0);
	assert_int_equal(fl("aten::mm", mk(2, 2, 3, 5, 2, 5, 7), TK_FLOPS_NONE), 0);
}

static void test_flops_conv2d(void **st)
{
	(void)st;
	/* input [10,256,14,14], weight [512,256,3,3], stride 2, pad 1, dil 1, groups 1:
	 * out = (14 + 2 - 2 - 1)/2 + 1 = 7; 2*10*7*7*3*3*256*512 = 1,156,055,040 */
	tk_dims d = mk(2, 4, 10, 256, 14, 14, 4, 512, 256, 3, 3);
	tk_dims c = mk(7, -1, -1, -1, 2, 2, 2, 2, 1, 1, 2, 1, 1, 1, 1);
	assert_int_equal(tk_flops("aten::conv2d", &d, &c, TK_FLOPS_TORCH), 1156055040ull);
	/* no Concrete Inputs: stride 1, pad 0: out 12; 2*10*12*12*9*256*512 = 3,397,386,240 */
	assert_int_equal(tk_flops("aten::conv2d", &d, NULL, TK_FLOPS_TORCH), 3397386240ull);
	/* groups 2 halves it (torch keeps the full input channels and divides) */
	tk_dims g = mk(7, -1, -1, -1, 2, 2, 2, 2, 1, 1, 2, 1, 1, 1, 2);
	assert_int_equal(tk_flops("aten::conv2d", &d, &g, TK_FLOPS_TORCH), 578027520ull);
}

static void test_flops_extended(void **st)
{
	(void)st;
	/* linear [4,8] x weight [16,8]: 2*32*16 = 1024; [2,3,8] input: 2*48*16 = 1536 */
	assert_int_equal(fl("aten::linear", mk(3, 2, 4, 8, 2, 16, 8, 1, 16), TK_FLOPS_EXTENDED), 1024);
	assert_int_equal(fl("aten::linear", mk(2, 3, 2, 3, 8, 2, 16, 8), TK_FLOPS_EXTENDED), 1536);
	/* matmul broadcast [2,1,3,5] x [4,5,7]: batch 2*4, 2*8*3*5*7 = 1680 */
	assert_int_equal(fl("aten::matmul", mk(2, 4, 2, 1, 3, 5, 3, 4, 5, 7), TK_FLOPS_EXTENDED), 1680);
	/* matmul vector cases: [5]x[5] = 10; [3,5]x[5] = 30 */
	assert_int_equal(fl("aten::matmul", mk(2, 1, 5, 1, 5), TK_FLOPS_EXTENDED), 10);
	assert_int_equal(fl("aten::matmul", mk(2, 2, 3, 5, 1, 5), TK_FLOPS_EXTENDED), 30);
	/* in-place variants */
	assert_int_equal(fl("aten::mul_", mk(1, 1, 10), TK_FLOPS_EXTENDED), 10);
	assert_int_equal(fl("aten::add_", mk(1, 2, 3, 3), TK_FLOPS_EXTENDED), 9);
	assert_int_equal(fl("aten::addmm_", mk(3, 2, 4, 16, 2, 4, 8, 2, 8, 16), TK_FLOPS_EXTENDED), 1024);
	assert_int_equal(fl("aten::baddbmm_", mk(3, 0, 3, 2, 3, 5, 3, 2, 5, 7), TK_FLOPS_EXTENDED), 420);
	/* conv1d [2,4,10] w [8,4,3], stride 1: out 8; 2*2*8*3*4*8 = 3072 */
	assert_int_equal(fl("aten::conv1d", mk(2, 3, 2, 4, 10, 3, 8, 4, 3), TK_FLOPS_EXTENDED), 3072);
	/* conv3d [1,2,4,4,4] w [3,2,3,3,3]: out 2^3; 2*1*8*27*2*3 = 2592 */
	assert_int_equal(fl("aten::conv3d", mk(2, 5, 1, 2, 4, 4, 4, 5, 3, 2, 3, 3, 3), TK_FLOPS_EXTENDED),
	                 2592);
	/* sdpa q,k,v [2,4,16,8]: 2*8*16*16*(8+8) = 65536; backward (grad first): 2*8*16*16*40 */
	tk_dims a = mk(3, 4, 2, 4, 16, 8, 4, 2, 4, 16, 8, 4, 2, 4, 16, 8);
	assert_int_equal(tk_flops("aten::scaled_dot_product_attention", &a, NULL, TK_FLOPS_EXTENDED),
	                 65536);
	assert_int_equal(tk_flops("aten::scaled_dot_product_attention", &a, NULL, TK_FLOPS_TORCH), 0);
	tk_dims b = mk(4, 4, 2, 4, 16, 8, 4, 2, 4, 16, 8, 4, 2, 4, 16, 8, 4, 2, 4, 16, 8);
	assert_int_equal(tk_flops("aten::_scaled_dot_product_flash_attention_backward", &b, NULL,
	                          TK_FLOPS_EXTENDED), 163840);
}

static void test_flops_transposed_convolution(void **st)
{
	(void)st;
	/* aten::convolution, transposed: input [1,4,5,5], weight [4,2,3,3] (Cin, Cout/g):
	 * 2*1*25*9*4*2 = 3600 */
	tk_dims d = mk(2, 4, 1, 4, 5, 5, 4, 4, 2, 3, 3);
	tk_dims c = mk(9, -1, -1, -1, 1, 1, 1, 0, 1, 1, 1, 1, 0, 1, 1);
	assert_int_equal(tk_flops("aten::convolution", &d, &c, TK_FLOPS_EXTENDED), 3600);
}

static tk_stats *load(const char *name, tk_stats_opts *o)
{
	char path[1024];
	snprintf(path, sizeof path, "%s/%s", TK_TESTDATA, name);
	tk_reader *r = NULL;
	tk_stats *s = NULL;
	assert_int_equal(tk_reader_open_path(&r, path, NULL), 0);
	assert_int_equal(tk_stats_new(&s, o), 0);
	assert_int_equal(tk_stats_add_reader(s, r), 0);
	assert_int_equal(tk_stats_finish(s), 0);
	tk_reader_free(r);
	return s;
}

static const tk_stats_op *row(const tk_stats *s, const char *name)
{
	for (size_t i = 0; i < tk_stats_op_count(s); i++)
		if (strcmp(tk_stats_op_get(s, i)->name, name) == 0)
			return tk_stats_op_get(s, i);
	fail_msg("no row %s", name);
	return NULL;
}

/* tiny_gpu.json, by hand (µs):
 *   ProfilerStep#1 [0,100) > linear [10,60) > addmm [15,55) > cudaLaunchKernel [20,30)
 *                          > mul [70,90) > cudaLaunchKernel [75,80); is_leaf dropped;
 *   python_function not counted by default.
 *   self: step 100-50-20 = 30, linear 50-40 = 10, addmm 40-10 = 30, mul 20-5 = 15,
 *         launches 10+5 = 15; sum 100.
 *   GPU: gemm 8 (addmm, via External id 3), mul_kernel 4 (mul), memcpy 2 unattributed.
 *   CUDA total: addmm 8, linear 8, step 12, mul 4; self CUDA total 14.
 *   FLOPs (torch): addmm 2*4*8*16 = 1024, mul 64; extended: linear 1024, addmm 0. */
static void check_tiny(const tk_stats *s, int extended)
{
	const tk_stats_op *o = row(s, "ProfilerStep*");
	assert_int_equal(o->self_cpu, 30000);
	assert_int_equal(o->cpu_total, 100000);
	assert_int_equal(o->dev_total, 12000);
	assert_int_equal(o->self_dev, 0);
	o = row(s, "aten::linear");
	assert_int_equal(o->self_cpu, 10000);
	assert_int_equal(o->dev_total, 8000);
	assert_int_equal(o->flops, extended ? 1024 : 0);
	o = row(s, "aten::addmm");
	assert_int_equal(o->self_cpu, 30000);
	assert_int_equal(o->self_dev, 8000);
	assert_int_equal(o->flops, extended ? 0 : 1024);
	o = row(s, "cudaLaunchKernel");
	assert_int_equal(o->count, 2);
	assert_int_equal(o->self_cpu, 15000);
	o = row(s, "aten::mul");
	assert_int_equal(o->self_cpu, 15000);
	assert_int_equal(o->self_dev, 4000);
	assert_int_equal(o->flops, 64);
	assert_true(row(s, "gemm")->is_device);
	assert_int_equal(tk_stats_get_info(s)->unattributed, 1);
}

static void test_tiny_gpu(void **st)
{
	(void)st;
	tk_stats_opts o = {0};
	o.flops = TK_FLOPS_TORCH;
	tk_stats *s = load("tiny_gpu.json", &o);
	check_tiny(s, 0);
	assert_string_equal(tk_stats_op_get(s, 0)->name, "ProfilerStep*"); /* first by start */
	const tk_stats_sum *k = tk_stats_sum_get(s, TK_STATS_KERNEL, 0);
	assert_string_equal(k->name, "gemm");
	assert_int_equal(k->total, 8000);
	const tk_stats_sum *a = tk_stats_sum_get(s, TK_STATS_API, 0);
	assert_int_equal(a->count, 2);
	assert_true(a->med == 7500.0);
	assert_int_equal(tk_stats_sum_get(s, TK_STATS_MEMCPY, 0)->bytes, 1000);
	tk_stats_free(s);
	o.flops = TK_FLOPS_EXTENDED;
	s = load("tiny_gpu.json", &o);
	check_tiny(s, 1);
	tk_stats_free(s);
}

/* With room for only 2 pending events the late ProfilerStep is processed
 * after its children: it is counted as a late op. */
static void test_small_budget(void **st)
{
	(void)st;
	tk_stats_opts o = {0};
	o.max_pending = 2;
	tk_stats *s = load("tiny_gpu.json", &o);
	assert_true(tk_stats_get_info(s)->late > 0);
	assert_int_equal(row(s, "ProfilerStep*")->cpu_total, 100000);
	assert_int_equal(row(s, "aten::addmm")->self_dev, 8000);
	tk_stats_free(s);
}

/* Median and sample stddev are exact: 1,2,3,10 -> median 2.5 */
static void test_median(void **st)
{
	(void)st;
	tk_stats *s = NULL;
	assert_int_equal(tk_stats_new(&s, NULL), 0);
	int64_t d[] = {3, 1, 10, 2};
	for (int i = 0; i < 4; i++) {
		tk_event ev = {0};
		ev.ph = 'X';
		ev.has = TK_HAS_TS | TK_HAS_DUR | TK_HAS_NAME | TK_HAS_CAT;
		ev.ts = i * 100;
		ev.dur = d[i];
		ev.name = (tk_sv){"k", 1};
		ev.cat = (tk_sv){"kernel", 6};
		assert_int_equal(tk_stats_add(s, &ev), 0);
	}
	assert_int_equal(tk_stats_finish(s), 0);
	const tk_stats_sum *k = tk_stats_sum_get(s, TK_STATS_KERNEL, 0);
	assert_true(k->med == 2.5);
	assert_int_equal(k->min, 1);
	assert_int_equal(k->max, 10);
	/* mean 4; squares 9+1+36+4 = 50 over 3 */
	assert_true(k->stddev > 4.0824 && k->stddev < 4.0825);
	tk_stats_free(s);
}

static void test_format_json(void **st)
{
	(void)st;
	tk_stats *s = load("tiny_gpu.json", NULL);
	tk_table_opts o = {0};
	o.format = TK_TABLE_JSON;
	o.row_limit = -1;
	o.sort_by = "bogus";
	char *out = NULL;
	assert_int_equal(tk_stats_format_ops(&s, 1, &o, &out, NULL), TK_ERR_ARG);
	assert_non_null(strstr(tk_stats_error(s), "bogus"));
	o.sort_by = "self_cpu_time_total";
	assert_int_equal(tk_stats_format_ops(&s, 1, &o, &out, NULL), 0);
	assert_non_null(strstr(out, "\"self_cpu_time_total_ns\":100000"));
	free(out);
	tk_stats_free(s);
}

/* Call paths (opts.flame) of tiny_gpu.json, by hand (µs): ProfilerStep#1
 * [0,100) > model.py forward [5,95) (a Python frame) > linear [10,60) >
 * addmm [15,55) > cudaLaunchKernel [20,30); forward > mul [70,90) >
 * cudaLaunchKernel [75,80); is_leaf dropped. Self: step 100-90 = 10,
 * forward 90-50-20 = 20, linear 50-40 = 10, addmm 40-10 = 30, its launch
 * 10, mul 20-5 = 15, its launch 5; 100 in all. The ops table is the same
 * with the paths or without. */
static void test_flame(void **st)
{
	(void)st;
	tk_stats_opts fo = {0};
	fo.flame = 1;
	tk_stats *f = load("tiny_gpu.json", &fo), *s = load("tiny_gpu.json", NULL);
	char *out = NULL;
	size_t len = 0;
	assert_int_equal(tk_stats_format_folded(&f, 1, &out, &len), 0);
	assert_string_equal(out, "ProfilerStep* 10000\n"
	                         "ProfilerStep*;model.py(1): forward 20000\n"
	                         "ProfilerStep*;model.py(1): forward;aten::linear 10000\n"
	                         "ProfilerStep*;model.py(1): forward;aten::linear;aten::addmm 30000\n"
	                         "ProfilerStep*;model.py(1): forward;aten::linear;aten::addmm;cudaLaunchKernel 10000\n"
	                         "ProfilerStep*;model.py(1): forward;aten::mul 15000\n"
	                         "ProfilerStep*;model.py(1): forward;aten::mul;cudaLaunchKernel 5000\n");
	assert_int_equal(len, strlen(out));
	free(out);
	/* two stats objects: the same paths summed */
	tk_stats *two[2] = {f, f};
	assert_int_equal(tk_stats_format_folded(two, 2, &out, &len), 0);
	assert_non_null(strstr(out, "ProfilerStep*;model.py(1): forward;aten::mul 30000\n"));
	free(out);
	/* frames: callers first, totals of what they call */
	assert_int_equal(tk_stats_frame_count(f), 7);
	const tk_stats_frame *root = tk_stats_frame_get(f, 0);
	assert_string_equal(root->name, "ProfilerStep*");
	assert_int_equal(root->parent, SIZE_MAX);
	assert_int_equal(root->total_ns, 100000);
	for (size_t i = 1; i < tk_stats_frame_count(f); i++)
		assert_true(tk_stats_frame_get(f, i)->parent < i);
	assert_int_equal(tk_stats_frame_count(s), 0);
	/* merged: the same paths once, their times summed; no paths add none */
	tk_stats *three[3] = {f, s, f};
	tk_stats_frame *m = NULL;
	size_t nm = 0;
	assert_int_equal(tk_stats_frames_merge(three, 3, &m, &nm), 0);
	assert_int_equal(nm, 7);
	for (size_t i = 0; i < nm; i++) {
		const tk_stats_frame *one = tk_stats_frame_get(f, i);
		assert_string_equal(m[i].name, one->name);
		assert_int_equal(m[i].parent, one->parent);
		assert_int_equal(m[i].self_ns, 2 * one->self_ns);
		assert_int_equal(m[i].total_ns, 2 * one->total_ns);
	}
	free(m);
	/* a rank with other paths: a path under the same caller is one path, a
	 * name under another caller is another */
	static const char other[] =
	    "{\"traceEvents\":["
	    "{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"ProfilerStep#1\",\"pid\":1,\"tid\":1,\"ts\":0,\"dur\":50},"
	    "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::mul\",\"pid\":1,\"tid\":1,\"ts\":10,\"dur\":20},"
	    "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::linear\",\"pid\":1,\"tid\":1,\"ts\":60,\"dur\":4}]}";
	tk_reader *r = NULL;
	tk_stats *g = NULL;
	assert_int_equal(tk_reader_open_memory(&r, other, sizeof other - 1, "other.json", NULL), 0);
	assert_int_equal(tk_stats_new(&g, &fo), 0);
	assert_int_equal(tk_stats_add_reader(g, r), 0);
	assert_int_equal(tk_stats_finish(g), 0);
	tk_reader_free(r);
	assert_int_equal(tk_stats_frame_count(g), 3);
	tk_stats *both[2] = {f, g};
	assert_int_equal(tk_stats_frames_merge(both, 2, &m, &nm), 0);
	assert_int_equal(nm, 7 + 2); /* ProfilerStep*;aten::mul and aten::linear are new */
	int64_t roots = 0;
	for (size_t i = 0; i < nm; i++) {
		assert_true(m[i].parent == SIZE_MAX || m[i].parent < i);
		for (size_t j = 0; j < i; j++)
			assert_false(m[j].parent == m[i].parent && strcmp(m[j].name, m[i].name) == 0);
		if (m[i].parent == SIZE_MAX)
			roots += m[i].total_ns;
	}
	assert_string_equal(m[0].name, "ProfilerStep*");
	assert_int_equal(m[0].self_ns, 10000 + 30000); /* 50 - 20 */
	assert_int_equal(roots, 100000 + 50000 + 4000);
	assert_string_equal(m[7].name, "aten::mul");
	assert_int_equal(m[7].parent, 0);
	assert_int_equal(m[7].self_ns, 20000);
	assert_string_equal(m[8].name, "aten::linear");
	assert_int_equal(m[8].parent, SIZE_MAX);
	assert_int_equal(m[8].total_ns, 4000);
	free(m);
	tk_stats_free(g);
	assert_int_equal(tk_stats_frames_merge(NULL, 0, &m, &nm), 0);
	assert_int_equal(nm, 0);
	free(m);
	tk_table_opts o = {0};
	o.format = TK_TABLE_JSON;
	o.row_limit = -1;
	char *a = NULL, *b = NULL;
	assert_int_equal(tk_stats_format_ops(&f, 1, &o, &a, NULL), 0);
	assert_int_equal(tk_stats_format_ops(&s, 1, &o, &b, NULL), 0);
	assert_string_equal(a, b);
	free(a);
	free(b);
	tk_stats_free(f);
	tk_stats_free(s);
}

/* Tables as HTML: the cells as text shows them, escaped, numbers on the
 * right, the footer as paragraphs. */
static void test_format_html(void **st)
{
	(void)st;
	tk_stats *s = load("tiny_gpu.json", NULL);
	tk_table_opts o = {0};
	o.format = TK_TABLE_HTML;
	o.row_limit = -1;
	char *out = NULL;
	assert_int_equal(tk_stats_format_sum(&s, 1, TK_STATS_KERNEL, &o, &out, NULL), 0);
	assert_non_null(strstr(out, "<table class=\"tk\">"));
	assert_non_null(strstr(out, "<td>gemm</td>"));
	assert_non_null(strstr(out, "<td class=\"n\">8,000</td>"));
	free(out);
	assert_int_equal(tk_stats_format_sum(&s, 1, TK_STATS_MEMCPY, &o, &out, NULL), 0);
	assert_non_null(strstr(out, "Memcpy HtoD (Pageable -&gt; Device)"));
	assert_null(strstr(out, "Pageable -> Device"));
	free(out);
	tk_stats_free(s);
}

/* Args are read in one pass over the reader's compact JSON: the result must
 * be what tk_args_find gives (first of duplicate keys, top level only, the
 * alternative spelling when the first is not usable), with or without
 * TK_HAS_VALID_JSON. */
static tk_event args_ev(const char *name, const char *cat, const char *args, int valid)
{
	tk_event ev = {0};
	ev.ph = 'X';
	ev.has = TK_HAS_TS | TK_HAS_DUR | TK_HAS_NAME | TK_HAS_CAT | (valid ? TK_HAS_VALID_JSON : 0);
	ev.ts = 1000;
	ev.dur = 100;
	ev.name = (tk_sv){name, strlen(name)};
	ev.cat = (tk_sv){cat, strlen(cat)};
	ev.args = (tk_sv){args, strlen(args)};
	return ev;
}

static void test_args_one_pass(void **st)
{
	(void)st;
	static const char *const mm[] = {
		"{\"s\":\"x \\\"Input Dims\\\":[[9,9]]\",\"Input Dims\":[[2,3],[3,4]]}",
		"{\"o\":{\"Input Dims\":[[9,9],[9,9]]},\"Input Dims\":[[2,3],[3,4]]}",
		"{\"Input Dims\":[[2,3],[3,4]],\"Input Dims\":[[9,9],[9,9]]}",
		"{\"Input Dims\":\"x\",\"Input dims\":[[2,3],[3,4]]}",
		"{\"s\":\"a\\\\\",\"Input Dims\":[[2,3],[3,4]]}",
		"{\"External id\":1,\"a\":[{\"b\":\"]}\"}],\"Input Dims\":[[2,3],[3,4]]}",
	};
	for (int valid = 0; valid < 2; valid++)
		for (size_t i = 0; i < sizeof mm / sizeof mm[0]; i++) {
			tk_event ev = args_ev("aten::mm", "cpu_op", mm[i], valid);
			assert_int_equal(tk_flops_event(&ev, TK_FLOPS_TORCH), 48);
		}
	/* bytes: 1000 + 0 ("12" is a string) + 0 (overflow) + 19 digits; kernel
	 * ops found by External id, else external id */
	static const char *const cp[] = {
		"{\"bytes\":1000,\"bytes\":5}", "{\"bytes\":\"12\"}",
		"{\"bytes\":92233720368547758070}", "{\"x\":-1,\"bytes\":1234567890123456789}",
	};
	for (int valid = 0; valid < 2; valid++) {
		tk_stats *s = NULL;
		assert_int_equal(tk_stats_new(&s, NULL), 0);
		tk_event ev = args_ev("aten::a", "cpu_op", "{\"External id\":2.5,\"external id\":7}", valid);
		assert_int_equal(tk_stats_add(s, &ev), 0);
		ev = args_ev("aten::b", "cpu_op", "{\"external id\":8,\"External id\":9}", valid);
		assert_int_equal(tk_stats_add(s, &ev), 0);
		ev = args_ev("k", "kernel", "{\"External id\":7,\"correlation\":99}", valid);
		ev.dur = 30;
		assert_int_equal(tk_stats_add(s, &ev), 0);
		ev = args_ev("k", "kernel", "{\"correlation\":98,\"External id\":9,\"bytes\":4}", valid);
		ev.dur = 20;
		assert_int_equal(tk_stats_add(s, &ev), 0);
		for (size_t i = 0; i < sizeof cp / sizeof cp[0]; i++) {
			ev = args_ev("m", "gpu_memcpy", cp[i], valid);
			assert_int_equal(tk_stats_add(s, &ev), 0);
		}
		assert_int_equal(tk_stats_finish(s), 0);
		assert_int_equal(row(s, "aten::a")->self_dev, 30);
		assert_int_equal(row(s, "aten::b")->self_dev, 20);
		assert_int_equal(tk_stats_sum_get(s, TK_STATS_KERNEL, 0)->bytes, 0);
		assert_int_equal(tk_stats_sum_get(s, TK_STATS_MEMCPY, 0)->bytes,
		                 1000 + 1234567890123456789ull);
		tk_stats_free(s);
	}
}


/* ---- the op at each memory peak: in the first read where the order
 * allows, else from a second read that stops past the peak ---- */

#define OP(n, t, d, tid) "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"" n "\",\"pid\":1,\"tid\":" #tid ",\"ts\":" #t ",\"dur\":" #d "},"
#define MEM(t, b, tot) "{\"ph\":\"i\",\"s\":\"t\",\"name\":\"[memory]\",\"pid\":1,\"tid\":1,\"ts\":" #t ",\"args\":{\"Device Type\":1,\"Device Id\":0,\"Bytes\":" #b ",\"Total Allocated\":" #tot "}},"
#define MEMB(t, b) "{\"ph\":\"i\",\"s\":\"t\",\"name\":\"[memory]\",\"pid\":1,\"tid\":1,\"ts\":" #t ",\"args\":{\"Device Type\":1,\"Device Id\":0,\"Bytes\":" #b "}},"
#define END "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::last\",\"pid\":1,\"tid\":2,\"ts\":5000,\"dur\":1}]}"
/* aten::linear [1000, 1100], aten::empty [1010, 1020] and aten::mm [1030,
 * 1080] on thread 1; cuda:0's peak, 8000 B, at 1050: inside linear and mm */
#define LINEAR OP("aten::linear", 1000, 100, 1) OP("aten::empty", 1010, 10, 1)
#define MM OP("aten::mm", 1030, 50, 1)
#define MEMS MEM(1015, 1000, 5000) MEM(1050, 3000, 8000) MEM(1090, -1000, 7000) MEM(1200, -3000, 4000)

static tk_stats *mem_stats(const char *json)
{
	tk_reader *r = NULL;
	tk_stats *s = NULL;
	tk_stats_opts o = {0};
	o.memory_table = 1;
	assert_int_equal(tk_reader_open_memory(&r, json, strlen(json), "mem.json", NULL), 0);
	assert_int_equal(tk_stats_new(&s, &o), 0);
	assert_int_equal(tk_stats_add_reader(s, r), 0);
	assert_int_equal(tk_stats_finish(s), 0);
	tk_reader_free(r);
	assert_int_equal(tk_stats_memory_count(s), 1);
	assert_int_equal(tk_stats_memory_get(s, 0)->peak_alloc, 8000);
	return s;
}

/* The second read, event by event: the number of events it took until no
 * op was left to find (SIZE_MAX: still one at the end). */
static size_t second_read(tk_stats *s, const char *json)
{
	tk_reader *r = NULL;
	const tk_event *ev;
	size_t n = 0, at = SIZE_MAX;
	assert_int_equal(tk_reader_open_memory(&r, json, strlen(json), "mem.json", NULL), 0);
	while (tk_reader_next(r, &ev) == TK_OK) {
		assert_int_equal(tk_stats_memory_op(s, ev), 0);
		n++;
		if (at == SIZE_MAX && !tk_stats_memory_ops_left(s))
			at = n;
	}
	tk_reader_free(r);
	return at;
}

static void test_memory_peak_op(void **st)
{
	(void)st;
	/* in time order: found in the first read, with an op that comes after
	 * the peak's event (ts 1050, no duration) the innermost */
	static const char sorted[] = "{\"traceEvents\":[" LINEAR MEM(1015, 1000, 5000) MM MEM(1050, 3000, 8000)
	    OP("aten::view", 1050, 0, 1) MEM(1090, -1000, 7000) OP("aten::add", 1150, 10, 1) MEM(1200, -3000, 4000) END;
	tk_stats *s = mem_stats(sorted);
	assert_int_equal(tk_stats_memory_ops_left(s), 0);
	assert_string_equal(tk_stats_memory_get(s, 0)->op_at_peak, "aten::view");
	tk_stats_free(s);
	/* the [memory] events after the ops, the ops still open at the end
	 * covering the peak: the first read finds it too */
	static const char open_at_end[] = "{\"traceEvents\":[" LINEAR MM MEMS END;
	s = mem_stats(open_at_end);
	assert_int_equal(tk_stats_memory_ops_left(s), 0);
	assert_string_equal(tk_stats_memory_get(s, 0)->op_at_peak, "aten::mm");
	tk_stats_free(s);
	/* aten::add after them lets go of linear and mm before the [memory]
	 * events come: the second read finds mm and stops at add, the first op
	 * of the thread after the peak (the 5th event) */
	static const char late[] = "{\"traceEvents\":[" LINEAR MM OP("aten::add", 1150, 10, 1) MEMS
	    OP("aten::relu", 1300, 10, 1) END;
	s = mem_stats(late);
	assert_int_equal(tk_stats_memory_ops_left(s), 1);
	assert_string_equal(tk_stats_memory_get(s, 0)->op_at_peak, "");
	assert_int_equal(second_read(s, late), 4);
	assert_string_equal(tk_stats_memory_get(s, 0)->op_at_peak, "aten::mm");
	tk_stats_free(s);
	/* the same with the thread's ops out of time order (add first): no
	 * stop, the second read goes to the end */
	static const char unordered[] = "{\"traceEvents\":[" OP("aten::add", 1150, 10, 1) LINEAR MM
	    OP("aten::relu", 1300, 10, 1) MEMS END;
	s = mem_stats(unordered);
	assert_int_equal(tk_stats_memory_ops_left(s), 1);
	assert_int_equal(second_read(s, unordered), SIZE_MAX);
	assert_string_equal(tk_stats_memory_get(s, 0)->op_at_peak, "aten::mm");
	assert_int_equal(tk_stats_memory_ops_left(s), 1);
	tk_stats_free(s);
	/* the [memory] events out of time order: torch's totals give the peak
	 * whatever the order (found in one read); the running sum of Bytes
	 * (no totals) only in time order, so there the second read */
	static const char mem_unordered[] = "{\"traceEvents\":[" LINEAR MM MEM(1050, 3000, 8000) MEM(1015, 1000, 5000)
	    MEM(1090, -1000, 7000) MEM(1200, -3000, 4000) OP("aten::add", 1150, 10, 1) END;
	s = mem_stats(mem_unordered);
	assert_int_equal(tk_stats_memory_ops_left(s), 0);
	assert_string_equal(tk_stats_memory_get(s, 0)->op_at_peak, "aten::mm");
	tk_stats_free(s);
	static const char sum_unordered[] = "{\"traceEvents\":[" LINEAR MM MEMB(1050, 3000) MEMB(1015, 5000)
	    MEMB(1090, -1000) MEMB(1200, -3000) OP("aten::add", 1150, 10, 1) END;
	s = mem_stats(sum_unordered);
	assert_int_equal(tk_stats_memory_get(s, 0)->from_totals, 0);
	assert_int_equal(tk_stats_memory_ops_left(s), 1);
	assert_int_equal(second_read(s, sum_unordered), 8); /* add: the 8th event */
	assert_string_equal(tk_stats_memory_get(s, 0)->op_at_peak, "aten::mm");
	tk_stats_free(s);
	/* 300 ops nested on the thread, more than it keeps (those not kept end
	 * after the peak): the second read, which finds the innermost; the
	 * library's loop stops past the peak */
	size_t cap = 300 * 128 + 4096, len = 0;
	char *deep = malloc(cap);
	assert_non_null(deep);
	len += (size_t)snprintf(deep + len, cap - len, "{\"traceEvents\":[");
	for (int i = 0; i < 300; i++)
		len += (size_t)snprintf(deep + len, cap - len, "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"op%d\",\"pid\":1,"
		                        "\"tid\":1,\"ts\":%d,\"dur\":%d},", i, 700 + i, 800 - 2 * i);
	snprintf(deep + len, cap - len, "%s%s", MEMS, OP("aten::add", 1150, 10, 1) END);
	s = mem_stats(deep);
	assert_int_equal(tk_stats_memory_ops_left(s), 1);
	tk_reader *r = NULL;
	assert_int_equal(tk_reader_open_memory(&r, deep, strlen(deep), "deep.json", NULL), 0);
	assert_int_equal(tk_stats_memory_ops(s, r), 0);
	assert_int_equal(tk_stats_memory_ops_left(s), 0);
	assert_string_equal(tk_stats_memory_get(s, 0)->op_at_peak, "op299");
	const tk_event *ev;
	assert_int_equal(tk_reader_next(r, &ev), TK_OK); /* stopped at add: aten::last is still to come */
	assert_true(ev->name.len == 10 && memcmp(ev->name.ptr, "aten::last", 10) == 0);
	tk_reader_free(r);
	tk_stats_free(s);
	/* an op with a name longer than the threads keep runs at the peak: the
	 * second read names it */
	len = (size_t)snprintf(deep, cap, "{\"traceEvents\":[" LINEAR "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"");
	for (int i = 0; i < 2000; i++)
		deep[len++] = 'a' + i % 26;
	snprintf(deep + len, cap - len, "\",\"pid\":1,\"tid\":1,\"ts\":1030,\"dur\":50},%s", MEMS END);
	s = mem_stats(deep);
	assert_int_equal(tk_stats_memory_ops_left(s), 1);
	assert_int_equal(second_read(s, deep), SIZE_MAX); /* nothing after the peak on the thread */
	assert_int_equal(strlen(tk_stats_memory_get(s, 0)->op_at_peak), 2000);
	tk_stats_free(s);
	free(deep);
}

/* ---- the radix sorts behind medians, percentiles and the GPU time line ---- */

static int cmp_i64_ref(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

static void test_radix_sort(void **st)
{
	(void)st;
	/* values of every width and sign, against qsort */
	size_t n = 5000;
	int64_t *v = malloc(n * sizeof *v), *w = malloc(n * sizeof *w);
	assert_non_null(v);
	assert_non_null(w);
	uint64_t x = 88172645463325252ull;
	for (size_t i = 0; i < n; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		int shift = (int)(x % 64);
		v[i] = i < 4 ? (int64_t[]){INT64_MIN, INT64_MAX, 0, -1}[i] : (int64_t)(x >> shift) * ((x & 1) ? -1 : 1);
	}
	memcpy(w, v, n * sizeof *v);
	qsort(w, n, sizeof *w, cmp_i64_ref);
	assert_int_equal(tk__sort_i64(v, n), 0);
	assert_memory_equal(v, w, n * sizeof *v);
	/* all alike, one, none */
	for (size_t i = 0; i < n; i++)
		v[i] = 42;
	assert_int_equal(tk__sort_i64(v, n), 0);
	assert_int_equal(v[0], 42);
	assert_int_equal(v[n - 1], 42);
	assert_int_equal(tk__sort_i64(v, 1), 0);
	assert_int_equal(tk__sort_i64(NULL, 0), 0);
	free(v);
	free(w);
}

/* ---- the steps and launch tables in bounded memory ---- */

/* A generated time line: NOPS GPU ops on 3 streams of pid 1 and a second
 * rank (pid 1000001 in a merged trace's scheme), each launched by a
 * runtime call on pid 1 (or 1000001) with the same correlation id, or not
 * launched at all; neighbouring, negative and huge ids; ids called twice
 * (the earlier call is the launch); the events in a shuffled order. */
#define NOPS 6000
typedef struct tl_ev {
	tk_event ev;
	char args[128], name[32];
} tl_ev;

static uint64_t tl_rand(uint64_t *x)
{
	*x ^= *x << 13, *x ^= *x >> 7, *x ^= *x << 17;
	return *x;
}

static tk_event tl_x(int64_t ts, int64_t dur, const char *name, const char *cat, int64_t pid, int64_t tid)
{
	tk_event ev;
	memset(&ev, 0, sizeof ev);
	ev.ph = 'X';
	ev.has = TK_HAS_TS | TK_HAS_DUR | TK_HAS_NAME | TK_HAS_CAT;
	ev.ts = ts;
	ev.dur = dur;
	ev.name = (tk_sv){name, strlen(name)};
	ev.cat = (tk_sv){cat, strlen(cat)};
	ev.pid.kind = ev.tid.kind = TK_ID_INT;
	ev.pid.num = pid;
	ev.tid.num = tid;
	return ev;
}

/* v[0..n) in a random order, each event's strings its own again. */
static void tl_shuffle(tl_ev *v, size_t n, uint64_t *x)
{
	for (size_t i = n; i > 1; i--) {
		size_t j = tl_rand(x) % i;
		tl_ev t = v[i - 1];
		v[i - 1] = v[j];
		v[j] = t;
	}
	for (size_t i = 0; i < n; i++) {
		if (v[i].ev.args.ptr)
			v[i].ev.args.ptr = v[i].args;
		if (v[i].ev.name.ptr && v[i].name[0])
			v[i].ev.name.ptr = v[i].name;
	}
}

static tl_ev *timeline_events(size_t *n_out, int64_t *want_launched, int64_t *want_dmin, int64_t *want_dmax)
{
	size_t cap = NOPS * 3 + 64, n = 0;
	tl_ev *v = calloc(cap, sizeof *v);
	assert_non_null(v);
	uint64_t x = 0x9e3779b97f4a7c15ull;
	*want_launched = 0;
	*want_dmin = INT64_MAX;
	*want_dmax = INT64_MIN;
	for (int k = 0; k < 10; k++) { /* ProfilerStep#0..9, 1 ms each, on both ranks */
		for (int rank = 0; rank < 2; rank++) {
			tl_ev *e = &v[n++];
			snprintf(e->name, sizeof e->name, "ProfilerStep#%d", k);
			e->ev = tl_x(1000000 * k, 1000000, e->name, "user_annotation", rank * 1000000 + 1, 1);
		}
	}
	for (int i = 0; i < NOPS; i++) {
		int rank = i % 2;
		int64_t corr = i % 5 == 0 ? -(int64_t)i : i % 7 == 0 ? INT64_MAX - i : 1000 + i;
		int64_t lts = (int64_t)(tl_rand(&x) % 9900000), ldur = 1000 + (int64_t)(tl_rand(&x) % 5000);
		int64_t delay = (int64_t)(tl_rand(&x) % 200000) - 3000;
		int64_t ts = lts + ldur + delay, dur = 500 + (int64_t)(tl_rand(&x) % 20000);
		int launched = i % 11 != 0;
		for (int twice = 0; launched && twice < 1 + (i % 13 == 0); twice++) {
			tl_ev *e = &v[n++];
			snprintf(e->args, sizeof e->args, "{\"correlation\":%lld}", (long long)corr);
			e->ev = tl_x(lts + twice * 777, ldur, "cudaLaunchKernel", "cuda_runtime", rank * 1000000 + 1, 1);
			e->ev.args = (tk_sv){e->args, strlen(e->args)};
		}
		if (launched) {
			int64_t d = ts - (lts + ldur);
			++*want_launched;
			*want_dmin = d < *want_dmin ? d : *want_dmin;
			*want_dmax = d > *want_dmax ? d : *want_dmax;
		}
		tl_ev *e = &v[n++];
		snprintf(e->args, sizeof e->args, "{\"correlation\":%lld}", (long long)corr);
		const char *nm = i % 9 == 0 ? "ncclKernel_AllReduce" : i % 17 == 0 ? "Memcpy HtoD" : "gemm";
		const char *cat = i % 17 == 0 && i % 9 ? "gpu_memcpy" : "kernel";
		snprintf(e->name, sizeof e->name, "%s", nm);
		e->ev = tl_x(ts, dur, e->name, cat, rank * 1000000, 7 + i % 3);
		e->ev.args = (tk_sv){e->args, strlen(e->args)};
	}
	tl_shuffle(v, n, &x);
	*n_out = n;
	return v;
}

static tk_stats *timeline_stats(const tl_ev *v, size_t n, size_t memory, const char *tmpdir, int *failed)
{
	tk_stats_opts o = {0};
	o.step_table = o.launch_table = 1;
	o.memory_bytes = memory;
	o.tmpdir = tmpdir;
	tk_stats *s = NULL;
	assert_int_equal(tk_stats_new(&s, &o), 0);
	tk_stats_set_pid_span(s, 1000000);
	int rc = 0;
	for (size_t i = 0; i < n && !rc; i++)
		rc = tk_stats_add(s, &v[i].ev);
	if (!rc)
		rc = tk_stats_finish(s);
	*failed = rc;
	return s;
}

static void test_timeline_bounded(void **st)
{
	(void)st;
	size_t n;
	int64_t launched, dmin, dmax;
	tl_ev *v = timeline_events(&n, &launched, &dmin, &dmax);
	char dir[] = "/tmp/tk_tline_XXXXXX";
	assert_non_null(mkdtemp(dir));
	int rc;
	tk_stats *a = timeline_stats(v, n, 0, NULL, &rc);
	assert_int_equal(rc, 0);
	/* 64 KiB: every sorter spills many runs, and the join and the merges
	 * give the same tables */
	tk_stats *b = timeline_stats(v, n, 64 << 10, dir, &rc);
	assert_int_equal(rc, 0);
	assert_int_equal(tk_stats_step_count(a), 10);
	assert_int_equal(tk_stats_step_count(b), 10);
	uint64_t ops = 0;
	for (size_t i = 0; i < 10; i++) {
		const tk_stats_step *x = tk_stats_step_get(a, i), *y = tk_stats_step_get(b, i);
		assert_memory_equal(x, y, sizeof *x);
		assert_int_equal(x->idle, x->host_wait + x->kernel_wait + x->other_idle);
		assert_true(x->busy > 0 && x->overlap <= x->comm);
		ops += x->launched;
	}
	assert_true(ops > NOPS / 2);
	/* all, then the 6 streams (3 per rank) */
	assert_int_equal(tk_stats_launch_count(a), 7);
	assert_int_equal(tk_stats_launch_count(b), 7);
	for (size_t i = 0; i < 7; i++) {
		const tk_stats_launch *x = tk_stats_launch_get(a, i), *y = tk_stats_launch_get(b, i);
		assert_string_equal(x->stream, y->stream);
		assert_string_equal(x->worst, y->worst);
		assert_int_equal(x->ops, y->ops);
		assert_int_equal(x->launched, y->launched);
		assert_int_equal(x->delay_min, y->delay_min);
		assert_int_equal(x->delay_p50, y->delay_p50);
		assert_int_equal(x->delay_p90, y->delay_p90);
		assert_int_equal(x->delay_p99, y->delay_p99);
		assert_int_equal(x->delay_max, y->delay_max);
		assert_true(x->delay_mean == y->delay_mean);
		assert_int_equal(x->short_ops, y->short_ops);
		assert_int_equal(x->short_ns, y->short_ns);
		assert_int_equal(x->max_queue, y->max_queue);
		assert_true(x->mean_queue == y->mean_queue);
	}
	/* the all row against the events as generated: every op, those with a
	 * launch joined to the earlier of two calls of an id, per rank */
	const tk_stats_launch *all = tk_stats_launch_get(b, 0);
	assert_int_equal(all->ops, NOPS);
	assert_int_equal(all->launched, launched);
	assert_int_equal(all->delay_min, dmin);
	assert_int_equal(all->delay_max, dmax);
	assert_true(all->delay_p50 >= dmin && all->delay_p50 <= all->delay_p90 && all->delay_p99 <= dmax);
	tk_stats_free(a);
	tk_stats_free(b);
	/* the spilled runs are gone */
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rmdir %s", dir);
	assert_int_equal(system(cmd), 0);
	/* a spill that cannot be written: an error naming the directory, not a table */
	tk_stats *c = timeline_stats(v, n, 64 << 10, "/nonexistent/tk_tline", &rc);
	assert_true(rc < 0);
	assert_non_null(strstr(tk_stats_error(c), "/nonexistent/tk_tline"));
	assert_int_equal(tk_stats_step_count(c), 0);
	tk_stats_free(c);
	free(v);
}

/* The memory table's sorting spilled: 5000 [memory] events of two devices
 * in shuffled time order (cuda:0 with torch's Total Allocated, cuda:1
 * without: the running sum of Bytes in time order), against the figures
 * worked out here and the same table in memory. */
#define NMEM 5000
static void test_memory_bounded(void **st)
{
	(void)st;
	static tl_ev v[NMEM];
	int64_t ts[NMEM], bytes[NMEM];
	uint64_t x = 0x2545f4914f6cdd1dull;
	for (int i = 0; i < NMEM; i++) {
		ts[i] = (int64_t)(i / 2) * 1000 + 7; /* two events at each time, one per device */
		bytes[i] = (int64_t)(tl_rand(&x) % 200000) - 90000;
	}
	/* cuda:0 (even i): Total Allocated = 1e9 + the running sum; cuda:1 (odd): none */
	int64_t run[2] = {0, 0}, peak[2] = {INT64_MIN, INT64_MIN}, peak_ts[2] = {0, 0};
	for (int i = 0; i < NMEM; i++) {
		int d = i & 1;
		run[d] += bytes[i];
		int64_t a = d ? run[d] : 1000000000 + run[d];
		if (a > peak[d]) {
			peak[d] = a;
			peak_ts[d] = ts[i];
		}
		tl_ev *e = &v[i];
		if (d)
			snprintf(e->args, sizeof e->args, "{\"Bytes\":%lld,\"Device Type\":1,\"Device Id\":1}",
			         (long long)bytes[i]);
		else
			snprintf(e->args, sizeof e->args, "{\"Bytes\":%lld,\"Total Allocated\":%lld,\"Device Type\":1,\"Device Id\":0}",
			         (long long)bytes[i], (long long)a);
		e->ev = tl_x(ts[i], 0, "[memory]", "cpu_instant_event", 1, 1);
		e->ev.ph = 'i';
		e->ev.has &= ~TK_HAS_DUR;
	}
	for (size_t i = NMEM; i > 1; i--) { /* shuffled; the copies' pointers mended below */
		size_t j = tl_rand(&x) % i;
		tl_ev t = v[i - 1];
		v[i - 1] = v[j];
		v[j] = t;
	}
	tk_stats *s[2];
	char dir[] = "/tmp/tk_mem_XXXXXX";
	assert_non_null(mkdtemp(dir));
	for (int k = 0; k < 2; k++) {
		tk_stats_opts o = {0};
		o.memory_table = o.memory_series = 1;
		o.memory_bytes = k ? 16 << 10 : 0;
		o.tmpdir = dir;
		assert_int_equal(tk_stats_new(&s[k], &o), 0);
		for (int i = 0; i < NMEM; i++) {
			v[i].ev.args = (tk_sv){v[i].args, strlen(v[i].args)};
			assert_int_equal(tk_stats_add(s[k], &v[i].ev), 0);
		}
		assert_int_equal(tk_stats_finish(s[k]), 0);
		assert_int_equal(tk_stats_memory_count(s[k]), 2);
		for (int d = 0; d < 2; d++) { /* rows in order of first appearance */
			const tk_stats_memory *r = tk_stats_memory_get(s[k], 0);
			if (strcmp(r->device, d ? "cuda:1" : "cuda:0") != 0)
				r = tk_stats_memory_get(s[k], 1);
			assert_string_equal(r->device, d ? "cuda:1" : "cuda:0");
			assert_int_equal(r->events, NMEM / 2);
			assert_int_equal(r->from_totals, !d);
			assert_int_equal(r->peak_alloc, peak[d]);
			assert_int_equal(r->peak_ts, peak_ts[d]);
			assert_int_equal(r->final_alloc, d ? run[1] : 1000000000 + run[0]);
		}
		assert_int_equal(tk_stats_memory_points(s[k]), NMEM);
	}
	/* the time line: device by device, in time order, the same either way */
	for (size_t i = 0; i < NMEM; i++) {
		tk_stats_mem_point p, q;
		assert_int_equal(tk_stats_memory_point(s[0], i, &p), 0);
		assert_int_equal(tk_stats_memory_point(s[1], i, &q), 0);
		assert_string_equal(p.device, q.device);
		assert_int_equal(p.ts, q.ts);
		assert_int_equal(p.bytes, q.bytes);
		assert_int_equal(p.allocated, q.allocated);
		/* the first device's events, then the other's: one per time each */
		assert_int_equal(p.ts, ts[2 * (i % (NMEM / 2))]);
	}
	tk_stats_free(s[0]);
	tk_stats_free(s[1]);
	char cmd[64];
	snprintf(cmd, sizeof cmd, "rmdir %s", dir); /* the runs are gone */
	assert_int_equal(system(cmd), 0);
}

/* Times at the ends of the clock: a launch and its kernel at INT64_MAX
 * (the queue's last launch is at the last start's time), another pair at
 * INT64_MIN, a step around neither. */
static void test_timeline_extremes(void **st)
{
	(void)st;
	tk_stats_opts o = {0};
	o.step_table = o.launch_table = 1;
	tk_stats *s = NULL;
	assert_int_equal(tk_stats_new(&s, &o), 0);
	const char *a1 = "{\"correlation\":1}", *a2 = "{\"correlation\":2}";
	tk_event ev[5] = {
		tl_x(INT64_MAX, 0, "cudaLaunchKernel", "cuda_runtime", 1, 1),
		tl_x(INT64_MAX, 0, "k_end", "kernel", 1, 7),
		tl_x(INT64_MIN, 0, "cudaLaunchKernel", "cuda_runtime", 1, 1),
		tl_x(INT64_MIN, 5, "k_start", "kernel", 1, 7),
		tl_x(1000, 100, "ProfilerStep#1", "user_annotation", 1, 1),
	};
	ev[0].args = ev[1].args = (tk_sv){a1, strlen(a1)};
	ev[2].args = ev[3].args = (tk_sv){a2, strlen(a2)};
	for (int i = 0; i < 5; i++)
		assert_int_equal(tk_stats_add(s, &ev[i]), 0);
	assert_int_equal(tk_stats_finish(s), 0);
	const tk_stats_launch *all = tk_stats_launch_get(s, 0);
	assert_non_null(all);
	assert_int_equal(all->ops, 2);
	assert_int_equal(all->launched, 2);
	assert_int_equal(all->delay_min, 0);
	assert_int_equal(all->delay_max, 0);
	/* each start comes before the launch at its time: the queue never holds one */
	assert_int_equal(all->max_queue, 0);
	const tk_stats_step *r = tk_stats_step_get(s, 0);
	assert_non_null(r);
	assert_int_equal(r->wall, 100);
	assert_int_equal(r->busy, 0);
	assert_int_equal(r->idle, 100);
	/* nothing queued in the step: k_end's launch is at INT64_MAX */
	assert_int_equal(r->host_wait, 100);
	assert_int_equal(r->kernel_wait + r->other_idle, 0);
	assert_int_equal(r->launched, 0);
	tk_stats_free(s);
}

/* ---- tk_steps: launches sorted in bounded memory, kept as runs ---- */

typedef struct lkey {
	int64_t rank, corr, ts;
} lkey;

static int cmp_lkey(const void *a, const void *b)
{
	const lkey *x = a, *y = b;
	if (x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	if (x->corr != y->corr)
		return x->corr < y->corr ? -1 : 1;
	return (x->ts > y->ts) - (x->ts < y->ts);
}

static int64_t corr_of(const tk_event *ev)
{
	const char *p = memchr(ev->args.ptr, ':', ev->args.len);
	return p ? strtoll(p + 1, NULL, 10) : 0;
}

static int is_gpu(const tk_event *ev)
{
	return ev->cat.len != 12; /* "kernel", "gpu_memcpy": not "cuda_runtime" */
}

static int64_t part_at(const int64_t *starts, size_t n, int64_t t)
{
	int64_t k = 0;
	for (size_t i = 1; i < n; i++)
		if (starts[i] <= t)
			k = (int64_t)i;
	return k;
}

static tk_steps *steps_of(const tl_ev *v, size_t n, size_t memory, const char *tmpdir, int *failed)
{
	tk_steps *s = NULL;
	assert_int_equal(tk_steps_new(&s), 0);
	tk_steps_set_pid_span(s, 1000000);
	assert_int_equal(tk_steps_set_memory(s, memory, tmpdir), 0);
	int rc = 0;
	for (size_t i = 0; i < n && !rc; i++)
		rc = tk_steps_add(s, &v[i].ev);
	/* memory is given before the first event */
	assert_int_equal(tk_steps_set_memory(s, 0, NULL), TK_ERR_ARG);
	if (!rc)
		rc = tk_steps_finish(s);
	*failed = rc;
	return s;
}

static void test_steps_parts(void **st)
{
	(void)st;
	size_t n;
	int64_t launched, dmin, dmax;
	tl_ev *v = timeline_events(&n, &launched, &dmin, &dmax);
	/* the test's own join: every launch by (rank, correlation id), earliest first */
	lkey *l = calloc(n, sizeof *l);
	size_t nl = 0;
	for (size_t i = 0; i < n; i++)
		if (v[i].ev.args.ptr && !is_gpu(&v[i].ev))
			l[nl++] = (lkey){v[i].ev.pid.num / 1000000, corr_of(&v[i].ev), v[i].ev.ts};
	qsort(l, nl, sizeof *l, cmp_lkey);
	/* parts that are not the steps' starts */
	static const int64_t starts[] = {INT64_MIN, 2500000, 5000000, 5000001, 7500000};
	size_t ns = sizeof starts / sizeof *starts;
	int64_t want_late[5] = {INT64_MIN, INT64_MIN, INT64_MIN, INT64_MIN, INT64_MIN};
	char dir[] = "/tmp/tk_steps_XXXXXX";
	assert_non_null(mkdtemp(dir));
	int rc;
	tk_steps *a = steps_of(v, n, 0, NULL, &rc);
	assert_int_equal(rc, 0);
	tk_steps *b = steps_of(v, n, 16 << 10, dir, &rc); /* spills many runs */
	assert_int_equal(rc, 0);
	assert_int_equal(tk_steps_part(a, &v[0].ev, NULL), -1); /* no parts yet */
	int64_t late_a[5], late_b[5];
	assert_int_equal(tk_steps_parts(a, starts, ns, late_a), 0);
	assert_int_equal(tk_steps_parts(b, starts, ns, late_b), 0);
	size_t gpu = 0, by = 0;
	for (size_t i = 0; i < n; i++) {
		const tk_event *ev = &v[i].ev;
		int64_t want = part_at(starts, ns, ev->ts);
		int want_by = 0;
		if (ev->args.ptr && is_gpu(ev)) {
			lkey k = {ev->pid.num / 1000000, corr_of(ev), INT64_MIN};
			size_t lo = 0, hi = nl; /* the first launch >= k */
			while (lo < hi) {
				size_t mid = (lo + hi) / 2;
				if (cmp_lkey(&l[mid], &k) < 0)
					lo = mid + 1;
				else
					hi = mid;
			}
			gpu++;
			if (lo < nl && l[lo].rank == k.rank && l[lo].corr == k.corr) {
				int64_t p = part_at(starts, ns, l[lo].ts);
				if (part_at(starts, ns, ev->ts) > p && ev->ts > want_late[p])
					want_late[p] = ev->ts;
				want = p, want_by = 1, by++;
			}
		}
		int by_a, by_b;
		assert_int_equal(tk_steps_part(a, ev, &by_a), want);
		assert_int_equal(tk_steps_part(b, ev, &by_b), want);
		assert_int_equal(by_a, want_by);
		assert_int_equal(by_b, want_by);
	}
	assert_true(gpu == NOPS && by > NOPS / 2 && by < gpu);
	assert_memory_equal(late_a, want_late, sizeof want_late);
	assert_memory_equal(late_b, want_late, sizeof want_late);
	assert_true(want_late[0] > INT64_MIN && want_late[2] == INT64_MIN); /* part 2 is 1 ns long */
	/* once: the same parts give late again, others are refused */
	int64_t again[5];
	assert_int_equal(tk_steps_parts(b, starts, ns, again), 0);
	assert_memory_equal(again, want_late, sizeof want_late);
	assert_int_equal(tk_steps_parts(b, starts, ns - 1, NULL), TK_ERR_ARG);
	static const int64_t unsorted[] = {5, 4};
	tk_steps *c = NULL;
	assert_int_equal(tk_steps_new(&c), 0);
	assert_int_equal(tk_steps_parts(c, starts, ns, NULL), TK_ERR_ARG); /* not finished */
	assert_int_equal(tk_steps_finish(c), 0);
	assert_int_equal(tk_steps_parts(c, unsorted, 2, NULL), TK_ERR_ARG);
	tk_steps_free(c);
	/* the random launches make many runs, still fewer than the ids */
	assert_true(tk__steps_runs(a) == tk__steps_runs(b) && tk__steps_runs(a) < gpu);
	tk_steps_free(a);
	tk_steps_free(b);
	char cmd[64];
	snprintf(cmd, sizeof cmd, "rmdir %s", dir); /* fails unless the runs were removed */
	assert_int_equal(system(cmd), 0);

	/* a window that misses the steps (it ends before it starts, as --steps
	 * and --window make it then) holds nothing */
	c = steps_of(v, n, 0, NULL, &rc);
	assert_int_equal(rc, 0);
	tk_stats_opts o = {0};
	o.steps = c;
	o.window = (tk_window){1, 5000000, 4000000, 0, 0};
	tk_stats *ss = NULL;
	assert_int_equal(tk_stats_new(&ss, &o), 0);
	for (size_t i = 0; i < n; i++)
		assert_int_equal(tk_stats_add(ss, &v[i].ev), 0);
	assert_int_equal(tk_stats_finish(ss), 0);
	assert_int_equal(tk_stats_get_info(ss)->events, 0);
	tk_stats_free(ss);
	tk_steps_free(c);

	/* a spill that cannot be written is an error naming the directory,
	 * and stays one */
	c = steps_of(v, n, 16 << 10, "/nonexistent/tk_steps", &rc);
	if (!rc)
		rc = tk_steps_parts(c, starts, ns, NULL);
	assert_true(rc < 0);
	assert_non_null(strstr(tk_steps_error(c), "/nonexistent/tk_steps"));
	tk_steps_finish(c); /* (when an event failed) */
	assert_int_equal(tk_steps_parts(c, starts, ns, NULL), rc);
	tk_steps_free(c);
	free(l);
	free(v);
}

/* Launches in the order of their ids, as CUPTI numbers them: one run per
 * part and rank, however many ids. */
static void test_steps_runs(void **st)
{
	(void)st;
	enum { IDS = 20000 };
	tl_ev *v = calloc(2 * IDS + 3, sizeof *v);
	assert_non_null(v);
	for (int i = 0; i < IDS; i++) {
		int rank = i % 2;
		tl_ev *e = &v[2 * i];
		snprintf(e->args, sizeof e->args, "{\"correlation\":%d}", 100 + i / 2);
		e->ev = tl_x(1000 * (int64_t)i, 500, "cudaLaunchKernel", "cuda_runtime", rank * 1000000, 1);
		e->ev.args = (tk_sv){e->args, strlen(e->args)};
		e++;
		memcpy(e->args, v[2 * i].args, sizeof e->args);
		e->ev = tl_x(1000 * (int64_t)i + 100000, 500, "gemm", "kernel", rank * 1000000, 7);
		e->ev.args = (tk_sv){e->args, strlen(e->args)};
	}
	/* an id called twice, on both sides of 5 ms: the earlier call launched
	 * it (after rank 1's last id, launched in part 3: one run more) */
	for (int k = 0; k < 3; k++) {
		tl_ev *e = &v[2 * IDS + k];
		snprintf(e->args, sizeof e->args, "{\"correlation\":%d}", 20000);
		e->ev = k < 2 ? tl_x(k ? 5000100 : 4999900, 50, "cudaLaunchKernel", "cuda_runtime", 1000000, 1)
		              : tl_x(5000200, 50, "gemm", "kernel", 1000000, 7);
		e->ev.args = (tk_sv){e->args, strlen(e->args)};
	}
	static const int64_t starts[] = {0, 5000000, 10000000, 15000000};
	int rc, by;
	tk_steps *s = steps_of(v, 2 * IDS + 3, 64 << 10, NULL, &rc);
	assert_int_equal(rc, 0);
	int64_t late[4];
	assert_int_equal(tk_steps_parts(s, starts, 4, late), 0);
	assert_int_equal(tk__steps_runs(s), 2 * 4 + 1);
	assert_int_equal(tk_steps_part(s, &v[2 * IDS + 2].ev, &by), 0);
	assert_int_equal(by, 1);
	/* the kernel of the last launch before 5 ms starts 0.1 ms into part 1 */
	assert_int_equal(late[0], 4999000 + 100000);
	assert_int_equal(late[3], INT64_MIN);
	for (int i = 0; i < 2 * IDS; i += 2) {
		int64_t want = (int64_t)(i / 2) * 1000 / 5000000;
		assert_int_equal(tk_steps_part(s, &v[i + 1].ev, &by), want);
		assert_int_equal(by, 1);
	}
	tk_steps_free(s);
	free(v);
}

/* Twenty ranks of a merged trace share every correlation id: each rank's
 * kernels go to the part of its own rank's launch (past the first few
 * groups of an id, they are found through a map). */
static void test_steps_ranks(void **st)
{
	(void)st;
	enum { RANKS = 20, IDS = 1000 };
	tl_ev *v = calloc(2 * RANKS * IDS, sizeof *v);
	assert_non_null(v);
	size_t n = 0;
	for (int r = 0; r < RANKS; r++)
		for (int i = 0; i < IDS; i++) {
			int64_t lts = (int64_t)i * 1000 + (int64_t)r * 37000;
			for (int k = 0; k < 2; k++) {
				tl_ev *e = &v[n++];
				snprintf(e->args, sizeof e->args, "{\"correlation\":%d}", i);
				e->ev = k ? tl_x(lts + 5000, 100, "gemm", "kernel", (int64_t)r * 1000000, 7)
				          : tl_x(lts, 100, "cudaLaunchKernel", "cuda_runtime", (int64_t)r * 1000000 + 1, 1);
				e->ev.args = (tk_sv){e->args, strlen(e->args)};
			}
		}
	uint64_t x = 0x243f6a8885a308d3ull;
	tl_shuffle(v, n, &x); /* the ranks' records of an id interleave */
	static const int64_t starts[] = {INT64_MIN, 250000, 500000, 750000};
	int rc;
	tk_steps *s = steps_of(v, n, 64 << 10, NULL, &rc);
	assert_int_equal(rc, 0);
	assert_int_equal(tk_steps_parts(s, starts, 4, NULL), 0);
	for (size_t i = 0; i < n; i++) {
		if (!is_gpu(&v[i].ev))
			continue;
		int by;
		int64_t lts = v[i].ev.ts - 5000;
		assert_int_equal(tk_steps_part(s, &v[i].ev, &by), part_at(starts, 4, lts));
		assert_int_equal(by, 1);
	}
	/* each rank's ids, in call order, make one run per part they reach */
	size_t want = 0;
	for (int r = 0; r < RANKS; r++)
		want += (size_t)(part_at(starts, 4, (IDS - 1) * 1000 + r * 37000) -
		                 part_at(starts, 4, r * 37000) + 1);
	assert_int_equal(tk__steps_runs(s), want);
	tk_steps_free(s);
	free(v);
}

/* ---- the id maps: paged out past their memory ---- */

/* Random puts and gets over ~300 pages with 4 in memory: every get is the
 * last put (or 0), pages go to the file and come back. */
static void test_idmap_paged(void **st)
{
	(void)st;
	enum { IDS = 300 * 4096, OPS = 200000 };
	uint32_t *ref = calloc(IDS, sizeof *ref);
	assert_non_null(ref);
	char dir[] = "/tmp/tk_idmap_XXXXXX";
	assert_non_null(mkdtemp(dir));
	tk__idmap m;
	memset(&m, 0, sizeof m);
	m.pool.max_resident = tk__pool_pages(0);
	assert_int_equal(m.pool.max_resident, 4);
	m.pool.tmpdir = dir;
	uint64_t x = 0x2545f4914f6cdd1dull;
	for (int i = 0; i < OPS; i++) {
		/* mostly near a moving front, now and then anywhere, as ids come */
		uint64_t id = i % 7 ? ((uint64_t)i * 6 + tl_rand(&x) % 8192) % IDS : tl_rand(&x) % IDS;
		if (tl_rand(&x) % 3) {
			uint32_t v = (uint32_t)tl_rand(&x) | 1;
			assert_int_equal(tk__idmap_put(&m, id, v), 0);
			ref[id] = v;
		} else {
			assert_int_equal(tk__idmap_get(&m, id), ref[id]);
		}
		assert_true(m.pool.resident <= 4);
	}
	for (uint64_t id = 0; id < IDS; id += 97) /* a scan from the start, as GPU events come after */
		assert_int_equal(tk__idmap_get(&m, id), ref[id]);
	assert_int_equal(m.pool.err, 0);
	assert_true(m.pool.out > 300);
	tk__idmap_free(&m);
	char cmd[64];
	snprintf(cmd, sizeof cmd, "rmdir %s", dir); /* the file had no name */
	assert_int_equal(system(cmd), 0);
	/* no directory: the page that goes out fails, named, and the map stops */
	memset(&m, 0, sizeof m);
	m.pool.max_resident = 4;
	m.pool.tmpdir = "/nonexistent/tk_idmap";
	int rc = 0;
	for (uint64_t id = 0; id < 8 * 4096 && !rc; id += 4096)
		rc = tk__idmap_put(&m, id, 1);
	assert_int_equal(rc, TK_ERR_IO);
	assert_non_null(strstr(m.pool.msg, "/nonexistent/tk_idmap"));
	assert_int_equal(tk__idmap_get(&m, 0), 0);
	tk__idmap_free(&m);
	free(ref);
}

/* An ops table whose GPU time goes through ids on hundreds of pages, the
 * kernels after every CPU event as Kineto writes them: with 4 pages in
 * memory the same table as with all of them, each op's GPU time the sum of
 * its kernels. */
#define AOPS 20000
static tl_ev *attr_events(size_t *n_out, int64_t *want_dev)
{
	tl_ev *v = calloc(3 * AOPS, sizeof *v);
	assert_non_null(v);
	size_t n = 0;
	static const char *const names[] = {"aten::mm", "aten::add", "aten::conv2d"};
	want_dev[0] = want_dev[1] = want_dev[2] = 0;
	for (int i = 0; i < AOPS; i++) {
		int64_t ext = 5 + (int64_t)i * 61, corr = 1000000 + (int64_t)i * 37, ts = (int64_t)i * 10000;
		tl_ev *e = &v[n++];
		snprintf(e->args, sizeof e->args, "{\"External id\":%lld}", (long long)ext);
		e->ev = tl_x(ts, 5000, names[i % 3], "cpu_op", 1, 1);
		e->ev.args = (tk_sv){e->args, strlen(e->args)};
		e = &v[n++];
		snprintf(e->args, sizeof e->args, "{\"External id\":%lld,\"correlation\":%lld}", (long long)ext,
		         (long long)corr);
		e->ev = tl_x(ts + 100, 1000, "cudaLaunchKernel", "cuda_runtime", 1, 1);
		e->ev.args = (tk_sv){e->args, strlen(e->args)};
	}
	for (int i = 0; i < AOPS; i++) {
		int64_t ext = 5 + (int64_t)i * 61, corr = 1000000 + (int64_t)i * 37, dur = 100 + i % 500;
		tl_ev *e = &v[n++];
		/* every third kernel has no External id: found through its launch */
		if (i % 3 == 2)
			snprintf(e->args, sizeof e->args, "{\"correlation\":%lld}", (long long)corr);
		else
			snprintf(e->args, sizeof e->args, "{\"External id\":%lld,\"correlation\":%lld}", (long long)ext,
			         (long long)corr);
		e->ev = tl_x((int64_t)i * 10000 + 3000, dur, "gemm", "kernel", 0, 7);
		e->ev.args = (tk_sv){e->args, strlen(e->args)};
		want_dev[i % 3] += dur;
	}
	*n_out = n;
	return v;
}

static tk_stats *attr_stats_n(const tl_ev *v, size_t n, size_t memory, const char *tmpdir, int *failed,
                              size_t max_pending, unsigned threads)
{
	tk_stats_opts o = {0};
	o.memory_bytes = memory;
	o.tmpdir = tmpdir;
	o.max_pending = max_pending;
	o.threads = threads;
	tk_stats *s = NULL;
	assert_int_equal(tk_stats_new(&s, &o), 0);
	int rc = 0;
	for (size_t i = 0; i < n && !rc; i++)
		rc = tk_stats_add(s, &v[i].ev);
	if (!rc)
		rc = tk_stats_finish(s);
	*failed = rc;
	return s;
}

static tk_stats *attr_stats(const tl_ev *v, size_t n, size_t memory, const char *tmpdir, int *failed)
{
	/* processed as they come: the kernels find their ops in the maps */
	return attr_stats_n(v, n, memory, tmpdir, failed, 4096, 0);
}

/* Every op row and count of a and b the same. */
static void same_ops(const tk_stats *a, const tk_stats *b)
{
	assert_int_equal(tk_stats_op_count(a), tk_stats_op_count(b));
	for (size_t i = 0; i < tk_stats_op_count(a); i++) {
		const tk_stats_op *x = tk_stats_op_get(a, i), *y = tk_stats_op_get(b, i);
		assert_string_equal(x->name, y->name);
		assert_int_equal(x->is_device, y->is_device);
		assert_int_equal(x->count, y->count);
		assert_int_equal(x->self_cpu, y->self_cpu);
		assert_int_equal(x->cpu_total, y->cpu_total);
		assert_int_equal(x->self_dev, y->self_dev);
		assert_int_equal(x->dev_total, y->dev_total);
		assert_int_equal(x->flops, y->flops);
	}
	const tk_stats_info *p = tk_stats_get_info(a), *q = tk_stats_get_info(b);
	assert_int_equal(p->unattributed, q->unattributed);
	assert_int_equal(p->late, q->late);
	assert_int_equal(p->ops, q->ops);
	assert_int_equal(p->apis, q->apis);
	assert_int_equal(p->device, q->device);
}

/* The nesting and the attribution on a thread of their own (threads 2),
 * and on the caller's when that thread cannot start: the same tables as
 * on the caller's thread, with the pending events flushed early (late ops,
 * GPU time deferred and retried) and the events past one block of
 * records; an error found there comes back with its message. */
static void test_nest_thread(void **st)
{
	(void)st;
	size_t n;
	int64_t want[3];
	tl_ev *v = attr_events(&n, want);
	/* the kernels first: deferred, retried at each flush; every 7th op
	 * moved back in time, to come late after a flush */
	tl_ev *w = malloc(n * sizeof *w);
	assert_non_null(w);
	size_t k = 0;
	for (size_t i = 2 * AOPS; i < n; i++)
		w[k++] = v[i];
	for (size_t i = 0; i < 2 * AOPS; i++) {
		w[k] = v[i]; /* (its args still v's) */
		if (i % 14 == 0)
			w[k].ev.ts -= 300000;
		k++;
	}
	static const size_t budgets[] = {4096, 100, 3};
	for (int t = 0; t < 2; t++)
		for (size_t b = 0; b < 3; b++) {
			const tl_ev *in = t ? w : v;
			int rc;
			tk_stats *a = attr_stats_n(in, n, 0, NULL, &rc, budgets[b], 0);
			assert_int_equal(rc, 0);
			tk_stats *c = attr_stats_n(in, n, 0, NULL, &rc, budgets[b], 2);
			assert_int_equal(rc, 0);
			same_ops(a, c);
			tk_stats_free(c);
			tk__no_threads = 1;
			c = attr_stats_n(in, n, 0, NULL, &rc, budgets[b], 2);
			tk__no_threads = 0;
			assert_int_equal(rc, 0);
			same_ops(a, c);
			if (t && b == 1) /* what this test means to cover happened */
				assert_true(tk_stats_get_info(a)->late > 0);
			if (!t)
				assert_int_equal(tk_stats_get_info(a)->unattributed, 0);
			tk_stats_free(a);
			tk_stats_free(c);
		}
	/* a page of the id maps that cannot go out: the thread's error, named */
	int rc;
	tk_stats *c = attr_stats_n(v, n, 256 << 10, "/nonexistent/tk_nest", &rc, 4096, 2);
	assert_true(rc < 0);
	assert_non_null(strstr(tk_stats_error(c), "/nonexistent/tk_nest"));
	tk_stats_free(c);
	/* freed while the thread has records, without tk_stats_finish */
	tk_stats_opts o = {0};
	o.threads = 2;
	assert_int_equal(tk_stats_new(&c, &o), 0);
	for (size_t i = 0; i < n; i++)
		assert_int_equal(tk_stats_add(c, &v[i].ev), 0);
	tk_stats_free(c);
	free(w);
	free(v);
}

static void test_attribution_paged(void **st)
{
	(void)st;
	size_t n;
	int64_t want[3];
	tl_ev *v = attr_events(&n, want);
	int rc;
	tk_stats *a = attr_stats(v, n, 0, NULL, &rc);
	assert_int_equal(rc, 0);
	tk_stats *b = attr_stats(v, n, 256 << 10, NULL, &rc); /* 4 pages of each map in memory */
	assert_int_equal(rc, 0);
	assert_int_equal(tk_stats_get_info(a)->unattributed, 0);
	assert_int_equal(tk_stats_get_info(b)->unattributed, 0);
	same_ops(a, b);
	int found = 0;
	for (size_t i = 0; i < tk_stats_op_count(a); i++) {
		const tk_stats_op *x = tk_stats_op_get(a, i), *y = tk_stats_op_get(b, i);
		for (int k = 0; k < 3; k++)
			if (!strcmp(x->name, (const char *[]){"aten::mm", "aten::add", "aten::conv2d"}[k])) {
				assert_int_equal(x->dev_total, want[k]);
				assert_int_equal(y->self_dev, want[k]);
				found++;
			}
	}
	assert_int_equal(found, 3);
	tk_stats_free(a);
	tk_stats_free(b);
	/* a page that cannot go out is an error naming the directory */
	tk_stats *c = attr_stats(v, n, 256 << 10, "/nonexistent/tk_attr", &rc);
	assert_true(rc < 0);
	assert_non_null(strstr(tk_stats_error(c), "/nonexistent/tk_attr"));
	tk_stats_free(c);
	free(v);
}

/* The summaries' durations in pages that go to a file: the median and
 * deviation of values of three sets together, sorted in memory and
 * selected by counting, equal those of the test's own sort. */

static void test_durs_describe(void **st)
{
	(void)st;
	static const size_t sizes[] = {1, 2, 3, 4095, 4096, 4097, 100001, 100002};
	uint64_t x = 0x9e3779b97f4a7c15ull;
	for (size_t t = 0; t < sizeof sizes / sizeof *sizes; t++) {
		size_t n = sizes[t];
		int64_t *ref = malloc(n * sizeof *ref), total = 0;
		tk__pool pool[3];
		tk__durs d[3];
		memset(pool, 0, sizeof pool);
		memset(d, 0, sizeof d);
		for (int k = 0; k < 3; k++)
			pool[k].max_resident = 4;
		for (size_t i = 0; i < n; i++) {
			uint64_t r = tl_rand(&x);
			/* mostly small, many equal, now and then wide either way */
			int64_t v = r % 50 == 0 ? -(int64_t)(r >> 40) : r % 50 == 1 ? (int64_t)(r >> 20) + 5000000000
			          : r % 3 ? (int64_t)(r % 100000) : (int64_t)(r >> 36);
			ref[i] = v;
			total += v;
			assert_int_equal(tk__durs_add(&pool[i % 3], &d[i % 3], v), 0);
		}
		qsort(ref, n, sizeof *ref, cmp_i64_ref);
		double want = n % 2 ? (double)ref[n / 2] : ((double)ref[n / 2 - 1] + (double)ref[n / 2]) / 2.0;
		double mean = (double)total / (double)n, acc = 0;
		for (size_t i = 0; i < n; i++)
			acc += ((double)ref[i] - mean) * ((double)ref[i] - mean);
		double want_sd = n > 1 ? sqrt(acc / (double)(n - 1)) : 0;
		tk__durset sets[3] = {{&pool[0], &d[0]}, {&pool[1], &d[1]}, {&pool[2], &d[2]}};
		size_t keep = tk__durs_sort_max;
		double med[2], sd[2];
		for (int way = 0; way < 2; way++) {
			tk__durs_sort_max = way ? 0 : SIZE_MAX;
			assert_int_equal(tk__durs_describe(sets, n < 3 ? n : 3, total, &med[way], &sd[way]), 0);
			assert_true(med[way] == want);
		}
		tk__durs_sort_max = keep;
		assert_true(sd[0] == want_sd); /* sorted: the same sums in the same order */
		assert_true(fabs(sd[1] - want_sd) <= 1e-9 * (want_sd > 1 ? want_sd : 1));
		if (n == 1)
			assert_true(sd[0] == 0 && sd[1] == 0);
		if (n > 90000)
			assert_true(pool[0].out > 0); /* the pages went to the file and came back */
		for (int k = 0; k < 3; k++) {
			tk__durs_free(&d[k]);
			tk__pool_free(&pool[k]);
		}
		free(ref);
	}
}

/* The collectives' starts through the sorter and the pages: 3 ranks of
 * 30,000 NCCL kernels in 3 rows (kind, group), shuffled, with starts that
 * need all 64 bits (negative, past 2^32) and ties; rank 2 misses the last
 * 50 of one row. The rows' sums and the stragglers, at the default memory
 * and at 256K (the sorter spills, the pages go to the file), equal the
 * test's own matching of the k-th start of each rank. */
#define NCOLL 30000
static void test_collectives_paged(void **st)
{
	(void)st;
	static const char *const kinds[3] = {"allreduce", "allgather", "allreduce"};
	static const char *const groups[3] = {"0", "0", "1"};
	static const int64_t base[3] = {-5000000000000ll, 4300000000ll, 9000000000000000ll};
	enum { RANKS = 3, PER = NCOLL / 3 };
	static int64_t want_ts[RANKS][3][PER];
	static tl_ev v[NCOLL];
	size_t len[RANKS][3];
	int64_t want_bytes[RANKS][3], want_time[RANKS][3];
	uint64_t x = 0x243f6a8885a308d3ull;
	char dir[] = "/tmp/tk_coll_XXXXXX";
	assert_non_null(mkdtemp(dir));
	tk_stats *s[2][RANKS];
	for (int rank = 0; rank < RANKS; rank++) {
		size_t n = 0;
		for (int r = 0; r < 3; r++) {
			len[rank][r] = rank == 2 && r == 1 ? PER - 50 : PER;
			want_bytes[rank][r] = want_time[rank][r] = 0;
			for (size_t j = 0; j < len[rank][r]; j++) {
				/* 1 us apart, a rank's jitter below that (ties now and then) */
				int64_t ts = base[r] + (int64_t)j * 1000 + (int64_t)(tl_rand(&x) % 40) * 20;
				int64_t dur = 100 + (int64_t)(tl_rand(&x) % 900), elems = (int64_t)(tl_rand(&x) % 100000);
				want_ts[rank][r][j] = ts;
				want_bytes[rank][r] += elems * 4;
				want_time[rank][r] += dur;
				tl_ev *e = &v[n++];
				snprintf(e->args, sizeof e->args,
				         "{\"Collective name\":\"%s\",\"Process Group Name\":\"%s\",\"%s msg nelems\":%lld,"
				         "\"dtype\":\"Float\",\"Group size\":3}",
				         kinds[r], groups[r], r == 1 ? "Out" : "In", (long long)elems);
				snprintf(e->name, sizeof e->name, "ncclDevKernel_Generic");
				e->ev = tl_x(ts, dur, e->name, "kernel", rank, 7 + r);
				e->ev.args = (tk_sv){e->args, strlen(e->args)};
			}
		}
		tl_shuffle(v, n, &x);
		for (int k = 0; k < 2; k++) {
			tk_stats_opts o = {0};
			o.collective_table = 1;
			o.step_table = k; /* the sorter's sixteenth with another table */
			o.memory_bytes = k ? 256 << 10 : 0;
			o.tmpdir = dir;
			assert_int_equal(tk_stats_new(&s[k][rank], &o), 0);
			for (size_t i = 0; i < n; i++)
				assert_int_equal(tk_stats_add(s[k][rank], &v[i].ev), 0);
			assert_int_equal(tk_stats_finish(s[k][rank]), 0);
			if (k)
				assert_true(s[k][rank]->coll_pool.out > 0); /* pages went to the file */
			assert_int_equal(tk_stats_collective_count(s[k][rank]), 3);
			for (size_t i = 0; i < 3; i++) {
				const tk_stats_collective *c = tk_stats_collective_get(s[k][rank], i);
				int r = strcmp(c->kind, "allgather") == 0 ? 1 : strcmp(c->group, "1") == 0 ? 2 : 0;
				assert_string_equal(c->kind, kinds[r]);
				assert_string_equal(c->group, groups[r]);
				assert_int_equal(c->count, len[rank][r]);
				assert_int_equal(c->bytes, want_bytes[rank][r]);
				assert_int_equal(c->time, want_time[rank][r]);
				assert_int_equal(c->ranks, 3);
			}
		}
	}
	/* the test's own matching: per row, the j-th start of each rank by time */
	tk_stats_straggler want[RANKS], want_r[RANKS];
	uint64_t want_inst = 0, want_inst_r = 0;
	int64_t want_skew = 0, want_skew_r = 0;
	memset(want, 0, sizeof want);
	memset(want_r, 0, sizeof want_r);
	for (int r = 0; r < 3; r++) {
		for (int rank = 0; rank < RANKS; rank++)
			qsort(want_ts[rank][r], len[rank][r], sizeof(int64_t), cmp_i64_ref);
		for (size_t j = 0; j < PER; j++) {
			int64_t lo = INT64_MAX, hi = INT64_MIN;
			int last = 0;
			for (int rank = 0; rank < RANKS; rank++)
				if (j < len[rank][r]) {
					int64_t t = want_ts[rank][r][j];
					lo = t < lo ? t : lo;
					if (t > hi)
						hi = t, last = rank;
				}
			for (int pass = 0; pass < 1 + (r == 0 || r == 2); pass++) {
				/* pass 1: the allreduce rows alone (tk_stats_stragglers_of) */
				tk_stats_straggler *w = pass ? want_r : want;
				++*(pass ? &want_inst_r : &want_inst);
				int64_t *sk = pass ? &want_skew_r : &want_skew;
				*sk = hi - lo > *sk ? hi - lo : *sk;
				w[last].last++;
				for (int rank = 0; rank < RANKS; rank++)
					if (j < len[rank][r]) {
						int64_t late = want_ts[rank][r][j] - lo;
						w[rank].instances++;
						w[rank].late_total += late;
						w[rank].late_max = late > w[rank].late_max ? late : w[rank].late_max;
					}
			}
		}
	}
	assert_true(want_skew > 0 && want_skew < 1000);
	for (int k = 0; k < 2; k++) {
		tk_stats_straggler got[RANKS];
		uint64_t inst;
		int64_t skew;
		for (int pass = 0; pass < 2; pass++) {
			tk_stats_straggler *w = pass ? want_r : want;
			if (pass)
				assert_int_equal(tk_stats_stragglers_of(s[k], RANKS, "allreduce", NULL, got, &inst, &skew), 0);
			else
				assert_int_equal(tk_stats_stragglers(s[k], RANKS, got, &inst, &skew), 0);
			assert_int_equal(inst, pass ? want_inst_r : want_inst);
			assert_int_equal(skew, pass ? want_skew_r : want_skew);
			for (int rank = 0; rank < RANKS; rank++) {
				assert_int_equal(got[rank].instances, w[rank].instances);
				assert_int_equal(got[rank].last, w[rank].last);
				assert_int_equal(got[rank].late_total, w[rank].late_total);
				assert_int_equal(got[rank].late_max, w[rank].late_max);
			}
		}
	}
	for (int k = 0; k < 2; k++)
		for (int rank = 0; rank < RANKS; rank++)
			tk_stats_free(s[k][rank]);
	char cmd[64];
	snprintf(cmd, sizeof cmd, "rmdir %s", dir); /* no run or page file is left */
	assert_int_equal(system(cmd), 0);
}

/* Notes (tk_stats_note) read on a reader's threads: the tables are those
 * of tk_stats_add; a note is used (a forged one shows in the table), and
 * one written for other options is not. */
static void test_notes(void **st)
{
	(void)st;
	char path[1024];
	snprintf(path, sizeof path, "%s/%s", TK_TESTDATA, "tiny_gpu.json");
	tk_table_opts to = {0};
	to.row_limit = -1;
	to.format = TK_TABLE_JSON;
	char *want = NULL, *got = NULL;
	size_t wl, gl;
	for (int k = 0; k < 3; k++) {
		tk_stats_opts o = {0}, other = {0};
		o.flops = TK_FLOPS_TORCH;
		other.flops = TK_FLOPS_EXTENDED;
		tk_reader_opts ro = {0};
		ro.note_fn = k ? tk_stats_note : NULL;
		ro.note_ctx = k == 2 ? &other : &o;
		ro.note_size = tk_stats_note_size();
		tk_reader *r = NULL;
		tk_stats *s = NULL;
		assert_int_equal(tk_reader_open_path(&r, path, &ro), 0);
		assert_int_equal(tk_stats_new(&s, &o), 0);
		const tk_event *ev;
		while (tk_reader_next(r, &ev) == TK_OK) {
			const void *n = tk_reader_event_note(r);
			assert_true(!k == !n);
			assert_int_equal(tk_stats_add_noted(s, ev, n), 0);
		}
		assert_int_equal(tk_stats_finish(s), 0);
		char **out = k ? &got : &want;
		size_t *len = k ? &gl : &wl;
		assert_int_equal(tk_stats_format_ops(&s, 1, &to, out, len), 0);
		if (k)
			assert_string_equal(got, want);
		if (k)
			free(got);
		tk_reader_free(r);
		tk_stats_free(s);
	}
	/* a forged note for these options is taken: the kernels' ids name no
	 * launch, so their time goes unattributed */
	tk_stats_opts o = {0};
	o.flops = TK_FLOPS_TORCH;
	tk_reader *r = NULL;
	tk_stats *a = NULL, *b = NULL;
	assert_int_equal(tk_reader_open_path(&r, path, NULL), 0);
	assert_int_equal(tk_stats_new(&a, &o), 0);
	assert_int_equal(tk_stats_new(&b, &o), 0);
	const tk_event *ev;
	tk__snote n;
	int forged = 0;
	while (tk_reader_next(r, &ev) == TK_OK) {
		tk_stats_note(&o, ev, &n);
		if (n.need && tk_stats_event_class(ev->cat, 1) == TK_STATS_KERNEL) {
			n.m.ext_id = n.m.corr_id = 987654321;
			forged++;
		}
		assert_int_equal(tk_stats_add(a, ev), 0);
		assert_int_equal(tk_stats_add_noted(b, ev, &n), 0);
	}
	assert_int_equal(tk_stats_finish(a), 0);
	assert_int_equal(tk_stats_finish(b), 0);
	assert_true(forged > 0);
	/* the memcpy has no launch in either */
	assert_int_equal(tk_stats_get_info(a)->unattributed, 1);
	assert_int_equal(tk_stats_get_info(b)->unattributed, 1 + forged);
	tk_reader_free(r);
	tk_stats_free(a);
	tk_stats_free(b);
	free(want);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_flops_torch_set),
		cmocka_unit_test(test_flops_conv2d),
		cmocka_unit_test(test_flops_extended),
		cmocka_unit_test(test_flops_transposed_convolution),
		cmocka_unit_test(test_tiny_gpu),
		cmocka_unit_test(test_small_budget),
		cmocka_unit_test(test_median),
		cmocka_unit_test(test_format_json),
		cmocka_unit_test(test_args_one_pass),
		cmocka_unit_test(test_flame),
		cmocka_unit_test(test_format_html),
		cmocka_unit_test(test_memory_peak_op),
		cmocka_unit_test(test_radix_sort),
		cmocka_unit_test(test_timeline_bounded),
		cmocka_unit_test(test_steps_parts),
		cmocka_unit_test(test_steps_runs),
		cmocka_unit_test(test_steps_ranks),
		cmocka_unit_test(test_idmap_paged),
		cmocka_unit_test(test_attribution_paged),
		cmocka_unit_test(test_nest_thread),
		cmocka_unit_test(test_durs_describe),
		cmocka_unit_test(test_collectives_paged),
		cmocka_unit_test(test_memory_bounded),
		cmocka_unit_test(test_timeline_extremes),
		cmocka_unit_test(test_notes),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
