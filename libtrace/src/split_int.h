/* split_int.h: private state shared by the splitter's first pass (split_scan.c) and its writer (split.c). */
#ifndef TK_SPLIT_INT_H
#define TK_SPLIT_INT_H

#include "internal.h"
#include "tracekit/sort.h"
#include "tracekit/split.h"
#include "tracekit/steps.h"

/* One flow key (cat, id) with the ends still to come: a record of the
 * flow table's map. 32 bytes a key. */
typedef struct tk__flow {
	uint64_t h;    /* the map's */
	uint64_t id;   /* integer id, or the hash of a string id */
	uint32_t catk; /* (cat index + 1) << 2 | id kind */
	uint16_t rem_s, rem_f; /* ends not yet seen by the second pass (saturating) */
	uint16_t cut_s, cut_f; /* ends removed at a part's end whose partners are to come */
	uint32_t held;         /* 1 + index in the held pool of the first held end */
} tk__flow;

typedef struct tk__flowtab {
	tk__map map;     /* tk__flow records */
	tk__strtab cats; /* distinct flow categories */
} tk__flowtab;

/* A flow event's key; returns 0 when the event has no usable key. */
int tk__flow_key(tk__flowtab *t, const tk_event *ev, int add, uint64_t *id, uint32_t *catk);
tk__flow *tk__flow_find(tk__flowtab *t, uint64_t id, uint32_t catk);
/* Find or insert; NULL on allocation failure. */
tk__flow *tk__flow_add(tk__flowtab *t, uint64_t id, uint32_t catk);
void tk__flowtab_free(tk__flowtab *t);

/* What a failure of the sorter that orders an unsorted input was doing. */
#define TK__SPLIT_ORDERING "ordering the events by time"
/* The input's bytes over time, for --parts: the time of one byte in every
 * `every` (a sample of the bytes, not of the events, taken at fixed
 * steps). When it is full, every other sample goes and `every` doubles, so
 * that between TK__QUANT_MAX / 2 and TK__QUANT_MAX samples stand for the
 * whole input, however wide its range of times and whatever their order:
 * the cuts are at their quantiles. */
#define TK__QUANT_MAX 32768
typedef struct tk__quant {
	int64_t ts[TK__QUANT_MAX];
	size_t n;       /* samples: one at every multiple of `every` up to pos */
	uint64_t every; /* bytes a sample (0: none yet, 1) */
	uint64_t pos;   /* bytes so far */
} tk__quant;
/* An event at ts, of w bytes. */
void tk__quant_add(tk__quant *q, int64_t ts, uint64_t w);
/* Up to n-1 cut times for n parts of about equal bytes, increasing, each
 * after the earliest time: fewer where more than a part's share of the
 * bytes has one time. Sorts the samples. */
size_t tk__quant_cuts(tk__quant *q, unsigned n, int64_t *cuts);

/* Whether the input is in time order as the second pass needs it, decided
 * event by event in the same way by the scan and by the reader's thread
 * (split_scan.c's order_next). */
typedef struct tk__order {
	int have_t, unsorted;
	int64_t t_max;
	int pending;         /* a flow end came before t_max: its partner must follow at once */
	char ph;             /* that end's */
	tk_id id;            /* its id (a string id points into idbuf) */
	size_t cat_len;
	char idbuf[128], cat[128];
	int launch_args;     /* the args of launches and GPU work are wanted (steps_int.h) */
} tk__order;

/* What the first pass learns about the input. */
typedef struct tk__scan {
	tk__meta *meta; /* top-level members, with after = 1 when after the events */
	size_t n_meta;
	tk_event **mev; /* the M events, in input order */
	size_t n_mev, mev_cap;
	tk__flowtab flows;
	tk_steps *steps; /* the ProfilerStep#N slices; with attr, the launches too */
	int attr;        /* a step rule: GPU work goes to the part of its launch */
	tk__quant quant;
	int64_t t_min, t_max; /* over events with ts, M events excluded */
	int have_t;
	int sorted;
	tk__order ord;
	int gz_input;
	uint64_t events;
	uint64_t orphan_ends;
	/* An unsorted input goes to the sorter in the same pass: the pass ends
	 * with every non-M event from n_prefix on added, and the write reads only
	 * events [0, n_prefix) of the input again (they are in order, see
	 * split_scan.c), merged with the sorter's output. */
	tk_sorter *sorter;
	uint64_t n_prefix; /* set when strict ends */
	int strict, strict_has_ts; /* the events so far are in the sorter's order */
	int64_t strict_ts;         /* the last ts among them */
} tk__scan;

/* The first pass. Its error message and the reader's warnings go to err. */
int tk__split_scan(tk__scan *sc, const char *path, const tk_split_opts *o, tk__err *err);
void tk__scan_free(tk__scan *sc);

#endif
