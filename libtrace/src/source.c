/* source.c: input bytes from a file descriptor or memory, with a gzip layer detected from the magic. */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "internal.h"

#define TK__ZIN (256 * 1024)

static long raw_read(tk__src *s, unsigned char *dst, size_t cap)
{
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
			snprintf(s->err, sizeof s->err, "read failed: %s", strerror(errno));
			return -1;
		}
		s->bytes_in += (uint64_t)n;
		return (long)n;
	}
}

/* Fill zin with raw bytes; returns count, 0 at end, <0 on error. */
static long refill_in(tk__src *s)
{
	long n = raw_read(s, s->zin, s->zin_cap);
	if (n == 0)
		s->eof_raw = 1;
	if (n > 0) {
		s->z.next_in = s->zin;
		s->z.avail_in = (uInt)n;
	}
	return n;
}

/* Called on the first read: sniff the gzip magic. */
static int sniff(tk__src *s)
{
	s->zin_cap = TK__ZIN;
	s->zin = malloc(s->zin_cap);
	if (!s->zin) {
		snprintf(s->err, sizeof s->err, "out of memory");
		return -1;
	}
	size_t got = 0;
	while (got < 2) {
		long n = raw_read(s, s->zin + got, s->zin_cap - got);
		if (n < 0)
			return -1;
		if (n == 0) {
			s->eof_raw = 1;
			break;
		}
		got += (size_t)n;
	}
	s->z.next_in = s->zin;
	s->z.avail_in = (uInt)got;
	if (got >= 2 && s->zin[0] == 0x1f && s->zin[1] == 0x8b) {
		if (inflateInit2(&s->z, 16 + MAX_WBITS) != Z_OK) {
			snprintf(s->err, sizeof s->err, "zlib init failed");
			return -1;
		}
		s->gz = 1;
	} else {
		s->gz = -1; /* plain: drain zin first */
	}
	return 0;
}

static long plain_read(tk__src *s, unsigned char *dst, size_t cap)
{
	if (s->z.avail_in) {
		size_t n = s->z.avail_in < cap ? s->z.avail_in : cap;
		memcpy(dst, s->z.next_in, n);
		s->z.next_in += n;
		s->z.avail_in -= (uInt)n;
		return (long)n;
	}
	if (s->eof_raw)
		return 0;
	return raw_read(s, dst, cap);
}

/* After one gzip member ends: another member may follow (as `cat a.gz b.gz`). */
static int next_member(tk__src *s)
{
	if (!s->z.avail_in && !s->eof_raw && refill_in(s) < 0)
		return -1;
	if (!s->z.avail_in) {
		s->gz_done = 1;
		return 0;
	}
	if (s->z.avail_in == 1 && !s->eof_raw && s->z.next_in[0] == 0x1f) {
		/* need the second magic byte */
		unsigned char b0 = s->z.next_in[0];
		s->zin[0] = b0;
		long n = raw_read(s, s->zin + 1, s->zin_cap - 1);
		if (n < 0)
			return -1;
		s->z.next_in = s->zin;
		s->z.avail_in = (uInt)(1 + n);
	}
	if (s->z.avail_in >= 2 && s->z.next_in[0] == 0x1f && s->z.next_in[1] == 0x8b) {
		inflateReset(&s->z);
		return 0;
	}
	snprintf(s->err, sizeof s->err, "trailing bytes after the gzip data");
	return -1;
}

static long gz_read(tk__src *s, unsigned char *dst, size_t cap)
{
	s->z.next_out = dst;
	s->z.avail_out = (uInt)(cap > (1u << 30) ? (1u << 30) : cap);
	uInt want = s->z.avail_out;
	while (s->z.avail_out == want && !s->gz_done) {
		if (!s->z.avail_in && !s->eof_raw && refill_in(s) < 0)
			return -1;
		if (!s->z.avail_in && s->eof_raw) {
			s->gz_truncated = 1; /* the stream stopped inside a member */
			s->gz_done = 1;
			break;
		}
		int rc = inflate(&s->z, Z_NO_FLUSH);
		if (rc == Z_STREAM_END) {
			if (next_member(s))
				return -1;
		} else if (rc == Z_DATA_ERROR || rc == Z_NEED_DICT) {
			snprintf(s->err, sizeof s->err, "corrupt gzip data: %s",
			         s->z.msg ? s->z.msg : "invalid stream");
			return -1;
		} else if (rc == Z_MEM_ERROR) {
			snprintf(s->err, sizeof s->err, "out of memory in zlib");
			return -1;
		}
	}
	return (long)(want - s->z.avail_out);
}

long tk__src_read(tk__src *s, unsigned char *dst, size_t cap)
{
	if (!s->gz && sniff(s))
		return -1;
	if (s->gz > 0)
		return gz_read(s, dst, cap);
	return plain_read(s, dst, cap);
}

void tk__src_close(tk__src *s)
{
	if (s->gz > 0)
		inflateEnd(&s->z);
	free(s->zin);
	s->zin = NULL;
	if (s->own_fd && s->fd >= 0)
		close(s->fd);
	s->fd = -1;
}
