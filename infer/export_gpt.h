#pragma once
// TorchScript export of the decoder-only Transformer (models/transformer/gpt.h): its scripted
// twin (infer/script_twin.h), with the key/value cache as explicit tensors.
//
// Tensors under scripted_name: token_embedding__weight (also the output layer),
// position_embedding__weight, blocks__layers__<l>__{self_attn,ffn,norm1,norm2}__..., and
// blocks__final_norm__{weight,bias}. Attributes: vocab_size, d_model, num_heads, num_layers,
// block_size, pad_id, unk_id, bos_id, eos_id.
// Methods (B rows, T new positions, t cached ones, L layers, H heads, d_k = d_model / H):
//   empty_cache(batch_size: int) -> (k, v): [L, B, H, 0, d_k] float each.
//   step(tokens: [B, T] int64, k, v) -> (log_probs [B, T, V], k, v): the T positions after
//       the t cached ones (t + T <= block_size), each seeing itself and everything before it;
//       the caches come back grown to t + T.
//   forward(tokens: [B, T] int64) -> log_probs [B, T, V]: step from the empty cache.
// Math is GptImpl's op for op (tests hold the two within 1e-5); inference only (no dropout).
#include <torch/script.h>
#include <torch/torch.h>

#include <map>
#include <string>

#include "models/transformer/gpt.h"

namespace nlpzoo {

/// The twin of `model`, as build_twin makes every twin (eval mode, a snapshot of the tensors).
torch::jit::Module script_gpt(GptImpl& model);

/// Saves the twin of `model` to `out_path` with `extra_files` ("config.ini", "spm.model") and
/// a README.txt with a cached sampling loop in Python, as export_twin does, with its errors.
void export_gpt(const std::string& out_path, GptImpl& model, const std::map<std::string, std::string>& extra_files);

}  // namespace nlpzoo
