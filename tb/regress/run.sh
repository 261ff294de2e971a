#!/usr/bin/env bash
# The long test tier (`make regress`), beside `make test`:
#
#   tb/regress/run.sh BUILD_DIR [PART...]
#
# Parts (all by default, in this order):
#   synth     `make synth`: Yosys on the units, the 8x8 MXU, the HBM blocks and the whole chip
#   formal    tb/formal/run_bmc.sh: bounded model checking and induction of the FIFO, the request slice,
#             the arbiter and the CSR block, then its --mutate run (every injected fault must be caught)
#   opcodes   tb/compiler/opcode_diff_test: every opcode's random HLO modules on the interpreter and the
#             model, REGRESS_DIFF_ITERATIONS cases per opcode, the first REGRESS_DIFF_RTL_ITERATIONS of them
#             also on the verilated chip
#   programs  tb/core ChipDiff.RandomProgramsMatchTheReferenceModel: REGRESS_CHIP_PROGRAMS random
#             programs on the verilated chip and the reference model, byte for byte
#   hbm       tb/hbm/hbm_bench: every traffic pattern, REGRESS_HBM_BURSTS bursts each
#   runtime   sw/runtime/runtime_stress: REGRESS_RUNTIME_OPS random runtime API operations on the model (a
#             one-chip tiny board and the eight devices of a v2-8) and REGRESS_RUNTIME_RTL_OPS on the
#             verilated chip: every byte checked, no HBM left in use
#   numerics  sim/numerics/numerics_exhaustive against the host FPU (REGRESS_NUMERICS_PAIRS random pairs
#             per operation, and every bf16 product and fp32 -> bf16 input: --all-bf16) and tb/numerics'
#             exhaustive sweeps of the RTL units against the library (TPU_NUMERICS_EXHAUSTIVE=1)
#
# Every part draws its random values from REGRESS_SEED (default 1; formal has none) and prints the command
# that replays it.
# Each part's output goes to BUILD_DIR/regress/<part>.log (its tail is shown when it fails); the run ends
# with one line per part and a total:
#   regress part=P status=ok|FAILED seconds=S
#   regress parts=N failures=F seconds=S
# The exit status is 0 only when every part passed. Figures: docs/performance.md (Long tier).
set -uo pipefail

if [ $# -lt 1 ]; then
  echo "usage: $0 BUILD_DIR [synth|formal|opcodes|programs|hbm|runtime|numerics ...]" >&2
  exit 2
fi
build=$(cd "$1" && pwd) || exit 2
shift
parts=("$@")
[ ${#parts[@]} -gt 0 ] || parts=(synth formal opcodes programs hbm runtime numerics)
src=$(cd "$(dirname "$0")/../.." && pwd)

seed=${REGRESS_SEED:-1}
diff_iterations=${REGRESS_DIFF_ITERATIONS:-60}
diff_rtl_iterations=${REGRESS_DIFF_RTL_ITERATIONS:-12}
chip_programs=${REGRESS_CHIP_PROGRAMS:-5000}
hbm_bursts=${REGRESS_HBM_BURSTS:-2000000}
runtime_ops=${REGRESS_RUNTIME_OPS:-100000}
runtime_rtl_ops=${REGRESS_RUNTIME_RTL_OPS:-5000}
numerics_pairs=${REGRESS_NUMERICS_PAIRS:-100000000}
jobs=${REGRESS_JOBS:-1}
logs=$build/regress
mkdir -p "$logs"

# Runs each argument (a command line for bash) as its own process, at most REGRESS_JOBS at a time, with
# its output in LOG_PREFIX.<i>.log; then prints the outputs in order. Fails if any command failed.
#   run_side_by_side LOG_PREFIX COMMAND...
run_side_by_side() {
  local prefix=$1 i=0 status=0
  shift
  for command in "$@"; do
    while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n; done
    ( bash -c "$command"; echo $? > "$prefix.$i.status" ) > "$prefix.$i.log" 2>&1 &
    i=$((i + 1))
  done
  wait
  for ((k = 0; k < i; k++)); do
    cat "$prefix.$k.log"
    [ "$(cat "$prefix.$k.status" 2>/dev/null)" = 0 ] || { echo "failed: ${*:k+1:1}"; status=1; }
  done
  return $status
}

# Builds the targets a part needs (hbm_bench is not in the default build).
need() {
  cmake --build "$build" -j"$jobs" --target "$@" > "$logs/build.log" 2>&1 ||
    { echo "regress: building $* failed (see $logs/build.log)"; return 1; }
}

part_synth() {
  echo "replay: cmake --build $build --target synth"
  cmake --build "$build" --target synth
}
part_formal() {
  # The build's generated package (its configuration's CSR map), when the build has been configured.
  local env=(FORMAL_DIR="$build/formal")
  [ ! -f "$build/gen/tpu_pkg.sv" ] || env+=(FORMAL_PKG="$build/gen/tpu_pkg.sv")
  echo "replay: ${env[*]} $src/tb/formal/run_bmc.sh"
  env "${env[@]}" "$src/tb/formal/run_bmc.sh" || return 1
  echo "replay: ${env[*]} $src/tb/formal/run_bmc.sh --mutate"
  env "${env[@]}" "$src/tb/formal/run_bmc.sh" --mutate
}
part_opcodes() {
  need opcode_diff_test || return 1
  local command="TPU_DIFF_SEED=$seed TPU_DIFF_ITERATIONS=$diff_iterations TPU_DIFF_RTL_ITERATIONS=$diff_rtl_iterations"
  command+=" TPU_DIFF_RTL=1 TPU_LOG_DIR=disabled"
  command+=" $build/tb/compiler/opcode_diff_test"
  echo "replay: $command"
  # GoogleTest's shards split the tests between REGRESS_JOBS processes.
  local shards=()
  for ((k = 0; k < jobs; k++)); do shards+=("GTEST_TOTAL_SHARDS=$jobs GTEST_SHARD_INDEX=$k $command"); done
  run_side_by_side "$logs/opcodes" "${shards[@]}"
}
part_programs() {
  need tpu_chip_test || return 1
  # Program i has seed first + i; the seed of a failing program is in its failure message.
  local first=$((seed * 1000))
  echo "replay: TPU_DIFF_PROGRAM_SEED=$first TPU_DIFF_PROGRAMS=$chip_programs $build/tb/core/tpu_chip_test" \
       "--gtest_filter=ChipDiff.RandomProgramsMatchTheReferenceModel"
  TPU_DIFF_PROGRAM_SEED=$first TPU_DIFF_PROGRAMS=$chip_programs \
    "$build/tb/core/tpu_chip_test" --gtest_filter=ChipDiff.RandomProgramsMatchTheReferenceModel
}
part_hbm() {
  need hbm_bench || return 1
  echo "replay: $build/tb/hbm/hbm_bench $hbm_bursts $seed"
  # One process per pattern, REGRESS_JOBS at a time.
  local patterns=()
  mapfile -t patterns < <("$build/tb/hbm/hbm_bench" --list)
  [ ${#patterns[@]} -gt 0 ] || return 1
  local runs=()
  for p in "${patterns[@]}"; do runs+=("$build/tb/hbm/hbm_bench $hbm_bursts $seed $p"); done
  run_side_by_side "$logs/hbm" "${runs[@]}"
}
part_runtime() {
  need runtime_stress || return 1
  local stress=$build/sw/runtime/runtime_stress
  for run in "--ops=$runtime_ops --seed=$seed --config=tiny" "--ops=$runtime_ops --seed=$seed --config=v2" \
             "--ops=$runtime_rtl_ops --seed=$seed --config=tiny --backend=rtl"; do
    echo "replay: $stress $run"
    # shellcheck disable=SC2086
    TPU_LOG_DIR=disabled "$stress" $run || return 1
  done
}
part_numerics() {
  need numerics_exhaustive numerics_rtl_test || return 1
  echo "replay: $build/sim/numerics/numerics_exhaustive --pairs=$numerics_pairs --seed=$seed --all-bf16"
  "$build/sim/numerics/numerics_exhaustive" --pairs="$numerics_pairs" --seed="$seed" --all-bf16 || return 1
  echo "replay: TPU_NUMERICS_EXHAUSTIVE=1 TPU_NUMERICS_SEED=$seed $build/tb/numerics/numerics_rtl_test"
  TPU_NUMERICS_EXHAUSTIVE=1 TPU_NUMERICS_SEED=$seed "$build/tb/numerics/numerics_rtl_test"
}

summary=()
failures=0
start_all=$SECONDS
echo "regress seed=$seed parts=${parts[*]} logs=$logs"
for part in "${parts[@]}"; do
  if ! declare -F "part_$part" > /dev/null; then
    echo "regress: unknown part '$part' (parts: synth formal opcodes programs hbm runtime numerics)" >&2
    exit 2
  fi
done
for part in "${parts[@]}"; do
  echo "regress: $part ..."
  start=$SECONDS
  if "part_$part" > "$logs/$part.log" 2>&1; then
    status=ok
  else
    status=FAILED
    failures=$((failures + 1))
    tail -n 30 "$logs/$part.log" | sed "s/^/  $part| /"
  fi
  grep '^replay: ' "$logs/$part.log" | sed "s/^/  /"
  line="regress part=$part status=$status seconds=$((SECONDS - start))"
  echo "$line"
  summary+=("$line")
done
echo
printf '%s\n' "${summary[@]}"
echo "regress parts=${#parts[@]} failures=$failures seconds=$((SECONDS - start_all))"
[ "$failures" = 0 ]
