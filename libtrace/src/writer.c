/* writer.c: the generic writer: output selection, buffering, metadata, error state. */
#include <stdlib.h>

#include "formats/formats.h"

#define TK__FLUSH_AT (1024 * 1024)

static int writer_start(tk_writer **out, const char *path, const tk_writer_opts *opts, int fd)
{
	tk_writer_opts o = {.format = TK_FORMAT_AUTO, .gzip = -1};
	if (opts)
		o = *opts;
	tk_writer *w = calloc(1, sizeof *w);
	*out = w;
	if (!w)
		return TK_ERR_NOMEM;
	w->sink.fd = -1;
	const char *base = path ? path : "";
	const tk__ofilter *of = NULL;
	const tk__format *f = o.format == TK_FORMAT_AUTO ? tk__format_for_output(base, &of)
	                                                 : tk__format_by_id(o.format);
	if (!f && o.format == TK_FORMAT_AUTO)
		f = tk__format_by_id(TK_FORMAT_JSON); /* the default */
	if (!f || !f->wr)
		return tk__err_set(&w->err, TK_ERR_UNSUPPORTED, "%s: output format not supported", base);
	if (o.format != TK_FORMAT_AUTO && o.gzip < 0) /* the filter still comes from the name */
		tk__format_for_output(base, &of);
	int gz = o.gzip < 0 ? of != NULL : o.gzip;
	w->fmt = f;
	w->opts = (tk_writer_opts){f->id, gz, o.gzip_level, o.memory_bytes, o.threads, o.tmpdir};
	/* a format that compresses on its own (.tkb chunks) takes gzip as its option */
	const tk__ofilter *filter = gz && (f->flags & TK__FMT_WHOLE_GZIP) ? tk__ofilter_by_name("gzip") : NULL;
	int rc = fd >= 0 ? tk__sink_open_fd(&w->sink, fd, path, filter, o.gzip_level)
	                 : tk__sink_open_path(&w->sink, path, filter, o.gzip_level);
	if (rc)
		return tk__err_set(&w->err, rc, "%s", w->sink.err[0] ? w->sink.err : "out of memory");
	tk__sink_async(&w->sink, o.threads);
	rc = f->wr->open ? f->wr->open(w) : 0;
	w->opts.tmpdir = NULL; /* the caller's: read by the opening alone (copied where kept) */
	if (rc && w->err.code) /* the format said why */
		return w->err.code;
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

/* The output's name for messages. */
static const char *out_name(const tk_writer *w)
{
	return w->sink.path ? w->sink.path : "output";
}

static int add_meta(tk_writer *w, tk_sv key, tk_sv json, int after)
{
	if (!w || !key.ptr || !json.ptr)
		return TK_ERR_ARG;
	if (w->err.code)
		return w->err.code;
	w->err.msg[0] = 0; /* a refusal before is not this call's */
	if (w->closed)
		return tk__err_msg(&w->err, TK_ERR_ARG, "%s: the output is closed", out_name(w));
	/* the events' own member: a second one would make the file unreadable */
	if (key.len == 11 && memcmp(key.ptr, "traceEvents", 11) == 0)
		return tk__err_msg(&w->err, TK_ERR_ARG, "%s: \"traceEvents\" is the events' member, not metadata",
		                   out_name(w));
	return w->fmt->wr->add_meta(w, key, json, after);
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
	if (!w->err.code)
		w->err.msg[0] = 0;
	if (max_bytes && (!w->fmt->wr->state_size || !w->fmt->wr->close_bytes))
		return tk__err_msg(&w->err, TK_ERR_UNSUPPORTED, "a byte budget is supported for JSON output only, not %s",
		                   w->fmt->name);
	w->max_bytes = max_bytes;
	return 0;
}

uint64_t tk_writer_bytes(const tk_writer *w)
{
	return w ? tk__sink_bytes(&w->sink) : 0;
}

/* 1 if the finished output is sure to fit the budget: the sink knows its
 * size, or a bound of it through its filter. */
static int fits(const tk_writer *w)
{
	return tk__sink_bound(&w->sink, w->out.len + w->fmt->wr->close_bytes(w)) <= w->max_bytes;
}

/* The events appended after `mark` overrun the budget's bound: make the
 * bound exact for what came before them (a filter ends its block there),
 * and ask again. */
static int fits_after_sync(tk_writer *w, size_t *mark)
{
	if (*mark == 0 && tk__sink_exact(&w->sink))
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

/* 0 when a view's text is absent (ptr NULL) but has a length: an event
 * no writer can take. */
static int sv_ok(tk_sv v)
{
	return v.ptr || !v.len;
}

static int id_ok(const tk_id *id)
{
	return id->kind != TK_ID_STR || sv_ok(id->str);
}

/* Why w cannot take ev, or NULL: checked before anything of a group is
 * written, so that a refusal leaves the writer as it was. */
static const char *event_bad(const tk_writer *w, const tk_event *ev)
{
	if (!ev)
		return "NULL";
	if (!sv_ok(ev->name) || !sv_ok(ev->cat) || !sv_ok(ev->args) || !sv_ok(ev->extra) || !id_ok(&ev->pid) ||
	    !id_ok(&ev->tid) || !id_ok(&ev->id))
		return "a string of length > 0 without its text (ptr NULL)";
	/* JSON holds a phase as one character, which its reader takes back
	 * unescaped; the other formats keep any byte */
	if ((ev->has & TK_HAS_PH) && w->fmt->id == TK_FORMAT_JSON && !tk__json_ph_ok((unsigned char)ev->ph))
		return "its phase is not a printable ASCII character";
	return NULL;
}

/* Writes a group (of one event written ahead as text, with t); under a
 * budget a refused group is taken back whole. */
static int write_n(tk_writer *w, const tk_event *const *evs, size_t n, const tk_sv *t, uint32_t t_repaired)
{
	if (!w || (!evs && n))
		return TK_ERR_ARG;
	if (w->err.code)
		return w->err.code;
	w->err.msg[0] = 0; /* a refusal before is not this call's */
	if (w->closed)
		return tk__err_msg(&w->err, TK_ERR_ARG, "%s: the output is closed", out_name(w));
	int limited = w->max_bytes && w->events > 0;
	unsigned char state[TK__WSTATE_MAX];
	size_t mark = w->out.len;
	uint64_t repaired = w->repaired;
	for (size_t i = 0; i < n; i++) {
		const char *why = event_bad(w, evs[i]);
		if (why)
			return tk__err_msg(&w->err, TK_ERR_ARG, "%s: event %llu: %s", out_name(w),
			                   (unsigned long long)(w->events + i + 1), why);
	}
	if (limited)
		memcpy(state, w->fs, w->fmt->wr->state_size);
	for (size_t i = 0; i < n; i++) {
		int rc = t ? w->fmt->wr->write_text(w, t->ptr, t->len, t_repaired) : w->fmt->wr->write(w, evs[i]);
		if (rc)
			return w->err.code ? w->err.code : tk__err_set(&w->err, rc, "out of memory");
	}
	if (limited && !fits(w)) {
		int ok = fits_after_sync(w, &mark);
		if (ok < 0)
			return ok;
		if (!ok) {
			w->out.len = mark;
			memcpy(w->fs, state, w->fmt->wr->state_size);
			w->repaired = repaired;
			return TK_ERR_LIMIT;
		}
	}
	w->events += n;
	if (w->out.len >= TK__FLUSH_AT)
		return tk__writer_flush(w);
	return 0;
}

int tk_writer_write_group(tk_writer *w, const tk_event *const *evs, size_t n)
{
	return write_n(w, evs, n, NULL, 0);
}

int tk_writer_write(tk_writer *w, const tk_event *ev)
{
	return write_n(w, &ev, 1, NULL, 0);
}

int tk_writer_write_from(tk_writer *w, const tk_reader *r, const tk_event *ev)
{
	tk_sv t;
	uint32_t repaired;
	if (w && w->fmt->wr->write_text && tk__reader_text(r, ev, &t, &repaired))
		return write_n(w, &ev, 1, &t, repaired);
	return write_n(w, &ev, 1, NULL, 0);
}

int tk_writer_close(tk_writer *w)
{
	if (!w)
		return TK_ERR_ARG;
	if (w->err.code)
		return w->err.code;
	w->err.msg[0] = 0;
	if (w->closed)
		return 0;
	int rc = w->fmt->wr->close(w);
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
	if (w->fmt && w->fmt->wr->free)
		w->fmt->wr->free(w);
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
	if (!w || !r)
		return TK_ERR_ARG;
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
