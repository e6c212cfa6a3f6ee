/* tkc_session.c: one traced process: buffer pool, writer thread, output file and its closing. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "tkc_session.h"

tkc_session tkc_g;

static int64_t gpu_now(void)
{
	uint64_t ts = 0;
	if (tkc_g.api.GetTimestamp && tkc_g.api.GetTimestamp(&ts) == CUPTI_SUCCESS)
		return (int64_t)ts;
	struct timespec t;
	clock_gettime(CLOCK_REALTIME, &t);
	return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}
int64_t tkc_now(void)
{
	return gpu_now();
}

static const char *api_name(void *ud, CUpti_CallbackDomain dom, uint32_t cbid)
{
	tkc_session *s = ud;
	const char *name = NULL;
	int rt = dom == CUPTI_CB_DOMAIN_RUNTIME_API;
	char (*cache)[64] = rt ? s->rt_names : s->drv_names;
	if (cbid < TKC_NAME_CACHE && cache[cbid][0])
		return cache[cbid];
	if (!s->api.GetCallbackName || s->api.GetCallbackName(dom, cbid, &name) != CUPTI_SUCCESS || !name)
		return NULL;
	if (cbid >= TKC_NAME_CACHE)
		return name;
	/* runtime names carry the version that added them: cudaLaunchKernel_v7000;
	 * driver names are the real symbols (cuMemAlloc_v2) and stay */
	if (rt)
		tkc_strip_version(name, cache[cbid], sizeof cache[cbid]);
	else
		snprintf(cache[cbid], sizeof cache[cbid], "%s", name);
	return cache[cbid];
}

void CUPTIAPI tkc_buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records)
{
	tkc_block *b = atomic_load(&tkc_g.closed) ? NULL : tkc_pool_get(&tkc_g.pool);
	*buffer = b ? b->data : NULL;
	*size = b ? b->size : 0;
	*max_records = 0;
}

void CUPTIAPI tkc_buffer_completed(CUcontext ctx, uint32_t stream, uint8_t *buffer, size_t size,
                                   size_t valid)
{
	(void)size;
	if (!buffer)
		return;
	tkc_block *b = tkc_block_of(buffer);
	size_t dropped = 0;
	b->valid = valid;
	b->stream = stream;
	if (tkc_g.api.ActivityGetNumDroppedRecords &&
	    tkc_g.api.ActivityGetNumDroppedRecords(ctx, stream, &dropped) == CUPTI_SUCCESS)
		b->dropped = dropped;
	b->done_ts = b->dropped ? gpu_now() : 0;
	if (atomic_load(&tkc_g.closed))
		tkc_pool_put(&tkc_g.pool, b); /* too late to be written */
	else
		tkc_pool_push_done(&tkc_g.pool, b);
}

static void process_queue(void)
{
	tkc_block *b = tkc_pool_take_done(&tkc_g.pool);
	while (b) {
		tkc_block *next = b->next;
		tkc_writer_block(&tkc_g.w, &tkc_g.api, b);
		tkc_pool_put(&tkc_g.pool, b);
		b = next;
	}
}

static void write_summary(void)
{
	char json[2048];
	tkc_writer *w = &tkc_g.w;
	snprintf(json, sizeof json,
	         "{\"version\":\"%s\",\"cupti\":\"%s\",\"activities\":%u,\"records\":%llu,"
	         "\"events\":%llu,\"dropped_records\":%llu,\"buffers_refused\":%llu,"
	         "\"buffers\":%llu,\"outside_windows\":%llu,\"unknown_records\":%llu}",
	         TK_VERSION_STRING, tkc_g.api.path[0] ? "loaded" : "none", tkc_g.cfg.activities,
	         (unsigned long long)w->records, (unsigned long long)w->events,
	         (unsigned long long)w->dropped,
	         (unsigned long long)atomic_load(&tkc_g.pool.refused),
	         (unsigned long long)atomic_load(&tkc_g.pool.completed),
	         (unsigned long long)w->filtered, (unsigned long long)w->conv.unknown_kinds);
	w->sink->meta(w->sink, "tkcollect", json);
}

/* The last words: ranges still open, the summary, the end anchors. */
static void finish_file(void)
{
	tk_event ev;
	tk_tkb_anchor end;
	process_queue();
	while (tkc_conv_drain_open(&tkc_g.w.conv, &ev) == 1)
		if (tkc_g.w.sink->event(tkc_g.w.sink, &ev) == TK_OK)
			tkc_g.w.events++;
	write_summary();
	tk_tkb_anchor_now(&end, gpu_now());
	if (tkc_g.w.sink->close(tkc_g.w.sink, &end) < 0)
		fprintf(stderr, "tkcollect: %s: %s\n", tkc_g.path, tkc_g.w.sink->error(tkc_g.w.sink));
	atomic_store(&tkc_g.closed, 1);
}

static void drain_wake(int *finish, int *flush, int *quit)
{
	char buf[256];
	ssize_t n;
	while ((n = read(tkc_g.wake[0], buf, sizeof buf)) > 0)
		for (ssize_t i = 0; i < n; i++) {
			*finish |= buf[i] == 'x';
			*flush |= buf[i] == 'f';
			*quit |= buf[i] == 'q';
		}
}

/* The writer thread: wakes for each completed buffer, for a flush or
 * finish request from a signal handler, for the close, and every flush
 * period when CUPTI's own periodic flush is not available. */
static void *writer_main(void *arg)
{
	(void)arg;
	for (;;) {
		int finish = 0, flush = 0, quit = 0;
		struct pollfd p = {tkc_g.wake[0], POLLIN, 0};
		int period = tkc_g.cfg.flush_ms && !tkc_g.flush_period_ok ? (int)tkc_g.cfg.flush_ms : -1;
		if (poll(&p, 1, period) == 0 && tkc_g.subscribed)
			tkc_g.api.ActivityFlushAll(0);
		drain_wake(&finish, &flush, &quit);
		if ((finish || flush) && tkc_g.subscribed)
			tkc_g.api.ActivityFlushAll(finish ? CUPTI_ACTIVITY_FLAG_FLUSH_FORCED : 0);
		process_queue();
		if (finish || quit)
			break;
	}
	finish_file();
	char d = 'd';
	ssize_t r = write(tkc_g.done[1], &d, 1);
	(void)r;
	return NULL;
}

static int make_pipe(int fd[2])
{
	if (pipe(fd))
		return -1;
	for (int i = 0; i < 2; i++) {
		fcntl(fd[i], F_SETFL, fcntl(fd[i], F_GETFL) | O_NONBLOCK);
		fcntl(fd[i], F_SETFD, FD_CLOEXEC);
	}
	return 0;
}

static int open_sink(char *err, size_t err_size)
{
	tk_tkb_header h = {TKC_PRODUCER, tkc_g.cfg.host, tkc_g.cfg.pid, tkc_g.cfg.rank,
	                   tkc_g.cfg.world_size, &tkc_g.start};
	tk_tkb_opts o = {tkc_g.cfg.compress, 0, 0};
	if (mkdir(tkc_g.cfg.out_dir, 0777) && errno != EEXIST) {
		snprintf(err, err_size, "cannot create %s: %s", tkc_g.cfg.out_dir, strerror(errno));
		return -1;
	}
	if (tkc_output_path(&tkc_g.cfg, tkc_g.path, sizeof tkc_g.path)) {
		snprintf(err, err_size, "output path too long");
		return -1;
	}
	tk_tkb_anchor_now(&tkc_g.start, gpu_now());
	tkc_g.w.sink = tkc_sink_tkb_open(tkc_g.path, &h, &o, err, err_size);
	return tkc_g.w.sink ? 0 : -1;
}

/* The writer thread starts with SIGINT and SIGTERM blocked: a signal
 * handler that waits for the writer must never run on the writer. */
static int start_thread(void)
{
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	int r = pthread_create(&tkc_g.thread, NULL, writer_main, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return r;
}

int tkc_session_open(const tkc_config *cfg, const tkc_cupti *api, char *err, size_t err_size)
{
	if (cfg != &tkc_g.cfg)
		tkc_g.cfg = *cfg;
	if (api != &tkc_g.api)
		tkc_g.api = *api;
	tkc_g.wake[0] = tkc_g.wake[1] = tkc_g.done[0] = tkc_g.done[1] = -1;
	if (make_pipe(tkc_g.wake) || make_pipe(tkc_g.done)) {
		snprintf(err, err_size, "pipe: %s", strerror(errno));
		return -1;
	}
	if (tkc_pool_init(&tkc_g.pool, cfg->buffer_size, cfg->max_buffers, 2) ||
	    tkc_conv_init(&tkc_g.w.conv, cfg->pid, api_name, &tkc_g)) {
		snprintf(err, err_size, "out of memory");
		return -1;
	}
	tkc_g.w.conv.driver_launch_only =
	    (cfg->activities & TKC_A_DRIVER_LAUNCH) && !(cfg->activities & TKC_A_DRIVER);
	tkc_g.pool.wake_fd = tkc_g.wake[1];
	tkc_g.w.win = &tkc_g.win;
	/* without a capture range or schedule everything is kept, also records
	 * stamped before this moment */
	if (!cfg->capture_profiler_api && !cfg->sched.on)
		tkc_windows_open(&tkc_g.win, INT64_MIN);
	if (open_sink(err, err_size))
		return -1;
	if (start_thread()) {
		snprintf(err, err_size, "cannot start the writer thread");
		tkc_g.w.sink->free(tkc_g.w.sink);
		tkc_g.w.sink = NULL;
		unlink(tkc_g.path);
		return -1;
	}
	tkc_g.thread_started = 1;
	return 0;
}

const char *tkc_session_path(void)
{
	return tkc_g.path;
}

void tkc_session_close(void)
{
	if (!tkc_g.thread_started || tkc_g.forked || atomic_exchange(&tkc_g.closing, 1))
		return;
	if (tkc_g.subscribed) {
		for (unsigned k = 0; k < tkc_g.n_enabled_kinds; k++)
			tkc_g.api.ActivityDisable(tkc_g.enabled_kinds[k]);
		tkc_g.api.ActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
	}
	char q = 'q';
	ssize_t r = write(tkc_g.wake[1], &q, 1);
	(void)r;
	pthread_join(tkc_g.thread, NULL);
	tkc_g.thread_started = 0;
	tkc_g.w.sink->free(tkc_g.w.sink);
	tkc_g.w.sink = NULL;
	tkc_conv_free(&tkc_g.w.conv);
}

/* Called from a signal handler: asks the writer to flush and close, and
 * waits for it at most `ms` milliseconds. Only async-signal-safe calls. */
void tkc_session_finish_from_signal(int ms)
{
	if (!tkc_g.thread_started || tkc_g.forked || atomic_exchange(&tkc_g.closing, 1))
		return;
	char x = 'x';
	ssize_t r = write(tkc_g.wake[1], &x, 1);
	(void)r;
	struct pollfd p = {tkc_g.done[0], POLLIN, 0};
	poll(&p, 1, ms);
}

void tkc_session_flush_from_signal(void)
{
	if (!tkc_g.thread_started || atomic_load(&tkc_g.closed))
		return;
	char f = 'f';
	ssize_t r = write(tkc_g.wake[1], &f, 1);
	(void)r;
}
