/* fuzz_sqlite.c: fuzz harness for the SQLite writer (libFuzzer, or a plain main() over files).
 *
 * Each input is read as a trace (any format tracekit detects); its events
 * (at most MAX_EVENTS) and its metadata are written with the SQLite
 * writer into a file in a scratch directory, in a memory budget of 16 to
 * 128 KiB (from a hash of the input) so that its sorter spills (into the
 * scratch directory, made $TMPDIR). The invariants, from docs/sql.md's
 * mapping:
 *  - every event from a reader is taken and the database is written;
 *  - it opens, passes SQLite's quick_check, and every table and view of
 *    the documented schema answers a query;
 *  - meta_event has a row per M event, counter a row per member of each
 *    C event's args, flow a row per t and f event with an id and at most
 *    one more per s (one that nothing ended), metadata a row per
 *    top-level member;
 *  - slice has a row per other event (s, t, f without an id included),
 *    except the E events that end a B: exactly that many when the trace
 *    has no E, else at least that many less the E events;
 *  - parents: a slice has a parent exactly when its depth is not 0, on the
 *    same track, one level up; every arg_set_id of a slice or meta_event
 *    has its arguments in arg, every argument its key in arg_key; a trace
 *    without B and E nests a slice only in one that holds it whole
 *    (starts no later, ends no earlier);
 *  - nothing is left in the temporary directory. */
#define _GNU_SOURCE
#include <sqlite3.h>

#include "fuzz_events.h"
#include "core/jscan.h"

#define WHO "fuzz_sqlite"
#define MAX_EVENTS 1024

static unsigned long n_written; /* for main()'s summary */

typedef struct expect {
	uint64_t meta_events, counters, flows, flow_starts, slices, e_events, b_events, meta;
} expect;

static void count_event(expect *x, const tk_event *ev)
{
	switch (ev->ph) {
	case 'M': x->meta_events++; return;
	case 'C': {
		tk__js_iter it;
		tk_sv k, v;
		if (ev->args.ptr && tk__js_obj(&it, ev->args) == 0)
			while (tk__js_member(&it, &k, &v) == 1)
				x->counters++;
		return;
	}
	case 's':
	case 't':
	case 'f':
		if (ev->id.kind != TK_ID_NONE) {
			x->flows += ev->ph != 's';
			x->flow_starts += ev->ph == 's';
			return;
		}
		break;
	case 'E': x->e_events++; break;
	case 'B': x->b_events++; break;
	default: break;
	}
	x->slices++;
}

static int64_t query(sqlite3 *db, const char *sql)
{
	sqlite3_stmt *st = NULL;
	int rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
	FZ_CHECK(WHO, rc == SQLITE_OK, "'%s' does not prepare: %s", sql, sqlite3_errmsg(db));
	rc = sqlite3_step(st);
	FZ_CHECK(WHO, rc == SQLITE_ROW || rc == SQLITE_DONE, "'%s' fails: %s", sql, sqlite3_errmsg(db));
	int64_t v = rc == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
	sqlite3_finalize(st);
	return v;
}

static void check_db(const char *path, const expect *x)
{
	static const char *const views[] = {"process", "thread", "track", "thread_track", "counter_track",
	                                    "process_counter_track", "args", "arg_key", "StringIds",
	                                    "CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY",
	                                    "CUPTI_ACTIVITY_KIND_MEMSET", "CUPTI_ACTIVITY_KIND_RUNTIME",
	                                    "NVTX_EVENTS", "TARGET_INFO_GPU"};
	sqlite3 *db = NULL;
	int rc = sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL);
	FZ_CHECK(WHO, rc == SQLITE_OK, "the database does not open: %s", db ? sqlite3_errmsg(db) : "");
	sqlite3_stmt *st = NULL;
	rc = sqlite3_prepare_v2(db, "PRAGMA quick_check", -1, &st, NULL);
	FZ_CHECK(WHO, rc == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW &&
	         strcmp((const char *)sqlite3_column_text(st, 0), "ok") == 0,
	         "the database fails its quick_check: %s", st ? (const char *)sqlite3_column_text(st, 0) : "");
	sqlite3_finalize(st);
	for (size_t i = 0; i < sizeof views / sizeof *views; i++) {
		char sql[128];
		snprintf(sql, sizeof sql, "SELECT count(*) FROM %s", views[i]);
		query(db, sql);
	}
	int64_t n;
	n = query(db, "SELECT count(*) FROM meta_event");
	FZ_CHECK(WHO, (uint64_t)n == x->meta_events, "meta_event has %lld rows for %llu M events", (long long)n,
	         (unsigned long long)x->meta_events);
	n = query(db, "SELECT count(*) FROM counter");
	FZ_CHECK(WHO, (uint64_t)n == x->counters, "counter has %lld rows for %llu series values", (long long)n,
	         (unsigned long long)x->counters);
	n = query(db, "SELECT count(*) FROM flow");
	FZ_CHECK(WHO, (uint64_t)n >= x->flows && (uint64_t)n <= x->flows + x->flow_starts,
	         "flow has %lld rows for %llu t and f events and %llu s events", (long long)n,
	         (unsigned long long)x->flows, (unsigned long long)x->flow_starts);
	n = query(db, "SELECT count(*) FROM metadata");
	FZ_CHECK(WHO, (uint64_t)n == x->meta, "metadata has %lld rows for %llu members", (long long)n,
	         (unsigned long long)x->meta);
	n = query(db, "SELECT count(*) FROM slice");
	uint64_t ended = x->e_events < x->b_events ? x->e_events : x->b_events;
	FZ_CHECK(WHO, (uint64_t)n <= x->slices && (uint64_t)n + ended >= x->slices,
	         "slice has %lld rows for %llu events (%llu B, %llu E)", (long long)n, (unsigned long long)x->slices,
	         (unsigned long long)x->b_events, (unsigned long long)x->e_events);
	n = query(db, "SELECT count(*) FROM slice c LEFT JOIN slice p ON p.id = c.parent_id"
	              " WHERE (c.parent_id IS NULL) != (c.depth = 0) OR (c.parent_id IS NOT NULL AND"
	              " (p.id IS NULL OR p.depth != c.depth - 1 OR p.track_id IS NOT c.track_id))");
	FZ_CHECK(WHO, n == 0, "%lld slices have a parent that is not one level up on their track", (long long)n);
	n = query(db, "SELECT count(*) FROM (SELECT arg_set_id FROM slice UNION SELECT arg_set_id FROM meta_event"
	              " UNION SELECT arg_set_id FROM flow)"
	              " WHERE arg_set_id IS NOT NULL AND arg_set_id NOT IN (SELECT arg_set_id FROM arg)");
	FZ_CHECK(WHO, n == 0, "%lld arg_set_ids have no arguments", (long long)n);
	n = query(db, "SELECT count(*) FROM arg WHERE key_id NOT IN (SELECT id FROM arg_key)");
	FZ_CHECK(WHO, n == 0, "%lld arguments have no key", (long long)n);
	if (!x->b_events && !x->e_events) {
		n = query(db, "SELECT count(*) FROM slice c JOIN slice p ON p.id = c.parent_id WHERE c.ts IS NOT NULL"
		              " AND p.ts IS NOT NULL AND (p.ts > c.ts OR c.ts + c.dur > p.ts + p.dur)");
		FZ_CHECK(WHO, n == 0, "%lld slices nest in a slice that does not hold them whole", (long long)n);
	}
	sqlite3_close(db);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int once;
	const char *dir = fz_scratch();
	if (!dir)
		return 0;
	if (!once++)
		setenv("TMPDIR", dir, 1); /* the writer's sorter spills there: checked, and on tmpfs */
	fz_opts fo = fz_opts_of(data, size);
	unsigned b = fz_byte(&fo);
	char path[512];
	snprintf(path, sizeof path, "%s/out.sqlite", dir);
	tk_reader_opts ro = {.max_value_bytes = 1 << 20, .max_depth = 64};
	tk_writer_opts wo = {.format = TK_FORMAT_SQLITE, .memory_bytes = (size_t)16384 << (b & 3)};
	tk_reader *r = NULL;
	tk_writer *w = NULL;
	expect x = {0};
	const tk_event *ev;
	size_t n = 0, copied = 0;
	int rc = tk_reader_open_memory(&r, data, size, "(fuzz)", &ro);
	if (rc == TK_OK) {
		rc = tk_writer_open_path(&w, path, &wo);
		FZ_CHECK(WHO, rc == TK_OK || rc == TK_ERR_NOMEM, "the writer does not open: %s",
		         w ? tk_writer_error(w) : tk_strerror(rc));
	}
	while (rc == TK_OK && n < MAX_EVENTS && tk_reader_next(r, &ev) == TK_OK) {
		n++;
		count_event(&x, ev);
		rc = tk_writer_write(w, ev);
		FZ_CHECK(WHO, rc == TK_OK || rc == TK_ERR_NOMEM, "event %zu is refused: %s", n - 1, tk_writer_error(w));
	}
	if (rc == TK_OK) {
		rc = tk_copy_meta(w, r, &copied);
		FZ_CHECK(WHO, rc == TK_OK || rc == TK_ERR_NOMEM, "metadata is refused: %s", tk_writer_error(w));
		x.meta = copied;
	}
	if (rc == TK_OK) {
		rc = tk_writer_close(w);
		FZ_CHECK(WHO, rc == TK_OK || rc == TK_ERR_NOMEM, "the database is not written: %s", tk_writer_error(w));
	}
	tk_writer_free(w);
	tk_reader_free(r);
	if (rc == TK_OK) {
		check_db(path, &x);
		n_written++;
	}
	unlink(path);
	FZ_CHECK(WHO, fz_clear_dir(dir, 0) == 0, "the writer left files in the temporary directory");
	return 0;
}

#ifndef TK_LIBFUZZER
#include "fuzz_files.h"

int main(int argc, char **argv)
{
	int rc = tk_fuzz_files(argc, argv, NULL);
	printf(WHO ": %d inputs ran, %lu databases written\n", argc - 1, n_written);
	return rc;
}
#endif
