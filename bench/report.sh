#!/usr/bin/env bash
# report.sh: trace-report on a generated trace against trace-stats on it (the target: at most 1.5 times its time) and the page's size (at most 2 MB).
set -euo pipefail

usage() {
	cat <<'EOF2'
usage: bench/report.sh [--repeat N] [--seed N] [SIZE] [BUILD_DIR]

Generates a Kineto trace of SIZE bytes (default 1G) with
BUILD_DIR/bench/gen_trace (BUILD_DIR defaults to "build") and measures, each
run through rss_run (best of --repeat runs, median beside it), in one go:

  cat TRACE.json                          baseline: reading the bytes
  trace-stats TRACE.json                  the default tables (ops, kernels, memcpy, api)
  trace-stats TRACE.json -t (all eight)   every table
  trace-report TRACE.json -o R.html       the page, with --folded F

then the targets: the page in at most 1.5 times trace-stats' time, and at
most 2 MB. Files go to a temporary directory (under $TK_BENCH_DIR when set)
removed at exit.
EOF2
}

BENCH=report.sh
# shellcheck source=bench/common.sh
. "$(dirname "$0")/common.sh"
bench_parse "$@"
SIZE=${POS[0]:-1G}
BUILD_DIR=${POS[1]:-build}
STATS=$BUILD_DIR/tools/trace-stats
REPORT=$BUILD_DIR/tools/trace-report
bench_need "$STATS" "$REPORT"
bench_convert_setup tkreport

row() { # NAME WALL MED CPU KIB
	awk -v n="$1" -v w="$2" -v m="$3" -v c="$4" -v k="$5" -v b="$BYTES" 'BEGIN {
		if (w <= 0) w = 0.0005; if (c <= 0) c = 0.0005
		printf "%-44s %8.2f %8.2f %9.0f %11.0f %9.1f\n", n, w, m, b / 1e6 / w, b / 1e6 / c, k / 1024 }'
}
printf "%-44s %8s %8s %9s %11s %9s\n" case "best s" "median" "MB/s" "MB/cpu-s" "peak MiB"
OUT=/dev/null
measure cat "$IN"
row "cat (baseline)" "$WALL" "$MED" "$CPU" "$KIB"
OUT=$WORK/t.txt
measure "$STATS" -q "$IN" -o "$OUT"
((RC == 0)) || { echo "$BENCH: trace-stats failed: $(cat "$LOG")" >&2; exit 1; }
row "trace-stats (default tables)" "$WALL" "$MED" "$CPU" "$KIB"
STATS_MED=$MED
measure "$STATS" -q "$IN" -t ops,kernels,memcpy,api,steps,launch,memory,collectives -o "$OUT"
((RC == 0)) || { echo "$BENCH: trace-stats -t all failed: $(cat "$LOG")" >&2; exit 1; }
row "trace-stats -t (all eight)" "$WALL" "$MED" "$CPU" "$KIB"
OUT=$WORK/r.html
measure "$REPORT" -q "$IN" -o "$OUT" --folded "$WORK/r.folded"
((RC == 0)) || { echo "$BENCH: trace-report failed: $(cat "$LOG")" >&2; exit 1; }
row "trace-report (--folded)" "$WALL" "$MED" "$CPU" "$KIB"
"$REPORT" -q "$IN" -o "$WORK/r.html" >/dev/null 2>&1
PAGE=$(stat -c %s "$WORK/r.html")
echo "-- targets"
awk -v r="$MED" -v s="$STATS_MED" 'BEGIN { x = r / s; printf "%-60s %6.2f  (<= 1.5) %s\n",
	"trace-report time / trace-stats time (medians)", x, (x <= 1.5 ? "met" : "NOT met") }'
awk -v p="$PAGE" 'BEGIN { printf "%-60s %6.2f  (<= 2.00) %s\n", "the page, MB", p / 1048576,
	(p <= 2097152 ? "met" : "NOT met") }'
