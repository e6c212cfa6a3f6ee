#!/usr/bin/env python3
"""test_collected.py: .tkb files the collector wrote on an NVIDIA H200
(tests/gpu/cases.sh, CUDA 13.0, driver 580.159.04), read without a GPU.

usage: test_collected.py TOOLS_DIR TESTDATA_DIR TESTS_DIR

testdata/collector/:
- count_1000_4.tkb: tests/gpu/gpu_cases count 1000 4: 1,000 empty kernels over
  4 streams, then a memset and a copy on each;
- graph_100x10.tkb: gpu_cases graph 100 10: a CUDA graph of 100 kernels
  launched 10 times;
- torch_steps.tkb: tests/gpu/torch_steps.py --steps 20 --tiny 200 (3 warm-up
  steps first), PyTorch 2.11: 23 NVTX ranges ProfilerStep#0..22.

Checked against what the programs launched (tests/gpu/check_events.py: the
counts, each GPU op's launch by correlation id, starts after launches), and
for the PyTorch run, figures computed here from the converted JSON: the GPU
ops each step launched, equal to trace-stats -t steps; every GPU op has its
launch, also the cuBLAS kernels launched through the driver (cuLaunchKernel),
equal to trace-stats -t launch. torch.profiler, run on the same program on
the same machine, counted 4,440 kernels in 20 steps: 222 a step.
"""
import bisect
import collections
import json
import os
import subprocess
import sys
import tempfile

import clitest
from clitest import check, run

def main():
    tools, testdata, tests = sys.argv[1:4]
    convert = os.path.join(tools, "trace-convert")
    stats = os.path.join(tools, "trace-stats")
    checker = os.path.join(tests, "gpu", "check_events.py")
    src = os.path.join(testdata, "collector")
    tmp = tempfile.mkdtemp(prefix="tk_collected.")
    js = {}
    for name in ("count_1000_4", "graph_100x10", "torch_steps"):
        js[name] = os.path.join(tmp, name + ".json")
        p = run(convert, os.path.join(src, name + ".tkb"), "-o", js[name])
        check(name + ": reads whole, no warning", p.stderr == "", p.stderr)

    def events_check(name, *want):
        p = subprocess.run([sys.executable, checker, js[name], *want], stdout=subprocess.PIPE,
                           text=True)
        check("%s: %s" % (name, " ".join(want)), p.returncode == 0, p.stdout)

    events_check("count_1000_4", "kernel=1000", "gpu_memcpy=4", "gpu_memset=4", "streams=4")
    events_check("graph_100x10", "kernel=1000", "graph=1")
    events_check("torch_steps", "kernel=1", "min=1")

    # the PyTorch run, worked out here
    with open(js["torch_steps"]) as f:
        ev = json.load(f)["traceEvents"]
    launch = {}
    for e in ev:
        if e.get("cat") in ("cuda_runtime", "cuda_driver"):
            launch[e["args"]["correlation"]] = e
    steps = sorted((e["ts"], e["ts"] + e["dur"], int(e["name"].split("#")[1])) for e in ev
                   if e.get("cat") == "user_annotation" and e["name"].startswith("ProfilerStep#"))
    check("torch_steps: 23 step ranges", [s[2] for s in steps] == list(range(23)), steps[:3])
    starts = [s[0] for s in steps]
    gpu = [e for e in ev if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    unlaunched = [e for e in gpu if e["args"].get("correlation") not in launch]
    check("torch_steps: every GPU op has its launch", not unlaunched, unlaunched[:3])
    gpu = [e for e in gpu if e["args"].get("correlation") in launch]
    by_driver = [e for e in gpu if launch[e["args"]["correlation"]]["cat"] == "cuda_driver"]
    check("torch_steps: 3 cuBLAS kernels a step launched by the driver",
          len(by_driver) == 69 and {launch[e["args"]["correlation"]]["name"] for e in by_driver}
          == {"cuLaunchKernel"}, len(by_driver))
    per_step = collections.Counter()
    kernels = collections.Counter()
    for e in gpu:
        t = launch[e["args"]["correlation"]]["ts"]
        i = bisect.bisect_right(starts, t) - 1
        if i >= 0 and t <= steps[i][1]:
            per_step[i] += 1
            kernels[i] += e["cat"] == "kernel"
    check("torch_steps: 222 kernels a step after the first, as torch.profiler counted",
          all(kernels[i] == 222 for i in range(1, 23)), kernels)

    out = json.loads(run(stats, "-t", "steps,launch", "-f", "json",
                         os.path.join(src, "torch_steps.tkb")).stdout)
    rows = out["steps"]["rows"]
    check("trace-stats -t steps: GPU ops by launch, step by step",
          [r["gpu_ops"] for r in rows] == [per_step[i] for i in range(23)],
          ([r["gpu_ops"] for r in rows], per_step))
    allrow = [r for r in out["launch"]["rows"] if r["stream"] == "all"][0]
    check("trace-stats -t launch: every GPU op launched",
          not unlaunched and allrow["gpu_ops"] == len(gpu) and allrow["launched"] == len(gpu), allrow)

    for f in os.listdir(tmp):
        os.unlink(os.path.join(tmp, f))
    os.rmdir(tmp)
    print("%d failed" % clitest.fails)
    return 1 if clitest.fails else 0


if __name__ == "__main__":
    sys.exit(main())
