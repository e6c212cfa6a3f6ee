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
import gzip
import json
import os
import subprocess
import sys
import tempfile

fails = 0


def check(what, cond, detail=""):
    global fails
    if cond:
        print("ok: " + what)
    else:
        fails += 1
        print("FAIL: %s %s" % (what, detail))


def run(*cmd):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        raise SystemExit("%s: exit %d: %s" % (" ".join(cmd), p.returncode, p.stderr))
    return p


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


# ---- real traces ----

API = {"cuda_runtime", "Runtime", "cuda_driver", "mtia_runtime", "privateuse1_runtime"}
KERNEL = {"kernel", "Kernel", "mtia_ccp_events"}
GPU = KERNEL | {"gpu_memcpy", "Memcpy", "gpu_memset", "Memset"}
REAL = ["kineto-tbplugin-resnet50-2021-06/worker0.1623143089861.pt.trace.json.gz",
        "hta-trace_diff/test/test.json.gz",
        "hta-negative_queue_length/rank0.json.gz",
        "tracelens-h100-hf/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz",
        "param-dlrm-8rank/dlrm_kineto/worker1_step_12.1694128201556.pt.trace.json"]


def corr_of(e):
    a = e.get("args")
    c = a.get("correlation") if isinstance(a, dict) else None
    return c if isinstance(c, int) else None


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
        ends_in = collections.Counter((e["ph"], e["id"]) for e in evs if e.get("cat") == "ac2g" and e.get("ph") in "sf")
        kept_in = sum(min(ends_in[("s", i)], ends_in[("f", i)]) for (ph, i) in ends_in if ph == "s")
        ends_out = collections.Counter()
        for p in parts:
            ends = collections.Counter((e["ph"], e["id"]) for e in p if e.get("cat") == "ac2g" and e.get("ph") in "sf")
            ends_out.update(ends)
        kept_out = sum(min(ends_out[("s", i)], ends_out[("f", i)]) for (ph, i) in ends_out if ph == "s")
        check("%s: --by-step: all %d launch flows keep both ends" % (rel, kept_in), kept_out == kept_in,
              "%d of %d" % (kept_out, kept_in))


def main():
    if len(sys.argv) < 4 or sys.argv[1] not in ("hand", "real") or (sys.argv[1] == "real" and len(sys.argv) < 5):
        print(__doc__)
        sys.exit(2)
    tools, data = sys.argv[2], sys.argv[3]
    with tempfile.TemporaryDirectory() as tmp:
        if sys.argv[1] == "hand":
            hand(tools, data, tmp)
        else:
            real(tools, sys.argv[4], tmp)
    print("test_steps: %d failures" % fails)
    sys.exit(1 if fails else 0)


if __name__ == "__main__":
    main()
