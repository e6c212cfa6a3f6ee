/* fuzz_reencode.h: the round trip the format harnesses check: what a reader returns, written again into a memory file, reads back to the same events. */
#ifndef TK_FUZZ_REENCODE_H
#define TK_FUZZ_REENCODE_H

/* The including file defines _GNU_SOURCE (memfd_create) before any include. */
#include "fuzz_events.h"

/* Reads back fd and compares it with the events written: in the same order
 * (ordered), or as the same multiset (a writer that puts events in time
 * order); no warning either way. */
static void tk_fuzz_verify(const char *who, int fd, fz_events *written, int ordered)
{
	lseek(fd, 0, SEEK_SET);
	tk_reader *r = NULL;
	FZ_CHECK(who, tk_reader_open_fd(&r, fd, "(re-encoded)", NULL) == TK_OK, "the re-encoded file does not open");
	fz_events back = {0};
	const tk_event *ev;
	int rc;
	while ((rc = tk_reader_next(r, &ev)) == TK_OK) {
		if (ordered) {
			FZ_CHECK(who, back.n < written->n, "the re-encoded file has more than the %zu events written",
			         written->n);
			FZ_CHECK(who, tk_event_equal(ev, written->v[back.n]), "re-encoded event %zu differs", back.n);
		}
		FZ_CHECK(who, fz_events_push(&back, ev) == 0, "out of memory");
	}
	FZ_CHECK(who, rc == TK_EOF, "the re-encoded file fails to read: %s", tk_reader_error(r));
	FZ_CHECK(who, back.n == written->n, "the re-encoded file has %zu events, not the %zu written", back.n,
	         written->n);
	FZ_CHECK(who, ordered || fz_events_same_multiset(written, &back),
	         "the re-encoded file's events differ from those written");
	FZ_CHECK(who, tk_reader_get_stats(r)->truncated == 0 && !tk_reader_warning(r, 0),
	         "the re-encoded file reads with warnings: %s",
	         tk_reader_warning(r, 0) ? tk_reader_warning(r, 0) : "(truncated)");
	fz_events_free(&back);
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
	fz_events written = {0};
	size_t copied = 0;
	const tk_event *ev;
	int ok = tk_writer_open_fd(&w, fd, "(memfd)", wo) == TK_OK;
	while (ok && written.n < max && tk_reader_next(r, &ev) == TK_OK) {
		/* what a reader marks valid JSON is copied into JSON output unchecked */
		FZ_CHECK(who, !(ev->has & TK_HAS_VALID_JSON) ||
		                  ((!ev->args.len || tk__json_is_canonical(ev->args.ptr, ev->args.len, 1)) &&
		                   (!ev->extra.len || tk__json_is_canonical(ev->extra.ptr, ev->extra.len, 2))),
		         "event %zu is marked valid JSON, but its args or extra are not canonical JSON", written.n);
		ok = tk_writer_write(w, ev) == TK_OK && fz_events_push(&written, ev) == 0;
	}
	if (ok && meta)
		ok = tk_copy_meta(w, r, &copied) == TK_OK;
	if (ok && tk_writer_close(w) == TK_OK)
		tk_fuzz_verify(who, fd, &written, ordered);
	fz_events_free(&written);
	tk_writer_free(w);
	close(fd);
}

#endif
