# Piper's front door. `make demo` and `make check` work on a fresh Debian machine: they install
# what is missing (apt-get), configure, build, and run.
BUILD ?= build
JOBS ?= $(shell nproc)
# Debian packages the build, the tests and the demo need (see README "Toolchain").
PACKAGES := cmake make gcc g++ llvm-22-dev libmlir-22-dev llvm-22-tools \
            libopenblas-dev libopenmpi-dev openmpi-bin python3 python3-torch python3-numpy time
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: all deps configure build check demo bench clean

all: build

# Installs only the packages that are not installed yet.
deps:
	@missing=""; for p in $(PACKAGES); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "piper: installing:$$missing"; \
	  $(SUDO) apt-get update -q && \
	  DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -q --no-install-recommends $$missing; \
	fi

$(BUILD)/Makefile: CMakeLists.txt
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release

configure: deps $(BUILD)/Makefile

build: configure
	cmake --build $(BUILD) -j $(JOBS)

# Every lit suite (dialects, passes, lowering, runtime, tools, end-to-end against PyTorch).
check: build
	/usr/lib/llvm-22/bin/lit -sv $(BUILD)/test

# Trains the default GPT (L4 C256 H4 T128 B8) for 20 steps on the built-in corpus, then the
# same model as a 2-stage 1F1B pipeline on 2 MPI ranks: the losses agree with the first run.
MPIRUN := mpirun --allow-run-as-root --oversubscribe
demo: build
	@mkdir -p $(BUILD)/demo
	$(BUILD)/bin/piper-gen gpt > $(BUILD)/demo/gpt.mlir
	$(BUILD)/bin/piper-compile $(BUILD)/demo/gpt.mlir -o $(BUILD)/demo/train
	$(BUILD)/demo/train --steps 20 --metrics $(BUILD)/demo/metrics.jsonl
	@echo "--- the same GPT as a 1F1B pipeline over 2 MPI ranks, 4 microbatches ---"
	$(BUILD)/bin/piper-gen gpt --stages 2 > $(BUILD)/demo/gpt-pp2.mlir
	$(BUILD)/bin/piper-sched 1f1b --stages 2 --microbatches 4 > $(BUILD)/demo/pp2-1f1b.json
	$(BUILD)/bin/piper-compile $(BUILD)/demo/gpt-pp2.mlir --strategy $(BUILD)/demo/pp2-1f1b.json \
	  -o $(BUILD)/demo/train-pp2
	$(MPIRUN) -np 2 $(BUILD)/demo/train-pp2 --steps 5 --metrics $(BUILD)/demo/metrics-pp2.jsonl

# Tables: our compiled step against PyTorch, pinned to one core.
bench: build
	bash bench/run.sh $(BUILD)

clean:
	rm -rf $(BUILD)
