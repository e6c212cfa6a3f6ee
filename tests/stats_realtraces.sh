#!/bin/sh
# stats_realtraces.sh TOOL DIR: run trace-stats over every trace listed in DIR/index.tsv.
tool=$1 dir=$2
if [ ! -f "$dir/index.tsv" ]; then
	echo "real traces not found in '$dir' (set TK_REALTRACES); skipping"
	exit 77
fi
fail=0 n=0
for f in $(tail -n +2 "$dir/index.tsv" | cut -f1); do
	n=$((n + 1))
	out=$("$tool" -q -n 5 "$dir/$f") || { echo "FAIL (exit $?): $f"; fail=1; continue; }
	case $out in
	*"Self CPU time total:"*) ;;
	*) echo "FAIL (no operator table): $f"; fail=1; continue ;;
	esac
	if command -v python3 >/dev/null 2>&1; then
		"$tool" -q -f json -n 5 "$dir/$f" | python3 -c 'import json,sys; json.load(sys.stdin)' ||
			{ echo "FAIL (invalid JSON): $f"; fail=1; }
	fi
done
# the ranks of one job at once: combined table with per-rank columns
"$tool" -q -n 5 -s cuda_time_total "$dir"/param-dlrm-8rank/dlrm_kineto/*.json | grep -q "Max rank" ||
	{ echo "FAIL: multi-rank table"; fail=1; }
echo "$n traces checked"
exit $fail
