// MaskedLmTask's offers to the CLI: fill-mask (the MaskFiller capability) and the TorchScript twin.
#include "infer/export_bert.h"
#include "train/tasks/masked_lm_task.h"

namespace nlpzoo {

std::vector<std::string> MaskedLmTask::export_torchscript(const std::string& path, const std::string& config_ini) {
  const auto files = data_.export_files(config_ini);
  export_bert(path, *model_, files);
  return MaskedLmData::names(files);
}

std::vector<std::vector<MaskCandidate>> MaskedLmTask::fill_mask(const std::string& line, int64_t k,
                                                                const torch::Device& device) {
  model_->eval();
  return data_.fill_mask(line, k, device, [&](const torch::Tensor& tokens, const torch::Tensor& segments,
                                              const torch::Tensor& masked) {
    return model_(tokens, segments, masked).mlm_logits;  // [M, V]
  });
}

}  // namespace nlpzoo
