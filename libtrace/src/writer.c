/* writer.c: the generic writer: output selection, buffering, metadata, error state. */
#include <stdlib.h>

#include "internal.h"

#define TK__FLUSH_AT (1024 * 1024)

static int ends_with(const char *s, const char *suf)
{
	size_t n = strlen(s), m = strlen(suf);
	return n >= m && strcmp(s + n - m, suf) == 0;
}

int tk__writer_fail(tk_writer *w, int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	tk__fmt_msg(w->err, sizeof w->err, fmt, ap);
	va_end(ap);
	w->failed = code;
	return code;
}

static int writer_start(tk_writer **out, const char *path, const tk_writer_opts *opts, int fd)
{
	tk_writer_opts o = {TK_FORMAT_AUTO, -1, 0};
	if (opts)
		o = *opts;
	tk_writer *w = calloc(1, sizeof *w);
	*out = w;
	if (!w)
		return TK_ERR_NOMEM;
	w->sink.fd = -1;
	const char *base = path ? path : "";
	int gz = o.gzip < 0 ? ends_with(base, ".gz") : o.gzip;
	int fmt = o.format;
	if (fmt == TK_FORMAT_AUTO)
		fmt = ends_with(base, ".tkb") ? TK_FORMAT_TKB : TK_FORMAT_JSON;
	if (fmt != TK_FORMAT_JSON && fmt != TK_FORMAT_TKB)
		return tk__writer_fail(w, TK_ERR_UNSUPPORTED, "%s: output format not supported", base);
	w->fmt = fmt == TK_FORMAT_TKB ? &tk__wfmt_tkb : &tk__wfmt_json;
	w->opts = (tk_writer_opts){fmt, gz, o.gzip_level};
	if (fmt == TK_FORMAT_TKB)
		gz = 0; /* .tkb compresses chunk by chunk, never as a whole */
	int rc = fd >= 0 ? tk__sink_open_fd(&w->sink, fd, path, gz, o.gzip_level)
	                 : tk__sink_open_path(&w->sink, path, gz, o.gzip_level);
	if (rc)
		return tk__writer_fail(w, rc, "%s", w->sink.err[0] ? w->sink.err : "out of memory");
	rc = w->fmt->open ? w->fmt->open(w) : 0;
	return rc ? tk__writer_fail(w, rc, "%s: cannot start output", base) : 0;
}

int tk_writer_open_path(tk_writer **out, const char *path, const tk_writer_opts *opts)
{
	if (!out || !path)
		return TK_ERR_ARG;
	return writer_start(out, path, opts, -1);
}

int tk_writer_open_fd(tk_writer **out, int fd, const char *name, const tk_writer_opts *opts)
{
	if (!out || fd < 0)
		return TK_ERR_ARG;
	return writer_start(out, name ? name : "(output)", opts, fd);
}

int tk__writer_flush(tk_writer *w)
{
	if (!w->out.len)
		return 0;
	int rc = tk__sink_write(&w->sink, w->out.p, w->out.len);
	w->out.len = 0;
	if (rc)
		return tk__writer_fail(w, rc, "%s", w->sink.err);
	return 0;
}

int tk_writer_add_meta(tk_writer *w, tk_sv key, tk_sv json)
{
	if (!w || !key.ptr || !json.ptr)
		return TK_ERR_ARG;
	if (w->failed)
		return w->failed;
	return w->fmt->add_meta(w, key, json);
}

int tk_writer_write(tk_writer *w, const tk_event *ev)
{
	if (!w || !ev)
		return TK_ERR_ARG;
	if (w->failed)
		return w->failed;
	int rc = w->fmt->write(w, ev);
	if (rc)
		return w->failed ? w->failed : tk__writer_fail(w, rc, "out of memory");
	w->events++;
	if (w->out.len >= TK__FLUSH_AT)
		return tk__writer_flush(w);
	return 0;
}

int tk_writer_close(tk_writer *w)
{
	if (!w)
		return TK_ERR_ARG;
	if (w->failed)
		return w->failed;
	if (w->closed)
		return 0;
	int rc = w->fmt->close(w);
	if (!rc)
		rc = tk__writer_flush(w);
	if (!rc && tk__sink_finish(&w->sink))
		rc = tk__writer_fail(w, TK_ERR_IO, "%s", w->sink.err);
	if (rc)
		return w->failed ? w->failed : tk__writer_fail(w, rc, "cannot finish output");
	w->closed = 1;
	return 0;
}

const char *tk_writer_error(const tk_writer *w)
{
	return w ? w->err : "no writer";
}

uint64_t tk_writer_repaired_strings(const tk_writer *w)
{
	return w ? w->repaired : 0;
}

void tk_writer_free(tk_writer *w)
{
	if (!w)
		return;
	if (w->fmt && w->fmt->free)
		w->fmt->free(w);
	tk__sink_discard(&w->sink);
	tk__buf_free(&w->out);
	tk__buf_free(&w->tmp);
	for (size_t i = 0; i < w->n_meta; i++)
		free(w->meta[i].json);
	free(w->meta);
	free(w);
}

int tk_copy_meta(tk_writer *w, const tk_reader *r, size_t *copied)
{
	size_t n = tk_reader_meta_count(r);
	for (size_t i = copied ? *copied : 0; i < n; i++) {
		tk_sv k, v;
		tk_reader_meta_get(r, i, &k, &v, NULL);
		int rc = tk_writer_add_meta(w, k, v);
		if (rc)
			return rc;
		if (copied)
			*copied = i + 1;
	}
	return 0;
}
