#pragma once
// TorchScript source for the Transformer's sub-layers, shared by the scripted twins built on
// models/transformer/layers.h (the encoder-decoder's, infer/export_transformer.h, and BERT's,
// infer/export_bert.h). Each helper writes the eager module's computation op for op (same
// order of operations, so twins agree with eager within float rounding) as TorchScript that
// reads the parameters the twin holds under scripted_name (infer/script_twin.h).
#include <cstdint>
#include <sstream>
#include <string>

#include "models/transformer/layers.h"
#include "models/transformer/positional.h"

namespace nlpzoo::twin_source {

/// A float literal that TorchScript parses back to the same double (17 significant digits;
/// always with a '.' or an exponent, so "4" does not become an int).
std::string lit(double x);

/// The twin attribute holding eager tensor `eager_name`, as TorchScript: "self.<scripted_name>".
std::string P(const std::string& eager_name);

/// torch.linear(x, <prefix>.weight, <prefix>.bias) as TorchScript.
std::string linear(const std::string& x, const std::string& prefix);

/// What the generated layers depend on (resolved in C++, so the script has no branches on them).
struct LayerShape {
  int64_t d_model = 0;
  int64_t num_heads = 1;
  Activation activation = Activation::kRelu;
  bool pre_norm = false;
  PositionType positions = PositionType::kLearned;
  int64_t max_positions = 0;
  int64_t relative_k = 0;
  double layer_norm_eps = 1e-5;  // ε of every LayerNorm (TransformerLayerOptions::layer_norm_eps)
};

/// The generated source of one twin, line by line. Methods' bodies use the variables the
/// helpers document (x: the residual stream [R, T, D]; allowed/blocked/nothing: key masks).
class Source {
 public:
  explicit Source(const LayerShape& shape);

  std::string str() const { return s_.str(); }
  /// One body line (indented once); raw() writes unindented text (method headers).
  std::ostream& line() { return s_ << "    "; }
  std::ostream& raw() { return s_; }

  bool relative() const { return shape_.positions == PositionType::kRelative; }

  /// torch.layer_norm over d_model with <prefix>.weight/.bias and shape.layer_norm_eps.
  std::string layer_norm(const std::string& x, const std::string& prefix) const;

  /// [R, T, D] -> [R, H, T, d_k], as MultiHeadAttentionImpl::split_heads.
  std::string split(const std::string& x, const std::string& R, const std::string& T) const;

  /// Multi-head attention of `query` [R, T, D] over keys/values already split into heads
  /// (variables k, v: [R, H, S, d_k]) into variable `out` [R, T, D]; weights stay in `w`.
  /// masked: apply the key mask held in `blocked`/`nothing` (see mask_lines). rel: name of
  /// the [T, S] relative index variable, or "" without relative positions.
  void attention(const std::string& mha, const std::string& query, const std::string& k, const std::string& v,
                 const std::string& R, const std::string& T, bool masked, const std::string& rel,
                 const std::string& out);

  /// From `allowed` [R, 1, 1, S] bool: `blocked` (keys to hide) and `nothing` (rows without a
  /// single allowed key, which attend everywhere and are then zeroed, so no NaN), exactly as
  /// scaled_dot_product_attention derives them.
  void mask_lines();

  /// PositionwiseFeedForward `prefix` on y into `out`.
  void ffn(const std::string& prefix, const std::string& y, const std::string& out);

  /// A residual sub-layer on x (pre- or post-LN around `norm`): `body(y)` writes the
  /// sub-layer's output into `a` from its input `y`.
  template <class F>
  void sublayer(const std::string& norm, F&& body) {
    if (shape_.pre_norm) {
      line() << "y = " << layer_norm("x", norm) << "\n";
      body("y");
      line() << "x = x + a\n";
    } else {
      body("x");
      line() << "x = " << layer_norm("x + a", norm) << "\n";
    }
  }

  /// TransformerEncoderImpl::forward of the stack registered under `prefix` (e.g. "encoder",
  /// "bert.encoder") with `num_layers` layers on x [B, S, D] (variables B, S; key masks from
  /// mask_lines; `rel` as for attention), its final LayerNorm included when pre-LN.
  void encoder_stack(const std::string& prefix, int64_t num_layers, const std::string& rel);

  /// The Transformer's input: √d_model E x + P(offset ..) for x [R, T] int64 into `out` [R, T, D]
  /// (sinusoidal positions call the twin's own _sinusoidal method).
  void embed(const std::string& table, const std::string& learned, const std::string& x, const std::string& T,
             const std::string& offset, const std::string& out);

 private:
  const LayerShape shape_;
  const int64_t dk_;
  std::ostringstream s_;
};

}  // namespace nlpzoo::twin_source
