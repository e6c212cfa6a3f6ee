#!/usr/bin/env python3
"""test_merge.py: trace-merge on the real 8-rank DLRM and 4-rank gloo traces.

usage: test_merge.py TRACE_MERGE REALTRACES_DIR
Exits 77 (skipped) when the real traces are absent."""
import collections
import glob
import json
import os
import re
import subprocess
import sys
import tempfile

TOOL, REAL = sys.argv[1], sys.argv[2]
DLRM = os.path.join(REAL, "param-dlrm-8rank", "dlrm_kineto")
GLOO = os.path.join(REAL, "generated-torch1.13-legacy-cpu", "gloo-4rank")
PROC_META = ("process_name", "process_labels", "process_sort_index")
failures = []


def check(cond, msg):
    if not cond:
        failures.append(msg)
        print("FAIL:", msg)


def strict_load(path):
    def bad(c):
        raise ValueError("not strict JSON: " + c)
    with open(path, "rb") as f:
        data = f.read()
    if path.endswith(".gz"):
        import gzip
        data = gzip.decompress(data)
    return json.loads(data, parse_constant=bad)


def run(*args, ok=True):
    p = subprocess.run([TOOL, *args], capture_output=True, text=True)
    if ok and p.returncode != 0:
        print(p.stderr)
        raise SystemExit("trace-merge %s failed with %d" % (" ".join(args), p.returncode))
    return p


def events(doc):
    return doc if isinstance(doc, list) else doc["traceEvents"]


def key(e, rank, shift_ns=0):
    """An event's identity, independent of the pid/tid/id remapping."""
    ts = e.get("ts")
    if ts is not None:
        ts = round(ts * 1000) + shift_ns
    args = e.get("args")
    if e.get("ph") == "M" and e.get("name") in PROC_META:
        args = None  # rewritten to say the rank
    return (rank, e.get("ph"), e.get("name"), e.get("cat"), ts, e.get("dur"),
            json.dumps(args, sort_keys=True))


def out_rank(e):
    pid = e.get("pid")
    if isinstance(pid, int):
        return pid // 1000000
    m = re.match(r"rank (\d+) ", pid or "")
    return int(m.group(1)) if m else None


def check_merge(name, inputs_by_rank, out, shifts=None):
    """Every input event once, sorted, flows within their rank, process names."""
    doc = strict_load(out)
    evs = doc["traceEvents"]
    want = collections.Counter()
    for rank, path in inputs_by_rank.items():
        for e in events(strict_load(path)):
            want[key(e, rank, (shifts or {}).get(rank, 0))] += 1
    got = collections.Counter(key(e, out_rank(e)) for e in evs)
    synth = collections.Counter({k: n for k, n in (got - want).items()
                                 if k[1] == "M" and k[2] in PROC_META})
    check(got - want - synth == collections.Counter(), "%s: events not in the inputs: %s"
          % (name, list((got - want - synth).items())[:3]))
    check(want - got == collections.Counter(), "%s: input events missing or doubled: %s"
          % (name, list((want - got).items())[:3]))
    ts = [e["ts"] for e in evs if "ts" in e]
    check(ts == sorted(ts), "%s: output not sorted by ts" % name)
    first_ts = next((i for i, e in enumerate(evs) if "ts" in e), len(evs))
    check(all("ts" not in e for e in evs[:first_ts]), "%s: events without ts first" % name)
    starts, ends, owner = collections.defaultdict(set), collections.defaultdict(set), {}
    for e in evs:
        if e.get("ph") in ("s", "f"):
            r = out_rank(e)
            (starts if e["ph"] == "s" else ends)[r].add(e["id"])
            check(owner.setdefault(e["id"], r) == r, "%s: flow id %s in two ranks" % (name, e["id"]))
    for r, ids in starts.items():
        check(ids <= ends[r], "%s: rank %d: flow starts without an end: %s"
              % (name, r, sorted(ids - ends[r])[:5]))
    names = {(out_rank(e), e["args"]["name"]) for e in evs
             if e.get("ph") == "M" and e.get("name") == "process_name"}
    for r in inputs_by_rank:
        check(any(n.startswith("rank %d" % r) for rr, n in names if rr == r),
              "%s: no process named for rank %d" % (name, r))
    check(set(doc["ranks"]) == {str(r) for r in inputs_by_rank}, "%s: ranks metadata" % name)
    return doc


def offsets(doc):
    return {i["rank"]: i["offsetNs"] for i in doc["tracekitMerge"]["inputs"]}


def shifted_copies(tmp, files, shift_us):
    """Copies of the DLRM files with every ts moved by shift_us[rank]."""
    out = {}
    for r, path in files.items():
        doc = strict_load(path)
        for e in doc["traceEvents"]:
            if "ts" in e:
                e["ts"] += shift_us[r]
        out[r] = os.path.join(tmp, "skew_rank%d.json" % r)
        with open(out[r], "w") as f:
            json.dump(doc, f)
    return out


def main():
    if not os.path.isdir(DLRM) or not os.path.isdir(GLOO):
        print("skipped: the real traces are not at %s (set TK_REALTRACES)" % REAL)
        return 77
    dlrm = {int(re.search(r"worker(\d+)", p).group(1)): p
            for p in glob.glob(os.path.join(DLRM, "worker*.json"))}
    gloo = {int(re.search(r"rank(\d+)", p).group(1)): p
            for p in glob.glob(os.path.join(GLOO, "*.json"))}
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "dlrm.json")
        run(DLRM, "-o", out, "--memory", "1M", "--tmpdir", tmp)  # spills many runs
        doc = check_merge("dlrm", dlrm, out)
        check(len(doc["deviceProperties"]) == 8, "dlrm: deviceProperties merged")
        check(doc["ranks"]["3"]["distributedInfo"]["rank"] == 3, "dlrm: distributedInfo kept")
        check(os.listdir(tmp) == ["dlrm.json"], "dlrm: temporary files left: %s" % os.listdir(tmp))
        # a .pftrace or .sqlite output's own sorting spills to --tmpdir too, never to $TMPDIR
        env = dict(os.environ, TMPDIR=os.path.join(tmp, "no-such-tmp"))
        for name in ("dlrm.pftrace", "dlrm.sqlite"):
            out = os.path.join(tmp, name)
            p = subprocess.run([TOOL, DLRM, "-o", out, "-q", "--memory", "1M", "--tmpdir", tmp],
                               capture_output=True, text=True, env=env)
            check(p.returncode == 0 and os.path.getsize(out) > 0,
                  "%s with --tmpdir and $TMPDIR missing: %d %s" % (name, p.returncode, p.stderr))
            if os.path.exists(out):
                os.remove(out)
            check(os.listdir(tmp) == ["dlrm.json"], "%s: temporary files left: %s" % (name, os.listdir(tmp)))

        out = os.path.join(tmp, "gloo.json.gz")
        run(os.path.join(GLOO, "*.json"), "--rank-from", r"rank([0-9]+)", "-o", out)
        check_merge("gloo", gloo, out)

        # planted clock skew: --align collectives finds it again
        plant = {r: (r * 1234567 + (r % 3) * 89) for r in dlrm}  # microseconds
        skewed = shifted_copies(tmp, dlrm, plant)
        base = offsets(run_doc(tmp, "--align", "collectives", *[dlrm[r] for r in sorted(dlrm)]))
        out = os.path.join(tmp, "skew.json")
        p = run("--align", "collectives", "-o", out, *[skewed[r] for r in sorted(skewed)])
        got = offsets(strict_load(out))
        for r in dlrm:
            check(got[r] - base[r] == -(plant[r] - plant[0]) * 1000,
                  "skew: rank %d offset %d, expected %d" % (r, got[r] - base[r], -(plant[r] - plant[0]) * 1000))
            check(re.search(r"rank %d: offset .* residual" % r, p.stderr) or r == 0,
                  "skew: offset of rank %d reported" % r)
        # after alignment the skewed merge equals the plain aligned merge shifted by rank 0's plant
        aligned = run_doc(tmp, "--align", "collectives", *[skewed[r] for r in sorted(skewed)])
        plain = run_doc(tmp, "--align", "collectives", *[dlrm[r] for r in sorted(dlrm)])
        a = [(out_rank(e), e.get("name"), e.get("ts")) for e in aligned["traceEvents"]]
        b = [(out_rank(e), e.get("name"), None if e.get("ts") is None else e["ts"] + plant[0])
             for e in plain["traceEvents"]]
        check(sorted(a, key=str) == sorted(b, key=str), "skew: aligned merge differs from the plain one")

        # offsets by hand
        offs = os.path.join(tmp, "offsets.txt")
        with open(offs, "w") as f:
            f.write("# rank offset_ns\n1 5000\n2 -3us\n")
        doc = run_doc(tmp, "--align", offs, dlrm[0], dlrm[1], dlrm[2])
        check(offsets(doc) == {0: 0, 1: 5000, 2: -3000}, "given offsets applied: %s" % offsets(doc))

        # filters
        doc = run_doc(tmp, "--ranks", "0,2-3", "--cat", "kernel", DLRM)
        check({out_rank(e) for e in doc["traceEvents"]} == {0, 2, 3}, "--ranks")
        check({e.get("cat") for e in doc["traceEvents"] if e["ph"] != "M"} == {"kernel"}, "--cat")
        full = run_doc(tmp, DLRM)
        t0 = next(e["ts"] for e in full["traceEvents"] if e["ph"] != "M" and "ts" in e)
        doc = run_doc(tmp, "--window", "+1ms:+2ms", DLRM)
        t = [e for e in doc["traceEvents"] if e["ph"] != "M" and "ts" in e]
        check(0 < len(t) < len(full["traceEvents"]), "--window keeps some events")
        check(all(e["ts"] <= t0 + 2000 + 1e-3 for e in t), "--window upper bound")
        check(all(e["ts"] + e.get("dur", 0) >= t0 + 1000 - 1e-3 for e in t), "--window lower bound")

        # errors: duplicate ranks, a bad input; never a half-written output
        out = os.path.join(tmp, "bad.json")
        p = run(dlrm[0], dlrm[0], "-o", out, ok=False)
        check(p.returncode == 1 and "appears twice" in p.stderr, "duplicate rank: %s" % p.stderr)
        check(not os.path.exists(out), "duplicate rank: output written")
        cut = os.path.join(tmp, "cut.json")
        with open(dlrm[1], "rb") as f, open(cut, "wb") as g:
            g.write(f.read()[:300000] + b"garbage")
        p = run(dlrm[0], cut, os.path.join(tmp, "missing.json"), "--strict", "-o", out, ok=False)
        check(p.returncode == 1 and "cut.json" in p.stderr and "missing.json" in p.stderr,
              "bad inputs named: %s" % p.stderr)
        check(not os.path.exists(out), "bad input: output written")
        check(not [f for f in os.listdir(tmp) if ".tmp" in f], "temporary output left")
    print("%d failures" % len(failures))
    return 1 if failures else 0


def run_doc(tmp, *args):
    out = os.path.join(tmp, "run.json")
    run(*args, "-o", out, "-q")
    return strict_load(out)


if __name__ == "__main__":
    sys.exit(main())
