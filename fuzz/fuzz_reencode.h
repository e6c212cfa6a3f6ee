/* fuzz_reencode.h: the round trip the format harnesses check: what a reader returns, written again into a memory file, reads back to the same events. */
#ifndef TK_FUZZ_REENCODE_H
#define TK_FUZZ_REENCODE_H

/* The including file defines _GNU_SOURCE (memfd_create) before any include. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "tracekit/tracekit.h"

static void tk_fuzz_check(const char *who, int ok, const char *what)
{
	if (!ok) {
		fprintf(stderr, "%s: %s\n", who, what);
		abort();
	}
}

/* Reads back fd and compares it with evs: in the same order (ordered), or
 * as the same multiset (a writer that puts events in time order); no
 * warning either way. */
static void tk_fuzz_verify(const char *who, int fd, tk_event **evs, size_t n, int ordered)
{
	lseek(fd, 0, SEEK_SET);
	tk_reader *r = NULL;
	tk_fuzz_check(who, tk_reader_open_fd(&r, fd, "(re-encoded)", NULL) == TK_OK, "re-encoded file does not open");
	char *used = calloc(n ? n : 1, 1);
	tk_fuzz_check(who, used != NULL, "out of memory");
	const tk_event *ev;
	size_t got = 0;
	int rc;
	while ((rc = tk_reader_next(r, &ev)) == TK_OK) {
		size_t i = ordered ? got : 0;
		if (ordered) {
			tk_fuzz_check(who, i < n, "re-encoded file has more events");
			tk_fuzz_check(who, tk_event_equal(ev, evs[i]), "re-encoded event differs");
		} else {
			while (i < n && (used[i] || !tk_event_equal(ev, evs[i])))
				i++;
			tk_fuzz_check(who, i < n, "re-encoded file has an event that was not written");
		}
		used[i] = 1;
		got++;
	}
	tk_fuzz_check(who, rc == TK_EOF, "re-encoded file fails to read");
	tk_fuzz_check(who, got == n, "re-encoded file has fewer events");
	tk_fuzz_check(who, tk_reader_get_stats(r)->truncated == 0 && !tk_reader_warning(r, 0),
	              "re-encoded file reads with warnings");
	free(used);
	tk_reader_free(r);
}

/* Writes at most max events of r (and its metadata, with meta) with wo
 * into a memory file and checks the file with tk_fuzz_verify. Events or
 * metadata the writer refuses (args that are not JSON, by design) end the
 * round trip without a check. */
static void tk_fuzz_reencode(const char *who, tk_reader *r, const tk_writer_opts *wo, size_t max, int ordered,
                             int meta)
{
	int fd = memfd_create(who, 0);
	if (fd < 0)
		return;
	tk_writer *w = NULL;
	tk_event **evs = calloc(max, sizeof *evs);
	size_t n = 0, copied = 0;
	const tk_event *ev;
	int ok = evs && tk_writer_open_fd(&w, fd, "(memfd)", wo) == TK_OK;
	while (ok && n < max && tk_reader_next(r, &ev) == TK_OK) {
		ok = tk_writer_write(w, ev) == TK_OK && (evs[n] = tk_event_dup(ev)) != NULL;
		n += ok;
	}
	if (ok && meta)
		ok = tk_copy_meta(w, r, &copied) == TK_OK;
	if (ok && tk_writer_close(w) == TK_OK)
		tk_fuzz_verify(who, fd, evs, n, ordered);
	for (size_t i = 0; i < n; i++)
		tk_event_free(evs[i]);
	free(evs);
	tk_writer_free(w);
	close(fd);
}

#endif
