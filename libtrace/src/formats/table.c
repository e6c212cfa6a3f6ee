/* table.c: the tables of the formats layer. A new format or filter is one file in formats/ and one line here. */
#include <strings.h>

#include "formats/formats.h"

/* One line per format or filter, in the order they bid and are listed. */
#define TK__FORMATS(X) \
	X(tk__format, tk__format_json) \
	X(tk__format, tk__format_tkb) \
	X(tk__format, tk__format_pftrace) \
	X(tk__format, tk__format_sqlite)
#define TK__IFILTERS(X) \
	X(tk__ifilter, tk__ifilter_gzip) \
	X(tk__ifilter, tk__ifilter_archive)
#define TK__OFILTERS(X) \
	X(tk__ofilter, tk__ofilter_gzip)

#define DECLARE(type, name) extern const type name;
#define ADDRESS(type, name) &name,
TK__FORMATS(DECLARE)
TK__IFILTERS(DECLARE)
TK__OFILTERS(DECLARE)

static const tk__format *const formats[] = {TK__FORMATS(ADDRESS)};
static const tk__ifilter *const ifilters[] = {TK__IFILTERS(ADDRESS)};
static const tk__ofilter *const ofilters[] = {TK__OFILTERS(ADDRESS)};

#define COUNT(a) (sizeof(a) / sizeof(a)[0])

const tk__format *tk__format_at(size_t i)
{
	return i < COUNT(formats) ? formats[i] : NULL;
}

const tk__ifilter *tk__ifilter_at(size_t i)
{
	return i < COUNT(ifilters) ? ifilters[i] : NULL;
}

const tk__ofilter *tk__ofilter_at(size_t i)
{
	return i < COUNT(ofilters) ? ofilters[i] : NULL;
}

const tk__format *tk__format_by_id(int id)
{
	for (size_t i = 0; i < COUNT(formats); i++)
		if (formats[i]->id == id)
			return formats[i];
	return NULL;
}

const tk__ofilter *tk__ofilter_by_name(const char *name)
{
	for (size_t i = 0; i < COUNT(ofilters); i++)
		if (strcmp(ofilters[i]->name, name) == 0)
			return ofilters[i];
	return NULL;
}

/* 1 if s[0..n) ends in suf, letters compared without case. */
static int ends(const char *s, size_t n, const char *suf)
{
	size_t m = strlen(suf);
	return n >= m && strncasecmp(s + n - m, suf, m) == 0;
}

static const tk__format *by_suffix(const char *s, size_t n, int reading)
{
	for (size_t i = 0; i < COUNT(formats); i++) {
		if (reading ? !formats[i]->rd : !formats[i]->wr)
			continue;
		for (const char *const *x = formats[i]->suffixes; *x; x++)
			if (ends(s, n, *x))
				return formats[i];
	}
	return NULL;
}

const tk__format *tk__format_for_output(const char *name, const tk__ofilter **of)
{
	size_t n = strlen(name);
	*of = NULL;
	for (size_t i = 0; i < COUNT(ofilters); i++)
		if (ends(name, n, ofilters[i]->suffix)) {
			*of = ofilters[i];
			const tk__format *f = by_suffix(name, n - strlen(ofilters[i]->suffix), 0);
			if (f && (f->flags & TK__FMT_WHOLE_GZIP))
				return f;
			break;
		}
	return by_suffix(name, n, 0);
}

int tk__is_trace_name(const char *name)
{
	size_t n = strlen(name);
	if (by_suffix(name, n, 1))
		return 1;
	for (size_t i = 0; i < COUNT(ifilters); i++) {
		const char *suf = ifilters[i]->suffix;
		if (*suf && ends(name, n, suf) && by_suffix(name, n - strlen(suf), 1))
			return 1;
	}
	return 0;
}

size_t tk__name_stem(const char *name)
{
	size_t n = strlen(name);
	for (size_t i = 0; i < COUNT(ifilters); i++) {
		const char *suf = ifilters[i]->suffix;
		if (*suf && ends(name, n, suf) && n > strlen(suf)) {
			n -= strlen(suf);
			break;
		}
	}
	for (size_t i = 0; i < COUNT(formats); i++)
		for (const char *const *x = formats[i]->suffixes; *x; x++)
			if (ends(name, n, *x) && n > strlen(*x))
				return n - strlen(*x);
	return n;
}

/* ---- the public face ---- */

int tk_format_from_name(const char *name, tk_writer_opts *o)
{
	if (!name || !o)
		return TK_ERR_ARG;
	const tk__ofilter *of = NULL;
	const tk__format *f = NULL;
	/* a format's name, possibly with a filter's suffix: "json", "json.gz" */
	for (size_t i = 0; i < COUNT(formats) && !f; i++) {
		size_t k = strlen(formats[i]->name);
		if (!formats[i]->wr || strncasecmp(name, formats[i]->name, k) != 0)
			continue;
		if (!name[k]) {
			f = formats[i];
		} else if (formats[i]->flags & TK__FMT_WHOLE_GZIP) {
			for (size_t j = 0; j < COUNT(ofilters); j++)
				if (strcasecmp(name + k, ofilters[j]->suffix) == 0) {
					f = formats[i];
					of = ofilters[j];
				}
		}
	}
	if (!f) { /* a file name: "x.json.gz", "x.tkb" */
		f = tk__format_for_output(name, &of);
		if (f && !(f->flags & TK__FMT_WHOLE_GZIP))
			of = NULL;
	}
	if (!f)
		return TK_ERR_UNSUPPORTED;
	o->format = f->id;
	o->gzip = of != NULL;
	return 0;
}

int tk_is_trace_name(const char *name)
{
	return name ? tk__is_trace_name(name) : 0;
}

const char *tk_format_name(int format)
{
	const tk__format *f = tk__format_by_id(format);
	return f ? f->name : NULL;
}

const char *tk_format_names(void)
{
	static _Thread_local char names[128];
	if (!names[0]) {
		size_t k = 0;
		for (size_t i = 0; i < COUNT(formats); i++) {
			if (!formats[i]->wr)
				continue;
			k += (size_t)snprintf(names + k, sizeof names - k, "%s%s", k ? ", " : "", formats[i]->name);
			if (formats[i]->flags & TK__FMT_WHOLE_GZIP)
				for (size_t j = 0; j < COUNT(ofilters); j++)
					k += (size_t)snprintf(names + k, sizeof names - k, ", %s%s", formats[i]->name,
					                      ofilters[j]->suffix);
		}
	}
	return names;
}

const char *tk_format_suffixes(void)
{
	static _Thread_local char sufs[256];
	if (!sufs[0]) {
		size_t k = 0;
		for (size_t i = 0; i < COUNT(formats); i++) {
			if (!formats[i]->wr)
				continue;
			for (const char *const *x = formats[i]->suffixes; *x && k < sizeof sufs; x++) {
				k += (size_t)snprintf(sufs + k, sizeof sufs - k, "%s%s", k ? ", " : "", *x);
				for (size_t j = 0; (formats[i]->flags & TK__FMT_WHOLE_GZIP) && j < COUNT(ofilters) &&
				                   k < sizeof sufs; j++)
					k += (size_t)snprintf(sufs + k, sizeof sufs - k, "[%s]", ofilters[j]->suffix);
			}
		}
	}
	return sufs;
}
