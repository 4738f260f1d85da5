#pragma once
/// \file DWSR_HOST_DEVICE marks per-voxel math that the CPU operators and the
/// CUDA kernels share (`__host__ __device__` under nvcc, nothing elsewhere),
/// so the same function computes a voxel on either side.

#if defined(__CUDACC__)
#define DWSR_HOST_DEVICE __host__ __device__
#else
#define DWSR_HOST_DEVICE
#endif

/// Unrolls the loop it precedes in device code (loops over small arrays
/// that must stay in registers); nothing on the host.
#if defined(__CUDA_ARCH__)
#define DWSR_UNROLL _Pragma("unroll")
#else
#define DWSR_UNROLL
#endif
