/* tmpreg.h: the temporary files and directories the library holds, removed by
 * tk_cleanup_temporaries() (async-signal-safe) when a tool is interrupted. */
#ifndef TK_TMPREG_H
#define TK_TMPREG_H

#include <stddef.h>

/* Remember path until tk__tmp_release: a file (dir 0), a directory of
 * files (dir 1: its files go, then it), or a directory made for an output
 * (dir TK__TMP_MADE: removed only when empty, after everything else, so
 * that the directories a run created to hold its output go with it);
 * returns a handle > 0, or 0 when it could not be remembered (it is then
 * not removed on a signal; nothing else changes). */
#define TK__TMP_MADE 2
int tk__tmp_hold(const char *path, int dir);
/* Create tmpl, a path ending in XXXXXX (replaced in place by a name not
 * taken), as a directory (mode 0700; returns 0) or a file (0600, opened
 * read-write; returns its fd), held from before it exists, so that a signal
 * at any point finds it (*hold: its handle, 0 when it could not be held).
 * -1 with errno set when it cannot be created. */
int tk__tmp_create(char *tmpl, int dir, int *hold);
/* Forget it (the file was renamed into place or removed); 0 is a no-op. */
void tk__tmp_release(int hold);
/* Where temporaries go: dir when given, else $TMPDIR when set, else /tmp. */
const char *tk__tmp_base(const char *dir);
/* For messages after tk__tmp_base(dir): " ($TMPDIR)" where the directory
 * came from the environment, else "". */
const char *tk__tmp_from(const char *dir);
/* A directory of one's own, tk__tmp_base(dir)/PREFIX-XXXXXX (mode 0700),
 * held (*hold) until tk__tmp_dir_free: 0 with *out its path, or
 * TK_ERR_NOMEM or TK_ERR_IO with why in msg ("out of memory", "cannot
 * create a temporary directory in DIR[ ($TMPDIR)]: ..."). */
int tk__tmp_dir(const char *dir, const char *prefix, char **out, int *hold, char *msg, size_t msg_len);
/* Removes it (empty by then), forgets it and frees the path; NULL is a no-op. */
void tk__tmp_dir_free(char *path, int hold);

#endif
