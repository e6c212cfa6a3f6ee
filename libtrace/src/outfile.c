/* outfile.c: other output files (tables, reports) through the sink's one safe path: a temporary name, sync, rename; standard output, devices and FIFOs in place. */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "internal.h"

struct tk_outfile {
	tk__sink sink;
	FILE *f; /* on a duplicate of the sink's descriptor */
	int closed;
	char err[TK__ERRLEN];
};

int tk_outfile_open(tk_outfile **out, const char *path)
{
	if (!out)
		return TK_ERR_ARG;
	tk_outfile *o = calloc(1, sizeof *o);
	*out = o;
	if (!o)
		return TK_ERR_NOMEM;
	o->sink.fd = -1;
	if (!path) {
		snprintf(o->err, sizeof o->err, "no output path");
		return TK_ERR_ARG;
	}
	if (strcmp(path, "-") == 0) /* what the program printed before comes first */
		fflush(stdout);
	int rc = tk__sink_open_path(&o->sink, path, NULL, 0);
	if (rc) {
		snprintf(o->err, sizeof o->err, "%s", o->sink.err[0] ? o->sink.err : "out of memory");
		return rc;
	}
	int fd = dup(o->sink.fd);
	if (fd < 0 || !(o->f = fdopen(fd, "w"))) {
		snprintf(o->err, sizeof o->err, "%s: %s", o->sink.path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return TK_ERR_IO;
	}
	return 0;
}

FILE *tk_outfile_stream(tk_outfile *o)
{
	return o ? o->f : NULL;
}

int tk_outfile_close(tk_outfile *o)
{
	if (!o)
		return TK_ERR_ARG;
	if (o->closed) /* closing twice is harmless, as for a writer */
		return 0;
	if (!o->f)
		return TK_ERR_ARG;
	int bad = ferror(o->f);
	int flushed = fflush(o->f) == 0;
	int e = errno;
	if (fclose(o->f) && flushed) {
		flushed = 0;
		e = errno;
	}
	o->f = NULL;
	if (bad || !flushed) {
		snprintf(o->err, sizeof o->err, "%s: cannot write: %s", o->sink.path,
		         bad && flushed ? "write error" : strerror(e));
		tk__sink_discard(&o->sink);
		return TK_ERR_IO;
	}
	if (tk__sink_finish(&o->sink)) {
		snprintf(o->err, sizeof o->err, "%s", o->sink.err);
		return TK_ERR_IO;
	}
	o->closed = 1;
	return 0;
}

const char *tk_outfile_error(const tk_outfile *o)
{
	return !o ? "no output file" : o->err;
}

void tk_outfile_free(tk_outfile *o)
{
	if (!o)
		return;
	if (o->f)
		fclose(o->f);
	tk__sink_discard(&o->sink);
	free(o);
}
