#include "step_arrays.h"

#include "util/error.h"

namespace pagedgen::gpu {

StepArrayPack::StepArrayPack(const StepBatch& batch, std::size_t num_kinds, bool with_rows,
                             const StepAttentionPlans& plans, std::span<const OverlapToken> overlap_tokens)
    : num_kinds_(num_kinds),
      num_tokens_(batch.num_tokens),
      num_logits_(static_cast<int32_t>(batch.logits_rows.size())),
      num_overlap_tokens_(static_cast<int32_t>(overlap_tokens.size())) {
  PG_CHECK(num_kinds <= kMaxKvKinds, "{} layer kinds, at most {}", num_kinds, kMaxKvKinds);
  if (with_rows) {
    TokenRows& rows = rows_.emplace();
    rows.token_ids = pack_.add(std::span(batch.token_ids));
    rows.positions = pack_.add(std::span(batch.positions));
    for (std::size_t kind = 0; kind < num_kinds; ++kind)
      rows.slots[kind] = pack_.add(batch.kind_slot_mapping(static_cast<KvKindId>(kind)));
    rows.logits_rows = pack_.add(std::span(batch.logits_rows));
  }
  query_start_ = pack_.add(std::span(batch.query_start));
  context_lens_ = pack_.add(std::span(batch.context_lens));
  for (std::size_t kind = 0; kind < num_kinds; ++kind)
    block_tables_[kind] = pack_.add(batch.kind_block_tables(static_cast<KvKindId>(kind)));
  for (std::size_t i = 0; i < plans.cuda_core.size(); ++i) {
    items_[i] = pack_.add(std::span<const AttentionWorkItem>(plans.cuda_core[i].items));
    partial_index_[i] = pack_.add(std::span<const int32_t>(plans.cuda_core[i].partial_index));
  }
  if (plans.tensor) {
    TensorTiles& tensor = tensor_.emplace();
    tensor.tiles = pack_.add(std::span<const TensorAttentionTile>(plans.tensor->tiles));
    tensor.tile_tokens = pack_.add(std::span<const int32_t>(plans.tensor->tile_tokens));
    tensor.num_parts = pack_.add(std::span<const int32_t>(plans.tensor->num_parts));
    tensor.partial_index = pack_.add(std::span<const int32_t>(plans.tensor->partial_index));
  }
  overlap_tokens_ = pack_.add(overlap_tokens);
}

StepArrays StepArrayPack::upload(StagedUpload& upload, cudaStream_t stream) const {
  std::byte* base = upload.upload(pack_, stream);
  StepArrays arrays{};
  if (rows_) {
    arrays.rows = RowArrays{rows_->token_ids.in(base),
                            rows_->positions.in(base),
                            {},
                            rows_->logits_rows.in(base),
                            num_tokens_,
                            num_logits_};
    for (std::size_t kind = 0; kind < num_kinds_; ++kind) arrays.rows.slots[kind] = rows_->slots[kind].in(base);
  }
  AttentionArrays& attention = arrays.attention;
  attention.query_start = query_start_.in(base);
  attention.context_lens = context_lens_.in(base);
  for (std::size_t kind = 0; kind < num_kinds_; ++kind) attention.block_tables[kind] = block_tables_[kind].in(base);
  for (std::size_t i = 0; i < items_.size(); ++i) {
    attention.items[i] = items_[i].in(base);
    attention.partial_index[i] = partial_index_[i].in(base);
  }
  if (tensor_) {
    attention.tiles = tensor_->tiles.in(base);
    attention.tile_tokens = tensor_->tile_tokens.in(base);
    attention.num_parts = tensor_->num_parts.in(base);
    attention.tile_partial_index = tensor_->partial_index.in(base);
  }
  arrays.overlap_tokens = overlap_tokens_.in(base);
  arrays.num_overlap_tokens = num_overlap_tokens_;
  return arrays;
}

}  // namespace pagedgen::gpu
