#pragma once
/// \file DWSR_HOST_DEVICE marks per-voxel math that the CPU operators and the
/// CUDA kernels share (`__host__ __device__` under nvcc, nothing elsewhere),
/// so the same function computes a voxel on either side.

#if defined(__CUDACC__)
#define DWSR_HOST_DEVICE __host__ __device__
#else
#define DWSR_HOST_DEVICE
#endif
