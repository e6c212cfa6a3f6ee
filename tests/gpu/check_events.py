#!/usr/bin/env python3
"""check_events.py: what a collector trace (converted to JSON) holds, against
what the program launched. Usage:
    check_events.py TRACE.json [kernel=N] [gpu_memcpy=N] [gpu_memset=N] [streams=N]
                    [graph=1] [min=1]

Prints one JSON line of counts and problems; exits 1 on a problem. Checked:
- the count of each category named (exact, or at least N with min=1);
- every kernel, memcpy and memset has a correlation id that a CUDA runtime
  call of the trace carries, and starts on the GPU after that call starts;
- GPU durations are positive and under a second (the programs' ops are short);
- streams=N: the kernels ran on N distinct streams;
- graph=1: every kernel carries a graph id.
"""
import json
import sys
from collections import Counter


def main():
    path = sys.argv[1]
    want = {}
    flags = {}
    for a in sys.argv[2:]:
        k, v = a.split("=", 1)
        if k in ("streams", "graph", "min"):
            flags[k] = int(v)
        else:
            want[k] = int(v)
    with open(path) as f:
        doc = json.load(f)
    evs = doc["traceEvents"] if isinstance(doc, dict) else doc
    cats = Counter(e.get("cat") for e in evs if e.get("ph") in ("X", "i", "B"))
    launch = {}
    for e in evs:
        if e.get("cat") in ("cuda_runtime", "cuda_driver"):
            c = e.get("args", {}).get("correlation")
            if c:
                launch[c] = e
    problems = []
    for k, n in want.items():
        got = cats.get(k, 0)
        if (got < n) if flags.get("min") else (got != n):
            problems.append(f"{k}: {got} events, expected {'at least ' if flags.get('min') else ''}{n}")
    streams = set()
    no_corr = late = bad_dur = no_graph = 0
    gpu = 0
    for e in evs:
        if e.get("cat") not in ("kernel", "gpu_memcpy", "gpu_memset"):
            continue
        gpu += 1
        a = e.get("args", {})
        d = e.get("dur", -1)
        if not (0 < d < 1e6):
            bad_dur += 1
        c = a.get("correlation")
        l = launch.get(c)
        if l is None:
            no_corr += 1
        elif e["ts"] < l["ts"]:
            late += 1
        if e.get("cat") == "kernel":
            streams.add(a.get("stream"))
            if flags.get("graph") and "graph id" not in a:
                no_graph += 1
    if no_corr:
        problems.append(f"{no_corr} of {gpu} GPU ops have no launch with their correlation id")
    if late:
        problems.append(f"{late} GPU ops start before their launch call")
    if bad_dur:
        problems.append(f"{bad_dur} GPU ops with a duration outside (0, 1 s)")
    if "streams" in flags and len(streams) != flags["streams"]:
        problems.append(f"kernels on {len(streams)} streams, expected {flags['streams']}")
    if no_graph:
        problems.append(f"{no_graph} kernels without a graph id")
    print(json.dumps({"file": path, "counts": dict(cats), "streams": len(streams),
                      "problems": problems}))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
