#!/usr/bin/env python3
"""make_seeds.py: writes the generated seeds of the fuzz corpora (fuzz/README.md).

- fuzz/corpus/json/*.json.gz: gzip copies of JSON seeds, so that fuzz_json
  reads through the gzip filter, and window-*.json.gz: traces with one
  event larger than the reader's first 1 MiB window (libtrace/src/reader.c,
  TK__BUF0), so that the window grows (up to fuzz_json's 1 MiB value limit
  + 64 KiB) and the value is then refused (TK_ERR_LIMIT); a few KiB
  compressed, over 1 MiB read; *.blocks.gz: two of them in deflate blocks
  of 128 symbols, for the inflating of one stream in parts.
- variants of trace seeds with trailing whitespace (still the same trace)
  whose hash gives the harness each of its main options: the harnesses
  draw their options from an FNV-1a hash of the whole input
  (fuzz_events.h), so a seed alone tries one set of them. The option each
  variant is picked for is decoded here as the harness decodes it.
- fuzz/corpus/deflate/: raw deflate streams of zlib's (python's zlib) at
  levels 0, 1, 6 and 9 and with each strategy (fixed, Huffman only, RLE,
  filtered) of a few texts, empty to 20 KB; one in two blocks, one that
  does not end, one with bytes after its end; three of many blocks (two
  of 128 symbols a block, one of 450 KB of events) for the inflating in parts.
- with --bin DIR (a plain build's fuzz/ directory, e.g. build/fuzz): the
  binary seeds that the harnesses make themselves: fuzz_merge's run files
  (the sorter's spill format) and fuzz_collector's CUPTI records.

The output is deterministic: running it again rewrites the same bytes.

    python3 fuzz/make_seeds.py [--bin build/fuzz]
"""
import gzip
import hashlib
import itertools
import os
import random
import subprocess
import sys
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(HERE, "corpus")
TESTDATA = os.path.join(HERE, "..", "testdata")


def write(path, data):
    with open(path, "wb") as f:
        f.write(data)


def gz(data):
    return gzip.compress(data, compresslevel=9, mtime=0)


def fnv1a(data):
    h = 0xCBF29CE484222325
    for b in data:
        h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


def opt_bytes(data):
    """The option bytes fz_byte() returns for this input, in order."""
    h = fnv1a(data)
    return [(h >> (8 * i)) & 0xFF for i in range(8)]


def variant(data, want):
    """data with the shortest trailing whitespace whose option bytes satisfy want."""
    for n in range(0, 6):
        for tail in itertools.product(b" \t\r\n", repeat=n):
            d = data + bytes(tail)
            if want(opt_bytes(d)):
                return d
    raise SystemExit("no whitespace variant found")


def read(path):
    with open(path, "rb") as f:
        return f.read()


def testdata(name):
    """A file of testdata/ without its leading comment lines (not JSON)."""
    text = read(os.path.join(TESTDATA, name))
    while text.startswith(b"#"):
        text = text.split(b"\n", 1)[1]
    return text


def kineto_small():
    return testdata("kineto_small.json")


def big_event(n_bytes, before=2, after=2):
    """A trace with one event whose args hold a string of n_bytes."""
    ev = [b'{"ph":"X","cat":"cpu_op","name":"op%d","ts":%d,"dur":5,"pid":1,"tid":1}' % (i, 10 * i)
          for i in range(before)]
    ev.append(b'{"ph":"X","cat":"cpu_op","name":"big","ts":100,"dur":50,"pid":1,"tid":1,'
              b'"args":{"Input Dims":[[1]],"blob":"' + b"ab" * (n_bytes // 2) + b'"}}')
    ev += [b'{"ph":"X","cat":"kernel","name":"k%d","ts":%d,"dur":5,"pid":0,"tid":7,"args":{"External id":%d}}'
           % (i, 200 + 10 * i, i) for i in range(after)]
    return b'{"traceEvents":[\n' + b",\n".join(ev) + b'\n],"traceName":"window"}\n'


def json_seeds():
    d = os.path.join(CORPUS, "json")
    for name in ("bare.json", "misc.json", "cut.json", "example_kineto.json"):
        write(os.path.join(d, name + ".gz"), gz(read(os.path.join(d, name))))
    # the window grows past its first 1 MiB (up to fuzz_json's value limit,
    # 1 MiB, + 64 KiB), then the value is refused (TK_ERR_LIMIT): an event
    # just over the limit, and one far over it
    write(os.path.join(d, "window-grow.json.gz"), gz(big_event(1060000)))
    write(os.path.join(d, "window-limit.json.gz"), gz(big_event(2600000)))
    # deflate blocks of 128 symbols (memLevel 1), so that a small stream has block starts in
    # many of fuzz_json's small shares when it is inflated in parts (inflate_par.c)
    for name, text in (("example_kineto.json", read(os.path.join(d, "example_kineto.json"))),
                       ("kineto_small.json", kineto_small())):
        c = zlib.compressobj(6, zlib.DEFLATED, 31, 1)
        write(os.path.join(d, name + ".blocks.gz"), c.compress(text) + c.flush())


def option_variants():
    ks = kineto_small()
    ek = read(os.path.join(TESTDATA, "example_kineto.json"))
    tiny = read(os.path.join(TESTDATA, "stats", "tiny_gpu.json"))
    # fuzz_split: rule = b & 3 (0 size, 1 parts, 2 every, 3 by step), format = (b >> 2) % 3,
    # part size 200 << (b2 % 6)
    for base, name in ((ks, "kineto_small"), (ek, "example_kineto")):
        for rule, rname in enumerate(("size", "parts", "every", "steps")):
            fmt = rule % 3
            write(os.path.join(CORPUS, "split", "%s-%s.json" % (name, rname)),
                  variant(base, lambda o, r=rule, f=fmt: (o[0] & 3) == r and (o[0] >> 2) % 3 == f and
                          (r != 0 or o[1] % 6 >= 3)))  # parts of 1600 bytes or more: the metadata fits
    write(os.path.join(CORPUS, "split", "kineto_small.json.gz"), gz(ks))
    # fuzz_merge: align = (b >> 1) & 3 (none, start, collectives, given), 2 or 3 ranks (b & 1)
    for align, aname in enumerate(("none", "start", "collectives", "given")):
        write(os.path.join(CORPUS, "merge", "kineto_small-%s.json" % aname),
              variant(ks, lambda o, a=align: ((o[0] >> 1) & 3) == a and (o[0] & 1) == a % 2))
    # fuzz_stats: shapes = b & 1, flops = (b >> 1) % 3 (none, torch, extended)
    for shapes in (0, 1):
        for flops, fname in enumerate(("none", "torch", "extended")):
            write(os.path.join(CORPUS, "stats", "tiny_gpu-%s%s.json" % (fname, "-shapes" if shapes else "")),
                  variant(tiny, lambda o, s=shapes, f=flops: (o[0] & 1) == s and ((o[0] >> 1) % 3) == f))
    write(os.path.join(CORPUS, "stats", "kineto_small.json"), ks)
    write(os.path.join(CORPUS, "sqlite", "kineto_small.json"), ks)
    for name in ("array_2020.json", "legacy_torch1.json"):
        write(os.path.join(CORPUS, "stats", name), testdata(name))
    for d in ("split", "sqlite"):
        write(os.path.join(CORPUS, d, "meta_after.json"), testdata("meta_after.json"))


def binary_seeds(bindir):
    merge = os.path.join(bindir, "fuzz_merge")
    for src, out in ((os.path.join(TESTDATA, "stats", "tiny_gpu.json"), "run-tiny_gpu"),
                     (os.path.join(TESTDATA, "example_kineto.json"), "run-example_kineto")):
        subprocess.run([merge, "--make-run", src, os.path.join(CORPUS, "merge", out)], check=True)
    collector = os.path.join(bindir, "fuzz_collector")
    if os.path.exists(collector):
        subprocess.run([collector, "--make-seeds", os.path.join(CORPUS, "collector")], check=True)


def deflate_seeds():
    out = os.path.join(CORPUS, "deflate")
    os.makedirs(out, exist_ok=True)
    rnd = random.Random(7)
    lines = b"".join(b'{"name": "k%d", "ts": %d, "args": {"External id": %d}},\n' % (i % 13, i * 7, i)
                     for i in range(300))
    texts = [b"", b"a", b'{"ph": "X", "name": "aten::mm", "ts": 12.5, "dur": 3}\n' * 40,
             bytes(rnd.getrandbits(8) for _ in range(3000)), lines, testdata("example_kineto.json")[:20000]]

    def raw(level=6, strategy=zlib.Z_DEFAULT_STRATEGY):
        return zlib.compressobj(level, zlib.DEFLATED, -15, 8, strategy)

    seeds = []
    for t in texts:
        for level, strategy in ((0, 0), (1, 0), (6, 0), (9, 0), (6, zlib.Z_FIXED), (6, zlib.Z_HUFFMAN_ONLY),
                                (6, zlib.Z_RLE), (6, zlib.Z_FILTERED)):
            c = raw(level, strategy)
            seeds.append(c.compress(t) + c.flush())
    c = raw()
    seeds.append(c.compress(lines[:5000]) + c.flush(zlib.Z_FULL_FLUSH) + c.compress(lines[5000:]) + c.flush())
    c = raw()
    seeds.append(c.compress(lines) + c.flush(zlib.Z_SYNC_FLUSH))
    c = raw()
    seeds.append(c.compress(lines) + c.flush() + b"trailing")
    # many blocks (memLevel 1: 128 symbols a block), matches reaching into the blocks before:
    # block starts for the parts (tk__dpart_inflate, tk__dscan_find)
    for text in (lines, testdata("example_kineto.json")[:30000]):
        c = zlib.compressobj(6, zlib.DEFLATED, -15, 1)
        seeds.append(c.compress(text) + c.flush())
    many = b"".join(b'{"ph": "X", "cat": "kernel", "name": "k%d", "ts": %d, "args": {"External id": %d}},\n'
                    % (rnd.randrange(40), i * 977 + rnd.randrange(900), rnd.randrange(100000)) for i in range(5000))
    c = raw()
    seeds.append(c.compress(many) + c.flush())
    for d in seeds:
        write(os.path.join(out, hashlib.sha1(d).hexdigest()), d)


def main():
    args = sys.argv[1:]
    json_seeds()
    deflate_seeds()
    option_variants()
    if args[:1] == ["--bin"] and len(args) == 2:
        binary_seeds(args[1])
    elif args:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main()
