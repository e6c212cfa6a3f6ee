/* test_writer.c: writer tests: events and metadata read back equal, escaping, temporary files, gzip, fds. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"

#define FFFD "\xEF\xBF\xBD"

static tk_event base_event(char ph)
{
	tk_event e;
	memset(&e, 0, sizeof e);
	e.ph = ph;
	e.has = TK_HAS_PH;
	return e;
}

static tu_events read_back(const char *path, tk_reader **rp)
{
	tk_reader *r = NULL;
	int rc = tk_reader_open_path(&r, path, NULL);
	if (rc)
		fail_msg("%s: %s", path, tk_reader_error(r));
	tu_events ev = {0};
	rc = tu_read_all(r, &ev);
	if (rc != TK_EOF)
		fail_msg("%s: rc %d: %s", path, rc, tk_reader_error(r));
	if (tk_reader_warning(r, 0))
		fail_msg("%s: warning: %s", path, tk_reader_warning(r, 0));
	if (rp)
		*rp = r;
	else
		tk_reader_free(r);
	return ev;
}

static tk_writer *open_writer(const char *path, const tk_writer_opts *o)
{
	tk_writer *w = NULL;
	int rc = tk_writer_open_path(&w, path, o);
	if (rc)
		fail_msg("open %s: %d %s", path, rc, tk_writer_error(w));
	return w;
}

static void write_ok(tk_writer *w, const tk_event *e)
{
	int rc = tk_writer_write(w, e);
	if (rc)
		fail_msg("write: %d %s", rc, tk_writer_error(w));
}

static void close_ok(tk_writer *w)
{
	int rc = tk_writer_close(w);
	if (rc)
		fail_msg("close: %d %s", rc, tk_writer_error(w));
	tk_writer_free(w);
}

/* A set of events built by hand, covering every field and odd values. */
static size_t sample_events(tk_event *ev)
{
	static const char nul_name[] = "a\0b";
	size_t n = 0;
	tk_event e = base_event('X');
	e.has |= TK_HAS_TS | TK_HAS_DUR | TK_HAS_NAME | TK_HAS_CAT;
	e.ts = 2413669096090100;
	e.dur = 31250;
	e.name = tu_sv("aten::addmm");
	e.cat = tu_sv("cpu_op");
	e.pid = (tk_id){TK_ID_INT, 4093, {NULL, 0}};
	e.tid = (tk_id){TK_ID_STR, 0, {"stream 7", 8}};
	e.args = tu_sv("{\"External id\":12345,\"Input Dims\":[[8,1024],[],[1024,1024],null]}");
	ev[n++] = e;
	static const int64_t times[] = {0, 1, 999, 1000, 1001, -1, -500, -1500, -1000,
	                                1700000000123456789, INT64_MAX, INT64_MIN + 1};
	for (size_t i = 0; i < sizeof times / sizeof times[0]; i++) {
		e = base_event('X');
		e.has |= TK_HAS_TS | TK_HAS_DUR;
		e.ts = times[i];
		e.dur = times[sizeof times / sizeof times[0] - 1 - i];
		ev[n++] = e;
	}
	e = base_event('f');
	e.has |= TK_HAS_TS | TK_HAS_NAME | TK_HAS_CAT;
	e.ts = 5;
	e.name = tu_sv("ac2g");
	e.cat = tu_sv("ac2g");
	e.id = (tk_id){TK_ID_INT, INT64_MIN, {NULL, 0}};
	e.pid = (tk_id){TK_ID_STR, 0, {"Spans", 5}};
	e.tid = (tk_id){TK_ID_STR, 0, {"", 0}};
	e.extra = tu_sv("\"bp\":\"e\"");
	ev[n++] = e;
	e = base_event('i');
	e.has |= TK_HAS_NAME;
	e.name = tu_sv("q\"uo\\te / \xC3\xA9 \xF0\x9F\x98\x80 ]}{[");
	e.id = (tk_id){TK_ID_STR, 0, {"0x1f", 4}};
	e.extra = tu_sv("\"s\":\"g\",\"custom\":{\"k\":[1,2.5,\"x\",null,true]}");
	e.args = tu_sv("{}");
	ev[n++] = e;
	e = base_event('M');
	e.has |= TK_HAS_NAME;
	e.name = (tk_sv){nul_name, 3};
	e.pid = (tk_id){TK_ID_STR, 0, {"4093687616", 10}};
	e.args = tu_sv("{\"name\":\"python3\"}");
	ev[n++] = e;
	memset(&e, 0, sizeof e); /* nothing at all */
	ev[n++] = e;
	return n;
}

static void test_events_read_back_equal(void **state)
{
	(void)state;
	tk_event ev[32];
	size_t n = sample_events(ev);
	const char *path = tu_path("sample.json");
	tk_writer *w = open_writer(path, NULL);
	for (size_t i = 0; i < n; i++)
		write_ok(w, &ev[i]);
	close_ok(w);
	tu_events back = read_back(path, NULL);
	assert_int_equal(back.n, n);
	for (size_t i = 0; i < n; i++)
		if (!tk_event_equal(&ev[i], back.ev[i]))
			fail_msg("event %zu differs after writing and reading back (ts %lld -> %lld)", i,
			         (long long)ev[i].ts, (long long)back.ev[i]->ts);
	tu_events_free(&back);
	/* the text is strict JSON: valid UTF-8, no raw control characters */
	size_t len;
	char *t = tu_read_file(path, &len);
	assert_true(tu_utf8_valid(t, len));
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)t[i] < 0x20 && t[i] != '\n')
			fail_msg("raw control byte 0x%02x at %zu", (unsigned char)t[i], i);
	assert_int_equal(t[0], '{');
	tu_write_file(tu_path("copy.json"), t, len);
	free(t);
}

/* The most negative time: written as text that the reader takes back. */
static void test_extreme_times_read_back(void **state)
{
	(void)state;
	tk_event e = base_event('X');
	e.has |= TK_HAS_TS | TK_HAS_DUR;
	e.ts = INT64_MIN;
	e.dur = INT64_MAX;
	const char *path = tu_path("extreme.json");
	tk_writer *w = open_writer(path, NULL);
	write_ok(w, &e);
	close_ok(w);
	tk_reader *r = NULL;
	assert_int_equal(tk_reader_open_path(&r, path, NULL), 0);
	const tk_event *back;
	int rc = tk_reader_next(r, &back);
	if (rc != TK_OK)
		fail_msg("ts INT64_MIN written, read back: rc %d: %s", rc, tk_reader_error(r));
	assert_int_equal(back->ts, INT64_MIN);
	assert_int_equal(back->dur, INT64_MAX);
	tk_reader_free(r);
}

/* Control characters, quotes and invalid UTF-8 in every string field. */
static void test_strings_escaped_and_repaired(void **state)
{
	(void)state;
	tk_event e = base_event('X');
	e.has |= TK_HAS_NAME | TK_HAS_CAT;
	e.name = tu_sv("a\x01\x1f\n\t\"\\b\x7f");
	e.cat = tu_sv("bad \xff here");
	e.pid = (tk_id){TK_ID_STR, 0, {"\xc0\xaf", 2}};
	e.tid = (tk_id){TK_ID_STR, 0, {"\xed\xa0\x80", 3}};
	tk_event f = base_event('X');
	f.args = tu_sv("{\"k\":\"\\ud800\",\"v\":\"x\xfey\",\"c\":\"tab\there\"}"); /* not marked valid */
	const char *path = tu_path("strings.json");
	tk_writer *w = open_writer(path, NULL);
	write_ok(w, &e);
	write_ok(w, &f);
	close_ok(w);
	size_t len;
	char *t = tu_read_file(path, &len);
	assert_true(tu_utf8_valid(t, len));
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)t[i] < 0x20 && t[i] != '\n')
			fail_msg("raw control byte 0x%02x at %zu of %s", (unsigned char)t[i], i, t);
	assert_null(strstr(t, "\\ud800"));
	assert_null(strstr(t, "\\uD800"));
	free(t);
	tu_events back = read_back(path, NULL);
	assert_int_equal(back.n, 2);
	assert_true(tu_sv_is(back.ev[0]->name, "a\x01\x1f\n\t\"\\b\x7f"));
	assert_true(tu_sv_is(back.ev[0]->cat, "bad " FFFD " here"));
	assert_true(tu_utf8_valid(back.ev[0]->pid.str.ptr, back.ev[0]->pid.str.len));
	assert_true(tu_utf8_valid(back.ev[0]->tid.str.ptr, back.ev[0]->tid.str.len));
	char buf[32];
	size_t n;
	assert_int_equal(tk_args_get_str(back.ev[1], "k", buf, sizeof buf, &n), 0);
	assert_string_equal(buf, FFFD);
	assert_int_equal(tk_args_get_str(back.ev[1], "v", buf, sizeof buf, &n), 0);
	assert_string_equal(buf, "x" FFFD "y");
	assert_int_equal(tk_args_get_str(back.ev[1], "c", buf, sizeof buf, &n), 0);
	assert_string_equal(buf, "tab\there");
	tu_events_free(&back);
}

static void test_repaired_count(void **state)
{
	(void)state;
	tk_event e = base_event('X');
	e.has |= TK_HAS_NAME | TK_HAS_CAT;
	e.name = tu_sv("a\xff\xfe" "b"); /* one string, two bad bytes */
	e.cat = tu_sv("ok");
	e.tid = (tk_id){TK_ID_STR, 0, {"\xed\xa0\x80", 3}};
	e.args = tu_sv("{\"k\":\"\\udc00\",\"ok\":\"\xC3\xA9\"}");
	tk_writer *w = open_writer(tu_path("count.json"), NULL);
	write_ok(w, &e);
	assert_int_equal(tk_writer_add_meta(w, tu_sv("m\xff"), tu_sv("\"v\xff\"")), 0);
	close_ok(w);
	tk_reader *r = NULL;
	tu_events back = read_back(tu_path("count.json"), &r);
	assert_int_equal(tk_reader_get_stats(r)->repaired_strings, 0);
	tk_sv k, v;
	assert_int_equal(tk_reader_meta_get(r, 0, &k, &v, NULL), 0);
	assert_true(tu_sv_is(k, "m" FFFD));
	assert_true(tu_sv_is(v, "\"v" FFFD "\""));
	tk_reader_free(r);
	tu_events_free(&back);

	w = open_writer(tu_path("count2.json"), NULL);
	write_ok(w, &e);
	/* name, tid and the lone surrogate in args */
	assert_int_equal(tk_writer_repaired_strings(w), 3);
	assert_int_equal(tk_writer_add_meta(w, tu_sv("m\xff"), tu_sv("\"v\xff\"")), 0);
	assert_int_equal(tk_writer_repaired_strings(w), 5);
	close_ok(w);
}

/* Metadata added before the first event goes before "traceEvents", the rest after, in order. */
static void test_metadata_order(void **state)
{
	(void)state;
	const char *path = tu_path("meta.json");
	tk_writer *w = open_writer(path, NULL);
	assert_int_equal(tk_writer_add_meta(w, tu_sv("schemaVersion"), tu_sv("1")), 0);
	assert_int_equal(tk_writer_add_meta(w, tu_sv("deviceProperties"),
	                                    tu_sv("[ { \"id\" : 0 ,\n \"name\": \"H100\" } ]")), 0);
	assert_int_equal(tk_writer_add_meta(w, tu_sv("we\"ird\nkey"), tu_sv("\"v\"")), 0);
	tk_event e = base_event('X');
	write_ok(w, &e);
	assert_int_equal(tk_writer_add_meta(w, tu_sv("displayTimeUnit"), tu_sv("\"ms\"")), 0);
	write_ok(w, &e);
	assert_int_equal(tk_writer_add_meta(w, tu_sv("baseTimeNanoseconds"), tu_sv("1727743122000000000")), 0);
	assert_int_equal(tk_writer_add_meta(w, tu_sv("traceName"), tu_sv("\"x\"")), 0);
	close_ok(w);
	tk_reader *r = NULL;
	tu_events back = read_back(path, &r);
	assert_int_equal(back.n, 2);
	static const char *keys[] = {"schemaVersion", "deviceProperties", "we\"ird\nkey",
	                             "displayTimeUnit", "baseTimeNanoseconds", "traceName"};
	static const char *vals[] = {"1", "[{\"id\":0,\"name\":\"H100\"}]", "\"v\"", "\"ms\"",
	                             "1727743122000000000", "\"x\""};
	assert_int_equal(tk_reader_meta_count(r), 6);
	for (size_t i = 0; i < 6; i++) {
		tk_sv k, v;
		int after;
		assert_int_equal(tk_reader_meta_get(r, i, &k, &v, &after), 0);
		assert_true(tu_sv_is(k, keys[i]));
		assert_true(tu_sv_is(v, vals[i]));
		assert_int_equal(after, i >= 3);
	}
	tk_reader_free(r);
	tu_events_free(&back);
}

static void test_no_events(void **state)
{
	(void)state;
	const char *path = tu_path("none.json");
	tk_writer *w = open_writer(path, NULL);
	close_ok(w);
	tk_reader *r = NULL;
	tu_events back = read_back(path, &r);
	assert_int_equal(back.n, 0);
	assert_int_equal(tk_reader_meta_count(r), 0);
	assert_false(tk_reader_is_bare_array(r));
	tk_reader_free(r);
	w = open_writer(path, NULL);
	assert_int_equal(tk_writer_add_meta(w, tu_sv("a"), tu_sv("[1]")), 0);
	close_ok(w);
	back = read_back(path, &r);
	assert_int_equal(back.n, 0);
	assert_true(tu_sv_is(tk_reader_meta_find(r, "a"), "[1]"));
	tk_reader_free(r);

	/* metadata added with tk_writer_add_meta_after goes after the (empty) list */
	w = open_writer(path, NULL);
	assert_int_equal(tk_writer_add_meta(w, tu_sv("a"), tu_sv("1")), 0);
	assert_int_equal(tk_writer_add_meta_after(w, tu_sv("b"), tu_sv("2")), 0);
	close_ok(w);
	back = read_back(path, &r);
	assert_int_equal(tk_reader_meta_count(r), 2);
	tk_sv k;
	int after;
	assert_int_equal(tk_reader_meta_get(r, 0, &k, NULL, &after), 0);
	assert_true(tu_sv_is(k, "a"));
	assert_int_equal(after, 0);
	assert_int_equal(tk_reader_meta_get(r, 1, &k, NULL, &after), 0);
	assert_true(tu_sv_is(k, "b"));
	assert_int_equal(after, 1);
	tk_reader_free(r);

	/* and tk_copy_meta keeps a member that followed an empty event list after it */
	const char *in = "{\"a\":1,\"traceEvents\":[],\"b\":{\"c\":2}}";
	tk_reader *src = tu_open_mem(in, strlen(in), "in.json", NULL);
	tu_events none = {0};
	assert_int_equal(tu_read_all(src, &none), TK_EOF);
	w = open_writer(path, NULL);
	size_t copied = 0;
	assert_int_equal(tk_copy_meta(w, src, &copied), 0);
	close_ok(w);
	tk_reader_free(src);
	back = read_back(path, &r);
	assert_int_equal(tk_reader_meta_count(r), 2);
	assert_int_equal(tk_reader_meta_get(r, 1, &k, NULL, &after), 0);
	assert_true(tu_sv_is(k, "b"));
	assert_int_equal(after, 1);
	tk_reader_free(r);
}

/* Invalid input from the caller is refused with TK_ERR_ARG, and a writer
 * that is not closed leaves no file. */
static void test_invalid_caller_input(void **state)
{
	(void)state;
	static const char *bad_json[] = {"", "{", "1 2", "{\"a\":}", "[1,]", "nul", "\"abc", "{a:1}", "NaN"};
	for (size_t i = 0; i < sizeof bad_json / sizeof bad_json[0]; i++) {
		tk_writer *w = open_writer(tu_path("bad.json"), NULL);
		int rc = tk_writer_add_meta(w, tu_sv("k"), tu_sv(bad_json[i]));
		if (rc != TK_ERR_ARG)
			fail_msg("metadata value '%s': rc %d, want TK_ERR_ARG", bad_json[i], rc);
		assert_true(tk_writer_error(w)[0] != 0);
		tk_writer_free(w);

		w = open_writer(tu_path("bad.json"), NULL);
		tk_event e = base_event('X');
		e.args = tu_sv(bad_json[i]);
		rc = tk_writer_write(w, &e);
		if (rc != TK_ERR_ARG)
			fail_msg("args '%s': rc %d, want TK_ERR_ARG", bad_json[i], rc);
		tk_writer_free(w);
	}
	static const char *bad_extra[] = {"\"s\":", "\"s\"", "s:1", "\"s\":1,", "\"s\":1}{\"t\":2"};
	for (size_t i = 0; i < sizeof bad_extra / sizeof bad_extra[0]; i++) {
		tk_writer *w = open_writer(tu_path("bad.json"), NULL);
		tk_event e = base_event('i');
		e.extra = tu_sv(bad_extra[i]);
		int rc = tk_writer_write(w, &e);
		if (rc != TK_ERR_ARG)
			fail_msg("extra '%s': rc %d, want TK_ERR_ARG", bad_extra[i], rc);
		tk_writer_free(w);
	}
	static const char bad_ph[] = {'"', '\\', '\n', 0, (char)0xC3, 0x7f};
	for (size_t i = 0; i < sizeof bad_ph; i++) {
		tk_writer *w = open_writer(tu_path("bad.json"), NULL);
		tk_event e = base_event(bad_ph[i]);
		assert_int_equal(tk_writer_write(w, &e), TK_ERR_ARG);
		tk_writer_free(w);
	}
	tk_writer *w = open_writer(tu_path("bad.json"), NULL);
	assert_int_equal(tk_writer_write(w, NULL), TK_ERR_ARG);
	assert_int_equal(tk_writer_add_meta(w, (tk_sv){NULL, 0}, tu_sv("1")), TK_ERR_ARG);
	tk_writer_free(w);
	assert_int_equal(tu_count_prefix(tu_tmpdir(), "bad.json"), 0);
	tk_writer_free(NULL);
}

/* Invalid args name the output, the event and the byte where they go wrong. */
static void test_invalid_args_message(void **state)
{
	(void)state;
	const char *path = tu_path("badargs.json");
	tk_writer *w = open_writer(path, NULL);
	tk_event e = base_event('X');
	e.name = tu_sv("aten::mm");
	assert_int_equal(tk_writer_write(w, &e), 0);
	e.args = tu_sv("{\"a\":1,\"b\":}");
	assert_int_equal(tk_writer_write(w, &e), TK_ERR_ARG);
	const char *msg = tk_writer_error(w);
	if (!tu_contains(msg, path) || !tu_contains(msg, "event 2 ('aten::mm')") ||
	    !tu_contains(msg, "args") || !tu_contains(msg, "byte 11 of 12"))
		fail_msg("message: %s", msg);
	tk_writer_free(w);
	w = open_writer(path, NULL);
	assert_int_equal(tk_writer_add_meta(w, tu_sv("deviceProperties"), tu_sv("[1,2")), TK_ERR_ARG);
	if (!tu_contains(tk_writer_error(w), path) || !tu_contains(tk_writer_error(w), "'deviceProperties'"))
		fail_msg("message: %s", tk_writer_error(w));
	tk_writer_free(w);
}

/* Calls a writer refuses without harm: each returns its error, and the
 * output written before and after it is complete. */
static void test_refusals_keep_writer(void **state)
{
	(void)state;
	static const char *const names[] = {"keep.json", "keep.tkb", "keep.pftrace", "keep.sqlite"};
	for (size_t f = 0; f < sizeof names / sizeof *names; f++) {
		const char *path = tu_path(names[f]);
		tk_writer *w = open_writer(path, NULL);
		tk_event e = base_event('X');
		e.has |= TK_HAS_TS | TK_HAS_DUR | TK_HAS_NAME;
		e.dur = 5;
		e.name = tu_sv("first");
		e.pid = (tk_id){TK_ID_INT, 1, {NULL, 0}};
		e.tid = (tk_id){TK_ID_INT, 1, {NULL, 0}};
		write_ok(w, &e);
		/* a budget where the format has none: refused, and asked for nothing */
		int budget = f == 0 ? 0 : TK_ERR_UNSUPPORTED;
		assert_int_equal(tk_writer_set_max_bytes(w, 1 << 20), budget);
		if (budget && !tu_contains(tk_writer_error(w), "JSON output only"))
			fail_msg("%s: message: %s", path, tk_writer_error(w));
		assert_int_equal(tk_writer_set_max_bytes(w, 0), 0);
		/* a second "traceEvents" would make a file no reader takes */
		assert_int_equal(tk_writer_add_meta(w, tu_sv("traceEvents"), tu_sv("[]")), TK_ERR_ARG);
		assert_true(tu_contains(tk_writer_error(w), "traceEvents"));
		/* a name of length 3 without its text */
		tk_event bad = e;
		bad.name = (tk_sv){NULL, 3};
		assert_int_equal(tk_writer_write(w, &bad), TK_ERR_ARG);
		if (!tu_contains(tk_writer_error(w), path) || !tu_contains(tk_writer_error(w), "event 2"))
			fail_msg("%s: message: %s", path, tk_writer_error(w));
		/* a phase JSON cannot hold as one character; the other formats keep it */
		bad = e;
		bad.ph = '\\';
		bad.ts = 7;
		bad.name = tu_sv("quote");
		if (f == 0) {
			assert_int_equal(tk_writer_write(w, &bad), TK_ERR_ARG);
			assert_true(tu_contains(tk_writer_error(w), "phase"));
		} else {
			write_ok(w, &bad);
		}
		bad = e;
		bad.tid = (tk_id){TK_ID_STR, 0, {NULL, 1}};
		const tk_event *group[2] = {&e, &bad};
		assert_int_equal(tk_writer_write_group(w, group, 2), TK_ERR_ARG); /* all or none */
		e.ts = 10;
		e.name = tu_sv("second");
		write_ok(w, &e);
		assert_string_equal(tk_writer_error(w), ""); /* the refusals were the calls before */
		assert_int_equal(tk_writer_close(w), 0);
		/* after close: refused, and the file stays as closed */
		assert_int_equal(tk_writer_write(w, &e), TK_ERR_ARG);
		assert_true(tu_contains(tk_writer_error(w), "closed"));
		assert_int_equal(tk_writer_add_meta(w, tu_sv("k"), tu_sv("1")), TK_ERR_ARG);
		assert_int_equal(tk_writer_close(w), 0);
		tk_writer_free(w);
		if (f == 3) { /* no reader: the database, through SQLite */
			sqlite3 *db = NULL;
			sqlite3_stmt *st = NULL;
			assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
			assert_int_equal(sqlite3_prepare_v2(db,
			                                    "SELECT group_concat(s.name || ':' || ifnull(a.display_value, ''), ',')"
			                                    " FROM (SELECT * FROM slice ORDER BY ts) s"
			                                    " LEFT JOIN args a ON a.arg_set_id = s.arg_set_id",
			                                    -1, &st, NULL),
			                 SQLITE_OK);
			assert_int_equal(sqlite3_step(st), SQLITE_ROW);
			/* the slices and the odd phase, as a JSON string's text */
			assert_string_equal((const char *)sqlite3_column_text(st, 0), "first:,quote:\\,second:");
			sqlite3_finalize(st);
			sqlite3_close(db);
			continue;
		}
		tu_events back = read_back(path, NULL);
		assert_int_equal(back.n, f == 0 ? 2 : 3);
		assert_true(tu_sv_is(back.ev[0]->name, "first"));
		if (f) {
			assert_true(tu_sv_is(back.ev[1]->name, "quote"));
			assert_int_equal(back.ev[1]->ph, '\\');
		}
		assert_true(tu_sv_is(back.ev[f == 0 ? 1 : 2]->name, "second"));
		tu_events_free(&back);
	}
	/* an empty path is refused at once, by writers and other outputs */
	tk_writer *w = NULL;
	assert_int_equal(tk_writer_open_path(&w, "", NULL), TK_ERR_ARG);
	assert_true(tu_contains(tk_writer_error(w), "empty"));
	tk_writer_free(w);
	tk_outfile *o = NULL;
	assert_int_equal(tk_outfile_open(&o, ""), TK_ERR_ARG);
	assert_true(tu_contains(tk_outfile_error(o), "empty"));
	tk_outfile_free(o);
	/* NULL events and readers: refused, never followed */
	assert_int_equal(tk_event_equal(NULL, NULL), 1);
	tk_event e = base_event('i');
	assert_int_equal(tk_event_equal(&e, NULL), 0);
	assert_int_equal(tk_event_equal(NULL, &e), 0);
	tk_reader *r = NULL;
	static const char text[] = "{\"traceEvents\":[{\"ph\":\"i\"}]}";
	assert_int_equal(tk_reader_open_memory(&r, text, sizeof text - 1, "m", NULL), 0);
	assert_int_equal(tk_reader_next(r, NULL), TK_ERR_ARG);
	assert_int_equal(tk_copy_meta(NULL, r, NULL), TK_ERR_ARG);
	tk_reader_free(r);
}

/* .tkb output counts the strings of args whose invalid UTF-8 it replaced,
 * as JSON output does. */
static void test_tkb_repaired_count(void **state)
{
	(void)state;
	const char *path = tu_path("repaired.tkb");
	tk_writer *w = open_writer(path, NULL);
	tk_event e = base_event('i');
	e.args = tu_sv("{\"bad\":\"\xff\",\"good\":\"x\",\"also\":[\"\xc3\"]}");
	write_ok(w, &e);
	assert_int_equal(tk_writer_repaired_strings(w), 2);
	close_ok(w);
	tu_events back = read_back(path, NULL);
	assert_int_equal(back.n, 1);
	assert_true(tu_sv_is(back.ev[0]->args, "{\"bad\":\"" FFFD "\",\"good\":\"x\",\"also\":[\"" FFFD "\"]}"));
	tu_events_free(&back);
}

/* The output appears under its name only when closed; nothing is left otherwise. */
static void test_temporary_file(void **state)
{
	(void)state;
	const char *dir = tu_tmpdir();
	char path[512];
	snprintf(path, sizeof path, "%s/out.json", dir);
	tk_writer *w = open_writer(path, NULL);
	tk_event e = base_event('X');
	write_ok(w, &e);
	assert_int_equal(access(path, F_OK), -1);
	assert_int_equal(tu_count_prefix(dir, "out.json.tmp-"), 1);
	assert_int_equal(tk_writer_close(w), 0);
	assert_int_equal(access(path, F_OK), 0);
	assert_int_equal(tu_count_prefix(dir, "out.json.tmp-"), 0);
	/* closing twice is harmless */
	assert_int_equal(tk_writer_close(w), 0);
	tk_writer_free(w);
	/* created with the usual permissions (0666 less the umask) */
	mode_t um = umask(022);
	umask(um);
	struct stat st;
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0666 & ~um);

	/* freed without a close: the old file stays as it was, no temporary remains */
	tu_write_file(path, "old", 3);
	w = open_writer(path, NULL);
	for (int i = 0; i < 100000; i++) /* enough to flush to the temporary file */
		write_ok(w, &e);
	tk_writer_free(w);
	size_t len;
	char *t = tu_read_file(path, &len);
	assert_int_equal(len, 3);
	assert_memory_equal(t, "old", 3);
	free(t);
	assert_int_equal(tu_count_prefix(dir, "out.json.tmp-"), 0);
	/* and with a close it is replaced */
	w = open_writer(path, NULL);
	write_ok(w, &e);
	close_ok(w);
	tu_events back = read_back(path, NULL);
	assert_int_equal(back.n, 1);
	tu_events_free(&back);

	/* a fresh name never appears if the writer is not closed */
	snprintf(path, sizeof path, "%s/never.json", dir);
	w = open_writer(path, NULL);
	write_ok(w, &e);
	tk_writer_free(w);
	assert_int_equal(tu_count_prefix(dir, "never.json"), 0);
}

static void test_open_errors(void **state)
{
	(void)state;
	tk_writer *w = NULL;
	char path[512];
	snprintf(path, sizeof path, "%s/no/such/dir/out.json", tu_tmpdir());
	assert_int_equal(tk_writer_open_path(&w, path, NULL), TK_ERR_IO);
	assert_true(tu_contains(tk_writer_error(w), path));
	tk_writer_free(w);
	w = NULL;
	assert_int_equal(tk_writer_open_path(&w, NULL, NULL), TK_ERR_ARG);
	tk_writer_free(w);
	w = NULL;
	assert_int_equal(tk_writer_open_fd(&w, -1, "x", NULL), TK_ERR_ARG);
	tk_writer_free(w);
}

/* SQLite output: a database file under the name only when closed; no fd. */
static void test_sqlite_output(void **state)
{
	(void)state;
	tk_writer_opts o = {.format = TK_FORMAT_AUTO, .gzip = -1};
	assert_int_equal(tk_format_from_name("x.sqlite", &o), 0);
	assert_int_equal(o.format, TK_FORMAT_SQLITE);
	assert_int_equal(tk_format_from_name("sqlite", &o), 0);
	assert_int_equal(o.format, TK_FORMAT_SQLITE);
	tk_writer *w = NULL;
	assert_int_equal(tk_writer_open_fd(&w, 1, "(stdout)", &o), TK_ERR_UNSUPPORTED);
	assert_true(tu_contains(tk_writer_error(w), "SQLite"));
	tk_writer_free(w);

	const char *dir = tu_tmpdir();
	char path[512];
	snprintf(path, sizeof path, "%s/out.sqlite", dir);
	tk_event e = base_event('X');
	e.has |= TK_HAS_TS | TK_HAS_DUR;
	e.ts = 1000;
	e.dur = 50;
	e.name = tu_sv("op");
	e.pid = (tk_id){TK_ID_INT, 1, {NULL, 0}};
	e.tid = (tk_id){TK_ID_INT, 2, {NULL, 0}};
	e.args = tu_sv("{\"a\":[1,{\"b\":\"x\"}],\"c\":null}");
	/* freed without a close: nothing under the name, no temporary left */
	w = open_writer(path, NULL);
	write_ok(w, &e);
	tk_writer_free(w);
	assert_int_equal(access(path, F_OK), -1);
	assert_int_equal(tu_count_prefix(dir, "out.sqlite"), 0);
	/* closed: a database */
	w = open_writer(path, NULL);
	assert_int_equal(tk_writer_add_meta(w, tu_sv("schemaVersion"), tu_sv("1")), 0);
	write_ok(w, &e);
	e.ts = 1010;
	e.dur = 10;
	write_ok(w, &e);
	close_ok(w);
	size_t n;
	char *t = tu_read_file(path, &n);
	assert_true(n > 100);
	assert_memory_equal(t, "SQLite format 3", 16);
	free(t);
	assert_int_equal(tu_count_prefix(dir, "out.sqlite.tmp-"), 0);
	/* no reader takes it: an error, not a crash */
	tk_reader *r = NULL;
	assert_int_not_equal(tk_reader_open_path(&r, path, NULL), 0);
	assert_true(tu_contains(tk_reader_error(r), "out.sqlite"));
	tk_reader_free(r);
	/* a byte budget is refused */
	w = open_writer(path, NULL);
	assert_int_not_equal(tk_writer_set_max_bytes(w, 1 << 20), 0);
	tk_writer_free(w);
	/* args of no text (a caller's event, not NUL-terminated): an error, with
	 * nothing read past them (ASan) */
	char *nothing = malloc(1);
	e.args = (tk_sv){nothing, 0};
	e.has |= TK_HAS_VALID_JSON; /* taken on trust, as from a reader */
	w = open_writer(path, NULL);
	int rc = tk_writer_write(w, &e); /* or at the close, where the rows are written */
	if (!rc)
		rc = tk_writer_close(w);
	assert_int_equal(rc, TK_ERR_FORMAT);
	assert_true(tu_contains(tk_writer_error(w), "not valid JSON"));
	tk_writer_free(w);
	free(nothing);
}

/* The names created in the directory watched as wd since the last call,
 * each followed by a space, into out. */
static void created(int fd, int wd, char *out, size_t cap)
{
	static char buf[1 << 16] __attribute__((aligned(__alignof__(struct inotify_event))));
	ssize_t n;
	while ((n = read(fd, buf, sizeof buf)) > 0)
		for (char *p = buf; p < buf + n;) {
			const struct inotify_event *ev = (const void *)p;
			if (ev->wd == wd && ev->len && strlen(out) + strlen(ev->name) + 2 < cap) {
				strcat(out, ev->name);
				strcat(out, " ");
			}
			p += sizeof *ev + ev->len;
		}
}

/* n (at most 40,000) slices of distinct names, in no time order, to w
 * (the sorter and SQLite's index builds spill past a small budget): 0,
 * or the error. */
static int write_spilling(tk_writer *w, unsigned n)
{
	char name[32], args[32];
	for (unsigned i = 0; i < n; i++) {
		tk_event e = base_event('X');
		e.has |= TK_HAS_TS | TK_HAS_DUR | TK_HAS_NAME;
		e.ts = (int64_t)(i * 7919u % n) * 1000;
		e.dur = 10;
		snprintf(name, sizeof name, "op%u", i * 104729u % n);
		snprintf(args, sizeof args, "{\"i\":%u}", i);
		e.name = tu_sv(name);
		e.args = tu_sv(args);
		e.pid = (tk_id){TK_ID_INT, 1, {NULL, 0}};
		e.tid = (tk_id){TK_ID_INT, 1 + i % 4, {NULL, 0}};
		int rc = tk_writer_write(w, &e);
		if (rc)
			return rc;
	}
	return 0;
}

/* tk_writer_opts.tmpdir: the sorted runs of .pftrace and .sqlite output,
 * and SQLite's own temporary files, go to directories made there (none in
 * $TMPDIR), removed at the end; one that cannot be made there is an error
 * that names it. */
static void test_spill_dir(void **state)
{
	(void)state;
	char spill[512], env[512], gone[512];
	snprintf(spill, sizeof spill, "%s/spill", tu_tmpdir());
	snprintf(env, sizeof env, "%s/env", tu_tmpdir());
	snprintf(gone, sizeof gone, "%s/no/such/dir", tu_tmpdir());
	assert_int_equal(mkdir(spill, 0700), 0);
	assert_int_equal(mkdir(env, 0700), 0);
	char *old = getenv("TMPDIR") ? strdup(getenv("TMPDIR")) : NULL;
	setenv("TMPDIR", env, 1);
	int fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	assert_true(fd >= 0);
	int ws = inotify_add_watch(fd, spill, IN_CREATE), we = inotify_add_watch(fd, env, IN_CREATE);
	assert_true(ws >= 0 && we >= 0);
	static const struct {
		int format;
		const char *name;
		size_t memory;
		unsigned events;
		const char *made; /* the directories made in tmpdir */
	} cases[] = {
		{TK_FORMAT_PFTRACE, "spilled.pftrace", 256 << 10, 30000, "tksort-"},
		{TK_FORMAT_SQLITE, "spilled.sqlite", 128 << 10, 40000, "tksort- tksql-"},
	};
	for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
		char path[512], in_spill[1024] = "", in_env[1024] = "";
		snprintf(path, sizeof path, "%s/%s", tu_tmpdir(), cases[c].name);
		tk_writer_opts o = {.format = cases[c].format, .memory_bytes = cases[c].memory, .tmpdir = spill};
		tk_writer *w = open_writer(path, &o);
		assert_int_equal(write_spilling(w, cases[c].events), 0);
		close_ok(w);
		created(fd, ws, in_spill, sizeof in_spill);
		created(fd, we, in_env, sizeof in_env);
		char want[64];
		snprintf(want, sizeof want, "%s", cases[c].made);
		for (char *k = strtok(want, " "); k; k = strtok(NULL, " "))
			if (!tu_contains(in_spill, k))
				fail_msg("%s: no %s directory made in tmpdir (made: %s)", cases[c].name, k, in_spill);
		if (in_env[0])
			fail_msg("%s: made in $TMPDIR: %s", cases[c].name, in_env);
		assert_int_equal(tu_count_prefix(spill, "tk"), 0); /* removed */
		if (cases[c].format == TK_FORMAT_PFTRACE) {
			tu_events ev = read_back(path, NULL);
			assert_int_equal(ev.n, cases[c].events);
			tu_events_free(&ev);
		} else {
			size_t n;
			char *t = tu_read_file(path, &n);
			assert_true(n > 100 && memcmp(t, "SQLite format 3", 16) == 0);
			free(t);
		}
		/* a tmpdir that is not there: an error that names it, no output */
		snprintf(path, sizeof path, "%s/failed-%s", tu_tmpdir(), cases[c].name);
		o.tmpdir = gone;
		w = open_writer(path, &o);
		int rc = write_spilling(w, cases[c].events);
		if (!rc)
			rc = tk_writer_close(w);
		assert_int_equal(rc, TK_ERR_IO);
		if (!tu_contains(tk_writer_error(w), gone))
			fail_msg("%s: %s", cases[c].name, tk_writer_error(w));
		tk_writer_free(w);
		assert_int_equal(access(path, F_OK), -1);
	}
	close(fd);
	if (old) {
		setenv("TMPDIR", old, 1);
		free(old);
	} else {
		unsetenv("TMPDIR");
	}
}

/* tk_outfile: published whole when closed, never a device replaced, a
 * full disk an error that names the file. */
static void test_outfile(void **state)
{
	(void)state;
	const char *dir = tu_tmpdir();
	char path[512];
	snprintf(path, sizeof path, "%s/table.txt", dir);
	tk_outfile *o = NULL;
	assert_int_equal(tk_outfile_open(&o, path), 0);
	assert_int_equal(fputs("rows\n", tk_outfile_stream(o)) >= 0, 1);
	assert_int_equal(access(path, F_OK), -1); /* not yet */
	assert_int_equal(tu_count_prefix(dir, "table.txt.tmp-"), 1);
	assert_int_equal(tk_outfile_close(o), 0);
	assert_int_equal(tk_outfile_close(o), 0); /* twice is harmless */
	assert_string_equal(tk_outfile_error(o), "");
	tk_outfile_free(o);
	size_t n;
	char *t = tu_read_file(path, &n);
	assert_int_equal(n, 5);
	assert_memory_equal(t, "rows\n", 5);
	free(t);
	assert_int_equal(tu_count_prefix(dir, "table.txt.tmp-"), 0);
	/* freed without a close: the old file stays */
	assert_int_equal(tk_outfile_open(&o, path), 0);
	fputs("half", tk_outfile_stream(o));
	tk_outfile_free(o);
	t = tu_read_file(path, &n);
	assert_int_equal(n, 5);
	free(t);
	assert_int_equal(tu_count_prefix(dir, "table.txt.tmp-"), 0);
	/* a device is written in place */
	struct stat st;
	assert_int_equal(tk_outfile_open(&o, "/dev/null"), 0);
	fputs("x", tk_outfile_stream(o));
	assert_int_equal(tk_outfile_close(o), 0);
	tk_outfile_free(o);
	assert_int_equal(stat("/dev/null", &st), 0);
	assert_true(S_ISCHR(st.st_mode));
	/* a full device: an error naming it */
	if (access("/dev/full", W_OK) == 0) {
		assert_int_equal(tk_outfile_open(&o, "/dev/full"), 0);
		fputs("x", tk_outfile_stream(o));
		assert_int_equal(tk_outfile_close(o), TK_ERR_IO);
		assert_true(tu_contains(tk_outfile_error(o), "/dev/full"));
		tk_outfile_free(o);
	}
	/* a directory that does not exist */
	snprintf(path, sizeof path, "%s/no/such/table.txt", dir);
	assert_int_equal(tk_outfile_open(&o, path), TK_ERR_IO);
	assert_true(tu_contains(tk_outfile_error(o), path));
	tk_outfile_free(o);
}

/* "-": what the program printed to stdout before the table comes before it. */
static void test_outfile_stdout_order(void **state)
{
	(void)state;
	int fds[2];
	assert_int_equal(pipe(fds), 0);
	fflush(stdout);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		dup2(fds[1], 1);
		close(fds[0]);
		close(fds[1]);
		printf("line1\n"); /* held in stdout's buffer: a pipe is not a terminal */
		tk_outfile *o = NULL;
		if (tk_outfile_open(&o, "-"))
			_exit(2);
		fputs("line2\n", tk_outfile_stream(o));
		int rc = tk_outfile_close(o);
		tk_outfile_free(o);
		printf("line3\n");
		fflush(stdout);
		_exit(rc ? 3 : 0);
	}
	close(fds[1]);
	char buf[64] = {0};
	size_t n = 0;
	ssize_t k;
	while (n < sizeof buf - 1 && (k = read(fds[0], buf + n, sizeof buf - 1 - n)) > 0)
		n += (size_t)k;
	close(fds[0]);
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	assert_string_equal(buf, "line1\nline2\nline3\n");
}

static int is_gzip(const char *path)
{
	size_t n;
	char *t = tu_read_file(path, &n);
	int gz = n >= 2 && (unsigned char)t[0] == 0x1f && (unsigned char)t[1] == 0x8b;
	free(t);
	return gz;
}

static void write_sample(const char *path, const tk_writer_opts *o)
{
	tk_event ev[32];
	size_t n = sample_events(ev);
	tk_writer *w = open_writer(path, o);
	assert_int_equal(tk_writer_add_meta(w, tu_sv("schemaVersion"), tu_sv("1")), 0);
	for (size_t i = 0; i < n; i++)
		write_ok(w, &ev[i]);
	assert_int_equal(tk_writer_add_meta(w, tu_sv("traceName"), tu_sv("\"t\"")), 0);
	close_ok(w);
}

static void test_gzip_output(void **state)
{
	(void)state;
	write_sample(tu_path("plain.json"), NULL);
	tu_events plain = read_back(tu_path("plain.json"), NULL);
	assert_false(is_gzip(tu_path("plain.json")));
	struct {
		const char *name;
		int gzip, level, want_gz;
	} cases[] = {{"a.json.gz", -1, 0, 1}, {"b.json.gz", 0, 0, 0}, {"c.json", 1, 0, 1},
	             {"d.json.gz", -1, 1, 1}, {"e.json.gz", -1, 9, 1}};
	for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
		tk_writer_opts o = {.format = TK_FORMAT_AUTO, .gzip = cases[c].gzip, .gzip_level = cases[c].level};
		const char *path = tu_path(cases[c].name);
		write_sample(path, &o);
		assert_int_equal(is_gzip(path), cases[c].want_gz);
		tk_reader *r = NULL;
		tu_events back = read_back(path, &r);
		assert_string_equal(tk_reader_format(r), cases[c].want_gz ? "json.gz" : "json");
		assert_int_equal(back.n, plain.n);
		for (size_t i = 0; i < back.n; i++)
			assert_true(tk_event_equal(back.ev[i], plain.ev[i]));
		assert_int_equal(tk_reader_meta_count(r), 2);
		tk_reader_free(r);
		tu_events_free(&back);
		if (!cases[c].want_gz)
			continue;
		/* zlib alone inflates it to the same text as the plain output */
		size_t gn, dn, pn;
		char *g = tu_read_file(path, &gn), *d = tu_gunzip(g, gn, &dn);
		char *p = tu_read_file(tu_path("plain.json"), &pn);
		assert_int_equal(dn, pn);
		assert_memory_equal(d, p, pn);
		free(g);
		free(d);
		free(p);
	}
	tu_events_free(&plain);
}

static void test_write_to_fd(void **state)
{
	(void)state;
	for (int gz = 0; gz < 2; gz++) {
		const char *path = tu_path(gz ? "fd.json.gz" : "fd.json");
		int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
		assert_true(fd >= 0);
		tk_writer_opts o = {.format = TK_FORMAT_JSON, .gzip = gz};
		tk_writer *w = NULL;
		assert_int_equal(tk_writer_open_fd(&w, fd, "fd-out", &o), 0);
		tk_event e = base_event('X');
		e.has |= TK_HAS_TS;
		e.ts = 42;
		write_ok(w, &e);
		close_ok(w);
		/* the fd is the caller's: still open */
		assert_true(fcntl(fd, F_GETFD) != -1);
		close(fd);
		assert_int_equal(is_gzip(path), gz);
		tu_events back = read_back(path, NULL);
		assert_int_equal(back.n, 1);
		assert_int_equal(back.ev[0]->ts, 42);
		tu_events_free(&back);
	}
}

/* Read a testdata trace, write it as the tool does, read both and compare. */
static void round_trip(const char *name, const char *out_name)
{
	size_t n;
	char *t = tu_load(name, &n);
	tk_reader *r = tu_open_mem(t, n, name, NULL);
	const char *path = tu_path(out_name);
	tk_writer *w = open_writer(path, NULL);
	size_t copied = 0;
	const tk_event *e;
	int rc;
	tu_events orig = {0};
	while ((rc = tk_reader_next(r, &e)) == TK_OK) {
		assert_int_equal(tk_copy_meta(w, r, &copied), 0);
		write_ok(w, e);
	}
	assert_int_equal(rc, TK_EOF);
	assert_int_equal(tk_copy_meta(w, r, &copied), 0);
	assert_int_equal(copied, tk_reader_meta_count(r));
	close_ok(w);
	tk_reader_free(r);
	r = tu_open_mem(t, n, name, NULL);
	assert_int_equal(tu_read_all(r, &orig), TK_EOF);
	tk_reader *b = NULL;
	tu_events back = read_back(path, &b);
	assert_int_equal(back.n, orig.n);
	for (size_t i = 0; i < orig.n; i++)
		if (!tk_event_equal(orig.ev[i], back.ev[i]))
			fail_msg("%s: event %zu differs after the round trip", name, i);
	assert_int_equal(tk_reader_meta_count(b), tk_reader_meta_count(r));
	for (size_t i = 0; i < tk_reader_meta_count(r); i++) {
		tk_sv k1, v1, k2, v2;
		int a1, a2;
		tk_reader_meta_get(r, i, &k1, &v1, &a1);
		tk_reader_meta_get(b, i, &k2, &v2, &a2);
		assert_true(tu_sv_is(k2, k1.ptr));
		assert_true(tu_sv_is(v2, v1.ptr));
		assert_int_equal(a2, a1);
	}
	assert_false(tk_reader_is_bare_array(b));
	tk_reader_free(b);
	tk_reader_free(r);
	tu_events_free(&orig);
	tu_events_free(&back);
	free(t);
}

static void test_round_trip_testdata(void **state)
{
	(void)state;
	static const char *names[] = {"kineto_small.json", "array_2020.json", "legacy_torch1.json",
	                              "meta_after.json"};
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
		round_trip(names[i], "rt.json");
		round_trip(names[i], "rt.json.gz");
	}
}

/* Copying metadata twice does not duplicate it. */
static void test_copy_meta_once(void **state)
{
	(void)state;
	size_t n;
	char *t = tu_load("kineto_small.json", &n);
	tk_reader *r = tu_open_mem(t, n, "k.json", NULL);
	tu_events ev = {0};
	assert_int_equal(tu_read_all(r, &ev), TK_EOF);
	tk_writer *w = open_writer(tu_path("cm.json"), NULL);
	size_t copied = 0;
	assert_int_equal(tk_copy_meta(w, r, &copied), 0);
	assert_int_equal(copied, 9);
	assert_int_equal(tk_copy_meta(w, r, &copied), 0);
	assert_int_equal(copied, 9);
	close_ok(w);
	tk_reader *b = NULL;
	tu_events back = read_back(tu_path("cm.json"), &b);
	assert_int_equal(tk_reader_meta_count(b), 9);
	tk_reader_free(b);
	tk_reader_free(r);
	tu_events_free(&ev);
	tu_events_free(&back);
	free(t);
}

static int teardown(void **state)
{
	(void)state;
	tu_cleanup();
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_events_read_back_equal),
		cmocka_unit_test(test_extreme_times_read_back),
		cmocka_unit_test(test_strings_escaped_and_repaired),
		cmocka_unit_test(test_repaired_count),
		cmocka_unit_test(test_metadata_order),
		cmocka_unit_test(test_no_events),
		cmocka_unit_test(test_invalid_caller_input),
		cmocka_unit_test(test_invalid_args_message),
		cmocka_unit_test(test_refusals_keep_writer),
		cmocka_unit_test(test_tkb_repaired_count),
		cmocka_unit_test(test_temporary_file),
		cmocka_unit_test(test_open_errors),
		cmocka_unit_test(test_sqlite_output),
		cmocka_unit_test(test_spill_dir),
		cmocka_unit_test(test_outfile),
		cmocka_unit_test(test_outfile_stdout_order),
		cmocka_unit_test(test_gzip_output),
		cmocka_unit_test(test_write_to_fd),
		cmocka_unit_test(test_round_trip_testdata),
		cmocka_unit_test(test_copy_meta_once),
	};
	return cmocka_run_group_tests_name("writer", tests, NULL, teardown);
}
