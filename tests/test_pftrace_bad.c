/* test_pftrace_bad.c: the .pftrace reader on crafted input: times and durations out of range, and
 * inputs of a few bytes a field that would make far more of them (joined categories, interned strings
 * copied into args, packet sequences, interning tables, nested dict entries): each is an error or
 * costs what its bytes do. And the writer's annotations of every length, read back. */
#define _GNU_SOURCE
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "formats/pb.h"

/* Protobuf written forwards. */
typedef tu_bytes pb;

static void f_int(pb *b, unsigned f, uint64_t v)
{
	tu_put_varint(b, (uint64_t)f << 3);
	tu_put_varint(b, v);
}

static void f_bytes(pb *b, unsigned f, const void *p, size_t n)
{
	tu_put_varint(b, (uint64_t)f << 3 | 2);
	tu_put_varint(b, n);
	tu_put(b, p, n);
}

static void f_str(pb *b, unsigned f, const char *s)
{
	f_bytes(b, f, s, strlen(s));
}

/* m as field f of b; m emptied */
static void f_msg(pb *b, unsigned f, pb *m)
{
	f_bytes(b, f, m->p, m->n);
	free(m->p);
	memset(m, 0, sizeof *m);
}

/* Field numbers (perfetto_trace.proto). */
enum {
	TRACE_PACKET = 1,
	PKT_TIMESTAMP = 8,
	PKT_SEQ_ID = 10,
	PKT_TRACK_EVENT = 11,
	PKT_INTERNED = 12,
	PKT_CLOCK_ID = 58,
	PKT_SNAPSHOT = 6,
	PKT_TRACK_DESC = 60,
	PKT_CHROME_EVENTS = 5,
	TE_CATEGORY_IIDS = 3,
	TE_ANNOTATIONS = 4,
	TE_TYPE = 9,
	TE_TRACK = 11,
	TE_NAME_IID = 10,
	TE_NAME = 23,
	DA_NAME_IID = 1,
	DA_BOOL = 2,
	DA_UINT = 3,
	DA_INT = 4,
	DA_STRING = 6,
	DA_NAME = 10,
	DA_DICT = 11,
	DA_ARRAY = 12,
	DA_STRING_IID = 17,
	IN_CATEGORIES = 1,
	IN_NAMES = 2,
	IN_ANN_NAMES = 3,
	IN_STRINGS = 29,
};

/* A packet of sequence 1 holding TrackEvent te (emptied), at ts. */
static void put_event(pb *t, pb *te, uint64_t ts)
{
	pb pkt = {0};
	f_int(&pkt, PKT_TIMESTAMP, ts);
	f_int(&pkt, PKT_SEQ_ID, 1);
	f_msg(&pkt, PKT_TRACK_EVENT, te);
	f_msg(t, TRACE_PACKET, &pkt);
}

/* An interned entry {iid, text} as field `kind` of InternedData, in a
 * packet of sequence `seq`. */
static void put_interned(pb *t, uint64_t seq, unsigned kind, uint64_t iid, const void *text, size_t n)
{
	pb e = {0}, in = {0}, pkt = {0};
	f_int(&e, 1, iid);
	f_bytes(&e, 2, text, n);
	f_msg(&in, kind, &e);
	f_int(&pkt, PKT_SEQ_ID, seq);
	f_msg(&pkt, PKT_INTERNED, &in);
	f_msg(t, TRACE_PACKET, &pkt);
}

/* Protobuf written backwards, from the end of the buffer: each field goes
 * in front of what is there already. */
typedef struct {
	unsigned char *b, *p;
} pbrev;

static void rev_bytes(pbrev *w, const void *s, size_t n)
{
	w->p -= n;
	memcpy(w->p, s, n);
}

static void rev_varint(pbrev *w, uint64_t v)
{
	unsigned char t[10];
	size_t n = 0;
	do {
		t[n++] = (unsigned char)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
		v >>= 7;
	} while (v);
	rev_bytes(w, t, n);
}

/* The field `num` holding everything from here to `end` (a message). */
static void rev_wrap(pbrev *w, unsigned num, const unsigned char *end)
{
	rev_varint(w, (uint64_t)(end - w->p));
	rev_varint(w, (uint64_t)num << 3 | 2);
}

/* A .pftrace of two instants, the second with a debug annotation nested
 * `depth` dicts deep (a DebugAnnotation's dict_entries, field 11). Its
 * innermost entry: LEAF_NAMED {name "x", 1} (the reader's general walk),
 * LEAF_IID {name_iid 5, 1} (the reader's short way, one level as deep), or
 * LEAF_ARRAY {array_values [1]} (the short way, one level deeper). */
enum { LEAF_NAMED, LEAF_IID, LEAF_ARRAY };
static unsigned char *deep_pftrace(size_t depth, int leaf, size_t *len)
{
	size_t cap = depth * 12 + 256;
	pbrev w = {malloc(cap), NULL};
	w.p = w.b + cap;
	unsigned char *end = w.p;
	for (int ev = 1; ev >= 0; ev--) {
		unsigned char *pkt = w.p, *te = w.p;
		if (ev) {
			unsigned char *da = w.p;
			rev_bytes(&w, "\x20\x01", 2); /* int_value 1 */
			if (leaf == LEAF_NAMED)
				rev_bytes(&w, "\x52\x01x", 3); /* name "x" */
			else if (leaf == LEAF_IID)
				rev_bytes(&w, "\x08\x05", 2); /* name_iid 5 */
			else
				rev_wrap(&w, 12, da); /* array_values */
			for (size_t i = 0; i < depth; i++) {
				rev_wrap(&w, 11, da);
				rev_bytes(&w, "\x52\x01" "a", 3);
			}
			rev_wrap(&w, 4, da); /* TrackEvent.debug_annotations */
		}
		rev_bytes(&w, "\xba\x01\x01" "e", 4); /* TrackEvent.name (23) "e" */
		rev_bytes(&w, "\x48\x03", 2);       /* TrackEvent.type INSTANT */
		rev_wrap(&w, 11, te);                /* TracePacket.track_event */
		rev_bytes(&w, "\x50\x01", 2);       /* trusted_packet_sequence_id 1 */
		rev_varint(&w, (uint64_t)(1000 + ev));
		rev_bytes(&w, "\x40", 1); /* timestamp */
		rev_wrap(&w, 1, pkt);     /* Trace.packet */
	}
	*len = (size_t)(end - w.p);
	unsigned char *out = malloc(*len);
	memcpy(out, w.p, *len);
	free(w.b);
	return out;
}

/* A .pftrace's nested annotations stop at max_depth, which a reader takes
 * as at most 4096 whatever it is asked for: rendering them is recursive,
 * so deeper nesting must be an error, not the end of the stack. */
static void test_deep_pftrace(void **state)
{
	(void)state;
	static const struct {
		size_t depth;
		unsigned max_depth;
		int ok;
		int leaf;
	} c[] = {{3, 0, 1, LEAF_NAMED},     {999, 0, 1, LEAF_NAMED},      {1001, 0, 0, LEAF_NAMED},
	         {50, 20, 0, LEAF_NAMED},   {4000, 5000, 1, LEAF_NAMED},  {100000, UINT_MAX, 0, LEAF_NAMED},
	         {19, 20, 1, LEAF_NAMED},   {20, 20, 0, LEAF_NAMED},      {19, 20, 1, LEAF_IID},
	         {20, 20, 0, LEAF_IID},     {18, 20, 1, LEAF_ARRAY},      {19, 20, 0, LEAF_ARRAY},
	         {998, 0, 1, LEAF_ARRAY},   {999, 0, 0, LEAF_ARRAY}};
	for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
		size_t n;
		unsigned char *t = deep_pftrace(c[i].depth, c[i].leaf, &n);
		tk_reader_opts o = {.max_depth = c[i].max_depth};
		tk_reader *r = tu_open_mem(t, n, "deep.pftrace", &o);
		tu_events ev = {0};
		int rc = tu_read_all(r, &ev);
		if (c[i].ok) {
			if (rc != TK_EOF || ev.n != 2)
				fail_msg("depth %zu, max_depth %u, leaf %d: rc %d after %zu events (%s)", c[i].depth,
				         c[i].max_depth, c[i].leaf, rc, ev.n, tk_reader_error(r));
			const char *leaf = c[i].leaf == LEAF_NAMED ? "{\"x\":1}}" : c[i].leaf == LEAF_IID ? "{\"\":1}}" : "{\"\":[1]}}";
			const tk_sv a = ev.ev[1]->args;
			assert_true(a.ptr && memmem(a.ptr, a.len, "{\"a\":{\"a\":", 10));
			if (!memmem(a.ptr, a.len, leaf, strlen(leaf)))
				fail_msg("depth %zu, leaf %d: args end %.*s, want %s", c[i].depth, c[i].leaf, 40,
				         a.ptr + (a.len > 40 ? a.len - 40 : 0), leaf);
		} else {
			if (rc != TK_ERR_LIMIT || ev.n != 1)
				fail_msg("depth %zu, max_depth %u, leaf %d: rc %d after %zu events, want TK_ERR_LIMIT after 1 (%s)",
				         c[i].depth, c[i].max_depth, c[i].leaf, rc, ev.n, tk_reader_error(r));
			assert_true(tu_contains(tk_reader_error(r), "deep.pftrace"));
			assert_true(tu_contains(tk_reader_error(r), "nested deeper than"));
		}
		tu_events_free(&ev);
		tk_reader_free(r);
		free(t);
	}
}

/* Reads t: the end, every event, and the reader (freed by the caller). */
static int read_pf(const pb *t, const tk_reader_opts *o, tu_events *ev, tk_reader **rp)
{
	tk_reader *r = tu_open_mem(t->p, t->n, "crafted.pftrace", o);
	int rc = tu_read_all(r, ev);
	*rp = r;
	return rc;
}

static void expect_error(const pb *t, const tk_reader_opts *o, int code, size_t n_good, const char *what)
{
	tu_events ev = {0};
	tk_reader *r;
	int rc = read_pf(t, o, &ev, &r);
	if (rc != code || ev.n != n_good || !tu_contains(tk_reader_error(r), what) ||
	    !tu_contains(tk_reader_error(r), "crafted.pftrace"))
		fail_msg("rc %d after %zu events (%s), want %d after %zu saying '%s'", rc, ev.n, tk_reader_error(r), code,
		         n_good, what);
	tu_events_free(&ev);
	tk_reader_free(r);
}

/* The args of t's one event, read on `threads` threads; ev holds the event
 * (the caller frees it). */
static tk_sv one_args(const pb *t, unsigned threads, tu_events *ev)
{
	tk_reader_opts o = {.threads = threads};
	tk_reader *r;
	assert_int_equal(read_pf(t, &o, ev, &r), TK_EOF);
	tk_reader_free(r);
	assert_int_equal(ev->n, 1);
	return ev->ev[0]->args;
}

/* A DebugAnnotation {name_iid, value} with value field vf = v; emptied
 * into te. */
static void put_ann(pb *te, uint64_t name_iid, unsigned vf, uint64_t v)
{
	pb da = {0};
	f_int(&da, DA_NAME_IID, name_iid);
	f_int(&da, vf, v);
	f_msg(te, TE_ANNOTATIONS, &da);
}

/* The shapes of annotation the reader takes a short way (a name_iid, then
 * one integer, boolean or interned string; an array element or dict entry
 * of one such value) give the text the general walk gives: names that
 * need escaping and names not interned, every value kind, nested; a
 * string id not interned is an error in an array as at the top. */
static void test_annotation_shapes(void **state)
{
	(void)state;
	static const char *const names[] = {"a", "b\"q", "c", "d", "e", "f", "g"};
	pb t = {0}, te = {0}, da = {0}, el = {0};
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
		put_interned(&t, 1, IN_ANN_NAMES, i + 1, names[i], strlen(names[i]));
	put_interned(&t, 1, IN_STRINGS, 1, "s", 1);
	put_interned(&t, 1, IN_STRINGS, 2, "t\x01", 2);
	f_int(&te, TE_TYPE, 3);
	f_str(&te, TE_NAME, "e");
	put_ann(&te, 1, DA_INT, (uint64_t)-5);
	put_ann(&te, 2, DA_UINT, UINT64_MAX);
	put_ann(&te, 3, DA_BOOL, 0);
	put_ann(&te, 4, DA_STRING_IID, 2);
	f_int(&da, DA_NAME_IID, 5); /* "e": [1, "s", true, 7, 8] */
	f_int(&el, DA_INT, 1);
	f_msg(&da, DA_ARRAY, &el);
	f_int(&el, DA_STRING_IID, 1);
	f_msg(&da, DA_ARRAY, &el);
	f_int(&el, DA_BOOL, 1);
	f_msg(&da, DA_ARRAY, &el);
	f_int(&el, DA_UINT, 7);
	f_msg(&da, DA_ARRAY, &el);
	f_int(&el, DA_INT, 8); /* the value first, then a name: the general walk */
	f_int(&el, DA_NAME_IID, 1);
	f_msg(&da, DA_ARRAY, &el);
	f_msg(&te, TE_ANNOTATIONS, &da);
	f_int(&da, DA_NAME_IID, 6); /* "f": {"a": 3, "": 4} */
	f_int(&el, DA_NAME_IID, 1);
	f_int(&el, DA_INT, 3);
	f_msg(&da, DA_DICT, &el);
	f_int(&el, DA_NAME_IID, 99);
	f_int(&el, DA_INT, 4);
	f_msg(&da, DA_DICT, &el);
	f_msg(&te, TE_ANNOTATIONS, &da);
	put_ann(&te, 99, DA_INT, 8); /* a name not interned: "" */
	f_int(&da, DA_INT, 9); /* "g": 9, its name after its value */
	f_int(&da, DA_NAME_IID, 7);
	f_msg(&te, TE_ANNOTATIONS, &da);
	put_event(&t, &te, 1000);
	const char *want = "{\"a\":-5,\"b\\\"q\":18446744073709551615,\"c\":false,\"d\":\"t\\u0001\","
	                   "\"e\":[1,\"s\",true,7,8],\"f\":{\"a\":3,\"\":4},\"\":8,\"g\":9}";
	for (unsigned th = 1; th <= 4; th += 3) {
		tu_events ev = {0};
		const tk_sv a = one_args(&t, th, &ev);
		if (!a.ptr || a.len != strlen(want) || memcmp(a.ptr, want, a.len) != 0)
			fail_msg("threads %u: args %.*s, want %s", th, (int)a.len, a.ptr ? a.ptr : "", want);
		tu_events_free(&ev);
	}
	free(t.p);
	/* a string id that is not interned, as an array's element */
	memset(&t, 0, sizeof t);
	f_int(&te, TE_TYPE, 3);
	f_str(&te, TE_NAME, "e");
	f_int(&da, DA_NAME_IID, 1);
	f_int(&el, DA_STRING_IID, 3);
	f_msg(&da, DA_ARRAY, &el);
	f_msg(&te, TE_ANNOTATIONS, &da);
	put_event(&t, &te, 1000);
	expect_error(&t, NULL, TK_ERR_FORMAT, 0, "string refers to an unknown interned id");
	free(t.p);
}

/* A packet's time less baseTimeNanoseconds (ChromeEventBundle metadata)
 * out of int64: an error, not an overflow. */
static void test_base_out_of_range(void **state)
{
	(void)state;
	for (int big = 0; big < 2; big++) {
		pb t = {0}, meta = {0}, bundle = {0}, pkt = {0}, te = {0};
		f_str(&meta, 1, "baseTimeNanoseconds");
		f_int(&meta, 4, (uint64_t)-1);
		f_msg(&bundle, 2, &meta);
		f_msg(&pkt, PKT_CHROME_EVENTS, &bundle);
		f_msg(&t, TRACE_PACKET, &pkt);
		f_int(&te, TE_TYPE, 3); /* instant */
		f_str(&te, TE_NAME, "e");
		put_event(&t, &te, big ? INT64_MAX : 1000);
		if (big) {
			expect_error(&t, NULL, TK_ERR_FORMAT, 0, "out of range");
		} else {
			tu_events ev = {0};
			tk_reader *r;
			assert_int_equal(read_pf(&t, NULL, &ev, &r), TK_EOF);
			assert_int_equal(ev.n, 1);
			assert_int_equal(ev.ev[0]->ts, 1001);
			tu_events_free(&ev);
			tk_reader_free(r);
		}
		free(t.p);
	}
}

/* A slice whose end less its start is out of int64 (its begin at about
 * -2^63 through a sequence clock, its end at 2^63 - 1): an error. */
static void test_duration_out_of_range(void **state)
{
	(void)state;
	pb t = {0}, pkt = {0}, td = {0}, thr = {0}, snap = {0}, clk = {0}, te = {0};
	f_int(&thr, 1, 1); /* ThreadDescriptor pid, tid */
	f_int(&thr, 2, 2);
	f_int(&td, 1, 1); /* uuid */
	f_msg(&td, 4, &thr);
	f_msg(&pkt, PKT_TRACK_DESC, &td);
	f_msg(&t, TRACE_PACKET, &pkt);
	f_int(&clk, 1, 6); /* BOOTTIME 0 */
	f_int(&clk, 2, 0);
	f_msg(&snap, 1, &clk);
	f_int(&clk, 1, 64); /* sequence clock 64 at 2^63 - 1 */
	f_int(&clk, 2, INT64_MAX);
	f_msg(&snap, 1, &clk);
	f_msg(&pkt, PKT_SNAPSHOT, &snap);
	f_int(&pkt, PKT_SEQ_ID, 1);
	f_msg(&t, TRACE_PACKET, &pkt);
	for (int end = 0; end < 2; end++) {
		f_int(&pkt, PKT_TIMESTAMP, end ? INT64_MAX : 0);
		f_int(&pkt, PKT_CLOCK_ID, end ? 6 : 64);
		f_int(&pkt, PKT_SEQ_ID, 1);
		f_int(&te, TE_TYPE, end ? 2 : 1);
		f_int(&te, TE_TRACK, 1);
		f_str(&te, TE_NAME, "s");
		f_msg(&pkt, PKT_TRACK_EVENT, &te);
		f_msg(&t, TRACE_PACKET, &pkt);
	}
	expect_error(&t, NULL, TK_ERR_FORMAT, 0, "out of range of its start");
	free(t.p);
}

/* Many category_iids on one event, each 100 bytes of text in 2 bytes of
 * input: joined once ("c...c,c...c,...", linear in their number), and an
 * error past max_value_bytes. */
static void test_many_categories(void **state)
{
	(void)state;
	char c[101];
	memset(c, 'c', 100);
	c[100] = 0;
	for (int limit = 0; limit < 2; limit++) {
		pb t = {0}, te = {0};
		put_interned(&t, 1, IN_CATEGORIES, 1, c, 100);
		f_int(&te, TE_TYPE, 3);
		f_str(&te, TE_NAME, "e");
		size_t n = 20000;
		for (size_t i = 0; i < n; i++)
			f_int(&te, TE_CATEGORY_IIDS, 1);
		put_event(&t, &te, 1000);
		tk_reader_opts o = {.max_value_bytes = limit ? 1u << 20 : 0};
		if (limit) {
			expect_error(&t, &o, TK_ERR_LIMIT, 0, "categories are longer than the limit");
		} else {
			tu_events ev = {0};
			tk_reader *r;
			assert_int_equal(read_pf(&t, &o, &ev, &r), TK_EOF);
			assert_int_equal(ev.n, 1);
			const tk_sv cat = ev.ev[0]->cat;
			assert_int_equal(cat.len, 101 * n - 1);
			for (size_t i = 0; i < cat.len; i++)
				assert_int_equal(cat.ptr[i], i % 101 == 100 ? ',' : 'c');
			tu_events_free(&ev);
			tk_reader_free(r);
		}
		free(t.p);
	}
}

/* One 64 KiB interned string referred to by 200 annotations of 5 bytes:
 * 13 MB of args, read whole under the default limit, an error under a
 * 1 MiB one, on one thread and on four. */
static void test_interned_string_copies(void **state)
{
	(void)state;
	size_t len = 65536, n = 200;
	char *big = malloc(len);
	memset(big, 'x', len);
	pb t = {0}, te = {0}, da = {0};
	put_interned(&t, 1, IN_STRINGS, 1, big, len);
	f_int(&te, TE_TYPE, 3);
	f_str(&te, TE_NAME, "e");
	for (size_t i = 0; i < n; i++) {
		f_int(&da, DA_STRING_IID, 1);
		f_msg(&te, TE_ANNOTATIONS, &da);
	}
	put_event(&t, &te, 1000);
	for (unsigned th = 1; th <= 4; th += 3) {
		tu_events ev = {0};
		assert_true(one_args(&t, th, &ev).len > n * len);
		tu_events_free(&ev);
		tk_reader_opts o = {.threads = th, .max_value_bytes = 1u << 20};
		expect_error(&t, &o, TK_ERR_LIMIT, 0, "annotations are larger than the limit");
	}
	free(t.p);
	free(big);
}

/* Past 65536 packet sequences: an error (each sequence keeps state; the
 * sequences are found through a map, not a scan of all of them). */
static void test_many_sequences(void **state)
{
	(void)state;
	for (uint64_t n = 65536; n <= 65537; n++) {
		pb t = {0}, pkt = {0};
		for (uint64_t i = 1; i <= n; i++) {
			f_int(&pkt, PKT_TIMESTAMP, 1000 + i);
			f_int(&pkt, PKT_SEQ_ID, i);
			f_msg(&t, TRACE_PACKET, &pkt);
		}
		pb te = {0};
		f_int(&te, TE_TYPE, 3);
		f_str(&te, TE_NAME, "e");
		put_event(&t, &te, 5000); /* sequence 1 again */
		if (n > 65536) {
			expect_error(&t, NULL, TK_ERR_LIMIT, 0, "more than 65536 packet sequences");
		} else {
			tu_events ev = {0};
			tk_reader *r;
			assert_int_equal(read_pf(&t, NULL, &ev, &r), TK_EOF);
			assert_int_equal(ev.n, 1);
			tu_events_free(&ev);
			tk_reader_free(r);
		}
		free(t.p);
	}
}

/* Interned names at small, large and huge iids, in many sequences: every
 * one found (the large ones through the map rather than a table as long
 * as the iid). */
static void test_interned_iids(void **state)
{
	(void)state;
	static const uint64_t iids[] = {1, 2, 63, 64, 100, 4095, 70000, (uint64_t)1 << 40};
	size_t n_iids = sizeof iids / sizeof iids[0];
	pb t = {0};
	for (uint64_t seq = 1; seq <= 300; seq++)
		for (size_t i = 0; i < n_iids; i++) {
			char nm[64];
			snprintf(nm, sizeof nm, "n%llu.%llu", (unsigned long long)seq, (unsigned long long)iids[i]);
			put_interned(&t, seq, IN_NAMES, iids[i], nm, strlen(nm));
		}
	for (uint64_t seq = 1; seq <= 300; seq += 299)
		for (size_t i = 0; i < n_iids; i++) {
			pb te = {0}, pkt = {0};
			f_int(&te, TE_TYPE, 3);
			f_int(&te, TE_NAME_IID, iids[i]);
			f_int(&pkt, PKT_TIMESTAMP, 1000 + i);
			f_int(&pkt, PKT_SEQ_ID, seq);
			f_msg(&pkt, PKT_TRACK_EVENT, &te);
			f_msg(&t, TRACE_PACKET, &pkt);
		}
	tu_events ev = {0};
	tk_reader *r;
	assert_int_equal(read_pf(&t, NULL, &ev, &r), TK_EOF);
	assert_int_equal(ev.n, 2 * n_iids);
	for (size_t k = 0; k < ev.n; k++) {
		char nm[64];
		snprintf(nm, sizeof nm, "n%llu.%llu", (unsigned long long)(k < n_iids ? 1 : 300),
		         (unsigned long long)iids[k % n_iids]);
		if (!tu_sv_is(ev.ev[k]->name, nm))
			fail_msg("event %zu: name '%.*s', want '%s'", k, (int)ev.ev[k]->name.len, ev.ev[k]->name.ptr, nm);
	}
	tu_events_free(&ev);
	tk_reader_free(r);
	free(t.p);
}

/* Dict entries nested `depth` deep around a string: the args text is the
 * keys in order around the value, each key written before its value. */
static void test_nested_dict_entries(void **state)
{
	(void)state;
	size_t depth = 200, len = 1000;
	char *s = malloc(len + 1);
	memset(s, 'v', len);
	s[len] = 0;
	pb da = {0};
	f_str(&da, DA_NAME, "x");
	f_str(&da, DA_STRING, s);
	for (size_t i = depth; i-- > 0;) {
		pb outer = {0};
		char k[32];
		snprintf(k, sizeof k, "k%zu", i);
		f_msg(&outer, DA_DICT, &da);
		f_str(&outer, DA_NAME, k); /* the name after the entries: found first all the same */
		da = outer;
	}
	pb t = {0}, te = {0};
	f_int(&te, TE_TYPE, 3);
	f_str(&te, TE_NAME, "e");
	f_msg(&te, TE_ANNOTATIONS, &da);
	put_event(&t, &te, 1000);
	/* the outermost annotation is the member "k0"; each holds the next */
	char *want = malloc(depth * 16 + len + 64), *w = want;
	for (size_t i = 0; i < depth; i++)
		w += sprintf(w, "{\"k%zu\":", i);
	w += sprintf(w, "{\"x\":\"%s\"", s);
	for (size_t i = 0; i <= depth; i++)
		*w++ = '}';
	*w = 0;
	size_t want_len = (size_t)(w - want);
	tu_events ev = {0};
	tk_reader *r;
	assert_int_equal(read_pf(&t, NULL, &ev, &r), TK_EOF);
	assert_int_equal(ev.n, 1);
	const tk_sv a = ev.ev[0]->args;
	if (a.len != want_len || memcmp(a.ptr, want, a.len) != 0)
		fail_msg("args %.120s... (%zu bytes), want %.120s... (%zu)", a.ptr, a.len, want, want_len);
	tu_events_free(&ev);
	tk_reader_free(r);
	free(want);
	free(t.p);
	free(s);
}

static int teardown(void **state)
{
	(void)state;
	tu_cleanup();
	return 0;
}

/* A varint of v in all ten bytes (non-minimal, as protobuf allows). */
static void put_varint10(pb *b, uint64_t v)
{
	unsigned char t[10];
	for (int i = 0; i < 10; i++, v >>= 7)
		t[i] = (unsigned char)((v & 0x7f) | (i < 9 ? 0x80 : 0));
	tu_put(b, t, 10);
}

/* Top-level field headers of up to 20 bytes (a key and a length, each a
 * varint of up to ten bytes) where one straddles the end of the reader's
 * first 1 MiB window (the reader made sure of 11 bytes before a header:
 * a two-byte key with a ten-byte length read as a damaged header there,
 * and in memory did not): read alike from a file and from memory, on one
 * thread and on two. */
static void test_wide_field_header(void **state)
{
	(void)state;
	const size_t window = (size_t)1 << 20;
	for (int k = 0; k < 2; k++)
		for (size_t back = 1; back <= 21; back++) {
			pb t = {0}, pkt = {0}, te = {0};
			for (int i = 0; i < 8; i++) { /* packets first: what makes it a Perfetto trace */
				f_int(&te, TE_TYPE, 3); /* instant */
				f_str(&te, TE_NAME, "d");
				put_event(&t, &te, 500);
			}
			/* a packet of one unknown field, so that the header below starts
			 * `back` bytes before the window's end */
			size_t room = window - back - t.n - 1 - 10 - 2 - 10;
			tu_put_varint(&t, TRACE_PACKET << 3 | 2);
			put_varint10(&t, room + 2 + 10);
			tu_put_varint(&t, 999u << 3 | 2);
			put_varint10(&t, room);
			unsigned char *fill = calloc(1, room);
			tu_put(&t, fill, room);
			free(fill);
			assert_int_equal(t.n, window - back);
			if (k == 0) { /* an unknown top-level field 100: a two-byte key */
				tu_put_varint(&t, 100u << 3 | 2);
				put_varint10(&t, 1);
				tu_put(&t, "x", 1);
			}
			f_int(&te, TE_TYPE, 3);
			f_str(&te, TE_NAME, "e");
			f_int(&pkt, PKT_TIMESTAMP, 1000);
			f_int(&pkt, PKT_SEQ_ID, 1);
			f_msg(&pkt, PKT_TRACK_EVENT, &te);
			if (k == 1) /* the packet's key in ten bytes too */
				put_varint10(&t, TRACE_PACKET << 3 | 2);
			else
				tu_put_varint(&t, TRACE_PACKET << 3 | 2);
			put_varint10(&t, pkt.n);
			tu_put(&t, pkt.p, pkt.n);
			free(pkt.p);
			const char *path = tu_path("wide.pftrace");
			tu_write_file(path, t.p, t.n);
			for (unsigned threads = 1; threads <= 2; threads++) {
				tk_reader_opts o = {.threads = threads};
				tu_events ev = {0};
				tk_reader *r;
				int rc = read_pf(&t, &o, &ev, &r);
				if (rc != TK_EOF || ev.n != 9)
					fail_msg("case %d at %zu, memory, %u threads: rc %d after %zu events: %s", k, back, threads, rc,
					         ev.n, tk_reader_error(r));
				tu_events_free(&ev);
				tk_reader_free(r);
				assert_int_equal(tk_reader_open_path(&r, path, &o), TK_OK);
				rc = tu_read_all(r, &ev);
				if (rc != TK_EOF || ev.n != 9)
					fail_msg("case %d at %zu, file, %u threads: rc %d after %zu events: %s", k, back, threads, rc,
					         ev.n, tk_reader_error(r));
				assert_true(tu_sv_is(ev.ev[8]->name, "e"));
				tu_events_free(&ev);
				tk_reader_free(r);
			}
			free(t.p);
		}
}

/* A nested message written with one byte of room for its length
 * (tk__pb_begin_small, as the writer's annotations are) is byte for byte
 * the one written with four (tk__pb_begin), at every length up to past
 * three bytes of varint, after other bytes and nested in another. */
static void test_small_messages(void **state)
{
	(void)state;
	tk__buf a = {0}, b = {0};
	for (size_t n = 0; n < 20000; n += n < 300 ? 1 : n < 16500 ? 97 : 1) {
		a.len = b.len = 0;
		assert_int_equal(tk__pb_room(&a, n + 64), 0);
		assert_int_equal(tk__pb_room(&b, n + 64), 0);
		tk__pb_uint(&a, 1, n);
		tk__pb_uint(&b, 1, n);
		size_t ma = tk__pb_begin(&a, 9), mb = tk__pb_begin_small(&b, 9);
		size_t ia = tk__pb_begin(&a, 3), ib = tk__pb_begin_small(&b, 3);
		for (size_t i = 0; i < n; i++) {
			a.p[a.len++] = (char)(i * 7 + n);
			b.p[b.len++] = (char)(i * 7 + n);
		}
		assert_int_equal(tk__pb_end(&a, ia), 0);
		assert_int_equal(tk__pb_end_small(&b, ib), 0);
		assert_int_equal(tk__pb_end(&a, ma), 0);
		assert_int_equal(tk__pb_end_small(&b, mb), 0);
		assert_int_equal(a.len, b.len);
		assert_memory_equal(a.p, b.p, a.len);
	}
	tk__buf_free(&a);
	tk__buf_free(&b);
}

/* Annotations of every length as the writer writes them: under 128 bytes
 * (their length in one byte) and longer (in 2 and 3 bytes: strings
 * written inline, dicts, lists), at the top and nested: read back, every
 * event equals the JSON's. */
static void test_long_annotations(void **state)
{
	(void)state;
	const size_t lens[] = {0, 10, 100, 120, 127, 128, 200, 300, 5000, 16383, 16384, 20000};
	const size_t n_lens = sizeof lens / sizeof lens[0];
	char *text = NULL;
	size_t tlen = 0;
	FILE *f = open_memstream(&text, &tlen);
	assert_non_null(f);
	fputs("{\"traceEvents\":[\n", f);
	for (size_t i = 0; i < n_lens; i++) {
		fprintf(f, "%s{\"ph\":\"i\",\"s\":\"t\",\"name\":\"e%zu\",\"pid\":1,\"tid\":2,\"ts\":%zu,\"args\":{\"s\":\"",
		        i ? ",\n" : "", i, 10 + i);
		for (size_t j = 0; j < lens[i]; j++)
			fputc('a' + (int)(j % 26), f);
		fputs("\",\"d\":{", f);
		for (size_t j = 0; j < lens[i] / 8; j++)
			fprintf(f, "%s\"k%zu\":%zu", j ? "," : "", j, j * 1000);
		fprintf(f, "%s\"n\":{\"x\":\"", lens[i] >= 8 ? "," : "");
		for (size_t j = 0; j < lens[i]; j++)
			fputc('z' - (int)(j % 26), f);
		fputs("\"}},\"l\":[", f);
		for (size_t j = 0; j < lens[i] / 4; j++)
			fprintf(f, "%s%zu", j ? "," : "", j);
		fputs("]}}", f);
	}
	fputs("\n]}\n", f);
	fclose(f);
	char json[512], pf[512]; /* tu_path's buffer is its next call's */
	snprintf(json, sizeof json, "%s", tu_path("long.json"));
	snprintf(pf, sizeof pf, "%s", tu_path("long.pftrace"));
	tu_write_file(json, text, tlen);
	free(text);
	tk_writer_opts wo = {.format = TK_FORMAT_PFTRACE};
	assert_int_equal(tu_convert(json, pf, &wo, NULL), 0);
	tk_reader *a = NULL, *b = NULL;
	tu_events ea = {0}, eb = {0};
	assert_int_equal(tk_reader_open_path(&a, json, NULL), 0);
	assert_int_equal(tk_reader_open_path(&b, pf, NULL), 0);
	assert_int_equal(tu_read_all(a, &ea), TK_EOF);
	assert_int_equal(tu_read_all(b, &eb), TK_EOF);
	assert_int_equal(ea.n, n_lens);
	assert_int_equal(eb.n, n_lens);
	for (size_t i = 0; i < n_lens; i++)
		if (!tk_event_equal(ea.ev[i], eb.ev[i]))
			fail_msg("event %zu (strings of %zu bytes): args %.*s", i, lens[i], (int)eb.ev[i]->args.len,
			         eb.ev[i]->args.ptr);
	tu_events_free(&ea);
	tu_events_free(&eb);
	tk_reader_free(a);
	tk_reader_free(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_base_out_of_range),     cmocka_unit_test(test_duration_out_of_range),
		cmocka_unit_test(test_many_categories),       cmocka_unit_test(test_interned_string_copies),
		cmocka_unit_test(test_many_sequences),        cmocka_unit_test(test_interned_iids),
		cmocka_unit_test(test_nested_dict_entries),   cmocka_unit_test(test_deep_pftrace),
		cmocka_unit_test(test_wide_field_header),     cmocka_unit_test(test_long_annotations),
		cmocka_unit_test(test_small_messages),     cmocka_unit_test(test_annotation_shapes),
	};
	return cmocka_run_group_tests_name("pftrace_bad", tests, NULL, teardown);
}
