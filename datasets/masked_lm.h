#pragma once
// Data for BERT's masked-LM pre-training (Devlin et al. 2019, sec. 3.1 and appendix A.1;
// RoBERTa, Liu et al. 2019, sec. 4.1-4.2), on token ids only (no model, no tokenizer):
//   packing:  consecutive sentences fill [CLS] s_1 s_2 ... [SEP] up to max_positions pieces
//             (RoBERTa's FULL-SENTENCES; a sentence is never split across sequences)
//   pairs:    [CLS] A [SEP] B [SEP] with segment ids 0 ... 0 1 ... 1 (sec. 3, fig. 2)
//   NSP:      B is the text that follows A half of the time and a span from elsewhere
//             otherwise (sec. 3.1, task #2; BERT's create_instances_from_document)
//   masking:  mask_prob of the non-special positions are predicted; of those 80% become
//             [MASK], 10% a random piece, 10% stay (sec. 3.1); optionally whole words at once
// Special ids are those of datasets/special_ids.h.
#include <cstdint>
#include <initializer_list>
#include <vector>

namespace nlpzoo {

using TokenIds = std::vector<int64_t>;

struct PackedSequences {
  std::vector<TokenIds> sequences;  // each [CLS] pieces [SEP], at most max_positions ids
  int64_t truncated = 0;            // sentences longer than max_positions - 2 pieces, cut to fit
};

struct SentenceChunks {
  std::vector<std::vector<TokenIds>> chunks;  // consecutive sentences, at most `room` pieces in all
  int64_t truncated = 0;                      // sentences longer than room, cut to fit
};

/// Consecutive non-empty sentences grouped in order, each group as many whole sentences as fit
/// in `room` pieces; a sentence longer than room is cut to room pieces (counted in `truncated`)
/// and fills a group alone. The grouping under both packing and next-sentence pairs.
/// Takes the sentences by value: a caller done with them moves them in and nothing is copied.
/// Throws std::invalid_argument for room < 1.
SentenceChunks chunk_sentences(std::vector<TokenIds> sentences, int64_t room);

/// RoBERTa's FULL-SENTENCES packing: sentences (their pieces, no specials) in order, each
/// sequence [CLS] + as many consecutive whole sentences as fit + [SEP], at most
/// `max_positions` ids. A sentence longer than max_positions - 2 pieces is cut to that length
/// (counted in `truncated`) and fills a sequence alone; empty sentences are skipped.
/// Throws std::invalid_argument for max_positions < 3.
PackedSequences pack_sentences(std::vector<TokenIds> sentences, int64_t max_positions);

struct PairInput {
  TokenIds tokens;    // [CLS] A [SEP] (B [SEP])
  TokenIds segments;  // 0 for [CLS] A [SEP], 1 for B [SEP]
  bool truncated = false;
};

/// BERT's input of one or two segments (Devlin et al. fig. 2): [CLS] a [SEP] or [CLS] a [SEP]
/// b [SEP] (b empty: the single form), segment ids 0 then 1. When too long for
/// `max_positions`, pieces are removed from the end of the longer segment, one at a time
/// (BERT's truncate_seq_pair). Throws std::invalid_argument when max_positions cannot hold
/// the specials (3, or 5 with b).
PairInput pair_input(const TokenIds& a, const TokenIds& b, int64_t max_positions);

struct NextSentencePair {
  PairInput input;  // [CLS] A [SEP] B [SEP], at most max_positions ids
  bool is_next;     // B is the text that follows A (BERT's next_sentence_label 0; 1 = random)
};

/// BERT's next-sentence-prediction example from chunk k of `chunks` (chunk_sentences with room
/// max_positions - 3): A is the chunk's first a sentences (a uniform in [1, n-1] for a chunk of
/// n >= 2 sentences); B is the rest of the chunk with probability 1/2, else (and always for a
/// one-sentence chunk, as BERT does) the sentences of another chunk from a random one of them
/// on, as many as fill the room A leaves (at least one). The longer side is then cut first
/// (pair_input). `rng_seed` fixes every draw. Throws std::invalid_argument for fewer than 2
/// chunks (no other text for B), k out of range, an empty chunk or max_positions < 5.
NextSentencePair next_sentence_pair(const std::vector<std::vector<TokenIds>>& chunks, size_t k,
                                    int64_t max_positions, uint64_t rng_seed);

/// Whether an id is never masked: pad, BOS, EOS, [CLS], [SEP], [MASK].
bool is_special_for_masking(int64_t id);

struct MaskingOptions {
  double mask_prob = 0.15;     // share of a sequence's maskable positions that are predicted
  double replace_mask = 0.8;   // of those: become [MASK] ...
  double replace_random = 0.1; // ... a random piece in [first_random_id, vocab_size) ...; the rest stay
  int64_t vocab_size = 0;      // > first_random_id
  int64_t first_random_id = 7; // random replacements never draw a special id (datasets/special_ids.h)
  // Whole-word masking: a word is a piece for which `word_start[id]` is true (a piece with a
  // leading "▁") and the pieces after it that are not; its pieces are chosen together.
  // Empty = every piece on its own.
  std::vector<bool> word_start;
};

struct MaskedSequence {
  TokenIds input;                // the sequence with the replacements made
  std::vector<int64_t> positions;  // ascending positions to predict
  TokenIds targets;              // the original ids there
};

/// BERT's create_masked_lm_predictions for one sequence: n = max(1, round(mask_prob * m))
/// positions to predict out of its m maskable ones (not is_special_for_masking), chosen as a
/// random order of units (pieces, or whole words) taken while they fit in n; each chosen piece
/// is replaced as the options say. `rng_seed` fixes every draw (the caller mixes seed, epoch,
/// batch and row, so masks are dynamic and reproducible). m = 0 gives no position.
/// Throws std::invalid_argument for vocab_size <= first_random_id or word_start too short.
MaskedSequence mask_sequence(const TokenIds& tokens, const MaskingOptions& options, uint64_t rng_seed);

/// A 64-bit mix of several integers (splitmix64 over each in turn): the seed of a mask.
uint64_t mix_seed(std::initializer_list<uint64_t> values);

}  // namespace nlpzoo
