#pragma once
/// \file DWSR_HOST_DEVICE marks per-voxel math that the CPU operators and the
/// CUDA kernels share (`__host__ __device__` under nvcc, nothing elsewhere),
/// so the same function computes a voxel on either side.

#if defined(__CUDACC__)
#define DWSR_HOST_DEVICE __host__ __device__
#else
#define DWSR_HOST_DEVICE
#endif

/// Unrolls the loop it precedes: loops of constant or small trip counts
/// over arrays that must stay in registers on the device. Nothing in nvcc's
/// host pass (the host never runs device code from a .cu); GCC's unroll in
/// host builds, where host tests run that code.
#if defined(__CUDA_ARCH__)
#define DWSR_UNROLL _Pragma("unroll")
#elif defined(__CUDACC__)
#define DWSR_UNROLL
#else
#define DWSR_UNROLL _Pragma("GCC unroll 16")
#endif
