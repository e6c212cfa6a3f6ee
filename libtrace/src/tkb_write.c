/* tkb_write.c: .tkb output for collectors: per-thread buffers and a thread-safe writer (the tk_writer format is formats/tkb.c). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "tkb_int.h"

/* ---- per-thread buffers ---- */

struct tk_tkb_buf {
	tk_event *evs;
	size_t n, cap;
	char *arena;
	size_t used, arena_cap;
};

tk_tkb_buf *tk_tkb_buf_new(size_t max_events, size_t arena_bytes)
{
	tk_tkb_buf *b = calloc(1, sizeof *b);
	if (!b)
		return NULL;
	b->cap = max_events ? max_events : 1;
	b->arena_cap = arena_bytes;
	b->evs = malloc(b->cap * sizeof *b->evs);
	b->arena = malloc(arena_bytes ? arena_bytes : 1);
	if (!b->evs || !b->arena) {
		tk_tkb_buf_free(b);
		return NULL;
	}
	return b;
}

static size_t sv_need(tk_sv s)
{
	return s.ptr ? s.len + 1 : 0;
}

static tk_sv sv_put(tk_tkb_buf *b, tk_sv s)
{
	if (!s.ptr)
		return s;
	char *d = b->arena + b->used;
	memcpy(d, s.ptr, s.len);
	d[s.len] = 0;
	b->used += s.len + 1;
	return (tk_sv){d, s.len};
}

static size_t id_need(const tk_id *id)
{
	return id->kind == TK_ID_STR ? sv_need(id->str) : 0;
}

static void id_put(tk_tkb_buf *b, tk_id *id)
{
	if (id->kind == TK_ID_STR)
		id->str = sv_put(b, id->str);
}

int tk_tkb_buf_append(tk_tkb_buf *b, const tk_event *ev)
{
	if (!b || !ev)
		return TK_ERR_ARG;
	size_t need = sv_need(ev->name) + sv_need(ev->cat) + sv_need(ev->args) + sv_need(ev->extra) +
	              id_need(&ev->pid) + id_need(&ev->tid) + id_need(&ev->id);
	if (b->n == b->cap || need > b->arena_cap - b->used)
		return TK_ERR_LIMIT;
	tk_event *d = &b->evs[b->n++];
	*d = *ev;
	d->name = sv_put(b, ev->name);
	d->cat = sv_put(b, ev->cat);
	d->args = sv_put(b, ev->args);
	d->extra = sv_put(b, ev->extra);
	id_put(b, &d->pid);
	id_put(b, &d->tid);
	id_put(b, &d->id);
	return 0;
}

size_t tk_tkb_buf_count(const tk_tkb_buf *b)
{
	return b ? b->n : 0;
}

void tk_tkb_buf_reset(tk_tkb_buf *b)
{
	if (b)
		b->n = b->used = 0;
}

void tk_tkb_buf_free(tk_tkb_buf *b)
{
	if (!b)
		return;
	free(b->evs);
	free(b->arena);
	free(b);
}

/* ---- the collector's writer ---- */

struct tk_tkb_writer {
	pthread_mutex_t mu;
	tk__err err; /* code: the sticky error (a refused argument is not) */
	int fd, own_fd, closed;
	char *name;
	tk__tkb_enc enc;
	tk__buf out;
};

void tk_tkb_anchor_now(tk_tkb_anchor *a, int64_t gpu_ns)
{
	struct timespec rt, mt;
	clock_gettime(CLOCK_REALTIME, &rt);
	clock_gettime(CLOCK_MONOTONIC, &mt);
	a->gpu_ns = gpu_ns;
	a->realtime_ns = (int64_t)rt.tv_sec * 1000000000 + rt.tv_nsec;
	a->monotonic_ns = (int64_t)mt.tv_sec * 1000000000 + mt.tv_nsec;
}

/* Writes w->out: whole chunks, so a crash leaves at most one partial chunk. */
static int put_out(tk_tkb_writer *w)
{
	int e = tk__write_all(w->fd, w->out.p, w->out.len, NULL);
	w->out.len = 0;
	return e ? tk__err_set(&w->err, TK_ERR_IO, "%s: write failed: %s", w->name, strerror(e)) : 0;
}

/* fd < 0: the file could not be made (open_errno says why); the writer
 * is still made, to hold that message. */
static int wstart(tk_tkb_writer **out, int fd, int own, const char *name, const tk_tkb_header *h,
                  const tk_tkb_opts *o, int open_errno)
{
	tk_tkb_writer *w = calloc(1, sizeof *w);
	*out = w;
	if (!w) {
		if (own)
			close(fd);
		return TK_ERR_NOMEM;
	}
	w->fd = fd;
	w->own_fd = own;
	pthread_mutex_init(&w->mu, NULL);
	w->name = tk__strdup(name ? name : "(output)");
	if (!w->name || tk__tkb_enc_init(&w->enc, o) || tk__tkb_enc_header(&w->enc, &w->out, h))
		return tk__err_set(&w->err, TK_ERR_NOMEM, "out of memory");
	if (fd < 0)
		return tk__err_set(&w->err, TK_ERR_IO, "%s: cannot create: %s", w->name, strerror(open_errno));
	return put_out(w);
}

int tk_tkb_writer_open(tk_tkb_writer **out, const char *path, const tk_tkb_header *h,
                       const tk_tkb_opts *opts)
{
	if (!out || !path)
		return TK_ERR_ARG;
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
	return wstart(out, fd, fd >= 0, path, h, opts, errno);
}

int tk_tkb_writer_open_fd(tk_tkb_writer **out, int fd, const char *name, const tk_tkb_header *h,
                          const tk_tkb_opts *opts)
{
	if (!out || fd < 0)
		return TK_ERR_ARG;
	return wstart(out, fd, 0, name, h, opts, 0);
}

int tk_tkb_writer_add_meta(tk_tkb_writer *w, tk_sv key, tk_sv json, int after_events)
{
	if (!w || !key.ptr || !json.ptr)
		return TK_ERR_ARG;
	pthread_mutex_lock(&w->mu);
	int rc = w->err.code;
	if (!rc)
		rc = tk__tkb_enc_meta(&w->enc, key, json, after_events);
	if (rc == TK_ERR_ARG)
		tk__err_msg(&w->err, rc, "metadata value for key '%.100s' is not valid JSON", key.ptr);
	else if (rc && !w->err.code)
		tk__err_set(&w->err, rc, "out of memory");
	pthread_mutex_unlock(&w->mu);
	return rc;
}

/* Encodes b's events; an invalid event is skipped and reported at the end. */
static int submit_locked(tk_tkb_writer *w, tk_tkb_buf *b)
{
	int bad = 0;
	for (size_t i = 0; i < b->n; i++) {
		int rc = tk__tkb_enc_event(&w->enc, &b->evs[i]);
		if (rc == TK_ERR_ARG) {
			bad++;
			continue;
		}
		if (rc)
			return tk__err_set(&w->err, rc, "out of memory");
		if (tk__tkb_enc_chunk_full(&w->enc) &&
		    (tk__tkb_enc_flush(&w->enc, &w->out) || put_out(w)))
			return w->err.code ? w->err.code : tk__err_set(&w->err, TK_ERR_NOMEM, "out of memory");
	}
	if (tk__tkb_enc_flush(&w->enc, &w->out))
		return tk__err_set(&w->err, TK_ERR_NOMEM, "out of memory");
	int rc = put_out(w);
	if (!rc && bad)
		rc = tk__err_msg(&w->err, TK_ERR_ARG, "%d events had args or extra text that is not valid JSON and were skipped", bad);
	return rc;
}

int tk_tkb_writer_submit(tk_tkb_writer *w, tk_tkb_buf *b)
{
	if (!w || !b)
		return TK_ERR_ARG;
	pthread_mutex_lock(&w->mu);
	int rc = w->err.code ? w->err.code : w->closed ? TK_ERR_ARG : submit_locked(w, b);
	pthread_mutex_unlock(&w->mu);
	tk_tkb_buf_reset(b);
	return rc;
}

int tk_tkb_writer_anchor(tk_tkb_writer *w, const tk_tkb_anchor *a)
{
	if (!w || !a)
		return TK_ERR_ARG;
	pthread_mutex_lock(&w->mu);
	int rc = w->err.code;
	if (!rc && tk__tkb_enc_anchor(&w->enc, &w->out, 0, a))
		rc = tk__err_set(&w->err, TK_ERR_NOMEM, "out of memory");
	if (!rc)
		rc = put_out(w);
	pthread_mutex_unlock(&w->mu);
	return rc;
}

int tk_tkb_writer_close(tk_tkb_writer *w, const tk_tkb_anchor *end)
{
	if (!w)
		return TK_ERR_ARG;
	pthread_mutex_lock(&w->mu);
	int rc = w->err.code;
	if (!rc && !w->closed) {
		if (tk__tkb_enc_flush(&w->enc, &w->out) ||
		    (end && tk__tkb_enc_anchor(&w->enc, &w->out, 2, end)) ||
		    tk__tkb_enc_end(&w->enc, &w->out))
			rc = tk__err_set(&w->err, TK_ERR_NOMEM, "out of memory");
		if (!rc)
			rc = put_out(w);
		if (w->own_fd && close(w->fd) && !rc)
			rc = tk__err_set(&w->err, TK_ERR_IO, "%s: close failed: %s", w->name, strerror(errno));
		w->own_fd = 0;
		w->closed = 1;
	}
	pthread_mutex_unlock(&w->mu);
	return rc;
}

const char *tk_tkb_writer_error(const tk_tkb_writer *w)
{
	return w ? w->err.msg : "no writer";
}

uint64_t tk_tkb_writer_events(const tk_tkb_writer *w)
{
	return w ? w->enc.events : 0;
}

void tk_tkb_writer_free(tk_tkb_writer *w)
{
	if (!w)
		return;
	if (w->own_fd && w->fd >= 0)
		close(w->fd);
	tk__tkb_enc_free(&w->enc);
	tk__buf_free(&w->out);
	pthread_mutex_destroy(&w->mu);
	free(w->name);
	free(w);
}
