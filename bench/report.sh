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

then trace-stats (default tables) and trace-report again on the same trace
with its [memory] events after every CPU op (gen_trace --memory-last), as
the Kineto traces at hand have them: there the op at each memory peak takes
a second read of the input. Then the targets: the page in at most 1.5
times trace-stats' time, and at most 2 MB (the generated trace's own
layout; the other is shown beside it). Files go to a temporary directory
(under $TK_BENCH_DIR when set) removed at exit.
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

bench_table_head
OUT=/dev/null
measure cat "$IN"
bench_row "cat (baseline)"
OUT=$WORK/t.txt
measure "$STATS" -q "$IN" -o "$OUT"
((RC == 0)) || { echo "$BENCH: trace-stats failed: $(cat "$LOG")" >&2; exit 1; }
bench_row "trace-stats (default tables)"
STATS_MED=$MED
measure "$STATS" -q "$IN" -t ops,kernels,memcpy,api,steps,launch,memory,collectives -o "$OUT"
((RC == 0)) || { echo "$BENCH: trace-stats -t all failed: $(cat "$LOG")" >&2; exit 1; }
bench_row "trace-stats -t (all eight)"
OUT=$WORK/r.html
measure "$REPORT" -q "$IN" -o "$OUT" --folded "$WORK/r.folded"
((RC == 0)) || { echo "$BENCH: trace-report failed: $(cat "$LOG")" >&2; exit 1; }
bench_row "trace-report (--folded)"
REPORT_MED=$MED
"$REPORT" -q "$IN" -o "$WORK/r.html" >/dev/null 2>&1
PAGE=$(stat -c %s "$WORK/r.html")
# the same events, [memory] last
LATE=$WORK/late.json
"$GEN" --seed "$SEED" --size "$SIZE" --memory-last -q -o "$LATE"
OUT=$WORK/t.txt
measure "$STATS" -q "$LATE" -o "$OUT"
((RC == 0)) || { echo "$BENCH: trace-stats failed: $(cat "$LOG")" >&2; exit 1; }
bench_row "trace-stats, [memory] last"
LATE_STATS=$MED
OUT=$WORK/r.html
measure "$REPORT" -q "$LATE" -o "$OUT" --folded "$WORK/r.folded"
((RC == 0)) || { echo "$BENCH: trace-report failed: $(cat "$LOG")" >&2; exit 1; }
bench_row "trace-report, [memory] last"
LATE_REPORT=$MED
echo "-- targets"
awk -v r="$REPORT_MED" -v s="$STATS_MED" 'BEGIN { x = r / s; printf "%-60s %6.2f  (<= 1.5) %s\n",
	"trace-report time / trace-stats time (medians)", x, (x <= 1.5 ? "met" : "NOT met") }'
awk -v r="$LATE_REPORT" -v s="$LATE_STATS" 'BEGIN { printf "%-60s %6.2f  (shown)\n",
	"the same, [memory] last", r / s }'
awk -v p="$PAGE" 'BEGIN { printf "%-60s %6.2f  (<= 2.00) %s\n", "the page, MB", p / 1048576,
	(p <= 2097152 ? "met" : "NOT met") }'
