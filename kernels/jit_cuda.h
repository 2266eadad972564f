/*
** jit_cuda.h — the start of the prelude of the CUDA kernels compiled at run time by NVRTC
** (gpu.ElementwiseKernel, ReductionKernel and gpu.fuse on cuda; src/backend/cuda/
** cuda_nvrtc.c compiles them). NVRTC has no system headers, so the Makefile's
** $(JIT_CUDA_PRELUDE) rule drops every #include of kernels/dtypes.h ... jit_abi.h and puts
** this file first: the <stdint.h> types and limits and <math.h>'s INFINITY and NAN those
** headers use (the math functions themselves are NVRTC's built-ins). Never compiled by gcc
** or nvcc.
*/
#ifndef GL_KERNELS_JIT_CUDA_H
#define GL_KERNELS_JIT_CUDA_H

typedef signed char int8_t;
typedef unsigned char uint8_t;
typedef short int16_t;
typedef unsigned short uint16_t;
typedef int int32_t;
typedef unsigned int uint32_t;
typedef long long int64_t;
typedef unsigned long long uint64_t;

#define INT8_MIN (-128)
#define INT8_MAX 127
#define UINT8_MAX 255
#define INT16_MIN (-32768)
#define INT16_MAX 32767
#define UINT16_MAX 65535
#define INT32_MIN (-2147483647 - 1)
#define INT32_MAX 2147483647
#define UINT32_MAX 4294967295u
#define INT64_MIN (-9223372036854775807LL - 1)
#define INT64_MAX 9223372036854775807LL
#define UINT64_MAX 18446744073709551615ull
#define INFINITY __int_as_float(0x7f800000)
#define NAN __int_as_float(0x7fffffff)

/* elem_ops.h's integer rows compare unsigned values with 0 or negative constants: harmless, and not the
** user's code */
#pragma nv_diag_suppress 186
#pragma nv_diag_suppress 514

#endif
