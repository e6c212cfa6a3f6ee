/* test_collector_convert.c: CUPTI records (real cupti_activity.h structs) to events, field by field. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tkc.h"

static const char *fake_name(void *ud, CUpti_CallbackDomain dom, uint32_t cbid)
{
	(void)ud;
	if (dom == CUPTI_CB_DOMAIN_RUNTIME_API && cbid == CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000)
		return "cudaLaunchKernel";
	static const struct {
		uint32_t cbid;
		const char *name;
	} drv[] = {
	    {CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, "cuLaunchKernel"},
	    {CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx, "cuLaunchKernelEx"},
	    {CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz, "cuLaunchKernelEx_ptsz"},
	    {CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel, "cuLaunchCooperativeKernel"},
	    {CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch, "cuGraphLaunch"},
	    {CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2, "cuMemcpyHtoDAsync_v2"},
	    {CUPTI_DRIVER_TRACE_CBID_cuMemsetD8Async, "cuMemsetD8Async"},
	    {CUPTI_DRIVER_TRACE_CBID_cuCtxGetCurrent, "cuCtxGetCurrent"},
	    {CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2, "cuMemAlloc_v2"},
	    {CUPTI_DRIVER_TRACE_CBID_cuModuleGetFunction, "cuModuleGetFunction"},
	    {CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize, "cuStreamSynchronize"},
	};
	for (size_t i = 0; dom == CUPTI_CB_DOMAIN_DRIVER_API && i < sizeof drv / sizeof *drv; i++)
		if (cbid == drv[i].cbid)
			return drv[i].name;
	if (dom == CUPTI_CB_DOMAIN_RUNTIME_API && cbid == CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020)
		return "cudaGetDevice";
	return NULL;
}

static void expect_sv(tk_sv v, const char *s)
{
	assert_non_null(v.ptr);
	assert_string_equal(v.ptr, s);
	assert_int_equal(v.len, strlen(s));
}
static void expect_id(tk_id id, int64_t v)
{
	assert_int_equal(id.kind, TK_ID_INT);
	assert_int_equal(id.num, v);
}

static int setup(void **state)
{
	tkc_conv *c = calloc(1, sizeof *c);
	assert_int_equal(tkc_conv_init(c, 4242, fake_name, NULL), 0);
	*state = c;
	return 0;
}
static int teardown(void **state)
{
	tkc_conv_free(*state);
	free(*state);
	return 0;
}

static void test_kernel(void **state)
{
	tkc_conv *c = *state;
	CUpti_ActivityKernel10 k;
	tk_event ev;
	memset(&k, 0, sizeof k);
	k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
	k.registersPerThread = 72;
	k.start = 1700000000123456789ull;
	k.end = k.start + 4321;
	k.deviceId = 3;
	k.contextId = 1;
	k.streamId = 7;
	k.gridX = 132, k.gridY = 2, k.gridZ = 1;
	k.blockX = 256, k.blockY = 1, k.blockZ = 1;
	k.staticSharedMemory = 1024;
	k.dynamicSharedMemory = 48128;
	k.correlationId = 123456;
	k.name = "ampere_sgemm_128x64_tn";
	assert_int_equal(tkc_convert(c, (CUpti_Activity *)&k, &ev), 1);
	assert_int_equal(ev.ph, 'X');
	assert_int_equal(ev.ts, 1700000000123456789ll);
	assert_int_equal(ev.dur, 4321);
	assert_true(ev.has & TK_HAS_TS && ev.has & TK_HAS_DUR && ev.has & TK_HAS_NAME && ev.has & TK_HAS_CAT);
	expect_sv(ev.cat, "kernel");
	expect_sv(ev.name, "ampere_sgemm_128x64_tn");
	expect_id(ev.pid, 3);
	expect_id(ev.tid, 7);
	expect_sv(ev.args, "{\"device\":3,\"context\":1,\"stream\":7,\"correlation\":123456,"
	                   "\"registers per thread\":72,\"shared memory\":49152,\"grid\":[132,2,1],"
	                   "\"block\":[256,1,1]}");
	assert_null(ev.extra.ptr);
	/* a kernel in a CUDA graph says so */
	k.graphId = 9;
	k.name = NULL;
	assert_int_equal(tkc_convert(c, (CUpti_Activity *)&k, &ev), 1);
	expect_sv(ev.name, "(unnamed)");
	assert_non_null(strstr(ev.args.ptr, ",\"graph id\":9}"));
}

static void test_memcpy_memset(void **state)
{
	tkc_conv *c = *state;
	CUpti_ActivityMemcpy6 m;
	CUpti_ActivityMemset4 s;
	tk_event ev;
	memset(&m, 0, sizeof m);
	m.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
	m.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_HTOD;
	m.srcKind = CUPTI_ACTIVITY_MEMORY_KIND_PINNED;
	m.dstKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
	m.bytes = 1 << 20;
	m.start = 1000;
	m.end = 1000 + 65536;
	m.deviceId = 1, m.contextId = 2, m.streamId = 13, m.correlationId = 77;
	assert_int_equal(tkc_convert(c, (CUpti_Activity *)&m, &ev), 1);
	expect_sv(ev.cat, "gpu_memcpy");
	expect_sv(ev.name, "Memcpy HtoD (Pinned -> Device)");
	assert_int_equal(ev.ts, 1000);
	assert_int_equal(ev.dur, 65536);
	expect_id(ev.pid, 1);
	expect_id(ev.tid, 13);
	expect_sv(ev.args, "{\"device\":1,\"context\":2,\"stream\":13,\"correlation\":77,"
	                   "\"bytes\":1048576,\"memory bandwidth (GB/s)\":16}");
	m.copyKind = 200; /* a kind newer than the collector */
	m.srcKind = CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE;
	m.end = m.start;
	assert_int_equal(tkc_convert(c, (CUpti_Activity *)&m, &ev), 1);
	expect_sv(ev.name, "Memcpy Unknown (Pageable -> Device)");
	assert_non_null(strstr(ev.args.ptr, "\"memory bandwidth (GB/s)\":0}"));

	memset(&s, 0, sizeof s);
	s.kind = CUPTI_ACTIVITY_KIND_MEMSET;
	s.value = 0;
	s.bytes = 4096;
	s.start = 50;
	s.end = 50 + 3000;
	s.deviceId = 0, s.contextId = 1, s.streamId = 7, s.correlationId = 78;
	s.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
	assert_int_equal(tkc_convert(c, (CUpti_Activity *)&s, &ev), 1);
	expect_sv(ev.cat, "gpu_memset");
	expect_sv(ev.name, "Memset (Device)");
	assert_int_equal(ev.dur, 3000);
	expect_id(ev.pid, 0);
	expect_id(ev.tid, 7);
	expect_sv(ev.args, "{\"device\":0,\"context\":1,\"stream\":7,\"correlation\":78,"
	                   "\"bytes\":4096,\"memory bandwidth (GB/s)\":1.36533}");
}

static void test_api(void **state)
{
	tkc_conv *c = *state;
	CUpti_ActivityAPI a;
	tk_event ev;
	memset(&a, 0, sizeof a);
	a.kind = CUPTI_ACTIVITY_KIND_RUNTIME;
	a.cbid = CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000;
	a.start = 10;
	a.end = 25;
	a.processId = 999;
	a.threadId = 1001;
	a.correlationId = 5;
	assert_int_equal(tkc_convert(c, (CUpti_Activity *)&a, &ev), 1);
	expect_sv(ev.cat, "cuda_runtime");
	expect_sv(ev.name, "cudaLaunchKernel");
	expect_id(ev.pid, 999);
	expect_id(ev.tid, 1001);
	assert_int_equal(ev.dur, 15);
	expect_sv(ev.args, "{\"cbid\":211,\"correlation\":5}");
	a.kind = CUPTI_ACTIVITY_KIND_DRIVER;
	a.cbid = CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel;
	a.returnValue = 1;
	assert_int_equal(tkc_convert(c, (CUpti_Activity *)&a, &ev), 1);
	expect_sv(ev.cat, "cuda_driver");
	expect_sv(ev.name, "cuLaunchKernel");
	expect_sv(ev.args, "{\"cbid\":307,\"correlation\":5,\"return value\":1}");
	a.cbid = 9999; /* no name known */
	assert_int_equal(tkc_convert(c, (CUpti_Activity *)&a, &ev), 1);
	expect_sv(ev.name, "driver cbid 9999");

	/* the default: only the driver calls that launch GPU work (how cuBLAS
	 * and Triton launch; on an H200, cuBLAS's GEMM kernels came from
	 * cuLaunchKernel with no runtime call of their correlation id) */
	c->driver_launch_only = 1;
	static const struct {
		uint32_t cbid;
		int kept;
	} drv[] = {
	    {CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, 1},
	    {CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx, 1},
	    {CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz, 1},
	    {CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel, 1},
	    {CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch, 1},
	    {CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2, 1},
	    {CUPTI_DRIVER_TRACE_CBID_cuMemsetD8Async, 1},
	    {CUPTI_DRIVER_TRACE_CBID_cuCtxGetCurrent, 0},
	    {CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2, 0},
	    {CUPTI_DRIVER_TRACE_CBID_cuModuleGetFunction, 0},
	    {CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize, 0},
	    {9999, 1}, /* no name known: kept, as it may launch */
	};
	for (size_t i = 0; i < sizeof drv / sizeof *drv; i++) {
		a.cbid = drv[i].cbid;
		assert_int_equal(tkc_convert(c, (CUpti_Activity *)&a, &ev), drv[i].kept);
		const char *name = fake_name(NULL, CUPTI_CB_DOMAIN_DRIVER_API, drv[i].cbid);
		if (drv[i].kept)
			expect_sv(ev.name, name ? name : "driver cbid 9999");
	}
	/* runtime calls are all kept */
	a.kind = CUPTI_ACTIVITY_KIND_RUNTIME;
	a.cbid = CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020;
	assert_int_equal(tkc_convert(c, (CUpti_Activity *)&a, &ev), 1);
	expect_sv(ev.name, "cudaGetDevice");
	c->driver_launch_only = 0;
	assert_false(tkc_driver_launches(NULL));
	assert_false(tkc_driver_launches("cuLaunc"));
	assert_true(tkc_driver_launches("cuLaunchHostFunc"));
}

static void test_sync_and_context(void **state)
{
	tkc_conv *c = *state;
	CUpti_ActivityContext3 x;
	CUpti_ActivitySynchronization2 s;
	tk_event ev;
	memset(&x, 0, sizeof x);
	x.kind = CUPTI_ACTIVITY_KIND_CONTEXT;
	x.contextId = 9;
	x.deviceId = 5;
	assert_int_equal(tkc_convert(c, (CUpti_Activity *)&x, &ev), 0);
	memset(&s, 0, sizeof s);
	s.kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
	s.type = CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE;
	s.start = 100;
	s.end = 180;
	s.correlationId = 44;
	s.contextId = 9;
	s.streamId = 7;
	s.cudaEventId = CUPTI_SYNCHRONIZATION_INVALID_VALUE;
	assert_int_equal(tkc_convert(c, (CUpti_Activity *)&s, &ev), 1);
	expect_sv(ev.cat, "cuda_sync");
	expect_sv(ev.name, "Stream Sync");
	expect_id(ev.pid, 5);
	expect_id(ev.tid, 7);
	assert_int_equal(ev.dur, 80);
	expect_sv(ev.args, "{\"cuda_sync_kind\":\"Stream Sync\",\"stream\":7,\"correlation\":44,"
	                   "\"device\":5,\"context\":9}");
	s.type = CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE;
	s.cudaEventId = 3;
	s.contextId = 77; /* unknown context */
	s.streamId = CUPTI_SYNCHRONIZATION_INVALID_VALUE;
	assert_int_equal(tkc_convert(c, (CUpti_Activity *)&s, &ev), 1);
	expect_sv(ev.name, "Event Sync");
	expect_id(ev.pid, 0);
	expect_id(ev.tid, -1);
	expect_sv(ev.args, "{\"cuda_sync_kind\":\"Event Sync\",\"stream\":-1,\"correlation\":44,"
	                   "\"device\":-1,\"context\":77,\"wait_on_cuda_event_id\":3}");
}

static void test_overhead_and_unknown(void **state)
{
	tkc_conv *c = *state;
	CUpti_ActivityOverhead3 h;
	tk_event ev;
	memset(&h, 0, sizeof h);
	h.kind = CUPTI_ACTIVITY_KIND_OVERHEAD;
	h.overheadKind = CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH;
	h.objectKind = CUPTI_ACTIVITY_OBJECT_THREAD;
	h.objectId.pt.processId = 999;
	h.objectId.pt.threadId = 1002;
	h.start = 5;
	h.end = 9;
	assert_int_equal(tkc_convert(c, (CUpti_Activity *)&h, &ev), 1);
	expect_sv(ev.cat, "overhead");
	expect_sv(ev.name, "Buffer Flush");
	expect_id(ev.pid, 999);
	expect_id(ev.tid, 1002);
	expect_sv(ev.args, "{}");
	h.objectKind = CUPTI_ACTIVITY_OBJECT_DEVICE;
	h.objectId.dcs.deviceId = 2;
	h.objectId.dcs.streamId = 0;
	h.overheadKind = CUPTI_ACTIVITY_OVERHEAD_DRIVER_COMPILER;
	h.correlationId = 8;
	assert_int_equal(tkc_convert(c, (CUpti_Activity *)&h, &ev), 1);
	expect_sv(ev.name, "Compiler");
	expect_id(ev.pid, 2);
	expect_sv(ev.args, "{\"correlation\":8}");

	CUpti_ActivityAPI other;
	memset(&other, 0, sizeof other);
	other.kind = CUPTI_ACTIVITY_KIND_PCIE;
	uint64_t before = c->unknown_kinds;
	assert_int_equal(tkc_convert(c, (CUpti_Activity *)&other, &ev), 0);
	assert_int_equal(c->unknown_kinds, before + 1);
}

static CUpti_ActivityMarker2 marker(unsigned flags, uint32_t id, int64_t ts, const char *name,
                                    const char *domain)
{
	CUpti_ActivityMarker2 m;
	memset(&m, 0, sizeof m);
	m.kind = CUPTI_ACTIVITY_KIND_MARKER;
	m.flags = (CUpti_ActivityFlag)flags;
	m.timestamp = (uint64_t)ts;
	m.id = id;
	m.objectKind = CUPTI_ACTIVITY_OBJECT_THREAD;
	m.objectId.pt.processId = 999;
	m.objectId.pt.threadId = 1001;
	m.name = name;
	m.domain = domain;
	return m;
}

static void test_nvtx(void **state)
{
	tkc_conv *c = *state;
	tk_event ev;
	char name[32];
	snprintf(name, sizeof name, "ProfilerStep#%d", 3);
	CUpti_ActivityMarker2 a = marker(CUPTI_ACTIVITY_FLAG_MARKER_START, 11, 1000, name, NULL);
	CUpti_ActivityMarker2 b = marker(CUPTI_ACTIVITY_FLAG_MARKER_START, 12, 1100, "fwd \"q\"", "torch");
	CUpti_ActivityMarker2 be = marker(CUPTI_ACTIVITY_FLAG_MARKER_END, 12, 1400, NULL, NULL);
	CUpti_ActivityMarker2 ae = marker(CUPTI_ACTIVITY_FLAG_MARKER_END, 11, 2000, NULL, NULL);
	assert_int_equal(tkc_convert(c, (CUpti_Activity *)&a, &ev), 0);
	memset(name, 'x', sizeof name - 1); /* the converter kept its own copy */
	assert_int_equal(tkc_convert(c, (CUpti_Activity *)&b, &ev), 0);
	assert_int_equal(tkc_convert(c, (CUpti_Activity *)&be, &ev), 1);
	assert_int_equal(ev.ph, 'X');
	expect_sv(ev.cat, "user_annotation");
	expect_sv(ev.name, "fwd \"q\"");
	assert_int_equal(ev.ts, 1100);
	assert_int_equal(ev.dur, 300);
	expect_id(ev.pid, 999);
	expect_id(ev.tid, 1001);
	expect_sv(ev.args, "{\"domain\":\"torch\"}");
	assert_int_equal(tkc_convert(c, (CUpti_Activity *)&ae, &ev), 1);
	expect_sv(ev.name, "ProfilerStep#3");
	assert_int_equal(ev.dur, 1000);
	expect_sv(ev.args, "{}");

	CUpti_ActivityMarker2 i = marker(CUPTI_ACTIVITY_FLAG_MARKER_INSTANTANEOUS, 13, 3000, "ckpt", NULL);
	assert_int_equal(tkc_convert(c, (CUpti_Activity *)&i, &ev), 1);
	assert_int_equal(ev.ph, 'i');
	expect_sv(ev.extra, "\"s\":\"t\"");
	expect_sv(ev.name, "ckpt");

	/* an end without a start is an 'E'; a start never ended is drained as 'B' */
	CUpti_ActivityMarker2 lone = marker(CUPTI_ACTIVITY_FLAG_MARKER_END, 99, 4000, NULL, NULL);
	assert_int_equal(tkc_convert(c, (CUpti_Activity *)&lone, &ev), 1);
	assert_int_equal(ev.ph, 'E');
	assert_false(ev.has & TK_HAS_NAME);
	CUpti_ActivityMarker2 open = marker(CUPTI_ACTIVITY_FLAG_MARKER_START, 14, 5000, "open", NULL);
	assert_int_equal(tkc_convert(c, (CUpti_Activity *)&open, &ev), 0);
	assert_int_equal(tkc_conv_drain_open(c, &ev), 1);
	assert_int_equal(ev.ph, 'B');
	expect_sv(ev.name, "open");
	assert_int_equal(ev.ts, 5000);
	assert_int_equal(tkc_conv_drain_open(c, &ev), 0);
}

/* Many ranges open at once, ended in another order: the probing table
 * must find each one after removals. */
static void test_nvtx_many(void **state)
{
	tkc_conv *c = *state;
	tk_event ev;
	enum { N = 1500 };
	for (uint32_t i = 0; i < N; i++) {
		CUpti_ActivityMarker2 m = marker(CUPTI_ACTIVITY_FLAG_MARKER_START, i * 4096u, i, "r", NULL);
		assert_int_equal(tkc_convert(c, (CUpti_Activity *)&m, &ev), 0);
	}
	for (uint32_t k = 0; k < N; k++) {
		uint32_t i = (k * 7) % N;
		CUpti_ActivityMarker2 m = marker(CUPTI_ACTIVITY_FLAG_MARKER_END, i * 4096u, 10000 + i, NULL, NULL);
		assert_int_equal(tkc_convert(c, (CUpti_Activity *)&m, &ev), 1);
		assert_int_equal(ev.ph, 'X');
		assert_int_equal(ev.ts, i);
		assert_int_equal(ev.dur, 10000);
	}
	assert_int_equal(c->n_open, 0);
	/* past half the table, starts are written at once as 'B' */
	for (uint32_t i = 0; i < 2049; i++) {
		CUpti_ActivityMarker2 m = marker(CUPTI_ACTIVITY_FLAG_MARKER_START, i, i, "r", NULL);
		int r = tkc_convert(c, (CUpti_Activity *)&m, &ev);
		assert_int_equal(r, i < 2048 ? 0 : 1);
	}
	while (tkc_conv_drain_open(c, &ev) == 1)
		;
	assert_int_equal(c->n_open, 0);
}

static void test_dropped(void **state)
{
	tkc_conv *c = *state;
	tk_event ev;
	tkc_conv_dropped(c, 777, 7, 12, &ev);
	assert_int_equal(ev.ph, 'i');
	expect_sv(ev.cat, "overhead");
	expect_sv(ev.name, "tkcollect: dropped records");
	expect_id(ev.pid, 4242);
	expect_sv(ev.args, "{\"dropped records\":12,\"stream\":7}");
	expect_sv(ev.extra, "\"s\":\"p\"");
}

static void test_strip_version(void **state)
{
	(void)state;
	char b[64];
	assert_string_equal(tkc_strip_version("cudaLaunchKernel_v7000", b, sizeof b), "cudaLaunchKernel");
	assert_string_equal(tkc_strip_version("cudaMalloc", b, sizeof b), "cudaMalloc");
	assert_string_equal(tkc_strip_version("cuda_v", b, sizeof b), "cuda_v");
	assert_string_equal(tkc_strip_version("x_v2", b, 3), "x");
}

static void test_config(void **state)
{
	(void)state;
	char err[256];
	tkc_schedule s;
	assert_int_equal(tkc_parse_activities("kernel, memcpy", err, sizeof err),
	                 TKC_A_KERNEL | TKC_A_MEMCPY);
	assert_int_equal(tkc_parse_activities("all", err, sizeof err), TKC_A_ALL);
	assert_int_equal(tkc_parse_activities("driver-launch,kernel", err, sizeof err),
	                 TKC_A_DRIVER_LAUNCH | TKC_A_KERNEL);
	assert_true(TKC_A_DEFAULT & TKC_A_DRIVER_LAUNCH);
	assert_false(TKC_A_DEFAULT & TKC_A_DRIVER);
	assert_int_equal(tkc_parse_activities("kernel,gpu", err, sizeof err), -1);
	assert_non_null(strstr(err, "'gpu'"));
	assert_int_equal(tkc_parse_schedule("skip_first=1,wait=1,warmup=1,active=3,repeat=2", &s, err,
	                                    sizeof err),
	                 0);
	assert_true(s.on && s.skip_first == 1 && s.wait == 1 && s.warmup == 1 && s.active == 3 &&
	            s.repeat == 2);
	/* steps: skip, (wait, warmup, 3 active) x 2, then nothing */
	static const int want[] = {TKC_SCHED_NONE,   TKC_SCHED_NONE,   TKC_SCHED_WARMUP,
	                           TKC_SCHED_RECORD, TKC_SCHED_RECORD, TKC_SCHED_RECORD,
	                           TKC_SCHED_NONE,   TKC_SCHED_WARMUP, TKC_SCHED_RECORD,
	                           TKC_SCHED_RECORD, TKC_SCHED_RECORD, TKC_SCHED_NONE,
	                           TKC_SCHED_NONE};
	for (unsigned i = 0; i < sizeof want / sizeof *want; i++)
		assert_int_equal(tkc_schedule_action(&s, i), want[i]);
	assert_int_equal(tkc_parse_schedule("active=0", &s, err, sizeof err), -1);
	assert_int_equal(tkc_parse_schedule("wait=1,bogus=2", &s, err, sizeof err), -1);
	assert_int_equal(tkc_parse_schedule("wait=-1", &s, err, sizeof err), -1);
	assert_int_equal(tkc_parse_schedule("wait=2,active=1", &s, err, sizeof err), 0);
	assert_int_equal(tkc_schedule_action(&s, 1000001), TKC_SCHED_RECORD); /* repeat=0: forever */
	assert_true(tkc_rank_in_list("0,1", 1));
	assert_false(tkc_rank_in_list("0,1", 2));
	assert_true(tkc_rank_in_list("0, 4-7", 6));
	assert_false(tkc_rank_in_list("x,4-", 4));
}

static const char *env_a(const char *k)
{
	static const char *const kv[] = {"TK_OUTPUT_DIR", "/tmp/o", "OMPI_COMM_WORLD_RANK", "3",
	                                 "TK_RANKS", "1-2", "TK_ACTIVITIES", "kernel",
	                                 "TK_CAPTURE", "cudaProfilerApi", "TK_STEP_RANGE", "step*",
	                                 "WORLD_SIZE", "8", NULL};
	for (int i = 0; kv[i]; i += 2)
		if (!strcmp(kv[i], k))
			return kv[i + 1];
	return NULL;
}
static const char *env_b(const char *k)
{
	if (!strcmp(k, "RANK"))
		return "5";
	if (!strcmp(k, "SLURM_PROCID"))
		return "9";
	if (!strcmp(k, "TK_SCHEDULE"))
		return "wait=x";
	return NULL;
}

static void test_config_env(void **state)
{
	(void)state;
	tkc_config c;
	char err[256], path[2048];
	assert_int_equal(tkc_config_read(&c, env_a, err, sizeof err), 0);
	assert_string_equal(c.out_dir, "/tmp/o");
	assert_int_equal(c.rank, 3);
	assert_int_equal(c.world_size, 8);
	assert_false(c.rank_selected);
	assert_int_equal(c.activities, TKC_A_KERNEL);
	assert_true(c.capture_profiler_api);
	assert_string_equal(c.step_range, "step*");
	assert_int_equal(c.buffer_size, 8u << 20);
	assert_int_equal(tkc_output_path(&c, path, sizeof path), 0);
	char want[2048];
	snprintf(want, sizeof want, "/tmp/o/%s.%lld.rank3.tkb", c.host, (long long)c.pid);
	assert_string_equal(path, want);
	/* RANK wins over SLURM_PROCID; a bad schedule is reported and ignored */
	assert_int_equal(tkc_config_read(&c, env_b, err, sizeof err), -1);
	assert_non_null(strstr(err, "TK_SCHEDULE"));
	assert_false(c.sched.on);
	assert_int_equal(c.rank, 5);
	assert_true(c.rank_selected);
	assert_string_equal(c.step_range, "ProfilerStep#*");
	assert_int_equal(c.activities, TKC_A_DEFAULT);
}

static void test_windows(void **state)
{
	(void)state;
	static tkc_windows w;
	assert_false(tkc_windows_keep(&w, 5));
	tkc_windows_open(&w, 100);
	assert_false(tkc_windows_keep(&w, 99));
	assert_true(tkc_windows_keep(&w, 100));
	assert_true(tkc_windows_keep(&w, INT64_MAX - 1));
	tkc_windows_close(&w, 200);
	assert_false(tkc_windows_keep(&w, 200));
	tkc_windows_open(&w, 300);
	tkc_windows_open(&w, 350); /* already open: no new window */
	tkc_windows_close(&w, 400);
	assert_true(tkc_windows_keep(&w, 150));
	assert_false(tkc_windows_keep(&w, 250));
	assert_true(tkc_windows_keep(&w, 320));
	assert_false(tkc_windows_keep(&w, 400));
	assert_int_equal(atomic_load(&w.n), 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_kernel, setup, teardown),
		cmocka_unit_test_setup_teardown(test_memcpy_memset, setup, teardown),
		cmocka_unit_test_setup_teardown(test_api, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sync_and_context, setup, teardown),
		cmocka_unit_test_setup_teardown(test_overhead_and_unknown, setup, teardown),
		cmocka_unit_test_setup_teardown(test_nvtx, setup, teardown),
		cmocka_unit_test_setup_teardown(test_nvtx_many, setup, teardown),
		cmocka_unit_test_setup_teardown(test_dropped, setup, teardown),
		cmocka_unit_test(test_strip_version),
		cmocka_unit_test(test_config),
		cmocka_unit_test(test_config_env),
		cmocka_unit_test(test_windows),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
