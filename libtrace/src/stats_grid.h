/* stats_grid.h: a table of display and raw cells rendered as text, CSV, JSON, Markdown or HTML. */
#ifndef TK_STATS_GRID_H
#define TK_STATS_GRID_H

#include "stats_internal.h"

typedef struct tk__gcol {
	char head[48];    /* display header */
	char id[48];      /* CSV/JSON key */
	int width;        /* text width; 0 = fit the widest cell (nsys look) */
	int left;         /* left-aligned */
} tk__gcol;

typedef struct tk__grid {
	int torch;            /* torch's look: fixed widths, trailing spaces */
	tk__gcol *cols; /* as many as the table has: a column per rank of a run */
	size_t n_cols, cap_cols;
	char **cells;         /* per row: n_cols display strings then n_cols raw strings */
	unsigned char *isnum; /* per column: raw value is a JSON number */
	size_t n_rows, cap_rows;
	tk__buf foot;         /* display footer lines */
	tk__buf foot_json;    /* "key":value,... */
} tk__grid;

int tk__grid_col(tk__grid *g, const char *head, const char *id, int width, int left, int isnum);
/* Start a row; then set each column with tk__grid_set. */
int tk__grid_row(tk__grid *g);
int tk__grid_set(tk__grid *g, size_t col, const char *disp, const char *raw);
/* A footer line of the text table (NULL: none) and a member of the JSON
 * "totals" (json_key NULL: none). */
int tk__grid_footer(tk__grid *g, const char *line, const char *json_key, const char *json_val);
/* digits ("-1234567.5") with thousands separators ("-1,234,567.5"), as nsys prints numbers. */
void tk__thousands(char *b, size_t n, const char *digits);
/* Number cells as nsys prints them: shown with thousands separators, raw
 * without. */
int tk__grid_set_i64(tk__grid *g, size_t col, int64_t v);
int tk__grid_set_num(tk__grid *g, size_t col, double v, int decimals);
/* A footer member whose value is a JSON string (no text line). */
int tk__grid_footer_str(tk__grid *g, const char *json_key, const char *value);
/* The end of every tk_stats_format_*: with rc 0, g rendered in format
 * (only when it has rows, but always as JSON and CSV) into *out,
 * NUL-terminated, its length in *len (may be NULL); g freed either way.
 * Returns rc, or TK_ERR_NOMEM. */
int tk__grid_output(tk__grid *g, int rc, size_t rows, int format, char **out, size_t *len);
/* Stats object i's label: o->labels[i], else "rank i". */
void tk__grid_label(const tk_table_opts *o, size_t i, char *buf, size_t cap);
int tk__grid_render(const tk__grid *g, int format, tk__buf *out);
/* n bytes of text in HTML: &, <, >, " as entities; 0 or TK_ERR_NOMEM. */
int tk__html_escape(tk__buf *o, const char *s, size_t n);
void tk__grid_free(tk__grid *g);

#endif
