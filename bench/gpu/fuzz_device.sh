# Sourced by bench/gpu/memory_run.sh: a libFuzzer target (FUZZ_BIN, default fuzz_model) (ASan + UBSan, libFuzzer; issue 7's 10 million
# executions) on the GPU machine's spare cores while the GPU parts run, from
# .gpu-infera/fuzz.tar.xz (the binary, libomp, and the corpus: work/, corpus/, seeds/ of
# build-fuzz and tests/fuzz/seeds/model). fuzz_start [SECONDS] [CORES]; fuzz_stop: waits, sums the
# executions of every job, copies crashes and new units' count to $out.
fuzz_start() {
  local secs=${1:-300} cores=${2:-4-15}
  fz=/tmp/fz; rm -rf $fz; mkdir -p /tmp; tar -C /tmp -xJf .gpu-infera/fuzz.tar.xz
  mkdir -p $fz/crashes
  local n; n=$(taskset -c "$cores" nproc)
  ( cd $fz && LD_LIBRARY_PATH=$fz/lib:$bin/lib ASAN_OPTIONS=allocator_may_return_null=1:max_allocation_size_mb=2048:detect_leaks=1 \
      UBSAN_OPTIONS=print_stacktrace=1 taskset -c "$cores" ./${FUZZ_BIN:-fuzz_model} -jobs=$n -workers=$n -max_total_time=$secs \
      -rss_limit_mb=4096 -timeout=60 -artifact_prefix=crashes/ -print_final_stats=1 work corpus seeds \
      >$fz/parent.log 2>&1 ) &
  fuzz_pid=$!
  echo "${FUZZ_BIN:-fuzz_model}: $n jobs on cores $cores for $secs s"
}
fuzz_stop() {
  wait $fuzz_pid 2>/dev/null
  local total=0 x
  for f in $fz/fuzz-*.log; do
    x=$(grep -E "^stat::number_of_executed_units" "$f" | awk '{print $2}')
    total=$((total + ${x:-0}))
  done
  echo "${FUZZ_BIN:-fuzz_model} on the GPU machine: $(ls $fz/fuzz-*.log | wc -l) jobs, $total executions in all," \
    "$(ls $fz/crashes | wc -l) crash/timeout/leak files"
  grep -h -E "ERROR: |SUMMARY: |runtime error" $fz/fuzz-*.log | sort | uniq -c | head -n 20
  mkdir -p "$out/fuzz"; cp $fz/crashes/* "$out/fuzz/" 2>/dev/null
  for f in $fz/fuzz-*.log; do tail -n 12 "$f"; done > "$out/fuzz/tails.txt"
}
