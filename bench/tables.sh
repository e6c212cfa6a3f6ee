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
  trace-stats TRACE.json -t ops,kernels,memcpy,api --memory 256K
                                              the same, the id maps and durations paged out
  trace-stats TRACE.json -t steps,launch      the GPU time line (docs/steps.md)
  trace-stats TRACE.json -t steps,launch --memory 8M
                                              the same, its sorting spilled to files
  trace-stats TRACE.json -t memory            [memory] events: one pass, and a second for
                                              the op at each peak
  trace-stats TRACE.json -t collectives       NCCL kernels
  trace-stats TRACE.json -t collectives --memory 256K
                                              the same, the starts' sorting spilled to files
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

bench_table_head
OUT=/dev/null
measure cat "$IN"; bench_row "cat (baseline)"
for t in ops,kernels,memcpy,api "ops,kernels,memcpy,api --memory 256K" steps,launch "steps,launch --memory 8M" memory collectives "collectives --memory 256K" \
	ops,kernels,memcpy,api,steps,launch,collectives ops,kernels,memcpy,api,steps,launch,memory,collectives; do
	OUT=$WORK/t.txt
	# shellcheck disable=SC2086 # "TABLES --memory 8M" splits into its words
	measure "$STATS" -q "$IN" -t $t --tmpdir "$WORK" -o "$OUT"
	((RC == 0)) || { echo "$BENCH: trace-stats -t $t failed: $(cat "$LOG")" >&2; exit 1; }
	bench_row "trace-stats -t $t"
done
