#!/usr/bin/env bash
# test_threads.sh: every tool gives the same output, byte for byte, the same messages and the same
# exit status with --threads 1 and --threads 8 (docs/threads.md): on generated traces of several
# MiB (so that the input is cut into many blocks) in three layouts, with strings that hold "},{"
# and "},\n{", gzip, damaged and cut; .tkb files (plain, compressed, cut, damaged); and on the largest
# real traces (and their .tkb) when they are there.
# usage: test_threads.sh TOOLS-DIR TESTS-DIR [REALTRACES-DIR]
set -u
BIN=${1:?usage: test_threads.sh TOOLS-DIR TESTS-DIR [REALTRACES-DIR]}
TESTS=${2:?usage: test_threads.sh TOOLS-DIR TESTS-DIR [REALTRACES-DIR]}
REAL=${3:-}
BIN=$(cd "$BIN" && pwd)
TESTS=$(cd "$TESTS" && pwd)
W=$(mktemp -d "${TMPDIR:-/tmp}/tkthreads-XXXXXX") || exit 1
trap '[ -n "${TK_KEEP:-}" ] || rm -rf "$W"' EXIT
cd "$W" || exit 1
. "$TESTS/cli/check.sh"

python3 "$TESTS/split_gen.py" min.json --steps 300 || exit 1
# the same events one per line as Kineto lays them out, and again with strings that a cut
# looking for "}" "," "{" takes for an event's end (raw newlines, which the reader takes)
python3 - min.json kineto.json fakes.json <<'PY' || exit 1
import json, sys
t = json.load(open(sys.argv[1]))
evs = t.pop("traceEvents")
def write(path, evs, fake):
    head = json.dumps(t)[:-1]
    with open(path, "w") as f:
        f.write(head + ',\n  "traceEvents": [\n  ')
        out = []
        for i, e in enumerate(evs):
            s = json.dumps(e)
            if fake and i % 7 == 0 and s.endswith("}}"):
                s = s[:-2] + ', "fake": "x},\\n{\\"ph\\": \\"X\\"},{y", "pad": "' + "z" * (i % 300) + '"}}'
                s = s.replace("\\n", "\n")
            out.append(s)
        f.write(",\n  ".join(out) + '\n  ],\n  "traceName": "t"\n}\n')
write(sys.argv[2], evs, False)
write(sys.argv[3], evs, True)
PY
size=$(stat -c %s kineto.json)
gzip -c kineto.json > kineto.json.gz
head -c $((size * 3 / 5)) kineto.json > cut.json
gzip -c fakes.json | head -c 400000 > cut.json.gz
python3 - kineto.json bad.json <<'PY' || exit 1
import sys
b = bytearray(open(sys.argv[1], "rb").read())
b[len(b) * 2 // 3] = ord("#")
open(sys.argv[2], "wb").write(b)
PY

# same TAG COMMAND...: the command with --threads 1 and with --threads 8 (OUT in its arguments
# is a file or directory of each run's own); status, stderr and every output file equal
same() {
	local tag=$1
	shift
	local t rc1 rc8 ok=1
	for t in 1 8; do
		rm -rf "o$t" && mkdir "o$t"
		local args=()
		for a in "$@"; do args+=("${a//OUT/o$t/out}"); done
		"${args[@]}" --threads "$t" >"o$t/stdout" 2>"o$t/stderr.raw"
		echo $? >"o$t/status"
		sed "s#o$t/#O/#g" "o$t/stderr.raw" >"o$t/stderr" && rm "o$t/stderr.raw"
	done
	if ! diff -r o1 o8 >/dev/null; then
		ok=0
		diff -r o1 o8 | head -5
	fi
	check "$tag: the same with --threads 1 and 8 (status $(cat o1/status))" [ "$ok" = 1 ]
}

# .tkb: the chunks' event records decoded on the threads; plain, compressed, cut and damaged
"$BIN/trace-convert" kineto.json -o kineto.tkb --threads 1 >/dev/null 2>&1
"$BIN/trace-convert" fakes.json -o fakes.tkb --threads 1 --compress >/dev/null 2>&1
size=$(stat -c %s kineto.tkb)
head -c $((size * 3 / 5)) kineto.tkb > cut.tkb
python3 - kineto.tkb bad.tkb <<'PY' || exit 1
import sys
b = bytearray(open(sys.argv[1], "rb").read())
b[len(b) * 2 // 3] ^= 0x5a
open(sys.argv[2], "wb").write(b)
PY

for in in min.json kineto.json fakes.json kineto.json.gz bad.json cut.json cut.json.gz kineto.tkb fakes.tkb cut.tkb bad.tkb; do
	same "convert $in to json" "$BIN/trace-convert" "$in" -o OUT.json
	same "convert $in to json.gz" "$BIN/trace-convert" "$in" -o OUT.json.gz
	same "convert $in to tkb" "$BIN/trace-convert" "$in" -o OUT.tkb
	same "stats $in" "$BIN/trace-stats" "$in" -t ops,kernels,memcpy,api,steps,launch,memory,collectives -f json -o OUT.json
	same "stats $in --steps 3-9" "$BIN/trace-stats" "$in" --steps 3-9
	same "split $in" "$BIN/trace-split" "$in" -o OUT --max-size 1M
	cp "$in" "r1_$in" && cp min.json r0_min.json
	same "merge $in" "$BIN/trace-merge" "r1_$in" r0_min.json --rank-from 'r([0-9])_' -o OUT.json
	same "diff $in" "$BIN/trace-diff" min.json "$in" -f json
done
# traces inside an archive: a member's reader parses on the threads as well
cp kineto.json.gz r1_kineto.json.gz && cp fakes.json r2_fakes.json
tar -cf both.tar kineto.json fakes.json bad.json && tar -czf both.tar.gz r1_kineto.json.gz r2_fakes.json
same "stats on every member of a .tar" "$BIN/trace-stats" both.tar -t ops,kernels -f json
same "stats on every member of a .tar.gz" "$BIN/trace-stats" both.tar.gz -t ops,kernels -f json
same "convert a member of a .tar" "$BIN/trace-convert" both.tar//fakes.json -o OUT.json
same "merge the members of a .tar.gz" "$BIN/trace-merge" both.tar.gz --rank-from 'r([0-9])_' -o OUT.json

# the outputs are those of the whole input where it is whole
for f in kineto.json fakes.json kineto.json.gz; do
	"$BIN/trace-convert" "$f" -o "$f.tkb" --threads 8 >/dev/null 2>&1
	"$BIN/trace-convert" min.json -o min.tkb --threads 1 >/dev/null 2>&1
	n=$("$BIN/trace-stats" "$f.tkb" -t api -f csv 2>/dev/null | wc -l)
	check "$f: a .tkb written from 8 threads holds the events" [ "$n" -gt 1 ]
done

if [ -n "$REAL" ] && [ -f "$REAL/index.tsv" ]; then
	# the largest real traces by uncompressed size
	for rel in $(sort -t"$(printf '\t')" -k4 -n "$REAL/index.tsv" | awk -F'\t' '$4 > 20000000 {print $1}' | tail -4); do
		same "real $rel: convert" "$BIN/trace-convert" "$REAL/$rel" -o OUT.json
		same "real $rel: stats" "$BIN/trace-stats" "$REAL/$rel" -t ops,kernels,memcpy,api,steps,launch -f json
		"$BIN/trace-convert" "$REAL/$rel" -o real.tkb --threads 1 >/dev/null 2>&1
		same "real $rel: stats of its .tkb" "$BIN/trace-stats" real.tkb -t ops,kernels,memcpy,api,steps,launch -f json
		same "real $rel: its .tkb to json" "$BIN/trace-convert" real.tkb -o OUT.json
	done
	# the real .json.gz of over 2 MiB (four shares or more): on 8 threads their gzip stream is inflated in parts
	# (docs/gzip.md); whole, cut, and with a byte changed in the middle
	n=0
	for f in $(find "$REAL" -name '*.json.gz' -size +2200k | sort); do
		n=$((n + 1))
		same "real $f: convert (the gzip in parts)" "$BIN/trace-convert" "$f" -o OUT.json
		same "real $f: stats (the gzip in parts)" "$BIN/trace-stats" "$f" -t ops,kernels -f json
	done
	check "real .json.gz of over 2 MiB: some ($n)" [ "$n" -gt 0 ]
	f=$(find "$REAL" -name '*.json.gz' -size +2200k | sort | tail -n 1)
	if [ -n "$f" ]; then
		size=$(stat -c %s "$f")
		head -c $((size * 3 / 5)) "$f" > realcut.json.gz
		python3 - "$f" realbad.json.gz <<'PY' || exit 1
import sys
b = bytearray(open(sys.argv[1], "rb").read())
b[len(b) * 2 // 3] ^= 0x5a
open(sys.argv[2], "wb").write(b)
PY
		same "a real .json.gz cut (the gzip in parts)" "$BIN/trace-convert" realcut.json.gz -o OUT.json
		same "a real .json.gz damaged (the gzip in parts)" "$BIN/trace-convert" realbad.json.gz -o OUT.json
	fi
else
	echo "note: no real traces (../shared/realtraces or \$TK_REALTRACES): generated traces only"
fi
exit $fail
