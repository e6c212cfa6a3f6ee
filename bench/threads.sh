#!/usr/bin/env bash
# threads.sh: one trace parsed on 1, 2, 4 ... threads (--threads, docs/threads.md) against cat, zcat and igzip in the same go.
set -euo pipefail

usage() {
	cat <<'EOF2'
usage: bench/threads.sh [--repeat N] [--seed N] [--max-threads N] [SIZE] [BUILD_DIR]

Generates a Kineto trace of SIZE bytes (default 1G) with BUILD_DIR/bench/gen_trace
(BUILD_DIR defaults to "build"), compresses it with `gzip -6`, and measures each
case through rss_run (best of --repeat runs, median beside it) with --threads 1,
2, 4, ... up to the processors available (or --max-threads):

  baselines      cat TRACE.json, zcat and igzip -dc TRACE.json.gz; cat TRACE.json into
                 OUT.json, synced (what writing the bytes costs on this disk: the
                 tools sync a file before renaming it into place)
  parse_only     TRACE.json and TRACE.json.gz (the reader alone)
  trace-stats    -t ops,kernels,memcpy,api on TRACE.json and TRACE.json.gz
  json.gz rows   on 2 threads and more, parse_only and trace-stats on TRACE.json.gz also
                 with the gzip stream inflated in parts forced on (TK_GZIP_PARTS=2) and
                 off (TK_GZIP_PARTS=0); by default it is on from 8 threads
  trace-convert  TRACE.json -o OUT.json (json -> json), the same -o /dev/null (the
                 conversion without the disk), TRACE.json.gz -o OUT.json, and
                 TRACE.json -o OUT.json.gz (gzip output, level 6)
  .tkb           parse_only and trace-stats on TRACE.tkb and on TRACE.z.tkb (its
                 chunks compressed), both converted from TRACE.json once
  .pftrace       parse_only and trace-stats on TRACE.pftrace, converted from
                 TRACE.json once (the threads render the annotations' args)

MB/s counts the uncompressed bytes (the JSON's for the .tkb and .pftrace rows, which hold the
same events); "x1" is the speed against the same case on
one thread, measured in the same go; "peak MiB" is the run's peak RSS. The last
lines hold the issue's targets against what was measured.
Files go to a temporary directory (under $TK_BENCH_DIR when set) removed at exit.
EOF2
}

MAXT=""
bench_opt() {
	case "$1" in
	--max-threads) MAXT=${2:?--max-threads needs a value}; BENCH_USED=2 ;;
	esac
}

BENCH=threads.sh
# shellcheck source=bench/common.sh
. "$(dirname "$0")/common.sh"
bench_parse "$@"
SIZE=${POS[0]:-1G}
BUILD_DIR=${POS[1]:-build}
STATS=$BUILD_DIR/tools/trace-stats
bench_need "$STATS"
bench_convert_setup tkthreads
"$CONVERT" --version | tail -n 1
bench_gzip_input
CPUS=$(nproc)
[[ -n $MAXT ]] && CPUS=$MAXT
THREADS=(1)
for ((t = 2; t <= CPUS; t *= 2)); do THREADS+=("$t"); done
((THREADS[-1] == CPUS)) || THREADS+=("$CPUS")
echo "threads: ${THREADS[*]} (processors: $(nproc))"
TKB=$WORK/trace.tkb
ZTKB=$WORK/trace.z.tkb
PFT=$WORK/trace.pftrace
"$CONVERT" -q --threads 1 "$IN" -o "$TKB"
"$CONVERT" -q --threads 1 "$IN" -o "$PFT"
"$CONVERT" -q --threads 1 "$IN" -o "$ZTKB" --compress

declare -A SPEED PEAK
row() { # NAME THREADS WALL MED KIB
	local base=${SPEED["$1/1"]:-}
	awk -v n="$1" -v t="$2" -v w="$3" -v m="$4" -v k="$5" -v b="$BYTES" -v s="$base" 'BEGIN {
		if (w <= 0) w = 0.0005
		printf "%-34s %3s %7.2f %7.2f %8.0f %6s %8.1f\n", n, t, w, m, b / 1e6 / w,
			s == "" ? "" : sprintf("%.2f", (b / 1e6 / w) / s), k / 1024 }'
}
run() { # NAME THREADS CMD...
	local name=$1 t=$2
	shift 2
	measure "$@"
	((RC == 0)) || { echo "$BENCH: $name failed: $(cat "$LOG")" >&2; exit 1; }
	SPEED["$name/$t"]=$(awk -v w="$WALL" -v b="$BYTES" 'BEGIN { if (w <= 0) w = 0.0005; print b / 1e6 / w }')
	PEAK["$name/$t"]=$KIB
	row "$name" "$t" "$WALL" "$MED" "$KIB"
}

printf "%-34s %3s %7s %7s %8s %6s %8s\n" case thr "best s" median "MB/s" x1 "peak MiB"
OUT=/dev/null
run "cat TRACE.json" - cat "$IN"
run "zcat TRACE.json.gz" - zcat "$GZ"
[[ -n $IGZIP ]] && run "igzip -dc TRACE.json.gz" - "$IGZIP" -dc "$GZ"
OUT=$WORK/out.json
# shellcheck disable=SC2016
run "cat TRACE.json > OUT.json, synced" - sh -c 'cat "$1" > "$2" && sync "$2"' sh "$IN" "$OUT"
for t in "${THREADS[@]}"; do
	OUT=/dev/null
	run "parse_only json" "$t" "$PARSE" --threads "$t" "$IN"
	run "parse_only json.gz" "$t" "$PARSE" --threads "$t" "$GZ"
	run "trace-stats json" "$t" "$STATS" -q -t ops,kernels,memcpy,api --threads "$t" "$IN"
	run "trace-stats json.gz" "$t" "$STATS" -q -t ops,kernels,memcpy,api --threads "$t" "$GZ"
	if ((t > 1)); then
		# the gzip stream inflated in parts on threads (docs/gzip.md: from 8 threads by default),
		# forced on and off
		for p in 2 0; do
			w=$([[ $p == 0 ]] && echo "one stream" || echo "in parts")
			run "parse_only json.gz, $w" "$t" env TK_GZIP_PARTS=$p "$PARSE" --threads "$t" "$GZ"
			run "trace-stats json.gz, $w" "$t" env TK_GZIP_PARTS=$p "$STATS" -q -t ops,kernels,memcpy,api \
				--threads "$t" "$GZ"
		done
	fi
	run "parse_only tkb" "$t" "$PARSE" --threads "$t" "$TKB"
	run "parse_only tkb (compressed)" "$t" "$PARSE" --threads "$t" "$ZTKB"
	run "trace-stats tkb" "$t" "$STATS" -q -t ops,kernels,memcpy,api --threads "$t" "$TKB"
	run "trace-stats tkb (compressed)" "$t" "$STATS" -q -t ops,kernels,memcpy,api --threads "$t" "$ZTKB"
	run "parse_only pftrace" "$t" "$PARSE" --threads "$t" "$PFT"
	run "trace-stats pftrace" "$t" "$STATS" -q -t ops,kernels,memcpy,api --threads "$t" "$PFT"
	OUT=$WORK/out.json
	run "trace-convert json -> json" "$t" "$CONVERT" -q --threads "$t" "$IN" -o "$OUT"
	run "trace-convert json -> /dev/null" "$t" "$CONVERT" -q --threads "$t" "$IN" -o /dev/null
	run "trace-convert json.gz -> json" "$t" "$CONVERT" -q --threads "$t" "$GZ" -o "$OUT"
	OUT=$WORK/out.json.gz
	run "trace-convert json -> json.gz" "$t" "$CONVERT" -q --threads "$t" "$IN" -o "$OUT"
done
rm -f "$WORK/out.json" "$WORK/out.json.gz"

echo "-- targets (docs/threads.md)"
target() { # TEXT VALUE GOAL
	awk -v n="$1" -v v="$2" -v g="$3" 'BEGIN { printf "%-60s %6.2f  (>= %s) %s\n", n, v, g, (v >= g ? "met" : "NOT met") }'
}
for c in "trace-stats json" "trace-convert json -> json" "trace-convert json -> /dev/null"; do
	for t in "${THREADS[@]}"; do
		((t > 1)) || continue
		goal=$(awk -v t="$t" 'BEGIN { print (t == 2 ? 1.7 : 0.8 * (t > 8 ? 8 : t)) }')
		target "$c: $t threads against one" "$(awk -v a="${SPEED["$c/$t"]}" -v b="${SPEED["$c/1"]}" 'BEGIN { print a / b }')" "$goal"
	done
done
T=${THREADS[-1]}
for c in "trace-stats" "trace-convert"; do
	a=${SPEED["$c json.gz/$T"]:-${SPEED["$c json.gz -> json/$T"]:-0}}
	b=${SPEED["$c json/$T"]:-${SPEED["$c json -> json/$T"]:-1}}
	target "$c: .json.gz against the plain JSON, $T threads" "$(awk -v a="$a" -v b="$b" 'BEGIN { print a / b }')" 0.9
done
for c in "trace-stats json" "trace-convert json -> json"; do
	mib=$(awk -v k="${PEAK["$c/$T"]}" 'BEGIN { print k / 1024 }')
	lim=$((64 + 16 * T))
	awk -v n="$c: peak MiB on $T threads" -v v="$mib" -v g="$lim" 'BEGIN { printf "%-60s %6.1f  (<= %s) %s\n", n, v, g, (v <= g ? "met" : "NOT met") }'
done

# where the time went: each thread's processor time, grouped by the thread's name
# (rss_run --threads-cpu; the main thread has the program's name), one run each on
# the most threads: a thread whose time is close to the wall time is what bounds the case
echo "-- processor seconds by thread on $T threads (one run each; wall time first)"
cpu_row() { # NAME CMD...
	local name=$1 line
	shift
	"$RSS" --threads-cpu "$@" >/dev/null 2>"$LOG" || { echo "$BENCH: $name failed: $(cat "$LOG")" >&2; exit 1; }
	line=$(grep '^wall_s=' "$LOG" | tail -n 1)
	line=${line#wall_s=}
	printf "%-34s %7.2f  %s\n" "$name" "${line%% *}" "$(grep -o 'threads_cpu_s .*' "$LOG" | tail -n 1 | cut -d' ' -f2-)"
}
cpu_row "trace-stats json" "$STATS" -q -t ops,kernels,memcpy,api --threads "$T" "$IN"
cpu_row "trace-stats json.gz" "$STATS" -q -t ops,kernels,memcpy,api --threads "$T" "$GZ"
cpu_row "trace-stats json.gz, in parts" env TK_GZIP_PARTS=2 "$STATS" -q -t ops,kernels,memcpy,api --threads "$T" "$GZ"
cpu_row "trace-stats json.gz, one stream" env TK_GZIP_PARTS=0 "$STATS" -q -t ops,kernels,memcpy,api --threads "$T" "$GZ"
cpu_row "trace-stats tkb" "$STATS" -q -t ops,kernels,memcpy,api --threads "$T" "$TKB"
cpu_row "trace-stats pftrace" "$STATS" -q -t ops,kernels,memcpy,api --threads "$T" "$PFT"
cpu_row "trace-convert json -> json" "$CONVERT" -q --threads "$T" "$IN" -o /dev/null
cpu_row "trace-convert json -> json.gz" "$CONVERT" -q --threads "$T" "$IN" -o "$WORK/out.json.gz"
rm -f "$WORK/out.json.gz"
