#pragma once
/// \file XGBoost's C API, loaded on first use (dlopen) instead of linked.
/// Linked, XGBoost and its OpenMP runtime cost every process of the program
/// about 3 ms at start (their relocations and static constructors), measured
/// on a 2-core EPYC: a third of `dwsr run`'s start, for the learned
/// leaderboard estimators alone. The build names the library
/// (DWSR_XGBOOST_LIBRARY, set by the CMake target dwsr_xgboost); a program
/// that does not call them never loads it.

#include <xgboost/c_api.h>

#include <string>

#include "dwsr/core/loaded_library.hpp"
#include "dwsr/error.hpp"

#ifndef DWSR_XGBOOST_LIBRARY
#define DWSR_XGBOOST_LIBRARY "libxgboost.so.0"
#endif

namespace dwsr::estimators::detail {

/// The C API functions dwsr calls, resolved from the loaded library.
struct xgboost_api {
  decltype(&::XGBGetLastError) get_last_error;
  decltype(&::XGDMatrixCreateFromMat) matrix_create_from_mat;
  decltype(&::XGDMatrixSetFloatInfo) matrix_set_float_info;
  decltype(&::XGDMatrixFree) matrix_free;
  decltype(&::XGBoosterCreate) booster_create;
  decltype(&::XGBoosterSetParam) booster_set_param;
  decltype(&::XGBoosterUpdateOneIter) booster_update_one_iter;
  decltype(&::XGBoosterPredict) booster_predict;
  decltype(&::XGBoosterFree) booster_free;
};

/// The API, the library loaded at the first call. Throws dwsr::error naming
/// the library and the loader's reason when it cannot be loaded (the next
/// call tries again).
inline const xgboost_api& xgboost() {
  static const xgboost_api api = [] {
    std::string why;
    void* lib = dwsr::detail::open_library({DWSR_XGBOOST_LIBRARY}, why);
    if (!lib)
      throw error("XGBoost cannot be loaded (" + why +
                  "); the learned estimators need it: install XGBoost's library (Debian: libxgboost0)");
    xgboost_api a{};
    auto get = [&](auto& f, const char* name) {
      if (!dwsr::detail::resolve(lib, f, name))
        throw error(std::string("XGBoost ") + DWSR_XGBOOST_LIBRARY + " has no " + name + "; expected XGBoost 1.x");
    };
    get(a.get_last_error, "XGBGetLastError");
    get(a.matrix_create_from_mat, "XGDMatrixCreateFromMat");
    get(a.matrix_set_float_info, "XGDMatrixSetFloatInfo");
    get(a.matrix_free, "XGDMatrixFree");
    get(a.booster_create, "XGBoosterCreate");
    get(a.booster_set_param, "XGBoosterSetParam");
    get(a.booster_update_one_iter, "XGBoosterUpdateOneIter");
    get(a.booster_predict, "XGBoosterPredict");
    get(a.booster_free, "XGBoosterFree");
    return a;
  }();
  return api;
}

}  // namespace dwsr::estimators::detail
