/* tmpreg.h: the temporary files and directories the library holds, removed by
 * tk_cleanup_temporaries() (async-signal-safe) when a tool is interrupted. */
#ifndef TK_TMPREG_H
#define TK_TMPREG_H

/* Remember path (a file, or with dir a directory of files) until
 * tk__tmp_release; returns a handle > 0, or 0 when it could not be
 * remembered (it is then not removed on a signal; nothing else changes). */
int tk__tmp_hold(const char *path, int dir);
/* Forget it (the file was renamed into place or removed); 0 is a no-op. */
void tk__tmp_release(int hold);
/* Where temporaries go: dir when given, else $TMPDIR when set, else /tmp. */
const char *tk__tmp_base(const char *dir);

#endif
