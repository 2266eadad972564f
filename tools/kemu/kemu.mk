# kemu.mk — builds and runs kemu, the CPU emulator that runs kernels/*.cu for tests
# (tools/kemu/kemu.h says what it is). Called by the Makefile's `make test-kemu`:
#   make -f tools/kemu/kemu.mk KEMU=build/kemu [KEMU_SAN=asan|tsan|none]
# Host g++ only; no CUDA toolkit or GPU needed. Never linked into gpulua or gpu.so.

KEMU     ?= build/kemu
KEMU_SAN ?= asan
KEMU_CXX ?= g++
ifeq ($(KEMU_SAN),asan)
  KEMU_SANFLAGS := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
else ifeq ($(KEMU_SAN),tsan)
  KEMU_SANFLAGS := -fsanitize=thread
else
  KEMU_SANFLAGS :=
endif
# KEMU_SMALL=1: grids capped at 3 blocks and the vector paths' launches cut every 4096
# elements, so every grid-stride loop loops and the chunking runs on small arrays.
KEMU_SMALL ?= 0
ifeq ($(KEMU_SMALL),1)
  KEMU_OUT := $(KEMU)/$(KEMU_SAN)-small
  KEMU_SANFLAGS += -DGL_KMAXBLOCKS=3 -DGL_KCHUNK=4096
else
  KEMU_OUT := $(KEMU)/$(KEMU_SAN)
endif
# The kernels take their device branches (kernels/*.h under __CUDA_ARCH__: __umulhi,
# __float_as_uint, ...; kemu.h supplies them); the test's references take the host ones.
KEMU_ARCH := -D__CUDA_ARCH__=900
KEMU_CXXFLAGS := -std=c++17 -O1 -g -Wall -Wno-comment -Wno-unknown-pragmas $(KEMU_SANFLAGS)
KEMU_KERNELS := $(wildcard kernels/*.cu)
KEMU_KOBJ := $(KEMU_KERNELS:kernels/%.cu=$(KEMU_OUT)/k_%.o)
KEMU_HDRS := $(wildcard kernels/*.h kernels/*.cuh tools/kemu/*.h) $(shell find tools/kemu/include -type f) tools/kemu/kemu.mk

.PHONY: kemu-run
kemu-run: $(KEMU_OUT)/kemu_test
	@$(KEMU_OUT)/kemu_test

$(KEMU_OUT)/%.cpp: kernels/%.cu tools/kemu/rewrite.py
	@mkdir -p $(dir $@)
	python3 tools/kemu/rewrite.py $< $@

$(KEMU_OUT)/selftest.cpp: tools/kemu/selftest.cu tools/kemu/rewrite.py
	@mkdir -p $(dir $@)
	python3 tools/kemu/rewrite.py $< $@

$(KEMU_OUT)/k_%.o: $(KEMU_OUT)/%.cpp $(KEMU_HDRS)
	$(KEMU_CXX) $(KEMU_CXXFLAGS) $(KEMU_ARCH) -Wno-unused-but-set-variable -Wno-unused-function -Itools/kemu/include -Ikernels -include tools/kemu/kemu.h -c $< -o $@

$(KEMU_OUT)/kemu.o: tools/kemu/kemu.cpp tools/kemu/kemu.h
	@mkdir -p $(dir $@)
	$(KEMU_CXX) $(KEMU_CXXFLAGS) -c $< -o $@

$(KEMU_OUT)/test_kemu.o: tools/kemu/test_kemu.cpp $(KEMU_HDRS)
	@mkdir -p $(dir $@)
	$(KEMU_CXX) $(KEMU_CXXFLAGS) -Wno-unused-function -Itools/kemu/include -Ikernels -include tools/kemu/kemu.h -c $< -o $@

$(KEMU_OUT)/kemu_test: $(KEMU_OUT)/test_kemu.o $(KEMU_OUT)/kemu.o $(KEMU_KOBJ) $(KEMU_OUT)/k_selftest.o
	$(KEMU_CXX) $(KEMU_SANFLAGS) -o $@ $^ -lpthread -lm

.PRECIOUS: $(KEMU_OUT)/%.cpp
