#!/bin/bash
# Installs infera into a temporary prefix and builds examples/embed against it three ways: the
# CMake package with the shared library, the CMake package with the static one, and pkg-config.
# Each must load a model, run it from 4 threads and print 4 equal top-5 lines.
# Usage: bash tests/install/test_install.sh BUILD_DIR MODEL
set -uo pipefail
build=${1:?build dir}; model=${2:?model}
root=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d -t infera-install-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0
ok() { echo "PASS $1"; pass=$((pass + 1)); }
bad() { echo "FAIL $1"; fail=$((fail + 1)); }

# check NAME BINARY: runs it, wants 4 identical top-5 lines.
check() {
  local out
  if ! out=$("$2" "$model" 2>&1); then bad "$1: exit $? ($out)"; return; fi
  if [ "$(grep -c '^thread [0-3] top-5: ' <<<"$out")" -ne 4 ] || [ "$(sed 's/^thread [0-3] //' <<<"$out" | sort -u | wc -l)" -ne 1 ]; then
    bad "$1: expected 4 equal top-5 lines, got: $out"; return
  fi
  ok "$1 ($(head -n 1 <<<"$out"))"
}

if cmake --install "$build" --prefix "$tmp/prefix" >"$tmp/install.log" 2>&1; then
  ok "cmake --install"
else
  bad "cmake --install: $(tail -n 3 "$tmp/install.log")"
fi
for f in include/infera/infera.h bin/infera; do
  [ -e "$tmp/prefix/$f" ] && ok "installed $f" || bad "missing $f"
done
lib=$(ls -d "$tmp"/prefix/lib*/ | head -n 1)
for f in libinfera.so libinfera.a pkgconfig/infera.pc cmake/infera/inferaConfig.cmake; do
  [ -e "$lib/$f" ] && ok "installed $(basename "$lib")/$f" || bad "missing $(basename "$lib")/$f"
done
# Exactly the public headers (include/infera/*.h), nothing from src/.
want=$(cd "$root/include" && find infera -name '*.h' | sort)
have=$(cd "$tmp/prefix/include" && find . -name '*.h' | sed 's|^\./||' | sort)
[ "$have" = "$want" ] && ok "installed headers are the public ones ($(echo $want))" \
  || bad "installed headers differ from include/infera: $(echo $have)"
"$tmp/prefix/bin/infera" --version | grep -q "^infera [0-9]" && ok "installed infera --version" || bad "infera --version"

if cmake -S "$root/examples/embed" -B "$tmp/embed" -DCMAKE_PREFIX_PATH="$tmp/prefix" -DCMAKE_BUILD_TYPE=Release \
     >"$tmp/cfg.log" 2>&1 && cmake --build "$tmp/embed" -j2 >"$tmp/build.log" 2>&1; then
  ok "find_package(infera) consumer builds"
  LD_LIBRARY_PATH="$lib" check "find_package, infera::infera (shared)" "$tmp/embed/embed"
  check "find_package, infera::infera_static" "$tmp/embed/embed_static"
  if ldd "$tmp/embed/embed" | grep -q 'libdnnl\|libprotobuf'; then
    # The shared library needs them at run time, the consumer must not link them itself.
    readelf -d "$tmp/embed/embed" | grep NEEDED | grep -q 'dnnl\|protobuf\|onnx' && bad "consumer links private deps" \
      || ok "consumer links libinfera only"
  else
    ok "consumer links libinfera only"
  fi
else
  bad "find_package consumer: $(tail -n 5 "$tmp/cfg.log" "$tmp/build.log")"
fi

if PKG_CONFIG_PATH="$lib/pkgconfig" pkg-config --exists infera; then
  flags=$(PKG_CONFIG_PATH="$lib/pkgconfig" pkg-config --cflags --libs infera)
  if g++ -std=c++20 -O2 "$root/examples/embed/embed.cpp" $flags -o "$tmp/embed_pc" -pthread 2>"$tmp/pc.log"; then
    ok "pkg-config consumer builds ($flags)"
    LD_LIBRARY_PATH="$lib" check "pkg-config, shared" "$tmp/embed_pc"
  else
    bad "pkg-config consumer: $(head -n 5 "$tmp/pc.log")"
  fi
else
  bad "pkg-config --exists infera"
fi
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
