/* tkc_session.h: the state of the collector in one process, shared by its session and CUPTI glue. */
#ifndef TKC_SESSION_H
#define TKC_SESSION_H

#include <signal.h>

#include "tkc.h"

#define TKC_NAME_CACHE 1024
#define TKC_NSIGNALS 7

typedef struct tkc_session {
	tkc_config cfg;
	tkc_cupti api;
	CUpti_SubscriberHandle sub;
	int subscribed;       /* CUPTI calls may be made */
	int flush_period_ok;  /* cuptiActivityFlushPeriod took: no polling flush */
	tkc_pool pool;
	tkc_writer w;
	tkc_windows win;
	pthread_t thread;
	int thread_started;
	int forked;           /* in a child after fork(): no writer thread here */
	int wake[2], done[2]; /* pipes: wake the writer; the writer has finished */
	atomic_int closing, closed;
	char path[1400];
	tk_tkb_anchor start;

	/* activity kinds and what the capture range and schedule want (gate_mu) */
	pthread_mutex_t gate_mu;
	CUpti_ActivityKind enabled_kinds[16];
	unsigned n_enabled_kinds;
	int kinds_on, capture_on, sched_action;
	uint64_t steps;

	struct sigaction old_sig[TKC_NSIGNALS]; /* the actions before ours, by tkc_signals */
	char rt_names[TKC_NAME_CACHE][64], drv_names[TKC_NAME_CACHE][64];
} tkc_session;

extern tkc_session tkc_g;

int64_t tkc_now(void);
void tkc_session_finish_from_signal(int ms);
void tkc_session_flush_from_signal(void);
/* The signals the collector handles (SIGINT, SIGTERM, then the crash
 * signals) and their installation (tkcollect.c; TK_SIGNALS=0 skips it). */
extern const int tkc_signals[TKC_NSIGNALS];
void tkc_signals_install(void);

#endif
