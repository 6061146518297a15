#!/bin/bash
# The test suites under AddressSanitizer + UndefinedBehaviorSanitizer (LeakSanitizer on): builds the
# library, the unit tests and the CLI (what the suites run) with -DINFERA_SANITIZE=address,undefined
# at -O1 -g1 into its own folder (default build-asan, ccache when installed), then runs unit,
# conformance, badinput and hostile through scripts/test_all.sh on that build. Any sanitizer
# report stops the process that made it, so it counts as a failure; the
# logs are also searched for reports (a report in a child process whose exit code was ignored).
# Last line: `N passed, M failed`. Exit 0 iff the build worked and nothing failed.
#
# The build has the fault hooks compiled in (-DINFERA_FAULT_INJECTION=ON): the unit suite's Faults
# tests then fail every allocation / launch / write in turn under ASan (leaks on error paths count).
# --tsan instead: ThreadSanitizer build (default folder build-tsan) of the library and the
# concurrency tests only (infera_tsan_tests: test_concurrency.cpp + test_faults.cpp), running them
# (one session from 8 threads, 8 sessions at once, a session destroyed mid-run); libgomp is not
# TSan-instrumented: its races are suppressed (scripts/tsan.supp).
#
# Usage: bash scripts/test_sanitizers.sh [--tsan] [--no-build] [--only SUITE,...] [--jobs N]
#   suites: unit conformance badinput hostile   (default: all four; models are left out: 20+ min)
# Env: BUILD_DIR (default build-asan / build-tsan), PYTHON (as for test_all.sh).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1

build=1 only="unit,conformance,badinput,hostile" jobs=$(nproc 2>/dev/null || echo 2) tsan=0
while [ $# -gt 0 ]; do
  case "$1" in
    --tsan) tsan=1; shift ;;
    --no-build) build=0; shift ;;
    --only) only="$2"; shift 2 ;;
    --jobs|-j) jobs="$2"; shift 2 ;;
    -h|--help) sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "test_sanitizers.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
t0=$(date +%s)

if [ "$tsan" = 1 ]; then
  export BUILD_DIR=${BUILD_DIR:-build-tsan}
  if [ "$build" = 1 ]; then
    echo "=== build ($BUILD_DIR): -DINFERA_SANITIZE=thread, -O1 -g1, the concurrency tests only"
    if ! { cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=None -DCMAKE_CXX_FLAGS="-O1 -g1" \
             -DINFERA_SANITIZE=thread >"$BUILD_DIR.log" 2>&1 \
           && cmake --build "$BUILD_DIR" -j"$jobs" --target infera_tsan_tests >>"$BUILD_DIR.log" 2>&1; }; then
      grep -E 'error|Error' "$BUILD_DIR.log" | head -n 30
      echo "test_sanitizers.sh: build failed (log: $BUILD_DIR.log)"
      echo "0 passed, 1 failed"
      exit 1
    fi
    echo "build: $(( $(date +%s) - t0 ))s"
  fi
  mkdir -p "$BUILD_DIR/test-logs"
  log=$BUILD_DIR/test-logs/tsan.log
  export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1:suppressions=$PWD/scripts/tsan.supp}
  "$BUILD_DIR/infera_tsan_tests" --gtest_filter='Concurrency.*:Faults.SessionDestroyed*:Faults.EightSessions*' \
    2>&1 | tee "$log"
  rc=${PIPESTATUS[0]}
  passed=$(grep -c '^\[       OK \]' "$log") failed=$(grep -c '^\[  FAILED  \] [A-Za-z]' "$log")
  if grep -q 'WARNING: ThreadSanitizer' "$log" || [ "$rc" -ne 0 ]; then
    echo "ThreadSanitizer report or failure (exit $rc; log: $log)"
    [ "$failed" -eq 0 ] && failed=1
  fi
  echo "=== tsan: $(( $(date +%s) - t0 ))s in all"
  echo "$passed passed, $failed failed"
  [ "$failed" -eq 0 ]
  exit $?
fi

export BUILD_DIR=${BUILD_DIR:-build-asan}

if [ "$build" = 1 ]; then
  echo "=== build ($BUILD_DIR): -DINFERA_SANITIZE=address,undefined, -O1 -g1, assertions on, fault hooks"
  # -O1 keeps the suites fast enough; no NDEBUG, so Result misuse traps too. -g1: line tables, all
  # that a report's stack needs. Only what the suites run: the unit tests and the CLI.
  if ! { cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=None -DCMAKE_CXX_FLAGS="-O1 -g1" \
           -DINFERA_SANITIZE=address,undefined -DINFERA_FAULT_INJECTION=ON >"$BUILD_DIR.log" 2>&1 \
         && cmake --build "$BUILD_DIR" -j"$jobs" --target infera_unit_tests infera_cli >>"$BUILD_DIR.log" 2>&1; }; then
    grep -E 'error|Error' "$BUILD_DIR.log" | head -n 30
    echo "test_sanitizers.sh: build failed (log: $BUILD_DIR.log)"
    echo "0 passed, 1 failed"
    exit 1
  fi
  echo "build: $(( $(date +%s) - t0 ))s"
fi

# detect_leaks: LeakSanitizer at exit. abort_on_error=0 + exitcode: a report is an exit code, not a
# core dump. allocator_may_return_null: a hostile size gets our kOutOfMemory path, as in release.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:halt_on_error=1:abort_on_error=0:allocator_may_return_null=1:detect_stack_use_after_return=0:strict_string_checks=1:check_initialization_order=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

suites=${only//hostile/}
suites=$(echo "$suites" | sed -e 's/,,*/,/g' -e 's/^,//' -e 's/,$//')
rc=0 pass=0 fail=0
if [ -n "$suites" ]; then
  mkdir -p "$BUILD_DIR/test-logs"
  bash scripts/test_all.sh --no-setup --no-build --only "$suites" --jobs "$jobs" 2>&1 \
    | tee "$BUILD_DIR/test-logs/suites.log"
  rc=${PIPESTATUS[0]}
  last=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$BUILD_DIR/test-logs/suites.log" | tail -n 1)
  [[ "$last" =~ ^([0-9]+)\ passed,\ ([0-9]+)\ failed ]] && pass=${BASH_REMATCH[1]} fail=${BASH_REMATCH[2]}
  [ -z "$last" ] && fail=$((fail + 1))
fi
if [[ ",$only," == *",hostile,"* ]]; then
  PY=${PYTHON:-python3}
  [ -z "${PYTHON:-}" ] && [ -x .venv/bin/python ] && PY=.venv/bin/python
  mkdir -p "$BUILD_DIR/test-logs"
  echo
  echo "=== hostile"
  # Sanitized code is 2-5x slower: the per-case time limits scale with it.
  "$PY" tests/hostile/run_hostile.py --infera "$BUILD_DIR/infera" --time-scale 4 --sanitized 2>&1 | tee "$BUILD_DIR/test-logs/hostile.log"
  last=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$BUILD_DIR/test-logs/hostile.log" | tail -n 1)
  if [[ "$last" =~ ^([0-9]+)\ passed,\ ([0-9]+)\ failed ]]; then
    pass=$((pass + BASH_REMATCH[1])) fail=$((fail + BASH_REMATCH[2]))
  else
    fail=$((fail + 1))
  fi
fi

# Reports that a test harness might not have turned into a failure.
reports=$(grep -lE 'ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:' "$BUILD_DIR"/test-logs/*.log \
            "$BUILD_DIR"/Testing/Temporary/LastTest.log 2>/dev/null)
if [ -n "$reports" ]; then
  echo "sanitizer reports in: $reports"
  fail=$((fail + 1))
fi
echo "=== sanitizers: $(( $(date +%s) - t0 ))s in all"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ] && [ "$rc" -eq 0 ]
