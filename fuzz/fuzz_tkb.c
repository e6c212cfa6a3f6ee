/* fuzz_tkb.c: fuzz harness for the .tkb reader and writer (libFuzzer, or a main() that reads files).
 *
 * Each input is read as a trace (any format tracekit detects; the corpus
 * holds .tkb files). Every event read is written again as .tkb into a
 * memory file, which must read back to the same events. */
#define _GNU_SOURCE
#include <stdint.h>

#include "fuzz_reencode.h"
#include "tracekit/tkb.h"

#define MAX_EVENTS 4096

static void reencode(tk_reader *r, int compress)
{
	tk_writer_opts wo = {TK_FORMAT_TKB, compress, 1, 0};
	tk_fuzz_reencode("fuzz_tkb", r, &wo, MAX_EVENTS, 1, 0);
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
