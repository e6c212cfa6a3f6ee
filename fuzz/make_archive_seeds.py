#!/usr/bin/env python3
"""make_archive_seeds.py: writes the seed corpus of fuzz_archive (fuzz/corpus/archive/).

Small archives of small Chrome-trace members plus members that are not
traces, in the containers and compressions tracekit reads through
libarchive. The output is deterministic (fixed times, owners and modes), so
running it again rewrites the same bytes. Python's own modules write tar,
zip, gzip, bzip2 and xz; libarchive itself (through ctypes) writes 7z and
cpio. Run from anywhere:

    python3 fuzz/make_archive_seeds.py [OUTDIR]
"""
import bz2
import ctypes
import ctypes.util
import gzip
import io
import lzma
import os
import sys
import tarfile
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "corpus", "archive")
MTIME = 1700000000

TRACE_A = b'{"traceEvents":[{"ph":"X","name":"a","ts":1,"dur":2,"pid":1,"tid":1,"args":{"x":1}}]}\n'
TRACE_B = (b'{"schemaVersion":1,"traceEvents":[\n'
           b'{"ph":"X","cat":"kernel","name":"gemm","ts":10.5,"dur":3,"pid":0,"tid":7,"args":{"External id":4,"grid":[1,2,1]}},\n'
           b'{"ph":"i","s":"g","name":"mark","ts":12,"pid":"host","tid":"main"},\n'
           b'{"ph":"s","id":4,"name":"flow","ts":11,"pid":0,"tid":7},\n'
           b'{"ph":"M","name":"process_name","pid":0,"args":{"name":"GPU 0"}}\n'
           b'],"traceName":"rank1"}\n')
TRACE_BARE = b'[{"ph":"B","name":"b","ts":5,"pid":2,"tid":2},{"ph":"E","ts":9,"pid":2,"tid":2}]'
TRACE_CUT = b'{"traceEvents":[{"ph":"X","name":"c","ts":1,"dur":1,"pid":1,"tid":1},{"ph":"X","na'
NOTES = b"not a trace: the run's notes\n"


def gz(data):
    return gzip.compress(data, compresslevel=9, mtime=0)


def tar_bytes(members, fmt=tarfile.USTAR_FORMAT):
    """A tar of (name, bytes) members, a name ending in '/' a directory;
    cut after its end-of-archive blocks (no padding to 10 KiB)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=fmt) as t:
        for name, data in members:
            ti = tarfile.TarInfo(name.rstrip("/"))
            ti.mtime = MTIME
            ti.uid = ti.gid = 1000
            ti.uname = ti.gname = "user"
            if name.endswith("/"):
                ti.type = tarfile.DIRTYPE
                ti.mode = 0o755
                t.addfile(ti)
            else:
                ti.mode = 0o644
                ti.size = len(data)
                t.addfile(ti, io.BytesIO(data))
        end = t.offset + 1024  # the two zero blocks that end the archive
    return buf.getvalue()[:end]


def zip_bytes(members, method):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for name, data in members:
            zi = zipfile.ZipInfo(name, date_time=(2023, 11, 14, 22, 13, 20))
            zi.external_attr = (0o40755 << 16 | 0x10) if name.endswith("/") else (0o100644 << 16)
            zi.compress_type = zipfile.ZIP_STORED if name.endswith("/") else method
            z.writestr(zi, data)
    return buf.getvalue()


# ---- libarchive's writer, for the formats Python does not write ----

class LibArchive:
    AE_IFREG, AE_IFDIR = 0o100000, 0o040000

    def __init__(self):
        path = ctypes.util.find_library("archive")
        if not path:
            raise OSError("libarchive not found")
        la = ctypes.CDLL(path)
        la.archive_write_new.restype = ctypes.c_void_p
        la.archive_entry_new.restype = ctypes.c_void_p
        for f in ("archive_write_set_format_7zip", "archive_write_set_format_cpio_newc",
                  "archive_write_add_filter_none", "archive_write_close", "archive_write_free"):
            getattr(la, f).argtypes = [ctypes.c_void_p]
        la.archive_write_set_bytes_per_block.argtypes = [ctypes.c_void_p, ctypes.c_int]
        la.archive_write_set_format_option.argtypes = [ctypes.c_void_p, ctypes.c_char_p,
                                                       ctypes.c_char_p, ctypes.c_char_p]
        la.archive_write_open_memory.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t,
                                                 ctypes.POINTER(ctypes.c_size_t)]
        la.archive_write_header.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
        la.archive_write_data.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t]
        la.archive_write_data.restype = ctypes.c_ssize_t
        la.archive_error_string.argtypes = [ctypes.c_void_p]
        la.archive_error_string.restype = ctypes.c_char_p
        la.archive_entry_set_pathname.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
        la.archive_entry_set_size.argtypes = [ctypes.c_void_p, ctypes.c_int64]
        la.archive_entry_set_filetype.argtypes = [ctypes.c_void_p, ctypes.c_uint]
        la.archive_entry_set_perm.argtypes = [ctypes.c_void_p, ctypes.c_uint]
        la.archive_entry_set_mtime.argtypes = [ctypes.c_void_p, ctypes.c_int64, ctypes.c_long]
        la.archive_entry_set_ino.argtypes = [ctypes.c_void_p, ctypes.c_int64]
        la.archive_entry_free.argtypes = [ctypes.c_void_p]
        self.la = la

    def write(self, fmt, members, options=()):
        la = self.la
        a = la.archive_write_new()
        getattr(la, "archive_write_set_format_" + fmt)(a)
        la.archive_write_add_filter_none(a)
        la.archive_write_set_bytes_per_block(a, 0)  # no padding to blocks
        for mod, opt, val in options:
            la.archive_write_set_format_option(a, mod, opt, val)
        cap = 1 << 20
        mem = ctypes.create_string_buffer(cap)
        used = ctypes.c_size_t(0)

        def ok(rc, what):
            if rc < 0:
                raise OSError("libarchive %s: %s" % (what, la.archive_error_string(a)))

        ok(la.archive_write_open_memory(a, mem, cap, ctypes.byref(used)), "open")
        for ino, (name, data) in enumerate(members, 1):
            e = la.archive_entry_new()
            la.archive_entry_set_pathname(e, name.rstrip("/").encode())
            is_dir = name.endswith("/")
            la.archive_entry_set_filetype(e, self.AE_IFDIR if is_dir else self.AE_IFREG)
            la.archive_entry_set_perm(e, 0o755 if is_dir else 0o644)
            la.archive_entry_set_size(e, 0 if is_dir else len(data))
            la.archive_entry_set_mtime(e, MTIME, 0)
            la.archive_entry_set_ino(e, ino)
            ok(la.archive_write_header(a, e), "header")
            if not is_dir and data:
                ok(la.archive_write_data(a, data, len(data)), "data")
            la.archive_entry_free(e)
        ok(la.archive_write_close(a), "close")
        la.archive_write_free(a)
        return mem.raw[:used.value]


def main():
    os.makedirs(OUT, exist_ok=True)
    with open(os.path.join(HERE, "corpus", "tkb", "seed-raw.tkb"), "rb") as f:
        tkb = f.read()
    two = [("run/", b""), ("run/rank0/trace.json", TRACE_A), ("run/rank1/trace.json", TRACE_B),
           ("run/notes.txt", NOTES)]
    seeds = {
        "tar-ustar.tar": tar_bytes(two),
        "tar-pax-gz.tar.gz": gz(tar_bytes([("logs/a trace with a long name that needs a pax header "
                                             "to be stored at all in a tar archive/" + "x" * 40
                                             + ".json", TRACE_A), ("README", NOTES)],
                                           fmt=tarfile.PAX_FORMAT)),
        "tar-gz-member.tar.gz": gz(tar_bytes([("rank0.json.gz", gz(TRACE_A)), ("rank1.json", TRACE_BARE),
                                              ("log.txt", NOTES)])),
        "tar-tkb.tar": tar_bytes([("r0/trace.tkb", tkb), ("r1/trace.json", TRACE_CUT)]),
        "tar-xz.tar.xz": lzma.compress(tar_bytes(two), format=lzma.FORMAT_XZ, check=lzma.CHECK_CRC64),
        "tar-bz2.tar.bz2": bz2.compress(tar_bytes([("t.json", TRACE_B), ("t.txt", NOTES)]), 9),
        "zip-stored.zip": zip_bytes(two, zipfile.ZIP_STORED),
        "zip-deflated.zip": zip_bytes([("rank0/trace.json", TRACE_A), ("rank1/trace.json.gz", gz(TRACE_B)),
                                       ("notes.txt", NOTES)], zipfile.ZIP_DEFLATED),
        # a member named as a trace that holds an archive: not read, with an error
        "zip-nested.zip": zip_bytes([("outer.json", TRACE_A),
                                     ("inner.json", tar_bytes([("x.json", TRACE_A)]))], zipfile.ZIP_STORED),
        # a compressed single trace: libarchive's "raw" format
        "raw-xz.json.xz": lzma.compress(TRACE_B, format=lzma.FORMAT_XZ),
        "raw-bz2.json.bz2": bz2.compress(TRACE_B, 9),
        # one line of JSON: libarchive's mtree format would take it for an archive;
        # tracekit leaves mtree out, so it reads as the trace it is
        "bz2-oneline-mtree.json.bz2": bz2.compress(TRACE_A, 9),
    }
    # damaged archives, for the error paths: a member whose data fails its
    # CRC, a tar header that fails its checksum (libarchive skips it with
    # ARCHIVE_RETRY), and gzip followed by bytes that are not gzip
    bad_crc = bytearray(zip_bytes([("a.json", TRACE_A), ("b.json", TRACE_BARE)], zipfile.ZIP_STORED))
    at = bad_crc.find(b'"traceEvents"')
    bad_crc[at + 1] ^= 0x20
    seeds["damaged-crc.zip"] = bytes(bad_crc)
    bad_hdr = bytearray(tar_bytes([("a.json", TRACE_A), ("b.json", TRACE_BARE), ("c.json", TRACE_A)]))
    bad_hdr[1024 + 100] ^= 1  # the mode field of b.json's header
    seeds["damaged-header.tar"] = bytes(bad_hdr)
    seeds["damaged-trailing.tar.gz"] = gz(tar_bytes([("a.json", TRACE_A)])) + b"not gzip"
    # a .tar.gz whose gzip stream is cut: at a member's end (what is left
    # looks like a whole tar) and inside the gzip trailer
    whole = gz(tar_bytes(two))
    inner = tar_bytes(two)
    boundary = inner.find(b"run/rank1/trace.json")  # the second member's header
    seeds["damaged-gzip-cut-member.tar.gz"] = gz(inner)[:len(gz(inner[:boundary])) - 8]
    seeds["damaged-gzip-cut-trailer.tar.gz"] = whole[:-4]
    # an archive with no trace: nothing is listed
    seeds["no-trace.tar"] = tar_bytes([("logs/", b""), ("logs/run.log", NOTES)])
    try:
        la = LibArchive()
        seeds["sevenzip.7z"] = la.write("7zip", two)
        seeds["sevenzip-stored.7z"] = la.write("7zip", [("a.json", TRACE_A), ("b.txt", NOTES)],
                                               [(b"7zip", b"compression", b"store")])
        seeds["cpio-newc.cpio"] = la.write("cpio_newc", [("rank0.json", TRACE_A), ("notes", NOTES)])
    except OSError as e:
        print("make_archive_seeds: no 7z or cpio seeds: %s" % e, file=sys.stderr)
    for name, data in sorted(seeds.items()):
        with open(os.path.join(OUT, name), "wb") as f:
            f.write(data)
        print("%-24s %6d bytes" % (name, len(data)))


if __name__ == "__main__":
    main()
