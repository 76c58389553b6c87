#include "models/transformer/positional.h"

#include "core/enum_names.h"

#include <cmath>
#include <stdexcept>

namespace nlpzoo {

PositionType parse_position_type(const std::string& name) { return parse_enum(name, kPositionNames, "positions"); }

std::string to_string(PositionType type) { return enum_name(type, kPositionNames); }

torch::Tensor sinusoidal_table(int64_t length, int64_t d_model, int64_t offset) {
  TORCH_CHECK(d_model >= 1 && length >= 0 && offset >= 0, "bad sinusoidal table request: length ", length,
              ", d_model ", d_model, ", offset ", offset);
  auto dbl = torch::TensorOptions().dtype(torch::kDouble);
  auto pos = torch::arange(offset, offset + length, dbl).unsqueeze(1);  // [L, 1]
  auto two_i = torch::arange(0, d_model, 2, dbl);                       // 2i = 0, 2, 4, ...
  auto angle = pos / torch::pow(10000.0, two_i / static_cast<double>(d_model));  // [L, ceil(d/2)]
  auto pe = torch::zeros({length, d_model}, dbl);
  pe.slice(1, 0, d_model, 2).copy_(torch::sin(angle));
  pe.slice(1, 1, d_model, 2).copy_(torch::cos(angle.slice(1, 0, d_model / 2)));
  return pe.to(torch::kFloat);
}

SinusoidalPositionalEncodingImpl::SinusoidalPositionalEncodingImpl(int64_t d_model, int64_t max_len)
    : d_model_(d_model) {
  table = register_buffer("table", sinusoidal_table(max_len, d_model));
}

torch::Tensor SinusoidalPositionalEncodingImpl::forward(int64_t length, int64_t offset) {
  const int64_t cached = table.size(0);
  if (offset + length <= cached) return table.slice(0, offset, offset + length);
  // Beyond the buffer: the formula has no limit, so neither does the module.
  auto extra = sinusoidal_table(offset + length - std::max(offset, cached), d_model_, std::max(offset, cached))
                   .to(table.device());
  if (offset >= cached) return extra;
  return torch::cat({table.slice(0, offset), extra}, 0);
}

LearnedPositionalEmbeddingImpl::LearnedPositionalEmbeddingImpl(int64_t max_positions, int64_t d_model) {
  weight = register_parameter("weight",
                              torch::randn({max_positions, d_model}) / std::sqrt(static_cast<double>(d_model)));
}

torch::Tensor LearnedPositionalEmbeddingImpl::forward(int64_t length, int64_t offset) {
  TORCH_CHECK(offset + length <= weight.size(0), "position ", offset + length - 1,
              " is beyond the learned table (max_positions ", weight.size(0), ")");
  return weight.slice(0, offset, offset + length);
}

}  // namespace nlpzoo
