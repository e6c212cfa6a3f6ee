/* writer.c: the generic writer: output selection, buffering, metadata, error state. */
#include <stdlib.h>

#include "internal.h"

#define TK__FLUSH_AT (1024 * 1024)

static int ends_with(const char *s, const char *suf)
{
	size_t n = strlen(s), m = strlen(suf);
	return n >= m && strcmp(s + n - m, suf) == 0;
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
		return tk__err_set(&w->err, TK_ERR_UNSUPPORTED, "%s: output format not supported", base);
	w->fmt = fmt == TK_FORMAT_TKB ? &tk__wfmt_tkb : &tk__wfmt_json;
	w->opts = (tk_writer_opts){fmt, gz, o.gzip_level};
	if (fmt == TK_FORMAT_TKB)
		gz = 0; /* .tkb compresses chunk by chunk, never as a whole */
	int rc = fd >= 0 ? tk__sink_open_fd(&w->sink, fd, path, gz, o.gzip_level)
	                 : tk__sink_open_path(&w->sink, path, gz, o.gzip_level);
	if (rc)
		return tk__err_set(&w->err, rc, "%s", w->sink.err[0] ? w->sink.err : "out of memory");
	tk__sink_async(&w->sink);
	rc = w->fmt->open ? w->fmt->open(w) : 0;
	return rc ? tk__err_set(&w->err, rc, "%s: cannot start output", base) : 0;
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
	int rc = tk__sink_give(&w->sink, &w->out);
	if (rc)
		return tk__err_set(&w->err, rc, "%s", w->sink.err);
	return 0;
}

static int add_meta(tk_writer *w, tk_sv key, tk_sv json, int after)
{
	if (!w || !key.ptr || !json.ptr)
		return TK_ERR_ARG;
	if (w->err.code)
		return w->err.code;
	return w->fmt->add_meta(w, key, json, after);
}

int tk_writer_add_meta(tk_writer *w, tk_sv key, tk_sv json)
{
	return add_meta(w, key, json, 0);
}

int tk_writer_add_meta_after(tk_writer *w, tk_sv key, tk_sv json)
{
	return add_meta(w, key, json, 1);
}

int tk_writer_set_max_bytes(tk_writer *w, uint64_t max_bytes)
{
	if (!w)
		return TK_ERR_ARG;
	if (max_bytes && (!w->fmt->state_size || !w->fmt->close_bytes))
		return tk__err_set(&w->err, TK_ERR_UNSUPPORTED,
		                       "a byte budget is supported for JSON output only, not %s",
		                       w->fmt->name);
	w->max_bytes = max_bytes;
	return 0;
}

uint64_t tk_writer_bytes(const tk_writer *w)
{
	return w ? w->sink.bytes_out : 0;
}

/* Upper bound of the deflate output for n more input bytes after a flush
 * point: stored blocks cost 5 bytes per 64 KiB, and deflate never picks a
 * block coding larger than stored; the constant covers the final block,
 * bit padding and the 8-byte gzip trailer. */
static uint64_t zbound(uint64_t n)
{
	return n + (n >> 8) + 64;
}

/* 1 if the finished output is sure to fit the budget. With gzip, the
 * output is known exactly up to the last tk__sink_sync() only. */
static int fits(const tk_writer *w)
{
	uint64_t pending = w->out.len + w->fmt->close_bytes(w);
	if (!w->sink.gz)
		return w->sink.bytes_out + pending <= w->max_bytes;
	pending += w->sink.raw_in - w->sink.raw_synced;
	return w->sink.synced_out + zbound(pending) <= w->max_bytes;
}

/* The events appended after `mark` overrun the budget's bound: make the
 * bound exact for what came before them (gzip: flush the compressor), and
 * ask again. */
static int fits_after_sync(tk_writer *w, size_t *mark)
{
	if (!w->sink.gz || (*mark == 0 && w->sink.raw_in == w->sink.raw_synced))
		return fits(w);
	int rc = tk__sink_write(&w->sink, w->out.p, *mark);
	if (!rc)
		rc = tk__sink_sync(&w->sink);
	if (rc)
		return tk__err_set(&w->err, rc, "%s", w->sink.err);
	memmove(w->out.p, w->out.p + *mark, w->out.len - *mark);
	w->out.len -= *mark;
	*mark = 0;
	return fits(w);
}

/* Writes a group; under a budget a refused group is taken back whole. */
int tk_writer_write_group(tk_writer *w, const tk_event *const *evs, size_t n)
{
	if (!w || (!evs && n))
		return TK_ERR_ARG;
	if (w->err.code)
		return w->err.code;
	int limited = w->max_bytes && w->events > 0;
	unsigned char state[TK__WSTATE_MAX];
	size_t mark = w->out.len;
	uint64_t repaired = w->repaired;
	if (limited)
		memcpy(state, w->fs, w->fmt->state_size);
	for (size_t i = 0; i < n; i++) {
		if (!evs[i])
			return TK_ERR_ARG;
		int rc = w->fmt->write(w, evs[i]);
		if (rc)
			return w->err.code ? w->err.code : tk__err_set(&w->err, rc, "out of memory");
	}
	if (limited && !fits(w)) {
		int ok = fits_after_sync(w, &mark);
		if (ok < 0)
			return ok;
		if (!ok) {
			w->out.len = mark;
			memcpy(w->fs, state, w->fmt->state_size);
			w->repaired = repaired;
			return TK_ERR_LIMIT;
		}
	}
	w->events += n;
	if (w->out.len >= TK__FLUSH_AT)
		return tk__writer_flush(w);
	return 0;
}

int tk_writer_write(tk_writer *w, const tk_event *ev)
{
	return tk_writer_write_group(w, &ev, 1);
}

int tk_writer_close(tk_writer *w)
{
	if (!w)
		return TK_ERR_ARG;
	if (w->err.code)
		return w->err.code;
	if (w->closed)
		return 0;
	int rc = w->fmt->close(w);
	if (!rc)
		rc = tk__writer_flush(w);
	if (!rc && tk__sink_finish(&w->sink))
		rc = tk__err_set(&w->err, TK_ERR_IO, "%s", w->sink.err);
	if (rc)
		return w->err.code ? w->err.code : tk__err_set(&w->err, rc, "cannot finish output");
	w->closed = 1;
	return 0;
}

const char *tk_writer_error(const tk_writer *w)
{
	return w ? w->err.msg : "no writer";
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
	for (size_t i = 0; i < w->n_meta; i++)
		free(w->meta[i].json);
	free(w->meta);
	tk__err_free(&w->err);
	free(w);
}

int tk_copy_meta(tk_writer *w, const tk_reader *r, size_t *copied)
{
	size_t n = tk_reader_meta_count(r);
	for (size_t i = copied ? *copied : 0; i < n; i++) {
		tk_sv k, v;
		int after = 0;
		tk_reader_meta_get(r, i, &k, &v, &after);
		int rc = after ? tk_writer_add_meta_after(w, k, v) : tk_writer_add_meta(w, k, v);
		if (rc)
			return rc;
		if (copied)
			*copied = i + 1;
	}
	return 0;
}
