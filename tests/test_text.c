/* test_text.c: the JSON text helpers of the library's core (numbers and
 * integers as text, the number scanner) against what they stand for. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "../libtrace/src/internal.h"

/* What tk__json_double promises, done the slow way: the shortest of %.15g,
 * %.16g and %.17g that reads back, ".0" after an integer, null for the
 * rest. */
static void slow_double(double d, char *out, size_t cap)
{
	if (!isfinite(d)) {
		snprintf(out, cap, "null");
		return;
	}
	for (int prec = 15; prec <= 17; prec++) {
		snprintf(out, cap, "%.*g", prec, d);
		if (strtod(out, NULL) == d)
			break;
	}
	if (!strpbrk(out, ".eEn"))
		strcat(out, ".0");
}

static uint64_t rng = 0x9E3779B97F4A7C15ull;

static uint64_t next(void)
{
	uint64_t z = (rng += 0x9E3779B97F4A7C15ull);
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

/* 1 if tk__json_double wrote what slow_double does; prints the first
 * difference. */
static int same_text(double d)
{
	char want[64];
	slow_double(d, want, sizeof want);
	tk__buf b = {0};
	assert_int_equal(tk__json_double(&b, d), 0);
	int ok = b.len == strlen(want) && memcmp(b.p, want, b.len) == 0;
	if (!ok)
		print_error("%a: got %.*s, want %s\n", d, (int)b.len, b.p ? b.p : "", want);
	tk__buf_free(&b);
	return ok;
}

static void test_double_edges(void **state)
{
	(void)state;
	static const double v[] = {
	    0.0, 1.0, -1.0, 0.5, 17.818182, 71.272727, 100.0, 12.5, 0.1, 0.2, 0.3, 1e-4, 9.9999e-5, 1.0001e-4,
	    0.0001234, 0.001234, 1e14, 99999999999999.9, 999999999999999.0, 999999999999999.9, 1e15, 1e15 + 1,
	    123456789012345.0, 12345678901234.5, 1234567890123456.0, 1.5e300, 4.9e-324, 2.2250738585072014e-308,
	    1.7976931348623157e308, 9007199254740993.0, 0.30000000000000004, 1.0 / 3.0, 2.0 / 3.0, 1e-5, 5e-5,
	    3.14159265358979, 3.141592653589793, 123.456, 1e16, 1e17, 1e21, 1e22, 1e23};
	int bad = 0;
	for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
		bad += !same_text(v[i]);
		bad += !same_text(-v[i]);
		bad += !same_text(nextafter(v[i], 0));
		bad += !same_text(nextafter(v[i], INFINITY));
	}
	bad += !same_text(INFINITY) + !same_text(-INFINITY) + !same_text(NAN);
	assert_int_equal(bad, 0);
	/* the texts themselves, for the values most traces hold */
	tk__buf b = {0};
	assert_int_equal(tk__json_double(&b, 17.818182), 0);
	assert_int_equal(tk__json_double(&b, 100.0), 0);
	assert_int_equal(tk__json_double(&b, -0.001234), 0);
	assert_int_equal(tk__json_double(&b, -0.0), 0);
	assert_int_equal(tk__json_double(&b, 1e300), 0);
	assert_int_equal(b.len, strlen("17.818182100.0-0.001234-0.01e+300"));
	assert_memory_equal(b.p, "17.818182100.0-0.001234-0.01e+300", b.len);
	tk__buf_free(&b);
}

/* Decimals of 1 to 17 digits at every scale from 1e-22 to 1e22 (the short
 * ones take the quick way, the long ones and the far scales the slow one),
 * and doubles of any bits. */
static void test_double_random(void **state)
{
	(void)state;
	int bad = 0;
	for (int i = 0; i < 400000 && bad < 5; i++) {
		int digits = 1 + (int)(next() % 17), scale = (int)(next() % 45) - 22;
		uint64_t m = next() % 100000000000000000ull;
		uint64_t cut = 1;
		for (int k = 0; k < digits; k++)
			cut *= 10;
		m %= cut;
		double d = (double)m * pow(10.0, scale);
		if (next() & 1)
			d = -d;
		bad += !same_text(d);
		/* and as strtod reads the decimal text, which need not be the product */
		char t[64];
		snprintf(t, sizeof t, "%llue%d", (unsigned long long)m, scale);
		bad += !same_text(strtod(t, NULL));
	}
	for (int i = 0; i < 200000 && bad < 5; i++) {
		uint64_t u = next();
		double d;
		memcpy(&d, &u, 8);
		bad += !same_text(d);
	}
	assert_int_equal(bad, 0);
}

/* tk__buf_u64 and tk__buf_i64 against printf: every power of ten, its
 * neighbours and one and a half times it (where the digits' groups of two
 * and of eight meet), the extremes, and random values of every length. */
static void test_integers(void **state)
{
	(void)state;
	tk__buf b = {0};
	char want[64];
	int bad = 0;
	uint64_t p = 1;
	for (int k = 0; k <= 19 && bad < 5; k++, p *= 10) { /* 10^19 is the last that fits */
		uint64_t v[] = {p - 1, p, p + 1, p + p / 2};
		for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
			for (int neg = 0; neg < 2; neg++) {
				b.len = 0;
				if (neg) {
					if (v[i] > INT64_MAX)
						continue;
					assert_int_equal(tk__buf_i64(&b, -(int64_t)v[i]), 0);
					snprintf(want, sizeof want, "%lld", -(long long)v[i]);
				} else {
					assert_int_equal(tk__buf_u64(&b, v[i]), 0);
					snprintf(want, sizeof want, "%llu", (unsigned long long)v[i]);
				}
				bad += b.len != strlen(want) || memcmp(b.p, want, b.len) != 0;
			}
		}
	}
	const int64_t ends[] = {INT64_MIN, INT64_MAX, 0, -1};
	for (size_t i = 0; i < sizeof ends / sizeof ends[0]; i++) {
		b.len = 0;
		assert_int_equal(tk__buf_i64(&b, ends[i]), 0);
		snprintf(want, sizeof want, "%lld", (long long)ends[i]);
		bad += b.len != strlen(want) || memcmp(b.p, want, b.len) != 0;
	}
	b.len = 0;
	assert_int_equal(tk__buf_u64(&b, UINT64_MAX), 0);
	bad += b.len != 20 || memcmp(b.p, "18446744073709551615", 20) != 0;
	for (int i = 0; i < 200000 && bad < 5; i++) {
		uint64_t u = next() >> (next() % 64);
		b.len = 0;
		assert_int_equal(tk__buf_u64(&b, u), 0);
		snprintf(want, sizeof want, "%llu", (unsigned long long)u);
		bad += b.len != strlen(want) || memcmp(b.p, want, b.len) != 0;
	}
	tk__buf_free(&b);
	assert_int_equal(bad, 0);
}

/* A JSON number's end the slow way, byte by byte: NULL where no number
 * starts, e where it may go on past e. */
static const unsigned char *slow_number(const unsigned char *p, const unsigned char *e)
{
#define D(q) ((q) < e && *(q) >= '0' && *(q) <= '9')
	if (p < e && *p == '-')
		p++;
	if (p >= e)
		return e;
	if (*p == '0')
		p++;
	else if (D(p))
		while (D(p))
			p++;
	else
		return NULL;
	if (p < e && *p == '.') {
		if (++p >= e)
			return e;
		if (!D(p))
			return NULL;
		while (D(p))
			p++;
	}
	if (p < e && (*p == 'e' || *p == 'E')) {
		p++;
		if (p < e && (*p == '+' || *p == '-'))
			p++;
		if (p >= e)
			return e;
		if (!D(p))
			return NULL;
		while (D(p))
			p++;
	}
	return p;
#undef D
}

/* tk__json_scan_number against slow_number on random text cut at every
 * length, the text going on past the cut (the scanner reads ahead into a
 * buffer's padding, and what is there must not count). */
static void test_scan_number(void **state)
{
	(void)state;
	static const char alphabet[] = "0123456789012345678901234567890123456789.-+eE ,]}x";
	unsigned char t[40 + TK__PAD];
	int bad = 0;
	for (int i = 0; i < 100000 && bad < 5; i++) {
		size_t n = 1 + next() % 40;
		for (size_t j = 0; j < n; j++)
			t[j] = (unsigned char)alphabet[next() % (sizeof alphabet - 1)];
		if (next() % 2)
			t[0] = (unsigned char)('1' + next() % 9); /* digit runs of every length */
		memset(t + n, next() % 2 ? 0 : '7', TK__PAD);
		for (size_t cut = 1; cut <= n; cut++) {
			const unsigned char *got = tk__json_scan_number(t, t + cut), *want = slow_number(t, t + cut);
			if (got != want && bad++ < 5)
				print_error("\"%.*s\" cut at %zu: got %td, want %td\n", (int)n, t, cut,
				            got ? got - t : -1, want ? want - t : -1);
		}
	}
	assert_int_equal(bad, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_double_edges),
	    cmocka_unit_test(test_double_random),
	    cmocka_unit_test(test_integers),
	    cmocka_unit_test(test_scan_number),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
