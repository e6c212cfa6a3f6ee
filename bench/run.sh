#!/usr/bin/env bash
# run.sh: throughput and peak-RSS benchmark of parse_only and trace-convert on a generated trace.
set -euo pipefail

usage() {
	cat <<'EOF'
usage: bench/run.sh [--repeat N] [--seed N] [SIZE] [BUILD_DIR]

Generates a Kineto-like trace of SIZE bytes (default 1G) with BUILD_DIR/bench/gen_trace
(BUILD_DIR defaults to "build"), gzips a copy, and measures each case below with
rss_run, after one warm-up read of the files:

  cat FILE > /dev/null            baseline for plain JSON
  parse_only FILE                 target >= 1000 MB/s, peak RSS <= 32 MiB
  trace-convert FILE -o OUT.json  target >=  400 MB/s, peak RSS <= 32 MiB
  zcat FILE.gz > /dev/null        baseline for gzip input
  parse_only FILE.gz              target >= 0.8x zcat, peak RSS <= 32 MiB
  trace-convert FILE.gz -o OUT    target >= 0.8x zcat, peak RSS <= 32 MiB

MB/s is uncompressed input bytes (10^6) per wall-clock second. With --repeat N each
case runs N times and the fastest run is reported. Files go to a temporary directory
(under $TK_BENCH_DIR when set) that is removed at exit.
EOF
}

BENCH=run.sh
# shellcheck source=bench/common.sh
. "$(dirname "$0")/common.sh"
bench_parse "$@"
SIZE=${POS[0]:-1G}
BUILD_DIR=${POS[1]:-build}

GEN=$BUILD_DIR/bench/gen_trace
RSS=$BUILD_DIR/bench/rss_run
PARSE=$BUILD_DIR/bench/parse_only
CONVERT=$BUILD_DIR/tools/trace-convert
bench_need "$GEN" "$RSS"
bench_workdir tkbench

TRACE=$WORK/trace.json
OUT=$WORK/out.json
LOG=$WORK/stderr.log

mbps() { awk -v b="$1" -v s="$2" 'BEGIN { if (s <= 0) s = 0.0005; printf "%.1f", b / 1e6 / s }'; }
mib() { awk -v k="$1" 'BEGIN { printf "%.1f MiB", k / 1024 }'; }

ROW_FMT="%-30s %10s %8s %11s  %-26s %s\n"
MISSED=0
FAILED=0

# row NAME BYTES TARGET_MBPS ZCAT_MBPS MIN_RATIO CMD...  (targets of 0 mean none)
row() {
	local name=$1 bytes=$2 tmbps=$3 zmbps=$4 tratio=$5
	shift 5
	measure "$@"
	if ((RC != 0)); then
		printf "$ROW_FMT" "$name" "-" "-" "-" "" "FAILED (rc=$RC)"
		sed 's/^/    | /' "$LOG" | tail -n 5
		FAILED=1
		LAST_RATE=0
		return
	fi
	local rate ratio="-" target="" status="ok" rss
	rate=$(mbps "$bytes" "$WALL")
	rss=$(mib "$KIB")
	if [[ $zmbps != 0 ]]; then
		ratio=$(awk -v r="$rate" -v z="$zmbps" 'BEGIN { printf "%.2fx", r / z }')
	fi
	if [[ $tmbps != 0 ]]; then
		target=">= $tmbps MB/s, <= 32 MiB"
		awk -v r="$rate" -v t="$tmbps" 'BEGIN { exit !(r >= t) }' || status="MISS"
	elif [[ $tratio != 0 ]]; then
		target=">= ${tratio}x zcat, <= 32 MiB"
		awk -v r="$rate" -v z="$zmbps" -v t="$tratio" 'BEGIN { exit !(r >= t * z) }' || status="MISS"
	else
		status="baseline"
	fi
	if [[ -n $target ]] && ((KIB > 32 * 1024)); then
		status="MISS"
	fi
	[[ $status == MISS ]] && MISSED=1
	printf "$ROW_FMT" "$name" "$rate" "$ratio" "$rss" "$target" "$status"
	LAST_RATE=$rate
}

skip_row() {
	printf "$ROW_FMT" "$1" "-" "-" "-" "" "skipped ($2 not built)"
}

echo "generating $SIZE trace (seed $SEED) in $WORK ..."
"$GEN" --seed "$SEED" --size "$SIZE" -q -o "$TRACE"
gzip -6 -k "$TRACE"
IN_BYTES=$(stat -c %s "$TRACE")
GZ_BYTES=$(stat -c %s "$TRACE.gz")
cat "$TRACE" "$TRACE.gz" >/dev/null

EVENTS="?"
if [[ -x $PARSE ]]; then
	EVENTS=$("$PARSE" "$TRACE" | sed -n 's/^events=\([0-9]*\).*/\1/p')
fi
echo "input: $IN_BYTES bytes ($(mib $((IN_BYTES / 1024)))), gzip -6: $GZ_BYTES bytes" \
	"(ratio $(awk -v a="$IN_BYTES" -v b="$GZ_BYTES" 'BEGIN { printf "%.1f", a / b }')), $EVENTS events"
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | sed 's/.*: //'), best of $REPEAT run(s)"
echo
printf "$ROW_FMT" "case" "MB/s" "vs zcat" "peak RSS" "target" "status"
printf "$ROW_FMT" "----" "----" "-------" "--------" "------" "------"

LAST_RATE=0
row "cat json (baseline)" "$IN_BYTES" 0 0 0 cat "$TRACE"
if [[ -x $PARSE ]]; then
	row "parse_only json" "$IN_BYTES" 1000 0 0 "$PARSE" "$TRACE"
else
	skip_row "parse_only json" "parse_only"
fi
if [[ -x $CONVERT ]]; then
	row "trace-convert json -> json" "$IN_BYTES" 400 0 0 "$CONVERT" -q "$TRACE" -o "$OUT"
else
	skip_row "trace-convert json -> json" "trace-convert"
fi
row "zcat json.gz (baseline)" "$IN_BYTES" 0 0 0 zcat "$TRACE.gz"
ZCAT_RATE=$LAST_RATE
if [[ -x $PARSE ]]; then
	row "parse_only json.gz" "$IN_BYTES" 0 "$ZCAT_RATE" 0.8 "$PARSE" "$TRACE.gz"
else
	skip_row "parse_only json.gz" "parse_only"
fi
if [[ -x $CONVERT ]]; then
	row "trace-convert json.gz -> json" "$IN_BYTES" 0 "$ZCAT_RATE" 0.8 "$CONVERT" -q "$TRACE.gz" -o "$OUT"
else
	skip_row "trace-convert json.gz -> json" "trace-convert"
fi

if [[ -x $PARSE && -x $CONVERT && -s $OUT ]]; then
	OUT_EVENTS=$("$PARSE" "$OUT" | sed -n 's/^events=\([0-9]*\).*/\1/p')
	echo
	if [[ $OUT_EVENTS == "$EVENTS" ]]; then
		echo "output check: trace-convert output holds $OUT_EVENTS events, as the input"
	else
		echo "output check: FAILED: trace-convert output holds $OUT_EVENTS events, input $EVENTS"
		FAILED=1
	fi
fi
echo
((MISSED)) && echo "some targets were missed (MISS)"
((FAILED)) && exit 1
exit 0
