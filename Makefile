# FlashAttention, one step at a time. `make help` lists the targets.
CUDA      ?= /usr/local/cuda
NVCC      ?= $(CUDA)/bin/nvcc
CC        ?= gcc
# sm_80 and sm_90 machine code plus PTX, unless ARCH= says otherwise.
ARCH      ?= -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90 \
             -gencode arch=compute_90,code=compute_90
CFLAGS    ?= -O2 -g
CFLAGS    += -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -I$(CUDA)/include -Icommon
NVFLAGS   ?= -O3 -lineinfo
NVFLAGS   += -std=c++17 $(ARCH) -shared -Xcompiler -fPIC,-Wall,-Wextra,-Werror -Werror all-warnings \
             -cudart shared -Xlinker -rpath=$(CUDA)/lib64 -Icommon
LDLIBS    := -L$(CUDA)/lib64 -Wl,-rpath,$(CUDA)/lib64 -lcudart -ldl -lm

STEP_SRC  := $(sort $(wildcard steps/*/attention.cu))
STEP_SO   := $(patsubst steps/%/attention.cu,build/steps/%.so,$(STEP_SRC))
HARNESS   := common/tensor.c common/reference.c common/metrics.c common/gpu.c common/steps.c \
             common/cli.c common/check.c
HARNESS_O := $(patsubst common/%.c,build/obj/%.o,$(HARNESS))
HEADERS   := common/attention.h common/harness.h
TESTS     := build/tests/cpu build/tests/gpu build/tests/cli
GPU       ?= h200

.PHONY: all tests test check bench plots diff sass sanitize profile deps clean help
all: $(STEP_SO) build/attn

help:
	@echo "make            build every step (build/steps/NN_name.so) and build/attn"
	@echo "make test       install missing packages (as root), build, run the CPU and GPU tests"
	@echo "make check      attn check: every step against the fp64 reference (needs a GPU)"
	@echo "make bench      the sweeps + SDPA peers + charts on this GPU; without one, redraw charts"
	@echo "make plots      redraw plots/\$$(GPU)/*.png and the README table from bench/results/\$$(GPU)"
	@echo "make diff A=01 B=02        the lesson between two steps"
	@echo "make sass STEP=02 | sanitize STEP=02 | profile STEP=02"
	@echo "ARCH='-gencode ...' overrides the targets (default sm_80, sm_90 + PTX)"

# ----------------------------------------------------------------------------- the steps
build/steps/%.so: steps/%/attention.cu common/attention.h
	@mkdir -p $(@D)
	$(NVCC) $(NVFLAGS) -o $@ $< $(STEP_LIBS)

# step 00 is the only one that calls cuBLAS
build/steps/00_materialized.so: STEP_LIBS = -lcublas

# ---------------------------------------------------------------------- harness and tools
build/obj/%.o: common/%.c $(HEADERS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -c -o $@ $<

build/libharness.a: $(HARNESS_O)
	ar rcs $@ $^

# The tools on top of the harness: cli/ (attn) uses bench/ (measure, sweeps, attn bench), both use
# common/; common/ includes nothing from either.
TOOL_SRC  := $(wildcard cli/*.c bench/*.c)
TOOL_O    := $(patsubst %.c,build/obj/%.o,$(TOOL_SRC))
TOOL_H    := $(wildcard bench/*.h)
build/obj/cli/%.o: cli/%.c $(HEADERS) $(TOOL_H)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -Ibench -c -o $@ $<

build/obj/bench/%.o: bench/%.c $(HEADERS) $(TOOL_H)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -Ibench -c -o $@ $<

build/attn: $(TOOL_O) build/libharness.a
	$(CC) -o $@ $^ $(LDLIBS)

# ---------------------------------------------------------------------------------- tests
tests: $(TESTS)

build/tests/%: tests/test_%.c tests/run_attn.h build/libharness.a $(HEADERS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $< build/libharness.a $(LDLIBS) -lcriterion

# Debian packages the tests and charts need; installed when running as root, else named.
DEB_PKGS := libcriterion-dev gnuplot-nox
deps:
	@missing=""; for p in $(DEB_PKGS); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    echo "installing$$missing"; \
	    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing) >/dev/null || exit 1; \
	  else echo "missing Debian packages; run: sudo apt-get install -y$$missing"; exit 1; fi; \
	fi

# The GPU tests run verbosely so that, without a GPU, each one says why it skipped.
test: deps all tests
	build/tests/cpu
	build/tests/cli
	build/tests/gpu --verbose

check: all
	build/attn check

# ----------------------------------------------------------------------- bench and charts
bench: all
	bench/run.sh

plots:
	plots/draw.sh bench/results/$(GPU) plots/$(GPU)
	plots/readme_table.sh bench/results/$(GPU) README.md

# --------------------------------------------------------------------------- for readers
A ?= 01
B ?= 02
diff:
	@a=$$(ls -d steps/$(A)_* 2>/dev/null | head -1); b=$$(ls -d steps/$(B)_* 2>/dev/null | head -1); \
	if [ -z "$$a" ] || [ -z "$$b" ]; then echo "make diff: no step $(A) or $(B) (try A=01 B=02)"; exit 2; fi; \
	diff -u $$a/attention.cu $$b/attention.cu; true

STEP ?= 02
STEP_DIR = $(firstword $(wildcard steps/$(STEP)_*))
sass: all
	@test -n "$(STEP_DIR)" || { echo "make sass: no step $(STEP)"; exit 2; }
	$(NVCC) $(NVFLAGS) -Xptxas -v -o /dev/null $(STEP_DIR)/attention.cu 2>&1 | grep -E "Compiling|registers|spill"
	@if command -v cuobjdump >/dev/null || test -x $(CUDA)/bin/cuobjdump; then \
	  PATH=$(CUDA)/bin:$$PATH cuobjdump --dump-sass build/steps/$(notdir $(STEP_DIR)).so; \
	else echo "make sass: no cuobjdump here (the CUDA toolkit's full install has it); registers above"; fi

sanitize: all
	$(CUDA)/bin/compute-sanitizer --tool memcheck build/attn check --step $(STEP)
	$(CUDA)/bin/compute-sanitizer --tool racecheck build/attn check --step $(STEP)

profile: all
	$(CUDA)/bin/ncu --clock-control none --set full -k regex:attention\|softmax \
	  build/attn run --step $(STEP) --shape 4,8,4096,4096,64 --dtype bf16 --reps 3

clean:
	rm -rf build
