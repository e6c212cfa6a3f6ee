/* gen_trace.c: seeded generator of large, realistic Kineto (PyTorch profiler) Chrome-trace JSON files. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define OUT_CAP (8u << 20)
#define SIGV 16
#define MAX_DEPTH 128
#define NUM_SMS 132
#define MEM_RING 48
#define BUCKET_BYTES (25ull << 20)

/* ------------------------------------------------------------------ */
/* Small utilities                                                      */

static void die(const char *msg)
{
	fprintf(stderr, "gen_trace: %s\n", msg);
	exit(1);
}

static void *xrealloc(void *p, size_t n)
{
	void *q = realloc(p, n ? n : 1);
	if (!q)
		die("out of memory");
	return q;
}

static char *xstrdup(const char *s)
{
	size_t n = strlen(s) + 1;
	return memcpy(xrealloc(NULL, n), s, n);
}

/* Grows an array of `size`-byte items so that it holds at least `need`. */
static void *grow(void *p, size_t *cap, size_t need, size_t size)
{
	if (need <= *cap)
		return p;
	size_t c = *cap ? *cap : 256;
	while (c < need)
		c *= 2;
	*cap = c;
	return xrealloc(p, c * size);
}

static uint64_t max_u64(uint64_t a, uint64_t b)
{
	return a > b ? a : b;
}

static uint64_t ceil_div(uint64_t a, uint64_t b)
{
	return (a + b - 1) / b;
}

/* ------------------------------------------------------------------ */
/* PRNG: splitmix64                                                     */

static inline uint64_t mix64(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static inline uint64_t rnd(uint64_t *s)
{
	*s += 0x9e3779b97f4a7c15ULL;
	return mix64(*s);
}

static inline uint64_t rnd_below(uint64_t *s, uint64_t n)
{
	if (n <= 0xffffffffu)
		return ((rnd(s) >> 32) * n) >> 32;
	return rnd(s) % n;
}

static inline uint64_t rnd_range(uint64_t *s, uint64_t lo, uint64_t hi)
{
	return lo + rnd_below(s, hi - lo + 1);
}

/* x varied by up to +-pct percent. */
static inline uint64_t jitter(uint64_t *s, uint64_t x, unsigned pct)
{
	uint64_t span = x * pct / 100;
	return x - span + rnd_below(s, 2 * span + 1);
}

/* ------------------------------------------------------------------ */
/* Output buffer with hand-written number formatting                    */

typedef struct out {
	int fd; /* -1: count bytes only */
	char *buf;
	size_t len, cap;
	uint64_t total;
	int err;
} out_t;

static char dig2[200];

static void init_dig2(void)
{
	for (int i = 0; i < 100; i++) {
		dig2[2 * i] = (char)('0' + i / 10);
		dig2[2 * i + 1] = (char)('0' + i % 10);
	}
}

static void write_all(out_t *o, const char *p, size_t n)
{
	while (n > 0 && o->fd >= 0 && !o->err) {
		ssize_t w = write(o->fd, p, n);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			o->err = errno;
			break;
		}
		p += w;
		n -= (size_t)w;
	}
}

static void out_flush(out_t *o)
{
	write_all(o, o->buf, o->len);
	o->total += o->len;
	o->len = 0;
}

static inline void out_mem(out_t *o, const void *p, size_t n)
{
	if (o->cap - o->len < n) {
		out_flush(o);
		if (n > o->cap) {
			write_all(o, p, n);
			o->total += n;
			return;
		}
	}
	memcpy(o->buf + o->len, p, n);
	o->len += n;
}

#define OUT(o, lit) out_mem((o), (lit), sizeof(lit) - 1)

static inline void out_cstr(out_t *o, const char *s)
{
	out_mem(o, s, strlen(s));
}

static inline void out_u64(out_t *o, uint64_t v)
{
	char tmp[24];
	char *e = tmp + sizeof tmp, *p = e;
	while (v >= 100) {
		unsigned r = (unsigned)(v % 100);
		v /= 100;
		p -= 2;
		memcpy(p, dig2 + 2 * r, 2);
	}
	if (v >= 10) {
		p -= 2;
		memcpy(p, dig2 + 2 * v, 2);
	} else {
		*--p = (char)('0' + v);
	}
	out_mem(o, p, (size_t)(e - p));
}

static inline void out_i64(out_t *o, int64_t v)
{
	if (v < 0) {
		OUT(o, "-");
		out_u64(o, (uint64_t)0 - (uint64_t)v);
	} else {
		out_u64(o, (uint64_t)v);
	}
}

/* Nanoseconds as microseconds with exactly three decimals. */
static inline void out_us3(out_t *o, uint64_t ns)
{
	out_u64(o, ns / 1000);
	unsigned f = (unsigned)(ns % 1000);
	char t[4] = {'.', (char)('0' + f / 100), (char)('0' + f / 10 % 10), (char)('0' + f % 10)};
	out_mem(o, t, 4);
}

/* A value given in millionths, written with six decimals. */
static inline void out_fix6(out_t *o, uint64_t micro)
{
	out_u64(o, micro / 1000000);
	char t[7];
	uint32_t f = (uint32_t)(micro % 1000000);
	t[0] = '.';
	for (int i = 6; i >= 1; i--) {
		t[i] = (char)('0' + f % 10);
		f /= 10;
	}
	out_mem(o, t, 7);
}

/* Shortest round-trip text of a double, as Python and fmt print it (rare events only). */
static void out_double(out_t *o, double v)
{
	char b[48];
	for (int p = 15; p <= 17; p++) {
		snprintf(b, sizeof b, "%.*g", p, v);
		if (strtod(b, NULL) == v)
			break;
	}
	if (!strpbrk(b, ".eE"))
		strcat(b, ".0");
	out_cstr(o, b);
}

/* ------------------------------------------------------------------ */
/* Growable string builder                                              */

typedef struct sb {
	char *p;
	size_t n, cap;
} sb_t;

static void sb_add(sb_t *b, const char *s, size_t n)
{
	b->p = grow(b->p, &b->cap, b->n + n + 1, 1);
	memcpy(b->p + b->n, s, n);
	b->n += n;
	b->p[b->n] = 0;
}

static void sb_str(sb_t *b, const char *s)
{
	sb_add(b, s, strlen(s));
}

static void sb_fmt(sb_t *b, const char *fmt, ...)
{
	char tmp[512];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof tmp)
		die("internal: formatted text too long");
	sb_add(b, tmp, (size_t)n);
}

/* ------------------------------------------------------------------ */
/* Kernel name vocabulary                                               */

typedef struct str {
	const char *p;
	uint32_t n;
} str_t;

enum fam {
	F_GEMM, F_NVJET, F_BMM, F_E_ADD, F_E_MUL, F_E_MULS, F_E_FILL, F_E_RELU, F_E_THRESH,
	F_E_GELU, F_E_GELUB, F_E_DIV, F_E_COPY, F_E_COPYF, F_COPY_STRIDED, F_LN_FWD, F_LN_BWD,
	F_GAMMA_BETA, F_SM_FWD, F_SM_BWD, F_LSM_FWD, F_LSM_BWD, F_REDUCE, F_CAT, F_CONV_FPROP,
	F_CONV_WGRAD, F_NCHW2NHWC, F_NHWC2NCHW, F_NCCL_AR, F_MTA, F_TRITON_POI, F_TRITON_PER,
	F_TRITON_RED, F_NLL_FWD, F_NLL_BWD, F_COUNT
};

typedef struct vocab {
	str_t *k;
	size_t n, cap;
	uint32_t start[F_COUNT], count[F_COUNT];
	int cur;
} vocab_t;

static void vo_begin(vocab_t *v, int fam)
{
	v->cur = fam;
	v->start[fam] = (uint32_t)v->n;
}

static void vo_add(vocab_t *v, const char *fmt, ...)
{
	char tmp[1024];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof tmp)
		die("internal: kernel name too long");
	v->k = grow(v->k, &v->cap, v->n + 1, sizeof *v->k);
	v->k[v->n].p = xstrdup(tmp);
	v->k[v->n].n = (uint32_t)n;
	v->n++;
	v->count[v->cur] = (uint32_t)(v->n - v->start[v->cur]);
}

static void vo_gemm(vocab_t *v)
{
	static const char *lay[] = {"tn", "nt", "nn"};
	static const char *tile[] = {"128x128x64", "128x256x64", "256x128x64", "64x256x64"};
	static const char *wg[] = {"1x1x1", "2x1x1"};
	vo_begin(v, F_GEMM);
	for (int a = 0; a < 3; a++)
		for (int b = 0; b < 4; b++)
			for (int c = 0; c < 2; c++)
				for (int d = 0; d < 2; d++)
					vo_add(v, "sm90_xmma_gemm_bf16bf16_bf16f32_f32_%s_n_tilesize%s_warpgroupsize%s_execute_segment_k_%s_kernel__5x_cublas",
					       lay[a], tile[b], wg[c], d ? "on" : "off");
}

static void vo_nvjet(vocab_t *v)
{
	static const char *tile[] = {"64x64", "128x128", "192x8", "144x128", "256x128", "128x64"};
	static const char *clu[] = {"1x1", "2x1", "1x2"};
	static const char *lay[] = {"TNT", "TNN", "NNT", "NTN"};
	vo_begin(v, F_NVJET);
	for (int a = 0; a < 6; a++)
		for (int s = 4; s <= 8; s += 2)
			for (int b = 0; b < 2; b++)
				for (int c = 0; c < 4; c++)
					vo_add(v, "nvjet_tst_%s_64x%d_%s_%sv_bz_%s%s", tile[a], s, clu[(a + s) % 3],
					       (a + c) % 2 ? "2cta_" : "", b ? "bias_" : "", lay[c]);
}

static void vo_bmm(vocab_t *v)
{
	static const char *tile[] = {"64x64", "128x64", "128x128", "256x128"};
	static const char *st[] = {"32x5", "64x3", "64x4"};
	static const char *lay[] = {"tn", "nn", "nt"};
	vo_begin(v, F_BMM);
	for (int a = 0; a < 4; a++)
		for (int b = 0; b < 3; b++)
			for (int c = 0; c < 3; c++)
				vo_add(v, "ampere_bf16_s16816gemm_bf16_%s_ldg8_f2f_stages_%s_%s", tile[a], st[b], lay[c]);
}

/* One family per elementwise functor, one name per vector width. */
static void vo_elem(vocab_t *v, int fam, const char *functor, int arity)
{
	vo_begin(v, fam);
	for (int vec = 2; vec <= 8; vec *= 2)
		vo_add(v, "void at::native::vectorized_elementwise_kernel<%d, %s, std::array<char*, %dul> >(int, %s, std::array<char*, %dul>)",
		       vec, functor, arity, functor, arity);
}

#define BF "c10::BFloat16"

static void vo_elems(vocab_t *v)
{
	vo_elem(v, F_E_ADD, "at::native::CUDAFunctor_add<" BF ">", 3);
	vo_elem(v, F_E_MUL, "at::native::BinaryFunctor<" BF ", " BF ", " BF ", at::native::binary_internal::MulFunctor<float> >", 3);
	vo_elem(v, F_E_MULS, "at::native::AUnaryFunctor<" BF ", " BF ", " BF ", at::native::binary_internal::MulFunctor<float> >", 2);
	vo_elem(v, F_E_FILL, "at::native::FillFunctor<" BF ">", 1);
	vo_elem(v, F_E_RELU, "at::native::(anonymous namespace)::launch_clamp_scalar(at::TensorIteratorBase&, c10::Scalar, c10::Scalar, at::native::detail::ClampLimits)::{lambda()#1}::operator()() const::{lambda()#14}::operator()() const::{lambda(" BF ")#1}", 2);
	vo_elem(v, F_E_THRESH, "at::native::(anonymous namespace)::threshold_kernel_impl<" BF ">(at::TensorIteratorBase&, " BF ", " BF ")::{lambda(" BF ", " BF ")#1}", 3);
	vo_elem(v, F_E_GELU, "at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#4}::operator()() const::{lambda(" BF ")#1}", 2);
	vo_elem(v, F_E_GELUB, "at::native::GeluBackwardCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#4}::operator()() const::{lambda(" BF ", " BF ")#1}", 3);
	vo_elem(v, F_E_DIV, "at::native::BUnaryFunctor<" BF ", " BF ", " BF ", at::native::binary_internal::DivFunctor<float> >", 2);
	vo_elem(v, F_E_COPY, "at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#12}::operator()() const::{lambda(" BF ")#1}", 2);
	vo_elem(v, F_E_COPYF, "at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#7}::operator()() const::{lambda(float)#1}", 2);
}

static void vo_copy_strided(vocab_t *v)
{
	static const char *lam[] = {"{lambda()#12}", "{lambda()#7}", "{lambda()#4}"};
	vo_begin(v, F_COPY_STRIDED);
	for (int a = 0; a < 3; a++)
		for (int b = 2; b <= 4; b += 2)
			vo_add(v, "void at::native::elementwise_kernel<128, %d, at::native::gpu_kernel_impl_nocast<at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::%s::operator()() const::{lambda(" BF ")#1}>(at::TensorIteratorBase&, at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::%s::operator()() const::{lambda(" BF ")#1} const&)::{lambda(int)#1}>(int, at::native::gpu_kernel_impl_nocast<at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::%s::operator()() const::{lambda(" BF ")#1}>(at::TensorIteratorBase&, at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::%s::operator()() const::{lambda(" BF ")#1} const&)::{lambda(int)#1})",
			       b, lam[a], lam[a], lam[a], lam[a]);
}

static void vo_norms(vocab_t *v)
{
	vo_begin(v, F_LN_FWD);
	for (int a = 0; a < 2; a++)
		vo_add(v, "void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<" BF ", float, %s>(int, float, " BF " const*, " BF " const*, " BF " const*, float*, float*, " BF "*)", a ? "true" : "false");
	vo_begin(v, F_LN_BWD);
	for (int a = 0; a < 2; a++)
		vo_add(v, "void at::native::(anonymous namespace)::layer_norm_grad_input_kernel_vectorized<" BF ", float%s>(" BF " const*, " BF " const*, float const*, float const*, " BF " const*, " BF "*, int)", a ? ", true" : "");
	vo_begin(v, F_GAMMA_BETA);
	for (int a = 32; a <= 64; a *= 2)
		for (int b = 1; b <= 8; b *= 8)
			for (int c = 0; c < 2; c++)
				vo_add(v, "void at::native::(anonymous namespace)::GammaBetaBackwardCUDAKernelTemplate<" BF ", float, %d, %d, %d, true, %s>(long, long, " BF " const*, " BF " const*, float const*, float const*, " BF "*, " BF "*)", a, b, a, c ? "true" : "false");
}

static void vo_softmax(vocab_t *v)
{
	static const char *kind[] = {"", "Smem"};
	vo_begin(v, F_SM_FWD);
	for (int a = 0; a < 2; a++)
		for (int w = 4; w <= 8; w *= 2)
			vo_add(v, "void (anonymous namespace)::cunn_SoftMaxForward%s<%d, " BF ", float, " BF ", (anonymous namespace)::SoftMaxForwardEpilogue>(" BF "*, " BF " const*, int)", kind[a], w);
	vo_begin(v, F_SM_BWD);
	for (int a = 0; a < 2; a++)
		for (int w = 4; w <= 8; w *= 2)
			vo_add(v, "void (anonymous namespace)::cunn_SoftMaxBackward%s<%d, " BF ", float, " BF ", (anonymous namespace)::SoftMaxBackwardEpilogue>(" BF "*, " BF " const*, " BF " const*, long)", kind[a], w);
	vo_begin(v, F_LSM_FWD);
	for (int w = 2; w <= 8; w *= 2)
		vo_add(v, "void (anonymous namespace)::cunn_SoftMaxForward<%d, " BF ", float, float, (anonymous namespace)::LogSoftMaxForwardEpilogue>(float*, " BF " const*, int)", w);
	vo_begin(v, F_LSM_BWD);
	for (int w = 2; w <= 8; w *= 2)
		vo_add(v, "void (anonymous namespace)::cunn_SoftMaxBackward<%d, " BF ", float, float, (anonymous namespace)::LogSoftMaxBackwardEpilogue>(" BF "*, float const*, float const*, long)", w);
}

static void vo_reduce(vocab_t *v)
{
	static const char *op = "at::native::ReduceOp<" BF ", at::native::func_wrapper_t<" BF ", at::native::sum_functor<" BF ", float, " BF ">::operator()(at::TensorIterator&)::{lambda(float, float)#1}>, unsigned int, " BF ", %d, %d>";
	vo_begin(v, F_REDUCE);
	for (int t = 128; t <= 512; t *= 2)
		for (int vt = 1; vt <= 4; vt *= 2) {
			char o1[512];
			snprintf(o1, sizeof o1, op, vt, vt);
			vo_add(v, "void at::native::reduce_kernel<%d, %d, %s>(%s)", t, vt, o1, o1);
		}
	vo_begin(v, F_CAT);
	for (int a = 3; a <= 4; a++)
		vo_add(v, "void at::native::(anonymous namespace)::CatArrayBatchedCopy_contig<at::native::(anonymous namespace)::OpaqueType<2u>, unsigned int, %d, 128, 1>(at::native::(anonymous namespace)::OpaqueType<2u>*, at::native::(anonymous namespace)::CatArrInputTensorMetadata<at::native::(anonymous namespace)::OpaqueType<2u>, unsigned int, 128, 1>, at::native::(anonymous namespace)::TensorSizeStride<unsigned int, 4u>, int, unsigned int)", a);
}

static void vo_conv(vocab_t *v)
{
	static const char *tile[] = {"128x128x64", "128x64x64", "64x128x64", "256x64x32"};
	vo_begin(v, F_CONV_FPROP);
	for (int a = 0; a < 4; a++)
		for (int s = 0; s < 2; s++)
			vo_add(v, "sm90_xmma_fprop_implicit_gemm_bf16bf16_bf16f32_f32_nhwckrsc_nhwc_tilesize%s_warpgroupsize1x1x1_g1_execute_segment_k_%s_kernel__5x_cudnn", tile[a], s ? "on" : "off");
	vo_begin(v, F_CONV_WGRAD);
	for (int a = 0; a < 4; a++)
		for (int s = 0; s < 2; s++)
			vo_add(v, "sm90_xmma_wgrad_implicit_gemm_bf16bf16_bf16f32_f32_nhwckrsc_nhwc_tilesize%s_warpgroupsize1x1x1_g1_execute_segment_k_%s_kernel__5x_cudnn", tile[a], s ? "on" : "off");
	vo_begin(v, F_NCHW2NHWC);
	for (int a = 0; a < 2; a++)
		vo_add(v, "void cudnn::engines_precompiled::nchwToNhwcKernel<__nv_bfloat16, __nv_bfloat16, float, %s, true, (cudnnKernelDataType_t)2>(cudnn::engines_precompiled::nchw2nhwc_params_t<float>, __nv_bfloat16 const*, __nv_bfloat16*)", a ? "true" : "false");
	vo_begin(v, F_NHWC2NCHW);
	for (int a = 0; a < 2; a++)
		vo_add(v, "void cudnn::engines_precompiled::nhwcToNchwKernel<__nv_bfloat16, __nv_bfloat16, float, %s, true, (cudnnKernelDataType_t)0>(cudnn::engines_precompiled::nhwc2nchw_params_t<float>, __nv_bfloat16 const*, __nv_bfloat16*)", a ? "true" : "false");
}

static void vo_comm_opt(vocab_t *v)
{
	static const char *proto[] = {"LL", "LL128", "SIMPLE"};
	static const char *fn[] = {"BinaryOpListAlphaFunctor", "PointwiseOpScalarFunctor", "UnaryOpFunctor", "TernaryOpScalarFunctor", "BinaryOpScalarFunctor"};
	vo_begin(v, F_NCCL_AR);
	for (int a = 0; a < 3; a++)
		vo_add(v, "ncclDevKernel_AllReduce_Sum_bf16_RING_%s(ncclDevKernelArgsStorage<4096ul>)", proto[a]);
	vo_begin(v, F_MTA);
	for (int a = 0; a < 5; a++)
		for (int d = 1; d <= 3; d++)
			vo_add(v, "void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous namespace)::TensorListMetadata<%d>, at::native::(anonymous namespace)::%s<" BF ", %d, %d, 0>, std::multiplies<float>, float>(at::native::(anonymous namespace)::TensorListMetadata<%d>, at::native::(anonymous namespace)::%s<" BF ", %d, %d, 0>, std::multiplies<float>, float)",
			       d, fn[a], d, d > 1 ? d - 1 : 1, d, fn[a], d, d > 1 ? d - 1 : 1);
}

static void vo_misc(vocab_t *v)
{
	vo_begin(v, F_TRITON_POI);
	for (int i = 0; i < 64; i++)
		vo_add(v, "triton_poi_fused_add_native_dropout_%d", i);
	vo_begin(v, F_TRITON_PER);
	for (int i = 0; i < 64; i++)
		vo_add(v, "triton_per_fused_add_native_dropout_native_layer_norm_%d", i);
	vo_begin(v, F_TRITON_RED);
	for (int i = 0; i < 64; i++)
		vo_add(v, "triton_red_fused_add_native_dropout_backward_native_layer_norm_backward_%d", i);
	vo_begin(v, F_NLL_FWD);
	vo_add(v, "void at::native::(anonymous namespace)::nll_loss_forward_reduce_cuda_kernel_2d<float, float, long>(float*, float*, float const*, long const*, float const*, bool, long, long, long, long)");
	vo_begin(v, F_NLL_BWD);
	vo_add(v, "void at::native::(anonymous namespace)::nll_loss_backward_reduce_cuda_kernel_2d<float, long>(float*, float const*, long const*, float const*, float const*, bool, int, int, long, long)");
}

static void vocab_init(vocab_t *v)
{
	memset(v, 0, sizeof *v);
	vo_gemm(v);
	vo_nvjet(v);
	vo_bmm(v);
	vo_elems(v);
	vo_copy_strided(v);
	vo_norms(v);
	vo_softmax(v);
	vo_reduce(v);
	vo_conv(v);
	vo_comm_opt(v);
	vo_misc(v);
}

static const str_t *kname(const vocab_t *v, int fam, uint64_t key)
{
	return &v->k[v->start[fam] + mix64(key) % v->count[fam]];
}

/* ------------------------------------------------------------------ */
/* Trace configuration                                                  */

typedef struct cfg {
	uint64_t seed;
	int rank, world, dev, ngpu;
	int B, I, P, G, N, H, NH, HD, FF, L, C;
	int relu, pid, tid_ag, nccl_stream, step0;
	uint64_t base_ns, t_start;
	char *ranks_str;
	char **region;     /* "Torch-Compiled Region: 0/<layer>" per layer */
	int nparam;
	int (*pdim)[4];
	int *pnd;
	uint64_t param_elems;
} cfg_t;

static void cfg_param(cfg_t *c, int nd, int a, int b, int d, int e)
{
	int i = c->nparam++;
	c->pdim = xrealloc(c->pdim, sizeof *c->pdim * (size_t)c->nparam);
	c->pnd = xrealloc(c->pnd, sizeof *c->pnd * (size_t)c->nparam);
	int v[4] = {a, b, d, e};
	memcpy(c->pdim[i], v, sizeof v);
	c->pnd[i] = nd;
	uint64_t n = 1;
	for (int k = 0; k < nd; k++)
		n *= (uint64_t)v[k];
	c->param_elems += n;
}

/* Parameter order: stem conv w/b, pos embedding, 12 per block, final norm w/b, head w/b. */
static void cfg_params(cfg_t *c)
{
	cfg_param(c, 4, c->H, 3, c->P, c->P);
	cfg_param(c, 1, c->H, 0, 0, 0);
	cfg_param(c, 3, 1, c->N, c->H, 0);
	for (int l = 0; l < c->L; l++) {
		cfg_param(c, 1, c->H, 0, 0, 0);
		cfg_param(c, 1, c->H, 0, 0, 0);
		cfg_param(c, 2, 3 * c->H, c->H, 0, 0);
		cfg_param(c, 1, 3 * c->H, 0, 0, 0);
		cfg_param(c, 2, c->H, c->H, 0, 0);
		cfg_param(c, 1, c->H, 0, 0, 0);
		cfg_param(c, 1, c->H, 0, 0, 0);
		cfg_param(c, 1, c->H, 0, 0, 0);
		cfg_param(c, 2, c->FF, c->H, 0, 0);
		cfg_param(c, 1, c->FF, 0, 0, 0);
		cfg_param(c, 2, c->H, c->FF, 0, 0);
		cfg_param(c, 1, c->H, 0, 0, 0);
	}
	cfg_param(c, 1, c->H, 0, 0, 0);
	cfg_param(c, 1, c->H, 0, 0, 0);
	cfg_param(c, 2, c->C, c->H, 0, 0);
	cfg_param(c, 1, c->C, 0, 0, 0);
}

#define P_BLOCK(l) (3 + 12 * (l))

static void cfg_strings(cfg_t *c)
{
	sb_t b = {0};
	sb_str(&b, "[");
	for (int i = 0; i < c->world; i++)
		sb_fmt(&b, i ? ", %d" : "%d", i);
	sb_str(&b, "]");
	c->ranks_str = b.p;
	c->region = xrealloc(NULL, sizeof *c->region * (size_t)c->L);
	for (int l = 0; l < c->L; l++) {
		char t[64];
		snprintf(t, sizeof t, "Torch-Compiled Region: 0/%d", l);
		c->region[l] = xstrdup(t);
	}
}

/* Trace-wide choices come from the seed alone, so every rank shares them. */
static void cfg_init(cfg_t *c, uint64_t seed, int rank, int world, int layers)
{
	static const int bs[] = {16, 32, 64}, hs[] = {768, 1024, 1280}, ls[] = {12, 16, 24};
	memset(c, 0, sizeof *c);
	uint64_t s = mix64(seed ^ 0x5eed5eedULL);
	c->seed = seed;
	c->rank = rank;
	c->world = world;
	c->dev = rank % 8;
	c->ngpu = 8;
	c->B = bs[rnd_below(&s, 3)];
	c->I = 224;
	c->P = 16;
	c->G = c->I / c->P;
	c->N = c->G * c->G;
	c->H = hs[rnd_below(&s, 3)];
	c->HD = 64;
	c->NH = c->H / c->HD;
	c->FF = 4 * c->H;
	c->L = ls[rnd_below(&s, 3)];
	if (layers > 0)
		c->L = layers;
	c->C = 1000;
	c->relu = (int)rnd_below(&s, 2);
	c->nccl_stream = 20 + 4 * (int)rnd_below(&s, 4);
	c->step0 = 5 + (int)rnd_below(&s, 40);
	c->base_ns = 7889238ULL * (218 + rnd_below(&s, 8)) * 1000000000ULL;
	c->t_start = 1000000000000000ULL + rnd_below(&s, 6000000000000000ULL);
	uint64_t r = mix64(seed * 0x9e3779b97f4a7c15ULL + (uint64_t)rank + 1);
	c->pid = 1000 + (int)(r % 3000000);
	c->tid_ag = c->pid + 40 + (int)((r >> 32) % 9000);
	c->t_start += rnd_below(&r, 40000);
	cfg_params(c);
	cfg_strings(c);
}

static void cfg_free(cfg_t *c)
{
	for (int l = 0; l < c->L; l++)
		free(c->region[l]);
	free(c->region);
	free(c->ranks_str);
	free(c->pdim);
	free(c->pnd);
}

/* ------------------------------------------------------------------ */
/* Argument signatures: the shape members of a cpu_op's args, rendered  */
/* once per distinct shape and cached.                                  */

typedef struct sig {
	char *pre;  /* members written before "Ev Idx" */
	char *post; /* members written after it */
	uint32_t npre, npost;
} sig_t;

typedef struct sigkey {
	const char *fmt;
	int v[SIGV];
	int32_t id;
} sigkey_t;

typedef struct sigtab {
	sig_t *s;
	size_t n, cap;
	sigkey_t *h;
	size_t hcap, hn;
} sigtab_t;

typedef struct sigparts {
	sb_t conc, type, strd, dims;
	int count;
} sigparts_t;

static void sp_sep(sigparts_t *sp)
{
	if (sp->count++ == 0)
		return;
	sb_str(&sp->conc, ", ");
	sb_str(&sp->type, ", ");
	sb_str(&sp->strd, ", ");
	sb_str(&sp->dims, ", ");
}

static void sp_list(sb_t *b, const int64_t *v, int n)
{
	sb_str(b, "[");
	for (int i = 0; i < n; i++)
		sb_fmt(b, i ? ", %lld" : "%lld", (long long)v[i]);
	sb_str(b, "]");
}

/* Dims and strides of one tensor; `tr` swaps the strides of a 2-D tensor. */
static void sp_tensor_lists(sb_t *strd, sb_t *dims, const int64_t *d, int n, int tr)
{
	int64_t st[8];
	int64_t acc = 1;
	for (int i = n - 1; i >= 0; i--) {
		st[i] = acc;
		acc *= d[i];
	}
	if (tr && n == 2) {
		st[0] = 1;
		st[1] = d[0];
	}
	sp_list(strd, st, n);
	sp_list(dims, d, n);
}

static const char *sp_dtype(char c)
{
	switch (c) {
	case 'f': return "float";
	case 'l': return "long int";
	case 'b': return "bool";
	default: return BF;
	}
}

/* A tensor token such as t[8,197,768]. */
static void sp_tensor(sigparts_t *sp, const char *tok)
{
	int64_t d[8];
	int n = 0;
	const char *p = strchr(tok, '[') + 1;
	while (*p && *p != ']' && n < 8) {
		d[n++] = strtoll(p, (char **)&p, 10);
		if (*p == ',')
			p++;
	}
	sb_str(&sp->conc, "\"\"");
	sb_fmt(&sp->type, "\"%s\"", sp_dtype(tok[0]));
	sp_tensor_lists(&sp->strd, &sp->dims, d, n, tok[0] == 'T');
}

/* The parameter list of the model as one TensorList input. */
static void sp_params(sigparts_t *sp, const cfg_t *c)
{
	sb_str(&sp->conc, "\"\"");
	sb_str(&sp->type, "\"TensorList\"");
	sb_str(&sp->strd, "[");
	sb_str(&sp->dims, "[");
	for (int i = 0; i < c->nparam; i++) {
		int64_t d[4];
		for (int k = 0; k < 4; k++)
			d[k] = c->pdim[i][k];
		if (i) {
			sb_str(&sp->strd, ", ");
			sb_str(&sp->dims, ", ");
		}
		sp_tensor_lists(&sp->strd, &sp->dims, d, c->pnd[i], 0);
	}
	sb_str(&sp->strd, "]");
	sb_str(&sp->dims, "]");
}

static void sp_token(sigparts_t *sp, const char *tok, const cfg_t *c)
{
	sp_sep(sp);
	if (tok[0] == 'n') {
		sb_str(&sp->conc, "\"\"");
		sb_str(&sp->type, "\"\"");
		sb_str(&sp->strd, "[]");
		sb_str(&sp->dims, "[]");
	} else if (tok[1] == '=') {
		sb_fmt(&sp->conc, "\"%s\"", tok + 2);
		sb_str(&sp->type, tok[0] == 'L' ? "\"ScalarList\"" : "\"Scalar\"");
		sb_str(&sp->strd, "[]");
		sb_str(&sp->dims, "[]");
	} else if (tok[0] == 'P') {
		sp_params(sp, c);
	} else {
		sp_tensor(sp, tok);
	}
}

static sig_t sig_render(const char *spec, const cfg_t *c)
{
	sigparts_t sp;
	memset(&sp, 0, sizeof sp);
	char *copy = xstrdup(spec);
	for (char *tok = strtok(copy, ";"); tok; tok = strtok(NULL, ";"))
		sp_token(&sp, tok, c);
	free(copy);
	sb_t b = {0};
	sb_fmt(&b, "%s", "\"Concrete Inputs\": [");
	sb_add(&b, sp.conc.p, sp.conc.n);
	sb_str(&b, "], \"Input type\": [");
	sb_add(&b, sp.type.p, sp.type.n);
	sb_str(&b, "], \"Input Strides\": [");
	sb_add(&b, sp.strd.p, sp.strd.n);
	sb_str(&b, "], \"Input Dims\": [");
	sb_add(&b, sp.dims.p, sp.dims.n);
	sb_str(&b, "], ");
	free(sp.conc.p);
	free(sp.type.p);
	free(sp.strd.p);
	free(sp.dims.p);
	sig_t s = {b.p, xstrdup(""), (uint32_t)b.n, 0};
	return s;
}

static uint64_t sig_hash(const char *fmt, const int *v)
{
	uint64_t h = mix64((uint64_t)(uintptr_t)fmt);
	for (int i = 0; i < SIGV; i++)
		h = mix64(h ^ (uint32_t)v[i]);
	return h;
}

static int32_t sig_add(sigtab_t *t, sig_t s)
{
	t->s = grow(t->s, &t->cap, t->n + 1, sizeof *t->s);
	t->s[t->n] = s;
	return (int32_t)t->n++;
}

static void sig_rehash(sigtab_t *t)
{
	size_t ncap = t->hcap ? t->hcap * 2 : 1024;
	sigkey_t *nh = xrealloc(NULL, ncap * sizeof *nh);
	for (size_t i = 0; i < ncap; i++)
		nh[i].fmt = NULL;
	for (size_t i = 0; i < t->hcap; i++) {
		if (!t->h[i].fmt)
			continue;
		size_t j = sig_hash(t->h[i].fmt, t->h[i].v) & (ncap - 1);
		while (nh[j].fmt)
			j = (j + 1) & (ncap - 1);
		nh[j] = t->h[i];
	}
	free(t->h);
	t->h = nh;
	t->hcap = ncap;
}

/* The signature for `fmt` formatted with the ints in v (cached). */
static int32_t sig_get(sigtab_t *t, const cfg_t *c, const char *fmt, const int *v)
{
	if (t->hn * 2 >= t->hcap)
		sig_rehash(t);
	size_t j = sig_hash(fmt, v) & (t->hcap - 1);
	for (; t->h[j].fmt; j = (j + 1) & (t->hcap - 1))
		if (t->h[j].fmt == fmt && memcmp(t->h[j].v, v, sizeof t->h[j].v) == 0)
			return t->h[j].id;
	char spec[1024];
	snprintf(spec, sizeof spec, fmt, v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8], v[9],
	         v[10], v[11], v[12], v[13], v[14], v[15]);
	t->h[j].fmt = fmt;
	memcpy(t->h[j].v, v, sizeof t->h[j].v);
	t->h[j].id = sig_add(t, sig_render(spec, c));
	t->hn++;
	return t->h[j].id;
}

static void sig_free(sigtab_t *t)
{
	for (size_t i = 0; i < t->n; i++) {
		free(t->s[i].pre);
		free(t->s[i].post);
	}
	free(t->s);
	free(t->h);
}

/* ------------------------------------------------------------------ */
/* Step model: CPU-side events, GPU activities, backward items          */

enum { C_OP, C_ANN, C_PY, C_RT, C_MEM };
enum { RT_GPU, RT_ORPHAN };
enum { G_KERNEL, G_MEMCPY, G_MEMSET, G_SYNC, G_WAIT };
enum { S_COMPUTE, S_NCCL };

typedef struct cev {
	uint8_t type, thr, rtk, drv, flowph, fwdtid;
	uint16_t cbid;
	int32_t sig, gpu, g0, g1;
	const char *name;
	uint32_t nlen;
	uint64_t ts, dur, ext, corr, flow, pyid, pypar;
	int64_t seq;
	int64_t mbytes;
	uint64_t mtotal, maddr;
} cev_t;

typedef struct gev {
	uint8_t type, stream, occ, nccl;
	const char *name;
	uint32_t nlen;
	uint64_t ts, dur, ext, corr, bytes, nelems, wait_corr, event_id;
	uint32_t grid[3], block[3], smem;
	uint16_t regs;
} gev_t;

typedef struct kspec {
	const str_t *name;
	uint32_t grid[3], block[3], smem;
	uint16_t regs, cbid;
	uint8_t drv, stream;
	uint64_t dur, nelems;
} kspec_t;

enum bwk {
	BW_ACC, BW_VIEW, BW_VIEW_FLAT, BW_T, BW_ADDMM, BW_ADDMM2, BW_PERMUTE, BW_UNBIND, BW_TRANSPOSE,
	BW_BMM, BW_UNSAFE_VIEW, BW_MUL, BW_SOFTMAX, BW_CLONE, BW_ADD, BW_ACT, BW_LN, BW_MEAN,
	BW_LOGSM, BW_NLL, BW_CONV, BW_ADDPOS, BW_COMPILED, BW_FLATTEN, BW_COUNT
};

typedef struct bw {
	uint8_t kind;
	int64_t seq;
	uint64_t flow;
	int d[6];
} bw_t;

/* Counters carried from one step to the next. */
typedef struct state {
	uint64_t ts, ext, corr, py, seq, flow, cuda_event;
	uint64_t sfree[2];
	uint64_t step;
} state_t;

typedef struct memslot {
	uint64_t bytes, addr;
} memslot_t;

typedef struct gen {
	cfg_t c;
	vocab_t v;
	sigtab_t st;
	cev_t *ev;
	size_t nev, cap_ev;
	gev_t *gv;
	size_t ngv, cap_gv;
	bw_t *bw;
	size_t nbw, cap_bw;
	uint64_t rs;
	int thr;
	uint64_t cur[2];
	int32_t stk[2][MAX_DEPTH];
	int sp[2];
	state_t s;
	memslot_t ring[MEM_RING];
	int nring;
	uint64_t mem_total, bucket;
	char stepname[48];
	uint64_t ev_idx; /* "Ev Idx" of the next CPU-side event written */
	uint64_t comm_n[32];
	int32_t comm_sig[32];
	int ncomm;
	int mem_last; /* --memory-last */
} gen_t;

#define SIG(g, fmt, ...) sig_get(&(g)->st, &(g)->c, (fmt), (const int[SIGV]){__VA_ARGS__})

/* Time spent on entry, on exit and after an event, per type (ns). */
static const uint32_t T_OPEN[5][2] = {{400, 2500}, {500, 2000}, {200, 800}, {2000, 6000}, {0, 0}};
static const uint32_t T_CLOSE[5][2] = {{200, 1200}, {300, 1500}, {100, 500}, {100, 400}, {0, 0}};
static const uint32_t T_GAP[5][2] = {{100, 600}, {100, 600}, {50, 300}, {100, 500}, {0, 0}};

static void adv(gen_t *g, uint32_t lo, uint32_t hi)
{
	g->cur[g->thr] += rnd_range(&g->rs, lo, hi);
}

static cev_t *ev_new(gen_t *g, int type, const char *name)
{
	g->ev = grow(g->ev, &g->cap_ev, g->nev + 1, sizeof *g->ev);
	cev_t *e = &g->ev[g->nev++];
	memset(e, 0, sizeof *e);
	e->type = (uint8_t)type;
	e->thr = (uint8_t)g->thr;
	e->sig = -1;
	e->gpu = -1;
	e->seq = -1;
	e->ts = g->cur[g->thr];
	e->name = name;
	e->nlen = (uint32_t)strlen(name);
	return e;
}

static uint64_t py_parent(const gen_t *g)
{
	const int t = g->thr;
	for (int i = g->sp[t] - 1; i >= 0; i--)
		if (g->ev[g->stk[t][i]].type == C_PY)
			return g->ev[g->stk[t][i]].pyid;
	return t == 0 ? 3 : 0;
}

/* External id of the innermost cpu_op open on this thread, 0 if none. */
static uint64_t cur_op_ext(const gen_t *g)
{
	const int t = g->thr;
	for (int i = g->sp[t] - 1; i >= 0; i--)
		if (g->ev[g->stk[t][i]].type == C_OP)
			return g->ev[g->stk[t][i]].ext;
	return 0;
}

static int32_t ev_open(gen_t *g, int type, const char *name, int32_t sig)
{
	uint64_t par = type == C_PY ? py_parent(g) : 0;
	cev_t *e = ev_new(g, type, name);
	e->sig = sig;
	if (type == C_OP || type == C_ANN)
		e->ext = ++g->s.ext;
	if (type == C_PY) {
		e->pyid = ++g->s.py;
		e->pypar = par;
	}
	e->g0 = (int32_t)g->ngv;
	int32_t idx = (int32_t)(g->nev - 1);
	if (g->sp[g->thr] >= MAX_DEPTH)
		die("internal: nesting too deep");
	g->stk[g->thr][g->sp[g->thr]++] = idx;
	adv(g, T_OPEN[type][0], T_OPEN[type][1]);
	return idx;
}

static void ev_close(gen_t *g)
{
	const int t = g->thr;
	int32_t idx = g->stk[t][--g->sp[t]];
	cev_t *e = &g->ev[idx];
	adv(g, T_CLOSE[e->type][0], T_CLOSE[e->type][1]);
	e->dur = g->cur[t] - e->ts;
	e->g1 = (int32_t)g->ngv;
	adv(g, T_GAP[e->type][0], T_GAP[e->type][1]);
}

static int32_t op_open(gen_t *g, const char *name, int32_t sig)
{
	return ev_open(g, C_OP, name, sig);
}

static void op_leaf(gen_t *g, const char *name, int32_t sig)
{
	ev_open(g, C_OP, name, sig);
	ev_close(g);
}

static void py_open(gen_t *g, const char *name)
{
	ev_open(g, C_PY, name, -1);
}

static void close_n(gen_t *g, int n)
{
	while (n-- > 0)
		ev_close(g);
}

static bw_t *bw_push(gen_t *g, int kind)
{
	g->bw = grow(g->bw, &g->cap_bw, g->nbw + 1, sizeof *g->bw);
	bw_t *b = &g->bw[g->nbw++];
	memset(b, 0, sizeof *b);
	b->kind = (uint8_t)kind;
	b->seq = -1;
	return b;
}

/* Marks forward op `idx` as recorded for autograd and queues its backward node. */
static bw_t *fwd_seq(gen_t *g, int32_t idx, int kind, int a, int b, int c, int d)
{
	cev_t *e = &g->ev[idx];
	e->seq = (int64_t)++g->s.seq;
	e->fwdtid = 0;
	e->flow = ++g->s.flow;
	e->flowph = 's';
	bw_t *w = bw_push(g, kind);
	w->seq = e->seq;
	w->flow = e->flow;
	int v[4] = {a, b, c, d};
	memcpy(w->d, v, sizeof v);
	return w;
}

static void bw_acc(gen_t *g, int param)
{
	bw_push(g, BW_ACC)->d[0] = param;
}

/* ------------------------------------------------------------------ */
/* Memory events                                                        */

static void mem_event(gen_t *g, int64_t bytes, uint64_t addr)
{
	cev_t *e = ev_new(g, C_MEM, "[memory]");
	g->mem_total = (uint64_t)((int64_t)g->mem_total + bytes);
	e->mbytes = bytes;
	e->mtotal = g->mem_total;
	e->maddr = addr;
	adv(g, 200, 900);
}

static void mem_alloc(gen_t *g, uint64_t bytes)
{
	bytes = ceil_div(bytes, 512) * 512;
	if (g->nring == MEM_RING) {
		mem_event(g, -(int64_t)g->ring[0].bytes, g->ring[0].addr);
		memmove(g->ring, g->ring + 1, sizeof g->ring[0] * (MEM_RING - 1));
		g->nring--;
	}
	uint64_t addr = 0x7f3a00000000ULL + rnd_below(&g->rs, 1ULL << 26) * 512;
	g->ring[g->nring].bytes = bytes;
	g->ring[g->nring].addr = addr;
	g->nring++;
	mem_event(g, (int64_t)bytes, addr);
}

static void mem_free_all(gen_t *g)
{
	while (g->nring > 0) {
		g->nring--;
		mem_event(g, -(int64_t)g->ring[g->nring].bytes, g->ring[g->nring].addr);
	}
}

static void op_empty(gen_t *g, const char *name, int32_t sig, uint64_t bytes)
{
	op_open(g, name, sig);
	mem_alloc(g, bytes);
	ev_close(g);
}

/* ------------------------------------------------------------------ */
/* Runtime calls and GPU activity                                       */

static gev_t *gv_new(gen_t *g, int type, int stream)
{
	g->gv = grow(g->gv, &g->cap_gv, g->ngv + 1, sizeof *g->gv);
	gev_t *a = &g->gv[g->ngv++];
	memset(a, 0, sizeof *a);
	a->type = (uint8_t)type;
	a->stream = (uint8_t)stream;
	return a;
}

static int32_t rt_open(gen_t *g, const char *name, int cbid, int kind)
{
	int32_t ri = ev_open(g, C_RT, name, -1);
	cev_t *r = &g->ev[ri];
	r->cbid = (uint16_t)cbid;
	r->rtk = (uint8_t)kind;
	r->corr = ++g->s.corr;
	r->ext = cur_op_ext(g);
	return ri;
}

/* A runtime call with no GPU activity (Kineto writes a lone flow end for it). */
static uint64_t rt_orphan(gen_t *g, const char *name, int cbid)
{
	int32_t ri = rt_open(g, name, cbid, RT_ORPHAN);
	uint64_t corr = g->ev[ri].corr;
	ev_close(g);
	return corr;
}

/* Places a GPU activity launched by runtime event ri on its stream. */
static gev_t *gpu_place(gen_t *g, int32_t ri, int type, int stream, uint64_t dur)
{
	gev_t *a = gv_new(g, type, stream);
	cev_t *r = &g->ev[ri];
	uint64_t ready = r->ts + rnd_range(&g->rs, 2500, 7000);
	a->ts = max_u64(ready, g->s.sfree[stream]);
	a->dur = dur;
	a->ext = r->ext;
	a->corr = r->corr;
	g->s.sfree[stream] = a->ts + a->dur;
	r->gpu = (int32_t)(g->ngv - 1);
	return a;
}

static const char *launch_name(const kspec_t *k)
{
	if (k->drv)
		return "cuLaunchKernel";
	return k->cbid == 430 ? "cudaLaunchKernelExC" : "cudaLaunchKernel";
}

/* Resident warps per SM as a share of the 64 possible, limited by registers. */
static uint8_t occupancy(const kspec_t *k)
{
	uint64_t warps = (uint64_t)k->block[0] * k->block[1] * k->block[2] / 32;
	uint64_t blocks = (uint64_t)k->grid[0] * k->grid[1] * k->grid[2];
	uint64_t resident = blocks / NUM_SMS * (warps ? warps : 1);
	uint64_t lim = k->regs ? 65536 / ((uint64_t)k->regs * 32) : 64;
	if (resident > lim)
		resident = lim;
	if (resident > 64)
		resident = 64;
	return (uint8_t)(resident * 100 / 64);
}

static void launch(gen_t *g, const kspec_t *k)
{
	int32_t ri = rt_open(g, launch_name(k), k->cbid, RT_GPU);
	g->ev[ri].drv = k->drv;
	gev_t *a = gpu_place(g, ri, G_KERNEL, k->stream, k->dur);
	a->name = k->name->p;
	a->nlen = k->name->n;
	memcpy(a->grid, k->grid, sizeof a->grid);
	memcpy(a->block, k->block, sizeof a->block);
	a->regs = k->regs;
	a->smem = k->smem;
	a->nelems = k->nelems;
	a->nccl = k->stream == S_NCCL;
	a->occ = occupancy(k);
	ev_close(g);
}

static const char *MEMCPY_NAME[3] = {"Memcpy HtoD (Pinned -> Device)", "Memcpy DtoH (Device -> Pageable)",
                                     "Memcpy DtoD (Device -> Device)"};

/* cudaMemcpyAsync; a copy to pageable memory blocks the CPU until it is done. */
static void gpu_memcpy(gen_t *g, int kind, uint64_t bytes)
{
	int32_t ri = rt_open(g, "cudaMemcpyAsync", 41, RT_GPU);
	uint64_t bw = kind == 0 ? 24 : kind == 1 ? 9 : 1200;
	gev_t *a = gpu_place(g, ri, G_MEMCPY, S_COMPUTE, jitter(&g->rs, bytes / bw + 1500, 8));
	a->name = MEMCPY_NAME[kind];
	a->nlen = (uint32_t)strlen(a->name);
	a->bytes = bytes;
	if (kind == 1)
		g->cur[g->thr] = max_u64(g->cur[g->thr], a->ts + a->dur + rnd_range(&g->rs, 3000, 9000));
	ev_close(g);
}

static void gpu_memset(gen_t *g, uint64_t bytes)
{
	int32_t ri = rt_open(g, "cudaMemsetAsync", 51, RT_GPU);
	gev_t *a = gpu_place(g, ri, G_MEMSET, S_COMPUTE, jitter(&g->rs, bytes / 1500 + 1200, 8));
	a->name = "Memset (Device)";
	a->nlen = (uint32_t)strlen(a->name);
	a->bytes = bytes;
	ev_close(g);
}

/* cudaStreamSynchronize: the CPU waits for the compute stream to drain. */
static void stream_sync(gen_t *g)
{
	int32_t ri = rt_open(g, "cudaStreamSynchronize", 131, RT_GPU);
	cev_t *r = &g->ev[ri];
	gev_t *a = gv_new(g, G_SYNC, S_COMPUTE);
	a->ts = r->ts + rnd_range(&g->rs, 800, 2000);
	uint64_t end = max_u64(a->ts, g->s.sfree[S_COMPUTE]) + rnd_range(&g->rs, 500, 2500);
	a->dur = end - a->ts;
	a->ext = r->ext;
	a->corr = r->corr;
	a->name = "Stream Sync";
	a->nlen = 11;
	r->gpu = (int32_t)(g->ngv - 1);
	g->cur[g->thr] = max_u64(g->cur[g->thr], end + rnd_range(&g->rs, 1000, 4000));
	ev_close(g);
}

/* cudaStreamWaitEvent: the NCCL stream waits for work recorded on the compute stream. */
static void stream_wait(gen_t *g, uint64_t record_corr)
{
	int32_t ri = rt_open(g, "cudaStreamWaitEvent", 147, RT_GPU);
	uint64_t dur = rnd_range(&g->rs, 1000, 3000);
	gev_t *a = gpu_place(g, ri, G_WAIT, S_NCCL, dur);
	a->name = "Stream Wait Event";
	a->nlen = 17;
	a->wait_corr = record_corr;
	a->event_id = ++g->s.cuda_event;
	g->s.sfree[S_NCCL] = max_u64(g->s.sfree[S_NCCL], g->s.sfree[S_COMPUTE]);
	ev_close(g);
}

/* ------------------------------------------------------------------ */
/* Kernel launch shapes                                                 */

static void ks_dims(kspec_t *k, uint64_t gx, uint64_t gy, uint32_t bx, uint32_t by)
{
	k->grid[0] = (uint32_t)(gx ? (gx > 2147483647u ? 2147483647u : gx) : 1);
	k->grid[1] = (uint32_t)(gy ? gy : 1);
	k->grid[2] = 1;
	k->block[0] = bx;
	k->block[1] = by ? by : 1;
	k->block[2] = 1;
}

/* A GEMM of [m,k] x [k,n], `batch` times. */
static void k_gemm(gen_t *g, kspec_t *k, int fam, uint64_t key, uint64_t m, uint64_t n, uint64_t kk, uint64_t batch)
{
	memset(k, 0, sizeof *k);
	k->name = kname(&g->v, fam, key ^ (m * 31 + n * 17 + kk));
	uint64_t fl = 2 * m * n * kk * batch;
	k->dur = jitter(&g->rs, fl / (fam == F_BMM ? 380000 : 560000) + 3500, 4);
	int big = fam != F_BMM;
	ks_dims(k, ceil_div(n, 128), ceil_div(m, big ? 256 : 128) * batch, big ? 384 : 256, 1);
	k->regs = big ? 168 : 238;
	k->smem = big ? 213248 - 16384 * (uint32_t)(key % 3) : 73728;
	k->cbid = big ? 430 : 211;
}

/* An elementwise or memory-bound kernel over `numel` elements of 2 bytes. */
static void k_elem(gen_t *g, kspec_t *k, int fam, uint64_t key, uint64_t numel)
{
	memset(k, 0, sizeof *k);
	k->name = kname(&g->v, fam, key ^ numel);
	k->dur = jitter(&g->rs, numel * 6 / 2400 + 1800, 6);
	ks_dims(k, ceil_div(numel, 512 * 4), 1, 128, 1);
	k->regs = (uint16_t)(16 + 8 * (key % 4));
	k->cbid = 211;
}

/* A row-wise kernel (norms, softmax, reductions). */
static void k_rows(gen_t *g, kspec_t *k, int fam, uint64_t key, uint64_t rows, uint64_t cols)
{
	memset(k, 0, sizeof *k);
	k->name = kname(&g->v, fam, key ^ rows ^ (cols << 20));
	k->dur = jitter(&g->rs, rows * cols * 8 / 2400 + 2500, 6);
	ks_dims(k, rows, 1, cols >= 1024 ? 512 : 128, 1);
	k->regs = (uint16_t)(32 + 8 * (key % 3));
	k->smem = (uint32_t)(cols >= 1024 ? 4096 : 0);
	k->cbid = 211;
}

static void k_nccl(gen_t *g, kspec_t *k, uint64_t nelems)
{
	memset(k, 0, sizeof *k);
	uint64_t proto = nelems < (1u << 16) ? 0 : nelems < (1u << 22) ? 1 : 2;
	k->name = &g->v.k[g->v.start[F_NCCL_AR] + proto];
	uint64_t w = (uint64_t)g->c.world;
	uint64_t bytes = nelems * 2 * 2 * (w > 1 ? w - 1 : 1) / (w > 1 ? w : 1);
	k->dur = jitter(&g->rs, bytes / 180 + 9000, 10);
	ks_dims(k, 16 + 8 * proto, 1, proto == 1 ? 640 : 512, 1);
	k->regs = 96;
	k->smem = proto == 1 ? 103808 : 87568;
	k->cbid = 430;
	k->stream = S_NCCL;
	k->nelems = nelems;
}

static void launch_gemm(gen_t *g, int fam, uint64_t key, uint64_t m, uint64_t n, uint64_t kk, uint64_t batch)
{
	static const char *pre[] = {"cudaStreamGetCaptureInfo_v2", "cudaFuncSetAttribute", "cudaStreamIsCapturing"};
	static const int pre_cbid[] = {409, 273, 317};
	if (rnd_below(&g->rs, 10) < 3) {
		int i = (int)rnd_below(&g->rs, 3);
		rt_orphan(g, pre[i], pre_cbid[i]);
	}
	kspec_t k;
	k_gemm(g, &k, fam, key, m, n, kk, batch);
	launch(g, &k);
}

static void launch_elem(gen_t *g, int fam, uint64_t key, uint64_t numel)
{
	kspec_t k;
	k_elem(g, &k, fam, key, numel);
	launch(g, &k);
}

static void launch_rows(gen_t *g, int fam, uint64_t key, uint64_t rows, uint64_t cols)
{
	kspec_t k;
	k_rows(g, &k, fam, key, rows, cols);
	launch(g, &k);
}

static void launch_triton(gen_t *g, int fam, int idx, uint64_t numel)
{
	kspec_t k;
	k_elem(g, &k, fam, 0, numel);
	k.name = &g->v.k[g->v.start[fam] + (uint32_t)idx % g->v.count[fam]];
	k.drv = 1;
	k.cbid = 307;
	launch(g, &k);
}

/* ------------------------------------------------------------------ */
/* Python frames                                                        */

#define PY_WRAPPED "torch/nn/modules/module.py(1773): _wrapped_call_impl"
#define PY_CALLIMPL "torch/nn/modules/module.py(1784): _call_impl"
#define PY_BUILTIN_AT "of type object at 0x7f3c8a2b1e40>"

static void mod_enter(gen_t *g, const char *fwd)
{
	py_open(g, PY_WRAPPED);
	py_open(g, PY_CALLIMPL);
	py_open(g, fwd);
}

/* ------------------------------------------------------------------ */
/* Forward pass of a ViT-style model                                    */

/* Layer class used to pick kernel variants: layers repeat a few kernel choices. */
static uint64_t lkey(int layer, int site)
{
	return (uint64_t)(layer % 6) * 1000003u + (uint64_t)site * 7919u;
}

static void fwd_t(gen_t *g, int r, int c)
{
	int32_t e = op_open(g, "aten::t", SIG(g, "t[%d,%d]", r, c));
	fwd_seq(g, e, BW_T, r, c, 0, 0);
	op_open(g, "aten::transpose", SIG(g, "t[%d,%d];s=0;s=1", r, c));
	op_leaf(g, "aten::as_strided", SIG(g, "t[%d,%d];L=[%d, %d];L=[1, %d];n", r, c, c, r, c));
	close_n(g, 2);
}

/* y = x W^T + b for x [B, N, in] (3-D) or [B, in] (2-D when n == 0). */
static void fwd_linear(gen_t *g, int layer, int site, int b, int n, int in, int out, int pw)
{
	const cfg_t *c = &g->c;
	int rows = n ? b * n : b;
	mod_enter(g, "torch/nn/modules/linear.py(125): forward");
	py_open(g, "<built-in function linear>");
	if (n)
		op_open(g, "aten::linear", SIG(g, "t[%d,%d,%d];t[%d,%d];t[%d]", b, n, in, out, in, out));
	else
		op_open(g, "aten::linear", SIG(g, "t[%d,%d];t[%d,%d];t[%d]", b, in, out, in, out));
	bw_acc(g, pw);
	fwd_t(g, out, in);
	int32_t e;
	if (n) {
		e = op_open(g, "aten::view", SIG(g, "t[%d,%d,%d];L=[%d, %d]", b, n, in, rows, in));
		fwd_seq(g, e, BW_VIEW, b, n, in, 0);
		ev_close(g);
	}
	bw_acc(g, pw + 1);
	e = op_open(g, "aten::addmm", SIG(g, "t[%d];t[%d,%d];T[%d,%d];s=1;s=1", out, rows, in, in, out));
	fwd_seq(g, e, n ? BW_ADDMM : BW_ADDMM2, rows, in, out, layer * 16 + site);
	launch_gemm(g, (layer + site) % 3 ? F_NVJET : F_GEMM, lkey(layer, site), (uint64_t)rows, (uint64_t)out, (uint64_t)in, 1);
	ev_close(g);
	if (n) {
		e = op_open(g, "aten::view", SIG(g, "t[%d,%d];L=[%d, %d, %d]", rows, out, b, n, out));
		fwd_seq(g, e, BW_VIEW_FLAT, b, n, out, 0);
		ev_close(g);
	}
	close_n(g, 5);
	(void)c;
}

static void fwd_ln(gen_t *g, int layer, int pw)
{
	const cfg_t *c = &g->c;
	int B = c->B, N = c->N, H = c->H;
	mod_enter(g, "torch/nn/modules/normalization.py(217): forward");
	py_open(g, "torch/nn/functional.py(2910): layer_norm");
	py_open(g, "<built-in method layer_norm " PY_BUILTIN_AT);
	op_open(g, "aten::layer_norm", SIG(g, "t[%d,%d,%d];L=[%d];t[%d];t[%d];s=1e-06;s=True", B, N, H, H, H, H));
	bw_acc(g, pw);
	bw_acc(g, pw + 1);
	int32_t e = op_open(g, "aten::native_layer_norm", SIG(g, "t[%d,%d,%d];L=[%d];t[%d];t[%d];s=1e-06", B, N, H, H, H, H));
	fwd_seq(g, e, BW_LN, B, N, H, layer);
	op_empty(g, "aten::empty_like", SIG(g, "t[%d,%d,%d];n;n;n;n;n", B, N, H), (uint64_t)B * N * H * 2);
	launch_rows(g, F_LN_FWD, lkey(layer, 1), (uint64_t)B * N, (uint64_t)H);
	close_n(g, 7);
}

static void fwd_add(gen_t *g, int layer, int site)
{
	const cfg_t *c = &g->c;
	int32_t e = op_open(g, "aten::add", SIG(g, "t[%d,%d,%d];t[%d,%d,%d];s=1", c->B, c->N, c->H, c->B, c->N, c->H));
	fwd_seq(g, e, BW_ADD, 0, 0, 0, 0);
	launch_elem(g, F_E_ADD, lkey(layer, site), (uint64_t)c->B * c->N * c->H);
	ev_close(g);
}

/* a [BH, m, k] @ b [BH, k, n] through aten::matmul. */
static void fwd_matmul(gen_t *g, int layer, int site, int m, int k, int n)
{
	const cfg_t *c = &g->c;
	int B = c->B, NH = c->NH, BH = B * NH;
	op_open(g, "aten::matmul", SIG(g, "t[%d,%d,%d,%d];t[%d,%d,%d,%d]", B, NH, m, k, B, NH, k, n));
	op_open(g, "aten::expand", SIG(g, "t[%d,%d,%d,%d];L=[%d, %d, %d, %d];s=False", B, NH, m, k, B, NH, m, k));
	op_leaf(g, "aten::as_strided", SIG(g, "t[%d,%d,%d,%d];L=[%d, %d, %d, %d];n;n", B, NH, m, k, B, NH, m, k));
	ev_close(g);
	op_open(g, "aten::reshape", SIG(g, "t[%d,%d,%d,%d];L=[%d, %d, %d]", B, NH, m, k, BH, m, k));
	op_leaf(g, "aten::view", SIG(g, "t[%d,%d,%d,%d];L=[%d, %d, %d]", B, NH, m, k, BH, m, k));
	ev_close(g);
	op_open(g, "aten::reshape", SIG(g, "t[%d,%d,%d,%d];L=[%d, %d, %d]", B, NH, k, n, BH, k, n));
	op_leaf(g, "aten::view", SIG(g, "t[%d,%d,%d,%d];L=[%d, %d, %d]", B, NH, k, n, BH, k, n));
	ev_close(g);
	int32_t e = op_open(g, "aten::bmm", SIG(g, "t[%d,%d,%d];t[%d,%d,%d]", BH, m, k, BH, k, n));
	fwd_seq(g, e, BW_BMM, m, k, n, layer * 16 + site);
	launch_gemm(g, F_BMM, lkey(layer, site), (uint64_t)m, (uint64_t)n, (uint64_t)k, (uint64_t)BH);
	ev_close(g);
	e = op_open(g, "aten::_unsafe_view", SIG(g, "t[%d,%d,%d];L=[%d, %d, %d, %d]", BH, m, n, B, NH, m, n));
	fwd_seq(g, e, BW_UNSAFE_VIEW, m, n, 0, 0);
	ev_close(g);
	ev_close(g);
}

static void fwd_qkv_split(gen_t *g)
{
	const cfg_t *c = &g->c;
	int B = c->B, N = c->N, NH = c->NH, HD = c->HD;
	int32_t e = op_open(g, "aten::view", SIG(g, "t[%d,%d,%d];L=[%d, %d, 3, %d, %d]", B, N, 3 * c->H, B, N, NH, HD));
	fwd_seq(g, e, BW_VIEW, B, N, 3 * c->H, 1);
	ev_close(g);
	e = op_open(g, "aten::permute", SIG(g, "t[%d,%d,3,%d,%d];L=[2, 0, 3, 1, 4]", B, N, NH, HD));
	fwd_seq(g, e, BW_PERMUTE, 0, 0, 0, 0);
	op_leaf(g, "aten::as_strided", SIG(g, "t[%d,%d,3,%d,%d];L=[3, %d, %d, %d, %d];n;n", B, N, NH, HD, B, NH, N, HD));
	ev_close(g);
	e = op_open(g, "aten::unbind", SIG(g, "t[3,%d,%d,%d,%d];s=0", B, NH, N, HD));
	fwd_seq(g, e, BW_UNBIND, 0, 0, 0, 0);
	for (int i = 0; i < 3; i++) {
		op_open(g, "aten::select", SIG(g, "t[3,%d,%d,%d,%d];s=0;s=%d", B, NH, N, HD, i));
		op_leaf(g, "aten::as_strided", SIG(g, "t[3,%d,%d,%d,%d];L=[%d, %d, %d, %d];n;s=%d", B, NH, N, HD, B, NH, N, HD, i * B * NH * N * HD));
		ev_close(g);
	}
	ev_close(g);
}

static void fwd_transpose(gen_t *g, int a, int b, int d0, int d1, int d2, int d3)
{
	int32_t e = op_open(g, "aten::transpose", SIG(g, "t[%d,%d,%d,%d];s=%d;s=%d", d0, d1, d2, d3, a, b));
	fwd_seq(g, e, BW_TRANSPOSE, a, b, 0, 0);
	op_leaf(g, "aten::as_strided", SIG(g, "t[%d,%d,%d,%d];L=[%d, %d, %d, %d];n;n", d0, d1, d2, d3, d0, d1, d3, d2));
	ev_close(g);
}

static void fwd_softmax(gen_t *g, int layer)
{
	const cfg_t *c = &g->c;
	int B = c->B, NH = c->NH, N = c->N;
	py_open(g, "<built-in method softmax of Tensor object at 0x7f3b1c2d9a30>");
	op_open(g, "aten::softmax", SIG(g, "t[%d,%d,%d,%d];s=-1;n", B, NH, N, N));
	int32_t e = op_open(g, "aten::_softmax", SIG(g, "t[%d,%d,%d,%d];s=-1;s=False", B, NH, N, N));
	fwd_seq(g, e, BW_SOFTMAX, 0, 0, 0, 0);
	launch_rows(g, F_SM_FWD, lkey(layer, 4), (uint64_t)B * NH * N, (uint64_t)N);
	close_n(g, 3);
}

/* out = x.transpose(1, 2).reshape(B, N, H): a strided copy through aten::clone. */
static void fwd_merge_heads(gen_t *g, int layer)
{
	const cfg_t *c = &g->c;
	int B = c->B, N = c->N, NH = c->NH, HD = c->HD, H = c->H;
	fwd_transpose(g, 1, 2, B, NH, N, HD);
	op_open(g, "aten::reshape", SIG(g, "t[%d,%d,%d,%d];L=[%d, %d, %d]", B, N, NH, HD, B, N, H));
	int32_t e = op_open(g, "aten::clone", SIG(g, "t[%d,%d,%d,%d];n", B, N, NH, HD));
	fwd_seq(g, e, BW_CLONE, 0, 0, 0, 0);
	op_open(g, "aten::empty_like", SIG(g, "t[%d,%d,%d,%d];n;n;n;n;n", B, N, NH, HD));
	op_empty(g, "aten::empty", SIG(g, "L=[%d, %d, %d, %d];n;n;n;n;n", B, N, NH, HD), (uint64_t)B * N * H * 2);
	ev_close(g);
	op_open(g, "aten::copy_", SIG(g, "t[%d,%d,%d,%d];t[%d,%d,%d,%d];s=False", B, N, NH, HD, B, N, NH, HD));
	kspec_t k;
	k_elem(g, &k, F_COPY_STRIDED, lkey(layer, 5), (uint64_t)B * N * H);
	launch(g, &k);
	close_n(g, 2);
	e = op_open(g, "aten::_unsafe_view", SIG(g, "t[%d,%d,%d,%d];L=[%d, %d, %d]", B, N, NH, HD, B, N, H));
	fwd_seq(g, e, BW_UNSAFE_VIEW, 0, 0, 0, 1);
	close_n(g, 2);
}

static void fwd_attention(gen_t *g, int layer)
{
	const cfg_t *c = &g->c;
	int B = c->B, N = c->N, NH = c->NH, HD = c->HD, H = c->H, pb = P_BLOCK(layer);
	mod_enter(g, "vit.py(74): forward");
	fwd_linear(g, layer, 0, B, N, H, 3 * H, pb + 2);
	fwd_qkv_split(g);
	fwd_transpose(g, -2, -1, B, NH, N, HD);
	fwd_matmul(g, layer, 1, N, HD, N);
	int32_t e = op_open(g, "aten::mul", SIG(g, "t[%d,%d,%d,%d];s=0.125", B, NH, N, N));
	fwd_seq(g, e, BW_MUL, 0, 0, 0, 0);
	launch_elem(g, F_E_MULS, lkey(layer, 3), (uint64_t)B * NH * N * N);
	ev_close(g);
	fwd_softmax(g, layer);
	fwd_matmul(g, layer, 2, N, N, HD);
	fwd_merge_heads(g, layer);
	fwd_linear(g, layer, 6, B, N, H, H, pb + 4);
	close_n(g, 3);
}

static void fwd_act(gen_t *g, int layer)
{
	const cfg_t *c = &g->c;
	int B = c->B, N = c->N, FF = c->FF;
	int32_t e;
	if (c->relu) {
		mod_enter(g, "torch/nn/modules/activation.py(133): forward");
		py_open(g, "torch/nn/functional.py(1704): relu");
		py_open(g, "<built-in method relu " PY_BUILTIN_AT);
		e = op_open(g, "aten::relu", SIG(g, "t[%d,%d,%d]", B, N, FF));
		fwd_seq(g, e, BW_ACT, 0, 0, 0, 0);
		op_open(g, "aten::clamp_min", SIG(g, "t[%d,%d,%d];s=0", B, N, FF));
		launch_elem(g, F_E_RELU, lkey(layer, 7), (uint64_t)B * N * FF);
		close_n(g, 7);
		return;
	}
	mod_enter(g, "torch/nn/modules/activation.py(734): forward");
	py_open(g, "<built-in function gelu>");
	e = op_open(g, "aten::gelu", SIG(g, "t[%d,%d,%d];s=none", B, N, FF));
	fwd_seq(g, e, BW_ACT, 0, 0, 0, 0);
	launch_elem(g, F_E_GELU, lkey(layer, 7), (uint64_t)B * N * FF);
	close_n(g, 5);
}

/* The residual add and dropout compiled by torch.compile into Triton kernels. */
static void fwd_compiled(gen_t *g, int layer)
{
	const cfg_t *c = &g->c;
	uint64_t numel = (uint64_t)c->B * c->N * c->H;
	ev_open(g, C_ANN, c->region[layer], -1);
	int32_t e = op_open(g, "CompiledFunction", SIG(g, "t[%d,%d,%d];t[%d,%d,%d]", c->B, c->N, c->H, c->B, c->N, c->H));
	fwd_seq(g, e, BW_COMPILED, layer, 0, 0, 0);
	launch_triton(g, F_TRITON_POI, 2 * layer, numel);
	launch_triton(g, F_TRITON_PER, 2 * layer + 1, numel);
	close_n(g, 2);
}

static void fwd_block(gen_t *g, int layer)
{
	const cfg_t *c = &g->c;
	int B = c->B, N = c->N, H = c->H, FF = c->FF, pb = P_BLOCK(layer);
	mod_enter(g, "vit.py(122): forward");
	fwd_ln(g, layer, pb);
	fwd_attention(g, layer);
	fwd_add(g, layer, 8);
	fwd_ln(g, layer, pb + 6);
	mod_enter(g, "vit.py(43): forward");
	fwd_linear(g, layer, 9, B, N, H, FF, pb + 8);
	fwd_act(g, layer);
	fwd_linear(g, layer, 10, B, N, FF, H, pb + 10);
	close_n(g, 3);
	fwd_compiled(g, layer);
	close_n(g, 3);
}

/* Patch embedding: conv2d with stride = kernel = patch, then flatten and transpose. */
static void fwd_conv(gen_t *g)
{
	const cfg_t *c = &g->c;
	int B = c->B, I = c->I, P = c->P, H = c->H, G = c->G;
	mod_enter(g, "torch/nn/modules/conv.py(553): forward");
	py_open(g, "torch/nn/modules/conv.py(548): _conv_forward");
	py_open(g, "<built-in method conv2d " PY_BUILTIN_AT);
	op_open(g, "aten::conv2d", SIG(g, "t[%d,3,%d,%d];t[%d,3,%d,%d];t[%d];L=[%d, %d];L=[0, 0];L=[1, 1];s=1", B, I, I, H, P, P, H, P, P));
	bw_acc(g, 0);
	bw_acc(g, 1);
	int32_t e = op_open(g, "aten::convolution", SIG(g, "t[%d,3,%d,%d];t[%d,3,%d,%d];t[%d];L=[%d, %d];L=[0, 0];L=[1, 1];s=False;L=[0, 0];s=1", B, I, I, H, P, P, H, P, P));
	fwd_seq(g, e, BW_CONV, 0, 0, 0, 0);
	op_open(g, "aten::_convolution", SIG(g, "t[%d,3,%d,%d];t[%d,3,%d,%d];t[%d];L=[%d, %d];L=[0, 0];L=[1, 1];s=False;L=[0, 0];s=1;s=False;s=False;s=True;s=True", B, I, I, H, P, P, H, P, P));
	op_open(g, "aten::cudnn_convolution", SIG(g, "t[%d,3,%d,%d];t[%d,3,%d,%d];L=[0, 0];L=[%d, %d];L=[1, 1];s=1;s=False;s=False;s=True", B, I, I, H, P, P, P, P));
	op_empty(g, "aten::empty", SIG(g, "L=[%d, %d, %d, %d];n;n;n;n;n", B, H, G, G), (uint64_t)B * H * G * G * 2);
	uint64_t img = (uint64_t)B * 3 * I * I;
	launch_elem(g, F_NCHW2NHWC, 1, img);
	launch_elem(g, F_NCHW2NHWC, 2, (uint64_t)H * 3 * P * P);
	launch_gemm(g, F_CONV_FPROP, 3, (uint64_t)B * G * G, (uint64_t)H, (uint64_t)3 * P * P, 1);
	launch_elem(g, F_NHWC2NCHW, 4, (uint64_t)B * H * G * G);
	ev_close(g);
	op_open(g, "aten::reshape", SIG(g, "t[%d];L=[1, %d, 1, 1]", H, H));
	op_leaf(g, "aten::view", SIG(g, "t[%d];L=[1, %d, 1, 1]", H, H));
	ev_close(g);
	op_open(g, "aten::add_", SIG(g, "t[%d,%d,%d,%d];t[1,%d,1,1];s=1", B, H, G, G, H));
	launch_elem(g, F_E_ADD, 5, (uint64_t)B * H * G * G);
	close_n(g, 9);
}

static void fwd_stem(gen_t *g)
{
	const cfg_t *c = &g->c;
	int B = c->B, H = c->H, G = c->G, N = c->N;
	fwd_conv(g);
	op_open(g, "aten::flatten", SIG(g, "t[%d,%d,%d,%d];s=2;s=-1", B, H, G, G));
	int32_t e = op_open(g, "aten::view", SIG(g, "t[%d,%d,%d,%d];L=[%d, %d, %d]", B, H, G, G, B, H, N));
	fwd_seq(g, e, BW_FLATTEN, 0, 0, 0, 0);
	close_n(g, 2);
	e = op_open(g, "aten::transpose", SIG(g, "t[%d,%d,%d];s=1;s=2", B, H, N));
	fwd_seq(g, e, BW_TRANSPOSE, 1, 2, 0, 0);
	op_leaf(g, "aten::as_strided", SIG(g, "t[%d,%d,%d];L=[%d, %d, %d];L=[%d, 1, %d];n", B, H, N, B, N, H, H * N, N));
	ev_close(g);
	bw_acc(g, 2);
	e = op_open(g, "aten::add", SIG(g, "t[%d,%d,%d];t[1,%d,%d];s=1", B, N, H, N, H));
	fwd_seq(g, e, BW_ADDPOS, 0, 0, 0, 0);
	launch_elem(g, F_E_ADD, 6, (uint64_t)B * N * H);
	ev_close(g);
}

static void fwd_head(gen_t *g)
{
	const cfg_t *c = &g->c;
	int B = c->B, N = c->N, H = c->H, np = c->nparam;
	fwd_ln(g, c->L, np - 4);
	int32_t e = op_open(g, "aten::mean", SIG(g, "t[%d,%d,%d];L=[1];s=False;n", B, N, H));
	fwd_seq(g, e, BW_MEAN, 0, 0, 0, 0);
	launch_rows(g, F_REDUCE, 7, (uint64_t)B * H, (uint64_t)N);
	ev_close(g);
	fwd_linear(g, c->L, 11, B, 0, H, c->C, np - 2);
}

static void fwd_loss(gen_t *g)
{
	const cfg_t *c = &g->c;
	int B = c->B, C = c->C;
	mod_enter(g, "torch/nn/modules/loss.py(1297): forward");
	py_open(g, "torch/nn/functional.py(3462): cross_entropy");
	py_open(g, "<built-in function cross_entropy_loss>");
	op_open(g, "aten::cross_entropy_loss", SIG(g, "t[%d,%d];l[%d];n;s=1;s=-100;s=0.0", B, C, B));
	op_open(g, "aten::log_softmax", SIG(g, "t[%d,%d];s=1;n", B, C));
	int32_t e = op_open(g, "aten::_log_softmax", SIG(g, "t[%d,%d];s=1;s=False", B, C));
	fwd_seq(g, e, BW_LOGSM, 0, 0, 0, 0);
	launch_rows(g, F_LSM_FWD, 8, (uint64_t)B, (uint64_t)C);
	close_n(g, 2);
	op_open(g, "aten::nll_loss_nd", SIG(g, "f[%d,%d];l[%d];n;s=1;s=-100", B, C, B));
	op_open(g, "aten::nll_loss", SIG(g, "f[%d,%d];l[%d];n;s=1;s=-100", B, C, B));
	e = op_open(g, "aten::nll_loss_forward", SIG(g, "f[%d,%d];l[%d];n;s=1;s=-100", B, C, B));
	fwd_seq(g, e, BW_NLL, 0, 0, 0, 0);
	launch_rows(g, F_NLL_FWD, 9, 1, (uint64_t)B);
	close_n(g, 3);
	close_n(g, 6);
}

static void forward(gen_t *g)
{
	ev_open(g, C_ANN, "DistributedDataParallel.forward", -1);
	py_open(g, "torch/nn/parallel/distributed.py(1637): forward");
	py_open(g, "torch/nn/parallel/distributed.py(1523): _run_ddp_forward");
	mod_enter(g, "vit.py(181): forward");
	fwd_stem(g);
	for (int l = 0; l < g->c.L; l++)
		fwd_block(g, l);
	fwd_head(g);
	close_n(g, 5);
	ev_close(g);
	fwd_loss(g);
}

/* ------------------------------------------------------------------ */
/* Backward pass (autograd thread)                                      */

static const char *BW_NODE[BW_COUNT] = {
	"torch::autograd::AccumulateGrad", "ViewBackward0", "ViewBackward0", "TBackward0",
	"AddmmBackward0", "AddmmBackward0", "PermuteBackward0", "UnbindBackward0",
	"TransposeBackward0", "BmmBackward0", "UnsafeViewBackward0", "MulBackward0",
	"SoftmaxBackward0", "CloneBackward0", "AddBackward0", "ReluBackward0",
	"NativeLayerNormBackward0", "MeanBackward1", "LogSoftmaxBackward0", "NllLossBackward0",
	"ConvolutionBackward0", "AddBackward0", "CompiledFunctionBackward", "ViewBackward0"};

static const char *BW_EVAL[BW_COUNT] = {
	"autograd::engine::evaluate_function: torch::autograd::AccumulateGrad",
	"autograd::engine::evaluate_function: ViewBackward0",
	"autograd::engine::evaluate_function: ViewBackward0",
	"autograd::engine::evaluate_function: TBackward0",
	"autograd::engine::evaluate_function: AddmmBackward0",
	"autograd::engine::evaluate_function: AddmmBackward0",
	"autograd::engine::evaluate_function: PermuteBackward0",
	"autograd::engine::evaluate_function: UnbindBackward0",
	"autograd::engine::evaluate_function: TransposeBackward0",
	"autograd::engine::evaluate_function: BmmBackward0",
	"autograd::engine::evaluate_function: UnsafeViewBackward0",
	"autograd::engine::evaluate_function: MulBackward0",
	"autograd::engine::evaluate_function: SoftmaxBackward0",
	"autograd::engine::evaluate_function: CloneBackward0",
	"autograd::engine::evaluate_function: AddBackward0",
	"autograd::engine::evaluate_function: ReluBackward0",
	"autograd::engine::evaluate_function: NativeLayerNormBackward0",
	"autograd::engine::evaluate_function: MeanBackward1",
	"autograd::engine::evaluate_function: LogSoftmaxBackward0",
	"autograd::engine::evaluate_function: NllLossBackward0",
	"autograd::engine::evaluate_function: ConvolutionBackward0",
	"autograd::engine::evaluate_function: AddBackward0",
	"autograd::engine::evaluate_function: CompiledFunctionBackward",
	"autograd::engine::evaluate_function: ViewBackward0"};

static void bwd_t_ops(gen_t *g, int r, int c)
{
	op_open(g, "aten::t", SIG(g, "t[%d,%d]", r, c));
	op_open(g, "aten::transpose", SIG(g, "t[%d,%d];s=0;s=1", r, c));
	op_leaf(g, "aten::as_strided", SIG(g, "t[%d,%d];L=[%d, %d];L=[1, %d];n", r, c, c, r, c));
	close_n(g, 2);
}

/* AddmmBackward0 for y[m,n] = x[m,k] W^T: grad input, grad weight, grad bias. */
static void bwd_addmm(gen_t *g, const bw_t *b)
{
	int m = b->d[0], k = b->d[1], n = b->d[2], layer = b->d[3] / 16, site = b->d[3] % 16;
	bwd_t_ops(g, k, n);
	op_open(g, "aten::mm", SIG(g, "t[%d,%d];t[%d,%d]", m, n, n, k));
	launch_gemm(g, F_NVJET, lkey(layer, site + 20), (uint64_t)m, (uint64_t)k, (uint64_t)n, 1);
	ev_close(g);
	bwd_t_ops(g, m, n);
	op_open(g, "aten::mm", SIG(g, "t[%d,%d];t[%d,%d]", n, m, m, k));
	launch_gemm(g, (layer + site) % 2 ? F_NVJET : F_GEMM, lkey(layer, site + 40), (uint64_t)n, (uint64_t)k, (uint64_t)m, 1);
	ev_close(g);
	bwd_t_ops(g, n, k);
	op_open(g, "aten::sum", SIG(g, "t[%d,%d];L=[0];s=True;n", m, n));
	launch_rows(g, F_REDUCE, lkey(layer, site + 60), (uint64_t)n, (uint64_t)m);
	ev_close(g);
	op_leaf(g, "aten::view", SIG(g, "t[1,%d];L=[%d]", n, n));
}

static void bwd_bmm(gen_t *g, const bw_t *b)
{
	const cfg_t *c = &g->c;
	int m = b->d[0], k = b->d[1], n = b->d[2], layer = b->d[3] / 16, site = b->d[3] % 16;
	int BH = c->B * c->NH;
	op_leaf(g, "aten::transpose", SIG(g, "t[%d,%d,%d];s=1;s=2", BH, k, n));
	op_open(g, "aten::bmm", SIG(g, "t[%d,%d,%d];t[%d,%d,%d]", BH, m, n, BH, n, k));
	launch_gemm(g, F_BMM, lkey(layer, site + 80), (uint64_t)m, (uint64_t)k, (uint64_t)n, (uint64_t)BH);
	ev_close(g);
	op_leaf(g, "aten::transpose", SIG(g, "t[%d,%d,%d];s=1;s=2", BH, m, k));
	op_open(g, "aten::bmm", SIG(g, "t[%d,%d,%d];t[%d,%d,%d]", BH, k, m, BH, m, n));
	launch_gemm(g, F_BMM, lkey(layer, site + 90), (uint64_t)k, (uint64_t)n, (uint64_t)m, (uint64_t)BH);
	ev_close(g);
}

static void bwd_ln(gen_t *g, const bw_t *b)
{
	int B = b->d[0], N = b->d[1], H = b->d[2], layer = b->d[3];
	op_open(g, "aten::native_layer_norm_backward", SIG(g, "t[%d,%d,%d];t[%d,%d,%d];L=[%d];f[%d,%d,1];f[%d,%d,1];t[%d];t[%d];L=[True, True, True]", B, N, H, B, N, H, H, B, N, B, N, H, H));
	op_empty(g, "aten::empty_like", SIG(g, "t[%d,%d,%d];n;n;n;n;n", B, N, H), (uint64_t)B * N * H * 2);
	op_empty(g, "aten::empty_like", SIG(g, "t[%d];n;n;n;n;n", H), (uint64_t)H * 2);
	op_empty(g, "aten::empty_like", SIG(g, "t[%d];n;n;n;n;n", H), (uint64_t)H * 2);
	launch_rows(g, F_LN_BWD, lkey(layer, 30), (uint64_t)B * N, (uint64_t)H);
	launch_rows(g, F_GAMMA_BETA, lkey(layer, 31), (uint64_t)H / 32, (uint64_t)B * N);
	ev_close(g);
}

static void bwd_unbind(gen_t *g)
{
	const cfg_t *c = &g->c;
	int B = c->B, NH = c->NH, N = c->N, HD = c->HD;
	op_open(g, "aten::stack", SIG(g, "t[%d,%d,%d,%d];s=0", B, NH, N, HD));
	for (int i = 0; i < 3; i++) {
		op_open(g, "aten::unsqueeze", SIG(g, "t[%d,%d,%d,%d];s=0", B, NH, N, HD));
		op_leaf(g, "aten::as_strided", SIG(g, "t[%d,%d,%d,%d];L=[1, %d, %d, %d, %d];n;n", B, NH, N, HD, B, NH, N, HD));
		ev_close(g);
	}
	op_open(g, "aten::cat", SIG(g, "t[1,%d,%d,%d,%d];s=0", B, NH, N, HD));
	launch_rows(g, F_CAT, 40, (uint64_t)3 * B * NH, (uint64_t)N * HD);
	close_n(g, 2);
}

static void bwd_conv(gen_t *g)
{
	const cfg_t *c = &g->c;
	int B = c->B, I = c->I, P = c->P, H = c->H, G = c->G;
	op_open(g, "aten::convolution_backward", SIG(g, "t[%d,%d,%d,%d];t[%d,3,%d,%d];t[%d,3,%d,%d];L=[%d];L=[%d, %d];L=[0, 0];L=[1, 1];s=False;L=[0, 0];s=1;L=[False, True, True]", B, H, G, G, B, I, I, H, P, P, H, P, P));
	launch_rows(g, F_REDUCE, 41, (uint64_t)H, (uint64_t)B * G * G);
	launch_elem(g, F_NCHW2NHWC, 42, (uint64_t)B * H * G * G);
	launch_gemm(g, F_CONV_WGRAD, 43, (uint64_t)H, (uint64_t)3 * P * P, (uint64_t)B * G * G, 1);
	launch_elem(g, F_NHWC2NCHW, 44, (uint64_t)H * 3 * P * P);
	ev_close(g);
}

static void bwd_nll(gen_t *g)
{
	const cfg_t *c = &g->c;
	int B = c->B, C = c->C;
	op_open(g, "aten::nll_loss_backward", SIG(g, "f[];f[%d,%d];l[%d];n;s=1;s=-100;f[]", B, C, B));
	op_open(g, "aten::zero_", SIG(g, "f[%d,%d]", B, C));
	gpu_memset(g, (uint64_t)B * C * 4);
	ev_close(g);
	launch_rows(g, F_NLL_BWD, 45, 1, (uint64_t)B);
	ev_close(g);
}

/* Views and other nodes that only touch metadata. */
static void bwd_view_like(gen_t *g, const bw_t *b)
{
	const cfg_t *c = &g->c;
	int B = c->B, N = c->N, H = c->H, NH = c->NH, HD = c->HD;
	switch (b->kind) {
	case BW_VIEW:
		op_leaf(g, "aten::view", SIG(g, "t[%d,%d];L=[%d, %d, %d]", b->d[0] * b->d[1], b->d[2], b->d[0], b->d[1], b->d[2]));
		break;
	case BW_VIEW_FLAT:
		op_leaf(g, "aten::view", SIG(g, "t[%d,%d,%d];L=[%d, %d]", b->d[0], b->d[1], b->d[2], b->d[0] * b->d[1], b->d[2]));
		break;
	case BW_T:
		bwd_t_ops(g, b->d[1], b->d[0]);
		break;
	case BW_PERMUTE:
		op_open(g, "aten::permute", SIG(g, "t[3,%d,%d,%d,%d];L=[1, 3, 0, 2, 4]", B, NH, N, HD));
		op_leaf(g, "aten::as_strided", SIG(g, "t[3,%d,%d,%d,%d];L=[%d, %d, 3, %d, %d];n;n", B, NH, N, HD, B, N, NH, HD));
		ev_close(g);
		break;
	case BW_TRANSPOSE:
		op_leaf(g, "aten::transpose", SIG(g, "t[%d,%d,%d,%d];s=%d;s=%d", B, NH, HD, N, b->d[0], b->d[1]));
		break;
	case BW_UNSAFE_VIEW:
		op_open(g, "aten::reshape", SIG(g, "t[%d,%d,%d];L=[%d, %d, %d]", B, N, H, B, N, H));
		op_leaf(g, "aten::view", SIG(g, "t[%d,%d,%d];L=[%d, %d, %d]", B, N, H, B, N, H));
		ev_close(g);
		break;
	case BW_FLATTEN:
		op_leaf(g, "aten::view", SIG(g, "t[%d,%d,%d];L=[%d, %d, %d, %d]", B, H, N, B, H, c->G, c->G));
		break;
	default:
		break;
	}
}

static void bwd_elementwise(gen_t *g, const bw_t *b, int layer)
{
	const cfg_t *c = &g->c;
	int B = c->B, N = c->N, H = c->H, NH = c->NH, FF = c->FF;
	switch (b->kind) {
	case BW_MUL:
		op_open(g, "aten::mul", SIG(g, "t[%d,%d,%d,%d];s=0.125", B, NH, N, N));
		launch_elem(g, F_E_MULS, lkey(layer, 50), (uint64_t)B * NH * N * N);
		break;
	case BW_SOFTMAX:
		op_open(g, "aten::_softmax_backward_data", SIG(g, "t[%d,%d,%d,%d];t[%d,%d,%d,%d];s=-1;s=15", B, NH, N, N, B, NH, N, N));
		launch_rows(g, F_SM_BWD, lkey(layer, 51), (uint64_t)B * NH * N, (uint64_t)N);
		break;
	case BW_ACT:
		if (c->relu) {
			op_open(g, "aten::threshold_backward", SIG(g, "t[%d,%d,%d];t[%d,%d,%d];s=0", B, N, FF, B, N, FF));
			launch_elem(g, F_E_THRESH, lkey(layer, 52), (uint64_t)B * N * FF);
		} else {
			op_open(g, "aten::gelu_backward", SIG(g, "t[%d,%d,%d];t[%d,%d,%d];s=none", B, N, FF, B, N, FF));
			launch_elem(g, F_E_GELUB, lkey(layer, 52), (uint64_t)B * N * FF);
		}
		break;
	case BW_MEAN:
		op_open(g, "aten::div", SIG(g, "t[%d,%d,%d];s=%d", B, N, H, N));
		launch_elem(g, F_E_DIV, 53, (uint64_t)B * N * H);
		break;
	case BW_ADDPOS:
		op_open(g, "aten::sum", SIG(g, "t[%d,%d,%d];L=[0];s=True;n", B, N, H));
		launch_rows(g, F_REDUCE, 54, (uint64_t)N * H, (uint64_t)B);
		break;
	case BW_LOGSM:
		op_open(g, "aten::_log_softmax_backward_data", SIG(g, "f[%d,%d];f[%d,%d];s=1;s=15", B, c->C, B, c->C));
		launch_rows(g, F_LSM_BWD, 55, (uint64_t)B, (uint64_t)c->C);
		break;
	default:
		return;
	}
	ev_close(g);
}

static void bwd_compiled(gen_t *g, int layer)
{
	const cfg_t *c = &g->c;
	uint64_t numel = (uint64_t)c->B * c->N * c->H;
	launch_triton(g, F_TRITON_RED, 2 * layer, numel);
	launch_triton(g, F_TRITON_POI, 2 * layer + 1 + 2 * c->L, numel);
}

static void bwd_body(gen_t *g, const bw_t *b)
{
	switch (b->kind) {
	case BW_ADDMM:
	case BW_ADDMM2: bwd_addmm(g, b); break;
	case BW_BMM: bwd_bmm(g, b); break;
	case BW_LN: bwd_ln(g, b); break;
	case BW_UNBIND: bwd_unbind(g); break;
	case BW_CONV: bwd_conv(g); break;
	case BW_NLL: bwd_nll(g); break;
	case BW_COMPILED: bwd_compiled(g, b->d[0]); break;
	case BW_MUL: bwd_elementwise(g, b, 0); break;
	case BW_SOFTMAX:
	case BW_ACT: bwd_elementwise(g, b, (int)(b->seq % 6)); break;
	case BW_MEAN:
	case BW_ADDPOS:
	case BW_LOGSM: bwd_elementwise(g, b, 0); break;
	default: bwd_view_like(g, b); break;
	}
}

/* The "Input Dims" of a backward node: the shape of the incoming gradient. */
static int32_t bwd_node_sig(gen_t *g, const bw_t *b)
{
	const cfg_t *c = &g->c;
	switch (b->kind) {
	case BW_ADDMM: return SIG(g, "t[%d,%d]", b->d[0], b->d[2]);
	case BW_ADDMM2: return SIG(g, "t[%d,%d]", c->B, c->C);
	case BW_LOGSM: return SIG(g, "f[%d,%d]", c->B, c->C);
	case BW_NLL: return SIG(g, "f[]", 0);
	case BW_MEAN: return SIG(g, "t[%d,%d]", c->B, c->H);
	case BW_ACT: return SIG(g, "t[%d,%d,%d]", c->B, c->N, c->FF);
	case BW_SOFTMAX:
	case BW_MUL: return SIG(g, "t[%d,%d,%d,%d]", c->B, c->NH, c->N, c->N);
	case BW_CONV: return SIG(g, "t[%d,%d,%d,%d]", c->B, c->H, c->G, c->G);
	default: return SIG(g, "t[%d,%d,%d]", c->B, c->N, c->H);
	}
}

static void ddp_allreduce(gen_t *g, uint64_t nelems);

static void bwd_accumulate(gen_t *g, const bw_t *b)
{
	const cfg_t *c = &g->c;
	int p = b->d[0];
	op_open(g, BW_EVAL[BW_ACC], -1);
	op_open(g, BW_NODE[BW_ACC], -1);
	op_open(g, "aten::detach", SIG(g, "t[%d]", c->pdim[p][0]));
	op_leaf(g, "detach", SIG(g, "t[%d]", c->pdim[p][0]));
	close_n(g, 3);
	uint64_t n = 1;
	for (int k = 0; k < c->pnd[p]; k++)
		n *= (uint64_t)c->pdim[p][k];
	g->bucket += n;
	if (g->bucket * 2 >= BUCKET_BYTES) {
		ddp_allreduce(g, g->bucket);
		g->bucket = 0;
	}
}

static void bwd_item(gen_t *g, const bw_t *b)
{
	if (b->kind == BW_ACC) {
		bwd_accumulate(g, b);
		return;
	}
	int gelu = b->kind == BW_ACT && !g->c.relu;
	int32_t e = op_open(g, gelu ? "autograd::engine::evaluate_function: GeluBackward0" : BW_EVAL[b->kind], -1);
	g->ev[e].seq = b->seq;
	g->ev[e].fwdtid = 1;
	e = op_open(g, gelu ? "GeluBackward0" : BW_NODE[b->kind], bwd_node_sig(g, b));
	cev_t *n = &g->ev[e];
	n->seq = b->seq;
	n->fwdtid = 1;
	n->flow = b->flow;
	n->flowph = 'f';
	bwd_body(g, b);
	close_n(g, 2);
}

/* Comms args of record_param_comms, split around "Ev Idx" as PyTorch writes them. */
static int32_t comm_sig(gen_t *g, uint64_t nelems)
{
	const cfg_t *c = &g->c;
	for (int i = 0; i < g->ncomm; i++)
		if (g->comm_n[i] == nelems)
			return g->comm_sig[i];
	sb_t pre = {0}, post = {0};
	sb_fmt(&pre, "\"Process Group Name\": \"0\", \"Global rank stride\": 1, \"Out msg nelems\": %llu, ", (unsigned long long)nelems);
	sb_str(&pre, "\"Process Group Ranks\": \"");
	sb_str(&pre, c->ranks_str);
	sb_fmt(&pre, "\", \"Group size\": %d, \"Global rank start\": 0, ", c->world);
	sb_fmt(&post, ", \"In msg nelems\": %llu, \"In split size\": \"[]\", \"Out split size\": \"[]\", \"dtype\": \"BFloat16\", \"Process Group Description\": \"default_pg\", \"Collective name\": \"allreduce\"", (unsigned long long)nelems);
	sig_t s = {pre.p, post.p, (uint32_t)pre.n, (uint32_t)post.n};
	int32_t id = sig_add(&g->st, s);
	if (g->ncomm < 32) {
		g->comm_n[g->ncomm] = nelems;
		g->comm_sig[g->ncomm++] = id;
	}
	return id;
}

/* DDP gradient bucket all-reduce, launched from the autograd thread. */
static void ddp_allreduce(gen_t *g, uint64_t nelems)
{
	op_open(g, "c10d::allreduce_", -1);
	op_open(g, "record_param_comms", comm_sig(g, nelems));
	ev_open(g, C_ANN, "nccl:all_reduce", SIG(g, "t[%d]", (int)nelems));
	uint64_t rec = rt_orphan(g, "cudaEventRecord", 135);
	stream_wait(g, rec);
	kspec_t k;
	k_nccl(g, &k, nelems);
	launch(g, &k);
	rt_orphan(g, "cudaEventRecord", 135);
	close_n(g, 3);
}

static void backward(gen_t *g)
{
	py_open(g, "torch/_tensor.py(648): backward");
	py_open(g, "torch/autograd/__init__.py(353): backward");
	py_open(g, "torch/autograd/graph.py(824): _engine_run_backward");
	py_open(g, "<built-in method run_backward of torch._C._EngineBase object at 0x7f3c7d1e2b50>");
	g->thr = 1;
	g->cur[1] = g->cur[0] + rnd_range(&g->rs, 5000, 20000);
	g->bucket = 0;
	for (size_t i = g->nbw; i-- > 0;)
		bwd_item(g, &g->bw[i]);
	if (g->bucket)
		ddp_allreduce(g, g->bucket);
	g->thr = 0;
	g->cur[0] = max_u64(g->cur[0], g->cur[1] + rnd_range(&g->rs, 5000, 20000));
	close_n(g, 4);
}

/* ------------------------------------------------------------------ */
/* Optimizer, data loading and the whole step                           */

static void optimizer(gen_t *g)
{
	static const char *ops[] = {"aten::_foreach_add_", "aten::_foreach_lerp_", "aten::_foreach_mul_",
	                            "aten::_foreach_addcmul_", "aten::_foreach_sqrt", "aten::_foreach_div_",
	                            "aten::_foreach_add_", "aten::_foreach_addcdiv_"};
	static const char *specs[] = {"P;s=1", "P;P;s=0.09999999999999998", "P;s=0.999", "P;P;P;s=0.0010000000000000009",
	                              "P", "P;s=0.9984995", "P;s=1e-08", "P;P;P;s=-0.0001"};
	py_open(g, "torch/optim/optimizer.py(485): wrapper");
	py_open(g, "torch/optim/optimizer.py(79): _use_grad");
	py_open(g, "torch/optim/adamw.py(209): step");
	ev_open(g, C_ANN, "Optimizer.step#AdamW.step", -1);
	g->s.sfree[S_COMPUTE] = max_u64(g->s.sfree[S_COMPUTE], g->s.sfree[S_NCCL]);
	int chunks = 1 + g->c.nparam / 48;
	for (int i = 0; i < 8; i++) {
		op_open(g, ops[i], SIG(g, specs[i], 0));
		for (int k = 0; k < chunks; k++)
			launch_elem(g, F_MTA, (uint64_t)i * 3 + strlen(specs[i]), g->c.param_elems / (uint64_t)chunks);
		ev_close(g);
	}
	close_n(g, 4);
}

/* Host-to-device copy of a batch tensor through aten::to. */
static void load_tensor(gen_t *g, int32_t sig_to, int32_t sig_empty, uint64_t bytes)
{
	op_open(g, "aten::to", sig_to);
	op_open(g, "aten::_to_copy", sig_to);
	op_empty(g, "aten::empty_strided", sig_empty, bytes);
	op_open(g, "aten::copy_", sig_to);
	gpu_memcpy(g, 0, bytes);
	close_n(g, 3);
}

static void data_load(gen_t *g)
{
	const cfg_t *c = &g->c;
	int B = c->B, I = c->I;
	py_open(g, "torch/utils/data/dataloader.py(733): __next__");
	py_open(g, "torch/utils/data/dataloader.py(1480): _next_data");
	py_open(g, "torch/utils/data/dataloader.py(1432): _get_data");
	adv(g, 150000, 900000);
	close_n(g, 3);
	uint64_t img = (uint64_t)B * 3 * I * I;
	load_tensor(g, SIG(g, "f[%d,3,%d,%d];n;n;n;s=True;s=False;n", B, I, I), SIG(g, "L=[%d, 3, %d, %d];L=[%d, %d, %d, 1];n;n;n;n", B, I, I, 3 * I * I, I * I, I), img * 4);
	load_tensor(g, SIG(g, "l[%d];n;n;n;s=True;s=False;n", B), SIG(g, "L=[%d];L=[1];n;n;n;n", B), (uint64_t)B * 8);
	op_open(g, "aten::to", SIG(g, "f[%d,3,%d,%d];s=15;s=False;s=False;n", B, I, I));
	op_open(g, "aten::_to_copy", SIG(g, "f[%d,3,%d,%d];s=15;n;n;n;s=False;n", B, I, I));
	op_empty(g, "aten::empty_strided", SIG(g, "L=[%d, 3, %d, %d];L=[%d, %d, %d, 1];s=15;n;n;n", B, I, I, 3 * I * I, I * I, I), img * 2);
	op_open(g, "aten::copy_", SIG(g, "t[%d,3,%d,%d];f[%d,3,%d,%d];s=False", B, I, I, B, I, I));
	launch_elem(g, F_E_COPYF, 60, img);
	close_n(g, 3);
}

static void loss_item(gen_t *g)
{
	py_open(g, "<method 'item' of 'torch._C.TensorBase' objects>");
	op_open(g, "aten::item", SIG(g, "f[]", 0));
	op_open(g, "aten::_local_scalar_dense", SIG(g, "f[]", 0));
	gpu_memcpy(g, 1, 4);
	stream_sync(g);
	close_n(g, 3);
}

/* Seeds the per-step generator and resets the model arrays. */
static void step_reset(gen_t *g, const state_t *st)
{
	g->s = *st;
	g->rs = mix64(g->c.seed ^ mix64(st->step * 0x2545F4914F6CDD1DULL + (uint64_t)g->c.rank));
	g->nev = g->ngv = g->nbw = 0;
	g->sp[0] = g->sp[1] = 0;
	g->thr = 0;
	g->cur[0] = g->cur[1] = st->ts;
	g->nring = 0;
	g->mem_total = g->c.param_elems * 2 * 4 + (1ULL << 30);
}

/* Builds the model of one profiler step; g->s then holds the state for the next step. */
static void gen_step(gen_t *g, const state_t *st)
{
	step_reset(g, st);
	snprintf(g->stepname, sizeof g->stepname, "ProfilerStep#%llu", (unsigned long long)(g->c.step0 + st->step));
	ev_open(g, C_ANN, g->stepname, -1);
	py_open(g, "train.py(96): train_step");
	data_load(g);
	ev_open(g, C_ANN, "Optimizer.zero_grad#AdamW.zero_grad", -1);
	ev_close(g);
	forward(g);
	backward(g);
	optimizer(g);
	loss_item(g);
	mem_free_all(g);
	close_n(g, 2);
	g->s.ts = g->cur[0] + rnd_range(&g->rs, 30000, 400000);
	g->s.step++;
}

/* ------------------------------------------------------------------ */
/* Writing events                                                       */

static void w_head(gen_t *g, out_t *o, const char *ph_cat, const cev_t *e)
{
	out_mem(o, ph_cat, strlen(ph_cat));
	out_mem(o, e->name, e->nlen);
	OUT(o, "\", \"pid\": ");
	out_u64(o, (uint64_t)g->c.pid);
	OUT(o, ", \"tid\": ");
	out_u64(o, (uint64_t)(e->thr ? g->c.tid_ag : g->c.pid));
	OUT(o, ",\n    \"ts\": ");
	out_us3(o, e->ts);
	OUT(o, ", \"dur\": ");
	out_us3(o, e->dur);
	OUT(o, ",\n    \"args\": {\n      ");
}

static void w_flow(out_t *o, char ph, const char *cat, uint64_t id, uint64_t pid, uint64_t tid, uint64_t ts)
{
	OUT(o, "  {\n    \"ph\": \"");
	out_mem(o, &ph, 1);
	OUT(o, "\", \"id\": ");
	out_u64(o, id);
	OUT(o, ", \"pid\": ");
	out_u64(o, pid);
	OUT(o, ", \"tid\": ");
	out_u64(o, tid);
	OUT(o, ", \"ts\": ");
	out_us3(o, ts);
	OUT(o, ",\n    \"cat\": \"");
	out_cstr(o, cat);
	OUT(o, "\", \"name\": \"");
	out_cstr(o, cat);
	if (ph == 'f')
		OUT(o, "\", \"bp\": \"e\"\n  },\n");
	else
		OUT(o, "\"\n  },\n");
}

static void w_op(gen_t *g, out_t *o, const cev_t *e)
{
	if (e->type == C_ANN)
		w_head(g, o, "  {\n    \"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"", e);
	else
		w_head(g, o, "  {\n    \"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"", e);
	OUT(o, "\"External id\": ");
	out_u64(o, e->ext);
	OUT(o, ",\"Record function id\": 0, ");
	if (e->seq >= 0) {
		OUT(o, "\"Sequence number\": ");
		out_u64(o, (uint64_t)e->seq);
		OUT(o, ", \"Fwd thread id\": ");
		out_u64(o, e->fwdtid);
		OUT(o, ", ");
	}
	const sig_t *s = e->sig >= 0 ? &g->st.s[e->sig] : NULL;
	if (s)
		out_mem(o, s->pre, s->npre);
	OUT(o, "\"Ev Idx\": ");
	out_u64(o, g->ev_idx++);
	if (s)
		out_mem(o, s->post, s->npost);
	OUT(o, "\n    }\n  },\n");
	if (e->flowph)
		w_flow(o, (char)e->flowph, "fwdbwd", e->flow, (uint64_t)g->c.pid,
		       (uint64_t)(e->thr ? g->c.tid_ag : g->c.pid), e->ts);
}

static void w_mem(gen_t *g, out_t *o, const cev_t *e)
{
	uint64_t reserved = ceil_div(e->mtotal, 2u << 20) * (2u << 20) + (512u << 20);
	OUT(o, "  {\n    \"ph\": \"i\", \"cat\": \"cpu_instant_event\", \"s\": \"t\", \"name\": \"[memory]\",\n    \"pid\": ");
	out_u64(o, (uint64_t)g->c.pid);
	OUT(o, ", \"tid\": ");
	out_u64(o, (uint64_t)(e->thr ? g->c.tid_ag : g->c.pid));
	OUT(o, ",\n    \"ts\": ");
	out_us3(o, e->ts);
	OUT(o, ",\n    \"args\": {\n      \"Total Reserved\": ");
	out_u64(o, reserved);
	OUT(o, ", \"Total Allocated\": ");
	out_u64(o, e->mtotal);
	OUT(o, ", \"Bytes\": ");
	out_i64(o, e->mbytes);
	OUT(o, ", \"Device Id\": ");
	out_u64(o, (uint64_t)g->c.dev);
	OUT(o, ", \"Device Type\": 1, \"Addr\": ");
	out_u64(o, e->maddr);
	OUT(o, ", \"Ev Idx\": ");
	out_u64(o, g->ev_idx++);
	OUT(o, "\n    }\n  },\n");
}

static void w_py(gen_t *g, out_t *o, const cev_t *e)
{
	w_head(g, o, "  {\n    \"ph\": \"X\", \"cat\": \"python_function\", \"name\": \"", e);
	OUT(o, "\"Python parent id\": ");
	if (e->pypar)
		out_u64(o, e->pypar);
	else
		OUT(o, "null");
	OUT(o, ", \"Python id\": ");
	out_u64(o, e->pyid);
	OUT(o, ", \"Ev Idx\": ");
	out_u64(o, g->ev_idx++);
	OUT(o, "\n    }\n  },\n");
}

static void w_rt(gen_t *g, out_t *o, const cev_t *e)
{
	if (e->drv)
		w_head(g, o, "  {\n    \"ph\": \"X\", \"cat\": \"cuda_driver\", \"name\": \"", e);
	else
		w_head(g, o, "  {\n    \"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"", e);
	if (e->ext) {
		OUT(o, "\"External id\": ");
		out_u64(o, e->ext);
		OUT(o, ",");
	}
	OUT(o, "      \"cbid\": ");
	out_u64(o, e->cbid);
	OUT(o, ", \"correlation\": ");
	out_u64(o, e->corr);
	OUT(o, "\n    }\n  },\n");
	uint64_t tid = (uint64_t)(e->thr ? g->c.tid_ag : g->c.pid);
	w_flow(o, e->rtk == RT_GPU ? 's' : 'f', "ac2g", e->corr, (uint64_t)g->c.pid, tid, e->ts);
}

static uint64_t stream_id(const gen_t *g, int s)
{
	return s == S_NCCL ? (uint64_t)g->c.nccl_stream : 7;
}

static void w_ghead(gen_t *g, out_t *o, const char *cat, const gev_t *a)
{
	OUT(o, "  {\n    \"ph\": \"X\", \"cat\": \"");
	out_cstr(o, cat);
	OUT(o, "\", \"name\": \"");
	out_mem(o, a->name, a->nlen);
	OUT(o, "\", \"pid\": ");
	out_u64(o, (uint64_t)g->c.dev);
	OUT(o, ", \"tid\": ");
	out_u64(o, stream_id(g, a->stream));
	OUT(o, ",\n    \"ts\": ");
	out_us3(o, a->ts);
	OUT(o, ", \"dur\": ");
	out_us3(o, a->dur);
	OUT(o, ",\n    \"args\": {\n      ");
	if (a->ext) {
		OUT(o, "\"External id\": ");
		out_u64(o, a->ext);
		OUT(o, ",");
	}
}

static void w_dims3(out_t *o, const uint32_t *v)
{
	OUT(o, "[");
	out_u64(o, v[0]);
	OUT(o, ", ");
	out_u64(o, v[1]);
	OUT(o, ", ");
	out_u64(o, v[2]);
	OUT(o, "]");
}

static void w_collective(gen_t *g, out_t *o, const gev_t *a)
{
	OUT(o, ", \"Collective name\": \"allreduce\", \"In msg nelems\": ");
	out_u64(o, a->nelems);
	OUT(o, ", \"Out msg nelems\": ");
	out_u64(o, a->nelems);
	OUT(o, ", \"Group size\": ");
	out_u64(o, (uint64_t)g->c.world);
	OUT(o, ", \"dtype\": \"BFloat16\", \"In split size\": \"[]\", \"Out split size\": \"[]\", \"Process Group Name\": \"0\", \"Process Group Description\": \"default_pg\", \"Process Group Ranks\": \"");
	out_cstr(o, g->c.ranks_str);
	OUT(o, "\"");
}

static void w_kernel(gen_t *g, out_t *o, const gev_t *a)
{
	uint64_t blocks = (uint64_t)a->grid[0] * a->grid[1] * a->grid[2];
	uint64_t bps = (blocks * 1000000 + NUM_SMS / 2) / NUM_SMS;
	uint64_t warps = (uint64_t)a->block[0] * a->block[1] * a->block[2] / 32;
	w_ghead(g, o, "kernel", a);
	OUT(o, "      \"queued\": 0, \"device\": ");
	out_u64(o, (uint64_t)g->c.dev);
	OUT(o, ", \"context\": 1,      \"stream\": ");
	out_u64(o, stream_id(g, a->stream));
	OUT(o, ", \"correlation\": ");
	out_u64(o, a->corr);
	OUT(o, ",      \"registers per thread\": ");
	out_u64(o, a->regs);
	OUT(o, ",      \"shared memory\": ");
	out_u64(o, a->smem);
	OUT(o, ",      \"blocks per SM\": ");
	out_fix6(o, bps);
	OUT(o, ",      \"warps per SM\": ");
	out_fix6(o, (blocks * warps * 1000000 + NUM_SMS / 2) / NUM_SMS);
	OUT(o, ",      \"grid\": ");
	w_dims3(o, a->grid);
	OUT(o, ",      \"block\": ");
	w_dims3(o, a->block);
	OUT(o, ",      \"est. achieved occupancy %\": ");
	out_u64(o, a->occ);
	if (a->nccl)
		w_collective(g, o, a);
	OUT(o, "\n    }\n  },\n");
}

static void w_copy(gen_t *g, out_t *o, const gev_t *a)
{
	w_ghead(g, o, a->type == G_MEMCPY ? "gpu_memcpy" : "gpu_memset", a);
	OUT(o, "      \"device\": ");
	out_u64(o, (uint64_t)g->c.dev);
	OUT(o, ", \"context\": 1,      \"stream\": ");
	out_u64(o, stream_id(g, a->stream));
	OUT(o, ", \"correlation\": ");
	out_u64(o, a->corr);
	OUT(o, ",      \"bytes\": ");
	out_u64(o, a->bytes);
	OUT(o, ", \"memory bandwidth (GB/s)\": ");
	out_double(o, (double)a->bytes / (double)(a->dur ? a->dur : 1));
	OUT(o, "\n    }\n  },\n");
}

static void w_sync(gen_t *g, out_t *o, const gev_t *a)
{
	w_ghead(g, o, "cuda_sync", a);
	OUT(o, "      \"cuda_sync_kind\": \"");
	out_mem(o, a->name, a->nlen);
	OUT(o, "\",      ");
	if (a->type == G_WAIT) {
		OUT(o, "\"wait_on_stream\": 7,      \"wait_on_cuda_event_record_corr_id\": ");
		out_u64(o, a->wait_corr);
		OUT(o, ",      \"wait_on_cuda_event_id\": ");
		out_u64(o, a->event_id);
		OUT(o, ",      ");
	}
	OUT(o, "\"stream\": ");
	out_u64(o, stream_id(g, a->stream));
	OUT(o, ", \"correlation\": ");
	out_u64(o, a->corr);
	OUT(o, ",      \"device\": ");
	out_u64(o, (uint64_t)g->c.dev);
	OUT(o, ", \"context\": 1\n    }\n  },\n");
}

static void w_gpu(gen_t *g, out_t *o, const gev_t *a)
{
	switch (a->type) {
	case G_KERNEL: w_kernel(g, o, a); break;
	case G_MEMCPY:
	case G_MEMSET: w_copy(g, o, a); break;
	default: w_sync(g, o, a); break;
	}
	w_flow(o, 'f', "ac2g", a->corr, (uint64_t)g->c.dev, stream_id(g, a->stream), a->ts);
}

/* The GPU span of a user annotation, written as a gpu_user_annotation. */
static void w_gpu_ann(gen_t *g, out_t *o, const cev_t *e)
{
	uint64_t t0 = UINT64_MAX, t1 = 0;
	int nccl = 1;
	for (int32_t i = e->g0; i < e->g1; i++) {
		const gev_t *a = &g->gv[i];
		t0 = a->ts < t0 ? a->ts : t0;
		t1 = max_u64(t1, a->ts + a->dur);
		nccl &= a->stream == S_NCCL;
	}
	OUT(o, "  {\n    \"ph\": \"X\", \"cat\": \"gpu_user_annotation\", \"name\": \"");
	out_mem(o, e->name, e->nlen);
	OUT(o, "\", \"pid\": ");
	out_u64(o, (uint64_t)g->c.dev);
	OUT(o, ", \"tid\": ");
	out_u64(o, stream_id(g, nccl ? S_NCCL : S_COMPUTE));
	OUT(o, ",\n    \"ts\": ");
	out_us3(o, t0);
	OUT(o, ", \"dur\": ");
	out_us3(o, t1 - t0);
	OUT(o, ",\n    \"args\": {\n      \"External id\": ");
	out_u64(o, e->ext);
	OUT(o, "\n    }\n  },\n");
}

/* ------------------------------------------------------------------ */
/* Passes over the steps, in the order Kineto writes them               */

enum { PASS_CPU_AG, PASS_CPU_MAIN, PASS_MEM, PASS_PY, PASS_GPU, PASS_GPU_ANN, PASS_COUNT };

static void pass_cpu(gen_t *g, out_t *o, int thr)
{
	for (size_t i = 0; i < g->nev; i++) {
		const cev_t *e = &g->ev[i];
		if (e->thr != thr)
			continue;
		if (e->type == C_OP || e->type == C_ANN)
			w_op(g, o, e);
		else if (e->type == C_MEM && !g->mem_last)
			w_mem(g, o, e);
	}
}

/* With --memory-last: the [memory] events of both threads, after every CPU op. */
static void pass_mem(gen_t *g, out_t *o)
{
	for (size_t i = 0; i < g->nev; i++)
		if (g->ev[i].type == C_MEM)
			w_mem(g, o, &g->ev[i]);
}

static void pass_py(gen_t *g, out_t *o)
{
	for (size_t i = 0; i < g->nev; i++)
		if (g->ev[i].type == C_PY)
			w_py(g, o, &g->ev[i]);
}

/* Runtime calls with their flows, interleaved with GPU activity as it completes. */
static void pass_gpu(gen_t *g, out_t *o)
{
	size_t k = 0;
	for (size_t i = 0; i < g->nev; i++) {
		const cev_t *e = &g->ev[i];
		if (e->type != C_RT)
			continue;
		w_rt(g, o, e);
		uint64_t end = e->ts + e->dur;
		while (k < g->ngv && g->gv[k].ts + g->gv[k].dur <= end)
			w_gpu(g, o, &g->gv[k++]);
	}
	while (k < g->ngv)
		w_gpu(g, o, &g->gv[k++]);
}

static void pass_gpu_ann(gen_t *g, out_t *o)
{
	for (size_t i = 0; i < g->nev; i++) {
		const cev_t *e = &g->ev[i];
		if (e->type == C_ANN && e->g1 > e->g0)
			w_gpu_ann(g, o, e);
	}
}

static void pass_step(gen_t *g, out_t *o, int pass)
{
	switch (pass) {
	case PASS_CPU_AG: pass_cpu(g, o, 1); break;
	case PASS_CPU_MAIN: pass_cpu(g, o, 0); break;
	case PASS_MEM: pass_mem(g, o); break;
	case PASS_PY: pass_py(g, o); break;
	case PASS_GPU: pass_gpu(g, o); break;
	default: pass_gpu_ann(g, o); break;
	}
}

/* ------------------------------------------------------------------ */
/* File header and trailer                                              */

static void w_header(gen_t *g, out_t *o)
{
	const cfg_t *c = &g->c;
	OUT(o, "\n{\n  \"schemaVersion\": 1,\n  \"deviceProperties\": [\n");
	for (int i = 0; i < c->ngpu; i++) {
		OUT(o, "    {\n      \"id\": ");
		out_u64(o, (uint64_t)i);
		OUT(o, ", \"name\": \"NVIDIA H100 80GB HBM3\", \"totalGlobalMem\": 84929347584,\n"
		       "      \"computeMajor\": 9, \"computeMinor\": 0,\n"
		       "      \"maxThreadsPerBlock\": 1024, \"maxThreadsPerMultiprocessor\": 2048,\n"
		       "      \"regsPerBlock\": 65536, \"warpSize\": 32,\n"
		       "      \"sharedMemPerBlock\": 49152, \"numSms\": 132\n"
		       "    , \"regsPerMultiprocessor\": 65536, \"sharedMemPerBlockOptin\": 232448, \"sharedMemPerMultiprocessor\": 233472\n    }");
		if (i + 1 < c->ngpu)
			OUT(o, ",");
		OUT(o, "\n");
	}
	OUT(o, "  ],\n  \"cupti_version\": 24,\n  \"cuda_runtime_version\": 12080,\n  \"cuda_driver_version\": 12080,\n");
	OUT(o, "  \"distributedInfo\": {\"backend\": \"nccl\", \"rank\": ");
	out_u64(o, (uint64_t)c->rank);
	OUT(o, ", \"world_size\": ");
	out_u64(o, (uint64_t)c->world);
	OUT(o, ", \"pg_count\": 1, \"pg_config\": [{\"pg_name\": \"0\", \"pg_desc\": \"default_pg\", \"backend_config\": \"cuda:nccl\", \"pg_size\": ");
	out_u64(o, (uint64_t)c->world);
	OUT(o, ", \"ranks\": ");
	out_cstr(o, c->ranks_str);
	OUT(o, "}], \"nccl_version\": \"2.21.5\"},\n  \"record_shapes\": 1,\n  \"with_stack\": 1,\n  \"trace_id\": \"");
	char id[40];
	snprintf(id, sizeof id, "%016llX%016llX", (unsigned long long)mix64(c->seed + 11),
	         (unsigned long long)mix64(c->seed + 12));
	out_cstr(o, id);
	OUT(o, "\",\n  \"displayTimeUnit\": \"ms\",\n  \"baseTimeNanoseconds\": ");
	out_u64(o, c->base_ns);
	OUT(o, ",\n  \"traceEvents\": [\n");
}

/* The three module-level Python frames that span the whole trace. */
static void w_global_py(gen_t *g, out_t *o, uint64_t t0, uint64_t t1)
{
	static const char *names[] = {"train.py(214): <module>", "train.py(201): main", "train.py(150): train"};
	for (int i = 0; i < 3; i++) {
		cev_t e;
		memset(&e, 0, sizeof e);
		e.name = names[i];
		e.nlen = (uint32_t)strlen(names[i]);
		e.ts = t0 + 40000 + 1500 * (uint64_t)i;
		e.dur = t1 - 30000 - 1200 * (uint64_t)i - e.ts;
		e.pyid = (uint64_t)i + 1;
		e.pypar = (uint64_t)i;
		w_py(g, o, &e);
	}
}

static void w_meta(out_t *o, const char *name, uint64_t ts, uint64_t pid, uint64_t tid, const char *key, const char *sval, int64_t ival)
{
	OUT(o, "  {\n    \"name\": \"");
	out_cstr(o, name);
	OUT(o, "\", \"ph\": \"M\", \"ts\": ");
	out_us3(o, ts);
	OUT(o, ", \"pid\": ");
	out_u64(o, pid);
	OUT(o, ", \"tid\": ");
	out_u64(o, tid);
	OUT(o, ",\n    \"args\": {\n      \"");
	out_cstr(o, key);
	OUT(o, "\": ");
	if (sval) {
		OUT(o, "\"");
		out_cstr(o, sval);
		OUT(o, "\"");
	} else {
		out_i64(o, ival);
	}
	OUT(o, "\n    }\n  },\n");
}

static void w_process_meta(gen_t *g, out_t *o, uint64_t t0)
{
	const cfg_t *c = &g->c;
	char lab[32];
	w_meta(o, "process_name", t0, (uint64_t)c->pid, 0, "name", "python3", 0);
	w_meta(o, "process_labels", t0, (uint64_t)c->pid, 0, "labels", "CPU", 0);
	w_meta(o, "process_sort_index", t0, (uint64_t)c->pid, 0, "sort_index", NULL, c->pid);
	for (int i = 0; i < c->ngpu; i++) {
		snprintf(lab, sizeof lab, "GPU %d", i);
		w_meta(o, "process_name", t0, (uint64_t)i, 0, "name", "python3", 0);
		w_meta(o, "process_labels", t0, (uint64_t)i, 0, "labels", lab, 0);
		w_meta(o, "process_sort_index", t0, (uint64_t)i, 0, "sort_index", NULL, 5000000 + i);
	}
}

static void w_thread_meta(gen_t *g, out_t *o, uint64_t t0)
{
	const cfg_t *c = &g->c;
	char nm[64];
	uint64_t streams[2] = {7, (uint64_t)c->nccl_stream};
	for (int i = 0; i < 2; i++) {
		snprintf(nm, sizeof nm, "stream %llu ", (unsigned long long)streams[i]);
		w_meta(o, "thread_name", t0, (uint64_t)c->dev, streams[i], "name", nm, 0);
		w_meta(o, "thread_sort_index", t0, (uint64_t)c->dev, streams[i], "sort_index", NULL, (int64_t)streams[i]);
	}
	snprintf(nm, sizeof nm, "thread %d (python3)", c->pid);
	w_meta(o, "thread_name", t0, (uint64_t)c->pid, (uint64_t)c->pid, "name", nm, 0);
	w_meta(o, "thread_sort_index", t0, (uint64_t)c->pid, (uint64_t)c->pid, "sort_index", NULL, c->pid);
	snprintf(nm, sizeof nm, "thread %d (pt_autograd_0)", c->tid_ag);
	w_meta(o, "thread_name", t0, (uint64_t)c->pid, (uint64_t)c->tid_ag, "name", nm, 0);
	w_meta(o, "thread_sort_index", t0, (uint64_t)c->pid, (uint64_t)c->tid_ag, "sort_index", NULL, c->tid_ag);
}

static void w_trailer(gen_t *g, out_t *o, uint64_t t0, uint64_t t1)
{
	w_process_meta(g, o, t0);
	w_thread_meta(g, o, t0);
	OUT(o, "  {\n    \"ph\": \"X\", \"cat\": \"Trace\", \"ts\": ");
	out_us3(o, t0);
	OUT(o, ", \"dur\": ");
	out_us3(o, t1 - t0);
	OUT(o, ",\n    \"pid\": \"Spans\", \"tid\": \"PyTorch Profiler\",\n    \"name\": \"PyTorch Profiler (0)\",\n"
	       "    \"args\": {\n      \"Op count\": 0\n    }\n  },\n");
	OUT(o, "  {\n    \"name\": \"process_sort_index\", \"ph\": \"M\", \"ts\": ");
	out_us3(o, t0);
	OUT(o, ",\n    \"pid\": \"Spans\", \"tid\": 0,\n    \"args\": {\n      \"sort_index\": 536870912\n    }\n  },\n");
	OUT(o, "  {\n    \"name\": \"Iteration Start: PyTorch Profiler\", \"ph\": \"i\", \"s\": \"g\",\n"
	       "    \"pid\": \"Traces\", \"tid\": \"Trace PyTorch Profiler\", \"ts\": ");
	out_us3(o, t0);
	OUT(o, "\n  },\n  {\n    \"name\": \"Record Window End\", \"ph\": \"i\", \"s\": \"g\",\n    \"pid\": \"\", \"tid\": \"\", \"ts\": ");
	out_us3(o, t1);
	OUT(o, "\n  }\n  ],\n  \"traceName\": \"");
	char nm[96];
	snprintf(nm, sizeof nm, "traces/rank%d.%llu.pt.trace.json", g->c.rank,
	         (unsigned long long)((g->c.base_ns + t1) / 1000000));
	out_cstr(o, nm);
	OUT(o, "\"\n}\n");
}

/* ------------------------------------------------------------------ */
/* Planning and writing a whole trace                                   */

typedef struct plan {
	state_t *st; /* st[k]: state before step k; st[nsteps]: after the last */
	uint64_t nsteps;
} plan_t;

static void gen_init(gen_t *g, uint64_t seed, int rank, int world, int layers)
{
	memset(g, 0, sizeof *g);
	cfg_init(&g->c, seed, rank, world, layers);
	vocab_init(&g->v);
}

static void gen_free(gen_t *g)
{
	for (size_t i = 0; i < g->v.n; i++)
		free((void *)g->v.k[i].p);
	free(g->v.k);
	sig_free(&g->st);
	cfg_free(&g->c);
	free(g->ev);
	free(g->gv);
	free(g->bw);
}

static state_t first_state(const gen_t *g)
{
	state_t s;
	memset(&s, 0, sizeof s);
	s.ts = g->c.t_start;
	s.ext = 1000 + mix64(g->c.seed) % 5000;
	s.corr = s.ext * 3;
	s.py = 3;
	s.seq = 100 + mix64(g->c.seed + 1) % 900;
	s.cuda_event = 1;
	return s;
}

static void plan_steps(gen_t *g, plan_t *p, uint64_t nsteps)
{
	p->nsteps = nsteps;
	p->st = xrealloc(NULL, sizeof *p->st * (nsteps + 1));
	p->st[0] = first_state(g);
	for (uint64_t k = 0; k < nsteps; k++) {
		gen_step(g, &p->st[k]);
		p->st[k + 1] = g->s;
	}
}

static void write_trace(gen_t *g, const plan_t *p, out_t *o)
{
	uint64_t t0 = p->st[0].ts - 120000;
	uint64_t t1 = p->st[p->nsteps].ts;
	g->ev_idx = 0;
	w_header(g, o);
	for (int pass = 0; pass < PASS_COUNT; pass++) {
		if (pass == PASS_MEM && !g->mem_last)
			continue; /* they went with their thread's ops */
		if (pass == PASS_PY)
			w_global_py(g, o, t0, t1);
		for (uint64_t k = 0; k < p->nsteps; k++) {
			gen_step(g, &p->st[k]);
			pass_step(g, o, pass);
		}
	}
	w_trailer(g, o, t0, t1);
	out_flush(o);
}

/* Bytes of a trace of `n` steps, measured by writing it to a counter. */
static uint64_t measure(gen_t *g, uint64_t n)
{
	plan_t p;
	plan_steps(g, &p, n);
	out_t o = {-1, xrealloc(NULL, OUT_CAP), 0, OUT_CAP, 0, 0};
	write_trace(g, &p, &o);
	free(o.buf);
	free(p.st);
	return o.total;
}

/* Picks layer count and step count so the file comes out near `target` bytes. */
static uint64_t choose_steps(gen_t *g, uint64_t seed, int rank, int world, uint64_t target)
{
	uint64_t one = measure(g, 1), two = measure(g, 2);
	uint64_t per = two > one ? two - one : one;
	uint64_t fixed = one > per ? one - per : 0;
	if (target <= fixed + per * 3 && g->c.L > 1) {
		int layers = (int)(g->c.L * (target > fixed ? target - fixed : per / 4) / (per * 3));
		gen_free(g);
		gen_init(g, seed, rank, world, layers < 1 ? 1 : layers);
		return choose_steps(g, seed, rank, world, target);
	}
	uint64_t n = target > fixed ? (target - fixed + per / 2) / per : 1;
	if (n <= 2)
		return n ? n : 1;
	/* Ids and times grow longer along the trace: correct with one exact count. */
	uint64_t got = measure(g, n);
	uint64_t step = (got - fixed) / n;
	if (got > target)
		n -= (got - target + step / 2) / step;
	else
		n += (target - got + step / 2) / step;
	return n ? n : 1;
}

/* ------------------------------------------------------------------ */
/* Command line                                                         */

typedef struct opts {
	uint64_t seed, size, steps;
	int rank, world, ranks, quiet, mem_last;
	const char *out;
} opts_t;

static void usage(FILE *f)
{
	fprintf(f,
	        "usage: gen_trace [--seed N] [--size BYTES[K|M|G]] [--steps N] [--rank R] [--world-size W]\n"
	        "                 [--ranks N] [--memory-last] [-q] [-o FILE|-]\n"
	        "Writes a PyTorch profiler (Kineto) trace of about --size bytes (default 64M) to FILE\n"
	        "or standard output. The same options give a byte-identical file.\n"
	        "  --seed N         model shape, names and timings (default 1)\n"
	        "  --size S         target size, e.g. 1G, 256M, 500K, 123456 (default 64M)\n"
	        "  --steps N        exact number of ProfilerStep iterations (overrides --size)\n"
	        "  --rank R         rank written in distributedInfo (default 0)\n"
	        "  --world-size W   world size (default 1)\n"
	        "  --ranks N        write N files, one per rank, world size N; FILE must contain %%d\n"
	        "  --memory-last    the [memory] events after every CPU op, as Kineto traces have\n"
	        "                   them (default: among their thread's ops)\n"
	        "  -q               no summary on standard error\n");
}

static int parse_size(const char *s, uint64_t *out)
{
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (errno || end == s || v <= 0)
		return -1;
	uint64_t mul = 1;
	switch (*end) {
	case 'k': case 'K': mul = 1ULL << 10; end++; break;
	case 'm': case 'M': mul = 1ULL << 20; end++; break;
	case 'g': case 'G': mul = 1ULL << 30; end++; break;
	default: break;
	}
	if (*end == 'i')
		end++;
	if (*end == 'B' || *end == 'b')
		end++;
	if (*end)
		return -1;
	*out = (uint64_t)(v * (double)mul);
	return 0;
}

static int parse_uint(const char *s, uint64_t *out)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || end == s || *end || s[0] == '-')
		return -1;
	*out = v;
	return 0;
}

static const char *opt_value(int argc, char **argv, int *i)
{
	if (*i + 1 >= argc) {
		fprintf(stderr, "gen_trace: %s needs a value\n", argv[*i]);
		exit(2);
	}
	return argv[++*i];
}

static void bad_value(const char *opt, const char *v)
{
	fprintf(stderr, "gen_trace: bad value for %s: %s\n", opt, v);
	exit(2);
}

static void parse_opt(opts_t *op, int argc, char **argv, int *i)
{
	const char *a = argv[*i];
	uint64_t v = 0;
	if (strcmp(a, "-q") == 0) {
		op->quiet = 1;
	} else if (strcmp(a, "--memory-last") == 0) {
		op->mem_last = 1;
	} else if (strcmp(a, "-o") == 0 || strcmp(a, "--output") == 0) {
		op->out = opt_value(argc, argv, i);
	} else if (strcmp(a, "--size") == 0) {
		const char *s = opt_value(argc, argv, i);
		if (parse_size(s, &op->size))
			bad_value(a, s);
	} else {
		const char *s = NULL;
		if (strcmp(a, "--seed") && strcmp(a, "--steps") && strcmp(a, "--rank") &&
		    strcmp(a, "--world-size") && strcmp(a, "--ranks")) {
			fprintf(stderr, "gen_trace: unknown option %s\n", a);
			usage(stderr);
			exit(2);
		}
		s = opt_value(argc, argv, i);
		if (parse_uint(s, &v) || (strcmp(a, "--seed") && v > 1000000))
			bad_value(a, s);
		if (!strcmp(a, "--seed")) op->seed = v;
		else if (!strcmp(a, "--steps")) op->steps = v;
		else if (!strcmp(a, "--rank")) op->rank = (int)v;
		else if (!strcmp(a, "--world-size")) op->world = (int)v;
		else op->ranks = (int)v;
	}
}

static void parse_args(opts_t *op, int argc, char **argv)
{
	memset(op, 0, sizeof *op);
	op->seed = 1;
	op->size = 64ULL << 20;
	op->world = 1;
	op->out = "-";
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			usage(stdout);
			exit(0);
		}
		parse_opt(op, argc, argv, &i);
	}
	if (op->world < 1 || op->rank >= op->world)
		die("--rank must be below --world-size");
	if (op->ranks && !strstr(op->out, "%d"))
		die("--ranks needs -o with %d in the file name");
}

static int open_out(const char *path)
{
	if (!strcmp(path, "-"))
		return STDOUT_FILENO;
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0) {
		fprintf(stderr, "gen_trace: cannot create %s: %s\n", path, strerror(errno));
		exit(1);
	}
	return fd;
}

/* Layer and step counts for the options: from rank 0, so all ranks of a run match. */
static void choose_shape(const opts_t *op, int world, int *layers, uint64_t *steps)
{
	gen_t *g = xrealloc(NULL, sizeof *g);
	gen_init(g, op->seed, 0, world, 0);
	*steps = op->steps ? op->steps : choose_steps(g, op->seed, 0, world, op->size);
	*layers = g->c.L;
	gen_free(g);
	free(g);
}

static int gen_one(const opts_t *op, int rank, int world, int layers, uint64_t n, const char *path)
{
	gen_t *g = xrealloc(NULL, sizeof *g);
	gen_init(g, op->seed, rank, world, layers);
	g->mem_last = op->mem_last;
	plan_t p;
	plan_steps(g, &p, n);
	out_t o = {open_out(path), xrealloc(NULL, OUT_CAP), 0, OUT_CAP, 0, 0};
	write_trace(g, &p, &o);
	int rc = 0;
	if (o.err) {
		fprintf(stderr, "gen_trace: write to %s failed: %s\n", path, strerror(o.err));
		rc = 1;
	}
	if (o.fd != STDOUT_FILENO && close(o.fd) != 0)
		rc = 1;
	if (!op->quiet)
		fprintf(stderr, "gen_trace: %s: %llu bytes, %llu steps, %d layers, rank %d/%d\n",
		        path, (unsigned long long)o.total, (unsigned long long)n, g->c.L, rank, world);
	free(o.buf);
	free(p.st);
	gen_free(g);
	free(g);
	return rc;
}

int main(int argc, char **argv)
{
	opts_t op;
	init_dig2();
	parse_args(&op, argc, argv);
	int world = op.ranks ? op.ranks : op.world, layers;
	uint64_t steps;
	choose_shape(&op, world, &layers, &steps);
	if (!op.ranks)
		return gen_one(&op, op.rank, op.world, layers, steps, op.out);
	int rc = 0;
	const char *pct = strstr(op.out, "%d");
	for (int r = 0; r < op.ranks; r++) {
		char path[4096];
		snprintf(path, sizeof path, "%.*s%d%s", (int)(pct - op.out), op.out, r, pct + 2);
		rc |= gen_one(&op, r, op.ranks, layers, steps, path);
	}
	return rc;
}
