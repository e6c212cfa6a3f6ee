/* fuzz_pftrace.c: fuzz harness for the .pftrace reader and writer (libFuzzer, or a main() that reads files).
 *
 * Each input is read as a trace (any format tracekit detects; the corpus
 * holds .pftrace files). The events read are written again as .pftrace
 * into a memory file, which must read back to the same events: the same
 * multiset (the writer puts events in time order), each equal field by
 * field, with no warning; the writer's chunks (each encoded from the
 * sequence's state cleared) are made a few events long, so that an input
 * has many, and the same events written on one thread and on three give
 * the same bytes. Each input is also read on threads (blocks of
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

/* The input's events (at most MAX_EVENTS) and metadata written as .pftrace
 * with `threads` into a memory file: its bytes (free them), NULL when the
 * input does not open or the writer refuses it. */
static unsigned char *write_pf(const uint8_t *data, size_t size, unsigned threads, size_t *len)
{
	tk_reader_opts o = {.max_value_bytes = 1 << 20, .max_depth = 64};
	tk_reader *r = NULL;
	tk_writer *w = NULL;
	unsigned char *out = NULL;
	int fd = memfd_create("fuzz_pftrace", 0);
	if (fd < 0)
		return NULL;
	tk_writer_opts wo = {.format = TK_FORMAT_PFTRACE, .memory_bytes = 1 << 20, .threads = threads};
	int ok = tk_reader_open_memory(&r, data, size, "(fuzz)", &o) == TK_OK &&
	         tk_writer_open_fd(&w, fd, "(memfd)", &wo) == TK_OK;
	const tk_event *ev;
	size_t n = 0, copied;
	while (ok && n++ < MAX_EVENTS && tk_reader_next(r, &ev) == TK_OK)
		ok = tk_writer_write(w, ev) == TK_OK;
	ok = ok && tk_copy_meta(w, r, &copied) == TK_OK && tk_writer_close(w) == TK_OK;
	off_t end = ok ? lseek(fd, 0, SEEK_END) : -1;
	if (end >= 0 && (out = malloc((size_t)end + 1)) != NULL) {
		*len = (size_t)end;
		if (pread(fd, out, *len, 0) != (ssize_t)*len) {
			free(out);
			out = NULL;
		}
	}
	tk_writer_free(w);
	tk_reader_free(r);
	close(fd);
	return out;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	threads_lockstep(data, size);
	tk_reader_opts o = {.max_value_bytes = 1 << 20, .max_depth = 64};
	tk_reader *r = NULL;
	tk__pf_chunk_ops = 1 + size % 7;
	if (tk_reader_open_memory(&r, data, size, "(fuzz)", &o) == TK_OK) {
		/* one thread or more, whatever the machine has: both ways of encoding */
		tk_writer_opts wo = {.format = TK_FORMAT_PFTRACE, .memory_bytes = 1 << 20, .threads = 1 + (unsigned)(size % 3)};
		tk_fuzz_reencode("fuzz_pftrace", r, &wo, MAX_EVENTS, 0, 1);
	}
	tk_reader_free(r);
	size_t n1 = 0, n3 = 0;
	unsigned char *one = write_pf(data, size, 1, &n1), *three = write_pf(data, size, 3, &n3);
	FZ_CHECK("fuzz_pftrace", !one == !three, "written on one thread %s, on three %s", one ? "ok" : "refused",
	         three ? "ok" : "refused");
	FZ_CHECK("fuzz_pftrace", n1 == n3 && (!one || memcmp(one, three, n1) == 0),
	         "the .pftrace written on three threads differs from the one thread's (%zu and %zu bytes)", n3, n1);
	free(one);
	free(three);
	tk__pf_chunk_ops = 0;
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
