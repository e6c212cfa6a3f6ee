/* archive.h: traces inside archives (tar, zip, 7z, ... through libarchive), read as they stream by. */
#ifndef TK_FORMATS_ARCHIVE_H
#define TK_FORMATS_ARCHIVE_H

#include "internal.h"

/* An open archive: a stack of input filters below it (the file, gzip) and
 * the member now being read. Shared by counted references: the readers of
 * its members hold one each. */
typedef struct tk__arc tk__arc;

struct archive;
/* The filters and formats an archive is read with (libarchive's). */
void tk__arc_support(struct archive *a);

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
/* A source whose base is the member now open (it holds a reference): it
 * reads until tk__arc_next moves on, and fails after. 0 or TK_ERR_NOMEM. */
int tk__src_init_member(tk__src *s, tk__arc *a);
const char *tk__arc_error(const tk__arc *a);
/* 1 once an error has ended the archive (nothing more can be read). */
int tk__arc_failed(const tk__arc *a);
const char *tk__arc_name(const tk__arc *a);

/* "logs.tar.gz//rank3/trace.json": the part before the first "//" whose
 * prefix is an existing file ("-" for standard input), and the member
 * after it. 1 with *file (malloc'd) and *member (inside path), 0 if path
 * names no member (a path that exists as it is never does). */
int tk__member_path(const char *path, char **file, const char **member);

#endif
