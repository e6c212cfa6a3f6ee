/* workers.h: the threads that share one piece of parallel work with their
 * owner (the thread that made the pool), the lock that guards the owner's
 * queue of work, and the two conditions waited on: the threads' for work,
 * the owner's for work done.
 *
 * The queue is the owner's: the pool knows nothing of it. A thread holds
 * the lock and calls ops->step, which does one piece of work (letting go
 * of the lock while it works) and returns 1, or finds nothing to do and
 * returns 0; the thread then waits for work (tk__workers_wake). The owner
 * helps the same way while it waits for a result (tk__workers_help). Every
 * thread has a state of its own (its decoder, its scratch buffers), made
 * before it starts and freed after it ends. */
#ifndef TK_WORKERS_H
#define TK_WORKERS_H

#include <pthread.h>
#include <stddef.h>

typedef struct tk__workers_ops {
	size_t state_size; /* each thread's state, zeroed before state_init (0: none) */
	/* On the owner's thread before thread i starts (optional; only with
	 * a state): nonzero, and neither it nor any after it starts. */
	int (*state_init)(void *owner, void *state, unsigned i);
	/* After the thread ended (optional), also for a state whose
	 * state_init failed. */
	void (*state_fini)(void *owner, void *state);
	/* With the lock held: one piece of work done and 1, or 0 when there
	 * is none for this state now. It may let go of the lock meanwhile, and
	 * wakes whoever waits on what it did (tk__workers_done, tk__workers_wake). */
	int (*step)(void *owner, void *state);
} tk__workers_ops;

typedef struct tk__workers tk__workers;
typedef struct tk__worker {
	pthread_t th;
	tk__workers *P;
	void *state;
} tk__worker;

struct tk__workers {
	pthread_mutex_t mu;
	pthread_cond_t work; /* the threads: work queued, or quit */
	pthread_cond_t done; /* the owner: work done */
	int quit;
	unsigned n;      /* threads running */
	tk__worker *th;
	unsigned char *states; /* n_states of ops->state_size */
	unsigned n_states;
	const tk__workers_ops *ops;
	void *owner;
};

/* The lock and conditions made, no thread started: the owner may use the
 * lock alone, as where no thread could start. */
void tk__workers_init(tk__workers *P, const tk__workers_ops *ops, void *owner);
/* Up to n threads named `name` (tk__thread_start): the number started,
 * 0 where none could be (no memory, tk__no_threads, a state_init that
 * failed). Once only, before tk__workers_stop; the lock not held. */
unsigned tk__workers_start(tk__workers *P, unsigned n, const char *name);
/* Thread i's state (i < the number started). */
void *tk__workers_state(const tk__workers *P, unsigned i);
/* Lock held: the threads woken (work queued, or work they wait on done). */
void tk__workers_wake(tk__workers *P);
/* Lock held: the owner woken (work done). */
void tk__workers_done(tk__workers *P);
/* Lock held, on the owner's thread: a wait for work done (tk__workers_done). */
void tk__workers_wait(tk__workers *P);
/* Lock held, on the owner's thread: one piece of work done with `state`
 * (the owner's own) and 1, or a wait for work done and 0. */
int tk__workers_help(tk__workers *P, void *state);
/* The threads told to quit (work queued is left to the owner) and joined,
 * their states freed; the lock and conditions stay, for the owner alone.
 * No thread starts after it. The lock not held. */
void tk__workers_stop(tk__workers *P);
/* tk__workers_stop, then the lock and conditions destroyed (also where no
 * thread was started). */
void tk__workers_free(tk__workers *P);

#endif
