#!/usr/bin/env bash
# gzip.sh: gzip input and output through ISA-L, libdeflate and zlib (TK_GZIP=zlib) against zcat, igzip, gzip and the plain JSON.
set -euo pipefail

usage() {
	cat <<'EOF2'
usage: bench/gzip.sh [--repeat N] [--seed N] [SIZE] [BUILD_DIR]

Generates a Kineto trace of SIZE bytes (default 1G) with BUILD_DIR/bench/gen_trace
(BUILD_DIR defaults to "build"), compresses it with `gzip -6`, and measures, each
run through rss_run (best of --repeat runs, median beside it). MB/s counts the
uncompressed bytes.

  reading   cat TRACE.json, zcat TRACE.json.gz, igzip -dc TRACE.json.gz (baselines)
            parse_only, trace-stats and trace-convert (json -> /dev/null) on the
            plain JSON, on the .gz, and on the .gz with TK_GZIP=zlib
  writing   gzip -6 and igzip -1/-3 (baselines); trace-convert TRACE.json -o
            OUT.json.gz at --gzip-level 1, 3, 6 and 9, with and without TK_GZIP=zlib;
            the output's size against the JSON
  target    gzip output at level 6's size at least twice as fast as
            zlib's level 6 (TK_GZIP=zlib, what every build wrote before ISA-L
            and libdeflate), with the two sizes

igzip is Debian's `isal` package; its rows are left out where it is missing.
Files go to a temporary directory (under $TK_BENCH_DIR when set) removed at exit.
EOF2
}

BENCH=gzip.sh
# shellcheck source=bench/common.sh
. "$(dirname "$0")/common.sh"
bench_parse "$@"
SIZE=${POS[0]:-1G}
BUILD_DIR=${POS[1]:-build}
STATS=$BUILD_DIR/tools/trace-stats
bench_need "$STATS"
bench_convert_setup tkgzip
"$CONVERT" --version | tail -n 1
bench_gzip_input

row() { # NAME WALL MED CPU KIB [SIZE]
	awk -v n="$1" -v w="$2" -v m="$3" -v c="$4" -v k="$5" -v b="$BYTES" -v s="${6:-}" 'BEGIN {
		if (w <= 0) w = 0.0005; if (c <= 0) c = 0.0005
		printf "%-46s %7.2f %7.2f %8.0f %9.0f %8.1f %s\n", n, w, m, b / 1e6 / w, b / 1e6 / c, k / 1024,
			s == "" ? "" : sprintf("%.1f%%", 100 * s / b) }'
}
run() { # NAME CMD...: measured, with $OUT as its output file
	local name=$1
	shift
	measure "$@"
	((RC == 0)) || { echo "$BENCH: $name failed: $(cat "$LOG")" >&2; exit 1; }
	local size=""
	[[ $OUT == "$WORK"/* && -f $OUT ]] && size=$(stat -c %s "$OUT")
	row "$name" "$WALL" "$MED" "$CPU" "$KIB" "$size"
}

printf "%-46s %7s %7s %8s %9s %8s %s\n" case "best s" median "MB/s" "MB/cpu-s" "peak MiB" "size"
echo "-- reading"
OUT=/dev/null
run "cat TRACE.json" cat "$IN"
run "zcat TRACE.json.gz" zcat "$GZ"
[[ -n $IGZIP ]] && run "igzip -dc TRACE.json.gz" "$IGZIP" -dc "$GZ"
for what in parse_only trace-stats trace-convert; do
	case $what in
	parse_only) cmd=("$PARSE") ;;
	trace-stats) cmd=("$STATS" -q -t ops,kernels) ;;
	trace-convert) cmd=("$CONVERT" -q --to json -o /dev/null) ;;
	esac
	run "$what TRACE.json" "${cmd[@]}" "$IN"
	run "$what TRACE.json.gz" "${cmd[@]}" "$GZ"
	run "$what TRACE.json.gz (TK_GZIP=zlib)" env TK_GZIP=zlib "${cmd[@]}" "$GZ"
done
echo "-- writing"
OUT=$WORK/out.json.gz
run "gzip -6" sh -c 'gzip -6 -c "$1" >"$2"' sh "$IN" "$OUT"
if [[ -n $IGZIP ]]; then
	run "igzip -1" sh -c '"$0" -1 -c "$1" >"$2"' "$IGZIP" "$IN" "$OUT"
	run "igzip -3" sh -c '"$0" -3 -c "$1" >"$2"' "$IGZIP" "$IN" "$OUT"
fi
run "trace-convert -o x.json (no gzip)" "$CONVERT" -q "$IN" -o "$WORK/out.json"
rm -f "$WORK/out.json"
for level in 1 3 6 9; do
	run "trace-convert --gzip-level $level" "$CONVERT" -q --gzip-level $level "$IN" -o "$OUT"
	[[ $level == 6 ]] && best6=$WALL size6=$(stat -c %s "$OUT")
	run "trace-convert --gzip-level $level (TK_GZIP=zlib)" env TK_GZIP=zlib "$CONVERT" -q --gzip-level $level "$IN" -o "$OUT"
	[[ $level == 6 ]] && zlib6=$WALL zsize6=$(stat -c %s "$OUT")
done
echo "-- target"
awk -v b="$best6" -v z="$zlib6" -v s="$size6" -v t="$zsize6" 'BEGIN {
	printf "gzip output, level 6 against zlib'"'"'s level 6: %.2fx as fast (target 2x), size %.1f%% of zlib'"'"'s\n",
		z / b, 100 * s / t }'
