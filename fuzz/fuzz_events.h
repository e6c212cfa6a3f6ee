/* fuzz_events.h: what the harnesses of whole operations share (stats, merge, split, sqlite, collector):
 * events kept and compared as multisets, memory files, a scratch directory on tmpfs, and the check that
 * reports a broken invariant. */
#ifndef TK_FUZZ_EVENTS_H
#define TK_FUZZ_EVENTS_H

/* The including file defines _GNU_SOURCE (memfd_create) before any include. */
#include <dirent.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tracekit/tracekit.h"
#include "core/buf.h"
#include "core/jscan.h"
#include "core/json_text.h"

/* A broken invariant: said on stderr, then abort() (how libFuzzer and the
 * seed tests learn of it). Nothing else in a harness prints. */
static inline void fz_fail(const char *who, const char *fmt, ...) __attribute__((format(printf, 2, 3), noreturn));
static inline void fz_fail(const char *who, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "%s: invariant broken: ", who);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	abort();
}

#define FZ_CHECK(who, cond, ...)                                                                           \
	do {                                                                                               \
		if (!(cond))                                                                               \
			fz_fail(who, __VA_ARGS__);                                                         \
	} while (0)

/* ---- event lists ---- */

typedef struct fz_events {
	tk_event **v;
	size_t n, cap;
} fz_events;

/* Keeps a copy of ev: 0, or -1 out of memory (the caller gives up on the input). */
static inline int fz_events_push(fz_events *l, const tk_event *ev)
{
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 64;
		tk_event **v = realloc(l->v, cap * sizeof *v);
		if (!v)
			return -1;
		l->v = v;
		l->cap = cap;
	}
	if (!(l->v[l->n] = tk_event_dup(ev)))
		return -1;
	l->n++;
	return 0;
}

static inline void fz_events_free(fz_events *l)
{
	for (size_t i = 0; i < l->n; i++)
		tk_event_free(l->v[i]);
	free(l->v);
	memset(l, 0, sizeof *l);
}

/* Strings as tk_event_equal compares them: absent equals empty. */
static inline int fz_sv_cmp(tk_sv a, tk_sv b)
{
	size_t la = a.ptr ? a.len : 0, lb = b.ptr ? b.len : 0;
	int c = memcmp(a.ptr ? a.ptr : "", b.ptr ? b.ptr : "", la < lb ? la : lb);
	return c ? c : (la > lb) - (la < lb);
}

static inline int fz_i64_cmp(int64_t a, int64_t b)
{
	return (a > b) - (a < b);
}

static inline int fz_id_cmp(const tk_id *a, const tk_id *b)
{
	if (a->kind != b->kind)
		return a->kind < b->kind ? -1 : 1;
	if (a->kind == TK_ID_INT)
		return fz_i64_cmp(a->num, b->num);
	return a->kind == TK_ID_STR ? fz_sv_cmp(a->str, b->str) : 0;
}

/* A total order in which two events are equivalent exactly when
 * tk_event_equal() says they are equal (fields that `has` says are
 * absent do not count; neither does TK_HAS_VALID_JSON). */
static inline int fz_event_cmp(const tk_event *a, const tk_event *b)
{
	unsigned mask = ~(unsigned)TK_HAS_VALID_JSON, ha = a->has & mask, hb = b->has & mask;
	int c;
	if (ha != hb)
		return ha < hb ? -1 : 1;
	if ((ha & TK_HAS_PH) && a->ph != b->ph)
		return (unsigned char)a->ph < (unsigned char)b->ph ? -1 : 1;
	if ((ha & TK_HAS_TS) && (c = fz_i64_cmp(a->ts, b->ts)))
		return c;
	if ((ha & TK_HAS_DUR) && (c = fz_i64_cmp(a->dur, b->dur)))
		return c;
	if ((ha & TK_HAS_NAME) && (c = fz_sv_cmp(a->name, b->name)))
		return c;
	if ((ha & TK_HAS_CAT) && (c = fz_sv_cmp(a->cat, b->cat)))
		return c;
	if ((c = fz_id_cmp(&a->pid, &b->pid)) || (c = fz_id_cmp(&a->tid, &b->tid)) ||
	    (c = fz_id_cmp(&a->id, &b->id)) || (c = fz_sv_cmp(a->args, b->args)))
		return c;
	return fz_sv_cmp(a->extra, b->extra);
}

static inline int fz_event_qcmp(const void *x, const void *y)
{
	return fz_event_cmp(*(tk_event *const *)x, *(tk_event *const *)y);
}

/* Sorts both lists; 1 when they hold the same events as multisets. */
static inline int fz_events_same_multiset(fz_events *a, fz_events *b)
{
	if (a->n != b->n)
		return 0;
	if (a->n) {
		qsort(a->v, a->n, sizeof *a->v, fz_event_qcmp);
		qsort(b->v, b->n, sizeof *b->v, fz_event_qcmp);
	}
	for (size_t i = 0; i < a->n; i++)
		if (!tk_event_equal(a->v[i], b->v[i]))
			return 0;
	return 1;
}

/* 1 when ev's extra members name one of its own fields ("ts", "args",
 * ...): a member the input gave twice (the JSON reader keeps the second
 * as an extra member), which any JSON written from the event gives twice
 * again, so that reading it back warns again. */
static inline int fz_event_dup_members(const tk_event *ev)
{
	static const char *const fields[] = {"ph", "name", "cat", "ts", "dur", "pid", "tid", "id", "args"};
	if (!ev->extra.ptr || !ev->extra.len)
		return 0;
	tk__buf obj = {0}, canon = {0};
	int dup = 0;
	if (tk__buf_putc(&obj, '{') || tk__buf_append(&obj, ev->extra.ptr, ev->extra.len) || tk__buf_putc(&obj, '}') ||
	    tk__json_canon_text(&canon, obj.p, obj.len, 0, NULL)) {
		dup = 1; /* not checked: taken as one */
	} else {
		tk__js_iter it;
		tk_sv k, v;
		if (tk__js_obj(&it, (tk_sv){canon.p, canon.len}) == 0)
			while (!dup && tk__js_member(&it, &k, &v) == 1)
				for (size_t i = 0; i < sizeof fields / sizeof *fields; i++)
					dup |= k.len == strlen(fields[i]) && memcmp(k.ptr, fields[i], k.len) == 0;
	}
	tk__buf_free(&obj);
	tk__buf_free(&canon);
	return dup;
}

/* ---- files ---- */

/* A memory file holding data, at offset 0; -1 if none could be made. */
static inline int fz_memfd(const char *name, const void *data, size_t size)
{
	int fd = memfd_create(name, 0);
	if (fd < 0)
		return -1;
	const char *p = data;
	while (size) {
		ssize_t k = write(fd, p, size);
		if (k <= 0) {
			close(fd);
			return -1;
		}
		p += k;
		size -= (size_t)k;
	}
	lseek(fd, 0, SEEK_SET);
	return fd;
}

/* This process's scratch directory, made once: on /dev/shm where there is
 * one (the writers fsync what they publish, which costs nothing on tmpfs),
 * else in $TMPDIR or /tmp. NULL if none could be made. Removed at exit
 * when empty; fz_clear_dir() empties a directory of what an input left. */
static char fz_scratch_path[256];

static inline void fz_scratch_remove(void)
{
	if (fz_scratch_path[0])
		rmdir(fz_scratch_path);
}

static inline const char *fz_scratch(void)
{
	if (fz_scratch_path[0])
		return fz_scratch_path;
	const char *bases[3] = {"/dev/shm", getenv("TMPDIR"), "/tmp"};
	for (int i = 0; i < 3; i++) {
		struct stat st;
		if (!bases[i] || !*bases[i] || stat(bases[i], &st) != 0 || !S_ISDIR(st.st_mode))
			continue;
		snprintf(fz_scratch_path, sizeof fz_scratch_path, "%s/tkfuzz-XXXXXX", bases[i]);
		if (mkdtemp(fz_scratch_path)) {
			atexit(fz_scratch_remove);
			return fz_scratch_path;
		}
	}
	fz_scratch_path[0] = 0;
	return NULL;
}

/* Removes everything in dir (and, with rm_self, dir itself); the number
 * of entries that were there. */
static inline size_t fz_clear_dir(const char *dir, int rm_self)
{
	size_t n = 0;
	DIR *d = opendir(dir);
	if (!d)
		return 0;
	for (struct dirent *e; (e = readdir(d));) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		char p[1024];
		struct stat st;
		n++;
		if (snprintf(p, sizeof p, "%s/%s", dir, e->d_name) >= (int)sizeof p)
			continue;
		if (lstat(p, &st) == 0 && S_ISDIR(st.st_mode))
			fz_clear_dir(p, 1);
		else
			unlink(p);
	}
	closedir(d);
	if (rm_self)
		rmdir(dir);
	return n;
}

/* ---- options ---- */

/* The options a harness tries on an input come from a hash of all of its
 * bytes (FNV-1a), a byte at a time: every input, whatever its format, gets
 * some; the same input always the same ones (a reproducer stays one); a
 * trace's seed is given other options by trailing whitespace
 * (make_seeds.py picks it). */
typedef struct fz_opts {
	uint64_t h;
} fz_opts;

static inline fz_opts fz_opts_of(const uint8_t *p, size_t n)
{
	fz_opts o = {0xcbf29ce484222325ull};
	for (size_t i = 0; i < n; i++)
		o.h = (o.h ^ p[i]) * 0x100000001b3ull;
	return o;
}

/* The next option byte (the hash's bytes from the lowest, then again). */
static inline unsigned fz_byte(fz_opts *o)
{
	unsigned b = (unsigned)(o->h & 0xff);
	o->h = o->h >> 8 | o->h << 56;
	return b;
}

#endif
