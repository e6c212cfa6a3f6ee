/* fuzz_tkb.c: fuzz harness for the .tkb reader and writer (libFuzzer, or a main() that reads files).
 *
 * Each input is read as a trace (any format tracekit detects; the corpus
 * holds .tkb files). Every event read is written again as .tkb into a
 * memory file, which must read back to the same events. The input is also
 * read on one thread and on several (the chunks decoded on other threads)
 * in lockstep: the same events, end, error, warnings, counts, metadata and
 * file details; most inputs with the threads' batches cut small, so that
 * the caller decodes the rest of a chunk where a thread stopped. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_lockstep.h"
#include "fuzz_reencode.h"
#include "tracekit/tkb.h"
#include "../libtrace/src/internal.h"
#include "../libtrace/src/tkb_int.h"

#define MAX_EVENTS 4096

static void reencode(tk_reader *r, int compress)
{
	tk_writer_opts wo = {.format = TK_FORMAT_TKB, .gzip = compress, .gzip_level = 1};
	tk_fuzz_reencode("fuzz_tkb", r, &wo, MAX_EVENTS, 1, 0);
}

/* The chunk counts of tk_reader_tkb_info the same on both. */
static void same_tkb_info(tk_reader *a, tk_reader *b)
{
	tk_tkb_info ia = {0}, ib = {0};
	if (tk_reader_tkb_info(a, &ia) != tk_reader_tkb_info(b, &ib) || ia.bad_chunks != ib.bad_chunks ||
	    ia.skipped_bytes != ib.skipped_bytes || ia.lost_events != ib.lost_events || ia.complete != ib.complete ||
	    ia.has_end != ib.has_end)
		abort();
}

static void threads_lockstep(const uint8_t *data, size_t size, const tk_reader_opts *ro)
{
	tk_reader_opts o1 = *ro, o2 = *ro;
	o1.threads = 1;
	o2.threads = 2 + (unsigned)(size % 3);
	o2.render_json = 1; /* the events' JSON written ahead too: by every thread, or as the tools run */
	tk__render_always = size % 2;
	tk__no_threads = size % 7 == 0; /* none started: the caller decodes every chunk */
	size_t batch = tk__tkb_batch;
	if (size % 5 < 3) /* batches cut after a few events: the caller decodes the rest */
		tk__tkb_batch = 200 + 300 * (size % 5);
	tk_fuzz_lockstep_memory(data, size, &o1, &o2, 0, same_tkb_info);
	tk__tkb_batch = batch;
	tk__no_threads = 0;
	tk__render_always = 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	tk_reader_opts o = {.strict = size && (data[size - 1] & 1), .max_value_bytes = 1 << 20, .max_depth = 64};
	tk_reader *r = NULL;
	if (tk_reader_open_memory(&r, data, size, "(fuzz)", &o) == TK_OK) {
		tk_tkb_info info;
		tk_reader_tkb_info(r, &info);
		reencode(r, size & 1);
	}
	tk_reader_free(r);
	threads_lockstep(data, size, &o);
	return 0;
}

#ifndef TK_LIBFUZZER
#include "fuzz_files.h"

int main(int argc, char **argv)
{
	int rc = tk_fuzz_files(argc, argv, NULL);
	printf("fuzz_tkb: %d inputs ran\n", argc - 1);
	return rc;
}
#endif
