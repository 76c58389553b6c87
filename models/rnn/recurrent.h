#pragma once
// One wrapper over LibTorch's RNN (tanh), GRU and LSTM so that models choose the cell by an
// option instead of by type. The recurrence is LibTorch's (torch::nn::GRU etc.), except for one
// inference step of a few rows (a decoding step), which runs the same cell equations with
// nlpzoo::linear's matrix-vector products (models/linear.h says why).
#include <torch/torch.h>

#include "core/enum_names.h"

#include <string>

namespace nlpzoo {

enum class CellType { kRnn, kGru, kLstm };
/// The names configs use (core/enum_names.h).
inline constexpr EnumNames<CellType, 3> kCellNames = {{{CellType::kRnn, "rnn"}, {CellType::kGru, "gru"}, {CellType::kLstm, "lstm"}}};

/// Parses "rnn" | "gru" | "lstm". Throws std::invalid_argument naming the bad value.
CellType parse_cell_type(const std::string& name);
std::string to_string(CellType cell);

/// Recurrent state in LibTorch's layout: h (and c for LSTM): [num_layers * dirs, B, H].
/// `c` is undefined for RNN and GRU.
struct RecurrentState {
  torch::Tensor h;
  torch::Tensor c;

  /// Moves the batch to dim 0 ([B, L*dirs, H]) so search can index rows (DecoderState).
  static RecurrentState from_batch_major(const torch::Tensor& h, const torch::Tensor& c);
  torch::Tensor h_batch_major() const { return h.transpose(0, 1).contiguous(); }
  torch::Tensor c_batch_major() const { return c.defined() ? c.transpose(0, 1).contiguous() : c; }
};

struct RecurrentOptions {
  RecurrentOptions(CellType cell, int64_t input_size, int64_t hidden_size)
      : cell_(cell), input_size_(input_size), hidden_size_(hidden_size) {}
  TORCH_ARG(CellType, cell);
  TORCH_ARG(int64_t, input_size);
  TORCH_ARG(int64_t, hidden_size);
  TORCH_ARG(int64_t, num_layers) = 1;
  /// Dropout between stacked layers (LibTorch applies it to all but the last layer's output).
  TORCH_ARG(double, dropout) = 0.0;
  TORCH_ARG(bool, bidirectional) = false;
};

/// A stack of recurrent layers, batch-first. Parameters are named as LibTorch names them
/// (`rnn.weight_ih_l0`, `rnn.weight_hh_l0_reverse`, ...), which export relies on.
class RecurrentImpl : public torch::nn::Module {
 public:
  explicit RecurrentImpl(const RecurrentOptions& options);

  /// x: [B, T, input_size] float. lengths: [B] int64 (CPU) or undefined (no padding).
  /// With lengths, padded steps neither update the state nor produce output (zeros), so a
  /// backward direction starts at each row's last real token.
  /// Returns output [B, T, dirs*hidden_size] and the final state.
  /// One step (T = 1, no lengths, one direction) in eval mode where linear_uses_gemv holds runs
  /// step_with_gemv: the same equations, rounded as gemv rounds.
  std::tuple<torch::Tensor, RecurrentState> forward(const torch::Tensor& x,
                                                    const torch::Tensor& lengths = {},
                                                    const RecurrentState& state = {});

  const RecurrentOptions& options() const { return options_; }
  /// Every weight of the underlying LibTorch module, in LibTorch's flat order.
  std::vector<torch::Tensor> flat_weights() const;

 private:
  /// PyTorch's cell equations (torch.nn.GRU's docs; Cho et al. 2014 with the reset gate applied
  /// after W_hn, as cuDNN), layer by layer, in ATen's order of operations.
  /// x: [B, 1, input_size]; state undefined = zeros; weights: flat_weights() (per layer w_ih, w_hh,
  /// b_ih, b_hh).
  std::tuple<torch::Tensor, RecurrentState> step_with_gemv(const torch::Tensor& x, const RecurrentState& state,
                                                           const std::vector<torch::Tensor>& weights);

  RecurrentOptions options_;
  torch::nn::RNN rnn_{nullptr};
  torch::nn::GRU gru_{nullptr};
  torch::nn::LSTM lstm_{nullptr};
};
TORCH_MODULE(Recurrent);

}  // namespace nlpzoo
