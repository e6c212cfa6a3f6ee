// gpu_cases.cu: CUDA programs with a known amount of GPU work, for the
// collector's checks on a GPU machine (tests/gpu/cases.sh). Each mode prints
// one JSON line saying what it launched, then does what its name says.
//
//   gpu_cases count N STREAMS       N empty kernels round-robin over STREAMS
//                                   streams, one memset and one copy per stream
//   gpu_cases graph N REPLAYS       a CUDA graph of N kernels, launched REPLAYS times
//   gpu_cases compute N             N kernels of about 2 ms each (H200)
//   gpu_cases term|int N            N kernels, synchronize, raise SIGTERM/SIGINT
//   gpu_cases reset N               N kernels, cudaDeviceReset, N more, exit
//   gpu_cases thread-exit N         N kernels, synchronize, then exit() from a
//                                   second thread while the first launches on
//   gpu_cases segv N [MS]           N kernels, synchronize, sleep MS, then crash
//   gpu_cases abort N               N kernels, synchronize, abort()
#define PROG "gpu_cases"
#include "gpu_common.cuh"
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

// about 2 ms of arithmetic per launch on an H200 (one block per SM)
__global__ void busy_kernel(float *p, int iters)
{
	float x = p[threadIdx.x], y = 1.0001f;
	for (int i = 0; i < iters; i++)
		x = x * y + 0.5f;
	if (x == 12345.0f)
		p[threadIdx.x] = x;
}

static int *g_dev;

static void launch(long n, cudaStream_t s)
{
	for (long k = 0; k < n; k++)
		empty_kernel<<<1, 32, 0, s>>>(g_dev);
}

static void *exit_later(void *arg)
{
	(void)arg;
	usleep(200000);
	exit(0);
	return NULL;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "count";
	long n = argc > 2 ? atol(argv[2]) : 1000;
	long m = argc > 3 ? atol(argv[3]) : 1;
	int h = 0;
	CHECK(cudaSetDevice(0));
	CHECK(cudaMalloc(&g_dev, 1024 * sizeof(int)));
	double t0 = now_s();
	if (!strcmp(mode, "count")) {
		if (m < 1 || m > 64)
			m = 1;
		cudaStream_t st[64];
		for (long i = 0; i < m; i++)
			CHECK(cudaStreamCreateWithFlags(&st[i], cudaStreamNonBlocking));
		for (long k = 0; k < n; k++)
			empty_kernel<<<1, 32, 0, st[k % m]>>>(g_dev);
		for (long i = 0; i < m; i++) {
			CHECK(cudaMemsetAsync(g_dev, 0, sizeof(int), st[i]));
			CHECK(cudaMemcpyAsync(&h, g_dev, sizeof(int), cudaMemcpyDeviceToHost, st[i]));
		}
		CHECK(cudaDeviceSynchronize());
		printf("{\"mode\":\"count\",\"kernels\":%ld,\"streams\":%ld,\"memcpy\":%ld,\"memset\":%ld,"
		       "\"seconds\":%.6f}\n",
		       n, m, m, m, now_s() - t0);
	} else if (!strcmp(mode, "graph")) {
		cudaStream_t s;
		cudaGraph_t g;
		cudaGraphExec_t ge;
		CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
		CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
		launch(n, s);
		CHECK(cudaStreamEndCapture(s, &g));
		CHECK(cudaGraphInstantiate(&ge, g, 0));
		for (long r = 0; r < m; r++)
			CHECK(cudaGraphLaunch(ge, s));
		CHECK(cudaStreamSynchronize(s));
		printf("{\"mode\":\"graph\",\"kernels\":%ld,\"graph_launches\":%ld,\"seconds\":%.6f}\n",
		       n * m, m, now_s() - t0);
	} else if (!strcmp(mode, "compute")) {
		float *f;
		CHECK(cudaMalloc(&f, 1024 * sizeof(float)));
		CHECK(cudaMemset(f, 0, 1024 * sizeof(float)));
		busy_kernel<<<132, 1024>>>(f, 1000); // warm up
		CHECK(cudaDeviceSynchronize());
		t0 = now_s();
		for (long k = 0; k < n; k++)
			busy_kernel<<<132, 1024>>>(f, 400000);
		CHECK(cudaDeviceSynchronize());
		double t = now_s() - t0;
		printf("{\"mode\":\"compute\",\"kernels\":%ld,\"seconds\":%.6f,\"ms_per_kernel\":%.4f}\n",
		       n + 1, t, t * 1e3 / (double)n);
	} else if (!strcmp(mode, "term") || !strcmp(mode, "int")) {
		launch(n, 0);
		CHECK(cudaDeviceSynchronize());
		printf("{\"mode\":\"%s\",\"kernels\":%ld}\n", mode, n);
		fflush(stdout);
		raise(!strcmp(mode, "term") ? SIGTERM : SIGINT);
		fprintf(stderr, "gpu_cases: still alive after the signal\n");
		return 3;
	} else if (!strcmp(mode, "reset")) {
		launch(n, 0);
		CHECK(cudaDeviceSynchronize());
		CHECK(cudaDeviceReset());
		CHECK(cudaMalloc(&g_dev, sizeof(int)));
		launch(n, 0);
		CHECK(cudaDeviceSynchronize());
		printf("{\"mode\":\"reset\",\"kernels\":%ld,\"before_reset\":%ld}\n", 2 * n, n);
	} else if (!strcmp(mode, "thread-exit")) {
		launch(n, 0);
		CHECK(cudaDeviceSynchronize());
		printf("{\"mode\":\"thread-exit\",\"kernels_before\":%ld}\n", n);
		fflush(stdout);
		pthread_t th;
		pthread_create(&th, NULL, exit_later, NULL);
		for (;;) { // launch on until the other thread exits the process
			launch(100, 0);
			cudaDeviceSynchronize();
		}
	} else if (!strcmp(mode, "abort")) {
		launch(n, 0);
		CHECK(cudaDeviceSynchronize());
		printf("{\"mode\":\"abort\",\"kernels\":%ld}\n", n);
		fflush(stdout);
		abort();
	} else if (!strcmp(mode, "segv")) {
		launch(n, 0);
		CHECK(cudaDeviceSynchronize());
		printf("{\"mode\":\"segv\",\"kernels\":%ld,\"sleep_ms\":%ld}\n", n, argc > 3 ? m : 0);
		fflush(stdout);
		if (argc > 3)
			usleep((useconds_t)(m * 1000));
		static volatile uintptr_t bad = 8;
		*(volatile int *)bad = 1;
		return 3;
	} else {
		fprintf(stderr, "gpu_cases: unknown mode '%s'\n", mode);
		return 2;
	}
	cudaFree(g_dev);
	return 0;
}
