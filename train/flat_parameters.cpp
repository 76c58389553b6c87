#include "train/flat_parameters.h"

#include <stdexcept>
#include <vector>

namespace nlpzoo {

void flatten_parameter_groups(torch::optim::Optimizer& optimizer) {
  torch::NoGradGuard no_grad;
  for (auto& group : optimizer.param_groups()) {
    std::vector<torch::Tensor> values, grads;
    for (const auto& p : group.params()) {
      if (!p.grad().defined() || p.grad().is_sparse())
        throw std::invalid_argument("flatten_parameter_groups: every parameter needs a dense gradient");
      values.push_back(p.detach().reshape(-1));
      grads.push_back(p.grad().reshape(-1));
    }
    auto flat = torch::cat(values).requires_grad_(true);
    flat.mutable_grad() = torch::cat(grads);
    group.params() = {flat};
  }
}

}  // namespace nlpzoo
