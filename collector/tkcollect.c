/* tkcollect.c: the CUPTI injection entry points, capture range, step schedule and exit hooks. */
#include <errno.h>
#include <stdarg.h>
#include <fnmatch.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <generated_nvtx_meta.h>

#include "tkc_session.h"

#define TKC_EXPORT __attribute__((visibility("default")))

/* The one line a problem gets: built whole, written in one call. */
__attribute__((format(printf, 1, 2))) static void note(const char *fmt, ...)
{
	char line[768];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(line + 11, sizeof line - 12, fmt, ap);
	va_end(ap);
	memcpy(line, "tkcollect: ", 11);
	n = n < 0 ? 0 : n > (int)sizeof line - 13 ? (int)sizeof line - 13 : n;
	line[11 + n] = '\n';
	ssize_t r = write(2, line, (size_t)n + 12);
	(void)r;
}

/* ---- activity kinds ---- */
static const struct {
	unsigned bit;
	CUpti_ActivityKind kind;
	const char *name;
} kinds[] = {
	{TKC_A_KERNEL, CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, "kernel"},
	{TKC_A_MEMCPY, CUPTI_ACTIVITY_KIND_MEMCPY, "memcpy"},
	{TKC_A_MEMSET, CUPTI_ACTIVITY_KIND_MEMSET, "memset"},
	{TKC_A_RUNTIME, CUPTI_ACTIVITY_KIND_RUNTIME, "runtime"},
	{TKC_A_DRIVER, CUPTI_ACTIVITY_KIND_DRIVER, "driver"},
	{TKC_A_SYNC, CUPTI_ACTIVITY_KIND_SYNCHRONIZATION, "sync"},
	{TKC_A_NVTX, CUPTI_ACTIVITY_KIND_MARKER, "nvtx"},
	{TKC_A_OVERHEAD, CUPTI_ACTIVITY_KIND_OVERHEAD, "overhead"},
	{TKC_A_DRIVER_LAUNCH, CUPTI_ACTIVITY_KIND_DRIVER, "driver-launch"},
};

/* Enables (or disables) the configured kinds; reports the kinds that
 * failed once, in one line. */
static void set_kinds(int on)
{
	static int reported;
	char failed[256] = "";
	const char *why = NULL;
	if (!on) {
		for (unsigned i = 0; i < tkc_g.n_enabled_kinds; i++)
			tkc_g.api.ActivityDisable(tkc_g.enabled_kinds[i]);
		tkc_g.n_enabled_kinds = 0;
		return;
	}
	for (size_t i = 0; i < sizeof kinds / sizeof *kinds; i++) {
		if (!(tkc_g.cfg.activities & kinds[i].bit))
			continue;
		if (kinds[i].bit == TKC_A_DRIVER_LAUNCH && (tkc_g.cfg.activities & TKC_A_DRIVER))
			continue; /* enabled already, every record kept */
		CUptiResult r = tkc_g.api.ActivityEnable(kinds[i].kind);
		if (r == CUPTI_SUCCESS) {
			tkc_g.enabled_kinds[tkc_g.n_enabled_kinds++] = kinds[i].kind;
			continue;
		}
		why = tkc_cupti_strerror(&tkc_g.api, r);
		size_t n = strlen(failed);
		snprintf(failed + n, sizeof failed - n, "%s%s", n ? "," : "", kinds[i].name);
	}
	if (why && !reported++)
		note("cannot record %s (%s); recording the rest", failed, why);
}

/* ---- the gate: capture range x schedule -> kinds on, window open ----
 * Called under gate_mu from the profiler-API and NVTX callbacks. */
static void gate_apply(void)
{
	int64_t now = tkc_now();
	int cap = tkc_g.cfg.capture_profiler_api ? tkc_g.capture_on : 1;
	int want_on = cap && tkc_g.sched_action != TKC_SCHED_NONE;
	int want_window = cap && tkc_g.sched_action == TKC_SCHED_RECORD;
	if (want_window)
		tkc_windows_open(&tkc_g.win, now);
	else
		tkc_windows_close(&tkc_g.win, now);
	if (want_on != tkc_g.kinds_on) {
		set_kinds(want_on);
		tkc_g.kinds_on = want_on;
	}
}

static void capture(int on)
{
	pthread_mutex_lock(&tkc_g.gate_mu);
	tkc_g.capture_on = on;
	gate_apply();
	pthread_mutex_unlock(&tkc_g.gate_mu);
}

static void step_begin(void)
{
	pthread_mutex_lock(&tkc_g.gate_mu);
	tkc_g.sched_action = tkc_schedule_action(&tkc_g.cfg.sched, tkc_g.steps++);
	gate_apply();
	pthread_mutex_unlock(&tkc_g.gate_mu);
}

/* The message of an NVTX range push/start, when it is ASCII text. */
static const char *nvtx_message(CUpti_CallbackId cbid, const void *params)
{
	const nvtxEventAttributes_t *a = NULL;
	switch (cbid) {
	case CUPTI_CBID_NVTX_nvtxRangePushA: return ((const nvtxRangePushA_params *)params)->message;
	case CUPTI_CBID_NVTX_nvtxRangeStartA: return ((const nvtxRangeStartA_params *)params)->message;
	case CUPTI_CBID_NVTX_nvtxRangePushEx: a = ((const nvtxRangePushEx_params *)params)->eventAttrib; break;
	case CUPTI_CBID_NVTX_nvtxRangeStartEx: a = ((const nvtxRangeStartEx_params *)params)->eventAttrib; break;
	case CUPTI_CBID_NVTX_nvtxDomainRangePushEx:
		a = ((const nvtxDomainRangePushEx_params *)params)->core.eventAttrib;
		break;
	case CUPTI_CBID_NVTX_nvtxDomainRangeStartEx:
		a = ((const nvtxDomainRangeStartEx_params *)params)->core.eventAttrib;
		break;
	default: return NULL;
	}
	return a && a->messageType == NVTX_MESSAGE_TYPE_ASCII ? a->message.ascii : NULL;
}

static void CUPTIAPI on_callback(void *ud, CUpti_CallbackDomain dom, CUpti_CallbackId cbid,
                                 const void *data)
{
	(void)ud;
	if (dom == CUPTI_CB_DOMAIN_NVTX) {
		const CUpti_NvtxData *d = data;
		const char *msg = d && d->functionParams ? nvtx_message(cbid, d->functionParams) : NULL;
		if (msg && fnmatch(tkc_g.cfg.step_range, msg, 0) == 0)
			step_begin();
		return;
	}
	const CUpti_CallbackData *d = data;
	int enter = d->callbackSite == CUPTI_API_ENTER;
	if (dom == CUPTI_CB_DOMAIN_DRIVER_API && cbid == CUPTI_DRIVER_TRACE_CBID_cuProfilerStart) {
		if (enter)
			capture(1);
	} else if (dom == CUPTI_CB_DOMAIN_DRIVER_API && cbid == CUPTI_DRIVER_TRACE_CBID_cuProfilerStop) {
		if (!enter)
			capture(0);
	} else if (enter) {
		/* cudaDeviceReset, context destruction: the records go with the context */
		tkc_g.api.ActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
	}
}

static void enable_callbacks(void)
{
	static const CUpti_CallbackId flush_drv[] = {
		CUPTI_DRIVER_TRACE_CBID_cuCtxDestroy, CUPTI_DRIVER_TRACE_CBID_cuCtxDestroy_v2,
		CUPTI_DRIVER_TRACE_CBID_cuDevicePrimaryCtxReset,
		CUPTI_DRIVER_TRACE_CBID_cuDevicePrimaryCtxReset_v2};
	static const CUpti_CallbackId steps[] = {
		CUPTI_CBID_NVTX_nvtxRangePushA,        CUPTI_CBID_NVTX_nvtxRangeStartA,
		CUPTI_CBID_NVTX_nvtxRangePushEx,       CUPTI_CBID_NVTX_nvtxRangeStartEx,
		CUPTI_CBID_NVTX_nvtxDomainRangePushEx, CUPTI_CBID_NVTX_nvtxDomainRangeStartEx};
	tkc_cupti *a = &tkc_g.api;
	for (size_t i = 0; i < sizeof flush_drv / sizeof *flush_drv; i++)
		a->EnableCallback(1, tkc_g.sub, CUPTI_CB_DOMAIN_DRIVER_API, flush_drv[i]);
	a->EnableCallback(1, tkc_g.sub, CUPTI_CB_DOMAIN_RUNTIME_API,
	                  CUPTI_RUNTIME_TRACE_CBID_cudaDeviceReset_v3020);
	if (tkc_g.cfg.capture_profiler_api) {
		a->EnableCallback(1, tkc_g.sub, CUPTI_CB_DOMAIN_DRIVER_API,
		                  CUPTI_DRIVER_TRACE_CBID_cuProfilerStart);
		a->EnableCallback(1, tkc_g.sub, CUPTI_CB_DOMAIN_DRIVER_API,
		                  CUPTI_DRIVER_TRACE_CBID_cuProfilerStop);
	}
	if (tkc_g.cfg.sched.on)
		for (size_t i = 0; i < sizeof steps / sizeof *steps; i++)
			a->EnableCallback(1, tkc_g.sub, CUPTI_CB_DOMAIN_NVTX, steps[i]);
}

/* ---- signals: flush on SIGINT/SIGTERM, close the file on a crash ----
 * SIGINT/SIGTERM: a handler the program installed keeps running and we only
 * ask the writer to flush. Where the signal would kill the process, the
 * writer closes the file first, waited for at most two seconds (a thread
 * stopped by the signal may hold a lock the flush needs), then the signal
 * is re-raised.
 * Crash signals (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT): the file is
 * closed the same way, also before the program's own handler runs, which
 * usually ends the process with no atexit. Without this a crash loses what
 * CUPTI holds since its last periodic flush (on an H200: all 1,000 kernels
 * of a program that crashed a moment after them). */
const int tkc_signals[TKC_NSIGNALS] = {SIGINT, SIGTERM, SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};

static void on_signal(int sig, siginfo_t *info, void *uctx)
{
	int saved = errno, i = 0;
	while (i < TKC_NSIGNALS && tkc_signals[i] != sig)
		i++;
	if (i == TKC_NSIGNALS)
		return;
	struct sigaction *old = &tkc_g.old_sig[i];
	int crash = sig != SIGINT && sig != SIGTERM;
	int dfl = !(old->sa_flags & SA_SIGINFO) && old->sa_handler == SIG_DFL;
	if (crash || dfl)
		tkc_session_finish_from_signal(2000);
	else
		tkc_session_flush_from_signal();
	if (old->sa_flags & SA_SIGINFO) {
		old->sa_sigaction(sig, info, uctx);
	} else if (old->sa_handler == SIG_DFL) {
		sigaction(sig, old, NULL);
		/* blocked in this handler: delivered when it returns (a fault
		 * also recurs when the instruction runs again) */
		raise(sig);
	} else if (old->sa_handler != SIG_IGN) {
		old->sa_handler(sig);
	}
	errno = saved;
}

void tkc_signals_install(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = on_signal;
	sa.sa_flags = SA_SIGINFO | SA_RESTART | SA_ONSTACK;
	sigemptyset(&sa.sa_mask);
	for (int i = 0; i < TKC_NSIGNALS; i++) {
		struct sigaction cur;
		if (sigaction(tkc_signals[i], NULL, &cur) == 0 &&
		    ((cur.sa_flags & SA_SIGINFO) || cur.sa_handler != SIG_IGN)) {
			tkc_g.old_sig[i] = cur;
			sigaction(tkc_signals[i], &sa, NULL);
		}
	}
}

static void at_exit(void)
{
	tkc_session_close();
}

/* A child of fork() has no writer thread and no usable CUPTI state. */
static void in_child(void)
{
	tkc_g.forked = 1;
	tkc_g.subscribed = 0;
}

/* ---- start ---- */
static const char *get_env(const char *name)
{
	return getenv(name);
}

static int subscribe(void)
{
	tkc_cupti *a = &tkc_g.api;
	CUptiResult r = a->Subscribe(&tkc_g.sub, on_callback, NULL);
	if (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
		note("another profiler holds CUPTI (%s); not tracing", tkc_cupti_strerror(a, r));
		return -1;
	}
	if (r != CUPTI_SUCCESS) {
		note("cuptiSubscribe failed: %s (no GPU or CUDA driver?); not tracing",
		     tkc_cupti_strerror(a, r));
		return -1;
	}
	r = a->ActivityRegisterCallbacks(tkc_buffer_requested, tkc_buffer_completed);
	if (r != CUPTI_SUCCESS) {
		note("cuptiActivityRegisterCallbacks failed: %s; not tracing", tkc_cupti_strerror(a, r));
		a->Unsubscribe(tkc_g.sub);
		return -1;
	}
	return 0;
}

static int start_locked(void)
{
	char err[512];
	if (tkc_config_read(&tkc_g.cfg, get_env, err, sizeof err))
		note("%s (ignored)", err);
	if (!tkc_g.cfg.rank_selected)
		return 0;
	if (tkc_cupti_load(&tkc_g.api, err, sizeof err)) {
		note("%s; not tracing", err);
		return 0;
	}
	if (subscribe())
		return 0;
	tkc_cupti api = tkc_g.api;
	if (tkc_session_open(&tkc_g.cfg, &api, err, sizeof err)) {
		note("%s; not tracing", err);
		tkc_g.api.Unsubscribe(tkc_g.sub);
		return 0;
	}
	tkc_g.subscribed = 1;
	tkc_g.api.ActivityEnable(CUPTI_ACTIVITY_KIND_CONTEXT); /* context -> device for sync records */
	enable_callbacks();
	pthread_mutex_lock(&tkc_g.gate_mu);
	tkc_g.sched_action = tkc_g.cfg.sched.on ? TKC_SCHED_NONE : TKC_SCHED_RECORD;
	gate_apply();
	pthread_mutex_unlock(&tkc_g.gate_mu);
	if (tkc_g.cfg.flush_ms)
		tkc_g.flush_period_ok = tkc_g.api.ActivityFlushPeriod(tkc_g.cfg.flush_ms) == CUPTI_SUCCESS;
	atexit(at_exit);
	pthread_atfork(NULL, NULL, in_child);
	if (tkc_g.cfg.signals)
		tkc_signals_install();
	return 1;
}

int tkc_start(const char *how)
{
	static pthread_mutex_t once = PTHREAD_MUTEX_INITIALIZER;
	static int started, result;
	(void)how;
	pthread_mutex_lock(&once);
	if (!started) {
		started = 1;
		pthread_mutex_init(&tkc_g.gate_mu, NULL);
		result = start_locked();
	}
	pthread_mutex_unlock(&once);
	return result;
}

/* Called by the CUDA driver when CUDA_INJECTION64_PATH names this library.
 * Always reports success: a tracing problem must not fail cuInit. */
TKC_EXPORT int InitializeInjection(void)
{
	tkc_start("CUDA_INJECTION64_PATH");
	return 1;
}

/* LD_PRELOAD=libtkcollect.so: start at load time, unless the driver is
 * going to call InitializeInjection anyway. */
__attribute__((constructor)) static void tkc_preload(void)
{
	const char *pre = getenv("LD_PRELOAD");
	const char *inj = getenv("CUDA_INJECTION64_PATH");
	if (!pre || !strstr(pre, "tkcollect"))
		return;
	if (inj && strstr(inj, "tkcollect"))
		return;
	tkc_start("LD_PRELOAD");
}
