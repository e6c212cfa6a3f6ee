/* sqlite.c: SQLite output (.sqlite): tables shaped like Perfetto's trace_processor (process, thread, track, slice, args, flow, counter, metadata), written in one transaction through prepared statements; docs/sql.md is the schema. */
#define _GNU_SOURCE /* memmem */
#include <errno.h>
#include <math.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

#include "core/jscan.h"
#include "core/json_text.h"
#include "core/strtab.h"
#include "core/tmpreg.h"
#include "formats/formats.h"
#include "procs.h"
#include "tracekit/merge.h"
#include "tracekit/sort.h"

#define GROUP_MAX 4096        /* events of one timestamp ordered together */
#define DEFAULT_MEMORY (64u << 20) /* the sorter's and SQLite's page cache's, when no budget is given */

static const char SCHEMA[] =
	"CREATE TABLE metadata(name TEXT, int_value INTEGER, str_value TEXT);"
	"CREATE TABLE process(upid INTEGER PRIMARY KEY, pid, name TEXT, labels TEXT, sort_index INTEGER,"
	" rank INTEGER);"
	"CREATE TABLE thread(utid INTEGER PRIMARY KEY, tid, name TEXT, upid INTEGER, sort_index INTEGER);"
	"CREATE TABLE track(id INTEGER PRIMARY KEY, name TEXT, type TEXT, utid INTEGER, upid INTEGER);"
	"CREATE TABLE slice(id INTEGER PRIMARY KEY, ts INTEGER, dur INTEGER, track_id INTEGER, category TEXT,"
	" name TEXT, depth INTEGER, parent_id INTEGER, arg_set_id INTEGER);"
	"CREATE TABLE arg_key(id INTEGER PRIMARY KEY, flat_key TEXT, key TEXT, value_type TEXT);"
	"CREATE TABLE arg(arg_set_id INTEGER, n INTEGER, key_id INTEGER, value,"
	" PRIMARY KEY(arg_set_id, n)) WITHOUT ROWID;"
	"CREATE TABLE flow(id INTEGER PRIMARY KEY, slice_out INTEGER, slice_in INTEGER, category TEXT,"
	" name TEXT, arg_set_id INTEGER);"
	"CREATE TABLE counter(id INTEGER PRIMARY KEY, ts INTEGER, track_id INTEGER, value);"
	"CREATE TABLE meta_event(id INTEGER PRIMARY KEY, ts INTEGER, pid, tid, name TEXT, arg_set_id INTEGER);"
	"CREATE VIEW args AS SELECT a.arg_set_id AS arg_set_id, k.flat_key AS flat_key, k.key AS key,"
	" CASE WHEN k.value_type IN ('int', 'bool') THEN a.value END AS int_value,"
	" CASE WHEN k.value_type IN ('string', 'json') THEN a.value END AS string_value,"
	" CASE WHEN k.value_type = 'real' THEN a.value END AS real_value,"
	" k.value_type AS value_type,"
	" CASE k.value_type WHEN 'bool' THEN CASE a.value WHEN 1 THEN 'true' ELSE 'false' END"
	" WHEN 'null' THEN 'null' ELSE CAST(a.value AS TEXT) END AS display_value"
	" FROM arg a JOIN arg_key k ON k.id = a.key_id;"
	"CREATE VIEW thread_track AS SELECT id, name, type, utid FROM track WHERE type = 'thread';"
	"CREATE VIEW counter_track AS SELECT id, name, type, upid FROM track WHERE type = 'process_counter';"
	"CREATE VIEW process_counter_track AS SELECT id, name, type, upid FROM track"
	" WHERE type = 'process_counter';";

/* Views in the shape of Nsight Systems' export (nsys export --type sqlite),
 * as far as Kineto's data reaches; names go through StringIds. */
#define ARG(key)                                                                                              \
	"(SELECT a.value FROM arg a JOIN arg_key q ON q.id = a.key_id WHERE a.arg_set_id = s.arg_set_id AND q.key = '" \
	key "')"
#define FROM_SLICES                                                                                           \
	" FROM slice s JOIN track k ON k.id = s.track_id JOIN thread t ON t.utid = k.utid"                      \
	" JOIN process p ON p.upid = t.upid LEFT JOIN StringIds n ON n.value = s.name"
#define DEVICE_COLUMNS                                                                                        \
	"SELECT s.ts AS start, s.ts + s.dur AS end, " ARG("device") " AS deviceId, " ARG("context")            \
	" AS contextId, " ARG("stream") " AS streamId, " ARG("correlation") " AS correlationId, p.pid AS globalPid, "

static const char NSYS[] =
	"CREATE TABLE StringIds(id INTEGER PRIMARY KEY, value TEXT UNIQUE);"
	"CREATE VIEW CUPTI_ACTIVITY_KIND_KERNEL AS " DEVICE_COLUMNS
	"n.id AS demangledName, n.id AS shortName, NULL AS mangledName, "
	ARG("registers per thread") " AS registersPerThread, "
	ARG("grid[0]") " AS gridX, " ARG("grid[1]") " AS gridY, " ARG("grid[2]") " AS gridZ, "
	ARG("block[0]") " AS blockX, " ARG("block[1]") " AS blockY, " ARG("block[2]") " AS blockZ, "
	ARG("shared memory") " AS staticSharedMemory, NULL AS dynamicSharedMemory, p.rank AS rank, s.id AS slice_id"
	FROM_SLICES " WHERE s.category IN ('kernel', 'Kernel', 'mtia_ccp_events');"
	"CREATE VIEW CUPTI_ACTIVITY_KIND_MEMCPY AS " DEVICE_COLUMNS
	ARG("bytes") " AS bytes, CASE substr(s.name, 1, 11) WHEN 'Memcpy HtoD' THEN 1 WHEN 'Memcpy DtoH' THEN 2"
	" WHEN 'Memcpy DtoD' THEN 8 WHEN 'Memcpy HtoH' THEN 9 WHEN 'Memcpy PtoP' THEN 10 ELSE 0 END AS copyKind,"
	" n.id AS nameId, p.rank AS rank, s.id AS slice_id"
	FROM_SLICES " WHERE s.category IN ('gpu_memcpy', 'Memcpy');"
	"CREATE VIEW CUPTI_ACTIVITY_KIND_MEMSET AS " DEVICE_COLUMNS
	ARG("bytes") " AS bytes, NULL AS value, n.id AS nameId, p.rank AS rank, s.id AS slice_id"
	FROM_SLICES " WHERE s.category IN ('gpu_memset', 'Memset');"
	"CREATE VIEW CUPTI_ACTIVITY_KIND_RUNTIME AS SELECT s.ts AS start, s.ts + s.dur AS end, t.tid AS globalTid, "
	ARG("correlation") " AS correlationId, n.id AS nameId, " ARG("cbid") " AS cbid, p.pid AS globalPid,"
	" p.rank AS rank, s.id AS slice_id"
	FROM_SLICES " WHERE s.category IN ('cuda_runtime', 'cuda_driver', 'Runtime', 'mtia_runtime', 'privateuse1_runtime');"
	"CREATE VIEW NVTX_EVENTS AS SELECT s.ts AS start, s.ts + s.dur AS end, 59 AS eventType, s.id AS rangeId,"
	" NULL AS category, s.name AS text, n.id AS textId, t.tid AS globalTid, p.pid AS globalPid,"
	" p.rank AS rank, s.id AS slice_id"
	FROM_SLICES " WHERE s.category = 'user_annotation';"
	"CREATE VIEW TARGET_INFO_GPU AS SELECT json_extract(d.value, '$.id') AS id,"
	" json_extract(d.value, '$.name') AS name, json_extract(d.value, '$.totalGlobalMem') AS totalMemory,"
	" json_extract(d.value, '$.numSms') AS smCount,"
	" json_extract(d.value, '$.computeMajor') AS computeMajor, json_extract(d.value, '$.computeMinor') AS computeMinor,"
	" json_extract(d.value, '$.maxThreadsPerBlock') AS maxThreadsPerBlock,"
	" json_extract(d.value, '$.sharedMemPerBlock') AS sharedMemPerBlock, d.value AS properties"
	" FROM metadata m, json_each(m.str_value) d WHERE m.name = 'deviceProperties' AND json_valid(m.str_value);";

static const char INDEXES[] =
	"CREATE INDEX slice_track_ts ON slice(track_id, ts);"
	"CREATE INDEX slice_name ON slice(name);"
	"CREATE INDEX slice_parent ON slice(parent_id);"
	"CREATE INDEX flow_out ON flow(slice_out);"
	"CREATE INDEX flow_in ON flow(slice_in);"
	"CREATE INDEX counter_track_ts ON counter(track_id, ts);"
	"INSERT INTO StringIds(value) SELECT DISTINCT name FROM slice WHERE name IS NOT NULL;";

enum { Q_SLICE, Q_END, Q_ARG, Q_KEY, Q_FLOW, Q_COUNTER, Q_META_EVENT, Q_N };
static const char *const QUERIES[Q_N] = {
	"INSERT INTO slice VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
	"UPDATE slice SET dur = ?2, arg_set_id = ?3 WHERE id = ?1",
	"INSERT INTO arg VALUES(?1, ?2, ?3, ?4)",
	"INSERT INTO arg_key VALUES(?1, ?2, ?3, ?4)",
	"INSERT INTO flow(slice_out, slice_in, category, name, arg_set_id) VALUES(?1, ?2, ?3, ?4, ?5)",
	"INSERT INTO counter(ts, track_id, value) VALUES(?1, ?2, ?3)",
	"INSERT INTO meta_event(ts, pid, tid, name, arg_set_id) VALUES(?1, ?2, ?3, ?4, ?5)",
};

typedef struct sopen { /* a slice open on a thread */
	int64_t id, ts, end, depth; /* end INT64_MAX: a B waiting for its E */
	int64_t args;           /* its arg set (an E adds to a B's) */
	int64_t n_args;
} sopen;

typedef struct sthr { /* a thread; its track's id is its index + 1 */
	TK__THR_BASE;
	int64_t last_id, last_ts; /* the slice that began last (a flow at its start binds to it, even at dur 0) */
	sopen *open;
	size_t n_open, open_cap;
	struct spend *pend; /* flows waiting for the thread's next slice (an "f" without "bp":"e") */
	size_t n_pend, pend_cap;
} sthr;

typedef struct aset {
	int64_t id; /* 0 until the first argument */
	int64_t n;
} aset;

typedef struct spend {
	int64_t out;      /* the slice the flow leaves, 0: none */
	tk_sv cat, name;  /* interned in sw.flow_strs */
	aset args;        /* of the event that began it and of the "f" */
} spend;

typedef struct sidx { /* map record: hash (the map's) -> index */
	uint64_t h;
	size_t idx;
} sidx;

typedef struct sflow { /* map record: a flow's key -> the slice it leaves (0: none) */
	uint64_t h;
	int64_t out;
	uint32_t open; /* an "s" in no row yet: its index in sw.fopen + 1; 0 none */
} sflow;

/* An "s" that no "t" or "f" has ended yet: its names and args, for the row
 * that ends it or, at the end, its own. Held only while open: a record
 * goes back to the free list when the flow's row is written. */
typedef struct sfopen {
	tk_sv cat, name;
	aset args;
	uint32_t next_free; /* index + 1 of the next free record, 0 none */
} sfopen;

typedef struct svfs svfs;

typedef struct sw {
	sqlite3 *db;
	svfs *vfs; /* the connection's: its temporary files in tmpdir */
	sqlite3_stmt *q[Q_N];
	tk_sorter *sorter;
	tk__procs pt; /* processes and threads (sthr) */
	tk__map ctr_map, flow_map;
	tk__strtab flow_strs; /* flows' categories and names */
	sfopen *fopen;
	size_t n_fopen, fopen_cap;
	uint32_t fopen_free; /* index + 1 of the first free record, 0 none */
	tk__strtab keys; /* "TYPE\x1fKEY" -> arg_key id - 1 */
	int64_t next_track, next_slice, next_set;
	tk__buf key, flat, val, scratch;
	char *path;
	char **meta_keys;
	size_t n_meta, meta_cap;
} sw;

/* ---- SQLite's temporary files ----
 *
 * SQLite opens its temporary files (the sorting of its index builds, temp
 * tables) through the connection's VFS with no name, for the VFS to name
 * in a directory of its choice. The writer's connection has a VFS of its
 * own: a copy of the default one whose xOpen names each of those files in
 * a directory it makes under tk_writer_opts.tmpdir ($TMPDIR, else /tmp)
 * when the first one is opened, beside the sorter's. The default VFS
 * removes such a file as soon as it has opened it; the directory goes when
 * the writer is freed, and on a signal (core/tmpreg.h). */
struct svfs {
	sqlite3_vfs vfs; /* first: SQLite passes &vfs back */
	sqlite3_vfs *real;
	char name[48];
	char *base;  /* tmpdir (a copy), or NULL */
	char *dir;   /* the directory, once made */
	int hold;    /* its handle in tmpreg */
	unsigned seq;
	char **names; /* every name given: the default VFS keeps it while the file is open */
	size_t n_names, cap_names;
	char err[TK__ERRLEN]; /* why a temporary file could not be made, for db_fail */
};

static int vfs_open(sqlite3_vfs *v, const char *name, sqlite3_file *f, int flags, int *out_flags)
{
	svfs *x = (svfs *)(void *)v;
	if (name || !(flags & SQLITE_OPEN_DELETEONCLOSE))
		return x->real->xOpen(x->real, name, f, flags, out_flags);
	if (!x->dir) {
		int rc = tk__tmp_dir(x->base, "tksql", &x->dir, &x->hold, x->err, sizeof x->err);
		if (rc == TK_ERR_NOMEM)
			x->err[0] = 0; /* db_fail says it */
		if (rc)
			return rc == TK_ERR_NOMEM ? SQLITE_NOMEM : SQLITE_CANTOPEN;
	}
	size_t n = strlen(x->dir) + 16;
	char *path = calloc(1, n); /* ends in two NULs, as the names SQLite makes (no URI parameters) */
	if (!path || tk__grow(&x->names, &x->cap_names, x->n_names + 1, sizeof *x->names, 8)) {
		free(path);
		return SQLITE_NOMEM;
	}
	snprintf(path, n - 1, "%s/t%u", x->dir, x->seq++);
	x->names[x->n_names++] = path;
	int rc = x->real->xOpen(x->real, path, f, flags, out_flags);
	if (rc != SQLITE_OK && rc != SQLITE_NOMEM && !x->err[0])
		snprintf(x->err, sizeof x->err, "cannot create the temporary file %s: %s", path, strerror(errno));
	return rc;
}

/* The connection's VFS, registered under a name of its own (not the
 * default), or NULL (out of memory, or no default VFS). */
static svfs *vfs_new(const char *tmpdir)
{
	sqlite3_vfs *real = sqlite3_vfs_find(NULL);
	svfs *x = real ? calloc(1, sizeof *x) : NULL;
	if (!x || (tmpdir && !(x->base = tk__strdup(tmpdir)))) {
		free(x);
		return NULL;
	}
	/* the default VFS's methods read what they need from the VFS they are
	 * given (its pAppData, mxPathname): a copy serves them */
	x->vfs = *real;
	x->real = real;
	x->vfs.pNext = NULL;
	snprintf(x->name, sizeof x->name, "tracekit-%p", (void *)x);
	x->vfs.zName = x->name;
	x->vfs.xOpen = vfs_open;
	if (sqlite3_vfs_register(&x->vfs, 0) != SQLITE_OK) {
		free(x->base);
		free(x);
		return NULL;
	}
	return x;
}

/* After the connection is closed. */
static void vfs_free(svfs *x)
{
	if (!x)
		return;
	sqlite3_vfs_unregister(&x->vfs);
	tk__tmp_dir_free(x->dir, x->hold); /* its files went as they were opened */
	for (size_t i = 0; i < x->n_names; i++)
		free(x->names[i]);
	free(x->names);
	free(x->base);
	free(x);
}

static const char *vfs_error(const svfs *x)
{
	return x && x->err[0] ? x->err : NULL;
}

/* ---- errors ---- */

static int db_fail(tk_writer *w, int rc)
{
	sw *s = w->fs;
	if (rc == SQLITE_NOMEM)
		return tk__err_set(&w->err, TK_ERR_NOMEM, "out of memory");
	const char *why = vfs_error(s->vfs);
	return tk__err_set(&w->err, TK_ERR_IO, "%s: SQLite: %s", s->path ? s->path : "(output)",
	                   why ? why : s->db ? sqlite3_errmsg(s->db) : sqlite3_errstr(rc));
}

static int nomem(tk_writer *w)
{
	return tk__err_set(&w->err, TK_ERR_NOMEM, "out of memory");
}

/* Runs a prepared statement that returns no rows, and resets it. Text is
 * bound SQLITE_STATIC: every binding is cleared here, before its buffer
 * can change. */
static int step(tk_writer *w, sqlite3_stmt *st)
{
	int rc = sqlite3_step(st);
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	return rc == SQLITE_DONE ? 0 : db_fail(w, rc);
}

static void bind_sv(sqlite3_stmt *st, int i, tk_sv v)
{
	if (v.ptr)
		sqlite3_bind_text(st, i, v.ptr, (int)v.len, SQLITE_STATIC);
	else
		sqlite3_bind_null(st, i);
}

static void bind_id(sqlite3_stmt *st, int i, const tk_id *id)
{
	if (id->kind == TK_ID_INT)
		sqlite3_bind_int64(st, i, id->num);
	else if (id->kind == TK_ID_STR)
		sqlite3_bind_text(st, i, id->str.ptr, (int)id->str.len, SQLITE_STATIC);
	else
		sqlite3_bind_null(st, i);
}

static void bind_opt(sqlite3_stmt *st, int i, int64_t v)
{
	if (v)
		sqlite3_bind_int64(st, i, v);
	else
		sqlite3_bind_null(st, i);
}

/* ---- processes and threads ---- */

/* The thread of (pid, tid), added when new; NULL when out of memory.
 * Records move when one is added: good until the next call. */
static sthr *thr_of(sw *s, const tk_id *pid, const tk_id *tid)
{
	size_t i;
	return tk__procs_thr(&s->pt, pid, tid, &i, NULL) ? NULL : tk__procs_thr_at(&s->pt, i);
}

static int64_t track_of(const sw *s, const sthr *t)
{
	return (int64_t)((const unsigned char *)t - s->pt.thr) / (int64_t)s->pt.thr_size + 1;
}

/* ---- arguments ---- */

/* The arg_key id of (key, flat key, type), inserted when new. */
static int key_id(tk_writer *w, const char *type, int64_t *id)
{
	sw *s = w->fs;
	tk__buf *k = &s->scratch;
	k->len = 0;
	if (tk__buf_puts(k, type) || tk__buf_putc(k, '\x1f') || tk__buf_append(k, s->key.p, s->key.len))
		return nomem(w);
	size_t before = s->keys.n;
	uint32_t i;
	if (!tk__strtab_intern_id(&s->keys, k->p, k->len, &i).ptr)
		return nomem(w);
	*id = (int64_t)i + 1;
	if (s->keys.n == before)
		return 0;
	sqlite3_stmt *st = s->q[Q_KEY];
	sqlite3_bind_int64(st, 1, *id);
	sqlite3_bind_text(st, 2, s->flat.p ? s->flat.p : "", (int)s->flat.len, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, s->key.p ? s->key.p : "", (int)s->key.len, SQLITE_STATIC);
	sqlite3_bind_text(st, 4, type, -1, SQLITE_STATIC);
	return step(w, st);
}

/* One argument: s->key / s->flat name it; `v` is its JSON text (a scalar,
 * {} or []). */
static int put_leaf(tk_writer *w, aset *a, tk_sv v)
{
	sw *s = w->fs;
	sqlite3_stmt *st = s->q[Q_ARG];
	const char *type;
	int64_t n;
	if (!v.len) /* empty text (a caller's event): no value to read */
		return tk__err_set(&w->err, TK_ERR_FORMAT, "an argument is not valid JSON");
	switch (v.ptr[0]) {
	case '"':
		if (tk__js_str_buf(v, &s->val))
			return tk__err_set(&w->err, TK_ERR_FORMAT, "an argument is not valid JSON");
		type = "string";
		sqlite3_bind_text(st, 4, s->val.p ? s->val.p : "", (int)s->val.len, SQLITE_STATIC);
		break;
	case 't':
	case 'f':
		type = "bool";
		sqlite3_bind_int(st, 4, v.ptr[0] == 't');
		break;
	case 'n':
		type = "null";
		sqlite3_bind_null(st, 4);
		break;
	case '{':
	case '[':
		type = "json";
		sqlite3_bind_text(st, 4, v.ptr, (int)v.len, SQLITE_STATIC);
		break;
	default:
		if (tk__js_int(v, &n) == 0) {
			type = "int";
			sqlite3_bind_int64(st, 4, n);
		} else {
			char tmp[64], *end;
			double d = 0;
			if (v.len < sizeof tmp) {
				memcpy(tmp, v.ptr, v.len);
				tmp[v.len] = 0;
				d = strtod(tmp, &end);
			}
			if (v.len < sizeof tmp && !*end && isfinite(d)) {
				type = "real";
				sqlite3_bind_double(st, 4, d);
			} else { /* an integer beyond 64 bits, kept as written */
				type = "json";
				sqlite3_bind_text(st, 4, v.ptr, (int)v.len, SQLITE_STATIC);
			}
		}
	}
	int64_t kid = 0;
	int rc = key_id(w, type, &kid);
	if (rc) {
		sqlite3_clear_bindings(st);
		return rc;
	}
	if (!a->id)
		a->id = ++s->next_set;
	sqlite3_bind_int64(st, 1, a->id);
	sqlite3_bind_int64(st, 2, a->n++);
	sqlite3_bind_int64(st, 3, kid);
	return step(w, st);
}

/* The arguments in JSON value v, under the names s->key / s->flat have. */
static int put_value(tk_writer *w, aset *a, tk_sv v, unsigned depth)
{
	sw *s = w->fs;
	if (!v.len)
		return tk__err_set(&w->err, TK_ERR_FORMAT, "an argument is not valid JSON");
	size_t klen = s->key.len, flen = s->flat.len;
	int rc = 0;
	if (v.ptr[0] == '{' && v.len > 2 && depth < 1000) {
		tk__js_iter it;
		tk_sv k, x;
		if (tk__js_obj(&it, v))
			return tk__err_set(&w->err, TK_ERR_FORMAT, "an argument is not valid JSON");
		while (!rc && (rc = tk__js_member(&it, &k, &x)) == 1) {
			s->key.len = klen;
			s->flat.len = flen;
			if (tk__js_str_buf((tk_sv){k.ptr - 1, k.len + 2}, &s->val))
				return tk__err_set(&w->err, TK_ERR_FORMAT, "an argument name is not valid JSON");
			if ((klen && tk__buf_putc(&s->key, '.')) || tk__buf_append(&s->key, s->val.p, s->val.len) ||
			    (flen && tk__buf_putc(&s->flat, '.')) || tk__buf_append(&s->flat, s->val.p, s->val.len))
				return nomem(w);
			rc = put_value(w, a, x, depth + 1);
		}
		if (rc < 0 && !w->err.code)
			rc = tk__err_set(&w->err, TK_ERR_FORMAT, "an argument is not valid JSON");
	} else if (v.ptr[0] == '[' && v.len > 2 && depth < 1000) {
		const char *p = v.ptr + 1, *e = v.ptr + v.len - 1;
		for (size_t i = 0; !rc && p < e; i++) {
			const char *q = tk__js_skip(p, e);
			if (!q || q == p)
				return tk__err_set(&w->err, TK_ERR_FORMAT, "an argument is not valid JSON");
			s->key.len = klen;
			s->flat.len = flen;
			if (tk__buf_putc(&s->key, '[') || tk__buf_u64(&s->key, i) || tk__buf_putc(&s->key, ']'))
				return nomem(w);
			rc = put_value(w, a, (tk_sv){p, (size_t)(q - p)}, depth + 1);
			p = q < e && *q == ',' ? q + 1 : q;
		}
	} else {
		rc = put_leaf(w, a, v);
	}
	s->key.len = klen;
	s->flat.len = flen;
	return rc < 0 ? rc : 0;
}

/* An event's args (an object, else one argument "args") into set a. */
static int put_args(tk_writer *w, aset *a, tk_sv args)
{
	sw *s = w->fs;
	s->key.len = s->flat.len = 0;
	if (!args.ptr)
		return 0;
	if (args.len && args.ptr[0] == '{')
		return put_value(w, a, args, 0);
	if (tk__buf_puts(&s->key, "args") || tk__buf_puts(&s->flat, "args"))
		return nomem(w);
	return put_leaf(w, a, args);
}

/* One argument of tracekit's own (tk.ph, tk.id) with JSON text v. */
static int put_own(tk_writer *w, aset *a, const char *name, tk_sv v)
{
	sw *s = w->fs;
	s->key.len = s->flat.len = 0;
	if (tk__buf_puts(&s->key, name) || tk__buf_puts(&s->flat, name))
		return nomem(w);
	return put_leaf(w, a, v);
}

static int put_id_arg(tk_writer *w, aset *a, const tk_id *id)
{
	tk__buf b = {0};
	int rc = 0;
	if (id->kind == TK_ID_INT)
		rc = tk__buf_i64(&b, id->num);
	else if (id->kind == TK_ID_STR)
		rc = tk__json_put_str(&b, id->str.ptr, id->str.len);
	if (!rc && b.len)
		rc = put_own(w, a, "tk.id", (tk_sv){b.p, b.len});
	else if (rc)
		rc = nomem(w);
	tk__buf_free(&b);
	return rc;
}

/* ---- pass 1: names, metadata events ---- */

static int take_meta_event(tk_writer *w, const tk_event *ev)
{
	sw *s = w->fs;
	aset a = {0, 0};
	int rc = put_args(w, &a, ev->args);
	if (rc)
		return rc;
	sqlite3_stmt *st = s->q[Q_META_EVENT];
	if (ev->has & TK_HAS_TS)
		sqlite3_bind_int64(st, 1, ev->ts);
	bind_id(st, 2, &ev->pid);
	bind_id(st, 3, &ev->tid);
	bind_sv(st, 4, ev->name);
	bind_opt(st, 5, a.id);
	if ((rc = step(w, st)))
		return rc;
	/* names and sort indexes of processes and threads */
	size_t pi, ti;
	return tk__procs_meta(&s->pt, ev, NULL, &pi, &ti) ? nomem(w) : 0;
}

static int sq_write(tk_writer *w, const tk_event *ev)
{
	sw *s = w->fs;
	size_t i;
	if (ev->ph == 'M')
		return take_meta_event(w, ev);
	/* every thread is known before the events go out: its track id is fixed */
	int rc = ev->ph == 'C' ? tk__procs_proc(&s->pt, &ev->pid, &i, NULL)
	                       : tk__procs_thr(&s->pt, &ev->pid, &ev->tid, &i, NULL);
	if (!rc)
		rc = tk_sorter_add(s->sorter, ev, 0);
	if (rc)
		return tk__err_set(&w->err, rc, "%s", rc == TK_ERR_NOMEM ? "out of memory" : tk_sorter_error(s->sorter));
	return 0;
}

static int sq_add_meta(tk_writer *w, tk_sv key, tk_sv json, int after)
{
	sw *s = w->fs;
	(void)after;
	tk__buf c = {0};
	int rc = tk__json_canon_text(&c, json.ptr, json.len, 0, NULL);
	if (rc) {
		tk__buf_free(&c);
		return rc == TK_ERR_NOMEM ? nomem(w) : tk__err_set(&w->err, rc, "metadata value is not valid JSON");
	}
	sqlite3_stmt *st;
	rc = sqlite3_prepare_v2(s->db, "INSERT INTO metadata VALUES(?1, ?2, ?3)", -1, &st, NULL);
	if (rc) {
		tk__buf_free(&c);
		return db_fail(w, rc);
	}
	int64_t n;
	sqlite3_bind_text(st, 1, key.ptr, (int)key.len, SQLITE_STATIC);
	if (tk__js_int((tk_sv){c.p, c.len}, &n) == 0)
		sqlite3_bind_int64(st, 2, n);
	if (c.len >= 2 && c.p[0] == '"' && !tk__js_str_buf((tk_sv){c.p, c.len}, &s->scratch))
		sqlite3_bind_text(st, 3, s->scratch.p ? s->scratch.p : "", (int)s->scratch.len, SQLITE_STATIC);
	else
		sqlite3_bind_text(st, 3, c.p, (int)c.len, SQLITE_STATIC);
	rc = step(w, st);
	sqlite3_finalize(st);
	/* a merged trace's pid scheme and distributedInfo give the ranks */
	if (!rc && ((key.len == 13 && !memcmp(key.ptr, "tracekitMerge", 13)) ||
	            (key.len == 15 && !memcmp(key.ptr, "distributedInfo", 15)))) {
		if (TK__GROW(s->meta_keys, s->meta_cap, s->n_meta + 2))
			rc = nomem(w);
		else if (!(s->meta_keys[s->n_meta] = tk__strndup(key.ptr, key.len)) ||
		         !(s->meta_keys[s->n_meta + 1] = tk__strndup(c.p, c.len)))
			rc = nomem(w);
		else
			s->n_meta += 2;
	}
	tk__buf_free(&c);
	return rc;
}

/* ---- pass 2: the events in time order ---- */

/* Ends the X slices of t that end by ts. */
static void pop_ended(sthr *t, int64_t ts)
{
	while (t->n_open && t->open[t->n_open - 1].end <= ts)
		t->n_open--;
}

static int flow_row(tk_writer *w, int64_t out, int64_t in, tk_sv cat, tk_sv name, int64_t set)
{
	sw *s = w->fs;
	sqlite3_stmt *st = s->q[Q_FLOW];
	bind_opt(st, 1, out);
	bind_opt(st, 2, in);
	bind_sv(st, 3, cat);
	bind_sv(st, 4, name);
	bind_opt(st, 5, set);
	return step(w, st);
}

static int flush_pending(tk_writer *w, sthr *t, int64_t in)
{
	int rc = 0;
	for (size_t i = 0; i < t->n_pend && !rc; i++) {
		const spend *p = &t->pend[i];
		rc = flow_row(w, p->out, in, p->cat, p->name, p->args.id);
	}
	t->n_pend = 0;
	return rc;
}

/* A slice row: dur -1 for a B still open. */
static int put_slice(tk_writer *w, sthr *t, const tk_event *ev, int64_t dur, int push, int64_t *id, aset *a)
{
	sw *s = w->fs;
	/* a slice nests in what holds it whole: open X slices that end before
	 * this one does are over for nesting (as in torch's operator tree) */
	int64_t end;
	if (dur >= 0 && (ev->has & TK_HAS_TS) && !__builtin_add_overflow(ev->ts, dur, &end))
		while (t->n_open && t->open[t->n_open - 1].end != INT64_MAX && t->open[t->n_open - 1].end < end)
			t->n_open--;
	const sopen *top = t->n_open ? &t->open[t->n_open - 1] : NULL;
	int64_t depth = top ? top->depth + 1 : 0, parent = top ? top->id : 0; /* top moves when t->open grows */
	*id = ++s->next_slice;
	sqlite3_stmt *st = s->q[Q_SLICE];
	sqlite3_bind_int64(st, 1, *id);
	if (ev->has & TK_HAS_TS)
		sqlite3_bind_int64(st, 2, ev->ts);
	sqlite3_bind_int64(st, 3, dur);
	sqlite3_bind_int64(st, 4, track_of(s, t));
	bind_sv(st, 5, ev->cat);
	bind_sv(st, 6, ev->name);
	sqlite3_bind_int64(st, 7, depth);
	bind_opt(st, 8, parent);
	bind_opt(st, 9, a->id);
	int rc = step(w, st);
	if (ev->has & TK_HAS_TS) {
		t->last_id = *id;
		t->last_ts = ev->ts;
	}
	if (!rc && push) {
		if (TK__GROW(t->open, t->open_cap, t->n_open + 1))
			return nomem(w);
		if (dur < 0 || __builtin_add_overflow(ev->ts, dur, &end))
			end = INT64_MAX;
		t->open[t->n_open++] = (sopen){*id, ev->ts, end, depth, a->id, a->n};
	}
	if (!rc && t->n_pend)
		rc = flush_pending(w, t, *id);
	return rc;
}

static int has_bp_e(const tk_event *ev)
{
	return ev->extra.ptr && memmem(ev->extra.ptr, ev->extra.len, "\"bp\":\"e\"", 8) != NULL;
}

static int put_flow(tk_writer *w, sthr *t, const tk_event *ev)
{
	sw *s = w->fs;
	/* the innermost open slice; a slice of no duration that began right here instead of one that began before */
	const sopen *top = t->n_open ? &t->open[t->n_open - 1] : NULL;
	int64_t here = top ? top->id : 0;
	if (t->last_id && (ev->has & TK_HAS_TS) && t->last_ts == ev->ts && !(top && top->ts == ev->ts))
		here = t->last_id;
	int added;
	sflow *f = tk__map_put(&s->flow_map, tk__flow_hash(ev), NULL, NULL, &added);
	if (!f)
		return nomem(w);
	if (added) {
		f->out = 0;
		f->open = 0;
	}
	tk_sv cat = {NULL, 0}, name = {NULL, 0};
	if ((ev->cat.ptr && !(cat = tk__strtab_intern(&s->flow_strs, ev->cat.ptr, ev->cat.len)).ptr) ||
	    (ev->name.ptr && !(name = tk__strtab_intern(&s->flow_strs, ev->name.ptr, ev->name.len)).ptr))
		return nomem(w);
	int rc;
	if (ev->ph == 's') {
		if (f->open) { /* an "s" of the same key before: nothing ended it, and it has its own row */
			sfopen *o = &s->fopen[f->open - 1];
			if ((rc = flow_row(w, f->out, 0, o->cat, o->name, o->args.id)))
				return rc;
		} else {
			uint32_t i;
			if (s->fopen_free) {
				i = s->fopen_free - 1;
				s->fopen_free = s->fopen[i].next_free;
			} else {
				if (s->n_fopen >= UINT32_MAX - 1 || TK__GROW(s->fopen, s->fopen_cap, s->n_fopen + 1))
					return nomem(w);
				i = (uint32_t)s->n_fopen++;
			}
			f->open = i + 1;
		}
		f->out = here;
		sfopen *o = &s->fopen[f->open - 1];
		*o = (sfopen){cat, name, {0, 0}, 0};
		return put_args(w, &o->args, ev->args);
	}
	/* the row that this event ends: the args of the "s" that began it, and its own */
	int64_t out = f->out;
	aset a = {0, 0};
	if (f->open) {
		a = s->fopen[f->open - 1].args;
		s->fopen[f->open - 1].next_free = s->fopen_free;
		s->fopen_free = f->open;
		f->open = 0;
	}
	if ((rc = put_args(w, &a, ev->args)))
		return rc;
	if (ev->ph == 'f' && !has_bp_e(ev)) { /* binds to the thread's next slice */
		if (TK__GROW(t->pend, t->pend_cap, t->n_pend + 1))
			return nomem(w);
		t->pend[t->n_pend++] = (spend){out, cat, name, a};
		return 0;
	}
	if (ev->ph == 't')
		f->out = here;
	return flow_row(w, out, here, cat, name, a.id);
}

/* The "s" events that nothing ended: a row each, with no slice it enters. */
static int open_flows(tk_writer *w)
{
	sw *s = w->fs;
	size_t i = 0;
	int rc = 0;
	for (sflow *f; !rc && (f = tk__map_next(&s->flow_map, &i));)
		if (f->open) {
			const sfopen *o = &s->fopen[f->open - 1];
			rc = flow_row(w, f->out, 0, o->cat, o->name, o->args.id);
		}
	return rc;
}

/* A counter track per (process, name, series). */
static int ctr_track(tk_writer *w, size_t pi, tk_sv name, tk_sv series, int64_t *track)
{
	sw *s = w->fs;
	tk__buf *n = &s->scratch;
	n->len = 0;
	if (tk__buf_append(n, name.ptr ? name.ptr : "", name.len) || tk__buf_putc(n, ' ') ||
	    tk__buf_append(n, series.ptr, series.len))
		return nomem(w);
	uint64_t h = tk__mix64(tk__hash(n->p, n->len) * 31 + pi);
	int added;
	sidx *r = tk__map_put(&s->ctr_map, h, NULL, NULL, &added);
	if (!r)
		return nomem(w);
	if (!added) {
		*track = (int64_t)r->idx;
		return 0;
	}
	r->idx = (size_t)(*track = ++s->next_track);
	sqlite3_stmt *st;
	int rc = sqlite3_prepare_v2(s->db, "INSERT INTO track(id, name, type, upid) VALUES(?1, ?2, 'process_counter', ?3)",
	                            -1, &st, NULL);
	if (rc)
		return db_fail(w, rc);
	sqlite3_bind_int64(st, 1, *track);
	sqlite3_bind_text(st, 2, n->p, (int)n->len, SQLITE_STATIC);
	sqlite3_bind_int64(st, 3, (int64_t)pi + 1);
	rc = step(w, st);
	sqlite3_finalize(st);
	return rc;
}

static int put_counter(tk_writer *w, const tk_event *ev)
{
	sw *s = w->fs;
	size_t pi;
	if (tk__procs_proc(&s->pt, &ev->pid, &pi, NULL))
		return nomem(w);
	tk__js_iter it;
	tk_sv k, v;
	int rc;
	if (!ev->args.ptr || tk__js_obj(&it, ev->args))
		return 0;
	tk__buf series = {0};
	while ((rc = tk__js_member(&it, &k, &v)) == 1) {
		int64_t track = 0, n;
		if (tk__js_str_buf((tk_sv){k.ptr - 1, k.len + 2}, &series)) {
			rc = tk__err_set(&w->err, TK_ERR_FORMAT, "a counter's name is not valid JSON");
			break;
		}
		if ((rc = ctr_track(w, pi, ev->name, (tk_sv){series.p ? series.p : "", series.len}, &track)))
			break;
		sqlite3_stmt *st = s->q[Q_COUNTER];
		if (ev->has & TK_HAS_TS)
			sqlite3_bind_int64(st, 1, ev->ts);
		sqlite3_bind_int64(st, 2, track);
		double d;
		char tmp[64], *end;
		if (tk__js_int(v, &n) == 0) {
			sqlite3_bind_int64(st, 3, n);
		} else if (v.len < sizeof tmp && (memcpy(tmp, v.ptr, v.len), tmp[v.len] = 0, d = strtod(tmp, &end), !*end) &&
		           isfinite(d)) {
			sqlite3_bind_double(st, 3, d);
		} else {
			sqlite3_bind_text(st, 3, v.ptr, (int)v.len, SQLITE_STATIC); /* not a number: its JSON */
		}
		if ((rc = step(w, st)))
			break;
	}
	tk__buf_free(&series);
	if (rc < 0 && !w->err.code)
		rc = tk__err_set(&w->err, TK_ERR_FORMAT, "a counter's args are not valid JSON");
	return rc < 0 ? rc : 0;
}

static int put_one(tk_writer *w, const tk_event *ev)
{
	sw *s = w->fs;
	if (ev->ph == 'C')
		return put_counter(w, ev);
	sthr *t = thr_of(s, &ev->pid, &ev->tid);
	if (!t)
		return nomem(w);
	if (ev->has & TK_HAS_TS)
		pop_ended(t, ev->ts);
	if (ev->ph == 's' || ev->ph == 't' || ev->ph == 'f') {
		if (ev->id.kind != TK_ID_NONE)
			return put_flow(w, t, ev);
	}
	aset a = {0, 0};
	int64_t id;
	int rc;
	if (ev->ph == 'E') {
		size_t k = t->n_open;
		while (k && t->open[k - 1].end != INT64_MAX)
			k--;
		if (k) { /* ends the innermost B */
			sopen o = t->open[k - 1];
			memmove(&t->open[k - 1], &t->open[k], (t->n_open - k) * sizeof *t->open);
			t->n_open--;
			a = (aset){o.args, o.n_args};
			if ((rc = put_args(w, &a, ev->args)))
				return rc;
			int64_t dur;
			sqlite3_stmt *st = s->q[Q_END];
			sqlite3_bind_int64(st, 1, o.id);
			bind_opt(st, 3, a.id); /* the B's set, with the E's added; the E's alone when the B had none */
			if ((ev->has & TK_HAS_TS) && !__builtin_sub_overflow(ev->ts, o.ts, &dur))
				sqlite3_bind_int64(st, 2, dur);
			return step(w, st);
		}
	}
	if ((rc = put_args(w, &a, ev->args)))
		return rc;
	if ((ev->has & TK_HAS_PH) && ev->ph != 'X' && ev->ph != 'B' && ev->ph != 'i' && ev->ph != 'I') {
		tk__buf ph = {0}; /* a JSON string: '"', '\\' and controls escaped */
		rc = tk__json_put_str(&ph, &ev->ph, 1) ? nomem(w) : put_own(w, &a, "tk.ph", (tk_sv){ph.p, ph.len});
		tk__buf_free(&ph);
		if (rc)
			return rc;
	}
	if (ev->id.kind != TK_ID_NONE && (rc = put_id_arg(w, &a, &ev->id)))
		return rc;
	if (ev->ph == 'X' && (ev->has & TK_HAS_DUR) && ev->dur >= 0)
		return put_slice(w, t, ev, ev->dur, ev->dur > 0, &id, &a);
	if (ev->ph == 'B')
		return put_slice(w, t, ev, -1, 1, &id, &a);
	return put_slice(w, t, ev, 0, 0, &id, &a);
}

/* The order within one timestamp: ends of B slices, then slices (of one
 * thread the longest first), then flows, then counters. */
static int rank_of(const tk_event *e)
{
	switch (e->ph) {
	case 'E': return 0;
	case 's':
	case 't':
	case 'f': return 2;
	case 'C': return 3;
	default: return 1;
	}
}

/* 1 for a range annotation (record_function on the CPU or the GPU): of
 * two slices that begin and end together, it holds the other. */
static int is_annotation(const tk_event *e)
{
	static const char suf[] = "user_annotation";
	size_t n = sizeof suf - 1;
	return e->cat.len >= n && memcmp(e->cat.ptr + e->cat.len - n, suf, n) == 0;
}

static void group_order(tk_event **g, size_t n)
{
	for (size_t i = 1; i < n; i++) {
		tk_event *x = g[i];
		int rx = rank_of(x);
		size_t j = i;
		while (j > 0) {
			const tk_event *y = g[j - 1];
			int ry = rank_of(y);
			int xs = rx == 1 && x->ph == 'X' && (x->has & TK_HAS_DUR), ys = ry == 1 && y->ph == 'X' && (y->has & TK_HAS_DUR);
			int before = rx < ry || (xs && ys && (x->dur > y->dur || (x->dur == y->dur && is_annotation(x) &&
			                                                         !is_annotation(y))));
			if (!before)
				break;
			g[j] = g[j - 1];
			j--;
		}
		g[j] = x;
	}
}

static int group_flush(void *ctx, tk_event **g, size_t n)
{
	tk_writer *w = ctx;
	int rc = 0;
	group_order(g, n);
	for (size_t i = 0; i < n && !rc; i++)
		rc = put_one(w, g[i]);
	return rc;
}

/* ---- the end: processes, threads, tracks, indexes ---- */

static const char *meta_of(const sw *s, const char *key)
{
	for (size_t i = 0; i + 1 < s->n_meta; i += 2)
		if (strcmp(s->meta_keys[i], key) == 0)
			return s->meta_keys[i + 1];
	return NULL;
}

static int put_tables(tk_writer *w)
{
	sw *s = w->fs;
	const char *merge = meta_of(s, "tracekitMerge"), *dist = meta_of(s, "distributedInfo");
	int64_t k = 0, one_rank = -1;
	if (!merge || tk__merge_pid_span((tk_sv){merge, strlen(merge)}, &k))
		k = 0;
	tk_sv rv;
	if (!k && dist && tk__js_find((tk_sv){dist, strlen(dist)}, "rank", 4, &rv) == 0 && tk__js_int(rv, &one_rank))
		one_rank = -1;
	sqlite3_stmt *p = NULL, *t = NULL, *tr = NULL;
	int rc = sqlite3_prepare_v2(s->db, "INSERT INTO process VALUES(?1, ?2, ?3, ?4, ?5, ?6)", -1, &p, NULL);
	if (!rc)
		rc = sqlite3_prepare_v2(s->db, "INSERT INTO thread VALUES(?1, ?2, ?3, ?4, ?5)", -1, &t, NULL);
	if (!rc)
		rc = sqlite3_prepare_v2(s->db, "INSERT INTO track(id, name, type, utid, upid) VALUES(?1, ?2, 'thread', ?3, ?4)",
		                        -1, &tr, NULL);
	if (rc) {
		rc = db_fail(w, rc);
		goto out;
	}
	for (size_t i = 0; !rc && i < s->pt.n_proc; i++) {
		const tk__proc *x = tk__procs_proc_at(&s->pt, i);
		sqlite3_bind_int64(p, 1, (int64_t)i + 1);
		bind_id(p, 2, &x->pid);
		if (x->name)
			sqlite3_bind_text(p, 3, x->name, -1, SQLITE_STATIC);
		if (x->labels)
			sqlite3_bind_text(p, 4, x->labels, -1, SQLITE_STATIC);
		if (x->has_sort)
			sqlite3_bind_int64(p, 5, x->sort);
		int64_t rank;
		if (k && tk_merge_rank_of(&x->pid, k, &rank) == 0) /* "rank 0 Spans" too */
			sqlite3_bind_int64(p, 6, rank);
		else if (one_rank >= 0)
			sqlite3_bind_int64(p, 6, one_rank);
		rc = step(w, p);
	}
	for (size_t i = 0; !rc && i < s->pt.n_thr; i++) {
		const sthr *x = tk__procs_thr_at(&s->pt, i);
		sqlite3_bind_int64(t, 1, (int64_t)i + 1);
		bind_id(t, 2, &x->tid);
		if (x->name)
			sqlite3_bind_text(t, 3, x->name, -1, SQLITE_STATIC);
		sqlite3_bind_int64(t, 4, (int64_t)x->proc + 1);
		if (x->has_sort)
			sqlite3_bind_int64(t, 5, x->sort);
		if (!(rc = step(w, t))) {
			sqlite3_bind_int64(tr, 1, track_of(s, x));
			if (x->name)
				sqlite3_bind_text(tr, 2, x->name, -1, SQLITE_STATIC);
			sqlite3_bind_int64(tr, 3, (int64_t)i + 1);
			sqlite3_bind_int64(tr, 4, (int64_t)x->proc + 1);
			rc = step(w, tr);
		}
	}
out:
	sqlite3_finalize(p);
	sqlite3_finalize(t);
	sqlite3_finalize(tr);
	return rc;
}

static int exec(tk_writer *w, const char *sql)
{
	sw *s = w->fs;
	int rc = sqlite3_exec(s->db, sql, NULL, NULL, NULL);
	return rc ? db_fail(w, rc) : 0;
}

static int sq_close(tk_writer *w)
{
	sw *s = w->fs;
	int rc = tk_sorter_finish(s->sorter);
	if (rc)
		return tk__err_set(&w->err, rc, "%s", tk_sorter_error(s->sorter));
	s->next_track = (int64_t)s->pt.n_thr; /* counter tracks come after the threads' */
	int from_sorter;
	rc = tk__sorter_groups(s->sorter, GROUP_MAX, group_flush, w, &from_sorter);
	if (rc && from_sorter)
		return tk__err_set(&w->err, rc, "%s", tk_sorter_error(s->sorter));
	if (rc)
		return w->err.code ? w->err.code : nomem(w);
	for (size_t i = 0; i < s->pt.n_thr && !rc; i++) {
		sthr *t = tk__procs_thr_at(&s->pt, i);
		if (t->n_pend)
			rc = flush_pending(w, t, 0);
	}
	if (!rc)
		rc = open_flows(w);
	if (rc || (rc = put_tables(w)) || (rc = exec(w, INDEXES)) || (rc = exec(w, "COMMIT")))
		return rc;
	for (int i = 0; i < Q_N; i++) {
		sqlite3_finalize(s->q[i]);
		s->q[i] = NULL;
	}
	rc = sqlite3_close(s->db);
	s->db = NULL;
	return rc ? tk__err_set(&w->err, TK_ERR_IO, "%s: SQLite cannot close the database", s->path) : 0;
}

/* ---- open and free ---- */

static void sq_free(tk_writer *w)
{
	sw *s = w->fs;
	if (!s)
		return;
	for (int i = 0; i < Q_N; i++)
		sqlite3_finalize(s->q[i]);
	sqlite3_close(s->db);
	vfs_free(s->vfs);
	tk_sorter_free(s->sorter);
	tk__map_free(&s->ctr_map);
	tk__map_free(&s->flow_map);
	for (size_t i = 0; i < s->pt.n_thr; i++) {
		sthr *t = tk__procs_thr_at(&s->pt, i);
		free(t->open);
		free(t->pend);
	}
	tk__procs_free(&s->pt);
	tk__strtab_free(&s->keys);
	tk__strtab_free(&s->flow_strs);
	free(s->fopen);
	tk__buf_free(&s->key);
	tk__buf_free(&s->flat);
	tk__buf_free(&s->val);
	tk__buf_free(&s->scratch);
	for (size_t i = 0; i < s->n_meta; i++)
		free(s->meta_keys[i]);
	free(s->meta_keys);
	free(s->path);
	free(s);
	w->fs = NULL;
}

static int sq_open(tk_writer *w)
{
	if (!w->sink.tmppath)
		return tk__err_set(&w->err, TK_ERR_UNSUPPORTED,
		                   "%s: SQLite output needs a regular file, not standard output, a pipe or a device",
		                   w->sink.path ? w->sink.path : "(output)");
	sw *s = calloc(1, sizeof *s);
	if (!s)
		return TK_ERR_NOMEM;
	w->fs = s;
	if (!(s->path = tk__strdup(w->sink.path)))
		return TK_ERR_NOMEM;
	/* the budget: half for the sorter, half for SQLite's page cache */
	size_t budget = w->opts.memory_bytes ? w->opts.memory_bytes : DEFAULT_MEMORY;
	tk_sorter_opts so = {budget / 2, w->opts.tmpdir};
	int rc = tk_sorter_new(&s->sorter, &so);
	if (rc)
		return rc;
	if (!(s->vfs = vfs_new(w->opts.tmpdir)))
		return nomem(w);
	tk__procs_init(&s->pt, sizeof(tk__proc), sizeof(sthr));
	tk__map_init(&s->ctr_map, sizeof(sidx), 4);
	tk__map_init(&s->flow_map, sizeof(sflow), 4);
	/* the sink made the file (empty) and renames it into place at the end */
	rc = sqlite3_open_v2(w->sink.tmppath, &s->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, s->vfs->name);
	if (rc)
		return db_fail(w, rc);
	size_t cache = budget / 2;
	char pragmas[256];
	snprintf(pragmas, sizeof pragmas,
	         "PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF; PRAGMA locking_mode = EXCLUSIVE;"
	         "PRAGMA cache_size = -%zu; PRAGMA temp_store = FILE; BEGIN;",
	         cache / 1024 ? cache / 1024 : 1);
	if ((rc = exec(w, pragmas)) || (rc = exec(w, SCHEMA)) || (rc = exec(w, NSYS)))
		return rc;
	for (int i = 0; i < Q_N; i++)
		if ((rc = sqlite3_prepare_v2(s->db, QUERIES[i], -1, &s->q[i], NULL)))
			return db_fail(w, rc);
	return 0;
}

static const tk__wfmt sqlite_wr = {0, sq_open, sq_add_meta, NULL, sq_write, sq_close, sq_free, NULL};

static const char *const sqlite_suffixes[] = {".sqlite", ".sqlite3", ".db", NULL};

const tk__format tk__format_sqlite = {TK_FORMAT_SQLITE, "sqlite", sqlite_suffixes, TK__FMT_BINARY, NULL, &sqlite_wr};
