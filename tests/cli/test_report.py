#!/usr/bin/env python3
"""test_report.py: trace-report's pages and folded stacks, checked from outside.

usage: test_report.py [--browser] TOOLS-DIR TESTDATA-DIR TESTS-DIR [REALTRACES-DIR]

For every page (hand-built traces, 2 and 9 ranks, a generated trace, and the
real traces when they are there):
- it parses as HTML with every element closed, and references nothing to fetch
  (no script, link, img, iframe, no src, no href but #anchors, no url() in CSS);
- it is under 2 MB;
- each table is, cell for cell and footer line for footer line, the Markdown
  table of the trace-stats command printed under it;
- its folded stacks (--folded) are lines "frame;...;frame COUNT" whose counts
  are the self times of the call paths, computed here from the trace's JSON by
  torch's nesting rule (ops, runtime calls and Python frames, per thread);
- in headless Chromium (over the DevTools protocol on a pipe): no console
  message or exception, no request but the page itself, and a screenshot of
  every section, of the section's size and not blank.
The browser's part runs with --browser (and only it: the pages are made
again); without Chromium it is skipped (exit 77), saying so.
"""
import base64
import gzip
import html.parser
import json
import os
import re
import select
import shlex
import shutil
import struct
import subprocess
import sys
import tempfile
import time
import zlib
from decimal import Decimal, ROUND_HALF_UP

ARGS = [a for a in sys.argv[1:] if a != "--browser"]
BROWSER = "--browser" in sys.argv[1:]
TOOLS, TESTDATA, TESTS = ARGS[0], ARGS[1], ARGS[2]
REAL = ARGS[3] if len(ARGS) > 3 else ""
REPORT = os.path.join(TOOLS, "trace-report")
STATS = os.path.join(TOOLS, "trace-stats")
failures = []


def check(ok, what):
    print(("ok: " if ok else "FAIL: ") + what)
    if not ok:
        failures.append(what)
    return ok


# ---- the page as HTML ----

VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}
FORBIDDEN_TAGS = {"script", "link", "img", "iframe", "object", "embed", "frame", "audio", "video", "source", "base"}


class Page(html.parser.HTMLParser):
    """Open elements, the sections, and each table with what follows it."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.stack, self.errors, self.sections, self.tables = [], [], [], []
        self.cur_table = self.cur_row = self.cur_cell = None
        self.cur_p = None  # (class, [text])
        self.in_code = False
        self.code = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag in FORBIDDEN_TAGS:
            self.errors.append("a <%s> element" % tag)
        for k, v in attrs:
            if k in ("src", "srcset", "action", "poster", "data", "background"):
                self.errors.append("%s=%r" % (k, v))
            if k in ("href", "xlink:href") and not (v or "").startswith("#"):
                self.errors.append("%s=%r" % (k, v))
            if k == "style" and "url(" in (v or ""):
                self.errors.append("url() in a style")
        if tag == "section":
            self.sections.append(a.get("id"))
        if tag == "table":
            self.cur_table = {"rows": [], "foot": [], "cmd": None}
            self.tables.append(self.cur_table)
        if tag == "tr" and self.cur_table is not None:
            self.cur_row = []
            self.cur_table["rows"].append(self.cur_row)
        if tag in ("td", "th") and self.cur_row is not None:
            self.cur_cell = []
        if tag == "p":
            self.cur_p = (a.get("class"), [])
        if tag == "code":
            self.in_code = True
            self.code = []
        if tag not in VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag, attrs):
        self.handle_starttag(tag, attrs)
        if tag not in VOID:
            self.stack.pop()

    def handle_endtag(self, tag):
        if tag in VOID:
            return
        if not self.stack or self.stack[-1] != tag:
            self.errors.append("</%s> closes <%s>" % (tag, self.stack[-1] if self.stack else "nothing"))
            return
        self.stack.pop()
        if tag in ("td", "th") and self.cur_cell is not None:
            self.cur_row.append("".join(self.cur_cell).strip())  # as a browser shows it
            self.cur_cell = None
        if tag == "tr":
            self.cur_row = None
        if tag == "code":
            self.in_code = False
        if tag == "p" and self.cur_p is not None:
            cls, text = self.cur_p
            t = self.tables[-1] if self.tables else None
            if cls == "foot" and t is not None:
                t["foot"].append("".join(text))
            if cls == "cmd" and t is not None and t["cmd"] is None:
                t["cmd"] = "".join(self.code or [])
            self.cur_p = None

    def handle_data(self, data):
        if self.cur_cell is not None:
            self.cur_cell.append(data)
        if self.cur_p is not None:
            self.cur_p[1].append(data)
        if self.in_code:
            self.code.append(data)
        if self.stack and self.stack[-1] == "style" and ("url(" in data or "@import" in data):
            self.errors.append("url() or @import in CSS")


def md_tables(text):
    """The Markdown tables of trace-stats -f md: rows of cells, and the footer
    lines that follow each (up to the next table or title)."""
    tables, cur = [], None
    for line in text.split("\n"):
        if line.startswith("|"):
            cells = [c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", line)[1:-1]]
            if cur is None:
                cur = {"rows": [], "foot": []}
                tables.append(cur)
            if all(re.fullmatch(r":?-+:?", c) for c in cells):
                continue
            cur["rows"].append(cells)
        elif cur is not None and line.strip():
            cur["foot"].append(line)
        elif cur is not None and not line.strip() and cur["foot"]:
            cur = None
    return tables


def check_page(path, label, compare=True, cwd=None):
    data = open(path, "rb").read()
    check(len(data) < 2 * 1024 * 1024, "%s: the page is under 2 MB (%d bytes)" % (label, len(data)))
    p = Page()
    p.feed(data.decode("utf-8"))
    p.close()
    check(not p.errors, "%s: nothing to fetch, every element closed %s" % (label, p.errors[:3]))
    check(not p.stack, "%s: no element left open %s" % (label, p.stack[:3]))
    check(data.startswith(b"<!DOCTYPE html>") and data.rstrip().endswith(b"</html>"), "%s: a whole HTML document" % label)
    check(b'width="-' not in data and b'height="-' not in data, "%s: no SVG shape of negative size" % label)
    check(p.sections[:1] == ["run"], "%s: the page starts with the run (%s)" % (label, p.sections))
    if not compare:
        return p
    n = 0
    for t in p.tables:
        if not t["cmd"]:
            continue
        args = shlex.split(t["cmd"])
        if args[0] != "trace-stats":
            check(False, "%s: a command under a table: %s" % (label, t["cmd"]))
            continue
        r = subprocess.run([STATS] + args[1:], capture_output=True, text=True, cwd=cwd)
        mt = md_tables(r.stdout)
        if not check(r.returncode == 0 and len(mt) == 1, "%s: `%s` prints one table" % (label, t["cmd"])):
            continue
        same = mt[0]["rows"] == t["rows"]
        if not same:
            for a, b in zip(mt[0]["rows"], t["rows"]):
                if a != b:
                    print("  trace-stats:", a[:8], "\n  the page:   ", b[:8])
                    break
        check(same, "%s: the table of `-t %s` is trace-stats's, cell for cell (%d rows)" %
              (label, args[args.index("-t") + 1], len(t["rows"])))
        check(mt[0]["foot"] == t["foot"], "%s: its footer lines are trace-stats's %s" % (label, (mt[0]["foot"][:1], t["foot"][:1])))
        n += 1
    check(n > 0, "%s: the page has tables to compare (%d)" % (label, n))
    return p


# ---- the folded stacks, computed from the JSON ----

OP_CATS = {"cpu_op", "Operator", "user_annotation"}
API_CATS = {"cuda_runtime", "Runtime", "cuda_driver", "mtia_runtime", "privateuse1_runtime"}
FILTERED = {"[memory]", "[OutOfMemory]", "profiler::_record_function_enter", "profiler::_record_function_enter_new",
            "profiler::_record_function_exit", "profiler::_call_end_callbacks_on_jit_fut", "aten::is_leaf",
            "aten::output_nr", "aten::_version"}


def ns(v):
    return int((Decimal(str(v)) * 1000).quantize(Decimal(1), rounding=ROUND_HALF_UP))


def load(path):
    op = gzip.open if path.endswith(".gz") else open
    with op(path, "rt", encoding="utf-8", errors="surrogateescape") as f:
        t = json.load(f, parse_float=Decimal)
    return t["traceEvents"] if isinstance(t, dict) else t


def folded_of(paths):
    """path -> self ns, summed over the traces."""
    out = {}
    for path in paths:
        threads = {}
        for e in load(path):
            if e.get("ph") != "X" or "ts" not in e or not isinstance(e.get("name"), str):
                continue
            cat = e.get("cat")
            if cat is None or cat in OP_CATS:
                cls = "op"
            elif cat in API_CATS:
                cls = "api"
            elif cat == "python_function":
                cls = "py"
            else:
                continue
            name = e["name"]
            if name in FILTERED:
                continue
            if cls == "op" and name.startswith("ProfilerStep#"):
                name = "ProfilerStep*"
            dur = ns(e["dur"]) if isinstance(e.get("dur"), (int, Decimal)) else 0
            key = (repr(e.get("pid")), repr(e.get("tid")))
            threads.setdefault(key, []).append((ns(e["ts"]), max(dur, 0), name))
        for evs in threads.values():
            evs.sort(key=lambda x: (x[0], -x[1]))  # stable: ties in file order
            stack, self_t = [], {}
            for ts, dur, name in evs:
                end = ts + dur
                while stack and (ts >= stack[-1][1] or end > stack[-1][1]):
                    stack.pop()
                parent = stack[-1][2] if stack else ()
                path = parent + (name,)
                self_t[path] = self_t.get(path, 0) + dur
                if stack:
                    self_t[parent] -= dur
                stack.append((ts, end, path))
            for path, v in self_t.items():
                key = ";".join(re.sub(r"[;\x00-\x1f]", "_", f) or "_" for f in path)
                out[key] = out.get(key, 0) + max(v, 0)
    return {k: v for k, v in out.items() if v > 0}


def check_folded(path, traces, label):
    got = {}
    ok = True
    for line in open(path, encoding="utf-8", errors="surrogateescape").read().split("\n"):
        if not line:
            continue
        m = re.fullmatch(r"(.+) (\d+)", line)
        ok = ok and m is not None and all(m.group(1).split(";"))
        if m:
            got[m.group(1)] = got.get(m.group(1), 0) + int(m.group(2))
    check(ok, "%s: every folded line is 'frame;...;frame COUNT'" % label)
    want = folded_of(traces)
    if got != want:
        diff = [k for k in set(got) | set(want) if got.get(k) != want.get(k)][:3]
        for k in diff:
            print("  %s: tool %s, here %s" % (k[-120:], got.get(k), want.get(k)))
    check(got == want, "%s: the folded counts are the paths' self times computed from the JSON (%d paths, %d ns)" %
          (label, len(want), sum(want.values())))
    # without Python frames, a name's self time over its paths is its Self CPU in trace-stats
    if not any(e.get("cat") == "python_function" for t in traces for e in load(t)):
        r = subprocess.run([STATS] + traces + ["-t", "ops", "-f", "json", "--row-limit", "-1"], capture_output=True,
                           text=True)
        by_name = {}
        for k, v in got.items():
            by_name[k.split(";")[-1]] = by_name.get(k.split(";")[-1], 0) + v
        rows = json.loads(r.stdout)["ops"]["rows"] if r.returncode == 0 else []
        # one rank: self_cpu_ns; several: the ranks' columns summed
        def self_cpu(row):
            return row["self_cpu_ns"] if "self_cpu_ns" in row else sum(
                v for k, v in row.items() if k.endswith("self_cpu_ns") and isinstance(v, int))
        bad = [row["name"] for row in rows if self_cpu(row) != by_name.get(row["name"], 0)]
        check(rows and not bad, "%s: a name's self time over its paths is trace-stats's Self CPU (%d rows) %s" %
              (label, len(rows), bad[:3]))


# ---- headless Chromium over the DevTools protocol on a pipe ----

def find_chromium():
    for c in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        if shutil.which(c):
            return shutil.which(c)
    return None


class Chrome:
    def __init__(self, binary, tmp):
        r_cmd, self.w_cmd = os.pipe()
        self.r_res, w_res = os.pipe()
        args = [binary, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                "--disable-background-networking", "--disable-component-update", "--disable-sync",
                "--disable-extensions", "--disable-default-apps", "--user-data-dir=" + os.path.join(tmp, "profile"),
                "--remote-debugging-pipe", "about:blank"]
        self.p = subprocess.Popen(["bash", "-c", 'exec "$@" 3<&%d 4>&%d' % (r_cmd, w_res), "bash"] + args,
                                  pass_fds=(r_cmd, w_res), stdout=subprocess.DEVNULL, stderr=open(os.path.join(tmp, 'chromium.log'), 'w'))
        os.close(r_cmd)
        os.close(w_res)
        self.buf, self.id, self.events = b"", 0, []

    def send(self, method, params=None, session=None, timeout=60):
        self.id += 1
        msg = {"id": self.id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self.w_cmd, json.dumps(msg).encode() + b"\0")
        deadline = time.time() + timeout
        while True:
            m = self.read(deadline)
            if m is None:
                raise RuntimeError("no answer to " + method)
            if m.get("id") == self.id:
                if "error" in m:
                    raise RuntimeError("%s: %s" % (method, m["error"]))
                return m.get("result", {})
            self.events.append(m)

    def read(self, deadline):
        while b"\0" not in self.buf:
            left = deadline - time.time()
            if left <= 0 or not select.select([self.r_res], [], [], left)[0]:
                return None
            chunk = os.read(self.r_res, 1 << 20)
            if not chunk:
                return None
            self.buf += chunk
        msg, self.buf = self.buf.split(b"\0", 1)
        return json.loads(msg)

    def wait_event(self, name, timeout=60):
        deadline = time.time() + timeout
        for m in self.events:
            if m.get("method") == name:
                return m
        while True:
            m = self.read(deadline)
            if m is None:
                return None
            self.events.append(m)
            if m.get("method") == name:
                return m

    def close(self):
        try:
            self.send("Browser.close", timeout=10)
        except Exception:
            pass
        try:
            self.p.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.p.kill()


def png_info(data):
    """(width, height, distinct bytes of the pixels) of a PNG."""
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        return None
    w, h = struct.unpack(">II", data[16:24])
    idat, at = b"", 8
    while at < len(data):
        n = struct.unpack(">I", data[at:at + 4])[0]
        kind = data[at + 4:at + 8]
        if kind == b"IDAT":
            idat += data[at + 8:at + 8 + n]
        at += 12 + n
    raw = zlib.decompress(idat)
    return w, h, len(set(raw[:1 << 20]))


def check_browser(chrome_bin, page, label, shots):
    tmp = tempfile.mkdtemp(prefix="tkchrome-")
    c = Chrome(chrome_bin, tmp)
    try:
        target = c.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        sess = c.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for m in ("Page.enable", "Runtime.enable", "Log.enable", "Network.enable"):
            c.send(m, session=sess)
        c.send("Emulation.setDeviceMetricsOverride",
               {"width": 1200, "height": 900, "deviceScaleFactor": 1, "mobile": False}, session=sess)
        url = "file://" + os.path.abspath(page)
        c.events.clear()
        c.send("Page.navigate", {"url": url}, session=sess)
        check(c.wait_event("Page.loadEventFired") is not None, "%s: Chromium loads the page" % label)
        rects = json.loads(c.send("Runtime.evaluate", {"expression": (
            "JSON.stringify([...document.querySelectorAll('section')].map(s => {const r = s.getBoundingClientRect();"
            " return [s.id, r.left + scrollX, r.top + scrollY, r.width, r.height]}))"), "returnByValue": True},
            session=sess)["result"]["value"])
        bad = []
        for m in c.events:
            meth, prm = m.get("method"), m.get("params", {})
            if meth == "Runtime.consoleAPICalled":
                bad.append("console.%s" % prm.get("type"))
            elif meth == "Runtime.exceptionThrown":
                bad.append("exception: %s" % prm.get("exceptionDetails", {}).get("text"))
            elif meth == "Log.entryAdded" and prm.get("entry", {}).get("level") in ("error", "warning"):
                bad.append("log: %s" % prm["entry"].get("text"))
        check(not bad, "%s: no console message, no exception %s" % (label, bad[:3]))
        reqs = [m["params"]["request"]["url"] for m in c.events if m.get("method") == "Network.requestWillBeSent"]
        check(all(r == url for r in reqs), "%s: no request but the page itself %s" % (label, [r for r in reqs if r != url][:3]))
        for sid, x, y, w, h in rects:
            shot = c.send("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True,
                                                     "clip": {"x": x, "y": y, "width": w, "height": h, "scale": 1}},
                          session=sess)
            data = base64.b64decode(shot["data"])
            open(os.path.join(shots, "%s-%s.png" % (label.replace("/", "_"), sid)), "wb").write(data)
            info = png_info(data)
            check(info is not None and abs(info[0] - round(w)) <= 1 and abs(info[1] - round(h)) <= 1 and info[2] > 2
                  and h > 40, "%s: a screenshot of section '%s' (%dx%d, %d bytes, not blank)" %
                  (label, sid, round(w), round(h), len(data)))
    except RuntimeError as e:
        check(False, "%s: Chromium answers (%s; its log: %s)" % (label, e, open(os.path.join(tmp, "chromium.log")).read()[-600:]))
    finally:
        c.close()
        shutil.rmtree(tmp, ignore_errors=True)


# ---- the pages ----

def main():
    work = tempfile.mkdtemp(prefix="tkreport-")
    shots = os.path.join(work, "shots")
    os.makedirs(shots)
    pages = []  # (page, label, compare)
    steps = os.path.join(TESTDATA, "steps")
    stats = os.path.join(TESTDATA, "stats")

    def report(label, inputs, compare=True, extra=(), folded=True):
        page = os.path.join(work, label.replace("/", "_") + ".html")
        fold = page + ".folded"
        cmd = [REPORT] + inputs + ["-o", page, "-n", "15"] + list(extra) + (["--folded", fold] if folded else [])
        r = subprocess.run(cmd, capture_output=True, text=True)
        if not check(r.returncode == 0 and os.path.exists(page), "%s: trace-report writes the page %s" %
                     (label, r.stderr.strip()[:200])):
            return
        if not BROWSER:
            check_page(page, label, compare)
            if folded:
                check_folded(fold, inputs, label)
        pages.append((page, label))

    report("tiny", [os.path.join(stats, "tiny_gpu.json")])
    # --row-limit -1: every row, each table still trace-stats's (its command says -1 too)
    report("tiny-all-rows", [os.path.join(stats, "tiny_gpu.json")], extra=["--row-limit", "-1"])
    # -n 2 cuts the tables; --top, the option's former name, writes the same page
    short, top = os.path.join(work, "tiny-2.html"), os.path.join(work, "tiny-top.html")
    tiny = os.path.join(stats, "tiny_gpu.json")
    r1 = subprocess.run([REPORT, tiny, "-o", short, "-n", "2"], capture_output=True)
    r2 = subprocess.run([REPORT, tiny, "-o", top, "--top", "2"], capture_output=True)
    check(r1.returncode == 0 and r2.returncode == 0 and open(top, "rb").read() == open(short, "rb").read(),
          "--top 2 writes the page -n 2 writes")
    rows = {}
    for name in (short, os.path.join(work, "tiny-all-rows.html")):
        pg = Page()
        pg.feed(open(name, encoding="utf-8").read())
        pg.close()
        rows[name] = sum(len(t["rows"]) for t in pg.tables)
    check(rows[os.path.join(work, "tiny-all-rows.html")] > rows[short],
          "-n -1 shows more table rows than -n 2 (%s)" % sorted(rows.values()))
    # what was said on the terminal while reading (a cut input warned about,
    # an input that failed) is said on the page too; a clean run says nothing
    cut, bad, said = os.path.join(work, "cut.json"), os.path.join(work, "bad.json"), os.path.join(work, "said.html")
    data = open(tiny, "rb").read()
    open(cut, "wb").write(data[:len(data) * 2 // 3])
    open(bad, "w").write("not a trace\n")
    r = subprocess.run([REPORT, cut, bad, tiny, "-o", said], capture_output=True, text=True)
    text = open(said, encoding="utf-8").read() if os.path.exists(said) else ""
    warned = [l.split("warning: ", 1)[1] for l in r.stderr.splitlines() if "warning: " in l]
    failed = [l.split("error: ", 1)[1] for l in r.stderr.splitlines() if "error: " in l]
    esc = lambda m: m.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")
    check(r.returncode == 1 and warned and failed and "class=\"said\"" in text and
          all("<li>warning: " + esc(m) + "</li>" in text for m in warned) and
          all("<li>error: " + esc(m) + "</li>" in text for m in failed),
          "a cut input's warning and a failed input's error are on the page as on the terminal (%s)" % r.stderr[:200])
    check("class=\"said\"" not in open(short, encoding="utf-8").read(), "a run that said nothing has no such box")
    report("two-ranks", [os.path.join(stats, "tiny_gpu.json"), os.path.join(stats, "tiny_gpu_rank1.json")])
    report("steps-launch", [os.path.join(steps, "launch.json")])
    report("steps-overlap", [os.path.join(steps, "overlap.json")])
    report("steps-range", [os.path.join(steps, "launch.json")], extra=["--steps", "2-2"], folded=False)
    report("memory", [os.path.join(steps, "memory.json")])
    report("collectives", [os.path.join(steps, "coll_rank0.json"), os.path.join(steps, "coll_rank1.json")])
    report("collectives-steps", [os.path.join(steps, "coll_rank0.json"), os.path.join(steps, "coll_rank1.json")],
           extra=["--window", "+0:+100ms"])
    # a trace-merge output: its ranks, as trace-stats reads them
    merged = os.path.join(work, "merged.json")
    subprocess.run([os.path.join(TOOLS, "trace-merge"), os.path.join(steps, "coll_rank0.json"),
                    os.path.join(steps, "coll_rank1.json"), os.path.join(steps, "launch.json"), "-o", merged, "-q"],
                   check=True)
    report("merged", [merged], folded=False)
    gen = os.path.join(work, "gen.json")
    subprocess.run([sys.executable, os.path.join(TESTS, "split_gen.py"), gen, "--steps", "60"], check=True)
    report("generated", [gen])
    # nine ranks: the tables are one rank's, the charts every rank's
    nine = []
    for i in range(9):
        p = os.path.join(work, "r%d.json" % i)
        t = json.load(open(os.path.join(steps, "coll_rank%d.json" % (i % 2))))
        t["distributedInfo"]["rank"] = i
        json.dump(t, open(p, "w"))
        nine.append(p)
    report("nine-ranks", nine, compare=False)
    # 1,024 ranks: aggregated, not a line or a bar each, and the page stays small
    many = []
    launch = json.load(open(os.path.join(steps, "launch.json")))["traceEvents"]
    for i in range(1024):
        p = os.path.join(work, "k%04d.json" % i)
        t = json.load(open(os.path.join(steps, "coll_rank%d.json" % (i % 2))))
        t["distributedInfo"] = {"backend": "nccl", "rank": i, "world_size": 1024}
        for e in launch:
            if e.get("ph") != "M":
                e = dict(e)
                e["ts"] = e["ts"] + (i % 7) * 3
                t["traceEvents"].append(e)
        json.dump(t, open(p, "w"))
        many.append(p)
    report("ranks-1024", many, compare=False)
    page = os.path.join(work, "ranks-1024.html")
    if os.path.exists(page) and not BROWSER:
        text = open(page, encoding="utf-8").read()
        check(text.count("<polyline") <= 4, "ranks-1024: no line per rank (%d polylines)" % text.count("<polyline"))
        check(text.count("<title>rank") < 200, "ranks-1024: no mark per rank (%d)" % text.count("<title>rank"))

    if REAL and os.path.isfile(os.path.join(REAL, "index.tsv")):
        def real(rel):
            return os.path.join(REAL, rel)
        dlrm = sorted(os.path.join(dp, f) for dp, _, fs in os.walk(real("param-dlrm-8rank")) for f in fs
                      if f.endswith(".json"))
        report("real-dlrm-8", dlrm)
        report("real-bert-stack", [real("tracelens-h100-hf/gaunernst_bert-small-uncased__1016001.json.gz")])
        report("real-resnet-memory", [real("kineto-tbplugin-resnet50-2021-06/worker0.1623143089861.pt.trace.json.gz")])
        report("real-nccl", [real("hta-nccl_parser_config/nccl_data.json.gz")] if os.path.exists(
            real("hta-nccl_parser_config/nccl_data.json.gz")) else dlrm[:2])
        big = real("hta-mtia_trace_single_rank/mtia_rank_0.json.gz")
        report("real-largest", [big], folded=False)
    else:
        print("note: no real traces (../shared/realtraces or $TK_REALTRACES): testdata and generated traces only")

    chrome = find_chromium() if BROWSER else None
    if chrome:
        for page, label in pages:
            check_browser(chrome, page, label, shots)
        print("screenshots in %s" % shots if os.environ.get("TK_KEEP") else "")
    if not os.environ.get("TK_KEEP"):
        shutil.rmtree(work, ignore_errors=True)
    if failures:
        print("%d failed" % len(failures))
        return 1
    if BROWSER and not chrome:
        print("skipped: no chromium on PATH to open the pages in (apt-get install chromium)")
        return 77
    return 0


sys.exit(main())
