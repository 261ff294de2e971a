#!/usr/bin/env bash
# GEMM benchmark: compiles the HLO GEMM, runs it on the given backend with `tpusim run` (which also checks
# it against the interpreter) and prints one line of figures (docs/performance.md, "GEMM").
#   bench_gemm.sh TPUSIM HLO CONFIG_FILE BACKEND M K N
#   mxu_busy_pct:        MXU busy cycles (one LHS row through the array) / cycles
#   mxu_utilization_pct: M*K*N MACs / (LANES^2 MAC slots * cycles): the same when no tile is padded
set -euo pipefail
if [ $# -ne 7 ]; then
  echo "usage: $0 TPUSIM HLO CONFIG_FILE BACKEND M K N" >&2
  exit 2
fi
tpusim=$1 hlo=$2 config_file=$3 backend=$4 m=$5 k=$6 n=$7
config=$(basename "$config_file" .cfg)
lanes=$(awk '$1 == "param" && $2 == "LANES" { print $3 }' "$config_file")
output=$(mktemp)
trap 'rm -f "$output"' EXIT
start=$(date +%s.%N)
status=0
"$tpusim" run "$hlo" --backend="$backend" --config="$config" --seed=1 >"$output" 2>&1 || status=$?
end=$(date +%s.%N)
if [ $status -ne 0 ]; then
  cat "$output" >&2
  echo "bench-gemm: tpusim exited with $status" >&2
  exit 1
fi
field() { awk -v name="$1:" '$1 == name { print $2 }' "$output"; }
cycles=$(field cycles)
busy=$(field mxu_busy_cycles)
err=$(sed -n 's/.* max_abs_err=\([^ ]*\) .*/\1/p' "$output" | head -1)
awk -v m="$m" -v k="$k" -v n="$n" -v config="$config" -v backend="$backend" -v cycles="$cycles" -v busy="$busy" \
    -v lanes="$lanes" -v err="$err" -v start="$start" -v end="$end" 'BEGIN {
  printf "gemm m=%d k=%d n=%d config=%s backend=%s cycles=%d mxu_busy=%d mxu_busy_pct=%.2f mxu_utilization_pct=%.2f max_abs_err=%s host_s=%.1f\n",
         m, k, n, config, backend, cycles, busy, 100 * busy / cycles, 100 * m * k * n / (lanes * lanes * cycles), err,
         end - start
}'
