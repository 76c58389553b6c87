#include "infer/twin_transformer_source.h"

#include <cmath>
#include <iomanip>

#include "infer/script_twin.h"

namespace nlpzoo::twin_source {

std::string lit(double x) {
  std::ostringstream s;
  s << std::setprecision(17) << x;
  std::string out = s.str();
  if (out.find_first_of(".e") == std::string::npos) out += ".0";
  return out;
}

std::string P(const std::string& eager_name) { return "self." + scripted_name(eager_name); }

std::string linear(const std::string& x, const std::string& prefix) {
  return "torch.linear(" + x + ", " + P(prefix + ".weight") + ", " + P(prefix + ".bias") + ")";
}

Source::Source(const LayerShape& shape) : shape_(shape), dk_(shape.d_model / shape.num_heads) {}

std::string Source::layer_norm(const std::string& x, const std::string& prefix) const {
  return "torch.layer_norm(" + x + ", [" + std::to_string(shape_.d_model) + "], " + P(prefix + ".weight") + ", " +
         P(prefix + ".bias") + ", " + lit(shape_.layer_norm_eps) + ")";
}

std::string Source::split(const std::string& x, const std::string& R, const std::string& T) const {
  return x + ".view(" + R + ", " + T + ", " + std::to_string(shape_.num_heads) + ", " + std::to_string(dk_) +
         ").transpose(1, 2)";
}

void Source::attention(const std::string& mha, const std::string& query, const std::string& k, const std::string& v,
                       const std::string& R, const std::string& T, bool masked, const std::string& rel,
                       const std::string& out) {
  // Same order of operations as scaled_dot_product_attention: q is scaled, not the scores.
  line() << "q = " << split(linear(query, mha + ".W_Q"), R, T) << " * " << lit(1.0 / std::sqrt(double(dk_))) << "\n";
  line() << "scores = torch.matmul(q, " << k << ".transpose(-2, -1))\n";
  if (!rel.empty()) {
    line() << "ri = " << rel << ".expand_as(scores)\n";
    line() << "scores = scores + torch.matmul(q, " << P(mha + ".relative_keys") << ".t()).gather(-1, ri)\n";
  }
  if (masked)
    line() << "w = torch.softmax(scores.masked_fill(blocked, float('-inf')), -1).masked_fill(nothing, 0.0)\n";
  else
    line() << "w = torch.softmax(scores, -1)\n";
  line() << "o = torch.matmul(w, " << v << ")\n";
  if (!rel.empty()) {
    // Weights bucketed by clipped distance, then one matmul with w^V (Shaw et al. eq. 3).
    line() << "buckets = torch.zeros([" << R << ", " << shape_.num_heads << ", " << T << ", "
           << 2 * shape_.relative_k + 1 << "], dtype=w.dtype, device=w.device).scatter_add(-1, ri, w)\n";
    line() << "o = o + torch.matmul(buckets, " << P(mha + ".relative_values") << ")\n";
  }
  line() << out << " = "
         << linear("o.transpose(1, 2).reshape(" + R + ", " + T + ", " + std::to_string(shape_.d_model) + ")",
                   mha + ".W_O")
         << "\n";
}

void Source::mask_lines() {
  line() << "nothing = torch.logical_not(allowed.any(-1, True))\n";
  line() << "blocked = torch.logical_not(torch.logical_or(allowed, nothing))\n";
}

void Source::ffn(const std::string& prefix, const std::string& y, const std::string& out) {
  const char* act = shape_.activation == Activation::kGelu ? "torch.gelu" : "torch.relu";
  line() << out << " = " << linear(std::string(act) + "(" + linear(y, prefix + ".linear1") + ")", prefix + ".linear2")
         << "\n";
}

void Source::encoder_stack(const std::string& prefix, int64_t num_layers, const std::string& rel) {
  for (int64_t l = 0; l < num_layers; ++l) {
    const std::string p = prefix + ".layers." + std::to_string(l);
    sublayer(p + ".norm1", [&](const std::string& y) {
      line() << "k = " << split(linear(y, p + ".self_attn.W_K"), "B", "S") << "\n";
      line() << "v = " << split(linear(y, p + ".self_attn.W_V"), "B", "S") << "\n";
      attention(p + ".self_attn", y, "k", "v", "B", "S", /*masked=*/true, rel, "a");
    });
    sublayer(p + ".norm2", [&](const std::string& y) { ffn(p + ".ffn", y, "a"); });
  }
  if (shape_.pre_norm) line() << "x = " << layer_norm("x", prefix + ".final_norm") << "\n";
}

void Source::embed(const std::string& table, const std::string& learned, const std::string& x, const std::string& T,
                   const std::string& offset, const std::string& out) {
  line() << out << " = torch.embedding(" << P(table) << ", " << x << ") * " << lit(std::sqrt(double(shape_.d_model)))
         << "\n";
  switch (shape_.positions) {
    case PositionType::kSinusoidal:
      line() << out << " = " << out << " + self._sinusoidal(" << T << ", " << offset << ")\n";
      break;
    case PositionType::kLearned:
      line() << "assert " << offset << " + " << T << " <= " << shape_.max_positions
             << ", \"position beyond the learned table (max_positions " << shape_.max_positions << ")\"\n";
      line() << out << " = " << out << " + " << P(learned) << "[" << offset << ":" << offset << " + " << T << "]\n";
      break;
    case PositionType::kRelative: break;
  }
}

}  // namespace nlpzoo::twin_source
