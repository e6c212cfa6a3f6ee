#!/usr/bin/env bash
# tables.sh: trace-stats' tables on a generated trace: the streaming ones, the GPU time line's (steps, launch) and memory, all at once; MB/s and peak RSS against cat.
set -euo pipefail

usage() {
	cat <<'EOF2'
usage: bench/tables.sh [--repeat N] [--seed N] [SIZE] [BUILD_DIR]

Generates a Kineto trace of SIZE bytes (default 1G) with
BUILD_DIR/bench/gen_trace (BUILD_DIR defaults to "build") and measures, each
run through rss_run (best of --repeat runs, median beside it):

  cat TRACE.json                              baseline: reading the bytes
  trace-stats TRACE.json -t ops,kernels,memcpy,api     the streaming tables
  trace-stats TRACE.json -t steps,launch      the GPU time line (docs/steps.md)
  trace-stats TRACE.json -t memory            [memory] events: one pass, and a second for
                                              the op at each peak
  trace-stats TRACE.json -t collectives       NCCL kernels
  trace-stats TRACE.json -t all but memory    target >= 600 MB/s (one pass)
  trace-stats TRACE.json -t all eight         (two passes)

Files go to a temporary directory (under $TK_BENCH_DIR when set) removed at exit.
EOF2
}

BENCH=tables.sh
# shellcheck source=bench/common.sh
. "$(dirname "$0")/common.sh"
bench_parse "$@"
SIZE=${POS[0]:-1G}
BUILD_DIR=${POS[1]:-build}
STATS=$BUILD_DIR/tools/trace-stats
bench_need "$STATS"
bench_convert_setup tktables

row() { # NAME WALL MED CPU KIB
	awk -v n="$1" -v w="$2" -v m="$3" -v c="$4" -v k="$5" -v b="$BYTES" 'BEGIN {
		if (w <= 0) w = 0.0005; if (c <= 0) c = 0.0005
		printf "%-44s %8.2f %8.2f %9.0f %11.0f %9.1f\n", n, w, m, b / 1e6 / w, b / 1e6 / c, k / 1024 }'
}
printf "%-44s %8s %8s %9s %11s %9s\n" case "best s" "median" "MB/s" "MB/cpu-s" "peak MiB"
OUT=/dev/null
measure cat "$IN"; row "cat (baseline)" "$WALL" "$MED" "$CPU" "$KIB"
for t in ops,kernels,memcpy,api steps,launch memory collectives ops,kernels,memcpy,api,steps,launch,collectives \
	ops,kernels,memcpy,api,steps,launch,memory,collectives; do
	OUT=$WORK/t.txt
	measure "$STATS" -q "$IN" -t "$t" -o "$OUT"
	((RC == 0)) || { echo "$BENCH: trace-stats -t $t failed: $(cat "$LOG")" >&2; exit 1; }
	row "trace-stats -t $t" "$WALL" "$MED" "$CPU" "$KIB"
done
