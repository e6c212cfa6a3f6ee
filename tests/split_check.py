#!/usr/bin/env python3
"""split_check.py: check trace-split's parts against the input they came from.

usage: split_check.py INPUT DIR NAME [--max-bytes N] [--expect-parts N] [--convert TRACE_CONVERT]

Checks: every part parses as strict JSON; every part repeats the input's
top-level metadata and M events; the parts hold exactly the input's events
that start in their time ranges (under a step rule, GPU work by its
launch's start: docs/steps.md), apart from clipped slices (put back
together here) and removed flow ends (as many as the index counts); no part
holds a flow with one end only unless the input had that flow end alone;
slices nest on every thread when they did in the input; the index matches
the files; parts stay within the byte budget.
"""
import collections
import decimal
import gzip
import json
import os
import subprocess
import sys


def fail(msg):
    print("split_check: FAIL: " + msg)
    sys.exit(1)


def no_constants(name):
    raise ValueError("not strict JSON: " + name)


CONVERT = None  # trace-convert, for .tkb parts (--convert)


def load(path):
    if open(path, "rb").read(4) == b"\x89TKB":
        if not CONVERT:
            fail("%s: a .tkb part needs --convert TRACE_CONVERT" % path)
        text = subprocess.run([CONVERT, path, "-o", "-", "--to", "json", "-q"], check=True,
                              stdout=subprocess.PIPE).stdout.decode("utf-8")
        return json.loads(text, parse_constant=no_constants, parse_float=decimal.Decimal)
    opener = gzip.open if open(path, "rb").read(2) == b"\x1f\x8b" else open
    with opener(path, "rt", encoding="utf-8") as f:
        # Decimal keeps epoch-scale microseconds exact
        return json.load(f, parse_constant=no_constants, parse_float=decimal.Decimal)


def ns(v):
    return None if v is None else int(decimal.Decimal(v) * 1000)


def dumps(d):
    return json.dumps(d, sort_keys=True, default=str)


def norm(e):
    """A hashable form of an event with ts/dur as integer ns."""
    d = dict(e)
    for k in ("ts", "dur"):
        if k in d:
            d[k] = ns(d[k])
    return dumps(d)


def events_of(doc):
    return doc if isinstance(doc, list) else doc["traceEvents"]


def meta_of(doc):
    return {} if isinstance(doc, list) else {k: v for k, v in doc.items() if k != "traceEvents"}


def flow_key(e):
    return (e.get("cat", ""), json.dumps(e.get("id")))


def nesting_errors(evs):
    """Slices that overlap a sibling on their thread instead of nesting."""
    by = collections.defaultdict(list)
    for e in evs:
        if e.get("ph") == "X" and "ts" in e:
            by[(json.dumps(e.get("pid")), json.dumps(e.get("tid")))].append(
                (ns(e["ts"]), ns(e.get("dur", 0))))
    bad = 0
    for sl in by.values():
        sl.sort(key=lambda t: (t[0], -t[1]))
        stack = []
        for ts, dur in sl:
            while stack and stack[-1] <= ts:
                stack.pop()
            if stack and ts + dur > stack[-1]:
                bad += 1
                continue
            stack.append(ts + dur)
    return bad


def rebuild_clipped(pieces, src_ev, last_end):
    """Put clipped slices back together: a 'clipped' head and the
    'continued' pieces that start where the previous one ends. A chain may
    stop early at the end of the last part (a range's end)."""
    groups = collections.defaultdict(list)
    for e in pieces:
        d = dict(e)
        args = dict(d.get("args", {}))
        how = args.pop("tk_split")
        if args:
            d["args"] = args
        else:
            d.pop("args", None)
        start, dur = ns(d.pop("ts")), ns(d.pop("dur"))
        groups[dumps(d)].append((start, start + dur, how))
    originals = collections.defaultdict(list)
    for e in src_ev:
        if e.get("ph") == "X" and "ts" in e:
            d = dict(e)
            start, dur = ns(d.pop("ts")), ns(d.pop("dur", 0))
            originals[(dumps(d), start)].append(start + dur)
    whole, partial = [], 0
    for key, ivs in groups.items():
        ivs.sort()
        open_by_end = {}
        for start, end, how in ivs:
            if how == "continued" and open_by_end.get(start):
                s0 = open_by_end[start].pop()
                open_by_end.setdefault(end, []).append(s0)
            else:
                if how == "continued":
                    partial += 1  # the head started before the first part
                open_by_end.setdefault(end, []).append(start if how == "clipped" else None)
        for end, starts in open_by_end.items():
            for s0 in starts:
                if s0 is None:
                    continue
                ends = originals.get((key, s0), [])
                if end not in ends and not (last_end is not None and end == last_end and any(x > end for x in ends)):
                    fail("clipped pieces of %s from %d to %d match no input slice" % (key, s0, end))
                d = json.loads(key)
                d["ts"], d["dur"] = s0, (end if end in ends else max(ends)) - s0
                whole.append(dumps(d))
    return whole, partial


API = {"cuda_runtime", "Runtime", "cuda_driver", "mtia_runtime", "privateuse1_runtime"}
GPU = {"kernel", "Kernel", "mtia_ccp_events", "gpu_memcpy", "Memcpy", "gpu_memset", "Memset"}


def launch_times(evs):
    """Each correlation id's CPU launch: the earliest runtime call's start."""
    launch = {}
    for e in evs:
        a = e.get("args") if isinstance(e.get("args"), dict) else {}
        c = a.get("correlation")
        if e.get("ph") == "X" and e.get("cat") in API and isinstance(c, int) and "ts" in e:
            launch[c] = min(ns(e["ts"]), launch.get(c, ns(e["ts"])))
    return launch


def place_time(e, launch):
    """Where an event belongs under a step rule (docs/steps.md): GPU work
    (kernel, memcpy, memset; an ac2g flow's GPU end) at its launch's start."""
    if launch is None or "ts" not in e:
        return ns(e["ts"]) if "ts" in e else None
    corr = None
    if e.get("ph") == "X" and e.get("cat") in GPU and isinstance(e.get("args"), dict):
        corr = e["args"].get("correlation")
    elif e.get("ph") == "f" and e.get("cat") == "ac2g" and isinstance(e.get("id"), int):
        corr = e["id"]
    if isinstance(corr, int) and corr in launch:
        return launch[corr]
    return ns(e["ts"])


def part_of(ts, ranges):
    for i, (a, b) in enumerate(ranges):
        if (a is None or ts >= a) and (b is None or ts < b):
            return i
    return None


def in_ranges(ts, ranges):
    return any((a is None or ts >= a) and (b is None or ts < b) for a, b in ranges)


def main():
    args = sys.argv[1:]
    if len(args) < 3:
        print(__doc__)
        sys.exit(2)
    inp, outdir, name = args[:3]
    opts = dict(zip(args[3::2], args[4::2]))
    global CONVERT
    CONVERT = opts.get("--convert")
    src = load(inp)
    index = load(os.path.join(outdir, name + ".index.json"))
    parts = index["parts"]
    if "--expect-parts" in opts and len(parts) != int(opts["--expect-parts"]):
        fail("%d parts, expected %s" % (len(parts), opts["--expect-parts"]))
    src_ev = events_of(src)
    src_m = sorted(norm(e) for e in src_ev if e.get("ph") == "M")
    src_meta = meta_of(src)
    flows_in = collections.Counter((flow_key(e), e["ph"]) for e in src_ev if e.get("ph") in "sf" and "id" in e)
    ranges = [(ns(p["start_us"]), ns(p["end_us"])) for p in parts]
    launch = launch_times(src_ev) if index.get("gpu_work_by") == "launch" else None
    placed = {}
    for e in src_ev:
        if "ts" in e and launch is not None:
            placed.setdefault(norm(e), place_time(e, launch))
    moved = sum(1 for e in src_ev if "ts" in e and launch is not None
                and part_of(place_time(e, launch), ranges) != part_of(ns(e["ts"]), ranges))
    expected = collections.Counter(
        norm(e) for e in src_ev
        if e.get("ph") != "M" and ("ts" not in e or in_ranges(place_time(e, launch), ranges)))

    got, pieces, total_events = collections.Counter(), [], 0
    budget = int(opts.get("--max-bytes", 0))
    for p in parts:
        path = os.path.join(outdir, p["file"])
        size = os.path.getsize(path)
        if size != p["bytes"]:
            fail("%s: %d bytes, the index says %d" % (p["file"], size, p["bytes"]))
        if budget and size > budget:
            fail("%s: %d bytes, over the budget of %d" % (p["file"], size, budget))
        doc = load(path)
        evs = events_of(doc)
        if len(evs) != p["events"]:
            fail("%s: %d events, the index says %d" % (p["file"], len(evs), p["events"]))
        total_events += len(evs)
        if meta_of(doc) != src_meta:
            fail("%s: top-level metadata differs from the input's" % p["file"])
        if sorted(norm(e) for e in evs if e.get("ph") == "M") != src_m:
            fail("%s: the M events differ from the input's" % p["file"])
        # ends pair one to one; ends beyond the pairs (one s with many f)
        # are orphans in the input already and may stand alone
        ends = collections.Counter((flow_key(e), e["ph"]) for e in evs if e.get("ph") in "sf" and "id" in e)
        for (k, ph), n in ends.items():
            other = "f" if ph == "s" else "s"
            spare = max(0, flows_in[(k, ph)] - flows_in[(k, other)])
            if ends[(k, other)] == 0 and n > spare:
                fail("%s: flow %s has its %s end only" % (p["file"], k, ph))
        lo, hi = ranges[parts.index(p)]
        for e in evs:
            if e.get("ph") == "M":
                continue
            # a cut made by the byte budget may fall between events at the same time
            t = placed.get(norm(e), ns(e["ts"])) if "ts" in e else None
            inside = t is not None and (lo is None or t >= lo) and (hi is None or t <= hi)
            if t is not None and not inside and budget and t != ns(e["ts"]):
                # a byte budget cuts a step into parts: GPU work arriving after
                # the cut goes to the step's latest part, after its launch's
                i, first = parts.index(p), part_of(t, ranges)
                inside = first is not None and first <= i <= part_of(ns(e["ts"]), ranges)
            if t is not None and not inside:
                fail("%s: event at %s outside the part's range" % (p["file"], e["ts"]))
            if "tk_split" in e.get("args", {}):
                pieces.append(e)
            else:
                got[norm(e)] += 1
        if nesting_errors(evs) and not nesting_errors(src_ev):
            fail("%s: slices do not nest" % p["file"])
    whole, partial = rebuild_clipped(pieces, src_ev, ranges[-1][1])
    got.update(whole)
    extra = got - expected
    if extra:
        fail("%d events in the parts are not in the input, e.g. %s" % (sum(extra.values()), next(iter(extra))))
    missing = expected - got
    not_flow = [k for k in missing if json.loads(k).get("ph") not in ("s", "f")]
    if not_flow:
        fail("%d events of the input are missing, e.g. %s" % (len(not_flow), not_flow[0]))
    if sum(missing.values()) != index["flow_ends_removed"]:
        fail("%d flow ends missing, the index says %d removed" % (sum(missing.values()), index["flow_ends_removed"]))
    if launch is not None and moved and not index.get("by_launch"):
        fail("%d events are GPU work launched in another part's range, the index says %s moved"
             % (moved, index.get("by_launch")))
    if total_events != index["events_out"]:
        fail("events_out %d, parts hold %d" % (index["events_out"], total_events))
    print("split_check: ok: %d parts, %d events, %d flow ends removed, %d clipped slices rebuilt%s"
          % (len(parts), total_events, index["flow_ends_removed"], len(whole),
             ", %d continuing from outside" % partial if partial else ""))


if __name__ == "__main__":
    main()
