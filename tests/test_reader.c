/* test_reader.c: reader tests on valid input: dialects, timestamps, ids, strings, metadata, gzip, sources. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "shape.h"
#include "testutil.h"

#define FFFD "\xEF\xBF\xBD"

static int id_is_int(tk_id id, int64_t v)
{
	if (id.kind == TK_ID_INT && id.num == v)
		return 1;
	print_error("expected int id %lld, got kind %d num %lld\n", (long long)v, id.kind,
	            (long long)id.num);
	return 0;
}

static int id_is_str(tk_id id, const char *s)
{
	return id.kind == TK_ID_STR && tu_sv_is(id.str, s);
}

static tk_reader *load_reader(const char *name, char **text, size_t *len)
{
	*text = tu_load(name, len);
	return tu_open_mem(*text, *len, name, NULL);
}

/* ---- the current Kineto dialect, field by field ---- */

static void kineto_events(tu_events *ev)
{
	const tk_event *e = ev->ev[3]; /* aten::addmm */
	assert_int_equal(e->ph, 'X');
	assert_true(tu_sv_is(e->name, "aten::addmm"));
	assert_true(tu_sv_is(e->cat, "cpu_op"));
	assert_true(id_is_int(e->pid, 4093) && id_is_int(e->tid, 4093));
	assert_int_equal(e->id.kind, TK_ID_NONE);
	assert_int_equal(e->ts, 2413669096090100);
	assert_int_equal(e->dur, 31250);
	unsigned want = TK_HAS_TS | TK_HAS_DUR | TK_HAS_NAME | TK_HAS_CAT | TK_HAS_PH;
	assert_int_equal(e->has & ~(unsigned)TK_HAS_VALID_JSON, want);
	assert_null(e->extra.ptr);
	assert_true(tu_sv_is(e->args,
	                     "{\"External id\":12345,\"Record function id\":0,\"Ev Idx\":7,"
	                     "\"Input Dims\":[[8,1024],[],[1024,1024],null],"
	                     "\"Input type\":[\"float\",\"\",\"float\",\"Scalar\"],"
	                     "\"Concrete Inputs\":[\"\",\"\",\"\",\"1\"],\"Sequence number\":402,"
	                     "\"Fwd thread id\":0}"));

	e = ev->ev[0];
	assert_int_equal(e->ph, 'M');
	assert_true(tu_sv_is(e->name, "process_name"));
	assert_true(tu_sv_is(e->args, "{\"name\":\"python3\"}"));
	assert_false(e->has & TK_HAS_CAT);

	e = ev->ev[5]; /* flow start */
	assert_int_equal(e->ph, 's');
	assert_true(id_is_int(e->id, 98001));
	assert_null(e->args.ptr);
	assert_false(e->has & TK_HAS_DUR);
	assert_null(e->extra.ptr);

	e = ev->ev[6]; /* kernel; escaped quotes and brackets in the name */
	assert_true(tu_sv_is(e->name, "sm90_gemm_f32 \"tn\" {128x128}]"));
	assert_true(id_is_int(e->pid, 0) && id_is_int(e->tid, 7));
	assert_int_equal(e->ts, 2413669096120416);
	assert_int_equal(e->dur, 48032);

	e = ev->ev[7]; /* flow end: only it carries "bp" */
	assert_int_equal(e->ph, 'f');
	assert_true(tu_sv_is(e->extra, "\"bp\":\"e\""));
	e = ev->ev[9]; /* orphan flow end (no matching 's') */
	assert_int_equal(e->ph, 'f');
	assert_true(id_is_int(e->id, 98002));

	e = ev->ev[10];
	assert_int_equal(e->ph, 'i');
	assert_true(tu_sv_is(e->extra, "\"s\":\"t\""));
	assert_int_equal(e->ts, 2413669096130000);

	e = ev->ev[12];
	assert_true(id_is_str(e->pid, "Spans") && id_is_str(e->tid, "PyTorch Profiler"));
	assert_int_equal(e->dur, 1100000);
	e = ev->ev[14];
	assert_true(id_is_str(e->pid, "4093687616") && id_is_str(e->tid, "stream 7"));
	assert_true(tu_sv_is(e->args, "{\"bytes\":4194304,\"memory bandwidth (GB/s)\":335.54432}"));

	e = ev->ev[15];
	assert_true(tu_sv_is(e->name, "Record Window End"));
	assert_true(id_is_str(e->pid, "") && id_is_str(e->tid, ""));
	assert_true(tu_sv_is(e->extra, "\"s\":\"g\""));
	assert_null(e->args.ptr);
}

static void kineto_meta(tk_reader *r)
{
	static const char *keys[] = {"schemaVersion", "deviceProperties", "record_shapes",
	                             "distributedInfo", "cupti_version", "cuda_runtime_version",
	                             "displayTimeUnit", "baseTimeNanoseconds", "traceName"};
	size_t n = sizeof keys / sizeof keys[0];
	assert_int_equal(tk_reader_meta_count(r), n);
	for (size_t i = 0; i < n; i++) {
		tk_sv k, v;
		int after = -1;
		assert_int_equal(tk_reader_meta_get(r, i, &k, &v, &after), 0);
		assert_true(tu_sv_is(k, keys[i]));
		assert_int_equal(after, i == n - 1);
	}
	assert_int_equal(tk_reader_meta_get(r, n, NULL, NULL, NULL), TK_ERR_ARG);
	assert_true(tu_sv_is(tk_reader_meta_find(r, "schemaVersion"), "1"));
	assert_true(tu_sv_is(tk_reader_meta_find(r, "displayTimeUnit"), "\"ms\""));
	assert_true(tu_sv_is(tk_reader_meta_find(r, "baseTimeNanoseconds"), "1727743122000000000"));
	assert_true(tu_sv_is(tk_reader_meta_find(r, "traceName"), "\"rank3.pt.trace.json\""));
	assert_true(tu_sv_is(tk_reader_meta_find(r, "deviceProperties"),
	                     "[{\"id\":0,\"name\":\"NVIDIA H100\",\"totalGlobalMem\":85045231616,"
	                     "\"computeMajor\":9,\"computeMinor\":0,\"maxThreadsPerBlock\":1024,"
	                     "\"warpSize\":32,\"numSms\":132}]"));
	assert_null(tk_reader_meta_find(r, "traceEvents").ptr);
	assert_null(tk_reader_meta_find(r, "nope").ptr);
}

static void test_kineto_small(void **state)
{
	(void)state;
	size_t n;
	char *t;
	tk_reader *r = load_reader("kineto_small.json", &t, &n);
	shape sh;
	assert_int_equal(shape_scan(t, n, &sh), 0);
	tu_events ev = {0};
	assert_int_equal(tu_read_all(r, &ev), TK_EOF);
	assert_int_equal(ev.n, 16);
	assert_int_equal(ev.n, sh.n_events);
	assert_string_equal(tk_reader_format(r), "json");
	assert_false(tk_reader_is_bare_array(r));
	assert_null(tk_reader_warning(r, 0));
	const tk_reader_stats *st = tk_reader_get_stats(r);
	assert_int_equal(st->events, 16);
	assert_int_equal(st->bytes_decoded, n);
	assert_int_equal(st->bytes_in, n);
	assert_int_equal(st->truncated, 0);
	assert_int_equal(st->repaired_strings, 0);
	kineto_events(&ev);
	kineto_meta(r);
	/* a further call stays at the end */
	const tk_event *e;
	assert_int_equal(tk_reader_next(r, &e), TK_EOF);
	tu_events_free(&ev);
	tk_reader_free(r);
	free(t);
}

/* The header promises readers mark args and extra as valid compact JSON,
 * so writers can copy them without checking them again. */
static void test_reader_marks_valid_json(void **state)
{
	(void)state;
	size_t n;
	char *t;
	tk_reader *r = load_reader("kineto_small.json", &t, &n);
	const tk_event *e;
	int rc, i = 0;
	while ((rc = tk_reader_next(r, &e)) == TK_OK) {
		if ((e->args.ptr || e->extra.ptr) && !(e->has & TK_HAS_VALID_JSON))
			fail_msg("event %d has args or extra but not TK_HAS_VALID_JSON", i);
		i++;
	}
	assert_int_equal(rc, TK_EOF);
	tk_reader_free(r);
	free(t);
}

/* ---- other dialects ---- */

static void test_bare_array_2020(void **state)
{
	(void)state;
	size_t n;
	char *t;
	tk_reader *r = load_reader("array_2020.json", &t, &n);
	tu_events ev = {0};
	assert_int_equal(tu_read_all(r, &ev), TK_EOF);
	assert_true(tk_reader_is_bare_array(r));
	assert_int_equal(tk_reader_meta_count(r), 0);
	assert_null(tk_reader_warning(r, 0));
	assert_int_equal(ev.n, 8);
	const tk_event *e = ev.ev[1];
	assert_true(tu_sv_is(e->cat, "Operator"));
	assert_true(id_is_int(e->pid, 25738) && id_is_str(e->tid, "25738"));
	assert_int_equal(e->ts, 1607029441318170000);
	assert_int_equal(e->dur, 1096000);
	tk_sv v;
	assert_int_equal(tk_args_find(e, "Input dims", &v), 0);
	assert_true(tu_sv_is(v, "[[32,3,224,224],[64,3,7,7],[],[],[],[],[]]"));
	assert_int_equal(tk_args_find(e, "Input Dims", &v), TK_EOF);
	assert_true(id_is_str(ev.ev[4]->tid, "stream 7"));
	assert_true(tu_sv_is(ev.ev[4]->cat, "Kernel"));
	assert_true(tu_sv_is(ev.ev[5]->cat, "async"));
	assert_true(tu_sv_is(ev.ev[5]->extra, "\"bp\":\"e\""));
	assert_true(tu_sv_is(ev.ev[6]->args, "{\"bytes\":19267584,\"memory bandwidth (GB/s)\":160.563}"));
	tu_events_free(&ev);
	tk_reader_free(r);
	free(t);
}

static void test_legacy_torch1(void **state)
{
	(void)state;
	size_t n;
	char *t;
	tk_reader *r = load_reader("legacy_torch1.json", &t, &n);
	tu_events ev = {0};
	assert_int_equal(tu_read_all(r, &ev), TK_EOF);
	assert_true(tk_reader_is_bare_array(r));
	assert_int_equal(ev.n, 4);
	static const int64_t ts[] = {133, 142, 186, 227}, dur[] = {37, 2, 777, 218};
	for (size_t i = 0; i < ev.n; i++) {
		const tk_event *e = ev.ev[i];
		assert_true(id_is_str(e->pid, "CPU functions"));
		assert_true(id_is_int(e->tid, 1));
		assert_false(e->has & TK_HAS_CAT);
		assert_null(e->cat.ptr);
		assert_int_equal(e->ts, ts[i] * 1000);
		assert_int_equal(e->dur, dur[i] * 1000);
		assert_true(tu_sv_is(e->args, "{}"));
	}
	assert_true(tu_sv_is(ev.ev[2]->name, "step0"));
	tu_events_free(&ev);
	tk_reader_free(r);
	free(t);
}

static void test_meta_after_events(void **state)
{
	(void)state;
	size_t n;
	char *t;
	tk_reader *r = load_reader("meta_after.json", &t, &n);
	const tk_event *e;
	assert_int_equal(tk_reader_next(r, &e), TK_OK);
	/* the member before the events is visible with the first event */
	assert_true(tk_reader_meta_count(r) >= 1);
	tk_sv k, v;
	int after = -1;
	assert_int_equal(tk_reader_meta_get(r, 0, &k, &v, &after), 0);
	assert_true(tu_sv_is(k, "schemaVersion"));
	assert_int_equal(after, 0);
	assert_int_equal(e->ts, 1694128201545123000);
	assert_int_equal(e->dur, 12000);
	int rc, n_ev = 1;
	while ((rc = tk_reader_next(r, &e)) == TK_OK)
		n_ev++;
	assert_int_equal(rc, TK_EOF);
	assert_int_equal(n_ev, 3);
	static const char *keys[] = {"schemaVersion", "displayTimeUnit", "baseTimeNanoseconds",
	                             "WARNING", "traceName"};
	static const char *vals[] = {"1", "\"ms\"", "1693497600000000000",
	                             "[\"CUPTI activity buffer overflow\",\"dropped 3 records\"]",
	                             "\"worker0.pt.trace.json\""};
	assert_int_equal(tk_reader_meta_count(r), 5);
	for (size_t i = 0; i < 5; i++) {
		assert_int_equal(tk_reader_meta_get(r, i, &k, &v, &after), 0);
		assert_true(tu_sv_is(k, keys[i]));
		assert_true(tu_sv_is(v, vals[i]));
		assert_int_equal(after, i > 0);
	}
	tk_reader_free(r);
	free(t);
}

static void test_empty_trace_forms(void **state)
{
	(void)state;
	static const char *texts[] = {"[]", "[ ]\n", "{\"traceEvents\":[]}", " \n{ \"traceEvents\" : [ ] }\n",
	                              "\xEF\xBB\xBF{\"traceEvents\":[]}"};
	for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
		tu_events ev = {0};
		tk_reader *r = tu_open_mem(texts[i], strlen(texts[i]), "t.json", NULL);
		assert_int_equal(tu_read_all(r, &ev), TK_EOF);
		assert_int_equal(ev.n, 0);
		assert_null(tk_reader_warning(r, 0));
		tk_reader_free(r);
	}
	/* a UTF-8 byte order mark before a non-empty trace */
	tu_events ev = {0};
	assert_int_equal(tu_read_text("\xEF\xBB\xBF[{\"ph\":\"X\",\"ts\":1}]", &ev), TK_EOF);
	assert_int_equal(ev.n, 1);
	assert_int_equal(ev.ev[0]->ts, 1000);
	tu_events_free(&ev);
}

/* ---- timestamps: decimal microseconds to exact integer nanoseconds ---- */

static const struct {
	const char *text;
	int64_t ns;
} ts_cases[] = {
	{"2413669096090.100", 2413669096090100}, /* Kineto 2024+: three decimals */
	{"2413669096090.1", 2413669096090100},
	{"2413669096090.999", 2413669096090999},
	{"1700000000123456", 1700000000123456000}, /* integer microseconds since the epoch */
	{"1700000000123456.789", 1700000000123456789},
	{"133", 133000}, /* relative */
	{"0", 0},
	{"0.000", 0},
	{"-0", 0},
	{"-5", -5000},
	{"-0.001", -1},
	{"-2413669096090.100", -2413669096090100},
	{"1.5e3", 1500000},
	{"1E-3", 1},
	{"2.5e+2", 250000},
	{"15e-1", 1500},
	{"1e0", 1000},
	{"0.25", 250},
	{"2.4136690960901e12", 2413669096090100},
	{"123.4560000000000000000000", 123456},
	{"9223372036854775.807", INT64_MAX},
	{"-9223372036854775.807", -INT64_MAX},
	{"1.0004", 1000}, /* below a nanosecond: to the nearest */
	{"1.0006", 1001},
	{"-1.0006", -1001},
};

static void test_timestamps_exact(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof ts_cases / sizeof ts_cases[0]; i++) {
		char text[256];
		snprintf(text, sizeof text, "[{\"ph\":\"X\",\"ts\":%s,\"dur\":%s}]", ts_cases[i].text,
		         ts_cases[i].text);
		tu_events ev = {0};
		int rc = tu_read_text(text, &ev);
		if (rc != TK_EOF || ev.n != 1 || ev.ev[0]->ts != ts_cases[i].ns ||
		    ev.ev[0]->dur != ts_cases[i].ns)
			fail_msg("ts %s: rc %d, %zu events, ts %lld, want %lld", ts_cases[i].text, rc, ev.n,
			         ev.n ? (long long)ev.ev[0]->ts : 0LL, (long long)ts_cases[i].ns);
		assert_true(ev.ev[0]->has & TK_HAS_TS);
		assert_true(ev.ev[0]->has & TK_HAS_DUR);
		assert_null(ev.ev[0]->extra.ptr);
		tu_events_free(&ev);
	}
}

/* A ts that is not a number is kept as it is, not dropped. */
static void test_timestamp_not_number(void **state)
{
	(void)state;
	tu_events ev = {0};
	assert_int_equal(tu_read_text("[{\"ph\":\"X\",\"ts\":\"12\",\"dur\":null}]", &ev), TK_EOF);
	assert_int_equal(ev.n, 1);
	assert_false(ev.ev[0]->has & (TK_HAS_TS | TK_HAS_DUR));
	assert_non_null(ev.ev[0]->extra.ptr);
	assert_non_null(strstr(ev.ev[0]->extra.ptr, "\"ts\":\"12\""));
	assert_non_null(strstr(ev.ev[0]->extra.ptr, "\"dur\":null"));
	tu_events_free(&ev);
}

/* A member given twice: the first is the event's, every other one is kept
 * in extra (none is silently dropped), and one warning counts the events. */
static void test_duplicate_members(void **state)
{
	(void)state;
	static const char text[] =
	    "[{\"ph\":\"X\",\"name\":\"a\",\"ts\":1,\"ts\":2,\"dur\":3,\"pid\":1,\"pid\":\"p\","
	    "\"args\":{\"x\":1},\"args\":{\"y\":2},\"name\":\"b\",\"ph\":\"i\"},"
	    "{\"ph\":\"X\",\"name\":\"c\",\"ts\":5,\"tid\":7,\"tid\":8,\"id\":1,\"id\":2,\"cat\":\"k\",\"cat\":\"l\","
	    "\"dur\":1,\"dur\":9},"
	    "{\"ph\":\"X\",\"name\":\"plain\",\"ts\":9}]";
	tk_reader *r = NULL;
	tu_events ev = {0};
	assert_int_equal(tk_reader_open_memory(&r, text, strlen(text), "dup.json", NULL), 0);
	assert_int_equal(tu_read_all(r, &ev), TK_EOF);
	assert_int_equal(ev.n, 3);
	const tk_event *a = ev.ev[0], *c = ev.ev[1];
	assert_int_equal(a->ts, 1000);
	assert_int_equal(a->ph, 'X');
	assert_int_equal(a->pid.num, 1);
	assert_string_equal(a->args.ptr, "{\"x\":1}");
	assert_string_equal(a->extra.ptr, "\"ts\":2,\"pid\":\"p\",\"args\":{\"y\":2},\"name\":\"b\",\"ph\":\"i\"");
	assert_int_equal(c->tid.num, 7);
	assert_int_equal(c->id.num, 1);
	assert_int_equal(c->dur, 1000);
	assert_string_equal(c->extra.ptr, "\"tid\":8,\"id\":2,\"cat\":\"l\",\"dur\":9");
	assert_null(ev.ev[2]->extra.ptr);
	const char *w = tk_reader_warning(r, 0);
	assert_non_null(w);
	assert_non_null(strstr(w, "dup.json: 2 events give a member twice"));
	assert_null(tk_reader_warning(r, 1));
	/* written as JSON and read again: the same events (the event's args go
	 * before the extra "args", so the first is still the event's) */
	tk_writer *wr = NULL;
	assert_int_equal(tk_writer_open_path(&wr, tu_path("dup2.json"), NULL), 0);
	for (size_t i = 0; i < ev.n; i++)
		assert_int_equal(tk_writer_write(wr, ev.ev[i]), 0);
	assert_int_equal(tk_writer_close(wr), 0);
	tk_writer_free(wr);
	tk_reader *r2 = NULL;
	tu_events back = {0};
	assert_int_equal(tk_reader_open_path(&r2, tu_path("dup2.json"), NULL), 0);
	assert_int_equal(tu_read_all(r2, &back), TK_EOF);
	assert_int_equal(back.n, ev.n);
	for (size_t i = 0; i < ev.n; i++)
		if (!tk_event_equal(back.ev[i], ev.ev[i]))
			fail_msg("event %zu reads otherwise after a JSON round trip: args %s extra %s", i,
			         back.ev[i]->args.ptr ? back.ev[i]->args.ptr : "-", back.ev[i]->extra.ptr ? back.ev[i]->extra.ptr : "-");
	tu_events_free(&back);
	tk_reader_free(r2);
	tu_events_free(&ev);
	tk_reader_free(r);
}

/* Member names that begin like the event's own (ph, ts, id, pid, tid, cat,
 * dur, name, args) but are longer, shorter, or spelled with an escape, are
 * extra members; the event's own are read wherever they stand, with
 * whitespace before the colon, and at the end of the input's window. */
static void test_member_names(void **state)
{
	(void)state;
	static const char text[] =
	    "[{\"phx\":1,\"tsx\":2,\"idx\":3,\"pidx\":4,\"tidx\":5,\"cats\":\"c\",\"durr\":6,"
	    "\"name2\":\"n\",\"argsx\":{},\"p\":7,\"t\":8,\"i\":9,\"pi\":10,\"na\":11,\"arg\":12,"
	    "\"\\u0070h\":\"B\",\"n\\u0061me\":\"esc\",\"ph\" :\"X\",\"ts\"\t: 1,\"dur\":2,"
	    "\"pid\":3,\"tid\":4,\"id\":5,\"cat\":\"k\",\"name\":\"a\",\"args\":{\"x\":1}},"
	    "{\"name\":\"b\",\"ph\":\"i\",\"ts\":7}]";
	tk_reader *r = NULL;
	tu_events ev = {0};
	assert_int_equal(tk_reader_open_memory(&r, text, strlen(text), "names.json", NULL), 0);
	assert_int_equal(tu_read_all(r, &ev), TK_EOF);
	assert_int_equal(ev.n, 2);
	const tk_event *a = ev.ev[0];
	assert_int_equal(a->ph, 'X');
	assert_int_equal(a->ts, 1000);
	assert_int_equal(a->dur, 2000);
	assert_int_equal(a->pid.num, 3);
	assert_int_equal(a->tid.num, 4);
	assert_int_equal(a->id.num, 5);
	assert_true(tu_sv_is(a->cat, "k"));
	assert_true(tu_sv_is(a->name, "a"));
	assert_string_equal(a->args.ptr, "{\"x\":1}");
	assert_string_equal(a->extra.ptr,
	                    "\"phx\":1,\"tsx\":2,\"idx\":3,\"pidx\":4,\"tidx\":5,\"cats\":\"c\",\"durr\":6,"
	                    "\"name2\":\"n\",\"argsx\":{},\"p\":7,\"t\":8,\"i\":9,\"pi\":10,\"na\":11,"
	                    "\"arg\":12,\"\\u0070h\":\"B\",\"n\\u0061me\":\"esc\"");
	assert_null(ev.ev[1]->extra.ptr);
	assert_int_equal(ev.ev[1]->ts, 7000);
	assert_null(tk_reader_warning(r, 0));
	tu_events_free(&ev);
	tk_reader_free(r);
	/* cut right after each of the event's own names: never an event, and
	 * the same warning as a cut anywhere else in the event */
	static const char keys[] = "[{\"ph\":\"X\",\"name\":\"a\",\"ts\":1,\"args\":{}}]";
	for (size_t cut = 3; cut < sizeof keys - 3; cut++) {
		assert_int_equal(tk_reader_open_memory(&r, keys, cut, "cut.json", NULL), 0);
		const tk_event *e;
		assert_int_equal(tk_reader_next(r, &e), TK_EOF);
		assert_non_null(tk_reader_warning(r, 0));
		assert_non_null(strstr(tk_reader_warning(r, 0), "kept 0 complete events"));
		tk_reader_free(r);
	}
}

/* ---- pid / tid / id ---- */

static void test_ids(void **state)
{
	(void)state;
	const char *text = "[{\"ph\":\"i\",\"pid\":\"Spans\",\"tid\":\"stream 7\",\"id\":\"0x1f\"},"
	                   "{\"ph\":\"i\",\"pid\":\"4093687616\",\"tid\":4093687616,\"id\":98001},"
	                   "{\"ph\":\"i\",\"pid\":-1,\"tid\":0,\"id\":-9223372036854775808},"
	                   "{\"ph\":\"i\",\"pid\":9223372036854775807,\"tid\":\"\"},"
	                   "{\"ph\":\"i\"}]";
	tu_events ev = {0};
	assert_int_equal(tu_read_text(text, &ev), TK_EOF);
	assert_int_equal(ev.n, 5);
	assert_true(id_is_str(ev.ev[0]->pid, "Spans"));
	assert_true(id_is_str(ev.ev[0]->tid, "stream 7"));
	assert_true(id_is_str(ev.ev[0]->id, "0x1f"));
	assert_true(id_is_str(ev.ev[1]->pid, "4093687616"));
	assert_true(id_is_int(ev.ev[1]->tid, 4093687616));
	assert_true(id_is_int(ev.ev[1]->id, 98001));
	assert_true(id_is_int(ev.ev[2]->pid, -1));
	assert_true(id_is_int(ev.ev[2]->tid, 0));
	assert_true(id_is_int(ev.ev[2]->id, INT64_MIN));
	assert_true(id_is_int(ev.ev[3]->pid, INT64_MAX));
	assert_true(id_is_str(ev.ev[3]->tid, ""));
	assert_int_equal(ev.ev[3]->id.kind, TK_ID_NONE);
	assert_int_equal(ev.ev[4]->pid.kind, TK_ID_NONE);
	assert_int_equal(ev.ev[4]->tid.kind, TK_ID_NONE);
	tu_events_free(&ev);
}

/* ---- strings ---- */

/* Names, categories and string ids of a borrowed event stay valid until the
 * reader is freed, even after later events are read. */
static void test_strings_stable(void **state)
{
	(void)state;
	size_t n;
	char *t;
	tk_reader *r = load_reader("kineto_small.json", &t, &n);
	const tk_event *e;
	tk_sv name = {NULL, 0}, cat = {NULL, 0}, pid = {NULL, 0};
	int rc, i = 0;
	while ((rc = tk_reader_next(r, &e)) == TK_OK) {
		if (i == 3)
			name = e->name, cat = e->cat;
		if (i == 12)
			pid = e->pid.str;
		i++;
	}
	assert_int_equal(rc, TK_EOF);
	assert_true(tu_sv_is(name, "aten::addmm"));
	assert_true(tu_sv_is(cat, "cpu_op"));
	assert_true(tu_sv_is(pid, "Spans"));
	tk_reader_free(r);
	free(t);
}

static void test_string_escapes(void **state)
{
	(void)state;
	tu_events ev = {0};
	const char *text =
		"[{\"ph\":\"X\",\"name\":\"a\\\"b\\\\c\\/d\\n\\t\\u00e9\\ud83d\\ude00\\u0000z\"}]";
	assert_int_equal(tu_read_text(text, &ev), TK_EOF);
	assert_int_equal(ev.n, 1);
	static const char want[] = "a\"b\\c/d\n\t\xC3\xA9\xF0\x9F\x98\x80\0z";
	assert_int_equal(ev.ev[0]->name.len, sizeof want - 1);
	assert_memory_equal(ev.ev[0]->name.ptr, want, sizeof want - 1);
	assert_int_equal(ev.ev[0]->name.ptr[ev.ev[0]->name.len], 0);
	tu_events_free(&ev);
}

static int no_raw_controls(tk_sv v)
{
	for (size_t i = 0; i < v.len; i++)
		if ((unsigned char)v.ptr[i] < 0x20)
			return 0;
	return 1;
}

/* Raw control characters (pytorch#130622) are accepted and kept; inside
 * args they come back escaped, so args stay valid JSON. */
static void test_raw_control_chars(void **state)
{
	(void)state;
	tu_events ev = {0};
	const char *text =
		"[{\"ph\":\"X\",\"name\":\"a\x01" "b\tc\",\"args\":{\"k\x02\":1,\"v\":\"x\x1fy\nz\"}}]";
	assert_int_equal(tu_read_text(text, &ev), TK_EOF);
	assert_int_equal(ev.n, 1);
	assert_true(tu_sv_is(ev.ev[0]->name, "a\x01" "b\tc"));
	assert_true(no_raw_controls(ev.ev[0]->args));
	/* the escaped args still decode to the original bytes */
	char buf[32];
	size_t len;
	assert_int_equal(tk_args_get_str(ev.ev[0], "v", buf, sizeof buf, &len), 0);
	assert_int_equal(len, 5);
	assert_string_equal(buf, "x\x1fy\nz");
	tk_sv v;
	assert_int_equal(tk_json_obj_find(ev.ev[0]->args, "nope", &v), TK_EOF);
	/* re-read the args text as a JSON document: it must parse */
	char doc[256];
	snprintf(doc, sizeof doc, "[{\"args\":%.*s}]", (int)ev.ev[0]->args.len, ev.ev[0]->args.ptr);
	tu_events again = {0};
	assert_int_equal(tu_read_text(doc, &again), TK_EOF);
	assert_true(tu_sv_is(again.ev[0]->args, ev.ev[0]->args.ptr));
	tu_events_free(&again);
	tu_events_free(&ev);
}

static void test_invalid_utf8(void **state)
{
	(void)state;
	tu_events ev = {0};
	/* name: 2 bad bytes; cat valid; one arg key and one arg value bad; an overlong
	 * '/', a UTF-8 encoded surrogate and a code point above U+10FFFF */
	const char *text = "[{\"ph\":\"X\",\"name\":\"bad\xff\xfe!\",\"cat\":\"ok \xC3\xA9\","
	                   "\"args\":{\"k\xc0\":1,\"v\":\"x\xc0\xafy\",\"w\":\"\xed\xa0\x80\","
	                   "\"z\":\"\xf4\x90\x80\x80\",\"ok\":\"\xF0\x9F\x98\x80\"}}]";
	tk_reader *r = tu_open_mem(text, strlen(text), "u.json", NULL);
	assert_int_equal(tu_read_all(r, &ev), TK_EOF);
	assert_int_equal(ev.n, 1);
	const tk_event *e = ev.ev[0];
	assert_true(tu_sv_is(e->name, "bad" FFFD FFFD "!"));
	assert_true(tu_sv_is(e->cat, "ok \xC3\xA9"));
	assert_true(tu_utf8_valid(e->args.ptr, e->args.len));
	assert_non_null(strstr(e->args.ptr, FFFD));
	assert_non_null(strstr(e->args.ptr, "\xF0\x9F\x98\x80"));
	char buf[64];
	size_t len;
	assert_int_equal(tk_args_get_str(e, "v", buf, sizeof buf, &len), 0);
	assert_true(tu_utf8_valid(buf, len));
	assert_int_equal(buf[0], 'x');
	assert_int_equal(buf[len - 1], 'y');
	assert_non_null(strstr(buf, FFFD));
	/* name, the key "k\xc0", and the values of v, w and z */
	assert_int_equal(tk_reader_get_stats(r)->repaired_strings, 5);
	tu_events_free(&ev);
	tk_reader_free(r);
}

static void test_lone_surrogates(void **state)
{
	(void)state;
	tu_events ev = {0};
	const char *text = "[{\"ph\":\"X\",\"name\":\"a\\ud800b\",\"cat\":\"\\udc00\","
	                   "\"args\":{\"k\":\"\\ud800\\u0041\",\"ok\":\"\\ud83d\\ude00\"}}]";
	tk_reader *r = tu_open_mem(text, strlen(text), "s.json", NULL);
	assert_int_equal(tu_read_all(r, &ev), TK_EOF);
	assert_int_equal(ev.n, 1);
	const tk_event *e = ev.ev[0];
	assert_true(tu_sv_is(e->name, "a" FFFD "b"));
	assert_true(tu_sv_is(e->cat, FFFD));
	char buf[32];
	size_t len;
	assert_int_equal(tk_args_get_str(e, "k", buf, sizeof buf, &len), 0);
	assert_string_equal(buf, FFFD "A");
	assert_int_equal(tk_args_get_str(e, "ok", buf, sizeof buf, &len), 0);
	assert_string_equal(buf, "\xF0\x9F\x98\x80");
	/* the args text holds no lone surrogate escape any more */
	assert_null(strstr(e->args.ptr, "\\ud800"));
	assert_null(strstr(e->args.ptr, "\\uD800"));
	assert_int_equal(tk_reader_get_stats(r)->repaired_strings, 3);
	tu_events_free(&ev);
	tk_reader_free(r);
}

/* A lone high surrogate close to the end of the input is not a cut-off file. */
static void test_lone_surrogate_at_end(void **state)
{
	(void)state;
	static const char *texts[] = {"[{\"name\":\"\\ud800\"}]", "[{\"name\":\"x\\ud800\"}]\n",
	                              "[{\"ph\":\"i\",\"args\":{\"a\":\"\\ud800\"}}]"};
	for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
		tu_events ev = {0};
		tk_reader *r = tu_open_mem(texts[i], strlen(texts[i]), "end.json", NULL);
		int rc = tu_read_all(r, &ev);
		if (rc != TK_EOF || ev.n != 1 || tk_reader_warning(r, 0))
			fail_msg("%s: rc %d, %zu events, warning: %s", texts[i], rc, ev.n,
			         tk_reader_warning(r, 0) ? tk_reader_warning(r, 0) : "none");
		assert_int_equal(tk_reader_get_stats(r)->repaired_strings, 1);
		tu_events_free(&ev);
		tk_reader_free(r);
	}
}

/* ---- gzip and other sources ---- */

static void read_plain(const char *name, char **t, size_t *n, tu_events *ev)
{
	tk_reader *r = load_reader(name, t, n);
	assert_int_equal(tu_read_all(r, ev), TK_EOF);
	tk_reader_free(r);
}

static void assert_same_events(const tu_events *a, const tu_events *b)
{
	assert_int_equal(a->n, b->n);
	for (size_t i = 0; i < a->n; i++)
		if (!tk_event_equal(a->ev[i], b->ev[i]))
			fail_msg("event %zu differs", i);
}

static void test_gzip_input(void **state)
{
	(void)state;
	size_t n, gn;
	char *t;
	tu_events plain = {0}, gz = {0};
	read_plain("kineto_small.json", &t, &n, &plain);
	unsigned char *g = tu_gzip(t, n, &gn);
	/* the name says nothing: the format comes from the bytes */
	tu_write_file(tu_path("trace.bin"), g, gn);
	tk_reader *r = NULL;
	assert_int_equal(tk_reader_open_path(&r, tu_path("trace.bin"), NULL), 0);
	assert_string_equal(tk_reader_format(r), "json.gz");
	assert_int_equal(tu_read_all(r, &gz), TK_EOF);
	assert_same_events(&plain, &gz);
	const tk_reader_stats *st = tk_reader_get_stats(r);
	assert_int_equal(st->bytes_in, gn);
	assert_int_equal(st->bytes_decoded, n);
	assert_int_equal(tk_reader_meta_count(r), 9);
	assert_null(tk_reader_warning(r, 0));
	tk_reader_free(r);
	/* and a plain file named .gz is read as plain JSON */
	tu_write_file(tu_path("plain.json.gz"), t, n);
	assert_int_equal(tk_reader_open_path(&r, tu_path("plain.json.gz"), NULL), 0);
	assert_string_equal(tk_reader_format(r), "json");
	tk_reader_free(r);
	tu_events_free(&plain);
	tu_events_free(&gz);
	free(g);
	free(t);
}

/* `cat a.gz b.gz`: members split at various places, one of them empty. */
static void test_gzip_multi_member(void **state)
{
	(void)state;
	size_t n;
	char *t;
	tu_events plain = {0};
	read_plain("kineto_small.json", &t, &n, &plain);
	size_t cuts[] = {1, 2, 100, n / 2, n - 1};
	for (size_t c = 0; c < sizeof cuts / sizeof cuts[0]; c++) {
		size_t an, en, bn;
		unsigned char *a = tu_gzip(t, cuts[c], &an), *em = tu_gzip("", 0, &en),
		              *b = tu_gzip(t + cuts[c], n - cuts[c], &bn);
		unsigned char *all = malloc(an + en + bn);
		memcpy(all, a, an);
		memcpy(all + an, em, en);
		memcpy(all + an + en, b, bn);
		tu_events ev = {0};
		tk_reader *r = tu_open_mem(all, an + en + bn, "multi.json.gz", NULL);
		assert_string_equal(tk_reader_format(r), "json.gz");
		assert_int_equal(tu_read_all(r, &ev), TK_EOF);
		assert_same_events(&plain, &ev);
		assert_int_equal(tk_reader_meta_count(r), 9);
		assert_null(tk_reader_warning(r, 0));
		assert_int_equal(tk_reader_get_stats(r)->bytes_decoded, n);
		tu_events_free(&ev);
		tk_reader_free(r);
		free(all);
		free(a);
		free(b);
		free(em);
	}
	tu_events_free(&plain);
	free(t);
}

static void test_trickled_input(void **state)
{
	(void)state;
	size_t n;
	char *t;
	tu_events plain = {0};
	read_plain("kineto_small.json", &t, &n, &plain);
	tu_events ev = {0};
	tk_reader *r;
	assert_int_equal(tu_read_trickled(t, n, "trickle.json", NULL, &ev, &r), TK_EOF);
	assert_same_events(&plain, &ev);
	assert_int_equal(tk_reader_meta_count(r), 9);
	assert_null(tk_reader_warning(r, 0));
	tu_events_free(&ev);
	tk_reader_free(r);

	/* two gzip members, one byte at a time */
	size_t an, bn;
	unsigned char *a = tu_gzip(t, n / 3, &an), *b = tu_gzip(t + n / 3, n - n / 3, &bn);
	unsigned char *all = malloc(an + bn);
	memcpy(all, a, an);
	memcpy(all + an, b, bn);
	assert_int_equal(tu_read_trickled(all, an + bn, "trickle.json.gz", NULL, &ev, &r), TK_EOF);
	assert_string_equal(tk_reader_format(r), "json.gz");
	assert_same_events(&plain, &ev);
	assert_null(tk_reader_warning(r, 0));
	tu_events_free(&ev);
	tk_reader_free(r);
	free(all);
	free(a);
	free(b);
	tu_events_free(&plain);
	free(t);
}

static void test_stdin(void **state)
{
	(void)state;
	size_t n;
	char *t;
	tu_events plain = {0}, ev = {0};
	read_plain("array_2020.json", &t, &n, &plain);
	tu_write_file(tu_path("stdin.json"), t, n);
	int saved = dup(0), fd = open(tu_path("stdin.json"), O_RDONLY);
	assert_true(saved >= 0 && fd >= 0);
	assert_int_equal(dup2(fd, 0), 0);
	close(fd);
	tk_reader *r = NULL;
	int rc = tk_reader_open_path(&r, "-", NULL);
	if (!rc)
		rc = tu_read_all(r, &ev);
	dup2(saved, 0);
	close(saved);
	assert_int_equal(rc, TK_EOF);
	assert_same_events(&plain, &ev);
	tk_reader_free(r);
	tu_events_free(&plain);
	tu_events_free(&ev);
	free(t);
}

/* Strings that grow when repaired (invalid UTF-8 -> U+FFFD, control
 * characters -> escapes) in keys and values of extra members, args and
 * metadata come back repaired. (The heap overflow a fuzzer once found on
 * this path needs exact buffer sizes to show: its input is kept in
 * fuzz/corpus/json/crash-extra-key-repair.json, which the fuzz_json_seeds
 * test runs under ASan.) */
static void test_repairs_that_grow(void **state)
{
	(void)state;
	static char t[32768];
	size_t n = 0;
	n += (size_t)snprintf(t + n, sizeof t - n, "{\"m\x01\xff\":\"\x02\xfe\",\"traceEvents\":[");
	/* a key of 120 invalid bytes grows to 360 bytes: past the first
	 * allocation of the buffer that holds the extra members */
	char bad[121];
	memset(bad, 0xff, 120);
	bad[120] = 0;
	for (int i = 0; i < 40; i++)
		n += (size_t)snprintf(t + n, sizeof t - n,
		                      "%s{\"ph\":\"i\",\"k%s\x01\x02\x03\":\"\xfe\x01\","
		                      "\"args\":{\"\x01\x02\x03\x04\x05\x06\x07\x08\x0e\x0f\":\"%s\"}}",
		                      i ? "," : "", bad, bad);
	n += (size_t)snprintf(t + n, sizeof t - n, "]}");
	tk_reader *r = tu_open_mem(t, n, "grow.json", NULL);
	tu_events ev = {0};
	assert_int_equal(tu_read_all(r, &ev), TK_EOF);
	assert_int_equal(ev.n, 40);
	const tk_reader_stats *st = tk_reader_get_stats(r);
	assert_true(st->repaired_strings >= 40 * 3);
	tk_sv k, v;
	assert_int_equal(tk_reader_meta_get(r, 0, &k, &v, NULL), 0);
	assert_string_equal(k.ptr, "m\x01\xef\xbf\xbd");
	assert_string_equal(v.ptr, "\"\\u0002\xef\xbf\xbd\"");
	tk_reader_free(r);
	tu_events_free(&ev);
}

static void test_open_errors(void **state)
{
	(void)state;
	tk_reader *r = NULL;
	const char *missing = tu_path("no-such-trace.json");
	assert_int_equal(tk_reader_open_path(&r, missing, NULL), TK_ERR_IO);
	assert_true(tu_contains(tk_reader_error(r), missing));
	tk_reader_free(r);
	r = NULL;
	assert_int_equal(tk_reader_open_path(&r, tu_tmpdir(), NULL), TK_ERR_IO);
	assert_true(tu_contains(tk_reader_error(r), tu_tmpdir()));
	tk_reader_free(r);
	/* *_free(NULL) is a no-op */
	tk_reader_free(NULL);
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
		cmocka_unit_test(test_kineto_small),
		cmocka_unit_test(test_reader_marks_valid_json),
		cmocka_unit_test(test_bare_array_2020),
		cmocka_unit_test(test_legacy_torch1),
		cmocka_unit_test(test_meta_after_events),
		cmocka_unit_test(test_empty_trace_forms),
		cmocka_unit_test(test_timestamps_exact),
		cmocka_unit_test(test_timestamp_not_number),
		cmocka_unit_test(test_duplicate_members),
		cmocka_unit_test(test_member_names),
		cmocka_unit_test(test_ids),
		cmocka_unit_test(test_strings_stable),
		cmocka_unit_test(test_string_escapes),
		cmocka_unit_test(test_raw_control_chars),
		cmocka_unit_test(test_invalid_utf8),
		cmocka_unit_test(test_lone_surrogates),
		cmocka_unit_test(test_lone_surrogate_at_end),
		cmocka_unit_test(test_gzip_input),
		cmocka_unit_test(test_gzip_multi_member),
		cmocka_unit_test(test_trickled_input),
		cmocka_unit_test(test_stdin),
		cmocka_unit_test(test_open_errors),
		cmocka_unit_test(test_repairs_that_grow),
	};
	return cmocka_run_group_tests_name("reader", tests, NULL, teardown);
}
