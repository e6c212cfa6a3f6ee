/* test_workers.c: the library's worker threads (core/workers.h): every piece of
 * work done once, by the threads or by the owner helping, each thread with its own
 * state, made before it starts and freed after it ends. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "../libtrace/src/internal.h"
#include "../libtrace/src/core/workers.h"

#define N_WORK 5000

typedef struct wstate {
	unsigned idx;  /* state_init's i, plus 1 */
	unsigned done; /* pieces of work done with this state */
	int fini;      /* state_fini calls */
} wstate;

typedef struct owner {
	tk__workers W;
	size_t queued, next, finished; /* work [next, queued) waits; finished: done */
	unsigned char by[N_WORK];       /* who did each piece: a thread's idx, or 255 the owner */
	unsigned times[N_WORK];         /* how often each was done */
	unsigned inits, fail_at;        /* state_init calls; fail_at: the i that fails, plus 1 */
	wstate mine;                    /* the owner's state */
} owner;

static unsigned fini_calls;

static int w_init(void *o, void *state, unsigned i)
{
	owner *O = o;
	wstate *s = state;
	assert_int_equal(s->idx, 0); /* zeroed */
	O->inits++;
	s->idx = i + 1;
	return O->fail_at && i + 1 == O->fail_at;
}

static void w_fini(void *o, void *state)
{
	owner *O = o;
	wstate *s = state;
	assert_true(s->idx >= 1 && s->idx <= O->inits);
	assert_int_equal(s->fini, 0);
	s->fini++;
	fini_calls++;
}

static int w_step(void *o, void *state)
{
	owner *O = o;
	wstate *s = state;
	if (O->next == O->queued)
		return 0;
	size_t k = O->next++;
	pthread_mutex_unlock(&O->W.mu);
	O->by[k] = s == &O->mine ? 255 : (unsigned char)s->idx;
	O->times[k]++;
	s->done++;
	pthread_mutex_lock(&O->W.mu);
	O->finished++;
	tk__workers_done(&O->W);
	return 1;
}

static const tk__workers_ops ops = {sizeof(wstate), w_init, w_fini, w_step};

/* All the work queued at once, then done; with help, the owner works too. */
static void run_all(owner *O, int help)
{
	pthread_mutex_lock(&O->W.mu);
	O->queued = N_WORK;
	tk__workers_wake(&O->W);
	while (O->finished < N_WORK)
		if (help)
			tk__workers_help(&O->W, &O->mine);
		else
			tk__workers_wait(&O->W);
	pthread_mutex_unlock(&O->W.mu);
	for (size_t k = 0; k < N_WORK; k++)
		assert_int_equal(O->times[k], 1);
}

/* The states the threads had: each piece of work was done with one of them. */
static void check_states(owner *O, unsigned n)
{
	unsigned total = O->mine.done;
	for (unsigned i = 0; i < n; i++) {
		wstate *s = tk__workers_state(&O->W, i);
		assert_int_equal(s->idx, i + 1);
		assert_int_equal(s->fini, 0);
		total += s->done;
	}
	assert_int_equal(total, N_WORK);
	for (size_t k = 0; k < N_WORK; k++)
		assert_true(O->by[k] == 255 || (O->by[k] >= 1 && O->by[k] <= n));
}

static void test_threads_do_the_work(void **state)
{
	(void)state;
	owner *O = calloc(1, sizeof *O);
	tk__workers_init(&O->W, &ops, O);
	unsigned n = tk__workers_start(&O->W, 3, "tk-test");
	assert_int_equal(n, 3);
	assert_int_equal(O->inits, 3);
	run_all(O, 0); /* the owner only waits: the threads do every piece */
	assert_int_equal(O->mine.done, 0);
	check_states(O, n);
	/* a second start is refused: the threads stay as they were */
	assert_int_equal(tk__workers_start(&O->W, 2, "tk-test"), 0);
	assert_int_equal(O->W.n, 3);
	fini_calls = 0;
	tk__workers_free(&O->W);
	assert_int_equal(fini_calls, 3);
	/* freed: the structure is cleared */
	assert_int_equal(O->W.n, 0);
	assert_null(O->W.th);
	free(O);
}

static void test_owner_helps(void **state)
{
	(void)state;
	owner *O = calloc(1, sizeof *O);
	tk__workers_init(&O->W, &ops, O);
	unsigned n = tk__workers_start(&O->W, 2, "tk-test");
	assert_int_equal(n, 2);
	run_all(O, 1);
	check_states(O, n);
	tk__workers_free(&O->W);
	free(O);
}

/* No thread can start: the owner does everything, and the states made are freed. */
static void test_no_threads(void **state)
{
	(void)state;
	owner *O = calloc(1, sizeof *O);
	tk__workers_init(&O->W, &ops, O);
	tk__no_threads = 1;
	unsigned n = tk__workers_start(&O->W, 4, "tk-test");
	tk__no_threads = 0;
	assert_int_equal(n, 0);
	assert_int_equal(O->W.n, 0);
	run_all(O, 1);
	assert_int_equal(O->mine.done, N_WORK);
	fini_calls = 0;
	tk__workers_free(&O->W);
	assert_int_equal(fini_calls, 4); /* the states were made before the threads failed to start */
	free(O);
}

/* A state_init that fails at the third: two threads start, and every state
 * made (the failed one too) is freed once. */
static void test_init_fails(void **state)
{
	(void)state;
	owner *O = calloc(1, sizeof *O);
	O->fail_at = 3;
	tk__workers_init(&O->W, &ops, O);
	unsigned n = tk__workers_start(&O->W, 5, "tk-test");
	assert_int_equal(n, 2);
	assert_int_equal(O->inits, 3);
	run_all(O, 0);
	check_states(O, n);
	fini_calls = 0;
	tk__workers_free(&O->W);
	assert_int_equal(fini_calls, 3);
	free(O);
}

/* Stopped with work still queued: the threads quit and are joined, none
 * starts again, and the owner does the rest alone under the same lock. */
static void test_stop_with_work_queued(void **state)
{
	(void)state;
	owner *O = calloc(1, sizeof *O);
	tk__workers_init(&O->W, &ops, O);
	assert_int_equal(tk__workers_start(&O->W, 2, "tk-test"), 2);
	pthread_mutex_lock(&O->W.mu);
	O->queued = N_WORK;
	tk__workers_wake(&O->W);
	pthread_mutex_unlock(&O->W.mu);
	fini_calls = 0;
	tk__workers_stop(&O->W);
	assert_int_equal(fini_calls, 2);
	assert_int_equal(O->W.n, 0);
	assert_int_equal(tk__workers_start(&O->W, 2, "tk-test"), 0);
	size_t by_threads = O->finished;
	for (size_t k = 0; k < N_WORK; k++)
		assert_int_equal(O->times[k], k < by_threads ? 1 : 0);
	run_all(O, 1);
	assert_int_equal(O->mine.done, N_WORK - by_threads);
	tk__workers_free(&O->W);
	assert_int_equal(fini_calls, 2);
	free(O);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_threads_do_the_work),
		cmocka_unit_test(test_owner_helps),
		cmocka_unit_test(test_no_threads),
		cmocka_unit_test(test_init_fails),
		cmocka_unit_test(test_stop_with_work_queued),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
