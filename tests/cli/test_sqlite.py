#!/usr/bin/env python3
"""SQLite output (.sqlite), checked from outside with Python's sqlite3.

usage: test_sqlite.py cli|real TRACE-CONVERT TRACE-MERGE TRACE-STATS TESTDATA REALTRACES

For each trace: trace-convert IN -o plain.json (tracekit's own JSON, the
expected events) and trace-convert IN -o T.sqlite; then the database must
pass PRAGMA integrity_check and hold, against plain.json:
  - every slice (X; B with its E; instants and other phases) with its
    process, thread, name, category, ts, dur and every argument (key,
    type, value), as a multiset;
  - depth and parent_id: a parent is on the slice's track, one level up,
    and holds the child whole; on tracks of X slices alone, exactly the
    innermost open slice that does;
  - one flow row per "t" and "f" event and per "s" that no later "t" or
    "f" of its key ends, holding the args of every flow event; ac2g flows
    join a launch and the kernel of the same correlation id;
  - one counter row per series of every "C" event, one meta_event per "M",
    the top-level members in metadata;
  - every query in docs/sql.md runs, and those trace-stats also answers
    give its figures;
  - (real mode) the 8 ranks of a DLRM run merged: ranks and NCCL time per
    rank as trace-stats gives them for each rank's trace.
cli mode also checks errors: malformed input leaves no database (and no
temporary file), cut input gives a warning and a database, standard output
is refused. Exit 77 (skipped, saying why) in real mode without the traces.
"""
import collections
import decimal
import glob
import json
import os
import re
import sqlite3
import subprocess
import sys
import tempfile
import concurrent.futures

D = decimal.Decimal
TOOLS = {}
INT64 = (-(1 << 63), (1 << 63) - 1)


class Result:
    def __init__(self, what):
        self.what = what
        self.failures = []
        self.checks = 0
        self.lines = []

    def check(self, cond, msg):
        self.checks += 1
        if not cond:
            self.failures.append("%s: %s" % (self.what, msg))
        return cond


def run(cmd):
    p = subprocess.run(cmd, capture_output=True)
    return p.returncode, p.stdout, p.stderr.decode(errors="replace")


def tool(r, name, *args):
    rc, out, err = run([TOOLS[name], *args])
    r.check("Sanitizer" not in err and "runtime error:" not in err,
            "trace-%s: sanitizer report: %s" % (name, err[:2000]))
    r.check(rc == 0, "trace-%s %s: exit %d: %s" % (name, " ".join(args), rc, err.strip()[:500]))
    return rc == 0


def load(path):
    with open(path, "rb") as f:
        return json.loads(f.read(), parse_float=D)


def events_of(doc):
    return doc["traceEvents"] if isinstance(doc, dict) else doc


def ns(v):
    """tracekit's JSON writes exact nanoseconds as microseconds."""
    if v is None:
        return None
    n = D(v) * 1000
    return int(n) if n == n.to_integral_value() else n


def an_id(v):
    return v if v is None or isinstance(v, (int, str)) else str(v)


# ---- the expected rows ----

def leaves(v, key, flat, out):
    """Arguments as trace_processor flattens them: a.b, a[0]."""
    if isinstance(v, dict) and v:
        for k, x in v.items():
            leaves(x, key + "." + k if key else k, flat + "." + k if flat else k, out)
    elif isinstance(v, list) and v:
        for i, x in enumerate(v):
            leaves(x, "%s[%d]" % (key, i), flat, out)
    else:
        out.append((key, flat) + value_of(v))
    return out


def value_of(v):
    if isinstance(v, bool):
        return ("bool", int(v))
    if v is None:
        return ("null", None)
    if isinstance(v, int):
        return ("int", v) if INT64[0] <= v <= INT64[1] else ("json", str(v))
    if isinstance(v, D):
        return ("real", float(v))
    if isinstance(v, str):
        return ("string", v)
    return ("json", json.dumps(v, separators=(",", ":")))


def args_of(e):
    a = e.get("args")
    if "args" not in e:
        return []
    if isinstance(a, dict):
        return leaves(a, "", "", [])
    return [("args", "args") + value_of(a)]


def is_flow(e):
    return e.get("ph") in ("s", "t", "f") and "id" in e


def rank(e):
    ph = e.get("ph")
    return 0 if ph == "E" else 2 if ph in ("s", "t", "f") else 3 if ph == "C" else 1


def expected(events):
    """(slices multiset, counters, flows (t and f events), meta events)."""
    ordered = sorted((e for e in events if e.get("ph") not in ("M", "C") and not is_flow(e)),
                     key=lambda e: (e.get("ts") is not None, ns(e.get("ts")) or 0, rank(e)))
    slices = collections.Counter()
    open_b = collections.defaultdict(list)
    for e in ordered:
        ph = e.get("ph")
        thr = (an_id(e.get("pid")), an_id(e.get("tid")))
        if ph == "B":
            open_b[thr].append([e, []])
            continue
        if ph == "E" and open_b[thr]:
            b, _ = open_b[thr].pop()
            a = args_of(b) + args_of(e)
            dur = ns(e["ts"]) - ns(b["ts"]) if "ts" in e and "ts" in b else None
            slices[row(b, dur, a)] += 1
            continue
        a = args_of(e)
        if ph not in ("X", "B", "i", "I"):
            a.append(("tk.ph", "tk.ph", "string", ph))
        if "id" in e:
            a.append(("tk.id", "tk.id") + (value_of(e["id"]) if not isinstance(e["id"], str)
                                           else ("string", e["id"])))
        dur = ns(e.get("dur")) if ph == "X" and e.get("dur") is not None and ns(e["dur"]) >= 0 else 0
        slices[row(e, dur, a)] += 1
    for thr, stack in open_b.items():
        for b, _ in stack:
            slices[row(b, -1, args_of(b))] += 1
    counters = sum(len(e["args"]) for e in events
                   if e.get("ph") == "C" and isinstance(e.get("args"), dict))
    flows = flow_rows(events)
    metas = sum(1 for e in events if e.get("ph") == "M")
    return slices, counters, flows, metas


def flow_rows(events):
    """(rows, args): a row per "t" and "f", and per "s" that nothing of its
    (cat, id) ended before the next "s" of it or the end; every flow
    event's args on the rows."""
    ordered = sorted((e for e in events if is_flow(e)),
                     key=lambda e: (e.get("ts") is not None, ns(e.get("ts")) or 0))
    rows, open_s = 0, {}
    for e in ordered:
        k = (e.get("cat"), json.dumps(e["id"]))
        if e["ph"] == "s":
            rows += 1 if open_s.get(k) else 0
            open_s[k] = True
        else:
            open_s[k] = False
            rows += 1
    rows += sum(open_s.values())
    return rows, sum(len(args_of(e)) for e in ordered)


def row(e, dur, a):
    return (an_id(e.get("pid")), an_id(e.get("tid")), e.get("name"), e.get("cat"), ns(e.get("ts")), dur,
            tuple(sorted((k, f, t, v) for k, f, t, v in a)))


# ---- what the database holds ----

def db_slices(db):
    args = collections.defaultdict(list)
    for s, k, f, t, i, st, re_ in db.execute(
            "SELECT arg_set_id, key, flat_key, value_type, int_value, string_value, real_value FROM args"):
        v = i if t in ("int", "bool") else re_ if t == "real" else st
        args[s].append((k, f, t, v))
    got = collections.Counter()
    for pid, tid, name, cat, ts, dur, aid in db.execute(
            "SELECT p.pid, t.tid, s.name, s.category, s.ts, s.dur, s.arg_set_id FROM slice s"
            " JOIN track k ON k.id = s.track_id JOIN thread t ON t.utid = k.utid"
            " JOIN process p ON p.upid = t.upid"):
        got[(pid, tid, name, cat, ts, dur, tuple(sorted(args.get(aid, []))))] += 1
    return got


def check_tree(r, db):
    rows = {i: (tr, ts, dur, depth, par) for i, tr, ts, dur, depth, par in
            db.execute("SELECT id, track_id, ts, dur, depth, parent_id FROM slice")}
    bad = []
    for i, (tr, ts, dur, depth, par) in rows.items():
        if par is None:
            if depth != 0:
                bad.append("slice %d: depth %d without a parent" % (i, depth))
            continue
        p = rows.get(par)
        # the parent holds the child whole (a B still open holds anything after it)
        if p is None or p[0] != tr or p[3] != depth - 1 or (ts is not None and p[1] is not None and (
                p[1] > ts or (p[2] >= 0 and p[1] + p[2] < ts + max(dur, 0)))):
            bad.append("slice %d (track %s, ts %s, depth %s): parent %s is %s" % (i, tr, ts, depth, par, p))
    r.check(not bad, "%d slices with a wrong parent, e.g. %s" % (len(bad), bad[:3]))
    # tracks of X slices alone: the parent is the innermost open slice that holds the child whole
    be = {tr for tr, in db.execute("SELECT DISTINCT track_id FROM slice WHERE dur < 0")}
    stacks = {}
    wrong = []
    for i, tr, ts, dur, depth, par in db.execute(
            "SELECT id, track_id, ts, dur, depth, parent_id FROM slice WHERE ts IS NOT NULL ORDER BY id"):
        if tr in be:
            continue
        st = stacks.setdefault(tr, [])
        while st and (st[-1][1] <= ts or st[-1][1] < ts + dur):
            st.pop()
        want = st[-1][0] if st else None
        if want != par:
            wrong.append("slice %d: parent %s, want %s" % (i, par, want))
        if dur > 0:
            st.append((i, ts + dur))
    r.check(not wrong, "%d slices whose parent is not the innermost open slice, e.g. %s" % (len(wrong), wrong[:3]))
    nested = db.execute("SELECT count(*) FROM slice WHERE depth > 0").fetchone()[0]
    return nested


def check_flows(r, db, events, want_flows):
    want_rows, want_args = want_flows
    got = db.execute("SELECT count(*) FROM flow").fetchone()[0]
    r.check(got == want_rows, "flow rows %d, want %d (t and f events, s events nothing ended)" % (got, want_rows))
    got = db.execute("SELECT count(*) FROM flow f JOIN args a ON a.arg_set_id = f.arg_set_id").fetchone()[0]
    r.check(got == want_args, "args of flow rows %d, want %d (those of the flow events)" % (got, want_args))
    # an "f" joins the "s" of its key that came before it in time (an "f" before any "s" has no start)
    started, want = set(), 0
    for e in sorted((e for e in events if is_flow(e) and e.get("cat") == "ac2g" and e.get("ts") is not None),
                    key=lambda e: ns(e["ts"])):
        k = an_id(e["id"])
        if e["ph"] == "s":
            started.add(k)
        elif e["ph"] == "f" and k in started:
            want += 1
    both = db.execute("SELECT count(*) FROM flow WHERE category = 'ac2g' AND slice_out IS NOT NULL"
                      " AND slice_in IS NOT NULL").fetchone()[0]
    r.check(both == want, "ac2g flows with both ends %d, want %d (f events with their s)" % (both, want))
    mismatch = db.execute(
        "SELECT count(*) FROM flow f JOIN args a ON a.arg_set_id = (SELECT arg_set_id FROM slice WHERE id = f.slice_out)"
        " AND a.key = 'correlation' JOIN args b ON b.arg_set_id = (SELECT arg_set_id FROM slice WHERE id = f.slice_in)"
        " AND b.key = 'correlation' WHERE f.category = 'ac2g' AND a.int_value != b.int_value").fetchone()[0]
    r.check(mismatch == 0, "%d ac2g flows join slices of different correlation ids" % mismatch)


# ---- the queries of docs/sql.md against trace-stats ----

TITLES = ["Top kernels by time", "An operator's self time", "Runtime API calls", "GPU time per ProfilerStep",
          "NCCL time per rank", "The kernels each CPU op launched", "The longest gaps on a GPU stream",
          "Arguments of one slice"]


KERNEL = ("kernel", "Kernel", "mtia_ccp_events")


def no_limit(sql):
    return re.sub(r"\s+LIMIT \d+\s*;?\s*$", ";", sql.strip())


def stats_json(r, path, *opts):
    rc, out, err = run([TOOLS["stats"], path, "-f", "json", "-n", "-1", "-q", *opts])
    if not r.check(rc == 0, "trace-stats %s: exit %d: %s" % (" ".join(opts), rc, err.strip()[:300])):
        return {}
    return json.loads(out)


def rows_of(doc, table):
    return (doc.get(table) or {}).get("rows") or []


def same(r, what, got, want):
    if got != want:
        diff = sorted(set(got) ^ set(want))[:2] + [k for k in got if k in want and got[k] != want[k]][:2]
        r.check(False, "%s: the query and trace-stats differ (%d rows vs %d), e.g. %s" % (
            what, len(got), len(want), [(k, got.get(k), want.get(k)) for k in diff][:3]))
    else:
        r.check(True, "")


def check_queries(r, db, path, q, events):
    st = stats_json(r, path, "-t", "kernels,api,ops")
    kern = {x["name"]: (x["count"], x["total_ns"], x["min_ns"], x["max_ns"]) for x in rows_of(st, "kernels")}
    got = {n: (c, t, lo, hi) for n, c, t, lo, hi in db.execute(no_limit(q["Top kernels by time"][0]))}
    same(r, "top kernels", got, kern)
    got2 = {n: (c, t) for n, c, t in db.execute(no_limit(q["Top kernels by time"][1]))}
    same(r, "top kernels through CUPTI_ACTIVITY_KIND_KERNEL", got2, {n: v[:2] for n, v in kern.items()})
    api = {x["name"]: (x["count"], x["total_ns"]) for x in rows_of(st, "api")}
    got = {n: (c, t) for n, c, t in db.execute(no_limit(q["Runtime API calls"][0]))}
    same(r, "runtime API calls", got, api)
    ops = {}  # a name may have a CPU row and a GPU row (a kernel named like its launcher): the CPU one
    for x in rows_of(st, "ops"):
        if x["cpu_total_ns"] or x["name"] not in ops:
            ops[x["name"]] = (x["calls"], x["self_cpu_ns"])
    # trace-stats leaves out utility ops (aten::is_leaf, [memory], ...): the names it lists
    got = {n: (c, sf) for n, c, _, sf in db.execute(no_limit(q["An operator's self time"][0])) if n in ops}
    same(r, "operator self time", got, {n: ops[n] for n in got})
    # NCCL per rank: one trace is one rank
    nccl = [x for x in rows_of(st, "kernels") if x["name"].startswith("nccl")]
    got = list(db.execute(q["NCCL time per rank"][0]))
    want = [(sum(x["count"] for x in nccl), sum(x["total_ns"] for x in nccl))] if nccl else []
    r.check([(c, t) for _, c, t in got] == want, "NCCL per rank: %s, want %s (trace-stats nccl* kernels)"
            % (got, want))
    # GPU time per step: the first two steps that one slice each names
    steps = list(db.execute(q["GPU time per ProfilerStep"][0]))
    names = collections.Counter(n for n, in db.execute("SELECT name FROM slice WHERE name GLOB 'ProfilerStep#*'"))
    for name, kernels, kernel_ns in [x for x in steps if names[x[0]] == 1][:2]:
        sst = stats_json(r, path, "-t", "kernels", "--steps", name[len("ProfilerStep#"):])
        rows = rows_of(sst, "kernels")
        want = (sum(x["count"] for x in rows), sum(x["total_ns"] for x in rows))
        r.check((kernels, kernel_ns or 0) == want, "GPU time in %s: %s, want %s (trace-stats --steps)"
                % (name, (kernels, kernel_ns), want))
    # kernels launched through ac2g: the kernels of the correlation ids whose flow has both ends
    started, joined = set(), set()
    for e in sorted((e for e in events if is_flow(e) and e.get("cat") == "ac2g" and e.get("ts") is not None),
                    key=lambda e: ns(e["ts"])):
        (started if e["ph"] == "s" else joined if an_id(e["id"]) in started else set()).add(an_id(e["id"]))
    want = sum(ns(e["dur"]) for e in events if e.get("cat") in KERNEL and e.get("ph") == "X"
               and isinstance(e.get("args"), dict) and e["args"].get("correlation") in joined)
    got = sum(x[3] for x in db.execute(no_limit(q["The kernels each CPU op launched"][0])))
    r.check(got == want, "kernels launched by CPU ops: %d ns, want %d (kernels of joined correlation ids)"
            % (got, want))
    # the longest gap on a GPU stream
    gpu = collections.defaultdict(list)
    for e in events:
        if e.get("ph") == "X" and e.get("cat") in KERNEL + ("gpu_memcpy", "Memcpy", "gpu_memset", "Memset") \
                and "ts" in e and e["cat"] != "mtia_ccp_events":
            gpu[(an_id(e.get("pid")), an_id(e.get("tid")))].append((ns(e["ts"]), -ns(e.get("dur") or 0)))
    gaps = [b[0] - (a[0] - a[1]) for v in gpu.values() for a, b in zip(sorted(v), sorted(v)[1:])]
    want = max([g for g in gaps if g > 0], default=None)
    got = db.execute(q["The longest gaps on a GPU stream"][0]).fetchone()
    r.check((got[2] if got else None) == want, "longest GPU gap %s, want %s" % (got and got[2], want))


# Set (to 1) by the sanitizer build's ctest for the tests over the real
# traces: the tools run on every trace as always, and the rows compared with
# the JSON in Python (minutes that no sanitizer looks into) are left to the
# plain build's run of the same test.
TOOLS_ONLY = os.environ.get("TK_TEST_SANITIZED") == "1"


def one_trace(args):
    name, path, tmproot, docs_queries = args
    r = Result(name)
    w = tempfile.mkdtemp(prefix="sq-", dir=tmproot)
    plain, db_path = os.path.join(w, "plain.json"), os.path.join(w, "T.sqlite")
    if not tool(r, "convert", path, "-o", plain, "-q") or not tool(r, "convert", path, "-o", db_path, "-q"):
        return r
    if TOOLS_ONLY:
        # the sanitizer build: the database opens and holds together; the
        # rows compared with the JSON in Python are the plain build's check
        db = sqlite3.connect(db_path)
        try:
            ok = db.execute("PRAGMA integrity_check").fetchone()[0]
            r.check(ok == "ok", "integrity_check: %s" % ok)
            r.lines.append("%s: %d slices (tools only: TK_TEST_SANITIZED)"
                           % (name, db.execute("SELECT count(*) FROM slice").fetchone()[0]))
        finally:
            db.close()
        return r
    doc = load(plain)
    events = events_of(doc)
    db = sqlite3.connect(db_path)
    try:
        ok = db.execute("PRAGMA integrity_check").fetchone()[0]
        r.check(ok == "ok", "integrity_check: %s" % ok)
        want, counters, flows, metas = expected(events)
        got = db_slices(db)
        if got != want:
            miss, extra = want - got, got - want
            r.check(False, "slices differ: %d expected rows missing, %d unexpected; e.g. missing %s; unexpected %s"
                    % (sum(miss.values()), sum(extra.values()), str(list(miss)[:1])[:600],
                       str(list(extra)[:1])[:600]))
        else:
            r.check(True, "")
        nested = check_tree(r, db)
        check_flows(r, db, events, flows)
        n = db.execute("SELECT count(*) FROM counter").fetchone()[0]
        r.check(n == counters, "counter rows %d, want %d" % (n, counters))
        n = db.execute("SELECT count(*) FROM meta_event").fetchone()[0]
        r.check(n == metas, "meta_event rows %d, want %d" % (n, metas))
        if isinstance(doc, dict):
            keys = [k for k in doc if k != "traceEvents"]
            got_keys = [k for k, in db.execute("SELECT name FROM metadata ORDER BY rowid")]
            r.check(got_keys == keys, "metadata names %s, want %s" % (got_keys[:5], keys[:5]))
        titled = collections.defaultdict(list)
        for title, sql in docs_queries:
            titled[title].append(sql)
        if all(t in titled for t in TITLES):
            check_queries(r, db, path, titled, events)
        else:
            r.check(False, "docs/sql.md lacks the queries %s" % [t for t in TITLES if t not in titled])
        for title, sql in docs_queries:
            try:
                db.execute(sql).fetchall()
                r.check(True, "")
            except sqlite3.Error as e:
                r.check(False, "docs/sql.md query %r fails: %s" % (title, e))
        r.lines.append("%s: %d slices (%d nested), %d args, %d flows" % (
            name, sum(got.values()), nested, db.execute("SELECT count(*) FROM arg").fetchone()[0], flows[0]))
    finally:
        db.close()
    return r


def merge_job(args):
    """trace-merge of the 8-rank DLRM traces into one database: every rank's
    processes carry their rank, and NCCL time per rank is each rank's own."""
    name, files, tmproot, queries = args
    r = Result(name)
    w = tempfile.mkdtemp(prefix="sq-", dir=tmproot)
    out = os.path.join(w, "all.sqlite")
    if not tool(r, "merge", *files, "-o", out, "-q"):
        return r
    db = sqlite3.connect(out)
    ranks = sorted(x for x, in db.execute("SELECT DISTINCT rank FROM process WHERE rank IS NOT NULL"))
    r.check(ranks == list(range(len(files))), "process ranks %s, want 0..%d" % (ranks, len(files) - 1))
    # string pids ("rank 3 Spans") carry their rank too: a GROUP BY rank drops no process
    bad = list(db.execute("SELECT pid, rank FROM process WHERE rank IS NULL OR (typeof(pid) = 'text' AND "
                          "pid NOT LIKE 'rank ' || rank || ' %' AND pid != 'rank ' || rank)"))
    strs = db.execute("SELECT count(*) FROM process WHERE typeof(pid) = 'text'").fetchone()[0]
    r.check(not bad and strs > 0, "every process has its rank, the %d string pids too %s" % (strs, bad[:3]))
    sql = dict(queries)["NCCL time per rank"]
    got = [(c, t) for _, c, t in db.execute(sql)]
    want = []
    for f in files:
        rows = rows_of(stats_json(r, f, "-t", "kernels"), "kernels")
        want.append((sum(x["count"] for x in rows if x["name"].startswith("nccl")),
                     sum(x["total_ns"] for x in rows if x["name"].startswith("nccl"))))
    r.check(got == want, "NCCL per rank %s, want %s (trace-stats of each rank)" % (got, want))
    n = db.execute("SELECT count(*) FROM slice").fetchone()[0]
    single = 0
    for f in files:
        one = os.path.join(w, "one.sqlite")
        if tool(r, "convert", f, "-o", one, "-q"):
            single += sqlite3.connect(one).execute("SELECT count(*) FROM slice").fetchone()[0]
    r.check(n == single, "merged slices %d, want %d (the ranks' own)" % (n, single))
    r.lines.append("%s: %d slices, ranks %s" % (name, n, ranks))
    return r


def docs_queries(path):
    """The ```sql blocks of docs/sql.md, each after a heading: (heading, sql)."""
    text = open(path).read()
    out = []
    title = None
    for m in re.finditer(r"^(#+ [^\n]*)$|^```sql\n(.*?)^```", text, re.M | re.S):
        if m.group(1):
            title = m.group(1).lstrip("# ")
        else:
            out.append((title, m.group(2)))
    return out


def errors(tmproot):
    r = Result("errors")
    w = tempfile.mkdtemp(prefix="sq-", dir=tmproot)
    bad = os.path.join(w, "bad.json")
    with open(bad, "w") as f:
        f.write('{"traceEvents":[{"ph":"X","name":"a","pid":1,"tid":1,"ts":1,"dur":2},{"ph":"X",,}]}')
    out = os.path.join(w, "bad.sqlite")
    rc, _, err = run([TOOLS["convert"], bad, "-o", out])
    r.check(rc != 0 and "bad.json" in err, "malformed input: exit %d, %r" % (rc, err.strip()[:300]))
    r.check(os.listdir(w) == ["bad.json"], "malformed input left files behind: %s" % sorted(os.listdir(w)))
    # a cut trace: a warning and a database of what came before
    src = os.path.join(TESTDATA, "example_kineto.json")
    data = open(src, "rb").read()
    cut = os.path.join(w, "cut.json")
    with open(cut, "wb") as f:
        f.write(data[:len(data) * 2 // 3])
    out = os.path.join(w, "cut.sqlite")
    rc, _, err = run([TOOLS["convert"], cut, "-o", out])
    r.check(rc == 0 and "warning" in err, "cut input: exit %d, %r (want a warning)" % (rc, err.strip()[:300]))
    if r.check(os.path.isfile(out), "cut input: no database"):
        n = sqlite3.connect(out).execute("SELECT count(*) FROM slice").fetchone()[0]
        r.check(n > 0, "cut input: no slices in the database")
    rc, _, err = run([TOOLS["convert"], src, "--to", "sqlite", "-o", "-"])
    r.check(rc != 0 and "SQLite" in err, "standard output: exit %d, %r" % (rc, err.strip()[:300]))
    # an existing database is replaced whole, never appended to
    out = os.path.join(w, "twice.sqlite")
    for _ in range(2):
        tool(r, "convert", src, "-o", out, "-q")
    n = sqlite3.connect(out).execute("SELECT count(*) FROM slice").fetchone()[0]
    n1 = sqlite3.connect(os.path.join(w, "cut.sqlite")).execute("SELECT count(*) FROM slice").fetchone()[0]
    r.check(n >= n1 and n == sum(1 for _ in sqlite3.connect(out).execute("SELECT id FROM slice")),
            "a second conversion over the same name: %d slices" % n)
    return r


def main(argv):
    global TESTDATA
    if len(argv) != 8 or argv[1] not in ("cli", "real"):
        print(__doc__.split("\n\n")[1])
        return 2
    mode = argv[1]
    TOOLS.update(convert=argv[2], merge=argv[3], stats=argv[4])
    TESTDATA, real, sqlmd = argv[5], argv[6], argv[7]
    if mode == "real" and not os.path.isfile(os.path.join(real, "index.tsv")):
        print("skipped: the real traces are not at %s (no index.tsv)" % real)
        return 77
    queries = docs_queries(sqlmd)
    if mode == "cli" and not queries:
        print("FAIL: no ```sql blocks in %s" % sqlmd)
        return 1
    with tempfile.TemporaryDirectory(prefix="tksq-") as tmp:
        jobs = []
        if mode == "cli":
            for f in sorted(glob.glob(os.path.join(TESTDATA, "*.json")) +
                            glob.glob(os.path.join(TESTDATA, "stats", "*.json")) +
                            glob.glob(os.path.join(TESTDATA, "stats", "torch113", "*.json"))):
                with open(f, "rb") as fh:  # a leading '#' line (the file's note) taken off
                    data = fh.read()
                if data.startswith(b"#"):
                    data = data.split(b"\n", 1)[1] if b"\n" in data else b""
                rel = os.path.relpath(f, TESTDATA)
                p = os.path.join(tmp, rel.replace(os.sep, "__"))
                with open(p, "wb") as fh:
                    fh.write(data)
                rc, _, _ = run([TOOLS["convert"], p, "-o", os.path.join(tmp, "probe.json"), "-q"])
                if rc == 0:
                    jobs.append((one_trace, (rel, p, tmp, queries)))
                else:
                    print("(%s: trace-convert refuses it: not used)" % rel)
            # B/E slices (none in testdata): args of the B, of the E, of both; one never ended
            be = os.path.join(tmp, "b_e.json")
            with open(be, "w") as fh:
                json.dump({"traceEvents": [
                    {"ph": "B", "name": "a", "pid": 1, "tid": 1, "ts": 1},
                    {"ph": "E", "pid": 1, "tid": 1, "ts": 5, "args": {"x": 1}},
                    {"ph": "B", "name": "b", "pid": 1, "tid": 1, "ts": 6, "args": {"y": 2}},
                    {"ph": "X", "name": "in_b", "pid": 1, "tid": 1, "ts": 7, "dur": 1},
                    {"ph": "E", "pid": 1, "tid": 1, "ts": 9, "args": {"z": 3}},
                    {"ph": "B", "name": "c", "pid": 1, "tid": 1, "ts": 10, "args": {"w": [1, 2]}},
                    {"ph": "E", "pid": 1, "tid": 1, "ts": 12},
                    {"ph": "E", "pid": 1, "tid": 1, "ts": 13},
                    {"ph": "B", "name": "open", "pid": 1, "tid": 2, "ts": 14}]}, fh)
            jobs.append((one_trace, ("B/E slices", be, tmp, queries)))
            # flows (their args in no testdata): args on each phase, an "s"
            # nothing ends, an "s" given again before its end, a "t", an "f"
            # with no "s", an "f" that binds to the thread's next slice
            fl = os.path.join(tmp, "flows.json")
            with open(fl, "w") as fh:
                json.dump({"traceEvents": [
                    {"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 1, "dur": 20, "cat": "cpu_op"},
                    {"ph": "s", "name": "orphan", "id": 1, "pid": 1, "tid": 1, "ts": 2, "cat": "c", "args": {"o": 1}},
                    {"ph": "s", "name": "twice", "id": 2, "pid": 1, "tid": 1, "ts": 3, "cat": "c",
                     "args": {"first": 1}},
                    {"ph": "s", "name": "twice", "id": 2, "pid": 1, "tid": 1, "ts": 4, "cat": "c",
                     "args": {"second": [1, 2]}},
                    {"ph": "t", "name": "twice", "id": 2, "pid": 1, "tid": 1, "ts": 5, "cat": "c",
                     "args": {"step": "x"}},
                    {"ph": "f", "name": "twice", "id": 2, "pid": 1, "tid": 2, "ts": 30, "cat": "c",
                     "args": {"end": {"k": True}}},
                    {"ph": "X", "name": "b", "pid": 1, "tid": 2, "ts": 31, "dur": 5, "cat": "cpu_op"},
                    {"ph": "f", "name": "nostart", "id": 3, "pid": 1, "tid": 1, "ts": 6, "cat": "c", "bp": "e",
                     "args": {"ns": None}},
                    {"ph": "s", "name": "ended", "id": "0x7", "pid": 1, "tid": 1, "ts": 7, "cat": "c"},
                    {"ph": "f", "name": "ended", "id": "0x7", "pid": 1, "tid": 1, "ts": 8, "cat": "c", "bp": "e"}]},
                    fh)
            jobs.append((one_trace, ("flows", fl, tmp, queries)))
        else:
            with open(os.path.join(real, "index.tsv")) as f:
                rows = [l.split("\t") for l in f.read().splitlines()[1:] if l.strip()]
            rows.sort(key=lambda x: -int(x[3]))
            for row_ in rows:
                jobs.append((one_trace, (row_[0], os.path.join(real, row_[0]), tmp, queries)))
            dlrm = sorted(glob.glob(os.path.join(real, "param-dlrm-8rank", "dlrm_kineto", "*.json")))
            if len(dlrm) != 8:
                print("FAIL: want 8 traces in param-dlrm-8rank/dlrm_kineto, found %d" % len(dlrm))
                return 1
            jobs.append((merge_job, ("merge param-dlrm-8rank", dlrm, tmp, queries)))
        results = []
        with concurrent.futures.ProcessPoolExecutor(max_workers=os.cpu_count() or 2) as ex:
            futs = [ex.submit(f, a) for f, a in jobs]
            if mode == "cli":
                futs.append(ex.submit(errors, tmp))
            for fut in futs:
                res = fut.result()
                for line in res.lines:
                    print(line, flush=True)
                for fl in res.failures:
                    print("FAIL:", fl, flush=True)
                results.append(res)
    failed = [f for r in results for f in r.failures]
    if TOOLS_ONLY and mode == "real":
        print("TK_TEST_SANITIZED=1: the tools ran on every trace and each database passed integrity_check; "
              "the rows compared with the JSON are the plain build's")
    print("%d traces and jobs, %d checks, %d failed" % (len(results), sum(r.checks for r in results), len(failed)))
    return 1 if failed else 0


TESTDATA = None

if __name__ == "__main__":
    sys.exit(main(sys.argv))
