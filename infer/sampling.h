#pragma once
// Sampling from a language model: temperature, top-k and nucleus (top-p) filtering of the
// next-token distribution, and the autoregressive loop that draws a continuation token by
// token while carrying the recurrent state.
//
// Filtering order (the one Hugging Face's and fairseq's samplers use):
//   1. temperature T:  p_i = softmax(z / T)_i                (T -> 0: argmax, T = 1: the model)
//   2. top-k:          keep the k most probable tokens, renormalise   (Fan et al. 2018)
//   3. top-p:          keep the smallest set of most probable tokens whose probability
//                      reaches p, renormalise                (Holtzman et al. 2020, "The
//                      Curious Case of Neural Text Degeneration", eq. 3); at least one token.
// Draws use an explicitly seeded CPU generator, so a seed reproduces a sample exactly (same
// model, device and options); the distribution is moved to the CPU before each draw, so the
// model itself may run on any device.
#include <torch/torch.h>

#include <cstdint>
#include <vector>

#include "models/causal_decoder.h"

namespace nlpzoo {

/// How the next token is drawn. The option names in errors are the CLI's (`nlpzoo generate`).
struct SamplingOptions {
  double temperature = 1.0;  // --temperature T >= 0: logits are divided by T; 0 = argmax (greedy)
  int64_t top_k = 0;         // --top-k k >= 0: keep the k most probable tokens; 0 = no limit
  double top_p = 1.0;        // --top-p p in (0, 1]: keep the smallest most-probable set of mass >= p; 1 = all
  // Applied to the logits before the steps above (Hugging Face's logits processors), over the
  // prompt and the tokens drawn so far:
  // --repetition-penalty θ > 0: a token the text already holds has its logit z divided by θ
  // when z > 0 and multiplied by θ otherwise (Keskar et al. 2019, CTRL, sec. 4.1, as Hugging
  // Face applies it); 1 = off.
  double repetition_penalty = 1.0;
  // --no-repeat-ngram-size n >= 0: a token that would complete an n-gram the text already
  // holds is never drawn (fairseq's and Hugging Face's rule); 0 = off.
  int64_t no_repeat_ngram_size = 0;
};

/// Throws UserError naming the flag if temperature < 0, top_k < 0, top_p is outside (0, 1],
/// repetition_penalty is not finite and > 0 (NaN included), or no_repeat_ngram_size < 0.
void validate(const SamplingOptions& options);

/// The tokens that would complete an n-gram `tokens` already contains (n >= 1): every token
/// that followed an earlier occurrence of its last n - 1 tokens (beam search's rule too).
std::vector<int64_t> repeated_ngram_ends(const std::vector<int64_t>& tokens, int64_t n);

/// logits [V] after the repetition penalty and the n-gram ban for the text `history`
/// (SamplingOptions); a copy, float, on the logits' device.
torch::Tensor penalize_repeats(const torch::Tensor& logits, const std::vector<int64_t>& history,
                               const SamplingOptions& options);

/// The filtered next-token distribution (steps 1-3 above). logits: [V] or [B, V] float, on any
/// device; entries of -inf are tokens that can never be drawn. Returns probabilities of the
/// same shape, float, on the same device: zero outside the kept set, each row summing to 1.
/// With temperature 0 each row is one-hot at its argmax (the first one on ties).
/// Throws UserError for invalid options (validate).
torch::Tensor sampling_distribution(const torch::Tensor& logits, const SamplingOptions& options);

/// Draws one token per row from sampling_distribution(logits, options). logits: [V] or
/// [B, V] float. Returns int64 ids on the CPU of shape [] or [B]. Temperature 0 is argmax
/// and does not touch `generator`. generator: a CPU generator
/// (at::detail::createCPUGenerator(seed)). Throws UserError for invalid options.
torch::Tensor sample_next(const torch::Tensor& logits, const SamplingOptions& options, torch::Generator& generator);

/// Samples a continuation of `prompt` from a language model. As in training, where the stream
/// is `pieces(line1) EOS pieces(line2) EOS ...`, a text begins after an EOS: the model reads
/// EOS + prompt (CausalDecoder::begin), then draws one token at a time, feeding each back
/// (CausalDecoder::step), until it draws EOS or has drawn `max_tokens`.
/// PAD and BOS never occur in the training stream, so they are never drawn (their logits are
/// set to -inf, as search does). The repeat rules read the prompt and the drawn tokens.
/// prompt: SentencePiece ids (without EOS). Returns the drawn ids, without the final EOS.
/// The model runs on its own device, in eval mode (dropout off; its training flag is restored
/// afterwards), without gradients. The same seed, options and model give the same tokens.
/// With stop_at_eos false (a model whose EOS is a line break inside a text), a drawn EOS is
/// kept and fed back like any token, and only max_tokens ends the sample.
/// Throws UserError for invalid options or max_tokens < 0 (naming --max-new-tokens).
std::vector<int64_t> sample_sequence(CausalDecoder& lm, const std::vector<int64_t>& prompt, int64_t max_tokens,
                                     const SamplingOptions& options, uint64_t seed, bool stop_at_eos = true);

}  // namespace nlpzoo
