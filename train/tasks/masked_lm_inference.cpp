// MaskedLmTask's offers to the CLI: fill-mask (the MaskFiller capability) and the TorchScript twin.
#include <algorithm>
#include <iostream>

#include "datasets/english_corpus.h"
#include "core/excerpt.h"
#include "core/io.h"
#include "datasets/special_ids.h"
#include "datasets/wordpiece_model.h"
#include "infer/export_bert.h"
#include "train/tasks/masked_lm_task.h"

namespace nlpzoo {

std::vector<std::string> MaskedLmTask::export_torchscript(const std::string& path, const std::string& config_ini) {
  auto files = tokenizer_export_files(tokenizer());
  files["config.ini"] = config_ini;
  export_bert(path, *model_, files);
  std::vector<std::string> names;
  for (const auto& [name, bytes] : files) names.push_back(name);
  return names;
}

std::vector<int64_t> MaskedLmTask::input_pieces(const std::string& line) const {
  std::string text = line;
  if (normalize_words_) {
    static const std::string kMask = "[MASK]";
    text.clear();
    for (size_t from = 0;;) {
      const size_t at = line.find(kMask, from);
      text += normalize_words(line.substr(from, at == std::string::npos ? std::string::npos : at - from));
      if (at == std::string::npos) break;
      text += " " + kMask + " ";
      from = at + kMask.size();
    }
  }
  const auto pieces = tokenizer_->encode(text);
  const std::string bare_space = "\xE2\x96\x81";
  // A WordPiece vocabulary has no "▁": piece_to_id then gives [UNK], which must stay.
  int64_t space = tokenizer_->piece_to_id(bare_space);
  if (tokenizer_->id_to_piece(space) != bare_space) space = -1;
  std::vector<int64_t> out;
  for (size_t i = 0; i < pieces.size(); ++i)
    if (!(pieces[i] == space && i + 1 < pieces.size() && pieces[i + 1] == kMaskId)) out.push_back(pieces[i]);
  return out;
}

std::vector<std::vector<MaskCandidate>> MaskedLmTask::fill_mask(const std::string& line, int64_t k,
                                                                const torch::Device& device) {
  if (k < 1) throw UserError("fill-mask: -k must be at least 1, got " + std::to_string(k));
  const auto pieces = input_pieces(line);
  if (std::find(pieces.begin(), pieces.end(), kMaskId) == pieces.end())
    throw UserError("fill-mask: no [MASK] in the line \"" + excerpt(line) +
                    "\" (write [MASK] where a piece should be guessed)");
  const int64_t max_positions = model_->bert->options().max_positions();
  auto input = pair_input(pieces, {}, max_positions);
  const auto masks_in = [](const std::vector<int64_t>& ids) { return std::count(ids.begin(), ids.end(), kMaskId); };
  const int64_t asked = masks_in(pieces), seen = masks_in(input.tokens);
  if (input.truncated)
    std::cerr << "warning: the line has " << pieces.size() + 2 << " pieces with [CLS] and [SEP], more than max_positions = "
              << max_positions << ", and was cut"
              << (seen < asked ? "; [MASK] " + std::to_string(seen + 1) + (asked > seen + 1 ? "-" + std::to_string(asked) : "") +
                                     " of " + std::to_string(asked) + " fall beyond it and get no answer"
                               : "")
              << ": \"" << excerpt(line) << "\"" << std::endl;
  torch::NoGradGuard no_grad;
  model_->eval();
  auto tokens = torch::tensor(input.tokens, torch::kLong).unsqueeze(0).to(device);  // [1, S]
  auto masked = tokens == kMaskId;                                                   // [1, S]
  auto logits = model_(tokens, torch::zeros_like(tokens), masked).mlm_logits;        // [M, V]
  const int64_t top = std::min<int64_t>(k, logits.size(1));
  auto [probs, ids] = torch::softmax(logits.to(torch::kFloat), -1).topk(top, -1);    // [M, top]
  probs = probs.cpu();
  ids = ids.cpu();
  std::vector<std::vector<MaskCandidate>> out(static_cast<size_t>(asked));  // the cut masks' rows stay empty
  for (int64_t m = 0; m < logits.size(0); ++m)
    for (int64_t j = 0; j < top; ++j)
      out[m].push_back({tokenizer_->id_to_piece(ids[m][j].item<int64_t>()), probs[m][j].item<double>()});
  return out;
}

}  // namespace nlpzoo
