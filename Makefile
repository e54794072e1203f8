# Makefile — builds build/paddle-run and build/libpaddle.a (what the tests link
# against), generates C from proto/*.proto with protoc-c, and runs the tests.
#
#   make              build          make test        deps + build + every test
#   make bundle       build/paddle-run-VERSION-linux-x86_64.tar.gz: binary + its libraries, relocatable
#   make demo         train the Fashion-MNIST MLP     make deps        apt-get what is missing
#   make demo-cnn     train the Fashion-MNIST CNN (2.5-4 minutes on 2 cores)
#   make demo-seq     LSTM and GRU on Fashion-MNIST rows, a char LM on fortunes, text from it
#   make SANITIZE=1   ASan+UBSan build in build-san/  make fuzz        libFuzzer targets (clang)
#   make install PREFIX=/usr/local  (binary, C API header + libpaddle-run.so, Python module)   make clean
#   make docs         regenerate docs/ops.md          make bench       benchmarks (not tests)
#   make CUDA=0       CPU only, even where nvcc is (build-cpu/, build-san-cpu/); without nvcc, the default
#   make V=1          print each command in full (by default one line a step: `CC lib/core/net.c`)

PREFIX    ?= /usr/local
SANITIZE  ?= 0
# CUDA: nvcc on PATH, else in $(CUDA_HOME)/bin; CUDA=0 builds CPU only.
CUDA_HOME ?= /usr/local/cuda
ifeq ($(origin NVCC),undefined)
NVCC      := $(shell command -v nvcc 2>/dev/null || { test -x $(CUDA_HOME)/bin/nvcc && echo $(CUDA_HOME)/bin/nvcc; })
endif
ifeq ($(NVCC),)
CUDA_AUTO := 0
else
CUDA_AUTO := 1
endif
CUDA      ?= $(CUDA_AUTO)
# the default build goes to build/ (build-san/); CUDA=0 where nvcc is, to build-cpu/ (build-san-cpu/)
ifeq ($(CUDA),$(CUDA_AUTO))
CPU_SUFFIX :=
else
CPU_SUFFIX := -cpu
endif
ifeq ($(SANITIZE),1)
BUILD     ?= build-san$(CPU_SUFFIX)
else
BUILD     ?= build$(CPU_SUFFIX)
endif

CC        ?= cc
# V=1 prints each command; otherwise a short line a step (`CC lib/core/net.c`).
ifeq ($(V),1)
Q         :=
SAY       := @:
else
Q         := @
SAY       := @printf '  %-6s %s\n'
endif
PROTOC_C  ?= protoc-c
PYTHON    ?= /usr/bin/python3
OPT       ?= -O2
VERSION   := $(shell cat VERSION 2>/dev/null || echo 0.0.0)

CPPFLAGS  += -Ilib -Iops -I$(BUILD)/gen -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE \
             -DPD_VERSION='"$(VERSION)"'
# cheap (not very-cheap) vectorisation lets gcc vectorise loops of runtime
# length; reductions stay in order (no -ffast-math), so results do not change.
# -fno-math-errno: sqrt need not set errno, so Adam's loop vectorises (the
# same correctly rounded square roots).
CFLAGS    += -std=c11 -Wall -Wextra -Werror -g $(OPT) -fvect-cost-model=cheap -fno-math-errno -fno-strict-aliasing \
             -MMD -MP $(EXTRA_CFLAGS)
# BLIS, pthread flavour: libgomp's spinning threads of the OpenMP flavour
# collapse 2-thread training to a tenth of its speed on a busy machine
# (bench/RESULTS.md); the pthread one holds up. Linked by path (+ rpath) so the
# Debian alternative chosen for libblis.so does not decide it.
MULTIARCH ?= $(shell $(CC) -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)
BLIS_FLAVOR ?= pthread
BLIS_LIB  := /usr/lib/$(MULTIARCH)/blis-$(BLIS_FLAVOR)
CPPFLAGS  += -isystem /usr/include/$(MULTIARCH)/blis-$(BLIS_FLAVOR)
LDLIBS    += -lprotobuf-c -L$(BLIS_LIB) -Wl,-rpath,$(BLIS_LIB) -lblis -ldeflate -lz -lm -lpthread

# MPI (Open MPI from Debian) for data-parallel training: on when mpicc is
# found, `make MPI=0` turns it off. Either way the binary runs as one process
# when not started by mpirun.
MPI       ?= $(if $(shell command -v mpicc 2>/dev/null),1,0)
ifeq ($(MPI),1)
CPPFLAGS  += -DPD_MPI $(patsubst -I%,-isystem %,$(shell mpicc --showme:compile))
LDLIBS    += $(shell mpicc --showme:link)
endif

# GPU: every ops/*.cu and lib/*/*.cu through nvcc for Hopper (sm_90) plus PTX
# that later GPUs JIT-compile. The CUDA runtime is linked statically and
# cuBLAS and NCCL are loaded by dlopen when a GPU is asked for (from the
# loader's search path, else this toolkit's lib directory or /usr/local/cuda:
# lib/base/dlsearch.c), so one binary starts on a machine without the
# toolkit, runs on the CPU there, and says what is missing if asked for a GPU.
CUDA_SRCS :=
ifeq ($(CUDA),1)
# The toolkit's root is what nvcc itself calls TOP: the nvcc on PATH may be a
# wrapper script elsewhere (/usr/local/bin/nvcc), so its own path says nothing.
CUDA_DIR  := $(realpath $(shell $(NVCC) --dryrun -x cu -c /dev/null -o /dev/null 2>&1 | sed -n 's/^\#\$$ TOP=//p'))
ifeq ($(wildcard $(CUDA_DIR)/include/cuda_runtime.h),)
CUDA_DIR  := $(realpath $(CUDA_HOME))
endif
CUDA_LIB  := $(firstword $(wildcard $(CUDA_DIR)/lib64/libcudart_static.a $(CUDA_DIR)/lib/libcudart_static.a $(CUDA_DIR)/targets/x86_64-linux/lib/libcudart_static.a))
CUDA_LIB  := $(patsubst %/,%,$(dir $(CUDA_LIB)))
ifeq ($(CUDA_LIB),)
$(error nvcc is $(NVCC) but no libcudart_static.a under $(CUDA_DIR); set CUDA_HOME, or build with CUDA=0)
endif
CUDA_ARCH ?= -gencode arch=compute_90,code=[sm_90,compute_90]
# cuBLAS (with cuBLASLt, 600 MB) is not linked: mk/cublas_tramp.sh makes a
# trampoline for each of its functions, filled by dlopen when a GPU is opened,
# so a CPU run does not pay for mapping it at every start.
CUBLAS_SO := $(firstword $(wildcard $(CUDA_LIB)/libcublas.so.[0-9]*) $(CUDA_LIB)/libcublas.so)
CPPFLAGS  += -DPD_WITH_CUDA -isystem $(CUDA_DIR)/include -DPD_CUBLAS_SONAME='"$(notdir $(CUBLAS_SO))"' \
             -DPD_CUDA_LIB_DIR='"$(CUDA_LIB)"'
NVCCFLAGS ?= -O3 -std=c++17 $(CUDA_ARCH) -Xcompiler -Wall,-Wextra,-Werror,-fno-strict-aliasing -Werror all-warnings
# libcudart_static.a by path (a -lcudart would take the .so beside it) and what it needs
LDLIBS    += $(CUDA_LIB)/libcudart_static.a -ldl -lrt -lpthread -lstdc++
CUDA_SRCS := $(wildcard lib/*/*.cu) $(wildcard ops/*.cu)
CUDA_GEN_OBJS := $(BUILD)/gen/cublas_tramp.o $(BUILD)/gen/cublas_tramp.S.o
endif

# NCCL (the GPU allreduce of data-parallel training) where both CUDA and MPI
# are on and nccl.h is found (the toolkit's or the system's): only its header
# is used when building; the library is loaded by dlopen when a GPU run under
# mpirun needs it (lib/dist/gpunccl.c). Without it a GPU run on more than one
# rank is refused.
ifeq ($(CUDA)$(MPI),11)
NCCL_H    := $(firstword $(wildcard $(CUDA_DIR)/include/nccl.h /usr/include/nccl.h /usr/include/$(MULTIARCH)/nccl.h))
ifneq ($(NCCL_H),)
CPPFLAGS  += -DPD_WITH_NCCL -isystem $(dir $(NCCL_H))
endif
endif

ifeq ($(SANITIZE),1)
SANFLAGS  := -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
CFLAGS    += $(SANFLAGS)
LDFLAGS   += $(SANFLAGS)
OPT       := -O1
endif

# Packages from Debian: building, and testing (which uses the demo's data too).
DEPS_BUILD := protobuf-c-compiler libprotobuf-c-dev protobuf-compiler libblis-dev libblis-pthread-dev zlib1g-dev libdeflate-dev \
              libopenmpi-dev openmpi-bin libonnx-dev
# `make bundle` (its run paths): patchelf
DEPS_BUNDLE:= patchelf
DEPS_TEST  := libcmocka-dev python3-numpy clang-format dataset-fashion-mnist libonnx-testdata python3-onnx fortunes chromium \
              python3-torch

# ---- sources ----------------------------------------------------------------
PROTOS     := proto/paddle.proto
TEST_PROTOS:= test/proto/testall.proto
# ONNX's own schema, from Debian's libonnx-dev (never a copy in this tree).
ONNX_PROTO ?= /usr/include/onnx/onnx.proto
GEN_C      := $(patsubst proto/%.proto,$(BUILD)/gen/%.pb-c.c,$(PROTOS)) $(BUILD)/gen/onnx.pb-c.c
GEN_H      := $(GEN_C:.c=.h)
TEST_GEN_C := $(patsubst test/proto/%.proto,$(BUILD)/gen/%.pb-c.c,$(TEST_PROTOS))
TEST_GEN_H := $(TEST_GEN_C:.c=.h)

# lib/ is in layers, one folder each (docs/architecture.md); sources name
# headers by layer ("core/tensor.h", with -Ilib).
LIB_SRCS   := $(wildcard lib/*/*.c) $(wildcard ops/*.c)
CMD_SRCS   := $(wildcard cmd/*.c)
UNIT_SRCS  := $(wildcard test/unit/test_*.c)
TOOL_SRCS  := $(wildcard test/tools/*.c)

# a .cu beside a .c of the same name (ops/fc.c, ops/fc.cu) gets its own object: fc.cu.o
LIB_OBJS   := $(patsubst %.c,$(BUILD)/obj/%.o,$(LIB_SRCS)) $(GEN_C:.c=.o) \
              $(patsubst %.cu,$(BUILD)/obj/%.cu.o,$(CUDA_SRCS)) $(CUDA_GEN_OBJS)
CMD_OBJS   := $(patsubst %.c,$(BUILD)/obj/%.o,$(CMD_SRCS))
TEST_GEN_OBJS := $(TEST_GEN_C:.c=.o)
UNIT_BINS  := $(patsubst test/unit/%.c,$(BUILD)/test/%,$(UNIT_SRCS))
TOOL_BINS  := $(patsubst test/tools/%.c,$(BUILD)/test/%,$(TOOL_SRCS))

LIB        := $(BUILD)/libpaddle.a
BIN        := $(BUILD)/paddle-run
BUNDLE_NAME:= paddle-run-$(VERSION)-linux-$(shell uname -m)
BUNDLE     := $(BUILD)/$(BUNDLE_NAME).tar.gz

# The C API (include/paddle_run.h, docs/c_api.md): libpaddle-run.so.VERSION
# with soname libpaddle-run.so.MAJOR, exporting only pdr_* (the map). Its
# objects are position-independent, in their own directory: Debian's gcc
# makes PIE objects, which a shared object cannot always take (R_X86_64_PC32
# against a global). They build without CUDA and MPI: the .so runs on the
# CPU in one process, and loads no CUDA runtime or MPI library.
SO_NAME    := libpaddle-run.so.$(firstword $(subst ., ,$(VERSION)))
SO_FILE    := $(BUILD)/libpaddle-run.so.$(VERSION)
SO_LINKS   := $(BUILD)/$(SO_NAME) $(BUILD)/libpaddle-run.so
PIC_CPPFLAGS := $(filter-out -DPD_WITH_CUDA -DPD_MPI -DPD_WITH_NCCL -DPD_CUBLAS_SONAME=% -DPD_CUDA_LIB_DIR=%,$(CPPFLAGS)) \
                -Iinclude
PIC_OBJS   := $(patsubst %.c,$(BUILD)/pic/%.o,$(LIB_SRCS) api/paddle_run.c) \
              $(patsubst $(BUILD)/gen/%.c,$(BUILD)/pic/gen/%.o,$(GEN_C))
SO_LDLIBS  := -lprotobuf-c -L$(BLIS_LIB) -Wl,-rpath,$(BLIS_LIB) -lblis -ldeflate -lz -lm -lpthread -ldl
# the Python module (python/paddle_run.py) goes where Debian's python3 looks
PYTHON_DIR ?= $(PREFIX)/lib/python3/dist-packages

.PHONY: all bundle deps test demo demo-cnn demo-seq install clean fuzz fuzz-seeds bench docs tests format help
.DEFAULT_GOAL := all
.SECONDARY: $(GEN_C) $(GEN_H) $(TEST_GEN_C) $(TEST_GEN_H) $(TEST_GEN_OBJS)

# (not in a sanitizer build: Python cannot load a .so that needs ASan's runtime)
SO_BUILT   := $(if $(filter 1,$(SANITIZE)),,$(SO_LINKS))
all: $(BIN) $(SO_BUILT)

help:
	@sed -n '1,12p' Makefile

deps:
	@sh mk/deps.sh $(DEPS_BUILD) $(DEPS_BUNDLE) $(DEPS_TEST)

# ---- generated code -----------------------------------------------------------
$(BUILD)/gen/%.pb-c.c $(BUILD)/gen/%.pb-c.h: proto/%.proto
	@mkdir -p $(@D)
	$(SAY) PROTOC $<
	$(Q)$(PROTOC_C) --c_out=$(BUILD)/gen -Iproto $<

$(BUILD)/gen/onnx.pb-c.c $(BUILD)/gen/onnx.pb-c.h &: $(ONNX_PROTO)
	@mkdir -p $(@D)
	$(SAY) PROTOC $(ONNX_PROTO)
	$(Q)$(PROTOC_C) --c_out=$(BUILD)/gen -I$(dir $(ONNX_PROTO)) $(ONNX_PROTO)

$(BUILD)/gen/%.pb-c.c $(BUILD)/gen/%.pb-c.h: test/proto/%.proto
	@mkdir -p $(@D)
	$(SAY) PROTOC $<
	$(Q)$(PROTOC_C) --c_out=$(BUILD)/gen -Itest/proto $<

$(BUILD)/gen/%.pb-c.o: $(BUILD)/gen/%.pb-c.c
	$(SAY) CC $<
	$(Q)$(CC) $(CPPFLAGS) $(filter-out -Werror,$(CFLAGS)) -c $< -o $@

# ---- objects, library, binary -------------------------------------------------
$(BUILD)/obj/%.o: %.c | $(GEN_H)
	@mkdir -p $(@D)
	$(SAY) CC $<
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) -c $< -o $@

$(BUILD)/obj/%.cu.o: %.cu | $(GEN_H)
	@mkdir -p $(@D)
	$(SAY) NVCC $<
	$(Q)$(NVCC) $(filter -I% -D%,$(CPPFLAGS)) -isystem $(CUDA_DIR)/include $(NVCCFLAGS) -MMD -MP -MF $(@:.o=.d) -c $< -o $@

$(BUILD)/gen/%_tramp.S $(BUILD)/gen/%_tramp.c: mk/%_tramp.sh
	@mkdir -p $(@D)
	$(SAY) GEN $@
	$(Q)sh $< $(CUBLAS_SO) $(BUILD)/gen

$(BUILD)/gen/cublas_tramp.o: $(BUILD)/gen/cublas_tramp.c
	$(SAY) CC $<
	$(Q)$(CC) $(filter-out -Werror,$(CFLAGS)) -c $< -o $@

$(BUILD)/gen/cublas_tramp.S.o: $(BUILD)/gen/cublas_tramp.S
	$(SAY) AS $<
	$(Q)$(CC) -c $< -o $@

$(BUILD)/obj/test/%.o: test/%.c | $(GEN_H) $(TEST_GEN_H)
	@mkdir -p $(@D)
	$(SAY) CC $<
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) -c $< -o $@

$(LIB): $(LIB_OBJS)
	@rm -f $@
	$(SAY) AR $@
	$(Q)$(AR) rcs $@ $^

$(BIN): $(CMD_OBJS) $(LIB)
	$(SAY) LD $@
	$(Q)$(CC) $(LDFLAGS) -o $@ $(CMD_OBJS) $(LIB) $(LDLIBS)

# ---- the C API's shared object ---------------------------------------------------
$(BUILD)/pic/%.o: %.c | $(GEN_H)
	@mkdir -p $(@D)
	$(SAY) CC-PIC $<
	$(Q)$(CC) $(PIC_CPPFLAGS) $(CFLAGS) -fPIC -c $< -o $@

$(BUILD)/pic/gen/%.o: $(BUILD)/gen/%.c
	@mkdir -p $(@D)
	$(SAY) CC-PIC $<
	$(Q)$(CC) $(PIC_CPPFLAGS) $(filter-out -Werror,$(CFLAGS)) -fPIC -c $< -o $@

$(SO_FILE): $(PIC_OBJS) api/libpaddle-run.map
	$(SAY) LD $@
	$(Q)$(CC) $(LDFLAGS) -shared -Wl,-soname,$(SO_NAME) -Wl,--version-script=api/libpaddle-run.map -Wl,-z,defs \
	    -o $@ $(PIC_OBJS) $(SO_LDLIBS)

$(SO_LINKS): $(SO_FILE)
	$(Q)ln -sf $(notdir $(if $(filter %/$(SO_NAME),$@),$(SO_FILE),$(BUILD)/$(SO_NAME))) $@

# ---- tests --------------------------------------------------------------------
$(BUILD)/test/%: $(BUILD)/obj/test/unit/%.o $(LIB) $(TEST_GEN_OBJS)
	@mkdir -p $(@D)
	$(SAY) LD $@
	$(Q)$(CC) $(LDFLAGS) -o $@ $< $(TEST_GEN_OBJS) $(LIB) $(LDLIBS) -lcmocka

$(BUILD)/test/%: $(BUILD)/obj/test/tools/%.o $(LIB) $(TEST_GEN_OBJS)
	@mkdir -p $(@D)
	$(SAY) LD $@
	$(Q)$(CC) $(LDFLAGS) -o $@ $< $(TEST_GEN_OBJS) $(LIB) $(LDLIBS)

# the bundle too (test/scripts/bundle.sh unpacks it), but not of a sanitizer build
tests: $(BIN) $(SO_BUILT) $(UNIT_BINS) $(TOOL_BINS) $(if $(filter 1,$(SANITIZE)),,$(BUNDLE))

test: deps data
	@$(MAKE) --no-print-directory tests
	@sh test/run.sh $(BUILD)

# ---- demo ---------------------------------------------------------------------
demo: deps data
	@$(MAKE) --no-print-directory all
	$(BIN) train netdescs/fashion_mlp.pbtxt

demo-cnn: deps data
	@$(MAKE) --no-print-directory all
	$(BIN) train netdescs/fashion_cnn.pbtxt

# the sequence models: LSTM and GRU over image rows, a char LM on Debian's
# fortunes and text sampled from it (docs/training.md, "Sequence models")
demo-seq: deps data
	@$(MAKE) --no-print-directory all
	$(BIN) train netdescs/fashion_lstm_fused.pbtxt
	$(BIN) train netdescs/fashion_gru.pbtxt
	rm -rf $(BUILD)/demo-seq && mkdir -p $(BUILD)/demo-seq
	$(BIN) train netdescs/char_lm.pbtxt --save $(BUILD)/demo-seq/char_lm
	$(BIN) generate netdescs/char_lm.pbtxt --params $(BUILD)/demo-seq/char_lm --prime "The " --length 400 \
	    --temperature 0.8 --seed 1

# ---- data: the small generated data set netdescs/fit_a_line.pbtxt reads -------------
# netdescs/data/*.npy (git-ignored), identical bytes on every build; `make test`
# and `make demo` make it, so the shipped netdescs run with no flags.
.PHONY: data
data: $(BUILD)/gen_data
	@mkdir -p netdescs/data
	$(BUILD)/gen_data netdescs/data

$(BUILD)/gen_data: netdescs/gen_data.c
	@mkdir -p $(@D)
	$(CC) -std=c11 -Wall -Wextra -Werror -O2 -o $@ $<

# ---- docs: docs/ops.md is generated from the registry ----------------------------
docs: $(BIN)
	$(BIN) ops --markdown > docs/ops.md.tmp && mv docs/ops.md.tmp docs/ops.md

# ---- fuzzing (libFuzzer, clang) ------------------------------------------------
# Each target runs FUZZ_SECONDS from three corpora: what it found before
# (build-fuzz/corpus/NAME), the committed seeds (test/fuzz/corpus/NAME, small)
# and the large seeds test/fuzz/gen_seeds.py writes at fuzz time
# (build-fuzz/seeds/NAME: hundreds of slots, deep nesting, long names).
# -max_len is the target's FUZZ_MAX_LEN_NAME (1 MiB for the file formats:
# a seed longer than max_len would be cut).
FUZZ_SECONDS ?= 60
FUZZ_SRCS    := $(wildcard test/fuzz/fuzz_*.c)
FUZZ_BINS    := $(patsubst test/fuzz/%.c,build-fuzz/%,$(FUZZ_SRCS))
FUZZ_FLAGS   := -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -g -O1
FUZZ_MAX_LEN          ?= 1048576
FUZZ_MAX_LEN_fuzz_cli ?= 65536
# what a target links besides lib/*/ and ops/
FUZZ_EXTRA_fuzz_cli   := cmd/cli.c
# extra libFuzzer flags (the CLI parser prints its refusals)
FUZZ_ARGS_fuzz_cli    := -close_fd_mask=3

build-fuzz/%: test/fuzz/%.c $(LIB_SRCS) $(GEN_C) $(wildcard cmd/cli.[ch]) | $(GEN_H)
	@mkdir -p $(@D)
	clang $(filter-out -DPD_WITH_CUDA,$(CPPFLAGS)) -Icmd -std=c11 -Wall -Wextra $(FUZZ_FLAGS) -o $@ $< \
	    $(FUZZ_EXTRA_$*) $(LIB_SRCS) $(GEN_C) $(LDLIBS)

fuzz-seeds:
	$(PYTHON) test/fuzz/gen_seeds.py build-fuzz/seeds

# one target: `make fuzz-run-fuzz_onnx FUZZ_SECONDS=600`
fuzz-run-%: build-fuzz/% fuzz-seeds
	@mkdir -p build-fuzz/corpus/$* build-fuzz/seeds/$*
	@echo "fuzz: $* for $(FUZZ_SECONDS)s, -max_len=$(or $(FUZZ_MAX_LEN_$*),$(FUZZ_MAX_LEN))"
	@build-fuzz/$* -max_total_time=$(FUZZ_SECONDS) -max_len=$(or $(FUZZ_MAX_LEN_$*),$(FUZZ_MAX_LEN)) \
	    -print_final_stats=1 $(FUZZ_ARGS_$*) $(if $(wildcard test/fuzz/$*.dict),-dict=test/fuzz/$*.dict) \
	    -artifact_prefix=build-fuzz/$*- build-fuzz/corpus/$* test/fuzz/corpus/$* build-fuzz/seeds/$* \
	    >build-fuzz/$*.log 2>&1; rc=$$?; tail -n 12 build-fuzz/$*.log; exit $$rc

fuzz: deps $(patsubst build-fuzz/%,fuzz-run-%,$(FUZZ_BINS))

# ---- benchmarks ---------------------------------------------------------------
bench: deps all
	@BENCH_CPPFLAGS='$(CPPFLAGS)' BENCH_LDLIBS='$(LDLIBS)' sh bench/run.sh $(BUILD)

# ---- bundle: the binary with the shared libraries it needs, relocatable ----------
# build/paddle-run-VERSION-linux-x86_64.tar.gz: unpack it anywhere (a GPU server
# with a newer distribution and none of Debian's packages) and run
# paddle-run-VERSION/bin/paddle-run (mk/bundle.sh; README, "Running on a GPU server").
bundle: $(BUNDLE)

$(BUNDLE): $(BIN) $(BUILD)/gen_data mk/bundle.sh $(wildcard netdescs/*.pbtxt)
	@sh mk/deps.sh $(DEPS_BUNDLE)
	$(SAY) BUNDLE $@
	$(Q)sh mk/bundle.sh $(BIN) $(BUILD) $(BUNDLE_NAME)

# ---- install, clean ---------------------------------------------------------------
install: $(BIN) $(SO_LINKS)
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/include $(DESTDIR)$(PREFIX)/lib $(DESTDIR)$(PYTHON_DIR)
	install -m 755 $(BIN) $(DESTDIR)$(PREFIX)/bin/paddle-run
	install -m 644 include/paddle_run.h $(DESTDIR)$(PREFIX)/include/paddle_run.h
	install -m 755 $(SO_FILE) $(DESTDIR)$(PREFIX)/lib/$(notdir $(SO_FILE))
	ln -sf $(notdir $(SO_FILE)) $(DESTDIR)$(PREFIX)/lib/$(SO_NAME)
	ln -sf $(SO_NAME) $(DESTDIR)$(PREFIX)/lib/libpaddle-run.so
	install -m 644 python/paddle_run.py $(DESTDIR)$(PYTHON_DIR)/paddle_run.py

clean:
	rm -rf build build-san build-cpu build-san-cpu build-fuzz build*-nox86

FORMAT_FILES = $(wildcard lib/*/*.[ch] api/*.c include/*.h docs/examples/*.c cmd/*.[ch] ops/*.[ch] test/unit/*.[ch] test/tools/*.c test/fuzz/*.c \
                 netdescs/*.c bench/*.c)

format:
	clang-format -i $(FORMAT_FILES)

-include $(shell find $(BUILD)/obj $(BUILD)/pic -name '*.d' 2>/dev/null)
