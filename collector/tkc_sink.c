/* tkc_sink.c: the collector's output, a .tkb file written through tk_tkb_writer. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tkc.h"

typedef struct tkb_sink {
	tkc_sink base;
	tk_tkb_writer *w;
	tk_tkb_buf *buf;
	uint64_t too_big; /* events larger than the whole buffer arena */
	char err[512];
} tkb_sink;

static int note(tkb_sink *s, int r)
{
	if (r < 0 && !s->err[0])
		snprintf(s->err, sizeof s->err, "%s", tk_tkb_writer_error(s->w));
	return r;
}

static int submit(tkb_sink *s)
{
	if (!tk_tkb_buf_count(s->buf))
		return TK_OK;
	return note(s, tk_tkb_writer_submit(s->w, s->buf));
}

static int tkb_event(tkc_sink *base, const tk_event *ev)
{
	tkb_sink *s = (tkb_sink *)base;
	int r = tk_tkb_buf_append(s->buf, ev);
	if (r == TK_ERR_LIMIT) {
		submit(s);
		r = tk_tkb_buf_append(s->buf, ev);
		if (r == TK_ERR_LIMIT) {
			s->too_big++;
			return TK_OK;
		}
	}
	return r;
}

static int tkb_batch_end(tkc_sink *base)
{
	return submit((tkb_sink *)base);
}

static int tkb_meta(tkc_sink *base, const char *key, const char *json)
{
	tkb_sink *s = (tkb_sink *)base;
	tk_sv k = {key, strlen(key)}, j = {json, strlen(json)};
	return note(s, tk_tkb_writer_add_meta(s->w, k, j, 1));
}

static int tkb_close(tkc_sink *base, const tk_tkb_anchor *end)
{
	tkb_sink *s = (tkb_sink *)base;
	int r = submit(s);
	int c = note(s, tk_tkb_writer_close(s->w, end));
	return r < 0 ? r : c;
}

static const char *tkb_error(tkc_sink *base)
{
	return ((tkb_sink *)base)->err;
}

static void tkb_free(tkc_sink *base)
{
	tkb_sink *s = (tkb_sink *)base;
	if (!s)
		return;
	tk_tkb_writer_free(s->w);
	tk_tkb_buf_free(s->buf);
	free(s);
}

tkc_sink *tkc_sink_tkb_open(const char *path, const tk_tkb_header *h, const tk_tkb_opts *o,
                            char *err, size_t err_size)
{
	tkb_sink *s = calloc(1, sizeof *s);
	if (!s) {
		snprintf(err, err_size, "out of memory");
		return NULL;
	}
	s->base.event = tkb_event;
	s->base.batch_end = tkb_batch_end;
	s->base.meta = tkb_meta;
	s->base.close = tkb_close;
	s->base.error = tkb_error;
	s->base.free = tkb_free;
	/* one CUPTI buffer of kernels is ~40k records of which names take most */
	s->buf = tk_tkb_buf_new(65536, 16u << 20);
	if (!s->buf) {
		snprintf(err, err_size, "out of memory");
		free(s);
		return NULL;
	}
	int r = tk_tkb_writer_open(&s->w, path, h, o);
	if (r < 0) {
		snprintf(err, err_size, "%s", s->w ? tk_tkb_writer_error(s->w) : tk_strerror(r));
		tkb_free(&s->base);
		return NULL;
	}
	return &s->base;
}
