#include "decode_rows.h"

#include <algorithm>
#include <span>

#include "util/error.h"

namespace pagedgen::gpu {

RowArrays DecodeRows::upload(const StepBatch& batch, int32_t bucket, std::size_t num_kinds, cudaStream_t stream) {
  PG_CHECK(num_kinds <= kMaxKvKinds, "{} layer kinds, at most {}", num_kinds, kMaxKvKinds);
  const auto n = static_cast<std::size_t>(batch.num_tokens);
  const auto b = static_cast<std::size_t>(bucket);
  ids_.assign(batch.token_ids.begin(), batch.token_ids.end());
  ids_.resize(b, 0);
  positions_.assign(batch.positions.begin(), batch.positions.end());
  positions_.resize(b, 0);
  for (std::size_t kind = 0; kind < num_kinds; ++kind) {
    const std::span<const int64_t> slots = batch.kind_slot_mapping(static_cast<KvKindId>(kind));
    slots_[kind].assign(slots.begin(), slots.end());
    slots_[kind].resize(b, -1);
  }
  logits_rows_.resize(b);
  for (std::size_t i = 0; i < b; ++i) logits_rows_[i] = static_cast<int32_t>(i);
  PG_CHECK(n <= b && std::equal(batch.logits_rows.begin(), batch.logits_rows.end(), logits_rows_.begin()),
           "decode step of {} tokens in a bucket of {}", n, b);
  ArrayPack pack;
  const PackedArray<int32_t> ids = pack.add(std::span<const int32_t>(ids_));
  const PackedArray<int32_t> positions = pack.add(std::span<const int32_t>(positions_));
  std::array<PackedArray<int64_t>, kMaxKvKinds> slots{};
  for (std::size_t kind = 0; kind < num_kinds; ++kind) slots[kind] = pack.add(std::span<const int64_t>(slots_[kind]));
  const PackedArray<int32_t> logits_rows = pack.add(std::span<const int32_t>(logits_rows_));
  std::byte* base = upload_.upload(pack, stream);
  RowArrays rows{ids.in(base), positions.in(base), {}, logits_rows.in(base), bucket, bucket};
  for (std::size_t kind = 0; kind < num_kinds; ++kind) rows.slots[kind] = slots[kind].in(base);
  return rows;
}

}  // namespace pagedgen::gpu
