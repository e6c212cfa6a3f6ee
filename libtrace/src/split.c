/* split.c: the splitter's second pass: time segments, parts under a byte budget, flow pairing, clipping, the index. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pump.h"
#include "formats/formats.h"
#include "split_int.h"
#include "steps_int.h"
#include "tracekit/sort.h"

#define MAX_WINDOWS 1000000

typedef struct held {
	tk_event *ev;
	uint32_t next; /* 1 + index of the next held end of the same key */
	int discard;   /* held in a segment that is not written */
} held;

typedef struct part_rec {
	char *tmp;   /* full path while the run lasts */
	char *final; /* full path once published */
	tk_split_part p;
} part_rec;

typedef struct seg {
	int64_t start;
	int discard;
} seg;

/* An event of a later segment waiting for the current one's GPU work. */
typedef struct waiting {
	tk_event *ev;
	int64_t seg;
} waiting;

struct tk_split {
	tk__err err; /* the message and the warnings of the last run */
	tk_split_opts o;
	char *name, *index_path;
	/* the output set's safety while a run lasts */
	char *pdir;      /* the run's own directory of unpublished parts: DIR/.NAME.split-XXXXXX */
	int pdir_hold;   /* its handle in tmpreg.c (removed on a signal) */
	char *lock_path; /* DIR/.NAME.lock, flock()ed: one run per output set */
	int lock_fd, lock_hold;
	struct made_dir { /* the directories of DIR this run created, outermost first */
		char *path;
		int hold; /* held (TK__TMP_MADE): a signal removes it */
	} *made;
	size_t n_made, made_cap;
	const char *input; /* the run's input path */
	char ext[32];             /* the parts' file name ending: ".json.gz" */
	const tk__format *pf;     /* the parts' format */
	int gz;                   /* gzip: the whole part, or the format's own (.tkb chunks) */
	tk_split_stats st;
	tk__scan sc;

	/* time segments: an array, or windows computed from t0 */
	seg *segs;
	size_t n_segs;
	int windowed;
	int64_t t0, last_seg, cur;
	int64_t seg_start, seg_end, clip_end;
	int seg_discard;

	tk_writer *w; /* the open part, if any */
	part_rec *parts;
	size_t n_parts, parts_cap;

	held *pool; /* flow ends waiting for their partner */
	size_t n_pool, pool_cap;
	uint32_t free_head;

	tk_event **carry; /* clipped slices whose rest continues in later segments */
	size_t n_carry, carry_cap;
	tk__buf argbuf;

	/* Step rules give GPU work to the segment of its launch (docs/steps.md):
	 * while the input has not passed late[cur], the latest start of GPU
	 * work launched in the current segment that starts in a later one,
	 * events of later segments wait in q, in input order. */
	int64_t *late;
	waiting *q;
	size_t n_q, q_cap;
	size_t q_bytes, q_budget;
	int64_t last_ts; /* the latest start taken */
};

#define fail(s, ...) tk__err_msg(&(s)->err, __VA_ARGS__)

/* ---- segments ---- */

static int64_t seg_index(const tk_split *s, int64_t ts)
{
	if (s->windowed)
		return ts <= s->t0 ? 0 : (ts - s->t0) / s->o.every_ns;
	size_t lo = 0, hi = s->n_segs; /* last segment whose start <= ts */
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;
		if (s->segs[mid].start <= ts)
			lo = mid;
		else
			hi = mid;
	}
	return (int64_t)lo;
}

static void seg_load(tk_split *s, int64_t k)
{
	s->cur = k;
	if (s->windowed) {
		s->seg_start = s->t0 + k * s->o.every_ns;
		s->seg_end = s->seg_start + s->o.every_ns;
		s->seg_discard = 0;
	} else {
		s->seg_start = s->segs[k].start;
		s->seg_end = (size_t)k + 1 < s->n_segs ? s->segs[k + 1].start : TK_SPLIT_OPEN_END;
		s->seg_discard = s->segs[k].discard;
	}
	/* nothing starts after the last segment with events: slices need no cut there */
	s->clip_end = k >= s->last_seg ? TK_SPLIT_OPEN_END : s->seg_end;
}

static int add_seg(tk_split *s, int64_t start, int discard)
{
	seg *ns = realloc(s->segs, (s->n_segs + 1) * sizeof *ns);
	if (!ns)
		return fail(s, TK_ERR_NOMEM, "out of memory");
	s->segs = ns;
	s->segs[s->n_segs++] = (seg){start, discard};
	return 0;
}

static size_t n_steps(const tk_split *s)
{
	return tk_steps_count(s->sc.steps);
}

static const tk_step *step_at(const tk_split *s, size_t i)
{
	return tk_steps_get(s->sc.steps, i);
}

static int find_step(tk_split *s, int64_t num, size_t *at)
{
	size_t n = n_steps(s);
	for (size_t i = 0; i < n; i++)
		if (step_at(s, i)->num == num) {
			*at = i;
			return 0;
		}
	if (!n)
		return fail(s, TK_ERR_ARG, "the input has no ProfilerStep#N slices");
	return fail(s, TK_ERR_ARG, "the input has no ProfilerStep#%lld (it has %zu steps, #%lld to #%lld)",
	            (long long)num, n, (long long)step_at(s, 0)->num, (long long)step_at(s, n - 1)->num);
}

static int range_segs(tk_split *s, int64_t from, int64_t to)
{
	int rc = 0;
	if (from != TK_SPLIT_OPEN_START)
		rc = add_seg(s, TK_SPLIT_OPEN_START, 1);
	if (!rc)
		rc = add_seg(s, from, 0);
	if (!rc && to != TK_SPLIT_OPEN_END)
		rc = add_seg(s, to, 1);
	return rc;
}

static int step_segs(tk_split *s)
{
	if (!n_steps(s))
		return fail(s, TK_ERR_ARG, "the input has no ProfilerStep#N slices to split by");
	unsigned k = s->o.steps_per_part ? s->o.steps_per_part : 1;
	int rc = add_seg(s, TK_SPLIT_OPEN_START, 0);
	for (size_t i = k; !rc && i < n_steps(s); i += k)
		rc = add_seg(s, step_at(s, i)->ts, 0);
	return rc;
}

static int build_segments(tk_split *s, const char *path)
{
	const tk__scan *sc = &s->sc;
	s->t0 = sc->have_t ? sc->t_min : 0;
	const tk_split_opts *o = &s->o;
	int rc = 0;
	if (o->every_ns) {
		s->windowed = 1;
		if (o->clip && sc->have_t && (sc->t_max - s->t0) / o->every_ns >= MAX_WINDOWS)
			return fail(s, TK_ERR_ARG, "--window with --clip would make more than %d parts",
			            MAX_WINDOWS);
	} else if (o->n_parts > 1) {
		int64_t *cuts = malloc(o->n_parts * sizeof *cuts);
		if (!cuts)
			return fail(s, TK_ERR_NOMEM, "out of memory");
		size_t n = tk__quant_cuts(&s->sc.quant, o->n_parts, cuts);
		rc = add_seg(s, TK_SPLIT_OPEN_START, 0);
		for (size_t i = 0; !rc && i < n; i++)
			rc = add_seg(s, cuts[i], 0);
		free(cuts);
	} else if (o->by_step) {
		rc = step_segs(s);
	} else if (o->window.set) {
		tk_window w = tk_window_at(&o->window, s->t0);
		rc = range_segs(s, w.lo, w.hi);
	} else if (o->steps) {
		size_t a = 0, b = 0;
		if (find_step(s, o->step_from, &a) || find_step(s, o->step_to, &b))
			return TK_ERR_ARG;
		if (b < a)
			return fail(s, TK_ERR_ARG, "ProfilerStep#%lld starts before ProfilerStep#%lld",
			            (long long)o->step_to, (long long)o->step_from);
		rc = range_segs(s, step_at(s, a)->ts, b + 1 < n_steps(s) ? step_at(s, b + 1)->ts : TK_SPLIT_OPEN_END);
	} else {
		rc = add_seg(s, TK_SPLIT_OPEN_START, 0);
	}
	s->last_seg = seg_index(s, sc->have_t ? sc->t_max : 0);
	s->cur = -1;
	if (!rc && sc->attr) {
		int64_t *starts = malloc(s->n_segs * sizeof *starts);
		s->late = malloc(s->n_segs * sizeof *s->late);
		if (!starts || !s->late) {
			free(starts);
			return fail(s, TK_ERR_NOMEM, "out of memory");
		}
		for (size_t i = 0; i < s->n_segs; i++)
			starts[i] = s->segs[i].start;
		/* the launches, read back from their sort, give each id its part */
		rc = tk_steps_parts(sc->steps, starts, s->n_segs, s->late);
		free(starts);
		if (rc == TK_ERR_NOMEM)
			return fail(s, rc, "out of memory");
		if (rc)
			return fail(s, rc, "%s: %s", path, tk_steps_error(sc->steps));
		/* an eighth of the budget, and never less than 8 MiB: a launch and
		 * its kernel in one part is the point of the rule */
		size_t mem = o->memory_bytes ? o->memory_bytes : (size_t)128 << 20;
		s->q_budget = mem / 8 > ((size_t)8 << 20) ? mem / 8 : (size_t)8 << 20;
	}
	return rc;
}

/* ---- parts ---- */

static int part_prologue(tk_split *s)
{
	int rc = 0;
	for (size_t i = 0; !rc && i < s->sc.n_meta; i++) {
		const tk__meta *m = &s->sc.meta[i];
		tk_sv v = {m->json, m->json_len};
		rc = m->after ? tk_writer_add_meta_after(s->w, m->key, v) : tk_writer_add_meta(s->w, m->key, v);
	}
	if (!rc)
		rc = tk_writer_set_max_bytes(s->w, s->o.max_bytes);
	for (size_t i = 0; !rc && i < s->sc.n_mev; i++)
		rc = tk_writer_write(s->w, s->sc.mev[i]);
	if (rc == TK_ERR_LIMIT)
		return fail(s, rc, "--max-size %llu is too small: the metadata and the %zu M events every "
		            "part repeats do not fit", (unsigned long long)s->o.max_bytes, s->sc.n_mev);
	if (rc)
		return fail(s, rc, "%s", tk_writer_error(s->w));
	return 0;
}

static int part_open(tk_split *s, int64_t start)
{
	if (tk__grow(&s->parts, &s->parts_cap, s->n_parts + 1, sizeof *s->parts, 16))
			return fail(s, TK_ERR_NOMEM, "out of memory");
	part_rec *pr = &s->parts[s->n_parts];
	memset(pr, 0, sizeof *pr);
	size_t n;
	n = strlen(s->pdir) + strlen(s->ext) + 32;
	if (!(pr->tmp = malloc(n)))
		return fail(s, TK_ERR_NOMEM, "out of memory");
	snprintf(pr->tmp, n, "%s/part-%zu%s", s->pdir, s->n_parts, s->ext);
	s->n_parts++;
	pr->p = (tk_split_part){NULL, start, s->seg_end, INT64_MAX, INT64_MIN, 0, 0, -1, -1};
	tk_writer_opts wo = {.format = s->pf->id,
	                     .gzip = s->gz,
	                     .gzip_level = s->o.wopts.gzip_level,
	                     .memory_bytes = s->o.wopts.memory_bytes,
	                     .threads = tk__budget_writer_threads(s->o.wopts.threads),
	                     .tmpdir = s->o.wopts.tmpdir ? s->o.wopts.tmpdir : s->o.tmpdir};
	if (tk_writer_open_path(&s->w, pr->tmp, &wo))
		return fail(s, TK_ERR_IO, "%s", tk_writer_error(s->w));
	pr->p.events = s->sc.n_mev;
	return part_prologue(s);
}

/* Flow ends still waiting when a part ends lost their partner to another part. */
static void cut_held(tk_split *s)
{
	for (size_t i = 0; i < s->n_pool; i++) {
		held *h = &s->pool[i];
		if (!h->ev)
			continue;
		uint64_t id;
		uint32_t catk;
		tk__flow *f = NULL;
		if (tk__flow_key(&s->sc.flows, h->ev, 0, &id, &catk) > 0)
			f = tk__flow_find(&s->sc.flows, id, catk);
		if (f) {
			f->held = 0;
			uint16_t *c = h->ev->ph == 's' ? &f->cut_s : &f->cut_f;
			if (*c < UINT16_MAX)
				(*c)++;
		}
		s->st.flows_cut++;
		if (h->discard)
			s->st.outside++;
		else
			s->st.flow_ends_removed++;
		tk_event_free(h->ev);
		h->ev = NULL;
	}
	s->n_pool = 0;
	s->free_head = 0;
}

static int part_close(tk_split *s)
{
	cut_held(s);
	if (!s->w)
		return 0;
	part_rec *pr = &s->parts[s->n_parts - 1];
	int rc = tk_writer_close(s->w);
	if (rc)
		return fail(s, rc, "%s", tk_writer_error(s->w));
	pr->p.bytes = tk_writer_bytes(s->w);
	s->st.events_out += pr->p.events;
	tk_writer_free(s->w);
	s->w = NULL;
	if (s->o.max_bytes && pr->p.bytes > s->o.max_bytes) {
		s->st.over_budget++;
		if (tk__err_warn(&s->err,
		                     "part %zu is %llu bytes, over --max-size: one event (or flow pair) "
		                     "alone did not fit", s->n_parts - 1, (unsigned long long)pr->p.bytes))
			return fail(s, TK_ERR_NOMEM, "out of memory");
	}
	return 0;
}

static void note_written(tk_split *s, const tk_event *ev)
{
	tk_split_part *p = &s->parts[s->n_parts - 1].p;
	p->events++;
	if (!(ev->has & TK_HAS_TS))
		return;
	int64_t end = tk__ev_end(ev->ts, (ev->has & TK_HAS_DUR) ? ev->dur : 0);
	if (ev->ts < p->first_ts)
		p->first_ts = ev->ts;
	if (end > p->last_end)
		p->last_end = end;
	static const char pfx[] = "ProfilerStep#";
	if (ev->ph == 'X' && ev->name.len > sizeof pfx - 1 && memcmp(ev->name.ptr, pfx, sizeof pfx - 1) == 0) {
		int64_t num = strtoll(ev->name.ptr + sizeof pfx - 1, NULL, 10);
		if (p->step_first < 0 || num < p->step_first)
			p->step_first = num;
		if (num > p->step_last)
			p->step_last = num;
	}
}

/* Write a group to the current part; a part that runs out of bytes is
 * closed and the group goes to a new one (*recut = 1). */
static int emit(tk_split *s, const tk_event *const *evs, size_t n, int *recut)
{
	if (s->seg_discard) {
		s->st.outside += n;
		return 0;
	}
	if (!s->w && part_open(s, s->seg_start))
		return -1;
	int rc = tk_writer_write_group(s->w, evs, n);
	if (rc == TK_ERR_LIMIT && s->parts[s->n_parts - 1].p.events > s->sc.n_mev) {
		int64_t at = s->seg_start; /* the new part starts at the latest event of the group */
		for (size_t i = 0; i < n; i++)
			if ((evs[i]->has & TK_HAS_TS) && evs[i]->ts > at)
				at = evs[i]->ts;
		s->parts[s->n_parts - 1].p.end = at;
		if (recut)
			*recut = 1;
		if (part_close(s) || part_open(s, at))
			return -1;
		if (recut)
			return 0; /* the caller drops a flow pair rather than split it */
		rc = tk_writer_write_group(s->w, evs, n);
	}
	if (rc == TK_ERR_LIMIT) {
		/* alone in a part and still too large: written over the budget
		 * (part_close counts it and says so) rather than lost */
		rc = tk_writer_set_max_bytes(s->w, 0);
		if (!rc)
			rc = tk_writer_write_group(s->w, evs, n);
		if (!rc)
			rc = tk_writer_set_max_bytes(s->w, s->o.max_bytes);
	}
	if (rc)
		return fail(s, rc, "%s", tk_writer_error(s->w));
	for (size_t i = 0; i < n; i++)
		note_written(s, evs[i]);
	return 0;
}

static int emit1(tk_split *s, const tk_event *ev)
{
	return emit(s, &ev, 1, NULL);
}

/* ---- clipping ---- */

/* ev's args with "tk_split":"<how>" in front, in s->argbuf. */
static tk_sv marked_args(tk_split *s, const tk_event *ev, const char *how)
{
	tk__buf *b = &s->argbuf;
	b->len = 0;
	int rc = tk__buf_append(b, "{\"tk_split\":\"", 13) || tk__buf_append(b, how, strlen(how)) ||
	         tk__buf_putc(b, '"');
	if (!rc && ev->args.ptr && ev->args.len > 2)
		rc = tk__buf_putc(b, ',') || tk__buf_append(b, ev->args.ptr + 1, ev->args.len - 1);
	else if (!rc)
		rc = tk__buf_putc(b, '}');
	if (rc || tk__buf_putc(b, 0))
		return (tk_sv){NULL, 0};
	return (tk_sv){b->p, b->len - 1};
}

static int write_piece(tk_split *s, const tk_event *ev, int64_t ts, int64_t end, const char *how)
{
	tk_event piece = *ev;
	piece.ts = ts;
	piece.dur = end - ts;
	piece.args = marked_args(s, ev, how);
	if (!piece.args.ptr)
		return fail(s, TK_ERR_NOMEM, "out of memory");
	if (!(ev->has & TK_HAS_VALID_JSON))
		piece.has &= ~(unsigned)TK_HAS_VALID_JSON;
	return emit1(s, &piece);
}

static int carry_add(tk_split *s, const tk_event *ev)
{
	if (tk__grow(&s->carry, &s->carry_cap, s->n_carry + 1, sizeof *s->carry, 16))
			return fail(s, TK_ERR_NOMEM, "out of memory");
	if (!(s->carry[s->n_carry] = tk_event_dup(ev)))
		return fail(s, TK_ERR_NOMEM, "out of memory");
	s->n_carry++;
	return 0;
}

/* The rest of each carried slice, at the start of the current segment. */
static int write_carries(tk_split *s)
{
	size_t k = 0;
	for (size_t i = 0; i < s->n_carry; i++) {
		tk_event *c = s->carry[i];
		int64_t end = tk__sat_add(c->ts, c->dur);
		int rc = 0;
		if (end > s->seg_start && !s->seg_discard) {
			rc = write_piece(s, c, s->seg_start, end < s->clip_end ? end : s->clip_end, "continued");
			s->st.continued++;
		}
		if (rc)
			return rc;
		if (end > s->clip_end)
			s->carry[k++] = c;
		else
			tk_event_free(c);
	}
	s->n_carry = k;
	return 0;
}

static int write_event(tk_split *s, const tk_event *ev)
{
	if (s->o.clip && ev->ph == 'X' && (ev->has & TK_HAS_TS) && (ev->has & TK_HAS_DUR) &&
	    ev->dur > 0 && s->clip_end != TK_SPLIT_OPEN_END && ev->ts < s->clip_end &&
	    ev->dur > s->clip_end - ev->ts) {
		if (carry_add(s, ev))
			return -1;
		if (s->seg_discard) {
			s->st.outside++;
			return 0;
		}
		s->st.clipped++;
		return write_piece(s, ev, ev->ts, s->clip_end, "clipped");
	}
	return emit1(s, ev);
}

/* Move to segment k: close the part, and with clipping give every segment
 * in between the pieces of the slices that run through it. */
static int enter_seg(tk_split *s, int64_t k)
{
	if (part_close(s))
		return -1;
	for (int64_t j = s->cur < 0 ? k : s->cur + 1; j < k && s->n_carry; j++) {
		seg_load(s, j);
		if (write_carries(s) || part_close(s))
			return -1;
	}
	seg_load(s, k);
	return write_carries(s);
}

/* ---- flows ---- */

static int hold(tk_split *s, tk__flow *f, const tk_event *ev)
{
	if (!s->free_head && tk__grow(&s->pool, &s->pool_cap, s->n_pool + 1, sizeof *s->pool, 256))
		return fail(s, TK_ERR_NOMEM, "out of memory");
	uint32_t i = s->free_head ? s->free_head - 1 : (uint32_t)s->n_pool++;
	if (s->free_head)
		s->free_head = s->pool[i].next;
	held *h = &s->pool[i];
	if (!(h->ev = tk_event_dup(ev)))
		return fail(s, TK_ERR_NOMEM, "out of memory");
	h->discard = s->seg_discard;
	h->next = 0;
	/* append: the oldest waiting end pairs first */
	uint32_t *link = &f->held;
	while (*link)
		link = &s->pool[*link - 1].next;
	*link = i + 1;
	return 0;
}

static int pair(tk_split *s, tk__flow *f, const tk_event *ev)
{
	uint32_t i = f->held - 1;
	held h = s->pool[i];
	f->held = h.next;
	s->pool[i].ev = NULL;
	s->pool[i].next = s->free_head;
	s->free_head = i + 1;
	const tk_event *g[2] = {h.ev, ev};
	int recut = 0, rc = 0;
	if (s->seg_discard || h.discard) {
		s->st.outside += 2; /* both ends in a segment that is not written */
	} else {
		rc = emit(s, g, 2, &recut);
		if (!rc && recut) {
			s->st.flows_cut++;
			s->st.flow_ends_removed += 2;
		}
	}
	tk_event_free(h.ev);
	return rc;
}

/* `late`: the end starts in a part already closed (a sorted input whose flow
 * starts were written just before their ends, as trace-split writes them). */
static int flow_end(tk_split *s, const tk_event *ev, int late)
{
	uint64_t id;
	uint32_t catk;
	tk__flow *f = NULL;
	if ((ev->has & TK_HAS_TS) && tk__flow_key(&s->sc.flows, ev, 0, &id, &catk) > 0)
		f = tk__flow_find(&s->sc.flows, id, catk);
	if (!f)
		return write_event(s, ev);
	int is_s = ev->ph == 's';
	uint16_t *own = is_s ? &f->rem_s : &f->rem_f;
	uint16_t *rem_opp = is_s ? &f->rem_f : &f->rem_s;
	uint16_t *cut_opp = is_s ? &f->cut_f : &f->cut_s;
	if (*own)
		(*own)--;
	if (f->held && s->pool[f->held - 1].ev->ph != ev->ph)
		return pair(s, f, ev);
	if (*cut_opp) {
		(*cut_opp)--;
		if (s->seg_discard)
			s->st.outside++;
		else
			s->st.flow_ends_removed++;
		return 0;
	}
	if (*rem_opp && late) {
		/* its part is gone: removed as if held there; the partner follows */
		uint16_t *cut_own = is_s ? &f->cut_s : &f->cut_f;
		if (*cut_own < UINT16_MAX)
			(*cut_own)++;
		s->st.flows_cut++;
		s->st.flow_ends_removed++;
		return 0;
	}
	if (*rem_opp)
		return hold(s, f, ev);
	return write_event(s, ev); /* no partner anywhere in the input: kept */
}

/* ---- the second pass ---- */

/* ev into segment k, or with k < 0 (no ts) into the current one. */
static int place(tk_split *s, const tk_event *ev, int64_t k)
{
	int flow = ev->ph == 's' || ev->ph == 'f', late = 0;
	if (k < 0 && s->cur < 0)
		k = seg_index(s, s->t0);
	if (k >= 0 && k < s->cur && !flow) {
		/* GPU work whose launch's part is closed (the wait ran out of
		 * memory): the part it runs in */
		s->st.launch_late++;
		k = s->cur;
	}
	if (k >= 0) {
		late = flow && k < s->cur;
		if (k != s->cur && !late && enter_seg(s, k))
			return -1;
	}
	if (flow)
		return flow_end(s, ev, late);
	return write_event(s, ev);
}

static size_t ev_bytes(const tk_event *ev)
{
	return sizeof(tk_event) + 64 + ev->name.len + ev->cat.len + ev->args.len + ev->extra.len +
	       (ev->pid.kind == TK_ID_STR ? ev->pid.str.len : 0) + (ev->tid.kind == TK_ID_STR ? ev->tid.str.len : 0) +
	       (ev->id.kind == TK_ID_STR ? ev->id.str.len : 0);
}

static int wait_add(tk_split *s, const tk_event *ev, int64_t k)
{
	if (TK__GROW(s->q, s->q_cap, s->n_q + 1))
		return fail(s, TK_ERR_NOMEM, "out of memory");
	if (!(s->q[s->n_q].ev = tk_event_dup(ev)))
		return fail(s, TK_ERR_NOMEM, "out of memory");
	s->q[s->n_q++].seg = k;
	s->q_bytes += ev_bytes(ev);
	return 0;
}

/* Move on while the current segment's GPU work is all in (or, with force,
 * while anything waits; or while the waiting events are over their
 * budget): the next segment is the earliest that waits, and its events go
 * to it in order. */
static int release(tk_split *s, int force)
{
	while (s->n_q && (force || s->last_ts > s->late[s->cur] || s->q_bytes > s->q_budget)) {
		int64_t k = s->q[0].seg;
		for (size_t i = 1; i < s->n_q; i++)
			if (s->q[i].seg < k)
				k = s->q[i].seg;
		if (enter_seg(s, k))
			return -1;
		size_t j = 0;
		int rc = 0;
		for (size_t i = 0; i < s->n_q; i++) {
			if (s->q[i].seg != k) {
				s->q[j++] = s->q[i];
				continue;
			}
			s->q_bytes -= ev_bytes(s->q[i].ev);
			if (!rc)
				rc = place(s, s->q[i].ev, k);
			tk_event_free(s->q[i].ev);
		}
		s->n_q = j;
		if (rc)
			return -1;
	}
	return 0;
}

static int take(tk_split *s, const tk_event *ev)
{
	if (ev->ph == 'M')
		return 0; /* already at the start of every part */
	int has = (ev->has & TK_HAS_TS) != 0, by_launch = 0;
	if (!s->sc.attr)
		return place(s, ev, has ? seg_index(s, ev->ts) : -1);
	int64_t k = has ? tk_steps_part(s->sc.steps, ev, &by_launch) : -1;
	if (by_launch && k != seg_index(s, ev->ts))
		s->st.by_launch++;
	if (has && ev->ts > s->last_ts)
		s->last_ts = ev->ts;
	/* a later segment's event waits while GPU work of this one may come,
	 * and behind any that already waits */
	int wait = s->cur >= 0 && k > s->cur && (s->n_q || ev->ts <= s->late[s->cur]);
	if (wait ? wait_add(s, ev, k) : place(s, ev, k))
		return -1;
	return release(s, 0);
}

static int finish_parts(tk_split *s)
{
	if (release(s, 1) || part_close(s))
		return -1;
	if (s->st.launch_late &&
	    tk__err_warn(&s->err, "%llu GPU ops went to the part they start in, not their launch's: the "
	                 "events waiting for them needed more than %zu MiB; raise --memory",
	                 (unsigned long long)s->st.launch_late, s->q_budget >> 20))
		return fail(s, TK_ERR_NOMEM, "out of memory");
	if (s->n_parts == 0) {
		/* an input without events (or a range without any) still gives a valid part */
		int64_t k = 0;
		while (!s->windowed && (size_t)k + 1 < s->n_segs && s->segs[k].discard)
			k++;
		seg_load(s, k);
		if (part_open(s, s->seg_start) || part_close(s))
			return -1;
		/* an empty window is the tools' one check (cli_window_kept), from the stats */
		if (s->o.steps && tk__err_warn(&s->err, "no event starts in the range"))
			return fail(s, TK_ERR_NOMEM, "out of memory");
	}
	for (size_t i = 0; i < s->n_carry; i++)
		tk_event_free(s->carry[i]);
	s->n_carry = 0;
	return 0;
}

static void progress(tk_split *s, const char *what, uint64_t bytes, uint64_t n)
{
	if (s->o.progress && (n & 0xffff) == 0)
		s->o.progress(s->o.progress_ctx, what, bytes, n);
}

/* The reader's error, or what stopped the pump before it. */
static int pump_fail(tk_split *s, tk__pump *p, int rc)
{
	tk_reader *r = tk__pump_reader(p);
	return fail(s, rc, "%s", r && *tk_reader_error(r) ? tk_reader_error(r) : tk_strerror(rc));
}

static int pass_sorted(tk_split *s, const char *path)
{
	tk__pump *p = NULL;
	const tk_event *ev;
	int rc = tk__pump_open(&p, path, &s->o.ropts, UINT64_MAX, NULL, NULL);
	if (rc) {
		pump_fail(s, p, rc);
		tk__pump_free(p);
		return rc;
	}
	while ((rc = tk__pump_next(p, &ev)) == TK_OK) {
		if (take(s, ev)) {
			rc = TK_ERR_IO;
			break;
		}
		progress(s, "writing", tk__pump_bytes_in(p), tk__pump_events(p));
	}
	if (rc < 0 && !s->err.msg[0])
		pump_fail(s, p, rc);
	tk__pump_free(p);
	return rc == TK_EOF ? 0 : rc;
}

/* The events [0, n_prefix) of the input, read again: in the sorter's order. */
typedef struct prefix {
	tk__pump *p;
	uint64_t left;
	const tk_event *ev; /* the next one; NULL when none is left */
} prefix;

static int prefix_next(tk_split *s, prefix *p)
{
	p->ev = NULL;
	while (p->left) {
		int rc = tk__pump_next(p->p, &p->ev);
		p->left--;
		if (rc == TK_EOF)
			return fail(s, TK_ERR_IO, "%s: the input changed while it was read",
			            tk_reader_name(tk__pump_reader(p->p)));
		if (rc)
			return pump_fail(s, p->p, rc);
		if (p->ev->ph != 'M')
			return 0;
		p->ev = NULL;
	}
	return 0;
}

static int prefix_open(tk_split *s, prefix *p, const char *path)
{
	p->left = s->sc.n_prefix;
	p->ev = NULL;
	if (!p->left)
		return 0;
	int rc = tk__pump_open(&p->p, path, &s->o.ropts, p->left, NULL, NULL);
	if (rc)
		return pump_fail(s, p->p, rc);
	return prefix_next(s, p);
}

/* The prefix's event goes first on a tie: it came first in the input. */
static int prefix_first(const tk_event *a, const tk_event *b)
{
	if (!(a->has & TK_HAS_TS))
		return 1;
	return (b->has & TK_HAS_TS) && a->ts <= b->ts;
}

/* The sorter holds the rest of the unsorted input (fed by the first pass). */
static int pass_unsorted(tk_split *s, const char *path)
{
	tk_sorter *so = s->sc.sorter;
	s->sc.sorter = NULL;
	prefix p = {0};
	int rc = tk_sorter_finish(so);
	if (rc)
		fail(s, rc, "%s: " TK__SPLIT_ORDERING ": %s", path, tk_sorter_error(so));
	else
		rc = prefix_open(s, &p, path);
	const tk_event *ev = NULL;
	uint64_t tag, n = 0;
	if (!rc && (rc = tk_sorter_next(so, &ev, &tag)) == TK_EOF)
		ev = NULL;
	while (rc >= 0 && (ev || p.ev)) {
		int from_p = p.ev && (!ev || prefix_first(p.ev, ev));
		if (take(s, from_p ? p.ev : ev))
			rc = TK_ERR_IO;
		else if (from_p)
			rc = prefix_next(s, &p);
		else if ((rc = tk_sorter_next(so, &ev, &tag)) == TK_EOF)
			ev = NULL;
		progress(s, "writing", 0, ++n);
	}
	if (rc < 0 && !s->err.msg[0])
		fail(s, rc, "%s: " TK__SPLIT_ORDERING ": %s", path, tk_sorter_error(so));
	s->st.sorter_runs = tk_sorter_runs(so);
	tk_sorter_free(so);
	tk__pump_free(p.p);
	return rc < 0 ? rc : 0;
}

/* ---- output: names, index, publishing ---- */

static int put_us(tk__buf *b, int64_t ns)
{
	char t[48];
	if (ns == TK_SPLIT_OPEN_START || ns == TK_SPLIT_OPEN_END || ns == INT64_MAX || ns == INT64_MIN)
		return tk__buf_append(b, "null", 4);
	uint64_t u = ns < 0 ? 0 - (uint64_t)ns : (uint64_t)ns;
	int n = snprintf(t, sizeof t, "%s%llu.%03u", ns < 0 ? "-" : "", (unsigned long long)(u / 1000),
	                 (unsigned)(u % 1000));
	return tk__buf_append(b, t, (size_t)n);
}

static int put_kv(tk__buf *b, const char *key, uint64_t v)
{
	char t[96];
	int n = snprintf(t, sizeof t, ",\n\"%s\":%llu", key, (unsigned long long)v);
	return tk__buf_append(b, t, (size_t)n);
}

static int put_jstr(tk__buf *b, const char *str)
{
	return tk__json_put_str(b, str, strlen(str));
}

static const char *base_name(const char *p)
{
	const char *q = strrchr(p, '/');
	return q ? q + 1 : p;
}

static int index_part(tk__buf *b, const tk_split_part *p, int first)
{
	char t[160];
	int rc = tk__buf_append(b, first ? "\n{\"file\":" : ",\n{\"file\":", first ? 9 : 10) ||
	         put_jstr(b, p->file) || tk__buf_append(b, ",\"start_us\":", 12) || put_us(b, p->start) ||
	         tk__buf_append(b, ",\"end_us\":", 10) || put_us(b, p->end) ||
	         tk__buf_append(b, ",\"first_ts_us\":", 15) || put_us(b, p->first_ts) ||
	         tk__buf_append(b, ",\"last_end_us\":", 15) || put_us(b, p->last_end);
	int n = snprintf(t, sizeof t, ",\"events\":%llu,\"bytes\":%llu", (unsigned long long)p->events,
	                 (unsigned long long)p->bytes);
	rc = rc || tk__buf_append(b, t, (size_t)n);
	if (p->step_first >= 0)
		n = snprintf(t, sizeof t, ",\"steps\":[%lld,%lld]}", (long long)p->step_first,
		             (long long)p->step_last);
	else
		n = snprintf(t, sizeof t, ",\"steps\":null}");
	return rc || tk__buf_append(b, t, (size_t)n);
}

static int index_text(tk_split *s, tk__buf *b, const char *input)
{
	const tk_split_stats *st = &s->st;
	int rc = tk__buf_append(b, "{\"tool\":\"trace-split\",\n\"tracekit\":", 34) ||
	         put_jstr(b, tk_version()) || tk__buf_append(b, ",\n\"input\":", 10) ||
	         put_jstr(b, base_name(input)) || tk__buf_append(b, ",\n\"format\":", 11) ||
	         put_jstr(b, s->ext + 1) ||
	         tk__buf_append(b, ",\n\"time_unit\":\"us\"", 18) ||
	         put_kv(b, "max_bytes", s->o.max_bytes) || put_kv(b, "clip", (uint64_t)!!s->o.clip) ||
	         put_kv(b, "input_sorted", (uint64_t)st->input_sorted) ||
	         put_kv(b, "events_in", st->events_in) || put_kv(b, "events_out", st->events_out) ||
	         put_kv(b, "meta_events_per_part", st->meta_events) ||
	         put_kv(b, "outside", st->outside) || put_kv(b, "flows_cut", st->flows_cut) ||
	         put_kv(b, "flow_ends_removed", st->flow_ends_removed) ||
	         put_kv(b, "orphan_flow_ends", st->orphan_flow_ends) ||
	         put_kv(b, "clipped", st->clipped) || put_kv(b, "continued", st->continued) ||
	         put_kv(b, "over_budget", st->over_budget) ||
	         tk__buf_append(b, ",\n\"gpu_work_by\":", 16) ||
	         put_jstr(b, s->sc.attr ? "launch" : "start") || put_kv(b, "by_launch", st->by_launch) ||
	         put_kv(b, "launch_late", st->launch_late) ||
	         tk__buf_append(b, ",\n\"parts\":[", 11);
	for (size_t i = 0; !rc && i < s->n_parts; i++)
		rc = index_part(b, &s->parts[i].p, i == 0);
	return rc || tk__buf_append(b, "\n]}\n", 4) ? TK_ERR_NOMEM : 0;
}

static int write_index(tk_split *s, const char *input)
{
	tk__buf b = {0};
	tk__sink k;
	if (index_text(s, &b, input)) {
		tk__buf_free(&b);
		return fail(s, TK_ERR_NOMEM, "out of memory");
	}
	int rc = tk__sink_open_path(&k, s->index_path, NULL, 0);
	if (!rc)
		rc = tk__sink_write(&k, b.p, b.len);
	if (!rc)
		rc = tk__sink_finish(&k);
	if (rc)
		fail(s, rc, "%s", k.err[0] ? k.err : "out of memory");
	tk__sink_discard(&k);
	tk__buf_free(&b);
	return rc;
}

static int digits(size_t n)
{
	int d = 1;
	while (n >= 10) {
		n /= 10;
		d++;
	}
	return d;
}

/* The number of a file name of the output set (NAME.part-N.EXT, EXT a trace
 * suffix such as .json.gz or .tkb), or -1. */
static long set_part_number(const tk_split *s, const char *e)
{
	size_t nl = strlen(s->name), d = 0;
	if (strncmp(e, s->name, nl) || strncmp(e + nl, ".part-", 6))
		return -1;
	const char *num = e + nl + 6;
	while (num[d] >= '0' && num[d] <= '9')
		d++;
	if (!d || d > 9 || tk__name_stem(e) != nl + 6 + d || !num[d])
		return -1;
	return strtol(num, NULL, 10);
}

/* Each regular file of DIR that belongs to the output set (its parts and
 * its index): fn(s, full path, part number or -1 for the index) until it
 * returns nonzero. */
static int each_set_file(tk_split *s, int (*fn)(tk_split *, const char *, long))
{
	DIR *d = opendir(s->o.dir);
	if (!d)
		return fail(s, TK_ERR_IO, "%s: cannot read the directory: %s", s->o.dir, strerror(errno));
	struct dirent *de;
	int rc = 0;
	tk__buf path = {0};
	size_t nl = strlen(s->name);
	while (!rc && (de = readdir(d))) {
		long num = set_part_number(s, de->d_name);
		if (num < 0 && !(strncmp(de->d_name, s->name, nl) == 0 && strcmp(de->d_name + nl, ".index.json") == 0))
			continue;
		struct stat st;
		path.len = 0;
		if (tk__buf_append(&path, s->o.dir, strlen(s->o.dir)) || tk__buf_putc(&path, '/') ||
		    tk__buf_append(&path, de->d_name, strlen(de->d_name) + 1)) {
			rc = fail(s, TK_ERR_NOMEM, "out of memory");
			break;
		}
		if (lstat(path.p, &st) == 0 && S_ISREG(st.st_mode))
			rc = fn(s, path.p, num);
	}
	closedir(d);
	tk__buf_free(&path);
	return rc;
}

static int refuse_input(tk_split *s, const char *path, long num)
{
	(void)num;
	if (!tk_output_is_input(path, s->input))
		return 0;
	return fail(s, TK_ERR_ARG, "%s: the input is a file of the output set this run replaces (%s): "
	            "split it into another directory or under another --name", s->input, path);
}

/* Parts of an earlier run that the new set does not have (it had more
 * parts, other number widths or another format). */
static int remove_stale(tk_split *s, const char *path, long num)
{
	if (num < 0)
		return 0;
	for (size_t i = 0; i < s->n_parts; i++)
		if (s->parts[i].final && strcmp(s->parts[i].final, path) == 0)
			return 0;
	if (unlink(path) && errno != ENOENT)
		tk__err_warn(&s->err, "%s: an earlier run's part could not be removed: %s", path, strerror(errno));
	return 0;
}

/* Rename every part to its final name: zero-padded numbers that sort. The
 * old index goes first, so that no index ever lists a mixed set. */
static int publish(tk_split *s)
{
	int width = digits(s->n_parts ? s->n_parts - 1 : 0);
	width = width < 4 ? 4 : width;
	size_t dl = strlen(s->o.dir) + 1;
	if (unlink(s->index_path) && errno != ENOENT)
		return fail(s, TK_ERR_IO, "%s: cannot remove the earlier index: %s", s->index_path, strerror(errno));
	for (size_t i = 0; i < s->n_parts; i++) {
		part_rec *pr = &s->parts[i];
		size_t n = dl + strlen(s->name) + strlen(s->ext) + 40;
		if (!(pr->final = malloc(n)))
			return fail(s, TK_ERR_NOMEM, "out of memory");
		char num[40];
		snprintf(num, sizeof num, "%0*zu", width & 31, i);
		snprintf(pr->final, n, "%s/%s.part-%s%s", s->o.dir, s->name, num, s->ext);
		if (rename(pr->tmp, pr->final)) {
			int e = errno;
			free(pr->final);
			pr->final = NULL;
			return fail(s, TK_ERR_IO, "%s: cannot rename into place: %s", pr->tmp, strerror(e));
		}
		pr->p.file = pr->final + dl;
	}
	return 0;
}

static void remove_outputs(tk_split *s)
{
	tk_writer_free(s->w); /* removes its temporary file */
	s->w = NULL;
	for (size_t i = 0; i < s->n_parts; i++) {
		part_rec *pr = &s->parts[i];
		unlink(pr->final ? pr->final : pr->tmp);
	}
}

/* The end of a run: its private directory, its lock, and on failure the
 * directories it created (only while empty). */
static void end_run(tk_split *s, int failed)
{
	if (s->pdir) {
		rmdir(s->pdir);
		tk__tmp_release(s->pdir_hold);
		s->pdir_hold = 0;
		free(s->pdir);
		s->pdir = NULL;
	}
	if (s->lock_fd >= 0) { /* removed while held: a run that opened it before retries */
		unlink(s->lock_path);
		tk__tmp_release(s->lock_hold);
		s->lock_hold = 0;
		close(s->lock_fd);
		s->lock_fd = -1;
	}
	free(s->lock_path);
	s->lock_path = NULL;
	/* on failure the directories it created go, innermost first, where
	 * empty (a part of DIR's path made before the failure too) */
	for (size_t i = s->n_made; i-- > 0;) {
		if (failed)
			rmdir(s->made[i].path);
		tk__tmp_release(s->made[i].hold);
		free(s->made[i].path);
	}
	free(s->made);
	s->made = NULL;
	s->n_made = s->made_cap = 0;
}

/* One run at a time per output set: an exclusive flock() on DIR/.NAME.lock. */
static int lock_set(tk_split *s)
{
	size_t n = strlen(s->o.dir) + strlen(s->name) + 16;
	if (!(s->lock_path = malloc(n)))
		return fail(s, TK_ERR_NOMEM, "out of memory");
	snprintf(s->lock_path, n, "%s/.%s.lock", s->o.dir, s->name);
	for (int tries = 0; tries < 100; tries++) {
		int fd = open(s->lock_path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0666);
		if (fd < 0)
			return fail(s, TK_ERR_IO, "%s: cannot create the lock file: %s", s->lock_path, strerror(errno));
		if (flock(fd, LOCK_EX | LOCK_NB)) {
			int e = errno;
			close(fd);
			if (e == EWOULDBLOCK)
				return fail(s, TK_ERR_IO, "%s: another trace-split run is writing the parts of %s in %s; "
				            "wait for it to end, or split into another directory or under another --name",
				            s->lock_path, s->name, s->o.dir);
			return fail(s, TK_ERR_IO, "%s: cannot lock: %s", s->lock_path, strerror(e));
		}
		struct stat a, b; /* the name may have been removed by the run that held it */
		if (fstat(fd, &a) == 0 && stat(s->lock_path, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino) {
			s->lock_fd = fd;
			s->lock_hold = tk__tmp_hold(s->lock_path, 0);
			return 0;
		}
		close(fd);
	}
	return fail(s, TK_ERR_IO, "%s: cannot lock: the file keeps changing", s->lock_path);
}

/* The run's private directory of parts, in DIR so that publishing is a rename. */
static int make_pdir(tk_split *s)
{
	size_t n = strlen(s->o.dir) + strlen(s->name) + 24;
	if (!(s->pdir = malloc(n)))
		return fail(s, TK_ERR_NOMEM, "out of memory");
	snprintf(s->pdir, n, "%s/.%s.split-XXXXXX", s->o.dir, s->name);
	if (tk__tmp_create(s->pdir, 1, &s->pdir_hold) < 0) {
		int e = errno;
		free(s->pdir);
		s->pdir = NULL;
		return fail(s, TK_ERR_IO, "%s: cannot create a directory for the parts: %s", s->o.dir, strerror(e));
	}
	return 0;
}

static int make_dir(tk_split *s)
{
	char *d = tk__strdup(s->o.dir);
	if (!d)
		return fail(s, TK_ERR_NOMEM, "out of memory");
	for (char *p = d + 1;; p++) {
		if (*p && *p != '/')
			continue;
		char c = *p;
		*p = 0;
		if (mkdir(d, 0777) == 0) {
			char *copy = tk__strdup(d);
			if (!copy || tk__grow(&s->made, &s->made_cap, s->n_made + 1, sizeof *s->made, 4)) {
				free(copy);
				rmdir(d);
				free(d);
				return fail(s, TK_ERR_NOMEM, "out of memory");
			}
			s->made[s->n_made++] = (struct made_dir){copy, tk__tmp_hold(d, TK__TMP_MADE)};
		} else if (errno != EEXIST) {
			int e = errno;
			free(d);
			return fail(s, TK_ERR_IO, "%s: cannot create directory: %s", s->o.dir, strerror(e));
		}
		*p = c;
		if (!c)
			break;
	}
	free(d);
	struct stat st;
	if (stat(s->o.dir, &st) || !S_ISDIR(st.st_mode))
		return fail(s, TK_ERR_IO, "%s: not a directory", s->o.dir);
	return 0;
}

/* NAME from the input: its file name without the trace suffixes (.json.gz). */
static int pick_name(tk_split *s, const char *path)
{
	const char *b = base_name(path);
	size_t n = tk__name_stem(b);
	free(s->name);
	if (!(s->name = s->o.name ? tk__strdup(s->o.name) : strndup(b, n)))
		return fail(s, TK_ERR_NOMEM, "out of memory");
	return 0;
}

static void reset_run(tk_split *s)
{
	for (size_t i = 0; i < s->n_parts; i++) {
		free(s->parts[i].tmp);
		free(s->parts[i].final);
	}
	s->n_parts = 0;
	tk__err_free(&s->err);
	for (size_t i = 0; i < s->n_pool; i++)
		tk_event_free(s->pool[i].ev);
	s->n_pool = 0;
	s->free_head = 0;
	for (size_t i = 0; i < s->n_carry; i++)
		tk_event_free(s->carry[i]);
	s->n_carry = 0;
	free(s->segs);
	s->segs = NULL;
	s->n_segs = 0;
	s->windowed = 0;
	free(s->late);
	s->late = NULL;
	for (size_t i = 0; i < s->n_q; i++)
		tk_event_free(s->q[i].ev);
	s->n_q = 0;
	s->q_bytes = 0;
	s->last_ts = INT64_MIN;
	tk__scan_free(&s->sc);
	memset(&s->st, 0, sizeof s->st);
}

static int run(tk_split *s, const char *path)
{
	if (pick_name(s, path) || make_dir(s) || lock_set(s))
		return -1;
	size_t n = strlen(s->o.dir) + strlen(s->name) + 16;
	free(s->index_path);
	if (!(s->index_path = malloc(n)))
		return fail(s, TK_ERR_NOMEM, "out of memory");
	snprintf(s->index_path, n, "%s/%s.index.json", s->o.dir, s->name);
	s->input = path;
	if (each_set_file(s, refuse_input) || make_pdir(s))
		return -1;
	int rc = tk__split_scan(&s->sc, path, &s->o, &s->err);
	if (rc)
		return rc;
	s->pf = tk__format_by_id(s->o.wopts.format == TK_FORMAT_AUTO ? TK_FORMAT_JSON : s->o.wopts.format);
	if (s->pf->flags & TK__FMT_WHOLE_GZIP) { /* gzip parts by default when the input was */
		s->gz = s->o.wopts.gzip < 0 ? s->sc.gz_input : s->o.wopts.gzip;
		snprintf(s->ext, sizeof s->ext, "%s%s", s->pf->suffixes[0], s->gz ? ".gz" : "");
	} else { /* gzip means the format's own compression, never by default */
		s->gz = s->o.wopts.gzip > 0;
		snprintf(s->ext, sizeof s->ext, "%s", s->pf->suffixes[0]);
	}
	s->st.events_in = s->sc.events;
	s->st.meta_events = s->sc.n_mev;
	s->st.orphan_flow_ends = s->sc.orphan_ends;
	s->st.steps_found = tk_steps_count(s->sc.steps);
	s->st.input_sorted = s->sc.sorted;
	s->st.flow_table_bytes = s->sc.flows.map.n_slots * sizeof(tk__flow);
	if ((rc = build_segments(s, path)))
		return rc;
	rc = s->sc.sorter ? pass_unsorted(s, path) : pass_sorted(s, path);
	if (!rc)
		rc = finish_parts(s);
	if (!rc)
		rc = publish(s);
	if (!rc)
		rc = each_set_file(s, remove_stale);
	if (!rc)
		rc = write_index(s, path);
	return rc;
}

int tk_split_run(tk_split *s, const char *path)
{
	if (!s || !path)
		return TK_ERR_ARG;
	reset_run(s);
	if (!tk_input_rereadable(path))
		return fail(s, TK_ERR_ARG, "%s: trace-split reads its input twice, and this is %s: save it to a "
		            "file first", strcmp(path, "-") == 0 ? "(stdin)" : path,
		            strcmp(path, "-") == 0 ? "standard input" : "a pipe or FIFO");
	int rc = run(s, path);
	if (rc) {
		remove_outputs(s);
		end_run(s, 1);
		if (!s->err.msg[0])
			fail(s, rc, "%s", tk_strerror(rc));
		return rc < 0 ? rc : TK_ERR_IO;
	}
	end_run(s, 0);
	return 0;
}

/* ---- handle ---- */

static int check_opts(tk_split *s)
{
	const tk_split_opts *o = &s->o;
	int rules = (o->every_ns != 0) + (o->n_parts != 0) + (o->by_step != 0) + (o->window.set != 0) +
	            (o->steps != 0);
	if (!o->dir || !*o->dir)
		return fail(s, TK_ERR_ARG, "no output directory");
	if (rules > 1)
		return fail(s, TK_ERR_ARG, "choose one of parts, every, by-step, window and steps");
	if (!rules && !o->max_bytes)
		return fail(s, TK_ERR_ARG, "nothing says where to split: give a size, parts, a window length, "
		            "steps or a window");
	if (o->every_ns < 0)
		return fail(s, TK_ERR_ARG, "the window length must be positive");
	if (o->window.set && o->window.lo_rel == o->window.hi_rel && o->window.lo >= o->window.hi)
		return fail(s, TK_ERR_ARG, "the window is empty");
	if (o->steps && o->step_from > o->step_to)
		return fail(s, TK_ERR_ARG, "the step range is empty");
	const tk__format *pf = tk__format_by_id(o->wopts.format == TK_FORMAT_AUTO ? TK_FORMAT_JSON : o->wopts.format);
	if (!pf || !pf->wr)
		return fail(s, TK_ERR_UNSUPPORTED, "parts cannot be written in that format (%s)", tk_format_names());
	if (!pf->wr->state_size && o->max_bytes)
		return fail(s, TK_ERR_UNSUPPORTED, "a byte budget needs JSON parts (the viewers' limits are "
		            "on JSON): split %s output by parts, every, steps or a window", pf->name);
	return 0;
}

int tk_split_new(tk_split **out, const tk_split_opts *opts)
{
	if (!out || !opts)
		return TK_ERR_ARG;
	tk_split *s = calloc(1, sizeof *s);
	*out = s;
	if (!s)
		return TK_ERR_NOMEM;
	s->o = *opts;
	s->cur = -1;
	s->lock_fd = -1;
	return check_opts(s);
}

const char *tk_split_error(const tk_split *s)
{
	return s ? s->err.msg : "out of memory";
}

const char *tk_split_warning(const tk_split *s, size_t i)
{
	return s ? tk__err_warning(&s->err, i) : NULL;
}

const tk_split_stats *tk_split_get_stats(const tk_split *s)
{
	return s ? &s->st : NULL;
}

size_t tk_split_part_count(const tk_split *s)
{
	return s ? s->n_parts : 0;
}

const tk_split_part *tk_split_get_part(const tk_split *s, size_t i)
{
	return s && i < s->n_parts ? &s->parts[i].p : NULL;
}

const char *tk_split_index_path(const tk_split *s)
{
	return s ? s->index_path : NULL;
}

void tk_split_free(tk_split *s)
{
	if (!s)
		return;
	tk_writer_free(s->w);
	end_run(s, 0);
	reset_run(s);
	free(s->parts);
	free(s->pool);
	free(s->carry);
	free(s->q);
	tk__buf_free(&s->argbuf);
	free(s->name);
	free(s->index_path);
	free(s);
}
