#!/usr/bin/env bash
# Builds the libFuzzer targets in build/fuzz (clang, -DTPU_FUZZ=ON) and runs each for N seconds:
#
#   tb/fuzz/run_fuzz.sh [SECONDS]     (default 60; `make fuzz FUZZ_SECONDS=N` calls this)
#
# A timed run starts FUZZ_WORKERS fuzzer processes per target (default: one per CPU) that share the
# corpus. FUZZ_RUNS=N runs each target for N inputs instead of a time, in one process: with the fixed
# seed and a fresh corpus the run is the same on every machine of one kind (CI uses it: a time limit
# would test a different prefix of the input sequence on a slower or busier machine). FUZZ_TARGETS names
# the targets to run (default both).
#
# Corpora grow in build/fuzz/corpus/<target> (seeded from the HLO files of the tree, from
# program_fuzz_seeds and from regressions/); findings go to build/fuzz/artifacts/<target>/, the full logs
# to build/fuzz/<target>.log (worker 0) and <target>.<w>.log. Prints one line per target:
#   fuzz target=T execs=E crashes=C edges=N workers=W
# (E summed over the workers, N the most coverage edges a worker reached) and exits non-zero if any
# worker found a crash, a timeout, a leak or an out-of-memory.
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
# Inputs that once crashed (regressions/<target>-<what>) are seeds too, so every run replays them first.
for f in "$root"/tb/fuzz/regressions/*; do
  name=$(basename "$f")
  [ -d "$build/corpus/${name%%-*}" ] && cp -f "$f" "$build/corpus/${name%%-*}/regression_$name"
done

# The sanitizers report and stop at the first error; leaks are findings too.
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0:allocator_may_return_null=0}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"

budget=(-max_total_time="$seconds")
[ -n "${FUZZ_RUNS:-}" ] && budget=(-runs="$FUZZ_RUNS")
# A timed run uses every CPU: FUZZ_WORKERS processes per target on the one corpus directory, worker w
# with seed FUZZ_SEED + w (libFuzzer rereads the directory every second, so each takes up what the others
# found). A run of FUZZ_RUNS inputs stays one process, so that it stays the same sequence.
workers="${FUZZ_WORKERS:-$(nproc)}"
[ -n "${FUZZ_RUNS:-}" ] && workers=1

status=0
for target in ${FUZZ_TARGETS:-hlo_fuzzer program_fuzzer}; do
  artifacts="$build/artifacts/$target"
  mkdir -p "$artifacts"
  rm -f "$build/$target".*.log
  before=$(find "$artifacts" -type f | wc -l)
  # libFuzzer's max_len defaults to the largest seed; the HLO seeds go up to ~200 KB.
  extra=(-max_len=4096)
  [ "$target" = hlo_fuzzer ] && extra=(-max_len=262144 -dict="$root/tb/fuzz/hlo.dict")
  # The log of worker 0 is <target>.log, of worker w > 0 <target>.<w>.log.
  logs=() pids=()
  for ((w = 0; w < workers; w++)); do
    log="$build/$target.log"
    [ "$w" -gt 0 ] && log="$build/$target.$w.log"
    (cd "$build" && exec "$build/tb/fuzz/$target" "$build/corpus/$target" \
      "${budget[@]}" -seed=$((seed + w)) -rss_limit_mb=2048 -malloc_limit_mb=1024 -timeout=5 \
      "${extra[@]}" -print_final_stats=1 -artifact_prefix="$artifacts/") >"$log" 2>&1 &
    logs+=("$log") pids+=($!)
  done
  failed=0
  for pid in "${pids[@]}"; do
    wait "$pid" || failed=$((failed + 1))
  done
  after=$(find "$artifacts" -type f | wc -l)
  # Executions: the sum over the workers. Edges: the most any worker's last status line shows.
  execs=0 edges=0
  for log in "${logs[@]}"; do
    e=$(sed -n 's/^stat::number_of_executed_units: *\([0-9]*\).*/\1/p' "$log" | tail -1)
    c=$(sed -n 's/^#[0-9]*.* cov: \([0-9]*\) .*/\1/p' "$log" | tail -1)
    execs=$((execs + ${e:-0}))
    [ "${c:-0}" -gt "$edges" ] && edges=$c
  done
  crashes=$((after - before))
  # A worker that exits non-zero without an artifact (e.g. it could not start) counts as one finding.
  if [ "$failed" -gt "$crashes" ]; then crashes=$failed; fi
  echo "fuzz target=$target execs=$execs crashes=$crashes edges=$edges workers=$workers"
  if [ "$crashes" -ne 0 ]; then
    status=1
    echo "  see ${logs[*]} and $artifacts/" >&2
  fi
done
exit "$status"
