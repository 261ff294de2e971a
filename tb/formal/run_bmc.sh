#!/usr/bin/env bash
# Formal checks of small RTL blocks (tb/formal/README.md): Yosys turns each block and its property
# wrapper (tb/formal/<block>_props.sv) into SMT-LIB, yosys-smtbmc with z3 checks it.
#
#   tb/formal/run_bmc.sh [--mutate] [DEPTH]
#
# Per block: bounded model checking from reset for DEPTH cycles (default: the block's own, below), then
# k-induction of at most DEPTH steps, which, with the bounded check as its base case, proves the
# properties for every reachable state, then every cover statement reached within DEPTH cycles or the
# block's own depth if that is more (the properties are not vacuous). One line per block and a total:
#   bmc block=B depth=D result=pass|FAIL proof=bounded|induction seconds=S
#   bmc blocks=N failures=F seconds=S
# proof=induction: proven in every reachable state; proof=bounded: only in the first D cycles after reset
# (the induction step failed or was not run). On a failure it prints the counterexample's VCD.
#
# --mutate runs the blocks with faults injected through their wrappers (the MUTATE_* defines each wrapper
# lists) and with the block replaced by free outputs ("free": every property must fail then, so none
# holds whatever the block does). Every run must end in result=FAIL; caught_by names the properties that
# failed. One line per mutation and a total:
#   bmc block=B mutation=M depth=D result=FAIL|pass caught_by=P,... seconds=S
#   bmc mutations=N uncaught=U seconds=S
# The exit status is 0 only when every block passed (every mutation was caught, with --mutate).
#
# Environment: FORMAL_DIR (logs, netlists and traces; default /tmp/tpusim-formal), FORMAL_PKG (a
# generated tpu_pkg.sv, e.g. BUILD_DIR/gen/tpu_pkg.sv; when unset, specgen is built and run into
# FORMAL_DIR/gen as the CMake configure step runs it), FORMAL_CONFIG (the configuration specgen reads
# then, rtl/config/<name>.cfg; default tiny).
set -euo pipefail

usage() {
  echo "usage: $0 [--mutate] [DEPTH]" >&2
  exit 2
}
mutate=0
depth_arg=
for arg in "$@"; do
  case $arg in
    --mutate) mutate=1 ;;
    '' | *[!0-9]*) usage ;;
    *) depth_arg=$arg ;;
  esac
done
if [ -n "$depth_arg" ] && [ "$depth_arg" -lt 2 ]; then
  echo "run_bmc: DEPTH must be at least 2" >&2
  exit 2
fi

root=$(cd "$(dirname "$0")/../.." && pwd)
rtl=$root/rtl
out=${FORMAL_DIR:-/tmp/tpusim-formal}
config=${FORMAL_CONFIG:-tiny}
mkdir -p "$out"
out=$(cd "$out" && pwd)

for tool in yosys yosys-smtbmc z3; do
  command -v "$tool" > /dev/null || { echo "run_bmc: $tool not found (make deps installs it)" >&2; exit 2; }
done

# The generated package (CSR map, configuration) the CSR block and the arbiter import.
pkg=${FORMAL_PKG:-}
if [ -z "$pkg" ]; then
  gen=$out/gen
  mkdir -p "$gen"
  cfg=$rtl/config/$config.cfg
  [ -f "$cfg" ] || { echo "run_bmc: no configuration $cfg" >&2; exit 2; }
  if [ ! -x "$gen/specgen" ] || [ "$rtl/spec/specgen.cc" -nt "$gen/specgen" ]; then
    nice c++ -std=c++17 -O1 -o "$gen/specgen" "$rtl/spec/specgen.cc"
  fi
  "$gen/specgen" "$rtl/spec/isa.def" "$rtl/spec/csr.def" "$cfg" "$gen"
  pkg=$gen/tpu_pkg.sv
fi
[ -f "$pkg" ] || { echo "run_bmc: no generated package $pkg" >&2; exit 2; }

# Blocks: default depth, RTL sources (packages first), the instance the wrapper names, the mutations.
blocks=(tpu_fifo tpu_req_slice tpu_arbiter tpu_csr)
block_depth() {
  case $1 in
    tpu_fifo | tpu_req_slice) echo 20 ;;
    tpu_arbiter) echo 15 ;;
    tpu_csr) echo 5 ;;  # each extra cycle costs seconds; the induction step needs 2
  esac
}
block_sources() {
  case $1 in
    tpu_fifo) echo "$rtl/core/tpu_fifo.sv" ;;
    tpu_req_slice) echo "$rtl/core/tpu_req_slice.sv" ;;
    tpu_arbiter) echo "$pkg $rtl/core/tpu_fifo.sv $rtl/core/tpu_req_slice.sv $rtl/chip/tpu_arbiter.sv" ;;
    tpu_csr) echo "$pkg $rtl/chip/tpu_csr.sv" ;;
  esac
}
block_instance() {
  case $1 in
    tpu_fifo) echo u_fifo ;;
    tpu_req_slice) echo u_slice ;;
    tpu_arbiter) echo u_arb ;;
    tpu_csr) echo u_csr ;;
  esac
}
block_mutations() {
  case $1 in
    tpu_fifo) echo FIFO_OVERFLOW FIFO_DROP FIFO_CORRUPT free ;;
    tpu_req_slice) echo SLICE_LOSE SLICE_DUP free ;;
    tpu_arbiter) echo ARB_STARVE ARB_SPURIOUS ARB_READY free ;;
    tpu_csr) echo CSR_NO_RESET CSR_WDATA CSR_EVENT CSR_SEM free ;;
  esac
}

# Labelled assertions of a wrapper (p_*: properties, i_*: invariants the induction step needs).
wrapper_asserts() {
  grep -oE '^\s*[pi]_[a-z0-9_]+:\s*assert\b' "$1" | sed -E 's/^\s*//; s/:.*//' | sort -u
}

# Elaborates block $1 with wrapper defines $2 ("free": the block replaced by free outputs) into $3.smt2.
elaborate() {
  local block=$1 variant=$2 base=$3 top=${1}_props
  local wrapper=$root/tb/formal/${top}.sv defines="" cut="" sources=""
  local src
  for src in $(block_sources "$block"); do sources+=" $src"; done
  case $variant in
    "") ;;
    free) cut="proc; delete $top/$(block_instance "$block"); setundef -undriven -anyseq;" ;;
    *) defines="-DMUTATE_$variant" ;;
  esac
  # -DSYNTHESIS: the RTL's own assertions (`assert ... else $error`) are beyond Yosys 0.23's parser; the
  # wrappers state them. -mem2reg: storage arrays become registers the induction probes can name.
  nice yosys -q -l "$base.yosys.log" -p "
    read_verilog -formal -sv -mem2reg -DSYNTHESIS $defines -I$rtl/include $sources $wrapper;
    hierarchy -check -top $top; $cut
    prep -flatten -top $top;
    write_smt2 -wires $base.smt2" > /dev/null 2>&1 || return 1
  if [ "$variant" != free ] && grep -q 'is used but has no driver' "$base.yosys.log"; then
    echo "run_bmc: $(grep -m1 'is used but has no driver' "$base.yosys.log") (an induction probe names a" \
         "register the block no longer has)" >> "$base.yosys.log"
    return 1
  fi
  return 0
}

# smtbmc with z3. --unroll: z3 4.8.12 stalls in its preprocessing on the CSR block's incremental form.
smtbmc() {
  nice yosys-smtbmc -s z3 --unroll "$@"
}

# Properties reported failed in a smtbmc log, comma separated.
failed_asserts() {
  sed -nE 's/.*Assert failed in [^:]*: ([A-Za-z0-9_.$\\]+).*/\1/p' "$1" | sort -u | paste -sd, -
}

failures=0
summary=()
start_all=$SECONDS
echo "bmc dir=$out pkg=$pkg mode=$([ $mutate = 1 ] && echo mutate || echo check)"

check_block() {
  local block=$1 depth=$2 base=$out/$1 start=$SECONDS result=pass proof=induction detail=""
  rm -f "$base".bmc.vcd "$base".induction.vcd
  if ! elaborate "$block" "" "$base"; then
    result=FAIL proof=bounded detail="Yosys failed: see $base.yosys.log"
  else
    # Every labelled assertion must reach the solver: one Yosys folds to true holds by construction.
    local missing
    missing=$(comm -23 <(wrapper_asserts "$root/tb/formal/${block}_props.sv") \
                       <(sed -nE 's/^; yosys-smt2-assert [0-9]+ ([A-Za-z0-9_]+).*/\1/p' "$base.smt2" | sort -u) |
              paste -sd, -)
    if [ -n "$missing" ]; then
      result=FAIL proof=bounded detail="trivially true (folded away by Yosys): $missing"
    elif ! smtbmc -t "$depth" --dump-vcd "$base.bmc.vcd" "$base.smt2" > "$base.bmc.log" 2>&1 ||
         ! grep -q 'Status: PASSED' "$base.bmc.log"; then
      result=FAIL proof=bounded
      detail="counterexample: $base.bmc.vcd ($(failed_asserts "$base.bmc.log") failed in step"
      detail+=" $(sed -nE 's/.*Checking assertions in step ([0-9]+).*/\1/p' "$base.bmc.log" | tail -1); log $base.bmc.log)"
    else
      rm -f "$base.bmc.vcd"
      if ! smtbmc -i -t "$depth" --dump-vcd "$base.induction.vcd" "$base.smt2" > "$base.induction.log" 2>&1 ||
         ! grep -q 'Status: PASSED' "$base.induction.log"; then
        result=FAIL proof=bounded
        detail="induction step failed: $base.induction.vcd ($(failed_asserts "$base.induction.log")); a state the"
        detail+=" invariants do not exclude, reachable or not (log $base.induction.log)"
      else
        rm -f "$base.induction.vcd"
        # Covers to the block's own depth at least, so that a small DEPTH does not miss them.
        local unreached cover_depth
        cover_depth=$(block_depth "$block")
        [ "$depth" -lt "$cover_depth" ] || cover_depth=$depth
        smtbmc -c -t "$cover_depth" "$base.smt2" > "$base.cover.log" 2>&1 || true
        unreached=$(sed -nE 's/.*Unreached cover statement at ([A-Za-z0-9_]+).*/\1/p' "$base.cover.log" | paste -sd, -)
        if [ -n "$unreached" ] || ! grep -q 'Status: PASSED' "$base.cover.log"; then
          result=FAIL
          detail="covers not reached in $cover_depth cycles: ${unreached:-see $base.cover.log}"
        fi
      fi
    fi
  fi
  local line="bmc block=$block depth=$depth result=$result proof=$proof seconds=$((SECONDS - start))"
  echo "$line"
  [ -z "$detail" ] || echo "  $block: $detail"
  summary+=("$line")
  [ $result = pass ] || failures=$((failures + 1))
}

mutate_block() {
  local block=$1 depth=$2 variant
  for variant in $(block_mutations "$block"); do
    local base=$out/$block.mutate.$variant start=$SECONDS result caught="" detail=""
    rm -f "$base".*.vcd
    if ! elaborate "$block" "$variant" "$base"; then
      result=error detail="Yosys failed: see $base.yosys.log"
    else
      # --keep-going: every property the fault breaks within the depth, not just the first.
      smtbmc --keep-going -t "$depth" --dump-vcd "$base.%.vcd" "$base.smt2" > "$base.bmc.log" 2>&1 || true
      caught=$(failed_asserts "$base.bmc.log")
      if grep -q 'Status: FAILED' "$base.bmc.log"; then result=FAIL; else result=pass; fi
      if [ "$variant" = free ] && [ $result = FAIL ]; then
        local spared
        spared=$(comm -23 <(wrapper_asserts "$root/tb/formal/${block}_props.sv") <(tr , '\n' <<< "$caught" | sort -u) |
                 paste -sd, -)
        [ -z "$spared" ] || detail="properties that hold whatever the block does: $spared"
      fi
    fi
    local line="bmc block=$block mutation=$variant depth=$depth result=$result caught_by=${caught:-none}"
    line+=" seconds=$((SECONDS - start))"
    echo "$line"
    if [ $result != FAIL ]; then
      detail="${detail:-not caught} (log $base.bmc.log)"
    fi
    [ -z "$detail" ] || echo "  $block/$variant: $detail"
    summary+=("$line")
    if [ $result != FAIL ] || [ -n "$detail" ]; then failures=$((failures + 1)); fi
  done
}

mutations=0
for block in "${blocks[@]}"; do
  depth=${depth_arg:-$(block_depth "$block")}
  if [ $mutate = 1 ]; then
    mutations=$((mutations + $(wc -w <<< "$(block_mutations "$block")")))
    mutate_block "$block" "$depth"
  else
    check_block "$block" "$depth"
  fi
done

echo
printf '%s\n' "${summary[@]}"
if [ $mutate = 1 ]; then
  echo "bmc mutations=$mutations uncaught=$failures seconds=$((SECONDS - start_all))"
else
  echo "bmc blocks=${#blocks[@]} failures=$failures seconds=$((SECONDS - start_all))"
fi
[ "$failures" = 0 ]
