/* collector_size.c: bytes per kernel record in a compressed .tkb, from seeded realistic kernels. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tkc_session.h"

/* Names as a transformer step launches them: a few dozen distinct kernels,
 * long templated names, repeated in a fixed order each layer. */
static const struct {
	const char *name;
	int gx, gy, bx, regs, smem;
} kernels[] = {
	{"ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_64x3_tn", 96, 8, 256, 232, 73728},
	{"ampere_bf16_s16816gemm_bf16_256x128_ldg8_f2f_stages_64x3_nn", 48, 8, 256, 240, 98304},
	{"ampere_bf16_s16816gemm_bf16_128x256_ldg8_f2f_stages_64x3_nt", 32, 16, 256, 238, 98304},
	{"void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<c10::BFloat16>, "
	 "at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<c10::BFloat16>, "
	 "at::detail::Array<char*, 3>)", 4096, 1, 128, 24, 0},
	{"void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<c10::BFloat16, float>(int, "
	 "float, c10::BFloat16 const*, c10::BFloat16 const*, c10::BFloat16 const*, float*, float*, "
	 "c10::BFloat16*)", 8192, 1, 256, 40, 0},
	{"void at::native::(anonymous namespace)::GammaBetaBackwardCUDAKernel<c10::BFloat16, float>(long, "
	 "long, c10::BFloat16 const*, c10::BFloat16 const*, float const*, float const*, c10::BFloat16*, "
	 "c10::BFloat16*)", 64, 1, 1024, 64, 8192},
	{"flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, false, false, cutlass::bfloat16_t, "
	 "Flash_kernel_traits<128, 128, 64, 4, cutlass::bfloat16_t> >, false, true, false, false, true, "
	 "true, false, false>(Flash_fwd_params)", 16, 32, 128, 255, 49152},
	{"flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel<Flash_bwd_kernel_traits<128, 64, 128, 8, 2, 4, 2, "
	 "false, false, cutlass::bfloat16_t, Flash_kernel_traits<128, 64, 128, 8, cutlass::bfloat16_t> >, "
	 "true, false, false, false, false, true, false>(Flash_bwd_params)", 32, 32, 256, 255, 114688},
	{"void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl(at::"
	 "TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#4}::"
	 "operator()() const::{lambda(c10::BFloat16)#1}, at::detail::Array<char*, 2> >(int, at::native::"
	 "GeluCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::operator()() "
	 "const::{lambda()#4}::operator()() const::{lambda(c10::BFloat16)#1}, at::detail::Array<char*, 2>)",
	 16384, 1, 128, 28, 0},
	{"void at::native::unrolled_elementwise_kernel<at::native::direct_copy_kernel_cuda(at::"
	 "TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#10}::operator()() const::"
	 "{lambda(float)#1}, at::detail::Array<char*, 2>, TrivialOffsetCalculator<1, unsigned int>, "
	 "TrivialOffsetCalculator<1, unsigned int>, at::native::memory::LoadWithCast<1>, at::native::"
	 "memory::StoreWithCast<1> >(int, at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::"
	 "{lambda()#3}::operator()() const::{lambda()#10}::operator()() const::{lambda(float)#1}, at::"
	 "detail::Array<char*, 2>, TrivialOffsetCalculator<1, unsigned int>, TrivialOffsetCalculator<1, "
	 "unsigned int>, at::native::memory::LoadWithCast<1>, at::native::memory::StoreWithCast<1>)",
	 1024, 1, 128, 30, 0},
	{"ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)", 8, 1, 640, 96, 0},
	{"void cutlass::Kernel2<cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_32x32_128x2_tn_align8>("
	 "cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_32x32_128x2_tn_align8::Params)", 12, 4, 128, 110,
	 32768},
	{"void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::func_wrapper_t<"
	 "float, at::native::sum_functor<float, float, float>::operator()(at::TensorIterator&)::{lambda("
	 "float, float)#1}>, unsigned int, float, 4> >(at::native::ReduceOp<float, at::native::"
	 "func_wrapper_t<float, at::native::sum_functor<float, float, float>::operator()(at::"
	 "TensorIterator&)::{lambda(float, float)#1}>, unsigned int, float, 4>)", 132, 1, 512, 32, 16},
	{"void multi_tensor_apply_kernel<TensorListMetadata<4>, AdamFunctor<float>, float, float, float, "
	 "float, float, float, adamMode_t, float>(long, int volatile*, TensorListMetadata<4>, "
	 "AdamFunctor<float>, float, float, float, float, float, float, adamMode_t, float)", 320, 1, 512,
	 48, 0},
};
enum { N_KERNELS = sizeof kernels / sizeof *kernels };

/* One layer's forward and backward, as indices into kernels[]. */
static const int layer[] = {4, 0, 6, 3, 4, 1, 8, 2, 3, 9, 5, 7, 0, 1, 2, 3, 11, 12, 10};

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint32_t rnd(uint32_t n)
{
	rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
	return (uint32_t)(rng % n);
}

static size_t fill(uint8_t *buf, size_t cap, uint64_t *i, uint64_t count, uint64_t *ts, uint32_t *corr)
{
	size_t at = 0;
	CUpti_ActivityKernel10 k;
	while (*i < count && at + sizeof k <= cap) {
		int w = layer[*i % (sizeof layer / sizeof *layer)];
		if (*i % 2000 == 1999)
			w = 13; /* optimizer step */
		memset(&k, 0, sizeof k);
		k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
		k.name = kernels[w].name;
		k.gridX = kernels[w].gx * (1 + (int)rnd(2)), k.gridY = kernels[w].gy, k.gridZ = 1;
		k.blockX = kernels[w].bx, k.blockY = 1, k.blockZ = 1;
		k.registersPerThread = (uint16_t)kernels[w].regs;
		k.dynamicSharedMemory = kernels[w].smem;
		*corr += 1 + rnd(3); /* runtime calls between launches take ids too */
		k.correlationId = *corr;
		*ts += 1500 + rnd(4000); /* the gap from the previous kernel's start */
		k.start = *ts;
		k.end = *ts + 2000 + rnd(150000);
		k.deviceId = 0, k.contextId = 1;
		k.streamId = w == 10 ? 23 : 7; /* collectives on their own stream */
		memcpy(buf + at, &k, sizeof k);
		at += sizeof k;
		(*i)++;
	}
	return at;
}

static const char *env(const char *k)
{
	return getenv(k);
}

int main(int argc, char **argv)
{
	uint64_t count = 100000;
	double max = 0;
	for (int a = 1; a + 1 < argc; a += 2) {
		if (!strcmp(argv[a], "--max"))
			max = atof(argv[a + 1]);
		else if (!strcmp(argv[a], "--count"))
			count = strtoull(argv[a + 1], NULL, 10);
	}
	char dir[] = "/tmp/tkc_size_XXXXXX", err[512];
	tkc_config cfg;
	tkc_cupti api;
	if (!mkdtemp(dir) || tkc_config_read(&cfg, env, err, sizeof err) < -1)
		return 1;
	snprintf(cfg.out_dir, sizeof cfg.out_dir, "%s", dir);
	cfg.compress = 1;
	if (tkc_cupti_load(&api, err, sizeof err) || tkc_session_open(&cfg, &api, err, sizeof err)) {
		fprintf(stderr, "collector_size: %s\n", err);
		return 1;
	}
	uint64_t i = 0, ts = 1747000000000000000ull;
	uint32_t corr = 1000;
	while (i < count) {
		uint8_t *buf;
		size_t size, maxrec;
		tkc_buffer_requested(&buf, &size, &maxrec);
		if (!buf) {
			usleep(1000);
			continue;
		}
		tkc_buffer_completed(NULL, 7, buf, size, fill(buf, size, &i, count, &ts, &corr));
	}
	tkc_session_close();
	struct stat st;
	if (stat(tkc_session_path(), &st)) {
		perror(tkc_session_path());
		return 1;
	}
	double per = (double)st.st_size / (double)count;
	printf("%llu kernel records, %d distinct names: %lld bytes, %.2f bytes per record\n",
	       (unsigned long long)count, N_KERNELS, (long long)st.st_size, per);
	unlink(tkc_session_path());
	rmdir(dir);
	if (max > 0 && per > max) {
		fprintf(stderr, "collector_size: %.2f bytes per record is over %.2f\n", per, max);
		return 1;
	}
	return 0;
}
