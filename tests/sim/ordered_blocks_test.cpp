#include <catch2/catch.hpp>

#include <set>

#include "dwsr/core/random.hpp"
#include "dwsr/sim/detail/flat_id_map.hpp"
#include "dwsr/sim/detail/ordered_blocks.hpp"

using namespace dwsr::sim;
using namespace dwsr::sim::detail;

TEST_CASE("ordered_blocks behaves as a std::set of (size, address) under random operations") {
  for (std::uint64_t seed : {1u, 2u}) {
    dwsr::splitmix64 rng{seed};
    ordered_blocks blocks;
    std::set<std::pair<block_key, std::uint32_t>> model;
    for (std::uint32_t step = 0; step < 40000; ++step) {
      // Sizes spread over many classes, with many ties (equal sizes, different addresses).
      const block_key k{(rng.below(8) == 0 ? 512 : 1ull << rng.below(40)) + rng.below(4) * 512, rng.below(1 << 20)};
      const auto op = rng.below(3);
      if (op == 0) {
        if (model.lower_bound({k, 0}) == model.end() || model.lower_bound({k, 0})->first != k) {
          blocks.insert(k, step);
          model.insert({k, step});
        }
      } else if (op == 1 && !model.empty()) {
        const auto victim = model.lower_bound({k, 0}) == model.end() ? *model.begin() : *model.lower_bound({k, 0});
        REQUIRE(blocks.erase(victim.first));
        model.erase(victim);
      } else {
        const auto c = blocks.lower_bound(k);
        const auto it = model.lower_bound({k, 0});
        REQUIRE(blocks.valid(c) == (it != model.end()));
        if (it != model.end()) {
          CHECK(blocks.key(c) == it->first);
          CHECK(blocks.value(c) == it->second);
          const auto n = blocks.next(c);
          const auto in = std::next(it);
          REQUIRE(blocks.valid(n) == (in != model.end()));
          if (in != model.end()) CHECK(blocks.key(n) == in->first);
        }
      }
      REQUIRE(blocks.size() == model.size());
      if (!model.empty()) REQUIRE(blocks.largest() == model.rbegin()->first);
    }
    std::vector<std::uint32_t> expected;
    for (const auto& [k, v] : model) expected.push_back(v);
    CHECK(blocks.values() == expected);
    CHECK_FALSE(blocks.erase(block_key{3, 3}));
  }
}

TEST_CASE("flat_id_map keeps every key through inserts, erases and growth") {
  flat_id_map<std::uint64_t> map;
  std::set<std::uint64_t> keys;
  dwsr::splitmix64 rng{5};
  for (int step = 0; step < 100000; ++step) {
    const auto k = 1 + rng.below(3000);
    if (rng.below(2)) {
      CHECK(map.insert(k, k * 7) == keys.insert(k).second);
    } else {
      std::uint64_t v = 0;
      CHECK(map.erase(k, &v) == (keys.erase(k) == 1));
    }
  }
  CHECK(map.size() == keys.size());
  for (auto k : keys) REQUIRE((map.find(k) && *map.find(k) == k * 7));
  CHECK_FALSE(map.find(999999));
}
