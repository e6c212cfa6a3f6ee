/* fuzz_lockstep.h: one reader against another of the same input (one thread against several), event by
 * event: the harnesses that read on threads (fuzz_json, fuzz_tkb) share it. */
#ifndef TK_FUZZ_LOCKSTEP_H
#define TK_FUZZ_LOCKSTEP_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tracekit/tracekit.h"
#include "../libtrace/src/internal.h" /* tk__reader_window0 */

/* A JSON writer into a temporary file, or NULL (f too) when none opens. */
static tk_writer *tk_fuzz_json_out(FILE **f)
{
	tk_writer_opts wo = {.format = TK_FORMAT_JSON};
	tk_writer *w = NULL;
	if ((*f = tmpfile()) != NULL && tk_writer_open_fd(&w, fileno(*f), "out.json", &wo) == TK_OK)
		return w;
	tk_writer_free(w);
	if (*f)
		fclose(*f);
	*f = NULL;
	return NULL;
}

/* 1 if the two files hold the same bytes. */
static int tk_fuzz_same_file(FILE *x, FILE *y)
{
	char bx[4096], by[4096];
	rewind(x);
	rewind(y);
	for (;;) {
		size_t nx = fread(bx, 1, sizeof bx, x), ny = fread(by, 1, sizeof by, y);
		if (nx != ny || memcmp(bx, by, nx) != 0)
			return 0;
		if (nx < sizeof bx)
			return 1;
	}
}

/* Reads a and b to their end in lockstep and aborts unless they give the
 * same events in the same order, the same end, error, warnings, counts and
 * metadata, and (read to the end) the same input bytes. Each event is also
 * written as JSON: a's by the writer (tk_writer_write), b's from the text
 * b's threads wrote ahead where b was opened with render_json
 * (tk_writer_write_from); the same result for each event, the same
 * output. Returns the end. */
static int tk_fuzz_lockstep(tk_reader *a, tk_reader *b)
{
	int ra = 0, rb = 0;
	FILE *outa = NULL, *outb = NULL;
	tk_writer *wa = tk_fuzz_json_out(&outa), *wb = wa ? tk_fuzz_json_out(&outb) : NULL;
	int writing = wa && wb;
	for (;;) {
		const tk_event *ea, *eb;
		ra = tk_reader_next(a, &ea);
		rb = tk_reader_next(b, &eb);
		if (ra != rb || (ra == TK_OK && !tk_event_equal(ea, eb)))
			abort(); /* an event, or the end, differs */
		if (ra != TK_OK)
			break;
		if (writing) {
			int xa = tk_writer_write(wa, ea), xb = tk_writer_write_from(wb, b, eb);
			if (xa != xb || strcmp(tk_writer_error(wa), tk_writer_error(wb)) != 0)
				abort(); /* written ahead, an event comes out otherwise */
			writing = !xa;
		}
	}
	if (writing) {
		int xa = tk_writer_close(wa), xb = tk_writer_close(wb);
		if (xa != xb || tk_writer_repaired_strings(wa) != tk_writer_repaired_strings(wb) ||
		    (!xa && !tk_fuzz_same_file(outa, outb)))
			abort();
	}
	tk_writer_free(wa);
	tk_writer_free(wb);
	if (outa)
		fclose(outa);
	if (outb)
		fclose(outb);
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

/* Opens data twice from memory, with o1 (one thread) and o2 (several),
 * both with a first window of `window` bytes (0: the default; a value
 * over the limit is seen as such where the window has grown past it, so
 * the two must start alike), and reads both in lockstep
 * (tk_fuzz_lockstep), then hands both to `after` (NULL: nothing more) for
 * checks of the format's own; a failed open must fail both, with the same
 * code. */
static void tk_fuzz_lockstep_memory(const uint8_t *data, size_t size, const tk_reader_opts *o1,
                                    const tk_reader_opts *o2, size_t window,
                                    void (*after)(tk_reader *a, tk_reader *b))
{
	tk_reader *a = NULL, *b = NULL;
	tk__reader_window0 = window;
	int ra = tk_reader_open_memory(&a, data, size, "fuzz", o1);
	int rb = tk_reader_open_memory(&b, data, size, "fuzz", o2);
	tk__reader_window0 = 0;
	if (ra != rb)
		abort();
	if (a && b) {
		tk_fuzz_lockstep(a, b);
		if (after)
			after(a, b);
	}
	tk_reader_free(a);
	tk_reader_free(b);
}

#endif
