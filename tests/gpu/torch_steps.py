#!/usr/bin/env python3
"""torch_steps.py: a few training steps of a small model, for the collector's
checks on a GPU machine (tests/gpu/cases.sh). Usage:
    torch_steps.py [--steps N] [--warmup N] [--kineto OUT.json] [--tiny N]

Each step is an NVTX range 'ProfilerStep#i' (what the collector's schedule
and step tables look for) holding a forward and backward pass and an
optimizer step of a small MLP. --kineto runs the steps under torch.profiler
(CPU and CUDA activities) and exports its trace. --tiny N adds N tiny
element-wise ops per step (launch-bound work). Prints one JSON line: steps,
seconds for the timed steps, and what torch.profiler saw.
"""
import argparse
import json
import time

import torch


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--kineto")
    ap.add_argument("--tiny", type=int, default=0)
    o = ap.parse_args()
    torch.manual_seed(0)
    dev = torch.device("cuda")
    model = torch.nn.Sequential(
        torch.nn.Linear(1024, 4096), torch.nn.GELU(), torch.nn.Linear(4096, 1024)).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    x = torch.randn(256, 1024, device=dev)
    y = torch.randn(256, 1024, device=dev)
    small = torch.zeros(16, device=dev)

    def step(i):
        torch.cuda.nvtx.range_push(f"ProfilerStep#{i}")
        loss = torch.nn.functional.mse_loss(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        for _ in range(o.tiny):
            small.add_(1.0)
        torch.cuda.nvtx.range_pop()

    for i in range(o.warmup):
        step(i)
    torch.cuda.synchronize()
    prof = None
    if o.kineto:
        from torch.profiler import ProfilerActivity, profile
        prof = profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA])
        prof.__enter__()
    t0 = time.perf_counter()
    for i in range(o.warmup, o.warmup + o.steps):
        step(i)
    torch.cuda.synchronize()
    t = time.perf_counter() - t0
    out = {"steps": o.steps, "warmup": o.warmup, "tiny": o.tiny, "seconds": round(t, 6),
           "torch": torch.__version__, "cuda": torch.version.cuda}
    if prof is not None:
        prof.__exit__(None, None, None)
        prof.export_chrome_trace(o.kineto)
        with open(o.kineto) as f:
            evs = json.load(f).get("traceEvents", [])
        out["kineto_kernels"] = sum(1 for e in evs if e.get("cat") == "kernel")
        out["kineto_events"] = len(evs)
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
