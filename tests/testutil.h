/* testutil.h: helpers shared by the cmocka tests: test data, temporary files, gzip, event lists. */
#ifndef TK_TESTUTIL_H
#define TK_TESTUTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "tracekit/tracekit.h"

/* A testdata file without its first line (the comment saying what it holds). */
char *tu_load(const char *name, size_t *len);
char *tu_read_file(const char *path, size_t *len);
void tu_write_file(const char *path, const void *p, size_t n);
/* A fresh directory for this process's files, removed by tu_cleanup(). */
const char *tu_tmpdir(void);
/* tu_tmpdir()/name in a static buffer that the next call overwrites. */
const char *tu_path(const char *name);
void tu_cleanup(void);
/* Number of entries in dir whose name starts with prefix. */
int tu_count_prefix(const char *dir, const char *prefix);

/* One gzip member holding p[0..n), made with zlib; free() the result. */
unsigned char *tu_gzip(const void *p, size_t n, size_t *out_len);
/* Every member of a gzip stream inflated, as far as the data goes. */
char *tu_gunzip(const void *p, size_t n, size_t *out_len);

/* Owned copies of every event a reader returns. */
typedef struct tu_events {
	tk_event **ev;
	size_t n, cap;
	int rc; /* what the last tk_reader_next returned */
} tu_events;
/* Reads until TK_EOF or an error; returns that code. */
int tu_read_all(tk_reader *r, tu_events *out);
void tu_events_free(tu_events *e);
/* Opens a memory reader that must succeed; fails the test otherwise. */
tk_reader *tu_open_mem(const void *p, size_t n, const char *name, const tk_reader_opts *o);
/* Reads a whole JSON text: the events and the final code. */
int tu_read_text(const char *text, tu_events *out);

/* Reads p[0..n) through a socket that delivers one byte per read, so every
 * byte boundary is a buffer edge for the reader. *rp: the reader (free it). */
int tu_read_trickled(const void *p, size_t n, const char *name, const tk_reader_opts *o,
                     tu_events *ev, tk_reader **rp);

int tu_utf8_valid(const void *p, size_t n);
/* 1 if s holds "needle" as a substring (and prints both when it does not). */
int tu_contains(const char *s, const char *needle);
/* 1-based line and byte column of offset `at` in text. */
void tu_linecol(const char *text, size_t at, unsigned long *line, unsigned long *col);
/* Two readers of the same input at their end (rc: the last
 * tk_reader_next()): the same counts, metadata, error and warnings; the
 * input bytes read too where both ended at TK_EOF (before an error, a
 * reader on threads may have read further). Fails the test otherwise. */
void tu_same_end(const tk_reader *a, const tk_reader *b, int rc);
/* Reads a and b (the same input) in step to their end: the same status
 * at every call, every event equal (tk_event_equal), then tu_same_end().
 * `what` names the pair in a failure. Returns the last status; *events
 * (may be NULL): the events both handed out. */
int tu_lockstep(tk_reader *a, tk_reader *b, const char *what, uint64_t *events);
/* The trace at `in` read on one thread and written to `out` with *wo, its
 * metadata too (tk_copy_meta). 0, or the failing status with the reader's
 * and writer's messages on stderr; *bytes_decoded (may be NULL): the bytes
 * the reader decoded. */
int tu_convert(const char *in, const char *out, const tk_writer_opts *wo, uint64_t *bytes_decoded);
/* Bytes written forwards, for crafted inputs: tu_put appends p[0..n),
 * tu_put_varint a LEB128 varint (as protobuf and .tkb write them). Fails
 * the test when out of memory; free(b->p) when done. */
typedef struct tu_bytes {
	unsigned char *p;
	size_t n, cap;
} tu_bytes;
void tu_put(tu_bytes *b, const void *p, size_t n);
void tu_put_varint(tu_bytes *b, uint64_t v);
/* A tk_sv over a C string. */
tk_sv tu_sv(const char *s);
/* 1 if the string view holds exactly s. */
int tu_sv_is(tk_sv v, const char *s);

#endif
