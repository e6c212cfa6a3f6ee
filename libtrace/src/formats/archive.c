/* archive.c: the archive filter: tar, zip, 7z and whatever else libarchive reads, with the members read as they stream by (nothing extracted to disk). */
#define _GNU_SOURCE
#include <archive.h>
#include <pthread.h>
#include <archive_entry.h>
#include <errno.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "formats/archive.h"
#include "formats/formats.h"

#define TK__ARC_BUF (1024 * 1024) /* fewer, larger reads: half the cost of reading through libarchive */

struct tk__arc {
	int refs;
	/* held by every call into libarchive that a member's reader may make
	 * from another thread (its parse threads read ahead: docs/threads.md)
	 * while the caller moves on to the next member */
	pthread_mutex_t mu;
	tk__src src; /* the stack below the archive */
	struct archive *a;
	char *name;
	unsigned char *buf;
	uint64_t gen;    /* the member now open */
	char *member;    /* its path; NULL between members */
	char *last;      /* the member before: where a damaged header lies */
	int pending;     /* after a damaged header was reported: 1 the next
	                    header is read already (entry), 2 the end is */
	struct archive_entry *entry;
	int raw;         /* libarchive's raw format: one stream, no members */
	char below[TK__ERRLEN]; /* the stack below failed: why (it wins over libarchive's words) */
	int seekable;
	uint64_t fed; /* bytes handed to libarchive by reading (not seeking) */
	unsigned char tail[512]; /* the last bytes read through (up to 512), for drain() */
	size_t n_tail;
	int done;        /* no member follows */
	int failed;
	char err[TK__ERRLEN];
};

/* A tar header (POSIX and GNU): the "ustar" magic and a checksum that
 * holds, so that text that happens to have "ustar" at byte 257 is not one. */
static int tar_header(const unsigned char *p, size_t n)
{
	if (n < 512 || memcmp(p + 257, "ustar", 5) != 0)
		return 0;
	unsigned long sum = 0, want = 0;
	for (size_t i = 0; i < 512; i++)
		sum += i >= 148 && i < 156 ? ' ' : p[i];
	size_t i = 148;
	while (i < 156 && p[i] == ' ')
		i++;
	int digits = 0;
	for (; i < 156 && p[i] >= '0' && p[i] <= '7'; i++, digits++)
		want = want * 8 + (unsigned long)(p[i] - '0');
	return digits && sum == want;
}

/* Magic numbers of what libarchive reads and the gzip filter does not:
 * archive formats and the compressions only libarchive decodes. Bids
 * below gzip's, which decodes gzip first (a .tar.gz is gzip, then tar). */
static int arc_bid(const unsigned char *p, size_t n)
{
	static const struct {
		size_t off, len;
		const char *magic;
	} m[] = {
		{0, 4, "PK\x03\x04"},        /* zip */
		{0, 4, "PK\x05\x06"},        /* empty zip */
		{0, 4, "PK\x07\x08"},        /* spanned zip */
		{0, 6, "7z\xbc\xaf\x27\x1c"}, /* 7z */
		{0, 6, "\xfd" "7zXZ\0"},     /* xz */
		{0, 4, "\x28\xb5\x2f\xfd"},  /* zstd */
		{0, 3, "BZh"},               /* bzip2 */
		{0, 4, "\x04\x22\x4d\x18"},  /* lz4 */
		{0, 4, "LZIP"},              /* lzip */
		{0, 2, "\x1f\x9d"},          /* compress (.Z) */
		{0, 6, "Rar!\x1a\x07"},      /* rar */
		{0, 8, "!<arch>\n"},         /* ar */
		{0, 6, "070707"},            /* cpio, odc */
		{0, 6, "070701"},            /* cpio, newc */
		{0, 6, "070702"},            /* cpio, newc with crc */
	};
	for (size_t i = 0; i < sizeof m / sizeof m[0]; i++)
		if (n >= m[i].off + m[i].len && memcmp(p + m[i].off, m[i].magic, m[i].len) == 0)
			return 50;
	return tar_header(p, n) ? 50 : 0;
}

const tk__ifilter tk__ifilter_archive = {"archive", 1, "", arc_bid, NULL, NULL, NULL, NULL};

void tk__arc_support(struct archive *a)
{
	archive_read_support_filter_all(a);
	/* the archive formats that are found by their magic numbers; not mtree
	 * or warc, whose guesses from text take a line of JSON for an archive */
	archive_read_support_format_7zip(a);
	archive_read_support_format_ar(a);
	archive_read_support_format_cab(a);
	archive_read_support_format_cpio(a);
	archive_read_support_format_iso9660(a);
	archive_read_support_format_lha(a);
	archive_read_support_format_rar(a);
	archive_read_support_format_rar5(a);
	archive_read_support_format_tar(a);
	archive_read_support_format_xar(a);
	archive_read_support_format_zip(a);
	/* a compressed stream that is no archive: the trace itself */
	archive_read_support_format_raw(a);
}

/* ---- libarchive's callbacks: the stack below ---- */

/* The last 512 bytes of what went by. */
static void keep_tail(tk__arc *a, const unsigned char *p, size_t n)
{
	if (n >= sizeof a->tail) {
		memcpy(a->tail, p + n - sizeof a->tail, sizeof a->tail);
		a->n_tail = sizeof a->tail;
		return;
	}
	size_t keep = a->n_tail + n > sizeof a->tail ? sizeof a->tail - n : a->n_tail;
	memmove(a->tail, a->tail + a->n_tail - keep, keep);
	memcpy(a->tail + keep, p, n);
	a->n_tail = keep + n;
}

/* The next bytes of the stack below into a->buf, their tail kept: > 0, 0
 * at its end, -1 with a->below saying why (a cut stream included: its end
 * is not the archive's). */
static long read_below(tk__arc *a)
{
	long n = tk__src_read(&a->src, a->buf, TK__ARC_BUF);
	if (n < 0)
		snprintf(a->below, sizeof a->below, "%s", a->src.err);
	else if (n == 0 && a->src.cut)
		snprintf(a->below, sizeof a->below, "the %s stream is cut off", a->src.cut);
	if (a->below[0])
		return -1;
	keep_tail(a, a->buf, (size_t)n);
	return n;
}

static la_ssize_t cb_read(struct archive *ar, void *cd, const void **buf)
{
	tk__arc *a = cd;
	long n = read_below(a);
	if (n < 0) {
		archive_set_error(ar, EIO, "%s", a->below);
		return -1;
	}
	a->fed += (uint64_t)n;
	*buf = a->buf;
	return n;
}

/* Seeking, for an archive straight on a regular file: libarchive then
 * skips members without reading them and reads zip and 7z through their
 * directories. */
static la_int64_t cb_seek(struct archive *ar, void *cd, la_int64_t off, int whence)
{
	tk__arc *a = cd;
	tk__stage *st = &a->src.st[0];
	la_int64_t size, cur;
	if (a->src.mem) {
		size = (la_int64_t)a->src.mem_len;
		cur = (la_int64_t)a->src.mem_pos;
	} else {
		struct stat sb;
		off_t c = lseek(a->src.fd, 0, SEEK_CUR);
		if (c < 0 || fstat(a->src.fd, &sb))
			return ARCHIVE_FATAL;
		size = (la_int64_t)sb.st_size;
		cur = (la_int64_t)c;
	}
	la_int64_t pos = cur - (la_int64_t)(st->ahead_len - st->ahead_pos), to = off;
	int over = 0; /* a member's declared size can be anything up to 2^63 */
	if (whence == SEEK_CUR)
		over = __builtin_add_overflow(pos, off, &to);
	else if (whence == SEEK_END)
		over = __builtin_add_overflow(size, off, &to);
	if (over)
		to = off < 0 ? -1 : size + 1;
	if (to < 0 || to > size) {
		snprintf(a->below, sizeof a->below, "an offset in the archive points %s (byte %lld of %lld)",
		         to < 0 ? "before its start" : "past its end", (long long)to, (long long)size);
		archive_set_error(ar, EINVAL, "%s", a->below);
		return ARCHIVE_FATAL;
	}
	if (a->src.mem) {
		a->src.mem_pos = (size_t)to;
	} else if (lseek(a->src.fd, (off_t)to, SEEK_SET) < 0) {
		snprintf(a->below, sizeof a->below, "cannot seek: %s", strerror(errno));
		archive_set_error(ar, errno, "%s", a->below);
		return ARCHIVE_FATAL;
	}
	free(st->ahead);
	st->ahead = NULL;
	st->ahead_len = st->ahead_pos = st->ahead_cap = 0;
	a->src.bytes_in = (uint64_t)to;
	return to;
}

/* Memory, or a regular file, with no filter over it. */
static int seekable(const tk__src *s)
{
	struct stat sb;
	if (s->n != 1 || s->base.read)
		return 0;
	if (s->mem)
		return 1;
	/* a file read from its start: the archive is the whole file (an fd
	 * handed over at another offset is read forward only) */
	off_t at = s->fd >= 0 ? lseek(s->fd, 0, SEEK_CUR) : -1;
	return at >= 0 && (uint64_t)at == s->bytes_in && fstat(s->fd, &sb) == 0 && S_ISREG(sb.st_mode);
}

/* ---- the archive ---- */

/* "NAME//MEMBER: damaged archive at byte N: msg" inside a member, "NAME:
 * damaged archive at byte N (after member M): msg" between members. N
 * counts the archive's own bytes. */
static void arc_msg(tk__arc *a, const char *msg)
{
	unsigned long long at = (unsigned long long)a->src.bytes_in;
	if (a->member)
		snprintf(a->err, sizeof a->err, "%.120s//%.120s: damaged archive at byte %llu: %.200s", a->name,
		         a->member, at, msg);
	else if (a->last)
		snprintf(a->err, sizeof a->err, "%.120s: damaged archive at byte %llu (after member %.120s): %.200s",
		         a->name, at, a->last, msg);
	else
		snprintf(a->err, sizeof a->err, "%.120s: damaged archive at byte %llu: %.200s", a->name, at, msg);
}

static int arc_fail_msg(tk__arc *a, const char *msg)
{
	arc_msg(a, msg);
	a->failed = 1;
	a->done = 1;
	return TK_ERR_FORMAT;
}

static int arc_fail(tk__arc *a, const char *what)
{
	const char *msg = a->below[0] ? a->below : a->a ? archive_error_string(a->a) : NULL;
	return arc_fail_msg(a, msg ? msg : what);
}

/* After the archive's end: a compressed stream under it must end there
 * too, whole (its checksum checked), with nothing after it; and a tar,
 * which is whole 512-byte blocks, must not have lost part of one (libarchive
 * takes a tar cut inside a header for its end). */
static int drain(tk__arc *a)
{
	uint64_t total = a->fed;
	if (a->seekable) {
		struct stat sb;
		total = a->src.mem ? a->src.mem_len : fstat(a->src.fd, &sb) == 0 ? (uint64_t)sb.st_size : 0;
		size_t t = total < sizeof a->tail ? (size_t)total : sizeof a->tail;
		ssize_t got = a->src.mem ? (memcpy(a->tail, a->src.mem + total - t, t), (ssize_t)t)
		                         : pread(a->src.fd, a->tail, t, (off_t)(total - t));
		a->n_tail = got == (ssize_t)t ? t : 0;
	} else {
		for (long n; (n = read_below(a)) != 0; total += (uint64_t)n)
			if (n < 0)
				return arc_fail_msg(a, a->below);
	}
	/* (a tar that libarchive decompresses itself is checked by that
	 * compression's own checksums; these counts are its compressed bytes) */
	if ((archive_format(a->a) & ARCHIVE_FORMAT_BASE_MASK) != ARCHIVE_FORMAT_TAR ||
	    archive_filter_code(a->a, 0) != ARCHIVE_FILTER_NONE || !(total % 512))
		return 0;
	/* a partial last block: zeros are cut padding (nothing lost); anything
	 * else is a header that was cut, whose member is lost */
	size_t part = (size_t)(total % 512);
	if (a->n_tail < part)
		return arc_fail_msg(a, "the tar archive is cut off (it is not whole 512-byte blocks)");
	for (size_t i = a->n_tail - part; i < a->n_tail; i++)
		if (a->tail[i])
			return arc_fail_msg(a, "the tar archive is cut off inside a member header");
	return 0;
}

int tk__arc_open(tk__arc **out, tk__src *below, const char *name)
{
	tk__arc *a = calloc(1, sizeof *a);
	*out = a;
	if (!a) {
		tk__src_close(below);
		return TK_ERR_NOMEM;
	}
	a->refs = 1;
	pthread_mutex_init(&a->mu, NULL);
	a->src = *below;
	memset(below, 0, sizeof *below);
	a->name = tk__strdup(name ? name : "(input)");
	a->buf = malloc(TK__ARC_BUF);
	a->a = archive_read_new();
	if (!a->name || !a->buf || !a->a) {
		snprintf(a->err, sizeof a->err, "%s: out of memory", name);
		a->failed = a->done = 1;
		return TK_ERR_NOMEM;
	}
	tk__arc_support(a->a);
	if ((a->seekable = seekable(&a->src))) {
		archive_read_set_seek_callback(a->a, cb_seek);
	} else {
		const tk__stage *st = &a->src.st[a->src.n - 1];
		if (st->ahead_len - st->ahead_pos >= 6 && !memcmp(st->ahead + st->ahead_pos, "7z\xbc\xaf\x27\x1c", 6)) {
			snprintf(a->err, sizeof a->err, "%s: a 7z archive is read through its directory at its "
			         "end: give it as a file, not through a pipe or a compression", a->name);
			a->failed = a->done = 1;
			return TK_ERR_UNSUPPORTED;
		}
	}
	archive_read_set_read_callback(a->a, cb_read);
	archive_read_set_callback_data(a->a, a);
	if (archive_read_open1(a->a) != ARCHIVE_OK)
		return arc_fail(a, "cannot open");
	return 0;
}

tk__arc *tk__arc_ref(tk__arc *a)
{
	if (a)
		__atomic_add_fetch(&a->refs, 1, __ATOMIC_RELAXED);
	return a;
}

void tk__arc_unref(tk__arc *a)
{
	if (!a || __atomic_sub_fetch(&a->refs, 1, __ATOMIC_ACQ_REL) > 0)
		return;
	if (a->a)
		archive_read_free(a->a);
	tk__src_close(&a->src);
	free(a->member);
	free(a->last);
	free(a->name);
	free(a->buf);
	pthread_mutex_destroy(&a->mu);
	free(a);
}

static int arc_next(tk__arc *a, const char **member, int64_t *size);

int tk__arc_next(tk__arc *a, const char **member, int64_t *size)
{
	pthread_mutex_lock(&a->mu);
	int rc = arc_next(a, member, size);
	pthread_mutex_unlock(&a->mu);
	return rc;
}

static int arc_next(tk__arc *a, const char **member, int64_t *size)
{
	if (a->done)
		return a->failed ? TK_ERR_FORMAT : 0;
	if (a->member) { /* the member before is done */
		free(a->last);
		a->last = a->member;
		a->member = NULL;
	}
	a->gen++;
	for (int skipped = 0;;) {
		struct archive_entry *e = a->entry;
		int rc = a->pending == 1 ? ARCHIVE_OK : a->pending == 2 ? ARCHIVE_EOF : archive_read_next_header(a->a, &e);
		a->pending = 0;
		if (rc == ARCHIVE_RETRY) {
			/* a damaged header that libarchive steps over: one error for
			 * the run of them, and the listing goes on after it */
			if (!skipped++) {
				const char *m = archive_error_string(a->a);
				char msg[TK__ERRLEN];
				snprintf(msg, sizeof msg, "%.200s (a damaged member header: whatever it held is lost)",
				         m ? m : "unreadable member header");
				arc_msg(a, msg);
			}
			continue;
		}
		if (skipped && rc >= ARCHIVE_WARN) {
			a->entry = e;
			a->pending = rc == ARCHIVE_EOF ? 2 : 1;
			return TK_ERR_FORMAT;
		}
		if (rc == ARCHIVE_EOF) {
			int d = drain(a);
			a->done = 1;
			return d;
		}
		if (rc < ARCHIVE_WARN)
			return arc_fail(a, "unreadable member header");
		a->raw = archive_format(a->a) == ARCHIVE_FORMAT_RAW;
		if (!a->raw && archive_entry_filetype(e) != AE_IFREG)
			continue;
		const char *path = archive_entry_pathname(e);
		if (!a->raw && !(a->member = tk__strdup(path ? path : ""))) {
			snprintf(a->err, sizeof a->err, "%s: out of memory", a->name);
			a->failed = a->done = 1;
			return TK_ERR_NOMEM;
		}
		*member = a->member;
		*size = !a->raw && archive_entry_size_is_set(e) ? (int64_t)archive_entry_size(e) : -1;
		return 1;
	}
}

/* ---- a member as the base of a source ---- */

typedef struct arc_member {
	tk__arc *a;
	uint64_t gen; /* the member's: a->gen while it is open */
} arc_member;

static long member_read_locked(arc_member *m, unsigned char *dst, size_t cap, uint64_t *bytes_in, char *err);

static long member_read(void *ctx, unsigned char *dst, size_t cap, uint64_t *bytes_in, char *err)
{
	arc_member *m = ctx;
	pthread_mutex_lock(&m->a->mu);
	long n = member_read_locked(m, dst, cap, bytes_in, err);
	pthread_mutex_unlock(&m->a->mu);
	return n;
}

static long member_read_locked(arc_member *m, unsigned char *dst, size_t cap, uint64_t *bytes_in, char *err)
{
	tk__arc *a = m->a;
	uint64_t gen = m->gen;
	if (gen != a->gen || (a->done && !a->failed)) {
		snprintf(err, TK__ERRLEN, "%s: the archive has moved on past this member", a->name);
		return -1;
	}
	if (a->failed) {
		snprintf(err, TK__ERRLEN, "%s", a->err);
		return -1;
	}
	la_ssize_t n = archive_read_data(a->a, dst, cap);
	*bytes_in = a->src.bytes_in;
	if (n < 0) {
		arc_fail(a, "unreadable member data");
		snprintf(err, TK__ERRLEN, "%s", a->err);
		return -1;
	}
	return (long)n;
}

static void member_close(void *ctx)
{
	arc_member *m = ctx;
	tk__arc_unref(m->a);
	free(m);
}

int tk__src_init_member(tk__src *s, tk__arc *a)
{
	arc_member *m = malloc(sizeof *m);
	if (!m)
		return TK_ERR_NOMEM;
	*m = (arc_member){tk__arc_ref(a), a->gen};
	tk__base b = {member_read, member_close, m};
	tk__src_init_base(s, &b);
	return 0;
}

const char *tk__arc_error(const tk__arc *a)
{
	return a ? a->err : "out of memory";
}

int tk__arc_failed(const tk__arc *a)
{
	return a->done && a->failed;
}

const char *tk__arc_name(const tk__arc *a)
{
	return a->name;
}

int tk__member_path(const char *path, char **file, const char **member)
{
	struct stat sb;
	if (stat(path, &sb) == 0)
		return 0;
	for (const char *p = strstr(path, "//"); p; p = strstr(p + 1, "//")) {
		char *f = tk__strndup(path, (size_t)(p - path));
		if (!f)
			return 0;
		if (strcmp(f, "-") == 0 || (stat(f, &sb) == 0 && !S_ISDIR(sb.st_mode))) {
			*file = f;
			*member = p + 2;
			return 1;
		}
		free(f);
	}
	return 0;
}
