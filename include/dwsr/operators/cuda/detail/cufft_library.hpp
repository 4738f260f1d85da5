#pragma once
/// \file cuFFT, loaded at the first plan (dlopen) instead of linked. Linked,
/// libcufft (286 MB in CUDA 13) costs every process of the program about
/// 3.5 ms at start, measured on a 2-core EPYC without a GPU (its relocations
/// and static constructors): a third of a host-only `dwsr run`'s start. The
/// library is looked up by its versioned name (the loader's usual search:
/// the program's run path, LD_LIBRARY_PATH, the system's cache), then at the
/// path the build found (DWSR_CUFFT_LIBRARY, set by dwsr's CMake).

#include <cufft.h>

#include <string>

#include "dwsr/core/loaded_library.hpp"
#include "dwsr/error.hpp"

#ifndef DWSR_CUFFT_LIBRARY
#define DWSR_CUFFT_LIBRARY "libcufft.so"
#endif

namespace dwsr::operators::cuda::detail {

/// The cuFFT functions dwsr calls, resolved from the loaded library.
struct cufft_api {
  decltype(&::cufftCreate) create;
  decltype(&::cufftSetAutoAllocation) set_auto_allocation;
  decltype(&::cufftMakePlanMany64) make_plan_many64;
  decltype(&::cufftSetWorkArea) set_work_area;
  decltype(&::cufftSetStream) set_stream;
  decltype(&::cufftExecR2C) exec_r2c;
  decltype(&::cufftExecC2R) exec_c2r;
  decltype(&::cufftDestroy) destroy;
};

/// The API, cuFFT loaded at the first call. Throws device_error naming what
/// was tried when it cannot be loaded (the next call tries again).
inline const cufft_api& cufft() {
  static const cufft_api api = [] {
    const std::string versioned = "libcufft.so." + std::to_string(CUFFT_VER_MAJOR);
    std::string why;
    void* lib = dwsr::detail::open_library({versioned.c_str(), DWSR_CUFFT_LIBRARY}, why);
    if (!lib)
      throw device_error("cuFFT cannot be loaded (" + why +
                         "); the complex-trace operators on the GPU need the CUDA toolkit's libcufft " +
                         std::to_string(CUFFT_VER_MAJOR) + " on the library path");
    cufft_api a{};
    auto get = [&](auto& f, const char* name) {
      if (!dwsr::detail::resolve(lib, f, name)) throw device_error(std::string("the loaded cuFFT has no ") + name);
    };
    get(a.create, "cufftCreate");
    get(a.set_auto_allocation, "cufftSetAutoAllocation");
    get(a.make_plan_many64, "cufftMakePlanMany64");
    get(a.set_work_area, "cufftSetWorkArea");
    get(a.set_stream, "cufftSetStream");
    get(a.exec_r2c, "cufftExecR2C");
    get(a.exec_c2r, "cufftExecC2R");
    get(a.destroy, "cufftDestroy");
    return a;
  }();
  return api;
}

}  // namespace dwsr::operators::cuda::detail
