#!/bin/bash
# split_cli.sh: trace-split on generated traces: every rule, read back and checked; errors leave no files.
# usage: split_cli.sh TRACE_SPLIT_BINARY TESTS_DIR
set -u
BIN=$1
HERE=$2
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
fails=0
check() { python3 "$HERE/split_check.py" "$@" || fails=$((fails + 1)); }
bad() { echo "FAIL: $*"; fails=$((fails + 1)); }

python3 "$HERE/split_gen.py" "$W/u.json" --steps 30 || exit 1
python3 "$HERE/split_gen.py" "$W/s.json" --steps 30 --sorted || exit 1
gzip -c "$W/u.json" > "$W/g.json.gz"

# every rule, unsorted (through the sorter) and sorted input
for in in u s; do
	while read -r budget args; do
		rm -rf "$W/o"
		echo "== $in: $args"
		# shellcheck disable=SC2086
		"$BIN" "$W/$in.json" -o "$W/o" $args -q --memory 256K || bad "$in $args: exit $?"
		opt=()
		[ "$budget" != 0 ] && opt=(--max-bytes "$budget")
		check "$W/$in.json" "$W/o" "$in" "${opt[@]}"
	done <<'EOF'
65536 --max-size 64K
0 --parts 4
0 --window 3ms --clip
0 --window 2500us
0 --by-step
0 --steps-per-part 4 --clip
0 --steps 3-5 --clip
0 --step 7
0 --range 1ms:5ms
10240 --range 10ms:20ms --clip --max-size 10K
0 --range 100s:
20480 --max-size 20K --to json.gz
30000 --by-step --max-size 30000
EOF
done

# .tkb parts, plain and with zlib chunks, read back through trace-convert
CONVERT=$(dirname "$BIN")/trace-convert
for args in "--parts 4 --to tkb" "--by-step --clip --to tkb --compress" "--window 2500us --to tkb"; do
	for in in u s; do
		rm -rf "$W/o"
		echo "== $in: $args"
		# shellcheck disable=SC2086
		"$BIN" "$W/$in.json" -o "$W/o" $args -q --memory 256K || bad "$in $args: exit $?"
		ls "$W/o/$in.part-0000.tkb" >/dev/null || bad "$args: no .tkb parts: $(ls "$W/o")"
		grep -q '"format":"tkb"' "$W/o/$in.index.json" || bad "$args: index lacks the format"
		check "$W/$in.json" "$W/o" "$in" --convert "$CONVERT"
	done
done

# gzip in, gzip out by default; the budget is on the compressed bytes
rm -rf "$W/o"
"$BIN" "$W/g.json.gz" -o "$W/o" --max-size 16K -q || bad "gzip: exit $?"
ls "$W/o"/g.part-0000.json.gz >/dev/null || bad "gzip input did not give .json.gz parts"
check "$W/g.json.gz" "$W/o" g --max-bytes 16384

# --parts 3 gives three parts; part names sort
rm -rf "$W/o"
"$BIN" "$W/s.json" -o "$W/o" --parts 3 --name run -q || bad "--parts: exit $?"
check "$W/s.json" "$W/o" run --expect-parts 3
[ "$(ls "$W/o" | grep part- | sort | tr '\n' ' ')" = "run.part-0000.json run.part-0001.json run.part-0002.json " ] ||
	bad "part names: $(ls "$W/o")"

# trace-split's own output (flow starts just before their ends) counts as sorted
rm -rf "$W/o" "$W/o2"
"$BIN" "$W/u.json" -o "$W/o" --max-size 1G --name one -q || bad "one part: exit $?"
"$BIN" "$W/o/one.part-0000.json" -o "$W/o2" --window 2ms --name re -q || bad "re-split: exit $?"
grep -q '"input_sorted":1' "$W/o2/re.index.json" || bad "split output not taken as sorted"
check "$W/o/one.part-0000.json" "$W/o2" re

# the summary on stderr names the removed flows
rm -rf "$W/o"
"$BIN" "$W/s.json" -o "$W/o" --by-step 2> "$W/err" || bad "summary run failed"
grep -q "flows crossed a part boundary" "$W/err" || bad "no flow report on stderr: $(cat "$W/err")"

# failures: exit status, a message naming the file, and no files left behind
expect_fail() { # STATUS PATTERN ARGS...
	local want=$1 pat=$2
	shift 2
	rm -rf "$W/o"
	mkdir -p "$W/o"
	"$BIN" "$@" 2> "$W/err"
	local st=$?
	[ "$st" = "$want" ] || bad "$*: exit $st, expected $want"
	grep -q -- "$pat" "$W/err" || bad "$*: message '$(cat "$W/err")' lacks '$pat'"
	[ -z "$(ls -A "$W/o")" ] || bad "$*: left files: $(ls -A "$W/o")"
}
head -c 300000 "$W/s.json" > "$W/cut.json"
expect_fail 1 "cut.json" "$W/cut.json" -o "$W/o" --max-size 20K --strict
expect_fail 1 "too small" "$W/s.json" -o "$W/o" --max-size 300
expect_fail 1 "nothere.json" "$W/nothere.json" -o "$W/o" --max-size 1M
expect_fail 1 "ProfilerStep#99" "$W/s.json" -o "$W/o" --step 99
expect_fail 2 "standard input" - -o "$W/o" --max-size 1M
expect_fail 2 "exclude each other" "$W/s.json" -o "$W/o" --parts 2 --by-step
expect_fail 2 "say where to split" "$W/s.json" -o "$W/o"
expect_fail 2 "missing -o" "$W/s.json" --parts 2
expect_fail 2 "--window: bad value '3parsecs'" "$W/s.json" -o "$W/o" --window 3parsecs
expect_fail 2 "--max-size: bad value '5M5'" "$W/s.json" -o "$W/o" --max-size 5M5
expect_fail 2 "needs JSON parts" "$W/s.json" -o "$W/o" --max-size 5M --to tkb
expect_fail 2 "applies to --to tkb only" "$W/s.json" -o "$W/o" --parts 2 --compress
expect_fail 2 "--to: bad value 'xml'" "$W/s.json" -o "$W/o" --parts 2 --to xml

# a budget smaller than single events: they are written alone, over it, and
# said so; nothing is lost (the message once was an unnamed I/O error)
rm -rf "$W/o"
"$BIN" "$HERE/../testdata/example_kineto.json" -o "$W/o" --max-size 2K 2>"$W/err" ||
	bad "--max-size 2K: exit $? ($(cat "$W/err"))"
grep -q "alone did not fit" "$W/err" || bad "--max-size 2K: no warning of a part over the budget"
check "$HERE/../testdata/example_kineto.json" "$W/o" example_kineto

# an event too large for the budget coming first: its part is not left with
# nothing but the repeated M events
python3 - "$W/big.json" <<'PY'
import json, sys
ev = [{"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "p"}},
      {"ph": "M", "name": "thread_name", "pid": 1, "tid": 1, "args": {"name": "t"}},
      {"ph": "X", "name": "big", "ts": 1, "dur": 1, "pid": 1, "tid": 1, "args": {"x": "y" * 5000}},
      {"ph": "X", "name": "a", "ts": 2, "dur": 1, "pid": 1, "tid": 1},
      {"ph": "X", "name": "b", "ts": 3, "dur": 1, "pid": 1, "tid": 1}]
json.dump({"traceEvents": ev}, open(sys.argv[1], "w"))
PY
rm -rf "$W/o"
"$BIN" "$W/big.json" -o "$W/o" --max-size 2K -q || bad "big event first: exit $?"
for p in "$W"/o/big.part-*.json; do
	python3 -c 'import json,sys; ev=json.load(open(sys.argv[1]))["traceEvents"]; sys.exit(0 if any(e["ph"] != "M" for e in ev) else 1)' "$p" ||
		bad "big event first: $(basename "$p") holds only M events"
done
check "$W/big.json" "$W/o" big

# one --window syntax: A:B on the trace clock, +A:+B from the first event
rm -rf "$W/o" "$W/o2"
"$BIN" "$W/s.json" -o "$W/o" --window +1ms:+5ms -q || bad "--window +1ms:+5ms: exit $?"
"$BIN" "$W/s.json" -o "$W/o2" --range 1ms:5ms -q || bad "--range 1ms:5ms: exit $?"
cmp -s "$W/o/s.part-0000.json" "$W/o2/s.part-0000.json" || bad "--window +1ms:+5ms differs from --range 1ms:5ms"
expect_fail 2 "--window: bad value '1ms:x' (A:B" "$W/s.json" -o "$W/o" --window 1ms:x

# .pftrace and .sqlite parts: their writers spill to --tmpdir too, never to $TMPDIR
for to in pftrace sqlite; do
	rm -rf "$W/o" "$W/spill"
	mkdir "$W/spill"
	TMPDIR=$W/no-such-tmp "$BIN" "$W/u.json" -o "$W/o" --parts 2 --to $to --memory 256K --tmpdir "$W/spill" -q ||
		bad "--to $to --tmpdir with \$TMPDIR missing: exit $?"
	[ -s "$W/o/u.part-0001.$to" ] || bad "--to $to: no second part"
	[ -z "$(ls -A "$W/spill")" ] || bad "--to $to: left in --tmpdir: $(ls -A "$W/spill")"
done

# --help comes from the option table; --version names the library
"$BIN" --help | grep -q -- "--steps-per-part K" || bad "--help lacks --steps-per-part"
"$BIN" --version | grep -q libtracekit || bad "--version"

if [ "$fails" != 0 ]; then
	echo "split_cli: $fails failures"
	exit 1
fi
echo "split_cli: all passed"
