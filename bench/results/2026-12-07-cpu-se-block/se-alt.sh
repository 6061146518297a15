#!/bin/bash
# usage: se-alt.sh MODEL BATCH ROUNDS label=cmd ...   (cmd may start with ENV=VAL)
m=$1; b=$2; r=$3; shift 3
for i in $(seq $r); do
  for spec in "$@"; do
    label=${spec%%=*}; cmd=${spec#*=}
    p50=$(env $cmd bench /tmp/models/$m.onnx --batch $b --threads 2 --duration 1.5 2>&1 | awk -v b=$b '$1==b{print $4}')
    echo "$m b$b round $i $label p50 $p50 load $(cut -d' ' -f1 /proc/loadavg)"
  done
done
