/* fuzz_tkb.c: fuzz harness for the .tkb reader and writer (libFuzzer, or a main() that reads files).
 *
 * Each input is read as a trace (any format tracekit detects; the corpus
 * holds .tkb files). Every event read is written again as .tkb into a
 * memory file, which must read back to the same events. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "tracekit/tkb.h"
#include "tracekit/tracekit.h"

#define MAX_EVENTS 4096

static void check(int ok, const char *what)
{
	if (!ok) {
		fprintf(stderr, "fuzz_tkb: %s\n", what);
		abort();
	}
}

/* Reads back the re-encoded file and compares it with the events kept. */
static void verify(int fd, tk_event **evs, size_t n)
{
	lseek(fd, 0, SEEK_SET);
	tk_reader *r = NULL;
	check(tk_reader_open_fd(&r, fd, "(re-encoded)", NULL) == TK_OK, "re-encoded file does not open");
	const tk_event *ev;
	for (size_t i = 0; i < n; i++) {
		check(tk_reader_next(r, &ev) == TK_OK, "re-encoded file has fewer events");
		check(tk_event_equal(ev, evs[i]), "re-encoded event differs");
	}
	check(tk_reader_next(r, &ev) == TK_EOF, "re-encoded file has more events");
	check(tk_reader_get_stats(r)->truncated == 0 && !tk_reader_warning(r, 0),
	      "re-encoded file reads with warnings");
	tk_reader_free(r);
}

static void reencode(tk_reader *r, int compress)
{
	int fd = memfd_create("fuzz_tkb", 0);
	if (fd < 0)
		return;
	tk_writer *w = NULL;
	tk_writer_opts wo = {TK_FORMAT_TKB, compress, 1, 0};
	tk_event **evs = calloc(MAX_EVENTS, sizeof *evs);
	size_t n = 0;
	const tk_event *ev;
	int ok = evs && tk_writer_open_fd(&w, fd, "(memfd)", &wo) == TK_OK;
	while (ok && n < MAX_EVENTS && tk_reader_next(r, &ev) == TK_OK) {
		/* args or extra that are not JSON (a damaged file) are refused by design */
		ok = tk_writer_write(w, ev) == TK_OK && (evs[n] = tk_event_dup(ev)) != NULL;
		n += ok;
	}
	if (ok && tk_writer_close(w) == TK_OK)
		verify(fd, evs, n);
	for (size_t i = 0; i < n; i++)
		tk_event_free(evs[i]);
	free(evs);
	tk_writer_free(w);
	close(fd);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	tk_reader_opts o = {size && (data[size - 1] & 1), 1 << 20, 64};
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
