/* err.c: the error-and-warnings object. */
#include <stdio.h>
#include <stdlib.h>

#include "internal.h"

void tk__fmt_msg(char *dst, size_t cap, const char *fmt, va_list ap)
{
	int n = vsnprintf(dst, cap, fmt, ap);
	if (n < 0)
		snprintf(dst, cap, "(message formatting failed)");
}

int tk__err_vset(tk__err *e, int code, const char *fmt, va_list ap)
{
	tk__fmt_msg(e->msg, sizeof e->msg, fmt, ap);
	e->code = code;
	return code;
}

int tk__err_set(tk__err *e, int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	tk__err_vset(e, code, fmt, ap);
	va_end(ap);
	return code;
}

int tk__err_msg(tk__err *e, int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	tk__fmt_msg(e->msg, sizeof e->msg, fmt, ap);
	va_end(ap);
	return code;
}

int tk__err_warn_text(tk__err *e, const char *text)
{
	char **nw = realloc(e->warn, (e->n_warn + 1) * sizeof *nw);
	if (!nw)
		return TK_ERR_NOMEM;
	e->warn = nw;
	if (!(nw[e->n_warn] = tk__strdup(text)))
		return TK_ERR_NOMEM;
	e->n_warn++;
	return 0;
}

int tk__err_warn(tk__err *e, const char *fmt, ...)
{
	char msg[TK__ERRLEN];
	va_list ap;
	va_start(ap, fmt);
	tk__fmt_msg(msg, sizeof msg, fmt, ap);
	va_end(ap);
	return tk__err_warn_text(e, msg);
}

const char *tk__err_warning(const tk__err *e, size_t i)
{
	return i < e->n_warn ? e->warn[i] : NULL;
}

int tk__err_take_warnings(tk__err *dst, tk__err *src)
{
	if (!src->n_warn)
		return 0;
	char **nw = realloc(dst->warn, (dst->n_warn + src->n_warn) * sizeof *nw);
	if (!nw)
		return TK_ERR_NOMEM;
	memcpy(nw + dst->n_warn, src->warn, src->n_warn * sizeof *nw);
	dst->warn = nw;
	dst->n_warn += src->n_warn;
	free(src->warn);
	src->warn = NULL;
	src->n_warn = 0;
	return 0;
}

int tk__err_copy(tk__err *dst, const tk__err *src)
{
	memcpy(dst->msg, src->msg, sizeof dst->msg);
	dst->code = src->code;
	return src->code;
}

const char *tk__err_text(const tk__err *e)
{
	if (e->msg[0])
		return e->msg;
	if (e->n_warn)
		return e->warn[e->n_warn - 1];
	return "";
}

void tk__err_free(tk__err *e)
{
	for (size_t i = 0; i < e->n_warn; i++)
		free(e->warn[i]);
	free(e->warn);
	e->warn = NULL;
	e->n_warn = 0;
	e->code = 0;
	e->msg[0] = 0;
}
