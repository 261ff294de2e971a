#!/usr/bin/env bash
# Fidelity of the reference model's cycle count to the RTL's: each workload runs on the model with the HBM
# twin (`--hbm-timing=on`, the default), on the model with the fixed HBM latency (`--hbm-timing=off`) and
# on the rtl backend (the verilated chip with its HBM subsystem), same compiled program and seed; one line
# each (docs/hbm.md, "The model's HBM timing"):
#   fidelity workload=W config=C model_cycles=M rtl_cycles=R err_pct=E fixed_cycles=F fixed_err_pct=G
#            model_s=S rtl_s=T speed_ratio=T/S
# err_pct = 100 * (M - R) / R. model_s and rtl_s are the host's CPU seconds (user + system) of each run.
#   bench_fidelity.sh TPUSIM CONFIG_FILE SOURCE_DIR SHARED_HLO_DIR
# FIDELITY_WORKLOADS (an extended regular expression) keeps only the workloads whose names match it.
set -euo pipefail
if [ $# -ne 4 ]; then
  echo "usage: $0 TPUSIM CONFIG_FILE SOURCE_DIR SHARED_HLO_DIR" >&2
  exit 2
fi
tpusim=$1 config_file=$2 source_dir=$3 shared=$4
config=$(basename "$config_file" .cfg)
filter=${FIDELITY_WORKLOADS:-.}

# name | HLO file: the training steps, the dense layer and the GEMMs (tiny); v2, whose RTL runs take
# minutes each, the dense layer and the 1024^3 GEMM.
workloads=("dense_layer|$source_dir/sim/dense_layer.hlo")
if [ "$config" = v2 ]; then
  workloads+=("gemm_bf16_1024|$source_dir/tb/system/hlo/gemm_bf16_1024.hlo")
else
  workloads+=("pytorch_xla_mnist_mlp|$shared/pytorch_xla_mnist_mlp_train_step.hlo"
              "maml_flax|$shared/maml_flax_train_step.hlo")
  for hlo in "$source_dir"/tb/system/hlo/*.hlo; do
    workloads+=("$(basename "$hlo" .hlo)|$hlo")
  done
fi

output=$(mktemp)
times=$(mktemp)
trap 'rm -f "$output" "$times"' EXIT
failures=0
# Runs tpusim; sets cycles and cpu (seconds) or returns non-zero.
run() {
  local status=0
  /usr/bin/time -f "%U %S" -o "$times" "$tpusim" run "$@" --config="$config" --seed=3 >"$output" 2>&1 || status=$?
  if [ $status -ne 0 ]; then
    echo "fidelity workload=$name config=$config error=exit_$status($*): $(grep -m1 -i 'error\|FAIL' "$output" || tail -1 "$output")"
    return 1
  fi
  cycles=$(awk '$1 == "cycles:" { print $2 }' "$output")
  cpu=$(awk '{ print $1 + $2 }' "$times")
}
for workload in "${workloads[@]}"; do
  IFS='|' read -r name hlo <<<"$workload"
  [[ $name =~ $filter ]] || continue
  run "$hlo" --backend=model --hbm-timing=on || { failures=$((failures + 1)); continue; }
  model_cycles=$cycles model_s=$cpu
  run "$hlo" --backend=model --hbm-timing=off || { failures=$((failures + 1)); continue; }
  fixed_cycles=$cycles
  run "$hlo" --backend=rtl || { failures=$((failures + 1)); continue; }
  rtl_cycles=$cycles rtl_s=$cpu
  awk -v name="$name" -v config="$config" -v m="$model_cycles" -v f="$fixed_cycles" -v r="$rtl_cycles" \
      -v ms="$model_s" -v rs="$rtl_s" 'BEGIN {
    printf "fidelity workload=%s config=%s model_cycles=%d rtl_cycles=%d err_pct=%.2f fixed_cycles=%d fixed_err_pct=%.2f model_s=%.2f rtl_s=%.2f speed_ratio=%.1f\n",
           name, config, m, r, 100 * (m - r) / r, f, 100 * (f - r) / r, ms, rs, (ms > 0 ? rs / ms : 0)
  }'
done
exit $((failures > 0))
