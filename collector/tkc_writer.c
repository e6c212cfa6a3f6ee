/* tkc_writer.c: the writer side of the collector: completed CUPTI buffers to events in the sink. */
#include <string.h>

#include "tkc.h"

/* Runs on the writer thread only: the records of one buffer become events
 * in the sink, and the buffer's dropped-record count becomes one event. */
void tkc_writer_block(tkc_writer *w, const tkc_cupti *api, tkc_block *b)
{
	CUpti_Activity *rec = NULL;
	tk_event ev;
	while (b->valid && api->ActivityGetNextRecord(b->data, b->valid, &rec) == CUPTI_SUCCESS) {
		w->records++;
		if (tkc_convert(&w->conv, rec, &ev) != 1)
			continue;
		if (w->win && !tkc_windows_keep(w->win, ev.ts)) {
			w->filtered++;
			continue;
		}
		if (w->sink->event(w->sink, &ev) == TK_OK)
			w->events++;
	}
	if (b->dropped) {
		w->dropped += b->dropped;
		tkc_conv_dropped(&w->conv, b->done_ts, b->stream, b->dropped, &ev);
		if (w->sink->event(w->sink, &ev) == TK_OK)
			w->events++;
	}
	w->sink->batch_end(w->sink);
}
