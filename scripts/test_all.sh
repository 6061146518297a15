#!/bin/bash
# THE test command of infera (README, .ci/run): setup, build, then every suite; each suite reports
# `N passed, M failed`; the last line sums them. Exit 0 iff the build worked and nothing failed.
#
# Usage: bash scripts/test_all.sh [--no-setup] [--no-build] [--only SUITE,...] [--jobs N]
#   suites: format unit conformance models badinput hostile cli install python gpu sanitize   (default: all, in that order)
# Env: MODELS_DIR (default models: exported ONNX models, kept between runs), BUILD_DIR (build),
#      PYTHON (the Python with PyPI onnxruntime/onnx/numpy; default .venv/bin/python if setup made
#      one, else python3), TORCH_PYTHON (default /usr/bin/python3: Debian's torch, for the exports).
# Logs: $BUILD_DIR/test-logs/<suite>.log.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1

setup=1 build=1 only="" jobs=$(nproc 2>/dev/null || echo 2)
while [ $# -gt 0 ]; do
  case "$1" in
    --no-setup) setup=0; shift ;;
    --no-build) build=0; shift ;;
    --only) only="$2"; shift 2 ;;
    --jobs|-j) jobs="$2"; shift 2 ;;
    -h|--help) sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "test_all.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done

BUILD_DIR=${BUILD_DIR:-build}
MODELS_DIR=${MODELS_DIR:-models}
TORCH_PYTHON=${TORCH_PYTHON:-/usr/bin/python3}
LOG_DIR=$BUILD_DIR/test-logs
INFERA=$BUILD_DIR/infera
t_start=$(date +%s)

if [ "$setup" = 1 ]; then
  bash scripts/setup_debian.sh || { echo "test_all.sh: setup failed"; echo "0 passed, 1 failed"; exit 1; }
fi
if [ -z "${PYTHON:-}" ]; then
  if [ -x .venv/bin/python ]; then PYTHON=.venv/bin/python; else PYTHON=python3; fi
fi
export PYTHON INFERA LOG_DIR BUILD_DIR MODELS_DIR TORCH_PYTHON jobs

summary=()
total_pass=0 total_fail=0 total_skip=0

# record SUITE RC LOG SECONDS: adds the counts of the suite's last
# `N passed, M failed[, K skipped|K known failures]`. K: declared skips / known gaps, each in one
# commented file (tests/conformance/skips.txt, tests/badinput/known_gaps.txt); the suites run them
# and fail when one passes (stale).
record() {
  local suite=$1 rc=$2 log=$3 secs=$4 last p f s note=""
  last=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$log" | tail -n 1)
  if [[ "$last" =~ ^([0-9]+)\ passed,\ ([0-9]+)\ failed(,\ ([0-9]+)\ (skipped|known\ failures))? ]]; then
    p=${BASH_REMATCH[1]} f=${BASH_REMATCH[2]} s=${BASH_REMATCH[4]:-0}
  else
    p=0 f=1 s=0 note=" (no count line; exit $rc)"
  fi
  if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then f=1 note=" (exit $rc with no failure counted)"; fi
  total_pass=$((total_pass + p)) total_fail=$((total_fail + f)) total_skip=$((total_skip + s))
  summary+=("$(printf '%-12s %5d passed %4d failed %4d skipped/known %5ds%s' "$suite" "$p" "$f" "$s" "$secs" "$note")")
}

# run_suite SUITE TIMEOUT CMD...: runs CMD with its output to the console and the suite's log.
run_suite() {
  local suite=$1 limit=$2; shift 2
  local log=$LOG_DIR/$suite.log t0 rc
  echo
  echo "=== $suite: $*"
  t0=$(date +%s)
  timeout --kill-after=30 "$limit" "$@" 2>&1 | tee "$log"
  rc=${PIPESTATUS[0]}
  [ "$rc" -eq 124 ] && echo "$suite: stopped after ${limit}s" | tee -a "$log"
  record "$suite" "$rc" "$log" $(( $(date +%s) - t0 ))
}

wanted() { [ -z "$only" ] || [[ ",$only," == *",$1,"* ]]; }

finish() {
  echo
  echo "=== summary ($(( $(date +%s) - t_start ))s)"
  printf '%s\n' "${summary[@]}"
  echo "$total_pass passed, $total_fail failed, $total_skip skipped or known failures (declared, run, still failing)"
  [ "$total_fail" -eq 0 ]
  exit $?
}

mkdir -p "$LOG_DIR"
if [ "$build" = 1 ]; then
  echo "=== build: cmake -S . -B $BUILD_DIR -DCMAKE_BUILD_TYPE=Release -DINFERA_WERROR=ON && cmake --build $BUILD_DIR -j$jobs"
  t0=$(date +%s)
  if cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release -DINFERA_WERROR=ON >"$LOG_DIR/build.log" 2>&1 \
     && cmake --build "$BUILD_DIR" -j"$jobs" >>"$LOG_DIR/build.log" 2>&1; then
    summary+=("$(printf '%-12s %-41s %5ds' build ok $(( $(date +%s) - t0 )))")
  else
    grep -E 'error|Error' "$LOG_DIR/build.log" | head -n 30
    tail -n 15 "$LOG_DIR/build.log"
    summary+=("build        FAILED (log: $LOG_DIR/build.log)")
    total_fail=$((total_fail + 1))
    finish
  fi
fi
if [ ! -x "$INFERA" ]; then
  summary+=("build        no $INFERA")
  total_fail=$((total_fail + 1))
  finish
fi

# shellcheck disable=SC2317  # unit_tests and model_tests run through `bash -c`
# Unit tests (GoogleTest through ctest): converts ctest's summary into the common count line.
unit_tests() {
  local out rc
  out=$(ctest --test-dir "$BUILD_DIR" --output-on-failure -j"$jobs" --timeout 600 2>&1)
  rc=$?
  echo "$out"
  if [[ "$out" =~ tests\ passed,\ ([0-9]+)\ tests?\ failed\ out\ of\ ([0-9]+) ]]; then
    local failed=${BASH_REMATCH[1]} total=${BASH_REMATCH[2]} skipped
    # GTEST_SKIP'd tests (e.g. GPU cases on a machine without a GPU) count as skipped, not passed.
    skipped=$(grep -c '(Skipped)$' <<<"$out")
    echo "$(( total - failed - skipped )) passed, $failed failed, $skipped skipped"
  elif grep -q "No tests were found" <<<"$out"; then
    echo "unit: ctest found no tests"; echo "0 passed, 1 failed"
  fi
  return "$rc"
}

# shellcheck disable=SC2317
# Real models: export (kept in $MODELS_DIR between runs, keyed by exporter versions and script hash),
# then compare with ONNX Runtime through one loaded session per model. A failed export fails the
# suite, and only the files this run's export wrote or verified (the manifest) are tested.
model_tests() {
  local manifest=$LOG_DIR/models-manifest.txt export_log=$LOG_DIR/models-export.log rc_export rc out
  rm -f "$manifest"
  "$TORCH_PYTHON" tests/models/export_models.py --out "$MODELS_DIR" --manifest "$manifest" >"$export_log" 2>&1
  rc_export=$?
  grep -v -i 'warning' "$export_log"  # torch's export warnings stay in the log
  out=$("$PYTHON" tests/models/compare_models.py --models-dir "$MODELS_DIR" --manifest "$manifest" \
    --driver "$BUILD_DIR/session_driver" 2>&1)
  rc=$?
  echo "$out"
  if [ "$rc_export" -ne 0 ]; then
    echo "models: export_models.py exited $rc_export (log: $export_log)"
    if [[ "$(tail -n 1 <<<"$out")" =~ ^([0-9]+)\ passed,\ ([0-9]+)\ failed ]]; then
      echo "${BASH_REMATCH[1]} passed, $(( BASH_REMATCH[2] + 1 )) failed"
    else
      echo "0 passed, 1 failed"
    fi
    return 1
  fi
  return "$rc"
}

# shellcheck disable=SC2317
# Format: every C++ file as .clang-format says (a check that fails, never rewrites); one check.
format_check() {
  local files bad=0 f
  files=$(git ls-files '*.cpp' '*.h' '*.cu' 2>/dev/null)
  for f in $files; do
    clang-format --dry-run --Werror "$f" >/dev/null 2>&1 || { echo "not formatted: $f"; bad=$((bad + 1)); }
  done
  echo "format: $(wc -w <<<"$files") C++ files, $bad not formatted"
  if [ "$bad" -eq 0 ]; then echo "1 passed, 0 failed"; else echo "0 passed, 1 failed"; fi
  [ "$bad" -eq 0 ]
}

# shellcheck disable=SC2317
# GPU builds (compile only: no GPU here): -DINFERA_GPU=cuda and hip, warnings as errors; their
# unit tests run and report the GPU cases as skipped; the kernel tests exit 77 (skipped) without
# a GPU. No nvcc on this machine: the CUDA build is skipped, visibly.
gpu_builds() {
  local p=0 f=0 sk=0 flavor dir out n arch
  for flavor in cuda hip; do
    dir=${BUILD_DIR}-$flavor
    if [ "$flavor" = cuda ] && ! command -v nvcc >/dev/null && [ ! -x /usr/local/cuda/bin/nvcc ]; then
      echo "SKIP cuda build: no nvcc on this machine"; sk=$((sk + 1)); continue
    fi
    [ "$flavor" = cuda ] && ! command -v nvcc >/dev/null && export PATH=/usr/local/cuda/bin:$PATH
    # CUDA: one architecture for the check (sm_80 machine code: every kernel but the sm_90a files,
    # which have their own pass); device builds keep the default list (sm_80, sm_90, compute_90).
    arch=()
    [ "$flavor" = cuda ] && arch=(-DCMAKE_CUDA_ARCHITECTURES=80-real)
    if cmake -S . -B "$dir" -DINFERA_GPU=$flavor -DINFERA_WERROR=ON -DCMAKE_BUILD_TYPE=Release "${arch[@]}" \
         >"$LOG_DIR/build-$flavor.log" 2>&1 \
       && cmake --build "$dir" -j"$jobs" >>"$LOG_DIR/build-$flavor.log" 2>&1; then
      echo "PASS $flavor build (warnings as errors)"; p=$((p + 1))
    else
      echo "FAIL $flavor build: $(grep -m 3 -E 'error' "$LOG_DIR/build-$flavor.log")"; f=$((f + 1)); continue
    fi
    out=$("$dir/infera_unit_tests" --gtest_brief=1 2>&1); n=$?
    if [ $n -eq 0 ]; then
      echo "PASS $flavor unit tests ($(grep -m1 -o 'GPU cases skipped: .*' <<<"$out" || echo 'GPU cases ran'))"
      p=$((p + 1))
    else
      echo "FAIL $flavor unit tests: $(tail -n 5 <<<"$out")"; f=$((f + 1))
    fi
    if [ -x "$dir/infera_gpu_kernel_tests" ]; then
      out=$("$dir/infera_gpu_kernel_tests" 2>&1); n=$?
      if [ $n -eq 77 ]; then echo "SKIP $flavor kernel tests: $(tail -n 1 <<<"$out")"; sk=$((sk + 1))
      elif [ $n -eq 0 ]; then echo "PASS $flavor kernel tests"; p=$((p + 1))
      else echo "FAIL $flavor kernel tests: $(tail -n 3 <<<"$out")"; f=$((f + 1)); fi
    fi
  done
  # The int8 epilogue's arithmetic against the reference's on the host (no GPU needed).
  if out=$("$PYTHON" tests/gpu/epilogue_emulation.py 2>&1); then
    echo "PASS int8 epilogue emulation ($(tail -n 2 <<<"$out" | head -n 1))"; p=$((p + 1))
  else
    echo "FAIL int8 epilogue emulation: $(tail -n 4 <<<"$out")"; f=$((f + 1))
  fi
  echo "$p passed, $f failed, $sk skipped"
  [ "$f" -eq 0 ]
}

# shellcheck disable=SC2317
# Python package (python/, tests/python with pytest): the extension built into $BUILD_DIR with
# -DINFERA_PYTHON=ON (the package assembled in $BUILD_DIR/python, imported from there), then pytest;
# its summary becomes the count line (errors count as failures; GPU cases skip visibly without a GPU).
python_tests() {
  local out rc py last p f s n
  py=$PYTHON
  [[ "$py" == */* ]] && py="$(cd "$(dirname "$py")" && pwd)/$(basename "$py")"  # absolute, venv kept
  if ! "$py" -c "import nanobind, pytest" >/dev/null 2>&1; then
    echo "python: nanobind or pytest missing in $py (bash scripts/setup_debian.sh)"; echo "0 passed, 1 failed"
    return 1
  fi
  if ! { cmake -S . -B "$BUILD_DIR" -DINFERA_PYTHON=ON -DPython_EXECUTABLE="$(command -v "$py")" \
           >"$LOG_DIR/build-python.log" 2>&1 \
         && cmake --build "$BUILD_DIR" -j"$jobs" --target infera_python >>"$LOG_DIR/build-python.log" 2>&1; }; then
    grep -m 5 -E 'error|Error' "$LOG_DIR/build-python.log"; echo "python: build failed (log: $LOG_DIR/build-python.log)"
    echo "0 passed, 1 failed"
    return 1
  fi
  out=$(PYTHONPATH="$BUILD_DIR/python" "$py" -m pytest tests/python -q -rs -p no:cacheprovider 2>&1)
  rc=$?
  echo "$out"
  last=$(tail -n 1 <<<"$out")
  p=$(grep -oE '[0-9]+ passed' <<<"$last" | grep -oE '[0-9]+' || true)
  f=0
  for n in $(grep -oE '[0-9]+ (failed|errors?)' <<<"$last" | grep -oE '^[0-9]+'); do f=$((f + n)); done
  s=$(grep -oE '[0-9]+ skipped' <<<"$last" | grep -oE '[0-9]+' || true)
  p=${p:-0} s=${s:-0}
  [ "$rc" -ne 0 ] && [ "$f" -eq 0 ] && f=1
  echo "$p passed, $f failed, $s skipped"
  [ "$rc" -eq 0 ]
}

# shellcheck disable=SC2317
# ASan+UBSan (LSan on, fault hooks in) build of unit + badinput + hostile, then a TSan build of the
# concurrency tests; own folders ($BUILD_DIR-asan, $BUILD_DIR-tsan), ccache shared with the others.
# One count line for both.
sanitize_suite() {
  local p=0 f=0 rc=0 out last
  for mode in asan tsan; do
    if [ "$mode" = asan ]; then
      out=$(BUILD_DIR=$BUILD_DIR-asan bash scripts/test_sanitizers.sh --only unit,badinput,hostile --jobs "$jobs" 2>&1)
    else
      out=$(BUILD_DIR=$BUILD_DIR-tsan bash scripts/test_sanitizers.sh --tsan --jobs "$jobs" 2>&1)
    fi
    [ $? -ne 0 ] && rc=1
    echo "$out"
    last=$(grep -E '^[0-9]+ passed, [0-9]+ failed' <<<"$out" | tail -n 1)
    if [[ "$last" =~ ^([0-9]+)\ passed,\ ([0-9]+)\ failed ]]; then
      p=$((p + BASH_REMATCH[1])) f=$((f + BASH_REMATCH[2]))
    else
      f=$((f + 1))
    fi
  done
  echo "$p passed, $f failed"
  [ "$rc" -eq 0 ] && [ "$f" -eq 0 ]
}

export -f unit_tests model_tests format_check gpu_builds python_tests sanitize_suite  # so that `timeout bash -c` can run them
wanted format && run_suite format 300 bash -c format_check
wanted unit && run_suite unit 1800 bash -c unit_tests
wanted conformance && run_suite conformance 1800 bash tests/conformance/run_conformance.sh
wanted models && run_suite models 2400 bash -c model_tests
wanted badinput && run_suite badinput 900 "$PYTHON" tests/badinput/run_bad_inputs.py --infera "$INFERA"
wanted hostile && run_suite hostile 600 "$PYTHON" tests/hostile/run_hostile.py --infera "$INFERA"
wanted cli && run_suite cli 900 "$PYTHON" tests/cli/test_cli.py --infera "$INFERA"
wanted install && run_suite install 900 bash tests/install/test_install.sh "$BUILD_DIR" "$MODELS_DIR/squeezenet1_1.onnx"
wanted python && run_suite python 1800 bash -c python_tests
wanted gpu && run_suite gpu 2400 bash -c gpu_builds
wanted sanitize && run_suite sanitize 3600 bash -c sanitize_suite
finish
