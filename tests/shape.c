/* shape.c: an independent scan of a valid trace text: where each event, member and the whole trace end. */
#include "shape.h"

#include <string.h>

static size_t ws(const char *t, size_t n, size_t i)
{
	while (i < n && (t[i] == ' ' || t[i] == '\n' || t[i] == '\r' || t[i] == '\t'))
		i++;
	return i;
}

/* Index just past the JSON value at i (which the caller knows is valid). */
static size_t skip(const char *t, size_t n, size_t i)
{
	if (t[i] == '"') {
		for (i++; i < n && t[i] != '"'; i++)
			if (t[i] == '\\')
				i++;
		return i + 1;
	}
	if (t[i] == '{' || t[i] == '[') {
		int depth = 0;
		do {
			if (t[i] == '"') {
				i = skip(t, n, i);
				continue;
			}
			if (t[i] == '{' || t[i] == '[')
				depth++;
			else if (t[i] == '}' || t[i] == ']')
				depth--;
			i++;
		} while (i < n && depth);
		return i;
	}
	while (i < n && !strchr(",}] \n\r\t", t[i]))
		i++;
	return i;
}

/* Events of the array whose '[' is at i; returns the index of its ']'. */
static size_t events(const char *t, size_t n, size_t i, shape *s)
{
	i = ws(t, n, i + 1);
	while (i < n && t[i] != ']') {
		if (t[i] == ',')
			i = ws(t, n, i + 1);
		if (t[i] != '{' || s->n_events == SHAPE_MAX)
			return n;
		i = skip(t, n, i);
		s->ev_end[s->n_events++] = i - 1;
		i = ws(t, n, i);
	}
	return i;
}

int shape_scan(const char *t, size_t n, shape *s)
{
	memset(s, 0, sizeof *s);
	size_t i = ws(t, n, 0);
	if (i >= n)
		return -1;
	if (t[i] == '[') {
		s->bare_array = 1;
		s->events_close = s->top_end = events(t, n, i, s);
		return s->top_end < n ? 0 : -1;
	}
	int after = 0;
	for (i = ws(t, n, i + 1); i < n && t[i] != '}';) {
		if (t[i] == ',')
			i = ws(t, n, i + 1);
		size_t k = i, ke = skip(t, n, i);
		i = ws(t, n, ws(t, n, ke) + 1); /* past ':' */
		if (ke - k == 13 && memcmp(t + k, "\"traceEvents\"", 13) == 0) {
			s->events_close = events(t, n, i, s);
			if (s->events_close >= n)
				return -1;
			after = 1;
			i = ws(t, n, s->events_close + 1);
			continue;
		}
		if (s->n_members == SHAPE_MAX)
			return -1;
		size_t ve = skip(t, n, i);
		/* a number is only known to be complete once the byte after it is seen */
		int scalar = t[i] != '"' && t[i] != '{' && t[i] != '[';
		int number = scalar && t[i] != 't' && t[i] != 'f' && t[i] != 'n';
		s->mem_done[s->n_members] = number ? ve : ve - 1;
		i = ws(t, n, ve);
		s->mem_delim[s->n_members] = i;
		s->mem_after[s->n_members] = after;
		s->n_members++;
	}
	if (i >= n)
		return -1;
	s->top_end = i;
	return 0;
}
