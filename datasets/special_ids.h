#pragma once
#include <cstdint>

// Special token ids, fixed project-wide: pad=0 unk=1 bos=2 eos=3. Every SentencePiece model
// nlpzoo trains reserves them through SentencePiece's own trainer flags, set explicitly
// (--pad_id=0 --unk_id=1 --bos_id=2 --eos_id=3, datasets/tokenizer.cpp), so the model file
// carries them and Python's sentencepiece reports the same ids; batches, losses and decoders
// never have to look them up. They are neither SentencePiece's defaults (unk=0 bos=1 eos=2, no
// pad) nor fairseq's dictionary (bos=0 pad=1 eos=2 unk=3). Pad is 0 so that a zero-filled
// tensor is padding.
//
// Tasks that ask for them (BERT's masked_lm, Devlin et al. 2019 sec. 3) also get [CLS] [SEP]
// [MASK] as SentencePiece user-defined symbols (--user_defined_symbols, which SentencePiece
// places right after the control symbols): cls=4 sep=5 mask=6. A user-defined symbol is
// matched in raw text, so "[MASK]" typed in a sentence stays one piece. Models of the other
// tasks do not have them (their files stay as they were), and there ids 4..6 are ordinary pieces.
#include <string>
#include <vector>

namespace nlpzoo {
inline constexpr int64_t kPadId = 0;
inline constexpr int64_t kUnkId = 1;
inline constexpr int64_t kBosId = 2;
inline constexpr int64_t kEosId = 3;
inline constexpr int64_t kClsId = 4;
inline constexpr int64_t kSepId = 5;
inline constexpr int64_t kMaskId = 6;
/// The pieces of kClsId, kSepId, kMaskId, in id order (TokenizerTrainOptions::user_defined_symbols).
inline const std::vector<std::string>& bert_special_pieces() {
  static const std::vector<std::string> pieces = {"[CLS]", "[SEP]", "[MASK]"};
  return pieces;
}
}  // namespace nlpzoo
