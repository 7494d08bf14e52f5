// CPU paged attention and the KV write through the slot mapping: the same bits at every
// block size, for scrambled block ids, alone or batched, in one chunk or many; close to a
// double-precision dense reference; every output element written.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <stdexcept>
#include <vector>

#include "backend/cpu_thread_pool.h"
#include "backend/kv_layout.h"
#include "cpu/fixed_order_dot.h"
#include "cpu/fixed_order_exp.h"
#include "cpu/paged_attention.h"
#include "paged_batch_builder.h"
#include "logits_compare.h"
#include "util/half.h"

using namespace pagedgen;

namespace {

struct Dims {
  std::size_t num_heads;
  std::size_t num_kv_heads;
  std::size_t head_dim;
};

// Deterministic q, k, v of (sequence, position): what a model would have computed.
struct TokenData {
  std::vector<float> q, k, v;
};

TokenData token_data(const Dims& dims, std::size_t seq, std::size_t pos) {
  std::mt19937 rng(static_cast<uint32_t>(seq * 1000 + pos + 17));
  std::normal_distribution<float> dist(0.0f, 1.0f);
  TokenData d;
  d.q.resize(dims.num_heads * dims.head_dim);
  d.k.resize(dims.num_kv_heads * dims.head_dim);
  d.v.resize(dims.num_kv_heads * dims.head_dim);
  for (float& x : d.q) x = dist(rng);
  for (float& x : d.k) x = dist(rng);
  for (float& x : d.v) x = dist(rng);
  return d;
}

// Runs the plan (a list of steps, each a list of (sequence, number of new tokens)) on a
// fresh pool of Kv elements and returns the attention output of every step, concatenated.
template <typename Kv = float>
std::vector<float> run_plan(const Dims& dims, int32_t block_size, std::size_t num_seqs,
                            const std::vector<std::vector<std::pair<std::size_t, std::size_t>>>& plan,
                            std::size_t num_threads) {
  const int32_t num_blocks = 256;
  test::PagedBatchBuilder builder(block_size, num_blocks, static_cast<uint32_t>(block_size) * 7 + 1);
  for (std::size_t s = 0; s < num_seqs; ++s) builder.add_sequence();
  const KvLayout layout{num_blocks, static_cast<int64_t>(dims.num_kv_heads), block_size,
                        static_cast<int64_t>(dims.head_dim)};
  std::vector<Kv> k_pool(static_cast<std::size_t>(layout.elements_per_layer()));
  std::vector<Kv> v_pool(k_pool.size());
  cpu::CpuThreadPool pool(num_threads);
  std::vector<float> all_out;
  for (const auto& step_plan : plan) {
    std::vector<std::pair<std::size_t, std::vector<int32_t>>> chunks;
    for (const auto& [seq, count] : step_plan) chunks.emplace_back(seq, std::vector<int32_t>(count, 0));
    std::vector<std::pair<std::size_t, std::size_t>> token_owner;  // (seq, pos) of each batch token
    for (const auto& [seq, count] : step_plan)
      for (std::size_t i = 0; i < count; ++i) token_owner.emplace_back(seq, builder.num_tokens(seq) + i);
    const StepBatch batch = builder.step(chunks);
    std::vector<float> q, k, v;
    for (const auto& [seq, pos] : token_owner) {
      const TokenData d = token_data(dims, seq, pos);
      q.insert(q.end(), d.q.begin(), d.q.end());
      k.insert(k.end(), d.k.begin(), d.k.end());
      v.insert(v.end(), d.v.begin(), d.v.end());
    }
    std::vector<float> out(q.size(), std::numeric_limits<float>::quiet_NaN());  // poisoned
    cpu::write_kv_cache(cpu::kv_write_args(batch, k.data(), v.data(), k_pool.data(), v_pool.data(), layout));
    const float scale = 1.0f / std::sqrt(static_cast<float>(dims.head_dim));
    cpu::paged_attention(cpu::paged_attention_args(batch, q.data(), static_cast<int32_t>(dims.num_heads), k_pool.data(),
                                                   v_pool.data(), layout, scale, out.data()),
                         pool);
    all_out.insert(all_out.end(), out.begin(), out.end());
  }
  return all_out;
}

// Dense double-precision attention of token (seq, pos) over positions 0..pos.
std::vector<double> reference_attention(const Dims& dims, std::size_t seq, std::size_t pos) {
  const TokenData query = token_data(dims, seq, pos);
  std::vector<TokenData> past;
  for (std::size_t j = 0; j <= pos; ++j) past.push_back(token_data(dims, seq, j));
  const std::size_t group = dims.num_heads / dims.num_kv_heads;
  std::vector<double> out(dims.num_heads * dims.head_dim, 0.0);
  for (std::size_t h = 0; h < dims.num_heads; ++h) {
    const std::size_t kvh = h / group;
    std::vector<double> scores(pos + 1);
    double max_score = -INFINITY;
    for (std::size_t j = 0; j <= pos; ++j) {
      double dot = 0.0;
      for (std::size_t d = 0; d < dims.head_dim; ++d)
        dot += static_cast<double>(query.q[h * dims.head_dim + d]) * past[j].k[kvh * dims.head_dim + d];
      scores[j] = dot / std::sqrt(static_cast<double>(dims.head_dim));
      max_score = std::max(max_score, scores[j]);
    }
    double sum = 0.0;
    for (double& s : scores) sum += (s = std::exp(s - max_score));
    for (std::size_t j = 0; j <= pos; ++j)
      for (std::size_t d = 0; d < dims.head_dim; ++d)
        out[h * dims.head_dim + d] += scores[j] / sum * past[j].v[kvh * dims.head_dim + d];
  }
  return out;
}

// The documented operation order of paged attention, one scalar operation at a time on
// dense per-position K/V: scores by dot_fixed_order_scalar, times scale; max; weights and
// their sum by exp_sum_fixed_order_scalar; o[d] = fma(e_j, v_j[d], o[d]) in increasing j;
// o[d] * (1 / sum). past: positions 0..pos of the sequence (K and V as the pool holds
// them), the query's the last.
std::vector<float> reference_order_attention(const Dims& dims, const std::vector<TokenData>& past) {
  const TokenData& query = past.back();
  const std::size_t pos = past.size() - 1;
  const std::size_t group = dims.num_heads / dims.num_kv_heads;
  const float scale = 1.0f / std::sqrt(static_cast<float>(dims.head_dim));
  std::vector<float> out(dims.num_heads * dims.head_dim, 0.0f);
  for (std::size_t h = 0; h < dims.num_heads; ++h) {
    const std::size_t kvh = h / group;
    std::vector<float> e(pos + 1);
    for (std::size_t j = 0; j <= pos; ++j)
      e[j] = cpu::dot_fixed_order_scalar(&query.q[h * dims.head_dim], &past[j].k[kvh * dims.head_dim], dims.head_dim) *
             scale;
    const float max_score = *std::max_element(e.begin(), e.end());
    const float sum = cpu::exp_sum_fixed_order_scalar(e.data(), e.size(), max_score);
    float* o = &out[h * dims.head_dim];
    for (std::size_t j = 0; j <= pos; ++j)
      for (std::size_t d = 0; d < dims.head_dim; ++d) o[d] = std::fma(e[j], past[j].v[kvh * dims.head_dim + d], o[d]);
    const float inv_sum = 1.0f / sum;
    for (std::size_t d = 0; d < dims.head_dim; ++d) o[d] *= inv_sum;
  }
  return out;
}

using test::same_bits;

}  // namespace

TEST_CASE("paged attention: same bits at every block size, close to the dense reference") {
  // SmolLM2's shape (9 heads on 3 KV heads, head_dim 64), plain MHA, and an odd head_dim.
  for (const Dims dims : {Dims{9, 3, 64}, Dims{4, 4, 16}, Dims{6, 2, 20}}) {
    CAPTURE(dims.num_heads);
    CAPTURE(dims.head_dim);
    // Four ragged sequences prefilled together in one step.
    const std::vector<std::size_t> lengths = {1, 7, 17, 40};
    std::vector<std::pair<std::size_t, std::size_t>> step;
    for (std::size_t s = 0; s < lengths.size(); ++s) step.emplace_back(s, lengths[s]);
    const auto at_bs1 = run_plan(dims, 1, lengths.size(), {step}, 2);
    for (int32_t block_size : {8, 16, 32}) {
      CAPTURE(block_size);
      CHECK(same_bits(run_plan(dims, block_size, lengths.size(), {step}, 2), at_bs1));
    }
    // Every element written (the output was poisoned with NaN) and near the reference.
    double max_diff = 0.0;
    std::size_t offset = 0;
    for (std::size_t s = 0; s < lengths.size(); ++s)
      for (std::size_t pos = 0; pos < lengths[s]; ++pos) {
        const auto ref = reference_attention(dims, s, pos);
        for (double r : ref) {
          REQUIRE(std::isfinite(at_bs1[offset]));
          max_diff = std::max(max_diff, std::abs(at_bs1[offset++] - r));
        }
      }
    CHECK(offset == at_bs1.size());
    MESSAGE("max |paged - double reference| = " << max_diff);
    CHECK(max_diff < 1e-5);
  }
}

TEST_CASE("paged attention: a sequence gives the same bits alone, batched, chunked, on 1 or 2 threads") {
  const Dims dims{9, 3, 64};
  // Sequence 0 (33 tokens) alone in one chunk, on one thread.
  const auto alone = run_plan(dims, 16, 2, {{{0, 33}}}, 1);
  // Batched behind sequence 1 (12 tokens), on two threads: sequence 0's rows come second.
  const auto batched = run_plan(dims, 16, 2, {{{1, 12}, {0, 33}}}, 2);
  const std::size_t row = dims.num_heads * dims.head_dim;
  CHECK(same_bits(std::vector<float>(batched.begin() + 12 * row, batched.end()), alone));
  // In chunks of 7, 7, 7, 7, 5 (chunked prefill), interleaved with sequence 1's decode steps.
  const auto chunked =
      run_plan(dims, 8, 2, {{{0, 7}}, {{1, 3}, {0, 7}}, {{0, 7}, {1, 1}}, {{0, 7}}, {{1, 1}, {0, 5}}}, 2);
  std::vector<float> seq0;
  auto take = [&](std::size_t from, std::size_t count) {
    seq0.insert(seq0.end(), chunked.begin() + static_cast<std::ptrdiff_t>(from * row),
                chunked.begin() + static_cast<std::ptrdiff_t>((from + count) * row));
  };
  // Token rows per step: [0:7) | [7:10) seq1, [10:17) | [17:24), [24] seq1 | [25:32) | [32] seq1, [33:38)
  take(0, 7);
  take(10, 7);
  take(17, 7);
  take(25, 7);
  take(33, 5);
  CHECK(same_bits(seq0, alone));
  // One token at a time (decode) at block size 1.
  std::vector<std::vector<std::pair<std::size_t, std::size_t>>> one_by_one(33, {{0, 1}});
  CHECK(same_bits(run_plan(dims, 1, 1, one_by_one, 2), alone));
}

TEST_CASE("PagedBatchBuilder: a sequence never added or a pool run dry throws, and changes nothing before") {
  // test_gpu_paged_attention's check_steps once stepped sequences it never added: a
  // segfault on the GPU machine, which stopped the test cases after it.
  test::PagedBatchBuilder builder(4, 2, 1u);
  CHECK_THROWS_AS(builder.step({{0, {1}}}), std::out_of_range);
  CHECK_THROWS_AS(builder.num_tokens(0), std::out_of_range);
  CHECK_THROWS_AS(builder.block_table(0), std::out_of_range);
  const std::size_t seq = builder.add_sequence();
  CHECK_THROWS_AS(builder.step({{seq, {1}}, {seq + 1, {2}}}), std::out_of_range);
  CHECK(builder.num_tokens(seq) == 0);
  const StepBatch batch = builder.step({{seq, std::vector<int32_t>(8, 1)}});  // both blocks
  CHECK(batch.num_tokens == 8);
  CHECK(builder.block_table(seq).size() == 2);
  CHECK_THROWS_AS(builder.step({{seq, {1}}}), std::out_of_range);
}

TEST_CASE("write_kv_cache puts each token's heads at its slot and nowhere else") {
  // Block size 4, 2 KV heads, head_dim 3; two tokens at slots 9 (block 2, slot 1) and 4 (block 1, slot 0).
  const KvLayout layout{3, 2, 4, 3};
  StepBatch batch;
  batch.num_tokens = 2;
  batch.block_size = 4;
  batch.slot_mapping = {9, 4};
  const std::vector<float> k = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};  // (2 tokens, 2 heads, 3)
  std::vector<float> v(k.size());
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = -k[i];
  std::vector<float> k_pool(static_cast<std::size_t>(layout.elements_per_layer()), 99.0f);
  std::vector<float> v_pool(k_pool.size(), 99.0f);
  cpu::write_kv_cache(cpu::kv_write_args(batch, k.data(), v.data(), k_pool.data(), v_pool.data(), layout));
  std::vector<float> expected(k_pool.size(), 99.0f);
  // token 0 -> block 2 slot 1: head 0 at 2*24 + 0*12 + 1*3 = 51, head 1 at 63
  for (int d = 0; d < 3; ++d) {
    expected[static_cast<std::size_t>(51 + d)] = k[static_cast<std::size_t>(d)];
    expected[static_cast<std::size_t>(63 + d)] = k[static_cast<std::size_t>(3 + d)];
    // token 1 -> block 1 slot 0: head 0 at 24, head 1 at 36
    expected[static_cast<std::size_t>(24 + d)] = k[static_cast<std::size_t>(6 + d)];
    expected[static_cast<std::size_t>(36 + d)] = k[static_cast<std::size_t>(9 + d)];
  }
  CHECK(k_pool == expected);
  for (float& e : expected)
    if (e != 99.0f) e = -e;
  CHECK(v_pool == expected);
}

// Checks run_plan<Kv> against reference_order_attention on K and V rounded to Kv, all
// sequences prefilled in one step.
template <typename Kv>
void check_operation_order(const Dims& dims, const std::vector<std::size_t>& lengths, int32_t block_size) {
  std::vector<std::pair<std::size_t, std::size_t>> step;
  for (std::size_t s = 0; s < lengths.size(); ++s) step.emplace_back(s, lengths[s]);
  const auto got = run_plan<Kv>(dims, block_size, lengths.size(), {step}, 2);
  std::vector<float> expected;
  for (std::size_t s = 0; s < lengths.size(); ++s) {
    std::vector<TokenData> past;
    for (std::size_t pos = 0; pos < lengths[s]; ++pos) {
      past.push_back(token_data(dims, s, pos));
      for (float& x : past.back().k) x = to_float(from_float<Kv>(x));
      for (float& x : past.back().v) x = to_float(from_float<Kv>(x));
      const auto row = reference_order_attention(dims, past);
      expected.insert(expected.end(), row.begin(), row.end());
    }
  }
  CHECK(same_bits(got, expected));
}

TEST_CASE("paged attention follows its documented operation order bit for bit") {
  // Head dims with and without a tail of 8, of 16 and of the 8- and 4-row score groups;
  // GQA 3 and 1; sequences of one tile of tokens and of several, with rows in one block of
  // the kernel's and in several (300 positions).
  for (const Dims dims : {Dims{9, 3, 64}, Dims{2, 2, 128}, Dims{6, 2, 20}, Dims{3, 1, 8}, Dims{4, 2, 24}}) {
    CAPTURE(dims.head_dim);
    for (int32_t block_size : {1, 16}) {
      CAPTURE(block_size);
      check_operation_order<float>(dims, {1, 5, 23, 70}, block_size);
    }
  }
  check_operation_order<float>(Dims{9, 3, 64}, {300, 9}, 16);
  check_operation_order<float>(Dims{2, 1, 32}, {300}, 8);
}

TEST_CASE("paged attention on float16 and bfloat16 pools follows the same order on the rounded values") {
  for (const Dims dims : {Dims{9, 3, 64}, Dims{6, 2, 20}, Dims{2, 1, 32}}) {
    CAPTURE(dims.head_dim);
    check_operation_order<Float16>(dims, {1, 23, 300}, 16);
    check_operation_order<BFloat16>(dims, {1, 23, 300}, 16);
  }
}

TEST_CASE("exp_fixed: vector and scalar agree bit for bit and stay within 2 ulp of exp") {
  std::vector<float> xs;
  for (float x = -90.0f; x <= 10.0f; x += 0.001953125f) xs.push_back(x);  // 2^-9 steps
  for (float x : {0.0f, -0.0f, -1e-30f, -86.99999f, -87.0f, -87.00001f, -1000.0f}) xs.push_back(x);
  double max_ulps = 0.0;
  std::size_t mismatches = 0;
  for (float x : xs) {
    const float vec = cpu::exp_fixed(x);
    const float ref = cpu::exp_fixed_scalar(x);
    mismatches += std::memcmp(&vec, &ref, sizeof(float)) != 0;
    if (x < -87.0f) {
      CHECK(ref == 0.0f);
      continue;
    }
    const double exact = std::exp(static_cast<double>(x));
    const double ulp = std::nextafter(static_cast<float>(exact), INFINITY) - static_cast<float>(exact);
    max_ulps = std::max(max_ulps, std::abs(ref - exact) / ulp);
  }
  CHECK(mismatches == 0);
  MESSAGE("max error of exp_fixed: " << max_ulps << " ulp");
  CHECK(max_ulps <= 2.0);
  CHECK(cpu::exp_fixed_scalar(0.0f) == 1.0f);
}

TEST_CASE("exp_sum_fixed_order: vector and scalar agree bit for bit, tails included") {
  for (std::size_t n : {1u, 7u, 8u, 9u, 31u, 600u}) {
    std::mt19937 rng(static_cast<uint32_t>(n));
    std::normal_distribution<float> dist(0.0f, 4.0f);
    std::vector<float> a(n);
    for (float& x : a) x = dist(rng);
    const float max_value = *std::max_element(a.begin(), a.end());
    std::vector<float> b = a;
    const float sum_vec = cpu::exp_sum_fixed_order(a.data(), n, max_value);
    const float sum_ref = cpu::exp_sum_fixed_order_scalar(b.data(), n, max_value);
    CAPTURE(n);
    CHECK(std::memcmp(&sum_vec, &sum_ref, sizeof(float)) == 0);
    CHECK(same_bits(a, b));
  }
}
