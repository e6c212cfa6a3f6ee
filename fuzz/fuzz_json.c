/* fuzz_json.c: fuzz harness for the JSON reader (libFuzzer, or a plain main() over files). */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tracekit/tracekit.h"
#include "../libtrace/src/internal.h"
#include "../libtrace/src/inflate_par.h"
#include "../libtrace/src/par.h"
#include "fuzz_lockstep.h"

static void touch_args(const tk_event *ev)
{
	int64_t v;
	char buf[64];
	size_t n;
	tk_dims d;
	tk_args_get_int(ev, "External id", &v);
	tk_args_get_str(ev, "name", buf, sizeof buf, &n);
	if (tk_args_get_dims(ev, "Input Dims", &d) == 0)
		tk_dims_free(&d);
}

/* A reader that only skips args objects (trace-split's first pass), with
 * each skipped object canonicalized afterwards, must give exactly the
 * events of the full reader, the skip's length must be the canonical one,
 * and it must fail where the full reader fails. */
static void lazy_lockstep(const uint8_t *data, size_t size, const tk_reader_opts *ro)
{
	tk_reader *a = NULL, *b = NULL;
	if (tk_reader_open_memory(&a, data, size, "fuzz", ro) == 0 &&
	    tk_reader_open_memory(&b, data, size, "fuzz", ro) == 0) {
		tk__reader_set_lazy_args(b, 1);
		for (;;) {
			const tk_event *ea, *eb;
			int ra = tk_reader_next(a, &ea), rb = tk_reader_next(b, &eb);
			size_t clen;
			if (rb == TK_OK && tk__reader_lazy_args(b, &clen)) {
				if ((rb = tk__reader_take_args(b)) == TK_OK && eb->args.len != clen)
					abort(); /* the skip's length differs from the canonical text's */
			}
			if ((ra == TK_OK) != (rb == TK_OK))
				abort(); /* one reader took an event the other refused */
			if (ra != TK_OK) {
				if (ra != rb || strcmp(tk_reader_error(a), tk_reader_error(b)) != 0)
					abort(); /* the same end, the same message */
				break;
			}
			if (!tk_event_equal(ea, eb))
				abort();
		}
	}
	tk_reader_free(a);
	tk_reader_free(b);
}

/* gzip input through the build's back-end (ISA-L where built in) and
 * through zlib alone (TK_GZIP=zlib): every event zlib gives, ISA-L gives
 * the same, in the same order; where zlib reads the stream to its end,
 * ISA-L gives nothing more and ends the same way, with the same warnings;
 * where zlib stops with an error, so does ISA-L. (ISA-L accepts some
 * Huffman tables that zlib refuses and decodes on until the member's CRC
 * or a cut hands the member to zlib: after damage it may give more, and
 * stop with another message, docs/gzip.md.) */
static void gzip_lockstep(const uint8_t *data, size_t size, const tk_reader_opts *ro)
{
	if (size < 2 || data[0] != 0x1f || data[1] != 0x8b)
		return;
	tk_reader *a = NULL, *b = NULL;
	int oa = tk_reader_open_memory(&a, data, size, "fuzz", ro);
	setenv("TK_GZIP", "zlib", 1);
	int ob = tk_reader_open_memory(&b, data, size, "fuzz", ro);
	unsetenv("TK_GZIP");
	int ra = oa, rb = ob;
	const tk_event *ea, *eb;
	while (!rb && (rb = tk_reader_next(b, &eb)) == TK_OK) {
		if (ra || (ra = tk_reader_next(a, &ea)) != TK_OK || !tk_event_equal(ea, eb))
			abort(); /* an event of zlib's that ISA-L did not give as it is */
	}
	if (rb == TK_EOF) {
		if (ra || (ra = tk_reader_next(a, &ea)) != TK_EOF)
			abort(); /* zlib read it all; ISA-L gave more or failed */
		for (size_t i = 0; tk_reader_warning(a, i) || tk_reader_warning(b, i); i++)
			if (!tk_reader_warning(a, i) || !tk_reader_warning(b, i) ||
			    strcmp(tk_reader_warning(a, i), tk_reader_warning(b, i)) != 0)
				abort(); /* the same warnings (a cut stream's) */
	} else {
		while (ra == TK_OK)
			ra = tk_reader_next(a, &ea);
		if (ra == TK_EOF)
			abort(); /* zlib stopped with an error where ISA-L went through */
	}
	tk_reader_free(a);
	tk_reader_free(b);
}

/* 1 for a gzip input whose stream zlib finds damaged (on one thread, an
 * error about the gzip data). */
static int gzip_damaged(const uint8_t *data, size_t size, const tk_reader_opts *ro)
{
	if (size < 2 || data[0] != 0x1f || data[1] != 0x8b)
		return 0;
	tk_reader_opts o = *ro;
	o.threads = 1;
	setenv("TK_GZIP", "zlib", 1);
	tk_reader *r = NULL;
	int rc = tk_reader_open_memory(&r, data, size, "fuzz", &o);
	unsetenv("TK_GZIP");
	const tk_event *e;
	while (!rc && (rc = tk_reader_next(r, &e)) == TK_OK)
		;
	int damaged = rc < 0 && r && strstr(tk_reader_error(r), "gzip") != NULL;
	tk_reader_free(r);
	return damaged;
}

/* A damaged gzip stream read on one thread and in parts on threads: ISA-L
 * takes some Huffman tables that zlib (and the parts) refuse and decodes on
 * into bytes zlib never gives, as far as the pieces its input and output
 * come in let it, and those pieces differ once the parts have read ahead
 * (docs/gzip.md). So: the same events as far as both go, and both stop
 * with an error. */
static void damaged_parts(const uint8_t *data, size_t size, const tk_reader_opts *o1, const tk_reader_opts *o2)
{
	tk_reader *a = NULL, *b = NULL;
	int ra = tk_reader_open_memory(&a, data, size, "fuzz", o1);
	int rb = tk_reader_open_memory(&b, data, size, "fuzz", o2);
	const tk_event *ea, *eb;
	while (!ra && !rb) {
		ra = tk_reader_next(a, &ea);
		rb = tk_reader_next(b, &eb);
		if (ra == TK_OK && rb == TK_OK && !tk_event_equal(ea, eb))
			abort(); /* an event both give differs */
	}
	while (ra == TK_OK)
		ra = tk_reader_next(a, &ea);
	while (rb == TK_OK)
		rb = tk_reader_next(b, &eb);
	if (ra == TK_EOF || rb == TK_EOF)
		abort(); /* zlib found damage, and one of them read to the end */
	tk_reader_free(a);
	tk_reader_free(b);
}

/* The threads that parse one trace (par.c) in small blocks (so that a
 * small input is cut into many, anywhere: mostly 16 to 128 bytes, else
 * up to 636, where some cuts are found in a block's tail), against the
 * caller's thread alone: the same events in the same order, the same
 * end, error, warnings, counts and metadata; the input bytes counted
 * alike when read to the end. Sometimes with no thread started (the
 * caller parses the blocks itself, in the same order). Both readers
 * mostly start with a first window of 48 to 258 bytes, so that the rest
 * of a plain input is read by offset (blocks cut from their tails, filled
 * by the threads). A gzip input is inflated in parts of 32 to 128 bytes
 * on threads too (inflate_par.c): where zlib finds its stream damaged,
 * the weaker check above. */
static void par_lockstep(const uint8_t *data, size_t size, const tk_reader_opts *ro)
{
	tk_reader_opts o1 = *ro, o2 = *ro;
	o1.threads = 1;
	o2.threads = 2 + (unsigned)(size % 3);
	o2.render_json = 1; /* the events' JSON written ahead too: by every thread, or as the tools run */
	tk__render_always = size % 2;
	tk__par_block_bytes = size % 7 < 3 ? 128 + size % 509 : 16 + size % 113;
	tk__no_threads = size % 5 == 0;
	tk__gz_par_min = 2;
	tk__ipar_part_bytes = 32 + size % 97;
	if (gzip_damaged(data, size, ro))
		damaged_parts(data, size, &o1, &o2);
	else
		tk_fuzz_lockstep_memory(data, size, &o1, &o2, size % 4 ? 48 + size % 211 : 0, NULL);
	tk__gz_par_min = 0;
	tk__ipar_part_bytes = 0;
	tk__par_block_bytes = 0;
	tk__no_threads = 0;
	tk__render_always = 0;
}

/* skip_args: every event the full reader gives, without its args, in the
 * same order; where the full reader reads to the end, the same end (where
 * it fails, an args object it found damaged may go unnoticed). On one
 * thread or, in small blocks, on two. */
static void skip_lockstep(const uint8_t *data, size_t size, const tk_reader_opts *ro)
{
	tk_reader_opts o = *ro;
	o.skip_args = 1;
	o.threads = size & 1 ? 2 : 1;
	tk__par_block_bytes = 32 + size % 61;
	tk_reader *a = NULL, *b = NULL;
	int ra = tk_reader_open_memory(&a, data, size, "fuzz", ro);
	int rb = tk_reader_open_memory(&b, data, size, "fuzz", &o);
	const tk_event *ea, *eb;
	while (!ra && (ra = tk_reader_next(a, &ea)) == TK_OK) {
		if (rb || (rb = tk_reader_next(b, &eb)) != TK_OK)
			abort(); /* the skipping reader stopped where the full one went on */
		tk_event x = *ea, y = *eb;
		if (y.args.ptr)
			abort(); /* args given */
		x.args = y.args = (tk_sv){NULL, 0};
		if (!tk_event_equal(&x, &y))
			abort();
	}
	if (ra == TK_EOF && (rb || tk_reader_next(b, &eb) != TK_EOF))
		abort(); /* a whole input ends alike */
	tk_reader_free(a);
	tk_reader_free(b);
	tk__par_block_bytes = 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int devnull = -1;
	if (devnull < 0)
		devnull = open("/dev/null", O_WRONLY);
	tk_reader_opts ro = {0};
	ro.max_value_bytes = 1 << 20;
	tk_reader *r = NULL;
	tk_writer *w = NULL;
	if (tk_reader_open_memory(&r, data, size, "fuzz", &ro) == 0 &&
	    tk_writer_open_fd(&w, devnull, "/dev/null", NULL) == 0) {
		const tk_event *ev;
		size_t copied = 0;
		while (tk_reader_next(r, &ev) == TK_OK) {
			touch_args(ev);
			tk_event *dup = tk_event_dup(ev);
			if (dup && !tk_event_equal(dup, ev))
				abort(); /* a copy must equal its original */
			tk_event_free(dup);
			tk_copy_meta(w, r, &copied);
			if (tk_writer_write(w, ev))
				abort(); /* events from the reader are always writable */
		}
		tk_copy_meta(w, r, &copied);
		tk_writer_close(w);
	}
	tk_writer_free(w);
	tk_reader_free(r);
	lazy_lockstep(data, size, &ro);
	gzip_lockstep(data, size, &ro);
	par_lockstep(data, size, &ro);
	skip_lockstep(data, size, &ro);
	return 0;
}

#ifndef TK_LIBFUZZER
#include "fuzz_files.h"

int main(int argc, char **argv)
{
	return tk_fuzz_files(argc, argv, NULL);
}
#endif
