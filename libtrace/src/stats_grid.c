/* stats_grid.c: renders a grid of cells as torch/nsys text, CSV, strict JSON or Markdown. */
#include <stdlib.h>

#include "stats_grid.h"

int tk__grid_col(tk__grid *g, const char *head, const char *id, int width, int left, int isnum)
{
	if (g->n_rows)
		return TK_ERR_ARG; /* columns come before the rows */
	if (tk__grow(&g->cols, &g->cap_cols, g->n_cols + 1, sizeof *g->cols, 16))
		return TK_ERR_NOMEM;
	size_t c = g->n_cols++;
	snprintf(g->cols[c].head, sizeof g->cols[c].head, "%s", head);
	snprintf(g->cols[c].id, sizeof g->cols[c].id, "%s", id);
	g->cols[c].width = width;
	g->cols[c].left = left;
	unsigned char *n = realloc(g->isnum, g->n_cols);
	if (!n)
		return TK_ERR_NOMEM;
	g->isnum = n;
	g->isnum[c] = (unsigned char)isnum;
	return 0;
}

int tk__grid_row(tk__grid *g)
{
	size_t per = 2 * g->n_cols;
	if (tk__grow(&g->cells, &g->cap_rows, g->n_rows + 1, per * sizeof *g->cells, 64))
		return TK_ERR_NOMEM;
	memset(g->cells + g->n_rows * per, 0, per * sizeof *g->cells);
	g->n_rows++;
	return 0;
}

int tk__grid_set(tk__grid *g, size_t col, const char *disp, const char *raw)
{
	char **row = g->cells + (g->n_rows - 1) * 2 * g->n_cols;
	row[col] = tk__strdup(disp);
	row[g->n_cols + col] = tk__strdup(raw ? raw : disp);
	return row[col] && row[g->n_cols + col] ? 0 : TK_ERR_NOMEM;
}

/* A JSON string with quotes; invalid UTF-8 is repaired by the escaper. */
static int jstr(tk__buf *o, const char *s)
{
	if (tk__buf_putc(o, '"') || tk__json_escape(o, s, strlen(s)) < 0)
		return TK_ERR_NOMEM;
	return tk__buf_putc(o, '"');
}

int tk__grid_footer(tk__grid *g, const char *line, const char *key, const char *val)
{
	if (line && (tk__buf_append(&g->foot, line, strlen(line)) || tk__buf_putc(&g->foot, '\n')))
		return TK_ERR_NOMEM;
	if (!key)
		return 0;
	if (g->foot_json.len && tk__buf_putc(&g->foot_json, ','))
		return TK_ERR_NOMEM;
	if (jstr(&g->foot_json, key) || tk__buf_putc(&g->foot_json, ':'))
		return TK_ERR_NOMEM;
	return tk__buf_append(&g->foot_json, val, strlen(val));
}

void tk__grid_free(tk__grid *g)
{
	for (size_t i = 0; i < g->n_rows * 2 * g->n_cols; i++)
		free(g->cells[i]);
	free(g->cells);
	free(g->isnum);
	free(g->cols);
	tk__buf_free(&g->foot);
	tk__buf_free(&g->foot_json);
}

static const char *cell(const tk__grid *g, size_t r, size_t c, int raw)
{
	const char *s = g->cells[r * 2 * g->n_cols + (raw ? g->n_cols : 0) + c];
	return s ? s : "";
}

static int pad(tk__buf *o, char ch, size_t n)
{
	while (n--)
		if (tk__buf_putc(o, ch))
			return TK_ERR_NOMEM;
	return 0;
}

/* One cell of the text form: right-aligned unless the column is left-aligned. */
static int put_cell(tk__buf *o, const char *s, size_t w, int left)
{
	size_t n = strlen(s), fill = n < w ? w - n : 0;
	if (!left && pad(o, ' ', fill))
		return TK_ERR_NOMEM;
	if (tk__buf_append(o, s, n))
		return TK_ERR_NOMEM;
	return left > 0 ? pad(o, ' ', fill) : 0;
}

static int text_line(const tk__grid *g, tk__buf *o, const size_t *w, long r)
{
	int rc = g->torch ? 0 : tk__buf_putc(o, ' ');
	for (size_t c = 0; c < g->n_cols && !rc; c++) {
		const char *s = r < 0 ? g->cols[c].head : cell(g, (size_t)r, c, 0);
		/* a left-aligned last column is not padded (nsys look) */
		int left = g->cols[c].left && c + 1 == g->n_cols && !g->torch ? -1 : g->cols[c].left;
		rc = put_cell(o, s, w[c], left);
		if (!rc && (g->torch || c + 1 < g->n_cols))
			rc = pad(o, ' ', 2);
	}
	return rc ? rc : tk__buf_putc(o, '\n');
}

static int text_sep(const tk__grid *g, tk__buf *o, const size_t *w)
{
	int rc = g->torch ? 0 : tk__buf_putc(o, ' ');
	for (size_t c = 0; c < g->n_cols && !rc; c++) {
		rc = pad(o, '-', w[c]);
		if (!rc && (g->torch || c + 1 < g->n_cols))
			rc = pad(o, ' ', 2);
	}
	return rc ? rc : tk__buf_putc(o, '\n');
}

/* torch's _build_table look (fixed widths) or nsys's (fit the widest cell). */
static int render_text(const tk__grid *g, tk__buf *o)
{
	size_t *w = malloc((g->n_cols ? g->n_cols : 1) * sizeof *w);
	if (!w)
		return TK_ERR_NOMEM;
	for (size_t c = 0; c < g->n_cols; c++) {
		w[c] = g->cols[c].width > 0 ? (size_t)g->cols[c].width : strlen(g->cols[c].head);
		for (size_t r = 0; !g->cols[c].width && r < g->n_rows; r++)
			if (strlen(cell(g, r, c, 0)) > w[c])
				w[c] = strlen(cell(g, r, c, 0));
	}
	int rc = g->torch ? text_sep(g, o, w) : 0;
	rc = rc ? rc : text_line(g, o, w, -1);
	rc = rc ? rc : text_sep(g, o, w);
	for (size_t r = 0; r < g->n_rows && !rc; r++)
		rc = text_line(g, o, w, (long)r);
	if (!rc && g->torch)
		rc = text_sep(g, o, w);
	free(w);
	return rc ? rc : tk__buf_append(o, g->foot.p ? g->foot.p : "", g->foot.len);
}

static int csv_field(tk__buf *o, const char *s)
{
	if (!strpbrk(s, ",\"\n\r"))
		return tk__buf_append(o, s, strlen(s));
	int rc = tk__buf_putc(o, '"');
	for (; *s && !rc; s++)
		rc = (*s == '"' ? tk__buf_putc(o, '"') : 0) || tk__buf_putc(o, *s);
	return rc ? TK_ERR_NOMEM : tk__buf_putc(o, '"');
}

static int render_csv(const tk__grid *g, tk__buf *o)
{
	int rc = 0;
	for (long r = -1; r < (long)g->n_rows && !rc; r++) {
		for (size_t c = 0; c < g->n_cols && !rc; c++) {
			const char *v = r < 0 ? g->cols[c].id : cell(g, (size_t)r, c, 1);
			/* a number not known (JSON's null) is an empty field, as CSV readers take it */
			if (r >= 0 && g->isnum[c] && strcmp(v, "null") == 0)
				v = "";
			rc = (c ? tk__buf_putc(o, ',') : 0) || csv_field(o, v);
		}
		rc = rc ? rc : tk__buf_putc(o, '\n');
	}
	return rc ? TK_ERR_NOMEM : 0;
}

static int render_json(const tk__grid *g, tk__buf *o)
{
	int rc = tk__buf_append(o, "{\"rows\":[", 9);
	for (size_t r = 0; r < g->n_rows && !rc; r++) {
		rc = tk__buf_append(o, r ? ",{" : "{", r ? 2 : 1);
		for (size_t c = 0; c < g->n_cols && !rc; c++) {
			const char *v = cell(g, r, c, 1);
			rc = (c ? tk__buf_putc(o, ',') : 0) ||
			     jstr(o, g->cols[c].id) || tk__buf_putc(o, ':') ||
			     (g->isnum[c] && *v ? tk__buf_append(o, v, strlen(v)) : jstr(o, v));
		}
		rc = rc ? rc : tk__buf_putc(o, '}');
	}
	rc = rc ? rc : tk__buf_append(o, "],\"totals\":{", 12);
	rc = rc ? rc : tk__buf_append(o, g->foot_json.p ? g->foot_json.p : "", g->foot_json.len);
	return rc ? TK_ERR_NOMEM : tk__buf_append(o, "}}\n", 3);
}

static int md_escape(tk__buf *o, const char *s)
{
	int rc = 0;
	for (; *s && !rc; s++)
		rc = (*s == '|' ? tk__buf_putc(o, '\\') : 0) || tk__buf_putc(o, *s);
	return rc ? TK_ERR_NOMEM : 0;
}

static int render_md(const tk__grid *g, tk__buf *o)
{
	int rc = 0;
	for (long r = -2; r < (long)g->n_rows && !rc; r++) {
		rc = tk__buf_putc(o, '|');
		for (size_t c = 0; c < g->n_cols && !rc; c++) {
			if (r == -1)
				/* text (a name, shapes) on the left, numbers on the right */
				rc = tk__buf_append(o, g->cols[c].left || !g->isnum[c] ? ":---|" : "---:|", 5);
			else
				/* numbers as shown (separators), text whole: a name the
				 * text table cuts to torch's width is read in full here */
				rc = tk__buf_putc(o, ' ') ||
				     md_escape(o, r < 0 ? g->cols[c].head : cell(g, (size_t)r, c, !g->isnum[c])) ||
				     tk__buf_append(o, " |", 2);
		}
		rc = rc ? rc : tk__buf_putc(o, '\n');
	}
	if (!rc && g->foot.len)
		rc = tk__buf_putc(o, '\n') || tk__buf_append(o, g->foot.p, g->foot.len);
	return rc ? TK_ERR_NOMEM : 0;
}

/* Text in HTML: &, <, >, " as entities. */
int tk__html_escape(tk__buf *o, const char *s, size_t n)
{
	int rc = 0;
	for (size_t i = 0; i < n && !rc; i++) {
		switch (s[i]) {
		case '&': rc = tk__buf_append(o, "&amp;", 5); break;
		case '<': rc = tk__buf_append(o, "&lt;", 4); break;
		case '>': rc = tk__buf_append(o, "&gt;", 4); break;
		case '"': rc = tk__buf_append(o, "&quot;", 6); break;
		default: rc = tk__buf_putc(o, s[i]);
		}
	}
	return rc ? TK_ERR_NOMEM : 0;
}

static int html_text(tk__buf *o, const char *s)
{
	return tk__html_escape(o, s, strlen(s));
}

/* A <table> with the cells as the text table shows them, numbers on the
 * right (class "n"), then the footer lines as paragraphs (class "foot"). */
static int render_html(const tk__grid *g, tk__buf *o)
{
	int rc = tk__buf_puts(o, "<table class=\"tk\">\n<thead><tr>");
	for (size_t c = 0; c < g->n_cols && !rc; c++)
		rc = tk__buf_puts(o, g->cols[c].left || !g->isnum[c] ? "<th>" : "<th class=\"n\">") ||
		     html_text(o, g->cols[c].head) || tk__buf_puts(o, "</th>");
	rc = rc || tk__buf_puts(o, "</tr></thead>\n<tbody>\n");
	for (size_t r = 0; r < g->n_rows && !rc; r++) {
		rc = tk__buf_puts(o, "<tr>");
		for (size_t c = 0; c < g->n_cols && !rc; c++)
			rc = tk__buf_puts(o, g->cols[c].left || !g->isnum[c] ? "<td>" : "<td class=\"n\">") ||
			     html_text(o, cell(g, r, c, !g->isnum[c])) || tk__buf_puts(o, "</td>"); /* as in Markdown */
		rc = rc || tk__buf_puts(o, "</tr>\n");
	}
	rc = rc || tk__buf_puts(o, "</tbody>\n</table>\n");
	for (size_t at = 0; !rc && at < g->foot.len;) {
		const char *nl = memchr(g->foot.p + at, '\n', g->foot.len - at);
		size_t end = nl ? (size_t)(nl - g->foot.p) : g->foot.len;
		rc = tk__buf_puts(o, "<p class=\"foot\">") || tk__html_escape(o, g->foot.p + at, end - at) ||
		     tk__buf_puts(o, "</p>\n");
		at = end + 1;
	}
	return rc ? TK_ERR_NOMEM : 0;
}

int tk__grid_render(const tk__grid *g, int format, tk__buf *out)
{
	switch (format) {
	case TK_TABLE_HTML: return render_html(g, out);
	case TK_TABLE_TEXT: return render_text(g, out);
	case TK_TABLE_CSV: return render_csv(g, out);
	case TK_TABLE_JSON: return render_json(g, out);
	case TK_TABLE_MARKDOWN: return render_md(g, out);
	default: return TK_ERR_ARG;
	}
}

int tk__grid_set_i64(tk__grid *g, size_t col, int64_t v)
{
	char raw[32], d[48];
	snprintf(raw, sizeof raw, "%lld", (long long)v);
	tk__thousands(d, sizeof d, raw);
	return tk__grid_set(g, col, d, raw);
}

int tk__grid_set_num(tk__grid *g, size_t col, double v, int decimals)
{
	char raw[64], d[96];
	snprintf(raw, sizeof raw, "%.*f", decimals, v);
	tk__thousands(d, sizeof d, raw);
	return tk__grid_set(g, col, d, raw);
}

int tk__grid_footer_str(tk__grid *g, const char *key, const char *value)
{
	tk__buf q = {0};
	int rc = tk__json_put_str(&q, value, strlen(value)) || tk__buf_putc(&q, 0)
	             ? TK_ERR_NOMEM
	             : tk__grid_footer(g, NULL, key, q.p);
	tk__buf_free(&q);
	return rc;
}

void tk__grid_label(const tk_table_opts *o, size_t i, char *buf, size_t cap)
{
	if (o->labels && o->labels[i])
		snprintf(buf, cap, "%s", o->labels[i]);
	else
		snprintf(buf, cap, "rank %zu", i);
}

int tk__grid_output(tk__grid *g, int rc, size_t rows, int format, char **out, size_t *len)
{
	tk__buf b = {0};
	if (!rc && (rows || format == TK_TABLE_JSON || format == TK_TABLE_CSV))
		rc = tk__grid_render(g, format, &b);
	if (!rc && tk__buf_putc(&b, 0))
		rc = TK_ERR_NOMEM;
	tk__grid_free(g);
	if (rc) {
		tk__buf_free(&b);
		return rc;
	}
	*out = b.p;
	if (len)
		*len = b.len - 1;
	return 0;
}
