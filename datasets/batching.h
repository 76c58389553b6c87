#pragma once
// Token-budget batching with length bucketing (as fairseq's batch_by_size): examples of
// similar length share a batch, so little of a batch is padding, and a batch holds at most
// `max_tokens` tokens counted with padding (rows x longest row).
#include <torch/torch.h>

#include <cstdint>
#include <vector>

namespace nlpzoo {

/// Groups example indices into batches.
///   lengths[i]: the size that counts for example i (e.g. max(source, target) tokens);
///   max_tokens: budget per batch, padding included; an example longer than the budget gets a
///               batch of its own;
///   max_sentences: cap on rows per batch (0 = none);
///   shuffle: ties in length are broken randomly and the batch order is shuffled, both from
///            `seed` (deterministic; pass a different seed per epoch).
/// Without shuffle, batches come in order of length, ties in index order.
/// Throws std::invalid_argument if max_tokens <= 0.
std::vector<std::vector<int64_t>> make_token_batches(const std::vector<int64_t>& lengths, int64_t max_tokens,
                                                     int64_t max_sentences, bool shuffle, uint64_t seed);

/// Pads sequences to a [B, T] int64 tensor (T = longest), `pad_id` after the tokens.
torch::Tensor pad_sequences(const std::vector<std::vector<int64_t>>& sequences, int64_t pad_id);

}  // namespace nlpzoo

namespace nlpzoo {

/// A sequence as models read it: `ids` cut to max_positions - 1, then EOS (kEosId).
/// `truncated` (if given) tells whether ids were dropped.
std::vector<int64_t> append_eos(std::vector<int64_t> ids, int64_t max_positions, bool* truncated = nullptr);

}  // namespace nlpzoo
