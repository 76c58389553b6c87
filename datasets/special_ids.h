#pragma once
#include <cstdint>

// Special token ids, fixed project-wide. Every SentencePiece model nlpzoo trains reserves
// them in this order (the same as fairseq's and the Python reference's pad=0 unk=1 bos=2 eos=3),
// so batches, losses and decoders never have to look them up.
namespace nlpzoo {
inline constexpr int64_t kPadId = 0;
inline constexpr int64_t kUnkId = 1;
inline constexpr int64_t kBosId = 2;
inline constexpr int64_t kEosId = 3;
}  // namespace nlpzoo
