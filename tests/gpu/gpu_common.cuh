// gpu_common.cuh: what the GPU check programs share: an empty kernel, a
// monotonic clock, and CHECK, which ends the program on a CUDA error
// naming the call. Each program defines PROG (its name) before including.
#ifndef GPU_COMMON_CUH
#define GPU_COMMON_CUH
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

__global__ void empty_kernel(int *p)
{
	if (p && threadIdx.x == 0 && blockIdx.x == 0)
		p[0] = 1;
}

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

#define CHECK(x)                                                                                   \
	do {                                                                                       \
		cudaError_t e_ = (x);                                                              \
		if (e_ != cudaSuccess) {                                                           \
			fprintf(stderr, PROG ": %s: %s\n", #x, cudaGetErrorString(e_));          \
			exit(1);                                                                   \
		}                                                                                  \
	} while (0)
#endif
