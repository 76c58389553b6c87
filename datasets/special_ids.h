#pragma once
#include <cstdint>

// Special token ids, fixed project-wide: pad=0 unk=1 bos=2 eos=3. Every SentencePiece model
// nlpzoo trains reserves them through SentencePiece's own trainer flags, set explicitly
// (--pad_id=0 --unk_id=1 --bos_id=2 --eos_id=3, datasets/tokenizer.cpp), so the model file
// carries them and Python's sentencepiece reports the same ids; batches, losses and decoders
// never have to look them up. They are neither SentencePiece's defaults (unk=0 bos=1 eos=2, no
// pad) nor fairseq's dictionary (bos=0 pad=1 eos=2 unk=3). Pad is 0 so that a zero-filled
// tensor is padding.
namespace nlpzoo {
inline constexpr int64_t kPadId = 0;
inline constexpr int64_t kUnkId = 1;
inline constexpr int64_t kBosId = 2;
inline constexpr int64_t kEosId = 3;
}  // namespace nlpzoo
