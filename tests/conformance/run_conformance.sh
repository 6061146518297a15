#!/bin/bash
# ONNX node conformance of infera's operators: runs `infera check` on
#   1. Debian's libonnx-testdata node tests (onnx 1.12, /usr/share/libonnx-testdata/data/node),
#   2. the node tests of the installed PyPI onnx wheel (newer opsets), written by select_tests.py,
# each restricted to tests of the ops in issue #2's list (see select_tests.py), with the skips of
# tests/conformance/skips.txt (a line may name its source: see skips_for). Full logs go to $LOG_DIR
# (default build/test-logs); the console gets failing lines and each source's count.
# Last line: `N passed, M failed, K skipped`.
#
# Usage: bash tests/conformance/run_conformance.sh [--only debian|onnx] [--verbose] [--keep DIR]
# Env:   INFERA (default build/infera), PYTHON (needs PyPI onnx; default .venv/bin/python if
#        scripts/setup_debian.sh made one, else python3),
#        ONNX_TESTDATA (default /usr/share/libonnx-testdata/data/node)
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1

INFERA=${INFERA:-build/infera}
if [ -z "${PYTHON:-}" ]; then
  if [ -x .venv/bin/python ]; then PYTHON=.venv/bin/python; else PYTHON=python3; fi
fi
ONNX_TESTDATA=${ONNX_TESTDATA:-/usr/share/libonnx-testdata/data/node}
LOG_DIR=${LOG_DIR:-build/test-logs}
SKIPS=tests/conformance/skips.txt
only="" verbose=0 keep=""
while [ $# -gt 0 ]; do
  case "$1" in
    --only) only="$2"; shift 2 ;;
    --verbose|-v) verbose=1; shift ;;
    --keep) keep="$2"; shift 2 ;;
    *) echo "run_conformance.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done

if [ ! -x "$INFERA" ]; then
  echo "run_conformance.sh: $INFERA is not built" >&2
  echo "0 passed, 1 failed"
  exit 1
fi
mkdir -p "$LOG_DIR"
if [ -n "$keep" ]; then work="$keep"; rm -rf "$work"; mkdir -p "$work"
else work=$(mktemp -d -t infera-conformance-XXXXXX); trap 'rm -rf "$work"' EXIT; fi

total_pass=0 total_fail=0 total_skip=0

# skips_for SOURCE: the lines of skips.txt for that source, in infera check's format. A line may be
# qualified (`debian:test_elu  # reason`, `onnx:test_elu  # reason`): the same test name can mean
# different opsets in the two sources. Unqualified names apply to both.
skips_for() {
  sed -e 's/^[[:space:]]*//' "$SKIPS" | grep -v -e '^#' -e '^$' | while IFS= read -r line; do
    case "$line" in
      "$1":*) echo "${line#"$1":}" ;;
      debian:*|onnx:*) ;;
      *) echo "$line" ;;
    esac
  done
}

# run_source NAME: expects $work/NAME filled; runs infera check, adds its counts to the totals.
run_source() {
  local name=$1 dir=$work/$1 log=$LOG_DIR/conformance-$1.log rc last p f s
  skips_for "$name" >"$work/skips-$name.txt"
  "$INFERA" check "$dir" --skip-file "$work/skips-$name.txt" >"$log" 2>&1
  rc=$?
  last=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$log" | tail -n 1)
  if [ "$verbose" = 1 ]; then cat "$log"
  else grep -iE 'fail|terminate|segmentation' "$log" | grep -vE '^[0-9]+ passed, [0-9]+ failed' | head -n 200; fi
  if [[ "$last" =~ ^([0-9]+)\ passed,\ ([0-9]+)\ failed(,\ ([0-9]+)\ skipped)? ]]; then
    p=${BASH_REMATCH[1]} f=${BASH_REMATCH[2]} s=${BASH_REMATCH[4]:-0}
  else
    echo "conformance[$name]: infera check exited $rc without a final count line (log: $log)"
    p=0 f=1 s=0
  fi
  if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
    echo "conformance[$name]: infera check exited $rc although it reported no failure"; f=1
  fi
  if [ "$rc" -eq 0 ] && [ "$f" -ne 0 ]; then
    echo "conformance[$name]: infera check exited 0 although it reported $f failed"
  fi
  echo "conformance[$name]: $p passed, $f failed, $s skipped (log: $log)"
  total_pass=$((total_pass + p)) total_fail=$((total_fail + f)) total_skip=$((total_skip + s))
}

if [ -z "$only" ] || [ "$only" = debian ]; then
  if "$PYTHON" tests/conformance/select_tests.py --debian "$ONNX_TESTDATA" --out "$work/debian" --list \
       >"$LOG_DIR/conformance-debian-selected.txt"; then
    echo "conformance[debian]: $(tail -n 1 "$LOG_DIR/conformance-debian-selected.txt")"
    run_source debian
  else
    echo "conformance[debian]: selecting tests failed"; total_fail=$((total_fail + 1))
  fi
fi
if [ -z "$only" ] || [ "$only" = onnx ]; then
  if "$PYTHON" tests/conformance/select_tests.py --onnx-wheel --out "$work/onnx" --list \
       >"$LOG_DIR/conformance-onnx-selected.txt"; then
    echo "conformance[onnx]: $(tail -n 1 "$LOG_DIR/conformance-onnx-selected.txt")"
    run_source onnx
  else
    echo "conformance[onnx]: generating tests failed"; total_fail=$((total_fail + 1))
  fi
fi

# A skip naming a test that its source(s) did not select is stale (renamed test, op no longer ours).
while read -r t; do
  src=""; name=$t
  case "$t" in debian:*|onnx:*) src=${t%%:*}; name=${t#*:} ;; esac
  # shellcheck disable=SC2206  # the glob is wanted when no source is named
  files=("$LOG_DIR"/conformance-${src:-*}-selected.txt)
  if ! cat "${files[@]}" 2>/dev/null | grep -qxF "$name"; then
    echo "conformance: skips.txt names $t, which ${src:-no source} did not select"
  fi
done < <(sed -e 's/#.*//' -e 's/[[:space:]]*$//' -e 's/^[[:space:]]*//' "$SKIPS" | grep -v '^$')

echo "$total_pass passed, $total_fail failed, $total_skip skipped"
[ "$total_fail" -eq 0 ]
