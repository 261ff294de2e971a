#!/usr/bin/env bash
# MXU benchmark (make bench-mxu; see docs/performance.md): for each N, verilates and compiles the MXU
# with the benchmark driver (tb/mxu/mxu_perf.cc), timing verilate+compile, then runs the 8N^3 GEMM.
# Usage: bench_mxu.sh SOURCE_DIR GEN_DIR OUT_DIR "N..." [NUMERICS_RTL_TEST]
# Environment: MXU_BENCH_OPT (C++ optimization of the model, default -O2), MXU_BENCH_THREADS
# (Verilator --threads, default 1), MXU_BENCH_VMEM_LINES (VMEM model size, default 32768).
set -euo pipefail
src=$1 gen=$2 out=$3 sizes=$4 numerics_test=${5:-}
opt=${MXU_BENCH_OPT:--O2}
threads=${MXU_BENCH_THREADS:-1}
vmem_lines=${MXU_BENCH_VMEM_LINES:-32768}
vmem_aw=$(awk -v n="$vmem_lines" 'BEGIN { a = 0; while (2 ^ a < n) a++; print a }')
jobs=$(nproc); [ "$jobs" -gt 2 ] && jobs=2
status=0
mkdir -p "$out"
for n in $sizes; do
  dir=$out/n$n
  rm -rf "$dir"; mkdir -p "$dir"
  thread_args=(); [ "$threads" -gt 1 ] && thread_args=(--threads "$threads")
  start=$(date +%s.%N)
  if ! verilator --cc --exe --build -j "$jobs" -O3 --x-assign fast --x-initial fast -Wno-fatal "${thread_args[@]}" \
      -I"$src/rtl/include" --top-module mxu --prefix Vmxu -GN="$n" -GVMEM_AW="$vmem_aw" -Mdir "$dir" -o mxu_perf \
      -MAKEFLAGS "OPT_FAST=$opt OPT_GLOBAL=-O2 OPT_SLOW=-O1" \
      -CFLAGS "-std=c++17 -DMXU_N=$n -DMXU_VMEM_LINES=$vmem_lines -I$src -I$gen" \
      "$gen/tpu_pkg.sv" "$src/rtl/numerics/tpu_fp_pkg.sv" "$src/rtl/mxu/mxu_array.sv" "$src/rtl/mxu/mxu.sv" \
      "$src/tb/mxu/mxu_perf.cc" "$src/sim/numerics/numerics.cc" > "$dir/build.log" 2>&1; then
    echo "mxu N=$n build FAILED (see $dir/build.log)"; status=1; continue
  fi
  end=$(date +%s.%N)
  build_s=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }')
  "$dir/mxu_perf" --build-s="$build_s" || status=1
done
# The RTL multiplier and adder against the C++ library: 10^6 random vectors per unit and more.
if [ -n "$numerics_test" ] && [ -x "$numerics_test" ]; then
  # (The test's own scoreboard self-check, which plants mismatches, is left out of the summary.)
  "$numerics_test" > "$out/numerics_rtl_test.log" 2>&1 || status=1
  grep -E '^scoreboard .*mismatches=0$|PASSED|FAILED' "$out/numerics_rtl_test.log" || true
fi
exit $status
