#!/usr/bin/env bash
# skips.sh: the tests that can be skipped (exit 77: no real traces, no protoc), run so that the
# reason shows: ctest says only "Skipped", so each reason goes to a log that ctest prints after the
# run (CTEST_CUSTOM_POST_TEST in the build's CTestCustom.cmake).
#
#   skips.sh needs|uses NAME LOG DEFAULT COMMAND ARGS...
#       Run a test. The real traces are in $TK_REALTRACES when it is set, else in DEFAULT: each
#       argument @REALTRACES@ becomes that folder, and it is exported as TK_REALTRACES. "needs":
#       the test is skipped when the folder has no index.tsv; "uses": the test decides. On exit 77
#       "NAME: <the line of its output that says skipped>" goes to $TK_SKIP_LOG, else LOG.
#   skips.sh clear LOG            (before a run)   remove the log
#   skips.sh print LOG            (after a run)    print the reasons, if any test was skipped
#   skips.sh selftest CTEST DIR NAME...   run the tests NAME with ctest in the build tree DIR and
#       TK_REALTRACES set to a folder that does not exist: each must be skipped, saying so.
set -u
mode=${1:?usage: skips.sh needs|uses|clear|print|selftest ...}
shift
case $mode in
clear)
	rm -f "${TK_SKIP_LOG:-$1}"
	exit 0
	;;
print)
	log=${TK_SKIP_LOG:-$1}
	if [ -s "$log" ]; then
		echo
		echo "Skipped, and why:"
		sed 's/^/  /' "$log"
	fi
	exit 0
	;;
selftest)
	ctest=$1 dir=$2
	shift 2
	names=$(IFS='|'; echo "$*")
	absent=/nonexistent/tk-realtraces-$$
	out=$(TK_REALTRACES=$absent TK_SKIP_LOG=$dir/skipped.txt "$ctest" --test-dir "$dir" -R "^($names)\$" 2>&1)
	echo "$out"
	fail=0
	for n in "$@"; do
		if ! grep -q "^  $n: .*$absent" <<<"$out"; then
			echo "FAIL: $n did not skip naming $absent"
			fail=1
		fi
	done
	exit $fail
	;;
needs | uses) ;;
*)
	echo "skips.sh: unknown mode '$mode'" >&2
	exit 2
	;;
esac

name=$1 log=${TK_SKIP_LOG:-$2} default=$3
shift 3
real=${TK_REALTRACES:-$default}
export TK_REALTRACES=$real
skip() {
	mkdir -p "$(dirname "$log")" && echo "$name: $*" >>"$log"
}
if [ "$mode" = needs ] && [ ! -f "$real/index.tsv" ]; then
	echo "skipped: no real traces at $real (no index.tsv there); set TK_REALTRACES to their folder"
	skip "skipped: no real traces at $real (no index.tsv there); set TK_REALTRACES to their folder"
	exit 77
fi
args=()
for a in "$@"; do
	[ "$a" = @REALTRACES@ ] && a=$real
	args+=("$a")
done
out=$(mktemp) || exit 1
"${args[@]}" 2>&1 | tee "$out"
rc=${PIPESTATUS[0]}
if [ "$rc" = 77 ]; then
	why=$(grep -i -m1 skip "$out")
	skip "${why:-skipped (exit 77)}"
fi
rm -f "$out"
exit "$rc"
