#!/usr/bin/env python3
"""split_gen.py: a small seeded Kineto-like trace for the trace-split tests.

usage: split_gen.py OUT.json [--sorted] [--steps N] [--seed S]

Holds what splitting has to get right: top-level metadata before and after
the events, M events, ProfilerStep#N annotations, properly nested CPU ops on
two threads (one with a string tid), runtime launches with ac2g flows to
kernels on two GPU streams (kernels queue behind the CPU, so flows cross
time), fwdbwd flows, orphan flow ends with no start, flow ids reused by two
categories, instants and counters. Without --sorted the events are grouped
by kind, as Kineto writes them.
"""
import json
import random
import sys


def main():
    args = sys.argv[1:]
    out = args[0]
    sorted_out = "--sorted" in args
    steps = int(args[args.index("--steps") + 1]) if "--steps" in args else 6
    rng = random.Random(int(args[args.index("--seed") + 1]) if "--seed" in args else 7)
    pid, tids = 4242, [4242, "4250"]
    cpu, gpu, flows, misc = [], [], [], []
    corr, ext, t = 1, 1, 1_000_000_001
    gpu_free = {7: t, 13: t}
    fwd = []
    for step in range(steps):
        s0 = t
        step_ops = []
        for op in range(rng.randint(20, 40)):
            tid = tids[op % 2] if rng.random() < 0.2 else tids[0]
            start = t + rng.randint(1, 30)
            dur = rng.randint(20, 400)
            name = rng.choice(["aten::mm", "aten::add", "aten::relu", "aten::copy_", "aten::linear"])
            step_ops.append({"ph": "X", "cat": "cpu_op", "name": name, "pid": pid, "tid": tid,
                             "ts": start, "dur": dur, "args": {"External id": ext}})
            # nested children and a launch inside the op
            c = start + 2
            for k in range(rng.randint(0, 3)):
                cd = rng.randint(1, max(1, (start + dur - c) // 3))
                if c + cd >= start + dur:
                    break
                step_ops.append({"ph": "X", "cat": "cpu_op", "name": "aten::empty", "pid": pid,
                                 "tid": tid, "ts": c, "dur": cd, "args": {"External id": ext}})
                c += cd + 1
            if c + 5 < start + dur:
                stream = rng.choice([7, 13])
                step_ops.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel",
                                 "pid": pid, "tid": tid, "ts": c, "dur": 4,
                                 "args": {"correlation": corr, "External id": ext}})
                flows.append({"ph": "s", "id": corr, "pid": pid, "tid": tid, "ts": c,
                              "cat": "ac2g", "name": "ac2g"})
                ks = max(gpu_free[stream], c + rng.randint(5, 3000))
                kd = rng.randint(5, 2000)
                gpu_free[stream] = ks + kd
                gpu.append({"ph": "X", "cat": "kernel", "name": "gemm_%d" % (corr % 5), "pid": 0,
                            "tid": stream, "ts": ks, "dur": kd,
                            "args": {"correlation": corr, "External id": ext, "stream": stream}})
                flows.append({"ph": "f", "id": corr, "pid": 0, "tid": stream, "ts": ks,
                              "cat": "ac2g", "name": "ac2g", "bp": "e"})
                corr += 1
            if rng.random() < 0.1:  # an orphan flow end, as cudaEventRecord leaves them
                flows.append({"ph": "f", "id": 900000 + ext, "pid": pid, "tid": tid, "ts": start,
                              "cat": "ac2g", "name": "ac2g", "bp": "e"})
            if rng.random() < 0.15:
                fwd.append((ext, pid, tid, start))
            ext += 1
            t = start + dur
        for e in step_ops:
            cpu.append(e)
        cpu.append({"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#%d" % step,
                    "pid": pid, "tid": tids[0], "ts": s0, "dur": t - s0 + 1, "args": {"External id": ext}})
        misc.append({"ph": "i", "s": "t", "cat": "cpu_instant_event", "name": "[memory]", "pid": pid,
                     "tid": tids[0], "ts": s0 + 3, "args": {"Bytes": 512}})
        misc.append({"ph": "C", "name": "Memory", "pid": pid, "ts": s0 + 5, "args": {"used": step}})
        t += 50
    # fwdbwd flows: the backward end is written before the forward start
    for i, (e, p, tid, ts) in enumerate(fwd):
        flows.insert(0, {"ph": "f", "id": e, "pid": p, "tid": tid, "ts": t - 10 - i,
                         "cat": "fwdbwd", "name": "fwdbwd", "bp": "e"})
        flows.append({"ph": "s", "id": e, "pid": p, "tid": tid, "ts": ts, "cat": "fwdbwd", "name": "fwdbwd"})
    # fwdbwd ids reuse ac2g ids: pairing is by (cat, id)
    meta = [{"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": "python"}},
            {"ph": "M", "name": "thread_name", "pid": pid, "tid": "4250", "args": {"name": "worker"}},
            {"ph": "M", "name": "process_name", "pid": 0, "tid": 0, "args": {"name": "GPU 0"}},
            {"ph": "M", "name": "thread_sort_index", "pid": 0, "tid": 7, "args": {"sort_index": 7}}]
    events = cpu + meta + gpu + flows + misc
    if sorted_out:
        events = meta + sorted(cpu + gpu + flows + misc, key=lambda e: e["ts"])
    for e in events:
        for k in ("ts", "dur"):
            if k in e:
                e[k] = e[k] * 1.25  # microseconds, some with decimals
    doc = {"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "Test GPU"}],
           "distributedInfo": {"backend": "nccl", "rank": 0, "world_size": 1},
           "displayTimeUnit": "ms", "baseTimeNanoseconds": 1700000000000000000,
           "traceEvents": events, "traceName": "split_gen"}
    with open(out, "w") as f:
        json.dump(doc, f, indent=None, separators=(",", ":"))
        f.write("\n")


if __name__ == "__main__":
    main()
