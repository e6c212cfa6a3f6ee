#!/bin/bash
# split_real.sh: trace-split on real PyTorch profiler traces, read back and checked (skips when they are absent).
# usage: split_real.sh TRACE_SPLIT_BINARY TESTS_DIR REALTRACES_DIR
set -u
BIN=$1
HERE=$2
R=${3:-}
if [ -z "$R" ] || [ ! -f "$R/index.tsv" ]; then
	echo "split_real: no real traces at '${R}' (set TK_REALTRACES): skipped"
	exit 77
fi
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
fails=0
run() { # BUDGET TRACE NAME ARGS...
	local budget=$1 trace=$2 name=$3
	shift 3
	[ -f "$R/$trace" ] || { echo "split_real: $trace absent, skipped"; return; }
	rm -rf "$W/o"
	echo "== $trace: $*"
	"$BIN" "$R/$trace" -o "$W/o" -q "$@" || { echo "FAIL: exit $?"; fails=$((fails + 1)); return; }
	local opt=()
	[ "$budget" != 0 ] && opt=(--max-bytes "$budget")
	python3 "$HERE/split_check.py" "$R/$trace" "$W/o" "$name" "${opt[@]}" || fails=$((fails + 1))
}
# ProfilerStep# annotations: hta-trace_diff (6 steps), the 2020-12 bare array with string tids (6)
run 0 hta-trace_diff/control/control.json.gz control --by-step
run 0 hta-trace_diff/control/control.json.gz control --step 1010-1011 --clip
run 300000 hta-trace_diff/test/test.json.gz test --steps-per-part 2 --max-size 300000
run 262144 kineto-tbplugin-resnet50-2020-12/worker0.pt.trace.json.gz worker0.pt.trace --max-size 256K
run 0 kineto-tbplugin-resnet50-2020-12/worker0.pt.trace.json.gz worker0.pt.trace --by-step --clip
# baseTimeNanoseconds with fractional microseconds; no steps
run 0 tracelens-b200/eager_trace.json.gz eager_trace --parts 3
run 2000000 tracelens-b200/eager_trace.json.gz eager_trace --max-size 2000000 --to json
run 0 hta-ns_resolution_trace/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz r0 --window 50ms --clip --name r0
[ "$fails" = 0 ] || { echo "split_real: $fails failures"; exit 1; }
echo "split_real: all passed"
