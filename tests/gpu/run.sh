#!/bin/sh
# run.sh: the collector's checks that need a GPU. Usage: tests/gpu/run.sh BUILD_DIR [RUNS]
# 1. every kernel launched is in the .tkb (count of "kernel" events == launches);
# 2. the schedule keeps only its active steps;
# 3. overhead on a launch-bound microbenchmark: median of RUNS traced runs
#    against median of RUNS plain runs (target: at most 2%).
set -eu
build=${1:?usage: run.sh BUILD_DIR [RUNS]}
runs=${2:-5}
bench=$build/tests/gpu/launch_bench
collect=$build/collector/trace-collect
convert=$build/tools/trace-convert
out=$(mktemp -d /tmp/tkc_gpu.XXXXXX)
fail=0

count_kernels() { # the JSON of every .tkb in $1, counted by category
	n=0
	for f in "$1"/*.tkb; do
		"$convert" "$f" -o "$f.json"
		c=$(grep -o '"cat":"kernel"' "$f.json" | wc -l)
		n=$((n + c))
	done
	echo "$n"
}
field() { sed -n "s/.*\"$1\":\([0-9.]*\).*/\1/p"; }

# 1. kernel count
line=$("$collect" -q -o "$out/all" -- "$bench" 20 5000)
want=$(echo "$line" | field kernels)
got=$(count_kernels "$out/all")
echo "kernels launched: $want, kernel events in .tkb: $got"
[ "$want" = "$got" ] || { echo "FAIL: kernel count"; fail=1; }

# 2. schedule: 20 steps, skip 2, wait 1, warmup 1, active 3, repeat 2 -> 6 active steps
"$collect" -q -o "$out/sched" --schedule skip_first=2,wait=1,warmup=1,active=3,repeat=2 -- \
	"$bench" 20 1000 >/dev/null
got=$(count_kernels "$out/sched")
echo "schedule: kernel events $got (expected 6 steps x 1000 = 6000, give or take the window edges)"
[ "$got" -ge 5900 ] && [ "$got" -le 6100 ] || { echo "FAIL: schedule"; fail=1; }

# 3. overhead, launch-bound
median() { sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
base=$(for i in $(seq "$runs"); do "$bench" 20 10000 | field seconds; done | median)
traced=$(for i in $(seq "$runs"); do "$collect" -q -o "$out/ovh$i" -- "$bench" 20 10000 | field seconds; done | median)
pct=$(awk -v b="$base" -v t="$traced" 'BEGIN {printf "%.2f", (t - b) / b * 100}')
echo "launch-bound overhead: plain ${base}s, traced ${traced}s: ${pct}% (target <= 2%)"
awk -v p="$pct" 'BEGIN {exit !(p <= 2.0)}' || { echo "FAIL: overhead"; fail=1; }

rm -rf "$out"
exit $fail
