#!/usr/bin/env bash
# test_outputs.sh: trace-stats -o publishes whole files and never replaces what is not a regular
# file (a device, a FIFO); a full disk is an error with a message.
# usage: test_outputs.sh TRACE-STATS TESTDATA
set -u
STATS=$1
DATA=$2
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
. "$(dirname "$0")/check.sh"
IN=$DATA/example_kineto.json

"$STATS" "$IN" -t kernels -o "$T/k.txt" 2>"$T/err"
check "-o FILE writes the table" grep -q "cuda_gpu_kern_sum" "$T/k.txt"
check "-o FILE leaves no temporary file" test "$(ls "$T")" = "$(printf 'err\nk.txt')"

"$STATS" "$IN" -t kernels -o /dev/null 2>"$T/err"
check "-o /dev/null exits 0" test $? -eq 0
check "-o /dev/null leaves /dev/null a device" test -c /dev/null

mkfifo "$T/fifo"
cat "$T/fifo" >"$T/from_fifo" &
reader=$!
"$STATS" "$IN" -t kernels -o "$T/fifo" 2>"$T/err"
wait $reader
check "-o FIFO writes through the FIFO" grep -q "cuda_gpu_kern_sum" "$T/from_fifo"
check "-o FIFO leaves the FIFO a FIFO" test -p "$T/fifo"

if [ -w /dev/full ]; then
	"$STATS" "$IN" -t kernels >/dev/full 2>"$T/err"
	rc=$?
	check "a full standard output exits 1" test $rc -eq 1
	check "a full standard output says so" grep -q "No space left" "$T/err"
	"$STATS" "$IN" -t kernels -o /dev/full 2>"$T/err"
	check "-o /dev/full says so, naming it" grep -q "/dev/full.*No space left" "$T/err"
else
	echo "(no writable /dev/full: its checks not run)"
fi

mkdir "$T/ro"
echo old >"$T/ro/k.txt"
chmod 555 "$T/ro"
if [ ! -w "$T/ro" ]; then
	"$STATS" "$IN" -t kernels -o "$T/ro/k.txt" 2>"$T/err"
	check "an unwritable directory is an error naming the output" grep -q "ro/k.txt" "$T/err"
	check "the old file is left as it was" test "$(cat "$T/ro/k.txt")" = old
else
	echo "(running as root: the read-only directory checks not run)"
fi
chmod 755 "$T/ro"
exit $fail
