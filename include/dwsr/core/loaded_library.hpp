#pragma once
/// \file A shared library opened at its first use (dlopen) instead of linked,
/// for libraries that most runs of a program never call and whose loading
/// would cost every start (XGBoost, cuFFT). The library stays
/// loaded for the rest of the process: handles made from it outlive callers.

#include <dlfcn.h>

#include <initializer_list>
#include <string>

namespace dwsr::detail {

/// The first of `names` the loader opens (each searched as dlopen does: a
/// bare name through the run path, LD_LIBRARY_PATH and the system's cache);
/// nullptr otherwise, with the loader's reasons in `why`, "; "-separated.
inline void* open_library(std::initializer_list<const char*> names, std::string& why) {
  why.clear();
  for (const char* name : names) {
    if (void* lib = ::dlopen(name, RTLD_NOW | RTLD_LOCAL)) return lib;
    why += (why.empty() ? "" : "; ") + std::string(::dlerror());
  }
  return nullptr;
}

/// Sets `f` to the function `name` of `lib`; false when it has none.
template <class F>
bool resolve(void* lib, F& f, const char* name) {
  f = reinterpret_cast<F>(::dlsym(lib, name));
  return f != nullptr;
}

}  // namespace dwsr::detail
