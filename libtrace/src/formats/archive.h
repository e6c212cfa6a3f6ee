/* archive.h: traces inside archives (tar, zip, 7z, ... through libarchive), read as they stream by. */
#ifndef TK_FORMATS_ARCHIVE_H
#define TK_FORMATS_ARCHIVE_H

#include "internal.h"

/* An open archive: a stack of input filters below it (the file, gzip) and
 * the member now being read. Shared by counted references: the readers of
 * its members hold one each. */
typedef struct tk__arc tk__arc;

/* Opens the archive whose stack is `below` (taken: *below is left empty);
 * `name` names it in messages. On failure *out may hold an archive whose
 * tk__arc_error() says why. */
int tk__arc_open(tk__arc **out, tk__src *below, const char *name);
tk__arc *tk__arc_ref(tk__arc *a);
void tk__arc_unref(tk__arc *a);
/* Moves to the next member that is a regular file: 1 with its path and
 * uncompressed size (-1 unknown; valid until the next call), 0 after the
 * last, <0 on error (tk__arc_error). The archive's own stream (a
 * compressed single file, libarchive's "raw" format) has the member path
 * NULL. */
int tk__arc_next(tk__arc *a, const char **member, int64_t *size);
/* The generation of the member now open (each tk__arc_next adds one). */
uint64_t tk__arc_gen(const tk__arc *a);
/* Data of the member of generation gen: >0 bytes, 0 at its end, <0 on
 * error with the message in err (TK__ERRLEN). */
long tk__arc_read(tk__arc *a, uint64_t gen, unsigned char *dst, size_t cap, char *err);
/* Bytes of the archive's own stream read so far. */
uint64_t tk__arc_bytes_in(const tk__arc *a);
const char *tk__arc_error(const tk__arc *a);
const char *tk__arc_name(const tk__arc *a);

/* "logs.tar.gz//rank3/trace.json": the part before the first "//" whose
 * prefix is an existing file ("-" for standard input), and the member
 * after it. 1 with *file (malloc'd) and *member (inside path), 0 if path
 * names no member (a path that exists as it is never does). */
int tk__member_path(const char *path, char **file, const char **member);

#endif
