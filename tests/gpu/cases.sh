#!/bin/bash
# cases.sh: the collector on a GPU machine, case by case. Usage:
#   tests/gpu/cases.sh BUILD_DIR [KEEP_DIR]
# 1. counts: kernels (1, 1,000 on one and on 4 streams, 1,000,000), memcpy,
#    memset and CUDA graphs: the .tkb holds exactly what was launched, each
#    GPU op with its launch's correlation id, starting after its launch;
# 2. overhead: median of 5 pairs (plain, traced) for a launch-bound program
#    (reported, with three activity lists) and a compute-bound one (target:
#    at most 2%); the driver calls CUPTI reports (-a all);
# 3. exits: SIGTERM, SIGINT, cudaDeviceReset, exit() from another thread,
#    SIGSEGV, abort(): every kernel launched before is kept, in a file that
#    reads whole;
# 4. PyTorch (where python3 has torch): training steps under trace-collect,
#    trace-stats on the result, torch.profiler alone (its overhead and kernel
#    count) and torch.profiler under trace-collect (the program runs on).
# KEEP_DIR receives small traces worth keeping (a .tkb of case 1, the JSON of
# torch.profiler). Prints a line per check, "FAIL" where one fails; exits 1 then.
set -u
build=${1:?usage: cases.sh BUILD_DIR [KEEP_DIR]}
keep=${2:-}
here=$(cd "$(dirname "$0")" && pwd)
cases=$build/tests/gpu/gpu_cases
bench=$build/tests/gpu/launch_bench
collect=$build/tools/trace-collect
convert=$build/tools/trace-convert
stats=$build/tools/trace-stats
out=$(mktemp -d "${TMPDIR:-/tmp}/tkc_cases.XXXXXX")
fail=0
bad() { echo "FAIL: $*"; fail=1; }

# the libcupti for programs that bring none: TK_CUPTI_LIB, else CUDA's
if [ -z "${TK_CUPTI_LIB:-}" ]; then
	for c in /usr/local/cuda/extras/CUPTI/lib64/libcupti.so* /usr/local/cuda/lib64/libcupti.so* \
		/usr/local/cuda/targets/x86_64-linux/lib/libcupti.so*; do
		[ -f "$c" ] && { export TK_CUPTI_LIB=$c; break; }
	done
fi
echo "libcupti: ${TK_CUPTI_LIB:-not found}"

# json_of DIR: every .tkb in DIR converted (warnings kept in DIR/convert.log); prints the JSON paths
json_of() {
	: >>"$1/convert.log"
	for f in "$1"/*.tkb; do
		[ -f "$f" ] || continue
		"$convert" "$f" -o "$f.json" 2>>"$1/convert.log" || echo "convert failed: $f: $?" >>"$1/convert.log"
		echo "$f.json"
	done
}
count() { # CAT DIR: events of that category over DIR's converted traces
	local n=0 c f
	for f in "$2"/*.tkb.json; do
		[ -f "$f" ] || continue
		c=$(grep -o "\"cat\":\"$1\"" "$f" | wc -l)
		n=$((n + c))
	done
	echo "$n"
}
collect_run() { # NAME CMD...: the command under trace-collect into $out/NAME
	local name=$1
	shift
	mkdir -p "$out/$name"
	timeout 120 "$collect" -q -o "$out/$name" -- "$@" >"$out/$name/stdout" 2>"$out/$name/stderr"
	echo $? >"$out/$name/rc"
}

echo "== 1. counts"
for spec in "1 1" "1000 1" "1000 4" "1000000 4"; do
	set -- $spec
	name=count_$1_$2
	collect_run "$name" "$cases" count "$1" "$2"
	json_of "$out/$name" >/dev/null
	if [ "$1" -le 1000 ]; then
		python3 "$here/check_events.py" "$out/$name"/*.tkb.json kernel="$1" gpu_memcpy="$2" \
			gpu_memset="$2" streams="$2" || bad "$name"
	else
		k=$(count kernel "$out/$name")
		echo "$name: kernel events $k of $1; $(cat "$out/$name/stdout")"
		[ "$k" = "$1" ] || bad "$name: $k kernel events"
	fi
	[ -s "$out/$name/stderr" ] && sed "s/^/  $name stderr: /" "$out/$name/stderr" | head -5
	echo "  $name: $(cat "$out/$name"/*.tkb | wc -c) bytes of .tkb;" \
		"$(grep -h -o '"tkcollect":{[^}]*}' "$out/$name"/*.tkb.json | head -1)"
done
mkdir -p "$out/sched"
"$collect" -q -o "$out/sched" --schedule skip_first=2,wait=1,warmup=1,active=3,repeat=2 -- \
	"$bench" 20 1000 >/dev/null
json_of "$out/sched" >/dev/null
k=$(count kernel "$out/sched")
echo "schedule skip_first=2,wait=1,warmup=1,active=3,repeat=2 over 20 steps of 1000 kernels: $k kernel events (6 active steps)"
[ "$k" -ge 5900 ] && [ "$k" -le 6100 ] || bad "schedule: $k kernel events"
collect_run graph "$cases" graph 100 10
json_of "$out/graph" >/dev/null
python3 "$here/check_events.py" "$out/graph"/*.tkb.json kernel=1000 graph=1 || bad graph
if [ -n "$keep" ]; then
	mkdir -p "$keep"
	cp "$out/count_1000_4"/*.tkb "$keep/count_1000_4.tkb"
	cp "$out/graph"/*.tkb "$keep/graph_100x10.tkb"
fi

echo "== 2. overhead (median of 5 pairs, plain then traced)"
median() { sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
field() { sed -n "s/.*\"$1\":\([0-9.]*\).*/\1/p"; }
overhead() { # NAME ACTIVITIES CMD...
	local name=$1 act=$2 p="" t="" i
	shift 2
	for i in 1 2 3 4 5; do
		p="$p $("$@" | field seconds)"
		t="$t $("$collect" -q -a "$act" -o "$out/ovh_$name" -- "$@" | field seconds)"
	done
	p=$(echo $p | tr ' ' '\n' | median)
	t=$(echo $t | tr ' ' '\n' | median)
	OVH=$(awk -v b="$p" -v t="$t" 'BEGIN {printf "%.2f", (t - b) / b * 100}')
	echo "$name, -a $act: plain ${p}s, traced ${t}s: ${OVH}%"
}
overhead launch-bound default "$bench" 20 10000
overhead launch-bound kernel,memcpy,memset,runtime,sync,nvtx,overhead "$bench" 20 10000
overhead launch-bound kernel "$bench" 20 10000
overhead compute-bound default "$cases" compute 1000
awk -v p="$OVH" 'BEGIN {exit !(p <= 2.0)}' || bad "compute-bound overhead $OVH% (target <= 2%)"

echo "== 2b. driver calls (-a all): what CUPTI reports beside the runtime calls"
mkdir -p "$out/drv"
"$collect" -q -a all -o "$out/drv" -- "$cases" count 1000 1 >/dev/null
json_of "$out/drv" >/dev/null
python3 - "$out/drv"/*.tkb.json <<'PY'
import collections, json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
drv = [e for e in ev if e.get("cat") == "cuda_driver"]
rt = [e for e in ev if e.get("cat") == "cuda_runtime"]
print("driver calls:", len(drv), collections.Counter(e["name"] for e in drv).most_common(8))
print("runtime calls:", len(rt), collections.Counter(e["name"] for e in rt).most_common(4))
spans = collections.defaultdict(list)
for e in rt:
    spans[e["tid"]].append((e["ts"], e["ts"] + e["dur"]))
inside = sum(1 for e in drv if any(a <= e["ts"] <= b for a, b in spans[e["tid"]]))
print("driver calls inside a runtime call:", inside)
PY

echo "== 3. exits"
flush() { # NAME EXPECTED_KERNELS ARGS...
	local name=$1 want=$2
	shift 2
	collect_run "$name" "$cases" "$@"
	json_of "$out/$name" >/dev/null
	local k
	k=$(count kernel "$out/$name")
	echo "$name: exit $(cat "$out/$name/rc"), kernel events $k (launched before the event: $want)," \
		"files $(ls "$out/$name"/*.tkb 2>/dev/null | wc -l); $(grep -v '^$' "$out/$name/convert.log" | sort -u | head -3 | tr '\n' ' ')"
	[ -s "$out/$name/stderr" ] && sed "s/^/  $name stderr: /" "$out/$name/stderr" | head -3
	# every kernel launched before the event, in a file closed whole
	[ "$k" -ge "$want" ] || bad "$name: $k of $want kernels kept"
	grep -q "ends early\|convert failed" "$out/$name/convert.log" && bad "$name: the file is not complete"
}
flush term 1000 term 1000
flush int 1000 int 1000
flush reset 1000 reset 1000
flush thread-exit 1000 thread-exit 1000
timeout 60 "$cases" thread-exit 1000 >/dev/null 2>&1
echo "thread-exit without the collector: exit $?"
flush segv 1000 segv 1000
flush segv-after-1.5s 1000 segv 1000 1500
flush abort 1000 abort 1000

echo "== 4. PyTorch"
if ! python3 -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null; then
	echo "no torch with CUDA here: skipped"
else
	tcupti=$(python3 -c 'import torch
torch.zeros(1, device="cuda")
from torch.profiler import profile, ProfilerActivity
with profile(activities=[ProfilerActivity.CUDA]): torch.zeros(1, device="cuda").add_(1)
print(next((l.split()[-1] for l in open("/proc/self/maps") if "libcupti" in l), ""))' 2>/dev/null)
	echo "torch's libcupti: ${tcupti:-not seen}"
	[ -n "$tcupti" ] && export TK_CUPTI_LIB=$tcupti
	ts="python3 $here/torch_steps.py"
	for i in 1 2 3; do
		echo "plain: $($ts --steps 20 --tiny 200)"
		mkdir -p "$out/torch$i"
		echo "trace-collect: $("$collect" -q -o "$out/torch$i" -- $ts --steps 20 --tiny 200 2>"$out/torch$i.err")"
		echo "torch.profiler: $($ts --steps 20 --tiny 200 --kineto "$out/kineto$i.json" 2>"$out/kineto$i.err")"
	done
	json_of "$out/torch1" >/dev/null
	python3 "$here/check_events.py" "$out/torch1"/*.tkb.json kernel=1 min=1 || bad "torch trace"
	echo "kernels: trace-collect $(count kernel "$out/torch1") over 23 steps; torch.profiler $(grep -o '"cat": *"kernel"' "$out/kineto1.json" | wc -l) over 20"
	"$stats" -t kernels,steps -n 8 "$out/torch1"/*.tkb || bad "trace-stats on the torch .tkb"
	"$stats" -t ops,kernels -n 5 "$out/kineto1.json" || bad "trace-stats on torch.profiler's trace"
	mkdir -p "$out/tall"
	"$collect" -q -a all -o "$out/tall" -- $ts --steps 5 >/dev/null 2>&1
	json_of "$out/tall" >/dev/null
	python3 - "$out/tall"/*.tkb.json <<'PY'
import collections, json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
drv = collections.Counter(e["name"] for e in ev if e.get("cat") == "cuda_driver")
print("torch, -a all: driver calls", sum(drv.values()), drv.most_common(10))
PY
	mkdir -p "$out/both"
	"$collect" -q -o "$out/both" -- $ts --steps 5 --kineto "$out/both.json" >"$out/both.out" 2>"$out/both.err"
	rc=$?
	json_of "$out/both" >/dev/null
	echo "torch.profiler under trace-collect: exit $rc; $(cat "$out/both.out"); collector kernels $(count kernel "$out/both")"
	grep -i -E 'tkcollect|cupti|error' "$out/both.err" | sort | uniq -c | head -8
	[ "$rc" = 0 ] || bad "torch.profiler under trace-collect exited $rc"
	if [ -n "$keep" ]; then
		cp "$out/kineto1.json" "$keep/kineto_torch_steps.json"
		cp "$out/torch1"/*.tkb "$keep/torch_steps.tkb"
		cp "$out/both.err" "$keep/both.err"
	fi
fi
rm -rf "$out"
exit $fail
