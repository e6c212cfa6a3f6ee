/* fuzz_collector.c: fuzz harness for the CUPTI collector's record conversion and configuration (libFuzzer, or a plain main() over files).
 *
 * An input that starts with "ENV\n" is an environment: "NAME=VALUE"
 * lines, read by tkc_config_read() through a getenv of the harness's own.
 * Invariants: it returns -1 exactly when it says why; every value is in
 * its documented range (buffer size at least 64 KiB and a multiple of 8,
 * at least 2 buffers, compress and signals 0 or 1, rank and world size
 * -1 or more, activities within TKC_A_ALL, the output directory and step
 * range the variable's or their defaults); an accepted TK_ACTIVITIES and
 * TK_SCHEDULE written back in canonical form parse to the same bits and
 * schedule; the schedule's action is one of the three and none once its
 * repeats are over; TK_RANKS selects a rank exactly when one of its
 * comma-separated items does, and always selects a rank appended to it;
 * the output path fits or is refused.
 *
 * Any other input is a sequence of CUPTI activity records (cupti_activity.h
 * structs as the collector reads them: a byte choosing the kind, the
 * struct's bytes, then the strings a record points to as a length and
 * bytes), converted with tkc_convert() as the collector's writer thread
 * does, then the NVTX ranges left open (tkc_conv_drain_open) and a
 * dropped-records event. Every event is written (1) as the collector
 * writes it, through a small tk_tkb_buf into a tk_tkb_writer on a memory
 * file, and (2) as JSON with tk_writer. Invariants: both files read back
 * without error or warning, to as many events as were converted; where
 * every string the records hold is valid UTF-8, both read back to exactly
 * the converted events (args the converter marks as valid JSON must be
 * JSON, names must stay UTF-8). */
#define _GNU_SOURCE
#include "fuzz_events.h"
#include "tkc.h"

#define WHO "fuzz_collector"
#define MAX_RECORDS 256
#define ENV_MAGIC "ENV\n"

/* ---- the environment ---- */

static const char *env_names[] = {"TK_OUTPUT_DIR", "TK_ACTIVITIES", "TK_RANKS", "TK_CAPTURE", "TK_SCHEDULE",
                                  "TK_STEP_RANGE", "TK_BUFFER_SIZE", "TK_MAX_BUFFERS", "TK_FLUSH_MS",
                                  "TK_COMPRESS", "TK_SIGNALS", "RANK", "OMPI_COMM_WORLD_RANK", "SLURM_PROCID",
                                  "PMI_RANK", "WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "SLURM_NTASKS", "PMI_SIZE"};
#define N_ENV (sizeof env_names / sizeof *env_names)
static char *env_values[N_ENV];

static const char *fake_getenv(const char *name)
{
	for (size_t i = 0; i < N_ENV; i++)
		if (strcmp(name, env_names[i]) == 0)
			return env_values[i];
	return NULL;
}

static const char *env(const char *name)
{
	const char *v = fake_getenv(name);
	return v && *v ? v : NULL;
}

static const struct {
	const char *name;
	unsigned bit;
} act_bits[] = {{"kernel", TKC_A_KERNEL}, {"memcpy", TKC_A_MEMCPY},   {"memset", TKC_A_MEMSET},
                {"runtime", TKC_A_RUNTIME}, {"driver", TKC_A_DRIVER}, {"sync", TKC_A_SYNC},
                {"nvtx", TKC_A_NVTX},     {"overhead", TKC_A_OVERHEAD},
                {"driver-launch", TKC_A_DRIVER_LAUNCH}};

static void check_activities(const char *v)
{
	char err[256] = "", again[256] = "";
	long bits = tkc_parse_activities(v, err, sizeof err);
	FZ_CHECK(WHO, (bits < 0) == (err[0] != 0), "TK_ACTIVITIES '%s': %ld, message '%s'", v, bits, err);
	if (bits < 0)
		return;
	FZ_CHECK(WHO, ((unsigned long)bits & ~(unsigned long)TKC_A_ALL) == 0, "TK_ACTIVITIES '%s' gives bits %#lx", v,
	         bits);
	char canon[256] = "";
	for (size_t i = 0; i < sizeof act_bits / sizeof *act_bits; i++)
		if (bits & act_bits[i].bit)
			snprintf(canon + strlen(canon), sizeof canon - strlen(canon), "%s%s", canon[0] ? "," : "",
			         act_bits[i].name);
	long back = tkc_parse_activities(canon, again, sizeof again);
	FZ_CHECK(WHO, back == bits, "TK_ACTIVITIES '%s' gives %#lx, written back as '%s' %#lx", v, bits, canon, back);
}

static void check_schedule(const char *v, const tkc_config *c)
{
	char err[256] = "";
	tkc_schedule s = {0};
	int rc = tkc_parse_schedule(v, &s, err, sizeof err);
	FZ_CHECK(WHO, (rc != 0) == (err[0] != 0), "TK_SCHEDULE '%s': %d, message '%s'", v, rc, err);
	if (rc)
		return;
	FZ_CHECK(WHO, memcmp(&s, &c->sched, sizeof s) == 0, "TK_SCHEDULE '%s' reads differently in the configuration", v);
	FZ_CHECK(WHO, s.on && s.active >= 1 && s.skip_first >= 0 && s.wait >= 0 && s.warmup >= 0 && s.repeat >= 0,
	         "TK_SCHEDULE '%s' gives skip_first=%d wait=%d warmup=%d active=%d repeat=%d", v, s.skip_first, s.wait,
	         s.warmup, s.active, s.repeat);
	char canon[160];
	snprintf(canon, sizeof canon, "skip_first=%d,wait=%d,warmup=%d,active=%d,repeat=%d", s.skip_first, s.wait,
	         s.warmup, s.active, s.repeat);
	tkc_schedule t = {0};
	FZ_CHECK(WHO, tkc_parse_schedule(canon, &t, err, sizeof err) == 0 && memcmp(&s, &t, sizeof s) == 0,
	         "TK_SCHEDULE '%s' written back as '%s' reads differently", v, canon);
	uint64_t cycle = (uint64_t)s.wait + (uint64_t)s.warmup + (uint64_t)s.active;
	uint64_t steps[6] = {0, 1, (uint64_t)s.skip_first, (uint64_t)s.skip_first + cycle - 1,
	                     (uint64_t)s.skip_first + (uint64_t)s.repeat * cycle, UINT64_MAX};
	for (int i = 0; i < 6; i++) {
		int a = tkc_schedule_action(&s, steps[i]);
		FZ_CHECK(WHO, a == TKC_SCHED_NONE || a == TKC_SCHED_WARMUP || a == TKC_SCHED_RECORD,
		         "TK_SCHEDULE '%s': action %d at step %llu", v, a, (unsigned long long)steps[i]);
		if (s.repeat > 0 && steps[i] >= (uint64_t)s.skip_first + (uint64_t)s.repeat * cycle &&
		    steps[i] - (uint64_t)s.skip_first >= (uint64_t)s.repeat * cycle)
			FZ_CHECK(WHO, a == TKC_SCHED_NONE, "TK_SCHEDULE '%s' records at step %llu, after its repeats", v,
			         (unsigned long long)steps[i]);
	}
}

/* A rank is in a list exactly when it is in one of its comma-separated items. */
static void check_ranks(const char *list)
{
	size_t n = strlen(list);
	char *buf = malloc(n + 32);
	if (!buf)
		return;
	static const int64_t probes[] = {0, 1, 3, 7, 100, 999999999, 1000000000, -1};
	for (size_t k = 0; k < sizeof probes / sizeof *probes; k++) {
		int64_t r = probes[k];
		int whole = tkc_rank_in_list(list, r), any = 0;
		for (const char *p = list;; p++) {
			const char *e = strchr(p, ',');
			size_t len = e ? (size_t)(e - p) : strlen(p);
			memcpy(buf, p, len);
			buf[len] = 0;
			any |= tkc_rank_in_list(buf, r);
			if (!e)
				break;
			p = e;
		}
		FZ_CHECK(WHO, whole == any, "TK_RANKS '%s' %s rank %lld, its items %s", list, whole ? "selects" : "leaves out",
		         (long long)r, any ? "select it" : "do not");
		if (r >= 0 && r <= 999999999) {
			snprintf(buf, n + 32, "%s,%lld", list, (long long)r);
			FZ_CHECK(WHO, tkc_rank_in_list(buf, r) == 1, "TK_RANKS '%s' leaves out its own rank %lld", buf,
			         (long long)r);
		}
	}
	free(buf);
}

static void environment(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1);
	if (!text)
		return;
	memcpy(text, data, size);
	text[size] = 0;
	memset(env_values, 0, sizeof env_values);
	for (char *line = text, *next; line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = 0;
		char *eq = strchr(line, '=');
		if (!eq)
			continue;
		*eq = 0;
		for (size_t i = 0; i < N_ENV; i++)
			if (strcmp(line, env_names[i]) == 0)
				env_values[i] = eq + 1;
	}
	tkc_config c;
	char err[256] = "";
	int rc = tkc_config_read(&c, fake_getenv, err, sizeof err);
	FZ_CHECK(WHO, (rc == -1 && err[0]) || (rc == 0 && !err[0]), "tkc_config_read returns %d with message '%s'", rc,
	         err);
	FZ_CHECK(WHO, c.buffer_size >= (64u << 10) && c.buffer_size % 8 == 0, "buffer size %zu", c.buffer_size);
	FZ_CHECK(WHO, c.max_buffers >= 2, "%u buffers", c.max_buffers);
	FZ_CHECK(WHO, (c.compress == 0 || c.compress == 1) && (c.signals == 0 || c.signals == 1),
	         "compress %d, signals %d", c.compress, c.signals);
	FZ_CHECK(WHO, c.rank >= -1 && c.world_size >= -1, "rank %lld, world size %lld", (long long)c.rank,
	         (long long)c.world_size);
	FZ_CHECK(WHO, (c.activities & ~(unsigned)TKC_A_ALL) == 0, "activities %#x", c.activities);
	FZ_CHECK(WHO, c.rank_selected == 0 || c.rank_selected == 1, "rank_selected %d", c.rank_selected);
	FZ_CHECK(WHO, c.capture_profiler_api == 0 || c.capture_profiler_api == 1, "capture %d", c.capture_profiler_api);
	const char *dir = env("TK_OUTPUT_DIR"), *steps = env("TK_STEP_RANGE");
	FZ_CHECK(WHO, dir ? strncmp(c.out_dir, dir, sizeof c.out_dir - 1) == 0 : strcmp(c.out_dir, ".") == 0,
	         "output directory '%s'", c.out_dir);
	FZ_CHECK(WHO, steps ? strncmp(c.step_range, steps, sizeof c.step_range - 1) == 0
	                    : strcmp(c.step_range, "ProfilerStep#*") == 0,
	         "step range '%s'", c.step_range);
	if (env("TK_ACTIVITIES"))
		check_activities(env("TK_ACTIVITIES"));
	if (env("TK_SCHEDULE"))
		check_schedule(env("TK_SCHEDULE"), &c);
	else
		FZ_CHECK(WHO, !c.sched.on, "a schedule without TK_SCHEDULE");
	if (env("TK_RANKS"))
		check_ranks(env("TK_RANKS"));
	char path[2048];
	for (size_t cap = 8; cap <= sizeof path; cap *= 4) {
		memset(path, 'x', sizeof path);
		int o = tkc_output_path(&c, path, cap);
		FZ_CHECK(WHO, o == -1 || (o == 0 && strlen(path) < cap && strncmp(path, c.out_dir, strlen(c.out_dir)) == 0),
		         "output path '%.*s' in %zu bytes", (int)cap, path, cap);
	}
	free(text);
}

/* ---- CUPTI records ---- */

typedef struct rd {
	const uint8_t *p;
	size_t n;
	int utf8_ok; /* every string read so far is valid UTF-8 */
	char *strs[2 * MAX_RECORDS];
	size_t n_strs;
} rd;

static unsigned rd_byte(rd *r)
{
	if (!r->n)
		return 0;
	r->n--;
	return *r->p++;
}

/* Strict UTF-8 (no overlong forms, surrogates or values past U+10FFFF). */
static int utf8_valid(const unsigned char *s, size_t n)
{
	for (size_t i = 0; i < n;) {
		unsigned c = s[i];
		size_t k = c < 0x80 ? 0 : (c & 0xe0) == 0xc0 ? 1 : (c & 0xf0) == 0xe0 ? 2 : (c & 0xf8) == 0xf0 ? 3 : 9;
		if (k == 9 || (k && i + k >= n))
			return 0;
		uint32_t v = k ? c & (0x3f >> k) : c;
		for (size_t j = 1; j <= k; j++) {
			if ((s[i + j] & 0xc0) != 0x80)
				return 0;
			v = v << 6 | (s[i + j] & 0x3f);
		}
		static const uint32_t least[4] = {0, 0x80, 0x800, 0x10000};
		if (v < least[k] || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff))
			return 0;
		i += k + 1;
	}
	return 1;
}

/* A string a record points to: a length byte (255: 255 + 16 * the next
 * byte) and that many bytes, up to a NUL; NULL for length 0 when null is
 * allowed. The string lives until the input is done. */
static const char *rd_str(rd *r, int null_ok)
{
	size_t len = rd_byte(r);
	if (len == 255)
		len += 16 * rd_byte(r);
	if (!len && null_ok)
		return NULL;
	if (len > r->n)
		len = r->n;
	char *s = r->n_strs < sizeof r->strs / sizeof *r->strs ? malloc(len + 1) : NULL;
	if (!s)
		return "";
	memcpy(s, r->p, len);
	s[len] = 0;
	r->p += len;
	r->n -= len;
	r->strs[r->n_strs++] = s;
	if (!utf8_valid((const unsigned char *)s, strlen(s)))
		r->utf8_ok = 0;
	return s;
}

static const struct {
	CUpti_ActivityKind kind;
	size_t size;
} kinds[] = {
	{CUPTI_ACTIVITY_KIND_KERNEL, sizeof(CUpti_ActivityKernel10)},
	{CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, sizeof(CUpti_ActivityKernel10)},
	{CUPTI_ACTIVITY_KIND_MEMCPY, sizeof(CUpti_ActivityMemcpy6)},
	{CUPTI_ACTIVITY_KIND_MEMSET, sizeof(CUpti_ActivityMemset4)},
	{CUPTI_ACTIVITY_KIND_RUNTIME, sizeof(CUpti_ActivityAPI)},
	{CUPTI_ACTIVITY_KIND_DRIVER, sizeof(CUpti_ActivityAPI)},
	{CUPTI_ACTIVITY_KIND_SYNCHRONIZATION, sizeof(CUpti_ActivitySynchronization2)},
	{CUPTI_ACTIVITY_KIND_OVERHEAD, sizeof(CUpti_ActivityOverhead3)},
	{CUPTI_ACTIVITY_KIND_MARKER, sizeof(CUpti_ActivityMarker2)},
	{CUPTI_ACTIVITY_KIND_MARKER, sizeof(CUpti_ActivityMarker2)},
	{CUPTI_ACTIVITY_KIND_CONTEXT, sizeof(CUpti_ActivityContext3)},
	{CUPTI_ACTIVITY_KIND_DEVICE, sizeof(CUpti_Activity)},
};
#define N_KINDS (sizeof kinds / sizeof *kinds)

/* API names as the collector's callback gives them: a few known, the rest unknown. */
static const char *api_name(void *ud, CUpti_CallbackDomain dom, uint32_t cbid)
{
	static const char *const names[] = {"cudaLaunchKernel", "cuLaunchKernel", "cudaMemcpyAsync",
	                                    "cudaStreamSynchronize"};
	(void)ud;
	return cbid % 5 == 4 ? NULL : names[(cbid + (unsigned)dom) % 4];
}

/* The next record in a buffer of its own; NULL at the end of the input. */
static CUpti_Activity *next_record(rd *r, void *buf)
{
	if (!r->n)
		return NULL;
	unsigned sel = rd_byte(r); /* 0x80: a marker's id is kept below 8 */
	size_t size = kinds[(sel & 0x7f) % N_KINDS].size, k = size < r->n ? size : r->n;
	memset(buf, 0, size);
	memcpy(buf, r->p, k);
	r->p += k;
	r->n -= k;
	CUpti_Activity *rec = buf;
	rec->kind = kinds[(sel & 0x7f) % N_KINDS].kind;
	if (rec->kind == CUPTI_ACTIVITY_KIND_KERNEL || rec->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) {
		((CUpti_ActivityKernel10 *)buf)->name = rd_str(r, 1);
	} else if (rec->kind == CUPTI_ACTIVITY_KIND_MARKER) {
		CUpti_ActivityMarker2 *m = buf;
		if (sel & 0x80) /* ids of a few values, so that starts meet their ends */
			m->id &= 7;
		m->name = rd_str(r, 1);
		m->domain = rd_str(r, 1);
	}
	return rec;
}

/* Reads fd back and compares with evs: same count, no error, no warning;
 * equal events when exact. */
static void read_back(const char *what, int fd, const fz_events *evs, int exact)
{
	tk_reader *r = NULL;
	tk_reader_opts ro = {.strict = 1, .max_value_bytes = 1 << 20};
	const tk_event *ev;
	lseek(fd, 0, SEEK_SET);
	int rc = tk_reader_open_fd(&r, fd, what, &ro);
	size_t n = 0;
	while (rc == TK_OK && (rc = tk_reader_next(r, &ev)) == TK_OK) {
		FZ_CHECK(WHO, n < evs->n, "the %s file has more events than were converted", what);
		FZ_CHECK(WHO, !exact || tk_event_equal(ev, evs->v[n]),
		         "the %s file's event %zu differs from the converted one (name '%.*s', args %.*s)", what, n,
		         (int)evs->v[n]->name.len, evs->v[n]->name.ptr ? evs->v[n]->name.ptr : "", (int)evs->v[n]->args.len,
		         evs->v[n]->args.ptr ? evs->v[n]->args.ptr : "");
		n++;
	}
	FZ_CHECK(WHO, rc == TK_EOF, "the %s file fails after %zu events: %s", what, n, r ? tk_reader_error(r) : "");
	FZ_CHECK(WHO, n == evs->n, "the %s file has %zu of %zu events", what, n, evs->n);
	FZ_CHECK(WHO, !tk_reader_warning(r, 0) && (!exact || !tk_reader_get_stats(r)->repaired_strings),
	         "the %s file reads with a warning: %s", what, tk_reader_warning(r, 0) ? tk_reader_warning(r, 0) : "repaired strings");
	tk_reader_free(r);
}

static void records(const uint8_t *data, size_t size)
{
	rd r = {data, size, 1, {0}, 0};
	tkc_conv conv;
	if (tkc_conv_init(&conv, 4242, api_name, NULL))
		return;
	fz_events evs = {0};
	_Alignas(16) unsigned char buf[1024];
	_Static_assert(sizeof(CUpti_ActivityKernel10) <= sizeof buf && sizeof(CUpti_ActivityMarker2) <= sizeof buf,
	               "a record does not fit");
	tk_event ev;
	CUpti_Activity *rec;
	int ok = 1;
	/* the default keeps, of the driver calls, those that launch (of this
	 * harness's names only cuLaunchKernel) and those with no name */
	conv.driver_launch_only = (int)(size >> 1 & 1);
	size_t drv_want = 0, drv_got = 0;
	for (size_t i = 0; ok && i < MAX_RECORDS && (rec = next_record(&r, buf)); i++) {
		if (rec->kind == CUPTI_ACTIVITY_KIND_DRIVER) {
			const char *nm = api_name(NULL, CUPTI_CB_DOMAIN_DRIVER_API, ((CUpti_ActivityAPI *)rec)->cbid);
			drv_want += !conv.driver_launch_only || !nm || !strcmp(nm, "cuLaunchKernel");
		}
		if (tkc_convert(&conv, rec, &ev) == 1) {
			drv_got += rec->kind == CUPTI_ACTIVITY_KIND_DRIVER;
			ok = fz_events_push(&evs, &ev) == 0;
		}
	}
	FZ_CHECK(WHO, !ok || drv_got == drv_want, "%zu driver calls converted, %zu expected (launches only: %d)", drv_got,
	         drv_want, conv.driver_launch_only);
	while (ok && tkc_conv_drain_open(&conv, &ev))
		ok = fz_events_push(&evs, &ev) == 0;
	if (ok) {
		tkc_conv_dropped(&conv, (int64_t)(size * 1000), (uint32_t)size, size, &ev);
		ok = fz_events_push(&evs, &ev) == 0;
	}
	tkc_conv_free(&conv);
	int exact = r.utf8_ok, json = 1; /* names and args filling the converter's buffers are cut
	                                   * between characters and stay JSON: compared too */
	/* (1) the collector's .tkb: events batched in a small buffer, chunks appended */
	int fd = ok ? memfd_create(WHO, 0) : -1;
	tk_tkb_writer *tw = NULL;
	tk_tkb_buf *tb = tk_tkb_buf_new(16, 4096);
	tk_tkb_anchor a0 = {1000, 1700000000000000000, 5000}, a1 = {2000, 1700000000000001000, 6000};
	tk_tkb_header h = {TKC_PRODUCER, "fuzzhost", 4242, 3, 8, &a0};
	tk_tkb_opts to = {size & 1, 1, 2048};
	if (fd >= 0 && tb && tk_tkb_writer_open_fd(&tw, fd, "(memfd)", &h, &to) == TK_OK) {
		int rc = TK_OK;
		for (size_t i = 0; rc == TK_OK && i < evs.n; i++) {
			rc = tk_tkb_buf_append(tb, evs.v[i]);
			if (rc == TK_ERR_LIMIT && (rc = tk_tkb_writer_submit(tw, tb)) == TK_OK)
				rc = tk_tkb_buf_append(tb, evs.v[i]);
			FZ_CHECK(WHO, rc == TK_OK || rc == TK_ERR_NOMEM || (rc == TK_ERR_LIMIT && tk_tkb_buf_count(tb) == 0),
			         "event %zu is refused by the collector's buffer: %s", i, tk_strerror(rc));
			if (rc == TK_ERR_LIMIT) { /* larger than the whole arena: the sink drops it, so the check does */
				tk_event_free(evs.v[i]);
				memmove(&evs.v[i], &evs.v[i + 1], (evs.n - i - 1) * sizeof *evs.v);
				evs.n--;
				i--;
				rc = TK_OK;
			}
		}
		if (rc == TK_OK && tk_tkb_buf_count(tb))
			rc = tk_tkb_writer_submit(tw, tb);
		FZ_CHECK(WHO, rc == TK_OK || rc == TK_ERR_NOMEM, "the collector's writer fails: %s", tk_tkb_writer_error(tw));
		rc = rc ? rc : tk_tkb_writer_close(tw, &a1);
		FZ_CHECK(WHO, rc == TK_OK || rc == TK_ERR_NOMEM, "the collector's writer fails: %s", tk_tkb_writer_error(tw));
		if (rc == TK_OK)
			read_back(".tkb", fd, &evs, exact);
	}
	tk_tkb_writer_free(tw);
	tk_tkb_buf_free(tb);
	if (fd >= 0)
		close(fd);
	/* (2) JSON */
	fd = ok ? memfd_create(WHO, 0) : -1;
	tk_writer *w = NULL;
	tk_writer_opts wo = {.format = TK_FORMAT_JSON};
	if (fd >= 0 && tk_writer_open_fd(&w, fd, "(memfd)", &wo) == TK_OK) {
		int rc = TK_OK;
		for (size_t i = 0; rc == TK_OK && i < evs.n; i++)
			rc = tk_writer_write(w, evs.v[i]);
		FZ_CHECK(WHO, rc == TK_OK || rc == TK_ERR_NOMEM, "a converted event is refused by the JSON writer: %s",
		         tk_writer_error(w));
		rc = rc ? rc : tk_writer_close(w);
		FZ_CHECK(WHO, rc == TK_OK || rc == TK_ERR_NOMEM, "the JSON writer fails: %s", tk_writer_error(w));
		if (rc == TK_OK && json)
			read_back("JSON", fd, &evs, exact);
	}
	tk_writer_free(w);
	if (fd >= 0)
		close(fd);
	fz_events_free(&evs);
	for (size_t i = 0; i < r.n_strs; i++)
		free(r.strs[i]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* the version suffix the collector strips from API names */
	char name[64], out[32];
	size_t k = size < sizeof name - 1 ? size : sizeof name - 1;
	memcpy(name, data, k);
	name[k] = 0;
	tkc_strip_version(name, out, sizeof out);
	FZ_CHECK(WHO, strlen(out) < sizeof out && strncmp(out, name, strlen(out)) == 0,
	         "'%s' without its version is '%s'", name, out);
	if (size >= sizeof ENV_MAGIC - 1 && memcmp(data, ENV_MAGIC, sizeof ENV_MAGIC - 1) == 0)
		environment(data + sizeof ENV_MAGIC - 1, size - (sizeof ENV_MAGIC - 1));
	else
		records(data, size);
	return 0;
}

#ifndef TK_LIBFUZZER
#include "fuzz_files.h"

/* ---- fuzz_collector --make-seeds DIR: record seeds, built from the structs ---- */

static void put_rec(FILE *f, unsigned sel, const void *rec, size_t size)
{
	fputc((int)sel, f);
	fwrite(rec, 1, size, f);
}

static void put_str(FILE *f, const char *s)
{
	size_t n = strlen(s);
	if (n < 255) {
		fputc((int)n, f);
	} else { /* 255 + 16 * k, padded with spaces */
		size_t k = (n - 255 + 15) / 16;
		fputc(255, f);
		fputc((int)k, f);
		fwrite(s, 1, n, f);
		for (size_t i = n; i < 255 + 16 * k; i++)
			fputc(' ', f);
		return;
	}
	fwrite(s, 1, n, f);
}

static unsigned sel_of(CUpti_ActivityKind kind)
{
	for (unsigned i = 0; i < N_KINDS; i++)
		if (kinds[i].kind == kind)
			return i;
	return 0;
}

static int make_seeds(const char *dir)
{
	char path[1024];
	snprintf(path, sizeof path, "%s/records-gpu.bin", dir);
	FILE *f = fopen(path, "wb");
	if (!f)
		return 1;
	CUpti_ActivityContext3 x;
	memset(&x, 0, sizeof x);
	x.kind = CUPTI_ACTIVITY_KIND_CONTEXT;
	x.contextId = 1;
	x.deviceId = 0;
	put_rec(f, sel_of(CUPTI_ACTIVITY_KIND_CONTEXT), &x, sizeof x);
	CUpti_ActivityKernel10 k;
	memset(&k, 0, sizeof k);
	k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
	k.start = 1700000000000001000ull;
	k.end = k.start + 4321;
	k.contextId = 1;
	k.streamId = 7;
	k.gridX = 132, k.gridY = 2, k.gridZ = 1;
	k.blockX = 256, k.blockY = 1, k.blockZ = 1;
	k.registersPerThread = 72;
	k.staticSharedMemory = 1024;
	k.correlationId = 5;
	put_rec(f, sel_of(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL), &k, sizeof k);
	put_str(f, "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>(int, at::native::FillFunctor<float>)");
	k.graphId = 3;
	k.correlationId = 6;
	put_rec(f, sel_of(CUPTI_ACTIVITY_KIND_KERNEL), &k, sizeof k);
	put_str(f, "ampere_sgemm_128x64_tn");
	CUpti_ActivityMemcpy6 m;
	memset(&m, 0, sizeof m);
	m.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
	m.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_HTOD;
	m.srcKind = CUPTI_ACTIVITY_MEMORY_KIND_PINNED;
	m.dstKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
	m.bytes = 1 << 20;
	m.start = 1700000000000000500ull;
	m.end = m.start + 65536;
	m.contextId = 1, m.streamId = 13, m.correlationId = 7;
	put_rec(f, sel_of(CUPTI_ACTIVITY_KIND_MEMCPY), &m, sizeof m);
	CUpti_ActivityMemset4 ms;
	memset(&ms, 0, sizeof ms);
	ms.kind = CUPTI_ACTIVITY_KIND_MEMSET;
	ms.bytes = 4096;
	ms.start = 1700000000000000600ull;
	ms.end = ms.start + 3000;
	ms.contextId = 1, ms.streamId = 7, ms.correlationId = 8;
	ms.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
	put_rec(f, sel_of(CUPTI_ACTIVITY_KIND_MEMSET), &ms, sizeof ms);
	CUpti_ActivityAPI a;
	memset(&a, 0, sizeof a);
	a.kind = CUPTI_ACTIVITY_KIND_RUNTIME;
	a.cbid = 211;
	a.start = 1700000000000000100ull;
	a.end = a.start + 15;
	a.processId = 999, a.threadId = 1001, a.correlationId = 5;
	put_rec(f, sel_of(CUPTI_ACTIVITY_KIND_RUNTIME), &a, sizeof a);
	a.kind = CUPTI_ACTIVITY_KIND_DRIVER;
	a.cbid = 9999;
	a.returnValue = 1;
	put_rec(f, sel_of(CUPTI_ACTIVITY_KIND_DRIVER), &a, sizeof a);
	CUpti_ActivitySynchronization2 sy;
	memset(&sy, 0, sizeof sy);
	sy.kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
	sy.type = CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE;
	sy.start = 1700000000000002000ull;
	sy.end = sy.start + 80;
	sy.contextId = 1, sy.streamId = CUPTI_SYNCHRONIZATION_INVALID_VALUE, sy.cudaEventId = 3, sy.correlationId = 9;
	put_rec(f, sel_of(CUPTI_ACTIVITY_KIND_SYNCHRONIZATION), &sy, sizeof sy);
	CUpti_ActivityOverhead3 o;
	memset(&o, 0, sizeof o);
	o.kind = CUPTI_ACTIVITY_KIND_OVERHEAD;
	o.overheadKind = CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH;
	o.objectKind = CUPTI_ACTIVITY_OBJECT_THREAD;
	o.start = 1700000000000003000ull;
	o.end = o.start + 500;
	put_rec(f, sel_of(CUPTI_ACTIVITY_KIND_OVERHEAD), &o, sizeof o);
	CUpti_Activity u = {CUPTI_ACTIVITY_KIND_DEVICE};
	put_rec(f, sel_of(CUPTI_ACTIVITY_KIND_DEVICE), &u, sizeof u);
	fclose(f);

	snprintf(path, sizeof path, "%s/records-nvtx.bin", dir);
	if (!(f = fopen(path, "wb")))
		return 1;
	CUpti_ActivityMarker2 mk;
	static const struct {
		unsigned flags, id;
		const char *name, *domain;
	} marks[] = {
		{CUPTI_ACTIVITY_FLAG_MARKER_START, 1, "ProfilerStep#3", ""},
		{CUPTI_ACTIVITY_FLAG_MARKER_START, 2, "forward \"q\"\t\xc3\xa9", "my domain"},
		{CUPTI_ACTIVITY_FLAG_MARKER_INSTANTANEOUS, 3, "mark", ""},
		{CUPTI_ACTIVITY_FLAG_MARKER_END, 2, "", ""},
		{CUPTI_ACTIVITY_FLAG_MARKER_END, 1, "", ""},
		{CUPTI_ACTIVITY_FLAG_MARKER_END, 6, "", ""}, /* an end without its start */
		{CUPTI_ACTIVITY_FLAG_MARKER_START, 5, "never ended", "d"},
	};
	for (size_t i = 0; i < sizeof marks / sizeof *marks; i++) {
		memset(&mk, 0, sizeof mk);
		mk.kind = CUPTI_ACTIVITY_KIND_MARKER;
		mk.flags = marks[i].flags;
		mk.timestamp = 1700000000000000000ull + 1000 * i;
		mk.id = marks[i].id;
		mk.objectKind = CUPTI_ACTIVITY_OBJECT_THREAD;
		mk.objectId.pt.processId = 4242;
		mk.objectId.pt.threadId = 17;
		put_rec(f, sel_of(CUPTI_ACTIVITY_KIND_MARKER) | 0x80, &mk, sizeof mk);
		put_str(f, marks[i].name);
		put_str(f, marks[i].domain);
	}
	fclose(f);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], "--make-seeds") == 0)
		return make_seeds(argv[2]);
	int rc = tk_fuzz_files(argc, argv, NULL);
	printf(WHO ": %d inputs ran\n", argc - 1);
	return rc;
}
#endif
