/* tkc_pool.c: the pool of aligned activity buffers and the queue that hands completed ones to the writer. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tkc.h"

/* The block header sits in front of the data, so a buffer pointer that
 * CUPTI hands back finds its block without a lookup. */
#define TKC_HDR 64

static tkc_block *block_new(size_t size)
{
	void *mem = NULL;
	if (posix_memalign(&mem, 4096, TKC_HDR + size) != 0)
		return NULL;
	tkc_block *b = mem;
	memset(b, 0, sizeof *b);
	b->data = (uint8_t *)mem + TKC_HDR;
	b->size = size;
	return b;
}

tkc_block *tkc_block_of(uint8_t *data)
{
	return (tkc_block *)(void *)(data - TKC_HDR);
}

int tkc_pool_init(tkc_pool *p, size_t block_size, unsigned max_blocks, unsigned prealloc)
{
	memset(p, 0, sizeof *p);
	p->block_size = block_size;
	p->max_blocks = max_blocks;
	p->wake_fd = -1;
	if (pthread_mutex_init(&p->mu, NULL))
		return TK_ERR_NOMEM;
	if (pthread_cond_init(&p->cv, NULL)) {
		pthread_mutex_destroy(&p->mu);
		return TK_ERR_NOMEM;
	}
	for (unsigned i = 0; i < prealloc && i < max_blocks; i++) {
		tkc_block *b = block_new(block_size);
		if (!b)
			break;
		b->next = p->free_list;
		p->free_list = b;
		p->n_blocks++;
	}
	return TK_OK;
}

static void free_list(tkc_block *b)
{
	while (b) {
		tkc_block *n = b->next;
		free(b);
		b = n;
	}
}

void tkc_pool_free(tkc_pool *p)
{
	free_list(p->free_list);
	free_list(p->q_head);
	p->free_list = p->q_head = p->q_tail = NULL;
	pthread_cond_destroy(&p->cv);
	pthread_mutex_destroy(&p->mu);
}

tkc_block *tkc_pool_get(tkc_pool *p)
{
	tkc_block *b = NULL;
	int grow = 0;
	pthread_mutex_lock(&p->mu);
	if (p->free_list) {
		b = p->free_list;
		p->free_list = b->next;
	} else if (p->n_blocks < p->max_blocks) {
		p->n_blocks++; /* reserve the slot, allocate outside the lock */
		grow = 1;
	}
	pthread_mutex_unlock(&p->mu);
	if (grow && !(b = block_new(p->block_size))) {
		pthread_mutex_lock(&p->mu);
		p->n_blocks--;
		pthread_mutex_unlock(&p->mu);
	}
	if (!b) {
		atomic_fetch_add(&p->refused, 1);
		return NULL;
	}
	b->next = NULL;
	b->valid = 0;
	b->dropped = 0;
	b->stream = 0;
	return b;
}

void tkc_pool_put(tkc_pool *p, tkc_block *b)
{
	pthread_mutex_lock(&p->mu);
	b->next = p->free_list;
	p->free_list = b;
	pthread_mutex_unlock(&p->mu);
}

void tkc_pool_push_done(tkc_pool *p, tkc_block *b)
{
	b->next = NULL;
	pthread_mutex_lock(&p->mu);
	if (p->q_tail)
		p->q_tail->next = b;
	else
		p->q_head = b;
	p->q_tail = b;
	pthread_cond_signal(&p->cv);
	pthread_mutex_unlock(&p->mu);
	atomic_fetch_add(&p->completed, 1);
	if (p->wake_fd >= 0) {
		char c = 'b';
		ssize_t r = write(p->wake_fd, &c, 1); /* a full pipe already means "wake up" */
		(void)r;
	}
}

tkc_block *tkc_pool_take_done(tkc_pool *p)
{
	pthread_mutex_lock(&p->mu);
	tkc_block *b = p->q_head;
	p->q_head = p->q_tail = NULL;
	pthread_mutex_unlock(&p->mu);
	return b;
}
