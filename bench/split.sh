#!/usr/bin/env bash
# split.sh: throughput and peak-RSS benchmark of trace-split on a generated trace, unsorted and sorted.
set -euo pipefail

usage() {
	cat <<'EOF'
usage: bench/split.sh [--repeat N] [--seed N] [--max-size SIZE] [SIZE] [BUILD_DIR]

Generates a Kineto-like trace of SIZE bytes (default 1G) with BUILD_DIR/bench/gen_trace
(BUILD_DIR defaults to "build"); its events are grouped by kind as Kineto writes
them, so it is not in time order. A time-ordered copy is made with trace-split
itself (one part). Each case runs through rss_run with the output removed and
`sync` run before it, so that no earlier output is still being written back:

  cat FILE > /dev/null                      baseline: reading
  cat FILE > OUT                            baseline: reading and writing as many bytes
  trace-split FILE --max-size 100M          target >= 400 MB/s, peak RSS <= 256 MiB
  trace-split SORTED --max-size 100M        target >= 400 MB/s, peak RSS <= 64 MiB
  trace-split SORTED --by-step              a part per step, GPU work with its launch
  trace-split SORTED --by-step --memory 32M the launches' sorting spilled to files

MB/s is input bytes (10^6) per wall-clock second; "vs cat>" is the ratio to the
second baseline. With --repeat N each case runs N times and the fastest run is
reported, with the median beside it. Every split is checked afterwards: the
parts hold every event (the index's counts) and none is over the budget. Files go
to a temporary directory (under $TK_BENCH_DIR when set) removed at exit.
EOF
}

BENCH=split.sh
MAXSIZE=100M
bench_opt() {
	case "$1" in
	--max-size) MAXSIZE=${2:?--max-size needs a value}; BENCH_USED=2 ;;
	esac
}
# shellcheck source=bench/common.sh
. "$(dirname "$0")/common.sh"
bench_parse "$@"
SIZE=${POS[0]:-1G}
BUILD_DIR=${POS[1]:-build}

GEN=$BUILD_DIR/bench/gen_trace
RSS=$BUILD_DIR/bench/rss_run
SPLIT=$BUILD_DIR/tools/trace-split
bench_need "$GEN" "$RSS" "$SPLIT"
bench_workdir tksplit

TRACE=$WORK/trace.json
SORTED=$WORK/sorted.json
OUT=$WORK/out
LOG=$WORK/stderr.log
SYNC_BEFORE=1

mbps() { awk -v b="$1" -v s="$2" 'BEGIN { if (s <= 0) s = 0.0005; printf "%.0f", b / 1e6 / s }'; }
mib() { awk -v k="$1" 'BEGIN { printf "%.0f MiB", k / 1024 }'; }

ROW_FMT="%-36s %7s %7s %8s %9s  %-24s %s\n"
MISSED=0
FAILED=0
COPY_RATE=0

# row NAME BYTES TARGET_MBPS MAX_RSS_MIB CMD...  (a target of 0: a baseline; -: none)
row() {
	local name=$1 bytes=$2 tmbps=$3 tmib=$4
	shift 4
	measure "$@"
	if ((RC != 0)); then
		printf "$ROW_FMT" "$name" "-" "-" "-" "-" "" "FAILED (rc=$RC)"
		sed 's/^/    | /' "$LOG" | tail -n 5
		FAILED=1
		LAST_RATE=0
		return
	fi
	local rate med ratio="-" target="" status="baseline"
	rate=$(mbps "$bytes" "$WALL")
	med=$(mbps "$bytes" "$MED")
	[[ $COPY_RATE != 0 ]] && ratio=$(awk -v r="$rate" -v c="$COPY_RATE" 'BEGIN { printf "%.2fx", r / c }')
	[[ $tmbps == - ]] && status=""
	if [[ $tmbps != 0 && $tmbps != - ]]; then
		target=">= $tmbps MB/s, <= $tmib MiB"
		status=ok
		awk -v r="$rate" -v t="$tmbps" 'BEGIN { exit !(r >= t) }' || status=MISS
		((KIB <= tmib * 1024)) || status=MISS
	fi
	[[ $status == MISS ]] && MISSED=1
	printf "$ROW_FMT" "$name" "$rate" "$med" "$ratio" "$(mib "$KIB")" "$target" "$status"
	LAST_RATE=$rate
}

# check_split NAME: the last split's index against its input's event count.
check_split() {
	local idx=$OUT/$1.index.json
	[[ -s $idx ]] || { echo "    check: FAILED: no index $idx"; FAILED=1; return; }
	python3 - "$idx" <<'PY' || FAILED=1
import json, sys
x = json.load(open(sys.argv[1]))
n = len(x["parts"])
want = x["events_in"] - x["meta_events_per_part"] + n * x["meta_events_per_part"] - x["flow_ends_removed"]
if x["events_out"] != want or x["over_budget"]:
    print("    check: FAILED: %d events out, expected %d; %d parts over budget" % (x["events_out"], want, x["over_budget"]))
    sys.exit(1)
print("    check: %d parts of at most %d bytes, %d events in, every one written (%d flow ends removed)"
      % (n, max(p["bytes"] for p in x["parts"]), x["events_in"], x["flow_ends_removed"]))
PY
}

echo "generating $SIZE trace (seed $SEED) in $WORK ..."
"$GEN" --seed "$SEED" --size "$SIZE" -q -o "$TRACE"
"$SPLIT" "$TRACE" -o "$WORK/s" --max-size 1000G --name sorted -q
mv "$WORK/s/sorted.part-0000.json" "$SORTED"
rm -rf "$WORK/s"
IN_BYTES=$(stat -c %s "$TRACE")
SORTED_BYTES=$(stat -c %s "$SORTED")
cat "$TRACE" "$SORTED" >/dev/null
echo "input: $IN_BYTES bytes, time-ordered copy $SORTED_BYTES bytes; parts of at most $MAXSIZE"
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | sed 's/.*: //'), best of $REPEAT run(s)"
echo
printf "$ROW_FMT" "case" "MB/s" "median" "vs cat>" "peak RSS" "target" "status"
printf "$ROW_FMT" "----" "----" "------" "-------" "--------" "------" "------"

LAST_RATE=0
row "cat trace > /dev/null (baseline)" "$IN_BYTES" 0 0 cat "$TRACE"
row "cat trace > file (baseline)" "$IN_BYTES" 0 0 sh -c 'mkdir -p "$1" && cat "$0" > "$1/copy"' "$TRACE" "$OUT"
COPY_RATE=$LAST_RATE
row "trace-split unsorted --max-size" "$IN_BYTES" 400 256 "$SPLIT" "$TRACE" -o "$OUT" --max-size "$MAXSIZE" -q --name u
check_split u
row "trace-split sorted --max-size" "$SORTED_BYTES" 400 64 "$SPLIT" "$SORTED" -o "$OUT" --max-size "$MAXSIZE" -q --name s
check_split s
row "trace-split sorted --by-step" "$SORTED_BYTES" - - "$SPLIT" "$SORTED" -o "$OUT" --by-step -q --name b
check_split b
row "trace-split sorted --by-step 32M" "$SORTED_BYTES" - - "$SPLIT" "$SORTED" -o "$OUT" --by-step \
	--memory 32M -q --name m
check_split m
echo
((MISSED)) && echo "some targets were missed (MISS)"
((FAILED)) && exit 1
exit 0
