/* json.c: the Chrome Trace Event JSON format: a streaming reader (object or bare array, any dialect) and a writer (object form, compact, always strict JSON). */
#define _GNU_SOURCE /* memmem, memrchr */
#include <stdlib.h>

#include "formats/formats.h"
#include "par.h"

/* ---- reading ---- */

enum { ST_START, ST_OBJ_FIRST, ST_OBJ_NEXT, ST_EV_FIRST, ST_EV_NEXT, ST_DONE, ST_END };
/* step() results besides TK__J_OK / MORE / BAD */
enum { STEP_EVENT = 10, STEP_END = 11 };

typedef struct jstate {
	int st;
	int seen_events; /* the traceEvents array was entered */
	int events_done;
	uint64_t rounded;    /* timestamps rounded to a nanosecond, in whole events */
	uint64_t ev_rounded; /* the same in the event being parsed */
	uint64_t dup_events; /* events with a member given twice */
	int dup;             /* the event being parsed has one */
	tk__jerr je;
	tk__buf key;
} jstate;

static int json_bid(const unsigned char *p, size_t n)
{
	size_t i = 0;
	if (n >= 3 && p[0] == 0xEF && p[1] == 0xBB && p[2] == 0xBF)
		i = 3;
	while (i < n && (p[i] == ' ' || p[i] == '\n' || p[i] == '\r' || p[i] == '\t'))
		i++;
	if (i < n && (p[i] == '{' || p[i] == '['))
		return 10;
	return 0;
}

static int json_open(tk_reader *r)
{
	jstate *s = calloc(1, sizeof *s);
	if (!s)
		return tk__err_set(&r->err, TK_ERR_NOMEM, "%s: out of memory", r->name);
	r->fs = s;
	return 0;
}

static void json_free(tk_reader *r)
{
	jstate *s = r->fs;
	if (s)
		tk__buf_free(&s->key);
	free(s);
	r->fs = NULL;
}

static int jbad(jstate *s, const unsigned char *at, const char *msg)
{
	s->je.at = at;
	s->je.msg = msg;
	return TK__J_BAD;
}

/* A string value: decoded and interned. */
static int intern_string(tk_reader *r, const unsigned char *p, const unsigned char *e, tk_sv *out,
                         const unsigned char **endp)
{
	jstate *s = r->fs;
	int plain = 1;
	const unsigned char *q = tk__scan_special(p + 1, e);
	if (q < e && *q == '"') {
		*endp = q + 1;
	} else {
		int rc = tk__json_decode_string(p + 1, e, &r->scratch, endp, &plain, &s->je);
		if (rc)
			return rc;
	}
	if (plain)
		*out = tk__strtab_intern(&r->strs, (const char *)p + 1, (size_t)(*endp - p - 2));
	else
		*out = tk__strtab_intern(&r->strs, r->scratch.p, r->scratch.len);
	if (!out->ptr)
		return jbad(s, p, "out of memory");
	return TK__J_OK;
}

/* Append "key":value (canonical) to the event's extra members. */
static int put_extra(tk_reader *r, const unsigned char *kp, size_t kn, const unsigned char *p,
                     const unsigned char *e, const unsigned char **endp)
{
	jstate *s = r->fs;
	tk__buf *x = &r->extra;
	size_t mark = x->len;
	if ((x->len && tk__buf_putc(x, ',')) || tk__buf_putc(x, '"'))
		return jbad(s, p, "out of memory");
	const unsigned char *ke;
	int rc = tk__json_canon_string(kp, kp + kn + 1, x, &ke, &s->je);
	if (rc) {
		x->len = mark;
		return rc == TK__J_MORE ? jbad(s, kp, "malformed key") : rc;
	}
	if (tk__buf_append(x, "\":", 2))
		return jbad(s, p, "out of memory");
	return tk__json_canon_value(p, e, x, endp, r->opts.max_depth, &s->je);
}

#define DIGIT(c) ((unsigned)((c) - '0') < 10)

/* The common number forms in one pass: an integer of at most 15 digits and
 * at most 3 decimals (Kineto's microseconds), scaled by 10^scale. Returns 1
 * with *out and *endp set, 0 to take the general path. */
static inline int fast_number(const unsigned char *p, const unsigned char *e, int decimals,
                              int64_t *out, const unsigned char **endp)
{
	static const int64_t scale[] = {1000, 100, 10, 1};
	const unsigned char *q = p;
	int neg = *q == '-';
	q += neg;
	const unsigned char *d0 = q;
	uint64_t v = 0;
	if (e - q >= 8) {
		/* eight digits at once (SWAR); the input is little-endian text */
		uint64_t c;
		memcpy(&c, q, 8);
		if (((c & 0xF0F0F0F0F0F0F0F0ull) | (((c + 0x0606060606060606ull) & 0xF0F0F0F0F0F0F0F0ull) >> 4)) ==
		    0x3333333333333333ull) {
			c -= 0x3030303030303030ull;
			c = (c * 10 + (c >> 8)) & 0x00FF00FF00FF00FFull;
			c = (c * 100 + (c >> 16)) & 0x0000FFFF0000FFFFull;
			c = (c * 10000 + (c >> 32)) & 0xFFFFFFFFull;
			v = c;
			q += 8;
		}
	}
	while (q < e && DIGIT(*q) && q - d0 < 15)
		v = v * 10 + (uint64_t)(*q++ - '0');
	if (q == d0 || (*d0 == '0' && q - d0 > 1))
		return 0;
	int frac = 0;
	if (decimals && q < e && *q == '.') {
		q++;
		while (q < e && DIGIT(*q) && frac < 3)
			v = v * 10 + (uint64_t)(*q++ - '0'), frac++;
		if (!frac)
			return 0;
	}
	if (q >= e || DIGIT(*q) || *q == '.' || *q == 'e' || *q == 'E')
		return 0;
	if (decimals)
		v *= (uint64_t)scale[frac];
	*out = neg ? -(int64_t)v : (int64_t)v;
	*endp = q;
	return 1;
}

/* pid / tid / id: an integer or a string; anything else is kept in extra. */
static int parse_id(tk_reader *r, const unsigned char *p, const unsigned char *e, tk_id *id,
                    const unsigned char **endp, int *fallback)
{
	*fallback = 0;
	if (*p == '"') {
		id->kind = TK_ID_STR;
		return intern_string(r, p, e, &id->str, endp);
	}
	if (fast_number(p, e, 0, &id->num, endp)) {
		id->kind = TK_ID_INT;
		return TK__J_OK;
	}
	const unsigned char *q = tk__json_scan_number(p, e);
	if (q == e)
		return TK__J_MORE;
	if (!q || memchr(p, '.', (size_t)(q - p)) || memchr(p, 'e', (size_t)(q - p)) ||
	    memchr(p, 'E', (size_t)(q - p))) {
		*fallback = 1; /* not an integer: kept as an extra member */
		return TK__J_OK;
	}
	if (tk__parse_int64(p, q, &id->num))
		return jbad(r->fs, p, "integer id out of range (must fit in int64)");
	id->kind = TK_ID_INT;
	*endp = q;
	return TK__J_OK;
}

static int parse_time(tk_reader *r, const unsigned char *p, const unsigned char *e, int64_t *out,
                      const unsigned char **endp, int *fallback)
{
	jstate *s = r->fs;
	*fallback = 0;
	if (fast_number(p, e, 1, out, endp))
		return TK__J_OK;
	const unsigned char *q = tk__json_scan_number(p, e);
	if (q == e)
		return TK__J_MORE;
	if (!q) {
		*fallback = 1; /* not a number: kept as an extra member */
		return TK__J_OK;
	}
	int rc = tk__parse_us_to_ns(p, q, out);
	if (rc < 0)
		return jbad(s, p, "time value out of range (must fit in int64 nanoseconds)");
	s->ev_rounded += (uint64_t)rc;
	*endp = q;
	return TK__J_OK;
}

/* The members an event object gives itself; K_OTHER: an extra member. */
enum { K_OTHER, K_PH, K_NAME, K_CAT, K_TS, K_DUR, K_PID, K_TID, K_ID, K_ARGS };

/* Which member a key names, read straight from the text: the bytes at kp
 * (after the opening quote) are one of the member names above and its
 * closing quote, before e (the bytes after e are readable padding). Returns
 * the code and sets *kn, or -1: not one of them, look for the key's end (a
 * whole key found there is an extra member: its text and closing quote
 * stand before e, so it would have matched here). */
#define W3(a, b, c) ((uint64_t)(a) | (uint64_t)(b) << 8 | (uint64_t)(c) << 16)
#define W4(a, b, c, d) (W3(a, b, c) | (uint64_t)(d) << 24)
#define W5(a, b, c, d, f) (W4(a, b, c, d) | (uint64_t)(f) << 32)
static inline int key_word(const unsigned char *kp, const unsigned char *e, size_t *kn)
{
	uint64_t w;
	memcpy(&w, kp, 8);
	uint64_t w3 = w & 0xFFFFFF, w4 = w & 0xFFFFFFFF, w5 = w & 0xFFFFFFFFFFull;
	int code;
	size_t n;
	if (w3 == W3('p', 'h', '"'))
		code = K_PH, n = 2;
	else if (w3 == W3('t', 's', '"'))
		code = K_TS, n = 2;
	else if (w3 == W3('i', 'd', '"'))
		code = K_ID, n = 2;
	else if (w4 == W4('p', 'i', 'd', '"'))
		code = K_PID, n = 3;
	else if (w4 == W4('t', 'i', 'd', '"'))
		code = K_TID, n = 3;
	else if (w4 == W4('c', 'a', 't', '"'))
		code = K_CAT, n = 3;
	else if (w4 == W4('d', 'u', 'r', '"'))
		code = K_DUR, n = 3;
	else if (w5 == W5('n', 'a', 'm', 'e', '"'))
		code = K_NAME, n = 4;
	else if (w5 == W5('a', 'r', 'g', 's', '"'))
		code = K_ARGS, n = 4;
	else
		return -1;
	if (kp + n >= e)
		return -1;
	*kn = n;
	return code;
}

/* One member of an event object; kp/kn is the raw key text, code what
 * key_word() says of it (K_OTHER for any other key, escaped ones too). */
static int event_member(tk_reader *r, int code, const unsigned char *kp, size_t kn,
                        const unsigned char *p, const unsigned char *e, const unsigned char **endp)
{
	tk_event *ev = &r->ev;
	int fb = 0, rc = TK__J_OK;
	/* A member given twice ("ts":1,"ts":2, two args) goes to dup: the first
	 * is the event's, the others are kept as extra members, so none is lost. */
	switch (code) {
	case K_PH:
		if (ev->has & TK_HAS_PH)
			goto dup;
		if (*p != '"')
			goto extra;
		if (e - p < 3)
			return TK__J_MORE;
		if (p[2] != '"' || !tk__json_ph_ok(p[1]))
			goto extra;
		ev->ph = (char)p[1];
		ev->has |= TK_HAS_PH;
		*endp = p + 3;
		return TK__J_OK;
	case K_NAME:
		if (ev->has & TK_HAS_NAME)
			goto dup;
		if (*p != '"')
			goto extra;
		ev->has |= TK_HAS_NAME;
		return intern_string(r, p, e, &ev->name, endp);
	case K_CAT:
		if (ev->has & TK_HAS_CAT)
			goto dup;
		if (*p != '"')
			goto extra;
		ev->has |= TK_HAS_CAT;
		return intern_string(r, p, e, &ev->cat, endp);
	case K_TS:
		if (ev->has & TK_HAS_TS)
			goto dup;
		rc = parse_time(r, p, e, &ev->ts, endp, &fb);
		if (!rc && !fb)
			ev->has |= TK_HAS_TS;
		break;
	case K_DUR:
		if (ev->has & TK_HAS_DUR)
			goto dup;
		rc = parse_time(r, p, e, &ev->dur, endp, &fb);
		if (!rc && !fb)
			ev->has |= TK_HAS_DUR;
		break;
	case K_PID:
	case K_TID:
	case K_ID: {
		tk_id *id = code == K_ID ? &ev->id : code == K_PID ? &ev->pid : &ev->tid;
		if (id->kind != TK_ID_NONE)
			goto dup;
		rc = parse_id(r, p, e, id, endp, &fb);
		break;
	}
	case K_ARGS:
		if (r->args.len || r->lazy_pending)
			goto dup;
		if (*p != '{')
			goto extra;
		r->args.len = 0;
		r->lazy_pending = 0;
		if (r->lazy_args) {
			r->lazy_tried = 1;
			rc = tk__json_skip_value(p, e, endp, &r->lazy_clen, r->opts.max_depth);
			if (rc != TK__J_BAD) {
				r->lazy_pending = rc == TK__J_OK;
				r->lazy_at = p;
				return rc;
			}
		}
		return tk__json_canon_value(p, e, &r->args, endp, r->opts.max_depth, &((jstate *)r->fs)->je);
	default:
		goto extra;
	}
	if (rc || !fb)
		return rc;
	goto extra;
dup:
	((jstate *)r->fs)->dup = 1;
extra:
	return put_extra(r, kp, kn, p, e, endp);
}

/* The event's view of a canonicalized text, NUL-terminated (none if empty). */
static int text_view(tk__buf *b, tk_sv *v)
{
	if (!b->len)
		return 0;
	if (tk__buf_putc(b, 0))
		return TK_ERR_NOMEM;
	*v = (tk_sv){b->p, --b->len};
	return 0;
}

/* Parse one event object at p ('{'). */
static int parse_event(tk_reader *r, const unsigned char *p, const unsigned char *e,
                       const unsigned char **endp)
{
	jstate *s = r->fs;
	tk_event *ev = &r->ev;
	tk__event_zero(ev);
	r->args.len = 0;
	r->extra.len = 0;
	r->lazy_pending = 0;
	s->dup = 0;
	s->ev_rounded = 0; /* counted once the event is whole: a unit cut by the
	                    * window's end is parsed again */
	p = tk__skip_ws(p + 1, e);
	if (p >= e)
		return TK__J_MORE;
	if (*p == '}')
		goto done;
	for (;;) {
		if (*p != '"')
			return jbad(s, p, "expected a string key in event object");
		const unsigned char *kp = p + 1, *ke;
		size_t kn;
		int rc, code = key_word(kp, e, &kn);
		if (code >= 0) {
			ke = kp + kn + 1;
		} else {
			int kplain = 1;
			ke = tk__scan_special(kp, e);
			if (ke < e && *ke == '"')
				ke++;
			else if ((rc = tk__json_decode_string(kp, e, &s->key, &ke, &kplain, &s->je)))
				return rc;
			kn = (size_t)(ke - kp - 1);
			code = K_OTHER;
		}
		p = tk__skip_ws(ke, e);
		if (p >= e)
			return TK__J_MORE;
		if (*p != ':')
			return jbad(s, p, "expected ':' after key in event object");
		p = tk__skip_ws(p + 1, e);
		if (p >= e)
			return TK__J_MORE;
		rc = event_member(r, code, kp, kn, p, e, &p);
		if (rc)
			return rc;
		p = tk__skip_ws(p, e);
		if (p >= e)
			return TK__J_MORE;
		if (*p == '}')
			break;
		if (*p != ',')
			return jbad(s, p, "expected ',' or '}' after a member of an event object");
		p = tk__skip_ws(p + 1, e);
		if (p >= e)
			return TK__J_MORE;
	}
done:
	s->dup_events += (uint64_t)s->dup;
	s->rounded += s->ev_rounded;
	ev->has |= TK_HAS_VALID_JSON; /* args and extra were canonicalized above */
	if (text_view(&r->args, &ev->args) || text_view(&r->extra, &ev->extra))
		return jbad(s, p, "out of memory");
	*endp = p + 1;
	return TK__J_OK;
}

/* A member of the top-level object at p ('"'). */
static int top_member(tk_reader *r, const unsigned char *p, const unsigned char *e,
                      const unsigned char **endp)
{
	jstate *s = r->fs;
	const unsigned char *kp = p + 1, *ke;
	int kplain;
	int rc = tk__json_decode_string(kp, e, &s->key, &ke, &kplain, &s->je);
	if (rc)
		return rc;
	const char *key = kplain ? (const char *)kp : s->key.p;
	size_t kn = kplain ? (size_t)(ke - kp - 1) : s->key.len;
	p = tk__skip_ws(ke, e);
	if (p >= e)
		return TK__J_MORE;
	if (*p != ':')
		return jbad(s, p, "expected ':' after key in top-level object");
	p = tk__skip_ws(p + 1, e);
	if (p >= e)
		return TK__J_MORE;
	if (kn == 11 && memcmp(key, "traceEvents", 11) == 0) {
		if (s->seen_events)
			return jbad(s, kp, "\"traceEvents\" appears twice");
		if (*p != '[')
			return jbad(s, p, "\"traceEvents\" must be an array");
		s->seen_events = 1;
		s->st = ST_EV_FIRST;
		*endp = p + 1;
		return TK__J_OK;
	}
	r->scratch.len = 0;
	rc = tk__json_canon_value(p, e, &r->scratch, endp, r->opts.max_depth, &s->je);
	if (rc)
		return rc;
	/* key was decoded into s->key or lies in the buffer: both survive this call */
	if (tk__reader_add_meta(r, key, kn, r->scratch.p, r->scratch.len, s->seen_events))
		return jbad(s, p, "out of memory");
	s->st = ST_OBJ_NEXT;
	return TK__J_OK;
}

static void describe(const unsigned char *p, const unsigned char *e, char *d, size_t cap)
{
	if (p >= e)
		snprintf(d, cap, "end of input");
	else if (*p >= 0x20 && *p < 0x7f)
		snprintf(d, cap, "'%c'", *p);
	else
		snprintf(d, cap, "byte 0x%02x", *p);
}

/* Parse the next unit (structure token, metadata member or event). */
static int step(tk_reader *r, const unsigned char **endp)
{
	jstate *s = r->fs;
	const unsigned char *p = r->buf + r->pos, *e = r->buf + r->end;
	if (s->st == ST_START && e - p >= 3 && p[0] == 0xEF && p[1] == 0xBB && p[2] == 0xBF)
		p += 3;
	p = tk__skip_ws(p, e);
	if (p >= e)
		return s->st == ST_DONE || s->st == ST_END ? (r->eof ? STEP_END : TK__J_MORE) : TK__J_MORE;
	switch (s->st) {
	case ST_START:
		s->st = *p == '{' ? ST_OBJ_FIRST : ST_EV_FIRST;
		r->bare_array = *p == '[';
		if (r->bare_array)
			s->seen_events = 1;
		*endp = p + 1;
		return TK__J_OK;
	case ST_OBJ_FIRST:
	case ST_OBJ_NEXT:
		if (*p == '}') {
			if (!s->seen_events)
				return jbad(s, p, "the top-level object has no \"traceEvents\" array");
			s->st = ST_DONE;
			*endp = p + 1;
			return TK__J_OK;
		}
		if (s->st == ST_OBJ_NEXT) {
			if (*p != ',')
				return jbad(s, p, "expected ',' or '}' after a top-level member");
			p = tk__skip_ws(p + 1, e);
			if (p >= e)
				return TK__J_MORE;
		}
		if (*p != '"')
			return jbad(s, p, "expected a string key in the top-level object");
		return top_member(r, p, e, endp);
	case ST_EV_FIRST:
	case ST_EV_NEXT:
		if (*p == ']') {
			s->events_done = 1;
			s->st = r->bare_array ? ST_DONE : ST_OBJ_NEXT;
			*endp = p + 1;
			return TK__J_OK;
		}
		if (s->st == ST_EV_NEXT) {
			if (*p != ',')
				return jbad(s, p, "expected ',' or ']' after an event");
			p = tk__skip_ws(p + 1, e);
			if (p >= e)
				return TK__J_MORE;
		}
		if (*p != '{')
			return jbad(s, p, "expected an event object");
		{
			int rc = parse_event(r, p, e, endp);
			if (rc)
				return rc;
		}
		s->st = ST_EV_NEXT;
		return STEP_EVENT;
	case ST_DONE:
		return jbad(s, p, "unexpected data after the end of the trace");
	default:
		return STEP_END;
	}
}

static int truncated(tk_reader *r)
{
	jstate *s = r->fs;
	uint64_t at = r->base + r->pos, line, col;
	tk__reader_linecol(r, at, &line, &col);
	const char *where = !s->seen_events       ? "before \"traceEvents\""
	                    : !s->events_done      ? "inside \"traceEvents\""
	                                           : "after \"traceEvents\"";
	char gz[64] = "";
	if (r->src.cut)
		snprintf(gz, sizeof gz, " (the %s stream is cut off)", r->src.cut);
	uint64_t dropped = r->stats.bytes_decoded - at;
	if (r->opts.strict)
		return tk__reader_fail_at(r, TK_ERR_TRUNCATED, at,
		                          "input ends early %s%s; %llu complete events before that point",
		                          where, gz, (unsigned long long)r->stats.events);
	r->stats.truncated = 1;
	r->stats.dropped_bytes = dropped;
	s->st = ST_END;
	if (tk__err_warn(&r->err,
	                    "%s:%llu:%llu: input ends early %s%s at byte %llu: kept %llu complete events, "
	                    "dropped the last %llu bytes",
	                    r->name, (unsigned long long)line, (unsigned long long)col, where, gz,
	                    (unsigned long long)r->stats.bytes_decoded, (unsigned long long)r->stats.events,
	                    (unsigned long long)dropped))
		return TK_ERR_NOMEM;
	return TK_EOF;
}

static int finish(tk_reader *r)
{
	jstate *s = r->fs;
	if (r->src.cut) {
		/* the JSON is complete but the compressed stream lost its end (and checksum) */
		if (r->opts.strict)
			return tk__err_set(&r->err, TK_ERR_TRUNCATED, "%s: the %s stream is cut off at byte %llu of its input",
			                   r->name, r->src.cut, (unsigned long long)tk__src_bytes_in(&r->src));
		r->stats.truncated = 1;
		tk__err_warn(&r->err,
		             "%s: the %s stream is cut off at byte %llu of its input (its end and "
		             "checksum are missing); kept %llu complete events",
		             r->name, r->src.cut, (unsigned long long)tk__src_bytes_in(&r->src),
		             (unsigned long long)r->stats.events);
	}
	if (s->rounded)
		tk__err_warn(&r->err, "%s: %llu time values had digits below a nanosecond and were rounded",
		                r->name, (unsigned long long)s->rounded);
	if (s->dup_events)
		tk__err_warn(&r->err, "%s: %llu events give a member twice (such as two \"ts\"): the first is "
		             "the event's, the others are kept as extra members", r->name,
		             (unsigned long long)s->dup_events);
	s->st = ST_END;
	return TK_EOF;
}

static int report_bad(tk_reader *r)
{
	jstate *s = r->fs;
	char found[32];
	if (strcmp(s->je.msg, "out of memory") == 0) /* the input is not to blame */
		return tk__reader_fail_at(r, TK_ERR_NOMEM, r->base + (uint64_t)(s->je.at - r->buf), "out of memory");
	describe(s->je.at, r->buf + r->end, found, sizeof found);
	int code = strstr(s->je.msg, "deeper") ? TK_ERR_LIMIT : TK_ERR_FORMAT;
	return tk__reader_fail_at(r, code, r->base + (uint64_t)(s->je.at - r->buf), "%s, found %s",
	                          s->je.msg, found);
}

void tk__reader_set_lazy_args(tk_reader *r, int on)
{
	r->lazy_args = on && r->fmt == &tk__format_json;
	if (!on)
		r->lazy_pending = 0;
}

int tk__reader_lazy_args(const tk_reader *r, size_t *clen)
{
	*clen = r->lazy_pending ? r->lazy_clen : 0;
	return r->lazy_pending;
}

int tk__reader_take_args(tk_reader *r)
{
	if (!r->lazy_pending)
		return 0;
	jstate *s = r->fs;
	const unsigned char *end;
	r->lazy_pending = 0;
	r->args.len = 0;
	s->je.repaired = 0;
	int rc = tk__json_canon_value(r->lazy_at, r->buf + r->end, &r->args, &end, r->opts.max_depth, &s->je);
	if (rc == TK__J_BAD || rc == TK__J_MORE) { /* (more: brackets matched, the rest did not) */
		rc = rc == TK__J_BAD ? report_bad(r)
		                     : tk__reader_fail_at(r, TK_ERR_FORMAT, r->base + (uint64_t)(r->lazy_at - r->buf),
		                                          "malformed \"args\" object");
		tk__reader_blame_filter(r); /* as tk_reader_next does */
		return rc;
	}
	if (text_view(&r->args, &r->ev.args))
		return tk__err_set(&r->err, TK_ERR_NOMEM, "%s: out of memory", r->name);
	r->stats.repaired_strings += (uint64_t)s->je.repaired;
	return 0;
}

static int next_unit(tk_reader *r, const tk_event **ev)
{
	jstate *s = r->fs;
	for (;;) {
		const unsigned char *endp = NULL;
		s->je.repaired = 0;
		r->lazy_tried = 0;
		int rc = step(r, &endp);
		if ((rc == TK__J_MORE || rc == TK__J_BAD) && r->lazy_tried) {
			/* an unchecked args object may hide what a full parse finds
			 * (or end elsewhere): this unit is parsed in full, so that it
			 * ends, fails or is cut exactly as without the skip */
			r->lazy_args = r->lazy_pending = 0;
			continue;
		}
		if (rc == TK__J_MORE) {
			if (r->eof)
				return truncated(r);
			int m = tk__reader_more(r);
			if (m < 0)
				return m;
			continue;
		}
		if (rc == TK__J_BAD)
			return report_bad(r);
		if (rc == STEP_END)
			return finish(r);
		if ((size_t)(endp - (r->buf + r->pos)) > r->opts.max_value_bytes)
			return tk__reader_fail_at(r, TK_ERR_LIMIT, r->base + r->pos,
			                          "a single value is larger than the limit of %zu bytes",
			                          r->opts.max_value_bytes);
		r->pos = (size_t)(endp - r->buf);
		r->stats.repaired_strings += (uint64_t)s->je.repaired;
		if (rc == STEP_EVENT) {
			*ev = &r->ev;
			return TK_OK;
		}
	}
}

/* ---- parsing on several threads (par.c, docs/threads.md) ---- */

/* The offset just after the '}' of "}" ws "," ws "{" in p[0..n),
 * searched back from the end to n / 2: first where a newline lies between
 * the two events (Kineto's and our layout), then anywhere; 0 if none. The
 * place is only probable (the text may lie inside a string or an args
 * object): the parse of the block before it says whether it is right. */
static size_t json_cut(const unsigned char *p, size_t n)
{
	size_t lo = n / 2;
	for (int pass = 0; pass < 2; pass++) {
		size_t hi = n;
		for (;;) {
			const unsigned char *m = hi > lo ? memrchr(p + lo, pass ? '{' : '\n', hi - lo) : NULL;
			if (!m)
				break;
			hi = (size_t)(m - p);
			/* forward: whitespace to the next event's '{' */
			size_t f = hi;
			while (f < n && TK__IS_WS(p[f]))
				f++;
			if (f >= n || p[f] != '{')
				continue;
			/* back: whitespace, ',', whitespace, '}' */
			size_t b = hi;
			while (b > 0 && TK__IS_WS(p[b - 1]))
				b--;
			if (b == 0 || p[b - 1] != ',')
				continue;
			b--;
			while (b > 0 && TK__IS_WS(p[b - 1]))
				b--;
			if (b > 0 && p[b - 1] == '}')
				return b;
		}
	}
	return 0;
}

/* The events of p[0..n) on a worker reader, from `state` (after an event):
 * each unit as next_unit() parses it, up to the first that is not a whole
 * event within the limits. */
static size_t json_par_parse(tk_reader *w, const unsigned char *p, size_t n, int state,
                             int (*emit)(void *ctx, const tk_event *ev), void *ctx, uint64_t *counts)
{
	jstate *s = w->fs;
	s->st = state;
	s->rounded = s->dup_events = 0;
	w->lazy_args = w->opts.skip_args; /* skipped args are never taken */
	w->buf = (unsigned char *)(uintptr_t)p; /* only read */
	w->pos = 0;
	w->end = n;
	w->eof = 0;
	uint64_t repaired = 0;
	while (w->pos < n) {
		const unsigned char *endp = NULL;
		uint64_t rounded = s->rounded, dups = s->dup_events;
		s->je.repaired = 0;
		int rc = step(w, &endp);
		if (rc == STEP_EVENT && w->opts.skip_args)
			w->ev.args = (tk_sv){NULL, 0}; /* also where the skip fell back to parsing them */
		if (rc != STEP_EVENT || (size_t)(endp - (p + w->pos)) > w->opts.max_value_bytes ||
		    emit(ctx, &w->ev)) {
			s->rounded = rounded;
			s->dup_events = dups;
			break;
		}
		repaired += (uint64_t)s->je.repaired;
		w->pos = (size_t)(endp - p);
	}
	counts[0] = s->rounded;
	counts[1] = s->dup_events;
	counts[TK__PAR_COUNTS - 1] = repaired;
	size_t stop = w->pos;
	w->buf = NULL;
	w->pos = w->end = 0;
	return stop;
}

static void json_absorb(tk_reader *r, const uint64_t *counts)
{
	jstate *s = r->fs;
	s->rounded += counts[0];
	s->dup_events += counts[1];
}

static const tk__par_fmt json_par = {json_cut, json_par_parse, json_absorb, ST_EV_NEXT};

static int json_next(tk_reader *r, const tk_event **ev)
{
	jstate *s = r->fs;
	if (s->st == ST_END)
		return TK_EOF;
	if (tk__par_active(r->par)) {
		int rc = tk__par_next(r, ev);
		if (rc != TK__PAR_SEQ)
			return rc;
	}
	int lazy = r->lazy_args;
	int rc = next_unit(r, ev);
	r->lazy_args = lazy;
	if (rc == TK_OK && r->opts.skip_args)
		r->ev.args = (tk_sv){NULL, 0}; /* also where the skip fell back to parsing them */
	/* just past an event: the threads take over, or take over again (not
	 * for trace-split's lazy pass, whose args are taken one by one) */
	if (rc == TK_OK && s->st == ST_EV_NEXT && r->opts.threads > 1 && (!lazy || r->opts.skip_args)) {
		if (r->par)
			tk__par_resume(r);
		else if (!r->par_tried)
			tk__par_start(r, &json_par);
	}
	return rc;
}

static const tk__fmt json_rd = {json_bid, json_open, json_next, json_free};

/* ---- writing ---- */

typedef struct jw {
	int header_done;
	int n_written;
} jw;

static int jw_open(tk_writer *w)
{
	w->fs = calloc(1, sizeof(jw));
	return w->fs ? 0 : TK_ERR_NOMEM;
}

static void jw_free(tk_writer *w)
{
	free(w->fs);
	w->fs = NULL;
}

/* What formats an event's text: the writer (NULL when it is formatted
 * ahead, on a reader's thread, where an error only says "not here") and
 * the strings repaired on the way. */
typedef struct jm {
	tk_writer *w;
	uint64_t repaired;
} jm;

static int put_str(jm *m, tk__buf *o, const char *s, size_t n)
{
	if (tk__buf_putc(o, '"'))
		return TK_ERR_NOMEM;
	int rc = tk__json_escape(o, s, n);
	if (rc < 0)
		return rc;
	m->repaired += (uint64_t)rc;
	return tk__buf_putc(o, '"');
}

/* Canonicalize caller-supplied JSON text (members: an object's, without
 * braces); 0 or an error naming the output, the event (ev; NULL for
 * metadata) and the byte of the text where it goes wrong. */
static int canon(jm *m, tk__buf *o, const char *s, size_t n, int members, const char *what,
                 const tk_event *ev)
{
	int repaired = 0;
	size_t at = 0;
	const char *why = "";
	int rc = tk__json_canon_text_at(o, s, n, members, &repaired, &at, &why);
	m->repaired += (uint64_t)repaired;
	tk_writer *w = m->w;
	if (rc != TK_ERR_ARG || !w)
		return rc;
	char where[200] = "";
	if (ev)
		snprintf(where, sizeof where, " of event %llu ('%.*s')", (unsigned long long)w->events + 1,
		         ev->name.ptr ? (int)(ev->name.len < 80 ? ev->name.len : 80) : 0,
		         ev->name.ptr ? ev->name.ptr : "");
	return tk__err_set(&w->err, TK_ERR_ARG, "%s: the %s%s %s not valid JSON: %s at byte %zu of %zu",
	                   w->sink.path ? w->sink.path : "output", what, where, ev ? "are" : "is", why, at, n);
}

static int jw_add_meta(tk_writer *w, tk_sv key, tk_sv json, int after)
{
	tk__buf b = {0};
	jm m = {w, 0};
	int rc = put_str(&m, &b, key.ptr, key.len);
	if (!rc)
		rc = tk__buf_putc(&b, ':');
	if (!rc) {
		char what[120];
		snprintf(what, sizeof what, "value of metadata member '%.*s'", (int)(key.len < 80 ? key.len : 80),
		         key.ptr);
		rc = canon(&m, &b, json.ptr, json.len, 0, what, NULL);
	}
	w->repaired += m.repaired;
	if (rc) {
		tk__buf_free(&b);
		return rc;
	}
	if (tk__grow(&w->meta, &w->meta_cap, w->n_meta + 1, sizeof *w->meta, 16)) {
		tk__buf_free(&b);
		return TK_ERR_NOMEM;
	}
	jw *s = w->fs;
	w->meta[w->n_meta++] = (tk__meta){{NULL, 0}, b.p, b.len, s->header_done || after};
	return 0;
}

static int header(tk_writer *w)
{
	jw *s = w->fs;
	tk__buf *o = &w->out;
	s->header_done = 1;
	if (tk__buf_putc(o, '{'))
		return TK_ERR_NOMEM;
	for (size_t i = 0; i < w->n_meta; i++) {
		if (w->meta[i].after)
			continue; /* written by close */
		if (tk__buf_append(o, w->meta[i].json, w->meta[i].json_len) || tk__buf_append(o, ",\n", 2))
			return TK_ERR_NOMEM;
		w->meta[i].after = 2; /* written */
	}
	return tk__buf_append(o, "\"traceEvents\":[", 15);
}

static int put_int(tk__buf *o, int64_t v)
{
	char t[24], *e = t + sizeof t, *p;
	uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
	p = tk__fmt_u64(e, u);
	if (v < 0)
		*--p = '-';
	return tk__buf_append(o, p, (size_t)(e - p));
}

/* Nanoseconds as decimal microseconds: integer when whole, else three decimals. */
static int put_us(tk__buf *o, int64_t ns)
{
	char t[32], *e = t + sizeof t, *p = e;
	uint64_t u = ns < 0 ? 0 - (uint64_t)ns : (uint64_t)ns;
	unsigned frac = (unsigned)(u % 1000);
	if (frac) {
		*--p = (char)('0' + frac % 10);
		*--p = (char)('0' + frac / 10 % 10);
		*--p = (char)('0' + frac / 100);
		*--p = '.';
	}
	p = tk__fmt_u64(p, u / 1000);
	if (ns < 0)
		*--p = '-';
	return tk__buf_append(o, p, (size_t)(e - p));
}

static int put_id(jm *m, tk__buf *o, const char *key, size_t kn, const tk_id *id)
{
	if (id->kind == TK_ID_NONE)
		return 0;
	if (tk__buf_append(o, key, kn))
		return TK_ERR_NOMEM;
	if (id->kind == TK_ID_INT)
		return put_int(o, id->num);
	return put_str(m, o, id->str.ptr ? id->str.ptr : "", id->str.ptr ? id->str.len : 0);
}

/* Appends the event's members; `first` tracks the comma. */
/* 1 when extra members (canonical) hold a member named "args": an input
 * that gave args twice. The event's own args then go before them, so that
 * reading the output gives the same event (the first args is the event's). */
static int extra_has_args(const tk_event *ev)
{
	if (!(ev->has & TK_HAS_VALID_JSON) || !memmem(ev->extra.ptr, ev->extra.len, "\"args\":", 7))
		return 0;
	tk__buf b = {0};
	int found = 0;
	if (!tk__buf_putc(&b, '{') && !tk__buf_append(&b, ev->extra.ptr, ev->extra.len) && !tk__buf_putc(&b, '}')) {
		tk__js_iter it;
		tk_sv k, v;
		if (tk__js_obj(&it, (tk_sv){b.p, b.len}) == 0)
			while (!found && tk__js_member(&it, &k, &v) == 1)
				found = k.len == 4 && memcmp(k.ptr, "args", 4) == 0;
	}
	tk__buf_free(&b);
	return found;
}

static int put_args(jm *m, tk__buf *o, const tk_event *ev)
{
	int rc;
	if (tk__buf_append(o, "\"args\":", 7))
		return TK_ERR_NOMEM;
	if (ev->has & TK_HAS_VALID_JSON)
		rc = tk__buf_append(o, ev->args.ptr, ev->args.len);
	else
		rc = canon(m, o, ev->args.ptr, ev->args.len, 0, "args", ev);
	if (rc || tk__buf_putc(o, ','))
		return rc ? rc : TK_ERR_NOMEM;
	return 0;
}

static int members(jm *m, tk__buf *o, const tk_event *ev)
{
	int rc = 0;
	if (ev->has & TK_HAS_PH) {
		char ph[8] = {'"', 'p', 'h', '"', ':', '"', ev->ph, '"'};
		if (!tk__json_ph_ok((unsigned char)ev->ph))
			return m->w ? tk__err_set(&m->w->err, TK_ERR_ARG, "event phase must be a printable ASCII character")
			            : TK_ERR_ARG;
		rc = tk__buf_append(o, ph, 8) || tk__buf_putc(o, ',');
	}
	if (!rc && (ev->has & TK_HAS_CAT))
		rc = tk__buf_append(o, "\"cat\":", 6) || put_str(m, o, ev->cat.ptr, ev->cat.len) ||
		     tk__buf_putc(o, ',');
	if (!rc && (ev->has & TK_HAS_NAME))
		rc = tk__buf_append(o, "\"name\":", 7) || put_str(m, o, ev->name.ptr, ev->name.len) ||
		     tk__buf_putc(o, ',');
	if (!rc && ev->pid.kind)
		rc = put_id(m, o, "\"pid\":", 6, &ev->pid) || tk__buf_putc(o, ',');
	if (!rc && ev->tid.kind)
		rc = put_id(m, o, "\"tid\":", 6, &ev->tid) || tk__buf_putc(o, ',');
	if (!rc && (ev->has & TK_HAS_TS))
		rc = tk__buf_append(o, "\"ts\":", 5) || put_us(o, ev->ts) || tk__buf_putc(o, ',');
	if (!rc && (ev->has & TK_HAS_DUR))
		rc = tk__buf_append(o, "\"dur\":", 6) || put_us(o, ev->dur) || tk__buf_putc(o, ',');
	if (!rc && ev->id.kind)
		rc = put_id(m, o, "\"id\":", 5, &ev->id) || tk__buf_putc(o, ',');
	if (rc)
		return TK_ERR_NOMEM;
	int args_first = ev->args.ptr && ev->extra.ptr && ev->extra.len && extra_has_args(ev);
	if (args_first && (rc = put_args(m, o, ev)))
		return rc;
	if (ev->extra.ptr && ev->extra.len) {
		if (ev->has & TK_HAS_VALID_JSON) {
			rc = tk__buf_append(o, ev->extra.ptr, ev->extra.len);
		} else {
			rc = canon(m, o, ev->extra.ptr, ev->extra.len, 1, "extra members", ev);
		}
		if (rc || tk__buf_putc(o, ','))
			return rc ? rc : TK_ERR_NOMEM;
	}
	if (ev->args.ptr && !args_first) {
		if ((rc = put_args(m, o, ev)))
			return rc;
	}
	return 0;
}

/* The header when it is due, then the separator before an event. */
static int event_start(tk_writer *w)
{
	jw *s = w->fs;
	tk__buf *o = &w->out;
	if (!s->header_done && header(w))
		return TK_ERR_NOMEM;
	return tk__buf_append(o, s->n_written ? ",\n{" : "\n{", s->n_written ? 3 : 2) ? TK_ERR_NOMEM : 0;
}

/* ev's members without the last comma appended to o: 0, or an error with o
 * as it was. */
static int event_text(jm *m, tk__buf *o, const tk_event *ev)
{
	size_t start = o->len;
	int rc = members(m, o, ev);
	if (rc) {
		o->len = start;
		return rc;
	}
	if (o->len > start)
		o->len--; /* the last comma */
	return 0;
}

static int jw_write(tk_writer *w, const tk_event *ev)
{
	jw *s = w->fs;
	if (event_start(w))
		return TK_ERR_NOMEM;
	jm m = {w, 0};
	int rc = event_text(&m, &w->out, ev);
	w->repaired += m.repaired;
	if (rc)
		return rc;
	s->n_written++;
	return tk__buf_putc(&w->out, '}');
}

int tk__json_event_text(tk__buf *o, const tk_event *ev, uint64_t *repaired)
{
	jm m = {NULL, 0};
	int rc = event_text(&m, o, ev);
	*repaired = m.repaired;
	return rc;
}

/* An event as tk__json_event_text wrote it (ahead, on a reader's thread). */
static int jw_write_text(tk_writer *w, const char *p, size_t n, uint64_t repaired)
{
	jw *s = w->fs;
	if (event_start(w) || tk__buf_append(&w->out, p, n) || tk__buf_putc(&w->out, '}'))
		return TK_ERR_NOMEM;
	s->n_written++;
	w->repaired += repaired;
	return 0;
}

static int jw_close(tk_writer *w)
{
	jw *s = w->fs;
	tk__buf *o = &w->out;
	if (!s->header_done && header(w))
		return TK_ERR_NOMEM;
	if (tk__buf_append(o, "\n]", 2))
		return TK_ERR_NOMEM;
	for (size_t i = 0; i < w->n_meta; i++) {
		if (w->meta[i].after == 2)
			continue;
		if (tk__buf_append(o, ",\n", 2) || tk__buf_append(o, w->meta[i].json, w->meta[i].json_len))
			return TK_ERR_NOMEM;
	}
	return tk__buf_append(o, "}\n", 2);
}

/* What jw_close() appends, for the byte budget. */
static uint64_t jw_close_bytes(const tk_writer *w)
{
	uint64_t n = 2 + 2; /* "\n]" and "}\n" */
	for (size_t i = 0; i < w->n_meta; i++)
		if (w->meta[i].after != 2)
			n += 2 + w->meta[i].json_len;
	return n;
}

static const tk__wfmt json_wr = {sizeof(jw), jw_open, jw_add_meta, jw_close_bytes, jw_write, jw_close, jw_free,
                                 jw_write_text};

static const char *const json_suffixes[] = {".json", NULL};

const tk__format tk__format_json = {TK_FORMAT_JSON, "json", json_suffixes, TK__FMT_WHOLE_GZIP, &json_rd, &json_wr};
