/* tkc_config.c: the collector's environment variables, schedule and output name. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tkc.h"

static const struct {
	const char *name;
	unsigned bits;
} activity_names[] = {
	{"kernel", TKC_A_KERNEL},   {"memcpy", TKC_A_MEMCPY},     {"memset", TKC_A_MEMSET},
	{"runtime", TKC_A_RUNTIME}, {"driver", TKC_A_DRIVER},     {"sync", TKC_A_SYNC},
	{"nvtx", TKC_A_NVTX},       {"overhead", TKC_A_OVERHEAD}, {"driver-launch", TKC_A_DRIVER_LAUNCH},
	{"default", TKC_A_DEFAULT},
	{"all", TKC_A_ALL},
};

/* Splits s at commas; calls fn for each non-empty item. */
static int each_item(const char *s, int (*fn)(void *, const char *, size_t), void *ud)
{
	while (s && *s) {
		size_t n = strcspn(s, ",");
		while (n && (*s == ' ')) {
			s++;
			n--;
		}
		size_t m = n;
		while (m && s[m - 1] == ' ')
			m--;
		if (m) {
			int r = fn(ud, s, m);
			if (r)
				return r;
		}
		s += n;
		if (*s == ',')
			s++;
	}
	return 0;
}

typedef struct act_ctx {
	unsigned bits;
	char *err;
	size_t err_size;
} act_ctx;

static int act_item(void *ud, const char *s, size_t n)
{
	act_ctx *a = ud;
	for (size_t i = 0; i < sizeof activity_names / sizeof *activity_names; i++)
		if (strlen(activity_names[i].name) == n && !strncmp(activity_names[i].name, s, n)) {
			a->bits |= activity_names[i].bits;
			return 0;
		}
	snprintf(a->err, a->err_size,
	         "TK_ACTIVITIES: bad value '%.*s' (valid: kernel, memcpy, memset, runtime, driver, "
	         "driver-launch, sync, nvtx, overhead, default, all; several with commas)",
	         (int)n, s);
	return -1;
}

long tkc_parse_activities(const char *s, char *err, size_t err_size)
{
	act_ctx a = {0, err, err_size};
	if (each_item(s, act_item, &a))
		return -1;
	return (long)a.bits;
}

static int parse_uint(const char *s, size_t n, int *out)
{
	long v = 0;
	if (!n || n > 9)
		return -1;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (s[i] - '0');
	}
	*out = (int)v;
	return 0;
}

typedef struct sched_ctx {
	tkc_schedule *s;
	char *err;
	size_t err_size;
} sched_ctx;

static int sched_item(void *ud, const char *s, size_t n)
{
	static const char *const keys[] = {"skip_first", "wait", "warmup", "active", "repeat"};
	sched_ctx *c = ud;
	int *fields[] = {&c->s->skip_first, &c->s->wait, &c->s->warmup, &c->s->active, &c->s->repeat};
	const char *eq = memchr(s, '=', n);
	for (size_t i = 0; eq && i < 5; i++) {
		size_t kl = strlen(keys[i]);
		if ((size_t)(eq - s) == kl && !strncmp(s, keys[i], kl) &&
		    !parse_uint(eq + 1, n - kl - 1, fields[i]))
			return 0;
	}
	snprintf(c->err, c->err_size,
	         "TK_SCHEDULE: bad value '%.*s' (expected skip_first=N, wait=N, warmup=N, "
	         "active=N or repeat=N, several with commas)",
	         (int)n, s);
	return -1;
}

int tkc_parse_schedule(const char *s, tkc_schedule *out, char *err, size_t err_size)
{
	tkc_schedule t = {1, 0, 0, 0, 1, 0};
	sched_ctx c = {&t, err, err_size};
	if (each_item(s, sched_item, &c))
		return -1;
	if (t.active < 1) {
		snprintf(err, err_size, "TK_SCHEDULE: active must be at least 1");
		return -1;
	}
	*out = t;
	return 0;
}

/* As torch.profiler.schedule: skip_first steps, then cycles of wait,
 * warmup and active steps; repeat = 0 cycles forever. */
int tkc_schedule_action(const tkc_schedule *s, uint64_t step)
{
	if (!s->on)
		return TKC_SCHED_RECORD;
	if (step < (uint64_t)s->skip_first)
		return TKC_SCHED_NONE;
	step -= (uint64_t)s->skip_first;
	uint64_t cycle = (uint64_t)s->wait + (uint64_t)s->warmup + (uint64_t)s->active;
	if (s->repeat > 0 && step / cycle >= (uint64_t)s->repeat)
		return TKC_SCHED_NONE;
	uint64_t pos = step % cycle;
	if (pos < (uint64_t)s->wait)
		return TKC_SCHED_NONE;
	if (pos < (uint64_t)s->wait + (uint64_t)s->warmup)
		return TKC_SCHED_WARMUP;
	return TKC_SCHED_RECORD;
}

typedef struct rank_ctx {
	int64_t rank;
	int found;
} rank_ctx;

/* "3" or "4-7". */
static int rank_item(void *ud, const char *s, size_t n)
{
	rank_ctx *r = ud;
	const char *dash = memchr(s, '-', n);
	int lo, hi;
	if (dash) {
		if (parse_uint(s, (size_t)(dash - s), &lo) || parse_uint(dash + 1, n - (size_t)(dash - s) - 1, &hi))
			return 0;
	} else if (parse_uint(s, n, &lo)) {
		return 0;
	} else {
		hi = lo;
	}
	if (r->rank >= lo && r->rank <= hi)
		r->found = 1;
	return 0;
}

int tkc_rank_in_list(const char *list, int64_t rank)
{
	rank_ctx r = {rank, 0};
	each_item(list, rank_item, &r);
	return r.found;
}

static int64_t env_int(const char *(*get)(const char *), const char *const *names, int64_t dflt)
{
	for (; *names; names++) {
		const char *v = get(*names);
		char *end;
		if (!v || !*v)
			continue;
		errno = 0;
		long long x = strtoll(v, &end, 10);
		if (!errno && !*end && x >= 0)
			return x;
	}
	return dflt;
}

static void set_error(char *err, size_t err_size, int *failed, const char *msg)
{
	if (!*failed)
		snprintf(err, err_size, "%s", msg);
	*failed = 1;
}

static void read_numbers(tkc_config *c, const char *(*get)(const char *))
{
	static const char *const rank_vars[] = {"RANK", "OMPI_COMM_WORLD_RANK", "SLURM_PROCID",
	                                        "PMI_RANK", NULL};
	static const char *const world_vars[] = {"WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "SLURM_NTASKS",
	                                         "PMI_SIZE", NULL};
	static const char *const bufsz[] = {"TK_BUFFER_SIZE", NULL};
	static const char *const maxbuf[] = {"TK_MAX_BUFFERS", NULL};
	static const char *const flush[] = {"TK_FLUSH_MS", NULL};
	static const char *const compress[] = {"TK_COMPRESS", NULL};
	static const char *const sigs[] = {"TK_SIGNALS", NULL};
	c->rank = env_int(get, rank_vars, -1);
	c->world_size = env_int(get, world_vars, -1);
	c->buffer_size = (size_t)env_int(get, bufsz, 8 << 20);
	if (c->buffer_size < (64 << 10))
		c->buffer_size = 64 << 10;
	c->buffer_size = (c->buffer_size + 7) & ~(size_t)7;
	c->max_buffers = (unsigned)env_int(get, maxbuf, 16);
	if (c->max_buffers < 2)
		c->max_buffers = 2;
	c->flush_ms = (unsigned)env_int(get, flush, 1000);
	c->compress = env_int(get, compress, 1) != 0;
	c->signals = env_int(get, sigs, 1) != 0;
}

int tkc_config_read(tkc_config *c, const char *(*get)(const char *), char *err, size_t err_size)
{
	int failed = 0;
	char msg[256];
	memset(c, 0, sizeof *c);
	c->activities = TKC_A_DEFAULT;
	c->pid = (int64_t)getpid();
	if (gethostname(c->host, sizeof c->host - 1) != 0 || !c->host[0])
		snprintf(c->host, sizeof c->host, "unknown");
	read_numbers(c, get);
	const char *v = get("TK_OUTPUT_DIR");
	snprintf(c->out_dir, sizeof c->out_dir, "%s", v && *v ? v : ".");
	v = get("TK_ACTIVITIES");
	if (v && *v) {
		long bits = tkc_parse_activities(v, msg, sizeof msg);
		if (bits < 0)
			set_error(err, err_size, &failed, msg);
		else
			c->activities = (unsigned)bits;
	}
	v = get("TK_RANKS");
	c->rank_selected = !(v && *v) || tkc_rank_in_list(v, c->rank < 0 ? 0 : c->rank);
	v = get("TK_CAPTURE");
	if (v && *v) {
		if (!strcmp(v, "cudaProfilerApi"))
			c->capture_profiler_api = 1;
		else if (strcmp(v, "none")) {
			snprintf(msg, sizeof msg, "TK_CAPTURE: bad value '%.100s' (valid: cudaProfilerApi, none)", v);
			set_error(err, err_size, &failed, msg);
		}
	}
	v = get("TK_SCHEDULE");
	if (v && *v && tkc_parse_schedule(v, &c->sched, msg, sizeof msg))
		set_error(err, err_size, &failed, msg);
	v = get("TK_STEP_RANGE");
	snprintf(c->step_range, sizeof c->step_range, "%s", v && *v ? v : "ProfilerStep#*");
	return failed ? -1 : 0;
}

int tkc_output_path(const tkc_config *c, char *out, size_t cap)
{
	int n = snprintf(out, cap, "%s/%s.%lld.rank%lld.tkb", c->out_dir, c->host, (long long)c->pid,
	                 (long long)(c->rank < 0 ? 0 : c->rank));
	return n > 0 && (size_t)n < cap ? 0 : -1;
}
