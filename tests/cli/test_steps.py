#!/usr/bin/env python3
"""test_steps.py: step attribution by launch (docs/steps.md) in trace-stats --steps and trace-split's step rules.

usage: test_steps.py hand|real TOOLS_DIR TESTDATA_DIR [REALTRACES_DIR]

hand: on testdata/steps/launch.json every figure is worked out by hand
below. real: on real traces from REALTRACES_DIR, the figures are computed here from
the JSON, independently of the tools: the kernels each step launched, and
for trace-split --by-step, that every GPU op lies in the part of its launch
and that every launch-to-kernel flow keeps both ends.
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
from clitest import check, run

def load(path):
    with (gzip.open(path, "rt") if path.endswith(".gz") else open(path)) as f:
        d = json.load(f)
    return d["traceEvents"] if isinstance(d, dict) else d


def table(tools, path, steps, tables="kernels,memcpy"):
    out = run(os.path.join(tools, "trace-stats"), path, "--steps", steps, "-t", tables, "-f", "json",
              "-n", "-1", "-q").stdout
    d = json.loads(out)
    return {t: {r["name"]: (r["count"], r["total_ns"]) for r in d[t]["rows"]} for t in tables.split(",")}


def split(tools, path, outdir, *args):
    run(os.path.join(tools, "trace-split"), path, "-o", outdir, "--name", "p", "-q", *args)
    index = json.load(open(os.path.join(outdir, "p.index.json")))
    parts = [load(os.path.join(outdir, p["file"])) for p in index["parts"]]
    return index, parts


def names(evs):
    return collections.Counter((e["ph"], e.get("name"), e.get("id")) for e in evs if e["ph"] != "M")


# ---- the hand-built trace ----

def hand(tools, data, tmp):
    t = os.path.join(data, "steps", "launch.json")
    # Step 1 is [1000, 2000] us, step 2 [2000, 3000]. k_pre was launched at
    # 900 (before step 1) and runs at 1100; k_a is launched and runs in step
    # 1; k_b (launched at 1900) and the memcpy (1950) run in step 2's time;
    # k_c is step 2's; k_orphan's launch is not in the trace (its start
    # decides: step 2).
    s1 = table(tools, t, "1")
    check("--steps 1: kernels launched in step 1 (k_a 100 us, k_b 200 us), not k_pre",
          s1["kernels"] == {"k_a": (1, 100000), "k_b": (1, 200000)}, s1)
    check("--steps 1: the memcpy launched in step 1 and run in step 2",
          s1["memcpy"] == {"Memcpy HtoD (Pageable -> Device)": (1, 30000)}, s1)
    s2 = table(tools, t, "2")
    check("--steps 2: k_c, and k_orphan by its start", s2["kernels"] == {"k_c": (1, 40000), "k_orphan": (1, 10000)}, s2)
    check("--steps 2: no memcpy", s2["memcpy"] == {}, s2)
    s12 = table(tools, t, "1-2")
    check("--steps 1-2: all but k_pre", sorted(s12["kernels"]) == ["k_a", "k_b", "k_c", "k_orphan"], s12)

    # trace-split --by-step: part 0 is [start, 2000), part 1 [2000, end)
    index, parts = split(tools, t, os.path.join(tmp, "by"), "--by-step")
    check("--by-step: two parts", len(parts) == 2, len(parts))
    want0 = collections.Counter([("X", "ProfilerStep#1", None)] +
                                [("X", n, None) for n in ("cudaLaunchKernel",) * 3 + ("cudaMemcpyAsync",)] +
                                [("s", "ac2g", i) for i in (1, 2, 3, 4)] + [("f", "ac2g", i) for i in (1, 2, 3, 4)] +
                                [("X", n, None) for n in ("k_pre", "k_a", "k_b", "Memcpy HtoD (Pageable -> Device)")])
    want1 = collections.Counter([("X", "ProfilerStep#2", None), ("X", "cudaLaunchKernel", None), ("s", "ac2g", 5),
                                 ("X", "k_c", None), ("f", "ac2g", 5), ("X", "k_orphan", None)])
    check("--by-step: part 0 holds step 1's launches with their GPU work and flows", names(parts[0]) == want0,
          names(parts[0]) - want0 or want0 - names(parts[0]))
    check("--by-step: part 1 holds step 2's", names(parts[1]) == want1, names(parts[1]) - want1 or want1 - names(parts[1]))
    check("--by-step: the index says GPU work goes by launch, 4 events moved (k_b, the memcpy, their flow ends)",
          index["gpu_work_by"] == "launch" and index["by_launch"] == 4 and index["launch_late"] == 0,
          {k: index[k] for k in ("gpu_work_by", "by_launch", "launch_late")})
    check("--by-step: no flow cut", index["flows_cut"] == 0, index["flows_cut"])

    index, parts = split(tools, t, os.path.join(tmp, "st"), "--step", "2")
    check("--step 2: step 2's events only", len(parts) == 1 and names(parts[0]) == want1,
          names(parts[0]) if parts else None)
    check("--step 2: the others counted outside", index["outside"] == sum(want0.values()), index["outside"])

    # a merged trace keeps correlation ids per rank: rank 1 launched k_b at
    # 2050 (step 2), rank 0 at 1900 (step 1), with the same correlation id
    r1 = os.path.join(tmp, "rank1.json")
    text = open(t).read().replace('"ts":1900,"dur":5', '"ts":2050,"dur":5').replace('"id":3,"ts":1900', '"id":3,"ts":2050')
    open(r1, "w").write(text)
    merged = os.path.join(tmp, "merged.json")
    run(os.path.join(tools, "trace-merge"), t, r1, "-o", merged, "-q")
    m1 = table(tools, merged, "1")
    check("merged --steps 1: k_a of both ranks, k_b of rank 0 only",
          m1["kernels"] == {"k_a": (2, 200000), "k_b": (1, 200000)}, m1)
    index, parts = split(tools, merged, os.path.join(tmp, "m"), "--by-step")
    kb = [[e["pid"] for e in p if e.get("name") == "k_b"] for p in parts]
    check("merged --by-step: rank 0's k_b in part 0, rank 1's in part 1",
          kb == [[0], [1000000]], kb)


def steps_json(tools, *paths):
    out = run(os.path.join(tools, "trace-stats"), *paths, "-t", "steps", "-f", "json", "-n", "-1", "-q").stdout
    return json.loads(out)["steps"]


def spilled(tools, tmp, rel, path):
    """-t steps,launch with 256 KiB of --memory: the sorters spill runs to
    --tmpdir and merge them, and the tables equal those of the default
    run; a $TMPDIR that cannot be made is then an error naming it."""
    args = ("-t", "steps,launch", "-f", "json", "-n", "-1", "-q")
    spill = os.path.join(tmp, "spill")
    os.makedirs(spill, exist_ok=True)

    def at_256k(tables, what, left):
        targs = ("-t", tables) + args[2:]
        whole = json.loads(run(os.path.join(tools, "trace-stats"), path, *targs).stdout)
        small = json.loads(run(os.path.join(tools, "trace-stats"), path, *targs, "--memory", "256K",
                               "--tmpdir", spill).stdout)
        check("%s: %s with --memory 256K equal those in memory" % (rel, what), small == whole,
              [k for k in whole if whole[k] != small.get(k)])
        check("%s: %s" % (rel, left), os.listdir(spill) == [], os.listdir(spill))

    at_256k("steps,launch", "-t steps,launch", "the spilled runs are removed")
    # the ops table's id maps and the summaries' durations keep 4 pages of
    # 16 KiB each at 256K and page out the rest
    at_256k("ops,kernels,memcpy,api", "the ops and summary tables", "the pages leave nothing in --tmpdir")
    # a --tmpdir that is not a directory is a usage error at once; the
    # spill's own failure comes from $TMPDIR, which is not checked ahead
    bad = os.path.join(tmp, "no", "such", "dir")
    p = subprocess.run([os.path.join(tools, "trace-stats"), path, *args, "--memory", "256K"],
                       capture_output=True, text=True, env=dict(os.environ, TMPDIR=bad))
    q = subprocess.run([os.path.join(tools, "trace-stats"), path, *args, "--memory", "256K", "--tmpdir", bad],
                       capture_output=True, text=True)
    return (p.returncode == 1 and bad in p.stderr and not p.stdout and q.returncode == 2 and
            "--tmpdir: bad value" in q.stderr), (p.returncode, q.returncode), p.stderr.strip()[-300:]


def files(d):
    return {f: open(os.path.join(d, f), "rb").read() for f in sorted(os.listdir(d))}


def split_spilled(tools, tmp, rel, path, whole, launches):
    """trace-split --by-step with 256 KiB of --memory: the launches' sorter
    (a quarter of it) spills runs to --tmpdir, and the parts are those of the
    default run byte for byte; a $TMPDIR that cannot be made is then an
    error naming it and the input (the launches' sorter's, or on an input
    out of time order the ordering's), and no part is left."""
    spill, out = os.path.join(tmp, "spill"), os.path.join(tmp, "real_small")
    os.makedirs(spill, exist_ok=True)
    split(tools, path, out, "--by-step", "--memory", "256K", "--tmpdir", spill)
    check("%s: --by-step with --memory 256K: the parts of the default run, byte for byte" % rel,
          files(out) == files(whole), sorted(set(files(out)) ^ set(files(whole))))
    check("%s: --by-step: the spilled runs are removed" % rel, os.listdir(spill) == [], os.listdir(spill))
    if launches < 2000:  # too few to spill at 64K
        return
    bad, out = os.path.join(tmp, "no", "such", "dir"), os.path.join(tmp, "real_bad")
    p = subprocess.run([os.path.join(tools, "trace-split"), path, "-o", out, "--name", "p", "-q", "--by-step",
                        "--memory", "256K"], capture_output=True, text=True, env=dict(os.environ, TMPDIR=bad))
    check("%s: --by-step, a $TMPDIR that cannot be made: exit 1 naming it and the input, no part" % rel,
          p.returncode == 1 and bad in p.stderr and path in p.stderr and not (os.path.isdir(out) and os.listdir(out)),
          (p.returncode, p.stderr.strip()[-300:]))


COLS = ("wall_ns", "busy_ns", "compute_ns", "comm_ns", "mem_ns", "overlap_ns", "idle_ns", "host_wait_ns",
        "kernel_wait_ns", "other_idle_ns", "gpu_ops")


def hand_table(tools, data):
    # overlap.json, step 1 = [1000, 2000) us: k1 [1100, 1300) and k2 [1305, 1400)
    # on one stream, an all-reduce [1200, 1500) on another, k3 [1505, 1600)
    # launched at 1500. Busy: [1100, 1500) + [1505, 1600) = 495 us; compute
    # 200 + 95 + 95 = 390; comm 300; overlap [1200, 1300) + [1305, 1400) = 195.
    # Idle 505: [1000, 1100) with k1 queued since 1000 (other, 100), [1500,
    # 1505) with k3 queued (a 5 us gap: kernel wait), [1600, 2000) with
    # nothing to come (host wait, 400). Four ops launched in the step.
    t = os.path.join(data, "steps", "overlap.json")
    want = dict(zip(COLS, (1000000, 495000, 390000, 300000, 0, 195000, 505000, 400000, 5000, 100000, 4)))
    rows = steps_json(tools, t)["rows"]
    check("-t steps: overlap.json's step worked out by hand",
          len(rows) == 1 and rows[0]["step"] == 1 and {k: rows[0][k] for k in COLS} == want, rows)
    # launch.json (see hand()): step 1 is busy with k_pre (50) and k_a (100);
    # idle: [1000, 1100) k_pre queued (other 100), [1150, 1200) nothing queued
    # until k_a's launch (host 50) then queued (other 100), [1400, 1900) host
    # wait until k_b's launch (500), [1900, 2000) queued (other 100). Step 2:
    # k_b 200, memcpy 30, k_c 40, k_orphan 10 = 280; idle [2000, 2100) queued
    # (other 100), [2300, 2350) memcpy queued (other 50), [2380, 2500) host
    # then [2500, 2600) queued (120 + other 100), [2640, 2700) before
    # k_orphan, whose launch is unknown (other 60), [2710, 3000) nothing to
    # come (host 290).
    t2 = os.path.join(data, "steps", "launch.json")
    want1 = dict(zip(COLS, (1000000, 150000, 150000, 0, 0, 0, 850000, 550000, 0, 300000, 3)))
    want2 = dict(zip(COLS, (1000000, 280000, 250000, 0, 30000, 0, 720000, 410000, 0, 310000, 2)))
    rows = steps_json(tools, t2)["rows"]
    check("-t steps: launch.json's two steps worked out by hand",
          [{k: r[k] for k in COLS} for r in rows] == [want1, want2], rows)
    both = steps_json(tools, t, t2)
    check("-t steps: two traces give a row per step and trace, with its rank",
          [(r["rank"], r["step"]) for r in both["rows"]] == [("trace 0", 1), ("trace 1", 1), ("trace 1", 2)],
          both["rows"])
    tot = both["totals"]
    check("-t steps: averages and the slowest step at the foot",
          tot["avg_busy_ns"] == round((495000 + 150000 + 280000) / 3) and tot["slowest_wall_ns"] == 1000000
          and tot["slowest_rank"] == "trace 0", tot)
    out = run(os.path.join(tools, "trace-stats"), t, t2, "-t", "steps", "-f", "csv", "-q").stdout
    got = list(csv.DictReader(io.StringIO(out)))
    check("-t steps -f csv loads as CSV with the same figures",
          len(got) == 3 and int(got[0]["busy_ns"]) == 495000 and int(got[2]["mem_ns"]) == 30000, got[:1])
    # step 2 of launch.json starts where step 1 ends: --steps 1 is step 1 alone
    out = run(os.path.join(tools, "trace-stats"), t2, "-t", "steps", "--steps", "1", "-f", "json", "-q").stdout
    check("-t steps with --steps 1: that step only, not the next one starting at its end",
          [r["step"] for r in json.loads(out)["steps"]["rows"]] == [1], out)


LCOLS = ("gpu_ops", "launched", "delay_min_ns", "delay_p50_ns", "delay_p90_ns", "delay_p99_ns", "delay_max_ns",
         "delay_mean_ns", "short_ops", "short_ns", "max_queue", "mean_queue")


def launch_json(tools, *paths):
    out = run(os.path.join(tools, "trace-stats"), *paths, "-t", "launch", "-f", "json", "-n", "-1", "-q").stdout
    return json.loads(out)["launch"]


def hand_launch(tools, data):
    # launch.json: delays from each launch call's end (it lasts 5 us) to the
    # GPU start: k_pre 1100 - 905 = 195, k_a 95, k_b 195, the memcpy 2350 -
    # 1955 = 395, k_c 95; k_orphan has no launch. Sorted 95 95 195 195 395:
    # p50 (the 3rd) 195, p90 and p99 (the 5th) 395, mean 195. The queue (+1 at
    # a launch's start, -1 at its op's start) holds 2 from 1950 to 2100; its
    # area is 1000 us*op over 900..2600, 1700 us: 0.59.
    t = os.path.join(data, "steps", "launch.json")
    rows = launch_json(tools, t)["rows"]
    want = dict(zip(LCOLS, (6, 5, 95000, 195000, 395000, 395000, 395000, 195000.0, 0, 0, 2, 0.59)))
    check("-t launch: launch.json's figures worked out by hand",
          [r["stream"] for r in rows] == ["all", "0:7"] and {k: rows[0][k] for k in LCOLS} == want, rows)
    # overlap.json: delays 95 (k1), 185 (the all-reduce), 280 (k2), 0 (k3);
    # the queue holds 3 from 1020 to 1100, area 580 over 1000..1505: 1.15
    t2 = os.path.join(data, "steps", "overlap.json")
    d = launch_json(tools, t, t2)
    rows = d["rows"]
    want = dict(zip(LCOLS, (4, 4, 0, 95000, 280000, 280000, 280000, 140000.0, 0, 0, 3, 1.15)))
    got = [r for r in rows if r["rank"] == "trace 1" and r["stream"] == "all"]
    check("-t launch: overlap.json's figures worked out by hand", got and {k: got[0][k] for k in LCOLS} == want, got)
    check("-t launch: stream rows per trace", [(r["rank"], r["stream"]) for r in rows] ==
          [("trace 0", "all"), ("trace 0", "0:7"), ("trace 1", "all"), ("trace 1", "0:7"), ("trace 1", "0:20")], rows)
    check("-t launch: the longest delay at the foot",
          d["totals"] == {"longest_delay_ns": 395000, "longest_delay_op": "Memcpy HtoD (Pageable -> Device)"},
          d["totals"])


MCOLS = ("device", "events", "allocs", "frees", "bytes_allocated", "bytes_freed", "peak_allocated", "peak_ts_ns",
         "peak_reserved", "reserved_ts_ns", "final_allocated", "from", "op_at_peak")


def memory_json(tools, *paths):
    out = run(os.path.join(tools, "trace-stats"), *paths, "-t", "memory", "-f", "json", "-n", "-1", "-q").stdout
    return json.loads(out)["memory"]


def hand_memory(tools, data):
    # memory.json: on cuda:0, +1000 B at 1015 us (torch's totals: 5000
    # allocated, 8000 reserved), +3000 at 1050 (8000, 10000), -1000 at 1090
    # (7000), -3000 at 1200 (4000, 12000): the peak, 8000, is at 1050, inside
    # aten::linear [1000, 1100] and aten::mm [1030, 1080]: the innermost is
    # aten::mm. On the CPU, no totals: +16 at 1012, +32 at 1060, -16 at 1070
    # sum to 16, 48 (the peak, inside aten::mm), 32.
    t = os.path.join(data, "steps", "memory.json")
    rows = memory_json(tools, t)["rows"]
    want = [dict(zip(MCOLS, ("cuda:0", 4, 2, 2, 4000, 4000, 8000, 1050000, 12000, 1200000, 4000, "Total Allocated",
                             "aten::mm"))),
            dict(zip(MCOLS, ("cpu", 3, 2, 1, 48, 16, 48, 1060000, None, None, 32, "sum of Bytes", "aten::mm")))]
    check("-t memory: memory.json's figures worked out by hand", [{k: r[k] for k in MCOLS} for r in rows] == want,
          rows)
    # --memory-series: the time line, device by device in time order: torch's totals on cuda:0, the
    # running sum of Bytes on the CPU
    with tempfile.TemporaryDirectory() as tmp:
        csvp, jsonp = os.path.join(tmp, "s.csv"), os.path.join(tmp, "s.json")
        run(os.path.join(tools, "trace-stats"), t, "--memory-series", csvp, "-q")
        run(os.path.join(tools, "trace-stats"), t, "--memory-series", jsonp, "-q")
        got = [(r["device"], int(r["ts_ns"]), int(r["bytes"]), int(r["allocated"]), r["reserved"])
               for r in csv.DictReader(open(csvp))]
        want = [("cuda:0", 1015000, 1000, 5000, "8000"), ("cuda:0", 1050000, 3000, 8000, "10000"),
                ("cuda:0", 1090000, -1000, 7000, "10000"), ("cuda:0", 1200000, -3000, 4000, "12000"),
                ("cpu", 1012000, 16, 16, ""), ("cpu", 1060000, 32, 48, ""), ("cpu", 1070000, -16, 32, "")]
        check("--memory-series FILE.csv: the allocation time line worked out by hand", got == want, got)
        js = json.load(open(jsonp))["memory_series"]
        check("--memory-series FILE.json: the same points, reserved null where the events do not say",
              [(r["device"], r["ts_ns"], r["bytes"], r["allocated"], "" if r["reserved"] is None else str(r["reserved"]))
               for r in js] == want, js[:2])
        # trace-convert --memory-counters: every event, and a counter after each [memory] event
        out = os.path.join(tmp, "c.json")
        run(os.path.join(tools, "trace-convert"), t, "-o", out, "--memory-counters", "-q")
        evs, src = json.load(open(out))["traceEvents"], json.load(open(t))["traceEvents"]
        cs = [(e["name"], int(e["ts"] * 1000), e["args"]) for e in evs if e.get("ph") == "C"]
        wc = [("Memory " + d, ts, dict(allocated=a, **({"reserved": int(r)} if r else {}))) for d, ts, _, a, r in want]
        check("trace-convert --memory-counters: every event kept, a counter per [memory] event with its device's "
              "allocated and reserved bytes",
              [e for e in evs if e.get("ph") != "C"] == src and sorted(cs, key=str) == sorted(wc, key=str), cs)
        run(os.path.join(tools, "trace-convert"), t, "-o", out, "-q")
        check("trace-convert without it adds nothing",
              json.load(open(out))["traceEvents"] == src)
        p = subprocess.run([os.path.join(tools, "trace-stats"), t, "--memory-series", os.path.join(tmp, "s.txt")],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        check("--memory-series FILE.txt is a usage error naming the suffixes",
              p.returncode == 2 and ".csv or .json" in p.stderr, p.stderr)
    # memory.json's ops still run at the end of the thread's ops, when the [memory] events come: the
    # op at each peak is known from one read, standard input too
    p = subprocess.run([os.path.join(tools, "trace-stats"), "-", "-t", "memory", "-f", "json"], stdin=open(t),
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    rows = json.loads(p.stdout)["memory"]["rows"] if p.returncode == 0 else []
    check("-t memory on standard input: the op at each peak from one read, no warning",
          [r["op_at_peak"] for r in rows] == ["aten::mm", "aten::mm"] and p.stderr == "", (p.returncode, p.stderr))
    # an op after them (aten::add at 1150 us) ends the thread's linear and mm before the [memory]
    # events come: the op at the peak takes a second read, which a file allows and standard input not
    src = json.load(open(t))
    evs = src["traceEvents"]
    k = next(i for i, e in enumerate(evs) if e.get("name") == "[memory]")
    evs.insert(k, {"ph": "X", "cat": "cpu_op", "name": "aten::add", "ts": 1150, "dur": 10, "pid": 100, "tid": 1})
    with tempfile.TemporaryDirectory() as tmp:
        late = os.path.join(tmp, "late.json")
        json.dump(src, open(late, "w"))
        rows = memory_json(tools, late)["rows"]
        check("-t memory, [memory] events after the thread has moved on: the op at each peak from a second read",
              [r["op_at_peak"] for r in rows] == ["aten::mm", "aten::mm"], rows)
        p = subprocess.run([os.path.join(tools, "trace-stats"), "-", "-t", "memory", "-f", "json"],
                           stdin=open(late), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        rows = json.loads(p.stdout)["memory"]["rows"] if p.returncode == 0 else []
        check("the same on standard input: the table, without the op at the peak, and a warning saying why",
              [r["peak_allocated"] for r in rows] == [8000, 48] and [r["op_at_peak"] for r in rows] == ["", ""]
              and "second read" in p.stderr, (p.returncode, p.stderr))


def gen_memory(tools, tmp):
    """The generated trace (bench/gen_trace) in its two layouts: [memory] events among their thread's
    ops, where the op at each peak is known from one read (standard input too), and after every CPU op
    (--memory-last), as the Kineto traces at hand do, where it takes a second read. Both tables equal the
    one computed from the JSON."""
    gen = os.path.join(os.path.dirname(os.path.abspath(tools)), "bench", "gen_trace")
    if not os.access(gen, os.X_OK):
        print("note: no %s (a build without -DTK_BUILD_BENCH): the generated layouts are not checked" % gen)
        return
    paths = {}
    for layout, extra in (("among", []), ("last", ["--memory-last"])):
        paths[layout] = os.path.join(tmp, "gen_%s.json" % layout)
        run(gen, "--steps", "3", "-q", "-o", paths[layout], *extra)
    evs = {k: load_exact(v) for k, v in paths.items()}
    def key(e):  # an event but its "Ev Idx", which numbers the events in the order written
        e = dict(e, args={k: v for k, v in e.get("args", {}).items() if k != "Ev Idx"})
        return json.dumps(e, sort_keys=True, default=str)
    check("gen_trace --memory-last: the same events, every [memory] event after every CPU op",
          sorted(map(key, evs["among"])) == sorted(map(key, evs["last"])) and
          max(i for i, e in enumerate(evs["last"]) if e.get("cat") == "cpu_op") <
          min(i for i, e in enumerate(evs["last"]) if e.get("name") == "[memory]"))
    want = memory_ref(evs["among"])
    for layout in ("among", "last"):
        got = [{k: r[k] for k in MCOLS} for r in memory_json(tools, paths[layout])["rows"]]
        check("generated trace, [memory] %s: -t memory equals the table computed from the JSON (%s at %s)"
              % (layout, want[0]["peak_allocated"] if want else "-", want[0]["op_at_peak"] if want else "-"),
              got == want and want and all(r["op_at_peak"] for r in want), (got, want))
        p = subprocess.run([os.path.join(tools, "trace-stats"), "-", "-t", "memory", "-f", "json", "-n", "-1"],
                           stdin=open(paths[layout]), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        rows = [{k: r[k] for k in MCOLS} for r in json.loads(p.stdout)["memory"]["rows"]] if p.returncode == 0 else []
        if layout == "among":
            check("generated trace on standard input: the op at each peak from one read, no warning",
                  rows == want and p.stderr == "", p.stderr)
        else:
            check("generated trace, [memory] last, on standard input: no op at the peak, and the warning",
                  [r["op_at_peak"] for r in rows] == [""] * len(want) and "second read" in p.stderr, p.stderr)


def coll_json(tools, *paths):
    out = run(os.path.join(tools, "trace-stats"), *paths, "-t", "collectives", "-f", "json", "-n", "-1",
              "-q").stdout
    return json.loads(out)["collectives"]


def hand_coll(tools, data):
    # coll_rank0.json: two all-reduces of 1,000,000 floats (4,000,000 bytes)
    # at 1000 us (400 us) and 3000 (400), a broadcast of 1000 floats at 5000
    # (100); coll_rank1.json: at 1100 (300), 2900 (500), 5050 (50). Per rank:
    # all-reduce 8e6 bytes in 800 us: 10 GB/s, bus factor 2(n-1)/n = 1 for 2
    # ranks. Across ranks: rank 1 starts the first all-reduce 100 us late,
    # rank 0 the second 100 us late, rank 1 the broadcast 50 us late.
    a, b = (os.path.join(data, "steps", "coll_rank%d.json" % r) for r in (0, 1))
    d = coll_json(tools, a, b)
    got = [(r["rank"], r["collective"], r["group"], r["count"], r["bytes"], r["total_ns"], r["algbw_gb_per_s"],
            r["busbw_gb_per_s"], r["group_size"]) for r in d["rows"]]
    want = [("rank 0", "allreduce", "0", 2, 8000000, 800000, 10.0, 10.0, 2),
            ("rank 0", "broadcast", "0", 1, 4000, 100000, 0.04, 0.04, 2),
            ("rank 1", "allreduce", "0", 2, 8000000, 800000, 10.0, 10.0, 2),
            ("rank 1", "broadcast", "0", 1, 4000, 50000, 0.08, 0.08, 2)]
    check("-t collectives: bytes and bandwidths worked out by hand", got == want, got)
    # a message size without a group size: algbw known, busbw not (its factor needs n)
    with tempfile.TemporaryDirectory() as tmp:
        one = os.path.join(tmp, "nogroup.json")
        json.dump({"traceEvents": [{"ph": "X", "cat": "kernel", "name": "ncclKernel_AllReduce_RING_LL_Sum_float(x)",
                                    "ts": 1000, "dur": 400, "pid": 0, "tid": 7,
                                    "args": {"In msg nelems": 1000000, "dtype": "Float",
                                             "Collective name": "allreduce"}}]}, open(one, "w"))
        r = coll_json(tools, one)["rows"]
        got1 = [(x["bytes"], x["algbw_gb_per_s"], x["busbw_gb_per_s"], x["group_size"]) for x in r]
        check("-t collectives without a group size: algbw 10 GB/s, busbw and group size null", got1 == [(4000000, 10.0, None, None)],
              got1)
    t = d["totals"]
    check("-t collectives: the stragglers worked out by hand",
          t == {"late:rank 0": {"last": 1, "instances": 3, "late_mean_ns": 33333, "late_max_ns": 100000},
                "late:rank 1": {"last": 2, "instances": 3, "late_mean_ns": 50000, "late_max_ns": 100000},
                "matched": 3, "max_skew_ns": 100000}, t)


# ---- real traces ----

API = {"cuda_runtime", "Runtime", "cuda_driver", "mtia_runtime", "privateuse1_runtime"}
KERNEL = {"kernel", "Kernel", "mtia_ccp_events"}
GPU = KERNEL | {"gpu_memcpy", "Memcpy", "gpu_memset", "Memset"}
REAL = ["kineto-tbplugin-resnet50-2021-06/worker0.1623143089861.pt.trace.json.gz",
        "hta-trace_diff/test/test.json.gz",
        "hta-negative_queue_length/rank0.json.gz",
        "tracelens-h100-hf/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz",
        "param-dlrm-8rank/dlrm_kineto/worker1_step_12.1694128201556.pt.trace.json"]


def launch_flow(e):
    """Kineto's launch -> GPU work flow: ac2g, or async "launch" (2021 and before)."""
    return e.get("cat") == "ac2g" or (e.get("cat") == "async" and e.get("name") == "launch")


def corr_of(e):
    a = e.get("args")
    c = a.get("correlation") if isinstance(a, dict) else None
    return c if isinstance(c, int) else None


def exact_ns(v):
    """A JSON time in us (read as Decimal) in integer ns, as tracekit reads it."""
    return int(decimal.Decimal(v) * 1000)


def load_exact(path):
    with (gzip.open(path, "rt") if path.endswith(".gz") else open(path)) as f:
        d = json.load(f, parse_float=decimal.Decimal)
    return d["traceEvents"] if isinstance(d, dict) else d


def table_ref(evs):
    """The steps table as docs/steps.md defines it, computed here."""
    steps = {}
    launch = {}
    ops = []
    for e in evs:
        if not isinstance(e, dict) or e.get("ph") != "X" or "ts" not in e:
            continue
        ts = exact_ns(e["ts"])
        end = ts + exact_ns(e.get("dur", 0))
        n = str(e.get("name", ""))
        if n.startswith("ProfilerStep#") and n[13:].isdigit() and e.get("cat") != "gpu_user_annotation":
            lo, hi = steps.get(int(n[13:]), (ts, end))
            steps[int(n[13:])] = (min(lo, ts), max(hi, end))
        elif e.get("cat") in API and corr_of(e) is not None:
            launch[corr_of(e)] = min(ts, launch.get(corr_of(e), ts))
        elif e.get("cat") in GPU and "dur" in e and exact_ns(e["dur"]) >= 0:
            kind = "mem" if e.get("cat") not in KERNEL else "comm" if n[:4] in ("nccl", "rccl") else "compute"
            ops.append((ts, end, kind, corr_of(e)))
    ops.sort(key=lambda o: o[0])

    def union(kinds):
        runs = []  # [a, b, launch or None]
        for ts, end, kind, corr in ops:
            if kind not in kinds:
                continue
            lt = launch.get(corr)
            if runs and ts <= runs[-1][1]:
                runs[-1][1] = max(runs[-1][1], end)
                if ts == runs[-1][0] and lt is not None and (runs[-1][2] is None or lt < runs[-1][2]):
                    runs[-1][2] = lt
            else:
                runs.append([ts, end, lt])
        return runs

    def inside(a, b, lo, hi):
        return max(0, min(b, hi) - max(a, lo))

    every = union({"compute", "comm", "mem"})
    comp, comm, mem = union({"compute"}), union({"comm"}), union({"mem"})
    rows = []
    for num, (lo, hi) in sorted(steps.items(), key=lambda kv: (kv[1][0], kv[0])):
        r = {"step": num, "wall_ns": hi - lo}
        for key, u in (("busy_ns", every), ("compute_ns", comp), ("comm_ns", comm), ("mem_ns", mem)):
            r[key] = sum(inside(a, b, lo, hi) for a, b, _ in u)
        r["overlap_ns"] = sum(inside(max(a, c), min(b, d), lo, hi) for a, b, _ in comp for c, d, _ in comm
                              if max(a, c) < min(b, d) and b > lo and a < hi)
        r["idle_ns"] = r["wall_ns"] - r["busy_ns"]
        host = kwait = other = 0
        big = 1 << 62
        for k in range(len(every) + 1):
            g0 = every[k - 1][1] if k else -big
            g1 = every[k][0] if k < len(every) else big
            if g1 <= lo or g0 >= hi:
                continue
            if k == len(every):
                q = big
            elif every[k][2] is not None and every[k][2] > g0:
                q = min(every[k][2], g1)
            else:
                q = g0
            host += inside(g0, q, lo, hi)
            if k and k < len(every) and g1 - g0 <= 10000:
                kwait += inside(q, g1, lo, hi)
            else:
                other += inside(q, g1, lo, hi)
        r["host_wait_ns"], r["kernel_wait_ns"], r["other_idle_ns"] = host, kwait, other
        r["gpu_ops"] = sum(1 for ts, end, kind, corr in ops if lo <= launch.get(corr, ts) <= hi)
        rows.append(r)
    return rows


def launch_ref(evs):
    """The launch table's "all" row as docs/steps.md defines it, computed here."""
    launch = {}
    ops = []
    for e in evs:
        if not isinstance(e, dict) or e.get("ph") != "X" or "ts" not in e:
            continue
        ts = exact_ns(e["ts"])
        end = ts + max(0, exact_ns(e.get("dur", 0)))
        if e.get("cat") in API and corr_of(e) is not None:
            if corr_of(e) not in launch or ts < launch[corr_of(e)][0]:
                launch[corr_of(e)] = (ts, end)
        elif e.get("cat") in GPU and "dur" in e and exact_ns(e["dur"]) >= 0:
            ops.append((ts, end, corr_of(e)))
    delays, short, short_ns, q = [], 0, 0, []
    for ts, end, corr in ops:
        if corr not in launch:
            continue
        lts, lend = launch[corr]
        delays.append(ts - lend)
        if end - ts < lend - lts:
            short += 1
            short_ns += end - ts
        if lts <= ts:
            q += [(lts, 1), (ts, -1)]
    delays.sort()
    r = {"gpu_ops": len(ops), "launched": len(delays), "short_ops": short, "short_ns": short_ns}
    if delays:
        rank = lambda p: delays[-(-len(delays) * p // 100) - 1]
        r.update(delay_min_ns=delays[0], delay_p50_ns=rank(50), delay_p90_ns=rank(90), delay_p99_ns=rank(99),
                 delay_max_ns=delays[-1], delay_mean_ns=round(sum(delays) / len(delays), 1))
    q.sort()
    n = most = 0
    area = 0
    for i, (t, d) in enumerate(q):
        if i:
            area += n * (t - q[i - 1][0])
        n += d
        most = max(most, n)
    r["max_queue"] = most
    r["mean_queue"] = round(area / (q[-1][0] - q[0][0]), 2) if q and q[-1][0] > q[0][0] else 0
    return r


def memory_ref(evs):
    """The memory table as docs/steps.md defines it, computed here."""
    mem, devs = [], []
    for i, e in enumerate(evs):
        if not isinstance(e, dict) or e.get("name") != "[memory]" or "ts" not in e:
            continue
        a = e.get("args") if isinstance(e.get("args"), dict) else {}
        if not isinstance(a.get("Bytes"), int):
            continue
        t, d = a.get("Device Type", 0), a.get("Device Id", -1)
        names = {1: "cuda", 6: "hip", 12: "xpu", 13: "mps", 19: "mtia"}  # torch's DeviceType
        dev = "cpu" if t == 0 else "%s:%d" % (names[t], d) if t in names else "type %d:%d" % (t, d)
        if dev not in devs:
            devs.append(dev)
        mem.append((dev, exact_ns(e["ts"]), i, a, thread(e)))
    rows = []
    for dev in devs:
        ms = sorted((m for m in mem if m[0] == dev), key=lambda m: (m[1], m[2]))
        totals = all(isinstance(m[3].get("Total Allocated"), int) for m in ms)
        run_sum, peak, res = 0, None, None
        r = {"device": dev, "events": len(ms), "allocs": sum(m[3]["Bytes"] > 0 for m in ms),
             "frees": sum(m[3]["Bytes"] < 0 for m in ms), "bytes_allocated": sum(max(0, m[3]["Bytes"]) for m in ms),
             "bytes_freed": -sum(min(0, m[3]["Bytes"]) for m in ms), "from": "Total Allocated" if totals else "sum of Bytes"}
        for m in ms:
            run_sum += m[3]["Bytes"]
            v = m[3]["Total Allocated"] if totals else run_sum
            if peak is None or v > peak[0]:
                peak = (v, m[1], m[4])
            tr = m[3].get("Total Reserved")
            if isinstance(tr, int) and (res is None or tr > res[0]):
                res = (tr, m[1])
            r["final_allocated"] = v
        r["peak_allocated"], r["peak_ts_ns"] = peak[0], peak[1]
        r["peak_reserved"], r["reserved_ts_ns"] = res if res else (None, None)
        best = None
        for e in evs:
            if not isinstance(e, dict) or e.get("ph") != "X" or e.get("cat") not in ("cpu_op", "Operator", "user_annotation") \
                    or "ts" not in e or thread(e) != peak[2]:
                continue
            ts, dur = exact_ns(e["ts"]), max(0, exact_ns(e.get("dur", 0)))
            if ts <= peak[1] <= ts + dur and (best is None or dur < best[0]):
                best = (dur, e["name"])
        r["op_at_peak"] = best[1] if best else ""
        rows.append(r)
    return rows


def thread(e):
    norm = lambda v: int(v) if isinstance(v, str) and v.lstrip("-").isdigit() else v
    return (norm(e.get("pid")), norm(e.get("tid")))


def real(tools, root, tmp):
    for rel in REAL:
        path = os.path.join(root, rel)
        if not os.path.exists(path):
            check(rel + ": present", False, "missing from " + root)
            continue
        evs = [e for e in load(path) if isinstance(e, dict)]
        steps = {}
        for e in evs:
            n = str(e.get("name", ""))
            if e.get("ph") == "X" and n.startswith("ProfilerStep#") and n[13:].isdigit() and \
                    e.get("cat") != "gpu_user_annotation":
                ts, end = int(round(float(e["ts"]) * 1000)), int(round((float(e["ts"]) + float(e.get("dur", 0))) * 1000))
                lo, hi = steps.get(int(n[13:]), (ts, end))
                steps[int(n[13:])] = (min(lo, ts), max(hi, end))
        launch = {}
        for e in evs:
            if e.get("ph") == "X" and e.get("cat") in API and corr_of(e) is not None:
                t = int(round(float(e["ts"]) * 1000))
                launch[corr_of(e)] = min(t, launch.get(corr_of(e), t))
        moved = 0
        for num, (lo, hi) in sorted(steps.items()):
            want = collections.Counter()
            for e in evs:
                if e.get("ph") != "X" or e.get("cat") not in KERNEL or "ts" not in e:
                    continue
                ts = int(round(float(e["ts"]) * 1000))
                t = launch.get(corr_of(e), ts)
                if lo <= t <= hi:
                    want[e["name"]] += 1
                    moved += not (lo <= ts <= hi)
            got = table(tools, path, str(num), "kernels")["kernels"]
            got = collections.Counter({k: v[0] for k, v in got.items()})
            check("%s: --steps %d: %d kernels launched in the step" % (rel, num, sum(want.values())), got == want,
                  "tool %d kernels, %s" % (sum(got.values()), (got - want) or (want - got)))
        print("   (%d kernel counts differ from a count by GPU start)" % moved)

        out = os.path.join(tmp, "real")
        index, parts = split(tools, path, out, "--by-step")
        where = {}
        for i, p in enumerate(parts):
            for e in p:
                if e.get("ph") == "X" and e.get("cat") in API and corr_of(e) is not None:
                    where.setdefault(("launch", corr_of(e)), i)
        apart = total = 0
        for i, p in enumerate(parts):
            for e in p:
                if e.get("ph") == "X" and e.get("cat") in GPU and ("launch", corr_of(e)) in where:
                    total += 1
                    apart += where[("launch", corr_of(e))] != i
        check("%s: --by-step: each of %d GPU ops in its launch's part" % (rel, total), apart == 0,
              "%d apart" % apart)
        ends_in = collections.Counter((e["ph"], e["id"]) for e in evs if launch_flow(e) and e.get("ph") in "sf")
        kept_in = sum(min(ends_in[("s", i)], ends_in[("f", i)]) for (ph, i) in ends_in if ph == "s")
        ends_out = collections.Counter()
        for p in parts:
            ends = collections.Counter((e["ph"], e["id"]) for e in p if launch_flow(e) and e.get("ph") in "sf")
            ends_out.update(ends)
        kept_out = sum(min(ends_out[("s", i)], ends_out[("f", i)]) for (ph, i) in ends_out if ph == "s")
        check("%s: --by-step: all %d launch flows keep both ends" % (rel, kept_in), kept_out == kept_in,
              "%d of %d" % (kept_out, kept_in))
        split_spilled(tools, tmp, rel, path, out, sum(1 for e in evs if e.get("cat") in API))

    for rel in ["kineto-tbplugin-resnet50-2021-06/worker0.1623143089861.pt.trace.json.gz",
                "tracelens-h100-hf/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz",
                "tracelens-mi300-hf/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz",
                "tracelens-vllm_decode_full/graph_capture_rank_0.1773709742341309550.pt.trace.json.gz"]:
        path = os.path.join(root, rel)
        if not os.path.exists(path):
            continue
        want = memory_ref(load_exact(path))
        got = [{k: r[k] for k in MCOLS} for r in memory_json(tools, path)["rows"]]
        check("%s: -t memory: %s equal the table computed from the JSON (peaks %s)"
              % (rel, ", ".join(r["device"] for r in want), ", ".join("%s at %s" % (r["peak_allocated"], r["op_at_peak"])
                                                                  for r in want)),
              got == want, [(w, g) for w, g in zip(want, got) if w != g][:1] or (len(want), len(got)))

    # a trace-merge output: each rank an input of its own, the tables those of the rank files
    ranks = sorted(os.path.join(root, "param-dlrm-8rank/dlrm_kineto", f)
                   for f in os.listdir(os.path.join(root, "param-dlrm-8rank/dlrm_kineto")) if f.endswith(".json"))
    merged = os.path.join(tmp, "m8.json")
    run(os.path.join(tools, "trace-merge"), "-q", "-o", merged, *ranks)
    t = "ops,kernels,memcpy,api,steps,launch"
    a = json.loads(run(os.path.join(tools, "trace-stats"), merged, "-t", t, "-f", "json", "-n", "-1", "-q").stdout)
    b = json.loads(run(os.path.join(tools, "trace-stats"), *ranks, "-t", t, "-f", "json", "-n", "-1", "-q").stdout)
    for r in a["launch"]["rows"] + b["launch"]["rows"]:
        r.pop("stream")  # the merge renumbers pids
    check("the 8-rank DLRM merge: trace-stats gives each rank its columns and rows, as the 8 files do",
          a == b and len(a["steps"]["rows"]) == 8, [k for k in a if a[k] != b[k]])

    # NCCL collectives of the 8 DLRM ranks, per kind and across ranks, computed here
    per, lists = [], []
    for path in ranks:
        evs = [e for e in load_exact(path) if isinstance(e, dict)]
        k = collections.OrderedDict()
        for e in evs:
            n = str(e.get("name", ""))
            if e.get("ph") == "X" and "ts" in e and (n.startswith("ncclKernel_") or n.startswith("ncclDevKernel_")):
                a = e.get("args") if isinstance(e.get("args"), dict) else {}
                key = a.get("Collective name") or n.split("(")[0]
                k.setdefault(key, []).append((exact_ns(e["ts"]), max(0, exact_ns(e.get("dur", 0)))))
        per.append(k)
    want_rows = [("rank %d" % i, key, len(v), sum(d for _, d in v)) for i, k in enumerate(per) for key, v in k.items()]
    late = [[0, 0, 0, 0] for _ in per]  # instances, last, late total, late max
    matched = 0
    for key in {key for k in per for key in k}:
        lists = [sorted(k.get(key, [])) for k in per]
        for j in range(max(len(v) for v in lists)):
            have = [(v[j][0], i) for i, v in enumerate(lists) if j < len(v)]
            if len(have) < 2:
                continue
            matched += 1
            lo = min(t for t, _ in have)
            last = max(have, key=lambda x: (x[0], -x[1]))[1]
            late[last][1] += 1
            for t, i in have:
                late[i][0] += 1
                late[i][2] += t - lo
                late[i][3] = max(late[i][3], t - lo)
    d = coll_json(tools, *ranks)
    got_rows = [(r["rank"], r["collective"], r["count"], r["total_ns"]) for r in d["rows"]]
    # these NCCL kernels carry no message sizes: bytes, bandwidths and group size unknown (null), not 0
    unknown = [r for r in d["rows"] if (r["bytes"], r["algbw_gb_per_s"], r["busbw_gb_per_s"], r["group_size"])
               != (None, None, None, None)]
    check("the 8 DLRM ranks: without message sizes, -t collectives gives null bytes and bandwidths, not 0 %s"
          % unknown[:1], d["rows"] and not unknown)
    got_late = [[d["totals"]["late:rank %d" % i][k] for k in ("instances", "last", "late_mean_ns", "late_max_ns")]
                for i in range(len(per))]
    want_late = [[x[0], x[1], round(x[2] / x[0]) if x[0] else 0, x[3]] for x in late]
    check("the 8 DLRM ranks: -t collectives rows (%d) and stragglers (%d collectives matched) equal those "
          "computed from the JSON" % (len(want_rows), matched),
          got_rows == want_rows and got_late == want_late and d["totals"]["matched"] == matched,
          (got_late, want_late))

    # bytes and bandwidths where the kernels carry torch's collective args
    path = os.path.join(root, "hta-nccl_parser_config/nccl_data.json.gz")
    size = {"Float": 4, "Half": 2, "BFloat16": 2, "Double": 8, "Long": 8, "Int": 4, "Byte": 1, "Char": 1}
    want = collections.OrderedDict()
    for e in load_exact(path):
        n = str(e.get("name", "")) if isinstance(e, dict) else ""
        if e.get("ph") == "X" and (n.startswith("ncclKernel_") or n.startswith("ncclDevKernel_")):
            a = e["args"]
            key = (a.get("Collective name") or n.split("(")[0], a.get("Process Group Name", ""))
            nel = a.get("Out msg nelems" if "allgather" in key[0].replace("_", "").lower() else "In msg nelems", 0)
            w = want.setdefault(key, [0, 0, 0, 0])
            w[0] += 1
            w[1] += nel * size.get(a.get("dtype"), 0)
            w[2] += max(0, exact_ns(e.get("dur", 0)))
            w[3] = max(w[3], a.get("Group size", 0))
    got = [(r["collective"], r["group"], r["count"], r["bytes"], r["total_ns"], r["group_size"], r["algbw_gb_per_s"])
           for r in coll_json(tools, path)["rows"]]
    want = [(k[0], k[1], w[0], w[1], w[2], w[3], round(w[1] / w[2], 3)) for k, w in want.items()]
    check("hta-nccl_parser_config: -t collectives bytes, time and algbw equal those computed from the JSON (%s)"
          % ", ".join("%s %d B" % (x[0], x[3]) for x in want), got == want, (got, want))

    for rel in REAL + ["hta-nccl_parser_config/nccl_data.json.gz",
                       "param-dlrm-8rank/dlrm_kineto/worker0_step_12.1694128201545.pt.trace.json"]:
        path = os.path.join(root, rel)
        if not os.path.exists(path):
            continue
        want = table_ref(load_exact(path))
        got = steps_json(tools, path)["rows"]
        keys = ("step",) + COLS
        bad = [(w, g) for w, g in zip(want, got) if {k: w[k] for k in keys} != {k: g[k] for k in keys}]
        want_l = launch_ref(load_exact(path))
        got_l = launch_json(tools, path)["rows"][0]
        keys = [k for k in LCOLS if k in want_l]
        close = all(abs(want_l[k] - got_l[k]) <= (0.051 if isinstance(want_l[k], float) else 0) for k in keys)
        check("%s: -t launch: the trace's row equals the one computed from the JSON (%d ops, p99 delay %s ns)"
              % (rel, want_l["launched"], want_l.get("delay_p99_ns")), close,
              {k: (want_l[k], got_l[k]) for k in keys if want_l[k] != got_l[k]})
        check("%s: -t steps: %d steps equal the table computed from the JSON (comm %d ns, overlap %d ns)"
              % (rel, len(want), sum(r["comm_ns"] for r in want), sum(r["overlap_ns"] for r in want)),
              len(want) == len(got) and not bad, bad[:1] or (len(want), len(got)))
        ok, rc, err = spilled(tools, tmp, rel, path)
        if want_l["gpu_ops"] > 2000:  # enough to spill at 256K: the join holds 64K at a time
            check("%s: a $TMPDIR that cannot be made: exit 1 naming it, no table; a --tmpdir that is not a directory: "
                  "a usage error" % rel, ok, (rc, err))


def main():
    if len(sys.argv) < 4 or sys.argv[1] not in ("hand", "real") or (sys.argv[1] == "real" and len(sys.argv) < 5):
        print(__doc__)
        sys.exit(2)
    tools, data = sys.argv[2], sys.argv[3]
    with tempfile.TemporaryDirectory() as tmp:
        if sys.argv[1] == "hand":
            hand(tools, data, tmp)
            hand_table(tools, data)
            hand_launch(tools, data)
            hand_memory(tools, data)
            gen_memory(tools, tmp)
            hand_coll(tools, data)
        else:
            real(tools, sys.argv[4], tmp)
    print("test_steps: %d failures" % clitest.fails)
    sys.exit(1 if clitest.fails else 0)


if __name__ == "__main__":
    main()
