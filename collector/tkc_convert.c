/* tkc_convert.c: CUPTI activity records to tracekit events shaped like Kineto's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tkc.h"

/* ---- a bounded appender for the args text ---- */
typedef struct out {
	char *p;
	size_t len, cap;
} out;

static void put_raw(out *o, const char *s, size_t n)
{
	if (o->len + n >= o->cap)
		n = o->len < o->cap ? o->cap - 1 - o->len : 0;
	memcpy(o->p + o->len, s, n);
	o->len += n;
	o->p[o->len] = 0;
}
static void put_s(out *o, const char *s)
{
	put_raw(o, s, strlen(s));
}
static void put_i(out *o, int64_t v)
{
	char b[24], *e = b + sizeof b, *q = e;
	uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
	do
		*--q = (char)('0' + u % 10);
	while (u /= 10);
	if (v < 0)
		*--q = '-';
	put_raw(o, q, (size_t)(e - q));
}
/* "key":value; the first member opens the object. */
static void key(out *o, const char *k)
{
	put_raw(o, o->len ? "," : "{", 1);
	put_raw(o, "\"", 1);
	put_s(o, k);
	put_raw(o, "\":", 2);
}
static void arg_i(out *o, const char *k, int64_t v)
{
	key(o, k);
	put_i(o, v);
}
static void arg_dim3(out *o, const char *k, int64_t x, int64_t y, int64_t z)
{
	key(o, k);
	put_raw(o, "[", 1);
	put_i(o, x);
	put_raw(o, ",", 1);
	put_i(o, y);
	put_raw(o, ",", 1);
	put_i(o, z);
	put_raw(o, "]", 1);
}
/* The length of the valid UTF-8 sequence at p (RFC 3629: no overlong
 * forms, no surrogates, at most U+10FFFF), 0 when there is none. */
static size_t utf8_seq(const unsigned char *p)
{
	unsigned c = p[0];
	size_t n = c < 0x80 ? 1 : c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
	for (size_t i = 1; i < n; i++)
		if ((p[i] & 0xc0) != 0x80)
			return 0;
	if ((c == 0xe0 && p[1] < 0xa0) || (c == 0xed && p[1] > 0x9f) || (c == 0xf0 && p[1] < 0x90) ||
	    (c == 0xf4 && p[1] > 0x8f))
		return 0;
	return n;
}

/* s was cut to max bytes (snprintf): drop a UTF-8 sequence split at its end. */
static void cut_utf8(char *s, size_t max)
{
	size_t n = strlen(s), j = n;
	if (n < max)
		return;
	while (j > 0 && n - j < 3 && ((unsigned char)s[j - 1] & 0xc0) == 0x80)
		j--;
	unsigned c = j > 0 ? (unsigned char)s[j - 1] : 0;
	size_t need = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 1;
	if (c >= 0xc0 && need > n - j + 1)
		s[j - 1] = 0;
}

/* A JSON string; names from NVTX may hold anything. Invalid UTF-8 becomes
 * U+FFFD, and a string too long for the args buffer is cut between
 * characters, leaving room for the closing quote and brace, so the args are
 * always JSON. */
static void arg_str(out *o, const char *k, const char *s)
{
	static const char hex[] = "0123456789abcdef";
	key(o, k);
	put_raw(o, "\"", 1);
	for (const unsigned char *p = (const unsigned char *)s; *p;) {
		char e[6];
		const char *w = e;
		size_t n = utf8_seq(p), adv = n ? n : 1;
		if (*p == '"' || *p == '\\') {
			e[0] = '\\', e[1] = (char)*p, n = 2;
		} else if (*p < 0x20) {
			memcpy(e, "\\u00", 4);
			e[4] = hex[*p >> 4], e[5] = hex[*p & 15], n = 6;
		} else if (!n) {
			w = "\\ufffd", n = 6;
		} else {
			w = (const char *)p;
		}
		if (o->len + n + 2 >= o->cap) /* the closing quote and brace must fit */
			break;
		put_raw(o, w, n);
		p += adv;
	}
	put_raw(o, "\"", 1);
}
/* Bytes per nanosecond is GB/s; Kineto writes it as a plain decimal. */
static void arg_bw(out *o, uint64_t bytes, int64_t dur)
{
	char b[48];
	double bw = dur > 0 ? (double)bytes / (double)dur : 0.0;
	int n = snprintf(b, sizeof b, "%.6g", bw);
	if (n > 0 && strpbrk(b, "naife") != NULL) /* nan/inf/exponent are not wanted in JSON */
		n = snprintf(b, sizeof b, "%.6f", bw);
	key(o, "memory bandwidth (GB/s)");
	put_raw(o, b, n > 0 ? (size_t)n : 0);
}
static void close_args(out *o)
{
	if (!o->len)
		put_raw(o, "{", 1);
	put_raw(o, "}", 1);
}

static tk_sv sv(const char *s)
{
	tk_sv v = {s, s ? strlen(s) : 0};
	return v;
}
static tk_id id_int(int64_t v)
{
	tk_id id = {TK_ID_INT, v, {NULL, 0}};
	return id;
}

static void ev_base(tk_event *ev, char ph, const char *cat, const char *name, int64_t ts, int64_t dur)
{
	memset(ev, 0, sizeof *ev);
	ev->ph = ph;
	ev->has = TK_HAS_PH | TK_HAS_TS | TK_HAS_CAT | TK_HAS_NAME | TK_HAS_VALID_JSON;
	ev->ts = ts;
	if (ph == 'X') {
		ev->has |= TK_HAS_DUR;
		ev->dur = dur;
	}
	ev->cat = sv(cat);
	ev->name = sv(name && *name ? name : "(unnamed)");
}
static void ev_args(tkc_conv *c, tk_event *ev, out *o)
{
	close_args(o);
	ev->args.ptr = c->args;
	ev->args.len = o->len;
}
/* end - start of unsigned CUPTI times: 0 when end comes first, held at INT64_MAX. */
static int64_t span(uint64_t start, uint64_t end)
{
	return end < start ? 0 : end - start > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)(end - start);
}

/* ---- names shared with Kineto's output ---- */
static const char *copy_kind_str(unsigned k)
{
	static const char *const s[] = {"Unknown", "HtoD", "DtoH", "HtoA", "AtoH", "AtoA",
	                                 "AtoD",    "DtoA", "DtoD", "HtoH", "PtoP"};
	return k < sizeof s / sizeof *s ? s[k] : "Unknown";
}
static const char *mem_kind_str(unsigned k)
{
	static const char *const s[] = {"Unknown", "Pageable",      "Pinned",        "Device",
	                                "Array",   "Managed",       "Device Static", "Managed Static"};
	return k < sizeof s / sizeof *s ? s[k] : "Unknown";
}
static const char *sync_str(unsigned t)
{
	static const char *const s[] = {"Unknown", "Event Sync", "Stream Wait Event", "Stream Sync",
	                                "Context Sync"};
	return t < sizeof s / sizeof *s ? s[t] : "Unknown";
}
static const char *overhead_str(unsigned k)
{
	switch (k) {
	case CUPTI_ACTIVITY_OVERHEAD_DRIVER_COMPILER: return "Compiler";
	case CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH: return "Buffer Flush";
	case CUPTI_ACTIVITY_OVERHEAD_CUPTI_INSTRUMENTATION: return "Instrumentation";
	case CUPTI_ACTIVITY_OVERHEAD_CUPTI_RESOURCE: return "Resource";
	case CUPTI_ACTIVITY_OVERHEAD_RUNTIME_TRIGGERED_MODULE_LOADING: return "Module Loading";
	case CUPTI_ACTIVITY_OVERHEAD_LAZY_FUNCTION_LOADING: return "Lazy Function Loading";
	case CUPTI_ACTIVITY_OVERHEAD_COMMAND_BUFFER_FULL: return "Command Buffer Full";
	case CUPTI_ACTIVITY_OVERHEAD_ACTIVITY_BUFFER_REQUEST: return "Activity Buffer Request";
	case CUPTI_ACTIVITY_OVERHEAD_UVM_ACTIVITY_INIT: return "UVM Activity Init";
	default: return "Unknown";
	}
}

const char *tkc_strip_version(const char *name, char *buf, size_t cap)
{
	size_t n = strlen(name), i = n;
	while (i > 0 && name[i - 1] >= '0' && name[i - 1] <= '9')
		i--;
	if (i < n && i >= 2 && name[i - 1] == 'v' && name[i - 2] == '_')
		n = i - 2;
	if (n >= cap)
		n = cap - 1;
	memcpy(buf, name, n);
	buf[n] = 0;
	return buf;
}

/* ---- context -> device, learnt from records that carry both ---- */
static void learn_ctx(tkc_conv *c, uint32_t ctx, uint32_t dev)
{
	for (unsigned i = 0; i < c->n_ctx; i++)
		if (c->ctx_id[i] == ctx) {
			c->ctx_dev[i] = dev;
			return;
		}
	unsigned i = c->n_ctx < 64 ? c->n_ctx++ : ctx % 64;
	c->ctx_id[i] = ctx;
	c->ctx_dev[i] = dev;
}
static int64_t ctx_device(const tkc_conv *c, uint32_t ctx)
{
	for (unsigned i = 0; i < c->n_ctx; i++)
		if (c->ctx_id[i] == ctx)
			return c->ctx_dev[i];
	return -1;
}

int tkc_conv_init(tkc_conv *c, int64_t pid, tkc_api_name_fn api_name, void *api_ud)
{
	memset(c, 0, sizeof *c);
	c->pid = pid;
	c->api_name = api_name;
	c->api_ud = api_ud;
	c->open_cap = 4096;
	c->open = calloc(c->open_cap, sizeof *c->open);
	return c->open ? 0 : TK_ERR_NOMEM;
}

void tkc_conv_free(tkc_conv *c)
{
	for (size_t i = 0; c->open && i < c->open_cap; i++)
		if (c->open[i].key) {
			free((char *)c->open[i].name);
			free((char *)c->open[i].domain);
		}
	free(c->open);
	c->open = NULL;
}

static void gpu_ids(tk_event *ev, uint32_t dev, uint32_t stream)
{
	ev->pid = id_int(dev);
	ev->tid = id_int(stream);
}

static int conv_kernel(tkc_conv *c, const CUpti_ActivityKernel10 *k, tk_event *ev)
{
	out o = {c->args, 0, sizeof c->args};
	learn_ctx(c, k->contextId, k->deviceId);
	ev_base(ev, 'X', "kernel", k->name, (int64_t)k->start, span(k->start, k->end));
	gpu_ids(ev, k->deviceId, k->streamId);
	arg_i(&o, "device", k->deviceId);
	arg_i(&o, "context", k->contextId);
	arg_i(&o, "stream", k->streamId);
	arg_i(&o, "correlation", k->correlationId);
	arg_i(&o, "registers per thread", k->registersPerThread);
	arg_i(&o, "shared memory", (int64_t)k->staticSharedMemory + k->dynamicSharedMemory);
	arg_dim3(&o, "grid", k->gridX, k->gridY, k->gridZ);
	arg_dim3(&o, "block", k->blockX, k->blockY, k->blockZ);
	if (k->graphId)
		arg_i(&o, "graph id", k->graphId);
	ev_args(c, ev, &o);
	return 1;
}

static int conv_memcpy(tkc_conv *c, const CUpti_ActivityMemcpy6 *m, tk_event *ev)
{
	out o = {c->args, 0, sizeof c->args};
	int64_t dur = span(m->start, m->end);
	learn_ctx(c, m->contextId, m->deviceId);
	snprintf(c->name, sizeof c->name, "Memcpy %s (%s -> %s)", copy_kind_str(m->copyKind),
	         mem_kind_str(m->srcKind), mem_kind_str(m->dstKind));
	ev_base(ev, 'X', "gpu_memcpy", c->name, (int64_t)m->start, dur);
	gpu_ids(ev, m->deviceId, m->streamId);
	arg_i(&o, "device", m->deviceId);
	arg_i(&o, "context", m->contextId);
	arg_i(&o, "stream", m->streamId);
	arg_i(&o, "correlation", m->correlationId);
	arg_i(&o, "bytes", (int64_t)m->bytes);
	arg_bw(&o, m->bytes, dur);
	ev_args(c, ev, &o);
	return 1;
}

static int conv_memset(tkc_conv *c, const CUpti_ActivityMemset4 *m, tk_event *ev)
{
	out o = {c->args, 0, sizeof c->args};
	int64_t dur = span(m->start, m->end);
	learn_ctx(c, m->contextId, m->deviceId);
	snprintf(c->name, sizeof c->name, "Memset (%s)", mem_kind_str(m->memoryKind));
	ev_base(ev, 'X', "gpu_memset", c->name, (int64_t)m->start, dur);
	gpu_ids(ev, m->deviceId, m->streamId);
	arg_i(&o, "device", m->deviceId);
	arg_i(&o, "context", m->contextId);
	arg_i(&o, "stream", m->streamId);
	arg_i(&o, "correlation", m->correlationId);
	arg_i(&o, "bytes", (int64_t)m->bytes);
	arg_bw(&o, m->bytes, dur);
	ev_args(c, ev, &o);
	return 1;
}

int tkc_driver_launches(const char *name)
{
	static const char *const prefix[] = {"cuLaunch", "cuGraphLaunch", "cuMemcpy", "cuMemset"};
	for (size_t i = 0; name && i < sizeof prefix / sizeof *prefix; i++)
		if (!strncmp(name, prefix[i], strlen(prefix[i])))
			return 1;
	return 0;
}

static int conv_api(tkc_conv *c, const CUpti_ActivityAPI *a, tk_event *ev)
{
	out o = {c->args, 0, sizeof c->args};
	int rt = a->kind == CUPTI_ACTIVITY_KIND_RUNTIME;
	CUpti_CallbackDomain dom = rt ? CUPTI_CB_DOMAIN_RUNTIME_API : CUPTI_CB_DOMAIN_DRIVER_API;
	const char *name = c->api_name ? c->api_name(c->api_ud, dom, a->cbid) : NULL;
	/* a call whose name is unknown is kept: it may launch */
	if (!rt && c->driver_launch_only && name && !tkc_driver_launches(name))
		return 0;
	if (!name) {
		snprintf(c->name, sizeof c->name, "%s cbid %u", rt ? "runtime" : "driver", a->cbid);
		name = c->name;
	}
	ev_base(ev, 'X', rt ? "cuda_runtime" : "cuda_driver", name, (int64_t)a->start,
	        span(a->start, a->end));
	ev->pid = id_int(a->processId);
	ev->tid = id_int(a->threadId);
	arg_i(&o, "cbid", a->cbid);
	arg_i(&o, "correlation", a->correlationId);
	if (a->returnValue)
		arg_i(&o, "return value", a->returnValue);
	ev_args(c, ev, &o);
	return 1;
}

static int conv_sync(tkc_conv *c, const CUpti_ActivitySynchronization2 *s, tk_event *ev)
{
	out o = {c->args, 0, sizeof c->args};
	int64_t dev = ctx_device(c, s->contextId);
	int64_t stream = s->streamId == CUPTI_SYNCHRONIZATION_INVALID_VALUE ? -1 : (int64_t)s->streamId;
	ev_base(ev, 'X', "cuda_sync", sync_str(s->type), (int64_t)s->start, span(s->start, s->end));
	ev->pid = id_int(dev < 0 ? 0 : dev);
	ev->tid = id_int(stream);
	arg_str(&o, "cuda_sync_kind", sync_str(s->type));
	arg_i(&o, "stream", stream);
	arg_i(&o, "correlation", s->correlationId);
	arg_i(&o, "device", dev);
	arg_i(&o, "context", s->contextId);
	if (s->cudaEventId != CUPTI_SYNCHRONIZATION_INVALID_VALUE &&
	    (s->type == CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE ||
	     s->type == CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT))
		arg_i(&o, "wait_on_cuda_event_id", s->cudaEventId);
	ev_args(c, ev, &o);
	return 1;
}

static void object_ids(tkc_conv *c, CUpti_ActivityObjectKind k, const CUpti_ActivityObjectKindId *id,
                       tk_event *ev)
{
	if (k == CUPTI_ACTIVITY_OBJECT_PROCESS || k == CUPTI_ACTIVITY_OBJECT_THREAD) {
		ev->pid = id_int(id->pt.processId ? (int64_t)id->pt.processId : c->pid);
		ev->tid = id_int(id->pt.threadId);
	} else if (k == CUPTI_ACTIVITY_OBJECT_UNKNOWN) {
		ev->pid = id_int(c->pid);
		ev->tid = id_int(0);
	} else {
		ev->pid = id_int(id->dcs.deviceId);
		ev->tid = id_int(id->dcs.streamId);
	}
}

static int conv_overhead(tkc_conv *c, const CUpti_ActivityOverhead3 *h, tk_event *ev)
{
	out o = {c->args, 0, sizeof c->args};
	ev_base(ev, 'X', "overhead", overhead_str(h->overheadKind), (int64_t)h->start,
	        span(h->start, h->end));
	object_ids(c, h->objectKind, &h->objectId, ev);
	if (h->correlationId)
		arg_i(&o, "correlation", h->correlationId);
	ev_args(c, ev, &o);
	return 1;
}

/* ---- NVTX ranges: a start and an end record become one 'X' event ---- */
static tkc_open_range *open_slot(tkc_conv *c, uint32_t id, int insert)
{
	uint64_t k = (uint64_t)id + 1;
	size_t m = c->open_cap - 1, i = (size_t)(id * 2654435761u) & m;
	for (size_t n = 0; n < c->open_cap; n++, i = (i + 1) & m) {
		if (c->open[i].key == k)
			return &c->open[i];
		if (!c->open[i].key)
			return insert && c->n_open < c->open_cap / 2 ? &c->open[i] : NULL;
	}
	return NULL;
}
/* Removing from linear probing: re-place the entries of the cluster after i. */
static void open_remove(tkc_conv *c, tkc_open_range *r)
{
	size_t m = c->open_cap - 1, i = (size_t)(r - c->open);
	free((char *)r->name);
	free((char *)r->domain);
	c->open[i].key = 0;
	c->n_open--;
	for (i = (i + 1) & m; c->open[i].key; i = (i + 1) & m) {
		tkc_open_range t = c->open[i];
		c->open[i].key = 0;
		*open_slot(c, (uint32_t)(t.key - 1), 1) = t;
	}
}
static char *dup_or_null(const char *s)
{
	return s && *s ? strdup(s) : NULL;
}
static int marker_event(tkc_conv *c, char ph, const char *name, const char *domain, int64_t ts,
                        int64_t dur, tk_event *ev)
{
	out o = {c->args, 0, sizeof c->args};
	snprintf(c->name, sizeof c->name, "%s", name ? name : "");
	cut_utf8(c->name, sizeof c->name - 1); /* a long name is cut between characters */
	ev_base(ev, ph, "user_annotation", c->name, ts, dur);
	if (ph == 'i')
		ev->extra = sv("\"s\":\"t\"");
	if (domain && *domain)
		arg_str(&o, "domain", domain);
	ev_args(c, ev, &o);
	return 1;
}

static int conv_marker(tkc_conv *c, const CUpti_ActivityMarker2 *m, tk_event *ev)
{
	int64_t ts = (int64_t)m->timestamp;
	if (m->flags & CUPTI_ACTIVITY_FLAG_MARKER_INSTANTANEOUS) {
		marker_event(c, 'i', m->name, m->domain, ts, 0, ev);
		object_ids(c, m->objectKind, &m->objectId, ev);
		return 1;
	}
	if (m->flags & CUPTI_ACTIVITY_FLAG_MARKER_START) {
		tkc_open_range *r = open_slot(c, m->id, 1);
		if (!r || r->key) { /* table full or id reused: open it as a 'B' event now */
			marker_event(c, 'B', m->name, m->domain, ts, 0, ev);
			object_ids(c, m->objectKind, &m->objectId, ev);
			return 1;
		}
		r->key = (uint64_t)m->id + 1;
		r->ts = ts;
		r->name = dup_or_null(m->name);
		r->domain = dup_or_null(m->domain);
		tk_event tmp;
		object_ids(c, m->objectKind, &m->objectId, &tmp);
		r->pid = tmp.pid.num;
		r->tid = tmp.tid.num;
		c->n_open++;
		return 0;
	}
	if (m->flags & CUPTI_ACTIVITY_FLAG_MARKER_END) {
		tkc_open_range *r = open_slot(c, m->id, 0);
		if (!r) {
			marker_event(c, 'E', NULL, NULL, ts, 0, ev);
			ev->has &= ~(unsigned)TK_HAS_NAME;
			ev->name = sv(NULL);
			object_ids(c, m->objectKind, &m->objectId, ev);
			return 1;
		}
		marker_event(c, 'X', r->name ? r->name : "(unnamed)", r->domain, r->ts,
		             span((uint64_t)r->ts, m->timestamp), ev);
		ev->pid = id_int(r->pid);
		ev->tid = id_int(r->tid);
		open_remove(c, r);
		return 1;
	}
	return 0;
}

int tkc_conv_drain_open(tkc_conv *c, tk_event *ev)
{
	for (size_t i = 0; c->n_open && i < c->open_cap; i++) {
		tkc_open_range *r = &c->open[i];
		if (!r->key)
			continue;
		marker_event(c, 'B', r->name ? r->name : "(unnamed)", r->domain, r->ts, 0, ev);
		ev->pid = id_int(r->pid);
		ev->tid = id_int(r->tid);
		open_remove(c, r);
		return 1;
	}
	return 0;
}

int tkc_convert(tkc_conv *c, const CUpti_Activity *rec, tk_event *ev)
{
	switch (rec->kind) {
	case CUPTI_ACTIVITY_KIND_KERNEL:
	case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
		return conv_kernel(c, (const CUpti_ActivityKernel10 *)(const void *)rec, ev);
	case CUPTI_ACTIVITY_KIND_MEMCPY:
		return conv_memcpy(c, (const CUpti_ActivityMemcpy6 *)(const void *)rec, ev);
	case CUPTI_ACTIVITY_KIND_MEMSET:
		return conv_memset(c, (const CUpti_ActivityMemset4 *)(const void *)rec, ev);
	case CUPTI_ACTIVITY_KIND_RUNTIME:
	case CUPTI_ACTIVITY_KIND_DRIVER:
		return conv_api(c, (const CUpti_ActivityAPI *)(const void *)rec, ev);
	case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION:
		return conv_sync(c, (const CUpti_ActivitySynchronization2 *)(const void *)rec, ev);
	case CUPTI_ACTIVITY_KIND_OVERHEAD:
		return conv_overhead(c, (const CUpti_ActivityOverhead3 *)(const void *)rec, ev);
	case CUPTI_ACTIVITY_KIND_MARKER:
		return conv_marker(c, (const CUpti_ActivityMarker2 *)(const void *)rec, ev);
	case CUPTI_ACTIVITY_KIND_CONTEXT: {
		const CUpti_ActivityContext3 *x = (const CUpti_ActivityContext3 *)(const void *)rec;
		learn_ctx(c, x->contextId, x->deviceId);
		return 0;
	}
	default:
		c->unknown_kinds++;
		return 0;
	}
}

void tkc_conv_dropped(tkc_conv *c, int64_t ts, uint32_t stream, uint64_t n, tk_event *ev)
{
	out o = {c->args, 0, sizeof c->args};
	ev_base(ev, 'i', "overhead", "tkcollect: dropped records", ts, 0);
	ev->pid = id_int(c->pid);
	ev->tid = id_int(0);
	ev->extra = sv("\"s\":\"p\"");
	arg_i(&o, "dropped records", (int64_t)n);
	arg_i(&o, "stream", stream);
	ev_args(c, ev, &o);
}
