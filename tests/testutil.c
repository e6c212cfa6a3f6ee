/* testutil.c: helpers shared by the cmocka tests: test data, temporary files, gzip, event lists. */
#define _GNU_SOURCE
#include "testutil.h"

#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <zlib.h>

#ifndef TK_TESTDATA
#error "TK_TESTDATA must name the testdata directory"
#endif

char *tu_read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		fail_msg("cannot open %s", path);
	size_t cap = 1 << 16, n = 0, k;
	char *buf = malloc(cap + 1);
	assert_non_null(buf);
	while ((k = fread(buf + n, 1, cap - n, f)) > 0) {
		n += k;
		if (n == cap) {
			cap *= 2;
			buf = realloc(buf, cap + 1);
			assert_non_null(buf);
		}
	}
	fclose(f);
	buf[n] = 0;
	*len = n;
	return buf;
}

char *tu_load(const char *name, size_t *len)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/%s", TK_TESTDATA, name);
	size_t n;
	char *buf = tu_read_file(path, &n);
	char *nl = memchr(buf, '\n', n);
	if (!nl || buf[0] != '#')
		fail_msg("%s must start with a one-line '#' comment", path);
	size_t skip = (size_t)(nl + 1 - buf);
	memmove(buf, buf + skip, n - skip + 1);
	*len = n - skip;
	return buf;
}

void tu_write_file(const char *path, const void *p, size_t n)
{
	FILE *f = fopen(path, "wb");
	if (!f)
		fail_msg("cannot create %s", path);
	if (n && fwrite(p, 1, n, f) != n)
		fail_msg("cannot write %s", path);
	if (fclose(f))
		fail_msg("cannot close %s", path);
}

static char tmpdir[256];

const char *tu_tmpdir(void)
{
	if (!tmpdir[0]) {
		const char *base = getenv("TMPDIR");
		snprintf(tmpdir, sizeof tmpdir, "%s/tktest-XXXXXX", base && *base ? base : "/tmp");
		if (!mkdtemp(tmpdir))
			fail_msg("mkdtemp failed");
	}
	return tmpdir;
}

const char *tu_path(const char *name)
{
	static char path[512];
	snprintf(path, sizeof path, "%s/%s", tu_tmpdir(), name);
	return path;
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

void tu_cleanup(void)
{
	if (tmpdir[0])
		nftw(tmpdir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	tmpdir[0] = 0;
}

int tu_count_prefix(const char *dir, const char *prefix)
{
	DIR *d = opendir(dir);
	assert_non_null(d);
	int n = 0;
	struct dirent *de;
	while ((de = readdir(d)))
		n += strncmp(de->d_name, prefix, strlen(prefix)) == 0;
	closedir(d);
	return n;
}

unsigned char *tu_gzip(const void *p, size_t n, size_t *out_len)
{
	z_stream z;
	memset(&z, 0, sizeof z);
	assert_int_equal(deflateInit2(&z, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY), Z_OK);
	size_t cap = deflateBound(&z, (uLong)n) + 64;
	unsigned char *out = malloc(cap);
	assert_non_null(out);
	z.next_in = (unsigned char *)(uintptr_t)p;
	z.avail_in = (uInt)n;
	z.next_out = out;
	z.avail_out = (uInt)cap;
	assert_int_equal(deflate(&z, Z_FINISH), Z_STREAM_END);
	*out_len = cap - z.avail_out;
	deflateEnd(&z);
	return out;
}

char *tu_gunzip(const void *p, size_t n, size_t *out_len)
{
	z_stream z;
	memset(&z, 0, sizeof z);
	assert_int_equal(inflateInit2(&z, 16 + MAX_WBITS), Z_OK);
	size_t cap = 1 << 16, len = 0;
	char *out = malloc(cap + 1);
	assert_non_null(out);
	z.next_in = (unsigned char *)(uintptr_t)p;
	z.avail_in = (uInt)n;
	for (;;) {
		if (len == cap) {
			cap *= 2;
			out = realloc(out, cap + 1);
			assert_non_null(out);
		}
		z.next_out = (unsigned char *)out + len;
		z.avail_out = (uInt)(cap - len);
		int rc = inflate(&z, Z_NO_FLUSH);
		len = cap - z.avail_out;
		if (rc == Z_STREAM_END) {
			if (!z.avail_in)
				break;
			inflateReset(&z); /* another member follows */
		} else if (rc != Z_OK) {
			break; /* cut off or corrupt: keep what came out */
		} else if (z.avail_out && !z.avail_in) {
			break;
		}
	}
	inflateEnd(&z);
	out[len] = 0;
	*out_len = len;
	return out;
}

int tu_read_all(tk_reader *r, tu_events *out)
{
	const tk_event *ev;
	int rc;
	while ((rc = tk_reader_next(r, &ev)) == TK_OK) {
		if (out->n == out->cap) {
			out->cap = out->cap ? out->cap * 2 : 64;
			out->ev = realloc(out->ev, out->cap * sizeof *out->ev);
			assert_non_null(out->ev);
		}
		out->ev[out->n] = tk_event_dup(ev);
		assert_non_null(out->ev[out->n]);
		out->n++;
	}
	out->rc = rc;
	return rc;
}

void tu_events_free(tu_events *e)
{
	for (size_t i = 0; i < e->n; i++)
		tk_event_free(e->ev[i]);
	free(e->ev);
	memset(e, 0, sizeof *e);
}

tk_reader *tu_open_mem(const void *p, size_t n, const char *name, const tk_reader_opts *o)
{
	tk_reader *r = NULL;
	int rc = tk_reader_open_memory(&r, p, n, name, o);
	if (rc)
		fail_msg("open %s: %d %s", name, rc, tk_reader_error(r));
	return r;
}

int tu_read_text(const char *text, tu_events *out)
{
	tk_reader *r = NULL;
	int rc = tk_reader_open_memory(&r, text, strlen(text), "t.json", NULL);
	if (!rc)
		rc = tu_read_all(r, out);
	out->rc = rc;
	tk_reader_free(r);
	return rc;
}

typedef struct trickle {
	int fd;
	const unsigned char *p;
	size_t n;
} trickle;

static void *trickle_main(void *arg)
{
	trickle *tr = arg;
	for (size_t i = 0; i < tr->n; i++)
		while (write(tr->fd, tr->p + i, 1) != 1 && errno == EINTR)
			;
	close(tr->fd);
	return NULL;
}

int tu_read_trickled(const void *p, size_t n, const char *name, const tk_reader_opts *o,
                     tu_events *ev, tk_reader **rp)
{
	int sv[2];
	assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv), 0);
	trickle tr = {sv[1], p, n};
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, trickle_main, &tr), 0);
	tk_reader *r = NULL;
	int rc = tk_reader_open_fd(&r, sv[0], name, o);
	if (!rc)
		rc = tu_read_all(r, ev);
	/* drain so the writer can finish on every path */
	char sink[64];
	while (read(sv[0], sink, sizeof sink) > 0)
		;
	pthread_join(th, NULL);
	close(sv[0]);
	*rp = r;
	return rc;
}

int tu_utf8_valid(const void *vp, size_t n)
{
	const unsigned char *p = vp, *e = p + n;
	while (p < e) {
		unsigned c = *p;
		size_t k = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
		if (!k || (size_t)(e - p) < k || (c & 0xFE) == 0xC0)
			return 0;
		uint32_t cp = k == 1 ? c : c & (0x7F >> k);
		for (size_t i = 1; i < k; i++) {
			if ((p[i] & 0xC0) != 0x80)
				return 0;
			cp = cp << 6 | (p[i] & 0x3F);
		}
		static const uint32_t min[5] = {0, 0, 0x80, 0x800, 0x10000};
		if (cp < min[k] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
			return 0;
		p += k;
	}
	return 1;
}

int tu_contains(const char *s, const char *needle)
{
	if (s && strstr(s, needle))
		return 1;
	print_error("expected \"%s\" in \"%s\"\n", needle, s ? s : "(null)");
	return 0;
}

void tu_linecol(const char *text, size_t at, unsigned long *line, unsigned long *col)
{
	unsigned long ln = 1;
	size_t start = 0;
	for (size_t i = 0; i < at; i++)
		if (text[i] == '\n') {
			ln++;
			start = i + 1;
		}
	*line = ln;
	*col = (unsigned long)(at - start + 1);
}

tk_sv tu_sv(const char *s)
{
	return (tk_sv){s, strlen(s)};
}

void tu_put(tu_bytes *b, const void *p, size_t n)
{
	if (n > b->cap - b->n) {
		b->cap = (b->n + n) * 2 + 64;
		b->p = realloc(b->p, b->cap);
		assert_non_null(b->p);
	}
	if (n)
		memcpy(b->p + b->n, p, n);
	b->n += n;
}

void tu_put_varint(tu_bytes *b, uint64_t v)
{
	unsigned char t[10];
	size_t k = 0;
	while (v >= 0x80) {
		t[k++] = (unsigned char)(v | 0x80);
		v >>= 7;
	}
	t[k++] = (unsigned char)v;
	tu_put(b, t, k);
}

int tu_sv_is(tk_sv v, const char *s)
{
	size_t n = strlen(s);
	if (v.ptr && v.len == n && memcmp(v.ptr, s, n) == 0)
		return 1;
	print_error("expected \"%s\", got \"%.*s\"\n", s, v.ptr ? (int)v.len : 6,
	            v.ptr ? v.ptr : "(null)");
	return 0;
}

int tu_lockstep(tk_reader *a, tk_reader *b, const char *what, uint64_t *events)
{
	const tk_event *ea, *eb;
	uint64_t k = 0;
	int ra, rb;
	for (;; k++) {
		ra = tk_reader_next(a, &ea);
		rb = tk_reader_next(b, &eb);
		if (ra != rb)
			fail_msg("%s: event %llu: %d against %d (%s | %s)", what, (unsigned long long)k, ra, rb,
			         tk_reader_error(a), tk_reader_error(b));
		if (ra != TK_OK)
			break;
		if (!tk_event_equal(ea, eb))
			fail_msg("%s: event %llu differs", what, (unsigned long long)k);
	}
	tu_same_end(a, b, ra);
	if (events)
		*events = k;
	return ra;
}

int tu_convert(const char *in, const char *out, const tk_writer_opts *wo, uint64_t *bytes_decoded)
{
	tk_reader *r = NULL;
	tk_writer *w = NULL;
	int rc = tk_reader_open_path(&r, in, NULL);
	rc = rc ? rc : tk_writer_open_path(&w, out, wo);
	const tk_event *ev;
	size_t copied = 0;
	while (!rc && (rc = tk_reader_next(r, &ev)) == TK_OK)
		rc = tk_copy_meta(w, r, &copied) || tk_writer_write(w, ev);
	if (rc == TK_EOF)
		rc = tk_copy_meta(w, r, &copied) || tk_writer_close(w);
	if (rc)
		fprintf(stderr, "%s to %s: %s %s\n", in, out, tk_reader_error(r), w ? tk_writer_error(w) : "");
	if (bytes_decoded)
		*bytes_decoded = r ? tk_reader_get_stats(r)->bytes_decoded : 0;
	tk_writer_free(w);
	tk_reader_free(r);
	return rc;
}

void tu_same_end(const tk_reader *a, const tk_reader *b, int rc)
{
	const tk_reader_stats *x = tk_reader_get_stats(a), *y = tk_reader_get_stats(b);
	assert_int_equal(x->events, y->events);
	if (rc == TK_EOF) {
		assert_int_equal(x->bytes_in, y->bytes_in);
		assert_int_equal(x->bytes_decoded, y->bytes_decoded);
	}
	assert_int_equal(x->repaired_strings, y->repaired_strings);
	assert_int_equal(x->truncated, y->truncated);
	assert_int_equal(x->dropped_bytes, y->dropped_bytes);
	assert_int_equal(tk_reader_is_bare_array(a), tk_reader_is_bare_array(b));
	assert_int_equal(tk_reader_meta_count(a), tk_reader_meta_count(b));
	for (size_t i = 0; i < tk_reader_meta_count(a); i++) {
		tk_sv ka, ja, kb, jb;
		int fa, fb;
		assert_int_equal(tk_reader_meta_get(a, i, &ka, &ja, &fa), 0);
		assert_int_equal(tk_reader_meta_get(b, i, &kb, &jb, &fb), 0);
		assert_int_equal(ka.len, kb.len);
		assert_memory_equal(ka.ptr, kb.ptr, ka.len);
		assert_int_equal(ja.len, jb.len);
		assert_memory_equal(ja.ptr, jb.ptr, ja.len);
		assert_int_equal(fa, fb);
	}
	assert_string_equal(tk_reader_error(a), tk_reader_error(b));
	for (size_t i = 0; tk_reader_warning(a, i) || tk_reader_warning(b, i); i++) {
		assert_non_null(tk_reader_warning(a, i));
		assert_non_null(tk_reader_warning(b, i));
		assert_string_equal(tk_reader_warning(a, i), tk_reader_warning(b, i));
	}
}
