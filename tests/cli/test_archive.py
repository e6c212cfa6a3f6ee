#!/usr/bin/env python3
"""test_archive.py: the tools on traces read straight from archives, against the same traces unpacked.

usage: test_archive.py TRACE_CONVERT TRACE_MERGE TRACE_STATS TRACE_SPLIT TESTDATA_DIR REALTRACES_DIR
The archives (tar, tar.gz, tar.xz, zip stored and deflated) are built at test
time with tarfile and zipfile, from testdata and from a few small real traces.
The testdata part always runs; the real-trace part exits 77 (skipped, saying
why) when REALTRACES_DIR is absent, after the testdata part has passed."""
import gzip
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile

CONVERT, MERGE, STATS, SPLIT, TESTDATA, REAL = sys.argv[1:7]
TOOLS = {"convert": CONVERT, "merge": MERGE, "stats": STATS, "split": SPLIT}
# streamed.zip: written to a stream that cannot seek, so each member's sizes
# and checksum follow its data (a data descriptor); zip64.zip: zip64 records
KINDS = ("tar", "tar.gz", "tar.xz", "stored.zip", "deflated.zip", "streamed.zip", "zip64.zip")
MTIME = 1700000000
failures = []
checks = 0


def check(cond, msg):
    global checks
    checks += 1
    if not cond:
        failures.append(msg)
        print("FAIL:", msg)
    return cond


def strict_loads(data):
    def bad(c):
        raise ValueError("not strict JSON: " + c)
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    return json.loads(data, parse_constant=bad)


def load(path):
    with open(path, "rb") as f:
        return strict_loads(f.read())


def events(doc):
    return doc if isinstance(doc, list) else doc["traceEvents"]


def is_trace(name):
    return name.endswith((".json", ".json.gz", ".tkb"))


class Run:
    """One run of a tool: its exit status, standard output and error."""

    def __init__(self, tool, args, env):
        p = subprocess.run([TOOLS[tool], *args], capture_output=True, env=env)
        self.rc, self.out, self.err = p.returncode, p.stdout, p.stderr.decode(errors="replace")
        self.what = "trace-%s %s" % (tool, " ".join(args))
        # a sanitizer build reports with exit 1 too: never a clean failure
        check("Sanitizer" not in self.err and "runtime error:" not in self.err,
              "%s: sanitizer report: %s" % (self.what, self.err[:2000]))


class Work:
    """A temporary directory; every tool runs with TMPDIR inside it, so that
    a temporary file left anywhere is seen."""

    def __init__(self, root):
        self.root = root
        self.tmp = os.path.join(root, "tmpdir")
        os.mkdir(self.tmp)
        self.env = dict(os.environ, TMPDIR=self.tmp)
        self.n = 0

    def path(self, *parts):
        return os.path.join(self.root, *parts)

    def outdir(self):
        """A fresh, empty directory for one run's output."""
        self.n += 1
        d = self.path("out%03d" % self.n)
        os.mkdir(d)
        return d

    def run(self, tool, *args):
        return Run(tool, list(args), self.env)

    def ok(self, tool, *args):
        r = self.run(tool, *args)
        if not check(r.rc == 0, "%s: exit %d: %s" % (r.what, r.rc, r.err.strip()[:400])):
            return None
        return r


def leftovers(*dirs):
    """Every file under the directories (a failed run must leave none)."""
    found = []
    for d in dirs:
        for base, _, files in os.walk(d):
            found += [os.path.relpath(os.path.join(base, f), d) for f in files]
    return found


# ---- building archives ----

class Unseekable(io.RawIOBase):
    def __init__(self, f):
        self.f = f

    def writable(self):
        return True

    def write(self, b):
        return self.f.write(b)


def build(path, kind, members):
    """members: (name, bytes) in order; bytes None for a directory."""
    if kind in ("streamed.zip", "zip64.zip"):
        with open(path, "wb") as raw:
            out = Unseekable(raw) if kind == "streamed.zip" else raw
            with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
                for name, data in members:
                    if data is None:
                        z.writestr(zipfile.ZipInfo(name + "/", (2023, 11, 14, 22, 13, 20)), b"")
                        continue
                    info = zipfile.ZipInfo(name, (2023, 11, 14, 22, 13, 20))
                    info.compress_type = zipfile.ZIP_DEFLATED
                    with z.open(info, "w", force_zip64=kind == "zip64.zip") as f:
                        f.write(data)
        return
    if kind.endswith("zip"):
        comp = zipfile.ZIP_STORED if kind.startswith("stored") else zipfile.ZIP_DEFLATED
        with zipfile.ZipFile(path, "w", comp) as z:
            for name, data in members:
                info = zipfile.ZipInfo(name + ("/" if data is None else ""), (2023, 11, 14, 22, 13, 20))
                info.compress_type = comp
                info.external_attr = (0o40755 if data is None else 0o100644) << 16
                z.writestr(info, b"" if data is None else data)
        return
    mode = {"tar": "w", "tar.gz": "w:gz", "tar.xz": "w:xz"}[kind]
    with tarfile.open(path, mode, format=tarfile.PAX_FORMAT) as t:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.mtime = MTIME
            if data is None:
                info.type, info.mode = tarfile.DIRTYPE, 0o755
                t.addfile(info)
            else:
                info.size, info.mode = len(data), 0o644
                t.addfile(info, io.BytesIO(data))


def archive_traces(path):
    """The trace members in the archive's own order, as Python reads it."""
    if zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as z:
            return [i.filename for i in z.infolist() if not i.is_dir() and is_trace(i.filename)]
    with tarfile.open(path) as t:
        return [m.name for m in t.getmembers() if m.isfile() and is_trace(m.name)]


def unpack(members, d):
    """The members written as plain files under d; {name: path}."""
    paths = {}
    for name, data in members:
        p = os.path.join(d, os.path.normpath(name))
        if data is None:
            os.makedirs(p, exist_ok=True)
            continue
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "wb") as f:
            f.write(data)
        paths[name] = p
    return paths


def member_data_offset(path, name):
    """Where a member's bytes start in an uncompressed tar or a zip, and their length."""
    if zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as z:
            info = z.getinfo(name)
        with open(path, "rb") as f:
            f.seek(info.header_offset + 26)
            n, m = int.from_bytes(f.read(2), "little"), int.from_bytes(f.read(2), "little")
        return info.header_offset + 30 + n + m, info.compress_size
    with tarfile.open(path) as t:
        m = t.getmember(name)
        return m.offset_data, m.size


def damaged_copy(src, dst, cut=None, flip=None):
    with open(src, "rb") as f:
        data = bytearray(f.read())
    if cut is not None:
        data = data[:cut]
    if flip is not None:
        data[flip] ^= 0x01
    with open(dst, "wb") as f:
        f.write(data)


# ---- comparing outputs ----

def without_files(doc, archive):
    """The merged document without the input file names (they differ between
    an archive and the unpacked files), checking that an archive's are
    ARCHIVE//MEMBER."""
    doc = json.loads(json.dumps(doc))
    files = []
    for r in doc.get("ranks", {}).values():
        files.append(r.pop("file", None))
    for i in doc.get("tracekitMerge", {}).get("inputs", []):
        files.append(i.pop("file", None))
    if archive:
        check(all(f and f.startswith(archive + "//") for f in files),
              "merge of %s: input files not named ARCHIVE//MEMBER: %s" % (archive, files))
    return doc


def check_merge_same(w, archive, unpacked, what):
    oa, ou = w.outdir(), w.outdir()
    ra = w.ok("merge", archive, "-o", os.path.join(oa, "m.json"), "--tmpdir", oa)
    ru = w.ok("merge", *unpacked, "-o", os.path.join(ou, "m.json"), "--tmpdir", ou)
    if not ra or not ru:
        return
    a, u = load(os.path.join(oa, "m.json")), load(os.path.join(ou, "m.json"))
    check(len(events(a)) > 0, "%s: merge gave no events" % what)
    check(events(a) == events(u), "%s: merged events differ from those of the unpacked files "
          "(%d vs %d events)" % (what, len(events(a)), len(events(u))))
    check(without_files(a, archive) == without_files(u, None),
          "%s: merged metadata differs from that of the unpacked files" % what)
    check(os.listdir(oa) == ["m.json"], "%s: files left beside the output: %s" % (what, os.listdir(oa)))


def check_stats_same(w, archive, unpacked, what, *opts):
    ra = w.ok("stats", *opts, archive)
    ru = w.ok("stats", *opts, *unpacked)
    if ra and ru:
        check(len(ra.out) > 0, "%s: trace-stats printed nothing" % what)
        check(ra.out == ru.out, "%s: trace-stats %s prints other tables than for the unpacked "
              "files" % (what, " ".join(opts)))


def check_convert_same(w, archive, name, plain, what):
    oa, ou = w.outdir(), w.outdir()
    ra = w.ok("convert", "%s//%s" % (archive, name), "-o", os.path.join(oa, "c.json"))
    ru = w.ok("convert", plain, "-o", os.path.join(ou, "c.json"))
    if not ra or not ru:
        return None
    a, u = load(os.path.join(oa, "c.json")), load(os.path.join(ou, "c.json"))
    check(a == u, "%s: trace-convert %s//%s differs from converting the unpacked member"
          % (what, archive, name))
    return a


def check_list(w, tool, args, want, what):
    r = w.ok(tool, "--list", *args)
    if r:
        got = r.out.decode().splitlines()
        check(got == want, "%s: trace-%s --list %s printed %s, want %s"
              % (what, tool, " ".join(args), got[:6], want[:6]))


def check_fails(w, r, archive, outdirs, what, needle=None):
    """A clean failure: exit 1, a message that names the archive (and needle), no file left."""
    check(r.rc == 1, "%s: %s: exit %d, want 1" % (what, r.what, r.rc))
    check(archive in r.err, "%s: %s: the message does not name %s: %s"
          % (what, r.what, archive, r.err.strip()[:300]))
    if needle:
        check(needle in r.err, "%s: %s: no '%s' in the message: %s" % (what, r.what, needle, r.err.strip()[:300]))
    left = leftovers(*outdirs, w.tmp)
    check(not left, "%s: %s: files left behind: %s" % (what, r.what, left))


# ---- the testdata part ----

def gen_trace(rank, n):
    """A small Kineto-like trace of n CPU ops with kernels, for rank."""
    evs = [{"ph": "M", "name": "process_name", "pid": 10 + rank, "tid": 0, "args": {"name": "python"}}]
    ts = 1700000000000 + rank * 1000
    for i in range(n):
        ts += 7 + (i * 37 + rank) % 11
        evs.append({"ph": "X", "cat": "cpu_op", "name": "aten::op%d" % (i % 5), "pid": 10 + rank,
                    "tid": 1, "ts": ts, "dur": 5, "args": {"External id": i + 1}})
        evs.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 10 + rank,
                    "tid": 1, "ts": ts + 1, "dur": 2, "args": {"correlation": i + 1, "External id": i + 1}})
        evs.append({"ph": "X", "cat": "kernel", "name": "kernel_%d" % (i % 3), "pid": 0, "tid": 7,
                    "ts": ts + 3, "dur": 4 + i % 5,
                    "args": {"correlation": i + 1, "External id": i + 1, "device": 0, "stream": 7}})
    doc = {"schemaVersion": 1, "distributedInfo": {"rank": rank, "world_size": 8},
           "traceEvents": evs, "traceName": "rank%d" % rank}
    return json.dumps(doc, indent=1).encode()


def testdata_members():
    def td(name):
        with open(os.path.join(TESTDATA, name), "rb") as f:
            data = f.read()
        return data.split(b"\n", 1)[1] if data.startswith(b"#") else data
    tiny = td("stats/tiny_gpu_rank1.json")
    return [
        ("notes.txt", b"the traces of a test run\n"),
        ("run", None),
        ("run/example_kineto.json", td("example_kineto.json")),
        ("run/rank5.json.gz", gzip.compress(gen_trace(5, 40), mtime=0)),
        ("config.yaml", b'{"traceEvents": []}\n'),  # JSON, but not named as a trace
        ("run/sub", None),
        ("run/kineto_small.json", td("kineto_small.json")),
        ("./run/tiny_gpu_rank1.json.gz", gzip.compress(tiny, mtime=0)),
        ("run/rank6.json", gen_trace(6, 25)),
        ("old/rank7.json.bak", gen_trace(7, 5)),
    ]


def check_archive(w, kind, members, what, stats_opts=()):
    """Every tool on the archive against the same tool on the unpacked files."""
    arc = w.path("%s.%s" % (what, kind))
    build(arc, kind, members)
    order = archive_traces(arc)
    check(order == [n for n, d in members if d is not None and is_trace(n)],
          "%s.%s: archive order %s is not the order written" % (what, kind, order))
    udir = w.path("unpacked-%s-%s" % (what, kind))
    paths = unpack(members, udir)
    unpacked = [paths[n] for n in order]
    names = ["%s//%s" % (arc, n) for n in order]
    for tool in ("merge", "stats"):
        check_list(w, tool, [arc], names, "%s.%s" % (what, kind))
    for tool in ("convert", "split"):
        check_list(w, tool, [arc], names, "%s.%s" % (what, kind))
    # several arguments: the archive's traces where the archive stands
    check_list(w, "stats", [unpacked[0], arc, unpacked[-1]], [unpacked[0]] + names + [unpacked[-1]],
               "%s.%s" % (what, kind))
    check_merge_same(w, arc, unpacked, "%s.%s" % (what, kind))
    check_stats_same(w, arc, unpacked, "%s.%s" % (what, kind))
    if stats_opts:  # e.g. a window counted from the first event: each trace read twice
        check_stats_same(w, arc, unpacked, "%s.%s" % (what, kind), *stats_opts)
    # from standard input: no seeking, the same traces
    with open(arc, "rb") as f:
        p = subprocess.run([STATS, "-"], stdin=f, capture_output=True, env=w.env)
    ru = w.run("stats", *unpacked)
    check(p.returncode == 0 and p.stdout == ru.out,
          "%s.%s: trace-stats - < ARCHIVE: exit %d, %s" % (what, kind, p.returncode,
                                                            "same tables" if p.stdout == ru.out else "other tables"))
    with open(arc, "rb") as f:
        p = subprocess.run([STATS, "--list", "-"], stdin=f, capture_output=True, env=w.env)
    check(p.stdout.decode().splitlines() == ["-//" + n for n in order],
          "%s.%s: trace-stats --list - < ARCHIVE printed %s" % (what, kind, p.stdout.decode().splitlines()[:4]))
    return arc, order, paths


def check_one_member(w, arc, order, paths, what):
    """ARCHIVE//MEMBER for convert and split; with './' added or taken away."""
    for name in order:
        check_convert_same(w, arc, name, paths[name], what)
    name = order[-1]
    other = name[2:] if name.startswith("./") else "./" + name
    check_convert_same(w, arc, other, paths[name], what + " (%s)" % other)
    # split of a member: the same parts as the unpacked file's
    sa, su = w.outdir(), w.outdir()
    ra = w.ok("split", "%s//%s" % (arc, order[0]), "-o", sa, "--every", "20us", "-q")
    ru = w.ok("split", paths[order[0]], "-o", su, "--every", "20us", "-q")
    if ra and ru:
        check(len(os.listdir(su)) > 2, "%s: trace-split --every 20us wrote %s" % (what, os.listdir(su)))
        check(sorted(os.listdir(sa)) == sorted(os.listdir(su)),
              "%s: trace-split of a member wrote %s, of the unpacked file %s"
              % (what, sorted(os.listdir(sa)), sorted(os.listdir(su))))
        for f in os.listdir(su):
            if f.endswith(".index.json"):
                continue
            if os.path.exists(os.path.join(sa, f)):
                check(events(load(os.path.join(sa, f))) == events(load(os.path.join(su, f))),
                      "%s: part %s differs from the unpacked file's" % (what, f))


def check_gz_member(w, arc, name, raw, what):
    """A .json.gz member of a tar.gz is decoded: the events are the member's."""
    o = w.outdir()
    if w.ok("convert", "%s//%s" % (arc, name), "-o", os.path.join(o, "g.json")):
        got = events(load(os.path.join(o, "g.json")))
        want = events(strict_loads(raw))
        check(len(got) == len(want) and [e.get("name") for e in got] == [e.get("name") for e in want],
              "%s: %s//%s: %d events, the member holds %d" % (what, arc, name, len(got), len(want)))


def check_several_without_member(w, arc, what):
    o = w.outdir()
    r = w.run("convert", arc, "-o", os.path.join(o, "x.json"))
    check_fails(w, r, arc, [o], what + " without a member", "more than one trace")
    check("//MEMBER" in r.err and "--list" in r.err,
          "%s: the message does not say how to name a member: %s" % (what, r.err.strip()))
    o = w.outdir()
    r = w.run("split", arc, "-o", os.path.join(o, "parts"), "--parts", "2")
    check_fails(w, r, arc, [o], what + " split without a member", "more than one trace")


def check_missing_member(w, arc, what):
    o = w.outdir()
    r = w.run("convert", arc + "//run/nope.json", "-o", os.path.join(o, "x.json"))
    check_fails(w, r, arc, [o], what + " missing member", "run/nope.json")
    r = w.run("stats", arc + "//run/nope.json")
    check_fails(w, r, arc, [], what + " stats of a missing member", "run/nope.json")


def check_damaged(w, arc, kind, order, paths, what):
    """Cut in half, or one byte changed in a member's data: exit 1, the
    archive named, nothing left behind; trace-stats still prints the members
    before the damage."""
    size = os.path.getsize(arc)
    cut = w.path("cut-" + os.path.basename(arc))
    damaged_copy(arc, cut, cut=size // 2)
    o = w.outdir()
    r = w.run("merge", cut, "-o", os.path.join(o, "m.json"), "--tmpdir", o)
    check_fails(w, r, cut, [o], what + " cut in half")
    r = w.run("stats", cut)
    check_fails(w, r, cut, [], what + " cut in half")
    r = w.run("convert", cut + "//" + order[-1], "-o", os.path.join(o, "c.json"))
    check_fails(w, r, cut, [o], what + " cut in half, last member")
    r = w.run("stats", "--list", cut)
    check(r.rc == 1 and cut in r.err, "%s cut in half: --list: exit %d, %s" % (what, r.rc, r.err.strip()))
    listed = r.out.decode().splitlines()
    check(listed == ["%s//%s" % (cut, n) for n in order[:len(listed)]],
          "%s cut in half: --list printed %s" % (what, listed))
    # a good input beside the damaged archive: merge still fails as a whole
    r = w.run("merge", paths[order[0]], cut, "-o", os.path.join(o, "m.json"), "--tmpdir", o)
    check_fails(w, r, cut, [o], what + " cut in half, beside a good input")

    if kind == "tar" or kind.endswith("zip"):
        # cut in the middle of the data of a member: the members before it
        # are read and reported as from the unpacked files
        k = len(order) // 2
        off, n = member_data_offset(arc, order[k])
        damaged_copy(arc, cut, cut=off + n // 2)
        r = w.run("stats", cut)
        check_fails(w, r, cut, [], what + " cut in %s" % order[k], order[k].lstrip("./"))
        good = w.run("stats", *[paths[x] for x in order[:k]])
        check(r.out == good.out, "%s cut in %s: trace-stats does not print the tables of the "
              "members before it" % (what, order[k]))
        check("damaged archive at byte %d" % (off + n // 2) in r.err,
              "%s cut in %s: the message does not say where the archive ends (byte %d): %s"
              % (what, order[k], off + n // 2, r.err.strip()[:300]))
    if kind == "tar":
        # a member's header with a wrong checksum: a damaged archive, not
        # an archive without that member
        k = len(order) // 2
        off, n = member_data_offset(arc, order[k])
        hdr = w.path("hdr-" + os.path.basename(arc))
        damaged_copy(arc, hdr, flip=off - 512 + 148)
        o = w.outdir()
        r = w.run("merge", hdr, "-o", os.path.join(o, "m.json"), "--tmpdir", o)
        check_fails(w, r, hdr, [o], what + " with the header checksum of %s changed" % order[k])
        r = w.run("stats", "--list", hdr)
        check(r.rc == 1, "%s with the header checksum of %s changed: --list: exit %d, listed %d of %d"
              % (what, order[k], r.rc, len(r.out.decode().splitlines()), len(order)))
        return  # no checksum over a tar's data: a changed byte is other data
    # one byte changed in the middle of a member's data (of the compressed
    # stream for tar.gz and tar.xz): a checksum catches it
    sizes = dict((n, len(d)) for n, d in members_of(arc))
    big = max(order, key=lambda x: sizes[x])
    if kind.endswith("zip"):
        off, n = member_data_offset(arc, big)
        at = off + n // 2
    else:
        at = size // 2
    flipped = w.path("flip-" + os.path.basename(arc))
    damaged_copy(arc, flipped, flip=at)
    o = w.outdir()
    r = w.run("merge", flipped, "-o", os.path.join(o, "m.json"), "--tmpdir", o)
    check_fails(w, r, flipped, [o], what + " byte %d changed" % at)
    r = w.run("stats", flipped)
    check_fails(w, r, flipped, [], what + " byte %d changed" % at)
    if kind.endswith("zip"):
        r = w.run("convert", "%s//%s" % (flipped, big), "-o", os.path.join(o, "c.json"))
        check_fails(w, r, flipped, [o], what + " byte %d changed" % at, "%s//%s" % (flipped, big))


def members_of(arc):
    """(name, bytes) of every file member, as Python reads the archive."""
    if zipfile.is_zipfile(arc):
        with zipfile.ZipFile(arc) as z:
            return [(i.filename, z.read(i)) for i in z.infolist() if not i.is_dir()]
    with tarfile.open(arc) as t:
        return [(m.name, t.extractfile(m).read()) for m in t.getmembers() if m.isfile()]


def testdata_part(w):
    members = testdata_members()
    for kind in KINDS:
        arc, order, paths = check_archive(w, kind, members, "td", ("--window", "+0:+40us"))
        what = "td.%s" % kind
        check_one_member(w, arc, order, paths, what)
        check_several_without_member(w, arc, what)
        check_missing_member(w, arc, what)
        check_damaged(w, arc, kind, order, paths, what)
        for name, data in members:
            if name.endswith(".json.gz"):
                check_gz_member(w, arc, name, data, what)
    # an archive of one trace among other files is that trace
    one = [("notes.txt", b"one trace\n"), ("run", None), ("run/rank5.json.gz", members[3][1])]
    for kind in ("tar.gz", "deflated.zip"):
        arc = w.path("one." + kind)
        build(arc, kind, one)
        o = w.outdir()
        plain = w.path("one-rank5.json.gz")
        with open(plain, "wb") as f:
            f.write(members[3][1])
        ou = w.outdir()
        if w.ok("convert", arc, "-o", os.path.join(o, "x.json")) and \
                w.ok("convert", plain, "-o", os.path.join(ou, "x.json")):
            check(load(os.path.join(o, "x.json")) == load(os.path.join(ou, "x.json")),
                  "one.%s: trace-convert of a one-trace archive differs from its member's" % kind)
    # an archive with no trace
    arc = w.path("none.tar.gz")
    build(arc, "tar.gz", [("notes.txt", b"nothing\n"), ("config.yaml", b"{}\n")])
    o = w.outdir()
    r = w.run("convert", arc, "-o", os.path.join(o, "x.json"))
    check_fails(w, r, arc, [o], "none.tar.gz", "no trace")
    r = w.run("merge", arc, "-o", os.path.join(o, "x.json"))
    check(r.rc == 1 and not leftovers(o), "none.tar.gz: trace-merge: exit %d, files %s"
          % (r.rc, leftovers(o)))


# ---- the real traces ----

def real_part(w):
    sets = [
        ("dlrm", os.path.join(REAL, "param-dlrm-8rank", "dlrm_kineto"), ".json", ("tar.gz", "deflated.zip")),
        ("hta", os.path.join(REAL, "hta-sampled-2rank"), ".json.gz", ("tar", "tar.gz", "stored.zip")),
        ("h100", os.path.join(REAL, "kineto-docs-h100"), ".json", ("stored.zip", "tar.xz")),
    ]
    for what, d, suffix, kinds in sets:
        files = sorted(f for f in os.listdir(d) if f.endswith(suffix))
        if not check(files, "%s: no %s files in %s" % (what, suffix, d)):
            continue
        members = [(what, None)]
        for f in files:
            with open(os.path.join(d, f), "rb") as fh:
                members.append(("%s/%s" % (what, f), fh.read()))
        members.insert(2, ("README.txt", b"real traces\n"))
        for kind in kinds:
            arc, order, paths = check_archive(w, kind, members, "real-" + what)
            check_convert_same(w, arc, order[0], paths[order[0]], "real-%s.%s" % (what, kind))
            if suffix == ".json.gz" and kind.startswith("tar.gz"):
                check_gz_member(w, arc, order[0], dict(members)[order[0]], "real-%s.%s" % (what, kind))
            if what == "dlrm":
                check_damaged(w, arc, kind, order, paths, "real-%s.%s" % (what, kind))


def main():
    for t in TOOLS.values():
        if not os.access(t, os.X_OK):
            print("not an executable: %s" % t)
            return 1
    with tempfile.TemporaryDirectory(prefix="tkarc-") as root:
        w = Work(root)
        testdata_part(w)
        print("testdata part: %d checks, %d failed" % (checks, len(failures)))
        if not os.path.isdir(REAL):
            if failures:
                return 1
            print("skipped the real-trace part: no real traces at %s" % REAL)
            return 77
        real_part(w)
    print("%d checks, %d failed" % (checks, len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
