#pragma once
// The capability "this task's model fills in [MASK] pieces" (masked language models, BERT's
// cloze task, Devlin et al. 2019 sec. 3.1). `nlpzoo fill-mask` works with the run of any task
// that offers it (Task::mask_filler).
#include <torch/torch.h>

#include <cstdint>
#include <string>
#include <vector>

namespace nlpzoo {

/// One candidate for a [MASK]: a vocabulary piece and its probability (softmax of the MLM logits).
struct MaskCandidate {
  std::string piece;
  double probability = 0;
};

class MaskFiller {
 public:
  virtual ~MaskFiller() = default;
  /// For each [MASK] of `line` (raw text; "[MASK]" typed in it is one piece), left to right,
  /// the k most probable pieces, most probable first; none for a [MASK] that falls beyond the
  /// model's positions (the line is cut there, with a warning on stderr naming them). All masks are predicted together, in
  /// eval mode without gradients; the model must already be on `device`. Throws UserError
  /// echoing the line when it holds no [MASK], and for k < 1.
  virtual std::vector<std::vector<MaskCandidate>> fill_mask(const std::string& line, int64_t k,
                                                            const torch::Device& device) = 0;
};

}  // namespace nlpzoo
