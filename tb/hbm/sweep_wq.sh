#!/bin/sh
# Write queue depth and watermark sweep for docs/hbm.md: builds the bench once per setting (verilator
# -G on hbm_ctrl's WQ_DEPTH/WQ_HI/WQ_LO, one compile job) and runs the given patterns.
# Usage: tb/hbm/sweep_wq.sh <work dir> <bursts per pattern> "<depth>:<hi>:<lo> ..." [pattern ...]
set -eu
src=$(cd "$(dirname "$0")/../.." && pwd)
work=$1 bursts=$2 settings=$3
shift 3
mkdir -p "$work"
for s in $settings; do
  depth=$(echo "$s" | cut -d: -f1) hi=$(echo "$s" | cut -d: -f2)
  lo=$(echo "$s" | cut -d: -f3)
  dir="$work/wq_${depth}_${hi}_${lo}"
  if [ ! -x "$dir/hbm_bench" ]; then
    verilator --cc --exe --build -j 1 -O3 --x-assign fast --x-initial fast -Wno-fatal --assert \
      -I"$src/rtl/include" --top-module hbm_ctrl --prefix Vhbm_ctrl --Mdir "$dir" -o hbm_bench \
      -GWQ_DEPTH="$depth" -GWQ_HI="$hi" -GWQ_LO="$lo" \
      -CFLAGS "-O2 -std=c++17 -I$src" -LDFLAGS -pthread \
      "$src/rtl/hbm/hbm_ctrl.sv" "$src/tb/hbm/hbm_harness.cc" "$src/tb/hbm/hbm_bench.cc" \
      "$src/sysc/dram_device.cc" "$src/sysc/hbm_map.cc" > "$dir.log" 2>&1 || { cat "$dir.log"; exit 1; }
  fi
  "$dir/hbm_bench" "$bursts" 1 "$@" | sed "s/^hbm pattern/hbm wq=$depth hi=$hi lo=$lo pattern/" | grep pattern
done
