#!/usr/bin/env bash
# sqlite.sh: events per second into a SQLite database, its peak RSS and its size against the JSON, on a generated trace.
set -euo pipefail

usage() {
	cat <<'EOF'
usage: bench/sqlite.sh [--repeat N] [--seed N] [--memory SIZE] [SIZE] [BUILD_DIR]

Generates a Kineto trace of SIZE bytes (default 1G) with
BUILD_DIR/bench/gen_trace (BUILD_DIR defaults to "build") and measures, each
run through rss_run (best of --repeat runs, median beside it):

  cat TRACE.json                        baseline: reading the bytes
  trace-convert TRACE.json -o X.json    baseline: the same events to JSON
  trace-convert TRACE.json -o X.sqlite  target >= 1.5 M events/s on one core
                                        (CPU time); peak RSS <= 64 MiB plus
                                        SQLite's page cache (half of --memory)

and the database's size against the plain JSON (target <= 1.5x). --memory
is passed to trace-convert (default: its own, 64M). Files go to a temporary
directory (under $TK_BENCH_DIR when set) removed at exit.
EOF
}

BENCH=sqlite.sh
MEMORY=""
bench_opt() {
	case "$1" in
	--memory) MEMORY=${2:?--memory needs a size}; BENCH_USED=2 ;;
	esac
}
# shellcheck source=bench/common.sh
. "$(dirname "$0")/common.sh"
bench_parse "$@"
SIZE=${POS[0]:-1G}
BUILD_DIR=${POS[1]:-build}
bench_convert_setup tksqlite
DB=$WORK/trace.sqlite
MEM_OPT=()
[[ -n $MEMORY ]] && MEM_OPT=(--memory "$MEMORY")

row() { # NAME WALL MED CPU KIB
	awk -v n="$1" -v w="$2" -v m="$3" -v c="$4" -v k="$5" -v b="$BYTES" -v e="${EVENTS:-0}" 'BEGIN {
		if (w <= 0) w = 0.0005; if (c <= 0) c = 0.0005
		printf "%-40s %8.2f %8.2f %9.0f %11.2f %11.2f %9.1f\n", n, w, m, b / 1e6 / w, e / 1e6 / w, e / 1e6 / c, k / 1024 }'
}
printf "%-40s %8s %8s %9s %11s %11s %9s\n" case "best s" "median" "MB/s" "M ev/s" "M ev/cpu-s" "peak MiB"
OUT=/dev/null
measure cat "$IN"; row "cat (baseline)" "$WALL" "$MED" "$CPU" "$KIB"
OUT=$WORK/x.json
measure "$CONVERT" -q "$IN" -o "$OUT"; row "trace-convert -> .json (baseline)" "$WALL" "$MED" "$CPU" "$KIB"
OUT=$DB
rm -f "$DB"
measure "$CONVERT" -q "${MEM_OPT[@]}" "$IN" -o "$OUT"; row "trace-convert -> .sqlite" "$WALL" "$MED" "$CPU" "$KIB"
((RC == 0)) || { echo "$BENCH: trace-convert failed: $(cat "$LOG")" >&2; exit 1; }
awk -v e="${EVENTS:-0}" -v c="$CPU" -v k="$KIB" 'BEGIN { if (c <= 0) c = 0.0005
	printf "write: %.2f M events per CPU second (target >= 1.5); peak RSS %.1f MiB\n", e / 1e6 / c, k / 1024 }'
SQ=$(stat -c %s "$DB")
awk -v j="$BYTES" -v q="$SQ" 'BEGIN { printf "size: json %d, sqlite %d (%.2fx the json, target <= 1.5x)\n", j, q, q / j }'
