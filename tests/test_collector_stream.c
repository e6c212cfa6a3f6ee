/* test_collector_stream.c: synthetic CUPTI buffers through the collector's buffer callbacks into a .tkb, read back. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "tkc_session.h"

static char dir[256];

static const char *env(const char *k)
{
	return getenv(k);
}

static CUptiResult fake_dropped(CUcontext ctx, uint32_t stream, size_t *n)
{
	(void)ctx;
	*n = stream == 99 ? 3 : 0;
	return CUPTI_SUCCESS;
}

/* Opens a session writing into a fresh directory, with the real libcupti
 * for record iteration and names. */
static void open_session(size_t buffer_size, unsigned max_buffers, int64_t rank)
{
	tkc_config cfg;
	tkc_cupti api;
	char err[512];
	memset(&tkc_g, 0, sizeof tkc_g);
	assert_int_equal(tkc_config_read(&cfg, env, err, sizeof err), 0);
	snprintf(cfg.out_dir, sizeof cfg.out_dir, "%s", dir);
	cfg.rank = rank;
	cfg.world_size = 4;
	cfg.buffer_size = buffer_size;
	cfg.max_buffers = max_buffers;
	if (tkc_cupti_load(&api, err, sizeof err))
		fail_msg("libcupti: %s", err);
	api.ActivityGetNumDroppedRecords = fake_dropped;
	if (tkc_session_open(&cfg, &api, err, sizeof err))
		fail_msg("session: %s", err);
}

static void close_session(void)
{
	tkc_session_close();
	tkc_pool_free(&tkc_g.pool);
	for (int i = 0; i < 2; i++) {
		close(tkc_g.wake[i]);
		close(tkc_g.done[i]);
	}
}

/* Appends a record to a buffer the way CUPTI lays them out: back to back. */
static size_t put(uint8_t *buf, size_t at, const void *rec, size_t n)
{
	memcpy(buf + at, rec, n);
	return at + n;
}

static void complete(uint8_t *buf, size_t valid, uint32_t stream)
{
	tkc_buffer_completed(NULL, stream, buf, 0, valid);
}

static uint8_t *request(void)
{
	uint8_t *buf = NULL;
	size_t size = 0, maxrec = 1;
	tkc_buffer_requested(&buf, &size, &maxrec);
	assert_non_null(buf);
	assert_int_equal((uintptr_t)buf % 8, 0);
	assert_int_equal(maxrec, 0);
	assert_true(size >= 64 << 10);
	return buf;
}

static tk_reader *open_output(void)
{
	tk_reader *r = NULL;
	int rc = tk_reader_open_path(&r, tkc_session_path(), NULL);
	if (rc)
		fail_msg("%s: %s", tkc_session_path(), r ? tk_reader_error(r) : tk_strerror(rc));
	assert_string_equal(tk_reader_format(r), "tkb");
	return r;
}

typedef struct want {
	char ph;
	const char *cat, *name;
	int64_t ts, dur, pid, tid;
	const char *args;
} want;

static void check_event(const tk_event *ev, const want *w)
{
	assert_int_equal(ev->ph, w->ph);
	assert_string_equal(ev->cat.ptr, w->cat);
	if (w->name)
		assert_string_equal(ev->name.ptr, w->name);
	else
		assert_false(ev->has & TK_HAS_NAME);
	assert_true(ev->has & TK_HAS_TS);
	assert_int_equal(ev->ts, w->ts);
	if (w->ph == 'X')
		assert_int_equal(ev->dur, w->dur);
	assert_int_equal(ev->pid.kind, TK_ID_INT);
	assert_int_equal(ev->pid.num, w->pid);
	assert_int_equal(ev->tid.kind, TK_ID_INT);
	assert_int_equal(ev->tid.num, w->tid);
	assert_non_null(ev->args.ptr);
	assert_string_equal(ev->args.ptr, w->args);
}

static size_t put_kernel(uint8_t *buf, size_t at, const char *name, uint64_t ts, uint32_t corr)
{
	CUpti_ActivityKernel10 k;
	memset(&k, 0, sizeof k);
	k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
	k.registersPerThread = 40;
	k.start = ts;
	k.end = ts + 2500;
	k.deviceId = 1;
	k.contextId = 1;
	k.streamId = 7;
	k.gridX = 1024, k.gridY = 1, k.gridZ = 1;
	k.blockX = 128, k.blockY = 1, k.blockZ = 1;
	k.staticSharedMemory = 0;
	k.dynamicSharedMemory = 16384;
	k.correlationId = corr;
	k.name = name;
	return put(buf, at, &k, sizeof k);
}

static void test_round_trip(void **state)
{
	(void)state;
	open_session(1 << 20, 4, 2);
	int64_t pid = tkc_g.cfg.pid;
	uint8_t *buf = request();
	size_t at = 0;
	CUpti_ActivityAPI api;
	memset(&api, 0, sizeof api);
	api.kind = CUPTI_ACTIVITY_KIND_RUNTIME;
	api.cbid = CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000;
	api.start = 1000, api.end = 1400, api.processId = 500, api.threadId = 501, api.correlationId = 21;
	at = put(buf, at, &api, sizeof api);
	at = put_kernel(buf, at, "void gemm<float>(float*, int)", 2000, 21);
	CUpti_ActivityMemcpy6 m;
	memset(&m, 0, sizeof m);
	m.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
	m.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_DTOH;
	m.srcKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
	m.dstKind = CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE;
	m.bytes = 8000, m.start = 5000, m.end = 9000, m.deviceId = 1, m.contextId = 1, m.streamId = 7;
	m.correlationId = 22;
	at = put(buf, at, &m, sizeof m);
	CUpti_ActivityMemset4 s;
	memset(&s, 0, sizeof s);
	s.kind = CUPTI_ACTIVITY_KIND_MEMSET;
	s.bytes = 512, s.start = 9500, s.end = 9600, s.deviceId = 1, s.contextId = 1, s.streamId = 8;
	s.correlationId = 23, s.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
	at = put(buf, at, &s, sizeof s);
	/* by default, of the driver calls only those that launch GPU work are kept */
	CUpti_ActivityAPI drv = api;
	drv.kind = CUPTI_ACTIVITY_KIND_DRIVER;
	drv.cbid = CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx;
	drv.start = 9700, drv.end = 9800, drv.correlationId = 24;
	at = put(buf, at, &drv, sizeof drv);
	drv.cbid = CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2;
	drv.start = 9850, drv.end = 9900, drv.correlationId = 26;
	at = put(buf, at, &drv, sizeof drv);
	CUpti_ActivitySynchronization2 y;
	memset(&y, 0, sizeof y);
	y.kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
	y.type = CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE;
	y.start = 10000, y.end = 12000, y.correlationId = 25, y.contextId = 1;
	y.streamId = y.cudaEventId = CUPTI_SYNCHRONIZATION_INVALID_VALUE;
	at = put(buf, at, &y, sizeof y);
	CUpti_ActivityOverhead3 h;
	memset(&h, 0, sizeof h);
	h.kind = CUPTI_ACTIVITY_KIND_OVERHEAD;
	h.overheadKind = CUPTI_ACTIVITY_OVERHEAD_CUPTI_RESOURCE;
	h.objectKind = CUPTI_ACTIVITY_OBJECT_THREAD;
	h.objectId.pt.processId = 500, h.objectId.pt.threadId = 502;
	h.start = 12500, h.end = 12600;
	at = put(buf, at, &h, sizeof h);
	CUpti_ActivityMarker2 mk;
	memset(&mk, 0, sizeof mk);
	mk.kind = CUPTI_ACTIVITY_KIND_MARKER;
	mk.flags = CUPTI_ACTIVITY_FLAG_MARKER_START;
	mk.timestamp = 900, mk.id = 1, mk.objectKind = CUPTI_ACTIVITY_OBJECT_THREAD;
	mk.objectId.pt.processId = 500, mk.objectId.pt.threadId = 501;
	mk.name = "ProfilerStep#0";
	at = put(buf, at, &mk, sizeof mk);
	complete(buf, at, 99); /* this buffer's stream lost 3 records */

	buf = request();
	at = 0;
	mk.flags = CUPTI_ACTIVITY_FLAG_MARKER_END, mk.timestamp = 13000, mk.name = NULL;
	at = put(buf, at, &mk, sizeof mk);
	mk.flags = CUPTI_ACTIVITY_FLAG_MARKER_START, mk.timestamp = 14000, mk.id = 2, mk.name = "left open";
	at = put(buf, at, &mk, sizeof mk);
	complete(buf, at, 7);
	close_session();

	char host[256], drv_args[64];
	snprintf(host, sizeof host, "%s", tkc_g.cfg.host);
	snprintf(drv_args, sizeof drv_args, "{\"cbid\":%d,\"correlation\":24}",
	         (int)CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx);
	const want w[] = {
		{'X', "cuda_runtime", "cudaLaunchKernel", 1000, 400, 500, 501, "{\"cbid\":211,\"correlation\":21}"},
		{'X', "kernel", "void gemm<float>(float*, int)", 2000, 2500, 1, 7,
		 "{\"device\":1,\"context\":1,\"stream\":7,\"correlation\":21,\"registers per thread\":40,"
		 "\"shared memory\":16384,\"grid\":[1024,1,1],\"block\":[128,1,1]}"},
		{'X', "gpu_memcpy", "Memcpy DtoH (Device -> Pageable)", 5000, 4000, 1, 7,
		 "{\"device\":1,\"context\":1,\"stream\":7,\"correlation\":22,\"bytes\":8000,"
		 "\"memory bandwidth (GB/s)\":2}"},
		{'X', "gpu_memset", "Memset (Device)", 9500, 100, 1, 8,
		 "{\"device\":1,\"context\":1,\"stream\":8,\"correlation\":23,\"bytes\":512,"
		 "\"memory bandwidth (GB/s)\":5.12}"},
		{'X', "cuda_driver", "cuLaunchKernelEx", 9700, 100, 500, 501, drv_args},
		{'X', "cuda_sync", "Context Sync", 10000, 2000, 1, -1,
		 "{\"cuda_sync_kind\":\"Context Sync\",\"stream\":-1,\"correlation\":25,\"device\":1,"
		 "\"context\":1}"},
		{'X', "overhead", "Resource", 12500, 100, 500, 502, "{}"},
		{'i', "overhead", "tkcollect: dropped records", -1, 0, pid, 0,
		 "{\"dropped records\":3,\"stream\":99}"},
		{'X', "user_annotation", "ProfilerStep#0", 900, 12100, 500, 501, "{}"},
		{'B', "user_annotation", "left open", 14000, 0, 500, 501, "{}"},
	};
	tk_reader *r = open_output();
	const tk_event *ev;
	size_t n = 0;
	while (tk_reader_next(r, &ev) == TK_OK) {
		assert_true(n < sizeof w / sizeof *w);
		want x = w[n];
		if (x.ts < 0)
			x.ts = ev->ts; /* stamped when the buffer completed */
		check_event(ev, &x);
		n++;
	}
	assert_int_equal(n, sizeof w / sizeof *w);
	assert_string_equal(tk_reader_error(r), "");

	tk_tkb_info info;
	assert_int_equal(tk_reader_tkb_info(r, &info), TK_OK);
	assert_string_equal(info.producer.ptr, TKC_PRODUCER);
	assert_string_equal(info.host.ptr, host);
	assert_int_equal(info.pid, pid);
	assert_int_equal(info.rank, 2);
	assert_int_equal(info.world_size, 4);
	assert_true(info.has_start && info.has_end && info.complete);
	assert_true(info.start.realtime_ns > 1600000000000000000ll);
	assert_true(info.end.monotonic_ns >= info.start.monotonic_ns);
	assert_true(info.end.gpu_ns >= info.start.gpu_ns);
	tk_sv meta = tk_reader_meta_find(r, "tkcollect");
	assert_non_null(meta.ptr);
	assert_non_null(strstr(meta.ptr, "\"dropped_records\":3"));
	assert_non_null(strstr(meta.ptr, "\"records\":11,"));
	assert_non_null(strstr(meta.ptr, "\"events\":10,"));
	tk_reader_free(r);

	char want_name[1024];
	snprintf(want_name, sizeof want_name, "%s/%s.%lld.rank2.tkb", dir, host, (long long)pid);
	assert_string_equal(tkc_session_path(), want_name);
}

/* ---- many threads handing buffers over while the writer drains them ---- */
enum { THREADS = 8, BUFFERS_PER_THREAD = 60, BUF_SIZE = 64 << 10 };
static atomic_uint_least64_t refused_total;

static void *producer(void *arg)
{
	uint32_t t = (uint32_t)(uintptr_t)arg, seq = 0;
	for (int b = 0; b < BUFFERS_PER_THREAD; b++) {
		uint8_t *buf = NULL;
		size_t size = 0, maxrec;
		for (;;) {
			tkc_buffer_requested(&buf, &size, &maxrec);
			if (buf)
				break;
			atomic_fetch_add(&refused_total, 1); /* CUPTI would drop; we retry */
			usleep(100);
		}
		size_t at = 0;
		while (at + sizeof(CUpti_ActivityKernel10) <= size) {
			at = put_kernel(buf, at, "stress_kernel", (uint64_t)t << 40 | seq, t << 20 | seq);
			seq++;
		}
		tkc_buffer_completed(NULL, t, buf, size, at);
	}
	return (void *)(uintptr_t)seq;
}

static void test_stress(void **state)
{
	(void)state;
	pthread_t th[THREADS];
	uint32_t counts[THREADS];
	open_session(BUF_SIZE, 4, 0);
	for (uintptr_t i = 0; i < THREADS; i++)
		assert_int_equal(pthread_create(&th[i], NULL, producer, (void *)i), 0);
	uint64_t total = 0;
	for (int i = 0; i < THREADS; i++) {
		void *ret;
		pthread_join(th[i], &ret);
		counts[i] = (uint32_t)(uintptr_t)ret;
		total += counts[i];
	}
	assert_true(tkc_g.pool.n_blocks <= 4);
	close_session();

	uint8_t *seen = calloc((size_t)THREADS << 20, 1);
	tk_reader *r = open_output();
	const tk_event *ev;
	uint64_t n = 0;
	while (tk_reader_next(r, &ev) == TK_OK) {
		int64_t corr;
		assert_int_equal(tk_args_get_int(ev, "correlation", &corr), 0);
		uint32_t t = (uint32_t)corr >> 20, s = (uint32_t)corr & 0xfffff;
		assert_true(t < THREADS && s < counts[t]);
		assert_int_equal(ev->ts, (int64_t)((uint64_t)t << 40 | s));
		assert_int_equal(seen[corr], 0);
		seen[corr] = 1;
		n++;
	}
	assert_int_equal(n, total);
	assert_string_equal(tk_reader_error(r), "");
	tk_reader_free(r);
	free(seen);
	print_message("stress: %llu records from %d threads, %llu requests refused and retried\n",
	              (unsigned long long)total, THREADS, (unsigned long long)atomic_load(&refused_total));
}

/* ---- a crash after the program's last kernels ----
 * CUPTI holds records until it is flushed: fake_flush stands for it and
 * hands over a buffer of HELD kernels only on a forced flush. A child
 * process opens a session, installs the collector's signal handlers and
 * dies in the way the case says; the file must then be complete and hold
 * every kernel. On an H200 a program that crashed a moment after 1,000
 * kernels left a file with none of them before the crash signals were
 * handled. */
enum { HELD = 50 };
static uint8_t *held;
static size_t held_len;

static CUptiResult fake_flush(uint32_t flag)
{
	if ((flag & CUPTI_ACTIVITY_FLAG_FLUSH_FORCED) && held) {
		uint8_t *b = held;
		held = NULL;
		tkc_buffer_completed(NULL, 7, b, 0, held_len);
	}
	return CUPTI_SUCCESS;
}

static void own_handler(int sig)
{
	(void)sig;
	_exit(7);
}

enum { CRASH_SEGV, CRASH_ABORT, CRASH_TERM, CRASH_OWN_HANDLER, CRASH_NO_HANDLERS };

static volatile uintptr_t bad_address = 8;

static void crash_child(int how)
{
	/* the test runner's (and a sanitizer's) handlers are not the program's */
	for (int i = 0; i < TKC_NSIGNALS; i++)
		signal(tkc_signals[i], SIG_DFL);
	if (how == CRASH_OWN_HANDLER)
		signal(SIGSEGV, own_handler);
	open_session(64 << 10, 4, 0);
	tkc_g.api.ActivityFlushAll = fake_flush;
	tkc_g.subscribed = 1;
	held = request();
	held_len = 0;
	for (uint32_t i = 0; i < HELD; i++)
		held_len = put_kernel(held, held_len, "held_kernel", 1000 + 10 * i, 100 + i);
	if (how != CRASH_NO_HANDLERS)
		tkc_signals_install();
	if (how == CRASH_ABORT)
		abort();
	if (how == CRASH_TERM)
		raise(SIGTERM);
	*(volatile int *)bad_address = 1;
	_exit(3); /* not reached */
}

/* Kernels in the child's file, and whether it is complete (-1: no file). */
static long crash_file(pid_t pid, int *complete)
{
	tkc_config cfg;
	char err[256], path[1400];
	assert_int_equal(tkc_config_read(&cfg, env, err, sizeof err), 0);
	snprintf(path, sizeof path, "%s/%s.%lld.rank0.tkb", dir, cfg.host, (long long)pid);
	tk_reader *r = NULL;
	if (tk_reader_open_path(&r, path, NULL)) {
		tk_reader_free(r);
		return -1;
	}
	const tk_event *ev;
	long n = 0;
	while (tk_reader_next(r, &ev) == TK_OK)
		n += ev->cat.ptr && !strcmp(ev->cat.ptr, "kernel");
	tk_tkb_info info;
	*complete = tk_reader_tkb_info(r, &info) == TK_OK && info.complete &&
	            tk_reader_meta_find(r, "tkcollect").ptr;
	tk_reader_free(r);
	return n;
}

static void test_crash(void **state)
{
	(void)state;
	static const struct {
		int how, sig, code; /* killed by sig, or exit code */
		const char *what;
	} cases[] = {
	    {CRASH_SEGV, SIGSEGV, 0, "SIGSEGV"},
	    {CRASH_ABORT, SIGABRT, 0, "abort()"},
	    {CRASH_TERM, SIGTERM, 0, "SIGTERM"},
	    {CRASH_OWN_HANDLER, 0, 7, "SIGSEGV with the program's handler"},
	    {CRASH_NO_HANDLERS, SIGSEGV, 0, "SIGSEGV, no handlers (TK_SIGNALS=0)"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		fflush(NULL);
		pid_t pid = fork();
		assert_true(pid >= 0);
		if (pid == 0)
			crash_child(cases[i].how);
		int st = 0;
		assert_int_equal(waitpid(pid, &st, 0), pid);
		if (cases[i].sig) {
			if (!WIFSIGNALED(st) || WTERMSIG(st) != cases[i].sig)
				fail_msg("%s: status %#x, expected death by signal %d", cases[i].what, st,
				         cases[i].sig);
		} else if (!WIFEXITED(st) || WEXITSTATUS(st) != cases[i].code) {
			fail_msg("%s: status %#x, expected exit %d", cases[i].what, st, cases[i].code);
		}
		int complete = 0;
		long n = crash_file(pid, &complete);
		print_message("%s: %ld of %d kernels, file %s\n", cases[i].what, n, HELD,
		              complete ? "complete" : "not complete");
		if (cases[i].how == CRASH_NO_HANDLERS) {
			assert_int_equal(n, 0); /* what the handlers are for */
			assert_false(complete);
		} else {
			assert_int_equal(n, HELD);
			assert_true(complete);
		}
	}
}

static int make_dir(void **state)
{
	(void)state;
	const char *base = getenv("TMPDIR");
	snprintf(dir, sizeof dir, "%s/tkc_stream_XXXXXX", base && *base ? base : "/tmp");
	assert_non_null(mkdtemp(dir));
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_round_trip, make_dir),
		cmocka_unit_test_setup(test_stress, make_dir),
		cmocka_unit_test_setup(test_crash, make_dir),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
