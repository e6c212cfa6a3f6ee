/* depvers.c: the versions of the libraries libtracekit uses, for --version.
 * Kept apart from util.c so that a static user that never asks (the
 * collector) does not pull in SQLite and libarchive. */
#include <archive.h>
#include <sqlite3.h>
#include <stdio.h>

#include "internal.h"

const char *tk_dependency_versions(void)
{
	static char v[256];
	if (!v[0])
		snprintf(v, sizeof v, "zlib %s, sqlite %s, %s%s%s", zlibVersion(), sqlite3_libversion(),
		         archive_version_string(),
#ifdef TK_HAVE_ISAL
		         ", isa-l " TK_ISAL_VERSION
#else
		         ""
#endif
		         ,
#ifdef TK_HAVE_LIBDEFLATE
		         ", libdeflate " TK_LIBDEFLATE_VERSION
#else
		         ""
#endif
		);
	return v;
}
