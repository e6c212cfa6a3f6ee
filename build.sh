#!/usr/bin/env bash
# build.sh: install the Debian build dependencies if missing, build tracekit, convert the bundled example.
set -euo pipefail
cd "$(dirname "$0")"

PKGS="build-essential cmake pkg-config zlib1g-dev libsqlite3-dev libarchive-dev libcmocka-dev libisal-dev libdeflate-dev python3 jq"
missing=()
for p in $PKGS; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
	SUDO=
	[ "$(id -u)" -eq 0 ] || SUDO=sudo
	echo "build.sh: installing ${missing[*]}"
	$SUDO apt-get update -q
	$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}"
fi

cmake -S . -B build -DCMAKE_BUILD_TYPE=Release ${TK_CMAKE_FLAGS:-}
cmake --build build -j"$(nproc)"

echo
echo "== trace-convert testdata/example_kineto.json -o build/example.json.gz"
build/tools/trace-convert testdata/example_kineto.json -o build/example.json.gz
printf 'wrote build/example.json.gz: %s bytes from %s bytes of JSON\n' \
	"$(stat -c %s build/example.json.gz)" "$(stat -c %s testdata/example_kineto.json)"

echo
echo "== trace-stats build/example.json.gz"
build/tools/trace-stats build/example.json.gz
