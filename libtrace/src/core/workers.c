/* workers.c: the threads of one piece of parallel work (workers.h). */
#include <stdlib.h>

#include "core/workers.h"
#include "internal.h"

void tk__workers_init(tk__workers *P, const tk__workers_ops *ops, void *owner)
{
	*P = (tk__workers){.ops = ops, .owner = owner};
	pthread_mutex_init(&P->mu, NULL);
	pthread_cond_init(&P->work, NULL);
	pthread_cond_init(&P->done, NULL);
}

void *tk__workers_state(const tk__workers *P, unsigned i)
{
	return P->states ? P->states + (size_t)i * P->ops->state_size : NULL;
}

static void *worker_main(void *arg)
{
	tk__workers *P = ((tk__worker *)arg)->P;
	void *state = ((tk__worker *)arg)->state;
	pthread_mutex_lock(&P->mu);
	while (!P->quit)
		if (!P->ops->step(P->owner, state))
			pthread_cond_wait(&P->work, &P->mu);
	pthread_mutex_unlock(&P->mu);
	return NULL;
}

unsigned tk__workers_start(tk__workers *P, unsigned n, const char *name)
{
	if (!n || P->th || P->quit || !(P->th = calloc(n, sizeof *P->th)))
		return 0;
	size_t sz = P->ops->state_size;
	if (sz && !(P->states = calloc(n, sz)))
		return 0;
	if (sz)
		while (P->n_states < n) {
			unsigned i = P->n_states++;
			if (P->ops->state_init && P->ops->state_init(P->owner, tk__workers_state(P, i), i)) {
				n = i;
				break;
			}
		}
	/* counted as they start, under the lock: the owner sees every one that runs */
	pthread_mutex_lock(&P->mu);
	for (unsigned i = 0; i < n; i++) {
		tk__worker *t = &P->th[i];
		t->P = P;
		t->state = tk__workers_state(P, i);
		if (tk__thread_start(&t->th, worker_main, t, name))
			break;
		P->n++;
	}
	unsigned started = P->n;
	pthread_mutex_unlock(&P->mu);
	return started;
}

void tk__workers_wake(tk__workers *P)
{
	pthread_cond_broadcast(&P->work);
}

void tk__workers_done(tk__workers *P)
{
	pthread_cond_broadcast(&P->done);
}

void tk__workers_wait(tk__workers *P)
{
	pthread_cond_wait(&P->done, &P->mu);
}

int tk__workers_help(tk__workers *P, void *state)
{
	if (P->ops->step(P->owner, state))
		return 1;
	tk__workers_wait(P);
	return 0;
}

void tk__workers_stop(tk__workers *P)
{
	pthread_mutex_lock(&P->mu);
	P->quit = 1;
	pthread_cond_broadcast(&P->work);
	pthread_mutex_unlock(&P->mu);
	for (unsigned i = 0; i < P->n; i++)
		pthread_join(P->th[i].th, NULL);
	for (unsigned i = 0; P->ops->state_fini && i < P->n_states; i++)
		P->ops->state_fini(P->owner, tk__workers_state(P, i));
	free(P->states);
	free(P->th);
	P->states = NULL;
	P->th = NULL;
	P->n = P->n_states = 0;
}

void tk__workers_free(tk__workers *P)
{
	tk__workers_stop(P);
	pthread_mutex_destroy(&P->mu);
	pthread_cond_destroy(&P->work);
	pthread_cond_destroy(&P->done);
	*P = (tk__workers){0};
}
