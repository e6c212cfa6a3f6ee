#!/usr/bin/env bash
# test_convert.sh: CLI tests of trace-convert: options, exit codes, conversions checked with strict JSON parsers.
# usage: test_convert.sh TRACE-CONVERT TESTDATA-DIR
set -u
TOOL=${1:?usage: test_convert.sh TRACE-CONVERT TESTDATA-DIR}
TD=${2:?usage: test_convert.sh TRACE-CONVERT TESTDATA-DIR}
[ -x "$TOOL" ] || { echo "not an executable: $TOOL"; exit 1; }
[ -f "$TD/kineto_small.json" ] || { echo "no test data in $TD"; exit 1; }
# absolute paths: the tests run in a temporary directory
TOOL=$(cd "$(dirname "$TOOL")" && pwd)/$(basename "$TOOL")
TD=$(cd "$TD" && pwd)
T=$(mktemp -d "${TMPDIR:-/tmp}/tkcli-XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1

fails=0
checks=0
pass() { checks=$((checks + 1)); }
fail() {
	checks=$((checks + 1)) fails=$((fails + 1))
	echo "FAIL: $*"
	[ -s stderr ] && sed 's/^/  stderr: /' stderr | head -5
}
# check DESCRIPTION COMMAND...: one assertion
check() {
	local what=$1
	shift
	if "$@"; then pass; else fail "$what"; fi
}

# a testdata file without its first line (the comment saying what it holds)
data() { tail -n +2 "$TD/$1" >"$1"; }

# run ARGS...: the tool's exit status in $rc, its output in ./stdout and ./stderr
run() {
	"$TOOL" "$@" >stdout 2>stderr
	rc=$?
}

has() { grep -qF -- "$2" "$1"; }
empty() { [ ! -s "$1" ]; }
absent() { [ ! -e "$1" ]; }
no_temps() { ! ls -a | grep -q -- "^$1\.tmp-"; }
is_gzip() { [ "$(od -An -tx1 -N2 "$1" | tr -d ' ')" = 1f8b ]; }

# strict_json FILE: parses with Python's strict parser, as UTF-8 (gzip undone)
strict_json() {
	python3 - "$1" <<'PY'
import gzip, json, sys
raw = open(sys.argv[1], 'rb').read()
if raw[:2] == b'\x1f\x8b':
    raw = gzip.decompress(raw)
json.loads(raw.decode('utf-8', errors='strict'), strict=True)
PY
}

# same_json IN OUT: same top-level keys in the same order, equal values,
# numbers compared as exact decimals; a bare array counts as {"traceEvents": [...]}
same_json() {
	python3 - "$1" "$2" <<'PY'
import decimal, gzip, json, sys
class Obj(list):
    pass
def load(p):
    raw = open(p, 'rb').read()
    if raw[:2] == b'\x1f\x8b':
        raw = gzip.decompress(raw)
    return json.loads(raw.decode('utf-8'), parse_float=decimal.Decimal,
                      object_pairs_hook=Obj, strict=True)
def norm(v):
    if isinstance(v, Obj):
        return {k: norm(x) for k, x in v}
    if isinstance(v, list):
        return [norm(x) for x in v]
    return v
a, b = load(sys.argv[1]), load(sys.argv[2])
if not isinstance(a, Obj):
    a = Obj([('traceEvents', a)])
ka, kb = [k for k, _ in a], [k for k, _ in b]
if ka != kb:
    sys.exit('top-level keys differ: %s vs %s' % (ka, kb))
na, nb = norm(a), norm(b)
for k in ka:
    if na[k] != nb[k]:
        if k == 'traceEvents' and len(na[k]) == len(nb[k]):
            i = next(i for i in range(len(na[k])) if na[k][i] != nb[k][i])
            sys.exit('event %d differs:\n %s\n %s' % (i, na[k][i], nb[k][i]))
        sys.exit('%s differs' % k)
PY
}

# keys FILE: the top-level keys in order, one line, space separated
keys() { python3 -c 'import json,sys; print(" ".join(json.load(open(sys.argv[1]), object_pairs_hook=lambda p: [k for k, _ in p])))' "$1"; }

# complete_events FILE: events fully present in a possibly cut-off trace, counted by Python
complete_events() {
	python3 - "$1" <<'PY'
import json, sys
t = open(sys.argv[1], encoding='utf-8').read()
i = t.index('[', t.index('"traceEvents"')) + 1
dec, n = json.JSONDecoder(), 0
while True:
    while i < len(t) and t[i] in ' \n\r\t,':
        i += 1
    try:
        _, i = dec.raw_decode(t, i)
    except ValueError:
        break
    n += 1
print(n)
PY
}

usage_error() { # ARGS...: exit 2, one message and the hint on stderr, nothing on stdout
	run "$@"
	check "usage error for '$*' exits 2 (got $rc)" [ "$rc" = 2 ]
	check "usage error for '$*' says see --help" has stderr "see 'trace-convert --help'"
	check "usage error for '$*' names the tool" grep -q '^trace-convert: ' stderr
	check "usage error for '$*' prints nothing on stdout" empty stdout
}

# ---- help, version, usage errors ----
for opt in --help -h; do
	run $opt
	check "$opt exits 0" [ "$rc" = 0 ]
	check "$opt prints usage on stdout" has stdout "usage: trace-convert"
	check "$opt lists -o" has stdout "--output"
	check "$opt prints nothing on stderr" empty stderr
done
run --version
check "--version exits 0" [ "$rc" = 0 ]
check "--version prints a version on stdout" grep -Eq '^trace-convert .*[0-9]+\.[0-9]+\.[0-9]+' stdout
check "--version names zlib" has stdout zlib
check "--version prints nothing on stderr" empty stderr

data kineto_small.json
usage_error
usage_error --bogus kineto_small.json -o u1.json
usage_error kineto_small.json -o
usage_error kineto_small.json other.json -o u2.json
usage_error kineto_small.json
usage_error kineto_small.json -o u3.json --gzip-level 0
usage_error kineto_small.json -o u4.json --gzip-level 10
usage_error kineto_small.json -o u5.json --gzip-level abc
usage_error kineto_small.json -o u6.json --to xml
check "no output after usage errors" absent u1.json
check "no output after usage errors" absent u3.json
check "no output after usage errors" absent u6.json

# ---- input errors ----
run no-such-input.json -o out.json
check "missing input exits 1 (got $rc)" [ "$rc" = 1 ]
check "missing input is named" has stderr no-such-input.json
check "missing input leaves no output" absent out.json
mkdir adir
run adir -o out.json
check "a directory as input exits 1 (got $rc)" [ "$rc" = 1 ]
check "a directory as input is named" has stderr adir
run kineto_small.json -o no/such/dir/out.json
check "an output in a missing directory exits 1 (got $rc)" [ "$rc" = 1 ]
check "the output path is named" has stderr no/such/dir/out.json
: >empty.json
run empty.json -o out.json
check "empty input exits 1 (got $rc)" [ "$rc" = 1 ]
check "empty input is named" has stderr empty.json
check "empty input leaves no output" absent out.json
printf '{}' >obj.json
run obj.json -o out.json
check "'{}' exits 1 (got $rc)" [ "$rc" = 1 ]
check "'{}' leaves no output" absent out.json

# ---- a plain conversion ----
run kineto_small.json -o out.json
check "conversion exits 0 (got $rc)" [ "$rc" = 0 ]
check "conversion prints no warnings" empty stderr
check "output is strict JSON" strict_json out.json
check "output holds the same trace" same_json kineto_small.json out.json
check "top-level keys keep their order" [ "$(keys out.json)" = "schemaVersion deviceProperties record_shapes distributedInfo cupti_version cuda_runtime_version displayTimeUnit baseTimeNanoseconds traceEvents traceName" ]
check "jq counts 16 events" [ "$(jq '.traceEvents | length' out.json)" = 16 ]
check "jq reads the ts" [ "$(jq '.traceEvents[3].ts == 2413669096090.1' out.json)" = true ]
check "the ts keeps its nanoseconds in the text" grep -q '"ts":2413669096090\.10*[,}]' out.json
check "no temporary file left" no_temps out.json
# options may come before the input, and an existing output is replaced
echo old >out.json
run -o out.json kineto_small.json
check "options before the input work (got $rc)" [ "$rc" = 0 ]
check "existing output replaced" same_json kineto_small.json out.json
run kineto_small.json -o /dev/null
check "output to /dev/null works (got $rc)" [ "$rc" = 0 ]

# ---- dialects ----
for f in array_2020.json legacy_torch1.json meta_after.json; do
	data $f
	run $f -o out-$f
	check "$f converts (got $rc)" [ "$rc" = 0 ]
	check "$f output is strict JSON" strict_json out-$f
	check "$f output holds the same trace" same_json $f out-$f
done
check "bare array becomes the object form" [ "$(keys out-array_2020.json)" = traceEvents ]
check "metadata after the events stays after them" [ "$(keys out-meta_after.json)" = "schemaVersion traceEvents displayTimeUnit baseTimeNanoseconds WARNING traceName" ]
printf '{"a": 1, "traceEvents": [], "b": {"c": 2}}' >noevents.json
run noevents.json -o out-noevents.json
check "a trace with no events converts (got $rc)" [ "$rc" = 0 ]
check "metadata after an empty event list stays after it" [ "$(keys out-noevents.json)" = "a traceEvents b" ]

# ---- gzip ----
run kineto_small.json -o out.json.gz
check "gzip output exits 0 (got $rc)" [ "$rc" = 0 ]
check "gzip output has the gzip magic" is_gzip out.json.gz
check "gzip output passes gzip -t" gzip -t out.json.gz
check "gzip output holds the same trace" same_json kineto_small.json out.json.gz
run kineto_small.json -o gz-by-option.json --to json.gz
check "--to json.gz compresses whatever the name" is_gzip gz-by-option.json
run kineto_small.json -o plain-by-option.json.gz --to json
check "--to json writes plain JSON whatever the name" strict_json plain-by-option.json.gz
check "--to json writes plain JSON" bash -c '! od -An -tx1 -N2 plain-by-option.json.gz | grep -q "1f 8b"'
check "--to json under a .gz name says it writes plain JSON" has stderr "--to json writes plain JSON, not gzip"
run kineto_small.json -o plain-by-option.json.gz --to json -q
check "... and -q keeps that quiet" [ ! -s stderr ]
for lvl in 1 9; do
	run kineto_small.json -o lvl$lvl.json.gz --gzip-level $lvl
	check "--gzip-level $lvl works" same_json kineto_small.json lvl$lvl.json.gz
done
gzip -c kineto_small.json >in.json.gz
run in.json.gz -o from-gz.json
check "gzip input converts (got $rc)" [ "$rc" = 0 ]
check "gzip input holds the same trace" same_json kineto_small.json from-gz.json
cp in.json.gz in-gz-named.json
run in-gz-named.json -o from-gz2.json
check "gzip is found by content, not by name" same_json kineto_small.json from-gz2.json
{ head -c 1000 kineto_small.json | gzip -c; tail -c +1001 kineto_small.json | gzip -c; } >multi.json.gz
run multi.json.gz -o from-multi.json
check "two gzip members convert (got $rc)" [ "$rc" = 0 ]
check "two gzip members hold the whole trace" same_json kineto_small.json from-multi.json
run out.json.gz -o back.json.gz
check "gzip to gzip round trip" same_json kineto_small.json back.json.gz

# ---- standard input and output ----
"$TOOL" - -o - <kineto_small.json >stdout.json 2>stderr
check "stdin to stdout exits 0" [ $? = 0 ]
check "stdin to stdout holds the same trace" same_json kineto_small.json stdout.json
gzip -c kineto_small.json | "$TOOL" - -o - >stdout2.json 2>stderr
check "gzip on stdin" same_json kineto_small.json stdout2.json
"$TOOL" kineto_small.json -o - --to json.gz 2>stderr | gzip -dc >stdout3.json
check "gzip on stdout" same_json kineto_small.json stdout3.json
check "no temporary file for stdout" no_temps -

# ---- broken input ----
data garbage_middle.json
read -r gline gcol gbyte < <(python3 -c '
import sys; t = open(sys.argv[1], "rb").read(); i = t.index(b"@")
print(t[:i].count(b"\n") + 1, i - (t.rfind(b"\n", 0, i) + 1) + 1, i)' garbage_middle.json)
echo previous >kept.json
for out in out-garbage.json kept.json; do
	run garbage_middle.json -o $out
	check "garbage exits 1 (got $rc)" [ "$rc" = 1 ]
	check "garbage error names file, line and column" has stderr "garbage_middle.json:$gline:$gcol:"
	check "garbage error names the byte" has stderr "byte $gbyte"
	check "no temporary file after an error" no_temps $out
done
check "garbage leaves no output" absent out-garbage.json
check "an existing output survives a failed run" [ "$(cat kept.json)" = previous ]
for f in unescaped_quote.json bad_escape.json; do
	data $f
	run $f -o out-$f
	check "$f exits 1 (got $rc)" [ "$rc" = 1 ]
	check "$f error names the place" grep -Eq "$f:[0-9]+:[0-9]+:" stderr
	check "$f leaves no output" absent out-$f
	check "$f leaves no temporary file" no_temps out-$f
done
python3 -c 'print("{\"traceEvents\":[{\"ph\":\"X\",\"args\":{\"a\":" + "[" * 100000 + "]" * 100000 + "}}]}")' >deep.json
run deep.json -o out-deep.json
check "100000-deep nesting exits 1 (got $rc)" [ "$rc" = 1 ]
check "100000-deep nesting leaves no output" absent out-deep.json

# a run killed mid-write: cut inside the events
cut=$(($(grep -bo '"cudaEventRecord"' kineto_small.json | cut -d: -f1) + 40))
head -c $cut kineto_small.json >cut.json
want=$(complete_events cut.json)
run cut.json -o out-cut.json
check "a cut-off input converts with a warning (got $rc)" [ "$rc" = 0 ]
check "the warning names the input" grep -q 'warning.*cut.json' stderr
check "the warning names where it ended" has stderr "byte $cut"
check "output of a cut-off input is strict JSON" strict_json out-cut.json
check "every complete event kept ($want)" [ "$(jq '.traceEvents | length' out-cut.json)" = "$want" ]
check "kept events are the input's" python3 -c '
import json, sys
out = json.load(open(sys.argv[2]))["traceEvents"]
full = json.load(open(sys.argv[1]))["traceEvents"]
sys.exit(out != full[:len(out)])' kineto_small.json out-cut.json
run cut.json -o out-cut-q.json -q
check "-q silences the warning" empty stderr
run cut.json -o out-cut-strict.json --strict
check "--strict makes a cut-off input an error (got $rc)" [ "$rc" = 1 ]
check "--strict leaves no output" absent out-cut-strict.json

# raw control characters, invalid UTF-8 and a lone surrogate
printf '[{"ph":"X","name":"ctl\001\037\t end","cat":"bad\377\376 utf8","args":{"s":"\\ud800","p":"C:\\\\x","v":"x\300\257y"}}]' >dirty.json
run dirty.json -o out-dirty.json
check "dirty strings convert (got $rc)" [ "$rc" = 0 ]
check "dirty strings: output is strict JSON and UTF-8" strict_json out-dirty.json
check "dirty strings: control characters escaped" [ "$(jq -r '.traceEvents[0].name' out-dirty.json | od -An -c | tr -s ' ')" = " c t l 001 037 \t e n d \n" ]
check "dirty strings: invalid UTF-8 became U+FFFD" [ "$(jq -r '.traceEvents[0].cat' out-dirty.json)" = "bad�� utf8" ]
check "dirty strings: lone surrogate replaced" bash -c '! grep -qi "ud800" out-dirty.json'
check "dirty strings: the repair is reported" has stderr warning
run dirty.json -o out-dirty-q.json -q
check "-q silences the repair warning" empty stderr

# --tmpdir: what .pftrace and .sqlite output spill (the sorted runs, SQLite's
# temporary files) goes there, not to $TMPDIR, and is removed; a directory that
# is not there is an error that names it, with no output left
python3 -c '
import json
n = 40000
print(json.dumps({"traceEvents": [{"ph": "X", "ts": i * 7919 % n, "dur": 1, "name": "op%d" % (i * 104729 % n),
                                   "pid": 1, "tid": 1 + i % 4, "args": {"i": i}} for i in range(n)]}))' >spill.json
mkdir spill
for out in spill.pftrace spill.sqlite; do
	TMPDIR=$T/no-such-tmp run spill.json -o "$out" --memory 256K --tmpdir "$T/spill"
	check "$out: spilled to --tmpdir with \$TMPDIR missing (got $rc)" [ "$rc" = 0 ]
	check "$out: written" [ -s "$out" ]
	check "$out: --tmpdir left empty" [ -z "$(ls -A spill)" ]
	run spill.json -o "gone-$out" --memory 256K --tmpdir "$T/no/such/dir"
	check "$out: a missing --tmpdir is a usage error, found before reading (got $rc)" [ "$rc" = 2 ]
	check "$out: the error names the directory" has stderr "$T/no/such/dir"
	check "$out: no output after the error" absent "gone-$out"
	check "$out: no temporary file after the error" no_temps "gone-$out"
	TMPDIR=$T/no-such-tmp run spill.json -o "gone-$out" --memory 256K
	check "$out: a missing \$TMPDIR is an error (got $rc)" [ "$rc" = 1 ]
	check "$out: the error says the directory came from \$TMPDIR" has stderr "$T/no-such-tmp (\$TMPDIR)"
done

echo "$checks checks, $fails failed"
[ "$fails" = 0 ]
