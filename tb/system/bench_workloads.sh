#!/usr/bin/env bash
# Workload benchmark: every training step and model the project runs, compiled and run on the reference
# model (`tpusim run`, which also checks every output against the interpreter), one line of figures each
# (docs/performance.md, "Workloads against their bound").
#   bench_workloads.sh TPUSIM CONFIG_FILE SOURCE_DIR SHARED_HLO_DIR
#
# bound_cycles is the program's own physical limit on this chip: the largest of its MXU work (LHS rows
# streamed, one per cycle at peak), its VPU work (lines written, one per cycle) and its HBM traffic (DMA
# lines at the channels' pin peak of 32 bytes per cycle each, docs/hbm.md). of_bound_pct = bound / cycles:
# 100 would mean the busiest resource never waits. Dots run at the precision each asks for, as on a TPU
# (precision=hlo: operand_precision, CompileOptions::dot_passes 0); these modules carry none, so every
# dot is DEFAULT, one bf16 MXU pass, the precision the seeds' step times were measured at.
set -euo pipefail
if [ $# -ne 4 ]; then
  echo "usage: $0 TPUSIM CONFIG_FILE SOURCE_DIR SHARED_HLO_DIR" >&2
  exit 2
fi
tpusim=$1 config_file=$2 source_dir=$3 shared=$4
config=$(basename "$config_file" .cfg)
param() { awk -v name="$1" '$1 == "param" && $2 == name { print $3 }' "$config_file"; }
lanes=$(param LANES)
channels=$(param HBM_CHANNELS)
readonly pin_bytes_per_cycle=32

# name | HLO file | extra tpusim flags
workloads=(
  "pytorch_xla_mnist_mlp|$shared/pytorch_xla_mnist_mlp_train_step.hlo|"
  "maml_flax|$shared/maml_flax_train_step.hlo|"
  "efficientnet_b1|$shared/efficientnet_forward.hlo|--batch=1 --fill-elided-constants"
  "dense_layer|$source_dir/sim/dense_layer.hlo|"
)
for hlo in "$source_dir"/tb/system/hlo/*.hlo; do
  workloads+=("$(basename "$hlo" .hlo)|$hlo|")
done

output=$(mktemp)
trap 'rm -f "$output"' EXIT
failures=0
for workload in "${workloads[@]}"; do
  IFS='|' read -r name hlo flags <<<"$workload"
  start=$(date +%s.%N)
  status=0
  # shellcheck disable=SC2086  # flags are words
  "$tpusim" run "$hlo" --backend=model --config="$config" --seed=3 $flags >"$output" 2>&1 || status=$?
  end=$(date +%s.%N)
  if [ $status -ne 0 ]; then
    echo "workload name=$name config=$config error=exit_$status: $(grep -m1 -i 'error\|FAIL' "$output" || tail -1 "$output")"
    failures=$((failures + 1))
    continue
  fi
  field() { awk -v name="$1:" '$1 == name { print $2 }' "$output"; }
  awk -v name="$name" -v config="$config" -v cycles="$(field cycles)" -v mxu="$(field mxu_busy_cycles)" \
      -v vpu="$(field vpu_busy_cycles)" -v dma="$(field dma_lines)" -v stall="$(field stall_cycles)" \
      -v lanes="$lanes" -v channels="$channels" -v pin="$pin_bytes_per_cycle" -v start="$start" -v end="$end" 'BEGIN {
    hbm = dma * lanes * 4 / (channels * pin)
    bound = mxu; limit = "mxu"
    if (vpu > bound) { bound = vpu; limit = "vpu" }
    if (hbm > bound) { bound = hbm; limit = "hbm" }
    printf "workload name=%s config=%s cycles=%d bound_cycles=%d bound=%s of_bound_pct=%.2f mxu_util_pct=%.2f stall_pct=%.2f precision=hlo host_s=%.1f\n",
           name, config, cycles, bound, limit, 100 * bound / cycles, 100 * mxu / cycles, 100 * stall / cycles, end - start
  }'
done
exit $((failures > 0))
