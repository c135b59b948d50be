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
NVFLAGS_COMMON = $(NVFLAGS) -std=c++17 -shared -Xcompiler -fPIC,-Wall,-Wextra,-Werror \
             -Werror all-warnings -cudart shared -Xlinker -rpath=$(CUDA)/lib64 -Icommon
LDLIBS    := -L$(CUDA)/lib64 -Wl,-rpath,$(CUDA)/lib64 -lcudart -ldl -lm

STEP_SRC  := $(sort $(wildcard steps/*/attention.cu))
STEP_SO   := $(patsubst steps/%/attention.cu,build/steps/%.so,$(STEP_SRC))
HARNESS   := common/tensor.c common/reference.c common/metrics.c common/gpu.c common/steps.c \
             common/cli.c common/check.c
HARNESS_O := $(patsubst common/%.c,build/obj/%.o,$(HARNESS))
HEADERS   := common/attention.h common/harness.h
TESTS     := $(patsubst tests/test_%.c,build/tests/%,$(wildcard tests/test_*.c))
GPU       ?= h200

.PHONY: all tests test check bench plots readme diff sass sanitize profile step-flags tiles deps clean help
all: $(STEP_SO) build/attn

help:
	@echo "make            build every step (build/steps/NN_name.so) and build/attn"
	@echo "make test       install missing packages (as root), build, run the CPU and GPU tests"
	@echo "make check      attn check: every step against the fp64 reference (needs a GPU)"
	@echo "make bench      the sweeps + SDPA peers + charts on this GPU; without one, redraw charts"
	@echo "make bench QUICK=1   the sweeps' quick lines + peers + charts into out/quick/<gpu>/"
	@echo "make plots      redraw plots/\$$(GPU)/*.png from bench/results/\$$(GPU) (GPU=h200 by default)"
	@echo "make readme     rewrite the README's ladder table from bench/results/\$$(GPU), and with GPU=h200 the numbers"
	@echo "                the README and notes quote (tools/gen_numbers.py)"
	@echo "make diff A=01 B=02        the lesson between two steps (indentation changes ignored)"
	@echo "make sass STEP=02 | sanitize STEP=02 | profile STEP=02"
	@echo "                a step by number (8, 08) or by the start of its name (02_ragged_mask)"
	@echo "make step-flags STEP=08    the step's folder and the nvcc flags make builds it with"
	@echo "make tiles      build step 03 once per tile configuration (bench/tiles.sh runs them)"
	@echo "make tests      build the test binaries only; make clean: remove build/; make deps: install packages"
	@echo "ARCH='-gencode ...' overrides the targets (default sm_80, sm_90 + PTX); a step's own"
	@echo "                steps/NN_name/step.mk (NN_name_ARCH, NN_name_LIBS) wins over ARCH"

# ----------------------------------------------------------------------------- the steps
# A step may carry steps/NN_name/step.mk with its own settings, by the step's folder name:
#   NN_name_ARCH := -gencode arch=compute_90a,code=sm_90a   (replaces ARCH for this step alone:
#                                                           `make ARCH=...` cannot clobber it)
#   NN_name_LIBS := -lcublas                                (extra link libraries)
-include $(wildcard steps/*/step.mk)
step_arch = $(or $($(1)_ARCH),$(ARCH))
STEP_NVFLAGS = $(NVFLAGS_COMMON) $(call step_arch,$(1))

build/steps/%.so: steps/%/attention.cu
	@mkdir -p $(@D)
	$(NVCC) $(call STEP_NVFLAGS,$*) -MMD -MP -MF build/steps/$*.d -o $@ $< $($*_LIBS)

-include $(wildcard build/steps/*.d)

# ---------------------------------------------------------------------- harness and tools
build/obj/%.o: common/%.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -MMD -MP -c -o $@ $<

-include $(wildcard build/obj/*.d build/obj/*/*.d)

build/libharness.a: $(HARNESS_O)
	ar rcs $@ $^

# The tools on top of the harness: cli/ (attn) uses bench/ (measure, sweeps, attn bench), both use
# common/; common/ includes nothing from either.
TOOL_SRC  := $(wildcard cli/*.c bench/*.c)
TOOL_O    := $(patsubst %.c,build/obj/%.o,$(TOOL_SRC))
build/obj/cli/%.o: cli/%.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -Ibench -MMD -MP -c -o $@ $<

build/obj/bench/%.o: bench/%.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -Ibench -MMD -MP -c -o $@ $<

build/attn: $(TOOL_O) build/libharness.a
	$(CC) -o $@ $^ $(LDLIBS)

# ---------------------------------------------------------------------------------- tests
tests: $(TESTS)

build/tests/%: tests/test_%.c build/libharness.a
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -MMD -MP -o $@ $< build/libharness.a $(LDLIBS) -lcriterion

-include $(wildcard build/tests/*.d)

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

# Every tests/test_NAME.c is a Criterion binary build/tests/NAME; tools/run_tests.sh runs them (the GPU
# tests first, verbosely where a GPU is usable; without one they say once why they skip), then every
# tests/*.sh in name order, then the Python front door's tests where PyTorch is installed, and ends
# with one line: N passed, N failed, N skipped.
test: deps all tests
	@bash tools/run_tests.sh $(TESTS)

check: all
	build/attn check

# ----------------------------------------------------------------------- bench and charts
# QUICK=1: only the sweeps' quick lines and the peers', no attn check, into out/quick/<gpu>/
# (bench/run.sh --quick; the committed results and charts are left alone).
bench: all
	bench/run.sh$(if $(filter-out 0,$(QUICK)), --quick)

# The charts of one GPU's results; the README is left alone (its table changes only by `make readme`).
plots:
	plots/draw.sh bench/results/$(GPU) plots/$(GPU)

# The README's ladder table from bench/results/$(GPU) (default h200, the GPU the README shows);
# the numbers the text quotes (README and notes, tools/gen_numbers.py) only from h200's results,
# which the prose around them names (tests/generated_numbers.sh checks them against h200).
readme:
	plots/readme_table.sh bench/results/$(GPU) README.md
	@if [ "$(GPU)" != h200 ]; then echo "make readme: the table from bench/results/$(GPU); the numbers in the text stay the H200's (the prose names it)"; \
	elif command -v python3 >/dev/null; then python3 tools/gen_numbers.py --write \
	  --results bench/results/$(GPU) README.md notes/*.md; \
	else echo "make readme: no python3, the numbers in the text (tools/gen_numbers.py) are left as they are"; fi

# --------------------------------------------------------------------------- for readers
# A step is named by its number, with or without leading zeros (8, 08 and 008 are steps/08_*), or
# by its folder's name or the start of it (02_ragged_mask, 02_rag, steps/02_ragged_mask). The
# number is read in base 10 (printf '%02d' alone reads 08 as bad octal).
step_num = $(shell case '$(1)' in (''|*[!0-9]*) ;; (*) printf '%02d' "$$(expr '$(1)' + 0)" ;; esac)
step_glob = $(if $(call step_num,$(1)),steps/$(call step_num,$(1))_*/,steps/$(patsubst steps/%,%,$(patsubst %/,%,$(1)))*/)
step_dir = $(if $(strip $(1)),$(patsubst %/,%,$(firstword $(wildcard $(call step_glob,$(strip $(1)))))))
# make diff ignores changes of indentation alone (diff -w): where a step wraps old code in a new
# loop (08's loop over the block's work tiles), the old lines show as context, the loop as new.
diff:
	@if [ "$(origin A)" != "command line" ] || [ "$(origin B)" != "command line" ]; then \
	  echo "make diff needs both steps: make diff A=11 B=12 (A the earlier one; by number or name)" >&2; exit 2; fi; \
	a="$(call step_dir,$(A))"; b="$(call step_dir,$(B))"; \
	if [ -z "$$a$$b" ]; then echo "make diff: A=$(A) and B=$(B) name no step in steps/" >&2; exit 2; fi; \
	if [ -z "$$a" ]; then echo "make diff: A=$(A) names no step in steps/" >&2; exit 2; fi; \
	if [ -z "$$b" ]; then echo "make diff: B=$(B) names no step in steps/" >&2; exit 2; fi; \
	diff -u -w "$$a/attention.cu" "$$b/attention.cu"; true

STEP ?= 02
STEP_DIR = $(call step_dir,$(STEP))
STEP_NAME = $(notdir $(STEP_DIR))
need_step = @test -n "$(STEP_DIR)" || { echo "make $@: STEP=$(STEP) names no step in steps/" >&2; exit 2; }
need_tool = @test -x $(1) || { echo "make $@: $(1) is missing (it comes with the full CUDA toolkit; set CUDA=/path/to/cuda)"; exit 2; }

# The folder STEP names and the nvcc flags `make` builds it with (tools/ptx_identity.sh and
# tests/make_diff.sh read them).
step-flags:
	$(need_step)
	@echo "$(STEP_DIR)"
	@echo "$(call STEP_NVFLAGS,$(STEP_NAME))"

# Registers, spills and shared memory per kernel (ptxas), then the SASS: built with the step's own
# flags, exactly as `make` builds it.
sass: all
	$(need_step)
	$(NVCC) $(call STEP_NVFLAGS,$(STEP_NAME)) -Xptxas -v -o /dev/null $(STEP_DIR)/attention.cu 2>&1 | grep -E "Compiling|registers|spill|smem"
	@if command -v cuobjdump >/dev/null || test -x $(CUDA)/bin/cuobjdump; then \
	  PATH=$(CUDA)/bin:$$PATH cuobjdump --dump-sass build/steps/$(STEP_NAME).so; \
	else echo "make sass: no cuobjdump here (the CUDA toolkit's full install has it); registers above"; fi

# memcheck, racecheck and synccheck on a few small shapes that reach every kind of tile
# (bench/sanitize.sh says which); the whole grid under racecheck would take hours.
sanitize: all
	$(need_step)
	bench/sanitize.sh $(firstword $(subst _, ,$(STEP_NAME)))

profile: all
	$(need_step)
	$(call need_tool,$(CUDA)/bin/ncu)
	$(CUDA)/bin/ncu --clock-control none --set full -k regex:attention\|softmax \
	  build/attn run --step $(STEP_NAME) --shape 4,8,4096,4096,64 --dtype bf16 --reps 3

# The tile sweep of step 03: the step built once per (Br, Bc, warps, stages) with TILE_* macros,
# into build/tiles/<config>/03_larger_tiles.so, each with its ptxas report; bench/tiles.sh runs them.
TILE_BR ?= 64 128
TILE_BC ?= 32 64 128
TILE_WARPS ?= 4 8
TILE_STAGES ?= 2 3
TILE_CONFIGS := $(foreach r,$(TILE_BR),$(foreach c,$(TILE_BC),$(foreach w,$(TILE_WARPS),$(foreach s,$(TILE_STAGES),br$(r)_bc$(c)_w$(w)_s$(s)))))
tiles: $(foreach t,$(TILE_CONFIGS),build/tiles/$(t)/03_larger_tiles.so) build/attn
build/tiles/%/03_larger_tiles.so: steps/03_larger_tiles/attention.cu
	@mkdir -p $(@D)
	@set -- $$(echo $* | sed 's/br\([0-9]*\)_bc\([0-9]*\)_w\([0-9]*\)_s\([0-9]*\)/\1 \2 \3 \4/'); \
	$(NVCC) $(call STEP_NVFLAGS,03_larger_tiles) -DTILE_BR=$$1 -DTILE_BC=$$2 -DTILE_WARPS=$$3 \
	  -DTILE_STAGES=$$4 -Xptxas -v -o $@ $< > $(@D)/ptxas.txt 2>&1 || { cat $(@D)/ptxas.txt; exit 1; }

clean:
	rm -rf build
