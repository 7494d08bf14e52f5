// The CUDA paged-cache kernels against their CPU references (core/backend/paged_attention.h):
// the KV write through the slot mapping and paged attention, over block sizes 1, 8, 16, 32,
// ragged prefill chunks and decodes in one batch, contexts across several partitions, GQA
// ratios 1, 3, 4, 8 and head dims 64, 128. Pools start filled with a sentinel and output
// buffers carry sentinel rows past the batch, so an unwritten or stray write shows.
// Also: the host-side attention plan (runs without a GPU).
#include <doctest/doctest.h>

#include <cuda_bf16.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <map>
#include <random>
#include <tuple>

#include "attention_plan.h"
#include "backend/cpu_thread_pool.h"
#include "backend/paged_attention.h"
#include "gpu_test_device.h"
#include "kv_cache_kernels.h"
#include "paged_attention_kernel.h"
#include "paged_batch_builder.h"

using namespace pagedgen;

namespace {

constexpr float kPoolSentinel = -7680.0f;  // exact in bfloat16 too
constexpr uint32_t kOutputSentinelBits = 0x7fc0dead;  // a NaN no kernel computes

// Float32 attention: the GPU reduces in another (fixed) order than the CPU; scores are
// O(1) here, outputs weighted means of values in [-1, 1].
constexpr float kAttentionTolerance = 2e-5f;
// bfloat16 K/V and output: the output's own rounding (8 bits of mantissa) dominates.
constexpr float kBf16AttentionTolerance = 1.6e-2f;

std::vector<float> random_values(std::size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

struct AttentionShape {
  int32_t head_dim;
  int32_t num_kv_heads;
  int32_t group;
};

// Three sequences over three steps: prefills of 37, 300 and 1 tokens; then a decode, a
// 250-token chunk (positions 300..549, across partitions 256 and 512) and 5 tokens; then
// two decodes.
constexpr std::size_t kNumSeqs = 3;
const std::vector<std::vector<std::pair<std::size_t, int32_t>>> kSteps = {
    {{0, 37}, {1, 300}, {2, 1}},
    {{0, 1}, {1, 250}, {2, 5}},
    {{1, 1}, {0, 1}},
};

StepBatch make_step(test::PagedBatchBuilder& builder, const std::vector<std::pair<std::size_t, int32_t>>& step) {
  std::vector<std::pair<std::size_t, std::vector<int32_t>>> chunks;
  for (const auto& [seq, n] : step) chunks.push_back({seq, std::vector<int32_t>(static_cast<std::size_t>(n), 1)});
  return builder.step(chunks);
}

// Runs launch_paged_attention over a batch on device pools; returns (num_tokens + 2) rows
// of output, the last two of which must keep the sentinel.
template <typename Kv, typename Out>
std::vector<Out> gpu_attention(const StepBatch& batch, const std::vector<float>& q, const gpu::DeviceBuffer& k_pool,
                               const gpu::DeviceBuffer& v_pool, KvLayout layout, int32_t num_heads, float scale,
                               int64_t max_partials) {
  const int32_t group = num_heads / static_cast<int32_t>(layout.num_kv_heads);
  const gpu::AttentionPlan plan = gpu::plan_attention(batch, group, max_partials);
  const auto row = static_cast<std::size_t>(num_heads * layout.head_dim);
  std::vector<uint32_t> sentinel((static_cast<std::size_t>(batch.num_tokens) + 2) * row * sizeof(Out) / 4,
                                 kOutputSentinelBits);
  const gpu::DeviceBuffer out = test::to_device(sentinel);
  const gpu::DeviceBuffer q_d = test::to_device(q);
  const gpu::DeviceBuffer positions = test::to_device(batch.positions);
  const gpu::DeviceBuffer query_start = test::to_device(batch.query_start);
  const gpu::DeviceBuffer context_lens = test::to_device(batch.context_lens);
  const gpu::DeviceBuffer block_tables = test::to_device(batch.block_tables);
  const gpu::DeviceBuffer items = test::to_device(plan.items);
  const gpu::DeviceBuffer partial_index = test::to_device(plan.partial_index);
  const auto partials = static_cast<std::size_t>(max_partials) * static_cast<std::size_t>(num_heads);
  const gpu::DeviceBuffer partial_out(partials * static_cast<std::size_t>(layout.head_dim) * sizeof(float));
  const gpu::DeviceBuffer partial_max(partials * sizeof(float));
  const gpu::DeviceBuffer partial_sum(partials * sizeof(float));
  const PagedAttentionArgsOf<Kv, Out> args{q_d.as<float>(),         k_pool.as<Kv>(),          v_pool.as<Kv>(),
                                           out.as<Out>(),           positions.as<int32_t>(),  query_start.as<int32_t>(),
                                           context_lens.as<int32_t>(), block_tables.as<int32_t>(), batch.num_tokens,
                                           batch.num_seqs,          batch.max_blocks_per_seq, num_heads,
                                           scale,                   layout};
  for (const gpu::AttentionLaunch& launch : plan.launches)
    gpu::launch_paged_attention(args,
                                gpu::AttentionWork{items.as<gpu::AttentionWorkItem>() + launch.item_begin,
                                                   launch.item_end - launch.item_begin, launch.token_begin,
                                                   launch.token_end, partial_index.as<int32_t>(),
                                                   partial_out.as<float>(), partial_max.as<float>(),
                                                   partial_sum.as<float>()},
                                nullptr);
  std::vector<Out> result = test::to_host<Out>(out);
  // The two rows past the batch keep their sentinel.
  const std::size_t tail_bytes = 2 * row * sizeof(Out);
  CHECK(std::memcmp(reinterpret_cast<const std::byte*>(result.data()) + batch.num_tokens * row * sizeof(Out),
                    sentinel.data(), tail_bytes) == 0);
  result.resize(static_cast<std::size_t>(batch.num_tokens) * row);
  return result;
}

template <typename Kv>
std::vector<Kv> convert_pool(const std::vector<float>& values) {
  std::vector<Kv> out(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) {
    if constexpr (std::is_same_v<Kv, float>) out[i] = values[i];
    else out[i] = __float2bfloat16(values[i]);
  }
  return out;
}

float to_float_host(float x) { return x; }
float to_float_host(__nv_bfloat16 x) { return __bfloat162float(x); }

// One configuration over kSteps: KV writes and attention on the GPU against the CPU.
// Returns every step's GPU attention output, for comparisons across block sizes.
template <typename Kv>
std::vector<std::vector<Kv>> check_steps(int32_t block_size, const AttentionShape& shape, float tolerance) {
  const int32_t num_heads = shape.num_kv_heads * shape.group;
  const int32_t num_blocks = 700 / block_size + 16;
  const KvLayout layout{num_blocks, shape.num_kv_heads, block_size, shape.head_dim};
  const auto pool_elements = static_cast<std::size_t>(layout.elements_per_layer());
  std::vector<float> cpu_k(pool_elements, kPoolSentinel), cpu_v(pool_elements, kPoolSentinel);
  const gpu::DeviceBuffer gpu_k = test::to_device(convert_pool<Kv>(cpu_k));
  const gpu::DeviceBuffer gpu_v = test::to_device(convert_pool<Kv>(cpu_v));
  test::PagedBatchBuilder builder(block_size, num_blocks, 77u + static_cast<uint32_t>(block_size));
  for (std::size_t s = 0; s < kNumSeqs; ++s) builder.add_sequence();
  cpu::CpuThreadPool pool(2);
  const float scale = 1.0f / std::sqrt(static_cast<float>(shape.head_dim));
  const int32_t tile = gpu::attention_queries_per_item(shape.group);
  std::vector<std::vector<Kv>> outputs;
  uint32_t seed = 1;
  for (const auto& step : kSteps) {
    const StepBatch batch = make_step(builder, step);
    const auto n = static_cast<std::size_t>(batch.num_tokens);
    const auto kv_row = static_cast<std::size_t>(shape.num_kv_heads * shape.head_dim);
    const auto q_row = static_cast<std::size_t>(num_heads * shape.head_dim);
    std::vector<float> k = random_values(n * kv_row, seed++), v = random_values(n * kv_row, seed++);
    const std::vector<float> q = random_values(n * q_row, seed++);
    if constexpr (!std::is_same_v<Kv, float>) {
      // The CPU reference reads what the bfloat16 pool holds.
      for (float& x : k) x = __bfloat162float(__float2bfloat16(x));
      for (float& x : v) x = __bfloat162float(__float2bfloat16(x));
    }

    // KV write: the whole pools, sentinels included, the same on both sides.
    cpu::write_kv_cache(cpu::kv_write_args(batch, k.data(), v.data(), cpu_k.data(), cpu_v.data(), layout));
    const gpu::DeviceBuffer k_d = test::to_device(k), v_d = test::to_device(v);
    const gpu::DeviceBuffer slots = test::to_device(batch.slot_mapping);
    gpu::launch_write_kv_cache(KvWriteArgsOf<Kv>{k_d.as<float>(), v_d.as<float>(), slots.as<int64_t>(),
                                                 batch.num_tokens, gpu_k.as<Kv>(), gpu_v.as<Kv>(), layout},
                               nullptr);
    const std::vector<Kv> gpu_k_host = test::to_host<Kv>(gpu_k);
    const std::vector<Kv> gpu_v_host = test::to_host<Kv>(gpu_v);
    bool pools_equal = true;
    for (std::size_t i = 0; i < pool_elements && pools_equal; ++i)
      pools_equal = to_float_host(gpu_k_host[i]) == cpu_k[i] && to_float_host(gpu_v_host[i]) == cpu_v[i];
    CHECK_MESSAGE(pools_equal, "KV pools differ after the write (block size ", block_size, ")");

    // Attention, in launches cut as small as a tile allows and in one launch: same bits.
    std::vector<float> expected(n * q_row);
    cpu::paged_attention(cpu::paged_attention_args(batch, q.data(), num_heads, cpu_k.data(), cpu_v.data(), layout,
                                                   scale, expected.data()),
                         pool);
    const std::vector<Kv> got =
        gpu_attention<Kv, Kv>(batch, q, gpu_k, gpu_v, layout, num_heads, scale, int64_t{tile} * 3);
    const std::vector<Kv> got_one_launch =
        gpu_attention<Kv, Kv>(batch, q, gpu_k, gpu_v, layout, num_heads, scale, 1 << 20);
    CHECK(std::memcmp(got.data(), got_one_launch.data(), got.size() * sizeof(Kv)) == 0);
    float max_diff = 0.0f;
    for (std::size_t i = 0; i < expected.size(); ++i) {
      const float diff = std::abs(to_float_host(got[i]) - expected[i]);
      max_diff = std::isnan(diff) ? INFINITY : std::max(max_diff, diff);
    }
    CAPTURE(block_size);
    CAPTURE(shape.head_dim);
    CAPTURE(shape.group);
    CHECK(max_diff <= tolerance);

    // The last token of the batch's second sequence, alone as a decode, gives the same bits.
    const std::size_t seq_index = batch.num_seqs > 1 ? 1 : 0;
    const auto last = static_cast<std::size_t>(batch.query_start[seq_index + 1]) - 1;
    StepBatch single;
    single.num_seqs = 1;
    single.num_tokens = 1;
    single.block_size = batch.block_size;
    single.max_blocks_per_seq = batch.max_blocks_per_seq;
    single.positions = {batch.positions[last]};
    single.query_start = {0, 1};
    single.context_lens = {batch.positions[last] + 1};
    single.block_tables.assign(batch.block_tables.begin() + static_cast<std::ptrdiff_t>(seq_index) * batch.max_blocks_per_seq,
                               batch.block_tables.begin() + static_cast<std::ptrdiff_t>(seq_index + 1) * batch.max_blocks_per_seq);
    const std::vector<float> q_single(q.begin() + static_cast<std::ptrdiff_t>(last * q_row),
                                      q.begin() + static_cast<std::ptrdiff_t>((last + 1) * q_row));
    const std::vector<Kv> alone = gpu_attention<Kv, Kv>(single, q_single, gpu_k, gpu_v, layout, num_heads, scale, 1 << 20);
    CHECK(std::memcmp(alone.data(), got.data() + last * q_row, q_row * sizeof(Kv)) == 0);
    outputs.push_back(got);
  }
  return outputs;
}

}  // namespace

TEST_CASE("attention plan: tiles of one sequence, one item per partition, launches cut at the workspace") {
  // Group 4: tiles of 2 queries. Sequence 0: 3 tokens at positions 254..256 (the last one
  // reads 2 partitions); sequence 1: 1 token at position 600 (3 partitions).
  StepBatch batch;
  batch.num_seqs = 2;
  batch.num_tokens = 4;
  batch.positions = {254, 255, 256, 600};
  batch.query_start = {0, 3, 4};
  const gpu::AttentionPlan plan = gpu::plan_attention(batch, 4, 1000);
  REQUIRE(plan.items.size() == 1 + 2 + 3);  // tile {254, 255}: 1; tile {256}: 2; tile {600}: 3
  CHECK(plan.items[0].first_token == 0);
  CHECK(plan.items[0].num_queries == 2);
  CHECK(plan.items[1].first_token == 2);
  CHECK(plan.items[2].partition == 1);
  CHECK(plan.items[5].seq == 1);
  CHECK(plan.items[5].partition == 2);
  CHECK(plan.partial_index == std::vector<int32_t>{0, 0, 0, 2});  // token 2: slots 0-1; token 3: 2-4
  REQUIRE(plan.launches.size() == 1);
  CHECK(plan.launches[0].num_partials == 5);
  // A workspace of 3 slots: token 3 needs a launch of its own.
  const gpu::AttentionPlan cut = gpu::plan_attention(batch, 4, 3);
  REQUIRE(cut.launches.size() == 2);
  CHECK(cut.launches[0].token_end == 3);
  CHECK(cut.launches[0].item_end == 3);
  CHECK(cut.launches[1].token_begin == 3);
  CHECK(cut.launches[1].num_partials == 3);
  CHECK(cut.partial_index[3] == 0);
  CHECK(gpu::attention_partitions(255) == 1);
  CHECK(gpu::attention_partitions(256) == 2);
  CHECK(gpu::attention_queries_per_item(3) == 2);
  CHECK(gpu::attention_queries_per_item(8) == 1);
}

TEST_CASE("KV write and paged attention match the CPU reference, the same bits at every block size") {
  REQUIRE_GPU();
  for (const AttentionShape shape : {AttentionShape{64, 3, 3}, AttentionShape{128, 2, 4}, AttentionShape{64, 1, 8},
                                     AttentionShape{128, 4, 1}}) {
    const auto at_16 = check_steps<float>(16, shape, kAttentionTolerance);
    for (int32_t block_size : {1, 8, 32}) {
      const auto other = check_steps<float>(block_size, shape, kAttentionTolerance);
      REQUIRE(other.size() == at_16.size());
      for (std::size_t s = 0; s < other.size(); ++s) {
        CAPTURE(block_size);
        CAPTURE(s);
        CHECK(std::memcmp(other[s].data(), at_16[s].data(), other[s].size() * sizeof(float)) == 0);
      }
    }
  }
}

TEST_CASE("bfloat16 KV cache and output stay within bfloat16 rounding of the CPU reference") {
  REQUIRE_GPU();
  for (int32_t block_size : {1, 16}) check_steps<__nv_bfloat16>(block_size, AttentionShape{128, 2, 4}, kBf16AttentionTolerance);
}

TEST_CASE("copy_blocks copies exactly the listed blocks of every pool, in order") {
  REQUIRE_GPU();
  // 8 blocks of 24 floats (96 bytes) in 4 pools (2 layers x K, V); every element distinct.
  const int32_t num_blocks = 8, block_floats = 24, num_pools = 4;
  std::vector<float> pools(static_cast<std::size_t>(num_pools * num_blocks * block_floats));
  for (std::size_t i = 0; i < pools.size(); ++i) pools[i] = static_cast<float>(i);
  const gpu::DeviceBuffer d = test::to_device(pools);
  // 2 -> 5 and 7 -> 0 in one launch; 5 -> 6 must see the new 5, so it runs after them.
  const gpu::DeviceBuffer first = test::to_device(std::vector<BlockCopy>{{2, 5}, {7, 0}});
  const gpu::DeviceBuffer second = test::to_device(std::vector<BlockCopy>{{5, 6}});
  const int64_t pool_bytes = int64_t{num_blocks} * block_floats * 4;
  gpu::launch_copy_blocks(gpu::BlockCopyArgs{first.as<BlockCopy>(), 2, d.as<std::byte>(), pool_bytes, num_pools,
                                             block_floats * 4},
                          nullptr);
  gpu::launch_copy_blocks(gpu::BlockCopyArgs{second.as<BlockCopy>(), 1, d.as<std::byte>(), pool_bytes, num_pools,
                                             block_floats * 4},
                          nullptr);
  const std::vector<float> after = test::to_host<float>(d);
  const int32_t source_of[] = {7, 1, 2, 3, 4, 2, 2, 7};
  for (int32_t p = 0; p < num_pools; ++p)
    for (int32_t b = 0; b < num_blocks; ++b)
      for (int32_t i = 0; i < block_floats; ++i) {
        CAPTURE(p);
        CAPTURE(b);
        const auto at = static_cast<std::size_t>((p * num_blocks + b) * block_floats + i);
        const auto from = static_cast<std::size_t>((p * num_blocks + source_of[b]) * block_floats + i);
        REQUIRE(after[at] == pools[from]);
      }
}
