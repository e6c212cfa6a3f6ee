#!/usr/bin/env python3
"""pftrace_check.py: check the semantics of a Perfetto protobuf trace (.pftrace).

usage: pftrace_check.py FILE [--summary]

Decodes the protobuf wire format itself (no protobuf library) and checks what
protoc's syntax check cannot see: sequences and their interned data, track
descriptors and the tracks events use, counters, slices that balance and nest
on every track, flows with both ends. Field numbers are those of Perfetto's
perfetto_trace.proto and are quoted beside each use below.

Exit status 0: the file is good. 1: one line per problem (at most 20, then a
count) on standard output (standard error with --summary). Warnings (a BEGIN
or INSTANT without a name, ...) are printed on standard error and do not fail.
2: usage error or unreadable file.

--summary prints one JSON object on standard output: the counts of packets,
track descriptors, slices (BEGIN events), instants, counters, flows (flow ids
started), terminated flows, sequences, interned entries of each kind; the
root track's process_ordering / thread_ordering; `processes`: the process
tracks in sibling_order_rank order (stable, an absent rank counting as 0, as
the proto says), each {uuid, pid, name, rank}; `tops`: the other tracks
under the root (named tracks of string pids, "rank 3 Spans"), in the same
order, each {uuid, name, rank}; `threads`: for each process
uuid (a string, as JSON keys are) its thread tracks in sibling_order_rank
order, each {uuid, tid, name, rank}.
"""
import gzip
import json
import sys

MAX_PRINTED = 20

# wire types
VARINT, I64, LEN, SGROUP, EGROUP, I32 = 0, 1, 2, 3, 4, 5

# TrackEvent.Type (TrackEvent field 9)
SLICE_BEGIN, SLICE_END, INSTANT, COUNTER = 1, 2, 3, 4
TYPE_NAMES = {0: "TYPE_UNSPECIFIED", 1: "SLICE_BEGIN", 2: "SLICE_END", 3: "INSTANT", 4: "COUNTER"}

# TracePacket.sequence_flags (TracePacket field 13)
SEQ_INCREMENTAL_STATE_CLEARED = 1
SEQ_NEEDS_INCREMENTAL_STATE = 2

# InternedData (TracePacket field 12): field number -> kind. Every entry
# message has its iid at field 1; the four string kinds hold their string at
# field 2 (EventCategory/EventName/DebugAnnotationName.name 2,
# InternedString.str 2).
INTERNED_KINDS = {
    1: "event_categories",                    # EventCategory {iid 1, name 2}
    2: "event_names",                         # EventName {iid 1, name 2}
    3: "debug_annotation_names",              # DebugAnnotationName {iid 1, name 2}
    29: "debug_annotation_string_values",     # InternedString {iid 1, str 2}
    27: "debug_annotation_value_type_names",  # DebugAnnotationValueTypeName {iid 1, name 2}
    43: "correlation_id_str",                 # InternedString {iid 1, str 2}
    4: "source_locations",                    # SourceLocation {iid 1, ...}
}
STRING_KINDS = {1, 2, 3, 29, 27, 43}


class Malformed(Exception):
    pass


def read_varint(buf, i, end):
    """(value, next index) of the varint at buf[i]."""
    b = buf[i] if i < end else None
    if b is None:
        raise Malformed("truncated varint")
    if b < 0x80:
        return b, i + 1
    result = b & 0x7F
    shift = 7
    i += 1
    while True:
        if i >= end:
            raise Malformed("truncated varint")
        b = buf[i]
        i += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            break
        shift += 7
        if shift >= 70:
            raise Malformed("varint longer than 10 bytes")
    return result & 0xFFFFFFFFFFFFFFFF, i


def fields(buf, start, end):
    """Yields (field number, wire type, value, offset of the value): an int
    for VARINT, I64 and I32 (the raw little-endian bits), (start, end) of the
    bytes for LEN. Groups (wire types 3/4) and numbers 0 are malformed."""
    i = start
    while i < end:
        key, i = read_varint(buf, i, end)
        num, wt = key >> 3, key & 7
        if num == 0:
            raise Malformed("field number 0 at byte %d" % i)
        if wt == VARINT:
            v, j = read_varint(buf, i, end)
        elif wt == LEN:
            n, j = read_varint(buf, i, end)
            if j + n > end:
                raise Malformed("field %d: length %d runs past the end of its message (byte %d)" % (num, n, j))
            v = (j, j + n)
            j += n
        elif wt == I64:
            if i + 8 > end:
                raise Malformed("field %d: truncated fixed64" % num)
            v, j = int.from_bytes(buf[i:i + 8], "little"), i + 8
        elif wt == I32:
            if i + 4 > end:
                raise Malformed("field %d: truncated fixed32" % num)
            v, j = int.from_bytes(buf[i:i + 4], "little"), i + 4
        else:
            raise Malformed("field %d: wire type %d (groups are not used by Perfetto's trace)" % (num, wt))
        yield num, wt, v, i
        i = j


def signed64(v):
    return v - (1 << 64) if v >= 1 << 63 else v


def int32(v):
    v &= 0xFFFFFFFF
    return v - (1 << 32) if v >= 1 << 31 else v


def double(bits):
    import struct
    return struct.unpack("<d", bits.to_bytes(8, "little"))[0]


class Checker:
    def __init__(self, buf):
        self.buf = buf
        self.problems = []
        self.warnings = []
        self.where = "file"
        self.counts = dict(packets=0, track_descriptors=0, slices=0, instants=0, counters=0,
                           slice_ends=0, flows=0, terminated_flows=0, sequences=0,
                           track_events=0, chrome_metadata=0, chrome_trace_events=0,
                           clock_snapshots=0)
        self.interned_counts = {k: 0 for k in INTERNED_KINDS.values()}
        self.seq = {}          # sequence id -> state (None before the first clear)
        self.seen_seq = set()
        self.clocks = {}       # sequence id -> clock id -> sequence-scoped clock
        self.tracks = {}       # uuid -> descriptor dict
        self.track_order = []  # uuids in order of first declaration
        self.slices = {}       # track key -> [(ts, order, type, where)]
        self.flow_events = []  # (ts, order, flow_ids, terminating_ids, where)
        self.order = 0

    # ---- reporting ----
    def problem(self, msg):
        self.problems.append("%s: %s" % (self.where, msg))

    def warn(self, msg):
        self.warnings.append("%s: %s" % (self.where, msg))

    def string(self, span):
        s, e = span
        try:
            return bytes(self.buf[s:e]).decode("utf-8")
        except UnicodeDecodeError:
            self.problem("a string field is not valid UTF-8: %r" % bytes(self.buf[s:e])[:60])
            return bytes(self.buf[s:e]).decode("utf-8", "replace")

    def expect(self, num, wt, want, what):
        if wt != want:
            self.problem("%s (field %d) has wire type %d, want %d" % (what, num, wt, want))
            return False
        return True

    def repeated_varints(self, num, wt, v, what):
        """The values of one occurrence of a repeated varint field, packed or not."""
        if wt == VARINT:
            return [v]
        if wt == LEN:
            out, i, end = [], v[0], v[1]
            while i < end:
                x, i = read_varint(self.buf, i, end)
                out.append(x)
            return out
        self.problem("%s (field %d) has wire type %d, want varint or packed" % (what, num, wt))
        return []

    def repeated_fixed64(self, num, wt, v, what):
        """The values of one occurrence of a repeated fixed64/double field, packed or not."""
        if wt == I64:
            return [v]
        if wt == LEN:
            s, e = v
            if (e - s) % 8:
                self.problem("%s (field %d): packed length %d is not a multiple of 8" % (what, num, e - s))
                return []
            return [int.from_bytes(self.buf[i:i + 8], "little") for i in range(s, e, 8)]
        self.problem("%s (field %d) has wire type %d, want fixed64 (wire type 1) or packed"
                     % (what, num, wt))
        return []

    # ---- the file ----
    def run(self):
        buf = self.buf
        try:
            # Trace: repeated TracePacket packet = 1 (LEN)
            for num, wt, v, off in fields(buf, 0, len(buf)):
                if num != 1:
                    self.where = "byte %d" % off
                    self.warn("top-level field %d is not a packet (Trace.packet is field 1)" % num)
                    continue
                self.counts["packets"] += 1
                self.where = "packet %d (byte %d)" % (self.counts["packets"], off)
                if not self.expect(num, wt, LEN, "Trace.packet"):
                    continue
                try:
                    self.packet(*v)
                except Malformed as e:
                    self.problem("malformed packet: %s" % e)
        except Malformed as e:
            self.where = "file"
            self.problem("malformed Trace: %s" % e)
        self.where = "end of file"
        self.finish()

    def packet(self, start, end):
        buf = self.buf
        ts = None
        clock_id = None
        snapshots = []
        seq_id = 0
        flags = 0
        cleared_legacy = False
        te = []        # TrackEvent spans (a repeated occurrence merges)
        interned = []
        defaults = []
        descriptors = []
        chrome = []
        for num, wt, v, off in fields(buf, start, end):
            if num == 8:       # TracePacket.timestamp = 8 (uint64)
                if self.expect(num, wt, VARINT, "timestamp"):
                    ts = v
            elif num == 58:    # TracePacket.timestamp_clock_id = 58 (uint32)
                if self.expect(num, wt, VARINT, "timestamp_clock_id"):
                    clock_id = v
            elif num == 6:     # TracePacket.clock_snapshot = 6
                if self.expect(num, wt, LEN, "clock_snapshot"):
                    snapshots.append(v)
            elif num == 10:    # TracePacket.trusted_packet_sequence_id = 10 (uint32)
                if self.expect(num, wt, VARINT, "trusted_packet_sequence_id"):
                    seq_id = v & 0xFFFFFFFF
            elif num == 13:    # TracePacket.sequence_flags = 13 (uint32)
                if self.expect(num, wt, VARINT, "sequence_flags"):
                    flags = v
            elif num == 41:    # TracePacket.incremental_state_cleared = 41 (bool, the older form of flag 1)
                if self.expect(num, wt, VARINT, "incremental_state_cleared"):
                    cleared_legacy = v != 0
            elif num == 11:    # TracePacket.track_event = 11
                if self.expect(num, wt, LEN, "track_event"):
                    te.append(v)
            elif num == 12:    # TracePacket.interned_data = 12
                if self.expect(num, wt, LEN, "interned_data"):
                    interned.append(v)
            elif num == 59:    # TracePacket.trace_packet_defaults = 59
                if self.expect(num, wt, LEN, "trace_packet_defaults"):
                    defaults.append(v)
            elif num == 60:    # TracePacket.track_descriptor = 60
                if self.expect(num, wt, LEN, "track_descriptor"):
                    descriptors.append(v)
            elif num == 5:     # TracePacket.chrome_events = 5 (ChromeEventBundle)
                if self.expect(num, wt, LEN, "chrome_events"):
                    chrome.append(v)

        if (te or interned or defaults) and seq_id == 0:
            self.problem("a packet with %s has no trusted_packet_sequence_id (field 10)"
                         % ("track_event" if te else "interned_data" if interned else "trace_packet_defaults"))
        if seq_id:
            self.seen_seq.add(seq_id)
        state = self.seq.get(seq_id)
        if flags & SEQ_INCREMENTAL_STATE_CLEARED or cleared_legacy:
            state = self.seq[seq_id] = {"interned": {k: {} for k in INTERNED_KINDS}, "defaults": None}

        for s, e in interned:
            if state is None:
                self.problem("interned_data (field 12) on sequence %d before the first packet with "
                             "SEQ_INCREMENTAL_STATE_CLEARED (sequence_flags 13 bit 1)" % seq_id)
                # keep the entries, so that one mistake is one line
                state = self.seq[seq_id] = {"interned": {k: {} for k in INTERNED_KINDS},
                                            "defaults": None, "invalid": True}
            self.interned_data(s, e, state)

        for s, e in defaults:
            d = self.packet_defaults(s, e)
            if state is None:
                state = self.seq[seq_id] = {"interned": {k: {} for k in INTERNED_KINDS},
                                            "defaults": None, "invalid": True}
            state["defaults"] = d

        for s, e in snapshots:
            self.clock_snapshot(s, e, seq_id)

        if ts is not None:
            if clock_id is None and state is not None and state["defaults"] is not None:
                clock_id = state["defaults"]["clock_id"]
            if clock_id is not None and 64 <= clock_id < 128:
                ts = self.sequence_time(seq_id, clock_id, ts)

        for s, e in descriptors:
            self.track_descriptor(s, e)

        for s, e in chrome:
            self.chrome_events(s, e)

        if te:
            self.track_event(te, ts, seq_id, flags, state)

    # ---- interned data ----
    def interned_data(self, start, end, state):
        for num, wt, v, off in fields(self.buf, start, end):
            kind = INTERNED_KINDS.get(num)
            if kind is None:
                continue
            if not self.expect(num, wt, LEN, "InternedData." + kind):
                continue
            iid, value = None, []
            for fn, fwt, fv, _ in fields(self.buf, *v):
                if fn == 1:    # iid = 1 in every interned entry
                    if self.expect(fn, fwt, VARINT, kind + ".iid"):
                        iid = fv
                elif num in STRING_KINDS and fn == 2:  # name = 2 / str = 2
                    if self.expect(fn, fwt, LEN, kind + ".name"):
                        value.append((fn, bytes(self.buf[fv[0]:fv[1]])))
                else:
                    value.append((fn, bytes(self.buf[fv[0]:fv[1]]) if fwt == LEN else fv))
            self.interned_counts[kind] += 1
            if iid is None:
                self.problem("an InternedData.%s entry (field %d) has no iid" % (kind, num))
                continue
            table = state["interned"][num]
            value = tuple(value)
            old = table.get(iid)
            if old is not None and old != value:
                self.problem("InternedData.%s iid %d defined twice in one incremental state, "
                             "with different values (%s, then %s)"
                             % (kind, iid, shown(old), shown(value)))
            table[iid] = value

    # ---- clocks ----
    def clock_snapshot(self, start, end, seq_id):
        """ClockSnapshot.clocks = 1: Clock {clock_id 1, timestamp 2, is_incremental 3,
        unit_multiplier_ns 4}. Clocks 64-127 are scoped to the sequence; they are
        related to the snapshot's BOOTTIME (6), else its first built-in clock."""
        clocks = []
        for num, wt, v, off in fields(self.buf, start, end):
            if num != 1 or not self.expect(num, wt, LEN, "ClockSnapshot.clocks"):
                continue
            c = {1: 0, 2: 0, 3: 0, 4: 0}
            for fn, fwt, fv, _ in fields(self.buf, *v):
                if fn in c and self.expect(fn, fwt, VARINT, "ClockSnapshot.Clock field %d" % fn):
                    c[fn] = fv
            clocks.append(c)
        builtin = [c for c in clocks if 1 <= c[1] < 64]
        ref = next((c for c in builtin if c[1] == 6), builtin[0] if builtin else None)
        for c in clocks:
            if not 64 <= c[1] < 128:
                continue
            if ref is None:
                self.problem("clock snapshot defines sequence clock %d without a built-in clock "
                             "to relate it to" % c[1])
            mult = c[4] or 1
            ns = c[2] * mult
            self.clocks.setdefault(seq_id, {})[c[1]] = {
                "incremental": bool(c[3]), "mult": mult, "last": ns, "ref_seq": ns,
                "ref_trace": (ref[2] * (ref[4] or 1)) if ref else ns}
        self.counts["clock_snapshots"] += 1

    def sequence_time(self, seq_id, clock_id, v):
        c = self.clocks.get(seq_id, {}).get(clock_id)
        if c is None:
            self.problem("a timestamp on clock %d, which no clock snapshot of sequence %d defines "
                         "before it" % (clock_id, seq_id))
            return v
        ns = v * c["mult"]
        if c["incremental"]:
            ns += c["last"]
            c["last"] = ns
        return ns - c["ref_seq"] + c["ref_trace"]

    def packet_defaults(self, start, end):
        """TracePacketDefaults: timestamp_clock_id = 58; track_event_defaults = 11:
        TrackEventDefaults {track_uuid 11, extra_counter_track_uuids 31,
        extra_double_counter_track_uuids 45}."""
        d = {"track_uuid": None, 31: [], 45: [], "clock_id": None}
        for num, wt, v, off in fields(self.buf, start, end):
            if num == 58 and self.expect(num, wt, VARINT, "TracePacketDefaults.timestamp_clock_id"):
                d["clock_id"] = v
                continue
            if num != 11 or not self.expect(num, wt, LEN, "TracePacketDefaults.track_event_defaults"):
                continue
            for fn, fwt, fv, _ in fields(self.buf, *v):
                if fn == 11 and self.expect(fn, fwt, VARINT, "TrackEventDefaults.track_uuid"):
                    d["track_uuid"] = fv
                elif fn in (31, 45):
                    d[fn] += self.repeated_varints(fn, fwt, fv, "TrackEventDefaults extra counter uuids")
        return d

    # ---- tracks ----
    def track_descriptor(self, start, end):
        self.counts["track_descriptors"] += 1
        d = {"uuid": 0, "parent": None, "name": None, "counter": False, "process": None,
             "thread": None, "rank": None, "process_ordering": None, "thread_ordering": None,
             "child_ordering": None}
        for num, wt, v, off in fields(self.buf, start, end):
            if num == 1 and self.expect(num, wt, VARINT, "TrackDescriptor.uuid"):
                d["uuid"] = v
            elif num == 5 and self.expect(num, wt, VARINT, "TrackDescriptor.parent_uuid"):
                d["parent"] = v
            elif num in (2, 10) and self.expect(num, wt, LEN, "TrackDescriptor.name"):  # name 2, static_name 10
                d["name"] = self.string(v)
            elif num == 8 and self.expect(num, wt, LEN, "TrackDescriptor.counter"):
                d["counter"] = True
            elif num == 3 and self.expect(num, wt, LEN, "TrackDescriptor.process"):
                p = d["process"] = {"pid": None, "name": None}
                for fn, fwt, fv, _ in fields(self.buf, *v):
                    if fn == 1 and self.expect(fn, fwt, VARINT, "ProcessDescriptor.pid"):
                        p["pid"] = int32(fv)
                    elif fn == 6 and self.expect(fn, fwt, LEN, "ProcessDescriptor.process_name"):
                        p["name"] = self.string(fv)
            elif num == 4 and self.expect(num, wt, LEN, "TrackDescriptor.thread"):
                t = d["thread"] = {"pid": None, "tid": None, "name": None}
                for fn, fwt, fv, _ in fields(self.buf, *v):
                    if fn == 1 and self.expect(fn, fwt, VARINT, "ThreadDescriptor.pid"):
                        t["pid"] = int32(fv)
                    elif fn == 2 and self.expect(fn, fwt, VARINT, "ThreadDescriptor.tid"):
                        t["tid"] = signed64(fv)
                    elif fn == 5 and self.expect(fn, fwt, LEN, "ThreadDescriptor.thread_name"):
                        t["name"] = self.string(fv)
            elif num == 12 and self.expect(num, wt, VARINT, "TrackDescriptor.sibling_order_rank"):
                d["rank"] = int32(v)
            elif num == 11 and self.expect(num, wt, VARINT, "TrackDescriptor.child_ordering"):
                d["child_ordering"] = v
            elif num == 19 and self.expect(num, wt, VARINT, "TrackDescriptor.process_ordering"):
                d["process_ordering"] = v
            elif num == 20 and self.expect(num, wt, VARINT, "TrackDescriptor.thread_ordering"):
                d["thread_ordering"] = v
        if d["parent"] is not None and d["parent"] not in self.tracks:
            self.problem("track %d: parent_uuid (field 5) %d is not declared by an earlier "
                         "TrackDescriptor" % (d["uuid"], d["parent"]))
        if d["process"] and d["thread"]:
            self.problem("track %d is both a process (field 3) and a thread (field 4) track" % d["uuid"])
        if d["process"] is not None and d["process"]["pid"] is None:
            self.problem("process track %d: ProcessDescriptor without a pid (field 1)" % d["uuid"])
        if d["thread"] is not None and (d["thread"]["pid"] is None or d["thread"]["tid"] is None):
            self.problem("thread track %d: ThreadDescriptor without pid (1) and tid (2)" % d["uuid"])
        old = self.tracks.get(d["uuid"])
        if old is not None:
            if old["counter"] != d["counter"]:
                self.problem("track %d is declared again, %s a counter (field 8) this time"
                             % (d["uuid"], "as" if d["counter"] else "not as"))
            if bool(old["process"]) != bool(d["process"]) or bool(old["thread"]) != bool(d["thread"]):
                self.problem("track %d is declared again as another kind of track (process/thread)"
                             % d["uuid"])
        else:
            self.track_order.append(d["uuid"])
        self.tracks[d["uuid"]] = d

    def check_track(self, uuid, what):
        """The descriptor of a track an event uses (None, reported, when undeclared)."""
        d = self.tracks.get(uuid)
        if d is None:
            self.problem("%s uses track_uuid %d, not declared by an earlier TrackDescriptor" % (what, uuid))
        return d

    # ---- track events ----
    def need_iid(self, state, kind_num, iid, what, used):
        used[0] = True
        if state is None:
            self.problem("%s: %s iid %d used on a sequence without incremental state "
                         "(no SEQ_INCREMENTAL_STATE_CLEARED packet before it)"
                         % (what, INTERNED_KINDS[kind_num], iid))
            return
        if iid not in state["interned"][kind_num]:
            self.problem("%s: %s iid %d is not defined in the sequence's incremental state"
                         % (what, INTERNED_KINDS[kind_num], iid))

    def annotation(self, start, end, state, used, depth=0):
        if depth > 64:
            self.problem("DebugAnnotation nested more than 64 deep")
            return
        for num, wt, v, off in fields(self.buf, start, end):
            if num == 1 and self.expect(num, wt, VARINT, "DebugAnnotation.name_iid"):
                self.need_iid(state, 3, v, "DebugAnnotation.name_iid (1)", used)
            elif num == 17 and self.expect(num, wt, VARINT, "DebugAnnotation.string_value_iid"):
                self.need_iid(state, 29, v, "DebugAnnotation.string_value_iid (17)", used)
            elif num == 13 and self.expect(num, wt, VARINT, "DebugAnnotation.proto_type_name_iid"):
                self.need_iid(state, 27, v, "DebugAnnotation.proto_type_name_iid (13)", used)
            elif num in (11, 12) and self.expect(num, wt, LEN, "DebugAnnotation dict_entries/array_values"):
                self.annotation(v[0], v[1], state, used, depth + 1)
            elif num in (6, 9, 10, 16) and self.expect(num, wt, LEN, "DebugAnnotation string"):
                self.string(v)

    def track_event(self, spans, ts, seq_id, flags, state):
        self.counts["track_events"] += 1
        self.order += 1
        order = self.order
        ev_type = 0
        track = None
        named = False
        used = [False]
        has_value = False
        extra_uuids = {31: None, 45: None}
        extra_values = {12: 0, 46: 0}
        flow_ids, term_ids = [], []
        for start, end in spans:
            for num, wt, v, off in fields(self.buf, start, end):
                if num == 9 and self.expect(num, wt, VARINT, "TrackEvent.type"):
                    ev_type = v
                elif num == 11 and self.expect(num, wt, VARINT, "TrackEvent.track_uuid"):
                    track = v
                elif num == 10 and self.expect(num, wt, VARINT, "TrackEvent.name_iid"):
                    named = True
                    self.need_iid(state, 2, v, "TrackEvent.name_iid (10)", used)
                elif num == 23 and self.expect(num, wt, LEN, "TrackEvent.name"):
                    named = True
                    self.string(v)
                elif num == 3:  # category_iids = 3, repeated, maybe packed
                    for iid in self.repeated_varints(num, wt, v, "TrackEvent.category_iids"):
                        self.need_iid(state, 1, iid, "TrackEvent.category_iids (3)", used)
                elif num == 22 and self.expect(num, wt, LEN, "TrackEvent.categories"):
                    self.string(v)
                elif num == 4 and self.expect(num, wt, LEN, "TrackEvent.debug_annotations"):
                    self.annotation(v[0], v[1], state, used)
                elif num == 54 and self.expect(num, wt, VARINT, "TrackEvent.correlation_id_str_iid"):
                    self.need_iid(state, 43, v, "TrackEvent.correlation_id_str_iid (54)", used)
                elif num == 34 and self.expect(num, wt, VARINT, "TrackEvent.source_location_iid"):
                    self.need_iid(state, 4, v, "TrackEvent.source_location_iid (34)", used)
                elif num == 30 and self.expect(num, wt, VARINT, "TrackEvent.counter_value"):
                    has_value = True
                elif num == 44 and self.expect(num, wt, I64, "TrackEvent.double_counter_value"):
                    has_value = True
                elif num in (31, 45):  # extra_counter_track_uuids 31, extra_double_counter_track_uuids 45
                    got = self.repeated_varints(num, wt, v, "TrackEvent extra counter track uuids")
                    extra_uuids[num] = (extra_uuids[num] or []) + got
                elif num == 12:  # extra_counter_values = 12 (repeated int64)
                    extra_values[12] += len(self.repeated_varints(num, wt, v, "TrackEvent.extra_counter_values"))
                elif num == 46:  # extra_double_counter_values = 46 (repeated double)
                    extra_values[46] += len(self.repeated_fixed64(num, wt, v, "TrackEvent.extra_double_counter_values"))
                elif num == 47:  # flow_ids = 47 (repeated fixed64)
                    flow_ids += self.repeated_fixed64(num, wt, v, "TrackEvent.flow_ids")
                elif num == 48:  # terminating_flow_ids = 48 (repeated fixed64)
                    term_ids += self.repeated_fixed64(num, wt, v, "TrackEvent.terminating_flow_ids")
                elif num == 36:  # flow_ids_old = 36 (deprecated repeated uint64, same meaning)
                    flow_ids += self.repeated_varints(num, wt, v, "TrackEvent.flow_ids_old")
                elif num == 42:  # terminating_flow_ids_old = 42 (deprecated, same meaning)
                    term_ids += self.repeated_varints(num, wt, v, "TrackEvent.terminating_flow_ids_old")

        what = "%s event" % TYPE_NAMES.get(ev_type, "type %d" % ev_type)
        if ts is None:
            self.problem("a TrackEvent (%s) in a packet without a timestamp (field 8)" % what)
        if used[0] and not flags & SEQ_NEEDS_INCREMENTAL_STATE:
            self.problem("a packet that uses interned data lacks SEQ_NEEDS_INCREMENTAL_STATE "
                         "(sequence_flags 13 bit 2)")
        if state is not None and state.get("invalid") and used[0]:
            pass  # already reported where the interned data came
        defaults = state["defaults"] if state else None
        if track is None and defaults and defaults["track_uuid"] is not None:
            track = defaults["track_uuid"]
        if ev_type not in (SLICE_BEGIN, SLICE_END, INSTANT, COUNTER):
            self.problem("TrackEvent type (field 9) is %s: want SLICE_BEGIN, SLICE_END, INSTANT or COUNTER"
                         % TYPE_NAMES.get(ev_type, str(ev_type)))
        if ev_type in (SLICE_BEGIN, INSTANT) and not named:
            self.warn("%s without name (23) or name_iid (10)" % what)
        desc = None
        if track is not None:
            desc = self.check_track(track, what)
        if ev_type == COUNTER:
            self.counts["counters"] += 1
            if track is None:
                self.problem("a COUNTER event without a track_uuid (field 11)")
            elif desc is not None and not desc["counter"]:
                self.problem("a COUNTER event on track %d, whose descriptor has no counter (field 8)" % track)
            if not has_value:
                self.warn("a COUNTER event with neither counter_value (30) nor double_counter_value (44)")
        elif ev_type in (SLICE_BEGIN, SLICE_END, INSTANT):
            if desc is not None and desc["counter"]:
                self.problem("%s on counter track %d" % (what, track))
            key = track if track is not None else ("default track of sequence", seq_id)
            if ev_type == INSTANT:
                self.counts["instants"] += 1
            else:
                self.counts["slices" if ev_type == SLICE_BEGIN else "slice_ends"] += 1
                self.slices.setdefault(key, []).append((ts or 0, order, ev_type, self.where))
        # extra counters: the event's uuids, else the sequence's defaults
        for unum, vnum, label in ((31, 12, "extra_counter"), (45, 46, "extra_double_counter")):
            uuids = extra_uuids[unum]
            if uuids is None and extra_values[vnum] and defaults:
                uuids = defaults[unum]
            uuids = uuids or []
            if len(uuids) != extra_values[vnum]:
                self.problem("%d %s_track_uuids (%d) but %d %s_values (%d)"
                             % (len(uuids), label, unum, extra_values[vnum], label, vnum))
            for u in uuids:
                d = self.check_track(u, "%s_track_uuids (%d)" % (label, unum))
                if d is not None and not d["counter"]:
                    self.problem("%s_track_uuids (%d) names track %d, whose descriptor has no counter "
                                 "(field 8)" % (label, unum, u))
        if flow_ids or term_ids:
            self.flow_events.append((ts or 0, order, flow_ids, term_ids, self.where))

    # ---- chrome events ----
    def chrome_events(self, start, end):
        for num, wt, v, off in fields(self.buf, start, end):
            if num == 1:     # ChromeEventBundle.trace_events = 1
                self.counts["chrome_trace_events"] += 1
            elif num == 2 and self.expect(num, wt, LEN, "ChromeEventBundle.metadata"):
                self.counts["chrome_metadata"] += 1
                name, values = None, 0
                for fn, fwt, fv, _ in fields(self.buf, *v):
                    if fn == 1 and self.expect(fn, fwt, LEN, "ChromeMetadata.name"):
                        name = self.string(fv)
                    elif fn in (2, 5) and self.expect(fn, fwt, LEN, "ChromeMetadata string/json value"):
                        values += 1
                        text = self.string(fv)
                        if fn == 5:  # json_value = 5 must be JSON
                            try:
                                json.loads(text, parse_constant=_no_constant)
                            except ValueError as e:
                                self.problem("ChromeMetadata %r: json_value (5) is not strict JSON: %s"
                                             % (name, e))
                    elif fn in (3, 4) and self.expect(fn, fwt, VARINT, "ChromeMetadata bool/int value"):
                        values += 1
                if name is None:
                    self.problem("a ChromeMetadata entry without a name (field 1)")
                if values != 1:
                    self.problem("ChromeMetadata %r has %d values (string 2, bool 3, int 4, json 5), want 1"
                                 % (name, values))

    # ---- after the last packet ----
    def finish(self):
        self.counts["sequences"] = len(self.seen_seq)
        # slices: per track, BEGIN/END sorted stably by (timestamp, file order)
        for key, evs in self.slices.items():
            evs.sort(key=lambda x: (x[0], x[1]))
            stack = []
            for ts, order, t, where in evs:
                if t == SLICE_BEGIN:
                    stack.append((ts, where))
                elif not stack:
                    self.problems.append("%s: SLICE_END at %d on track %s closes no open slice"
                                         % (where, ts, _track(key)))
                else:
                    bts, bwhere = stack.pop()
                    if ts < bts:  # cannot happen after the sort; kept as the stated rule
                        self.problems.append("%s: SLICE_END at %d before its BEGIN at %d" % (where, ts, bts))
            for ts, where in stack:
                self.problems.append("%s: SLICE_BEGIN at %d on track %s is never ended"
                                     % (where, ts, _track(key)))
        # flows in (timestamp, file order) order
        self.flow_events.sort(key=lambda x: (x[0], x[1]))
        open_flows = {}
        for ts, order, starts, ends, where in self.flow_events:
            for f in starts:
                if f not in open_flows:
                    self.counts["flows"] += 1
                    open_flows[f] = where
            for f in ends:
                if f in open_flows:
                    del open_flows[f]
                    self.counts["terminated_flows"] += 1
                else:
                    self.problems.append("%s: terminating_flow_ids (48) has %d, no open flow (started "
                                         "earlier in flow_ids 47)" % (where, f))
        for f, where in open_flows.items():
            self.problems.append("%s: flow %d is started and never terminated" % (where, f))

    def summary(self):
        root = self.tracks.get(0) or {}

        def rank_key(uuid):
            r = self.tracks[uuid]["rank"]
            return r if r is not None else 0

        procs = [u for u in self.track_order if self.tracks[u]["process"]]
        procs.sort(key=rank_key)
        by_pid = {}
        for u in procs:
            by_pid.setdefault(self.tracks[u]["process"]["pid"], u)
        threads = {}
        thr = [u for u in self.track_order if self.tracks[u]["thread"]]
        thr.sort(key=rank_key)
        for u in thr:
            d = self.tracks[u]
            owner = by_pid.get(d["thread"]["pid"])
            if owner is None and d["parent"] in self.tracks and self.tracks[d["parent"]]["process"]:
                owner = d["parent"]
            threads.setdefault(str(owner), []).append(
                {"uuid": u, "tid": d["thread"]["tid"], "name": d["thread"]["name"] or d["name"],
                 "rank": d["rank"]})
        out = dict(self.counts)
        out["interned"] = dict(self.interned_counts)
        out["problems"] = len(self.problems)
        out["warnings"] = len(self.warnings)
        out["process_ordering"] = root.get("process_ordering")
        out["thread_ordering"] = root.get("thread_ordering")
        out["processes"] = [{"uuid": u, "pid": self.tracks[u]["process"]["pid"],
                             "name": self.tracks[u]["process"]["name"] or self.tracks[u]["name"],
                             "rank": self.tracks[u]["rank"]} for u in procs]
        tops = [u for u in self.track_order if u != 0 and self.tracks[u]["parent"] in (None, 0) and
                not self.tracks[u]["process"] and not self.tracks[u]["thread"] and not self.tracks[u]["counter"]]
        tops.sort(key=rank_key)
        out["tops"] = [{"uuid": u, "name": self.tracks[u]["name"], "rank": self.tracks[u]["rank"]} for u in tops]
        out["threads"] = threads
        return out


def _track(key):
    return str(key) if not isinstance(key, tuple) else "%s %d" % key


def _no_constant(name):
    raise ValueError("not strict JSON: " + name)


def shown(value):
    if len(value) == 1 and isinstance(value[0][1], bytes):
        return repr(value[0][1].decode("utf-8", "replace"))[:80]
    return repr(value)[:80]


def main(argv):
    args = [a for a in argv[1:] if a != "--summary"]
    want_summary = "--summary" in argv[1:]
    if len(args) != 1 or args[0].startswith("-"):
        print("usage: pftrace_check.py FILE [--summary]", file=sys.stderr)
        return 2
    try:
        with open(args[0], "rb") as f:
            data = f.read()
    except OSError as e:
        print("pftrace_check: %s" % e, file=sys.stderr)
        return 2
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    c = Checker(memoryview(data))
    c.run()
    out = sys.stderr if want_summary else sys.stdout
    for w in c.warnings[:MAX_PRINTED]:
        print("warning: %s" % w, file=sys.stderr)
    if len(c.warnings) > MAX_PRINTED:
        print("warning: ... and %d more warnings" % (len(c.warnings) - MAX_PRINTED), file=sys.stderr)
    for p in c.problems[:MAX_PRINTED]:
        print(p, file=out)
    if len(c.problems) > MAX_PRINTED:
        print("... and %d more problems (%d in all)" % (len(c.problems) - MAX_PRINTED, len(c.problems)),
              file=out)
    if want_summary:
        print(json.dumps(c.summary()))
    return 1 if c.problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
