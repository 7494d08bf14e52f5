// KvPoolShape (backend/kv_pool_shape.h): the layouts and layer kinds that both backends size
// their KV pools by, and the block copies they keep, on a model of one kind and on one with
// window layers.
#include <doctest/doctest.h>

#include <vector>

#include "backend/kv_pool_shape.h"
#include "model/model_config.h"

namespace pagedgen {

namespace {

// Four layers of 2 KV heads of 8 dimensions; with `window`, layers 0 and 2 attend to the
// last 16 positions (kind 1), layers 1 and 3 to every position (kind 0).
ModelConfig four_layers(bool window) {
  ModelConfig config;
  config.num_layers = 4;
  config.num_kv_heads = 2;
  config.head_dim = 8;
  if (window) {
    config.sliding_window = 16;
    config.window_layers = {true, false, true, false};
  }
  return config;
}

bool same_layout(const KvLayout& a, const KvLayout& b) {
  return a.num_blocks == b.num_blocks && a.num_kv_heads == b.num_kv_heads && a.block_size == b.block_size &&
         a.head_dim == b.head_dim;
}

}  // namespace

TEST_CASE("before any pool: no kind, no layer") {
  const KvPoolShape shape;
  CHECK(shape.layouts().empty());
  CHECK(shape.num_layers() == 0);
}

TEST_CASE("one kind: every layer's pools in kind 0, even on a model with window layers") {
  const ModelConfig config = four_layers(true);
  const KvPoolShape shape = KvPoolShape::one_kind(config, 10, 4);
  REQUIRE(shape.layouts().size() == 1);
  CHECK(same_layout(shape.layout(0), KvLayout{10, 2, 4, 8}));
  REQUIRE(shape.num_layers() == 4);
  for (std::size_t layer = 0; layer < 4; ++layer) {
    CHECK(shape.layer_kind(layer) == 0);
    CHECK(same_layout(shape.layer_layout(layer), KvLayout{10, 2, 4, 8}));
  }
  CHECK(shape.num_layers_of_kind(0) == 4);
}

TEST_CASE("by kind: the window layers in kind 1, with its own blocks") {
  const ModelConfig config = four_layers(true);
  const int32_t kind_num_blocks[] = {10, 3};
  const KvPoolShape shape = KvPoolShape::by_kind(config, kind_num_blocks, 4);
  REQUIRE(shape.layouts().size() == 2);
  CHECK(same_layout(shape.layout(0), KvLayout{10, 2, 4, 8}));
  CHECK(same_layout(shape.layout(1), KvLayout{3, 2, 4, 8}));
  const std::vector<KvKindId> kinds = {1, 0, 1, 0};
  for (std::size_t layer = 0; layer < 4; ++layer) {
    CHECK(shape.layer_kind(layer) == kinds[layer]);
    CHECK(shape.layer_layout(layer).num_blocks == (kinds[layer] == 1 ? 3 : 10));
  }
  CHECK(shape.num_layers_of_kind(0) == 2);
  CHECK(shape.num_layers_of_kind(1) == 2);
}

TEST_CASE("by kind on a model of one kind: one kind") {
  const int32_t kind_num_blocks[] = {7};
  const KvPoolShape shape = KvPoolShape::by_kind(four_layers(false), kind_num_blocks, 16);
  REQUIRE(shape.layouts().size() == 1);
  CHECK(same_layout(shape.layout(0), KvLayout{7, 2, 16, 8}));
  CHECK(shape.num_layers_of_kind(0) == 4);
}

TEST_CASE("moving_copies keeps the copies in order, without those onto themselves") {
  const int32_t kind_num_blocks[] = {10, 3};
  const KvPoolShape shape = KvPoolShape::by_kind(four_layers(true), kind_num_blocks, 4);
  const std::vector<BlockCopy> copies = {{2, 5, 0}, {5, 5, 0}, {5, 6, 0}, {2, 2, 1}, {0, 2, 1}, {9, 0, 0}};
  const std::vector<BlockCopy> moving = shape.moving_copies(copies);
  REQUIRE(moving.size() == 4);
  const BlockCopy expected[] = {{2, 5, 0}, {5, 6, 0}, {0, 2, 1}, {9, 0, 0}};
  for (std::size_t i = 0; i < moving.size(); ++i) {
    CAPTURE(i);
    CHECK(moving[i].src == expected[i].src);
    CHECK(moving[i].dst == expected[i].dst);
    CHECK(moving[i].kind == expected[i].kind);
  }
  CHECK(shape.moving_copies({}).empty());
}

}  // namespace pagedgen
