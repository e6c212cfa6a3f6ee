#!/usr/bin/env python3
"""test_diff.py: trace-diff: two traces' tables side by side.

usage: test_diff.py hand|real TOOLS_DIR TESTDATA_DIR [REALTRACES_DIR]

hand: testdata/steps/launch.json against a copy with one kernel longer, one
gone and one new, every figure worked out by hand below; two step ranges
of one trace; the formats; usage errors. real: two real runs of the same
model (hta-trace_diff), every kernel row against counts and times computed
here from the two JSON files.
"""
import collections
import csv
import decimal
import gzip
import io
import json
import os
import subprocess
import sys
import tempfile

import clitest
from clitest import check

def diff(tools, *args, rc=0):
    p = subprocess.run([os.path.join(tools, "trace-diff"), *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True)
    if p.returncode != rc:
        raise SystemExit("trace-diff %s: exit %d, expected %d: %s" % (" ".join(args), p.returncode, rc, p.stderr))
    return p


def hand(tools, data, tmp):
    a = os.path.join(data, "steps", "launch.json")
    b = os.path.join(tmp, "b.json")
    # k_b runs 500 us instead of 200; k_c (40 us) is renamed k_d
    text = open(a).read().replace('"name":"k_b","ts":2100,"dur":200', '"name":"k_b","ts":2100,"dur":500')
    open(b, "w").write(text.replace('"name":"k_c"', '"name":"k_d"'))
    d = json.loads(diff(tools, a, b, "-t", "kernels", "-f", "json", "-n", "-1").stdout)["kernels"]
    got = [(r["name"], r["count_base"], r["count_new"], r["total_ns_base"], r["total_ns_new"], r["total_ns_change"],
            r["change_pct"], r["status"]) for r in d["rows"]]
    # sorted by the change of total time, then by name
    want = [("k_b", 1, 1, 200000, 500000, 300000, 150.0, ""),
            ("k_c", 1, 0, 40000, 0, -40000, -100.0, "gone"),
            ("k_d", 0, 1, 0, 40000, 40000, None, "new"),
            ("k_a", 1, 1, 100000, 100000, 0, 0.0, ""),
            ("k_orphan", 1, 1, 10000, 10000, 0, 0.0, ""),
            ("k_pre", 1, 1, 50000, 50000, 0, 0.0, "")]
    check("kernels: rows matched by name, changes, new and gone, in order of change", got == want, got)
    tot = d["totals"]["total_ns"]
    check("kernels: totals at the foot (400 us -> 700 us, one new, one gone)",
          tot == {"base": 400000, "new": 700000, "change": 300000, "rows_new": 1, "rows_gone": 1}, tot)
    check("the names of both sides in the totals", d["totals"]["base"] == a and d["totals"]["new"] == b, d["totals"])

    # the operators' footer: each side's Self CPU and Self CUDA totals are
    # trace-stats's for that trace (a kernel's time counted once, on its own
    # row, not again on the op that launched it)
    ft = json.loads(diff(tools, a, b, "-t", "ops", "-f", "json", "-n", "-1").stdout)["ops"]["totals"]
    st = [json.loads(subprocess.run([os.path.join(tools, "trace-stats"), x, "-t", "ops", "-f", "json"],
                                    stdout=subprocess.PIPE, check=True).stdout)["ops"]["totals"] for x in (a, b)]
    foot = (ft["self_cpu_ns"]["base"], ft["self_cpu_ns"]["new"], ft["self_cuda_ns"]["base"], ft["self_cuda_ns"]["new"])
    stats = (st[0]["self_cpu_time_total_ns"], st[1]["self_cpu_time_total_ns"], st[0]["self_cuda_time_total_ns"],
             st[1]["self_cuda_time_total_ns"])
    check("ops: the Self CPU and Self CUDA totals at the foot are trace-stats's (430 us -> 730 us of GPU time)",
          foot == stats and stats[2:] == (430000, 730000), (foot, stats))

    # a row both sides have, with a base of 0: its change in percent is not
    # a number ("-", null), and it is not "new"
    a0 = os.path.join(tmp, "a0.json")
    open(a0, "w").write(open(a).read().replace('"name":"k_a","ts":1300,"dur":100', '"name":"k_a","ts":1300,"dur":0'))
    out = diff(tools, a0, a, "-t", "kernels", "-n", "-1").stdout
    row = [l.split() for l in out.splitlines() if l.split()[-1:] == ["k_a"]]
    d = json.loads(diff(tools, a0, a, "-t", "kernels", "-f", "json", "-n", "-1").stdout)["kernels"]["rows"]
    ka = [r for r in d if r["name"] == "k_a"]
    check("a base of 0 on both sides: Change (%) reads '-' (null), the status stays empty",
          len(row) == 1 and row[0][-2] == "-" and len(ka) == 1 and ka[0]["change_pct"] is None and
          ka[0]["status"] == "", (row, ka))

    # two step ranges of one trace: step 1 (busy 150 us, 3 ops launched)
    # against step 2 (busy 280 us, 2 ops), as test_steps.py works them out
    d = json.loads(diff(tools, a, a, "--base-steps", "1", "--new-steps", "2", "-t", "steps,kernels", "-f",
                        "json").stdout)
    m = {r["metric"]: (r["value_base"], r["value_new"], r["value_change"]) for r in d["steps"]["rows"]}
    check("steps: step 1 against step 2 of one trace",
          m["busy_ns"] == (150000, 280000, 130000) and m["host_wait_ns"] == (550000, 410000, -140000) and
          m["gpu_ops"] == (3, 2, -1) and d["steps"]["totals"]["steps"] == [1, 1], m)
    k = {r["name"]: (r["count_base"], r["count_new"]) for r in d["kernels"]["rows"]}
    check("kernels by step: each side the kernels its steps launched (docs/steps.md)",
          k == {"k_a": (1, 0), "k_b": (1, 0), "k_c": (0, 1), "k_orphan": (0, 1)}, k)

    out = diff(tools, a, b, "-t", "kernels", "-f", "csv").stdout
    rows = list(csv.DictReader(io.StringIO(out)))
    check("CSV loads, with the same rows", [r["name"] for r in rows] == [w[0] for w in want], rows[:1])
    # CSV holds one table: several go to a file each, FILE.KEY.csv
    for tool, args in (("trace-diff", [a, b]), ("trace-stats", [a, "-t", "ops,kernels,steps"])):
        o = os.path.join(tmp, tool + ".csv")
        p = subprocess.run([os.path.join(tools, tool), *args, "-f", "csv", "-o", o], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
        keys = ["ops", "kernels"] + (["memcpy", "api"] if tool == "trace-diff" else ["steps"])
        files = [os.path.join(tmp, "%s.%s.csv" % (tool, k)) for k in keys]
        loaded = [list(csv.DictReader(open(f))) for f in files if os.path.exists(f)]
        check("%s -f csv -o FILE.csv with several tables: one file per table (%s), each one CSV"
              % (tool, ", ".join(os.path.basename(f) for f in files)),
              p.returncode == 0 and len(loaded) == len(keys) and all(loaded) and not os.path.exists(o)
              and all(len(set(len(r) for r in rows)) == 1 for rows in loaded), (p.returncode, p.stderr, os.listdir(tmp)))
        check("%s -f csv -o FILE.csv with several tables names the files it wrote" % tool,
              "%d tables, a CSV file each: %s" % (len(keys), ", ".join(files)) in p.stderr, p.stderr)
        p = subprocess.run([os.path.join(tools, tool), *args, "-f", "csv"], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
        check("%s -f csv on standard output with several tables warns that it is not one CSV" % tool,
              p.returncode == 0 and "does not load as one" in p.stderr, p.stderr)
        o1 = os.path.join(tmp, tool + "-one.csv")
        inputs = args[:2] if tool == "trace-diff" else args[:1]
        p = subprocess.run([os.path.join(tools, tool), *inputs, "-t", "kernels", "-f", "csv", "-o", o1],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        check("%s -t kernels -f csv -o FILE.csv: that file" % tool,
              p.returncode == 0 and os.path.exists(o1) and list(csv.DictReader(open(o1))) and not p.stderr, p.stderr)

    out = diff(tools, a, b, "-t", "ops,kernels", "-f", "md").stdout
    check("Markdown: a title and a table per kind", out.count("| ---") == 0 and out.count("|:---") + out.count("| :")
          >= 0 and "CUDA GPU Kernels:" in out and "Operators" in out and out.count("\n|") > 10, out[:200])
    out = diff(tools, a, b).stdout
    check("text: both inputs named, then the tables", out.startswith("base: %s\nnew:  %s\n" % (a, b)), out[:100])

    p = diff(tools, a, rc=2)
    check("one input is a usage error", "two traces to compare are needed" in p.stderr, p.stderr)
    p = diff(tools, a, b, a, rc=2)
    check("three inputs are a usage error", "two traces only" in p.stderr, p.stderr)
    p = diff(tools, a, b, "-t", "kernel", rc=2)
    check("a bad table names the option and the valid ones",
          "-t/--tables: bad value 'kernel' (valid: ops, kernels, memcpy, api, steps" in p.stderr, p.stderr)
    p = subprocess.run([os.path.join(tools, "trace-diff"), "-", a, "--steps", "1"], stdin=open(a),
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    check("--steps on standard input is a usage error", p.returncode == 2 and "save it to a file" in p.stderr,
          p.stderr)
    p = diff(tools, a, b, "-o", a, rc=2)
    check("-o naming an input is a usage error", "is one of the inputs" in p.stderr or "input" in p.stderr, p.stderr)
    tar = os.path.join(tmp, "two.tar")
    subprocess.run(["tar", "-cf", tar, "-C", os.path.dirname(a), "launch.json", "overlap.json"], check=True)
    p = diff(tools, tar, b, rc=1)
    check("an archive of two traces is refused, naming the archive and saying how to name one",
          "error: %s: BASE stands for more than one trace (%s//overlap.json is the second)" % (tar, tar) in p.stderr
          and "ARCHIVE//MEMBER" in p.stderr, p.stderr)
    p = diff(tools, tar + "//launch.json", b, "-t", "kernels", "-f", "json")
    check("ARCHIVE//MEMBER is one trace", len(json.loads(p.stdout)["kernels"]["rows"]) == 6, p.stdout[:100])


def kernels_of(path):
    with gzip.open(path, "rt") if path.endswith(".gz") else open(path) as f:
        d = json.load(f, parse_float=decimal.Decimal)
    evs = d["traceEvents"] if isinstance(d, dict) else d
    k = collections.defaultdict(lambda: [0, 0])
    for e in evs:
        if isinstance(e, dict) and e.get("ph") == "X" and e.get("cat") in ("kernel", "Kernel") and "ts" in e:
            k[e["name"]][0] += 1
            k[e["name"]][1] += int(decimal.Decimal(e.get("dur", 0)) * 1000)
    return k


def real(tools, root):
    a = os.path.join(root, "hta-trace_diff/control/control.json.gz")
    b = os.path.join(root, "hta-trace_diff/test/test.json.gz")
    ka, kb = kernels_of(a), kernels_of(b)
    d = json.loads(diff(tools, a, b, "-t", "kernels", "-f", "json", "-n", "-1", "-q").stdout)["kernels"]
    got = {r["name"]: (r["count_base"], r["total_ns_base"], r["count_new"], r["total_ns_new"]) for r in d["rows"]}
    want = {n: (ka[n][0] if n in ka else 0, ka[n][1] if n in ka else 0, kb[n][0] if n in kb else 0,
                kb[n][1] if n in kb else 0) for n in set(ka) | set(kb)}
    check("hta-trace_diff: %d kernel rows (%d new, %d gone) equal counts and times computed from the JSON"
          % (len(want), len(set(kb) - set(ka)), len(set(ka) - set(kb))), got == want,
          [(n, got.get(n), want[n]) for n in want if got.get(n) != want[n]][:2])
    keys = [abs(r["total_ns_change"]) for r in d["rows"]]
    check("hta-trace_diff: rows in order of the change of total time", keys == sorted(keys, reverse=True))


def main():
    if len(sys.argv) < 4 or sys.argv[1] not in ("hand", "real") or (sys.argv[1] == "real" and len(sys.argv) < 5):
        print(__doc__)
        sys.exit(2)
    tools, data = sys.argv[2], sys.argv[3]
    with tempfile.TemporaryDirectory() as tmp:
        if sys.argv[1] == "hand":
            hand(tools, data, tmp)
        else:
            real(tools, sys.argv[4])
    print("test_diff: %d failures" % clitest.fails)
    sys.exit(1 if clitest.fails else 0)


if __name__ == "__main__":
    main()
