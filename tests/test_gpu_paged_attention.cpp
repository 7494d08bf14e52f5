// The CUDA paged-cache kernels against their CPU references (core/cpu/paged_attention.h):
// the KV write through the slot mapping and paged attention, over block sizes 1, 8, 16, 32,
// ragged prefill chunks and decodes in one batch, contexts across several partitions, GQA
// ratios 1, 2, 3, 4, 8, head dims 64, 96, 128, 256, sliding windows and soft-caps, K/V and
// output in float32, bfloat16 and float16. Pools start
// filled with a sentinel, blocks a window has passed are given back (table entry 0) and
// filled with NaN, and output buffers carry sentinel rows past the batch, so an unwritten
// or stray write, or a read of a given-back block, shows.
// Also: the host-side attention plan (runs without a GPU).
#include <doctest/doctest.h>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
#include <random>
#include <tuple>

#include "attention_plan.h"
#include "backend/cpu_thread_pool.h"
#include "cpu/paged_attention.h"
#include "gpu_test_device.h"
#include "kv_cache_kernels.h"
#include "paged_attention_kernel.h"
#include "paged_batch_builder.h"

using namespace pagedgen;

namespace {

constexpr float kPoolSentinel = -7680.0f;             // exact in bfloat16 too
constexpr uint32_t kOutputSentinelBits = 0x7fc0dead;  // a NaN no kernel computes

// Float32 attention: the GPU reduces in another (fixed) order than the CPU; scores are
// O(1) here, outputs weighted means of values in [-1, 1].
constexpr float kAttentionTolerance = 2e-5f;
// bfloat16 K/V and output: the output's own rounding (8 bits of mantissa) dominates.
constexpr float kBf16AttentionTolerance = 1.6e-2f;
// float16 K/V and output: the same, at 11 bits of mantissa (8 times finer).
constexpr float kF16AttentionTolerance = 2e-3f;
// Float32 with soft-capped scores of magnitude up to ~50 (queries scaled by kSoftcapQScale):
// each score carries a rounding error ~|s| * 2^-24 * sqrt(head_dim) ~ 1e-5, an error of
// the same size in its log-weight.
constexpr float kSoftcapTolerance = 1e-4f;
constexpr float kSoftcapQScale = 40.0f;

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

// What a configuration runs beyond its shape.
struct AttentionCase {
  int32_t window = 0;    // PagedAttentionArgs::window
  float softcap = 0.0f;  // PagedAttentionArgs::softcap
  float q_scale = 1.0f;  // queries in [-q_scale, q_scale]: large enough and the cap matters
};

using Steps = std::vector<std::vector<std::pair<std::size_t, int32_t>>>;

// Three sequences over three steps: prefills of 37, 300 and 1 tokens; then a decode, a
// 250-token chunk (positions 300..549, across partitions 256 and 512) and 5 tokens; then
// two decodes.
constexpr std::size_t kNumSeqs = 3;
const Steps kSteps = {
    {{0, 37}, {1, 300}, {2, 1}},
    {{0, 1}, {1, 250}, {2, 5}},
    {{1, 1}, {0, 1}},
};

// Longer contexts for windows (up to 1,002 positions, four partitions): prefills of 37, 600
// and 1; a decode, a 250-token chunk (600..849) and a 300-token one; two decodes and a
// 700-token chunk (301..1000); two decodes.
const Steps kWindowSteps = {
    {{0, 37}, {1, 600}, {2, 1}},
    {{0, 1}, {1, 250}, {2, 300}},
    {{1, 1}, {0, 1}, {2, 700}},
    {{2, 1}, {1, 1}},
};

// Blocks the builder needs for `steps` at `block_size`.
int32_t blocks_for(const Steps& steps, int32_t block_size) {
  std::map<std::size_t, int32_t> lengths;
  for (const auto& step : steps)
    for (const auto& [seq, n] : step) lengths[seq] += n;
  int32_t blocks = 0;
  for (const auto& [seq, n] : lengths) blocks += (n + block_size - 1) / block_size;
  return blocks;
}

// One step's batch with every block id moved up by one: block 0 of the pool belongs to no
// sequence, so a read through a given-back table entry (0) finds the NaN it is filled with.
StepBatch make_step(test::PagedBatchBuilder& builder, const std::vector<std::pair<std::size_t, int32_t>>& step) {
  std::vector<std::pair<std::size_t, std::vector<int32_t>>> chunks;
  for (const auto& [seq, n] : step) chunks.push_back({seq, std::vector<int32_t>(static_cast<std::size_t>(n), 1)});
  StepBatch batch = builder.step(chunks);
  for (int32_t& block : batch.block_tables) ++block;
  for (int64_t& slot : batch.slot_mapping) slot += batch.block_size;
  return batch;
}

// The batch as the engine sends it to a window layer: the table entries of blocks wholly
// below every query's window in their sequence are 0 (step_batch.h). Appends the blocks
// given back to `released`.
StepBatch release_passed_blocks(const StepBatch& batch, int32_t window, std::vector<int32_t>& released) {
  StepBatch out = batch;
  for (int32_t s = 0; s < batch.num_seqs; ++s) {
    int32_t lowest = INT32_MAX;
    for (int32_t t = batch.query_start[static_cast<std::size_t>(s)];
         t < batch.query_start[static_cast<std::size_t>(s) + 1]; ++t)
      lowest = std::min(lowest, std::max(0, batch.positions[static_cast<std::size_t>(t)] - window + 1));
    for (int32_t b = 0; (b + 1) * batch.block_size <= lowest; ++b) {
      int32_t& entry = out.block_tables[static_cast<std::size_t>(s * batch.max_blocks_per_seq + b)];
      released.push_back(entry);
      entry = 0;
    }
  }
  return out;
}

// The most partitions one token of the batch reads.
int32_t max_partitions_read(const StepBatch& batch, int32_t window) {
  int32_t most = 1;
  for (int32_t p : batch.positions)
    most = std::max(most, gpu::attention_partitions(p) - gpu::attention_first_partition(p, window));
  return most;
}

// Runs launch_paged_attention over a batch on device pools; returns (num_tokens + 2) rows
// of output, the last two of which must keep the sentinel.
template <typename Kv, typename Out>
std::vector<Out> gpu_attention(const StepBatch& batch, const std::vector<float>& q, const gpu::DeviceBuffer& k_pool,
                               const gpu::DeviceBuffer& v_pool, KvLayout layout, int32_t num_heads, float scale,
                               const AttentionCase& c, int64_t max_partials) {
  const int32_t group = num_heads / static_cast<int32_t>(layout.num_kv_heads);
  const gpu::AttentionPlan plan = gpu::plan_attention(batch, group, max_partials, c.window);
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
  const PagedAttentionArgsOf<Kv, Out> args{q_d.as<float>(),
                                           k_pool.as<Kv>(),
                                           v_pool.as<Kv>(),
                                           out.as<Out>(),
                                           positions.as<int32_t>(),
                                           query_start.as<int32_t>(),
                                           context_lens.as<int32_t>(),
                                           block_tables.as<int32_t>(),
                                           batch.num_tokens,
                                           batch.num_seqs,
                                           batch.max_blocks_per_seq,
                                           num_heads,
                                           scale,
                                           layout,
                                           c.window,
                                           c.softcap};
  for (const gpu::AttentionLaunch& launch : plan.launches)
    gpu::launch_paged_attention(
        args,
        gpu::AttentionWork{items.as<gpu::AttentionWorkItem>() + launch.item_begin, launch.item_end - launch.item_begin,
                           launch.token_begin, launch.token_end, partial_index.as<int32_t>(), partial_out.as<float>(),
                           partial_max.as<float>(), partial_sum.as<float>()},
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
Kv from_float_host(float x) {
  if constexpr (std::is_same_v<Kv, float>)
    return x;
  else if constexpr (std::is_same_v<Kv, __half>)
    return __float2half_rn(x);
  else
    return __float2bfloat16_rn(x);
}

float to_float_host(float x) { return x; }
float to_float_host(__nv_bfloat16 x) { return __bfloat162float(x); }
float to_float_host(__half x) { return __half2float(x); }

template <typename Kv>
std::vector<Kv> convert_pool(const std::vector<float>& values) {
  std::vector<Kv> out(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) out[i] = from_float_host<Kv>(values[i]);
  return out;
}

// A copy of a pool with `blocks` filled with NaN.
template <typename Kv>
std::vector<Kv> poison_blocks(std::vector<Kv> pool, KvLayout layout, const std::vector<int32_t>& blocks) {
  const Kv nan = convert_pool<Kv>({NAN})[0];
  for (int32_t block : blocks)
    for (int64_t h = 0; h < layout.num_kv_heads; ++h)
      for (int64_t slot = 0; slot < layout.block_size; ++slot)
        for (int64_t d = 0; d < layout.head_dim; ++d)
          pool[static_cast<std::size_t>(layout.offset(block, h, slot, d))] = nan;
  return pool;
}

// Largest |a - b| over two outputs; a NaN anywhere counts as infinite.
template <typename Kv>
float max_difference(const std::vector<Kv>& got, const std::vector<float>& expected) {
  float max_diff = 0.0f;
  for (std::size_t i = 0; i < expected.size(); ++i) {
    const float diff = std::abs(to_float_host(got[i]) - expected[i]);
    max_diff = std::isnan(diff) ? INFINITY : std::max(max_diff, diff);
  }
  return max_diff;
}

// One configuration over `steps`: KV writes and attention on the GPU against the CPU. With
// a window, both read the batch with the passed blocks given back, and the GPU's pools have
// those blocks (and block 0) filled with NaN. Returns every step's GPU attention output, for
// comparisons across block sizes.
template <typename Kv>
std::vector<std::vector<Kv>> check_steps(int32_t block_size, const AttentionShape& shape, float tolerance,
                                         const Steps& steps = kSteps, const AttentionCase& c = {}) {
  const int32_t num_heads = shape.num_kv_heads * shape.group;
  const int32_t num_blocks = blocks_for(steps, block_size) + 8;
  const KvLayout layout{num_blocks + 1, shape.num_kv_heads, block_size, shape.head_dim};  // + block 0 (make_step)
  const auto pool_elements = static_cast<std::size_t>(layout.elements_per_layer());
  std::vector<float> cpu_k(pool_elements, kPoolSentinel), cpu_v(pool_elements, kPoolSentinel);
  const gpu::DeviceBuffer gpu_k = test::to_device(convert_pool<Kv>(cpu_k));
  const gpu::DeviceBuffer gpu_v = test::to_device(convert_pool<Kv>(cpu_v));
  test::PagedBatchBuilder builder(block_size, num_blocks, 77u + static_cast<uint32_t>(block_size));
  for (std::size_t s = 0; s < kNumSeqs; ++s) builder.add_sequence();
  cpu::CpuThreadPool pool(2);
  const float scale = 1.0f / std::sqrt(static_cast<float>(shape.head_dim));
  const int32_t tile = gpu::attention_queries_per_item(shape.group);
  CAPTURE(block_size);
  CAPTURE(shape.head_dim);
  CAPTURE(shape.group);
  CAPTURE(c.window);
  CAPTURE(c.softcap);
  std::vector<std::vector<Kv>> outputs;
  uint32_t seed = 1;
  for (const auto& step : steps) {
    const StepBatch written = make_step(builder, step);
    const auto n = static_cast<std::size_t>(written.num_tokens);
    const auto kv_row = static_cast<std::size_t>(shape.num_kv_heads * shape.head_dim);
    const auto q_row = static_cast<std::size_t>(num_heads * shape.head_dim);
    std::vector<float> k = random_values(n * kv_row, seed++), v = random_values(n * kv_row, seed++);
    std::vector<float> q = random_values(n * q_row, seed++);
    for (float& x : q) x *= c.q_scale;
    // The CPU reference reads what a 16-bit pool holds.
    for (float& x : k) x = to_float_host(from_float_host<Kv>(x));
    for (float& x : v) x = to_float_host(from_float_host<Kv>(x));

    // KV write: the whole pools, sentinels included, the same on both sides.
    cpu::write_kv_cache(cpu::kv_write_args(written, k.data(), v.data(), cpu_k.data(), cpu_v.data(), layout));
    const gpu::DeviceBuffer k_d = test::to_device(k), v_d = test::to_device(v);
    const gpu::DeviceBuffer slots = test::to_device(written.slot_mapping);
    gpu::launch_write_kv_cache(KvWriteArgsOf<Kv>{k_d.as<float>(), v_d.as<float>(), slots.as<int64_t>(),
                                                 written.num_tokens, gpu_k.as<Kv>(), gpu_v.as<Kv>(), layout},
                               nullptr);
    const std::vector<Kv> gpu_k_host = test::to_host<Kv>(gpu_k);
    const std::vector<Kv> gpu_v_host = test::to_host<Kv>(gpu_v);
    bool pools_equal = true;
    for (std::size_t i = 0; i < pool_elements && pools_equal; ++i)
      pools_equal = to_float_host(gpu_k_host[i]) == cpu_k[i] && to_float_host(gpu_v_host[i]) == cpu_v[i];
    CHECK_MESSAGE(pools_equal, "KV pools differ after the write (block size ", block_size, ")");

    // What attention reads: with a window, the passed blocks given back and poisoned.
    std::vector<int32_t> released = {0};
    const StepBatch batch = c.window > 0 ? release_passed_blocks(written, c.window, released) : written;
    const gpu::DeviceBuffer read_k = test::to_device(poison_blocks(gpu_k_host, layout, released));
    const gpu::DeviceBuffer read_v = test::to_device(poison_blocks(gpu_v_host, layout, released));

    // Attention, in launches cut as small as a tile allows and in one launch: same bits.
    std::vector<float> expected(n * q_row);
    cpu::paged_attention(cpu::paged_attention_args(batch, q.data(), num_heads, cpu_k.data(), cpu_v.data(), layout,
                                                   scale, expected.data(), c.window, c.softcap),
                         pool);
    const int64_t smallest_workspace = int64_t{tile} * max_partitions_read(batch, c.window);
    const std::vector<Kv> got =
        gpu_attention<Kv, Kv>(batch, q, read_k, read_v, layout, num_heads, scale, c, smallest_workspace);
    const std::vector<Kv> got_one_launch =
        gpu_attention<Kv, Kv>(batch, q, read_k, read_v, layout, num_heads, scale, c, 1 << 20);
    CHECK(std::memcmp(got.data(), got_one_launch.data(), got.size() * sizeof(Kv)) == 0);
    CHECK(max_difference(got, expected) <= tolerance);
    if (c.softcap > 0.0f) {
      // The cap must move the output by more than twice the tolerance, or a kernel that
      // ignored it could pass (on the CPU these steps move it by 0.07 to 0.4).
      std::vector<float> uncapped(n * q_row);
      cpu::paged_attention(cpu::paged_attention_args(batch, q.data(), num_heads, cpu_k.data(), cpu_v.data(), layout,
                                                     scale, uncapped.data(), c.window, 0.0f),
                           pool);
      CHECK(max_difference(expected, uncapped) > 2 * tolerance);
    }

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
    single.block_tables.assign(
        batch.block_tables.begin() + static_cast<std::ptrdiff_t>(seq_index) * batch.max_blocks_per_seq,
        batch.block_tables.begin() + static_cast<std::ptrdiff_t>(seq_index + 1) * batch.max_blocks_per_seq);
    const std::vector<float> q_single(q.begin() + static_cast<std::ptrdiff_t>(last * q_row),
                                      q.begin() + static_cast<std::ptrdiff_t>((last + 1) * q_row));
    const std::vector<Kv> alone =
        gpu_attention<Kv, Kv>(single, q_single, read_k, read_v, layout, num_heads, scale, c, 1 << 20);
    CHECK(std::memcmp(alone.data(), got.data() + last * q_row, q_row * sizeof(Kv)) == 0);
    outputs.push_back(got);
  }
  return outputs;
}

// check_steps at block size 16, then at each of other_sizes: the same bits.
void check_block_sizes(const AttentionShape& shape, float tolerance, const Steps& steps, const AttentionCase& c,
                       const std::vector<int32_t>& other_sizes) {
  const auto at_16 = check_steps<float>(16, shape, tolerance, steps, c);
  for (int32_t block_size : other_sizes) {
    const auto other = check_steps<float>(block_size, shape, tolerance, steps, c);
    REQUIRE(other.size() == at_16.size());
    for (std::size_t s = 0; s < other.size(); ++s) {
      CAPTURE(block_size);
      CAPTURE(s);
      CHECK(std::memcmp(other[s].data(), at_16[s].data(), other[s].size() * sizeof(float)) == 0);
    }
  }
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
  const gpu::AttentionPlan plan = gpu::plan_attention(batch, 4, 1000, 0);
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
  const gpu::AttentionPlan cut = gpu::plan_attention(batch, 4, 3, 0);
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

// Two AttentionWorkItems are the same item.
bool same_item(const gpu::AttentionWorkItem& a, const gpu::AttentionWorkItem& b) {
  return std::tie(a.seq, a.first_token, a.num_queries, a.partition) ==
         std::tie(b.seq, b.first_token, b.num_queries, b.partition);
}

TEST_CASE("attention plan with a window: a hand-worked batch, whole and cut at the workspace") {
  // W = 256, group 4 (tiles of 2 queries). A query at p reads [max(0, p - 255), p]:
  //   seq 0, p = 510: 255..510 -> partitions [0, 2)   2 partials
  //          p = 511: 256..511 -> [1, 2)              1 partition, written directly
  //          p = 512: 257..512 -> [1, 3)              2 partials
  //          p = 513: 258..513 -> [1, 3)              2 partials
  //   seq 1, p = 1000: 745..1000 -> [2, 4)            2 partials (not 0 and 1)
  //   seq 2, p = 100: 0..100 -> [0, 1)                1 partition
  StepBatch batch;
  batch.num_seqs = 3;
  batch.num_tokens = 6;
  batch.positions = {510, 511, 512, 513, 1000, 100};
  batch.query_start = {0, 4, 5, 6};
  const gpu::AttentionPlan plan = gpu::plan_attention(batch, 4, 1000, 256);
  const std::vector<gpu::AttentionWorkItem> expected_items = {
      {0, 0, 2, 0}, {0, 0, 2, 1},  // tile {510, 511}: [min(0, 1), max(2, 2))
      {0, 2, 2, 1}, {0, 2, 2, 2},  // tile {512, 513}
      {1, 4, 1, 2}, {1, 4, 1, 3},  // the decode at 1000: 2 partitions, not 4
      {2, 5, 1, 0}};
  REQUIRE(plan.items.size() == expected_items.size());
  for (std::size_t i = 0; i < expected_items.size(); ++i) {
    CAPTURE(i);
    CHECK(same_item(plan.items[i], expected_items[i]));
  }
  CHECK(plan.partial_index == std::vector<int32_t>{0, 0, 2, 4, 6, 0});
  REQUIRE(plan.launches.size() == 1);
  CHECK(plan.launches[0].num_partials == 8);

  // 4 slots: tile {510, 511} (2 slots) alone, tile {512, 513} (4) alone, then seq 1 (2) and seq 2 (0).
  const gpu::AttentionPlan cut = gpu::plan_attention(batch, 4, 4, 256);
  REQUIRE(cut.items.size() == expected_items.size());
  REQUIRE(cut.launches.size() == 3);
  const int32_t expected_launches[3][5] = {{0, 2, 0, 2, 2}, {2, 4, 2, 4, 4}, {4, 7, 4, 6, 2}};
  for (std::size_t l = 0; l < 3; ++l) {
    CAPTURE(l);
    const gpu::AttentionLaunch& launch = cut.launches[l];
    CHECK(std::vector<int32_t>{launch.item_begin, launch.item_end, launch.token_begin, launch.token_end,
                               launch.num_partials} ==
          std::vector<int32_t>(std::begin(expected_launches[l]), std::end(expected_launches[l])));
  }
  CHECK(cut.partial_index == std::vector<int32_t>{0, 0, 0, 2, 0, 0});

  CHECK(gpu::attention_window_start(255, 256) == 0);
  CHECK(gpu::attention_window_start(256, 256) == 1);
  CHECK(gpu::attention_first_partition(511, 256) == 1);
  CHECK(gpu::attention_first_partition(511, 0) == 0);
  CHECK(gpu::attention_first_partition(511, 257) == 0);
}

TEST_CASE("attention plan with a window: a 4,000-token context with W = 512 runs 3 partitions, not 16") {
  StepBatch batch;
  batch.num_seqs = 1;
  batch.num_tokens = 1;
  batch.positions = {3999};  // window 3488..3999: partitions 13, 14, 15
  batch.query_start = {0, 1};
  const gpu::AttentionPlan plan = gpu::plan_attention(batch, 1, 1000, 512);
  REQUIRE(plan.items.size() == 3);
  for (int32_t i = 0; i < 3; ++i) CHECK(plan.items[static_cast<std::size_t>(i)].partition == 13 + i);
  REQUIRE(plan.launches.size() == 1);
  CHECK(plan.launches[0].num_partials == 3);
  CHECK(gpu::plan_attention(batch, 1, 1000, 0).items.size() == 16);
}

// Checks a plan against the rules of attention_plan.h from the positions alone: each
// launch's items and tokens follow on from the last; each tile runs exactly the partitions
// [min first, max end) of its tokens, in order; in each launch the tokens that read more than
// one partition own disjoint runs of partial slots, one per partition read, that fill
// [0, num_partials) with num_partials <= max_partials.
void check_plan_rules(const StepBatch& batch, const gpu::AttentionPlan& plan, int32_t group, int64_t max_partials,
                      int32_t window) {
  const int32_t tile_size = gpu::attention_queries_per_item(group);
  std::vector<gpu::AttentionWorkItem> expected;
  for (int32_t s = 0; s < batch.num_seqs; ++s)
    for (int32_t first = batch.query_start[static_cast<std::size_t>(s)];
         first < batch.query_start[static_cast<std::size_t>(s) + 1]; first += tile_size) {
      const int32_t num_queries = std::min(tile_size, batch.query_start[static_cast<std::size_t>(s) + 1] - first);
      int32_t lo = INT32_MAX, hi = 0;
      for (int32_t t = first; t < first + num_queries; ++t) {
        const int32_t p = batch.positions[static_cast<std::size_t>(t)];
        // Independent of the header's helpers: partitions of positions max(0, p - W + 1)..p.
        const int32_t start = window > 0 ? std::max(0, p - window + 1) : 0;
        lo = std::min(lo, start / gpu::kAttentionPartitionTokens);
        hi = std::max(hi, p / gpu::kAttentionPartitionTokens + 1);
      }
      for (int32_t p = lo; p < hi; ++p) expected.push_back({s, first, num_queries, p});
    }
  REQUIRE(plan.items.size() == expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i) {
    CAPTURE(i);
    REQUIRE(same_item(plan.items[i], expected[i]));
  }
  REQUIRE(!plan.launches.empty());
  CHECK(plan.launches.front().item_begin == 0);
  CHECK(plan.launches.front().token_begin == 0);
  CHECK(plan.launches.back().item_end == static_cast<int32_t>(plan.items.size()));
  CHECK(plan.launches.back().token_end == batch.num_tokens);
  for (std::size_t l = 0; l < plan.launches.size(); ++l) {
    CAPTURE(l);
    const gpu::AttentionLaunch& launch = plan.launches[l];
    if (l > 0) {
      CHECK(launch.item_begin == plan.launches[l - 1].item_end);
      CHECK(launch.token_begin == plan.launches[l - 1].token_end);
    }
    CHECK(launch.item_begin < launch.item_end);
    for (int32_t i = launch.item_begin; i < launch.item_end; ++i) {
      const gpu::AttentionWorkItem& item = plan.items[static_cast<std::size_t>(i)];
      CHECK(item.first_token >= launch.token_begin);
      CHECK(item.first_token + item.num_queries <= launch.token_end);
    }
    CHECK(launch.num_partials <= max_partials);
    std::vector<int32_t> owners(static_cast<std::size_t>(launch.num_partials), 0);
    for (int32_t t = launch.token_begin; t < launch.token_end; ++t) {
      const int32_t p = batch.positions[static_cast<std::size_t>(t)];
      const int32_t start = window > 0 ? std::max(0, p - window + 1) : 0;
      const int32_t parts = p / gpu::kAttentionPartitionTokens + 1 - start / gpu::kAttentionPartitionTokens;
      if (parts == 1) continue;
      for (int32_t k = 0; k < parts; ++k) {
        const int32_t slot = plan.partial_index[static_cast<std::size_t>(t)] + k;
        REQUIRE(slot >= 0);
        REQUIRE(slot < launch.num_partials);
        ++owners[static_cast<std::size_t>(slot)];
      }
    }
    CHECK(std::all_of(owners.begin(), owners.end(), [](int32_t n) { return n == 1; }));
  }
}

TEST_CASE("attention plan: random batches keep the plan's rules at every window and workspace") {
  std::mt19937 rng(2024);
  for (int trial = 0; trial < 300; ++trial) {
    // Up to 5 sequences, each a chunk of 1 to 600 tokens after 0 to 3,000 cached ones.
    StepBatch batch;
    batch.num_seqs = 1 + static_cast<int32_t>(rng() % 5);
    batch.query_start = {0};
    for (int32_t s = 0; s < batch.num_seqs; ++s) {
      const auto cached = static_cast<int32_t>(rng() % 3000);
      const auto chunk = static_cast<int32_t>(1 + (rng() % 3 == 0 ? rng() % 600 : 0));
      for (int32_t i = 0; i < chunk; ++i) batch.positions.push_back(cached + i);
      batch.query_start.push_back(static_cast<int32_t>(batch.positions.size()));
    }
    batch.num_tokens = static_cast<int32_t>(batch.positions.size());
    const int32_t windows[] = {0, 1, 6, 37, 256, 300, 512, 4096};
    const int32_t window = windows[rng() % 8];
    const int32_t group = 1 + static_cast<int32_t>(rng() % 8);
    const int64_t one_tile = int64_t{gpu::attention_queries_per_item(group)} * gpu::attention_partitions(3600);
    const int64_t max_partials = one_tile + static_cast<int64_t>(rng() % 3 == 0 ? rng() % 5000 : rng() % 40);
    CAPTURE(trial);
    CAPTURE(window);
    CAPTURE(group);
    CAPTURE(max_partials);
    check_plan_rules(batch, gpu::plan_attention(batch, group, max_partials, window), group, max_partials, window);
  }
}

TEST_CASE("attention plan: window 0, and a window longer than every context, give today's plan") {
  StepBatch batch;
  batch.num_seqs = 2;
  batch.num_tokens = 4;
  batch.positions = {254, 255, 256, 600};
  batch.query_start = {0, 3, 4};
  for (const int32_t window : {0, 601, 100000}) {
    CAPTURE(window);
    const gpu::AttentionPlan plan = gpu::plan_attention(batch, 4, 3, window);
    REQUIRE(plan.items.size() == 6);
    const std::vector<gpu::AttentionWorkItem> expected_items = {{0, 0, 2, 0}, {0, 2, 1, 0}, {0, 2, 1, 1},
                                                                {1, 3, 1, 0}, {1, 3, 1, 1}, {1, 3, 1, 2}};
    for (std::size_t i = 0; i < expected_items.size(); ++i) CHECK(same_item(plan.items[i], expected_items[i]));
    CHECK(plan.partial_index == std::vector<int32_t>{0, 0, 0, 0});
    REQUIRE(plan.launches.size() == 2);
    CHECK(plan.launches[0].num_partials == 2);
    CHECK(plan.launches[1].num_partials == 3);
  }
}

TEST_CASE("KV write and paged attention match the CPU reference, the same bits at every block size") {
  REQUIRE_GPU();
  for (const AttentionShape shape : {AttentionShape{64, 3, 3}, AttentionShape{128, 2, 4}, AttentionShape{64, 1, 8},
                                     AttentionShape{128, 4, 1}, AttentionShape{96, 2, 4}, AttentionShape{96, 4, 1}})
    check_block_sizes(shape, kAttentionTolerance, kSteps, AttentionCase{}, {1, 8, 32});
}

TEST_CASE("bfloat16 KV cache and output stay within bfloat16 rounding of the CPU reference") {
  REQUIRE_GPU();
  for (const AttentionShape shape : {AttentionShape{128, 2, 4}, AttentionShape{96, 4, 1}, AttentionShape{96, 2, 4}})
    for (int32_t block_size : {1, 16}) check_steps<__nv_bfloat16>(block_size, shape, kBf16AttentionTolerance);
}

TEST_CASE("float16 KV cache and output stay within float16 rounding of the CPU reference") {
  REQUIRE_GPU();
  for (const AttentionShape shape : {AttentionShape{128, 2, 4}, AttentionShape{64, 3, 3}, AttentionShape{256, 1, 4}})
    for (int32_t block_size : {1, 16}) check_steps<__half>(block_size, shape, kF16AttentionTolerance);
  check_steps<__half>(16, AttentionShape{128, 2, 4}, kF16AttentionTolerance, kWindowSteps, AttentionCase{300});
}

// Every Gemma layer has head dimension 256, and its window layers run on this kernel in
// every dtype (the tensor-core kernel takes no window).
TEST_CASE(
    "head dim 256 (Gemma): float32 at every block size with and without a window and with a soft-cap; "
    "bfloat16 with a window") {
  REQUIRE_GPU();
  // Gemma 3 1B's heads (4 query heads on 1 KV head, window 512) and Gemma 2's (2 per KV head).
  for (const AttentionShape shape : {AttentionShape{256, 1, 4}, AttentionShape{256, 2, 2}}) {
    check_block_sizes(shape, kAttentionTolerance, kSteps, AttentionCase{}, {1, 32});
    check_block_sizes(shape, kAttentionTolerance, kWindowSteps, AttentionCase{512}, {1});
  }
  check_block_sizes(AttentionShape{256, 2, 2}, kSoftcapTolerance, kWindowSteps,
                    AttentionCase{300, 50.0f, kSoftcapQScale}, {1});
  for (int32_t block_size : {1, 16})
    check_steps<__nv_bfloat16>(block_size, AttentionShape{256, 1, 4}, kBf16AttentionTolerance, kWindowSteps,
                               AttentionCase{512});
}

TEST_CASE("sliding windows: each query reads its window only, never a block every window has passed") {
  REQUIRE_GPU();
  for (int32_t window : {6, 37, 300, 512})
    for (const AttentionShape shape : {AttentionShape{128, 2, 4}, AttentionShape{64, 4, 1}})
      check_block_sizes(shape, kAttentionTolerance, kWindowSteps, AttentionCase{window}, {1, 32});
  check_steps<__nv_bfloat16>(16, AttentionShape{96, 2, 4}, kBf16AttentionTolerance, kWindowSteps, AttentionCase{300});
}

TEST_CASE("soft-capped scores (Gemma 2), with and without a window") {
  REQUIRE_GPU();
  for (int32_t window : {0, 37, 300})
    check_block_sizes(AttentionShape{128, 2, 4}, kSoftcapTolerance, kWindowSteps,
                      AttentionCase{window, 50.0f, kSoftcapQScale}, {1});
  check_steps<__nv_bfloat16>(16, AttentionShape{128, 2, 4}, kBf16AttentionTolerance, kWindowSteps,
                             AttentionCase{37, 50.0f, kSoftcapQScale});
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
  gpu::launch_copy_blocks(
      gpu::BlockCopyArgs{first.as<BlockCopy>(), 2, d.as<std::byte>(), pool_bytes, num_pools, block_floats * 4},
      nullptr);
  gpu::launch_copy_blocks(
      gpu::BlockCopyArgs{second.as<BlockCopy>(), 1, d.as<std::byte>(), pool_bytes, num_pools, block_floats * 4},
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
