/* sink.c: output to a file (temporary name, renamed when complete) or fd, through an optional output filter, written in blocks by threads of its own. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/workers.h"
#include "formats/formats.h"

/* Output goes out in blocks of about TK__BLOCK bytes. With a filter, each
 * block is prepared in order (its context), encoded by any thread and
 * written in order; see tk__ofilter. */
#define TK__BLOCK (1024 * 1024)

enum { J_FREE, J_QUEUED, J_BUSY, J_DONE };

typedef struct job {
	tk__buf raw, out; /* the block's bytes; encoded (filter) */
	unsigned char *ctx; /* the filter's block context */
	int state;
} job;

/* Workers take queued blocks, encode them, and the one that finds the
 * oldest block done writes the blocks that are done, in order. The caller
 * blocks only when every slot of the ring is taken. */
typedef struct tk__aio {
	tk__workers W; /* its lock guards what follows */
	job *ring;
	size_t n_ring;
	uint64_t head, tail; /* blocks [head, tail) are in the ring, block i in slot i % n_ring */
	int writing;
	tk__buf spare[4]; /* emptied block buffers, kept for their capacity */
	size_t n_spare;
	uint64_t written; /* bytes written, the header included */
	uint64_t flushed; /* the file's first bytes whose writeback was started */
	int rc;           /* the first error; nothing is written after it */
	char err[TK__ERRLEN];
} tk__aio;

static int write_all(int fd, const char *path, const void *buf, size_t n, uint64_t *count, char *err)
{
	int e = tk__write_all(fd, buf, n, count);
	if (e)
		snprintf(err, TK__ERRLEN, "%s: write failed: %s", path ? path : "(output)", strerror(e));
	return e ? TK_ERR_IO : 0;
}

/* ---- the threads ---- */

/* A file that is synced when complete (a temporary name renamed into
 * place) has its writeback started every WRITEBACK bytes as they are
 * written, on the writing thread, so that the disk works while the output
 * is made and the sync at the end waits for the last few MiB alone. A
 * file system that does not take the hint is synced at the end as
 * always. */
#define WRITEBACK ((uint64_t)8 << 20)

static void start_writeback(tk__sink *s, tk__aio *a)
{
#ifdef SYNC_FILE_RANGE_WRITE
	if (!s->tmppath || a->written - a->flushed < WRITEBACK)
		return;
	(void)sync_file_range(s->fd, (off_t)a->flushed, (off_t)(a->written - a->flushed), SYNC_FILE_RANGE_WRITE);
	a->flushed = a->written;
#else
	(void)s;
	(void)a;
#endif
}

/* With the lock held: write the blocks that are done, oldest first, unless
 * another thread is writing. */
static void write_ready(tk__sink *s, tk__aio *a)
{
	while (!a->writing && a->head < a->tail && a->ring[a->head % a->n_ring].state == J_DONE) {
		job *j = &a->ring[a->head % a->n_ring];
		int failed = a->rc;
		a->writing = 1;
		pthread_mutex_unlock(&a->W.mu);
		uint64_t count = 0;
		char err[TK__ERRLEN];
		const tk__buf *o = s->f ? &j->out : &j->raw;
		int rc = failed ? 0 : write_all(s->fd, s->path, o->p, o->len, &count, err);
		if (s->f && !failed)
			s->f->written(s->fst, j->ctx, j->raw.len);
		pthread_mutex_lock(&a->W.mu);
		a->written += count;
		start_writeback(s, a);
		if (rc && !a->rc) {
			a->rc = rc;
			memcpy(a->err, err, sizeof err);
		}
		j->raw.len = 0;
		if (a->n_spare < sizeof a->spare / sizeof *a->spare)
			a->spare[a->n_spare++] = j->raw;
		else
			tk__buf_free(&j->raw);
		j->raw = (tk__buf){0};
		j->state = J_FREE;
		a->head++;
		a->writing = 0;
		tk__workers_done(&a->W);
	}
}

static job *next_queued(tk__aio *a)
{
	for (uint64_t i = a->head; i < a->tail; i++)
		if (a->ring[i % a->n_ring].state == J_QUEUED)
			return &a->ring[i % a->n_ring];
	return NULL;
}

/* The workers' step: the first block queued encoded with this thread's
 * encoder (*enc), then the blocks done written. */
static int aio_step(void *owner, void *enc)
{
	tk__sink *s = owner;
	tk__aio *a = s->aio;
	job *j = next_queued(a);
	if (!j)
		return 0;
	j->state = J_BUSY;
	int failed = a->rc;
	pthread_mutex_unlock(&a->W.mu);
	char err[TK__ERRLEN];
	int rc = 0;
	if (!failed && s->f)
		rc = s->f->encode(*(void **)enc, j->ctx, &j->raw, &j->out, err);
	pthread_mutex_lock(&a->W.mu);
	j->state = J_DONE;
	if (rc && !a->rc) {
		a->rc = rc;
		memcpy(a->err, err, sizeof err);
	}
	write_ready(s, a);
	return 1;
}

/* Each thread's encoder; a thread whose encoder cannot be made does not start. */
static int aio_enc_new(void *owner, void *enc, unsigned i)
{
	tk__sink *s = owner;
	char err[TK__ERRLEN];
	(void)i;
	return s->f && !(*(void **)enc = s->f->enc_new(s->fst, err));
}

static void aio_enc_free(void *owner, void *enc)
{
	tk__sink *s = owner;
	if (*(void **)enc)
		s->f->enc_free(*(void **)enc);
}

static const tk__workers_ops aio_ops = {sizeof(void *), aio_enc_new, aio_enc_free, aio_step};

static void aio_free(tk__aio *a)
{
	for (size_t i = 0; i < a->n_ring; i++) {
		tk__buf_free(&a->ring[i].raw);
		tk__buf_free(&a->ring[i].out);
		free(a->ring[i].ctx);
	}
	free(a->ring);
	for (size_t i = 0; i < a->n_spare; i++)
		tk__buf_free(&a->spare[i]);
	free(a);
}

static void aio_stop(tk__sink *s)
{
	tk__aio *a = s->aio;
	if (!a)
		return;
	tk__workers_free(&a->W);
	aio_free(a);
	s->aio = NULL;
}

/* The threads start with the first full block: small outputs never need
 * them. A filter gets the encoding threads asked for (0: one per
 * processor), plain output one writing thread. */
static void aio_start(tk__sink *s)
{
	s->may_aio = 0;
	if (s->aio || s->fd < 0)
		return;
	tk__aio *a = calloc(1, sizeof *a);
	int want = !s->f ? 1 : s->threads ? (int)s->threads : tk__cpus();
	if (want > TK__SINK_MAX_THREADS)
		want = TK__SINK_MAX_THREADS;
	size_t n_ring = (size_t)(2 * want + 2);
	if (a)
		a->ring = calloc(n_ring, sizeof *a->ring);
	for (size_t i = 0; a && a->ring && s->f && i < n_ring; i++)
		if (!(a->ring[i].ctx = malloc(s->f->ctx_size))) {
			a->n_ring = n_ring;
			aio_free(a);
			return;
		}
	if (!a || !a->ring) {
		free(a);
		return;
	}
	a->n_ring = n_ring;
	a->written = s->bytes_out; /* the header and what was written before the threads */
	tk__workers_init(&a->W, &aio_ops, s);
	s->aio = a;
	if (!tk__workers_start(&a->W, (unsigned)want, "tk-write")) {
		tk__workers_free(&a->W);
		s->aio = NULL;
		aio_free(a);
	}
}

unsigned tk__budget_writer_threads(unsigned threads)
{
	unsigned n = threads ? threads : (unsigned)tk__cpus();
	return n < 8 ? n : 8;
}

void tk__sink_async(tk__sink *s, unsigned threads)
{
	s->may_aio = 1;
	s->threads = threads;
}

/* ---- blocks ---- */

/* The thread's error, copied for the caller (lock held). */
static int aio_error(tk__sink *s)
{
	if (s->aio->rc)
		memcpy(s->err, s->aio->err, sizeof s->err);
	return s->aio->rc;
}

/* A block written here, for a sink without threads. */
static int block_now(tk__sink *s, tk__buf *raw)
{
	uint64_t counted = 0; /* plain bytes were counted when accepted */
	if (!s->f)
		return write_all(s->fd, s->path, raw->p, raw->len, &counted, s->err);
	if (!s->enc && !(s->enc = s->f->enc_new(s->fst, s->err)))
		return TK_ERR_NOMEM;
	if (!s->ctx && !(s->ctx = malloc(s->f->ctx_size))) {
		snprintf(s->err, sizeof s->err, "out of memory");
		return TK_ERR_NOMEM;
	}
	s->f->prepare(s->fst, s->ctx, raw);
	int rc = s->f->encode(s->enc, s->ctx, raw, &s->fbuf, s->err);
	if (!rc)
		rc = write_all(s->fd, s->path, s->fbuf.p, s->fbuf.len, &s->bytes_out, s->err);
	if (!rc)
		s->f->written(s->fst, s->ctx, raw->len);
	return rc;
}

/* Hands the block over (the caller's buffer comes back empty) or writes it. */
static int submit(tk__sink *s, tk__buf *raw)
{
	if (!raw->len)
		return 0;
	tk__aio *a = s->aio;
	if (!a) {
		int rc = block_now(s, raw);
		raw->len = 0;
		return rc;
	}
	pthread_mutex_lock(&a->W.mu);
	while (a->tail - a->head == a->n_ring && !a->rc)
		tk__workers_wait(&a->W);
	int rc = aio_error(s);
	pthread_mutex_unlock(&a->W.mu);
	if (rc)
		return rc;
	/* the slot is free: no thread looks at it until it is queued */
	job *j = &a->ring[a->tail % a->n_ring];
	j->raw = *raw;
	if (s->f)
		s->f->prepare(s->fst, j->ctx, raw);
	pthread_mutex_lock(&a->W.mu);
	j->state = J_QUEUED;
	a->tail++;
	*raw = a->n_spare ? a->spare[--a->n_spare] : (tk__buf){0};
	tk__workers_wake(&a->W);
	pthread_mutex_unlock(&a->W.mu);
	return 0;
}

/* The pending bytes become a block. */
static int cut(tk__sink *s)
{
	return submit(s, &s->pend);
}

/* Every block written; the byte count is then exact. */
static int drain(tk__sink *s)
{
	int rc = cut(s);
	tk__aio *a = s->aio;
	if (!a)
		return rc;
	pthread_mutex_lock(&a->W.mu);
	while (a->head < a->tail && !a->rc)
		tk__workers_wait(&a->W);
	if (!rc)
		rc = aio_error(s);
	if (s->f)
		s->bytes_out = a->written;
	pthread_mutex_unlock(&a->W.mu);
	return rc;
}

/* ---- opening ---- */

static int filter_start(tk__sink *s, const tk__ofilter *f, int level)
{
	if (!f)
		return 0;
	s->f = f;
	s->fbuf.len = 0;
	if (!(s->fst = f->open(level, &s->fbuf, s->err))) {
		s->f = NULL;
		return TK_ERR_NOMEM;
	}
	int rc = write_all(s->fd, s->path, s->fbuf.p, s->fbuf.len, &s->bytes_out, s->err);
	s->synced_out = s->bytes_out;
	return rc;
}

int tk__sink_open_fd(tk__sink *s, int fd, const char *name, const tk__ofilter *f, int level)
{
	memset(s, 0, sizeof *s);
	s->fd = fd;
	s->path = tk__strdup(name ? name : "(output)");
	if (!s->path)
		return TK_ERR_NOMEM;
	return filter_start(s, f, level);
}

/* The process's umask, read without setting it (umask() would change it
 * for a moment for every thread, and a file another thread made then would
 * get its bits): /proc's status, else that moment. */
static mode_t current_umask(void)
{
	FILE *f = fopen("/proc/self/status", "re");
	unsigned m;
	char line[256];
	while (f && fgets(line, sizeof line, f))
		if (sscanf(line, "Umask: %o", &m) == 1) {
			fclose(f);
			return (mode_t)m & 0777;
		}
	if (f)
		fclose(f);
	mode_t um = umask(0);
	umask(um);
	return um;
}

int tk__sink_open_path(tk__sink *s, const char *path, const tk__ofilter *f, int level)
{
	if (strcmp(path, "-") == 0)
		return tk__sink_open_fd(s, 1, "(stdout)", f, level);
	memset(s, 0, sizeof *s);
	s->fd = -1;
	if (!*path) {
		snprintf(s->err, sizeof s->err, "the output's path is empty");
		return TK_ERR_ARG;
	}
	struct stat st;
	if (lstat(path, &st) == 0 && S_ISLNK(st.st_mode) && !(stat(path, &st) == 0 && !S_ISREG(st.st_mode))) {
		/* a symbolic link to a file stays one: the file is written (one to
		 * a pipe or device, /dev/stdout, >(...), is written through below) */
		s->path = realpath(path, NULL);
		if (!s->path) {
			int e = errno;
			snprintf(s->err, sizeof s->err, "%s: cannot follow the symbolic link: %s", path, strerror(e));
			return e == ENOMEM ? TK_ERR_NOMEM : TK_ERR_IO;
		}
	} else {
		s->path = tk__strdup(path);
	}
	if (!s->path)
		return TK_ERR_NOMEM;
	path = s->path;
	int exists = stat(path, &st) == 0;
	if (exists && !S_ISREG(st.st_mode)) {
		/* a device or fifo (/dev/null, a pipe): write straight to it */
		s->fd = open(path, O_WRONLY | O_CLOEXEC);
		if (s->fd < 0) {
			snprintf(s->err, sizeof s->err, "%s: cannot open: %s", path, strerror(errno));
			return TK_ERR_IO;
		}
		s->own_fd = 1;
		return filter_start(s, f, level);
	}
	size_t n = strlen(path);
	s->tmppath = malloc(n + 16);
	if (!s->tmppath)
		return TK_ERR_NOMEM;
	memcpy(s->tmppath, path, n);
	memcpy(s->tmppath + n, ".tmp-XXXXXX", 12);
	s->fd = tk__tmp_create(s->tmppath, 0, &s->tmp_hold);
	if (s->fd < 0) {
		/* the file itself may exist: what failed is the temporary name
		 * beside it, in its directory (read-only, /proc, missing) */
		snprintf(s->err, sizeof s->err, "%s: cannot create (a temporary file beside it, renamed when complete): %s",
		         path, strerror(errno));
		free(s->tmppath);
		s->tmppath = NULL;
		return TK_ERR_IO;
	}
	s->own_fd = 1;
	/* a file replaced keeps its permissions (a private trace stays
	 * private); a new one gets the umask's, as open() would give it */
	fchmod(s->fd, exists ? st.st_mode & 0777 : 0666 & ~current_umask());
	return filter_start(s, f, level);
}

/* ---- writing ---- */

/* n more bytes accepted: plain output counts them at once (its size is
 * exact); filtered output when its blocks are written. */
static void accepted(tk__sink *s, size_t n)
{
	s->raw_in += n;
	if (!s->f) {
		s->bytes_out += n;
		s->synced_out = s->bytes_out;
		s->raw_synced = s->raw_in;
	}
}

int tk__sink_write(tk__sink *s, const void *p, size_t n)
{
	if (tk__buf_append(&s->pend, p, n)) {
		snprintf(s->err, sizeof s->err, "out of memory");
		return TK_ERR_NOMEM;
	}
	accepted(s, n);
	if (s->pend.len < TK__BLOCK)
		return 0;
	if (s->may_aio)
		aio_start(s);
	return cut(s);
}

int tk__sink_give(tk__sink *s, tk__buf *b)
{
	if (s->pend.len || b->len < TK__BLOCK) {
		int rc = tk__sink_write(s, b->p, b->len);
		b->len = 0;
		return rc;
	}
	if (s->may_aio)
		aio_start(s);
	accepted(s, b->len);
	return submit(s, b);
}

int tk__sink_sync(tk__sink *s)
{
	if (tk__sink_exact(s))
		return 0;
	int rc = drain(s);
	if (!rc) {
		s->raw_synced = s->raw_in;
		s->synced_out = s->bytes_out;
	}
	return rc;
}

int tk__sink_exact(const tk__sink *s)
{
	return !s->f || s->raw_synced == s->raw_in;
}

uint64_t tk__sink_bound(const tk__sink *s, uint64_t extra)
{
	if (!s->f)
		return s->bytes_out + extra;
	return s->synced_out + s->f->bound(s->raw_in - s->raw_synced + extra);
}

int tk__sink_finish(tk__sink *s)
{
	int rc = drain(s);
	aio_stop(s);
	if (!rc && s->f) {
		s->fbuf.len = 0;
		rc = s->f->finish(s->fst, s->raw_in, &s->fbuf, s->err);
		if (!rc)
			rc = write_all(s->fd, s->path, s->fbuf.p, s->fbuf.len, &s->bytes_out, s->err);
		s->synced_out = s->bytes_out;
	}
	/* the data is on disk before the name points at it */
	if (!rc && s->tmppath && s->fd >= 0 && fsync(s->fd)) {
		snprintf(s->err, sizeof s->err, "%s: cannot sync: %s", s->path, strerror(errno));
		rc = TK_ERR_IO;
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
			tk__tmp_release(s->tmp_hold);
			s->tmp_hold = 0;
			free(s->tmppath);
			s->tmppath = NULL;
		}
	}
	return rc;
}

void tk__sink_discard(tk__sink *s)
{
	aio_stop(s);
	if (s->f) {
		if (s->enc)
			s->f->enc_free(s->enc);
		s->f->close(s->fst);
	}
	s->enc = s->fst = NULL;
	s->f = NULL;
	if (s->own_fd && s->fd >= 0)
		close(s->fd);
	s->fd = -1;
	if (s->tmppath) {
		unlink(s->tmppath);
		free(s->tmppath);
	}
	tk__tmp_release(s->tmp_hold);
	s->tmp_hold = 0;
	s->tmppath = NULL;
	tk__buf_free(&s->pend);
	tk__buf_free(&s->fbuf);
	free(s->ctx);
	s->ctx = NULL;
	free(s->path);
	s->path = NULL;
}
