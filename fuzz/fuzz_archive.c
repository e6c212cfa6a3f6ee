/* fuzz_archive.c: fuzz harness for traces read from archives (libFuzzer, or a plain main() over files).
 *
 * Each input is written to a memory file and opened as /proc/self/fd/N
 * with tk_inputs, as the tools open an archive; independently, the same
 * bytes are walked with libarchive's own read API (the filters and formats
 * tracekit enables, tk__arc_support, with the raw format for a compressed
 * single file). tracekit
 * decodes gzip itself and hands libarchive what comes out, so for an
 * input that starts as gzip the harness inflates it with zlib (as
 * `gzip -dc` would) and walks the result with libarchive, as a stream
 * without seeking. The invariant:
 *
 *  - every trace tk_inputs yields is, in order and by name, the next
 *    regular member with a trace name that libarchive yields (or the raw
 *    stream, named as the file itself);
 *  - a member libarchive extracts fully and cleanly reads through
 *    tk_inputs exactly as tk_reader_open_memory() reads the extracted
 *    bytes under the same name: the same open result, the same events
 *    (tk_event_equal), the same end and message, the same metadata,
 *    warnings and stats; a member whose bytes are an archive again is
 *    refused with TK_ERR_UNSUPPORTED;
 *  - a member whose data libarchive cannot read ends in an error (what
 *    follows it is not compared); when libarchive fails on a header,
 *    tracekit never ends cleanly (TK_EOF) and never yields a member
 *    libarchive does not reach; when libarchive succeeds, tracekit does
 *    not fail. The exceptions: gzip that zlib finds damaged or followed
 *    by other bytes, which tracekit's gzip decoder refuses wherever it
 *    meets it (with a message) while libarchive may have stopped reading
 *    before; gzip that is cut off, which tracekit reports as such
 *    where the stream ends even when what came before it is a whole
 *    archive; and a tar that is not whole 512-byte blocks with other than
 *    zeros in its last part, which tracekit calls cut where libarchive
 *    takes it for the end;
 *  - a gzip stream that is cut off is an error where libarchive, reading
 *    the same bytes with its own gzip filter, fails (the environment's
 *    FUZZ_ARCHIVE_ALLOW_GZIP_CUT=1 skips this one check, to fuzz on past
 *    it while it fails);
 *  - a listing (tk_inputs_next without a reader) names the same members;
 *  - every error carries a non-empty message;
 *  - input that is not an archive reads through tk_inputs (an fd) exactly
 *    as through tk_reader_open_memory().
 *
 * Work is capped (members, headers, events and extracted bytes) so that an
 * input runs in milliseconds; past a cap the comparison stops there. */
#define _GNU_SOURCE
#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <zlib.h>

#include "tracekit/tracekit.h"
#include "../libtrace/src/formats/archive.h"
#include "../libtrace/src/internal.h"
#include "../libtrace/src/par.h"

#define MAX_MEMBERS 32              /* trace members compared */
#define MAX_HEADERS 1024            /* headers libarchive may return */
#define MAX_RETRIES 64              /* ARCHIVE_RETRY answers tolerated */
#define MAX_MEMBER_BYTES (1u << 20) /* extracted bytes of one member */
#define MAX_TOTAL_BYTES (4u << 20)  /* extracted bytes of all members */
#define MAX_SKIP_BYTES (64u << 20)  /* declared size of the members skipped */
#define MAX_GUNZIP_BYTES (16u << 20) /* inflated bytes of the input */
#define MAX_EVENTS 2048             /* events compared per member */
#define CHUNK (256 * 1024)          /* what tracekit hands libarchive per read */

static const char *cur_name = ""; /* the member being compared, for messages */
/* what the inputs exercised, for the summary of main() */
static struct {
	unsigned long members, events, refused, plain, gzip_refused, damaged_headers;
} seen;

static void check(int ok, const char *what)
{
	if (!ok) {
		fprintf(stderr, "fuzz_archive: invariant broken: %s (member '%s')\n", what, cur_name);
		abort();
	}
}

static int nonempty(const char *s)
{
	return s && *s;
}

/* ---- gzip, inflated as `gzip -dc` does (members one after another) ---- */

enum { GZ_NONE, GZ_OK, GZ_CUT, GZ_BAD, GZ_BIG };

static int gunzip1(const unsigned char *in, size_t n, unsigned char **out, size_t *len)
{
	z_stream z;
	memset(&z, 0, sizeof z);
	*out = NULL;
	*len = 0;
	if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK)
		return GZ_BIG;
	size_t cap = 0;
	int st;
	z.next_in = (unsigned char *)in;
	z.avail_in = (uInt)n;
	for (;;) {
		if (*len == cap) {
			if (cap >= MAX_GUNZIP_BYTES) {
				st = GZ_BIG;
				break;
			}
			cap = cap ? cap * 2 : 64 * 1024;
			unsigned char *p = realloc(*out, cap);
			if (!p) {
				st = GZ_BIG;
				break;
			}
			*out = p;
		}
		z.next_out = *out + *len;
		z.avail_out = (uInt)(cap - *len);
		int rc = inflate(&z, Z_NO_FLUSH);
		*len = cap - z.avail_out;
		if (rc == Z_STREAM_END) {
			if (!z.avail_in) {
				st = GZ_OK;
				break;
			}
			if (z.avail_in >= 2 && z.next_in[0] == 0x1f && z.next_in[1] == 0x8b) {
				inflateReset(&z); /* another member */
				continue;
			}
			st = GZ_BAD; /* other bytes after the gzip data */
			break;
		}
		if (rc != Z_OK && rc != Z_BUF_ERROR) {
			st = GZ_BAD;
			break;
		}
		if (!z.avail_in && z.avail_out) { /* all input taken, no end */
			st = GZ_CUT;
			break;
		}
	}
	inflateEnd(&z);
	return st;
}

/* The gzip layers tracekit stacks over the archive (each one's output
 * starting with gzip's magic again), inflated: the archive's bytes in
 * *out, and how the layers ended (the worst of them). */
static int gunzip_layers(const uint8_t *data, size_t size, unsigned char **out, size_t *len)
{
	int worst = GZ_OK;
	unsigned char *cur = NULL;
	*out = NULL;
	*len = 0;
	for (int layer = 0; layer < 3; layer++) {
		const unsigned char *p = cur ? cur : data;
		size_t n = cur ? *len : size;
		if (n < 2 || p[0] != 0x1f || p[1] != 0x8b)
			break;
		unsigned char *o;
		size_t k;
		int st = gunzip1(p, n, &o, &k);
		free(cur);
		cur = o;
		*len = k;
		if (st == GZ_BIG) {
			free(cur);
			*len = 0;
			return GZ_BIG;
		}
		if (st == GZ_BAD || (st == GZ_CUT && worst == GZ_OK))
			worst = st;
	}
	*out = cur;
	return worst;
}

/* ---- libarchive's own view of the bytes ---- */

enum { M_OK, M_FAILED, M_CAPPED };                    /* a member's data */
enum { O_EOF, O_FAIL_HEADER, O_FAIL_DATA, O_UNSURE }; /* how the walk ended */

typedef struct omember {
	char *name; /* NULL: the raw stream */
	unsigned char *data;
	size_t len;
	int state;
} omember;

typedef struct oracle {
	omember m[MAX_MEMBERS];
	size_t n;
	size_t retry_at; /* trace members before the first damaged header (ARCHIVE_RETRY); SIZE_MAX none */
	size_t len;      /* bytes walked */
	int end;
	int too_costly; /* libarchive would skip too much: tracekit is not run */
} oracle;

/* A stream without seeking, handed over in tracekit's chunks. */
typedef struct stream {
	const unsigned char *p;
	size_t n, pos;
} stream;

static la_ssize_t stream_read(struct archive *a, void *cd, const void **buf)
{
	stream *s = cd;
	size_t k = s->n - s->pos < CHUNK ? s->n - s->pos : CHUNK;
	*buf = s->p + s->pos;
	s->pos += k;
	return (la_ssize_t)k;
}

static void oracle_walk(oracle *o, const void *data, size_t size, int seekable)
{
	struct archive *a = archive_read_new();
	stream s = {data, size, 0};
	memset(o, 0, sizeof *o);
	o->retry_at = SIZE_MAX;
	o->len = size;
	if (!a) {
		o->end = O_UNSURE;
		o->too_costly = 1;
		return;
	}
	tk__arc_support(a); /* the filters and formats tracekit reads archives with */
	int orc = seekable ? archive_read_open_memory(a, data, size)
	                   : archive_read_open(a, &s, NULL, stream_read, NULL);
	if (orc != ARCHIVE_OK) {
		o->end = O_FAIL_HEADER;
		archive_read_free(a);
		return;
	}
	size_t headers = 0, total = 0;
	uint64_t skipped = 0;
	int retries = 0;
	unsigned char *buf = malloc(64 * 1024);
	for (;;) {
		struct archive_entry *e;
		int rc = archive_read_next_header(a, &e);
		if (rc == ARCHIVE_EOF) {
			o->end = O_EOF;
			break;
		}
		if (rc == ARCHIVE_RETRY) { /* a damaged header, skipped */
			if (o->retry_at == SIZE_MAX)
				o->retry_at = o->n;
			if (++retries > MAX_RETRIES) {
				o->end = O_UNSURE;
				o->too_costly = 1;
				break;
			}
			continue;
		}
		if (rc < ARCHIVE_WARN) {
			o->end = O_FAIL_HEADER;
			break;
		}
		if (++headers > MAX_HEADERS) {
			o->end = O_UNSURE;
			o->too_costly = 1;
			break;
		}
		int raw = archive_format(a) == ARCHIVE_FORMAT_RAW;
		const char *path = archive_entry_pathname(e);
		if (!path)
			path = "";
		if (!raw && (archive_entry_filetype(e) != AE_IFREG || !tk_is_trace_name(path))) {
			/* tracekit skips it: libarchive skips its data on the next call */
			if (archive_entry_size_is_set(e) && archive_entry_size(e) > 0)
				skipped += (uint64_t)archive_entry_size(e);
			if (skipped > MAX_SKIP_BYTES) {
				o->end = O_UNSURE;
				o->too_costly = 1;
				break;
			}
			continue;
		}
		if (o->n == MAX_MEMBERS) {
			o->end = O_UNSURE;
			break;
		}
		omember *m = &o->m[o->n++];
		m->name = raw ? NULL : strdup(path);
		size_t cap = 0;
		for (;;) {
			la_ssize_t k = buf ? archive_read_data(a, buf, 64 * 1024) : ARCHIVE_FATAL;
			if (k < 0) {
				m->state = M_FAILED;
				break;
			}
			if (k == 0)
				break;
			if (m->len + (size_t)k > MAX_MEMBER_BYTES || total + (size_t)k > MAX_TOTAL_BYTES) {
				m->state = M_CAPPED;
				break;
			}
			if (m->len + (size_t)k > cap) {
				cap = (m->len + (size_t)k) * 2;
				unsigned char *p = realloc(m->data, cap);
				if (!p) {
					m->state = M_CAPPED;
					break;
				}
				m->data = p;
			}
			memcpy(m->data + m->len, buf, (size_t)k);
			m->len += (size_t)k;
			total += (size_t)k;
		}
		if (m->state != M_OK) {
			o->end = m->state == M_FAILED ? O_FAIL_DATA : O_UNSURE;
			break;
		}
	}
	free(buf);
	archive_read_free(a);
}

static void oracle_free(oracle *o)
{
	for (size_t i = 0; i < o->n; i++) {
		free(o->m[i].name);
		free(o->m[i].data);
	}
}

/* ---- tracekit's readers, compared ---- */

/* 1 if tracekit takes these bytes for an archive (after any gzip), 0 if
 * not, <0 if detection itself fails. */
static int is_archive(const void *p, size_t n)
{
	tk__src s;
	int archive = 0;
	tk__src_init_mem(&s, p, n);
	int rc = tk__src_detect(&s, &archive);
	tk__src_close(&s);
	return rc < 0 ? rc : archive;
}

/* An error on gzip that zlib finds damaged or followed by other bytes:
 * tracekit's gzip decoder refuses it wherever it meets it, and the message
 * may be libarchive's about the stream that stopped ("Truncated input"). */
static int gzip_refusal(int gz, const char *msg)
{
	return (gz == GZ_BAD && nonempty(msg)) ||
	       (gz == GZ_CUT && msg && strstr(msg, "the gzip stream is cut off"));
}

enum { CMP_SAME, CMP_CAPPED, CMP_GZIP };

/* A trace read two ways, as far as the caps allow: `t` (through
 * tk_inputs; open_rc what opening it returned) and the reader
 * tk_reader_open_memory() makes of `buf` under the same name. CMP_SAME,
 * CMP_CAPPED if the comparison stopped at the event cap, or CMP_GZIP if
 * tracekit's gzip decoder below the archive refused it (the archive ends
 * there). */
static int compare_readers(tk_reader *t, int open_rc, const void *buf, size_t len, int gz,
                           const tk_reader_opts *ro)
{
	tk_reader *m = NULL;
	int mrc = tk_reader_open_memory(&m, buf, len, tk_reader_name(t), ro);
	int res = CMP_SAME;
	if (open_rc < 0 && (open_rc != mrc || strcmp(tk_reader_error(t), tk_reader_error(m)) != 0) &&
	    gzip_refusal(gz, tk_reader_error(t))) {
		res = CMP_GZIP;
		goto out;
	}
	check(open_rc == mrc, "opening differs from the reader over the extracted bytes");
	if (open_rc != TK_OK) {
		check(nonempty(tk_reader_error(t)), "a member fails to open without a message");
		check(strcmp(tk_reader_error(t), tk_reader_error(m)) == 0,
		      "a member fails to open with another message than its extracted bytes");
	} else {
		check(strcmp(tk_reader_format(t), tk_reader_format(m)) == 0, "format names differ");
		for (size_t i = 0;; i++) {
			if (i == MAX_EVENTS) {
				res = CMP_CAPPED;
				goto out;
			}
			const tk_event *et, *em;
			int rt = tk_reader_next(t, &et), rm = tk_reader_next(m, &em);
			if (rt < 0 && (rt != rm || strcmp(tk_reader_error(t), tk_reader_error(m)) != 0) &&
			    gzip_refusal(gz, tk_reader_error(t))) {
				res = CMP_GZIP;
				goto out;
			}
			check(rt == rm, "event sequences end differently");
			if (rt != TK_OK) {
				check(strcmp(tk_reader_error(t), tk_reader_error(m)) == 0, "end messages differ");
				if (rt < 0)
					check(nonempty(tk_reader_error(t)), "a read fails without a message");
				break;
			}
			check(tk_event_equal(et, em), "events differ");
			seen.events++;
		}
	}
	size_t n = tk_reader_meta_count(t);
	check(n == tk_reader_meta_count(m), "metadata counts differ");
	for (size_t i = 0; i < n; i++) {
		tk_sv kt, km, jt, jm;
		int at, am;
		check(tk_reader_meta_get(t, i, &kt, &jt, &at) == 0 && tk_reader_meta_get(m, i, &km, &jm, &am) == 0,
		      "metadata unreadable");
		check(kt.len == km.len && memcmp(kt.ptr, km.ptr, kt.len) == 0 && jt.len == jm.len &&
		          memcmp(jt.ptr, jm.ptr, jt.len) == 0 && at == am,
		      "metadata differ");
	}
	for (size_t i = 0;; i++) {
		const char *wt = tk_reader_warning(t, i), *wm = tk_reader_warning(m, i);
		check((wt == NULL) == (wm == NULL), "warning counts differ");
		if (!wt)
			break;
		check(strcmp(wt, wm) == 0, "warnings differ");
	}
	const tk_reader_stats *st = tk_reader_get_stats(t), *sm = tk_reader_get_stats(m);
	check(st->events == sm->events && st->truncated == sm->truncated && st->dropped_bytes == sm->dropped_bytes &&
	          st->repaired_strings == sm->repaired_strings && st->bytes_decoded == sm->bytes_decoded,
	      "reader stats differ");
	check(tk_reader_is_bare_array(t) == tk_reader_is_bare_array(m), "bare-array flags differ");
	seen.members++;
out:
	tk_reader_free(m);
	return res;
}

/* Reads `t` to its end (or the cap): 1 if it ended in an error, 0 if it
 * ended cleanly, -1 at the cap. */
static int reads_to_error(tk_reader *t, int open_rc)
{
	if (open_rc != TK_OK) {
		check(nonempty(tk_reader_error(t)), "a member fails to open without a message");
		return 1;
	}
	for (size_t i = 0; i < MAX_EVENTS; i++) {
		const tk_event *ev;
		int rc = tk_reader_next(t, &ev);
		if (rc < 0) {
			check(nonempty(tk_reader_error(t)), "a read fails without a message");
			return 1;
		}
		if (rc == TK_EOF)
			return 0;
	}
	return -1;
}

static const char *expect_name(char *buf, size_t cap, const char *path, const omember *m)
{
	snprintf(buf, cap, "%s%s%s", path, m->name ? "//" : "", m->name ? m->name : "");
	return buf;
}

/* How tk_inputs ended against how libarchive did: i traces yielded, rc
 * the last answer (TK_EOF or an error of the archive). */
static void check_end(const oracle *o, size_t i, int rc, const char *msg, int gz, int cut_fails,
                      const char *what)
{
	char m[160];
	if (rc == TK_EOF) {
		snprintf(m, sizeof m, "%s passes over a damaged member header", what);
		check(o->retry_at == SIZE_MAX || !strcmp(what, "the listing"), m);
		snprintf(m, sizeof m, "%s ends cleanly where libarchive fails", what);
		check(o->end != O_FAIL_HEADER && o->end != O_FAIL_DATA, m);
		snprintf(m, sizeof m, "%s yields fewer members than libarchive", what);
		check(o->end == O_UNSURE || i == o->n, m);
		snprintf(m, sizeof m, "%s ends cleanly on a gzip stream that is cut off", what);
		check(!cut_fails, m);
	} else if (!gzip_refusal(gz, msg) && !(o->len % 512 && msg && strstr(msg, "the tar archive is cut off"))) {
		/* tracekit failed: so must libarchive, at the latest at this member */
		snprintf(m, sizeof m, "%s fails where libarchive reads to the end", what);
		check(o->end != O_EOF || i < o->n, m);
		snprintf(m, sizeof m, "%s fails at a member libarchive extracts", what);
		check(i >= o->n || o->m[i].state != M_OK || o->end == O_UNSURE, m);
	}
}

/* The archive through tk_inputs, reading each trace, against libarchive. */
static void check_archive(const char *path, const oracle *o, int gz, int cut_fails, int keep_reader,
                          const tk_reader_opts *ro)
{
	char want[4096];
	tk_inputs *in = NULL;
	int rc = tk_inputs_open(&in, path, ro);
	size_t i = 0;
	int stopped = 0;
	tk_reader *prev = NULL;
	if (rc != TK_OK) {
		check(rc < 0 && nonempty(tk_inputs_error(in)), "tk_inputs_open fails without a message");
	} else {
		for (;; i++) {
			tk_reader *r = NULL;
			const char *name = NULL;
			rc = tk_inputs_next(in, &r, &name);
			if (prev) { /* read after the archive moved on: an error or its end, never a crash */
				const tk_event *ev;
				tk_reader_next(prev, &ev);
				tk_reader_free(prev);
				prev = NULL;
			}
			if (rc == TK_EOF || (rc < 0 && !r)) {
				if (rc < 0)
					check(nonempty(tk_inputs_error(in)), "tk_inputs_next fails without a message");
				if (rc < 0 && o->retry_at == i) { /* the damaged header libarchive stepped over */
					stopped = 1;
					seen.damaged_headers++;
				}
				break;
			}
			cur_name = name ? name : "";
			check(r != NULL, "tk_inputs_next gives no reader");
			if (i >= o->n) {
				check(o->end == O_UNSURE, "tracekit yields a member libarchive does not reach");
				tk_reader_free(r);
				stopped = 1;
				break;
			}
			const omember *m = &o->m[i];
			check(name && strcmp(name, expect_name(want, sizeof want, path, m)) == 0,
			      "member names differ");
			int cmp = CMP_SAME;
			if (m->state == M_CAPPED) {
				cmp = CMP_CAPPED;
			} else if (m->state == M_FAILED) {
				/* its error is the archive's: what libarchive does after a
				 * damaged member's data is its own affair */
				check(reads_to_error(r, rc) != 0, "a member libarchive cannot extract reads cleanly");
				cmp = CMP_CAPPED;
			} else if (is_archive(m->data, m->len) == 1) {
				if (rc != TK_ERR_UNSUPPORTED && gzip_refusal(gz, tk_reader_error(r)))
					cmp = CMP_GZIP;
				else
					check(rc == TK_ERR_UNSUPPORTED && nonempty(tk_reader_error(r)),
					      "an archive inside an archive is not refused");
				seen.refused++;
			} else {
				cmp = compare_readers(r, rc, m->data, m->len, gz, ro);
			}
			if (cmp == CMP_CAPPED) { /* nothing to compare past this member */
				tk_reader_free(r);
				stopped = 1;
				break;
			}
			if (cmp == CMP_GZIP) { /* the archive fails from here on */
				tk_reader_free(r);
				rc = tk_inputs_next(in, &r, &name);
				check(rc < 0 && !r && nonempty(tk_inputs_error(in)),
				      "the archive goes on after its gzip data failed");
				seen.gzip_refused++;
				break;
			}
			if (keep_reader)
				prev = r;
			else
				tk_reader_free(r);
		}
	}
	cur_name = "";
	if (!stopped)
		check_end(o, i, rc, in ? tk_inputs_error(in) : "", gz, cut_fails, "tracekit");
	tk_reader_free(prev);
	tk_inputs_free(in);
}

/* The same archive listed (no readers): the same names; an unreadable
 * header is an error. */
static void check_listing(const char *path, const oracle *o, int gz, int cut_fails, const tk_reader_opts *ro)
{
	char want[4096];
	tk_inputs *in = NULL;
	int rc = tk_inputs_open(&in, path, ro);
	size_t i = 0;
	if (rc != TK_OK) {
		check(rc < 0 && nonempty(tk_inputs_error(in)), "tk_inputs_open fails without a message");
	} else {
		const char *name;
		int last_err = 0;
		for (; (rc = tk_inputs_next(in, NULL, &name)) == TK_OK || (rc < 0 && o->retry_at <= i); i++) {
			if (rc < 0) { /* the damaged header libarchive stepped over: the listing goes on */
				check(nonempty(tk_inputs_error(in)), "a listing fails without a message");
				last_err = rc;
				i--;
				continue;
			}
			cur_name = name;
			if (i < o->n) {
				check(strcmp(name, expect_name(want, sizeof want, path, &o->m[i])) == 0,
				      "listed names differ");
			} else { /* a listing skips data libarchive could not extract */
				check(o->end == O_FAIL_DATA || o->end == O_UNSURE,
				      "the listing names a member libarchive does not reach");
				if (i > 4 * MAX_MEMBERS)
					break;
			}
		}
		cur_name = "";
		if (rc < 0)
			check(nonempty(tk_inputs_error(in)), "a listing fails without a message");
		/* an error after the damaged header (the listing went on, then
		 * ended) is the listing's failure where libarchive fails too */
		if (rc == TK_EOF && last_err && o->end != O_EOF)
			rc = last_err;
	}
	/* a listing does not read the members' data, so only the headers count */
	if (rc == TK_EOF || rc < 0) {
		oracle h = *o;
		if (h.end == O_FAIL_DATA)
			h.end = O_UNSURE;
		for (size_t k = 0; k < h.n; k++)
			if (h.m[k].state != M_OK)
				h.end = O_UNSURE;
		check_end(&h, i, rc, in ? tk_inputs_error(in) : "", gz, cut_fails, "the listing");
	}
	tk_inputs_free(in);
}

/* Not an archive: one trace, the file itself, read as from memory. */
static void check_plain(const char *path, const uint8_t *data, size_t size, const tk_reader_opts *ro)
{
	tk_inputs *in = NULL;
	tk_reader *r = NULL;
	const char *name = NULL;
	cur_name = path;
	check(tk_inputs_open(&in, path, ro) == TK_OK, "a plain file does not open");
	int rc = tk_inputs_next(in, &r, &name);
	check(r != NULL && name && strcmp(name, path) == 0, "a plain file is not its one trace");
	compare_readers(r, rc, data, size, GZ_NONE, ro);
	seen.plain++;
	tk_reader_free(r);
	check(tk_inputs_next(in, &r, &name) == TK_EOF && !r, "a plain file holds more than one trace");
	tk_inputs_free(in);
	cur_name = "";
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int fd = -1, allow_cut = -1;
	static char path[64];
	if (fd < 0) {
		fd = memfd_create("fuzz_archive", MFD_CLOEXEC);
		if (fd < 0)
			abort();
		snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
		/* set while a known failure of this check is being fixed, to fuzz on past it */
		const char *e = getenv("FUZZ_ARCHIVE_ALLOW_GZIP_CUT");
		allow_cut = e && *e == '1';
	}
	if (ftruncate(fd, 0) || (size && pwrite(fd, data, size, 0) != (ssize_t)size))
		abort();
	unsigned mix = (unsigned)size + (size ? data[size / 2] : 0u);
	tk_reader_opts ro = {.strict = (int)(mix & 1), .max_value_bytes = 1 << 20, .max_depth = 64};
	int keep_reader = (mix >> 1) & 1;
	/* a third of the inputs on parse threads in small blocks: the members'
	 * readers read ahead while the archive moves on (docs/threads.md) */
	ro.threads = mix % 3 == 0 ? 3 : 0;
	tk__par_block_bytes = ro.threads ? 32 + size % 97 : 0;

	int arc = is_archive(data, size);
	if (arc < 0) { /* the decoding below the archive fails: so must tk_inputs */
		tk_inputs *in = NULL;
		check(tk_inputs_open(&in, path, &ro) < 0 && nonempty(tk_inputs_error(in)),
		      "an undecodable input opens without an error");
		tk_inputs_free(in);
		return 0;
	}
	if (!arc) {
		check_plain(path, data, size, &ro);
		return 0;
	}
	oracle o;
	int gz = GZ_NONE, cut_fails = 0;
	if (size >= 2 && data[0] == 0x1f && data[1] == 0x8b) {
		unsigned char *inner;
		size_t n;
		gz = gunzip_layers(data, size, &inner, &n);
		if (gz == GZ_BIG)
			return 0;
		if (gz == GZ_CUT && !allow_cut) { /* does libarchive's own gzip filter fail? */
			oracle_walk(&o, data, size, 1);
			cut_fails = o.end == O_FAIL_HEADER || o.end == O_FAIL_DATA;
			oracle_free(&o);
		}
		oracle_walk(&o, inner, n, 0);
		free(inner);
	} else {
		oracle_walk(&o, data, size, 1);
	}
	if (!o.too_costly) {
		check_archive(path, &o, gz, cut_fails, keep_reader, &ro);
		check_listing(path, &o, gz, cut_fails, &ro);
	}
	oracle_free(&o);
	return 0;
}

#ifndef TK_LIBFUZZER
#include "fuzz_files.h"

static unsigned long done_members, done_events;

static void one_done(const char *path)
{
	printf("%s: %lu traces, %lu events compared\n", path, seen.members - done_members,
	       seen.events - done_events);
	done_members = seen.members;
	done_events = seen.events;
}

int main(int argc, char **argv)
{
	int rc = tk_fuzz_files(argc, argv, one_done);
	printf("fuzz_archive: %d inputs ran: %lu traces (%lu plain files), %lu events compared, "
	       "%lu archives inside archives refused, %lu refused by tracekit's gzip, "
	       "%lu damaged headers reported\n",
	       argc - 1, seen.members, seen.plain, seen.events, seen.refused, seen.gzip_refused,
	       seen.damaged_headers);
	return rc;
}
#endif
