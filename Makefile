# tpusim top-level entry points. CONFIG selects the hardware configuration (rtl/config/<CONFIG>.cfg).
CONFIG ?= tiny
JOBS ?= $(shell nproc)
BUILD_DIR ?= build/$(CONFIG)
SIM_DIR := build/sim

APT_PACKAGES := verilator libsystemc-dev gtkwave yosys z3 libboost-dev googletest libgtest-dev cmake g++ clang libclang-rt-dev make \
  python3-dev python3-venv dataset-fashion-mnist chromium
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: all deps venv build test test-sanitize coverage regress sim wave lint synth bench-mxu bench-hbm bench-gemm bench-workloads bench-fidelity train bench-parity bench-steps-per-execution bench-determinism bench-allreduce fuzz clean

all: build

# Installs the Debian packages the build needs, only when one is missing.
deps:
	@missing=""; for p in $(APT_PACKAGES); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $$missing; \
	fi

# The front end's Python packages (sw/frontend/requirements.txt) in a virtual environment of Debian's
# python3, rebuilt when the requirements change.
VENV := build/venv
$(VENV)/.installed: sw/frontend/requirements.txt | deps
	/usr/bin/python3 -m venv $(VENV)
	$(VENV)/bin/pip install -q --disable-pip-version-check -r sw/frontend/requirements.txt
	touch $@

venv: $(VENV)/.installed

$(BUILD_DIR)/CMakeCache.txt: | deps venv
	cmake -S . -B $(BUILD_DIR) -DTPU_CONFIG=$(CONFIG)

build: deps venv $(BUILD_DIR)/CMakeCache.txt
	cmake --build $(BUILD_DIR) -j$(JOBS)

test: build
	cd $(BUILD_DIR) && ctest --output-on-failure -j$(JOBS)

# The tree with AddressSanitizer and UndefinedBehaviorSanitizer (-DTPU_SANITIZE=ON, g++) in its own build
# directory, then the whole CTest suite there with the suppressions of tb/sanitize/ (third-party code
# only); prints `sanitize tests=N failures=F`. What is instrumented: all of the project's C++ (libraries,
# tools, tests, the SystemC platform, the Python extension); not: the verilated models and Verilator's
# runtime (see CMakeLists.txt), libsystemc, gtest, Python and its packages.
SANITIZE_DIR := build/sanitize-$(CONFIG)
$(SANITIZE_DIR)/CMakeCache.txt: | deps venv
	cmake -S . -B $(SANITIZE_DIR) -DTPU_CONFIG=$(CONFIG) -DTPU_SANITIZE=ON

test-sanitize: deps venv $(SANITIZE_DIR)/CMakeCache.txt
	cmake --build $(SANITIZE_DIR) -j$(JOBS)
	tb/sanitize/run_tests.sh $(SANITIZE_DIR) $(JOBS)

# Line and toggle coverage of rtl/ (tb/coverage/run.sh): the verilated models instrumented (-DTPU_COVERAGE=ON)
# in their own build directory, the regression run there, the counts merged with verilator_coverage and
# reported per module; ends with `coverage line_pct=L toggle_pct=T`. Report: build/coverage-<config>/coverage/.
COVERAGE_DIR := build/coverage-$(CONFIG)
$(COVERAGE_DIR)/CMakeCache.txt: | deps venv
	cmake -S . -B $(COVERAGE_DIR) -DTPU_CONFIG=$(CONFIG) -DTPU_COVERAGE=ON

coverage: deps venv $(COVERAGE_DIR)/CMakeCache.txt
	cmake --build $(COVERAGE_DIR) -j$(JOBS)
	tb/coverage/run.sh $(COVERAGE_DIR) $(JOBS)

# The long tier (tb/regress/run.sh): synthesis, the randomized differential tests at high iteration counts,
# the HBM bench and the exhaustive numerics, seeded by REGRESS_SEED; ends with `regress parts=N failures=F`.
# REGRESS_PARTS picks parts (synth formal opcodes programs hbm runtime numerics); docs/performance.md has the figures.
REGRESS_PARTS ?=
regress: build
	REGRESS_JOBS=$(JOBS) tb/regress/run.sh $(BUILD_DIR) $(REGRESS_PARTS)

# The front end's interpreter with the extension module and the tpusim package on its path.
FRONTEND := PYTHONPATH=$(BUILD_DIR)/python JAX_PLATFORMS=cpu $(VENV)/bin/python

# Runs one training step of a JAX model (the Flax MLP with Adam, on a Fashion-MNIST batch) on the
# verilated chip and writes a waveform and a GTKWave save file.
sim: build venv
	mkdir -p $(SIM_DIR)
	$(FRONTEND) -m tpusim.sim_step --config=$(CONFIG) --trace=$(SIM_DIR)/sim.fst --gtkw=$(SIM_DIR)/sim.gtkw \
	  --gtkw-template=sim/chip.gtkw --opcode-filter=$(BUILD_DIR)/gen/tpu_opcodes.gtkw_filter
	@echo "waveform: $(SIM_DIR)/sim.fst  (make wave opens it)"

wave:
	gtkwave $(SIM_DIR)/sim.fst $(SIM_DIR)/sim.gtkw

lint: build
	cmake --build $(BUILD_DIR) --target lint

synth: build
	cmake --build $(BUILD_DIR) --target synth

# Benchmarks print figures (not pass/fail timings); see docs/performance.md and docs/hbm.md.
bench-mxu: build
	cmake --build $(BUILD_DIR) --target bench-mxu

bench-hbm: build
	cmake --build $(BUILD_DIR) --target bench-hbm

# The GEMM benchmark runs on the v2 configuration whatever CONFIG says: it builds only tpusim in build/v2.
bench-gemm: deps venv
	cmake -S . -B build/v2 -DTPU_CONFIG=v2
	cmake --build build/v2 -j$(JOBS) --target bench-gemm

# Every training step and model on the v2 reference model against its MXU/VPU/HBM bound.
bench-workloads: build
	cmake --build $(BUILD_DIR) --target bench-workloads

# The reference model's cycles (HBM twin on and off) against the rtl backend's, workload by workload.
bench-fidelity: build
	cmake --build $(BUILD_DIR) --target bench-fidelity

# libFuzzer targets (tb/fuzz): HLO text through the compiler and interpreter, random programs on the model.
FUZZ_SECONDS ?= 60
fuzz: deps
	tb/fuzz/run_fuzz.sh $(FUZZ_SECONDS)

# Trains the MLP on Fashion-MNIST on the reference model of the v2 chip (sw/frontend/README.md).
TRAIN_FLAGS ?= --model=mlp --epochs=5 --batch-size=128 --config=v2
train: build venv
	$(FRONTEND) -m tpusim.train $(TRAIN_FLAGS)

# Device (v2 model) vs XLA on the CPU over 20 training steps: the MLP with three bf16 passes per dot; the
# CNN's step with three passes everywhere needs more than the v2 IMEM, so it runs at the compiler's choice
# (three passes for the dots whose values reach a compare, exp or log; one elsewhere).
bench-parity: build venv
	$(FRONTEND) -m tpusim.parity --model=mlp --steps=20
	$(FRONTEND) -m tpusim.parity --model=cnn --steps=20

# 200 MLP training steps on the v2 reference model with one step per host call and with 50 in a device
# loop fed through the infeed (docs/performance.md, "steps_per_execution").
bench-steps-per-execution: build venv
	$(FRONTEND) -m tpusim.spe_bench --steps=200 --steps-per-execution=50

# An f32 all-reduce of 4 MiB over the eight cores of the v2-8 board (reference model) against the ring's
# link bound, 2(p-1)/p x bytes / link bandwidth (docs/performance.md).
bench-allreduce: build
	cmake --build $(BUILD_DIR) --target bench-allreduce

# The seeds' correctness recipe: the MLP trained 1000 steps (global batch 128) on the CPU, on one core and
# data-parallel on every core of the v2-8 board (reference model), twice each (docs/performance.md).
bench-determinism: build venv
	$(FRONTEND) -m tpusim.determinism --steps=1000 --config=v2

clean:
	rm -rf build
