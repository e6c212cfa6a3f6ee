# common.sh: sourced by the benchmark scripts: options, tools, the work directory, runs through rss_run.
# The script sets BENCH (its name) and defines usage() before sourcing, and
# may define bench_opt(), which takes its own options: it sets BENCH_USED to
# how many arguments it used (0: not its option).

REPEAT=1
SEED=${TK_BENCH_SEED:-1}
POS=()

# bench_parse "$@": --help, --repeat, --seed, the script's options; the rest in POS.
bench_parse() {
	while (($#)); do
		case "$1" in
		-h | --help) usage; exit 0 ;;
		--repeat) REPEAT=${2:?--repeat needs a value}; shift 2 ;;
		--repeat=*) REPEAT=${1#*=}; shift ;;
		--seed) SEED=${2:?--seed needs a value}; shift 2 ;;
		-*)
			BENCH_USED=0
			if declare -F bench_opt >/dev/null; then bench_opt "$@"; fi
			((BENCH_USED > 0)) || { echo "$BENCH: unknown option $1" >&2; usage >&2; exit 2; }
			shift "$BENCH_USED"
			;;
		*) POS+=("$1"); shift ;;
		esac
	done
	[[ $REPEAT =~ ^[1-9][0-9]*$ ]] || { echo "$BENCH: --repeat must be a positive integer" >&2; exit 2; }
}

# bench_need PROGRAM...: each must be built.
bench_need() {
	local t
	for t in "$@"; do
		[[ -x $t ]] || { echo "$BENCH: $t not found: build first (cmake --build ${BUILD_DIR:-build})" >&2; exit 1; }
	done
}

# bench_workdir PREFIX: WORK, a fresh directory (under $TK_BENCH_DIR when set) removed at exit.
bench_workdir() {
	if [[ -n ${TK_BENCH_DIR:-} ]]; then
		mkdir -p "$TK_BENCH_DIR"
		WORK=$(mktemp -d "$TK_BENCH_DIR/$1.XXXXXX")
	else
		WORK=$(mktemp -d "${TMPDIR:-/tmp}/$1.XXXXXX")
	fi
	trap 'rm -rf "$WORK"' EXIT
	trap 'exit 130' INT TERM
}

# measure CMD...: runs it through $RSS REPEAT times, with $OUT removed before
# each run when it lies in $WORK (never anything else: OUT=/dev/null is
# common, and as root rm would replace the device with a regular file by
# the next write), and `sync` run when SYNC_BEFORE=1; its stderr goes to $LOG. Sets
# WALL (the best wall time), MED (the median), KIB and CPU (the best run's
# peak RSS and CPU seconds, user and system) and RC (0, or the first failing
# run's status).
measure() {
	local walls=() kib=0 cpu=0 best="" rc=0 i line w k c
	for ((i = 0; i < REPEAT; i++)); do
		case $OUT in "$WORK"/*) rm -rf "$OUT" ;; esac
		[[ ${SYNC_BEFORE:-0} == 1 ]] && sync
		set +e
		"$RSS" "$@" >/dev/null 2>"$LOG"
		set -e
		line=$(grep '^wall_s=' "$LOG" | tail -n 1 || true)
		[[ -n $line ]] || { rc=127; break; }
		rc=${line##*rc=}
		((rc == 0)) || break
		w=${line#wall_s=}; w=${w%% *}
		k=${line#*max_rss_kib=}; k=${k%% *}
		c=0
		[[ $line == *cpu_s=* ]] && { c=${line#*cpu_s=}; c=${c%% *}; }
		walls+=("$w")
		if [[ -z $best ]] || awk -v a="$w" -v b="$best" 'BEGIN { exit !(a < b) }'; then
			best=$w
			kib=$k
			cpu=$c
		fi
	done
	WALL=${best:-0}
	MED=$(printf '%s\n' "${walls[@]:-0}" | sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }')
	KIB=$kib
	CPU=$cpu
	RC=$rc
}

# bench_convert_setup PREFIX: the tools of a trace-convert benchmark from
# $BUILD_DIR (GEN, RSS, PARSE, CONVERT, all needed), the work directory
# (bench_workdir PREFIX), LOG, and IN: a generated trace of $SIZE bytes
# (--seed $SEED), with BYTES and EVENTS set and both printed with the load.
bench_convert_setup() {
	GEN=$BUILD_DIR/bench/gen_trace
	RSS=$BUILD_DIR/bench/rss_run
	PARSE=$BUILD_DIR/bench/parse_only
	CONVERT=$BUILD_DIR/tools/trace-convert
	bench_need "$GEN" "$RSS" "$PARSE" "$CONVERT"
	bench_workdir "$1"
	LOG=$WORK/stderr.log
	IN=$WORK/trace.json
	"$GEN" --seed "$SEED" --size "$SIZE" -q -o "$IN"
	BYTES=$(stat -c %s "$IN")
	EVENTS=$("$PARSE" "$IN" 2>/dev/null | sed -n 's/^events=\([0-9]*\).*/\1/p')
	echo "input: $IN, $BYTES bytes, ${EVENTS:-?} events (gen_trace --seed $SEED --size $SIZE)"
	awk '{ print "load average: " $1 " " $2 " " $3 }' /proc/loadavg
}

# bench_gzip_input: GZ, the input compressed by gzip -6 (its size printed),
# and IGZIP, igzip's path or empty where it is missing.
bench_gzip_input() {
	GZ=$WORK/trace.json.gz
	gzip -6 -c "$IN" >"$GZ"
	echo "gzip -6: $(stat -c %s "$GZ") bytes"
	IGZIP=$(command -v igzip || true)
}

# bench_table_head: the header of a table of runs over $BYTES, and
# bench_row NAME after each measure: its best and median seconds, MB/s of
# wall and of CPU time, and peak RSS in MiB.
bench_table_head() {
	printf "%-44s %8s %8s %9s %11s %9s\n" case "best s" "median" "MB/s" "MB/cpu-s" "peak MiB"
}
bench_row() {
	awk -v n="$1" -v w="$WALL" -v m="$MED" -v c="$CPU" -v k="$KIB" -v b="$BYTES" 'BEGIN {
		if (w <= 0) w = 0.0005; if (c <= 0) c = 0.0005
		printf "%-44s %8.2f %8.2f %9.0f %11.0f %9.1f\n", n, w, m, b / 1e6 / w, b / 1e6 / c, k / 1024 }'
}
