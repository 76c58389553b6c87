#include "infer/sampling.h"

#include <ATen/CPUGeneratorImpl.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "core/io.h"
#include "datasets/special_ids.h"

namespace nlpzoo {

void validate(const SamplingOptions& o) {
  // Written as !(valid) so that NaN, which fails every comparison, is rejected too.
  if (!(o.temperature >= 0))
    throw UserError("--temperature: must be >= 0 (0 = always the most probable token), got " +
                    std::to_string(o.temperature));
  if (o.top_k < 0) throw UserError("--top-k: must be >= 0 (0 = no limit), got " + std::to_string(o.top_k));
  if (!(o.top_p > 0 && o.top_p <= 1))
    throw UserError("--top-p: must be in (0, 1] (1 = no limit), got " + std::to_string(o.top_p));
  if (!(o.repetition_penalty > 0) || !std::isfinite(o.repetition_penalty))
    throw UserError("--repetition-penalty: must be a finite number > 0 (1 = off), got " +
                    std::to_string(o.repetition_penalty));
  if (o.no_repeat_ngram_size < 0)
    throw UserError("--no-repeat-ngram-size: must be >= 0 (0 = off), got " + std::to_string(o.no_repeat_ngram_size));
}

std::vector<int64_t> repeated_ngram_ends(const std::vector<int64_t>& tokens, int64_t n) {
  std::vector<int64_t> banned;
  const int64_t len = static_cast<int64_t>(tokens.size());
  if (len < n) return banned;
  const auto tail = tokens.end() - (n - 1);
  for (int64_t i = 0; i + n - 1 < len; ++i)
    if (std::equal(tail, tokens.end(), tokens.begin() + i)) banned.push_back(tokens[i + n - 1]);
  return banned;
}

torch::Tensor penalize_repeats(const torch::Tensor& logits, const std::vector<int64_t>& history,
                               const SamplingOptions& o) {
  auto z = logits.to(torch::kFloat, /*non_blocking=*/false, /*copy=*/true);
  const auto on = torch::TensorOptions(torch::kLong).device(z.device());
  if (o.repetition_penalty != 1.0 && !history.empty()) {
    const auto held = std::get<0>(torch::_unique(torch::tensor(history, torch::kLong))).to(z.device());
    const auto x = z.index_select(0, held);
    z.index_copy_(0, held, torch::where(x > 0, x / o.repetition_penalty, x * o.repetition_penalty));
  }
  if (o.no_repeat_ngram_size > 0) {
    const auto banned = repeated_ngram_ends(history, o.no_repeat_ngram_size);
    if (!banned.empty()) z.index_fill_(0, torch::tensor(banned, on), -std::numeric_limits<float>::infinity());
  }
  return z;
}

torch::Tensor sampling_distribution(const torch::Tensor& logits, const SamplingOptions& o) {
  validate(o);
  TORCH_CHECK(logits.dim() == 1 || logits.dim() == 2, "logits must be [V] or [B, V], got ", logits.sizes());
  const auto z = logits.to(torch::kFloat);
  const int64_t V = z.size(-1);
  if (o.temperature == 0) return torch::one_hot(z.argmax(-1), V).to(torch::kFloat);

  // Shifting by the row maximum leaves softmax unchanged but keeps z / T finite for tiny T.
  auto probs = torch::softmax((z - std::get<0>(z.max(-1, /*keepdim=*/true))) / o.temperature, -1);
  if (o.top_k > 0 && o.top_k < V) {
    const auto best = std::get<1>(probs.topk(o.top_k, -1));  // [.., k]
    const auto keep = torch::zeros_like(probs).scatter_(-1, best, 1.0);
    probs = probs * keep;
    probs = probs / probs.sum(-1, /*keepdim=*/true);
  }
  if (o.top_p < 1) {
    const auto [sorted, order] = probs.sort(-1, /*descending=*/true);
    // A token stays if the more probable ones before it have not reached p yet; the first
    // token has 0 before it, so the set is never empty.
    const auto before = sorted.cumsum(-1) - sorted;
    const auto keep = torch::zeros_like(probs).scatter_(-1, order, before.lt(o.top_p).to(torch::kFloat));
    probs = probs * keep;
    probs = probs / probs.sum(-1, /*keepdim=*/true);
  }
  return probs;
}

torch::Tensor sample_next(const torch::Tensor& logits, const SamplingOptions& o, torch::Generator& generator) {
  validate(o);
  if (o.temperature == 0) return logits.argmax(-1).to(torch::kCPU);
  const auto probs = sampling_distribution(logits, o).to(torch::kCPU);
  const auto rows = probs.dim() == 1 ? probs.unsqueeze(0) : probs;  // [B, V]
  auto ids = torch::multinomial(rows, /*num_samples=*/1, /*replacement=*/false, generator).squeeze(1);  // [B]
  return probs.dim() == 1 ? ids.squeeze(0) : ids;
}

std::vector<int64_t> sample_sequence(CausalDecoder& lm, const std::vector<int64_t>& prompt, int64_t max_tokens,
                                     const SamplingOptions& options, uint64_t seed, bool stop_at_eos) {
  validate(options);
  if (max_tokens < 0) throw UserError("--max-new-tokens: must be >= 0, got " + std::to_string(max_tokens));
  // The caller's training flag survives, whatever happens here.
  struct RestoreMode {
    torch::nn::Module& module;
    bool training;
    ~RestoreMode() { module.train(training); }
  } restore{lm.module(), lm.module().is_training()};
  lm.module().eval();
  torch::NoGradGuard no_grad;
  torch::Generator generator = at::detail::createCPUGenerator(seed);
  std::vector<int64_t> drawn;
  if (max_tokens == 0) return drawn;

  std::vector<int64_t> primer{kEosId};
  primer.insert(primer.end(), prompt.begin(), prompt.end());
  auto next = lm.begin(primer);
  std::vector<int64_t> text(prompt);  // what the repeat rules read
  for (int64_t t = 0;; ++t) {
    const auto never = torch::tensor({kPadId, kBosId}, torch::TensorOptions(torch::kLong).device(next.logits.device()));
    const auto last = penalize_repeats(next.logits, text, options)
                          .index_fill_(0, never, -std::numeric_limits<float>::infinity());  // [V]
    const int64_t id = sample_next(last, options, generator).item<int64_t>();
    if (id == kEosId && stop_at_eos) break;
    drawn.push_back(id);
    text.push_back(id);
    if (t + 1 == max_tokens) break;
    next = lm.step(next.state, id);
  }
  return drawn;
}

}  // namespace nlpzoo
