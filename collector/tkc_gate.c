/* tkc_gate.c: the time windows whose records are kept (capture range and profiler schedule). */
#include <stdint.h>

#include "tkc.h"

/* Windows only grow: a window's start is stored before the count that
 * publishes it, its end is INT64_MAX until closed. */
void tkc_windows_open(tkc_windows *w, int64_t ts)
{
	unsigned n = atomic_load(&w->n);
	if (w->open || n >= TKC_MAX_WINDOWS)
		return;
	atomic_store(&w->start[n], ts);
	atomic_store(&w->end[n], INT64_MAX);
	atomic_store(&w->n, n + 1);
	w->open = 1;
}

void tkc_windows_close(tkc_windows *w, int64_t ts)
{
	unsigned n = atomic_load(&w->n);
	if (!w->open || !n)
		return;
	atomic_store(&w->end[n - 1], ts);
	w->open = 0;
}

int tkc_windows_keep(const tkc_windows *w, int64_t ts)
{
	unsigned n = atomic_load(&((tkc_windows *)w)->n);
	for (unsigned i = n; i-- > 0;) {
		int64_t s = atomic_load(&((tkc_windows *)w)->start[i]);
		if (ts >= s)
			return ts < atomic_load(&((tkc_windows *)w)->end[i]);
	}
	return 0;
}
