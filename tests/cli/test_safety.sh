#!/usr/bin/env bash
# test_safety.sh: outputs are never mixed, clobbered or left half-written: SIGINT/SIGTERM remove the
# temporaries (a sink's OUT.tmp-*, trace-split's private part directory, the sorter's spill
# directory); one trace-split run at a time per output set; a re-split replaces the old set whole;
# a failed split leaves no directory it made; inputs read twice refuse pipes; -o equal to an input
# is refused; a file replaced keeps its permissions, and a symbolic link named by -o stays one.
# usage: test_safety.sh TOOLS-DIR TESTDATA
set -u
BIN=$1
DATA=$2
T=$(mktemp -d)
pids=()
trap 'for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done; rm -rf "$T"' EXIT
. "$(dirname "$0")/check.sh"
# wait_for GLOB: until a file matches (10 s at most)
wait_for() {
	local i
	for ((i = 0; i < 10000; i++)); do
		compgen -G "$1" >/dev/null && return 0
		sleep 0.001
	done
	return 1
}
none() { ! compgen -G "$1" >/dev/null; }
exists() { compgen -G "$1" >/dev/null; }
# dfl COMMAND...: run it with SIGINT at its default action (a background job of a
# non-interactive shell starts with SIGINT ignored, and a tool keeps an ignored signal ignored)
dfl() { exec python3 -c 'import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); os.execvp(sys.argv[1], sys.argv[1:])' "$@"; }
# stop_wait PID: its exit status, killing it if it has not ended in 20 s
stop_wait() {
	local i
	for ((i = 0; i < 200; i++)); do
		kill -0 "$1" 2>/dev/null || break
		sleep 0.1
	done
	kill -9 "$1" 2>/dev/null
	wait "$1"
}
IN=$DATA/example_kineto.json

# A trace big enough that a split takes a while; events in order of time.
python3 - "$T/big.json" <<'EOF'
import sys
with open(sys.argv[1], "w") as f:
    f.write('{"traceEvents":[\n')
    n = 300000
    for i in range(n):
        f.write('{"ph":"X","cat":"cpu_op","name":"aten::op%d","pid":1,"tid":%d,"ts":%d,"dur":3,'
                '"args":{"External id":%d,"Input Dims":[[4,5],[6]]}}%s\n'
                % (i % 50, i % 4, 1000 + i * 5, i, "," if i < n - 1 else ""))
    f.write("]}\n")
EOF

echo "== a signal removes the temporaries"
# trace-convert from a FIFO that stays open: the output's temporary exists, then SIGTERM.
mkfifo "$T/fifo"
mkdir "$T/conv"
"$BIN/trace-convert" "$T/fifo" -o "$T/conv/out.json" 2>/dev/null &
conv=$!
pids+=($conv)
exec 7>"$T/fifo"
head -c 4000000 "$T/big.json" >&7
wait_for "$T/conv/out.json.tmp-*"
check "trace-convert: the output's temporary exists while it runs" exists "$T/conv/out.json.tmp-*"
kill -TERM $conv
stop_wait $conv
rc=$?
exec 7>&-
check "trace-convert: SIGTERM ends it by the signal (status $rc)" test $rc -eq $((128 + 15))
check "trace-convert: SIGTERM leaves no temporary and no output" test -z "$(ls -A "$T/conv")"

# trace-merge with a small memory budget spills to TMPDIR; SIGINT removes the spill directory.
mkdir "$T/spill" "$T/merged"
TMPDIR=$T/spill dfl "$BIN/trace-merge" "$T/fifo" --memory 256K -o "$T/merged/all.json" 2>/dev/null &
merge=$!
pids+=($merge)
exec 7>"$T/fifo"
head -c 8000000 "$T/big.json" >&7
wait_for "$T/spill/tksort-*"
check "trace-merge: the sorter spilled to TMPDIR" exists "$T/spill/tksort-*"
kill -INT $merge
stop_wait $merge
rc=$?
exec 7>&-
check "trace-merge: SIGINT ends it by the signal (status $rc)" test $rc -eq $((128 + 2))
check "trace-merge: SIGINT leaves no spill directory" test -z "$(ls -A "$T/spill")"
check "trace-merge: SIGINT leaves no temporary and no output" test -z "$(ls -A "$T/merged")"

# trace-split stopped while its first parts exist, then SIGTERM.
"$BIN/trace-split" "$T/big.json" -o "$T/parts" --max-size 1M -q 2>/dev/null &
split=$!
pids+=($split)
wait_for "$T/parts/.big.split-*/part-1.json"
kill -STOP $split
check "trace-split: unpublished parts lie in the run's own directory" exists "$T/parts/.big.split-*/part-0.json"
check "trace-split: the run holds a lock on the set" test -e "$T/parts/.big.lock"

# trace-split into directories it creates, then SIGINT: they go too.
dfl "$BIN/trace-split" "$T/big.json" -o "$T/made/a/b" --max-size 1M -q 2>/dev/null &
split2=$!
pids+=($split2)
wait_for "$T/made/a/b/.big.split-*/part-1.json"
kill -INT $split2
stop_wait $split2
rc=$?
check "trace-split: SIGINT ends it by the signal (status $rc)" test $rc -eq $((128 + 2))
check "trace-split: SIGINT removes the directories the run created" test ! -e "$T/made"

echo "== one run at a time per output set"
"$BIN/trace-split" "$IN" -o "$T/parts" --name big --parts 2 2>"$T/err"
rc=$?
check "a second run on the same set fails (status $rc)" test $rc -eq 1
check "it says another run is writing the set" grep -q "another trace-split run is writing the parts of big" "$T/err"
check "it published nothing" none "$T/parts/big.part-*"
"$BIN/trace-split" "$IN" -o "$T/parts" --name other --parts 2 -q 2>"$T/err"
check "a run on another set in the same directory goes on" test -e "$T/parts/other.index.json"
kill -TERM $split
kill -CONT $split
stop_wait $split
rc=$?
check "trace-split: SIGTERM ends it by the signal (status $rc)" test $rc -eq $((128 + 15))
check "trace-split: SIGTERM leaves no part, no private directory and no lock" \
	test "$(ls -A "$T/parts" | grep -c big)" -eq 0

echo "== a re-split replaces the old set whole"
S=$T/resplit
"$BIN/trace-split" "$T/big.json" -o "$S" --parts 5 -q
check "five parts first" test "$(ls "$S" | grep -c '^big\.part-')" -eq 5
touch "$S/notes.txt" "$S/big.part-0001.json.bak" "$S/bigger.part-0009.json"
"$BIN/trace-split" "$T/big.json" -o "$S" --parts 2 -q
check "then two parts, the old ones removed" \
	test "$(ls "$S" | grep -E '^big\.part-[0-9]+\.[a-z]+$' | tr '\n' ' ')" = "big.part-0000.json big.part-0001.json "
check "files not of the set stay" test -e "$S/notes.txt" -a -e "$S/big.part-0001.json.bak" -a -e "$S/bigger.part-0009.json"
check "the index lists the two parts" test "$(grep -c '"file":' "$S/big.index.json")" -eq 2
"$BIN/trace-split" "$T/big.json" -o "$S" --parts 2 --to tkb -q
check "a set in another format replaces the JSON parts" \
	test "$(ls "$S" | grep -E '^big\.part-[0-9]+\.[a-z]+$' | tr '\n' ' ')" = "big.part-0000.tkb big.part-0001.tkb "
check "no lock or private directory is left" none "$S/.big*"
"$BIN/trace-split" "$S/big.part-0001.tkb" -o "$S" --name big --parts 2 2>"$T/err"
check "splitting a part of the set into the set is refused" grep -q "is a file of the output set" "$T/err"
check "and the set is unchanged" test -e "$S/big.part-0001.tkb"

echo "== a failed run leaves no directory it made"
printf '{"traceEvents":[{"ph":"X","name":"a","pid":1,"tid":1,"ts":1,"dur":1},x]}' >"$T/bad.json"
"$BIN/trace-split" "$T/bad.json" -o "$T/new/sub/dir" --parts 2 2>"$T/err"
check "malformed input fails" test $? -eq 1
check "the directories it created are gone" test ! -e "$T/new"
mkdir "$T/keep"
"$BIN/trace-split" "$T/bad.json" -o "$T/keep/sub" --parts 2 2>"$T/err"
check "a directory that existed stays" test -d "$T/keep" -a ! -e "$T/keep/sub"
# DIR's path made in part before a name too long for the file system stops the rest: what was made goes
mkdir "$T/half"
long=$(printf 'x%.0s' $(seq 300))
"$BIN/trace-split" "$IN" -o "$T/half/made/more/$long/dir" --parts 2 2>"$T/err"
check "a DIR that cannot be made fails" test $? -eq 1
check "the directories it made before the failure are gone" test -d "$T/half" -a ! -e "$T/half/made"

echo "== inputs read twice refuse pipes"
"$BIN/trace-split" <(cat "$IN") -o "$T/p2" --parts 2 2>"$T/err"
check "trace-split <(...) is a usage error" test $? -eq 2
check "trace-split <(...) says why" grep -q "reads its input twice, and this is a pipe or FIFO" "$T/err"
check "trace-split <(...) made no directory" test ! -e "$T/p2"
timeout 10 "$BIN/trace-stats" --steps 1 <(cat "$IN") >/dev/null 2>"$T/err"
check "trace-stats --steps <(...) is a usage error" test $? -eq 2
check "trace-stats --steps <(...) says why" grep -q "read each input twice, and this is a pipe or FIFO" "$T/err"
timeout 10 "$BIN/trace-stats" --steps 1 "$T/fifo" >/dev/null 2>"$T/err"
check "trace-stats --steps FIFO fails at once, not hanging" test $? -eq 2

echo "== -o equal to an input"
cp "$IN" "$T/in.json"
ln "$T/in.json" "$T/link.json"
before=$(cksum <"$T/in.json")
"$BIN/trace-convert" "$T/in.json" -o "$T/link.json" 2>"$T/err"
check "trace-convert -o INPUT (a hard link) is a usage error" test $? -eq 2
check "trace-convert names both" grep -q "link.json is the input .*in.json" "$T/err"
"$BIN/trace-merge" "$T/in.json" "$IN" -o "$T/./in.json" 2>"$T/err"
check "trace-merge -o INPUT is a usage error" test $? -eq 2
"$BIN/trace-stats" "$T/in.json" -o "$T/in.json" 2>"$T/err"
check "trace-stats -o INPUT is a usage error" test $? -eq 2
check "the input is unchanged" test "$(cksum <"$T/in.json")" = "$before"

echo "== a file replaced keeps its permissions; a symbolic link stays"
mkdir "$T/perm"
echo '[]' >"$T/perm/private.json"
chmod 600 "$T/perm/private.json"
"$BIN/trace-convert" -q "$IN" -o "$T/perm/private.json"
check "a replaced file that was private (600) stays 600" test "$(stat -c %a "$T/perm/private.json")" = 600
check "... and holds the new trace" cmp -s "$T/perm/private.json" <("$BIN/trace-convert" -q "$IN" -o -)
(umask 027 && "$BIN/trace-stats" -q "$IN" -o "$T/perm/new.txt")
check "a new file gets the umask's permissions (027: 640)" test "$(stat -c %a "$T/perm/new.txt")" = 640
echo '[]' >"$T/perm/target.json"
ln -s target.json "$T/perm/link.json"
"$BIN/trace-convert" -q "$IN" -o "$T/perm/link.json"
check "-o SYMLINK writes what it points to" test -L "$T/perm/link.json" -a "$(readlink "$T/perm/link.json")" = target.json
check "... the target holds the new trace" cmp -s "$T/perm/target.json" "$T/perm/private.json"
check "-o /dev/stdout into a pipe (a link to a pipe, written through)" \
	cmp -s <("$BIN/trace-convert" -q "$IN" -o /dev/stdout | cat) <("$BIN/trace-convert" -q "$IN" -o -)
ln -s nowhere/x.json "$T/perm/dangling.json"
"$BIN/trace-convert" -q "$IN" -o "$T/perm/dangling.json" 2>"$T/err"
check "-o a dangling symbolic link fails, naming it" test $? -eq 1 -a -L "$T/perm/dangling.json"
check "... saying why" grep -q "dangling.json: cannot follow the symbolic link" "$T/err"
check "... and leaves nothing behind" test "$(ls "$T/perm" | wc -l)" -eq 5

exit $fail
