#!/usr/bin/env bash
# test_limits.sh: times near the ends of int64, ranks out of range and odd inputs give right
# output or a clear error, never wrapped numbers (the sanitizer build aborts on signed overflow).
# usage: test_limits.sh TOOLS-DIR
set -u
BIN=$1
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
. "$(dirname "$0")/check.sh"
# jq-free JSON checks
py() { python3 -c "$@"; }

# ts + dur beyond INT64_MAX ns: 9223372036854775 us is INT64_MAX ns less 807 ns.
cat >"$T/edge.json" <<'EOF'
{"traceEvents":[
{"ph":"X","cat":"cpu_op","name":"aten::mm","pid":1,"tid":1,"ts":9223372036854775,"dur":10},
{"ph":"X","cat":"kernel","name":"gemm","pid":0,"tid":7,"ts":9223372036854775,"dur":5,"args":{"correlation":1}},
{"ph":"X","cat":"cpu_op","name":"aten::add","pid":1,"tid":1,"ts":-9223372036854775,"dur":10}
]}
EOF

echo "== ts + dur past INT64_MAX"
"$BIN/trace-stats" "$T/edge.json" -t ops -f json -o "$T/ops.json" 2>"$T/err"
check "trace-stats exits 0 ($(head -c 200 "$T/err"))" test $? -eq 0
check "trace-stats counts both ops" py "
import json; t = json.load(open('$T/ops.json'))
rows = [r for v in t.values() if isinstance(v, list) for r in v] if isinstance(t, dict) else t
names = json.dumps(t)
assert 'aten::mm' in names and 'aten::add' in names, names[:300]"
"$BIN/trace-stats" "$T/edge.json" -t kernels >/dev/null 2>"$T/err"
check "trace-stats -t kernels exits 0" test $? -eq 0
"$BIN/trace-split" "$T/edge.json" -o "$T/parts" --parts 2 -q 2>"$T/err"
check "trace-split exits 0 ($(head -c 200 "$T/err"))" test $? -eq 0
# the last end is past 9223372036854775 us, or null: held at the end of int64 (an open end)
check "trace-split's index has no wrapped (negative) last end" py "
import json; ix = json.load(open('$T/parts/edge.index.json'))
ends = [p['last_end_us'] for p in ix['parts'] if p['events']]
assert any(v is None or v >= 9223372036854775 for v in ends), ends
assert sum(p['events'] for p in ix['parts']) >= 3"
"$BIN/trace-convert" "$T/edge.json" -o "$T/edge.pftrace" 2>"$T/err"
check "trace-convert to .pftrace exits 0 or says why ($(head -c 200 "$T/err"))" test $? -le 1

echo "== merge: clock shifts and offsets near the ends of int64"
printf '0 9223372036854775000\n1 -9223372036854775000\n' >"$T/offsets.txt"
cp "$T/edge.json" "$T/r0.json"
cp "$T/edge.json" "$T/r1.json"
"$BIN/trace-merge" "$T/r0.json" "$T/r1.json" --align "$T/offsets.txt" -o "$T/m.json" 2>"$T/err"
check "trace-merge --align FILE with extreme offsets exits 0 ($(head -c 200 "$T/err"))" test $? -eq 0
check "its output parses and keeps every event" py "
import json; t = json.load(open('$T/m.json'))
ev = [e for e in t['traceEvents'] if e.get('ph') == 'X']
assert len(ev) == 6, len(ev)"
printf '0 99999999999999999999\n' >"$T/over.txt"
"$BIN/trace-merge" "$T/r0.json" "$T/r1.json" --align "$T/over.txt" -o "$T/m2.json" 2>"$T/err"
check "an offset beyond int64 is an error naming the line" grep -q "over.txt:1" "$T/err"
cat >"$T/base.json" <<'EOF'
{"baseTimeNanoseconds":9223372036854775807,"traceEvents":[
{"ph":"X","cat":"cpu_op","name":"a","pid":1,"tid":1,"ts":9223372036854775,"dur":10}]}
EOF
"$BIN/trace-merge" "$T/base.json" "$T/r1.json" --align start -o "$T/m3.json" 2>"$T/err"
check "baseTimeNanoseconds at INT64_MAX with --align start exits 0 ($(head -c 200 "$T/err"))" test $? -eq 0

echo "== merge: ranks out of range"
for r in 288230376151711744 -3; do
	printf '{"distributedInfo":{"rank":%s},"traceEvents":[{"ph":"X","name":"a","pid":1,"tid":1,"ts":1,"dur":1}]}' "$r" >"$T/rk.json"
	"$BIN/trace-merge" "$T/rk.json" "$T/r0.json" -o "$T/m4.json" 2>"$T/err"
	check "distributedInfo.rank $r is an error" test $? -eq 1
	check "it names the file and the range" grep -q "rk.json: rank $r .*out of range (0..8388607)" "$T/err"
	check "and writes nothing" test ! -e "$T/m4.json"
done
mkdir "$T/rankdir"
cp "$T/r0.json" "$T/rankdir/rank99999999999.json"
"$BIN/trace-merge" "$T/rankdir/rank99999999999.json" --rank-from 'rank([0-9]+)' -o "$T/m5.json" 2>"$T/err"
check "--rank-from giving a rank out of range is an error" grep -q "rank 99999999999 is out of range" "$T/err"
"$BIN/trace-merge" "$T/r0.json" --rank-from 'r' --rank-from '(x' -o "$T/m6.json" 2>/dev/null
check "--rank-from given twice, the last bad, is a usage error" test $? -eq 2

echo "== merge: an empty directory"
mkdir "$T/empty"
"$BIN/trace-merge" "$T/empty" -o "$T/m7.json" 2>"$T/err"
check "an empty directory is an error" test $? -eq 1
check "it says the directory holds no traces" grep -q "empty: no trace files" "$T/err"

exit $fail
