// The run-time choice of the vector instruction set of cloned kernels
// (whose bits the operator tests compare with the baseline's).

#include <catch2/catch.hpp>

#include "dwsr/core/simd_isa.hpp"

using namespace dwsr;

TEST_CASE("the instruction set in use is the CPU's widest unless DWSR_SIMD caps it; unknown names are refused") {
  CHECK(simd_isa_in_use() <= cpu_simd_isa());
  for (const auto isa : {simd_isa::baseline, simd_isa::avx2, simd_isa::avx512}) CHECK(parse_simd_isa(name(isa)) == isa);
  CHECK_THROWS_WITH(parse_simd_isa("sse4"), "invalid input: DWSR_SIMD is 'sse4'; expected baseline, avx2 or avx512");
}
