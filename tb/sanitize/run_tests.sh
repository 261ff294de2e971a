#!/usr/bin/env bash
# Runs the whole CTest suite of a sanitizer build (-DTPU_SANITIZE=ON, `make test-sanitize`):
#
#   tb/sanitize/run_tests.sh BUILD_DIR [JOBS] [ctest arguments...]
#
# with the leak suppressions of this folder (lsan.supp) and memory errors, leaks and undefined behaviour
# fatal, then prints one line:
#   sanitize tests=N failures=F
# F counts the failed tests and also every test that passed although a sanitizer reported in its output
# (a WILL_FAIL test or one that only matches a regular expression does not look at the exit status).
# The exit status is non-zero if F is.
set -uo pipefail

build="$(cd "${1:?usage: run_tests.sh BUILD_DIR [JOBS] [ctest arguments...]}" && pwd)"
jobs="${2:-1}"
shift 2 2>/dev/null || shift $#
here="$(cd "$(dirname "$0")" && pwd)"

# exitcode=86: the tools' tests expect status 1 for bad input; a sanitizer exiting with 1 would pass them.
# Python processes get LD_PRELOAD and detect_leaks=0 from sw/frontend/CMakeLists.txt. There is no UBSan
# suppression file: UBSan does not consult one for checks that abort (-fno-sanitize-recover), so
# third-party code is kept out of the instrumentation instead (CMakeLists.txt).
export ASAN_OPTIONS="detect_leaks=1:exitcode=86:strict_string_checks=1:check_initialization_order=1:strict_init_order=1${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
export LSAN_OPTIONS="suppressions=$here/lsan.supp:print_suppressions=0${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:exitcode=86${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"

cd "$build"
log="$build/sanitize-ctest.log"
# Passed tests' output is kept whole so that a report in it is found below (ctest cuts it at 1 KB).
ctest --output-on-failure -j"$jobs" --test-output-size-passed 4000000 --test-output-size-failed 4000000 "$@" \
  2>&1 | tee "$log"
summary=$(grep -E '^[0-9]+% tests passed, [0-9]+ tests? failed out of [0-9]+' "$log" | tail -1)
if [ -z "$summary" ]; then
  echo "sanitize tests=0 failures=1 (ctest did not finish, see $log)"
  exit 1
fi
total=$(sed -E 's/.* out of ([0-9]+).*/\1/' <<<"$summary")
failed=$(sed -E 's/.*, ([0-9]+) tests? failed.*/\1/' <<<"$summary")

# Tests that passed with a sanitizer report in their output (Testing/Temporary/LastTest.log has every
# test's output).
reported=$(awk '
  /^[0-9]+\/[0-9]+ Testing: / { name = $0; sub(/^[0-9]+\/[0-9]+ Testing: /, "", name); hit = 0 }
  /ERROR: AddressSanitizer|ERROR: LeakSanitizer|runtime error: / { hit = 1 }
  /^Test Passed\./ { if (hit) print name }' Testing/Temporary/LastTest.log | sort -u)
if [ -n "$reported" ]; then
  echo "passed, but a sanitizer reported in the output (Testing/Temporary/LastTest.log):"
  sed 's/^/  /' <<<"$reported"
  failed=$((failed + $(wc -l <<<"$reported")))
fi
echo "sanitize tests=$total failures=$failed"
[ "$failed" -eq 0 ]
