#pragma once
// The affine map every decoding step of models/ runs through: torch::nn::functional::linear,
// except for inference with a handful of rows, which one BLAS matrix-vector product per row does
// faster. OpenBLAS 0.3.21's sgemm (Debian's, which LibTorch calls) packs the whole weight matrix
// into its own layout at every call, however few rows the input has; a decoding step of one
// sentence has 1 (greedy) to beam-size rows, and its weights are read once a step either way.
// Measured on the 2-core EPYC (C++, this LibTorch, 2 threads), time of linear over time of one
// gemv per row, weight [8000, 512]: 4.8x at 1 row, 1.7x at 5, 1.4x at 6, 1.2x at 7 and 8; [1536,
// 512]: 4.5x, 1.6x, 1.3x, 1.2x, 1.0x; [1024, 256] (2^18 elements): 1.2x, 1.4x, 1.2x, 1.0x, 0.8x;
// [512, 256] and [256, 256] lose at most row counts (0.3-1.4x). OpenBLAS 0.3.27 forwards such
// products to gemv itself (GEMM_GEMV_FORWARD), for one row only.
#include <torch/torch.h>

namespace nlpzoo {

/// Rows at most this many (and a weight of at least kGemvMinWeight elements) run one gemv per row.
inline constexpr int64_t kGemvMaxRows = 6;
inline constexpr int64_t kGemvMinWeight = 1 << 18;

/// True when linear(x, weight) takes the gemv path: no gradient is recorded (NoGradGuard or
/// InferenceMode), x and weight are float32 on the CPU, x has 1 to kGemvMaxRows rows (all dims
/// but the last), and weight has at least kGemvMinWeight elements.
bool linear_uses_gemv(const torch::Tensor& x, const torch::Tensor& weight);

/// y = x Wᵀ + b, as torch::nn::functional::linear.
/// x: [..., in] float; weight: [out, in]; bias: [out] or undefined (none). Returns [..., out].
/// On the gemv path (linear_uses_gemv) each output row is BLAS sgemv's, so it may differ from
/// sgemm's in the last bits (summation order): a sentence decoded alone (beam 5: 5 rows) and in a
/// batch of 64 can round differently, as results on two BLAS libraries would.
/// Throws c10::Error when the shapes do not match.
torch::Tensor linear(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias = {});

/// The same with a module's weight and bias (its forward, by the path above).
torch::Tensor linear(const torch::Tensor& x, const torch::nn::Linear& layer);

// Dynamic int8 inference, as torch.quantization.quantize_dynamic: weights quantized once per
// output channel (symmetric int8) and packed for the quantized engine; each call quantizes its
// input (per tensor, uint8 over [min(x, 0), max(x, 0)]), multiplies in integers and gives float32
// back. Embedding lookups, normalisation, softmax and attention scores stay float32.

/// Whether this LibTorch has a CPU engine for dynamic int8 linear layers (oneDNN or FBGEMM).
bool int8_supported();

/// `weight` [out, in] float32 quantized per output row j with scale max_k |W_jk| / 127 (1 for an
/// all-zero row) and zero point 0: a per-channel qint8 tensor.
torch::Tensor quantize_weight_int8(const torch::Tensor& weight);

/// From now on (for this process), linear() without gradients runs every 2-D float32 CPU
/// parameter of `model` (layers, recurrent cells' input and hidden products, tied output
/// projections) through its packed int8 form; other calls are unchanged. The packs hold their
/// weights, so a weight changed afterwards must be packed again. Throws UserError when the engine
/// is missing (int8_supported) or a parameter is not on the CPU.
void use_int8_weights(const torch::nn::Module& model);

}  // namespace nlpzoo
