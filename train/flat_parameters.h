#pragma once
// The "one flat buffer per parameter group" layout of an optimizer, for measuring it
// (`nlpzoo bench optimizer --flat`, bench/bert.sh). The Trainer does not use it: on CPU the
// per-tensor update of torch::optim::AdamW was the faster one (README "Benchmarks": each
// small tensor's moments stay in cache across AdamW's passes, a flat buffer streams through
// memory on every pass).
#include <torch/torch.h>

namespace nlpzoo {

/// Replaces each parameter group's tensors by one flat leaf tensor holding their values (in
/// group order, flattened), whose gradient holds their gradients likewise, so that the
/// optimizer updates one big tensor per group with the group's options. The parameters
/// themselves are left as they were (the flat tensors are copies). Use it before the first step
/// (the optimizer's state is keyed by tensor). Throws std::invalid_argument when a parameter
/// has no gradient or a sparse one.
void flatten_parameter_groups(torch::optim::Optimizer& optimizer);

}  // namespace nlpzoo
