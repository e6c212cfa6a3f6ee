// launch_bench.cu: a launch-bound CUDA program for the collector's GPU checks (kernel count, overhead).
#define PROG "launch_bench"
#include "gpu_common.cuh"
#include <nvtx3/nvToolsExt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

// Usage: launch_bench [STEPS [KERNELS_PER_STEP]]. Each step is an NVTX range
// "ProfilerStep#i" holding KERNELS_PER_STEP empty kernel launches, one
// memset and one small copy; the output line says what was launched.
int main(int argc, char **argv)
{
	int steps = argc > 1 ? atoi(argv[1]) : 20;
	int per_step = argc > 2 ? atoi(argv[2]) : 5000;
	int *d = NULL, h = 0;
	CHECK(cudaSetDevice(0));
	CHECK(cudaMalloc(&d, sizeof(int)));
	empty_kernel<<<1, 32>>>(d); // warm the module up, outside the timing
	CHECK(cudaDeviceSynchronize());
	double t0 = now_s();
	long kernels = 1, copies = 0, sets = 0;
	for (int s = 0; s < steps; s++) {
		char name[32];
		snprintf(name, sizeof name, "ProfilerStep#%d", s);
		nvtxRangePushA(name);
		for (int k = 0; k < per_step; k++)
			empty_kernel<<<1, 32>>>(d);
		CHECK(cudaMemsetAsync(d, 0, sizeof(int)));
		CHECK(cudaMemcpy(&h, d, sizeof(int), cudaMemcpyDeviceToHost));
		kernels += per_step;
		copies++;
		sets++;
		nvtxRangePop();
	}
	CHECK(cudaDeviceSynchronize());
	double t = now_s() - t0;
	CHECK(cudaGetLastError());
	printf("{\"kernels\":%ld,\"memcpy\":%ld,\"memset\":%ld,\"steps\":%d,\"seconds\":%.6f,"
	       "\"us_per_launch\":%.4f}\n",
	       kernels, copies, sets, steps, t, t * 1e6 / (double)(kernels - 1));
	cudaFree(d);
	return 0;
}
