/* reader.c: the generic reader: input window, format bidding, errors, warnings, metadata. */
#define _GNU_SOURCE /* memrchr */
#include <stdlib.h>

#include "formats/archive.h"
#include "formats/formats.h"
#include "par.h"

#define TK__BUF0 (1024 * 1024)

size_t tk__reader_window0;

static int reader_new(tk_reader **out, const char *name, const tk_reader_opts *opts)
{
	tk_reader *r = calloc(1, sizeof *r);
	*out = r;
	if (!r)
		return TK_ERR_NOMEM;
	r->src.fd = -1;
	if (opts)
		r->opts = *opts;
	if (!r->opts.max_value_bytes)
		r->opts.max_value_bytes = (size_t)256 << 20;
	if (!r->opts.max_depth)
		r->opts.max_depth = 1000;
	if (r->opts.max_depth > TK__MAX_DEPTH)
		r->opts.max_depth = TK__MAX_DEPTH;
	if (r->opts.note_fn && (!r->opts.note_size || r->opts.note_size > 4096))
		return tk__err_set(&r->err, TK_ERR_ARG, "%s: a note of %zu bytes (1 to 4096)", name ? name : "(input)",
		                   r->opts.note_size);
	if (!r->opts.note_fn)
		r->opts.note_size = 0;
	r->note_buf = r->opts.note_fn ? malloc(r->opts.note_size) : NULL;
	r->name = tk__strdup(name ? name : "(input)");
	r->cap = tk__reader_window0 ? tk__reader_window0 : TK__BUF0;
	r->stats.window_bytes = r->cap;
	r->buf = malloc(r->cap + TK__PAD);
	r->line = 1;
	if (!r->name || !r->buf || (r->opts.note_fn && !r->note_buf))
		return tk__err_set(&r->err, TK_ERR_NOMEM, "out of memory");
	memset(r->buf, 0, TK__PAD);
	return 0;
}

tk_reader *tk__reader_worker(const tk_reader *main)
{
	tk_reader *w = calloc(1, sizeof *w);
	if (!w)
		return NULL;
	w->src.fd = -1;
	w->opts = main->opts;
	w->fmt = main->fmt;
	w->line = 1;
	w->name = tk__strdup(main->name);
	if (!w->name || w->fmt->rd->open(w) < 0) {
		tk_reader_free(w);
		return NULL;
	}
	return w;
}

/* The source failed: its message, named (another base's names itself: an archive, a member). */
static int src_fail(tk_reader *r)
{
	int code = r->src.err_nomem ? TK_ERR_NOMEM : TK_ERR_IO;
	if (r->src.err_named)
		return tk__err_set(&r->err, code, "%s", r->src.err);
	return tk__err_set(&r->err, code, "%s: %s", r->name, r->src.err);
}

/* The format that bids highest on the first decoded bytes, opened. */
static int pick_format(tk_reader *r)
{
	int rc = tk__reader_fill(r, 16);
	if (rc)
		return rc;
	if (r->end == r->pos)
		return tk__err_set(&r->err, TK_ERR_FORMAT, "%s: empty input", r->name);
	int best = 0;
	for (size_t i = 0; tk__format_at(i); i++) {
		const tk__format *f = tk__format_at(i);
		int b = f->rd ? f->rd->bid(r->buf + r->pos, r->end - r->pos) : 0;
		if (b > best) {
			best = b;
			r->fmt = f;
		}
	}
	if (!r->fmt) {
		const unsigned char *p = r->buf + r->pos;
		size_t n = r->end - r->pos;
		char hex[16] = ""; /* the first four bytes, as many as there are */
		for (size_t i = 0, k = 0; i < n && i < 4; i++)
			k += (size_t)snprintf(hex + k, sizeof hex - k, "%s%02x", i ? " " : "", p[i]);
		return tk__err_set(&r->err, TK_ERR_FORMAT, "%s: not a trace tracekit reads (starts with %s %s)",
		                   r->name, n == 1 ? "byte" : "bytes", hex);
	}
	char suf[16];
	tk__src_suffixes(&r->src, suf, sizeof suf);
	snprintf(r->fmtname, sizeof r->fmtname, "%s%s", r->fmt->name, suf);
	rc = r->fmt->rd->open(r);
	if (rc < 0 && !r->err.code)
		r->err.code = rc;
	return rc < 0 ? rc : 0;
}

/* "./a/b" and "a/b" name the same member. */
static const char *member_key(const char *m)
{
	while (m[0] == '.' && m[1] == '/')
		m += 2;
	while (*m == '/')
		m++;
	return m;
}

/* The reader's source is an archive: go to the member (by its path, or the
 * first trace) and read that. */
static int open_member(tk_reader *r, const char *member)
{
	tk__arc *a;
	int rc = tk__arc_open(&a, &r->src, r->name);
	if (rc) {
		rc = tk__err_set(&r->err, rc, "%s", tk__arc_error(a));
		tk__arc_unref(a);
		return rc;
	}
	const char *m = NULL;
	int64_t size;
	while ((rc = tk__arc_next(a, &m, &size)) == 1) {
		if (member ? m && strcmp(member_key(m), member_key(member)) == 0 : !m || tk__is_trace_name(m))
			break;
	}
	if (rc <= 0) {
		if (rc < 0)
			rc = tk__err_set(&r->err, rc, "%s", tk__arc_error(a));
		else if (member)
			rc = tk__err_set(&r->err, TK_ERR_ARG, "%s: no member '%s' (--list shows the traces it holds)",
			                 r->name, member);
		else
			rc = tk__err_set(&r->err, TK_ERR_FORMAT,
			                 "%s: the archive holds no trace (no member named *.json, *.tkb or *.pftrace, "
			                 "plain or compressed)",
			                 r->name);
		tk__arc_unref(a);
		return rc;
	}
	if (m) {
		size_t n = strlen(r->name) + strlen(m) + 3;
		char *name = malloc(n);
		if (!name) {
			tk__arc_unref(a);
			return tk__err_set(&r->err, TK_ERR_NOMEM, "out of memory");
		}
		snprintf(name, n, "%s//%s", r->name, m);
		free(r->name);
		r->name = name;
	}
	if (tk__src_init_member(&r->src, a)) {
		tk__arc_unref(a);
		return tk__err_set(&r->err, TK_ERR_NOMEM, "out of memory");
	}
	r->arc_only = !member && m;
	if (r->arc_only)
		r->arc = a; /* the reader's reference, for only_trace() */
	else
		tk__arc_unref(a);
	return 0;
}

/* After the first trace of an archive opened without a member: no other
 * member may be a trace. */
static int only_trace(tk_reader *r)
{
	r->arc_only = 0;
	const char *m;
	int64_t size;
	int rc;
	while ((rc = tk__arc_next(r->arc, &m, &size)) == 1)
		if (m && tk__is_trace_name(m)) {
			const char *arc = tk__arc_name(r->arc);
			return tk__err_set(&r->err, TK_ERR_ARG,
			                   "%s holds more than one trace (%s and %s at least): name one as "
			                   "%s//MEMBER (--list shows them)",
			                   arc, r->name + strlen(arc) + 2, m, arc);
		}
	return rc < 0 ? tk__err_set(&r->err, rc, "%s", tk__arc_error(r->arc)) : TK_EOF;
}

int tk__reader_open_src(tk_reader **out, tk__src *src, const char *name, const char *member,
                        const tk_reader_opts *opts)
{
	int rc = reader_new(out, name, opts);
	if (rc) {
		tk__src_close(src);
		return rc;
	}
	tk_reader *r = *out;
	r->src = *src;
	memset(src, 0, sizeof *src);
	/* filters stack until an archive bids: then its member is the base,
	 * and the stacking starts again on the member's bytes */
	for (;;) {
		int archive;
		if (tk__src_detect(&r->src, &archive) < 0)
			return src_fail(r);
		if (!archive)
			break;
		if (r->src.base.read) /* already a member */
			return tk__err_set(&r->err, TK_ERR_UNSUPPORTED, "%s: an archive inside an archive is not read",
			                   r->name);
		if ((rc = open_member(r, member)))
			return rc;
	}
	if (member && !r->src.base.read)
		return tk__err_set(&r->err, TK_ERR_ARG, "%s: not an archive, so it has no member '%s'", r->name,
		                   member);
	/* one gzip stream inflated in parts on threads: before the format is
	 * picked, which reads the first window (1 MiB) */
	if (r->opts.threads > 1)
		tk__src_inflate_threads(&r->src, r->opts.threads);
	if ((rc = pick_format(r))) {
		if (rc == TK_ERR_FORMAT && r->fmt) /* the format's opening read (a header, metadata) failed */
			tk__reader_blame_filter(r);
		return rc;
	}
	if (r->opts.skip_args)
		tk__reader_set_lazy_args(r, 1); /* skipped and never taken */
	/* on several threads one of them inflates the next block while the
	 * others parse (par.c): a thread of the source's own would only add a
	 * copy and take a processor from them */
	if (r->opts.threads <= 1 || r->fmt != &tk__format_json)
		tk__src_read_ahead(&r->src);
	return 0;
}

int tk_reader_open_fd(tk_reader **out, int fd, const char *name, const tk_reader_opts *opts)
{
	if (!out)
		return TK_ERR_ARG;
	tk__src src;
	tk__src_init_fd(&src, fd, 0);
	return tk__reader_open_src(out, &src, name, NULL, opts);
}

int tk_reader_open_path(tk_reader **out, const char *path, const tk_reader_opts *opts)
{
	if (!out || !path)
		return TK_ERR_ARG;
	char *file = NULL;
	const char *member = NULL;
	if (tk__member_path(path, &file, &member))
		path = file;
	tk__src src;
	char err[TK__ERRLEN];
	int rc = tk__src_open_file(&src, path, err);
	if (rc) {
		rc = reader_new(out, path, opts);
		if (!rc)
			rc = tk__err_set(&(*out)->err, TK_ERR_IO, "%s", err);
	} else {
		rc = tk__reader_open_src(out, &src, strcmp(path, "-") == 0 ? "(stdin)" : path, member, opts);
	}
	free(file);
	return rc;
}

int tk_reader_open_memory(tk_reader **out, const void *buf, size_t len, const char *name,
                          const tk_reader_opts *opts)
{
	if (!out)
		return TK_ERR_ARG;
	tk__src src;
	tk__src_init_mem(&src, buf, len);
	return tk__reader_open_src(out, &src, name ? name : "(memory)", NULL, opts);
}

static uint64_t sum_bytes(__m128i acc)
{
	__m128i sum = _mm_sad_epu8(acc, _mm_setzero_si128());
	return (uint64_t)_mm_cvtsi128_si32(sum) + (uint64_t)_mm_cvtsi128_si32(_mm_srli_si128(sum, 8));
}

uint64_t tk__count_nl(const unsigned char *p, size_t n)
{
	/* per-byte counters (at most 4 per block, 63 blocks < 256), summed with
	 * SAD: SSE2 only, no popcnt needed */
	const __m128i nl = _mm_set1_epi8('\n');
	uint64_t c = 0;
	size_t i = 0;
	while (i + 64 <= n) {
		__m128i acc = _mm_setzero_si128();
		for (int k = 0; k < 63 && i + 64 <= n; k++, i += 64) {
			const __m128i *b = (const __m128i *)(const void *)(p + i);
			__m128i x = _mm_add_epi8(_mm_cmpeq_epi8(_mm_loadu_si128(b), nl),
			                         _mm_cmpeq_epi8(_mm_loadu_si128(b + 1), nl));
			__m128i y = _mm_add_epi8(_mm_cmpeq_epi8(_mm_loadu_si128(b + 2), nl),
			                         _mm_cmpeq_epi8(_mm_loadu_si128(b + 3), nl));
			acc = _mm_sub_epi8(acc, _mm_add_epi8(x, y));
		}
		c += sum_bytes(acc);
	}
	for (; i < n; i++)
		c += p[i] == '\n';
	return c;
}

/* Advance line accounting over buf[0..n): line of buf[n], start of that line. */
static void lines_upto(const tk_reader *r, size_t n, uint64_t *line, uint64_t *line_at)
{
	uint64_t k = tk__count_nl(r->buf, n);
	*line = r->line + k;
	*line_at = r->line_at;
	if (k) {
		const unsigned char *nl = memrchr(r->buf, '\n', n);
		*line_at = r->base + (uint64_t)(nl - r->buf) + 1;
	}
}

void tk__reader_lines_at(const tk_reader *r, size_t n, uint64_t *line, uint64_t *line_at)
{
	lines_upto(r, n, line, line_at);
}

/* Drop consumed bytes, keeping line accounting for messages. */
static void compact(tk_reader *r)
{
	if (!r->pos)
		return;
	lines_upto(r, r->pos, &r->line, &r->line_at);
	memmove(r->buf, r->buf + r->pos, r->end - r->pos);
	r->base += r->pos;
	r->end -= r->pos;
	r->pos = 0;
}

int tk__reader_more(tk_reader *r)
{
	if (r->err.code)
		return r->err.code;
	if (r->eof)
		return 0;
	if (r->src_failed)
		return src_fail(r);
	/* more is asked for while one unit (an event, a metadata value) is
	 * incomplete: everything unread belongs to it */
	if (r->end - r->pos > r->opts.max_value_bytes)
		return tk__reader_fail_at(r, TK_ERR_LIMIT, r->base + r->pos,
		                          "a single value is larger than the limit of %zu bytes",
		                          r->opts.max_value_bytes);
	if (r->pos && (r->pos >= r->cap / 2 || r->end == r->cap))
		compact(r);
	if (r->end == r->cap) {
		/* never more than the limit needs: a value one byte over it is seen */
		size_t ncap = r->cap * 2, lim = r->opts.max_value_bytes + ((size_t)64 << 10);
		if (ncap > lim && lim > r->cap)
			ncap = lim;
		unsigned char *nb = realloc(r->buf, ncap + TK__PAD);
		if (!nb)
			return tk__err_set(&r->err, TK_ERR_NOMEM, "%s: out of memory", r->name);
		r->buf = nb;
		r->cap = ncap;
		if (ncap > r->stats.window_bytes)
			r->stats.window_bytes = ncap;
	}
	/* Fill the whole free space (pipes deliver small blocks): a unit that is
	 * parsed again from its start after each call then costs linear time
	 * overall, as the window doubles whenever it is full. */
	size_t added = 0, unread = r->end - r->pos;
	while (r->end < r->cap) {
		long n = r->par ? tk__par_read(r, r->buf + r->end, r->cap - r->end)
		                : tk__src_read(&r->src, r->buf + r->end, r->cap - r->end);
		if (n < 0) {
			if (!added)
				return src_fail(r);
			/* the bytes before the failure are parsed first, as they are
			 * however the reads fall (the threads' blocks among them) */
			r->src_failed = 1;
			break;
		}
		if (n == 0) {
			r->eof = 1;
			break;
		}
		r->end += (size_t)n;
		added += (size_t)n;
		/* from the threads' blocks (par.c): a block at a time, not ahead of
		 * the parse, so that the blocks after it are still there to take
		 * over from; at least as much as is unread, for linear time */
		if (r->par && added >= unread)
			break;
	}
	r->stats.bytes_in = r->par ? tk__par_bytes_in(r->par) : tk__src_bytes_in(&r->src);
	r->stats.bytes_decoded += added;
	memset(r->buf + r->end, 0, TK__PAD);
	return added ? 1 : 0;
}

int tk__reader_fill(tk_reader *r, size_t need)
{
	while (r->end - r->pos < need) {
		int rc = tk__reader_more(r);
		if (rc <= 0)
			return rc;
	}
	return 0;
}

void tk__reader_linecol(const tk_reader *r, uint64_t at, uint64_t *line, uint64_t *col)
{
	uint64_t la;
	size_t lim = at >= r->base ? (size_t)(at - r->base) : 0;
	if (lim > r->end)
		lim = r->end;
	lines_upto(r, lim, line, &la);
	*col = at >= la ? at - la + 1 : 1;
}

int tk__reader_fail_at(tk_reader *r, int code, uint64_t at, const char *fmt, ...)
{
	char msg[TK__ERRLEN / 2];
	va_list ap;
	va_start(ap, fmt);
	tk__fmt_msg(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (r->fmt && (r->fmt->flags & TK__FMT_BINARY))
		return tk__err_set(&r->err, code, "%.200s: byte %llu: %s", r->name, (unsigned long long)at, msg);
	uint64_t line, col;
	tk__reader_linecol(r, at, &line, &col);
	return tk__err_set(&r->err, code, "%.200s:%llu:%llu: %s (byte %llu)", r->name,
	                   (unsigned long long)line, (unsigned long long)col, msg, (unsigned long long)at);
}

int tk__reader_add_meta(tk_reader *r, const char *key, size_t klen, const char *json, size_t jlen,
                        int after)
{
	if (tk__grow(&r->meta, &r->meta_cap, r->n_meta + 1, sizeof *r->meta, 16))
			return tk__err_set(&r->err, TK_ERR_NOMEM, "%s: out of memory", r->name);
	tk__meta *m = &r->meta[r->n_meta];
	m->key = tk__strtab_intern(&r->strs, key, klen);
	m->json = malloc(jlen + 1);
	if (!m->key.ptr || !m->json) {
		free(m->json);
		return tk__err_set(&r->err, TK_ERR_NOMEM, "%s: out of memory", r->name);
	}
	memcpy(m->json, json, jlen);
	m->json[jlen] = 0;
	m->json_len = jlen;
	m->after = after;
	r->n_meta++;
	return 0;
}

/* Malformed text decoded by a filter (gzip): where the rest of the
 * filter's stream turns out damaged, the damage is what went wrong (a
 * corrupt deflate stream may decode to garbage before its decoder sees an
 * error), and the error says so first. The rest is decoded on this error
 * only, and nothing of it is parsed. */
#define BLAME_DRAIN ((uint64_t)256 << 20) /* decoded bytes looked at past the error, at most */

void tk__reader_blame_filter(tk_reader *r)
{
	if (r->err.code != TK_ERR_FORMAT || r->src.n < 2 || r->eof)
		return; /* no filter, or its stream ended well */
	if (!r->src_failed) {
		/* bounded: a syntax error early in a large file is said in a
		 * fraction of a second, unless the damage is near */
		unsigned char buf[16384];
		long n;
		uint64_t seen = 0;
		while (seen < BLAME_DRAIN && (n = tk__src_read(&r->src, buf, sizeof buf)) > 0)
			seen += (uint64_t)n;
		if (seen >= BLAME_DRAIN || n == 0)
			return;
	}
	/* damage to the compressed data explains text that is not JSON; a read
	 * that failed, or bytes after the stream's end, do not */
	if (strncmp(r->src.err, "corrupt ", 8) != 0 && !(r->src.err_named && strstr(r->src.err, ": corrupt ")))
		return;
	char was[TK__ERRLEN];
	memcpy(was, r->err.msg, sizeof was);
	if (r->src.err_named)
		tk__err_set(&r->err, TK_ERR_FORMAT, "%.200s; what it decoded was not valid before that: %.250s", r->src.err,
		            was);
	else
		tk__err_set(&r->err, TK_ERR_FORMAT, "%.120s: %.200s; what it decoded was not valid before that: %.170s",
		            r->name, r->src.err, was);
}

int tk_reader_next(tk_reader *r, const tk_event **ev)
{
	if (!r || !ev)
		return TK_ERR_ARG;
	if (r->err.code)
		return r->err.code;
	if (!r->fmt)
		return TK_ERR_ARG;
	r->note_par = NULL;
	r->rend_par = NULL;
	int rc = r->fmt->rd->next(r, ev);
	r->last_ev = rc == TK_OK ? *ev : NULL;
	if (rc != TK_OK && r->par)
		tk__par_finish(r->par); /* the threads end; the strings stay */
	if (rc == TK_ERR_FORMAT)
		tk__reader_blame_filter(r);
	if (rc == TK_OK && r->opts.note_fn) {
		/* a thread's note, else one written here */
		if (!(r->note = r->note_par)) {
			r->opts.note_fn(r->opts.note_ctx, *ev, r->note_buf);
			r->note = r->note_buf;
		}
	}
	if (rc == TK_EOF && r->arc_only)
		rc = only_trace(r);
	if (rc == TK_OK)
		r->stats.events++;
	else if (rc < 0 && !r->err.code)
		r->err.code = rc;
	r->stats.bytes_in = r->par ? tk__par_bytes_in(r->par) : tk__src_bytes_in(&r->src);
	return rc;
}

int tk__reader_text(const tk_reader *r, const tk_event *ev, tk_sv *t, uint32_t *repaired)
{
	const tk__rend *x = r ? r->rend_par : NULL;
	if (!x || !ev || ev != r->last_ev || x->len == TK__NO_TEXT)
		return 0;
	/* an event with no members has an empty text, maybe in no buffer */
	*t = x->len ? (tk_sv){r->rend_text + x->off, x->len} : (tk_sv){"", 0};
	*repaired = x->repaired;
	return 1;
}

const void *tk_reader_event_note(const tk_reader *r)
{
	return r && r->opts.note_fn ? r->note : NULL;
}

const char *tk_reader_error(const tk_reader *r)
{
	if (!r)
		return "no reader";
	return tk__err_text(&r->err);
}

const char *tk_reader_warning(const tk_reader *r, size_t i)
{
	return r ? tk__err_warning(&r->err, i) : NULL;
}

const tk_reader_stats *tk_reader_get_stats(const tk_reader *r)
{
	return &r->stats;
}

const char *tk_reader_format(const tk_reader *r)
{
	return r && r->fmt ? r->fmtname : "unknown";
}

const char *tk_reader_name(const tk_reader *r)
{
	return r ? r->name : "";
}

size_t tk_reader_meta_count(const tk_reader *r)
{
	return r ? r->n_meta : 0;
}

int tk_reader_meta_get(const tk_reader *r, size_t i, tk_sv *key, tk_sv *json, int *after)
{
	if (!r || i >= r->n_meta)
		return TK_ERR_ARG;
	if (key)
		*key = r->meta[i].key;
	if (json)
		*json = (tk_sv){r->meta[i].json, r->meta[i].json_len};
	if (after)
		*after = r->meta[i].after;
	return 0;
}

tk_sv tk_reader_meta_find(const tk_reader *r, const char *key)
{
	size_t kl = strlen(key);
	for (size_t i = 0; r && i < r->n_meta; i++)
		if (r->meta[i].key.len == kl && memcmp(r->meta[i].key.ptr, key, kl) == 0)
			return (tk_sv){r->meta[i].json, r->meta[i].json_len};
	return (tk_sv){NULL, 0};
}

int tk_reader_is_bare_array(const tk_reader *r)
{
	return r ? r->bare_array : 0;
}

void tk_reader_free(tk_reader *r)
{
	if (!r)
		return;
	tk__par_free(r->par); /* its threads read the source */
	if (r->fmt && r->fmt->rd->free)
		r->fmt->rd->free(r);
	tk__src_close(&r->src);
	tk__arc_unref(r->arc);
	tk__strtab_free(&r->strs);
	tk__buf_free(&r->args);
	tk__buf_free(&r->extra);
	tk__buf_free(&r->scratch);
	for (size_t i = 0; i < r->n_meta; i++)
		free(r->meta[i].json);
	free(r->meta);
	tk__err_free(&r->err);
	free(r->buf);
	free(r->note_buf);
	free(r->name);
	free(r);
}
