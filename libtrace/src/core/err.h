/* err.h: the error-and-warnings object every handle of the library embeds. */
#ifndef TK_CORE_ERR_H
#define TK_CORE_ERR_H

#include <stdarg.h>
#include <stddef.h>

#define TK__ERRLEN 512

#if defined(__GNUC__)
#define TK__PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define TK__PRINTF(a, b)
#endif

/* The first part of a handle's state: its error (a TK_ERR_* code and a
 * message naming the file and the place) and the warnings it collected.
 * Zeroed memory is an empty object. */
typedef struct tk__err {
	int code; /* the handle's error: 0 none, else a negative TK_ERR_* (sticky) */
	char msg[TK__ERRLEN];
	char **warn; /* owned, in order */
	size_t n_warn;
} tk__err;

/* Sets the error (code and message) and returns code. */
int tk__err_set(tk__err *e, int code, const char *fmt, ...) TK__PRINTF(3, 4);
int tk__err_vset(tk__err *e, int code, const char *fmt, va_list ap);
/* Sets only the message, for a caller that keeps the code elsewhere. */
int tk__err_msg(tk__err *e, int code, const char *fmt, ...) TK__PRINTF(3, 4);
/* Appends a warning: 0, or TK_ERR_NOMEM (the warning is lost). */
int tk__err_warn(tk__err *e, const char *fmt, ...) TK__PRINTF(2, 3);
int tk__err_warn_text(tk__err *e, const char *text);
/* The i-th warning, or NULL past the end. */
const char *tk__err_warning(const tk__err *e, size_t i);
/* Appends src's warnings to dst's (src keeps none); 0 or TK_ERR_NOMEM. */
int tk__err_take_warnings(tk__err *dst, tk__err *src);
/* Copies src's code and message into dst; returns the code. */
int tk__err_copy(tk__err *dst, const tk__err *src);
/* What a caller asking for "the error" sees: the message, else the last
 * warning, else "". */
const char *tk__err_text(const tk__err *e);
/* Frees the warnings and clears the error. */
void tk__err_free(tk__err *e);

/* Formats into dst (cap bytes), never failing. */
void tk__fmt_msg(char *dst, size_t cap, const char *fmt, va_list ap);

#endif
