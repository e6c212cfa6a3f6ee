/* test_event.c: tk_event_dup / tk_event_equal and typed access to event arguments. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "../libtrace/src/internal.h"

static tu_events load_events(const char *name)
{
	size_t n;
	char *t = tu_load(name, &n);
	tk_reader *r = tu_open_mem(t, n, name, NULL);
	tu_events ev = {0};
	assert_int_equal(tu_read_all(r, &ev), TK_EOF);
	/* the copies must outlive the reader and its input */
	tk_reader_free(r);
	memset(t, 0, n);
	free(t);
	return ev;
}

static tk_event with_args(const char *args)
{
	tk_event e;
	memset(&e, 0, sizeof e);
	e.ph = 'X';
	e.has = TK_HAS_PH;
	e.args = tu_sv(args);
	return e;
}

/* ---- dup and equal ---- */

static void test_dup_outlives_reader(void **state)
{
	(void)state;
	tu_events ev = load_events("kineto_small.json");
	assert_int_equal(ev.n, 16);
	const tk_event *e = ev.ev[3];
	assert_true(tu_sv_is(e->name, "aten::addmm"));
	assert_true(tu_sv_is(e->cat, "cpu_op"));
	assert_int_equal(e->args.ptr[e->args.len], 0);
	assert_int_equal(e->name.ptr[e->name.len], 0);
	assert_true(tu_sv_is(ev.ev[14]->pid.str, "4093687616"));
	assert_true(tu_sv_is(ev.ev[14]->tid.str, "stream 7"));
	assert_true(tu_sv_is(ev.ev[7]->extra, "\"bp\":\"e\""));
	int64_t v;
	assert_int_equal(tk_args_get_int(e, "External id", &v), 0);
	assert_int_equal(v, 12345);
	tu_events_free(&ev);
}

/* Borrowed events change on the next call; a dup does not. */
static void test_dup_vs_borrowed(void **state)
{
	(void)state;
	size_t n;
	char *t = tu_load("kineto_small.json", &n);
	tk_reader *r = tu_open_mem(t, n, "k.json", NULL);
	const tk_event *e;
	for (int i = 0; i < 4; i++)
		assert_int_equal(tk_reader_next(r, &e), TK_OK);
	tk_event *d = tk_event_dup(e);
	assert_non_null(d);
	assert_true(tk_event_equal(d, e));
	assert_int_equal(tk_reader_next(r, &e), TK_OK);
	assert_false(tk_event_equal(d, e));
	assert_true(tu_sv_is(d->name, "aten::addmm"));
	assert_non_null(strstr(d->args.ptr, "\"Input Dims\":[[8,1024],[],[1024,1024],null]"));
	tk_event_free(d);
	tk_reader_free(r);
	free(t);
	assert_null(tk_event_dup(NULL));
	tk_event_free(NULL);
}

/* Events packed into one growing buffer (tk__event_pack) come back equal,
 * their strings in the buffer, whatever it moved to; absent strings stay
 * absent, and ids that are not strings keep their numbers. */
static void test_event_pack(void **state)
{
	(void)state;
	tu_events ev = load_events("kineto_small.json");
	tk_event bare;
	memset(&bare, 0, sizeof bare);
	bare.ph = 'i';
	bare.has = TK_HAS_PH;
	bare.pid.kind = TK_ID_INT;
	bare.pid.num = -7;
	bare.id.kind = TK_ID_STR;
	bare.id.str = tu_sv("");
	tk__buf b = {0};
	size_t off[200];
	for (size_t i = 0; i < 200; i++) {
		if (i % 3 == 0) /* data between events, of odd lengths */
			assert_int_equal(tk__buf_append(&b, "xyz", 1 + i % 3), 0);
		const tk_event *e = i % 17 == 16 ? &bare : ev.ev[i % ev.n];
		assert_int_equal(tk__event_pack(&b, e, &off[i]), 0);
		assert_int_equal(off[i] % 8, 0);
	}
	for (size_t i = 0; i < 200; i++) {
		const tk_event *e = i % 17 == 16 ? &bare : ev.ev[i % ev.n];
		tk_event u;
		tk__event_unpack(&b, off[i], &u);
		assert_true(tk_event_equal(&u, e));
		const tk_sv *sv[4] = {&u.name, &u.cat, &u.args, &u.extra};
		const tk_sv *orig[4] = {&e->name, &e->cat, &e->args, &e->extra};
		for (int k = 0; k < 4; k++) {
			assert_int_equal(!sv[k]->ptr, !orig[k]->ptr);
			assert_true(!sv[k]->ptr || (sv[k]->ptr >= b.p && sv[k]->ptr + sv[k]->len < b.p + b.len));
		}
		if (u.tid.kind == TK_ID_STR)
			assert_true(u.tid.str.ptr >= b.p && u.tid.str.ptr < b.p + b.len);
	}
	tk_event u;
	tk__event_unpack(&b, off[16], &u);
	assert_int_equal(u.pid.num, -7);
	assert_int_equal(u.id.kind, TK_ID_STR);
	assert_int_equal(u.id.str.len, 0);
	assert_null(u.name.ptr);
	assert_true(u.id.str.ptr >= b.p && u.id.str.ptr < b.p + b.len);
	tk__buf_free(&b);
	tu_events_free(&ev);
}

static void test_equal_discriminates(void **state)
{
	(void)state;
	tu_events ev = load_events("kineto_small.json");
	for (size_t i = 0; i < ev.n; i++)
		for (size_t j = 0; j < ev.n; j++)
			if (tk_event_equal(ev.ev[i], ev.ev[j]) != (i == j))
				fail_msg("events %zu and %zu: equal says %d", i, j, tk_event_equal(ev.ev[i], ev.ev[j]));
	tu_events_free(&ev);

	char n1[] = "op", n2[] = "op";
	tk_event a;
	memset(&a, 0, sizeof a);
	a.ph = 'X';
	a.has = TK_HAS_PH | TK_HAS_TS | TK_HAS_DUR | TK_HAS_NAME;
	a.ts = 5;
	a.dur = 7;
	a.name = (tk_sv){n1, 2};
	a.pid = (tk_id){TK_ID_INT, 5, {NULL, 0}};
	a.tid = (tk_id){TK_ID_STR, 0, {"stream 7", 8}};
	a.args = tu_sv("{\"a\":1}");
	a.extra = tu_sv("\"s\":\"t\"");
	tk_event b = a;
	b.name = (tk_sv){n2, 2}; /* same text elsewhere */
	assert_true(tk_event_equal(&a, &b));
	b.has |= TK_HAS_VALID_JSON; /* a hint, not a field */
	assert_true(tk_event_equal(&a, &b));
	tk_event c = b;
	c.ts = 6;
	assert_false(tk_event_equal(&a, &c));
	c = b, c.dur = 8;
	assert_false(tk_event_equal(&a, &c));
	c = b, c.ph = 'i';
	assert_false(tk_event_equal(&a, &c));
	c = b, c.pid = (tk_id){TK_ID_STR, 0, {"5", 1}};
	assert_false(tk_event_equal(&a, &c));
	c = b, c.pid.num = 6;
	assert_false(tk_event_equal(&a, &c));
	c = b, c.tid.str = (tk_sv){"stream 8", 8};
	assert_false(tk_event_equal(&a, &c));
	c = b, c.id = (tk_id){TK_ID_INT, 0, {NULL, 0}};
	assert_false(tk_event_equal(&a, &c));
	c = b, c.name = (tk_sv){"op\0x", 4};
	assert_false(tk_event_equal(&a, &c));
	c = b, c.has &= ~(unsigned)TK_HAS_DUR;
	assert_false(tk_event_equal(&a, &c));
	c = b, c.args = tu_sv("{\"a\":2}");
	assert_false(tk_event_equal(&a, &c));
	c = b, c.args = (tk_sv){NULL, 0};
	assert_false(tk_event_equal(&a, &c));
	c = b, c.extra = (tk_sv){NULL, 0};
	assert_false(tk_event_equal(&a, &c));
	c = b, c.has |= TK_HAS_CAT, c.cat = tu_sv("cpu_op");
	assert_false(tk_event_equal(&a, &c));

	tk_event *d = tk_event_dup(&a);
	assert_true(tk_event_equal(&a, d));
	assert_true(d->name.ptr != a.name.ptr);
	assert_true(tu_sv_is(d->tid.str, "stream 7"));
	tk_event_free(d);
}

/* ---- typed arguments ---- */

static void test_args_get_int(void **state)
{
	(void)state;
	tu_events ev = load_events("kineto_small.json");
	const tk_event *e = ev.ev[3];
	int64_t v = -7;
	assert_int_equal(tk_args_get_int(e, "External id", &v), 0);
	assert_int_equal(v, 12345);
	assert_int_equal(tk_args_get_int(e, "Sequence number", &v), 0);
	assert_int_equal(v, 402);
	assert_int_equal(tk_args_get_int(e, "Record function id", &v), 0);
	assert_int_equal(v, 0);
	assert_int_equal(tk_args_get_int(e, "Input Dims", &v), TK_ERR_FORMAT);
	assert_int_equal(tk_args_get_int(e, "External", &v), TK_EOF);
	assert_int_equal(tk_args_get_int(e, "nope", &v), TK_EOF);
	assert_int_equal(tk_args_get_int(ev.ev[6], "blocks per SM", &v), TK_ERR_FORMAT);
	assert_int_equal(tk_args_get_int(ev.ev[6], "correlation", &v), 0);
	assert_int_equal(v, 98001);
	assert_int_equal(tk_args_get_int(ev.ev[10], "Addr", &v), 0);
	assert_int_equal(v, 140234567890944);
	assert_int_equal(tk_args_get_int(ev.ev[5], "External id", &v), TK_EOF); /* no args */
	tu_events_free(&ev);

	tk_event x = with_args("{\"a\":{\"External id\":1},\"s\":\"\\\"External id\\\":5\","
	                       "\"External id\":-9223372036854775808,\"max\":9223372036854775807,"
	                       "\"over\":9223372036854775808,\"str\":\"12\",\"t\":true,\"n\":null}");
	assert_int_equal(tk_args_get_int(&x, "External id", &v), 0);
	assert_int_equal(v, INT64_MIN);
	assert_int_equal(tk_args_get_int(&x, "max", &v), 0);
	assert_int_equal(v, INT64_MAX);
	assert_int_equal(tk_args_get_int(&x, "over", &v), TK_ERR_FORMAT);
	assert_int_equal(tk_args_get_int(&x, "str", &v), TK_ERR_FORMAT);
	assert_int_equal(tk_args_get_int(&x, "t", &v), TK_ERR_FORMAT);
	assert_int_equal(tk_args_get_int(&x, "n", &v), TK_ERR_FORMAT);
	tk_sv sv;
	assert_int_equal(tk_args_find(&x, "a", &sv), 0);
	assert_true(tu_sv_is(sv, "{\"External id\":1}"));
	assert_int_equal(tk_json_obj_find(tu_sv("[1,2]"), "a", &sv), TK_ERR_FORMAT);
	assert_int_equal(tk_json_obj_find(tu_sv("{}"), "a", &sv), TK_EOF);
	assert_int_equal(tk_json_obj_find(tu_sv(" { \"a\" : [1, {\"b\":\"]}\"}] , \"c\" : 3 } "), "c", &sv), 0);
	assert_true(tu_sv_is(sv, "3"));
}

static void test_args_get_str(void **state)
{
	(void)state;
	tu_events ev = load_events("kineto_small.json");
	char buf[64];
	size_t len = 0;
	assert_int_equal(tk_args_get_str(ev.ev[0], "name", buf, sizeof buf, &len), 0);
	assert_string_equal(buf, "python3");
	assert_int_equal(len, 7);
	assert_int_equal(tk_args_get_str(ev.ev[3], "External id", buf, sizeof buf, &len), TK_ERR_FORMAT);
	assert_int_equal(tk_args_get_str(ev.ev[3], "nope", buf, sizeof buf, &len), TK_EOF);
	tu_events_free(&ev);

	tk_event x = with_args("{\"s\":\"a\\\"b\\\\c\\/d\\u00e9\\ud83d\\ude00\\n\\t\",\"long\":\"hello\","
	                       "\"lone\":\"x\\ud800y\",\"low\":\"\\udc00\",\"e\":\"\"}");
	assert_int_equal(tk_args_get_str(&x, "s", buf, sizeof buf, &len), 0);
	assert_string_equal(buf, "a\"b\\c/d\xC3\xA9\xF0\x9F\x98\x80\n\t");
	assert_int_equal(len, strlen(buf));
	/* truncated to the buffer, still terminated; the full length is reported */
	char small[4];
	assert_int_equal(tk_args_get_str(&x, "long", small, sizeof small, &len), 0);
	assert_string_equal(small, "hel");
	assert_int_equal(len, 5);
	assert_int_equal(tk_args_get_str(&x, "lone", buf, sizeof buf, &len), 0);
	assert_string_equal(buf, "x\xEF\xBF\xBDy");
	assert_int_equal(tk_args_get_str(&x, "low", buf, sizeof buf, &len), 0);
	assert_string_equal(buf, "\xEF\xBF\xBD");
	assert_int_equal(tk_args_get_str(&x, "e", buf, sizeof buf, &len), 0);
	assert_string_equal(buf, "");
	assert_int_equal(len, 0);
}

/* Args that are not valid JSON (an event built by a caller) give an error,
 * never a read outside the text. */
static void test_args_get_str_malformed(void **state)
{
	(void)state;
	static const char *bad[] = {"{\"s\":\"abc", "{\"s\":\"a\\", "{\"s\":\"a\\q\"}", "{\"s\":\"\\u12\"}",
	                            "{\"s\":\"\\uZZZZ\"}", "{\"s\":"};
	char buf[32];
	size_t len;
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		/* an exact-size heap copy so a sanitizer sees any overread */
		size_t n = strlen(bad[i]);
		char *p = malloc(n);
		memcpy(p, bad[i], n);
		tk_event x = with_args("");
		x.args = (tk_sv){p, n};
		int rc = tk_args_get_str(&x, "s", buf, sizeof buf, &len);
		if (rc != TK_ERR_FORMAT)
			fail_msg("%s: rc %d, want TK_ERR_FORMAT", bad[i], rc);
		free(p);
	}
	/* a backslash followed by a NUL byte */
	static const char nul[] = "{\"s\":\"a\\\0b\"}";
	tk_event x = with_args("");
	x.args = (tk_sv){nul, sizeof nul - 1};
	assert_int_equal(tk_args_get_str(&x, "s", buf, sizeof buf, &len), TK_ERR_FORMAT);
}

/* Items that no comma keeps apart are not a dims list: they were once
 * written past the room counted from the commas. */
static void test_args_get_dims_no_commas(void **state)
{
	(void)state;
	static const char *const texts[] = {
		"{\"Input Dims\":[[1] [2] [3] [4] [5] [6] [7] [8]]}",
		"{\"Input Dims\":[[1,2] [3,4] [5,6]]}",
		"{\"Input Dims\":[7 8 9 10 11]}",
	};
	for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
		tk_event ev;
		memset(&ev, 0, sizeof ev);
		ev.args = (tk_sv){texts[i], strlen(texts[i])};
		tk_dims d;
		assert_int_equal(tk_args_get_dims(&ev, "Input Dims", &d), TK_ERR_FORMAT);
		assert_int_equal(d.n_items, 0);
		tk_dims_free(&d);
	}
}

static void test_args_get_dims(void **state)
{
	(void)state;
	tu_events ev = load_events("kineto_small.json");
	tk_dims d;
	assert_int_equal(tk_args_get_dims(ev.ev[3], "Input Dims", &d), 0);
	assert_int_equal(d.n_items, 4);
	assert_int_equal(d.item_len[0], 2);
	assert_int_equal(d.items[0][0], 8);
	assert_int_equal(d.items[0][1], 1024);
	assert_int_equal(d.item_len[1], 0);
	assert_int_equal(d.item_len[2], 2);
	assert_int_equal(d.items[2][0], 1024);
	assert_int_equal(d.items[2][1], 1024);
	assert_int_equal(d.item_len[3], -1); /* null */
	tk_dims_free(&d);
	tk_dims_free(&d); /* a freed tk_dims can be freed again */
	tk_dims_free(NULL);
	assert_int_equal(tk_args_get_dims(ev.ev[3], "Input type", &d), 0);
	assert_int_equal(d.n_items, 4);
	for (int i = 0; i < 4; i++)
		assert_int_equal(d.item_len[i], -1);
	tk_dims_free(&d);
	assert_int_equal(tk_args_get_dims(ev.ev[3], "External id", &d), TK_ERR_FORMAT);
	tk_dims_free(&d);
	assert_int_equal(tk_args_get_dims(ev.ev[3], "nope", &d), TK_EOF);
	tk_dims_free(&d);
	assert_int_equal(tk_args_get_dims(ev.ev[5], "Input Dims", &d), TK_EOF);
	tk_dims_free(&d);
	tu_events_free(&ev);

	ev = load_events("array_2020.json");
	assert_int_equal(tk_args_get_dims(ev.ev[1], "Input dims", &d), 0);
	static const int lens[] = {4, 4, 0, 0, 0, 0, 0};
	static const int64_t first[] = {32, 3, 224, 224, 64, 3, 7, 7};
	assert_int_equal(d.n_items, 7);
	for (int i = 0; i < 7; i++)
		assert_int_equal(d.item_len[i], lens[i]);
	for (int i = 0; i < 8; i++)
		assert_int_equal(d.items[i / 4][i % 4], first[i]);
	tk_dims_free(&d);
	tu_events_free(&ev);

	tk_event x = with_args("{\"d\":[[[1,2]],[3],5,\"a,b]\",[1.5],[-1,9223372036854775807],[true],[]],"
	                       "\"e\":[],\"s\":\"x\"}");
	assert_int_equal(tk_args_get_dims(&x, "d", &d), 0);
	static const int want[] = {-1, 1, -1, -1, -1, 2, -1, 0};
	assert_int_equal(d.n_items, 8);
	for (int i = 0; i < 8; i++)
		assert_int_equal(d.item_len[i], want[i]);
	assert_int_equal(d.items[1][0], 3);
	assert_int_equal(d.items[5][0], -1);
	assert_int_equal(d.items[5][1], INT64_MAX);
	tk_dims_free(&d);
	assert_int_equal(tk_args_get_dims(&x, "e", &d), 0);
	assert_int_equal(d.n_items, 0);
	tk_dims_free(&d);
	assert_int_equal(tk_args_get_dims(&x, "s", &d), TK_ERR_FORMAT);
	tk_dims_free(&d);
}

/* Many items: the storage is sized from the text, not guessed. */
static void test_args_get_dims_large(void **state)
{
	(void)state;
	size_t cap = 1u << 20, n = 0;
	char *t = malloc(cap);
	n += (size_t)sprintf(t, "{\"d\":[");
	for (int i = 0; i < 20000; i++)
		n += (size_t)sprintf(t + n, "%s[%d,%d,%d]", i ? "," : "", i, -i, i % 3 ? i : 7);
	n += (size_t)sprintf(t + n, ",[]]}");
	tk_event x = with_args(t);
	tk_dims d;
	assert_int_equal(tk_args_get_dims(&x, "d", &d), 0);
	assert_int_equal(d.n_items, 20001);
	for (int i = 0; i < 20000; i++) {
		assert_int_equal(d.item_len[i], 3);
		assert_int_equal(d.items[i][0], i);
		assert_int_equal(d.items[i][1], -i);
	}
	assert_int_equal(d.item_len[20000], 0);
	tk_dims_free(&d);
	free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_dup_outlives_reader),
		cmocka_unit_test(test_dup_vs_borrowed),
		cmocka_unit_test(test_equal_discriminates),
		cmocka_unit_test(test_event_pack),
		cmocka_unit_test(test_args_get_int),
		cmocka_unit_test(test_args_get_str),
		cmocka_unit_test(test_args_get_str_malformed),
		cmocka_unit_test(test_args_get_dims),
		cmocka_unit_test(test_args_get_dims_no_commas),
		cmocka_unit_test(test_args_get_dims_large),
	};
	return cmocka_run_group_tests_name("event", tests, NULL, NULL);
}
