/* jscan.h: the one scanner of JSON text held in memory without padding (args, extra members, metadata values): skip a value, walk an object's members, find a member, read an integer or a dims list. */
#ifndef TK_CORE_JSCAN_H
#define TK_CORE_JSCAN_H

#include <stddef.h>
#include <stdint.h>

#include "tracekit/tracekit.h"

/* Compact JSON (what the readers make) is the fast path; whitespace
 * between tokens is accepted everywhere. The scanner checks structure
 * (strings, brackets, separators), not the values' spelling. */

static inline const char *tk__js_ws(const char *p, const char *e)
{
	while (p < e && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t'))
		p++;
	return p;
}
/* p just past an opening quote: just past the closing quote, or NULL. */
const char *tk__js_string_end(const char *p, const char *e);
/* The end of the value that starts at p, or NULL if it does not end before
 * e. A scalar ends at the first ',', ':', '}', ']' or whitespace. */
const char *tk__js_skip(const char *p, const char *e);

/* Walking the members of an object. */
typedef struct tk__js_iter {
	const char *p, *e;
	int n; /* members returned so far */
} tk__js_iter;
/* 0, or TK_ERR_FORMAT when obj is not an object. */
int tk__js_obj(tk__js_iter *it, tk_sv obj);
/* 1 with the next member (key: the raw text between its quotes, escapes
 * not decoded; val: the value's text), 0 at the closing brace, or
 * TK_ERR_FORMAT. */
int tk__js_member(tk__js_iter *it, tk_sv *key, tk_sv *val);
/* The first member named key (raw text compared): 0, TK_EOF when absent,
 * TK_ERR_FORMAT when obj is not a well-formed object (up to the member). */
int tk__js_find(tk_sv obj, const char *key, size_t klen, tk_sv *val);
/* A JSON integer (the whole of v): 0 or -1. */
int tk__js_int(tk_sv v, int64_t *out);
/* Room in d for cap items and cap values (d zeroed): 0 or TK_ERR_NOMEM. */
int tk__dims_alloc(tk_dims *d, size_t cap);
/* A list of integer lists, as tk_args_get_dims: 0, TK_ERR_FORMAT, TK_ERR_NOMEM. */
int tk__js_dims(tk_sv v, tk_dims *out);
/* The decoded text of the JSON string v (quotes included) into buf, as
 * tk_args_get_str: 0 or TK_ERR_FORMAT. */
int tk__js_str(tk_sv v, char *buf, size_t cap, size_t *len);
struct tk__buf;
/* The decoded text of the JSON string v (quotes included; its end not
 * checked) into b, emptied first: 0, TK_ERR_FORMAT or TK_ERR_NOMEM. */
int tk__js_str_buf(tk_sv v, struct tk__buf *b);

#endif
