/* cli_stats.c: one trace's stats as trace-stats and trace-diff build them (cli_stats.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cli_stats.h"
#include "tracekit/merge.h"
#include "tracekit/steps.h"

void cli_stats_notes(tk_reader_opts *ro, const tk_stats_opts *so)
{
	ro->note_fn = tk_stats_note;
	ro->note_ctx = so;
	ro->note_size = tk_stats_note_size();
}

int cli_parse_steps(const cli_tool *t, int id, const char *arg, long *a, long *b)
{
	char *end;
	*a = *b = strtol(arg, &end, 10);
	if (*end == '-')
		*b = strtol(end + 1, &end, 10);
	if (*end || end == arg || *a < 0 || *b < *a)
		return cli_bad_value(t, id, arg, "A or A-B, ProfilerStep numbers with A <= B");
	return 0;
}

int cli_reads_twice(long step_a, const tk_stats_opts *so)
{
	return step_a >= 0 || so->window.lo_rel || so->window.hi_rel;
}


/* Progress every 65,536 events of r, under label (the reader's name when NULL). */
static void tick(cli_progress *p, tk_reader *r, const char *label)
{
	const tk_reader_stats *rs = tk_reader_get_stats(r);
	if ((rs->events & 0xffff) == 0)
		cli_progress_update(p, label ? label : tk_reader_name(r), rs->bytes_in, rs->events);
}

/* First pass for --steps and for a window counted from the first event:
 * the steps and the launch of every correlation id (GPU work counts in the
 * step that launched it: docs/steps.md), the first event's time. The
 * steps object goes to *steps for the second pass. */
static int first_pass(const char *tool, const cli_stats_req *q, const char *name, tk_stats_opts *so,
                      tk_steps **steps)
{
	tk_reader *r = NULL;
	const tk_event *ev;
	int64_t first = INT64_MAX, span;
	tk_reader_opts ro = q->ropts;
	ro.note_fn = NULL; /* the steps alone */
	int rc = tk_reader_open_path(&r, name, &ro);
	if (!rc && q->step_a >= 0 && !(rc = tk_steps_new(steps)))
		rc = tk_steps_set_memory(*steps, so->memory_bytes ? so->memory_bytes : TK_STATS_MEMORY_DEFAULT, so->tmpdir);
	char label[512];
	snprintf(label, sizeof label, "%.400s (first read: the steps)", name);
	cli_progress prog;
	cli_progress_init(&prog, q->quiet);
	while (!rc && (rc = tk_reader_next(r, &ev)) == TK_OK) {
		tick(&prog, r, label);
		if ((ev->has & TK_HAS_TS) && ev->ph != 'M' && ev->ts < first)
			first = ev->ts;
		if (*steps && tk_reader_get_stats(r)->events == 1 && tk_merge_pid_span(r, &span) == 0)
			tk_steps_set_pid_span(*steps, span);
		if (*steps)
			rc = tk_steps_add(*steps, ev);
	}
	cli_progress_done(&prog);
	if (rc < 0 && *steps && *tk_steps_error(*steps))
		cli_err(tool, "%s: %s", name, tk_steps_error(*steps));
	else if (rc < 0)
		cli_err(tool, "%s", r && *tk_reader_error(r) ? tk_reader_error(r) : tk_strerror(rc));
	tk_reader_free(r);
	if (rc < 0)
		return 1;
	if (so->window.set)
		so->window = tk_window_at(&so->window, first == INT64_MAX ? 0 : first);
	if (q->step_a < 0)
		return 0;
	tk_steps_finish(*steps);
	int64_t lo = INT64_MAX, hi = INT64_MIN, first_num = INT64_MAX, last_num = INT64_MIN;
	size_t n_steps = tk_steps_count(*steps);
	for (size_t i = 0; i < n_steps; i++) {
		const tk_step *st = tk_steps_get(*steps, i);
		first_num = st->num < first_num ? st->num : first_num;
		last_num = st->num > last_num ? st->num : last_num;
		if (st->num < q->step_a || st->num > q->step_b)
			continue;
		lo = st->ts < lo ? st->ts : lo;
		hi = st->end > hi ? st->end : hi;
	}
	if (lo > hi) { /* say which steps there are, as trace-split does */
		if (n_steps)
			cli_err(tool, "%s: no ProfilerStep#%ld..#%ld events (its steps are #%lld to #%lld)", name,
			        q->step_a, q->step_b, (long long)first_num, (long long)last_num);
		else
			cli_err(tool, "%s: no ProfilerStep#%ld..#%ld events (it has no ProfilerStep#N slices)", name,
			        q->step_a, q->step_b);
		return 1;
	}
	/* the steps (their last nanosecond included), within the window when there is one */
	hi = hi < INT64_MAX ? hi + 1 : hi;
	int64_t wlo = so->window.set ? so->window.lo : INT64_MIN, whi = so->window.set ? so->window.hi : INT64_MAX;
	so->window = (tk_window){1, lo > wlo ? lo : wlo, hi < whi ? hi : whi, 0, 0};
	so->steps = *steps; /* tk_stats_new gives it the window's parts */
	return 0;
}

/* The rank of ev in a merged trace: its pid's block (rank*span+pid), or
 * "rank R ..." for a string pid; 0 for an event without either. */
static int64_t rank_of(const tk_event *ev, int64_t span)
{
	int64_t r;
	return tk_merge_rank_of(&ev->pid, span, &r) == 0 ? r : 0;
}

/* The stats object of rank (added, in order of first appearance). */
static int rank_stats(cli_stats_out *out, int64_t rank, const tk_stats_opts *so, tk_stats **st)
{
	for (size_t i = 0; i < out->n; i++)
		if (out->rank[i] == rank) {
			*st = out->s[i];
			return 0;
		}
	tk_stats **ns = realloc(out->s, (out->n + 1) * sizeof *ns);
	if (ns)
		out->s = ns;
	int64_t *nr = ns ? realloc(out->rank, (out->n + 1) * sizeof *nr) : NULL;
	if (!nr)
		return TK_ERR_NOMEM;
	out->rank = nr;
	out->s[out->n] = NULL;
	int rc = tk_stats_new(&out->s[out->n], so);
	if (rc)
		return rc;
	out->rank[out->n] = rank;
	*st = out->s[out->n++];
	return 0;
}

/* Every event of r into out: one object, or one per rank of a merged
 * trace; r's error or the stats' in *err. */
static int add_all(tk_reader *r, const cli_stats_req *q, const tk_stats_opts *so, cli_stats_out *out, int64_t *span,
                   const char **err, cli_progress *prog)
{
	const tk_event *ev;
	tk_stats *st = NULL;
	tk_stats_opts rso = *so;
	int rc = 0, whole = 0;
	*span = 0;
	so = &rso;
	/* the ops' nesting on a thread of its own beside the parse threads;
	 * not for each rank of a merged trace (one thread per rank) */
	rso.threads = q->ropts.threads;
	while (!rc && (rc = tk_reader_next(r, &ev)) == TK_OK) {
		tick(prog, r, NULL);
		if (whole) {
			/* the batches the parse threads made the tables' part of */
			if ((rc = tk_stats_add_from(st, r, ev)) != 0)
				*err = tk_stats_error(st);
			continue;
		}
		int64_t sp = 0;
		size_t ranks;
		if (!out->n && tk_merge_pid_span(r, &sp) == 0 && q->per_rank) {
			*span = sp;
			rso.threads = 0;
			/* the ranks share the memory of the GPU time line's sorting */
			if (tk_merge_rank_count(r, &ranks) == 0 && ranks > 1) {
				rso.memory_bytes = (rso.memory_bytes ? rso.memory_bytes : TK_STATS_MEMORY_DEFAULT) / ranks;
				if (rso.memory_bytes < CLI_STATS_RANK_MIN)
					rso.memory_bytes = CLI_STATS_RANK_MIN;
			}
		}
		if (!out->n && !*span) {
			/* the whole trace as one (a merged one keeps correlation ids per rank) */
			if ((rc = rank_stats(out, -1, so, &st)) == 0) {
				tk_stats_set_pid_span(st, sp);
				whole = 1;
				if ((rc = tk_stats_add_from(st, r, ev)) != 0)
					*err = tk_stats_error(st);
			} else {
				*err = "out of memory";
			}
			continue;
		}
		if (ev->ph == 'M')
			continue; /* metadata: no table counts it */
		if ((rc = rank_stats(out, rank_of(ev, *span), so, &st)) == 0 && (rc = tk_stats_add_noted(st, ev, tk_reader_event_note(r))) != 0)
			*err = tk_stats_error(st);
	}
	if (whole) {
		if (rc < 0 && !*err)
			*err = tk_reader_error(r);
		return rc == TK_EOF ? 0 : rc;
	}
	if (rc == TK_EOF && !out->n && (rc = rank_stats(out, -1, so, &st)) != 0)
		*err = "out of memory"; /* no event: an empty table */
	for (size_t i = 1; i < out->n; i++) /* ranks in order */
		for (size_t j = i; j > 0 && out->rank[j - 1] > out->rank[j]; j--) {
			int64_t t = out->rank[j];
			tk_stats *x = out->s[j];
			out->rank[j] = out->rank[j - 1];
			out->s[j] = out->s[j - 1];
			out->rank[j - 1] = t;
			out->s[j - 1] = x;
		}
	if (rc == TK_EOF)
		return 0;
	if (rc && !*err)
		*err = rc == TK_ERR_NOMEM ? "out of memory" : tk_reader_error(r);
	return rc;
}

/* The op running at each device's memory peak, where the first read could
 * not tell: a second read of the input, which standard input and pipes do
 * not allow (the column stays empty), up to where no op left can run at a
 * peak. */
static int memory_ops(const char *tool, const cli_stats_req *q, const char *name, cli_stats_out *out, int64_t span)
{
	size_t left = 0; /* the stats objects with an op still to find */
	for (size_t i = 0; i < out->n; i++)
		left += tk_stats_memory_ops_left(out->s[i]) != 0;
	if (!left)
		return 0;
	if (!tk_input_rereadable(name)) {
		if (!q->quiet)
			cli_warn(tool, "%s: the memory table names the op at each peak from a second read of the input, "
			         "and this is %s: that column stays empty", strcmp(name, "-") == 0 ? "(stdin)" : name,
			         strcmp(name, "-") == 0 ? "standard input" : "a pipe or FIFO");
		return 0;
	}
	tk_reader *r2 = NULL;
	const tk_event *ev;
	tk_reader_opts ro = q->ropts;
	ro.skip_args = 1; /* names, times and threads are all it needs */
	ro.note_fn = NULL;
	int rc = tk_reader_open_path(&r2, name, &ro);
	char label[512];
	snprintf(label, sizeof label, "%.400s (again: the op at each memory peak)", name);
	cli_progress prog;
	cli_progress_init(&prog, q->quiet);
	while (!rc && left && (rc = tk_reader_next(r2, &ev)) == TK_OK) {
		tick(&prog, r2, label);
		int64_t rank = span ? rank_of(ev, span) : -1;
		for (size_t i = 0; i < out->n && !rc; i++)
			if (out->rank[i] == rank && tk_stats_memory_ops_left(out->s[i])) {
				rc = tk_stats_memory_op(out->s[i], ev);
				left -= !rc && !tk_stats_memory_ops_left(out->s[i]);
			}
	}
	cli_progress_done(&prog);
	if (rc < 0)
		cli_err(tool, "%s", r2 && *tk_reader_error(r2) ? tk_reader_error(r2) : tk_strerror(rc));
	tk_reader_free(r2);
	return rc < 0 ? rc : 0;
}

void cli_stats_out_free(cli_stats_out *out)
{
	for (size_t i = 0; i < out->n; i++)
		tk_stats_free(out->s[i]);
	free(out->s);
	free(out->rank);
	*out = (cli_stats_out){0};
}

int cli_stats_read(const char *tool, const char *name, tk_reader *r, const cli_stats_req *q, cli_stats_out *out)
{
	*out = (cli_stats_out){0};
	tk_stats_opts so = q->sopts;
	tk_steps *steps = NULL;
	if (cli_reads_twice(q->step_a, &so) && first_pass(tool, q, name, &so, &steps)) {
		tk_steps_free(steps);
		return 1;
	}
	const char *err = NULL;
	int64_t span = 0;
	cli_progress prog;
	cli_progress_init(&prog, q->quiet);
	int rc = add_all(r, q, &so, out, &span, &err, &prog);
	cli_progress_done(&prog);
	for (size_t i = 0; !rc && i < out->n; i++)
		if ((rc = tk_stats_finish(out->s[i])) != 0)
			err = tk_stats_error(out->s[i]);
	int mem = 0;
	for (size_t i = 0; !rc && i < out->n; i++)
		mem |= tk_stats_memory_count(out->s[i]) != 0;
	if (!rc && mem && q->peak_op && (rc = memory_ops(tool, q, name, out, span)) != 0)
		err = ""; /* said */
	if (rc && !err && steps && *tk_steps_error(steps)) /* reading the launches back for the window */
		err = tk_steps_error(steps);
	if (rc && !err)
		err = tk_strerror(rc);
	if (rc && strncmp(err, name, strlen(name)) == 0) /* a reader's error names its input */
		cli_err(tool, "%s", err);
	else if (rc && *err)
		cli_err(tool, "%s: %s", name, err);
	tk_steps_free(steps);
	for (size_t i = 0; !q->quiet && tk_reader_warning(r, i); i++)
		cli_warn(tool, "%s", tk_reader_warning(r, i));
	if (rc) {
		cli_stats_out_free(out);
		return 1;
	}
	uint64_t late = 0, events = 0;
	for (size_t i = 0; i < out->n; i++) {
		late += tk_stats_get_info(out->s[i])->late;
		events += tk_stats_get_info(out->s[i])->events + tk_stats_memory_count(out->s[i]);
	}
	if (!q->quiet && late)
		cli_warn(tool, "%s: %llu ops arrived after their time was processed; raise "
		         "--max-pending for exact self times", name, (unsigned long long)late);
	if (!q->quiet)
		cli_window_kept(tool, name, q->window, events);
	/* nothing to count, said, rather than tables with no rows */
	if (!q->quiet && !events && !q->window && q->sopts.cats)
		cli_warn(tool, "%s: no event of the categories in --cat (%s)", name, q->sopts.cats);
	else if (!q->quiet && !events && !q->window)
		cli_warn(tool, "%s: no events that the tables count", name);
	return 0;
}

/* ---- the traces of a run ---- */

/* "rank N" from distributedInfo when the trace has it. */
static void rank_label(tk_reader *r, size_t index, char *buf, size_t cap)
{
	tk_sv di = tk_reader_meta_find(r, "distributedInfo"), v;
	if (di.ptr && tk_json_obj_find(di, "rank", &v) == 0 && v.len < 20)
		snprintf(buf, cap, "rank %.*s", (int)v.len, v.ptr);
	else
		snprintf(buf, cap, "trace %zu", index);
}

static int label_taken(const cli_stats_run *run, const char *l)
{
	for (size_t i = 0; i < run->n; i++)
		if (strcmp(run->labels[i], l) == 0)
			return 1;
	return 0;
}

/* The next trace's label, made distinct from the others' (" #2", " #3"):
 * two traces that say they are the same rank get columns of their own. */
static void unique_label(cli_stats_run *run, const char *name)
{
	char *l = run->labels[run->n], base[32];
	if (!label_taken(run, l))
		return;
	snprintf(base, sizeof base, "%s", l);
	for (int k = 2; label_taken(run, l); k++)
		snprintf(l, sizeof run->labels[0], "%.18s #%d", base, k);
	if (!run->req.quiet)
		cli_warn(run->tool, "%s: %s again (as an earlier trace says it is); its columns are '%s'", name, base, l);
}

int cli_stats_run_add(void *ctx, const char *name, tk_reader *r)
{
	cli_stats_run *run = ctx;
	size_t index = run->seen++;
	cli_stats_out got;
	if (cli_stats_read(run->tool, name, r, &run->req, &got))
		return 1;
	for (size_t i = 0; i < got.n; i++) {
		if (run->n == run->cap) {
			size_t nc = run->cap ? run->cap * 2 : 16;
			tk_stats **ns = realloc(run->s, nc * sizeof *ns);
			if (ns)
				run->s = ns;
			char(*nl)[32] = ns ? realloc(run->labels, nc * sizeof *nl) : NULL;
			if (!nl) {
				cli_err(run->tool, "out of memory");
				for (size_t k = i; k < got.n; k++)
					tk_stats_free(got.s[k]);
				got.n = 0;
				cli_stats_out_free(&got);
				return 1;
			}
			run->labels = nl;
			run->cap = nc;
		}
		if (got.rank[i] >= 0)
			snprintf(run->labels[run->n], sizeof run->labels[run->n], "rank %lld", (long long)got.rank[i]);
		else
			rank_label(r, index, run->labels[run->n], sizeof run->labels[run->n]);
		unique_label(run, name);
		run->s[run->n++] = got.s[i];
	}
	got.n = 0; /* the stats are the run's now */
	cli_stats_out_free(&got);
	return 0;
}

void cli_stats_run_free(cli_stats_run *run)
{
	for (size_t i = 0; i < run->n; i++)
		tk_stats_free(run->s[i]);
	free(run->s);
	free(run->labels);
	*run = (cli_stats_run){0};
}

/* ---- writing the tables ---- */

static int write_one(const cli_tables *w, const char *path, const int *ts, size_t n)
{
	tk_outfile *out;
	FILE *f = cli_out_open(w->tool, path, &out);
	if (!f)
		return 1;
	int rc, json = w->format == TK_TABLE_JSON, csv = w->format == TK_TABLE_CSV, status = 0;
	if (json)
		fputc('{', f);
	else if (!csv && w->preface)
		fprintf(f, "%s\n", w->preface);
	for (size_t i = 0; i < n && !status; i++) {
		char *txt = NULL;
		size_t len = 0;
		int t = ts[i];
		rc = w->render(w->ctx, t, &txt, &len);
		if (rc) {
			status = rc == TK_ERR_ARG ? 2 : 1;
			break;
		}
		if (json)
			fprintf(f, "%s\"%s\":%.*s", i ? "," : "", w->keys[t], (int)(len && txt[len - 1] == '\n' ? len - 1 : len),
			        txt);
		else if (csv || !w->titles || !w->titles[t])
			fprintf(f, "%s%s", i ? "\n" : "", txt);
		else
			fprintf(f, "%s%s\n\n%s", i ? "\n" : "", w->titles[t], txt);
		free(txt);
	}
	if (json && !status)
		fputs("}\n", f);
	int closed = cli_out_close(w->tool, out, !status);
	return status ? status : closed;
}

int cli_write_tables(const cli_tables *w)
{
	const char *out = w->out ? w->out : "-";
	if (w->format != TK_TABLE_CSV || w->n_shown < 2)
		return write_one(w, out, w->shown, w->n_shown);
	if (cli_out_in_place(out)) {
		if (!w->quiet)
			cli_warn(w->tool, "CSV to %s holds %zu tables one after another, which a CSV reader does not "
			         "load as one: pick one with -t, or give -o FILE.csv for a file per table",
			         strcmp(out, "-") == 0 ? "standard output" : out, w->n_shown);
		return write_one(w, out, w->shown, w->n_shown);
	}
	size_t len = strlen(out), stem = len > 4 && strcmp(out + len - 4, ".csv") == 0 ? len - 4 : len;
	int status = 0;
	for (size_t i = 0; i < w->n_shown && !status; i++) {
		const char *key = w->keys[w->shown[i]];
		char *path = malloc(stem + strlen(key) + 6);
		if (!path) {
			cli_err(w->tool, "out of memory");
			return 1;
		}
		sprintf(path, "%.*s.%s.csv", (int)stem, out, key);
		status = write_one(w, path, &w->shown[i], 1);
		free(path);
	}
	if (!status && !w->quiet) { /* the names written are not the one given: say them */
		fprintf(stderr, "%s: %zu tables, a CSV file each:", w->tool, w->n_shown);
		for (size_t i = 0; i < w->n_shown; i++)
			fprintf(stderr, "%s %.*s.%s.csv", i ? "," : "", (int)stem, out, w->keys[w->shown[i]]);
		fputc('\n', stderr);
	}
	return status;
}
