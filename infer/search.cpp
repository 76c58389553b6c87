#include "infer/search.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "core/io.h"
#include "datasets/batching.h"
#include "datasets/special_ids.h"
#include "infer/sampling.h"  // repeated_ngram_ends

namespace nlpzoo {

namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

void validate_length_options(const SearchOptions& o) {
  if (o.max_length < 1)
    throw UserError("--max-length must be >= 1 (got " + std::to_string(o.max_length) + ")");
  if (!(o.max_length_ratio >= 0) || !std::isfinite(o.max_length_ratio))
    throw UserError("--max-length-ratio must be a finite number >= 0 (got " +
                    std::to_string(o.max_length_ratio) + ")");
  if (!std::isfinite(o.length_penalty))
    throw UserError("--length-penalty must be a finite number (got " + std::to_string(o.length_penalty) + ")");
  if (o.min_length < 0) throw UserError("--min-length must be >= 0 (got " + std::to_string(o.min_length) + ")");
  if (o.no_repeat_ngram_size < 0)
    throw UserError("--no-repeat-ngram-size must be >= 0 (got " + std::to_string(o.no_repeat_ngram_size) + ")");
  if (!(o.repetition_penalty > 0) || !std::isfinite(o.repetition_penalty))
    throw UserError("--repetition-penalty must be a finite number > 0 (got " + std::to_string(o.repetition_penalty) +
                    "); 1 = off");
}

void check_source(const torch::Tensor& src) {
  TORCH_CHECK(src.dim() == 2, "search: src must be [B, S], got ", src.sizes());
  TORCH_CHECK(src.scalar_type() == torch::kLong, "search: src must be int64, got ", src.scalar_type());
}

// Non-pad tokens per source row, on the host.
std::vector<int64_t> source_lengths(const torch::Tensor& src) {
  auto lens = src.ne(kPadId).sum(1).to(torch::kCPU, torch::kLong).contiguous();
  return std::vector<int64_t>(lens.data_ptr<int64_t>(), lens.data_ptr<int64_t>() + lens.numel());
}

int64_t max_target_length(int64_t source_length, const SearchOptions& o) {
  double bound = std::floor(o.max_length_ratio * static_cast<double>(source_length) +
                            static_cast<double>(o.max_length_offset));
  // Compare in double first: a huge ratio must not overflow the int64 conversion.
  int64_t len = bound >= static_cast<double>(o.max_length) ? o.max_length : static_cast<int64_t>(bound);
  return std::max<int64_t>(1, len);
}

torch::Tensor long_tensor(const std::vector<int64_t>& values, const torch::Device& device) {
  return torch::tensor(values, torch::kLong).to(device);
}

// The log-probs of step t (1-based: every live hypothesis has t - 1 tokens) as `dtype`, with
// the tokens that may not come next at -inf: PAD and BOS always, EOS while the hypothesis is
// shorter than min_length. Beam search sums them in float64, so that ranking and the reported
// log_prob are the same sums, added in the same order; greedy only takes each row's maximum,
// which float64 would not change (the conversion is exact and keeps the order).
torch::Tensor usable_log_probs(const torch::Tensor& log_probs, int64_t vocab, int64_t t, const SearchOptions& o,
                               torch::ScalarType dtype) {
  TORCH_CHECK(log_probs.dim() == 2 && log_probs.size(1) == vocab, "search: log_probs must be [N, ", vocab,
              "], got ", log_probs.sizes());
  std::vector<int64_t> ids = {kPadId, kBosId};
  if (t - 1 < o.min_length) ids.push_back(kEosId);
  auto banned = torch::tensor(ids, torch::TensorOptions().dtype(torch::kLong)).to(log_probs.device());
  // One copy, filled in place (to() and an out-of-place fill made two: 20 MB each a step at
  // beam 5, batch 64).
  return log_probs.to(dtype, /*non_blocking=*/false, /*copy=*/true).index_fill_(1, banned, kNegInf);
}

// Sets log_probs[r][token] = -inf for each row's repeated n-gram ends (no_repeat_ngram_size).
// rows[r] is row r's tokens so far.
void block_repeated_ngrams(torch::Tensor& log_probs, const std::vector<const std::vector<int64_t>*>& rows,
                           const SearchOptions& o) {
  if (o.no_repeat_ngram_size < 1) return;
  std::vector<int64_t> flat;
  const int64_t vocab = log_probs.size(1);
  for (size_t r = 0; r < rows.size(); ++r)
    for (int64_t token : repeated_ngram_ends(*rows[r], o.no_repeat_ngram_size))
      flat.push_back(static_cast<int64_t>(r) * vocab + token);
  if (flat.empty()) return;
  log_probs.view(-1).index_fill_(0, long_tensor(flat, log_probs.device()), kNegInf);
}

// Multiplies log_probs[r][token] by repetition_penalty once for each distinct token row r
// already holds (SearchOptions::repetition_penalty).
void penalize_repeated_tokens(torch::Tensor& log_probs, const std::vector<const std::vector<int64_t>*>& rows,
                              const SearchOptions& o) {
  if (o.repetition_penalty == 1.0) return;
  std::vector<int64_t> flat;
  const int64_t vocab = log_probs.size(1);
  for (size_t r = 0; r < rows.size(); ++r) {
    std::vector<int64_t> held(*rows[r]);
    std::sort(held.begin(), held.end());
    held.erase(std::unique(held.begin(), held.end()), held.end());
    for (int64_t token : held) flat.push_back(static_cast<int64_t>(r) * vocab + token);
  }
  if (flat.empty()) return;
  auto index = long_tensor(flat, log_probs.device());
  auto all = log_probs.view(-1);
  all.index_put_({index}, all.index({index}).mul_(o.repetition_penalty));
}

// Attention of a step on the host as [N, S] float, or undefined when not kept.
torch::Tensor host_attention(const DecoderStep& step, bool keep) {
  if (!keep || !step.attention.defined()) return {};
  return step.attention.to(torch::kCPU, torch::kFloat).contiguous();
}

std::vector<float> attention_row(const torch::Tensor& attention, int64_t row, int64_t source_length) {
  auto acc = attention.accessor<float, 2>();
  int64_t n = std::min<int64_t>(source_length, attention.size(1));
  std::vector<float> out(n);
  for (int64_t i = 0; i < n; ++i) out[i] = acc[row][i];
  return out;
}

// A live beam entry: tokens so far and their summed log-prob (-inf for a placeholder that
// fills a beam the model left short of candidates).
struct Beam {
  std::vector<int64_t> tokens;
  std::vector<double> token_log_probs;
  double log_prob = kNegInf;
  std::vector<std::vector<float>> attention;
};

Hypothesis make_hypothesis(std::vector<int64_t> tokens, std::vector<double> token_log_probs, double log_prob,
                           bool finished, std::vector<std::vector<float>> attention, const SearchOptions& o) {
  Hypothesis h;
  h.tokens = std::move(tokens);
  h.token_log_probs = std::move(token_log_probs);
  h.log_prob = log_prob;
  h.finished = finished;
  h.length = static_cast<int64_t>(h.tokens.size()) + (finished ? 1 : 0);
  // Length 0 only for greedy's stuck row (no possible first token), whose log_prob is -inf.
  h.score = h.length > 0 ? log_prob / length_penalty(h.length, o.length_penalty, o.length_penalty_form) : log_prob;
  h.attention = std::move(attention);
  return h;
}

// The n-th best score in `pool` (n >= 1, pool.size() >= n).
double nth_best_score(const std::vector<Hypothesis>& pool, int64_t n) {
  std::vector<double> scores;
  scores.reserve(pool.size());
  for (const auto& h : pool) scores.push_back(h.score);
  std::nth_element(scores.begin(), scores.begin() + (n - 1), scores.end(), std::greater<double>());
  return scores[n - 1];
}

// The best score a live hypothesis with summed log-prob `log_prob` and `tokens` tokens can
// still reach when it must end by `max_len`. See beam_search's stopping rule.
double score_bound(double log_prob, int64_t tokens, int64_t max_len, const SearchOptions& o) {
  double lp_short = length_penalty(tokens + 1, o.length_penalty, o.length_penalty_form);
  double lp_long = length_penalty(max_len, o.length_penalty, o.length_penalty_form);
  // log_prob <= 0: dividing by the larger penalty brings it closest to zero.
  return log_prob / std::max(lp_short, lp_long);
}

}  // namespace

void validate_search_options(const SearchOptions& o) {
  if (o.beam_size < 1) throw UserError("--beam-size must be >= 1 (got " + std::to_string(o.beam_size) + ")");
  if (o.n_best < 1 || o.n_best > o.beam_size)
    throw UserError("--n-best must be between 1 and --beam-size (" + std::to_string(o.beam_size) + "), got " +
                    std::to_string(o.n_best));
  validate_length_options(o);
}

double length_penalty(int64_t length, double alpha, LengthPenaltyForm form) {
  if (length < 1) throw std::invalid_argument("length_penalty: length must be >= 1, got " + std::to_string(length));
  double len = static_cast<double>(length);
  switch (form) {
    case LengthPenaltyForm::kCourse:
      return std::pow(len, alpha);
    case LengthPenaltyForm::kGnmt:
      return std::pow((5.0 + len) / 6.0, alpha);
  }
  throw std::invalid_argument("length_penalty: unknown form");
}

LengthPenaltyForm parse_length_penalty_form(const std::string& name) {
  if (name == "course") return LengthPenaltyForm::kCourse;
  if (name == "gnmt") return LengthPenaltyForm::kGnmt;
  throw UserError("--length-penalty-form: unknown value '" + name + "' (expected course | gnmt)");
}

EarlyStopping parse_early_stopping(const std::string& name) {
  if (name == "never") return EarlyStopping::kNever;
  if (name == "beam") return EarlyStopping::kBeam;
  throw UserError("--early-stopping: unknown value '" + name + "' (expected never | beam)");
}

std::vector<Hypothesis> greedy_search(IncrementalDecoder& model, const torch::Tensor& src,
                                      const SearchOptions& options) {
  validate_length_options(options);
  check_source(src);
  torch::NoGradGuard no_grad;
  const int64_t batch = src.size(0);
  std::vector<Hypothesis> out(batch);
  if (batch == 0) return out;
  const auto device = src.device();
  const int64_t vocab = model.target_vocab_size();
  const auto src_len = source_lengths(src);

  struct Row {
    std::vector<int64_t> tokens;
    std::vector<double> token_log_probs;
    double log_prob = 0;
    std::vector<std::vector<float>> attention;
  };
  std::vector<Row> rows(batch);
  std::vector<int64_t> live(batch);  // sentence of each row of `state`
  for (int64_t b = 0; b < batch; ++b) live[b] = b;
  DecoderState state = model.init(src);

  for (int64_t t = 1; !live.empty(); ++t) {
    std::vector<int64_t> prev(live.size());
    std::vector<const std::vector<int64_t>*> prefixes(live.size());
    for (size_t r = 0; r < live.size(); ++r) {
      const auto& toks = rows[live[r]].tokens;
      prev[r] = toks.empty() ? kBosId : toks.back();
      prefixes[r] = &toks;
    }
    DecoderStep step = model.step(state, long_tensor(prev, device));
    auto usable = usable_log_probs(step.log_probs, vocab, t, options, step.log_probs.scalar_type());
    block_repeated_ngrams(usable, prefixes, options);
    penalize_repeated_tokens(usable, prefixes, options);
    auto [best, arg] = usable.max(1);
    best = best.to(torch::kCPU, torch::kDouble).contiguous();
    arg = arg.to(torch::kCPU).contiguous();
    auto attention = host_attention(step, options.keep_attention);

    std::vector<int64_t> keep_rows, next_live;
    for (size_t r = 0; r < live.size(); ++r) {
      const int64_t b = live[r];
      Row& row = rows[b];
      const int64_t token = arg.data_ptr<int64_t>()[r];
      // No possible token (a model whose only finite log-prob is a banned one): the row ends
      // where it is, cut, with probability 0 (beam search leaves such a hypothesis out).
      const bool stuck = best.data_ptr<double>()[r] == kNegInf;
      const bool eos = token == kEosId && !stuck;
      if (stuck) {
        row.log_prob = kNegInf;
      } else {
        row.log_prob += best.data_ptr<double>()[r];
        row.token_log_probs.push_back(best.data_ptr<double>()[r]);
        if (attention.defined()) row.attention.push_back(attention_row(attention, r, src_len[b]));
        if (!eos) row.tokens.push_back(token);
      }
      if (eos || stuck || t >= max_target_length(src_len[b], options)) {
        out[b] = make_hypothesis(std::move(row.tokens), std::move(row.token_log_probs), row.log_prob, eos,
                                 std::move(row.attention), options);
      } else {
        keep_rows.push_back(static_cast<int64_t>(r));
        next_live.push_back(b);
      }
    }
    // The step's own tensors are gathered even when no row left: the copy is contiguous, and
    // the recurrent kernels give the same numbers as beam search's (which always gathers) only
    // on the same layout. The per-sentence ones (encoder states, attention keys, the
    // Transformer's cross-attention keys and values: most of the bytes) are gathered after the
    // first step, which makes them contiguous as beam search's are, and then only when a row
    // left: re-copying them at every step took 10 MB a step at batch 64 on the GRU model.
    const bool row_left = next_live.size() < live.size();
    live = std::move(next_live);
    if (!live.empty())
      state = step.state.index_select(long_tensor(keep_rows, device), /*reorder_per_sentence=*/row_left || t == 1);
  }
  return out;
}

std::vector<std::vector<Hypothesis>> beam_search(IncrementalDecoder& model, const torch::Tensor& src,
                                                 const SearchOptions& options) {
  validate_search_options(options);
  check_source(src);
  torch::NoGradGuard no_grad;
  const int64_t batch = src.size(0);
  std::vector<std::vector<Hypothesis>> out(batch);
  if (batch == 0) return out;
  const auto device = src.device();
  const int64_t vocab = model.target_vocab_size();
  const int64_t K = options.beam_size;
  const auto src_len = source_lengths(src);
  std::vector<int64_t> max_len(batch);
  for (int64_t b = 0; b < batch; ++b) max_len[b] = max_target_length(src_len[b], options);

  // Every sentence starts with one real beam (the empty prefix) and K - 1 placeholders, so
  // the first step does not return K copies of the same candidate.
  std::vector<std::vector<Beam>> beams(batch, std::vector<Beam>(K));
  for (auto& sentence : beams) sentence[0].log_prob = 0;
  std::vector<std::vector<Hypothesis>> pool(batch);  // finished (and, at the end, cut) ones
  std::vector<int64_t> live(batch);                  // live sentences, in row-block order
  for (int64_t b = 0; b < batch; ++b) live[b] = b;

  DecoderState state = model.init(src).index_select(
      torch::arange(batch, torch::TensorOptions().dtype(torch::kLong).device(device)).repeat_interleave(K));

  for (int64_t t = 1; !live.empty(); ++t) {
    const int64_t n_live = static_cast<int64_t>(live.size());
    // Row a * K + k of `state` holds beam k of sentence live[a].
    std::vector<int64_t> prev(n_live * K);
    std::vector<double> beam_log_prob(n_live * K);
    std::vector<const std::vector<int64_t>*> prefixes(n_live * K);
    for (int64_t a = 0; a < n_live; ++a) {
      for (int64_t k = 0; k < K; ++k) {
        const Beam& beam = beams[live[a]][k];
        prev[a * K + k] = beam.tokens.empty() ? kBosId : beam.tokens.back();
        beam_log_prob[a * K + k] = beam.log_prob;
        prefixes[a * K + k] = &beam.tokens;
      }
    }
    DecoderStep step = model.step(state, long_tensor(prev, device));
    auto usable = usable_log_probs(step.log_probs, vocab, t, options, torch::kDouble);
    block_repeated_ngrams(usable, prefixes, options);
    penalize_repeated_tokens(usable, prefixes, options);
    auto totals = usable + torch::tensor(beam_log_prob, torch::kDouble).to(device).unsqueeze(1);
    // K * V candidates per sentence; 2K of them always hold K non-EOS ones, since each
    // beam contributes at most one EOS candidate.
    const int64_t n_cand = std::min<int64_t>(2 * K, K * vocab);
    auto [values, indices] = totals.view({n_live, K * vocab}).topk(n_cand, /*dim=*/1);
    // Each candidate's own token log-prob, exactly as the model gave it (not total - prefix).
    auto chosen = usable.view({n_live, K * vocab}).gather(1, indices).to(torch::kCPU).contiguous();
    auto chosen_lp = chosen.accessor<double, 2>();
    values = values.to(torch::kCPU).contiguous();
    indices = indices.to(torch::kCPU).contiguous();
    auto value = values.accessor<double, 2>();
    auto index = indices.accessor<int64_t, 2>();
    auto attention = host_attention(step, options.keep_attention);

    std::vector<int64_t> next_rows, next_live;
    for (int64_t a = 0; a < n_live; ++a) {
      const int64_t b = live[a];
      const auto& old = beams[b];
      std::vector<Beam> next;
      std::vector<int64_t> parent_rows;
      for (int64_t c = 0; c < n_cand; ++c) {
        const double total = value[a][c];
        if (total == kNegInf) break;  // sorted: only impossible candidates follow
        const int64_t k = index[a][c] / vocab, token = index[a][c] % vocab, row = a * K + k;
        // Every EOS candidate among the 2K is a finished hypothesis, not only those ranked
        // within the first K (fairseq's and Hugging Face's rule): one ranked K+1..2K can
        // still be the best-scoring result, and keeping it costs nothing.
        const bool beam_full = static_cast<int64_t>(next.size()) >= K;
        if (token != kEosId && beam_full) continue;
        std::vector<std::vector<float>> att;
        if (attention.defined()) {
          att = old[k].attention;
          att.push_back(attention_row(attention, row, src_len[b]));
        }
        auto token_log_probs = old[k].token_log_probs;
        token_log_probs.push_back(chosen_lp[a][c]);
        if (token == kEosId) {
          pool[b].push_back(
              make_hypothesis(old[k].tokens, std::move(token_log_probs), total, true, std::move(att), options));
          continue;
        }
        Beam beam;
        beam.tokens = old[k].tokens;
        beam.tokens.push_back(token);
        beam.token_log_probs = std::move(token_log_probs);
        beam.log_prob = total;
        beam.attention = std::move(att);
        next.push_back(std::move(beam));
        parent_rows.push_back(row);
      }

      bool done = next.empty();
      if (!done && t >= max_len[b]) {
        for (auto& beam : next)
          pool[b].push_back(
              make_hypothesis(std::move(beam.tokens), std::move(beam.token_log_probs), beam.log_prob, false,
                              std::move(beam.attention), options));
        done = true;
      } else if (!done && options.early_stopping == EarlyStopping::kBeam) {
        done = static_cast<int64_t>(pool[b].size()) >= K;
      } else if (!done && static_cast<int64_t>(pool[b].size()) >= options.n_best) {
        const double threshold = nth_best_score(pool[b], options.n_best);
        done = true;
        for (const auto& beam : next) {
          if (score_bound(beam.log_prob, t, max_len[b], options) > threshold) {
            done = false;
            break;
          }
        }
      }
      if (done) continue;

      // Fill a short beam with copies of its best entry that can never be chosen.
      while (static_cast<int64_t>(next.size()) < K) {
        Beam filler;
        filler.tokens = next[0].tokens;
        next.push_back(std::move(filler));
        parent_rows.push_back(parent_rows[0]);
      }
      beams[b] = std::move(next);
      next_live.push_back(b);
      next_rows.insert(next_rows.end(), parent_rows.begin(), parent_rows.end());
    }
    // Beams move only within their sentence's block of K rows, so while the same sentences
    // stay live the per-sentence tensors (encoder outputs) are already in place.
    const bool same_sentences = next_live == live;
    live = std::move(next_live);
    if (!live.empty()) state = step.state.index_select(long_tensor(next_rows, device), /*reorder_per_sentence=*/!same_sentences);
  }

  for (int64_t b = 0; b < batch; ++b) {
    auto& hyps = pool[b];
    std::stable_sort(hyps.begin(), hyps.end(),
                     [](const Hypothesis& x, const Hypothesis& y) { return x.score > y.score; });
    if (static_cast<int64_t>(hyps.size()) > options.n_best) hyps.resize(options.n_best);
    out[b] = std::move(hyps);
  }
  return out;
}

std::vector<std::vector<double>> forced_log_probs(IncrementalDecoder& model, const torch::Tensor& src,
                                                  const std::vector<std::vector<int64_t>>& targets) {
  torch::NoGradGuard no_grad;
  TORCH_CHECK(src.dim() == 2 && src.size(0) == static_cast<int64_t>(targets.size()),
              "forced_log_probs: one source row per target");
  // Each row's tokens then EOS, padded with EOS: a padded step's log-prob is read and dropped.
  std::vector<std::vector<int64_t>> rows;
  for (const auto& t : targets) {
    rows.push_back(t);
    rows.back().push_back(kEosId);
  }
  const auto gold = pad_sequences(rows, kEosId).to(src.device());
  auto state = model.init(src);
  auto prev = torch::full({src.size(0)}, kBosId, torch::dtype(torch::kLong).device(src.device()));
  std::vector<torch::Tensor> columns;
  for (int64_t t = 0; t < gold.size(1); ++t) {
    auto step = model.step(state, prev);
    prev = gold.select(1, t);
    columns.push_back(step.log_probs.gather(1, prev.unsqueeze(1)).squeeze(1));
    state = std::move(step.state);
  }
  const auto all = torch::stack(columns, 1).to(torch::kCPU, torch::kDouble).contiguous();
  std::vector<std::vector<double>> out;
  for (size_t b = 0; b < rows.size(); ++b) {
    const double* row = all[static_cast<int64_t>(b)].data_ptr<double>();
    out.emplace_back(row, row + rows[b].size());
  }
  return out;
}

}  // namespace nlpzoo
