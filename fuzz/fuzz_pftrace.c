/* fuzz_pftrace.c: fuzz harness for the .pftrace reader and writer (libFuzzer, or a main() that reads files).
 *
 * Each input is read as a trace (any format tracekit detects; the corpus
 * holds .pftrace files). The events read are written again as .pftrace
 * into a memory file, which must read back to the same events: the same
 * multiset (the writer puts events in time order), each equal field by
 * field, with no warning. Each input is also read on threads (blocks of
 * a few packets read ahead, annotations rendered by the threads) in
 * lockstep against one thread: the same events, end, error, warnings,
 * counts and metadata. */
#define _GNU_SOURCE
#include <stdint.h>

#include "fuzz_lockstep.h"
#include "fuzz_reencode.h"
#include "../libtrace/src/internal.h"

#define MAX_EVENTS 512

static void threads_lockstep(const uint8_t *data, size_t size)
{
	tk_reader_opts o1 = {.strict = size % 5 == 1, .max_value_bytes = 1 << 20, .max_depth = 64}, o2 = o1;
	o1.threads = 1;
	o2.threads = 2 + (unsigned)(size % 3);
	tk__pf_block_bytes = 16 + size % 301;
	tk__no_threads = size % 7 == 0; /* none started: the caller renders every block */
	tk_fuzz_lockstep_memory(data, size, &o1, &o2, 0, NULL);
	tk__no_threads = 0;
	tk__pf_block_bytes = 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	threads_lockstep(data, size);
	tk_reader_opts o = {.max_value_bytes = 1 << 20, .max_depth = 64};
	tk_reader *r = NULL;
	if (tk_reader_open_memory(&r, data, size, "(fuzz)", &o) == TK_OK) {
		tk_writer_opts wo = {TK_FORMAT_PFTRACE, 0, 0, 1 << 20, 0, NULL};
		tk_fuzz_reencode("fuzz_pftrace", r, &wo, MAX_EVENTS, 0, 1);
	}
	tk_reader_free(r);
	return 0;
}

#ifndef TK_LIBFUZZER
#include "fuzz_files.h"

int main(int argc, char **argv)
{
	int rc = tk_fuzz_files(argc, argv, NULL);
	printf("fuzz_pftrace: %d inputs ran\n", argc - 1);
	return rc;
}
#endif
