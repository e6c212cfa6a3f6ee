/* fuzz_pftrace.c: fuzz harness for the .pftrace reader and writer (libFuzzer, or a main() that reads files).
 *
 * Each input is read as a trace (any format tracekit detects; the corpus
 * holds .pftrace files). The events read are written again as .pftrace
 * into a memory file, which must read back to the same events: the same
 * multiset (the writer puts events in time order), each equal field by
 * field, with no warning. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "tracekit/tracekit.h"

#define MAX_EVENTS 512

static void check(int ok, const char *what)
{
	if (!ok) {
		fprintf(stderr, "fuzz_pftrace: %s\n", what);
		abort();
	}
}

static void verify(int fd, tk_event **evs, size_t n)
{
	lseek(fd, 0, SEEK_SET);
	tk_reader *r = NULL;
	check(tk_reader_open_fd(&r, fd, "(re-encoded)", NULL) == TK_OK, "re-encoded file does not open");
	char *used = calloc(n ? n : 1, 1);
	const tk_event *ev;
	size_t got = 0;
	int rc;
	while ((rc = tk_reader_next(r, &ev)) == TK_OK) {
		size_t i = 0;
		while (i < n && (used[i] || !tk_event_equal(ev, evs[i])))
			i++;
		check(i < n, "re-encoded file has an event that was not written");
		used[i] = 1;
		got++;
	}
	check(rc == TK_EOF, "re-encoded file fails to read");
	check(got == n, "re-encoded file has fewer events");
	check(!tk_reader_warning(r, 0), "re-encoded file reads with warnings");
	free(used);
	tk_reader_free(r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	tk_reader_opts o = {0, 1 << 20, 64};
	tk_reader *r = NULL;
	if (tk_reader_open_memory(&r, data, size, "(fuzz)", &o) != TK_OK) {
		tk_reader_free(r);
		return 0;
	}
	int fd = memfd_create("fuzz_pftrace", 0);
	tk_writer *w = NULL;
	tk_writer_opts wo = {TK_FORMAT_PFTRACE, 0, 0, 1 << 20};
	tk_event **evs = calloc(MAX_EVENTS, sizeof *evs);
	size_t n = 0;
	const tk_event *ev;
	int ok = fd >= 0 && evs && tk_writer_open_fd(&w, fd, "(memfd)", &wo) == TK_OK;
	size_t copied = 0;
	while (ok && n < MAX_EVENTS && tk_reader_next(r, &ev) == TK_OK) {
		ok = tk_writer_write(w, ev) == TK_OK && (evs[n] = tk_event_dup(ev)) != NULL;
		n += ok;
	}
	if (ok)
		ok = tk_copy_meta(w, r, &copied) == TK_OK;
	if (ok && tk_writer_close(w) == TK_OK)
		verify(fd, evs, n);
	for (size_t i = 0; i < n; i++)
		tk_event_free(evs[i]);
	free(evs);
	tk_writer_free(w);
	if (fd >= 0)
		close(fd);
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
