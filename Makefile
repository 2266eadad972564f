# gpulua — build: `make` (auto-detects CUDA), `make CUDA=0` (CPU only), `make test`.
# Overridable: LUA_INC LUA_LIBDIR BLAS_INC BLAS_LIBDIR CUDA_HOME NVCC CC.

VERSION := 0.1.0

CC        ?= cc
LUA_INC   ?= /usr/include/lua5.4
LUA_LIBDIR ?= $(firstword $(wildcard /usr/lib/*-linux-gnu) /usr/lib)
BLAS_INC  ?= $(firstword $(wildcard /usr/include/*-linux-gnu/openblas-pthread) /usr/include/openblas)
BLAS_LIBDIR ?= $(firstword $(wildcard /usr/lib/*-linux-gnu/openblas-pthread) $(LUA_LIBDIR))

# ---- CUDA: nvcc on PATH, or under CUDA_HOME, or in /usr/local/cuda --------------------
ifneq ($(CUDA),0)
  NVCC ?= $(or $(shell command -v nvcc 2>/dev/null),$(wildcard $(CUDA_HOME)/bin/nvcc),$(wildcard /usr/local/cuda/bin/nvcc))
  ifneq ($(strip $(NVCC)),)
    CUDA := 1
    CUDA_HOME ?= $(patsubst %/bin/nvcc,%,$(realpath $(NVCC)))
    CUDA_HOME := $(patsubst %/bin/nvcc,%,$(realpath $(NVCC)))
  else
    CUDA := 0
  endif
endif
ifeq ($(CUDA),1)
  CUDNN := $(if $(wildcard $(CUDA_HOME)/include/cudnn.h /usr/include/cudnn.h /usr/include/*-linux-gnu/cudnn.h),1,0)
else
  CUDNN := 0
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
  CUDA_LIBS := -L$(CUDA_HOME)/lib64 -lcudart_static -lrt -lstdc++
endif

# ---- sources -------------------------------------------------------------------------
LIB_C   := $(wildcard src/core/*.c src/backend/*.c src/backend/cpu/*.c src/ops/*.c src/lua/*.c)
ifeq ($(CUDA),1)
  LIB_C  += $(wildcard src/backend/cuda/*.c)
  LIB_CU := $(wildcard kernels/*.cu)
endif
LUA_SRC := $(sort $(wildcard lua/gpu/*.lua))
GEN_C   := $(BUILD)/gen/luasrc.c

LIB_O   := $(LIB_C:%.c=$(BUILD)/%.o) $(LIB_CU:%.cu=$(BUILD)/%.o) $(GEN_C:.c=.o)
HOST_O  := $(BUILD)/src/host/gpulua.o

BIN     ?= gpulua
SO      ?= gpu.so
LIB     ?= libgpulua.a

.PHONY: all clean deps run test test-asan test-gpu bench bench-gpu check-deps info
all: info $(BIN) $(SO) $(LIB)

info:
	@printf 'gpulua %s: CUDA %s  cuDNN %s  OpenMP ✓  BLAS %s (loaded on first use)\n' \
	  '$(VERSION)' '$(if $(filter 1,$(CUDA)),✓ ($(CUDA_HOME)),✗)' \
	  '$(if $(filter 1,$(CUDNN)),✓,✗)' '$(BLAS_LIBDIR)'

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -MMD -MP -c $< -o $@

$(BUILD)/%.o: %.cu
	@mkdir -p $(dir $@)
	$(NVCC) $(filter-out -DGPULUA_VERSION%,$(CPPFLAGS)) $(NVFLAGS) -c $< -o $@

# lua/gpu/*.lua compiled into the module (package.preload) by a small C generator
$(BUILD)/tools/embed: tools/embed.c
	@mkdir -p $(dir $@)
	$(CC) -O2 -o $@ $<

$(GEN_C): $(BUILD)/tools/embed $(LUA_SRC)
	@mkdir -p $(dir $@)
	$(BUILD)/tools/embed $@ $(LUA_SRC)

$(GEN_C:.c=.o): $(GEN_C)
	$(CC) $(CPPFLAGS) $(CFLAGS) -c $< -o $@

$(LIB): $(LIB_O)
	@rm -f $@
	ar rcs $@ $^

$(BIN): $(HOST_O) $(LIB)
	$(CC) $(CFLAGS) -Wl,-E -o $@ $(HOST_O) $(LIB) $(LUA_LIBDIR)/liblua5.4.a -lreadline $(CUDA_LIBS) $(LDLIBS)

# gpu.so for stock lua5.4: never links liblua (the host provides the API)
$(SO): $(LIB_O)
	$(CC) $(CFLAGS) -shared -o $@ $^ $(CUDA_LIBS) $(LDLIBS)

-include $(shell find build -name '*.d' 2>/dev/null)

# ---- dependencies (Debian/Ubuntu) -------------------------------------------------------
DEPS := lua5.4 liblua5.4-dev lua-busted libopenblas-dev libreadline-dev zlib1g-dev
deps:
	@missing=$$(for p in $(DEPS); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  SUDO=$$( [ $$(id -u) -eq 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing; \
	else echo "deps: all present"; fi

# ---- running ---------------------------------------------------------------------------
run: deps all
	./$(BIN) examples/quickstart.lua

test: all
	@sh tools/run-tests.sh ./$(BIN)

test-gpu: all
	@GPULUA_TEST_DEVICES=cuda sh tools/run-tests.sh ./$(BIN)

# AddressSanitizer + UBSan: a separate build tree and binary
ASAN_FLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
test-asan:
	$(MAKE) BUILD=build/asan OPT=-O1 SAN='$(ASAN_FLAGS)' BIN=gpulua-asan SO=build/asan/gpu.so \
	  LIB=build/asan/libgpulua.a CUDA=$(CUDA) build/asan/libgpulua.a gpulua-asan
	@ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
	  GPULUA_ASAN=1 sh tools/run-tests.sh ./gpulua-asan

bench: all
	@sh bench/run.sh ./$(BIN)

bench-gpu: all
	@GPULUA_BENCH_DEVICE=cuda sh bench/run.sh ./$(BIN)

clean:
	rm -rf build $(BIN) gpulua-asan $(SO) $(LIB)
