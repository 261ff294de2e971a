# tpusim top-level entry points. CONFIG selects the hardware configuration (rtl/config/<CONFIG>.cfg).
CONFIG ?= tiny
JOBS ?= $(shell nproc)
BUILD_DIR ?= build/$(CONFIG)
SIM_DIR := build/sim

APT_PACKAGES := verilator libsystemc-dev gtkwave yosys libboost-dev googletest libgtest-dev cmake g++ make
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: all deps build test sim wave lint synth bench-mxu bench-hbm bench-gemm clean

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

$(BUILD_DIR)/CMakeCache.txt: | deps
	cmake -S . -B $(BUILD_DIR) -DTPU_CONFIG=$(CONFIG)

build: deps $(BUILD_DIR)/CMakeCache.txt
	cmake --build $(BUILD_DIR) -j$(JOBS)

test: build
	cd $(BUILD_DIR) && ctest --output-on-failure -j$(JOBS)

# Runs a dense layer on the verilated chip and writes a waveform and a GTKWave save file.
sim: build
	mkdir -p $(SIM_DIR)
	$(BUILD_DIR)/sim/tpusim run sim/dense_layer.hlo --backend=rtl --config=$(CONFIG) --seed=1 \
	  --trace=$(SIM_DIR)/sim.fst
	cp sim/chip.gtkw $(SIM_DIR)/sim.gtkw
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
bench-gemm: deps
	cmake -S . -B build/v2 -DTPU_CONFIG=v2
	cmake --build build/v2 -j$(JOBS) --target bench-gemm

clean:
	rm -rf build
