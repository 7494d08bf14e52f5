// Tensor-core paged attention (gpu/tensor_attention_kernel.h) against the CPU reference
// (core/cpu/paged_attention.h), bfloat16 and float16: prefill and chunked-prefill tiles
// over block sizes 1, 16, 64, ragged chunks and a decode in one batch, contexts over many
// KV tiles, GQA ratios 1, 3, 4, 8 and head dims 64, 128, 256; the same bits at every block
// size and however the prompt is cut in chunks; cascade decode (nested shared-prefix
// groups, parts merged by log-sum-exp) within rounding of the reference. K/V are a
// function of (sequence, position), written through each block table; output buffers
// carry sentinel rows past the batch, so a stray write shows.
#include <doctest/doctest.h>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cmath>
#include <cstring>

#include "backend/cpu_thread_pool.h"
#include "cpu/paged_attention.h"
#include "gpu_test_device.h"
#include "shared_prefix_groups.h"
#include "tensor_attention_kernel.h"
#include "tensor_attention_plan.h"

using namespace pagedgen;

namespace {

constexpr uint16_t kOutputSentinel = 0x7fc1;  // a NaN in both 16-bit types that no kernel writes
// The output's own rounding (8 bits of mantissa in bfloat16) and P rounded to bfloat16
// before P V dominate; values are in [-1, 1].
constexpr float kTolerance = 1.6e-2f;

struct Shape {
  int32_t head_dim;
  int32_t num_kv_heads;
  int32_t group;
};

float host_float(__nv_bfloat16 x) { return __bfloat162float(x); }
float host_float(__half x) { return __half2float(x); }
template <typename T>
T host_from_float(float x) {
  if constexpr (std::is_same_v<T, __half>)
    return __float2half_rn(x);
  else
    return __float2bfloat16_rn(x);
}

// Sequences with block tables over one pool; K/V of (sequence s, position p, head, dim)
// are a hash of those, so every block size stores the same values at a position. Sequences
// listed in `shares_with` read the blocks of an earlier sequence for their first positions.
struct PagedSequences {
  int32_t block_size;
  KvLayout layout;
  std::vector<std::vector<int32_t>> tables;
  std::vector<float> k, v;  // host pools (float holding bfloat16 values, exact in float16 too)
};

// A value in [-1, 1) from a key (splitmix64).
float hash_value(uint64_t key) {
  uint64_t z = key + 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return static_cast<float>(z >> 40) * (2.0f / 16777216.0f) - 1.0f;
}

// Builds tables for sequences of `lengths` tokens; sequence s takes the first
// shared_blocks[s].second blocks of sequence shared_blocks[s].first (an earlier one).
PagedSequences make_sequences(int32_t block_size, const Shape& shape, const std::vector<int32_t>& lengths,
                              const std::vector<std::pair<int32_t, int32_t>>& shared_blocks) {
  PagedSequences p;
  p.block_size = block_size;
  int32_t num_blocks = 0;
  for (int32_t n : lengths) num_blocks += n / block_size + 1;
  p.layout = KvLayout{num_blocks, shape.num_kv_heads, block_size, shape.head_dim};
  std::vector<int32_t> ids(static_cast<std::size_t>(num_blocks));
  for (int32_t i = 0; i < num_blocks; ++i) ids[static_cast<std::size_t>(i)] = (i * 7919) % num_blocks;  // scrambled
  std::size_t next = 0;
  for (std::size_t s = 0; s < lengths.size(); ++s) {
    std::vector<int32_t> table;
    const auto [from, count] = shared_blocks.empty() ? std::pair<int32_t, int32_t>{0, 0} : shared_blocks[s];
    for (int32_t b = 0; b < count; ++b)
      table.push_back(p.tables[static_cast<std::size_t>(from)][static_cast<std::size_t>(b)]);
    while (std::ssize(table) * block_size <= lengths[s]) table.push_back(ids[next++]);
    p.tables.push_back(table);
  }
  // K/V by (owning sequence, position): a shared block holds its first owner's values.
  const auto elements = static_cast<std::size_t>(p.layout.elements_per_layer());
  p.k.assign(elements, 0.0f);
  p.v.assign(elements, 0.0f);
  std::vector<bool> written(static_cast<std::size_t>(num_blocks), false);
  for (std::size_t s = 0; s < lengths.size(); ++s)
    for (std::size_t b = 0; b < p.tables[s].size(); ++b) {
      const int32_t id = p.tables[s][b];
      if (written[static_cast<std::size_t>(id)]) continue;
      written[static_cast<std::size_t>(id)] = true;
      for (int32_t slot = 0; slot < block_size; ++slot)
        for (int32_t h = 0; h < shape.num_kv_heads; ++h)
          for (int32_t d = 0; d < shape.head_dim; ++d) {
            const auto pos = static_cast<uint64_t>(static_cast<int32_t>(b) * block_size + slot);
            const uint64_t key =
                ((s * 65536u + pos) * 16u + static_cast<uint64_t>(h)) * 512u + static_cast<uint64_t>(d);
            const auto at = static_cast<std::size_t>(p.layout.offset(id, h, slot, d));
            p.k[at] = __bfloat162float(__float2bfloat16(hash_value(key * 2u)));
            p.v[at] = __bfloat162float(__float2bfloat16(hash_value(key * 2u + 1u)));
          }
    }
  return p;
}

// One step: sequence s computes tokens [first[s], first[s] + count[s]).
StepBatch make_step(const PagedSequences& p, const std::vector<int32_t>& first, const std::vector<int32_t>& count) {
  StepBatch b;
  b.num_seqs = static_cast<int32_t>(first.size());
  b.block_size = p.block_size;
  for (const auto& t : p.tables) b.max_blocks_per_seq = std::max(b.max_blocks_per_seq, static_cast<int32_t>(t.size()));
  b.query_start.push_back(0);
  for (std::size_t s = 0; s < first.size(); ++s) {
    for (int32_t pos = first[s]; pos < first[s] + count[s]; ++pos) b.positions.push_back(pos);
    b.query_start.push_back(static_cast<int32_t>(b.positions.size()));
    b.context_lens.push_back(first[s] + count[s]);
    std::vector<int32_t> row = p.tables[s];
    row.resize(static_cast<std::size_t>(b.max_blocks_per_seq), 0);
    b.block_tables.insert(b.block_tables.end(), row.begin(), row.end());
  }
  b.num_tokens = static_cast<int32_t>(b.positions.size());
  return b;
}

// q of (sequence, position, head, dim), so a token's query is the same in every batch.
std::vector<float> make_q(const StepBatch& b, int32_t num_heads, int32_t head_dim) {
  std::vector<float> q;
  for (int32_t s = 0; s < b.num_seqs; ++s)
    for (int32_t t = b.query_start[static_cast<std::size_t>(s)]; t < b.query_start[static_cast<std::size_t>(s) + 1];
         ++t)
      for (int32_t i = 0; i < num_heads * head_dim; ++i)
        q.push_back(hash_value(((uint64_t{1} << 62) | static_cast<uint64_t>(s) << 40 |
                                static_cast<uint64_t>(b.positions[static_cast<std::size_t>(t)]) << 16) +
                               static_cast<uint64_t>(i)));
  return q;
}

template <typename T>
std::vector<T> to_pool(const std::vector<float>& values) {
  std::vector<T> out(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) out[i] = host_from_float<T>(values[i]);
  return out;
}

// The plan's tiles on the GPU; returns num_tokens rows (the two sentinel rows after them checked).
template <typename T>
std::vector<T> gpu_attention(const PagedSequences& p, const StepBatch& b, const gpu::TensorAttentionPlan& plan,
                             const std::vector<float>& q, int32_t num_heads, float scale) {
  const auto row = static_cast<std::size_t>(num_heads * p.layout.head_dim);
  const std::vector<uint16_t> sentinel((static_cast<std::size_t>(b.num_tokens) + 2) * row, kOutputSentinel);
  const gpu::DeviceBuffer out = test::to_device(sentinel);
  const gpu::DeviceBuffer k = test::to_device(to_pool<T>(p.k)), v = test::to_device(to_pool<T>(p.v));
  const gpu::DeviceBuffer q_d = test::to_device(q), positions = test::to_device(b.positions);
  const gpu::DeviceBuffer query_start = test::to_device(b.query_start), context_lens = test::to_device(b.context_lens);
  const gpu::DeviceBuffer tables = test::to_device(b.block_tables), tiles = test::to_device(plan.tiles);
  const gpu::DeviceBuffer tile_tokens = test::to_device(plan.tile_tokens), num_parts = test::to_device(plan.num_parts);
  const gpu::DeviceBuffer partial_index = test::to_device(plan.partial_index);
  const auto slots = static_cast<std::size_t>(std::max(1, plan.num_partials)) * static_cast<std::size_t>(num_heads);
  const gpu::DeviceBuffer partial_out(slots * static_cast<std::size_t>(p.layout.head_dim) * sizeof(float));
  const gpu::DeviceBuffer partial_max(slots * sizeof(float)), partial_sum(slots * sizeof(float));
  const PagedAttentionArgsOf<T, T> args{q_d.as<float>(),
                                        k.as<T>(),
                                        v.as<T>(),
                                        out.as<T>(),
                                        positions.as<int32_t>(),
                                        query_start.as<int32_t>(),
                                        context_lens.as<int32_t>(),
                                        tables.as<int32_t>(),
                                        b.num_tokens,
                                        b.num_seqs,
                                        b.max_blocks_per_seq,
                                        num_heads,
                                        scale,
                                        p.layout};
  gpu::launch_tensor_attention(
      args,
      gpu::TensorAttentionWork{tiles.as<gpu::TensorAttentionTile>(), static_cast<int32_t>(plan.tiles.size()),
                               tile_tokens.as<int32_t>(), num_parts.as<int32_t>(), partial_index.as<int32_t>(),
                               plan.num_partials, partial_out.as<float>(), partial_max.as<float>(),
                               partial_sum.as<float>()},
      nullptr);
  std::vector<T> result = test::to_host<T>(out);
  CHECK(std::memcmp(result.data() + static_cast<std::size_t>(b.num_tokens) * row,
                    sentinel.data() + static_cast<std::size_t>(b.num_tokens) * row, 2 * row * sizeof(T)) == 0);
  result.resize(static_cast<std::size_t>(b.num_tokens) * row);
  return result;
}

template <typename T>
float max_diff_to_reference(const PagedSequences& p, const StepBatch& b, const std::vector<float>& q, int32_t num_heads,
                            float scale, const std::vector<T>& got) {
  std::vector<float> expected(got.size());
  cpu::CpuThreadPool pool(2);
  cpu::paged_attention(
      cpu::paged_attention_args(b, q.data(), num_heads, p.k.data(), p.v.data(), p.layout, scale, expected.data()),
      pool);
  float max_diff = 0.0f;
  for (std::size_t i = 0; i < expected.size(); ++i) {
    const float diff = std::abs(host_float(got[i]) - expected[i]);
    max_diff = std::isnan(diff) ? INFINITY : std::max(max_diff, diff);
  }
  return max_diff;
}

// Prefill: sequence 0 computes 37 tokens from 0, sequence 1 250 tokens from 300 (its
// first 300 cached), sequence 2 one token at 700 (a decode in the batch). Returns the
// outputs of sequence 1's tokens, for comparisons across block sizes and chunkings.
template <typename T>
std::vector<T> check_prefill(int32_t block_size, const Shape& shape) {
  const int32_t num_heads = shape.num_kv_heads * shape.group;
  const float scale = 1.0f / std::sqrt(static_cast<float>(shape.head_dim));
  const PagedSequences p = make_sequences(block_size, shape, {37, 550, 701}, {});
  const StepBatch b = make_step(p, {0, 300, 700}, {37, 250, 1});
  const std::vector<float> q = make_q(b, num_heads, shape.head_dim);
  const std::vector<T> got = gpu_attention<T>(p, b, gpu::plan_prefill_tiles(b, shape.group), q, num_heads, scale);
  CAPTURE(block_size);
  CAPTURE(shape.head_dim);
  CAPTURE(shape.group);
  CHECK(max_diff_to_reference(p, b, q, num_heads, scale, got) <= kTolerance);
  // Sequence 1 in chunks of 100, 100 and 50: the same bits for each token.
  const auto row = static_cast<std::size_t>(num_heads * shape.head_dim);
  const std::vector<T> seq1(got.begin() + static_cast<std::ptrdiff_t>(37 * row),
                            got.begin() + static_cast<std::ptrdiff_t>(287 * row));
  std::vector<T> chunked;
  for (const auto& [first, count] : {std::pair{300, 100}, std::pair{400, 100}, std::pair{500, 50}}) {
    const StepBatch c = make_step(p, {0, first}, {0, count});
    const std::vector<T> part = gpu_attention<T>(p, c, gpu::plan_prefill_tiles(c, shape.group),
                                                 make_q(c, num_heads, shape.head_dim), num_heads, scale);
    chunked.insert(chunked.end(), part.begin(), part.end());
  }
  CHECK(std::memcmp(chunked.data(), seq1.data(), seq1.size() * sizeof(T)) == 0);
  return seq1;
}

template <typename T>
void check_prefill_shapes() {
  for (const Shape shape : {Shape{64, 3, 3}, Shape{128, 2, 4}, Shape{64, 1, 8}, Shape{128, 4, 1}, Shape{256, 1, 2}}) {
    const std::vector<T> at_16 = check_prefill<T>(16, shape);
    for (int32_t block_size : {1, 64}) {
      CAPTURE(block_size);
      const std::vector<T> other = check_prefill<T>(block_size, shape);
      CHECK(std::memcmp(other.data(), at_16.data(), at_16.size() * sizeof(T)) == 0);
    }
  }
}

// Cascade decode, block size 16: sequences 0-5 share 40 blocks ([0, 640)), of them 0-2
// share 24 blocks more ([640, 1024)); sequence 6 shares nothing. One new token each.
template <typename T>
void check_cascade(const Shape& shape) {
  const int32_t num_heads = shape.num_kv_heads * shape.group;
  const float scale = 1.0f / std::sqrt(static_cast<float>(shape.head_dim));
  const std::vector<int32_t> lengths = {1100, 1030, 1500, 700, 641, 900, 333};
  const PagedSequences p =
      make_sequences(16, shape, lengths, {{0, 0}, {0, 64}, {0, 64}, {0, 40}, {0, 40}, {0, 40}, {0, 0}});
  std::vector<int32_t> first;
  for (int32_t n : lengths) first.push_back(n);
  // The decode token at position `length` reads positions 0..length (its own slot holds a value too).
  const StepBatch b = make_step(p, first, std::vector<int32_t>(lengths.size(), 1));
  const gpu::SharedPrefixPlan groups = gpu::find_shared_prefix_groups(b, {2, 256});
  REQUIRE(groups.groups.size() == 2);
  CHECK(groups.groups[0].range == gpu::KvRange{0, 640});
  CHECK(groups.groups[1].range == gpu::KvRange{640, 1024});
  const std::vector<float> q = make_q(b, num_heads, shape.head_dim);
  for (int32_t chunk : {128, 512}) {
    const auto plan = gpu::plan_cascade_tiles(b, groups, shape.group, chunk, 1 << 16);
    REQUIRE(plan.has_value());
    const std::vector<T> got = gpu_attention<T>(p, b, *plan, q, num_heads, scale);
    CAPTURE(chunk);
    CAPTURE(shape.head_dim);
    CAPTURE(shape.group);
    CHECK(max_diff_to_reference(p, b, q, num_heads, scale, got) <= kTolerance);
  }
}

}  // namespace

TEST_CASE(
    "tensor-core prefill attention: bfloat16 within rounding of the CPU, the same bits at every block size and "
    "chunking") {
  REQUIRE_GPU();
  check_prefill_shapes<__nv_bfloat16>();
}

TEST_CASE(
    "tensor-core prefill attention: float16 within rounding of the CPU, the same bits at every block size and "
    "chunking") {
  REQUIRE_GPU();
  check_prefill_shapes<__half>();
}

TEST_CASE("cascade decode: nested shared-prefix groups merged by log-sum-exp, within rounding of the CPU") {
  REQUIRE_GPU();
  for (const Shape shape : {Shape{128, 2, 4}, Shape{64, 1, 8}, Shape{256, 2, 1}}) {
    check_cascade<__nv_bfloat16>(shape);
    check_cascade<__half>(shape);
  }
}
