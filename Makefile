# gpulua — build: `make` (auto-detects CUDA), `make CUDA=0` (CPU only), `make test`.
# Overridable: LUA_INC LUA_LIBDIR BLAS_INC BLAS_LIBDIR CUDA_HOME NVCC CC.

VERSION := 0.1.0

CC        ?= cc
LUA_INC   ?= /usr/include/lua5.4
LUA_LIBDIR ?= $(firstword $(wildcard /usr/lib/*-linux-gnu) /usr/lib)
BLAS_INC  ?= $(firstword $(wildcard /usr/include/*-linux-gnu/openblas-pthread) /usr/include/openblas)
# OpenBLAS built on OpenMP shares gpulua's OpenMP thread pool; the pthread build brings a
# second pool whose threads fight the first for the cores (a 784-256-10 MLP step ran 6-20x
# slower with it on this loaded 2-core machine), so it is only the fallback.
BLAS_LIBDIR ?= $(firstword $(wildcard /usr/lib/*-linux-gnu/openblas-openmp /usr/lib/*-linux-gnu/openblas-pthread) $(LUA_LIBDIR))

# ---- CUDA: the toolkit under CUDA_HOME, in /usr/local/cuda, or wherever nvcc on PATH lives --
# nvcc on PATH may be a wrapper script (/usr/local/bin/nvcc -> exec /usr/local/cuda-X/bin/nvcc),
# so the toolkit is the first candidate that holds include/cuda_runtime.h, not nvcc's folder.
ifneq ($(CUDA),0)
  CUDA_PATHNVCC := $(shell command -v nvcc 2>/dev/null)
  CUDA_CANDIDATES := $(CUDA_HOME) /usr/local/cuda \
      $(patsubst %/bin/nvcc,%,$(realpath $(CUDA_PATHNVCC))) \
      $(if $(CUDA_PATHNVCC),$(patsubst %/bin/nvcc,%,$(shell sed -n 's|^exec \(.*/bin/nvcc\).*|\1|p' $(CUDA_PATHNVCC) 2>/dev/null)))
  CUDA_FOUND := $(firstword $(foreach d,$(CUDA_CANDIDATES),$(if $(wildcard $(d)/include/cuda_runtime.h),$(if $(wildcard $(d)/bin/nvcc),$(d)))))
  ifneq ($(strip $(CUDA_FOUND)),)
    CUDA := 1
    override CUDA_HOME := $(CUDA_FOUND)
    NVCC ?= $(CUDA_HOME)/bin/nvcc
  else
    CUDA := 0
  endif
endif
# cuDNN and NCCL are used when their headers are found (their libraries are opened at run
# time); NCCL_INC names another folder that holds nccl.h (a Python wheel's, say)
ifeq ($(CUDA),1)
  CUDNN := $(if $(wildcard $(CUDA_HOME)/include/cudnn.h /usr/include/cudnn.h /usr/include/*-linux-gnu/cudnn.h),1,0)
  NCCL_INC ?= $(patsubst %/nccl.h,%,$(firstword $(wildcard $(CUDA_HOME)/include/nccl.h /usr/include/nccl.h /usr/include/*-linux-gnu/nccl.h)))
  NCCL := $(if $(wildcard $(NCCL_INC)/nccl.h),1,0)
else
  CUDNN := 0
  NCCL := 0
endif

BUILD    ?= build/release
OPT      ?= -O3 -march=native
WARN     := -Wall -Wextra -Wshadow -Wdouble-promotion -Wmissing-prototypes
CPPFLAGS := -I$(LUA_INC) -Isrc -DGPULUA_VERSION='"$(VERSION)"' \
            -DGL_BLAS_LIB='"$(BLAS_LIBDIR)/libopenblas.so.0"'
CFLAGS   ?= $(OPT) -g
CFLAGS   += -std=gnu11 -fPIC -fopenmp $(WARN) $(SAN)
LDLIBS   := -lm -ldl -lpthread -lz
NVFLAGS  := -O3 -Xcompiler -fPIC -std=c++17 --expt-relaxed-constexpr \
            -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90 \
            -gencode arch=compute_90,code=compute_90

ifeq ($(CUDA),1)
  CPPFLAGS += -DGL_WITH_CUDA -I$(CUDA_HOME)/include
  ifeq ($(CUDNN),1)
    CPPFLAGS += -DGL_WITH_CUDNN
  endif
  ifeq ($(NCCL),1)
    NCCL_IFLAG := $(if $(filter $(CUDA_HOME)/include,$(NCCL_INC)),,-I$(NCCL_INC))
    CPPFLAGS += -DGL_WITH_NCCL $(NCCL_IFLAG)
  endif
  # libstdc++ (needed by the CUDA runtime and the kernels' host code) is linked statically:
  # loading the shared one cost 0.3 ms of every start, a third of lua5.4's whole start-up
  CUDA_LIBS := -L$(CUDA_HOME)/lib64 -lcudart_static -lrt -Wl,-Bstatic -lstdc++ -Wl,-Bdynamic
endif

# ---- sources -------------------------------------------------------------------------
LIB_C   := $(wildcard src/core/*.c src/backend/*.c src/backend/cpu/*.c src/ops/*.c src/dist/*.c src/lua/*.c)
ifeq ($(CUDA),1)
  LIB_C  += $(filter-out $(if $(filter 1,$(NCCL)),,src/backend/cuda/cuda_nccl.c),$(wildcard src/backend/cuda/*.c))
  LIB_CU := $(wildcard kernels/*.cu)
endif
LUA_SRC := $(sort $(wildcard lua/gpu/*.lua lua/gpu/*/*.lua))
GEN_C   := $(BUILD)/gen/luasrc.c

# The kernels do not depend on the C flags (OPT, SAN): the sanitizer build takes the
# release build's (KBUILD), which saves it the two minutes nvcc needs here.
KBUILD  ?= $(BUILD)
LIB_O   := $(LIB_C:%.c=$(BUILD)/%.o) $(LIB_CU:%.cu=$(KBUILD)/%.o) $(GEN_C:.c=.o)
HOST_O  := $(BUILD)/src/host/gpulua.o

BIN     ?= gpulua
SO      ?= gpu.so
LIB     ?= libgpulua.a

.PHONY: all clean deps run test test-asan test-gpu test-kemu bench bench-gpu check-deps info
all: info $(BIN) $(SO) $(LIB)

info:
	@printf 'gpulua %s: CUDA %s  cuDNN %s  NCCL %s  OpenMP ✓  BLAS %s (loaded on first use)\n' \
	  '$(VERSION)' '$(if $(filter 1,$(CUDA)),✓ ($(CUDA_HOME)),✗)' \
	  '$(if $(filter 1,$(CUDNN)),✓,✗)' '$(if $(filter 1,$(NCCL)),✓,✗)' '$(BLAS_LIBDIR)'

# Objects depend on the flags they were built with (the BLAS path is one of them), so
# switching CUDA, BLAS_LIBDIR, OPT or SAN rebuilds what they change.
FLAGS_FILE  := $(BUILD)/.flags
BUILD_FLAGS := $(CC) $(CPPFLAGS) $(CFLAGS) | $(CUDA_LIBS)
KFLAGS_FILE := $(KBUILD)/.kflags
# the kernels include neither the version nor NCCL: those flags do not rebuild them
KCPPFLAGS := $(filter-out -DGPULUA_VERSION% -DGL_WITH_NCCL $(NCCL_IFLAG),$(CPPFLAGS))
KBUILD_FLAGS := $(NVCC) $(KCPPFLAGS) $(NVFLAGS)
ifneq ($(MAKECMDGOALS),clean)
ifneq ($(file < $(FLAGS_FILE)),$(BUILD_FLAGS))
  $(shell mkdir -p $(BUILD))
  $(file > $(FLAGS_FILE),$(BUILD_FLAGS))
endif
ifneq ($(file < $(KFLAGS_FILE)),$(KBUILD_FLAGS))
  $(shell mkdir -p $(KBUILD))
  $(file > $(KFLAGS_FILE),$(KBUILD_FLAGS))
endif
endif

$(BUILD)/%.o: %.c $(FLAGS_FILE)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -MMD -MP -c $< -o $@

# Box-Muller's sqrtf never sees a negative number: without errno its loop vectorises
$(BUILD)/src/backend/cpu/cpu_random.o: CFLAGS += -fno-math-errno
# The optimizer steps' sqrt: with errno each element is a scalar sqrt plus a branch to the
# library's sqrtf, and the loop stays scalar (fused Adam took 3x the array ops' time);
# sqrt and division are correctly rounded either way, so the results do not change
$(BUILD)/src/backend/cpu/cpu_fused.o: CFLAGS += -fno-math-errno
# The elementwise rows: float32 erfinv's sqrt (kernels/vmath.h, never of a negative number)
# kept the whole row scalar with errno
$(BUILD)/src/backend/cpu/cpu_elem.o: CFLAGS += -fno-math-errno
# The complex elementwise ops round each product as NumPy does: no contraction of a * b - c * d
# into an fma (which turns a complex square's inf - inf = NaN into -inf), on the CPU (their
# rows only: the real ones keep the fma, gelu ran 1.4x slower without) and in the CUDA
# kernels, as the run-time compiled kernels (src/ops/jit.c, jit_cuda.c)
$(BUILD)/src/backend/cpu/cpu_elem_complex.o: CFLAGS += -ffp-contract=off
$(KBUILD)/kernels/unary.o $(KBUILD)/kernels/binary.o: NVFLAGS += --fmad=false

$(KBUILD)/%.o: %.cu $(KFLAGS_FILE)
	@mkdir -p $(dir $@)
	$(NVCC) $(KCPPFLAGS) $(NVFLAGS) -MMD -MP -c $< -o $@

# The header the run-time compiled kernels start with (src/ops/jit.c): the element math
# of kernels/ and jit_abi.h as one C string (their own includes of each other dropped, as
# they come in order), since an installed gpulua has no source tree to include.
JIT_PRELUDE := $(BUILD)/gen/jit_prelude.inc
JIT_HEADERS := kernels/dtypes.h kernels/half.h kernels/convert.h kernels/vmath.h kernels/elem_ops.h kernels/complex.h \
               kernels/special.h kernels/elem.h \
               kernels/jit_abi.h kernels/jit_ops.h
$(JIT_PRELUDE): $(JIT_HEADERS)
	@mkdir -p $(dir $@)
	cat $^ | sed -e '/^#include "/d' -e 's/\\/\\\\/g; s/"/\\"/g; s/^/"/; s/$$/\\n"/' > $@
$(BUILD)/src/ops/jit.o: $(JIT_PRELUDE)
$(BUILD)/src/ops/jit.o: CPPFLAGS += -I$(BUILD)/gen
# The CUDA kernels' prelude (src/ops/jit_cuda.c, compiled by NVRTC, which has no system
# headers): kernels/jit_cuda.h (the <stdint.h> types NVRTC lacks), then the same headers
# with every #include dropped.
JIT_CUDA_PRELUDE := $(BUILD)/gen/jit_cuda_prelude.inc
JIT_CUDA_HEADERS := kernels/jit_cuda.h $(JIT_HEADERS)
$(JIT_CUDA_PRELUDE): $(JIT_CUDA_HEADERS)
	@mkdir -p $(dir $@)
	cat $^ | sed -e '/^#include [<"]/d' -e 's/\\/\\\\/g; s/"/\\"/g; s/^/"/; s/$$/\\n"/' > $@
$(BUILD)/src/ops/jit_cuda.o: $(JIT_CUDA_PRELUDE)
$(BUILD)/src/ops/jit_cuda.o: CPPFLAGS += -I$(BUILD)/gen

# lua/gpu/*.lua and lua/gpu/*/*.lua compiled into the module (package.preload) by a small C generator
$(BUILD)/tools/embed: tools/embed.c
	@mkdir -p $(dir $@)
	$(CC) -O2 -o $@ $<

# doc/API.md travels too, as the Lua part gpu._apidoc (a long string) that gpu.help reads
API_LUA := $(BUILD)/gen/lua/gpu/_apidoc.lua
$(API_LUA): doc/API.md
	@mkdir -p $(dir $@)
	@if grep -q ']=====]' $<; then echo "$<: contains ]=====], which ends the long string" >&2; exit 1; fi
	{ echo 'return [=====['; cat $<; echo ']=====]'; } > $@

$(GEN_C): $(BUILD)/tools/embed $(LUA_SRC) $(API_LUA)
	@mkdir -p $(dir $@)
	$(BUILD)/tools/embed $@ $(LUA_SRC) $(API_LUA)

# tools/pty: runs a command on a pseudo-terminal (spec/repl_spec.lua types into the REPL)
PTY := build/tools/pty
$(PTY): tools/pty.c
	@mkdir -p $(dir $@)
	$(CC) -O2 -Wall -Wextra -o $@ $< -lutil

$(GEN_C:.c=.o): $(GEN_C)
	$(CC) $(CPPFLAGS) $(CFLAGS) -c $< -o $@

$(LIB): $(LIB_O)
	@rm -f $@
	ar rcs $@ $^

$(BIN): $(HOST_O) $(LIB) Makefile
	$(CC) $(CFLAGS) -Wl,-E -o $@ $(HOST_O) $(LIB) $(LUA_LIBDIR)/liblua5.4.a -lreadline $(CUDA_LIBS) $(LDLIBS)

# gpu.so for stock lua5.4: never links liblua (the host provides the API). -z nodelete:
# lua_close dlcloses C modules, and unmapping libgomp under its idle worker threads
# (or the CUDA runtime under its own) crashes the process at exit.
$(SO): $(LIB_O) Makefile
	$(CC) $(CFLAGS) -shared -Wl,-z,nodelete -o $@ $(LIB_O) $(CUDA_LIBS) $(LDLIBS)

-include $(shell find build -name '*.d' 2>/dev/null)

# ---- dependencies (Debian/Ubuntu) -------------------------------------------------------
# DEPS are required; OPT_DEPS only add columns to `make bench` (NumPy), so failing to
# install them is a warning.
DEPS     := lua5.4 liblua5.4-dev lua-busted libopenblas-dev libopenblas0-openmp libreadline-dev zlib1g-dev \
            dataset-fashion-mnist clang libclang-rt-dev gnuplot-nox libpng-dev luarocks libopenmpi-dev openmpi-bin \
            libdnnl-dev libfftw3-dev fortunes
OPT_DEPS := python3-numpy python3-numexpr
deps:
	@missing=$$(for p in $(DEPS); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done); \
	optional=$$(for p in $(OPT_DEPS); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done); \
	SUDO=$$( [ $$(id -u) -eq 0 ] || echo sudo ); \
	if [ -n "$$missing$$optional" ]; then $$SUDO apt-get update -qq || exit 1; fi; \
	if [ -n "$$missing" ]; then \
	  echo "deps: installing" $$missing; \
	  $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing || exit 1; \
	fi; \
	if [ -n "$$optional" ]; then \
	  echo "deps: installing (optional)" $$optional; \
	  $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$optional || echo "deps: warning: could not install $$optional (bench skips NumPy)"; \
	fi; \
	[ -n "$$missing$$optional" ] || echo "deps: all present"

# ---- running ---------------------------------------------------------------------------
# deps first, then the build (a plain `run: deps all` would race under -j)
run: deps
	@$(MAKE) --no-print-directory all
	./$(BIN) examples/quickstart.lua

test: all $(PTY)
	@sh tools/run-tests.sh ./$(BIN)

test-gpu: all $(PTY)
	@GPULUA_TEST_DEVICES=cuda sh tools/run-tests.sh ./$(BIN)

# spec/linalg_parity_spec.lua with the cpu on both sides (it needs a GPU otherwise): the
# harness loads, calls every gpu.linalg function and routine as the API has them, compares;
# the last line is "N passed, N failed" (CI's suite format)
.PHONY: test-parity-self
test-parity-self: all
	@GPULUA_PARITY_SELFTEST=1 ./$(BIN) $$(command -v busted || echo /usr/bin/busted) -o TAP spec/linalg_parity_spec.lua | \
	  awk '{ print } /^ok / { p++ } /^not ok / { f++ } END { print p + 0 " passed, " f + 0 " failed"; exit (f > 0 || p == 0) }'

# AddressSanitizer + UBSan (any UB is fatal): a separate build tree and binary. Leak
# checking stays on (busted ends with os.exit(code, true), which closes the state);
# tools/lsan.supp is where a leak that is not ours gets named (none so far).
# protect_shadow_gap=0 lets CUDA initialise under ASan. intercept_tls_get_addr=0: gcc 12's
# runtime takes a dynamic TLS block whose address is 16 past a page boundary for glibc
# 2.19's layout and reads a bogus range before it ("DTLS 7 at 0x12ac-0x24000023ae"); where
# the heap lays a block there (it depends on the build), LeakSanitizer's tracer dies with
# signal 11 at exit. Without the interception those blocks are not scanned (fixed in the
# runtime after gcc 13).
ASAN_FLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
ASAN_BUILD = $(MAKE) BUILD=build/asan KBUILD=$(KBUILD) OPT=-O1 SAN='$(ASAN_FLAGS)' BIN=gpulua-asan \
  SO=build/asan/gpu.so LIB=build/asan/libgpulua.a CUDA=$(CUDA) build/asan/libgpulua.a gpulua-asan
ASAN_ENV = ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:protect_shadow_gap=0:intercept_tls_get_addr=0 \
  LSAN_OPTIONS=suppressions=$(CURDIR)/tools/lsan.supp:print_suppressions=0 \
  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
test-asan: $(PTY)
	$(ASAN_BUILD)
	@$(ASAN_ENV) GPULUA_ASAN=1 sh tools/run-tests.sh ./gpulua-asan

# kemu: kernels/*.cu run on the CPU by an emulator (tools/kemu, see doc/HACKING.md), under
# ASan + UBSan; KEMU_SAN=tsan for ThreadSanitizer, none for neither. Host g++ only.
test-kemu:
	@$(MAKE) --no-print-directory -f tools/kemu/kemu.mk KEMU=$(BUILD)/kemu KEMU_SAN=$(or $(KEMU_SAN),asan) kemu-run
	@KEMU_QUICK=1 $(MAKE) --no-print-directory -f tools/kemu/kemu.mk KEMU=$(BUILD)/kemu KEMU_SAN=$(or $(KEMU_SAN),asan) \
	  KEMU_SMALL=1 kemu-run

# Every group on the cpu beside Debian's NumPy and the newest NumPy, SciPy, PyTorch from PyPI
# (bench/venv.sh makes .venv-bench on first use, a few GB with PyTorch; BENCH_VENV=none
# skips it), and FFTW's own plans (bench/fftw_direct.c) as the limit of gpu.fft.
bench: all
	@sh bench/run.sh ./$(BIN)

# On a GPU: every group on cuda beside CuPy and PyTorch (bench/RESULTS-gpu.md), then the
# GPU target figures (bandwidth of add, sum and random fills; the 1-element add's latency).
bench-gpu: all
	@./$(BIN) -e 'local ok, why = gpu.is_available() if not ok then io.stderr:write("bench-gpu: no GPU: ", tostring(why), "\n") os.exit(1) end'
	@GPULUA_BENCH_DEVICE=cuda BENCH_OUT=$${BENCH_OUT:-bench/RESULTS-gpu.md} sh bench/run.sh ./$(BIN)
	@./$(BIN) bench/gpu_targets.lua > $(BUILD)/gpu_targets.txt
	@python3 bench/gpu_targets.py $(BUILD)/gpu_targets.txt

# ---- install -------------------------------------------------------------------------------
# `make install` / `make uninstall`, PREFIX (default /usr/local) and DESTDIR as usual, into
# the places a Lua 5.4 user looks: bin/gpulua, lib/lua/5.4/gpu.so (stock lua5.4 finds it on
# its default cpath), include/gpulua.h + lib/libgpulua.a + lib/pkgconfig/gpulua.pc (to embed),
# share/man/man1/gpulua.1, share/doc/gpulua/. gpu.so carries its Lua sources (gen/luasrc.c),
# so nothing goes to share/lua. `make rock` / `make install-rock` are what the rockspec runs.
PREFIX     ?= /usr/local
BINDIR     ?= $(PREFIX)/bin
LIBDIR     ?= $(PREFIX)/lib
INCDIR     ?= $(PREFIX)/include
LUA_CMODDIR ?= $(LIBDIR)/lua/5.4
PCDIR      ?= $(LIBDIR)/pkgconfig
MANDIR     ?= $(PREFIX)/share/man
DOCDIR     ?= $(PREFIX)/share/doc/gpulua
INSTALL    ?= install
PC         := $(BUILD)/gpulua.pc
DOCS       := $(filter-out doc/UNVERIFIED.md,$(wildcard doc/*.md))

# gpulua.pc, made at each install (PREFIX and LIBDIR may differ from the last one); Libs is
# what a program linking libgpulua.a needs besides Lua: the link line of $(BIN), less readline
PC_LIBS := $(strip -fopenmp $(CUDA_LIBS) $(LDLIBS))
define make_pc
sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$(LIBDIR)|' -e 's|@INCDIR@|$(INCDIR)|' \
    -e 's|@VERSION@|$(VERSION)|' -e 's|@LIBS@|$(PC_LIBS)|' gpulua.pc.in > $(PC)
endef

.PHONY: install uninstall rock install-rock install-check
install: $(BIN) $(SO) $(LIB)
	$(make_pc)
	$(INSTALL) -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(LUA_CMODDIR) $(DESTDIR)$(INCDIR) $(DESTDIR)$(PCDIR) \
	  $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(DOCDIR)/doc
	$(INSTALL) -m 755 $(BIN) $(DESTDIR)$(BINDIR)/gpulua
	$(INSTALL) -m 755 $(SO) $(DESTDIR)$(LUA_CMODDIR)/gpu.so
	$(INSTALL) -m 644 src/gpulua.h $(DESTDIR)$(INCDIR)/gpulua.h
	$(INSTALL) -m 644 $(LIB) $(DESTDIR)$(LIBDIR)/libgpulua.a
	$(INSTALL) -m 644 $(PC) $(DESTDIR)$(PCDIR)/gpulua.pc
	$(INSTALL) -m 644 doc/gpulua.1 $(DESTDIR)$(MANDIR)/man1/gpulua.1
	$(INSTALL) -m 644 README.md $(DESTDIR)$(DOCDIR)/README.md
	$(INSTALL) -m 644 $(DOCS) $(DESTDIR)$(DOCDIR)/doc/

uninstall:
	rm -f $(DESTDIR)$(BINDIR)/gpulua $(DESTDIR)$(LUA_CMODDIR)/gpu.so $(DESTDIR)$(INCDIR)/gpulua.h \
	  $(DESTDIR)$(LIBDIR)/libgpulua.a $(DESTDIR)$(PCDIR)/gpulua.pc $(DESTDIR)$(MANDIR)/man1/gpulua.1 \
	  $(DESTDIR)$(DOCDIR)/README.md $(addprefix $(DESTDIR)$(DOCDIR)/,$(DOCS))
	-rmdir $(DESTDIR)$(DOCDIR)/doc $(DESTDIR)$(DOCDIR) 2>/dev/null

# luarocks (gpulua-scm-1.rockspec): builds gpu.so only, in its own tree (ROCK_BUILD), and
# copies it to the rock's lib folder (INST_LIBDIR, given by luarocks), from where luarocks
# deploys it to <tree>/lib/lua/5.4. tools/install-check.sh points ROCK_BUILD at its own tree.
ROCK_BUILD ?= build/rock
rock:
	@$(MAKE) --no-print-directory BUILD=$(ROCK_BUILD) SO=$(ROCK_BUILD)/gpu.so $(ROCK_BUILD)/gpu.so
install-rock: rock
	$(INSTALL) -d $(INST_LIBDIR)
	$(INSTALL) -m 755 $(ROCK_BUILD)/gpu.so $(INST_LIBDIR)/gpu.so

# installs into a temporary prefix and a temporary luarocks tree, and uses them from
# elsewhere (tools/install-check.sh); a CPU-only build in build/install
install-check:
	@sh tools/install-check.sh

# ---- fuzzing: libFuzzer (clang) over each file parser in src/core -------------------------
# `make fuzz` runs each target FUZZ_SECONDS (default 60) and stops at the first find;
# `make fuzz-ci` (CI) runs each FUZZ_CI_SECONDS (default 20), one test per target, ending
# "N passed, N failed". tools/fuzz.sh runs them (corpora, seeds, where finds go).
FUZZ_SECONDS    ?= 60
FUZZ_CI_SECONDS ?= 20
FUZZ_CC         ?= clang
FUZZ_KINDS      := npy npz safetensors text idx png
FUZZ_CORE       := $(addprefix src/core/,fileio.c npy.c npz.c safetensors.c text.c idx.c png.c status.c dtype.c array.c)
.PHONY: fuzz fuzz-ci
build/fuzz/fuzz_%: tools/fuzz_%.c $(FUZZ_CORE) $(wildcard src/core/*.h)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) -g -O1 -std=gnu11 -Isrc -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
	  -o $@ $< $(FUZZ_CORE) -lz -lm -ldl
fuzz: $(addprefix build/fuzz/fuzz_,$(FUZZ_KINDS))
	@sh tools/fuzz.sh $(FUZZ_SECONDS) $(FUZZ_KINDS)
fuzz-ci: $(addprefix build/fuzz/fuzz_,$(FUZZ_KINDS))
	@sh tools/fuzz.sh -k $(FUZZ_CI_SECONDS) $(FUZZ_KINDS)

# ---- the API fuzzer: tools/apifuzz.lua over many seeds -------------------------------------
# `make fuzz-api` runs FUZZ_API_SEEDS seeds (default 20, from FUZZ_API_FIRST) of
# FUZZ_API_CALLS calls each under ./gpulua, `make fuzz-api-asan` under the ASan + UBSan
# build; tools/apifuzz.sh caps memory, times each seed out and names the call that failed.
FUZZ_API_FIRST ?= 1
FUZZ_API_SEEDS ?= 20
FUZZ_API_CALLS ?= 20000
.PHONY: fuzz-api fuzz-api-asan
fuzz-api: all
	@sh tools/apifuzz.sh ./$(BIN) $(FUZZ_API_FIRST) $(FUZZ_API_SEEDS) $(FUZZ_API_CALLS)
fuzz-api-asan:
	$(ASAN_BUILD)
	@$(ASAN_ENV) sh tools/apifuzz.sh ./gpulua-asan $(FUZZ_API_FIRST) $(FUZZ_API_SEEDS) $(FUZZ_API_CALLS)

clean:
	rm -rf build $(BIN) gpulua-asan $(SO) $(LIB)

# doc/UNVERIFIED.md, the ledger of GPU code not run on a GPU as it is, made from the sources
# and bench/gpu-ran.tsv (spec/unverified_spec.lua fails when it is stale)
.PHONY: unverified docs
unverified: $(BIN)
	./$(BIN) tools/unverified.lua > doc/UNVERIFIED.md.part && mv doc/UNVERIFIED.md.part doc/UNVERIFIED.md

# what the docs state of C, made from C: the op, alias, dtype and promotion tables of
# doc/API.md and README.md (spec/api_tables_spec.lua), and doc/UNVERIFIED.md
docs: $(BIN) unverified
	./$(BIN) tools/gen_api_tables.lua

# Lua 5.4.4's own test suite (tools/lua-testes.sh: fetched, never kept: LUA_TESTES_SRC names
# a local Lua repository or testes folder, else it is cloned) file by file and whole under
# ./gpulua; the last line is "N passed, N failed"
.PHONY: test-lua
test-lua: $(BIN)
	@sh tools/lua-testes.sh --host ./$(BIN) $(LUA_TESTES_SRC)
