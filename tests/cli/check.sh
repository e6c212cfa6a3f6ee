# check.sh: sourced by the CLI test scripts: check MESSAGE COMMAND... runs one assertion,
# says "ok: MESSAGE" or "FAIL: MESSAGE", and a failure sets fail=1 (the script ends with exit $fail).
fail=0
check() {
	local msg=$1
	shift
	if "$@"; then echo "ok: $msg"; else echo "FAIL: $msg"; fail=1; fi
}
