/* sink.c: output to a file (temporary name, renamed when complete) or fd, with optional gzip. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"

#define TK__ZOUT (256 * 1024)

static int write_all(tk__sink *s, const unsigned char *p, size_t n)
{
	while (n) {
		ssize_t k = write(s->fd, p, n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0) {
			snprintf(s->err, sizeof s->err, "%s: write failed: %s", s->path ? s->path : "(output)",
			         strerror(errno));
			return TK_ERR_IO;
		}
		p += k;
		n -= (size_t)k;
		s->bytes_out += (uint64_t)k;
	}
	return 0;
}

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

static int deflate_some(tk__sink *s, int flush)
{
	int rc;
	do {
		s->z.next_out = s->zout;
		s->z.avail_out = TK__ZOUT;
		rc = deflate(&s->z, flush);
		if (rc == Z_STREAM_ERROR) {
			snprintf(s->err, sizeof s->err, "zlib deflate failed");
			return TK_ERR_IO;
		}
		size_t have = TK__ZOUT - s->z.avail_out;
		if (have && write_all(s, s->zout, have))
			return TK_ERR_IO;
	} while (s->z.avail_out == 0 || (flush == Z_FINISH && rc != Z_STREAM_END));
	return 0;
}

int tk__sink_write(tk__sink *s, const void *p, size_t n)
{
	s->raw_in += n;
	if (!s->gz) {
		s->raw_synced = s->raw_in;
		return write_all(s, p, n);
	}
	s->z.next_in = (unsigned char *)(uintptr_t)p;
	s->z.avail_in = (uInt)n;
	int rc = deflate_some(s, Z_NO_FLUSH);
	s->z.avail_in = 0;
	return rc;
}

int tk__sink_sync(tk__sink *s)
{
	if (!s->gz || !s->z_init || s->raw_synced == s->raw_in)
		return 0;
	s->z.next_in = NULL;
	s->z.avail_in = 0;
	int rc = deflate_some(s, Z_SYNC_FLUSH);
	if (!rc)
		s->raw_synced = s->raw_in;
	return rc;
}

int tk__sink_finish(tk__sink *s)
{
	int rc = 0;
	if (s->gz && s->z_init)
		rc = deflate_some(s, Z_FINISH);
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
