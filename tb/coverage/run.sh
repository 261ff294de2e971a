#!/usr/bin/env bash
# Line and toggle coverage of rtl/ (`make coverage`), in a build configured with -DTPU_COVERAGE=ON:
#
#   tb/coverage/run.sh BUILD_DIR [JOBS]
#
# Runs the regression with every verilated model counting coverage (TPU_COVERAGE_DIR, see
# sysc/verilated_coverage.h): the whole CTest suite, then the long tier's random chip programs and HBM
# traffic at a size that fits here (COVERAGE_CHIP_PROGRAMS, COVERAGE_HBM_BURSTS). Then merges the files
# with verilator_coverage, annotates the sources and reports per module with the waivers of
# tb/coverage/waivers.txt. Everything lands in BUILD_DIR/coverage/:
#   merged.dat      all points, summed (open with verilator_coverage)
#   annotated/      the sources with counts; lines below --annotate-min 1 are marked %000000
#   report.txt      the table, every uncovered point and every waived one with its reason
# The last line printed is
#   coverage line_pct=L toggle_pct=T
# A failing test fails the run (after the report): coverage of a broken regression is not a figure.
set -uo pipefail

build="$(cd "${1:?usage: run.sh BUILD_DIR [JOBS]}" && pwd)"
jobs="${2:-1}"
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
out="$build/coverage"
chip_programs="${COVERAGE_CHIP_PROGRAMS:-500}"
hbm_bursts="${COVERAGE_HBM_BURSTS:-20000}"
seed="${COVERAGE_SEED:-1}"

if ! grep -q '^TPU_COVERAGE:BOOL=ON' "$build/CMakeCache.txt" 2>/dev/null; then
  echo "coverage: $build is not a -DTPU_COVERAGE=ON build" >&2
  exit 2
fi
rm -rf "$out"
mkdir -p "$out/dat"
export TPU_COVERAGE_DIR="$out/dat"
export TPU_LOG_DIR=disabled
status=0

echo "coverage: ctest (log $out/ctest.log)"
(cd "$build" && ctest -j"$jobs" --output-on-failure) > "$out/ctest.log" 2>&1 || status=1
tail -n 3 "$out/ctest.log"

echo "coverage: $chip_programs random chip programs, seed $((seed * 1000))"
TPU_DIFF_PROGRAM_SEED=$((seed * 1000)) TPU_DIFF_PROGRAMS="$chip_programs" \
  "$build/tb/core/tpu_chip_test" --gtest_filter=ChipDiff.RandomProgramsMatchTheReferenceModel \
  > "$out/programs.log" 2>&1 || status=1
tail -n 1 "$out/programs.log"

echo "coverage: HBM traffic, $hbm_bursts bursts per pattern"
cmake --build "$build" --target hbm_bench > "$out/build.log" 2>&1 || status=1
"$build/tb/hbm/hbm_bench" "$hbm_bursts" "$seed" > "$out/hbm.log" 2>&1 || status=1
grep -c '^hbm ' "$out/hbm.log" | sed 's/^/coverage: hbm patterns run: /'

files=$(find "$out/dat" -name '*.dat' | wc -l)
echo "coverage: merging $files files"
# In batches (one file per bench instance: thousands), each merged into what the batches before gave.
find "$out/dat" -name '*.dat' | sort > "$out/files.txt"
split -l 200 "$out/files.txt" "$out/batch."
merged=()
for batch in "$out"/batch.*; do
  # shellcheck disable=SC2046
  verilator_coverage --write "$out/merged.next" "${merged[@]}" $(cat "$batch") || exit 1
  mv "$out/merged.next" "$out/merged.dat"
  merged=("$out/merged.dat")
done
rm -f "$out"/batch.* "$out/files.txt"
rm -rf "$out/dat"
verilator_coverage --annotate "$out/annotated" --annotate-min 1 "$out/merged.dat" > "$out/annotate.log" 2>&1
"$build/tb/coverage/coverage_report" --waivers="$here/waivers.txt" --report="$out/report.txt" \
  "$out/merged.dat" || exit 1
echo "coverage: report $out/report.txt, annotated sources $out/annotated/"
[ "$status" = 0 ] || echo "coverage: the regression failed (logs in $out)" >&2
exit "$status"
