#!/usr/bin/env bash
# test_gzip.sh: the gzip back-ends (ISA-L and libdeflate where built in, zlib: TK_GZIP=zlib) write
# gzip that zlib's `gzip -t` accepts and that inflates to the same bytes, and read gzip to the same
# output.
# usage: test_gzip.sh TOOLS-DIR TESTDATA-DIR
set -u
BIN=${1:?usage: test_gzip.sh TOOLS-DIR TESTDATA-DIR}
TD=${2:?usage: test_gzip.sh TOOLS-DIR TESTDATA-DIR}
BIN=$(cd "$BIN" && pwd)
TD=$(cd "$TD" && pwd)
CONVERT=$BIN/trace-convert
[ -x "$CONVERT" ] || { echo "not an executable: $CONVERT"; exit 1; }
command -v gzip >/dev/null || { echo "gzip is needed"; exit 1; }
T=$(mktemp -d "${TMPDIR:-/tmp}/tkgz-XXXXXX") || exit 1
trap '[ -n "${TK_KEEP:-}" ] || rm -rf "$T"' EXIT
cd "$T" || exit 1

fails=0
checks=0
check() {
	local what=$1
	shift
	checks=$((checks + 1))
	if ! "$@"; then
		fails=$((fails + 1))
		echo "FAIL: $what"
	fi
}

differ() { ! cmp -s "$1" "$2"; }
ordered() { [ "$1" -lt "$2" ] && [ "$2" -le "$3" ]; }
within10() { [ $(($1 * 10)) -lt $(($2 * 11)) ] && [ $(($2 * 10)) -lt $(($1 * 11)) ]; }

isal=0
"$CONVERT" --version | grep -q "isa-l" && isal=1
echo "ISA-L built in: $isal"
ld=0
"$CONVERT" --version | grep -q "libdeflate" && ld=1
echo "libdeflate built in: $ld"

# A trace of several MiB (blocks of 1 MiB go to the writer's threads): the
# example's events again and again with shifted times and changing names.
python3 - "$TD/example_kineto.json" big.json <<'PY'
import json, sys
src = json.load(open(sys.argv[1]))
evs = src["traceEvents"]
out = []
for rep in range(1200):
    for i, e in enumerate(evs):
        e = dict(e)
        if "ts" in e:
            e["ts"] = e["ts"] + rep * 1e6
        if "name" in e and i % 3 == 0:
            e["name"] = "%s_%d" % (e["name"], (rep * 7919 + i) % 1000)
        out.append(e)
src["traceEvents"] = out
json.dump(src, open(sys.argv[2], "w"), indent=1)
PY
[ "$(stat -c %s big.json)" -gt 3000000 ] || { echo "generated trace too small"; exit 1; }
"$CONVERT" big.json -o plain.json 2>stderr || { cat stderr; exit 1; }

# Writing: every level, both back-ends.
for level in 1 2 3 4 6 9; do
	for be in best zlib; do
		if [ $be = zlib ]; then env=(env TK_GZIP=zlib); else env=(env); fi
		"${env[@]}" "$CONVERT" big.json --gzip-level $level -o "out-$be-$level.json.gz" 2>stderr
		check "level $level ($be): exit status 0" [ $? -eq 0 ]
		check "level $level ($be): gzip -t accepts it" gzip -t "out-$be-$level.json.gz"
		gzip -dc "out-$be-$level.json.gz" >"dec-$be-$level.json"
		check "level $level ($be): inflates to the plain output" cmp -s "dec-$be-$level.json" plain.json
	done
	if [ $isal = 1 ] && [ $level -le 3 ]; then
		# ISA-L writes other deflate streams than zlib at these levels
		check "level $level: ISA-L's output is its own" differ "out-best-$level.json.gz" "out-zlib-$level.json.gz"
	elif [ $ld = 1 ] && [ $level -ge 4 ]; then
		# and libdeflate at these
		check "level $level: libdeflate's output is its own" differ "out-best-$level.json.gz" "out-zlib-$level.json.gz"
	else
		check "level $level: both back-ends write the same bytes" cmp -s "out-best-$level.json.gz" "out-zlib-$level.json.gz"
	fi
done
# ISA-L's levels trade size for speed: level 1 is the largest, level 6 smaller than 3
s1=$(stat -c %s out-best-1.json.gz) s3=$(stat -c %s out-best-3.json.gz) s6=$(stat -c %s out-best-6.json.gz)
check "sizes: level 6 ($s6) < level 3 ($s3) <= level 1 ($s1)" ordered "$s6" "$s3" "$s1"
# level 6 through libdeflate is about zlib's level 6 in size (docs/gzip.md: within a few percent)
z6=$(stat -c %s out-zlib-6.json.gz)
check "sizes: level 6 ($s6) within 10% of zlib's ($z6)" within10 "$s6" "$z6"

# Reading: the same output from either back-end, a file, a pipe and
# two members (`cat a.gz b.gz` is one stream of both).
gzip -c -6 big.json >in.json.gz
for be in best zlib; do
	if [ $be = zlib ]; then env=(env TK_GZIP=zlib); else env=(env); fi
	"${env[@]}" "$CONVERT" in.json.gz -o "read-$be.json" 2>stderr
	check "read ($be): the same output as from the plain file" cmp -s "read-$be.json" plain.json
	"${env[@]}" "$CONVERT" - -o "pipe-$be.json" <in.json.gz 2>stderr
	check "read ($be) from a pipe: the same output" cmp -s "pipe-$be.json" plain.json
done
head -c 2000000 big.json | gzip -c >two.json.gz
tail -c +2000001 big.json | gzip -c >>two.json.gz
for be in best zlib; do
	if [ $be = zlib ]; then env=(env TK_GZIP=zlib); else env=(env); fi
	"${env[@]}" "$CONVERT" two.json.gz -o "two-$be.json" 2>stderr
	check "two members ($be): the same output" cmp -s "two-$be.json" plain.json
done

# A cut .gz: both back-ends keep the same events and say the same.
size=$(stat -c %s in.json.gz)
for cut in 100 5000 $((size / 3)) $((size / 2 + 17)) $((size - 9)); do
	head -c $cut in.json.gz >cut.json.gz
	for be in best zlib; do
		if [ $be = zlib ]; then env=(env TK_GZIP=zlib); else env=(env); fi
		"${env[@]}" "$CONVERT" cut.json.gz -o "cut-$be.json" 2>"cut-$be.err"
		echo $? >>"cut-$be.err"
	done
	check "cut at $cut: the same messages from both back-ends" cmp -s cut-best.err cut-zlib.err
	if [ -f cut-best.json ] || [ -f cut-zlib.json ]; then
		check "cut at $cut: the same events from both back-ends" cmp -s cut-best.json cut-zlib.json
	fi
	rm -f cut-best.json cut-zlib.json
done
# A corrupt .gz: the same error, naming the file, from both (here the damage
# inflates to text that is not JSON before any check of the gzip fails: the
# rest of the stream is inflated then, and its damage is the error).
cp in.json.gz bad.json.gz
printf '\xff\xff\xff\xff\xff\xff\xff\xff' | dd of=bad.json.gz bs=1 seek=$((size / 2)) conv=notrunc 2>/dev/null
for be in best zlib; do
	if [ $be = zlib ]; then env=(env TK_GZIP=zlib); else env=(env); fi
	"${env[@]}" "$CONVERT" bad.json.gz -o "bad-$be.json" 2>"bad-$be.err"
	rc=$?
	check "corrupt ($be): exit status 1 (got $rc)" [ $rc -eq 1 ]
	check "corrupt ($be): the message names the file" grep -q "error: bad.json.gz:" "bad-$be.err"
	check "corrupt ($be): the message says first that the gzip data is corrupt" \
		grep -q "error: bad.json.gz: corrupt gzip data: .*; what it decoded was not valid before that: bad.json.gz:" "bad-$be.err"
	check "corrupt ($be): no output left" [ ! -e "bad-$be.json" ]
done
check "corrupt: the same message from both back-ends" cmp -s bad-best.err bad-zlib.err
# A syntax error in a sound gzip stream that has bytes after its end: the
# syntax error alone (the trailing bytes do not explain it).
python3 -c 'import gzip,sys; d=open(sys.argv[1]).read().replace("\"ph\": \"X\"", "\"ph\": X", 1); sys.stdout.buffer.write(gzip.compress(d.encode()) + bytes(16))' "$TD/example_kineto.json" >pad.json.gz
"$CONVERT" pad.json.gz -o pad.json 2>pad.err
check "syntax error before trailing bytes: exit 1" [ $? -eq 1 ]
check "syntax error before trailing bytes: the syntax error, not the trailing bytes" \
	sh -c 'grep -q "error: pad.json.gz:[0-9]*:[0-9]*: expected a JSON value" pad.err && ! grep -q "trailing" pad.err'
# Damage to the gzip trailer alone: the check of the data fails, in both.
cp in.json.gz crc.json.gz
printf '\x00\x00\x00\x00' | dd of=crc.json.gz bs=1 seek=$((size - 8)) conv=notrunc 2>/dev/null
for be in best zlib; do
	if [ $be = zlib ]; then env=(env TK_GZIP=zlib); else env=(env); fi
	"${env[@]}" "$CONVERT" crc.json.gz -o "crc-$be.json" 2>"crc-$be.err"
	check "bad CRC ($be): exit status 1" [ $? -eq 1 ]
	check "bad CRC ($be): says the gzip data is corrupt" grep -q "crc.json.gz: corrupt gzip data" "crc-$be.err"
done
check "bad CRC: the same message from both back-ends" cmp -s crc-best.err crc-zlib.err

echo "$checks checks, $fails failed"
[ $fails -eq 0 ]
