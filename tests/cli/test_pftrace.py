#!/usr/bin/env python3
"""test_pftrace.py: the Perfetto protobuf format (.pftrace) in the tools, checked from outside.

usage: test_pftrace.py cli|real TRACE_CONVERT TRACE_MERGE TRACE_STATS TRACE_SPLIT
                       TESTDATA_DIR REALTRACES_DIR PERFETTO_PROTO CHECKER

For each trace (cli: every testdata trace that trace-convert reads, a leading
'#' comment line taken off as the other CLI tests do; real: every trace in
REALTRACES_DIR/index.tsv):
  - trace-convert IN -o T.pftrace; protoc --decode=perfetto.protos.Trace
    accepts it (exit 0, and no error printed); CHECKER (pftrace_check.py)
    finds no problem in it; (cli) --to pftrace -o -, -o T.perfetto-trace and
    -o T.pftrace.gz give the same bytes (gzipped for .gz);
  - trace-convert T.pftrace -o back.json: strict JSON, equal to IN up to the
    documented normalisations (events as a multiset; each event as the parsed
    object, numbers by value, non-integers with a relative tolerance of 1e-12;
    "ts" and "dur" as exact integer nanoseconds from their decimal text; every
    top-level metadata member of IN present with an equal value), and equal to
    trace-convert IN -o plain.json (events as multisets, metadata as dicts);
  - trace-stats prints the same tables for T.pftrace as for IN (several
    option sets), apart from lines naming the file.
Besides: trace-merge -o x.pftrace against trace-merge -o x.json, and
trace-split --to pftrace against trace-split --to json, part by part. The
real part also checks that the merged 8-rank DLRM trace lists its processes,
in sibling_order_rank order, grouped by rank in ascending order, each rank's
CPU (host) processes before its GPU ones, with the root track (uuid 0) asking
for that order (process_ordering EXPLICIT: without it viewers ignore
sibling_order_rank on process tracks).

Exit 77 (skipped, saying why) when protoc or the proto is absent, or, for
`real`, when REALTRACES_DIR is absent."""
import collections
import concurrent.futures
import decimal
import glob
import gzip
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

D = decimal.Decimal
REL_TOL = D("1e-12")
TOOLS = {}
PROTO = CHECKER = None

# trace-stats option sets compared between IN and T.pftrace ([] is the default output)
STATS_RUNS = [
    [],
    ["-f", "json"],
    ["-t", "kernels"],
    ["-t", "memcpy,api", "-f", "csv"],
    ["-t", "ops", "--group-by-input-shape"],
    ["-t", "ops", "-s", "self_cuda_time_total", "--flops", "extended", "-n", "-1"],
]


class Result:
    """What one job found: summary lines, failures, the number of checks."""

    def __init__(self, what):
        self.what = what
        self.lines = []
        self.failures = []
        self.checks = 0

    def check(self, cond, msg):
        self.checks += 1
        if not cond:
            self.failures.append("%s: %s" % (self.what, msg))
        return cond

    def note(self, msg):
        self.lines.append("%s: %s" % (self.what, msg))


# ---- JSON, read strictly ----

def _no_constant(name):
    raise ValueError("not strict JSON: " + name)


def strict_load(path):
    with open(path, "rb") as f:
        data = f.read()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    # Decimal keeps "1.50" and epoch-scale microseconds exact
    return json.loads(data.decode("utf-8"), parse_float=D, parse_constant=_no_constant)


def events_of(doc):
    return doc if isinstance(doc, list) else doc.get("traceEvents", [])


def meta_of(doc):
    return {} if isinstance(doc, list) else {k: v for k, v in doc.items() if k != "traceEvents"}


def is_num(v):
    return isinstance(v, (int, D)) and not isinstance(v, bool)


def ns(v):
    """A "ts"/"dur" as integer nanoseconds (exact), if it is a number."""
    if not is_num(v):
        return v
    n = D(v) * 1000
    return int(n) if n == n.to_integral_value() else n


def norm_event(e):
    if not isinstance(e, dict):
        return e
    e = dict(e)
    for k in ("ts", "dur"):
        if k in e:
            e[k] = ns(e[k])
    return e


def canon(v):
    """A hashable form in which equal values (1 and 1.0, 1.5 and 1.50) are equal."""
    if isinstance(v, dict):
        return ("D",) + tuple(sorted((k, canon(x)) for k, x in v.items()))
    if isinstance(v, list):
        return ("L",) + tuple(canon(x) for x in v)
    if isinstance(v, bool):
        return ("B", v)
    if isinstance(v, D):
        return int(v) if v == v.to_integral_value() else v.normalize()
    return v


def skeleton(v):
    """canon() with every number replaced by '#': the shape for tolerant matching."""
    if isinstance(v, dict):
        return ("D",) + tuple(sorted((k, skeleton(x)) for k, x in v.items()))
    if isinstance(v, list):
        return ("L",) + tuple(skeleton(x) for x in v)
    if isinstance(v, bool):
        return ("B", v)
    if is_num(v):
        return "#"
    return v


def num_equal(a, b, exact=False):
    a, b = D(a), D(b)
    if a == b:
        return True
    if exact or (a == a.to_integral_value() and b == b.to_integral_value()):
        return False  # integers compare exactly
    return abs(a - b) <= REL_TOL * max(abs(a), abs(b))


def diff(a, b, path="", top=False, out=None):
    """Paths where a and b differ (numbers with the tolerance; top-level
    ts/dur exactly)."""
    if out is None:
        out = []
    if len(out) >= 6:
        return out
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            p = "%s.%s" % (path, k) if path else k
            if k not in a:
                out.append("%s only in the second (%s)" % (p, short(b[k])))
            elif k not in b:
                out.append("%s only in the first (%s)" % (p, short(a[k])))
            else:
                if top and k in ("ts", "dur") and is_num(a[k]) and is_num(b[k]):
                    if not num_equal(a[k], b[k], exact=True):
                        out.append("%s: %s ns vs %s ns" % (p, a[k], b[k]))
                    continue
                diff(a[k], b[k], p, False, out)
    elif isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            out.append("%s: %d vs %d items" % (path or "value", len(a), len(b)))
        for i, (x, y) in enumerate(zip(a, b)):
            diff(x, y, "%s[%d]" % (path, i), False, out)
    elif is_num(a) and is_num(b):
        if not num_equal(a, b):
            out.append("%s: %s vs %s" % (path or "value", a, b))
    elif type(a) is not type(b) or a != b:
        out.append("%s: %s vs %s" % (path or "value", short(a), short(b)))
    return out


def short(v, n=300):
    """v as JSON text (Decimals as the numbers they are), cut at n characters."""
    s = json.dumps(v, default=lambda d: "\0%s\0" % d, ensure_ascii=False, sort_keys=True)
    s = re.sub(r'"\\u0000(.*?)\\u0000"', r"\1", s)
    return s if len(s) <= n else s[:n] + "..."


def _dec_marker(d):
    return {"\0dec": str(d)}


def fast_key(e):
    """The event as JSON text with sorted keys: equal text, equal events (the
    converse fails only for number spellings, 1.5 and 1.50, which canon() sees)."""
    return json.dumps(e, sort_keys=True, default=_dec_marker, ensure_ascii=False)


def compare_events(r, want_events, got_events, what):
    """Multiset equality of two event lists (already normalised). Events with
    the same text first (fast); then by value (canon); then the rest matched
    with the numeric tolerance."""
    n_want, n_got = len(want_events), len(got_events)
    fw, fg, first = collections.Counter(), collections.Counter(), {}
    for e in want_events:
        k = fast_key(e)
        fw[k] += 1
        first.setdefault(k, e)
    for e in got_events:
        k = fast_key(e)
        fg[k] += 1
        first.setdefault(k, e)
    want_events = [first[k] for k, n in (fw - fg).items() for _ in range(n)]
    got_events = [first[k] for k, n in (fg - fw).items() for _ in range(n)]
    del fw, fg, first
    want = collections.Counter(canon(e) for e in want_events)
    got = collections.Counter(canon(e) for e in got_events)
    missing, extra = want - got, got - want
    if missing or extra:
        # the numeric tolerance: match what is left by shape
        by_canon_w = {}
        for e in want_events:
            c = canon(e)
            if c in missing:
                by_canon_w.setdefault(c, e)
        by_canon_g = {}
        for e in got_events:
            c = canon(e)
            if c in extra:
                by_canon_g.setdefault(c, e)
        groups = collections.defaultdict(lambda: ([], []))
        for c, n in missing.items():
            groups[skeleton(by_canon_w[c])][0].extend([by_canon_w[c]] * n)
        for c, n in extra.items():
            groups[skeleton(by_canon_g[c])][1].extend([by_canon_g[c]] * n)
        left_w, left_g = [], []
        for sk, (ws, gs) in groups.items():
            if len(ws) * len(gs) > 40000:  # too many to pair one by one
                left_w += ws
                left_g += gs
                continue
            gs = list(gs)
            for w in ws:
                for i, g in enumerate(gs):
                    if not diff(w, g, top=True):
                        del gs[i]
                        break
                else:
                    left_w.append(w)
            left_g += gs
        missing_list, extra_list = left_w, left_g
    else:
        missing_list, extra_list = [], []
    ok = r.check(not missing_list and not extra_list,
                 "%s: %d events in the first are not in the second, %d in the second are not in the "
                 "first (of %d / %d; ts and dur in ns)%s" % (what, len(missing_list), len(extra_list), n_want,
                                                              n_got, example(missing_list, extra_list)))
    return ok


def example(missing, extra):
    """The first differing event and its closest counterpart, and what differs."""
    if missing:
        m = missing[0]
        best, score = None, -1
        for g in extra[:20000]:
            s = sum(1 for k in ("ph", "name", "pid", "tid", "ts", "cat", "id") if
                    isinstance(m, dict) and isinstance(g, dict) and canon(m.get(k)) == canon(g.get(k)))
            if s > score:
                best, score = g, s
        if best is not None:
            return "; e.g. %s\n    closest: %s\n    differs: %s" % (short(m), short(best),
                                                                  "; ".join(diff(m, best, top=True)))
        return "; e.g. missing %s" % short(m)
    if extra:
        return "; e.g. extra %s" % short(extra[0])
    return ""


def compare_meta(r, want, got, what, subset):
    """Top-level metadata: every member of want in got with an equal value;
    with subset False, the same members on both sides."""
    for k, v in want.items():
        if not r.check(k in got, "%s: metadata member %r missing" % (what, k)):
            continue
        d = diff(v, got[k])
        r.check(not d, "%s: metadata member %r differs: %s" % (what, k, "; ".join(d)))
    if not subset:
        more = sorted(set(got) - set(want))
        r.check(not more, "%s: metadata members only in the second: %s" % (what, more))


def compare_docs(r, want_doc, got_doc, what, subset):
    compare_events(r, [norm_event(e) for e in events_of(want_doc)],
                   [norm_event(e) for e in events_of(got_doc)], what)
    compare_meta(r, meta_of(want_doc), meta_of(got_doc), what, subset)


# ---- running things ----

def run(cmd, stdin=None):
    if stdin is not None:
        with open(stdin, "rb") as f:
            p = subprocess.run(cmd, stdin=f, capture_output=True)
    else:
        p = subprocess.run(cmd, capture_output=True)
    return p.returncode, p.stdout, p.stderr.decode(errors="replace")


def tool(r, name, *args):
    rc, out, err = run([TOOLS[name], *args])
    r.check("Sanitizer" not in err and "runtime error:" not in err,
            "trace-%s %s: sanitizer report: %s" % (name, " ".join(args), err[:2000]))
    r.check(rc == 0, "trace-%s %s: exit %d: %s" % (name, " ".join(args), rc, err.strip()[:500]))
    return rc == 0


def check_pftrace(r, path, what, summary=False):
    """protoc accepts it, the checker finds nothing; the checker's summary."""
    d = os.path.dirname(os.path.abspath(PROTO))
    rc, _, err = run(["protoc", "--decode=perfetto.protos.Trace", "-I", d, os.path.basename(PROTO)],
                     stdin=path)
    r.check(rc == 0, "%s: protoc --decode=perfetto.protos.Trace fails (exit %d): %s"
            % (what, rc, err.strip()[:500]))
    # protoc exits 0 after some errors (a string field that is not UTF-8): they count too
    errors = [l for l in err.splitlines() if "ERROR" in l]
    r.check(not errors, "%s: protoc --decode=perfetto.protos.Trace reports %d errors: %s"
            % (what, len(errors), "\n    ".join(errors[:3])))
    args = [sys.executable, CHECKER, path] + (["--summary"] if summary else [])
    rc, out, err = run(args)
    problems = (err if summary else out.decode(errors="replace")).strip()
    r.check(rc == 0, "%s: pftrace_check.py finds problems (exit %d):\n    %s"
            % (what, rc, problems.replace("\n", "\n    ")[:3000]))
    if summary and out.strip():
        try:
            return json.loads(out)
        except ValueError:
            r.check(False, "%s: pftrace_check.py --summary printed no JSON" % what)
    return None


def stats_same(r, json_in, pf, what):
    # the sanitizer build: the .pftrace reader and the tables once over, the
    # summary and the operators with FLOPs (the other tables are the plain
    # build's, and stats_realtraces's over the JSON)
    for opts in (STATS_RUNS[0], STATS_RUNS[-1]) if TOOLS_ONLY else STATS_RUNS:
        a = run([TOOLS["stats"], *opts, json_in])
        b = run([TOOLS["stats"], *opts, pf])
        names = {json_in, pf, os.path.basename(json_in), os.path.basename(pf)}

        def keep(out):
            return [l for l in out.decode(errors="replace").splitlines()
                    if not any(n in l for n in names)]
        la, lb = keep(a[1]), keep(b[1])
        label = "trace-stats %s" % " ".join(opts) if opts else "trace-stats"
        r.check(a[0] == b[0], "%s: %s exits %d on the JSON, %d on the .pftrace: %s"
                % (what, label, a[0], b[0], b[2].strip()[:300]))
        if la != lb:
            first = next((i for i, (x, y) in enumerate(zip(la, lb)) if x != y), min(len(la), len(lb)))
            r.check(False, "%s: %s prints other text for the .pftrace (%d vs %d lines), first at line %d:\n"
                    "    json:    %s\n    pftrace: %s"
                    % (what, label, len(la), len(lb), first + 1,
                       la[first][:200] if first < len(la) else "(end)",
                       lb[first][:200] if first < len(lb) else "(end)"))
        else:
            r.check(True, "")


# ---- one trace ----

def same_bytes(r, path, pf, w):
    """The other ways of asking for the format give the same bytes: --to
    pftrace to standard output, the .perfetto-trace suffix, and .pftrace.gz
    (gzip of the same bytes)."""
    with open(pf, "rb") as f:
        want = f.read()
    rc, out, err = run([TOOLS["convert"], path, "--to", "pftrace", "-o", "-", "-q"])
    r.check(rc == 0 and out == want, "trace-convert --to pftrace -o -: exit %d, %s"
            % (rc, "the same bytes" if out == want else "other bytes than -o T.pftrace (%d vs %d)"
               % (len(out), len(want))))
    alt = os.path.join(w, "T.perfetto-trace")
    if tool(r, "convert", path, "-o", alt, "-q"):
        with open(alt, "rb") as f:
            r.check(f.read() == want, "-o T.perfetto-trace writes other bytes than -o T.pftrace")
    gz = os.path.join(w, "T.pftrace.gz")
    if tool(r, "convert", path, "-o", gz, "-q"):
        with open(gz, "rb") as f:
            data = f.read()
        r.check(data[:2] == b"\x1f\x8b" and gzip.decompress(data) == want,
                "-o T.pftrace.gz is not the gzip of -o T.pftrace's bytes")


def one_trace(args):
    """The round trip of one input; returns the Result (run in a worker process)."""
    name, path, tmproot, other_names = args
    r = Result(name)
    t0 = time.time()
    w = tempfile.mkdtemp(prefix="pf-", dir=tmproot)
    try:
        pf = os.path.join(w, "T.pftrace")
        plain = os.path.join(w, "plain.json")
        back = os.path.join(w, "back.json")
        if not tool(r, "convert", path, "-o", pf, "-q"):
            return r
        if not tool(r, "convert", path, "-o", plain, "-q"):
            return r
        if TOOLS_ONLY:
            # the sanitizer build: every tool on every trace; the checks of
            # their outputs (protoc, pftrace_check.py, the JSON compared in
            # Python) are the plain build's, on the same bytes
            if tool(r, "convert", pf, "-o", back, "-q"):
                r.note("%s bytes of pftrace, read back (tools only: TK_TEST_SANITIZED); %.1f s"
                       % (os.path.getsize(pf), time.time() - t0))
            stats_same(r, path, pf, "trace-stats")
            return r
        summary = check_pftrace(r, pf, "T.pftrace", summary=True)
        if other_names:
            same_bytes(r, path, pf, w)
        if tool(r, "convert", pf, "-o", back, "-q"):
            try:
                back_doc = strict_load(back)
            except ValueError as e:
                r.check(False, "back.json is not strict JSON: %s" % e)
                back_doc = None
            if back_doc is not None:
                r.check(isinstance(back_doc, dict), "back.json is not the object form")
                plain_doc = strict_load(plain)
                compare_docs(r, plain_doc, back_doc, "back.json against plain.json", subset=False)
                n_plain = len(events_of(plain_doc))
                del plain_doc
                in_doc = strict_load(path)
                n_in = len(events_of(in_doc))
                compare_docs(r, in_doc, back_doc, "back.json against the input", subset=True)
                del in_doc
                n_back = len(events_of(back_doc))
                del back_doc
                r.note("%d events (plain %d, back %d); JSON %d bytes (input on disk %d), pftrace %d bytes "
                       "(%.0f%% of the JSON)%s; %.1f s"
                       % (n_in, n_plain, n_back, os.path.getsize(plain), os.path.getsize(path),
                          os.path.getsize(pf), 100.0 * os.path.getsize(pf) / max(1, os.path.getsize(plain)),
                          "; %d slices, %d instants, %d counters, %d flows, %d sequences, %d tracks"
                          % (summary["slices"], summary["instants"], summary["counters"], summary["flows"],
                             summary["sequences"], summary["track_descriptors"]) if summary else "",
                          time.time() - t0))
        stats_same(r, path, pf, "trace-stats")
    except Exception as e:  # a crash in the test is a failure, with its trace
        import traceback
        r.check(False, "test error: %s\n%s" % (e, traceback.format_exc()))
    finally:
        shutil.rmtree(w, ignore_errors=True)
    return r


# ---- merge and split ----

def merge_job(args):
    """trace-merge INPUTS -o x.pftrace against -o x.json; with ranks, the order
    of the process tracks."""
    name, inputs, tmproot, want_ranks = args
    r = Result(name)
    w = tempfile.mkdtemp(prefix="pfm-", dir=tmproot)
    try:
        pf, js, back = (os.path.join(w, n) for n in ("all.pftrace", "all.json", "back.json"))
        if not (tool(r, "merge", *inputs, "-o", pf, "-q", "--tmpdir", w)
                and tool(r, "merge", *inputs, "-o", js, "-q", "--tmpdir", w)):
            return r
        summary = check_pftrace(r, pf, "all.pftrace", summary=True)
        js_doc = strict_load(js)
        if tool(r, "convert", pf, "-o", back, "-q"):
            try:
                compare_docs(r, js_doc, strict_load(back), "all.pftrace back to JSON against all.json",
                             subset=False)
            except ValueError as e:
                r.check(False, "back.json is not strict JSON: %s" % e)
        stats_same(r, js, pf, "trace-stats of the merge")
        if want_ranks and summary:
            rank_order(r, summary, js_doc, want_ranks)
        r.note("%d events merged; JSON %d bytes, pftrace %d bytes"
               % (len(events_of(js_doc)), os.path.getsize(js), os.path.getsize(pf)))
    except Exception as e:
        import traceback
        r.check(False, "test error: %s\n%s" % (e, traceback.format_exc()))
    finally:
        shutil.rmtree(w, ignore_errors=True)
    return r


def rank_order(r, summary, js_doc, want_ranks):
    """The process tracks in sibling_order_rank order: grouped by rank,
    ranks ascending; in a rank, CPU (host) processes before GPU ones. A
    process's rank comes from its pid through the merge's pidScheme
    ("rank*K+pid"), checked against a 'rank N' name."""
    scheme = meta_of(js_doc).get("tracekitMerge", {}).get("pidScheme", "")
    m = re.fullmatch(r"rank\*(\d+)\+pid", scheme)
    if not r.check(m, "the merged JSON's tracekitMerge.pidScheme is %r, not rank*K+pid" % scheme):
        return
    k = int(m.group(1))
    int_pids = {e["pid"] for e in events_of(js_doc) if isinstance(e.get("pid"), int)}
    r.check(summary.get("process_ordering") == 1,
            "the root track (uuid 0) has process_ordering %s, not PROCESS_ORDERING_EXPLICIT (1): "
            "viewers ignore sibling_order_rank on process tracks without it" % summary.get("process_ordering"))
    seq = []
    # the process tracks and the named tracks of string pids ("rank 3 Spans"), in sibling order
    tops = [dict(t, pid=None) for t in summary.get("tops", []) if re.match(r"rank \d+\b", t["name"] or "")]
    for p in sorted(summary["processes"] + tops, key=lambda t: t["rank"] if t["rank"] is not None else 0):
        name = p["name"] or ""
        nm = re.match(r"rank (\d+)\b ?(.*)", name)
        if p["pid"] in int_pids and p["pid"] is not None and p["pid"] >= 0:
            rank, local = divmod(p["pid"], k)
            if nm:
                r.check(int(nm.group(1)) == rank, "process %s (pid %d) is named %r, but its pid says rank %d"
                        % (p["uuid"], p["pid"], name, rank))
        elif nm:
            rank, local = int(nm.group(1)), None  # a process the JSON named by a string pid
        else:
            r.check(False, "process track %s (pid %s, %r): no rank from its pid or its name"
                    % (p["uuid"], p["pid"], name))
            continue
        rest = nm.group(2) if nm else name
        if re.match(r"(?i)gpu", rest):
            kind = "GPU"
        elif local is not None:
            kind = "CPU"  # an OS pid, the host process
        else:
            kind = "other"
        seq.append((rank, kind, p))
    ranks = [s[0] for s in seq]
    r.check(sorted(set(ranks)) == list(want_ranks),
            "ranks among the process tracks: %s, want %s" % (sorted(set(ranks)), list(want_ranks)))
    shown = ", ".join("%d:%s:%s(rank %s)" % (s[0], s[1], s[2]["name"], s[2]["rank"]) for s in seq)
    r.check(ranks == sorted(ranks), "process tracks in sibling_order_rank order are not grouped by rank "
            "in ascending order: %s" % shown[:1500])
    for rank in set(ranks):
        kinds = [s[1] for s in seq if s[0] == rank]
        r.check("CPU" in kinds and "GPU" in kinds, "rank %d: want CPU and GPU processes, have %s" % (rank, kinds))
        cpu_last = max((i for i, x in enumerate(kinds) if x == "CPU"), default=-1)
        gpu_first = min((i for i, x in enumerate(kinds) if x == "GPU"), default=len(kinds))
        r.check(cpu_last < gpu_first, "rank %d: a GPU process comes before a CPU one: %s"
                % (rank, [(s[1], s[2]["name"], s[2]["rank"]) for s in seq if s[0] == rank]))
    ranks_tracked = [p["rank"] for p in summary["processes"]]
    r.check(len(set(ranks_tracked)) == len(ranks_tracked),
            "process tracks share sibling_order_rank values (their order is then the viewer's choice): %s"
            % ranks_tracked)


def split_job(args):
    """trace-split IN --to pftrace against --to json: the same parts, each a
    good .pftrace holding the JSON part's events and metadata."""
    name, path, tmproot, rule = args
    r = Result(name)
    w = tempfile.mkdtemp(prefix="pfs-", dir=tmproot)
    try:
        dp, dj = os.path.join(w, "pf"), os.path.join(w, "js")
        if not (tool(r, "split", path, "-o", dp, "--to", "pftrace", "--name", "p", "-q", *rule)
                and tool(r, "split", path, "-o", dj, "--to", "json", "--name", "p", "-q", *rule)):
            return r

        def parts(d):
            out = {}
            for f in os.listdir(d):
                m = re.search(r"part-(\d+)", f)
                if m:
                    out[int(m.group(1))] = os.path.join(d, f)
            return out
        pp, pj = parts(dp), parts(dj)
        r.check(sorted(pp) == sorted(pj) and pp, "--to pftrace wrote parts %s, --to json %s"
                % (sorted(os.listdir(dp)), sorted(os.listdir(dj))))
        r.check(all(p.endswith(".pftrace") for p in pp.values()), "pftrace parts are named %s"
                % sorted(os.path.basename(p) for p in pp.values()))
        r.check(any(f.endswith(".index.json") for f in os.listdir(dp)), "no index beside the pftrace parts")
        for i in sorted(set(pp) & set(pj)):
            check_pftrace(r, pp[i], "part %d" % i)
            back = os.path.join(w, "back%d.json" % i)
            if tool(r, "convert", pp[i], "-o", back, "-q"):
                compare_docs(r, strict_load(pj[i]), strict_load(back), "part %d back to JSON against the "
                             "JSON part" % i, subset=False)
        r.note("%d parts (%s)" % (len(pp), " ".join(rule)))
    except Exception as e:
        import traceback
        r.check(False, "test error: %s\n%s" % (e, traceback.format_exc()))
    finally:
        shutil.rmtree(w, ignore_errors=True)
    return r


# ---- main ----

# Another tool's trace on sequence-scoped clocks, as Perfetto's SDK writes
# them: sequence 1 on an incremental clock in microseconds (64, defined
# against BOOTTIME by a ClockSnapshot, made the default by
# TracePacketDefaults), sequence 2 on BOOTTIME itself.
FOREIGN_CLOCKS = """
packet { trusted_packet_sequence_id: 1 timestamp: 1000000 timestamp_clock_id: 6 sequence_flags: 1
  clock_snapshot { clocks { clock_id: 64 timestamp: 500 unit_multiplier_ns: 1000 is_incremental: true }
                   clocks { clock_id: 3 timestamp: 7 } clocks { clock_id: 6 timestamp: 1000000 } }
  trace_packet_defaults { timestamp_clock_id: 64 } }
packet { trusted_packet_sequence_id: 1 track_descriptor { uuid: 10 thread { pid: 5 tid: 7 thread_name: "main" } } }
packet { trusted_packet_sequence_id: 1 timestamp: 20 sequence_flags: 2
  interned_data { event_names { iid: 1 name: "step" } }
  track_event { type: TYPE_SLICE_BEGIN track_uuid: 10 name_iid: 1 } }
packet { trusted_packet_sequence_id: 1 timestamp: 7 sequence_flags: 2
  track_event { type: TYPE_INSTANT track_uuid: 10 name: "inside" } }
packet { trusted_packet_sequence_id: 1 timestamp: 23 sequence_flags: 2
  track_event { type: TYPE_SLICE_END track_uuid: 10 } }
packet { trusted_packet_sequence_id: 2 timestamp: 1100000
  track_event { type: TYPE_INSTANT track_uuid: 10 name: "later" } }
"""
# (ts, dur) in microseconds that FOREIGN_CLOCKS stands for
FOREIGN_WANT = {"step": (1020.0, 30.0), "inside": (1027.0, None), "later": (1100.0, None)}
FOREIGN_NO_SNAPSHOT = """
packet { trusted_packet_sequence_id: 3 timestamp: 5 timestamp_clock_id: 64
  track_event { type: TYPE_INSTANT track_uuid: 10 name: "lost" } }
"""


def encode(r, text, path):
    d = os.path.dirname(os.path.abspath(PROTO))
    p = subprocess.run(["protoc", "--encode=perfetto.protos.Trace", "-I", d, os.path.basename(PROTO)],
                       input=text.encode(), capture_output=True)
    r.check(p.returncode == 0, "protoc --encode fails: %s" % p.stderr.decode(errors="replace")[:500])
    with open(path, "wb") as f:
        f.write(p.stdout)
    return p.returncode == 0


def foreign_job(args):
    """Timestamps on another tool's sequence-scoped clocks come back on the
    trace's time line; one on a clock no snapshot defines is an error."""
    name, tmproot = args
    r = Result(name)
    w = tempfile.mkdtemp(prefix="pf-", dir=tmproot)
    pf, back = os.path.join(w, "clocks.pftrace"), os.path.join(w, "clocks.json")
    if encode(r, FOREIGN_CLOCKS, pf):
        check_pftrace(r, pf, "clocks.pftrace")
        if tool(r, "convert", pf, "-o", back, "-q"):
            got = {e.get("name"): e for e in events_of(strict_load(back)) if e.get("ph") != "M"}
            for n, (ts, dur) in FOREIGN_WANT.items():
                e = got.get(n)
                if r.check(e is not None, "no event %r in %s" % (n, sorted(got))):
                    same_dur = e.get("dur") is None if dur is None else num_equal(e.get("dur"), dur, exact=True)
                    r.check(num_equal(e.get("ts"), ts, exact=True) and same_dur,
                            "%s: ts %r dur %r, want %r %r" % (n, e.get("ts"), e.get("dur"), ts, dur))
    bad = os.path.join(w, "no_snapshot.pftrace")
    if encode(r, FOREIGN_CLOCKS + FOREIGN_NO_SNAPSHOT, bad):
        rc, _, err = run([TOOLS["convert"], bad, "-o", os.path.join(w, "bad.json"), "-q"])
        r.check(rc != 0 and "clock 64" in err and "no_snapshot.pftrace" in err,
                "a timestamp on an undefined clock: exit %d, %r (want an error naming the file and clock 64)"
                % (rc, err.strip()[:300]))
        r.check(not os.path.exists(os.path.join(w, "bad.json")), "a failed conversion left bad.json behind")
    return r



def foreign_iids_text():
    """Another tool's interning: small iids, far ones (4e9), an iid first
    defined far beyond the others and later within their range, names and
    strings that need escaping in JSON, and iids defined again after the
    sequence's incremental state is cleared."""
    many = " ".join('event_names { iid: %d name: "n%d" }' % (i, i) for i in range(100, 600))
    return """
packet { trusted_packet_sequence_id: 1 track_descriptor { uuid: 10 thread { pid: 5 tid: 7 } } }
packet { trusted_packet_sequence_id: 1 timestamp: 1000 sequence_flags: 3
  interned_data { event_names { iid: 1 name: "small" } event_names { iid: 4000000000 name: "far" }
    event_names { iid: 5000 name: "sparse" }
    debug_annotation_names { iid: 2 name: "plain" } debug_annotation_names { iid: 3 name: "q\\"b\\\\s" }
    debug_annotation_names { iid: 5000 name: "caf\\303\\251" } debug_annotation_names { iid: 6 name: "dict" }
    debug_annotation_string_values { iid: 1 str: "v\\tx" } debug_annotation_string_values { iid: 7 str: "ok" } }
  track_event { type: TYPE_INSTANT track_uuid: 10 name_iid: 1
    debug_annotations { name_iid: 2 string_value_iid: 7 } debug_annotations { name_iid: 3 string_value_iid: 1 }
    debug_annotations { name_iid: 5000 double_value: 17.818182 }
    debug_annotations { name_iid: 6 dict_entries { name_iid: 3 int_value: 1 } } } }
packet { trusted_packet_sequence_id: 1 timestamp: 2000 sequence_flags: 2
  track_event { type: TYPE_INSTANT track_uuid: 10 name_iid: 4000000000 } }
packet { trusted_packet_sequence_id: 1 timestamp: 3000 sequence_flags: 2
  track_event { type: TYPE_INSTANT track_uuid: 10 name_iid: 5000 } }
packet { trusted_packet_sequence_id: 1 timestamp: 4000 sequence_flags: 2
  interned_data { %s event_names { iid: 5001 name: "n5001" } }
  track_event { type: TYPE_INSTANT track_uuid: 10 name_iid: 5000 } }
packet { trusted_packet_sequence_id: 1 timestamp: 5000 sequence_flags: 2
  interned_data { event_names { iid: 5000 name: "sparse again" } }
  track_event { type: TYPE_INSTANT track_uuid: 10 name_iid: 5000 } }
packet { trusted_packet_sequence_id: 1 timestamp: 6000 sequence_flags: 3
  interned_data { event_names { iid: 1 name: "renamed" } }
  track_event { type: TYPE_INSTANT track_uuid: 10 name_iid: 1 } }
""" % many


# (name, args) of FOREIGN_IIDS' instants, in order
FOREIGN_IIDS_WANT = [("small", {"plain": "ok", 'q"b\\s': "v\tx", "caf\u00e9": decimal.Decimal("17.818182"), "dict": {'q"b\\s': 1}}),
                     ("far", None), ("sparse", None), ("sparse", None), ("sparse again", None), ("renamed", None)]
FOREIGN_IIDS_CLEARED = """
packet { trusted_packet_sequence_id: 1 timestamp: 7000 sequence_flags: 3
  track_event { type: TYPE_INSTANT track_uuid: 10 name_iid: 5000 } }
"""


def foreign_iids_job(args):
    """Interned strings of another tool come back by iid, small or far,
    escaped in JSON, and are forgotten when the sequence clears them. (No
    pftrace_check.py here: defining iid 5000 again within one incremental
    state, which the reader takes as the newer value, is not Perfetto's.)"""
    name, tmproot = args
    r = Result(name)
    w = tempfile.mkdtemp(prefix="pf-", dir=tmproot)
    text = foreign_iids_text()
    pf, back = os.path.join(w, "iids.pftrace"), os.path.join(w, "iids.json")
    if encode(r, text, pf):
        if tool(r, "convert", pf, "-o", back, "-q"):
            got = [(e.get("name"), e.get("args")) for e in events_of(strict_load(back)) if e.get("ph") == "i"]
            r.check(got == FOREIGN_IIDS_WANT, "interned names and args: got %r, want %r" % (got, FOREIGN_IIDS_WANT))
    bad = os.path.join(w, "cleared.pftrace")
    if encode(r, text + FOREIGN_IIDS_CLEARED, bad):
        rc, _, err = run([TOOLS["convert"], bad, "-o", os.path.join(w, "bad.json"), "-q"])
        r.check(rc != 0 and "unknown interned id" in err and "cleared.pftrace" in err,
                "an iid used after its sequence was cleared: exit %d, %r (want an error naming the file)"
                % (rc, err.strip()[:300]))
    return r


# Set (to 1) by the sanitizer build's ctest for the tests over the real
# traces: the tools run on every trace as always, and what checks their
# outputs outside tracekit's code (protoc, pftrace_check.py, the comparisons
# in Python, several minutes that no sanitizer looks into) is left to the
# plain build's run of the same test.
TOOLS_ONLY = os.environ.get("TK_TEST_SANITIZED") == "1"


def run_jobs(jobs):
    """(function, args) pairs on a pool of os.cpu_count() worker processes
    (processes, not threads: the comparisons are Python code); the results in
    the order given."""
    results = []
    with concurrent.futures.ProcessPoolExecutor(max_workers=os.cpu_count() or 2) as ex:
        futs = [ex.submit(f, a) for f, a in jobs]
        for fut in futs:
            res = fut.result()
            for line in res.lines:
                print(line, flush=True)
            for fl in res.failures:
                print("FAIL:", fl, flush=True)
            results.append(res)
    return results


def testdata_inputs(testdata, tmp):
    """Every testdata trace (a leading '#' line taken off), and those
    trace-convert reads (some are broken on purpose)."""
    files = sorted(glob.glob(os.path.join(testdata, "*.json")) +
                   glob.glob(os.path.join(testdata, "stats", "*.json")) +
                   glob.glob(os.path.join(testdata, "stats", "torch113", "*.json")))
    out = []
    for f in files:
        with open(f, "rb") as fh:
            data = fh.read()
        if data.startswith(b"#"):
            data = data.split(b"\n", 1)[1] if b"\n" in data else b""
        rel = os.path.relpath(f, testdata)
        p = os.path.join(tmp, "in", rel.replace(os.sep, "__"))
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "wb") as fh:
            fh.write(data)
        rc, _, _ = run([TOOLS["convert"], p, "-o", os.path.join(tmp, "probe.json"), "-q"])
        if rc == 0:
            out.append((rel, p))
        else:
            print("(%s: trace-convert refuses it, exit %d: not used)" % (rel, rc))
    return out


def main(argv):
    global PROTO, CHECKER
    if len(argv) != 10 or argv[1] not in ("cli", "real"):
        print(__doc__.split("\n\n")[1])
        return 2
    mode = argv[1]
    TOOLS.update(convert=argv[2], merge=argv[3], stats=argv[4], split=argv[5])
    testdata, real, PROTO, CHECKER = argv[6:10]
    for t in TOOLS.values():
        if not os.access(t, os.X_OK):
            print("not an executable: %s" % t)
            return 1
    if not os.path.isfile(PROTO):
        print("skipped: Perfetto's schema is not at %s" % PROTO)
        return 77
    if not shutil.which("protoc"):
        print("skipped: no protoc on PATH (apt-get install protobuf-compiler)")
        return 77
    if mode == "real" and not os.path.isfile(os.path.join(real, "index.tsv")):
        print("skipped: the real traces are not at %s (no index.tsv)" % real)
        return 77
    _, help_out, _ = run([TOOLS["convert"], "--help"])
    if b"pftrace" not in help_out:
        print("FAIL: trace-convert --help does not list pftrace among the output formats")
        return 1
    t0 = time.time()
    with tempfile.TemporaryDirectory(prefix="tkpf-") as tmp:
        jobs = []
        if mode == "cli":
            for rel, p in testdata_inputs(testdata, tmp):
                jobs.append((one_trace, (rel, p, tmp, True)))
            tiny = [os.path.join(testdata, "stats", n) for n in ("tiny_gpu.json", "tiny_gpu_rank1.json")]
            jobs.append((merge_job, ("merge tiny_gpu + tiny_gpu_rank1", tiny, tmp, None)))
            ex = os.path.join(testdata, "example_kineto.json")
            jobs.append((split_job, ("split example_kineto --parts 3", ex, tmp, ["--parts", "3"])))
            jobs.append((split_job, ("split example_kineto --every 300us --clip", ex, tmp,
                                     ["--every", "300us", "--clip"])))
            jobs.append((foreign_job, ("another tool's sequence clocks", tmp)))
            jobs.append((foreign_iids_job, ("another tool's interned strings", tmp)))
        else:
            with open(os.path.join(real, "index.tsv")) as f:
                rows = [l.split("\t") for l in f.read().splitlines()[1:] if l.strip()]
            rows.sort(key=lambda x: -int(x[3]))  # the largest first: they take longest
            dlrm = sorted(glob.glob(os.path.join(real, "param-dlrm-8rank", "dlrm_kineto", "*.json")))
            if dlrm:
                jobs.append((merge_job, ("merge param-dlrm-8rank", dlrm, tmp, range(8))))
            else:
                print("FAIL: no param-dlrm-8rank/dlrm_kineto/*.json under %s" % real)
                return 1
            for row in rows:
                jobs.append((one_trace, (row[0], os.path.join(real, row[0]), tmp, False)))
            jobs.append((split_job, ("split dlrm worker0 --parts 4", dlrm[0], tmp, ["--parts", "4"])))
        results = run_jobs(jobs)
    checks = sum(r.checks for r in results)
    failed = [f for r in results for f in r.failures]
    bad = sorted({r.what for r in results if r.failures})
    if TOOLS_ONLY and mode == "real":
        print("TK_TEST_SANITIZED=1: the tools ran on every trace; protoc, pftrace_check.py and the JSON "
              "comparisons are the plain build's")
    print("%d traces and jobs, %d checks, %d failed (%.0f s)%s" % (len(results), checks, len(failed),
                                                                 time.time() - t0,
                                                                 ": " + ", ".join(bad) if bad else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
