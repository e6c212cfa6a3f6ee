#!/usr/bin/env bash
# pftrace.sh: size, write throughput, read rate and peak RSS of Perfetto protobuf output (.pftrace) against JSON, on a generated trace and on real traces.
set -euo pipefail

usage() {
	cat <<'EOF2'
usage: bench/pftrace.sh [--repeat N] [--seed N] [--real DIR] [SIZE] [BUILD_DIR]

Generates a Kineto trace of SIZE bytes (default 1G) with
BUILD_DIR/bench/gen_trace (BUILD_DIR defaults to "build") and measures, each
run through rss_run (best of --repeat runs, median beside it):

  cat TRACE.json                       baseline: reading the bytes
  trace-convert TRACE.json -o X.json   baseline: the same conversion to JSON
  trace-convert --threads 1 TRACE.json -o X.pftrace
                                       write: target >= 400 MB/s of JSON
                                         input on one core (CPU time)
  trace-convert TRACE.json -o X.pftrace  the same on every core (the same
                                         bytes: checked)
  parse_only X.pftrace                 read: target >= 5 M events/s

and the sizes: the .pftrace against the plain JSON (target <= 25%), and
both gzipped (gzip -6). MB/s is JSON input bytes (10^6) per second of wall
time and per second of CPU time (user and system: the writer's compression
threads and the sorter's spill thread count here too); peak RSS is the
largest of the best run. With --real DIR, every trace listed in
DIR/index.tsv is converted once and the sizes are reported per trace, with
the total. Files go to a temporary directory (under $TK_BENCH_DIR when
set) removed at exit.
EOF2
}

BENCH=pftrace.sh
REAL=""
bench_opt() {
	case "$1" in
	--real) REAL=${2:?--real needs a directory}; BENCH_USED=2 ;;
	esac
}
# shellcheck source=bench/common.sh
. "$(dirname "$0")/common.sh"
bench_parse "$@"
SIZE=${POS[0]:-1G}
BUILD_DIR=${POS[1]:-build}
bench_convert_setup tkpftrace
PF=$WORK/trace.pftrace

row() { # NAME WALL MED CPU KIB
	awk -v n="$1" -v w="$2" -v m="$3" -v c="$4" -v k="$5" -v b="$BYTES" 'BEGIN {
		if (w <= 0) w = 0.0005; if (c <= 0) c = 0.0005
		printf "%-40s %8.2f %8.2f %9.0f %9.0f %9.1f\n", n, w, m, b / 1e6 / w, b / 1e6 / c, k / 1024 }'
}
printf "%-40s %8s %8s %9s %9s %9s\n" case "best s" "median" "MB/s" "MB/cpu-s" "peak MiB"
OUT=/dev/null
measure cat "$IN"; row "cat (baseline)" "$WALL" "$MED" "$CPU" "$KIB"
OUT=$WORK/x.json
measure "$CONVERT" -q "$IN" -o "$OUT"; row "trace-convert -> .json (baseline)" "$WALL" "$MED" "$CPU" "$KIB"
OUT=$PF
measure "$CONVERT" -q --threads 1 "$IN" -o "$OUT"; row "trace-convert -> .pftrace, --threads 1" "$WALL" "$MED" "$CPU" "$KIB"
((RC == 0)) || { echo "$BENCH: trace-convert failed: $(cat "$LOG")" >&2; exit 1; }
W_CPU=$CPU
cp "$PF" "$WORK/one.pftrace"
measure "$CONVERT" -q "$IN" -o "$OUT"; row "trace-convert -> .pftrace" "$WALL" "$MED" "$CPU" "$KIB"
((RC == 0)) || { echo "$BENCH: trace-convert failed: $(cat "$LOG")" >&2; exit 1; }
cmp -s "$PF" "$WORK/one.pftrace" || { echo "$BENCH: the .pftrace differs between --threads 1 and the default" >&2; exit 1; }
rm -f "$WORK/one.pftrace"
OUT=$WORK/none
measure "$PARSE" "$PF"
READ_WALL=$WALL
printf "%-40s %8.2f %8.2f %9s %9s %9.1f  (%s M events/s)\n" "parse_only .pftrace" "$WALL" "$MED" - - \
	"$(awk -v k="$KIB" 'BEGIN { print k / 1024 }')" "$(awk -v e="${EVENTS:-0}" -v w="$READ_WALL" 'BEGIN { if (w <= 0) w = 0.0005; printf "%.2f", e / 1e6 / w }')"
PFB=$(stat -c %s "$PF")
GZJ=$(gzip -6 -c "$IN" | wc -c)
GZP=$(gzip -6 -c "$PF" | wc -c)
awk -v j="$BYTES" -v p="$PFB" -v gj="$GZJ" -v gp="$GZP" 'BEGIN {
	printf "size: json %d, pftrace %d (%.1f%% of json, target <= 25%%); gzip -6: json %d, pftrace %d\n", j, p, 100 * p / j, gj, gp }'
awk -v b="$BYTES" -v c="$W_CPU" 'BEGIN { if (c <= 0) c = 0.0005; printf "write: %.0f MB of JSON per CPU second (target >= 400)\n", b / 1e6 / c }'

if [[ -n $REAL ]]; then
	[[ -f $REAL/index.tsv ]] || { echo "$BENCH: $REAL/index.tsv not found" >&2; exit 1; }
	printf "\n%-80s %12s %12s %7s %10s %10s\n" trace json pftrace ratio "json.gz" "pftrace.gz"
	tail -n +2 "$REAL/index.tsv" | cut -f1,4 | while IFS=$'\t' read -r path unc; do
		"$CONVERT" -q "$REAL/$path" -o "$WORK/r.pftrace" 2>"$LOG" || { echo "$path: failed: $(cat "$LOG")"; continue; }
		p=$(stat -c %s "$WORK/r.pftrace")
		if [[ $path == *.gz ]]; then gj=$(stat -c %s "$REAL/$path"); else gj=$(gzip -6 -c "$REAL/$path" | wc -c); fi
		gp=$(gzip -6 -c "$WORK/r.pftrace" | wc -c)
		printf "%-80s %12d %12d %6.1f%% %10d %10d\n" "$path" "$unc" "$p" "$(awk -v a="$p" -v b="$unc" 'BEGIN { print 100 * a / b }')" "$gj" "$gp"
	done | tee "$WORK/real.txt"
	awk '{ j += $2; p += $3; gj += $5; gp += $6 } END { printf "%-80s %12d %12d %6.1f%% %10d %10d\n", "total", j, p, 100 * p / j, gj, gp }' "$WORK/real.txt"
fi
