#!/usr/bin/env bash
# check.sh: install the build into a temporary prefix and build a program against it, with pkg-config and with CMake.
set -euo pipefail
build=$1 src=$2 cc=${3:-cc}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
pc=$(ls -d "$tmp"/prefix/lib*/pkgconfig | head -n 1)
libdir=$(dirname "$pc")
for f in tracekit.h tkb.h sort.h merge.h split.h stats.h; do
	[ -f "$tmp/prefix/include/tracekit/$f" ] || { echo "FAIL: header $f not installed"; exit 1; }
done
# pkg-config: the flags point into the prefix wherever it was installed
"$cc" "$src/consumer.c" -o "$tmp/pc" $(PKG_CONFIG_PATH="$pc" pkg-config --cflags --libs tracekit) \
	-Wl,-rpath,"$libdir"
out=$("$tmp/pc" "$src/../../testdata/example_kineto.json")
[ "$out" = "events=19 first=ProfilerStep#3" ] || { echo "FAIL: pkg-config build printed '$out'"; exit 1; }
# CMake package: find_package(tracekit) and the tracekit::tracekit target
mkdir "$tmp/cm"
cat >"$tmp/cm/CMakeLists.txt" <<CM
cmake_minimum_required(VERSION 3.25)
project(consumer C)
find_package(tracekit REQUIRED)
add_executable(consumer "$src/consumer.c")
target_link_libraries(consumer tracekit::tracekit)
add_executable(consumer_static "$src/consumer.c")
target_link_libraries(consumer_static tracekit::tracekit_static)
CM
# the installed package names no library by a path of this machine's
if grep -nE '[":;]/[^";]*\.(so|a)\b' "$libdir"/cmake/tracekit/tracekitTargets*.cmake; then
	echo "FAIL: the installed CMake package names a library by its path"
	exit 1
fi
cmake -S "$tmp/cm" -B "$tmp/cm/b" -DCMAKE_PREFIX_PATH="$tmp/prefix" -DCMAKE_BUILD_RPATH="$libdir" >/dev/null
cmake --build "$tmp/cm/b" >/dev/null
for exe in consumer consumer_static; do
	out=$("$tmp/cm/b/$exe" "$src/../../testdata/example_kineto.json")
	[ "$out" = "events=19 first=ProfilerStep#3" ] || { echo "FAIL: CMake build of $exe printed '$out'"; exit 1; }
done
echo "1 passed, 0 failed"
