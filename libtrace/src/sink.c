/* sink.c: output to a file (temporary name, renamed when complete) or fd, with optional gzip and a write-behind thread. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"

#define TK__ZOUT (256 * 1024)
#define TK__AIO_DEPTH 4              /* buffers queued for the thread */
#define TK__AIO_FILL (1024 * 1024)   /* tk__sink_write() hands over blocks this large */

/* The write-behind thread takes buffers in order and deflates and writes
 * them; the caller blocks only when TK__AIO_DEPTH buffers are waiting. The
 * z_stream, zout and fd belong to the thread while it lives. */
typedef struct tk__aio {
	pthread_t th;
	pthread_mutex_t mu;
	pthread_cond_t work, done;
	tk__buf job[TK__AIO_DEPTH];
	int flush[TK__AIO_DEPTH]; /* Z_NO_FLUSH, Z_SYNC_FLUSH or Z_FINISH after the job's bytes */
	size_t head, n;
	int busy, quit;
	tk__buf spare[TK__AIO_DEPTH + 1]; /* emptied buffers, kept for their capacity */
	size_t n_spare;
	tk__buf fill; /* the caller's bytes from tk__sink_write() not yet handed over */
	uint64_t written; /* bytes the thread wrote */
	int rc;           /* the thread's first error; it writes nothing after it */
	char err[TK__ERRLEN];
} tk__aio;

static int write_all(int fd, const char *path, const unsigned char *p, size_t n, uint64_t *count,
                     char *err)
{
	while (n) {
		ssize_t k = write(fd, p, n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0) {
			snprintf(err, TK__ERRLEN, "%s: write failed: %s", path ? path : "(output)",
			         strerror(errno));
			return TK_ERR_IO;
		}
		p += k;
		n -= (size_t)k;
		*count += (uint64_t)k;
	}
	return 0;
}

/* Compress what is in s->z.next_in with `flush`; output goes to s->fd. */
static int deflate_some(tk__sink *s, int flush, uint64_t *count, char *err)
{
	int rc;
	do {
		s->z.next_out = s->zout;
		s->z.avail_out = TK__ZOUT;
		rc = deflate(&s->z, flush);
		if (rc == Z_STREAM_ERROR) {
			snprintf(err, TK__ERRLEN, "zlib deflate failed");
			return TK_ERR_IO;
		}
		size_t have = TK__ZOUT - s->z.avail_out;
		if (have && write_all(s->fd, s->path, s->zout, have, count, err))
			return TK_ERR_IO;
	} while (s->z.avail_out == 0 || (flush == Z_FINISH && rc != Z_STREAM_END));
	return 0;
}

/* Bytes in, with `flush` after them: deflated when gzip, else written. */
static int put_bytes(tk__sink *s, const void *p, size_t n, int flush, uint64_t *count, char *err)
{
	if (!s->gz)
		return write_all(s->fd, s->path, p, n, count, err);
	s->z.next_in = (unsigned char *)(uintptr_t)p;
	s->z.avail_in = (uInt)n;
	int rc = n || flush != Z_NO_FLUSH ? deflate_some(s, flush, count, err) : 0;
	s->z.avail_in = 0;
	return rc;
}

/* ---- the write-behind thread ---- */

static void *aio_main(void *arg)
{
	tk__sink *s = arg;
	tk__aio *a = s->aio;
	pthread_setname_np(pthread_self(), "tk-write");
	pthread_mutex_lock(&a->mu);
	for (;;) {
		while (!a->n && !a->quit)
			pthread_cond_wait(&a->work, &a->mu);
		if (a->quit)
			break;
		tk__buf b = a->job[a->head];
		int flush = a->flush[a->head];
		int failed = a->rc;
		a->busy = 1;
		pthread_mutex_unlock(&a->mu);
		uint64_t count = 0;
		char err[TK__ERRLEN];
		int rc = failed ? 0 : put_bytes(s, b.p, b.len, flush, &count, err);
		pthread_mutex_lock(&a->mu);
		a->written += count;
		if (rc && !a->rc) {
			a->rc = rc;
			memcpy(a->err, err, sizeof err);
		}
		b.len = 0;
		if (b.p && a->n_spare < TK__AIO_DEPTH + 1)
			a->spare[a->n_spare++] = b;
		else
			tk__buf_free(&b);
		a->head = (a->head + 1) % TK__AIO_DEPTH;
		a->n--;
		a->busy = 0;
		pthread_cond_broadcast(&a->done);
	}
	pthread_mutex_unlock(&a->mu);
	return NULL;
}

static void aio_free(tk__aio *a)
{
	for (size_t i = 0; i < a->n; i++)
		tk__buf_free(&a->job[(a->head + i) % TK__AIO_DEPTH]);
	for (size_t i = 0; i < a->n_spare; i++)
		tk__buf_free(&a->spare[i]);
	tk__buf_free(&a->fill);
	pthread_cond_destroy(&a->work);
	pthread_cond_destroy(&a->done);
	pthread_mutex_destroy(&a->mu);
	free(a);
}

void tk__sink_async(tk__sink *s)
{
	s->may_aio = 1;
}

/* The thread starts with the first full block: small outputs never need it. */
static void aio_start(tk__sink *s)
{
	s->may_aio = 0;
	if (s->aio || s->fd < 0)
		return;
	tk__aio *a = calloc(1, sizeof *a);
	if (!a)
		return;
	pthread_mutex_init(&a->mu, NULL);
	pthread_cond_init(&a->work, NULL);
	pthread_cond_init(&a->done, NULL);
	a->written = s->bytes_out; /* what was written before the thread */
	s->aio = a;
	if (tk__thread_start(&a->th, aio_main, s)) {
		s->aio = NULL;
		aio_free(a);
	}
}

/* With the lock held: the thread's error, copied for the caller. */
static int aio_error(tk__sink *s)
{
	tk__aio *a = s->aio;
	if (a->rc)
		memcpy(s->err, a->err, sizeof s->err);
	return a->rc;
}

/* Queue b (taken; b comes back empty) with `flush` after it. */
static int aio_submit(tk__sink *s, tk__buf *b, int flush)
{
	tk__aio *a = s->aio;
	pthread_mutex_lock(&a->mu);
	while (a->n == TK__AIO_DEPTH && !a->rc)
		pthread_cond_wait(&a->done, &a->mu);
	int rc = aio_error(s);
	if (!rc) {
		size_t t = (a->head + a->n) % TK__AIO_DEPTH;
		a->job[t] = *b;
		a->flush[t] = flush;
		a->n++;
		*b = a->n_spare ? a->spare[--a->n_spare] : (tk__buf){0};
		pthread_cond_signal(&a->work);
	}
	pthread_mutex_unlock(&a->mu);
	return rc;
}

/* Hand over the pending bytes of tk__sink_write(), if any. */
static int aio_put_fill(tk__sink *s)
{
	tk__aio *a = s->aio;
	if (!a->fill.len)
		return 0;
	tk__buf b = a->fill;
	int rc = aio_submit(s, &b, Z_NO_FLUSH);
	a->fill = b;
	return rc;
}

/* Everything queued, then `flush`, and wait until the thread has done it all. */
static int aio_drain(tk__sink *s, int flush)
{
	tk__aio *a = s->aio;
	tk__buf none = {0};
	int rc = aio_put_fill(s);
	if (!rc && (flush != Z_NO_FLUSH && s->gz))
		rc = aio_submit(s, &none, flush);
	tk__buf_free(&none);
	pthread_mutex_lock(&a->mu);
	while ((a->n || a->busy) && !a->rc)
		pthread_cond_wait(&a->done, &a->mu);
	if (!rc)
		rc = aio_error(s);
	if (s->gz)
		s->bytes_out = a->written;
	pthread_mutex_unlock(&a->mu);
	return rc;
}

static void aio_stop(tk__sink *s)
{
	tk__aio *a = s->aio;
	if (!a)
		return;
	pthread_mutex_lock(&a->mu);
	a->quit = 1;
	pthread_cond_signal(&a->work);
	pthread_mutex_unlock(&a->mu);
	pthread_join(a->th, NULL);
	aio_free(a);
	s->aio = NULL;
}

/* ---- opening ---- */

static int gz_init(tk__sink *s, int level)
{
	s->gz = 1;
	s->zout = malloc(TK__ZOUT);
	if (!s->zout)
		return TK_ERR_NOMEM;
	if (deflateInit2(&s->z, level > 0 ? level : 6, Z_DEFLATED, 16 + MAX_WBITS, 8,
	                 Z_DEFAULT_STRATEGY) != Z_OK) {
		snprintf(s->err, sizeof s->err, "zlib deflate init failed");
		return TK_ERR_NOMEM;
	}
	s->z_init = 1;
	return 0;
}

int tk__sink_open_fd(tk__sink *s, int fd, const char *name, int gz, int level)
{
	memset(s, 0, sizeof *s);
	s->fd = fd;
	s->path = tk__strdup(name ? name : "(output)");
	if (!s->path)
		return TK_ERR_NOMEM;
	return gz ? gz_init(s, level) : 0;
}

int tk__sink_open_path(tk__sink *s, const char *path, int gz, int level)
{
	if (strcmp(path, "-") == 0)
		return tk__sink_open_fd(s, 1, "(stdout)", gz, level);
	memset(s, 0, sizeof *s);
	s->fd = -1;
	s->path = tk__strdup(path);
	if (!s->path)
		return TK_ERR_NOMEM;
	struct stat st;
	if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
		/* a device or fifo (/dev/null, a pipe): write straight to it */
		s->fd = open(path, O_WRONLY | O_CLOEXEC);
		if (s->fd < 0) {
			snprintf(s->err, sizeof s->err, "%s: cannot open: %s", path, strerror(errno));
			return TK_ERR_IO;
		}
		s->own_fd = 1;
		return gz ? gz_init(s, level) : 0;
	}
	size_t n = strlen(path);
	s->tmppath = malloc(n + 16);
	if (!s->tmppath)
		return TK_ERR_NOMEM;
	memcpy(s->tmppath, path, n);
	memcpy(s->tmppath + n, ".tmp-XXXXXX", 12);
	s->fd = mkostemp(s->tmppath, O_CLOEXEC);
	if (s->fd < 0) {
		snprintf(s->err, sizeof s->err, "%s: cannot create: %s", path, strerror(errno));
		free(s->tmppath);
		s->tmppath = NULL;
		return TK_ERR_IO;
	}
	s->own_fd = 1;
	mode_t um = umask(0);
	umask(um);
	fchmod(s->fd, 0666 & ~um);
	return gz ? gz_init(s, level) : 0;
}

/* ---- writing ---- */

int tk__sink_write(tk__sink *s, const void *p, size_t n)
{
	if (s->may_aio && n >= TK__AIO_FILL)
		aio_start(s);
	s->raw_in += n;
	if (!s->aio) {
		if (!s->gz)
			s->raw_synced = s->raw_in;
		return put_bytes(s, p, n, Z_NO_FLUSH, &s->bytes_out, s->err);
	}
	if (!s->gz) {
		s->raw_synced = s->raw_in;
		s->bytes_out += n;
		s->synced_out = s->bytes_out;
	}
	tk__aio *a = s->aio;
	if (tk__buf_append(&a->fill, p, n)) {
		snprintf(s->err, sizeof s->err, "out of memory");
		return TK_ERR_NOMEM;
	}
	return a->fill.len >= TK__AIO_FILL ? aio_put_fill(s) : 0;
}

int tk__sink_give(tk__sink *s, tk__buf *b)
{
	if (s->may_aio && b->len >= TK__AIO_FILL)
		aio_start(s);
	if (!s->aio) {
		int rc = tk__sink_write(s, b->p, b->len);
		b->len = 0;
		return rc;
	}
	int rc = aio_put_fill(s);
	if (rc)
		return rc;
	s->raw_in += b->len;
	if (!s->gz) {
		s->raw_synced = s->raw_in;
		s->bytes_out += b->len;
		s->synced_out = s->bytes_out;
	}
	return b->len ? aio_submit(s, b, Z_NO_FLUSH) : 0;
}

int tk__sink_sync(tk__sink *s)
{
	if (!s->gz || !s->z_init || s->raw_synced == s->raw_in)
		return 0;
	int rc = s->aio ? aio_drain(s, Z_SYNC_FLUSH) : put_bytes(s, NULL, 0, Z_SYNC_FLUSH, &s->bytes_out, s->err);
	if (!rc) {
		s->raw_synced = s->raw_in;
		s->synced_out = s->bytes_out;
	}
	return rc;
}

int tk__sink_finish(tk__sink *s)
{
	int rc = 0;
	if (s->aio) {
		rc = aio_drain(s, s->gz && s->z_init ? Z_FINISH : Z_NO_FLUSH);
		aio_stop(s);
	} else if (s->gz && s->z_init) {
		rc = put_bytes(s, NULL, 0, Z_FINISH, &s->bytes_out, s->err);
	}
	if (s->own_fd && s->fd >= 0) {
		if (close(s->fd) && !rc) {
			snprintf(s->err, sizeof s->err, "%s: close failed: %s", s->path, strerror(errno));
			rc = TK_ERR_IO;
		}
		s->fd = -1;
	}
	if (!rc && s->tmppath) {
		if (rename(s->tmppath, s->path)) {
			snprintf(s->err, sizeof s->err, "%s: cannot rename into place: %s", s->path,
			         strerror(errno));
			rc = TK_ERR_IO;
		} else {
			free(s->tmppath);
			s->tmppath = NULL;
		}
	}
	return rc;
}

void tk__sink_discard(tk__sink *s)
{
	aio_stop(s);
	if (s->z_init)
		deflateEnd(&s->z);
	s->z_init = 0;
	if (s->own_fd && s->fd >= 0)
		close(s->fd);
	s->fd = -1;
	if (s->tmppath) {
		unlink(s->tmppath);
		free(s->tmppath);
	}
	s->tmppath = NULL;
	free(s->zout);
	s->zout = NULL;
	free(s->path);
	s->path = NULL;
}
