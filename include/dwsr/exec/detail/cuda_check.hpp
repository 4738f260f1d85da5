#pragma once
/// \file Turning CUDA runtime and cuFFT status codes into dwsr::device_error,
/// with the call that failed named in the message.

#include <cuda_runtime_api.h>

#include <string>

#include "dwsr/error.hpp"

namespace dwsr::detail {

/// Throws device_error naming `what` unless `status` is cudaSuccess.
inline void cuda_check(cudaError_t status, const char* what) {
  if (status == cudaSuccess) return;
  throw device_error(std::string(what) + " failed: " + cudaGetErrorName(status) + " (" + cudaGetErrorString(status) +
                     ")");
}

}  // namespace dwsr::detail
