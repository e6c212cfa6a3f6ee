/* source.c: input bytes from an fd, memory or an archive member, through a stack of input filters chosen by their bids. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/workers.h"
#include "formats/formats.h"

void tk__src_init_fd(tk__src *s, int fd, int own)
{
	memset(s, 0, sizeof *s);
	s->fd = fd;
	s->own_fd = own;
	s->n = 1;
	struct stat st;
	s->fd_start = -1;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
		off_t at = lseek(fd, 0, SEEK_CUR);
		if (at >= 0)
			s->fd_start = (int64_t)at;
	}
}

int tk__src_can_pread(const tk__src *s)
{
	return !s->base.read && (s->mem || s->fd_start >= 0);
}

long tk__src_pread_mt(const tk__src *s, uint64_t off, unsigned char *dst, size_t cap)
{
	if (s->mem) {
		if (off >= s->mem_len)
			return 0;
		size_t n = s->mem_len - (size_t)off < cap ? s->mem_len - (size_t)off : cap;
		memcpy(dst, s->mem + off, n);
		return (long)n;
	}
	for (;;) {
		ssize_t n = pread(s->fd, dst, cap, (off_t)((uint64_t)s->fd_start + off));
		if (n < 0 && errno == EINTR)
			continue;
		return n < 0 ? -1 : (long)n;
	}
}

long tk__src_pread(tk__src *s, uint64_t off, unsigned char *dst, size_t cap)
{
	long n = tk__src_pread_mt(s, off, dst, cap);
	if (n < 0)
		tk__src_failed(s->err, errno);
	return n;
}

void tk__src_failed(char *err, int e)
{
	snprintf(err, TK__ERRLEN, "read failed: %s", strerror(e));
}

void tk__src_inflate_threads(tk__src *s, unsigned threads)
{
	if (s->n >= 2 && s->st[s->n - 1].f->threads)
		s->st[s->n - 1].f->threads(s, s->n - 1, threads);
}

int tk__src_open_file(tk__src *s, const char *path, char *err)
{
	if (strcmp(path, "-") == 0) {
		tk__src_init_fd(s, 0, 0);
		return 0;
	}
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		snprintf(err, TK__ERRLEN, "%s: cannot open: %s", path, strerror(errno));
		return TK_ERR_IO;
	}
	struct stat st;
	if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
		close(fd);
		snprintf(err, TK__ERRLEN, "%s: is a directory", path);
		return TK_ERR_IO;
	}
#ifdef POSIX_FADV_SEQUENTIAL
	posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
#endif
	tk__src_init_fd(s, fd, 1);
	return 0;
}

void tk__src_init_mem(tk__src *s, const void *p, size_t n)
{
	memset(s, 0, sizeof *s);
	s->fd = -1;
	s->fd_start = -1;
	s->mem = p ? p : (const void *)"";
	s->mem_len = n;
	s->n = 1;
}

void tk__src_init_base(tk__src *s, const tk__base *b)
{
	memset(s, 0, sizeof *s);
	s->fd = -1;
	s->fd_start = -1;
	s->base = *b;
	s->n = 1;
}

static long base_read(tk__src *s, unsigned char *dst, size_t cap)
{
	if (s->base.read) {
		long n = s->base.read(s->base.ctx, dst, cap, &s->bytes_in, s->err);
		s->err_named = n < 0;
		return n;
	}
	if (s->mem) {
		size_t n = s->mem_len - s->mem_pos;
		if (n > cap)
			n = cap;
		memcpy(dst, s->mem + s->mem_pos, n);
		s->mem_pos += n;
		s->bytes_in += n;
		return (long)n;
	}
	for (;;) {
		ssize_t n = read(s->fd, dst, cap);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			tk__src_failed(s->err, errno);
			return -1;
		}
		s->bytes_in += (uint64_t)n;
		return (long)n;
	}
}

/* The stage's own bytes: the base's, or its filter's decoding. */
static long produce(tk__src *s, int level, unsigned char *dst, size_t cap)
{
	return level == 0 ? base_read(s, dst, cap) : s->st[level].f->read(s, level, dst, cap);
}

long tk__src_read_at(tk__src *s, int level, unsigned char *dst, size_t cap)
{
	tk__stage *st = &s->st[level];
	if (st->ahead_pos < st->ahead_len) {
		size_t n = st->ahead_len - st->ahead_pos;
		if (n > cap)
			n = cap;
		memcpy(dst, st->ahead + st->ahead_pos, n);
		st->ahead_pos += n;
		if (st->ahead_pos == st->ahead_len) {
			free(st->ahead);
			st->ahead = NULL;
			st->ahead_len = st->ahead_pos = st->ahead_cap = 0;
		}
		return (long)n;
	}
	return produce(s, level, dst, cap);
}

/* ---- decoding ahead on a thread ---- */

#define TK__AHEAD_N 4            /* buffers in the ring */
#define TK__AHEAD_BUF (1u << 20) /* bytes each */

typedef struct tk__ahead {
	tk__workers W; /* the thread (tk-input); its lock guards head, count, end and draining */
	struct {
		unsigned char *p;
		size_t len;
		uint64_t bytes_in; /* s->bytes_in once the buffer was filled */
	} buf[TK__AHEAD_N];
	size_t head, count; /* the filled buffers: head .. head + count - 1 */
	size_t pos;         /* the caller's place in buf[head] */
	int end;            /* the thread is done: 1 at the end of the stream, -1 on an error */
	int draining;       /* the ring was full: the thread waits until half of it is taken */
	uint64_t seen;      /* bytes_in for what the caller was given */
} tk__ahead;

/* The thread's step: the next buffer of the ring filled, where one is
 * free. Once the ring is full it waits until half is taken, not for every
 * buffer. */
static int ahead_step(void *owner, void *state)
{
	tk__src *s = owner;
	tk__ahead *a = s->ahead;
	(void)state;
	if (a->end)
		return 0;
	if (a->count == TK__AHEAD_N)
		a->draining = 1;
	if (a->draining && a->count > TK__AHEAD_N / 2)
		return 0;
	a->draining = 0;
	size_t slot = (a->head + a->count) % TK__AHEAD_N;
	pthread_mutex_unlock(&a->W.mu);
	/* the slot is the thread's alone until count covers it */
	size_t len = 0;
	long n = 1;
	while (len < TK__AHEAD_BUF && (n = tk__src_read_at(s, s->n - 1, a->buf[slot].p + len, TK__AHEAD_BUF - len)) > 0)
		len += (size_t)n;
	pthread_mutex_lock(&a->W.mu);
	a->buf[slot].len = len;
	a->buf[slot].bytes_in = s->bytes_in;
	if (len)
		a->count++;
	if (n <= 0)
		a->end = n < 0 ? -1 : 1;
	tk__workers_done(&a->W);
	return 1;
}

static const tk__workers_ops ahead_ops = {0, NULL, NULL, ahead_step};

static int ahead_running; /* sources with a thread, in the process */
static void ahead_free(tk__ahead *a);

size_t tk__ahead_min = 256u << 10;

uint64_t tk__src_base_size(const tk__src *s)
{
	if (s->mem)
		return s->mem_len;
	struct stat st;
	if (s->base.read || s->fd_start < 0 || fstat(s->fd, &st) != 0 || st.st_size < s->fd_start)
		return UINT64_MAX;
	return (uint64_t)st.st_size - (uint64_t)s->fd_start;
}

/* The base's bytes not yet read, where known (memory, a regular file);
 * else UINT64_MAX. */
static uint64_t base_left(const tk__src *s)
{
	uint64_t size = tk__src_base_size(s), at = s->mem ? s->mem_pos : s->bytes_in;
	if (size == UINT64_MAX)
		return UINT64_MAX;
	return size > at ? size - at : 0;
}

void tk__src_read_ahead(tk__src *s)
{
	/* not without a filter (nothing to decode), nor over an archive's member
	 * (the archive moves on on the caller's thread) or a pipe (a read that
	 * never returns would hold up the close) */
	if (s->ahead || s->n < 2 || !tk__src_can_pread(s))
		return;
	/* nor for a small input: its few milliseconds of decoding would not
	 * pay for a thread and the ring's TK__AHEAD_N MiB */
	if (base_left(s) < tk__ahead_min)
		return;
	int limit = tk__cpus() - 1;
	if (limit > 8)
		limit = 8;
	if (__atomic_add_fetch(&ahead_running, 1, __ATOMIC_RELAXED) > limit) {
		__atomic_sub_fetch(&ahead_running, 1, __ATOMIC_RELAXED);
		return;
	}
	tk__ahead *a = calloc(1, sizeof *a);
	if (!a) {
		__atomic_sub_fetch(&ahead_running, 1, __ATOMIC_RELAXED);
		return;
	}
	tk__workers_init(&a->W, &ahead_ops, s);
	for (int i = 0; i < TK__AHEAD_N; i++)
		if (!(a->buf[i].p = malloc(TK__AHEAD_BUF))) {
			ahead_free(a);
			return;
		}
	a->seen = s->bytes_in;
	s->ahead = a;
	if (!tk__workers_start(&a->W, 1, "tk-input")) {
		s->ahead = NULL;
		ahead_free(a);
	}
}

static void ahead_free(tk__ahead *a)
{
	tk__workers_free(&a->W);
	for (int i = 0; i < TK__AHEAD_N; i++)
		free(a->buf[i].p);
	free(a);
	__atomic_sub_fetch(&ahead_running, 1, __ATOMIC_RELAXED);
}

static long ahead_read(tk__src *s, unsigned char *dst, size_t cap)
{
	tk__ahead *a = s->ahead;
	pthread_mutex_lock(&a->W.mu);
	while (!a->count && !a->end)
		tk__workers_wait(&a->W);
	if (!a->count) {
		long rc = a->end < 0 ? -1 : 0;
		pthread_mutex_unlock(&a->W.mu);
		return rc;
	}
	size_t slot = a->head;
	pthread_mutex_unlock(&a->W.mu);
	size_t n = a->buf[slot].len - a->pos;
	if (n > cap)
		n = cap;
	memcpy(dst, a->buf[slot].p + a->pos, n);
	a->pos += n;
	a->seen = a->buf[slot].bytes_in;
	if (a->pos == a->buf[slot].len) {
		pthread_mutex_lock(&a->W.mu);
		a->head = (a->head + 1) % TK__AHEAD_N;
		a->count--;
		a->pos = 0;
		tk__workers_wake(&a->W);
		pthread_mutex_unlock(&a->W.mu);
	}
	return (long)n;
}

uint64_t tk__src_bytes_in(const tk__src *s)
{
	return s->ahead ? s->ahead->seen : s->bytes_in;
}

long tk__src_read(tk__src *s, unsigned char *dst, size_t cap)
{
	if (s->ahead)
		return ahead_read(s, dst, cap);
	return tk__src_read_at(s, s->n - 1, dst, cap);
}

/* At least `want` unread bytes of the top stage in its ahead buffer (fewer
 * at its end): *p, *n. */
static int peek(tk__src *s, size_t want, const unsigned char **p, size_t *n)
{
	tk__stage *st = &s->st[s->n - 1];
	if (st->ahead_pos) {
		memmove(st->ahead, st->ahead + st->ahead_pos, st->ahead_len - st->ahead_pos);
		st->ahead_len -= st->ahead_pos;
		st->ahead_pos = 0;
	}
	if (tk__grow(&st->ahead, &st->ahead_cap, want, 1, want)) {
		snprintf(s->err, sizeof s->err, "out of memory");
		s->err_nomem = 1;
		return TK_ERR_NOMEM;
	}
	while (st->ahead_len < want) {
		long k = produce(s, s->n - 1, st->ahead + st->ahead_len, want - st->ahead_len);
		if (k < 0)
			return TK_ERR_IO;
		if (k == 0)
			break;
		st->ahead_len += (size_t)k;
	}
	*p = st->ahead;
	*n = st->ahead_len;
	return 0;
}

int tk__src_detect(tk__src *s, int *archive)
{
	*archive = 0;
	while (s->n < TK__MAX_STAGES) {
		const unsigned char *p;
		size_t n;
		int rc = peek(s, TK__BID_BYTES, &p, &n);
		if (rc)
			return rc;
		const tk__ifilter *best = NULL;
		int top = 0;
		for (size_t i = 0; tk__ifilter_at(i); i++) {
			int b = n ? tk__ifilter_at(i)->bid(p, n) : 0;
			if (b > top) {
				top = b;
				best = tk__ifilter_at(i);
			}
		}
		if (!best)
			return 0;
		if (best->archive) {
			*archive = 1;
			return 0;
		}
		tk__stage *st = &s->st[s->n];
		memset(st, 0, sizeof *st);
		st->f = best;
		s->n++;
		if ((rc = best->open(s, s->n - 1)) < 0) {
			s->n--;
			return rc;
		}
	}
	return 0;
}

void tk__src_suffixes(const tk__src *s, char *buf, size_t cap)
{
	size_t k = 0;
	buf[0] = 0;
	for (int i = 1; i < s->n && k < cap; i++)
		k += (size_t)snprintf(buf + k, cap - k, "%s", s->st[i].f->suffix);
}

void tk__src_close(tk__src *s)
{
	if (s->ahead) {
		ahead_free(s->ahead); /* the thread stopped first */
		s->ahead = NULL;
	}
	for (int i = s->n - 1; i >= 0; i--) {
		if (s->st[i].f && s->st[i].f->close)
			s->st[i].f->close(s->st[i].st);
		free(s->st[i].ahead);
	}
	s->n = 0;
	if (s->own_fd && s->fd >= 0)
		close(s->fd);
	s->fd = -1;
	if (s->base.close)
		s->base.close(s->base.ctx);
	memset(&s->base, 0, sizeof s->base);
}
