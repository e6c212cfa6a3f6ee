/* fuzz_lockstep.h: one reader against another of the same input (one thread against several), event by
 * event: the harnesses that read on threads (fuzz_json, fuzz_tkb) share it. */
#ifndef TK_FUZZ_LOCKSTEP_H
#define TK_FUZZ_LOCKSTEP_H

#include <stdlib.h>
#include <string.h>

#include "tracekit/tracekit.h"

/* Reads a and b to their end in lockstep and aborts unless they give the
 * same events in the same order, the same end, error, warnings, counts and
 * metadata, and (read to the end) the same input bytes. Returns the end. */
static int tk_fuzz_lockstep(tk_reader *a, tk_reader *b)
{
	int ra = 0, rb = 0;
	for (;;) {
		const tk_event *ea, *eb;
		ra = tk_reader_next(a, &ea);
		rb = tk_reader_next(b, &eb);
		if (ra != rb || (ra == TK_OK && !tk_event_equal(ea, eb)))
			abort(); /* an event, or the end, differs */
		if (ra != TK_OK)
			break;
	}
	const tk_reader_stats *x = tk_reader_get_stats(a), *y = tk_reader_get_stats(b);
	if (strcmp(tk_reader_error(a), tk_reader_error(b)) != 0 || x->events != y->events ||
	    x->repaired_strings != y->repaired_strings || x->truncated != y->truncated ||
	    x->dropped_bytes != y->dropped_bytes || tk_reader_meta_count(a) != tk_reader_meta_count(b) ||
	    (ra == TK_EOF && (x->bytes_in != y->bytes_in || x->bytes_decoded != y->bytes_decoded)))
		abort();
	for (size_t i = 0; tk_reader_warning(a, i) || tk_reader_warning(b, i); i++)
		if (!tk_reader_warning(a, i) || !tk_reader_warning(b, i) ||
		    strcmp(tk_reader_warning(a, i), tk_reader_warning(b, i)) != 0)
			abort();
	for (size_t i = 0; i < tk_reader_meta_count(a); i++) {
		tk_sv ka, ja, kb, jb;
		int fa, fb;
		tk_reader_meta_get(a, i, &ka, &ja, &fa);
		tk_reader_meta_get(b, i, &kb, &jb, &fb);
		if (ka.len != kb.len || ja.len != jb.len || fa != fb || memcmp(ka.ptr, kb.ptr, ka.len) ||
		    memcmp(ja.ptr, jb.ptr, ja.len))
			abort();
	}
	return ra;
}

#endif
