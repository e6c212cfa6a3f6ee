#!/usr/bin/env bash
# test_usage.sh: what every tool says when it is used wrongly or its result is surprising: usage
# errors name the option and list the valid values and exit 2 (as --help and the man pages say),
# output names without a known suffix, a --window that keeps nothing, trace-stats' labels and
# headers, and the wording of some messages.
# usage: test_usage.sh BIN_DIR TESTDATA DOCS_DIR
set -u
BIN=$(cd "${1:?usage: test_usage.sh BIN_DIR TESTDATA DOCS_DIR}" && pwd)
TD=$(cd "${2:?}" && pwd)
DOCS=$(cd "${3:?}" && pwd)
T=$(mktemp -d "${TMPDIR:-/tmp}/tkusage-XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1
IN=$TD/example_kineto.json
fails=0
checks=0
fail() {
	fails=$((fails + 1))
	echo "FAIL: $*"
	[ -s stderr ] && sed 's/^/  stderr: /' stderr | head -4
}
check() { # DESCRIPTION COMMAND...
	local what=$1
	shift
	checks=$((checks + 1))
	"$@" || fail "$what"
}
run() { # TOOL ARGS...: exit status in $rc, output in ./stdout and ./stderr
	local tool=$1
	shift
	"$BIN/$tool" "$@" >stdout 2>stderr
	rc=$?
}
has() { grep -qF -- "$2" "$1"; }

# usage TOOL 'EXPECTED STDERR' ARGS...: a usage error: exit 2, the expected text, "see --help"
usage() {
	local tool=$1 want=$2
	shift 2
	run "$tool" "$@"
	check "$tool $*: exit 2 (got $rc)" [ "$rc" = 2 ]
	check "$tool $*: says \"$want\"" has stderr "$want"
	check "$tool $*: points to --help" has stderr "see '$tool --help'"
}

# ---- bad option values: the option as the user wrote it and the valid values ----
usage trace-stats "trace-stats: -t/--tables: bad value 'kernel' (valid: ops, kernels, memcpy, api" "$IN" -t kernel
usage trace-stats "trace-stats: -t/--tables: bad value 'kernel' (valid: ops, kernels, memcpy, api" "$IN" --tables=ops,kernel
usage trace-stats "trace-stats: -f/--format: bad value 'xml' (valid: text, csv, json, md)" "$IN" -f xml
usage trace-stats "trace-stats: -f/--format: bad value 'xml' (valid: text, csv, json, md)" "$IN" -fxml
usage trace-stats "trace-stats: -s/--sort: bad value 'foo' (valid: self_cpu_time_total, cpu_time_total," "$IN" --sort foo
usage trace-stats "trace-stats: --flops: bad value 'x' (valid: none, torch, extended)" "$IN" --flops x
usage trace-stats "trace-stats: --time-unit: bad value 'h' (valid: s, ms, us, ns)" "$IN" --time-unit h
usage trace-stats "trace-stats: -n/--row-limit: bad value 'ten'" "$IN" -n ten
usage trace-stats "trace-stats: -n/--row-limit: bad value '99999999999999999999' (a number of rows, -1 for all)" "$IN" -n 99999999999999999999
usage trace-diff "trace-diff: -n/--row-limit: bad value '-3' (a number of rows, -1 for all)" "$IN" "$IN" -n -3
usage trace-stats "trace-stats: --steps: bad value '3-1'" "$IN" --steps 3-1
usage trace-stats "trace-stats: --max-pending: bad value 'x'" "$IN" --max-pending x
usage trace-stats "trace-stats: --window: bad value 'soon'" "$IN" --window soon
# a usage error is found before any input is read, and says so with 2
usage trace-stats "-s/--sort: bad value 'foo'" "$T/absent.json" --sort foo
usage trace-stats "-s/--sort: bad value 'foo'" "$IN" -t kernels --sort foo
run trace-stats "$IN" -t ops --sort none
check "trace-stats --sort none still works (got $rc)" [ "$rc" = 0 ]
run trace-stats "$IN" -t ops --sort self_device_time_total
check "trace-stats --sort self_device_time_total still works (got $rc)" [ "$rc" = 0 ]

usage trace-convert "trace-convert: --to: bad value 'xml' (valid: json, json.gz, tkb" "$IN" -o out.json --to xml
usage trace-convert "trace-convert: --gzip-level: bad value '12'" "$IN" -o out.json.gz --gzip-level 12
usage trace-convert "trace-convert: --memory: bad value '1K'" "$IN" -o out.pftrace --memory 1K
usage trace-merge "trace-merge: --to: bad value 'xml' (valid: json, json.gz, tkb" "$IN" -o out.json --to xml
usage trace-merge "trace-merge: --align: bad value 'clocks' (valid: none, start, collectives" "$IN" -o out.json --align clocks
usage trace-merge "trace-merge: --ranks: bad value 'a-b'" "$IN" -o out.json --ranks a-b
usage trace-merge "trace-merge: --window: bad value '1ms'" "$IN" -o out.json --window 1ms
usage trace-merge "trace-merge: --gzip-level: bad value '0'" "$IN" -o out.json.gz --gzip-level 0
usage trace-split "trace-split: --to: bad value 'xml' (valid: json, json.gz, tkb" "$IN" -o parts --parts 2 --to xml
usage trace-split "trace-split: --parts: bad value 'two'" "$IN" -o parts --parts two
usage trace-split "trace-split: --max-size: bad value '5M5'" "$IN" -o parts --max-size 5M5
usage trace-split "trace-split: --window: bad value '3parsecs'" "$IN" -o parts --window 3parsecs
usage trace-split "trace-split: --window: bad value '1ms:x'" "$IN" -o parts --window 1ms:x
usage trace-split "trace-split: --step: bad value 'x'" "$IN" -o parts --step x
usage trace-split "trace-split: --steps: bad value 'x'" "$IN" -o parts --steps x
usage trace-split "trace-split: --max-size needs JSON parts (the viewers' limits are on JSON); cut .sqlite parts" "$IN" -o parts --max-size 1M --to sqlite
usage trace-split "trace-split: --max-size needs JSON parts (the viewers' limits are on JSON); cut .pftrace parts" "$IN" -o parts --max-size 1M --to pftrace.gz
usage trace-stats "trace-stats: option '--quiet' takes no value" "$IN" --quiet=1
usage trace-stats "trace-stats: option '--group-by-input-shape' takes no value" "$IN" --group-by-input-shape=yes
usage trace-convert "trace-convert: unknown option '--nonesuch'" "$IN" -o x.json --nonesuch
usage trace-convert "trace-convert: unknown option '-Z'" "$IN" -o x.json -Z
usage trace-stats "trace-stats: unknown option '-Z'" "$IN" --row-limit=5 -Zq
usage trace-stats "trace-stats: unknown option '-Z'" "$IN" --quiet -Zq
if [ -x "$BIN/trace-collect" ]; then
	usage trace-collect "trace-collect: -a/--activities: bad value 'kernels' (valid: kernel, memcpy," -a kernels -- true
	usage trace-collect "trace-collect: --capture-range: bad value 'nvtx' (valid: cudaProfilerApi, none)" --capture-range nvtx -- true
	usage trace-collect "trace-collect: --schedule: bad value 'bogus=1'" --schedule bogus=1 -- true
	usage trace-collect "trace-collect: unknown option '--bogus'" --bogus -- true
fi
usage trace-report "trace-report: --top: bad value '0' (a number of rows from 1, -1 for all)" "$IN" -o r.html --top 0
usage trace-report "trace-report: -n/--row-limit: bad value '-2' (a number of rows from 1, -1 for all)" "$IN" -o r.html -n -2
usage trace-report "trace-report: missing -o REPORT.html" "$IN"
usage trace-report "trace-report: --folded r.html: the same file as -o" "$IN" -o r.html --folded r.html
usage trace-report "trace-report: --folded $IN is the input $IN" "$IN" -o r.html --folded "$IN"
usage trace-stats "trace-stats: --memory-series $IN is the input $IN" "$IN" --memory-series "$IN"
usage trace-stats "trace-stats: -o $IN is the input $IN" "$IN" -o "$IN"
usage trace-report "trace-report: --window: bad value '1ms'" "$IN" -o r.html --window 1ms
check "trace-report: a usage error writes no page" [ ! -e r.html ]
# the page and --folded FILE go together: neither is published when one cannot be written
run trace-report "$IN" -o r.html --folded absent/r.folded
check "trace-report: an unwritable --folded FILE fails (got $rc)" [ "$rc" = 1 ]
check "trace-report: an unwritable --folded FILE is named" has stderr "absent/r.folded: cannot create"
check "trace-report: an unwritable --folded FILE leaves no page" [ ! -e r.html ]
check "trace-report: and says the page was not written" has stderr "r.html: not written either"
if [ -w /dev/full ]; then
	run trace-report "$IN" -o /dev/full --folded r.folded
	check "trace-report: a page that fails to write fails (got $rc)" [ "$rc" = 1 ]
	check "trace-report: a page that fails to write leaves no folded file" [ ! -e r.folded ]
fi
run trace-report "$IN" -o r.html --folded r.folded
check "trace-report: with both writable, both are written (got $rc)" [ "$rc" = 0 -a -s r.html -a -s r.folded ]
rm -f r.html r.folded
for tool in trace-convert trace-stats trace-merge trace-split trace-diff trace-report; do
	usage $tool "$tool: unknown option '--bogus'" "$IN" --bogus
	usage $tool "$tool: option '-o' needs an argument" "$IN" -o
	# --threads: the same spelling and the same message in every tool that reads traces
	usage $tool "$tool: --threads: bad value '0' (a count of threads from 1 to 64)" "$IN" -o o.json --threads 0
	usage $tool "$tool: --threads: bad value 'x' (a count of threads from 1 to 64)" "$IN" -o o.json --threads x
done

# every tool's --help and man page say that a usage error exits 2
for tool in trace-convert trace-stats trace-merge trace-split trace-diff trace-report trace-collect; do
	[ -x "$BIN/$tool" ] || continue
	check "$tool --help says 2 is a usage error" bash -c "'$BIN/$tool' --help | grep -q '2 usage error'"
	check "$tool.1 says 2 is a usage error" grep -qi "2.*usage error" "$DOCS/$tool.1"
done

# every option --help lists has an entry in the man page (a .TP item), and every entry is an option
opts_help() { "$BIN/$1" --help | grep -oE '^ +(-[a-zA-Z], )?--[a-z][a-z0-9-]*' | grep -oE -- '--[a-z][a-z0-9-]*' | sort -u; }
opts_man() {
	awk 'prev == ".TP" && /^\.(B|BI|BR) / { print } { prev = $0 }' "$DOCS/$1.1" |
		grep -oE -- '\\-\\-[a-z][a-z0-9\\-]*' | sed 's/\\-/-/g' | sort -u
}
for tool in trace-convert trace-stats trace-merge trace-split trace-diff trace-report trace-collect; do
	[ -x "$BIN/$tool" ] || continue
	odd=$(comm -3 <(opts_help $tool) <(opts_man $tool) | tr -d '\t' | tr '\n' ' ')
	check "$tool: --help and $tool.1 list the same options (differ: ${odd:-none})" [ -z "$odd" ]
	check "$tool: --help lists some options" [ "$(opts_help $tool | wc -l)" -gt 5 ]
done

# ---- output names: a suffix no format has is an error unless --to is given ----
usage trace-convert "trace-convert: -o x.txt: no output format has this suffix (.json[.gz], .tkb," "$IN" -o x.txt
check "trace-convert -o x.txt names --to" has stderr "--to"
check "trace-convert -o x.txt writes nothing" [ ! -e x.txt ]
usage trace-convert "trace-convert: -o tkb: no output format has this suffix" "$IN" -o tkb
check "trace-convert -o tkb writes nothing" [ ! -e tkb ]
usage trace-merge "trace-merge: -o x.txt: no output format has this suffix (.json[.gz], .tkb," "$IN" -o x.txt
check "trace-merge -o x.txt writes nothing" [ ! -e x.txt ]
run trace-convert "$IN" -o x.txt --to json
check "trace-convert -o x.txt --to json works (got $rc)" [ "$rc" = 0 ]
check "trace-convert -o x.txt --to json writes JSON" python3 -c 'import json; json.load(open("x.txt"))'
run trace-merge "$IN" -o m.txt --to json.gz
check "trace-merge -o m.txt --to json.gz works (got $rc)" [ "$rc" = 0 ]
run trace-convert "$IN" -o -
check "trace-convert -o - still writes JSON to standard output (got $rc)" python3 -c 'import json; json.load(open("stdout"))'
run trace-convert "$IN" -o /dev/null
check "trace-convert -o /dev/null still works (got $rc)" [ "$rc" = 0 ]
run trace-convert "$IN" -o x.JSON.GZ
check "trace-convert -o x.JSON.GZ still works (got $rc)" [ "$rc" = 0 ]

# ---- a --window that keeps no event says so, in every tool ----
# the example's clock is in the billions of microseconds: 10ms:20ms is long before it
run trace-merge "$IN" -o w.json --window 10ms:20ms
check "trace-merge, empty window: exit 0 (got $rc)" [ "$rc" = 0 ]
check "trace-merge, empty window: a warning" has stderr "trace-merge: warning: w.json: no event in --window 10ms:20ms"
check "trace-merge, empty window: suggests +A:+B" has stderr "'+10ms:+20ms'"
run trace-split "$IN" -o wparts --window 10ms:20ms
check "trace-split, empty window: exit 0 (got $rc)" [ "$rc" = 0 ]
check "trace-split, empty window: the same warning" has stderr "trace-split: warning: $IN: no event in --window 10ms:20ms"
check "trace-split, empty window: warned once" [ "$(grep -c warning stderr)" = 1 ]
run trace-stats "$IN" --window 10ms:20ms
check "trace-stats, empty window: exit 0 (got $rc)" [ "$rc" = 0 ]
check "trace-stats, empty window: the same warning" has stderr "trace-stats: warning: $IN: no event in --window 10ms:20ms"
run trace-merge "$IN" -o w.json --window +0:+10ms
check "trace-merge, a window with events: no warning" [ ! -s stderr ]
run trace-stats "$IN" --window +0:+10ms
check "trace-stats, a window with events: no warning" [ ! -s stderr ]
run trace-merge "$IN" -o w.json --window 10ms:20ms -q
check "trace-merge -q: no warning" [ ! -s stderr ]

# ---- trace-stats: labels, headers, Markdown, FLOPs ----
run trace-stats "$IN" "$IN" -t ops
check "the same rank twice: exit 0 (got $rc)" [ "$rc" = 0 ]
check "the same rank twice: a warning" has stderr "warning: $IN: rank 0 again"
check "the same rank twice: distinct columns" bash -c "sed -n 2p stdout | grep -q 'rank 0 #2 '"
SD=$TD/stats
run trace-stats "$SD/tiny_gpu.json" "$SD/tiny_gpu_rank1.json" -t ops --sort count
check "per-rank columns name their metric (--sort count: CUDA total)" has stdout "rank 1 CUDA total"
run trace-stats "$SD/tiny_gpu.json" "$SD/tiny_gpu_rank1.json" -t ops --sort self_cpu_time_total
check "per-rank columns name their metric (--sort self_cpu_time_total)" has stdout "rank 1 Self CPU"
run trace-stats "$SD/tiny_gpu.json" "$SD/tiny_gpu_rank1.json" -t kernels
check "per-rank columns of a summary name their metric" has stdout "rank 1 Total (ns)"
run trace-stats "$SD/tiny_gpu.json" -t ops -f md
check "Markdown: Name is left-aligned" [ "$(sed -n 2p stdout | cut -d'|' -f2)" = ":---" ]
check "Markdown: numbers stay right-aligned" [ "$(sed -n 2p stdout | cut -d'|' -f3)" = "---:" ]
python3 - flops.json <<'PY'
import json, sys
ev = [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 0, "dur": 10,
       "args": {"Input Dims": [[100000, 100000], [100000, 100000]]}},
      {"ph": "X", "cat": "cpu_op", "name": "aten::mul", "pid": 1, "tid": 1, "ts": 20, "dur": 10,
       "args": {"Input Dims": [[4], [4]]}}]
json.dump({"traceEvents": ev}, open(sys.argv[1], "w"))
PY
run trace-stats flops.json -t ops
check "FLOPs: the column is as wide as its widest value" python3 - stdout <<'PY'
import sys
lines = open(sys.argv[1]).read().split("\n")
sep, head = lines[0], lines[1]
# every row ends where the header does: no value pushed its row to the right
rows = [l for l in lines[3:] if l.strip() and not l.startswith("-") and " time total: " not in l]
sys.exit(0 if rows and all(len(r) == len(head) for r in rows) and len(sep) == len(head) else 1)
PY

# ---- messages ----
run trace-split "$IN" -o one --max-size 1G
check "trace-split: '1 part', not '1 parts'" has stderr ": 1 part, "
run trace-merge "$IN" -o names.json
check "trace-merge: no process named with a trailing space" python3 - names.json <<'PY'
import json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
names = [v for e in ev if e["ph"] == "M" and e["name"] in ("process_name", "process_labels")
         for v in e["args"].values()]
sys.exit(0 if names and not [n for n in names if n != n.strip()] else 1)
PY
# --strict in every tool that reads traces: a cut input is an error, not a warning
head -c 3000 "$IN" >cut.json
for cmd in "trace-stats cut.json" "trace-diff cut.json $IN" "trace-report cut.json -o cut.html"; do
	run $cmd
	check "${cmd%% *}: a cut input is a warning (got $rc)" [ "$rc" = 0 ]
	check "${cmd%% *}: the warning says so" has stderr "input ends early"
	rm -f cut.html
	run $cmd --strict
	check "${cmd%% *} --strict: a cut input is an error (got $rc)" [ "$rc" = 1 ]
	check "${cmd%% *} --strict: the error says so" has stderr "input ends early"
done
check "trace-report --strict: a cut input writes no page" [ ! -e cut.html ]
# --list in every tool that reads traces: the inputs named, nothing read
for t in trace-convert trace-stats trace-diff trace-report trace-merge trace-split; do
	case $t in
	trace-convert | trace-split) set -- "$IN" ;; # one input
	*) set -- "$IN" cut.json ;;
	esac
	run $t --list "$@"
	check "$t --list: exit 0 (got $rc)" [ "$rc" = 0 ]
	check "$t --list: the inputs, one per line" [ "$(cat stdout)" = "$(printf '%s\n' "$@")" ]
done
run trace-diff --list
check "trace-diff --list without an input is a usage error (got $rc)" [ "$rc" = 2 ]
run trace-stats "$TD/steps/launch.json" --steps 12
check "trace-stats --steps with no such step fails (got $rc)" [ "$rc" = 1 ]
check "trace-stats --steps with no such step says which steps there are" has stderr "no ProfilerStep#12..#12 events (its steps are #1 to #2)"
# a directory given as dir/ names its files dir/x.json in the merged trace, not dir//x.json
mkdir -p ranks
cp "$TD/steps/coll_rank0.json" "$TD/steps/coll_rank1.json" ranks/
run trace-merge ranks/ -o dirmerge.json -q
check "trace-merge DIR/: exit 0 (got $rc)" [ "$rc" = 0 ]
check "trace-merge DIR/: the inputs are named DIR/FILE" has dirmerge.json '"ranks/coll_rank0.json"'
check "trace-merge DIR/: no double slash" sh -c '! grep -q "ranks//" dirmerge.json'
# trace-merge --compress: .tkb chunks compressed, as trace-convert's; the same events
usage trace-merge "trace-merge: --compress applies to tkb output only" "$IN" -o mz.json --compress
run trace-merge "$TD/steps/coll_rank0.json" "$TD/steps/coll_rank1.json" -o mz.tkb --compress -q
run trace-merge "$TD/steps/coll_rank0.json" "$TD/steps/coll_rank1.json" -o mu.tkb -q
check "trace-merge --compress: a smaller .tkb" [ "$(stat -c %s mz.tkb)" -lt "$(stat -c %s mu.tkb)" ]
"$BIN/trace-convert" -q mz.tkb -o mz.json && "$BIN/trace-convert" -q mu.tkb -o mu.json
check "trace-merge --compress: the same events" cmp -s mz.json mu.json
# an op name longer than torch's column: cut with "..." in the text table, whole in Markdown
cat >longname.json <<'JSON'
{"traceEvents":[{"ph":"X","cat":"cpu_op","name":"aten::a_very_long_operator_name_that_torch_cuts_at_fifty_five_characters","pid":1,"tid":1,"ts":1,"dur":5}]}
JSON
run trace-stats longname.json -t ops
check "text: a long op name is cut" has stdout "aten::a_very_long_operator_name_that_torch_cuts_at_f..."
run trace-stats longname.json -t ops -f md
check "md: a long op name is whole" has stdout "| aten::a_very_long_operator_name_that_torch_cuts_at_fifty_five_characters |"
# nothing to count is said, not shown as tables without rows
echo '[]' >empty.json
run trace-stats empty.json
check "trace-stats on an empty trace: exit 0 (got $rc)" [ "$rc" = 0 ]
check "trace-stats on an empty trace: says so" has stderr "empty.json: no events that the tables count"
run trace-stats "$IN" --cat nonexist
check "trace-stats --cat with no such category: says so" has stderr "no event of the categories in --cat (nonexist)"
run trace-stats "$IN" --cat kernel
check "trace-stats --cat with a category that is there: no such warning" sh -c '! grep -q "no event" stderr'
printf '123' >short.bin
run trace-convert short.bin -o short.json
check "a 3-byte input: exit 1 (got $rc)" [ "$rc" = 1 ]
check "a 3-byte input: only its bytes shown" has stderr "(starts with bytes 31 32 33)"

echo "$checks checks, $fails failed"
[ "$fails" = 0 ]
