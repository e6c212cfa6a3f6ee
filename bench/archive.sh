#!/usr/bin/env bash
# archive.sh: throughput and peak-RSS benchmark of reading traces from archives (.tar, .tar.gz, .zip) against the same traces as files.
set -euo pipefail

usage() {
	cat <<'EOF'
usage: bench/archive.sh [--repeat N] [--seed N] [--ranks N] [SIZE] [BUILD_DIR]

Generates N ranks (default 4) of SIZE bytes each (default 256M) with
BUILD_DIR/bench/gen_trace (BUILD_DIR defaults to "build"), gzips each with
`gzip -6 -k`, and packs the plain .json files as a .tar, a .tar.gz (gzip -6)
and a .zip (deflated, level 6, with python3's zipfile). Each archive is then
compared with the same traces read as files, like with like:

  .tar     the .json files       target >= 0.95x, peak RSS unchanged
  .tar.gz  the .json.gz files    target >= 0.9x,  peak RSS unchanged
  .zip     the .json.gz files    target >= 0.9x,  peak RSS unchanged

in these cases (each run through rss_run, the file and the archive runs
alternating pair by pair, with `sync` run before each):

  cat / zcat / unzip -p           baselines: reading (and inflating) the bytes
  parse_only FILE, ARCHIVE//M     each member on its own, the times summed
  trace-stats INPUTS -o /dev/null every member, each a rank
  trace-merge INPUTS -o OUT.json  every member, each a rank

MB/s is uncompressed trace bytes (10^6) per wall-clock second; "archive/files"
is the archive's MB/s over the files'. With --repeat N each case runs N times
on each side: the fastest run and the median are reported, the ratio of both,
the ratio of the median CPU times (user and system: files' over archive's,
steadier than wall time when other jobs share the cores), and the largest
peak RSS of each side. The targets are judged on the ratio of the medians.

A member of a .tar.gz has no offset of its own: ARCHIVE//M inflates every
member before it, so the per-member parse_only of a .tar.gz inflates about
(N+1)/2 times the bytes and has no target.

Before the table every file is dropped from the page cache and read again,
so that the cache holds the files and the archives alike, and every member
is read once from each archive and checked against its file (events, bytes);
after each trace-merge the outputs from the archive and from the files are
compared (the "file" names in the ranks' metadata aside). Files go to a
temporary directory (under $TK_BENCH_DIR when set) removed at exit. The load
average is printed before and after: other jobs on the machine slow either side.
EOF
}

BENCH=archive.sh
RANKS=4
bench_opt() {
	case "$1" in
	--ranks) RANKS=${2:?--ranks needs a value}; BENCH_USED=2 ;;
	esac
}
# shellcheck source=bench/common.sh
. "$(dirname "$0")/common.sh"
bench_parse "$@"
SIZE=${POS[0]:-256M}
BUILD_DIR=${POS[1]:-build}
[[ $RANKS =~ ^[1-9][0-9]*$ ]] || { echo "$BENCH: --ranks must be a positive integer" >&2; exit 2; }

GEN=$BUILD_DIR/bench/gen_trace
RSS=$BUILD_DIR/bench/rss_run
PARSE=$BUILD_DIR/bench/parse_only
STATS=$BUILD_DIR/tools/trace-stats
MERGE=$BUILD_DIR/tools/trace-merge
bench_need "$GEN" "$RSS" "$PARSE" "$STATS" "$MERGE"
command -v python3 >/dev/null || { echo "$BENCH: python3 is needed to write the .zip" >&2; exit 1; }
bench_workdir tkarchive

DIR=$WORK/files
TAR=$WORK/traces.tar
TGZ=$WORK/traces.tar.gz
ZIP=$WORK/traces.zip
LOG=$WORK/stderr.log
OUT_F=$WORK/merged-files.json
OUT_A=$WORK/merged-archive.json
SYNC_BEFORE=1

mbps() { awk -v b="$1" -v s="$2" 'BEGIN { if (s <= 0) s = 0.0005; printf "%.0f", b / 1e6 / s }'; }
mib() { awk -v k="$1" 'BEGIN { printf "%.1f", k / 1024 }'; }
# ratio FILES_S ARCHIVE_S: the archive's throughput over the files'
ratio() { awk -v f="$1" -v a="$2" 'BEGIN { if (a <= 0) a = 0.0005; printf "%.2fx", f / a }'; }

ROW_FMT="%-30s %6s %6s  %6s %6s  %6s %6s %6s  %7s %7s  %-9s %s\n"
MISSED=0
FAILED=0

# side F|A: one run of FCMD (the files) or ACMD (the archive) through
# measure, its output being OUT_F or OUT_A; the wall and CPU times go to the
# side's lists, the largest peak RSS is kept.
side() {
	local -n side_walls=${1}_WALLS side_cpus=${1}_CPUS side_kib=${1}_KIB
	local which=$1
	((RC == 0)) || return 0
	if [[ $which == F ]]; then
		OUT=$OUT_F
		measure "${FCMD[@]}"
	else
		OUT=$OUT_A
		measure "${ACMD[@]}"
	fi
	((RC == 0)) || { FAIL_SIDE=$which; return 0; }
	side_walls+=("$WALL")
	side_cpus+=("$CPU")
	((KIB > side_kib)) && side_kib=$KIB
	return 0
}

best() { printf '%s\n' "$@" | sort -g | head -n 1; }
median() { printf '%s\n' "$@" | sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }

# pair NAME BYTES TARGET: FCMD against ACMD, REPEAT runs each, alternating
# (files first on even runs, the archive first on odd ones). TARGET is the
# least ratio of the medians, 0 for a baseline, "-" for none.
pair() {
	local name=$1 bytes=$2 target=$3 rep=$REPEAT i
	F_WALLS=() A_WALLS=() F_CPUS=() A_CPUS=() F_KIB=0 A_KIB=0 RC=0 FAIL_SIDE=""
	REPEAT=1
	for ((i = 0; i < rep; i++)); do
		if ((i % 2 == 0)); then side F; side A; else side A; side F; fi
	done
	REPEAT=$rep
	if [[ -n $FAIL_SIDE ]]; then
		local which=files
		[[ $FAIL_SIDE == A ]] && which=archive
		printf "$ROW_FMT" "$name" "-" "-" "-" "-" "-" "-" "-" "-" "-" "" "FAILED ($which, rc=$RC)"
		sed 's/^/    | /' "$LOG" | tail -n 5
		FAILED=1
		return
	fi
	local fb fm ab am status=baseline tcol=""
	fb=$(best "${F_WALLS[@]}")
	fm=$(median "${F_WALLS[@]}")
	ab=$(best "${A_WALLS[@]}")
	am=$(median "${A_WALLS[@]}")
	if [[ $target == - ]]; then
		status="no target"
	elif [[ $target != 0 ]]; then
		tcol=">= ${target}x"
		status=ok
		awk -v a="$am" -v f="$fm" -v t="$target" 'BEGIN { exit !(f >= t * a) }' || status=MISS
		# peak RSS unchanged: within 4 MiB or 5% of the files' (libarchive's buffers)
		awk -v a="$A_KIB" -v f="$F_KIB" 'BEGIN { exit !(a <= f + 4096 || a <= f * 1.05) }' || status=MISS
	fi
	[[ $status == MISS ]] && MISSED=1
	printf "$ROW_FMT" "$name" "$(mbps "$bytes" "$fb")" "$(mbps "$bytes" "$fm")" "$(mbps "$bytes" "$ab")" \
		"$(mbps "$bytes" "$am")" "$(ratio "$fb" "$ab")" "$(ratio "$fm" "$am")" \
		"$(ratio "$(median "${F_CPUS[@]}")" "$(median "${A_CPUS[@]}")")" "$(mib "$F_KIB")" "$(mib "$A_KIB")" \
		"$tcol" "$status"
}

# check_merge WHAT: the last trace-merge outputs from the files and from the archive hold the same bytes,
# the source names in the ranks' metadata ("file":"...") aside.
check_merge() {
	if [[ ! -s $OUT_F || ! -s $OUT_A ]]; then
		echo "    check: FAILED: no trace-merge output to compare"
		FAILED=1
	elif cmp -s <(sed -E 's/"file":"[^"]*"/"file":""/g' "$OUT_F") <(sed -E 's/"file":"[^"]*"/"file":""/g' "$OUT_A"); then
		echo "    check: trace-merge of the $1 wrote the same $(stat -c %s "$OUT_A") bytes as of the files (file names aside)"
	else
		echo "    check: FAILED: trace-merge of the $1 and of the files wrote different traces"
		FAILED=1
	fi
	rm -f "$OUT_F" "$OUT_A"
}

# events_of PATH: "events bytes_decoded" as parse_only reports them.
events_of() {
	"$PARSE" "$1" | sed -n 's/^events=\([0-9]*\) .*bytes_decoded=\([0-9]*\) .*/\1 \2/p'
}

echo "generating $RANKS ranks of $SIZE (seed $SEED) in $WORK ..."
mkdir -p "$DIR" "$WORK/tmp"
"$GEN" --seed "$SEED" --size "$SIZE" --ranks "$RANKS" -q -o "$DIR/rank%d.json"
MEMBERS=()
for ((r = 0; r < RANKS; r++)); do
	MEMBERS+=("rank$r.json")
	gzip -6 -k "$DIR/rank$r.json"
done
JSONS=("${MEMBERS[@]/#/$DIR/}")
GZS=("${JSONS[@]/%/.gz}")
tar -C "$DIR" -cf "$TAR" "${MEMBERS[@]}"
tar -C "$DIR" -cf - "${MEMBERS[@]}" | gzip -6 >"$TGZ"
python3 - "$ZIP" "$DIR" "${MEMBERS[@]}" <<'PY'
import os, sys, zipfile
with zipfile.ZipFile(sys.argv[1], "w", zipfile.ZIP_DEFLATED, compresslevel=6) as z:
    for m in sys.argv[3:]:
        z.write(os.path.join(sys.argv[2], m), m)
PY
IN_BYTES=$(cat "${JSONS[@]}" | wc -c)
GZ_BYTES=$(cat "${GZS[@]}" | wc -c)

# Every file's pages are dropped from the page cache (written back first) and
# read again: the cache then holds each file as read-ahead lays it out. As
# written it would not be alike: a file written in small blocks (tar writes
# 10 KiB records) sits in small folios, which cost up to 10% more CPU time
# to read than the large ones of a file written in large blocks.
sync
for f in "${JSONS[@]}" "${GZS[@]}" "$TAR" "$TGZ" "$ZIP"; do
	dd if="$f" iflag=nocache count=0 status=none 2>/dev/null || true
	cat "$f" >/dev/null
done

# One read of every member from every archive: warms the page cache and
# checks that each archive gives the member's events and bytes.
EVENTS=0
for m in "${MEMBERS[@]}"; do
	want=$(events_of "$DIR/$m")
	EVENTS=$((EVENTS + ${want%% *}))
	for a in "$TAR" "$TGZ" "$ZIP"; do
		got=$(events_of "$a//$m")
		[[ $got == "$want" ]] || { echo "$BENCH: $a//$m: events and bytes '$got', the file's '$want'" >&2; exit 1; }
	done
done
echo "input: $RANKS members, $IN_BYTES bytes of JSON, $EVENTS events; files .json.gz $GZ_BYTES bytes," \
	".tar $(stat -c %s "$TAR"), .tar.gz $(stat -c %s "$TGZ"), .zip $(stat -c %s "$ZIP") bytes"
echo "check: every member read from the .tar, .tar.gz and .zip gives the events and bytes of its file"
loadavg() { cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo "?"; }
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | sed 's/.*: //'), $REPEAT run(s) per side," \
	"load average $(loadavg)"
echo
printf "%-30s  %-13s  %-13s  %-20s  %s\n" "" "--- files ---" "-- archive --" "--- archive/files --" "peak RSS, MiB"
printf "$ROW_FMT" "case" "MB/s" "median" "MB/s" "median" "best" "median" "CPU" "files" "archive" "target" "status"
printf "$ROW_FMT" "----" "----" "------" "----" "------" "----" "------" "---" "-----" "-------" "------" "------"

# the per-member loop: parse_only on each argument in turn
EACH=(sh -c 'p=$1; shift; for f; do "$p" "$f" >/dev/null || exit; done' sh "$PARSE")
MOPT=(-q --tmpdir "$WORK/tmp")

FCMD=(cat "${JSONS[@]}") ACMD=(cat "$TAR")
pair "cat (baseline)" "$IN_BYTES" 0
FCMD=("${EACH[@]}" "${JSONS[@]}") ACMD=("${EACH[@]}" "${MEMBERS[@]/#/$TAR//}")
pair "parse_only .tar//member" "$IN_BYTES" 0.95
FCMD=("$STATS" "${JSONS[@]}" -o /dev/null) ACMD=("$STATS" "$TAR" -o /dev/null)
pair "trace-stats .tar" "$IN_BYTES" 0.95
FCMD=("$MERGE" "${JSONS[@]}" -o "$OUT_F" "${MOPT[@]}") ACMD=("$MERGE" "$TAR" -o "$OUT_A" "${MOPT[@]}")
pair "trace-merge .tar" "$IN_BYTES" 0.95
check_merge .tar

FCMD=(zcat "${GZS[@]}") ACMD=(zcat "$TGZ")
pair "zcat (baseline)" "$IN_BYTES" 0
FCMD=("${EACH[@]}" "${GZS[@]}") ACMD=("${EACH[@]}" "${MEMBERS[@]/#/$TGZ//}")
pair "parse_only .tar.gz//member" "$IN_BYTES" -
FCMD=("$STATS" "${GZS[@]}" -o /dev/null) ACMD=("$STATS" "$TGZ" -o /dev/null)
pair "trace-stats .tar.gz" "$IN_BYTES" 0.9
FCMD=("$MERGE" "${GZS[@]}" -o "$OUT_F" "${MOPT[@]}") ACMD=("$MERGE" "$TGZ" -o "$OUT_A" "${MOPT[@]}")
pair "trace-merge .tar.gz" "$IN_BYTES" 0.9
check_merge .tar.gz

if command -v unzip >/dev/null; then
	FCMD=(zcat "${GZS[@]}") ACMD=(unzip -p "$ZIP")
	pair "zcat / unzip -p (baseline)" "$IN_BYTES" 0
else
	printf "$ROW_FMT" "zcat / unzip -p (baseline)" "-" "-" "-" "-" "-" "-" "-" "-" "-" "" "skipped (no unzip)"
fi
FCMD=("${EACH[@]}" "${GZS[@]}") ACMD=("${EACH[@]}" "${MEMBERS[@]/#/$ZIP//}")
pair "parse_only .zip//member" "$IN_BYTES" 0.9
FCMD=("$STATS" "${GZS[@]}" -o /dev/null) ACMD=("$STATS" "$ZIP" -o /dev/null)
pair "trace-stats .zip" "$IN_BYTES" 0.9
FCMD=("$MERGE" "${GZS[@]}" -o "$OUT_F" "${MOPT[@]}") ACMD=("$MERGE" "$ZIP" -o "$OUT_A" "${MOPT[@]}")
pair "trace-merge .zip" "$IN_BYTES" 0.9
check_merge .zip
echo
echo "load average at the end: $(loadavg) (other jobs on the machine slow either side)"
((MISSED)) && echo "some targets were missed (MISS)"
((FAILED)) && exit 1
exit 0
