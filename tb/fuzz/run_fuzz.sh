#!/usr/bin/env bash
# Builds the libFuzzer targets in build/fuzz (clang, -DTPU_FUZZ=ON) and runs each for N seconds:
#
#   tb/fuzz/run_fuzz.sh [SECONDS]     (default 60; `make fuzz FUZZ_SECONDS=N` calls this)
#
# FUZZ_RUNS=N runs each target for N inputs instead of a time: with the fixed seed and a fresh corpus the
# run is the same on every machine of one kind (CI uses it: a time limit would test a different prefix of
# the input sequence on a slower or busier machine).
#
# Corpora grow in build/fuzz/corpus/<target> (seeded from the HLO files of the tree and from
# program_fuzz_seeds); findings go to build/fuzz/artifacts/<target>/, the full log to
# build/fuzz/<target>.log. Prints one line per target:
#   fuzz target=T execs=E crashes=C
# and exits non-zero if any target found a crash, a timeout, a leak or an out-of-memory.
set -euo pipefail

seconds="${1:-60}"
root="$(cd "$(dirname "$0")/../.." && pwd)"
build="$root/build/fuzz"
jobs="${JOBS:-$(nproc)}"
seed="${FUZZ_SEED:-1}"

if [ ! -f "$build/CMakeCache.txt" ]; then
  CC=clang CXX=clang++ cmake -S "$root" -B "$build" -DTPU_FUZZ=ON -DTPU_CONFIG=tiny >/dev/null
fi
cmake --build "$build" -j"$jobs" --target hlo_fuzzer program_fuzzer program_fuzz_seeds >/dev/null

# Seed corpora (copied, so the fuzzer's additions never land in the source tree).
mkdir -p "$build/corpus/hlo_fuzzer" "$build/corpus/program_fuzzer"
hlo_seeds=("$root"/tb/system/hlo/*.hlo "$root"/sim/*.hlo)
if [ -d "$root/../shared/hlo" ]; then hlo_seeds+=("$root"/../shared/hlo/*.hlo); fi
for f in "${hlo_seeds[@]}"; do
  [ -f "$f" ] && cp -f "$f" "$build/corpus/hlo_fuzzer/seed_$(basename "$f")"
done
# The training steps are too large for the interpreter and codegen stages (arrays over 4096 elements), so
# the small modules the compiler's tests inline (R"(...)" strings) are seeds too.
CORPUS="$build/corpus/hlo_fuzzer" perl -0777 -ne '
  my $base = $ARGV; $base =~ s{.*/}{}; $base =~ s{\.cc$}{};
  my $n = 0;
  while (/R"([a-z]*)\((.*?)\)\1"/sg) {
    my $text = $2;
    next unless $text =~ /HloModule/ && $text =~ /ENTRY/;
    open(my $out, ">", "$ENV{CORPUS}/seed_test_${base}_" . $n++ . ".hlo") or die "$!";
    print $out $text;
    close $out;
  }' "$root"/compiler/*/*_test.cc "$root"/tb/compiler/*.cc
"$build/tb/fuzz/program_fuzz_seeds" "$build/corpus/program_fuzzer" "$root/sim/dense_layer.hlo" \
  "$root/tb/system/hlo/gemm_bf16_128.hlo" >/dev/null

# The sanitizers report and stop at the first error; leaks are findings too.
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0:allocator_may_return_null=0}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"

budget=(-max_total_time="$seconds")
[ -n "${FUZZ_RUNS:-}" ] && budget=(-runs="$FUZZ_RUNS")

status=0
for target in hlo_fuzzer program_fuzzer; do
  artifacts="$build/artifacts/$target"
  mkdir -p "$artifacts"
  log="$build/$target.log"
  before=$(find "$artifacts" -type f | wc -l)
  # libFuzzer's max_len defaults to the largest seed; the HLO seeds go up to ~200 KB.
  extra=(-max_len=4096)
  [ "$target" = hlo_fuzzer ] && extra=(-max_len=262144 -dict="$root/tb/fuzz/hlo.dict")
  set +e
  (cd "$build" && "$build/tb/fuzz/$target" "$build/corpus/$target" \
    "${budget[@]}" -seed="$seed" -rss_limit_mb=2048 -malloc_limit_mb=1024 -timeout=5 \
    "${extra[@]}" -print_final_stats=1 -artifact_prefix="$artifacts/") >"$log" 2>&1
  rc=$?
  set -e
  after=$(find "$artifacts" -type f | wc -l)
  execs=$(sed -n 's/^stat::number_of_executed_units: *\([0-9]*\).*/\1/p' "$log" | tail -1)
  crashes=$((after - before))
  # A non-zero exit without an artifact (e.g. the fuzzer could not start) counts as one finding.
  if [ "$rc" -ne 0 ] && [ "$crashes" -eq 0 ]; then crashes=1; fi
  echo "fuzz target=$target execs=${execs:-0} crashes=$crashes"
  if [ "$crashes" -ne 0 ]; then
    status=1
    echo "  see $log and $artifacts/" >&2
  fi
done
exit "$status"
