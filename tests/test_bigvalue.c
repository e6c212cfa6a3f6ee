/* test_bigvalue.c: a 300 MB string, from a generated file and through a pipe, against the default value limit. */
/* The pipe variant must end within DEADLINE seconds: a reader that rescans
 * the value for every block a pipe delivers would take hours. The bound is
 * no speed target: a linear reader needs a few seconds, about 12 in the
 * sanitizer build beside other tests, and the writer stops at the deadline
 * so that a reader that is too slow fails instead of hanging. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "testutil.h"

#define BIG (300u * 1000 * 1000) /* over the default limit of 256 MiB */

static const char head[] = "[{\"ph\":\"X\",\"name\":\"before\"},\n{\"ph\":\"X\",\"args\":{\"s\":\"";
static const char tail[] = "\"}}]\n";

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

#define DEADLINE 60.0 /* seconds; a linear reader needs a fraction of that */

/* Writes the trace to fd in 1 MiB blocks. With a deadline it stops early
 * once that has passed, so a reader that is too slow ends instead of hanging.
 * Returns the bytes written. */
static size_t write_big(int fd, double deadline)
{
	size_t blk = 1u << 20;
	char *b = malloc(blk);
	if (!b)
		return -1;
	memset(b, 'x', blk);
	int rc = write(fd, head, sizeof head - 1) == (ssize_t)(sizeof head - 1) ? 0 : -1;
	size_t left = BIG;
	while (!rc && left && (!deadline || now() < deadline)) {
		size_t k = left < blk ? left : blk;
		ssize_t w = write(fd, b, k);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			rc = -1;
		else
			left -= (size_t)w;
	}
	if (!rc && !left && write(fd, tail, sizeof tail - 1) != (ssize_t)(sizeof tail - 1))
		rc = -1;
	free(b);
	return BIG - left;
}

static void expect_limit(tk_reader *r, const char *name, double t0)
{
	tu_events ev = {0};
	int rc = tu_read_all(r, &ev);
	if (rc != TK_ERR_LIMIT)
		fail_msg("%s: a %u-byte string with the default limit: rc %d, want TK_ERR_LIMIT (%s)", name,
		         BIG, rc, tk_reader_error(r));
	assert_int_equal(ev.n, 1);
	assert_true(tu_contains(tk_reader_error(r), name));
	print_message("%s: refused in %.1f s\n", name, now() - t0);
	tu_events_free(&ev);
}

static void test_big_string_file(void **state)
{
	(void)state;
	const char *path = tu_path("big.json");
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(write_big(fd, 0), BIG);
	close(fd);
	double t0 = now();
	tk_reader *r = NULL;
	int rc = tk_reader_open_path(&r, path, NULL);
	unlink(path); /* the reader holds it open; nothing is left if the test is killed */
	assert_int_equal(rc, 0);
	expect_limit(r, path, t0);
	tk_reader_free(r);
}

typedef struct pipe_job {
	int fd;
	double deadline;
	size_t sent;
} pipe_job;

static void *pipe_writer(void *arg)
{
	pipe_job *j = arg;
	j->sent = write_big(j->fd, j->deadline); /* EPIPE once the reader gives up: fine */
	close(j->fd);
	return NULL;
}

static void test_big_string_pipe(void **state)
{
	(void)state;
	int p[2];
	assert_int_equal(pipe(p), 0);
	double t0 = now();
	pipe_job job = {p[1], t0 + DEADLINE, 0};
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, pipe_writer, &job), 0);
	tk_reader *r = NULL;
	tu_events ev = {0};
	int rc = tk_reader_open_fd(&r, p[0], "big-pipe", NULL);
	if (!rc)
		rc = tu_read_all(r, &ev);
	double took = now() - t0;
	close(p[0]); /* the writer gets EPIPE and stops */
	pthread_join(th, NULL);
	if (took > DEADLINE)
		fail_msg("a %u-byte string through a pipe: no answer within %.0f s (only %zu bytes "
		         "were taken in by then; rc %d: %s)", BIG, DEADLINE, job.sent, rc, tk_reader_error(r));
	if (rc != TK_ERR_LIMIT)
		fail_msg("big-pipe: a %u-byte string with the default limit: rc %d, want TK_ERR_LIMIT (%s)",
		         BIG, rc, tk_reader_error(r));
	assert_int_equal(ev.n, 1);
	print_message("big-pipe: refused in %.1f s\n", took);
	tu_events_free(&ev);
	tk_reader_free(r);
}

/* The window grows to the limit and no further: a value of 20 MB against a
 * limit of 9 MiB is refused with a window of 9 MiB + 64 KiB, where doubling
 * from 1 MiB would have taken 16 MiB (and the limit times two in general). */
static void test_window_bound(void **state)
{
	(void)state;
	const size_t lim = (size_t)9 << 20, n = 20u * 1000 * 1000;
	const char *path = tu_path("window.json");
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(head, f);
	for (size_t i = 0; i < n; i++)
		fputc('y', f);
	fputs(tail, f);
	assert_int_equal(fclose(f), 0);
	tk_reader_opts o = {0};
	o.max_value_bytes = lim;
	tk_reader *r = NULL;
	tu_events ev = {0};
	assert_int_equal(tk_reader_open_path(&r, path, &o), 0);
	assert_int_equal(tu_read_all(r, &ev), TK_ERR_LIMIT);
	uint64_t w = tk_reader_get_stats(r)->window_bytes;
	if (w > lim + (64u << 10))
		fail_msg("the window grew to %llu bytes for a limit of %zu", (unsigned long long)w, lim);
	assert_true(w > lim); /* it did grow to see one byte over the limit */
	print_message("window %llu bytes for a limit of %zu\n", (unsigned long long)w, lim);
	tu_events_free(&ev);
	tk_reader_free(r);
	unlink(path);
}

static int teardown(void **state)
{
	(void)state;
	tu_cleanup();
	return 0;
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_big_string_file),
		cmocka_unit_test(test_window_bound),
		cmocka_unit_test(test_big_string_pipe),
	};
	return cmocka_run_group_tests_name("bigvalue", tests, NULL, teardown);
}
