# Piper's front door. `make demo` and `make check` work on a fresh Debian machine: they install
# what is missing (apt-get), configure, build, and run.
BUILD ?= build
JOBS ?= $(shell nproc)
# Debian packages the build, the tests and the demo need (see docs/getting-started.md, "Toolchain").
PACKAGES := cmake make gcc g++ llvm-22-dev libmlir-22-dev llvm-22-tools \
            libopenblas-dev libopenmpi-dev openmpi-bin python3 python3-torch python3-numpy time \
            valgrind python3-psutil slurmctld slurmd slurm-client munge
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: all deps configure build check check-asan check-all check-kernels fuzz fuzz-corpus demo bench clean

all: build

# Installs only the packages that are not installed yet. Their services (munge, slurmctld,
# slurmd) are not started: policy-rc.d answers 101 ("not allowed") to every start while apt
# runs, where the machine has no policy of its own; test/e2e/slurm starts its own daemons.
deps:
	@missing=""; for p in $(PACKAGES); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "piper: installing:$$missing"; \
	  $(SUDO) apt-get update -q || exit 1; \
	  if [ ! -e /usr/sbin/policy-rc.d ]; then \
	    printf '#!/bin/sh\nexit 101\n' | $(SUDO) tee /usr/sbin/policy-rc.d > /dev/null && \
	    $(SUDO) chmod 755 /usr/sbin/policy-rc.d && norc=1; \
	  fi; \
	  DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -q --no-install-recommends $$missing; \
	  rc=$$?; [ -z "$${norc:-}" ] || $(SUDO) rm -f /usr/sbin/policy-rc.d; exit $$rc; \
	fi

$(BUILD)/Makefile: CMakeLists.txt
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release

configure: deps $(BUILD)/Makefile

build: configure
	cmake --build $(BUILD) -j $(JOBS)

# lit, as every suite run calls it: a test that runs past LIT_TIMEOUT seconds fails on its own
# (a hang costs one test, not the CI run: lit kills its process tree, mpirun's ranks included;
# python3-psutil does the killing), and the slowest tests are listed at the end.
LIT := /usr/lib/llvm-22/bin/lit
LIT_TIMEOUT ?= 900
LIT_FLAGS ?= -sv --time-tests --timeout $(LIT_TIMEOUT)

# Every lit suite (dialects, passes, lowering, runtime, tools, end-to-end against PyTorch).
check: build
	$(LIT) $(LIT_FLAGS) $(BUILD)/test

# The whole lit suite again in a tree built with AddressSanitizer and UBSan: the tools, the
# runtime, the fuzz replays and every training binary the tests link. Any report fails its
# test. Leak checking stays on; Open MPI's allocations that outlive MPI_Finalize are
# suppressed by test/sanitizers/lsan.supp (its plugins stay loaded so their frames have
# names), and the slow unwinder gives full stacks through Open MPI's frame-pointer-less code.
ASAN_BUILD ?= build-asan
SANITIZER_ENV := ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:fast_unwind_on_malloc=0 \
  LSAN_OPTIONS=suppressions=$(CURDIR)/test/sanitizers/lsan.supp:print_suppressions=0 \
  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ASAN_SYMBOLIZER_PATH=/usr/lib/llvm-22/bin/llvm-symbolizer \
  OMPI_MCA_mca_base_component_disable_dlclose=1 PMIX_MCA_mca_base_component_disable_dlclose=1
# ASAN_LIT_ARGS: more lit arguments (-Dasan_tier=all: every test, as check-all).
check-asan: configure
	cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=Release -DPIPER_SANITIZE=ON > /dev/null
	cmake --build $(ASAN_BUILD) -j $(JOBS)
	$(SANITIZER_ENV) $(LIT) $(LIT_FLAGS) $(ASAN_LIT_ARGS) $(ASAN_BUILD)/test

# Everything CI leaves out: make check, then every test under the sanitizers, not only the
# tier of test/sanitizers/asan-tier.txt (about an hour more on 2 cores; docs/testing.md).
check-all: check
	$(MAKE) --no-print-directory check-asan ASAN_LIT_ARGS=-Dasan_tier=all

# The suites that compare numbers between runs (end to end, and the GPU plans under the fake
# CUDA runtime against the CPU's) under OpenBLAS kernels other than the one this processor
# picks (their GEMMs round differently): two of Haswell, Sandybridge and SkylakeX (AVX-512
# processors only), chosen by test/kernels.sh; KERNELS="Zen Haswell" names others. Numeric
# tests must hold on any x86-64 processor; this is how to see it on one (docs/testing.md).
KERNELS ?= $(shell bash test/kernels.sh)
KERNEL_SUITES ?= e2e gpu frontend
check-kernels: build
	@for k in $(KERNELS); do \
	  echo "--- OPENBLAS_CORETYPE=$$k ---"; \
	  OPENBLAS_CORETYPE=$$k $(LIT) $(LIT_FLAGS) $(addprefix $(BUILD)/test/,$(KERNEL_SUITES)) \
	    || exit 1; \
	done

# libFuzzer targets (test/fuzz) built with clang, ASan and UBSan, each run FUZZ_SECONDS
# (default 180) with its checked-in corpus and dictionary; prints a table, fails on any
# crash, leak, sanitizer report or hang. `make fuzz-corpus` then merges the inputs that
# found new coverage into test/fuzz/corpus/ (minimised), to be committed.
FUZZ_BUILD ?= build-fuzz
FUZZ_SECONDS ?= 180
FUZZ_PACKAGES := clang-22 libclang-rt-22-dev
# The targets (test/fuzz/NAME_fuzz.c, corpus/NAME): named once here for the build, the run and
# the merge.
FUZZ_TARGETS := strategy opt safetensors flags data
# Python fuzz targets (test/fuzz/NAME_fuzz.py, no build): run with the others
FUZZ_PY_TARGETS := safetensors_py
fuzz: deps
	@$(MAKE) --no-print-directory deps PACKAGES="$(FUZZ_PACKAGES)"
	CC=clang-22 CXX=clang++-22 cmake -S . -B $(FUZZ_BUILD) -DCMAKE_BUILD_TYPE=Release \
	  -DPIPER_SANITIZE=ON -DPIPER_FUZZ=ON > /dev/null
	cmake --build $(FUZZ_BUILD) -j $(JOBS) --target $(FUZZ_TARGETS:=-fuzz)
	ASAN_SYMBOLIZER_PATH=/usr/lib/llvm-22/bin/llvm-symbolizer bash test/fuzz/run.sh $(FUZZ_BUILD) \
	  $(FUZZ_SECONDS) $(FUZZ_TARGETS) $(FUZZ_PY_TARGETS)

# -use_counters=0: an input joins for a new edge, not for a new hit count on a known one (a
# third of the inputs, so the checked-in corpus and its replay stay small).
fuzz-corpus:
	for t in $(FUZZ_TARGETS); do \
	  $(FUZZ_BUILD)/bin/$$t-fuzz -merge=1 -use_counters=0 test/fuzz/corpus/$$t $(FUZZ_BUILD)/fuzz/corpus/$$t || exit 1; \
	done

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
	rm -rf $(BUILD) $(ASAN_BUILD) $(FUZZ_BUILD)
